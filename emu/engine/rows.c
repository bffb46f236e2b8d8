/*
 * rows.c — a kernel's rows on several threads, with the bits of one.
 *
 * A kernel's row loop is cut into contiguous parts, one per thread, each run
 * on a backend of its own forked from the kernel's (the same kind,
 * environment, step names, GPU tables and truth switches; counts and
 * vectors of its own). The parts read the kernel's inputs and write its
 * outputs in place (different rows, different elements); what they counted
 * is then added to the kernel's backend part by part, in row order. Every
 * value is the one a single thread computes (an operation's rounding,
 * stochastic rounding's draw included, depends only on its operands, step
 * and element), and so is every count: sums, the flags' OR, the largest
 * range peak, and the first failing operation, which is the first part's
 * that has one. tests/engine/check_rows.c compares 1, 2 and 7 threads byte
 * for byte.
 */
#include <math.h>
#include <stdlib.h>

#include "emu/engine/kern.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* the fewest operations a part is given (a thread's start and the parts'
 * scratch cost about as much as a few thousand fast operations); MPFR's
 * operations are about 30 times slower */
static uint64_t min_work = 1u << 16;

void emu_rows_min_work(uint64_t ops)
{
	min_work = ops ? ops : 1;
}

int emu_threads(void)
{
#ifdef _OPENMP
	return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
	return 1; /* built without OpenMP (the fuzz harnesses): one thread */
#endif
}

/* a backend for one part: be's settings, nothing counted, no vectors */
static void fork_be(emu_be *sub, const emu_be *be)
{
	emu_be_init(sub, be->kind, &be->env);
	sub->env.index = be->env.index;
	sub->range = be->range;
	sub->exact_inputs = be->exact_inputs;
	sub->range_peak = -INFINITY;
	sub->tables = be->tables;
	sub->td = be->td; /* the owner's, freed by it */
	emu_steps(sub, be->step_names, be->nstep_names);
}

size_t emu_rows_parts(const emu_be *be, size_t R, uint64_t per_row)
{
	uint64_t least = be->kind == EMU_BE_FAST ? min_work : (min_work + 31) / 32;
	if (per_row == 0)
		per_row = 1;
	size_t grain = (size_t)((least + per_row - 1) / per_row);
	if (R / grain < 2) /* too little for two parts: no need to ask OpenMP */
		return 1;
	size_t T = (size_t)emu_threads();
	if (T > R / grain)
		T = R / grain;
	if (T > EMU_MAX_PARTS)
		T = EMU_MAX_PARTS;
	return T ? T : 1;
}

int emu_rows(emu_be *be, size_t R, uint64_t per_row, emu_rows_fn fn, void *arg)
{
	size_t T = emu_rows_parts(be, R, per_row);
	if (T <= 1)
		return fn(be, 0, R, arg);
	emu_be *sub = calloc(T, sizeof *sub);
	int *rc = calloc(T, sizeof *rc);
	if (!sub || !rc) {
		free(sub);
		free(rc);
		return -1;
	}
	for (size_t p = 0; p < T; p++)
		fork_be(&sub[p], be);
#pragma omp parallel for schedule(static, 1) num_threads((int)T)
	for (size_t p = 0; p < T; p++)
		rc[p] = fn(&sub[p], R * p / T, R * (p + 1) / T, arg);
	int ret = 0;
	for (size_t p = 0; p < T; p++) {
		if (rc[p] != 0)
			ret = -1;
		emu_be_stats_add(&be->st, &sub[p].st);
		if (sub[p].range_peak > be->range_peak)
			be->range_peak = sub[p].range_peak;
		emu_be_free(&sub[p]);
	}
	free(sub);
	free(rc);
	return ret;
}
