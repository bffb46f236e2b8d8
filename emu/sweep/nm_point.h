/*
 * nm_point.h — one point of a sweep: the input the case's generator makes
 * for the axis values, the kernel run on one backend, its status and
 * metrics. The sweep (nm_sweep.c), the thresholds (nm_thresh.c) and the
 * claims (nm_claims.c) all evaluate points through here.
 */
#ifndef NANMAP_NM_POINT_H
#define NANMAP_NM_POINT_H

#include "emu/sweep/nm_case.h"

typedef struct {
	const nm_case *c;
	size_t variant, policy;          /* indexes into c->variants, c->policies */
	double axis[NM_CASE_MAX_AXES];   /* one value per axis of c */
} nm_point;

#define NM_POINT_MAX_OUT EMU_KOUT_MAX
typedef struct {
	emu_run_status status;
	bool has_first;                  /* an op raised overflow, invalid or divbyzero */
	char first_op[16], first_step[32];
	uint64_t first_index;
	size_t nout;
	struct {
		char name[24];
		double max_ulp, rel_err;     /* end to end (docs/run.md); NAN without truth */
		double arith_max_ulp, arith_rel_err; /* against the stored inputs' truth */
		size_t lost;
		double maxabs;               /* largest finite |value| on this backend */
		size_t n;
	} out[NM_POINT_MAX_OUT];
	bool has_fractions;              /* backward: zero, subnormal, lost, overflow */
	double fractions[4];
	uint64_t in_n, in_flushed;       /* input elements stored, and those flushed to 0 */
} nm_point_result;

/* The accuracy verdict of r (docs/sweep.md): the end-to-end relative error
 * of c's accuracy output (its first when the case names none) against
 * c->tolerance. */
typedef enum {
	NM_VERDICT_NONE = -1, /* no error known (truth = no, a NaN truth) */
	NM_VERDICT_ACCURATE = 0,
	NM_VERDICT_INACCURATE = 1, /* rel_err > tolerance (inf for a NaN or infinite output) */
} nm_verdict;
nm_verdict nm_point_verdict(const nm_case *c, const nm_point_result *r);
/* "-", "accurate", "inaccurate" */
const char *nm_verdict_name(nm_verdict v);
/* The output the verdict judges (c->accuracy, or r's first): its index in
 * r->out, or r->nout when r has no such output. */
size_t nm_point_accuracy_out(const nm_case *c, const nm_point_result *r);
/* How much a flush took: the largest fraction of one tensor lost to zero,
 * the inputs as stored or any output (0 … 1). */
double nm_point_flushed(const nm_point_result *r);

/* Evaluate p on backend kind (FAST or EXACT), with the truth run for metrics
 * when truth is set. series: when not NULL, receives the values of the
 * named outputs (caller frees *series_vals). 0, or -1 with a reason. */
int nm_point_eval(const nm_point *p, emu_be_kind kind, bool truth, nm_point_result *r,
                  char *err, size_t errlen);

/* p on each of the nk backends kinds[] (FAST, EXACT) into r[0..nk-1], with
 * ONE truth run shared by all of them when truth is set (nm_point_eval runs
 * truth each time). 0, or -1 with a reason. */
int nm_point_eval_kinds(const nm_point *p, const emu_be_kind *kinds, size_t nk, bool truth,
                        nm_point_result *r, char *err, size_t errlen);

/* The input tensor of p (rows × cols, malloc'd) and its shape. */
int nm_point_input(const nm_point *p, double **x, size_t *rows, size_t *cols, char *err,
                   size_t errlen);

/* nm_point_eval, and from the same run on kind the values of the outputs
 * names[0 .. nnames − 1] as series: vals[i] (malloc'd, ns[i] of them; the
 * caller frees; all NULL after an error). 0, or -1 with a reason. */
int nm_point_eval_series(const nm_point *p, emu_be_kind kind, bool truth, nm_point_result *r,
                         const char *const *names, size_t nnames, double **vals, size_t *ns,
                         char *err, size_t errlen);

/* p on TRUTH with format ranges (kern.h, emu_be.range): the exact
 * computation on the exact input, with the overflow and underflow each
 * value would raise in the format its operation names. */
typedef struct {
	unsigned flags;                  /* every flag the run raised (EMU_FLAG_*) */
	bool has_first;                  /* a value left its format's range (or NaN) */
	char first_op[16], first_step[32];
	uint64_t first_index;
	bool lost;                       /* an output nonzero in truth rounds to 0 in its format */
	double peak;                     /* emu_be.range_peak: log2 of the largest |v| / threshold */
} nm_point_range;
int nm_point_truth_range(const nm_point *p, nm_point_range *r, char *err, size_t errlen);

#endif
