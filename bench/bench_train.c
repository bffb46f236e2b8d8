/*
 * bench_train.c — table 11: whole training steps (emu/train/train.c) of the
 * default model (2 layers, d 32, 26,496 parameters, batch 4 × 16 tokens)
 * on the fast backend under each preset, and the exact backend under bf16
 * on a smaller model, as steps per second and as ratios taken in the same
 * run: each preset against fp32 on the fast backend (what a format's
 * emulation costs), and fast against exact.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu/train/train.h"

void bench_train(int reps);

static double bt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
		if (emu_train_policy_preset(policy, &c.pol, err, sizeof err) != 0) {
			fprintf(stderr, "bench: %s\n", err);
			exit(2);
		}
		emu_train *t = emu_train_new(&c, err, sizeof err);
		if (!t) {
			fprintf(stderr, "bench: %s\n", err);
			exit(2);
		}
		emu_train_row row;
		double t0 = bt_now();
		for (size_t s = 0; s < n; s++)
			if (emu_train_step(t, &row) != 0) {
				fprintf(stderr, "bench: train: out of memory\n");
				exit(2);
			}
		double dt = (bt_now() - t0) / (double)n;
		if (dt < best)
			best = dt;
		emu_train_free(t);
	}
	return best;
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
}
