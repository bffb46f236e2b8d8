/*
 * nm_claims_train.c — the parts of claims 4, 8, 9 and 16 settled in whole
 * training runs (nanmap train as sweep points, docs/train.md): each reads
 * its case (part = model, or model-default / model-conservative), adds its
 * bullets and a sentence, and says whether the runs support the statement.
 * The kernel-level part of each claim (nm_claims.c) reads its own case.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/sweep/nm_claims_int.h"

/* the train kernel's outputs, as the sweep's CSV summarises them */
static double val_loss(const cl_res *r, size_t i)
{
	return cl_num(r, i, "val_loss.maxabs");
}
static double skips(const cl_res *r, size_t i)
{
	return cl_num(r, i, "skips.maxabs");
}
static double overflows(const cl_res *r, size_t i)
{
	return cl_num(r, i, "overflows.maxabs");
}
static bool nonfinite(int st)
{
	return st >= 3; /* inf or nan: a loss that was not finite */
}

/* The row of variant whose axis a0 (and a1, unless NAN) has these values;
 * -1 when none. */
static long find(const cl_res *r, const char *variant, double a0, double a1)
{
	for (size_t i = 0; i < cl_nrows(r); i++)
		if (cl_match(r, i, variant, NULL) && cl_axis(r, i, 0) == a0 &&
		    (isnan(a1) || cl_axis(r, i, 1) == a1))
			return (long)i;
	return -1;
}

/* Load claim id's model case, keeping x->missing as it was when there is
 * none: the kernel-level part settles the claim alone then. */
static bool load_model(cl_ctx *x, int id, const char *part, cl_res *r)
{
	char keep[sizeof x->missing];
	snprintf(keep, sizeof keep, "%s", x->missing);
	if (cl_load(x, id, part, r))
		return true;
	snprintf(x->missing, sizeof x->missing, "%s", keep);
	return false;
}

/* ---- claim 4: LayerNorm eps, a near-constant batch ---- */

int cl_model4(cl_ctx *x)
{
	cl_res r;
	if (!load_model(x, 4, "model", &r))
		return -1;
	if (r.c->naxes != 2 || strcmp(r.c->axes[0].name, "var") != 0 ||
	    strcmp(r.c->axes[1].name, "eps") != 0) {
		cl_unload(&r);
		return -1;
	}
	static const char *const vs[2] = {"fp16-pure:state=fp32", "fp16-amp"};
	static const char *const vd[2] = {"fp16 throughout (fp32 AdamW states)",
	                                  "fp16-amp (norms in fp32, GradScaler from 65536)"};
	static const double eps[3] = {1e-8, 1e-5, 1e-3};
	int support = 0; /* eps 1e-5 broke at var 1e-7 and eps 1e-3 did not, in some policy */
	nm_buf_printf(&x->num,
	              "- a training run (`%s`, a tiny GPT-2 fed at step 2 a batch whose embedding "
	              "output has variance var over the features at every position):\n",
	              r.c->name);
	for (int v = 0; v < 2; v++) {
		bool broke[3] = {false, false, false};
		for (int e = 0; e < 3; e++) {
			double first = NAN, lo = INFINITY, hi = 0; /* the largest var that broke */
			int worst = 0;
			bool any = false,
			     gap = false; /* gap: a var below first that did not break */
			char site[64] = "";
			for (size_t i = 0; i < cl_nrows(&r); i++) {
				if (!cl_match(&r, i, vs[v], NULL) ||
				    fabs(cl_axis(&r, i, 1) / eps[e] - 1) > 1e-9)
					continue;
				double var = cl_axis(&r, i, 0);
				int st = cl_status(&r, i);
				any = true;
				lo = fmin(lo, var), hi = fmax(hi, var);
				if (cl_overflowed(st) && !(first >= var)) {
					first = var, worst = st;
					snprintf(
					    site, sizeof site, "%s",
					    nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_step")));
				}
				if (cl_overflowed(st) && fabs(var / 1e-7 - 1) < 1e-6)
					broke[e] = true;
			}
			for (size_t i = 0; i < cl_nrows(&r) && !isnan(first); i++)
				if (cl_match(&r, i, vs[v], NULL) &&
				    fabs(cl_axis(&r, i, 1) / eps[e] - 1) <= 1e-9 &&
				    cl_axis(&r, i, 0) < first && !cl_overflowed(cl_status(&r, i)))
					gap = true;
			if (!any)
				continue;
			if (isnan(first))
				nm_buf_printf(
				    &x->num,
				    "  - %s, eps %g: finite, no overflow, for every var from "
				    "%g to %g\n",
				    vd[v], eps[e], lo, hi);
			else
				nm_buf_printf(
				    &x->num,
				    "  - %s, eps %g: %s %s var up to %g (of %g to %g; the first "
				    "failing operation `%s`)\n",
				    vd[v], eps[e],
				    cl_overflowed(worst) && !nonfinite(worst)
				        ? "a gradient overflows fp16 (a skipped step)"
				        : "the loss is NaN",
				    gap ? "at some" : "at every", first, lo, hi, site);
		}
		if (broke[1] && !broke[2])
			support = 1;
	}
	nm_buf_printf(
	    &x->why,
	    "In a whole training run, a near-constant batch breaks fp16 arithmetic only where eps "
	    "itself is lost: eps 1e-8 rounds to 0 in fp16, so var + eps underflows to 0 and rsqrt "
	    "divides by zero (the loss NaN); eps 1e-5 (a subnormal in fp16) and 1e-3 keep "
	    "1/sqrt(var + eps) finite. %s",
	    support ? "With GradScaler (fp16-amp, the norms in fp32), eps matters the way the "
	              "statement says, but through the gradients: the block adds little to a "
	              "near-constant residual stream, so the final LayerNorm's input is "
	              "near-constant too, and its backward multiplies by 1/sqrt(var + eps), about "
	              "316 at eps 1e-5 against 32 at eps 1e-3; times the loss scale 65536 the "
	              "gradient overflows when it is cast to fp16 for the next GEMM (a skipped "
	              "step, not a NaN) at eps 1e-5 and not at 1e-3. "
	            : "");
	cl_unload(&r);
	return support;
}

/* ---- claim 8: the scaled presets' losses in one run ---- */

int cl_model8(cl_ctx *x)
{
	cl_res r;
	if (!load_model(x, 8, "model", &r))
		return -1;
	enum { NV = 5, MX = 3 };
	static const char *const vs[NV] = {"bf16", "fp8-current", "fp8-delayed", "mxfp8", "nvfp4"};
	nm_buf_printf(&x->num,
	              "- training runs (`%s`, a tiny GPT-2, the same data and seed; validation "
	              "loss after the run, its gap to fp32's, and the operations that "
	              "overflowed or saturated):\n",
	              r.c->name);
	int mx_ovf = -1; /* did mxfp8 saturate? */
	double worst_gap[NV] = {0, 0, 0, 0, 0}, ovf[NV] = {0, 0, 0, 0, 0};
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, "fp32", NULL))
			continue;
		double a = cl_axis(&r, i, 0), ref = val_loss(&r, i);
		nm_buf_printf(&x->num, "  - %s %g: fp32 %.5f", r.c->axes[0].name, a, ref);
		for (int v = 0; v < NV; v++) {
			long j = find(&r, vs[v], a, NAN);
			if (j < 0)
				continue;
			double vl = val_loss(&r, (size_t)j), ov = overflows(&r, (size_t)j);
			nm_buf_printf(&x->num, "; %s %.5f (%+.5f, %.0f overflows%s)", vs[v], vl,
			              vl - ref, ov,
			              nonfinite(cl_status(&r, (size_t)j)) ? ", not finite" : "");
			if (fabs(vl - ref) > worst_gap[v] || isnan(vl))
				worst_gap[v] = isnan(vl) ? INFINITY : fabs(vl - ref);
			ovf[v] += ov;
			if (v == MX)
				mx_ovf = (mx_ovf == 1 || ov > 0) ? 1 : 0;
		}
		nm_buf_printf(&x->num, "\n");
	}
	cl_unload(&r);
	if (mx_ovf < 0)
		return -1;
	nm_buf_printf(&x->why,
	              "In whole training runs %s; the validation losses of fp8-current, "
	              "fp8-delayed, mxfp8 and nvfp4 stayed within %.3g, %.3g, %.3g and %.3g of "
	              "fp32's (bf16: %.3g). Per-tensor scaling from the tensor itself saturated "
	              "%.0f times, from the amax history %.0f times (each scale trails its "
	              "tensor by a step, and a growing amax passes the format's max), and ",
	              mx_ovf ? "mxfp8 saturated too, even with TE's rounded-up e8m0 scale"
	                     : "mxfp8 never saturated (TE's rounded-up e8m0 scale)",
	              worst_gap[1], worst_gap[2], worst_gap[3], worst_gap[4], worst_gap[0], ovf[1],
	              ovf[2]);
	nm_buf_printf(&x->why,
	              "nvfp4's e2m1 elements saturated at 6 by the thousand: its e4m3 block scale "
	              "is amax / 6 rounded to nearest, and where that rounds down the block's "
	              "largest element lands above 6. Block scaling as such does not remove "
	              "overflow; MX's power-of-two scale rounded up does. ");
	return mx_ovf ? 0 : 1;
}

/* ---- claim 9: GradScaler's defaults against the conservative settings ---- */

int cl_model9(cl_ctx *x)
{
	cl_res d, c;
	if (!load_model(x, 9, "model-default", &d))
		return -1;
	if (!load_model(x, 9, "model-conservative", &c)) {
		cl_unload(&d);
		return -1;
	}
	double sk[2] = {0, 0}, dv = 0, nf[2] = {0, 0};
	size_t n = 0;
	long steps = -1;
	for (size_t i = 0; i < cl_nrows(&d); i++) {
		if (!cl_match(&d, i, NULL, NULL))
			continue;
		double seed = cl_axis(&d, i, 0);
		long j = find(&c, NULL, seed, NAN);
		if (j < 0)
			continue;
		sk[0] += skips(&d, i), sk[1] += skips(&c, (size_t)j);
		nf[0] += nonfinite(cl_status(&d, i)), nf[1] += nonfinite(cl_status(&c, (size_t)j));
		double gap = val_loss(&c, (size_t)j) - val_loss(&d, i);
		dv = fabs(gap) > fabs(dv) ? gap : dv;
		n++;
	}
	for (size_t k = 0; k < d.c->nparams; k++)
		if (!strcmp(d.c->params[k].name, "steps"))
			steps = (long)d.c->params[k].value;
	nm_buf_printf(&x->num,
	              "- training runs (`%s`, `%s`: a tiny GPT-2 under fp16-amp, %ld steps from "
	              "each of %zu seeds):\n"
	              "  - defaults: %.0f skipped steps in all, %.0f runs with a loss that was "
	              "not finite\n"
	              "  - conservative: %.0f skipped steps in all, %.0f runs with a loss that "
	              "was not finite\n"
	              "  - validation loss after the run: the two settings differ by at most "
	              "%.4f\n",
	              d.c->name, c.c->name, steps, n, sk[0], nf[0], sk[1], nf[1], fabs(dv));
	nm_buf_printf(&x->why,
	              "In whole training runs of %ld steps the conservative settings skipped %s "
	              "(%.0f against %.0f), as over the kernel's first 1000 steps; %s ",
	              steps, sk[1] < sk[0] ? "fewer steps" : "no fewer steps", sk[1], sk[0],
	              nf[0] ? "the defaults' runs did turn NaN."
	                    : "neither setting's loss or weights ever held a NaN (every "
	                      "overflow was caught and its step skipped), and the validation "
	                      "losses hardly differ: there was no NaN for the conservative "
	                      "settings to prevent.");
	cl_unload(&d);
	cl_unload(&c);
	return n ? (nf[0] > 0 && nf[1] == 0) : -1;
}

/* ---- claim 16: bf16 without loss scaling ---- */

int cl_model16(cl_ctx *x)
{
	cl_res r;
	if (!load_model(x, 16, "model", &r))
		return -1;
	static const char *const vs[4] = {"bf16-pure:state=fp32", "bf16-pure:state=fp32:scaler=on",
	                                  "fp16-pure:state=fp32", "fp16-pure:state=fp32:scaler=on"};
	nm_buf_printf(&x->num,
	              "- a training run (`%s`, a tiny GPT-2 with gradients in the low format, "
	              "the loss weighted by k before backward): validation loss after the run, "
	              "its gap to fp32's at the same k, unscaled / with GradScaler:\n",
	              r.c->name);
	double worst[4] = {0, 0, 0, 0}, k1[4] = {NAN, NAN, NAN, NAN}, kmax = 0;
	size_t n = 0, same = 0;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, "fp32", NULL))
			continue;
		double k = cl_axis(&r, i, 0), ref = val_loss(&r, i), g[4];
		long j[4];
		bool all = true;
		for (int v = 0; v < 4; v++) {
			j[v] = find(&r, vs[v], k, NAN);
			all = all && j[v] >= 0;
			g[v] = j[v] >= 0 ? val_loss(&r, (size_t)j[v]) - ref : NAN;
		}
		if (!all)
			continue;
		n++;
		same += val_loss(&r, (size_t)j[0]) == val_loss(&r, (size_t)j[1]);
		for (int v = 0; v < 4; v++) {
			worst[v] = fmax(worst[v], isnan(g[v]) ? INFINITY : fabs(g[v]));
			if (k >= kmax)
				k1[v] = fabs(g[v]);
		}
		kmax = fmax(kmax, k);
		nm_buf_printf(&x->num, "  - k = %g: bf16 %+.4f / %+.4f, fp16 %+.4f / %+.4f\n", k,
		              g[0], g[1], g[2], g[3]);
	}
	cl_unload(&r);
	if (!n)
		return -1;
	/* bf16 unscaled as close to fp32 at every k as at the largest (within
	 * 0.01, the run-to-run spread of an 8-bit format on this model) */
	bool fine = worst[0] <= k1[0] + 0.01;
	nm_buf_printf(&x->why,
	              "In a whole training run, bf16 without loss scaling stayed within %.4f of "
	              "fp32 at every k (%.4f at k = %g), and with GradScaler it gave %s; fp16 "
	              "drifted up to %.4f from fp32 unscaled and %.4f scaled as k shrank "
	              "(its gradients underflow; GradScaler's 65536 buys it about 4.8 decades, "
	              "not more). ",
	              worst[0], k1[0], kmax,
	              same == n ? "the same validation loss bit for bit at every k (a power-of-two "
	                          "scale is exact in bf16 where nothing underflows)"
	                        : "different losses at some k",
	              worst[2], worst[3]);
	return fine;
}
