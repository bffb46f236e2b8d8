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

#include <stddef.h>

#include "nm_case.h"

/* A CSV file held whole: ncols fields per record, record 0 is the header. */
typedef struct {
	char **cell; /* nrec × ncols, row-major */
	size_t ncols, nrec;
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

/* Render plots_dir/<c->name>.png and .svg from results_dir. 0, or -1 with a
 * reason in err (gnuplot absent: names the Debian package). The gnuplot
 * program is $NANMAP_GNUPLOT when set, else "gnuplot" on PATH. */
int nm_plot_case(const nm_case *c, const char *results_dir, const char *plots_dir, char *err,
                 size_t errlen);

/* `nanmap plot CASE.case [--results DIR] [--plots DIR]`; argv[0] is "plot".
 * The exit status: 0, or 2 after one error line. */
int nm_plot_main(int argc, char **argv);

#endif
