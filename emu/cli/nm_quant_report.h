/*
 * nm_quant_report.h — what `nanmap quant` (nm_quant.c) hands the writers of
 * its output (nm_quant_report.c): the options, the input's tensors and each
 * tensor's result, and the report and output files built from them. The
 * command's own: nothing outside emu/cli/nm_quant*.c includes it.
 */
#ifndef NANMAP_NM_QUANT_REPORT_H
#define NANMAP_NM_QUANT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/io/nm_buf.h"
#include "emu/io/nm_gen.h"
#include "emu/io/nm_npy.h"
#include "emu/io/nm_safetensors.h"
#include "emu/recipes/recipe.h"

#define NQ_ERR_LEN 1024
#define NQ_EXP_BIAS 150 /* emu_qstats.exp_hist[k]: blocks with floor(log2(d·t)) = k − 150 */

enum nq_src { NQ_SRC_NONE = 0, NQ_SRC_INPUT, NQ_SRC_GEN };
enum nq_style { NQ_TEXT = 0, NQ_CSV, NQ_JSON };

struct nq_opts {
	unsigned seen; /* 1 << nq_optid of the options given */
	const char *recipe_spec, *input, *out;
	enum nq_src src;
	const char *src_opt;
	nm_gen gen;
	uint64_t n, rows, seed, worst_k;
	emu_role role;
	bool colwise, encodings, progress, list, per_block_open;
	const char **tensors; /* --tensor names, in the order given */
	size_t ntensors;
	enum nq_style style;
};

struct nq_tensor {
	char *name;
	const char *dtype; /* F32, F16, ... (safetensors' names for every input) */
	int ndim;
	uint64_t shape[NM_ST_MAX_DIMS];
	size_t rows, cols; /* as quantised: leading dims × last */
	size_t elem_bytes; /* of the input, for --progress */
	bool skipped;      /* not decodable: listed only */
	const nm_st_tensor *st;
};

struct nq_input {
	enum nq_src kind;
	bool is_st;
	const char *path;
	nm_npy npy;
	nm_st_file stf;
	nm_gen gen;
	struct nq_tensor *t;
	size_t nt;
};

struct nq_block {
	size_t index, row, col; /* block index (row-major over blocks), its first element */
	double amax, d, sqnr;
	emu_bits dcode;
	uint64_t saturated;
};

struct nq_result {
	emu_qstats st;
	size_t nbr, nbc; /* blocks down and across the whole tensor */
	double s_enc, t; /* NVFP4's tensor scales (1 and 1 otherwise) */
	size_t parts;
	struct nq_block *worst; /* the worst blocks, worst first */
	size_t nworst;
	/* outputs, only when asked for */
	double *deq;      /* rows·cols */
	uint32_t *codes;  /* rows·cols element encodings */
	uint32_t *scales; /* nbr·nbc block scale encodings */
};

struct nq_report {
	const struct nq_opts *o;
	const emu_recipe *r;
	const struct nq_input *in;
	struct nq_result *res; /* per tensor (skipped ones empty) */
	emu_qstats total;
	size_t nquant; /* tensors quantised */
};

/* One line on stderr, "out of memory"; the exit status 2. */
int nq_oom(void);
/* s (may be NULL) ends with suffix. */
bool nq_ends_with(const char *s, const char *suffix);

/* The report as the options' style asks (text, CSV or JSON) into b; 0, or
 * the exit status after one line on stderr. */
int nq_build_report(const struct nq_report *rp, nm_buf *b);
/* Remove what a killed earlier run left of --out's staged files. */
void nq_clean_stale(const char *out);
/* --out as .safetensors or .npy: staged, then renamed into place; 0, or the
 * exit status after one line on stderr. */
int nq_write_st(const struct nq_report *rp);
int nq_write_npy(const struct nq_report *rp);

#endif
