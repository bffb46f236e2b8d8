/*
 * nm_point.c — one point of a sweep: its input, its kernel run, its status.
 *
 * Called from the sweep's OpenMP threads, so nothing here is shared
 * between calls: every run owns its backend, its input and its parameters.
 * Each thread keeps one thing of its own, the last tensor it generated
 * (np_gen_fill).
 *
 * The input with maxabs: the generator draws the tensor at scale 1, then
 * every element is divided by the largest |x| and multiplied by the axis
 * value; the largest elements themselves are set to ±value, so the tensor's
 * max |x| is exactly the axis value (x/m·v may round away from v).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/sweep/nm_point.h"

/* Largest input tensor, in elements (as nanmap run). */
#define NP_MAX_ELEMS ((uint64_t)1 << 31)

static int np_fail(char *err, size_t errlen, const char *msg, const char *what)
{
	snprintf(err, errlen, "%s%s%s", what ? what : "", what ? ": " : "", msg);
	return -1;
}

/* An axis value that sets a shape: a positive integer. */
static int np_count(const nm_axis *a, double v, size_t *out, char *err, size_t errlen)
{
	if (!(v >= 1 && v <= (double)NP_MAX_ELEMS && v == floor(v))) {
		snprintf(err, errlen, "axis %s: %.17g is not a positive integer", a->name, v);
		return -1;
	}
	*out = (size_t)v;
	return 0;
}

/*
 * The last tensor this thread generated, kept for the next call. Points
 * and threshold steps that differ only in what the generator does not take
 * (a variant, a policy, a kernel parameter, the value a maxabs tensor is
 * rescaled to) draw the same elements, and element i is nm_gen_one(g, i)
 * whatever the length, so any prefix of a kept tensor serves. A 32000-class
 * softmax's threshold search draws its 32000 normals once instead of at
 * every step, and FP8 attention over 262144 keys its 12.6 M once for all
 * its points. Tensors above NP_GEN_KEEP elements (128 MiB) are not kept;
 * a thread holds at most one, besides the input its point holds anyway.
 */
#define NP_GEN_KEEP ((size_t)1 << 24)
static _Thread_local struct {
	nm_gen g;
	size_t n;
	double *t;
} np_kept;

/* bit for bit (a NaN is the same NaN, −0 is not +0) */
static bool np_same_double(double a, double b)
{
	uint64_t u, v;
	memcpy(&u, &a, sizeof u);
	memcpy(&v, &b, sizeof v);
	return u == v;
}

static bool np_same_gen(const nm_gen *a, const nm_gen *b)
{
	return a->dist == b->dist && a->seed == b->seed && np_same_double(a->scale, b->scale) &&
	       np_same_double(a->lo, b->lo) && np_same_double(a->hi, b->hi) &&
	       np_same_double(a->outlier_k, b->outlier_k) &&
	       np_same_double(a->outlier_frac, b->outlier_frac);
}

static void np_gen_fill(const nm_gen *g, double *t, size_t n)
{
	if (np_kept.t && n <= np_kept.n && np_same_gen(&np_kept.g, g)) {
		memcpy(t, np_kept.t, n * sizeof *t);
		return;
	}
	nm_gen_fill(g, t, n);
	if (n > NP_GEN_KEEP)
		return;
	double *k = realloc(np_kept.t, (n ? n : 1) * sizeof *k);
	if (!k)
		return; /* the one kept stays as it was */
	memcpy(k, t, n * sizeof *k);
	np_kept.t = k;
	np_kept.n = n;
	np_kept.g = *g;
}

int nm_point_input(const nm_point *p, double **x, size_t *rows, size_t *cols, char *err,
                   size_t errlen)
{
	const nm_case *c = p->c;
	nm_gen g = c->gen;
	size_t R = c->rows ? c->rows : 1, N = c->cols;
	double target = g.scale;

	*x = NULL;
	for (size_t k = 0; k < c->naxes; k++) {
		const nm_axis *a = &c->axes[k];
		double v = p->axis[k];
		if (a->target == NM_SET_SCALE)
			target = v;
		else if (a->target == NM_SET_COLS && np_count(a, v, &N, err, errlen))
			return -1;
		else if (a->target == NM_SET_ROWS && np_count(a, v, &R, err, errlen))
			return -1;
		else if (a->target == NM_SET_OUTLIER_K)
			g.outlier_k = v;
		else if (a->target == NM_SET_OUTLIER_FRAC)
			g.outlier_frac = v;
	}
	if (N == 0 || R > NP_MAX_ELEMS / N)
		return np_fail(err, errlen, N ? "too many elements" : "no elements", c->name);
	double *t = malloc(R * N * sizeof *t);
	if (!t)
		return np_fail(err, errlen, "out of memory", NULL);
	g.scale = c->maxabs ? 1 : target;
	np_gen_fill(&g, t, R * N);
	if (c->maxabs) {
		double m = 0;
		for (size_t i = 0; i < R * N; i++)
			if (fabs(t[i]) > m)
				m = fabs(t[i]);
		if (!(m > 0 && isfinite(m))) {
			free(t);
			return np_fail(err, errlen, "maxabs: the generator gave no finite nonzero "
			                            "element to rescale", c->name);
		}
		for (size_t i = 0; i < R * N; i++)
			t[i] = fabs(t[i]) == m ? copysign(target, t[i]) : t[i] / m * target;
	}
	*x = t;
	*rows = R;
	*cols = N;
	return 0;
}

/* The kernel inputs of p: its tensor and parameters (the axis ones set or
 * added). params must hold NM_CASE_MAX_PARAMS + NM_CASE_MAX_AXES. */
static int np_setup(const nm_point *p, emu_kin *in, emu_kparam *params, char *err,
                    size_t errlen)
{
	const nm_case *c = p->c;
	size_t np = 0;
	double *x;

	if (p->variant >= c->nvariants || p->policy >= c->npolicies)
		return np_fail(err, errlen, "no such variant or policy", c->name);
	for (size_t i = 0; i < c->nparams && i < NM_CASE_MAX_PARAMS; i++)
		params[np++] = (emu_kparam){c->param_names[i], c->params[i].value};
	for (size_t k = 0; k < c->naxes; k++) {
		const nm_axis *a = &c->axes[k];
		size_t j = 0;
		if (a->target != NM_SET_PARAM)
			continue;
		while (j < np && strcmp(params[j].name, a->param) != 0)
			j++;
		if (j == np)
			np++;
		params[j] = (emu_kparam){a->param, p->axis[k]};
	}
	memset(in, 0, sizeof *in);
	if (nm_point_input(p, &x, &in->rows, &in->cols, err, errlen))
		return -1;
	in->x = x;
	in->params = params;
	in->nparams = np;
	in->seed = c->gen.seed;
	return 0;
}

static int np_run(const nm_point *p, const emu_kin *in, emu_be_kind kind, emu_run *r, char *err,
                  size_t errlen)
{
	const nm_case *c = p->c;
	return emu_run_kernel(c->kernel, &c->policies[p->policy], c->variants[p->variant], in, kind,
	                      r, err, errlen);
}

static void np_first(const emu_be_stats *st, bool *has, char *op, size_t oplen, char *step,
                     size_t steplen, uint64_t *index)
{
	*has = st->first_set;
	op[0] = step[0] = '\0';
	*index = 0;
	if (!st->first_set)
		return;
	snprintf(op, oplen, "%s", emu_op_name(st->first_op));
	snprintf(step, steplen, "%s", st->first_step ? st->first_step : "?");
	*index = st->first_index;
}

static void np_fill(nm_point_result *r, const emu_run *run, const emu_truth *tr)
{
	const emu_run *truth = tr ? emu_truth_e2e(tr) : NULL;
	memset(r, 0, sizeof *r);
	r->status = run->status;
	np_first(&run->be.st, &r->has_first, r->first_op, sizeof r->first_op, r->first_step,
	         sizeof r->first_step, &r->first_index);
	r->nout = (size_t)run->out.n;
	for (size_t i = 0; i < r->nout && i < NM_POINT_MAX_OUT; i++) {
		const emu_kout_item *it = &run->out.item[i];
		double mx = 0;
		snprintf(r->out[i].name, sizeof r->out[i].name, "%s", it->name);
		for (size_t j = 0; j < it->n; j++) {
			double v = fabs(emu_kout_d(&run->be, it, j));
			if (isfinite(v) && v > mx)
				mx = v;
		}
		r->out[i].maxabs = mx;
		r->out[i].n = it->n;
		r->out[i].max_ulp = truth ? run->m[i].max_ulp : NAN;
		r->out[i].rel_err = truth ? run->m[i].rel_err : NAN;
		r->out[i].arith_max_ulp = truth ? run->m[i].arith_max_ulp : NAN;
		r->out[i].arith_rel_err = truth ? run->m[i].arith_rel_err : NAN;
		r->out[i].lost = truth ? run->m[i].lost : 0;
	}
	r->has_fractions = emu_backward_fractions(run, truth, r->fractions) == 0;
	r->in_n = run->be.st.in_n;
	r->in_flushed = run->be.st.in_flushed;
}

size_t nm_point_accuracy_out(const nm_case *c, const nm_point_result *r)
{
	if (!c->accuracy[0])
		return r->nout ? 0 : r->nout;
	for (size_t i = 0; i < r->nout && i < NM_POINT_MAX_OUT; i++)
		if (strcmp(r->out[i].name, c->accuracy) == 0)
			return i;
	return r->nout;
}

nm_verdict nm_point_verdict(const nm_case *c, const nm_point_result *r)
{
	size_t i = nm_point_accuracy_out(c, r);
	if (i >= r->nout || i >= NM_POINT_MAX_OUT || isnan(r->out[i].rel_err))
		return NM_VERDICT_NONE;
	return r->out[i].rel_err > c->tolerance ? NM_VERDICT_INACCURATE : NM_VERDICT_ACCURATE;
}

const char *nm_verdict_name(nm_verdict v)
{
	return v == NM_VERDICT_ACCURATE ? "accurate" : v == NM_VERDICT_INACCURATE ? "inaccurate" : "-";
}

double nm_point_flushed(const nm_point_result *r)
{
	double f = r->in_n ? (double)r->in_flushed / (double)r->in_n : 0;
	for (size_t i = 0; i < r->nout && i < NM_POINT_MAX_OUT; i++)
		if (r->out[i].n && (double)r->out[i].lost / (double)r->out[i].n > f)
			f = (double)r->out[i].lost / (double)r->out[i].n;
	return f;
}

/* Output `name` of run into *vals (malloc'd, *n of them). 0, or -1 with a
 * reason (no such output). */
static int np_series_of(const nm_point *p, emu_run *run, const char *name, double **vals,
                        size_t *n, char *err, size_t errlen)
{
	*vals = NULL;
	*n = 0;
	for (int i = 0; i < run->out.n; i++) {
		const emu_kout_item *it = &run->out.item[i];
		if (strcmp(it->name, name) != 0)
			continue;
		*vals = malloc((it->n ? it->n : 1) * sizeof **vals);
		if (!*vals)
			return np_fail(err, errlen, "out of memory", NULL);
		for (size_t j = 0; j < it->n; j++)
			(*vals)[j] = emu_kout_d(&run->be, it, j);
		*n = it->n;
		return 0;
	}
	snprintf(err, errlen, "%s: kernel %s has no output '%s'", p->c->name, p->c->kernel->name,
	         name);
	return -1;
}

/* The runs on kinds (and truth's), and the named series of the first:
 * one run each, whatever is taken from it. */
static int np_eval(const nm_point *p, const emu_be_kind *kinds, size_t nk, bool truth,
                   nm_point_result *r, const char *const *names, size_t nnames, double **vals,
                   size_t *ns, char *err, size_t errlen)
{
	emu_kparam params[NM_CASE_MAX_PARAMS + NM_CASE_MAX_AXES];
	emu_kin in;
	emu_truth t;
	int rc = -1;

	memset(r, 0, nk * sizeof *r);
	for (size_t i = 0; i < nnames; i++)
		vals[i] = NULL, ns[i] = 0;
	if (np_setup(p, &in, params, err, errlen))
		return -1;
	bool need = false; /* a truth run, unless truth is all that is asked */
	for (size_t k = 0; k < nk; k++)
		need |= truth && kinds[k] != EMU_BE_TRUTH;
	memset(&t, 0, sizeof t);
	if (need && emu_run_truth(p->c->kernel, &p->c->policies[p->policy],
	                          p->c->variants[p->variant], &in, &t, err, errlen))
		goto out;
	for (size_t k = 0; k < nk; k++) {
		emu_run run;
		bool cmp = truth && kinds[k] != EMU_BE_TRUTH;
		int bad = np_run(p, &in, kinds[k], &run, err, errlen);
		if (!bad) {
			if (cmp)
				emu_run_compare(&run, &t);
			np_fill(&r[k], &run, cmp ? &t : NULL);
		}
		for (size_t i = 0; !bad && k == 0 && i < nnames; i++)
			bad = np_series_of(p, &run, names[i], &vals[i], &ns[i], err, errlen);
		emu_run_free(&run);
		if (bad)
			goto out;
	}
	rc = 0;
out:
	emu_truth_free(&t);
	free((double *)in.x);
	for (size_t i = 0; rc && i < nnames; i++) {
		free(vals[i]);
		vals[i] = NULL, ns[i] = 0;
	}
	return rc;
}

int nm_point_eval_kinds(const nm_point *p, const emu_be_kind *kinds, size_t nk, bool truth,
                        nm_point_result *r, char *err, size_t errlen)
{
	return np_eval(p, kinds, nk, truth, r, NULL, 0, NULL, NULL, err, errlen);
}

int nm_point_eval(const nm_point *p, emu_be_kind kind, bool truth, nm_point_result *r,
                  char *err, size_t errlen)
{
	return np_eval(p, &kind, 1, truth, r, NULL, 0, NULL, NULL, err, errlen);
}

int nm_point_eval_series(const nm_point *p, emu_be_kind kind, bool truth, nm_point_result *r,
                         const char *const *names, size_t nnames, double **vals, size_t *ns,
                         char *err, size_t errlen)
{
	return np_eval(p, &kind, 1, truth, r, names, nnames, vals, ns, err, errlen);
}

int nm_point_truth_range(const nm_point *p, nm_point_range *r, char *err, size_t errlen)
{
	const nm_case *c = p->c;
	const emu_policy *pol = &c->policies[p->policy];
	emu_kparam params[NM_CASE_MAX_PARAMS + NM_CASE_MAX_AXES];
	emu_kin in;
	emu_run run;
	int rc = -1;

	memset(r, 0, sizeof *r);
	if (np_setup(p, &in, params, err, errlen))
		return -1;
	/* emu_run_kernel's steps, with the range switched on before the kernel
	 * runs; the status is not needed, only the flags and the outputs */
	memset(&run, 0, sizeof run);
	emu_be_init(&run.be, EMU_BE_TRUTH, &pol->env);
	run.be.range = true;
	run.be.range_peak = -INFINITY;
	if (c->kernel->run(&run.be, pol, c->variants[p->variant], &in, &run.out, err, errlen))
		goto out;
	r->flags = run.be.st.all_flags;
	r->peak = run.be.range_peak;
	np_first(&run.be.st, &r->has_first, r->first_op, sizeof r->first_op, r->first_step,
	         sizeof r->first_step, &r->first_index);
	for (int i = 0; i < run.out.n && !r->lost; i++) {
		const emu_kout_item *it = &run.out.item[i];
		for (size_t j = 0; j < it->n && !r->lost; j++)
			r->lost = (emu_k_range(&run.be, emu_kout_mp(it, j), it->fmt) & EMU_FLAG_UNDERFLOW) != 0;
	}
	rc = 0;
out:
	emu_run_free(&run);
	free((double *)in.x);
	return rc;
}
