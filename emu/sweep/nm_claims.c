/*
 * nm_claims.c — docs/claims.md, every verdict computed from numbers.
 *
 * Each claim has one function that reads the results of its claim cases
 * (found by [claim] id and part, so the case files may be renamed), pulls
 * out the few numbers that decide it, writes them, decides the verdict by a
 * rule stated in docs/claims-method.md, and writes a paragraph built from
 * the same numbers. Nothing in a paragraph is a number typed by hand except
 * the statement's own (6e-5, 65536, ...), which the rules compare against.
 * A missing case or CSV makes the claim "unsettled", never a guess.
 *
 * Policies are matched by their spec string as the case writes it
 * ("storage=fp16,compute=fp32"); variants by name; axes by value.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/core/emu.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/sweep/nm_claims.h"
#include "emu/sweep/nm_claims_int.h"
#include "emu/sweep/nm_plot.h"

/* NOLINTBEGIN(bugprone-suspicious-missing-comma): long statements are split literals */
static const char *const statements[NM_CLAIMS_N] = {
	"FP16's dynamic range is about 6e-5 to 6.5e4.",
	"With GradScaler's default scale 65536 growing to 131072, a loss of 15 overflows when "
	"scaled, before backward runs.",
	"Cross-entropy on FP16 logits is unstable; computing it on `logits.float()` fixes it.",
	"Layer norm with variance 1e-7 and eps 1e-5 produces values above 65504 in FP16; eps 1e-3 "
	"fixes it.",
	"Dividing the loss by the number of accumulation steps makes the effective loss scale "
	"steps × 65536 and overflows.",
	"BF16 cannot overflow where FP32 does not, and is better than FP16 in every way.",
	"Sums accumulated in FP16 stop growing; FP32 accumulation fixes it.",
	"FP8 E4M3 needs per-tensor scaling to train; MX block scaling removes overflow entirely.",
	"Conservative GradScaler settings (init 2048, growth 1.5, interval 1000) prevent the NaNs "
	"the defaults hit.",
	"BCE-with-logits near ±100: FP16 can't represent e^100; .float() before the loss fixes it.",
	"Batch norm with a tiny variance and eps 1e-5 produces values above 65504 in FP16.",
	"Run the model in FP32 and only the optimizer state in FP16: what Apex's O2 mode does.",
	"GradScaler's default initial scale 65536 is close to FP16's maximum.",
	"einsum left in FP16 overflows.",
	"Gradient checkpointing recomputes in FP16 and can overflow where the forward did not.",
	"BF16 needs no loss scaling.",
	 "MX with the OCP floor rule overflows or clips where rounding the scale up does not.",
	"NVFP4's E4M3 block scales with 16-element blocks are more accurate than MXFP4's E8M0 "
	"with 32.",
	"The random Hadamard transform helps NVFP4 on outlier-heavy tensors.",
	"Stochastic rounding with n random bits is unbiased.",
	"The E8M0 scale 2^-127 is lost under flush-to-zero.",
	"RMSNorm in fp16 overflows from a row RMS of 256.",
	"Adam's eps = 1e-8 is zero in fp16.",
	"Online softmax is as accurate as the two-pass softmax.",
	"FP8 attention with a static P scale loses the small probabilities.",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

/* ---- the [claim] section ---- */

static const char *kv(const nm_case *c, const char *key)
{
	for (size_t i = 0; i < c->nkv; i++)
		if (strcmp(c->kv[i].section, "claim") == 0 && strcmp(c->kv[i].key, key) == 0)
			return c->kv[i].value ? c->kv[i].value : "";
	return NULL;
}

static int claim_id(const nm_case *c)
{
	const char *v = kv(c, "id");
	if (!v)
		return 0;
	char *end;
	long id = strtol(v, &end, 10);
	return *end || id < 1 || id > NM_CLAIMS_N || !statements[id - 1] ? -1 : (int)id;
}

int nm_claims_check(const nm_case *c, char *err, size_t errlen)
{
	bool any = false;
	int line = 0;
	for (size_t i = 0; i < c->nkv; i++) {
		const nm_case_kv *k = &c->kv[i];
		if (strcmp(k->section, "claim") != 0)
			continue;
		any = true;
		line = line ? line : k->line;
		if (strcmp(k->key, "id") != 0 && strcmp(k->key, "statement") != 0 &&
		    strcmp(k->key, "part") != 0) {
			snprintf(err, errlen, "%s:%d: key '%s': unknown in [claim] (id statement part)",
			         c->path, k->line, k->key);
			return -1;
		}
		if (strcmp(k->key, "id") == 0 && claim_id(c) < 0) {
			snprintf(err, errlen,
			         "%s:%d: key 'id': '%s' is not a claim number 1..25", c->path,
			         k->line, k->value ? k->value : "");
			return -1;
		}
	}
	if (any && claim_id(c) == 0) {
		snprintf(err, errlen, "%s:%d: key 'id': missing in [claim]", c->path, line);
		return -1;
	}
	return 0;
}

/* ---- what one claim sees ---- */

bool cl_load(cl_ctx *x, int id, const char *part, cl_res *r)
{
	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < x->n && !r->c; i++) {
		const char *p = kv(x->cases[i], "part");
		/* no part named: the claim's own case, not a training run's (part = model...) */
		if (claim_id(x->cases[i]) == id &&
		    (part ? p && strcmp(p, part) == 0 : !p || strncmp(p, "model", 5) != 0))
			r->c = x->cases[i];
	}
	if (!r->c) {
		if (!*x->missing)
			snprintf(x->missing, sizeof x->missing, "no claim case with id = %d%s%s", id,
			         part ? ", part = " : "", part ? part : "");
		return false;
	}
	char path[1024], err[512];
	snprintf(path, sizeof path, "%s/%s.csv", x->dir, r->c->name);
	if (nm_csv_read(path, &r->t, err, sizeof err)) {
		if (!*x->missing)
			snprintf(x->missing, sizeof x->missing, "%s", err);
		r->c = NULL;
		return false;
	}
	size_t ul = strlen(x->used);
	snprintf(x->used + ul, sizeof x->used - ul, "%s`%s`", ul ? ", " : "", r->c->name);
	r->cv = nm_csv_col(&r->t, "variant");
	r->cp = nm_csv_col(&r->t, "policy");
	r->cb = nm_csv_col(&r->t, "backend");
	r->cs = nm_csv_col(&r->t, "status");
	for (size_t a = 0; a < r->c->naxes; a++)
		r->ca[a] = nm_csv_col(&r->t, r->c->axes[a].name);
	return true;
}

void cl_unload(cl_res *r)
{
	nm_csv_free(&r->t);
}

size_t cl_nrows(const cl_res *r)
{
	return r->t.nrec ? r->t.nrec - 1 : 0;
}

/* Row i is on the fast backend and matches variant / policy (NULL: any). */
bool cl_match(const cl_res *r, size_t i, const char *variant, const char *policy)
{
	if (r->cb >= 0 && strcmp(nm_csv_get(&r->t, i, r->cb), "fast") != 0)
		return false;
	if (variant && strcmp(nm_csv_get(&r->t, i, r->cv), variant) != 0)
		return false;
	return !policy || strcmp(nm_csv_get(&r->t, i, r->cp), policy) == 0;
}

double cl_axis(const cl_res *r, size_t i, size_t a)
{
	return a < r->c->naxes ? nm_csv_num(nm_csv_get(&r->t, i, r->ca[a])) : NAN;
}

int cl_status(const cl_res *r, size_t i)
{
	return nm_status_code(nm_csv_get(&r->t, i, r->cs));
}

double cl_num(const cl_res *r, size_t i, const char *col)
{
	return nm_csv_num(nm_csv_get(&r->t, i, nm_csv_col(&r->t, col)));
}

static bool has_col(const cl_res *r, const char *col)
{
	return nm_csv_col(&r->t, col) >= 0;
}

/* A status that says the format broke by overflow (not underflow). */
bool cl_overflowed(int st)
{
	return st >= 2;
}

const char *cl_stname(int st)
{
	static const char *const n[] = {"ok", "underflow", "overflow", "inf", "nan"};
	return st >= 0 && st < 5 ? n[st] : "?";
}

/* The threshold row of case c, variant, policy whose axis starts with name;
 * its event must satisfy want (NULL: any). -1 when none. */
long cl_thr_find(const cl_ctx *x, const nm_case *c, const char *variant, const char *policy,
                 const char *axname, const char *event)
{
	if (!x->have_thr)
		return -1;
	const nm_csv *t = &x->thr;
	int cc = nm_csv_col(t, "case"), cv = nm_csv_col(t, "variant"), cp = nm_csv_col(t, "policy");
	int ca = nm_csv_col(t, "axis"), ce = nm_csv_col(t, "event");
	size_t al = strlen(axname);
	for (size_t i = 0; i + 1 < t->nrec; i++) {
		const char *a = nm_csv_get(t, i, ca);
		if (strcmp(nm_csv_get(t, i, cc), c->name) == 0 &&
		    (!variant || strcmp(nm_csv_get(t, i, cv), variant) == 0) &&
		    (!policy || strcmp(nm_csv_get(t, i, cp), policy) == 0) && strncmp(a, axname, al) == 0 &&
		    (a[al] == 0 || a[al] == '@') && (!event || strstr(nm_csv_get(t, i, ce), event)))
			return (long)i;
	}
	return -1;
}

double cl_thr_num(const cl_ctx *x, long row, const char *col)
{
	return nm_csv_num(nm_csv_get(&x->thr, (size_t)row, nm_csv_col(&x->thr, col)));
}

/* Where a 1-D sweep of (variant, policy) first reaches a status for which
 * bad() holds, walking up the axis: the grid bracket (last good value,
 * first bad value); NAN, NAN when it never does. */
static void grid_first(const cl_res *r, const char *variant, const char *policy,
                       bool (*bad)(int), double *last_ok, double *first_bad)
{
	*last_ok = NAN;
	*first_bad = NAN;
	for (size_t i = 0; i < cl_nrows(r); i++) {
		if (!cl_match(r, i, variant, policy))
			continue;
		if (bad(cl_status(r, i))) {
			*first_bad = cl_axis(r, i, 0);
			return;
		}
		*last_ok = cl_axis(r, i, 0);
	}
}

/* The largest axis value at which the status is bad, walking up (for a
 * status that holds at the bottom of the axis, such as underflow). */
static void grid_last(const cl_res *r, const char *variant, const char *policy, bool (*bad)(int),
                      double *last_bad, double *first_ok)
{
	*last_bad = NAN;
	*first_ok = NAN;
	for (size_t i = 0; i < cl_nrows(r); i++) {
		if (!cl_match(r, i, variant, policy))
			continue;
		if (bad(cl_status(r, i))) {
			*last_bad = cl_axis(r, i, 0);
			*first_ok = NAN;
		} else if (isnan(*first_ok))
			*first_ok = cl_axis(r, i, 0);
	}
}

static bool is_underflow(int st)
{
	return st == 1;
}

/* Overflow threshold under RNE: max + half an ulp of max. */
static double ovf_threshold(const emu_format *f)
{
	return ldexp(2 - ldexp(1, -f->p), f->emax);
}

/* ---- the claims ---- */

static const char *vname(cl_verdict v);

/* A kernel-level verdict with what a claim's training runs showed
 * (nm_claims_train.c: 1 they support the statement, 0 they contradict it,
 * -1 none): agreeing runs leave it, disagreeing ones make it partly. */
static cl_verdict with_runs(cl_verdict v, int runs)
{
	if (runs < 0 || v == V_UNSETTLED)
		return v;
	if (runs == 1)
		return v == V_FALSE ? V_PARTLY : v;
	return v == V_TRUE ? V_PARTLY : v;
}

static cl_verdict claim1(cl_ctx *x)
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
	    h->max, h->emin, h->min_normal, h->emin - h->p + 1, h->min_subnormal, ovf_threshold(h));
	/* overflow: from the thresholds when found, else the grid bracket */
	double ov_ok, ov_bad, un_bad, un_ok;
	grid_first(&r, NULL, pol, cl_overflowed, &ov_ok, &ov_bad);
	grid_last(&r, NULL, pol, is_underflow, &un_bad, &un_ok);
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
	const char *ecol = has_col(&r, "result.rel_err") ? "result.rel_err" : NULL;
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

static cl_verdict claim2(cl_ctx *x)
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
	double bound = ovf_threshold(s32) / 131072;
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
			              losses[j], vname(scaled_verdict(ovf[j][0], ovf[j][1])));
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

static cl_verdict claim3(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 3, NULL, &r))
		return V_UNSETTLED;
	const char *h = "storage=fp16", *f = "storage=fp16,compute=fp32";
	const char *vars[] = {"naive", "maxsub", "lse"};
	double lim = emu_format_by_name("fp16")->max;
	double maxerr[2][3], firstbad[2][3], firstunder = NAN;
	bool anybad[2][3], seen = false;
	const char *ecol = has_col(&r, "loss.arith_rel_err") ? "loss.arith_rel_err" : "loss.rel_err";
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
		snprintf(x->missing, sizeof x->missing, "the case needs the policies %s and %s", h, f);
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
	/* fixed by .float(): the log-softmax PyTorch runs, in fp32, never overflows and is accurate */
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

static cl_verdict claim4(cl_ctx *x)
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
	return with_runs(big_small && !bad_large ? V_TRUE
	                 : !big_small            ? V_FALSE
	                                         : V_PARTLY,
	                 cl_model4(x));
}

static cl_verdict claim5(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 5, NULL, &r))
		return V_UNSETTLED;
	if (r.c->naxes != 2) {
		snprintf(x->missing, sizeof x->missing, "case %s needs the axes m and divide", r.c->name);
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

static cl_verdict claim6(cl_ctx *x)
{
	const emu_format *b = emu_format_by_name("bf16"), *s = emu_format_by_name("fp32");
	cl_res r, q;
	if (!b || !s || !cl_load(x, 6, "range", &r))
		return V_UNSETTLED;
	const char *pb = "storage=fp32,accum=bf16", *ps = "storage=fp32,accum=fp32";
	nm_buf_printf(&x->num,
	              "- descriptors: bf16 largest %.9g, overflows from %.9g; fp32 largest %.9g, "
	              "overflows from %.9g\n",
	              b->max, ovf_threshold(b), s->max, ovf_threshold(s));
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
	    b->max, ovf_threshold(b), ovf_threshold(s), a_false ? "false" : "not shown",
	    b_false ? "so not better in every way" : "not shown here");
	return !a_false && !b_false ? V_TRUE : a_false && b_false ? V_FALSE : V_PARTLY;
}

static cl_verdict claim7(cl_ctx *x)
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
		snprintf(x->missing, sizeof x->missing, "the case needs the policies %s and %s", ph, ps);
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

static cl_verdict claim8(cl_ctx *x)
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
			snprintf(x->missing, sizeof x->missing, "no e4m3 policy with scale=%s", rec[k]);
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
	return with_runs(a && mx_ok == 2    ? V_TRUE
	                 : !a && mx_ok == 0 ? V_FALSE
	                                    : V_PARTLY,
	                 cl_model8(x));
}


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

static bool need_cols(cl_ctx *x, const cl_res *r, const char *const *cols, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!has_col(r, cols[k])) {
			snprintf(x->missing, sizeof x->missing, "case %s has no column %s", r->c->name,
			         cols[k]);
			return false;
		}
	return true;
}

static cl_verdict claim17(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 17, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"clipped.maxabs", "deq.rel_err"};
	static const char *const pol[2][2] = {
	    {"compute=fp32,scale=mxfp8", "compute=fp32,scale=mxfp8:floor"},
	    {"compute=fp32,scale=mxfp4", "compute=fp32,scale=mxfp4:floor"}};
	static const char *const elem[2] = {"e4m3 (MXFP8)", "e2m1 (MXFP4)"};
	if (!need_cols(x, &r, cols, 2)) {
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
		              elem[e], pol[e][1], 100 * clip_min[1], 100 * clip_max[1], db[1], n[1]);
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

static cl_verdict claim18(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 18, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err", "deq.lost"};
	const char *nv = "compute=fp32,scale=nvfp4", *mx = "compute=fp32,scale=mxfp4";
	if (!need_cols(x, &r, cols, 2)) {
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

static cl_verdict claim19(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 19, "tensor", &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err"};
	const char *with = "compute=fp32,scale=nvfp4", *without = "compute=fp32,scale={nvfp4,rht=no}";
	if (!need_cols(x, &r, cols, 1) || r.c->naxes != 2) {
		if (!*x->missing)
			snprintf(x->missing, sizeof x->missing, "case %s needs axes K and F", r.c->name);
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
		bool gcols = has_col(&g, "acc.rel_err") && g.c->naxes == 2;
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

static cl_verdict claim20(cl_ctx *x)
{
	const emu_format *f32 = emu_format_by_name("fp32");
	cl_res r;
	if (!f32 || !cl_load(x, 20, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"bias.maxabs", "bias_se.maxabs", "bias_exact.maxabs",
	                                   "bias_round.maxabs"};
	if (!need_cols(x, &r, cols, 4)) {
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
	nm_buf_printf(&x->why,
	              "The report gives magnitudes; the sign, toward zero, is checked in "
	              "tests/kernels/check_quant.c. Round to nearest is shown for scale: it is biased on "
	              "this data too, because the normal density falls across each rounding "
	              "interval. ");
	return biased == 0 ? V_TRUE : biased == nsr ? V_FALSE : V_PARTLY;
}

static cl_verdict claim21(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 21, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err", "deq.lost"};
	const char *keep = "compute=fp32,scale=mxfp8:floor",
	           *ftz = "compute=fp32,scale={mxfp8:floor,ftz_scale=yes}",
	           *te = "compute=fp32,scale=mxfp8";
	if (!need_cols(x, &r, cols, 2)) {
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
		nm_buf_printf(&x->num,
		              "- sd %.3g: OCP floor rel_err %.3g (%s lost), with FTZ %.3g (%s lost)",
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
	nm_buf_printf(&x->why,
	              "Under the OCP floor rule a block whose amax is below 2^-118 gets the scale "
	              "2^-127 (e8m0 code 0), the one e8m0 value that is subnormal in fp32. Read "
	              "through flush-to-zero it is 0 and the block dequantises to zeros: from sd "
	              "%.3g to %.3g at least half the tensor's energy is lost (rel_err ≥ 0.5), "
	              "while the same blocks without FTZ keep their values (rel_err at most %.3g). ",
	              lost_lo, lost_hi, keep_err);
	if (!isnan(te_lo))
		nm_buf_printf(&x->why,
		              "TE's rounding up loses such blocks whatever FTZ does (from sd %.3g to "
		              "%.3g): its code 0 comes with the multiplier 1 (exp2f_rcp(0) = 1), so the "
		              "elements, far below e4m3's smallest subnormal, round to 0. ",
		              te_lo, te_hi);
	return V_TRUE;
}

/* ---- claims 9–16, 22, 23: training kernels ---- */

/* The first fast row of variant and policy at axis values a0 (and a1 when
 * not NAN); -1 when none. */
static long row_vp(const cl_res *r, const char *variant, const char *policy, double a0, double a1)
{
	for (size_t i = 0; i < cl_nrows(r); i++)
		if (cl_match(r, i, variant, policy) && cl_axis(r, i, 0) == a0 &&
		    (isnan(a1) || cl_axis(r, i, 1) == a1))
			return (long)i;
	return -1;
}

/* One gradscaler trajectory from a case's series CSV: the fast backend's
 * scale, skipped and lost per step at axis value g0. */
#define GS_NH 8 /* horizons: 10^3, 10^4, ... below the run's length, then the length */
typedef struct {
	size_t n, skips, uf_steps, isolated, recovered, never;
	size_t nh, horizon[GS_NH], skips_by[GS_NH]; /* skips within the first horizon[h] steps */
	double rec_sum, rec_max;
	double *skipped; /* per step, 1 when skipped (the caller frees it) */
} cl_gs;

static bool gs_traj(cl_ctx *x, const cl_res *r, double g0, cl_gs *o)
{
	memset(o, 0, sizeof *o);
	char path[1024], err[512];
	snprintf(path, sizeof path, "%s/%s-series.csv", x->dir, r->c->name);
	nm_csv s;
	if (nm_csv_read(path, &s, err, sizeof err)) {
		snprintf(x->missing, sizeof x->missing, "%s", err);
		return false;
	}
	int cb = nm_csv_col(&s, "backend"), co = nm_csv_col(&s, "output"),
	    ci = nm_csv_col(&s, "index"), cv = nm_csv_col(&s, "value"),
	    ca = r->c->naxes ? nm_csv_col(&s, r->c->axes[0].name) : -1;
	size_t cap = s.nrec;
	double *sc = calloc(cap, sizeof *sc), *sk = calloc(cap, sizeof *sk),
	       *lo = calloc(cap, sizeof *lo);
	bool ok = sc && sk && lo && cb >= 0 && co >= 0 && ci >= 0 && cv >= 0 && ca >= 0;
	for (size_t i = 0; ok && i + 1 < s.nrec; i++) {
		if (strcmp(nm_csv_get(&s, i, cb), "fast") != 0 ||
		    nm_csv_num(nm_csv_get(&s, i, ca)) != g0)
			continue;
		double k = nm_csv_num(nm_csv_get(&s, i, ci)), v = nm_csv_num(nm_csv_get(&s, i, cv));
		const char *out = nm_csv_get(&s, i, co);
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
	nm_csv_free(&s);
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

static cl_verdict claim9(cl_ctx *x)
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
	bool ok = true;
	for (size_t i = 0; ok && i < cl_nrows(&d); i++) {
		if (!cl_match(&d, i, NULL, NULL))
			continue;
		double g0 = cl_axis(&d, i, 0);
		cl_gs a = {0}, b = {0};
		ok = gs_traj(x, &d, g0, &a);
		ok = ok && gs_traj(x, &c, g0, &b);
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
		              vname(gs_verdict(hd[h], hc[h])));
	nm_buf_printf(&x->why, ". ");
	/* the boundary: the verdict at each horizon, when it changes */
	bool turns = false;
	for (size_t h = 1; h < nh; h++)
		turns |= gs_verdict(hd[h], hc[h]) != gs_verdict(hd[0], hc[0]);
	if (turns) {
		nm_buf_printf(&x->why, "The verdict turns on the horizon (");
		for (size_t h = 0; h < nh; h++)
			nm_buf_printf(&x->why, "%s%s at %zu steps", h ? ", " : "",
			              vname(gs_verdict(hd[h], hc[h])), hz[h]);
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
	nm_buf_printf(&x->why,
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
	return with_runs(gs_verdict(hd[nh - 1], hc[nh - 1]), cl_model9(x));
}

static cl_verdict claim10(cl_ctx *x)
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

static cl_verdict claim11(cl_ctx *x)
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

static cl_verdict claim12(cl_ctx *x)
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
	if (!need_cols(x, &r, cols, 4)) {
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
			all &= (j[p] = row_vp(&r, NULL, pol[p], X, NAN)) >= 0;
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

static cl_verdict claim13(cl_ctx *x)
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
					    vname(closeness(fabs(v / h->max - 1))));
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
	double thr = ovf_threshold(h), gap = fabs(held / h->max - 1);
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

static cl_verdict claim14(cl_ctx *x)
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

static cl_verdict claim15(cl_ctx *x)
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
		long j = row_vp(&r, v, rc, L, NAN);
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

static cl_verdict claim16(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 16, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"frac_lost", "frac_overflow"};
	const char *ph = "storage=fp16,compute=fp32", *pb = "storage=bf16,compute=fp32";
	if (!need_cols(x, &r, cols, 2) || r.c->naxes != 2) {
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
		long js = -1, j1 = row_vp(&r, NULL, ph, 1, mag);
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
	return with_runs(fine == n ? V_TRUE : fine == 0 ? V_FALSE : V_PARTLY, cl_model16(x));
}

static cl_verdict claim22(cl_ctx *x)
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
			grid_first(&r, vars[v], pols[p], cl_overflowed, &ok, &bad);
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

static cl_verdict claim23(cl_ctx *x)
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

/* Claim 24's tolerance: online's end-to-end error at most this many times
 * naive's (tests/kernels/check_attention.c asks the same of the stored inputs). */
#define CL24_TOL 1.5

static cl_verdict claim24(cl_ctx *x)
{
	cl_res r;
	if (!cl_load(x, 24, NULL, &r))
		return V_UNSETTLED;
	static const char *const outs[] = {"O.rel_err", "L.rel_err"};
	if (!need_cols(x, &r, outs, 2)) {
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
		long j = row_vp(&r, "online", pol, sc, NAN);
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
		snprintf(x->missing, sizeof x->missing,
		         "no point where naive and online both ran");
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
		nm_buf_printf(&x->why,
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

static cl_verdict claim25(cl_ctx *x)
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
	if (!need_cols(x, &r, cols, 2) || !need_cols(x, &g, gcols, 2)) {
		cl_unload(&r);
		cl_unload(&g);
		return V_UNSETTLED;
	}
	/* a P̃ is flushed when P̃·p_scale rounds to 0 in e4m3: below half the
	 * smallest subnormal over p_scale */
	const double ps = 448, thr = e4->min_subnormal / 2 / ps, u = ldexp(1, -e4->p);
	double lost = 0, big_lost = NAN, big_ps = NAN, head_share = 0;
	size_t n = 0, big_fail = 0, big_n = 0, nv[4] = {0, 0, 0, 0};
	bool have_mass = has_col(&r, "p_mass.maxabs");
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

static cl_verdict (*const claim_fn[NM_CLAIMS_N])(cl_ctx *) = {
	claim1,  claim2,  claim3,  claim4,  claim5,  claim6,  claim7,  claim8,
	claim9,  claim10, claim11, claim12, claim13, claim14, claim15, claim16,
	claim17, claim18, claim19, claim20, claim21, claim22, claim23, claim24,
	claim25,
};

static const char *vname(cl_verdict v)
{
	return v == V_TRUE ? "true" : v == V_FALSE ? "false" : v == V_PARTLY ? "partly" : "unsettled";
}

static cl_verdict run_claim(int id, cl_ctx *x)
{
	if (!claim_fn[id - 1]) {
		snprintf(x->missing, sizeof x->missing, "claim %d is reserved", id);
		return V_UNSETTLED;
	}
	cl_verdict v = claim_fn[id - 1](x);
	if (v == V_UNSETTLED && !*x->missing)
		snprintf(x->missing, sizeof x->missing, "results missing");
	return v;
}

static void ctx_init(cl_ctx *x, nm_case *const *cases, size_t n, const char *dir)
{
	memset(x, 0, sizeof *x);
	x->cases = cases;
	x->n = n;
	x->dir = dir;
	char path[1024], err[256];
	snprintf(path, sizeof path, "%s/thresholds.csv", dir);
	x->have_thr = nm_csv_read(path, &x->thr, err, sizeof err) == 0;
}

static void ctx_reset(cl_ctx *x)
{
	nm_buf_free(&x->num);
	nm_buf_free(&x->why);
	*x->missing = 0;
	*x->used = 0;
}

const char *nm_claim_verdict(int id, nm_case *const *cases, size_t n, const char *results_dir)
{
	if (id < 1 || id > NM_CLAIMS_N)
		return "unsettled";
	cl_ctx x;
	ctx_init(&x, cases, n, results_dir);
	const char *v = vname(run_claim(id, &x));
	ctx_reset(&x);
	if (x.have_thr)
		nm_csv_free(&x.thr);
	return v;
}

int nm_claims_write(nm_case *const *cases, size_t n, const char *results_dir, const char *md_path,
                    char *err, size_t errlen)
{
	cl_ctx x;
	ctx_init(&x, cases, n, results_dir);
	nm_buf md = {0}, body = {0};
	nm_buf_printf(
	    &md, "# Claims about mixed precision, settled by computation\n\n"
	         "Generated by `make sweep` (emu/sweep/nm_claims.c) from the claim cases in "
	         "`cases/claims/` and the format descriptors; do not edit. Every number below was "
	         "computed by nanmap, and every verdict by a rule applied to those numbers "
	         "([claims-method.md](claims-method.md) states each rule). Thresholds marked "
	         "*bisected* come from [thresholds.md](thresholds.md).\n\n"
	         "| # | statement | verdict |\n| --- | --- | --- |\n");
	for (int id = 1; id <= NM_CLAIMS_N; id++) {
		if (!claim_fn[id - 1])
			continue; /* a reserved number */
		ctx_reset(&x);
		cl_verdict v = run_claim(id, &x);
		const char *stmt = statements[id - 1];
		for (size_t i = 0; i < n; i++)
			if (claim_id(cases[i]) == id && kv(cases[i], "statement") &&
			    *kv(cases[i], "statement"))
				stmt = kv(cases[i], "statement");
		nm_buf_printf(&md, "| %d | %s | **%s** |\n", id, stmt, vname(v));
		nm_buf_printf(&body, "\n## %d. %s\n\n**Verdict: %s.**\n\n", id, stmt, vname(v));
		if (v == V_UNSETTLED)
			nm_buf_printf(&body, "Not settled: %s.\n", x.missing);
		else {
			/* the paragraph's sentences each end in a blank */
			while (x.why.s && x.why.len && x.why.s[x.why.len - 1] == ' ')
				x.why.s[--x.why.len] = 0;
			nm_buf_printf(&body, "Numbers (case%s %s):\n\n%s\n%s\n",
			              strchr(x.used, ',') ? "s" : "", x.used, nm_buf_str(&x.num),
			              nm_buf_str(&x.why));
		}
	}
	ctx_reset(&x);
	if (x.have_thr)
		nm_csv_free(&x.thr);
	nm_buf_putn(&md, body.s, body.len);
	if (md.oom || body.oom) {
		nm_buf_free(&body);
		nm_buf_free(&md);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* through the one atomic writer; unchanged bytes are not rewritten */
	nm_buf_free(&body);
	int rc = nm_file_update(md_path, md.s, md.len, NULL, err, errlen);
	nm_buf_free(&md);
	return rc;
}
