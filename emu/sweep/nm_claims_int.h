/*
 * nm_claims_int.h — what the claims' files share (emu/sweep/nm_claims.c,
 * the kernel-level claims and the report; nm_claims_train.c, the parts
 * settled in whole training runs): a claim's context, a case's results as
 * read back from its CSV, and the readers over them.
 */
#ifndef NANMAP_NM_CLAIMS_INT_H
#define NANMAP_NM_CLAIMS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "emu/io/nm_buf.h"
#include "emu/sweep/nm_case.h"
#include "emu/sweep/nm_plot.h"

typedef enum { V_UNSETTLED = 0, V_TRUE, V_FALSE, V_PARTLY } cl_verdict;

/* what one claim sees */
typedef struct {
	nm_case *const *cases;
	size_t n;
	const char *dir;
	nm_csv thr;
	bool have_thr;
	nm_buf num, why;   /* the numbers (bullets) and the paragraph */
	char missing[512]; /* why the claim is unsettled */
	char used[512];    /* the cases read */
} cl_ctx;

/* one case's results */
typedef struct {
	const nm_case *c;
	nm_csv t;
	int cv, cp, cb, cs, ca[NM_CASE_MAX_AXES];
} cl_res;

/* The results of claim id's case whose [claim] part is part (NULL: the
 * claim's own case, no part or one not starting with "model"); false, with
 * x->missing set, when there is none or its CSV cannot be read. */
bool cl_load(cl_ctx *x, int id, const char *part, cl_res *r);
void cl_unload(cl_res *r);
size_t cl_nrows(const cl_res *r);
/* Row i is on the fast backend and matches variant / policy (NULL: any). */
bool cl_match(const cl_res *r, size_t i, const char *variant, const char *policy);
/* Row i's value of axis a, its status code (nm_status_code), a column's number. */
double cl_axis(const cl_res *r, size_t i, size_t a);
int cl_status(const cl_res *r, size_t i);
double cl_num(const cl_res *r, size_t i, const char *col);
/* A status that says the format broke by overflow (not underflow). */
bool cl_overflowed(int st);
const char *cl_stname(int st);
/* The threshold row of case c, variant, policy whose axis starts with
 * axname; its event must contain event (NULL: any). -1 when none. */
long cl_thr_find(const cl_ctx *x, const nm_case *c, const char *variant, const char *policy,
                 const char *axname, const char *event);
double cl_thr_num(const cl_ctx *x, long row, const char *col);

/* ---- the parts settled in whole training runs (nm_claims_train.c) ----
 * Each adds its bullets and sentences when its case (part = model...) has
 * results, and says what the runs show for the verdict: 1 supports the
 * statement, 0 contradicts it, -1 no runs (x->missing left as it was). */
int cl_model4(cl_ctx *x);
int cl_model8(cl_ctx *x);
int cl_model9(cl_ctx *x);
int cl_model16(cl_ctx *x);

#endif
