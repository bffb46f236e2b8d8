/*
 * check_exhaustive.c — `make test-exhaustive`: all 2^32 fp16 pairs for add,
 * sub, mul, div and fma with a fixed addend, against hardware; bf16 (and
 * fp16 flags) against MPFR on a prime stride through the 2^32 pairs; fma on
 * every triple of the two 8-bit formats only a custom spec expresses
 * (ml_dtypes' float8_e4m3b11fnuz and float8_e5m3fnu) against MPFR.
 *
 * The fp16 oracle: AVX-512 FP16 where the CPU has it; otherwise binary32
 * arithmetic rounded to odd (round toward zero, then OR the inexact flag into
 * the last bit) followed by the F16C conversion in the mode under test.
 * Rounding to odd with 24 >= 11 + 2 bits makes the second rounding exact in
 * every mode (Boldo & Melquiond, IEEE TC 2008), so F16C decides the bits.
 */
#include <fenv.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/oracles/hw.h"
#include "tests/lib.h"

static const emu_op ops[] = {EMU_OP_ADD, EMU_OP_SUB, EMU_OP_MUL, EMU_OP_DIV, EMU_OP_FMA};
static const emu_bits fixed_c = 0xbc00; /* -1: cancellation near 1 */

/* fenv rounding of the mode under test */
static int fe_mode(emu_mode m)
{
	return m == EMU_RTZ ? FE_TOWARDZERO : m == EMU_UP ? FE_UPWARD : m == EMU_DOWN ? FE_DOWNWARD :
	                                                                           FE_TONEAREST;
}

/* op(a, b, c) rounded to odd in binary32, called under FE_TOWARDZERO. An
 * exact zero is recomputed in the target mode: the sign of an exact zero
 * sum depends on it (−0 when rounding down, IEEE 754 §6.3), and rounding
 * toward zero alone would always give +0. */
static float odd(emu_op op, float a, float b, float c, emu_mode target)
{
	volatile float x = a, y = b, z = c, r;
	feclearexcept(FE_INEXACT);
	switch (op) {
	case EMU_OP_ADD:
		r = x + y;
		break;
	case EMU_OP_SUB:
		r = x - y;
		break;
	case EMU_OP_MUL:
		r = x * y;
		break;
	case EMU_OP_DIV:
		r = x / y;
		break;
	default:
		r = fmaf(x, y, z);
		break;
	}
	float out = r;
	if (out == 0 && !fetestexcept(FE_INEXACT) && op != EMU_OP_MUL && op != EMU_OP_DIV) {
		fesetround(fe_mode(target));
		r = op == EMU_OP_ADD ? x + y : op == EMU_OP_SUB ? x - y : fmaf(x, y, z);
		out = r;
		fesetround(FE_TOWARDZERO);
		return out;
	}
	if (fetestexcept(FE_INEXACT) && isfinite(out)) {
		uint32_t u;
		memcpy(&u, &out, sizeof u);
		u |= 1;
		memcpy(&out, &u, sizeof u);
	}
	return out;
}

static int is_nan16(uint16_t h)
{
	return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

START_TEST(test_fp16_all_pairs_hw)
{
	if (!emu_hw_has(EMU_HW_F16C)) {
		printf("exhaustive: %s: fp16 hardware oracle skipped\n", emu_hw_absent_reason(EMU_HW_F16C));
		return;
	}
	static const emu_mode modes[] = {EMU_RNE, EMU_RTZ, EMU_UP, EMU_DOWN};
	float tab[65536];
	uint16_t all[65536];
	for (uint32_t i = 0; i < 65536; i++)
		all[i] = (uint16_t)i;
	emu_hw_f16c_to_float(all, tab, 65536);
	const emu_format *f = t_fmt("fp16");
	emu_op op = ops[_i % ARRAY_SIZE(ops)];
	emu_mode mode = modes[_i / ARRAY_SIZE(ops)];
	const char *only = getenv("NANMAP_EXH_MODES"); /* e.g. "down,up": rerun a subset */
	if (only && !strstr(only, emu_mode_name(mode)))
		return;
	/* RNE over all 2^32 pairs; other modes over every 7th first operand */
	uint32_t astep = mode == EMU_RNE ? 1 : 7;
	uint64_t bad = 0, n = 0;
	char first[200] = "";
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : bad, n)
	for (uint32_t a = 0; a < 65536; a += astep) {
		int old = fegetround();
		fesetround(FE_TOWARDZERO);
		static _Thread_local float r[65536];
		static _Thread_local uint16_t hw[65536];
		for (uint32_t b = 0; b < 65536; b++)
			r[b] = odd(op, tab[a], tab[b], tab[fixed_c], mode);
		fesetround(old);
		emu_hw_f16c_from_float(r, hw, 65536, mode);
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = mode;
		emu_bits args[3] = {a, 0, fixed_c};
		for (uint32_t b = 0; b < 65536; b++) {
			args[1] = b;
			emu_bits e = emu_apply(op, f, NULL, args, &env).bits;
			n++;
			if (e != hw[b] && !(is_nan16(hw[b]) && emu_is_nan(f, e))) {
				if (bad++ == 0) {
#pragma omp critical
					snprintf(first, sizeof first, "%s %s 0x%04x 0x%04x: emu 0x%04x hw 0x%04x",
					         emu_op_name(op), emu_mode_name(mode), a, b, e, hw[b]);
				}
			}
		}
	}
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "exhaustive fp16 %s %s vs F16C (round-to-odd)", emu_op_name(op),
	         emu_mode_name(mode));
	t_count(what, n);
	printf("exhaustive: %s: %" PRIu64 " pairs, %" PRIu64 " differ\n", what, n, bad);
	ck_assert_msg(bad == 0, "%s: %" PRIu64 " differ, first %s", what, bad, first);
}
END_TEST

START_TEST(test_stride_mpfr)
{
	static const char *const fmts[] = {"fp16", "bf16"};
	const emu_format *f = t_fmt(fmts[_i % 2]);
	emu_op op = ops[_i / 2];
	const uint64_t stride = 4099; /* prime: visits 2^32/4099 pairs spread over all */
	uint64_t npairs = (1ull << 32) / stride, bad = 0;
	char first[200] = "";
#pragma omp parallel for schedule(dynamic, 4096) reduction(+ : bad)
	for (uint64_t k = 0; k < npairs * EMU_NMODES; k++) {
		uint64_t pair = (k / EMU_NMODES) * stride;
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = (emu_mode)(k % EMU_NMODES);
		env.seed = t_seed();
		env.index = k;
		emu_bits args[3] = {(emu_bits)(pair >> 16), (emu_bits)(pair & 0xffff), fixed_c};
		if (f->ebits == 8)
			args[2] = 0xbf80;
		emu_result x = emu_apply(op, f, NULL, args, &env);
		emu_result y = emu_mp_apply(op, f, NULL, args, &env);
		if (x.bits != y.bits || x.flags != y.flags) {
			if (bad++ == 0) {
#pragma omp critical
				snprintf(first, sizeof first, "%s %s %s 0x%04x 0x%04x: fast 0x%x/%x mpfr 0x%x/%x",
				         f->name, emu_op_name(op), emu_mode_name(env.mode), args[0], args[1],
				         x.bits, x.flags, y.bits, y.flags);
			}
		}
	}
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s %s: 2^32 pairs on stride 4099 x 6 modes vs MPFR", f->name,
	         emu_op_name(op));
	t_count(what, npairs * EMU_NMODES);
	printf("exhaustive: %s: %" PRIu64 " cases, %" PRIu64 " differ\n", what, npairs * EMU_NMODES,
	       bad);
	ck_assert_msg(bad == 0, "%s: %s", what, first);
}
END_TEST

/* fma(a, b, c) for all 2^24 triples of an 8-bit custom format, in every
 * mode, against MPFR: bits and flags (make test takes every pair with 20
 * addends, check_mpfr.c). */
static const char *const fma8_specs[] = {"p=4,ebits=4,bias=11,nan=fnuz",
                                         "p=4,ebits=5,bias=15,unsigned,nan=fn"};

START_TEST(test_fma8_all_triples)
{
	emu_format f;
	char err[160];
	ck_assert_msg(emu_format_parse(fma8_specs[_i], &f, err, sizeof err) == EMU_OK, "%s", err);
	const uint64_t n = (1ull << 24) * EMU_NMODES;
	uint64_t bad = 0;
	char first[200] = "";
#pragma omp parallel for schedule(dynamic, 65536) reduction(+ : bad)
	for (uint64_t k = 0; k < n; k++) {
		uint64_t t = k / EMU_NMODES;
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = (emu_mode)(k % EMU_NMODES);
		env.seed = t_seed();
		env.index = k;
		emu_bits args[3] = {(emu_bits)(t >> 16), (emu_bits)((t >> 8) & 0xff),
		                    (emu_bits)(t & 0xff)};
		emu_result x = emu_apply(EMU_OP_FMA, &f, NULL, args, &env);
		emu_result y = emu_mp_apply(EMU_OP_FMA, &f, NULL, args, &env);
		if (x.bits != y.bits || x.flags != y.flags) {
			if (bad++ == 0) {
#pragma omp critical
				snprintf(first, sizeof first,
				         "fma %s 0x%02x 0x%02x 0x%02x: fast 0x%x/%x mpfr 0x%x/%x",
				         emu_mode_name(env.mode), args[0], args[1], args[2], x.bits,
				         x.flags, y.bits, y.flags);
			}
		}
	}
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "%s fma: all 2^24 triples x 6 modes vs MPFR", f.name);
	t_count(what, n);
	printf("exhaustive: %s: %" PRIu64 " cases, %" PRIu64 " differ\n", what, n, bad);
	ck_assert_msg(bad == 0, "%s: %s", what, first);
}
END_TEST

/* TRUTH's exp against mpfr_exp on 10^7 arguments after make test's */
START_TEST(test_truth_exp_more)
{
	char first[200] = "";
	uint64_t fast, n = 10000000, bad = t_truth_exp_cases(83, n, &fast, first, sizeof first);
	printf("exhaustive: truth exp == mpfr_exp: %" PRIu64 " cases (%" PRIu64
	       " on the fast path), %" PRIu64 " differ\n",
	       n, fast, bad);
	ck_assert_msg(bad == 0, "truth exp: %s", first);
}
END_TEST

Suite *suite_exhaustive(void)
{
	Suite *s = suite_create("exhaustive");
	TCase *tc = tcase_create("all-pairs");
	tcase_set_timeout(tc, 0);
	tcase_add_loop_test(tc, test_fp16_all_pairs_hw, 0, (int)(ARRAY_SIZE(ops) * 4));
	tcase_add_loop_test(tc, test_stride_mpfr, 0, (int)(ARRAY_SIZE(ops) * 2));
	tcase_add_loop_test(tc, test_fma8_all_triples, 0, ARRAY_SIZE(fma8_specs));
	suite_add_tcase(s, tc);
	/* alone: CK_RUN_CASE=truth-exp */
	TCase *te = tcase_create("truth-exp");
	tcase_set_timeout(te, 0);
	tcase_add_test(te, test_truth_exp_more);
	suite_add_tcase(s, te);
	suite_add_tcase(s, t_tcase_random_policies(true));
	suite_add_tcase(s, t_tcase_fast_exact_more());
	return s;
}
