/*
 * main.c — the nanmap command line: formats, round, op, sweep.
 *
 * Scripts depend on the CSV columns and on the error convention: every error
 * is one line on stderr naming the bad argument and exit status 2. To keep
 * that promise a command builds its whole output in memory and prints it
 * only when every input was good, so an error never leaves half a table on
 * stdout (the aligned table needs every row before it knows its widths
 * anyway).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/cli/nm_dot.h"
#include "emu/cli/nm_gemm.h"
#include "emu/cli/nm_goldcmd.h"
#include "emu/cli/nm_quant.h"
#include "emu/cli/nm_run.h"
#include "emu/cli/nm_train.h"
#include "emu/core/emu.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_npy.h"
#include "emu/io/nm_parse.h"
#include "emu/sweep/nm_plot.h"
#include "emu/sweep/nm_sweep.h"

#ifndef NM_VERSION
#define NM_VERSION "0.1.0"
#endif

#define NM_MAX_FORMATS 64
#define NM_MAX_FIELDS 8
#define NM_ERR_LEN 256

static const char nm_usage[] =
    "usage: nanmap COMMAND [OPTIONS] [ARGS]\n"
    "\n"
    "  nanmap formats [--csv|--md] [FMT...]\n"
    "      the built-in formats (or the given ones) and their limits\n"
    "  nanmap round [-f FMT[,FMT...]] [-r MODE] [--sat] [--ftz] [--seed N]\n"
    "               [--csv|--md] [--input FILE.npy]... [VALUE...]\n"
    "      round each VALUE (decimal, C99 hex float, inf, -inf, nan; '-' reads\n"
    "      one per line from stdin) once, exactly, to each format\n"
    "      default formats fp16,bf16,e4m3,e5m2\n"
    "  nanmap op OP [-f FMT] [-r MODE] [--sat] [--ftz] [--daz] [--seed N]\n"
    "            [--bits] [--csv|--md] (A [B [C]] | --input A.npy...)\n"
    "      OP: add sub mul div sqrt fma exp log exp2 rsqrt min max log1p\n"
    "      operands must be exact values of FMT (default fp16); with --bits\n"
    "      they are encodings in hex (0x3c00); '-' reads lines \"A [B [C]]\"\n"
    "  nanmap dot --model MODEL --in FMT --out FMT [--bits] A_FILE B_FILE [C_FILE]\n"
    "      Tensor Core dot products (docs/tensor-cores.md; nanmap dot --help)\n"
    "  nanmap gemm --recipe R --model blackwell|hopper --m M --n N --k K\n"
    "              [--gen DIST] [--seed S] [--csv|--json]\n"
    "      a block-scaled GEMM through a Tensor Core model: quantisation and\n"
    "      accumulation errors (docs/gemm.md; nanmap gemm --help)\n"
    "  nanmap run KERNEL --policy SPEC [--variant V] [--param NAME=VALUE]...\n"
    "             (--input FILE | --values LIST | --gen DIST --n N) [--rows R]\n"
    "             [--backend fast|exact|truth|all] [--no-truth] [--csv|--json]\n"
    "      a training kernel on the fast, exact-format and truth backends:\n"
    "      status, outputs, errors, flags (docs/run.md; nanmap run --help)\n"
    "  nanmap quant --recipe NAME|SPEC (--input FILE | --gen DIST --n N) [--role R]\n"
    "               [--colwise] [--tensor NAME]... [--per-block [K]] [--csv|--json]\n"
    "               [--out FILE [--encodings]] [--list]\n"
    "      an FP8/FP4 scaling recipe (nvfp4, mxfp8, ...) on a tensor or a whole\n"
    "      .safetensors checkpoint: saturation, SQNR, error, scales (docs/quant.md)\n"
    "  nanmap train [--policy P] [--role ROLE=FMT] [--steps N] [--spike S:F] ...\n"
    "      train a small GPT-2 end to end in a training policy; name the first\n"
    "      operation that overflowed or turned NaN (docs/train.md)\n"
    "  nanmap golden update|list|export ...\n"
    "      golden files: regenerate them, list their outputs, export a case's\n"
    "      input for your kernel (golden/README.md; nanmap golden --help)\n"
    "  nanmap check GOLDEN ACTUAL [--ulp N] [--nan-sign ignore|strict] [--csv]\n"
    "      compare a kernel's outputs with a golden output; exit 0 all match,\n"
    "      1 mismatches, 2 bad input (docs/golden.md; nanmap check --help)\n"
    "  nanmap sweep [--quick] [--fresh] [--quiet] [-j N] [--out DIR] [--plots DIR]\n"
    "               [--docs DIR] [--only NAME] [--max-memory SIZE] PATH...\n"
    "      run the case files (cases/README.md) at every point: results/<case>.csv,\n"
    "      thresholds, plots; resumes an interrupted run (docs/sweep.md)\n"
    "  nanmap plot CASE.case [--results DIR] [--plots DIR]\n"
    "      redraw one case's plots/<case>.png and .svg from its results CSV\n"
    "  nanmap help [COMMAND] | --help | --version\n"
    "      COMMAND --help: that command's own help\n"
    "\n"
    "FMT: a built-in name (nanmap formats) or a spec such as\n"
    "     p=5,emax=16,nan=fn,nosub or p=4,ebits=5,bias=15,unsigned,nan=fn\n"
    "     (docs/numerics.md); in a -f list a spec must start with p=\n"
    "     (or give -f once per format)\n"
    "MODE: rne (default) rtz up down rna sr; sr draws from (--seed, index)\n"
    "      where index counts the values (round) or operations (op) from 0\n"
    "An option that takes one value may be given once; --csv, --md, --json\n"
    "are output forms (give one).\n"
    "Errors: one line on stderr, exit status 2.\n";

static int nm_oom(void)
{
	return nm_fail("out of memory");
}

/* ---- output tables: CSV for scripts, aligned text or Markdown for people ---- */

enum nm_style { NM_STYLE_TEXT = 0, NM_STYLE_CSV, NM_STYLE_MD };

struct nm_table {
	size_t ncols;
	const char *const *head;
	char **cells; /* row-major, nrows * ncols strings we own */
	size_t nrows, cap;
};

static void nm_table_init(struct nm_table *t, const char *const *head, size_t ncols)
{
	memset(t, 0, sizeof(*t));
	t->head = head;
	t->ncols = ncols;
}

static void nm_table_free(struct nm_table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

/* Append a row of ncols strings (NULL is an empty cell). */
static int nm_table_add(struct nm_table *t, const char *const *row)
{
	size_t base = t->nrows * t->ncols;

	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **c = realloc(t->cells, cap * t->ncols * sizeof(*c));

		if (!c)
			return nm_oom();
		t->cells = c;
		t->cap = cap;
	}
	for (size_t j = 0; j < t->ncols; j++) {
		t->cells[base + j] = strdup(row[j] ? row[j] : "");
		if (!t->cells[base + j]) {
			while (j--)
				free(t->cells[base + j]);
			return nm_oom();
		}
	}
	t->nrows++;
	return 0;
}

static const char *nm_cell(const struct nm_table *t, size_t r, size_t c)
{
	return t->cells[r * t->ncols + c];
}

static void nm_put_csv_row(const struct nm_table *t, const char *const *row, nm_buf *b)
{
	for (size_t j = 0; j < t->ncols; j++) {
		if (j)
			nm_buf_putc(b, ',');
		nm_buf_csv(b, row[j]); /* custom format names contain commas */
	}
	nm_buf_putc(b, '\n');
}

static int nm_print_csv(const struct nm_table *t, FILE *out)
{
	nm_buf b = {0};

	nm_put_csv_row(t, t->head, &b);
	for (size_t r = 0; r < t->nrows; r++)
		nm_put_csv_row(t, (const char *const *)&t->cells[r * t->ncols], &b);
	if (b.oom) {
		nm_buf_free(&b);
		return nm_oom();
	}
	fwrite(b.s, 1, b.len, out);
	nm_buf_free(&b);
	return 0;
}

/* People's tables leave out columns that are empty in every row (op's b, c). */
static bool nm_column_used(const struct nm_table *t, size_t c)
{
	for (size_t r = 0; r < t->nrows; r++)
		if (nm_cell(t, r, c)[0])
			return true;
	return t->nrows == 0;
}

static size_t nm_column_width(const struct nm_table *t, size_t c)
{
	size_t w = strlen(t->head[c]);

	for (size_t r = 0; r < t->nrows; r++)
		if (strlen(nm_cell(t, r, c)) > w)
			w = strlen(nm_cell(t, r, c));
	return w;
}

static void nm_put_text_row(const struct nm_table *t, const char *const *row, const size_t *w,
                            FILE *out)
{
	const char *sep = "";
	size_t last = 0;

	for (size_t j = 0; j < t->ncols; j++)
		if (w[j])
			last = j;
	for (size_t j = 0; j < t->ncols; j++) {
		if (!w[j])
			continue;
		fputs(sep, out);
		sep = "  ";
		if (j == last)
			fputs(row[j], out);
		else
			fprintf(out, "%-*s", (int)w[j], row[j]);
	}
	fputc('\n', out);
}

static void nm_put_md_row(const struct nm_table *t, const char *const *row, const size_t *w,
                          FILE *out)
{
	for (size_t j = 0; j < t->ncols; j++)
		if (w[j])
			fprintf(out, "| %-*s ", (int)w[j], row[j]);
	fputs("|\n", out);
}

static int nm_print_aligned(const struct nm_table *t, bool md, FILE *out)
{
	size_t *w = calloc(t->ncols, sizeof(*w));

	if (!w)
		return nm_oom();
	for (size_t j = 0; j < t->ncols; j++)
		w[j] = nm_column_used(t, j) ? nm_column_width(t, j) : 0;
	if (md) {
		nm_put_md_row(t, t->head, w, out);
		for (size_t j = 0; j < t->ncols; j++) {
			if (!w[j])
				continue;
			fputs("| ", out);
			for (size_t k = 0; k < w[j]; k++)
				fputc('-', out);
			fputc(' ', out);
		}
		fputs("|\n", out);
	} else {
		nm_put_text_row(t, t->head, w, out);
	}
	for (size_t r = 0; r < t->nrows; r++) {
		const char *const *row = (const char *const *)&t->cells[r * t->ncols];

		if (md)
			nm_put_md_row(t, row, w, out);
		else
			nm_put_text_row(t, row, w, out);
	}
	free(w);
	return 0;
}

static int nm_flush(void)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		return nm_fail("cannot write the output: %s", strerror(errno));
	return 0;
}

static int nm_table_print(const struct nm_table *t, enum nm_style style)
{
	int rc = 0;

	if (style == NM_STYLE_CSV)
		rc = nm_print_csv(t, stdout);
	else
		rc = nm_print_aligned(t, style == NM_STYLE_MD, stdout);
	return rc ? rc : nm_flush();
}

/* ---- options ---- */

enum {
	NM_OPT_FORMAT = 1u << 0, /* -f */
	NM_OPT_MODE = 1u << 1,   /* -r, --sat, --ftz, --seed */
	NM_OPT_BITS = 1u << 2,   /* --bits */
	NM_OPT_DAZ = 1u << 3,    /* --daz */
	NM_OPT_LIST = 1u << 4,   /* -f takes a comma-separated list */
	NM_OPT_INPUT = 1u << 5,  /* --input FILE.npy */
};

struct nm_opts {
	const char *cmd;
	unsigned allowed;
	enum nm_style style;
	emu_env env;
	bool bits;
	emu_format fmts[NM_MAX_FORMATS];
	size_t nfmts;
	char **args; /* positionals, in order */
	size_t nargs;
	const char **inputs; /* --input files, in order */
	size_t ninputs;
};

static int nm_add_format(struct nm_opts *o, const char *spec)
{
	char err[NM_ERR_LEN];
	emu_status st;

	if (o->nfmts == NM_MAX_FORMATS)
		return nm_fail("too many formats (at most %d)", NM_MAX_FORMATS);
	st = emu_format_parse(spec, &o->fmts[o->nfmts], err, sizeof(err));
	if (st == EMU_ERR_UNKNOWN_FORMAT)
		return nm_fail("unknown format '%s' (try: nanmap formats)", spec);
	if (st != EMU_OK)
		return nm_fail("%s", err[0] ? err : "bad format spec");
	o->nfmts++;
	return 0;
}

/* -f for round: a list of formats; for op: exactly one (commas are the spec's). */
static int nm_opt_format(struct nm_opts *o, const char *arg)
{
	char *items[NM_MAX_FORMATS];
	size_t n;
	char *copy;
	int rc = 0;

	if (!(o->allowed & NM_OPT_LIST)) {
		if (o->nfmts)
			return nm_fail("%s takes one format, -f '%s' is a second one", o->cmd, arg);
		return nm_add_format(o, arg);
	}
	copy = strdup(arg);
	if (!copy)
		return nm_oom();
	switch (nm_split_formats(copy, items, NM_MAX_FORMATS, &n)) {
	case NM_OK:
		for (size_t i = 0; i < n && !rc; i++)
			rc = nm_add_format(o, items[i]);
		break;
	case NM_ERR_RANGE:
		rc = nm_fail("too many formats in '%s' (at most %d)", arg, NM_MAX_FORMATS);
		break;
	default:
		rc = nm_fail("bad format list '%s' (an empty item)", arg);
		break;
	}
	free(copy);
	return rc;
}

static int nm_opt_mode(struct nm_opts *o, const char *arg)
{
	emu_mode m = emu_mode_by_name(arg);

	if (m == EMU_NMODES)
		return nm_fail("unknown rounding mode '%s' (modes: rne rtz up down rna sr)", arg);
	o->env.mode = m;
	return 0;
}

static int nm_opt_seed(struct nm_opts *o, const char *arg)
{
	return nm_parse_count("--seed", arg, 0, UINT64_MAX, &o->env.seed);
}

/* A '-' followed by a digit, a point or a letter of inf/nan is a number. */
static bool nm_is_value(const char *a)
{
	return (a[1] >= '0' && a[1] <= '9') || a[1] == '.' || strchr("iInN", a[1]);
}

enum nm_optid { NM_O_FORMAT, NM_O_MODE, NM_O_SEED, NM_O_SAT, NM_O_FTZ, NM_O_DAZ, NM_O_BITS,
	        NM_O_CSV, NM_O_MD, NM_O_INPUT };

/* need: the NM_OPT_* bit a command must allow; the options parser's rows follow. */
static const struct {
	unsigned need;
	nm_opt opt;
} nm_optdefs[] = {
    {NM_OPT_FORMAT, {"-f", "--format", NM_O_FORMAT, NM_OPTF_VALUE | NM_OPTF_REPEAT, 0}},
    {NM_OPT_MODE, {"-r", "--mode", NM_O_MODE, NM_OPTF_VALUE, 0}},
    {NM_OPT_MODE, {NULL, "--seed", NM_O_SEED, NM_OPTF_VALUE, 0}},
    {NM_OPT_MODE, {NULL, "--sat", NM_O_SAT, 0, 0}},
    {NM_OPT_MODE, {NULL, "--ftz", NM_O_FTZ, 0, 0}},
    {NM_OPT_DAZ, {NULL, "--daz", NM_O_DAZ, 0, 0}},
    {NM_OPT_BITS, {NULL, "--bits", NM_O_BITS, 0, 2}}, /* --input holds values */
    {0, {NULL, "--csv", NM_O_CSV, 0, 1}},
    {0, {NULL, "--md", NM_O_MD, 0, 1}},
    {NM_OPT_INPUT, {NULL, "--input", NM_O_INPUT, NM_OPTF_VALUE | NM_OPTF_REPEAT, 2}},
};

static int nm_take_opt(void *ctx, const nm_opt *d, const char *val)
{
	struct nm_opts *o = ctx;

	switch ((enum nm_optid)d->id) {
	case NM_O_FORMAT:
		return nm_opt_format(o, val);
	case NM_O_MODE:
		return nm_opt_mode(o, val);
	case NM_O_SEED:
		return nm_opt_seed(o, val);
	case NM_O_SAT:
		o->env.sat = true;
		break;
	case NM_O_FTZ:
		o->env.ftz = true;
		break;
	case NM_O_DAZ:
		o->env.daz = true;
		break;
	case NM_O_BITS:
		o->bits = true;
		break;
	case NM_O_CSV:
		o->style = NM_STYLE_CSV;
		break;
	case NM_O_MD:
		o->style = NM_STYLE_MD;
		break;
	case NM_O_INPUT:
		o->inputs[o->ninputs++] = val; /* at most one per argument */
		break;
	}
	return 0;
}

static int nm_take_arg(void *ctx, const char *a)
{
	struct nm_opts *o = ctx;

	o->args[o->nargs++] = (char *)a;
	return 0;
}

static int nm_parse_opts(struct nm_opts *o, int argc, char **argv)
{
	nm_opt defs[sizeof(nm_optdefs) / sizeof(nm_optdefs[0])];
	size_t n = 0;

	o->args = calloc((size_t)argc + 1, sizeof(*o->args));
	o->inputs = calloc((size_t)argc + 1, sizeof(*o->inputs));
	if (!o->args || !o->inputs)
		return nm_oom();
	for (size_t i = 0; i < sizeof(nm_optdefs) / sizeof(nm_optdefs[0]); i++)
		if (!(nm_optdefs[i].need & ~o->allowed))
			defs[n++] = nm_optdefs[i].opt;
	return nm_opt_parse(&(nm_optparser){.cmd = o->cmd,
	                                    .defs = defs,
	                                    .ndefs = n,
	                                    .is_arg = nm_is_value,
	                                    .take = nm_take_opt,
	                                    .arg = nm_take_arg,
	                                    .ctx = o},
	                    argc, argv);
}

static void nm_opts_init(struct nm_opts *o, const char *cmd, unsigned allowed)
{
	memset(o, 0, sizeof(*o));
	o->cmd = cmd;
	o->allowed = allowed;
	o->env = EMU_ENV_DEFAULT;
}

static void nm_opts_free(struct nm_opts *o)
{
	free(o->args);
	free(o->inputs);
	o->args = NULL;
	o->inputs = NULL;
}

/* ---- stdin ---- */

/* Called for each non-blank line of stdin with its fields; lineno from 1. */
typedef int (*nm_line_fn)(void *ctx, char **fields, size_t n, size_t lineno);

/* what names a line's content for the error an input without any gets
 * ("a value", "an operation"): '-' with nothing to read is an error, as
 * the command without a VALUE is. */
/* stdin's bounds: a line (a value or an operation is a few dozen bytes) and
 * the lines (each a row of the table printed at the end). A stream without
 * end (round - < /dev/zero) stops at the first bound with one line, rather
 * than growing until the kernel kills it. */
#define NM_STDIN_LINE_MAX 4096
#define NM_STDIN_LINES_MAX (1u << 20)

/* One line of f into buf (at most max bytes before the NUL): its length,
 * 0 at the end of the input, or max + 1 when the line is longer. */
static size_t nm_get_line(FILE *f, char *buf, size_t max)
{
	size_t n = 0;
	int ch = 0;

	while (n <= max && (ch = getc(f)) != EOF) {
		if (n == max)
			return max + 1;
		buf[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	buf[n] = '\0';
	return n;
}

static int nm_read_lines(nm_line_fn fn, void *ctx, const char *what)
{
	char line[NM_STDIN_LINE_MAX + 1], *fields[NM_MAX_FIELDS];
	size_t n, lineno = 0, used = 0, len;
	int rc = 0;

	while (!rc && (len = nm_get_line(stdin, line, NM_STDIN_LINE_MAX)) > 0) {
		lineno++;
		if (len > NM_STDIN_LINE_MAX) {
			rc = nm_fail("stdin line %zu: longer than %d bytes (one %s a line)", lineno,
			             NM_STDIN_LINE_MAX, what);
			break;
		}
		if (lineno > NM_STDIN_LINES_MAX) {
			rc = nm_fail("stdin: more than %u lines (give at most %u %ss at a time)",
			             NM_STDIN_LINES_MAX, NM_STDIN_LINES_MAX, what);
			break;
		}
		switch (nm_split_fields(line, len, fields, NM_MAX_FIELDS, &n)) {
		case NM_OK:
			rc = n ? fn(ctx, fields, n, lineno) : 0;
			used += n > 0;
			break;
		case NM_ERR_RANGE:
			rc = nm_fail("stdin line %zu: too many fields", lineno);
			break;
		default:
			rc = nm_fail("stdin line %zu: a NUL byte in the input", lineno);
			break;
		}
	}
	if (!rc && ferror(stdin))
		rc = nm_fail("cannot read stdin: %s", strerror(errno));
	else if (!rc && used == 0 && lineno == 0)
		rc = nm_fail("'-': stdin is empty (no %s to read)", what);
	else if (!rc && used == 0)
		rc = nm_fail("'-': stdin holds no %s (%zu line%s, all blank)", what, lineno,
		             lineno == 1 ? "" : "s");
	return rc;
}

/* ---- formats ---- */

static const char *const nm_formats_head[] = {
    "name", "bits",       "precision",     "bias",    "emin",    "emax",
    "max",  "min_normal", "min_subnormal", "epsilon", "has_inf", "nan",
};

static const char *nm_nan_style_name(emu_nan_style s)
{
	switch (s) {
	case EMU_NAN_IEEE:
		return "ieee";
	case EMU_NAN_FN:
		return "fn";
	case EMU_NAN_FNUZ:
		return "fnuz";
	case EMU_NAN_NONE:
		return "none";
	}
	return "?";
}

static int nm_formats_row(struct nm_table *t, const emu_format *f)
{
	char num[6][24], lim[4][NM_NUM_LEN];
	const char *row[12];

	snprintf(num[0], sizeof(num[0]), "%d", f->bits);
	snprintf(num[1], sizeof(num[1]), "%d", f->p);
	snprintf(num[2], sizeof(num[2]), "%d", f->bias);
	snprintf(num[3], sizeof(num[3]), "%d", f->emin);
	snprintf(num[4], sizeof(num[4]), "%d", f->emax);
	row[0] = f->name;
	for (int i = 0; i < 5; i++)
		row[1 + i] = num[i];
	row[6] = nm_fmt_double(f->max, lim[0], sizeof(lim[0]));
	row[7] = nm_fmt_double(f->min_normal, lim[1], sizeof(lim[1]));
	row[8] = nm_fmt_double(f->min_subnormal, lim[2], sizeof(lim[2]));
	row[9] = nm_fmt_double(f->epsilon, lim[3], sizeof(lim[3]));
	row[10] = f->has_inf ? "yes" : "no";
	row[11] = nm_nan_style_name(f->nan);
	return nm_table_add(t, row);
}

static int nm_cmd_formats(struct nm_opts *o)
{
	struct nm_table t;
	int rc = 0;

	for (size_t i = 0; i < o->nargs && !rc; i++)
		rc = nm_add_format(o, o->args[i]);
	if (rc)
		return rc;
	nm_table_init(&t, nm_formats_head, 12);
	if (o->nargs) {
		for (size_t i = 0; i < o->nfmts && !rc; i++)
			rc = nm_formats_row(&t, &o->fmts[i]);
	} else {
		for (size_t i = 0; i < emu_format_count() && !rc; i++)
			rc = nm_formats_row(&t, emu_format_at(i));
	}
	if (!rc)
		rc = nm_table_print(&t, o->style);
	nm_table_free(&t);
	return rc;
}

/* ---- results ---- */

/* The bits, value, class and flags cells of one result. */
struct nm_cells {
	char bits[16], value[NM_NUM_LEN], flags[48];
	const char *cls;
};

static void nm_result_cells(const emu_format *f, emu_result r, struct nm_cells *c)
{
	nm_fmt_bits(f, r.bits, c->bits, sizeof(c->bits));
	nm_fmt_double(emu_decode(f, r.bits), c->value, sizeof(c->value));
	c->cls = emu_class_name(emu_classify(f, r.bits));
	emu_flags_str(r.flags, c->flags, sizeof(c->flags));
}

/* ---- round ---- */

static const char *const nm_round_head[] = {
    "format", "input", "bits", "value", "class", "flags",
};

struct nm_round_ctx {
	struct nm_opts *o;
	struct nm_table t;
	uint64_t index; /* SR's element index: counts the values */
};

/* One row per format for the value x, shown as text in the input column. */
static int nm_round_rows(struct nm_round_ctx *c, const nm_number *x, const char *text)
{
	struct nm_cells cells;
	emu_env env = c->o->env;
	int rc = 0;

	env.index = c->index++;
	for (size_t i = 0; i < c->o->nfmts && !rc; i++) {
		const emu_format *f = &c->o->fmts[i];
		const char *row[6];

		nm_result_cells(f, nm_round_number(f, x, &env), &cells);
		row[0] = f->name;
		row[1] = text;
		row[2] = cells.bits;
		row[3] = cells.value;
		row[4] = cells.cls;
		row[5] = cells.flags;
		rc = nm_table_add(&c->t, row);
	}
	return rc;
}

static int nm_round_one(struct nm_round_ctx *c, const char *text, size_t lineno)
{
	nm_number x;

	if (nm_parse_number(text, &x) != NM_OK) {
		if (lineno)
			return nm_fail("bad value '%s' (stdin line %zu)", text, lineno);
		return nm_fail("bad value '%s'", text);
	}
	return nm_round_rows(c, &x, text);
}

/* A --input file: float16/32/64 (exact in double), 1-D or 2-D. */
static int nm_read_npy(const char *path, nm_npy *a)
{
	char err[NM_ERR_LEN];

	err[0] = '\0';
	if (nm_npy_read(path, a, err, sizeof(err)) != NM_NPY_OK)
		return nm_fail("%s", err[0] ? err : "cannot read the --input file");
	if (a->dtype != NM_NPY_F2 && a->dtype != NM_NPY_F4 && a->dtype != NM_NPY_F8) {
		nm_npy_dtype t = a->dtype;

		nm_npy_free(a);
		return nm_fail("%s: dtype %s (--input takes float16, float32 or float64)", path,
		               nm_npy_dtype_name(t));
	}
	return 0;
}

/* Every element of a .npy file, in C order, as if given as a value: the
 * input column shows it as %.17g (which reads back as the same double). */
static int nm_round_file(struct nm_round_ctx *c, const char *path)
{
	nm_npy a = {0};
	nm_number x;
	char text[NM_NUM_LEN];
	int rc = nm_read_npy(path, &a);

	for (size_t i = 0; !rc && i < a.count; i++) {
		nm_number_from_double(a.values[i], &x);
		rc = nm_round_rows(c, &x, nm_fmt_double(a.values[i], text, sizeof(text)));
	}
	nm_npy_free(&a);
	return rc;
}

static int nm_round_line(void *ctx, char **fields, size_t n, size_t lineno)
{
	if (n != 1)
		return nm_fail("stdin line %zu: one value per line, got %zu fields", lineno, n);
	return nm_round_one(ctx, fields[0], lineno);
}

static int nm_default_formats(struct nm_opts *o, const char *list)
{
	return nm_opt_format(o, list);
}

static int nm_cmd_round(struct nm_opts *o)
{
	struct nm_round_ctx c = {.o = o};
	int rc = 0;

	if (o->nargs == 0 && o->ninputs == 0)
		return nm_fail("round needs a VALUE (or '-' to read stdin, or --input FILE.npy)");
	if (o->nfmts == 0)
		rc = nm_default_formats(o, "fp16,bf16,e4m3,e5m2");
	nm_table_init(&c.t, nm_round_head, 6);
	for (size_t i = 0; i < o->ninputs && !rc; i++)
		rc = nm_round_file(&c, o->inputs[i]);
	for (size_t i = 0; i < o->nargs && !rc; i++) {
		if (!strcmp(o->args[i], "-"))
			rc = nm_read_lines(nm_round_line, &c, "value");
		else
			rc = nm_round_one(&c, o->args[i], 0);
	}
	if (!rc)
		rc = nm_table_print(&c.t, o->style);
	nm_table_free(&c.t);
	return rc;
}

/* ---- op ---- */

static const char *const nm_op_head[] = {
    "format", "op", "a", "b", "c", "bits", "value", "class", "flags",
};

/* The operations the command offers (cvt needs a second format, neg/abs are trivial). */
static const emu_op nm_cli_ops[] = {
    EMU_OP_ADD, EMU_OP_SUB,  EMU_OP_MUL,   EMU_OP_DIV, EMU_OP_SQRT, EMU_OP_FMA,   EMU_OP_EXP,
    EMU_OP_LOG, EMU_OP_EXP2, EMU_OP_RSQRT, EMU_OP_MIN, EMU_OP_MAX,  EMU_OP_LOG1P,
};

static bool nm_op_offered(emu_op op)
{
	for (size_t i = 0; i < sizeof(nm_cli_ops) / sizeof(nm_cli_ops[0]); i++)
		if (nm_cli_ops[i] == op)
			return true;
	return false;
}

struct nm_op_ctx {
	struct nm_opts *o;
	const emu_format *f;
	emu_op op;
	int arity;
	struct nm_table t;
	uint64_t index; /* SR's element index: counts the operations */
};

/* "448 0x7e", or "nothing below" when the format has no value on that side. */
static void nm_describe_neighbour(const emu_format *f, const nm_number *x, emu_result r, int side,
                                  char *buf, size_t len)
{
	char v[NM_NUM_LEN], b[16];
	double d = emu_decode(f, r.bits);

	if (emu_is_nan(f, r.bits) || nm_number_cmp(x, d) != -side) {
		snprintf(buf, len, "nothing %s", side < 0 ? "below" : "above");
		return;
	}
	snprintf(buf, len, "%s %s", nm_fmt_double(d, v, sizeof(v)),
	         nm_fmt_bits(f, r.bits, b, sizeof(b)));
}

/* where: "" or " (FILE element I)", after the message. */
static int nm_not_representable(const emu_format *f, const char *text, const nm_number *x,
                                const char *where)
{
	emu_env env = EMU_ENV_DEFAULT;
	char lo[80], hi[80];

	if (x->kind == NM_NUM_NAN)
		return nm_fail("%s is not representable in %s (it has no NaN)%s", text, f->name,
		               where);
	if (x->kind == NM_NUM_INF)
		return nm_fail("%s is not representable in %s (it has no infinities)%s", text,
		               f->name, where);
	if (x->neg && x->man && !f->has_sign)
		return nm_fail("%s is not representable in %s (it has no negative values)%s", text,
		               f->name, where);
	env.mode = EMU_DOWN;
	nm_describe_neighbour(f, x, nm_round_number(f, x, &env), -1, lo, sizeof(lo));
	env.mode = EMU_UP;
	nm_describe_neighbour(f, x, nm_round_number(f, x, &env), 1, hi, sizeof(hi));
	return nm_fail("%s is not representable in %s (neighbours %s and %s)%s", text, f->name, lo,
	               hi, where);
}

/* One operand: an exact value of f, or with --bits an encoding. */
static int nm_operand(struct nm_op_ctx *c, const char *text, size_t lineno, emu_bits *out)
{
	const emu_format *f = c->f;
	char where[48] = "";
	nm_number x;

	if (lineno)
		snprintf(where, sizeof(where), " (stdin line %zu)", lineno);
	if (c->o->bits) {
		switch (nm_parse_bits(text, f, out)) {
		case NM_OK:
			return 0;
		case NM_ERR_RANGE:
			return nm_fail("encoding '%s' does not fit in %s's %d bits%s", text,
			               f->name, f->bits, where);
		default:
			return nm_fail("bad encoding '%s' (want hex such as 0x3c00)%s", text,
			               where);
		}
	}
	if (nm_parse_number(text, &x) != NM_OK)
		return nm_fail("bad value '%s'%s", text, where);
	if (nm_exact_bits(f, &x, out) != NM_OK)
		return nm_not_representable(f, text, &x, "");
	return 0;
}

static void nm_operand_cell(const struct nm_op_ctx *c, emu_bits b, char *buf, size_t len)
{
	if (c->o->bits)
		nm_fmt_bits(c->f, b, buf, len);
	else
		nm_fmt_double(emu_decode(c->f, b), buf, len);
}

/* One operation on the encodings args[0..arity). */
static int nm_op_bits(struct nm_op_ctx *c, const emu_bits *args)
{
	char echo[3][NM_NUM_LEN] = {"", "", ""};
	struct nm_cells cells;
	emu_env env = c->o->env;
	const char *row[9];

	for (int i = 0; i < c->arity; i++)
		nm_operand_cell(c, args[i], echo[i], sizeof(echo[i]));
	env.index = c->index++;
	nm_result_cells(c->f, emu_apply(c->op, c->f, NULL, args, &env), &cells);
	row[0] = c->f->name;
	row[1] = emu_op_name(c->op);
	for (int i = 0; i < 3; i++)
		row[2 + i] = echo[i];
	row[5] = cells.bits;
	row[6] = cells.value;
	row[7] = cells.cls;
	row[8] = cells.flags;
	return nm_table_add(&c->t, row);
}

static int nm_op_one(struct nm_op_ctx *c, char **operands, size_t lineno)
{
	emu_bits args[3] = {0, 0, 0};
	int rc = 0;

	for (int i = 0; i < c->arity && !rc; i++)
		rc = nm_operand(c, operands[i], lineno, &args[i]);
	return rc ? rc : nm_op_bits(c, args);
}

/*
 * --input A.npy [B.npy [C.npy]]: one file per operand, all of one shape;
 * operation i takes element i of each (C order). Every element must be an
 * exact value of the format, as on the command line.
 */
static int nm_op_files(struct nm_op_ctx *c)
{
	nm_npy a[3] = {{0}};
	emu_bits args[3] = {0, 0, 0};
	int rc = 0;

	if (c->o->ninputs != (size_t)c->arity)
		return nm_fail("%s takes %d operand%s, got %zu --input file%s", emu_op_name(c->op),
		               c->arity, c->arity == 1 ? "" : "s", c->o->ninputs,
		               c->o->ninputs == 1 ? "" : "s");
	for (int k = 0; k < c->arity && !rc; k++) {
		rc = nm_read_npy(c->o->inputs[k], &a[k]);
		if (!rc && k > 0 &&
		    (a[k].ndim != a[0].ndim || a[k].shape[0] != a[0].shape[0] ||
		     a[k].shape[1] != a[0].shape[1]))
			rc = nm_fail("%s: shape (%zu, %zu) differs from %s's (%zu, %zu)",
			             c->o->inputs[k], a[k].shape[0], a[k].shape[1], c->o->inputs[0],
			             a[0].shape[0], a[0].shape[1]);
	}
	for (size_t i = 0; !rc && i < a[0].count; i++) {
		for (int k = 0; k < c->arity && !rc; k++) {
			nm_number x;

			nm_number_from_double(a[k].values[i], &x);
			if (nm_exact_bits(c->f, &x, &args[k]) != NM_OK) {
				char text[NM_NUM_LEN], where[NM_ERR_LEN];

				snprintf(where, sizeof(where), " (%s element %zu)", c->o->inputs[k], i);
				rc = nm_not_representable(
				    c->f, nm_fmt_double(a[k].values[i], text, sizeof(text)), &x, where);
			}
		}
		if (!rc)
			rc = nm_op_bits(c, args);
	}
	for (int k = 0; k < 3; k++)
		nm_npy_free(&a[k]);
	return rc;
}

static int nm_op_line(void *ctx, char **fields, size_t n, size_t lineno)
{
	struct nm_op_ctx *c = ctx;

	if (n != (size_t)c->arity)
		return nm_fail("stdin line %zu: %s takes %d operand%s, got %zu", lineno,
		               emu_op_name(c->op), c->arity, c->arity == 1 ? "" : "s", n);
	return nm_op_one(c, fields, lineno);
}

static int nm_op_setup(struct nm_op_ctx *c, struct nm_opts *o)
{
	const char *name;

	if (o->nargs == 0)
		return nm_fail(
		    "op needs an OP (add sub mul div sqrt fma exp log exp2 rsqrt min max log1p)");
	name = o->args[0];
	c->o = o;
	c->op = emu_op_by_name(name);
	if (c->op == EMU_NOPS || !nm_op_offered(c->op))
		return nm_fail("unknown op '%s' (ops: add sub mul div sqrt fma exp log exp2 rsqrt "
		               "min max log1p)",
		               name);
	c->arity = emu_op_arity(c->op);
	if (o->nfmts == 0 && nm_add_format(o, "fp16"))
		return NM_EXIT_ERR;
	c->f = &o->fmts[0];
	return 0;
}

static int nm_cmd_op(struct nm_opts *o)
{
	struct nm_op_ctx c = {0};
	size_t n;
	int rc = nm_op_setup(&c, o);

	if (rc)
		return rc;
	n = o->nargs - 1;
	nm_table_init(&c.t, nm_op_head, 9);
	if (o->ninputs && n)
		rc = nm_fail("%s: operands come from --input or from the command line, not both",
		             emu_op_name(c.op));
	else if (o->ninputs)
		rc = nm_op_files(&c);
	else if (n == 1 && !strcmp(o->args[1], "-"))
		rc = nm_read_lines(nm_op_line, &c, "operation");
	else if (n != (size_t)c.arity)
		rc = nm_fail("%s takes %d operand%s, got %zu", emu_op_name(c.op), c.arity,
		             c.arity == 1 ? "" : "s", n);
	else
		rc = nm_op_one(&c, &o->args[1], 0);
	if (!rc)
		rc = nm_table_print(&c.t, o->style);
	nm_table_free(&c.t);
	return rc;
}

/* ---- dispatch ---- */

static int nm_help(void)
{
	fputs(nm_usage, stdout);
	return nm_flush();
}

static const char nm_formats_usage[] =
    "usage: nanmap formats [--csv|--md] [FMT...]\n"
    "\n"
    "The built-in formats (or the given ones: names or specs) and their limits:\n"
    "bits, precision, bias, emin, emax, max, min_normal, min_subnormal,\n"
    "epsilon, whether they have infinities, their NaN encoding.\n"
    "\n"
    "  --csv        CSV for scripts (the default is an aligned table)\n"
    "  --md         a Markdown table\n"
    "\n"
    "Example: nanmap formats --md fp16 e4m3 p=5,emax=16,nan=fn,nosub\n"
    "Errors: one line on stderr, exit status 2.\n";

static const char nm_round_usage[] =
    "usage: nanmap round [-f FMT[,FMT...]] [-r MODE] [--sat] [--ftz] [--seed N]\n"
    "                    [--csv|--md] [--input FILE.npy]... [VALUE...]\n"
    "\n"
    "Round each VALUE once, exactly (from its decimal text, not from the nearest\n"
    "double), to each format; report bits, value, class and flags.\n"
    "\n"
    "  VALUE        decimal, C99 hex float, inf, -inf, nan; '-' reads one per line\n"
    "               from stdin\n"
    "  -f FMT,...   the formats (repeatable; default fp16,bf16,e4m3,e5m2)\n"
    "  -r MODE      rne (default) rtz up down rna sr\n"
    "  --sat        overflow saturates to the largest finite value\n"
    "  --ftz        results below the normal range flush to zero\n"
    "  --seed N     sr's seed; draws are keyed by (seed, index of the value)\n"
    "  --input F    every element of a .npy file (float16/32/64, any shape, in\n"
    "               C order), as if given as values (repeatable; before VALUEs)\n"
    "  --csv, --md  CSV or Markdown instead of the aligned table\n"
    "\n"
    "Example: nanmap round -f fp16,e4m3 -r rtz 0.1 65520 -inf\n"
    "Errors: one line on stderr, exit status 2.\n";

static const char nm_op_usage[] =
    "usage: nanmap op OP [-f FMT] [-r MODE] [--sat] [--ftz] [--daz] [--seed N]\n"
    "                 [--bits] [--csv|--md] (A [B [C]] | - | --input A.npy...)\n"
    "\n"
    "One operation of FMT (default fp16), bit for bit, with its flags.\n"
    "\n"
    "  OP           add sub mul div sqrt fma exp log exp2 rsqrt min max log1p\n"
    "  A B C        exact values of FMT (an inexact operand is refused, with its\n"
    "               neighbours); with --bits encodings in hex (0x3c00); '-' reads\n"
    "               lines \"A [B [C]]\" from stdin\n"
    "  -f FMT       the format (one)\n"
    "  -r MODE      rne (default) rtz up down rna sr\n"
    "  --sat, --ftz, --daz  saturate on overflow, flush results, flush inputs\n"
    "  --seed N     sr's seed; draws are keyed by (seed, index of the operation)\n"
    "  --input F    one .npy per operand (float16/32/64), all of one shape: the\n"
    "               operation runs element by element; every element must be an\n"
    "               exact value of FMT\n"
    "  --csv, --md  CSV or Markdown instead of the aligned table\n"
    "\n"
    "Example: nanmap op fma -f bf16 -r rtz 1 0.00390625 -1\n"
    "Errors: one line on stderr, exit status 2.\n";

struct nm_cmd {
	const char *name;
	unsigned allowed;
	int (*run)(struct nm_opts *o);
	const char *usage;
};

static const struct nm_cmd nm_cmds[] = {
    {"formats", 0, nm_cmd_formats, nm_formats_usage},
    {"round", NM_OPT_FORMAT | NM_OPT_MODE | NM_OPT_LIST | NM_OPT_INPUT, nm_cmd_round,
     nm_round_usage},
    {"op", NM_OPT_FORMAT | NM_OPT_MODE | NM_OPT_BITS | NM_OPT_DAZ | NM_OPT_INPUT, nm_cmd_op,
     nm_op_usage},
};

static int nm_run(const struct nm_cmd *cmd, int argc, char **argv)
{
	struct nm_opts o;
	int rc;

	if (nm_wants_help(argc, argv))
		return nm_print_help(cmd->usage);
	nm_opts_init(&o, cmd->name, cmd->allowed);
	rc = nm_parse_opts(&o, argc, argv);
	if (!rc)
		rc = cmd->run(&o);
	nm_opts_free(&o);
	return rc;
}

/* The commands with their own main (argv[0] is the command's name). */
static const struct {
	const char *name;
	int (*main)(int argc, char **argv);
} nm_mains[] = {
    {"run", nm_run_main},     {"quant", nm_quant_main}, {"sweep", nm_sweep_main},
    {"dot", nm_dot_main},     {"gemm", nm_gemm_main},   {"golden", nm_golden_main},
    {"check", nm_check_main}, {"plot", nm_plot_main},   {"train", nm_train_main},
};

static int nm_dispatch(const char *cmd, int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(nm_mains) / sizeof(nm_mains[0]); i++)
		if (!strcmp(cmd, nm_mains[i].name))
			return nm_mains[i].main(argc, argv);
	for (size_t i = 0; i < sizeof(nm_cmds) / sizeof(nm_cmds[0]); i++)
		if (!strcmp(cmd, nm_cmds[i].name))
			return nm_run(&nm_cmds[i], argc - 1, argv + 1);
	return nm_fail("unknown command '%s' (try: nanmap --help)", cmd);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	nm_heap_keep();

	if (!cmd)
		return nm_fail("missing command (try: nanmap --help)");
	if (!strcmp(cmd, "help") && argc == 3 &&
	    (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
		return nm_help(); /* help's own help is the overview */
	if (!strcmp(cmd, "help") && argc == 3) { /* nanmap help CMD: CMD --help */
		char *args[] = {argv[2], "--help", NULL};
		return nm_dispatch(argv[2], 2, args);
	}
	if (!strcmp(cmd, "help") && argc > 3)
		return nm_fail("help takes one COMMAND, '%s' is a second one", argv[3]);
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))
		return nm_help();
	if (!strcmp(cmd, "--version")) {
		puts("nanmap " NM_VERSION);
		return nm_flush();
	}
	return nm_dispatch(cmd, argc - 1, argv + 1);
}
