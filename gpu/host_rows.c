/*
 * host_rows.c — gpu/rows.h and the row sources emu/kernels/NAME_rows.h
 * (softmax_ce, layernorm, rmsnorm, bce, backward, matmul, batchnorm,
 * optimizer), the
 * row bodies gpu/kern.cu runs on the GPU, compiled for the host with each
 * operation the emulator's in the same format (RNE), and run row after row.
 * Two uses:
 *  - with no tables it is the fake device's kernel (gpu/dev_fake.c): the
 *    emulator's own kernels (emu/kernels/softmax.c, layernorm.c, backward.c,
 *    rmsnorm.c, bce.c, matmul.c, batchnorm.c, optimizer.c) must
 *    give the same bits, which proves that the code nvcc compiles keeps
 *    their order of operations, without a GPU;
 *  - with the tables measured on the GPU (gpu-tables.txt), fp16/bf16 exp,
 *    log and rsqrt are the GPU's own results and every other operation is
 *    correctly rounded on both sides, so it predicts the GPU's fp16 and bf16
 *    kernels bit for bit (the "replay" rows of the kern step); log1p has no
 *    table (the GPU's is log1pf rounded), so bce stable is not replayed.
 * Nothing here is per kernel but the loop over rows and the scratch memory:
 * a change of a kernel is a change of gpu/rows.h or of its row source, which
 * both sides compile.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_dev.h"
#include "gpu/gpu_host.h"

static const emu_env rne = EMU_ENV_DEFAULT;

/* a format of rows.h on the host: the emulator's format, and the GPU's
 * tables to look exp, log and rsqrt up in (NULL: correctly rounded) */
typedef struct {
	const emu_format *f;
	const gpu_tables *t;
} host_fmt;

/* the binary64 x rounded once into F (a float x is exact as one) */
static float host_rnd_d(const host_fmt *F, double x)
{
	return (float)emu_decode(F->f, emu_from_double(F->f, x, &rne).bits);
}

static float host_rnd(const host_fmt *F, float x)
{
	return host_rnd_d(F, x);
}

/* op in F on operands that are values of F (b unused by unary ops) */
static float host_op(const host_fmt *F, emu_op op, float a, float b)
{
	emu_bits args[2] = {emu_encode(F->f, a), emu_encode(F->f, b)}, r;
	if (F->t && gpu_tables_lookup(F->t, gpu_table_func(op), F->f, args[0], &r))
		return (float)emu_decode(F->f, r);
	return (float)emu_decode(F->f, emu_apply(op, F->f, NULL, args, &rne).bits);
}

/* a·b + c in F, one rounding (operands values of F) */
static float host_fma(const host_fmt *F, float a, float b, float c)
{
	emu_bits args[3] = {emu_encode(F->f, a), emu_encode(F->f, b), emu_encode(F->f, c)};
	return (float)emu_decode(F->f, emu_apply(EMU_OP_FMA, F->f, NULL, args, &rne).bits);
}

/* x in F (e4m3 or e5m2), RNE, saturating: the encoding */
static uint8_t host_code8(const host_fmt *F, float x)
{
	const emu_env sat = {EMU_RNE, true, false, false, 0, 0};
	return (uint8_t)emu_from_double(F->f, x, &sat).bits;
}

static uint32_t host_f2u(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

static float host_u2f(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof x);
	return x;
}

typedef const host_fmt *k_fmt;
#define K_FN static
#define K_RND(F, x) host_rnd(F, x)
#define K_RND_D(F, x) host_rnd_d(F, x)
#define K_ADD(F, a, b) host_op(F, EMU_OP_ADD, a, b)
#define K_SUB(F, a, b) host_op(F, EMU_OP_SUB, a, b)
#define K_MUL(F, a, b) host_op(F, EMU_OP_MUL, a, b)
#define K_DIV(F, a, b) host_op(F, EMU_OP_DIV, a, b)
#define K_EXP(F, a) host_op(F, EMU_OP_EXP, a, 0.0f)
#define K_LOG(F, a) host_op(F, EMU_OP_LOG, a, 0.0f)
#define K_RSQRT(F, a) host_op(F, EMU_OP_RSQRT, a, 0.0f)
#define K_MAX(F, a, b) host_op(F, EMU_OP_MAX, a, b)
#define K_LOG1P(F, a) host_op(F, EMU_OP_LOG1P, a, 0.0f)
#define K_NEG(F, a) host_op(F, EMU_OP_NEG, a, 0.0f)
#define K_ABS(F, a) host_op(F, EMU_OP_ABS, a, 0.0f)
#define K_FMA(F, a, b, c) host_fma(F, a, b, c)
#define K_SQRT(F, a) host_op(F, EMU_OP_SQRT, a, 0.0f)
#define K_CODE8(F, x) host_code8(F, x)
#define K_F2U(x) host_f2u(x)
#define K_U2F(u) host_u2f(u)
#define K_PREC(F) ((F)->f->p)
#define K_EMIN(F) ((F)->f->emin)
#define K_FMAX(F) ((F)->f->max)
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

#include "emu/engine/kern.h"

/* the optimizer's step ids, which key adamw_sr's draws, are the engine's */
_Static_assert(K_STEP0 == EMU_STEP0, "gpu/krow_loops.h's K_STEP0 is not EMU_STEP0");

/* The handles of the three gpu_kfmt formats, indexed by gpu_kfmt. -1 with
 * err when one of S, C, A is none of them. */
static int host_fmts(const gpu_tables *t, int S, int C, int A, host_fmt h[3], char *err, size_t len)
{
	static const char *const names[3] = {"fp32", "fp16", "bf16"}; /* GPU_K_F32, _F16, _BF16 */
	int f[3] = {S, C, A};
	for (int i = 0; i < 3; i++)
		if (f[i] < GPU_K_F32 || f[i] > GPU_K_BF16) {
			snprintf(err, len, "kernel format %d is not fp32, fp16 or bf16", f[i]);
			return -1;
		}
	for (int i = 0; i < 3; i++) {
		h[i].f = emu_format_by_name(names[i]);
		h[i].t = t;
	}
	return 0;
}

/* gpu/kern.cu's gpu_dev_softmax: its three launches (the load, the rows, the
 * mean) in order */
int gpu_rows_softmax(const gpu_tables *t, int v, int S, int C, int A, const float *X, size_t R,
                     size_t N, float *grad, float *loss, char *err, size_t len)
{
	host_fmt h[3];
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	float *xc = malloc((R * N + R + 2 * N + SM_NT) * sizeof *xc);
	if (!xc) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *la = xc + R * N, *e = la + R, *ea = e + N, *tt = ea + N;
	for (size_t i = 0; i < R * N; i++)
		xc[i] = K_RND(&h[C], X[i]);
	for (size_t r = 0; r < R; r++) {
		k_softmax_consts(0, &h[C], &h[A], R, tt);
		k_softmax_row(0, v, &h[S], &h[C], &h[A], xc, N, r, r % N, e, ea, tt, grad, la);
	}
	k_softmax_consts(0, &h[C], &h[A], R, tt);
	k_softmax_mean(0, &h[A], la, R, tt, loss);
	free(xc);
	return 0;
}

/* gpu/kern.cu's gpu_dev_layernorm: its two launches (the load, the rows) in
 * order, the rows sharing one scratch slice */
int gpu_rows_layernorm(const gpu_tables *t, int v, int S, int C, int A, const float *X,
                       const float *DY, size_t R, size_t N, float epsc, float *Y, float *DX,
                       float *RSTD, float *VAR, char *err, size_t len)
{
	host_fmt h[3];
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	float *xc = malloc((2 * R * N + 4 * N + LN_NT) * sizeof *xc);
	if (!xc) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *dy = xc + R * N, *yc = dy + R * N, *w1 = yc + N, *w2 = w1 + N, *kA = w2 + N,
	      *tt = kA + N;
	for (size_t i = 0; i < R * N; i++) {
		xc[i] = K_RND(&h[C], X[i]);
		dy[i] = DY[i];
	}
	for (size_t r = 0; r < R; r++) {
		k_layernorm_consts(0, v, &h[C], &h[A], N, epsc, tt, kA);
		k_layernorm_fwd(0, v, &h[S], &h[C], &h[A], xc, N, r, kA, tt, yc, w1, w2, Y, RSTD,
		                VAR);
		k_layernorm_bwd(0, &h[S], &h[C], &h[A], dy, r * N, N, r, tt, yc, w1, w2, RSTD, DX);
	}
	free(xc);
	return 0;
}

/* gpu/kern.cu's gpu_dev_backward: its launches (the load, the rows, the
 * mean, the gradient's elements, unscale_) in order */
int gpu_rows_backward(const gpu_tables *t, int S, int C, int A, const float *X, const float *W,
                      size_t R, size_t D, size_t K, float scale, float inv, float *G, float *U,
                      float *loss, float *found, char *err, size_t len)
{
	host_fmt h[3];
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	size_t nx = R * D, nw = D * K, ng = D * K + R * D, np = D > R ? D : R;
	if (K > np)
		np = K;
	float *xc = malloc((nx + nw + R * K + R + 3 * K + np + BW_NT) * sizeof *xc);
	if (!xc) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *wc = xc + nx, *dl = wc + nw, *la = dl + R * K, *z = la + R, *e = z + K, *ea = e + K,
	      *p = ea + K, *tt = p + np;
	for (size_t i = 0; i < nx; i++)
		xc[i] = K_RND(&h[C], X[i]);
	for (size_t i = 0; i < nw; i++)
		wc[i] = K_RND(&h[C], W[i]);
	for (size_t r = 0; r < R; r++) {
		k_bw_consts(0, &h[C], &h[A], R, scale, tt);
		k_bw_row(0, &h[S], &h[C], &h[A], xc, wc, D, K, r, r % K, p, z, e, ea, tt, dl, la);
	}
	k_bw_consts(0, &h[C], &h[A], R, scale, tt);
	k_bw_mean(0, &h[A], la, R, tt, loss);
	k_bw_grad(0, &h[S], &h[C], &h[A], xc, wc, dl, R, D, K, 0, ng, p, G);
	*found = 0.0f;
	for (size_t i = 0; i < ng; i++) {
		k_bw_unscale(0, &h[GPU_K_F32], G, i, 1, U, i, inv, tt);
		if (!isfinite(U[i]))
			*found = 1.0f;
	}
	free(xc);
	return 0;
}

/* gpu/kern.cu's gpu_dev_rmsnorm: its three launches (the load, the rows,
 * dg's columns) in order, the rows sharing one scratch slice */
int gpu_rows_rmsnorm(const gpu_tables *t, int v, int S, int C, int A, const float *X,
                     const float *DY, size_t R, size_t N, float epsc, float gs, float *Y,
                     float *DX, float *RSTD, float *MS, float *DG, char *err, size_t len)
{
	host_fmt h[3];
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	float *xc = malloc((3 * R * N + 4 * N + RN_NT) * sizeof *xc);
	if (!xc) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *dy = xc + R * N, *q = dy + R * N, *g = q + R * N, *xh = g + N, *w1 = xh + N,
	      *w2 = w1 + N, *tt = w2 + N;
	for (size_t i = 0; i < R * N; i++) {
		xc[i] = K_RND(&h[C], X[i]);
		dy[i] = DY[i];
	}
	for (size_t r = 0; r < R; r++) {
		k_rmsnorm_consts(0, v, &h[C], &h[A], &h[GPU_K_F32], N, epsc, tt);
		for (size_t j = 0; j < N; j++)
			g[j] = gs;
		k_rmsnorm_g(0, &h[C], g, N);
		k_rmsnorm_fwd(0, v, &h[S], &h[C], &h[A], &h[GPU_K_F32], xc, N, r, g, tt, xh, w1, Y,
		              RSTD, MS);
		k_rmsnorm_bwd(0, v, &h[S], &h[C], &h[A], dy, r * N, N, r, g, tt, xh, w1, w2, DX, q);
	}
	k_rmsnorm_dg(0, &h[A], q, R, N, 0, N, DG);
	free(xc);
	return 0;
}

/* gpu/kern.cu's gpu_dev_bce: its three launches (the load, the rows, the
 * mean) in order */
int gpu_rows_bce(const gpu_tables *t, int v, int S, int C, int A, const float *X,
                 const float *TY, size_t R, size_t N, float *grad, float *loss, char *err,
                 size_t len)
{
	host_fmt h[3];
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	size_t T = R * N;
	float *xc = malloc((3 * T + 4 * N + BCE_NT) * sizeof *xc);
	if (!xc) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *ty = xc + T, *l = ty + T, *e = l + T, *d = e + N, *u = d + N, *w = u + N,
	      *tt = w + N;
	for (size_t i = 0; i < T; i++) {
		xc[i] = K_RND(&h[C], X[i]);
		ty[i] = TY[i];
	}
	for (size_t r = 0; r < R; r++) {
		k_bce_consts(0, &h[C], &h[A], T, tt);
		k_bce_row(0, v, &h[S], &h[C], &h[A], xc, ty, N, r, e, d, u, w, tt, grad, l);
	}
	k_bce_consts(0, &h[C], &h[A], T, tt);
	k_bce_mean(0, &h[A], l, T, tt, loss);
	free(xc);
	return 0;
}

/* gpu/kern.cu's gpu_dev_matmul: its three launches (the load, the operands
 * into A, the elements) in order, element after element */
int gpu_rows_matmul(const gpu_tables *t, int fma, int S, int C, int A, const float *X, size_t m,
                    size_t n, size_t k, float *acc, float *c, char *err, size_t len)
{
	host_fmt h[3];
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	size_t mk = m * k, nx = mk + k * n;
	float *xc = malloc((nx + k) * sizeof *xc);
	if (!xc) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *p = xc + nx;
	for (size_t i = 0; i < nx; i++)
		xc[i] = K_RND(&h[C], X[i]);
	for (size_t i = 0; i < nx; i++)
		if (i < mk)
			k_matmul_to_accum(0, &h[A], xc, i, 1, xc + mk, 0, 0, mk);
		else
			k_matmul_to_accum(0, &h[A], xc, 0, 0, xc + mk, i - mk, 1, mk);
	for (size_t o = 0; o < m * n; o++) {
		k_matmul_dot(0, fma, &h[C], &h[A], xc, xc + mk, 0, n, k, o, 1, p, acc);
		k_matmul_store(0, &h[S], acc, c, o, 1);
	}
	free(xc);
	return 0;
}

/* gpu/kern.cu's gpu_dev_batchnorm: its two launches (the load, the
 * channels) in order, channel after channel */
int gpu_rows_batchnorm(const gpu_tables *t, int v, int S, int C, int A, const float *X,
                       const float *DY, size_t NB, size_t CH, const float cst[6], float *Y,
                       float *DX, float *MEAN, float *VAR, float *RM, float *RV, float *DGAMMA,
                       float *DBETA, char *err, size_t len)
{
	host_fmt h[3];
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	size_t nx = NB * CH;
	float *xc = malloc((3 * nx + 9 * CH + 3 * NB + BN_NT) * sizeof *xc);
	if (!xc) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *dy = xc + nx, *xmu = dy + nx, *sh = xmu + nx, *w = sh + 9 * CH;
	for (size_t i = 0; i < nx; i++) {
		xc[i] = K_RND(&h[C], X[i]);
		dy[i] = DY[i];
	}
	for (size_t c = 0; c < CH; c++)
		k_batchnorm_channel(0, v, &h[S], &h[C], &h[A], xc, dy, NB, CH, c, cst, Y, DX, MEAN,
		                    VAR, RM, RV, DGAMMA, DBETA, xmu, sh, w);
	free(xc);
	return 0;
}

/* gpu/kern.cu's gpu_dev_optimizer: its one launch, element after element */
int gpu_rows_optimizer(const gpu_tables *t, int v, unsigned flags, int S, int C, int G, int T,
                       const float *gs, size_t n, unsigned steps, const double *py, uint64_t seed,
                       float *w, float *m, float *vv, char *err, size_t len)
{
	host_fmt h[3];
	k_opt_cfg cfg = {v, flags};
	if (host_fmts(t, S, C, G, h, err, len) || host_fmts(t, T, T, T, h, err, len))
		return -1;
	for (size_t i = 0; i < n; i++)
		k_opt_elem(cfg, &h[S], &h[C], &h[G], &h[T], gs, n, i, steps, py, seed, w, m, vv);
	return 0;
}

/* rows.h's stochastic rounding alone (tests/gpu/check_gpuhost.c): out[i] = x[i]
 * rounded to F by k_sr with the bits k_sr_bits(seed, step, e0 + i) */
int gpu_rows_sr(int F, const float *x, size_t n, uint64_t seed, unsigned step, uint64_t e0,
                float *out, char *err, size_t len)
{
	host_fmt h[3];
	if (host_fmts(NULL, F, F, F, h, err, len))
		return -1;
	for (size_t i = 0; i < n; i++)
		out[i] = k_sr(&h[F], x[i], k_sr_bits(seed, step, e0 + i));
	return 0;
}

/* gpu/kern.cu's gpu_dev_matmul_tc after its GEMM: the store's launch,
 * element after element */
int gpu_rows_matmul_tc_store(int S, int C, int O, const float *d, size_t no, float *acc,
                             float *c, char *err, size_t len)
{
	host_fmt h[3];
	if (host_fmts(NULL, S, C, O, h, err, len))
		return -1;
	float *D = malloc(no * sizeof *D);
	if (!D) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	memcpy(D, d, no * sizeof *D);
	for (size_t o = 0; o < no; o++)
		k_matmul_tc_store(0, &h[S], &h[C], &h[O], D, acc, c, o, 1);
	free(D);
	return 0;
}

/* gpu/kern.cu's gpu_dev_quant: its one launch, block after block */
int gpu_rows_quant(int rule, int elem, float fmax, float amin, size_t bs, const float *x,
                   size_t R, size_t N, uint8_t *q, uint32_t *scale, char *err, size_t len)
{
	host_fmt f32 = {emu_format_by_name("fp32"), NULL}, e = {NULL, NULL};
	if (elem == GPU_K_E4M3 || elem == GPU_K_E5M2)
		e.f = emu_format_by_name(elem == GPU_K_E4M3 ? "e4m3" : "e5m2");
	if (!e.f || !bs) {
		snprintf(err, len, "quant: element format %d is not e4m3 or e5m2, or no block",
		         elem);
		return -1;
	}
	size_t nb = R * ((N + bs - 1) / bs);
	for (size_t i = 0; i < nb; i++)
		k_quant_block(rule, &f32, &e, fmax, amin, x, R, N, bs, i, q, scale);
	return 0;
}

/* gpu/kern.cu's gpu_dev_attn_soft and gpu_dev_attn_out: one launch each,
 * row after row (E4, the fp8 cast of P, is a conversion: no table); the
 * scratch rows and copies of the inputs their device arrays */
int gpu_rows_attn_soft(const gpu_tables *t, int v, int C, int A, const float *SACC, size_t nq,
                       size_t nk, size_t bk, int causal, float sc, const float *DQ8, size_t tq,
                       const float *DK8, size_t tk, float psc, float *P, float *ALPHA, float *LROW,
                       float *L, float *LOST, char *err, size_t len)
{
	host_fmt h[3], e4 = {emu_format_by_name("e4m3"), NULL};
	size_t ns = nq * nk, n1 = DQ8 ? (nq + tq - 1) / tq : 0, n2 = DK8 ? (nk + tk - 1) / tk : 0;
	if (host_fmts(t, C, C, A, h, err, len))
		return -1;
	float *m = malloc((4 * ns + n1 + n2 + 1) * sizeof *m);
	if (!m) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *sacc = m, *s = sacc + ns, *e = s + ns, *ea = e + ns, *dq = ea + ns, *dk = dq + n1;
	memcpy(sacc, SACC, ns * sizeof *m);
	if (n1)
		memcpy(dq, DQ8, n1 * sizeof *m);
	if (n2)
		memcpy(dk, DK8, n2 * sizeof *m);
	for (size_t i = 0; i < nq; i++)
		k_attn_soft_row(v, &h[C], &h[A], &e4, sacc, nq, nk, bk, causal, i, sc,
		                n1 ? dq : NULL, tq, n2 ? dk : NULL, tk, psc, s, e, ea, P, ALPHA,
		                LROW, L, LOST);
	free(m);
	return 0;
}

int gpu_rows_attn_out(const gpu_tables *t, int v, int S, int C, int A, const float *PART,
                      const float *ALPHA, const float *LROW, const float *DV8, size_t tk, float psc,
                      size_t nq, size_t nk, size_t bk, int causal, size_t d, float *O, char *err,
                      size_t len)
{
	host_fmt h[3];
	size_t nkt = (nk + bk - 1) / bk, np = (v == 0 ? 1 : nkt) * nq * d,
	       n3 = DV8 ? (nk + tk - 1) / tk : 0;
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	float *m = malloc((np + nq * nkt + nq + n3 + 2 * nq * d + 1) * sizeof *m);
	if (!m) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *part = m, *al = part + np, *lrow = al + nq * nkt, *dv = lrow + nq, *oa = dv + n3,
	      *pv = oa + nq * d;
	memcpy(part, PART, np * sizeof *m);
	memcpy(al, ALPHA, nq * nkt * sizeof *m);
	memcpy(lrow, LROW, nq * sizeof *m);
	if (n3)
		memcpy(dv, DV8, n3 * sizeof *m);
	for (size_t i = 0; i < nq; i++)
		k_attn_out_row(v, &h[S], &h[C], &h[A], part, al, lrow, n3 ? dv : NULL, tk, psc, nq,
		               nk, bk, causal, d, i, oa, pv, O);
	free(m);
	return 0;
}

/* gpu/kern.cu's gpu_dev_attn_seq: its launches in order, row after row */
int gpu_rows_attn_seq(const gpu_tables *t, int v, int bwd, int S, int C, int A, const float *q,
                      const float *k, const float *vv, size_t nq, size_t nk, size_t d, size_t bk,
                      int causal, float sc, const float *dq8, size_t tq, const float *dk8,
                      size_t tk, const float *dv8, float psc, const float *dO, float *o,
                      float *lse, float *lost, float *dq, float *dk, float *dv, char *err,
                      size_t len)
{
	host_fmt h[3], e4 = {emu_format_by_name("e4m3"), NULL};
	size_t nqd = nq * d, nkd = nk * d, ns = nq * nk;
	size_t n1 = dq8 ? (nq + tq - 1) / tq : 0, n2 = dk8 ? (nk + tk - 1) / tk : 0,
	       n3 = dv8 ? (nk + tk - 1) / tk : 0;
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	/* q k v and their copies in A, dq8 dk8 dv8, sacc s e ea P PA, O and pv in
	 * A, then dO (into A), O in A, D, dS and dS in A, g */
	size_t nb = bwd ? 2 * nqd + nq + 2 * ns + (nq > nk ? nqd : nkd) : 0;
	float *m =
	    malloc((2 * (nqd + 2 * nkd) + n1 + n2 + n3 + 6 * ns + 2 * nqd + nb + 1) * sizeof *m);
	if (!m) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *Q = m, *K = Q + nqd, *V = K + nkd, *qa = V + nkd, *ka = qa + nqd, *va = ka + nkd,
	      *d1 = va + nkd, *d2 = d1 + n1, *d3 = d2 + n2, *sacc = d3 + n3, *s = sacc + ns,
	      *e = s + ns, *ea = e + ns, *P = ea + ns, *PA = P + ns, *oa = PA + ns, *pv = oa + nqd,
	      *doa = pv + nqd, *OA = doa + (bwd ? nqd : 0), *dd = OA + (bwd ? nqd : 0),
	      *DS = dd + (bwd ? nq : 0), *dsa = DS + (bwd ? ns : 0), *g = dsa + (bwd ? ns : 0);
	memcpy(Q, q, nqd * sizeof *m);
	memcpy(K, k, nkd * sizeof *m);
	memcpy(V, vv, nkd * sizeof *m);
	if (n1)
		memcpy(d1, dq8, n1 * sizeof *m);
	if (n2)
		memcpy(d2, dk8, n2 * sizeof *m);
	if (n3)
		memcpy(d3, dv8, n3 * sizeof *m);
	for (size_t r = 0; r < nq + 2 * nk; r++)
		k_attn_operand_row(v, &h[A], Q, K, V, nq, nk, d, r, qa, ka, va);
	for (size_t i = 0; i < nq; i++)
		k_attn_fwd_row(v, &h[S], &h[C], &h[A], &e4, qa, ka, va, nq, nk, d, bk, causal, i,
		               sc, n1 ? d1 : NULL, tq, n2 ? d2 : NULL, tk, n3 ? d3 : NULL, psc,
		               sacc, s, e, ea, P, PA, oa, pv, o, lse, lost);
	if (bwd) {
		memcpy(doa, dO, nqd * sizeof *m);
		for (size_t i = 0; i < nq; i++)
			k_attn_bwd_q_row(v, &h[S], &h[C], &h[A], qa, ka, va, lse, o, sc, nq, nk, d,
			                 causal, i, sacc, P, PA, doa, OA, dd, DS, dsa, g, dq);
		for (size_t j = 0; j < nk; j++)
			k_attn_bwd_k_row(&h[S], &h[C], &h[A], qa, PA, doa, dsa, sc, nq, nk, d,
			                 causal, j, g, dv, dk);
	}
	free(m);
	return 0;
}

/* gpu/kern.cu's gpu_dev_attn8_bwd_q and gpu_dev_attn8_bwd_rest, their
 * launches in order, row after row */
int gpu_rows_attn8_bwd_q(const gpu_tables *t, int C, int A, const float *q8, const float *k8,
                         const float *v8, const float *dq8, size_t tq, const float *dk8,
                         const float *dv8, size_t tk, const float *lse, const float *o,
                         const float *do8, float d_do, float sc, float psc, size_t nq, size_t nk,
                         size_t d, size_t bk, int causal, float *p8a, float *ds, char *err,
                         size_t len)
{
	host_fmt h[3], e4 = {emu_format_by_name("e4m3"), NULL};
	size_t nqd = nq * d, nkd = nk * d, ns = nq * nk, n1 = (nq + tq - 1) / tq,
	       n2 = (nk + tk - 1) / tk;
	if (host_fmts(t, C, C, A, h, err, len))
		return -1;
	/* q8 k8 v8 and their copies in A, dq8 dk8 dv8 dpf, L O dO8, then sacc P
	 * P8, dO8 and O in A, D */
	float *m =
	    malloc((2 * (nqd + 2 * nkd) + n1 + 3 * n2 + 2 * nq + 4 * nqd + 3 * ns + 1) * sizeof *m);
	if (!m) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *Q = m, *K = Q + nqd, *V = K + nkd, *qa = V + nkd, *ka = qa + nqd, *va = ka + nkd,
	      *s1 = va + nkd, *s2 = s1 + n1, *s3 = s2 + n2, *dpf = s3 + n2, *L = dpf + n2,
	      *O = L + nq, *DO = O + nqd, *sacc = DO + nqd, *P = sacc + ns, *P8 = P + ns,
	      *doa = P8 + ns, *oa = doa + nqd, *dd = oa + nqd;
	memcpy(Q, q8, nqd * sizeof *m);
	memcpy(K, k8, nkd * sizeof *m);
	memcpy(V, v8, nkd * sizeof *m);
	memcpy(s1, dq8, n1 * sizeof *m);
	memcpy(s2, dk8, n2 * sizeof *m);
	memcpy(s3, dv8, n2 * sizeof *m);
	memcpy(L, lse, nq * sizeof *m);
	memcpy(O, o, nqd * sizeof *m);
	memcpy(DO, do8, nqd * sizeof *m);
	for (size_t r = 0; r < nq + 2 * nk; r++)
		k_attn_operand_row(ATT_FP8, &h[A], Q, K, V, nq, nk, d, r, qa, ka, va);
	k_attn8_bwd_pre(&h[C], d_do, s3, n2, dpf);
	for (size_t i = 0; i < nq; i++)
		k_attn8_bwd_q_row(&h[C], &h[A], &e4, qa, ka, va, s1, tq, s2, tk, dpf, L, O, DO,
		                  d_do, sc, psc, nq, nk, d, bk, causal, i, sacc, P, P8, doa, oa, dd,
		                  p8a, ds);
	free(m);
	return 0;
}

int gpu_rows_attn8_bwd_rest(const gpu_tables *t, int S, int C, int A, int DF, const float *q8,
                            const float *k8, const float *dq8, size_t tq, const float *dk8,
                            size_t tk, const float *do8, float d_do, float psc, float sds,
                            const float *p8a, const float *ds, size_t nq, size_t nk, size_t d,
                            int causal, float *dq, float *dk, float *dv, float *lost, char *err,
                            size_t len)
{
	host_fmt h[3], df = {emu_format_by_name(DF == GPU_K_E5M2 ? "e5m2" : "e4m3"), NULL};
	size_t nqd = nq * d, nkd = nk * d, ns = nq * nk, n1 = (nq + tq - 1) / tq,
	       n2 = (nk + tk - 1) / tk, ng = nqd > nkd ? nqd : nkd;
	if (host_fmts(t, S, C, A, h, err, len))
		return -1;
	if (DF != GPU_K_E4M3 && DF != GPU_K_E5M2) {
		snprintf(err, len, "attn8: dS format %d is not e4m3 or e5m2", DF);
		return -1;
	}
	/* q8 k8 and their copies in A, dq8 dk8 and the factors, dO8 and in A,
	 * P8A DS DS8 DSA, g and part */
	float *m =
	    malloc((2 * (nqd + nkd) + 2 * (n1 + n2) + 2 * nqd + 4 * ns + 2 * ng + 1) * sizeof *m);
	if (!m) {
		snprintf(err, len, "host rows: out of memory");
		return -1;
	}
	float *Q = m, *K = Q + nqd, *qa = K + nkd, *ka = qa + nqd, *s1 = ka + nkd, *s2 = s1 + n1,
	      *dqf = s2 + n2, *dkf = dqf + n2, *DO = dkf + n1, *doa = DO + nqd, *pa = doa + nqd,
	      *DS = pa + ns, *ds8 = DS + ns, *dsa = ds8 + ns, *g = dsa + ns, *part = g + ng;
	memcpy(Q, q8, nqd * sizeof *m);
	memcpy(K, k8, nkd * sizeof *m);
	memcpy(s1, dq8, n1 * sizeof *m);
	memcpy(s2, dk8, n2 * sizeof *m);
	memcpy(DO, do8, nqd * sizeof *m);
	memcpy(pa, p8a, ns * sizeof *m);
	memcpy(DS, ds, ns * sizeof *m);
	for (size_t r = 0; r < nq + nk; r++)
		k_attn_operand_row(ATT_FP8, &h[A], Q, K, NULL, nq, nk, d, r, qa, ka, NULL);
	k_attn8_bwd_mid(&h[C], &h[A], sds, s1, n1, s2, n2, dqf, dkf);
	for (size_t i = 0; i < nq; i++)
		k_attn8_bwd_dq_row(&h[S], &h[C], &h[A], &df, ka, dqf, tk, DO, sds, nq, nk, d,
		                   causal, i, DS, ds8, dsa, doa, g, part, dq, lost);
	for (size_t j = 0; j < nk; j++)
		k_attn8_bwd_k_row(&h[S], &h[C], &h[A], qa, dkf, tq, d_do, psc, pa, dsa, doa, nq, nk,
		                  d, causal, j, g, part, dv, dk);
	free(m);
	return 0;
}
