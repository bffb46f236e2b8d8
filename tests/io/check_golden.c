/*
 * check_golden.c — golden files and the comparison (emu/io/nm_golden.c,
 * emu/cli/nm_goldcmd.c):
 *  - the fast backend reproduces every golden file byte for byte below its
 *    provenance header: every record's encoding and class, every case's
 *    status, flag counts per operation kind and first failing operation;
 *    and the files read back through the C API to the same records;
 *  - nm_golden_compare catches a 1-ulp change, a flipped sign of zero, a NaN
 *    where a finite value belongs, an inf for the largest finite value, a
 *    wrong length and a too-wide encoding, and passes the exact outputs;
 *    --ulp and the NaN-sign policy do what golden/README.md says;
 *  - the actual-output readers (raw, hex, .npy) and the golden reader refuse
 *    damaged input with a reason naming the file (and line).
 * Run from the repository root (the files are read from golden/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib.h"
#include "emu/io/nm_file.h"
#include "emu/cli/nm_goldcmd.h"
#include "emu/io/nm_golden.h"
#include "emu/io/nm_npy.h"
#include "emu/io/nm_parse.h"

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)

/* The whole file (nm_file_read), which must exist. */
static char *slurp(const char *path, size_t *len)
{
	char *s = nm_file_read(path, len);
	ck_assert_msg(s != NULL, "cannot read %s", path);
	return s;
}

/* The text from the first case on: the header names the MPFR version of the
 * machine that generated it, the body must not depend on it. */
static const char *body(const char *text)
{
	const char *p = strstr(text, "\ncase ");
	return p ? p : text;
}

/* Line number (1-based) of the first difference of a and b. */
static size_t first_diff_line(const char *a, const char *b, const char **at)
{
	size_t line = 1;
	while (*a && *a == *b) {
		if (*a == '\n')
			line++;
		a++;
		b++;
	}
	while (a > *at && a[-1] != '\n')
		a--;
	*at = a;
	return line;
}

START_TEST(test_fast_reproduces)
{
	const char *kernel = nm_gold_kernel_at((size_t)_i);
	char path[256], err[512], *want, *got;
	size_t wlen, glen, ncases, nrec;

	snprintf(path, sizeof path, "golden/%s.golden", kernel);
	want = slurp(path, &wlen);
	ck_assert_msg(want != NULL, "%s: cannot read (run the tests from the repository root)",
	              path);
	ck_assert_msg(
	    nm_gold_text(kernel, EMU_BE_FAST, &got, &glen, &ncases, &nrec, err, sizeof err) == 0,
	    "%s: %s", kernel, err);
	ck_assert_msg(!strncmp(want, "# nanmap golden file", 20), "%s: no magic line", path);
	ck_assert_msg(strstr(want, "\n# nanmap " NM_VERSION "\n") &&
	                  strstr(want, "\n# command: nanmap golden update\n") &&
	                  strstr(want, "\n# MPFR "),
	              "%s: the provenance header lacks the version, MPFR or command line", path);
	const char *bw = body(want), *bg = body(got);
	if (strcmp(bw, bg) != 0) {
		const char *at = bw;
		size_t line = first_diff_line(bw, bg, &at);
		ck_abort_msg("%s: the fast backend differs from the file at body line %zu: '%.*s'"
		             " (if the kernels changed on purpose: nanmap golden update)",
		             path, line, (int)strcspn(at, "\n"), at);
	}
	/* the C API reads the same records */
	nm_golden *g;
	ck_assert_msg(nm_golden_open(path, &g, err, sizeof err) == NM_GOLDEN_OK, "%s", err);
	size_t n = 0;
	for (size_t i = 0; i < nm_golden_output_count(g); i++)
		n += nm_golden_output_at(g, i)->n;
	ck_assert_msg(nm_golden_case_count(g) == ncases && n == nrec,
	              "%s: %zu cases, %zu records read; %zu, %zu generated", path,
	              nm_golden_case_count(g), n, ncases, nrec);
	nm_golden_close(g);
	free(want);
	free(got);
	t_count("golden: cases the fast backend reproduces", ncases);
	t_count("golden: records the fast backend reproduces", nrec);
}
END_TEST

/* Every output of every file compares equal to itself; changing one element
 * by one ulp is caught at --ulp 0 and passes at --ulp 1. */
START_TEST(test_self_and_one_ulp)
{
	const char *kernel = nm_gold_kernel_at((size_t)_i);
	char path[256], err[512];
	nm_golden *g;
	size_t bumped = 0;

	snprintf(path, sizeof path, "golden/%s.golden", kernel);
	ck_assert_msg(nm_golden_open(path, &g, err, sizeof err) == NM_GOLDEN_OK, "%s", err);
	for (size_t i = 0; i < nm_golden_output_count(g); i++) {
		const nm_golden_output *o = nm_golden_output_at(g, i);
		uint32_t *a = malloc(o->n * sizeof *a);
		nm_golden_report r;
		nm_golden_opts opt = NM_GOLDEN_OPTS_DEFAULT;
		ck_assert(a != NULL);
		memcpy(a, o->expected, o->n * sizeof *a);
		CHECK(nm_golden_compare(g, o->target, a, o->n, &opt, &r, err, sizeof err) ==
		          NM_GOLDEN_OK,
		      "%s", err);
		CHECK(r.checked == o->n && r.mismatched == 0 && r.max_ulp == 0,
		      "%s: the expected outputs do not match themselves", o->target);
		nm_golden_report_free(&r);
		/* a normal value below the largest: its successor is one ulp away */
		size_t j = 0;
		while (j < o->n && strcmp(nm_golden_class(o, a[j]), "normal") != 0)
			j++;
		if (j < o->n) {
			a[j] ^= 1u; /* the neighbour toward or away from zero */
			CHECK(nm_golden_compare(g, o->target, a, o->n, &opt, &r, err, sizeof err) ==
			          NM_GOLDEN_OK,
			      "%s", err);
			CHECK(r.mismatched == 1 && r.mismatches[0].index == j &&
			          r.mismatches[0].ulp == 1 && r.max_ulp == 1,
			      "%s[%zu]: 0x%x -> 0x%x not caught as 1 ulp", o->target, j,
			      (unsigned)o->expected[j], (unsigned)a[j]);
			nm_golden_report_free(&r);
			opt.ulp = 1;
			CHECK(nm_golden_compare(g, o->target, a, o->n, &opt, &r, err, sizeof err) ==
			              NM_GOLDEN_OK &&
			          r.mismatched == 0 && r.max_ulp == 1,
			      "%s: a 1-ulp change fails --ulp 1", o->target);
			nm_golden_report_free(&r);
			bumped++;
		}
		free(a);
	}
	ck_assert_msg(bumped > 0, "%s: no output had a normal value to change", path);
	t_count("golden: 1-ulp changes caught", bumped);
	nm_golden_close(g);
}
END_TEST

/* A hand-made file with one element of each class, fp16. */
static const char small_text[] =
    "# nanmap golden file, format 2\n"
    "# a hand-made case\n"
    "case t.one kernel=k variant=v policy=storage=fp16 rows=1 cols=8 gen=uniform scale=2 "
    "seed=7\n"
    "status t.one nan\n"
    "ops t.one add 3 overflow=1 inexact=1\n"
    "first t.one add add 0 overflow|inexact\n"
    "output t.one/y fp16 8\n"
    "t.one/y 0 0x3c00 normal\n"
    "t.one/y 1 0x0000 0\n"
    "t.one/y 2 0x8000 -0\n"
    "t.one/y 3 0x7bff max\n"
    "t.one/y 4 0x7e00 nan\n"
    "t.one/y 5 0xfc00 -inf\n"
    "t.one/y 6 0x0001 sub\n"
    "t.one/y 7 0xfe00 -nan\n";

/* text with an "end ID FNV" line after each case (before the next case
 * line, or at the end), as nanmap golden update writes them: the FNV-1a of
 * the bytes from the case line to the end line. Static storage, one at a
 * time. */
static const char *seal(const char *text)
{
	static char out[8192];
	size_t k = 0, start = 0;
	char id[128] = "";
	const char *s = text;

	for (;;) {
		bool at_case = !strncmp(s, "case ", 5) || !*s;
		if (at_case && id[0]) {
			k += (size_t)snprintf(out + k, sizeof out - k, "end %s %016llx\n", id,
			                      (unsigned long long)nm_fnv1a(out + start, k - start));
			id[0] = '\0';
		}
		if (!*s)
			break;
		if (!strncmp(s, "case ", 5)) {
			start = k;
			sscanf(s + 5, "%127s", id);
		}
		const char *nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s) + 1 : strlen(s);
		ck_assert(k + l + 64 < sizeof out);
		memcpy(out + k, s, l);
		k += l;
		out[k] = '\0';
		s += l;
	}
	out[k] = '\0';
	return out;
}

#define small seal(small_text)

static const uint32_t small_want[8] = {0x3c00, 0x0000, 0x8000, 0x7bff,
                                       0x7e00, 0xfc00, 0x0001, 0xfe00};

static const struct {
	const char *what;
	size_t index;
	uint32_t actual;
	uint64_t ulp; /* the tolerance given */
	nm_golden_nan nan;
	bool mismatch;
	uint64_t dist;
} mutations[] = {
    {"1 ulp up", 0, 0x3c01, 0, NM_GOLDEN_NAN_IGNORE, true, 1},
    {"1 ulp up, --ulp 1", 0, 0x3c01, 1, NM_GOLDEN_NAN_IGNORE, false, 1},
    {"2 ulp down, --ulp 1", 0, 0x3bfe, 1, NM_GOLDEN_NAN_IGNORE, true, 2},
    {"+0 for -0", 2, 0x0000, 0, NM_GOLDEN_NAN_IGNORE, true, 0},
    {"-0 for +0, --ulp 1000", 1, 0x8000, 1000, NM_GOLDEN_NAN_IGNORE, true, 0},
    {"NaN for a finite value", 0, 0x7e00, 0, NM_GOLDEN_NAN_IGNORE, true, NM_GOLDEN_ULP_INF},
    {"NaN for a finite value, --ulp 60000", 0, 0x7e00, 60000, NM_GOLDEN_NAN_IGNORE, true,
     NM_GOLDEN_ULP_INF},
    {"inf for max finite (saturation)", 3, 0x7c00, 0, NM_GOLDEN_NAN_IGNORE, true,
     NM_GOLDEN_ULP_INF},
    {"inf for max finite, --ulp 5", 3, 0x7c00, 5, NM_GOLDEN_NAN_IGNORE, true, NM_GOLDEN_ULP_INF},
    {"max finite for -inf", 5, 0xfbff, 5, NM_GOLDEN_NAN_IGNORE, true, NM_GOLDEN_ULP_INF},
    {"finite for NaN", 4, 0x3c00, 0, NM_GOLDEN_NAN_IGNORE, true, NM_GOLDEN_ULP_INF},
    {"another NaN payload", 4, 0x7fff, 0, NM_GOLDEN_NAN_IGNORE, false, 0},
    {"another NaN payload, strict", 4, 0x7fff, 0, NM_GOLDEN_NAN_STRICT, false, 0},
    {"NaN of the other sign", 4, 0xfe00, 0, NM_GOLDEN_NAN_IGNORE, false, 0},
    {"NaN of the other sign, strict", 4, 0xfe00, 0, NM_GOLDEN_NAN_STRICT, true, 0},
    {"-NaN for -NaN, strict", 7, 0xffff, 0, NM_GOLDEN_NAN_STRICT, false, 0},
    {"subnormal to zero", 6, 0x0000, 0, NM_GOLDEN_NAN_IGNORE, true, 1},
    {"subnormal to -zero, --ulp 1", 6, 0x8000, 1, NM_GOLDEN_NAN_IGNORE, false, 1},
    {"across zero", 6, 0x8001, 1, NM_GOLDEN_NAN_IGNORE, true, 2},
};

START_TEST(test_mutations)
{
	char err[256];
	nm_golden *g;
	uint32_t a[8];
	nm_golden_report r;
	nm_golden_opts opt = {mutations[_i].ulp, mutations[_i].nan};

	ck_assert_msg(nm_golden_parse(small, strlen(small), "small", &g, err, sizeof err) ==
	                  NM_GOLDEN_OK,
	              "%s", err);
	memcpy(a, small_want, sizeof a);
	a[mutations[_i].index] = mutations[_i].actual;
	ck_assert_msg(nm_golden_compare(g, "t.one/y", a, 8, &opt, &r, err, sizeof err) ==
	                  NM_GOLDEN_OK,
	              "%s", err);
	ck_assert_msg(r.checked == 8 && r.mismatched == (mutations[_i].mismatch ? 1u : 0u),
	              "%s: %zu mismatches", mutations[_i].what, r.mismatched);
	if (mutations[_i].mismatch)
		ck_assert_msg(r.mismatches[0].index == mutations[_i].index &&
		                  r.mismatches[0].expected == small_want[mutations[_i].index] &&
		                  r.mismatches[0].actual == mutations[_i].actual &&
		                  r.mismatches[0].ulp == mutations[_i].dist,
		              "%s: mismatch at %zu, 0x%x vs 0x%x, ulp %llu", mutations[_i].what,
		              r.mismatches[0].index, (unsigned)r.mismatches[0].expected,
		              (unsigned)r.mismatches[0].actual,
		              (unsigned long long)r.mismatches[0].ulp);
	ck_assert_msg(r.max_ulp == mutations[_i].dist, "%s: max ulp %llu", mutations[_i].what,
	              (unsigned long long)r.max_ulp);
	nm_golden_report_free(&r);
	/* the bare case id finds its only output */
	ck_assert(nm_golden_find(g, "t.one") == nm_golden_find(g, "t.one/y"));
	ck_assert(nm_golden_find(g, "t.one/z") == NULL);
	nm_golden_close(g);
}
END_TEST

START_TEST(test_compare_errors)
{
	char err[256];
	nm_golden *g;
	nm_golden_report r;
	uint32_t a[9];

	ck_assert(nm_golden_parse(small, strlen(small), "small", &g, err, sizeof err) ==
	          NM_GOLDEN_OK);
	memcpy(a, small_want, sizeof small_want);
	ck_assert(nm_golden_compare(g, "t.one/y", a, 7, NULL, &r, err, sizeof err) ==
	          NM_GOLDEN_ERR_LENGTH);
	ck_assert_msg(strstr(err, "t.one/y") && strstr(err, "7"), "%s", err);
	ck_assert(nm_golden_compare(g, "t.one/y", a, 9, NULL, &r, err, sizeof err) ==
	          NM_GOLDEN_ERR_LENGTH);
	a[3] = 0x17bff;
	ck_assert(nm_golden_compare(g, "t.one/y", a, 8, NULL, &r, err, sizeof err) ==
	          NM_GOLDEN_ERR_DTYPE);
	ck_assert(nm_golden_compare(g, "t.two/y", a, 8, NULL, &r, err, sizeof err) ==
	          NM_GOLDEN_ERR_NOTFOUND);
	const nm_golden_case *c = nm_golden_case_at(g, 0);
	ck_assert(c && !strcmp(c->policy, "storage=fp16") && c->rows == 1 && c->cols == 8 &&
	          c->seed == 7 && !strcmp(c->status, "nan") && !strcmp(c->gen, "uniform"));
	nm_golden_close(g);
}
END_TEST

/* Damaged golden files: each refused with "name:line: reason". */
static const struct {
	const char *what, *text, *reason;
} damaged[] = {
    {"no magic", "# golden\n", "small:1: not a golden file"},
    {"format 99", "# nanmap golden file, format 99\n", "small:1: format 99, but this nanmap reads format 2"},
    {"format 1", "# nanmap golden file, format 1 (golden/README.md describes it)\n", "small:1: format 1, but"},
    {"no version", "# nanmap golden file\n", "small:1: no format version"},
    {"output one record short",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 "
     "gen=uniform scale=1 seed=1\noutput a/y fp16 2\na/y 0 0x0000 0\noutput a/z fp16 1\n",
     "small:5: output a/y has 1 of its 2 records"},
    {"output format against the policy",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=e4m3 rows=1 cols=2 "
     "gen=uniform scale=1 seed=1\noutput a/y fp16 1\na/y 0 0x0000 0\n",
     "small:3: output a/y in fp16, a format its case's policy storage=e4m3 has no place for"},
    {"no end line",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 "
     "gen=uniform scale=1 seed=1\noutput a/y fp16 1\na/y 0 0x0000 0\n",
     "small:4: case a has no end line (a truncated file?)"},
    {"bad checksum",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 "
     "gen=uniform scale=1 seed=1\noutput a/y fp16 1\na/y 0 0x0000 0\nend a 0123456789abcdef\n",
     "small:5: case a: its lines do not match its checksum"},
    {"status of another case",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 "
     "gen=uniform scale=1 seed=1\nstatus b ok\n",
     "small:3: status of 'b' inside case a"},
    {"empty", "", "small:1: an empty file"},
    {"record before output", "# nanmap golden file, format 2\nx/y 0 0x0 0\n", "small:2: a record outside"},
    {"index out of order",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 gen=uniform "
     "scale=1 seed=1\noutput a/y fp16 2\na/y 1 0x0000 0\n",
     "small:4: index '1' where 0"},
    {"wrong class",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 gen=uniform "
     "scale=1 seed=1\noutput a/y fp16 1\na/y 0 0x7c00 normal\n",
     "small:4: class 'normal' for 0x7c00, which is inf"},
    {"too wide",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=e4m3 rows=1 cols=2 gen=uniform "
     "scale=1 seed=1\noutput a/y e4m3 1\na/y 0 0x100 normal\n",
     "small:4: bad encoding '0x100'"},
    {"truncated output",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 gen=uniform "
     "scale=1 seed=1\noutput a/y fp16 2\na/y 0 0x0000 0\n",
     "has 1 of its 2 records"},
    {"unknown format",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 gen=uniform "
     "scale=1 seed=1\noutput a/y fp17 1\n",
     "small:3: unknown format 'fp17'"},
    {"missing key", "# nanmap golden file, format 2\ncase a kernel=k\n", "small:2: case a lacks a key"},
    {"huge length",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 gen=uniform "
     "scale=1 seed=1\noutput a/y fp16 99999999999\n",
     "small:3: bad length"},
    {"output of another case",
     "# nanmap golden file, format 2\ncase a kernel=k variant=v policy=storage=fp16 rows=1 cols=2 gen=uniform "
     "scale=1 seed=1\noutput b/y fp16 1\n",
     "small:3: output of 'b'"},
    {"no outputs", "# nanmap golden file, format 2\n# nothing\n", "no outputs"},
};

START_TEST(test_damaged)
{
	char err[256] = "";
	nm_golden *g = (nm_golden *)1;

	ck_assert_msg(nm_golden_parse(damaged[_i].text, strlen(damaged[_i].text), "small", &g, err,
	                              sizeof err) == NM_GOLDEN_ERR_FORMAT,
	              "%s: accepted", damaged[_i].what);
	ck_assert(g == NULL);
	ck_assert_msg(strstr(err, damaged[_i].reason) && !strchr(err, '\n'),
	              "%s: reason '%s', want '%s'", damaged[_i].what, err, damaged[_i].reason);
}
END_TEST

/* An edit of a real golden file that keeps bits and class consistent is a
 * damaged file (FORMAT, exit 2 in nanmap check), not a kernel mismatch. */
START_TEST(test_edit_caught)
{
	size_t len;
	char err[512], *text = slurp("golden/softmax_ce.golden", &len);
	nm_golden *g;

	ck_assert_msg(text != NULL, "golden/softmax_ce.golden: cannot read");
	ck_assert_msg(nm_golden_parse(text, len, "sm", &g, err, sizeof err) == NM_GOLDEN_OK, "%s",
	              err);
	nm_golden_close(g);
	char *rec = strstr(text, "/loss 0 0x");
	ck_assert(rec != NULL);
	char *hex = rec + strlen("/loss 0 0x");
	hex[3] = hex[3] == '0' ? '2' : '0'; /* a normal value stays normal */
	ck_assert(nm_golden_parse(text, len, "sm", &g, err, sizeof err) == NM_GOLDEN_ERR_FORMAT);
	ck_assert_msg(strstr(err, "its lines do not match its checksum") != NULL, "%s", err);
	free(text);
}
END_TEST

START_TEST(test_actual_readers)
{
	char err[256];
	nm_golden *g;
	uint32_t *v;
	size_t n;

	ck_assert(nm_golden_parse(small, strlen(small), "small", &g, err, sizeof err) ==
	          NM_GOLDEN_OK);
	const nm_golden_output *o = nm_golden_find(g, "t.one/y");
	/* raw: little-endian, 2 bytes each */
	unsigned char raw[16];
	for (int i = 0; i < 8; i++) {
		raw[2 * i] = (unsigned char)small_want[i];
		raw[2 * i + 1] = (unsigned char)(small_want[i] >> 8);
	}
	ck_assert(nm_golden_read_actual_mem(raw, 16, "a.bin", NM_GOLDEN_ACT_RAW, o, &v, &n, err,
	                                    sizeof err) == NM_GOLDEN_OK);
	ck_assert(n == 8 && !memcmp(v, small_want, sizeof small_want));
	free(v);
	ck_assert(nm_golden_read_actual_mem(raw, 15, "a.bin", NM_GOLDEN_ACT_RAW, o, &v, &n, err,
	                                    sizeof err) == NM_GOLDEN_ERR_LENGTH);
	ck_assert_msg(strstr(err, "a.bin: 15 bytes") != NULL, "%s", err);
	/* hex text */
	const char *hex = "# out\n3c00\n0x0000\n  0x8000\r\n\n7bff\n7e00\nfc00\n1\nFE00";
	ck_assert(nm_golden_read_actual_mem(hex, strlen(hex), "a.txt", NM_GOLDEN_ACT_HEX, o, &v, &n,
	                                    err, sizeof err) == NM_GOLDEN_OK);
	ck_assert(n == 8 && !memcmp(v, small_want, sizeof small_want));
	free(v);
	ck_assert(nm_golden_read_actual_mem("3c00\nzz\n", 8, "a.txt", NM_GOLDEN_ACT_HEX, o, &v, &n,
	                                    err, sizeof err) == NM_GOLDEN_ERR_FORMAT);
	ck_assert_msg(strstr(err, "a.txt:2:") != NULL, "%s", err);
	ck_assert(nm_golden_read_actual_mem("13c00\n", 6, "a.txt", NM_GOLDEN_ACT_HEX, o, &v, &n,
	                                    err, sizeof err) == NM_GOLDEN_ERR_DTYPE);
	/* .npy: <u2 and <f2 hold fp16 encodings, <f4 and |u1 do not */
	static const struct {
		nm_npy_dtype t;
		nm_golden_status want;
	} npys[] = {{NM_NPY_U2, NM_GOLDEN_OK},
	            {NM_NPY_F2, NM_GOLDEN_OK},
	            {NM_NPY_F4, NM_GOLDEN_ERR_DTYPE},
	            {NM_NPY_U1, NM_GOLDEN_ERR_DTYPE},
	            {NM_NPY_U4, NM_GOLDEN_ERR_DTYPE}};
	for (size_t k = 0; k < ARRAY_SIZE(npys); k++) {
		void *buf;
		size_t len, shape[2] = {8, 1};
		uint32_t r8[8];
		for (int i = 0; i < 8; i++)
			r8[i] = npys[k].t == NM_NPY_U1 ? small_want[i] & 0xff : small_want[i];
		ck_assert(nm_npy_encode(npys[k].t, 1, shape, NULL, r8, &buf, &len, "a.npy", err,
		                        sizeof err) == NM_NPY_OK);
		nm_golden_status st = nm_golden_read_actual_mem(
		    buf, len, "a.npy", NM_GOLDEN_ACT_NPY, o, &v, &n, err, sizeof err);
		ck_assert_msg(st == npys[k].want, "dtype %s: status %d (%s)",
		              nm_npy_dtype_name(npys[k].t), st, err);
		if (st == NM_GOLDEN_OK) {
			ck_assert(n == 8 && !memcmp(v, small_want, sizeof small_want));
			free(v);
		} else {
			ck_assert_msg(strstr(err, "a.npy: dtype") != NULL, "%s", err);
		}
		free(buf);
	}
	/* from a stream: no more than the output holds */
	ck_assert(nm_golden_read_actual("/dev/zero", o, &v, &n, err, sizeof err) ==
	          NM_GOLDEN_ERR_FORMAT);
	ck_assert_msg(strstr(err, "/dev/zero: larger than 16 bytes, the limit for t.one/y") != NULL,
	              "%s", err);
	nm_golden_close(g);
	ck_assert(nm_golden_open("/dev/zero", &g, err, sizeof err) == NM_GOLDEN_ERR_FORMAT);
	ck_assert_msg(strstr(err, "/dev/zero:1: not a golden file") != NULL, "%s", err);
}
END_TEST

/* The case table: ids are unique, every kernel has cases, the seeds follow
 * from the ids. */
START_TEST(test_case_table)
{
	size_t n = nm_gold_case_count();
	nm_gold_case a, b;

	ck_assert(n >= 300);
	for (size_t i = 0; i < n; i++) {
		nm_gold_case_at(i, &a);
		ck_assert_msg(a.kernel && a.id[0] && a.rows * a.cols > 0, "case %zu empty", i);
		for (size_t j = i + 1; j < n; j += 7) {
			nm_gold_case_at(j, &b);
			CHECK(strcmp(a.id, b.id) != 0 && a.seed != b.seed, "cases %zu and %zu: %s",
			      i, j, a.id);
		}
	}
}
END_TEST

Suite *suite_golden(void)
{
	Suite *s = suite_create("golden");
	TCase *tc = tcase_create("files");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_fast_reproduces, 0, (int)nm_gold_kernel_count());
	tcase_add_loop_test(tc, test_self_and_one_ulp, 0, (int)nm_gold_kernel_count());
	tcase_add_test(tc, test_case_table);
	suite_add_tcase(s, tc);
	TCase *tm = tcase_create("compare");
	tcase_add_loop_test(tm, test_mutations, 0, ARRAY_SIZE(mutations));
	tcase_add_test(tm, test_compare_errors);
	tcase_add_loop_test(tm, test_damaged, 0, ARRAY_SIZE(damaged));
	tcase_add_test(tm, test_actual_readers);
	tcase_add_test(tm, test_edit_caught);
	suite_add_tcase(s, tm);
	return s;
}
