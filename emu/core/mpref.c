/*
 * mpref.c — the exact-format MPFR reference backend (emu_mp_*).
 *
 * Independent of the fast backend by construction: operands are decoded from
 * the descriptor's fields straight into mpfr_t and results are encoded from
 * mpfr_t; nothing here calls emu_decode, emu_encode or the rounding core
 * (only emu_sr_bits, which *defines* the SR random bits).
 *
 * How one result is made (docs/numerics.md is the specification):
 *  1. decode the operands exactly (daz: subnormal encodings read as ±0);
 *  2. NaN, infinite and exactly-zero results are settled by the IEEE rules;
 *  3. a finite nonzero result y is computed by MPFR with MPFR_RNDZ at
 *     wp = max(64, p+40) bits in a wide exponent range and made
 *     round-to-odd (a nonzero ternary forces the last bit to 1). Rounding
 *     that y to any q <= wp-2 bits, in rne, rna or a directed mode, gives the
 *     rounding of the exact value (Boldo & Melquiond, "Emulation of FMA and
 *     correctly rounded sums: proved algorithms using rounding to odd"). For
 *     SR, wp-q >= 33 keeps the first 32 bits of the discarded fraction exact
 *     and the last bit says whether anything follows them, which is all that
 *     "frac·2^32 > u" needs. So div, sqrt, exp, log, exp2 and rsqrt are
 *     exact-enough without Ziv loops: MPFR's ternary values are exact;
 *  4. step 1 (decides overflow and tininess): y rounded to p bits with the
 *     wide exponent range;
 *  5. the final value: rne/rtz/up/down the documented MPFR way — the step-1
 *     value and its ternary, emin = emin_fmt−p+2 and emax = emax_fmt+1,
 *     mpfr_check_range, mpfr_subnormalize; rna and sr, and the {0, 2^emin}
 *     grid of formats without subnormals, by round_grid(), which rounds y to
 *     multiples of 2^g with explicit MPFR arithmetic on the discarded part.
 *     The tests run round_grid() for every mode too and demand it agree
 *     with MPFR's own rounding;
 *  6. encode from the descriptor's fields.
 * MPFR's exponent range and flags are per thread when MPFR is built with TLS
 * (mpfr_buildopt_tls_p(), Debian's is), which makes this file thread-safe;
 * both are saved on entry and restored on exit. Every mpfr_t lives on the stack
 * with its limbs (MPFR's custom interface): no allocation, nothing to clear.
 *
 * Readings where the specification leaves room (its explicit rules first,
 * then IEEE 754-2019; the choices IEEE leaves to the implementation are
 * named in specialize.h, which the fast backend reads too):
 *  - NaN results are the format's produced NaN (nan_bits), never a payload;
 *    formats with no NaN give +0 with invalid, also for a NaN operand.
 *  - Signaling NaNs (IEEE 754-2019 §6.2): ieee-style NaNs with the top
 *    fraction bit clear, and binary64 NaNs with bit 51 clear. Any such
 *    operand of a computational operation or conversion adds invalid; the
 *    result is the produced NaN, which is quiet. min/max signal invalid
 *    and otherwise treat it as a quiet NaN (§9.6: the number is returned).
 *    neg/abs (§5.5.1) signal nothing.
 *  - An overflowing or infinite result that becomes NaN keeps its sign
 *    where the format has a signed NaN: e4m3 0x7f/0xff (CUDA __NV_NOSAT
 *    also maps −inf to 0xff), fnuz 0x80, e8m0 0xff.
 *  - rna in a format without subnormals: a tie between 0 and 2^emin goes
 *    away from zero (roundTiesToAway); rne's tie goes to 0 as documented.
 *  - Tininess uses the step-1 value made with the same u as the final value
 *    (SR); step 1 reaching 2^emin implies the final value is 2^emin, so a
 *    result is never subnormal without being tiny.
 *  - ftz makes a tiny result ±0 with underflow|inexact even when it is exact;
 *    without a zero (e8m0) that is code 0 (2^emin), like any zero result.
 *  - e8m0 (no zero): an exact zero result of an operation (x − x, log 1)
 *    is code 0 with underflow|inexact, as converting 0 is.
 *  - Without a sign (e8m0, custom unsigned formats): −0 is a zero, not a
 *    negative value (+0 where the format has a zero); negative nonzero
 *    values, also those that would round to zero, and −inf give NaN,
 *    invalid.
 *  - The sign of an exact zero sum (add, sub, fma) is −0 only in mode down,
 *    so +0 in sr.
 *  - fma: a NaN in a or b gives a quiet NaN with no flag; otherwise 0·∞ is
 *    invalid even when c is NaN.
 *  - neg/abs are sign-bit operations on the encoding (IEEE 754-2019
 *    §5.5.1), NaN payloads included: no daz (a subnormal keeps its bits),
 *    no flags; fnuz keeps its NaN 0x80 and maps 0 to 0; without a sign
 *    neg(x) is NaN with invalid (x neither NaN nor zero), neg(0) = 0 and
 *    abs(x) = x.
 *  - min/max: daz applies; the chosen operand is re-encoded (a flushed
 *    subnormal comes back as a zero of its sign, fnuz +0); no ftz, no flags.
 *  - emu_mp_from_double: the double is the source operand of a conversion,
 *    so daz reads a subnormal double as a zero of its sign.
 *  - Encodings with exponent field 0 and a nonzero mantissa in a format
 *    without subnormals read as zeros of their sign.
 */
#include <gmp.h>
#include <math.h>
#include <mpfr.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "emu/core/emu.h"
#include "emu/core/specialize.h"

enum { K_NAN, K_INF, K_ZERO, K_FIN };

/* p <= 24 by contract; 88 keeps wp = p+40 within the stack limbs. */
#ifndef MP_PREC_MAX
#define MP_PREC_MAX 128
#endif
#define MP_P_MAX (MP_PREC_MAX - 40)
#define MP_LIMBS ((MP_PREC_MAX + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS)

/* MPFR's default exponent range: wide enough that rounding to p bits never
 * meets it for finite results of the formats (|e| < 400); exp/exp2 of large
 * arguments leave it, and round-to-odd still gives a value on the right side
 * of every format limit. */
#define WIDE_EMIN (-(((mpfr_exp_t)1 << 30) - 1))
#define WIDE_EMAX (((mpfr_exp_t)1 << 30) - 1)

/* An mpfr_t with its significand on the stack. Never copy one after init. */
typedef struct {
	mpfr_t x;
	mp_limb_t d[MP_LIMBS];
} mpv;

static void mpv_init(mpv *v, mpfr_prec_t prec)
{
	mpfr_custom_init(v->d, prec);
	mpfr_custom_init_set(v->x, MPFR_ZERO_KIND, 0, prec, v->d);
}

typedef struct {
	const emu_format *f;
	emu_mode mode;
	bool sat, ftz, daz;
	uint32_t u;     /* SR's 32 random bits */
	bool grid_all;  /* round every mode with round_grid (for the tests) */
	mpfr_prec_t wp; /* precision of the round-to-odd result */
} ctx;

/* A decoded operand: K_FIN values are exact and signed in v. */
typedef struct {
	int kind;
	bool neg;
	bool snan; /* a signaling NaN: decided from the encoding (MPFR has none) */
	mpv v;
} operand;

/* The exact result before rounding: a class, flags from the special cases
 * (invalid, divbyzero), and for K_FIN the round-to-odd y and its ternary. */
typedef struct {
	int kind;
	bool neg;
	unsigned flags;
	int ternary;
	mpv y;
} real;

typedef struct {
	mpfr_exp_t emin, emax;
	mpfr_flags_t flags;
} mp_saved;

static void mp_enter(mp_saved *s)
{
	s->emin = mpfr_get_emin();
	s->emax = mpfr_get_emax();
	s->flags = mpfr_flags_save();
	mpfr_set_emin(WIDE_EMIN);
	mpfr_set_emax(WIDE_EMAX);
}

static void mp_leave(const mp_saved *s)
{
	mpfr_set_emin(s->emin);
	mpfr_set_emax(s->emax);
	mpfr_flags_restore(s->flags, MPFR_FLAGS_ALL);
}

/* ---- the descriptor: NaN, encodings ---- */

static emu_bits width_mask(const emu_format *f)
{
	return f->bits >= 32 ? ~(emu_bits)0 : ((emu_bits)1 << f->bits) - 1;
}

static bool has_nan(const emu_format *f)
{
	return f->nan != EMU_NAN_NONE;
}

static bool mp_is_nan(const emu_format *f, emu_bits b)
{
	emu_bits mag = b & ~f->sign_mask;
	switch (f->nan) {
	case EMU_NAN_IEEE:
		return (mag & f->exp_mask) == f->exp_mask &&
		       (!f->has_inf || (mag & f->man_mask) != 0);
	case EMU_NAN_FN:
		return mag == (f->exp_mask | f->man_mask);
	case EMU_NAN_FNUZ:
		return f->sign_mask != 0 && b == f->sign_mask;
	case EMU_NAN_NONE:
		break;
	}
	return false;
}

static emu_bits sign_of(const emu_format *f, bool neg)
{
	return neg && f->has_sign ? f->sign_mask : 0;
}

static emu_bits enc_zero(const emu_format *f, bool neg)
{
	return f->nan == EMU_NAN_FNUZ ? 0 : sign_of(f, neg);
}

/* ±2^emin: what a zero becomes in a format without one. */
static emu_bits enc_min_normal(const emu_format *f, bool neg)
{
	return sign_of(f, neg) | ((emu_bits)(f->emin + f->bias) << (f->p - 1));
}

/* A nonzero finite z on f's grid with |z| <= max. */
static emu_bits enc_finite(const emu_format *f, mpfr_srcptr z)
{
	int m = f->p - 1;
	mpfr_exp_t e = mpfr_get_exp(z) - 1; /* |z| in [2^e, 2^(e+1)) */
	mpv t;
	mpv_init(&t, mpfr_get_prec(z));
	/* |t| is a whole number below 2^32 (emu_bits), so its double is exact:
	 * mpfr_get_ui would make the same number through a temporary it
	 * allocates and rounds, a tenth of the whole proof's time */
	emu_bits E, M;
	if (e >= f->emin) {
		mpfr_mul_2si(t.x, z, m - e, MPFR_RNDN); /* |t| in [2^m, 2^(m+1)) */
		M = (emu_bits)fabs(mpfr_get_d(t.x, MPFR_RNDN)) - ((emu_bits)1 << m);
		E = (emu_bits)(e + f->bias);
	} else {
		mpfr_mul_2si(t.x, z, m - f->emin, MPFR_RNDN); /* |t| in [1, 2^m) */
		M = (emu_bits)fabs(mpfr_get_d(t.x, MPFR_RNDN));
		E = 0;
	}
	return sign_of(f, mpfr_signbit(z)) | (E << m) | M;
}

static void decode(const emu_format *f, emu_bits b, bool daz, operand *o, mpfr_prec_t prec)
{
	int m = f->p - 1;
	mpv_init(&o->v, prec);
	o->snan = false;
	b &= width_mask(f);
	o->neg = f->has_sign && (b & f->sign_mask);
	if (mp_is_nan(f, b)) {
		o->kind = K_NAN;
		o->neg = false;
		/* ieee style with a fraction: its top bit set means quiet */
		o->snan = f->nan == EMU_NAN_IEEE && m >= 1 && !(b & emu_quiet_bit(f));
		return;
	}
	emu_bits mag = b & ~f->sign_mask;
	if (f->has_inf && mag == f->inf_bits) {
		o->kind = K_INF;
		return;
	}
	long e = (long)(mag >> m) - f->bias;
	unsigned long M = mag & f->man_mask;
	o->kind = K_FIN;
	if (e >= f->emin) {
		mpfr_set_ui_2exp(o->v.x, M | (1ul << m), e - m, MPFR_RNDN);
	} else if (M != 0 && f->has_subnormals && !daz) {
		mpfr_set_ui_2exp(o->v.x, M, f->emin - m, MPFR_RNDN);
	} else {
		o->kind = K_ZERO;
		return;
	}
	if (o->neg)
		mpfr_neg(o->v.x, o->v.x, MPFR_RNDN);
}

static void decode_double(double x, bool daz, operand *o)
{
	mpv_init(&o->v, 64);
	o->neg = signbit(x) != 0;
	o->snan = false;
	if (isnan(x)) {
		uint64_t u;
		memcpy(&u, &x, sizeof u);
		o->kind = K_NAN;
		o->neg = false;
		o->snan = !(u & EMU_F64_QUIET_BIT);
	} else if (isinf(x)) {
		o->kind = K_INF;
	} else if (x == 0 || (daz && fpclassify(x) == FP_SUBNORMAL)) {
		o->kind = K_ZERO;
	} else {
		o->kind = K_FIN;
		mpfr_set_d(o->v.x, x, MPFR_RNDN); /* exact: 53 <= 64 bits */
	}
}

/* ---- exact results ---- */

static void r_nan(real *r, unsigned fl)
{
	r->kind = K_NAN;
	r->neg = false;
	r->flags |= fl;
}

static void r_inf(real *r, bool neg, unsigned fl)
{
	r->kind = K_INF;
	r->neg = neg;
	r->flags |= fl;
}

static void r_zero(real *r, bool neg)
{
	r->kind = K_ZERO;
	r->neg = neg;
}

/* r->y holds an MPFR_RNDZ result with ternary t: make it round-to-odd.
 * An exact zero becomes a zero of sign zero_neg. */
static void r_odd(real *r, int t, bool zero_neg)
{
	mpfr_ptr y = r->y.x;
	r->kind = K_FIN;
	r->ternary = t;
	if (mpfr_zero_p(y)) {
		if (t == 0) {
			r_zero(r, zero_neg);
			return;
		}
		/* below MPFR's range (exp of a huge negative): any nonzero value far
		 * below every format's grid stands for it; RNDZ leaves t > 0 for a
		 * negative exact value */
		mpfr_set_ui_2exp(y, 1, mpfr_get_emin() - 1, MPFR_RNDN);
		if (t > 0)
			mpfr_neg(y, y, MPFR_RNDN);
	} else if (t != 0 && mpfr_min_prec(y) < mpfr_get_prec(y)) {
		/* last bit 0: the odd neighbour away from zero (no carry) */
		if (mpfr_sgn(y) > 0)
			mpfr_nextabove(y);
		else
			mpfr_nextbelow(y);
	}
	r->neg = mpfr_sgn(y) < 0;
}

static void r_exact(real *r, mpfr_srcptr v, bool negate)
{
	int t = negate ? mpfr_neg(r->y.x, v, MPFR_RNDZ) : mpfr_set(r->y.x, v, MPFR_RNDZ);
	r_odd(r, t, false);
}

static void op_cvt(real *r, const operand *a)
{
	if (a->kind == K_NAN)
		r_nan(r, 0);
	else if (a->kind == K_INF)
		r_inf(r, a->neg, 0);
	else if (a->kind == K_ZERO)
		r_zero(r, a->neg);
	else
		r_exact(r, a->v.x, false);
}

static void op_add(const ctx *c, real *r, const operand *a, const operand *b, bool sub)
{
	bool bneg = b->neg != sub;
	bool down = c->mode == EMU_DOWN;
	if (a->kind == K_NAN || b->kind == K_NAN)
		r_nan(r, 0);
	else if (a->kind == K_INF && b->kind == K_INF && a->neg != bneg)
		r_nan(r, EMU_FLAG_INVALID);
	else if (a->kind == K_INF)
		r_inf(r, a->neg, 0);
	else if (b->kind == K_INF)
		r_inf(r, bneg, 0);
	else if (a->kind == K_ZERO && b->kind == K_ZERO)
		r_zero(r, a->neg == bneg ? a->neg : down);
	else if (a->kind == K_ZERO)
		r_exact(r, b->v.x, sub);
	else if (b->kind == K_ZERO)
		r_exact(r, a->v.x, false);
	else if (sub)
		r_odd(r, mpfr_sub(r->y.x, a->v.x, b->v.x, MPFR_RNDZ), down);
	else
		r_odd(r, mpfr_add(r->y.x, a->v.x, b->v.x, MPFR_RNDZ), down);
}

static void op_mul(real *r, const operand *a, const operand *b)
{
	bool neg = a->neg != b->neg;
	if (a->kind == K_NAN || b->kind == K_NAN)
		r_nan(r, 0);
	else if ((a->kind == K_INF && b->kind == K_ZERO) || (a->kind == K_ZERO && b->kind == K_INF))
		r_nan(r, EMU_FLAG_INVALID);
	else if (a->kind == K_INF || b->kind == K_INF)
		r_inf(r, neg, 0);
	else if (a->kind == K_ZERO || b->kind == K_ZERO)
		r_zero(r, neg);
	else
		r_odd(r, mpfr_mul(r->y.x, a->v.x, b->v.x, MPFR_RNDZ), false);
}

static void op_div(real *r, const operand *a, const operand *b)
{
	bool neg = a->neg != b->neg;
	if (a->kind == K_NAN || b->kind == K_NAN)
		r_nan(r, 0);
	else if (a->kind == K_INF && b->kind == K_INF)
		r_nan(r, EMU_FLAG_INVALID);
	else if (a->kind == K_INF)
		r_inf(r, neg, 0);
	else if (b->kind == K_INF)
		r_zero(r, neg);
	else if (a->kind == K_ZERO && b->kind == K_ZERO)
		r_nan(r, EMU_FLAG_INVALID);
	else if (b->kind == K_ZERO)
		r_inf(r, neg, EMU_FLAG_DIVBYZERO);
	else if (a->kind == K_ZERO)
		r_zero(r, neg);
	else
		r_odd(r, mpfr_div(r->y.x, a->v.x, b->v.x, MPFR_RNDZ), false);
}

static void op_fma(const ctx *c, real *r, const operand *a, const operand *b, const operand *d)
{
	bool pneg = a->neg != b->neg;
	bool down = c->mode == EMU_DOWN;
	if (a->kind == K_NAN || b->kind == K_NAN)
		r_nan(r, 0);
	else if ((a->kind == K_INF && b->kind == K_ZERO) || (a->kind == K_ZERO && b->kind == K_INF))
		r_nan(r, d->kind == K_NAN ? EMU_FMA_ZERO_INF_QNAN_FLAGS : EMU_FLAG_INVALID);
	else if (d->kind == K_NAN)
		r_nan(r, 0);
	else if ((a->kind == K_INF || b->kind == K_INF) && d->kind == K_INF && d->neg != pneg)
		r_nan(r, EMU_FLAG_INVALID);
	else if (a->kind == K_INF || b->kind == K_INF)
		r_inf(r, pneg, 0);
	else if (d->kind == K_INF)
		r_inf(r, d->neg, 0);
	else if ((a->kind == K_ZERO || b->kind == K_ZERO) && d->kind == K_ZERO)
		r_zero(r, pneg == d->neg ? pneg : down);
	else if (a->kind == K_ZERO || b->kind == K_ZERO)
		r_exact(r, d->v.x, false);
	else if (d->kind == K_ZERO)
		r_odd(r, mpfr_mul(r->y.x, a->v.x, b->v.x, MPFR_RNDZ), false);
	else
		r_odd(r, mpfr_fma(r->y.x, a->v.x, b->v.x, d->v.x, MPFR_RNDZ), down);
}

static void op_unary(emu_op op, real *r, const operand *a)
{
	mpfr_ptr y = r->y.x;
	if (a->kind == K_NAN) {
		r_nan(r, 0);
		return;
	}
	switch (op) {
	case EMU_OP_SQRT:
		if (a->kind == K_ZERO)
			r_zero(r, a->neg); /* sqrt(-0) = -0 */
		else if (a->neg)
			r_nan(r, EMU_FLAG_INVALID);
		else if (a->kind == K_INF)
			r_inf(r, false, 0);
		else
			r_odd(r, mpfr_sqrt(y, a->v.x, MPFR_RNDZ), false);
		break;
	case EMU_OP_EXP:
	case EMU_OP_EXP2:
		if (a->kind == K_INF && a->neg)
			r_zero(r, false);
		else if (a->kind == K_INF)
			r_inf(r, false, 0);
		else if (a->kind == K_ZERO)
			r_odd(r, mpfr_set_ui(y, 1, MPFR_RNDZ), false);
		else if (op == EMU_OP_EXP)
			r_odd(r, mpfr_exp(y, a->v.x, MPFR_RNDZ), false);
		else
			r_odd(r, mpfr_exp2(y, a->v.x, MPFR_RNDZ), false);
		break;
	case EMU_OP_LOG:
		if (a->kind == K_ZERO)
			r_inf(r, true, EMU_FLAG_DIVBYZERO);
		else if (a->neg)
			r_nan(r, EMU_FLAG_INVALID);
		else if (a->kind == K_INF)
			r_inf(r, false, 0);
		else
			r_odd(r, mpfr_log(y, a->v.x, MPFR_RNDZ), false); /* log 1 = +0 */
		break;
	case EMU_OP_LOG1P:
		if (a->kind == K_ZERO)
			r_zero(r, a->neg); /* log1p(±0) = ±0 */
		else if (a->kind == K_INF && a->neg)
			r_nan(r, EMU_FLAG_INVALID);
		else if (a->kind == K_INF)
			r_inf(r, false, 0);
		else if (mpfr_cmp_si(a->v.x, -1) == 0)
			r_inf(r, true, EMU_FLAG_DIVBYZERO);
		else if (mpfr_cmp_si(a->v.x, -1) < 0)
			r_nan(r, EMU_FLAG_INVALID);
		else
			r_odd(r, mpfr_log1p(y, a->v.x, MPFR_RNDZ), false);
		break;
	case EMU_OP_RSQRT:
		/* rsqrt(±0) = ±inf as IEEE 754 rSqrt (mpfr_rec_sqrt(-0) is +inf) */
		if (a->kind == K_ZERO)
			r_inf(r, a->neg, EMU_FLAG_DIVBYZERO);
		else if (a->neg)
			r_nan(r, EMU_FLAG_INVALID);
		else if (a->kind == K_INF)
			r_zero(r, false);
		else
			r_odd(r, mpfr_rec_sqrt(y, a->v.x, MPFR_RNDZ), false);
		break;
	default:
		r_nan(r, EMU_FLAG_INVALID);
		break;
	}
}

/* ---- rounding ---- */

/* Round y (nonzero, finite) to a multiple of 2^g with c's mode: z = the
 * signed result (z's precision must hold it), returns the ternary value
 * (sign of z - exact; 0 iff exact, y being round-to-odd). */
static int round_grid(const ctx *c, mpfr_ptr z, mpfr_srcptr y, mpfr_exp_t g)
{
	bool neg = mpfr_signbit(y);
	mpfr_exp_t q = mpfr_get_exp(y) - g; /* bits of |y| at or above 2^g */
	mpv lo, fr;
	mpv_init(&lo, q >= 1 ? q : 1);
	mpv_init(&fr, mpfr_get_prec(y));
	bool odd = false, tiny_frac = false;
	if (q >= 1) {
		mpfr_set(lo.x, y, MPFR_RNDZ);
		mpfr_abs(lo.x, lo.x, MPFR_RNDN);
		odd = mpfr_min_prec(lo.x) == q; /* the 2^g bit of lo is set */
		mpfr_abs(fr.x, y, MPFR_RNDN);
		mpfr_sub(fr.x, fr.x, lo.x, MPFR_RNDN); /* exact: y's bits below 2^g */
	} else if (q >= -64) {
		mpfr_abs(fr.x, y, MPFR_RNDN); /* lo stays 0 (even) */
	} else {
		tiny_frac = true; /* 0 < frac < 2^-64: no need to scale it */
	}
	int away;
	if (tiny_frac) {
		if (c->mode == EMU_SR)
			away = c->u == 0;
		else
			away = c->mode == EMU_UP ? !neg : c->mode == EMU_DOWN ? neg : 0;
	} else {
		mpfr_mul_2si(fr.x, fr.x, -g, MPFR_RNDN); /* frac in [0, 1), exact */
		if (mpfr_zero_p(fr.x)) {
			mpfr_set(z, lo.x, MPFR_RNDN);
			if (neg)
				mpfr_neg(z, z, MPFR_RNDN);
			return 0;
		}
		int half = mpfr_cmp_ui_2exp(fr.x, 1, -1);
		switch (c->mode) {
		case EMU_RTZ:
			away = 0;
			break;
		case EMU_UP:
			away = !neg;
			break;
		case EMU_DOWN:
			away = neg;
			break;
		case EMU_RNA:
			away = half >= 0;
			break;
		case EMU_SR:
			mpfr_mul_2ui(fr.x, fr.x, 32, MPFR_RNDN);
			away = mpfr_cmp_ui(fr.x, c->u) > 0;
			break;
		default:
			away = half > 0 || (half == 0 && odd);
			break;
		}
	}
	if (q >= 1)
		mpfr_set(z, lo.x, MPFR_RNDN);
	else
		mpfr_set_zero(z, 1);
	if (away) {
		mpv step;
		mpv_init(&step, 2);
		mpfr_set_ui_2exp(step.x, 1, g, MPFR_RNDN);
		mpfr_add(z, z, step.x, MPFR_RNDN); /* exact: q+1 bits */
	}
	if (neg)
		mpfr_neg(z, z, MPFR_RNDN);
	return (away != 0) != neg ? 1 : -1;
}

static bool native_mode(emu_mode m, mpfr_rnd_t *rnd)
{
	switch (m) {
	case EMU_RNE:
		*rnd = MPFR_RNDN;
		return true;
	case EMU_RTZ:
		*rnd = MPFR_RNDZ;
		return true;
	case EMU_UP:
		*rnd = MPFR_RNDU;
		return true;
	case EMU_DOWN:
		*rnd = MPFR_RNDD;
		return true;
	default:
		return false;
	}
}

static emu_result nan_result(const emu_format *f, unsigned flags)
{
	if (!has_nan(f))
		return (emu_result){EMU_NONAN_BITS, flags | EMU_FLAG_INVALID};
	return (emu_result){f->nan_bits, flags};
}

/* Where an overflowing or infinite result lands when not ±inf: ±max under
 * sat or without a NaN, else the NaN with the result's sign (specialize.h). */
static emu_bits not_inf(const ctx *c, bool neg)
{
	const emu_format *f = c->f;
	if (!emu_overflow_is_nan(f, c->sat))
		return f->max_bits | sign_of(f, neg);
	return emu_nan_signed(f, EMU_OVERFLOW_NAN_SIGNED && neg);
}

static emu_result zero_result(const emu_format *f, bool neg, unsigned flags)
{
	if (!f->has_zero)
		return (emu_result){enc_min_normal(f, neg), flags | EMU_NOZERO_FLAGS};
	return (emu_result){enc_zero(f, neg), flags};
}

/* |v| > max (v nonzero or infinite) */
static bool above_max(const emu_format *f, mpfr_srcptr v)
{
	if (mpfr_inf_p(v))
		return true;
	if (mpfr_get_exp(v) <= f->emax) /* |v| < 2^emax <= max, max's binade */
		return false;
	mpv maxv;
	mpv_init(&maxv, 64);
	mpfr_set_d(maxv.x, f->max, MPFR_RNDN);
	return mpfr_cmpabs(v, maxv.x) > 0;
}

static emu_result round_finite(const ctx *c, real *r)
{
	const emu_format *f = c->f;
	mpfr_srcptr y = r->y.x;
	bool neg = r->neg;
	unsigned flags = r->flags;
	mpfr_rnd_t rnd = MPFR_RNDN;
	bool native = native_mode(c->mode, &rnd) && !c->grid_all;

	/* step 1: p bits, unbounded exponent */
	mpv r1;
	int t1;
	if (native) {
		mpv_init(&r1, f->p);
		t1 = mpfr_set(r1.x, y, rnd);
	} else {
		mpv_init(&r1, c->wp);
		t1 = round_grid(c, r1.x, y, mpfr_get_exp(y) - f->p);
	}
	if (above_max(f, r1.x)) {
		bool to_max = c->mode == EMU_RTZ || (c->mode == EMU_UP && neg) ||
		              (c->mode == EMU_DOWN && !neg);
		flags |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
		if (to_max)
			return (emu_result){f->max_bits | sign_of(f, neg), flags};
		if (f->has_inf && !c->sat)
			return (emu_result){f->inf_bits | sign_of(f, neg), flags};
		return (emu_result){not_inf(c, neg), flags};
	}
	/* after rounding: |r1| < 2^emin; before: |y| < 2^emin (y, round-to-odd,
	 * has the exact value's exponent) */
	bool tiny = mpfr_get_exp(EMU_TININESS == EMU_TININESS_AFTER_ROUNDING ? r1.x : y) <= f->emin;

	/* the final value: y on the format's grid */
	mpv zg;
	mpfr_ptr z;
	int tz;
	if (mpfr_get_exp(y) > f->emin) { /* |y| >= 2^emin: step 1 is final */
		z = r1.x;
		tz = t1;
	} else if (!f->has_subnormals || !native) {
		mpv_init(&zg, c->wp);
		z = zg.x;
		tz = round_grid(c, z, y, f->has_subnormals ? f->emin - f->p + 1 : f->emin);
	} else {
		/* The documented MPFR way, from r1 = y rounded with its ternary t1. */
		z = r1.x;
		mpfr_set_emin(f->emin - f->p + 2);
		mpfr_set_emax(f->emax + 1);
		tz = mpfr_check_range(z, t1, rnd);
		tz = mpfr_subnormalize(z, tz, rnd);
		mpfr_set_emin(WIDE_EMIN);
		mpfr_set_emax(WIDE_EMAX);
	}

	if (tiny && c->ftz)
		return zero_result(f, neg, flags | EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT);
	if (tz != 0)
		flags |= tiny ? EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT : EMU_FLAG_INEXACT;
	if (mpfr_zero_p(z))
		return zero_result(f, neg, flags);
	return (emu_result){enc_finite(f, z), flags};
}

static emu_result finish(const ctx *c, real *r)
{
	const emu_format *f = c->f;
	if (r->kind == K_NAN)
		return nan_result(f, r->flags);
	if (r->kind == K_ZERO)
		return zero_result(f, r->neg, r->flags);
	if (r->neg && !f->has_sign) /* unsigned: negative values and -inf */
		return nan_result(f, r->flags | EMU_FLAG_INVALID);
	if (r->kind == K_FIN)
		return round_finite(c, r);
	/* infinite: exact (divbyzero) or from an infinite operand */
	if (f->has_inf && !c->sat)
		return (emu_result){f->inf_bits | sign_of(f, r->neg), r->flags};
	unsigned extra = (r->flags & EMU_FLAG_DIVBYZERO) ? 0 : EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
	return (emu_result){not_inf(c, r->neg), r->flags | extra};
}

/* ---- operations without rounding ---- */

static emu_bits reencode(const emu_format *f, const operand *o)
{
	switch (o->kind) {
	case K_NAN:
		return f->nan_bits;
	case K_INF:
		return f->inf_bits | sign_of(f, o->neg);
	case K_ZERO:
		return enc_zero(f, o->neg);
	default:
		return enc_finite(f, o->v.x);
	}
}

/* minimumNumber / maximumNumber: NaN ignored, -0 < +0, no flags. */
static emu_result op_minmax(const emu_format *f, const operand *a, const operand *b, bool max)
{
	if (a->kind == K_NAN && b->kind == K_NAN)
		return nan_result(f, 0);
	if (a->kind == K_NAN)
		return (emu_result){reencode(f, b), 0};
	if (b->kind == K_NAN)
		return (emu_result){reencode(f, a), 0};
	int cmp;
	int ra = a->kind == K_INF ? (a->neg ? -1 : 1) : 0; /* infinities first */
	int rb = b->kind == K_INF ? (b->neg ? -1 : 1) : 0;
	if (ra != rb || ra != 0)
		cmp = (ra > rb) - (ra < rb);
	else if (a->kind == K_ZERO && b->kind == K_ZERO)
		cmp = (int)b->neg - (int)a->neg; /* -0 < +0 */
	else
		cmp = mpfr_cmp(a->v.x, b->v.x); /* a zero's v is +0: right against nonzeros */
	const operand *pick = (max ? cmp >= 0 : cmp <= 0) ? a : b;
	return (emu_result){reencode(f, pick), 0};
}

/* Sign-bit operations on the encoding: no daz, no flags; a NaN operand
 * gives the produced NaN like every other operation. */
static emu_result op_sign(const emu_format *f, emu_bits a, bool abs)
{
	a &= width_mask(f);
	if (!f->has_sign) {
		if (abs || (f->has_zero && a == 0))
			return (emu_result){a, 0};
		return mp_is_nan(f, a) ? nan_result(f, 0) : nan_result(f, EMU_FLAG_INVALID);
	}
	if (f->nan == EMU_NAN_FNUZ && (a & ~f->sign_mask) == 0)
		return (emu_result){a, 0}; /* NaN 0x80 stays, and there is no -0 */
	/* IEEE 754-2019 §5.5.1: a bit operation, NaN payloads included */
	return (emu_result){abs ? a & ~f->sign_mask : a ^ f->sign_mask, 0};
}

/* ---- entry points ---- */

static bool ctx_init(ctx *c, const emu_format *f, const emu_env *env, bool grid_all)
{
	c->f = f;
	c->mode = env->mode;
	c->sat = env->sat;
	c->ftz = env->ftz;
	c->daz = env->daz;
	c->u = env->mode == EMU_SR ? emu_sr_bits(env->seed, env->index) : 0;
	c->grid_all = grid_all;
	c->wp = f->p + 40 > 64 ? f->p + 40 : 64;
	return f->p >= 1 && f->p <= MP_P_MAX;
}

static emu_result mp_apply(emu_op op, const emu_format *f, const emu_format *src,
                           const emu_bits *args, const emu_env *env, bool grid_all)
{
	ctx c;
	if (!ctx_init(&c, f, env, grid_all))
		return (emu_result){f->nan_bits, EMU_FLAG_INVALID};
	if (op == EMU_OP_NEG || op == EMU_OP_ABS)
		return op_sign(f, args[0], op == EMU_OP_ABS);
	const emu_format *in = op == EMU_OP_CVT && src ? src : f;
	if (in->p < 1 || in->p > MP_P_MAX)
		return (emu_result){f->nan_bits, EMU_FLAG_INVALID};
	mp_saved saved;
	mp_enter(&saved);
	operand o[3];
	int n = 1;
	if (op == EMU_OP_FMA)
		n = 3;
	else if ((op >= EMU_OP_ADD && op <= EMU_OP_DIV) || op == EMU_OP_MIN || op == EMU_OP_MAX)
		n = 2;
	for (int i = 0; i < n; i++)
		decode(in, args[i], c.daz, &o[i], c.wp);
	emu_result res;
	if (op == EMU_OP_MIN || op == EMU_OP_MAX) {
		res = op_minmax(f, &o[0], &o[1], op == EMU_OP_MAX);
	} else {
		real r = {.kind = K_NAN, .flags = 0};
		mpv_init(&r.y, c.wp);
		switch (op) {
		case EMU_OP_CVT:
			op_cvt(&r, &o[0]);
			break;
		case EMU_OP_ADD:
		case EMU_OP_SUB:
			op_add(&c, &r, &o[0], &o[1], op == EMU_OP_SUB);
			break;
		case EMU_OP_MUL:
			op_mul(&r, &o[0], &o[1]);
			break;
		case EMU_OP_DIV:
			op_div(&r, &o[0], &o[1]);
			break;
		case EMU_OP_FMA:
			op_fma(&c, &r, &o[0], &o[1], &o[2]);
			break;
		default:
			op_unary(op, &r, &o[0]);
			break;
		}
		res = finish(&c, &r);
	}
	for (int i = 0; i < n; i++)
		if (o[i].snan)
			res.flags |= EMU_FLAG_INVALID;
	mp_leave(&saved);
	return res;
}

static emu_result mp_from_double(const emu_format *f, double x, const emu_env *env, bool grid_all)
{
	ctx c;
	if (!ctx_init(&c, f, env, grid_all))
		return (emu_result){f->nan_bits, EMU_FLAG_INVALID};
	mp_saved saved;
	mp_enter(&saved);
	operand a;
	decode_double(x, c.daz, &a);
	real r = {.kind = K_NAN, .flags = 0};
	mpv_init(&r.y, c.wp);
	op_cvt(&r, &a);
	emu_result res = finish(&c, &r);
	if (a.snan)
		res.flags |= EMU_FLAG_INVALID;
	mp_leave(&saved);
	return res;
}

emu_result emu_mp_from_double(const emu_format *f, double x, const emu_env *env)
{
	return mp_from_double(f, x, env, false);
}

emu_result emu_mp_apply(emu_op op, const emu_format *f, const emu_format *src, const emu_bits *args,
                        const emu_env *env)
{
	return mp_apply(op, f, src, args, env, false);
}
