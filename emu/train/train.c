/*
 * train.c — a GPT-2 trained end to end on the kernel engine (train.h,
 * docs/train.md). Every operation of a step is a map or a fold of kern.h
 * under its own step id, "BLOCK.KERNEL.STEP", so the fast and the exact
 * backend run the same order of operations and a run names its first
 * failing operation. The truth backend (256-bit MPFR, formats ignored) runs
 * the same code: the tests take its losses for central differences.
 *
 * Every operand an operation reads is first a value of the operation's
 * format (a conversion site, exact when the format holds the operand's), so
 * the exact backend, which works on encodings, computes on what the fast
 * one does; the GEMMs' folds read gemm values in the accum format, which
 * must hold them (emu_train_cfg_check).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/io/nm_gen.h"
#include "emu/io/nm_safetensors.h"
#include "emu/train/train.h"

/* ---- policies ---- */

static const char *const role_names[EMU_TR_NROLES] = {"master",  "state",  "gemm", "accum", "act",
                                                      "compute", "reduce", "grad", "loss"};

const char *emu_train_role_name(emu_train_role r)
{
	return r < EMU_TR_NROLES ? role_names[r] : "?";
}

const char *const emu_train_presets[] = {"fp32",      "bf16",        "fp16-amp",    "fp16-pure",
                                         "bf16-pure", "fp8-current", "fp8-delayed", "mxfp8",
                                         "nvfp4",     NULL};

int emu_train_policy_preset(const char *name, emu_train_policy *p, char *err, size_t errlen)
{
	const emu_format *f32 = emu_format_by_name("fp32"), *f16 = emu_format_by_name("fp16"),
	                 *b16 = emu_format_by_name("bf16");
	/* fp32: every role fp32. bf16 / fp16-amp: autocast (GEMMs in the low
	 * format accumulating in fp32; norms, softmax, loss and everything
	 * between kernels in fp32; fp32 master weights and states), fp16-amp
	 * with GradScaler. *-pure: every tensor and every operation in the low
	 * format (model.half() with hand-written kernels). */
	const emu_format *low = NULL;
	bool pure = false, scaler = false, hybrid = false;
	const char *recipe = NULL;
	emu_gemm_model model = EMU_GEMM_BLACKWELL;
	if (!strcmp(name, "fp32"))
		low = f32;
	else if (!strcmp(name, "bf16"))
		low = b16;
	else if (!strcmp(name, "fp16-amp"))
		low = f16, scaler = true;
	else if (!strcmp(name, "fp16-pure"))
		low = f16, pure = true;
	else if (!strcmp(name, "bf16-pure"))
		low = b16, pure = true;
	/* the FP8 and FP4 recipes: bf16 autocast around the quantised GEMMs */
	/* TE's Float8CurrentScaling and DelayedScaling, both HYBRID by default
	 * (e4m3 forward, e5m2 gradients), elements cast with satfinite;
	 * DelayedScaling's amax history 1024, its max, margin 0 */
	else if (!strcmp(name, "fp8-current"))
		low = b16, recipe = "elem=e4m3,scale=fp32,rule=fp32,block=0x0,sat=yes",
		model = EMU_GEMM_HOPPER, hybrid = true;
	else if (!strcmp(name, "fp8-delayed"))
		low = b16,
		recipe =
		    "elem=e4m3,scale=fp32,rule=delayed,block=0x0,sat=yes,history=1024,margin=0",
		model = EMU_GEMM_HOPPER, hybrid = true;
	else if (!strcmp(name, "mxfp8"))
		low = b16, recipe = "mxfp8";
	else if (!strcmp(name, "nvfp4"))
		low = b16, recipe = "nvfp4";
	if (!low || !f32) {
		snprintf(err, errlen,
		         "unknown training policy '%s' (fp32 bf16 fp16-amp fp16-pure bf16-pure "
		         "fp8-current fp8-delayed mxfp8 nvfp4)",
		         name);
		return -1;
	}
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "%s", name);
	for (int r = 0; r < EMU_TR_NROLES; r++)
		p->f[r] = pure ? *low : *f32;
	p->f[EMU_TR_GEMM] = *low;
	p->scaler = scaler;
	if (recipe) {
		if (emu_recipe_parse(recipe, &p->recipe, err, errlen) != EMU_OK)
			return -1;
		p->scaled = true;
		p->model = model;
		p->hybrid = hybrid;
	}
	return 0;
}

int emu_train_policy_set(emu_train_policy *p, const char *item, char *err, size_t errlen)
{
	const char *eq = strchr(item, '=');
	size_t n = eq ? (size_t)(eq - item) : 0;
	if (!eq) {
		snprintf(err, errlen, "bad role override '%s' (ROLE=FORMAT, e.g. accum=fp16)",
		         item);
		return -1;
	}
	if (n == 6 && !strncmp(item, "scaler", 6)) {
		if (strcmp(eq + 1, "on") != 0 && strcmp(eq + 1, "off") != 0) {
			snprintf(err, errlen, "bad role override '%s' (scaler=on or scaler=off)",
			         item);
			return -1;
		}
		p->scaler = !strcmp(eq + 1, "on");
		return 0;
	}
	for (int r = 0; r < EMU_TR_NROLES; r++)
		if (strlen(role_names[r]) == n && !strncmp(item, role_names[r], n)) {
			char e2[200];
			emu_format f;
			if (emu_format_parse(eq + 1, &f, e2, sizeof e2) != EMU_OK) {
				snprintf(err, errlen, "role override '%s': %s", item, e2);
				return -1;
			}
			p->f[r] = f;
			size_t l = strlen(p->name);
			snprintf(p->name + l, sizeof p->name - l, "%s%s", l ? "+" : "", item);
			return 0;
		}
	snprintf(err, errlen,
	         "unknown role in '%s' (master state gemm accum act compute reduce grad loss, or "
	         "scaler=on|off)",
	         item);
	return -1;
}

int emu_train_policy_parse(const char *spec, emu_train_policy *p, char *err, size_t errlen)
{
	char buf[256];
	if (strlen(spec) >= sizeof buf) {
		snprintf(err, errlen, "training policy '%.40s...' too long", spec);
		return -1;
	}
	snprintf(buf, sizeof buf, "%s", spec);
	char *save = NULL, *tok = strtok_r(buf, ":+", &save);
	if (!tok || emu_train_policy_preset(tok, p, err, errlen) != 0) {
		if (!tok)
			snprintf(err, errlen, "empty training policy");
		return -1;
	}
	while ((tok = strtok_r(NULL, ":+", &save)))
		if (emu_train_policy_set(p, tok, err, errlen) != 0)
			return -1;
	return 0;
}

/* ---- configuration ---- */

void emu_train_cfg_default(emu_train_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->layers = 2, c->d = 32, c->heads = 2, c->seq = 16, c->vocab = 16, c->batch = 4;
	c->ln_eps = 1e-5;
	c->task = EMU_TASK_COPY;
	c->seed = 1;
	c->steps = 100, c->micro = 1, c->divide_loss = true;
	c->lr = 1e-3, c->min_lr = 1e-4, c->wd = 0.1, c->beta1 = 0.9, c->beta2 = 0.95;
	c->eps = 1e-8, c->clip = 1.0, c->warmup = 10;
	emu_gs_config_default(&c->gs);
	c->val_every = 10, c->val_batches = 2;
	c->spike_factor = 1, c->lr_spike = 1, c->loss_weight = 1;
	char err[8];
	if (emu_train_policy_preset("fp32", &c->pol, err, sizeof err) != 0)
		abort(); /* fp32 is a preset */
	c->backend = EMU_BE_FAST;
}

size_t emu_train_ffn(const emu_train_cfg *c)
{
	if (c->ffn)
		return c->ffn;
	return c->arch == EMU_ARCH_LLAMA ? (8 * c->d / 3 + 7) / 8 * 8 : 4 * c->d;
}

const char *emu_train_arch_name(emu_train_arch a)
{
	return a == EMU_ARCH_LLAMA ? "llama" : "gpt2";
}

/* Does f hold every value of g (a conversion g -> f is exact)? */
static bool holds(const emu_format *f, const emu_format *g)
{
	return f->p >= g->p && f->emax >= g->emax && f->min_subnormal <= g->min_subnormal &&
	       (f->has_sign || !g->has_sign) && (f->has_inf || !g->has_inf) &&
	       (f->nan != EMU_NAN_NONE || g->nan == EMU_NAN_NONE);
}

int emu_train_cfg_check(const emu_train_cfg *c, char *err, size_t errlen)
{
#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), -1
	if (c->arch != EMU_ARCH_GPT2 && c->arch != EMU_ARCH_LLAMA)
		BAD("--arch: gpt2 or llama");
	if (c->ffn > 65536)
		BAD("--ffn %zu: need 1..65536", c->ffn);
	if (c->layers < 1 || c->layers > 64)
		BAD("--layers %zu: need 1..64", c->layers);
	if (c->d < 2 || c->d > 4096)
		BAD("--d-model %zu: need 2..4096", c->d);
	if (c->heads < 1 || c->d % c->heads)
		BAD("--heads %zu must divide --d-model %zu", c->heads, c->d);
	if (c->seq < 2 || c->seq > 4096)
		BAD("--seq %zu: need 2..4096", c->seq);
	if (c->batch < 1 || c->batch > 4096)
		BAD("--batch %zu: need 1..4096", c->batch);
	if (c->task == EMU_TASK_TEXT) {
		if (c->vocab != 256)
			BAD("--text: the vocabulary is the 256 byte values (--vocab 256)");
		if (c->text_len < 10 * (c->seq + 1))
			BAD("--text: %zu bytes; need at least %zu (10 sequences of --seq + 1)",
			    c->text_len, 10 * (c->seq + 1));
	} else {
		if (c->vocab < 3 || c->vocab > 65536)
			BAD("--vocab %zu: need 3..65536", c->vocab);
		if (c->seq % 2)
			BAD("--seq %zu: the built-in tasks need an even length", c->seq);
	}
	if (c->steps < 1 || c->steps > 100000000)
		BAD("--steps %zu: need 1..1e8", c->steps);
	if (c->micro < 1 || c->micro > 1024)
		BAD("--micro %zu: need 1..1024", c->micro);
	if (!(c->lr >= 0 && c->lr <= 10) || !(c->min_lr >= 0 && c->min_lr <= c->lr))
		BAD("--lr %g / --min-lr %g: need 0 <= min-lr <= lr <= 10", c->lr, c->min_lr);
	if (!(c->wd >= 0 && c->wd < 1) || !(c->beta1 >= 0 && c->beta1 < 1) ||
	    !(c->beta2 >= 0 && c->beta2 < 1) || !(c->eps >= 0 && c->eps < 1))
		BAD("AdamW: need 0 <= wd, beta1, beta2, eps < 1");
	if (!(c->clip >= 0 && c->clip < INFINITY))
		BAD("--clip %g: need a finite value >= 0 (0: no clipping)", c->clip);
	if (!(c->ln_eps >= 0 && c->ln_eps < 1))
		BAD("--ln-eps %g: need 0 <= eps < 1", c->ln_eps);
	if (!(fabs(c->spike_factor) < INFINITY))
		BAD("--spike factor must be finite");
	if (!(c->lr_spike >= 0 && c->lr_spike < INFINITY))
		BAD("--lr-spike factor must be finite and >= 0");
	if (c->flat_step && !(c->flat_var >= 0 && c->flat_var < INFINITY))
		BAD("--flat variance must be finite and >= 0");
	if (!(c->loss_weight > 0 && c->loss_weight < INFINITY))
		BAD("--loss-weight %g: need a finite value > 0", c->loss_weight);
	if (c->backend != EMU_BE_FAST && c->backend != EMU_BE_EXACT && c->backend != EMU_BE_TRUTH)
		BAD("backend: fast, exact or truth");
	const emu_format *f = c->pol.f;
	if (!holds(&f[EMU_TR_ACCUM], &f[EMU_TR_GEMM]))
		BAD("policy %s: accum (%s) must hold every gemm value (%s)", c->pol.name,
		    f[EMU_TR_ACCUM].name, f[EMU_TR_GEMM].name);
	for (int r = 0; r < EMU_TR_NROLES; r++)
		if (!f[r].has_sign || f[r].nan == EMU_NAN_NONE || f[r].bits > 32)
			BAD("policy %s: role %s needs a signed format with NaN (%s)", c->pol.name,
			    role_names[r], f[r].name);
	if (c->pol.scaled && c->backend == EMU_BE_TRUTH)
		BAD("policy %s: the truth backend has no scaled GEMM", c->pol.name);
	if (c->pol.scaler && emu_gs_config_check(&c->gs, err, errlen) != EMU_GS_OK)
		return -1;
	double ffn = (double)emu_train_ffn(c);
	double params = c->layers * (4.0 * c->d * c->d + 3.0 * ffn * c->d) +
	                (double)(2 * c->vocab + c->seq) * c->d;
	double acts =
	    (double)c->batch * c->seq *
	    (c->layers * (14.0 * c->d + 4.0 * ffn + 2.0 * c->heads * c->seq) + 3.0 * c->vocab);
	double bytes = (params * 5 + acts * 2) * (c->backend == EMU_BE_TRUTH ? 80 : 8);
	if (bytes > 64e9)
		BAD("the model needs about %.0f GB (params %.3g, activations %.3g)", bytes / 1e9,
		    params, acts);
	return 0;
#undef BAD
}

/* ---- the model's tensors (llm.c's order) ---- */

enum {
	P_WTE,
	P_WPE,
	P_LN1W,
	P_LN1B,
	P_QKVW,
	P_QKVB,
	P_PROJW,
	P_PROJB,
	P_LN2W,
	P_LN2B,
	P_FCW,
	P_FCB,
	P_FCPROJW,
	P_FCPROJB,
	P_LNFW,
	P_LNFB,
	P_HEAD, /* llama's untied head (gpt2: none, the head is wte) */
	NP
};
static const char *const p_names[NP] = {"wte",     "wpe",     "ln1w", "ln1b", "qkvw", "qkvb",
                                        "projw",   "projb",   "ln2w", "ln2b", "fcw",  "fcb",
                                        "fcprojw", "fcprojb", "lnfw", "lnfb", "head"};
/* a model-wide tensor (the others have one per layer) */
static bool p_global(int i)
{
	return i == P_WTE || i == P_WPE || i == P_LNFW || i == P_LNFB || i == P_HEAD;
}

/* ---- kernels and their steps: forward steps first, then backward ---- */

enum { K_EMB, K_LN, K_LIN, K_ATTN, K_GELU, K_RES, K_LOSS, K_OPT, K_RMS, K_SWIGLU, NK };
#define KMAX 32 /* step ids per kernel instance */

static const char *const k_steps[NK][KMAX] = {
    [K_EMB] = {"wte", "wpe", "add", "flat", NULL, "dwte_cvt", "dwte", "dwpe"},
    [K_LN] = {"to_compute", "to_reduce",  "sum",      "mean",  "mean_c",      "center",   "square",
              "sq_reduce",  "sumsq",      "var",      "var_c", "add_eps",     "rsqrt",    "norm",
              "w",          "b",          "scale",    "shift", "store",       NULL,       "dy_c",
              "dy_w",       "dyw_reduce", "dyw_sum",  "dyw_y", "dywy_reduce", "dywy_sum", "dmean",
              "dproj",      "dx",         "dx_store", "dwb"},
    [K_LIN] = {"cast_x", "cast_w", "dot", "cast_b", "bias", "store", NULL, "cast_dy", "dgrad",
               "dgrad_store", "wgrad", "wgrad_store", "wgrad_acc", "dbias", "dbias_store",
               "dbias_acc"},
    [K_ATTN] = {"qk",         "qk_store", "to_compute", "scale",      "max",
                "sub",        "exp",      "to_reduce",  "sum",        "sum_c",
                "div",        "store",    "cast_att",   "pv",         "pv_store",
                NULL,         "cast_dy",  "datt",       "datt_store", "datt_c",
                "att_c",      "dv",       "dv_store",   "rowdot",     "rowdot_reduce",
                "rowdot_sum", "rowdot_c", "dsub",       "dmul",       "dscale",
                "cast_ds",    "dqk"},
    [K_GELU] = {"to_compute", "cube",      "inner",   "arg", "neg",     "min",   "exp",
                "den",        "num_min",   "num_exp", "sig", "mul",     "store", NULL,
                "dy_c",       "one_minus", "sig_d",   "x2",  "poly",    "poly1", "poly_c",
                "chain",      "chain_x",   "slope",   "dx",  "dx_store"},
    [K_RES] = {"to_act", "add", NULL, "to_grad", "add"},
    [K_LOSS] = {"to_loss",   "spike",  "max",     "sub",           "exp",
                "sum",       "log",    "nll",     "mean_sum",      "mean",
                "micro_div", NULL,     "dscale",  "dmicro",        "dmean",
                "prob",      "onehot", "dlogits", "dlogits_store", "dweight"},
    [K_OPT] = {"unscale_c", "unscale",  "unscale_store", "sq_c",  "sq",          "sumsq",
               "norm",      "clip_den", "clip_coef",     "clip",  "clip_store",  "g_c",
               "w_c",       "decay",    "decay_store",   "m_c",   "lerp_sub",    "lerp_mul",
               "lerp_add",  "m_store",  "v_c",           "v_mul", "v_mul_store", "g2_scale",
               "g2",        "v_add",    "v_store",       "denom", "denom_store", "step",
               "update",    "w_store"},
    [K_RMS] = {"to_compute", "square", "sq_reduce", "sumsq",       "ms",       "ms_c",
               "add_eps",    "rsqrt",  "norm",      "w",           "scale",    "store",
               NULL,         "dy_c",   "dy_w",      "dywy_reduce", "dywy_sum", "dmean",
               "dyw_y",      "dproj",  "dx",        "dx_store",    "dwb"},
    [K_SWIGLU] = {"to_compute", "neg",   "min",     "exp",   "den",  "num_min", "num_exp",   "sig",
                  "silu",       "mul",   "store",   NULL,    "dy_c", "x_c",     "one_minus", "g_om",
                  "plus1",      "dsilu", "dgate_u", "dgate", "dup",  "dx_store"},
};
/* the index of the first backward step (the NULL) */
static unsigned k_nfwd(int k)
{
	unsigned i = 0;
	while (i < KMAX && k_steps[k][i])
		i++;
	return i;
}
static unsigned kstep_find(int k, const char *name, bool bwd)
{
	unsigned i0 = bwd ? k_nfwd(k) + 1 : 0;
	/* every step of a run asks this: the call sites' literals are the
	 * table's (merged by the compiler), so their addresses answer first */
	for (unsigned i = i0; i < KMAX; i++)
		if (k_steps[k][i] == name)
			return i;
	for (unsigned i = i0; i < KMAX; i++)
		if (k_steps[k][i] && !strcmp(k_steps[k][i], name))
			return i;
	fprintf(stderr, "train: no step %s of kernel %d\n", name, k);
	abort();
}

/* kstep_find, remembered: a step asks for its site thousands of times a
 * training step (a direct-mapped cache per thread, keyed by the literal's
 * address, the kernel and the direction) */
static unsigned kstep(int k, const char *name, bool bwd)
{
	static _Thread_local struct {
		const char *name;
		int k;
		bool bwd;
		unsigned i;
	} memo[256];
	uint64_t key = ((uint64_t)(uintptr_t)name ^ (uint64_t)k << 1 ^ (uint64_t)bwd) *
	               0x9e3779b97f4a7c15ull;
	size_t h = (size_t)(key >> 56);
	if (memo[h].name != name || memo[h].k != k || memo[h].bwd != bwd) {
		memo[h].i = kstep_find(k, name, bwd);
		memo[h].name = name;
		memo[h].k = k;
		memo[h].bwd = bwd;
	}
	return memo[h].i;
}

/* kernel instances: per layer ln1 qkv attn proj res1 ln2 fc gelu fcproj res2 */
enum { I_LN1, I_QKV, I_ATTN, I_PROJ, I_RES1, I_LN2, I_FC, I_GELU, I_FCPROJ, I_RES2, NI_LAYER };
static const int i_kind[2][NI_LAYER] = {
    {K_LN, K_LIN, K_ATTN, K_LIN, K_RES, K_LN, K_LIN, K_GELU, K_LIN, K_RES},
    {K_RMS, K_LIN, K_ATTN, K_LIN, K_RES, K_RMS, K_LIN, K_SWIGLU, K_LIN, K_RES}};
static const char *const i_names[2][NI_LAYER] = {
    {"ln1", "qkv", "attn", "proj", "res1", "ln2", "fc", "gelu", "fcproj", "res2"},
    {"rms1", "qkv", "attn", "proj", "res1", "rms2", "fc", "swiglu", "fcproj", "res2"}};
/* global instances after the layers: emb, lnf, logits, loss, optimizer */
enum { G_EMB, G_LNF, G_LOGITS, G_LOSS, G_OPT, NG };
static const int g_kind[2][NG] = {{K_EMB, K_LN, K_LIN, K_LOSS, K_OPT},
                                  {K_EMB, K_RMS, K_LIN, K_LOSS, K_OPT}};
static const char *const g_names[2][NG] = {{"emb", "lnf", "logits", "loss", "optimizer"},
                                           {"emb", "rmsf", "head", "loss", "optimizer"}};

/* ---- the sites' names: one table for every run, built once ----
 * A backend keeps the names it was given (and its first failing operation
 * points into them), and a sweep's backend outlives the trainer of its
 * point: the names live as long as the program. */

#define TR_MAXL 64 /* layers the table names (emu_train_cfg_check's bound) */
static char (*site_names)[64];
static const char **site_ptrs;
static pthread_once_t sites_once = PTHREAD_ONCE_INIT;

static void make_sites(void)
{
	size_t ninst = NG + (size_t)TR_MAXL * NI_LAYER, n = 2 * ninst * KMAX;
	char(*names)[64] = malloc(n * sizeof *names);
	const char **ptrs = malloc(n * sizeof *ptrs);
	if (!names || !ptrs) {
		free(names);
		free(ptrs);
		return;
	}
	for (size_t j = 0; j < 2 * ninst; j++) { /* each architecture's table */
		size_t arch = j / ninst, i = j % ninst;
		int kind;
		char block[48];
		const char *iname;
		if (i < NG) {
			kind = g_kind[arch][i];
			iname = g_names[arch][i];
			block[0] = '\0';
		} else {
			kind = i_kind[arch][(i - NG) % NI_LAYER];
			iname = i_names[arch][(i - NG) % NI_LAYER];
			snprintf(block, sizeof block, "layer%zu.", (i - NG) / NI_LAYER);
		}
		for (unsigned k = 0; k < KMAX; k++) {
			snprintf(names[j * KMAX + k], sizeof names[0], "%s%s.%s", block, iname,
			         k_steps[kind][k] ? k_steps[kind][k] : "-");
			ptrs[j * KMAX + k] = names[j * KMAX + k];
		}
	}
	site_names = names;
	site_ptrs = ptrs;
}

/* ---- the trainer ---- */

typedef struct {
	emu_vec *x0; /* M×d act: embeddings */
	emu_vec **ln1, **ln1y, **ln1r, **qkv, **att, **atty, **proj, **res1; /* per layer */
	emu_vec **ln2, **ln2y, **ln2r, **fc, **gelu_s, **gelu, **fcproj, **res2;
	emu_vec *lnf, *lnfy, *lnfr, *logits, *z, *ez, *sum, *losses; /* head */
	/* scratch */
	emu_vec *dres, *dA, *dB, *dC, *ddot, *g1, *g2, *g3, *g4, *consts;
	emu_vec *sw1, *sw2, *sw3, *sw4; /* SwiGLU's (llama), M×ffn each */
	emu_vec *o1, *o2, *o3, *o4; /* the optimizer's, one tensor each */
	size_t nconst;
} acts;

struct emu_train {
	emu_train_cfg c;
	size_t L, d, H, hs, T, V, B, M;
	size_t ffn, fcw; /* the MLP's hidden width, and fc's output width (llama: gate and up) */
	size_t off[NP], per[NP], np;
	double *P, *G, *Mo, *Vo; /* parameters, .grad, AdamW's m and v (values) */
	emu_vec Pv, Gv, Mv, Vv;  /* the four as engine vectors (fast/exact) */
	uint64_t step, adam_t;
	emu_gs_state gs;
	size_t ninst;
	unsigned nsites; /* the sites this model's steps use (site_ptrs' first ones) */
	emu_train_lstat *ls;
	emu_train_fail fail;
	int *inp, *tgt;
	/* the pass being run */
	emu_be *be;
	acts a;
	unsigned micro;
	bool in_step; /* a training step (watch records first failures) */
	bool oom;     /* an allocation inside a pass failed */
	char first_nf[64];
	bool first_nf_set;
	uint64_t first_nf_i;
	double first_nf_v;
	double loss_acc;
	/* truth: parameters, gradients and states copied into engine vectors */
	emu_vec *tP, *tG, *tM, *tV;
	emu_be *ext; /* a kernel run's backend (emu_kernel_train), else NULL */
	bool ready;  /* the pass's vectors are allocated */
	/* delayed scaling: per scaled-GEMM operand (key: its GEMM's site·2 +
	 * operand), the amaxes of its last hlen calls, oldest first from pos */
	struct amax_hist {
		double key, n, pos;
		double *ring;
	} * hist;
	size_t nhist, hlen;
};
static struct amax_hist *hist_of(emu_train *t, unsigned key);
static int squant(emu_train *t, const emu_recipe *r, emu_role role, bool colwise, const double *x,
                  size_t rows, size_t cols, const emu_qpart *part, unsigned key, emu_qtensor *q);

static void free_acts(emu_train *t);

/* the kinds of the arch's norms and MLP activation */
#define K_NORM(t) ((t)->c.arch == EMU_ARCH_LLAMA ? K_RMS : K_LN)
#define K_ACT(t) ((t)->c.arch == EMU_ARCH_LLAMA ? K_SWIGLU : K_GELU)
/* a bias tensor, or -1 where the arch has none; the logits' weight */
#define BIAS(t, i) (pcount((t), (i)) ? (i) : -1)
#define HEADW(t) ((t)->c.arch == EMU_ARCH_LLAMA ? P_HEAD : P_WTE)

static unsigned inst_base(const emu_train *t, int layer, int inst)
{
	/* the global instances first, then the layers': a site's id does not
	 * depend on the model's depth, so one table of names serves every run */
	(void)t;
	size_t i = layer >= 0 ? NG + (size_t)layer * NI_LAYER + (size_t)inst : (size_t)inst;
	return EMU_STEP0 + (unsigned)(i * KMAX);
}
/* step name of the instance, forward or backward */
#define SITE(layer, inst, kind, name, bwd)                                                         \
	(inst_base(t, (layer), (inst)) + kstep((kind), (name), (bwd)))

static const emu_format *F(const emu_train *t, emu_train_role r)
{
	return &t->c.pol.f[r];
}

size_t emu_train_nparams(const emu_train *t)
{
	return t->np;
}

static void layout(emu_train *t)
{
	size_t d = t->d, L = t->L, h = t->ffn;
	size_t per[NP] = {t->V * d, t->T * d,   d,      d,     3 * d * d, 3 * d, d * d, d, d,
	                  d,        t->fcw * d, t->fcw, h * d, d,         d,     d,     0};
	if (t->c.arch == EMU_ARCH_LLAMA) /* no biases; its own head */
		per[P_LN1B] = per[P_QKVB] = per[P_PROJB] = per[P_LN2B] = per[P_FCB] =
		    per[P_FCPROJB] = per[P_LNFB] = 0,
		per[P_HEAD] = t->V * d;
	size_t cnt[NP];
	for (int i = 0; i < NP; i++)
		cnt[i] = p_global(i) ? per[i] : per[i] * L;
	size_t o = 0;
	for (int i = 0; i < NP; i++) {
		t->off[i] = o;
		t->per[i] = per[i];
		o += cnt[i];
	}
	t->np = o;
}
static size_t pcount(const emu_train *t, int i)
{
	return p_global(i) ? t->per[i] : t->per[i] * t->L;
}
static size_t poff(const emu_train *t, int i, size_t layer)
{
	return t->off[i] + (p_global(i) ? 0 : layer * t->per[i]);
}

static double round_to(const emu_format *f, double x)
{
	emu_env env = EMU_ENV_DEFAULT;
	return emu_decode(f, emu_from_double(f, x, &env).bits);
}

emu_train *emu_train_new(const emu_train_cfg *cfg, char *err, size_t errlen)
{
	if (emu_train_cfg_check(cfg, err, errlen) != 0)
		return NULL;
	emu_train *t = calloc(1, sizeof *t);
	if (!t)
		goto oom;
	t->c = *cfg;
	t->L = cfg->layers, t->d = cfg->d, t->H = cfg->heads, t->hs = cfg->d / cfg->heads;
	t->T = cfg->seq, t->V = cfg->vocab, t->B = cfg->batch, t->M = t->B * t->T;
	t->ffn = emu_train_ffn(cfg);
	t->hlen = cfg->pol.recipe.delayed_len > 0 ? (size_t)cfg->pol.recipe.delayed_len : 1;
	t->fcw = cfg->arch == EMU_ARCH_LLAMA ? 2 * t->ffn : t->ffn;
	layout(t);
	t->P = calloc(t->np, sizeof *t->P);
	t->G = calloc(t->np, sizeof *t->G);
	t->Mo = calloc(t->np, sizeof *t->Mo);
	t->Vo = calloc(t->np, sizeof *t->Vo);
	t->inp = calloc(t->M, sizeof *t->inp);
	t->tgt = calloc(t->M, sizeof *t->tgt);
	t->ninst = t->L * NI_LAYER + NG;
	t->nsites = (unsigned)(t->ninst * KMAX);
	t->ls = calloc((t->L + 2) * 2, sizeof *t->ls);
	pthread_once(&sites_once, make_sites);
	if (!t->P || !t->G || !t->Mo || !t->Vo || !t->inp || !t->tgt || !site_ptrs || !t->ls)
		goto oom;
	/* initialisation as GPT-2's: N(0, 0.02), the residual projections
	 * N(0, 0.02/sqrt(2L)), biases 0, norm weights 1 */
	const emu_format *Mf = F(t, EMU_TR_MASTER);
	for (int i = 0; i < NP; i++) {
		double sd = 0;
		switch (i) {
		case P_WTE:
		case P_WPE:
		case P_QKVW:
		case P_FCW:
		case P_HEAD:
			sd = 0.02;
			break;
		case P_PROJW:
		case P_FCPROJW:
			sd = 0.02 / sqrt(2.0 * (double)t->L);
			break;
		default:
			break;
		}
		nm_gen g = {
		    NM_GEN_NORMAL, sd, 0, 0, emu_mix64(cfg->seed * 0x100 + (uint64_t)i), 0, 0};
		double one = (i == P_LN1W || i == P_LN2W || i == P_LNFW) ? 1 : 0;
		for (size_t j = 0; j < pcount(t, i); j++)
			t->P[t->off[i] + j] = sd > 0 ? round_to(Mf, nm_gen_one(&g, j)) : one;
	}
	t->Pv = (emu_vec){t->np, t->P, NULL};
	t->Gv = (emu_vec){t->np, t->G, NULL};
	t->Mv = (emu_vec){t->np, t->Mo, NULL};
	t->Vv = (emu_vec){t->np, t->Vo, NULL};
	if (t->c.pol.scaler)
		emu_gs_init(&t->c.gs, &t->gs);
	return t;
oom:
	emu_train_free(t);
	snprintf(err, errlen, "train: out of memory");
	return NULL;
}

void emu_train_free(emu_train *t)
{
	if (!t)
		return;
	if (t->ext && t->ready)
		free_acts(t); /* the lists; the vectors are the backend's */
	free(t->P);
	free(t->G);
	free(t->Mo);
	free(t->Vo);
	free(t->inp);
	free(t->tgt);
	free(t->ls);
	for (size_t i = 0; i < t->nhist; i++)
		free(t->hist[i].ring);
	free(t->hist);
	free(t);
}

/* t's delayed-scaling histories become a copy of src's (none when either
 * has another length). 0, or -1 out of memory. */
static int hist_copy(emu_train *t, const emu_train *src)
{
	for (size_t i = 0; i < t->nhist; i++)
		free(t->hist[i].ring);
	free(t->hist);
	t->hist = NULL, t->nhist = 0;
	if (src->hlen != t->hlen || t->c.pol.recipe.rule != EMU_RSCALE_DELAYED)
		return 0;
	for (size_t i = 0; i < src->nhist; i++) {
		struct amax_hist *h = hist_of(t, (unsigned)src->hist[i].key);
		if (!h)
			return -1;
		h->n = src->hist[i].n, h->pos = src->hist[i].pos;
		memcpy(h->ring, src->hist[i].ring, t->hlen * sizeof *h->ring);
	}
	return 0;
}

size_t emu_train_ntensors(const emu_train *t)
{
	size_t n = 0;
	for (int i = 0; i < NP; i++)
		n += pcount(t, i) > 0;
	return n;
}

/* the P_ index of the model's i-th tensor (its empty ones skipped), or -1 */
static int tensor_at(const emu_train *t, size_t i)
{
	for (int k = 0; k < NP; k++)
		if (pcount(t, k) > 0 && i-- == 0)
			return k;
	return -1;
}

const char *emu_train_tensor(const emu_train *t, size_t i, double **values, double **grads,
                             size_t *count)
{
	int k = tensor_at(t, i);
	if (k < 0)
		return NULL;
	*values = t->P + t->off[k];
	*grads = t->G + t->off[k];
	*count = pcount(t, k);
	return p_names[k];
}

const emu_train_lstat *emu_train_lstats(const emu_train *t, size_t *n)
{
	*n = (t->L + 2) * 2;
	return t->ls;
}

const emu_train_fail *emu_train_first_fail(const emu_train *t)
{
	return &t->fail;
}

/* ---- data: the built-in tasks and text ---- */

/* Sequence j of batch k of a stream (0 train, 1 validation): T + 1 tokens. */
static void sequence(const emu_train *t, int stream, uint64_t k, size_t j, int *s)
{
	const emu_train_cfg *c = &t->c;
	size_t T = t->T;
	uint64_t key = emu_draw_key(c->seed, ((uint64_t)stream << 62) ^ (k * t->B + j));
	if (c->task == EMU_TASK_TEXT) {
		/* train: the first 90 % of the bytes; validation: the rest */
		size_t split = c->text_len / 10 * 9, lo = stream ? split : 0,
		       hi = stream ? c->text_len : split;
		if (hi - lo < T + 1) /* a short validation part: read the whole text */
			lo = 0, hi = c->text_len;
		size_t start = lo + (size_t)(key % (uint64_t)(hi - lo - T));
		for (size_t i = 0; i <= T; i++)
			s[i] = c->text[start + i];
		return;
	}
	/* digits 0..V-2, separator V-1: a_1..a_h SEP b_1..b_h with h = T/2 */
	size_t h = T / 2;
	int m = (int)t->V - 1, sep = m; /* the digits are 0..m-1, the separator m */
	for (size_t i = 0; i < h; i++)
		s[i] = (int)(emu_mix64(key + i + 1) % (uint64_t)m);
	s[h] = sep;
	for (size_t i = 0; i < h; i++) {
		int b;
		switch (c->task) {
		case EMU_TASK_REVERSE:
			b = s[h - 1 - i];
			break;
		case EMU_TASK_SORT: { /* the i-th smallest */
			int v = 0;
			size_t seen = 0;
			for (v = 0; v < m; v++) {
				size_t nv = 0;
				for (size_t q = 0; q < h; q++)
					nv += s[q] == v;
				if (seen + nv > i)
					break;
				seen += nv;
			}
			b = v;
			break;
		}
		case EMU_TASK_MODADD:
			b = (s[i] + s[h - 1 - i]) % m;
			break;
		default:
			b = s[i];
			break;
		}
		s[h + 1 + i] = b;
	}
}

static void batch(emu_train *t, int stream, uint64_t k)
{
	int s[4097] = {0};
	for (size_t j = 0; j < t->B; j++) {
		sequence(t, stream, k, j, s);
		for (size_t i = 0; i < t->T; i++) {
			t->inp[j * t->T + i] = s[i];
			t->tgt[j * t->T + i] = s[i + 1];
		}
	}
}

/* ---- engine helpers ---- */

#define NOREF EMU_NOREF
/* element numbers: micro-batch k's elements start at k·2^32 */
static uint64_t E(const emu_train *t, uint64_t e)
{
	return ((uint64_t)t->micro << 32) + e;
}

static void map(emu_train *t, unsigned s, emu_op op, const emu_format *f, emu_ref d, emu_ref a,
                emu_ref b, size_t n, uint64_t e)
{
	emu_map(t->be, s, op, f, d, a, b, NOREF, n, E(t, e), NULL);
}
static void cvt(emu_train *t, unsigned s, const emu_format *f, emu_ref d, emu_ref a, size_t n,
                uint64_t e)
{
	emu_map(t->be, s, EMU_OP_CVT, f, d, a, NOREF, NOREF, n, E(t, e), NULL);
}
/* a constant rounded into f under step s: a new slot of the constants */
static emu_ref konst(emu_train *t, unsigned s, const emu_format *f, double x)
{
	emu_ref r = emu_at(t->a.consts, t->a.nconst++);
	emu_fill(t->be, r, x, 1);
	emu_op1(t->be, s, EMU_OP_CVT, f, r, r, NOREF, 0);
	return r;
}
static emu_vec *vnew(emu_train *t, size_t n)
{
	return emu_vec_new(t->be, n ? n : 1);
}
static emu_ref PR(emu_train *t, int i, size_t layer)
{
	return emu_row(t->tP ? t->tP : &t->Pv, poff(t, i, layer));
}
static emu_ref GR(emu_train *t, int i, size_t layer)
{
	return emu_row(t->tG ? t->tG : &t->Gv, poff(t, i, layer));
}

/* Watch a kernel's output: the layer statistics and the first tensor of the
 * step holding inf or NaN. layer: 0 embedding, 1..L blocks, L+1 head. */
static void watch(emu_train *t, size_t layer, int dir, const char *name, emu_vec *v, size_t off,
                  size_t n)
{
	char lbl[64];
	if (t->c.arch == EMU_ARCH_LLAMA) { /* the tensors' names in llama's terms */
		static const char *const from[] = {"ln1.", "ln2.", "lnf.", "gelu.", "logits."},
		                         *const to[] = {"rms1.", "rms2.", "rmsf.", "swiglu.",
		                                        "head."};
		const char *dot = strrchr(name, '.'), *blk = name;
		for (size_t k = 0; k < sizeof from / sizeof *from; k++) {
			const char *at = strstr(name, from[k]);
			if (at && (at == name || at[-1] == '.') &&
			    at + strlen(from[k]) - 1 == dot) {
				snprintf(lbl, sizeof lbl, "%.*s%s%s", (int)(at - blk), blk, to[k],
				         dot + 1);
				name = lbl;
				break;
			}
		}
	}
	emu_train_lstat *ls = &t->ls[layer * 2 + (size_t)dir];
	for (size_t i = 0; i < n; i++) {
		double x = v->d ? v->d[off + i] : emu_vget(t->be, v, off + i);
		if (isnan(x))
			ls->nan++;
		else if (isinf(x))
			ls->inf++;
		else if (fabs(x) > ls->amax)
			ls->amax = fabs(x);
		if (!isfinite(x) && !t->first_nf_set && t->in_step) {
			t->first_nf_set = true;
			snprintf(t->first_nf, sizeof t->first_nf, "%s", name);
			t->first_nf_i = i;
			t->first_nf_v = x;
		}
	}
}
static void watchn(emu_train *t, size_t layer, int dir, const char *block, const char *what,
                   emu_vec *v, size_t n)
{
	char name[64];
	snprintf(name, sizeof name, "%s%s", block, what);
	watch(t, layer, dir, name, v, 0, n);
}

/* C[i·J + j] = Σ_p A(i, p)·B(j, p) folded in accum (fma, p ascending);
 * A(i, p) = A[ao + i·ars + p·acs], B likewise. Row i's J folds run
 * together (emu_fold_n, each exactly its own sequential fold), the rows in
 * parts on several threads (emu_rows), with the counts and first failure
 * of the folds one after another. */
typedef struct {
	unsigned s;
	const emu_format *Ac;
	emu_vec *C, *A, *B;
	size_t co, ao, ars, acs, bo, brs, bcs, J, P;
	uint64_t e0;
} dots_job;

static int dots_rows(emu_be *be, size_t i0, size_t i1, void *arg)
{
	const dots_job *d = arg;
	for (size_t i = i0; i < i1; i++)
		emu_fold_n(be, d->s, EMU_OP_FMA, d->Ac, emu_row(d->C, d->co + i * d->J),
		           emu_strided(d->A, d->ao + i * d->ars, d->acs), 0,
		           emu_strided(d->B, d->bo, d->bcs), d->brs, d->P, d->J,
		           d->e0 + i * d->J * d->P, d->P);
	return 0;
}

static void dots(emu_train *t, unsigned s, emu_vec *C, size_t co, emu_vec *A, size_t ao, size_t ars,
                 size_t acs, emu_vec *Bv, size_t bo, size_t brs, size_t bcs, size_t I, size_t J,
                 size_t P, uint64_t e0)
{
	dots_job d = {s,       F(t, EMU_TR_ACCUM), C, A, Bv, co, ao, ars, acs, bo, brs, bcs, J, P,
	              E(t, e0)};
	emu_fill(t->be, emu_row(C, co), 0, I * J);
	if (emu_rows(t->be, I, (uint64_t)J * P, dots_rows, &d) != 0)
		t->oom = true;
}

/* ---- the scaled GEMM: D[I,J] = A[I,P]·B[P,J] through the recipe ---- */

static bool scaled_inst(const emu_train *t, int layer, int inst)
{
	return t->c.pol.scaled && layer >= 0 &&
	       (inst == I_QKV || inst == I_PROJ || inst == I_FC || inst == I_FCPROJ);
}

/* A row-major I×P, quantised row-wise for role ra (its RHT along P when
 * rht); B row-major P×J, the column-wise copy for role rb (RHT as the recipe
 * says for column-wise copies when rht, else none). The quantisers' flags
 * are recorded under sq (each element one cvt), the GEMM's outputs under sd
 * (one fma an output: overflow when infinite, invalid when NaN). 0 or -1. */
static int sgemm(emu_train *t, unsigned sq, unsigned sd, const double *A, emu_role ra,
                 const double *B, emu_role rb, bool rht, size_t I, size_t J, size_t P, double *D,
                 uint64_t e0)
{
	emu_recipe rA = t->c.pol.recipe, rB = rA;
	if (rht)
		rA.rht_all =
		    rA.rht; /* A's row-wise copy is the column-wise copy of its transpose */
	else
		rA.rht = rA.rht_all = rB.rht = rB.rht_all = false;
	if (t->c.pol.hybrid) { /* the gradients' copies in e5m2 */
		const emu_format *e5 = emu_format_by_name("e5m2");
		double f4 = rA.elem.max; /* a recipe aiming at e4m3's max aims at e5m2's */
		if (ra == EMU_ROLE_GRAD)
			rA.elem = *e5, rA.fmax = rA.fmax == f4 ? 0 : rA.fmax;
		if (rb == EMU_ROLE_GRAD)
			rB.elem = *e5, rB.fmax = rB.fmax == f4 ? 0 : rB.fmax;
	}
	uint64_t seed = emu_draw_key(t->be->env.seed, ((uint64_t)sd << 32) + t->micro);
	emu_qtensor qa, qb;
	emu_qpart pa = {0, I, seed, NAN, 0};
	if (squant(t, &rA, ra, false, A, I, P, &pa, 2 * sd, &qa) != 0)
		return -1;
	emu_qpart part = {0, P, seed, NAN, (uint64_t)I * P};
	if (squant(t, &rB, rb, true, B, P, J, &part, 2 * sd + 1, &qb) != 0) {
		emu_qtensor_free(&qa);
		return -1;
	}
	for (size_t i = 0; i < I * P; i++)
		emu_note(t->be, sq, EMU_OP_CVT, qa.flags[i], E(t, e0 + i));
	for (size_t i = 0; i < P * J; i++)
		emu_note(t->be, sq, EMU_OP_CVT, qb.flags[i], E(t, e0 + I * P + i));
	emu_gemm_opts o = {t->c.pol.model, false};
	char err[200];
	emu_status st = emu_scaled_gemm(&qa, &qb, &t->c.pol.recipe, &o, D, err, sizeof err);
	emu_qtensor_free(&qa);
	emu_qtensor_free(&qb);
	if (st != EMU_OK) {
		fprintf(stderr, "train: %s\n", err); /* refused by emu_train_cfg_check first */
		return -1;
	}
	for (size_t i = 0; i < I * J; i++)
		emu_note(t->be, sd, EMU_OP_FMA,
		         isnan(D[i])   ? EMU_FLAG_INVALID
		         : isinf(D[i]) ? EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT
		                       : 0,
		         E(t, e0 + i));
	return 0;
}

/* The history of operand key (created empty); NULL out of memory. */
static struct amax_hist *hist_of(emu_train *t, unsigned key)
{
	for (size_t i = 0; i < t->nhist; i++)
		if (t->hist[i].key == key)
			return &t->hist[i];
	struct amax_hist *h = realloc(t->hist, (t->nhist + 1) * sizeof *h);
	if (!h)
		return NULL;
	t->hist = h;
	h = &t->hist[t->nhist];
	*h = (struct amax_hist){key, 0, 0, calloc(t->hlen, sizeof(double))};
	if (!h->ring)
		return NULL;
	t->nhist++;
	return h;
}

static double hist_max(const struct amax_hist *h)
{
	double m = 0;
	for (size_t i = 0; i < (size_t)h->n; i++)
		m = h->ring[i] > m ? h->ring[i] : m;
	return m;
}

/* a call's amax into the history: a non-finite one is left out (TE keeps
 * the scale it had when the amax is not finite) */
static void hist_push(emu_train *t, struct amax_hist *h, double amax)
{
	if (!isfinite(amax))
		return;
	h->ring[(size_t)h->pos] = amax;
	h->pos = (double)(((size_t)h->pos + 1) % t->hlen);
	if (h->n < (double)t->hlen)
		h->n++;
}

/* One operand of a scaled GEMM quantised: the delayed rule with the
 * operand's history, the others as the recipe says. 0 or -1. */
static int squant(emu_train *t, const emu_recipe *r, emu_role role, bool colwise, const double *x,
                  size_t rows, size_t cols, const emu_qpart *part, unsigned key, emu_qtensor *q)
{
	if (r->rule != EMU_RSCALE_DELAYED)
		return emu_quantize_part(r, role, colwise, x, rows, cols, part, q);
	struct amax_hist *h = hist_of(t, key);
	if (!h || emu_quantize_hist(r, role, colwise, x, rows, cols, part, hist_max(h), q) != 0)
		return -1;
	hist_push(t, h, q->tensor_amax);
	return 0;
}

static double *transpose(const double *x, size_t rows, size_t cols)
{
	double *y = malloc((rows * cols != 0 ? rows * cols : 1) * sizeof *y);
	if (y)
		for (size_t i = 0; i < rows; i++)
			for (size_t j = 0; j < cols; j++)
				y[j * rows + i] = x[i * cols + j];
	return y;
}

/* ---- linear layers: y[M,N] = x[M,K]·W[N,K]ᵀ + b ---- */

typedef struct {
	emu_vec *xg, *wg; /* the forward's casts, kept for the backward */
} lin_saved;

static void linear_fwd(emu_train *t, int layer, int inst, int wi, int bi, size_t wl, emu_vec *x,
                       size_t K, size_t N, emu_vec *y, emu_vec *xg, emu_vec *wg)
{
	const emu_format *Gm = F(t, EMU_TR_GEMM), *Ac = F(t, EMU_TR_ACCUM);
	size_t M = t->M;
#define LS(name) SITE(layer, inst, K_LIN, name, false)
	if (scaled_inst(t, layer, inst)) {
		double *wt = transpose(t->P + poff(t, wi, wl), N, K);
		if (!wt || sgemm(t, LS("cast_x"), LS("dot"), x->d, EMU_ROLE_ACT, wt,
		                 EMU_ROLE_WEIGHT, false, M, N, K, y->d, 0) != 0)
			t->oom = true;
		free(wt);
	} else {
		cvt(t, LS("cast_x"), Gm, emu_row(xg, 0), emu_row(x, 0), M * K, 0);
		cvt(t, LS("cast_w"), Gm, emu_row(wg, 0), PR(t, wi, wl), N * K, 0);
		dots(t, LS("dot"), y, 0, xg, 0, K, 1, wg, 0, K, 1, M, N, K, 0);
	}
	if (bi >= 0) {
		emu_vec *b = t->a.g4;
		cvt(t, LS("cast_b"), Gm, emu_row(b, 0), PR(t, bi, wl), N, 0);
		cvt(t, LS("cast_b"), Ac, emu_row(b, 0), emu_row(b, 0), N, 0);
		for (size_t m = 0; m < M; m++)
			map(t, LS("bias"), EMU_OP_ADD, Ac, emu_row(y, m * N), emu_row(y, m * N),
			    emu_row(b, 0), N, m * N);
	}
	cvt(t, LS("store"), Gm, emu_row(y, 0), emu_row(y, 0), M * N, 0);
#undef LS
}

/* dy[M,N] (grad) -> dx[M,K] (gemm values, in dx); W's and b's .grad += */
static void linear_bwd(emu_train *t, int layer, int inst, int wi, int bi, size_t wl, emu_vec *dy,
                       size_t K, size_t N, emu_vec *dx, emu_vec *xg, emu_vec *wg, emu_vec *x)
{
	const emu_format *Gm = F(t, EMU_TR_GEMM), *Ac = F(t, EMU_TR_ACCUM),
	                 *Mf = F(t, EMU_TR_MASTER);
	size_t M = t->M;
	emu_vec *dyg = t->a.dA, *dw = t->a.dB;
#define LB(name) SITE(layer, inst, K_LIN, name, true)
	if (scaled_inst(t, layer, inst)) {
		/* dgrad: dy (grad, along N) · W (weight, N×K, along N); wgrad: dyᵀ
		 * (grad, along M) · x (act, M×K, along M), both with the recipe's RHT */
		double *dyt = transpose(dy->d, M, N);
		if (!dyt ||
		    sgemm(t, LB("cast_dy"), LB("dgrad"), dy->d, EMU_ROLE_GRAD,
		          t->P + poff(t, wi, wl), EMU_ROLE_WEIGHT, false, M, K, N, dx->d, 0) != 0 ||
		    sgemm(t, LB("cast_dy"), LB("wgrad"), dyt, EMU_ROLE_GRAD, x->d, EMU_ROLE_ACT,
		          true, N, K, M, dw->d, (uint64_t)M * N + N * K) != 0)
			t->oom = true;
		free(dyt);
		cvt(t, LB("dgrad_store"), Gm, emu_row(dx, 0), emu_row(dx, 0), M * K, 0);
		cvt(t, LB("cast_dy"), Gm, emu_row(dyg, 0), emu_row(dy, 0), M * N, 0); /* for db */
	} else {
		cvt(t, LB("cast_dy"), Gm, emu_row(dyg, 0), emu_row(dy, 0), M * N, 0);
		if (dx) { /* dgrad: dx[m,k] = Σ_n dy[m,n]·W[n,k] */
			dots(t, LB("dgrad"), dx, 0, dyg, 0, N, 1, wg, 0, 1, K, M, K, N, 0);
			cvt(t, LB("dgrad_store"), Gm, emu_row(dx, 0), emu_row(dx, 0), M * K, 0);
		}
		/* wgrad: dW[n,k] = Σ_m dy[m,n]·x[m,k] */
		dots(t, LB("wgrad"), dw, 0, dyg, 0, 1, N, xg, 0, 1, K, N, K, M, 0);
	}
	cvt(t, LB("wgrad_store"), Gm, emu_row(dw, 0), emu_row(dw, 0), N * K, 0);
	cvt(t, LB("wgrad_acc"), Mf, emu_row(dw, 0), emu_row(dw, 0), N * K, 0);
	map(t, LB("wgrad_acc"), EMU_OP_ADD, Mf, GR(t, wi, wl), GR(t, wi, wl), emu_row(dw, 0), N * K,
	    0);
	if (bi >= 0) { /* db[n] = Σ_m dy[m,n] */
		emu_vec *db = t->a.g4;
		emu_fill(t->be, emu_row(db, 0), 0, N);
		for (size_t n = 0; n < N; n++)
			emu_fold(t->be, LB("dbias"), EMU_OP_ADD, Ac, EMU_ORDER_SEQ, emu_at(db, n),
			         emu_strided(dyg, n, N), NOREF, M, E(t, n * M));
		cvt(t, LB("dbias_store"), Gm, emu_row(db, 0), emu_row(db, 0), N, 0);
		cvt(t, LB("dbias_acc"), Mf, emu_row(db, 0), emu_row(db, 0), N, 0);
		map(t, LB("dbias_acc"), EMU_OP_ADD, Mf, GR(t, bi, wl), GR(t, bi, wl),
		    emu_row(db, 0), N, 0);
	}
#undef LB
}

/* ---- layer norm with weight and bias ---- */

/* The end of a norm's backward, LayerNorm's and RMSNorm's alike: the
 * weight's gradient Σ_rows dy·ŷ and (bi >= 0) the bias's Σ_rows dy, each
 * column summed down the rows in reduce (the two folds of a column in
 * turn), converted to master and added into .grad (site sw); then dx
 * (grad) added into the residual gradient dres (site sx). dyc holds dy in
 * compute; dyw and tmp are scratch. */
static void norm_bwd_tail(emu_train *t, unsigned sw, unsigned sx, emu_vec *dyc, emu_vec *yhat,
                          emu_vec *dyw, emu_vec *tmp, emu_vec *dx, int wi, int bi, size_t wl,
                          emu_vec *dres)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *R = F(t, EMU_TR_REDUCE),
	                 *Gf = F(t, EMU_TR_GRAD), *Mf = F(t, EMU_TR_MASTER);
	size_t M = t->M, d = t->d, nb = bi >= 0 ? 2 : 1;
	map(t, sw, EMU_OP_MUL, C, emu_row(dyw, 0), emu_row(dyc, 0), emu_row(yhat, 0), M * d, 0);
	cvt(t, sw, R, emu_row(dyw, 0), emu_row(dyw, 0), M * d, 0);
	if (bi >= 0)
		cvt(t, sw, R, emu_row(dyc, 0), emu_row(dyc, 0), M * d, 0);
	emu_fill(t->be, emu_row(tmp, 0), 0, nb * d);
	for (size_t j = 0; j < d; j++) {
		emu_fold(t->be, sw, EMU_OP_ADD, R, EMU_ORDER_SEQ, emu_at(tmp, j),
		         emu_strided(dyw, j, d), NOREF, M, E(t, j * M));
		if (bi >= 0)
			emu_fold(t->be, sw, EMU_OP_ADD, R, EMU_ORDER_SEQ, emu_at(tmp, d + j),
			         emu_strided(dyc, j, d), NOREF, M, E(t, (d + j) * M));
	}
	cvt(t, sw, Mf, emu_row(tmp, 0), emu_row(tmp, 0), nb * d, 0);
	map(t, sw, EMU_OP_ADD, Mf, GR(t, wi, wl), GR(t, wi, wl), emu_row(tmp, 0), d, 0);
	if (bi >= 0)
		map(t, sw, EMU_OP_ADD, Mf, GR(t, bi, wl), GR(t, bi, wl), emu_row(tmp, d), d, d);
	cvt(t, sx, Gf, emu_row(dres, 0), emu_row(dres, 0), M * d, 0);
	map(t, sx, EMU_OP_ADD, Gf, emu_row(dres, 0), emu_row(dres, 0), emu_row(dx, 0), M * d, 0);
}

/* RMSNorm (llama): y = x·rstd·w, rstd = 1/sqrt(mean(x²) + eps); yhat = x·rstd
 * and rstd (compute) saved */
static void rms_fwd(emu_train *t, int layer, int inst, int wi, size_t wl, emu_vec *x, emu_vec *y,
                    emu_vec *yhat, emu_vec *rstd)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *R = F(t, EMU_TR_REDUCE), *A = F(t, EMU_TR_ACT);
	size_t M = t->M, d = t->d;
	emu_vec *w = t->a.g1, *xr = t->a.g3, *st = t->a.g4;
#define NS(name) SITE(layer, inst, K_RMS, name, false)
	emu_ref dR = konst(t, NS("ms"), R, (double)d),
	        eps = konst(t, NS("add_eps"), C, t->c.ln_eps);
	cvt(t, NS("w"), C, emu_row(w, 0), PR(t, wi, wl), d, 0);
	cvt(t, NS("to_compute"), C, emu_row(yhat, 0), emu_row(x, 0), M * d, 0);
	for (size_t m = 0; m < M; m++) {
		size_t o = m * d;
		emu_ref xc = emu_row(yhat, o), s = emu_at(st, 0), r = emu_at(rstd, m);
		map(t, NS("square"), EMU_OP_MUL, C, emu_row(xr, 0), xc, xc, d, o);
		cvt(t, NS("sq_reduce"), R, emu_row(xr, 0), emu_row(xr, 0), d, o);
		emu_fill(t->be, s, 0, 1);
		emu_fold(t->be, NS("sumsq"), EMU_OP_ADD, R, EMU_ORDER_SEQ, s, emu_row(xr, 0), NOREF,
		         d, E(t, o));
		map(t, NS("ms"), EMU_OP_DIV, R, s, s, dR, 1, m);
		cvt(t, NS("ms_c"), C, s, s, 1, m);
		map(t, NS("add_eps"), EMU_OP_ADD, C, s, s, eps, 1, m);
		map(t, NS("rsqrt"), EMU_OP_RSQRT, C, r, s, NOREF, 1, m);
		map(t, NS("norm"), EMU_OP_MUL, C, xc, xc, r, d, o);
		map(t, NS("scale"), EMU_OP_MUL, C, emu_row(y, o), xc, emu_row(w, 0), d, o);
	}
	cvt(t, NS("store"), A, emu_row(y, 0), emu_row(y, 0), M * d, 0);
#undef NS
}

/* dx = rstd·(dy·w − yhat·mean(dy·w·yhat)), added into dres (grad); .grad
 * of w += Σ_m dy·yhat */
static void rms_bwd(emu_train *t, int layer, int inst, int wi, size_t wl, emu_vec *dy,
                    emu_vec *yhat, emu_vec *rstd, emu_vec *dres)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *R = F(t, EMU_TR_REDUCE),
	                 *Gf = F(t, EMU_TR_GRAD);
	size_t M = t->M, d = t->d;
	emu_vec *w = t->a.g1, *dyc = t->a.dA, *dyw = t->a.dB, *tmp = t->a.g3, *st = t->a.g4,
	        *dx = t->a.dC;
#define NB(name) SITE(layer, inst, K_RMS, name, true)
	emu_ref dR = konst(t, NB("dmean"), R, (double)d);
	cvt(t, NB("dy_w"), C, emu_row(w, 0), PR(t, wi, wl), d, 0);
	cvt(t, NB("dy_c"), C, emu_row(dyc, 0), emu_row(dy, 0), M * d, 0);
	for (size_t m = 0; m < M; m++) {
		size_t o = m * d;
		emu_ref a2 = emu_at(st, 1), DW = emu_row(dyw, o), Y = emu_row(yhat, o),
		        X = emu_row(dx, o);
		map(t, NB("dy_w"), EMU_OP_MUL, C, DW, emu_row(dyc, o), emu_row(w, 0), d, o);
		map(t, NB("dyw_y"), EMU_OP_MUL, C, emu_row(tmp, 0), DW, Y, d, o);
		cvt(t, NB("dywy_reduce"), R, emu_row(tmp, 0), emu_row(tmp, 0), d, o);
		emu_fill(t->be, a2, 0, 1);
		emu_fold(t->be, NB("dywy_sum"), EMU_OP_ADD, R, EMU_ORDER_SEQ, a2, emu_row(tmp, 0),
		         NOREF, d, E(t, o));
		map(t, NB("dmean"), EMU_OP_DIV, R, a2, a2, dR, 1, m);
		cvt(t, NB("dproj"), C, a2, a2, 1, m);
		map(t, NB("dproj"), EMU_OP_MUL, C, emu_row(tmp, 0), Y, a2, d, o);
		map(t, NB("dx"), EMU_OP_SUB, C, X, DW, emu_row(tmp, 0), d, o);
		map(t, NB("dx"), EMU_OP_MUL, C, X, X, emu_at(rstd, m), d, o);
	}
	cvt(t, NB("dx_store"), Gf, emu_row(dx, 0), emu_row(dx, 0), M * d, 0);
	norm_bwd_tail(t, NB("dwb"), NB("dx_store"), dyc, yhat, dyw, tmp, dx, wi, -1, wl, dres);
#undef NB
}

/* y = (x − mean)·rstd·w + b (act), yhat (compute) and rstd (compute) saved */
static void ln_fwd(emu_train *t, int layer, int inst, int wi, int bi, size_t wl, emu_vec *x,
                   emu_vec *y, emu_vec *yhat, emu_vec *rstd)
{
	if (t->c.arch == EMU_ARCH_LLAMA) {
		rms_fwd(t, layer, inst, wi, wl, x, y, yhat, rstd);
		return;
	}
	const emu_format *C = F(t, EMU_TR_COMPUTE), *R = F(t, EMU_TR_REDUCE), *A = F(t, EMU_TR_ACT);
	size_t M = t->M, d = t->d;
	emu_vec *w = t->a.g1, *b = t->a.g2, *xr = t->a.g3, *st = t->a.g4;
#define NS(name) SITE(layer, inst, K_LN, name, false)
	emu_ref dR = konst(t, NS("mean"), R, (double)d),
	        eps = konst(t, NS("add_eps"), C, t->c.ln_eps);
	cvt(t, NS("w"), C, emu_row(w, 0), PR(t, wi, wl), d, 0);
	cvt(t, NS("b"), C, emu_row(b, 0), PR(t, bi, wl), d, 0);
	cvt(t, NS("to_compute"), C, emu_row(yhat, 0), emu_row(x, 0), M * d, 0);
	for (size_t m = 0; m < M; m++) {
		size_t o = m * d;
		emu_ref xc = emu_row(yhat, o), s = emu_at(st, 0), mean = emu_at(st, 1),
		        r = emu_at(rstd, m);
		cvt(t, NS("to_reduce"), R, emu_row(xr, 0), xc, d, o);
		emu_fill(t->be, s, 0, 1);
		emu_fold(t->be, NS("sum"), EMU_OP_ADD, R, EMU_ORDER_SEQ, s, emu_row(xr, 0), NOREF,
		         d, E(t, o));
		map(t, NS("mean"), EMU_OP_DIV, R, s, s, dR, 1, m);
		cvt(t, NS("mean_c"), C, mean, s, 1, m);
		map(t, NS("center"), EMU_OP_SUB, C, xc, xc, mean, d, o);
		map(t, NS("square"), EMU_OP_MUL, C, emu_row(xr, 0), xc, xc, d, o);
		cvt(t, NS("sq_reduce"), R, emu_row(xr, 0), emu_row(xr, 0), d, o);
		emu_fill(t->be, s, 0, 1);
		emu_fold(t->be, NS("sumsq"), EMU_OP_ADD, R, EMU_ORDER_SEQ, s, emu_row(xr, 0), NOREF,
		         d, E(t, o));
		map(t, NS("var"), EMU_OP_DIV, R, s, s, dR, 1, m);
		cvt(t, NS("var_c"), C, s, s, 1, m);
		map(t, NS("add_eps"), EMU_OP_ADD, C, s, s, eps, 1, m);
		map(t, NS("rsqrt"), EMU_OP_RSQRT, C, r, s, NOREF, 1, m);
		map(t, NS("norm"), EMU_OP_MUL, C, xc, xc, r, d, o);
		map(t, NS("scale"), EMU_OP_MUL, C, emu_row(y, o), xc, emu_row(w, 0), d, o);
		map(t, NS("shift"), EMU_OP_ADD, C, emu_row(y, o), emu_row(y, o), emu_row(b, 0), d,
		    o);
	}
	cvt(t, NS("store"), A, emu_row(y, 0), emu_row(y, 0), M * d, 0);
#undef NS
}

/* dx = rstd·(dy·w − mean(dy·w) − yhat·mean(dy·w·yhat)), added into dres
 * (grad); .grad of w += Σ_m dy·yhat, of b += Σ_m dy */
static void ln_bwd(emu_train *t, int layer, int inst, int wi, int bi, size_t wl, emu_vec *dy,
                   emu_vec *yhat, emu_vec *rstd, emu_vec *dres)
{
	if (t->c.arch == EMU_ARCH_LLAMA) {
		rms_bwd(t, layer, inst, wi, wl, dy, yhat, rstd, dres);
		return;
	}
	const emu_format *C = F(t, EMU_TR_COMPUTE), *R = F(t, EMU_TR_REDUCE),
	                 *Gf = F(t, EMU_TR_GRAD);
	size_t M = t->M, d = t->d;
	emu_vec *w = t->a.g1, *dyc = t->a.dA, *dyw = t->a.dB, *tmp = t->a.g3, *st = t->a.g4,
	        *dx = t->a.dC;
#define NB(name) SITE(layer, inst, K_LN, name, true)
	emu_ref dR = konst(t, NB("dmean"), R, (double)d);
	cvt(t, NB("dy_w"), C, emu_row(w, 0), PR(t, wi, wl), d, 0);
	cvt(t, NB("dy_c"), C, emu_row(dyc, 0), emu_row(dy, 0), M * d, 0);
	for (size_t m = 0; m < M; m++) {
		size_t o = m * d;
		emu_ref a1 = emu_at(st, 0), a2 = emu_at(st, 1), DW = emu_row(dyw, o),
		        Y = emu_row(yhat, o), X = emu_row(dx, o);
		map(t, NB("dy_w"), EMU_OP_MUL, C, DW, emu_row(dyc, o), emu_row(w, 0), d, o);
		cvt(t, NB("dyw_reduce"), R, emu_row(tmp, 0), DW, d, o);
		emu_fill(t->be, a1, 0, 1);
		emu_fold(t->be, NB("dyw_sum"), EMU_OP_ADD, R, EMU_ORDER_SEQ, a1, emu_row(tmp, 0),
		         NOREF, d, E(t, o));
		map(t, NB("dyw_y"), EMU_OP_MUL, C, emu_row(tmp, 0), DW, Y, d, o);
		cvt(t, NB("dywy_reduce"), R, emu_row(tmp, 0), emu_row(tmp, 0), d, o);
		emu_fill(t->be, a2, 0, 1);
		emu_fold(t->be, NB("dywy_sum"), EMU_OP_ADD, R, EMU_ORDER_SEQ, a2, emu_row(tmp, 0),
		         NOREF, d, E(t, o));
		map(t, NB("dmean"), EMU_OP_DIV, R, a1, a1, dR, 1, m);
		map(t, NB("dmean"), EMU_OP_DIV, R, a2, a2, dR, 1, m);
		cvt(t, NB("dmean"), C, a1, a1, 1, m);
		cvt(t, NB("dproj"), C, a2, a2, 1, m);
		map(t, NB("dx"), EMU_OP_SUB, C, X, DW, a1, d, o);
		map(t, NB("dproj"), EMU_OP_MUL, C, emu_row(tmp, 0), Y, a2, d, o);
		map(t, NB("dx"), EMU_OP_SUB, C, X, X, emu_row(tmp, 0), d, o);
		map(t, NB("dx"), EMU_OP_MUL, C, X, X, emu_at(rstd, m), d, o);
	}
	cvt(t, NB("dx_store"), Gf, emu_row(dx, 0), emu_row(dx, 0), M * d, 0);
	norm_bwd_tail(t, NB("dwb"), NB("dx_store"), dyc, yhat, dyw, tmp, dx, wi, bi, wl, dres);
#undef NB
}

/* ---- causal attention, naive: per batch row and head ---- */

/* q, k, v in qkv [M, 3d] (gemm values); att [B,H,T,T] (act) saved; y [M,d] gemm */
static void attn_fwd(emu_train *t, int layer, emu_vec *qkv, emu_vec *att, emu_vec *y)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *R = F(t, EMU_TR_REDUCE),
	                 *Gm = F(t, EMU_TR_GEMM), *A = F(t, EMU_TR_ACT), *Ac = F(t, EMU_TR_ACCUM);
	size_t T = t->T, H = t->H, hs = t->hs, d = t->d, d3 = 3 * d;
	emu_vec *sc = t->a.g3, *st = t->a.g4, *ag = t->a.dC;
#define AS(name) SITE(layer, I_ATTN, K_ATTN, name, false)
	emu_ref scale = konst(t, AS("scale"), C, 1.0 / sqrt((double)hs));
	emu_fill(t->be, emu_row(att, 0), 0, t->B * H * T * T);
	emu_fill(t->be, emu_row(y, 0), 0, t->M * d);
	for (size_t b = 0; b < t->B; b++)
		for (size_t h = 0; h < H; h++) {
			size_t ab = (b * H + h) * T * T, qo = b * T * d3 + h * hs, ko = qo + d,
			       vo = qo + 2 * d;
			for (size_t i = 0; i < T; i++) {
				size_t n = i + 1, ro = ab + i * T;
				emu_ref S = emu_row(sc, 0), s = emu_at(st, 0), mx = emu_at(st, 1);
				emu_fill(t->be, S, 0, n);
				for (size_t j = 0; j < n; j++)
					emu_fold(t->be, AS("qk"), EMU_OP_FMA, Ac, EMU_ORDER_SEQ,
					         emu_at(sc, j), emu_row(qkv, qo + i * d3),
					         emu_row(qkv, ko + j * d3), hs,
					         E(t, (ro + j) * hs));
				cvt(t, AS("qk_store"), Gm, S, S, n, ro);
				cvt(t, AS("to_compute"), C, S, S, n, ro);
				map(t, AS("scale"), EMU_OP_MUL, C, S, S, scale, n, ro);
				emu_copy(t->be, mx, S, 1);
				emu_fold(t->be, AS("max"), EMU_OP_MAX, C, EMU_ORDER_SEQ, mx,
				         emu_row(sc, 1), NOREF, n - 1, E(t, ro + 1));
				map(t, AS("sub"), EMU_OP_SUB, C, S, S, mx, n, ro);
				map(t, AS("exp"), EMU_OP_EXP, C, S, S, NOREF, n, ro);
				cvt(t, AS("to_reduce"), R, emu_row(ag, 0), S, n, ro);
				emu_fill(t->be, s, 0, 1);
				emu_fold(t->be, AS("sum"), EMU_OP_ADD, R, EMU_ORDER_SEQ, s,
				         emu_row(ag, 0), NOREF, n, E(t, ro));
				cvt(t, AS("sum_c"), C, s, s, 1, ro);
				map(t, AS("div"), EMU_OP_DIV, C, S, S, s, n, ro);
				cvt(t, AS("store"), A, emu_row(att, ro), S, n, ro);
			}
			/* y[i, :] = Σ_{j ≤ i} att[i, j]·v[j, :] */
			for (size_t i = 0; i < T; i++) {
				size_t ro = ab + i * T;
				cvt(t, AS("cast_att"), Gm, emu_row(ag, 0), emu_row(att, ro), i + 1,
				    ro);
				for (size_t c = 0; c < hs; c++)
					emu_fold(t->be, AS("pv"), EMU_OP_FMA, Ac, EMU_ORDER_SEQ,
					         emu_at(y, (b * T + i) * d + h * hs + c),
					         emu_row(ag, 0), emu_strided(qkv, vo + c, d3),
					         i + 1, E(t, (((b * H + h) * T + i) * hs + c) * T));
			}
		}
	cvt(t, AS("pv_store"), Gm, emu_row(y, 0), emu_row(y, 0), t->M * d, 0);
#undef AS
}

/* dy [M,d] (grad) -> dqkv [M,3d] (gemm) */
static void attn_bwd(emu_train *t, int layer, emu_vec *qkv, emu_vec *att, emu_vec *dy,
                     emu_vec *dqkv)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *R = F(t, EMU_TR_REDUCE),
	                 *Gm = F(t, EMU_TR_GEMM), *Ac = F(t, EMU_TR_ACCUM);
	size_t T = t->T, H = t->H, hs = t->hs, d = t->d, d3 = 3 * d, TT = T * T;
	emu_vec *dyg = t->a.dA, *ag = t->a.ddot, *da = t->a.g3, *pa = t->a.g4, *tmp = t->a.g2;
#define AB(name) SITE(layer, I_ATTN, K_ATTN, name, true)
	emu_ref scale = konst(t, AB("dscale"), C, 1.0 / sqrt((double)hs));
	cvt(t, AB("cast_dy"), Gm, emu_row(dyg, 0), emu_row(dy, 0), t->M * d, 0);
	emu_fill(t->be, emu_row(dqkv, 0), 0, t->M * d3);
	for (size_t b = 0; b < t->B; b++)
		for (size_t h = 0; h < H; h++) {
			size_t ab = (b * H + h) * TT, qo = b * T * d3 + h * hs, ko = qo + d,
			       vo = qo + 2 * d, yo = b * T * d + h * hs;
			/* att as the forward's GEMM read it (gemm) and as computed (compute) */
			cvt(t, AB("cast_ds"), Gm, emu_row(ag, 0), emu_row(att, ab), TT, ab);
			cvt(t, AB("att_c"), C, emu_row(pa, 0), emu_row(att, ab), TT, ab);
			/* datt[i, j] = Σ_c dy[i, c]·v[j, c], j ≤ i */
			emu_fill(t->be, emu_row(da, 0), 0, TT);
			for (size_t i = 0; i < T; i++)
				for (size_t j = 0; j <= i; j++)
					emu_fold(t->be, AB("datt"), EMU_OP_FMA, Ac, EMU_ORDER_SEQ,
					         emu_at(da, i * T + j), emu_row(dyg, yo + i * d),
					         emu_row(qkv, vo + j * d3), hs,
					         E(t, (ab + i * T + j) * hs));
			cvt(t, AB("datt_store"), Gm, emu_row(da, 0), emu_row(da, 0), TT, ab);
			cvt(t, AB("datt_c"), C, emu_row(da, 0), emu_row(da, 0), TT, ab);
			/* dv[j, c] = Σ_{i ≥ j} att[i, j]·dy[i, c] */
			for (size_t j = 0; j < T; j++)
				for (size_t c = 0; c < hs; c++)
					emu_fold(t->be, AB("dv"), EMU_OP_FMA, Ac, EMU_ORDER_SEQ,
					         emu_at(dqkv, vo + j * d3 + c),
					         emu_strided(ag, j * T + j, T),
					         emu_strided(dyg, yo + j * d + c, d), T - j,
					         E(t, (((b * H + h) * T + j) * hs + c) * T));
			/* ds = att·(datt − Σ_j att·datt)·scale */
			for (size_t i = 0; i < T; i++) {
				size_t n = i + 1, ro = i * T;
				emu_ref s = emu_at(tmp, T);
				map(t, AB("rowdot"), EMU_OP_MUL, C, emu_row(tmp, 0),
				    emu_row(pa, ro), emu_row(da, ro), n, ab + ro);
				cvt(t, AB("rowdot_reduce"), R, emu_row(tmp, 0), emu_row(tmp, 0), n,
				    ab + ro);
				emu_fill(t->be, s, 0, 1);
				emu_fold(t->be, AB("rowdot_sum"), EMU_OP_ADD, R, EMU_ORDER_SEQ, s,
				         emu_row(tmp, 0), NOREF, n, E(t, ab + ro));
				cvt(t, AB("rowdot_c"), C, s, s, 1, ab + ro);
				map(t, AB("dsub"), EMU_OP_SUB, C, emu_row(da, ro), emu_row(da, ro),
				    s, n, ab + ro);
				map(t, AB("dmul"), EMU_OP_MUL, C, emu_row(da, ro), emu_row(da, ro),
				    emu_row(pa, ro), n, ab + ro);
				map(t, AB("dscale"), EMU_OP_MUL, C, emu_row(da, ro),
				    emu_row(da, ro), scale, n, ab + ro);
			}
			cvt(t, AB("cast_ds"), Gm, emu_row(da, 0), emu_row(da, 0), TT, ab);
			/* dq[i, c] = Σ_{j ≤ i} ds[i, j]·k[j, c]; dk[j, c] = Σ_{i ≥ j} ds[i, j]·q[i,
			 * c] */
			for (size_t i = 0; i < T; i++)
				for (size_t c = 0; c < hs; c++) {
					emu_fold(t->be, AB("dqk"), EMU_OP_FMA, Ac, EMU_ORDER_SEQ,
					         emu_at(dqkv, qo + i * d3 + c), emu_row(da, i * T),
					         emu_strided(qkv, ko + c, d3), i + 1,
					         E(t, (((b * H + h) * T + i) * hs + c) * T));
					emu_fold(t->be, AB("dqk"), EMU_OP_FMA, Ac, EMU_ORDER_SEQ,
					         emu_at(dqkv, ko + i * d3 + c),
					         emu_strided(da, i * T + i, T),
					         emu_strided(qkv, qo + i * d3 + c, d3), T - i,
					         E(t, ((t->B * H + b * H + h) * T + i) * hs * T +
					                  c * T));
				}
		}
	cvt(t, AB("dv_store"), Gm, emu_row(dqkv, 0), emu_row(dqkv, 0), t->M * d3, 0);
#undef AB
}

/* ---- GELU, tanh form: gelu(x) = x·σ(2u), u = √(2/π)(x + 0.044715x³) ---- */

static const double GELU_K = 0.044715, GELU_2C = 1.5957691216057308; /* 2·√(2/π) */

static void gelu_fwd(emu_train *t, int layer, emu_vec *x, emu_vec *s, emu_vec *y, size_t n)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *A = F(t, EMU_TR_ACT);
	emu_vec *xc = t->a.dC, *u = t->a.dB;
#define GS(name) SITE(layer, I_GELU, K_GELU, name, false)
	emu_ref k = konst(t, GS("inner"), C, GELU_K), c = konst(t, GS("arg"), C, GELU_2C),
	        one = konst(t, GS("den"), C, 1), zero = konst(t, GS("num_min"), C, 0);
	emu_ref X = emu_row(xc, 0), U = emu_row(u, 0), Sg = emu_row(s, 0);
	cvt(t, GS("to_compute"), C, X, emu_row(x, 0), n, 0);
	map(t, GS("cube"), EMU_OP_MUL, C, U, X, X, n, 0);
	map(t, GS("cube"), EMU_OP_MUL, C, U, U, X, n, 0);
	map(t, GS("inner"), EMU_OP_MUL, C, U, U, k, n, 0);
	map(t, GS("inner"), EMU_OP_ADD, C, U, X, U, n, 0);
	map(t, GS("arg"), EMU_OP_MUL, C, U, U, c, n, 0); /* v = 2u */
	/* σ(v) = exp(min(0, v)) / (1 + exp(−|v|)): neither exp can overflow */
	map(t, GS("neg"), EMU_OP_NEG, C, Sg, U, NOREF, n, 0);
	map(t, GS("min"), EMU_OP_MIN, C, Sg, U, Sg, n, 0);
	map(t, GS("exp"), EMU_OP_EXP, C, Sg, Sg, NOREF, n, 0);
	map(t, GS("den"), EMU_OP_ADD, C, Sg, one, Sg, n, 0);
	map(t, GS("num_min"), EMU_OP_MIN, C, U, U, zero, n, 0);
	map(t, GS("num_exp"), EMU_OP_EXP, C, U, U, NOREF, n, 0);
	map(t, GS("sig"), EMU_OP_DIV, C, Sg, U, Sg, n, 0);
	map(t, GS("mul"), EMU_OP_MUL, C, emu_row(y, 0), X, Sg, n, 0);
	cvt(t, GS("store"), A, emu_row(y, 0), emu_row(y, 0), n, 0);
#undef GS
}

/* dx = dy·(σ + x·σ(1 − σ)·2√(2/π)(1 + 3·0.044715x²)), stored in grad */
static void gelu_bwd(emu_train *t, int layer, emu_vec *x, emu_vec *s, emu_vec *dy, emu_vec *dx,
                     size_t n)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *Gf = F(t, EMU_TR_GRAD);
	emu_vec *xc = t->a.dC, *p = t->a.dB;
#define GB(name) SITE(layer, I_GELU, K_GELU, name, true)
	emu_ref one = konst(t, GB("one_minus"), C, 1), k3 = konst(t, GB("poly"), C, 3 * GELU_K),
	        c = konst(t, GB("poly_c"), C, GELU_2C);
	emu_ref X = emu_row(xc, 0), P = emu_row(p, 0), Sg = emu_row(s, 0), D = emu_row(dx, 0);
	cvt(t, GB("dy_c"), C, D, emu_row(dy, 0), n, 0);
	cvt(t, GB("dy_c"), C, X, emu_row(x, 0), n, 0);
	map(t, GB("x2"), EMU_OP_MUL, C, P, X, X, n, 0);
	map(t, GB("poly"), EMU_OP_MUL, C, P, P, k3, n, 0);
	map(t, GB("poly1"), EMU_OP_ADD, C, P, one, P, n, 0);
	map(t, GB("poly_c"), EMU_OP_MUL, C, P, P, c, n, 0);
	map(t, GB("chain_x"), EMU_OP_MUL, C, P, P, X, n, 0);
	map(t, GB("one_minus"), EMU_OP_SUB, C, X, one, Sg, n, 0);
	map(t, GB("sig_d"), EMU_OP_MUL, C, X, Sg, X, n, 0);
	map(t, GB("chain"), EMU_OP_MUL, C, P, P, X, n, 0);
	map(t, GB("slope"), EMU_OP_ADD, C, P, Sg, P, n, 0);
	map(t, GB("dx"), EMU_OP_MUL, C, D, D, P, n, 0);
	cvt(t, GB("dx_store"), Gf, D, D, n, 0);
#undef GB
}

/* ---- SwiGLU (llama): y = silu(g)·u, fc's row m = [g (ffn) | u (ffn)] ----
 * silu(g) = g·σ(g), σ as GELU's: exp(min(0, g)) / (1 + exp(−|g|)); σ saved */

static void swiglu_fwd(emu_train *t, int layer, emu_vec *x, emu_vec *s, emu_vec *y)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *A = F(t, EMU_TR_ACT);
	size_t M = t->M, h = t->ffn, n = M * h;
	emu_vec *gv = t->a.sw1, *uv = t->a.sw2;
#define WS(name) SITE(layer, I_GELU, K_SWIGLU, name, false)
	emu_ref one = konst(t, WS("den"), C, 1), zero = konst(t, WS("num_min"), C, 0);
	emu_ref G = emu_row(gv, 0), U = emu_row(uv, 0), Sg = emu_row(s, 0), Y = emu_row(y, 0);
	for (size_t m = 0; m < M; m++) {
		cvt(t, WS("to_compute"), C, emu_row(gv, m * h), emu_row(x, 2 * m * h), h,
		    2 * m * h);
		cvt(t, WS("to_compute"), C, emu_row(uv, m * h), emu_row(x, 2 * m * h + h), h,
		    2 * m * h + h);
	}
	map(t, WS("neg"), EMU_OP_NEG, C, Sg, G, NOREF, n, 0);
	map(t, WS("min"), EMU_OP_MIN, C, Sg, G, Sg, n, 0);
	map(t, WS("exp"), EMU_OP_EXP, C, Sg, Sg, NOREF, n, 0);
	map(t, WS("den"), EMU_OP_ADD, C, Sg, one, Sg, n, 0);
	map(t, WS("num_min"), EMU_OP_MIN, C, Y, G, zero, n, 0);
	map(t, WS("num_exp"), EMU_OP_EXP, C, Y, Y, NOREF, n, 0);
	map(t, WS("sig"), EMU_OP_DIV, C, Sg, Y, Sg, n, 0);
	map(t, WS("silu"), EMU_OP_MUL, C, Y, G, Sg, n, 0);
	map(t, WS("mul"), EMU_OP_MUL, C, Y, Y, U, n, 0);
	cvt(t, WS("store"), A, Y, Y, n, 0);
#undef WS
}

/* dg = dy·u·σ(1 + g(1 − σ)), du = dy·silu(g) = dy·g·σ, into dx's rows
 * [dg | du] (grad) */
static void swiglu_bwd(emu_train *t, int layer, emu_vec *x, emu_vec *s, emu_vec *dy, emu_vec *dx)
{
	const emu_format *C = F(t, EMU_TR_COMPUTE), *Gf = F(t, EMU_TR_GRAD);
	size_t M = t->M, h = t->ffn, n = M * h;
	emu_vec *gv = t->a.sw1, *uv = t->a.sw2, *dv = t->a.sw3, *pv = t->a.sw4;
#define WB(name) SITE(layer, I_GELU, K_SWIGLU, name, true)
	emu_ref one = konst(t, WB("one_minus"), C, 1);
	emu_ref G = emu_row(gv, 0), U = emu_row(uv, 0), D = emu_row(dv, 0), P = emu_row(pv, 0),
	        Sg = emu_row(s, 0);
	cvt(t, WB("dy_c"), C, D, emu_row(dy, 0), n, 0);
	for (size_t m = 0; m < M; m++) {
		cvt(t, WB("x_c"), C, emu_row(gv, m * h), emu_row(x, 2 * m * h), h, 2 * m * h);
		cvt(t, WB("x_c"), C, emu_row(uv, m * h), emu_row(x, 2 * m * h + h), h,
		    2 * m * h + h);
	}
	map(t, WB("one_minus"), EMU_OP_SUB, C, P, one, Sg, n, 0);
	map(t, WB("g_om"), EMU_OP_MUL, C, P, G, P, n, 0);
	map(t, WB("plus1"), EMU_OP_ADD, C, P, one, P, n, 0);
	map(t, WB("dsilu"), EMU_OP_MUL, C, P, Sg, P, n, 0);
	map(t, WB("dgate_u"), EMU_OP_MUL, C, P, P, U, n, 0);
	map(t, WB("dgate"), EMU_OP_MUL, C, P, D, P, n, 0);
	map(t, WB("dup"), EMU_OP_MUL, C, U, G, Sg, n, 0); /* silu(g) again: the same bits */
	map(t, WB("dup"), EMU_OP_MUL, C, U, D, U, n, 0);
	for (size_t m = 0; m < M; m++) {
		cvt(t, WB("dx_store"), Gf, emu_row(dx, 2 * m * h), emu_row(pv, m * h), h,
		    2 * m * h);
		cvt(t, WB("dx_store"), Gf, emu_row(dx, 2 * m * h + h), emu_row(uv, m * h), h,
		    2 * m * h + h);
	}
#undef WB
}

/* ---- residual: out = x + y (act); backward copies the gradient ---- */

static void res_fwd(emu_train *t, int layer, int inst, emu_vec *x, emu_vec *y, emu_vec *out)
{
	const emu_format *A = F(t, EMU_TR_ACT);
	size_t n = t->M * t->d;
	emu_vec *yc = t->a.dC;
	cvt(t, SITE(layer, inst, K_RES, "to_act", false), A, emu_row(yc, 0), emu_row(y, 0), n, 0);
	map(t, SITE(layer, inst, K_RES, "add", false), EMU_OP_ADD, A, emu_row(out, 0),
	    emu_row(x, 0), emu_row(yc, 0), n, 0);
}

/* ---- the forward pass and the loss ---- */

static int alloc_acts(emu_train *t)
{
	acts *a = &t->a;
	size_t L = t->L, M = t->M, d = t->d, V = t->V, BHTT = t->B * t->H * t->T * t->T;
	memset(a, 0, sizeof *a);
	emu_vec ***lists[] = {&a->ln1,    &a->ln1y, &a->ln1r,   &a->qkv,  &a->att,  &a->atty,
	                      &a->proj,   &a->res1, &a->ln2,    &a->ln2y, &a->ln2r, &a->fc,
	                      &a->gelu_s, &a->gelu, &a->fcproj, &a->res2};
	size_t F1 = M * t->fcw, F2 = M * t->ffn;
	size_t sizes[] = {M * d, M * d, M, M * 3 * d, BHTT, M * d, M * d, M * d,
	                  M * d, M * d, M, F1,        F2,   F2,    M * d, M * d};
	for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) {
		*lists[k] = calloc(L, sizeof(emu_vec *));
		if (!*lists[k])
			return -1;
		for (size_t l = 0; l < L; l++)
			if (!((*lists[k])[l] = vnew(t, sizes[k])))
				return -1;
	}
	size_t big = F1;
	if (big < M * V)
		big = M * V;
	if (big < BHTT)
		big = BHTT;
	size_t w = t->fcw * d > V * d ? t->fcw * d : V * d;
	if (w < big)
		w = big;
	a->x0 = vnew(t, M * d), a->lnf = vnew(t, M * d), a->lnfy = vnew(t, M * d),
	a->lnfr = vnew(t, M), a->logits = vnew(t, M * V), a->z = vnew(t, M * V),
	a->ez = vnew(t, M * V), a->sum = vnew(t, M), a->losses = vnew(t, M);
	a->dres = vnew(t, M * d), a->dA = vnew(t, big), a->dB = vnew(t, w), a->dC = vnew(t, big),
	a->ddot = vnew(t, w), a->g1 = vnew(t, w), a->g2 = vnew(t, w), a->g3 = vnew(t, w),
	a->g4 = vnew(t, w + 2 * t->T + 8), a->consts = vnew(t, 4096);
	if (t->c.arch == EMU_ARCH_LLAMA) {
		a->sw1 = vnew(t, F2), a->sw2 = vnew(t, F2), a->sw3 = vnew(t, F2),
		a->sw4 = vnew(t, F2);
		if (!a->sw1 || !a->sw2 || !a->sw3 || !a->sw4)
			return -1;
	}
	size_t big_p = 0;
	for (int i = 0; i < NP; i++)
		if (pcount(t, i) > big_p)
			big_p = pcount(t, i);
	a->o1 = vnew(t, big_p), a->o2 = vnew(t, big_p), a->o3 = vnew(t, big_p),
	a->o4 = vnew(t, big_p + 2);
	if (!a->o1 || !a->o2 || !a->o3 || !a->o4)
		return -1;
	if (!a->x0 || !a->lnf || !a->lnfy || !a->lnfr || !a->logits || !a->z || !a->ez || !a->sum ||
	    !a->losses || !a->dres || !a->dA || !a->dB || !a->dC || !a->ddot || !a->g1 || !a->g2 ||
	    !a->g3 || !a->g4 || !a->consts)
		return -1;
	return 0;
}

static void free_acts(emu_train *t)
{
	acts *a = &t->a;
	emu_vec **lists[] = {a->ln1,    a->ln1y, a->ln1r,   a->qkv,  a->att,  a->atty,
	                     a->proj,   a->res1, a->ln2,    a->ln2y, a->ln2r, a->fc,
	                     a->gelu_s, a->gelu, a->fcproj, a->res2};
	for (size_t k = 0; k < sizeof lists / sizeof *lists; k++)
		free(lists[k]);
	memset(a, 0, sizeof *a);
}

/* xg/wg scratch of the linear layers: the backward needs the forward's
 * casts; they are recomputed there (the same conversions, exact again) */
/* the faults forward() injects into its batch */
enum { FAULT_SPIKE = 1, FAULT_FLAT = 2 };

/* --flat: each position's row of x (M rows of d) pulled towards its mean
 * until its variance over the features is var (binary64), then stored */
static void flatten(emu_train *t, emu_vec *x, double var)
{
	size_t M = t->M, d = t->d;
	for (size_t m = 0; m < M; m++) {
		double mean = 0, ss = 0;
		for (size_t j = 0; j < d; j++)
			mean += emu_vget(t->be, x, m * d + j);
		mean /= (double)d;
		for (size_t j = 0; j < d; j++) {
			double c = emu_vget(t->be, x, m * d + j) - mean;
			ss += c * c;
		}
		double f = ss > 0 ? sqrt(var / (ss / (double)d)) : 0;
		for (size_t j = 0; j < d; j++) {
			double v = emu_vget(t->be, x, m * d + j);
			emu_fill(t->be, emu_at(x, m * d + j), mean + (v - mean) * f, 1);
		}
	}
	cvt(t, SITE(-1, G_EMB, K_EMB, "flat", false), F(t, EMU_TR_ACT), emu_row(x, 0),
	    emu_row(x, 0), M * d, 0);
}

static double forward(emu_train *t, unsigned faults)
{
	acts *a = &t->a;
	size_t M = t->M, d = t->d, V = t->V, L = t->L, h = t->ffn, fw = t->fcw;
	const emu_format *Ac = F(t, EMU_TR_ACT), *Lf = F(t, EMU_TR_LOSS), *Gm = F(t, EMU_TR_GEMM);
	emu_vec *xg = a->ddot, *wg = a->g1;
	char blk[32];
	/* embeddings */
	{
		emu_vec *e1 = a->dC, *e2 = a->dB;
		for (size_t m = 0; m < M; m++) {
			size_t tok = (size_t)t->inp[m], pos = m % t->T;
			emu_copy(t->be, emu_row(e1, m * d),
			         emu_row(t->tP ? t->tP : &t->Pv, t->off[P_WTE] + tok * d), d);
			emu_copy(t->be, emu_row(e2, m * d),
			         emu_row(t->tP ? t->tP : &t->Pv, t->off[P_WPE] + pos * d), d);
		}
		cvt(t, SITE(-1, G_EMB, K_EMB, "wte", false), Ac, emu_row(e1, 0), emu_row(e1, 0),
		    M * d, 0);
		cvt(t, SITE(-1, G_EMB, K_EMB, "wpe", false), Ac, emu_row(e2, 0), emu_row(e2, 0),
		    M * d, 0);
		map(t, SITE(-1, G_EMB, K_EMB, "add", false), EMU_OP_ADD, Ac, emu_row(a->x0, 0),
		    emu_row(e1, 0), emu_row(e2, 0), M * d, 0);
		if (faults & FAULT_FLAT)
			flatten(t, a->x0, t->c.flat_var);
		watch(t, 0, 0, "emb.out", a->x0, 0, M * d);
	}
	emu_vec *x = a->x0;
	for (size_t l = 0; l < L; l++) {
		int li = (int)l;
		snprintf(blk, sizeof blk, "layer%zu.", l);
		ln_fwd(t, li, I_LN1, P_LN1W, P_LN1B, l, x, a->ln1[l], a->ln1y[l], a->ln1r[l]);
		watchn(t, l + 1, 0, blk, "ln1.out", a->ln1[l], M * d);
		linear_fwd(t, li, I_QKV, P_QKVW, BIAS(t, P_QKVB), l, a->ln1[l], d, 3 * d, a->qkv[l],
		           xg, wg);
		watchn(t, l + 1, 0, blk, "qkv.out", a->qkv[l], M * 3 * d);
		attn_fwd(t, li, a->qkv[l], a->att[l], a->atty[l]);
		watchn(t, l + 1, 0, blk, "attn.att", a->att[l], t->B * t->H * t->T * t->T);
		watchn(t, l + 1, 0, blk, "attn.out", a->atty[l], M * d);
		linear_fwd(t, li, I_PROJ, P_PROJW, BIAS(t, P_PROJB), l, a->atty[l], d, d,
		           a->proj[l], xg, wg);
		watchn(t, l + 1, 0, blk, "proj.out", a->proj[l], M * d);
		res_fwd(t, li, I_RES1, x, a->proj[l], a->res1[l]);
		watchn(t, l + 1, 0, blk, "res1.out", a->res1[l], M * d);
		ln_fwd(t, li, I_LN2, P_LN2W, P_LN2B, l, a->res1[l], a->ln2[l], a->ln2y[l],
		       a->ln2r[l]);
		watchn(t, l + 1, 0, blk, "ln2.out", a->ln2[l], M * d);
		linear_fwd(t, li, I_FC, P_FCW, BIAS(t, P_FCB), l, a->ln2[l], d, fw, a->fc[l], xg,
		           wg);
		watchn(t, l + 1, 0, blk, "fc.out", a->fc[l], M * fw);
		if (t->c.arch == EMU_ARCH_LLAMA)
			swiglu_fwd(t, li, a->fc[l], a->gelu_s[l], a->gelu[l]);
		else
			gelu_fwd(t, li, a->fc[l], a->gelu_s[l], a->gelu[l], M * h);
		watchn(t, l + 1, 0, blk, "gelu.out", a->gelu[l], M * h);
		linear_fwd(t, li, I_FCPROJ, P_FCPROJW, BIAS(t, P_FCPROJB), l, a->gelu[l], h, d,
		           a->fcproj[l], xg, wg);
		watchn(t, l + 1, 0, blk, "fcproj.out", a->fcproj[l], M * d);
		res_fwd(t, li, I_RES2, a->res1[l], a->fcproj[l], a->res2[l]);
		watchn(t, l + 1, 0, blk, "res2.out", a->res2[l], M * d);
		x = a->res2[l];
	}
	ln_fwd(t, -1, G_LNF, P_LNFW, P_LNFB, 0, x, a->lnf, a->lnfy, a->lnfr);
	watch(t, L + 1, 0, "lnf.out", a->lnf, 0, M * d);
	/* logits = lnf · wteᵀ (tied) */
	linear_fwd(t, -1, G_LOGITS, HEADW(t), -1, 0, a->lnf, d, V, a->logits, xg, wg);
	watch(t, L + 1, 0, "logits.out", a->logits, 0, M * V);
	/* softmax cross-entropy in the loss format, mean over the positions */
#define LS(name) SITE(-1, G_LOSS, K_LOSS, name, false)
	emu_ref Z = emu_row(a->z, 0);
	cvt(t, LS("to_loss"), Lf, Z, emu_row(a->logits, 0), M * V, 0);
	if (faults & FAULT_SPIKE) {
		emu_ref f = konst(t, LS("spike"), Lf, t->c.spike_factor);
		map(t, LS("spike"), EMU_OP_MUL, Lf, Z, Z, f, M * V, 0);
	}
	emu_vec *nll = a->dC;
	for (size_t m = 0; m < M; m++) {
		size_t o = m * V;
		emu_ref mx = emu_at(a->g4, 0), s = emu_at(a->sum, m);
		emu_copy(t->be, mx, emu_row(a->z, o), 1);
		emu_fold(t->be, LS("max"), EMU_OP_MAX, Lf, EMU_ORDER_SEQ, mx, emu_row(a->z, o + 1),
		         NOREF, V - 1, E(t, o + 1));
		map(t, LS("sub"), EMU_OP_SUB, Lf, emu_row(a->z, o), emu_row(a->z, o), mx, V, o);
		map(t, LS("exp"), EMU_OP_EXP, Lf, emu_row(a->ez, o), emu_row(a->z, o), NOREF, V, o);
		emu_fill(t->be, s, 0, 1);
		emu_fold(t->be, LS("sum"), EMU_OP_ADD, Lf, EMU_ORDER_SEQ, s, emu_row(a->ez, o),
		         NOREF, V, E(t, o));
		map(t, LS("log"), EMU_OP_LOG, Lf, emu_at(nll, m), s, NOREF, 1, m);
		map(t, LS("nll"), EMU_OP_SUB, Lf, emu_at(nll, m), emu_at(nll, m),
		    emu_at(a->z, o + (size_t)t->tgt[m]), 1, m);
	}
	emu_copy(t->be, emu_row(a->losses, 0), emu_row(nll, 0), M);
	emu_ref loss = emu_at(a->g4, 1);
	emu_fill(t->be, loss, 0, 1);
	emu_fold(t->be, LS("mean_sum"), EMU_OP_ADD, Lf, EMU_ORDER_SEQ, loss, emu_row(nll, 0), NOREF,
	         M, E(t, 0));
	map(t, LS("mean"), EMU_OP_DIV, Lf, loss, loss, konst(t, LS("mean"), Lf, (double)M), 1, 0);
	watch(t, L + 1, 0, "loss", a->g4, 1, 1);
	(void)Gm;
#undef LS
	return emu_vget(t->be, a->g4, 1);
}

/* The backward pass of the batch forward() ran: .grad += the gradients of
 * scale·loss/div (scale: the loss scale; div: the micro-batches when each
 * micro-batch's loss is divided by their number, else 1). */
static void backward(emu_train *t, double scale, size_t div)
{
	acts *a = &t->a;
	size_t M = t->M, d = t->d, V = t->V, L = t->L, h = t->ffn, fw = t->fcw;
	const emu_format *Lf = F(t, EMU_TR_LOSS), *Gf = F(t, EMU_TR_GRAD),
	                 *Mf = F(t, EMU_TR_MASTER);
	emu_vec *xg = a->ddot, *wg = a->g1;
	char blk[32];
#define LB(name) SITE(-1, G_LOSS, K_LOSS, name, true)
	/* dlogits = (softmax − onehot)·(dscale / M) */
	emu_ref g = konst(t, LB("dscale"), Lf, scale);
	if (t->c.loss_weight != 1)
		map(t, LB("dweight"), EMU_OP_MUL, Lf, g, g,
		    konst(t, LB("dweight"), Lf, t->c.loss_weight), 1, 0);
	if (div > 1)
		map(t, LB("dmicro"), EMU_OP_DIV, Lf, g, g, konst(t, LB("dmicro"), Lf, (double)div),
		    1, 0);
	map(t, LB("dmean"), EMU_OP_DIV, Lf, g, g, konst(t, LB("dmean"), Lf, (double)M), 1, 0);
	emu_ref one = konst(t, LB("onehot"), Lf, 1);
	emu_vec *dl = a->dC;
	for (size_t m = 0; m < M; m++) {
		size_t o = m * V;
		map(t, LB("prob"), EMU_OP_DIV, Lf, emu_row(dl, o), emu_row(a->ez, o),
		    emu_at(a->sum, m), V, o);
		map(t, LB("onehot"), EMU_OP_SUB, Lf, emu_at(dl, o + (size_t)t->tgt[m]),
		    emu_at(dl, o + (size_t)t->tgt[m]), one, 1, m);
	}
	map(t, LB("dlogits"), EMU_OP_MUL, Lf, emu_row(dl, 0), emu_row(dl, 0), g, M * V, 0);
	cvt(t, LB("dlogits_store"), Gf, emu_row(dl, 0), emu_row(dl, 0), M * V, 0);
	watch(t, L + 1, 1, "loss.dlogits", dl, 0, M * V);
	emu_vec *dlog = a->g2; /* the GEMM's backward reads dA/dB/dC: keep dlogits apart */
	emu_copy(t->be, emu_row(dlog, 0), emu_row(dl, 0), M * V);
#undef LB
	/* logits: recompute the casts, then dgrad into dC and wgrad into wte */
	emu_vec *dx = a->dC, *dres = a->dres;
	const emu_format *Gm = F(t, EMU_TR_GEMM);
	cvt(t, SITE(-1, G_LOGITS, K_LIN, "cast_x", false), Gm, emu_row(xg, 0), emu_row(a->lnf, 0),
	    M * d, 0);
	cvt(t, SITE(-1, G_LOGITS, K_LIN, "cast_w", false), Gm, emu_row(wg, 0), PR(t, HEADW(t), 0),
	    V * d, 0);
	linear_bwd(t, -1, G_LOGITS, HEADW(t), -1, 0, dlog, d, V, dx, xg, wg, a->lnf);
	watch(t, L + 1, 1, "logits.dx", dx, 0, M * d);
	/* lnf: its input gradient starts the residual gradient */
	cvt(t, SITE(-1, G_LNF, K_NORM(t), "dx_store", true), Gf, emu_row(dx, 0), emu_row(dx, 0),
	    M * d, 0);
	emu_copy(t->be, emu_row(a->g2, 0), emu_row(dx, 0), M * d);
	emu_fill(t->be, emu_row(dres, 0), 0, M * d);
	ln_bwd(t, -1, G_LNF, P_LNFW, P_LNFB, 0, a->g2, a->lnfy, a->lnfr, dres);
	watch(t, L + 1, 1, "lnf.dx", dres, 0, M * d);
	emu_vec *dtmp = a->g2;
	for (size_t li = L; li-- > 0;) {
		int l = (int)li;
		snprintf(blk, sizeof blk, "layer%zu.", li);
		emu_vec *xin = li ? a->res2[li - 1] : a->x0;
		/* fcproj: dgelu = dres·W */
		cvt(t, SITE(l, I_FCPROJ, K_LIN, "cast_x", false), Gm, emu_row(xg, 0),
		    emu_row(a->gelu[li], 0), M * h, 0);
		cvt(t, SITE(l, I_FCPROJ, K_LIN, "cast_w", false), Gm, emu_row(wg, 0),
		    PR(t, P_FCPROJW, li), d * h, 0);
		linear_bwd(t, l, I_FCPROJ, P_FCPROJW, BIAS(t, P_FCPROJB), li, dres, h, d, dtmp, xg,
		           wg, a->gelu[li]);
		watchn(t, li + 1, 1, blk, "fcproj.dx", dtmp, M * h);
		/* gelu (llama: swiglu, its gradient as wide as fc's output) */
		emu_vec *dfc = a->g3;
		if (t->c.arch == EMU_ARCH_LLAMA)
			swiglu_bwd(t, l, a->fc[li], a->gelu_s[li], dtmp, dfc);
		else
			gelu_bwd(t, l, a->fc[li], a->gelu_s[li], dtmp, dfc, M * h);
		emu_copy(t->be, emu_row(dtmp, 0), emu_row(dfc, 0), M * fw);
		watchn(t, li + 1, 1, blk, "gelu.dx", dtmp, M * fw);
		/* fc */
		cvt(t, SITE(l, I_FC, K_LIN, "cast_x", false), Gm, emu_row(xg, 0),
		    emu_row(a->ln2[li], 0), M * d, 0);
		cvt(t, SITE(l, I_FC, K_LIN, "cast_w", false), Gm, emu_row(wg, 0), PR(t, P_FCW, li),
		    fw * d, 0);
		emu_vec *dln = a->g3;
		linear_bwd(t, l, I_FC, P_FCW, BIAS(t, P_FCB), li, dtmp, d, fw, dln, xg, wg,
		           a->ln2[li]);
		watchn(t, li + 1, 1, blk, "fc.dx", dln, M * d);
		/* ln2 into dres */
		cvt(t, SITE(l, I_LN2, K_NORM(t), "dy_c", true), Gf, emu_row(dln, 0),
		    emu_row(dln, 0), M * d, 0);
		emu_copy(t->be, emu_row(dtmp, 0), emu_row(dln, 0), M * d);
		ln_bwd(t, l, I_LN2, P_LN2W, P_LN2B, li, dtmp, a->ln2y[li], a->ln2r[li], dres);
		watchn(t, li + 1, 1, blk, "ln2.dx", dres, M * d);
		/* proj */
		cvt(t, SITE(l, I_PROJ, K_LIN, "cast_x", false), Gm, emu_row(xg, 0),
		    emu_row(a->atty[li], 0), M * d, 0);
		cvt(t, SITE(l, I_PROJ, K_LIN, "cast_w", false), Gm, emu_row(wg, 0),
		    PR(t, P_PROJW, li), d * d, 0);
		linear_bwd(t, l, I_PROJ, P_PROJW, BIAS(t, P_PROJB), li, dres, d, d, dtmp, xg, wg,
		           a->atty[li]);
		watchn(t, li + 1, 1, blk, "proj.dx", dtmp, M * d);
		/* attention: dtmp [M,d] -> dqkv (g3) */
		/* attn_bwd's scratch is dA, ddot, g2, g3, g4: dy and dqkv elsewhere */
		emu_vec *dyat = a->dB, *dq = a->dC;
		emu_copy(t->be, emu_row(dyat, 0), emu_row(dtmp, 0), M * d);
		attn_bwd(t, l, a->qkv[li], a->att[li], dyat, dq);
		watchn(t, li + 1, 1, blk, "attn.dqkv", dq, M * 3 * d);
		/* qkv: linear_bwd's scratch is dA (dy cast), dB (dW), g4 (db) */
		cvt(t, SITE(l, I_QKV, K_LIN, "cast_x", false), Gm, emu_row(xg, 0),
		    emu_row(a->ln1[li], 0), M * d, 0);
		cvt(t, SITE(l, I_QKV, K_LIN, "cast_w", false), Gm, emu_row(wg, 0),
		    PR(t, P_QKVW, li), 3 * d * d, 0);
		emu_copy(t->be, emu_row(a->g2, 0), emu_row(dq, 0), M * 3 * d);
		linear_bwd(t, l, I_QKV, P_QKVW, BIAS(t, P_QKVB), li, a->g2, d, 3 * d, a->g3, xg, wg,
		           a->ln1[li]);
		watchn(t, li + 1, 1, blk, "qkv.dx", a->g3, M * d);
		/* ln1 into dres */
		cvt(t, SITE(l, I_LN1, K_NORM(t), "dy_c", true), Gf, emu_row(a->g3, 0),
		    emu_row(a->g3, 0), M * d, 0);
		emu_copy(t->be, emu_row(dtmp, 0), emu_row(a->g3, 0), M * d);
		ln_bwd(t, l, I_LN1, P_LN1W, P_LN1B, li, dtmp, a->ln1y[li], a->ln1r[li], dres);
		watchn(t, li + 1, 1, blk, "ln1.dx", dres, M * d);
		(void)xin;
	}
	/* embeddings: scatter-add in token order into .grad */
	{
		unsigned s1 = SITE(-1, G_EMB, K_EMB, "dwte_cvt", true),
		         s2 = SITE(-1, G_EMB, K_EMB, "dwte", true),
		         s3 = SITE(-1, G_EMB, K_EMB, "dwpe", true);
		emu_vec *dm = a->dC;
		cvt(t, s1, Mf, emu_row(dm, 0), emu_row(dres, 0), M * d, 0);
		for (size_t m = 0; m < M; m++) {
			size_t tok = (size_t)t->inp[m], pos = m % t->T;
			emu_ref gw = emu_row(t->tG ? t->tG : &t->Gv, t->off[P_WTE] + tok * d),
			        gp = emu_row(t->tG ? t->tG : &t->Gv, t->off[P_WPE] + pos * d);
			map(t, s2, EMU_OP_ADD, Mf, gw, gw, emu_row(dm, m * d), d, m * d);
			map(t, s3, EMU_OP_ADD, Mf, gp, gp, emu_row(dm, m * d), d, m * d);
		}
		watch(t, 0, 1, "emb.dx", dm, 0, M * d);
	}
}

/* ---- a pass on a fresh backend ---- */

static int begin(emu_train *t, emu_be *be, uint64_t salt)
{
	uint64_t seed = emu_draw_key(t->c.seed, salt);
	bool fresh = !t->ext || !t->ready;
	if (t->ext) { /* a kernel run: one backend for the whole run */
		be = t->ext;
		be->env.seed = seed;
	} else {
		emu_env env = EMU_ENV_DEFAULT;
		env.seed = seed;
		emu_be_init(be, t->c.backend, &env);
	}
	t->be = be;
	t->micro = 0;
	t->a.nconst = 0; /* a pass's constants (a kernel run's backend keeps its vectors) */
	if (fresh) {
		/* the arch's table: the same ids name its own kernels */
		emu_steps(be,
		          site_ptrs + (size_t)t->c.arch * (NG + (size_t)TR_MAXL * NI_LAYER) * KMAX,
		          t->nsites);
		t->tP = t->tG = t->tM = t->tV = NULL;
		if (t->c.backend == EMU_BE_TRUTH) { /* the parameters and states as MPFR numbers */
			t->tP = emu_vec_new(be, t->np);
			t->tG = emu_vec_new(be, t->np);
			t->tM = emu_vec_new(be, t->np);
			t->tV = emu_vec_new(be, t->np);
			if (!t->tP || !t->tG || !t->tM || !t->tV)
				return -1;
		}
		if (alloc_acts(t) != 0)
			return -1;
		t->ready = true;
	}
	if (t->tP)
		for (size_t i = 0; i < t->np; i++) {
			emu_fill(be, emu_at(t->tP, i), t->P[i], 1);
			emu_fill(be, emu_at(t->tG, i), 0, 1);
			emu_fill(be, emu_at(t->tM, i), t->Mo[i], 1);
			emu_fill(be, emu_at(t->tV, i), t->Vo[i], 1);
		}
	return 0;
}

static void end(emu_train *t)
{
	if (t->tG && t->be) /* the gradients back as the nearest doubles */
		for (size_t i = 0; i < t->np; i++)
			t->G[i] = emu_vget(t->be, t->tG, i);
	if (t->ext) /* the vectors live as long as the kernel's backend */
		return;
	free_acts(t);
	if (t->be)
		emu_be_free(t->be);
	t->be = NULL;
	t->ready = false;
	t->tP = t->tG = t->tM = t->tV = NULL;
}

static const char *flag_names(unsigned fl, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", fl & EMU_FLAG_OVERFLOW ? "overflow " : "",
	         fl & EMU_FLAG_INVALID ? "invalid " : "",
	         fl & EMU_FLAG_DIVBYZERO ? "divbyzero " : "");
	size_t n = strlen(buf);
	if (n)
		buf[n - 1] = '\0';
	return buf;
}

/* ---- the optimizer: unscale, clip, AdamW (PyTorch's single-tensor order,
 * as emu/kernels/optimizer.c), each on the engine in fp32 (opmath) ---- */

static bool decays(int i)
{
	return i == P_WTE || i == P_WPE || i == P_QKVW || i == P_PROJW || i == P_FCW ||
	       i == P_FCPROJW || i == P_HEAD;
}

static double lr_at(const emu_train_cfg *c, uint64_t s)
{
	if (s <= c->warmup)
		return c->lr * (double)s / (double)c->warmup;
	if (c->steps <= c->warmup)
		return c->lr;
	double r = (double)(s - c->warmup) / (double)(c->steps - c->warmup);
	return c->min_lr + 0.5 * (c->lr - c->min_lr) * (1 + cos(3.141592653589793 * r));
}

/* 0 and the step done, 1 skipped (inf/NaN gradients under a scaler) */
static int optimize(emu_train *t, double scale, double lr, double *gnorm)
{
	const emu_format *C = emu_format_by_name("fp32"), *Mf = F(t, EMU_TR_MASTER),
	                 *Tf = F(t, EMU_TR_STATE);
	acts *a = &t->a;
	emu_vec *Gv = t->tG ? t->tG : &t->Gv, *Pv = t->tP ? t->tP : &t->Pv;
	t->micro = 0;
#define OS(name) SITE(-1, G_OPT, K_OPT, name, false)
	bool found_inf = false;
	if (t->c.pol.scaler) { /* unscale_: found_inf from the scaled gradients */
		for (size_t i = 0; i < t->np && !found_inf; i++)
			found_inf = !isfinite(emu_vget(t->be, Gv, i));
		emu_ref inv = konst(t, OS("unscale"), C, emu_gs_value(emu_gs_fp32(1.0 / scale)));
		for (int i = 0; i < NP; i++) {
			size_t n = pcount(t, i), e = t->off[i];
			if (!n)
				continue;
			emu_ref G = emu_row(Gv, e), X = emu_row(a->o1, 0);
			cvt(t, OS("unscale_c"), C, X, G, n, e);
			map(t, OS("unscale"), EMU_OP_MUL, C, X, X, inv, n, e);
			cvt(t, OS("unscale_store"), Mf, G, X, n, e);
		}
	}
	/* the global norm, fp32, one sequential sum over every tensor in order */
	emu_ref ss = emu_at(a->o4, 0);
	emu_fill(t->be, ss, 0, 1);
	for (int i = 0; i < NP; i++) {
		size_t n = pcount(t, i), e = t->off[i];
		if (!n)
			continue;
		emu_ref X = emu_row(a->o1, 0);
		cvt(t, OS("sq_c"), C, X, emu_row(Gv, e), n, e);
		map(t, OS("sq"), EMU_OP_MUL, C, X, X, X, n, e);
		emu_fold(t->be, OS("sumsq"), EMU_OP_ADD, C, EMU_ORDER_SEQ, ss, X, NOREF, n, e);
	}
	map(t, OS("norm"), EMU_OP_SQRT, C, ss, ss, NOREF, 1, 0);
	*gnorm = emu_vget(t->be, a->o4, 0);
	if (found_inf)
		return 1;
	if (t->c.clip > 0) { /* coef = clip / (norm + 1e-6), applied when below 1 (or NaN) */
		emu_ref coef = emu_at(a->o4, 1);
		map(t, OS("clip_den"), EMU_OP_ADD, C, coef, ss, konst(t, OS("clip_den"), C, 1e-6),
		    1, 0);
		map(t, OS("clip_coef"), EMU_OP_DIV, C, coef,
		    konst(t, OS("clip_coef"), C, t->c.clip), coef, 1, 0);
		if (!(emu_vget(t->be, a->o4, 1) >= 1))
			for (int i = 0; i < NP; i++) {
				size_t n = pcount(t, i), e = t->off[i];
				if (!n)
					continue;
				emu_ref X = emu_row(a->o1, 0);
				cvt(t, OS("clip"), C, X, emu_row(Gv, e), n, e);
				map(t, OS("clip"), EMU_OP_MUL, C, X, X, coef, n, e);
				cvt(t, OS("clip_store"), Mf, emu_row(Gv, e), X, n, e);
			}
	}
	/* AdamW, torch/optim/adamw.py _single_tensor_adamw */
	uint64_t s = ++t->adam_t;
	double bc1 = 1 - pow(t->c.beta1, (double)s), bc2 = 1 - pow(t->c.beta2, (double)s);
	emu_ref decay_f = konst(t, OS("decay"), C, 1 - lr * t->c.wd),
	        lerp_w = konst(t, OS("lerp_mul"), C, 1 - t->c.beta1),
	        beta2 = konst(t, OS("v_mul"), C, t->c.beta2),
	        om_beta2 = konst(t, OS("g2_scale"), C, 1 - t->c.beta2),
	        eps = konst(t, OS("denom"), C, t->c.eps),
	        neg_ss = konst(t, OS("step"), C, -(lr / bc1)),
	        bc2s = konst(t, OS("denom"), C, sqrt(bc2));
	if (1 - t->c.beta1 >= 0.5) { /* lerp's second form: weight 1 − (1 − β1) */
		emu_ref one = konst(t, OS("lerp_mul"), C, 1);
		map(t, OS("lerp_mul"), EMU_OP_SUB, C, lerp_w, one, lerp_w, 1, 0);
	}
	bool small = 1 - t->c.beta1 < 0.5;
	emu_vec *Mv = t->tM ? t->tM : &t->Mv, *Vv = t->tV ? t->tV : &t->Vv;
	for (int i = 0; i < NP; i++) {
		size_t n = pcount(t, i), e = t->off[i];
		if (!n)
			continue;
		emu_ref Gc = emu_row(a->o1, 0), Wc = emu_row(a->o2, 0), Xc = emu_row(a->o3, 0),
		        D = emu_row(a->o4, 2), W = emu_row(Pv, e), Mr = emu_row(Mv, e),
		        Vr = emu_row(Vv, e);
		cvt(t, OS("g_c"), C, Gc, emu_row(Gv, e), n, e);
		if (t->c.wd != 0 && decays(i)) {
			cvt(t, OS("w_c"), C, Wc, W, n, e);
			map(t, OS("decay"), EMU_OP_MUL, C, W, Wc, decay_f, n, e);
			cvt(t, OS("decay_store"), Mf, W, W, n, e);
		}
		cvt(t, OS("m_c"), C, Xc, Mr, n, e);
		map(t, OS("lerp_sub"), EMU_OP_SUB, C, D, Gc, Xc, n, e);
		map(t, OS("lerp_mul"), EMU_OP_MUL, C, D, lerp_w, D, n, e);
		if (small)
			map(t, OS("lerp_add"), EMU_OP_ADD, C, Mr, Xc, D, n, e);
		else
			map(t, OS("lerp_add"), EMU_OP_SUB, C, Mr, Gc, D, n, e);
		cvt(t, OS("m_store"), Tf, Mr, Mr, n, e);
		cvt(t, OS("v_c"), C, Xc, Vr, n, e);
		map(t, OS("v_mul"), EMU_OP_MUL, C, Vr, Xc, beta2, n, e);
		cvt(t, OS("v_mul_store"), Tf, Vr, Vr, n, e);
		cvt(t, OS("v_c"), C, Xc, Vr, n, e);
		map(t, OS("g2_scale"), EMU_OP_MUL, C, D, om_beta2, Gc, n, e);
		map(t, OS("g2"), EMU_OP_MUL, C, D, D, Gc, n, e);
		map(t, OS("v_add"), EMU_OP_ADD, C, Vr, Xc, D, n, e);
		cvt(t, OS("v_store"), Tf, Vr, Vr, n, e);
		/* denom = (sqrt(v) / sqrt(bc2)) + eps, each a tensor of v's dtype */
		cvt(t, OS("v_c"), C, Xc, Vr, n, e);
		map(t, OS("denom"), EMU_OP_SQRT, C, D, Xc, NOREF, n, e);
		cvt(t, OS("denom_store"), Tf, D, D, n, e);
		map(t, OS("denom"), EMU_OP_DIV, C, D, D, bc2s, n, e);
		cvt(t, OS("denom_store"), Tf, D, D, n, e);
		map(t, OS("denom"), EMU_OP_ADD, C, D, D, eps, n, e);
		cvt(t, OS("denom_store"), Tf, D, D, n, e);
		/* w = w + (−step_size·m)/denom */
		cvt(t, OS("m_c"), C, Xc, Mr, n, e);
		map(t, OS("step"), EMU_OP_MUL, C, Xc, neg_ss, Xc, n, e);
		map(t, OS("step"), EMU_OP_DIV, C, Xc, Xc, D, n, e);
		cvt(t, OS("w_c"), C, Wc, W, n, e);
		map(t, OS("update"), EMU_OP_ADD, C, W, Wc, Xc, n, e);
		cvt(t, OS("w_store"), Mf, W, W, n, e);
	}
	if (t->tP)
		for (size_t i = 0; i < t->np; i++) {
			t->P[i] = emu_vget(t->be, t->tP, i);
			t->Mo[i] = emu_vget(t->be, t->tM, i);
			t->Vo[i] = emu_vget(t->be, t->tV, i);
		}
#undef OS
	return 0;
}

/* layer statistics of the step from the per-site flag counts */
static void site_stats(emu_train *t, emu_train_row *row)
{
	const emu_be_stats *st = &t->be->st;
	for (size_t s = EMU_STEP0; s < st->nsteps && s < EMU_STEP0 + t->nsites; s++) {
		size_t i = (s - EMU_STEP0) / KMAX, k = (s - EMU_STEP0) % KMAX;
		int kind = i < NG ? g_kind[t->c.arch][i] : i_kind[t->c.arch][(i - NG) % NI_LAYER];
		size_t layer = i == G_EMB ? 0 : i < NG ? t->L + 1 : (i - NG) / NI_LAYER + 1;
		int dir = k > k_nfwd(kind);
		const uint64_t *fl = st->step_flags[s];
		uint64_t ov = fl[2], un = fl[3], inv = fl[0];
		row->overflow += ov, row->underflow += un, row->invalid += inv;
		if (kind == K_OPT)
			continue;
		emu_train_lstat *ls = &t->ls[layer * 2 + (size_t)dir];
		ls->ops += st->step_ops[s];
		ls->overflow += ov, ls->underflow += un, ls->invalid += inv;
	}
}

int emu_train_step(emu_train *t, emu_train_row *row)
{
	emu_be be;
	memset(row, 0, sizeof *row);
	uint64_t s = ++t->step;
	memset(t->ls, 0, (t->L + 2) * 2 * sizeof *t->ls);
	t->first_nf_set = false;
	row->step = s;
	row->val_loss = NAN;
	row->lr = lr_at(&t->c, s) * (s == t->c.lr_spike_step ? t->c.lr_spike : 1);
	double scale = t->c.pol.scaler ? emu_gs_value(t->gs.scale) : 1;
	row->scale = scale;
	if (begin(t, &be, s) != 0) {
		end(t);
		return -1;
	}
	if (!t->tG)
		memset(t->G, 0, t->np * sizeof *t->G);
	t->in_step = true;
	double lsum = 0;
	size_t div = t->c.divide_loss ? t->c.micro : 1;
	for (size_t k = 0; k < t->c.micro; k++) {
		t->micro = (unsigned)k;
		batch(t, 0, (s - 1) * t->c.micro + k);
		unsigned faults = k ? 0
		                    : (s == t->c.spike_step ? FAULT_SPIKE : 0) |
		                          (s == t->c.flat_step ? FAULT_FLAT : 0);
		lsum += forward(t, faults);
		backward(t, scale, div);
	}
	row->loss = lsum / (double)t->c.micro;
	if (t->oom) {
		t->oom = false;
		t->in_step = false;
		end(t);
		return -1;
	}
	if (!isfinite(row->loss) && !t->first_nf_set) {
		t->first_nf_set = true;
		snprintf(t->first_nf, sizeof t->first_nf, "loss");
		t->first_nf_i = 0;
		t->first_nf_v = row->loss;
	}
	int r = optimize(t, scale, row->lr, &row->grad_norm);
	t->in_step = false;
	if (r < 0) {
		end(t);
		return -1;
	}
	row->skipped = r == 1;
	if (t->c.pol.scaler)
		emu_gs_update(&t->c.gs, &t->gs, row->skipped, NULL, NULL);
	site_stats(t, row);
	/* the run's first failing operation, and the first non-finite tensor */
	emu_train_fail *f = &t->fail;
	const emu_be_stats *st = &t->be->st; /* be itself is unused with a kernel run's backend */
	char fl[48];
	if (!f->set && st->first_set) {
		f->set = true;
		f->step = s;
		f->micro = (unsigned)(st->first_index >> 32);
		snprintf(f->site, sizeof f->site, "%s", st->first_step);
		f->op = emu_op_name(st->first_op);
		f->element = st->first_index & 0xffffffffu;
		f->flags = st->first_flags;
		if (!strncmp(f->site, "optimizer.", 10))
			for (int i = NP - 1; i >= 0; i--)
				if (f->element >= t->off[i]) {
					snprintf(f->param, sizeof f->param, "%s[%llu]", p_names[i],
					         (unsigned long long)(f->element - t->off[i]));
					break;
				}
	}
	if (!f->nonfinite_set && t->first_nf_set) {
		f->nonfinite_set = true;
		f->nonfinite_step = s;
		snprintf(f->nonfinite_tensor, sizeof f->nonfinite_tensor, "%s", t->first_nf);
		f->nonfinite_index = t->first_nf_i;
		f->nonfinite_value = t->first_nf_v;
		f->loss_nonfinite = !isfinite(row->loss);
		char v1[32];
		snprintf(v1, sizeof v1, "%g", t->first_nf_v);
		if (st->first_set)
			snprintf(
			    f->chain, sizeof f->chain,
			    "step %llu: %s %s %s (element %llu) -> %s %s%s%s",
			    (unsigned long long)s, st->first_step, emu_op_name(st->first_op),
			    flag_names(st->first_flags, fl, sizeof fl),
			    (unsigned long long)(st->first_index & 0xffffffffu), t->first_nf, v1,
			    strcmp(t->first_nf, "loss") != 0 && !isfinite(row->loss) ? " -> loss " : "",
			    strcmp(t->first_nf, "loss") != 0 && !isfinite(row->loss)
			        ? (isnan(row->loss) ? "nan" : "inf")
			        : "");
		else
			snprintf(f->chain, sizeof f->chain, "step %llu: %s %s%s",
			         (unsigned long long)s, t->first_nf, v1,
			         !isfinite(row->loss) ? " -> loss" : "");
	}
	end(t);
	for (size_t i = 0; i < t->np; i++)
		row->nonfinite_params += !isfinite(t->P[i]);
	if (t->c.val_every && s % t->c.val_every == 0) {
		double v = 0;
		for (size_t k = 0; k < t->c.val_batches; k++)
			v += emu_train_eval(t, true, k);
		row->val_loss = v / (double)t->c.val_batches;
	}
	return 0;
}

double emu_train_eval(emu_train *t, bool val, uint64_t k)
{
	emu_be be;
	bool was = t->in_step;
	t->in_step = false;
	emu_train_lstat *saved = malloc((t->L + 2) * 2 * sizeof *saved);
	if (saved)
		memcpy(saved, t->ls, (t->L + 2) * 2 * sizeof *saved);
	double loss = NAN;
	if (begin(t, &be, ~k) == 0) {
		batch(t, val ? 1 : 0, k);
		loss = forward(t, 0);
	}
	end(t);
	if (saved) {
		memcpy(t->ls, saved, (t->L + 2) * 2 * sizeof *saved);
		free(saved);
	}
	t->in_step = was;
	return loss;
}

double emu_train_grad(emu_train *t)
{
	emu_be be;
	double loss = NAN;
	memset(t->G, 0, t->np * sizeof *t->G);
	if (begin(t, &be, 0) == 0) {
		batch(t, 0, 0);
		loss = forward(t, 0);
		backward(t, 1, 1);
	}
	end(t);
	return loss;
}

void emu_train_batch(emu_train *t, bool val, uint64_t k, int *inputs, int *targets)
{
	batch(t, val ? 1 : 0, k);
	memcpy(inputs, t->inp, t->M * sizeof *inputs);
	memcpy(targets, t->tgt, t->M * sizeof *targets);
}

uint64_t emu_train_steps_done(const emu_train *t)
{
	return t->step;
}

/* ---- checkpoints ---- */

enum {
	CK_STEP,
	CK_ADAM_T,
	CK_SCALE,
	CK_TRACKER,
	CK_GS_STEP,
	CK_SEED,
	CK_LAYERS,
	CK_D,
	CK_HEADS,
	CK_SEQ,
	CK_VOCAB,
	CK_BATCH,
	CK_MICRO,
	CK_TASK,
	CK_ARCH,
	CK_FFN,
	CK_N
};
#define CK_N_OLD 14 /* a checkpoint written before the arch and ffn (gpt2) */
static const char *const ck_names[CK_N] = {
    "step",  "adam_step", "scale", "scale_tracker", "scale_steps", "seed", "layers", "d_model",
    "heads", "seq",       "vocab", "batch",         "micro",       "task", "arch",   "ffn"};

int emu_train_save(const emu_train *t, const char *path, char *err, size_t errlen)
{
	nm_st_out out[3 * NP + 3];
	char names[3 * NP][32];
	uint64_t shape[3 * NP], st[CK_N], nst = CK_N, npol = strlen(t->c.pol.name);
	const double *src[3] = {t->P, t->Mo, t->Vo};
	const char *pre[3] = {"", "adam_m.", "adam_v."};
	size_t n = 0;
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < NP; i++) {
			if (!pcount(t, i))
				continue;
			snprintf(names[n], sizeof names[n], "%s%s", pre[k], p_names[i]);
			shape[n] = pcount(t, i);
			out[n] =
			    (nm_st_out){names[n],  NM_ST_F64,          1,
			                &shape[n], src[k] + t->off[i], shape[n] * sizeof(double)};
			n++;
		}
	st[CK_STEP] = t->step, st[CK_ADAM_T] = t->adam_t, st[CK_SCALE] = t->gs.scale;
	st[CK_TRACKER] = (uint64_t)(int64_t)t->gs.tracker, st[CK_GS_STEP] = t->gs.step;
	st[CK_SEED] = t->c.seed, st[CK_LAYERS] = t->L, st[CK_D] = t->d, st[CK_HEADS] = t->H;
	st[CK_SEQ] = t->T, st[CK_VOCAB] = t->V, st[CK_BATCH] = t->B, st[CK_MICRO] = t->c.micro;
	st[CK_TASK] = (uint64_t)t->c.task, st[CK_ARCH] = (uint64_t)t->c.arch, st[CK_FFN] = t->ffn;
	out[n++] = (nm_st_out){"state", NM_ST_U64, 1, &nst, st, sizeof st};
	out[n++] = (nm_st_out){"policy", NM_ST_U8, 1, &npol, t->c.pol.name, npol};
	/* delayed scaling's histories: per operand key, n, pos, then the ring */
	uint64_t hshape[2] = {t->nhist, 3 + t->hlen};
	double *hv = NULL;
	if (t->nhist) {
		hv = malloc(t->nhist * (3 + t->hlen) * sizeof *hv);
		if (!hv) {
			snprintf(err, errlen, "%s: out of memory", path);
			return -1;
		}
		for (size_t i = 0; i < t->nhist; i++) {
			double *e = hv + i * (3 + t->hlen);
			e[0] = t->hist[i].key, e[1] = t->hist[i].n, e[2] = t->hist[i].pos;
			memcpy(e + 3, t->hist[i].ring, t->hlen * sizeof *e);
		}
		out[n++] =
		    (nm_st_out){"amax_history", NM_ST_F64, 2,
		                hshape,         hv,        t->nhist * (3 + t->hlen) * sizeof *hv};
	}
	int rc = nm_st_write(path, out, n, err, errlen) == NM_ST_OK ? 0 : -1;
	free(hv);
	return rc;
}

int emu_train_load(emu_train *t, const char *path, char *err, size_t errlen)
{
	nm_st_file f;
	if (nm_st_open(path, &f, err, errlen) != NM_ST_OK)
		return -1;
	int rc = -1;
	const nm_st_tensor *s = nm_st_find(&f, "state"), *pol = nm_st_find(&f, "policy");
	uint64_t st[CK_N];
	if (!s || s->dtype != NM_ST_U64 || (s->count != CK_N && s->count != CK_N_OLD) || !pol ||
	    pol->dtype != NM_ST_U8) {
		snprintf(err, errlen,
		         "%s: not a nanmap train checkpoint (no state and policy tensors)", path);
		goto out;
	}
	memcpy(st, s->data, s->count * sizeof *st);
	if (s->count == CK_N_OLD) /* gpt2 with its 4·d MLP */
		st[CK_ARCH] = EMU_ARCH_GPT2, st[CK_FFN] = 4 * t->d;
	uint64_t want[CK_N] = {0,
	                       0,
	                       0,
	                       0,
	                       0,
	                       t->c.seed,
	                       t->L,
	                       t->d,
	                       t->H,
	                       t->T,
	                       t->V,
	                       t->B,
	                       t->c.micro,
	                       (uint64_t)t->c.task,
	                       (uint64_t)t->c.arch,
	                       t->ffn};
	for (int k = CK_SEED; k < CK_N; k++)
		if (st[k] != want[k]) {
			snprintf(err, errlen,
			         "%s: a checkpoint of another run (%s %llu there, %llu here)", path,
			         ck_names[k], (unsigned long long)st[k],
			         (unsigned long long)want[k]);
			goto out;
		}
	if (pol->count != strlen(t->c.pol.name) || memcmp(pol->data, t->c.pol.name, pol->count) != 0) {
		snprintf(err, errlen, "%s: a checkpoint of policy %.*s, not %s", path,
		         (int)(pol->count < 48 ? pol->count : 48), (const char *)pol->data,
		         t->c.pol.name);
		goto out;
	}
	double *dst[3] = {t->P, t->Mo, t->Vo};
	const char *pre[3] = {"", "adam_m.", "adam_v."};
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < NP; i++) {
			char name[32];
			if (!pcount(t, i))
				continue;
			snprintf(name, sizeof name, "%s%s", pre[k], p_names[i]);
			const nm_st_tensor *x = nm_st_find(&f, name);
			if (!x || x->dtype != NM_ST_F64 || x->count != pcount(t, i)) {
				snprintf(err, errlen, "%s: tensor %s missing or of another shape",
				         path, name);
				goto out;
			}
			if (nm_st_decode(&f, x, 0, x->count, dst[k] + t->off[i], err, errlen) !=
			    NM_ST_OK)
				goto out;
		}
	const nm_st_tensor *ah = nm_st_find(&f, "amax_history");
	if (ah && (ah->dtype != NM_ST_F64 || ah->count % (3 + t->hlen) ||
	           t->c.pol.recipe.rule != EMU_RSCALE_DELAYED)) {
		snprintf(err, errlen, "%s: amax_history of another recipe", path);
		goto out;
	}
	for (size_t i = 0; ah && i < ah->count / (3 + t->hlen); i++) {
		double e[3];
		struct amax_hist *h;
		if (nm_st_decode(&f, ah, i * (3 + t->hlen), 3, e, err, errlen) != NM_ST_OK)
			goto out;
		if (!(h = hist_of(t, (unsigned)e[0]))) {
			snprintf(err, errlen, "%s: out of memory", path);
			goto out;
		}
		if (!(e[1] >= 0 && e[1] <= (double)t->hlen && e[2] >= 0 &&
		      e[2] < (double)t->hlen)) {
			snprintf(err, errlen, "%s: amax_history: a bad count or position", path);
			goto out;
		}
		h->n = e[1], h->pos = e[2];
		if (nm_st_decode(&f, ah, i * (3 + t->hlen) + 3, t->hlen, h->ring, err, errlen) !=
		    NM_ST_OK)
			goto out;
	}
	t->step = st[CK_STEP], t->adam_t = st[CK_ADAM_T];
	t->gs.scale = (emu_bits)st[CK_SCALE], t->gs.tracker = (int32_t)(int64_t)st[CK_TRACKER];
	t->gs.step = st[CK_GS_STEP];
	rc = 0;
out:
	nm_st_close(&f);
	return rc;
}

bool emu_train_same_bits(const double *a, const double *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x, y;
		memcpy(&x, a + i, sizeof x);
		memcpy(&y, b + i, sizeof y);
		if (x != y)
			return false;
	}
	return true;
}

int emu_train_adopt(emu_train *t, const emu_train *src, size_t *changed, char *err, size_t errlen)
{
	const emu_train_cfg *a = &t->c, *b = &src->c;
	if (t->L != src->L || t->d != src->d || t->H != src->H || t->T != src->T ||
	    t->V != src->V || t->B != src->B || a->micro != b->micro || a->task != b->task ||
	    a->seed != b->seed || a->arch != b->arch || t->ffn != src->ffn) {
		snprintf(err, errlen, "train: the state of another model or data (%s into %s)",
		         b->pol.name, a->pol.name);
		return -1;
	}
	const emu_format *mf = F(t, EMU_TR_MASTER), *sf = F(t, EMU_TR_STATE);
	size_t n = 0;
	for (size_t i = 0; i < t->np; i++) {
		double p = round_to(mf, src->P[i]), m = round_to(sf, src->Mo[i]),
		       v = round_to(sf, src->Vo[i]);
		n += !emu_train_same_bits(&p, &src->P[i], 1);
		n += !emu_train_same_bits(&m, &src->Mo[i], 1);
		n += !emu_train_same_bits(&v, &src->Vo[i], 1);
		t->P[i] = p, t->Mo[i] = m, t->Vo[i] = v;
	}
	t->step = src->step, t->adam_t = src->adam_t;
	if (a->pol.scaler && b->pol.scaler)
		t->gs = src->gs;
	if (hist_copy(t, src) != 0) {
		snprintf(err, errlen, "train: out of memory");
		return -1;
	}
	memset(&t->fail, 0, sizeof t->fail);
	if (changed)
		*changed = n;
	return 0;
}

int emu_train_dump(emu_train *t, const char *dir, char *err, size_t errlen)
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s/init.safetensors", dir) >= (int)sizeof path) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	nm_st_out out[NP + 3];
	uint64_t shape[NP], bt[2] = {t->B, t->T}, one = 1;
	size_t nt = emu_train_ntensors(t);
	for (size_t k = 0; k < nt; k++) {
		int i = tensor_at(t, k);
		shape[k] = pcount(t, i);
		out[k] = (nm_st_out){p_names[i], NM_ST_F64,        1,
		                     &shape[k],  t->P + t->off[i], shape[k] * sizeof(double)};
	}
	if (nm_st_write(path, out, nt, err, errlen) != NM_ST_OK)
		return -1;
	double *save = malloc(t->np * sizeof *save);
	int64_t *tok = malloc(2 * t->M * sizeof *tok);
	if (!save || !tok) {
		free(save);
		free(tok);
		snprintf(err, errlen, "train: out of memory");
		return -1;
	}
	memcpy(save, t->G, t->np * sizeof *save);
	double loss = emu_train_grad(t);
	for (size_t i = 0; i < t->M; i++)
		tok[i] = t->inp[i], tok[t->M + i] = t->tgt[i];
	char names[NP][40];
	for (size_t k = 0; k < nt; k++) {
		int i = tensor_at(t, k);
		snprintf(names[k], sizeof names[k], "grad.%s", p_names[i]);
		out[k] = (nm_st_out){names[k],  NM_ST_F64,        1,
		                     &shape[k], t->G + t->off[i], shape[k] * sizeof(double)};
	}
	out[nt] = (nm_st_out){"inputs", NM_ST_I64, 2, bt, tok, t->M * sizeof *tok};
	out[nt + 1] = (nm_st_out){"targets", NM_ST_I64, 2, bt, tok + t->M, t->M * sizeof *tok};
	out[nt + 2] = (nm_st_out){"loss", NM_ST_F64, 1, &one, &loss, sizeof loss};
	snprintf(path, sizeof path, "%s/grad.safetensors", dir);
	int rc = nm_st_write(path, out, nt + 3, err, errlen) == NM_ST_OK ? 0 : -1;
	memcpy(t->G, save, t->np * sizeof *save);
	free(save);
	free(tok);
	return rc;
}

/* ---- a golden run: everything another framework needs to check its own
 * training steps bit for bit (docs/train.md, golden/train/) ---- */

int emu_train_golden_cfg(emu_train_cfg *c, const char *preset, emu_train_arch arch, char *err,
                         size_t errlen)
{
	emu_train_cfg_default(c);
	c->arch = arch;
	c->layers = 1, c->d = 8, c->heads = 2, c->seq = 4, c->vocab = 6, c->batch = 2;
	c->steps = 3, c->warmup = 1, c->lr = 1e-2, c->val_every = 0;
	return emu_train_policy_preset(preset, &c->pol, err, errlen);
}

int emu_train_golden(const emu_train_cfg *cfg, const char *path, char *err, size_t errlen)
{
	emu_train *t = emu_train_new(cfg, err, errlen);
	if (!t)
		return -1;
	size_t nt = emu_train_ntensors(t), S = cfg->steps, per = 6 + 2 * nt;
	size_t cap = nt + S * per;
	nm_st_out *out = calloc(cap, sizeof *out);
	char(*names)[48] = calloc(cap, sizeof *names);
	uint64_t *shapes = calloc(cap * 3, sizeof *shapes);
	double *vals = calloc(nt ? t->np * (1 + 2 * S) + 4 * S : 1, sizeof *vals);
	int64_t *tok = calloc(2 * S * cfg->micro * t->M + 1, sizeof *tok);
	int rc = -1;
	if (!out || !names || !shapes || !vals || !tok) {
		snprintf(err, errlen, "train: out of memory");
		goto done;
	}
	size_t n = 0, vo = 0;
#define ADD(NAME_FMT, DT, ND, S0, S1, S2, DATA, BYTES, ...)                                        \
	do {                                                                                       \
		snprintf(names[n], sizeof names[n], NAME_FMT, __VA_ARGS__);                        \
		shapes[3 * n] = (S0), shapes[3 * n + 1] = (S1), shapes[3 * n + 2] = (S2);          \
		out[n] = (nm_st_out){names[n], (DT), (ND), shapes + 3 * n, (DATA), (BYTES)};       \
		n++;                                                                               \
	} while (0)
	for (size_t i = 0; i < nt; i++) { /* the initial weights */
		double *v = NULL, *g = NULL;
		size_t c = 0;
		const char *nm = emu_train_tensor(t, i, &v, &g, &c);
		if (!nm)
			break;
		memcpy(vals + vo, v, c * sizeof *v);
		ADD("init.%s", NM_ST_F64, 1, c, 0, 0, vals + vo, c * sizeof *v, nm);
		vo += c;
	}
	for (size_t s = 1; s <= S; s++) {
		emu_train_row row;
		int64_t *tk = tok + 2 * (s - 1) * cfg->micro * t->M;
		for (size_t k = 0; k < cfg->micro; k++) {
			int *in = malloc(2 * t->M * sizeof *in);
			if (!in) {
				snprintf(err, errlen, "train: out of memory");
				goto done;
			}
			emu_train_batch(t, false, (s - 1) * cfg->micro + k, in, in + t->M);
			for (size_t m = 0; m < t->M; m++)
				tk[k * t->M + m] = in[m],
				              tk[(cfg->micro + k) * t->M + m] = in[t->M + m];
			free(in);
		}
		if (emu_train_step(t, &row) != 0) {
			snprintf(err, errlen, "train: out of memory");
			goto done;
		}
		ADD("step%zu.inputs", NM_ST_I64, 3, cfg->micro, t->B, t->T, tk,
		    cfg->micro * t->M * sizeof *tk, s);
		ADD("step%zu.targets", NM_ST_I64, 3, cfg->micro, t->B, t->T, tk + cfg->micro * t->M,
		    cfg->micro * t->M * sizeof *tk, s);
		double *r = vals + vo;
		r[0] = row.loss, r[1] = row.grad_norm, r[2] = row.scale, r[3] = row.skipped;
		vo += 4;
		ADD("step%zu.loss", NM_ST_F64, 1, 1, 0, 0, r, sizeof *r, s);
		ADD("step%zu.grad_norm", NM_ST_F64, 1, 1, 0, 0, r + 1, sizeof *r, s);
		ADD("step%zu.scale", NM_ST_F64, 1, 1, 0, 0, r + 2, sizeof *r, s);
		ADD("step%zu.skipped", NM_ST_F64, 1, 1, 0, 0, r + 3, sizeof *r, s);
		for (size_t i = 0; i < nt; i++) {
			double *v = NULL, *g = NULL;
			size_t c = 0;
			const char *nm = emu_train_tensor(t, i, &v, &g, &c);
			if (!nm)
				break;
			memcpy(vals + vo, g, c * sizeof *g);
			ADD("step%zu.grad.%s", NM_ST_F64, 1, c, 0, 0, vals + vo, c * sizeof *g, s,
			    nm);
			vo += c;
			memcpy(vals + vo, v, c * sizeof *v);
			ADD("step%zu.%s", NM_ST_F64, 1, c, 0, 0, vals + vo, c * sizeof *v, s, nm);
			vo += c;
		}
	}
#undef ADD
	rc = nm_st_write(path, out, n, err, errlen) == NM_ST_OK ? 0 : -1;
done:
	free(out);
	free(names);
	free(shapes);
	free(vals);
	free(tok);
	emu_train_free(t);
	return rc;
}

/* ---- a training run as a kernel: sweep points ---- */

static const char *const tk_variants[] = {"fp32",      "bf16",        "fp16-amp",    "fp16-pure",
                                          "bf16-pure", "fp8-current", "fp8-delayed", "mxfp8",
                                          "nvfp4",     NULL};

static int tk_run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
                  emu_kout *out, char *err, size_t errlen)
{
	(void)pol; /* the variant names the training policy */
	emu_train_cfg c;
	emu_train_cfg_default(&c);
	c.val_every = 0;
	c.backend = be->kind;
	c.seed = in->seed;
	enum { NPS = 26 };
	double v[NPS];
	static const char *const K = "train";
	/* name, lo, hi, default, integer */
	static const struct {
		const char *name;
		double lo, hi, dflt;
		bool integer;
	} ps[NPS] = {{"steps", 1, 100000, 20, true},
	             {"layers", 1, 64, 1, true},
	             {"d_model", 2, 4096, 16, true},
	             {"heads", 1, 4096, 2, true},
	             {"seq", 2, 4096, 8, true},
	             {"vocab", 3, 65536, 16, true},
	             {"batch", 1, 4096, 4, true},
	             {"micro", 1, 1024, 1, true},
	             {"divide", 0, 1, 1, true},
	             {"lr", 0, 10, 1e-3, false},
	             {"warmup", 0, 1e8, 2, true},
	             {"clip", 0, 1e30, 1, false},
	             {"ln_eps", 0, 0.5, 1e-5, false},
	             {"spike_step", 0, 1e8, 0, true},
	             {"spike", -1e300, 1e300, 1, false},
	             {"scaler_init", 0, 3.4e38, 65536, false},
	             {"scaler_interval", 1, 1e9, 2000, true},
	             {"task", 0, 3, 0, true},
	             {"scaler_growth", 1, 1e30, 2, false},
	             {"adam_eps", 0, 0.999, 1e-8, false},
	             {"loss_weight", 1e-300, 1e300, 1, false},
	             {"flat_step", 0, 1e8, 0, true},
	             {"flat_var", 0, 1e300, 0, false},
	             {"val_batches", 1, 1000, 4, true},
	             {"arch", 0, 1, 0, true},
	             {"ffn", 0, 65536, 0, true}};
	for (int i = 0; i < NPS; i++)
		if (!(ps[i].integer ? emu_kparam_int(in, K, ps[i].name, ps[i].lo, ps[i].hi,
		                                     ps[i].dflt, &v[i], err, errlen)
		                    : emu_kparam_real(in, K, ps[i].name, ps[i].lo, ps[i].hi, 0,
		                                      ps[i].dflt, &v[i], err, errlen)))
			return -1;
	c.steps = (size_t)v[0], c.layers = (size_t)v[1], c.d = (size_t)v[2], c.heads = (size_t)v[3];
	c.seq = (size_t)v[4], c.vocab = (size_t)v[5], c.batch = (size_t)v[6],
	c.micro = (size_t)v[7];
	c.divide_loss = v[8] != 0, c.lr = v[9], c.min_lr = v[9] / 10, c.warmup = (size_t)v[10];
	c.clip = v[11], c.ln_eps = v[12], c.spike_step = (size_t)v[13], c.spike_factor = v[14];
	c.gs.init_scale = v[15], c.gs.growth_interval = (int32_t)v[16];
	c.task = (emu_train_task)(int)v[17];
	c.gs.growth_factor = v[18], c.eps = v[19], c.loss_weight = v[20];
	c.flat_step = (size_t)v[21], c.flat_var = v[22];
	c.arch = (emu_train_arch)(int)v[24], c.ffn = (size_t)v[25];
	size_t nval = (size_t)v[23];
	double sd; /* the run's seed: the input's unless the parameter names one */
	if (!emu_kparam_int(in, K, "seed", 0, 9007199254740992.0, (double)in->seed, &sd, err,
	                    errlen))
		return -1;
	c.seed = (uint64_t)sd;
	if (emu_train_policy_parse(variant ? variant : "fp32", &c.pol, err, errlen) != 0)
		return -1;
	emu_train *t = emu_train_new(&c, err, errlen);
	if (!t)
		return -1;
	t->ext = be;
	const emu_format *f32 = emu_format_by_name("fp32");
	/* held as fp32 (every preset's loss format is within it): an output's format
	 * must outlive the trainer, and the built-in table does */
	emu_vec *loss = emu_kout_vec(be, out, "loss", c.steps, f32);
	emu_vec *skip = emu_kout_vec(be, out, "skipped", c.steps, f32);
	emu_vec *scale = emu_kout_vec(be, out, "scale", c.steps, f32);
	/* after the run: the validation loss (nval batches), the skipped steps
	 * and the operations that overflowed (saturations included), the counts
	 * exact in fp32 up to 2^24 */
	emu_vec *val = emu_kout_vec(be, out, "val_loss", 1, f32);
	emu_vec *skips = emu_kout_vec(be, out, "skips", 1, f32);
	emu_vec *ovf = emu_kout_vec(be, out, "overflows", 1, f32);
	int rc = loss && skip && scale && val && skips && ovf ? 0 : -1;
	double nskip = 0, novf = 0;
	for (size_t s = 0; s < c.steps && !rc; s++) {
		emu_train_row row;
		if (emu_train_step(t, &row) != 0) {
			rc = -1;
			break;
		}
		emu_fill(be, emu_at(loss, s), row.loss, 1);
		emu_fill(be, emu_at(skip, s), row.skipped, 1);
		emu_fill(be, emu_at(scale, s), row.scale, 1);
		nskip += row.skipped;
		novf += (double)row.overflow;
	}
	if (!rc) {
		double vl = 0;
		for (size_t k = 0; k < nval; k++)
			vl += emu_train_eval(t, true, k);
		emu_fill(be, emu_at(val, 0), vl / (double)nval, 1);
		emu_fill(be, emu_at(skips, 0), nskip, 1);
		emu_fill(be, emu_at(ovf, 0), novf, 1);
	}
	if (rc)
		snprintf(err, errlen, "train: out of memory");
	emu_train_free(t);
	return rc;
}

const emu_kernel emu_kernel_train = {
    "train",
    tk_variants,
    "steps=N (20) layers=L (1) d_model=D (16) heads=H (2) seq=T (8) vocab=V (16) batch=B (4) "
    "micro=K (1) divide=0|1 (1) lr=X (1e-3; min-lr lr/10) warmup=N (2) clip=C (1) "
    "ln_eps=E (1e-5) spike_step=S (0: none) spike=F (1) scaler_init=S (65536) "
    "scaler_interval=N (2000) task=0..3 (copy reverse sort modadd) scaler_growth=G (2) "
    "adam_eps=E (1e-8) loss_weight=K (1) flat_step=S (0: none) flat_var=V (0) "
    "val_batches=N (4) seed=S (the input's) arch=0|1 (gpt2 llama) ffn=H (0: the arch's)",
    tk_run,
    NULL, /* consumes no tensor: the run draws its weights and data from the seed */
    NULL, /* its steps are sites BLOCK.KERNEL.STEP, a table per model (docs/train.md) */
    0,
};
