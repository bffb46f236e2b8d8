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

#include "emu/core/emu.h"
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

/* shared helpers (nm_claims.c) */
const char *cl_vname(cl_verdict v);
bool cl_has_col(const cl_res *r, const char *col);
/* Where a 1-D sweep of (variant, policy) first reaches a status for which
 * bad() holds, walking up the axis: (last good, first bad); NAN when never. */
void cl_grid_first(const cl_res *r, const char *variant, const char *policy, bool (*bad)(int),
                   double *last_ok, double *first_bad);
/* The largest axis value at which the status is bad, walking up. */
void cl_grid_last(const cl_res *r, const char *variant, const char *policy, bool (*bad)(int),
                  double *last_bad, double *first_ok);
bool cl_is_underflow(int st);
/* Overflow threshold under RNE: max + half an ulp of max. */
double cl_ovf_threshold(const emu_format *f);
/* A kernel-level verdict with what the claim's training runs showed. */
cl_verdict cl_with_runs(cl_verdict v, int runs);
/* Every column is in r's CSV, else false with x->missing set. */
bool cl_need_cols(cl_ctx *x, const cl_res *r, const char *const *cols, size_t n);
/* The first fast row of variant and policy at axis values a0 (and a1 unless
 * NAN); -1 when none. */
long cl_row_vp(const cl_res *r, const char *variant, const char *policy, double a0, double a1);

/* ---- the claims, one function each (nm_claims_formats.c, _recipes.c,
 * _kernels.c, _attn.c), in the order of docs/claims.md ---- */
cl_verdict cl_claim_fp16_range(cl_ctx *x);
cl_verdict cl_claim_scaled_loss(cl_ctx *x);
cl_verdict cl_claim_ce_float(cl_ctx *x);
cl_verdict cl_claim_layernorm_eps(cl_ctx *x);
cl_verdict cl_claim_gradacc_divide(cl_ctx *x);
cl_verdict cl_claim_bf16_vs_fp16(cl_ctx *x);
cl_verdict cl_claim_sum_stall(cl_ctx *x);
cl_verdict cl_claim_fp8_scaling(cl_ctx *x);
cl_verdict cl_claim_gradscaler_settings(cl_ctx *x);
cl_verdict cl_claim_bce_float(cl_ctx *x);
cl_verdict cl_claim_batchnorm_var(cl_ctx *x);
cl_verdict cl_claim_apex_o2(cl_ctx *x);
cl_verdict cl_claim_scale_65536(cl_ctx *x);
cl_verdict cl_claim_einsum_fp16(cl_ctx *x);
cl_verdict cl_claim_recompute_fp16(cl_ctx *x);
cl_verdict cl_claim_bf16_unscaled(cl_ctx *x);
cl_verdict cl_claim_mx_floor(cl_ctx *x);
cl_verdict cl_claim_nvfp4_vs_mxfp4(cl_ctx *x);
cl_verdict cl_claim_rht_outliers(cl_ctx *x);
cl_verdict cl_claim_sr_unbiased(cl_ctx *x);
cl_verdict cl_claim_e8m0_ftz(cl_ctx *x);
cl_verdict cl_claim_rmsnorm_256(cl_ctx *x);
cl_verdict cl_claim_adam_eps(cl_ctx *x);
cl_verdict cl_claim_online_softmax(cl_ctx *x);
cl_verdict cl_claim_fp8_p_scale(cl_ctx *x);

/* ---- the parts settled in whole training runs (nm_claims_train.c) ----
 * Each adds its bullets and sentences when its case (part = model...) has
 * results, and says what the runs show for the verdict: 1 supports the
 * statement, 0 contradicts it, -1 no runs (x->missing left as it was). */
int cl_model4(cl_ctx *x);
int cl_model8(cl_ctx *x);
int cl_model9(cl_ctx *x);
int cl_model16(cl_ctx *x);

#endif
