/*
 * run_quant.c — the runner's quant step (gpu/run.h): the mxfp8 and deepseek
 * block quantisers on the GPU against the recipe library's emu_quantize.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/recipes/recipe.h"
#include "gpu/run.h"

/* ---- quant: the mxfp8 and deepseek block quantisers against emu_quantize ---- */

/* Input (r, c) of the quant step: rows of eight kinds, chosen to reach every
 * branch of the two scale rules (docs/gpu.md): r mod 8 = 0 normal with
 * outliers (1 in 64 times 64), 1 normal times 2^e, e per 32-block in
 * [-100, 100), 2 zero blocks (+0 in columns 0..127, -0 in 512..543),
 * 3 one NaN, +inf and -inf (in different blocks), 4 near FLT_MAX (and
 * FLT_MAX), 5 tiny (down to fp32 subnormals, amax below DeepGEMM's 1e-4),
 * 6 amax 957 in the first 32-block (the OCP/TE example), 448·2^k exactly in
 * the others, 7 random binary32 encodings (every finite exponent). */
static float quant_input(uint64_t seed, size_t r, size_t c, size_t N)
{
	uint64_t i = r * N + c, u = rnd(seed, 600, i), v = rnd(seed, 601, i);
	double u1 = ((double)(u >> 11) + 1) * 0x1p-53, u2 = (double)(v >> 11) * 0x1p-53;
	double g = emu_box_muller(u1, u2), x = g;
	size_t blk = c / 32;
	switch (r % 8) {
	case 0:
		x = (v & 63) == 0 ? 64 * g : g;
		break;
	case 1:
		x = ldexp(g, (int)(rnd(seed, 602, r * N / 32 + blk) % 200) - 100);
		break;
	case 2:
		x = c < 128 ? 0.0 : c >= 512 && c < 544 ? -0.0 : g;
		break;
	case 3: {
		size_t at = (r / 8 * 37) % 64;
		x = c == at ? NAN : c == at + 200 ? INFINITY : c == at + 300 ? -INFINITY : g;
		break;
	}
	case 4:
		x = c % 97 == 0 ? FLT_MAX : g * 0x1p126;
		break;
	case 5:
		x = ldexp(g, -110 - (int)(blk % 40));
		break;
	case 6:
		if (blk == 0)
			x = c == 3 ? 957.0 : (u2 - 0.5) * 1900.0;
		else
			x = c % 32 == 7 ? -ldexp(448.0, (int)blk - 16)
			                : ldexp(g / 8, (int)blk - 16);
		break;
	default: {
		uint32_t b = (uint32_t)u;
		if ((b & 0x7f800000u) == 0x7f800000u)
			b &= ~0x40000000u; /* a finite exponent */
		float f;
		memcpy(&f, &b, sizeof f);
		return f;
	}
	}
	if (fabs(x) > FLT_MAX && isfinite(x))
		x = x < 0 ? -FLT_MAX : FLT_MAX;
	return (float)x;
}

void step_quant(const gpu_opts *o)
{
	static const struct {
		const char *recipe;
		gpu_qrule rule;
	} qr[] = {
	    {"mxfp8", GPU_Q_MXFP8}, {"mxfp8:e5m2", GPU_Q_MXFP8}, {"deepseek", GPU_Q_DEEPSEEK}};
	const size_t R = o->quick ? 64 : 512, N = 1024;
	float *xs = malloc(R * N * sizeof *xs);
	double *xd = malloc(R * N * sizeof *xd);
	uint8_t *q = malloc(R * N);
	uint32_t *sc = malloc(R * N * sizeof *sc); /* at least one scale per block */
	if (!xs || !xd || !q || !sc) {
		step_failed("quant", "out of memory");
		goto out;
	}
	for (size_t r = 0; r < R; r++)
		for (size_t c = 0; c < N; c++) {
			xs[r * N + c] = quant_input(o->seed, r, c, N);
			xd[r * N + c] = xs[r * N + c];
		}
	for (size_t k = 0; k < sizeof qr / sizeof qr[0]; k++) {
		emu_recipe rc;
		emu_qtensor want;
		if (emu_recipe_parse(qr[k].recipe, &rc, run_err, sizeof run_err)) {
			step_failed("quant", run_err);
			continue;
		}
		/* the recipe's own data: block, element format, fmax, amin */
		const emu_format *E = fmt(rc.elem.name), *SF = fmt(rc.scale_fmt.name);
		size_t bs = (size_t)rc.bcols[EMU_ROLE_ACT];
		float fmax = (float)(rc.fmax > 0 ? rc.fmax : rc.elem.max), amin = (float)rc.amin;
		gpu_kfmt ek = E->bits == 8 && E->p == 4 ? GPU_K_E4M3 : GPU_K_E5M2;
		if (rc.brows[EMU_ROLE_ACT] != 1 || bs == 0 || E->bits != 8) {
			step_failed("quant", "the recipe's act blocks are not 1xN, or not 8-bit");
			continue;
		}
		if (gpu_dev_quant(qr[k].rule, ek, fmax, amin, bs, xs, R, N, q, sc, run_err,
		                  sizeof run_err)) {
			step_failed("quant", run_err);
			continue;
		}
		if (emu_quantize(&rc, EMU_ROLE_ACT, false, xd, R, N, o->seed, &want)) {
			step_failed("quant", "emu_quantize: out of memory");
			continue;
		}
		gpu_cmp el, bl;
		gpu_cmp_init(&el, "quant", qr[k].recipe, E->name, "elements rn-satfinite", E,
		             (gpu_tol){0, true});
		gpu_cmp_init(&bl, "quant", qr[k].recipe, SF->name, "block scales", SF,
		             (gpu_tol){0, true});
		for (size_t i = 0; i < R * N; i++) {
			uint32_t xb;
			memcpy(&xb, &xs[i], sizeof xb);
			gpu_cmp_one(&el, i, xb, q[i], want.code[i]);
		}
		for (size_t b = 0; b < want.nbr * want.nbc; b++)
			gpu_cmp_one(&bl, b, b, sc[b], want.dcode[b]);
		add_row(&el);
		add_row(&bl);
		emu_qtensor_free(&want);
	}
	gpu_report_note(&run_rep,
	                "quant: %zu rows of %zu fp32 inputs (normal, outliers, zero, NaN "
	                "and infinite blocks, near FLT_MAX, tiny, amax 957 and 448*2^k), "
	                "row-wise, role act, one GPU thread per block, against emu_quantize",
	                R, N);
out:
	free(xs);
	free(xd);
	free(q);
	free(sc);
}
