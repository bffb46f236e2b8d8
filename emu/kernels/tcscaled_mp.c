/*
 * tcscaled_mp.c — the block-scaled MMA kinds (emu/kernels/tcscaled.h) computed
 * with MPFR: the reference the integer implementation is proven against.
 *
 * Written apart from tcscaled.c and in MMA-Sim's own terms: operands are
 * decoded to values (emu_decode: every operand format is exact in double),
 * specials are found the way MMA-Sim finds them (the scaled products and C
 * summed with MPFR's NaN/inf arithmetic), each finite value is split into
 * significand and exponent from its MPFR exponent (floored at the format's
 * minimum, zero at -126), each term is aligned and chopped by MPFR
 * (multiply by 2^(frac − emax), mpfr_trunc), the terms are summed in a
 * precision that holds the sum exactly (checked), and the one rounding to
 * binary32 is done the documented MPFR way (24 bits, emin −148, emax 128,
 * mpfr_check_range, mpfr_subnormalize), toward zero. MPFR's exponent range
 * and flags are per thread; they are saved and restored.
 */
#include <gmp.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "emu/kernels/tcscaled.h"

#define MP_PREC 200 /* holds every sum exactly: terms below 2^60, fractions to 2^-35 */
#define MP_ZERO_E (-126)

static bool mp_is(const emu_format *f, const char *name)
{
	const emu_format *g = emu_format_by_name(name);
	return g && emu_format_same(f, g);
}

/* x = sig · 2^e: e = exponent of x's leading bit, at least emin; zero: −126. */
static long mp_split(mpfr_t sig, const mpfr_t x, int emin)
{
	if (mpfr_zero_p(x)) {
		mpfr_set_zero(sig, 1);
		return MP_ZERO_E;
	}
	long e = (long)mpfr_get_exp(x) - 1;
	if (e < emin)
		e = emin;
	mpfr_div_2si(sig, x, e, MPFR_RNDN); /* exact */
	return e;
}

typedef struct {
	mpfr_exp_t emin, emax;
	mpfr_flags_t flags;
} mp_saved;

static void mp_enter(mp_saved *s)
{
	s->emin = mpfr_get_emin();
	s->emax = mpfr_get_emax();
	s->flags = mpfr_flags_save();
	mpfr_set_emin(mpfr_get_emin_min());
	mpfr_set_emax(mpfr_get_emax_max());
}

static void mp_leave(const mp_saved *s)
{
	mpfr_set_emin(s->emin);
	mpfr_set_emax(s->emax);
	mpfr_flags_restore(s->flags, MPFR_FLAGS_ALL);
}

/* Round sum·2^unit toward zero to binary32, the way MMA-Sim does: an exact
 * zero is +0, 2^128 or more is inf. term_lost: a term was chopped. */
static emu_result mp_to_fp32(mpfr_t sum, long unit, bool term_lost)
{
	emu_result r = {0, term_lost ? EMU_FLAG_INEXACT : 0u};
	if (mpfr_zero_p(sum))
		return r;
	mpfr_mul_2si(sum, sum, unit, MPFR_RNDN); /* exact */
	bool neg = mpfr_sgn(sum) < 0;
	mpfr_t lim;
	mpfr_init2(lim, 2);
	mpfr_set_ui_2exp(lim, 1, 128, MPFR_RNDN);
	bool big = mpfr_cmpabs(sum, lim) >= 0;
	mpfr_set_ui_2exp(lim, 1, -126, MPFR_RNDN);
	bool tiny = mpfr_cmpabs(sum, lim) < 0;
	mpfr_clear(lim);
	if (big) {
		r.bits = neg ? 0xff800000u : 0x7f800000u;
		r.flags |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
		return r;
	}
	mpfr_t y;
	mpfr_init2(y, 24);
	mp_saved s;
	mp_enter(&s);
	mpfr_set_emin(-148);
	mpfr_set_emax(128);
	int t = mpfr_set(y, sum, MPFR_RNDZ);
	t = mpfr_check_range(y, t, MPFR_RNDZ);
	t = mpfr_subnormalize(y, t, MPFR_RNDZ);
	mp_leave(&s);
	if (t) {
		r.flags |= EMU_FLAG_INEXACT;
		if (tiny)
			r.flags |= EMU_FLAG_UNDERFLOW;
	}
	float f = mpfr_get_flt(y, MPFR_RNDN); /* exact: y holds a binary32 value */
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	r.bits = u;
	mpfr_clear(y);
	return r;
}

/* Add x·2^(−unit) chopped toward zero into sum; true when bits were lost. */
static bool mp_add_term(mpfr_t sum, const mpfr_t x, long unit, mpfr_t tmp)
{
	mpfr_mul_2si(tmp, x, -unit, MPFR_RNDN); /* exact */
	int t = mpfr_trunc(tmp, tmp);
	if (mpfr_add(sum, sum, tmp, MPFR_RNDN))
		abort(); /* the sum must be exact */
	return t != 0;
}

emu_result emu_tcs_mp_mxf8f6f4(const emu_format *fa, const emu_format *fb, const emu_bits *a,
                               const emu_bits *b, emu_bits sa, emu_bits sb, emu_bits c)
{
	const char *ok[] = {"e4m3", "e5m2", "e3m2", "e2m3", "e2m1"};
	bool oka = false, okb = false;
	for (int i = 0; i < 5; i++) {
		oka |= mp_is(fa, ok[i]);
		okb |= mp_is(fb, ok[i]);
	}
	if (!oka || !okb)
		return (emu_result){EMU_TCS_NAN, EMU_FLAG_INVALID};
	const emu_format *e8 = emu_format_by_name("e8m0"), *f32 = emu_format_by_name("fp32");
	const int K = EMU_TCS_K_F8F6F4;
	double xa[EMU_TCS_K_F8F6F4], xb[EMU_TCS_K_F8F6F4];
	double xsa = emu_decode(e8, sa & 0xffu), xsb = emu_decode(e8, sb & 0xffu);
	double xc = emu_decode(f32, c);
	bool nan_in = isnan(xsa) || isnan(xsb) || isnan(xc);
	for (int i = 0; i < K; i++) {
		xa[i] = emu_decode(fa, a[i]);
		xb[i] = emu_decode(fb, b[i]);
		nan_in |= isnan(xa[i]) || isnan(xb[i]);
	}
	emu_result r;
	mp_saved s;
	mp_enter(&s);
	mpfr_t v, w, sig, sum, tmp, tsig[EMU_TCS_K_F8F6F4 + 1];
	long te[EMU_TCS_K_F8F6F4 + 1];
	mpfr_inits2(MP_PREC, v, w, sig, sum, tmp, (mpfr_ptr)0);
	for (int i = 0; i <= K; i++)
		mpfr_init2(tsig[i], MP_PREC);
	/* MMA-Sim's special check: sum of a·b·sa·sb and C in arithmetic with NaN and inf */
	mpfr_set_d(sum, xc, MPFR_RNDN);
	for (int i = 0; i < K; i++) {
		mpfr_set_d(v, xa[i], MPFR_RNDN);
		mpfr_mul_d(v, v, xb[i], MPFR_RNDN);
		mpfr_mul_d(v, v, xsa, MPFR_RNDN);
		mpfr_mul_d(v, v, xsb, MPFR_RNDN);
		mpfr_add(sum, sum, v, MPFR_RNDN);
	}
	if (mpfr_nan_p(sum)) {
		r = (emu_result){EMU_TCS_NAN, nan_in ? 0u : EMU_FLAG_INVALID};
		goto done;
	}
	if (mpfr_inf_p(sum)) {
		r = (emu_result){mpfr_sgn(sum) < 0 ? 0xff800000u : 0x7f800000u, 0};
		goto done;
	}
	/* the scales' exponents (their significands are 1) */
	mpfr_set_d(v, xsa, MPFR_RNDN);
	long esa = mp_split(sig, v, e8->emin);
	mpfr_set_d(v, xsb, MPFR_RNDN);
	long esb = mp_split(sig, v, e8->emin);
	mpfr_set_d(v, xc, MPFR_RNDN);
	te[K] = mp_split(tsig[K], v, f32->emin);
	long emax = te[K];
	for (int i = 0; i < K; i++) {
		mpfr_set_d(v, xa[i], MPFR_RNDN);
		long ea = mp_split(sig, v, fa->emin);
		mpfr_set_d(w, xb[i], MPFR_RNDN);
		long eb = mp_split(tmp, w, fb->emin);
		mpfr_mul(tsig[i], sig, tmp, MPFR_RNDN);
		te[i] = ea + eb + esa + esb;
		if (te[i] > emax)
			emax = te[i];
	}
	/* term i in units of 2^(emax−25): tsig·2^(te − emax + 25), chopped */
	bool lost = false;
	mpfr_set_zero(sum, 1);
	for (int i = 0; i <= K; i++) {
		mpfr_mul_2si(v, tsig[i], te[i], MPFR_RNDN);
		lost |= mp_add_term(sum, v, emax - 25, tmp);
	}
	r = mp_to_fp32(sum, emax - 25, lost);
done:
	mpfr_clears(v, w, sig, sum, tmp, (mpfr_ptr)0);
	for (int i = 0; i <= K; i++)
		mpfr_clear(tsig[i]);
	mp_leave(&s);
	return r;
}

emu_result emu_tcs_mp_mxf4nvf4(const emu_format *sf, int block, const emu_bits *a,
                               const emu_bits *b, const emu_bits *sa, const emu_bits *sb,
                               emu_bits c)
{
	bool ue4m3 = mp_is(sf, "e4m3");
	if (!(ue4m3 || mp_is(sf, "e8m0")) || (block != 16 && (ue4m3 || block != 32)))
		return (emu_result){EMU_TCS_NAN, EMU_FLAG_INVALID};
	const emu_format *e21 = emu_format_by_name("e2m1"), *f32 = emu_format_by_name("fp32");
	double xc = emu_decode(f32, c);
	int ns = EMU_TCS_K_F4 / block;
	double xsa[4], xsb[4];
	bool nan = isnan(xc);
	for (int j = 0; j < ns; j++) {
		xsa[j] = fabs(emu_decode(sf, sa[j])); /* ue4m3: the sign bit is dropped */
		xsb[j] = fabs(emu_decode(sf, sb[j]));
		nan |= isnan(xsa[j]) || isnan(xsb[j]);
	}
	if (nan)
		return (emu_result){EMU_TCS_NAN, 0};
	if (isinf(xc))
		return (emu_result){c, 0};
	mp_saved s;
	mp_enter(&s);
	mpfr_t v, w, sig, sum, tmp, gsig[5];
	long ge[5];
	mpfr_inits2(MP_PREC, v, w, sig, sum, tmp, (mpfr_ptr)0);
	for (int g = 0; g < 5; g++)
		mpfr_init2(gsig[g], MP_PREC);
	mpfr_set_d(v, xc, MPFR_RNDN);
	ge[4] = mp_split(gsig[4], v, f32->emin);
	long emax = ge[4];
	for (int g = 0; g < 4; g++) {
		mpfr_set_zero(sum, 1);
		for (int i = 16 * g; i < 16 * (g + 1); i++) {
			mpfr_set_d(v, emu_decode(e21, a[i]), MPFR_RNDN);
			mpfr_mul_d(v, v, emu_decode(e21, b[i]), MPFR_RNDN);
			mpfr_add(sum, sum, v, MPFR_RNDN);
		}
		int j = 16 * g / block;
		mpfr_set_d(v, xsa[j], MPFR_RNDN);
		long e0 = mp_split(sig, v, sf->emin);
		mpfr_set_d(w, xsb[j], MPFR_RNDN);
		long e1 = mp_split(tmp, w, sf->emin);
		mpfr_mul(gsig[g], sum, sig, MPFR_RNDN);
		mpfr_mul(gsig[g], gsig[g], tmp, MPFR_RNDN);
		ge[g] = e0 + e1;
		if (ge[g] > emax)
			emax = ge[g];
	}
	bool lost = false;
	mpfr_set_zero(sum, 1);
	for (int g = 0; g < 5; g++) {
		mpfr_mul_2si(v, gsig[g], ge[g], MPFR_RNDN);
		lost |= mp_add_term(sum, v, emax - 35, tmp);
	}
	emu_result r = mp_to_fp32(sum, emax - 35, lost);
	mpfr_clears(v, w, sig, sum, tmp, (mpfr_ptr)0);
	for (int g = 0; g < 5; g++)
		mpfr_clear(gsig[g]);
	mp_leave(&s);
	return r;
}
