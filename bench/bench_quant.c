/*
 * bench_quant.c — table 10: `nanmap quant`'s quantising path
 * (nm_quant_stream: the command's parts, NVFP4's amax pass, the quantiser
 * and the statistics; no file reading) on one thread over a 2^24-element
 * fp32 tensor (4096 × 4096, normal values rounded to fp32), for nvfp4 and
 * mxfp8 (act, row-wise), against memcpy of the tensor's 64 MiB of fp32
 * bytes timed in the same run:
 *   recipe,role,n,melem_s,memcpy_melem_s,ratio_memcpy
 * ratio_memcpy = elements/s of quant / elements/s of memcpy; best of reps
 * (at most 3: one quant sample is seconds), quant and memcpy alternating.
 * The command is not meant to be fast, only measured (docs/bench.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu/core/emu.h"
#include "emu/io/nm_gen.h"
#include "emu/cli/nm_quant.h"
#include "emu/recipes/recipe.h"

void bench_quant(int reps);

#define BQ_ROWS 4096u
#define BQ_COLS 4096u

static volatile double bq_sink;

static double bq_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *bq_alloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

void bench_quant(int reps)
{
	static const char *const recipes[] = {"nvfp4", "mxfp8"};
	size_t n = (size_t)BQ_ROWS * BQ_COLS;
	double *x = bq_alloc(n * sizeof(*x));
	float *f = bq_alloc(n * sizeof(*f)), *g = bq_alloc(n * sizeof(*g));
	nm_gen gen = {NM_GEN_NORMAL, 1, 0, 0, 1, 0, 0};

	if (reps > 3)
		reps = 3;
	for (size_t i = 0; i < n; i++) {
		f[i] = (float)nm_gen_one(&gen, i);
		x[i] = f[i]; /* the fp32 tensor, held exactly */
	}
	memcpy(g, f, n * sizeof(*f)); /* pages touched before timing */
	printf("recipe,role,n,melem_s,memcpy_melem_s,ratio_memcpy\n");
	for (size_t k = 0; k < sizeof(recipes) / sizeof(recipes[0]); k++) {
		emu_recipe r;
		char err[256];
		double best_q = INFINITY, best_m = INFINITY;
		if (emu_recipe_parse(recipes[k], &r, err, sizeof(err)) != EMU_OK) {
			fprintf(stderr, "bench: %s\n", err);
			exit(2);
		}
		for (int rep = 0; rep < reps; rep++) {
			emu_qstats st;
			double t0 = bq_now();
			memcpy(g, f, n * sizeof(*f));
			bq_sink += g[n / 3];
			double t1 = bq_now();
			if (nm_quant_stream(&r, EMU_ROLE_ACT, false, x, BQ_ROWS, BQ_COLS, 0, &st)) {
				fprintf(stderr, "bench: out of memory in quant\n");
				exit(2);
			}
			double t2 = bq_now();
			bq_sink += st.sqnr_db;
			best_m = fmin(best_m, t1 - t0);
			best_q = fmin(best_q, t2 - t1);
		}
		double q_eps = (double)n / best_q, m_eps = (double)n / best_m;
		printf("%s,act,%zu,%.2f,%.1f,%.5f\n", recipes[k], n, q_eps / 1e6, m_eps / 1e6,
		       q_eps / m_eps);
		fflush(stdout);
	}
	free(x);
	free(f);
	free(g);
}
