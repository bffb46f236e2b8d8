/*
 * format.c — the built-in formats and custom format specs.
 *
 * A format is defined by p, ebits, bias, sign/inf/subnormal/zero and its NaN
 * style; emu_format_init() derives every limit, mask and special encoding
 * from those fields, so adding a format is one table row. Sources for the
 * rows: IEEE 754-2019 (binary16/32), OCP OFP8 rev 1.0 tables 1-3 (E4M3FN,
 * E5M2), OCP MX v1.0 tables 2-7 (E3M2, E2M3, E2M1, E8M0), the fnuz formats
 * as in LLVM's APFloat (Float8E4M3FNUZ, Float8E5M2FNUZ), NVIDIA's TF32.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/emu.h"
#include "emu/core/specialize.h"

#define FMT(n, p_, eb, bias_, sign, inf, sub, zero, nan_)                                  \
	{ .name = {n}, .p = (p_), .ebits = (eb), .bias = (bias_), .has_sign = (sign),         \
	  .has_inf = (inf), .has_subnormals = (sub), .has_zero = (zero), .nan = (nan_) }

static emu_format builtin[] = {
	FMT("fp32", 24, 8, 127, true, true, true, true, EMU_NAN_IEEE),
	FMT("tf32", 11, 8, 127, true, true, true, true, EMU_NAN_IEEE),
	FMT("fp16", 11, 5, 15, true, true, true, true, EMU_NAN_IEEE),
	FMT("bf16", 8, 8, 127, true, true, true, true, EMU_NAN_IEEE),
	FMT("e4m3", 4, 4, 7, true, false, true, true, EMU_NAN_FN),
	FMT("e5m2", 3, 5, 15, true, true, true, true, EMU_NAN_IEEE),
	FMT("e4m3fnuz", 4, 4, 8, true, false, true, true, EMU_NAN_FNUZ),
	FMT("e5m2fnuz", 3, 5, 16, true, false, true, true, EMU_NAN_FNUZ),
	FMT("e3m2", 3, 3, 3, true, false, true, true, EMU_NAN_NONE),
	FMT("e2m3", 4, 2, 1, true, false, true, true, EMU_NAN_NONE),
	FMT("e2m1", 2, 2, 1, true, false, true, true, EMU_NAN_NONE),
	FMT("e8m0", 1, 8, 127, false, false, false, false, EMU_NAN_FN),
};
static int builtin_ready;

static void init_builtins(void)
{
	/* Idempotent and race-free in effect: every thread writes the same bytes. */
	if (__atomic_load_n(&builtin_ready, __ATOMIC_ACQUIRE))
		return;
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (emu_format_init(&builtin[i]) != EMU_OK)
			abort(); /* a table row is wrong: a programming error */
	__atomic_store_n(&builtin_ready, 1, __ATOMIC_RELEASE);
}

size_t emu_format_count(void)
{
	return sizeof(builtin) / sizeof(builtin[0]);
}

const emu_format *emu_format_at(size_t i)
{
	init_builtins();
	return i < emu_format_count() ? &builtin[i] : NULL;
}

bool emu_format_same(const emu_format *a, const emu_format *b)
{
	return a->p == b->p && a->ebits == b->ebits && a->bias == b->bias && a->bits == b->bits &&
	       a->nan == b->nan && a->has_inf == b->has_inf &&
	       a->has_subnormals == b->has_subnormals && a->has_sign == b->has_sign;
}

const emu_format *emu_format_by_name(const char *name)
{
	init_builtins();
	for (size_t i = 0; i < emu_format_count(); i++)
		if (strcmp(builtin[i].name, name) == 0)
			return &builtin[i];
	return NULL;
}

emu_status emu_format_init(emu_format *f)
{
	/* ebits >= 2: with one exponent bit an ieee format has no normal
	 * binade (code 1 is inf/NaN) and every limit below would be wrong */
	if (f->p < 1 || f->p > 24 || f->ebits < 2 || f->ebits > 8)
		return EMU_ERR_RANGE;
	if (f->nan == EMU_NAN_IEEE && f->p < 2)
		return EMU_ERR_RANGE; /* no room to tell inf from NaN */
	if (f->nan == EMU_NAN_FNUZ && !f->has_sign)
		return EMU_ERR_RANGE; /* its NaN is the would-be -0 */
	if (f->nan != EMU_NAN_IEEE && f->has_inf)
		return EMU_ERR_RANGE;
	/* Without zero, code 0 is the normal 2^-bias: no subnormal binade, and
	 * (e8m0's rule, specialize.h) a zero result is that code, which a
	 * signed format would need a sign rule for. */
	if (!f->has_zero && (f->has_sign || f->has_subnormals))
		return EMU_ERR_RANGE;
	int m = f->p - 1;
	emu_bits top = (1u << f->ebits) - 1; /* all-ones exponent code */
	f->bits = (f->has_sign ? 1 : 0) + f->ebits + m;
	f->man_mask = (1u << m) - 1;
	f->exp_mask = top << m;
	f->sign_mask = f->has_sign ? 1u << (f->bits - 1) : 0;
	f->emin = f->has_zero ? 1 - f->bias : -f->bias;
	switch (f->nan) {
	case EMU_NAN_IEEE:
		f->max_bits = ((top - 1) << m) | f->man_mask;
		break;
	case EMU_NAN_FN:
		f->max_bits = ((top << m) | f->man_mask) - 1;
		break;
	case EMU_NAN_FNUZ:
	case EMU_NAN_NONE:
		f->max_bits = (top << m) | f->man_mask;
		break;
	}
	f->nan_bits = emu_default_nan(f->nan, f->exp_mask, f->man_mask, f->sign_mask, m);
	f->inf_bits = f->has_inf ? top << m : 0;
	f->emax = (int)(f->max_bits >> m) - f->bias;
	f->max = ldexp((double)((f->max_bits & f->man_mask) | (1u << m)), f->emax - m);
	f->min_normal = ldexp(1.0, f->emin);
	f->min_subnormal = f->has_subnormals ? ldexp(1.0, f->emin - m) : f->min_normal;
	f->epsilon = ldexp(1.0, -m);
	/* an explicit bias can move the range anywhere; the fast backend is
	 * exact only within the widest range an 8-bit exponent gives (emu.h) */
	if (f->emin < EMU_EMIN_LIMIT || f->emax > EMU_EMAX_LIMIT)
		return EMU_ERR_RANGE;
	return EMU_OK;
}

static int ilog2_exact(long v)
{
	int k = 0;
	if (v <= 0)
		return -1;
	while ((1L << k) < v)
		k++;
	return (1L << k) == v ? k : -1;
}

static emu_status bad(char *err, size_t len, const char *fmt, const char *arg)
{
	if (err && len)
		snprintf(err, len, fmt, arg);
	return EMU_ERR_BAD_SPEC;
}

/* A decimal integer item value in [lo, hi]; false for anything else. */
static bool item_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/*
 * Custom specs, each item at most once, no empty items:
 *   p=P,emax=E[,nan=ieee|fn|fnuz|none][,noinf][,nosub][,unsigned][,nozero]
 *   p=P,ebits=K,bias=B[,...the same options]
 * The exponent range is given one way: emax= alone, with ebits and bias
 * derived the way the built-ins have them,
 *   ieee: bias = emax = 2^(ebits-1) - 1       fn:   bias = 2^(ebits-1) - 1, emax = bias + 1
 *   fnuz: bias = 2^(ebits-1), emax = bias - 1  none: as fn
 * (so "p=4,emax=8,nan=fn" is e4m3 and "p=11,emax=15" is fp16), or ebits=
 * and bias= together, for the formats whose bias is not that one
 * (ml_dtypes' float8_e4m3b11fnuz: "p=4,ebits=4,bias=11,nan=fnuz").
 * unsigned drops the sign bit (bits = ebits + p - 1: negative values and -inf
 * become the NaN, -0 is +0); nozero makes code 0 the value 2^-bias instead
 * of zero (no subnormals then), e8m0's shape, and needs unsigned:
 * "p=1,ebits=8,bias=127,unsigned,nozero,nan=fn" is e8m0.
 * Every limit follows from these fields in emu_format_init().
 */
emu_status emu_format_parse(const char *spec, emu_format *out, char *err, size_t errlen)
{
	const emu_format *b = emu_format_by_name(spec);
	if (b) {
		*out = *b;
		return EMU_OK;
	}
	if (strncmp(spec, "p=", 2) != 0) {
		if (err && errlen)
			snprintf(err, errlen, "unknown format '%s'", spec);
		return EMU_ERR_UNKNOWN_FORMAT;
	}
	char buf[sizeof(out->name)];
	if (strlen(spec) >= sizeof(buf)) /* the spec is the format's name: never truncated */
		return bad(err, errlen,
		           "format spec too long (a name holds 63 characters): '%.40s...'", spec);
	strcpy(buf, spec);
	long p = 0, emax = 0, ebits = 0, bias = 0;
	bool inf = true, sub = true, sign = true, zero = true;
	emu_nan_style nan = EMU_NAN_IEEE;
	/* each key at most once; no empty items (strtok would skip them) */
	enum { K_P, K_EMAX, K_EBITS, K_BIAS, K_NOINF, K_NOSUB, K_UNSIGNED, K_NOZERO, K_NAN, NKEYS };
	static const char *const key_name[NKEYS] = {"p",     "emax",     "ebits",  "bias", "noinf",
	                                            "nosub", "unsigned", "nozero", "nan"};
	bool seen[NKEYS] = {false};
	for (char *tok = buf, *next; tok; tok = next) {
		char *comma = strchr(tok, ',');
		next = comma ? comma + 1 : NULL;
		if (comma)
			*comma = '\0';
		if (!*tok)
			return bad(err, errlen,
			           "format spec '%s' has an empty item (a stray comma)", spec);
		int key;
		if (strncmp(tok, "p=", 2) == 0) {
			key = K_P;
			if (!item_long(tok + 2, LONG_MIN, LONG_MAX, &p))
				return bad(err, errlen, "bad precision in format spec '%s'", spec);
		} else if (strncmp(tok, "emax=", 5) == 0) {
			key = K_EMAX;
			/* bounded: emax ± 1 below must not overflow a long */
			if (!item_long(tok + 5, -(1L << 20), 1L << 20, &emax))
				return bad(err, errlen, "bad emax in format spec '%s'", spec);
		} else if (strncmp(tok, "ebits=", 6) == 0) {
			key = K_EBITS;
			if (!item_long(tok + 6, LONG_MIN, LONG_MAX, &ebits))
				return bad(err, errlen, "bad ebits in format spec '%s'", spec);
		} else if (strncmp(tok, "bias=", 5) == 0) {
			key = K_BIAS;
			if (!item_long(tok + 5, -(1L << 20), 1L << 20, &bias))
				return bad(err, errlen, "bad bias in format spec '%s'", spec);
		} else if (strcmp(tok, "noinf") == 0) {
			key = K_NOINF;
			inf = false;
		} else if (strcmp(tok, "nosub") == 0) {
			key = K_NOSUB;
			sub = false;
		} else if (strcmp(tok, "unsigned") == 0) {
			key = K_UNSIGNED;
			sign = false;
		} else if (strcmp(tok, "nozero") == 0) {
			key = K_NOZERO;
			zero = false;
		} else if (strcmp(tok, "nan=ieee") == 0) {
			key = K_NAN;
			nan = EMU_NAN_IEEE;
		} else if (strcmp(tok, "nan=fn") == 0) {
			key = K_NAN;
			nan = EMU_NAN_FN;
		} else if (strcmp(tok, "nan=fnuz") == 0) {
			key = K_NAN;
			nan = EMU_NAN_FNUZ;
		} else if (strcmp(tok, "nan=none") == 0) {
			key = K_NAN;
			nan = EMU_NAN_NONE;
		} else {
			return bad(err, errlen, "unknown option in format spec '%s'", spec);
		}
		if (seen[key]) {
			if (err && errlen)
				snprintf(err, errlen, "format spec '%s' gives '%s' twice", spec,
				         key_name[key]);
			return EMU_ERR_BAD_SPEC;
		}
		seen[key] = true;
	}
	if (p < 1 || p > 24)
		return bad(err, errlen, "format spec '%s': need 1 <= p <= 24", spec);
	if (seen[K_EMAX] && (seen[K_EBITS] || seen[K_BIAS]))
		return bad(err, errlen,
		           "format spec '%s' gives emax= and ebits=/bias=: the exponent range is "
		           "one or the other (emax= derives ebits and bias)",
		           spec);
	if (seen[K_EBITS] != seen[K_BIAS])
		return bad(err, errlen, "format spec '%s': ebits= and bias= go together", spec);
	if (!seen[K_EMAX] && !seen[K_EBITS])
		return bad(
		    err, errlen,
		    "format spec '%s' has no exponent range (give emax=E, or ebits=K,bias=B)",
		    spec);
	if (nan != EMU_NAN_IEEE)
		inf = false;
	if (!sign && nan == EMU_NAN_FNUZ)
		return bad(
		    err, errlen,
		    "format spec '%s': nan=fnuz needs a sign bit (its NaN is the would-be -0)",
		    spec);
	if (!zero && sign)
		return bad(err, errlen,
		           "format spec '%s': nozero needs unsigned (a signed format without zero "
		           "would need a sign for its zero results)",
		           spec);
	if (!zero)
		sub = false; /* code 0 is the normal 2^-bias: there is no subnormal binade */
	if (nan == EMU_NAN_IEEE && p < 2)
		return bad(err, errlen,
		           "format spec '%s': p=1 with nan=ieee leaves no fraction bit to tell inf "
		           "from NaN (use nan=fn or none)",
		           spec);
	int k; /* ebits - 1 */
	if (seen[K_EBITS]) {
		if (ebits < 2 || ebits > 8)
			return bad(err, errlen, "format spec '%s': need 2 <= ebits <= 8", spec);
		k = (int)ebits - 1;
	} else {
		switch (nan) {
		case EMU_NAN_IEEE:
			k = ilog2_exact(emax + 1);
			bias = emax;
			break;
		case EMU_NAN_FNUZ:
			k = ilog2_exact(emax + 1);
			bias = emax + 1;
			break;
		default:
			k = ilog2_exact(emax);
			bias = emax - 1;
			break;
		}
		/* k = 0 (one exponent bit) leaves no normal binade in ieee style and
		 * only the top binade otherwise: refused, as emu_format_init does */
		if (k < 1 || k > 7)
			return bad(err, errlen,
			           "format spec '%s': emax must give 2..8 exponent bits "
			           "(ieee/fnuz: emax = 2^k-1, fn/none: emax = 2^k, 1 <= k <= 7)",
			           spec);
	}
	emu_format f = {0};
	snprintf(f.name, sizeof(f.name), "%s", spec);
	f.p = (int)p;
	f.ebits = k + 1;
	f.bias = (int)bias;
	f.has_sign = sign;
	f.has_inf = inf;
	f.has_subnormals = sub;
	f.has_zero = zero;
	f.nan = nan;
	emu_status st = emu_format_init(&f);
	if (st == EMU_ERR_RANGE && seen[K_BIAS]) {
		if (err && errlen)
			snprintf(err, errlen,
			         "format spec '%s': bias %ld puts the exponents at %d..%d, outside "
			         "%d..%d",
			         spec, bias, f.emin, f.emax, EMU_EMIN_LIMIT, EMU_EMAX_LIMIT);
		return EMU_ERR_BAD_SPEC;
	}
	if (st != EMU_OK)
		return bad(err, errlen, "format spec '%s' is not a valid format", spec);
	if (seen[K_EMAX] && f.emax != emax) /* p=1 with nan=fn: the top binade holds only the NaN */
		return bad(err, errlen,
		           "format spec '%s': p=1 with nan=fn leaves the top binade to the NaN "
		           "(use nan=none or fnuz, or give ebits= and bias=)",
		           spec);
	*out = f;
	return EMU_OK;
}
