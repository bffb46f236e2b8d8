/*
 * check_train.c — emu/train/train.c, whole training runs:
 *  - the backward pass is the forward's derivative: on the truth backend
 *    (256-bit MPFR, no rounding) every parameter's gradient agrees with
 *    central differences of the loss;
 *  - the fp32 policy's gradients agree with those true gradients to the
 *    error fp32 allows (the figure is printed);
 *  - fast == exact: every preset's steps give the same loss, gradient norm,
 *    flag counts, first failing operation and parameters, bit for bit;
 *  - a logit spike under fp16-pure names loss.spike's overflow and the chain
 *    to the loss; fp32 survives the same run;
 *  - GradScaler skips exactly the steps whose scaled gradients overflow,
 *    leaving the parameters untouched, and halves the scale each time;
 *  - a near-constant batch whose eps is 0 in fp16 names layer0.ln1.rsqrt;
 *  - a loss weight: GradScaler changes no bit of a bf16 run, and does of
 *    an fp16 one whose gradients underflow;
 *  - a run as a sweep point: hundreds of steps, its summaries;
 *  - bad settings are refused with one line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/train/train.h"
#include "tests/lib.h"

static void tiny(emu_train_cfg *c, const char *policy)
{
	char err[200];
	emu_train_cfg_default(c);
	c->layers = 1, c->d = 8, c->heads = 2, c->seq = 4, c->vocab = 6, c->batch = 2;
	c->steps = 4, c->warmup = 1, c->val_every = 0;
	c->lr = 1e-2;
	ck_assert_msg(emu_train_policy_preset(policy, &c->pol, err, sizeof err) == 0, "%s", err);
}

static emu_train *make(const emu_train_cfg *c)
{
	char err[300];
	emu_train *t = emu_train_new(c, err, sizeof err);
	ck_assert_msg(t != NULL, "%s", err);
	return t;
}

/* The true gradients of batch 0: truth backend's backward. */
static double *truth_grads(emu_train_cfg *c, emu_train **keep)
{
	c->backend = EMU_BE_TRUTH;
	emu_train *t = make(c);
	emu_train_grad(t);
	double *g = malloc(emu_train_nparams(t) * sizeof *g);
	ck_assert(g != NULL);
	size_t k = 0;
	for (size_t i = 0; i < emu_train_ntensors(t); i++) {
		double *v, *gr;
		size_t n;
		emu_train_tensor(t, i, &v, &gr, &n);
		memcpy(g + k, gr, n * sizeof *g);
		k += n;
	}
	*keep = t;
	return g;
}

/* (a loop test: _i is the architecture, gpt2 and llama) */
START_TEST(test_grad_central_differences)
{
	emu_train_cfg c;
	tiny(&c, "fp32");
	c.arch = (emu_train_arch)_i;
	emu_train *t;
	double *g = truth_grads(&c, &t);
	size_t k = 0, checked = 0;
	double worst = 0;
	for (size_t i = 0; i < emu_train_ntensors(t); i++) {
		double *v, *gr;
		size_t n;
		const char *name = emu_train_tensor(t, i, &v, &gr, &n);
		/* every element of the small tensors, 6 spread over the large */
		size_t stride = n <= 16 ? 1 : n / 6;
		for (size_t j = 0; j < n; j += stride) {
			double x = v[j], h = 1e-5;
			v[j] = x + h;
			double lp = emu_train_eval(t, false, 0);
			v[j] = x - h;
			double lm = emu_train_eval(t, false, 0);
			v[j] = x;
			double fd = (lp - lm) / (2 * h), an = g[k + j];
			double err = fabs(fd - an);
			if (err > worst)
				worst = err;
			ck_assert_msg(err <= 1e-8 + 1e-6 * fabs(an),
			              "%s[%zu]: central difference %.12g, backward %.12g", name, j,
			              fd, an);
			checked++;
		}
		k += n;
	}
	printf("train: %s: %zu gradients of the truth backend agree with central differences "
	       "(worst |error| %.3g)\n",
	       emu_train_arch_name(c.arch), checked, worst);
	t_count("train gradients vs central differences", checked);
	free(g);
	emu_train_free(t);
}
END_TEST

START_TEST(test_grad_fp32)
{
	emu_train_cfg c;
	tiny(&c, "fp32");
	c.arch = (emu_train_arch)_i;
	emu_train *tt;
	double *g = truth_grads(&c, &tt);
	emu_train_free(tt);
	tiny(&c, "fp32");
	c.arch = (emu_train_arch)_i;
	emu_train *t = make(&c);
	emu_train_grad(t);
	size_t k = 0;
	double worst = 0;
	for (size_t i = 0; i < emu_train_ntensors(t); i++) {
		double *v, *gr, num = 0, den = 0;
		size_t n;
		const char *name = emu_train_tensor(t, i, &v, &gr, &n);
		for (size_t j = 0; j < n; j++) {
			num += (gr[j] - g[k + j]) * (gr[j] - g[k + j]);
			den += g[k + j] * g[k + j];
		}
		double rel = den > 0 ? sqrt(num / den) : sqrt(num);
		if (rel > worst)
			worst = rel;
		/* fp32's unit roundoff is 6e-8; a few hundred roundings deep */
		ck_assert_msg(rel < 2e-5, "%s: fp32 gradient relative error %.3g", name, rel);
		k += n;
	}
	printf("train: %s: fp32 gradients against the true ones: worst relative error %.3g "
	       "(norm of a tensor's error over its norm)\n",
	       emu_train_arch_name(c.arch), worst);
	free(g);
	emu_train_free(t);
}
END_TEST

static void same_rows(const emu_train_row *a, const emu_train_row *b, const char *pol, size_t s)
{
	ck_assert_msg(!memcmp(&a->loss, &b->loss, sizeof a->loss) &&
	                  !memcmp(&a->grad_norm, &b->grad_norm, sizeof a->grad_norm),
	              "%s step %zu: loss %.17g / %.17g, |g| %.17g / %.17g", pol, s, a->loss,
	              b->loss, a->grad_norm, b->grad_norm);
	ck_assert_msg(a->overflow == b->overflow && a->underflow == b->underflow &&
	                  a->invalid == b->invalid && a->skipped == b->skipped &&
	                  a->scale == b->scale,
	              "%s step %zu: flags %llu/%llu %llu/%llu %llu/%llu", pol, s,
	              (unsigned long long)a->overflow, (unsigned long long)b->overflow,
	              (unsigned long long)a->underflow, (unsigned long long)b->underflow,
	              (unsigned long long)a->invalid, (unsigned long long)b->invalid);
}

START_TEST(test_fast_exact)
{
	uint64_t compared = 0;
	for (size_t p = 0; emu_train_presets[p]; p++) {
		emu_train_cfg c;
		tiny(&c, emu_train_presets[p]);
		c.arch = (emu_train_arch)_i;
		c.steps = 3;
		c.spike_step = 2, c.spike_factor = 3e4; /* overflow somewhere in the low formats */
		emu_train *f = make(&c);
		c.backend = EMU_BE_EXACT;
		emu_train *x = make(&c);
		for (size_t s = 1; s <= c.steps; s++) {
			emu_train_row rf, rx;
			ck_assert(emu_train_step(f, &rf) == 0 && emu_train_step(x, &rx) == 0);
			same_rows(&rf, &rx, emu_train_presets[p], s);
			size_t nl;
			const emu_train_lstat *lf = emu_train_lstats(f, &nl),
			                      *lx = emu_train_lstats(x, &nl);
			for (size_t i = 0; i < nl; i++)
				ck_assert(lf[i].ops == lx[i].ops &&
				          lf[i].overflow == lx[i].overflow &&
				          lf[i].underflow == lx[i].underflow &&
				          lf[i].nan == lx[i].nan && lf[i].inf == lx[i].inf &&
				          !memcmp(&lf[i].amax, &lx[i].amax, sizeof lf[i].amax));
		}
		for (size_t i = 0; i < emu_train_ntensors(f); i++) {
			double *vf, *gf, *vx, *gx;
			size_t n;
			emu_train_tensor(f, i, &vf, &gf, &n);
			emu_train_tensor(x, i, &vx, &gx, &n);
			for (size_t j = 0; j < n; j++)
				ck_assert_msg((isnan(vf[j]) && isnan(vx[j])) ||
				                  !memcmp(&vf[j], &vx[j], sizeof vf[j]),
				              "%s: parameter %zu.%zu %.17g (fast) %.17g (exact)",
				              emu_train_presets[p], i, j, vf[j], vx[j]);
			compared += n;
		}
		const emu_train_fail *ff = emu_train_first_fail(f), *fx = emu_train_first_fail(x);
		ck_assert(ff->set == fx->set && ff->step == fx->step &&
		          ff->element == fx->element && !strcmp(ff->site, fx->site) &&
		          ff->flags == fx->flags);
		ck_assert_str_eq(ff->chain, fx->chain);
		emu_train_free(f);
		emu_train_free(x);
	}
	t_count("train parameters fast == exact after 3 steps", compared);
}
END_TEST

START_TEST(test_spike)
{
	emu_train_cfg c;
	char err[200];
	tiny(&c, "fp16-pure");
	ck_assert(emu_train_policy_set(&c.pol, "state=fp32", err, sizeof err) == 0);
	c.spike_step = 2, c.spike_factor = 1e6;
	emu_train *t = make(&c);
	emu_train_row r;
	ck_assert(emu_train_step(t, &r) == 0 && isfinite(r.loss));
	ck_assert(!emu_train_first_fail(t)->nonfinite_set);
	ck_assert(!emu_train_first_fail(t)->set);
	ck_assert(emu_train_step(t, &r) == 0);
	ck_assert(!isfinite(r.loss));
	const emu_train_fail *f = emu_train_first_fail(t);
	ck_assert(f->set && f->step == 2);
	ck_assert_str_eq(f->site, "loss.spike");
	ck_assert(f->flags & EMU_FLAG_OVERFLOW);
	ck_assert(f->nonfinite_set && f->nonfinite_step == 2);
	ck_assert_msg(strstr(f->chain, "loss.spike") != NULL, "%s", f->chain);
	emu_train_free(t);
	/* the same run in fp32: a large but finite loss */
	tiny(&c, "fp32");
	c.spike_step = 2, c.spike_factor = 1e6;
	t = make(&c);
	ck_assert(emu_train_step(t, &r) == 0 && emu_train_step(t, &r) == 0);
	ck_assert(isfinite(r.loss) && r.loss > 100);
	ck_assert(!emu_train_first_fail(t)->nonfinite_set);
	emu_train_free(t);
}
END_TEST

/* fp16-pure's AdamW: v underflows, eps = 1e-8 is lost when denom is stored
 * in fp16, m / 0 is inf: the first failing operation is the optimizer's
 * division at step 1, and the parameters it wrote are inf */
START_TEST(test_fp16_adam_eps)
{
	emu_train_cfg c;
	tiny(&c, "fp16-pure");
	emu_train *t = make(&c);
	emu_train_row r;
	ck_assert(emu_train_step(t, &r) == 0 && isfinite(r.loss));
	const emu_train_fail *f = emu_train_first_fail(t);
	ck_assert(f->set && f->step == 1);
	ck_assert_str_eq(f->site, "optimizer.step");
	ck_assert(f->flags & EMU_FLAG_DIVBYZERO);
	ck_assert_msg(f->param[0] != '\0', "no parameter named");
	ck_assert(r.nonfinite_params > 0);
	ck_assert(emu_train_step(t, &r) == 0 && isnan(r.loss));
	emu_train_free(t);
	/* with fp32 states the same run is finite */
	char err[200];
	tiny(&c, "fp16-pure");
	ck_assert(emu_train_policy_set(&c.pol, "state=fp32", err, sizeof err) == 0);
	t = make(&c);
	for (int s = 0; s < 3; s++)
		ck_assert(emu_train_step(t, &r) == 0 && isfinite(r.loss) &&
		          r.nonfinite_params == 0);
	emu_train_free(t);
}
END_TEST

START_TEST(test_scaler_skips)
{
	emu_train_cfg c;
	tiny(&c, "fp16-amp");
	c.gs.init_scale = 0x1p40; /* scaled gradients overflow fp16 */
	c.steps = 40;
	emu_train *t = make(&c);
	size_t skipped = 0, first_ok = 0;
	double *v, *g;
	size_t n;
	emu_train_tensor(t, 0, &v, &g, &n);
	double *before = malloc(n * sizeof *before);
	ck_assert(before != NULL);
	for (size_t s = 1; s <= c.steps; s++) {
		memcpy(before, v, n * sizeof *before);
		emu_train_row r;
		ck_assert(emu_train_step(t, &r) == 0);
		/* no growth within the interval: each skip halves the scale */
		ck_assert(r.scale == ldexp(1, 40 - (int)skipped));
		ck_assert(isfinite(r.loss));
		if (r.skipped) {
			ck_assert(!memcmp(before, v, n * sizeof *before));
			skipped++;
		} else {
			ck_assert(memcmp(before, v, n * sizeof *before));
			if (!first_ok)
				first_ok = s;
		}
	}
	/* fp16's largest finite is 65504 ≈ 2^16: the scale falls to about
	 * 2^16 / (the largest unscaled gradient) before a step lands */
	ck_assert_msg(first_ok > 10 && first_ok < 30, "first step taken: %zu", first_ok);
	printf("train: fp16-amp from scale 2^40: %zu of 40 steps skipped, the first step taken "
	       "is %zu\n",
	       skipped, first_ok);
	free(before);
	emu_train_free(t);
}
END_TEST

START_TEST(test_reproducible)
{
	emu_train_cfg c;
	tiny(&c, "bf16");
	emu_train *a = make(&c), *b = make(&c);
	c.seed = 2;
	emu_train *d = make(&c);
	emu_train_row ra, rb, rd;
	for (int s = 0; s < 3; s++) {
		ck_assert(emu_train_step(a, &ra) == 0 && emu_train_step(b, &rb) == 0 &&
		          emu_train_step(d, &rd) == 0);
		ck_assert(!memcmp(&ra.loss, &rb.loss, sizeof ra.loss));
		ck_assert(ra.loss != rd.loss);
	}
	emu_train_free(a);
	emu_train_free(b);
	emu_train_free(d);
}
END_TEST

START_TEST(test_bad_settings)
{
	emu_train_cfg c;
	char err[300];
	emu_train_policy p;
	ck_assert(emu_train_policy_preset("fp17", &p, err, sizeof err) != 0);
	ck_assert(strstr(err, "fp16-amp") != NULL);
	ck_assert(emu_train_policy_preset("fp32", &p, err, sizeof err) == 0);
	ck_assert(emu_train_policy_set(&p, "weights=fp16", err, sizeof err) != 0);
	ck_assert(strstr(err, "unknown role") != NULL);
	ck_assert(emu_train_policy_set(&p, "accum=fp99", err, sizeof err) != 0);
	ck_assert(emu_train_policy_set(&p, "accum", err, sizeof err) != 0);
	ck_assert(emu_train_policy_set(&p, "accum=fp16", err, sizeof err) == 0);
	tiny(&c, "fp32");
	c.pol = p; /* fp32 GEMM values do not fit an fp16 accumulator */
	ck_assert(emu_train_new(&c, err, sizeof err) == NULL);
	ck_assert_msg(strstr(err, "accum") != NULL, "%s", err);
	tiny(&c, "fp32");
	c.heads = 3;
	ck_assert(emu_train_new(&c, err, sizeof err) == NULL);
	ck_assert(strstr(err, "--heads") != NULL);
	tiny(&c, "fp32");
	c.task = EMU_TASK_TEXT, c.vocab = 256, c.text = (const unsigned char *)"abc",
	c.text_len = 3;
	ck_assert(emu_train_new(&c, err, sizeof err) == NULL);
	ck_assert(strstr(err, "--text") != NULL);
	tiny(&c, "fp32");
	ck_assert(emu_train_policy_set(&c.pol, "act=e2m1", err, sizeof err) == 0);
	ck_assert(emu_train_new(&c, err, sizeof err) == NULL);
	ck_assert(strstr(err, "NaN") != NULL);
}
END_TEST

/* The tasks make the sequences they say: copy, reverse, sort, modadd. */
START_TEST(test_learns_copy)
{
	emu_train_cfg c;
	tiny(&c, "fp32");
	c.d = 16, c.seq = 8, c.batch = 8, c.steps = 150, c.lr = 3e-3, c.warmup = 5;
	emu_train *t = make(&c);
	double first = emu_train_eval(t, true, 0);
	emu_train_row r;
	for (size_t s = 0; s < c.steps; s++)
		ck_assert(emu_train_step(t, &r) == 0);
	double last = emu_train_eval(t, true, 0);
	printf("train: copy task, validation loss %.4f -> %.4f in %zu steps\n", first, last,
	       c.steps);
	ck_assert_msg(last < 0.8 * first, "validation loss %g -> %g", first, last);
	emu_train_free(t);
}
END_TEST

/* The recipes quantise the blocks' linear layers: nvfp4 and mxfp8 part from
 * bf16 by a little, their quantisers' saturations are counted, and the
 * truth backend refuses them. */
/* --flat: a near-constant batch at step 2. eps 1e-8 is 0 in fp16, so the
 * variance 1e-9 (0 in fp16 too) gives rsqrt(0): the first failing
 * operation is layer0.ln1.rsqrt's divbyzero and the loss is NaN; eps 1e-5
 * (a subnormal in fp16) keeps the same run finite */
START_TEST(test_flat_batch)
{
	emu_train_cfg c;
	char err[200];
	for (int e = 0; e < 2; e++) {
		tiny(&c, "fp16-pure");
		ck_assert(emu_train_policy_set(&c.pol, "state=fp32", err, sizeof err) == 0);
		c.flat_step = 2, c.flat_var = 1e-9, c.ln_eps = e ? 1e-5 : 1e-8;
		emu_train *t = make(&c);
		emu_train_row r;
		ck_assert(emu_train_step(t, &r) == 0 && isfinite(r.loss));
		ck_assert(emu_train_step(t, &r) == 0);
		const emu_train_fail *f = emu_train_first_fail(t);
		if (e) {
			ck_assert(isfinite(r.loss) && !f->set);
		} else {
			ck_assert(isnan(r.loss));
			ck_assert(f->set && f->step == 2);
			ck_assert_str_eq(f->site, "layer0.ln1.rsqrt");
			ck_assert(f->flags & EMU_FLAG_DIVBYZERO);
		}
		emu_train_free(t);
	}
	/* the batch really is near-constant: fp32 sees the variance it was given */
	tiny(&c, "fp32");
	c.flat_step = 1, c.flat_var = 1e-6;
	emu_train *t = make(&c);
	emu_train_row r;
	ck_assert(emu_train_step(t, &r) == 0 && isfinite(r.loss));
	emu_train_free(t);
}
END_TEST

/* --loss-weight k: every gradient times k. In bf16 a power-of-two loss
 * scale is exact where nothing underflows, so GradScaler changes no bit of
 * a bf16-pure run, at k = 1 and at k = 1e-6 alike; fp16-pure loses
 * gradients to underflow at k = 1e-6 (at k = 1 already, its subnormal
 * ones) and its scaled run differs */
START_TEST(test_loss_weight)
{
	emu_train_cfg c;
	char err[200];
	static const char *const pol[2] = {"bf16-pure:state=fp32", "fp16-pure:state=fp32"};
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 2; k++) {
			double *P[2];
			size_t n = 0;
			for (int sc = 0; sc < 2; sc++) {
				tiny(&c, "fp32");
				ck_assert(emu_train_policy_parse(pol[p], &c.pol, err, sizeof err) ==
				          0);
				c.pol.scaler = sc;
				c.loss_weight = k ? 1e-6 : 1;
				c.eps = 1e-30;
				c.gs.init_scale = 1024; /* no scaled gradient overflows */
				emu_train *t = make(&c);
				emu_train_row r;
				for (int s = 0; s < 3; s++)
					ck_assert(emu_train_step(t, &r) == 0 && !r.skipped);
				n = 0;
				for (size_t i = 0; i < emu_train_ntensors(t); i++) {
					size_t cnt;
					double *v, *g;
					emu_train_tensor(t, i, &v, &g, &cnt);
					n += cnt;
				}
				P[sc] = malloc(n * sizeof *P[sc]);
				ck_assert(P[sc] != NULL);
				n = 0;
				for (size_t i = 0; i < emu_train_ntensors(t); i++) {
					size_t cnt;
					double *v, *g;
					emu_train_tensor(t, i, &v, &g, &cnt);
					memcpy(P[sc] + n, v, cnt * sizeof *v);
					n += cnt;
				}
				emu_train_free(t);
			}
			size_t diff = 0;
			for (size_t i = 0; i < n; i++)
				diff += memcmp(&P[0][i], &P[1][i], sizeof(double)) != 0;
			if (p == 0)
				ck_assert_msg(diff == 0, "%s k=%d: %zu of %zu parameters differ",
				              pol[p], k, diff, n);
			else if (k) /* (at k = 1 fp16's subnormal gradients differ too) */
				ck_assert_msg(diff > 0, "%s k=1e-6: scaling changed nothing",
				              pol[p]);
			free(P[0]);
			free(P[1]);
		}
}
END_TEST

/* a training run as a sweep point (emu_kernel_train): hundreds of steps on
 * one backend (its constants are a pass's, not the run's), and the
 * summaries after the run */
START_TEST(test_kernel_run)
{
	emu_policy pol;
	char err[300];
	ck_assert(emu_policy_parse("storage=fp32", &pol, err, sizeof err) == EMU_OK);
	emu_kparam ps[] = {{"steps", 300}, {"d_model", 8}, {"seq", 4},
	                   {"batch", 2},   {"vocab", 6},   {"scaler_init", 1e30}};
	double x = 1;
	emu_kin in = {&x, 1, 1, ps, sizeof ps / sizeof *ps, 1, NULL, 0};
	emu_run r;
	ck_assert_msg(emu_run_kernel(&emu_kernel_train, &pol, "fp16-amp", &in, EMU_BE_FAST, &r, err,
	                             sizeof err) == 0,
	              "%s", err);
	double skips = NAN, val = NAN, ovf = NAN, lastskip = 0;
	for (int i = 0; i < r.out.n; i++) {
		const emu_kout_item *it = &r.out.item[i];
		if (!strcmp(it->name, "skips"))
			skips = emu_vget(&r.be, it->vec, 0);
		else if (!strcmp(it->name, "val_loss"))
			val = emu_vget(&r.be, it->vec, 0);
		else if (!strcmp(it->name, "overflows"))
			ovf = emu_vget(&r.be, it->vec, 0);
		else if (!strcmp(it->name, "skipped"))
			for (size_t s = 0; s < it->n; s++)
				lastskip += emu_vget(&r.be, it->vec, s);
	}
	/* from a scale of 1e30 the scaler skips until the scaled gradients fit */
	ck_assert_msg(skips >= 1 && skips == lastskip, "skips %g, per step %g", skips, lastskip);
	ck_assert(ovf >= skips);
	ck_assert(isfinite(val) && val > 0 && val < 3);
	emu_run_free(&r);
}
END_TEST

/* fast == exact at model scale: the default model (26,496 parameters) in
 * the state after step 1, its step 2 replayed on both backends
 * (emu_train_adopt, as --replay does): loss, gradient norm, flag counts
 * and every parameter the same bits */
START_TEST(test_replay_model_scale)
{
	static const char *const pol[] = {"fp16-amp", "bf16", "nvfp4"};
	char err[300];
	for (size_t k = 0; k < sizeof pol / sizeof *pol; k++) {
		emu_train_cfg c;
		emu_train_cfg_default(&c);
		c.val_every = 0;
		ck_assert(emu_train_policy_preset(pol[k], &c.pol, err, sizeof err) == 0);
		emu_train *p = make(&c);
		emu_train_row r, rf, rx;
		ck_assert(emu_train_step(p, &r) == 0);
		emu_train *tf = make(&c);
		c.backend = EMU_BE_EXACT;
		emu_train *tx = make(&c);
		size_t ch = 1;
		ck_assert(emu_train_adopt(tf, p, &ch, err, sizeof err) == 0 && ch == 0);
		ck_assert(emu_train_adopt(tx, p, &ch, err, sizeof err) == 0 && ch == 0);
		ck_assert(emu_train_step(tf, &rf) == 0 && emu_train_step(tx, &rx) == 0);
		ck_assert(emu_train_step(p, &r) == 0); /* the run's own step 2 */
		same_rows(&rf, &rx, pol[k], 2);
		same_rows(&rf, &r, pol[k], 2);
		size_t n = 0;
		for (size_t i = 0; i < emu_train_ntensors(tf); i++) {
			double *a, *b, *g;
			size_t na, nb;
			emu_train_tensor(tf, i, &a, &g, &na);
			emu_train_tensor(tx, i, &b, &g, &nb);
			ck_assert(na == nb && memcmp(a, b, na * sizeof *a) == 0);
			n += na;
		}
		ck_assert_uint_eq(n, 26496);
		t_count("train replay fast == exact, default model", n);
		emu_train_free(p);
		emu_train_free(tf);
		emu_train_free(tx);
	}
	/* another model's state is refused */
	emu_train_cfg c;
	tiny(&c, "fp32");
	emu_train *a = make(&c);
	c.d = 16;
	emu_train *b = make(&c);
	ck_assert(emu_train_adopt(b, a, NULL, err, sizeof err) != 0);
	emu_train_free(a);
	emu_train_free(b);
}
END_TEST

/* fp8-delayed: the scales come from the amax history of earlier steps, so
 * the history is part of the state: a run saved at step 3 and resumed to
 * step 5 gives the same parameters as a run of 5 steps, and a replay
 * (emu_train_adopt) the same step. At step 1 the history is empty (scale
 * 1); the gradients' copies are e5m2 (HYBRID) */
START_TEST(test_fp8_delayed_state)
{
	char err[300], path[] = "/tmp/nanmap-train-XXXXXX";
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	close(fd);
	emu_train_cfg c;
	tiny(&c, "fp8-delayed");
	c.steps = 5;
	emu_train *a = make(&c), *b = make(&c), *r = make(&c);
	emu_train_row ra, rb, rr;
	for (int s = 0; s < 3; s++)
		ck_assert(emu_train_step(a, &ra) == 0);
	ck_assert_msg(emu_train_save(a, path, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(emu_train_load(b, path, err, sizeof err) == 0, "%s", err);
	ck_assert(emu_train_adopt(r, a, NULL, err, sizeof err) == 0);
	ck_assert(emu_train_step(r, &rr) == 0);
	for (int s = 0; s < 2; s++) {
		ck_assert(emu_train_step(a, &ra) == 0 && emu_train_step(b, &rb) == 0);
		if (s == 0)
			same_rows(&ra, &rr, "fp8-delayed replay", 4);
	}
	same_rows(&ra, &rb, "fp8-delayed", 5);
	for (size_t i = 0; i < emu_train_ntensors(a); i++) {
		double *va, *vb, *g;
		size_t n;
		emu_train_tensor(a, i, &va, &g, &n);
		emu_train_tensor(b, i, &vb, &g, &n);
		ck_assert(!memcmp(va, vb, n * sizeof *va));
	}
	emu_train_free(a);
	emu_train_free(b);
	emu_train_free(r);
	unlink(path);
}
END_TEST

/* golden/train/: every preset's and architecture's golden run (3 steps of
 * the tiny model, emu_train_golden) rebuilt here gives the committed file's
 * bytes (nanmap golden update writes them) */
static char *slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *b = NULL;
	size_t cap = 0, n = 0, got;
	do {
		if (n == cap) {
			char *nb = realloc(b, cap = cap ? 2 * cap : 65536);
			ck_assert(nb != NULL);
			b = nb;
		}
		got = fread(b + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	fclose(f);
	*len = n;
	return b;
}

START_TEST(test_golden_runs)
{
	char dir[] = "/tmp/nanmap-golden-train-XXXXXX", err[300];
	ck_assert(mkdtemp(dir) != NULL);
	size_t runs = 0, bytes = 0;
	for (size_t p = 0; emu_train_presets[p]; p++)
		for (int a = 0; a < 2; a++) {
			char mine[256], want[256];
			const char *arch = emu_train_arch_name((emu_train_arch)a);
			snprintf(mine, sizeof mine, "%s/%s-%s.safetensors", dir,
			         emu_train_presets[p], arch);
			snprintf(want, sizeof want, "golden/train/%s-%s.safetensors",
			         emu_train_presets[p], arch);
			emu_train_cfg c;
			ck_assert(emu_train_golden_cfg(&c, emu_train_presets[p], (emu_train_arch)a,
			                               err, sizeof err) == 0);
			ck_assert_msg(emu_train_golden(&c, mine, err, sizeof err) == 0, "%s", err);
			size_t la, lb;
			char *x = slurp_file(mine, &la), *y = slurp_file(want, &lb);
			ck_assert_msg(y != NULL, "%s missing (run from the repository root)", want);
			ck_assert_msg(x && la == lb && !memcmp(x, y, la),
			              "%s differs from a fresh run (if the trainer changed on "
			              "purpose: nanmap golden update)",
			              want);
			bytes += la;
			runs++;
			free(x);
			free(y);
			unlink(mine);
		}
	rmdir(dir);
	t_count("train golden runs reproduced byte for byte", runs);
	(void)bytes;
}
END_TEST

START_TEST(test_scaled_presets)
{
	const char *pols[] = {"bf16", "mxfp8", "nvfp4", "fp8-current"};
	double loss[4];
	uint64_t sat[4];
	for (int p = 0; p < 4; p++) {
		emu_train_cfg c;
		tiny(&c, pols[p]);
		c.d = 32, c.seq = 16, c.batch = 4; /* K = 32, 128: whole MX blocks */
		emu_train *t = make(&c);
		emu_train_row r;
		sat[p] = 0;
		for (int s = 0; s < 5; s++) {
			ck_assert(emu_train_step(t, &r) == 0);
			sat[p] += r.overflow;
		}
		loss[p] = r.loss;
		emu_train_free(t);
	}
	for (int p = 1; p < 4; p++) {
		ck_assert_msg(loss[p] != loss[0] && fabs(loss[p] - loss[0]) < 0.05,
		              "%s: loss %.9g, bf16 %.9g", pols[p], loss[p], loss[0]);
		printf("train: 5 steps, %s loss %.6f against bf16 %.6f\n", pols[p], loss[p],
		       loss[0]);
	}
	ck_assert(sat[0] == 0 && sat[2] > 0); /* NVFP4's e2m1 saturates at 6 */
	emu_train_cfg c;
	char err[300];
	tiny(&c, "nvfp4");
	c.backend = EMU_BE_TRUTH;
	ck_assert(emu_train_new(&c, err, sizeof err) == NULL);
	ck_assert(strstr(err, "truth") != NULL);
}
END_TEST

Suite *suite_train(void)
{
	Suite *s = suite_create("train");
	TCase *tc = tcase_create("train");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_grad_central_differences, 0, 2);
	tcase_add_loop_test(tc, test_grad_fp32, 0, 2);
	tcase_add_loop_test(tc, test_fast_exact, 0, 2);
	tcase_add_test(tc, test_spike);
	tcase_add_test(tc, test_fp16_adam_eps);
	tcase_add_test(tc, test_scaler_skips);
	tcase_add_test(tc, test_reproducible);
	tcase_add_test(tc, test_bad_settings);
	tcase_add_test(tc, test_learns_copy);
	tcase_add_test(tc, test_scaled_presets);
	tcase_add_test(tc, test_flat_batch);
	tcase_add_test(tc, test_loss_weight);
	tcase_add_test(tc, test_kernel_run);
	tcase_add_test(tc, test_replay_model_scale);
	tcase_add_test(tc, test_fp8_delayed_state);
	tcase_add_test(tc, test_golden_runs);
	suite_add_tcase(s, tc);
	return s;
}
