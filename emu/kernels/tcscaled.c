/*
 * tcscaled.c — Blackwell's block-scaled MMA kinds in integer arithmetic,
 * and the scaled GEMM driver (emu/kernels/tcscaled.h; docs/gemm.md).
 *
 * Why integers are exact here: a kind::mxf8f6f4 term is a product of two
 * significands of at most 4 bits (< 2^8 with 6 fraction bits) or C's 24
 * bits; aligned to 25 fraction bits below the largest exponent each is an
 * integer below 2^27 in units of 2^(emax−25), and 33 of them sum below
 * 2^33. A kind::mxf4nvf4 group sum is at most 16·6·6 = 576 (in quarters:
 * 2304 < 2^12), times two 4-bit scale significands < 2^20; aligned to 35
 * fraction bits each term is below 2^56 and five of them below 2^59. So
 * every term and sum fits an int64_t; the single rounding to binary32 is
 * done on the integer by shifting.
 *
 * Layout as SoftFloat's: decode, NaN and infinity exits, the terms, the
 * alignment, the one rounding.
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

/* MMA-Sim reads a zero as 0·2^-126 in every format (extract_significand_exponent). */
#define TCS_ZERO_EXP (-126)
#define TCS_F8_FRAC 25
#define TCS_F4_FRAC 35

enum { TCS_FIN = 0, TCS_INF, TCS_NAN };

/* A decoded operand: value (−1)^neg · M · 2^(L − frac), L its alignment
 * exponent (subnormals at the format's emin, zero at -126). */
typedef struct {
	int cls;
	bool neg;
	uint32_t M;
	int frac;
	int L;
} tcs_val;

static tcs_val tcs_decode(const emu_format *f, emu_bits b, bool drop_sign)
{
	tcs_val v = {TCS_FIN, false, 0, f->p - 1, TCS_ZERO_EXP};
	int m = f->p - 1;
	emu_bits mag = b & ~f->sign_mask;
	if (emu_is_nan(f, b)) {
		v.cls = TCS_NAN;
		return v;
	}
	v.neg = !drop_sign && f->has_sign && (b & f->sign_mask);
	if (f->has_inf && mag == f->inf_bits) {
		v.cls = TCS_INF;
		return v;
	}
	unsigned ef = (mag & f->exp_mask) >> m;
	uint32_t man = mag & f->man_mask;
	if (ef == 0 && f->has_zero) {
		v.M = man;
		v.L = man ? f->emin : TCS_ZERO_EXP;
	} else {
		v.M = ((uint32_t)1 << m) | man;
		v.L = (int)ef - f->bias;
	}
	return v;
}

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

/* Term x (M·2^(L−frac), M < 2^31) in units of 2^unit, truncated toward zero. */
static uint64_t tcs_align(uint32_t M, int L, int frac, int unit, bool *lost)
{
	int sh = L - frac - unit;
	if (M == 0)
		return 0;
	if (sh >= 0)
		return (uint64_t)M << sh; /* sh <= 35 by the bounds above */
	if (sh <= -32) {
		*lost = true;
		return 0;
	}
	uint64_t t = (uint64_t)M >> -sh;
	if ((t << -sh) != M)
		*lost = true;
	return t;
}

/* (−1)^neg · N · 2^e rounded toward zero to binary32 with subnormals; 2^128 or
 * more gives inf (MMA-Sim converts its truncated double with torch.tensor).
 * An exact zero is +0 whatever the signs (MMA-Sim's Python sum). */
static emu_result tcs_round_fp32(bool neg, uint64_t N, int e, bool lost)
{
	emu_result r = {0, lost ? EMU_FLAG_INEXACT : 0u};
	if (N == 0)
		return r;
	int msb = 63 - __builtin_clzll(N);
	int E = e + msb;
	emu_bits sign = neg ? 0x80000000u : 0;
	if (E >= 128) {
		r.bits = sign | 0x7f800000u;
		r.flags |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
		return r;
	}
	int q = E < -126 ? -149 : E - 23; /* the result's last place */
	int sh = q - e;
	bool rlost = false;
	if (sh > 0) {
		uint64_t t = sh >= 64 ? 0 : N >> sh;
		rlost = sh >= 64 || (t << sh) != N;
		N = t;
	} else {
		N <<= -sh;
	}
	if (rlost) {
		r.flags |= EMU_FLAG_INEXACT;
		if (E < -126)
			r.flags |= EMU_FLAG_UNDERFLOW;
	}
	if (E < -126)
		r.bits = sign | (emu_bits)N;
	else
		r.bits = sign | ((emu_bits)(E + 127) << 23) | ((emu_bits)N & 0x7fffffu);
	return r;
}

static emu_result tcs_nan(unsigned flags)
{
	return (emu_result){EMU_TCS_NAN, flags};
}

emu_result emu_tcs_mxf8f6f4(const emu_format *fa, const emu_format *fb, const emu_bits *a,
                            const emu_bits *b, emu_bits sa, emu_bits sb, emu_bits c)
{
	const emu_format *e8 = emu_format_by_name("e8m0");
	if (!tcs_elem_ok(fa) || !tcs_elem_ok(fb))
		return tcs_nan(EMU_FLAG_INVALID);
	tcs_val va[EMU_TCS_K_F8F6F4], vb[EMU_TCS_K_F8F6F4];
	tcs_val vc = tcs_decode(tcs_fp32(), c, false);
	tcs_val vsa = tcs_decode(e8, sa & 0xffu, true), vsb = tcs_decode(e8, sb & 0xffu, true);
	bool any_nan = vc.cls == TCS_NAN || vsa.cls == TCS_NAN || vsb.cls == TCS_NAN;
	bool pinf = vc.cls == TCS_INF && !vc.neg, ninf = vc.cls == TCS_INF && vc.neg;
	bool inf_zero = false;
	for (int i = 0; i < EMU_TCS_K_F8F6F4; i++) {
		va[i] = tcs_decode(fa, a[i], false);
		vb[i] = tcs_decode(fb, b[i], false);
		if (va[i].cls == TCS_NAN || vb[i].cls == TCS_NAN) {
			any_nan = true;
		} else if (va[i].cls == TCS_INF || vb[i].cls == TCS_INF) {
			bool zero = (va[i].cls == TCS_FIN && va[i].M == 0) ||
			            (vb[i].cls == TCS_FIN && vb[i].M == 0);
			if (zero)
				inf_zero = true;
			else if (va[i].neg != vb[i].neg)
				ninf = true;
			else
				pinf = true;
		}
	}
	/* MMA-Sim's check: the fp64 sum of the scaled products and C is NaN or inf */
	if (any_nan)
		return tcs_nan(0);
	if (inf_zero || (pinf && ninf))
		return tcs_nan(EMU_FLAG_INVALID);
	if (pinf || ninf)
		return (emu_result){ninf ? 0xff800000u : 0x7f800000u, 0};

	int scale_e = vsa.L + vsb.L;
	int emax = vc.L;
	for (int i = 0; i < EMU_TCS_K_F8F6F4; i++) {
		int L = va[i].L + vb[i].L + scale_e;
		if (L > emax)
			emax = L;
	}
	int unit = emax - TCS_F8_FRAC;
	bool lost = false;
	int64_t sum = 0;
	uint64_t t = tcs_align(vc.M, vc.L, vc.frac, unit, &lost);
	sum += vc.neg ? -(int64_t)t : (int64_t)t;
	for (int i = 0; i < EMU_TCS_K_F8F6F4; i++) {
		t = tcs_align(va[i].M * vb[i].M, va[i].L + vb[i].L + scale_e,
		              va[i].frac + vb[i].frac, unit, &lost);
		sum += va[i].neg != vb[i].neg ? -(int64_t)t : (int64_t)t;
	}
	return tcs_round_fp32(sum < 0, sum < 0 ? (uint64_t)-sum : (uint64_t)sum, unit, lost);
}

emu_result emu_tcs_mxf4nvf4(const emu_format *sf, int block, const emu_bits *a, const emu_bits *b,
                            const emu_bits *sa, const emu_bits *sb, emu_bits c)
{
	const emu_format *e21 = emu_format_by_name("e2m1");
	bool ue4m3 = tcs_same(sf, "e4m3");
	if (!(ue4m3 || tcs_same(sf, "e8m0")) || (block != 16 && (ue4m3 || block != 32)))
		return tcs_nan(EMU_FLAG_INVALID);
	int nscale = EMU_TCS_K_F4 / block;
	tcs_val vsa[4], vsb[4];
	tcs_val vc = tcs_decode(tcs_fp32(), c, false);
	bool any_nan = vc.cls == TCS_NAN;
	for (int j = 0; j < nscale; j++) {
		vsa[j] = tcs_decode(sf, sa[j], true);
		vsb[j] = tcs_decode(sf, sb[j], true);
		any_nan |= vsa[j].cls == TCS_NAN || vsb[j].cls == TCS_NAN;
	}
	if (any_nan)
		return tcs_nan(0);
	if (vc.cls == TCS_INF)
		return (emu_result){c, 0};

	/* group sums in quarters: an e2m1 value is M·2^(L−1), twice it M << L */
	int64_t g[EMU_TCS_K_F4 / EMU_TCS_GROUP];
	int gL[EMU_TCS_K_F4 / EMU_TCS_GROUP];
	uint32_t gS[EMU_TCS_K_F4 / EMU_TCS_GROUP];
	int emax = vc.L;
	for (int k = 0; k < EMU_TCS_K_F4 / EMU_TCS_GROUP; k++) {
		int64_t s = 0;
		for (int i = k * EMU_TCS_GROUP; i < (k + 1) * EMU_TCS_GROUP; i++) {
			tcs_val x = tcs_decode(e21, a[i], false), y = tcs_decode(e21, b[i], false);
			int64_t p =
			    (int64_t)(x.M ? x.M << x.L : 0) * (int64_t)(y.M ? y.M << y.L : 0);
			s += x.neg != y.neg ? -p : p;
		}
		int j = k * EMU_TCS_GROUP / block;
		g[k] = s;
		gS[k] = vsa[j].M * vsb[j].M;
		gL[k] = vsa[j].L + vsb[j].L;
		if (gL[k] > emax)
			emax = gL[k];
	}
	int frac_g = 2 + 2 * (sf->p - 1); /* quarters, then both scale significands */
	int unit = emax - TCS_F4_FRAC;
	bool lost = false;
	int64_t sum = 0;
	uint64_t t = tcs_align(vc.M, vc.L, vc.frac, unit, &lost);
	sum += vc.neg ? -(int64_t)t : (int64_t)t;
	for (int k = 0; k < EMU_TCS_K_F4 / EMU_TCS_GROUP; k++) {
		uint64_t mag = (uint64_t)(g[k] < 0 ? -g[k] : g[k]) * gS[k];
		t = tcs_align((uint32_t)mag, gL[k], frac_g, unit, &lost);
		sum += g[k] < 0 ? -(int64_t)t : (int64_t)t;
	}
	return tcs_round_fp32(sum < 0, sum < 0 ? (uint64_t)-sum : (uint64_t)sum, unit, lost);
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

emu_status emu_scaled_gemm(const emu_qtensor *qa, const emu_qtensor *qb, const emu_recipe *r,
                           const emu_gemm_opts *o, double *D, char *err, size_t errlen)
{
	const emu_format *f32 = tcs_fp32();
	size_t M = qa->rows, K = qa->cols, N = qb->cols;
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
		size_t chunk = mx ? EMU_TCS_K_F8F6F4 : EMU_TCS_K_F4;
		/* every output element on its own: the rows on every thread */
#pragma omp parallel for schedule(static) num_threads(emu_threads()) if (M * N * K >= GEMM_PAR)
		for (size_t i = 0; i < M; i++)
			for (size_t j = 0; j < N; j++) {
				unsigned fl = 0;
				emu_bits acc = 0; /* +0 */
				for (size_t k0 = 0; k0 < K; k0 += chunk) {
					emu_bits a[EMU_TCS_K_F4] = {0}, b[EMU_TCS_K_F4] = {0};
					emu_bits sa[4] = {0}, sb[4] = {0};
					for (size_t k = k0; k < k0 + chunk && k < K; k++) {
						a[k - k0] = qa->code[i * K + k];
						b[k - k0] = qb->code[k * N + j];
					}
					emu_result d;
					if (mx) {
						d = emu_tcs_mxf8f6f4(
						    &qa->elem, &qb->elem, a, b,
						    qa->dcode[gemm_block(qa, i, k0)],
						    qb->dcode[gemm_block(qb, k0, j)], acc);
					} else {
						/* groups wholly past K: zero elements, zero scales
						 */
						for (size_t g = 0; g < 4 && k0 + 16 * g < K; g++) {
							sa[g] = qa->dcode[gemm_block(qa, i,
							                             k0 + 16 * g)];
							sb[g] = qb->dcode[gemm_block(
							    qb, k0 + 16 * g, j)];
						}
						d = emu_tcs_mxf4nvf4(&r->scale_fmt, 16, a, b, sa,
						                     sb, acc);
					}
					acc = d.bits;
				}
				D[i * N + j] = emu_v_mul(f32, alpha, emu_decode(f32, acc),
				                         &EMU_ENV_DEFAULT, &fl);
			}
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
#pragma omp parallel for schedule(static) num_threads(emu_threads()) if (M * N * K >= GEMM_PAR)
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++) {
			double acc = 0;
			unsigned fl = 0;
			for (size_t k0 = 0; k0 < K; k0 += chunk) {
				emu_bits a[128], b[128];
				size_t n = K - k0 < chunk ? K - k0 : chunk;
				for (size_t k = 0; k < n; k++) {
					a[k] = qa->code[i * K + k0 + k];
					b[k] = qb->code[(k0 + k) * N + j];
				}
				emu_result rr =
				    emu_tc_dot2(&tm, &qa->elem, &qb->elem, f32, a, b, n, 0);
				double part = emu_decode(f32, rr.bits);
				double s =
				    emu_v_mul(f32, qa->d[gemm_block(qa, i, k0)],
				              qb->d[gemm_block(qb, k0, j)], &EMU_ENV_DEFAULT, &fl);
				if (o->hopper_fma)
					acc = emu_v_fma(f32, part, s, acc, &EMU_ENV_DEFAULT, &fl);
				else
					acc = emu_v_add(
					    f32, acc,
					    emu_v_mul(f32, part, s, &EMU_ENV_DEFAULT, &fl),
					    &EMU_ENV_DEFAULT, &fl);
			}
			D[i * N + j] = acc;
		}
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
