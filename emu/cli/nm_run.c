/*
 * nm_run.c — `nanmap run`: one kernel of the registry (emu/engine/kernels.h) on
 * the fast, exact-format and truth backends (docs/run.md).
 *
 * Same contract as the other commands (emu/cli/main.c): every error is one
 * line on stderr naming the bad argument, exit status 2, and the output is
 * built in memory and printed only when everything succeeded, so an error
 * never leaves half a report on stdout.
 *
 * Steps: parse the options (syntax of every value), resolve the kernel,
 * variant, policy and parameters, build the input tensor (--values, an .npy
 * file, or a counter-based generator), run the backends (truth first when
 * any other backend needs metrics), compare fast with exact when both ran,
 * then write the report as text, CSV (backend,kind,key,value) or JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu/cli/nm_run.h"
#include "emu/cli/nm_run_report.h"
#include "emu/engine/kernels.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_gen.h"
#include "emu/io/nm_npy.h"
#include "emu/io/nm_parse.h"

/* Largest input tensor, in elements (16 GiB of doubles). */
#define NR_MAX_ELEMS ((uint64_t)1 << 31)

static int nr_oom(void)
{
	return nm_fail("out of memory");
}

/* ---- options ---- */

static const char *const nr_dist_names[NR_NDIST] = {"normal", "uniform", "logspace", "ones"};

enum nr_optid {
	NR_O_POLICY = 0,
	NR_O_VARIANT,
	NR_O_PARAM,
	NR_O_INPUT,
	NR_O_VALUES,
	NR_O_GEN,
	NR_O_N,
	NR_O_ROWS,
	NR_O_SEED,
	NR_O_SCALE,
	NR_O_RANGE,
	NR_O_BACKEND,
	NR_O_NO_TRUTH,
	NR_O_CSV,
	NR_O_JSON,
	NR_O_GPU_TABLES,
	NR_O_RECOMPUTE,
	NR_O_TENSOR,
};

static const nm_opt nr_optdefs[] = {
    {NULL, "--policy", NR_O_POLICY, NM_OPTF_VALUE, 0},
    {NULL, "--variant", NR_O_VARIANT, NM_OPTF_VALUE, 0},
    {NULL, "--param", NR_O_PARAM, NM_OPTF_VALUE | NM_OPTF_REPEAT, 0},
    {NULL, "--input", NR_O_INPUT, NM_OPTF_VALUE, 0},
    {NULL, "--values", NR_O_VALUES, NM_OPTF_VALUE, 0},
    {NULL, "--gen", NR_O_GEN, NM_OPTF_VALUE, 0},
    {NULL, "--n", NR_O_N, NM_OPTF_VALUE, 0},
    {NULL, "--rows", NR_O_ROWS, NM_OPTF_VALUE, 0},
    {NULL, "--seed", NR_O_SEED, NM_OPTF_VALUE, 0},
    {NULL, "--scale", NR_O_SCALE, NM_OPTF_VALUE, 0},
    {NULL, "--range", NR_O_RANGE, NM_OPTF_VALUE, 0},
    {NULL, "--backend", NR_O_BACKEND, NM_OPTF_VALUE, 0},
    {NULL, "--no-truth", NR_O_NO_TRUTH, 0, 0},
    {NULL, "--csv", NR_O_CSV, 0, 1},
    {NULL, "--json", NR_O_JSON, 0, 1},
    {NULL, "--gpu-tables", NR_O_GPU_TABLES, NM_OPTF_VALUE, 0},
    {NULL, "--recompute", NR_O_RECOMPUTE, NM_OPTF_VALUE, 0},
    {NULL, "--tensor", NR_O_TENSOR, NM_OPTF_VALUE | NM_OPTF_REPEAT, 0},
};

/* A whole token that is a number (nm_parse_number's syntax), as the nearest
 * double (strtod: RNE; beyond the double range, ±inf or ±0). */
static bool nr_number(const char *s, double *out)
{
	nm_number x;

	if (nm_parse_number(s, &x) != NM_OK)
		return false;
	*out = strtod(s, NULL);
	return true;
}

static int nr_count(const char *arg, const char *opt, uint64_t *out)
{
	return nm_parse_count(opt, arg, 1, NR_MAX_ELEMS, out);
}

/* p from "NAME=VALUE" (eq: its '='): one copy, split at eq. 0, or -1 out of memory. */
static int nr_split(struct nr_param *p, const char *arg, const char *eq)
{
	p->text = strdup(arg);
	if (!p->text)
		return -1;
	p->text[eq - arg] = '\0';
	p->name = p->text;
	p->value_text = p->text + (eq - arg) + 1;
	return 0;
}

static int nr_opt_param(struct nr_opts *o, const char *arg)
{
	struct nr_param *p;
	char *eq;
	double v;

	if (o->nparams == NR_MAX_PARAMS)
		return nm_fail("too many parameters (at most %d)", NR_MAX_PARAMS);
	eq = strchr(arg, '=');
	if (!eq || eq == arg)
		return nm_fail("bad parameter '%s' (want NAME=VALUE, e.g. eps=1e-5)", arg);
	p = &o->params[o->nparams];
	if (nr_split(p, arg, eq) != 0)
		return nr_oom();
	o->nparams++; /* freed with the options from here on */
	for (size_t i = 0; i + 1 < o->nparams; i++)
		if (!strcmp(o->params[i].name, p->name))
			return nm_fail("parameter '%s' given twice", p->name);
	if (!nr_number(p->value_text, &v))
		return nm_fail("bad value '%s' for parameter '%s' (a number)", p->value_text,
		               p->name);
	o->kparams[o->nparams - 1] = (emu_kparam){p->name, v};
	return 0;
}

/* --tensor ROLE=FILE: the file is read once every option is known. */
static int nr_opt_tensor(struct nr_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	struct nr_param *p;

	if (o->ntensors == EMU_KINPUTS_MAX)
		return nm_fail("too many --tensor options (at most %d)", EMU_KINPUTS_MAX);
	if (!eq || eq == arg || !eq[1])
		return nm_fail("bad --tensor '%s' (want ROLE=FILE.npy, e.g. dy=dy.npy)", arg);
	p = &o->tensor_args[o->ntensors];
	if (nr_split(p, arg, eq) != 0)
		return nr_oom();
	o->ntensors++; /* freed with the options from here on */
	for (size_t i = 0; i + 1 < o->ntensors; i++)
		if (!strcmp(o->tensor_args[i].name, p->name))
			return nm_fail("--tensor %s given twice", p->name);
	return 0;
}

/* Read every --tensor file: float16/32/64 values, or integers (class
 * indices) of an unsigned dtype; 1-D or 2-D. */
static int nr_read_tensors(struct nr_opts *o)
{
	char err[NR_ERR_LEN];

	for (size_t i = 0; i < o->ntensors; i++) {
		nm_npy *a = &o->tensor_files[i];
		const char *path = o->tensor_args[i].value_text;
		if (nm_npy_read(path, a, err, sizeof(err)) != NM_NPY_OK)
			return nm_fail("%s", err[0] ? err : "cannot read a --tensor file");
		o->tensors[i] =
		    (emu_ktensor){o->tensor_args[i].name, a->ndim == 1 ? 1 : a->shape[0],
		                  a->ndim == 1 ? a->shape[0] : a->shape[1], a->values};
	}
	return 0;
}

static int nr_opt_source(struct nr_opts *o, enum nr_src src, const char *opt, const char *arg)
{
	if (o->src != NR_SRC_NONE)
		return nm_fail("%s and %s both give the input (use one)", o->src_opt, opt);
	o->src = src;
	o->src_opt = opt;
	if (src == NR_SRC_INPUT) {
		o->input_path = arg;
	} else if (src == NR_SRC_VALUES) {
		o->values = arg;
	} else {
		int d = 0;
		while (d < NR_NDIST && strcmp(nr_dist_names[d], arg) != 0)
			d++;
		if (d == NR_NDIST)
			return nm_fail(
			    "unknown distribution '%s' (--gen normal uniform logspace ones)", arg);
		o->dist = (enum nr_dist)d;
	}
	return 0;
}

static int nr_opt_range(struct nr_opts *o, const char *arg)
{
	const char *comma = strchr(arg, ',');
	char lo[NM_NUM_LEN * 4];

	if (comma && (size_t)(comma - arg) < sizeof(lo)) {
		memcpy(lo, arg, (size_t)(comma - arg));
		lo[comma - arg] = '\0';
		if (nr_number(lo, &o->lo) && nr_number(comma + 1, &o->hi) && o->lo > 0 &&
		    o->hi >= o->lo && isfinite(o->hi))
			return 0;
	}
	return nm_fail("bad --range '%s' (want LO,HI with 0 < LO <= HI, finite)", arg);
}

static int nr_opt_backend(struct nr_opts *o, const char *arg)
{
	emu_be_kind k = emu_be_by_name(arg);

	if (!strcmp(arg, "all")) {
		o->all = true;
		for (int i = 0; i < EMU_NBE; i++)
			o->want[i] = true;
		return 0;
	}
	if (k == EMU_NBE)
		return nm_fail("unknown backend '%s' (backends: fast exact truth all)", arg);
	o->want[k] = true;
	return 0;
}

static int nr_take(void *ctx, const nm_opt *d, const char *arg)
{
	struct nr_opts *o = ctx;

	o->seen |= 1u << d->id; /* nm_opt_parse refused a second one */
	switch (d->id) {
	case NR_O_POLICY:
		o->policy_spec = arg;
		return 0;
	case NR_O_VARIANT:
		o->variant = arg;
		return 0;
	case NR_O_PARAM:
		return nr_opt_param(o, arg);
	case NR_O_INPUT:
		return nr_opt_source(o, NR_SRC_INPUT, d->lng, arg);
	case NR_O_VALUES:
		return nr_opt_source(o, NR_SRC_VALUES, d->lng, arg);
	case NR_O_GEN:
		return nr_opt_source(o, NR_SRC_GEN, d->lng, arg);
	case NR_O_N:
		return nr_count(arg, d->lng, &o->n);
	case NR_O_ROWS:
		return nr_count(arg, d->lng, &o->rows);
	case NR_O_SEED:
		return nm_parse_count("--seed", arg, 0, UINT64_MAX, &o->seed);
	case NR_O_SCALE:
		if (!nr_number(arg, &o->scale) || !isfinite(o->scale))
			return nm_fail("bad --scale '%s' (a finite number)", arg);
		return 0;
	case NR_O_RANGE:
		return nr_opt_range(o, arg);
	case NR_O_BACKEND:
		return nr_opt_backend(o, arg);
	case NR_O_NO_TRUTH:
		o->no_truth = true;
		return 0;
	case NR_O_CSV:
		o->style = NR_CSV;
		return 0;
	case NR_O_JSON:
		o->style = NR_JSON;
		return 0;
	case NR_O_GPU_TABLES:
		o->gpu_tables = arg;
		return 0;
	case NR_O_RECOMPUTE:
		o->recompute = arg;
		return 0;
	case NR_O_TENSOR:
		return nr_opt_tensor(o, arg);
	}
	return 0;
}

static int nr_take_kernel(void *ctx, const char *a)
{
	struct nr_opts *o = ctx;

	if (o->kernel_name)
		return nm_fail("run takes one KERNEL, '%s' is a second one", a);
	o->kernel_name = a;
	return 0;
}

static int nr_parse_args(struct nr_opts *o, int argc, char **argv)
{
	o->scale = 1;
	o->lo = 0x1p-16;
	o->hi = 0x1p16;
	return nm_opt_parse(&(nm_optparser){.cmd = "run",
	                                    .defs = nr_optdefs,
	                                    .ndefs = sizeof(nr_optdefs) / sizeof(nr_optdefs[0]),
	                                    .take = nr_take,
	                                    .arg = nr_take_kernel,
	                                    .ctx = o},
	                    argc - 1, argv + 1);
}

static void nr_opts_free(struct nr_opts *o)
{
	for (size_t i = 0; i < o->nparams; i++)
		free(o->params[i].text);
	o->nparams = 0;
	for (size_t i = 0; i < o->ntensors; i++) {
		free(o->tensor_args[i].text);
		nm_npy_free(&o->tensor_files[i]);
	}
	o->ntensors = 0;
}

/* ---- kernel, variant, policy, parameters ---- */

static void nr_kernel_list(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < emu_kernel_count() && n < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? " " : "", emu_kernel_at(i)->name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

static void nr_variant_list(const emu_kernel *k, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (const char *const *v = k->variants; *v && n < len; v++) {
		int w = snprintf(buf + n, len - n, "%s%s", v == k->variants ? "" : " ", *v);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

static int nr_resolve(const struct nr_opts *o, struct nr_run_setup *s)
{
	char list[NR_ERR_LEN], err[NR_ERR_LEN];

	nr_kernel_list(list, sizeof(list));
	if (!o->kernel_name)
		return nm_fail("run needs a KERNEL (kernels: %s)", list);
	s->k = emu_kernel_by_name(o->kernel_name);
	if (!s->k)
		return nm_fail("unknown kernel '%s' (kernels: %s)", o->kernel_name, list);
	s->variant = s->k->variants[0];
	if (o->variant) {
		/* a listed variant, or one with a ':' suffix the kernel parses
		 * itself (accum's dot:tc:h100, dot:tc:k=16,neab=2) */
		const char *const *v = s->k->variants;
		while (*v && strcmp(*v, o->variant) != 0 &&
		       !(strncmp(*v, o->variant, strlen(*v)) == 0 && o->variant[strlen(*v)] == ':'))
			v++;
		nr_variant_list(s->k, list, sizeof(list));
		if (!*v)
			return nm_fail("unknown variant '%s' for %s (variants: %s)", o->variant,
			               s->k->name, list);
		s->variant = o->variant;
	}
	if (!o->policy_spec)
		return nm_fail("run needs --policy SPEC (e.g. --policy storage=fp16,compute=fp32)");
	err[0] = '\0';
	if (emu_policy_parse(o->policy_spec, &s->pol, err, sizeof(err)) != EMU_OK)
		return nm_fail("bad policy '%s': %s", o->policy_spec, err[0] ? err : "bad spec");
	err[0] = '\0';
	if (o->recompute && emu_policy_parse(o->recompute, &s->pol2, err, sizeof(err)) != EMU_OK)
		return nm_fail("bad --recompute policy '%s': %s", o->recompute,
		               err[0] ? err : "bad spec");
	for (size_t i = 0; i < o->nparams; i++)
		if (!emu_kernel_reads_param(s->k, o->params[i].name))
			return nm_fail("unknown parameter '%s' for %s (it reads: %s)",
			               o->params[i].name, s->k->name,
			               s->k->params_doc && s->k->params_doc[0] ? s->k->params_doc
			                                                       : "none");
	return 0;
}

/* ---- the input tensor ---- */

static double nr_gen_one(const struct nr_opts *o, uint64_t i)
{
	nm_gen g = {(nm_gen_dist)o->dist, o->scale, o->lo, o->hi, o->seed, 0, 0};
	return nm_gen_one(&g, i);
}

static int nr_alloc_input(struct nr_input *in, uint64_t total)
{
	if (total > NR_MAX_ELEMS)
		return nm_fail("the input has %" PRIu64 " elements (at most %" PRIu64 ")", total,
		               NR_MAX_ELEMS);
	in->x = malloc((size_t)total * sizeof(*in->x));
	return in->x ? 0 : nr_oom();
}

static int nr_gen_input(const struct nr_opts *o, struct nr_input *in)
{
	uint64_t rows = o->rows ? o->rows : 1;
	int rc;

	if (!(o->seen & (1u << NR_O_N)))
		return nm_fail("--gen needs --n N (elements per row)");
	if (rows > NR_MAX_ELEMS || o->n > NR_MAX_ELEMS / rows)
		return nm_fail("--n %" PRIu64 " x --rows %" PRIu64
		               " is too many elements (at most %" PRIu64 ")",
		               o->n, rows, NR_MAX_ELEMS);
	rc = nr_alloc_input(in, rows * o->n);
	if (rc)
		return rc;
	in->rows = (size_t)rows;
	in->cols = (size_t)o->n;
	for (uint64_t i = 0; i < rows * o->n; i++)
		/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): nm_fail never returns 0 */
		in->x[i] = nr_gen_one(o, i);
	if (o->dist == NR_LOGSPACE)
		snprintf(in->desc, sizeof(in->desc), "gen logspace %.17g..%.17g", o->lo, o->hi);
	else
		snprintf(in->desc, sizeof(in->desc), "gen %s", nr_dist_names[o->dist]);
	if (o->scale != 1) {
		size_t n = strlen(in->desc);
		snprintf(in->desc + n, sizeof(in->desc) - n, " scale %.17g", o->scale);
	}
	return 0;
}

static int nr_values_input(const struct nr_opts *o, struct nr_input *in)
{
	const char *s = o->values;
	uint64_t total = 1, k = 0;
	int rc;

	for (const char *p = s; *p; p++)
		total += *p == ',';
	rc = nr_alloc_input(in, total);
	if (rc)
		return rc;
	for (;;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		char *tok = malloc(len + 1);
		bool good;

		if (!tok)
			return nr_oom();
		memcpy(tok, s, len);
		tok[len] = '\0';
		good = nr_number(tok, &in->x[k]);
		if (!good) {
			rc = nm_fail("bad value '%s' in --values (item %" PRIu64 ")", tok, k + 1);
			free(tok);
			return rc;
		}
		free(tok);
		k++;
		if (!end)
			break;
		s = end + 1;
	}
	in->rows = 1;
	in->cols = (size_t)total;
	snprintf(in->desc, sizeof(in->desc), "values");
	return 0;
}

static int nr_file_input(const struct nr_opts *o, struct nr_input *in)
{
	nm_npy a;
	char err[NR_ERR_LEN];

	err[0] = '\0';
	if (nm_npy_read(o->input_path, &a, err, sizeof(err)) != NM_NPY_OK)
		return nm_fail("%s", err[0] ? err : "cannot read the --input file");
	if (a.dtype != NM_NPY_F2 && a.dtype != NM_NPY_F4 && a.dtype != NM_NPY_F8) {
		nm_npy_dtype t = a.dtype;
		nm_npy_free(&a);
		return nm_fail("%s: dtype %s (run takes float16, float32 or float64)",
		               o->input_path, nm_npy_dtype_name(t));
	}
	if (a.count == 0) {
		nm_npy_free(&a);
		return nm_fail("%s: an empty array", o->input_path);
	}
	in->x = a.values; /* ours now */
	a.values = NULL;
	in->rows = a.ndim == 2 ? a.shape[0] : 1;
	in->cols = a.ndim == 2 ? a.shape[1] : a.shape[0];
	snprintf(in->desc, sizeof(in->desc), "file %s (%s)", o->input_path,
	         nm_npy_dtype_name(a.dtype));
	nm_npy_free(&a);
	return 0;
}

/* --rows R: reshape the row-major data into R rows. */
static int nr_reshape(const struct nr_opts *o, struct nr_input *in)
{
	size_t total = in->rows * in->cols;

	if (!o->rows || o->src == NR_SRC_GEN)
		return 0;
	if (o->rows > total || total % o->rows)
		return nm_fail("shape mismatch: %zu values do not make %" PRIu64
		               " equal rows (--rows)",
		               total, o->rows);
	in->rows = (size_t)o->rows;
	in->cols = total / in->rows;
	return 0;
}

static int nr_build_input(const struct nr_opts *o, struct nr_input *in)
{
	int rc;

	if (o->src == NR_SRC_NONE)
		return nm_fail("run needs an input: --input FILE, --values LIST or --gen DIST");
	if (o->src != NR_SRC_GEN) {
		static const enum nr_optid gen_only[] = {NR_O_N, NR_O_SCALE, NR_O_RANGE};
		static const char *const gen_only_names[] = {"--n", "--scale", "--range"};
		for (size_t i = 0; i < 3; i++)
			if (o->seen & (1u << gen_only[i]))
				return nm_fail("%s goes with --gen (not with %s)",
				               gen_only_names[i], o->src_opt);
	} else if ((o->seen & (1u << NR_O_RANGE)) && o->dist != NR_LOGSPACE) {
		return nm_fail("--range goes with --gen logspace (not --gen %s)",
		               nr_dist_names[o->dist]);
	}
	if (o->src == NR_SRC_GEN)
		rc = nr_gen_input(o, in);
	else if (o->src == NR_SRC_VALUES)
		rc = nr_values_input(o, in);
	else
		rc = nr_file_input(o, in);
	return rc ? rc : nr_reshape(o, in);
}

/* ---- running ---- */

static bool nr_same_stats(const emu_be_stats *a, const emu_be_stats *b)
{
	return memcmp(a->ops, b->ops, sizeof(a->ops)) == 0 &&
	       memcmp(a->flags, b->flags, sizeof(a->flags)) == 0 && a->all_flags == b->all_flags &&
	       a->first_set == b->first_set && a->in_n == b->in_n &&
	       a->in_changed == b->in_changed && a->in_overflow == b->in_overflow &&
	       a->in_flushed == b->in_flushed &&
	       (!a->first_set ||
	        (a->first_op == b->first_op && a->first_flags == b->first_flags &&
	         a->first_index == b->first_index && strcmp(a->first_step, b->first_step) == 0));
}

/* Fast against exact: every output's encodings, then the flag statistics. */
static void nr_agree(struct nr_report *r)
{
	const emu_run *f = &r->runs[EMU_BE_FAST], *e = &r->runs[EMU_BE_EXACT];

	r->compared = true;
	r->agree = false;
	if (f->out.n != e->out.n) {
		snprintf(r->why, sizeof(r->why), "%d outputs against %d", f->out.n, e->out.n);
		return;
	}
	for (int i = 0; i < f->out.n; i++) {
		const emu_kout_item *a = &f->out.item[i], *b = &e->out.item[i];
		if (a->n != b->n || strcmp(a->name, b->name) != 0) {
			snprintf(r->why, sizeof(r->why), "output %s[%zu] against %s[%zu]", a->name,
			         a->n, b->name, b->n);
			return;
		}
		for (size_t j = 0; j < a->n; j++) {
			emu_bits x = emu_encode(a->fmt, emu_kout_d(NULL, a, j)),
			         y = emu_encode(b->fmt, emu_kout_d(NULL, b, j));
			char bx[16], by[16];
			if (x != y) {
				snprintf(r->why, sizeof(r->why), "%s[%zu]: fast %s, exact %s",
				         a->name, j, nm_fmt_bits(a->fmt, x, bx, sizeof(bx)),
				         nm_fmt_bits(b->fmt, y, by, sizeof(by)));
				return;
			}
		}
	}
	if (!nr_same_stats(&f->be.st, &e->be.st)) {
		snprintf(r->why, sizeof(r->why), "the flag statistics differ");
		return;
	}
	r->agree = true;
}

/*
 * Progress on a terminal: a big run (truth takes minutes on 2^27 elements)
 * says which phase it is in, on one line of stderr that the next phase
 * overwrites and the end erases. Nothing when stderr is not a terminal, so
 * scripts and the error convention see no extra line.
 */
#define NR_PROGRESS_ELEMS ((uint64_t)1 << 22)

static struct timespec nr_t0;
static bool nr_progress_on;

static void nr_progress_start(uint64_t elems)
{
	nr_progress_on = elems >= NR_PROGRESS_ELEMS && isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &nr_t0);
}

static void nr_progress(const struct nr_opts *o, const char *phase)
{
	struct timespec t;
	char line[128];
	int n;

	(void)o;
	if (!nr_progress_on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (phase)
		n = snprintf(line, sizeof(line), "\rnanmap run: %s, %.1f s elapsed\033[K", phase,
		             (double)(t.tv_sec - nr_t0.tv_sec) + (t.tv_nsec - nr_t0.tv_nsec) / 1e9);
	else
		n = snprintf(line, sizeof(line), "\r\033[K");
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
		nr_progress_on = false;
}

/* The backends shown (shown) and run (run: truth too when the metrics need
 * it); 0, or an error for --no-truth with --backend truth. */
static int nr_plan(const struct nr_opts *o, bool *shown, bool *run)
{
	memcpy(run, o->want, sizeof(o->want));
	if (!run[EMU_BE_FAST] && !run[EMU_BE_EXACT] && !run[EMU_BE_TRUTH])
		run[EMU_BE_FAST] = true;
	if (o->no_truth && run[EMU_BE_TRUTH] && !o->all)
		return nm_fail("--no-truth and --backend truth exclude each other");
	if (o->no_truth)
		run[EMU_BE_TRUTH] = false;
	if (shown)
		memcpy(shown, run, sizeof(o->want));
	if (!o->no_truth && (run[EMU_BE_FAST] || run[EMU_BE_EXACT]))
		run[EMU_BE_TRUTH] = true; /* the metrics need it */
	return 0;
}

/*
 * Memory, checked before anything is allocated: the input's doubles, and
 * per backend the kernel's values (emu_kernel_values), which every backend
 * keeps until the report is written (truth twice: its two runs). A fast or exact value is a
 * double; a truth value an mpfr_t and its limbs, side by side in the vector's one block
 * (docs/engine.md).
 */
#define NR_TRUTH_VALUE_BYTES (sizeof(mpfr_t) + EMU_TRUTH_PREC / 8)

/* The memory there is (nm_file.h: MemAvailable, or NANMAP_MEMORY). */
static double nr_memory_available(void)
{
	return nm_memory_available();
}

static const char *nr_bytes(double b, char *buf, size_t len)
{
	if (b >= 10e9)
		snprintf(buf, len, "%.0f GB", b / 1e9);
	else if (b >= 1e9)
		snprintf(buf, len, "%.1f GB", b / 1e9);
	else if (b >= 1e6)
		snprintf(buf, len, "%.0f MB", b / 1e6);
	else
		snprintf(buf, len, "%.0f bytes", b);
	return buf;
}

/* what names the input ("--n 2147483648", "--input x.npy") in the message. */
static int nr_check_memory(const struct nr_opts *o, const struct nr_run_setup *s, double rows,
                           double cols, const char *what)
{
	emu_kin kin = {NULL, 0, 0, o->kparams, o->nparams, o->seed, NULL, 0};
	bool run[EMU_NBE];
	double per[EMU_NBE] = {0}, total, avail, vals;
	char a[24], in_s[24], av[24], b[EMU_NBE][24], parts[160] = "";

	if (nr_plan(o, NULL, run))
		return NM_EXIT_ERR;
	vals = emu_kernel_values(s->k, (size_t)rows, (size_t)cols, &kin);
	total = rows * cols * sizeof(double);
	for (int k = 0; k < EMU_NBE; k++) {
		if (!run[k])
			continue;
		/* truth: two runs when storing changes the inputs (end to end and
		 * stored), both kept for the report */
		per[k] = vals * (double)(k == EMU_BE_TRUTH ? 2 * NR_TRUTH_VALUE_BYTES : sizeof(double));
		if (k != EMU_BE_TRUTH && o->recompute)
			per[k] *= 2; /* the second run is kept beside the first */
		total += per[k];
	}
	avail = nr_memory_available();
	if (avail < 0 || total <= avail)
		return 0;
	for (int k = 0, n = 0; k < EMU_NBE; k++)
		if (run[k]) {
			size_t used = strlen(parts);
			snprintf(parts + used, sizeof(parts) - used, "%s%s %s", n++ ? ", " : "",
			         emu_be_name((emu_be_kind)k), nr_bytes(per[k], b[k], sizeof(b[k])));
		}
	return nm_fail("%s: the run needs about %s (input %s, %s), more than the %s of memory "
	               "available%s",
	               what, nr_bytes(total, a, sizeof(a)),
	               nr_bytes(rows * cols * sizeof(double), in_s, sizeof(in_s)), parts,
	               nr_bytes(avail, av, sizeof(av)),
	               run[EMU_BE_TRUTH] ? " (--no-truth skips truth)" : "");
}

/*
 * Before --gen allocates (in NULL: its shape is --n x --rows), or once a
 * file or --values is read (in: the shape read), the memory check; the
 * progress line's clock starts here too.
 */
static int nr_input_memory(const struct nr_opts *o, const struct nr_run_setup *s,
                           const struct nr_input *in)
{
	uint64_t rows = o->rows ? o->rows : 1;
	char what[96];

	if (!in) {
		if (o->src != NR_SRC_GEN || !(o->seen & (1u << NR_O_N)) || rows > NR_MAX_ELEMS ||
		    o->n > NR_MAX_ELEMS / rows)
			return 0; /* nr_build_input says what is wrong */
		if (o->rows)
			snprintf(what, sizeof(what), "--n %" PRIu64 " x --rows %" PRIu64, o->n, rows);
		else
			snprintf(what, sizeof(what), "--n %" PRIu64, o->n);
		if (nr_check_memory(o, s, (double)rows, (double)o->n, what))
			return NM_EXIT_ERR;
		nr_progress_start(o->n * rows);
		nr_progress(o, "generating the input");
		return 0;
	}
	if (o->src == NR_SRC_GEN)
		return 0;
	if (o->src == NR_SRC_INPUT)
		snprintf(what, sizeof(what), "--input %s", o->input_path);
	else
		snprintf(what, sizeof(what), "--values");
	if (nr_check_memory(o, s, (double)in->rows, (double)in->cols, what))
		return NM_EXIT_ERR;
	nr_progress_start((uint64_t)in->rows * in->cols);
	return 0;
}

static int nr_execute(struct nr_report *r)
{
	const struct nr_opts *o = r->o;
	emu_kin kin = {r->in->x,   r->in->rows, r->in->cols, o->kparams,
	               o->nparams, o->seed,     o->tensors,  o->ntensors};
	bool want[EMU_NBE];
	static const emu_be_kind order[EMU_NBE] = {EMU_BE_TRUTH, EMU_BE_FAST, EMU_BE_EXACT};
	char err[NR_ERR_LEN];

	if (nr_plan(o, r->shown, want))
		return NM_EXIT_ERR;
	if (o->recompute && !want[EMU_BE_FAST] && !want[EMU_BE_EXACT])
		return nm_fail("--recompute compares fast or exact runs (not --backend truth alone)");
	if (o->gpu_tables && emu_gpu_tables_load(o->gpu_tables, &r->tables, err, sizeof(err)))
		return nm_fail("%s", err);
	for (int i = 0; i < EMU_NBE; i++) {
		emu_be_kind k = order[i];
		if (!want[k])
			continue;
		err[0] = '\0';
		r->ran[k] = true;
		nr_progress(o, k == EMU_BE_TRUTH ? "truth backend (256-bit MPFR)"
		               : k == EMU_BE_FAST ? "fast backend"
		                                  : "exact backend (MPFR in the format)");
		int bad = k == EMU_BE_TRUTH
		              ? emu_run_truth(r->s->k, &r->s->pol, r->s->variant, &kin, &r->truth,
		                              err, sizeof(err))
		              : emu_run_kernel_tables(r->s->k, &r->s->pol, r->s->variant, &kin, k,
		                                      o->gpu_tables ? &r->tables : NULL,
		                                      &r->runs[k], err, sizeof(err));
		if (bad) {
			nr_progress(o, NULL); /* the error line starts at the left */
			return nm_fail("%s", err[0] ? err : "the kernel failed");
		}
		if (k != EMU_BE_TRUTH && r->ran[EMU_BE_TRUTH])
			emu_run_compare(&r->runs[k], &r->truth);
	}
	for (int k = 0; o->recompute && k < EMU_NBE; k++) {
		if (k == EMU_BE_TRUTH || !r->ran[k])
			continue;
		err[0] = '\0';
		r->reran[k] = true;
		nr_progress(o, "recomputing");
		if (emu_run_kernel_tables(r->s->k, &r->s->pol2, r->s->variant, &kin, (emu_be_kind)k,
		                          o->gpu_tables ? &r->tables : NULL, &r->reruns[k], err,
		                          sizeof(err)) != 0 ||
		    emu_recompute_compare(&r->runs[k], &r->reruns[k], r->diff[k], err,
		                          sizeof(err)) != 0) {
			nr_progress(o, NULL);
			return nm_fail("--recompute %s: %s", o->recompute,
			               err[0] ? err : "the kernel failed");
		}
	}
	nr_progress(o, NULL);
	if (r->ran[EMU_BE_FAST] && r->ran[EMU_BE_EXACT] && o->gpu_tables)
		r->tabled = true;
	else if (r->ran[EMU_BE_FAST] && r->ran[EMU_BE_EXACT])
		nr_agree(r);
	return 0;
}

/* ---- help and main ---- */

static const char nr_usage[] =
    "usage: nanmap run KERNEL --policy SPEC [--variant V] [--param NAME=VALUE]...\n"
    "                  (--input FILE.npy | --values V1,V2,... | --gen DIST --n N)\n"
    "                  [--rows R] [--seed S] [--scale X] [--range LO,HI]\n"
    "                  [--backend fast|exact|truth|all] [--no-truth] [--csv|--json]\n"
    "                  [--gpu-tables FILE|DIR] [--recompute SPEC]\n"
    "                  [--tensor ROLE=FILE.npy]...\n"
    "\n"
    "Run a training kernel on the fast emulator (default), the exact-format MPFR\n"
    "backend (exact), the 256-bit MPFR truth (truth), or all three; report each\n"
    "run's status (ok underflow overflow inf nan), outputs, max ulp and normwise\n"
    "relative error against truth, flag counts per operation kind and the first\n"
    "operation that raised overflow, invalid or divbyzero. --backend all also\n"
    "says whether fast and exact agree bit for bit (fast == exact: yes|no).\n"
    "\n"
    "  --policy SPEC   storage=FMT[,compute=FMT][,accum=FMT][,round=MODE]\n"
    "                  [,overflow=ieee|sat][,subnormals=keep|ftz|daz|ftzdaz]\n"
    "                  [,seed=N][,scale=RECIPE][,role=act|weight|grad]\n"
    "                  [,grad=FMT][,state=FMT] (an optimizer's gradients and\n"
    "                  states; default storage); RECIPE: any of nanmap quant --list\n"
    "                  (none tensor delayed:L:M mx32:floor mxfp8 nvfp4 ...) or a\n"
    "                  custom KEY=VALUE recipe (docs/recipes.md)\n"
    "  --variant V     default: the kernel's first variant\n"
    "  --param N=V     a numeric kernel parameter (repeat for more)\n"
    "  --input FILE    .npy, float16/float32/float64, 1-D (one row) or 2-D\n"
    "  --values LIST   comma-separated numbers, one row (--rows R reshapes)\n"
    "  --gen DIST      normal (sd X), uniform [-X, X), logspace (|x| log-uniform\n"
    "                  over --range LO,HI, default 0x1p-16,0x1p16, times X, random\n"
    "                  sign), ones (all X); X is --scale (default 1); --n elements\n"
    "                  per row, --rows rows (default 1), drawn from --seed\n"
    "  --seed S        the generator's seed and the kernel's (default 0)\n"
    "  --no-truth      skip the truth run (no metrics; it is slow on big inputs)\n"
    "  --csv           rows backend,kind,key,value; --json: one object\n"
    "  --gpu-tables F  the fast backend takes fp16/bf16 exp, log, exp2, rsqrt and\n"
    "                  sqrt from the GPU's tables (bin/nanmap-gpu's gpu-tables.txt,\n"
    "                  or its directory); fast and exact are then not compared\n"
    "  --recompute P2  run the kernel again under policy P2 (activation\n"
    "                  checkpointing's recomputation) on fast and exact, and\n"
    "                  report per output how many elements differ from the first\n"
    "                  run and how many became inf or NaN\n"
    "  --tensor R=F    a tensor the kernel consumes, given by role instead of\n"
    "                  drawn from the seed or built from its parameters (dy, target,\n"
    "                  w, ...: nanmap golden export --out writes them); .npy of\n"
    "                  float16/32/64 values, or unsigned class indices\n"
    "\n"
    "Example: nanmap run softmax_ce --policy storage=fp16 --variant naive --values 11.09375,0\n"
    "\n"
    "Kernels (variants; parameters):\n";

static int nr_help(void)
{
	fputs(nr_usage, stdout);
	for (size_t i = 0; i < emu_kernel_count(); i++) {
		const emu_kernel *k = emu_kernel_at(i);
		char v[NR_ERR_LEN];
		nr_variant_list(k, v, sizeof(v));
		printf("  %-12s %s; %s\n", k->name, v,
		       k->params_doc && k->params_doc[0] ? k->params_doc : "no parameters");
	}
	fputs("\nErrors: one line on stderr, exit status 2. See docs/run.md.\n", stdout);
	if (fflush(stdout) != 0 || ferror(stdout))
		return nm_fail("cannot write the output: %s", strerror(errno));
	return 0;
}

static int nr_report(struct nr_report *r)
{
	nm_buf b = {0};
	int rc = 0;

	nr_write(&b, r);
	if (b.oom) {
		rc = nr_oom();
	} else {
		if (b.len)
			fwrite(b.s, 1, b.len, stdout);
		if (fflush(stdout) != 0 || ferror(stdout))
			rc = nm_fail("cannot write the output: %s", strerror(errno));
	}
	nm_buf_free(&b);
	return rc;
}

int nm_run_main(int argc, char **argv)
{
	struct nr_opts o;
	struct nr_run_setup s;
	struct nr_input in;
	struct nr_report r;
	int rc;

	if (nm_wants_help(argc - 1, argv + 1))
		return nr_help();
	memset(&o, 0, sizeof(o));
	memset(&s, 0, sizeof(s));
	memset(&in, 0, sizeof(in));
	memset(&r, 0, sizeof(r));
	r.o = &o;
	r.s = &s;
	r.in = &in;
	rc = nr_parse_args(&o, argc, argv);
	if (!rc)
		rc = nr_resolve(&o, &s);
	if (!rc)
		rc = nr_input_memory(&o, &s, NULL);
	if (!rc)
		rc = nr_build_input(&o, &in);
	if (!rc)
		rc = nr_read_tensors(&o);
	if (!rc)
		rc = nr_input_memory(&o, &s, &in);
	if (!rc)
		rc = nr_execute(&r);
	if (!rc)
		rc = nr_report(&r);
	for (int i = 0; i < EMU_NBE; i++) {
		if (r.ran[i] && i != EMU_BE_TRUTH)
			emu_run_free(&r.runs[i]);
		if (r.reran[i])
			emu_run_free(&r.reruns[i]);
	}
	if (r.ran[EMU_BE_TRUTH])
		emu_truth_free(&r.truth);
	emu_gpu_tables_free(&r.tables);
	free(in.x);
	nr_opts_free(&o);
	return rc;
}
