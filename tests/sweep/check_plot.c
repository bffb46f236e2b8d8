/*
 * check_plot.c — the CSV reader, the [plot] checks and gnuplot rendering
 * (emu/sweep/nm_plot.c): two renders of the same CSV are the same bytes, a
 * missing gnuplot is one clear error, a bad [plot] key names its line.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib.h"
#include "emu/sweep/nm_case.h"
#include "emu/sweep/nm_plot.h"

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
    "case,kernel,variant,policy,n,backend,status,verdict,flushed,first_op,first_step,first_index,"
    "result.max_ulp,result.rel_err,result.lost,result.maxabs,result.arith_max_ulp,"
    "result.arith_rel_err\n"
    "p1,accum,sum:seq,storage=fp16,1,fast,ok,accurate,0,,,,0,0,0,1,0,0\n"
    "p1,accum,sum:seq,storage=fp16,100,fast,ok,accurate,0,,,,0,0,0,100,0,0\n"
    "p1,accum,sum:seq,storage=fp16,10000,fast,inf,inaccurate,0,,,,inf,inf,0,inf,0,0\n"
    "p1,accum,sum:seq,\"storage=fp16,accum=fp32\",1,fast,ok,accurate,0,,,,0,0,0,1,0,0\n"
    "p1,accum,sum:seq,\"storage=fp16,accum=fp32\",100,fast,ok,accurate,0,,,,0,1e-7,0,100,0,0\n"
    "p1,accum,sum:seq,\"storage=fp16,accum=fp32\",10000,fast,ok,accurate,0,,,,0,1e-3,0,10000,0,0\n"
    "p1,accum,sum:pairwise,storage=fp16,1,fast,ok,accurate,0,,,,0,0,0,1,0,0\n"
    "p1,accum,sum:pairwise,storage=fp16,100,fast,underflow,inaccurate,0,,,,0,0.5,0,100,0,0\n"
    "p1,accum,sum:pairwise,storage=fp16,10000,fast,nan,-,0,,,,nan,nan,0,nan,0,0\n"
    "p1,accum,sum:pairwise,\"storage=fp16,accum=fp32\",1,fast,ok,accurate,0,,,,0,0,0,1,0,0\n"
    "p1,accum,sum:pairwise,\"storage=fp16,accum=fp32\",100,fast,ok,accurate,0,,,,0,0,0,100,0,0\n"
    "p1,accum,sum:pairwise,\"storage=fp16,accum=fp32\",10000,fast,ok,accurate,0,,,,0,0,0,10000,0,0\n";

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
	/* the y axis says what the column means, not "result.rel_err", and the
	 * accuracy output's relative error shows the tolerance */
	size_t n;
	char *svg = get("p1.svg", &n);
	ck_assert_msg(strstr(svg, "result: relative error ||v - truth|| / ||truth|| (end to end)"),
	              "no worded y label");
	ck_assert_msg(strstr(svg, "tolerance 1 %"), "no tolerance line");
	free(svg);
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
	static const char metrics4[] = "0,1e-3,0,1,0,1e-3,0,1e-3,0,1,0,1e-3,"
	                               "0,1e-3,0,1,0,1e-3,0,1e-3,0,1,0,1e-3";
	char csv[8192];
	int l = snprintf(csv, sizeof csv, "case,kernel,variant,policy,eps,sd,backend,status,"
	                                  "verdict,flushed,first_op,first_step,first_index");
	static const char *const outs[] = {"y", "dx", "rstd", "var"};
	for (int o = 0; o < 4; o++)
		l += snprintf(csv + l, sizeof csv - (size_t)l,
		              ",%s.max_ulp,%s.rel_err,%s.lost,%s.maxabs,%s.arith_max_ulp,%s.arith_rel_err",
		              outs[o], outs[o], outs[o], outs[o], outs[o], outs[o]);
	l += snprintf(csv + l, sizeof csv - (size_t)l, "\n");
	const char *pol[] = {"storage=fp16", "storage=bf16"};
	const char *eps[] = {"1e-12", "9.9999999999999995e-07", "0.10000000000000001"};
	const char *sd[] = {"1e-08", "1"};
	for (int p = 0, k = 0; p < 2; p++)
		for (int e = 0; e < 3; e++)
			for (int s = 0; s < 2; s++, k++)
				l += snprintf(csv + l, sizeof csv - (size_t)l,
				              "p2,layernorm,twopass,%s,%s,%s,fast,%s,%s,%s,,,,%s\n", pol[p], eps[e],
				              sd[s], st[k % 6], k % 4 ? "accurate" : "inaccurate",
				              k % 4 == 1 ? "0.001" : "0.5", metrics4);
	put("p2.csv", csv);
	twice("p2.case", "p2");
	/* the grades (docs/sweep.md, Plots): an ok cell whose error is above the
	 * tolerance is yellow, not green; an underflow that flushed at most the
	 * tolerance's fraction is pale blue, a larger one the usual blue */
	size_t nsvg;
	char *svg = get("p2.svg", &nsvg);
	ck_assert_msg(strstr(svg, "rgb(255, 217,  47)"), "no yellow (ok, inaccurate) cell");
	ck_assert_msg(strstr(svg, "rgb( 77, 175,  74)"), "no green (ok, accurate) cell");
	ck_assert_msg(strstr(svg, "rgb(214, 233, 245)"), "no pale blue (slight underflow) cell");
	ck_assert_msg(strstr(svg, "rgb(128, 177, 211)"), "no blue (underflow) cell");
	ck_assert_msg(!strstr(svg, "href='#gpPt1'"), "a boundary cross without boundaries");
	free(svg);
	/* a boundary bisected between two grid points is drawn as a cross in its
	 * panel, on its line; one of another policy or case is not */
	nm_thresh_row b[3];
	memset(b, 0, sizeof b);
	for (int i = 0; i < 3; i++) {
		snprintf(b[i].case_name, sizeof b[i].case_name, "%s", i == 2 ? "other" : "p2");
		snprintf(b[i].variant, sizeof b[i].variant, "twopass");
		snprintf(b[i].policy, sizeof b[i].policy, "%s", i ? "storage=bf16" : "storage=fp16");
		snprintf(b[i].axis, sizeof b[i].axis, "eps@sd=1e-08");
		b[i].last_ok = 3.0306e-10;
		b[i].first_bad = 3.0307e-10;
	}
	char p[256], err[512];
	nm_case c;
	snprintf(p, sizeof p, "%s/p2.case", tdir);
	ck_assert_msg(nm_case_load(p, &c, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(nm_plot_case_rows(&c, tdir, tdir, b, 3, NULL, err, sizeof err) == 0, "%s", err);
	nm_case_free(&c);
	svg = get("p2.svg", &nsvg);
	ck_assert_msg(strstr(svg, "href='#gpPt1'"), "no boundary cross");
	free(svg);
}
END_TEST

/* A heat map coloured by a metric on a log colour scale, one panel holding
 * only zeros: it has no positive value to autoscale its colour axis from
 * (gnuplot then takes [-10:10] and refuses a log scale), so every panel
 * shares the positive values' range. */
START_TEST(heatmap_log_colour_zero_panel)
{
	put("p4.case", "[case]\nkernel = layernorm\npolicy = storage=fp16\npolicy = storage=bf16\n"
	               "[input]\ngen = normal\nrows = 1\ncols = 8\nseed = 1\n"
	               "[axis eps]\nsets = param:eps\ngrid = list 1e-12 1e-6 1e-1\n"
	               "[axis sd]\nsets = scale\ngrid = list 1e-8 1\n"
	               "[plot]\ntype = heatmap\ny = y.rel_err\n");
	char csv[8192];
	int l = snprintf(csv, sizeof csv, "case,kernel,variant,policy,eps,sd,backend,status,"
	                                  "verdict,flushed,first_op,first_step,first_index");
	static const char *const outs[] = {"y", "dx", "rstd", "var"};
	for (int o = 0; o < 4; o++)
		l += snprintf(csv + l, sizeof csv - (size_t)l,
		              ",%s.max_ulp,%s.rel_err,%s.lost,%s.maxabs,%s.arith_max_ulp,%s.arith_rel_err",
		              outs[o], outs[o], outs[o], outs[o], outs[o], outs[o]);
	l += snprintf(csv + l, sizeof csv - (size_t)l, "\n");
	const char *pol[] = {"storage=fp16", "storage=bf16"};
	const char *eps[] = {"1e-12", "9.9999999999999995e-07", "0.10000000000000001"};
	const char *sd[] = {"1e-08", "1"};
	const char *rel[] = {"1e-5", "1e-4", "1e-3", "1e-2", "1e-1", "0.5"};
	for (int p = 0, k = 0; p < 2; p++)
		for (int e = 0; e < 3; e++)
			for (int s = 0; s < 2; s++, k++) {
				const char *r = p == 0 ? rel[k % 6] : "0"; /* bf16: all zero */
				l += snprintf(csv + l, sizeof csv - (size_t)l,
				              "p4,layernorm,twopass,%s,%s,%s,fast,ok,accurate,0,,,", pol[p], eps[e], sd[s]);
				for (int o = 0; o < 4; o++)
					l += snprintf(csv + l, sizeof csv - (size_t)l, ",0,%s,0,1,0,%s",
					              o == 0 ? r : "0", o == 0 ? r : "0");
				l += snprintf(csv + l, sizeof csv - (size_t)l, "\n");
			}
	put("p4.csv", csv);
	twice("p4.case", "p4");
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
	/* a results file without the kernel's columns: the error names the header */
	put("p1.csv", "case,kernel,variant,policy,n,backend,status\np1,accum,sum:seq,storage=fp16,1,fast,ok\n");
	rc = nm_plot_case(&c, tdir, tdir, err, sizeof err);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(err, "p1.csv:1: 7 columns, case p1's results have 18"), "got: %s", err);
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

/* A damaged results CSV is one error naming file:line, and nothing is drawn. */
START_TEST(damaged_csv)
{
	static const struct {
		const char *from, *to; /* the first occurrence of from becomes to */
		const char *want;
	} rows[] = {
	    {"result.rel_err,", "result.relerr,",
	     "p1.csv:1: column 14 is 'result.relerr', case p1's results have 'result.rel_err'"},
	    {",100,fast,ok,", ",100,fast,okay,",
	     "p1.csv:3: status 'okay' is not ok, underflow, overflow, inf or nan"},
	    {"p1,accum,sum:seq,storage=fp16,100,", "p9,accum,sum:seq,storage=fp16,100,",
	     "p1.csv:3: case 'p9', expected 'p1'"},
	    {"p1,accum,sum:seq,storage=fp16,100,", "p1,softmax_ce,sum:seq,storage=fp16,100,",
	     "p1.csv:3: kernel 'softmax_ce', expected 'accum'"},
	    {"sum:seq,storage=fp16,100,", "sum:seq,storage=fp16,1000,",
	     "p1.csv:3: n '1000', expected '100'"},
	    {"sum:seq,storage=fp16,100,", "sum:pairwise,storage=fp16,100,",
	     "p1.csv:3: variant 'sum:pairwise', expected 'sum:seq'"},
	    {"100,fast,ok,accurate,0,,,,0,0,0,100,", "100,exact,ok,accurate,0,,,,0,0,0,100,",
	     "p1.csv:3: backend 'exact', expected fast"},
	    {"100,fast,ok,accurate,0,,,,0,0,0,100,", "100,fast,ok,accurate,0,,,,0,0x,0,100,",
	     "p1.csv:3: result.rel_err '0x' is not a number"},
	    {"100,fast,ok,accurate,0,,,,0,0,0,100,", "100,fast,ok,accurate,0,,,,0,0,-1,100,",
	     "p1.csv:3: result.lost '-1' is not a whole number"},
	    {"100,fast,ok,accurate,0,,,,0,0,0,100,", "100,fast,ok,accurate,0,,,x,0,0,0,100,",
	     "p1.csv:3: first_index 'x' is not a whole number"},
	    /* a field's bytes are shown escaped: the error stays one line */
	    {",100,fast,ok,", ",100,fast,\"o\nk\xff\",",
	     "p1.csv:3: status 'o\\x0ak\\xff' is not ok, underflow, overflow, inf or nan"},
	};
	char p[256], err[768];
	nm_case c;
	put("p1.case", case1);
	snprintf(p, sizeof p, "%s/p1.case", tdir);
	ck_assert_msg(nm_case_load(p, &c, err, sizeof err) == 0, "%s", err);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		char csv[4096];
		const char *at = strstr(csv1, rows[i].from);
		ck_assert_msg(at != NULL, "row %zu: '%s' not in the CSV", i, rows[i].from);
		snprintf(csv, sizeof csv, "%.*s%s%s", (int)(at - csv1), csv1, rows[i].to,
		         at + strlen(rows[i].from));
		put("p1.csv", csv);
		int rc = nm_plot_case(&c, tdir, tdir, err, sizeof err);
		ck_assert_msg(rc == -1 && strstr(err, rows[i].want) && !strchr(err, '\n'),
		              "row %zu: want '%s', got '%s'", i, rows[i].want, rc ? err : "no error");
		ck_assert_msg(access(p, F_OK) == 0 && system("true") == 0, "row %zu", i);
	}
	/* cut to 4 rows (the header and 3) */
	char csv[4096];
	const char *cut = csv1;
	for (int k = 0; k < 4; k++)
		cut = strchr(cut, '\n') + 1;
	snprintf(csv, sizeof csv, "%.*s", (int)(cut - csv1), csv1);
	put("p1.csv", csv);
	ck_assert_int_eq(nm_plot_case(&c, tdir, tdir, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "p1.csv:4: 3 rows, case p1's grid gives 12"), "got: %s", err);
	nm_case_free(&c);
	/* nothing was drawn */
	char q[256];
	snprintf(q, sizeof q, "%s/p1.png", tdir);
	ck_assert_msg(access(q, F_OK) != 0, "a plot was drawn from a damaged CSV");
}
END_TEST

/* The plot's y and the case's series are checked against the kernel's
 * outputs before any point runs. */
START_TEST(columns_before_running)
{
	static const struct {
		const char *extra, *plot, *want; /* want NULL: accepted */
	} rows[] = {
	    {"", "y = result.rel_err\n", NULL},
	    {"", "y = result.arith_max_ulp\n", NULL},
	    {"", "y = status\n", NULL},
	    {"", "y = frob\n", ":15: key 'y': 'frob' is not a results column"},
	    {"", "y = result.frob\n", ":15: key 'y': 'result.frob' is not a results column"},
	    {"", "y = grad.rel_err\n", "for an output OUT of accum: result)"},
	    {"series = result\n", "series = result\n", NULL},
	    {"series = frob\n", "series = frob\n",
	     "key 'series': 'frob' is not an output of kernel accum (result)"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		char text[1024], p[256], err[768];
		snprintf(text, sizeof text,
		         "[case]\nkernel = accum\nvariants = sum:seq\npolicy = storage=fp16\n%s"
		         "[input]\ngen = ones\nrows = 1\ncols = 1\nseed = 1\n"
		         "[axis n]\nsets = cols\ngrid = list 1 100\n%s[plot]\n%s",
		         rows[i].extra, *rows[i].extra ? "" : "\n", rows[i].plot);
		put("col.case", text);
		snprintf(p, sizeof p, "%s/col.case", tdir);
		nm_case c;
		ck_assert_msg(nm_case_load(p, &c, err, sizeof err) == 0, "row %zu: %s", i, err);
		int rc = nm_plot_check_columns(&c, err, sizeof err);
		nm_case_free(&c);
		if (!rows[i].want)
			ck_assert_msg(rc == 0, "row %zu: %s", i, err);
		else
			ck_assert_msg(rc == -1 && strstr(err, rows[i].want), "row %zu: want '%s', got '%s'",
			              i, rows[i].want, rc ? err : "no error");
	}
}
END_TEST

/* gnuplot exits 0 after a failed write: a fake one that runs the real one,
 * then damages what it wrote. The plot is an error naming the file, and the
 * earlier plot stays. */
START_TEST(broken_output)
{
	static const struct {
		const char *damage, *want;
	} rows[] = {
	    {"truncate -s 0 \"$d\"/.p1.svg.*", "p1.svg: gnuplot's output is not whole: empty"},
	    {"truncate -s 36864 \"$d\"/.p1.png.*", "p1.png: gnuplot's output is not whole: cut short"},
	    {"f=$(ls \"$d\"/.p1.png.*); s=$(stat -c %s \"$f\"); truncate -s $((s - 12)) \"$f\"",
	     "p1.png: gnuplot's output is not whole: cut short (no IEND chunk)"},
	    {"printf X | dd of=\"$(ls \"$d\"/.p1.png.*)\" bs=1 seek=200 conv=notrunc 2>/dev/null",
	     "p1.png: gnuplot's output is not whole: a chunk's CRC does not match"},
	    {"printf 'not a png' >\"$(ls \"$d\"/.p1.png.*)\"", "no PNG signature"},
	    {"truncate -s -20 \"$d\"/.p1.svg.*", "p1.svg: gnuplot's output is not whole: cut short (no closing </svg>)"},
	};
	char p[256], err[768], fake[300], *png0, *png1, *svg0;
	size_t n0, n1, ns;
	nm_case c;
	put("p1.case", case1);
	put("p1.csv", csv1);
	render("p1.case", "p1", &png0, &n0, &svg0, &ns);
	snprintf(p, sizeof p, "%s/p1.case", tdir);
	ck_assert_msg(nm_case_load(p, &c, err, sizeof err) == 0, "%s", err);
	snprintf(fake, sizeof fake, "%s/fake-gnuplot", tdir);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		char text[1024];
		snprintf(text, sizeof text, "#!/bin/sh\ngnuplot \"$1\" || exit\nd=$(dirname \"$1\")\n%s\n",
		         rows[i].damage);
		put("fake-gnuplot", text);
		ck_assert_int_eq(chmod(fake, 0755), 0);
		setenv("NANMAP_GNUPLOT", fake, 1);
		int rc = nm_plot_case(&c, tdir, tdir, err, sizeof err);
		unsetenv("NANMAP_GNUPLOT");
		ck_assert_msg(rc == -1 && strstr(err, rows[i].want), "row %zu: want '%s', got '%s'", i,
		              rows[i].want, rc ? err : "no error");
		png1 = get("p1.png", &n1);
		ck_assert_msg(n1 == n0 && memcmp(png0, png1, n0) == 0, "row %zu: p1.png changed", i);
		free(png1);
	}
	nm_case_free(&c);
	free(png0);
	free(svg0);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -q '^\\.'", tdir);
	ck_assert_msg(system(cmd) != 0, "a temporary file was left in %s", tdir);
}
END_TEST

/* Temporaries of a run that is gone are removed; a live run's, and names
 * nanmap does not make, stay. */
START_TEST(stale_temporaries)
{
	static const struct {
		const char *name;
		bool stays;
	} rows[] = {
	    {".p1.dat.999999999.aB3xYz", false}, {".p1.gp.999999998.000000", false},
	    {".p1.png.999999997.zzzzzz", false}, {".p1.svg.999999997.Q1w2E3", false},
	    {".p1.log.999999996.abcdef", false}, {".p1.dat.1.aB3xYz", true}, /* pid 1 lives */
	    {".p1.dat.999999999.aB3xY", true},   {".p1.dat.999999999.aB3xYz.x", true},
	    {".p1.csv.999999999.aB3xYz", true},  {".p2.dat.999999999.aB3xYz", true},
	    {".p1.dat.9x9.aB3xYz", true},        {".p1.dat.aB3xYz", true},
	    {"p1.dat.999999999.aB3xYz", true},   {".p1.x.dat.999999999.aB3xYz", true},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		put(rows[i].name, "x");
	ck_assert_uint_eq(nm_plot_clean_stale(tdir, "p1"), 5);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		char p[256];
		snprintf(p, sizeof p, "%s/%s", tdir, rows[i].name);
		ck_assert_msg((access(p, F_OK) == 0) == rows[i].stays, "%s: %s", rows[i].name,
		              rows[i].stays ? "removed" : "left");
	}
	/* a plot of the case cleans them too */
	put(".p1.gp.999999995.abcdef", "x");
	put("p1.case", case1);
	put("p1.csv", csv1);
	char *a, *b;
	size_t na, nb;
	render("p1.case", "p1", &a, &na, &b, &nb);
	free(a);
	free(b);
	char p[256];
	snprintf(p, sizeof p, "%s/.p1.gp.999999995.abcdef", tdir);
	ck_assert_msg(access(p, F_OK) != 0, "a stale temporary stayed after a plot");
	char err[300];
	ck_assert_int_eq(nm_dir_writable(tdir, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/none", tdir);
	ck_assert_int_eq(nm_dir_writable(p, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "/none: not writable: No such file"), "got: %s", err);
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
	tcase_add_test(tc, heatmap_log_colour_zero_panel);
	tcase_add_test(tc, no_gnuplot);
	tcase_add_test(tc, bad_plot_keys);
	tcase_add_test(tc, damaged_csv);
	tcase_add_test(tc, columns_before_running);
	tcase_add_test(tc, broken_output);
	tcase_add_test(tc, stale_temporaries);
	suite_add_tcase(s, tc);
	return s;
}
