/*
 * nm_thresh.h — the exact boundaries of a sweep (docs/thresholds-method.md).
 *
 * The sweep hands over the statuses it computed on the grid; wherever two
 * neighbours along a monotone axis differ, the axis is bisected over the
 * values its domain allows down to two adjacent ones (last_ok, first_bad),
 * the pair is confirmed on the exact-format backend, and the real-valued
 * boundary of the exact computation is bisected on TRUTH with format ranges.
 */
#ifndef NANMAP_NM_THRESH_H
#define NANMAP_NM_THRESH_H

#include <stdbool.h>
#include <stddef.h>

#include "emu/sweep/nm_case.h"

typedef struct {
	char case_name[64], kernel[32], variant[48], policy[192];
	char axis[96];        /* "NAME", or "NAME@OTHER=VALUE" on a 2-D case */
	char event[48];       /* status at first_bad, or "FROM->TO" when neither is ok, or
	                         "OUT.rel_err>TOL" where the accuracy verdict turns */
	double last_ok, first_bad;
	char last_hex[72], first_hex[72]; /* exact forms for the table ("fp16 0x498b", "0x1.8p+3") */
	double real_boundary; /* NAN when it cannot be defined */
	char first_op[64];    /* "KIND@STEP", "-", or "unconfirmed" */
	/* not written to the CSV: how the row was found */
	size_t variant_i, policy_i, axis_i;
	nm_axis_domain domain;
	int steps;            /* fast evaluations of the bisection */
	int truth_steps;      /* TRUTH-with-ranges evaluations */
	bool confirmed;
	double seconds;       /* wall time of the search (for benchmarks; varies) */
} nm_thresh_row;

/*
 * The thresholds of case c. grid holds the status of every point of the
 * grid this run used (the --quick grids when quick), in the sweep's order:
 *   index = ((variant · npolicies + policy) · n0 + i0) · n1 + i1
 * with n0, n1 the axes' grid sizes (n1 = 1 for a 1-D case). *rows is
 * malloc'd (NULL when *n is 0); free it with free(). The rows are in a fixed
 * order (variant, policy, axis, line, position), whatever the thread count.
 * 0, or -1 with a reason in err.
 */
int nm_thresh_case(const nm_case *c, bool quick, const emu_run_status *grid, nm_thresh_row **rows,
                   size_t *n, char *err, size_t errlen);
/*
 * As nm_thresh_case, and when c sets its tolerance (c->tolerance_set) and
 * verdict is not NULL (the nm_verdict of every grid point, same order), the
 * accuracy boundaries too: wherever two neighbours' verdicts are accurate
 * and inaccurate, the axis is bisected on the fast backend with truth to
 * the adjacent pair where the error of the accuracy output first exceeds
 * the tolerance; event "OUT.rel_err>TOL", confirmed on the exact backend,
 * first_failing_op "-", real_boundary NAN (the exact computation has no
 * error to cross it).
 */
int nm_thresh_case_acc(const nm_case *c, bool quick, const emu_run_status *grid,
                       const signed char *verdict, nm_thresh_row **rows, size_t *n, char *err,
                       size_t errlen);

/*
 * Write rows (of every case, in the order given) to csv_path
 * (case,kernel,variant,policy,axis,event,last_ok,first_bad,real_boundary,
 * first_failing_op) and md_path (one table per case), each through
 * nm_file_update (not written when it already holds these bytes); either
 * path may be NULL. 0, or -1 with a reason in err.
 */
int nm_thresh_write(const nm_thresh_row *rows, size_t n, const char *csv_path,
                    const char *md_path, char *err, size_t errlen);

/*
 * As nm_thresh_write, for a sweep of some cases (--only, or case files of
 * one's own beside docs/ of all of cases/): each file keeps what it already
 * holds for every case not in owned[0..nowned), in its place; an owned
 * case (whose rows this run computed or found up to date; rows holds them)
 * has its old rows replaced by its new ones, or dropped when it has none.
 * A case new to a file goes next to its neighbours in order[0..norder) (the
 * cases the sweep loaded, in its order). A file holding no other case's rows
 * is written as nm_thresh_write writes it. *kept (may be NULL): the number of
 * cases whose rows md_path kept. 0, or -1 with a reason in err.
 */
int nm_thresh_update(const nm_thresh_row *rows, size_t n, const char *const *owned, size_t nowned,
                     const char *const *order, size_t norder, const char *csv_path,
                     const char *md_path, size_t *kept, char *err, size_t errlen);

#endif
