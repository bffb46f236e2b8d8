/*
 * check_matmul.c — the GEMM kernel's known answers, worked out here from the
 * formats: a small integer product, the fp32-accumulate/fp16-store overflow
 * (finite accumulator, infinite store, first failure at the store) against
 * an fp16 accumulator that overflows in its sum, FMA against separately
 * rounded products, the Tensor Core fold's same boundary, and the layout's
 * shape rules. fast == exact is check_kernels.c's proof over every
 * registered kernel.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

enum { ACC, C }; /* the kernel's outputs, in order */

static int mm_run(emu_run *r, const char *spec, const char *variant, const double *x, size_t rows,
                  size_t cols, const emu_kparam *p, size_t np, char *err, size_t errlen)
{
	emu_policy pol;
	ck_assert_msg(emu_policy_parse(spec, &pol, err, errlen) == EMU_OK, "%s", err);
	emu_kin in = {x, rows, cols, p, np, 1, NULL, 0};
	return emu_run_kernel(&emu_kernel_matmul, &pol, variant, &in, EMU_BE_FAST, r, err, errlen);
}

static double out_d(const emu_run *r, int item, size_t j)
{
	return emu_kout_d(NULL, &r->out.item[item], j);
}

/* [[1, 2], [3, 4]] · [[5, 6], [7, 8]] = [[19, 22], [43, 50]], exact in every
 * format below. */
START_TEST(test_small)
{
	static const double x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	static const double want[4] = {19, 22, 43, 50};
	const char *const specs[] = {"storage=fp16", "storage=bf16,compute=fp32", "storage=fp32"};
	char err[300];
	for (size_t s = 0; s < ARRAY_SIZE(specs); s++)
		for (int v = 0; v < 2; v++) {
			emu_run r;
			ck_assert_msg(mm_run(&r, specs[s], v ? "tc" : "seq", x, 4, 2, NULL, 0, err,
			                     sizeof err) == 0,
			              "%s", err);
			ck_assert(r.out.n == 2 && r.out.item[C].n == 4);
			for (size_t j = 0; j < 4; j++)
				ck_assert_msg(out_d(&r, C, j) == want[j] &&
				                  out_d(&r, ACC, j) == want[j],
				              "%s %s c[%zu] = %g", specs[s], v ? "tc" : "seq", j,
				              out_d(&r, C, j));
			ck_assert(r.status == EMU_ST_OK);
			emu_run_free(&r);
		}
	t_count("matmul: 2x2 integer product (policies x variants x elements)",
	        ARRAY_SIZE(specs) * 2 * 4);
}
END_TEST

/* Every element X, k = 16: c = 16·X². X = 64 gives 65536: finite in the fp32
 * accumulator, ≥ 65520 so infinite when stored in fp16, the first failure at
 * the store. X = 63 gives 63504, halfway between fp16's 63488 and 63520:
 * stored as the even 63488. With an fp16 accumulator (compute = fp16) X = 64
 * overflows in the sum itself, at its 16th addition (4096·16), element 15. */
START_TEST(test_store_overflow)
{
	enum { K = 16 };
	double x[2 * K];
	char err[300];
	for (int v = 0; v < 2; v++) {
		const char *variant = v ? "tc" : "seq";
		for (int t = 0; t < 2; t++) {
			double X = t ? 64 : 63;
			for (size_t i = 0; i < 2 * K; i++)
				x[i] = X;
			emu_run r;
			ck_assert_msg(mm_run(&r, "storage=fp16,compute=fp32", variant, x, 2, K,
			                     NULL, 0, err, sizeof err) == 0,
			              "%s", err);
			ck_assert(out_d(&r, ACC, 0) == K * X * X);
			if (t) {
				ck_assert_msg(isinf(out_d(&r, C, 0)) && r.status == EMU_ST_INF,
				              "%s", variant);
				ck_assert(r.be.st.first_set &&
				          strcmp(r.be.st.first_step, "store") == 0 &&
				          r.be.st.first_op == EMU_OP_CVT);
			} else {
				ck_assert_msg(out_d(&r, C, 0) == 63488, "%s c = %g", variant,
				              out_d(&r, C, 0));
				ck_assert(r.status == EMU_ST_OK);
			}
			emu_run_free(&r);
		}
	}
	for (size_t i = 0; i < 2 * K; i++)
		x[i] = 64;
	emu_run r;
	ck_assert(mm_run(&r, "storage=fp16", "seq", x, 2, K, NULL, 0, err, sizeof err) == 0);
	ck_assert(isinf(out_d(&r, ACC, 0)) && isinf(out_d(&r, C, 0)));
	ck_assert_msg(r.be.st.first_set && strcmp(r.be.st.first_step, "sum") == 0 &&
	                  r.be.st.first_index == K - 1,
	              "first %s %llu", r.be.st.first_step, (unsigned long long)r.be.st.first_index);
	emu_run_free(&r);
	t_count("matmul: fp32 accumulate, fp16 store overflows at the store (runs)", 5);
}
END_TEST

/* fp16 throughout, A = [−1, 1 + 2^-10], B = [1 + 2^-9, 1 + 2^-10]ᵀ: the
 * products rounded apart are −(1 + 2^-9) and (1 + 2^-10)² = 1 + 2^-9 + 2^-20
 * → 1 + 2^-9, summing to 0; with fma=1 the second product meets the
 * accumulator unrounded and leaves 2^-20 (an fp16 subnormal). */
START_TEST(test_fma)
{
	const double e = 0x1p-10;
	double x[4] = {-1, 1 + e, 1 + 2 * e, 1 + e};
	emu_kparam p[1] = {{"fma", 1}};
	char err[300];
	emu_run r;
	ck_assert(mm_run(&r, "storage=fp16", "seq", x, 2, 2, NULL, 0, err, sizeof err) == 0);
	ck_assert_msg(out_d(&r, C, 0) == 0, "seq %g", out_d(&r, C, 0));
	emu_run_free(&r);
	ck_assert(mm_run(&r, "storage=fp16", "seq", x, 2, 2, p, 1, err, sizeof err) == 0);
	ck_assert_msg(out_d(&r, C, 0) == 0x1p-20, "fma %g", out_d(&r, C, 0));
	emu_run_free(&r);
	ck_assert(mm_run(&r, "storage=fp16", "tc", x, 2, 2, p, 1, err, sizeof err) != 0);
	ck_assert_msg(strstr(err, "fma=1") != NULL, "%s", err);
	emu_run_free(&r);
	t_count("matmul: fma against rounded products", 3);
}
END_TEST

/* The weight-gradient layout (bt=1) reads B transposed: the same product as
 * bt=0 on the transposed values, bit for bit, in both variants and under a
 * block-scaled recipe too (blocks then run along k in both operands, so only
 * the unscaled policies must agree exactly); shaping with tok_a = tok_b = 0
 * and chan_k = 1 is no shaping, and corr = 1 makes A's row i B's column i. */
START_TEST(test_bt)
{
	enum { M = 3, N = 2, K = 5 };
	double x[M * K + K * N], xt[M * K + K * N];
	for (size_t i = 0; i < ARRAY_SIZE(x); i++)
		x[i] = (double)((i * 7919) % 23) / 8 - 1.375;
	memcpy(xt, x, M * K * sizeof *x);
	for (size_t l = 0; l < K; l++)
		for (size_t j = 0; j < N; j++)
			xt[M * K + j * K + l] = x[M * K + l * N + j];
	emu_kparam p[3] = {{"m", M}, {"n", N}, {"k", K}};
	emu_kparam pt[4] = {{"m", M}, {"n", N}, {"k", K}, {"bt", 1}};
	const char *const variants[] = {"seq", "tc"};
	char err[300];
	for (size_t v = 0; v < 2; v++) {
		emu_run a, b;
		ck_assert_msg(mm_run(&a, "storage=fp16,compute=fp32", variants[v], x, 1,
		                     ARRAY_SIZE(x), p, 3, err, sizeof err) == 0,
		              "%s", err);
		ck_assert_msg(mm_run(&b, "storage=fp16,compute=fp32", variants[v], xt, 1,
		                     ARRAY_SIZE(x), pt, 4, err, sizeof err) == 0,
		              "%s", err);
		for (size_t o = 0; o < M * N; o++)
			ck_assert_msg(out_d(&a, ACC, o) == out_d(&b, ACC, o),
			              "%s (%zu): %a against %a", variants[v], o, out_d(&a, ACC, o),
			              out_d(&b, ACC, o));
		emu_run_free(&a);
		emu_run_free(&b);
	}
	/* corr = 1 with no per-token factor: A's row i is B's column i mod n */
	emu_kparam pc[5] = {{"m", M}, {"n", N}, {"k", K}, {"bt", 1}, {"corr", 1}};
	emu_run r;
	ck_assert(mm_run(&r, "storage=fp32", "seq", xt, 1, ARRAY_SIZE(x), pc, 5, err, sizeof err) ==
	          0);
	for (size_t i = 0; i < M; i++) {
		double want = 0;
		for (size_t l = 0; l < K; l++) /* in fp32, sequentially, as seq does */
			want = (double)(float)(want + (double)(float)(xt[M * K + (i % N) * K + l] *
			                                              xt[M * K + 0 * K + l]));
		ck_assert_msg(out_d(&r, ACC, i * N) == want, "corr row %zu: %a against %a", i,
		              out_d(&r, ACC, i * N), want);
	}
	emu_run_free(&r);
	t_count("matmul: bt=1 against the transposed input; corr=1", 2 * M * N + M);
}
END_TEST

/* The layout: 9 values in one row as A 1 × 3 and B 3 × 2 (m=1, n=2, k=3):
 * [1 2 3] · [[4 5] [6 7] [8 9]] = [40 46]. A shape that does not add up,
 * and one row under the default shape (n = 0), are refused. */
START_TEST(test_shape)
{
	double x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	emu_kparam p[3] = {{"m", 1}, {"n", 2}, {"k", 3}};
	char err[300];
	emu_run r;
	ck_assert_msg(mm_run(&r, "storage=fp32", "seq", x, 1, 9, p, 3, err, sizeof err) == 0, "%s",
	              err);
	ck_assert(r.out.item[C].n == 2 && out_d(&r, C, 0) == 40 && out_d(&r, C, 1) == 46);
	emu_run_free(&r);
	ck_assert(mm_run(&r, "storage=fp32", "seq", x, 1, 9, p, 2, err, sizeof err) != 0);
	ck_assert_msg(strstr(err, "m·k + k·n") != NULL, "%s", err);
	emu_run_free(&r);
	ck_assert(mm_run(&r, "storage=fp32", "seq", x, 1, 9, NULL, 0, err, sizeof err) != 0);
	emu_run_free(&r);
	t_count("matmul: layout and shape refusals", 3);
}
END_TEST

Suite *suite_matmul(void)
{
	Suite *s = suite_create("matmul");
	TCase *tc = tcase_create("matmul");
	tcase_add_test(tc, test_small);
	tcase_add_test(tc, test_store_overflow);
	tcase_add_test(tc, test_fma);
	tcase_add_test(tc, test_shape);
	tcase_add_test(tc, test_bt);
	suite_add_tcase(s, tc);
	return s;
}
