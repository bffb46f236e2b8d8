/* check_format.c — the format table against FACTS §1 and the custom specs:
 * names for the built-ins, emax= and ebits=,bias= ranges, unsigned and
 * nozero, the formats of ml_dtypes only a spec expresses, and one clear
 * error for each kind of bad spec. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/lib.h"

static const struct {
	const char *name;
	int bits, p, bias;
	double max, min_normal, min_sub;
	int has_inf;
	emu_bits nan_bits, max_bits;
} rows[] = {
	/* IEEE 754-2019; OCP OFP8 rev 1.0; OCP MX v1.0 */
	{"fp32", 32, 24, 127, 0x1.fffffep127, 0x1p-126, 0x1p-149, 1, 0x7fc00000, 0x7f7fffff},
	{"tf32", 19, 11, 127, 0x1.ffcp127, 0x1p-126, 0x1p-136, 1, 0x3fe00, 0x3fbff},
	{"fp16", 16, 11, 15, 65504, 0x1p-14, 0x1p-24, 1, 0x7e00, 0x7bff},
	{"bf16", 16, 8, 127, 0x1.fep127, 0x1p-126, 0x1p-133, 1, 0x7fc0, 0x7f7f},
	{"e4m3", 8, 4, 7, 448, 0x1p-6, 0x1p-9, 0, 0x7f, 0x7e},
	{"e5m2", 8, 3, 15, 57344, 0x1p-14, 0x1p-16, 1, 0x7e, 0x7b},
	{"e4m3fnuz", 8, 4, 8, 240, 0x1p-7, 0x1p-10, 0, 0x80, 0x7f},
	{"e5m2fnuz", 8, 3, 16, 57344, 0x1p-15, 0x1p-17, 0, 0x80, 0x7f},
	{"e3m2", 6, 3, 3, 28, 0x1p-2, 0x1p-4, 0, 0, 0x1f},
	{"e2m3", 6, 4, 1, 7.5, 1, 0x1p-3, 0, 0, 0x1f},
	{"e2m1", 4, 2, 1, 6, 1, 0.5, 0, 0, 0x7},
	{"e8m0", 8, 1, 127, 0x1p127, 0x1p-127, 0x1p-127, 0, 0xff, 0xfe},
};

START_TEST(test_table)
{
	const emu_format *f = t_fmt(rows[_i].name);
	ck_assert_msg(f->bits == rows[_i].bits && f->p == rows[_i].p && f->bias == rows[_i].bias,
	              "%s: bits/p/bias %d/%d/%d", f->name, f->bits, f->p, f->bias);
	ck_assert_msg(f->max == rows[_i].max, "%s: max %a", f->name, f->max);
	ck_assert_msg(f->min_normal == rows[_i].min_normal, "%s: min normal %a", f->name, f->min_normal);
	ck_assert_msg(f->min_subnormal == rows[_i].min_sub, "%s: min sub %a", f->name, f->min_subnormal);
	ck_assert_msg(f->has_inf == rows[_i].has_inf, "%s: inf", f->name);
	ck_assert_msg(f->nan_bits == rows[_i].nan_bits, "%s: nan 0x%x", f->name, f->nan_bits);
	ck_assert_msg(f->max_bits == rows[_i].max_bits, "%s: max bits 0x%x", f->name, f->max_bits);
	ck_assert_msg(emu_decode(f, f->max_bits) == f->max, "%s: decode(max)", f->name);
}
END_TEST

/* Custom formats the codec must walk as the built-ins: an explicit bias,
 * unsigned with and without zero, with inf and without NaN. */
static const char *const walk_specs[] = {
    "p=4,ebits=4,bias=11,nan=fnuz",
    "p=4,ebits=5,bias=15,unsigned,nan=fn",
    "p=3,ebits=3,bias=2,unsigned,nozero,nan=fn",
    "p=3,ebits=2,bias=0,unsigned",
    "p=3,ebits=2,bias=1,unsigned,nan=none",
    "p=2,ebits=3,bias=-3,nan=fnuz,nosub",
};

/* Every encoding decodes to a value that encodes back to itself (NaNs to
 * the produced NaN), and values increase with encodings of one sign. */
START_TEST(test_codec_roundtrip)
{
	emu_format custom;
	const emu_format *f = emu_format_at(_i);
	if ((size_t)_i >= emu_format_count()) {
		const char *spec = walk_specs[(size_t)_i - emu_format_count()];
		char err[160];
		ck_assert_msg(emu_format_parse(spec, &custom, err, sizeof err) == EMU_OK, "%s: %s",
		              spec, err);
		f = &custom;
	}
	if (f->bits > 16)
		return;
	double prev = -1;
	for (emu_bits b = 0; b < (1u << f->bits); b++) {
		double v = emu_decode(f, b);
		emu_bits back = emu_encode(f, v);
		if (isnan(v)) {
			ck_assert_msg(emu_is_nan(f, b) && back == f->nan_bits, "%s 0x%x", f->name, b);
			continue;
		}
		/* zeros encode as the one zero: fnuz has no -0, and without
		 * subnormals every code of exponent field 0 reads as a zero */
		ck_assert_msg(back == b ||
		                  (v == 0 && (f->nan == EMU_NAN_FNUZ || !f->has_subnormals)),
		              "%s: 0x%x -> %a -> 0x%x", f->name, b, v, back);
		if (f->sign_mask && b == f->sign_mask)
			prev = -1;
		if (!(b & f->sign_mask) && !isinf(v)) {
			ck_assert_msg(v > prev || b == 0 || v == 0, "%s: not increasing at 0x%x",
			              f->name, b);
			prev = v;
		}
	}
}
END_TEST

static const struct {
	const char *spec, *same_as;
} customs[] = {
    {"p=11,emax=15", "fp16"},
    {"p=8,emax=127", "bf16"},
    {"p=4,emax=8,nan=fn", "e4m3"},
    {"p=3,emax=15", "e5m2"},
    {"p=4,emax=7,nan=fnuz", "e4m3fnuz"},
    {"p=3,emax=15,nan=fnuz", "e5m2fnuz"},
    {"p=3,emax=4,nan=none", "e3m2"},
    {"p=2,emax=2,nan=none", "e2m1"},
    {"p=24,emax=127", "fp32"},
    /* the same with the exponent field and bias given */
    {"p=11,ebits=5,bias=15", "fp16"},
    {"p=8,ebits=8,bias=127", "bf16"},
    {"p=4,ebits=4,bias=7,nan=fn", "e4m3"},
    {"p=4,ebits=4,bias=8,nan=fnuz", "e4m3fnuz"},
    {"p=3,ebits=5,bias=16,nan=fnuz", "e5m2fnuz"},
    {"p=4,ebits=2,bias=1,nan=none", "e2m3"},
    {"p=11,ebits=8,bias=127", "tf32"},
    /* ml_dtypes' float8_e8m0fnu, the OCP MX scale */
    {"p=1,ebits=8,bias=127,unsigned,nozero,nan=fn", "e8m0"},
    {"p=1,ebits=8,bias=127,nozero,unsigned,nosub,nan=fn", "e8m0"},
};

/* Every field but the name, defining and derived: one descriptor. */
static bool same_format(const emu_format *a, const emu_format *b)
{
	return a->p == b->p && a->ebits == b->ebits && a->bias == b->bias &&
	       a->has_sign == b->has_sign && a->has_inf == b->has_inf &&
	       a->has_subnormals == b->has_subnormals && a->has_zero == b->has_zero &&
	       a->nan == b->nan && a->bits == b->bits && a->emin == b->emin && a->emax == b->emax &&
	       a->man_mask == b->man_mask && a->exp_mask == b->exp_mask &&
	       a->sign_mask == b->sign_mask && a->max_bits == b->max_bits &&
	       a->nan_bits == b->nan_bits && a->inf_bits == b->inf_bits && a->max == b->max &&
	       a->min_normal == b->min_normal && a->min_subnormal == b->min_subnormal &&
	       a->epsilon == b->epsilon;
}

START_TEST(test_custom_specs)
{
	emu_format c;
	char err[160];
	ck_assert_msg(emu_format_parse(customs[_i].spec, &c, err, sizeof err) == EMU_OK, "%s: %s",
	              customs[_i].spec, err);
	const emu_format *f = t_fmt(customs[_i].same_as);
	ck_assert_msg(same_format(&c, f), "%s differs from %s", customs[_i].spec, f->name);
	ck_assert_msg(strcmp(c.name, customs[_i].spec) == 0, "name '%s' for '%s'", c.name,
	              customs[_i].spec);
}
END_TEST

/* ml_dtypes' formats that no built-in is, as specs (ml_dtypes 0.7.0,
 * ml_dtypes.finfo and its README: float8_e4m3b11fnuz has bias 11,
 * float8_e5m3fnu is unsigned with float8_e4m3fn's NaN rule; float8_e4m3 and
 * float8_e3m4 are IEEE-style with inf). */
static const struct {
	const char *spec;
	int bits, bias, emin, emax;
	double max, min_normal, min_sub;
	bool has_sign;
	emu_bits nan_bits, max_bits, inf_bits;
} mld[] = {
    {"p=4,ebits=4,bias=11,nan=fnuz", 8, 11, -10, 4, 30, 0x1p-10, 0x1p-13, true, 0x80, 0x7f, 0},
    {"p=4,ebits=5,bias=15,unsigned,nan=fn", 8, 15, -14, 16, 114688, 0x1p-14, 0x1p-17, false, 0xff,
     0xfe, 0},
    {"p=4,emax=7", 8, 7, -6, 7, 240, 0x1p-6, 0x1p-9, true, 0x7c, 0x77, 0x78},
    {"p=5,emax=3", 8, 3, -2, 3, 15.5, 0.25, 0x1p-6, true, 0x78, 0x6f, 0x70},
};

START_TEST(test_mldtypes_specs)
{
	emu_format f;
	char err[160];
	ck_assert_msg(emu_format_parse(mld[_i].spec, &f, err, sizeof err) == EMU_OK, "%s: %s",
	              mld[_i].spec, err);
	ck_assert_msg(f.bits == mld[_i].bits && f.bias == mld[_i].bias && f.emin == mld[_i].emin &&
	                  f.emax == mld[_i].emax && f.has_sign == mld[_i].has_sign,
	              "%s: bits %d bias %d emin %d emax %d sign %d", f.name, f.bits, f.bias, f.emin,
	              f.emax, f.has_sign);
	ck_assert_msg(f.max == mld[_i].max && f.min_normal == mld[_i].min_normal &&
	                  f.min_subnormal == mld[_i].min_sub,
	              "%s: max %a min normal %a min sub %a", f.name, f.max, f.min_normal,
	              f.min_subnormal);
	ck_assert_msg(f.nan_bits == mld[_i].nan_bits && f.max_bits == mld[_i].max_bits &&
	                  f.inf_bits == mld[_i].inf_bits,
	              "%s: nan 0x%x max 0x%x inf 0x%x", f.name, f.nan_bits, f.max_bits, f.inf_bits);
	ck_assert_msg(emu_decode(&f, f.max_bits) == f.max, "%s: decode(max)", f.name);
}
END_TEST

START_TEST(test_bad_specs)
{
	static const char *bad[] = {
	    "fp17", "p=", "p=0,emax=15", "p=25,emax=15", "p=5,emax=14", "p=5,emax=15,nan=weird",
	    "p=5,emax=15,bogus", "p=x,emax=15", "p=5,emax=512", "p=5,emax=9223372036854775807",
	    "p=5,emax=-9223372036854775808,nan=fn", "",
	    /* one exponent bit */
	    "p=4,emax=0", "p=4,emax=0,noinf", "p=2,emax=0,nan=fnuz", "p=1,emax=1,nan=fn",
	    "p=3,emax=1,nan=none",
	    /* p=1, fn: the top binade is the NaN alone */
	    "p=1,emax=2,nan=fn", "p=1,emax=128,nan=fn",
	    /* items twice, empty items */
	    "p=4,p=5,emax=7", "p=4,emax=7,emax=7", "p=4,emax=7,nosub,nosub",
	    "p=4,emax=8,nan=fn,nan=fn", "p=4,emax=7,noinf,noinf", "p=4,emax=7,", "p=4,,emax=7",
	    "p=4,emax=7,,",
	    /* the exponent range given twice, half or not at all */
	    "p=4,emax=7,ebits=4,bias=7", "p=4,emax=7,ebits=4", "p=4,emax=7,bias=7", "p=4,ebits=4",
	    "p=4,bias=7", "p=4", "p=4,nan=fn", "p=4,ebits=4,bias=7,ebits=4",
	    "p=4,ebits=4,bias=7,bias=8",
	    /* bad numbers */
	    "p=4,ebits=x,bias=7", "p=4,ebits=4,bias=", "p=4,ebits=4,bias=7x", "p=4,ebits=,bias=7",
	    "p=4,ebits=4,bias=99999999999999999999",
	    /* the exponent field and the range */
	    "p=4,ebits=1,bias=0", "p=4,ebits=9,bias=127", "p=4,ebits=0,bias=0",
	    "p=4,ebits=-3,bias=0", "p=4,ebits=4,bias=-120", "p=4,ebits=4,bias=129",
	    "p=2,ebits=8,bias=125", "p=1,ebits=8,bias=128,unsigned,nozero,nan=fn",
	    "p=4,ebits=8,bias=129,nan=fnuz",
	    /* p = 1 in ieee style has no room for inf and NaN */
	    "p=1,ebits=4,bias=7", "p=1,ebits=4,bias=7,noinf",
	    /* unsigned and nozero */
	    "p=4,ebits=4,bias=7,unsigned,nan=fnuz", "p=4,emax=7,unsigned,nan=fnuz",
	    "p=4,ebits=4,bias=7,nozero", "p=1,ebits=8,bias=127,nozero,nan=fn",
	    "p=4,ebits=4,bias=7,unsigned,unsigned", "p=4,ebits=4,bias=7,unsigned,nozero,nozero",
	    "p=4,ebits=4,bias=7,signed", "p=4,ebits=4,bias=7,unsigned=1",
	    /* a name holds 63 characters */
	    "p=24,ebits=8,bias=000000000000000000000000000000000000127,nan=fn"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		emu_format c;
		char err[128] = "";
		ck_assert_msg(emu_format_parse(bad[i], &c, err, sizeof err) != EMU_OK, "'%s' accepted",
		              bad[i]);
		ck_assert_msg(strlen(err) > 0 && strchr(err, '\n') == NULL, "'%s': no one-line error",
		              bad[i]);
	}
	emu_format c;
	char err[160];
	static const struct {
		const char *spec, *says;
	} named[] = {
	    {"p=4,p=5,emax=7", "gives 'p' twice"},
	    {"p=4,emax=8,nan=fn,nan=ieee", "gives 'nan' twice"},
	    {"p=4,emax=7,", "has an empty item"},
	    {"p=4,emax=0", "2..8 exponent bits"},
	    {"p=4,emax=7,ebits=4,bias=7", "gives emax= and ebits=/bias="},
	    {"p=4,bias=7,emax=7", "gives emax= and ebits=/bias="},
	    {"p=4,ebits=4", "ebits= and bias= go together"},
	    {"p=4,bias=7", "ebits= and bias= go together"},
	    {"p=4,nan=fn", "has no exponent range"},
	    {"p=4,ebits=4,bias=7,bias=7", "gives 'bias' twice"},
	    {"p=4,ebits=4,bias=7,unsigned,unsigned", "gives 'unsigned' twice"},
	    {"p=4,ebits=x,bias=7", "bad ebits"},
	    {"p=4,ebits=4,bias=", "bad bias"},
	    {"p=4,ebits=9,bias=127", "need 2 <= ebits <= 8"},
	    {"p=4,ebits=4,bias=-120", "outside -127..128"},
	    {"p=4,ebits=4,bias=129", "bias 129 puts the exponents at -128..-115"},
	    {"p=1,ebits=4,bias=7", "p=1 with nan=ieee"},
	    {"p=4,ebits=4,bias=7,unsigned,nan=fnuz", "nan=fnuz needs a sign bit"},
	    {"p=4,ebits=4,bias=7,nozero", "nozero needs unsigned"},
	    {"p=4,ebits=4,bias=7,signed", "unknown option"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(named); i++) {
		ck_assert(emu_format_parse(named[i].spec, &c, err, sizeof err) != EMU_OK);
		ck_assert_msg(strstr(err, named[i].says) && strstr(err, named[i].spec), "'%s': %s",
		              named[i].spec, err);
	}
	ck_assert(emu_format_parse("p=5,emax=15,nosub,noinf", &c, err, sizeof err) == EMU_OK);
	ck_assert(!c.has_subnormals && !c.has_inf && c.min_subnormal == c.min_normal);
	/* a spec is its format's name: the longest a name holds is kept whole,
	 * one character more is refused, never cut */
	static const char *const longest =
	    "p=24,ebits=8,bias=00000000000000000000000000000000000127,nan=fn";
	static const char *const too_long =
	    "p=24,ebits=8,bias=000000000000000000000000000000000000127,nan=fn";
	ck_assert_uint_eq(strlen(longest), sizeof c.name - 1);
	ck_assert_msg(emu_format_parse(longest, &c, err, sizeof err) == EMU_OK, "%s", err);
	ck_assert_str_eq(c.name, longest);
	ck_assert(emu_format_parse(too_long, &c, err, sizeof err) != EMU_OK);
	ck_assert_msg(strstr(err, "too long"), "%s", err);
}
END_TEST

/* emu_format_init refuses what a descriptor cannot mean, not only what the
 * parser refuses: a range past the fast backend's exact one, a format
 * without zero that has a sign or subnormals, fnuz without a sign. */
START_TEST(test_init_refuses)
{
	static const struct {
		int p, ebits, bias;
		bool sign, sub, zero;
		emu_nan_style nan;
		const char *why;
	} rows[] = {
	    {4, 4, -120, true, true, true, EMU_NAN_FN, "emax 135 > 128"},
	    {4, 4, 129, true, true, true, EMU_NAN_FN, "emin -128 < -127"},
	    {1, 8, 128, false, false, false, EMU_NAN_FN, "e8m0 with emin -128"},
	    {1, 8, 127, true, false, false, EMU_NAN_FN, "no zero with a sign"},
	    {3, 4, 7, false, true, false, EMU_NAN_FN, "no zero with subnormals"},
	    {3, 4, 8, false, true, true, EMU_NAN_FNUZ, "fnuz without a sign"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		emu_format f = {.name = "x",
		                .p = rows[i].p,
		                .ebits = rows[i].ebits,
		                .bias = rows[i].bias,
		                .has_sign = rows[i].sign,
		                .has_subnormals = rows[i].sub,
		                .has_zero = rows[i].zero,
		                .nan = rows[i].nan};
		ck_assert_msg(emu_format_init(&f) == EMU_ERR_RANGE, "accepted: %s", rows[i].why);
	}
	/* and the edges themselves are formats */
	emu_format lo = {.name = "x", .p = 1, .ebits = 8, .bias = 127, .nan = EMU_NAN_FN};
	ck_assert(emu_format_init(&lo) == EMU_OK && lo.emin == EMU_EMIN_LIMIT);
	emu_format hi = {.name = "x",
	                 .p = 24,
	                 .ebits = 6,
	                 .bias = -65,
	                 .has_sign = true,
	                 .has_subnormals = true,
	                 .has_zero = true,
	                 .nan = EMU_NAN_FN};
	ck_assert(emu_format_init(&hi) == EMU_OK && hi.emax == EMU_EMAX_LIMIT);
}
END_TEST

/* Every spec the parser accepts (p <= 8 and all emax, NaN, inf and subnormal
 * choices) describes the format it claims: emax as given, max and
 * min_normal are the values of their encodings, max_bits is the largest
 * finite encoding, and max, min_normal, min_subnormal convert exactly. */
START_TEST(test_every_spec)
{
	static const char *const nans[] = {"ieee", "fn", "fnuz", "none"};
	uint64_t accepted = 0, refused = 0;
	for (int p = 1; p <= 8; p++)
		for (long emax = -2; emax <= 260; emax++)
			for (int v = 0; v < 16; v++) {
				char spec[96];
				snprintf(spec, sizeof spec, "p=%d,emax=%ld,nan=%s%s%s", p, emax, nans[v & 3],
				         v & 4 ? ",noinf" : "", v & 8 ? ",nosub" : "");
				emu_format f;
				char err[200];
				if (emu_format_parse(spec, &f, err, sizeof err) != EMU_OK) {
					ck_assert_msg(strlen(err) > 0 && !strchr(err, '\n'), "%s: %s", spec, err);
					refused++;
					continue;
				}
				accepted++;
				ck_assert_msg(f.ebits >= 2 && f.emax == emax, "%s: ebits %d emax %d", spec,
				              f.ebits, f.emax);
				ck_assert_msg(emu_classify(&f, f.max_bits) == EMU_CLASS_NORMAL &&
				                  emu_decode(&f, f.max_bits) == f.max,
				              "%s: max_bits 0x%x decodes to %a, max %a", spec, f.max_bits,
				              emu_decode(&f, f.max_bits), f.max);
				emu_bits up = f.max_bits + 1;
				ck_assert_msg(emu_is_nan(&f, up) || (f.has_inf && up == f.inf_bits) ||
				                  up > (f.exp_mask | f.man_mask),
				              "%s: 0x%x above max_bits is finite", spec, up);
				emu_bits mn = (emu_bits)(f.emin + f.bias) << (f.p - 1);
				ck_assert_msg(emu_decode(&f, mn) == f.min_normal, "%s: min_normal", spec);
				emu_env env = EMU_ENV_DEFAULT;
				const double v3[3] = {f.max, f.min_normal, f.min_subnormal};
				for (int k = 0; k < 3; k++) {
					emu_result r = emu_from_double(&f, v3[k], &env);
					emu_result m = emu_mp_from_double(&f, v3[k], &env);
					ck_assert_msg(r.flags == 0 && m.flags == 0 && r.bits == m.bits &&
					                  emu_decode(&f, r.bits) == v3[k],
					              "%s: %a converts to 0x%x flags %x (mpfr 0x%x %x)", spec,
					              v3[k], r.bits, r.flags, m.bits, m.flags);
				}
			}
	t_count("format: accepted specs describe their format", accepted);
	ck_assert(accepted > 300 && refused > accepted);
}
END_TEST

/* Every ebits=,bias= spec of p <= 8, each NaN style and option, with the
 * biases at and around each edge of the exponent range and the usual ones:
 * accepted exactly when emin >= -127 and emax <= 128, and then the format
 * the spec names by the formulas of docs/numerics.md, worked out here
 * apart from emu_format_init: bits, emin, emax, max, and its limits
 * converted exactly by both backends. */
START_TEST(test_every_biased_spec)
{
	static const char *const nans[] = {"ieee", "fn", "fnuz", "none"};
	uint64_t accepted = 0, refused = 0;
	for (int p = 1; p <= 8; p++)
		for (int eb = 2; eb <= 8; eb++)
			for (int v = 0; v < 64; v++) {
				int nan = v & 3;
				bool noinf = v & 4, nosub = v & 8, uns = v & 16, nozero = v & 32;
				int top = (1 << eb) - 1; /* the all-ones exponent code */
				/* the top finite binade's code and its largest significand */
				int etop = nan == 0 || (nan == 1 && p == 1) ? top - 1 : top;
				double sig =
				    nan == 1 && p > 1 ? 2 - ldexp(1, 2 - p) : 2 - ldexp(1, 1 - p);
				int zbias = nozero ? 0 : 1;
				int lo = etop - EMU_EMAX_LIMIT, hi = zbias - EMU_EMIN_LIMIT;
				const int biases[] = {lo - 1,
				                      lo,
				                      lo + 1,
				                      hi - 1,
				                      hi,
				                      hi + 1,
				                      (1 << (eb - 1)) - 1,
				                      1 << (eb - 1),
				                      0,
				                      -3,
				                      11};
				for (size_t bi = 0; bi < ARRAY_SIZE(biases); bi++) {
					int bias = biases[bi];
					char spec[96];
					snprintf(spec, sizeof spec,
					         "p=%d,ebits=%d,bias=%d,nan=%s%s%s%s%s", p, eb,
					         bias, nans[nan], noinf ? ",noinf" : "",
					         nosub ? ",nosub" : "", uns ? ",unsigned" : "",
					         nozero ? ",nozero" : "");
					bool valid = !(nan == 0 && p == 1) && !(nan == 2 && uns) &&
					             !(nozero && !uns) &&
					             etop - bias <= EMU_EMAX_LIMIT &&
					             zbias - bias >= EMU_EMIN_LIMIT;
					emu_format f;
					char err[200] = "";
					emu_status st = emu_format_parse(spec, &f, err, sizeof err);
					ck_assert_msg((st == EMU_OK) == valid, "%s: %s (%s)", spec,
					              st == EMU_OK ? "accepted" : "refused", err);
					if (st != EMU_OK) {
						ck_assert_msg(strlen(err) > 0 && !strchr(err, '\n'),
						              "%s", spec);
						refused++;
						continue;
					}
					accepted++;
					int emin = zbias - bias, emax = etop - bias;
					ck_assert_msg(
					    f.ebits == eb && f.bias == bias && f.emin == emin &&
					        f.emax == emax && f.bits == eb + p - 1 + !uns &&
					        f.has_sign == !uns && f.has_zero == !nozero &&
					        f.has_subnormals == (!nosub && !nozero) &&
					        f.has_inf == (nan == 0 && !noinf),
					    "%s: ebits %d bias %d emin %d emax %d bits %d", spec,
					    f.ebits, f.bias, f.emin, f.emax, f.bits);
					ck_assert_msg(f.max == ldexp(sig, emax) &&
					                  f.min_normal == ldexp(1, emin) &&
					                  emu_decode(&f, f.max_bits) == f.max,
					              "%s: max %a, want %a", spec, f.max,
					              ldexp(sig, emax));
					emu_env env = EMU_ENV_DEFAULT;
					const double v3[3] = {f.max, f.min_normal, f.min_subnormal};
					for (int k = 0; k < 3; k++) {
						emu_result r = emu_from_double(&f, v3[k], &env);
						emu_result m = emu_mp_from_double(&f, v3[k], &env);
						ck_assert_msg(r.flags == 0 && m.flags == 0 &&
						                  r.bits == m.bits &&
						                  emu_decode(&f, r.bits) == v3[k],
						              "%s: %a converts to 0x%x flags %x "
						              "(mpfr 0x%x %x)",
						              spec, v3[k], r.bits, r.flags, m.bits,
						              m.flags);
					}
				}
			}
	t_count("format: accepted ebits=,bias= specs describe their format", accepted);
	ck_assert(accepted > 10000 && refused > 1000);
}
END_TEST

Suite *suite_format(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("table");
	tcase_add_loop_test(tc, test_table, 0, ARRAY_SIZE(rows));
	tcase_add_loop_test(tc, test_codec_roundtrip, 0,
	                    (int)(emu_format_count() + ARRAY_SIZE(walk_specs)));
	tcase_add_loop_test(tc, test_custom_specs, 0, ARRAY_SIZE(customs));
	tcase_add_loop_test(tc, test_mldtypes_specs, 0, ARRAY_SIZE(mld));
	tcase_add_test(tc, test_bad_specs);
	tcase_add_test(tc, test_init_refuses);
	tcase_add_test(tc, test_every_spec);
	tcase_add_test(tc, test_every_biased_spec);
	suite_add_tcase(s, tc);
	return s;
}
