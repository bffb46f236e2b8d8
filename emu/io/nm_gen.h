/*
 * nm_gen.h — the seeded input generator shared by `nanmap run --gen`, the
 * sweeps and the golden files. Element i depends only on (seed, i): it takes
 * the SplitMix64 outputs 2i+1 and 2i+2 of the stream started at `seed`
 * (docs/run.md gives the formulas), so any element is reproducible alone.
 */
#ifndef NANMAP_NM_GEN_H
#define NANMAP_NM_GEN_H

#include <stddef.h>
#include <stdint.h>

typedef enum { NM_GEN_NORMAL = 0, NM_GEN_UNIFORM, NM_GEN_LOGSPACE, NM_GEN_ONES, NM_GEN_NDIST } nm_gen_dist;

typedef struct {
	nm_gen_dist dist;
	double scale;  /* X: sd (normal), half-width (uniform), factor (logspace), value (ones) */
	double lo, hi; /* logspace: |x|/X log-uniform over [lo, hi] */
	uint64_t seed;
	/* outliers: element i is multiplied by outlier_k when the separate draw
	 * v_i (docs/run.md) is below outlier_frac; 0 and 0: none, every
	 * element as without them */
	double outlier_k, outlier_frac;
} nm_gen;

/* "normal", "uniform", "logspace", "ones"; NULL out of range. */
const char *nm_gen_dist_name(nm_gen_dist d);
/* The distribution named s; -1 when none is. */
int nm_gen_dist_parse(const char *s);
/* SplitMix64 output k+1 of the stream at state seed. */
uint64_t nm_gen_draw(uint64_t seed, uint64_t k);
/* Element i of the tensor g describes. */
double nm_gen_one(const nm_gen *g, uint64_t i);
/* Elements 0 … n−1 into x. */
void nm_gen_fill(const nm_gen *g, double *x, size_t n);

#endif
