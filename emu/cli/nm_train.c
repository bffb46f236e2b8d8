/*
 * nm_train.c — `nanmap train`: a GPT-2 trained end to end on the kernel
 * engine in a training policy (emu/train/train.h, docs/train.md). Prints a
 * progress line every --every steps, the run's first failing operation and
 * the chain to the loss; --csv writes the per-step table, --layers-csv the
 * per-layer counts, --compare runs a reference policy on the same seed and
 * reports where the losses part.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emu/cli/nm_train.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_parse.h"
#include "emu/sweep/nm_plot.h"
#include "emu/train/train.h"

enum {
	NT_POLICY,
	NT_ROLE,
	NT_LAYERS,
	NT_D,
	NT_HEADS,
	NT_SEQ,
	NT_VOCAB,
	NT_BATCH,
	NT_TASK,
	NT_TEXT,
	NT_STEPS,
	NT_MICRO,
	NT_NODIV,
	NT_LR,
	NT_MINLR,
	NT_WARMUP,
	NT_WD,
	NT_CLIP,
	NT_LNEPS,
	NT_SEED,
	NT_SPIKE,
	NT_GS_INIT,
	NT_GS_INTERVAL,
	NT_BACKEND,
	NT_CSV,
	NT_LCSV,
	NT_EVERY,
	NT_VAL,
	NT_COMPARE,
	NT_FACTOR,
	NT_PLOT,
	NT_SAVE,
	NT_SAVE_EVERY,
	NT_RESUME,
	NT_DUMP,
	NT_JSON,
	NT_STOP,
	NT_LRSPIKE,
	NT_FLAT,
	NT_LWEIGHT,
	NT_AEPS,
	NT_GS_GROWTH,
	NT_REPLAY,
	NT_ARCH,
	NT_FFN,
	NT_GS_BACKOFF,
};

static const nm_opt nt_defs[] = {
    {NULL, "--policy", NT_POLICY, NM_OPTF_VALUE, 0},
    {NULL, "--role", NT_ROLE, NM_OPTF_VALUE | NM_OPTF_REPEAT, 0},
    {NULL, "--layers", NT_LAYERS, NM_OPTF_VALUE, 0},
    {NULL, "--d-model", NT_D, NM_OPTF_VALUE, 0},
    {NULL, "--heads", NT_HEADS, NM_OPTF_VALUE, 0},
    {NULL, "--seq", NT_SEQ, NM_OPTF_VALUE, 0},
    {NULL, "--vocab", NT_VOCAB, NM_OPTF_VALUE, 0},
    {NULL, "--batch", NT_BATCH, NM_OPTF_VALUE, 0},
    {NULL, "--task", NT_TASK, NM_OPTF_VALUE, 1},
    {NULL, "--text", NT_TEXT, NM_OPTF_VALUE, 1},
    {NULL, "--steps", NT_STEPS, NM_OPTF_VALUE, 0},
    {NULL, "--micro", NT_MICRO, NM_OPTF_VALUE, 0},
    {NULL, "--no-loss-div", NT_NODIV, 0, 0},
    {NULL, "--lr", NT_LR, NM_OPTF_VALUE, 0},
    {NULL, "--min-lr", NT_MINLR, NM_OPTF_VALUE, 0},
    {NULL, "--warmup", NT_WARMUP, NM_OPTF_VALUE, 0},
    {NULL, "--wd", NT_WD, NM_OPTF_VALUE, 0},
    {NULL, "--clip", NT_CLIP, NM_OPTF_VALUE, 0},
    {NULL, "--ln-eps", NT_LNEPS, NM_OPTF_VALUE, 0},
    {NULL, "--seed", NT_SEED, NM_OPTF_VALUE, 0},
    {NULL, "--spike", NT_SPIKE, NM_OPTF_VALUE, 0},
    {NULL, "--scaler-init", NT_GS_INIT, NM_OPTF_VALUE, 0},
    {NULL, "--scaler-interval", NT_GS_INTERVAL, NM_OPTF_VALUE, 0},
    {NULL, "--backend", NT_BACKEND, NM_OPTF_VALUE, 0},
    {NULL, "--csv", NT_CSV, NM_OPTF_VALUE, 0},
    {NULL, "--layers-csv", NT_LCSV, NM_OPTF_VALUE, 0},
    {NULL, "--every", NT_EVERY, NM_OPTF_VALUE, 0},
    {NULL, "--val-every", NT_VAL, NM_OPTF_VALUE, 0},
    {NULL, "--compare", NT_COMPARE, NM_OPTF_VALUE, 0},
    {NULL, "--diverge", NT_FACTOR, NM_OPTF_VALUE, 0},
    {NULL, "--plot", NT_PLOT, NM_OPTF_VALUE, 0},
    {NULL, "--save", NT_SAVE, NM_OPTF_VALUE, 0},
    {NULL, "--save-every", NT_SAVE_EVERY, NM_OPTF_VALUE, 0},
    {NULL, "--resume", NT_RESUME, NM_OPTF_VALUE, 0},
    {NULL, "--dump", NT_DUMP, NM_OPTF_VALUE, 0},
    {NULL, "--json", NT_JSON, NM_OPTF_VALUE, 0},
    {NULL, "--stop-at", NT_STOP, NM_OPTF_VALUE, 0},
    {NULL, "--lr-spike", NT_LRSPIKE, NM_OPTF_VALUE, 0},
    {NULL, "--flat", NT_FLAT, NM_OPTF_VALUE, 0},
    {NULL, "--loss-weight", NT_LWEIGHT, NM_OPTF_VALUE, 0},
    {NULL, "--adam-eps", NT_AEPS, NM_OPTF_VALUE, 0},
    {NULL, "--scaler-growth", NT_GS_GROWTH, NM_OPTF_VALUE, 0},
    {NULL, "--replay", NT_REPLAY, NM_OPTF_VALUE, 0},
    {NULL, "--arch", NT_ARCH, NM_OPTF_VALUE, 0},
    {NULL, "--ffn", NT_FFN, NM_OPTF_VALUE, 0},
    {NULL, "--scaler-backoff", NT_GS_BACKOFF, NM_OPTF_VALUE, 0},
};

typedef struct {
	emu_train_cfg c;
	const char *policy, *text, *csv, *lcsv, *compare, *plot, *save, *resume, *dump, *json;
	uint64_t save_every, stop_at, replay;
	const char *roles[32];
	size_t nroles;
	uint64_t every;
	double factor;
} nt_opts;

static int nt_real(const char *opt, const char *arg, double lo, double hi, double *out)
{
	nm_number x;
	double v;
	if (nm_parse_number(arg, &x) != NM_OK || !((v = strtod(arg, NULL)) >= lo) || !(v <= hi))
		return nm_fail("%s '%s': want a number in [%g, %g]", opt, arg, lo, hi);
	*out = v;
	return 0;
}

static int nt_size(const char *opt, const char *arg, uint64_t lo, uint64_t hi, size_t *out)
{
	uint64_t v;
	int rc = nm_parse_count(opt, arg, lo, hi, &v);
	if (!rc)
		*out = (size_t)v;
	return rc;
}

static int nt_take(void *ctx, const nm_opt *d, const char *a)
{
	nt_opts *o = ctx;
	emu_train_cfg *c = &o->c;
	uint64_t u;
	int rc;
	switch (d->id) {
	case NT_POLICY:
		o->policy = a;
		return 0;
	case NT_ROLE:
		if (o->nroles == sizeof o->roles / sizeof *o->roles)
			return nm_fail("--role: at most 32 overrides");
		o->roles[o->nroles++] = a;
		return 0;
	case NT_LAYERS:
		return nt_size(d->lng, a, 1, 64, &c->layers);
	case NT_D:
		return nt_size(d->lng, a, 2, 4096, &c->d);
	case NT_HEADS:
		return nt_size(d->lng, a, 1, 4096, &c->heads);
	case NT_SEQ:
		return nt_size(d->lng, a, 2, 4096, &c->seq);
	case NT_VOCAB:
		return nt_size(d->lng, a, 3, 65536, &c->vocab);
	case NT_BATCH:
		return nt_size(d->lng, a, 1, 4096, &c->batch);
	case NT_TASK:
		if (!strcmp(a, "copy"))
			c->task = EMU_TASK_COPY;
		else if (!strcmp(a, "reverse"))
			c->task = EMU_TASK_REVERSE;
		else if (!strcmp(a, "sort"))
			c->task = EMU_TASK_SORT;
		else if (!strcmp(a, "modadd"))
			c->task = EMU_TASK_MODADD;
		else
			return nm_fail("unknown --task '%s' (copy reverse sort modadd)", a);
		return 0;
	case NT_TEXT:
		o->text = a;
		return 0;
	case NT_STEPS:
		return nt_size(d->lng, a, 1, 100000000, &c->steps);
	case NT_MICRO:
		return nt_size(d->lng, a, 1, 1024, &c->micro);
	case NT_NODIV:
		c->divide_loss = false;
		return 0;
	case NT_LR:
		return nt_real(d->lng, a, 0, 10, &c->lr);
	case NT_MINLR:
		return nt_real(d->lng, a, 0, 10, &c->min_lr);
	case NT_WARMUP:
		return nt_size(d->lng, a, 0, 100000000, &c->warmup);
	case NT_WD:
		return nt_real(d->lng, a, 0, 0.999, &c->wd);
	case NT_CLIP:
		return nt_real(d->lng, a, 0, 1e30, &c->clip);
	case NT_LNEPS:
		return nt_real(d->lng, a, 0, 0.5, &c->ln_eps);
	case NT_SEED:
		return nm_parse_count(d->lng, a, 0, UINT64_MAX, &c->seed);
	case NT_ARCH:
		if (!strcmp(a, "gpt2"))
			c->arch = EMU_ARCH_GPT2;
		else if (!strcmp(a, "llama"))
			c->arch = EMU_ARCH_LLAMA;
		else
			return nm_fail("unknown --arch '%s' (gpt2 llama)", a);
		return 0;
	case NT_FFN:
		return nt_size(d->lng, a, 1, 65536, &c->ffn);
	case NT_REPLAY:
		return nm_parse_count(d->lng, a, 1, 100000000, &o->replay);
	case NT_LWEIGHT:
		return nt_real(d->lng, a, 1e-300, 1e300, &c->loss_weight);
	case NT_AEPS:
		return nt_real(d->lng, a, 0, 0.999, &c->eps);
	case NT_GS_BACKOFF:
		return nt_real(d->lng, a, 1e-30, 0.9999999, &c->gs.backoff_factor);
	case NT_GS_GROWTH:
		return nt_real(d->lng, a, 1.0000001, 1e30, &c->gs.growth_factor);
	case NT_SPIKE:
	case NT_FLAT:
	case NT_LRSPIKE: {
		const char *colon = strchr(a, ':');
		char n[32];
		if (!colon || (size_t)(colon - a) >= sizeof n)
			return nm_fail("bad %s '%s' (%s)", d->lng, a,
			               d->id == NT_FLAT ? "STEP:VARIANCE, e.g. 50:1e-7"
			                                : "STEP:FACTOR, e.g. 50:1000");
		memcpy(n, a, (size_t)(colon - a));
		n[colon - a] = '\0';
		if ((rc = nm_parse_count(d->lng, n, 1, 100000000, &u)) != 0)
			return rc;
		if (d->id == NT_LRSPIKE) {
			c->lr_spike_step = (size_t)u;
			return nt_real(d->lng, colon + 1, 0, 1e300, &c->lr_spike);
		}
		if (d->id == NT_FLAT) {
			c->flat_step = (size_t)u;
			return nt_real(d->lng, colon + 1, 0, 1e300, &c->flat_var);
		}
		c->spike_step = (size_t)u;
		return nt_real(d->lng, colon + 1, -1e300, 1e300, &c->spike_factor);
	}
	case NT_GS_INIT:
		return nt_real(d->lng, a, 0, 3.4e38, &c->gs.init_scale);
	case NT_GS_INTERVAL:
		if ((rc = nm_parse_count(d->lng, a, 1, 1000000000, &u)) != 0)
			return rc;
		c->gs.growth_interval = (int32_t)u;
		return 0;
	case NT_BACKEND:
		if (!strcmp(a, "fast"))
			c->backend = EMU_BE_FAST;
		else if (!strcmp(a, "exact"))
			c->backend = EMU_BE_EXACT;
		else
			return nm_fail("unknown --backend '%s' (fast exact)", a);
		return 0;
	case NT_CSV:
		o->csv = a;
		return 0;
	case NT_LCSV:
		o->lcsv = a;
		return 0;
	case NT_EVERY:
		return nm_parse_count(d->lng, a, 0, 100000000, &o->every);
	case NT_VAL:
		return nt_size(d->lng, a, 0, 100000000, &c->val_every);
	case NT_COMPARE:
		o->compare = a;
		return 0;
	case NT_FACTOR:
		return nt_real(d->lng, a, 1, 1e30, &o->factor);
	case NT_PLOT:
		o->plot = a;
		return 0;
	case NT_SAVE:
		o->save = a;
		return 0;
	case NT_SAVE_EVERY:
		return nm_parse_count(d->lng, a, 1, 100000000, &o->save_every);
	case NT_RESUME:
		o->resume = a;
		return 0;
	case NT_DUMP:
		o->dump = a;
		return 0;
	case NT_JSON:
		o->json = a;
		return 0;
	case NT_STOP:
		return nm_parse_count(d->lng, a, 1, 100000000, &o->stop_at);
	}
	return 0;
}

static int nt_arg(void *ctx, const char *a)
{
	(void)ctx;
	return nm_fail("train takes no arguments, '%s' is one (try: nanmap train --help)", a);
}

static const char nt_help[] =
    "usage: nanmap train [--policy P] [--role ROLE=FORMAT ...] [model] [data] [run] [output]\n"
    "  Train a small GPT-2 end to end on the kernel engine in a training policy, and name\n"
    "  the first operation that overflowed or turned NaN (docs/train.md).\n"
    "policy:  --policy P[,P...]  fp32 bf16 fp16-amp fp16-pure bf16-pure fp8-current\n"
    "                             fp8-delayed mxfp8\n"
    "                             nvfp4 (default fp32); several run side by side\n"
    "         --role ROLE=FORMAT  override one role (master state gemm accum act compute\n"
    "                             reduce grad loss), or scaler=on|off\n"
    "model:   --arch gpt2|llama (gpt2: LayerNorm, GELU, biases, tied head; llama:\n"
    "         RMSNorm, SwiGLU, no biases, untied head) --layers L (2) --d-model D (32)\n"
    "         --heads H (2) --seq T (16) --vocab V (16) --batch B (4) --ln-eps E (1e-5)\n"
    "         --ffn H (the MLP's width: 4D for gpt2, 8D/3 up to a multiple of 8 for llama)\n"
    "data:    --task copy|reverse|sort|modadd (copy) | --text FILE (bytes; --vocab 256)\n"
    "run:     --steps N (100) --micro K (1) [--no-loss-div] --lr LR (1e-3) --min-lr (1e-4)\n"
    "         --warmup N (10) --wd W (0.1) --clip C (1; 0 none) --seed S (1)\n"
    "         --scaler-init S (65536) --scaler-interval N (2000) --spike STEP:FACTOR\n"
    "         --scaler-growth G (2) --scaler-backoff B (0.5) --adam-eps E (1e-8)\n"
    "         --loss-weight K (1: the loss times K before backward)\n"
    "         --lr-spike STEP:FACTOR (that step's learning rate times FACTOR)\n"
    "         --flat STEP:VAR (a near-constant batch: each position's embedding output\n"
    "         squeezed to variance VAR over the features)\n"
    "         --backend fast|exact (fast) --val-every N (10)\n"
    "output:  --every N (progress line every N steps; default steps/10) --csv FILE\n"
    "         --layers-csv FILE --compare POLICY [--diverge F (2)]: the same run under\n"
    "         POLICY, and the first step where the losses differ by more than F times\n"
    "         --plot FILE.svg|.png (loss curves) --json FILE (the report)\n"
    "state:   --save FILE [--save-every N] (a checkpoint) --resume FILE (continue one)\n"
    "         --stop-at STEP (stop there, the schedule still --steps long; --resume on)\n"
    "         --dump DIR (initial weights, batch 0 and its gradients, .safetensors)\n"
    "         --replay STEP: run to STEP - 1 under the first policy (from --resume\n"
    "         FILE when given), then step STEP on the fast and the exact backend\n"
    "         (compared bit for bit) and under every other --policy from that state\n";

static int nt_setup(nt_opts *o, emu_train_cfg *c, const char *policy, bool overrides, char *err,
                    size_t errlen)
{
	if (emu_train_policy_parse(policy, &c->pol, err, errlen) != 0)
		return -1;
	if (overrides)
		for (size_t i = 0; i < o->nroles; i++)
			if (emu_train_policy_set(&c->pol, o->roles[i], err, errlen) != 0)
				return -1;
	return 0;
}

static void nt_fail_line(const emu_train_fail *f, const char *pre)
{
	char fl[64] = "";
	if (f->set) {
		snprintf(fl, sizeof fl, "%s%s%s", f->flags & EMU_FLAG_OVERFLOW ? "overflow " : "",
		         f->flags & EMU_FLAG_INVALID ? "invalid " : "",
		         f->flags & EMU_FLAG_DIVBYZERO ? "divbyzero " : "");
		if (*fl)
			fl[strlen(fl) - 1] = '\0';
		printf("%sfirst failing operation: step %llu, micro-batch %u, %s (%s), element "
		       "%llu%s%s: "
		       "%s\n",
		       pre, (unsigned long long)f->step, f->micro, f->site, f->op,
		       (unsigned long long)f->element, f->param[0] ? ", parameter " : "", f->param,
		       fl);
	} else {
		printf("%sfirst failing operation: none (no overflow, invalid or divbyzero)\n",
		       pre);
	}
	if (f->nonfinite_set)
		printf("%sfirst non-finite value: %s\n", pre, f->chain);
	else
		printf("%sfirst non-finite value: none\n", pre);
}

#define NT_MAXRUN 9

/* one run of the command: a policy, its trainer and its table */
typedef struct {
	emu_train_cfg c;
	emu_train *t;
	nm_buf csv, lcsv;
	double *loss, *val;
	size_t skipped;
	double last, last_val;
	uint64_t diverged;
	bool ref, has_val;
} nt_run;

static void nt_json_fail(nm_buf *b, const emu_train_fail *f)
{
	nm_buf_put(b, "{\"set\": ");
	nm_buf_put(b, f->set ? "true" : "false");
	if (f->set) {
		nm_buf_printf(b, ", \"step\": %llu, \"micro\": %u, \"site\": ",
		              (unsigned long long)f->step, f->micro);
		nm_buf_json_str(b, f->site);
		nm_buf_put(b, ", \"op\": ");
		nm_buf_json_str(b, f->op);
		nm_buf_printf(b,
		              ", \"element\": %llu, \"flags\": ", (unsigned long long)f->element);
		char fl[64];
		snprintf(fl, sizeof fl, "%s%s%s", f->flags & EMU_FLAG_OVERFLOW ? "overflow " : "",
		         f->flags & EMU_FLAG_INVALID ? "invalid " : "",
		         f->flags & EMU_FLAG_DIVBYZERO ? "divbyzero " : "");
		if (*fl)
			fl[strlen(fl) - 1] = '\0';
		nm_buf_json_str(b, fl);
		nm_buf_put(b, ", \"parameter\": ");
		nm_buf_json_str(b, f->param);
	}
	nm_buf_put(b, ", \"nonfinite\": ");
	nm_buf_put(b, f->nonfinite_set ? "true" : "false");
	if (f->nonfinite_set) {
		nm_buf_printf(b, ", \"nonfinite_step\": %llu, \"tensor\": ",
		              (unsigned long long)f->nonfinite_step);
		nm_buf_json_str(b, f->nonfinite_tensor);
		nm_buf_printf(
		    b, ", \"index\": %llu, \"value\": ", (unsigned long long)f->nonfinite_index);
		nm_buf_json_num(b, f->nonfinite_value);
		nm_buf_put(b, ", \"chain\": ");
		nm_buf_json_str(b, f->chain);
	}
	nm_buf_put(b, "}");
}

/* --text FILE: its bytes, the task's (*text freed by the caller) */
static int nt_text(nt_opts *o, char **text)
{
	*text = NULL;
	if (!o->text)
		return 0;
	size_t len;
	errno = 0;
	*text = nm_file_read_max(o->text, (size_t)1 << 30, &len);
	if (!*text)
		return nm_fail("%s: cannot read: %s", o->text, strerror(errno ? errno : ENOMEM));
	o->c.task = EMU_TASK_TEXT;
	o->c.text = (const unsigned char *)*text;
	o->c.text_len = len;
	o->c.vocab = 256;
	return 0;
}

/* one step of a replay: a trainer of policy pol on backend be, in the
 * state of p, stepped once; its row in *row */
static emu_train *nt_replay_one(nt_opts *o, const char *pol, bool overrides, emu_be_kind be,
                                const emu_train *p, size_t *changed, emu_train_row *row, char *name,
                                size_t namelen)
{
	char err[512];
	emu_train_cfg c = o->c;
	c.backend = be;
	emu_train *t = NULL;
	if (nt_setup(o, &c, pol, overrides, err, sizeof err) != 0 ||
	    !(t = emu_train_new(&c, err, sizeof err)) ||
	    emu_train_adopt(t, p, changed, err, sizeof err) != 0) {
		nm_fail("--replay: %s", err);
		emu_train_free(t);
		return NULL;
	}
	if (emu_train_step(t, row) != 0) {
		nm_fail("train: out of memory");
		emu_train_free(t);
		return NULL;
	}
	if (name)
		snprintf(name, namelen, "%s", c.pol.name);
	return t;
}

static void nt_replay_row(const char *pre, const emu_train_row *w)
{
	char b[3][NM_NUM_LEN];
	printf("%sloss %s, gradient norm %s, scale %s%s; operations that overflowed %llu, "
	       "underflowed %llu, invalid %llu; non-finite parameters after it %llu\n",
	       pre, nm_fmt_g(w->loss, 9, b[0], NM_NUM_LEN),
	       nm_fmt_g(w->grad_norm, 6, b[1], NM_NUM_LEN), nm_fmt_g(w->scale, 6, b[2], NM_NUM_LEN),
	       w->skipped ? " (skipped)" : "", (unsigned long long)w->overflow,
	       (unsigned long long)w->underflow, (unsigned long long)w->invalid,
	       (unsigned long long)w->nonfinite_params);
}

/* fast against exact: what differs (NULL: nothing), the parameters compared */
static const char *nt_replay_diff(emu_train *a, const emu_train_row *ra, emu_train *b,
                                  const emu_train_row *rb, size_t *nparams)
{
	const emu_train_fail *fa = emu_train_first_fail(a), *fb = emu_train_first_fail(b);
	*nparams = 0;
	if (!emu_train_same_bits(&ra->loss, &rb->loss, 1))
		return "the loss";
	if (!emu_train_same_bits(&ra->grad_norm, &rb->grad_norm, 1))
		return "the gradient norm";
	if (ra->skipped != rb->skipped || !emu_train_same_bits(&ra->scale, &rb->scale, 1))
		return "the loss scale or the skip";
	if (ra->overflow != rb->overflow || ra->underflow != rb->underflow ||
	    ra->invalid != rb->invalid || ra->nonfinite_params != rb->nonfinite_params)
		return "the flag counts";
	if (fa->set != fb->set ||
	    (fa->set && (strcmp(fa->site, fb->site) != 0 || fa->element != fb->element ||
	                 fa->flags != fb->flags)))
		return "the first failing operation";
	for (size_t i = 0; i < emu_train_ntensors(a); i++) {
		double *va, *vb, *g;
		size_t na, nb;
		emu_train_tensor(a, i, &va, &g, &na);
		emu_train_tensor(b, i, &vb, &g, &nb);
		if (na != nb || !emu_train_same_bits(va, vb, na))
			return "the parameters";
		*nparams += na;
	}
	return NULL;
}

/* --replay STEP (docs/train.md) */
static int nt_replay(nt_opts *o, const char *const *pname, size_t npol)
{
	char err[512];
	if (o->save || o->compare || o->plot || o->csv || o->lcsv || o->json || o->dump ||
	    o->stop_at)
		return nm_fail("--replay runs one step: --save, --compare, --plot, --csv, "
		               "--layers-csv, --json, --dump and --stop-at do not apply");
	if (o->replay > o->c.steps)
		return nm_fail("--replay %llu: past --steps %zu", (unsigned long long)o->replay,
		               o->c.steps);
	emu_train_cfg c = o->c;
	c.backend = EMU_BE_FAST;
	emu_train *p = NULL;
	if (nt_setup(o, &c, pname[0], true, err, sizeof err) != 0 ||
	    !(p = emu_train_new(&c, err, sizeof err)))
		return nm_fail("%s", err);
	int rc = 0;
	if (o->resume && emu_train_load(p, o->resume, err, sizeof err) != 0)
		rc = nm_fail("%s", err);
	uint64_t from = emu_train_steps_done(p);
	if (!rc && from >= o->replay)
		rc = nm_fail(
		    "%s: holds the state after step %llu; --replay %llu needs one before it",
		    o->resume, (unsigned long long)from, (unsigned long long)o->replay);
	if (rc) {
		emu_train_free(p);
		return rc;
	}
	printf("train: %s, %zu layers, d %zu, %zu heads, seq %zu, vocab %zu, batch %zu x %zu, "
	       "%zu parameters; replay of step %llu\n",
	       emu_train_arch_name(c.arch), c.layers, c.d, c.heads, c.seq, c.vocab, c.batch,
	       c.micro, emu_train_nparams(p), (unsigned long long)o->replay);
	if (o->resume)
		printf("state: %s (after step %llu)", o->resume, (unsigned long long)from);
	else
		printf("state: the initial weights");
	if (from + 1 < o->replay)
		printf(", then steps %llu to %llu under %s on fast", (unsigned long long)from + 1,
		       (unsigned long long)o->replay - 1, c.pol.name);
	printf("\n");
	emu_train_row row;
	for (uint64_t s = from + 1; s < o->replay && !rc; s++)
		if (emu_train_step(p, &row) != 0)
			rc = nm_fail("train: out of memory at step %llu", (unsigned long long)s);
	emu_train_row rf, rx;
	emu_train *tf = NULL, *tx = NULL;
	if (!rc && (!(tf = nt_replay_one(o, pname[0], true, EMU_BE_FAST, p, NULL, &rf, NULL, 0)) ||
	            !(tx = nt_replay_one(o, pname[0], true, EMU_BE_EXACT, p, NULL, &rx, NULL, 0))))
		rc = 2;
	if (!rc) {
		char pre[96];
		snprintf(pre, sizeof pre, "%s, fast: ", c.pol.name);
		nt_replay_row(pre, &rf);
		nt_fail_line(emu_train_first_fail(tf), "  ");
		size_t np;
		const char *what = nt_replay_diff(tf, &rf, tx, &rx, &np);
		if (what) {
			printf("%s, exact: differs from fast in %s\n", c.pol.name, what);
			snprintf(pre, sizeof pre, "%s, exact: ", c.pol.name);
			nt_replay_row(pre, &rx);
			nt_fail_line(emu_train_first_fail(tx), "  ");
			rc = 1;
		} else {
			printf("%s, exact: the same bits as fast (loss, gradient norm, scale, flag "
			       "counts, first failing operation and %zu parameters)\n",
			       c.pol.name, np);
		}
	}
	emu_train_free(tf);
	emu_train_free(tx);
	for (size_t k = 1; k < npol && rc != 2; k++) {
		size_t changed;
		char name[64];
		emu_train *t = nt_replay_one(o, pname[k], true, EMU_BE_FAST, p, &changed, &row,
		                             name, sizeof name);
		if (!t) {
			rc = 2;
			break;
		}
		char pre[96];
		snprintf(pre, sizeof pre, "%s, fast: ", name);
		printf("%s: the state rounded to its formats (%zu values changed)\n", name,
		       changed);
		nt_replay_row(pre, &row);
		nt_fail_line(emu_train_first_fail(t), "  ");
		emu_train_free(t);
	}
	emu_train_free(p);
	if (!rc && fflush(stdout) != 0)
		rc = nm_fail("cannot write the output: %s", strerror(errno));
	return rc;
}

/* One invocation: its options, its runs (the policies, then --compare's
 * reference), the steps it runs and the tables it builds. */
typedef struct {
	nt_opts *o;
	nt_run run[NT_MAXRUN];
	size_t nrun, npol;
	uint64_t first;   /* the first step this invocation runs */
	size_t last_step; /* and the last */
	nt_run *ref;      /* --compare's run, or NULL */
	nm_buf csv, lcsv, js;
} nt_main;

/* --policy's comma list (split in pols) into pname[0 .. *npol) */
static int nt_policies(const nt_opts *o, char *pols, size_t len, const char **pname, size_t *npol)
{
	*npol = 0;
	snprintf(pols, len, "%s", o->policy ? o->policy : "fp32");
	for (char *save = NULL, *p = strtok_r(pols, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		if (*npol == NT_MAXRUN - 1)
			return nm_fail("--policy: at most %d policies", NT_MAXRUN - 1);
		for (size_t k = 0; k < *npol; k++)
			if (!strcmp(pname[k], p))
				return nm_fail("--policy: '%s' given twice", p);
		pname[(*npol)++] = p;
	}
	if (*npol == 0) {
		(void)nm_fail("--policy: no policy named");
		return NM_EXIT_ERR;
	}
	return 0;
}

/* The options that go together, and every output's folder there and
 * writable before the run starts */
static int nt_check_outputs(const nt_opts *o, size_t npol)
{
	char err[512];
	if (npol > 1 && (o->save || o->resume || o->dump))
		return nm_fail("--save, --resume and --dump take one policy");
	if (o->save_every && !o->save)
		return nm_fail("--save-every needs --save FILE");
	if (o->stop_at && !o->save)
		return nm_fail("--stop-at needs --save FILE (to resume from)");
	if (o->plot) {
		size_t l = strlen(o->plot);
		if (l < 5 ||
		    (strcmp(o->plot + l - 4, ".svg") != 0 && strcmp(o->plot + l - 4, ".png") != 0))
			return nm_fail("--plot %s: a plot is .png or .svg", o->plot);
	}
	const char *outs[] = {o->csv, o->lcsv, o->json, o->plot, o->save};
	for (size_t k = 0; k < sizeof outs / sizeof *outs; k++) {
		if (!outs[k])
			continue;
		char dir[4096];
		const char *sl = strrchr(outs[k], '/');
		snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - outs[k]) : 1, sl ? outs[k] : ".");
		if (nm_dir_writable(*dir ? dir : "/", err, sizeof err) != 0)
			return nm_fail("%s: %s", outs[k], err);
	}
	return 0;
}

/* A trainer per policy (and --compare's), resumed or dumped as asked; the
 * first step to run */
static int nt_open(nt_main *m, const char **pname)
{
	nt_opts *o = m->o;
	char err[512];
	for (size_t k = 0; k < m->npol + (o->compare != NULL); k++) {
		nt_run *r = &m->run[m->nrun++];
		r->c = o->c;
		/* each run's arrays are freed by nm_train_main, at done: */
		// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
		r->ref = k == m->npol;
		if (nt_setup(o, &r->c, r->ref ? o->compare : pname[k], !r->ref, err, sizeof err) !=
		        0 ||
		    !(r->t = emu_train_new(&r->c, err, sizeof err)))
			return nm_fail("%s%s", r->ref ? "--compare: " : "", err);
		r->loss = malloc(o->c.steps * sizeof *r->loss);
		r->val = malloc(o->c.steps * sizeof *r->val);
		if (!r->loss || !r->val)
			return nm_fail("train: out of memory");
		for (size_t s = 0; s < o->c.steps; s++)
			r->loss[s] = r->val[s] = NAN;
	}
	for (size_t k = 0; o->resume && k < m->nrun; k++)
		if (emu_train_load(m->run[k].t, o->resume, err, sizeof err) != 0)
			return nm_fail("%s", err);
	m->first = emu_train_steps_done(m->run[0].t) + 1;
	if (m->first > o->c.steps)
		return nm_fail("%s: already at step %llu of --steps %zu", o->resume,
		               (unsigned long long)(m->first - 1), o->c.steps);
	if (o->dump && mkdir(o->dump, 0777) != 0 && errno != EEXIST)
		return nm_fail("%s: cannot create: %s", o->dump, strerror(errno));
	if (o->dump && emu_train_dump(m->run[0].t, o->dump, err, sizeof err) != 0)
		return nm_fail("%s", err);
	m->ref = o->compare ? &m->run[m->nrun - 1] : NULL;
	m->last_step = o->stop_at && o->stop_at < o->c.steps ? o->stop_at : o->c.steps;
	return 0;
}

/* Step s of run r (w its row; rr the reference's): the CSV rows, the
 * per-layer rows and (every --every steps) the line on stdout */
static void nt_record(nt_main *m, size_t s, nt_run *r, const emu_train_row *w,
                      const emu_train_row *rr)
{
	const nt_opts *o = m->o;
	char b[8][NM_NUM_LEN];
	bool hv = !isnan(w->val_loss);
	nm_buf_csv(&m->csv, r->c.pol.name);
	nm_buf_printf(&m->csv, ",%llu,%s,%s,%s,%s,%s,%d,%llu,%llu,%llu,%llu",
	              (unsigned long long)w->step, nm_fmt_g(w->loss, 9, b[0], NM_NUM_LEN),
	              hv ? nm_fmt_g(w->val_loss, 9, b[1], NM_NUM_LEN) : "",
	              nm_fmt_g(w->grad_norm, 9, b[2], NM_NUM_LEN),
	              nm_fmt_g(w->lr, 9, b[3], NM_NUM_LEN), nm_fmt_g(w->scale, 9, b[4], NM_NUM_LEN),
	              w->skipped, (unsigned long long)w->overflow, (unsigned long long)w->underflow,
	              (unsigned long long)w->invalid, (unsigned long long)w->nonfinite_params);
	if (rr) {
		double ratio = w->loss > rr->loss ? w->loss / rr->loss : rr->loss / w->loss;
		if (!(ratio <= o->factor) && !r->diverged)
			r->diverged = s;
		nm_buf_printf(&m->csv, ",%s,%s", nm_fmt_g(rr->loss, 9, b[5], NM_NUM_LEN),
		              nm_fmt_g(w->loss / rr->loss, 9, b[6], NM_NUM_LEN));
	}
	nm_buf_put(&m->csv, "\n");
	size_t nl;
	const emu_train_lstat *ls = emu_train_lstats(r->t, &nl);
	for (size_t i = 0; i < nl; i++) {
		size_t layer = i / 2;
		char lname[32];
		if (layer == 0)
			snprintf(lname, sizeof lname, "emb");
		else if (layer == nl / 2 - 1)
			snprintf(lname, sizeof lname, "head");
		else
			snprintf(lname, sizeof lname, "layer%zu", layer - 1);
		nm_buf_csv(&m->lcsv, r->c.pol.name);
		nm_buf_printf(
		    &m->lcsv, ",%zu,%s,%s,%llu,%llu,%llu,%llu,%s,%llu,%llu\n", s, lname,
		    i % 2 ? "backward" : "forward", (unsigned long long)ls[i].ops,
		    (unsigned long long)ls[i].overflow, (unsigned long long)ls[i].underflow,
		    (unsigned long long)ls[i].invalid, nm_fmt_g(ls[i].amax, 6, b[7], NM_NUM_LEN),
		    (unsigned long long)ls[i].nan, (unsigned long long)ls[i].inf);
	}
	if (o->every && (s % o->every == 0 || s == m->last_step)) {
		bool many = m->npol > 1;
		printf("step %5zu %s%s%s loss %-10s val %-10s |g| %-10s lr %-9s "
		       "scale %-7s%s\n",
		       s, many ? "[" : "", many ? r->c.pol.name : "", many ? "]" : "",
		       nm_fmt_g(w->loss, 5, b[0], NM_NUM_LEN),
		       hv ? nm_fmt_g(w->val_loss, 5, b[1], NM_NUM_LEN) : "-",
		       nm_fmt_g(w->grad_norm, 4, b[2], NM_NUM_LEN),
		       nm_fmt_g(w->lr, 3, b[3], NM_NUM_LEN),
		       nm_fmt_g(w->scale, 4, b[4], NM_NUM_LEN), w->skipped ? "  skipped" : "");
	}
}

/* Every step from m->first on, each run in turn, saving as asked */
static int nt_steps(nt_main *m)
{
	nt_opts *o = m->o;
	char err[512];
	for (size_t s = m->first; s <= m->last_step; s++) {
		emu_train_row row[NT_MAXRUN];
		for (size_t k = 0; k < m->nrun; k++)
			if (emu_train_step(m->run[k].t, &row[k]) != 0)
				return nm_fail("train: out of memory at step %zu", s);
		for (size_t k = 0; k < m->nrun; k++) {
			nt_run *r = &m->run[k];
			emu_train_row *w = &row[k];
			r->skipped += w->skipped;
			r->last = w->loss;
			r->loss[s - 1] = w->loss;
			r->val[s - 1] = w->val_loss;
			if (!isnan(w->val_loss))
				r->last_val = w->val_loss, r->has_val = true;
			if (!r->ref)
				nt_record(m, s, r, w, m->ref ? &row[m->nrun - 1] : NULL);
		}
		fflush(stdout);
		if (o->save && ((o->save_every && s % o->save_every == 0) || s == m->last_step) &&
		    emu_train_save(m->run[0].t, o->save, err, sizeof err) != 0)
			return nm_fail("%s", err);
	}
	return 0;
}

/* Each run's final lines on stdout and its object in the JSON */
static void nt_summary(nt_main *m)
{
	const nt_opts *o = m->o;
	size_t nsteps = m->last_step + 1 - m->first;
	nm_buf_put(&m->js, "{\"runs\": [");
	for (size_t k = 0; k < m->nrun; k++) {
		nt_run *r = &m->run[k];
		char b[2][NM_NUM_LEN], pre[64] = "";
		if (m->npol > 1 || r->ref)
			snprintf(pre, sizeof pre, "%s: ", r->c.pol.name);
		if (!r->ref) {
			printf("%sfinal: loss %s, validation loss %s, %zu of %zu steps skipped\n",
			       pre, nm_fmt_g(r->last, 6, b[0], NM_NUM_LEN),
			       r->has_val ? nm_fmt_g(r->last_val, 6, b[1], NM_NUM_LEN) : "-",
			       r->skipped, nsteps);
			nt_fail_line(emu_train_first_fail(r->t), pre);
			if (m->ref && r->diverged)
				printf(
				    "%sdivergence from %s: the loss first differs by more than %gx "
				    "at step %llu\n",
				    pre, m->ref->c.pol.name, o->factor,
				    (unsigned long long)r->diverged);
			else if (m->ref)
				printf("%sdivergence from %s: none (within %gx every step)\n", pre,
				       m->ref->c.pol.name, o->factor);
		}
		nm_buf_put(&m->js, k ? ", {\"policy\": " : "{\"policy\": ");
		nm_buf_json_str(&m->js, r->c.pol.name);
		nm_buf_printf(&m->js,
		              ", \"reference\": %s, \"steps\": %zu, \"skipped\": %zu, \"loss\": ",
		              r->ref ? "true" : "false", nsteps, r->skipped);
		nm_buf_json_num(&m->js, r->last);
		nm_buf_put(&m->js, ", \"val_loss\": ");
		nm_buf_json_num(&m->js, r->last_val);
		nm_buf_put(&m->js, ", \"diverged_at\": ");
		if (r->diverged)
			nm_buf_printf(&m->js, "%llu", (unsigned long long)r->diverged);
		else
			nm_buf_put(&m->js, "null");
		nm_buf_put(&m->js, ", \"first_failure\": ");
		nt_json_fail(&m->js, emu_train_first_fail(r->t));
		nm_buf_put(&m->js, "}");
	}
	nm_buf_put(&m->js, "]}\n");
}

/* The files asked for: the tables, the JSON and the loss plot */
static int nt_write(nt_main *m)
{
	const nt_opts *o = m->o;
	char err[512];
	if (m->csv.oom || m->lcsv.oom || m->js.oom)
		return nm_fail("train: out of memory");
	if (o->csv && nm_file_write(o->csv, m->csv.s, m->csv.len, err, sizeof err) != 0)
		return nm_fail("%s", err);
	if (o->lcsv && nm_file_write(o->lcsv, m->lcsv.s, m->lcsv.len, err, sizeof err) != 0)
		return nm_fail("%s", err);
	if (o->json && nm_file_write(o->json, m->js.s, m->js.len, err, sizeof err) != 0)
		return nm_fail("%s", err);
	if (!o->plot)
		return 0;
	size_t n = m->last_step + 1 - m->first;
	double *x = malloc(n * sizeof *x);
	const char *names[NT_MAXRUN];
	const double *ys[NT_MAXRUN];
	char title[160];
	int rc = 0;
	for (size_t k = 0; k < m->nrun; k++)
		names[k] = m->run[k].c.pol.name, ys[k] = m->run[k].loss + m->first - 1;
	snprintf(title, sizeof title, "training loss, gpt2 %zu layers d %zu (seed %llu)",
	         o->c.layers, o->c.d, (unsigned long long)o->c.seed);
	if (!x)
		rc = nm_fail("train: out of memory");
	else {
		for (size_t i = 0; i < n; i++)
			x[i] = (double)(m->first + i);
		if (nm_plot_curves(o->plot, title, "step", "loss", false, m->nrun, names, x, ys, n,
		                   err, sizeof err) != 0)
			rc = nm_fail("%s", err);
	}
	free(x);
	return rc;
}

int nm_train_main(int argc, char **argv)
{
	nt_opts o;
	memset(&o, 0, sizeof o);
	emu_train_cfg_default(&o.c);
	o.factor = 2;
	o.every = UINT64_MAX;
	if (nm_wants_help(argc - 1, argv + 1))
		return nm_print_help(nt_help);
	int rc = nm_opt_parse(&(nm_optparser){.cmd = "train",
	                                      .defs = nt_defs,
	                                      .ndefs = sizeof nt_defs / sizeof *nt_defs,
	                                      .take = nt_take,
	                                      .arg = nt_arg,
	                                      .ctx = &o},
	                      argc - 1, argv + 1);
	if (rc)
		return rc;
	/* the policies: a comma list, each with the --role overrides */
	char pols[512];
	const char *pname[NT_MAXRUN] = {NULL};
	size_t npol;
	if ((rc = nt_policies(&o, pols, sizeof pols, pname, &npol)) != 0)
		return rc;
	char *text = NULL;
	if (o.replay) {
		if ((rc = nt_text(&o, &text)) == 0)
			rc = nt_replay(&o, pname, npol);
		free(text);
		return rc;
	}
	if ((rc = nt_check_outputs(&o, npol)) != 0 || (rc = nt_text(&o, &text)) != 0)
		return rc;
	nt_main m;
	memset(&m, 0, sizeof m);
	m.o = &o;
	m.npol = npol;
	if ((rc = nt_open(&m, pname)) != 0)
		goto done;
	if (o.every == UINT64_MAX)
		o.every = o.c.steps >= 10 ? o.c.steps / 10 : 1;
	for (size_t k = 0; k < m.nrun; k++) {
		nt_run *r = &m.run[k];
		if (!r->ref)
			printf("train: %s, %zu layers, d %zu, %zu heads, seq %zu, vocab %zu, "
			       "batch %zu x "
			       "%zu, %zu parameters; policy %s; %zu steps on %s\n",
			       emu_train_arch_name(r->c.arch), r->c.layers, r->c.d, r->c.heads,
			       r->c.seq, r->c.vocab, r->c.batch, r->c.micro,
			       emu_train_nparams(r->t), r->c.pol.name, r->c.steps,
			       emu_be_name(r->c.backend));
		r->last = r->last_val = NAN;
	}
	if (o.resume)
		printf("resumed from %s at step %llu\n", o.resume,
		       (unsigned long long)(m.first - 1));
	nm_buf_put(&m.csv,
	           "policy,step,loss,val_loss,grad_norm,lr,scale,skipped,overflow,underflow,"
	           "invalid,nonfinite_params");
	if (o.compare)
		nm_buf_put(&m.csv, ",ref_loss,loss_ratio");
	nm_buf_put(&m.csv, "\n");
	nm_buf_put(&m.lcsv, "policy,step,layer,pass,ops,overflow,underflow,invalid,amax,nan,inf\n");
	if ((rc = nt_steps(&m)) == 0) {
		nt_summary(&m);
		rc = nt_write(&m);
	}
	if (!rc && fflush(stdout) != 0)
		rc = nm_fail("cannot write the output: %s", strerror(errno));
done:
	nm_buf_free(&m.csv);
	nm_buf_free(&m.lcsv);
	nm_buf_free(&m.js);
	for (size_t k = 0; k < m.nrun; k++) {
		emu_train_free(m.run[k].t);
		free(m.run[k].loss);
		free(m.run[k].val);
	}
	free(text);
	return rc;
}
