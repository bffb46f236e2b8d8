/*
 * nm_claims_recipes.c — claims 17–21: the scaling recipes, through the quant kernel (MX's floor
 * rule, NVFP4 against MXFP4, the Hadamard transform, stochastic rounding, e8m0 under
 * flush-to-zero). Each claim reads its case's results (nm_claims_int.h) and writes its numbers and
 * reasoning; nm_claims.c dispatches and writes the report.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/emu.h"
#include "emu/sweep/nm_claims_int.h"

/* ---- claims 17–21: scaling recipes, through the quant kernel ---- */

/* SQNR in dB from a relative error (‖deq − x‖/‖x‖). */
static double sqnr_db(double rel)
{
	return -20 * log10(rel);
}

/* The first fast row of policy (and, when not NAN, axis values a0, a1);
 * -1 when none. */
static long row_of(const cl_res *r, const char *policy, double a0, double a1)
{
	for (size_t i = 0; i < cl_nrows(r); i++)
		if (cl_match(r, i, NULL, policy) && (isnan(a0) || cl_axis(r, i, 0) == a0) &&
		    (isnan(a1) || cl_axis(r, i, 1) == a1))
			return (long)i;
	return -1;
}

cl_verdict cl_claim_mx_floor(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 17, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"clipped.maxabs", "deq.rel_err"};
	static const char *const pol[2][2] = {
	    {"compute=fp32,scale=mxfp8", "compute=fp32,scale=mxfp8:floor"},
	    {"compute=fp32,scale=mxfp4", "compute=fp32,scale=mxfp4:floor"}};
	static const char *const elem[2] = {"e4m3 (MXFP8)", "e2m1 (MXFP4)"};
	if (!cl_need_cols(x, &r, cols, 2)) {
		cl_unload(&r);
		return V_UNSETTLED;
	}
	int holds = 0;
	for (int e = 0; e < 2; e++) {
		/* per rule: the largest and smallest clipped share, the mean SQNR */
		double clip_min[2] = {INFINITY, INFINITY}, clip_max[2] = {0, 0}, db[2] = {0, 0};
		size_t n[2] = {0, 0};
		double worst_cost = -INFINITY, best_cost = INFINITY;
		for (int k = 0; k < 2; k++)
			for (size_t i = 0; i < cl_nrows(&r); i++) {
				if (!cl_match(&r, i, NULL, pol[e][k]))
					continue;
				double c = cl_num(&r, i, "clipped.maxabs");
				clip_min[k] = fmin(clip_min[k], c);
				clip_max[k] = fmax(clip_max[k], c);
				db[k] += sqnr_db(cl_num(&r, i, "deq.rel_err"));
				n[k]++;
				if (k == 1) {
					long j = row_of(&r, pol[e][0], cl_axis(&r, i, 0), NAN);
					double c =
					    j < 0 ? NAN
					          : sqnr_db(cl_num(&r, (size_t)j, "deq.rel_err")) -
					                sqnr_db(cl_num(&r, i, "deq.rel_err"));
					if (j >= 0) {
						worst_cost = fmax(worst_cost, c);
						best_cost = fmin(best_cost, c);
					}
				}
			}
		if (!n[0] || !n[1]) {
			snprintf(x->missing, sizeof x->missing, "no rows for %s or %s", pol[e][0],
			         pol[e][1]);
			cl_unload(&r);
			return V_UNSETTLED;
		}
		db[0] /= (double)n[0];
		db[1] /= (double)n[1];
		nm_buf_printf(&x->num,
		              "- %s, OCP floor (`%s`): %.3g %% to %.3g %% of the elements clipped; "
		              "SQNR %.2f dB on average over %zu standard deviations\n",
		              elem[e], pol[e][1], 100 * clip_min[1], 100 * clip_max[1], db[1],
		              n[1]);
		nm_buf_printf(&x->num,
		              "- %s, rounded up (`%s`): %.3g %% to %.3g %% clipped; SQNR %.2f dB; "
		              "the floor rule costs %.2f dB on average (at most %.2f dB)\n",
		              elem[e], pol[e][0], 100 * clip_min[0], 100 * clip_max[0], db[0],
		              db[0] - db[1], worst_cost);
		bool h = clip_min[1] > 0 && clip_max[0] == 0;
		holds += h;
		nm_buf_printf(
		    &x->why,
		    "For %s the floor rule %s (%.3g %% to %.3g %% of the elements) and "
		    "rounding up %s; ",
		    elem[e], clip_min[1] > 0 ? "clipped at every magnitude" : "did not always clip",
		    100 * clip_min[1], 100 * clip_max[1],
		    clip_max[0] == 0 ? "never clipped" : "clipped too");
		if (best_cost < 0 && worst_cost > 0)
			nm_buf_printf(
			    &x->why,
			    "whether the floor's finer scale pays for its clipping is not "
			    "settled: its SQNR difference changes sign across the standard "
			    "deviations (%+.2f to %+.2f dB, %+.2f on average), one tensor a "
			    "point. ",
			    -worst_cost, -best_cost, db[1] - db[0]);
		else
			nm_buf_printf(
			    &x->why,
			    "the floor's finer scale %s at each of the %zu standard deviations "
			    "here (%+.2f to %+.2f dB; one tensor each, so more seeds could move "
			    "the sign). ",
			    worst_cost > 0 ? "did not pay for its clipping"
			                   : "paid for its clipping",
			    n[1], -worst_cost, -best_cost);
	}
	cl_unload(&r);
	nm_buf_printf(&x->why,
	              "floor(log2 amax) − emax puts a block maximum whose significand exceeds that "
	              "of the element format's largest value (1.75 for e4m3, 1.5 for e2m1) above "
	              "the format's range, where it saturates; rounding the scale up never does. ");
	return holds == 2 ? V_TRUE : holds == 0 ? V_FALSE : V_PARTLY;
}

cl_verdict cl_claim_nvfp4_vs_mxfp4(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 18, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err", "deq.lost"};
	const char *nv = "compute=fp32,scale=nvfp4", *mx = "compute=fp32,scale=mxfp4";
	if (!cl_need_cols(x, &r, cols, 2)) {
		cl_unload(&r);
		return V_UNSETTLED;
	}
	double nel = (double)r.c->rows * (double)r.c->cols;
	size_t n = 0, better = 0;
	double normal_gain = NAN, out_min = INFINITY, out_max = -INFINITY, last_ok = NAN,
	       first_bad = NAN, bad_lost = NAN, bad_lost_mx = NAN, bad_gain = NAN;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, nv))
			continue;
		double k = cl_axis(&r, i, 0);
		long j = row_of(&r, mx, k, NAN);
		if (j < 0)
			continue;
		double a = sqnr_db(cl_num(&r, i, "deq.rel_err")),
		       b = sqnr_db(cl_num(&r, (size_t)j, "deq.rel_err"));
		double la = cl_num(&r, i, "deq.lost"), lb = cl_num(&r, (size_t)j, "deq.lost");
		/* more accurate: a higher SQNR without losing more elements (an
		 * element is lost when it comes back 0 or without a significant bit) */
		bool ahead = a > b && la <= lb;
		nm_buf_printf(&x->num,
		              "- %s K = %g: NVFP4 %.2f dB, MXFP4 %.2f dB: NVFP4 %s by %.2f dB; "
		              "elements lost %.0f against %.0f (of %.0f)%s\n",
		              k == 1 ? "normal," : "outliers,", k, a, b, a > b ? "ahead" : "behind",
		              fabs(a - b), la, lb, nel, ahead ? "" : ": NVFP4 not more accurate");
		n++;
		better += ahead;
		if (ahead && isnan(first_bad))
			last_ok = k;
		if (!ahead && isnan(first_bad)) {
			first_bad = k;
			bad_lost = la;
			bad_lost_mx = lb;
			bad_gain = a - b;
		}
		if (k == 1)
			normal_gain = a - b;
		else {
			out_min = fmin(out_min, a - b);
			out_max = fmax(out_max, a - b);
		}
	}
	cl_unload(&r);
	if (!n || isnan(normal_gain) || isinf(out_min)) {
		snprintf(x->missing, sizeof x->missing, "need K = 1 and K > 1 for both recipes");
		return V_UNSETTLED;
	}
	nm_buf_printf(
	    &x->why,
	    "On a normal tensor NVFP4 is %.2f dB %s MXFP4; with outliers (one element in a "
	    "thousand times K > 1) its SQNR is between %.2f and %.2f dB ahead. The E4M3 "
	    "scale keeps three significant bits of each block's amax where E8M0 rounds it "
	    "to a power of two (losing up to a factor of 2 of the element range), 16-element "
	    "blocks follow the data more closely, and an outlier flushes 15 neighbours "
	    "instead of 31. ",
	    fabs(normal_gain), normal_gain > 0 ? "ahead of" : "behind", out_min, out_max);
	if (!isnan(first_bad))
		nm_buf_printf(&x->why,
		              "That holds up to K = %g. From K = %g the per-tensor SQNR (%+.2f dB) "
		              "hides what "
		              "NVFP4 does to the rest: its block scales are E4M3 under an fp32 "
		              "tensor scale set "
		              "by the outlier (448·6/amax), so an ordinary block's scale "
		              "448·(block amax)/amax "
		              "falls below half e4m3's smallest subnormal (2^-10) once the "
		              "outliers are about "
		              "458752 (448·2^10) times the block maxima, and the block comes back "
		              "0: %.0f of %.0f "
		              "elements lost, against MXFP4's %.0f (E8M0 scales reach 2^-127). The "
		              "SQNR is the "
		              "outliers' energy; the ordinary elements are gone. ",
		              last_ok, first_bad, bad_gain, bad_lost, nel, bad_lost_mx);
	return better == n ? V_TRUE : better == 0 ? V_FALSE : V_PARTLY;
}

cl_verdict cl_claim_rht_outliers(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 19, "tensor", &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err"};
	const char *with = "compute=fp32,scale=nvfp4",
	           *without = "compute=fp32,scale={nvfp4,rht=no}";
	if (!cl_need_cols(x, &r, cols, 1) || r.c->naxes != 2) {
		if (!*x->missing)
			snprintf(x->missing, sizeof x->missing, "case %s needs axes K and F",
			         r.c->name);
		cl_unload(&r);
		return V_UNSETTLED;
	}
	size_t heavy = 0, helps = 0, gauss = 0, hurts_gauss = 0;
	double gauss_cost = 0, best = -INFINITY, worst = INFINITY;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, with))
			continue;
		double k = cl_axis(&r, i, 0), f = cl_axis(&r, i, 1);
		long j = row_of(&r, without, k, f);
		if (j < 0)
			continue;
		double a = sqnr_db(cl_num(&r, i, "deq.rel_err"));
		double b = sqnr_db(cl_num(&r, (size_t)j, "deq.rel_err"));
		nm_buf_printf(
		    &x->num,
		    "- one tensor, K = %g, F = %g: with RHT %.2f dB, without %.2f dB (%+.2f "
		    "dB)\n",
		    k, f, a, b, a - b);
		if (k == 1) {
			gauss++;
			hurts_gauss += a < b;
			gauss_cost = fmax(gauss_cost, b - a);
		} else if (k >= 100) { /* outlier-heavy: outliers far above the rest */
			heavy++;
			helps += a - b >= 0.5;
			best = fmax(best, a - b);
			worst = fmin(worst, a - b);
		}
	}
	cl_unload(&r);
	/* the GEMM: dW = dYᵀ·X over the tokens, the error of its fp32 result,
	 * on every draw (parts gemm, gemm2, ...): per point the smallest and the
	 * largest gain over the draws */
	const char *gw = "compute=fp32,scale={nvfp4,rht=all}",
	           *gwo = "compute=fp32,scale={nvfp4,rht=no}";
	enum { GP = 32 };
	double pk[GP], prho[GP], gmin[GP], gmax[GP];
	size_t np = 0, ndraws = 0;
	for (int d = 1; d <= 8; d++) {
		char part[16];
		snprintf(part, sizeof part, d == 1 ? "gemm" : "gemm%d", d);
		cl_res g;
		char keep[sizeof x->missing];
		memcpy(keep, x->missing, sizeof keep);
		if (!cl_load(x, 19, part, &g)) {
			memcpy(x->missing, keep, sizeof keep); /* fewer draws is not an error */
			if (d == 1)
				break;
			continue;
		}
		ndraws++;
		bool gcols = cl_has_col(&g, "acc.rel_err") && g.c->naxes == 2;
		for (size_t i = 0; gcols && i < cl_nrows(&g); i++) {
			if (!cl_match(&g, i, NULL, gw))
				continue;
			double k = cl_axis(&g, i, 0), rho = cl_axis(&g, i, 1);
			long j = row_of(&g, gwo, k, rho);
			if (j < 0)
				continue;
			double gain = sqnr_db(cl_num(&g, i, "acc.rel_err")) -
			              sqnr_db(cl_num(&g, (size_t)j, "acc.rel_err"));
			size_t q = 0;
			while (q < np && !(pk[q] == k && prho[q] == rho))
				q++;
			if (q == np) {
				if (np == GP)
					continue;
				pk[q] = k, prho[q] = rho, gmin[q] = INFINITY, gmax[q] = -INFINITY;
				np++;
			}
			gmin[q] = fmin(gmin[q], gain);
			gmax[q] = fmax(gmax[q], gain);
		}
		cl_unload(&g);
	}
	size_t gheavy = 0, ghelps = 0;
	double gbest = -INFINITY, gworst = INFINITY, rho_help = NAN, rho_hurt = NAN;
	for (size_t q = 0; q < np; q++) {
		nm_buf_printf(
		    &x->num,
		    "- weight-gradient GEMM, outlier channels ×%g, dY correlated with X at "
		    "ρ = %g: the transform changes the GEMM's SNR by %+.2f to %+.2f dB over "
		    "%zu draws\n",
		    pk[q], prho[q], gmin[q], gmax[q], ndraws);
		if (pk[q] >= 30) { /* outlier-heavy: channels far above the rest */
			gheavy++;
			/* it helps where it gains 0.5 dB on every draw */
			bool h = gmin[q] >= 0.5;
			ghelps += h;
			gbest = fmax(gbest, gmax[q]);
			gworst = fmin(gworst, gmin[q]);
			if (h && (isnan(rho_help) || prho[q] < rho_help))
				rho_help = prho[q];
			if (!h && (isnan(rho_hurt) || prho[q] > rho_hurt))
				rho_hurt = prho[q];
		}
	}
	if (!heavy || !gauss || !gheavy) {
		snprintf(x->missing, sizeof x->missing,
		         "need K = 1 and K >= 100 with and without RHT, and the GEMM part with "
		         "chan_k >= 30");
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "NVFP4 applies the transform to the operands of the weight-gradient GEMM "
	              "(dW = dYᵀ·X over the tokens), so that GEMM's error is what the rule judges: "
	              "the transform helps where it gains at least 0.5 dB on every draw of the "
	              "data (%zu here), in %zu of %zu outlier-heavy settings (outlier channels ×30 "
	              "or more; from %+.2f to %+.2f dB over the draws). ",
	              ndraws, ghelps, gheavy, gworst, gbest);
	if (ghelps && ghelps < gheavy)
		nm_buf_printf(
		    &x->why,
		    "It turns on how the gradient follows the activation: it helps from "
		    "ρ = %g on and not at ρ ≤ %g here. Without it, a 16-token block whose "
		    "largest token sets the scale flushes its small tokens to 0, and when "
		    "dY and X are correlated those flushed products share a sign, so their "
		    "error adds up over the reduction; the transform spreads each block "
		    "before quantising, and that error turns into noise that averages out. "
		    "With uncorrelated operands the flushed errors already average out, and "
		    "the transform's own rounding costs more. ",
		    rho_help, rho_hurt);
	nm_buf_printf(
	    &x->why,
	    "Measured by the tensor's own SQNR (‖deq − x‖ after the transform is undone), "
	    "the transform gains at least 0.5 dB in %zu of %zu outlier-heavy settings of "
	    "one tensor with independent outliers (K ≥ 100; from %+.2f to %+.2f dB). On Gaussian "
	    "data "
	    "(K = 1) it %s",
	    helps, heavy, worst, best,
	    hurts_gauss ? "costs accuracy" : "neither helps nor hurts measurably");
	if (hurts_gauss)
		nm_buf_printf(&x->why, " (up to %.2f dB)", gauss_cost);
	nm_buf_printf(&x->why,
	              ". The transform is orthogonal, so it moves the error rather than removing "
	              "it: without it, a 16-element block holding one outlier of size K loses its "
	              "15 small neighbours to zero (an error of about their own energy); with it, "
	              "all 16 outputs are about K/4 and each carries an e2m1 rounding error in "
	              "proportion to K/4, more energy than the neighbours had while K is small "
	              "enough that the neighbours matter. ");
	nm_buf_printf(&x->why,
	              "The tensor's own SQNR is no guide to the GEMM: a GEMM's error in one output "
	              "element depends on how the operands' errors line up over the reduction. ");
	(void)helps;
	return ghelps == gheavy ? V_TRUE : ghelps == 0 ? V_FALSE : V_PARTLY;
}

cl_verdict cl_claim_sr_unbiased(cl_ctx *x)
{
	const emu_format *f32 = emu_format_by_name("fp32");
	cl_res r;
	if (!f32 || !cl_load(x, 20, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"bias.maxabs", "bias_se.maxabs", "bias_exact.maxabs",
	                                   "bias_round.maxabs"};
	if (!cl_need_cols(x, &r, cols, 4)) {
		cl_unload(&r);
		return V_UNSETTLED;
	}
	/* a width is biased when its exact rounding bias (no sampling, saturation
	 * apart) exceeds fp32's relative resolution 2^-24 of amax: below that the
	 * bias is smaller than the inputs' own rounding */
	double tol = ldexp(1, -f32->p);
	size_t nsr = 0, biased = 0;
	int widest_biased = 0, narrowest_clean = 0;
	double sat_min = INFINITY, sat_max = 0;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, NULL))
			continue;
		const char *p = nm_csv_get(&r.t, i, r.cp), *b = strstr(p, "sr_bits=");
		double bias = cl_num(&r, i, "bias.maxabs"), se = cl_num(&r, i, "bias_se.maxabs");
		double ex = cl_num(&r, i, "bias_exact.maxabs"),
		       rd = cl_num(&r, i, "bias_round.maxabs");
		if (!b) {
			nm_buf_printf(
			    &x->num,
			    "- round to nearest even: |bias| %.3g of amax (sampled: %.3g, "
			    "standard error %.3g)\n",
			    ex, bias, se);
			continue;
		}
		int n = atoi(b + 8);
		bool big = rd > tol;
		nm_buf_printf(
		    &x->num,
		    "- SR with %d random bit%s: exact |bias| %.3g of amax, of which the "
		    "rounding's %.3g and saturation's %.3g (sampled: %.3g, standard error "
		    "%.3g)%s\n",
		    n, n == 1 ? "" : "s", ex, rd, ex - rd, bias, se,
		    big ? ": the rounding is biased" : "");
		nsr++;
		if (n >= 12) {
			sat_min = fmin(sat_min, ex - rd);
			sat_max = fmax(sat_max, ex - rd);
		}
		if (big) {
			biased++;
			widest_biased = n > widest_biased ? n : widest_biased;
		}
	}
	/* the narrowest width above every biased one */
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		const char *b = strstr(nm_csv_get(&r.t, i, r.cp), "sr_bits=");
		int n = b && cl_match(&r, i, NULL, NULL) ? atoi(b + 8) : 0;
		if (n > widest_biased && (!narrowest_clean || n < narrowest_clean))
			narrowest_clean = n;
	}
	cl_unload(&r);
	if (!nsr) {
		snprintf(x->missing, sizeof x->missing, "no policy with sr_bits=");
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "The bias here is computed exactly: each element's expected value over every "
	              "draw of the n random bits (it rounds away with probability F/2^n, F the "
	              "first n discarded bits), so it does not move with the tensor's size or seed "
	              "as a sampled mean against its standard error does. A width counts as biased "
	              "when the rounding's own bias (saturation apart) exceeds 2^-%d of amax, "
	              "fp32's resolution. %zu of %zu SR widths are biased",
	              f32->p, biased, nsr);
	if (biased && narrowest_clean)
		nm_buf_printf(
		    &x->why,
		    ", up to %d bits; from %d bits on the rounding is unbiased to fp32's "
		    "resolution (the boundary lies between the two). With n bits the "
		    "discarded bits below the first n are ignored, so the result leans toward "
		    "zero by up to 2^-n of an ulp (about 2^-(n+1) on average). ",
		    widest_biased, narrowest_clean);
	else
		nm_buf_printf(&x->why, ". ");
	if (sat_max > 0)
		nm_buf_printf(
		    &x->why,
		    "What remains at 12 bits and more (%.3g to %.3g of amax) is saturation, "
		    "not rounding: NVFP4's E4M3 block scale is rounded, so a block maximum can "
		    "land just above 6, and SR rounding it up past 6 saturates, which pulls "
		    "toward zero; the statement is about the rounding. ",
		    sat_min, sat_max);
	nm_buf_printf(
	    &x->why,
	    "The report gives magnitudes; the sign, toward zero, is checked in "
	    "tests/kernels/check_quant.c. Round to nearest is shown for scale: it is biased on "
	    "this data too, because the normal density falls across each rounding "
	    "interval. ");
	return biased == 0 ? V_TRUE : biased == nsr ? V_FALSE : V_PARTLY;
}

cl_verdict cl_claim_e8m0_ftz(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 21, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err", "deq.lost"};
	const char *keep = "compute=fp32,scale=mxfp8:floor",
	           *ftz = "compute=fp32,scale={mxfp8:floor,ftz_scale=yes}",
	           *te = "compute=fp32,scale=mxfp8";
	if (!cl_need_cols(x, &r, cols, 2)) {
		cl_unload(&r);
		return V_UNSETTLED;
	}
	double lost_lo = NAN, lost_hi = NAN, keep_err = 0, te_lo = NAN, te_hi = NAN;
	size_t n = 0;
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, NULL, ftz))
			continue;
		double sd = cl_axis(&r, i, 0);
		long j = row_of(&r, keep, sd, NAN), t = row_of(&r, te, sd, NAN);
		if (j < 0)
			continue;
		n++;
		double ef = cl_num(&r, i, "deq.rel_err"), ek = cl_num(&r, (size_t)j, "deq.rel_err");
		/* lost: at least half the tensor's energy gone under FTZ, kept without */
		if (ef >= 0.5 && ek < 0.5) {
			lost_lo = isnan(lost_lo) ? sd : lost_lo;
			lost_hi = sd;
			keep_err = fmax(keep_err, ek);
		}
		if (t >= 0 && cl_num(&r, (size_t)t, "deq.rel_err") >= 0.5) {
			te_lo = isnan(te_lo) ? sd : te_lo;
			te_hi = sd;
		}
		nm_buf_printf(
		    &x->num, "- sd %.3g: OCP floor rel_err %.3g (%s lost), with FTZ %.3g (%s lost)",
		    sd, ek, nm_csv_get(&r.t, (size_t)j, nm_csv_col(&r.t, "deq.lost")), ef,
		    nm_csv_get(&r.t, i, nm_csv_col(&r.t, "deq.lost")));
		if (t >= 0)
			nm_buf_printf(&x->num, "; TE's rounding up %.3g",
			              cl_num(&r, (size_t)t, "deq.rel_err"));
		nm_buf_printf(&x->num, "\n");
	}
	cl_unload(&r);
	if (!n) {
		snprintf(x->missing, sizeof x->missing, "no rows for %s and %s", keep, ftz);
		return V_UNSETTLED;
	}
	if (isnan(lost_lo)) {
		nm_buf_printf(&x->why, "No standard deviation here lost its blocks to FTZ. ");
		return V_FALSE;
	}
	nm_buf_printf(
	    &x->why,
	    "Under the OCP floor rule a block whose amax is below 2^-118 gets the scale "
	    "2^-127 (e8m0 code 0), the one e8m0 value that is subnormal in fp32. Read "
	    "through flush-to-zero it is 0 and the block dequantises to zeros: from sd "
	    "%.3g to %.3g at least half the tensor's energy is lost (rel_err ≥ 0.5), "
	    "while the same blocks without FTZ keep their values (rel_err at most %.3g). ",
	    lost_lo, lost_hi, keep_err);
	if (!isnan(te_lo))
		nm_buf_printf(
		    &x->why,
		    "TE's rounding up loses such blocks whatever FTZ does (from sd %.3g to "
		    "%.3g): its code 0 comes with the multiplier 1 (exp2f_rcp(0) = 1), so the "
		    "elements, far below e4m3's smallest subnormal, round to 0. ",
		    te_lo, te_hi);
	return V_TRUE;
}
