/*
 * check_tcscaled.c — the block-scaled MMA kinds (emu/kernels/tcscaled.h) and
 * the scaled GEMM.
 *
 *  - hand cases: known answers and every special rule of docs/gemm.md
 *    (NaN scales, inf·0, the zero exponent of −126, the sign dropped from
 *    ue4m3 scales, overflow to inf, +0 for an exact zero);
 *  - proof: the integer implementation against the MPFR one, bit for bit
 *    and flag for flag, on 10^5 random instructions per kind (NANMAP_QUICK:
 *    1/20), drawn to hit NaN, inf, zero and subnormal elements, extreme
 *    scales and a C at every distance from the products;
 *  - the GEMM: known answers through both models, and its error report.
 * Instruction i of a kind depends only on (NANMAP_SEED, kind, i).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/kernels/tc.h"
#include "emu/kernels/tcscaled.h"
#include "tests/lib.h"

enum { S_F8 = 0x7c100001, S_F4 };

#define N_PROOF 100000

static emu_bits f32_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

static void fill(emu_bits *v, size_t n, emu_bits x)
{
	for (size_t i = 0; i < n; i++)
		v[i] = x;
}

static void expect(emu_result r, emu_bits bits, unsigned flags, const char *what)
{
	ck_assert_msg(r.bits == bits && r.flags == flags,
	              "%s: got 0x%08x flags 0x%x, want 0x%08x flags 0x%x", what, r.bits, r.flags,
	              bits, flags);
}

/* Both implementations on one instruction must give `bits` and `flags`. */
static void expect_f8(const emu_format *fa, const emu_format *fb, const emu_bits *a,
                      const emu_bits *b, emu_bits sa, emu_bits sb, emu_bits c, emu_bits bits,
                      unsigned flags, const char *what)
{
	expect(emu_tcs_mxf8f6f4(fa, fb, a, b, sa, sb, c), bits, flags, what);
	expect(emu_tcs_mp_mxf8f6f4(fa, fb, a, b, sa, sb, c), bits, flags, what);
}

static void expect_f4(const emu_format *sf, int block, const emu_bits *a, const emu_bits *b,
                      const emu_bits *sa, const emu_bits *sb, emu_bits c, emu_bits bits,
                      unsigned flags, const char *what)
{
	expect(emu_tcs_mxf4nvf4(sf, block, a, b, sa, sb, c), bits, flags, what);
	expect(emu_tcs_mp_mxf4nvf4(sf, block, a, b, sa, sb, c), bits, flags, what);
}

START_TEST(test_tcs_hand_f8)
{
	const emu_format *e4 = t_fmt("e4m3"), *e5 = t_fmt("e5m2"), *e21 = t_fmt("e2m1");
	emu_bits a[32], b[32];
	/* 32 ones with scales 2^3 and 2^0: 32·8 exactly */
	fill(a, 32, 0x38);
	fill(b, 32, 0x38);
	expect_f8(e4, e4, a, b, 130, 127, 0, f32_bits(256.0f), 0, "ones, scale 2^3");
	/* e2m1 elements (1.0 is 0x2) with e5m2 (1.0 is 0x3c) */
	fill(a, 32, 0x2);
	fill(b, 32, 0x3c);
	expect_f8(e21, e5, a, b, 127, 126, f32_bits(1.0f), f32_bits(17.0f), 0, "e2m1 x e5m2");
	/* a NaN scale (e8m0 0xff) gives the NaN, not invalid */
	expect_f8(e21, e5, a, b, 0xff, 127, 0, EMU_TCS_NAN, 0, "NaN scale");
	/* inf (e5m2) times zero: invalid */
	fill(a, 32, 0x38);
	fill(b, 32, 0x00);
	b[3] = 0x7c;
	a[3] = 0x00;
	expect_f8(e4, e5, a, b, 127, 127, 0, EMU_TCS_NAN, EMU_FLAG_INVALID, "inf*0");
	/* inf times one: inf; with C = -inf: NaN, invalid */
	a[3] = 0x38;
	expect_f8(e4, e5, a, b, 127, 127, 0, 0x7f800000u, 0, "inf*1");
	expect_f8(e4, e5, a, b, 127, 127, 0xff800000u, EMU_TCS_NAN, EMU_FLAG_INVALID, "inf-inf");
	/* inf·0 beside a NaN element: NaN, and the 0·inf is still an invalid
	 * operation (the Tensor Core model's rule for every kind) */
	a[3] = 0x00;
	a[5] = 0x7f;
	expect_f8(e4, e5, a, b, 127, 127, 0, EMU_TCS_NAN, EMU_FLAG_INVALID, "inf*0 and NaN");
	a[5] = 0x00;
	/* zero products keep the exponent -126 + e_b + scales: with scales 2^127
	 * and b = 448 (2^8) that is 136, and C = 1 is chopped away entirely */
	fill(a, 32, 0x00);
	fill(b, 32, 0x7e);
	expect_f8(e4, e4, a, b, 254, 254, f32_bits(1.0f), 0, EMU_FLAG_INEXACT, "zero swallows C");
	/* the same with neutral scales: C survives exactly */
	expect_f8(e4, e4, a, b, 127, 127, f32_bits(1.0f), f32_bits(1.0f), 0, "zero keeps C");
	/* a term 2^-58 below C = -1 is chopped: -1, inexact (toward zero) */
	fill(b, 32, 0x00);
	a[0] = 0x01;
	b[0] = 0x01; /* 2^-9 · 2^-9 */
	expect_f8(e4, e4, a, b, 107, 107, f32_bits(-1.0f), f32_bits(-1.0f), EMU_FLAG_INEXACT,
	          "chopped term");
	/* 1 + 2^-24 (beyond fp32) rounds toward zero to 1 */
	a[0] = 0x38;
	b[0] = 0x38;
	expect_f8(e4, e4, a, b, 127 - 12, 127 - 12, f32_bits(1.0f), f32_bits(1.0f),
	          EMU_FLAG_INEXACT, "RZ");
	/* overflow: 32 · 448² · 2^254 is far beyond fp32: inf */
	fill(a, 32, 0x7e);
	fill(b, 32, 0xfe);
	expect_f8(e4, e4, a, b, 254, 254, 0, 0xff800000u, EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT,
	          "overflow");
	/* x - x: +0 whatever the signs */
	fill(a, 32, 0x00);
	fill(b, 32, 0x00);
	a[0] = 0xb8;
	b[0] = 0x38;
	expect_f8(e4, e4, a, b, 127, 127, f32_bits(1.0f), 0, 0, "x-x");
	expect_f8(e4, e4, a, b, 127, 127, 0x80000000u, f32_bits(-1.0f), 0, "-1 + -0");
	/* scales 2^-127 · 2^-127 with subnormal elements: the result is below
	 * fp32's range; C = 0's exponent -126 chops everything: +0, inexact */
	a[0] = 0x01;
	b[0] = 0x01;
	expect_f8(e4, e4, a, b, 0, 0, 0, 0, EMU_FLAG_INEXACT, "underflow to +0");
	/* a format outside the kind */
	expect_f8(t_fmt("bf16"), e4, a, b, 127, 127, 0, EMU_TCS_NAN, EMU_FLAG_INVALID, "bf16");
}
END_TEST

START_TEST(test_tcs_hand_f4)
{
	const emu_format *e8 = t_fmt("e8m0"), *e4 = t_fmt("e4m3");
	emu_bits a[64], b[64], sa[4], sb[4];
	fill(a, 64, 0x2); /* 1.0 */
	fill(b, 64, 0x2);
	fill(sa, 4, 127);
	fill(sb, 4, 127);
	expect_f4(e8, 32, a, b, sa, sb, 0, f32_bits(64.0f), 0, "ones ue8m0");
	expect_f4(e8, 16, a, b, sa, sb, 0, f32_bits(64.0f), 0, "ones ue8m0 block16");
	/* ue4m3 1.0 is 0x38; 0xb8 (sign set) reads as 1.0 too */
	fill(sa, 4, 0x38);
	fill(sb, 4, 0xb8);
	expect_f4(e4, 16, a, b, sa, sb, 0, f32_bits(64.0f), 0, "ue4m3 sign dropped");
	/* one group's scale 2 (0x40): 16·2 + 48 */
	sa[1] = 0x40;
	expect_f4(e4, 16, a, b, sa, sb, 0, f32_bits(80.0f), 0, "one group scaled");
	/* a NaN scale or C: NaN; C inf: inf */
	sa[2] = 0x7f;
	expect_f4(e4, 16, a, b, sa, sb, 0, EMU_TCS_NAN, 0, "NaN scale");
	sa[2] = 0x38;
	expect_f4(e4, 16, a, b, sa, sb, 0x7fc00000u, EMU_TCS_NAN, 0, "NaN C");
	expect_f4(e4, 16, a, b, sa, sb, 0xff800000u, 0xff800000u, 0, "inf C");
	/* a zero ue4m3 scale: its group is 0 with exponent -126 + e_b */
	sa[0] = 0x00;
	expect_f4(e4, 16, a, b, sa, sb, 0, f32_bits(64.0f), 0, "zero scale");
	/* 35 fraction bits: C = 2^-40 survives beside 64 (2^6), 2^-30 would be
	 * kept but 1 + 2^-30 is then chopped to fp32 */
	fill(sa, 4, 0x38);
	expect_f4(e4, 16, a, b, sa, sb, f32_bits(0x1p-30f), f32_bits(64.0f), EMU_FLAG_INEXACT,
	          "35 bits then RZ");
	/* a negative sum below fp32's least subnormal truncates to +0, not -0:
	 * MMA-Sim's math.trunc of the scaled significand is an integer 0
	 * (zsign=pos). Group 0 is 1·(-1)·2^-155; C = 0 aligns at -126, so the
	 * window (35 bits, down to 2^-161) keeps it and the rounding loses it */
	fill(a, 64, 0x0);
	fill(b, 64, 0x2);
	a[0] = 0x2;
	b[0] = 0xa;
	fill(sa, 4, 127 - 78);
	fill(sb, 4, 127 - 77);
	expect_f4(e8, 32, a, b, sa, sb, 0, 0, EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT,
	          "tiny negative to +0");
	/* 2^-149 exactly (scales 2^-74·2^-75) is fp32's least subnormal, negated */
	fill(sa, 4, 127 - 74);
	fill(sb, 4, 127 - 75);
	expect_f4(e8, 32, a, b, sa, sb, 0, 0x80000001u, 0, "least subnormal");
	fill(a, 64, 0x2);
	fill(sa, 4, 0x38);
	fill(sb, 4, 0x38);
	b[0] = 0x2;
	/* shapes the instruction does not have */
	expect_f4(e4, 64, a, b, sa, sb, 0, EMU_TCS_NAN, EMU_FLAG_INVALID, "block 64");
	expect_f4(e4, 32, a, b, sa, sb, 0, EMU_TCS_NAN, EMU_FLAG_INVALID, "ue4m3 block 32");
}
END_TEST

/* ---- random instructions ---- */

static const char *const elem_names[] = {"e4m3", "e5m2", "e3m2", "e2m3", "e2m1"};

/* One element code of f: mode 0 finite, 1 a few specials, 2 zeros and
 * subnormals, 3 any code. */
static emu_bits rand_elem(const emu_format *f, int mode, uint64_t r)
{
	emu_bits all = ((emu_bits)1 << f->bits) - 1;
	emu_bits code = (emu_bits)(r >> 32) & all;
	emu_bits sign = (emu_bits)(r >> 20) & 1 ? f->sign_mask : 0;
	unsigned pick = (unsigned)(r & 0xff);
	if (mode == 1 && pick < 8) {
		emu_bits sp[6] = {0, 1, f->max_bits, f->nan_bits, f->inf_bits, f->man_mask};
		int n = f->nan == EMU_NAN_NONE ? 3 : f->has_inf ? 5 : 4;
		if (f->nan == EMU_NAN_NONE)
			sp[2] = f->man_mask, n = 3;
		return sp[(r >> 8) % (unsigned)n] | sign;
	}
	if (mode == 2 && pick < 128)
		return ((emu_bits)(r >> 8) & f->man_mask) | sign;
	if (mode != 3 && (emu_is_nan(f, code) || emu_classify(f, code) == EMU_CLASS_INF))
		return f->max_bits | (code & f->sign_mask);
	return code;
}

static emu_bits rand_e8m0(uint64_t r)
{
	unsigned pick = (unsigned)(r & 0xff);
	if (pick < 26) {
		static const emu_bits ext[] = {0, 1, 2, 126, 127, 128, 252, 253, 254, 255};
		return ext[(r >> 8) % ARRAY_SIZE(ext)];
	}
	if (pick < 77)
		return (emu_bits)((r >> 8) % 255);
	return (emu_bits)(127 - 20 + (int)((r >> 8) % 41));
}

/* C: zeros, specials, any fp32, or near 2^near. */
static emu_bits rand_c(uint64_t r, int near)
{
	unsigned pick = (unsigned)(r & 0xff);
	emu_bits sign = (emu_bits)(r >> 9) & 1 ? 0x80000000u : 0;
	uint32_t man = (uint32_t)(r >> 40) & 0x7fffffu;
	if (pick < 50)
		return sign;
	if (pick < 60) {
		static const emu_bits sp[] = {0x7f800000u, 0xff800000u, 0x7fc00000u,
		                              0x00000001u, 0x807fffffu, 0x7f7fffffu};
		return sp[(r >> 10) % ARRAY_SIZE(sp)];
	}
	if (pick < 100) {
		emu_bits u = (emu_bits)(r >> 16);
		return (u & 0x7f800000u) == 0x7f800000u ? u & 0xbfffffffu : u;
	}
	int e = near + (int)((r >> 10) % 60) - 45;
	if (e > 127)
		e = 127;
	if (e < -126)
		return sign | (man >> ((-126 - e) < 23 ? (-126 - e) : 23));
	return sign | ((emu_bits)(e + 127) << 23) | man;
}

static uint64_t n_proof(void)
{
	return t_quick() ? N_PROOF / 20 : N_PROOF;
}

START_TEST(test_tcs_proof_f8)
{
	uint64_t n = n_proof(), specials = 0, nonfinite = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t r0 = t_rand(S_F8, 40 * i);
		const emu_format *fa = t_fmt(elem_names[r0 % 5]),
		                 *fb = t_fmt(elem_names[(r0 >> 4) % 5]);
		int mode = (int)((r0 >> 8) % 10);
		mode = mode < 5 ? 0 : mode < 8 ? 1 : mode < 9 ? 2 : 3;
		emu_bits a[32], b[32];
		for (int j = 0; j < 32; j++) {
			a[j] = rand_elem(fa, mode, t_rand(S_F8, 40 * i + 1 + j));
			b[j] = rand_elem(fb, mode,
			                 t_rand(S_F8, 40 * i + 1 + j) * 0x9e3779b97f4a7c15ull + 1);
		}
		emu_bits sa = rand_e8m0(t_rand(S_F8, 40 * i + 33)),
		         sb = rand_e8m0(t_rand(S_F8, 40 * i + 34));
		emu_bits c = rand_c(t_rand(S_F8, 40 * i + 35), (int)sa + (int)sb - 254);
		emu_result x = emu_tcs_mxf8f6f4(fa, fb, a, b, sa, sb, c);
		emu_result y = emu_tcs_mp_mxf8f6f4(fa, fb, a, b, sa, sb, c);
		ck_assert_msg(x.bits == y.bits && x.flags == y.flags,
		              "mxf8f6f4 instruction %" PRIu64 " (%s x %s, scales %u %u, c 0x%08x): "
		              "integer 0x%08x flags 0x%x, MPFR 0x%08x flags 0x%x",
		              i, fa->name, fb->name, sa, sb, c, x.bits, x.flags, y.bits, y.flags);
		specials += mode != 0;
		nonfinite += (x.bits & 0x7f800000u) == 0x7f800000u;
	}
	ck_assert_msg(nonfinite > n / 100 && nonfinite < n / 2, "nonfinite %" PRIu64, nonfinite);
	t_count("mxf8f6f4 instructions, integer == MPFR", n);
}
END_TEST

START_TEST(test_tcs_proof_f4)
{
	uint64_t n = n_proof(), nonfinite = 0;
	const emu_format *e8 = t_fmt("e8m0"), *e4 = t_fmt("e4m3");
	for (uint64_t i = 0; i < n; i++) {
		uint64_t r0 = t_rand(S_F4, 80 * i);
		bool ue4m3 = r0 & 1;
		int block = ue4m3 || (r0 & 2) ? 16 : 32;
		const emu_format *sf = ue4m3 ? e4 : e8;
		bool zeros = (r0 >> 8) % 5 == 0;
		emu_bits a[64], b[64], sa[4] = {0}, sb[4] = {0};
		for (int j = 0; j < 64; j++) {
			uint64_t r = t_rand(S_F4, 80 * i + 1 + j);
			a[j] = (emu_bits)(r & 0xf);
			b[j] = (emu_bits)((r >> 4) & 0xf);
			if (zeros && (r & 0x100))
				a[j] &= 0x9; /* zero or the subnormal 0.5 */
		}
		int near = 0;
		for (int j = 0; j < 64 / block; j++) {
			uint64_t r = t_rand(S_F4, 80 * i + 65 + j);
			if (ue4m3) {
				sa[j] = (emu_bits)(r & 0xff);
				sb[j] = (emu_bits)((r >> 8) & 0xff);
				if ((r >> 16) % 16 == 0)
					sa[j] &= 0x87; /* zero or subnormal scales */
			} else {
				sa[j] = rand_e8m0(r);
				sb[j] = rand_e8m0(r * 0x9e3779b97f4a7c15ull + 7);
				near = (int)sa[j] + (int)sb[j] - 254;
			}
		}
		emu_bits c = rand_c(t_rand(S_F4, 80 * i + 79), near);
		emu_result x = emu_tcs_mxf4nvf4(sf, block, a, b, sa, sb, c);
		emu_result y = emu_tcs_mp_mxf4nvf4(sf, block, a, b, sa, sb, c);
		ck_assert_msg(x.bits == y.bits && x.flags == y.flags,
		              "mxf4nvf4 instruction %" PRIu64 " (%s, block %d, c 0x%08x): integer "
		              "0x%08x flags 0x%x, MPFR 0x%08x flags 0x%x",
		              i, sf->name, block, c, x.bits, x.flags, y.bits, y.flags);
		nonfinite += (x.bits & 0x7f800000u) == 0x7f800000u;
	}
	ck_assert_msg(nonfinite > n / 100 && nonfinite < n / 2, "nonfinite %" PRIu64, nonfinite);
	t_count("mxf4nvf4 instructions, integer == MPFR", n);
}
END_TEST

/* ---- the GEMM ---- */

static void gemm_case(const char *recipe, emu_gemm_model model, size_t M, size_t N, size_t K,
                      double av, double bv, double want)
{
	emu_recipe r;
	char err[256];
	ck_assert_msg(emu_recipe_parse(recipe, &r, err, sizeof err) == EMU_OK, "%s", err);
	double *A = malloc(M * K * sizeof *A), *B = malloc(K * N * sizeof *B),
	       *D = malloc(M * N * sizeof *D);
	ck_assert(A && B && D);
	for (size_t i = 0; i < M * K; i++)
		A[i] = av;
	for (size_t i = 0; i < K * N; i++)
		B[i] = bv;
	emu_qtensor qa, qb;
	ck_assert(emu_gemm_quantize(&r, NULL, A, B, M, N, K, 1, &qa, &qb) == 0);
	emu_gemm_opts o = {model, false};
	emu_status st = emu_scaled_gemm(&qa, &qb, &r, &o, D, err, sizeof err);
	ck_assert_msg(st == EMU_OK, "%s: %s", recipe, err);
	for (size_t i = 0; i < M * N; i++)
		ck_assert_msg(D[i] == want, "%s %s: D[%zu] = %a, want %a", recipe,
		              emu_gemm_model_name(model), i, D[i], want);
	emu_gemm_err e;
	ck_assert(emu_gemm_compare(D, A, B, M, N, K, &e) == 0);
	ck_assert_msg(e.max_rel == 0 && isinf(e.sqnr_db) && e.nonfinite == 0, "%s: compare",
	              recipe);
	emu_qtensor_free(&qa);
	emu_qtensor_free(&qb);
	free(A);
	free(B);
	free(D);
}

START_TEST(test_tcs_gemm_known)
{
	gemm_case("mxfp8", EMU_GEMM_BLACKWELL, 3, 5, 32, 8, 1, 256);
	gemm_case("mxfp8", EMU_GEMM_BLACKWELL, 2, 3, 100, 0.5, -3, -150);
	gemm_case("mxfp6:e2m3", EMU_GEMM_BLACKWELL, 2, 2, 64, 1, 1, 64);
	gemm_case("mxfp4", EMU_GEMM_BLACKWELL, 2, 2, 96, 2, 1.5, 288);
	gemm_case("nvfp4", EMU_GEMM_BLACKWELL, 4, 3, 64, 1, 1, 64);
	/* amax 5.25 makes S_enc = 2688 / 5.25 = 2^9: t and alpha exact */
	gemm_case("nvfp4", EMU_GEMM_BLACKWELL, 2, 17, 40, 5.25, -5.25, -1102.5);
	gemm_case("deepseek:pow2", EMU_GEMM_HOPPER, 2, 3, 256, 1, 1, 256);
	gemm_case("deepseek:pow2", EMU_GEMM_HOPPER, 2, 3, 300, 2, 0.5, 300);
}
END_TEST

/* e4m3 × e5m2 (Transformer Engine's HYBRID dgrad and wgrad): B quantised
 * to e5m2, A to e4m3, each operand's codes read in its own format. B = 3
 * and 24576 = 1.5·2^14 are exact in both after a power-of-two scale, and a
 * product of codes read in the wrong format could not give the exact sums */
START_TEST(test_tcs_gemm_mixed)
{
	emu_recipe r, rb;
	char err[256];
	ck_assert(emu_recipe_parse("deepseek:pow2", &r, err, sizeof err) == EMU_OK);
	r.rht = r.rht_all = false;
	rb = r;
	rb.elem = *emu_format_by_name("e5m2");
	enum { M = 2, N = 3, K = 256 };
	static double A[M * K], B[K * N], D[M * N];
	for (size_t i = 0; i < M * K; i++)
		A[i] = i % 2 ? 0.75 : 1;
	for (size_t i = 0; i < K * N; i++)
		B[i] = i % 3 ? 3 : 24576;
	for (int model = 0; model < 2; model++) {
		emu_qtensor qa, qb;
		ck_assert(emu_quantize(&r, EMU_ROLE_ACT, false, A, M, K, 1, &qa) == 0);
		emu_qpart part = {0, K, 1, NAN, (uint64_t)M * K};
		ck_assert(emu_quantize_part(&rb, EMU_ROLE_GRAD, true, B, K, N, &part, &qb) == 0);
		ck_assert_str_eq(qa.elem.name, "e4m3");
		ck_assert_str_eq(qb.elem.name, "e5m2");
		emu_gemm_opts o = {EMU_GEMM_HOPPER, model == 1};
		ck_assert_msg(emu_scaled_gemm(&qa, &qb, &r, &o, D, err, sizeof err) == EMU_OK, "%s",
		              err);
		emu_gemm_err e;
		ck_assert(emu_gemm_compare(D, A, B, M, N, K, &e) == 0);
		ck_assert_msg(e.max_rel == 0 && e.nonfinite == 0, "mixed GEMM: max rel %g",
		              e.max_rel);
		emu_qtensor_free(&qa);
		emu_qtensor_free(&qb);
	}
	/* the Blackwell MX kind takes them too */
	ck_assert(emu_recipe_parse("mxfp8", &r, err, sizeof err) == EMU_OK);
	rb = r;
	rb.elem = *emu_format_by_name("e5m2");
	emu_qtensor qa, qb;
	ck_assert(emu_quantize(&r, EMU_ROLE_ACT, false, A, M, K, 1, &qa) == 0);
	emu_qpart part = {0, K, 1, NAN, (uint64_t)M * K};
	ck_assert(emu_quantize_part(&rb, EMU_ROLE_GRAD, true, B, K, N, &part, &qb) == 0);
	emu_gemm_opts o = {EMU_GEMM_BLACKWELL, false};
	ck_assert_msg(emu_scaled_gemm(&qa, &qb, &r, &o, D, err, sizeof err) == EMU_OK, "%s", err);
	emu_gemm_err e;
	ck_assert(emu_gemm_compare(D, A, B, M, N, K, &e) == 0);
	ck_assert_msg(e.max_rel == 0 && e.nonfinite == 0, "mixed MX GEMM: max rel %g", e.max_rel);
	emu_qtensor_free(&qa);
	emu_qtensor_free(&qb);
}
END_TEST

/*
 * The Blackwell GEMM against its definition built here from the
 * instruction API: element (i, j) the chain from +0 of emu_tcs_* over the
 * row's and column's codes by instruction (the K tail zeros, NVFP4's groups
 * past K zero scales), each code's scale looked up by its block, times
 * alpha = fp32(t_A·t_B). Random inputs with zeros, an outlier row, NaN and
 * infinities, first groups that cancel; K tails and blocks of every recipe the kinds take, e4m3 ×
 * e5m2 included. Doubles compared as bits.
 */
static emu_bits gemm_scale(const emu_qtensor *q, size_t i, size_t j)
{
	size_t br = q->brows ? q->brows : 1, bc = q->bcols ? q->bcols : 1;
	return q->dcode[(i / br) * q->nbc + j / bc];
}

START_TEST(test_tcs_gemm_vs_instructions)
{
	static const struct {
		const char *ra, *rb;
	} rs[] = {{"mxfp8", "mxfp8"},           {"mxfp8", "mxfp8:e5m2"},
	          {"mxfp6:e2m3", "mxfp6:e2m3"}, {"mxfp6:e3m2", "mxfp6:e3m2"},
	          {"mxfp4", "mxfp4"},           {"nvfp4", "nvfp4"}};
	static const size_t shapes[][3] = {{3, 5, 64}, {4, 7, 100}, {2, 3, 17}, {5, 2, 160}};
	const emu_format *f32 = emu_format_by_name("fp32");
	uint64_t n = 0, nonfinite = 0;
	for (size_t v = 0; v < ARRAY_SIZE(rs); v++)
		for (size_t sh = 0; sh < ARRAY_SIZE(shapes); sh++)
			for (int special = 0; special < 4; special++) {
				size_t M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2];
				emu_recipe r, rb;
				char err[256];
				ck_assert(emu_recipe_parse(rs[v].ra, &r, err, sizeof err) ==
				          EMU_OK);
				ck_assert(emu_recipe_parse(rs[v].rb, &rb, err, sizeof err) ==
				          EMU_OK);
				if (special == 3) /* B's cancelling groups as they are */
					rb.rht = rb.rht_all = false;
				double *A = malloc(M * K * sizeof *A),
				       *B = malloc(K * N * sizeof *B);
				double *D = malloc(M * N * sizeof *D);
				ck_assert(A && B && D);
				uint64_t st = 0x7c100100 + 16 * v + 4 * sh + (uint64_t)special;
				for (size_t i = 0; i < M * K; i++) {
					uint64_t q = t_rand(st, i);
					A[i] = q % 5 == 0 ? 0
					                  : ldexp((double)(q >> 11) / 0x1p53 - 0.5,
					                          (int)(q % 9) - 4);
					if (i / K == 1 && special != 3) /* an outlier row */
						A[i] *= 0x1p20;
				}
				for (size_t i = 0; i < K * N; i++) {
					uint64_t q = t_rand(st, M * K + i);
					B[i] = q % 7 == 0 ? -0.0
					                  : ldexp((double)(q >> 11) / 0x1p53 - 0.5,
					                          (int)(q % 13) - 6);
				}
				if (special == 1)
					A[K + 3] = NAN, B[2 * N + 1] = INFINITY;
				if (special == 2)
					A[5] = -INFINITY;
				/* each first group of 16 cancels exactly under a large scale:
				 * the alignment then rests on the zero groups' scales
				 * (zalign), those past K included */
				for (size_t k = 0; special == 3 && k < 16 && k < K; k++) {
					for (size_t i = 0; i < M; i++)
						A[i * K + k] = k % 2 ? -0x1p20 : 0x1p20;
					for (size_t j = 0; j < N; j++)
						B[k * N + j] = 0x1p20;
				}
				emu_qtensor qa, qb;
				ck_assert(emu_quantize(&r, EMU_ROLE_ACT, false, A, M, K, 1, &qa) ==
				          0);
				emu_qpart part = {0, K, 1, NAN, (uint64_t)M * K};
				ck_assert(emu_quantize_part(&rb, EMU_ROLE_GRAD, true, B, K, N,
				                            &part, &qb) == 0);
				emu_gemm_opts o = {EMU_GEMM_BLACKWELL, false};
				ck_assert_msg(
				    emu_scaled_gemm(&qa, &qb, &r, &o, D, err, sizeof err) == EMU_OK,
				    "%s x %s: %s", rs[v].ra, rs[v].rb, err);
				bool nv = strcmp(rs[v].ra, "nvfp4") == 0;
				size_t chunk = nv ? EMU_TCS_K_F4 : EMU_TCS_K_F8F6F4;
				unsigned fl = 0;
				double alpha = emu_v_mul(f32, qa.t, qb.t, &EMU_ENV_DEFAULT, &fl);
				for (size_t i = 0; i < M; i++)
					for (size_t j = 0; j < N; j++) {
						emu_bits acc = 0;
						for (size_t k0 = 0; k0 < K; k0 += chunk) {
							emu_bits a[EMU_TCS_K_F4] = {0},
							         b[EMU_TCS_K_F4] = {0};
							emu_bits sa[4] = {0}, sb[4] = {0};
							for (size_t k = k0; k < K && k < k0 + chunk;
							     k++) {
								a[k - k0] = qa.code[i * K + k];
								b[k - k0] = qb.code[k * N + j];
							}
							for (size_t g = 0;
							     g < (nv ? 4u : 1u) && k0 + 16 * g < K;
							     g++) {
								sa[g] =
								    gemm_scale(&qa, i, k0 + 16 * g);
								sb[g] =
								    gemm_scale(&qb, k0 + 16 * g, j);
							}
							acc =
							    nv ? emu_tcs_mxf4nvf4(&r.scale_fmt, 16,
							                          a, b, sa, sb, acc)
							             .bits
							       : emu_tcs_mxf8f6f4(
							             &qa.elem, &qb.elem, a, b,
							             sa[0] & 0xffu, sb[0] & 0xffu,
							             acc)
							             .bits;
						}
						double want =
						    emu_v_mul(f32, alpha, emu_decode(f32, acc),
						              &EMU_ENV_DEFAULT, &fl);
						ck_assert_msg(
						    memcmp(&want, &D[i * N + j], sizeof want) == 0,
						    "%s x %s %zux%zux%zu special %d: D[%zu][%zu] = "
						    "%a, want %a",
						    rs[v].ra, rs[v].rb, M, N, K, special, i, j,
						    D[i * N + j], want);
						nonfinite += !isfinite(want);
						n++;
					}
				emu_qtensor_free(&qa);
				emu_qtensor_free(&qb);
				free(A);
				free(B);
				free(D);
			}
	ck_assert_uint_gt(nonfinite, 0);
	t_count("scaled GEMM elements, against the instructions", n);
}
END_TEST

/* The Hopper GEMM against its definition from the instruction API: every
 * 128 products along K, emu_tc_dot2 of the h100 model from +0, times the
 * blocks' decode scales, into the fp32 accumulator (an FMA, or a
 * multiplication and an addition). e4m3 and e4m3 × e5m2, K tails, NaN and
 * infinities; doubles compared as bits. */
START_TEST(test_tcs_gemm_hopper_vs_instructions)
{
	static const size_t shapes[][3] = {{3, 5, 128}, {4, 3, 300}, {2, 3, 17}};
	const emu_format *f32 = emu_format_by_name("fp32");
	uint64_t n = 0, nonfinite = 0;
	for (int hybrid = 0; hybrid < 2; hybrid++)
		for (size_t sh = 0; sh < ARRAY_SIZE(shapes); sh++)
			for (int special = 0; special < 3; special++)
				for (int fma = 0; fma < 2; fma++) {
					size_t M = shapes[sh][0], N = shapes[sh][1],
					       K = shapes[sh][2];
					emu_recipe r, rb;
					char err[256];
					ck_assert(emu_recipe_parse("deepseek:pow2", &r, err,
					                           sizeof err) == EMU_OK);
					r.rht = r.rht_all = false;
					rb = r;
					if (hybrid)
						rb.elem = *emu_format_by_name("e5m2");
					double *A = malloc(M * K * sizeof *A),
					       *B = malloc(K * N * sizeof *B);
					double *D = malloc(M * N * sizeof *D);
					ck_assert(A && B && D);
					uint64_t st = 0x7c100200 + 32 * (uint64_t)hybrid + 8 * sh +
					              2 * (uint64_t)special + (uint64_t)fma;
					for (size_t i = 0; i < M * K; i++) {
						uint64_t q = t_rand(st, i);
						A[i] = q % 5 == 0
						           ? 0
						           : ldexp((double)(q >> 11) / 0x1p53 - 0.5,
						                   (int)(q % 17) - 8);
					}
					for (size_t i = 0; i < K * N; i++) {
						uint64_t q = t_rand(st, M * K + i);
						B[i] = q % 7 == 0
						           ? -0.0
						           : ldexp((double)(q >> 11) / 0x1p53 - 0.5,
						                   (int)(q % 13) - 6);
					}
					if (special == 1)
						A[K + 3] = NAN, B[2 * N + 1] = INFINITY;
					if (special == 2)
						A[5] = -INFINITY;
					emu_qtensor qa, qb;
					ck_assert(emu_quantize(&r, EMU_ROLE_ACT, false, A, M, K, 1,
					                       &qa) == 0);
					emu_qpart part = {0, K, 1, NAN, (uint64_t)M * K};
					ck_assert(emu_quantize_part(&rb, EMU_ROLE_GRAD, true, B, K,
					                            N, &part, &qb) == 0);
					emu_gemm_opts o = {EMU_GEMM_HOPPER, fma == 1};
					ck_assert_msg(emu_scaled_gemm(&qa, &qb, &r, &o, D, err,
					                              sizeof err) == EMU_OK,
					              "%s", err);
					emu_tc_model tm;
					ck_assert(emu_tc_preset("h100", &qa.elem, f32, &tm) ==
					          EMU_OK);
					for (size_t i = 0; i < M; i++)
						for (size_t j = 0; j < N; j++) {
							double acc = 0;
							unsigned fl = 0;
							for (size_t k0 = 0; k0 < K; k0 += 128) {
								emu_bits a[128], b[128];
								size_t m =
								    K - k0 < 128 ? K - k0 : 128;
								for (size_t k = 0; k < m; k++) {
									a[k] =
									    qa.code[i * K + k0 + k];
									b[k] =
									    qb.code[(k0 + k) * N +
									            j];
								}
								double p = emu_decode(
								    f32, emu_tc_dot2(&tm, &qa.elem,
								                     &qb.elem, f32,
								                     a, b, m, 0)
								             .bits);
								size_t ba =
								    (i / qa.brows) * qa.nbc +
								    k0 / qa.bcols;
								size_t bb =
								    (k0 / qb.brows) * qb.nbc +
								    j / qb.bcols;
								double sc = emu_v_mul(
								    f32, qa.d[ba], qb.d[bb],
								    &EMU_ENV_DEFAULT, &fl);
								acc =
								    fma ? emu_v_fma(
								              f32, p, sc, acc,
								              &EMU_ENV_DEFAULT, &fl)
								        : emu_v_add(
								              f32, acc,
								              emu_v_mul(
								                  f32, p, sc,
								                  &EMU_ENV_DEFAULT,
								                  &fl),
								              &EMU_ENV_DEFAULT,
								              &fl);
							}
							ck_assert_msg(memcmp(&acc, &D[i * N + j],
							                     sizeof acc) == 0,
							              "hopper %s %zux%zux%zu "
							              "special %d fma %d: "
							              "D[%zu][%zu] = %a, want %a",
							              hybrid ? "e4m3 x e5m2"
							                     : "e4m3",
							              M, N, K, special, fma, i, j,
							              D[i * N + j], acc);
							nonfinite += !isfinite(acc);
							n++;
						}
					emu_qtensor_free(&qa);
					emu_qtensor_free(&qb);
					free(A);
					free(B);
					free(D);
				}
	ck_assert_uint_gt(nonfinite, 0);
	t_count("hopper GEMM elements, against the instructions", n);
}
END_TEST

START_TEST(test_tcs_gemm_refuses)
{
	emu_recipe r;
	char err[256];
	double A[4 * 256] = {0}, B[256 * 4] = {0}, D[16];
	static const struct {
		const char *recipe;
		emu_gemm_model model;
	} rows[] = {{"deepseek", EMU_GEMM_BLACKWELL},
	            {"nvfp4", EMU_GEMM_HOPPER},
	            {"mxfp8", EMU_GEMM_HOPPER},
	            {"mxfp8,block=1x8", EMU_GEMM_BLACKWELL}};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		ck_assert_msg(emu_recipe_parse(rows[i].recipe, &r, err, sizeof err) == EMU_OK, "%s",
		              err);
		emu_qtensor qa, qb;
		ck_assert(emu_gemm_quantize(&r, NULL, A, B, 4, 4, 256, 1, &qa, &qb) == 0);
		emu_gemm_opts o = {rows[i].model, false};
		err[0] = 0;
		ck_assert_msg(emu_scaled_gemm(&qa, &qb, &r, &o, D, err, sizeof err) ==
		                  EMU_ERR_BAD_SPEC,
		              "row %zu (%s) accepted", i, rows[i].recipe);
		ck_assert_msg(err[0] && !strchr(err, '\n'), "row %zu: one line", i);
		emu_qtensor_free(&qa);
		emu_qtensor_free(&qb);
	}
}
END_TEST

Suite *suite_tcscaled(void)
{
	Suite *s = suite_create("tcscaled");
	TCase *tc = tcase_create("hand");
	tcase_add_test(tc, test_tcs_hand_f8);
	tcase_add_test(tc, test_tcs_hand_f4);
	tcase_add_test(tc, test_tcs_gemm_known);
	tcase_add_test(tc, test_tcs_gemm_mixed);
	tcase_add_test(tc, test_tcs_gemm_vs_instructions);
	tcase_add_test(tc, test_tcs_gemm_hopper_vs_instructions);
	tcase_add_test(tc, test_tcs_gemm_refuses);
	suite_add_tcase(s, tc);
	tc = tcase_create("proof");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_tcs_proof_f8);
	tcase_add_test(tc, test_tcs_proof_f4);
	suite_add_tcase(s, tc);
	return s;
}
