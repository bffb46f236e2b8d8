/*
 * nm_quant.c — `nanmap quant`: a scaling recipe applied to a tensor (an
 * .npy file, every tensor of a .safetensors checkpoint, or the seeded
 * generator), with the statistics of emu/recipes/recipe.h per tensor (docs/quant.md).
 *
 * Same contract as the other commands: every error is one line on stderr
 * naming the bad input, exit status 2; the report is built in memory and
 * printed only when every input was good, and output files are staged and
 * renamed into place together after that, so an error leaves none.
 *
 * Why parts: a checkpoint is larger than memory is willing to be doubled
 * for (the quantiser keeps about 40 bytes per element). A tensor is
 * decoded and quantised in parts of whole rows (emu_quantize_part), each a
 * multiple of the block's row extent and of 16 (RHT's column groups), so
 * every block and every Hadamard group lies inside one part and the
 * result is the whole tensor's bit for bit. NVFP4's second-level scale
 * needs the tensor's amax before any block is scaled: a first pass takes
 * it, as the max of the parts' (emu_recipe_tensor_amax; exact, since
 * parts are whole RHT groups). Recipes whose scale depends on every row
 * (tensor, none, delayed, a block of 0 rows) take the tensor in one part,
 * as does a tensor whose amax is NaN (the part API reads a NaN tensor
 * amax as "take this part's", which would differ per part).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/cli/nm_quant.h"
#include "emu/cli/nm_quant_report.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_gen.h"
#include "emu/io/nm_npy.h"
#include "emu/io/nm_parse.h"
#include "emu/io/nm_safetensors.h"
#include "emu/recipes/recipe.h"

/* Elements per part, about (2^21: 16 MiB of doubles in, ~80 MiB held). */
#define NQ_PART_ELEMS ((size_t)1 << 21)
/* --gen's largest tensor, as nanmap run's. */
#define NQ_MAX_GEN ((uint64_t)1 << 31)
#define NQ_MAX_WORST 100000

int nq_oom(void)
{
	return nm_fail("out of memory");
}

/* ---- options ---- */

enum nq_optid {
	NQ_O_RECIPE = 0,
	NQ_O_INPUT,
	NQ_O_GEN,
	NQ_O_N,
	NQ_O_ROWS,
	NQ_O_SCALE,
	NQ_O_OUTLIERS,
	NQ_O_ROLE,
	NQ_O_COLWISE,
	NQ_O_TENSOR,
	NQ_O_SEED,
	NQ_O_PER_BLOCK,
	NQ_O_CSV,
	NQ_O_JSON,
	NQ_O_OUT,
	NQ_O_ENCODINGS,
	NQ_O_PROGRESS,
	NQ_O_LIST,
};

static const nm_opt nq_optdefs[] = {
    {NULL, "--recipe", NQ_O_RECIPE, NM_OPTF_VALUE, 0},
    {NULL, "--input", NQ_O_INPUT, NM_OPTF_VALUE, 0},
    {NULL, "--gen", NQ_O_GEN, NM_OPTF_VALUE, 0},
    {NULL, "--n", NQ_O_N, NM_OPTF_VALUE, 0},
    {NULL, "--rows", NQ_O_ROWS, NM_OPTF_VALUE, 0},
    {NULL, "--scale", NQ_O_SCALE, NM_OPTF_VALUE, 0},
    {NULL, "--outliers", NQ_O_OUTLIERS, NM_OPTF_VALUE, 0},
    {NULL, "--role", NQ_O_ROLE, NM_OPTF_VALUE, 0},
    {NULL, "--colwise", NQ_O_COLWISE, 0, 0},
    {NULL, "--tensor", NQ_O_TENSOR, NM_OPTF_VALUE | NM_OPTF_REPEAT, 0},
    {NULL, "--seed", NQ_O_SEED, NM_OPTF_VALUE, 0},
    {NULL, "--per-block", NQ_O_PER_BLOCK, 0, 0},
    {NULL, "--csv", NQ_O_CSV, 0, 1},
    {NULL, "--json", NQ_O_JSON, 0, 1},
    {NULL, "--out", NQ_O_OUT, NM_OPTF_VALUE, 0},
    {NULL, "--encodings", NQ_O_ENCODINGS, 0, 0},
    {NULL, "--progress", NQ_O_PROGRESS, 0, 0},
    {NULL, "--list", NQ_O_LIST, 0, 0},
};

static bool nq_number(const char *s, double *out)
{
	nm_number x;

	if (nm_parse_number(s, &x) != NM_OK)
		return false;
	*out = strtod(s, NULL);
	return true;
}

static int nq_opt_source(struct nq_opts *o, enum nq_src src, const char *opt, const char *arg)
{
	if (o->src != NQ_SRC_NONE)
		return nm_fail("%s and %s both give the input (use one)", o->src_opt, opt);
	o->src = src;
	o->src_opt = opt;
	if (src == NQ_SRC_INPUT) {
		o->input = arg;
		return 0;
	}
	int d = nm_gen_dist_parse(arg);
	if (d < 0)
		return nm_fail("unknown distribution '%s' (--gen normal uniform logspace ones)",
		               arg);
	o->gen.dist = (nm_gen_dist)d;
	return 0;
}

static int nq_opt_outliers(struct nq_opts *o, const char *arg)
{
	const char *colon = strchr(arg, ':');
	char k[NM_NUM_LEN * 4];
	double kv, fv;

	if (colon && (size_t)(colon - arg) < sizeof(k)) {
		memcpy(k, arg, (size_t)(colon - arg));
		k[colon - arg] = '\0';
		if (nq_number(k, &kv) && nq_number(colon + 1, &fv) && isfinite(kv) && fv >= 0 &&
		    fv <= 1) {
			o->gen.outlier_k = kv;
			o->gen.outlier_frac = fv;
			return 0;
		}
	}
	return nm_fail("bad --outliers '%s' (want K:F, K finite, 0 <= F <= 1, e.g. 100:0.001)",
	               arg);
}

static int nq_take(void *ctx, const nm_opt *d, const char *arg)
{
	struct nq_opts *o = ctx;

	o->seen |= 1u << d->id;
	o->per_block_open = d->id == NQ_O_PER_BLOCK;
	switch (d->id) {
	case NQ_O_RECIPE:
		o->recipe_spec = arg;
		return 0;
	case NQ_O_INPUT:
		return nq_opt_source(o, NQ_SRC_INPUT, d->lng, arg);
	case NQ_O_GEN:
		return nq_opt_source(o, NQ_SRC_GEN, d->lng, arg);
	case NQ_O_N:
		return nm_parse_count(d->lng, arg, 0, NQ_MAX_GEN, &o->n);
	case NQ_O_ROWS:
		return nm_parse_count(d->lng, arg, 1, NQ_MAX_GEN, &o->rows);
	case NQ_O_SCALE:
		if (!nq_number(arg, &o->gen.scale) || !isfinite(o->gen.scale))
			return nm_fail("bad --scale '%s' (a finite number)", arg);
		return 0;
	case NQ_O_OUTLIERS:
		return nq_opt_outliers(o, arg);
	case NQ_O_ROLE:
		o->role = emu_role_by_name(arg);
		if (o->role == EMU_NROLES)
			return nm_fail("unknown --role '%s' (act weight grad)", arg);
		return 0;
	case NQ_O_COLWISE:
		o->colwise = true;
		return 0;
	case NQ_O_TENSOR:
		for (size_t i = 0; i < o->ntensors; i++)
			if (!strcmp(o->tensors[i], arg))
				return nm_fail("--tensor '%s' given twice", arg);
		o->tensors[o->ntensors++] = arg; /* room for every argv word: nq_parse_args */
		return 0;
	case NQ_O_SEED:
		return nm_parse_count("--seed", arg, 0, UINT64_MAX, &o->seed);
	case NQ_O_PER_BLOCK:
		o->worst_k = 10;
		return 0;
	case NQ_O_CSV:
		o->style = NQ_CSV;
		return 0;
	case NQ_O_JSON:
		o->style = NQ_JSON;
		return 0;
	case NQ_O_OUT:
		o->out = arg;
		return 0;
	case NQ_O_ENCODINGS:
		o->encodings = true;
		return 0;
	case NQ_O_PROGRESS:
		o->progress = true;
		return 0;
	case NQ_O_LIST:
		o->list = true;
		return 0;
	}
	return 0;
}

/* The one argument quant takes: K right after --per-block. */
static int nq_take_arg(void *ctx, const char *a)
{
	struct nq_opts *o = ctx;

	if (!o->per_block_open)
		return nm_fail("quant takes no arguments, '%s' is one (try: nanmap quant --help)",
		               a);
	o->per_block_open = false;
	return nm_parse_count("--per-block", a, 1, NQ_MAX_WORST, &o->worst_k);
}

static int nq_parse_args(struct nq_opts *o, int argc, char **argv)
{
	o->gen.scale = 1;
	o->gen.lo = 0x1p-16;
	o->gen.hi = 0x1p16;
	o->tensors = calloc((size_t)argc + 1, sizeof(*o->tensors));
	if (!o->tensors)
		return nq_oom();
	return nm_opt_parse(&(nm_optparser){.cmd = "quant",
	                                    .defs = nq_optdefs,
	                                    .ndefs = sizeof(nq_optdefs) / sizeof(nq_optdefs[0]),
	                                    .take = nq_take,
	                                    .arg = nq_take_arg,
	                                    .ctx = o},
	                    argc - 1, argv + 1);
}

bool nq_ends_with(const char *s, const char *suffix)
{
	if (!s)
		return false;
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* Options that need or exclude one another, before any file is opened. */
static int nq_check_opts(const struct nq_opts *o)
{
	static const struct {
		enum nq_optid id;
		const char *name;
	} gen_only[] = {{NQ_O_N, "--n"},
	                {NQ_O_ROWS, "--rows"},
	                {NQ_O_SCALE, "--scale"},
	                {NQ_O_OUTLIERS, "--outliers"}};

	if (!o->recipe_spec)
		return nm_fail("quant needs --recipe NAME|SPEC (nanmap quant --list)");
	if (o->src == NQ_SRC_NONE)
		return nm_fail("quant needs an input: --input FILE or --gen DIST --n N");
	if (o->src != NQ_SRC_GEN) {
		for (size_t i = 0; i < sizeof(gen_only) / sizeof(gen_only[0]); i++)
			if (o->seen & (1u << gen_only[i].id))
				return nm_fail("%s goes with --gen (not with --input)",
				               gen_only[i].name);
	} else if (!(o->seen & (1u << NQ_O_N))) {
		return nm_fail("--gen needs --n N (elements per row)");
	}
	if (o->ntensors && (o->src != NQ_SRC_INPUT || !nq_ends_with(o->input, ".safetensors")))
		return nm_fail("--tensor '%s' goes with a .safetensors --input", o->tensors[0]);
	if (o->encodings && !o->out)
		return nm_fail("--encodings goes with --out FILE");
	if (o->out && !nq_ends_with(o->out, ".npy") && !nq_ends_with(o->out, ".safetensors"))
		return nm_fail("--out '%s': want a .npy or .safetensors file name", o->out);
	if (o->worst_k && o->style == NQ_CSV)
		return nm_fail("--per-block goes with the table or --json (not --csv: one row per "
		               "tensor)");
	return 0;
}

/* ---- the input: tensors and how to read their rows ---- */

/* Rows [row0, row0 + nrows) of tensor t into out; 0, or an error line. */
static int nq_fetch(const struct nq_input *in, const struct nq_tensor *t, size_t row0, size_t nrows,
                    double *out)
{
	size_t n = nrows * t->cols, first = row0 * t->cols;
	char err[NQ_ERR_LEN];

	if (in->kind == NQ_SRC_GEN) {
		for (size_t i = 0; i < n; i++)
			out[i] = nm_gen_one(&in->gen, first + i);
	} else if (!in->is_st) {
		if (n)
			memcpy(out, in->npy.values + first, n * sizeof(*out));
	} else {
		err[0] = '\0';
		if (nm_st_decode(&in->stf, t->st, first, n, out, err, sizeof(err)) != NM_ST_OK)
			return nm_fail("%s", err[0] ? err : "cannot decode the --input file");
	}
	return 0;
}

static const char *nq_npy_dtype(nm_npy_dtype t)
{
	return t == NM_NPY_F2 ? "F16" : t == NM_NPY_F4 ? "F32" : "F64";
}

static void nq_shape_2d(struct nq_tensor *t)
{
	uint64_t lead = 1;

	if (t->ndim == 0) {
		t->rows = t->cols = 1;
		return;
	}
	for (int i = 0; i + 1 < t->ndim; i++)
		lead *= t->shape[i];
	t->rows = (size_t)lead;
	t->cols = (size_t)t->shape[t->ndim - 1];
	if (t->ndim == 1)
		t->rows = 1;
}

static int nq_open_st(const struct nq_opts *o, struct nq_input *in)
{
	char err[NQ_ERR_LEN];
	const nm_st_file *f = &in->stf;

	err[0] = '\0';
	if (nm_st_open(o->input, &in->stf, err, sizeof(err)) != NM_ST_OK)
		return nm_fail("%s", err[0] ? err : "cannot read the --input file");
	in->is_st = true;
	size_t want = o->ntensors ? o->ntensors : f->ntensors;
	in->t = calloc(want ? want : 1, sizeof(*in->t));
	if (!in->t)
		return nq_oom();
	for (size_t i = 0; i < want; i++) {
		const nm_st_tensor *s = o->ntensors ? nm_st_find(f, o->tensors[i]) : &f->t[i];
		struct nq_tensor *t = &in->t[in->nt];
		if (!s)
			return nm_fail("%s: no tensor '%s' (--tensor)", o->input, o->tensors[i]);
		if (o->ntensors && !nm_st_dtype_decodable(s->dtype))
			return nm_fail(
			    "%s: tensor '%s' is %s, which quant cannot decode (--tensor)", o->input,
			    s->name, nm_st_dtype_name(s->dtype));
		t->name = strdup(s->name);
		if (!t->name)
			return nq_oom();
		in->nt++;
		t->dtype = nm_st_dtype_name(s->dtype);
		t->ndim = s->ndim;
		memcpy(t->shape, s->shape, sizeof(t->shape));
		t->elem_bytes = (nm_st_dtype_bits(s->dtype) + 7) / 8;
		t->skipped = !nm_st_dtype_decodable(s->dtype);
		t->st = s;
		nq_shape_2d(t);
	}
	return 0;
}

static int nq_open_npy(const struct nq_opts *o, struct nq_input *in)
{
	char err[NQ_ERR_LEN];
	struct nq_tensor *t;

	err[0] = '\0';
	if (nm_npy_read(o->input, &in->npy, err, sizeof(err)) != NM_NPY_OK)
		return nm_fail("%s", err[0] ? err : "cannot read the --input file");
	if (in->npy.dtype != NM_NPY_F2 && in->npy.dtype != NM_NPY_F4 && in->npy.dtype != NM_NPY_F8)
		return nm_fail("%s: dtype %s (quant takes float16, float32 or float64)", o->input,
		               nm_npy_dtype_name(in->npy.dtype));
	t = in->t = calloc(1, sizeof(*in->t));
	if (!t || !(t->name = strdup(o->input)))
		return nq_oom();
	in->nt = 1;
	t->dtype = nq_npy_dtype(in->npy.dtype);
	t->ndim = in->npy.ndim;
	t->shape[0] = in->npy.shape[0];
	t->shape[1] = in->npy.shape[1];
	t->elem_bytes = nm_npy_dtype_size(in->npy.dtype);
	nq_shape_2d(t);
	return 0;
}

static int nq_open_gen(const struct nq_opts *o, struct nq_input *in)
{
	uint64_t rows = o->rows ? o->rows : 1;
	struct nq_tensor *t;
	char name[64];

	if (o->n > NQ_MAX_GEN / rows)
		return nm_fail("--n %" PRIu64 " x --rows %" PRIu64
		               " is too many elements (at most %" PRIu64 ")",
		               o->n, rows, NQ_MAX_GEN);
	in->gen = o->gen;
	in->gen.seed = o->seed;
	snprintf(name, sizeof(name), "gen:%s", nm_gen_dist_name(o->gen.dist));
	t = in->t = calloc(1, sizeof(*in->t));
	if (!t || !(t->name = strdup(name)))
		return nq_oom();
	in->nt = 1;
	t->dtype = "F64";
	t->ndim = o->rows ? 2 : 1;
	t->shape[0] = o->rows ? rows : o->n;
	t->shape[1] = o->n;
	t->elem_bytes = 8;
	nq_shape_2d(t);
	return 0;
}

static int nq_open(const struct nq_opts *o, struct nq_input *in)
{
	in->kind = o->src;
	in->path = o->input;
	if (o->src == NQ_SRC_GEN)
		return nq_open_gen(o, in);
	if (nq_ends_with(o->input, ".safetensors"))
		return nq_open_st(o, in);
	if (nq_ends_with(o->input, ".npy"))
		return nq_open_npy(o, in);
	return nm_fail("--input '%s': want a .npy or .safetensors file", o->input);
}

static void nq_close(struct nq_input *in)
{
	for (size_t i = 0; i < in->nt; i++)
		free(in->t[i].name);
	free(in->t);
	if (in->is_st)
		nm_st_close(&in->stf);
	else if (in->kind == NQ_SRC_INPUT)
		nm_npy_free(&in->npy);
	memset(in, 0, sizeof(*in));
}

/* ---- quantising one tensor in parts ---- */

/* What a tensor's quantisation needs and keeps: configuration, not state. */
struct nq_job {
	const emu_recipe *r;
	emu_role role;
	bool colwise;
	uint64_t seed;
	size_t worst_k;
	bool keep_deq, keep_codes;
	emu_qstats *total; /* every tensor's parts added here too (NULL: none) */
	double *total_amax;
	bool progress;
};

/* A reader of rows for nq_quantize: the command's input, or memory (bench). */
struct nq_reader {
	int (*fetch)(const void *ctx, size_t row0, size_t nrows, double *out);
	const void *ctx;
	const char *name;
	size_t rows, cols, elem_bytes;
};

static size_t nq_gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Rows per part: whole block rows and whole 16-row groups, about
 * NQ_PART_ELEMS elements; rows when the recipe needs the tensor at once. */
static size_t nq_part_rows(const emu_recipe *r, emu_role role, bool colwise, size_t rows,
                           size_t cols)
{
	size_t ext = (size_t)(colwise ? r->bcols[role] : r->brows[role]);
	size_t unit, pr;

	if (r->rule == EMU_RSCALE_NONE || r->rule == EMU_RSCALE_DELAYED || ext == 0 || rows == 0)
		return rows ? rows : 1;
	unit = ext / nq_gcd(ext, 16) * 16;
	pr = cols ? NQ_PART_ELEMS / cols / unit * unit : rows;
	if (pr < unit)
		pr = unit;
	return pr >= rows ? rows : pr;
}

/* Is a worse than b? NaN SQNR worst, then lower SQNR, then the earlier block. */
static bool nq_worse(const struct nq_block *a, const struct nq_block *b)
{
	if (isnan(a->sqnr) != isnan(b->sqnr))
		return isnan(a->sqnr);
	if (!isnan(a->sqnr) && a->sqnr != b->sqnr)
		return a->sqnr < b->sqnr;
	return a->index < b->index;
}

static void nq_track_worst(const struct nq_job *j, struct nq_result *res, const emu_qtensor *q,
                           const double *x0, size_t row0, size_t block_row0)
{
	for (size_t b = 0; b < q->nbr * q->nbc; b++) {
		struct nq_block k = {0};
		size_t bi = b / q->nbc, bj = b % q->nbc;
		k.sqnr = emu_qblock_sqnr(q, x0, b);
		k.index = (block_row0 + bi) * q->nbc + bj;
		if (res->nworst == j->worst_k && !nq_worse(&k, &res->worst[res->nworst - 1]))
			continue;
		k.row = row0 + bi * q->brows;
		k.col = bj * q->bcols;
		k.amax = q->amax[b];
		k.d = q->d[b];
		k.dcode = q->dcode[b];
		size_t r1 = bi * q->brows + q->brows < q->rows ? bi * q->brows + q->brows : q->rows;
		size_t c1 = k.col + q->bcols < q->cols ? k.col + q->bcols : q->cols;
		for (size_t rr = bi * q->brows; rr < r1; rr++)
			for (size_t c = k.col; c < c1; c++) {
				size_t i = rr * q->cols + c;
				if (isfinite(x0[i]) && (q->flags[i] & EMU_FLAG_OVERFLOW))
					k.saturated++;
			}
		size_t pos = res->nworst < j->worst_k ? res->nworst++ : res->nworst - 1;
		while (pos > 0 && nq_worse(&k, &res->worst[pos - 1])) {
			res->worst[pos] = res->worst[pos - 1];
			pos--;
		}
		res->worst[pos] = k;
	}
}

static void nq_progress(const struct nq_job *j, const struct nq_reader *rd, size_t done_rows)
{
	char line[512], name[256];
	double mb = 1e6, per_row = (double)rd->cols * (double)rd->elem_bytes;
	int n;

	if (!j->progress)
		return;
	n = snprintf(line, sizeof(line), "quant: %s  %.1f/%.1f MB\n",
	             nm_shown(rd->name, name, sizeof(name)), (double)done_rows * per_row / mb,
	             (double)rd->rows * per_row / mb);
	if (n > 0 &&
	    write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		return; /* progress is best effort: a closed stderr is no error */
}

static void nq_max_nan(double *acc, double v)
{
	if (isnan(*acc))
		return;
	if (isnan(v) || v > *acc)
		*acc = v;
}

/* Quantise one tensor; 0, or an error line's status. res is the caller's
 * to free (nq_result_free) either way. */
static int nq_quantize(const struct nq_job *j, const struct nq_reader *rd, struct nq_result *res)
{
	const emu_recipe *r = j->r;
	size_t rows = rd->rows, cols = rd->cols, n = rows * cols;
	size_t pr = nq_part_rows(r, j->role, j->colwise, rows, cols);
	double *x0 = NULL, tamax = NAN, amax = 0;
	bool nvfp4 = r->rule == EMU_RSCALE_NVFP4;
	int rc = 0;

	emu_qstats_init(&res->st);
	res->s_enc = res->t = 1;
	{
		/* refuse what cannot fit before allocating it, with the figures: a
		 * part (the input as read, then the recipe's x, q, deq, code and
		 * flags a value) and, for --out, the whole tensor's values and codes */
		double part = (double)pr * (double)cols, whole = (double)n;
		double per = 4 * sizeof(double) + sizeof(emu_bits) + 1;
		double need = part * per + whole * ((j->keep_deq ? sizeof(*res->deq) : 0) +
		                                    (j->keep_codes ? sizeof(*res->codes) : 0));
		double avail = nm_memory_available();
		char a[24], b[24], c[24];
		if (avail >= 0 && need > avail) {
			char name[160], out[64] = "";
			if (need > part * per)
				snprintf(out, sizeof(out), ", and %s to keep for --out",
				         nm_fmt_bytes(need - part * per, b, sizeof(b)));
			return nm_fail("%s: quantising %zu x %zu values needs about %s (%.0f bytes a value "
			               "of a part of %zu row%s%s), more than the %s of memory available",
			               nm_shown(rd->name, name, sizeof(name)), rows, cols,
			               nm_fmt_bytes(need, a, sizeof(a)), per, pr, pr == 1 ? "" : "s", out,
			               nm_fmt_bytes(avail, c, sizeof(c)));
		}
	}
	if (j->worst_k && !(res->worst = calloc(j->worst_k, sizeof(*res->worst))))
		return nq_oom();
	if (j->keep_deq && !(res->deq = calloc(n ? n : 1, sizeof(*res->deq))))
		return nq_oom();
	if (j->keep_codes && !(res->codes = calloc(n ? n : 1, sizeof(*res->codes))))
		return nq_oom();
	/* pass 1: NVFP4's tensor amax, when the tensor comes in several parts */
	if (nvfp4 && pr < rows) {
		if (!(x0 = malloc(pr * cols * sizeof(*x0))))
			return nq_oom();
		tamax = 0;
		for (size_t row0 = 0; row0 < rows && !rc; row0 += pr) {
			size_t nr = row0 + pr < rows ? pr : rows - row0;
			rc = rd->fetch(rd->ctx, row0, nr, x0);
			if (!rc)
				nq_max_nan(&tamax, emu_recipe_tensor_amax(r, j->role, j->colwise,
				                                          x0, nr, cols));
		}
		if (!rc && isnan(tamax))
			pr = rows; /* see the top of the file */
		free(x0);
		x0 = NULL;
		if (rc)
			return rc;
	}
	if (!(x0 = malloc((pr * cols > 0 ? pr * cols : 1) * sizeof(*x0))))
		return nq_oom();
	bool rht = r->rht && (r->rht_all || (j->colwise && j->role != EMU_ROLE_WEIGHT));
	size_t block_row0 = 0;
	for (size_t row0 = 0; !rc && (row0 < rows || (row0 == 0 && rows == 0)); row0 += pr) {
		size_t nr = row0 + pr < rows ? pr : rows - row0;
		emu_qpart part = {row0, rows, j->seed, isnan(tamax) ? NAN : tamax, 0};
		emu_qtensor q;
		rc = rd->fetch(rd->ctx, row0, nr, x0);
		if (rc)
			break;
		if (emu_quantize_part(r, j->role, j->colwise, x0, nr, cols, &part, &q)) {
			rc = nq_oom();
			break;
		}
		/* under RHT the dequantised values live in the rotated basis:
		 * they are judged against the rotated input */
		const double *ref = rht ? q.x : x0;
		emu_qstats_add(&res->st, &q, ref);
		if (j->total)
			emu_qstats_add(j->total, &q, ref);
		nq_max_nan(&amax, q.tensor_amax);
		res->s_enc = q.s_enc;
		res->t = q.t;
		res->nbc = q.nbc;
		if (j->worst_k)
			nq_track_worst(j, res, &q, ref, row0, block_row0);
		if (res->deq && nr * cols > 0)
			memcpy(res->deq + row0 * cols, q.deq, nr * cols * sizeof(*q.deq));
		if (res->codes)
			for (size_t i = 0; i < nr * cols; i++)
				res->codes[row0 * cols + i] = q.code[i];
		if (j->keep_codes && q.nbr * q.nbc > 0) {
			size_t nb = (block_row0 + q.nbr) * q.nbc;
			uint32_t *s = realloc(res->scales, nb * sizeof(*s));
			if (!s) {
				emu_qtensor_free(&q);
				rc = nq_oom();
				break;
			}
			res->scales = s;
			for (size_t b = 0; b < q.nbr * q.nbc; b++)
				s[block_row0 * q.nbc + b] = q.dcode[b];
		}
		block_row0 += q.nbr;
		res->parts++;
		emu_qtensor_free(&q);
		nq_progress(j, rd, row0 + nr);
		if (rows == 0)
			break;
	}
	free(x0);
	res->nbr = block_row0;
	if (rc)
		return rc;
	/* the amax over parts, NaN sticking (emu_qstats_add lets a later part
	 * replace a NaN) */
	res->st.amax = amax;
	emu_qstats_finish(&res->st);
	if (j->total_amax)
		nq_max_nan(j->total_amax, amax);
	return 0;
}

static void nq_result_free(struct nq_result *res)
{
	free(res->worst);
	free(res->deq);
	free(res->codes);
	free(res->scales);
	memset(res, 0, sizeof(*res));
}

struct nq_mem {
	const double *x;
	size_t cols;
};

static int nq_fetch_mem(const void *ctx, size_t row0, size_t nrows, double *out)
{
	const struct nq_mem *m = ctx;
	if (nrows * m->cols > 0)
		memcpy(out, m->x + row0 * m->cols, nrows * m->cols * sizeof(*out));
	return 0;
}

int nm_quant_stream(const emu_recipe *r, emu_role role, bool colwise, const double *x, size_t rows,
                    size_t cols, uint64_t seed, emu_qstats *st)
{
	struct nq_mem m = {x, cols};
	struct nq_reader rd = {nq_fetch_mem, &m, "memory", rows, cols, 8};
	struct nq_job j = {r, role, colwise, seed, 0, false, false, NULL, NULL, false};
	struct nq_result res;
	int rc;

	memset(&res, 0, sizeof(res));
	rc = nq_quantize(&j, &rd, &res);
	*st = res.st;
	nq_result_free(&res);
	return rc ? -1 : 0;
}

struct nq_fetch_ctx {
	const struct nq_input *in;
	const struct nq_tensor *t;
};

static int nq_fetch_input(const void *ctx, size_t row0, size_t nrows, double *out)
{
	const struct nq_fetch_ctx *c = ctx;
	return nq_fetch(c->in, c->t, row0, nrows, out);
}

/* ---- help and main ---- */

static const char nq_usage[] =
    "usage: nanmap quant --recipe NAME|SPEC (--input FILE | --gen DIST --n N [--rows R]\n"
    "                    [--scale X] [--outliers K:F]) [--role act|weight|grad]\n"
    "                    [--colwise] [--tensor NAME]... [--seed S] [--per-block [K]]\n"
    "                    [--csv|--json] [--out FILE] [--encodings] [--progress] [--list]\n"
    "\n"
    "Quantise a tensor (or every tensor of a checkpoint) by a scaling recipe\n"
    "(FP8/FP6/FP4 elements with block and tensor scales) and report what it did:\n"
    "saturated, flushed and lost elements, SQNR, relative error, bias, the block\n"
    "scales' exponents. Bit-exact: the dequantised values are exactly q * d * t.\n"
    "\n"
    "  --recipe R      a built-in (--list) with optional ,key=value overrides, or a\n"
    "                  spec of keys (elem= scale= rule= block= ...; docs/quant.md)\n"
    "  --input FILE    .npy (float16/32/64, 1-D or 2-D) or .safetensors (every tensor\n"
    "                  in file order; F64 F32 F16 BF16 F8_E4M3 F8_E5M2 are decoded,\n"
    "                  other dtypes listed as skipped); > 2-D is (leading dims) x last\n"
    "  --tensor NAME   only this tensor of a .safetensors input (repeat for more)\n"
    "  --gen DIST      normal, uniform, logspace, ones (as nanmap run): --n N per row,\n"
    "                  --rows R (default 1), --scale X, --seed S\n"
    "  --outliers K:F  with --gen: multiply about a fraction F of the elements by K\n"
    "  --role R        act (default), weight or grad: the recipe's block shape and\n"
    "                  rounding for that role (nvfp4: 16x16 weights, SR grads)\n"
    "  --colwise       the column-wise copy (blocks down the columns; RHT for nvfp4)\n"
    "  --seed S        stochastic rounding's seed, and --gen's (default 0)\n"
    "  --per-block [K] the K (default 10) worst blocks of each tensor by SQNR\n"
    "  --csv           one row per tensor with a header; --json: an array of objects\n"
    "  --out FILE      .npy (one tensor, dequantised as float64) or .safetensors\n"
    "                  (every tensor under its name, F64)\n"
    "  --encodings     with --out: the element codes instead (.npy: FILE holds the\n"
    "                  codes, FILE's .scales.npy the block scales, .tensor_scale.npy\n"
    "                  NVFP4's fp32 tensor scale; .safetensors: NAME.codes,\n"
    "                  NAME.scales, NAME.tensor_scale next to NAME)\n"
    "  --progress      \"quant: TENSOR  done/total MB\" lines on stderr (the default\n"
    "                  when stderr is a terminal)\n"
    "  --list          the built-in recipes\n"
    "\n"
    "Columns and formulas: docs/quant.md. Errors: one line on stderr, exit status 2.\n"
    "Example: nanmap quant --recipe nvfp4 --gen normal --n 4096 --rows 64 --outliers 100:0.001\n";

static int nq_list(void)
{
	for (size_t i = 0; emu_recipe_names[i]; i++)
		printf("%-18s %s\n", emu_recipe_names[i], emu_recipe_describe(emu_recipe_names[i]));
	if (fflush(stdout) != 0 || ferror(stdout))
		return nm_fail("cannot write the output: %s", strerror(errno));
	return 0;
}

static int nq_count_quantised(const struct nq_input *in)
{
	int k = 0;
	for (size_t i = 0; i < in->nt; i++)
		k += !in->t[i].skipped;
	return k;
}

static int nq_run(struct nq_opts *o)
{
	emu_recipe r;
	struct nq_input in;
	struct nq_report rp;
	char err[NQ_ERR_LEN];
	nm_buf b = {0};
	double total_amax = 0;
	int rc;

	memset(&in, 0, sizeof(in));
	memset(&rp, 0, sizeof(rp));
	rc = nq_check_opts(o);
	if (rc)
		return rc;
	err[0] = '\0';
	if (emu_recipe_parse(o->recipe_spec, &r, err, sizeof(err)) != EMU_OK)
		return nm_fail("%s", err[0] ? err : "bad --recipe");
	rc = nq_open(o, &in);
	if (!rc && o->out && nq_ends_with(o->out, ".npy") && nq_count_quantised(&in) > 1)
		rc = nm_fail("--out %s: a .npy holds one tensor, the input has %d (write "
		             ".safetensors, or pick one with --tensor)",
		             o->out, nq_count_quantised(&in));
	if (!rc && !(rp.res = calloc(in.nt ? in.nt : 1, sizeof(*rp.res))))
		rc = nq_oom();
	rp.o = o;
	rp.r = &r;
	rp.in = &in;
	emu_qstats_init(&rp.total);
	struct nq_job j = {&r,
	                   o->role,
	                   o->colwise,
	                   o->seed,
	                   (size_t)o->worst_k,
	                   o->out && !o->encodings,
	                   o->out && o->encodings,
	                   &rp.total,
	                   &total_amax,
	                   o->progress || isatty(STDERR_FILENO)};
	/* .safetensors with --encodings keeps the values too: NAME next to NAME.codes */
	if (o->out && o->encodings && nq_ends_with(o->out, ".safetensors"))
		j.keep_deq = true;
	for (size_t i = 0; !rc && i < in.nt; i++) {
		const struct nq_tensor *t = &in.t[i];
		struct nq_fetch_ctx fc = {&in, t};
		struct nq_reader rd = {nq_fetch_input, &fc,     t->name,
		                       t->rows,        t->cols, t->elem_bytes};
		if (t->skipped)
			continue;
		rc = nq_quantize(&j, &rd, &rp.res[i]);
		rp.nquant++;
	}
	if (!rc) {
		rp.total.amax = total_amax;
		emu_qstats_finish(&rp.total);
		rc = nq_build_report(&rp, &b);
	}
	if (!rc && o->out) {
		nq_clean_stale(o->out);
		rc = nq_ends_with(o->out, ".npy") ? nq_write_npy(&rp) : nq_write_st(&rp);
	}
	if (!rc) {
		if (b.len)
			fwrite(b.s, 1, b.len, stdout);
		if (fflush(stdout) != 0 || ferror(stdout))
			rc = nm_fail("cannot write the output: %s", strerror(errno));
	}
	nm_buf_free(&b);
	for (size_t i = 0; rp.res && i < in.nt; i++)
		nq_result_free(&rp.res[i]);
	free(rp.res);
	nq_close(&in);
	return rc;
}

int nm_quant_main(int argc, char **argv)
{
	struct nq_opts o;
	int rc;

	if (nm_wants_help(argc - 1, argv + 1))
		return nm_print_help(nq_usage);
	memset(&o, 0, sizeof(o));
	rc = nq_parse_args(&o, argc, argv);
	if (!rc && o.list)
		rc = nq_list();
	else if (!rc)
		rc = nq_run(&o);
	free(o.tensors);
	return rc;
}
