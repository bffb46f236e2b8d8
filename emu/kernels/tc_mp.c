/*
 * tc_mp.c — the Tensor Core model (emu/kernels/tc.h) computed with MPFR: the
 * reference that the integer implementation (emu/kernels/tc.c) is proven against.
 *
 * Written apart from tc.c and from the fast backend: operands are decoded
 * from the descriptor's fields straight into mpfr_t, each term is chopped by
 * MPFR (scale by 2^−L, mpfr_trunc, scale back), the block's terms are summed
 * in a precision that holds every sum exactly (checked: a nonzero ternary
 * aborts), and the block's one rounding is done the documented MPFR way
 * (round to p bits in a wide exponent range, which decides overflow and
 * tininess; then the format's range with mpfr_check_range and
 * mpfr_subnormalize). The result is encoded from the descriptor's fields.
 * The steps that are plain IEEE operations — C's pre-rounding, the binary32
 * promotion additions, the final conversion — go through the exact-format
 * MPFR backend (emu_mp_apply), never through the fast backend.
 *
 * MPFR's exponent range and flags are per thread (TLS builds, as Debian's);
 * they are saved on entry and restored on exit, so this file is thread-safe.
 */
#include <gmp.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>

#include "emu/core/emu.h"
#include "emu/core/specialize.h"
#include "emu/kernels/tc.h"

#define WIDE_EMIN (-(((mpfr_exp_t)1 << 30) - 1))
#define WIDE_EMAX (((mpfr_exp_t)1 << 30) - 1)
#define TERM_PREC 64 /* a product of two <= 24-bit significands */
#define SUM_PREC 160 /* > 25 + neab_max + log2(k_max + 1) bits */
#define FP32_EMIN (-126)

enum { TK_NAN, TK_INF, TK_ZERO, TK_FIN };

/* A value of the chain or an operand: its class and, when finite, v. */
typedef struct {
	int kind;
	bool neg;
	mpfr_t v;
} tv;

static void tv_init(tv *x, mpfr_prec_t prec)
{
	mpfr_init2(x->v, prec);
	x->kind = TK_ZERO;
	x->neg = false;
}

/* Decode encoding b of f from its fields. */
static void tv_decode(tv *x, const emu_format *f, emu_bits b)
{
	int m = f->p - 1;
	emu_bits width = f->bits >= 32 ? ~(emu_bits)0 : ((emu_bits)1 << f->bits) - 1;
	b &= width;
	emu_bits mag = b & ~f->sign_mask;
	bool nan = false;
	x->neg = f->has_sign && (b & f->sign_mask);
	switch (f->nan) {
	case EMU_NAN_IEEE:
		nan = (mag & f->exp_mask) == f->exp_mask && (!f->has_inf || (mag & f->man_mask));
		break;
	case EMU_NAN_FN:
		nan = mag == (f->exp_mask | f->man_mask);
		break;
	case EMU_NAN_FNUZ:
		nan = b == f->sign_mask;
		break;
	case EMU_NAN_NONE:
		break;
	}
	if (nan) {
		x->kind = TK_NAN;
		return;
	}
	if (f->has_inf && mag == f->inf_bits) {
		x->kind = TK_INF;
		return;
	}
	long e = (long)(mag >> m) - f->bias;
	unsigned long M = mag & f->man_mask;
	if (e >= f->emin) {
		mpfr_set_ui_2exp(x->v, M | (1ul << m), e - m, MPFR_RNDN);
	} else if (M != 0 && f->has_subnormals) {
		mpfr_set_ui_2exp(x->v, M, f->emin - m, MPFR_RNDN);
	} else {
		x->kind = TK_ZERO;
		return;
	}
	x->kind = TK_FIN;
	if (x->neg)
		mpfr_neg(x->v, x->v, MPFR_RNDN);
}

/* Encode a value of f (finite nonzero on f's grid, or a class) from the fields. */
static emu_bits tv_encode(const tv *x, const emu_format *f)
{
	emu_bits s = x->neg ? f->sign_mask : 0;
	int m = f->p - 1;
	switch (x->kind) {
	case TK_NAN:
		return f->nan_bits;
	case TK_INF:
		return s | f->inf_bits;
	case TK_ZERO:
		return s;
	default:
		break;
	}
	mpfr_t t;
	mpfr_init2(t, mpfr_get_prec(x->v));
	mpfr_abs(t, x->v, MPFR_RNDN);
	mpfr_exp_t e = mpfr_get_exp(t) - 1;
	emu_bits E, M;
	if (e >= f->emin) {
		mpfr_mul_2si(t, t, m - e, MPFR_RNDN);
		M = (emu_bits)mpfr_get_ui(t, MPFR_RNDN) - ((emu_bits)1 << m);
		E = (emu_bits)(e + f->bias);
	} else {
		mpfr_mul_2si(t, t, m - f->emin, MPFR_RNDN);
		M = (emu_bits)mpfr_get_ui(t, MPFR_RNDN);
		E = 0;
	}
	mpfr_clear(t);
	return s | (E << m) | M;
}

static mpfr_rnd_t tc_rnd(emu_mode m)
{
	switch (m) {
	case EMU_RTZ:
		return MPFR_RNDZ;
	case EMU_UP:
		return MPFR_RNDU;
	case EMU_DOWN:
		return MPFR_RNDD;
	default:
		return MPFR_RNDN;
	}
}

/* Round the exact nonzero y once to g (precision g->p, g's exponent range)
 * in mode md, as the model: overflow is ±inf, or ±max under sat. Result
 * into r. */
static void tc_round(const emu_tc_model *m, emu_mode md, const emu_format *g, mpfr_srcptr y, tv *r,
                     unsigned *flags)
{
	mpfr_rnd_t rnd = tc_rnd(md);
	bool neg = mpfr_signbit(y);
	mpfr_t r1, maxv;
	mpfr_init2(r1, g->p);
	mpfr_init2(maxv, 64);
	int t1 = mpfr_set(r1, y, rnd); /* step 1: p bits, unbounded exponent */
	mpfr_set_d(maxv, g->max, MPFR_RNDN);
	r->neg = neg;
	if (mpfr_cmpabs(r1, maxv) > 0) {
		*flags |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
		if (m->sat) {
			r->kind = TK_FIN;
			mpfr_set(r->v, maxv, MPFR_RNDN);
			if (neg)
				mpfr_neg(r->v, r->v, MPFR_RNDN);
		} else {
			r->kind = TK_INF;
		}
		goto done;
	}
	/* after rounding: |r1| < 2^emin; before: the exact |y| < 2^emin */
	bool tiny = mpfr_get_exp(EMU_TININESS == EMU_TININESS_AFTER_ROUNDING ? r1 : y) <= g->emin;
	int tz = t1;
	if (mpfr_get_exp(y) <= g->emin) { /* below 2^emin: the subnormal grid */
		mpfr_set_emin(g->emin - g->p + 2);
		mpfr_set_emax(g->emax + 1);
		tz = mpfr_check_range(r1, t1, rnd);
		tz = mpfr_subnormalize(r1, tz, rnd);
		mpfr_set_emin(WIDE_EMIN);
		mpfr_set_emax(WIDE_EMAX);
	}
	if (tz != 0)
		*flags |= tiny ? EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT : EMU_FLAG_INEXACT;
	if (mpfr_zero_p(r1)) {
		r->kind = TK_ZERO;
	} else {
		r->kind = TK_FIN;
		mpfr_set(r->v, r1, MPFR_RNDN);
	}
done:
	mpfr_clear(r1);
	mpfr_clear(maxv);
}

/* floor(log2|x|), at least lo. */
static long tc_expo(mpfr_srcptr x, long lo)
{
	long e = (long)mpfr_get_exp(x) - 1;
	return e < lo ? lo : e;
}

/* An operand's alignment exponent, a zero's −126 (zalign=1). */
static long tc_zexpo(const tv *x, long lo)
{
	return x->kind == TK_ZERO ? FP32_EMIN : tc_expo(x->v, lo);
}

/* Add x chopped toward zero to a multiple of 2^L into sum. */
static void tc_add_chopped(mpfr_ptr sum, mpfr_srcptr x, long L, bool *chopped)
{
	mpfr_t t;
	mpfr_init2(t, mpfr_get_prec(x));
	mpfr_mul_2si(t, x, -L, MPFR_RNDN); /* exact */
	if (mpfr_trunc(t, t) != 0)
		*chopped = true;
	mpfr_mul_2si(t, t, L, MPFR_RNDN);
	if (mpfr_add(sum, sum, t, MPFR_RNDN) != 0)
		abort(); /* SUM_PREC is too small: a programming error */
	mpfr_clear(t);
}

/* Whether sub-block j of a block (the model's split and group) takes the
 * product at block position i: i lies in the j-th of every split runs of
 * group products. */
static bool tc_mp_takes(const emu_tc_model *m, size_t j, size_t i)
{
	size_t run = i / (size_t)m->group;
	return run - run / (size_t)m->split * (size_t)m->split == j;
}

/* The magnitude of a scale (encoding x of f, its sign bit ignored): *v and
 * its alignment exponent *e (a zero: −126). False when it is NaN. */
static bool tc_mp_scale(const emu_format *f, emu_bits x, mpfr_ptr v, long *e)
{
	tv t;
	tv_init(&t, 32);
	tv_decode(&t, f, f->has_sign ? x & ~f->sign_mask : x);
	bool ok = t.kind != TK_NAN;
	if (t.kind == TK_FIN) {
		mpfr_set(v, t.v, MPFR_RNDN); /* exact: p <= 8 */
		*e = tc_expo(t.v, f->emin);
	} else {
		mpfr_set_zero(v, 1);
		*e = FP32_EMIN;
	}
	mpfr_clear(t.v);
	return ok;
}

/* What one term of a block is. */
typedef struct {
	bool nan, pinf, ninf, invalid; /* specials seen */
	bool zero, neg;                /* a finite term: zero or not, its sign */
	long E;                        /* its alignment exponent (zalign's, for a zero) */
} tc_mp_tinfo;

/* Term j of a block whose products start at absolute index off: product j
 * (times its scales) or, with gsum = G > 1, the exact sum of products
 * [jG, jG + G) times their group's scales, aligned at the scales' exponents
 * alone. Value into v (SUM_PREC); false when the term is not finite. */
static bool tc_mp_term(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                       const emu_tc_scales *sc, const emu_bits *a, const emu_bits *b, size_t n,
                       size_t off, size_t j, mpfr_ptr v, tc_mp_tinfo *ti)
{
	size_t G = m->gsum > 1 ? (size_t)m->gsum : 1;
	size_t i0 = j * G, i1 = i0 + G < n ? i0 + G : n;
	long es = 0;
	bool special = false, any = false, zneg = true;
	tv x, y;
	mpfr_t s0, s1, p;
	mpfr_inits2(16, s0, s1, (mpfr_ptr)0);
	mpfr_init2(p, TERM_PREC);
	mpfr_set_ui(s0, 1, MPFR_RNDN);
	mpfr_set_ui(s1, 1, MPFR_RNDN);
	if (sc) {
		long e0, e1;
		size_t k = (off + i0) / sc->block;
		if (!tc_mp_scale(sc->fmt, sc->sa[k], s0, &e0) ||
		    !tc_mp_scale(sc->fmt, sc->sb[k], s1, &e1)) {
			ti->nan = true;
			mpfr_clears(s0, s1, p, (mpfr_ptr)0);
			return false;
		}
		es = e0 + e1;
	}
	bool szero = mpfr_zero_p(s0) || mpfr_zero_p(s1);
	tv_init(&x, 32);
	tv_init(&y, 32);
	mpfr_set_zero(v, 1);
	for (size_t i = i0; i < i1; i++) {
		tv_decode(&x, in, a[i]);
		tv_decode(&y, inb, b[i]);
		bool neg = x.neg != y.neg;
		if (x.kind == TK_NAN || y.kind == TK_NAN) {
			ti->nan = special = true;
		} else if (x.kind == TK_INF || y.kind == TK_INF) {
			if (x.kind == TK_ZERO || y.kind == TK_ZERO || szero)
				ti->invalid = true;
			else
				*(neg ? &ti->ninf : &ti->pinf) = true;
			special = true;
		} else if (G == 1) {
			ti->neg = neg;
			ti->zero = x.kind == TK_ZERO || y.kind == TK_ZERO || szero;
			ti->E = tc_zexpo(&x, in->emin) + tc_zexpo(&y, inb->emin) + es;
			if (!ti->zero) {
				mpfr_mul(p, x.v, y.v, MPFR_RNDN); /* exact */
				mpfr_mul(p, p, s0, MPFR_RNDN);    /* exact: 24 + 24 + 8 + 8 bits */
				mpfr_mul(p, p, s1, MPFR_RNDN);
				mpfr_set(v, p, MPFR_RNDN);
			}
		} else if (x.kind == TK_ZERO || y.kind == TK_ZERO) {
			zneg = zneg && neg;
		} else {
			mpfr_mul(p, x.v, y.v, MPFR_RNDN);
			if (mpfr_add(v, v, p, MPFR_RNDN) != 0)
				abort(); /* SUM_PREC holds a group's sum: a programming error */
			any = true;
		}
	}
	if (!special && G > 1) {
		/* an exact zero sum: −0 only when every product is −0, or when
		 * rounding down cancels (IEEE) */
		ti->neg =
		    mpfr_zero_p(v) ? (any ? m->final_mode == EMU_DOWN : zneg) : mpfr_signbit(v);
		mpfr_mul(v, v, s0, MPFR_RNDN);
		mpfr_mul(v, v, s1, MPFR_RNDN);
		ti->zero = mpfr_zero_p(v);
		ti->E = es;
	}
	mpfr_clears(s0, s1, p, x.v, y.v, (mpfr_ptr)0);
	return !special;
}

/* One block FMA: the terms (products, or gsum's groups) of a and b that
 * sub-block j takes, plus c when with_c; the result replaces c (c is not
 * read when !with_c). off: the block's first product's index, for scales. */
static void tc_mp_block(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                        const emu_format *g, const emu_tc_scales *sc, const emu_bits *a,
                        const emu_bits *b, size_t n, size_t off, size_t j, tv *c, bool with_c,
                        unsigned *flags)
{
	bool any = false, zpos = false, zneg = false, anyz = false;
	long R = 0, Rz = 0;
	size_t G = m->gsum > 1 ? (size_t)m->gsum : 1, nt = (n + G - 1) / G;
	tc_mp_tinfo ti = {0};
	ti.nan = with_c && c->kind == TK_NAN;
	mpfr_t t, sum;
	mpfr_init2(t, SUM_PREC);
	mpfr_init2(sum, SUM_PREC);

	if (!with_c)
		c->kind = TK_ZERO; /* the products alone; c's slot takes the result */
	else if (c->kind == TK_INF)
		*(c->neg ? &ti.ninf : &ti.pinf) = true;
	else if (c->kind == TK_ZERO)
		*(c->neg ? &zneg : &zpos) = true;
	if (with_c && c->kind == TK_ZERO && m->zero_align) {
		Rz = FP32_EMIN; /* zalign=1: a zero counts as 2^-126 */
		anyz = true;
	} else if (with_c && c->kind == TK_FIN) {
		/* csub=emin: C's exponent read at no less than the output's emin */
		R = tc_expo(c->v, m->c_emin && g->emin > FP32_EMIN ? g->emin : FP32_EMIN);
		any = true;
	}
	for (size_t i = 0; i < nt; i++) {
		if ((G == 1 && !tc_mp_takes(m, j, i)) ||
		    !tc_mp_term(m, in, inb, sc, a, b, n, off, i, t, &ti))
			continue;
		if (ti.zero) {
			*(ti.neg ? &zneg : &zpos) = true;
			if (m->zero_align && (!anyz || ti.E > Rz)) {
				Rz = ti.E;
				anyz = true;
			}
		} else if (!any || ti.E > R) {
			R = ti.E;
			any = true;
		}
	}
	if (ti.nan || ti.invalid || (ti.pinf && ti.ninf)) {
		c->kind = TK_NAN;
		c->neg = false;
		if (ti.invalid || (ti.pinf && ti.ninf))
			*flags |= EMU_FLAG_INVALID;
		goto done;
	}
	if (ti.pinf || ti.ninf) {
		c->kind = TK_INF;
		c->neg = ti.ninf;
		goto done;
	}
	if (!any) {
		c->kind = TK_ZERO;
		c->neg = zneg && (!zpos || m->final_mode == EMU_DOWN);
		goto done;
	}
	if (anyz && Rz > R)
		R = Rz;
	if (m->exp_floor != EMU_TC_NO_FLOOR && R < m->exp_floor)
		R = m->exp_floor;
	long L = R - 23 - m->neab;
	bool chopped = false;
	mpfr_set_zero(sum, 1);
	if (with_c && c->kind == TK_FIN)
		tc_add_chopped(sum, c->v, L, &chopped);
	for (size_t i = 0; i < nt; i++) {
		if ((G == 1 && !tc_mp_takes(m, j, i)) ||
		    !tc_mp_term(m, in, inb, sc, a, b, n, off, i, t, &ti) || ti.zero)
			continue;
		tc_add_chopped(sum, t, L, &chopped);
	}
	if (chopped)
		*flags |= EMU_FLAG_INEXACT;
	if (mpfr_zero_p(sum)) {
		c->kind = TK_ZERO;
		c->neg = m->final_mode == EMU_DOWN;
		goto done;
	}
	tc_round(m, m->final_mode, g, sum, c, flags);
done:
	if (m->zero_pos && c->kind == TK_ZERO) /* zsign=pos */
		c->neg = false;
	mpfr_clears(t, sum, (mpfr_ptr)0);
}

/* c_late: c = round(r + c) with c_round; specials as a block's. */
static void tc_mp_late_add(const emu_tc_model *m, const emu_format *g, const tv *r, tv *c,
                           unsigned *flags)
{
	if (r->kind == TK_NAN || c->kind == TK_NAN) {
		c->kind = TK_NAN;
		c->neg = false;
		return;
	}
	if (r->kind == TK_INF || c->kind == TK_INF) {
		if (r->kind == TK_INF && c->kind == TK_INF && r->neg != c->neg) {
			c->kind = TK_NAN;
			c->neg = false;
			*flags |= EMU_FLAG_INVALID;
		} else if (r->kind == TK_INF) {
			c->kind = TK_INF;
			c->neg = r->neg;
		}
		return;
	}
	if (r->kind == TK_ZERO && c->kind == TK_ZERO) {
		c->neg = r->neg == c->neg ? r->neg : m->c_round == EMU_DOWN;
		return;
	}
	mpfr_t s;
	mpfr_init2(s, 320); /* binary32-range operands: the exact sum needs <= 278 bits */
	if (r->kind == TK_ZERO)
		mpfr_set(s, c->v, MPFR_RNDN);
	else if (c->kind == TK_ZERO)
		mpfr_set(s, r->v, MPFR_RNDN);
	else if (mpfr_add(s, r->v, c->v, MPFR_RNDN) != 0)
		abort();
	if (mpfr_zero_p(s)) {
		c->kind = TK_ZERO;
		c->neg = m->c_round == EMU_DOWN;
	} else {
		tc_round(m, m->c_round, g, s, c, flags);
	}
	mpfr_clear(s);
}

/* ---- AMD's accumulations (acc=fma, pairwise, rd) ---- */

/* Whether encoding b of f is subnormal, from the fields. */
static bool mp_subnormal(const emu_format *f, emu_bits b)
{
	return f->has_subnormals && (b & f->exp_mask) == 0 && (b & f->man_mask) != 0;
}

/* One IEEE step in out through the exact-format MPFR backend; ftz=1 then
 * flushes a subnormal result to a zero of its sign. */
static emu_bits mp_step(const emu_tc_model *m, const emu_format *out, emu_op op,
                        const emu_format *src, const emu_bits *args, unsigned *flags)
{
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = m->final_mode;
	env.sat = m->sat;
	emu_result r = emu_mp_apply(op, out, src, args, &env);
	*flags |= r.flags;
	if (m->ftz && mp_subnormal(out, r.bits)) {
		*flags |= EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT;
		r.bits &= out->sign_mask;
	}
	return r.bits;
}

/* An operand in out; ftz=1 reads a subnormal as +0. */
static emu_bits mp_operand(const emu_tc_model *m, const emu_format *out, const emu_format *f,
                           emu_bits x, unsigned *flags)
{
	if (m->ftz && mp_subnormal(f, x))
		return 0;
	emu_tc_model exact = *m;
	exact.ftz = false; /* the conversion is exact */
	return mp_step(&exact, out, EMU_OP_CVT, f, &x, flags);
}

/* acc=pairwise: the first half's sum plus the second's, a product being an
 * fma into +0. */
static emu_bits mp_pairwise(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                            const emu_format *out, const emu_bits *a, const emu_bits *b, size_t n,
                            unsigned *flags)
{
	emu_bits args[3] = {0, 0, 0};
	if (n == 1) {
		args[0] = mp_operand(m, out, in, a[0], flags);
		args[1] = mp_operand(m, out, inb, b[0], flags);
		return mp_step(m, out, EMU_OP_FMA, NULL, args, flags);
	}
	size_t h = n / 2;
	args[0] = mp_pairwise(m, in, inb, out, a, b, h, flags);
	args[1] = mp_pairwise(m, in, inb, out, a + h, b + h, n - h, flags);
	return mp_step(m, out, EMU_OP_ADD, NULL, args, flags);
}

/* x floored to a multiple of 2^L, in place. */
static void mp_floor_to(mpfr_ptr x, long L, bool *lost)
{
	mpfr_mul_2si(x, x, -L, MPFR_RNDN);
	if (mpfr_floor(x, x) != 0)
		*lost = true;
	mpfr_mul_2si(x, x, L, MPFR_RNDN);
}

/* acc=rd, one block (tc.h; docs/tensor-cores.md), c in and out. */
static void tc_mp_block_rd(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                           const emu_format *g, const emu_bits *a, const emu_bits *b, size_t n,
                           tv *c, unsigned *flags)
{
	size_t halves = (size_t)m->split;
	long nb = 23 + m->neab;
	bool nan = c->kind == TK_NAN, pinf = c->kind == TK_INF && !c->neg;
	bool ninf = c->kind == TK_INF && c->neg, invalid = false, povf = false, novf = false;
	bool any[2] = {false, false}, lost = false;
	long R[2] = {0, 0};
	tv x, y;
	mpfr_t p, S[2], T;
	tv_init(&x, 32);
	tv_init(&y, 32);
	mpfr_init2(p, TERM_PREC);
	mpfr_inits2(SUM_PREC, S[0], S[1], T, (mpfr_ptr)0);
	mpfr_set_zero(S[0], 1);
	mpfr_set_zero(S[1], 1);
	for (size_t i = 0; i < n; i++) {
		tv_decode(&x, in, a[i]);
		tv_decode(&y, inb, b[i]);
		bool neg = x.neg != y.neg;
		if (x.kind == TK_NAN || y.kind == TK_NAN) {
			nan = true;
		} else if (x.kind == TK_INF || y.kind == TK_INF) {
			if (x.kind == TK_ZERO || y.kind == TK_ZERO)
				invalid = true;
			else
				*(neg ? &ninf : &pinf) = true;
		} else if (x.kind == TK_FIN && y.kind == TK_FIN) {
			mpfr_mul(p, x.v, y.v, MPFR_RNDN); /* exact */
			if (mpfr_cmp_ui_2exp(p, 1, 128) >= 0 || mpfr_cmp_si_2exp(p, -1, 128) <= 0)
				*(neg ? &novf : &povf) = true;
		}
	}
	if (nan || invalid || (pinf && ninf)) {
		c->kind = TK_NAN;
		c->neg = false;
		if (invalid || (pinf && ninf))
			*flags |= EMU_FLAG_INVALID;
		goto done;
	}
	if (pinf || ninf || povf || novf) {
		if (!pinf && !ninf && povf && novf) {
			c->kind = TK_NAN;
			c->neg = false;
			*flags |= EMU_FLAG_INVALID;
			goto done;
		}
		c->neg = pinf || ninf ? ninf : novf;
		c->kind = TK_INF;
		if (!pinf && !ninf) { /* an overflowing product */
			*flags |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
			if (m->sat) {
				c->kind = TK_FIN;
				mpfr_set_d(c->v, c->neg ? -g->max : g->max, MPFR_RNDN);
			}
		}
		goto done;
	}
	/* the alignment exponent of each half, then its fused sum */
	for (size_t i = 0; i < n; i++) {
		tv_decode(&x, in, a[i]);
		tv_decode(&y, inb, b[i]);
		if ((x.kind != TK_FIN || y.kind != TK_FIN) && !m->zero_align)
			continue;
		long E = tc_zexpo(&x, in->emin) + tc_zexpo(&y, inb->emin);
		size_t h = i % halves;
		if (!any[h] || E > R[h])
			R[h] = E;
		any[h] = true;
	}
	for (size_t i = 0; i < n; i++) {
		tv_decode(&x, in, a[i]);
		tv_decode(&y, inb, b[i]);
		if (x.kind != TK_FIN || y.kind != TK_FIN)
			continue;
		mpfr_mul(p, x.v, y.v, MPFR_RNDN);
		tc_add_chopped(S[i % halves], p, R[i % halves] - nb, &lost);
	}
	bool anyp = any[0] || any[1];
	long Rp = any[0] ? R[0] : R[1];
	if (any[0] && any[1]) {
		Rp = R[0] > R[1] ? R[0] : R[1];
		mp_floor_to(S[0], Rp - nb, &lost);
		mp_floor_to(S[1], Rp - nb, &lost);
	}
	if (mpfr_add(S[0], S[0], S[1], MPFR_RNDN) != 0)
		abort();
	bool anyc = c->kind == TK_FIN || (c->kind == TK_ZERO && m->zero_align);
	long ec = c->kind == TK_FIN ? tc_expo(c->v, FP32_EMIN) : FP32_EMIN;
	if (!anyp && !anyc) {
		c->kind = TK_ZERO;
		c->neg = false;
		goto done;
	}
	long maxe = !anyp ? ec : !anyc || Rp > ec ? Rp : ec;
	mp_floor_to(S[0], maxe - 31, &lost);
	mpfr_set_zero(T, 1);
	if (c->kind == TK_FIN) {
		mpfr_set(T, c->v, MPFR_RNDN);
		if (halves == 2 && anyp && ec < maxe - 25) {
			mpfr_set_zero(T, 1);
			lost = true;
		} else {
			mp_floor_to(T, maxe - 24, &lost);
		}
	}
	if (mpfr_add(T, T, S[0], MPFR_RNDN) != 0)
		abort();
	if (lost)
		*flags |= EMU_FLAG_INEXACT;
	if (mpfr_zero_p(T)) {
		c->kind = TK_ZERO;
		c->neg = false;
	} else {
		tc_round(m, m->final_mode, g, T, c, flags);
	}
done:
	mpfr_clears(p, S[0], S[1], T, x.v, y.v, (mpfr_ptr)0);
}

/* One block of the AMD kinds: c in and out. */
static void tc_mp_block_amd(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                            const emu_format *out, const emu_bits *a, const emu_bits *b, size_t n,
                            tv *c, unsigned *flags)
{
	if (m->acc == EMU_TC_ACC_RD) {
		tc_mp_block_rd(m, in, inb, out, a, b, n, c, flags);
	} else {
		emu_bits acc = tv_encode(c, out);
		if (m->ftz && c->kind != TK_NAN && (acc & out->exp_mask) == 0)
			acc = 0; /* a zero or subnormal C reads as +0 */
		if (m->acc == EMU_TC_ACC_FMA) {
			for (size_t i = 0; i < n; i++) {
				emu_bits args[3] = {mp_operand(m, out, in, a[i], flags),
				                    mp_operand(m, out, inb, b[i], flags), acc};
				acc = mp_step(m, out, EMU_OP_FMA, NULL, args, flags);
			}
		} else if (n > 0) {
			emu_bits args[2] = {acc, mp_pairwise(m, in, inb, out, a, b, n, flags)};
			acc = mp_step(m, out, EMU_OP_ADD, NULL, args, flags);
		}
		tv_decode(c, out, acc);
	}
	if (m->zero_pos && c->kind == TK_ZERO)
		c->neg = false;
}

static void tc_mp_chain(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                        const emu_format *g, const emu_tc_scales *sc, const emu_bits *a,
                        const emu_bits *b, size_t K, size_t off, tv *c, unsigned *flags)
{
	size_t k = (size_t)m->k, i = 0;
	tv r;
	tv_init(&r, SUM_PREC);
	do { /* every sub-block runs, even one a short last block leaves empty */
		size_t n = K - i < k ? K - i : k;
		if (m->acc != EMU_TC_ACC_BLOCK) {
			tc_mp_block_amd(m, in, inb, g, a + i, b + i, n, c, flags);
		} else if (m->c_late) {
			/* the sub-blocks chain from no C at all; C joins after the last */
			for (size_t j = 0; j < (size_t)m->split; j++)
				tc_mp_block(m, in, inb, g, sc, a + i, b + i, n, off + i, j, &r,
				            j > 0, flags);
			tc_mp_late_add(m, g, &r, c, flags);
		} else {
			for (size_t j = 0; j < (size_t)m->split; j++)
				tc_mp_block(m, in, inb, g, sc, a + i, b + i, n, off + i, j, c, true,
				            flags);
		}
		i += n;
	} while (i < K);
	mpfr_clear(r.v);
}

emu_result emu_tc_mp_dot(const emu_tc_model *m, const emu_format *in, const emu_format *out,
                         const emu_bits *a, const emu_bits *b, size_t K, emu_bits c)
{
	return emu_tc_mp_dot2(m, in, in, out, a, b, K, c);
}

emu_result emu_tc_mp_dot2(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                          const emu_format *out, const emu_bits *a, const emu_bits *b, size_t K,
                          emu_bits c)
{
	return emu_tc_mp_dot_scaled(m, in, inb, out, a, b, K, c, NULL);
}

emu_result emu_tc_mp_dot_scaled(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                                const emu_format *out, const emu_bits *a, const emu_bits *b,
                                size_t K, emu_bits c, const emu_tc_scales *sc)
{
	const emu_format *fp32 = emu_format_by_name("fp32");
	const emu_env rne = EMU_ENV_DEFAULT;
	emu_format g = *out;
	unsigned flags = 0;
	emu_result res;
	if (emu_tc_check(m, in, out, NULL, 0) != EMU_OK ||
	    emu_tc_check(m, inb, out, NULL, 0) != EMU_OK || !fp32 ||
	    (sc && emu_tc_check_scales(m, sc, NULL, 0) != EMU_OK))
		return (emu_result){out->nan_bits, EMU_FLAG_INVALID};
	if (m->block_prec) {
		g.p = m->block_prec;
		if (emu_format_init(&g) != EMU_OK)
			return (emu_result){out->nan_bits, EMU_FLAG_INVALID};
	}

	mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
	mpfr_flags_t saved = mpfr_flags_save();
	mpfr_set_emin(WIDE_EMIN);
	mpfr_set_emax(WIDE_EMAX);

	emu_bits c32 = c;
	if (m->c_preround) {
		emu_result r = emu_mp_apply(EMU_OP_CVT, out, fp32, &c, &rne);
		flags |= r.flags;
		c32 = emu_mp_apply(EMU_OP_CVT, fp32, out, &r.bits, &rne).bits;
	}
	tv acc;
	tv_init(&acc, SUM_PREC);
	if (m->promote_every == 0) {
		tv_decode(&acc, fp32, c32);
		tc_mp_chain(m, in, inb, &g, sc, a, b, K, 0, &acc, &flags);
		res = (emu_result){tv_encode(&acc, out), flags};
	} else {
		emu_bits sum = c32;
		for (size_t i = 0; i < K; i += m->promote_every) {
			size_t n = K - i < m->promote_every ? K - i : m->promote_every;
			acc.kind = TK_ZERO;
			acc.neg = false;
			tc_mp_chain(m, in, inb, &g, sc, a + i, b + i, n, i, &acc, &flags);
			emu_bits part[2] = {sum, 0};
			emu_bits po = tv_encode(&acc, out);
			part[1] = emu_mp_apply(EMU_OP_CVT, fp32, out, &po, &rne).bits; /* exact */
			emu_result s = emu_mp_apply(EMU_OP_ADD, fp32, NULL, part, &rne);
			flags |= s.flags;
			sum = s.bits;
		}
		res = emu_mp_apply(EMU_OP_CVT, out, fp32, &sum, &rne);
		res.flags |= flags;
	}
	mpfr_clear(acc.v);
	/* nan=ones: the NaN's payload all ones, sign clear */
	emu_bits mag = res.bits & ~out->sign_mask;
	if (m->nan_ones && mag > out->exp_mask && (mag & out->exp_mask) == out->exp_mask)
		res.bits = out->exp_mask | out->man_mask;

	mpfr_set_emin(emin);
	mpfr_set_emax(emax);
	mpfr_flags_restore(saved, MPFR_FLAGS_ALL);
	return res;
}
