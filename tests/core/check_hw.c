/*
 * check_hw.c — the emulator's fast backend against x86 hardware.
 *
 * Oracles (tests/oracles/hw.h): F16C conversions fp16 <-> fp32 in RNE/RTZ/UP/DOWN
 * (and, for NaN inputs, MXCSR's invalid flag: signaling NaNs),
 * AVX-512 FP16 arithmetic in the same four modes, AVX-512 BF16 fp32 -> bf16
 * (RNE). A missing feature is reported once on stdout with the CPUID bit that
 * says so, and its tests are not added (they are not counted as passes).
 *
 * Comparison policy: we compare ENCODINGS, never values with ==. Two results
 * match when their bits are equal, or when both are NaN encodings of the
 * format. The emulator produces one canonical NaN (fp16 0x7e00, fp32
 * 0x7fc00000, bf16 0x7fc0) while the hardware propagates (quietened) payloads
 * and the sign of the first NaN operand; docs/numerics.md makes the payload
 * out of scope, but "NaN or not" must agree. A mismatch prints the input(s),
 * the emulator's and the hardware's encodings in hex.
 *
 * Inputs are built from bit patterns, not from emulator calls, so the oracle
 * side stays independent of the code under test.
 */
#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/oracles/hw.h"
#include "tests/lib.h"

/* The four modes the hardware encodes, in the loop-test index order. */
static const emu_mode hw_modes[4] = {EMU_RNE, EMU_RTZ, EMU_UP, EMU_DOWN};
#define NMODES 4

/* Streams for t_rand, one per generator. */
enum {
	S_F16C_RAND = 0x48570001,
	S_FP16_A,
	S_FP16_B,
	S_FP16_C,
	S_BF16_RAND,
};

/* Mismatches printed before the rest are only counted. */
#define MAX_PRINT 10

static uint32_t f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static float u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static bool f32_nan(uint32_t u)
{
	return (u & 0x7fffffffu) > 0x7f800000u;
}
static bool f16_nan(uint32_t h)
{
	return (h & 0x7fffu) > 0x7c00u;
}
static bool bf16_nan(uint32_t h)
{
	return (h & 0x7fffu) > 0x7f80u;
}

/* The policy above, for one format's NaN test. */
static bool match(uint32_t emu, uint32_t hw, bool (*is_nan)(uint32_t))
{
	if (emu == hw)
		return true;
	return is_nan(emu) && is_nan(hw);
}

static size_t scale(size_t n)
{
	return t_quick() ? n / 16 : n;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	ck_assert_msg(p != NULL, "out of memory (%zu bytes)", n);
	return p;
}

/* ---- float input sets ---- */

struct fvec {
	float *v;
	size_t n, cap;
};

static void fvec_push_bits(struct fvec *s, uint32_t bits)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1u << 16;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		ck_assert_msg(s->v != NULL, "out of memory");
	}
	s->v[s->n++] = u2f(bits);
}

/* Every float within ±4 ulps (in bit space) of point, both signs. */
static void push_neighbours(struct fvec *s, uint32_t point)
{
	for (int d = -4; d <= 4; d++) {
		int64_t q = (int64_t)point + d;
		if (q < 0 || q > 0x7fffffff)
			continue;
		fvec_push_bits(s, (uint32_t)q);
		fvec_push_bits(s, (uint32_t)q | 0x80000000u);
	}
}

/* fp16 rounding boundaries: every fp16 value (the directed modes' breaks)
 * and every midpoint (RNE's), including the overflow threshold 65520
 * between max 65504 and the would-be next value 65536, and inf. All are
 * exact floats. fp16 positive code h has value (1024+m)·2^(e-25), or
 * m·2^-24 for e = 0; h = 0x7c00 gives 65536 by the same formula. */
static double f16_grid(uint32_t h)
{
	uint32_t e = h >> 10, m = h & 0x3ff;
	return e ? ldexp(1024.0 + m, (int)e - 25) : ldexp((double)m, -24);
}

static struct fvec f16_boundaries(void)
{
	struct fvec s = {0};
	for (uint32_t h = 0; h <= 0x7c00; h++) {
		push_neighbours(&s, f2u((float)f16_grid(h)));
		if (h < 0x7c00)
			push_neighbours(&s, f2u((float)((f16_grid(h) + f16_grid(h + 1)) / 2)));
	}
	push_neighbours(&s, 0x7f800000u); /* inf and the sNaNs next to it */
	return s;
}

/* Half uniform bit patterns (all classes, mostly out of fp16 range), half
 * with the exponent where fp16 is interesting (2^-27 .. 2^16). */
static float rand_float_f16(uint64_t i)
{
	uint64_t r = t_rand(S_F16C_RAND, i);
	uint32_t bits = (uint32_t)r;
	if (r >> 63) {
		uint32_t e = 127 - 27 + (uint32_t)((r >> 32) % 44);
		bits = (bits & 0x807fffffu) | (e << 23);
	}
	return u2f(bits);
}

/* ---- F16C ---- */

/* All 2^16 fp16 -> fp32: exact, so every mode gives the same; use RNE. */
START_TEST(test_f16c_to_float)
{
	const emu_format *fp16 = t_fmt("fp16"), *fp32 = t_fmt("fp32");
	static uint16_t in[1u << 16];
	static float out[1u << 16];
	for (uint32_t h = 0; h < (1u << 16); h++)
		in[h] = (uint16_t)h;
	ck_assert(emu_hw_f16c_to_float(in, out, 1u << 16));
	emu_env env = EMU_ENV_DEFAULT;
	size_t bad = 0;
	char first[160] = "";
	for (uint32_t h = 0; h < (1u << 16); h++) {
		uint32_t hw = f2u(out[h]);
		emu_bits em = emu_convert(fp32, fp16, h, &env).bits;
		if (match(em, hw, f32_nan))
			continue;
		if (bad < MAX_PRINT)
			fprintf(stderr, "hw: f16c fp16->fp32 0x%04x: emu 0x%08x hw 0x%08x\n",
			        (unsigned)h, (unsigned)em, (unsigned)hw);
		if (!bad)
			snprintf(first, sizeof first, "0x%04x: emu 0x%08x hw 0x%08x", (unsigned)h,
			         (unsigned)em, (unsigned)hw);
		bad++;
	}
	t_count("f16c fp16->float", 1u << 16);
	ck_assert_msg(bad == 0, "f16c fp16->fp32: %zu mismatches, first %s", bad, first);
}
END_TEST

/* Signaling NaNs (IEEE 754-2019 §7.2): every fp16 NaN through vcvtph2ps and
 * a set of fp32 NaNs through vcvtps2ph, one at a time, with the host's
 * invalid flag (MXCSR, read by fetestexcept) as the oracle: the hardware
 * raises invalid exactly for signaling inputs and returns a quiet NaN; the
 * emulator must raise invalid for the same inputs and return a quiet NaN. */
static bool f16_quiet_nan(uint32_t h)
{
	return (h & 0x7c00u) == 0x7c00u && (h & 0x0200u);
}

START_TEST(test_f16c_snan)
{
	const emu_format *fp16 = t_fmt("fp16"), *fp32 = t_fmt("fp32");
	emu_env env = EMU_ENV_DEFAULT;
	size_t n = 0, bad = 0, nsig = 0;
	char first[200] = "";
	for (uint32_t h = 0; h < (1u << 16); h++) {
		if ((h & 0x7c00u) != 0x7c00u || !(h & 0x3ffu))
			continue;
		uint16_t in = (uint16_t)h;
		float out;
		feclearexcept(FE_ALL_EXCEPT);
		ck_assert(emu_hw_f16c_to_float(&in, &out, 1));
		bool hw_inv = fetestexcept(FE_INVALID) != 0;
		emu_result r = emu_convert(fp32, fp16, h, &env);
		emu_result m = emu_mp_apply(EMU_OP_CVT, fp32, fp16, (emu_bits[]){h, 0, 0}, &env);
		bool ok = (hw_inv == !!(r.flags & EMU_FLAG_INVALID)) && r.flags == m.flags &&
		          r.bits == m.bits && f32_nan(f2u(out)) && (f2u(out) & 0x00400000u) &&
		          (r.bits & 0x00400000u) && f32_nan(r.bits);
		nsig += hw_inv;
		n++;
		if (!ok && !bad++)
			snprintf(first, sizeof first,
			         "0x%04x: hw 0x%08x invalid %d, emu 0x%08x flags %x, mpfr 0x%08x "
			         "flags %x",
			         (unsigned)h, (unsigned)f2u(out), hw_inv, (unsigned)r.bits, r.flags,
			         (unsigned)m.bits, m.flags);
	}
	/* fp32 -> fp16: signaling and quiet NaNs of both signs, payloads from
	 * one bit to all ones */
	for (uint32_t k = 0; k < 2 * 2 * 23; k++) {
		uint32_t payload = k % 23 ? (1u << (k % 23)) - 1 : 1u;
		uint32_t u = 0x7f800000u | ((k / 23) & 1 ? 0x00400000u : 0) | (payload & 0x3fffffu) |
		             (k / 46 ? 0x80000000u : 0);
		if (!(u & 0x007fffffu))
			u |= 1;
		float in = u2f(u);
		uint16_t out;
		feclearexcept(FE_ALL_EXCEPT);
		ck_assert(emu_hw_f16c_from_float(&in, &out, 1, EMU_RNE));
		bool hw_inv = fetestexcept(FE_INVALID) != 0;
		emu_result r = emu_from_float(fp16, in, &env);
		emu_result c = emu_convert(fp16, fp32, u, &env);
		bool ok = (hw_inv == !!(r.flags & EMU_FLAG_INVALID)) && r.flags == c.flags &&
		          r.bits == c.bits && f16_quiet_nan(out) && f16_quiet_nan(r.bits);
		nsig += hw_inv;
		n++;
		if (!ok && !bad++)
			snprintf(first, sizeof first,
			         "fp32 0x%08x: hw 0x%04x invalid %d, emu 0x%04x flags %x, cvt flags %x",
			         (unsigned)u, (unsigned)out, hw_inv, (unsigned)r.bits, r.flags, c.flags);
	}
	t_count("f16c NaN conversions with the invalid flag", n);
	ck_assert_msg(bad == 0, "f16c sNaN: %zu of %zu mismatch, first %s", bad, n, first);
	ck_assert_msg(nsig == 2 * 511 + 46, "hardware signalled %zu times", nsig);
}
END_TEST

/* One mode over one input set, through both emu_from_float and
 * emu_convert(fp16 <- fp32). */
static void f16c_from_float_check(const struct fvec *s, emu_mode mode, const char *set)
{
	const emu_format *fp16 = t_fmt("fp16"), *fp32 = t_fmt("fp32");
	uint16_t *hw = xmalloc(s->n * sizeof *hw);
	ck_assert(emu_hw_f16c_from_float(s->v, hw, s->n, mode));
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = mode;
	size_t bad = 0;
	char first[200] = "";
	for (size_t i = 0; i < s->n; i++) {
		uint32_t x = f2u(s->v[i]);
		emu_bits a = emu_from_float(fp16, s->v[i], &env).bits;
		emu_bits b = emu_convert(fp16, fp32, x, &env).bits;
		bool ok_a = match(a, hw[i], f16_nan), ok_b = match(b, hw[i], f16_nan);
		if (ok_a && ok_b)
			continue;
		const char *api = !ok_a ? "emu_from_float" : "emu_convert";
		emu_bits e = !ok_a ? a : b;
		if (bad < MAX_PRINT)
			fprintf(stderr,
			        "hw: f16c fp32->fp16 %s %s 0x%08x (%a): %s 0x%04x hw 0x%04x\n",
			        emu_mode_name(mode), set, (unsigned)x, (double)s->v[i], api,
			        (unsigned)e, (unsigned)hw[i]);
		if (!bad)
			snprintf(first, sizeof first, "%s 0x%08x: %s 0x%04x hw 0x%04x",
			         emu_mode_name(mode), (unsigned)x, api, (unsigned)e,
			         (unsigned)hw[i]);
		bad++;
	}
	free(hw);
	t_count("f16c float->fp16", s->n);
	ck_assert_msg(bad == 0, "f16c fp32->fp16 (%s): %zu of %zu mismatch, first %s", set, bad,
	              s->n, first);
}

START_TEST(test_f16c_from_float_boundaries)
{
	struct fvec s = f16_boundaries();
	f16c_from_float_check(&s, hw_modes[_i], "boundary");
	free(s.v);
}
END_TEST

START_TEST(test_f16c_from_float_random)
{
	struct fvec s = {0};
	size_t n = scale(1000000);
	s.v = xmalloc(n * sizeof *s.v);
	s.n = s.cap = n;
	for (size_t i = 0; i < n; i++)
		s.v[i] = rand_float_f16(i);
	f16c_from_float_check(&s, hw_modes[_i], "random");
	free(s.v);
}
END_TEST

/* ---- AVX-512 FP16 ---- */

static const emu_op fp16_ops[] = {EMU_OP_ADD, EMU_OP_SUB,  EMU_OP_MUL,
                                  EMU_OP_DIV, EMU_OP_SQRT, EMU_OP_FMA};
#define NFP16_OPS ((int)ARRAY_SIZE(fp16_ops))

/* A random fp16 operand: a quarter uniform bits (every class), the rest
 * finite with a biased exponent near `near` (±spread) so that sums cancel,
 * products land near the subnormal and overflow edges, and so on. */
static uint16_t rand_f16(uint64_t stream, uint64_t i, int near, int spread)
{
	uint64_t r = t_rand(stream, i);
	if ((r >> 62) == 0)
		return (uint16_t)r;
	int e = near + (int)((r >> 16) % (uint64_t)(2 * spread + 1)) - spread;
	if (e < 0)
		e = 0;
	if (e > 30)
		e = 30;
	return (uint16_t)((r & 0x83ffu) | ((unsigned)e << 10));
}

static int f16_exp(uint16_t h)
{
	return (h >> 10) & 0x1f;
}

START_TEST(test_fp16_arith)
{
	emu_op op = fp16_ops[_i / NMODES];
	emu_mode mode = hw_modes[_i % NMODES];
	const emu_format *fp16 = t_fmt("fp16");
	size_t n = scale(1000000);
	uint16_t *a = xmalloc(n * sizeof *a), *b = xmalloc(n * sizeof *b);
	uint16_t *c = xmalloc(n * sizeof *c), *hw = xmalloc(n * sizeof *hw);
	for (size_t i = 0; i < n; i++) {
		a[i] = rand_f16(S_FP16_A, i, 15, 15);
		int ea = f16_exp(a[i]);
		/* add/sub: b near a; mul/div/fma: b anywhere, c near a·b. */
		b[i] = rand_f16(S_FP16_B, i, op == EMU_OP_ADD || op == EMU_OP_SUB ? ea : 15,
		                op == EMU_OP_ADD || op == EMU_OP_SUB ? 12 : 15);
		c[i] = rand_f16(S_FP16_C, i, ea + f16_exp(b[i]) - 15, 12);
	}
	ck_assert(emu_hw_fp16_apply(op, mode, a, b, c, hw, n));
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = mode;
	size_t bad = 0;
	char first[200] = "";
	for (size_t i = 0; i < n; i++) {
		emu_result r;
		switch (op) {
		case EMU_OP_ADD:
			r = emu_add(fp16, a[i], b[i], &env);
			break;
		case EMU_OP_SUB:
			r = emu_sub(fp16, a[i], b[i], &env);
			break;
		case EMU_OP_MUL:
			r = emu_mul(fp16, a[i], b[i], &env);
			break;
		case EMU_OP_DIV:
			r = emu_div(fp16, a[i], b[i], &env);
			break;
		case EMU_OP_SQRT:
			r = emu_sqrt(fp16, a[i], &env);
			break;
		default:
			r = emu_fma(fp16, a[i], b[i], c[i], &env);
			break;
		}
		if (match(r.bits, hw[i], f16_nan))
			continue;
		char args[64];
		if (op == EMU_OP_SQRT)
			snprintf(args, sizeof args, "0x%04x", (unsigned)a[i]);
		else if (op == EMU_OP_FMA)
			snprintf(args, sizeof args, "0x%04x 0x%04x 0x%04x", (unsigned)a[i],
			         (unsigned)b[i], (unsigned)c[i]);
		else
			snprintf(args, sizeof args, "0x%04x 0x%04x", (unsigned)a[i],
			         (unsigned)b[i]);
		if (bad < MAX_PRINT)
			fprintf(stderr, "hw: avx512fp16 %s %s %s: emu 0x%04x hw 0x%04x\n",
			        emu_op_name(op), emu_mode_name(mode), args, (unsigned)r.bits,
			        (unsigned)hw[i]);
		if (!bad)
			snprintf(first, sizeof first, "%s %s %s: emu 0x%04x hw 0x%04x",
			         emu_op_name(op), emu_mode_name(mode), args, (unsigned)r.bits,
			         (unsigned)hw[i]);
		bad++;
	}
	free(a), free(b), free(c), free(hw);
	t_count("avx512fp16 arithmetic", n);
	ck_assert_msg(bad == 0, "avx512fp16: %zu of %zu mismatch, first %s", bad, n, first);
}
END_TEST

/* ---- AVX-512 BF16 ---- */

/* bf16 values are the floats with 16 low zero bits, midpoints have 0x8000
 * there; 0x7f7f8000 is the overflow threshold. */
static struct fvec bf16_inputs(size_t nrand)
{
	struct fvec s = {0};
	for (uint32_t h = 0; h <= 0x7f80; h++) {
		push_neighbours(&s, h << 16);
		if (h < 0x7f80)
			push_neighbours(&s, (h << 16) | 0x8000u);
	}
	for (size_t i = 0; i < nrand; i++)
		fvec_push_bits(&s, (uint32_t)t_rand(S_BF16_RAND, i));
	return s;
}

/* VCVTNEPS2BF16 reads fp32 subnormals as zero (Intel SDM pseudo-code
 * convert_fp32_to_bfloat16: "denormal go to zero"); IEEE rounding would give
 * a bf16 subnormal. Those inputs are excluded and counted; every other input
 * (normals, zeros, inf, NaN) follows IEEE RNE with overflow to inf. */
START_TEST(test_bf16_from_float)
{
	const emu_format *bf16 = t_fmt("bf16"), *fp32 = t_fmt("fp32");
	struct fvec s = bf16_inputs(scale(1000000));
	uint16_t *hw = xmalloc(s.n * sizeof *hw);
	ck_assert(emu_hw_bf16_from_float(s.v, hw, s.n));
	emu_env env = EMU_ENV_DEFAULT;
	size_t bad = 0, excluded = 0;
	char first[200] = "";
	for (size_t i = 0; i < s.n; i++) {
		uint32_t x = f2u(s.v[i]);
		if ((x & 0x7f800000u) == 0 && (x & 0x007fffffu) != 0) {
			excluded++;
			continue;
		}
		emu_bits a = emu_from_float(bf16, s.v[i], &env).bits;
		emu_bits b = emu_convert(bf16, fp32, x, &env).bits;
		bool ok_a = match(a, hw[i], bf16_nan), ok_b = match(b, hw[i], bf16_nan);
		if (ok_a && ok_b)
			continue;
		const char *api = !ok_a ? "emu_from_float" : "emu_convert";
		emu_bits e = !ok_a ? a : b;
		if (bad < MAX_PRINT)
			fprintf(stderr,
			        "hw: avx512bf16 fp32->bf16 rne 0x%08x: %s 0x%04x hw 0x%04x\n",
			        (unsigned)x, api, (unsigned)e, (unsigned)hw[i]);
		if (!bad)
			snprintf(first, sizeof first, "0x%08x: %s 0x%04x hw 0x%04x", (unsigned)x,
			         api, (unsigned)e, (unsigned)hw[i]);
		bad++;
	}
	free(hw);
	free(s.v);
	t_count("avx512bf16 float->bf16", s.n - excluded);
	ck_assert_msg(
	    bad == 0,
	    "avx512bf16 fp32->bf16: %zu mismatches (%zu fp32 subnormals excluded), first %s", bad,
	    excluded, first);
}
END_TEST

/* ---- suite ---- */

static void skip(emu_hw_feature f, const char *what)
{
	t_skip("hw", "%s: %s", what, emu_hw_absent_reason(f));
}

Suite *suite_hw(void)
{
	Suite *s = suite_create("hw");

	if (emu_hw_has(EMU_HW_F16C)) {
		TCase *tc = tcase_create("f16c");
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_f16c_to_float);
		tcase_add_test(tc, test_f16c_snan);
		tcase_add_loop_test(tc, test_f16c_from_float_boundaries, 0, NMODES);
		tcase_add_loop_test(tc, test_f16c_from_float_random, 0, NMODES);
		suite_add_tcase(s, tc);
	} else {
		skip(EMU_HW_F16C, "fp16<->fp32 conversion oracle");
	}

	if (emu_hw_has(EMU_HW_AVX512FP16)) {
		TCase *tc = tcase_create("avx512fp16");
		tcase_set_timeout(tc, 60);
		tcase_add_loop_test(tc, test_fp16_arith, 0, NFP16_OPS * NMODES);
		suite_add_tcase(s, tc);
	} else {
		skip(EMU_HW_AVX512FP16, "fp16 arithmetic oracle");
	}

	if (emu_hw_has(EMU_HW_AVX512BF16)) {
		TCase *tc = tcase_create("avx512bf16");
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_bf16_from_float);
		suite_add_tcase(s, tc);
	} else {
		skip(EMU_HW_AVX512BF16, "fp32->bf16 conversion oracle");
	}
	return s;
}
