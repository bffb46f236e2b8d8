/*
 * check_case.c — the case-file reader (emu/sweep/nm_case.c):
 *  - a full file: every field, {fmt} expansion (custom specs in braces),
 *    grids of each kind (ends exact, values by their encodings), the default
 *    and explicit --quick grids, [plot]/[claim] kept with their lines, the
 *    hash of the bytes;
 *  - each kind of bad file (unknown key or section, bad number, unknown
 *    kernel/variant/format/parameter, bad grid, too many axes, duplicate
 *    axis or key, lines too long) rejected with exactly one message naming
 *    the file, the line and the key.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib.h"
#include "emu/sweep/nm_case.h"

/* Write text to a fresh file NAME.case in a temporary directory; the path
 * goes into path (the directory is removed by t_case_rm). */
static void t_case_write(const char *name, const char *text, char *path, size_t len)
{
	char dir[] = "/tmp/nanmap-case-XXXXXX";
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, len, "%s/%s.case", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	ck_assert_int_eq(fclose(f), 0);
}

static void t_case_rm(const char *path)
{
	char dir[512];
	char *slash;

	remove(path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	rmdir(dir);
}

/* The encoding of a double, so values compare bit for bit. */
static uint64_t t_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

#define CK_D(got, want)                                                                            \
	ck_assert_msg(t_bits(got) == t_bits(want), "%s = %a (0x%016llx), want %a (0x%016llx)", #got,  \
	              (got), (unsigned long long)t_bits(got), (want),                              \
	              (unsigned long long)t_bits(want))

static const char good[] =
    "; a comment\n"
    "[case]\n"
    "title = Naive softmax cross-entropy vs. logit magnitude\n"
    "kernel = softmax_ce\n"
    "variants = naive maxsub,lse          ; blank- or comma-separated\n"
    "formats = fp16 e4m3,p=5,emax=15\n"
    "policy = storage={fmt}\n"
    "policy = storage={fmt},compute=fp32\n"
    "policy = storage=bf16\n"
    "truth = no\n"
    "exact = yes\n"
    "series = loss\n"
    "[input]\n"
    "gen = logspace\n"
    "rows = 2\n"
    "cols = 32000\n"
    "seed = 0x10\n"
    "scale = 0.5\n"
    "range = 0x1p-16,0x1p16\n"
    "maxabs = yes\n"
    "[param]\n"
    "label = 3\n"
    "[axis logit_max]\n"
    "sets = scale\n"
    "grid = log 0.1 1e6 121\n"
    "domain = storage\n"
    "[axis n]\n"
    "sets = cols\n"
    "grid = pow2 1 1024\n"
    "quick = list 1 5.4 32\n"
    "monotone = no\n"
    "[plot]\n"
    "y = loss.rel_err\n"
    "[claim]\n"
    "id = 3\n";

START_TEST(test_good)
{
	char path[512], err[512] = "";
	nm_case c;
	static const char *const specs[] = {
	    "storage=fp16",
	    "storage=e4m3",
	    "storage={p=5,emax=15}",
	    "storage=fp16,compute=fp32",
	    "storage=e4m3,compute=fp32",
	    "storage={p=5,emax=15},compute=fp32",
	    "storage=bf16",
	};
	const nm_case_kv *kv;

	t_case_write("softmax_naive", good, path, sizeof(path));
	ck_assert_msg(nm_case_load(path, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.name, "softmax_naive");
	ck_assert_str_eq(c.path, path);
	ck_assert_str_eq(c.title, "Naive softmax cross-entropy vs. logit magnitude");
	ck_assert_str_eq(c.kernel->name, "softmax_ce");
	ck_assert_uint_eq(c.nvariants, 3);
	ck_assert_str_eq(c.variants[0], "naive");
	ck_assert_str_eq(c.variants[1], "maxsub");
	ck_assert_str_eq(c.variants[2], "lse");
	/* policy lines in order, each {fmt} line once per format */
	ck_assert_uint_eq(c.npolicies, ARRAY_SIZE(specs));
	for (size_t i = 0; i < ARRAY_SIZE(specs); i++)
		ck_assert_str_eq(c.policy_specs[i], specs[i]);
	ck_assert_int_eq(c.policies[2].storage.p, 5);
	ck_assert_int_eq(c.policies[5].compute.p, 24);
	ck_assert(!c.truth);
	ck_assert(c.exact);
	ck_assert_uint_eq(c.nseries, 1);
	ck_assert_str_eq(c.series[0], "loss");
	ck_assert_int_eq(c.gen.dist, NM_GEN_LOGSPACE);
	ck_assert_uint_eq(c.gen.seed, 16);
	CK_D(c.gen.scale, 0.5);
	CK_D(c.gen.lo, 0x1p-16);
	CK_D(c.gen.hi, 0x1p16);
	ck_assert(c.maxabs);
	ck_assert_uint_eq(c.rows, 2);
	ck_assert_uint_eq(c.cols, 32000);
	ck_assert_uint_eq(c.nparams, 1);
	ck_assert_str_eq(c.params[0].name, "label");
	CK_D(c.params[0].value, 3.0);
	/* axes */
	ck_assert_uint_eq(c.naxes, 2);
	ck_assert_str_eq(c.axes[0].name, "logit_max");
	ck_assert_int_eq(c.axes[0].target, NM_SET_SCALE);
	ck_assert_int_eq(c.axes[0].domain, NM_DOM_STORAGE);
	ck_assert(c.axes[0].monotone);
	ck_assert_uint_eq(c.axes[0].nvalues, 121);
	CK_D(c.axes[0].values[0], 0.1); /* the ends exactly as written */
	CK_D(c.axes[0].values[120], 1e6);
	for (size_t i = 1; i < 121; i++)
		ck_assert(c.axes[0].values[i] > c.axes[0].values[i - 1]);
	/* default quick grid: 9 evenly spaced picks, ends included */
	ck_assert_uint_eq(c.axes[0].nquick, 9);
	for (size_t i = 0; i < 9; i++)
		CK_D(c.axes[0].quick[i], c.axes[0].values[i * 15]);
	ck_assert_str_eq(c.axes[1].name, "n");
	ck_assert_int_eq(c.axes[1].target, NM_SET_COLS);
	ck_assert_int_eq(c.axes[1].domain, NM_DOM_INT);
	ck_assert(!c.axes[1].monotone);
	ck_assert_uint_eq(c.axes[1].nvalues, 11);
	for (size_t i = 0; i < 11; i++)
		CK_D(c.axes[1].values[i], ldexp(1.0, (int)i));
	/* a count axis rounds to whole numbers */
	ck_assert_uint_eq(c.axes[1].nquick, 3);
	CK_D(c.axes[1].quick[0], 1.0);
	CK_D(c.axes[1].quick[1], 5.0);
	CK_D(c.axes[1].quick[2], 32.0);
	/* [plot] and [claim] kept verbatim with their lines */
	kv = nm_case_get(&c, "plot", "y");
	ck_assert_ptr_nonnull(kv);
	ck_assert_str_eq(kv->value, "loss.rel_err");
	ck_assert_int_eq(kv->line, 33);
	kv = nm_case_get(&c, "claim", "id");
	ck_assert_ptr_nonnull(kv);
	ck_assert_str_eq(kv->value, "3");
	ck_assert_int_eq(kv->line, 35);
	ck_assert_ptr_null(nm_case_get(&c, "plot", "id"));
	/* FNV-1a 64 of the bytes */
	{
		uint64_t h = 0xcbf29ce484222325ull;

		for (const char *p = good; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		ck_assert_uint_eq(c.hash, h);
	}
	nm_case_free(&c);
	t_case_rm(path);
}
END_TEST

/* Defaults: one policy, no formats, no axis, default variant and generator. */
START_TEST(test_minimal)
{
	char path[512], err[512] = "";
	nm_case c;

	t_case_write("min", "[case]\nkernel=layernorm\npolicy=storage=bf16\n[input]\ncols=8\n", path,
	             sizeof(path));
	ck_assert_msg(nm_case_load(path, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(c.title, "min");
	ck_assert_uint_eq(c.nvariants, 1);
	ck_assert_str_eq(c.variants[0], "twopass");
	ck_assert_uint_eq(c.npolicies, 1);
	ck_assert(c.truth);
	ck_assert(!c.exact);
	ck_assert_int_eq(c.gen.dist, NM_GEN_NORMAL);
	ck_assert_uint_eq(c.gen.seed, 1);
	CK_D(c.gen.scale, 1.0);
	ck_assert_uint_eq(c.rows, 1);
	ck_assert_uint_eq(c.naxes, 0);
	ck_assert_uint_eq(c.nkv, 0);
	nm_case_free(&c);
	t_case_rm(path);
}
END_TEST

/* lin grids end exactly; list keeps values; pow2 of fractions; param axes. */
START_TEST(test_grids)
{
	char path[512], err[512] = "";
	nm_case c;

	t_case_write("grids",
	             "[case]\nkernel=layernorm\npolicy=storage=fp16\n[input]\ncols=8\n"
	             "[axis eps]\nsets = param:eps\ngrid = lin 0.1 0.7 7\nquick = pow2 0.125 0.5\n"
	             "[axis sd]\nsets = scale\ngrid = list -1 0 0x1p-3 1e300\n",
	             path, sizeof(path));
	ck_assert_msg(nm_case_load(path, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.axes[0].target, NM_SET_PARAM);
	ck_assert_str_eq(c.axes[0].param, "eps");
	ck_assert_int_eq(c.axes[0].domain, NM_DOM_REAL);
	ck_assert_uint_eq(c.axes[0].nvalues, 7);
	CK_D(c.axes[0].values[0], 0.1);
	CK_D(c.axes[0].values[6], 0.7);
	ck_assert_uint_eq(c.axes[0].nquick, 3);
	CK_D(c.axes[0].quick[0], 0.125);
	CK_D(c.axes[0].quick[1], 0.25);
	CK_D(c.axes[0].quick[2], 0.5);
	ck_assert_uint_eq(c.axes[1].nvalues, 4);
	CK_D(c.axes[1].values[0], -1.0);
	CK_D(c.axes[1].values[1], 0.0);
	CK_D(c.axes[1].values[2], 0.125);
	CK_D(c.axes[1].values[3], 1e300);
	/* fewer values than the 9 picks: the quick grid is the grid */
	ck_assert_uint_eq(c.axes[1].nquick, 4);
	nm_case_free(&c);
	t_case_rm(path);
	/* decades of a log grid are exact powers of ten */
	t_case_write("decades",
	             "[case]\nkernel=softmax_ce\npolicy=storage=fp16\n[input]\ncols=8\n"
	             "[axis m]\nsets = scale\ngrid = log 0.1 1e6 15\n",
	             path, sizeof(path));
	ck_assert_msg(nm_case_load(path, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.axes[0].nvalues, 15);
	for (int i = 0; i < 15; i += 2)
		CK_D(c.axes[0].values[i], i == 0 ? 0.1 : pow(10.0, (double)(i / 2 - 1)));
	CK_D(c.axes[0].values[1], 0.31622776601683794);
	nm_case_free(&c);
	t_case_rm(path);
}
END_TEST

/* A base file; each bad row replaces one line of it (or appends, line 0). */
static const char base[] = "[case]\n"                    /* 1 */
                           "kernel = softmax_ce\n"       /* 2 */
                           "variants = naive lse\n"      /* 3 */
                           "formats = fp16 bf16\n"       /* 4 */
                           "policy = storage={fmt}\n"    /* 5 */
                           "[input]\n"                   /* 6 */
                           "cols = 16\n"                 /* 7 */
                           "[axis x]\n"                  /* 8 */
                           "sets = scale\n"              /* 9 */
                           "grid = log 1 100 5\n";       /* 10 */

static const struct {
	int line;
	const char *text, *want; /* want after "PATH" */
} bad[] = {
    {7, "colz = 16", ":7: key 'colz': unknown key in [input]"},
    {1, "[cse]", ":1: unknown section '[cse]' (sections: case input param axis NAME plot claim)"},
    {7, "cols = 16\nscale = 1e", ":8: key 'scale': bad number '1e'"},
    {7, "cols = 16\nscale = nan", ":8: key 'scale': bad number 'nan'"},
    {7, "cols = 16\nscale = inf", ":8: key 'scale': 'inf' is not a finite number"},
    {7, "cols = 0", ":7: key 'cols': bad count '0' (an integer from 1 to 67108864)"},
    {7, "cols = 16\nseed = -1", ":8: key 'seed': bad seed '-1' (an unsigned integer)"},
    {7, "cols = 16\ngen = gauss", ":8: key 'gen': unknown generator 'gauss' (normal uniform logspace ones)"},
    {7, "cols = 16\nrange = 1,2", ":8: key 'range': only for gen = logspace"},
    {7, "cols = 16\nmaxabs = maybe", ":8: key 'maxabs': 'maybe' is not yes or no"},
    {2, "kernel = softmax", ":2: key 'kernel': unknown kernel 'softmax' (kernels: softmax_ce "
                            "layernorm accum backward gradscaler rmsnorm bce quant optimizer batchnorm matmul attention train)"},
    {2, "", ": [case] needs a kernel (kernels: softmax_ce layernorm accum backward gradscaler rmsnorm bce quant optimizer batchnorm matmul attention train)"},
    {3, "variants = naive lse2", ":3: key 'variants': unknown variant 'lse2' for softmax_ce "
                                 "(variants: naive maxsub lse)"},
    {3, "variants = naive naive", ":3: key 'variants': 'naive' listed twice"},
    {4, "formats = fp16 fp17", ":4: key 'formats': unknown format 'fp17'"},
    {4, "formats = fp16\nformats = bf16", ":5: key 'formats': given twice (first on line 4)"},
    {4, "", ":4: key 'policy': '{fmt}' needs a formats list in [case]"},
    {5, "policy = storage=fp16", ":4: key 'formats': no policy uses {fmt}"},
    {5, "policy = storage={fmt},round=near", ":5: key 'policy': bad policy "
                                             "'storage=fp16,round=near': unknown rounding mode 'near' (rne rtz up down rna sr)"},
    {5, "policy = storage={fmt}\npolicy = storage=fp16", ":6: key 'policy': policy 'storage=fp16' listed twice"},
    {5, "", ": [case] needs at least one policy"},
    {1, "[case]\ncolor = red", ":2: key 'color': unknown key in [case]"},
    /* an unclosed header is its own line's error, not the next key's "unknown section '[]'" */
    {1, "[case", ":1: section header '[case' has no closing ']'"},
    {1, "kernel = bce\n[case]", ":1: key 'kernel': before any section header (a case file "
                               "starts with [case]; cases/README.md)"},
    {0, "[param]\nlable = 2", ":12: key 'lable': unknown parameter for softmax_ce (it reads: "
                              "label=Y (default: row mod classes))"},
    {0, "[param]\nlabel = two", ":12: key 'label': bad number 'two'"},
    {10, "grid = log 0 100 5", ":10: key 'grid': want 0 < A < B"},
    {10, "grid = lin 5 1 5", ":10: key 'grid': want A < B"},
    {10, "grid = lin 1 5 1", ":10: key 'grid': bad count '1' (2 to 100000 values)"},
    {10, "grid = lin 1 5", ":10: key 'grid': bad grid 'lin 1 5' (lin A B N, log A B N, list V..., pow2 A B)"},
    {10, "grid = range 1 5 9", ":10: key 'grid': bad grid 'range 1 5 9' (lin A B N, log A B N, list V..., pow2 A B)"},
    {10, "grid = list 1 3 2", ":10: key 'grid': list values must be strictly ascending"},
    {10, "grid = pow2 1 3", ":10: key 'grid': pow2 wants powers of two A <= B"},
    {10, "grid = list 1 x", ":10: key 'grid': bad number 'x'"},
    {10, "quick = lin 1 2 3", ":8: [axis x] needs grid"},
    {9, "sets = color", ":9: key 'sets': bad target 'color' (scale, cols, rows, outlier_k, outlier_frac or param:NAME)"},
    {9, "sets = param:eps", ":9: key 'sets': 'eps' is not a parameter of softmax_ce (it reads: "
                            "label=Y (default: row mod classes))"},
    {9, "", ":8: [axis x] needs sets"},
    {10, "grid = log 1 100 5\ndomain = float", ":11: key 'domain': unknown domain 'float' (real storage compute int pow2)"},
    {10, "grid = log 1 100 5\nstep = 2", ":11: key 'step': unknown key in [axis x] (keys: sets grid quick domain monotone)"},
    {0, "[axis x]", ":11: section 'axis x': axis 'x' given twice (first on line 8)"},
    {0, "[axis y]\nsets = scale\ngrid = list 1 2", ":12: key 'sets': axis 'x' sets the same thing"},
    {0, "[axis y]\nsets = rows\ngrid = list 1 2\n[axis z]", ":14: section 'axis z': at most 2 axes"},
    {0, "[axis bad-name]", ":11: section 'axis bad-name': an axis name is 1 to 31 letters, digits or _"},
    {7, "cols = 16\nrows = 0x1000000\n[axis n]\nsets = cols\ngrid = pow2 1 32",
     ": inputs of up to 16777216 x 32 values (at most 2^28)"},
    {0, "[param]\n = 2", ":12: '= 2' has no key"},
    {7, "cols 16", ":7: not a section header, key = value, or comment"},
    {7, "cols = 16\n[input", ":8: section header '[input' has no closing ']'"},
};

START_TEST(test_bad)
{
	char path[512], err[512] = "", want[1024], text[2048];
	const char *p = base;
	size_t n = 0;
	nm_case c;
	int line = 1;

	/* build the file: base with line bad[_i].line replaced */
	for (; *p; line++) {
		const char *nl = strchr(p, '\n');
		size_t len = (size_t)(nl - p) + 1;

		if (line == bad[_i].line)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s", bad[_i].text,
			                      bad[_i].text[0] ? "\n" : "");
		else
			memcpy(text + n, p, len), n += len;
		p = nl + 1;
	}
	if (bad[_i].line == 0)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\n", bad[_i].text);
	text[n] = '\0';
	t_case_write("bad", text, path, sizeof(path));
	snprintf(want, sizeof(want), "%s%s", path, bad[_i].want);
	ck_assert_msg(nm_case_load(path, &c, err, sizeof(err)) == -1, "row %d loaded:\n%s", _i, text);
	ck_assert_msg(!strcmp(err, want), "row %d:\n got %s\nwant %s", _i, err, want);
	/* nothing kept */
	ck_assert_uint_eq(c.npolicies, 0);
	ck_assert_ptr_null(c.kernel);
	t_case_rm(path);
}
END_TEST

START_TEST(test_bad_files)
{
	char path[512], err[512] = "", want[600], text[400];
	nm_case c;

	/* a line longer than inih's buffer is an error, not two lines */
	memset(text, 'x', sizeof(text));
	memcpy(text, "[case]\ntitle = ", 15);
	text[sizeof(text) - 2] = '\n';
	text[sizeof(text) - 1] = '\0';
	t_case_write("long", text, path, sizeof(path));
	snprintf(want, sizeof(want), "%s:2: line longer than 198 characters", path);
	ck_assert_int_eq(nm_case_load(path, &c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, want);
	t_case_rm(path);
	/* a missing file */
	ck_assert_int_eq(nm_case_load("/nonexistent/x.case", &c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "/nonexistent/x.case: cannot open: No such file or directory");
	/* a name the outputs cannot carry */
	t_case_write("a b", "[case]\n", path, sizeof(path));
	snprintf(want, sizeof(want), "%s: a case's file name is letters, digits, _ . - and '.case'",
	         path);
	ck_assert_int_eq(nm_case_load(path, &c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, want);
	t_case_rm(path);
}
END_TEST

Suite *suite_case(void)
{
	Suite *s = suite_create("case");
	TCase *tc = tcase_create("good");
	TCase *tb = tcase_create("bad");

	tcase_add_test(tc, test_good);
	tcase_add_test(tc, test_minimal);
	tcase_add_test(tc, test_grids);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(tb, test_bad, 0, ARRAY_SIZE(bad));
	tcase_add_test(tb, test_bad_files);
	suite_add_tcase(s, tb);
	return s;
}
