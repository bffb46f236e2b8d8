/*
 * nm_claims_attn.c — claims 24, 25: attention (online softmax, FP8 attention's static P scale).
 * Each claim reads its case's results (nm_claims_int.h) and writes its
 * numbers and reasoning; nm_claims.c dispatches and writes the report.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/emu.h"
#include "emu/sweep/nm_claims_int.h"

/* Claim 24's tolerance: online's end-to-end error at most this many times
 * naive's (tests/kernels/check_attention.c asks the same of the stored inputs). */
#define CL24_TOL 1.5

cl_verdict cl_claim_online_softmax(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 24, NULL, &r))
		return V_UNSETTLED;
	static const char *const outs[] = {"O.rel_err", "L.rel_err"};
	if (!cl_need_cols(x, &r, outs, 2)) {
		cl_unload(&r);
		return V_UNSETTLED;
	}
	/* every (policy, scale) that naive ran, paired with online's row */
	size_t n = 0, within = 0, online_only = 0, both_fail = 0;
	double worst = 0, worst_at = NAN;
	char worst_pol[128] = "";
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, "naive", NULL))
			continue;
		const char *pol = nm_csv_get(&r.t, i, r.cp);
		double sc = cl_axis(&r, i, 0);
		long j = cl_row_vp(&r, "online", pol, sc, NAN);
		if (j < 0)
			continue;
		int sn = cl_status(&r, i), so = cl_status(&r, (size_t)j);
		bool fn = cl_overflowed(sn), fo = cl_overflowed(so);
		if (fn && fo) {
			both_fail++;
			nm_buf_printf(&x->num, "- `%s`, scale %g: both %s / %s\n", pol, sc,
			              cl_stname(sn), cl_stname(so));
			continue;
		}
		n++;
		double ratio = 0;
		if (fo) {
			online_only++;
			ratio = INFINITY;
		} else if (!fn) {
			for (int o = 0; o < 2; o++) {
				double en = cl_num(&r, i, outs[o]),
				       eo = cl_num(&r, (size_t)j, outs[o]);
				double q = eo == en ? 1 : en > 0 ? eo / en : INFINITY;
				ratio = fmax(ratio, q);
			}
		}
		nm_buf_printf(&x->num,
		              "- `%s`, scale %g: O error %.4g naive, %.4g online; L error %.4g "
		              "naive, %.4g online (online / naive at most %.4g)\n",
		              pol, sc, cl_num(&r, i, outs[0]), cl_num(&r, (size_t)j, outs[0]),
		              cl_num(&r, i, outs[1]), cl_num(&r, (size_t)j, outs[1]), ratio);
		within += ratio <= CL24_TOL;
		if (ratio > worst) {
			worst = ratio;
			worst_at = sc;
			snprintf(worst_pol, sizeof worst_pol, "%s", pol);
		}
	}
	cl_unload(&r);
	if (!n) {
		snprintf(x->missing, sizeof x->missing, "no point where naive and online both ran");
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "Online is as accurate when its O and L errors end to end are each at most "
	              "%g times naive's. That holds at %zu of %zu points; the largest ratio is "
	              "%.4g (`%s`, scale %g)%s. Online's extra roundings (the rescaling factor "
	              "α = exp(m_old − m_new), l and O multiplied by it) are lost among the "
	              "storage's, the exp's and the GEMMs'. ",
	              CL24_TOL, within, n, worst, worst_pol, worst_at,
	              online_only ? ", and online fails where naive does not" : "");
	if (both_fail)
		nm_buf_printf(
		    &x->why,
		    "Where the logits' spread overflows (S − m, step `sub_max`) both fail "
		    "alike: %zu points, not counted. ",
		    both_fail);
	return within == n ? V_TRUE : within == 0 ? V_FALSE : V_PARTLY;
}

/* Claim 25's verdict at one point: the flushed probabilities' share of the
 * row's mass reaches e4m3's unit roundoff (what the cast costs every kept
 * probability): true; something lost, less than that: partly (lost in fact,
 * not in effect); nothing lost: false. */
static cl_verdict p_verdict(double share, double u)
{
	return share >= u ? V_TRUE : share > 0 ? V_PARTLY : V_FALSE;
}

cl_verdict cl_claim_fp8_p_scale(cl_ctx *x)
{
	const emu_format *e4 = emu_format_by_name("e4m3");
	cl_res r, g;
	if (!e4 || !cl_load(x, 25, "head", &r))
		return V_UNSETTLED;
	if (!cl_load(x, 25, "length", &g)) {
		cl_unload(&r);
		return V_UNSETTLED;
	}
	static const char *const cols[] = {"p_lost.maxabs", "O.rel_err"};
	static const char *const gcols[] = {"p_lost.maxabs", "p_mass.maxabs"};
	if (!cl_need_cols(x, &r, cols, 2) || !cl_need_cols(x, &g, gcols, 2)) {
		cl_unload(&r);
		cl_unload(&g);
		return V_UNSETTLED;
	}
	/* a P̃ is flushed when P̃·p_scale rounds to 0 in e4m3: below half the
	 * smallest subnormal over p_scale */
	const double ps = 448, thr = e4->min_subnormal / 2 / ps, u = ldexp(1, -e4->p);
	double lost = 0, big_lost = NAN, big_ps = NAN, head_share = 0;
	size_t n = 0, big_fail = 0, big_n = 0, nv[4] = {0, 0, 0, 0};
	bool have_mass = cl_has_col(&r, "p_mass.maxabs");
	for (size_t i = 0; i < cl_nrows(&r); i++) {
		if (!cl_match(&r, i, "fp8", NULL))
			continue;
		const char *pol = nm_csv_get(&r.t, i, r.cp);
		double sc = cl_axis(&r, i, 0), p = cl_axis(&r, i, 1),
		       pl = cl_num(&r, i, "p_lost.maxabs");
		/* the share measured, or bounded by l ≥ 1 (the row's max is exp(0)) */
		double share = have_mass ? cl_num(&r, i, "p_mass.maxabs") : pl * thr;
		int st = cl_status(&r, i);
		nm_buf_printf(
		    &x->num,
		    "- 32 keys, `%s`, scale %g, p_scale %g: %s, %.0f probabilities flushed to "
		    "0 (%.3g of a row's mass), O error %.4g\n",
		    pol, sc, p, cl_stname(st), pl, share, cl_num(&r, i, "O.rel_err"));
		if (p == ps) {
			n++;
			lost = fmax(lost, pl);
			head_share = fmax(head_share, share);
			nv[p_verdict(share, u)]++;
		} else if (p > ps) {
			big_n++;
			big_fail += cl_overflowed(st);
			big_ps = p;
			big_lost = isnan(big_lost) ? pl : fmax(big_lost, pl);
		}
	}
	cl_unload(&r);
	/* the length part: the first (keys, sink) where the share reaches u */
	double first_keys = NAN, first_sink = NAN, first_share = NAN, best = 0, best_keys = NAN,
	       best_sink = NAN;
	size_t ng = 0;
	for (size_t i = 0; i < cl_nrows(&g); i++) {
		if (!cl_match(&g, i, "fp8", NULL))
			continue;
		double keys = cl_axis(&g, i, 0), sink = cl_axis(&g, i, 1);
		double pl = cl_num(&g, i, "p_lost.maxabs"), share = cl_num(&g, i, "p_mass.maxabs");
		char what[48];
		if (sink != 0)
			snprintf(what, sizeof what, "a sink of logit %g", sink);
		else
			snprintf(what, sizeof what, "no sink");
		nm_buf_printf(&x->num,
		              "- %g keys, %s: %.0f probabilities flushed to 0, %.3g of the row's "
		              "mass%s\n",
		              keys, what, pl, share,
		              share >= u ? ": at least e4m3's unit roundoff" : "");
		ng++;
		nv[p_verdict(share, u)]++;
		if (share > best) {
			best = share;
			best_keys = keys;
			best_sink = sink;
		}
		if (share >= u && (isnan(first_keys) || keys < first_keys)) {
			first_keys = keys;
			first_sink = sink;
			first_share = share;
		}
	}
	cl_unload(&g);
	if (!n || !ng) {
		snprintf(x->missing, sizeof x->missing,
		         "the head part needs p_scale = 448, the length part rows");
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "With p_scale 448 a probability P̃ survives the e4m3 cast only above half "
	              "e4m3's smallest subnormal (%.6g) over 448, %.4g of the row's max. A point "
	              "counts as losing the small probabilities when what the cast flushed "
	              "carried at least e4m3's unit roundoff %.4g of the row's mass (l), what the "
	              "cast costs every probability it keeps; less is lost in fact but not in "
	              "effect. With 32 keys a row at most %.0f are flushed over a head of 32 "
	              "queries (at most %.3g of a row's mass): a row that short cannot lose %.4g. ",
	              e4->min_subnormal, thr, u, lost, head_share, u);
	if (!isnan(first_keys))
		nm_buf_printf(
		    &x->why,
		    "Long rows can: with an attention sink (one key's logit %g above the "
		    "bulk, whose own logits have sd 1) a row of %g keys loses %.3g of its "
		    "mass, and the largest loss here is %.3g (%g keys, sink %g). The "
		    "verdict turns on the row length and the pattern: true from about %g "
		    "keys with a sink of logit %g, partly below that or without one (a normal "
		    "row's "
		    "own largest logit leaves the bulk too close to be flushed in bulk). ",
		    first_sink, first_keys, first_share, best, best_keys, best_sink, first_keys,
		    first_sink);
	else
		nm_buf_printf(
		    &x->why,
		    "No row here, up to %g keys with a sink, loses that much (at most %.3g "
		    "of its mass, %g keys, sink %g). ",
		    best_keys, best, best_keys, best_sink);
	if (big_n)
		nm_buf_printf(&x->why,
		              "A larger static scale (%g) flushes at most %.0f but overflows "
		              "e4m3 at P̃ = 1 (every row has one): %zu of %zu points fail. ",
		              big_ps, big_lost, big_fail, big_n);
	nm_buf_printf(&x->why,
	              "Points: %zu where the statement holds in full, %zu where probabilities are "
	              "lost but carry less than %.4g, %zu where none is lost. ",
	              nv[V_TRUE], nv[V_PARTLY], u, nv[V_FALSE]);
	return nv[V_PARTLY] == 0 && nv[V_FALSE] == 0  ? V_TRUE
	       : nv[V_TRUE] == 0 && nv[V_PARTLY] == 0 ? V_FALSE
	                                              : V_PARTLY;
}
