/*
 * check_quant.c — the quant kernel is the recipe library's quantisation and
 * nothing else:
 *   - for every built-in recipe (emu_recipe_names), both copies and every
 *     role, deq equals emu_quantize's q and d rounded as docs/run.md says the
 *     load does, C(fp32(fp32(q·d)·t)) (the RHT's copies transformed back by
 *     emu_recipe_unrht), bit for bit, on the fast and the exact backends;
 *   - the statistics: clipped is the share of elements emu_quantize flagged
 *     overflow; bias and bias_se are the folded mean error and its standard
 *     error recomputed here; all three are 0 on the truth of the original
 *     inputs, where deq = x;
 *   - the column-wise copy of a recipe without RHT is the row-wise copy of
 *     the transpose, transposed back;
 *   - the documented 957 block: 896 under mxfp8:floor (clipped), 960 under
 *     mxfp8.
 * The fast == exact proof over random policies is check_kernels.c's.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

enum { DEQ, BIAS, BIAS_SE, CLIPPED }; /* the kernel's outputs, in order */

static const char *const roles[] = {"act", "weight", "grad"};

static double f32(double v)
{
	emu_env e = EMU_ENV_DEFAULT;
	const emu_format *f = emu_format_by_name("fp32");
	return emu_decode(f, emu_from_double(f, v, &e).bits);
}

static void run_quant(const emu_policy *pol, const char *variant, const double *x, size_t R,
                      size_t N, uint64_t seed, emu_be_kind kind, emu_run *r)
{
	char err[256];
	emu_kin in = {x, R, N, NULL, 0, seed, NULL, 0};
	ck_assert_msg(
	    emu_run_kernel(&emu_kernel_quant, pol, variant, &in, kind, r, err, sizeof err) == 0,
	    "%s", err);
	ck_assert(r->out.n == 6 && strcmp(r->out.item[DEQ].name, "deq") == 0 &&
	          strcmp(r->out.item[BIAS].name, "bias") == 0 &&
	          strcmp(r->out.item[BIAS_SE].name, "bias_se") == 0 &&
	          strcmp(r->out.item[CLIPPED].name, "clipped") == 0);
}

/* an input with what the recipes must handle: normal values of three
 * magnitudes, a zero block, an outlier */
static void fill(double *x, size_t R, size_t N, uint64_t stream)
{
	for (size_t i = 0; i < R * N; i++) {
		double u = ((double)(t_rand(stream, i) >> 11) + 0.5) * 0x1p-53;
		double w = ((double)(t_rand(stream + 1, i) >> 11) + 0.5) * 0x1p-53;
		double g = sqrt(-2 * log(u)) * cos(6.283185307179586 * w);
		x[i] = g * (i / N % 3 == 0 ? 1e-3 : i / N % 3 == 1 ? 1 : 1e3);
	}
	for (size_t j = 0; R > 1 && j < 32 && j < N; j++)
		x[N + j] = 0; /* row 1: a zero run */
	x[R * N / 2 + 5] = 3e4;
}

START_TEST(test_deq_is_the_recipe)
{
	enum { R = 32, N = 256 };
	static double x[R * N];
	uint64_t n = 0;
	fill(x, R, N, 40);
	for (size_t k = 0; emu_recipe_names[k]; k++) {
		const char *name = emu_recipe_names[k];
		for (size_t ro = 0; ro < 3; ro++)
			for (int col = 0; col < 2; col++) {
				char spec[160], err[256];
				emu_policy pol;
				/* the legacy recipes take their elements from storage */
				snprintf(spec, sizeof spec,
				         "storage=e4m3,compute=fp32,scale=%s,role=%s", name,
				         roles[ro]);
				if (emu_policy_parse(spec, &pol, err, sizeof err) != EMU_OK) {
					snprintf(spec, sizeof spec, "compute=fp32,scale=%s,role=%s",
					         name, roles[ro]);
					ck_assert_msg(
					    emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK,
					    "%s: %s", spec, err);
				}
				if (pol.scale != EMU_SCALE_RECIPE)
					continue; /* the legacy kinds: emu/engine/scale.c's own load */
				uint64_t seed = 7 + k;
				emu_qtensor q;
				ck_assert(emu_quantize(&pol.recipe, pol.role, col, x, R, N,
				                       pol.env.seed, &q) == 0);
				double *ref = malloc(R * N * sizeof *ref);
				size_t over = 0;
				ck_assert(ref);
				for (size_t i = 0; i < (size_t)R * N; i++) {
					size_t b = (i / N / q.brows) * q.nbc + (i % N) / q.bcols;
					ref[i] = pol.recipe.rule == EMU_RSCALE_NONE
					             ? q.q[i]
					             : f32(f32(q.q[i] * q.d[b]) * q.t);
					over += (q.flags[i] & EMU_FLAG_OVERFLOW) != 0;
				}
				emu_recipe_unrht(&pol.recipe, pol.role, col, ref, R, N);
				for (int kind = EMU_BE_FAST; kind <= EMU_BE_EXACT; kind++) {
					emu_run r;
					run_quant(&pol, col ? "col" : "row", x, R, N, seed,
					          (emu_be_kind)kind, &r);
					for (size_t i = 0; i < (size_t)R * N; i++) {
						double v = emu_kout_d(&r.be, &r.out.item[DEQ], i);
						double w = f32(ref[i]);
						ck_assert_msg(
						    v == w || (isnan(v) && isnan(w)),
						    "%s %s %s element %zu: deq %a, recipe %a", name,
						    roles[ro], col ? "col" : "row", i, v, w);
					}
					double clip = emu_kout_d(&r.be, &r.out.item[CLIPPED], 0);
					ck_assert_msg(clip == f32((double)over / (R * N)),
					              "%s %s: clipped %a, %zu overflowed", name,
					              roles[ro], clip, over);
					emu_run_free(&r);
				}
				emu_qtensor_free(&q);
				free(ref);
				n++;
			}
	}
	ck_assert(n >= 30);
	t_count("quant: recipes x roles x copies equal to emu_quantize's load", n);
}
END_TEST

START_TEST(test_statistics)
{
	enum { N = 4096 };
	static double x[N];
	emu_policy pol;
	char err[256];
	fill(x, 1, N, 80);
	ck_assert(emu_policy_parse("compute=fp32,scale={nvfp4,sr_bits=2},role=grad", &pol, err,
	                           sizeof err) == EMU_OK);
	emu_run r;
	run_quant(&pol, "row", x, 1, N, 3, EMU_BE_FAST, &r);
	double amax = 0, s = 0, s2 = 0;
	for (size_t i = 0; i < N; i++)
		amax = fmax(amax, fabs(x[i]));
	for (size_t i = 0; i < N; i++) {
		double y = emu_kout_d(&r.be, &r.out.item[DEQ], i);
		double e = (x[i] < 0 ? x[i] - y : y - x[i]) / amax;
		s += e;
		s2 += e * e;
	}
	double mean = s / N, se = sqrt(fmax(s2 / N - mean * mean, 0) / N);
	ck_assert_msg(emu_kout_d(&r.be, &r.out.item[BIAS], 0) == f32(mean), "bias %a, expected %a",
	              emu_kout_d(&r.be, &r.out.item[BIAS], 0), f32(mean));
	ck_assert(emu_kout_d(&r.be, &r.out.item[BIAS_SE], 0) == f32(se));
	/* two random bits lose the rest of the fraction: biased toward zero */
	ck_assert_msg(mean < -4 * se, "2-bit SR bias %g, standard error %g", mean, se);
	/* the truth of the original inputs: deq = x, nothing to report */
	emu_truth tr;
	emu_kin in = {x, 1, N, NULL, 0, 3, NULL, 0};
	ck_assert_msg(emu_run_truth(&emu_kernel_quant, &pol, "row", &in, &tr, err, sizeof err) == 0,
	              "%s", err);
	const emu_run *e2e = emu_truth_e2e(&tr);
	for (int k = BIAS; k <= CLIPPED; k++)
		ck_assert(emu_kout_d(&e2e->be, &e2e->out.item[k], 0) == 0);
	emu_run_compare(&r, &tr);
	ck_assert(r.m[DEQ].rel_err > 0 && r.m[DEQ].rel_err < 0.5);
	emu_truth_free(&tr);
	emu_run_free(&r);
}
END_TEST

/* without RHT, the column-wise copy is the transpose's row-wise copy */
START_TEST(test_col_is_transpose)
{
	enum { R = 48, N = 64 };
	static double x[R * N], xt[R * N];
	fill(x, R, N, 120);
	for (size_t i = 0; i < R; i++)
		for (size_t j = 0; j < N; j++)
			xt[j * R + i] = x[i * N + j];
	const char *specs[] = {"compute=fp32,scale=mxfp8,role=act",
	                       "compute=fp32,scale=deepseek,role=weight",
	                       "compute=fp32,scale={nvfp4,rht=no},role=act",
	                       "storage=e4m3,compute=fp32,scale=mx32:floor",
	                       "storage=e4m3,compute=fp32,scale=tile128"};
	for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
		emu_policy pol;
		char err[256];
		ck_assert_msg(emu_policy_parse(specs[k], &pol, err, sizeof err) == EMU_OK, "%s",
		              err);
		emu_run c, r;
		run_quant(&pol, "col", x, R, N, 1, EMU_BE_FAST, &c);
		run_quant(&pol, "row", xt, N, R, 1, EMU_BE_FAST, &r);
		for (size_t i = 0; i < R; i++)
			for (size_t j = 0; j < N; j++) {
				double a = emu_kout_d(&c.be, &c.out.item[DEQ], i * N + j);
				double b = emu_kout_d(&r.be, &r.out.item[DEQ], j * R + i);
				ck_assert_msg(a == b,
				              "%s (%zu, %zu): col %a, row of the transpose %a",
				              specs[k], i, j, a, b);
			}
		emu_run_free(&c);
		emu_run_free(&r);
	}
}
END_TEST

/* docs/recipes.md's 957: OCP floor X = 2, 478.5 clamps to 448, back as 896;
 * TE's rule X = 4, 239.25 → 240, back as 960 */
START_TEST(test_957)
{
	double x[32];
	for (int i = 0; i < 32; i++)
		x[i] = 957;
	const char *specs[] = {"compute=fp32,scale=mxfp8:floor", "compute=fp32,scale=mxfp8"};
	const double want[] = {896, 960}, clip[] = {1, 0};
	for (int k = 0; k < 2; k++) {
		emu_policy pol;
		char err[256];
		emu_run r;
		ck_assert(emu_policy_parse(specs[k], &pol, err, sizeof err) == EMU_OK);
		run_quant(&pol, "row", x, 1, 32, 1, EMU_BE_FAST, &r);
		for (int i = 0; i < 32; i++)
			ck_assert(emu_kout_d(&r.be, &r.out.item[DEQ], i) == want[k]);
		ck_assert(emu_kout_d(&r.be, &r.out.item[CLIPPED], 0) == clip[k]);
		ck_assert(r.be.st.in_overflow == (clip[k] ? 32 : 0));
		emu_run_free(&r);
	}
}
END_TEST

Suite *suite_quant(void)
{
	Suite *s = suite_create("quant");
	TCase *tc = tcase_create("quant");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_deq_is_the_recipe);
	tcase_add_test(tc, test_statistics);
	tcase_add_test(tc, test_col_is_transpose);
	tcase_add_test(tc, test_957);
	suite_add_tcase(s, tc);
	return s;
}
