/*
 * nm_claims_formats.c — claims 1–8: the formats, loss scaling and the losses (fp16's range, the
 * scaled loss, cross-entropy and .float(), LayerNorm's eps, gradient accumulation, bf16 against
 * fp16, fp16 sums, FP8 scaling). Each claim reads its case's results (nm_claims_int.h) and writes
 * its numbers and reasoning; nm_claims.c dispatches and writes the report.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/emu.h"
#include "emu/sweep/nm_claims_int.h"

cl_verdict cl_claim_fp16_range(cl_ctx *x)
{
	const emu_format *h = emu_format_by_name("fp16");
	cl_res r;
	if (!h || !cl_load(x, 1, NULL, &r))
		return V_UNSETTLED;
	const char *pol = r.c->npolicies ? r.c->policy_specs[0] : "";
	nm_buf_printf(
	    &x->num,
	    "- fp16 format (descriptor): largest finite %.9g, smallest normal 2^%d = %.6g, "
	    "smallest subnormal 2^%d = %.6g, overflow threshold under RNE %.9g\n",
	    h->max, h->emin, h->min_normal, h->emin - h->p + 1, h->min_subnormal,
	    cl_ovf_threshold(h));
	/* overflow: from the thresholds when found, else the grid bracket */
	double ov_ok, ov_bad, un_bad, un_ok;
	cl_grid_first(&r, NULL, pol, cl_overflowed, &ov_ok, &ov_bad);
	cl_grid_last(&r, NULL, pol, cl_is_underflow, &un_bad, &un_ok);
	long t = cl_thr_find(x, r.c, NULL, pol, r.c->axes[0].name, "inf");
	if (t < 0)
		t = cl_thr_find(x, r.c, NULL, pol, r.c->axes[0].name, "overflow");
	double ov_real = NAN, un_real = NAN;
	if (t >= 0) {
		ov_ok = cl_thr_num(x, t, "last_ok");
		ov_bad = cl_thr_num(x, t, "first_bad");
		ov_real = cl_thr_num(x, t, "real_boundary");
	}
	long u = cl_thr_find(x, r.c, NULL, pol, r.c->axes[0].name, "underflow");
	if (u >= 0) {
		un_ok = cl_thr_num(x, u, "last_ok");
		un_bad = cl_thr_num(x, u, "first_bad");
		un_real = cl_thr_num(x, u, "real_boundary");
	}
	nm_buf_printf(&x->num,
	              "- case `%s` (`%s`): a value stored into an fp16 accumulator overflows from "
	              "%.17g on; %.17g is still finite (%s)",
	              r.c->name, pol, ov_bad, ov_ok, t >= 0 ? "bisected" : "grid bracket");
	if (!isnan(ov_real))
		nm_buf_printf(&x->num, "; exact boundary %.9g", ov_real);
	nm_buf_printf(&x->num,
	              "\n- it becomes 0 (status underflow) up to %.17g; %.17g survives (%s)",
	              un_bad, un_ok, u >= 0 ? "bisected" : "grid bracket");
	if (!isnan(un_real))
		nm_buf_printf(&x->num, "; exact boundary %.9g", un_real);
	nm_buf_printf(&x->num, "\n");
	/* precision in the subnormal range: the largest relative error there */
	double sub_err = 0, sub_at = NAN;
	const char *ecol = cl_has_col(&r, "result.rel_err") ? "result.rel_err" : NULL;
	for (size_t i = 0; ecol && i < cl_nrows(&r); i++) {
		double v = cl_axis(&r, i, 0), e = cl_num(&r, i, ecol);
		if (cl_match(&r, i, NULL, pol) && cl_status(&r, i) == 0 && v < h->min_normal &&
		    e > sub_err) {
			sub_err = e;
			sub_at = v;
		}
	}
	if (ecol)
		nm_buf_printf(
		    &x->num,
		    "- below the smallest normal, values survive with fewer bits: relative "
		    "error up to %.3g (at %.3g)\n",
		    sub_err, sub_at);
	cl_unload(&r);
	/* the statement's ends against the computed ones (2 % slack) */
	bool upper = 6.5e4 >= ov_ok * 0.98 && 6.5e4 <= ov_bad * 1.02;
	double lo_end = isnan(un_ok) ? un_bad : un_ok;
	bool lower = fabs(lo_end / 6e-5 - 1) < 0.5;
	bool normal_lower = fabs(h->min_normal / 6e-5 - 1) < 0.05;
	nm_buf_printf(
	    &x->why,
	    "The upper end %s: fp16 overflows from %.6g on (its largest value is %.9g). The lower "
	    "end %s: %.3g is the smallest *normal* number (2^%d)%s, but values survive down to "
	    "%.3g, the subnormal range (2^%d), with ever fewer significant bits; only below "
	    "that do they become 0. ",
	    upper ? "is right" : "is wrong", isnan(ov_real) ? ov_bad : ov_real, h->max,
	    lower ? "is right" : "is not", h->min_normal, h->emin,
	    normal_lower ? ", which is what 6e-5 names" : "", lo_end, h->emin - h->p + 1);
	if (normal_lower && !lower)
		nm_buf_printf(&x->why,
		              "The verdict rests on that reading: \"range\" read as where stored "
		              "values become 0. Read as the normal range, where every value keeps "
		              "fp16's 11 bits (the usual meaning of a format's dynamic range), the "
		              "statement is right at both ends. ");
	return upper && lower ? V_TRUE : upper || lower ? V_PARTLY : V_FALSE;
}

/* Claim 2's verdict at one loss: overflowed when scaled by the default 65536
 * already (so at both scales the statement names): true; only once the scale
 * has grown to 131072: partly; at neither: false. */
static cl_verdict scaled_verdict(bool at65536, bool at131072)
{
	return at65536 && at131072 ? V_TRUE : at131072 ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_scaled_loss(cl_ctx *x)
{
	const emu_format *s32 = emu_format_by_name("fp32");
	cl_res r, b;
	if (!s32 || !cl_load(x, 2, "forward", &r))
		return V_UNSETTLED;
	if (!cl_load(x, 2, "backward", &b)) {
		cl_unload(&r);
		return V_UNSETTLED;
	}
	/* forward: the product loss × S in fp32 (PyTorch's promotion) */
	double losses[16];
	bool ovf[16][2];
	size_t nl = 0;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, "storage=fp32"))
			continue;
		double loss = cl_axis(&r, i, 0), sc = cl_axis(&r, i, 1);
		int k = sc == 65536 ? 0 : sc == 131072 ? 1 : -1;
		if (k < 0)
			continue;
		size_t j = 0;
		while (j < nl && losses[j] != loss)
			j++;
		if (j == nl) {
			if (nl == 16)
				continue;
			losses[nl] = loss;
			ovf[nl][0] = ovf[nl][1] = false;
			nl++;
		}
		int st = cl_status(&r, i);
		ovf[j][k] = cl_overflowed(st);
		if (cl_overflowed(st))
			nm_buf_printf(
			    &x->num,
			    "- forward, loss %.9g × S = %.9g in fp32 (`storage=fp32`): status "
			    "%s, the scaled loss is not finite\n",
			    loss, sc, cl_stname(st));
		else
			nm_buf_printf(
			    &x->num,
			    "- forward, loss %.9g × S = %.9g in fp32 (`storage=fp32`): status "
			    "%s, scaled loss %.9g\n",
			    loss, sc, cl_stname(st), cl_num(&r, i, "grad.maxabs"));
	}
	cl_unload(&r);
	/* backward: the gradient S held in fp32 and cast into fp16 */
	bool bwd16[2] = {false, false}, bwd32[2] = {false, false}, seen_b = false;
	for (size_t i = 0; i < cl_nrows(&b); i++) {
		double sc = cl_axis(&b, i, 0);
		int k = sc == 65536 ? 0 : sc == 131072 ? 1 : -1;
		bool p16 = cl_match(&b, i, NULL, "storage=fp16,compute=fp32"),
		     p32 = cl_match(&b, i, NULL, "storage=fp32");
		if (k < 0 || (!p16 && !p32))
			continue;
		int st = cl_status(&b, i);
		seen_b = true;
		if (p16)
			bwd16[k] = cl_overflowed(st);
		else
			bwd32[k] = cl_overflowed(st);
		nm_buf_printf(&x->num, "- backward, the gradient S = %.9g %s: status %s\n", sc,
		              p16 ? "cast into an fp16 loss's dtype (`storage=fp16,compute=fp32`)"
		                  : "held in fp32, an autocast loss's dtype (`storage=fp32`)",
		              cl_stname(st));
	}
	cl_unload(&b);
	long at15 = -1;
	for (size_t j = 0; j < nl; j++)
		if (losses[j] == 15)
			at15 = (long)j;
	if (at15 < 0 || !seen_b) {
		snprintf(
		    x->missing, sizeof x->missing,
		    "the forward part needs loss 15 at S = 65536 and 131072 (storage=fp32), the "
		    "backward part S = 65536 and 131072");
		return V_UNSETTLED;
	}
	/* the boundary: the smallest loss whose fp32 product overflows at 131072 */
	double bound = cl_ovf_threshold(s32) / 131072;
	nm_buf_printf(&x->why,
	              "GradScaler's scale() multiplies the loss by a zero-dimensional fp32 tensor, "
	              "and PyTorch promotes a 0-dim fp16 times a 0-dim fp32 to fp32, so the scaled "
	              "loss is fp32 whatever the loss's dtype: 15 × 131072 = %.9g is %s. A product "
	              "overflows only for a loss above fp32's overflow point / 131072 ≈ %.3g (an "
	              "fp16 loss is at most 65504, so its product never does). ",
	              15.0 * 131072, ovf[at15][1] ? "not finite" : "finite", bound);
	for (size_t j = 0; j < nl; j++)
		if ((size_t)at15 != j)
			nm_buf_printf(&x->why, "The rule at a loss of %.3g would say %s. ",
			              losses[j], cl_vname(scaled_verdict(ovf[j][0], ovf[j][1])));
	if (bwd16[0] || bwd16[1])
		nm_buf_printf(
		    &x->why,
		    "The overflow is in backward: it starts from d(loss·S)/d(loss) = S, and where "
		    "the "
		    "loss is fp16 (a .half() model) that gradient is cast into fp16, inf at S = "
		    "%s, "
		    "whatever the loss's value. Under autocast the loss is fp32 and S stays fp32%s "
		    "until the first fp16 activation, whose gradient is S times its own: whether "
		    "that overflows depends on the gradients, not on the loss. ",
		    bwd16[0] ? "65536 and 131072 (both above fp16's overflow point 65520)"
		             : "131072",
		    bwd32[0] || bwd32[1] ? " (here it overflows even there)" : "");
	return scaled_verdict(ovf[at15][0], ovf[at15][1]);
}

cl_verdict cl_claim_ce_float(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 3, NULL, &r))
		return V_UNSETTLED;
	const char *h = "storage=fp16", *f = "storage=fp16,compute=fp32";
	const char *vars[] = {"naive", "maxsub", "lse"};
	double lim = emu_format_by_name("fp16")->max;
	double maxerr[2][3], firstbad[2][3], firstunder = NAN;
	bool anybad[2][3], seen = false;
	const char *ecol =
	    cl_has_col(&r, "loss.arith_rel_err") ? "loss.arith_rel_err" : "loss.rel_err";
	for (int p = 0; p < 2; p++)
		for (int v = 0; v < 3; v++) {
			const char *pol = p ? f : h;
			maxerr[p][v] = 0;
			firstbad[p][v] = NAN;
			anybad[p][v] = false;
			for (size_t i = 0; i < cl_nrows(&r); i++) {
				/* the arithmetic's error: the logits are fp16 tensors in
				 * every policy, the question is what is computed on them */
				double z = cl_axis(&r, i, 0), e = cl_num(&r, i, ecol);
				if (!cl_match(&r, i, vars[v], pol) || !(z <= lim))
					continue;
				seen = true;
				int st = cl_status(&r, i);
				if (cl_overflowed(st) && !anybad[p][v]) {
					anybad[p][v] = true;
					firstbad[p][v] = z;
				}
				if (st == 1 && !(firstunder <= z))
					firstunder = z;
				if (!cl_overflowed(st) && isfinite(e) && e > maxerr[p][v])
					maxerr[p][v] = e;
			}
			/* the sharpest overflow boundary the thresholds have */
			const char *ev = NULL;
			const char *evs[] = {"overflow", "inf", "nan"};
			for (int k = 0; k < 3 && anybad[p][v]; k++) {
				long t =
				    cl_thr_find(x, r.c, vars[v], pol, r.c->axes[0].name, evs[k]);
				if (t >= 0 &&
				    (!ev || cl_thr_num(x, t, "first_bad") < firstbad[p][v])) {
					firstbad[p][v] = cl_thr_num(x, t, "first_bad");
					ev = evs[k];
				}
			}
			if (anybad[p][v])
				nm_buf_printf(
				    &x->num,
				    "- %s, `%s`: the loss overflows (%s) from a largest |logit| of "
				    "%.9g%s; before that its arithmetic error is at most %.3g\n",
				    vars[v], pol, ev ? ev : "grid", firstbad[p][v],
				    ev ? " (bisected)" : "", maxerr[p][v]);
			else
				nm_buf_printf(
				    &x->num,
				    "- %s, `%s`: finite up to a largest |logit| of %.9g; loss "
				    "arithmetic error at most %.3g\n",
				    vars[v], pol, lim, maxerr[p][v]);
		}
	cl_unload(&r);
	if (!seen) {
		snprintf(x->missing, sizeof x->missing, "the case needs the policies %s and %s", h,
		         f);
		return V_UNSETTLED;
	}
	if (!isnan(firstunder))
		nm_buf_printf(
		    &x->num,
		    "- some gradients (classes with tiny probability) are stored as 0 in fp16 "
		    "(status underflow) from a largest |logit| of %.6g on, in every policy "
		    "alike: the gradient is an fp16 tensor either way\n",
		    firstunder);
	/* unstable in fp16: some fp16-arithmetic variant overflows or loses more than 1 % */
	bool unstable = false;
	for (int v = 0; v < 3; v++)
		unstable |= anybad[0][v] || maxerr[0][v] > 1e-2;
	/* fixed by .float(): the log-softmax PyTorch runs, in fp32, never overflows and is accurate
	 */
	bool fixed = !anybad[1][2] && maxerr[1][2] <= 1e-3;
	nm_buf_printf(&x->why, "With fp16 arithmetic the naive formula ");
	if (anybad[0][0])
		nm_buf_printf(
		    &x->why,
		    "overflows from a largest logit of %.6g (the exponentials or their sum "
		    "leave fp16)",
		    firstbad[0][0]);
	else
		nm_buf_printf(&x->why, "never overflows here");
	nm_buf_printf(&x->why,
	              "; the max-subtracted and log-sum-exp forms %s, with loss errors up to %.3g "
	              "and %.3g (the fp16 sum of many exponentials loses digits). ",
	              anybad[0][1] || anybad[0][2] ? "overflow too" : "stay finite", maxerr[0][1],
	              maxerr[0][2]);
	nm_buf_printf(
	    &x->why,
	    "Computing on `logits.float()` with PyTorch's formula (log-sum-exp) %s over "
	    "every fp16 logit up to %.9g, with loss error at most %.3g against the exact "
	    "loss of the fp16 logits (the arithmetic error; the logits' own fp16 rounding "
	    "is not the formula's doing). ",
	    fixed ? "is finite and accurate" : "is not enough", lim, maxerr[1][2]);
	if (anybad[1][0])
		nm_buf_printf(
		    &x->why,
		    "The formula matters as much as the format: the naive formula in fp32 "
		    "still overflows from %.6g. ",
		    firstbad[1][0]);
	/* the same question in a whole training run (nanmap train, docs/train.md) */
	cl_res t;
	char keep[sizeof x->missing];
	snprintf(keep, sizeof keep, "%s", x->missing);
	if (cl_load(x, 3, "model", &t)) {
		static const char *const v[2] = {"fp16-pure:state=fp32",
		                                 "fp16-pure:state=fp32:loss=fp32"};
		double tb[2] = {NAN, NAN}, tmax = 0;
		for (int k = 0; k < 2; k++) {
			for (size_t i = 0; i < cl_nrows(&t); i++) {
				if (!cl_match(&t, i, v[k], NULL))
					continue;
				double a = cl_axis(&t, i, 0);
				if (a > tmax)
					tmax = a;
				if (cl_overflowed(cl_status(&t, i)) && !(tb[k] <= a))
					tb[k] = a;
			}
			long row = cl_thr_find(x, t.c, v[k], NULL, t.c->axes[0].name, NULL);
			if (row >= 0 && !isnan(tb[k]))
				tb[k] = cl_thr_num(x, row, "first_bad");
		}
		cl_unload(&t);
		nm_buf_printf(
		    &x->num,
		    "- a training run (`%s`, a tiny GPT-2 in fp16 with fp32 AdamW states, "
		    "its logits multiplied by a factor at step 2):\n",
		    t.c->name);
		for (int k = 0; k < 2; k++) {
			if (isnan(tb[k]))
				nm_buf_printf(&x->num,
				              "  - loss %s: finite for every factor up to %.6g\n",
				              k ? "on logits.float()" : "in fp16", tmax);
			else
				nm_buf_printf(&x->num,
				              "  - loss %s: not finite from a factor of %.17g\n",
				              k ? "on logits.float()" : "in fp16", tb[k]);
		}
		nm_buf_printf(
		    &x->why,
		    "In a whole training run the fp16 loss %s, and on `logits.float()` it %s. ",
		    isnan(tb[0]) ? "never broke"
		                 : "broke (the fp16 sum of the positions' "
		                   "losses overflows)",
		    isnan(tb[1]) ? "stayed finite" : "broke too");
		unstable |= !isnan(tb[0]);
		fixed = fixed && isnan(tb[1]);
	} else {
		snprintf(x->missing, sizeof x->missing, "%s", keep); /* the run is optional */
	}
	return unstable && fixed ? V_TRUE : unstable || fixed ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_layernorm_eps(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 4, NULL, &r))
		return V_UNSETTLED;
	double lim = emu_format_by_name("fp16")->max;
	bool big_small = false, bad_large = false, seen_small = false, seen_large = false;
	double ymax_small = 0, ymax_large = 0;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, NULL))
			continue;
		double eps = cl_axis(&r, i, 0), y = cl_num(&r, i, "y.maxabs"),
		       dx = cl_num(&r, i, "dx.maxabs");
		int st = cl_status(&r, i);
		double m = fmax(isnan(y) ? 0 : y, isnan(dx) ? 0 : dx);
		bool big = m > lim || cl_overflowed(st);
		nm_buf_printf(
		    &x->num,
		    "- eps %.3g, %s, `%s`: status %s, largest |y| %.6g, largest |dx| %.6g\n", eps,
		    nm_csv_get(&r.t, i, r.cv), nm_csv_get(&r.t, i, r.cp), cl_stname(st), y, dx);
		if (fabs(eps / 1e-5 - 1) < 1e-3) {
			seen_small = true;
			big_small |= big;
			ymax_small = fmax(ymax_small, m);
		} else if (fabs(eps / 1e-3 - 1) < 1e-3) {
			seen_large = true;
			bad_large |= big || st != 0;
			ymax_large = fmax(ymax_large, m);
		}
	}
	cl_unload(&r);
	if (!seen_small || !seen_large) {
		snprintf(x->missing, sizeof x->missing, "the case needs eps = 1e-5 and eps = 1e-3");
		return V_UNSETTLED;
	}
	nm_buf_printf(
	    &x->why,
	    "With variance 1e-7 and eps 1e-5, var + eps ≈ 1.01e-5, so 1/sqrt(var + eps) ≈ 314 and "
	    "the normalised values are about sqrt(var/(var + eps)) ≈ 0.1 times a standard normal: "
	    "the largest |output| (y or dx) computed is %.6g, %s 65504. At eps 1e-3 it is %.6g. "
	    "eps keeps 1/sqrt(var + eps) at most 1/sqrt(eps), so outputs grow large only when eps "
	    "is tiny (or rounds to 0) and the variance underflows. ",
	    ymax_small, big_small ? "above" : "far below", ymax_large);
	return cl_with_runs(big_small && !bad_large ? V_TRUE
	                    : !big_small            ? V_FALSE
	                                            : V_PARTLY,
	                    cl_model4(x));
}

cl_verdict cl_claim_gradacc_divide(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 5, NULL, &r))
		return V_UNSETTLED;
	if (r.c->naxes != 2) {
		snprintf(x->missing, sizeof x->missing, "case %s needs the axes m and divide",
		         r.c->name);
		cl_unload(&r);
		return V_UNSETTLED;
	}
	size_t am = strcmp(r.c->axes[0].name, "divide") == 0 ? 1 : 0;
	const char *pol = r.c->npolicies ? r.c->policy_specs[0] : "";
	double first[2] = {NAN, NAN}, gmax[2] = {0, 0}, mmax = 0;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, pol))
			continue;
		int d = cl_axis(&r, i, 1 - am) != 0;
		double m = cl_axis(&r, i, am), g = cl_num(&r, i, "grad.maxabs");
		if (cl_overflowed(cl_status(&r, i)) && !(first[d] <= m))
			first[d] = m;
		if (m >= mmax) {
			mmax = m;
			gmax[d] = g;
		}
	}
	cl_unload(&r);
	nm_buf_printf(&x->num,
	              "- `%s`, loss scale 65536, gradients accumulated over m micro-batches:\n",
	              pol);
	for (int d = 1; d >= 0; d--) {
		if (isnan(first[d]))
			nm_buf_printf(
			    &x->num,
			    "  - %s: no overflow for m up to %.0f (largest |grad| at m = %.0f: "
			    "%.6g)\n",
			    d ? "loss / m" : "loss not divided", mmax, mmax, gmax[d]);
		else
			nm_buf_printf(&x->num, "  - %s: overflows from m = %.0f\n",
			              d ? "loss / m" : "loss not divided", first[d]);
	}
	bool d1 = !isnan(first[1]), d0 = !isnan(first[0]);
	nm_buf_printf(
	    &x->why,
	    "Dividing the loss by m divides each micro-batch's gradient by m, so the accumulated "
	    "gradient carries the scale 65536 once: %s. Not dividing is what multiplies the "
	    "effective scale by m: %s. The statement has the cause backwards. ",
	    d1 ? "yet it overflowed here" : "it never overflows here",
	    d0 ? "that overflows here" : "even that did not overflow here");
	/* the same question in a whole training run (nanmap train, docs/train.md) */
	cl_res t;
	char keep[sizeof x->missing];
	snprintf(keep, sizeof keep, "%s", x->missing);
	if (cl_load(x, 5, "model", &t)) {
		double tf[2] = {NAN, NAN}, tmax = 0;
		size_t tm = t.c->naxes == 2 && strcmp(t.c->axes[0].name, "divide") == 0 ? 1 : 0;
		for (size_t i = 0; t.c->naxes == 2 && i < cl_nrows(&t); i++) {
			if (!cl_match(&t, i, NULL, NULL))
				continue;
			int d = cl_axis(&t, i, 1 - tm) != 0;
			double m = cl_axis(&t, i, tm);
			if (cl_overflowed(cl_status(&t, i)) && !(tf[d] <= m))
				tf[d] = m;
			if (m > tmax)
				tmax = m;
		}
		for (int d = 1; d >= 0; d--) { /* the bisected boundary where there is one */
			long row = cl_thr_find(x, t.c, NULL, NULL, t.c->axes[tm].name, "overflow");
			char ax[96];
			snprintf(ax, sizeof ax, "%s@divide=%d", t.c->axes[tm].name, d);
			if (row >= 0 && !isnan(tf[d]) &&
			    !strcmp(nm_csv_get(&x->thr, (size_t)row, nm_csv_col(&x->thr, "axis")),
			            ax))
				tf[d] = cl_thr_num(x, row, "first_bad");
		}
		nm_buf_printf(
		    &x->num,
		    "- a training run (`%s`, fp16-amp: GradScaler from 65536, a tiny GPT-2, "
		    "m micro-batches a step):\n",
		    t.c->name);
		for (int d = 1; d >= 0; d--) {
			if (isnan(tf[d]))
				nm_buf_printf(&x->num, "  - %s: no skipped step for m up to %.0f\n",
				              d ? "loss / m" : "loss not divided", tmax);
			else
				nm_buf_printf(
				    &x->num,
				    "  - %s: the scaled gradients overflow fp16 from m = %.0f\n",
				    d ? "loss / m" : "loss not divided", tf[d]);
		}
		bool t1 = !isnan(tf[1]), t0 = !isnan(tf[0]);
		nm_buf_printf(&x->why, "In a whole training run the same holds: %s, %s. ",
		              t1 ? "dividing overflowed" : "dividing never overflowed",
		              t0 ? "not dividing did" : "and neither did not dividing");
		cl_unload(&t);
		d1 = d1 || t1;
		d0 = d0 || t0;
	} else {
		snprintf(x->missing, sizeof x->missing, "%s", keep); /* the run is optional */
	}
	return d1 && !d0 ? V_TRUE : !d1 ? V_FALSE : V_PARTLY;
}

cl_verdict cl_claim_bf16_vs_fp16(cl_ctx *x)
{
	const emu_format *b = emu_format_by_name("bf16"), *s = emu_format_by_name("fp32");
	cl_res r, q;
	if (!b || !s || !cl_load(x, 6, "range", &r))
		return V_UNSETTLED;
	const char *pb = "storage=fp32,accum=bf16", *ps = "storage=fp32,accum=fp32";
	nm_buf_printf(&x->num,
	              "- descriptors: bf16 largest %.9g, overflows from %.9g; fp32 largest %.9g, "
	              "overflows from %.9g\n",
	              b->max, cl_ovf_threshold(b), s->max, cl_ovf_threshold(s));
	/* range: a value where bf16 fails and fp32 does not */
	size_t margin = 0;
	double mfirst = NAN, mlast = NAN;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, pb) || !cl_overflowed(cl_status(&r, i)))
			continue;
		double v = cl_axis(&r, i, 0);
		for (size_t j = 0; j < cl_nrows(&r); j++)
			if (cl_match(&r, j, NULL, ps) && cl_axis(&r, j, 0) == v &&
			    cl_status(&r, j) == 0) {
				margin++;
				mfirst = isnan(mfirst) ? v : mfirst;
				mlast = v;
			}
	}
	long t = cl_thr_find(x, r.c, NULL, pb, r.c->axes[0].name, NULL);
	nm_buf_printf(
	    &x->num,
	    "- case `%s`: %zu values overflow bf16 but not fp32 (from %.9g to %.9g)%s%.9g\n",
	    r.c->name, margin, mfirst, mlast, t >= 0 ? "; bf16's bisected first_bad " : "",
	    t >= 0 ? cl_thr_num(x, t, "first_bad") : NAN);
	cl_unload(&r);
	/* precision: an accumulation where fp16 is more accurate than bf16 */
	size_t worse = 0, total = 0;
	double eb = NAN, eh = NAN, at = NAN;
	if (!cl_load(x, 6, "precision", &q))
		return V_UNSETTLED;
	const char *qb = "storage=fp32,accum=bf16", *qh = "storage=fp32,accum=fp16";
	for (size_t i = 0; i < cl_nrows(&q); i++) {
		if (!cl_match(&q, i, NULL, qb))
			continue;
		for (size_t j = 0; j < cl_nrows(&q); j++)
			if (cl_match(&q, j, NULL, qh) && cl_axis(&q, j, 0) == cl_axis(&q, i, 0)) {
				double e1 = cl_num(&q, i, "result.rel_err"),
				       e2 = cl_num(&q, j, "result.rel_err");
				total++;
				if (e2 < e1) {
					worse++;
					eb = e1;
					eh = e2;
					at = cl_axis(&q, i, 0);
				}
			}
	}
	nm_buf_printf(&x->num,
	              "- case `%s`: bf16 sums less accurate than fp16 at %zu of %zu lengths (at "
	              "%.0f: relative error %.3g against %.3g); bf16 has p = %d, fp16 p = %d\n",
	              q.c->name, worse, total, at, eb, eh, b->p, emu_format_by_name("fp16")->p);
	cl_unload(&q);
	bool a_false = margin > 0, b_false = worse > 0;
	nm_buf_printf(
	    &x->why,
	    "bf16 has fp32's exponent range but rounds to 8 bits, so its largest value (%.6g) is "
	    "below fp32's and values from %.9g to fp32's threshold %.9g overflow in bf16 only: "
	    "%s at the margin. And its 8-bit precision loses to fp16's 11 bits wherever fp16 does "
	    "not overflow or underflow: %s. bf16 wins on range, not on precision. ",
	    b->max, cl_ovf_threshold(b), cl_ovf_threshold(s), a_false ? "false" : "not shown",
	    b_false ? "so not better in every way" : "not shown here");
	return !a_false && !b_false ? V_TRUE : a_false && b_false ? V_FALSE : V_PARTLY;
}

cl_verdict cl_claim_sum_stall(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 7, NULL, &r))
		return V_UNSETTLED;
	const char *ph = "storage=fp16", *ps = "storage=fp16,accum=fp32";
	double stall[2] = {NAN, NAN}, nmax = 0;
	bool seen[2] = {false, false};
	for (int p = 0; p < 2; p++) {
		nm_buf_printf(&x->num, "- `%s`, sequential sum of N ones:", p ? ps : ph);
		for (size_t i = 0; i < cl_nrows(&r); i++) {
			if (!cl_match(&r, i, NULL, p ? ps : ph))
				continue;
			double n = cl_axis(&r, i, 0), s = cl_num(&r, i, "result.maxabs");
			seen[p] = true;
			nmax = fmax(nmax, n);
			nm_buf_printf(&x->num, " N = %.0f → %.9g;", n, s);
			if (s < n && isnan(stall[p]))
				stall[p] = s;
		}
		nm_buf_printf(&x->num, "\n");
	}
	cl_unload(&r);
	if (!seen[0] || !seen[1]) {
		snprintf(x->missing, sizeof x->missing, "the case needs the policies %s and %s", ph,
		         ps);
		return V_UNSETTLED;
	}
	bool a = !isnan(stall[0]), b = isnan(stall[1]);
	nm_buf_printf(&x->why,
	              "A running sum of ones in fp16 %s %.9g%s. An fp32 accumulator %s %.9g. ",
	              a ? "stops at" : "never stopped up to N =", a ? stall[0] : nmax,
	              a ? ": from there s + 1 rounds back to s" : "",
	              b ? "kept counting up to N =" : "stops too, at", b ? nmax : stall[1]);
	if (!b)
		nm_buf_printf(&x->why,
		              "So fp32 accumulation moves the wall (to 2^%d elements) rather than "
		              "removing it; pairwise or blocked orders remove it. ",
		              emu_format_by_name("fp32")->p);
	return a && b ? V_TRUE : a ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_fp8_scaling(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 8, NULL, &r))
		return V_UNSETTLED;
	const char *rec[] = {"none", "tensor", "mx32:floor", "mx32:rceil"};
	size_t bad[4] = {0}, tot[4] = {0};
	double first[4] = {NAN, NAN, NAN, NAN};
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		const char *p = nm_csv_get(&r.t, i, r.cp), *sc = strstr(p, "scale=");
		if (!cl_match(&r, i, NULL, NULL) || !strstr(p, "e4m3"))
			continue;
		for (int k = 0; k < 4; k++)
			if (sc ? strcmp(sc + 6, rec[k]) == 0 : k == 0) {
				tot[k]++;
				if (cl_overflowed(cl_status(&r, i))) {
					bad[k]++;
					if (isnan(first[k]))
						first[k] = cl_axis(&r, i, 0);
				}
			}
	}
	cl_unload(&r);
	for (int k = 0; k < 4; k++)
		if (tot[k] == 0) {
			snprintf(x->missing, sizeof x->missing, "no e4m3 policy with scale=%s",
			         rec[k]);
			return V_UNSETTLED;
		}
	for (int k = 0; k < 4; k++) {
		nm_buf_printf(&x->num, "- e4m3, scale=%s: %zu of %zu standard deviations overflow",
		              rec[k], bad[k], tot[k]);
		if (bad[k])
			nm_buf_printf(&x->num,
			              " (status overflow, inf or nan), the first at sd %.3g",
			              first[k]);
		nm_buf_printf(&x->num, "\n");
	}
	bool a = bad[0] > 0 && bad[1] == 0;
	int mx_ok = (bad[2] == 0) + (bad[3] == 0);
	nm_buf_printf(
	    &x->why,
	    "Without scaling, e4m3 (largest 448, no infinity) breaks once values pass 448. "
	    "Per-tensor scaling %s. MX block scaling with the OCP specification's floor-rounded "
	    "E8M0 scale %s, in the sense of clipping: floor(log2 amax) − 8 leaves a block "
	    "maximum whose significand is at least 1.8125 above 448, and OCP MX saturates it to "
	    "448 (status overflow: a clamped value, not an inf or NaN; the tensor stays finite, "
	    "its largest elements too small). Without scaling e4m3 has no inf, so what passes "
	    "448 there is NaN. The ceiling rounding that Transformer Engine and cuBLAS use %s. ",
	    bad[1] ? "still overflowed here" : "never overflowed here",
	    bad[2] ? "still overflows" : "did not overflow here",
	    bad[3] ? "overflows too" : "never overflowed");
	return cl_with_runs(a && mx_ok == 2    ? V_TRUE
	                    : !a && mx_ok == 0 ? V_FALSE
	                                       : V_PARTLY,
	                    cl_model8(x));
}
