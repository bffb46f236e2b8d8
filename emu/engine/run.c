/*
 * run.c — one kernel on one backend, its status, and its errors against
 * the TRUTH backend. Status precedence: nan > inf > overflow > underflow >
 * ok, so a run reports the worst thing that happened to its outputs.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "emu/core/internal.h"
#include "emu/engine/kernels.h"

static const char *const st_names[] = {"ok", "underflow", "overflow", "inf", "nan"};

const char *emu_run_status_name(emu_run_status s)
{
	return s <= EMU_ST_NAN ? st_names[s] : "?";
}

int emu_run_kernel(const emu_kernel *k, const emu_policy *pol, const char *variant,
                   const emu_kin *in, emu_be_kind kind, emu_run *r, char *err, size_t errlen)
{
	return emu_run_kernel_tables(k, pol, variant, in, kind, NULL, r, err, errlen);
}

#define EMU_INF_BITS 0x7ff0000000000000ull

/* The largest of the magnitudes' bits of d[0..n): above an infinity's when
 * one is NaN, equal to it when one is infinite and none NaN (one vector
 * pass; a kernel's outputs are the size of its inputs). */
EMU_VEC_CLONES static uint64_t max_mag_bits(const double *d, size_t n)
{
	uint64_t top = 0;
	for (size_t j = 0; j < n; j++) {
		uint64_t b;
		memcpy(&b, &d[j], sizeof b);
		b &= 0x7fffffffffffffffull;
		top = b > top ? b : top;
	}
	return top;
}

static int run_on(const emu_kernel *k, const emu_policy *pol, const char *variant,
                  const emu_kin *in, emu_be_kind kind, const emu_gpu_tables *tables,
                  bool exact_inputs, emu_run *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	emu_be_init(&r->be, kind, &pol->env);
	if (kind == EMU_BE_FAST)
		r->be.tables = tables;
	r->be.exact_inputs = kind == EMU_BE_TRUTH && exact_inputs;
	if (k->run(&r->be, pol, variant, in, &r->out, err, errlen) != 0)
		return -1;
	emu_run_status st = EMU_ST_OK;
	if (r->be.st.all_flags & EMU_FLAG_OVERFLOW)
		st = EMU_ST_OVERFLOW;
	bool any_nan = false, any_inf = false;
	for (int i = 0; i < r->out.n; i++) {
		const emu_kout_item *it = &r->out.item[i];
		if (it->vec && !it->vec->m) { /* doubles: their largest magnitude's bits */
			uint64_t top = max_mag_bits(it->vec->d, it->n);
			any_nan |= top > EMU_INF_BITS;
			any_inf |= top == EMU_INF_BITS;
			continue;
		}
		for (size_t j = 0; j < it->n; j++) {
			double v = emu_kout_d(&r->be, it, j);
			any_nan |= isnan(v) != 0;
			any_inf |= isinf(v) != 0;
		}
	}
	if (any_nan)
		st = EMU_ST_NAN;
	else if (any_inf && st < EMU_ST_INF)
		st = EMU_ST_INF;
	/* inputs the storage (and its recipe) could not hold */
	if (r->be.st.in_overflow && st < EMU_ST_OVERFLOW)
		st = EMU_ST_OVERFLOW;
	if (r->be.st.in_flushed && st < EMU_ST_UNDERFLOW)
		st = EMU_ST_UNDERFLOW;
	r->status = st;
	return 0;
}

int emu_run_kernel_tables(const emu_kernel *k, const emu_policy *pol, const char *variant,
                          const emu_kin *in, emu_be_kind kind, const emu_gpu_tables *tables,
                          emu_run *r, char *err, size_t errlen)
{
	return run_on(k, pol, variant, in, kind, tables, false, r, err, errlen);
}

int emu_run_truth(const emu_kernel *k, const emu_policy *pol, const char *variant,
                  const emu_kin *in, emu_truth *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	/* the stored inputs first: when storing changed none of them, the run
	 * from the original inputs would compute the very same values */
	if (emu_run_kernel(k, pol, variant, in, EMU_BE_TRUTH, &t->stored, err, errlen) != 0)
		return -1;
	if (t->stored.be.st.in_changed == 0) {
		t->same = true;
		return 0;
	}
	return run_on(k, pol, variant, in, EMU_BE_TRUTH, NULL, true, &t->e2e, err, errlen);
}

const emu_run *emu_truth_e2e(const emu_truth *t)
{
	return t->same ? &t->stored : &t->e2e;
}

void emu_truth_free(emu_truth *t)
{
	emu_run_free(&t->stored);
	if (!t->same)
		emu_run_free(&t->e2e);
	memset(t, 0, sizeof *t);
}

/* ulp of t in f: 2^(max(e, emin) − p + 1) */
static double ulp_in(const emu_format *f, double t)
{
	int e = t == 0 ? f->emin : ilogb(t);
	if (e < f->emin)
		e = f->emin;
	return ldexp(1.0, e - f->p + 1);
}

/*
 * One output against one truth. Element by element: a NaN against a NaN
 * truth, or an infinity against the same infinity (the truth beyond the
 * double range counts as its nearest double, ±inf), agrees exactly; any
 * other NaN or infinity on either side has error inf (max_ulp and
 * rel_err), so a NaN output never passes for accurate. Otherwise
 * d = |v − t| in ulps of the item's format at t, and rel_err =
 * ‖v − t‖₂ / ‖t‖₂ over the elements (0 when both are all zero, inf when
 * the truth is all zero and the output is not).
 */
static void compare_item(const emu_be *be, const emu_kout_item *a, const emu_be *tbe,
                         const emu_kout_item *t, double *max_ulp, double *rel_err, size_t *lost)
{
	double mu = 0;
	long double num = 0, den = 0; /* truth may reach 2^1023: its square needs the range */
	bool bad = false;
	size_t nl = 0;
	for (size_t j = 0; j < a->n && j < t->n; j++) {
		double v = emu_kout_d(be, a, j), w = emu_kout_d(tbe, t, j);
		/* nonzero in truth even below the double range (exp(−1000)) */
		bool tnz = tbe->kind == EMU_BE_TRUTH ? mpfr_regular_p(emu_kout_mp(t, j)) != 0
		                                     : w != 0 && isfinite(w);
		if (v == 0 && tnz)
			nl++;
		if (!isfinite(v) || !isfinite(w)) {
			bool same = isnan(v) ? isnan(w) : v == w; /* same infinity */
			if (!same)
				bad = true;
			continue;
		}
		double d = fabs(v - w);
		double u = d / ulp_in(a->fmt, w);
		if (u > mu)
			mu = u;
		num += (long double)d * d;
		den += (long double)w * w;
	}
	if (bad) {
		*max_ulp = *rel_err = INFINITY;
	} else {
		*max_ulp = mu;
		*rel_err = den > 0 ? (double)(sqrtl(num) / sqrtl(den)) : (num > 0 ? INFINITY : 0);
	}
	*lost = nl;
}

void emu_run_compare(emu_run *r, const emu_truth *t)
{
	const emu_run *e2e = emu_truth_e2e(t), *st = &t->stored;
	for (int i = 0; i < r->out.n && i < e2e->out.n && i < st->out.n; i++) {
		const emu_kout_item *a = &r->out.item[i];
		emu_item_metrics m;
		size_t lost_stored;
		compare_item(&r->be, a, &e2e->be, &e2e->out.item[i], &m.max_ulp, &m.rel_err,
		             &m.lost);
		compare_item(&r->be, a, &st->be, &st->out.item[i], &m.arith_max_ulp,
		             &m.arith_rel_err, &lost_stored);
		r->m[i] = m;
		if (m.lost && r->status < EMU_ST_UNDERFLOW)
			r->status = EMU_ST_UNDERFLOW;
	}
	r->have_metrics = true;
}

static bool same_number(double a, double b)
{
	return isnan(a) ? isnan(b) : !isnan(b) && a == b && signbit(a) == signbit(b);
}

int emu_recompute_compare(const emu_run *first, const emu_run *second,
                          emu_recompute_item items[EMU_KOUT_MAX], char *err, size_t errlen)
{
	if (first->out.n != second->out.n) {
		snprintf(err, errlen, "recompute: %d outputs against %d", first->out.n,
		         second->out.n);
		return -1;
	}
	for (int i = 0; i < first->out.n; i++) {
		const emu_kout_item *a = &first->out.item[i], *b = &second->out.item[i];
		emu_recompute_item it = {a->n, 0, 0, 0, a->n};
		if (a->n != b->n || strcmp(a->name, b->name) != 0) {
			snprintf(err, errlen, "recompute: output %s[%zu] against %s[%zu]", a->name,
			         a->n, b->name, b->n);
			return -1;
		}
		for (size_t j = 0; j < a->n; j++) {
			double x = emu_kout_d(&first->be, a, j), y = emu_kout_d(&second->be, b, j);
			if (same_number(x, y))
				continue;
			if (it.differ++ == 0)
				it.first_differ = j;
			if (isfinite(x) && !isfinite(y))
				it.new_nonfinite++;
			else if (!isfinite(x) && isfinite(y))
				it.gone_nonfinite++;
		}
		items[i] = it;
	}
	return 0;
}

void emu_run_free(emu_run *r)
{
	emu_be_free(&r->be);
}
