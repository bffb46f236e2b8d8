/*
 * check_qstream.c — nanmap quant's streaming (emu/cli/nm_quant.c) against the
 * library's whole-tensor quantiser: a tensor taken in parts of rows, with
 * NVFP4's tensor amax from a first pass, must give the statistics of
 * emu_quantize on the whole tensor bit for bit — every count, every sum in
 * the same order, so every double equal as an encoding. The tensors are
 * tall enough for two parts and a ragged last one, and each case exercises
 * one thing parts could break: RHT groups and SR indices (nvfp4 grad
 * column-wise), 16×16 blocks (nvfp4 weight), 32×1 blocks (mxfp8:floor
 * column-wise), 128×128 blocks ending inside a part (deepseek weight).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib.h"
#include "emu/cli/nm_quant.h"
#include "emu/recipes/recipe.h"

static const struct {
	const char *recipe;
	emu_role role;
	bool colwise;
} qcases[] = {
    {"nvfp4", EMU_ROLE_GRAD, true},
    {"nvfp4", EMU_ROLE_WEIGHT, false},
    {"mxfp8:floor", EMU_ROLE_ACT, true},
    {"deepseek", EMU_ROLE_WEIGHT, false},
};

/* 64 columns: parts of 2^21 / 64 = 32768 rows; 32768 + 400 rows make a
 * second, ragged part (400 = 3·128 + 16: the last deepseek block is short). */
#define QC_COLS 64u
#define QC_ROWS (32768u + 400u)

#define SAME(field)                                                                                \
	ck_assert_msg(memcmp(&a->field, &b->field, sizeof(a->field)) == 0,                         \
	              "%s: " #field " differs: parts %.17g, whole %.17g", what, (double)a->field,  \
	              (double)b->field)

static void same_stats(const emu_qstats *a, const emu_qstats *b, const char *what)
{
	SAME(n);
	SAME(nan_in);
	SAME(inf_in);
	SAME(saturated);
	SAME(flushed);
	SAME(lost);
	SAME(within);
	SAME(nonfinite_out);
	SAME(amax);
	SAME(sqnr_db);
	SAME(max_rel);
	SAME(mean_rel);
	SAME(bias);
	SAME(bias_se);
	SAME(blocks);
	SAME(zero_scale);
	SAME(nan_scale);
	SAME(inf_scale);
	ck_assert_msg(memcmp(a->exp_hist, b->exp_hist, sizeof(a->exp_hist)) == 0,
	              "%s: the scale exponent histograms differ", what);
}

START_TEST(test_parts_are_whole)
{
	size_t n = (size_t)QC_ROWS * QC_COLS;
	double *x = malloc(n * sizeof(*x));
	emu_recipe r;
	emu_qtensor q;
	emu_qstats parts, whole;
	char err[256];
	uint64_t seed = t_seed();

	ck_assert_ptr_nonnull(x);
	/* normal-ish values with a few large ones, held in fp32 */
	for (size_t i = 0; i < n; i++) {
		uint64_t u = t_rand(11, i);
		double v = ((double)(u >> 11) * 0x1p-53 - 0.5) * 4;
		if ((u & 1023) == 0)
			v *= 300;
		x[i] = (float)v;
	}
	ck_assert_int_eq(emu_recipe_parse(qcases[_i].recipe, &r, err, sizeof(err)), EMU_OK);
	ck_assert_int_eq(nm_quant_stream(&r, qcases[_i].role, qcases[_i].colwise, x, QC_ROWS,
	                                 QC_COLS, seed, &parts),
	                 0);
	ck_assert_int_eq(
	    emu_quantize(&r, qcases[_i].role, qcases[_i].colwise, x, QC_ROWS, QC_COLS, seed, &q),
	    0);
	bool rht =
	    r.rht && (r.rht_all || (qcases[_i].colwise && qcases[_i].role != EMU_ROLE_WEIGHT));
	emu_qstats_init(&whole);
	emu_qstats_add(&whole, &q, rht ? q.x : x);
	whole.amax = q.tensor_amax;
	emu_qstats_finish(&whole);
	emu_qtensor_free(&q);
	same_stats(&parts, &whole, qcases[_i].recipe);
	ck_assert_msg(parts.blocks > 0 && isfinite(parts.sqnr_db), "%s: a real tensor",
	              qcases[_i].recipe);
	free(x);
	t_count("quant: tensors streamed in parts equal to whole", 1);
}
END_TEST

Suite *suite_qstream(void)
{
	Suite *s = suite_create("qstream");
	TCase *tc = tcase_create("parts");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_parts_are_whole, 0, t_quick() ? 1 : (int)ARRAY_SIZE(qcases));
	suite_add_tcase(s, tc);
	return s;
}
