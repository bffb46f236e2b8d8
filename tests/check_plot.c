/*
 * check_plot.c — the CSV reader, the [plot] checks and gnuplot rendering
 * (harness/nm_plot.c): two renders of the same CSV are the same bytes, a
 * missing gnuplot is one clear error, a bad [plot] key names its line.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib.h"
#include "nm_case.h"
#include "nm_plot.h"

static char tdir[] = "/tmp/nanmap-plot-XXXXXX";

static void put(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", tdir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static char *get(const char *name, size_t *len)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", tdir, name);
	FILE *f = fopen(p, "rb");
	ck_assert_msg(f != NULL, "%s was not written", p);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(fread(s, 1, (size_t)n, f), n);
	fclose(f);
	s[n] = 0;
	*len = (size_t)n;
	return s;
}

static void setup(void)
{
	strcpy(tdir, "/tmp/nanmap-plot-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tdir));
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(csv_quoting)
{
	put("a.csv", "case,policy,x\r\nc,\"storage=fp16,compute=fp32\",1\n"
	             "d,\"say \"\"hi\"\"\",inf\n");
	char p[256], err[256];
	snprintf(p, sizeof p, "%s/a.csv", tdir);
	nm_csv t;
	ck_assert_int_eq(nm_csv_read(p, &t, err, sizeof err), 0);
	ck_assert_uint_eq(t.ncols, 3);
	ck_assert_uint_eq(t.nrec, 3);
	ck_assert_int_eq(nm_csv_col(&t, "policy"), 1);
	ck_assert_int_eq(nm_csv_col(&t, "nope"), -1);
	ck_assert_str_eq(nm_csv_get(&t, 0, 1), "storage=fp16,compute=fp32");
	ck_assert_str_eq(nm_csv_get(&t, 1, 1), "say \"hi\"");
	ck_assert_str_eq(nm_csv_get(&t, 5, 1), "");
	ck_assert(isinf(nm_csv_num(nm_csv_get(&t, 1, 2))));
	ck_assert(isnan(nm_csv_num("1x")));
	nm_csv_free(&t);
	put("b.csv", "a,b\n1,2\n3\n");
	snprintf(p, sizeof p, "%s/b.csv", tdir);
	ck_assert_int_eq(nm_csv_read(p, &t, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "b.csv:3: 1 fields, the header has 2"), "got: %s", err);
	ck_assert_int_eq(nm_status_code("overflow"), 2);
	ck_assert_int_eq(nm_status_code("error"), -1);
}
END_TEST

static const char case1[] = "[case]\nkernel = accum\nvariants = sum:seq sum:pairwise\n"
                            "policy = storage=fp16\npolicy = storage=fp16,accum=fp32\n"
                            "[input]\ngen = ones\nrows = 1\ncols = 1\nseed = 1\n"
                            "[axis n]\nsets = cols\ngrid = list 1 100 10000\n"
                            "[plot]\ny = result.rel_err\nxlabel = N\n";

static const char csv1[] =
    "case,kernel,variant,policy,n,backend,status,first_op,first_step,first_index,"
    "result.max_ulp,result.rel_err,result.lost,result.maxabs\n"
    "p1,accum,sum:seq,storage=fp16,1,fast,ok,,,,0,0,0,1\n"
    "p1,accum,sum:seq,storage=fp16,100,fast,ok,,,,0,0,0,100\n"
    "p1,accum,sum:seq,storage=fp16,10000,fast,inf,,,,inf,inf,0,inf\n"
    "p1,accum,sum:seq,\"storage=fp16,accum=fp32\",1,fast,ok,,,,0,0,0,1\n"
    "p1,accum,sum:seq,\"storage=fp16,accum=fp32\",100,fast,ok,,,,0,1e-7,0,100\n"
    "p1,accum,sum:seq,\"storage=fp16,accum=fp32\",10000,fast,ok,,,,0,1e-3,0,10000\n"
    "p1,accum,sum:pairwise,storage=fp16,1,fast,ok,,,,0,0,0,1\n"
    "p1,accum,sum:pairwise,storage=fp16,100,fast,underflow,,,,0,0.5,0,100\n"
    "p1,accum,sum:pairwise,storage=fp16,10000,fast,nan,,,,nan,nan,0,nan\n"
    "p1,accum,sum:pairwise,\"storage=fp16,accum=fp32\",1,fast,ok,,,,0,0,0,1\n"
    "p1,accum,sum:pairwise,\"storage=fp16,accum=fp32\",100,fast,ok,,,,0,0,0,100\n"
    "p1,accum,sum:pairwise,\"storage=fp16,accum=fp32\",10000,fast,ok,,,,0,0,0,10000\n";

static void render(const char *casefile, const char *name, char **png, size_t *npng, char **svg,
                   size_t *nsvg)
{
	char p[256], err[512], f[64];
	nm_case c;
	snprintf(p, sizeof p, "%s/%s", tdir, casefile);
	ck_assert_msg(nm_case_load(p, &c, err, sizeof err) == 0, "%s", err);
	int rc = nm_plot_case(&c, tdir, tdir, err, sizeof err);
	nm_case_free(&c);
	ck_assert_msg(rc == 0, "nm_plot_case: %s", err);
	snprintf(f, sizeof f, "%s.png", name);
	*png = get(f, npng);
	snprintf(f, sizeof f, "%s.svg", name);
	*svg = get(f, nsvg);
}

/* Render twice; the bytes must not change (no dates, fixed size and font). */
static void twice(const char *casefile, const char *name)
{
	char *a, *b, *c, *d;
	size_t na, nb, nc, nd;
	render(casefile, name, &a, &na, &b, &nb);
	ck_assert_msg(na > 8 && memcmp(a, "\x89PNG\r\n\x1a\n", 8) == 0, "%s.png is not a PNG", name);
	ck_assert_msg(strstr(b, "<svg") != NULL, "%s.svg has no <svg", name);
	render(casefile, name, &c, &nc, &d, &nd);
	ck_assert_msg(na == nc && memcmp(a, c, na) == 0, "%s.png differs between renders", name);
	ck_assert_msg(nb == nd && memcmp(b, d, nb) == 0, "%s.svg differs between renders", name);
	free(a);
	free(b);
	free(c);
	free(d);
	/* no temporary file is left behind */
	char cmd[300];
	snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -q '^\\.'", tdir);
	ck_assert_msg(system(cmd) != 0, "a temporary file was left in %s", tdir);
}

START_TEST(lines_deterministic)
{
	put("p1.case", case1);
	put("p1.csv", csv1);
	twice("p1.case", "p1");
}
END_TEST

/* y = status on one axis: a strip chart, one row of cells per line */
START_TEST(strip_deterministic)
{
	char text[1024];
	snprintf(text, sizeof text, "%s", case1);
	char *y = strstr(text, "y = result.rel_err");
	ck_assert_ptr_nonnull(y);
	memcpy(y, "y = status        ", 18);
	put("p3.case", text);
	char csv[4096];
	snprintf(csv, sizeof csv, "%s", csv1);
	for (char *q = strstr(csv, "p1,"); q; q = strstr(q + 1, "p1,"))
		q[1] = '3';
	put("p3.csv", csv);
	twice("p3.case", "p3");
}
END_TEST

START_TEST(heatmap_deterministic)
{
	put("p2.case", "[case]\nkernel = layernorm\npolicy = storage=fp16\npolicy = storage=bf16\n"
	               "[input]\ngen = normal\nrows = 1\ncols = 8\nseed = 1\n"
	               "[axis eps]\nsets = param:eps\ngrid = list 1e-12 1e-6 1e-1\n"
	               "[axis sd]\nsets = scale\ngrid = list 1e-8 1\n[plot]\ntype = heatmap\n");
	const char *st[] = {"ok", "underflow", "inf", "nan", "ok", "overflow"};
	char csv[4096];
	int l = snprintf(csv, sizeof csv, "case,kernel,variant,policy,eps,sd,backend,status\n");
	const char *pol[] = {"storage=fp16", "storage=bf16"};
	const char *eps[] = {"1e-12", "9.9999999999999995e-07", "0.10000000000000001"};
	const char *sd[] = {"1e-08", "1"};
	for (int p = 0, k = 0; p < 2; p++)
		for (int e = 0; e < 3; e++)
			for (int s = 0; s < 2; s++, k++)
				l += snprintf(csv + l, sizeof csv - (size_t)l, "p2,layernorm,twopass,%s,%s,%s,fast,%s\n",
				              pol[p], eps[e], sd[s], st[k % 6]);
	put("p2.csv", csv);
	twice("p2.case", "p2");
}
END_TEST

START_TEST(no_gnuplot)
{
	put("p1.case", case1);
	put("p1.csv", csv1);
	char p[256], err[512];
	nm_case c;
	snprintf(p, sizeof p, "%s/p1.case", tdir);
	ck_assert_msg(nm_case_load(p, &c, err, sizeof err) == 0, "%s", err);
	setenv("NANMAP_GNUPLOT", "/nonexistent/gnuplot", 1);
	int rc = nm_plot_case(&c, tdir, tdir, err, sizeof err);
	unsetenv("NANMAP_GNUPLOT");
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(err, "gnuplot not found") && strstr(err, "gnuplot-nox"), "got: %s", err);
	/* a results file without the asked column: the error names it */
	put("p1.csv", "case,kernel,variant,policy,n,backend,status\np1,accum,sum:seq,storage=fp16,1,fast,ok\n");
	rc = nm_plot_case(&c, tdir, tdir, err, sizeof err);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(err, "no column 'result.rel_err'"), "got: %s", err);
	nm_case_free(&c);
}
END_TEST

START_TEST(bad_plot_keys)
{
	static const struct {
		const char *plot, *want;
	} rows[] = {
	    {"colour = red\n", ":15: key 'colour': unknown in [plot]"},
	    {"type = bars\n", ":15: key 'type': 'bars' is not lines or heatmap"},
	    {"type = heatmap\n", ":15: key 'type': a heat map needs two axes"},
	    {"logy = maybe\n", ":15: key 'logy': 'maybe' is not yes, no or auto"},
	    {"y = loss rel\n", ":15: key 'y': 'loss rel' is not a results column"},
	    {"x = m\n", ":15: key 'x': 'm' is not an axis of the case"},
	    {"series = grad\n", ":15: key 'series': 'grad' is not in the case's series list"},
	    {"backend = truth\n", ":15: key 'backend': 'truth' is not fast or exact"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		char text[1024], p[256], err[512];
		snprintf(text, sizeof text,
		         "[case]\nkernel = accum\nvariants = sum:seq\npolicy = storage=fp16\n"
		         "[input]\ngen = ones\nrows = 1\ncols = 1\nseed = 1\n"
		         "[axis n]\nsets = cols\ngrid = list 1 100\n\n[plot]\n%s",
		         rows[i].plot);
		put("bad.case", text);
		snprintf(p, sizeof p, "%s/bad.case", tdir);
		nm_case c;
		ck_assert_msg(nm_case_load(p, &c, err, sizeof err) == 0, "row %zu: %s", i, err);
		int rc = nm_plot_check(&c, err, sizeof err);
		nm_case_free(&c);
		ck_assert_msg(rc == -1 && strstr(err, rows[i].want), "row %zu: want '%s', got '%s'", i,
		              rows[i].want, rc ? err : "no error");
	}
}
END_TEST

Suite *suite_plot(void)
{
	Suite *s = suite_create("plot");
	TCase *tc = tcase_create("plot");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, csv_quoting);
	tcase_add_test(tc, lines_deterministic);
	tcase_add_test(tc, strip_deterministic);
	tcase_add_test(tc, heatmap_deterministic);
	tcase_add_test(tc, no_gnuplot);
	tcase_add_test(tc, bad_plot_keys);
	suite_add_tcase(s, tc);
	return s;
}
