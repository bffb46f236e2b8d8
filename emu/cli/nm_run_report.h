/*
 * nm_run_report.h — what `nanmap run` (nm_run.c) hands the writer of its
 * report (nm_run_report.c): the options, the resolved kernel and policy, the
 * input and every run. The command's own: nothing outside
 * emu/cli/nm_run*.c includes it.
 */
#ifndef NANMAP_NM_RUN_REPORT_H
#define NANMAP_NM_RUN_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/engine/kernels.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_npy.h"

#define NR_ERR_LEN 512
#define NR_MAX_PARAMS 32
/* Outputs with more elements than this are summarised in the text report. */
#define NR_SHOW_ALL 16
#define NR_SHOW_FIRST 8

enum nr_src { NR_SRC_NONE = 0, NR_SRC_INPUT, NR_SRC_VALUES, NR_SRC_GEN };
enum nr_dist { NR_NORMAL = 0, NR_UNIFORM, NR_LOGSPACE, NR_ONES, NR_NDIST };
enum nr_style { NR_TEXT = 0, NR_CSV, NR_JSON };

struct nr_param {
	char *text; /* "NAME=VALUE" copied, split at '=' */
	const char *name, *value_text;
};

struct nr_opts {
	unsigned seen; /* 1 << nr_optid of the options given */
	const char *kernel_name, *policy_spec, *variant;
	struct nr_param params[NR_MAX_PARAMS];
	emu_kparam kparams[NR_MAX_PARAMS];
	size_t nparams;
	enum nr_src src;
	const char *src_opt; /* the option that gave the input, for messages */
	const char *input_path, *values;
	enum nr_dist dist;
	uint64_t n, rows, seed;
	double scale, lo, hi;
	bool want[EMU_NBE], no_truth, all;
	enum nr_style style;
	const char *gpu_tables; /* FILE|DIR: the fast backend replays the GPU's tables */
	const char *recompute;  /* the second run's policy (activation checkpointing) */
	/* --tensor ROLE=FILE: tensors given by role (emu_kin.tensors), read
	 * by nr_read_tensors */
	struct nr_param tensor_args[EMU_KINPUTS_MAX];
	size_t ntensors;
	nm_npy tensor_files[EMU_KINPUTS_MAX];
	emu_ktensor tensors[EMU_KINPUTS_MAX];
};

struct nr_run_setup {
	const emu_kernel *k;
	const char *variant;
	emu_policy pol;
	emu_policy pol2; /* --recompute's */
};

struct nr_input {
	double *x;
	size_t rows, cols;
	char desc[NR_ERR_LEN]; /* "values", "gen normal", "file a.npy (float32)" */
};

struct nr_report {
	const struct nr_opts *o;
	const struct nr_run_setup *s;
	const struct nr_input *in;
	emu_run runs[EMU_NBE]; /* runs[EMU_BE_TRUTH] unused: truth is below */
	emu_truth truth;       /* both truth runs (emu_run_truth) */
	bool ran[EMU_NBE], shown[EMU_NBE];
	bool compared; /* fast and exact both ran */
	bool agree;
	/* fast replayed the GPU's tables: it is not meant to agree with exact,
	 * so the two are not compared */
	bool tabled;
	emu_gpu_tables tables;
	char why[NR_ERR_LEN]; /* the first difference */
	/* --recompute: each of fast and exact run again under the second policy,
	 * compared with the first run output by output */
	emu_run reruns[EMU_NBE];
	bool reran[EMU_NBE];
	emu_recompute_item diff[EMU_NBE][EMU_KOUT_MAX];
};

/* The report in the style the options ask for (text, CSV or JSON) into b
 * (b->oom when it ran out of memory). */
void nr_write(nm_buf *b, const struct nr_report *r);

#endif
