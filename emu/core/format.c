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
		return EMU_ERR_RANGE;
	if (f->nan != EMU_NAN_IEEE && f->has_inf)
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

static emu_status bad(char *err, size_t len, emu_status st, const char *fmt, const char *arg)
{
	if (err && len)
		snprintf(err, len, fmt, arg);
	return st;
}

/*
 * Custom specs: "p=P,emax=E[,noinf][,nan=ieee|fn|fnuz|none][,nosub]", each
 * item once, no empty items.
 * ebits and bias follow from emax and the NaN style the way the built-ins do:
 *   ieee: bias = emax = 2^(ebits-1) - 1       fn:   bias = 2^(ebits-1) - 1, emax = bias + 1
 *   fnuz: bias = 2^(ebits-1), emax = bias - 1  none: as fn
 * so "p=4,emax=8,nan=fn" is e4m3 and "p=11,emax=15" is fp16.
 */
emu_status emu_format_parse(const char *spec, emu_format *out, char *err, size_t errlen)
{
	const emu_format *b = emu_format_by_name(spec);
	if (b) {
		*out = *b;
		return EMU_OK;
	}
	if (strncmp(spec, "p=", 2) != 0)
		return bad(err, errlen, EMU_ERR_UNKNOWN_FORMAT, "unknown format '%s'", spec);
	char buf[128];
	if (strlen(spec) >= sizeof(buf))
		return bad(err, errlen, EMU_ERR_BAD_SPEC, "format spec too long: '%.40s...'", spec);
	strcpy(buf, spec);
	long p = -1, emax = -1000;
	bool inf = true, sub = true;
	emu_nan_style nan = EMU_NAN_IEEE;
	/* each key at most once; no empty items (strtok would skip them) */
	enum { K_P, K_EMAX, K_NOINF, K_NOSUB, K_NAN, NKEYS };
	static const char *const key_name[NKEYS] = {"p", "emax", "noinf", "nosub", "nan"};
	bool seen[NKEYS] = {false};
	for (char *tok = buf, *next; tok; tok = next) {
		char *comma = strchr(tok, ',');
		next = comma ? comma + 1 : NULL;
		if (comma)
			*comma = '\0';
		if (!*tok)
			return bad(err, errlen, EMU_ERR_BAD_SPEC,
			           "format spec '%s' has an empty item (a stray comma)", spec);
		char *end;
		int key;
		if (strncmp(tok, "p=", 2) == 0) {
			key = K_P;
			p = strtol(tok + 2, &end, 10);
			if (end == tok + 2 || *end)
				return bad(err, errlen, EMU_ERR_BAD_SPEC, "bad precision in format spec '%s'", spec);
		} else if (strncmp(tok, "emax=", 5) == 0) {
			key = K_EMAX;
			emax = strtol(tok + 5, &end, 10);
			/* bounded first: emax ± 1 below must not overflow a long */
			if (end == tok + 5 || *end || emax < -(1L << 20) || emax > (1L << 20))
				return bad(err, errlen, EMU_ERR_BAD_SPEC, "bad emax in format spec '%s'", spec);
		} else if (strcmp(tok, "noinf") == 0) {
			key = K_NOINF;
			inf = false;
		} else if (strcmp(tok, "nosub") == 0) {
			key = K_NOSUB;
			sub = false;
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
			return bad(err, errlen, EMU_ERR_BAD_SPEC, "unknown option in format spec '%s'", spec);
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
		return bad(err, errlen, EMU_ERR_BAD_SPEC, "format spec '%s': need 1 <= p <= 24", spec);
	if (nan != EMU_NAN_IEEE)
		inf = false;
	long bias;
	int k; /* ebits - 1 */
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
		return bad(err, errlen, EMU_ERR_BAD_SPEC,
		           "format spec '%s': emax must give 2..8 exponent bits (ieee/fnuz: emax = 2^k-1, fn/none: emax = 2^k, 1 <= k <= 7)",
		           spec);
	emu_format f = {0};
	snprintf(f.name, sizeof(f.name), "%s", spec);
	f.p = (int)p;
	f.ebits = k + 1;
	f.bias = (int)bias;
	f.has_sign = true;
	f.has_inf = inf;
	f.has_subnormals = sub;
	f.has_zero = true;
	f.nan = nan;
	if (emu_format_init(&f) != EMU_OK)
		return bad(err, errlen, EMU_ERR_BAD_SPEC, "format spec '%s' is not a valid format", spec);
	if (f.emax != emax) /* p=1 with nan=fn: the top binade holds only the NaN */
		return bad(err, errlen, EMU_ERR_BAD_SPEC,
		           "format spec '%s': p=1 with nan=fn leaves the top binade to the NaN (use nan=none or fnuz)",
		           spec);
	*out = f;
	return EMU_OK;
}
