/*
 * nm_gemm.c — `nanmap gemm`: C = A·B with A quantised row-wise and B
 * column-wise by a scaling recipe, the dot products run through a Tensor
 * Core model (emu/kernels/tcscaled.h), and the result judged against the exact
 * product of the original matrices and of the dequantised ones, which
 * separates what quantisation costs from what accumulation costs.
 *
 * Same contract as the other commands (emu/cli/main.c): every error is one line
 * on stderr naming the bad argument, exit status 2, and the report is built
 * in memory and printed only when everything succeeded.
 *
 * A is generated with the stream at --seed, B with the stream at --seed + 1
 * (emu/io/nm_gen.h: element i depends only on (seed, i)).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/io/nm_buf.h"
#include "emu/cli/nm_gemm.h"
#include "emu/io/nm_gen.h"
#include "emu/io/nm_parse.h"
#include "emu/recipes/recipe.h"
#include "emu/kernels/tcscaled.h"

#define NG_ERR_LEN 512
#define NG_MAX_DIM 65536u
/* products M·N·K: the exact references cost about 0.2 µs each, twice */
#define NG_MAX_WORK ((uint64_t)1 << 28)
#define NG_SHOW 8

enum ng_style { NG_TEXT = 0, NG_CSV, NG_JSON };

enum ng_optid {
	NG_O_RECIPE = 0,
	NG_O_RECIPE_B,
	NG_O_MODEL,
	NG_O_M,
	NG_O_N,
	NG_O_K,
	NG_O_GEN,
	NG_O_SCALE,
	NG_O_SCALE_B,
	NG_O_SEED,
	NG_O_FMA,
	NG_O_CSV,
	NG_O_JSON,
};

static const nm_opt ng_optdefs[] = {
    {NULL, "--recipe", NG_O_RECIPE, NM_OPTF_VALUE, 0},
    {NULL, "--recipe-b", NG_O_RECIPE_B, NM_OPTF_VALUE, 0},
    {NULL, "--model", NG_O_MODEL, NM_OPTF_VALUE, 0},
    {NULL, "--m", NG_O_M, NM_OPTF_VALUE, 0},
    {NULL, "--n", NG_O_N, NM_OPTF_VALUE, 0},
    {NULL, "--k", NG_O_K, NM_OPTF_VALUE, 0},
    {NULL, "--gen", NG_O_GEN, NM_OPTF_VALUE, 0},
    {NULL, "--scale", NG_O_SCALE, NM_OPTF_VALUE, 0},
    {NULL, "--scale-b", NG_O_SCALE_B, NM_OPTF_VALUE, 0},
    {NULL, "--seed", NG_O_SEED, NM_OPTF_VALUE, 0},
    {NULL, "--fma", NG_O_FMA, 0, 0},
    {NULL, "--csv", NG_O_CSV, 0, 1},
    {NULL, "--json", NG_O_JSON, 0, 1},
};

static const char ng_usage[] =
    "usage: nanmap gemm --recipe R --model blackwell|hopper --m M --n N --k K\n"
    "                   [--gen normal|uniform|logspace|ones] [--scale X] [--scale-b X]\n"
    "                   [--recipe-b R] [--seed S]\n"
    "                   [--fma] [--csv|--json]\n"
    "\n"
    "C (M x N, fp32) = A (M x K) . B (K x N): A quantised row-wise (role act) and\n"
    "B column-wise (role weight), blocks along K, by the recipe R (nanmap quant\n"
    "--help lists them; RHT is off: a forward GEMM does not transform), then\n"
    "  blackwell  tcgen05.mma kind::mxf8f6f4 per 32 along K (MX recipes) or\n"
    "             kind::mxf4nvf4 per 64 with ue4m3 scales per 16 (nvfp4), the\n"
    "             NVFP4 tensor scales applied after as alpha = t_A . t_B\n"
    "  hopper     FP8 wgmma (the h100 model) per 128 along K from 0, each chunk\n"
    "             times a_scale . b_scale added to an fp32 accumulator\n"
    "             (--fma: one fused multiply-add instead of a multiply and an add)\n"
    "--recipe-b R quantises B by R instead (same scale format): mixed operands,\n"
    "as FP8 training's dgrad and wgrad GEMMs multiply e4m3 by e5m2\n"
    "(--recipe mxfp8 --recipe-b mxfp8:e5m2).\n"
    "A and B: the generator (default normal, --scale 1; --scale-b sets B's apart)\n"
    "at --seed and --seed + 1.\n"
    "Reports the quantisation SQNR of A and B, the GEMM against the exact product\n"
    "of the original and of the dequantised matrices (max relative error, SQNR)\n"
    "and the inf/NaN outputs. See docs/gemm.md.\n"
    "\n"
    "Errors: one line on stderr, exit status 2.\n"
    "Example: nanmap gemm --recipe mxfp8 --model blackwell --m 16 --n 16 --k 1024\n";

struct ng_opts {
	const char *recipe, *recipe_b, *model;
	uint64_t m, n, k, seed;
	nm_gen_dist dist;
	double scale, scale_b;
	bool fma;
	enum ng_style style;
	unsigned seen;
};

static int ng_take(void *ctx, const nm_opt *d, const char *arg)
{
	struct ng_opts *o = ctx;
	nm_number num;

	o->seen |= 1u << d->id;
	switch (d->id) {
	case NG_O_RECIPE:
		o->recipe = arg;
		return 0;
	case NG_O_RECIPE_B:
		o->recipe_b = arg;
		return 0;
	case NG_O_MODEL:
		o->model = arg;
		return 0;
	case NG_O_M:
		return nm_parse_count("--m", arg, 1, NG_MAX_DIM, &o->m);
	case NG_O_N:
		return nm_parse_count("--n", arg, 1, NG_MAX_DIM, &o->n);
	case NG_O_K:
		return nm_parse_count("--k", arg, 1, NG_MAX_DIM, &o->k);
	case NG_O_GEN: {
		int g = nm_gen_dist_parse(arg);
		if (g < 0)
			return nm_fail("unknown --gen '%s' (normal uniform logspace ones)", arg);
		o->dist = (nm_gen_dist)g;
		return 0;
	}
	case NG_O_SCALE:
	case NG_O_SCALE_B:
		if (nm_parse_number(arg, &num) != NM_OK || !isfinite(strtod(arg, NULL)))
			return nm_fail("bad %s '%s' (a finite number)", d->lng, arg);
		*(d->id == NG_O_SCALE ? &o->scale : &o->scale_b) = strtod(arg, NULL);
		return 0;
	case NG_O_SEED:
		return nm_parse_count("--seed", arg, 0, UINT64_MAX - 1, &o->seed);
	case NG_O_FMA:
		o->fma = true;
		return 0;
	case NG_O_CSV:
		o->style = NG_CSV;
		return 0;
	case NG_O_JSON:
		o->style = NG_JSON;
		return 0;
	}
	return 0;
}

static int ng_arg(void *ctx, const char *a)
{
	(void)ctx;
	return nm_fail("gemm takes no arguments, '%s' is one (try: nanmap gemm --help)", a);
}

/* ---- the report ---- */

struct ng_report {
	const struct ng_opts *o;
	emu_recipe r, rb; /* rb: B's recipe, r unless --recipe-b */
	const char *kind;
	emu_qstats qsa, qsb;
	emu_gemm_err orig, deq;
	const double *D;
	size_t nout;
};

static const char *ng_num(double v, char *buf, size_t len)
{
	return nm_fmt_g(v, 17, buf, len);
}

/* the report's items in order: key, value text, and whether it is a number */
struct ng_item {
	const char *key;
	char val[NM_NUM_LEN + 200];
	bool num;
};

#define NG_NITEMS (22 + NG_SHOW)

static size_t ng_items(const struct ng_report *rp, struct ng_item *it)
{
	const struct ng_opts *o = rp->o;
	size_t n = 0;
	char t[NM_NUM_LEN];
#define STR(k, ...)                                                                                \
	(it[n].key = (k), it[n].num = false, snprintf(it[n].val, sizeof it[n].val, __VA_ARGS__),   \
	 n++)
#define NUM(k, v)                                                                                  \
	(it[n].key = (k), it[n].num = true,                                                        \
	 snprintf(it[n].val, sizeof it[n].val, "%s", ng_num((v), t, sizeof t)), n++)
	STR("recipe", "%s", rp->r.name);
	if (o->recipe_b)
		STR("recipe_b", "%s", rp->rb.name);
	STR("model", "%s", o->model);
	STR("instruction", "%s", rp->kind);
	NUM("m", (double)o->m);
	NUM("n", (double)o->n);
	NUM("k", (double)o->k);
	STR("gen", "%s", nm_gen_dist_name(o->dist));
	NUM("scale", o->scale);
	NUM("scale_b", o->seen & (1u << NG_O_SCALE_B) ? o->scale_b : o->scale);
	NUM("seed", (double)o->seed);
	NUM("quant_sqnr_db_a", rp->qsa.sqnr_db);
	NUM("quant_sqnr_db_b", rp->qsb.sqnr_db);
	NUM("max_rel_vs_exact", rp->orig.max_rel);
	NUM("sqnr_db_vs_exact", rp->orig.sqnr_db);
	NUM("max_rel_vs_dequantised", rp->deq.max_rel);
	NUM("sqnr_db_vs_dequantised", rp->deq.sqnr_db);
	NUM("outputs", (double)rp->nout);
	NUM("outputs_inf", (double)rp->orig.n_inf);
	NUM("outputs_nan", (double)rp->orig.n_nan);
	static const char *const dkeys[NG_SHOW] = {"d[0]", "d[1]", "d[2]", "d[3]",
	                                           "d[4]", "d[5]", "d[6]", "d[7]"};
	for (size_t i = 0; i < rp->nout && i < NG_SHOW; i++)
		NUM(dkeys[i], rp->D[i]);
#undef STR
#undef NUM
	return n;
}

static void ng_text(nm_buf *b, const struct ng_report *rp)
{
	const struct ng_opts *o = rp->o;
	char t1[NM_NUM_LEN], t2[NM_NUM_LEN], t3[NM_NUM_LEN];
	nm_buf_printf(b,
	              "gemm %s%s%s on %s (%s): %" PRIu64 " x %" PRIu64 " x %" PRIu64
	              ", gen %s (scale %s), seed %" PRIu64 "\n",
	              rp->r.name, o->recipe_b ? " x " : "", o->recipe_b ? rp->rb.name : "",
	              o->model, rp->kind, o->m, o->n, o->k, nm_gen_dist_name(o->dist),
	              nm_fmt_g(o->scale, 6, t1, sizeof t1), o->seed);
	nm_buf_printf(b, "quantisation         A sqnr %s dB   B sqnr %s dB\n",
	              nm_fmt_g(rp->qsa.sqnr_db, 6, t1, sizeof t1),
	              nm_fmt_g(rp->qsb.sqnr_db, 6, t2, sizeof t2));
	nm_buf_printf(b, "vs exact A.B         max_rel %s   sqnr %s dB\n",
	              nm_fmt_g(rp->orig.max_rel, 6, t1, sizeof t1),
	              nm_fmt_g(rp->orig.sqnr_db, 6, t2, sizeof t2));
	nm_buf_printf(b, "vs exact dequantised max_rel %s   sqnr %s dB\n",
	              nm_fmt_g(rp->deq.max_rel, 6, t1, sizeof t1),
	              nm_fmt_g(rp->deq.sqnr_db, 6, t2, sizeof t2));
	nm_buf_printf(b, "outputs              %zu: inf %zu, nan %zu\n", rp->nout, rp->orig.n_inf,
	              rp->orig.n_nan);
	nm_buf_put(b, "first outputs       ");
	for (size_t i = 0; i < rp->nout && i < NG_SHOW; i++)
		nm_buf_printf(b, " %s", nm_fmt_g(rp->D[i], 9, t3, sizeof t3));
	nm_buf_putc(b, '\n');
}

static void ng_structured(nm_buf *b, const struct ng_report *rp, enum ng_style style)
{
	struct ng_item it[NG_NITEMS];
	size_t n = ng_items(rp, it);
	if (style == NG_CSV) {
		nm_buf_put(b, "key,value\n");
		for (size_t i = 0; i < n; i++) {
			nm_buf_csv(b, it[i].key);
			nm_buf_putc(b, ',');
			nm_buf_csv(b, it[i].val);
			nm_buf_putc(b, '\n');
		}
		return;
	}
	nm_buf_put(b, "{\n");
	for (size_t i = 0; i < n; i++) {
		nm_buf_put(b, "  ");
		nm_buf_json_str(b, it[i].key);
		nm_buf_put(b, ": ");
		/* JSON has no inf or nan: those go as strings */
		bool finite_num = it[i].num && strcmp(it[i].val, "inf") != 0 &&
		                  strcmp(it[i].val, "-inf") != 0 && strcmp(it[i].val, "nan") != 0;
		if (finite_num)
			nm_buf_put(b, it[i].val);
		else
			nm_buf_json_str(b, it[i].val);
		nm_buf_put(b, i + 1 < n ? ",\n" : "\n");
	}
	nm_buf_put(b, "}\n");
}

int nm_gemm_main(int argc, char **argv)
{
	struct ng_opts o = {0};
	struct ng_report rp;
	char err[NG_ERR_LEN];
	double *A = NULL, *B = NULL, *D = NULL;
	emu_qtensor qa = {0}, qb = {0};
	bool quantised = false;
	nm_buf b = {0};
	int rc;

	if (nm_wants_help(argc - 1, argv + 1))
		return nm_print_help(ng_usage);
	memset(&rp, 0, sizeof rp);
	o.dist = NM_GEN_NORMAL;
	o.scale = 1;
	o.seed = 1;
	rc = nm_opt_parse(&(nm_optparser){.cmd = "gemm",
	                                  .defs = ng_optdefs,
	                                  .ndefs = sizeof ng_optdefs / sizeof ng_optdefs[0],
	                                  .take = ng_take,
	                                  .arg = ng_arg,
	                                  .ctx = &o},
	                  argc - 1, argv + 1);
	if (rc)
		return rc;
	if (!o.recipe)
		return nm_fail("gemm needs --recipe R (e.g. --recipe mxfp8)");
	if (!o.model)
		return nm_fail("gemm needs --model blackwell|hopper");
	if (!o.m || !o.n || !o.k)
		return nm_fail("gemm needs --m, --n and --k");
	emu_gemm_model model = emu_gemm_model_by_name(o.model);
	if (model == EMU_GEMM_NMODELS)
		return nm_fail("unknown --model '%s' (blackwell hopper)", o.model);
	if (o.fma && model != EMU_GEMM_HOPPER)
		return nm_fail(
		    "--fma is hopper's promotion; blackwell accumulates in the Tensor Core");
	if (emu_recipe_parse(o.recipe, &rp.r, err, sizeof err) != EMU_OK)
		return nm_fail("%s", err);
	rp.rb = rp.r;
	if (o.recipe_b && emu_recipe_parse(o.recipe_b, &rp.rb, err, sizeof err) != EMU_OK)
		return nm_fail("--recipe-b: %s", err);
	if (!emu_format_same(&rp.r.scale_fmt, &rp.rb.scale_fmt))
		return nm_fail("--recipe-b %s: its scale format differs from --recipe %s's (one "
		               "instruction takes one kind of scale)",
		               rp.rb.name, rp.r.name);
	if (o.m * o.n * o.k > NG_MAX_WORK)
		return nm_fail("--m x --n x --k is %" PRIu64 " products (at most %" PRIu64 ")",
		               o.m * o.n * o.k, NG_MAX_WORK);
	rp.o = &o;
	bool nv = rp.r.elem.p == 2 && rp.r.scale_fmt.p == 4;
	rp.kind = model == EMU_GEMM_HOPPER ? "wgmma fp8 h100, promoted every 128"
	          : nv                     ? "tcgen05 kind::mxf4nvf4, ue4m3 per 16"
	                                   : "tcgen05 kind::mxf8f6f4, ue8m0 per 32";
	size_t M = o.m, N = o.n, K = o.k;
	A = malloc(M * K * sizeof *A);
	B = malloc(K * N * sizeof *B);
	D = malloc(M * N * sizeof *D);
	if (!A || !B || !D) {
		rc = nm_fail("out of memory");
		goto done;
	}
	nm_gen g = {o.dist, o.scale, 0x1p-16, 0x1p16, o.seed, 0, 0};
	nm_gen_fill(&g, A, M * K);
	g.seed = o.seed + 1;
	if (o.seen & (1u << NG_O_SCALE_B))
		g.scale = o.scale_b;
	nm_gen_fill(&g, B, K * N);
	if (emu_gemm_quantize(&rp.r, &rp.rb, A, B, M, N, K, o.seed, &qa, &qb)) {
		rc = nm_fail("out of memory");
		goto done;
	}
	quantised = true;
	emu_gemm_opts go = {model, o.fma};
	if (emu_scaled_gemm(&qa, &qb, &rp.r, &go, D, err, sizeof err) != EMU_OK) {
		rc = nm_fail("%s", err);
		goto done;
	}
	emu_qstats_init(&rp.qsa);
	emu_qstats_add(&rp.qsa, &qa, A);
	emu_qstats_finish(&rp.qsa);
	emu_qstats_init(&rp.qsb);
	emu_qstats_add(&rp.qsb, &qb, B);
	emu_qstats_finish(&rp.qsb);
	if (emu_gemm_compare(D, A, B, M, N, K, &rp.orig) ||
	    emu_gemm_compare(D, qa.deq, qb.deq, M, N, K, &rp.deq)) {
		rc = nm_fail("out of memory");
		goto done;
	}
	rp.D = D;
	rp.nout = M * N;
	if (o.style == NG_TEXT)
		ng_text(&b, &rp);
	else
		ng_structured(&b, &rp, o.style);
	if (b.oom) {
		rc = nm_fail("out of memory");
		goto done;
	}
	fwrite(b.s, 1, b.len, stdout);
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = nm_fail("cannot write the output: %s", strerror(errno));
done:
	if (quantised) {
		emu_qtensor_free(&qa);
		emu_qtensor_free(&qb);
	}
	nm_buf_free(&b);
	free(A);
	free(B);
	free(D);
	return rc;
}
