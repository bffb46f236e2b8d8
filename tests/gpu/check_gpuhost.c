/*
 * check_gpuhost.c — the host side of bin/nanmap-gpu (gpu/host_*.c), which
 * needs no GPU:
 *  - ulp distance and the comparison rules (identical, NaN for NaN, ulp
 *    tolerance), the first mismatches and the NaN encodings kept, and
 *    merging of per-thread rows independent of how the work was split;
 *  - the conversion comparison against the emulator on synthetic GPU
 *    outputs with planted errors, written as a report and compared byte for
 *    byte with the recorded gpu/testdata/report.csv and report-miss.csv;
 *  - the command line (a table of accepted and rejected argument lists);
 *  - the transcendental table file: write, load, look up, and every way a
 *    file can be malformed;
 *  - the Tensor Core vector reader on gpu/testdata/tcv (two fp16 cases);
 *  - gpu/tc-rules.txt, the disputed-rule cases: each model column is the
 *    h200-mma model's answer, each other column differs, bad files are refused;
 *  - gpu/rows.h on the host (the fake device's kernels) takes exp and
 *    rsqrt from the GPU's tables when given them, and refuses a format
 *    that is none of fp32, fp16, bf16;
 *  - rows.h's stochastic rounding (adamw_sr's, which the GPU computes with
 *    the same code) equals the emulator's EMU_SR with the engine's key, on
 *    every kind of binary32 input (subnormal results, overflow, ties of the
 *    draw, zeros, infinities, NaN).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu_dev.h"
#include "gpu/gpu_host.h"
#include "emu/engine/kern.h"
#include "tests/lib.h"
#include "emu/io/nm_file.h"
#include "emu/kernels/tc.h"

static char tmpdir[64];

static void mk_tmp(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nanmap-gpuhost-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* The whole file, NUL-terminated (NULL when unreadable). */
/* The whole file (nm_file_read), which must exist. */
static char *slurp(const char *path)
{
	char *s = nm_file_read(path, NULL);
	ck_assert_msg(s != NULL, "cannot read %s", path);
	return s;
}

START_TEST(test_ulp_dist)
{
	static const struct {
		const char *fmt;
		emu_bits a, b;
		uint64_t d;
	} rows[] = {
	    {"fp16", 0x0000, 0x8000, 0},          {"fp16", 0x3c00, 0x3c01, 1},
	    {"fp16", 0x0001, 0x8001, 2},          {"fp16", 0x7bff, 0x7c00, 1},
	    {"fp16", 0xfc00, 0x7c00, 0xf800},     {"fp16", 0x7e00, 0xffff, 0},
	    {"fp16", 0x7e00, 0x3c00, UINT64_MAX}, {"e4m3", 0x7e, 0x7f, UINT64_MAX},
	    {"e4m3", 0x7e, 0xfe, 0xfc},           {"fp32", 0x3f800000, 0x3f7fffff, 1},
	    {"bf16", 0x7f80, 0x7f7f, 1},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const emu_format *f = t_fmt(rows[i].fmt);
		uint64_t d = gpu_ulp_dist(f, rows[i].a, rows[i].b);
		ck_assert_msg(d == rows[i].d && gpu_ulp_dist(f, rows[i].b, rows[i].a) == d,
		              "row %zu: %s 0x%x 0x%x: %llu, want %llu", i, rows[i].fmt, rows[i].a,
		              rows[i].b, (unsigned long long)d, (unsigned long long)rows[i].d);
	}
}
END_TEST

START_TEST(test_cmp_rules)
{
	const emu_format *f = t_fmt("fp16");
	gpu_cmp strict, lax;
	gpu_cmp_init(&strict, "s", "k", "fp16", "rn", f, (gpu_tol){0, false});
	gpu_cmp_init(&lax, "s", "k", "fp16", "rn", f, (gpu_tol){1, true});
	static const emu_bits pairs[][2] = {
	    {0x3c00, 0x3c00}, /* identical */
	    {0x7fff, 0x7e00}, /* NaN for NaN, other payload */
	    {0x3c01, 0x3c00}, /* 1 ulp */
	    {0x3c02, 0x3c00}, /* 2 ulp */
	    {0x8000, 0x0000}, /* -0 for +0: 0 ulp apart, so inside any ulp tolerance */
	    {0x7e00, 0x3c00}, /* NaN for a number */
	};
	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
		gpu_cmp_one(&strict, i, i, pairs[i][0], pairs[i][1]);
		gpu_cmp_one(&lax, i, i, pairs[i][0], pairs[i][1]);
	}
	ck_assert_uint_eq(strict.compared, 6);
	ck_assert_uint_eq(strict.identical, 1);
	ck_assert_uint_eq(strict.nan_equal, 0);
	ck_assert_uint_eq(strict.within, 0);
	ck_assert_uint_eq(gpu_cmp_bad(&strict), 5);
	ck_assert_uint_eq(lax.nan_equal, 1);
	ck_assert_uint_eq(lax.within, 2);
	ck_assert_uint_eq(gpu_cmp_bad(&lax), 2);
	ck_assert(lax.max_ulp == UINT64_MAX);
	/* shown: indices 3 and 5 in order, with their distances */
	ck_assert_int_eq(lax.nshow, 2);
	ck_assert_uint_eq(lax.show[0].index, 3);
	ck_assert_uint_eq(lax.show[0].ulp, 2);
	ck_assert_uint_eq(lax.show[1].index, 5);
	ck_assert(lax.show[1].ulp == UINT64_MAX);
	ck_assert_int_eq(strict.nshow, 5);
	ck_assert_uint_eq(strict.show[3].index, 4);
	ck_assert_uint_eq(strict.show[3].ulp, 0);
	/* the GPU's NaN encodings, with counts */
	ck_assert_int_eq(lax.nnan, 2);
	ck_assert_uint_eq(lax.nan_enc[0], 0x7fff);
	ck_assert_uint_eq(lax.nan_cnt[0], 1);
	ck_assert_uint_eq(lax.nan_enc[1], 0x7e00);
}
END_TEST

/* Many mismatches in a scrambled order: the lowest GPU_SHOW_MAX are kept,
 * and a split into parts merged in any order gives the same row. */
START_TEST(test_cmp_merge)
{
	const emu_format *f = t_fmt("bf16");
	gpu_cmp whole, part[3];
	gpu_cmp_init(&whole, "s", "k", "bf16", "rn", f, (gpu_tol){0, true});
	for (int p = 0; p < 3; p++)
		part[p] = gpu_cmp_blank(&whole);
	const uint64_t n = 1000;
	uint64_t gpu_nans = 0, nan_equal = 0;
	for (uint64_t j = 0; j < n; j++) {
		uint64_t i = (j * 617) % n; /* 617 is prime to 1000: a permutation */
		emu_bits want = (emu_bits)(0x3f80 + (i % 50)), got = want;
		if (i % 7 == 0)
			got = want + 1;
		else if (i % 11 == 0) { /* six NaN payloads for the emulator's 0x7fc0 */
			want = 0x7fc0;
			got = 0x7fc0 + (emu_bits)(i % 6);
			gpu_nans++;
			nan_equal += got != want;
		}
		gpu_cmp_one(&whole, i, i, got, want);
		gpu_cmp_one(&part[t_rand(1, j) % 3], i, i, got, want);
	}
	gpu_cmp merged = gpu_cmp_blank(&whole);
	gpu_cmp_merge(&merged, &part[2]);
	gpu_cmp_merge(&merged, &part[0]);
	gpu_cmp_merge(&merged, &part[1]);
	ck_assert_uint_eq(merged.compared, n);
	ck_assert_uint_eq(merged.identical, whole.identical);
	ck_assert_uint_eq(gpu_cmp_bad(&merged), gpu_cmp_bad(&whole));
	ck_assert_uint_eq(merged.max_ulp, whole.max_ulp);
	ck_assert_int_eq(whole.nshow, GPU_SHOW_MAX);
	ck_assert_int_eq(memcmp(merged.show, whole.show, sizeof whole.show), 0);
	for (int k = 0; k < GPU_SHOW_MAX; k++)
		ck_assert_msg(k == 0 || whole.show[k].index > whole.show[k - 1].index,
		              "order at %d", k);
	ck_assert_uint_eq(whole.show[0].index, 0);
	ck_assert_uint_eq(whole.show[1].index, 7);
	/* six NaN payloads: four kept, the rest counted as other */
	ck_assert_int_eq(whole.nnan, GPU_NANENC_MAX);
	uint64_t nans = whole.nan_other;
	for (int k = 0; k < whole.nnan; k++)
		nans += whole.nan_cnt[k];
	uint64_t mnans = merged.nan_other;
	for (int k = 0; k < merged.nnan; k++)
		mnans += merged.nan_cnt[k];
	ck_assert_uint_eq(nans, mnans);
	ck_assert_uint_eq(nans, gpu_nans);
	ck_assert_uint_eq(whole.nan_equal, nan_equal);
	ck_assert_uint_eq(merged.nan_equal, nan_equal);
}
END_TEST

/* Synthetic GPU outputs for 65536 strided binary32 inputs to fp16: the
 * emulator's own answers (scalar path) with planted differences, compared
 * by the same function the runner uses; then the report's bytes against the
 * recorded files. */
START_TEST(test_convert_report)
{
	const emu_format *f = t_fmt("fp16");
	const uint64_t stride = 65537, n = 65536;
	uint16_t *got = malloc(n * sizeof *got);
	ck_assert_ptr_nonnull(got);
	emu_env env = EMU_ENV_DEFAULT;
	uint64_t planted = 0;
	for (uint64_t j = 0; j < n; j++) {
		uint32_t bits = (uint32_t)(j * stride);
		float x;
		memcpy(&x, &bits, sizeof x);
		emu_bits w = emu_from_float(f, x, &env).bits;
		got[j] = (uint16_t)w;
		if (emu_is_nan(f, w))
			got[j] = 0x7fff; /* a NaN encoding of another payload: accepted */
		else if (j % 9973 == 5 && (w & 0x7c00) != 0x7c00) {
			got[j] = (uint16_t)(w ^ 1); /* one ulp off (or across zero) */
			planted++;
		} else if (j == 15000) {
			got[j] = (uint16_t)(w ^ 0x8000);
			planted++;
		}
	}
	gpu_cmp row;
	gpu_cmp_init(&row, "conv", "__float2half_rn", "fp16", "rn", f, (gpu_tol){0, true});
	/* two chunks, as the runner feeds them */
	gpu_cmp_convert(&row, f, &env, 0, stride, 30000, got);
	gpu_cmp_convert(&row, f, &env, 30000, stride, n - 30000, got + 30000);
	ck_assert_uint_eq(row.compared, n);
	ck_assert_uint_eq(gpu_cmp_bad(&row), planted);
	ck_assert_uint_gt(row.nan_equal, 0);

	/* a row that finds nothing, and a note */
	gpu_cmp ok;
	gpu_cmp_init(&ok, "conv", "widen to float", "e4m3", "exact", t_fmt("fp32"),
	             (gpu_tol){0, true});
	for (emu_bits b = 0; b < 256; b++) {
		emu_bits w = emu_convert(t_fmt("fp32"), t_fmt("e4m3"), b, &env).bits;
		gpu_cmp_one(&ok, b, b, w, w);
	}
	mk_tmp();
	gpu_report r;
	char err[256];
	gpu_report_init(&r, tmpdir, "report");
	ck_assert_int_eq(gpu_report_add(&r, &row), 0);
	ck_assert_int_eq(gpu_report_add(&r, &ok), 0);
	ck_assert_int_eq(gpu_report_note(&r, "device: %s", "synthetic"), 0);
	ck_assert_msg(gpu_report_write(&r, err, sizeof err) == 0, "%s", err);
	gpu_report_free(&r);
	static const char *const files[] = {"report.csv", "report-miss.csv"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char path[128], rec[128];
		snprintf(path, sizeof path, "%s/%s", tmpdir, files[i]);
		snprintf(rec, sizeof rec, "gpu/testdata/%s", files[i]);
		char *a = slurp(path), *b = slurp(rec);
		ck_assert_msg(a && b, "cannot read %s or %s", path, rec);
		ck_assert_msg(strcmp(a, b) == 0, "%s differs from the recorded %s:\n%s", path, rec,
		              a);
		free(a);
		free(b);
	}
	char mdpath[128];
	snprintf(mdpath, sizeof mdpath, "%s/report.md", tmpdir);
	char *md = slurp(mdpath);
	ck_assert_ptr_nonnull(md);
	ck_assert_ptr_nonnull(strstr(md, "| MISMATCH |"));
	ck_assert_ptr_nonnull(strstr(md, "| identical |"));
	ck_assert_ptr_nonnull(strstr(md, "- device: synthetic"));
	free(md);
	/* an unwritable directory is an error line, not a crash */
	gpu_report_init(&r, "/nonexistent/dir", "report");
	ck_assert_int_ne(gpu_report_write(&r, err, sizeof err), 0);
	ck_assert_ptr_nonnull(strstr(err, "cannot write"));
	gpu_report_free(&r);
	rm_tmp();
	free(got);
}
END_TEST

START_TEST(test_args)
{
	static const struct {
		const char *argv[8];
		int ok;
		unsigned steps;
		uint64_t stride;
	} rows[] = {
	    {{"x"}, 1, GPU_STEP_ALL, 1},
	    {{"x", "--only", "conv,tc"}, 1, GPU_STEP_CONV | GPU_STEP_TC, 1},
	    {{"x", "--only", "all"}, 1, GPU_STEP_ALL, 1},
	    {{"x", "--only", "lt", "--stride", "65537"}, 1, GPU_STEP_LT, 65537},
	    {{"x", "--only", "kern,arith"}, 1, GPU_STEP_KERN | GPU_STEP_ARITH, 1},
	    {{"x", "--only", "attn,quant"}, 1, GPU_STEP_ATTN | GPU_STEP_QUANT, 1},
	    {{"x", "--only", "rules", "--tc-rules", "r.txt"}, 1, GPU_STEP_RULES, 1},
	    {{"x", "--only", "attention"}, 0, 0, 0},
	    {{"x", "--stride", "0x101"}, 1, GPU_STEP_ALL, 257},
	    {{"x", "--only", "conv,"}, 0, 0, 0},
	    {{"x", "--only", "gpu"}, 0, 0, 0},
	    {{"x", "--only", ""}, 0, 0, 0},
	    {{"x", "--stride", "0"}, 0, 0, 0},
	    {{"x", "--stride", "-3"}, 0, 0, 0},
	    {{"x", "--stride", "4294967296"}, 0, 0, 0},
	    {{"x", "--chunk-log2", "31"}, 0, 0, 0},
	    {{"x", "--chunk-log2", "12"}, 0, 0, 0},
	    {{"x", "--pairs", "4294967297"}, 0, 0, 0},
	    {{"x", "--out"}, 0, 0, 0},
	    {{"x", "--frobnicate"}, 0, 0, 0},
	    {{"x", "--seed", "1x"}, 0, 0, 0},
	};
	unsetenv("NANMAP_TC_VECTORS");
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		int argc = 0;
		while (argc < 8 && rows[i].argv[argc])
			argc++;
		gpu_opts o;
		char err[256] = "";
		int rc = gpu_parse_args(argc, (char *const *)rows[i].argv, &o, err, sizeof err);
		ck_assert_msg((rc == 0) == rows[i].ok, "row %zu: rc %d (%s)", i, rc, err);
		if (!rows[i].ok) {
			ck_assert_msg(err[0] != '\0', "row %zu: no reason given", i);
			continue;
		}
		ck_assert_msg(o.steps == rows[i].steps, "row %zu: steps 0x%x", i, o.steps);
		ck_assert_uint_eq(o.stride, rows[i].stride);
		ck_assert_ptr_null(o.tc_vectors);
		ck_assert(!o.quick && !o.help);
	}
	const char *full[] = {"x",          "--out",        "o",    "--tc-vectors",
	                      "v",          "--chunk-log2", "20",   "--pairs",
	                      "4294967296", "--seed",       "7",    "-h",
	                      "--quick",    "--gpu-tables", "t.txt"};
	gpu_opts o;
	char err[256];
	ck_assert_int_eq(gpu_parse_args(15, (char *const *)full, &o, err, sizeof err), 0);
	ck_assert(o.quick);
	ck_assert_str_eq(o.gpu_tables, "t.txt");
	ck_assert_str_eq(o.out_dir, "o");
	ck_assert_str_eq(o.tc_vectors, "v");
	ck_assert_int_eq(o.chunk_log2, 20);
	ck_assert_uint_eq(o.pairs, 1ull << 32);
	ck_assert_uint_eq(o.seed, 7);
	ck_assert(o.help);
	setenv("NANMAP_TC_VECTORS", "/from/env", 1);
	ck_assert_int_eq(gpu_parse_args(1, (char *const *)full, &o, err, sizeof err), 0);
	ck_assert_str_eq(o.tc_vectors, "/from/env");
	unsetenv("NANMAP_TC_VECTORS");
	ck_assert_str_eq(gpu_step_name(GPU_STEP_GEMMEX), "gemmex");
	ck_assert_ptr_null(gpu_step_name(3));
}
END_TEST

START_TEST(test_tables)
{
	static gpu_table t[2];
	const emu_format *f16 = t_fmt("fp16"), *bf = t_fmt("bf16");
	emu_env env = EMU_ENV_DEFAULT;
	snprintf(t[0].func, sizeof t[0].func, "hexp");
	snprintf(t[0].format, sizeof t[0].format, "fp16");
	snprintf(t[1].func, sizeof t[1].func, "hsqrt");
	snprintf(t[1].format, sizeof t[1].format, "bf16");
	for (uint32_t x = 0; x < GPU_TABLE_N; x++) {
		t[0].v[x] = (uint16_t)emu_exp(f16, x, &env).bits;
		t[1].v[x] = (uint16_t)(x * 40503u); /* any pattern: the file must not care */
	}
	mk_tmp();
	char path[128], err[256];
	snprintf(path, sizeof path, "%s/gpu-tables.txt", tmpdir);
	ck_assert_int_eq(gpu_tables_write(path, "synthetic, for the tests", t, 2, err, sizeof err),
	                 0);
	gpu_tables ts;
	/* by directory, the runner's layout */
	ck_assert_msg(gpu_tables_load(tmpdir, &ts, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(ts.n, 2);
	for (uint32_t x = 0; x < GPU_TABLE_N; x++) {
		emu_bits a = 0xdead, b = 0xdead;
		if (!gpu_tables_lookup(&ts, gpu_table_func(EMU_OP_EXP), f16, x, &a) ||
		    !gpu_tables_lookup(&ts, "hsqrt", bf, x, &b) || a != t[0].v[x] || b != t[1].v[x])
			ck_abort_msg("lookup of 0x%04x: 0x%x 0x%x", x, a, b);
	}
	emu_bits dummy;
	ck_assert(!gpu_tables_lookup(&ts, "hlog", f16, 0, &dummy));
	ck_assert(!gpu_tables_lookup(&ts, "hexp", bf, 0, &dummy));
	ck_assert(!gpu_tables_lookup(&ts, "hexp", t_fmt("e4m3"), 0, &dummy));
	ck_assert_ptr_null(gpu_table_func(EMU_OP_ADD));
	gpu_tables_free(&ts);

	/* malformed files, each with its reason */
	char *good = slurp(path);
	ck_assert_ptr_nonnull(good);
	char *first_nl = strchr(strstr(good, "table hexp"), '\n');
	size_t head = (size_t)(first_nl - good) + 1;
	static const struct {
		const char *what, *reason;
	} bad[] = {
	    {"short", "short"},          {"badhex", "not a 16-bit hex"},
	    {"dup", "given twice"},      {"header", "expected 'table"},
	    {"orphan", "values before"}, {"empty", "no table"},
	    {"long", "more than 65536"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char p[160];
		snprintf(p, sizeof p, "%s/bad-%s.txt", tmpdir, bad[i].what);
		FILE *fp = fopen(p, "w");
		ck_assert_ptr_nonnull(fp);
		if (!strcmp(bad[i].what, "short"))
			fwrite(good, 1, head + 80 * 10, fp);
		else if (!strcmp(bad[i].what, "badhex")) {
			fwrite(good, 1, head, fp);
			fputs("00zz 0000\n", fp);
		} else if (!strcmp(bad[i].what, "dup")) {
			fputs(good, fp);
			fputs(strstr(good, "table hexp"), fp);
		} else if (!strcmp(bad[i].what, "header"))
			fputs("table hexp fp16 100\n", fp);
		else if (!strcmp(bad[i].what, "orphan"))
			fputs("0000 0001\n", fp);
		else if (!strcmp(bad[i].what, "empty"))
			fputs("# nothing here\n", fp);
		else {
			fwrite(good, 1, strlen(good), fp);
			fputs("0000\n", fp);
		}
		ck_assert_int_eq(fclose(fp), 0);
		err[0] = '\0';
		ck_assert_msg(gpu_tables_load(p, &ts, err, sizeof err) != 0, "%s accepted",
		              bad[i].what);
		ck_assert_msg(strstr(err, bad[i].reason) != NULL, "%s: reason '%s'", bad[i].what,
		              err);
		ck_assert_ptr_null(ts.t);
	}
	ck_assert_int_ne(gpu_tables_load("/nonexistent/gpu-tables.txt", &ts, err, sizeof err), 0);
	free(good);
	rm_tmp();
}
END_TEST

START_TEST(test_tcv)
{
	gpu_tcv v;
	char err[512];
	int rc = gpu_tcv_load("gpu/testdata/tcv", "H200", "fp16", "fp32", &v, err, sizeof err);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(v.n, 2);
	ck_assert_uint_eq(v.K, 16);
	ck_assert_uint_eq(v.a[0], 0x3f800000);
	ck_assert_uint_eq(v.b[16 + 15], 0xbf000000);
	ck_assert_uint_eq(v.c[1], 0x3f800000);
	/* case 0: sixteen 1*1 plus C = 0.5 -> 16.5; case 1: 16 * (0.5 * -0.5) + 1 = -3 */
	ck_assert_uint_eq(v.d[0], 0x41840000);
	ck_assert_uint_eq(v.d[1], 0xc0400000);
	/* the model under the h200 preset agrees with the synthetic D */
	emu_tc_model m;
	const emu_format *in = t_fmt("fp16"), *out = t_fmt("fp32");
	ck_assert_int_eq(emu_tc_preset("h200", in, out, &m), 0);
	for (size_t i = 0; i < v.n; i++) {
		emu_bits a[16], b[16];
		emu_env env = EMU_ENV_DEFAULT;
		for (int k = 0; k < 16; k++) {
			float x, y;
			memcpy(&x, &v.a[i * 16 + k], 4);
			memcpy(&y, &v.b[i * 16 + k], 4);
			a[k] = emu_from_float(in, x, &env).bits;
			b[k] = emu_from_float(in, y, &env).bits;
		}
		ck_assert_uint_eq(emu_tc_dot(&m, in, out, a, b, 16, v.c[i]).bits, v.d[i]);
	}
	gpu_tcv_free(&v);
	ck_assert_int_eq(
	    gpu_tcv_load("gpu/testdata/tcv", "H200", "bf16", "fp32", &v, err, sizeof err), 1);
	ck_assert_ptr_nonnull(strstr(err, "not found"));
	ck_assert_int_eq(
	    gpu_tcv_load("gpu/testdata/tcv", "H200", "fp16", "bad", &v, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "binary string"));
	ck_assert_ptr_null(v.a);
}
END_TEST

/* gpu/tc-rules.txt: every case parses, its model column is what the h200-mma
 * model gives (integer and MPFR models both), its other column differs from
 * it (else the case separates nothing), and malformed files are refused with
 * the line named. */
START_TEST(test_tc_rules)
{
	gpu_rule *rs;
	size_t n;
	char err[512];
	int rc = gpu_rules_load("gpu/tc-rules.txt", &rs, &n, err, sizeof err);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_ge(n, 12);
	int rule_seen[5] = {0};
	for (size_t i = 0; i < n; i++) {
		const gpu_rule *r = &rs[i];
		emu_tc_model m;
		ck_assert_int_eq(emu_tc_preset("h200-mma", r->in, r->out, &m), 0);
		emu_bits d = emu_tc_dot(&m, r->in, r->out, r->a, r->b, r->K, r->c).bits;
		emu_bits dm = emu_tc_mp_dot(&m, r->in, r->out, r->a, r->b, r->K, r->c).bits;
		ck_assert_msg(d == r->model && dm == r->model,
		              "%s: model 0x%llx / MPFR 0x%llx, file 0x%llx", r->name,
		              (unsigned long long)d, (unsigned long long)dm,
		              (unsigned long long)r->model);
		if (r->has_other)
			ck_assert_msg(r->other != r->model, "%s separates nothing", r->name);
		ck_assert_str_eq(gpu_rule_reading(r, r->model), "model");
		if (r->has_other)
			ck_assert_str_eq(gpu_rule_reading(r, r->other), "other");
		ck_assert_str_eq(gpu_rule_reading(r, r->model ^ 0x10), "neither");
		rule_seen[strncmp(r->name, "zero-align", 10) == 0 ? 0
		          : strncmp(r->name, "subnormal", 9) == 0 ? 1
		          : strncmp(r->name, "zero-sign", 9) == 0 ? 2
		          : strncmp(r->name, "nan", 3) == 0       ? 3
		                                                  : 4]++;
	}
	for (int i = 0; i < 5; i++)
		ck_assert_msg(rule_seen[i] > 0, "no case for rule %d", i);
	/* the K of the instruction: 16 for fp16, 32 for fp8 */
	ck_assert_uint_eq(rs[0].K, 16);
	ck_assert_uint_eq(rs[n - 1].K, 32);
	free(rs);
	static const struct {
		const char *text, *why;
	} bad[] = {
	    {"a fp16 fp32 0 0 0\nb fp16 fp33 0 0 0\n", ":2: formats"},
	    {"a fp16 fp32 0 0\n", ":1: fewer than 6"},
	    {"a fp16 fp32 0 0 0 10=3c00,3c00\n", "k is not a hex index below K"},
	    {"a fp16 fp32 0 0 0 1=3c00,3c00 1=3c00,3c00\n", "given twice"},
	    {"a fp16 fp32 0 0 0 1=13c00,3c00\n", "not a hex encoding of in"},
	    {"a e4m3 fp32 0 0 0 1=100,38\n", "not a hex encoding of in"},
	    {"a fp16 fp16 0 10000 0\n", "model is not"},
	    {"a fp16 fp32 0 0 x\n", "other is not"},
	    {"a fp16 fp32 0g 0 0\n", "C is not"},
	    {"a fp16 fp32 0 0 0 1:3c00\n", "not k=a,b"},
	    {"a fp16 fp32 0 0 0\na fp16 fp32 0 0 0\n", "name given twice"},
	    {"# nothing\n\n", "no cases"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char path[] = "/tmp/nanmap-rules-XXXXXX";
		int fd = mkstemp(path);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, bad[i].text, strlen(bad[i].text)),
		                 (ssize_t)strlen(bad[i].text));
		close(fd);
		ck_assert_int_eq(gpu_rules_load(path, &rs, &n, err, sizeof err), -1);
		ck_assert_msg(strstr(err, bad[i].why) && strstr(err, path), "case %zu: %s", i, err);
		ck_assert_ptr_null(rs);
		unlink(path);
	}
	ck_assert_int_eq(gpu_rules_load("/nonexistent/rules.txt", &rs, &n, err, sizeof err), -1);
}
END_TEST

/* The first i < n where a and b differ in their binary32 encodings, else n
 * (+0 and -0 differ; equal NaNs do not). */
static size_t first_diff(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t x, y;
		memcpy(&x, &a[i], sizeof x);
		memcpy(&y, &b[i], sizeof y);
		if (x != y)
			return i;
	}
	return n;
}

/* a[0..n) and b[0..n) have the same binary32 encodings; what names them */
static void assert_same_bits(const char *what, const float *a, const float *b, size_t n)
{
	size_t i = first_diff(a, b, n);
	if (i < n) {
		uint32_t x, y;
		memcpy(&x, &a[i], sizeof x);
		memcpy(&y, &b[i], sizeof y);
		ck_abort_msg("%s[%zu]: 0x%08" PRIx32 " and 0x%08" PRIx32, what, i, x, y);
	}
}

/* gpu/rows.h on the host takes exp from the tables when given them: with
 * every fp16 hexp one encoding up, softmax_ce's results move; with the
 * correctly rounded table they are those without tables. */
START_TEST(test_rows_tables)
{
	const size_t R = 4, N = 16;
	float x[4 * 16], g0[4 * 16], g1[4 * 16], g2[4 * 16], l0, l1, l2;
	char err[256];
	const emu_format *f16 = t_fmt("fp16");
	emu_env env = EMU_ENV_DEFAULT;
	for (size_t i = 0; i < R * N; i++)
		x[i] = (float)((int)(t_rand(7, i) % 64) - 32) / 8.0f; /* exact in fp16 */
	static gpu_table tab[2];
	gpu_tables ts = {tab, 2};
	snprintf(tab[0].func, sizeof tab[0].func, "hexp");
	snprintf(tab[0].format, sizeof tab[0].format, "fp16");
	snprintf(tab[1].func, sizeof tab[1].func, "hlog");
	snprintf(tab[1].format, sizeof tab[1].format, "fp16");
	for (uint32_t a = 0; a < GPU_TABLE_N; a++) {
		tab[0].v[a] = (uint16_t)emu_exp(f16, a, &env).bits;
		tab[1].v[a] = (uint16_t)emu_log(f16, a, &env).bits;
	}
	/* fp16 storage, compute and accumulator */
	const int F = GPU_K_F16;
	ck_assert_int_eq(gpu_rows_softmax(NULL, 1, F, F, F, x, R, N, g0, &l0, err, sizeof err), 0);
	ck_assert_int_eq(gpu_rows_softmax(&ts, 1, F, F, F, x, R, N, g1, &l1, err, sizeof err), 0);
	assert_same_bits("grad", g0, g1, R * N);
	assert_same_bits("loss", &l0, &l1, 1);
	for (uint32_t a = 0; a < GPU_TABLE_N; a++)
		if (!emu_is_nan(f16, tab[0].v[a]) && tab[0].v[a] != 0x7c00 && tab[0].v[a] != 0)
			tab[0].v[a]++;
	ck_assert_int_eq(gpu_rows_softmax(&ts, 1, F, F, F, x, R, N, g2, &l2, err, sizeof err), 0);
	ck_assert_uint_lt(first_diff(g0, g2, R * N), R * N);
}
END_TEST

/* layernorm's rsqrt is the table's hrsqrt in bf16 compute: every rstd is
 * the table's entry for var + eps, so a table one encoding up moves each
 * rstd by exactly one encoding; fp32 compute never looks a table up. */
START_TEST(test_rows_rsqrt_table)
{
	const size_t R = 4, N = 16;
	float x[4 * 16], dy[4 * 16], y[4 * 16], dx[4 * 16], rs0[4], rs1[4], rs2[4], var[4];
	char err[256];
	const emu_format *bf16 = t_fmt("bf16");
	emu_env env = EMU_ENV_DEFAULT;
	for (size_t i = 0; i < R * N; i++) {
		x[i] = (float)((int)(t_rand(11, i) % 64) - 32) / 16.0f; /* exact in bf16 */
		dy[i] = t_rand(12, i) & 1 ? -1.0f : 1.0f;
	}
	static gpu_table tab[1];
	gpu_tables ts = {tab, 1};
	snprintf(tab[0].func, sizeof tab[0].func, "hrsqrt");
	snprintf(tab[0].format, sizeof tab[0].format, "bf16");
	for (uint32_t a = 0; a < GPU_TABLE_N; a++) {
		uint16_t r = (uint16_t)emu_rsqrt(bf16, a, &env).bits;
		tab[0].v[a] = emu_is_nan(bf16, r) || r == 0x7f80 || r == 0 ? r : (uint16_t)(r + 1);
	}
	const int B = GPU_K_BF16, F32 = GPU_K_F32;
	float eps = 0x1p-16f;
	ck_assert_int_eq(gpu_rows_layernorm(NULL, 0, B, B, F32, x, dy, R, N, eps, y, dx, rs0, var,
	                                    err, sizeof err),
	                 0);
	ck_assert_int_eq(gpu_rows_layernorm(&ts, 0, B, B, F32, x, dy, R, N, eps, y, dx, rs1, var,
	                                    err, sizeof err),
	                 0);
	for (size_t r = 0; r < R; r++) {
		uint16_t b0 = (uint16_t)emu_from_float(bf16, rs0[r], &env).bits;
		uint16_t b1 = (uint16_t)emu_from_float(bf16, rs1[r], &env).bits;
		ck_assert_msg(b1 == b0 + 1, "row %zu: rstd 0x%04x with the table, 0x%04x without",
		              r, b1, b0);
	}
	ck_assert_int_eq(gpu_rows_layernorm(NULL, 0, B, F32, F32, x, dy, R, N, eps, y, dx, rs0, var,
	                                    err, sizeof err),
	                 0);
	ck_assert_int_eq(gpu_rows_layernorm(&ts, 0, B, F32, F32, x, dy, R, N, eps, y, dx, rs2, var,
	                                    err, sizeof err),
	                 0);
	assert_same_bits("rstd", rs0, rs2, R);
}
END_TEST

/* a format that is none of gpu_kfmt's: -1 and one line, before any output */
START_TEST(test_rows_bad_format)
{
	float x[4] = {1, 2, 3, 4}, g[4] = {0}, loss = 0;
	char err[256] = "";
	ck_assert_int_eq(
	    gpu_rows_softmax(NULL, 0, GPU_K_F16, 3, GPU_K_F32, x, 1, 4, g, &loss, err, sizeof err),
	    -1);
	ck_assert_str_eq(err, "kernel format 3 is not fp32, fp16 or bf16");
	ck_assert_float_eq(g[0], 0.0f);
}
END_TEST

/* k_sr_round and k_sr_bits (gpu/rows.h) against emu_from_float under EMU_SR
 * keyed by emu_sr_key(step, 0, e), for fp16, bf16 and fp32: random binary32
 * encodings (every exponent), values near each format's largest finite and
 * smallest subnormal, and the specials; equal encodings, NaN for NaN. */
START_TEST(test_rows_sr)
{
	static const char *const names[3] = {"fp32", "fp16", "bf16"}; /* by gpu_kfmt */
	enum { NX = 6000 };
	const uint64_t seed = 0x1234abcdull, e0 = 77;
	const unsigned step = 65;
	float *x = malloc(NX * sizeof *x), *got = malloc(NX * sizeof *got);
	char err[256] = "";
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(got);
	for (int F = GPU_K_F32; F <= GPU_K_BF16; F++) {
		const emu_format *f = emu_format_by_name(names[F]);
		uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(F + 1);
		for (size_t i = 0; i < NX; i++) {
			uint32_t u;
			r = emu_mix64(r + i);
			if (i < 2000) { /* any encoding */
				u = (uint32_t)r;
				memcpy(&x[i], &u, sizeof u);
			} else if (i < 3000) { /* around the largest finite */
				x[i] = (float)(f->max *
				               (1.0 + ((double)(r >> 11) * 0x1p-53 - 0.5) * 0.01));
			} else if (i < 4000) { /* around the smallest subnormal */
				x[i] =
				    (float)(f->min_subnormal * ((double)(r >> 11) * 0x1p-53 * 8.0));
			} else if (i < 5000) { /* ordinary values */
				x[i] = (float)(((double)(r >> 11) * 0x1p-53 - 0.5) * 4.0);
			} else { /* a value a quarter of an ulp past a value of F */
				x[i] = (float)((1.0 + (double)(r % 64) / 64.0) *
				               (1.0 + f->epsilon / 4));
			}
			if (r >> 63)
				x[i] = -x[i];
		}
		x[0] = 0.0f;
		x[1] = -0.0f;
		x[2] = INFINITY;
		x[3] = -INFINITY;
		x[4] = NAN;
		ck_assert_int_eq(gpu_rows_sr(F, x, NX, seed, step, e0, got, err, sizeof err), 0);
		for (size_t i = 0; i < NX; i++) {
			emu_env env = {EMU_SR, false, false,
			               false,  seed,  emu_sr_key(step, 0, e0 + i)};
			double want = emu_decode(f, emu_from_float(f, x[i], &env).bits);
			if (isnan(want)) {
				ck_assert_msg(isnan(got[i]), "%s: sr(%a) = %a, want NaN", names[F],
				              (double)x[i], (double)got[i]);
				continue;
			}
			bool same = emu_encode(f, got[i]) == emu_encode(f, want) &&
			            !signbit(got[i]) == !signbit(want);
			ck_assert_msg(same, "%s: element %zu: sr(%a) = %a, want %a", names[F], i,
			              (double)x[i], (double)got[i], want);
		}
	}
	free(x);
	free(got);
}
END_TEST

/* The block quantisers of gpu/rows.h on the host, on the sources' own
 * examples (docs/recipes.md): TE's MXFP8 gives the 957 block X = 4 (957 ·
 * fp32(1/448) rounds up to 4), so 957 becomes 239.25 -> 240; an amax of
 * 448·2^3 stays at 2^3; a zero block has code 0 and a NaN element code
 * 0xFF. DeepSeek: amax 448 gives s = 1 and d = 1; a zero block's amax is
 * clamped to fp32(1e-4), d = fp32(fp32(1e-4) / 448). */
START_TEST(test_rows_quant_examples)
{
	float x[2 * 128];
	uint8_t q[2 * 128];
	uint32_t sc[8];
	char err[256];
	for (int i = 0; i < 64; i++)
		x[i] = i < 32 ? 1.0f : -1.0f;
	x[0] = 957.0f;
	x[32] = 3584.0f; /* 448·2^3 */
	for (int i = 64; i < 128; i++)
		x[i] = i == 104 ? NAN : 0.0f;
	ck_assert_int_eq(gpu_rows_quant(GPU_Q_MXFP8, GPU_K_E4M3, 448.0f, 0.0f, 32, x, 2, 64, q, sc,
	                                err, sizeof err),
	                 0);
	ck_assert_uint_eq(sc[0], 127 + 2);
	ck_assert_uint_eq(q[0], 0x77); /* 240 */
	ck_assert_uint_eq(q[1], 0x28); /* 0.25 */
	ck_assert_uint_eq(sc[1], 127 + 3);
	ck_assert_uint_eq(q[32], 0x7e); /* 448 */
	ck_assert_uint_eq(q[33], 0xa0); /* -0.125 */
	ck_assert_uint_eq(sc[2], 0x00);
	ck_assert_uint_eq(q[64], 0x00);
	ck_assert_uint_eq(sc[3], 0x00);  /* TE's fmaxf drops the NaN: a zero block */
	ck_assert_uint_eq(q[104], 0x7f); /* the NaN element itself */
	for (int i = 0; i < 128; i++)
		x[i] = i == 5 ? 448.0f : 0.5f;
	for (int i = 128; i < 256; i++)
		x[i] = 0.0f;
	ck_assert_int_eq(gpu_rows_quant(GPU_Q_DEEPSEEK, GPU_K_E4M3, 448.0f, 1e-4f, 128, x, 2, 128,
	                                q, sc, err, sizeof err),
	                 0);
	volatile float amin = 1e-4f; /* the division at run time, in binary32 */
	float d0 = amin / 448.0f;
	uint32_t one = 0x3f800000u, dz;
	memcpy(&dz, &d0, sizeof dz);
	ck_assert_uint_eq(sc[0], one);
	ck_assert_uint_eq(q[5], 0x7e);
	ck_assert_uint_eq(q[6], 0x30); /* 0.5 */
	ck_assert_uint_eq(sc[1], dz);
	ck_assert_uint_eq(q[128], 0x00);
	ck_assert_int_eq(gpu_rows_quant(GPU_Q_MXFP8, GPU_K_F16, 448.0f, 0.0f, 32, x, 1, 32, q, sc,
	                                err, sizeof err),
	                 -1);
	ck_assert_str_eq(err, "quant: element format 1 is not e4m3 or e5m2, or no block");
}
END_TEST

/* attention's row bodies (gpu/rows.h) on the host, by hand: naive over two
 * equal logits (P = 1/2 each, L = log 2), online over two blocks of one key
 * with logits 0 and 10 (α = exp(−10), l = α + 1, L = 10 + log l), fp8's P
 * cast flushing a tiny e (counted in lost), a causal row that sees one key
 * (the other P is +0, not read by a GEMM as −0), and a format that is none of fp32, fp16, bf16 */
START_TEST(test_attn_rows)
{
	const emu_format *f32 = emu_format_by_name("fp32");
	const emu_env rne = EMU_ENV_DEFAULT;
	char err[160];
	float sacc[4] = {0.0f, 0.0f, 0.0f, 10.0f}, P[4], al[4], l[2], L[2], lost[2], O[4];
	/* naive, fp32, two queries of two keys; row 1 logits 0 and 10 */
	ck_assert_int_eq(gpu_rows_attn_soft(NULL, 0, GPU_K_F32, GPU_K_F32, sacc, 2, 2, 2, 0, 1.0f,
	                                    NULL, 1, NULL, 1, 448.0f, P, al, l, L, lost, err,
	                                    sizeof err),
	                 0);
	ck_assert(P[0] == 0.5f && P[1] == 0.5f && l[0] == 2.0f);
	ck_assert_uint_eq(emu_encode(f32, L[0]), emu_log(f32, emu_encode(f32, 2.0), &rne).bits);
	/* online, blocks of one key */
	ck_assert_int_eq(gpu_rows_attn_soft(NULL, 1, GPU_K_F32, GPU_K_F32, sacc, 2, 2, 1, 0, 1.0f,
	                                    NULL, 1, NULL, 1, 448.0f, P, al, l, L, lost, err,
	                                    sizeof err),
	                 0);
	emu_bits a = emu_exp(f32, emu_encode(f32, -10.0), &rne).bits;
	ck_assert_uint_eq(emu_encode(f32, al[3]), a);
	ck_assert(P[2] == 1.0f && P[3] == 1.0f);
	float lw = (float)emu_decode(f32, a) + 1.0f;
	ck_assert_uint_eq(emu_encode(f32, l[1]), emu_encode(f32, lw));
	/* its output: part_0 = 2, part_1 = 4 (one column): O = (α·2 + 4) / l */
	float part[4] = {2.0f, 2.0f, 2.0f, 4.0f};
	ck_assert_int_eq(gpu_rows_attn_out(NULL, 1, GPU_K_F32, GPU_K_F32, GPU_K_F32, part, al, l,
	                                   NULL, 1, 448.0f, 2, 2, 1, 0, 1, O, err, sizeof err),
	                 0);
	volatile float ow = (float)emu_decode(f32, a) * 2.0f;
	ow = (ow + 4.0f) / l[1];
	ck_assert_uint_eq(emu_encode(f32, O[1]), emu_encode(f32, ow));
	/* fp8: e = exp(−30)·448 is below e4m3's smallest subnormal (2^-9): flushed */
	float s8[2] = {0.0f, -30.0f}, d8[1] = {1.0f};
	ck_assert_int_eq(gpu_rows_attn_soft(NULL, 2, GPU_K_F32, GPU_K_F32, s8, 1, 2, 2, 0, 1.0f, d8,
	                                    1, d8, 2, 448.0f, P, al, l, L, lost, err, sizeof err),
	                 0);
	ck_assert(P[0] == 448.0f && P[1] == 0.0f && lost[0] == 1.0f);
	/* causal, two queries of two keys: query 0 sees key 0 only */
	ck_assert_int_eq(gpu_rows_attn_soft(NULL, 0, GPU_K_F32, GPU_K_F32, sacc, 2, 2, 2, 1, 1.0f,
	                                    NULL, 1, NULL, 1, 448.0f, P, al, l, L, lost, err,
	                                    sizeof err),
	                 0);
	ck_assert(P[0] == 1.0f && P[1] == 0.0f && !signbit(P[1]) && L[0] == 0.0f);
	ck_assert_int_eq(gpu_rows_attn_soft(NULL, 0, GPU_K_E4M3, GPU_K_F32, sacc, 1, 2, 2, 0, 1.0f,
	                                    NULL, 1, NULL, 1, 448.0f, P, al, l, L, lost, err,
	                                    sizeof err),
	                 -1);
	ck_assert_str_eq(err, "kernel format 3 is not fp32, fp16 or bf16");
}
END_TEST

Suite *suite_gpuhost(void)
{
	Suite *s = suite_create("gpuhost");
	TCase *tc = tcase_create("compare");
	tcase_add_test(tc, test_ulp_dist);
	tcase_add_test(tc, test_cmp_rules);
	tcase_add_test(tc, test_cmp_merge);
	tcase_add_test(tc, test_convert_report);
	suite_add_tcase(s, tc);
	TCase *tf = tcase_create("files");
	tcase_add_test(tf, test_args);
	tcase_add_test(tf, test_tables);
	tcase_add_test(tf, test_tcv);
	tcase_add_test(tf, test_tc_rules);
	tcase_add_test(tf, test_attn_rows);
	tcase_add_test(tf, test_rows_tables);
	tcase_add_test(tf, test_rows_rsqrt_table);
	tcase_add_test(tf, test_rows_bad_format);
	tcase_add_test(tf, test_rows_quant_examples);
	tcase_add_test(tf, test_rows_sr);
	suite_add_tcase(s, tf);
	return s;
}
