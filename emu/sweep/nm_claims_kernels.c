/*
 * nm_claims_kernels.c — claims 9–16, 22, 23: the training kernels (GradScaler's settings, BCE,
 * batch norm, Apex O2, the scale 65536, einsum, recomputation, bf16 without loss scaling, RMSNorm,
 * Adam's eps). Each claim reads its case's results (nm_claims_int.h) and writes its numbers and
 * reasoning; nm_claims.c dispatches and writes the report.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/emu.h"
#include "emu/sweep/nm_claims_int.h"

/* ---- claims 9–16, 22, 23: training kernels ---- */
/* One gradscaler trajectory from a case's series CSV: the fast backend's
 * scale, skipped and lost per step at axis value g0. */
#define GS_NH 8 /* horizons: 10^3, 10^4, ... below the run's length, then the length */
typedef struct {
	size_t n, skips, uf_steps, isolated, recovered, never;
	size_t nh, horizon[GS_NH], skips_by[GS_NH]; /* skips within the first horizon[h] steps */
	double rec_sum, rec_max;
	double *skipped; /* per step, 1 when skipped (the caller frees it) */
} cl_gs;

/* r's series CSV into *s, read once (the first time a trajectory needs it:
 * it holds every stream, about 100 MB) */
static bool gs_series(cl_ctx *x, const cl_res *r, nm_csv *s, bool *read)
{
	if (*read)
		return true;
	char path[1024], err[512];
	snprintf(path, sizeof path, "%s/%s-series.csv", x->dir, r->c->name);
	if (nm_csv_read(path, s, err, sizeof err)) {
		snprintf(x->missing, sizeof x->missing, "%s", err);
		return false;
	}
	*read = true;
	return true;
}

/* the fast run's trajectory at g0 in r's series s */
static bool gs_traj(cl_ctx *x, const cl_res *r, const nm_csv *s, double g0, cl_gs *o)
{
	memset(o, 0, sizeof *o);
	int cb = nm_csv_col(s, "backend"), co = nm_csv_col(s, "output"),
	    ci = nm_csv_col(s, "index"), cv = nm_csv_col(s, "value"),
	    ca = r->c->naxes ? nm_csv_col(s, r->c->axes[0].name) : -1;
	size_t cap = s->nrec;
	double *sc = calloc(cap, sizeof *sc), *sk = calloc(cap, sizeof *sk),
	       *lo = calloc(cap, sizeof *lo);
	bool ok = sc && sk && lo && cb >= 0 && co >= 0 && ci >= 0 && cv >= 0 && ca >= 0;
	/* a point's rows are together: its axis cell is read as a number once */
	const char *axis_cell = NULL;
	double axis = 0;
	for (size_t i = 0; ok && i + 1 < s->nrec; i++) {
		if (strcmp(nm_csv_get(s, i, cb), "fast") != 0)
			continue;
		const char *cell = nm_csv_get(s, i, ca);
		if (!axis_cell || strcmp(cell, axis_cell) != 0) {
			axis_cell = cell;
			axis = nm_csv_num(cell);
		}
		if (axis != g0)
			continue;
		double k = nm_csv_num(nm_csv_get(s, i, ci)), v = nm_csv_num(nm_csv_get(s, i, cv));
		const char *out = nm_csv_get(s, i, co);
		if (!(k >= 0 && k < (double)cap))
			continue;
		size_t j = (size_t)k;
		if (strcmp(out, "scale") == 0) {
			sc[j] = v;
			o->n = j + 1 > o->n ? j + 1 : o->n;
		} else if (strcmp(out, "skipped") == 0)
			sk[j] = v;
		else if (strcmp(out, "lost") == 0)
			lo[j] = v;
	}
	for (size_t h = 1000; ok && h < o->n && o->nh + 1 < GS_NH; h *= 10)
		o->horizon[o->nh++] = h;
	if (ok && o->n)
		o->horizon[o->nh++] = o->n;
	for (size_t t = 0; ok && t < o->n; t++) {
		o->skips += sk[t] != 0;
		for (size_t h = 0; h < o->nh; h++)
			o->skips_by[h] += t < o->horizon[h] && sk[t] != 0;
		o->uf_steps += lo[t] > 0;
		/* recovery after an isolated skip (a spike after a clean step):
		 * steps until the scale is back where the skipped step ran */
		if (sk[t] == 0 || t == 0 || sk[t - 1] != 0)
			continue;
		o->isolated++;
		size_t k = t + 1;
		while (k < o->n && sc[k] < sc[t])
			k++;
		if (k == o->n) {
			o->never++;
			continue;
		}
		o->recovered++;
		o->rec_sum += (double)(k - t);
		o->rec_max = fmax(o->rec_max, (double)(k - t));
	}
	free(sc);
	o->skipped = sk;
	free(lo);
	if (!ok || !o->n)
		snprintf(x->missing, sizeof x->missing,
		         "no fast scale series at g0 = %g in %s-series.csv", g0, r->c->name);
	return ok && o->n;
}

/* Claim 9's verdict over one horizon: the conservative settings skip
 * nothing where the defaults skip: true; fewer: partly; as many or more:
 * false. */
static cl_verdict gs_verdict(size_t sd, size_t sc)
{
	return sc == 0 && sd > 0 ? V_TRUE : sc < sd ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_gradscaler_settings(cl_ctx *x)
{
	cl_res d, c;
	if (!cl_load(x, 9, "default", &d))
		return V_UNSETTLED;
	if (!cl_load(x, 9, "conservative", &c)) {
		cl_unload(&d);
		return V_UNSETTLED;
	}
	size_t ud = 0, uc = 0, nstreams = 0, nrec[2] = {0, 0}, both = 0, only_d = 0, only_c = 0;
	size_t nh = 0, hz[GS_NH] = {0}, hd[GS_NH] = {0}, hc[GS_NH] = {0}, fewer[GS_NH] = {0};
	double rec[2] = {0, 0};
	bool ok = true, have_sd = false, have_sc = false;
	nm_csv sd = {0}, sc = {0};
	for (size_t i = 0; ok && i < cl_nrows(&d); i++) {
		if (!cl_match(&d, i, NULL, NULL))
			continue;
		double g0 = cl_axis(&d, i, 0);
		cl_gs a = {0}, b = {0};
		ok = gs_series(x, &d, &sd, &have_sd) && gs_traj(x, &d, &sd, g0, &a);
		ok = ok && gs_series(x, &c, &sc, &have_sc) && gs_traj(x, &c, &sc, g0, &b);
		if (ok && a.skipped && b.skipped) /* same stream: the same steps spike */
			for (size_t t = 0; t < a.n && t < b.n; t++) {
				both += a.skipped[t] != 0 && b.skipped[t] != 0;
				only_d += a.skipped[t] != 0 && b.skipped[t] == 0;
				only_c += a.skipped[t] == 0 && b.skipped[t] != 0;
			}
		free(a.skipped);
		free(b.skipped);
		a.skipped = b.skipped = NULL;
		if (!ok)
			break;
		if (a.nh != b.nh || (nh && a.nh != nh)) {
			snprintf(x->missing, sizeof x->missing,
			         "the two parts' streams must have the same length");
			ok = false;
			break;
		}
		nh = a.nh;
		for (size_t h = 0; h < nh; h++) {
			hz[h] = a.horizon[h];
			hd[h] += a.skips_by[h];
			hc[h] += b.skips_by[h];
			fewer[h] += b.skips_by[h] < a.skips_by[h];
		}
		nstreams++;
		ud += a.uf_steps;
		uc += b.uf_steps;
		const cl_gs *g[2] = {&a, &b};
		for (int k = 0; k < 2; k++) {
			rec[k] += g[k]->rec_sum;
			nrec[k] += g[k]->recovered;
			nm_buf_printf(&x->num, "- g0 = %g, %s: skipped", g0,
			              k ? "conservative" : "defaults");
			for (size_t h = 0; h < g[k]->nh; h++)
				nm_buf_printf(&x->num, "%s %zu in the first %zu steps",
				              h ? ";" : "", g[k]->skips_by[h], g[k]->horizon[h]);
			nm_buf_printf(&x->num,
			              "; %zu steps ran at a scale that stored some gradients "
			              "as 0",
			              g[k]->uf_steps);
			if (g[k]->recovered)
				nm_buf_printf(
				    &x->num,
				    "; after %zu isolated skips the scale was back in %.0f "
				    "steps on average (at most %.0f)",
				    g[k]->recovered, g[k]->rec_sum / (double)g[k]->recovered,
				    g[k]->rec_max);
			if (g[k]->never)
				nm_buf_printf(&x->num, "; %zu skips never recovered within the run",
				              g[k]->never);
			nm_buf_printf(&x->num, "\n");
		}
	}
	cl_unload(&d);
	cl_unload(&c);
	nm_csv_free(&sd);
	nm_csv_free(&sc);
	if (!ok || !nstreams || !nh)
		return V_UNSETTLED;
	nm_buf_printf(&x->why,
	              "Over the same %zu gradient streams, skipped steps (defaults against "
	              "conservative, all streams together):",
	              nstreams);
	for (size_t h = 0; h < nh; h++)
		nm_buf_printf(&x->why,
		              "%s %zu against %zu in the first %zu steps (fewer in %zu of %zu "
		              "streams: the rule there says %s)",
		              h ? ";" : "", hd[h], hc[h], hz[h], fewer[h], nstreams,
		              cl_vname(gs_verdict(hd[h], hc[h])));
	nm_buf_printf(&x->why, ". ");
	/* the boundary: the verdict at each horizon, when it changes */
	bool turns = false;
	for (size_t h = 1; h < nh; h++)
		turns |= gs_verdict(hd[h], hc[h]) != gs_verdict(hd[0], hc[0]);
	if (turns) {
		nm_buf_printf(&x->why, "The verdict turns on the horizon (");
		for (size_t h = 0; h < nh; h++)
			nm_buf_printf(&x->why, "%s%s at %zu steps", h ? ", " : "",
			              cl_vname(gs_verdict(hd[h], hc[h])), hz[h]);
		nm_buf_printf(&x->why,
		              "); the verdict given is the longest run's, as training runs "
		              "are that long or longer. ");
	}
	nm_buf_printf(
	    &x->why,
	    "The conservative settings start lower (2048 against 65536), which saves the defaults' "
	    "first few skips while the scale comes down to what the gradients allow; after that "
	    "both sit at the ceiling, the largest scale the gradients take without overflowing, "
	    "and probe past it, the defaults one skip every 2001 steps and the conservative "
	    "settings every 1001 or 2001 (docs/gradscaler.md), so over a long run they skip as "
	    "often or more. ");
	nm_buf_printf(
	    &x->why,
	    "The streams are the same under both settings, so a step skipped under both is "
	    "most likely a 1e8 spike: %zu steps were, %zu only under the defaults and %zu "
	    "only under the conservative settings. Whether a spike overflows depends on "
	    "the scale the stream has reached when it comes, so a spike too can be "
	    "skipped under one setting only. ",
	    both, only_d, only_c);
	nm_buf_printf(&x->why,
	              "The price of the lower scale is underflow: steps at a scale that stored "
	              "some gradients as 0 number %zu with the conservative settings against %zu "
	              "with the defaults. ",
	              uc, ud);
	if (nrec[0] && nrec[1])
		nm_buf_printf(
		    &x->why,
		    "After a spike the scale is back where it was in %.0f steps on average "
		    "with the defaults (one growth by 2 after 2000 clean steps) and %.0f with "
		    "the conservative settings (two growths by 1.5, 1000 steps apart: 0.5 · "
		    "1.5² = 1.125); a spike within that time resets the count, so each spike "
		    "costs a long stretch at half the scale. ",
		    rec[0] / (double)nrec[0], rec[1] / (double)nrec[1]);
	nm_buf_printf(&x->why, "A skipped step is not a NaN in the weights: the skip is what "
	                       "keeps the NaN out. ");
	return cl_with_runs(gs_verdict(hd[nh - 1], hc[nh - 1]), cl_model9(x));
}

cl_verdict cl_claim_bce_float(cl_ctx *x)
{
	const emu_format *h = emu_format_by_name("fp16"), *s = emu_format_by_name("fp32");
	cl_res r;
	if (!h || !s || !cl_load(x, 10, NULL, &r))
		return V_UNSETTLED;
	const char *p16 = "storage=fp16", *p32 = "storage=fp16,compute=fp32";
	const char *vars[] = {"naive", "stable"};
	/* per variant and policy: failures at |x| = 100 and at |x| = 10 */
	size_t bad100[2][2] = {{0}}, bad10[2][2] = {{0}}, seen = 0;
	for (int v = 0; v < 2; v++)
		for (int p = 0; p < 2; p++) {
			nm_buf_printf(&x->num, "- %s, `%s`:", vars[v], p ? p32 : p16);
			for (size_t i = 0; i < cl_nrows(&r); i++) {
				if (!cl_match(&r, i, vars[v], p ? p32 : p16))
					continue;
				double xv = cl_axis(&r, i, 0), y = cl_axis(&r, i, 1);
				int st = cl_status(&r, i);
				seen++;
				nm_buf_printf(
				    &x->num, " x = %g, y = %g: %s%s%s%s;", xv, y, cl_stname(st),
				    *nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_op")) ? " (first "
				                                                       : "",
				    nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_op")),
				    *nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_op")) ? ")" : "");
				if (cl_overflowed(st))
					(fabs(xv) >= 100 ? bad100 : bad10)[v][p]++;
			}
			nm_buf_printf(&x->num, "\n");
		}
	cl_unload(&r);
	if (!seen) {
		snprintf(x->missing, sizeof x->missing, "the case needs the policies %s and %s",
		         p16, p32);
		return V_UNSETTLED;
	}
	double ln_h = log(h->max), ln_s = log(s->max);
	nm_buf_printf(&x->num,
	              "- descriptors: e^x overflows fp16 from x = ln(%.9g) = %.4g and fp32 from "
	              "x = ln(%.9g) = %.4g\n",
	              h->max, ln_h, s->max, ln_s);
	/* A: fp16 cannot hold e^100 and the naive loss breaks there in fp16 */
	bool a = 100 > ln_h && bad100[0][0] > 0;
	/* B: .float() makes the loss finite at ±100 (the naive formula the
	 * statement blames, since the stable one needs no exponential that large) */
	bool b = bad100[0][1] == 0;
	nm_buf_printf(&x->why,
	              "e^100 ≈ 2.7e43 is beyond fp16 (e^x overflows from x ≈ %.3g) %s: fp32's "
	              "exponentials overflow from x ≈ %.3g. So `.float()` %s the naive formula at "
	              "±100 (%zu of its fp32-arithmetic points there overflow or give NaN, %zu in "
	              "fp16). PyTorch's `binary_cross_entropy_with_logits` computes max(x, 0) − "
	              "x·y + log1p(exp(−|x|)), whose exponential is at most 1: it %s in fp16 "
	              "arithmetic already. ",
	              ln_h, 100 > ln_s ? "and beyond fp32 too" : "but not fp32", ln_s,
	              b ? "rescues" : "does not rescue", bad100[0][1], bad100[0][0],
	              bad100[1][0] || bad10[1][0] ? "still overflowed here"
	                                          : "never overflowed here");
	if (a && !b && 100 > ln_s)
		nm_buf_printf(
		    &x->why, "The half scored right (\"FP16 can't represent e^100\") is right but "
		             "beside the point: fp32 cannot represent it either, so it is not what "
		             "separates the two precisions; what saves the loss is the formula "
		             "that never forms e^100, not the format. ");
	return a && b ? V_TRUE : a || b ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_batchnorm_var(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 11, NULL, &r))
		return V_UNSETTLED;
	double lim = emu_format_by_name("fp16")->max;
	/* a tiny batch variance: below eps (sd below sqrt(1e-5)) */
	double tiny_sd = sqrt(1e-5);
	bool train_big = false, eval_big = false, seen_t = false, seen_e = false;
	double train_ymax = 0, eval_first = NAN;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, NULL))
			continue;
		const char *v = nm_csv_get(&r.t, i, r.cv);
		bool ev = strcmp(v, "eval") == 0;
		double sd = cl_axis(&r, i, 0), y = cl_num(&r, i, "y.maxabs");
		int st = cl_status(&r, i);
		bool big = y > lim || cl_overflowed(st);
		nm_buf_printf(
		    &x->num, "- %s, `%s`, input sd %g: status %s, largest finite |y| %.6g%s%s\n", v,
		    nm_csv_get(&r.t, i, r.cp), sd, cl_stname(st), y,
		    *nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_step")) ? ", first failing step "
		                                                         : "",
		    nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_step")));
		if (ev) {
			seen_e = true;
			if (big && !(eval_first <= sd))
				eval_first = sd;
			eval_big |= big;
		} else if (sd <= tiny_sd) {
			seen_t = true;
			train_big |= big;
			train_ymax = fmax(train_ymax, isnan(y) ? 0 : y);
		}
	}
	cl_unload(&r);
	if (!seen_t || !seen_e) {
		snprintf(x->missing, sizeof x->missing,
		         "the case needs twopass at an sd below %.3g and eval", tiny_sd);
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "Training mode (the batch's own variance, variance below eps): the largest "
	              "|y| is %.6g, %s. Samuelson's inequality bounds |x − mean| by sqrt((N − "
	              "1)·var), so |y| < sqrt(N − 1) whatever var and eps are. Eval mode, with a "
	              "running variance of 1e-8 left behind: %s",
	              train_ymax, train_big ? "yet it overflowed" : "nowhere near 65504",
	              eval_big ? "" : "no overflow here. ");
	if (eval_big)
		nm_buf_printf(&x->why,
		              "invstd = 1/sqrt(1e-8 + eps) ≈ 316, so an input more than about 207 "
		              "from the running mean overflows fp16 (here from input sd %g). The "
		              "statement holds for eval mode (a running variance), not for the "
		              "training step. ",
		              eval_first);
	return train_big && eval_big ? V_TRUE : eval_big || train_big ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_apex_o2(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 12, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"w.rel_err", "lost.maxabs", "vzero.maxabs",
	                                   "nonfinite.maxabs"};
	const char *pol[] = {"storage=fp32", "storage=fp32,state=fp16", "storage=fp32,grad=fp16",
	                     "storage=fp16,compute=fp32,state=fp32"};
	const char *what[] = {
	    "all fp32", "the statement's: fp32 weights, fp16 state",
	    "Apex O2's: fp16 model (fp16 gradients), fp32 master weights and state",
	    "fp16 master weights (and gradients), fp32 state and arithmetic"};
	if (!cl_need_cols(x, &r, cols, 4)) {
		cl_unload(&r);
		return V_UNSETTLED;
	}
	size_t n = 0, same = 0;
	double cost_state = 0, cost_master = 0, vz_state = 0, lost_master = 0, nf_state = 0;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, pol[0]))
			continue;
		double X = cl_axis(&r, i, 0);
		long j[4];
		bool all = true;
		for (int p = 0; p < 4; p++)
			all &= (j[p] = cl_row_vp(&r, NULL, pol[p], X, NAN)) >= 0;
		if (!all)
			continue;
		n++;
		for (int p = 0; p < 4; p++) {
			size_t k = (size_t)j[p];
			nm_buf_printf(
			    &x->num,
			    "- |g| < %g, %s (`%s`): weights' relative error %.3g, updates "
			    "lost %.3g, v underflowed %.3g, non-finite updates %.0f\n",
			    X, what[p], pol[p], cl_num(&r, k, "w.rel_err"),
			    cl_num(&r, k, "lost.maxabs"), cl_num(&r, k, "vzero.maxabs"),
			    cl_num(&r, k, "nonfinite.maxabs"));
		}
		double e1 = cl_num(&r, (size_t)j[1], "w.rel_err"),
		       e2 = cl_num(&r, (size_t)j[2], "w.rel_err");
		/* the statement's setup gives O2's numbers (within 1 %) */
		same += e1 == e2 || (isfinite(e1) && isfinite(e2) &&
		                     fabs(e1 - e2) <= 0.01 * fmax(fabs(e1), fabs(e2)));
		cost_state = fmax(cost_state, e1);
		cost_master = fmax(cost_master, cl_num(&r, (size_t)j[3], "w.rel_err"));
		vz_state = fmax(vz_state, cl_num(&r, (size_t)j[1], "vzero.maxabs"));
		nf_state = fmax(nf_state, cl_num(&r, (size_t)j[1], "nonfinite.maxabs"));
		lost_master = fmax(lost_master, cl_num(&r, (size_t)j[3], "lost.maxabs"));
	}
	cl_unload(&r);
	if (!n) {
		snprintf(x->missing, sizeof x->missing,
		         "the case needs the policies %s, %s, %s and %s", pol[0], pol[1], pol[2],
		         pol[3]);
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "Apex O2 casts the model to fp16 and keeps fp32 master weights for the "
	              "optimizer (FACTS §6b): the opposite placement. The statement's setup gives "
	              "O2's weights at %zu of %zu gradient magnitudes. What each half of fp16 "
	              "costs: fp16 state loses v to underflow (up to %.3g %% of the entries; %.0f "
	              "non-finite updates) and leaves the weights with a relative error up to "
	              "%.3g (denom, a tensor of v's dtype, is 0 where v is); fp16 master weights "
	              "drop up to %.3g %% of the updates (below half an ulp "
	              "of the weight) and end with an error up to %.3g. ",
	              same, n, 100 * vz_state, nf_state, cost_state, 100 * lost_master,
	              cost_master);
	return same == n ? V_TRUE : same == 0 ? V_FALSE : V_PARTLY;
}

/* How close a value is to fp16's largest, as the statement's "close" reads:
 * within 2 % true, beyond 10 % false, between partly ("about" stretched). */
static cl_verdict closeness(double gap)
{
	return gap <= 0.02 ? V_TRUE : gap > 0.10 ? V_FALSE : V_PARTLY;
}

cl_verdict cl_claim_scale_65536(cl_ctx *x)
{
	const emu_format *h = emu_format_by_name("fp16");
	cl_res r;
	if (!h || !cl_load(x, 13, NULL, &r))
		return V_UNSETTLED;
	const char *pols[] = {"storage=fp32", "storage=fp16,compute=fp32", "storage=fp16"};
	bool bad16 = false, seen = false;
	double held = NAN; /* the scaled loss GradScaler holds (fp32) at S = 65536 */
	for (size_t i = 0; i < cl_nrows(&r); i++)
		for (int p = 0; p < 3; p++)
			if (cl_match(&r, i, NULL, pols[p])) {
				double s = cl_axis(&r, i, 0), v = cl_num(&r, i, "grad.maxabs");
				int st = cl_status(&r, i);
				/* maxabs is the largest finite |value|: 0 for an infinite loss */
				if (cl_overflowed(st))
					nm_buf_printf(
					    &x->num,
					    "- S = %.9g, `%s`: status %s, the scaled loss is not "
					    "finite",
					    s, pols[p], cl_stname(st));
				else
					nm_buf_printf(
					    &x->num,
					    "- S = %.9g, `%s`: status %s, scaled loss %.9g", s,
					    pols[p], cl_stname(st), v);
				if (p == 0 && !cl_overflowed(st))
					nm_buf_printf(
					    &x->num,
					    " (%.3g %% from fp16's largest: the rule would "
					    "say %s of this S)",
					    100 * fabs(v / h->max - 1),
					    cl_vname(closeness(fabs(v / h->max - 1))));
				nm_buf_printf(&x->num, "\n");
				if (s == 65536) {
					seen |= p == 0;
					if (p == 0)
						held = cl_overflowed(st) ? INFINITY : v;
					else
						bad16 |= cl_overflowed(st);
				}
			}
	cl_unload(&r);
	if (!seen) {
		snprintf(x->missing, sizeof x->missing,
		         "the case needs S = 65536 with storage=fp32");
		return V_UNSETTLED;
	}
	double thr = cl_ovf_threshold(h), gap = fabs(held / h->max - 1);
	nm_buf_printf(&x->num,
	              "- fp16 (descriptor): largest finite %.9g, values round to inf from %.9g\n",
	              h->max, thr);
	nm_buf_printf(
	    &x->why,
	    "The statement says \"close to\", and that is what the rule reads: the scale "
	    "as GradScaler holds it (an fp32 scalar, %.9g) is %.3g %% from fp16's largest "
	    "value %.9g (close: within 2 %%; beyond 10 %% not close; between, partly). "
	    "It does not say the scale fits in fp16, and it does not: 65536 is past fp16's "
	    "overflow point %.9g (%s), so a scaled loss of 1 held in fp16 %s. GradScaler "
	    "never holds it there: the scale and, under autocast, the loss are fp32. ",
	    held, 100 * gap, h->max, thr,
	    65536 < thr ? "an fp16 value" : "it rounds to inf; 2^16 is fp16's inf",
	    bad16 ? "is inf at S = 65536" : "stays finite");
	return closeness(gap);
}

cl_verdict cl_claim_einsum_fp16(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 14, NULL, &r))
		return V_UNSETTLED;
	const char *p16 = "storage=fp16,compute=fp32", *pb = "storage=bf16,compute=fp32";
	size_t n = 0, bad = 0, badb = 0;
	double first = NAN, last_ok = NAN, c_ok = NAN;
	char step[64] = "";
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		bool h = cl_match(&r, i, NULL, p16), b = cl_match(&r, i, NULL, pb);
		if (!h && !b)
			continue;
		int st = cl_status(&r, i);
		double X = cl_axis(&r, i, 0), c = cl_num(&r, i, "c.maxabs");
		nm_buf_printf(
		    &x->num, "- input sd %g, `%s`: status %s, largest finite |c| %.6g%s%s\n", X,
		    h ? p16 : pb, cl_stname(st), c,
		    *nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_step")) ? ", first failing step "
		                                                         : "",
		    nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_step")));
		if (b) {
			badb += cl_overflowed(st);
			continue;
		}
		n++;
		if (cl_overflowed(st)) {
			if (!bad++) {
				first = X;
				snprintf(step, sizeof step, "%s",
				         nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_step")));
			}
		} else {
			last_ok = X;
			c_ok = c;
		}
	}
	cl_unload(&r);
	if (!n) {
		snprintf(x->missing, sizeof x->missing, "the case needs the policy %s", p16);
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "Under autocast an einsum is a GEMM on fp16 operands that accumulates in "
	              "fp32 and stores fp16. Here it overflows at %zu of %zu input magnitudes",
	              bad, n);
	if (bad)
		nm_buf_printf(
		    &x->why,
		    ", from sd %g on (first failing step `%s`): the fp32 sum is finite and "
		    "only the stored result, beyond 65504, is not. Up to sd %g the largest "
		    "|c| is %.6g",
		    first, step, last_ok, c_ok);
	nm_buf_printf(&x->why,
	              ". With bf16 storage it overflows at %zu. So it overflows when its results "
	              "exceed 65504, not because the sum is formed in fp16. ",
	              badb);
	return bad == n ? V_TRUE : bad == 0 ? V_FALSE : V_PARTLY;
}

cl_verdict cl_claim_recompute_fp16(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 15, NULL, &r))
		return V_UNSETTLED;
	const char *fw = "storage=fp16,compute=fp32", *rc = "storage=fp16";
	size_t pairs = 0, fresh = 0;
	double first = NAN;
	const char *firstv = "";
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, fw))
			continue;
		const char *v = nm_csv_get(&r.t, i, r.cv);
		double L = cl_axis(&r, i, 0);
		long j = cl_row_vp(&r, v, rc, L, NAN);
		if (j < 0)
			continue;
		pairs++;
		int a = cl_status(&r, i), b = cl_status(&r, (size_t)j);
		nm_buf_printf(&x->num,
		              "- %s, largest |logit| %g: forward (`%s`) %s; recomputed (`%s`) %s\n",
		              v, L, fw, cl_stname(a), rc, cl_stname(b));
		if (!cl_overflowed(a) && cl_overflowed(b)) {
			fresh++;
			if (!(first <= L)) {
				first = L;
				firstv = strcmp(v, "naive") == 0 ? "naive" : "lse";
			}
		}
	}
	cl_unload(&r);
	if (!pairs) {
		snprintf(x->missing, sizeof x->missing, "the case needs the policies %s and %s", fw,
		         rc);
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "Recomputed under the forward's own policy, a deterministic kernel gives the "
	              "forward's outputs bit for bit (nanmap run --recompute with the same "
	              "policy reports no difference), and torch.utils.checkpoint restores the "
	              "forward's autocast state, so that is what it does. Recomputed with fp16 "
	              "arithmetic instead, %zu of %zu points overflow where the forward did not",
	              fresh, pairs);
	if (fresh)
		nm_buf_printf(&x->why, " (from a largest |logit| of %g, %s)", first, firstv);
	nm_buf_printf(&x->why, ". It can happen only when the recomputation runs in another "
	                       "precision than the forward, which torch.utils.checkpoint does not "
	                       "do: the statement's \"recomputes in FP16\" is wrong for it, so at "
	                       "best the statement is partly right (a recomputation outside the "
	                       "forward's autocast state, written by hand, can overflow), and "
	                       "true is out of reach by construction. ");
	return fresh ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_bf16_unscaled(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 16, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"frac_lost", "frac_overflow"};
	const char *ph = "storage=fp16,compute=fp32", *pb = "storage=bf16,compute=fp32";
	if (!cl_need_cols(x, &r, cols, 2) || r.c->naxes != 2) {
		if (!*x->missing)
			snprintf(x->missing, sizeof x->missing,
			         "case %s needs axes S and magnitude", r.c->name);
		cl_unload(&r);
		return V_UNSETTLED;
	}
	size_t n = 0, fine = 0;
	double worst_b = 0, worst_h1 = 0, worst_hs = 0, big_s = 0, same_mag = NAN, same_lost = 0;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, pb) || cl_axis(&r, i, 0) != 1)
			continue;
		double mag = cl_axis(&r, i, 1), lb = cl_num(&r, i, "frac_lost");
		/* fp16 with the largest scale on the axis, and unscaled */
		long js = -1, j1 = cl_row_vp(&r, NULL, ph, 1, mag);
		for (size_t k = 0; k < cl_nrows(&r); k++)
			if (cl_match(&r, k, NULL, ph) && cl_axis(&r, k, 1) == mag &&
			    cl_axis(&r, k, 0) >= big_s) {
				big_s = cl_axis(&r, k, 0);
				js = (long)k;
			}
		if (js < 0 || j1 < 0)
			continue;
		n++;
		double ls = cl_num(&r, (size_t)js, "frac_lost"),
		       l1 = cl_num(&r, (size_t)j1, "frac_lost");
		double os = cl_num(&r, (size_t)js, "frac_overflow");
		nm_buf_printf(
		    &x->num,
		    "- magnitude %g: bf16 unscaled loses %.3g of the gradients; fp16 loses "
		    "%.3g unscaled and %.3g at S = %g (%.3g overflowed)\n",
		    mag, lb, l1, ls, big_s, os);
		fine += lb <= ls || !(os == 0);
		if (ls > 0 && ls == l1 && isnan(same_mag)) {
			same_mag = mag;
			same_lost = ls;
		}
		worst_b = fmax(worst_b, lb);
		worst_h1 = fmax(worst_h1, l1);
		worst_hs = fmax(worst_hs, ls);
	}
	cl_unload(&r);
	if (!n) {
		snprintf(x->missing, sizeof x->missing, "the case needs %s at S = 1 and %s", pb,
		         ph);
		return V_UNSETTLED;
	}
	nm_buf_printf(
	    &x->why,
	    "bf16 has fp32's exponent range, so at these magnitudes its unscaled "
	    "gradients lose at most %.3g to underflow, against %.3g for fp16 unscaled and "
	    "%.3g for fp16 with loss scaling: bf16 unscaled loses no more than scaled "
	    "fp16 at %zu of %zu magnitudes. Scaling cannot buy bf16 precision: its 8 "
	    "significant bits are the same at any scale. ",
	    worst_b, worst_h1, worst_hs, fine, n);
	if (!isnan(same_mag))
		nm_buf_printf(
		    &x->why,
		    "Where fp16 loses as much scaled as unscaled (%.3g at magnitude %g), "
		    "what it loses is not gradients: the layer's inputs of that magnitude "
		    "underflow when they are stored in fp16, so the weight gradients that "
		    "multiply them are 0 at any loss scale. Loss scaling protects the "
		    "gradients, not the activations. ",
		    same_lost, same_mag);
	return cl_with_runs(fine == n ? V_TRUE : fine == 0 ? V_FALSE : V_PARTLY, cl_model16(x));
}

cl_verdict cl_claim_rmsnorm_256(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 22, NULL, &r))
		return V_UNSETTLED;
	/* the policies with fp16 arithmetic: what "RMSNorm in fp16" computes */
	const char *pols[] = {"storage=fp16", "storage=fp16,accum=fp32",
	                      "storage=fp16,compute=fp32"};
	const char *vars[] = {"plain", "fp32stats"};
	size_t f16 = 0, at256 = 0, ovf = 0;
	for (int v = 0; v < 2; v++)
		for (int p = 0; p < 3; p++) {
			double ok, bad;
			cl_grid_first(&r, vars[v], pols[p], cl_overflowed, &ok, &bad);
			long t = -1;
			const char *evs[] = {"inf", "overflow", "nan"};
			for (int k = 0; k < 3 && t < 0 && !isnan(bad); k++)
				t = cl_thr_find(x, r.c, vars[v], pols[p], r.c->axes[0].name,
				                evs[k]);
			if (t >= 0) {
				ok = cl_thr_num(x, t, "last_ok");
				bad = cl_thr_num(x, t, "first_bad");
			}
			double top = 0;
			for (size_t i = 0; i < cl_nrows(&r); i++)
				if (cl_match(&r, i, vars[v], pols[p]))
					top = fmax(top, cl_axis(&r, i, 0));
			if (isnan(bad))
				nm_buf_printf(&x->num, "- %s, `%s`: no overflow up to sd %g\n",
				              vars[v], pols[p], top);
			else
				nm_buf_printf(
				    &x->num,
				    "- %s, `%s`: overflows from sd %.6g (%s; %.6g is fine)\n",
				    vars[v], pols[p], bad, t >= 0 ? "bisected" : "grid bracket",
				    ok);
			if (v == 0 && p < 2) {
				f16++;
				ovf += !isnan(bad);
				at256 += !isnan(bad) && fabs(bad / 256 - 1) < 0.1;
			}
		}
	cl_unload(&r);
	if (!f16)
		return V_UNSETTLED;
	nm_buf_printf(&x->why,
	              "In fp16 arithmetic x² overflows for |x| ≥ 255.97, so a row whose every "
	              "element is about 256 fails there; but a normal row's largest element is a "
	              "few times its RMS, and an fp16 accumulator's Σx² overflows once N·RMS² "
	              "reaches 65520. Of the %zu fp16-arithmetic policies, %zu overflow and %zu "
	              "do so within 10 %% of an RMS of 256. PyTorch's and Apex's fused kernels "
	              "form the statistics in fp32 (`fp32stats`). ",
	              f16, ovf, at256);
	return at256 == f16 ? V_TRUE : ovf ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_adam_eps(cl_ctx *x)
{
	const emu_format *h = emu_format_by_name("fp16");
	cl_res rr[2];
	if (!h || !cl_load(x, 23, "tensor", &rr[0]))
		return V_UNSETTLED;
	if (!cl_load(x, 23, "fused", &rr[1])) {
		cl_unload(&rr[0]);
		return V_UNSETTLED;
	}
	enum { NP = 5 };
	const int part[NP] = {0, 0, 0, 1, 1};
	const char *pols[NP] = {"storage=fp16", "storage=fp16,compute=fp32",
	                        "storage=fp32,state=fp16", "storage=fp16,compute=fp32",
	                        "storage=fp32,state=fp16"};
	const char *what[NP] = {
	    "fp16 arithmetic", "fp16 tensors, fp32 opmath (PyTorch)", "fp32 weights, fp16 state",
	    "fp16 tensors, fused kernel (PyTorch fused=True): denom in fp32",
	    "fp32 weights, fp16 state, fused kernel (FusedAdam): denom in fp32"};
	/* per placement at eps = 1e-8: eps as the arithmetic sees it, and whether
	 * the step breaks (non-finite updates) where the largest eps does not */
	bool zero[NP] = {false}, nf8[NP] = {false}, nftop[NP] = {false}, seen[NP] = {false};
	double survive = NAN, top[NP] = {0};
	for (int p = 0; p < NP; p++) {
		const cl_res *r = &rr[part[p]];
		for (size_t i = 0; i < cl_nrows(r); i++) {
			if (!cl_match(r, i, NULL, pols[p]))
				continue;
			double e = cl_axis(r, i, 0), ev = cl_num(r, i, "eps.maxabs");
			double nf = cl_num(r, i, "nonfinite.maxabs");
			nm_buf_printf(&x->num,
			              "- eps %g, %s (`%s`%s): eps as the arithmetic sees it %.9g; "
			              "non-finite updates %.0f\n",
			              e, what[p], pols[p], part[p] ? ", fused=1" : "", ev, nf);
			if (fabs(e / 1e-8 - 1) < 1e-6) {
				seen[p] = true;
				zero[p] = ev == 0;
				nf8[p] = nf > 0;
			}
			if (e >= top[p]) {
				top[p] = e;
				nftop[p] = nf > 0;
			}
			if (p == 0 && ev != 0 && !(survive <= e))
				survive = e;
		}
	}
	cl_unload(&rr[0]);
	cl_unload(&rr[1]);
	for (int p = 0; p < NP; p++)
		if (!seen[p]) {
			snprintf(x->missing, sizeof x->missing,
			         "the case needs eps = 1e-8 under %s%s", pols[p],
			         part[p] ? " (fused part)" : "");
			return V_UNSETTLED;
		}
	/* zero in effect: the scalar is 0, or the step breaks at 1e-8 and not
	 * at a larger eps (eps lost where it lands in an fp16 tensor) */
	int n = 0, nfused = 0;
	for (int p = 0; p < NP; p++) {
		bool z = zero[p] || (nf8[p] && !nftop[p]);
		n += z;
		nfused += z && part[p];
	}
	nm_buf_printf(&x->why,
	              "fp16's smallest subnormal is %.6g and half of it %.6g: 1e-8 %s in fp16 "
	              "arithmetic; the smallest eps on the axis that survives there is %g. Under "
	              "PyTorch's opmath the scalar eps is fp32 and %s, but in the for-each kernel "
	              "denom = √v/√bc2 + eps is a tensor of v's dtype: with v = 0 in fp16 (here "
	              "(1 − β2)·g² < 2^-25) denom is 1e-8 rounded to fp16, 0, and the update "
	              "divides by it (%s). The fused kernels (PyTorch's fused=True, Apex's "
	              "FusedAdam) form denom in fp32 registers and never store it: there eps is "
	              "%s. eps is zero in effect in %d of the %d placements of fp16. ",
	              h->min_subnormal, h->min_subnormal / 2, zero[0] ? "rounds to 0" : "survives",
	              survive, zero[1] ? "0 too" : "kept",
	              nf8[1] || nf8[2] ? "non-finite updates at 1e-8, none at the largest eps"
	                               : "no non-finite update here",
	              nfused ? "lost as well" : "kept and the update finite", n, NP);
	return n == NP ? V_TRUE : n == 0 ? V_FALSE : V_PARTLY;
}
