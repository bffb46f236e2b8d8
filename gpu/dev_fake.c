/*
 * dev_fake.c — gpu_dev.h answered by the emulator itself, on the CPU. Linked
 * into build/gpu/nanmap-gpu-fake (make test), it runs the real runner end to
 * end where there is no GPU: every step's input generation, matrix layouts,
 * diagonal placement of the Tensor Core cases, chunking and report writing.
 * Because the "device" is the emulator, every row must come out identical;
 * a row that does not is a bug in the runner's plumbing, not a finding.
 *
 * The matrices follow the layouts of gpu_dev.h exactly (A M×K row-major, B
 * N×K, C and D M×N row-major), so a transposed index in the runner shows up.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_dev.h"
#include "tc.h"

static const emu_env rne = EMU_ENV_DEFAULT;

static const emu_format *fmt_of(gpu_fmt f)
{
	static const char *const names[GPU_NFMT] = {"fp16", "bf16", "e4m3", "e5m2"};
	return emu_format_by_name(names[f]);
}

int gpu_dev_init(char *name, size_t nlen, char *err, size_t len)
{
	(void)err;
	(void)len;
	snprintf(name, nlen, "fake device: the emulator on the CPU (runner self-test)");
	return 0;
}

int gpu_dev_convert(gpu_cv kind, uint64_t first, uint64_t stride, size_t n, uint16_t *out,
                    char *err, size_t len)
{
	static const char *const fmts[GPU_CV_N] = {"fp16", "fp16", "fp16", "bf16", "bf16",
	                                           "bf16", "e4m3", "e4m3", "e5m2", "e5m2"};
	const emu_format *f = emu_format_by_name(fmts[kind]);
	emu_env env = EMU_ENV_DEFAULT;
	(void)err;
	(void)len;
	env.mode = kind == GPU_CV_F16_RZ || kind == GPU_CV_BF16_RZ ? EMU_RTZ : EMU_RNE;
	env.sat = kind == GPU_CV_F16_RN_SAT || kind == GPU_CV_BF16_RN_SAT ||
	          kind == GPU_CV_E4M3_SAT || kind == GPU_CV_E5M2_SAT;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++) {
		uint32_t bits = (uint32_t)(first + i * stride);
		float x;
		memcpy(&x, &bits, sizeof x);
		out[i] = (uint16_t)emu_from_float(f, x, &env).bits;
	}
	return 0;
}

int gpu_dev_widen(gpu_fmt g, uint32_t *out, char *err, size_t len)
{
	const emu_format *f = fmt_of(g), *f32 = emu_format_by_name("fp32");
	(void)err;
	(void)len;
	for (uint32_t b = 0; b < (1u << f->bits); b++)
		out[b] = emu_convert(f32, f, b, &rne).bits;
	return 0;
}

int gpu_dev_arith(gpu_fmt g, int op, const uint16_t *a, const uint16_t *b, const uint16_t *c,
                  size_t n, uint16_t *out, char *err, size_t len)
{
	const emu_format *f = fmt_of(g);
	(void)err;
	(void)len;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++)
		out[i] = (uint16_t)(op == 0   ? emu_add(f, a[i], b[i], &rne)
		                    : op == 1 ? emu_mul(f, a[i], b[i], &rne)
		                              : emu_fma(f, a[i], b[i], c[i], &rne))
		             .bits;
	return 0;
}

int gpu_dev_table(gpu_fmt g, int func, uint16_t *out, char *err, size_t len)
{
	const emu_format *f = fmt_of(g);
	emu_bits one = emu_from_double(f, 1.0, &rne).bits;
	(void)err;
	(void)len;
	for (uint32_t x = 0; x < 65536; x++) {
		emu_result r = func == 0   ? emu_exp(f, x, &rne)
		               : func == 1 ? emu_log(f, x, &rne)
		               : func == 2 ? emu_exp2(f, x, &rne)
		               : func == 3 ? emu_div(f, one, x, &rne)
		               : func == 4 ? emu_rsqrt(f, x, &rne)
		                           : emu_sqrt(f, x, &rne);
		out[x] = (uint16_t)r.bits;
	}
	return 0;
}

/* D[i][j] = model(A row i, B row j, C[i][j]) under the h200 preset. */
static int fake_gemm(const emu_format *in, const emu_format *out, const uint16_t *A,
                     const uint16_t *B, const uint32_t *C, size_t M, size_t N, size_t K,
                     size_t promote, double scale, uint32_t *D, char *err, size_t len)
{
	const emu_format *f32 = emu_format_by_name("fp32");
	emu_tc_model m;
	if (emu_tc_preset("h200", in, out, &m)) {
		snprintf(err, len, "fake: no h200 preset for %s -> %s", in->name, out->name);
		return -1;
	}
	m.promote_every = promote;
	int bad = 0;
#pragma omp parallel
	{
		emu_bits *a = malloc(K * sizeof *a), *b = malloc(K * sizeof *b);
		if (!a || !b)
			bad = 1;
#pragma omp for schedule(dynamic, 4)
		for (size_t ij = 0; ij < M * N; ij++) {
			size_t i = ij / N, j = ij % N;
			if (!a || !b)
				continue;
			for (size_t k = 0; k < K; k++) {
				a[k] = A[i * K + k];
				b[k] = B[j * K + k];
			}
			/* an fp16 C arrives as fp16 bits: widen it (exact) */
			emu_bits c = C ? C[ij] : 0;
			if (C && out->bits == 16)
				c = emu_convert(f32, out, c, &rne).bits;
			emu_bits d = emu_tc_dot(&m, in, out, a, b, K, c).bits;
			if (scale != 1.0)
				d = emu_from_double(f32, emu_decode(f32, d) * scale, &rne).bits;
			D[ij] = d;
		}
		free(a);
		free(b);
	}
	if (bad)
		snprintf(err, len, "fake: out of memory");
	return bad ? -1 : 0;
}

int gpu_dev_mma(gpu_fmt in, int acc16, const uint16_t *A, const uint16_t *B, const uint32_t *C,
                size_t M, size_t N, size_t K, size_t promote, uint32_t *D, char *err,
                size_t len)
{
	return fake_gemm(fmt_of(in), emu_format_by_name(acc16 ? "fp16" : "fp32"), A, B, C, M, N, K,
	                 promote, 1.0, D, err, len);
}

int gpu_dev_gemmex(int compute16, const uint16_t *A, const uint16_t *B, size_t M, size_t N,
                   size_t K, uint32_t *D, char *err, size_t len)
{
	return fake_gemm(fmt_of(GPU_F16), emu_format_by_name(compute16 ? "fp16" : "fp32"), A, B,
	                 NULL, M, N, K, 0, 1.0, D, err, len);
}

/* cuBLASLt as the fake sees it: the model with promotion every 128 (the
 * DeepSeek-V3 figure), or none with FAST_ACCUM; B re-encoded in e4m3, as the
 * runner's model does (its test values are powers of two). */
int gpu_dev_lt_fp8(gpu_fmt bfmt, int fast_accum, const uint8_t *A, const uint8_t *B, size_t M,
                   size_t N, size_t K, float scale_a, float scale_b, uint32_t *D, int *splitk,
                   char *err, size_t len)
{
	const emu_format *e4 = fmt_of(GPU_E4M3), *bf = fmt_of(bfmt);
	uint16_t *a = malloc(M * K * sizeof *a), *b = malloc(N * K * sizeof *b);
	int rc = -1;
	*splitk = 1;
	if (!a || !b) {
		snprintf(err, len, "fake: out of memory");
		goto out;
	}
	for (size_t i = 0; i < M * K; i++)
		a[i] = A[i];
	for (size_t i = 0; i < N * K; i++)
		b[i] = (uint16_t)emu_convert(e4, bf, B[i], &rne).bits;
	rc = fake_gemm(e4, emu_format_by_name("fp32"), a, b, NULL, M, N, K, fast_accum ? 0 : 128,
	               (double)scale_a * scale_b, D, err, len);
out:
	free(a);
	free(b);
	return rc;
}

/* softmax_ce: gpu/kern.cu's k_softmax_rows and k_softmax_mean line by line,
 * each GPU instruction replaced by the emulator's correctly rounded
 * operation of the same format. The emulator's own kernel (emu/softmax.c)
 * must then give the same bits: that proves the CUDA code keeps the
 * emulator's order of operations, which no GPU is needed for. */
static const emu_format *kf(int f)
{
	return emu_format_by_name(f == GPU_K_F16 ? "fp16" : f == GPU_K_BF16 ? "bf16" : "fp32");
}

static double rnd(int f, double x)
{
	return emu_decode(kf(f), emu_from_double(kf(f), x, &rne).bits);
}

static double f_op(int f, emu_op op, double a, double b)
{
	const emu_format *F = kf(f);
	emu_bits args[2] = {emu_encode(F, a), emu_encode(F, b)};
	return emu_decode(F, emu_apply(op, F, NULL, args, &rne).bits);
}

#define F_ADD(f, a, b) f_op(f, EMU_OP_ADD, a, b)
#define F_SUB(f, a, b) f_op(f, EMU_OP_SUB, a, b)
#define F_DIV(f, a, b) f_op(f, EMU_OP_DIV, a, b)
#define F_EXP(f, a) f_op(f, EMU_OP_EXP, a, 0)
#define F_LOG(f, a) f_op(f, EMU_OP_LOG, a, 0)
#define F_MAX(f, a, b) f_op(f, EMU_OP_MAX, a, b)

int gpu_dev_softmax(int v, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, size_t R,
                    size_t N, float *grad, float *loss, char *err, size_t len)
{
	double *la_acc = malloc(R * sizeof *la_acc);
	if (!la_acc) {
		snprintf(err, len, "fake: out of memory");
		return -1;
	}
	for (size_t r = 0; r < R; r++) {
		const float *x = X + r * N;
		size_t y = r % N;
		double Rc = rnd(C, (double)R), m = 0.0, s = 0.0, ls, la;
#define XC(j) rnd(C, x[j])
		if (v >= 1) {
			m = XC(0);
			for (size_t j = 1; j < N; j++)
				m = F_MAX(C, m, XC(j));
		}
		for (size_t j = 0; j < N; j++) {
			double e = v >= 1 ? F_EXP(C, F_SUB(C, XC(j), m)) : F_EXP(C, XC(j));
			s = F_ADD(A, s, rnd(A, e));
		}
		s = rnd(C, s);
		ls = F_LOG(C, s);
		if (v == 0) {
			la = F_SUB(C, ls, XC(y));
		} else if (v == 1) {
			la = F_SUB(C, ls, F_SUB(C, XC(y), m));
		} else {
			ls = F_ADD(C, m, ls);
			la = F_SUB(C, ls, XC(y));
		}
		la_acc[r] = rnd(A, la);
		for (size_t j = 0; j < N; j++) {
			double g;
			if (v == 2)
				g = F_EXP(C, F_SUB(C, XC(j), ls));
			else
				g = F_DIV(C, v >= 1 ? F_EXP(C, F_SUB(C, XC(j), m)) : F_EXP(C, XC(j)), s);
			if (j == y)
				g = F_SUB(C, g, 1.0);
			g = F_DIV(C, g, Rc);
			grad[r * N + j] = (float)rnd(S, g);
		}
#undef XC
	}
	double sum = 0.0;
	for (size_t r = 0; r < R; r++)
		sum = F_ADD(A, sum, la_acc[r]);
	*loss = (float)F_DIV(A, sum, rnd(A, (double)R));
	free(la_acc);
	return 0;
}

#define F_MUL(f, a, b) f_op(f, EMU_OP_MUL, a, b)
#define F_RSQRT(f, a) f_op(f, EMU_OP_RSQRT, a, 0)

/* layernorm: gpu/kern.cu's k_layernorm_rows line by line, as above. */
int gpu_dev_layernorm(int v, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X,
                      const float *DY, size_t R, size_t N, float epsc, float *Y, float *DX,
                      float *RSTD, float *VAR, char *err, size_t len)
{
	double *yc = malloc(N * sizeof *yc);
	if (!yc) {
		snprintf(err, len, "fake: out of memory");
		return -1;
	}
	for (size_t r = 0; r < R; r++) {
		const float *x = X + r * N, *dyin = DY + r * N;
		double Na = rnd(A, (double)N), mean = 0.0, s = 0.0, s2 = 0.0, ma, tmp, tmp2;
#define XC(j) rnd(C, x[j])
		if (v == 2) {
			ma = 0.0;
			for (size_t j = 0; j < N; j++) {
				double xa = rnd(A, XC(j));
				tmp = F_SUB(A, xa, ma);
				tmp2 = F_DIV(A, tmp, rnd(A, (double)(j + 1)));
				ma = F_ADD(A, ma, tmp2);
				tmp2 = F_SUB(A, xa, ma);
				tmp = F_MUL(A, tmp, tmp2);
				s2 = F_ADD(A, s2, tmp);
			}
			s2 = F_DIV(A, s2, Na);
		} else {
			for (size_t j = 0; j < N; j++) {
				s = F_ADD(A, s, rnd(A, XC(j)));
				if (v == 1)
					s2 = F_ADD(A, s2, rnd(A, F_MUL(C, XC(j), XC(j))));
			}
			ma = F_DIV(A, s, Na);
			if (v == 1) {
				s2 = F_DIV(A, s2, Na);
				s2 = F_SUB(A, s2, F_MUL(A, ma, ma));
			} else {
				mean = rnd(C, ma);
				for (size_t j = 0; j < N; j++) {
					yc[j] = F_SUB(C, XC(j), mean);
					s2 = F_ADD(A, s2, rnd(A, F_MUL(C, yc[j], yc[j])));
				}
				s2 = F_DIV(A, s2, Na);
			}
		}
		if (v != 0)
			mean = rnd(C, ma);
		double vr = rnd(C, s2);
		double rs = F_RSQRT(C, F_ADD(C, vr, epsc));
		VAR[r] = (float)vr;
		RSTD[r] = (float)rs;
		for (size_t j = 0; j < N; j++) {
			if (v != 0)
				yc[j] = F_SUB(C, XC(j), mean);
			yc[j] = F_MUL(C, yc[j], rs);
			Y[r * N + j] = (float)rnd(S, yc[j]);
		}
		s = 0.0;
		s2 = 0.0;
		for (size_t j = 0; j < N; j++) {
			double dy = rnd(C, dyin[j]);
			s = F_ADD(A, s, rnd(A, dy));
			s2 = F_ADD(A, s2, rnd(A, F_MUL(C, dy, yc[j])));
		}
		double dmean = rnd(C, F_DIV(A, s, Na));
		double dproj = rnd(C, F_DIV(A, s2, Na));
		for (size_t j = 0; j < N; j++) {
			double dy = rnd(C, dyin[j]);
			tmp = F_SUB(C, dy, dmean);
			tmp2 = F_MUL(C, yc[j], dproj);
			tmp = F_SUB(C, tmp, tmp2);
			tmp = F_MUL(C, tmp, rs);
			DX[r * N + j] = (float)rnd(S, tmp);
		}
#undef XC
	}
	free(yc);
	return 0;
}

/* backward: gpu/kern.cu's k_bw_rows, k_softmax_mean, k_bw_grads and
 * k_bw_unscale line by line, as above. */
int gpu_dev_backward(gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, const float *W,
                     size_t R, size_t D, size_t K, float scale, float inv, float *G, float *U,
                     float *loss, float *found, char *err, size_t len)
{
	double *z = malloc(K * sizeof *z), *e = malloc(K * sizeof *e);
	double *DL = malloc(R * K * sizeof *DL), *la = malloc(R * sizeof *la);
	int rc = -1;
	if (!z || !e || !DL || !la) {
		snprintf(err, len, "fake: out of memory");
		goto out;
	}
	double Rc = rnd(C, (double)R), SR = F_DIV(C, rnd(C, scale), Rc);
	for (size_t r = 0; r < R; r++) {
		size_t y = r % K;
		for (size_t c = 0; c < K; c++) {
			double acc = 0.0;
			for (size_t d = 0; d < D; d++)
				acc = F_ADD(A, acc,
				            rnd(A, F_MUL(C, rnd(C, X[r * D + d]), rnd(C, W[d * K + c]))));
			z[c] = rnd(C, rnd(S, acc));
		}
		double m = z[0], s = 0.0;
		for (size_t c = 1; c < K; c++)
			m = F_MAX(C, m, z[c]);
		for (size_t c = 0; c < K; c++) {
			e[c] = F_EXP(C, F_SUB(C, z[c], m));
			s = F_ADD(A, s, rnd(A, e[c]));
		}
		s = rnd(C, s);
		double ls = F_LOG(C, s);
		la[r] = rnd(A, F_SUB(C, ls, F_SUB(C, z[y], m)));
		for (size_t c = 0; c < K; c++) {
			double g = F_DIV(C, e[c], s);
			if (c == y)
				g = F_SUB(C, g, 1.0);
			g = F_MUL(C, g, SR);
			DL[r * K + c] = rnd(C, rnd(S, g));
		}
	}
	double sum = 0.0;
	for (size_t r = 0; r < R; r++)
		sum = F_ADD(A, sum, la[r]);
	*loss = (float)F_DIV(A, sum, rnd(A, (double)R));
	for (size_t i = 0; i < D * K + R * D; i++) {
		double acc = 0.0;
		if (i < D * K) {
			size_t d = i / K, c = i % K;
			for (size_t r = 0; r < R; r++)
				acc = F_ADD(A, acc, rnd(A, F_MUL(C, rnd(C, X[r * D + d]), DL[r * K + c])));
		} else {
			size_t r = (i - D * K) / D, d = (i - D * K) % D;
			for (size_t c = 0; c < K; c++)
				acc = F_ADD(A, acc, rnd(A, F_MUL(C, DL[r * K + c], rnd(C, W[d * K + c]))));
		}
		G[i] = (float)rnd(S, acc);
	}
	*found = 0.0f;
	for (size_t i = 0; i < D * K + R * D; i++) {
		double o = inv != 1.0f ? F_MUL(GPU_K_F32, G[i], inv) : G[i];
		U[i] = (float)o;
		if (!isfinite(o))
			*found = 1.0f;
	}
	rc = 0;
out:
	free(z);
	free(e);
	free(DL);
	free(la);
	return rc;
}
