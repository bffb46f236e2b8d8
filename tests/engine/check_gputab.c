/*
 * check_gputab.c — the GPU's transcendental tables in the library
 * (emu/engine/gputab.c) and their replay by the fast backend (emu_be.tables):
 *  - a synthetic fp16 hexp table equal to the correctly rounded exp except
 *    one ulp up at chosen inputs: a single emu_op1 and softmax_ce give the
 *    table's bits with the table and the correct bits without; other ops,
 *    formats and backends are untouched;
 *  - malformed files are refused with one line naming file and line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/engine/gputab.h"
#include "emu/engine/kernels.h"
#include "tests/lib.h"

static char dir[64], path[128];

static void mk_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/nanmap-gputab-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/gpu-tables.txt", dir);
}

static void rm_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static emu_bits cr_exp(const emu_format *f, emu_bits a)
{
	emu_env env = EMU_ENV_DEFAULT;
	emu_bits args[3] = {a, 0, 0};
	return emu_apply(EMU_OP_EXP, f, NULL, args, &env).bits;
}

/* The fp16 inputs whose hexp is one ulp up in the synthetic table. */
static const emu_bits bumped[] = {0x3c00 /* 1.0 */, 0x4000 /* 2.0 */, 0xbc00 /* -1.0 */,
                                  0x3800 /* 0.5 */};

static bool is_bumped(emu_bits a)
{
	for (size_t i = 0; i < ARRAY_SIZE(bumped); i++)
		if (bumped[i] == a)
			return true;
	return false;
}

/* hexp fp16: correctly rounded except at bumped[]; hsqrt bf16 likewise
 * correct everywhere (a second table in the file). */
static void write_tables(void)
{
	const emu_format *f16 = t_fmt("fp16"), *bf = t_fmt("bf16");
	FILE *fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp, "# synthetic, for the tests\ntable hexp fp16 65536\n");
	for (uint32_t a = 0; a < EMU_GPU_TABLE_N; a++) {
		emu_bits v = cr_exp(f16, a);
		if (is_bumped(a))
			v = emu_next_up(f16, v);
		fprintf(fp, "%04x%c", (unsigned)v, (a & 15) == 15 ? '\n' : ' ');
	}
	fprintf(fp, "table hsqrt bf16 65536\n");
	emu_env env = EMU_ENV_DEFAULT;
	for (uint32_t a = 0; a < EMU_GPU_TABLE_N; a++) {
		emu_bits args[3] = {a, 0, 0};
		emu_bits v = emu_apply(EMU_OP_SQRT, bf, NULL, args, &env).bits;
		fprintf(fp, "%04x%c", (unsigned)v, (a & 15) == 15 ? '\n' : ' ');
	}
	ck_assert_int_eq(fclose(fp), 0);
}

/* One op on the fast backend, with or without tables: the result's bits. */
static emu_bits one_op(const emu_gpu_tables *ts, emu_be_kind k, emu_op op, const emu_format *f,
                       emu_bits a, unsigned *flags)
{
	emu_env env = EMU_ENV_DEFAULT;
	emu_be be;
	emu_be_init(&be, k, &env);
	be.tables = ts;
	emu_vec *v = emu_vec_new(&be, 2);
	ck_assert_ptr_nonnull(v);
	emu_fill(&be, emu_at(v, 0), emu_decode(f, a), 1);
	emu_op1(&be, EMU_STEP0, op, f, emu_at(v, 1), emu_at(v, 0), EMU_NOREF, 0);
	*flags = be.st.all_flags;
	emu_bits r = emu_encode(f, v->d[1]);
	emu_be_free(&be);
	return r;
}

START_TEST(test_op_replay)
{
	const emu_format *f16 = t_fmt("fp16"), *bf = t_fmt("bf16");
	mk_dir();
	write_tables();
	emu_gpu_tables ts;
	char err[300];
	ck_assert_msg(emu_gpu_tables_load(dir, &ts, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(ts.n, 2);
	uint64_t n = 0;
	for (uint32_t a = 0; a < EMU_GPU_TABLE_N; a += 7, n++) {
		if (emu_is_nan(f16, a) || is_bumped(a))
			continue;
		unsigned fl, fl0;
		emu_bits want = cr_exp(f16, a);
		emu_bits got = one_op(&ts, EMU_BE_FAST, EMU_OP_EXP, f16, a, &fl);
		emu_bits plain = one_op(NULL, EMU_BE_FAST, EMU_OP_EXP, f16, a, &fl0);
		ck_assert_uint_eq(plain, want);
		ck_assert_msg(got == want && fl == fl0, "%04x: %04x flags %x, want %04x flags %x",
		              (unsigned)a, (unsigned)got, fl, (unsigned)want, fl0);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bumped); i++, n++) {
		unsigned fl, fl0;
		emu_bits a = bumped[i], want = cr_exp(f16, a);
		emu_bits got = one_op(&ts, EMU_BE_FAST, EMU_OP_EXP, f16, a, &fl);
		ck_assert_uint_eq(got, emu_next_up(f16, want));
		ck_assert_uint_eq(fl, EMU_FLAG_INEXACT);
		ck_assert_uint_eq(one_op(NULL, EMU_BE_FAST, EMU_OP_EXP, f16, a, &fl0), want);
		/* the exact backend never replays */
		ck_assert_uint_eq(one_op(&ts, EMU_BE_EXACT, EMU_OP_EXP, f16, a, &fl0), want);
	}
	/* no table for fp16 log or bf16 exp: correctly rounded; fp32 never */
	unsigned fl;
	ck_assert_uint_eq(one_op(&ts, EMU_BE_FAST, EMU_OP_EXP, bf, 0x3f80, &fl),
	                  cr_exp(bf, 0x3f80));
	ck_assert_uint_eq(one_op(&ts, EMU_BE_FAST, EMU_OP_LOG, f16, 0x4000, &fl), 0x398c);
	const emu_format *f32 = t_fmt("fp32");
	ck_assert_uint_eq(one_op(&ts, EMU_BE_FAST, EMU_OP_EXP, f32, 0x3f800000, &fl),
	                  cr_exp(f32, 0x3f800000));
	ck_assert_str_eq(emu_gpu_table_func(EMU_OP_EXP), "hexp");
	ck_assert_ptr_null(emu_gpu_table_func(EMU_OP_DIV));
	t_count("gputab op replays", n);
	emu_gpu_tables_free(&ts);
	rm_dir();
}
END_TEST

/* softmax_ce naive on one row (x0, 0), label 1, storage fp16 and an fp32
 * accumulator: grad_0 = fp16(e0 / fp16(e0 + 1)), with e0 = hexp(x0). */
static emu_bits grad0_expected(emu_bits e0)
{
	const emu_format *f16 = t_fmt("fp16");
	emu_env env = EMU_ENV_DEFAULT;
	unsigned fl = 0;
	/* e0 + 1 is exact in the fp32 accumulator (and in a double) */
	double s = emu_round_value(f16, emu_decode(f16, e0) + 1.0, 0, &env, &fl);
	emu_bits args[3] = {e0, emu_encode(f16, s), 0};
	return emu_apply(EMU_OP_DIV, f16, NULL, args, &env).bits;
}

static emu_bits grad0_kernel(const emu_gpu_tables *ts, double x0)
{
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse("storage=fp16,accum=fp32", &pol, err, sizeof err) == EMU_OK);
	double x[2] = {x0, 0};
	emu_kparam lab = {"label", 1};
	emu_kin in = {x, 1, 2, &lab, 1, 1, NULL, 0};
	emu_run r;
	ck_assert_msg(emu_run_kernel_tables(&emu_kernel_softmax_ce, &pol, "naive", &in, EMU_BE_FAST,
	                                    ts, &r, err, sizeof err) == 0,
	              "%s", err);
	ck_assert_str_eq(r.out.item[1].name, "grad");
	emu_bits g = emu_encode(t_fmt("fp16"), emu_kout_d(NULL, &r.out.item[1], 0));
	emu_run_free(&r);
	return g;
}

START_TEST(test_softmax_replay)
{
	const emu_format *f16 = t_fmt("fp16");
	mk_dir();
	write_tables();
	emu_gpu_tables ts;
	char err[300];
	ck_assert_msg(emu_gpu_tables_load(path, &ts, err, sizeof err) == 0, "%s", err);
	int differ = 0;
	for (size_t i = 0; i < ARRAY_SIZE(bumped); i++) {
		emu_bits a = bumped[i], cr = cr_exp(f16, a), tab = emu_next_up(f16, cr);
		double x0 = emu_decode(f16, a);
		emu_bits with = grad0_kernel(&ts, x0), without = grad0_kernel(NULL, x0);
		ck_assert_uint_eq(with, grad0_expected(tab));
		ck_assert_uint_eq(without, grad0_expected(cr));
		differ += with != without;
	}
	ck_assert_msg(differ > 0, "no bumped input changed the gradient");
	/* an input the table leaves correct: identical with and without */
	ck_assert_uint_eq(grad0_kernel(&ts, 0.25), grad0_kernel(NULL, 0.25));
	emu_gpu_tables_free(&ts);
	rm_dir();
}
END_TEST

START_TEST(test_malformed)
{
	static const struct {
		const char *text, *where;
	} bad[] = {
	    {"", ": an empty file, no table"},
	    {"# only a comment\n", ": no table in the file (only comments and blank lines)"},
	    {"\n\n", ": no table in the file (only comments and blank lines)"},
	    {"0000 0001\n", ":1: values before a 'table' line"},
	    {"table hexp fp16 100\n", ":1: expected 'table <func> <format> 65536'"},
	    {"table hexp fp16 65536\n0000 zz00\n", ":2: not a 16-bit hex encoding"},
	    {"table hexp fp16 65536\n0000 10000\n", ":2: not a 16-bit hex encoding"},
	    {"table hexp fp16 65536\n0000 0001\n", ":2: last table is short"},
	    {"table hexp fp16 65536\n0000\ntable hlog fp16 65536\n", ":3: previous table is short"},
	};
	mk_dir();
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		FILE *fp = fopen(path, "w");
		ck_assert_ptr_nonnull(fp);
		fputs(bad[i].text, fp);
		ck_assert_int_eq(fclose(fp), 0);
		emu_gpu_tables ts;
		char err[300], want[300];
		ck_assert_int_ne(emu_gpu_tables_load(path, &ts, err, sizeof err), 0);
		snprintf(want, sizeof want, "%s%s", path, bad[i].where);
		ck_assert_str_eq(err, want);
		ck_assert_ptr_null(ts.t);
	}
	emu_gpu_tables ts;
	char err[300];
	/* a stream that is no table file: refused at its first line, not read whole */
	ck_assert_int_ne(emu_gpu_tables_load("/dev/zero", &ts, err, sizeof err), 0);
	ck_assert_str_eq(err, "/dev/zero:1: line too long");
	/* more tables than any GPU has: refused before memory runs out */
	FILE *fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	for (int t = 0; t < 65; t++) {
		fprintf(fp, "table f%d fp16 65536\n", t);
		for (int l = 0; l < EMU_GPU_TABLE_N / 16; l++)
			fputs("0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", fp);
	}
	ck_assert_int_eq(fclose(fp), 0);
	ck_assert_int_ne(emu_gpu_tables_load(path, &ts, err, sizeof err), 0);
	ck_assert_msg(strstr(err, ":262209: more than 64 tables") != NULL, "%s", err);
	ck_assert_ptr_null(ts.t);
	ck_assert_int_ne(emu_gpu_tables_load("/nonexistent/t.txt", &ts, err, sizeof err), 0);
	ck_assert_str_eq(err, "cannot read /nonexistent/t.txt: No such file or directory");
	rm_dir();
}
END_TEST

Suite *suite_gputab(void)
{
	Suite *s = suite_create("gputab");
	TCase *tc = tcase_create("replay");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_op_replay);
	tcase_add_test(tc, test_softmax_replay);
	tcase_add_test(tc, test_malformed);
	suite_add_tcase(s, tc);
	return s;
}
