/*
 * nm_goldcmd.c — the golden files' case table, their text, and
 * `nanmap golden update|list|export` (nm_goldcmd.h, golden/README.md).
 *
 * Why uniform inputs: the generator's uniform draw is exact arithmetic
 * (X · (2u − 1), one rounding), so the inputs, unlike normal's and
 * logspace's libm calls, are the same on every platform, and a user can
 * redraw them from the seed alone.
 * Why a seed hashed from the id: adding or reordering cases leaves every
 * other case's input (and records) unchanged, so a diff shows only what
 * changed.
 */
#include <errno.h>
#include <inttypes.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emu/cli/nm_goldcmd.h"
#include "emu/engine/kernels.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_gen.h"
#include "emu/io/nm_golden.h"
#include "emu/io/nm_npy.h"
#include "emu/io/nm_parse.h"
#include "emu/train/train.h"

#define NG_ERR_LEN 512

struct ng_kplan {
	const char *kernel;
	const char *const *variants;
	size_t rows, cols;
};

static const char *const ng_v_softmax[] = {"naive", "maxsub", "lse", NULL};
static const char *const ng_v_layernorm[] = {"twopass", "onepass", "welford", NULL};
static const char *const ng_v_accum[] = {"sum:seq", "sum:pairwise", "sum:block",
                                         "dot:seq", "dot:pairwise", "dot:block",
                                         "dot:tc",  "gradacc",      NULL};
static const char *const ng_v_backward[] = {"maxsub", NULL};
static const char *const ng_v_gradscaler[] = {"pytorch", NULL};
static const char *const ng_v_rmsnorm[] = {"plain", "prescaled", "fp32stats", NULL};
static const char *const ng_v_bce[] = {"naive", "stable", NULL};
static const char *const ng_v_optimizer[] = {"adamw", "adamw_kahan", "adamw_sr", "sgd", NULL};
static const char *const ng_v_batchnorm[] = {"twopass", "welford", "eval", NULL};
static const char *const ng_v_matmul[] = {"seq", "tc", NULL};
static const char *const ng_v_attention[] = {"naive",      "online",  "fp8", "naive:bwd",
                                             "online:bwd", "fp8:bwd", NULL};

static const char *const ng_v_none[] = {NULL};

static const struct ng_kplan ng_plan[] = {
    {"softmax_ce", ng_v_softmax, 2, 16},    {"layernorm", ng_v_layernorm, 2, 16},
    {"accum", ng_v_accum, 2, 64},           {"backward", ng_v_backward, 2, 16},
    {"gradscaler", ng_v_gradscaler, 1, 32}, {"rmsnorm", ng_v_rmsnorm, 2, 16},
    {"bce", ng_v_bce, 2, 16},               {"quant", ng_v_none, 0, 0},
    {"optimizer", ng_v_optimizer, 2, 16},   {"batchnorm", ng_v_batchnorm, 8, 4},
    {"matmul", ng_v_matmul, 8, 8},          {"attention", ng_v_attention, 18, 12},
};
#define NG_NPLAN (sizeof ng_plan / sizeof ng_plan[0])

/*
 * Cases written one by one, after the table's: a recipe's interest is in
 * its scales, roles and copies, not in the storage × compute grid. quant's
 * policies take the recipe's elements as storage and dequantise into fp32.
 * The 957 cases are the OCP floor's documented example (docs/recipes.md):
 * every element 957, so each block clips under mxfp8:floor (back as 896) and
 * not under TE's rule (960). Uniform inputs of X = 6.8e38 leave fp32 about
 * half the time: infinite elements, inf amax, and NaN from inf · 0.
 */
struct ng_one {
	const char *kernel, *variant, *name, *policy;
	size_t rows, cols;
	int gen;
	double scale;
};

static const struct ng_one ng_ones[] = {
    {"quant", "row", "nvfp4-act", "compute=fp32,scale=nvfp4,role=act", 16, 32, NM_GEN_UNIFORM, 2},
    {"quant", "col", "nvfp4-act", "compute=fp32,scale=nvfp4,role=act", 16, 32, NM_GEN_UNIFORM, 2},
    {"quant", "row", "nvfp4-weight", "compute=fp32,scale=nvfp4,role=weight", 16, 32, NM_GEN_UNIFORM,
     2},
    {"quant", "row", "nvfp4-grad", "compute=fp32,scale=nvfp4,role=grad", 16, 32, NM_GEN_UNIFORM, 2},
    {"quant", "col", "nvfp4-grad", "compute=fp32,scale=nvfp4,role=grad", 16, 32, NM_GEN_UNIFORM, 2},
    {"quant", "row", "nvfp4-4over6", "compute=fp32,scale=nvfp4:4over6,role=act", 16, 32,
     NM_GEN_UNIFORM, 2},
    {"quant", "row", "mxfp8-act", "compute=fp32,scale=mxfp8,role=act", 16, 32, NM_GEN_UNIFORM, 2},
    {"quant", "col", "mxfp8-act", "compute=fp32,scale=mxfp8,role=act", 16, 32, NM_GEN_UNIFORM, 2},
    {"quant", "row", "mxfp8-957", "compute=fp32,scale=mxfp8,role=act", 2, 32, NM_GEN_ONES, 957},
    {"quant", "row", "mxfp8-floor-957", "compute=fp32,scale=mxfp8:floor,role=act", 2, 32,
     NM_GEN_ONES, 957},
    {"quant", "row", "mxfp4-act", "compute=fp32,scale=mxfp4,role=act", 16, 32, NM_GEN_UNIFORM, 2},
    {"quant", "row", "deepseek-act", "compute=fp32,scale=deepseek,role=act", 2, 256, NM_GEN_UNIFORM,
     2},
    {"quant", "col", "deepseek-weight", "compute=fp32,scale=deepseek,role=weight", 16, 32,
     NM_GEN_UNIFORM, 2},
    {"quant", "row", "nvfp4-bf16", "compute=bf16,scale=nvfp4,role=act", 16, 32, NM_GEN_UNIFORM, 2},
    {"quant", "row", "nvfp4-zero", "compute=fp32,scale=nvfp4,role=act", 2, 32, NM_GEN_ONES, 0},
    {"quant", "row", "mxfp8-zero", "compute=fp32,scale=mxfp8,role=act", 2, 32, NM_GEN_ONES, 0},
    {"quant", "row", "nvfp4-inf", "compute=fp32,scale=nvfp4,role=act", 2, 32, NM_GEN_UNIFORM,
     6.8e38},
    {"quant", "row", "mxfp8-inf", "compute=fp32,scale=mxfp8,role=act", 2, 32, NM_GEN_UNIFORM,
     6.8e38},
    /* one case per matrix-unit preset beyond the table's h100 (docs/tensor-cores.md) */
    {"matmul", "tc:mi100", "mi100-fp16", "storage=fp16,compute=fp32", 8, 8, NM_GEN_UNIFORM, 2},
    {"matmul", "tc:mi250x", "mi250x-fp16-subnormal", "storage=fp16,compute=fp32", 8, 8,
     NM_GEN_UNIFORM, 0x1p-11},
    {"matmul", "tc:mi250x", "mi250x-bf16", "storage=bf16,compute=fp32", 8, 8, NM_GEN_UNIFORM, 2},
    {"matmul", "tc:mi300x", "mi300x-bf16", "storage=bf16,compute=fp32", 8, 8, NM_GEN_UNIFORM, 2},
    {"matmul", "tc:mi300x", "mi300x-fp8", "storage=e4m3fnuz,compute=fp32", 8, 8, NM_GEN_UNIFORM, 2},
    {"matmul", "tc:mi300x", "mi300x-fp32", "storage=fp32,compute=fp32", 8, 8, NM_GEN_UNIFORM, 2},
    {"matmul", "tc:turing", "turing-fp16", "storage=fp16,compute=fp16", 8, 8, NM_GEN_UNIFORM, 2},
    {"matmul", "tc:rtx5090", "rtx5090-e4m3", "storage=e4m3,compute=fp32", 8, 8, NM_GEN_UNIFORM, 2},
    {"matmul", "tc:h100-wgmma", "wgmma-e5m2-fp16", "storage=e5m2,compute=fp16", 8, 8,
     NM_GEN_UNIFORM, 2},
    {"matmul", "tc:b200-tcgen05", "tcgen05-fp16-fp16", "storage=fp16,compute=fp16", 8, 8,
     NM_GEN_UNIFORM, 2},
    /* the block-scaled kinds' presets on the kernels' operands (scales of 1):
     * one whole kind::mxf8f6f4 and one kind::mxf4nvf4 instruction a dot */
    {"matmul", "tc:b200-mxf8f6f4", "mxf8f6f4-e4m3", "storage=e4m3,compute=fp32", 8, 32,
     NM_GEN_UNIFORM, 2},
    {"matmul", "tc:b200-mxf4nvf4", "mxf4nvf4-e2m1", "storage=e2m1,compute=fp32", 8, 64,
     NM_GEN_UNIFORM, 2},
    {"quant", "retile", "deepseek16-retile",
     "compute=fp32,scale={elem=e4m3,scale=fp32,rule=deepgemm,act=1x16,amin=1e-4},role=act", 16, 32,
     NM_GEN_UNIFORM, 2},
};
#define NG_NONES (sizeof ng_ones / sizeof ng_ones[0])

static const char *const ng_storage[] = {"fp16", "bf16", "e4m3", "e5m2"};
#define NG_NSTORAGE 4
static const char *const ng_sets[] = {"safe", "near_overflow", "near_underflow"};
#define NG_NSETS 3
/* per variant: storage × (compute = storage, fp32) × set */
#define NG_PER_VARIANT (NG_NSTORAGE * 2 * NG_NSETS)

size_t nm_gold_kernel_count(void)
{
	return NG_NPLAN;
}

const char *nm_gold_kernel_at(size_t i)
{
	return i < NG_NPLAN ? ng_plan[i].kernel : NULL;
}

static size_t ng_nvariants(const struct ng_kplan *k)
{
	size_t n = 0;
	while (k->variants[n])
		n++;
	return n;
}

size_t nm_gold_case_count(void)
{
	size_t n = 0;
	for (size_t k = 0; k < NG_NPLAN; k++)
		n += ng_nvariants(&ng_plan[k]) * NG_PER_VARIANT;
	return n + NG_NONES;
}

void nm_gold_case_at(size_t i, nm_gold_case *c)
{
	size_t k = 0;

	memset(c, 0, sizeof *c);
	while (k < NG_NPLAN && i >= ng_nvariants(&ng_plan[k]) * NG_PER_VARIANT) {
		i -= ng_nvariants(&ng_plan[k]) * NG_PER_VARIANT;
		k++;
	}
	if (k == NG_NPLAN) {
		if (i >= NG_NONES)
			return;
		const struct ng_one *o = &ng_ones[i];
		c->kernel = o->kernel;
		c->variant = o->variant;
		snprintf(c->id, sizeof c->id, "%s.%s.%s", o->kernel, o->variant, o->name);
		for (char *q = c->id; *q; q++)
			if (*q == ':') /* ids take no ':' ("tc:mi300x" reads "tc-mi300x") */
				*q = '-';
		snprintf(c->policy, sizeof c->policy, "%s", o->policy);
		c->rows = o->rows;
		c->cols = o->cols;
		c->gen = o->gen;
		c->scale = o->scale;
		c->seed = nm_fnv1a(c->id, strlen(c->id));
		return;
	}
	const struct ng_kplan *p = &ng_plan[k];
	size_t v = i / NG_PER_VARIANT, r = i % NG_PER_VARIANT;
	size_t s = r / (2 * NG_NSETS), comp = r / NG_NSETS % 2, set = r % NG_NSETS;
	const char *st = ng_storage[s], *ct = comp ? "fp32" : st;
	const emu_format *f = emu_format_by_name(st);
	char var[64];

	c->kernel = p->kernel;
	c->variant = p->variants[v];
	snprintf(var, sizeof var, "%s", c->variant);
	for (char *q = var; *q; q++)
		if (*q == ':')
			*q = '-';
	snprintf(c->id, sizeof c->id, "%s.%s.%s-%s.%s", p->kernel, var, st, ct, ng_sets[set]);
	snprintf(c->policy, sizeof c->policy, "storage=%s,compute=%s", st, ct);
	c->rows = p->rows;
	c->cols = p->cols;
	c->gen = NM_GEN_UNIFORM;
	c->scale = set == 0 ? 2.0 : set == 1 ? f->max : 8 * f->min_normal;
	c->seed = nm_fnv1a(c->id, strlen(c->id));
}

/* The order nanmap run lists flags in, as bit numbers, and their names. */
static const int ng_flag_order[EMU_NFLAGS] = {2, 3, 4, 0, 1};
static const char *const ng_flag_names[EMU_NFLAGS] = {"invalid", "divbyzero", "overflow",
                                                      "underflow", "inexact"};

static int ng_case_text(nm_buf *b, const nm_gold_case *c, emu_be_kind kind, size_t *nrecords,
                        char *err, size_t errlen)
{
	const emu_kernel *k = emu_kernel_by_name(c->kernel);
	emu_policy pol;
	nm_gen g = {(nm_gen_dist)c->gen, c->scale, 0, 0, c->seed, 0, 0};
	size_t n = c->rows * c->cols;
	double *x;
	emu_run r;
	char e[NG_ERR_LEN], hex[NM_NUM_LEN], fl[64];
	int rc;

	if (!k) {
		snprintf(err, errlen, "%s: no kernel %s", c->id, c->kernel);
		return -1;
	}
	e[0] = '\0';
	if (emu_policy_parse(c->policy, &pol, e, sizeof e) != EMU_OK) {
		snprintf(err, errlen, "%s: bad policy %s: %s", c->id, c->policy, e);
		return -1;
	}
	x = malloc(n * sizeof *x);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	nm_gen_fill(&g, x, n);
	emu_kin in = {x, c->rows, c->cols, NULL, 0, c->seed, NULL, 0};
	rc = emu_run_kernel(k, &pol, c->variant, &in, kind, &r, e, sizeof e);
	free(x);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", c->id, e[0] ? e : "the kernel failed");
		emu_run_free(&r);
		return -1;
	}
	size_t start = b->len + 1; /* the case's lines, for its checksum */
	nm_buf_printf(
	    b,
	    "\ncase %s kernel=%s variant=%s policy=%s rows=%zu cols=%zu gen=%s scale=%a "
	    "seed=%" PRIu64 "\n",
	    c->id, c->kernel, c->variant, c->policy, c->rows, c->cols,
	    nm_gen_dist_name((nm_gen_dist)c->gen), c->scale, c->seed);
	nm_buf_printf(b, "status %s %s\n", c->id, emu_run_status_name(r.status));
	for (int op = 0; op < EMU_NOPS; op++) {
		if (!r.be.st.ops[op])
			continue;
		nm_buf_printf(b, "ops %s %s %" PRIu64, c->id, emu_op_name((emu_op)op),
		              r.be.st.ops[op]);
		for (int i = 0; i < EMU_NFLAGS; i++) {
			int bit = ng_flag_order[i];
			if (r.be.st.flags[op][bit])
				nm_buf_printf(b, " %s=%" PRIu64, ng_flag_names[bit],
				              r.be.st.flags[op][bit]);
		}
		nm_buf_putc(b, '\n');
	}
	if (r.be.st.first_set)
		nm_buf_printf(b, "first %s %s %s %" PRIu64 " %s\n", c->id,
		              emu_op_name(r.be.st.first_op), r.be.st.first_step,
		              r.be.st.first_index,
		              emu_flags_str(r.be.st.first_flags, fl, sizeof fl));
	for (int i = 0; i < r.out.n; i++) {
		const emu_kout_item *it = &r.out.item[i];
		const emu_format *f = emu_format_by_name(it->fmt->name);
		nm_golden_output o = {NULL, it->name, 0, it->fmt->name, it->fmt->bits, it->n, NULL};
		if (!f) {
			snprintf(err, errlen, "%s: output %s in %s, not a built-in format", c->id,
			         it->name, it->fmt->name);
			emu_run_free(&r);
			return -1;
		}
		nm_buf_printf(b, "output %s/%s %s %zu\n", c->id, it->name, f->name, it->n);
		for (size_t j = 0; j < it->n; j++) {
			emu_bits bits = emu_encode(f, emu_kout_d(NULL, it, j));
			nm_buf_printf(b, "%s/%s %zu %s %s\n", c->id, it->name, j,
			              nm_fmt_bits(f, bits, hex, sizeof hex),
			              nm_golden_class(&o, bits));
		}
		*nrecords += it->n;
	}
	emu_run_free(&r);
	if (!b->oom)
		nm_buf_printf(b, "end %s %016" PRIx64 "\n", c->id,
		              nm_fnv1a(b->s + start, b->len - start));
	return 0;
}

int nm_gold_text(const char *kernel, emu_be_kind kind, char **text, size_t *len, size_t *ncases,
                 size_t *nrecords, char *err, size_t errlen)
{
	nm_buf b = {0};
	nm_gold_case c;

	*text = NULL;
	*len = *ncases = *nrecords = 0;
	nm_buf_printf(&b,
	              "# nanmap golden file, format %d (golden/README.md describes it)\n"
	              "# nanmap %s\n"
	              "# MPFR %s\n"
	              "# command: nanmap golden update\n"
	              "# expected outputs: the exact backend (MPFR in each format)\n"
	              "# kernel: %s\n",
	              NM_GOLDEN_FORMAT, NM_VERSION, mpfr_get_version(), kernel);
	for (size_t i = 0; i < nm_gold_case_count(); i++) {
		nm_gold_case_at(i, &c);
		if (strcmp(c.kernel, kernel) != 0)
			continue;
		if (ng_case_text(&b, &c, kind, nrecords, err, errlen) != 0) {
			nm_buf_free(&b);
			return -1;
		}
		++*ncases;
	}
	if (b.oom || !*ncases) {
		snprintf(err, errlen, b.oom ? "out of memory" : "no golden cases for kernel %s",
		         kernel);
		nm_buf_free(&b);
		return -1;
	}
	*text = b.s;
	*len = b.len;
	return 0;
}

/* ---- files ---- */

/* The golden files' temporaries: nm_file_stage's "KERNEL.golden.tmp.PID",
 * and "KERNEL.golden.tmp.PID.XXXXXX" that earlier updates made. */
static const char *const ng_tmp_patterns[] = {"*.golden.tmp.%p", "*.golden.tmp.%p.%x"};

/* Remove the temporaries of an update that was killed: only names of those
 * patterns, only when process PID is gone; each one is said. */
static void ng_clean_stale(const char *dir)
{
	for (size_t i = 0; i < sizeof ng_tmp_patterns / sizeof *ng_tmp_patterns; i++)
		(void)nm_file_clean_match(dir, ng_tmp_patterns[i],
		                          "left by an update that did not finish");
}

/* ---- options ---- */

struct ng_opts {
	const char *dir, *inputs, *out, *pos[3];
	size_t npos;
	bool encodings;
};

enum { NG_O_DIR, NG_O_INPUTS, NG_O_OUT, NG_O_ENCODINGS };

static const nm_opt ng_optdefs[] = {
    {NULL, "--dir", NG_O_DIR, NM_OPTF_VALUE, 0},
    {NULL, "--inputs", NG_O_INPUTS, NM_OPTF_VALUE, 0},
    {NULL, "--out", NG_O_OUT, NM_OPTF_VALUE, 0},
    {NULL, "--encodings", NG_O_ENCODINGS, 0, 0},
};

static int ng_take(void *ctx, const nm_opt *d, const char *v)
{
	struct ng_opts *o = ctx;

	if (d->id == NG_O_DIR)
		o->dir = v;
	else if (d->id == NG_O_INPUTS)
		o->inputs = v;
	else if (d->id == NG_O_OUT)
		o->out = v;
	else
		o->encodings = true;
	return 0;
}

static int ng_arg(void *ctx, const char *a)
{
	struct ng_opts *o = ctx;

	if (o->npos == 3)
		return nm_fail("too many arguments for golden: '%s'", a);
	o->pos[o->npos++] = a;
	return 0;
}

static int ng_parse(const char *cmd, int argc, char **argv, struct ng_opts *o)
{
	char name[32];
	int rc;

	memset(o, 0, sizeof *o);
	snprintf(name, sizeof(name), "golden %s", cmd);
	rc = nm_opt_parse(&(nm_optparser){.cmd = name,
	                                  .help_cmd = "golden",
	                                  .defs = ng_optdefs,
	                                  .ndefs = sizeof(ng_optdefs) / sizeof(ng_optdefs[0]),
	                                  .take = ng_take,
	                                  .arg = ng_arg,
	                                  .ctx = o},
	                  argc - 1, argv + 1);
	if (!o->dir) /* update writes into the checkout's; the readers find one */
		o->dir = strcmp(cmd, "update") ? nm_golden_default_dir() : "golden";
	return rc;
}

const char *nm_golden_default_dir(void)
{
	static char dir[4096];
	char exe[4096];
	struct stat st;
	ssize_t n;
	char *slash;

	if (stat("golden", &st) == 0 && S_ISDIR(st.st_mode))
		return "golden";
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(exe) - 1)
		return "golden";
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return "golden";
	*slash = '\0';
	if ((size_t)snprintf(dir, sizeof(dir), "%s/../share/nanmap/golden", exe) >= sizeof(dir) ||
	    stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return "golden";
	return dir;
}

static char *ng_path(const char *dir, const char *kernel)
{
	size_t n;

	dir = dir ? dir : "golden";
	n = strlen(dir) + strlen(kernel) + 16;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s.golden", dir, kernel);
	return p;
}

/* Every golden file as a set: all texts made, all written to temporaries
 * and read back through the reader (which checks every line and checksum),
 * and only then all renamed into place. An error or a kill before the
 * renames leaves every old file as it was. */
static int ng_update(const struct ng_opts *o)
{
	size_t total_cases = 0, total_records = 0, nk = nm_gold_kernel_count();
	struct timespec t0, t1;
	char **tmp = calloc(nk, sizeof *tmp), **path = calloc(nk, sizeof *path);
	size_t *nc = calloc(nk, sizeof *nc), *nr = calloc(nk, sizeof *nr);
	int rc = 0;

	/* Progress is counted (made, ok), not read back from rc: what the
	 * loops may touch then follows from the code here, not from nm_fail
	 * never returning 0. */
	if (o->npos || o->inputs || o->out || o->encodings || !tmp || !path || !nc || !nr) {
		rc = o->npos || o->inputs || o->out || o->encodings
		         ? nm_fail("golden update takes only --dir DIR")
		         : nm_fail("out of memory");
		free(tmp);
		free(path);
		free(nc);
		free(nr);
		return rc;
	}
	ng_clean_stale(o->dir);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	size_t made = 0; /* files 0..made-1 staged and read back */
	for (; made < nk; made++) {
		size_t k = made;
		const char *kernel = nm_gold_kernel_at(k);
		char err[NG_ERR_LEN], *text;
		size_t len;
		nm_golden *g;
		if (nm_gold_text(kernel, EMU_BE_EXACT, &text, &len, &nc[k], &nr[k], err,
		                 sizeof err) != 0) {
			rc = nm_fail("golden update: %s", err);
			break;
		}
		path[k] = ng_path(o->dir, kernel);
		if (!path[k] || nm_file_stage(path[k], text, len, &tmp[k], err, sizeof err) != 0) {
			rc = path[k] ? nm_fail("%s", err) : nm_fail("out of memory");
			free(text);
			break;
		}
		free(text);
		if (nm_golden_open(tmp[k], &g, err, sizeof err) != NM_GOLDEN_OK) {
			rc = nm_fail("golden update: %s does not read back: %s", tmp[k], err);
			break;
		}
		nm_golden_close(g);
	}
	bool ok = made == nk;
	/* a target rename() would refuse (a folder) fails the set before any
	 * file is replaced */
	for (size_t k = 0; k < nk && ok; k++) {
		struct stat sb;
		if (lstat(path[k], &sb) == 0 && !S_ISREG(sb.st_mode)) {
			rc = nm_fail("%s: not a regular file; no golden file was changed", path[k]);
			ok = false;
		}
	}
	for (size_t k = 0; k < nk && ok; k++) {
		char err[NG_ERR_LEN];
		if (nm_file_commit(tmp[k], path[k], err, sizeof err) != 0) {
			rc = nm_fail("%s", err);
			ok = false;
		}
		free(tmp[k]);
		tmp[k] = NULL;
	}
	for (size_t k = 0; k < nk; k++) {
		nm_file_discard(tmp[k]);
		if (ok) {
			printf("%s: %zu cases, %zu records\n", path[k], nc[k], nr[k]);
			total_cases += nc[k];
			total_records += nr[k];
		}
		free(tmp[k]);
		free(path[k]);
	}
	free(tmp);
	free(path);
	free(nc);
	free(nr);
	if (!ok)
		return rc;
	/* the training runs: one .safetensors a preset and architecture, each
	 * written whole through a temporary file */
	size_t nruns = 0;
	for (size_t p = 0; emu_train_presets[p] && !rc; p++)
		for (int a = 0; a < 2 && !rc; a++) {
			char err[NG_ERR_LEN] = "", dir[4096], file[4200];
			emu_train_cfg c;
			errno = 0;
			snprintf(dir, sizeof dir, "%s/train", o->dir);
			snprintf(file, sizeof file, "%s/%s-%s.safetensors", dir,
			         emu_train_presets[p], emu_train_arch_name((emu_train_arch)a));
			if ((mkdir(dir, 0777) != 0 && errno != EEXIST) ||
			    emu_train_golden_cfg(&c, emu_train_presets[p], (emu_train_arch)a, err,
			                         sizeof err) != 0 ||
			    emu_train_golden(&c, file, err, sizeof err) != 0)
				rc = nm_fail("golden update: %s",
				             errno && !*err ? strerror(errno) : err);
			nruns++;
		}
	if (rc)
		return rc;
	printf("%s/train: %zu training runs (presets x gpt2, llama)\n", o->dir, nruns);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("golden: %zu cases, %zu records in %.1f s\n", total_cases, total_records,
	       (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
	return fflush(stdout) == 0 ? 0 : nm_fail("cannot write the output: %s", strerror(errno));
}

static int ng_list(const struct ng_opts *o)
{
	if (o->npos || o->inputs || o->out || o->encodings)
		return nm_fail("golden list takes only --dir DIR");
	for (size_t k = 0; k < nm_gold_kernel_count(); k++) {
		char err[NG_ERR_LEN], *path = ng_path(o->dir, nm_gold_kernel_at(k));
		nm_golden *g;
		if (!path)
			return nm_fail("out of memory");
		if (nm_golden_open(path, &g, err, sizeof err) != NM_GOLDEN_OK) {
			free(path);
			return nm_fail("%s", err);
		}
		free(path);
		for (size_t i = 0; i < nm_golden_output_count(g); i++) {
			const nm_golden_output *out = nm_golden_output_at(g, i);
			const nm_golden_case *c = nm_golden_case_at(g, out->case_index);
			printf("%s %s[%zu] input %zux%zu status %s\n", out->target, out->format,
			       out->n, c->rows, c->cols, c->status);
		}
		nm_golden_close(g);
	}
	return fflush(stdout) == 0 ? 0 : nm_fail("cannot write the output: %s", strerror(errno));
}

/* Open DIR/KERNEL.golden for a case id "KERNEL.…" and find the case: 0
 * with *g open and *c set, else nm_fail's status with *g and *c NULL. */
static int ng_open_case(const char *dir, const char *id, nm_golden **g, const nm_golden_case **c)
{
	char kernel[64], err[NG_ERR_LEN], *path;
	size_t n = strcspn(id, ".");

	*g = NULL;
	*c = NULL;
	if (n == 0 || n >= sizeof kernel || id[n] != '.')
		return nm_fail(
		    "bad case id '%s' (KERNEL.VARIANT.STORAGE-COMPUTE.SET; nanmap golden "
		    "list shows them)",
		    id);
	memcpy(kernel, id, n);
	kernel[n] = '\0';
	path = ng_path(dir, kernel);
	if (!path)
		return nm_fail("out of memory");
	if (nm_golden_open(path, g, err, sizeof err) != NM_GOLDEN_OK) {
		free(path);
		return nm_fail("%s", err);
	}
	for (size_t i = 0; i < nm_golden_case_count(*g); i++)
		if (!strcmp(nm_golden_case_at(*g, i)->id, id)) {
			*c = nm_golden_case_at(*g, i);
			free(path);
			return 0;
		}
	int rc = nm_fail("%s: no case '%s' (nanmap golden list shows them)", path, id);
	free(path);
	nm_golden_close(*g);
	*g = NULL;
	return rc;
}

static bool ng_ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && !strcmp(s + a - b, tail);
}

/* The .npy dtype a role is written as: class indices as <u4; with
 * --encodings a role the kernel rounds into a format as that format's
 * encodings (|u1, <u2, <u4); every other as float64 values. */
static nm_npy_dtype ng_dtype(const nm_golden_input *t, bool encodings)
{
	if (!strcmp(t->format, "index"))
		return NM_NPY_U4;
	if (!encodings || !t->encodings)
		return NM_NPY_F8;
	return t->bits <= 8 ? NM_NPY_U1 : t->bits <= 16 ? NM_NPY_U2 : NM_NPY_U4;
}

/* One role into path (.npy as ng_dtype says). 0, or nm_fail's status. */
static int ng_write_npy(const char *path, const nm_golden_input *t, bool encodings)
{
	char err[NG_ERR_LEN];
	size_t shape[2] = {t->rows, t->cols};
	nm_npy_dtype dt = ng_dtype(t, encodings);
	uint32_t *idx = NULL;
	const uint32_t *raw = dt == NM_NPY_F8 ? NULL : t->encodings;

	if (dt == NM_NPY_U4 && !t->encodings) { /* class indices: exact integers */
		size_t n = t->rows * t->cols;
		idx = malloc((n ? n : 1) * sizeof *idx);
		if (!idx)
			return nm_fail("out of memory");
		for (size_t i = 0; i < n; i++)
			idx[i] = (uint32_t)t->values[i];
		raw = idx;
	}
	if (t->ndim == 1)
		shape[0] = t->cols;
	nm_npy_status st =
	    nm_npy_write(path, dt, t->ndim, shape, raw ? NULL : t->values, raw, err, sizeof err);
	free(idx);
	return st == NM_NPY_OK ? 0 : nm_fail("%s", err);
}

/* "2x16", or "16" for a vector. */
static void ng_shape(const nm_golden_input *t, char *buf, size_t len)
{
	if (t->ndim == 1)
		snprintf(buf, len, "%zu", t->cols);
	else
		snprintf(buf, len, "%zux%zu", t->rows, t->cols);
}

/* --inputs FILE: x alone, as before (.npy: float64 values, or with
 * --encodings the storage encodings; any other name: raw encodings). */
static int ng_export_x(const struct ng_opts *o, const nm_golden_case *c, const nm_golden_input *x)
{
	char err[NG_ERR_LEN];
	bool npy = ng_ends_with(o->inputs, ".npy");

	if ((o->encodings || !npy) && !x->encodings)
		return nm_fail("case %s: the kernel takes x as %s (no format holds it as stored): "
		               "export it as .npy without --encodings",
		               c->id, x->format);
	if (npy) {
		int rc = ng_write_npy(o->inputs, x, o->encodings);
		if (rc)
			return rc;
		printf("%s: %s %zu x %zu, %s\n", o->inputs, c->id, c->rows, c->cols,
		       o->encodings ? "storage encodings" : "float64 values");
		return 0;
	}
	size_t n = x->rows * x->cols, w = x->bits <= 8 ? 1 : x->bits <= 16 ? 2 : 4;
	unsigned char *raw = malloc(n > 0 ? n * w : 1);
	if (!raw)
		return nm_fail("out of memory");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < w; j++)
			raw[i * w + j] = (unsigned char)(x->encodings[i] >> (8 * j));
	int rc = nm_file_write(o->inputs, raw, n * w, err, sizeof err);
	free(raw);
	if (rc != 0)
		return nm_fail("%s", err);
	printf("%s: %s %zu x %zu, %s encodings, %zu byte%s each, little-endian\n", o->inputs, c->id,
	       c->rows, c->cols, x->format, w, w == 1 ? "" : "s");
	return 0;
}

/* --out DIR: every tensor the kernel consumes, DIR/ROLE.npy each, and
 * DIR/inputs.txt saying what each file holds. */
static int ng_export_all(const struct ng_opts *o, const nm_golden_case *c,
                         const nm_golden_inputs *ins)
{
	char err[NG_ERR_LEN], shape[64];
	struct stat st;
	nm_buf man = {0};
	int rc = 0;

	if (mkdir(o->out, 0777) != 0 && errno != EEXIST)
		return nm_fail("%s: cannot create the folder: %s", o->out, strerror(errno));
	if (stat(o->out, &st) != 0 || !S_ISDIR(st.st_mode))
		return nm_fail("%s: not a folder", o->out);
	nm_buf_printf(&man,
	              "# nanmap golden export %s%s (docs/golden.md)\n"
	              "# case %s kernel=%s variant=%s policy=%s seed=%" PRIu64 "\n"
	              "# role file dtype shape format part_of\n",
	              c->id, o->encodings ? " --encodings" : "", c->id, c->kernel, c->variant,
	              c->policy, c->seed);
	for (size_t i = 0; i < ins->n && rc == 0; i++) {
		const nm_golden_input *t = &ins->item[i];
		size_t len = strlen(o->out) + strlen(t->role) + 8;
		char *path = malloc(len);
		if (!path) {
			rc = nm_fail("out of memory");
			break;
		}
		snprintf(path, len, "%s/%s.npy", o->out, t->role);
		rc = ng_write_npy(path, t, o->encodings);
		nm_npy_dtype dt = ng_dtype(t, o->encodings);
		ng_shape(t, shape, sizeof shape);
		if (rc == 0) {
			printf("%s: %s %s, %s%s\n", path, t->role, shape,
			       dt == NM_NPY_F8 ? "float64 values"
			       : t->encodings  ? t->format
			                       : "class indices",
			       dt != NM_NPY_F8 && t->encodings ? " encodings" : "");
			nm_buf_printf(&man, "%s %s.npy %s %s %s %s\n", t->role, t->role,
			              nm_npy_dtype_name(dt), shape, t->format, t->of_x ? "x" : "-");
		}
		free(path);
	}
	if (rc == 0) {
		size_t len = strlen(o->out) + 16;
		char *path = malloc(len);
		if (man.oom || !path)
			rc = nm_fail("out of memory");
		else if (snprintf(path, len, "%s/inputs.txt", o->out) < 0 ||
		         nm_file_write(path, man.s, man.len, err, sizeof err) != 0)
			rc = nm_fail("%s", err);
		else
			printf("%s: %zu tensors of %s\n", path, ins->n, c->id);
		free(path);
	}
	nm_buf_free(&man);
	return rc;
}

static int ng_export(const struct ng_opts *o)
{
	nm_golden *g;
	const nm_golden_case *c = NULL;
	nm_golden_inputs ins;
	char err[NG_ERR_LEN];
	int rc;

	if (o->npos != 1)
		return nm_fail("golden export needs one CASE (nanmap golden list shows them)");
	if (!o->inputs == !o->out)
		return nm_fail(o->inputs
		                   ? "golden export takes --inputs FILE or --out DIR, not both"
		                   : "golden export needs --inputs FILE (x alone; .npy: "
		                     "float64; else raw storage encodings) or --out DIR "
		                     "(every input)");
	rc = ng_open_case(o->dir, o->pos[0], &g, &c);
	if (!c) /* not found, and said so: rc is nm_fail's status */
		return rc;
	if (nm_golden_case_inputs(g, c->id, &ins, err, sizeof err) != NM_GOLDEN_OK) {
		rc = nm_fail("%s", err);
		nm_golden_close(g);
		return rc;
	}
	rc = o->out ? ng_export_all(o, c, &ins) : ng_export_x(o, c, &ins.item[0]);
	if (rc == 0 && fflush(stdout) != 0)
		rc = nm_fail("cannot write the output: %s", strerror(errno));
	nm_golden_inputs_free(&ins);
	nm_golden_close(g);
	return rc;
}

static const char ng_usage[] =
    "usage: nanmap golden update [--dir DIR]\n"
    "       nanmap golden list [--dir DIR]\n"
    "       nanmap golden export CASE --out OUTDIR [--encodings] [--dir DIR]\n"
    "       nanmap golden export CASE --inputs FILE [--encodings] [--dir DIR]\n"
    "\n"
    "update: regenerate every golden file (DIR/KERNEL.golden, default DIR golden)\n"
    "        on the exact backend; the same tables give the same bytes.\n"
    "list:   every output of every case (CASE/OUTPUT FORMAT[n], input shape, status).\n"
    "export: the inputs of CASE, drawn by the kernel's own code from the case line.\n"
    "        --out: every tensor the kernel consumes (x, dy, target, w, ...), one\n"
    "        OUTDIR/ROLE.npy each, float64 values; with --encodings the encodings of\n"
    "        the format the kernel stores each in (|u1/<u2/<u4); class indices <u4;\n"
    "        OUTDIR/inputs.txt lists role, file, dtype, shape and format.\n"
    "        --inputs: x alone; FILE.npy float64 values (rows x cols), with\n"
    "        --encodings the storage encodings; any other name raw little-endian.\n"
    "Then run your kernel on them and compare: nanmap check FILE:CASE/OUTPUT ACTUAL.\n"
    "See golden/README.md and docs/golden.md.\n"
    "Example: nanmap golden list\n";

int nm_golden_main(int argc, char **argv)
{
	struct ng_opts o;
	const char *sub = argc > 1 ? argv[1] : NULL;
	int rc;

	if (!sub)
		return nm_fail(
		    "golden needs a subcommand: update, list or export (nanmap golden --help)");
	if (!strcmp(sub, "help") || nm_wants_help(argc - 1, argv + 1))
		return nm_print_help(ng_usage);
	rc = ng_parse(sub, argc - 1, argv + 1, &o);
	if (rc)
		return rc;
	if (!strcmp(sub, "update"))
		return ng_update(&o);
	if (!strcmp(sub, "list"))
		return ng_list(&o);
	if (!strcmp(sub, "export"))
		return ng_export(&o);
	return nm_fail("unknown golden subcommand '%s' (update, list, export)", sub);
}
