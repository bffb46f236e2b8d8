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

#include "gpu/gpu_dev.h"
#include "gpu/gpu_host.h"
#include "emu/kernels/tc.h"

static const emu_env rne = EMU_ENV_DEFAULT;

static const emu_format *fmt_of(gpu_fmt f)
{
	static const char *const names[GPU_NFMT] = {"fp16", "bf16", "e4m3", "e5m2"};
	return emu_format_by_name(names[f]);
}

/* The fake's functions are the emulator's, correctly rounded either way. */
int gpu_dev_fp32_math(int cr, char *err, size_t len)
{
	(void)cr;
	(void)err;
	(void)len;
	return 0;
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

/* D[i][j] = model(A row i, B row j, C[i][j]) under the preset gpu: "h200-mma"
 * for our mma.sync, "h200" (wgmma's FP8 path) for cuBLAS. */
static int fake_gemm(const char *gpu, const emu_format *in, const emu_format *in_b,
                     const emu_format *out, const uint16_t *A, const uint16_t *B, const uint32_t *C,
                     size_t M, size_t N, size_t K, size_t promote, double scale, uint32_t *D,
                     char *err, size_t len)
{
	const emu_format *f32 = emu_format_by_name("fp32");
	emu_tc_model m;
	if (emu_tc_preset(gpu, in, out, &m)) {
		snprintf(err, len, "fake: no %s preset for %s -> %s", gpu, in->name, out->name);
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
			emu_bits d = emu_tc_dot2(&m, in, in_b, out, a, b, K, c).bits;
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
                size_t M, size_t N, size_t K, size_t promote, uint32_t *D, char *err, size_t len)
{
	return fake_gemm("h200-mma", fmt_of(in), fmt_of(in),
	                 emu_format_by_name(acc16 ? "fp16" : "fp32"), A, B, C, M, N, K, promote,
	                 1.0, D, err, len);
}

int gpu_dev_gemmex(int compute16, const uint16_t *A, const uint16_t *B, size_t M, size_t N,
                   size_t K, uint32_t *D, char *err, size_t len)
{
	return fake_gemm("h200", fmt_of(GPU_F16), fmt_of(GPU_F16),
	                 emu_format_by_name(compute16 ? "fp16" : "fp32"), A, B, NULL, M, N, K, 0,
	                 1.0, D, err, len);
}

/* cuBLASLt as the fake sees it: the model with promotion every 128, or none
 * with FAST_ACCUM (what the H200 showed, docs/gpu-results.md); B in its own
 * format (emu_tc_dot2). */
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
		b[i] = B[i];
	rc = fake_gemm("h200", e4, bf, emu_format_by_name("fp32"), a, b, NULL, M, N, K,
	               fast_accum ? 0 : 128, (double)scale_a * scale_b, D, err, len);
out:
	free(a);
	free(b);
	return rc;
}

/* the training kernels: gpu/rows.h on the host (gpu/host_rows.c), without tables */
int gpu_dev_softmax(int v, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, size_t R, size_t N,
                    float *grad, float *loss, char *err, size_t len)
{
	return gpu_rows_softmax(NULL, v, S, C, A, X, R, N, grad, loss, err, len);
}

int gpu_dev_layernorm(int v, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, const float *DY,
                      size_t R, size_t N, float epsc, float *Y, float *DX, float *RSTD, float *VAR,
                      char *err, size_t len)
{
	return gpu_rows_layernorm(NULL, v, S, C, A, X, DY, R, N, epsc, Y, DX, RSTD, VAR, err, len);
}

int gpu_dev_backward(gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, const float *W, size_t R,
                     size_t D, size_t K, float scale, float inv, float *G, float *U, float *loss,
                     float *found, char *err, size_t len)
{
	return gpu_rows_backward(NULL, S, C, A, X, W, R, D, K, scale, inv, G, U, loss, found, err,
	                         len);
}

int gpu_dev_rmsnorm(int v, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, const float *DY,
                    size_t R, size_t N, float epsc, float gs, float *Y, float *DX, float *RSTD,
                    float *MS, float *DG, char *err, size_t len)
{
	return gpu_rows_rmsnorm(NULL, v, S, C, A, X, DY, R, N, epsc, gs, Y, DX, RSTD, MS, DG, err,
	                        len);
}

int gpu_dev_bce(int v, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, const float *TY,
                size_t R, size_t N, float *grad, float *loss, char *err, size_t len)
{
	return gpu_rows_bce(NULL, v, S, C, A, X, TY, R, N, grad, loss, err, len);
}

int gpu_dev_matmul(int fma, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, size_t m, size_t n,
                   size_t k, float *acc, float *c, char *err, size_t len)
{
	return gpu_rows_matmul(NULL, fma, S, C, A, X, m, n, k, acc, c, err, len);
}

int gpu_dev_batchnorm(int v, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *X, const float *DY,
                      size_t NB, size_t CH, const float cst[6], float *Y, float *DX, float *MEAN,
                      float *VAR, float *RM, float *RV, float *DGAMMA, float *DBETA, char *err,
                      size_t len)
{
	return gpu_rows_batchnorm(NULL, v, S, C, A, X, DY, NB, CH, cst, Y, DX, MEAN, VAR, RM, RV,
	                          DGAMMA, DBETA, err, len);
}

int gpu_dev_optimizer(int v, unsigned flags, gpu_kfmt S, gpu_kfmt C, gpu_kfmt G, gpu_kfmt T,
                      const float *gs, size_t n, unsigned steps, const double *py, uint64_t seed,
                      float *w, float *m, float *vv, char *err, size_t len)
{
	return gpu_rows_optimizer(NULL, v, flags, S, C, G, T, gs, n, steps, py, seed, w, m, vv, err,
	                          len);
}

/* gpu/kern.cu's gpu_dev_matmul_tc: the GEMM (gpu_dev_mma above, the h200-mma
 * model), its encodings widened, then the store of emu/kernels/matmul_rows.h */
int gpu_dev_matmul_tc(gpu_kfmt S, gpu_kfmt C, gpu_kfmt O, const uint16_t *a, const uint16_t *b,
                      size_t m, size_t n, size_t k, float *acc, float *c, char *err, size_t len)
{
	size_t no = m * n;
	uint32_t *cz = calloc(no, sizeof *cz), *dd = malloc(no * sizeof *dd);
	float *hd = malloc(no * sizeof *hd);
	const emu_format *of = emu_format_by_name(O == GPU_K_F16 ? "fp16" : "fp32");
	int rc = -1;
	if ((S != GPU_K_F16 && S != GPU_K_BF16) || (O != GPU_K_F32 && O != GPU_K_F16)) {
		snprintf(err, len,
		         "matmul tc: storage %d is not fp16 or bf16, or output %d is not "
		         "fp32 or fp16",
		         (int)S, (int)O);
		goto out;
	}
	if (!cz || !dd || !hd) {
		snprintf(err, len, "matmul tc: out of memory");
		goto out;
	}
	if (m % 16 || n % 8 || k % 16) {
		snprintf(err, len, "mma: bad shape or mode (M %zu N %zu K %zu)", m, n, k);
		goto out;
	}
	if (gpu_dev_mma(S == GPU_K_F16 ? GPU_F16 : GPU_BF16, O == GPU_K_F16, a, b, cz, m, n, k, 0,
	                dd, err, len))
		goto out;
	for (size_t i = 0; i < no; i++)
		hd[i] = (float)emu_decode(of, dd[i]);
	rc = gpu_rows_matmul_tc_store(S, C, O, hd, no, acc, c, err, len);
out:
	free(cz);
	free(dd);
	free(hd);
	return rc;
}

int gpu_dev_quant(gpu_qrule rule, gpu_kfmt elem, float fmax, float amin, size_t bs, const float *x,
                  size_t R, size_t N, uint8_t *q, uint32_t *scale, char *err, size_t len)
{
	return gpu_rows_quant(rule, elem, fmax, amin, bs, x, R, N, q, scale, err, len);
}

int gpu_dev_attn_soft(int v, gpu_kfmt C, gpu_kfmt A, const float *sacc, size_t nq, size_t nk,
                      size_t bk, int causal, float sc, const float *dq8, size_t tq,
                      const float *dk8, size_t tk, float psc, float *p, float *alpha, float *lrow,
                      float *lse, float *lost, char *err, size_t len)
{
	return gpu_rows_attn_soft(NULL, v, C, A, sacc, nq, nk, bk, causal, sc, dq8, tq, dk8, tk,
	                          psc, p, alpha, lrow, lse, lost, err, len);
}

int gpu_dev_attn_out(int v, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *part,
                     const float *alpha, const float *lrow, const float *dv8, size_t tk, float psc,
                     size_t nq, size_t nk, size_t bk, int causal, size_t d, float *o, char *err,
                     size_t len)
{
	return gpu_rows_attn_out(NULL, v, S, C, A, part, alpha, lrow, dv8, tk, psc, nq, nk, bk,
	                         causal, d, o, err, len);
}

int gpu_dev_attn_seq(int v, int bwd, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *q,
                     const float *k, const float *vv, size_t nq, size_t nk, size_t d, size_t bk,
                     int causal, float sc, const float *dq8, size_t tq, const float *dk8, size_t tk,
                     const float *dv8, float psc, const float *dO, float *o, float *lse,
                     float *lost, float *dq, float *dk, float *dv, char *err, size_t len)
{
	return gpu_rows_attn_seq(NULL, v, bwd, S, C, A, q, k, vv, nq, nk, d, bk, causal, sc, dq8,
	                         tq, dk8, tk, dv8, psc, dO, o, lse, lost, dq, dk, dv, err, len);
}

int gpu_dev_attn8_bwd_q(gpu_kfmt C, gpu_kfmt A, const float *q8, const float *k8, const float *v8,
                        const float *dq8, size_t tq, const float *dk8, const float *dv8, size_t tk,
                        const float *lse, const float *o, const float *do8, float d_do, float sc,
                        float psc, size_t nq, size_t nk, size_t d, size_t bk, int causal,
                        float *p8a, float *ds, char *err, size_t len)
{
	return gpu_rows_attn8_bwd_q(NULL, C, A, q8, k8, v8, dq8, tq, dk8, dv8, tk, lse, o, do8,
	                            d_do, sc, psc, nq, nk, d, bk, causal, p8a, ds, err, len);
}

int gpu_dev_attn8_bwd_rest(gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, gpu_kfmt DF, const float *q8,
                           const float *k8, const float *dq8, size_t tq, const float *dk8,
                           size_t tk, const float *do8, float d_do, float psc, float sds,
                           const float *p8a, const float *ds, size_t nq, size_t nk, size_t d,
                           int causal, float *dq, float *dk, float *dv, float *lost, char *err,
                           size_t len)
{
	return gpu_rows_attn8_bwd_rest(NULL, S, C, A, DF, q8, k8, dq8, tq, dk8, tk, do8, d_do, psc,
	                               sds, p8a, ds, nq, nk, d, causal, dq, dk, dv, lost, err, len);
}
