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

/* One block FMA: the products of a and b that sub-block j takes, plus c
 * when with_c; the result replaces c (c is not read when !with_c). */
static void tc_mp_block(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                        const emu_format *g, const emu_bits *a, const emu_bits *b, size_t n,
                        size_t j, tv *c, bool with_c, unsigned *flags)
{
	bool nan = with_c && c->kind == TK_NAN, pinf = false, ninf = false, invalid = false;
	bool any = false, zpos = false, zneg = false;
	long R = 0;
	tv x, y;
	mpfr_t p, sum;
	tv_init(&x, 32);
	tv_init(&y, 32);
	mpfr_init2(p, TERM_PREC);
	mpfr_init2(sum, SUM_PREC);

	if (!with_c)
		c->kind = TK_ZERO; /* the products alone; c's slot takes the result */
	else if (c->kind == TK_INF)
		*(c->neg ? &ninf : &pinf) = true;
	else if (c->kind == TK_ZERO)
		*(c->neg ? &zneg : &zpos) = true;
	else if (c->kind == TK_FIN) {
		/* csub=emin: C's exponent read at no less than the output's emin */
		R = tc_expo(c->v, m->c_emin && g->emin > FP32_EMIN ? g->emin : FP32_EMIN);
		any = true;
	}
	for (size_t i = 0; i < n; i++) {
		if (!tc_mp_takes(m, j, i))
			continue;
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
		} else if (x.kind == TK_ZERO || y.kind == TK_ZERO) {
			*(neg ? &zneg : &zpos) = true;
		} else {
			long E = tc_expo(x.v, in->emin) + tc_expo(y.v, inb->emin);
			if (!any || E > R)
				R = E;
			any = true;
		}
	}
	if (nan || invalid || (pinf && ninf)) {
		c->kind = TK_NAN;
		c->neg = false;
		if (invalid || (pinf && ninf))
			*flags |= EMU_FLAG_INVALID;
		goto done;
	}
	if (pinf || ninf) {
		c->kind = TK_INF;
		c->neg = ninf;
		goto done;
	}
	if (!any) {
		c->kind = TK_ZERO;
		c->neg = zneg && (!zpos || m->final_mode == EMU_DOWN);
		goto done;
	}
	if (m->exp_floor != EMU_TC_NO_FLOOR && R < m->exp_floor)
		R = m->exp_floor;
	long L = R - 23 - m->neab;
	bool chopped = false;
	mpfr_set_zero(sum, 1);
	if (with_c && c->kind == TK_FIN)
		tc_add_chopped(sum, c->v, L, &chopped);
	for (size_t i = 0; i < n; i++) {
		if (!tc_mp_takes(m, j, i))
			continue;
		tv_decode(&x, in, a[i]);
		tv_decode(&y, inb, b[i]);
		if (x.kind != TK_FIN || y.kind != TK_FIN)
			continue;
		mpfr_mul(p, x.v, y.v, MPFR_RNDN); /* exact in TERM_PREC */
		tc_add_chopped(sum, p, L, &chopped);
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
	mpfr_clears(p, sum, x.v, y.v, (mpfr_ptr)0);
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

static void tc_mp_chain(const emu_tc_model *m, const emu_format *in, const emu_format *inb,
                        const emu_format *g, const emu_bits *a, const emu_bits *b, size_t K, tv *c,
                        unsigned *flags)
{
	size_t k = (size_t)m->k, i = 0;
	tv r;
	tv_init(&r, SUM_PREC);
	do { /* every sub-block runs, even one a short last block leaves empty */
		size_t n = K - i < k ? K - i : k;
		if (m->c_late) {
			/* the sub-blocks chain from no C at all; C joins after the last */
			for (size_t j = 0; j < (size_t)m->split; j++)
				tc_mp_block(m, in, inb, g, a + i, b + i, n, j, &r, j > 0, flags);
			tc_mp_late_add(m, g, &r, c, flags);
		} else {
			for (size_t j = 0; j < (size_t)m->split; j++)
				tc_mp_block(m, in, inb, g, a + i, b + i, n, j, c, true, flags);
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
	const emu_format *fp32 = emu_format_by_name("fp32");
	const emu_env rne = EMU_ENV_DEFAULT;
	emu_format g = *out;
	unsigned flags = 0;
	emu_result res;
	if (emu_tc_check(m, in, out, NULL, 0) != EMU_OK ||
	    emu_tc_check(m, inb, out, NULL, 0) != EMU_OK || !fp32)
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
		tc_mp_chain(m, in, inb, &g, a, b, K, &acc, &flags);
		res = (emu_result){tv_encode(&acc, out), flags};
	} else {
		emu_bits sum = c32;
		for (size_t i = 0; i < K; i += m->promote_every) {
			size_t n = K - i < m->promote_every ? K - i : m->promote_every;
			acc.kind = TK_ZERO;
			acc.neg = false;
			tc_mp_chain(m, in, inb, &g, a + i, b + i, n, &acc, &flags);
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
