/*
 * nm_plot.h — a sweep case's plot: plots/<case>.png and .svg rendered by
 * gnuplot from results/<case>.csv (or <case>-series.csv), as the case's
 * [plot] section asks (cases/README.md lists the keys). Lines for one axis,
 * heat maps (one panel per variant × policy) for two. Rendering is
 * deterministic: the same CSV gives the same bytes.
 *
 * Also the small RFC 4180 reader the claims report shares.
 */
#ifndef NANMAP_NM_PLOT_H
#define NANMAP_NM_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "emu/sweep/nm_case.h"
#include "emu/sweep/nm_point.h"
#include "emu/sweep/nm_thresh.h"

/* A CSV file held whole: ncols fields per record, record 0 is the header. */
typedef struct {
	char **cell; /* nrec × ncols, row-major */
	size_t ncols, nrec;
	size_t *line; /* nrec: the line each record starts on (1 = the header) */
} nm_csv;

/* Read path; every record must have the header's field count. 0, or -1
 * with "PATH:LINE: reason" in err. */
int nm_csv_read(const char *path, nm_csv *t, char *err, size_t errlen);
void nm_csv_free(nm_csv *t);
/* The index of the header field name, or -1. */
int nm_csv_col(const nm_csv *t, const char *name);
/* Field col of data row r (0 = the first record after the header). */
const char *nm_csv_get(const nm_csv *t, size_t r, int col);
/* A number as the runner writes it (%.17g, inf, -inf, nan); NaN if empty or bad. */
double nm_csv_num(const char *s);
/* ok 0, underflow 1, overflow 2, inf 3, nan 4; -1 for anything else. */
int nm_status_code(const char *s);

/* Check c's [plot] keys: 0, or -1 with "FILE:LINE: key 'K': reason". */
int nm_plot_check(const nm_case *c, char *err, size_t errlen);

/* The columns a case's results CSV has (nm_plot_cols, emu/sweep/nm_case.h):
 * c->plot_cols when nm_plot_check_columns kept them, else from one fast run of
 * the case's first point. */
int nm_plot_columns(const nm_case *c, nm_plot_cols *cols, char *err, size_t errlen);
/* The columns of a run of the case's first point on the fast backend (the
 * point's truth run, where it has one, adds no columns). */
void nm_plot_cols_of(const nm_point_result *r, nm_plot_cols *cols);

/* Read path, the results CSV of c (series: <case>-series.csv) with the
 * columns cols, and check it as nm_plot_case does: the header exactly the
 * case's, as many rows as its full or quick grid gives, each row's case,
 * kernel, variant, policy, axis values and backend those of its point,
 * known statuses, numbers that parse. 0, or -1 with "PATH:LINE: reason"
 * and t empty. */
int nm_plot_read_results(const nm_case *c, const nm_plot_cols *cols, const char *path,
                         bool series, nm_csv *t, char *err, size_t errlen);

/* Does c name results columns ([plot] y, series, accuracy) that the
 * kernel's outputs must have? */
bool nm_plot_wants_columns(const nm_case *c);
/* nm_plot_columns into c->plot_cols, once. 0, or -1 with why in err. */
int nm_plot_keep_columns(nm_case *c, char *err, size_t errlen);

/* nm_plot_check, and the names the plot and the series take from the
 * results: [plot] y a column of the CSV, [case] series outputs of the
 * kernel. What the sweep runs before any point; the columns it found are
 * kept in c->plot_cols for the case's plot. 0, or -1 with one line. */
int nm_plot_check_columns(nm_case *c, char *err, size_t errlen);

/* Can files be created in dir: access(W_OK), then a temporary file made
 * and removed (root passes access on a read-only mount). 0, or -1 with
 * "DIR: not writable: reason". */
int nm_dir_writable(const char *dir, char *err, size_t errlen);

/* Remove dir's probe files (.nanmap-probe.PID.XXXXXX) that nm_dir_writable
 * runs killed between making and removing them left, PID not a live
 * process. Returns how many were removed. */
size_t nm_dir_probe_clean(const char *dir);

/* Remove dir's temporaries of case name left by nm_plot_case runs that are
 * gone: .NAME.WHAT.PID.XXXXXX (WHAT: dat gp png svg log) whose PID is not a
 * live process. Returns how many were removed. */
size_t nm_plot_clean_stale(const char *dir, const char *name);

/* Render plots_dir/<c->name>.png and .svg from results_dir. 0, or -1 with a
 * reason in err (gnuplot absent: names the Debian package). The CSV is
 * checked first (header, row count, names, statuses, numbers: "FILE:LINE:
 * reason"), and what gnuplot wrote before it is renamed into place (a whole
 * PNG ending in IEND, an SVG ending in </svg>). The gnuplot
 * program is $NANMAP_GNUPLOT when set, else "gnuplot" on PATH. */
int nm_plot_case(const nm_case *c, const char *results_dir, const char *plots_dir, char *err,
                 size_t errlen);
/* nm_plot_case with the case's bisected boundaries given (the sweep's rows
 * of c; nm_plot_case reads them from results_dir/thresholds.csv, none when
 * it has none): a 2-D heat map marks each row's first bad value with a
 * cross, on the line of the other axis's value it was searched along, in
 * the panel of its variant and policy, so a boundary between two grid
 * points shows. Other plots ignore them. cols: the CSV's columns when the
 * caller has them (the sweep, from its first point), else NULL. */
int nm_plot_case_rows(const nm_case *c, const char *results_dir, const char *plots_dir,
                      const nm_thresh_row *rows, size_t nrows, const nm_plot_cols *cols,
                      char *err, size_t errlen);

/* `nanmap plot CASE.case [--results DIR] [--plots DIR]`; argv[0] is "plot".
 * The exit status: 0, or 2 after one error line. */
/* Curves y[k][0..npts) of nseries series against x in one plot at out
 * (.png or .svg by its name), through a temporary read back whole before
 * the rename; NaN, inf and (logy) non-positive values are gaps. 0, or -1
 * with one line in err. */
int nm_plot_curves(const char *out, const char *title, const char *xlabel, const char *ylabel,
                   bool logy, size_t nseries, const char *const *names, const double *x,
                   const double *const *y, size_t npts, char *err, size_t errlen);
int nm_plot_main(int argc, char **argv);

#endif
