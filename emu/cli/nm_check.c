/*
 * nm_check.c — `nanmap check GOLDEN ACTUAL`: a kernel's outputs against one
 * output of a golden case (nm_golden.h does the reading and comparing).
 *
 * GOLDEN is FILE:CASE/OUTPUT, FILE:CASE (a case with one output), FILE (a
 * file with one output), or CASE/OUTPUT alone, looked up in
 * golden/KERNEL.golden. Exit status: 0 every element within tolerance, 1
 * some are not, 2 bad input; the mismatches, then one summary line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/core/emu.h"
#include "emu/cli/nm_goldcmd.h"
#include "emu/io/nm_golden.h"
#include "emu/io/nm_parse.h"

#define NC_ERR_LEN 512

struct nc_opts {
	const char *golden, *actual;
	uint64_t ulp;
	nm_golden_nan nan_sign;
	bool csv;
};

enum { NC_O_ULP, NC_O_NAN, NC_O_CSV };

static const nm_opt nc_optdefs[] = {
    {NULL, "--ulp", NC_O_ULP, NM_OPTF_VALUE, 0},
    {NULL, "--nan-sign", NC_O_NAN, NM_OPTF_VALUE, 0},
    {NULL, "--csv", NC_O_CSV, 0, 0},
};

static int nc_take(void *ctx, const nm_opt *d, const char *v)
{
	struct nc_opts *o = ctx;

	if (d->id == NC_O_CSV) {
		o->csv = true;
	} else if (d->id == NC_O_ULP) {
		return nm_parse_count("--ulp", v, 0, UINT64_MAX, &o->ulp);
	} else if (!strcmp(v, "ignore")) {
		o->nan_sign = NM_GOLDEN_NAN_IGNORE;
	} else if (!strcmp(v, "strict")) {
		o->nan_sign = NM_GOLDEN_NAN_STRICT;
	} else {
		return nm_fail("bad --nan-sign '%s' (ignore or strict)", v);
	}
	return 0;
}

static int nc_arg(void *ctx, const char *a)
{
	struct nc_opts *o = ctx;

	if (!o->golden)
		o->golden = a;
	else if (!o->actual)
		o->actual = a;
	else
		return nm_fail("check takes GOLDEN and ACTUAL, '%s' is a third argument", a);
	return 0;
}

static int nc_parse(int argc, char **argv, struct nc_opts *o)
{
	int rc;

	memset(o, 0, sizeof *o);
	rc = nm_opt_parse(&(nm_optparser){.cmd = "check",
	                                  .defs = nc_optdefs,
	                                  .ndefs = sizeof(nc_optdefs) / sizeof(nc_optdefs[0]),
	                                  .take = nc_take,
	                                  .arg = nc_arg,
	                                  .ctx = o},
	                  argc - 1, argv + 1);
	if (!rc && (!o->golden || !o->actual))
		rc = nm_fail("check needs GOLDEN and ACTUAL (nanmap check --help)");
	return rc;
}

/* Split GOLDEN into the file and the target (NULL: the file's only output). */
static int nc_resolve(const char *golden, char *path, size_t plen, const char **target)
{
	const char *colon;

	*target = NULL;
	if (!golden)
		return nm_fail("check needs GOLDEN");
	colon = strrchr(golden, ':');
	if (colon && colon != golden && colon[1] && !strchr(colon + 1, ':')) {
		if ((size_t)(colon - golden) >= plen)
			return nm_fail("golden file name too long: %s", golden);
		memcpy(path, golden, (size_t)(colon - golden));
		path[colon - golden] = '\0';
		*target = colon + 1;
		return 0;
	}
	const char *slash = strchr(golden, '/');
	if (access(golden, F_OK) == 0 || !slash || strchr(slash + 1, '/') || !strchr(golden, '.') ||
	    strstr(golden, ".golden")) {
		snprintf(path, plen, "%s", golden);
		return 0;
	}
	/* CASE/OUTPUT: golden/KERNEL.golden, KERNEL = the id up to its first '.';
	 * golden/ the checkout's, or the installed one */
	size_t n = strcspn(golden, ".");
	snprintf(path, plen, "%s/%.*s.golden", nm_golden_default_dir(), (int)n, golden);
	*target = golden;
	return 0;
}

/* What a reader should see of an encoding: its value, or nan, inf, -0. */
static const char *nc_show(const emu_format *f, uint32_t b, char *buf, size_t len)
{
	switch (emu_classify(f, b)) {
	case EMU_CLASS_NAN:
	case EMU_CLASS_INF:
	case EMU_CLASS_ZERO: {
		nm_golden_output o = {NULL, NULL, 0, f->name, f->bits, 0, NULL};
		snprintf(buf, len, "%s", nm_golden_class(&o, b));
		return buf;
	}
	default:
		snprintf(buf, len, "%.9g", emu_decode(f, b));
		return buf;
	}
}

static const char *nc_ulp(uint64_t d, char *buf, size_t len)
{
	if (d == NM_GOLDEN_ULP_INF)
		snprintf(buf, len, "inf");
	else
		snprintf(buf, len, "%" PRIu64, d);
	return buf;
}

static const char nc_usage[] =
    "usage: nanmap check GOLDEN ACTUAL [--ulp N] [--nan-sign ignore|strict] [--csv]\n"
    "\n"
    "Compare a kernel's outputs (ACTUAL) with one golden output, element by element.\n"
    "GOLDEN: FILE:CASE/OUTPUT, FILE:CASE (one output), FILE (one output), or\n"
    "        CASE/OUTPUT alone (read from golden/KERNEL.golden, or where make install\n"
    "        put it, PREFIX/share/nanmap/golden); nanmap golden list names them.\n"
    "ACTUAL: .npy (|u1 <u2 <u4 encodings; <f2 for fp16, <f4 for fp32 outputs),\n"
    "        *.txt or *.hex (one hex encoding per line), else raw little-endian\n"
    "        encodings (1, 2 or 4 bytes each, by the format's width).\n"
    "  --ulp N        finite values may differ by up to N ulps (default 0); an inf,\n"
    "                 a NaN or a zero of the wrong sign never matches\n"
    "  --nan-sign M   ignore (default): any NaN matches any NaN; strict: the signs\n"
    "                 must agree too (payloads are never compared)\n"
    "  --csv          mismatches as CSV on stdout, the summary on stderr\n"
    "Prints each mismatch and 'checked N, mismatched M, max ulp U'.\n"
    "Exit status: 0 all within tolerance, 1 not, 2 bad input. See docs/golden.md.\n"
    "Example: nanmap check softmax_ce.naive.fp16-fp16.safe/grad tests/data/grad.txt\n";

int nm_check_main(int argc, char **argv)
{
	struct nc_opts o;
	char path[4096], err[NC_ERR_LEN], e1[48], e2[48], u[24], h1[NM_NUM_LEN], h2[NM_NUM_LEN];
	const char *target;
	nm_golden *g = NULL;
	const nm_golden_output *out;
	uint32_t *act = NULL;
	size_t n;
	nm_golden_report rep;
	int rc;

	if (nm_wants_help(argc - 1, argv + 1))
		return nm_print_help(nc_usage);
	rc = nc_parse(argc, argv, &o);
	if (!rc)
		rc = nc_resolve(o.golden, path, sizeof path, &target);
	if (rc)
		return rc;
	if (nm_golden_open(path, &g, err, sizeof err) != NM_GOLDEN_OK)
		return nm_fail("%s", err);
	if (target)
		out = nm_golden_find(g, target);
	else
		out = nm_golden_output_count(g) == 1 ? nm_golden_output_at(g, 0) : NULL;
	if (!out) {
		rc = target ? nm_fail("%s: no output '%s' (CASE/OUTPUT; nanmap golden list names "
		                      "them)",
		                      path, target)
		            : nm_fail("%s has %zu outputs: name one as %s:CASE/OUTPUT", path,
		                      nm_golden_output_count(g), path);
		nm_golden_close(g);
		return rc;
	}
	if (nm_golden_read_actual(o.actual, out, &act, &n, err, sizeof err) != NM_GOLDEN_OK) {
		nm_golden_close(g);
		return nm_fail("%s", err);
	}
	if (n != out->n) {
		rc = nm_fail("%s: %zu elements, but %s has %zu (wrong length or truncated)",
		             o.actual, n, out->target, out->n);
		free(act);
		nm_golden_close(g);
		return rc;
	}
	nm_golden_opts opts = {o.ulp, o.nan_sign};
	if (nm_golden_compare(g, out->target, act, n, &opts, &rep, err, sizeof err) !=
	    NM_GOLDEN_OK) {
		free(act);
		nm_golden_close(g);
		return nm_fail("%s", err);
	}
	const emu_format *f = emu_format_by_name(out->format);
	if (o.csv)
		printf("index,expected,actual,ulp,expected_value,actual_value\n");
	for (size_t i = 0; i < rep.mismatched; i++) {
		const nm_golden_mismatch *m = &rep.mismatches[i];
		nm_fmt_bits(f, m->expected, h1, sizeof h1);
		nm_fmt_bits(f, m->actual, h2, sizeof h2);
		nc_show(f, m->expected, e1, sizeof e1);
		nc_show(f, m->actual, e2, sizeof e2);
		nc_ulp(m->ulp, u, sizeof u);
		if (o.csv)
			printf("%zu,%s,%s,%s,%s,%s\n", m->index, h1, h2, u, e1, e2);
		else
			printf("%s[%zu]: expected %s (%s), actual %s (%s), ulp %s\n", out->name,
			       m->index, h1, e1, h2, e2, u);
	}
	fprintf(o.csv ? stderr : stdout, "checked %zu, mismatched %zu, max ulp %s\n", rep.checked,
	        rep.mismatched, nc_ulp(rep.max_ulp, u, sizeof u));
	rc = rep.mismatched ? 1 : 0;
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = nm_fail("cannot write the output: %s", strerror(errno));
	nm_golden_report_free(&rep);
	free(act);
	nm_golden_close(g);
	return rc;
}
