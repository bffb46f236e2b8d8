/*
 * nm_case.h — a sweep case file (cases/NAME.case, INI read with inih;
 * cases/README.md is the reference): one kernel, its variants, a list of
 * precision policies, the input generator, fixed parameters and one or two
 * axes. Every (variant, policy, axis value[, axis value]) is a point.
 */
#ifndef NANMAP_NM_CASE_H
#define NANMAP_NM_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/engine/kernels.h"
#include "emu/io/nm_gen.h"

#define NM_CASE_MAX_AXES 2
#define NM_CASE_MAX_PARAMS 16
#define NM_CASE_MAX_KV 32
#define NM_CASE_TOLERANCE 0.01 /* the default tolerance: 1 % */

/* What an axis value sets. */
typedef enum {
	NM_SET_SCALE = 0, /* the generator's scale X (with maxabs: the largest |x|) */
	NM_SET_COLS,      /* elements per row (an integer) */
	NM_SET_ROWS,      /* rows (an integer) */
	NM_SET_PARAM,     /* the kernel parameter axis.param */
	NM_SET_OUTLIER_K, /* the generator's outlier factor K */
	NM_SET_OUTLIER_FRAC, /* the generator's outlier frequency F (0 … 1) */
} nm_axis_target;

/* Which values bisection may visit between two grid points. */
typedef enum {
	NM_DOM_REAL = 0, /* doubles */
	NM_DOM_STORAGE,  /* values of the policy's storage format */
	NM_DOM_COMPUTE,  /* values of the policy's compute format */
	NM_DOM_INT,      /* integers */
	NM_DOM_POW2,     /* powers of two */
} nm_axis_domain;

typedef struct {
	char name[32];      /* from the section name "[axis NAME]" */
	nm_axis_target target;
	char param[32];     /* NM_SET_PARAM: the parameter's name */
	nm_axis_domain domain;
	bool monotone;      /* thresholds are searched along it (default yes) */
	double *values;     /* the full grid, ascending */
	size_t nvalues;
	double *quick;      /* the --quick grid, ascending (default: every k-th value) */
	size_t nquick;
} nm_axis;

/* A key = value of a section the sweep engine does not interpret itself
 * ([plot], [claim]); kept with its line for error messages. */
typedef struct {
	char section[16], key[32];
	char *value;
	int line;
} nm_case_kv;

/* The columns a case's results CSV has, known before any point runs: the
 * kernel's output names (in the order it adds them) from one fast run of the
 * case's first point, and whether it is a backward run (frac_* columns);
 * nm_plot_columns (emu/sweep/nm_plot.h) finds them. */
typedef struct {
	char out[EMU_KOUT_MAX][24];
	size_t nout;
	bool fractions;
} nm_plot_cols;

typedef struct {
	char path[512];
	char name[64];  /* the file name without directory and ".case" */
	char title[160];
	const emu_kernel *kernel;
	char **variants; /* names, each a variant of kernel */
	size_t nvariants;
	char **policy_specs; /* as written, after {fmt} expansion */
	emu_policy *policies;
	size_t npolicies;
	nm_gen gen;         /* the input generator; gen.seed is also the kernel's seed */
	size_t rows, cols;  /* the input's shape unless an axis sets it */
	bool maxabs;        /* rescale the generated tensor so max |x| is exactly the scale */
	emu_kparam params[NM_CASE_MAX_PARAMS];
	char param_names[NM_CASE_MAX_PARAMS][32];
	size_t nparams;
	nm_axis axes[NM_CASE_MAX_AXES];
	size_t naxes;
	bool truth;         /* run the truth backend for metrics (default yes) */
	bool exact;         /* also run the exact-format backend at every point (default no) */
	/* the accuracy verdict (cases/README.md): the end-to-end relative error
	 * of output `accuracy` ("" = the kernel's first) above `tolerance` is
	 * "inaccurate"; tolerance_set: the case gave it, and the sweep then
	 * bisects the verdict's changes as it bisects the statuses' */
	double tolerance;   /* default NM_CASE_TOLERANCE */
	bool tolerance_set;
	char accuracy[24];
	char **series;      /* output arrays written whole to <case>-series.csv */
	size_t nseries;
	nm_case_kv kv[NM_CASE_MAX_KV];
	size_t nkv;
	uint64_t hash;      /* of the file's bytes (resume checks it) */
	/* the columns, kept by nm_plot_check_columns (its run of the first
	 * point) for the case's plot, which would otherwise run it again */
	nm_plot_cols plot_cols;
	bool plot_cols_known;
} nm_case;

/* Read and check a case file. 0, or -1 with "FILE:LINE: key 'K': reason"
 * (or "FILE: reason") in err; c is then empty. */
int nm_case_load(const char *path, nm_case *c, char *err, size_t errlen);
void nm_case_free(nm_case *c);
/* The largest input any point of c makes: rows × cols (each also returned),
 * the axes' largest values where they set the shape. The sweep sizes a
 * point's series by it. */
double nm_case_max_input(const nm_case *c, double *rows, double *cols);
/* The value of [section] key, or NULL. */
const nm_case_kv *nm_case_get(const nm_case *c, const char *section, const char *key);

#endif
