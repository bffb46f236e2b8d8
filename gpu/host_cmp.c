/*
 * host_cmp.c — one comparison row: GPU encodings against the emulator's.
 *
 * Encodings are compared, never values (+0 and -0 differ; NaNs are judged by
 * the row's policy). The ulp distance walks the number line through the
 * sign-magnitude order, so it is defined for every format the emulator has
 * and crosses zero and the largest finite value without special cases.
 * Shown mismatches are the lowest indices seen, which keeps the report the
 * same however the elements were split between threads.
 */
#include <stdio.h>
#include <string.h>

#include "gpu/gpu_host.h"

void gpu_cmp_init(gpu_cmp *c, const char *step, const char *kernel, const char *format,
                  const char *mode, const emu_format *f, gpu_tol tol)
{
	memset(c, 0, sizeof *c);
	snprintf(c->step, sizeof c->step, "%s", step);
	snprintf(c->kernel, sizeof c->kernel, "%s", kernel);
	snprintf(c->format, sizeof c->format, "%s", format);
	snprintf(c->mode, sizeof c->mode, "%s", mode);
	c->f = f;
	c->tol = tol;
}

/* Position on the number line: sign-magnitude to a signed integer. */
static int64_t line_pos(const emu_format *f, emu_bits b)
{
	if (!f->has_sign)
		return (int64_t)b;
	int64_t mag = (int64_t)(b & ~f->sign_mask);
	return (b & f->sign_mask) ? -mag : mag;
}

uint64_t gpu_ulp_dist(const emu_format *f, emu_bits a, emu_bits b)
{
	bool na = emu_is_nan(f, a), nb = emu_is_nan(f, b);
	if (na || nb)
		return na && nb ? 0 : UINT64_MAX;
	int64_t d = line_pos(f, a) - line_pos(f, b);
	return (uint64_t)(d < 0 ? -d : d);
}

/* Keep the GPU_SHOW_MAX lowest indices, sorted. */
static void show_add(gpu_cmp *c, const gpu_miss *m)
{
	if (c->nshow == GPU_SHOW_MAX && c->show[GPU_SHOW_MAX - 1].index <= m->index)
		return;
	int i = c->nshow < GPU_SHOW_MAX ? c->nshow++ : GPU_SHOW_MAX - 1;
	while (i > 0 && c->show[i - 1].index > m->index) {
		c->show[i] = c->show[i - 1];
		i--;
	}
	c->show[i] = *m;
}

static void nan_note(gpu_cmp *c, emu_bits b, uint64_t n)
{
	for (int i = 0; i < c->nnan; i++)
		if (c->nan_enc[i] == b) {
			c->nan_cnt[i] += n;
			return;
		}
	if (c->nnan == GPU_NANENC_MAX) {
		c->nan_other += n;
		return;
	}
	c->nan_enc[c->nnan] = b;
	c->nan_cnt[c->nnan++] = n;
}

void gpu_cmp_one(gpu_cmp *c, uint64_t index, uint64_t input, emu_bits got, emu_bits want)
{
	c->compared++;
	if (emu_is_nan(c->f, got))
		nan_note(c, got, 1);
	if (got == want) {
		c->identical++;
		return;
	}
	uint64_t u = gpu_ulp_dist(c->f, got, want);
	if (u > c->max_ulp)
		c->max_ulp = u;
	if (u == 0 && c->tol.nan_any && emu_is_nan(c->f, got)) {
		c->nan_equal++;
		return;
	}
	if (u != UINT64_MAX && c->tol.ulp && u <= c->tol.ulp) {
		c->within++;
		return;
	}
	gpu_miss m = {index, input, got, want, u};
	show_add(c, &m);
}

void gpu_cmp_merge(gpu_cmp *into, const gpu_cmp *from)
{
	into->compared += from->compared;
	into->identical += from->identical;
	into->nan_equal += from->nan_equal;
	into->within += from->within;
	if (from->max_ulp > into->max_ulp)
		into->max_ulp = from->max_ulp;
	for (int i = 0; i < from->nshow; i++)
		show_add(into, &from->show[i]);
	for (int i = 0; i < from->nnan; i++)
		nan_note(into, from->nan_enc[i], from->nan_cnt[i]);
	into->nan_other += from->nan_other;
}

uint64_t gpu_cmp_bad(const gpu_cmp *c)
{
	return c->compared - c->identical - c->nan_equal - c->within;
}

gpu_cmp gpu_cmp_blank(const gpu_cmp *row)
{
	gpu_cmp c;
	gpu_cmp_init(&c, row->step, row->kernel, row->format, row->mode, row->f, row->tol);
	return c;
}

/* Why this fits the time budget (2^32 inputs per row, several rows): every
 * core takes blocks of 4096 inputs and rounds them with emu_round_array (the
 * vectorised RNE loop; other modes take the scalar path), about 2-30 ns per
 * element, into a private row. */
void gpu_cmp_convert(gpu_cmp *row, const emu_format *f, const emu_env *env, uint64_t j0,
                     uint64_t stride, size_t n, const uint16_t *got)
{
#pragma omp parallel
	{
		gpu_cmp mine = gpu_cmp_blank(row);
		enum { B = 4096 };
		double x[B];
		emu_bits want[B];
#pragma omp for schedule(dynamic, 16)
		for (size_t b0 = 0; b0 < n; b0 += B) {
			size_t m = n - b0 < B ? n - b0 : B;
			for (size_t i = 0; i < m; i++) {
				uint32_t bits = (uint32_t)((j0 + b0 + i) * stride);
				float v;
				memcpy(&v, &bits, sizeof v);
				x[i] = v;
			}
			emu_round_array(f, x, want, m, env);
			for (size_t i = 0; i < m; i++)
				gpu_cmp_one(&mine, j0 + b0 + i, (uint32_t)((j0 + b0 + i) * stride),
				            got[b0 + i], want[i]);
		}
#pragma omp critical
		gpu_cmp_merge(row, &mine);
	}
}
