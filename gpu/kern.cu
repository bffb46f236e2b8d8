/*
 * kern.cu — the training kernels on CUDA cores: the launch code and the
 * definitions of the operations gpu/rows.h is written against. The row
 * bodies themselves are the row sources emu/kernels/NAME_rows.h, which the
 * engine runs too (softmax_ce, layernorm and rmsnorm forward and backward,
 * bce, the loss-scaled backward, matmul, batchnorm; read through
 * gpu/krow_loops.h), and gpu/rows.h (the optimizers, attention around its
 * GEMMs), all of which gpu/host_rows.c compiles too with the emulator's
 * operations: the fake device runs the very code compiled here, in the
 * emulator's order of operations (emu/kernels/softmax.c, layernorm.c,
 * backward.c, rmsnorm.c, bce.c, matmul.c, batchnorm.c), so every
 * intermediate is the same value wherever the hardware's operation is
 * correctly rounded.
 *
 * A format is a gpu_kfmt value. An operation in format F converts its
 * operands (floats) to F exactly, runs F's own instruction (__hadd_rn,
 * __hsub_rn, __hmul_rn, __hdiv, hexp, hlog, hrsqrt for fp16/bf16;
 * __fadd_rn, __fsub_rn, __fmul_rn, __fdiv_rn, expf, logf, __frsqrt_rn for
 * fp32) and widens the result back exactly. A conversion between formats
 * is one RN rounding from float, which is exact or a single rounding:
 * never a double rounding. Built with --fmad=false. One thread per row
 * keeps each sum's order sequential. The block quantisers run one thread
 * per scaling block; their element conversion is __nv_cvt_float_to_fp8
 * with __NV_SATFINITE (cvt.rn.satfinite.e4m3x2.f32 and e5m2x2).
 * matmul tc is gpu/mma.cu's mma.sync GEMM followed by matmul_rows.h's store;
 * adamw_sr's random bits and stochastic rounding are rows.h's integer and
 * exact binary64 code, the same on both sides.
 */
#include <cstdlib>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "gpu/gpu_cuda.h"
#include "gpu/gpu_dev.h"

static __device__ float rnd(int f, float x)
{
	if (f == GPU_K_F16)
		return __half2float(__float2half_rn(x));
	if (f == GPU_K_BF16)
		return __bfloat162float(__float2bfloat16_rn(x));
	if (f == GPU_K_E4M3) /* attention's P cast: RN, NaN past the range (no satfinite) */
		return __half2float(__half(__nv_cvt_fp8_to_halfraw(
		    __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3), __NV_E4M3)));
	if (f == GPU_K_E5M2) /* fp8:bwd's dS cast: RN, inf past the range */
		return __half2float(__half(__nv_cvt_fp8_to_halfraw(
		    __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2), __NV_E5M2)));
	return x;
}

/* the binary64 x rounded once into f (fp32, fp16 or bf16): a scalar of the
 * host's */
static __device__ float rnd_d(int f, double x)
{
	if (f == GPU_K_F16)
		return __half2float(__double2half(x));
	if (f == GPU_K_BF16)
		return __bfloat162float(__double2bfloat16(x));
	return __double2float_rn(x);
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

static __device__ float f_mul(int f, float a, float b)
{
	if (f == GPU_K_F16)
		return __half2float(__hmul_rn(H(a), H(b)));
	if (f == GPU_K_BF16)
		return __bfloat162float(__hmul_rn(B(a), B(b)));
	return __fmul_rn(a, b);
}

static __device__ float f_div(int f, float a, float b)
{
	if (f == GPU_K_F16)
		return __half2float(__hdiv(H(a), H(b)));
	if (f == GPU_K_BF16)
		return __bfloat162float(__hdiv(B(a), B(b)));
	return __fdiv_rn(a, b);
}

/* gpu_dev_fp32_math: 1 makes fp32's exp, log and log1p binary64's, rounded once */
static __device__ int d_fp32_cr;

extern "C" int gpu_dev_fp32_math(int cr, char *err, size_t len)
{
	int rc = -1;
	GPU_CK(cudaMemcpyToSymbol(d_fp32_cr, &cr, sizeof cr));
	rc = 0;
out:
	return rc;
}

static __device__ float f_exp(int f, float a)
{
	if (f == GPU_K_F16)
		return __half2float(hexp(H(a)));
	if (f == GPU_K_BF16)
		return __bfloat162float(hexp(B(a)));
	return d_fp32_cr ? __double2float_rn(exp((double)a)) : expf(a);
}

static __device__ float f_log(int f, float a)
{
	if (f == GPU_K_F16)
		return __half2float(hlog(H(a)));
	if (f == GPU_K_BF16)
		return __bfloat162float(hlog(B(a)));
	return d_fp32_cr ? __double2float_rn(log((double)a)) : logf(a);
}

static __device__ float f_rsqrt(int f, float a)
{
	if (f == GPU_K_F16)
		return __half2float(hrsqrt(H(a)));
	if (f == GPU_K_BF16)
		return __bfloat162float(hrsqrt(B(a)));
	return __frsqrt_rn(a);
}

/* log(1 + a): CUDA has no half-precision log1p, so every format takes
 * log1pf and rounds it to F once. log1pf is not correctly rounded (within
 * 1 ulp of fp32), so bce stable's loss may differ from the emulator's
 * correctly rounded log1p here; the fake device, which runs the emulator's,
 * cannot show it. */
static __device__ float f_log1p(int f, float a)
{
	return rnd(f, d_fp32_cr ? __double2float_rn(log1p((double)a)) : log1pf(a));
}

/* a·b + c, one rounding: F's fused instruction */
static __device__ float f_fma(int f, float a, float b, float c)
{
	if (f == GPU_K_F16)
		return __half2float(__hfma(H(a), H(b), H(c)));
	if (f == GPU_K_BF16)
		return __bfloat162float(__hfma(B(a), B(b), B(c)));
	return __fmaf_rn(a, b, c);
}

/* F's square root: fp32's correctly rounded one, then one rounding to F,
 * innocuous for sqrt since 24 ≥ 2p + 2 for fp16 and bf16 */
static __device__ float f_sqrt(int f, float a)
{
	return rnd(f, __fsqrt_rn(a));
}

/* maximumNumber, +0 above -0: emu_max's rule (emu/core/minmax.c) */
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

/* x in e4m3 or e5m2, RN, satfinite: the encoding */
static __device__ uint8_t code8(int f, float x)
{
	return (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE,
	                                      f == GPU_K_E5M2 ? __NV_E5M2 : __NV_E4M3);
}

/* gpu/rows.h's operations: each the instruction above, nothing fused */
typedef int k_fmt;
#define K_FN static __device__
#define K_RND(F, x) rnd(F, x)
#define K_RND_D(F, x) rnd_d(F, x)
#define K_ADD(F, a, b) f_add(F, a, b)
#define K_SUB(F, a, b) f_sub(F, a, b)
#define K_MUL(F, a, b) f_mul(F, a, b)
#define K_DIV(F, a, b) f_div(F, a, b)
#define K_EXP(F, a) f_exp(F, a)
#define K_LOG(F, a) f_log(F, a)
#define K_RSQRT(F, a) f_rsqrt(F, a)
#define K_MAX(F, a, b) f_max(a, b)
#define K_LOG1P(F, a) f_log1p(F, a)
#define K_NEG(F, a) (-(a))
#define K_ABS(F, a) fabsf(a)
#define K_FMA(F, a, b, c) f_fma(F, a, b, c)
#define K_SQRT(F, a) f_sqrt(F, a)
#define K_CODE8(F, x) code8(F, x)
#define K_F2U(x) __float_as_uint(x)
#define K_U2F(u) __uint_as_float(u)
#define K_PREC(F) ((F) == GPU_K_F16 ? 11 : (F) == GPU_K_BF16 ? 8 : 24)
#define K_EMIN(F) ((F) == GPU_K_F16 ? -14 : -126)
#define K_FMAX(F) ((F) == GPU_K_F16 ? 65504.0 : (F) == GPU_K_BF16 ? 0x1.fep127 : 0x1.fffffep127)
/* the row sources (emu/kernels/NAME_rows.h) in gpu/krow_loops.h's
 * vocabulary, then gpu/rows.h, whose optimizer loop calls one of them
 * (each by a path from the repository's root, which the mutant build,
 * gpu/testdata/rows-mutant.sed, redirects to its own copies) */
#include "gpu/krow_loops.h"

#include "emu/kernels/attention_rows.h"
#include "emu/kernels/backward_rows.h"
#include "emu/kernels/batchnorm_rows.h"
#include "emu/kernels/bce_rows.h"
#include "emu/kernels/layernorm_rows.h"
#include "emu/kernels/matmul_rows.h"
#include "emu/kernels/optimizer_rows.h"
#include "emu/kernels/rmsnorm_rows.h"
#include "emu/kernels/softmax_rows.h"

#include "gpu/rows.h"

/* the load's last step: n values into the compute format C, one thread each */
static __global__ void k_to_compute(int C, float *X, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		X[i] = K_RND(C, X[i]);
}

/* softmax_ce (emu/kernels/softmax_rows.h), one row per thread; W holds
 * 2N + SM_NT scratch values per row */
static __global__ void k_softmax_rows(int v, int S, int C, int A, float *X, size_t R, size_t N,
                                      float *grad, float *LA, float *W)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= R)
		return;
	float *e = W + r * (2 * N + SM_NT), *ea = e + N, *t = ea + N;
	k_softmax_consts(0, C, A, R, t);
	k_softmax_row(0, v, S, C, A, X, N, r, r % N, e, ea, t, grad, LA);
}

/* softmax_ce's mean loss, on one thread */
static __global__ void k_softmax_means(int C, int A, float *LA, size_t R, float *t, float *loss)
{
	k_softmax_consts(0, C, A, R, t);
	k_softmax_mean(0, A, LA, R, t, loss);
}

extern "C" int gpu_dev_softmax(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                               size_t R, size_t N, float *grad, float *loss, char *err, size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t nx = R * N, nw = R * (2 * N + SM_NT);
	GPU_CK(cudaMalloc(&d, (2 * nx + R + 1 + nw) * sizeof *d));
	GPU_CK(cudaMemcpy(d, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	k_to_compute<<<(unsigned)((nx + 127) / 128), 128>>>((int)C, d, nx);
	GPU_CK_LAUNCH();
	k_softmax_rows<<<(unsigned)((R + 127) / 128), 128>>>(
	    variant, (int)S, (int)C, (int)A, d, R, N, d + nx, d + 2 * nx, d + 2 * nx + R + 1);
	GPU_CK_LAUNCH();
	k_softmax_means<<<1, 1>>>((int)C, (int)A, d + 2 * nx, R, d + 2 * nx + R + 1,
	                          d + 2 * nx + R);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(grad, d + nx, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(loss, d + 2 * nx + R, sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

/* layernorm (emu/kernels/layernorm_rows.h), one row per thread: the
 * forward, then the backward on the thread's row of DY (values of S,
 * converted to C where they lie); W holds 4N + LN_NT scratch values per row */
static __global__ void k_layernorm_rows(int v, int S, int C, int A, float *X, float *DY, size_t R,
                                        size_t N, float epsc, float *Y, float *DX, float *RSTD,
                                        float *VAR, float *W)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= R)
		return;
	float *yc = W + r * (4 * N + LN_NT), *w1 = yc + N, *w2 = w1 + N, *kA = w2 + N, *t = kA + N;
	k_layernorm_consts(0, v, C, A, N, epsc, t, kA);
	k_layernorm_fwd(0, v, S, C, A, X, N, r, kA, t, yc, w1, w2, Y, RSTD, VAR);
	k_layernorm_bwd(0, S, C, A, DY, r * N, N, r, t, yc, w1, w2, RSTD, DX);
}

extern "C" int gpu_dev_layernorm(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                                 const float *dy, size_t R, size_t N, float eps_c, float *y,
                                 float *dx, float *rstd, float *var, char *err, size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t nx = R * N;
	/* x, dy, y, dx, rstd, var, the rows' scratch */
	size_t ox = 0, ody = ox + nx, oy = ody + nx, odx = oy + nx, ors = odx + nx, ova = ors + R,
	       ow = ova + R, total = ow + R * (4 * N + LN_NT);
	GPU_CK(cudaMalloc(&d, total * sizeof *d));
	GPU_CK(cudaMemcpy(d + ox, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + ody, dy, nx * sizeof *d, cudaMemcpyHostToDevice));
	k_to_compute<<<(unsigned)((nx + 127) / 128), 128>>>((int)C, d + ox, nx);
	GPU_CK_LAUNCH();
	k_layernorm_rows<<<(unsigned)((R + 127) / 128), 128>>>(variant, (int)S, (int)C, (int)A,
	                                                       d + ox, d + ody, R, N, eps_c, d + oy,
	                                                       d + odx, d + ors, d + ova, d + ow);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(y, d + oy, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dx, d + odx, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(rstd, d + ors, R * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(var, d + ova, R * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

/* ---- rmsnorm: emu/kernels/rmsnorm_rows.h ---- */
/* one row per thread: the weights (every one gs, stored in S) into C, the
 * forward, then the backward on the thread's row of DY (values of S,
 * converted to C where they lie), writing its row of Q (dy·x̂ in A); W
 * holds 4N + RN_NT scratch values per row */
static __global__ void k_rmsnorm_rows(int v, int S, int C, int A, float *X, float *DY, size_t R,
                                      size_t N, float epsc, float gs, float *Y, float *DX,
                                      float *RSTD, float *MS, float *Q, float *W)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= R)
		return;
	float *g = W + r * (4 * N + RN_NT), *xh = g + N, *w1 = xh + N, *w2 = w1 + N, *t = w2 + N;
	k_rmsnorm_consts(0, v, C, A, GPU_K_F32, N, epsc, t);
	for (size_t j = 0; j < N; j++)
		g[j] = gs;
	k_rmsnorm_g(0, C, g, N);
	k_rmsnorm_fwd(0, v, S, C, A, GPU_K_F32, X, N, r, g, t, xh, w1, Y, RSTD, MS);
	k_rmsnorm_bwd(0, v, S, C, A, DY, r * N, N, r, g, t, xh, w1, w2, DX, Q);
}

/* dg, one column per thread, rows in order */
static __global__ void k_rmsnorm_dgs(int A, float *Q, size_t R, size_t N, float *DG)
{
	size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (j < N)
		k_rmsnorm_dg(0, A, Q, R, N, j, 1, DG);
}

extern "C" int gpu_dev_rmsnorm(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                               const float *dy, size_t R, size_t N, float eps_c, float g_s,
                               float *y, float *dx, float *rstd, float *ms, float *dg,
                               char *err, size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t nx = R * N;
	/* x, dy, y, dx, q, rstd, ms, dg, the rows' scratch */
	size_t ox = 0, ody = ox + nx, oy = ody + nx, odx = oy + nx, oq = odx + nx, ors = oq + nx,
	       oms = ors + R, odg = oms + R, ow = odg + N, total = ow + R * (4 * N + RN_NT);
	GPU_CK(cudaMalloc(&d, total * sizeof *d));
	GPU_CK(cudaMemcpy(d + ox, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + ody, dy, nx * sizeof *d, cudaMemcpyHostToDevice));
	k_to_compute<<<(unsigned)((nx + 127) / 128), 128>>>((int)C, d + ox, nx);
	GPU_CK_LAUNCH();
	k_rmsnorm_rows<<<(unsigned)((R + 127) / 128), 128>>>(
	    variant, (int)S, (int)C, (int)A, d + ox, d + ody, R, N, eps_c, g_s, d + oy, d + odx,
	    d + ors, d + oms, d + oq, d + ow);
	GPU_CK_LAUNCH();
	k_rmsnorm_dgs<<<(unsigned)((N + 127) / 128), 128>>>((int)A, d + oq, R, N, d + odg);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(y, d + oy, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dx, d + odx, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(rstd, d + ors, R * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(ms, d + oms, R * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dg, d + odg, N * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

/* ---- bce (emu/kernels/bce_rows.h), one row per thread ---- */
/* W holds 4N + BCE_NT scratch values per row; L gets every element's loss */
static __global__ void k_bce_rows(int v, int S, int C, int A, float *X, float *TY, size_t R,
                                  size_t N, float *grad, float *L, float *W)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= R)
		return;
	float *e = W + r * (4 * N + BCE_NT), *dd = e + N, *u = dd + N, *w = u + N, *t = w + N;
	k_bce_consts(0, C, A, R * N, t);
	k_bce_row(0, v, S, C, A, X, TY, N, r, e, dd, u, w, t, grad, L);
}

/* the mean over every element, on one thread */
static __global__ void k_bce_means(int C, int A, float *L, size_t T, float *t, float *loss)
{
	k_bce_consts(0, C, A, T, t);
	k_bce_mean(0, A, L, T, t, loss);
}

extern "C" int gpu_dev_bce(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                           const float *target, size_t R, size_t N, float *grad, float *loss,
                           char *err, size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t nx = R * N, nw = R * (4 * N + BCE_NT);
	/* x, target, grad, l, loss, scratch */
	GPU_CK(cudaMalloc(&d, (4 * nx + 1 + nw) * sizeof *d));
	GPU_CK(cudaMemcpy(d, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + nx, target, nx * sizeof *d, cudaMemcpyHostToDevice));
	k_to_compute<<<(unsigned)((nx + 127) / 128), 128>>>((int)C, d, nx);
	GPU_CK_LAUNCH();
	k_bce_rows<<<(unsigned)((R + 127) / 128), 128>>>(variant, (int)S, (int)C, (int)A, d, d + nx,
	                                                 R, N, d + 2 * nx, d + 3 * nx,
	                                                 d + 4 * nx + 1);
	GPU_CK_LAUNCH();
	k_bce_means<<<1, 1>>>((int)C, (int)A, d + 3 * nx, nx, d + 4 * nx + 1, d + 4 * nx);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(grad, d + 2 * nx, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(loss, d + 4 * nx, sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

/* ---- matmul (emu/kernels/matmul_rows.h), seq: the load, the operands into
 * the accumulator format (one thread an element), then one thread per output
 * element ---- */
static __global__ void k_matmul_ins(int A, float *X, size_t mk, size_t nx)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= nx)
		return;
	if (i < mk)
		k_matmul_to_accum(0, A, X, i, 1, X + mk, 0, 0, mk);
	else
		k_matmul_to_accum(0, A, X, 0, 0, X + mk, i - mk, 1, mk);
}

/* output o's dot product and its store; P holds k scratch values per thread */
static __global__ void k_matmul_elems(int fma, int S, int C, int A, float *X, size_t m, size_t n,
                                      size_t k, float *ACC, float *CS, float *P)
{
	size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (o >= m * n)
		return;
	k_matmul_dot(0, fma, C, A, X, X + m * k, 0, n, k, o, 1, P + o * k, ACC);
	k_matmul_store(0, S, ACC, CS, o, 1);
}

extern "C" int gpu_dev_matmul(int fma, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                              size_t m, size_t n, size_t k, float *acc, float *c, char *err,
                              size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t nx = m * k + k * n, no = m * n;
	/* x, acc, c, the threads' products */
	GPU_CK(cudaMalloc(&d, (nx + 2 * no + no * k) * sizeof *d));
	GPU_CK(cudaMemcpy(d, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	k_to_compute<<<(unsigned)((nx + 127) / 128), 128>>>((int)C, d, nx);
	GPU_CK_LAUNCH();
	k_matmul_ins<<<(unsigned)((nx + 127) / 128), 128>>>((int)A, d, m * k, nx);
	GPU_CK_LAUNCH();
	k_matmul_elems<<<(unsigned)((no + 127) / 128), 128>>>(
	    fma, (int)S, (int)C, (int)A, d, m, n, k, d + nx, d + nx + no, d + nx + 2 * no);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(acc, d + nx, no * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(c, d + nx + no, no * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

/* ---- matmul tc: gpu/mma.cu's GEMM, then the store (emu/kernels/matmul_rows.h),
 * one thread per output element ---- */
static __global__ void k_matmul_tc_stores(int S, int C, int O, float *D, size_t no, float *ACC,
                                          float *CS)
{
	size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (o < no)
		k_matmul_tc_store(0, S, C, O, D, ACC, CS, o, 1);
}

extern "C" int gpu_dev_matmul_tc(gpu_kfmt S, gpu_kfmt C, gpu_kfmt O, const uint16_t *a,
                                 const uint16_t *b, size_t m, size_t n, size_t k, float *acc,
                                 float *c, char *err, size_t len)
{
	uint32_t *cz = NULL, *dd = NULL;
	float *d = NULL, *hd = NULL;
	int rc = -1;
	size_t no = m * n;
	if ((S != GPU_K_F16 && S != GPU_K_BF16) || (O != GPU_K_F32 && O != GPU_K_F16)) {
		snprintf(err, len, "matmul tc: storage %d is not fp16 or bf16, or output %d is not "
		                   "fp32 or fp16", (int)S, (int)O);
		return -1;
	}
	cz = (uint32_t *)calloc(no, sizeof *cz);
	dd = (uint32_t *)malloc(no * sizeof *dd);
	hd = (float *)malloc(no * sizeof *hd);
	if (!cz || !dd || !hd) {
		snprintf(err, len, "matmul tc: out of memory");
		goto out;
	}
	/* D = A·B + 0 in the fixed K order, no promotion */
	if (gpu_dev_mma(S == GPU_K_F16 ? GPU_F16 : GPU_BF16, O == GPU_K_F16, a, b, cz, m, n, k, 0,
	                dd, err, len))
		goto out;
	for (size_t i = 0; i < no; i++) { /* the output's encodings, widened (exact) */
		if (O == GPU_K_F16) {
			__half_raw h;
			h.x = (unsigned short)dd[i];
			hd[i] = __half2float(__half(h));
		} else {
			memcpy(&hd[i], &dd[i], sizeof hd[i]);
		}
	}
	GPU_CK(cudaMalloc(&d, 3 * no * sizeof *d));
	GPU_CK(cudaMemcpy(d, hd, no * sizeof *d, cudaMemcpyHostToDevice));
	k_matmul_tc_stores<<<(unsigned)((no + 127) / 128), 128>>>((int)S, (int)C, (int)O, d, no,
	                                                          d + no, d + 2 * no);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(acc, d + no, no * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(c, d + 2 * no, no * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	free(cz);
	free(dd);
	free(hd);
	return rc;
}

/* ---- batchnorm (emu/kernels/batchnorm_rows.h): the load, then one thread per
 * channel; SH holds the 9·CH values the threads share, W 3·NB + BN_NT per
 * thread ---- */
static __global__ void k_batchnorm_cols(int v, int S, int C, int A, float *X, float *DY, size_t NB,
                                        size_t CH, const float *cst, float *Y, float *DX,
                                        float *MEAN, float *VAR, float *RM, float *RV,
                                        float *DGAMMA, float *DBETA, float *XMU, float *SH,
                                        float *W)
{
	size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= CH)
		return;
	k_batchnorm_channel(0, v, S, C, A, X, DY, NB, CH, c, cst, Y, DX, MEAN, VAR, RM, RV, DGAMMA,
	                    DBETA, XMU, SH, W + c * (3 * NB + BN_NT));
}

extern "C" int gpu_dev_batchnorm(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                                 const float *dy, size_t NB, size_t CH, const float cst[6],
                                 float *y, float *dx, float *mean, float *var, float *rm,
                                 float *rv, float *dgamma, float *dbeta, char *err, size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t nx = NB * CH;
	/* x, dy, y, dx, xmu, then mean, var, rm, rv, dgamma, dbeta (CH each), cst, the
	 * shared scratch (9·CH) and the threads' own */
	size_t ox = 0, ody = nx, oy = 2 * nx, odx = 3 * nx, oxm = 4 * nx, oc = 5 * nx;
	size_t ok = oc + 6 * CH, osh = ok + 6, ow = osh + 9 * CH, nw = CH * (3 * NB + BN_NT);
	GPU_CK(cudaMalloc(&d, (ow + nw) * sizeof *d));
	GPU_CK(cudaMemcpy(d + ox, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + ody, dy, nx * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + ok, cst, 6 * sizeof *d, cudaMemcpyHostToDevice));
	k_to_compute<<<(unsigned)((nx + 127) / 128), 128>>>((int)C, d + ox, nx);
	GPU_CK_LAUNCH();
	k_batchnorm_cols<<<(unsigned)((CH + 127) / 128), 128>>>(
	    variant, (int)S, (int)C, (int)A, d + ox, d + ody, NB, CH, d + ok, d + oy, d + odx,
	    d + oc, d + oc + CH, d + oc + 2 * CH, d + oc + 3 * CH, d + oc + 4 * CH, d + oc + 5 * CH,
	    d + oxm, d + osh, d + ow);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(y, d + oy, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dx, d + odx, nx * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(mean, d + oc, CH * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(var, d + oc + CH, CH * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(rm, d + oc + 2 * CH, CH * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(rv, d + oc + 3 * CH, CH * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dgamma, d + oc + 4 * CH, CH * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dbeta, d + oc + 5 * CH, CH * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

/* ---- optimizer (emu/kernels/optimizer_rows.h): one thread per element over the steps ---- */
static __global__ void k_opt_elems(k_opt_cfg cfg, int S, int C, int G, int T, const float *GS,
                                   size_t n, unsigned NS, const double *PY, uint64_t seed, float *W,
                                   float *M, float *V)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	k_opt_elem(cfg, S, C, G, T, GS, n, i, NS, PY, seed, W, M, V);
}

extern "C" int gpu_dev_optimizer(int variant, unsigned flags, gpu_kfmt S, gpu_kfmt C, gpu_kfmt G,
                                 gpu_kfmt T, const float *gs, size_t n, unsigned steps,
                                 const double *py, uint64_t seed, float *w, float *m, float *v,
                                 char *err, size_t len)
{
	float *d = NULL;
	double *dpy = NULL;
	int rc = -1;
	k_opt_cfg cfg = {variant, flags};
	size_t ng = (size_t)steps * n, npy = OPT_NPY + 2 * (size_t)steps;
	/* gradients, w, m, v; the scalars */
	size_t og = 0, ow = ng, om = ow + n, ov = om + n;
	GPU_CK(cudaMalloc(&d, (ov + n) * sizeof *d));
	GPU_CK(cudaMalloc(&dpy, npy * sizeof *dpy));
	GPU_CK(cudaMemcpy(d + og, gs, ng * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dpy, py, npy * sizeof *dpy, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + ow, w, n * sizeof *d, cudaMemcpyHostToDevice));
	k_opt_elems<<<(unsigned)((n + 127) / 128), 128>>>(cfg, (int)S, (int)C, (int)G, (int)T,
	                                                  d + og, n, steps, dpy, seed, d + ow,
	                                                  d + om, d + ov);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(w, d + ow, n * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(m, d + om, n * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(v, d + ov, n * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	cudaFree(dpy);
	return rc;
}

/* ---- backward (emu/kernels/backward_rows.h) ---- */
/* one row per thread; SW holds 3K + D + BW_NT scratch values per row */
static __global__ void k_bw_rows(int S, int C, int A, float *X, float *W, size_t R, size_t D,
                                 size_t K, float scale, float *DL, float *LA, float *SW)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= R)
		return;
	float *z = SW + r * (3 * K + D + BW_NT), *e = z + K, *ea = e + K, *p = ea + K, *t = p + D;
	k_bw_consts(0, C, A, R, scale, t);
	k_bw_row(0, S, C, A, X, W, D, K, r, r % K, p, z, e, ea, t, DL, LA);
}

/* the mean loss, on one thread */
static __global__ void k_bw_means(int C, int A, float *LA, size_t R, float scale, float *t,
                                  float *loss)
{
	k_bw_consts(0, C, A, R, scale, t);
	k_bw_mean(0, A, LA, R, t, loss);
}

/* G[i0 + k], k < n, one thread each: dW (i < D·K), then dX; SW holds np
 * scratch values per thread */
static __global__ void k_bw_grads(int S, int C, int A, float *X, float *W, float *DL, size_t R,
                                  size_t D, size_t K, size_t i0, size_t n, size_t np, float *SW,
                                  float *G)
{
	size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= n)
		return;
	k_bw_grad(0, S, C, A, X, W, DL, R, D, K, i0 + k, 1, SW + k * np, G);
}

/* GradScaler.unscale_: the stored gradient in fp32 times inv, and found_inf */
static __global__ void k_bw_unscales(float *G, size_t n, float inv, float *U, int *bad)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float t[BW_NT];
	k_bw_unscale(0, GPU_K_F32, G, i, 1, U, i, inv, t);
	if (!isfinite(U[i]))
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
	/* a gradient element's scratch: its longest sum (over r for dW, over c
	 * for dX), in launches of at most 2^26 scratch values in all */
	size_t np = R > K ? R : K, gs = np, chunk = ((size_t)1 << 26) / gs;
	if (chunk == 0)
		chunk = 1;
	if (chunk > ng)
		chunk = ng;
	/* x, w, dl, la, loss, grad, un, the rows' scratch, the elements' */
	size_t ox = 0, ow = ox + nx, odl = ow + nw, ola = odl + nl, olo = ola + R, og = olo + 1,
	       ou = og + ng, osr = ou + ng, osg = osr + R * (3 * K + D + BW_NT),
	       total = osg + chunk * gs;
	GPU_CK(cudaMalloc(&d, total * sizeof *d));
	GPU_CK(cudaMalloc(&bad, sizeof *bad));
	GPU_CK(cudaMemset(bad, 0, sizeof *bad));
	GPU_CK(cudaMemcpy(d + ox, x, nx * sizeof *d, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + ow, w, nw * sizeof *d, cudaMemcpyHostToDevice));
	k_to_compute<<<(unsigned)((nx + nw + 127) / 128), 128>>>((int)C, d + ox, nx + nw);
	GPU_CK_LAUNCH();
	k_bw_rows<<<(unsigned)((R + 127) / 128), 128>>>((int)S, (int)C, (int)A, d + ox, d + ow, R,
	                                                D, K, scale, d + odl, d + ola, d + osr);
	GPU_CK_LAUNCH();
	k_bw_means<<<1, 1>>>((int)C, (int)A, d + ola, R, scale, d + osr, d + olo);
	GPU_CK_LAUNCH();
	for (size_t i0 = 0; i0 < ng; i0 += chunk) {
		size_t n = ng - i0 < chunk ? ng - i0 : chunk;
		k_bw_grads<<<(unsigned)((n + 127) / 128), 128>>>((int)S, (int)C, (int)A, d + ox,
		                                                 d + ow, d + odl, R, D, K, i0, n,
		                                                 np, d + osg, d + og);
		GPU_CK_LAUNCH();
	}
	k_bw_unscales<<<(unsigned)((ng + 127) / 128), 128>>>(d + og, ng, inv, d + ou, bad);
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

/* ---- block quantisers: one thread per block of one row ---- */
static __global__ void k_quant_blocks(int rule, int E, float fmax, float amin, const float *X,
                                      size_t R, size_t N, size_t bs, uint8_t *Q, uint32_t *SC)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	k_quant_block(rule, GPU_K_F32, E, fmax, amin, X, R, N, bs, i, Q, SC);
}

extern "C" int gpu_dev_quant(gpu_qrule rule, gpu_kfmt elem, float fmax, float amin, size_t bs,
                             const float *x, size_t R, size_t N, uint8_t *q, uint32_t *scale,
                             char *err, size_t len)
{
	float *dx = NULL;
	uint8_t *dq = NULL;
	uint32_t *ds = NULL;
	int rc = -1;
	size_t nx = R * N, nb = R * ((N + bs - 1) / bs);
	if (elem != GPU_K_E4M3 && elem != GPU_K_E5M2) {
		snprintf(err, len, "quant: element format %d is not e4m3 or e5m2", (int)elem);
		return -1;
	}
	GPU_CK(cudaMalloc(&dx, nx * sizeof *dx));
	GPU_CK(cudaMalloc(&dq, nx * sizeof *dq));
	GPU_CK(cudaMalloc(&ds, nb * sizeof *ds));
	GPU_CK(cudaMemcpy(dx, x, nx * sizeof *dx, cudaMemcpyHostToDevice));
	k_quant_blocks<<<(unsigned)((nb + 127) / 128), 128>>>((int)rule, (int)elem, fmax, amin, dx,
	                                                      R, N, bs, dq, ds);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(q, dq, nx * sizeof *dq, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(scale, ds, nb * sizeof *ds, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(dx);
	cudaFree(dq);
	cudaFree(ds);
	return rc;
}

/* ---- attention: emu/kernels/attention_rows.h, one thread a query row (gpu/rows.h's loops) ---- */
static __global__ void k_attn_soft_rows(int v, int C, int A, float *SACC, size_t nq, size_t nk,
                                        size_t bk, int causal, float sc, float *DQ8, size_t tq,
                                        float *DK8, size_t tk, float psc, float *S_, float *E_,
                                        float *EA, float *P, float *ALPHA, float *LROW, float *L,
                                        float *LOST)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= nq)
		return;
	k_attn_soft_row(v, C, A, GPU_K_E4M3, SACC, nq, nk, bk, causal, i, sc, DQ8, tq, DK8, tk, psc,
	                S_, E_, EA, P, ALPHA, LROW, L, LOST);
}

static __global__ void k_attn_out_rows(int v, int S, int C, int A, float *PART, float *ALPHA,
                                       float *LROW, float *DV8, size_t tk, float psc, size_t nq,
                                       size_t nk, size_t bk, int causal, size_t d, float *O_,
                                       float *PV_, float *O)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= nq)
		return;
	k_attn_out_row(v, S, C, A, PART, ALPHA, LROW, DV8, tk, psc, nq, nk, bk, causal, d, i, O_,
	               PV_, O);
}

/* the number of tiles of t rows in n (fp8's scale arrays; 0 without them) */
static size_t attn_tiles(const float *s, size_t n, size_t t)
{
	return s ? (n + t - 1) / t : 0;
}

extern "C" int gpu_dev_attn_soft(int variant, gpu_kfmt C, gpu_kfmt A, const float *sacc,
                                 size_t nq, size_t nk, size_t bk, int causal, float sc,
                                 const float *dq8, size_t tq, const float *dk8, size_t tk,
                                 float psc, float *p, float *alpha, float *lrow, float *lse,
                                 float *lost, char *err, size_t len)
{
	float *d = NULL;
	int rc = -1;
	size_t ns = nq * nk, nkt = (nk + bk - 1) / bk, n1 = attn_tiles(dq8, nq, tq),
	       n2 = attn_tiles(dk8, nk, tk);
	/* sacc, dq8, dk8, p, alpha, lrow, lse, lost, then s, e, ea (scratch) */
	float *dsacc, *ddq, *ddk, *dp, *dal, *dl, *dL, *dlost, *ds_, *de, *dea;
	GPU_CK(cudaMalloc(&d, (5 * ns + n1 + n2 + nq * nkt + 3 * nq + 1) * sizeof *d));
	dsacc = d, ddq = dsacc + ns, ddk = ddq + n1, dp = ddk + n2, dal = dp + ns,
	dl = dal + nq * nkt, dL = dl + nq, dlost = dL + nq, ds_ = dlost + nq, de = ds_ + ns,
	dea = de + ns;
	GPU_CK(cudaMemcpy(dsacc, sacc, ns * sizeof *d, cudaMemcpyHostToDevice));
	if (n1)
		GPU_CK(cudaMemcpy(ddq, dq8, n1 * sizeof *d, cudaMemcpyHostToDevice));
	if (n2)
		GPU_CK(cudaMemcpy(ddk, dk8, n2 * sizeof *d, cudaMemcpyHostToDevice));
	k_attn_soft_rows<<<(unsigned)((nq + 127) / 128), 128>>>(
	    variant, (int)C, (int)A, dsacc, nq, nk, bk, causal, sc, n1 ? ddq : NULL, tq,
	    n2 ? ddk : NULL, tk, psc, ds_, de, dea, dp, dal, dl, dL, dlost);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(p, dp, ns * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(alpha, dal, nq * nkt * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(lrow, dl, nq * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(lse, dL, nq * sizeof *d, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(lost, dlost, nq * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

extern "C" int gpu_dev_attn_out(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *part,
                                const float *alpha, const float *lrow, const float *dv8, size_t tk,
                                float psc, size_t nq, size_t nk, size_t bk, int causal, size_t d,
                                float *o, char *err, size_t len)
{
	float *m = NULL;
	int rc = -1;
	size_t nkt = (nk + bk - 1) / bk, np = (variant == 0 ? 1 : nkt) * nq * d,
	       n3 = attn_tiles(dv8, nk, tk);
	/* part, alpha, lrow, dv8, o, then O and pv in A (scratch) */
	float *dpart, *dal, *dl, *ddv, *dO, *doa, *dpv;
	GPU_CK(cudaMalloc(&m, (np + nq * nkt + nq + n3 + 3 * nq * d) * sizeof *m));
	dpart = m, dal = dpart + np, dl = dal + nq * nkt, ddv = dl + nq, dO = ddv + n3,
	doa = dO + nq * d, dpv = doa + nq * d;
	GPU_CK(cudaMemcpy(dpart, part, np * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dal, alpha, nq * nkt * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dl, lrow, nq * sizeof *m, cudaMemcpyHostToDevice));
	if (n3)
		GPU_CK(cudaMemcpy(ddv, dv8, n3 * sizeof *m, cudaMemcpyHostToDevice));
	k_attn_out_rows<<<(unsigned)((nq + 127) / 128), 128>>>(
	    variant, (int)S, (int)C, (int)A, dpart, dal, dl, n3 ? ddv : NULL, tk, psc, nq, nk, bk,
	    causal, d, doa, dpv, dO);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(o, dO, nq * d * sizeof *m, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(m);
	return rc;
}

/* ---- attention's sequential variants: every GEMM a sequential FMA fold, one thread a row ---- */
static __global__ void k_attn_operand_rows(int v, int A, float *Q, float *K, float *V, size_t nq,
                                           size_t nk, size_t d, float *QA, float *KA, float *VA)
{
	size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	k_attn_operand_row(v, A, Q, K, V, nq, nk, d, r, QA, KA, VA);
}

static __global__ void k_attn_fwd_rows(int v, int S, int C, int A, float *QA, float *KA, float *VA,
                                       size_t nq, size_t nk, size_t d, size_t bk, int causal,
                                       float sc, float *DQ8, size_t tq, float *DK8, size_t tk,
                                       float *DV8, float psc, float *SACC, float *S_, float *E_,
                                       float *EA, float *P, float *PA, float *O_, float *PV_,
                                       float *O, float *L, float *LOST)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < nq)
		k_attn_fwd_row(v, S, C, A, GPU_K_E4M3, QA, KA, VA, nq, nk, d, bk, causal, i, sc,
		               DQ8, tq, DK8, tk, DV8, psc, SACC, S_, E_, EA, P, PA, O_, PV_, O, L,
		               LOST);
}

static __global__ void k_attn_bwd_q_rows(int v, int S, int C, int A, float *QA, float *KA,
                                         float *VA, float *L, float *O, float sc, size_t nq,
                                         size_t nk, size_t d, int causal, float *SACC, float *P,
                                         float *PA, float *DOA, float *OA, float *DD, float *DS,
                                         float *DSA, float *G, float *DQ)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < nq)
		k_attn_bwd_q_row(v, S, C, A, QA, KA, VA, L, O, sc, nq, nk, d, causal, i, SACC, P,
		                 PA, DOA, OA, DD, DS, DSA, G, DQ);
}

static __global__ void k_attn_bwd_k_rows(int S, int C, int A, float *QA, float *PA, float *DOA,
                                         float *DSA, float sc, size_t nq, size_t nk, size_t d,
                                         int causal, float *G, float *DV, float *DK)
{
	size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (j < nk)
		k_attn_bwd_k_row(S, C, A, QA, PA, DOA, DSA, sc, nq, nk, d, causal, j, G, DV, DK);
}

extern "C" int gpu_dev_attn_seq(int variant, int bwd, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A,
                                const float *q, const float *k, const float *v, size_t nq,
                                size_t nk, size_t d, size_t bk, int causal, float sc,
                                const float *dq8, size_t tq, const float *dk8, size_t tk,
                                const float *dv8, float psc, const float *dO, float *o, float *lse,
                                float *lost, float *dq, float *dk, float *dv, char *err, size_t len)
{
	float *m = NULL;
	int rc = -1;
	size_t nqd = nq * d, nkd = nk * d, ns = nq * nk;
	size_t n1 = attn_tiles(dq8, nq, tq), n2 = attn_tiles(dk8, nk, tk), n3 = attn_tiles(dv8, nk, tk);
	unsigned gq = (unsigned)((nq + 127) / 128), gk = (unsigned)((nk + 127) / 128),
	         gr = (unsigned)((nq + 2 * nk + 127) / 128);
	/* q k v, their copies in A, dq8 dk8 dv8, sacc s e ea P PA, O and pv in A,
	 * L lost O, then dO (into A) O in A, D, dS and dS in A, g per query and
	 * per key, dQ dK dV */
	size_t total = 2 * (nqd + 2 * nkd) + n1 + n2 + n3 + 6 * ns + 3 * nqd + 2 * nq +
	               (bwd ? 2 * ns + 4 * nqd + 3 * nkd + nq : 0);
	float *dQ_, *dK_, *dV_, *qa, *ka, *va, *d1, *d2, *d3, *dS, *ds_, *de, *dea, *dP, *dPA, *doa,
	    *dpv, *dL, *dlost, *dOut, *ddo, *oa, *dd, *dDS, *dsa, *g1, *g2, *gq_, *gk_, *gv_;
	GPU_CK(cudaMalloc(&m, total * sizeof *m));
	dQ_ = m, dK_ = dQ_ + nqd, dV_ = dK_ + nkd, qa = dV_ + nkd, ka = qa + nqd, va = ka + nkd,
	d1 = va + nkd, d2 = d1 + n1, d3 = d2 + n2, dS = d3 + n3, ds_ = dS + ns, de = ds_ + ns,
	dea = de + ns, dP = dea + ns, dPA = dP + ns, doa = dPA + ns, dpv = doa + nqd,
	dL = dpv + nqd, dlost = dL + nq, dOut = dlost + nq, ddo = dOut + nqd;
	oa = ddo + (bwd ? nqd : 0), dd = oa + (bwd ? nqd : 0), dDS = dd + (bwd ? nq : 0),
	dsa = dDS + (bwd ? ns : 0), g1 = dsa + (bwd ? ns : 0), g2 = g1 + (bwd ? nqd : 0),
	gq_ = g2 + (bwd ? nkd : 0), gk_ = gq_ + (bwd ? nqd : 0), gv_ = gk_ + (bwd ? nkd : 0);
	GPU_CK(cudaMemcpy(dQ_, q, nqd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dK_, k, nkd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dV_, v, nkd * sizeof *m, cudaMemcpyHostToDevice));
	if (n1)
		GPU_CK(cudaMemcpy(d1, dq8, n1 * sizeof *m, cudaMemcpyHostToDevice));
	if (n2)
		GPU_CK(cudaMemcpy(d2, dk8, n2 * sizeof *m, cudaMemcpyHostToDevice));
	if (n3)
		GPU_CK(cudaMemcpy(d3, dv8, n3 * sizeof *m, cudaMemcpyHostToDevice));
	k_attn_operand_rows<<<gr, 128>>>(variant, (int)A, dQ_, dK_, dV_, nq, nk, d, qa, ka, va);
	GPU_CK_LAUNCH();
	k_attn_fwd_rows<<<gq, 128>>>(variant, (int)S, (int)C, (int)A, qa, ka, va, nq, nk, d, bk,
	                             causal, sc, n1 ? d1 : NULL, tq, n2 ? d2 : NULL, tk,
	                             n3 ? d3 : NULL, psc, dS, ds_, de, dea, dP, dPA, doa, dpv, dOut,
	                             dL, dlost);
	GPU_CK_LAUNCH();
	if (bwd) {
		GPU_CK(cudaMemcpy(ddo, dO, nqd * sizeof *m, cudaMemcpyHostToDevice));
		k_attn_bwd_q_rows<<<gq, 128>>>(variant, (int)S, (int)C, (int)A, qa, ka, va, dL,
		                               dOut, sc, nq, nk, d, causal, dS, dP, dPA, ddo, oa,
		                               dd, dDS, dsa, g1, gq_);
		GPU_CK_LAUNCH();
		k_attn_bwd_k_rows<<<gk, 128>>>((int)S, (int)C, (int)A, qa, dPA, ddo, dsa, sc, nq,
		                               nk, d, causal, g2, gv_, gk_);
		GPU_CK_LAUNCH();
		GPU_CK(cudaMemcpy(dq, gq_, nqd * sizeof *m, cudaMemcpyDeviceToHost));
		GPU_CK(cudaMemcpy(dk, gk_, nkd * sizeof *m, cudaMemcpyDeviceToHost));
		GPU_CK(cudaMemcpy(dv, gv_, nkd * sizeof *m, cudaMemcpyDeviceToHost));
	}
	GPU_CK(cudaMemcpy(o, dOut, nqd * sizeof *m, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(lse, dL, nq * sizeof *m, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(lost, dlost, nq * sizeof *m, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(m);
	return rc;
}

/* ---- fp8:bwd: the FP8 attention backward, one thread a query row, then a key row ---- */
static __global__ void k_attn8_bwd_pre1(int C, float d_do, float *DV8, size_t ntk, float *DPF)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		k_attn8_bwd_pre(C, d_do, DV8, ntk, DPF);
}

static __global__ void k_attn8_bwd_q_rows(int C, int A, float *QA, float *KA, float *VA, float *DQ8,
                                          size_t tq, float *DK8, size_t tk, float *DPF, float *L,
                                          float *O, float *DO8, float d_do, float sc, float psc,
                                          size_t nq, size_t nk, size_t d, size_t bk, int causal,
                                          float *SACC, float *P, float *P8, float *DOA, float *OA,
                                          float *DD, float *P8A, float *DS)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < nq)
		k_attn8_bwd_q_row(C, A, GPU_K_E4M3, QA, KA, VA, DQ8, tq, DK8, tk, DPF, L, O, DO8,
		                  d_do, sc, psc, nq, nk, d, bk, causal, i, SACC, P, P8, DOA, OA, DD,
		                  P8A, DS);
}

static __global__ void k_attn8_bwd_mid1(int C, int A, float sds, float *DQ8, size_t ntq, float *DK8,
                                        size_t ntk, float *DQF, float *DKF)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		k_attn8_bwd_mid(C, A, sds, DQ8, ntq, DK8, ntk, DQF, DKF);
}

static __global__ void k_attn8_bwd_dq_rows(int S, int C, int A, int DF, float *KA, float *DQF,
                                           size_t tk, float *DO8, float sds, size_t nq, size_t nk,
                                           size_t d, int causal, float *DS, float *DS8, float *DSA,
                                           float *DOA, float *G, float *PART, float *DQ,
                                           float *LOST)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < nq)
		k_attn8_bwd_dq_row(S, C, A, DF, KA, DQF, tk, DO8, sds, nq, nk, d, causal, i, DS,
		                   DS8, DSA, DOA, G, PART, DQ, LOST);
}

static __global__ void k_attn8_bwd_k_rows(int S, int C, int A, float *QA, float *DKF, size_t tq,
                                          float d_do, float psc, float *P8A, float *DSA, float *DOA,
                                          size_t nq, size_t nk, size_t d, int causal, float *G,
                                          float *PART, float *DV, float *DK)
{
	size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (j < nk)
		k_attn8_bwd_k_row(S, C, A, QA, DKF, tq, d_do, psc, P8A, DSA, DOA, nq, nk, d, causal,
		                  j, G, PART, DV, DK);
}

extern "C" int gpu_dev_attn8_bwd_q(gpu_kfmt C, gpu_kfmt A, const float *q8, const float *k8,
                                   const float *v8, const float *dq8, size_t tq, const float *dk8,
                                   const float *dv8, size_t tk, const float *lse, const float *o,
                                   const float *do8, float d_do, float sc, float psc, size_t nq,
                                   size_t nk, size_t d, size_t bk, int causal, float *p8a,
                                   float *ds, char *err, size_t len)
{
	float *m = NULL;
	int rc = -1;
	size_t nqd = nq * d, nkd = nk * d, ns = nq * nk, n1 = (nq + tq - 1) / tq,
	       n2 = (nk + tk - 1) / tk;
	/* q8 k8 v8 and their copies in A, dq8 dk8 dv8 dpf, L O dO8, then sacc P
	 * P8 dO8 and O in A, D, P8A DS */
	float *dq_, *dk_, *dv_, *qa, *ka, *va, *s1, *s2, *s3, *dpf, *dL, *dO_, *ddo, *dsacc, *dp,
	    *dp8, *doa, *dOa, *dd, *dpa, *dds;
	GPU_CK(cudaMalloc(&m, (2 * (nqd + 2 * nkd) + n1 + 3 * n2 + 2 * nq + 4 * nqd + 5 * ns) *
	                          sizeof *m));
	dq_ = m, dk_ = dq_ + nqd, dv_ = dk_ + nkd, qa = dv_ + nkd, ka = qa + nqd, va = ka + nkd,
	s1 = va + nkd, s2 = s1 + n1, s3 = s2 + n2, dpf = s3 + n2, dL = dpf + n2, dO_ = dL + nq,
	ddo = dO_ + nqd, dsacc = ddo + nqd, dp = dsacc + ns, dp8 = dp + ns, doa = dp8 + ns,
	dOa = doa + nqd, dd = dOa + nqd, dpa = dd + nq, dds = dpa + ns;
	GPU_CK(cudaMemcpy(dq_, q8, nqd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dk_, k8, nkd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dv_, v8, nkd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(s1, dq8, n1 * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(s2, dk8, n2 * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(s3, dv8, n2 * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dL, lse, nq * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dO_, o, nqd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(ddo, do8, nqd * sizeof *m, cudaMemcpyHostToDevice));
	k_attn_operand_rows<<<(unsigned)((nq + 2 * nk + 127) / 128), 128>>>(
	    2, (int)A, dq_, dk_, dv_, nq, nk, d, qa, ka, va);
	GPU_CK_LAUNCH();
	k_attn8_bwd_pre1<<<1, 1>>>((int)C, d_do, s3, n2, dpf);
	GPU_CK_LAUNCH();
	k_attn8_bwd_q_rows<<<(unsigned)((nq + 127) / 128), 128>>>(
	    (int)C, (int)A, qa, ka, va, s1, tq, s2, tk, dpf, dL, dO_, ddo, d_do, sc, psc, nq, nk, d,
	    bk, causal, dsacc, dp, dp8, doa, dOa, dd, dpa, dds);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(p8a, dpa, ns * sizeof *m, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(ds, dds, ns * sizeof *m, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(m);
	return rc;
}

extern "C" int gpu_dev_attn8_bwd_rest(gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, gpu_kfmt DF,
                                      const float *q8, const float *k8, const float *dq8,
                                      size_t tq, const float *dk8, size_t tk, const float *do8,
                                      float d_do, float psc, float sds, const float *p8a,
                                      const float *ds, size_t nq, size_t nk, size_t d, int causal,
                                      float *dq, float *dk, float *dv, float *lost, char *err,
                                      size_t len)
{
	float *m = NULL;
	int rc = -1;
	size_t nqd = nq * d, nkd = nk * d, ns = nq * nk, n1 = (nq + tq - 1) / tq,
	       n2 = (nk + tk - 1) / tk;
	/* q8 k8 and their copies in A, dq8 dk8 and the factors, dO8 and in A,
	 * P8A DS DS8 DSA, g and part per query and per key, dQ dK dV lost */
	float *dq_, *dk_, *qa, *ka, *s1, *s2, *dqf, *dkf, *ddo, *doa, *dpa, *dds, *dds8, *dsa, *g1,
	    *p1, *g2, *p2, *gq, *gk, *gv, *dl;
	if (DF != GPU_K_E4M3 && DF != GPU_K_E5M2) {
		snprintf(err, len, "attn8: dS format %d is not e4m3 or e5m2", (int)DF);
		return -1;
	}
	GPU_CK(cudaMalloc(&m, (7 * nqd + 6 * nkd + 2 * (n1 + n2) + 4 * ns + nq) * sizeof *m));
	dq_ = m, dk_ = dq_ + nqd, qa = dk_ + nkd, ka = qa + nqd, s1 = ka + nkd, s2 = s1 + n1,
	dqf = s2 + n2, dkf = dqf + n2, ddo = dkf + n1, doa = ddo + nqd, dpa = doa + nqd,
	dds = dpa + ns, dds8 = dds + ns, dsa = dds8 + ns, g1 = dsa + ns, p1 = g1 + nqd,
	g2 = p1 + nqd, p2 = g2 + nkd, gq = p2 + nkd, gk = gq + nqd, gv = gk + nkd, dl = gv + nkd;
	GPU_CK(cudaMemcpy(dq_, q8, nqd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dk_, k8, nkd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(s1, dq8, n1 * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(s2, dk8, n2 * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(ddo, do8, nqd * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dpa, p8a, ns * sizeof *m, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dds, ds, ns * sizeof *m, cudaMemcpyHostToDevice));
	k_attn_operand_rows<<<(unsigned)((nq + nk + 127) / 128), 128>>>(2, (int)A, dq_, dk_, NULL,
	                                                                nq, nk, d, qa, ka, NULL);
	GPU_CK_LAUNCH();
	k_attn8_bwd_mid1<<<1, 1>>>((int)C, (int)A, sds, s1, n1, s2, n2, dqf, dkf);
	GPU_CK_LAUNCH();
	k_attn8_bwd_dq_rows<<<(unsigned)((nq + 127) / 128), 128>>>(
	    (int)S, (int)C, (int)A, (int)DF, ka, dqf, tk, ddo, sds, nq, nk, d, causal, dds, dds8,
	    dsa, doa, g1, p1, gq, dl);
	GPU_CK_LAUNCH();
	k_attn8_bwd_k_rows<<<(unsigned)((nk + 127) / 128), 128>>>((int)S, (int)C, (int)A, qa, dkf,
	                                                          tq, d_do, psc, dpa, dsa, doa, nq,
	                                                          nk, d, causal, g2, p2, gv, gk);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(dq, gq, nqd * sizeof *m, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dk, gk, nkd * sizeof *m, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(dv, gv, nkd * sizeof *m, cudaMemcpyDeviceToHost));
	GPU_CK(cudaMemcpy(lost, dl, nq * sizeof *m, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(m);
	return rc;
}
