/*
 * nm_plot.c — plots/<case>.png and .svg from the sweep's CSV, by gnuplot.
 *
 * Why the data are reshaped here and not in gnuplot: inf, NaN and zero
 * cannot sit on a log axis, and those are exactly the points a stability
 * plot is about. So C clamps them to the plot's edges (non-finite to the
 * top, zero to the bottom) and the point's symbol says the status; gnuplot
 * only draws. Heat map cells are drawn as boxes whose edges C computes
 * (midpoints, in log space for a log axis), so any grid works, lists too.
 *
 * Determinism: the pngcairo and svg terminals write no date or host; the
 * size and the font are fixed; the data are printed with %.17g. A rerun on
 * the same CSV rewrites the same bytes (tests/sweep/check_plot.c compares them).
 * Script and data go through temporary files next to the outputs, and each
 * output is written to a temporary name and renamed into place.
 *
 * Why everything is checked around gnuplot and not trusted: the CSV may be
 * cut or edited (it is checked against what the case implies, as the other
 * readers check theirs), and gnuplot exits 0 when its output could not be
 * written, so the PNG's chunks and the SVG's end are read back before the
 * rename. The temporaries carry the pid, so a later run can tell a killed
 * run's leftovers from a live run's files.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "emu/io/nm_file.h"
#include "emu/io/nm_parse.h"
#include "emu/sweep/nm_plot.h"
#include "emu/sweep/nm_point.h"

static void perr_msg(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The message in err, and -1 as the value of the expression itself: the
 * analyzer does not follow variadic calls, and took a failed read for a
 * good one. */
#define perr(...) (perr_msg(__VA_ARGS__), -1)
static void perr_msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): false positive */
	va_end(ap);
}

/* ---- CSV (RFC 4180) ---- */

/* The most bytes a results CSV or a plot gnuplot wrote may have (the largest
 * sweep's CSV is a few MB): a stream such as /dev/zero is refused there. */
#define PL_MAX_BYTES ((size_t)1 << 28)

void nm_csv_free(nm_csv *t)
{
	if (t->cell && t->nrec && t->ncols)
		free(t->cell[0]); /* the file's buffer: every cell lies in it */
	free(t->cell);
	free(t->line);
	memset(t, 0, sizeof *t);
}

int nm_csv_read(const char *path, nm_csv *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	size_t len;
	errno = 0;
	char *s = nm_file_read_max(path, PL_MAX_BYTES, &len);
	if (!s && errno == EFBIG)
		return perr(err, errlen, "%s: larger than %zu bytes, the limit for a results CSV", path,
		            PL_MAX_BYTES);
	if (!s)
		return perr(err, errlen, "%s: %s", path, strerror(errno ? errno : ENOMEM));
	size_t cap = 0, n = 0, line = 1, fields = 0, lcap = 0, rec_line = 1;
	/* the cells are unquoted in place, each NUL-terminated where its
	 * separator (or closing quote) was: a cell never grows, so the write
	 * position w never passes the read position i (and the buffer has a NUL
	 * after the last byte for the last cell's) */
	int rc = 0;
	size_t i = 0, w = 0;
	while (rc == 0 && i < len) {
		/* one field */
		char *fbuf = s + w;
		size_t fl = 0;
		if (fields == 0)
			rec_line = line;
		if (s[i] == '"') {
			for (i++;; i++) {
				if (i >= len) {
					rc = perr(err, errlen, "%s:%zu: unterminated quoted field", path, line);
					break;
				}
				if (s[i] == '"') {
					if (i + 1 < len && s[i + 1] == '"')
						fbuf[fl++] = s[i++];
					else {
						i++;
						break;
					}
				} else {
					if (s[i] == '\n')
						line++;
					fbuf[fl++] = s[i];
				}
			}
		} else {
			while (i < len && s[i] != ',' && s[i] != '\n' && s[i] != '\r')
				fbuf[fl++] = s[i++];
		}
		if (rc)
			break;
		char sep = i < len ? s[i] : 0; /* the NUL may take its place */
		fbuf[fl] = 0;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			char **c = realloc(t->cell, cap * sizeof *c);
			if (!c) {
				rc = perr(err, errlen, "%s: out of memory", path);
				break;
			}
			t->cell = c;
		}
		t->cell[n] = fbuf;
		w += fl + 1;
		n++;
		fields++;
		if (sep == ',') {
			i++;
			continue;
		}
		/* end of record */
		if (sep == '\r')
			i++;
		if (i < len && (sep == '\r' ? s[i] : sep) == '\n')
			i++;
		if (t->nrec == lcap) {
			lcap = lcap ? 2 * lcap : 256;
			size_t *l = realloc(t->line, lcap * sizeof *l);
			if (!l) {
				rc = perr(err, errlen, "%s: out of memory", path);
				break;
			}
			t->line = l;
		}
		t->line[t->nrec] = rec_line;
		if (t->nrec == 0)
			t->ncols = fields;
		else if (fields != t->ncols)
			rc = perr(err, errlen, "%s:%zu: %zu fields, the header has %zu", path, line,
			          fields, t->ncols);
		t->nrec++;
		fields = 0;
		line++;
	}
	if (rc == 0 && fields)
		rc = perr(err, errlen, "%s:%zu: incomplete record", path, line);
	if (rc == 0 && t->nrec == 0)
		rc = perr(err, errlen, "%s: empty file (no header)", path);
	if (rc || !n)
		free(s);
	if (rc) {
		free(t->cell);
		free(t->line);
		memset(t, 0, sizeof *t);
	}
	return rc;
}

int nm_csv_col(const nm_csv *t, const char *name)
{
	for (size_t j = 0; j < t->ncols; j++)
		if (strcmp(t->cell[j], name) == 0)
			return (int)j;
	return -1;
}

const char *nm_csv_get(const nm_csv *t, size_t r, int col)
{
	if (col < 0 || (size_t)col >= t->ncols || r + 1 >= t->nrec)
		return "";
	return t->cell[(r + 1) * t->ncols + (size_t)col];
}

double nm_csv_num(const char *s)
{
	if (!s || !*s)
		return NAN;
	char *end;
	double v = strtod(s, &end);
	return *end ? NAN : v;
}

static const char *const st_names[] = {"ok", "underflow", "overflow", "inf", "nan"};

int nm_status_code(const char *s)
{
	for (int i = 0; i < 5; i++)
		if (strcmp(s, st_names[i]) == 0)
			return i;
	return -1;
}

/* ---- the [plot] section ---- */

static const char *const plot_keys[] = {"type", "y", "x", "logx", "logy", "series",
                                        "title", "xlabel", "ylabel", "backend", NULL};

static const char *kv_get(const nm_case *c, const char *key)
{
	for (size_t i = 0; i < c->nkv; i++)
		if (strcmp(c->kv[i].section, "plot") == 0 && strcmp(c->kv[i].key, key) == 0)
			return c->kv[i].value;
	return NULL;
}

static bool is_ident(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(*s == '_' || *s == '.' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
}

static int check_one(const nm_case *c, const nm_case_kv *kv, char *err, size_t errlen)
{
	const char *v = kv->value ? kv->value : "";
	bool known = false;
	for (int k = 0; plot_keys[k]; k++)
		known |= strcmp(kv->key, plot_keys[k]) == 0;
	if (!known)
		return perr(err, errlen,
		            "%s:%d: key '%s': unknown in [plot] (type y x logx logy series title "
		            "xlabel ylabel backend)",
		            c->path, kv->line, kv->key);
	if (strcmp(kv->key, "type") == 0 && strcmp(v, "lines") != 0 && strcmp(v, "heatmap") != 0)
		return perr(err, errlen, "%s:%d: key 'type': '%s' is not lines or heatmap", c->path,
		            kv->line, v);
	if (strcmp(kv->key, "type") == 0 && strcmp(v, "heatmap") == 0 && c->naxes != 2)
		return perr(err, errlen, "%s:%d: key 'type': a heat map needs two axes", c->path,
		            kv->line);
	if ((strcmp(kv->key, "logx") == 0 || strcmp(kv->key, "logy") == 0) &&
	    strcmp(v, "auto") != 0 && emu_bool_by_name(v) < 0)
		return perr(err, errlen, "%s:%d: key '%s': '%s' is not yes, no or auto", c->path,
		            kv->line, kv->key, v);
	if (strcmp(kv->key, "y") == 0 && !is_ident(v))
		return perr(err, errlen,
		            "%s:%d: key 'y': '%s' is not a results column (status, NAME.rel_err, ...)",
		            c->path, kv->line, v);
	if (strcmp(kv->key, "backend") == 0 && strcmp(v, "fast") != 0 && strcmp(v, "exact") != 0)
		return perr(err, errlen, "%s:%d: key 'backend': '%s' is not fast or exact", c->path,
		            kv->line, v);
	if (strcmp(kv->key, "x") == 0) {
		bool found = false;
		for (size_t a = 0; a < c->naxes; a++)
			found |= strcmp(c->axes[a].name, v) == 0;
		if (!found)
			return perr(err, errlen, "%s:%d: key 'x': '%s' is not an axis of the case",
			            c->path, kv->line, v);
	}
	if (strcmp(kv->key, "series") == 0) {
		bool found = false;
		for (size_t s = 0; s < c->nseries; s++)
			found |= strcmp(c->series[s], v) == 0;
		if (!found)
			return perr(err, errlen,
			            "%s:%d: key 'series': '%s' is not in the case's series list",
			            c->path, kv->line, v);
	}
	return 0;
}

int nm_plot_check(const nm_case *c, char *err, size_t errlen)
{
	for (size_t i = 0; i < c->nkv; i++)
		if (strcmp(c->kv[i].section, "plot") == 0 && check_one(c, &c->kv[i], err, errlen))
			return -1;
	return 0;
}

/* ---- the results' columns, before anything runs ---- */

int nm_plot_columns(const nm_case *c, nm_plot_cols *cols, char *err, size_t errlen)
{
	/* the sweep's header is point 0's fast run (variant 0, policy 0, the
	 * first value of each axis); without truth the names are the same */
	if (c->plot_cols_known) {
		*cols = c->plot_cols;
		return 0;
	}
	nm_point p = {.c = c};
	nm_point_result r;
	memset(cols, 0, sizeof *cols);
	for (size_t a = 0; a < c->naxes; a++)
		p.axis[a] = c->axes[a].values[0];
	if (nm_point_eval(&p, EMU_BE_FAST, false, &r, err, errlen))
		return -1;
	nm_plot_cols_of(&r, cols);
	return 0;
}

void nm_plot_cols_of(const nm_point_result *r, nm_plot_cols *cols)
{
	memset(cols, 0, sizeof *cols);
	cols->nout = r->nout < EMU_KOUT_MAX ? r->nout : EMU_KOUT_MAX;
	for (size_t i = 0; i < cols->nout; i++)
		snprintf(cols->out[i], sizeof cols->out[i], "%s", r->out[i].name);
	cols->fractions = r->has_fractions;
}

static const char *const metric_suffix[] = {".max_ulp",       ".rel_err",
                                            ".lost",          ".maxabs",
                                            ".arith_max_ulp", ".arith_rel_err"};
static const char *const frac_names[] = {"frac_zero", "frac_subnormal", "frac_lost",
                                         "frac_overflow"};
#define NMETRIC 6

static bool is_column(const nm_plot_cols *k, const char *y)
{
	for (size_t i = 0; i < k->nout; i++) {
		size_t l = strlen(k->out[i]);
		if (strncmp(y, k->out[i], l) == 0)
			for (int m = 0; m < NMETRIC; m++)
				if (strcmp(y + l, metric_suffix[m]) == 0)
					return true;
	}
	for (int i = 0; i < 4 && k->fractions; i++)
		if (strcmp(y, frac_names[i]) == 0)
			return true;
	return strcmp(y, "status") == 0 || strcmp(y, "flushed") == 0;
}

/* A results column in words, for an axis label: "O.rel_err" is "O: relative
 * error, end to end"; a name it does not know is itself. */
static const char *column_label(const char *col, char *buf, size_t len)
{
	static const struct {
		const char *suffix, *words;
	} m[] = {
	    {".max_ulp", "largest error, ulps (end to end)"},
	    {".rel_err", "relative error ||v - truth|| / ||truth|| (end to end)"},
	    {".lost", "elements lost to zero"},
	    {".maxabs", "largest finite |value|"},
	    {".arith_max_ulp", "largest error of the arithmetic, ulps"},
	    {".arith_rel_err", "relative error of the arithmetic"},
	};
	static const struct {
		const char *name, *words;
	} w[] = {
	    {"flushed", "largest fraction of a tensor flushed to zero"},
	    {"frac_zero", "fraction of gradients zero"},
	    {"frac_subnormal", "fraction of gradients subnormal"},
	    {"frac_lost", "fraction of gradients lost to zero"},
	    {"frac_overflow", "fraction of gradients overflowed"},
	};
	size_t l = strlen(col);
	for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
		size_t k = strlen(m[i].suffix);
		if (l > k && strcmp(col + l - k, m[i].suffix) == 0) {
			snprintf(buf, len, "%.*s: %s", (int)(l - k), col, m[i].words);
			return buf;
		}
	}
	for (size_t i = 0; i < sizeof w / sizeof *w; i++)
		if (strcmp(col, w[i].name) == 0)
			return w[i].words;
	return col;
}

static bool is_output(const nm_plot_cols *k, const char *name)
{
	for (size_t i = 0; i < k->nout; i++)
		if (strcmp(k->out[i], name) == 0)
			return true;
	return false;
}

static void list_outputs(const nm_plot_cols *k, char *buf, size_t len)
{
	size_t l = 0;
	buf[0] = 0;
	for (size_t i = 0; i < k->nout && l < len; i++)
		l += (size_t)snprintf(buf + l, len - l, "%s%s", i ? " " : "", k->out[i]);
}

bool nm_plot_wants_columns(const nm_case *c)
{
	return nm_case_get(c, "plot", "y") || c->nseries || c->accuracy[0];
}

int nm_plot_keep_columns(nm_case *c, char *err, size_t errlen)
{
	nm_plot_cols k;
	if (c->plot_cols_known)
		return 0;
	if (nm_plot_columns(c, &k, err, errlen))
		return -1;
	c->plot_cols = k;
	c->plot_cols_known = true;
	return 0;
}

int nm_plot_check_columns(nm_case *c, char *err, size_t errlen)
{
	if (nm_plot_check(c, err, errlen))
		return -1;
	if (!nm_plot_wants_columns(c))
		return 0;
	const nm_case_kv *y = nm_case_get(c, "plot", "y");
	char why[512], outs[256];
	if (nm_plot_keep_columns(c, why, sizeof why))
		return perr(err, errlen, "%s: the kernel's outputs (one run of the first point): %s",
		            c->path, why);
	const nm_plot_cols k = c->plot_cols;
	list_outputs(&k, outs, sizeof outs);
	if (y && !kv_get(c, "series") && !is_column(&k, y->value))
		return perr(err, errlen,
		            "%s:%d: key 'y': '%s' is not a results column (status, OUT.rel_err, "
		            "OUT.max_ulp, ... for an output OUT of %s: %s)",
		            c->path, y->line, y->value, c->kernel->name, outs);
	if (c->accuracy[0] && !is_output(&k, c->accuracy))
		return perr(err, errlen, "%s: key 'accuracy': '%s' is not an output of kernel %s (%s)",
		            c->path, c->accuracy, c->kernel->name, outs);
	for (size_t i = 0; i < c->nseries; i++)
		if (!is_output(&k, c->series[i]))
			return perr(err, errlen,
			            "%s: key 'series': '%s' is not an output of kernel %s (%s)", c->path,
			            c->series[i], c->kernel->name, outs);
	return 0;
}

/* ---- output directories and stale temporaries ---- */

int nm_dir_writable(const char *dir, char *err, size_t errlen)
{
	char p[1100];
	if (access(dir, W_OK | X_OK) != 0)
		return perr(err, errlen, "%s: not writable: %s", dir, strerror(errno));
	snprintf(p, sizeof p, "%s/.nanmap-probe.%ld.XXXXXX", dir, (long)getpid());
	int fd = mkstemp(p);
	if (fd < 0)
		return perr(err, errlen, "%s: not writable: %s", dir, strerror(errno));
	int e = 0;
	if (write(fd, "x", 1) != 1)
		e = errno ? errno : EIO;
	if (close(fd) != 0 && !e)
		e = errno;
	unlink(p);
	if (e)
		return perr(err, errlen, "%s: not writable: %s", dir, strerror(e));
	return 0;
}

size_t nm_dir_probe_clean(const char *dir)
{
	int r = nm_file_clean_match(dir, ".nanmap-probe.%p.%x", NULL);
	return r > 0 ? (size_t)r : 0;
}

static const char *const tmp_whats[] = {"dat", "gp", "png", "svg", "log"};

size_t nm_plot_clean_stale(const char *dir, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof tmp_whats / sizeof *tmp_whats; i++) {
		/* make_tmp's .NAME.WHAT.PID.XXXXXX, NAME taken to the letter */
		char pat[600], *q = pat;
		*q++ = '.';
		for (const char *c = name; *c && q < pat + sizeof pat - 40; c++) {
			if (*c == '%' || *c == '*')
				*q++ = '%';
			*q++ = *c;
		}
		snprintf(q, (size_t)(pat + sizeof pat - q), ".%s.%%p.%%x", tmp_whats[i]);
		int r = nm_file_clean_match(dir, pat, NULL);
		if (r > 0)
			n += (size_t)r;
	}
	return n;
}

/* ---- checking the results CSV against its case ---- */

/* A field as an error line shows it: control and non-ASCII bytes as \xHH,
 * cut after 60 bytes. Four rotating buffers a thread: one message shows at
 * most three fields (a sweep plots several cases at once). */
static const char *vis(const char *s)
{
	static _Thread_local char buf[4][260];
	static _Thread_local int k;
	char *b = buf[k = (k + 1) % 4];
	size_t n = 0, i = 0;
	for (; i < 60 && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch >= 0x7f)
			n += (size_t)snprintf(b + n, sizeof buf[0] - n, "\\x%02x", ch);
		else
			b[n++] = (char)ch;
	}
	snprintf(b + n, sizeof buf[0] - n, "%s", s[i] ? "..." : "");
	return b;
}

/* A number as the sweep writes it: %.17g, inf, -inf or nan; empty when the
 * sweep leaves a cell empty (an output a variant lacks). */
static bool num_ok(const char *s, bool empty_ok)
{
	if (!*s)
		return empty_ok;
	if (!strcmp(s, "inf") || !strcmp(s, "-inf") || !strcmp(s, "nan"))
		return true;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	return !*end && isfinite(v) && strspn(s, "+-0123456789.e") == strlen(s);
}

static bool uint_ok(const char *s, bool empty_ok)
{
	if (!*s)
		return empty_ok;
	/* as %zu writes it: no sign, no leading zero */
	return strspn(s, "0123456789") == strlen(s) && strlen(s) <= 19 && (s[0] != '0' || !s[1]);
}

typedef struct {
	const double *g[NM_CASE_MAX_AXES];
	size_t n[NM_CASE_MAX_AXES];
	const char *name;
} pl_grid;

static size_t grid_points(const nm_case *c, const pl_grid *g)
{
	size_t n = c->nvariants * c->npolicies;
	for (size_t a = 0; a < c->naxes; a++)
		n *= g->n[a];
	return n;
}

/* The expected header, field j (ncols: how many). */
static size_t header_of(const nm_case *c, const nm_plot_cols *k, bool series, char (*h)[64],
                        size_t max)
{
	static const char *const lead[] = {"case", "kernel", "variant", "policy"};
	size_t n = 0;
#define H(...) (n < max ? (void)snprintf(h[n++], 64, __VA_ARGS__) : (void)0)
	for (int i = 0; i < 4; i++)
		H("%s", lead[i]);
	for (size_t a = 0; a < c->naxes; a++)
		H("%s", c->axes[a].name);
	H("backend");
	if (series) {
		H("output");
		H("index");
		H("value");
		return n;
	}
	H("status");
	H("verdict");
	H("flushed");
	H("first_op");
	H("first_step");
	H("first_index");
	for (size_t i = 0; i < k->nout; i++)
		for (int m = 0; m < NMETRIC; m++)
			H("%s%s", k->out[i], metric_suffix[m]);
	for (int i = 0; i < 4 && k->fractions; i++)
		H("%s", frac_names[i]);
#undef H
	return n;
}

static int check_header(const nm_case *c, const nm_plot_cols *k, bool series, const nm_csv *t,
                        const char *path, char *err, size_t errlen)
{
	char h[8 + NM_CASE_MAX_AXES + 4 + EMU_KOUT_MAX * NMETRIC + 4][64];
	size_t n = header_of(c, k, series, h, sizeof h / sizeof *h);
	for (size_t j = 0; j < n && j < t->ncols; j++)
		if (strcmp(t->cell[j], h[j]) != 0)
			return perr(err, errlen, "%s:1: column %zu is '%s', case %s's results have '%s'",
			            path, j + 1, vis(t->cell[j]), c->name, h[j]);
	if (t->ncols != n)
		return perr(err, errlen, "%s:1: %zu columns, case %s's results have %zu", path,
		            t->ncols, c->name, n);
	return 0;
}

/* The fields every row starts with. var, pol: expected indexes, or SIZE_MAX
 * for any of the case's; ax: the expected axis values, or NULL for any
 * number; be: the expected backend, or NULL for one the case runs. */
static int check_lead(const nm_case *c, const nm_csv *t, size_t r, size_t var, size_t pol,
                      const double *ax, const char *be, const char *path, char *err,
                      size_t errlen)
{
	size_t line = t->line[r + 1];
	const char *s;
	if (strcmp(s = nm_csv_get(t, r, 0), c->name) != 0)
		return perr(err, errlen, "%s:%zu: case '%s', expected '%s'", path, line, vis(s),
		            c->name);
	if (strcmp(s = nm_csv_get(t, r, 1), c->kernel->name) != 0)
		return perr(err, errlen, "%s:%zu: kernel '%s', expected '%s'", path, line, vis(s),
		            c->kernel->name);
	s = nm_csv_get(t, r, 2);
	if (var == SIZE_MAX) {
		bool ok = false;
		for (size_t i = 0; i < c->nvariants; i++)
			ok |= strcmp(s, c->variants[i]) == 0;
		if (!ok)
			return perr(err, errlen, "%s:%zu: variant '%s' is not one of the case's", path,
			            line, vis(s));
	} else if (strcmp(s, c->variants[var]) != 0)
		return perr(err, errlen, "%s:%zu: variant '%s', expected '%s'", path, line, vis(s),
		            c->variants[var]);
	s = nm_csv_get(t, r, 3);
	if (pol == SIZE_MAX) {
		bool ok = false;
		for (size_t i = 0; i < c->npolicies; i++)
			ok |= strcmp(s, c->policy_specs[i]) == 0;
		if (!ok)
			return perr(err, errlen, "%s:%zu: policy '%s' is not one of the case's", path,
			            line, vis(s));
	} else if (strcmp(s, c->policy_specs[pol]) != 0)
		return perr(err, errlen, "%s:%zu: policy '%s', expected '%s'", path, line, vis(s),
		            c->policy_specs[pol]);
	for (size_t a = 0; a < c->naxes; a++) {
		char want[NM_NUM_LEN];
		s = nm_csv_get(t, r, 4 + (int)a);
		if (!ax && !num_ok(s, false))
			return perr(err, errlen, "%s:%zu: %s '%s' is not a number", path, line,
			            c->axes[a].name, vis(s));
		/* the same double, however it is spelled: compared by its bits on
		 * purpose, so that -0 is not taken for 0 (== would) */
		double v = nm_csv_num(s);
		uint64_t vb, ab;
		if (ax) {
			memcpy(&vb, &v, sizeof vb);
			memcpy(&ab, &ax[a], sizeof ab);
		}
		if (ax && (!num_ok(s, false) || vb != ab) &&
		    nm_fmt_double(ax[a], want, sizeof want))
			return perr(err, errlen, "%s:%zu: %s '%s', expected '%s'", path, line,
			            c->axes[a].name, vis(s), want);
	}
	s = nm_csv_get(t, r, 4 + (int)c->naxes);
	if (be ? strcmp(s, be) != 0 : strcmp(s, "fast") != 0 && (!c->exact || strcmp(s, "exact") != 0))
		return perr(err, errlen, "%s:%zu: backend '%s', expected %s", path, line, vis(s),
		            be ? be : c->exact ? "fast or exact" : "fast");
	return 0;
}

/* Every row of the results CSV in point order on grid g. 0, or the line of
 * the first wrong row (err says why). */
static size_t check_rows(const nm_case *c, const pl_grid *g, const nm_csv *t, const char *path,
                         char *err, size_t errlen)
{
	size_t nbe = c->exact ? 2 : 1, n0 = c->naxes > 0 ? g->n[0] : 1,
	       n1 = c->naxes > 1 ? g->n[1] : 1;
	if (n0 == 0 || n1 == 0) { /* an empty grid: no row belongs to it */
		if (t->nrec <= 1)
			return 0;
		return perr_msg(err, errlen, "%s:%zu: a row for a grid with no points", path,
		                t->line[1]),
		       t->line[1];
	}
	int base = 5 + (int)c->naxes; /* status */
	for (size_t r = 0; r + 1 < t->nrec; r++) {
		size_t idx = r / nbe, i1 = idx % n1, q = idx / n1, i0 = q % n0;
		double ax[NM_CASE_MAX_AXES] = {0};
		size_t line = t->line[r + 1];
		q /= n0;
		if (c->naxes > 0)
			ax[0] = g->g[0][i0];
		if (c->naxes > 1)
			ax[1] = g->g[1][i1];
		if (check_lead(c, t, r, q / c->npolicies, q % c->npolicies, ax,
		               r % nbe ? "exact" : "fast", path, err, errlen))
			return line;
		const char *s = nm_csv_get(t, r, base);
		if (nm_status_code(s) < 0)
			return perr_msg(err, errlen,
			            "%s:%zu: status '%s' is not ok, underflow, overflow, inf or nan", path,
			            line, vis(s)),
			       line;
		s = nm_csv_get(t, r, base + 1);
		if (strcmp(s, "accurate") != 0 && strcmp(s, "inaccurate") != 0 && strcmp(s, "-") != 0)
			return perr_msg(err, errlen,
			            "%s:%zu: verdict '%s' is not accurate, inaccurate or -", path, line,
			            vis(s)),
			       line;
		s = nm_csv_get(t, r, base + 2);
		if (!num_ok(s, false) || !(nm_csv_num(s) >= 0 && nm_csv_num(s) <= 1))
			return perr_msg(err, errlen, "%s:%zu: flushed '%s' is not a fraction 0 ... 1", path,
			            line, vis(s)),
			       line;
		if (!uint_ok(s = nm_csv_get(t, r, base + 5), true))
			return perr_msg(err, errlen, "%s:%zu: first_index '%s' is not a whole number", path,
			            line, vis(s)),
			       line;
		for (size_t j = (size_t)base + 6; j < t->ncols; j++) {
			const char *name = t->cell[j];
			size_t l = strlen(name);
			bool lost = l > 5 && strcmp(name + l - 5, ".lost") == 0;
			s = nm_csv_get(t, r, (int)j);
			if (lost ? !uint_ok(s, true) : !num_ok(s, true))
				return perr_msg(err, errlen, "%s:%zu: %s '%s' is not a %s", path, line,
				            vis(name), vis(s), lost ? "whole number" : "number"),
				       line;
		}
	}
	return 0;
}

/* The series CSV: every row a point of the case, its output one of the
 * case's series, indexes 0, 1, ... per (point, backend, output); as many
 * of those runs as grid g gives. */
static size_t check_series_rows(const nm_case *c, const pl_grid *g, const nm_csv *t,
                                const char *path, size_t *runs, char *err, size_t errlen)
{
	int co = 5 + (int)c->naxes;
	*runs = 0;
	for (size_t r = 0; r + 1 < t->nrec; r++) {
		size_t line = t->line[r + 1];
		if (check_lead(c, t, r, SIZE_MAX, SIZE_MAX, NULL, NULL, path, err, errlen))
			return line;
		const char *s = nm_csv_get(t, r, co);
		bool ok = false;
		for (size_t i = 0; i < c->nseries; i++)
			ok |= strcmp(s, c->series[i]) == 0;
		if (!ok)
			return perr_msg(err, errlen, "%s:%zu: output '%s' is not in the case's series list",
			            path, line, vis(s)),
			       line;
		const char *ix = nm_csv_get(t, r, co + 1);
		if (!uint_ok(ix, false))
			return perr_msg(err, errlen, "%s:%zu: index '%s' is not a whole number", path, line,
			            vis(ix)),
			       line;
		if (!num_ok(s = nm_csv_get(t, r, co + 2), false))
			return perr_msg(err, errlen, "%s:%zu: value '%s' is not a number", path, line, vis(s)),
			       line;
		unsigned long long i = strtoull(ix, NULL, 10);
		if (i == 0) {
			(*runs)++;
			continue;
		}
		bool same = r > 0;
		for (int j = 0; same && j <= co; j++)
			same = strcmp(nm_csv_get(t, r, j), nm_csv_get(t, r - 1, j)) == 0;
		if (!same || strtoull(nm_csv_get(t, r - 1, co + 1), NULL, 10) + 1 != i)
			return perr_msg(err, errlen, "%s:%zu: index %s does not follow the row before", path,
			            line, vis(ix)),
			       line;
	}
	(void)g;
	return 0;
}

/* The CSV of c as the sweep writes it, on its full or its quick grid. */
static int check_results(const nm_case *c, const nm_plot_cols *k, bool series, const nm_csv *t,
                         const char *path, char *err, size_t errlen)
{
	if (check_header(c, k, series, t, path, err, errlen))
		return -1;
	pl_grid gr[2] = {{.name = "full"}, {.name = "quick"}};
	for (size_t a = 0; a < c->naxes; a++) {
		gr[0].g[a] = c->axes[a].values;
		gr[0].n[a] = c->axes[a].nvalues;
		gr[1].g[a] = c->axes[a].quick;
		gr[1].n[a] = c->axes[a].nquick;
	}
	size_t nbe = c->exact ? 2 : 1, rows = t->nrec - 1;
	size_t last = t->line[t->nrec - 1];
	size_t want[2] = {grid_points(c, &gr[0]) * nbe, grid_points(c, &gr[1]) * nbe};
	if (series) {
		size_t runs;
		if (rows == 0)
			return perr(err, errlen, "%s:%zu: no rows", path, last);
		if (check_series_rows(c, &gr[0], t, path, &runs, err, errlen))
			return -1;
		for (int i = 0; i < 2; i++)
			if (runs == want[i] * c->nseries)
				return 0;
		return perr(err, errlen,
		            "%s:%zu: %zu series (point, backend, output), expected %zu (the full "
		            "grid) or %zu (the quick grid)",
		            path, last, runs, want[0] * c->nseries, want[1] * c->nseries);
	}
	/* the grid whose row count fits; when both do, the one that fits further */
	char best[768] = "";
	size_t best_line = 0;
	bool tried = false;
	for (int i = 0; i < 2; i++) {
		if (rows != want[i])
			continue;
		char e[768];
		size_t bad = check_rows(c, &gr[i], t, path, e, sizeof e);
		if (!bad)
			return 0;
		if (!tried || bad > best_line) {
			snprintf(best, sizeof best, "%s", e);
			best_line = bad;
		}
		tried = true;
	}
	if (tried)
		return perr(err, errlen, "%s", best);
	if (want[0] == want[1])
		return perr(err, errlen, "%s:%zu: %zu rows, case %s's grid gives %zu", path, last,
		            rows, c->name, want[0]);
	return perr(err, errlen,
	            "%s:%zu: %zu rows, case %s's grid gives %zu (full) or %zu (quick)", path, last,
	            rows, c->name, want[0], want[1]);
}

/* ---- groups of points ---- */

typedef struct {
	double x, y, z; /* z: the heat map's second axis */
	int st;
	int verdict;    /* nm_verdict */
	double flushed; /* the CSV's flushed: the largest fraction of a tensor flushed */
} pl_pt;

typedef struct {
	char label[256];
	size_t variant, policy; /* indexes of the first row's names */
	size_t other;           /* 2-D lines: index of the other axis's value */
	pl_pt *p;
	size_t n, cap;
} pl_group;

typedef struct {
	pl_group *g;
	size_t n;
} pl_set;

static void set_free(pl_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->g[i].p);
	free(s->g);
	memset(s, 0, sizeof *s);
}

static pl_group *set_find(pl_set *s, const char *label)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->g[i].label, label) == 0)
			return &s->g[i];
	pl_group *g = realloc(s->g, (s->n + 1) * sizeof *g);
	if (!g)
		return NULL;
	s->g = g;
	g = &s->g[s->n++];
	memset(g, 0, sizeof *g);
	snprintf(g->label, sizeof g->label, "%s", label);
	return g;
}

static int group_add(pl_group *g, pl_pt p)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 64;
		pl_pt *q = realloc(g->p, cap * sizeof *q);
		if (!q)
			return -1;
		g->p = q;
		g->cap = cap;
	}
	g->p[g->n++] = p;
	return 0;
}

static size_t name_index(char **names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return 0;
}

/* A policy as a label: "storage=" is what every policy starts with. */
static const char *short_policy(const char *p)
{
	return strncmp(p, "storage=", 8) == 0 ? p + 8 : p;
}

/* ---- gnuplot output helpers ---- */

/* A gnuplot single-quoted string ('' is a quote). */
static void gq(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		if (*s != '\n')
			fputc(*s, f);
	}
	fputc('\'', f);
}

/* logx/logy: 1 for a yes word, 0 for a no word, -1 for auto or unset. */
static int log_opt(const char *opt)
{
	return opt ? emu_bool_by_name(opt) : -1;
}

static bool want_log(const char *opt, double lo, double hi)
{
	if (log_opt(opt) == 1)
		return lo > 0;
	if (log_opt(opt) == 0)
		return false;
	return lo > 0 && hi / lo >= 100;
}

/* Point types per status, drawn in every line's colour. */
static const int st_pt[] = {7, 11, 9, 5, 3};
static const char *const st_rgb[] = {"#4daf4a", "#80b1d3", "#ff7f00", "#e41a1c", "#6a3d9a"};
/* the grades within ok and underflow (docs/sweep.md, Plots): ok whose
 * verdict is inaccurate, and an underflow that flushed at most the
 * tolerance's fraction of every tensor */
#define RGB_OK_INACCURATE 0xffd92fu
#define RGB_UNDERFLOW_SLIGHT 0xd6e9f5u

/* A status cell's colour: the status, graded by the verdict (ok) and the
 * fraction flushed (underflow). */
static unsigned status_rgb(const nm_case *c, const pl_pt *p)
{
	if (p->st == 0 && p->verdict == NM_VERDICT_INACCURATE)
		return RGB_OK_INACCURATE;
	if (p->st == 1 && p->flushed <= c->tolerance)
		return RGB_UNDERFLOW_SLIGHT;
	return (unsigned)strtoul(st_rgb[p->st] + 1, NULL, 16);
}
static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                      "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                                      "#000080", "#006400"};
#define NCOLOURS (sizeof colours / sizeof colours[0])

typedef struct {
	const nm_case *c;
	const char *ycol, *title, *xlabel, *ylabel;
	bool logx, logy, heat, ystatus, series; /* series: lines only, no status */
	const pl_set *strip; /* a status strip: one row per line of these groups */
	double floor, ceil; /* where zero and non-finite y are drawn */
	double hx0, hx1, hy0, hy1; /* heat map: the outer cell edges */
	size_t nvar, npol; /* distinct variants / policies present (heat map layout) */
	const char *xname, *zname;
	const char *accname; /* the output the verdict judges */
	const nm_thresh_row *bounds; /* the case's bisected boundaries (heat maps mark them) */
	size_t nbounds;
	double tolline;      /* lines of that output's rel_err: the tolerance, else NaN */
	bool zlog;
	double zlo, zhi; /* zlog: the colour range, the positive values' (a panel may have none) */
} pl_spec;

static void lines_body(FILE *f, const pl_spec *sp, const pl_set *s, const char *dat)
{
	fprintf(f, "set title ");
	gq(f, sp->title);
	fprintf(f, "\nset xlabel ");
	gq(f, sp->xlabel);
	fprintf(f, "\nset ylabel ");
	gq(f, sp->ylabel);
	fprintf(f, "\nset key outside right top spacing 0.9\nset grid\n");
	fprintf(f, sp->logx ? "set logscale x\nset format x '%%g'\n" : "unset logscale x\n");
	fprintf(f, sp->logy ? "set logscale y\nset format y '%%.0e'\n" : "unset logscale y\n");
	if (sp->ystatus)
		fprintf(f, "set yrange [-0.5:4.5]\nset ytics ('ok' 0, 'underflow' 1, 'overflow' 2, "
		           "'inf' 3, 'nan' 4)\n");
	else
		fprintf(f, "set yrange [%.17g:%.17g]\n", sp->floor, sp->ceil);
	fprintf(f, "set autoscale xfix\nplot ");
	/* colour: the policy (or the line, for one policy); dashes: the variant and
	 * the other axis's value */
	size_t nv = sp->c->nvariants ? sp->c->nvariants : 1;
	for (size_t i = 0; i < s->n; i++) {
		const pl_group *g = &s->g[i];
		size_t col = sp->c->npolicies > 1 ? g->policy : i;
		const char *rgb = colours[col % NCOLOURS];
		fprintf(f, "%s", i ? ", \\\n  " : "");
		gq(f, dat);
		fprintf(f, " index %zu using 1:2 with lines lw 1.5 dt %zu lc rgb '%s' title ", i,
		        (g->other * nv + g->variant) % 5 + 1, rgb);
		gq(f, g->label);
		if (!sp->series)
			fprintf(f, ", '' index %zu using 1:2:3 with points pt variable ps 0.8 lc rgb '%s' "
			           "notitle",
			        i, rgb);
	}
	for (int st = 0; st < 5 && !sp->series; st++)
		fprintf(f, ", NaN with points pt %d lc rgb 'black' title 'point: %s'", st_pt[st],
		        st_names[st]);
	if (!sp->ystatus && !sp->series)
		fprintf(f, ", NaN with dots lc rgb 'white' title 'top edge: inf/nan, bottom: 0'");
	if (isfinite(sp->tolline))
		fprintf(f, ", %.17g with lines dt 2 lw 1 lc rgb 'black' title 'tolerance %g %%'",
		        sp->tolline, 100 * sp->tolline);
	fprintf(f, "\n");
}

static void heat_body(FILE *f, const pl_spec *sp, const pl_set *s, const char *dat)
{
	fprintf(f, "set multiplot layout %zu,%zu title ", sp->nvar, sp->npol);
	char t[512];
	if (sp->zname)
		snprintf(t, sizeof t, "%s — colour: %s (grey: inf/nan; ×: bisected boundary)", sp->title,
		         sp->zname);
	else
		snprintf(t, sizeof t,
		         "%s — green ok (yellow: %s error > %g %%), blue underflow (pale: at most "
		         "%g %% of a tensor flushed), orange overflow, red inf, purple nan%s",
		         sp->title, sp->accname, 100 * sp->c->tolerance, 100 * sp->c->tolerance,
		         sp->strip ? "" : "; ×: bisected boundary");
	gq(f, t);
	fprintf(f, "\nset key off\nunset grid\n");
	fprintf(f, sp->logx ? "set logscale x\nset format x '1e%%L'\n" : "unset logscale x\n");
	fprintf(f, sp->logy ? "set logscale y\nset format y '1e%%L'\n" : "unset logscale y\n");
	fprintf(f, "set xrange [%.17g:%.17g]\nset yrange [%.17g:%.17g]\nset xtics rotate by -45\n",
	        sp->hx0, sp->hx1, sp->hy0, sp->hy1);
	if (sp->zname) {
		fprintf(f, "set palette rgbformulae 33,13,10\n");
		fprintf(f, sp->zlog ? "set logscale cb\nset format cb '%%.0e'\n" : "unset logscale cb\n");
		/* one colour scale for every panel; under log, one a panel without a positive
		 * value (all its cells zero or grey) cannot autoscale to (gnuplot's [-10:10]) */
		if (sp->zlog)
			fprintf(f, "set cbrange [%.17g:%.17g]\n", sp->zlo, sp->zhi);
		fprintf(f, "set colorbox\n");
	} else
		fprintf(f, "unset colorbox\n");
	fprintf(f, "set xlabel ");
	gq(f, sp->xlabel);
	fprintf(f, "\nset ylabel ");
	gq(f, sp->ylabel);
	fprintf(f, "\n");
	if (sp->strip) {
		/* one row per line, the first on top */
		fprintf(f, "set yrange [%.17g:%.17g]\nset ytics (", sp->hy1, sp->hy0);
		for (size_t i = 0; i < sp->strip->n; i++) {
			fprintf(f, "%s", i ? ", " : "");
			gq(f, sp->strip->g[i].label);
			fprintf(f, " %zu", i);
		}
		fprintf(f, ")\nset ytics scale 0\n");
	}
	for (size_t i = 0; i < s->n; i++) {
		fprintf(f, "set title ");
		gq(f, s->g[i].label);
		fprintf(f, "\nplot ");
		gq(f, dat);
		if (sp->zname)
			fprintf(f, " index %zu using 1:2:3:4:5:6:7 with boxxyerror fs solid 1.0 noborder "
			           "lc palette notitle, '' index %zu using 1:2:3:4:5:6:8 with boxxyerror fs "
			           "solid 1.0 noborder lc rgb variable notitle",
			        3 * i, 3 * i + 1);
		else
			fprintf(f, " index %zu using 1:2:3:4:5:6:8 with boxxyerror fs solid 1.0 noborder "
			           "lc rgb variable notitle",
			        3 * i + 1);
		/* the bisected boundaries: a cross at each first bad value */
		fprintf(f, ", '' index %zu using 1:2 with points pt 2 ps 1.2 lw 1.5 lc rgb 'black' "
		           "notitle\n",
		        3 * i + 2);
	}
	fprintf(f, "unset multiplot\n");
}

/* Cell edges of sorted distinct values v[0..n) (in log space when lg). */
static void edges(const double *v, size_t n, bool lg, size_t i, double *lo, double *hi)
{
	double a = lg ? log(v[i]) : v[i];
	double left, right;
	if (n == 1) {
		left = a - (lg ? log(2) : 0.5);
		right = a + (lg ? log(2) : 0.5);
	} else {
		double prev = i ? (lg ? log(v[i - 1]) : v[i - 1]) : 0;
		double next = i + 1 < n ? (lg ? log(v[i + 1]) : v[i + 1]) : 0;
		left = i ? (a + prev) / 2 : a - ((lg ? log(v[1]) : v[1]) - a) / 2;
		right = i + 1 < n ? (a + next) / 2 : a + (a - (lg ? log(v[n - 2]) : v[n - 2])) / 2;
	}
	*lo = lg ? exp(left) : left;
	*hi = lg ? exp(right) : right;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Distinct sorted values of one coordinate of every point. */
static double *distinct(const pl_set *s, bool second, size_t *n)
{
	size_t tot = 0;
	for (size_t i = 0; i < s->n; i++)
		tot += s->g[i].n;
	double *v = malloc((tot ? tot : 1) * sizeof *v);
	if (!v)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = 0; j < s->g[i].n; j++)
			v[k++] = second ? s->g[i].p[j].z : s->g[i].p[j].x;
	qsort(v, k, sizeof *v, cmpd);
	size_t m = 0;
	for (size_t i = 0; i < k; i++)
		if (m == 0 || v[m - 1] != v[i])
			v[m++] = v[i];
	*n = m;
	return v;
}

static size_t find_d(const double *v, size_t n, double x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return i;
	return 0;
}

/* Where boundary row t lies on panel g of a 2-D heat map: its first bad
 * value on the axis it was bisected along, at the other axis's value its
 * label names ("NAME@OTHER=VALUE"). false when it is not g's. */
static bool bound_at(const pl_spec *sp, const nm_thresh_row *t, const pl_group *g, double *x,
                     double *y)
{
	const nm_case *c = sp->c;
	if (strcmp(t->case_name, c->name) != 0 || g->variant >= c->nvariants ||
	    g->policy >= c->npolicies || strcmp(t->variant, c->variants[g->variant]) != 0 ||
	    strcmp(t->policy, c->policy_specs[g->policy]) != 0)
		return false;
	const char *at = strchr(t->axis, '@'), *eq = at ? strchr(at, '=') : NULL;
	if (!at || !eq)
		return false;
	char *end;
	double v = strtod(eq + 1, &end);
	if (*end || !isfinite(t->first_bad))
		return false;
	size_t la = (size_t)(at - t->axis);
	bool onx = strlen(sp->xname) == la && !strncmp(t->axis, sp->xname, la);
	*x = onx ? t->first_bad : v;
	*y = onx ? v : t->first_bad;
	return true;
}

static int write_heat_data(FILE *f, pl_spec *sp, const pl_set *s)
{
	size_t nx, ny;
	double *vx = distinct(s, false, &nx), *vy = distinct(s, true, &ny);
	if (!vx || !vy || !nx || !ny) {
		free(vx);
		free(vy);
		return -1;
	}
	double t;
	edges(vx, nx, sp->logx, 0, &sp->hx0, &t);
	edges(vx, nx, sp->logx, nx - 1, &t, &sp->hx1);
	edges(vy, ny, sp->logy, 0, &sp->hy0, &t);
	edges(vy, ny, sp->logy, ny - 1, &t, &sp->hy1);
	for (size_t i = 0; i < s->n; i++) {
		const pl_group *g = &s->g[i];
		/* block 2i: finite metric cells; block 2i+1: the others (status colours) */
		for (int pass = 0; pass < 2; pass++) {
			size_t rows = 0;
			for (size_t j = 0; j < g->n; j++) {
				const pl_pt *p = &g->p[j];
				bool fin = sp->zname && isfinite(p->y) && (!sp->zlog || p->y > 0);
				if (fin != (pass == 0))
					continue;
				double xl, xh, yl, yh;
				edges(vx, nx, sp->logx, find_d(vx, nx, p->x), &xl, &xh);
				edges(vy, ny, sp->logy, find_d(vy, ny, p->z), &yl, &yh);
				unsigned rgb = 0xbbbbbb;
				if (!sp->zname && p->st >= 0)
					rgb = status_rgb(sp->c, p);
				else if (sp->zname && isfinite(p->y) && p->y <= 0)
					rgb = 0x000000;
				fprintf(f, "%.17g %.17g %.17g %.17g %.17g %.17g %.17g %u\n", p->x, p->z, xl,
				        xh, yl, yh, fin ? p->y : 0.0, rgb);
				rows++;
			}
			if (rows == 0) /* gnuplot wants every block non-empty */
				fprintf(f, "NaN NaN NaN NaN NaN NaN NaN 0\n");
			fprintf(f, "\n\n");
		}
		/* block 3i+2: the boundaries of this panel's variant and policy */
		size_t nb = 0;
		for (size_t b = 0; b < sp->nbounds && !sp->strip && sp->c->naxes == 2; b++) {
			double bx, by;
			if (bound_at(sp, &sp->bounds[b], g, &bx, &by)) {
				fprintf(f, "%.17g %.17g\n", bx, by);
				nb++;
			}
		}
		if (nb == 0)
			fprintf(f, "NaN NaN\n");
		fprintf(f, "\n\n");
	}
	free(vx);
	free(vy);
	return ferror(f) ? -1 : 0;
}

static int write_lines_data(FILE *f, const pl_spec *sp, const pl_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const pl_group *g = &s->g[i];
		for (size_t j = 0; j < g->n; j++) {
			const pl_pt *p = &g->p[j];
			double y = p->y;
			if (sp->ystatus)
				y = p->st;
			else if (!isfinite(y))
				y = sp->ceil;
			else if (sp->logy && y <= 0)
				y = sp->floor;
			fprintf(f, "%.17g %.17g %d\n", p->x, y, p->st >= 0 ? st_pt[p->st] : 1);
		}
		if (g->n == 0)
			fprintf(f, "NaN NaN 1\n");
		fprintf(f, "\n\n");
	}
	return ferror(f) ? -1 : 0;
}

/* ---- running gnuplot ---- */

static bool find_prog(const char *name, char *out, size_t outlen)
{
	if (strchr(name, '/')) {
		snprintf(out, outlen, "%s", name);
		return access(name, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t l = strcspn(path, ":");
		snprintf(out, outlen, "%.*s/%s", (int)l, path, name);
		if (l && access(out, X_OK) == 0)
			return true;
		path += l + (path[l] == ':');
	}
	return false;
}

static int run_gnuplot(const char *prog, const char *script, const char *errpath, char *err,
                       size_t errlen)
{
	pid_t pid = fork();
	if (pid < 0)
		return perr(err, errlen, "fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execl(prog, prog, script, (char *)NULL);
		_exit(127);
	}
	int ws;
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR)
			return perr(err, errlen, "waitpid: %s", strerror(errno));
	if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
		return 0;
	/* the last line gnuplot printed says why */
	char last[400] = "", line[400];
	FILE *e = fopen(errpath, "r");
	while (e && fgets(line, sizeof line, e))
		if (strspn(line, " \t\r\n^") < strlen(line))
			snprintf(last, sizeof last, "%s", line);
	if (e)
		fclose(e);
	last[strcspn(last, "\r\n")] = 0;
	return perr(err, errlen, "gnuplot failed (%s %d)%s%s",
	            WIFEXITED(ws) ? "exit status" : "signal",
	            WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws), *last ? ": " : "", last);
}

int nm_plot_read_results(const nm_case *c, const nm_plot_cols *cols, const char *path,
                         bool series, nm_csv *t, char *err, size_t errlen)
{
	if (nm_csv_read(path, t, err, errlen))
		return -1;
	if (check_results(c, cols, series, t, path, err, errlen)) {
		nm_csv_free(t);
		return -1;
	}
	return 0;
}

/* ---- what gnuplot wrote ---- */

/* gnuplot exits 0 when its output could not be written (a full disk), so
 * its files are read back before they are renamed into place. */

static uint32_t crc32_png(const unsigned char *p, size_t n)
{
	/* ISO 3309 / PNG specification, Annex D */
	static uint32_t tab[256];
	static bool init;
	if (!init) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			tab[i] = c;
		}
		init = true;
	}
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++)
		c = tab[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* NULL when s[0..n) is a whole PNG: the signature, IHDR first, chunks whose
 * lengths and CRCs hold, IEND last and nothing after it; else why not. */
static const char *png_whole(const unsigned char *s, size_t n)
{
	if (n == 0)
		return "empty";
	if (n < 8 || memcmp(s, "\x89PNG\r\n\x1a\n", 8) != 0)
		return "no PNG signature";
	size_t i = 8;
	for (int first = 1;; first = 0) {
		if (n - i < 12)
			return "cut short (no IEND chunk)";
		uint32_t len = be32(s + i);
		if (len > 0x7fffffffu || len > n - i - 12)
			return "cut short (a chunk runs past the end)";
		const unsigned char *type = s + i + 4;
		if (first && memcmp(type, "IHDR", 4) != 0)
			return "no IHDR chunk first";
		if (crc32_png(type, 4 + (size_t)len) != be32(s + i + 8 + len))
			return "a chunk's CRC does not match";
		i += 12 + (size_t)len;
		if (memcmp(type, "IEND", 4) == 0)
			return i == n ? NULL : "bytes after IEND";
	}
}

/* NULL when s is a whole SVG: it ends with </svg> (and white space). */
static const char *svg_whole(const char *s, size_t n)
{
	if (n == 0)
		return "empty";
	while (n && strchr(" \t\r\n", s[n - 1]))
		n--;
	if (n < 6 || memcmp(s + n - 6, "</svg>", 6) != 0)
		return "cut short (no closing </svg>)";
	return NULL;
}

/* tmp as gnuplot left it, to become out: 0, or -1 naming out. */
static int check_written(const char *tmp, const char *out, bool png, char *err, size_t errlen)
{
	size_t n = 0;
	errno = 0;
	char *s = nm_file_read_max(tmp, PL_MAX_BYTES, &n);
	if (!s)
		return perr(err, errlen, "%s: gnuplot wrote nothing readable: %s", out,
		            strerror(errno ? errno : ENOMEM));
	const char *why = png ? png_whole((const unsigned char *)s, n) : svg_whole(s, n);
	free(s);
	if (why)
		return perr(err, errlen,
		            "%s: gnuplot's output is not whole: %s (%zu bytes; is the disk full?)", out,
		            why, n);
	return 0;
}

/* Run gnuplot on script gp, then read back each of its n outputs tmp[i]
 * (png[i]: a PNG, else an SVG) whole before any is renamed to out[i]; a
 * committed tmp[i] is emptied. 0, or -1 with one line in err. */
static int render(const char *prog, const char *gp, const char *elog, char *const *tmp,
                  const char *const *out, const bool *png, size_t n, char *err, size_t errlen)
{
	int rc = run_gnuplot(prog, gp, elog, err, errlen);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = check_written(tmp[i], out[i], png[i], err, errlen);
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (nm_file_commit(tmp[i], out[i], err, errlen) != 0)
			rc = -1;
		else
			*tmp[i] = 0;
	}
	return rc;
}

/* ---- reading the results into groups ---- */

static int load_points(const pl_spec *sp, const nm_case *c, const nm_csv *t, const char *series,
                       const char *backend, pl_set *s, const char *path, char *err,
                       size_t errlen)
{
	int cv = nm_csv_col(t, "variant"), cp = nm_csv_col(t, "policy");
	int cb = nm_csv_col(t, "backend"), cs = nm_csv_col(t, "status");
	int cvd = nm_csv_col(t, "verdict"), cfl = nm_csv_col(t, "flushed");
	int ca[NM_CASE_MAX_AXES] = {0};
	if (cv < 0 || cp < 0)
		return perr(err, errlen, "%s: no variant or policy column", path);
	size_t xa = 0;
	for (size_t a = 0; a < c->naxes; a++) {
		ca[a] = nm_csv_col(t, c->axes[a].name);
		if (ca[a] < 0)
			return perr(err, errlen, "%s: no column for axis '%s'", path, c->axes[a].name);
		if (sp->xname && strcmp(sp->xname, c->axes[a].name) == 0)
			xa = a;
	}
	int cy = -1, co = -1, ci = -1;
	if (series) {
		co = nm_csv_col(t, "output");
		ci = nm_csv_col(t, "index");
		cy = nm_csv_col(t, "value");
		if (co < 0 || ci < 0 || cy < 0)
			return perr(err, errlen, "%s: no output, index or value column", path);
	} else if (!sp->ystatus) {
		cy = nm_csv_col(t, sp->ycol);
		if (cy < 0)
			return perr(err, errlen, "%s: no column '%s' (the [plot] y of %s)", path,
			            sp->ycol, c->path);
	}
	if (!series && cs < 0)
		return perr(err, errlen, "%s: no status column", path);
	for (size_t r = 0; r + 1 < t->nrec; r++) {
		if (cb >= 0 && strcmp(nm_csv_get(t, r, cb), backend) != 0)
			continue;
		if (series && strcmp(nm_csv_get(t, r, co), series) != 0)
			continue;
		const char *v = nm_csv_get(t, r, cv), *p = nm_csv_get(t, r, cp);
		char label[256];
		int l = 0;
		if (c->nvariants > 1)
			l += snprintf(label + l, sizeof label - (size_t)l, "%s ", v);
		if (c->npolicies > 1 || c->nvariants <= 1)
			l += snprintf(label + l, sizeof label - (size_t)l, "%s ", short_policy(p));
		pl_pt pt = {0};
		if (series) {
			for (size_t a = 0; a < c->naxes; a++)
				l += snprintf(label + l, sizeof label - (size_t)l, "%s=%s ", c->axes[a].name,
				              nm_csv_get(t, r, ca[a]));
			pt.x = nm_csv_num(nm_csv_get(t, r, ci)) + 1;
			pt.z = c->naxes ? nm_csv_num(nm_csv_get(t, r, ca[0])) : 0;
			pt.st = -1;
		} else {
			if (!sp->heat && c->naxes == 2)
				l += snprintf(label + l, sizeof label - (size_t)l, "%s=%s ",
				              c->axes[1 - xa].name, nm_csv_get(t, r, ca[1 - xa]));
			pt.x = c->naxes ? nm_csv_num(nm_csv_get(t, r, ca[xa])) : 0;
			pt.z = c->naxes == 2 ? nm_csv_num(nm_csv_get(t, r, ca[1 - xa])) : 0;
			pt.st = nm_status_code(nm_csv_get(t, r, cs));
			const char *vd = cvd >= 0 ? nm_csv_get(t, r, cvd) : "-";
			pt.verdict = !strcmp(vd, "inaccurate") ? NM_VERDICT_INACCURATE
			             : !strcmp(vd, "accurate") ? NM_VERDICT_ACCURATE
			                                       : NM_VERDICT_NONE;
			pt.flushed = cfl >= 0 ? nm_csv_num(nm_csv_get(t, r, cfl)) : 0;
		}
		if (l > 0 && label[l - 1] == ' ')
			label[--l] = 0;
		pt.y = cy >= 0 ? nm_csv_num(nm_csv_get(t, r, cy)) : pt.st;
		pl_group *g = set_find(s, label);
		if (!g || group_add(g, pt))
			return perr(err, errlen, "out of memory");
		if (g->n == 1) {
			g->variant = name_index(c->variants, c->nvariants, v);
			g->policy = name_index(c->policy_specs, c->npolicies, p);
			/* a series line: its first axis's value; 2-D lines: the other axis's */
			const nm_axis *o = series && c->naxes ? &c->axes[0]
			                   : c->naxes == 2    ? &c->axes[1 - xa]
			                                      : NULL;
			for (size_t k = 0; o && k < o->nvalues; k++)
				if (o->values[k] == pt.z)
					g->other = k;
			for (size_t k = 0; o && k < o->nquick; k++)
				if (o->quick[k] == pt.z)
					g->other = k;
		}
	}
	if (s->n == 0)
		return perr(err, errlen, "%s: no rows for backend %s", path, backend);
	return 0;
}

/* the process's umask, read once: reading it sets it, which threads
 * plotting at once must not do in turn */
static mode_t plot_umask;
static pthread_once_t umask_once = PTHREAD_ONCE_INIT;
static void umask_read(void)
{
	plot_umask = umask(0);
	umask(plot_umask);
}

/* dir/.NAME.WHAT.PID.XXXXXX, created (nm_plot_clean_stale knows the
 * pattern); f: open for writing, or NULL to leave it closed and empty. */
static int make_tmp(char *buf, size_t len, const char *dir, const char *name, const char *what,
                    FILE **f)
{
	snprintf(buf, len, "%s/.%s.%s.%ld.XXXXXX", dir, name, what, (long)getpid());
	int fd = mkstemp(buf);
	if (fd < 0) {
		*buf = 0;
		return -1;
	}
	if (!f) {
		/* the plots get the mode a new file gets (mkstemp's is 0600) */
		pthread_once(&umask_once, umask_read);
		if (fchmod(fd, 0666 & ~plot_umask) != 0) {
			close(fd);
			return -1;
		}
		return close(fd);
	}
	*f = fdopen(fd, "w");
	if (!*f) {
		close(fd);
		unlink(buf);
		return -1;
	}
	return 0;
}

/* The rows of c in results_dir/thresholds.csv (as nm_thresh_write wrote
 * them), malloc'd into *rows; none when the file is absent or not one. */
static void read_bounds(const nm_case *c, const char *results_dir, nm_thresh_row **rows,
                        size_t *n)
{
	char path[1100], err[256];
	nm_csv t;
	*rows = NULL;
	*n = 0;
	snprintf(path, sizeof path, "%s/thresholds.csv", results_dir);
	if (access(path, R_OK) != 0 || nm_csv_read(path, &t, err, sizeof err))
		return;
	int cc = nm_csv_col(&t, "case"), cv = nm_csv_col(&t, "variant"),
	    cp = nm_csv_col(&t, "policy"), ca = nm_csv_col(&t, "axis"),
	    cl = nm_csv_col(&t, "last_ok"), cf = nm_csv_col(&t, "first_bad");
	if (cc >= 0 && cv >= 0 && cp >= 0 && ca >= 0 && cl >= 0 && cf >= 0 && t.nrec > 1)
		*rows = calloc(t.nrec - 1, sizeof **rows);
	for (size_t r = 0; *rows && r + 1 < t.nrec; r++) {
		if (strcmp(nm_csv_get(&t, r, cc), c->name) != 0)
			continue;
		nm_thresh_row *w = &(*rows)[(*n)++];
		snprintf(w->case_name, sizeof w->case_name, "%s", c->name);
		snprintf(w->variant, sizeof w->variant, "%s", nm_csv_get(&t, r, cv));
		snprintf(w->policy, sizeof w->policy, "%s", nm_csv_get(&t, r, cp));
		snprintf(w->axis, sizeof w->axis, "%s", nm_csv_get(&t, r, ca));
		w->last_ok = nm_csv_num(nm_csv_get(&t, r, cl));
		w->first_bad = nm_csv_num(nm_csv_get(&t, r, cf));
	}
	nm_csv_free(&t);
}

int nm_plot_case(const nm_case *c, const char *results_dir, const char *plots_dir, char *err,
                 size_t errlen)
{
	nm_thresh_row *rows;
	size_t n;
	read_bounds(c, results_dir, &rows, &n);
	int rc = nm_plot_case_rows(c, results_dir, plots_dir, rows, n, NULL, err, errlen);
	free(rows);
	return rc;
}

/* The y column's default (heat maps the status, lines the first relative
 * error), and what follows from it: a status plot, the heat map's z, the
 * accuracy output and the tolerance line */
static void spec_ycol(pl_spec *sp, const nm_case *c, const nm_csv *t, const nm_plot_cols *kc,
                      const char *series)
{
	if (!sp->ycol && !series) {
		/* default: heat maps show the status, lines the first relative error */
		sp->ycol = "status";
		for (size_t j = 0; !sp->heat && j < t->ncols; j++) {
			size_t l = strlen(t->cell[j]);
			if (l > 8 && strcmp(t->cell[j] + l - 8, ".rel_err") == 0) {
				sp->ycol = t->cell[j];
				break;
			}
		}
	}
	sp->ystatus = !series && strcmp(sp->ycol, "status") == 0;
	if (sp->heat && !sp->ystatus)
		sp->zname = sp->ycol;
	sp->accname = c->accuracy[0] ? c->accuracy : kc->nout ? kc->out[0] : "?";
	sp->tolline = NAN;
	{
		char accrel[64];
		snprintf(accrel, sizeof accrel, "%s.rel_err", sp->accname);
		if (!series && !sp->heat && strcmp(sp->ycol, accrel) == 0)
			sp->tolline = c->tolerance;
	}
}

/* A status along one axis as a strip chart, a row of cells per line: s
 * becomes the strip's cells and strip keeps the lines (their labels);
 * -1 when out of memory */
static int to_strip(pl_spec *sp, pl_set *s, pl_set *strip)
{
	pl_group *g = set_find(strip, "");
	for (size_t i = 0; g && i < s->n; i++)
		for (size_t j = 0; j < s->g[i].n; j++) {
			pl_pt p = s->g[i].p[j];
			p.z = (double)i;
			if (group_add(g, p)) {
				g = NULL;
				break;
			}
		}
	if (!g)
		return -1;
	pl_set t2 = *s;
	*s = *strip;
	*strip = t2; /* keeps the lines' labels */
	sp->strip = strip;
	sp->heat = true;
	return 0;
}

/* The axes from the points: ranges, log scales, labels (ylabel a buffer
 * for a column's label) and a heat map's panels */
static void spec_axes(pl_spec *sp, const nm_case *c, const pl_set *s, const char *series,
                      char *ylabel, size_t ylen)
{
	/* ranges */
	double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
	double zmin = INFINITY, zmax = -INFINITY, ypos = INFINITY;
	bool any_y = false;
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = 0; j < s->g[i].n; j++) {
			const pl_pt *p = &s->g[i].p[j];
			xmin = fmin(xmin, p->x);
			xmax = fmax(xmax, p->x);
			zmin = fmin(zmin, p->z);
			zmax = fmax(zmax, p->z);
			if (isfinite(p->y)) {
				any_y = true;
				ymin = fmin(ymin, p->y);
				ymax = fmax(ymax, p->y);
				if (p->y > 0)
					ypos = fmin(ypos, p->y);
			}
		}
	const char *lx = kv_get(c, "logx"), *ly = kv_get(c, "logy");
	sp->logx = want_log(lx, xmin, xmax);
	if (sp->heat) {
		sp->logy = !sp->strip && want_log(ly, zmin, zmax);
		sp->zlog = sp->zname && ypos < INFINITY && want_log(NULL, ypos, ymax);
		sp->zlo = ypos;
		sp->zhi = ymax > ypos ? ymax : ypos * 10;
	} else if (!sp->ystatus) {
		sp->logy = ypos < INFINITY && want_log(ly, ypos, ymax) && log_opt(ly) != 0;
		if (log_opt(ly) == 1 && ypos < INFINITY)
			sp->logy = true;
		if (!any_y) {
			sp->floor = sp->logy ? 0.1 : -1;
			sp->ceil = sp->logy ? 10 : 1;
		} else if (sp->logy) {
			sp->floor = ypos / 10;
			sp->ceil = ymax * 10;
		} else {
			double span = ymax > ymin ? ymax - ymin : fabs(ymax) > 0 ? fabs(ymax) : 1;
			sp->floor = ymin - 0.08 * span;
			sp->ceil = ymax + 0.08 * span;
		}
	}
	sp->xlabel = kv_get(c, "xlabel");
	if (!sp->xlabel)
		sp->xlabel = series ? "step" : sp->xname ? sp->xname : "";
	sp->ylabel = kv_get(c, "ylabel");
	if (!sp->ylabel)
		sp->ylabel = series      ? series
		             : sp->strip ? ""
		             : sp->heat  ? (c->naxes == 2 ? c->axes[1].name : "")
		                         : column_label(sp->ycol, ylabel, ylen);
	if (sp->strip) {
		sp->nvar = sp->npol = 1;
	} else if (sp->heat) {
		/* panels: rows = variants, columns = policies present */
		bool vs[256] = {false}, ps[256] = {false};
		for (size_t i = 0; i < s->n; i++) {
			vs[s->g[i].variant % 256] = true;
			ps[s->g[i].policy % 256] = true;
		}
		for (size_t i = 0; i < 256; i++) {
			sp->nvar += vs[i];
			sp->npol += ps[i];
		}
		if (sp->nvar * sp->npol < s->n) {
			sp->nvar = 1;
			sp->npol = s->n;
		}
	}
}

/* The gnuplot script: the PNG, then the SVG, of the same body */
static void write_script(FILE *fs, const pl_spec *sp, const pl_set *s, const char *dat,
                         const char *tpng, const char *tsvg)
{
	int w, h;
	if (sp->strip) {
		w = 1100;
		h = (int)(sp->strip->n * 16 + 150);
	} else if (sp->heat) {
		w = (int)(sp->npol * 330 + 60);
		h = (int)(sp->nvar * 280 + 70);
	} else {
		w = 1100;
		h = 560 + (s->n > 24 ? (int)(s->n - 24) * 14 : 0);
	}
	for (int term = 0; term < 2; term++) {
		if (term == 0)
			fprintf(fs,
			        "set terminal pngcairo size %d,%d font 'DejaVu Sans,9' noenhanced "
			        "background rgb 'white'\nset output ",
			        w, h);
		else
			fprintf(fs,
			        "reset\nset terminal svg size %d,%d fixed font 'DejaVu Sans,9' "
			        "noenhanced background rgb 'white'\nset output ",
			        w, h);
		gq(fs, term == 0 ? tpng : tsvg);
		fprintf(fs, "\n");
		if (sp->heat)
			heat_body(fs, sp, s, dat);
		else
			lines_body(fs, sp, s, dat);
		fprintf(fs, "unset output\n");
	}
}

int nm_plot_case_rows(const nm_case *c, const char *results_dir, const char *plots_dir,
                      const nm_thresh_row *rows, size_t nrows, const nm_plot_cols *cols,
                      char *err, size_t errlen)
{
	const char *gpname = getenv("NANMAP_GNUPLOT");
	char prog[1024];
	if (!find_prog(gpname && *gpname ? gpname : "gnuplot", prog, sizeof prog))
		return perr(err, errlen,
		            "gnuplot not found%s%s (install the Debian package gnuplot-nox)",
		            gpname && *gpname ? ": " : "", gpname && *gpname ? gpname : "");
	if (nm_plot_check(c, err, errlen))
		return -1;
	nm_plot_clean_stale(plots_dir, c->name); /* of runs killed before they ended */
	pl_spec sp = {.c = c, .bounds = rows, .nbounds = nrows};
	const char *series = kv_get(c, "series");
	const char *type = kv_get(c, "type");
	const char *backend = kv_get(c, "backend");
	if (!backend)
		backend = "fast";
	sp.series = series != NULL;
	sp.heat = !series && (type ? strcmp(type, "heatmap") == 0 : c->naxes == 2);
	sp.ycol = kv_get(c, "y");
	sp.xname = kv_get(c, "x");
	if (!sp.xname && c->naxes)
		sp.xname = c->axes[0].name;
	sp.title = kv_get(c, "title");
	if (!sp.title)
		sp.title = *c->title ? c->title : c->name;

	char path[1024];
	snprintf(path, sizeof path, "%s/%s%s.csv", results_dir, c->name, series ? "-series" : "");
	nm_csv t;
	nm_plot_cols kc;
	char why[512];
	if (cols)
		kc = *cols;
	else if (nm_plot_columns(c, &kc, why, sizeof why))
		return perr(err, errlen, "%s: the kernel's outputs (one run of the first point): %s",
		            c->path, why);
	if (nm_plot_read_results(c, &kc, path, series != NULL, &t, err, errlen))
		return -1;
	spec_ycol(&sp, c, &t, &kc, series);

	pl_set s = {0};
	int rc = load_points(&sp, c, &t, series, backend, &s, path, err, errlen);
	char dat[1100] = "", gp[1100] = "", elog[1100] = "", tpng[1100] = "", tsvg[1100] = "";
	char opng[1100], osvg[1100];
	FILE *fd = NULL, *fs = NULL;
	if (rc)
		goto out;
	pl_set strip = {0};
	if (!sp.heat && sp.ystatus && !series && to_strip(&sp, &s, &strip) != 0) {
		rc = perr(err, errlen, "out of memory");
		set_free(&strip);
		goto out;
	}
	char ylabel[160];
	spec_axes(&sp, c, &s, series, ylabel, sizeof ylabel);

	if (make_tmp(dat, sizeof dat, plots_dir, c->name, "dat", &fd) ||
	    make_tmp(gp, sizeof gp, plots_dir, c->name, "gp", &fs)) {
		rc = perr(err, errlen, "%s: cannot create a temporary file: %s", plots_dir,
		          strerror(errno));
		goto out;
	}
	errno = 0;
	rc = sp.heat ? write_heat_data(fd, &sp, &s) : write_lines_data(fd, &sp, &s);
	if (rc || fflush(fd) != 0 || ferror(fd)) {
		rc = perr(err, errlen, "%s: write failed: %s", dat, strerror(errno ? errno : EIO));
		goto out;
	}
	{
		FILE *f = fd;
		fd = NULL;
		if (fclose(f) != 0) {
			rc = perr(err, errlen, "%s: write failed: %s", dat, strerror(errno));
			goto out;
		}
	}
	snprintf(opng, sizeof opng, "%s/%s.png", plots_dir, c->name);
	snprintf(osvg, sizeof osvg, "%s/%s.svg", plots_dir, c->name);
	if (make_tmp(tpng, sizeof tpng, plots_dir, c->name, "png", NULL) ||
	    make_tmp(tsvg, sizeof tsvg, plots_dir, c->name, "svg", NULL) ||
	    make_tmp(elog, sizeof elog, plots_dir, c->name, "log", NULL)) {
		rc = perr(err, errlen, "%s: cannot create a temporary file: %s", plots_dir,
		          strerror(errno));
		goto out;
	}
	write_script(fs, &sp, &s, dat, tpng, tsvg);
	errno = 0;
	if (fflush(fs) != 0 || ferror(fs)) {
		rc = perr(err, errlen, "%s: write failed: %s", gp, strerror(errno ? errno : EIO));
		goto out;
	}
	{
		FILE *f = fs;
		fs = NULL;
		if (fclose(f) != 0) {
			rc = perr(err, errlen, "%s: write failed: %s", gp, strerror(errno));
			goto out;
		}
	}
	{ /* both are read back whole before either is renamed */
		char *tmp[2] = {tpng, tsvg};
		const char *outs[2] = {opng, osvg};
		const bool png[2] = {true, false};
		rc = render(prog, gp, elog, tmp, outs, png, 2, err, errlen);
	}
out:
	if (fd)
		fclose(fd);
	if (fs)
		fclose(fs);
	nm_file_discard(tpng);
	nm_file_discard(tsvg);
	nm_file_discard(elog);
	nm_file_discard(dat);
	nm_file_discard(gp);
	set_free(&s);
	if (sp.strip)
		set_free(&strip);
	nm_csv_free(&t);
	return rc;
}

/* ---- curves: several series against one x (nanmap train's losses) ---- */

int nm_plot_curves(const char *out, const char *title, const char *xlabel, const char *ylabel,
                   bool logy, size_t nseries, const char *const *names, const double *x,
                   const double *const *y, size_t npts, char *err, size_t errlen)
{
	const char *gpname = getenv("NANMAP_GNUPLOT");
	char prog[1024];
	size_t ol = strlen(out);
	bool png = ol > 4 && !strcmp(out + ol - 4, ".png");
	if (!png && !(ol > 4 && !strcmp(out + ol - 4, ".svg")))
		return perr(err, errlen, "%s: a plot is .png or .svg", out);
	if (!find_prog(gpname && *gpname ? gpname : "gnuplot", prog, sizeof prog))
		return perr(err, errlen,
		            "gnuplot not found%s%s (install the Debian package gnuplot-nox)",
		            gpname && *gpname ? ": " : "", gpname && *gpname ? gpname : "");
	char dir[1100];
	const char *slash = strrchr(out, '/');
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - out) : 1, slash ? out : ".");
	if (!*dir)
		snprintf(dir, sizeof dir, "/");
	const char *base = slash ? slash + 1 : out;
	char dat[1100] = "", gp[1100] = "", elog[1100] = "", tout[1100] = "";
	FILE *fd = NULL, *fs = NULL;
	int rc = 0;
	if (make_tmp(dat, sizeof dat, dir, base, "dat", &fd) ||
	    make_tmp(gp, sizeof gp, dir, base, "gp", &fs) ||
	    make_tmp(tout, sizeof tout, dir, base, png ? "png" : "svg", NULL) ||
	    make_tmp(elog, sizeof elog, dir, base, "log", NULL)) {
		rc = perr(err, errlen, "%s: cannot create a temporary file: %s", dir,
		          strerror(errno));
		goto out;
	}
	/* one block a series; NaN, inf and (logy) non-positive values are gaps */
	for (size_t k = 0; k < nseries; k++) {
		for (size_t i = 0; i < npts; i++) {
			double v = y[k][i];
			if (isfinite(v) && (!logy || v > 0))
				fprintf(fd, "%.17g %.17g\n", x[i], v);
			else
				fprintf(fd, "\n");
		}
		fprintf(fd, "NaN NaN\n\n\n");
	}
	errno = 0;
	if (fflush(fd) != 0 || ferror(fd)) {
		rc = perr(err, errlen, "%s: write failed: %s", dat, strerror(errno ? errno : EIO));
		goto out;
	}
	fprintf(fs,
	        "set terminal %s size 1000,560 %sfont 'DejaVu Sans,9' noenhanced background "
	        "rgb 'white'\nset output ",
	        png ? "pngcairo" : "svg", png ? "" : "fixed ");
	gq(fs, tout);
	fprintf(fs, "\nset title ");
	gq(fs, title);
	fprintf(fs, "\nset xlabel ");
	gq(fs, xlabel);
	fprintf(fs, "\nset ylabel ");
	gq(fs, ylabel);
	fprintf(fs, "\nset grid\nset key outside right top\n%s", logy ? "set logscale y\n" : "");
	fprintf(fs, "plot ");
	for (size_t k = 0; k < nseries; k++) {
		fprintf(fs, "%s", k ? ", \\\n     " : "");
		gq(fs, dat);
		fprintf(fs, " index %zu using 1:2 with lines lw 1.5 title ", k);
		gq(fs, names[k]);
	}
	fprintf(fs, "\nunset output\n");
	errno = 0;
	if (fflush(fs) != 0 || ferror(fs)) {
		rc = perr(err, errlen, "%s: write failed: %s", gp, strerror(errno ? errno : EIO));
		goto out;
	}
	{
		char *tmp[1] = {tout};
		rc = render(prog, gp, elog, tmp, &out, &png, 1, err, errlen);
	}
out:
	if (fd)
		fclose(fd);
	if (fs)
		fclose(fs);
	nm_file_discard(tout);
	nm_file_discard(elog);
	nm_file_discard(dat);
	nm_file_discard(gp);
	return rc;
}

/* ---- nanmap plot ---- */

static const char plot_usage[] =
    "usage: nanmap plot CASE.case [--results DIR] [--plots DIR]\n"
    "\n"
    "Redraw DIR/<case>.png and .svg (default plots/) from the sweep's CSV of\n"
    "the case (default results/<case>.csv) with gnuplot, as its [plot]\n"
    "section asks (cases/README.md). Nothing is recomputed.\n"
    "Example: nanmap plot tests/data/sweep_tiny.case (after nanmap sweep on it)\n";

enum { PL_O_RESULTS, PL_O_PLOTS };

static const nm_opt plot_optdefs[] = {
    {NULL, "--results", PL_O_RESULTS, NM_OPTF_VALUE, 0},
    {NULL, "--plots", PL_O_PLOTS, NM_OPTF_VALUE, 0},
};

struct plot_opts {
	const char *path, *results, *plots;
};

static int plot_take(void *ctx, const nm_opt *d, const char *v)
{
	struct plot_opts *o = ctx;

	*(d->id == PL_O_RESULTS ? &o->results : &o->plots) = v;
	return 0;
}

static int plot_arg(void *ctx, const char *a)
{
	struct plot_opts *o = ctx;

	if (o->path)
		return nm_fail("plot: one case file at a time ('%s' and '%s')", o->path, a);
	o->path = a;
	return 0;
}

int nm_plot_main(int argc, char **argv)
{
	struct plot_opts o = {NULL, "results", "plots"};

	if (nm_wants_help(argc - 1, argv + 1))
		return nm_print_help(plot_usage);
	if (nm_opt_parse(&(nm_optparser){.cmd = "plot",
	                                 .defs = plot_optdefs,
	                                 .ndefs = sizeof(plot_optdefs) / sizeof(plot_optdefs[0]),
	                                 .take = plot_take,
	                                 .arg = plot_arg,
	                                 .ctx = &o},
	                 argc - 1, argv + 1))
		return NM_EXIT_ERR;
	const char *path = o.path, *results = o.results, *plots = o.plots;
	if (!path)
		return nm_fail("plot: missing CASE.case (try: nanmap plot --help)");
	nm_case c;
	char err[768];
	if (nm_case_load(path, &c, err, sizeof err))
		return nm_fail("%s", err);
	int rc = nm_plot_case(&c, results, plots, err, sizeof err);
	nm_case_free(&c);
	return rc ? nm_fail("%s", err) : 0;
}
