/*
 * check_recipe.c — the proof of the scaling recipes (emu/recipes/recipe.h): an
 * independent quantiser written with MPFR from the sources' rules
 * (docs/recipes.md and ../shared/FACTS.md §5b name them), compared with
 * emu_quantize bit for bit on random tensors of every built-in recipe, role,
 * orientation and a set of shapes (ragged, 1×1, empty) and distributions
 * (normal, outliers, tiny, huge, zero blocks, NaN and ±inf); known answers
 * from the sources; emu_round_sr_bits against its definition; and the recipe
 * parser.
 *
 * The reference does every fp32 step as one MPFR operation rounded once to
 * the format (divisions through round-to-odd at 200 bits, which rounds
 * correctly again to any format of up to 24 + 32 bits), and every rounding
 * to an element or scale format by its own grid arithmetic (RNE, SR with n
 * random bits, saturation, flags with tininess after rounding). Only NaN and
 * infinite operands of a conversion go through the MPFR backend
 * (emu_mp_from_double), whose special-value rules check_mpfr proves.
 *
 * The expected recipe table below is written from the sources, not read
 * from the parser, so a built-in with a wrong field fails here too.
 *
 * The test_source_* cases pin the rules where a first reading of the
 * sources went wrong (an infinite amax under the OCP floor and TE's pow2
 * rules, a NaN one under DeepGEMM's UE8M0, the sign of a negative
 * overflow's NaN, RHT's input rounded once to bf16).
 */
#include <inttypes.h>
#include <math.h>
#include <mpfr.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib.h"
#include "emu/recipes/recipe.h"

/* ---- formats ---- */
static const emu_format *F32, *BF16, *E4M3, *E8M0;

static void init_formats(void)
{
	F32 = t_fmt("fp32");
	BF16 = t_fmt("bf16");
	E4M3 = t_fmt("e4m3");
	E8M0 = t_fmt("e8m0");
}

typedef struct {
	double v;
	emu_bits b;
} rv;

/* The decision to round away from zero for a fraction fr in [0, 1) of an
 * ulp (fr is overwritten). */
static bool away(mpfr_t fr, uint64_t n, emu_mode mode, int nbits, uint32_t u)
{
	if (mode == EMU_SR) {
		if (nbits >= 32) { /* frac·2^32 > u */
			mpfr_mul_2si(fr, fr, 32, MPFR_RNDN);
			return mpfr_cmp_ui(fr, u) > 0;
		}
		/* F + u >= 2^n, F the first n bits of the fraction */
		mpfr_mul_2si(fr, fr, nbits, MPFR_RNDN);
		unsigned long F = mpfr_get_ui(fr, MPFR_RNDZ);
		return (uint64_t)F + u >= (1ull << nbits);
	}
	int c = mpfr_cmp_d(fr, 0.5);
	return c > 0 || (c == 0 && (n & 1));
}

/* floor(|v|·2^-qe) and the rounding decision at that grid. */
static uint64_t grid(mpfr_srcptr v, long qe, emu_mode mode, int nbits, uint32_t u, bool *up,
                     bool *inexact)
{
	mpfr_t s, fr;
	mpfr_init2(s, mpfr_get_prec(v));
	mpfr_init2(fr, mpfr_get_prec(v));
	mpfr_abs(s, v, MPFR_RNDN);
	mpfr_mul_2si(s, s, -qe, MPFR_RNDN); /* exact */
	uint64_t n = mpfr_get_ui(s, MPFR_RNDZ);
	mpfr_sub_ui(fr, s, (unsigned long)n, MPFR_RNDN); /* exact */
	*inexact = !mpfr_zero_p(fr);
	*up = *inexact && away(fr, n, mode, nbits, u);
	mpfr_clear(s);
	mpfr_clear(fr);
	return n;
}

/* Round v (exact, or round-to-odd far below f's precision) into f:
 * RNE or SR (nbits random bits u), saturating when sat; IEEE flags with
 * tininess after rounding. Formats with subnormals only. */
static rv rnd(const emu_format *f, mpfr_srcptr v, emu_mode mode, bool sat, int nbits, uint32_t u,
              unsigned *fl)
{
	rv o;
	if (!mpfr_number_p(v)) {
		emu_env env = EMU_ENV_DEFAULT;
		env.sat = sat;
		emu_result r = emu_mp_from_double(f, mpfr_get_d(v, MPFR_RNDN), &env);
		*fl |= r.flags;
		o.b = r.bits;
		o.v = emu_decode(f, r.bits);
		return o;
	}
	bool neg = mpfr_signbit(v) != 0;
	if (mpfr_zero_p(v)) {
		o.v = neg ? -0.0 : 0.0;
		o.b = emu_encode(f, o.v);
		return o;
	}
	int p = f->p;
	long e = (long)mpfr_get_exp(v) - 1; /* |v| in [2^e, 2^(e+1)) */
	long qe = e >= f->emin ? e - p + 1 : f->emin - p + 1;
	bool up, inexact, tiny = false;
	uint64_t n = grid(v, qe, mode, nbits, u, &up, &inexact);
	double r = ldexp((double)(n + up), (int)qe);
	if (e < f->emin) {
		tiny = true;
		if (e == f->emin - 1) {
			bool up1, ix1;
			uint64_t n1 = grid(v, e - p + 1, mode, nbits, u, &up1, &ix1);
			tiny = n1 + up1 < (1ull << p);
		}
	}
	if (r > f->max) {
		*fl |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
		if (sat)
			r = f->max;
		else if (f->has_inf)
			r = INFINITY;
		else if (f->nan != EMU_NAN_NONE)
			r = NAN;
		else
			r = f->max;
	} else if (r == 0) {
		*fl |= EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT;
	} else if (inexact) {
		*fl |= EMU_FLAG_INEXACT | (tiny ? EMU_FLAG_UNDERFLOW : 0);
	}
	o.v = neg ? -r : r;
	if (isnan(r))
		o.v = neg ? -NAN : NAN;
	o.b = emu_encode(f, o.v);
	return o;
}

/* ---- fp32 (and other format) steps, each one MPFR operation rounded once ---- */
static double rnd_d(const emu_format *f, double x, bool sat, unsigned *fl)
{
	mpfr_t v;
	mpfr_init2(v, 64);
	mpfr_set_d(v, x, MPFR_RNDN);
	rv r = rnd(f, v, EMU_RNE, sat, 0, 0, fl);
	mpfr_clear(v);
	return r.v;
}

static double f32(double x)
{
	unsigned fl = 0;
	return rnd_d(F32, x, false, &fl);
}

static double f32mul(double a, double b)
{
	mpfr_t x, y, z;
	mpfr_inits2(128, x, y, z, (mpfr_ptr)0);
	mpfr_set_d(x, a, MPFR_RNDN);
	mpfr_set_d(y, b, MPFR_RNDN);
	mpfr_mul(z, x, y, MPFR_RNDN); /* exact: 53 + 53 bits */
	unsigned fl = 0;
	rv r = rnd(F32, z, EMU_RNE, false, 0, 0, &fl);
	mpfr_clears(x, y, z, (mpfr_ptr)0);
	return r.v;
}

/* z = a / b rounded to odd at 200 bits (exact enough for one more rounding) */
static void div_odd(mpfr_t z, double a, double b)
{
	mpfr_t x, y, t;
	mpfr_inits2(64, x, y, (mpfr_ptr)0);
	mpfr_init2(t, 200);
	mpfr_set_d(x, a, MPFR_RNDN);
	mpfr_set_d(y, b, MPFR_RNDN);
	int tern = mpfr_div(t, x, y, MPFR_RNDZ);
	mpfr_set_prec(z, 201);
	mpfr_set(z, t, MPFR_RNDN);
	if (tern && mpfr_number_p(t) && !mpfr_zero_p(t)) { /* a half ulp of 200 bits: sticky */
		mpfr_t h;
		mpfr_init2(h, 8);
		mpfr_set_si_2exp(h, mpfr_signbit(t) ? -1 : 1, mpfr_get_exp(t) - 201, MPFR_RNDN);
		mpfr_add(z, z, h, MPFR_RNDN);
		mpfr_clear(h);
	}
	mpfr_clears(x, y, t, (mpfr_ptr)0);
}

static double f32div(double a, double b)
{
	mpfr_t z;
	mpfr_init2(z, 201);
	div_odd(z, a, b);
	unsigned fl = 0;
	rv r = rnd(F32, z, EMU_RNE, false, 0, 0, &fl);
	mpfr_clear(z);
	return r.v;
}

/* fminf: a NaN operand gives the other */
static double fminf_(double a, double b)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	return a < b ? a : b;
}

/* exact product a·b·c as a double (fails loudly if not exact) */
static double exact3(double a, double b, double c)
{
	mpfr_t x, y;
	mpfr_init2(x, 256);
	mpfr_init2(y, 64);
	mpfr_set_d(x, a, MPFR_RNDN);
	mpfr_set_d(y, b, MPFR_RNDN);
	mpfr_mul(x, x, y, MPFR_RNDN);
	mpfr_set_d(y, c, MPFR_RNDN);
	mpfr_mul(x, x, y, MPFR_RNDN);
	double d = mpfr_get_d(x, MPFR_RNDN);
	mpfr_t back;
	mpfr_init2(back, 64);
	mpfr_set_d(back, d, MPFR_RNDN);
	bool ok = !mpfr_number_p(x) || mpfr_equal_p(back, x);
	mpfr_clears(x, y, back, (mpfr_ptr)0);
	ck_assert_msg(ok, "q·d·t not exact in double: %a %a %a", a, b, c);
	return d;
}

static double pow2(long e)
{
	return ldexp(1.0, (int)e);
}

/* smallest k with 2^k >= v (v > 0 finite) */
static long ceil_log2(double v)
{
	int k = ilogb(v);
	return v == ldexp(1.0, k) ? k : k + 1;
}

/* ---- the recipes as the sources define them ---- */
typedef struct {
	const char *name;
	const char *elem;  /* NULL: the parser's (legacy recipes) */
	const char *scale; /* scale format */
	emu_rscale rule;
	int br[EMU_NROLES], bc[EMU_NROLES];
	bool grad_sr;
	bool rht;
	double tbound;
	emu_r46 four;
	double amin;
	bool rceil; /* LEGACY_MX */
	bool fmaxf; /* TE's kernels: amax = fmaxf(amax, |x|), a NaN element skipped */
} xrecipe;

/* clang-format off */
#define MX(n, el, rl) \
	{n, el, "e8m0", rl, {1, 1, 1}, {32, 32, 32}, false, false, 0, EMU_R46_NONE, 0, false, \
	 rl == EMU_RSCALE_E8M0_TE}
static const xrecipe XR[] = {
	MX("mxfp8", "e4m3", EMU_RSCALE_E8M0_TE),
	MX("mxfp8:e5m2", "e5m2", EMU_RSCALE_E8M0_TE),
	MX("mxfp6:e3m2", "e3m2", EMU_RSCALE_E8M0_TE),
	MX("mxfp6:e2m3", "e2m3", EMU_RSCALE_E8M0_TE),
	MX("mxfp4", "e2m1", EMU_RSCALE_E8M0_TE),
	MX("mxfp8:floor", "e4m3", EMU_RSCALE_E8M0_FLOOR),
	MX("mxfp8:e5m2:floor", "e5m2", EMU_RSCALE_E8M0_FLOOR),
	MX("mxfp6:e3m2:floor", "e3m2", EMU_RSCALE_E8M0_FLOOR),
	MX("mxfp6:e2m3:floor", "e2m3", EMU_RSCALE_E8M0_FLOOR),
	MX("mxfp4:floor", "e2m1", EMU_RSCALE_E8M0_FLOOR),
	{"nvfp4", "e2m1", "e4m3", EMU_RSCALE_NVFP4, {1, 16, 1}, {16, 16, 16}, true, true, 448, EMU_R46_NONE, 0, false, true},
	{"nvfp4:4over6", "e2m1", "e4m3", EMU_RSCALE_NVFP4, {1, 16, 1}, {16, 16, 16}, true, true, 256, EMU_R46_MAE, 0, false, true},
	{"deepseek", "e4m3", "fp32", EMU_RSCALE_FP32_DEEPGEMM, {1, 128, 1}, {128, 128, 128}, false, false, 0, EMU_R46_NONE, 1e-4, false, false},
	{"deepseek:pow2", "e4m3", "fp32", EMU_RSCALE_POW2_DOWN, {1, 128, 1}, {128, 128, 128}, false, false, 0, EMU_R46_NONE, 0, false, true},
	{"deepseek:ue8m0", "e4m3", "e8m0", EMU_RSCALE_POW2_UP, {1, 128, 1}, {128, 128, 128}, false, false, 0, EMU_R46_NONE, 1e-4, false, false},
	/* legacy (emu/engine/scale.c group_scale): element format and sat from the parser */
	{"tensor", NULL, "fp32", EMU_RSCALE_FP32_MAX_OVER_AMAX, {0, 0, 0}, {0, 0, 0}, false, false, 0, EMU_R46_NONE, 0, false, false},
	{"tile128", NULL, "fp32", EMU_RSCALE_FP32_RECIP, {1, 1, 1}, {128, 128, 128}, false, false, 0, EMU_R46_NONE, 0, false, false},
	{"mx32:floor", NULL, "e8m0", EMU_RSCALE_LEGACY_MX, {1, 1, 1}, {32, 32, 32}, false, false, 0, EMU_R46_NONE, 0, false, false},
	{"mx32:rceil", NULL, "e8m0", EMU_RSCALE_LEGACY_MX, {1, 1, 1}, {32, 32, 32}, false, false, 0, EMU_R46_NONE, 0, true, false},
};
#undef MX
/* clang-format on */

/* the reference's output, laid out as emu_qtensor */
typedef struct {
	size_t nbr, nbc, bh, bw;
	double *x, *q, *deq, *amax, *d, *m;
	emu_bits *code, *dcode;
	uint8_t *flags;
	bool *four;
	double tensor_amax, s_enc, t;
} refq;

static void refq_free(refq *r)
{
	free(r->x);
	free(r->q);
	free(r->deq);
	free(r->amax);
	free(r->d);
	free(r->m);
	free(r->code);
	free(r->dcode);
	free(r->flags);
	free(r->four);
	memset(r, 0, sizeof *r);
}

static const double RHT_SIGN[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};

/* the sign of H16[i][j] (Sylvester): (−1)^popcount(i & j) */
static double h16(int i, int j)
{
	return (__builtin_popcount((unsigned)(i & j)) & 1) ? -1.0 : 1.0;
}

/* One block's elements through scale (m, d, t): codes, values, flags, and the
 * exact Σ|x − deq| into err (when not NULL). */
typedef struct {
	const emu_format *ef;
	emu_mode mode;
	bool sat;
	bool div;
	uint64_t seed;
} elemctx;

static void quant_elem(const elemctx *c, double x, double m, double d, double t, uint64_t index,
                       emu_bits *code, double *q, double *deq, uint8_t *flags)
{
	mpfr_t z;
	mpfr_init2(z, 201);
	if (c->div) {
		div_odd(z, x, d);
	} else {
		mpfr_t a, b;
		mpfr_inits2(64, a, b, (mpfr_ptr)0);
		mpfr_set_d(a, x, MPFR_RNDN);
		mpfr_set_d(b, m, MPFR_RNDN);
		mpfr_mul(z, a, b, MPFR_RNDN);
		mpfr_clears(a, b, (mpfr_ptr)0);
	}
	unsigned fl = 0;
	double p32 = rnd(F32, z, EMU_RNE, false, 0, 0, &fl).v; /* fp32(x·m) */
	mpfr_set_d(z, p32, MPFR_RNDN);
	fl = 0;
	uint32_t u = c->mode == EMU_SR ? emu_sr_bits(c->seed, index) : 0;
	rv r = rnd(c->ef, z, c->mode, c->sat, 32, u, &fl);
	mpfr_clear(z);
	*code = r.b;
	*q = emu_decode(c->ef, r.b);
	*flags = (uint8_t)fl;
	*deq = exact3(*q, d, t);
}

/* Σ|x_i − deq_i| exactly, as an MPFR number (NaN propagates) */
static void abs_err_sum(mpfr_t sum, const double *x, const double *deq, const size_t *idx, size_t n)
{
	mpfr_t a, b;
	mpfr_init2(a, 2200);
	mpfr_init2(b, 64);
	mpfr_set_zero(sum, 1);
	for (size_t k = 0; k < n; k++) {
		mpfr_set_d(a, x[idx[k]], MPFR_RNDN);
		mpfr_set_d(b, deq[idx[k]], MPFR_RNDN);
		mpfr_sub(a, a, b, MPFR_RNDN);
		mpfr_abs(a, a, MPFR_RNDN);
		mpfr_add(sum, sum, a, MPFR_RNDN);
	}
	mpfr_clears(a, b, (mpfr_ptr)0);
}

/* Quantise x by the source rules of xr (fields of r only for the legacy
 * element format, sat and apply, which no source fixes). */
static void ref_quantize(const xrecipe *xr, const emu_recipe *r, emu_role role, bool colwise,
                         const double *x0, size_t rows, size_t cols, uint64_t seed, refq *o)
{
	memset(o, 0, sizeof *o);
	const emu_format *ef = xr->elem ? t_fmt(xr->elem) : &r->elem;
	size_t bh = xr->br[role] ? (size_t)xr->br[role] : rows;
	size_t bw = xr->bc[role] ? (size_t)xr->bc[role] : cols;
	if (colwise) { /* the block shape transposed */
		bh = xr->bc[role] ? (size_t)xr->bc[role] : rows;
		bw = xr->br[role] ? (size_t)xr->br[role] : cols;
	}
	if (bh == 0)
		bh = 1;
	if (bw == 0)
		bw = 1;
	o->bh = bh;
	o->bw = bw;
	o->nbr = rows ? (rows + bh - 1) / bh : 0;
	o->nbc = cols ? (cols + bw - 1) / bw : 0;
	if (rows == 0 || cols == 0)
		o->nbr = o->nbc = 0;
	size_t n = rows * cols, nb = o->nbr * o->nbc;
	o->x = calloc(n + 1, sizeof *o->x);
	o->q = calloc(n + 1, sizeof *o->q);
	o->deq = calloc(n + 1, sizeof *o->deq);
	o->code = calloc(n + 1, sizeof *o->code);
	o->flags = calloc(n + 1, 1);
	o->amax = calloc(nb + 1, sizeof *o->amax);
	o->d = calloc(nb + 1, sizeof *o->d);
	o->m = calloc(nb + 1, sizeof *o->m);
	o->dcode = calloc(nb + 1, sizeof *o->dcode);
	o->four = calloc(nb + 1, sizeof *o->four);
	ck_assert(o->x && o->q && o->deq && o->code && o->flags && o->amax && o->d && o->m &&
	          o->dcode && o->four);
	/* 1. input: fp32, or bf16 and the Hadamard runs along the block direction */
	bool rht = xr->rht && role != EMU_ROLE_WEIGHT && colwise;
	unsigned fl = 0;
	for (size_t i = 0; i < n; i++)
		o->x[i] = rnd_d(rht ? BF16 : F32, x0[i], false, &fl);
	if (rht) {
		double *y = malloc((n + 1) * sizeof *y);
		ck_assert(y);
		mpfr_t s, a;
		mpfr_init2(s, 2200);
		mpfr_init2(a, 64);
		for (size_t c = 0; c < cols; c++)
			for (size_t r0 = 0; r0 + 16 <= rows; r0 += 16)
				for (int j = 0; j < 16; j++) {
					mpfr_set_zero(s, 1);
					for (int i = 0; i < 16; i++) {
						mpfr_set_d(a, o->x[(r0 + i) * cols + c], MPFR_RNDN);
						mpfr_mul_d(a, a, RHT_SIGN[i] * h16(i, j) * 0.25,
						           MPFR_RNDN);
						mpfr_add(s, s, a, MPFR_RNDN);
					}
					fl = 0;
					y[(r0 + j) * cols + c] =
					    rnd(F32, s, EMU_RNE, false, 0, 0, &fl).v;
				}
		mpfr_clears(s, a, (mpfr_ptr)0);
		memcpy(o->x, y, n * sizeof *y);
		free(y);
	}
	/* tensor amax (NaN if any NaN; under TE's fmaxf a NaN is skipped) */
	double ta = 0;
	for (size_t i = 0; i < n; i++)
		if ((isnan(o->x[i]) && !xr->fmaxf) || fabs(o->x[i]) > ta)
			ta = isnan(ta) ? ta : fabs(o->x[i]);
	o->tensor_amax = ta;
	o->s_enc = 1;
	o->t = 1;
	double fmax = ef->max;
	if (xr->rule == EMU_RSCALE_NVFP4) {
		double s = fminf_(f32div(f32(xr->tbound * fmax), ta), F32->max);
		if (ta == 0 || s == 0)
			s = 1;
		o->s_enc = s;
		o->t = f32div(1, s);
	}
	elemctx ec = {ef, (role == EMU_ROLE_GRAD && xr->grad_sr) ? EMU_SR : EMU_RNE,
	              xr->elem ? true : r->sat, r->apply == EMU_RAPPLY_DIV, seed};
	if (xr->rule == EMU_RSCALE_FP32_DEEPGEMM || xr->rule == EMU_RSCALE_POW2_DOWN ||
	    xr->rule == EMU_RSCALE_POW2_UP)
		ec.sat = r->sat; /* DeepGEMM's cast: the parser's (no source fixes it) */
	const emu_format *sf = t_fmt(xr->scale);
	size_t *idx = malloc((bh * bw + 1) * sizeof *idx);
	ck_assert(idx);
	for (size_t bi = 0; bi < o->nbr; bi++)
		for (size_t bj = 0; bj < o->nbc; bj++) {
			size_t b = bi * o->nbc + bj, k = 0;
			for (size_t i = bi * bh; i < rows && i < (bi + 1) * bh; i++)
				for (size_t j = bj * bw; j < cols && j < (bj + 1) * bw; j++)
					idx[k++] = i * cols + j;
			double a = 0;
			for (size_t l = 0; l < k; l++) {
				double v = o->x[idx[l]];
				if (isnan(v))
					a = xr->fmaxf ? a : NAN;
				else if (!isnan(a) && fabs(v) > a)
					a = fabs(v);
			}
			o->amax[b] = a;
			double d = 1, m = 1;
			emu_bits dc = 0;
			bool have_dc = false;
			switch (xr->rule) {
			case EMU_RSCALE_E8M0_TE: {
				double v = f32mul(a, f32div(1, fmax));
				int code;
				if (isnan(v))
					code = 0xff;
				else if (isinf(v))
					code = 0xfe;
				else if (v == 0 || v <= pow2(-127))
					code = 0;
				else {
					long kk = ceil_log2(v) + 127;
					code = kk > 254 ? 254 : (int)kk;
				}
				dc = (emu_bits)code;
				have_dc = true;
				d = code == 0xff ? NAN : pow2(code - 127);
				if (code == 0) {
					m = 1;
				} else { /* __int_as_float((254 - code) << 23) */
					uint32_t bits = (uint32_t)(254 - code) << 23;
					float fv;
					memcpy(&fv, &bits, sizeof fv);
					m = fv;
				}
				break;
			}
			case EMU_RSCALE_E8M0_FLOOR: {
				if (isnan(a)) {
					d = m = NAN;
					break;
				}
				double aa = a == 0 ? F32->min_normal : a;
				if (isinf(aa)) {
					d = m = NAN;
					break;
				}
				long e = ilogb(aa) - ef->emax;
				if (e < -127)
					e = -127;
				if (e > 127) {
					d = m = NAN;
					break;
				}
				d = pow2(e);
				m = pow2(-e);
				break;
			}
			case EMU_RSCALE_NVFP4:
				break; /* below */
			case EMU_RSCALE_FP32_DEEPGEMM: {
				double am = f32(xr->amin);
				double ap = isnan(a) ? a : (a > am ? a : am);
				m = f32div(fmax, ap);
				d = f32div(ap, fmax);
				break;
			}
			case EMU_RSCALE_POW2_DOWN: {
				if (a == 0 || isinf(a) || isnan(a)) {
					m = d = 1;
					break;
				}
				double s = f32div(fmax, a);
				if (isinf(s))
					s = F32->max;
				m = pow2(ilogb(s));
				d = 1 / m;
				break;
			}
			case EMU_RSCALE_POW2_UP: {
				/* DeepGEMM deep_gemm/utils/math.py: sf = fp32(clamp(a, 1e-4) /
				 * 448); ceil_to_ue8m0: exp = ((bits >> 23) & 0xFF) + (mantissa !=
				 * 0), clamped to [1, 254]; x · (1.0 / sf) */
				double am = f32(xr->amin);
				double ap = isnan(a) ? a : (a > am ? a : am);
				double v = f32div(ap, fmax);
				long ex;
				if (isnan(v))
					ex = 256; /* 0x7fc00000: 255 + 1 */
				else if (isinf(v))
					ex = 255;
				else if (v < F32->min_normal)
					ex = v == 0 ? 0 : 1;
				else
					ex = ceil_log2(v) + 127;
				ex = ex < 1 ? 1 : ex > 254 ? 254 : ex;
				d = pow2(ex - 127);
				m = 1 / d;
				break;
			}
			case EMU_RSCALE_FP32_MAX_OVER_AMAX:
				if (a == 0 || isinf(a) || isnan(a)) {
					m = d = 1;
					break;
				}
				m = f32div(fmax, a);
				d = f32div(1, m);
				break;
			case EMU_RSCALE_FP32_RECIP:
				/* group_scale: s = 1 / fp32(a / max) in double, applied as
				 * fp32(s) and dequantised by fp32(1 / fp32(s)) (load_stored) */
				d = f32div(a, fmax);
				if (d == 0 || !isfinite(d)) {
					m = d = 1;
					break;
				}
				m = f32div(1, d);
				d = f32div(1, m);
				break;
			case EMU_RSCALE_LEGACY_MX: {
				if (!(a > 0) || isinf(a)) {
					m = d = 1;
					break;
				}
				long e;
				if (xr->rceil) {
					mpfr_t qq;
					mpfr_init2(qq, 53);
					mpfr_set_d(qq, a, MPFR_RNDN);
					mpfr_div_d(qq, qq, fmax, MPFR_RNDN); /* a / max in double */
					e = ceil_log2(mpfr_get_d(qq, MPFR_RNDN));
					mpfr_clear(qq);
				} else {
					e = ilogb(a) - ef->emax;
				}
				e = e < -127 ? -127 : e > 127 ? 127 : e;
				m = pow2(-e);
				d = pow2(e);
				break;
			}
			default:
				ck_abort_msg("rule %d not in the reference", (int)xr->rule);
			}
			if (xr->rule == EMU_RSCALE_NVFP4) {
				/* candidates: fmax 6, and 4 under 4over6 */
				int ncand = xr->four != EMU_R46_NONE ? 2 : 1;
				const double fm[2] = {6, 4};
				emu_bits *cc[2];
				double *cq[2], *cdq[2];
				uint8_t *cf[2];
				double cd[2], cm[2];
				emu_bits cdc[2];
				for (int c = 0; c < ncand; c++) {
					cc[c] = malloc((k + 1) * sizeof **cc);
					cq[c] = malloc((k + 1) * sizeof **cq);
					cdq[c] = malloc((k + 1) * sizeof **cdq);
					cf[c] = malloc(k + 1);
					ck_assert(cc[c] && cq[c] && cdq[c] && cf[c]);
					double v = f32mul(a, f32mul(o->s_enc, f32div(1, fm[c])));
					mpfr_t z;
					mpfr_init2(z, 64);
					mpfr_set_d(z, v, MPFR_RNDN);
					unsigned f2 = 0;
					rv dd = rnd(E4M3, z, EMU_RNE, true, 0, 0, &f2);
					mpfr_clear(z);
					cd[c] = dd.v;
					cdc[c] = dd.b;
					cm[c] = fminf_(f32div(1, f32mul(dd.v, o->t)), F32->max);
					for (size_t l = 0; l < k; l++)
						quant_elem(&ec, o->x[idx[l]], cm[c], cd[c], o->t,
						           idx[l], &cc[c][l], &cq[c][l], &cdq[c][l],
						           &cf[c][l]);
				}
				int pick = 0;
				if (ncand == 2) {
					mpfr_t e6, e4;
					mpfr_init2(e6, 2300);
					mpfr_init2(e4, 2300);
					size_t *seq = malloc((k + 1) * sizeof *seq);
					double *xs = malloc((k + 1) * sizeof *xs);
					ck_assert(seq && xs);
					for (size_t l = 0; l < k; l++) {
						seq[l] = l;
						xs[l] = o->x[idx[l]];
					}
					abs_err_sum(e6, xs, cdq[0], seq, k);
					abs_err_sum(e4, xs, cdq[1], seq, k);
					if (mpfr_less_p(e4, e6))
						pick = 1;
					mpfr_clears(e6, e4, (mpfr_ptr)0);
					free(seq);
					free(xs);
				}
				o->four[b] = pick == 1;
				d = cd[pick];
				m = cm[pick];
				dc = cdc[pick];
				have_dc = true;
				for (size_t l = 0; l < k; l++) {
					o->code[idx[l]] = cc[pick][l];
					o->q[idx[l]] = cq[pick][l];
					o->deq[idx[l]] = cdq[pick][l];
					o->flags[idx[l]] = cf[pick][l];
				}
				for (int c = 0; c < ncand; c++) {
					free(cc[c]);
					free(cq[c]);
					free(cdq[c]);
					free(cf[c]);
				}
			}
			if (xr->rule == EMU_RSCALE_E8M0_FLOOR || xr->rule == EMU_RSCALE_POW2_UP ||
			    xr->rule == EMU_RSCALE_LEGACY_MX) {
				if (sf == E8M0 || !strcmp(sf->name, "e8m0")) {
					dc = !isfinite(d) ? 0xff : (emu_bits)(ilogb(d) + 127);
					have_dc = true;
				}
			}
			if (!have_dc)
				dc = emu_encode(sf, d);
			o->d[b] = d;
			o->m[b] = m;
			o->dcode[b] = dc;
			if (xr->rule != EMU_RSCALE_NVFP4)
				for (size_t l = 0; l < k; l++)
					quant_elem(&ec, o->x[idx[l]], m, d, o->t, idx[l],
					           &o->code[idx[l]], &o->q[idx[l]], &o->deq[idx[l]],
					           &o->flags[idx[l]]);
		}
	free(idx);
}

/* ---- comparison ---- */
static bool same(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	uint64_t ua, ub;
	memcpy(&ua, &a, 8);
	memcpy(&ub, &b, 8);
	return ua == ub;
}

typedef struct {
	uint64_t elems, blocks, bad, known;
	char first[4][320];
} tally;

static void note(tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(tally *t, const char *fmt, ...)
{
	if (t->bad < 4) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(t->first[t->bad], sizeof t->first[0], fmt, ap);
		va_end(ap);
	}
	t->bad++;
}

/* compare; returns the number of differences found */
static uint64_t compare(const char *what, const emu_format *ef,
                        const emu_qtensor *e, const refq *r, size_t rows, size_t cols,
                        const double *x0, tally *t)
{
	uint64_t before = t->bad;
	/* the block shape as used: clipped to the tensor (1×32 on a 1×1 tensor is 1×1) */
	size_t ch = r->bh < rows ? r->bh : rows, cw = r->bw < cols ? r->bw : cols;
	bool empty = rows == 0 || cols == 0;
	if (e->rows != rows || e->cols != cols ||
	    (empty ? e->nbr * e->nbc != 0
	           : (e->nbr != r->nbr || e->nbc != r->nbc || e->brows != ch || e->bcols != cw))) {
		note(t, "%s: shape %zux%zu blocks %zux%zu of %zux%zu, reference %zux%zu of %zux%zu",
		     what, e->rows, e->cols, e->nbr, e->nbc, e->brows, e->bcols, r->nbr, r->nbc, ch,
		     cw);
		return t->bad - before;
	}
	size_t n = rows * cols, nb = r->nbr * r->nbc;
	if (e->elem_p != ef->p)
		note(t, "%s: elem_p %d, element format %s has p %d", what, e->elem_p, ef->name,
		     ef->p);
	if (!same(e->tensor_amax, r->tensor_amax) || !same(e->s_enc, r->s_enc) || !same(e->t, r->t))
		note(t, "%s: tensor amax %a S_enc %a t %a, reference %a %a %a", what,
		     e->tensor_amax, e->s_enc, e->t, r->tensor_amax, r->s_enc, r->t);
	for (size_t b = 0; b < nb; b++) {
		if (!same(e->amax[b], r->amax[b]) || !same(e->d[b], r->d[b]) ||
		    !same(e->m[b], r->m[b]) || e->dcode[b] != r->dcode[b] ||
		    (e->four && e->four[b] != r->four[b]))
			note(t,
			     "%s: block %zu amax %a: d %a (0x%x) m %a four %d, reference amax %a d "
			     "%a (0x%x) m %a four %d",
			     what, b, e->amax[b], e->d[b], e->dcode[b], e->m[b],
			     e->four ? e->four[b] : -1, r->amax[b], r->d[b], r->dcode[b], r->m[b],
			     r->four[b]);
	}
	for (size_t i = 0; i < n; i++) {
		size_t bi = (i / cols) / r->bh, bj = (i % cols) / r->bw, b = bi * r->nbc + bj;
		if (!same(e->x[i], r->x[i]) || e->code[i] != r->code[i] ||
		    !same(e->q[i], r->q[i]) || !same(e->deq[i], r->deq[i]) ||
		    e->flags[i] != r->flags[i]) {
			note(t,
			     "%s: element %zu (%zu,%zu) x0 %a x %a: code 0x%x q %a deq %a flags "
			     "0x%x, reference x %a code 0x%x q %a deq %a flags 0x%x (block %zu d "
			     "%a m %a)",
			     what, i, i / cols, i % cols, x0[i], e->x[i], e->code[i], e->q[i],
			     e->deq[i], e->flags[i], r->x[i], r->code[i], r->q[i], r->deq[i],
			     r->flags[i], b, r->d[b], r->m[b]);
		}
	}
	t->elems += n;
	t->blocks += nb;
	return t->bad - before;
}

static const xrecipe *xrecipe_of(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(XR); i++)
		if (!strcmp(XR[i].name, name))
			return &XR[i];
	return NULL;
}

static void parse_ok(const char *spec, emu_recipe *r)
{
	char err[256] = "";
	emu_status st = emu_recipe_parse(spec, r, err, sizeof err);
	ck_assert_msg(st == EMU_OK, "%s: %s", spec, err);
}

/* Quantise by both and compare. */
static uint64_t run_one(const char *spec, emu_role role, bool colwise, const double *x, size_t rows,
                        size_t cols, uint64_t seed, tally *t)
{
	emu_recipe r;
	parse_ok(spec, &r);
	const xrecipe *xr = xrecipe_of(spec);
	ck_assert_msg(xr, "%s: not in the reference table", spec);
	emu_qtensor q;
	memset(&q, 0, sizeof q);
	ck_assert_msg(emu_quantize(&r, role, colwise, x, rows, cols, seed, &q) == 0,
	              "%s: out of memory", spec);
	refq ref;
	ref_quantize(xr, &r, role, colwise, x, rows, cols, seed, &ref);
	char what[128];
	snprintf(what, sizeof what, "%s %s %s %zux%zu", spec, emu_role_name(role),
	         colwise ? "colwise" : "rowwise", rows, cols);
	uint64_t bad =
	    compare(what, xr->elem ? t_fmt(xr->elem) : &r.elem, &q, &ref, rows, cols, x, t);
	refq_free(&ref);
	emu_qtensor_free(&q);
	return bad;
}

static void tally_done(const tally *t, const char *what)
{
	char w[128];
	snprintf(w, sizeof w, "recipe: elements against MPFR%s", what);
	t_count(w, t->elems);
	snprintf(w, sizeof w, "recipe: blocks against MPFR%s", what);
	t_count(w, t->blocks);
	ck_assert_msg(t->bad == 0, "%" PRIu64 " differences; first: %s | %s | %s | %s", t->bad,
	              t->first[0], t->first[1], t->first[2], t->first[3]);
}

/* ---- random tensors ---- */
static double unif(uint64_t s, uint64_t i)
{
	return ((double)(t_rand(s, i) >> 11) + 0.5) * 0x1p-53;
}

static double normal(uint64_t s, uint64_t i)
{
	return sqrt(-2 * log(unif(s, 2 * i))) * cos(6.283185307179586 * unif(s, 2 * i + 1));
}

enum { D_NORMAL, D_OUTLIER, D_TINY, D_HUGE, D_ZEROS, D_SPECIAL, D_MIXED, D_N };

static void fill(double *x, size_t rows, size_t cols, int dist, uint64_t s)
{
	size_t n = rows * cols;
	for (size_t i = 0; i < n; i++) {
		double v = normal(s, i);
		uint64_t u = t_rand(s ^ 0x5eed, i);
		switch (dist) {
		case D_OUTLIER:
			if (u % 50 == 0)
				v *= (double)(1 + u % 1000);
			break;
		case D_TINY: /* near fp32's and the scale formats' bottom */
			v = ldexp(v, -110 - (int)((u >> 8) % 40));
			break;
		case D_HUGE: /* near fp32 max, a few above it */
			v = ldexp(v, 110 + (int)((u >> 8) % 18));
			break;
		case D_ZEROS: /* zero elements, zero rows (whole zero blocks), −0 */
			if (u % 4 == 0 || ((i / cols) % 3 == 1))
				v = (u & 256) ? -0.0 : 0.0;
			break;
		case D_SPECIAL:
			if (u % 37 == 0)
				v = NAN;
			else if (u % 37 == 1)
				v = INFINITY;
			else if (u % 37 == 2)
				v = -INFINITY;
			break;
		case D_MIXED: /* each row its own scale over 2^±60 */
			v = ldexp(v, (int)(t_rand(s ^ 0xabc, i / cols) % 121) - 60);
			break;
		default:
			break;
		}
		x[i] = v;
	}
}

typedef struct {
	size_t rows, cols;
} shape;

static const shape SHAPES[] = {{1, 1},   {0, 32},  {3, 0},   {1, 31},    {5, 33},   {16, 16},
                               {17, 47}, {32, 96}, {48, 40}, {128, 130}, {129, 257}};

START_TEST(test_random)
{
	init_formats();
	const char *spec = XR[_i].name;
	const xrecipe *xr = &XR[_i];
	tally t;
	memset(&t, 0, sizeof t);
	int reps = 1;
	uint64_t k = 0;
	for (int rep = 0; rep < reps; rep++)
		for (size_t si = 0; si < ARRAY_SIZE(SHAPES); si++)
			for (int dist = 0; dist < D_N; dist++)
				for (int role = 0; role < EMU_NROLES; role++)
					for (int cw = 0; cw < 2; cw++) {
						size_t rows = SHAPES[si].rows,
						       cols = SHAPES[si].cols;
						/* half the role × copy pairs per shape and
						 * distribution, in turn; big shapes: one
						 * distribution, one pair */
						size_t pair = (size_t)role * 2 + (size_t)cw;
						if ((pair + si + (size_t)dist) % 2)
							continue;
						if (rows * cols > 4096 && t_quick())
							continue;
						if (rows * cols > 4096 &&
						    ((size_t)dist != (si + (size_t)rep) % D_N ||
						     pair % 3 != si % 3))
							continue;
						/* RHT runs of 16 down the columns: rows a multiple
						 * of 16 */
						if (xr->rht && cw && role != EMU_ROLE_WEIGHT &&
						    rows % 16)
							continue;
						uint64_t s = t_seed() ^ (0x9e3779b97f4a7c15ull *
						                         (++k + 1000 * _i));
						double *x = malloc((rows * cols + 1) * sizeof *x);
						ck_assert(x);
						fill(x, rows, cols, dist, s);
						run_one(spec, (emu_role)role, cw, x, rows, cols, s,
						        &t);
						free(x);
					}
	tally_done(&t, "");
}
END_TEST

/* ---- known answers from the sources ---- */
static void quantize_ok(const char *spec, emu_role role, bool colwise, const double *x, size_t rows,
                        size_t cols, emu_qtensor *q)
{
	emu_recipe r;
	parse_ok(spec, &r);
	memset(q, 0, sizeof *q);
	ck_assert(emu_quantize(&r, role, colwise, x, rows, cols, 1, q) == 0);
}

#define CK_BITS(a, b, ...) ck_assert_msg(same((a), (b)), __VA_ARGS__)

/* E2M1 RNE boundaries through nvfp4: a block of amax 6 in a tensor of amax
 * 2688 (S_enc = 1, t = 1) has d = 1, m = 1. */
START_TEST(test_e2m1_boundaries)
{
	init_formats();
	static const double in[16] = {6,    0.25, 0.75,  1.25, 1.75, 2.5,   3.5,   5,
	                              5.01, -5,   -0.25, 0.5,  1,    4.999, -2.75, 3};
	static const double want[16] = {6, 0, 1, 1, 2, 2, 4, 4, 6, -4, -0.0, 0.5, 1, 4, -3, 3};
	double x[32];
	memcpy(x, in, sizeof in);
	for (int j = 0; j < 16; j++)
		x[16 + j] = j == 0 ? 2688 : 1;
	emu_qtensor q;
	quantize_ok("nvfp4", EMU_ROLE_ACT, false, x, 1, 32, &q);
	CK_BITS(q.s_enc, 1.0, "S_enc %a", q.s_enc);
	CK_BITS(q.t, 1.0, "t %a", q.t);
	CK_BITS(q.d[0], 1.0, "d %a", q.d[0]);
	CK_BITS(q.m[0], 1.0, "m %a", q.m[0]);
	for (int j = 0; j < 16; j++)
		CK_BITS(q.q[j], want[j], "%g -> %g, want %g", in[j], q.q[j], want[j]);
	emu_qtensor_free(&q);
	t_count("recipe: known answers", 20);
}
END_TEST

/* OCP floor vs TE's round-up on a block of amax 957 (e4m3). */
START_TEST(test_957)
{
	init_formats();
	double x[32];
	for (int j = 0; j < 32; j++)
		x[j] = j == 5 ? 957 : 1;
	emu_qtensor q;
	quantize_ok("mxfp8:floor", EMU_ROLE_ACT, false, x, 1, 32, &q);
	CK_BITS(q.d[0], 2.0, "floor: X %a, want 2", q.d[0]);
	ck_assert_uint_eq(q.dcode[0], 128);
	CK_BITS(q.q[5], 448.0, "floor: 957/2 -> %g, want 448", q.q[5]);
	CK_BITS(q.deq[5], 896.0, "floor: deq %g, want 896", q.deq[5]);
	emu_qtensor_free(&q);
	quantize_ok("mxfp8", EMU_ROLE_ACT, false, x, 1, 32, &q);
	CK_BITS(q.d[0], 4.0, "rceil: X %a, want 4", q.d[0]);
	ck_assert_uint_eq(q.dcode[0], 129);
	CK_BITS(q.m[0], 0.25, "rceil: m %a", q.m[0]);
	CK_BITS(q.q[5], 240.0, "rceil: 957/4 -> %g, want 240", q.q[5]);
	CK_BITS(q.deq[5], 960.0, "rceil: deq %g, want 960", q.deq[5]);
	emu_qtensor_free(&q);
	t_count("recipe: known answers", 10);
}
END_TEST

/* amax = 0: each source's rule */
START_TEST(test_zero_blocks)
{
	init_formats();
	double x[256];
	memset(x, 0, sizeof x);
	emu_qtensor q;
	/* TE MXFP8: fp32(0·(1/448)) = 0 -> code 0 (2^-127), exp2f_rcp(0) = 1 */
	quantize_ok("mxfp8", EMU_ROLE_ACT, false, x, 1, 32, &q);
	ck_assert_uint_eq(q.dcode[0], 0);
	CK_BITS(q.d[0], 0x1p-127, "mxfp8 zero block d %a", q.d[0]);
	CK_BITS(q.m[0], 1.0, "mxfp8 zero block m %a", q.m[0]);
	CK_BITS(q.deq[0], 0.0, "deq %a", q.deq[0]);
	emu_qtensor_free(&q);
	/* microxcaling: amax 0 read as FLT_MIN, 2^(-126-8) clamped to 2^-127 */
	quantize_ok("mxfp8:floor", EMU_ROLE_ACT, false, x, 1, 32, &q);
	ck_assert_uint_eq(q.dcode[0], 0);
	CK_BITS(q.d[0], 0x1p-127, "floor zero block d %a", q.d[0]);
	CK_BITS(q.m[0], 0x1p127, "floor zero block m %a", q.m[0]);
	emu_qtensor_free(&q);
	/* NVFP4: tensor amax 0 -> S_enc 1; block d 0, multiplier FLT_MAX */
	quantize_ok("nvfp4", EMU_ROLE_ACT, false, x, 1, 16, &q);
	CK_BITS(q.s_enc, 1.0, "S_enc %a", q.s_enc);
	CK_BITS(q.d[0], 0.0, "nvfp4 zero block d %a", q.d[0]);
	ck_assert_uint_eq(q.dcode[0], 0);
	CK_BITS(q.m[0], (double)0x1.fffffep127, "nvfp4 zero block m %a", q.m[0]);
	CK_BITS(q.deq[3], 0.0, "deq %a", q.deq[3]);
	emu_qtensor_free(&q);
	/* DeepGEMM: a' = 1e-4 */
	quantize_ok("deepseek", EMU_ROLE_ACT, false, x, 1, 128, &q);
	CK_BITS(q.m[0], f32div(448, f32(1e-4)), "deepseek zero m %a", q.m[0]);
	CK_BITS(q.d[0], f32div(f32(1e-4), 448), "deepseek zero d %a", q.d[0]);
	emu_qtensor_free(&q);
	/* TE pow2: amax 0 -> scale 1 */
	quantize_ok("deepseek:pow2", EMU_ROLE_ACT, false, x, 1, 128, &q);
	CK_BITS(q.m[0], 1.0, "pow2 zero m %a", q.m[0]);
	CK_BITS(q.d[0], 1.0, "pow2 zero d %a", q.d[0]);
	emu_qtensor_free(&q);
	/* UE8M0: 2^ceil(log2(fp32(1e-4)/448)) = 2^-22 */
	quantize_ok("deepseek:ue8m0", EMU_ROLE_ACT, false, x, 1, 128, &q);
	CK_BITS(q.d[0], 0x1p-22, "ue8m0 zero d %a", q.d[0]);
	CK_BITS(q.m[0], 0x1p22, "ue8m0 zero m %a", q.m[0]);
	emu_qtensor_free(&q);
	t_count("recipe: known answers", 22);
}
END_TEST

/* NaN and inf blocks under TE MXFP8. TE's kernels take the amax with fmaxf,
 * which skips a NaN element: the block of 1..32 with a NaN keeps the scale
 * of 32 (code 124, 2^-3) and only the NaN element is NaN. With the amax
 * rule of torch.amax (amax=nan) the block's amax is NaN: code 0xFF,
 * multiplier __int_as_float((254 - 255) << 23) = -inf; an inf block gives
 * 0xFE, multiplier __int_as_float(0) = +0 (ptx.cuh exp2f_rcp). */
START_TEST(test_special_blocks)
{
	init_formats();
	double x[64];
	for (int j = 0; j < 64; j++)
		x[j] = 1 + j;
	x[3] = NAN;
	x[40] = INFINITY;
	emu_qtensor q;
	quantize_ok("mxfp8", EMU_ROLE_ACT, false, x, 1, 64, &q);
	ck_assert_uint_eq(q.dcode[0], 124);
	CK_BITS(q.m[0], 0x1p3, "NaN-holding block m %a (fmaxf skips the NaN)", q.m[0]);
	ck_assert_msg(emu_is_nan(E4M3, q.code[3]), "the NaN element: 0x%x", q.code[3]);
	ck_assert_uint_eq(q.code[4], 0x62); /* 5 · 8 = 40 = 1.25·2^5 in e4m3 */
	ck_assert_uint_eq(q.dcode[1], 0xfe);
	emu_qtensor_free(&q);
	quantize_ok("mxfp8,amax=nan", EMU_ROLE_ACT, false, x, 1, 64, &q);
	ck_assert_uint_eq(q.dcode[0], 0xff);
	ck_assert_uint_eq(q.dcode[1], 0xfe);
	ck_assert_msg(isnan(q.d[0]), "NaN block d %a", q.d[0]);
	CK_BITS(q.d[1], 0x1p127, "inf block d %a", q.d[1]);
	CK_BITS(q.m[0], -INFINITY, "NaN block m %a (exp2f_rcp(0xff))", q.m[0]);
	CK_BITS(q.m[1], 0.0, "inf block m %a (exp2f_rcp(0xfe))", q.m[1]);
	emu_qtensor_free(&q);
	/* floor: NaN amax -> NaN scale (0xFF) (inf: test_source_floor_inf) */
	quantize_ok("mxfp8:floor", EMU_ROLE_ACT, false, x, 1, 64, &q);
	ck_assert_uint_eq(q.dcode[0], 0xff);
	ck_assert_msg(isnan(q.d[0]), "floor NaN block d %a", q.d[0]);
	emu_qtensor_free(&q);
	t_count("recipe: known answers", 10);
}
END_TEST

/* ---- emu_round_sr_bits ---- */
static const char *const SR_FMTS[] = {"e4m3", "e5m2", "e2m1", "e3m2", "e2m3", "bf16", "fp16"};

START_TEST(test_sr_bits_definition)
{
	init_formats();
	uint64_t total = 0, bad = 0, flags_bad = 0, sign_bad = 0;
	char first[320] = "", first_flags[320] = "";
	uint64_t per = t_quick() ? 2000 : 20000;
	for (size_t fi = 0; fi < ARRAY_SIZE(SR_FMTS); fi++) {
		const emu_format *f = t_fmt(SR_FMTS[fi]);
		for (int nbits = 1; nbits <= 32; nbits++)
			for (uint64_t i = 0; i < per / 8; i++) {
				uint64_t key = (fi * 64 + (uint64_t)nbits) * 1000003 + i;
				/* an fp32 value within and around f's range */
				double v =
				    ldexp(normal(key, 1), (int)(t_rand(key, 2) %
				                                (uint64_t)(f->emax - f->emin + 8)) +
				                              f->emin - 4);
				v = f32(v);
				bool sat = t_rand(key, 3) & 1;
				uint64_t seed = t_rand(key, 4), index = t_rand(key, 5);
				unsigned fl = 0, rfl = 0;
				double got = emu_round_sr_bits(f, v, nbits, sat, seed, index, &fl);
				mpfr_t z;
				mpfr_init2(z, 64);
				mpfr_set_d(z, v, MPFR_RNDN);
				uint32_t u = emu_sr_bits(seed, index) >> (32 - nbits);
				rv want = rnd(f, z, EMU_SR, sat, nbits, u, &rfl);
				mpfr_clear(z);
				emu_bits gb = emu_encode(f, got);
				bool ok = same(got, want.v), nan_sign = false;
				if (nbits == 32) { /* n = 32 is EMU_SR */
					emu_env env = EMU_ENV_DEFAULT;
					env.mode = EMU_SR;
					env.sat = sat;
					env.seed = seed;
					env.index = index;
					emu_result er = emu_from_double(f, v, &env);
					ok = ok && er.bits == gb && er.flags == rfl;
					nan_sign = er.bits != gb && isnan(got);
				}
				nan_sign = nan_sign || (isnan(got) && gb != want.b);
				if (nan_sign || (same(got, want.v) && fl != rfl)) {
					ok = false; /* the NaN's sign and the flags count too */
					sign_bad += nan_sign;
					if (flags_bad++ == 0)
						snprintf(
						    first_flags, sizeof first_flags,
						    "%s n=%d sat=%d v=%a u=0x%x: 0x%x flags 0x%x, "
						    "definition 0x%x flags 0x%x",
						    f->name, nbits, sat, v, u, gb, fl, want.b, rfl);
				}
				total++;
				if (!ok && bad++ == 0)
					snprintf(first, sizeof first,
					         "%s n=%d sat=%d v=%a u=0x%x: got %a flags 0x%x, "
					         "definition %a flags 0x%x",
					         f->name, nbits, sat, v, u, got, fl, want.v, rfl);
			}
	}
	t_count("recipe: emu_round_sr_bits against its definition", total);
	ck_assert_msg(flags_bad == 0,
	              "%" PRIu64 " of %" PRIu64 " differ in the NaN's sign (%" PRIu64
	              ") or the flags; first: %s",
	              flags_bad, total, sign_bad, first_flags);
	ck_assert_msg(bad == 0, "%" PRIu64 " of %" PRIu64 " values differ; first: %s", bad, total,
	              first);
}
END_TEST

/* 2-bit SR of 2.375 in e2m1 (grid 2, 3): F = 01, so it rounds up only for
 * u = 3 (probability 1/4), against the true fraction 3/8: mean signed error
 * −1/8 of an ulp. */
START_TEST(test_sr_bits_bias)
{
	const emu_format *f = t_fmt("e2m1");
	int n = t_quick() ? 20000 : 100000;
	double sum = 0, sum32 = 0, sumq = 0;
	for (int i = 0; i < n; i++) {
		unsigned fl = 0;
		sum += emu_round_sr_bits(f, 2.375, 2, true, t_seed(), (uint64_t)i, &fl) - 2.375;
		/* exactly a quarter above: F = 01 is the whole fraction, unbiased */
		sumq += emu_round_sr_bits(f, 2.25, 2, true, t_seed(), (uint64_t)i, &fl) - 2.25;
		sum32 += emu_round_sr_bits(f, 2.375, 32, true, t_seed(), (uint64_t)i, &fl) - 2.375;
	}
	double mean = sum / n, mean32 = sum32 / n, se = 0.5 / sqrt(n);
	ck_assert_msg(mean < -0.125 + 4 * se && mean > -0.125 - 4 * se,
	              "2-bit SR mean error %g ulp, expected -1/8", mean);
	ck_assert_msg(fabs(mean32) < 4 * se, "32-bit SR mean error %g ulp, expected 0", mean32);
	ck_assert_msg(fabs(sumq / n) < 4 * se, "2-bit SR of 2.25: mean error %g ulp, expected 0",
	              sumq / n);
	t_count("recipe: SR bias draws", 3 * (uint64_t)n);
}
END_TEST

/* Every encoding of every element format comes back as itself through a
 * recipe without a scale: the element codes (emu_quantize's fast encoder)
 * against the format's own bits, NaNs aside (one produced NaN). */
START_TEST(test_codes_every_value)
{
	static const char *const fmts[] = {"fp16", "bf16", "e4m3", "e5m2", "e4m3fnuz",
	                                   "e5m2fnuz", "e3m2", "e2m3", "e2m1"};
	uint64_t n_all = 0;
	for (size_t k = 0; k < ARRAY_SIZE(fmts); k++) {
		const emu_format *f = t_fmt(fmts[k]);
		char spec[64];
		snprintf(spec, sizeof spec, "elem=%s,rule=none,sat=no", fmts[k]);
		size_t n = (size_t)1 << f->bits;
		double *x = malloc(n * sizeof *x);
		emu_bits *want = malloc(n * sizeof *want);
		ck_assert(x && want);
		size_t m = 0;
		for (size_t b = 0; b < n; b++) {
			if (emu_is_nan(f, (emu_bits)b))
				continue;
			x[m] = emu_decode(f, (emu_bits)b);
			want[m++] = (emu_bits)b;
		}
		emu_qtensor q;
		quantize_ok(spec, EMU_ROLE_ACT, false, x, 1, m, &q);
		for (size_t i = 0; i < m; i++)
			ck_assert_msg(q.code[i] == want[i], "%s: value %a: code 0x%x, want 0x%x", fmts[k],
			              x[i], q.code[i], want[i]);
		emu_qtensor_free(&q);
		free(x);
		free(want);
		n_all += m;
	}
	t_count("recipe: element codes of every value of every element format", n_all);
}
END_TEST

/* ---- the sources' rules where they were first read wrong ----
 * Each test below names the source line; the random comparison covers
 * these cases too. */

/* microxcaling mx/mx_ops.py _quantize_mx: shared_exp = floor(log2(max|A|))
 * is +inf for a block holding an inf, and "shared_exp[shared_exp >
 * scale_emax] = float("NaN")" makes the scale NaN (e8m0 0xFF). */
START_TEST(test_source_floor_inf)
{
	init_formats();
	double x[32];
	for (int j = 0; j < 32; j++)
		x[j] = j == 7 ? INFINITY : 1 + j;
	emu_qtensor q;
	quantize_ok("mxfp8:floor", EMU_ROLE_ACT, false, x, 1, 32, &q);
	emu_bits dc = q.dcode[0];
	double d = q.d[0];
	emu_qtensor_free(&q);
	ck_assert_msg(dc == 0xff && isnan(d),
	              "mxfp8:floor, block amax inf: scale 0x%x (%a); microxcaling "
	              "_quantize_mx gives NaN (0xff)",
	              dc, d);
}
END_TEST

/* TE transformer_engine/common/recipe/recipe_common.cuh
 * compute_scale_from_amax: "if (isinf(amax) || amax == 0.f ||
 * isnan(amax)) return scale;" with scale = 1.f, before the power-of-two
 * rounding. */
START_TEST(test_source_pow2_inf)
{
	init_formats();
	double x[128];
	for (int j = 0; j < 128; j++)
		x[j] = j == 9 ? -INFINITY : 0.5 + j;
	emu_qtensor q;
	quantize_ok("deepseek:pow2", EMU_ROLE_ACT, false, x, 1, 128, &q);
	double d = q.d[0], m = q.m[0], q0 = q.q[0];
	emu_qtensor_free(&q);
	ck_assert_msg(same(m, 1.0) && same(d, 1.0) && same(q0, 0.5),
	              "deepseek:pow2, block amax inf: m %a d %a (x 0.5 -> %a); TE "
	              "compute_scale_from_amax returns scale 1 for an infinite amax",
	              m, d, q0);
}
END_TEST

/* DeepGEMM deep_gemm/utils/math.py ceil_to_ue8m0: exp = ((bits >> 23) &
 * 0xFF) + (bits & 0x7FFFFF).bool() clamped to [1, 254]: a NaN sf
 * (0x7fc00000, from amax NaN: clamp(1e-4) keeps NaN) gives 2^127. */
START_TEST(test_source_ue8m0_nan)
{
	init_formats();
	double x[128];
	for (int j = 0; j < 128; j++)
		x[j] = j == 3 ? NAN : 0.5 + j;
	emu_qtensor q;
	quantize_ok("deepseek:ue8m0", EMU_ROLE_ACT, false, x, 1, 128, &q);
	double d = q.d[0], m = q.m[0];
	emu_qtensor_free(&q);
	ck_assert_msg(same(d, 0x1p127) && same(m, 0x1p-127),
	              "deepseek:ue8m0, block amax NaN: d %a m %a; DeepGEMM "
	              "ceil_to_ue8m0 gives 2^127 (exponent 256 clamped to 254)",
	              d, m);
}
END_TEST

/* A non-saturating e4m3 conversion of −inf (or a negative overflow): the
 * emulator's own rule (emu_from_double, emu/core/specialize.h
 * EMU_OVERFLOW_NAN_SIGNED; FACTS §2 "__NV_NOSAT: e4m3 overflow → NaN
 * 0x7F/0xFF") keeps the sign: 0xFF. */
START_TEST(test_source_nan_sign)
{
	init_formats();
	emu_recipe r;
	parse_ok("tensor", &r);
	double x[2] = {-INFINITY, 1};
	emu_qtensor q;
	memset(&q, 0, sizeof q);
	ck_assert(emu_quantize(&r, EMU_ROLE_ACT, false, x, 1, 2, 1, &q) == 0);
	emu_bits got = q.code[0];
	emu_qtensor_free(&q);
	emu_env env = EMU_ENV_DEFAULT;
	env.sat = r.sat;
	emu_result want = emu_from_double(&r.elem, -INFINITY, &env);
	ck_assert_msg(got == want.bits,
	              "tensor (%s, sat=%d): -inf -> 0x%x; emu_from_double gives 0x%x",
	              r.elem.name, r.sat, got, want.bits);
}
END_TEST

/* RHT copies hold x in bf16 (recipe.h step 1; FACTS §1: no double rounding
 * through float): x = 0x1.f2ffffab47bf6p-2 rounds once to bf16 0x1.f2p-2,
 * but through fp32 (0x1.f3p-2, a bf16 tie) to 0x1.f4p-2. */
START_TEST(test_source_rht_double_rounding)
{
	init_formats();
	double x[16] = {0};
	x[15] = 0x1.f2ffffab47bf6p-2;
	emu_qtensor q;
	quantize_ok("nvfp4", EMU_ROLE_ACT, true, x, 16, 1, &q);
	double y0 = q.x[0];
	emu_qtensor_free(&q);
	/* y_0 = (1/4)·s_15·H16[15][0]·bf16(x) = −bf16(x)/4 */
	ck_assert_msg(same(y0, -0x1.f2p-4),
	              "nvfp4 act colwise (RHT): x 0x1.f2ffffab47bf6p-2 gives y_0 %a; "
	              "bf16(x)·(−1/4) is -0x1.f2p-4 (through fp32 first: -0x1.f4p-4)",
	              y0);
}
END_TEST

/* The transform's sums where they need more than a double's 53 bits: a
 * column of 4, ±2^-22 and ±2^-(20+c) (bf16 values; the outputs are
 * ±1 ± 2^-24 ± 2^-(22+c): a tie in fp32 broken by a term below double
 * precision once c ≥ 32) and columns of 16 values spread over 40 to 50
 * octaves, against the MPFR reference of the forward transform
 * (column-wise); then the inverse (emu_recipe_unrht) of the same columns,
 * the spread ones with 30 significant bits (as q·d·t have), against fp32
 * of its exact sums. */
START_TEST(test_rht_wide_tiles)
{
	init_formats();
	enum { R = 16, C = 64 };
	double x[R * C] = {0};
	for (size_t c = 0; c < C; c++) {
		if (c < 48) {
			x[0 * C + c] = c & 1 ? -4 : 4;
			x[1 * C + c] = ldexp((c >> 1) & 1 ? -1 : 1, -22);
			x[2 * C + c] = ldexp((c >> 2) & 1 ? -1 : 1, -(int)(20 + c));
		} else {
			for (size_t r = 0; r < R; r++)
				x[r * C + c] =
				    ldexp(1 + (double)(r % 5) / 8, -(int)((r * (c - 38)) % 51));
		}
	}
	tally t;
	memset(&t, 0, sizeof t);
	run_one("nvfp4", EMU_ROLE_ACT, true, x, R, C, 5, &t);
	tally_done(&t, " (wide RHT tiles)");
	/* the inverse: y_i = fp32(Σ_j v_j·s_i·H_ij/4) down each column */
	emu_recipe r;
	parse_ok("nvfp4", &r);
	double v[R * C], y[R * C];
	for (size_t i = 0; i < R * C; i++) /* the ties as they are, the rest 30 bits */
		v[i] = i % C < 48 ? x[i]
		                  : x[i] * (1 + ldexp((double)(t_rand(77, i) % (1u << 29)), -29));
	memcpy(y, v, sizeof y);
	emu_recipe_unrht(&r, EMU_ROLE_ACT, true, y, R, C);
	mpfr_t sum, term;
	mpfr_inits2(2200, sum, term, (mpfr_ptr)0);
	uint64_t bad = 0;
	for (size_t c = 0; c < C; c++)
		for (int i = 0; i < R; i++) {
			mpfr_set_zero(sum, 1);
			for (int j = 0; j < R; j++) {
				mpfr_set_d(term, v[(size_t)j * C + c], MPFR_RNDN);
				mpfr_mul_d(term, term, RHT_SIGN[i] * h16(j, i) * 0.25, MPFR_RNDN);
				mpfr_add(sum, sum, term, MPFR_RNDN);
			}
			unsigned fl = 0;
			double want = rnd(F32, sum, EMU_RNE, false, 0, 0, &fl).v;
			if (!same(y[(size_t)i * C + c], want) && bad++ == 0)
				ck_abort_msg("unrht column %zu row %d: %a, MPFR %a", c, i,
				             y[(size_t)i * C + c], want);
		}
	mpfr_clears(sum, term, (mpfr_ptr)0);
	t_count("recipe: inverse RHT outputs against MPFR", R * C);
}
END_TEST

/* ---- parser ---- */
static bool fmt_eq(const emu_format *a, const emu_format *b)
{
	return !strcmp(a->name, b->name) && a->p == b->p && a->ebits == b->ebits &&
	       a->bias == b->bias && a->has_sign == b->has_sign && a->has_inf == b->has_inf &&
	       a->has_subnormals == b->has_subnormals && a->has_zero == b->has_zero &&
	       a->nan == b->nan;
}

static bool recipe_eq(const emu_recipe *a, const emu_recipe *b, char *why, size_t len)
{
#define FIELD(c, w)                                                                                \
	if (!(c)) {                                                                                \
		snprintf(why, len, "%s", w);                                                       \
		return false;                                                                      \
	}
	FIELD(fmt_eq(&a->elem, &b->elem), "elem");
	FIELD(fmt_eq(&a->scale_fmt, &b->scale_fmt), "scale_fmt");
	FIELD(a->rule == b->rule, "rule");
	FIELD(a->apply == b->apply, "apply");
	FIELD(a->scale_mode == b->scale_mode, "scale_mode");
	for (int k = 0; k < EMU_NROLES; k++) {
		FIELD(a->brows[k] == b->brows[k] && a->bcols[k] == b->bcols[k], "block");
		FIELD(a->elem_mode[k] == b->elem_mode[k], "elem_mode");
	}
	FIELD(a->sr_bits == b->sr_bits, "sr_bits");
	FIELD(a->sat == b->sat, "sat");
	FIELD(a->rht == b->rht && a->rht_all == b->rht_all, "rht");
	FIELD(same(a->fmax, b->fmax), "fmax");
	FIELD(same(a->tbound, b->tbound), "tbound");
	FIELD(same(a->amin, b->amin), "amin");
	FIELD(a->four_over_six == b->four_over_six, "4over6");
	FIELD(a->delayed_len == b->delayed_len && a->delayed_margin == b->delayed_margin,
	      "delayed");
	FIELD(a->ftz_scale == b->ftz_scale, "ftz_scale");
#undef FIELD
	return true;
}

START_TEST(test_parse_roundtrip)
{
	size_t n = 0;
	for (const char *const *p = emu_recipe_names; *p; p++, n++) {
		emu_recipe r, r2;
		parse_ok(*p, &r);
		char spec[1024];
		emu_recipe_spec(&r, spec, sizeof spec);
		char err[256] = "";
		ck_assert_msg(emu_recipe_parse(spec, &r2, err, sizeof err) == EMU_OK,
		              "%s: its spec '%s': %s", *p, spec, err);
		char why[64];
		ck_assert_msg(recipe_eq(&r, &r2, why, sizeof why),
		              "%s: spec '%s' parses back with another %s", *p, spec, why);
		ck_assert_msg(emu_recipe_describe(*p) != NULL, "%s: no description", *p);
	}
	/* every built-in of the sources is listed */
	for (size_t i = 0; i < ARRAY_SIZE(XR); i++) {
		bool found = false;
		for (const char *const *p = emu_recipe_names; *p; p++)
			found = found || !strcmp(*p, XR[i].name);
		ck_assert_msg(found, "%s: not among emu_recipe_names", XR[i].name);
	}
	t_count("recipe: built-ins parsed back from their spec", n);
}
END_TEST

/* the built-ins' fields as the sources define them */
START_TEST(test_builtin_fields)
{
	init_formats();
	const xrecipe *xr = &XR[_i];
	emu_recipe r;
	parse_ok(xr->name, &r);
	if (xr->elem)
		ck_assert_msg(!strcmp(r.elem.name, xr->elem), "%s: elem %s, want %s", xr->name,
		              r.elem.name, xr->elem);
	ck_assert_msg(!strcmp(r.scale_fmt.name, xr->scale), "%s: scale %s, want %s", xr->name,
	              r.scale_fmt.name, xr->scale);
	ck_assert_msg(r.rule == xr->rule, "%s: rule %d, want %d", xr->name, (int)r.rule,
	              (int)xr->rule);
	for (int k = 0; k < EMU_NROLES; k++) {
		ck_assert_msg(r.brows[k] == xr->br[k] && r.bcols[k] == xr->bc[k],
		              "%s %s: block %dx%d, want %dx%d", xr->name,
		              emu_role_name((emu_role)k), r.brows[k], r.bcols[k], xr->br[k],
		              xr->bc[k]);
		emu_mode want = (k == EMU_ROLE_GRAD && xr->grad_sr) ? EMU_SR : EMU_RNE;
		ck_assert_msg(r.elem_mode[k] == want, "%s %s: rounding %s, want %s", xr->name,
		              emu_role_name((emu_role)k), emu_mode_name(r.elem_mode[k]),
		              emu_mode_name(want));
	}
	if (xr->grad_sr)
		ck_assert_msg(r.sr_bits == 32, "%s: sr_bits %d, want 32", xr->name, r.sr_bits);
	if (xr->elem)
		ck_assert_msg(r.sat, "%s: elements must saturate", xr->name);
	ck_assert_msg(r.rht == xr->rht && !r.rht_all, "%s: rht %d/%d, want %d/0", xr->name, r.rht,
	              r.rht_all, xr->rht);
	ck_assert_msg(r.fmax == 0 || same(r.fmax, r.elem.max), "%s: fmax %g", xr->name, r.fmax);
	if (xr->rule == EMU_RSCALE_NVFP4)
		ck_assert_msg(same(r.tbound, xr->tbound), "%s: tbound %g, want %g", xr->name,
		              r.tbound, xr->tbound);
	ck_assert_msg(r.four_over_six == xr->four, "%s: 4over6 %d, want %d", xr->name,
	              (int)r.four_over_six, (int)xr->four);
	if (xr->amin)
		ck_assert_msg(same(f32(r.amin), f32(xr->amin)), "%s: amin %a, want fp32(1e-4)",
		              xr->name, r.amin);
	if (xr->rule == EMU_RSCALE_E8M0_TE)
		ck_assert_msg(r.scale_mode == EMU_UP, "%s: ue8m0 rounding %s, want up", xr->name,
		              emu_mode_name(r.scale_mode));
	ck_assert_msg(!r.ftz_scale, "%s: ftz_scale on", xr->name);
	t_count("recipe: built-in fields against the sources", 1);
}
END_TEST

START_TEST(test_parse_errors)
{
	static const char *const bad[] = {
	    "nvfp5",           "mxfp8:e9m9",         "mxfp8,block=0x",  "mxfp8,foo=1",
	    "elem=nope",       "elem=e4m3,rule=wat", "nvfp4,sr_bits=0", "nvfp4,sr_bits=33",
	    "mxfp8,sat=maybe", "mxfp8,4over6=yes",
	    /* a key twice: the last one used to win (mxfp8 ran as e5m2) */
	    "mxfp8,elem=e4m3,elem=e5m2", "elem=e4m3,rule=none,rule=none"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		emu_recipe r;
		char err[256] = "";
		emu_status st = emu_recipe_parse(bad[i], &r, err, sizeof err);
		ck_assert_msg(st != EMU_OK, "'%s' parsed", bad[i]);
		ck_assert_msg(*err && !strchr(err, '\n'), "'%s': error not one line: '%s'", bad[i],
		              err);
		ck_assert_msg(strstr(err, bad[i]) != NULL,
		              "'%s': error does not name the spec: '%s'", bad[i], err);
	}
	emu_recipe r;
	char err[256] = "";
	ck_assert(emu_recipe_parse("", &r, err, sizeof err) != EMU_OK);
	ck_assert_msg(*err && !strchr(err, '\n'), "empty spec: '%s'", err);
	ck_assert(emu_recipe_parse("mxfp8,block=1x16,block=1x32", &r, err, sizeof err) != EMU_OK);
	ck_assert_msg(strstr(err, "key 'block' given twice") != NULL, "a key twice: '%s'", err);
	/* overriding a built-in's key is no repeat */
	ck_assert_msg(emu_recipe_parse("mxfp8,elem=e5m2", &r, err, sizeof err) == EMU_OK, "%s", err);
	ck_assert_str_eq(r.elem.name, "e5m2");
	t_count("recipe: bad specs rejected", ARRAY_SIZE(bad) + 3);
}
END_TEST

/* the reference's own rounding against the MPFR backend's conversion */
START_TEST(test_reference_rounding)
{
	init_formats();
	static const char *const fm[] = {"fp32", "bf16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1"};
	uint64_t n = 0, bad = 0;
	char first[256] = "";
	for (size_t fi = 0; fi < ARRAY_SIZE(fm); fi++) {
		const emu_format *f = t_fmt(fm[fi]);
		for (uint64_t i = 0; i < (t_quick() ? 2000u : 40000u); i++) {
			uint64_t key = fi * 1000003 + i;
			double v = ldexp(normal(key, 0), (int)(t_rand(key, 1) %
			                                       (uint64_t)(f->emax - f->emin + 10)) +
			                                     f->emin - 6);
			emu_env env = EMU_ENV_DEFAULT;
			env.sat = i & 1;
			env.mode = (i & 2) ? EMU_SR : EMU_RNE;
			env.seed = t_rand(key, 2);
			env.index = i;
			emu_result want = emu_mp_from_double(f, v, &env);
			mpfr_t z;
			mpfr_init2(z, 64);
			mpfr_set_d(z, v, MPFR_RNDN);
			unsigned fl = 0;
			rv got =
			    rnd(f, z, env.mode, env.sat, 32, emu_sr_bits(env.seed, env.index), &fl);
			mpfr_clear(z);
			n++;
			if ((got.b != want.bits || fl != want.flags) && bad++ == 0)
				snprintf(first, sizeof first,
				         "%s %a %s sat=%d: reference 0x%x 0x%x, backend 0x%x 0x%x",
				         f->name, v, emu_mode_name(env.mode), env.sat, got.b, fl,
				         want.bits, want.flags);
		}
	}
	t_count("recipe: reference rounding against the MPFR backend", n);
	ck_assert_msg(bad == 0, "%" PRIu64 " differ; first: %s", bad, first);
}
END_TEST

Suite *suite_recipe(void)
{
	Suite *s = suite_create("recipe");
	TCase *tc = tcase_create("reference");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_reference_rounding);
	suite_add_tcase(s, tc);
	tc = tcase_create("parse");
	tcase_add_test(tc, test_parse_roundtrip);
	tcase_add_loop_test(tc, test_builtin_fields, 0, (int)ARRAY_SIZE(XR));
	tcase_add_test(tc, test_parse_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("known");
	tcase_add_test(tc, test_e2m1_boundaries);
	tcase_add_test(tc, test_957);
	tcase_add_test(tc, test_zero_blocks);
	tcase_add_test(tc, test_special_blocks);
	suite_add_tcase(s, tc);
	tc = tcase_create("disagreement");
	tcase_add_test(tc, test_codes_every_value);
	tcase_add_test(tc, test_source_floor_inf);
	tcase_add_test(tc, test_source_pow2_inf);
	tcase_add_test(tc, test_source_ue8m0_nan);
	tcase_add_test(tc, test_source_nan_sign);
	tcase_add_test(tc, test_source_rht_double_rounding);
	tcase_add_test(tc, test_rht_wide_tiles);
	suite_add_tcase(s, tc);
	tc = tcase_create("sr_bits");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_sr_bits_definition, 0, 2);
	tcase_add_test(tc, test_sr_bits_bias);
	suite_add_tcase(s, tc);
	tc = tcase_create("random");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_random, 0, (int)ARRAY_SIZE(XR));
	suite_add_tcase(s, tc);
	return s;
}
