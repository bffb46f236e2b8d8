/*
 * run.c — one kernel on one backend, its status, and its errors against
 * the TRUTH backend. Status precedence: nan > inf > overflow > underflow >
 * ok, so a run reports the worst thing that happened to its outputs.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"

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

int emu_run_kernel_tables(const emu_kernel *k, const emu_policy *pol, const char *variant,
                          const emu_kin *in, emu_be_kind kind, const emu_gpu_tables *tables,
                          emu_run *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	emu_be_init(&r->be, kind, &pol->env);
	if (kind == EMU_BE_FAST)
		r->be.tables = tables;
	if (k->run(&r->be, pol, variant, in, &r->out, err, errlen) != 0)
		return -1;
	emu_run_status st = EMU_ST_OK;
	if (r->be.st.all_flags & EMU_FLAG_OVERFLOW)
		st = EMU_ST_OVERFLOW;
	for (int i = 0; i < r->out.n; i++)
		for (size_t j = 0; j < r->out.item[i].n; j++) {
			double v = emu_k_d(&r->be, &r->out.item[i].v[j]);
			if (isnan(v))
				st = EMU_ST_NAN;
			else if (isinf(v) && st < EMU_ST_INF)
				st = EMU_ST_INF;
		}
	r->status = st;
	return 0;
}

/* ulp of t in f: 2^(max(e, emin) − p + 1) */
static double ulp_in(const emu_format *f, double t)
{
	int e = t == 0 ? f->emin : ilogb(t);
	if (e < f->emin)
		e = f->emin;
	return ldexp(1.0, e - f->p + 1);
}

void emu_run_compare(emu_run *r, const emu_run *truth)
{
	for (int i = 0; i < r->out.n && i < truth->out.n; i++) {
		const emu_kout_item *a = &r->out.item[i], *t = &truth->out.item[i];
		emu_item_metrics m = {0, 0, 0};
		double num = 0, den = 0;
		for (size_t j = 0; j < a->n && j < t->n; j++) {
			double v = emu_k_d(&r->be, &a->v[j]), w = emu_k_d(&truth->be, &t->v[j]);
			double d = fabs(v - w);
			double u = d / ulp_in(a->fmt, w);
			if (isnan(u) || u > m.max_ulp)
				m.max_ulp = isnan(u) ? INFINITY : u;
			num += d * d;
			den += w * w;
			/* nonzero in truth even below the double range (exp(−1000)) */
			bool tnz = truth->be.kind == EMU_BE_TRUTH ? mpfr_regular_p(t->v[j].m) != 0
			                                          : w != 0 && isfinite(w);
			if (v == 0 && tnz)
				m.lost++;
		}
		m.rel_err = den > 0 ? sqrt(num) / sqrt(den) : (num > 0 ? INFINITY : 0);
		if (isnan(m.rel_err))
			m.rel_err = INFINITY;
		r->m[i] = m;
		if (m.lost && r->status < EMU_ST_UNDERFLOW)
			r->status = EMU_ST_UNDERFLOW;
	}
	r->have_metrics = true;
}

void emu_run_free(emu_run *r)
{
	emu_be_free(&r->be);
}
