/*
 * kern.cu — the training kernels on CUDA cores, written in the emulator's
 * order of operations (emu/softmax.c, layernorm.c, backward.c) so that every intermediate is the
 * same value wherever the hardware's operation is correctly rounded.
 *
 * Values travel as floats (every fp16 and bf16 value is one); an operation
 * in format F converts its operands to F exactly, runs F's own instruction
 * (__hadd_rn, __hsub_rn, __hdiv, hexp, hlog for fp16/bf16; __fadd_rn,
 * __fsub_rn, __fdiv_rn, expf, logf for fp32) and widens the result back
 * exactly. A conversion between formats is one RN rounding from float,
 * which is exact or a single rounding: never a double rounding. Built with
 * --fmad=false. One thread per row keeps each sum's order sequential.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpu_cuda.h"
#include "gpu_dev.h"

static __device__ float rnd(int f, float x)
{
	if (f == GPU_K_F16)
		return __half2float(__float2half_rn(x));
	if (f == GPU_K_BF16)
		return __bfloat162float(__float2bfloat16_rn(x));
	return x;
}

#define H(x) __float2half_rn(x)
#define B(x) __float2bfloat16_rn(x)

static __device__ float f_add(int f, float a, float b)
{
	if (f == GPU_K_F16)
		return __half2float(__hadd_rn(H(a), H(b)));
	if (f == GPU_K_BF16)
		return __bfloat162float(__hadd_rn(B(a), B(b)));
	return __fadd_rn(a, b);
}

static __device__ float f_sub(int f, float a, float b)
{
	if (f == GPU_K_F16)
		return __half2float(__hsub_rn(H(a), H(b)));
	if (f == GPU_K_BF16)
		return __bfloat162float(__hsub_rn(B(a), B(b)));
	return __fsub_rn(a, b);
}

static __device__ float f_div(int f, float a, float b)
{
	if (f == GPU_K_F16)
		return __half2float(__hdiv(H(a), H(b)));
	if (f == GPU_K_BF16)
		return __bfloat162float(__hdiv(B(a), B(b)));
	return __fdiv_rn(a, b);
}

static __device__ float f_exp(int f, float a)
{
	if (f == GPU_K_F16)
		return __half2float(hexp(H(a)));
	if (f == GPU_K_BF16)
		return __bfloat162float(hexp(B(a)));
	return expf(a);
}

static __device__ float f_log(int f, float a)
{
	if (f == GPU_K_F16)
		return __half2float(hlog(H(a)));
	if (f == GPU_K_BF16)
		return __bfloat162float(hlog(B(a)));
	return logf(a);
}

/* maximumNumber, +0 above -0: emu_max's rule (emu/minmax.c) */
static __device__ float f_max(float a, float b)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	if (a == 0.0f && b == 0.0f)
		return signbit(a) ? b : a;
	return b > a ? b : a;
}

static __global__ void k_softmax_rows(int v, int S, int C, int A, const float *X, size_t R,
                                      size_t N, float *grad, float *la_acc)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= R)
		return;
	const float *x = X + r * N;
	size_t y = r % N;
	float Rc = rnd(C, (float)R), m = 0.0f, s = 0.0f, ls, la;
	/* the input in the compute format (emu_k_load: storage, then compute) */
#define XC(j) rnd(C, x[j])
	if (v >= 1) {
		m = XC(0);
		for (size_t j = 1; j < N; j++)
			m = f_max(m, XC(j));
	}
	for (size_t j = 0; j < N; j++) {
		float e = v >= 1 ? f_exp(C, f_sub(C, XC(j), m)) : f_exp(C, XC(j));
		s = f_add(A, s, rnd(A, e));
	}
	s = rnd(C, s);
	ls = f_log(C, s);
	if (v == 0) {
		la = f_sub(C, ls, XC(y));
	} else if (v == 1) {
		la = f_sub(C, ls, f_sub(C, XC(y), m));
	} else {
		ls = f_add(C, m, ls); /* lse */
		la = f_sub(C, ls, XC(y));
	}
	la_acc[r] = rnd(A, la);
	for (size_t j = 0; j < N; j++) {
		float g;
		if (v == 2)
			g = f_exp(C, f_sub(C, XC(j), ls));
		else /* e_j again: the same instruction gives the same value */
			g = f_div(C, v >= 1 ? f_exp(C, f_sub(C, XC(j), m)) : f_exp(C, XC(j)), s);
		if (j == y)
			g = f_sub(C, g, 1.0f);
		g = f_div(C, g, Rc);
		grad[r * N + j] = rnd(S, g);
	}
#undef XC
}

/* the mean loss: a sequential sum in A, then one division by R in A */
static __global__ void k_softmax_mean(int A, const float *la_acc, size_t R, float *loss)
{
	float sum = 0.0f;
	for (size_t r = 0; r < R; r++)
		sum = f_add(A, sum, la_acc[r]);
	*loss = f_div(A, sum, rnd(A, (float)R));
}

extern "C" int gpu_dev_softmax(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                               size_t R, size_t N, float *grad, float *loss, char *err, size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t nx = R * N;
	GPU_CK(cudaMalloc(&d, (2 * nx + R + 1) * sizeof *d));
	GPU_CK(cudaMemcpy(d, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	k_softmax_rows<<<(unsigned)((R + 127) / 128), 128>>>(variant, (int)S, (int)C, (int)A, d, R, N,
	                                                     d + nx, d + 2 * nx);
	GPU_CK_LAUNCH();
	k_softmax_mean<<<1, 1>>>((int)A, d + 2 * nx, R, d + 2 * nx + R);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(grad, d + nx, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(loss, d + 2 * nx + R, sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

static __device__ float f_mul(int f, float a, float b)
{
	if (f == GPU_K_F16)
		return __half2float(__hmul_rn(H(a), H(b)));
	if (f == GPU_K_BF16)
		return __bfloat162float(__hmul_rn(B(a), B(b)));
	return __fmul_rn(a, b);
}

static __device__ float f_rsqrt(int f, float a)
{
	if (f == GPU_K_F16)
		return __half2float(hrsqrt(H(a)));
	if (f == GPU_K_BF16)
		return __bfloat162float(hrsqrt(B(a)));
	return __frsqrt_rn(a);
}

/* emu/layernorm.c's run(), one row per thread; yc (N per row) is the
 * compute-format x − mean, then ŷ */
static __global__ void k_layernorm_rows(int v, int S, int C, int A, const float *X,
                                        const float *DY, size_t R, size_t N, float epsc,
                                        float *Y, float *DX, float *RSTD, float *VAR, float *YC)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= R)
		return;
	const float *x = X + r * N, *dyin = DY + r * N;
	float *yc = YC + r * N;
	float Na = rnd(A, (float)N), mean = 0.0f, s = 0.0f, s2 = 0.0f, ma, tmp, tmp2;
#define XC(j) rnd(C, x[j])
	if (v == 2) { /* welford, in the accumulator format */
		ma = 0.0f;
		for (size_t j = 0; j < N; j++) {
			float xa = rnd(A, XC(j));
			tmp = f_sub(A, xa, ma);
			tmp2 = f_div(A, tmp, rnd(A, (float)(j + 1)));
			ma = f_add(A, ma, tmp2);
			tmp2 = f_sub(A, xa, ma);
			tmp = f_mul(A, tmp, tmp2);
			s2 = f_add(A, s2, tmp);
		}
		s2 = f_div(A, s2, Na);
	} else {
		for (size_t j = 0; j < N; j++) {
			s = f_add(A, s, rnd(A, XC(j)));
			if (v == 1)
				s2 = f_add(A, s2, rnd(A, f_mul(C, XC(j), XC(j))));
		}
		ma = f_div(A, s, Na);
		if (v == 1) {
			s2 = f_div(A, s2, Na);
			s2 = f_sub(A, s2, f_mul(A, ma, ma));
		} else {
			mean = rnd(C, ma);
			for (size_t j = 0; j < N; j++) {
				yc[j] = f_sub(C, XC(j), mean);
				s2 = f_add(A, s2, rnd(A, f_mul(C, yc[j], yc[j])));
			}
			s2 = f_div(A, s2, Na);
		}
	}
	if (v != 0)
		mean = rnd(C, ma);
	float vr = rnd(C, s2);
	float rs = f_rsqrt(C, f_add(C, vr, epsc));
	VAR[r] = vr;
	RSTD[r] = rs;
	for (size_t j = 0; j < N; j++) {
		if (v != 0)
			yc[j] = f_sub(C, XC(j), mean);
		yc[j] = f_mul(C, yc[j], rs);
		Y[r * N + j] = rnd(S, yc[j]);
	}
	/* backward */
	s = 0.0f;
	s2 = 0.0f;
	for (size_t j = 0; j < N; j++) {
		float dy = rnd(C, dyin[j]);
		s = f_add(A, s, rnd(A, dy));
		s2 = f_add(A, s2, rnd(A, f_mul(C, dy, yc[j])));
	}
	float dmean = rnd(C, f_div(A, s, Na));
	float dproj = rnd(C, f_div(A, s2, Na));
	for (size_t j = 0; j < N; j++) {
		float dy = rnd(C, dyin[j]);
		tmp = f_sub(C, dy, dmean);
		tmp2 = f_mul(C, yc[j], dproj);
		tmp = f_sub(C, tmp, tmp2);
		tmp = f_mul(C, tmp, rs);
		DX[r * N + j] = rnd(S, tmp);
	}
#undef XC
}

extern "C" int gpu_dev_layernorm(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                                 const float *dy, size_t R, size_t N, float eps_c, float *y,
                                 float *dx, float *rstd, float *var, char *err, size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t nx = R * N;
	/* x, dy, y, dx, yc, rstd, var */
	GPU_CK(cudaMalloc(&d, (5 * nx + 2 * R) * sizeof *d));
	GPU_CK(cudaMemcpy(d, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + nx, dy, nx * sizeof *d, cudaMemcpyHostToDevice));
	k_layernorm_rows<<<(unsigned)((R + 127) / 128), 128>>>(
	    variant, (int)S, (int)C, (int)A, d, d + nx, R, N, eps_c, d + 2 * nx, d + 3 * nx,
	    d + 5 * nx, d + 5 * nx + R, d + 4 * nx);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(y, d + 2 * nx, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dx, d + 3 * nx, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(rstd, d + 5 * nx, R * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(var, d + 5 * nx + R, R * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

/* ---- backward: emu/backward.c's run(), in its order ---- */
static __global__ void k_bw_rows(int S, int C, int A, const float *X, const float *W, size_t R,
                                 size_t D, size_t K, float scale, float *Z, float *E, float *DL,
                                 float *la_acc)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= R)
		return;
	size_t y = r % K;
	float *z = Z + r * K, *e = E + r * K;
	float Rc = rnd(C, (float)R), SR = f_div(C, rnd(C, scale), Rc);
	for (size_t c = 0; c < K; c++) { /* logits, stored, then in compute */
		float acc = 0.0f;
		for (size_t d = 0; d < D; d++)
			acc = f_add(A, acc, rnd(A, f_mul(C, rnd(C, X[r * D + d]), rnd(C, W[d * K + c]))));
		z[c] = rnd(C, rnd(S, acc));
	}
	float m = z[0], s = 0.0f;
	for (size_t c = 1; c < K; c++)
		m = f_max(m, z[c]);
	for (size_t c = 0; c < K; c++) {
		e[c] = f_exp(C, f_sub(C, z[c], m));
		s = f_add(A, s, rnd(A, e[c]));
	}
	s = rnd(C, s);
	float ls = f_log(C, s);
	la_acc[r] = rnd(A, f_sub(C, ls, f_sub(C, z[y], m)));
	for (size_t c = 0; c < K; c++) { /* dlogits, stored, then in compute */
		float g = f_div(C, e[c], s);
		if (c == y)
			g = f_sub(C, g, 1.0f);
		g = f_mul(C, g, SR);
		DL[r * K + c] = rnd(C, rnd(S, g));
	}
}

/* grad[0..D·K) = dW, then grad[D·K..) = dX; one thread per element */
static __global__ void k_bw_grads(int S, int C, int A, const float *X, const float *W,
                                  const float *DL, size_t R, size_t D, size_t K, float *G)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	float acc = 0.0f;
	if (i < D * K) {
		size_t d = i / K, c = i % K;
		for (size_t r = 0; r < R; r++)
			acc = f_add(A, acc, rnd(A, f_mul(C, rnd(C, X[r * D + d]), DL[r * K + c])));
	} else if (i < D * K + R * D) {
		size_t r = (i - D * K) / D, d = (i - D * K) % D;
		for (size_t c = 0; c < K; c++)
			acc = f_add(A, acc, rnd(A, f_mul(C, DL[r * K + c], rnd(C, W[d * K + c]))));
	} else {
		return;
	}
	G[i] = rnd(S, acc);
}

/* GradScaler.unscale_: the stored gradient in fp32 times inv, and found_inf */
static __global__ void k_bw_unscale(const float *G, size_t n, float inv, float *U, int *bad)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float o = inv != 1.0f ? __fmul_rn(G[i], inv) : G[i];
	U[i] = o;
	if (!isfinite(o))
		atomicExch(bad, 1);
}

extern "C" int gpu_dev_backward(gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                                const float *w, size_t R, size_t D, size_t K, float scale,
                                float inv, float *grad, float *un, float *loss, float *found,
                                char *err, size_t len)
{
	float *d = NULL;
	int *bad = NULL, hbad = 0, rc = -1;
	size_t nx = R * D, nw = D * K, nl = R * K, ng = D * K + R * D;
	/* x, w, z, e, dl, la, loss, grad, un */
	size_t ox = 0, ow = ox + nx, oz = ow + nw, oe = oz + nl, odl = oe + nl, ola = odl + nl,
	       olo = ola + R, og = olo + 1, ou = og + ng, total = ou + ng;
	GPU_CK(cudaMalloc(&d, total * sizeof *d));
	GPU_CK(cudaMalloc(&bad, sizeof *bad));
	GPU_CK(cudaMemset(bad, 0, sizeof *bad));
	GPU_CK(cudaMemcpy(d + ox, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + ow, w, nw * sizeof *d, cudaMemcpyHostToDevice));
	k_bw_rows<<<(unsigned)((R + 127) / 128), 128>>>((int)S, (int)C, (int)A, d + ox, d + ow, R, D,
	                                                K, scale, d + oz, d + oe, d + odl, d + ola);
	GPU_CK_LAUNCH();
	k_softmax_mean<<<1, 1>>>((int)A, d + ola, R, d + olo);
	GPU_CK_LAUNCH();
	k_bw_grads<<<(unsigned)((ng + 127) / 128), 128>>>((int)S, (int)C, (int)A, d + ox, d + ow,
	                                                  d + odl, R, D, K, d + og);
	GPU_CK_LAUNCH();
	k_bw_unscale<<<(unsigned)((ng + 127) / 128), 128>>>(d + og, ng, inv, d + ou, bad);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(grad, d + og, ng * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(un, d + ou, ng * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(loss, d + olo, sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(&hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost));
	*found = hbad ? 1.0f : 0.0f;
	rc = 0;
out:
	cudaFree(d);
	cudaFree(bad);
	return rc;
}
