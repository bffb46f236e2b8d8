/* nm_gen.c — the seeded input generator (nm_gen.h). */
#include "emu/io/nm_gen.h"

#include "emu/core/draw.h"
#include "emu/core/emu.h"

#include <math.h>
#include <string.h>

static const char *const nm_gen_names[NM_GEN_NDIST] = {"normal", "uniform", "logspace", "ones"};

const char *nm_gen_dist_name(nm_gen_dist d)
{
	return (unsigned)d < NM_GEN_NDIST ? nm_gen_names[d] : NULL;
}

int nm_gen_dist_parse(const char *s)
{
	for (int d = 0; d < NM_GEN_NDIST; d++)
		if (strcmp(s, nm_gen_names[d]) == 0)
			return d;
	return -1;
}

uint64_t nm_gen_draw(uint64_t seed, uint64_t k)
{
	return emu_mix64(seed + (k + 1) * EMU_DRAW_PHI);
}

static double nm_gen_base(const nm_gen *g, uint64_t i)
{
	uint64_t r0 = nm_gen_draw(g->seed, 2 * i), r1 = nm_gen_draw(g->seed, 2 * i + 1);
	double u0 = emu_draw_unit(r0), u1 = emu_draw_unit(r1);

	switch (g->dist) {
	case NM_GEN_NORMAL: /* Box-Muller, the cosine half */
		return g->scale * emu_box_muller(1.0 - u0, u1);
	case NM_GEN_UNIFORM:
		return g->scale * (2.0 * u0 - 1.0);
	case NM_GEN_LOGSPACE: {
		double l0 = log2(g->lo), l1 = log2(g->hi);
		double m = exp2(l0 + u0 * (l1 - l0));
		return g->scale * ((r1 >> 63) ? -m : m);
	}
	default:
		return g->scale;
	}
}

/* The outlier draw keeps to its own stream (state seed ^ NM_GEN_OUTLIER_KEY,
 * output i + 1), so adding outliers never moves an element's value draws and
 * a tensor without them is the tensor it always was. */
#define NM_GEN_OUTLIER_KEY 0x6f75746c69657273ull /* "outliers" in ASCII */

double nm_gen_one(const nm_gen *g, uint64_t i)
{
	double x = nm_gen_base(g, i);

	if (g->outlier_frac > 0 &&
	    emu_draw_unit(nm_gen_draw(g->seed ^ NM_GEN_OUTLIER_KEY, i)) < g->outlier_frac)
		x *= g->outlier_k;
	return x;
}

void nm_gen_fill(const nm_gen *g, double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = nm_gen_one(g, i);
}
