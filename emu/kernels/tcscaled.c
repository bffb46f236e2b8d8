/*
 * tcscaled.c — Blackwell's block-scaled MMA kinds, and the scaled GEMM
 * driver (emu/kernels/tcscaled.h; docs/gemm.md).
 *
 * The kinds are the Tensor Core model's (emu/kernels/tc.h) with block
 * scales: kind::mxf8f6f4 is preset "b200-mxf8f6f4" (32 products, 25
 * fraction bits, RZ, both ue8m0 scale exponents added to each product's),
 * kind::mxf4nvf4 is "b200-mxf4nvf4" (64 products summed exactly in groups
 * of 16, each group aligned at its scales' exponents, 35 fraction bits).
 * Both read a zero as 0·2^-126 in the alignment and give +0 and the
 * all-ones NaN (MMA-Sim's rules). The functions here are the instruction
 * shapes over that one model; emu_tcs_mp_* are the same over its MPFR
 * implementation.
 */
#include <gmp.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kern.h"
#include "emu/kernels/tc.h"
#include "emu/kernels/tcscaled.h"

static const emu_format *tcs_fp32(void)
{
	static const emu_format *f;
	if (!f)
		f = emu_format_by_name("fp32");
	return f;
}

static bool tcs_same(const emu_format *f, const char *name)
{
	const emu_format *g = emu_format_by_name(name);
	return g && emu_format_same(f, g);
}

static bool tcs_elem_ok(const emu_format *f)
{
	return tcs_same(f, "e4m3") || tcs_same(f, "e5m2") || tcs_same(f, "e3m2") ||
	       tcs_same(f, "e2m3") || tcs_same(f, "e2m1");
}

static emu_result tcs_nan(unsigned flags)
{
	return (emu_result){EMU_TCS_NAN, flags};
}

/* The model's integer implementation, or its MPFR one (mp). */
static emu_result tcs_dot(bool mp, const emu_tc_model *m, const emu_format *fa,
                          const emu_format *fb, const emu_bits *a, const emu_bits *b, size_t K,
                          emu_bits c, const emu_tc_scales *s)
{
	if (mp)
		return emu_tc_mp_dot_scaled(m, fa, fb, tcs_fp32(), a, b, K, c, s);
	return emu_tc_dot_scaled(m, fa, fb, tcs_fp32(), a, b, K, c, s);
}

static emu_result tcs_f8(bool mp, const emu_format *fa, const emu_format *fb, const emu_bits *a,
                         const emu_bits *b, emu_bits sa, emu_bits sb, emu_bits c)
{
	emu_tc_model m;
	if (!tcs_elem_ok(fa) || !tcs_elem_ok(fb) ||
	    emu_tc_preset("b200-mxf8f6f4", fa, tcs_fp32(), &m) != EMU_OK)
		return tcs_nan(EMU_FLAG_INVALID);
	emu_bits xa = sa & 0xffu, xb = sb & 0xffu;
	emu_tc_scales s = {emu_format_by_name("e8m0"), EMU_TCS_K_F8F6F4, &xa, &xb};
	return tcs_dot(mp, &m, fa, fb, a, b, EMU_TCS_K_F8F6F4, c, &s);
}

static emu_result tcs_f4(bool mp, const emu_format *sf, int block, const emu_bits *a,
                         const emu_bits *b, const emu_bits *sa, const emu_bits *sb, emu_bits c)
{
	const emu_format *e21 = emu_format_by_name("e2m1");
	bool ue4m3 = tcs_same(sf, "e4m3");
	emu_tc_model m;
	if (!(ue4m3 || tcs_same(sf, "e8m0")) || (block != 16 && (ue4m3 || block != 32)) ||
	    emu_tc_preset("b200-mxf4nvf4", e21, tcs_fp32(), &m) != EMU_OK)
		return tcs_nan(EMU_FLAG_INVALID);
	emu_tc_scales s = {sf, (size_t)block, sa, sb};
	return tcs_dot(mp, &m, e21, e21, a, b, EMU_TCS_K_F4, c, &s);
}

emu_result emu_tcs_mxf8f6f4(const emu_format *fa, const emu_format *fb, const emu_bits *a,
                            const emu_bits *b, emu_bits sa, emu_bits sb, emu_bits c)
{
	return tcs_f8(false, fa, fb, a, b, sa, sb, c);
}

emu_result emu_tcs_mp_mxf8f6f4(const emu_format *fa, const emu_format *fb, const emu_bits *a,
                               const emu_bits *b, emu_bits sa, emu_bits sb, emu_bits c)
{
	return tcs_f8(true, fa, fb, a, b, sa, sb, c);
}

emu_result emu_tcs_mxf4nvf4(const emu_format *sf, int block, const emu_bits *a, const emu_bits *b,
                            const emu_bits *sa, const emu_bits *sb, emu_bits c)
{
	return tcs_f4(false, sf, block, a, b, sa, sb, c);
}

emu_result emu_tcs_mp_mxf4nvf4(const emu_format *sf, int block, const emu_bits *a,
                               const emu_bits *b, const emu_bits *sa, const emu_bits *sb,
                               emu_bits c)
{
	return tcs_f4(true, sf, block, a, b, sa, sb, c);
}

/* ---- the GEMM ---- */

static const char *const gemm_model_names[EMU_GEMM_NMODELS] = {"blackwell", "hopper"};

const char *emu_gemm_model_name(emu_gemm_model m)
{
	return m < EMU_GEMM_NMODELS ? gemm_model_names[m] : "?";
}

emu_gemm_model emu_gemm_model_by_name(const char *s)
{
	for (int i = 0; i < EMU_GEMM_NMODELS; i++)
		if (s && !strcmp(s, gemm_model_names[i]))
			return (emu_gemm_model)i;
	return EMU_GEMM_NMODELS;
}

int emu_gemm_quantize(const emu_recipe *r, const emu_recipe *rb, const double *A, const double *B,
                      size_t M, size_t N, size_t K, uint64_t seed, emu_qtensor *qa, emu_qtensor *qb)
{
	emu_recipe fwd = *r, fwdb = rb ? *rb : *r;
	fwd.rht = fwd.rht_all = fwdb.rht = fwdb.rht_all = false;
	memset(qa, 0, sizeof *qa);
	memset(qb, 0, sizeof *qb);
	if (emu_quantize(&fwd, EMU_ROLE_ACT, false, A, M, K, seed, qa))
		return -1;
	emu_qpart part = {0, K, seed, NAN, (uint64_t)M * K};
	if (emu_quantize_part(&fwdb, EMU_ROLE_WEIGHT, true, B, K, N, &part, qb)) {
		emu_qtensor_free(qa);
		return -1;
	}
	return 0;
}

/* The block of element (i, j) of q. */
/* the products worth running a GEMM's rows on several threads */
#define GEMM_PAR (1u << 18)

static size_t gemm_block(const emu_qtensor *q, size_t i, size_t j)
{
	size_t br = q->brows ? q->brows : 1, bc = q->bcols ? q->bcols : 1;
	return (i / br) * q->nbc + j / bc;
}

/* Does every run of `chunk` along K (from 0) lie inside one block? */
static bool gemm_lines_up(size_t extent, size_t chunk, size_t K)
{
	return extent >= K || extent % chunk == 0;
}

static emu_status gemm_fail(char *err, size_t errlen, const char *msg, const emu_recipe *r)
{
	if (err && errlen)
		snprintf(err, errlen, "recipe %s: %s", r->name, msg);
	return EMU_ERR_BAD_SPEC;
}

/* One instruction of the Blackwell GEMM from the encodings: products k0 ..
 * k0 + chunk of element (i, j), a K tail padded with zeros (and zero
 * scales for NVFP4's groups wholly past K). */
static emu_bits gemm_chunk(const emu_qtensor *qa, const emu_qtensor *qb, const emu_recipe *r,
                           const emu_tc_model *tm, bool mx, size_t i, size_t j, size_t k0,
                           emu_bits acc)
{
	size_t K = qa->cols, N = qb->cols, chunk = mx ? EMU_TCS_K_F8F6F4 : EMU_TCS_K_F4;
	emu_bits a[EMU_TCS_K_F4] = {0}, b[EMU_TCS_K_F4] = {0};
	emu_bits sa[4] = {0}, sb[4] = {0};
	for (size_t k = k0; k < k0 + chunk && k < K; k++) {
		a[k - k0] = qa->code[i * K + k];
		b[k - k0] = qb->code[k * N + j];
	}
	if (mx) {
		sa[0] = qa->dcode[gemm_block(qa, i, k0)] & 0xffu;
		sb[0] = qb->dcode[gemm_block(qb, k0, j)] & 0xffu;
	} else {
		for (size_t g = 0; g < 4 && k0 + 16 * g < K; g++) {
			sa[g] = qa->dcode[gemm_block(qa, i, k0 + 16 * g)];
			sb[g] = qb->dcode[gemm_block(qb, k0 + 16 * g, j)];
		}
	}
	emu_tc_scales sc = {&r->scale_fmt, mx ? chunk : 16, sa, sb};
	return emu_tc_dot_scaled(tm, &qa->elem, &qb->elem, tcs_fp32(), a, b, chunk, acc, &sc).bits;
}

/* The operands split once for every instruction that reads them (A by
 * rows, B by columns, both along K) and the scales once per block: NULL
 * out of memory or when the plan cannot read them. */
typedef struct {
	emu_tc_plan plan;
	emu_tc_scales sc; /* the plan's: format and block */
	emu_bits dummy;
	emu_tc_opnd *xa, *xb, *xsa, *xsb, zero_scale;
} gemm_split;

static bool gemm_split_init(gemm_split *g, const emu_qtensor *qa, const emu_qtensor *qb,
                            const emu_recipe *r, const emu_tc_model *tm, bool mx)
{
	size_t M = qa->rows, K = qa->cols, N = qb->cols;
	size_t nsa = qa->nbr * qa->nbc, nsb = qb->nbr * qb->nbc;
	*g = (gemm_split){0};
	g->sc = (emu_tc_scales){&r->scale_fmt, mx ? EMU_TCS_K_F8F6F4 : 16, &g->dummy, &g->dummy};
	if (!emu_tc_plan_init2(&g->plan, tm, &qa->elem, &qb->elem, tcs_fp32(), &g->sc) ||
	    !g->plan.direct)
		return false;
	g->xa = malloc((M * K + 1) * sizeof *g->xa);
	g->xb = malloc((K * N + 1) * sizeof *g->xb);
	emu_tc_opnd *t = malloc((K * N + 1) * sizeof *t);
	emu_bits *codes = malloc(((nsa > nsb ? nsa : nsb) + 1) * sizeof *codes);
	g->xsa = malloc((nsa + 1) * sizeof *g->xsa);
	g->xsb = malloc((nsb + 1) * sizeof *g->xsb);
	bool ok = g->xa && g->xb && t && codes && g->xsa && g->xsb;
	if (ok) {
		emu_tc_split(&qa->elem, qa->code, M * K, g->xa);
		emu_tc_split(&qb->elem, qb->code, K * N, t);
		for (size_t k = 0; k < K; k++)
			for (size_t j = 0; j < N; j++)
				g->xb[j * K + k] = t[k * N + j];
		/* kind::mxf8f6f4 reads a scale's low 8 bits */
		for (size_t b = 0; b < nsa; b++)
			codes[b] = mx ? qa->dcode[b] & 0xffu : qa->dcode[b];
		emu_tc_split_scales(&r->scale_fmt, codes, nsa, g->xsa);
		for (size_t b = 0; b < nsb; b++)
			codes[b] = mx ? qb->dcode[b] & 0xffu : qb->dcode[b];
		emu_tc_split_scales(&r->scale_fmt, codes, nsb, g->xsb);
		codes[0] = 0;
		emu_tc_split_scales(&r->scale_fmt, codes, 1, &g->zero_scale);
	}
	free(t);
	free(codes);
	if (!ok) {
		free(g->xa);
		free(g->xb);
		free(g->xsa);
		free(g->xsb);
	}
	return ok;
}

static void gemm_split_free(gemm_split *g)
{
	free(g->xa);
	free(g->xb);
	free(g->xsa);
	free(g->xsb);
}

/* D = alpha · A·B on tcgen05's block-scaled kinds, each output element a
 * chain of instructions from +0: through the split operands where the plan
 * decides the instruction, from the encodings where it does not. */
static void gemm_blackwell(const emu_qtensor *qa, const emu_qtensor *qb, const emu_recipe *r,
                           const emu_tc_model *tm, bool mx, double alpha, double *D)
{
	const emu_format *f32 = tcs_fp32();
	size_t M = qa->rows, K = qa->cols, N = qb->cols;
	size_t chunk = mx ? EMU_TCS_K_F8F6F4 : EMU_TCS_K_F4, ng = mx ? 1 : 4;
	gemm_split g;
	bool split = gemm_split_init(&g, qa, qb, r, tm, mx);
	/* every output element on its own: the rows on every thread */
#pragma omp parallel for schedule(static) num_threads(emu_threads()) if (M * N * K >= GEMM_PAR)
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++) {
			unsigned fl = 0;
			emu_bits acc = 0; /* +0 */
			for (size_t k0 = 0; k0 < K; k0 += chunk) {
				emu_result rr;
				if (split) {
					const emu_tc_opnd *pa = g.xa + i * K + k0,
					                  *pb = g.xb + j * K + k0;
					emu_tc_opnd ta[EMU_TCS_K_F4], tb[EMU_TCS_K_F4], ssa[4],
					    ssb[4];
					if (K - k0 < chunk) { /* the tail padded with zeros */
						memset(ta, 0, sizeof ta);
						memset(tb, 0, sizeof tb);
						for (size_t k = 0; k < K - k0; k++)
							ta[k] = pa[k], tb[k] = pb[k];
						for (size_t k = K - k0; k < chunk; k++)
							ta[k].e = tb[k].e = EMU_TC_ZERO_E;
						pa = ta, pb = tb;
					}
					for (size_t q = 0; q < ng; q++) {
						size_t kq = k0 + 16 * q;
						ssa[q] = kq < K ? g.xsa[gemm_block(qa, i, kq)]
						                : g.zero_scale;
						ssb[q] = kq < K ? g.xsb[gemm_block(qb, kq, j)]
						                : g.zero_scale;
					}
					if (emu_tc_plan_scaled(&g.plan, pa, pb, ssa, ssb, chunk,
					                       acc, &rr)) {
						acc = rr.bits;
						continue;
					}
				}
				acc = gemm_chunk(qa, qb, r, tm, mx, i, j, k0, acc);
			}
			D[i * N + j] =
			    emu_v_mul(f32, alpha, emu_decode(f32, acc), &EMU_ENV_DEFAULT, &fl);
		}
	if (split)
		gemm_split_free(&g);
}

/* Hopper's FP8 GEMM: every 128 products along K a wgmma chain of blocks
 * from +0 (emu_tc_dot2), scaled by its two blocks' decode scales and added
 * into the fp32 accumulator on the CUDA cores (an FMA with hopper_fma, else
 * a multiplication and an addition). The blocks read A's rows and B's
 * columns split once (emu_tc_plan_value); without memory, or for a model
 * that promotes on its own, each chunk runs emu_tc_dot2 on the codes. */
static void gemm_hopper(const emu_qtensor *qa, const emu_qtensor *qb, const emu_tc_model *tm,
                        bool hopper_fma, double *D)
{
	const emu_format *f32 = tcs_fp32();
	size_t M = qa->rows, K = qa->cols, N = qb->cols, k = (size_t)tm->k;
	const size_t chunk = 128;
	emu_tc_plan plan;
	emu_tc_opnd *xa = malloc((M * K + 1) * sizeof *xa), *xb = malloc((K * N + 1) * sizeof *xb);
	emu_bits *bt = malloc((K * N + 1) * sizeof *bt); /* B's codes by columns */
	bool split = xa && xb && bt && tm->promote_every == 0 &&
	             emu_tc_plan_init2(&plan, tm, &qa->elem, &qb->elem, f32, NULL);
	if (split) {
		for (size_t kk = 0; kk < K; kk++)
			for (size_t j = 0; j < N; j++)
				bt[j * K + kk] = qb->code[kk * N + j];
		emu_tc_split(&qa->elem, qa->code, M * K, xa);
		emu_tc_split(&qb->elem, bt, K * N, xb);
	}
#pragma omp parallel for schedule(static) num_threads(emu_threads()) if (M * N * K >= GEMM_PAR)
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++) {
			double acc = 0;
			unsigned fl = 0;
			for (size_t k0 = 0; k0 < K; k0 += chunk) {
				size_t n = K - k0 < chunk ? K - k0 : chunk;
				double part = 0; /* the chain's C: +0 */
				if (split) {
					const emu_bits *pa = qa->code + i * K + k0,
					               *pb = bt + j * K + k0;
					const emu_tc_opnd *sa = xa + i * K + k0,
					                  *sb = xb + j * K + k0;
					unsigned pf = 0;
					for (size_t b = 0; b < n; b += k) {
						size_t nb = n - b < k ? n - b : k;
						part =
						    emu_tc_plan_value(&plan, pa + b, pb + b, sa + b,
						                      sb + b, nb, part, &pf);
					}
				} else {
					emu_bits a[128], b[128];
					for (size_t kk = 0; kk < n; kk++) {
						a[kk] = qa->code[i * K + k0 + kk];
						b[kk] = qb->code[(k0 + kk) * N + j];
					}
					emu_result rr =
					    emu_tc_dot2(tm, &qa->elem, &qb->elem, f32, a, b, n, 0);
					part = emu_decode(f32, rr.bits);
				}
				double s =
				    emu_v_mul(f32, qa->d[gemm_block(qa, i, k0)],
				              qb->d[gemm_block(qb, k0, j)], &EMU_ENV_DEFAULT, &fl);
				if (hopper_fma)
					acc = emu_v_fma(f32, part, s, acc, &EMU_ENV_DEFAULT, &fl);
				else
					acc = emu_v_add(
					    f32, acc,
					    emu_v_mul(f32, part, s, &EMU_ENV_DEFAULT, &fl),
					    &EMU_ENV_DEFAULT, &fl);
			}
			D[i * N + j] = acc;
		}
	free(xa);
	free(xb);
	free(bt);
}

emu_status emu_scaled_gemm(const emu_qtensor *qa, const emu_qtensor *qb, const emu_recipe *r,
                           const emu_gemm_opts *o, double *D, char *err, size_t errlen)
{
	const emu_format *f32 = tcs_fp32();
	size_t K = qa->cols;
	if (qb->rows != K || qa->colwise || !qb->colwise) {
		if (err && errlen)
			snprintf(err, errlen, "A must be M×K row-wise and B K×N column-wise");
		return EMU_ERR_BAD_SPEC;
	}
	size_t ka = qa->bcols, kb = qb->brows; /* block extents along K */
	if (o->model == EMU_GEMM_BLACKWELL) {
		bool mx = tcs_same(&r->scale_fmt, "e8m0") && tcs_elem_ok(&qa->elem) &&
		          tcs_elem_ok(&qb->elem);
		bool nv = tcs_same(&r->scale_fmt, "e4m3") && tcs_same(&qa->elem, "e2m1") &&
		          tcs_same(&qb->elem, "e2m1");
		if (!mx && !nv)
			return gemm_fail(
			    err, errlen,
			    "blackwell takes MX recipes (e8m0 scales; e4m3, e5m2, e3m2, e2m3 "
			    "or e2m1 elements) or NVFP4 (e4m3 scales, e2m1 elements)",
			    r);
		size_t gran = mx ? 32 : 16;
		if (!gemm_lines_up(ka, gran, K) || !gemm_lines_up(kb, gran, K))
			return gemm_fail(
			    err, errlen,
			    mx ? "kind::mxf8f6f4 takes one scale per 32 along K: blocks "
			         "along K must be a multiple of 32"
			       : "kind::mxf4nvf4 takes one scale per 16 along K: blocks "
			         "along K must be a multiple of 16",
			    r);
		unsigned afl = 0;
		double alpha = emu_v_mul(f32, qa->t, qb->t, &EMU_ENV_DEFAULT, &afl);
		emu_tc_model tm;
		if (emu_tc_preset(mx ? "b200-mxf8f6f4" : "b200-mxf4nvf4", &qa->elem, f32, &tm) !=
		    EMU_OK)
			return gemm_fail(err, errlen, "no block-scaled model for these elements",
			                 r);
		gemm_blackwell(qa, qb, r, &tm, mx, alpha, D);
		return EMU_OK;
	}
	if (o->model != EMU_GEMM_HOPPER)
		return gemm_fail(err, errlen, "unknown model", r);
	emu_tc_model tm;
	/* e4m3 × e5m2 too (Transformer Engine's HYBRID dgrad and wgrad): the
	 * preset's model with each operand read in its own format */
	if (!(tcs_same(&qa->elem, "e4m3") || tcs_same(&qa->elem, "e5m2")) ||
	    !(tcs_same(&qb->elem, "e4m3") || tcs_same(&qb->elem, "e5m2")) ||
	    emu_tc_preset("h100", &qa->elem, f32, &tm) != EMU_OK)
		return gemm_fail(err, errlen, "hopper's FP8 wgmma takes e4m3 or e5m2 elements", r);
	const size_t chunk = 128;
	if (!gemm_lines_up(ka, chunk, K) || !gemm_lines_up(kb, chunk, K))
		return gemm_fail(err, errlen,
		                 "hopper promotes every 128 along K: blocks along K must be a "
		                 "multiple of 128",
		                 r);
	gemm_hopper(qa, qb, &tm, o->hopper_fma, D);
	return EMU_OK;
}

/* Each R[i][j] is mpfr_sum of the K exact products (106-bit mpfr_mul of two
 * doubles is exact), correctly rounded to double: errors of D far below
 * 2^-53 relative are not resolved, which no fp32 result needs. */
/* rows i0 .. i1 − 1 of the exact product X·Y, each element correctly
 * rounded to double, into R; false out of memory */
static bool exact_rows(const double *X, const double *Y, size_t N, size_t K, size_t i0, size_t i1,
                       double *R)
{
	mpfr_t *p = malloc((K ? K : 1) * sizeof *p);
	mpfr_ptr *pp = malloc((K ? K : 1) * sizeof(mpfr_ptr));
	if (!p || !pp) {
		free(p);
		free(pp);
		return false;
	}
	for (size_t k = 0; k < K; k++) {
		mpfr_init2(p[k], 2 * 53);
		pp[k] = p[k];
	}
	mpfr_t ref;
	mpfr_init2(ref, 53);
	for (size_t i = i0; i < i1; i++)
		for (size_t j = 0; j < N; j++) {
			for (size_t k = 0; k < K; k++) {
				mpfr_set_d(p[k], X[i * K + k], MPFR_RNDN);
				mpfr_mul_d(p[k], p[k], Y[k * N + j], MPFR_RNDN);
			}
			mpfr_sum(ref, pp, K, MPFR_RNDN);
			R[i * N + j] = mpfr_get_d(ref, MPFR_RNDN);
		}
	for (size_t k = 0; k < K; k++)
		mpfr_clear(p[k]);
	mpfr_clear(ref);
	free(p);
	free(pp);
	return true;
}

int emu_gemm_compare(const double *D, const double *X, const double *Y, size_t M, size_t N,
                     size_t K, emu_gemm_err *out)
{
	memset(out, 0, sizeof *out);
	double *Rx = malloc((M * N + 1) * sizeof *Rx);
	if (!Rx)
		return -1;
	/* the exact products, rows on every thread; then the statistics in
	 * element order, so their sums do not depend on the threads */
	int T = M * N * K >= GEMM_PAR ? emu_threads() : 1;
	if (T > (int)M)
		T = M ? (int)M : 1;
	bool ok = true;
#pragma omp parallel for schedule(static, 1) num_threads(T) reduction(&& : ok)
	for (int t = 0; t < T; t++)
		ok = exact_rows(X, Y, N, K, M * (size_t)t / (size_t)T,
		                M * (size_t)(t + 1) / (size_t)T, Rx);
	if (!ok) {
		free(Rx);
		return -1;
	}
	double sig = 0, noise = 0;
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++) {
			double R = Rx[i * N + j], d = D[i * N + j];
			if (!isfinite(d)) {
				out->nonfinite++;
				if (isnan(d))
					out->n_nan++;
				else
					out->n_inf++;
				continue;
			}
			double e = d - R; /* fp64: ample for a statistic of an fp32 result */
			sig += R * R;
			noise += e * e;
			if (R != 0 && fabs(e) / fabs(R) > out->max_rel)
				out->max_rel = fabs(e) / fabs(R);
		}
	out->sqnr_db = noise == 0 ? INFINITY : 10 * log10(sig / noise);
	free(Rx);
	return 0;
}
