/*
 * kinputs.c — the tensors a kernel consumes, by role (kernels.h).
 *
 * Why one list per kernel, and the kernel's run reading from it: the tensors
 * a kernel draws from its seed (labels, an upstream gradient, weights, a
 * gradient stream) used to be drawn inline, so a golden case's backward
 * outputs could only be checked by re-deriving those draws. Now the one
 * function that draws them is the one the run takes them from, and the one
 * `nanmap golden export` writes: what is exported is what was consumed, and
 * a tensor handed back (emu_kin.tensors) replaces the draw role by role.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/core/internal.h"
#include "emu/engine/kernels.h"

static const emu_ktensor *given_tensor(const emu_kin *in, const char *role)
{
	for (size_t i = 0; in->tensors && i < in->ntensors; i++)
		if (in->tensors[i].role && !strcmp(in->tensors[i].role, role))
			return &in->tensors[i];
	return NULL;
}

static emu_kinput *next_item(emu_kinputs *ki, const char *kernel, const char *role, char *err,
                             size_t errlen)
{
	if (ki->n >= EMU_KINPUTS_MAX) {
		snprintf(err, errlen, "%s: more than %d tensors (at %s)", kernel, EMU_KINPUTS_MAX,
		         role);
		return NULL;
	}
	emu_kinput *t = &ki->item[ki->n++];
	memset(t, 0, sizeof *t);
	t->role = role;
	return t;
}

int emu_kinputs_x(emu_kinputs *ki, const emu_policy *pol, const emu_kin *in, char *err,
                  size_t errlen)
{
	emu_kinput *t = next_item(ki, "kernel", "x", err, errlen);
	if (!t)
		return -1;
	t->rows = in->rows;
	t->cols = in->cols;
	t->v = in->x;
	/* emu_load: the storage format at the input step, element i; a scaling
	 * recipe stores it in no one format */
	t->fmt = pol->scale == EMU_SCALE_NONE ? &pol->storage : NULL;
	t->step = EMU_STEP_INPUT;
	return 0;
}

int emu_kinputs_add(emu_kinputs *ki, const emu_kin *in, const char *kernel, const char *role,
                    size_t rows, size_t cols, bool draw_later, emu_kinput **t, double **draw,
                    char *err, size_t errlen)
{
	size_t n = rows * cols;
	const emu_ktensor *g = given_tensor(in, role);
	emu_kinput *e = next_item(ki, kernel, role, err, errlen);

	*t = e;
	*draw = NULL;
	if (!e)
		return -1;
	e->rows = rows;
	e->cols = cols;
	e->vector = rows == 1;
	if (g) {
		bool fits = g->rows == rows && g->cols == cols;
		if (e->vector || cols == 1) /* a vector: any shape of its length */
			fits = g->rows * g->cols == n && (g->rows == 1 || g->cols == 1);
		if (!fits || !g->v) {
			snprintf(err, errlen,
			         "%s: tensor %s is %zu x %zu, the kernel takes %zu x %zu", kernel,
			         role, g->rows, g->cols, rows, cols);
			return -1;
		}
		e->v = g->v;
		e->given = true;
		return 0;
	}
	if (draw_later && ki->lazy)
		return 0;
	e->own = malloc((n ? n : 1) * sizeof *e->own);
	if (!e->own) {
		snprintf(err, errlen, "%s: out of memory (tensor %s)", kernel, role);
		return -1;
	}
	e->v = e->own;
	*draw = e->own;
	return 0;
}

int emu_kinput_check_index(const emu_kinput *t, const char *kernel, size_t n, char *err,
                           size_t errlen)
{
	for (size_t i = 0; t->v && i < t->rows * t->cols; i++) {
		double c = t->v[i];
		if (!(c >= 0 && c < (double)n) || c != floor(c)) {
			snprintf(err, errlen, "%s: %s[%zu] = %g must be an integer in [0, %zu)",
			         kernel, t->role, i, c, n);
			return -1;
		}
	}
	return 0;
}

const emu_kinput *emu_kinputs_find(const emu_kinputs *ki, const char *role)
{
	for (int i = 0; i < ki->n; i++)
		if (!strcmp(ki->item[i].role, role))
			return &ki->item[i];
	return NULL;
}

void emu_kinputs_free(emu_kinputs *ki)
{
	for (int i = 0; i < ki->n; i++)
		free(ki->item[i].own);
	memset(ki, 0, sizeof *ki);
}

static int inputs_on(const emu_kernel *k, const emu_policy *pol, const char *variant,
                     const emu_kin *in, bool lazy, emu_kinputs *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->lazy = lazy;
	int rc = k->inputs ? k->inputs(pol, variant, in, out, err, errlen)
	                   : emu_kinputs_x(out, pol, in, err, errlen);
	for (size_t i = 0; rc == 0 && in->tensors && i < in->ntensors; i++) {
		const char *role = in->tensors[i].role ? in->tensors[i].role : "(null)";
		const emu_kinput *t = emu_kinputs_find(out, role);
		if (t && t->given)
			continue;
		char names[160] = "";
		size_t len = 0;
		for (int j = 0; j < out->n && len < sizeof names; j++)
			if (strcmp(out->item[j].role, "x") != 0)
				len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
				                        len ? " " : "", out->item[j].role);
		snprintf(err, errlen, "%s: no tensor '%s' (its tensors: %s; x is its input)",
		         k->name, role, len ? names : "none");
		rc = -1;
	}
	if (rc != 0)
		emu_kinputs_free(out);
	return rc;
}

int emu_kernel_inputs(const emu_kernel *k, const emu_policy *pol, const char *variant,
                      const emu_kin *in, emu_kinputs *out, char *err, size_t errlen)
{
	return inputs_on(k, pol, variant, in, false, out, err, errlen);
}

int emu_kinputs_take(const emu_kernel *k, const emu_policy *pol, const char *variant,
                     const emu_kin *in, emu_kinputs *out, char *err, size_t errlen)
{
	return inputs_on(k, pol, variant, in, true, out, err, errlen);
}

/* As emu_input (and emu_load without a recipe) round: the policy's mode,
 * overflow rule and flush-to-zero, no DAZ on a double, SR keyed by the
 * element of the step. A kernel that converts a constant (batchnorm's gamma)
 * rounds it the same way. */
void emu_kinput_bits(const emu_policy *pol, const emu_kinput *t, uint32_t *bits)
{
	emu_env env = pol->env;
	env.daz = false;
	for (size_t i = 0; i < t->rows * t->cols; i++) {
		env.index = emu_sr_key(t->step, 0, t->e0 + (t->bcast ? 0 : i));
		bits[i] = emu_from_double(t->fmt, t->v[i], &env).bits;
	}
}

/* (cloned: the draw's 64-bit multiplies are one vector instruction with
 * AVX-512, and the norms' backward draws a value an element) */
EMU_VEC_CLONES void emu_kinput_signs(uint64_t seed, double dyval, size_t i0, size_t n, double *dy)
{
	if (!isnan(dyval)) {
		for (size_t j = 0; j < n; j++)
			dy[j] = dyval;
		return;
	}
	for (size_t j = 0; j < n; j++)
		dy[j] = emu_draw_sign(seed, i0 + j);
}
