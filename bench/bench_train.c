/*
 * bench_train.c — table 11: whole training steps (emu/train/train.c) of the
 * default model (2 layers, d 32, 26,496 parameters, batch 4 × 16 tokens)
 * on the fast backend under each preset, and the exact backend under bf16
 * on a smaller model, as steps per second and as ratios taken in the same
 * run: each preset against fp32 on the fast backend (what a format's
 * emulation costs), and fast against exact.
 *
 * Then table 11b: the same trainer against its native-float twin
 * (bench/train_native.c: plain C float, the same model, initialisation,
 * batches and order of operations), on the default model and on a
 * ~100k-parameter one (2 layers, d 64, 4 heads: 102,144 parameters): steps
 * per second of the native path and of the fast backend under fp32, bf16
 * and nvfp4, each over the native one (samples interleaved, the thread's
 * CPU seconds, best of reps), and the bytes a trainer holds per parameter:
 * the peak of the heap bytes in use (malloc_usable_size of every block,
 * counted through the wrapped allocation functions, the Makefile's
 * BENCH_WRAP) while it is created, takes one step and is freed; and those
 * it keeps between steps. PyTorch's CPU step is not measured here (a skip
 * on stderr says why). stderr also splits a step into forward, backward and
 * the rest (the optimizer and bookkeeping).
 */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/train_native.h"
#include "emu/train/train.h"

void bench_train(int reps);
void bench_train_native(int reps);

/* ---- heap bytes in use: the allocation functions, wrapped ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static int mem_on;                  /* counting */
static long long mem_cur, mem_peak; /* bytes in use since counting began, and the peak */

static void mem_add(void *p)
{
	if (!p || !__atomic_load_n(&mem_on, __ATOMIC_RELAXED))
		return;
	long long c =
	    __atomic_add_fetch(&mem_cur, (long long)malloc_usable_size(p), __ATOMIC_RELAXED);
	long long pk = __atomic_load_n(&mem_peak, __ATOMIC_RELAXED);
	while (c > pk && !__atomic_compare_exchange_n(&mem_peak, &pk, c, true, __ATOMIC_RELAXED,
	                                              __ATOMIC_RELAXED))
		;
}
static void mem_sub(void *p)
{
	if (p && __atomic_load_n(&mem_on, __ATOMIC_RELAXED))
		__atomic_sub_fetch(&mem_cur, (long long)malloc_usable_size(p), __ATOMIC_RELAXED);
}

void *__wrap_malloc(size_t n)
{
	void *p = __real_malloc(n);
	mem_add(p);
	return p;
}
void *__wrap_calloc(size_t k, size_t n)
{
	void *p = __real_calloc(k, n);
	mem_add(p);
	return p;
}
void *__wrap_realloc(void *q, size_t n)
{
	long long old =
	    q && __atomic_load_n(&mem_on, __ATOMIC_RELAXED) ? (long long)malloc_usable_size(q) : 0;
	void *p = __real_realloc(q, n);
	if (p || !n) { /* q is gone (moved, resized or freed) */
		__atomic_sub_fetch(&mem_cur, old, __ATOMIC_RELAXED);
		mem_add(p);
	}
	return p;
}
void __wrap_free(void *p)
{
	mem_sub(p);
	__real_free(p);
}

static void mem_start(void)
{
	mem_cur = mem_peak = 0;
	__atomic_store_n(&mem_on, 1, __ATOMIC_RELAXED);
}
static void mem_stop(void)
{
	__atomic_store_n(&mem_on, 0, __ATOMIC_RELAXED);
}

/* ---- timing ---- */

static double bt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bt_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* wall and thread CPU seconds of table 11b's timed samples */
static double bt_wall, bt_cpu_used;

static void bt_die(const char *err)
{
	fprintf(stderr, "bench: %s\n", err);
	exit(2);
}

static emu_train *bt_new(const emu_train_cfg *c)
{
	char err[300];
	emu_train *t = emu_train_new(c, err, sizeof err);
	if (!t)
		bt_die(err);
	return t;
}

/* best seconds a step over reps samples of n steps, on a fresh model */
static double bt_step(const char *policy, emu_be_kind be, bool small, size_t n, int reps)
{
	double best = INFINITY;
	for (int r = 0; r < reps; r++) {
		emu_train_cfg c;
		char err[300];
		emu_train_cfg_default(&c);
		c.val_every = 0;
		c.backend = be;
		if (small)
			c.layers = 1, c.d = 16, c.seq = 8, c.batch = 2;
		if (emu_train_policy_preset(policy, &c.pol, err, sizeof err) != 0)
			bt_die(err);
		emu_train *t = bt_new(&c);
		emu_train_row row;
		double t0 = bt_now();
		for (size_t s = 0; s < n; s++)
			if (emu_train_step(t, &row) != 0)
				bt_die("train: out of memory");
		double dt = (bt_now() - t0) / (double)n;
		if (dt < best)
			best = dt;
		emu_train_free(t);
	}
	return best;
}

/* ---- table 11b: against the native-float trainer ---- */

enum { BN_NATIVE, BN_FP32, BN_BF16, BN_NVFP4, BN_N };
static const char *const bn_paths[BN_N] = {"native-float", "fast-fp32", "fast-bf16", "fast-nvfp4"};
static const char *const bn_policy[BN_N] = {"fp32", "fp32", "bf16", "nvfp4"};

typedef struct {
	const char *name;
	size_t d, heads;
	size_t native_steps, emu_steps; /* timed steps a sample */
	bool all;                       /* bf16 and nvfp4 too */
} bn_model;

static void bn_cfg(const bn_model *m, int path, emu_train_cfg *c)
{
	char err[300];
	emu_train_cfg_default(c);
	c->val_every = 0;
	c->d = m->d, c->heads = m->heads;
	if (emu_train_policy_preset(bn_policy[path], &c->pol, err, sizeof err) != 0)
		bt_die(err);
}

/* CPU seconds a step of one sample: a fresh trainer, one untimed step (its
 * pages touched), then n timed steps; fwd/bwd/rest: a split of one step */
static double bn_sample(const bn_model *m, int path, double split[3])
{
	emu_train_cfg c;
	bn_cfg(m, path, &c);
	emu_train *ref = bt_new(&c);
	emu_train_row row;
	double t;
	if (path == BN_NATIVE) {
		char err[300];
		native_train *nt = native_train_new(&c, ref, false, err, sizeof err);
		if (!nt)
			bt_die(err);
		int *in = malloc(c.batch * c.seq * sizeof *in),
		    *tg = malloc(c.batch * c.seq * sizeof *tg);
		if (!in || !tg)
			bt_die("out of memory");
		native_row r;
		emu_train_batch(ref, false, 0, in, tg);
		native_train_step(nt, in, tg, &r);
		double f0, b0, o0, f1, b1, o1;
		native_train_times(nt, &f0, &b0, &o0);
		double c0 = bt_cpu(), w0 = bt_now();
		for (size_t s = 1; s <= m->native_steps; s++) {
			emu_train_batch(ref, false, s, in, tg);
			native_train_step(nt, in, tg, &r);
		}
		t = bt_cpu() - c0;
		bt_wall += bt_now() - w0;
		native_train_times(nt, &f1, &b1, &o1);
		double k = (double)m->native_steps;
		split[0] = (f1 - f0) / k, split[1] = (b1 - b0) / k, split[2] = (o1 - o0) / k;
		t /= k;
		free(in);
		free(tg);
		native_train_free(nt);
	} else {
		if (emu_train_step(ref, &row) != 0)
			bt_die("train: out of memory");
		double c0 = bt_cpu(), w0 = bt_now();
		for (size_t s = 0; s < m->emu_steps; s++)
			if (emu_train_step(ref, &row) != 0)
				bt_die("train: out of memory");
		t = bt_cpu() - c0;
		bt_wall += bt_now() - w0;
		t /= (double)m->emu_steps;
		/* the split, through the public calls: a forward alone
		 * (emu_train_eval), a forward and backward (emu_train_grad) */
		double e0 = bt_cpu();
		emu_train_eval(ref, false, 0);
		double e1 = bt_cpu();
		emu_train_grad(ref);
		double e2 = bt_cpu();
		split[0] = e1 - e0, split[1] = (e2 - e1) - (e1 - e0), split[2] = t - (e2 - e1);
	}
	bt_cpu_used += t * (double)(path == BN_NATIVE ? m->native_steps : m->emu_steps);
	emu_train_free(ref);
	return t;
}

/* heap bytes of one path: the peak while created, stepped once and freed,
 * and those held between steps (after creation and one step) */
static void bn_memory(const bn_model *m, int path, double *peak, double *held)
{
	emu_train_cfg c;
	bn_cfg(m, path, &c);
	emu_train *ref = bt_new(&c); /* the initial parameters and the batches: not counted */
	size_t np = emu_train_nparams(ref);
	int *in = malloc(c.batch * c.seq * sizeof *in), *tg = malloc(c.batch * c.seq * sizeof *tg);
	if (!in || !tg)
		bt_die("out of memory");
	emu_train_batch(ref, false, 0, in, tg);
	mem_start();
	long long after;
	if (path == BN_NATIVE) {
		char err[300];
		native_train *nt = native_train_new(&c, ref, false, err, sizeof err);
		if (!nt)
			bt_die(err);
		native_row r;
		native_train_step(nt, in, tg, &r);
		after = mem_cur;
		native_train_free(nt);
	} else {
		emu_train *t = bt_new(&c);
		emu_train_row row;
		if (emu_train_step(t, &row) != 0)
			bt_die("train: out of memory");
		after = mem_cur;
		emu_train_free(t);
	}
	mem_stop();
	*peak = (double)mem_peak / (double)np;
	*held = (double)after / (double)np;
	free(in);
	free(tg);
	emu_train_free(ref);
}

void bench_train_native(int reps)
{
	if (reps > 3)
		reps = 3;
	static const bn_model models[] = {{"default", 32, 2, 200, 5, false},
	                                  {"100k", 64, 4, 60, 3, true}};
	printf("model,params,path,steps_s,ms_step,ratio_native,bytes_param_peak,"
	       "bytes_param_held\n");
	for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
		const bn_model *m = &models[mi];
		int npath = m->all ? BN_N : BN_FP32 + 1;
		double best[BN_N], split[BN_N][3];
		for (int p = 0; p < npath; p++)
			best[p] = INFINITY;
		/* interleaved: native, fp32, bf16, nvfp4, native, ... */
		for (int r = 0; r < reps; r++)
			for (int p = 0; p < npath; p++) {
				double sp[3], t = bn_sample(m, p, sp);
				if (t < best[p]) {
					best[p] = t;
					memcpy(split[p], sp, sizeof sp);
				}
			}
		emu_train_cfg c;
		bn_cfg(m, BN_FP32, &c);
		emu_train *t = bt_new(&c);
		size_t np = emu_train_nparams(t);
		emu_train_free(t);
		for (int p = 0; p < npath; p++) {
			double peak, held;
			bn_memory(m, p, &peak, &held);
			printf("%s,%zu,%s,%.4g,%.4g,%.1f,%.1f,%.1f\n", m->name, np, bn_paths[p],
			       1 / best[p], 1e3 * best[p], best[p] / best[BN_NATIVE], peak, held);
			fprintf(stderr,
			        "bench: train: %s %s: %.3g ms a step: forward %.3g, backward %.3g, "
			        "the rest (optimizer, bookkeeping) %.3g\n",
			        m->name, bn_paths[p], 1e3 * best[p], 1e3 * split[p][0],
			        1e3 * split[p][1], 1e3 * split[p][2]);
		}
	}
	/* PyTorch is never a dependency: its step is measured only where it is
	 * installed, and this bench has no PyTorch side yet */
	int torch = system("python3 -c 'import torch' >/dev/null 2>&1");
	fprintf(stderr,
	        "bench: train: PyTorch's CPU float32 step: skipped (%s; the native path's goal is "
	        "within 2x of it)\n",
	        torch == 0 ? "PyTorch is installed, but this bench does not run it yet"
	                   : "PyTorch is not installed here");
	double share = bt_wall > 0 ? bt_cpu_used / bt_wall : 1;
	fprintf(stderr, "bench: train: the timed steps of table 11b got %.0f%% of a CPU%s\n",
	        100 * share,
	        share < 0.9 ? " -- other load on this machine: CPU times are less distorted than "
	                      "wall times, but rerun idle for final numbers"
	                    : "");
}

void bench_train(int reps)
{
	if (reps > 3)
		reps = 3;
	printf("model,policy,backend,steps_s,ms_step,ratio_fp32_fast\n");
	double base = bt_step("fp32", EMU_BE_FAST, false, 10, reps);
	for (size_t p = 0; emu_train_presets[p]; p++) {
		double s = !strcmp(emu_train_presets[p], "fp32")
		               ? base
		               : bt_step(emu_train_presets[p], EMU_BE_FAST, false, 10, reps);
		printf("default,%s,fast,%.3g,%.3g,%.3f\n", emu_train_presets[p], 1 / s, 1e3 * s,
		       base / s);
	}
	double fs = bt_step("bf16", EMU_BE_FAST, true, 10, reps),
	       xs = bt_step("bf16", EMU_BE_EXACT, true, 2, reps);
	printf("small,bf16,fast,%.3g,%.3g,\n", 1 / fs, 1e3 * fs);
	printf("small,bf16,exact,%.3g,%.3g,\n", 1 / xs, 1e3 * xs);
	fprintf(stderr, "bench: training steps, fast / exact under bf16 (small model): %.1fx\n",
	        xs / fs);
	printf("\n");
	bench_train_native(reps);
}
