/* check_format.c — the format table against FACTS §1 and the custom specs. */
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

/* Every encoding decodes to a value that encodes back to itself (NaNs to
 * the produced NaN), and values increase with encodings of one sign. */
START_TEST(test_codec_roundtrip)
{
	const emu_format *f = emu_format_at(_i);
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
		ck_assert_msg(back == b || (v == 0 && f->nan == EMU_NAN_FNUZ),
		              "%s: 0x%x -> %a -> 0x%x", f->name, b, v, back);
		if (f->sign_mask && b == f->sign_mask)
			prev = -1;
		if (!(b & f->sign_mask) && !isinf(v)) {
			ck_assert_msg(v > prev || b == 0, "%s: not increasing at 0x%x", f->name, b);
			prev = v;
		}
	}
}
END_TEST

static const struct {
	const char *spec, *same_as;
} customs[] = {
	{"p=11,emax=15", "fp16"},          {"p=8,emax=127", "bf16"},
	{"p=4,emax=8,nan=fn", "e4m3"},     {"p=3,emax=15", "e5m2"},
	{"p=4,emax=7,nan=fnuz", "e4m3fnuz"}, {"p=3,emax=15,nan=fnuz", "e5m2fnuz"},
	{"p=3,emax=4,nan=none", "e3m2"},   {"p=2,emax=2,nan=none", "e2m1"},
	{"p=24,emax=127", "fp32"},
};

START_TEST(test_custom_specs)
{
	emu_format c;
	char err[128];
	ck_assert_msg(emu_format_parse(customs[_i].spec, &c, err, sizeof err) == EMU_OK, "%s: %s",
	              customs[_i].spec, err);
	const emu_format *f = t_fmt(customs[_i].same_as);
	ck_assert_msg(c.bits == f->bits && c.bias == f->bias && c.max == f->max &&
	                  c.nan_bits == f->nan_bits && c.min_subnormal == f->min_subnormal &&
	                  c.has_inf == f->has_inf,
	              "%s differs from %s", customs[_i].spec, f->name);
}
END_TEST

START_TEST(test_bad_specs)
{
	static const char *bad[] = {"fp17", "p=", "p=0,emax=15", "p=25,emax=15", "p=5,emax=14",
	                            "p=5,emax=15,nan=weird", "p=5,emax=15,bogus", "p=x,emax=15",
	                            "p=5,emax=512", "p=5,emax=9223372036854775807",
	                            "p=5,emax=-9223372036854775808,nan=fn", "",
	                            /* one exponent bit */
	                            "p=4,emax=0", "p=4,emax=0,noinf", "p=2,emax=0,nan=fnuz",
	                            "p=1,emax=1,nan=fn", "p=3,emax=1,nan=none",
	                            /* p=1, fn: the top binade is the NaN alone */
	                            "p=1,emax=2,nan=fn", "p=1,emax=128,nan=fn",
	                            /* items twice, empty items */
	                            "p=4,p=5,emax=7", "p=4,emax=7,emax=7", "p=4,emax=7,nosub,nosub",
	                            "p=4,emax=8,nan=fn,nan=fn", "p=4,emax=7,noinf,noinf",
	                            "p=4,emax=7,", "p=4,,emax=7", "p=4,emax=7,,"};
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
	};
	for (size_t i = 0; i < ARRAY_SIZE(named); i++) {
		ck_assert(emu_format_parse(named[i].spec, &c, err, sizeof err) != EMU_OK);
		ck_assert_msg(strstr(err, named[i].says) && strstr(err, named[i].spec), "'%s': %s",
		              named[i].spec, err);
	}
	ck_assert(emu_format_parse("p=5,emax=15,nosub,noinf", &c, err, sizeof err) == EMU_OK);
	ck_assert(!c.has_subnormals && !c.has_inf && c.min_subnormal == c.min_normal);
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

Suite *suite_format(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("table");
	tcase_add_loop_test(tc, test_table, 0, ARRAY_SIZE(rows));
	tcase_add_loop_test(tc, test_codec_roundtrip, 0, (int)emu_format_count());
	tcase_add_loop_test(tc, test_custom_specs, 0, ARRAY_SIZE(customs));
	tcase_add_test(tc, test_bad_specs);
	tcase_add_test(tc, test_every_spec);
	suite_add_tcase(s, tc);
	return s;
}
