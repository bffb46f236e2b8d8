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

#include "emu/cli/nm_train.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_parse.h"
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
};

typedef struct {
	emu_train_cfg c;
	const char *policy, *text, *csv, *lcsv, *compare;
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
	case NT_SPIKE: {
		const char *colon = strchr(a, ':');
		char n[32];
		if (!colon || (size_t)(colon - a) >= sizeof n)
			return nm_fail("bad --spike '%s' (STEP:FACTOR, e.g. 50:1000)", a);
		memcpy(n, a, (size_t)(colon - a));
		n[colon - a] = '\0';
		if ((rc = nm_parse_count("--spike", n, 1, 100000000, &u)) != 0)
			return rc;
		c->spike_step = (size_t)u;
		return nt_real("--spike", colon + 1, -1e300, 1e300, &c->spike_factor);
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
    "policy:  --policy fp32|bf16|fp16-amp|fp16-pure|bf16-pure (default fp32)\n"
    "         --role ROLE=FORMAT  override one role (master state gemm accum act compute\n"
    "                             reduce grad loss), or scaler=on|off\n"
    "model:   --layers L (2) --d-model D (32) --heads H (2) --seq T (16) --vocab V (16)\n"
    "         --batch B (4) --ln-eps E (1e-5)\n"
    "data:    --task copy|reverse|sort|modadd (copy) | --text FILE (bytes; --vocab 256)\n"
    "run:     --steps N (100) --micro K (1) [--no-loss-div] --lr LR (1e-3) --min-lr (1e-4)\n"
    "         --warmup N (10) --wd W (0.1) --clip C (1; 0 none) --seed S (1)\n"
    "         --scaler-init S (65536) --scaler-interval N (2000) --spike STEP:FACTOR\n"
    "         --backend fast|exact (fast) --val-every N (10)\n"
    "output:  --every N (progress line every N steps; default steps/10) --csv FILE\n"
    "         --layers-csv FILE --compare POLICY [--diverge F (2)]: the same run under\n"
    "         POLICY, and the first step where the losses differ by more than F times\n";

static int nt_setup(nt_opts *o, emu_train_cfg *c, const char *policy, bool overrides, char *err,
                    size_t errlen)
{
	if (emu_train_policy_preset(policy, &c->pol, err, errlen) != 0)
		return -1;
	if (overrides)
		for (size_t i = 0; i < o->nroles; i++)
			if (emu_train_policy_set(&c->pol, o->roles[i], err, errlen) != 0)
				return -1;
	return 0;
}

static void nt_fail_line(const emu_train_fail *f)
{
	char fl[64] = "";
	if (f->set) {
		snprintf(fl, sizeof fl, "%s%s%s", f->flags & EMU_FLAG_OVERFLOW ? "overflow " : "",
		         f->flags & EMU_FLAG_INVALID ? "invalid " : "",
		         f->flags & EMU_FLAG_DIVBYZERO ? "divbyzero " : "");
		if (*fl)
			fl[strlen(fl) - 1] = '\0';
		printf("first failing operation: step %llu, micro-batch %u, %s (%s), element "
		       "%llu%s%s: "
		       "%s\n",
		       (unsigned long long)f->step, f->micro, f->site, f->op,
		       (unsigned long long)f->element, f->param[0] ? ", parameter " : "", f->param,
		       fl);
	} else {
		printf("first failing operation: none (no overflow, invalid or divbyzero)\n");
	}
	if (f->nonfinite_set)
		printf("first non-finite value: %s\n", f->chain);
	else
		printf("first non-finite value: none\n");
}

int nm_train_main(int argc, char **argv)
{
	nt_opts o;
	char err[512];
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
	char *text = NULL;
	if (o.text) {
		size_t len;
		text = nm_file_read_max(o.text, (size_t)1 << 30, &len);
		if (!text)
			return nm_fail("%s: cannot read: %s", o.text, strerror(errno));
		o.c.task = EMU_TASK_TEXT;
		o.c.text = (const unsigned char *)text;
		o.c.text_len = len;
		o.c.vocab = 256;
	}
	if (nt_setup(&o, &o.c, o.policy ? o.policy : "fp32", true, err, sizeof err) != 0) {
		free(text);
		return nm_fail("%s", err);
	}
	emu_train_cfg ref = o.c;
	if (o.compare && nt_setup(&o, &ref, o.compare, false, err, sizeof err) != 0) {
		free(text);
		return nm_fail("--compare: %s", err);
	}
	emu_train *t = emu_train_new(&o.c, err, sizeof err);
	emu_train *r = NULL;
	if (t && o.compare)
		r = emu_train_new(&ref, err, sizeof err);
	if (!t || (o.compare && !r)) {
		emu_train_free(t);
		free(text);
		return nm_fail("%s", err);
	}
	if (o.every == UINT64_MAX)
		o.every = o.c.steps >= 10 ? o.c.steps / 10 : 1;
	printf("train: gpt2, %zu layers, d %zu, %zu heads, seq %zu, vocab %zu, batch %zu x %zu, "
	       "%zu parameters; policy %s; %zu steps on %s\n",
	       o.c.layers, o.c.d, o.c.heads, o.c.seq, o.c.vocab, o.c.batch, o.c.micro,
	       emu_train_nparams(t), o.c.pol.name, o.c.steps, emu_be_name(o.c.backend));
	nm_buf csv = {0}, lcsv = {0};
	nm_buf_put(&csv, "step,loss,val_loss,grad_norm,lr,scale,skipped,overflow,underflow,"
	                 "invalid,nonfinite_params");
	if (r)
		nm_buf_put(&csv, ",ref_loss,loss_ratio");
	nm_buf_put(&csv, "\n");
	nm_buf_put(&lcsv, "step,layer,pass,ops,overflow,underflow,invalid,amax,nan,inf\n");
	size_t skipped = 0;
	uint64_t diverged = 0;
	double last = NAN, last_val = NAN;
	rc = 0;
	for (size_t s = 1; s <= o.c.steps; s++) {
		emu_train_row row, rr;
		if (emu_train_step(t, &row) != 0 || (r && emu_train_step(r, &rr) != 0)) {
			rc = nm_fail("train: out of memory at step %zu", s);
			break;
		}
		skipped += row.skipped;
		last = row.loss;
		if (!isnan(row.val_loss))
			last_val = row.val_loss;
		char b[8][NM_NUM_LEN];
		bool hv = !isnan(row.val_loss);
		nm_buf_printf(&csv, "%llu,%s,%s,%s,%s,%s,%d,%llu,%llu,%llu,%llu",
		              (unsigned long long)row.step, nm_fmt_g(row.loss, 9, b[0], NM_NUM_LEN),
		              hv ? nm_fmt_g(row.val_loss, 9, b[1], NM_NUM_LEN) : "",
		              nm_fmt_g(row.grad_norm, 9, b[2], NM_NUM_LEN),
		              nm_fmt_g(row.lr, 9, b[3], NM_NUM_LEN),
		              nm_fmt_g(row.scale, 9, b[4], NM_NUM_LEN), row.skipped,
		              (unsigned long long)row.overflow, (unsigned long long)row.underflow,
		              (unsigned long long)row.invalid,
		              (unsigned long long)row.nonfinite_params);
		if (r) {
			double ratio = row.loss > rr.loss ? row.loss / rr.loss : rr.loss / row.loss;
			if (!(ratio <= o.factor) && !diverged)
				diverged = s;
			nm_buf_printf(&csv, ",%s,%s", nm_fmt_g(rr.loss, 9, b[5], NM_NUM_LEN),
			              nm_fmt_g(row.loss / rr.loss, 9, b[6], NM_NUM_LEN));
		}
		nm_buf_put(&csv, "\n");
		size_t nl;
		const emu_train_lstat *ls = emu_train_lstats(t, &nl);
		for (size_t i = 0; i < nl; i++) {
			size_t layer = i / 2;
			char lname[32];
			if (layer == 0)
				snprintf(lname, sizeof lname, "emb");
			else if (layer == nl / 2 - 1)
				snprintf(lname, sizeof lname, "head");
			else
				snprintf(lname, sizeof lname, "layer%zu", layer - 1);
			nm_buf_printf(
			    &lcsv, "%zu,%s,%s,%llu,%llu,%llu,%llu,%s,%llu,%llu\n", s, lname,
			    i % 2 ? "backward" : "forward", (unsigned long long)ls[i].ops,
			    (unsigned long long)ls[i].overflow, (unsigned long long)ls[i].underflow,
			    (unsigned long long)ls[i].invalid,
			    nm_fmt_g(ls[i].amax, 6, b[7], NM_NUM_LEN),
			    (unsigned long long)ls[i].nan, (unsigned long long)ls[i].inf);
		}
		if (o.every && (s % o.every == 0 || s == o.c.steps)) {
			printf("step %5zu  loss %-10s val %-10s |g| %-10s lr %-9s scale %-7s%s\n",
			       s, nm_fmt_g(row.loss, 5, b[0], NM_NUM_LEN),
			       hv ? nm_fmt_g(row.val_loss, 5, b[1], NM_NUM_LEN) : "-",
			       nm_fmt_g(row.grad_norm, 4, b[2], NM_NUM_LEN),
			       nm_fmt_g(row.lr, 3, b[3], NM_NUM_LEN),
			       nm_fmt_g(row.scale, 4, b[4], NM_NUM_LEN),
			       row.skipped ? "  skipped" : "");
			fflush(stdout);
		}
	}
	if (!rc) {
		char b[2][NM_NUM_LEN];
		printf("final: loss %s, validation loss %s, %zu of %zu steps skipped\n",
		       nm_fmt_g(last, 6, b[0], NM_NUM_LEN), nm_fmt_g(last_val, 6, b[1], NM_NUM_LEN),
		       skipped, o.c.steps);
		nt_fail_line(emu_train_first_fail(t));
		if (r) {
			if (diverged)
				printf("divergence from %s: the loss first differs by more than "
				       "%gx at step "
				       "%llu\n",
				       ref.pol.name, o.factor, (unsigned long long)diverged);
			else
				printf("divergence from %s: none (within %gx every step)\n",
				       ref.pol.name, o.factor);
		}
	}
	if (!rc && (csv.oom || lcsv.oom))
		rc = nm_fail("train: out of memory");
	if (!rc && o.csv && nm_file_write(o.csv, csv.s, csv.len, err, sizeof err) != 0)
		rc = nm_fail("%s", err);
	if (!rc && o.lcsv && nm_file_write(o.lcsv, lcsv.s, lcsv.len, err, sizeof err) != 0)
		rc = nm_fail("%s", err);
	if (!rc && fflush(stdout) != 0)
		rc = nm_fail("cannot write the output: %s", strerror(errno));
	nm_buf_free(&csv);
	nm_buf_free(&lcsv);
	emu_train_free(t);
	emu_train_free(r);
	free(text);
	return rc;
}
