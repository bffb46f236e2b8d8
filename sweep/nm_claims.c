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

#include "emu.h"
#include "nm_buf.h"
#include "nm_claims.h"
#include "nm_file.h"
#include "nm_plot.h"

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

typedef struct {
	nm_case *const *cases;
	size_t n;
	const char *dir;
	nm_csv thr;
	bool have_thr;
	nm_buf num, why;     /* the numbers (bullets) and the paragraph */
	char missing[512];   /* why the claim is unsettled */
	char used[512];      /* the cases read */
} cl_ctx;

typedef struct {
	const nm_case *c;
	nm_csv t;
	int cv, cp, cb, cs, ca[NM_CASE_MAX_AXES];
} cl_res;

static bool load(cl_ctx *x, int id, const char *part, cl_res *r)
{
	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < x->n && !r->c; i++) {
		const char *p = kv(x->cases[i], "part");
		if (claim_id(x->cases[i]) == id && (!part || (p && strcmp(p, part) == 0)))
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

static void unload(cl_res *r)
{
	nm_csv_free(&r->t);
}

static size_t nrows(const cl_res *r)
{
	return r->t.nrec ? r->t.nrec - 1 : 0;
}

/* Row i is on the fast backend and matches variant / policy (NULL: any). */
static bool match(const cl_res *r, size_t i, const char *variant, const char *policy)
{
	if (r->cb >= 0 && strcmp(nm_csv_get(&r->t, i, r->cb), "fast") != 0)
		return false;
	if (variant && strcmp(nm_csv_get(&r->t, i, r->cv), variant) != 0)
		return false;
	return !policy || strcmp(nm_csv_get(&r->t, i, r->cp), policy) == 0;
}

static double axis(const cl_res *r, size_t i, size_t a)
{
	return a < r->c->naxes ? nm_csv_num(nm_csv_get(&r->t, i, r->ca[a])) : NAN;
}

static int status(const cl_res *r, size_t i)
{
	return nm_status_code(nm_csv_get(&r->t, i, r->cs));
}

static double num(const cl_res *r, size_t i, const char *col)
{
	return nm_csv_num(nm_csv_get(&r->t, i, nm_csv_col(&r->t, col)));
}

static bool has_col(const cl_res *r, const char *col)
{
	return nm_csv_col(&r->t, col) >= 0;
}

/* A status that says the format broke by overflow (not underflow). */
static bool overflowed(int st)
{
	return st >= 2;
}

static const char *stname(int st)
{
	static const char *const n[] = {"ok", "underflow", "overflow", "inf", "nan"};
	return st >= 0 && st < 5 ? n[st] : "?";
}

/* The threshold row of case c, variant, policy whose axis starts with name;
 * its event must satisfy want (NULL: any). -1 when none. */
static long thr_find(const cl_ctx *x, const nm_case *c, const char *variant, const char *policy,
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

static double thr_num(const cl_ctx *x, long row, const char *col)
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
	for (size_t i = 0; i < nrows(r); i++) {
		if (!match(r, i, variant, policy))
			continue;
		if (bad(status(r, i))) {
			*first_bad = axis(r, i, 0);
			return;
		}
		*last_ok = axis(r, i, 0);
	}
}

/* The largest axis value at which the status is bad, walking up (for a
 * status that holds at the bottom of the axis, such as underflow). */
static void grid_last(const cl_res *r, const char *variant, const char *policy, bool (*bad)(int),
                      double *last_bad, double *first_ok)
{
	*last_bad = NAN;
	*first_ok = NAN;
	for (size_t i = 0; i < nrows(r); i++) {
		if (!match(r, i, variant, policy))
			continue;
		if (bad(status(r, i))) {
			*last_bad = axis(r, i, 0);
			*first_ok = NAN;
		} else if (isnan(*first_ok))
			*first_ok = axis(r, i, 0);
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

typedef enum { V_UNSETTLED = 0, V_TRUE, V_FALSE, V_PARTLY } cl_verdict;

static cl_verdict claim1(cl_ctx *x)
{
	const emu_format *h = emu_format_by_name("fp16");
	cl_res r;
	if (!h || !load(x, 1, NULL, &r))
		return V_UNSETTLED;
	const char *pol = r.c->npolicies ? r.c->policy_specs[0] : "";
	nm_buf_printf(
	    &x->num,
	    "- fp16 format (descriptor): largest finite %.9g, smallest normal 2^%d = %.6g, "
	    "smallest subnormal 2^%d = %.6g, overflow threshold under RNE %.9g\n",
	    h->max, h->emin, h->min_normal, h->emin - h->p + 1, h->min_subnormal, ovf_threshold(h));
	/* overflow: from the thresholds when found, else the grid bracket */
	double ov_ok, ov_bad, un_bad, un_ok;
	grid_first(&r, NULL, pol, overflowed, &ov_ok, &ov_bad);
	grid_last(&r, NULL, pol, is_underflow, &un_bad, &un_ok);
	long t = thr_find(x, r.c, NULL, pol, r.c->axes[0].name, "inf");
	if (t < 0)
		t = thr_find(x, r.c, NULL, pol, r.c->axes[0].name, "overflow");
	double ov_real = NAN, un_real = NAN;
	if (t >= 0) {
		ov_ok = thr_num(x, t, "last_ok");
		ov_bad = thr_num(x, t, "first_bad");
		ov_real = thr_num(x, t, "real_boundary");
	}
	long u = thr_find(x, r.c, NULL, pol, r.c->axes[0].name, "underflow");
	if (u >= 0) {
		un_ok = thr_num(x, u, "last_ok");
		un_bad = thr_num(x, u, "first_bad");
		un_real = thr_num(x, u, "real_boundary");
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
	for (size_t i = 0; ecol && i < nrows(&r); i++) {
		double v = axis(&r, i, 0), e = num(&r, i, ecol);
		if (match(&r, i, NULL, pol) && status(&r, i) == 0 && v < h->min_normal && e > sub_err) {
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
	unload(&r);
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
	return upper && lower ? V_TRUE : upper || lower ? V_PARTLY : V_FALSE;
}

static cl_verdict claim2(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 2, NULL, &r))
		return V_UNSETTLED;
	const char *pols[] = {"storage=fp32", "storage=fp16,compute=fp32", "storage=fp16"};
	const char *what[] = {"fp32 loss (autocast: every loss runs in fp32)",
	                      "fp32 arithmetic, result held in fp16 (`loss.half()`)",
	                      "fp16 loss and fp16 arithmetic (a `.half()` model without autocast)"};
	bool bad[3] = {false, false, false}, seen[3] = {false, false, false};
	double at = NAN, val[3] = {NAN, NAN, NAN};
	for (size_t i = 0; i < nrows(&r); i++)
		for (int p = 0; p < 3; p++)
			if (match(&r, i, NULL, pols[p])) {
				double s = axis(&r, i, 0);
				if (!(s >= 131072))
					continue;
				seen[p] = true;
				at = s;
				bad[p] = overflowed(status(&r, i));
				val[p] = num(&r, i, "grad.maxabs");
				if (bad[p])
					nm_buf_printf(&x->num,
					              "- scale %.9g, %s (`%s`): status %s, the "
					              "scaled loss is not "
					              "finite\n",
					              s, what[p], pols[p], stname(status(&r, i)));
				else
					nm_buf_printf(&x->num,
					              "- scale %.9g, %s (`%s`): status %s, scaled "
					              "loss %.9g\n",
					              s, what[p], pols[p], stname(status(&r, i)),
					              val[p]);
			}
	unload(&r);
	if (!seen[0] || (!seen[1] && !seen[2])) {
		snprintf(x->missing, sizeof x->missing,
		         "the case needs the policies storage=fp32 and storage=fp16 at scale 131072");
		return V_UNSETTLED;
	}
	bool fp16bad = bad[1] || bad[2];
	nm_buf_printf(
	    &x->why,
	    "15 × %.9g = %.9g. In fp32, where autocast computes every loss (cross_entropy runs as "
	    "log_softmax + nll_loss in fp32), the scaled loss is %s. It can overflow only when the "
	    "loss itself is held in fp16 (%s), which a GradScaler run under autocast does not "
	    "do. ",
	    at, 15 * at, bad[0] ? "not finite" : "finite",
	    fp16bad ? "there it is not finite" : "and not even there");
	return bad[0] ? V_TRUE : fp16bad ? V_PARTLY : V_FALSE;
}

static cl_verdict claim3(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 3, NULL, &r))
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
			for (size_t i = 0; i < nrows(&r); i++) {
				/* the arithmetic's error: the logits are fp16 tensors in
				 * every policy, the question is what is computed on them */
				double z = axis(&r, i, 0), e = num(&r, i, ecol);
				if (!match(&r, i, vars[v], pol) || !(z <= lim))
					continue;
				seen = true;
				int st = status(&r, i);
				if (overflowed(st) && !anybad[p][v]) {
					anybad[p][v] = true;
					firstbad[p][v] = z;
				}
				if (st == 1 && !(firstunder <= z))
					firstunder = z;
				if (!overflowed(st) && isfinite(e) && e > maxerr[p][v])
					maxerr[p][v] = e;
			}
			/* the sharpest overflow boundary the thresholds have */
			const char *ev = NULL;
			const char *evs[] = {"overflow", "inf", "nan"};
			for (int k = 0; k < 3 && anybad[p][v]; k++) {
				long t = thr_find(x, r.c, vars[v], pol, r.c->axes[0].name, evs[k]);
				if (t >= 0 && (!ev || thr_num(x, t, "first_bad") < firstbad[p][v])) {
					firstbad[p][v] = thr_num(x, t, "first_bad");
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
	unload(&r);
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
	return unstable && fixed ? V_TRUE : unstable || fixed ? V_PARTLY : V_FALSE;
}

static cl_verdict claim4(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 4, NULL, &r))
		return V_UNSETTLED;
	double lim = emu_format_by_name("fp16")->max;
	bool big_small = false, bad_large = false, seen_small = false, seen_large = false;
	double ymax_small = 0, ymax_large = 0;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, NULL))
			continue;
		double eps = axis(&r, i, 0), y = num(&r, i, "y.maxabs"), dx = num(&r, i, "dx.maxabs");
		int st = status(&r, i);
		double m = fmax(isnan(y) ? 0 : y, isnan(dx) ? 0 : dx);
		bool big = m > lim || overflowed(st);
		nm_buf_printf(
		    &x->num,
		    "- eps %.3g, %s, `%s`: status %s, largest |y| %.6g, largest |dx| %.6g\n", eps,
		    nm_csv_get(&r.t, i, r.cv), nm_csv_get(&r.t, i, r.cp), stname(st), y, dx);
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
	unload(&r);
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
	return big_small && !bad_large ? V_TRUE : !big_small ? V_FALSE : V_PARTLY;
}

static cl_verdict claim5(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 5, NULL, &r))
		return V_UNSETTLED;
	if (r.c->naxes != 2) {
		snprintf(x->missing, sizeof x->missing, "case %s needs the axes m and divide", r.c->name);
		unload(&r);
		return V_UNSETTLED;
	}
	size_t am = strcmp(r.c->axes[0].name, "divide") == 0 ? 1 : 0;
	const char *pol = r.c->npolicies ? r.c->policy_specs[0] : "";
	double first[2] = {NAN, NAN}, gmax[2] = {0, 0}, mmax = 0;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, pol))
			continue;
		int d = axis(&r, i, 1 - am) != 0;
		double m = axis(&r, i, am), g = num(&r, i, "grad.maxabs");
		if (overflowed(status(&r, i)) && !(first[d] <= m))
			first[d] = m;
		if (m >= mmax) {
			mmax = m;
			gmax[d] = g;
		}
	}
	unload(&r);
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
	return d1 && !d0 ? V_TRUE : !d1 ? V_FALSE : V_PARTLY;
}

static cl_verdict claim6(cl_ctx *x)
{
	const emu_format *b = emu_format_by_name("bf16"), *s = emu_format_by_name("fp32");
	cl_res r, q;
	if (!b || !s || !load(x, 6, "range", &r))
		return V_UNSETTLED;
	const char *pb = "storage=fp32,accum=bf16", *ps = "storage=fp32,accum=fp32";
	nm_buf_printf(&x->num,
	              "- descriptors: bf16 largest %.9g, overflows from %.9g; fp32 largest %.9g, "
	              "overflows from %.9g\n",
	              b->max, ovf_threshold(b), s->max, ovf_threshold(s));
	/* range: a value where bf16 fails and fp32 does not */
	size_t margin = 0;
	double mfirst = NAN, mlast = NAN;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, pb) || !overflowed(status(&r, i)))
			continue;
		double v = axis(&r, i, 0);
		for (size_t j = 0; j < nrows(&r); j++)
			if (match(&r, j, NULL, ps) && axis(&r, j, 0) == v && status(&r, j) == 0) {
				margin++;
				mfirst = isnan(mfirst) ? v : mfirst;
				mlast = v;
			}
	}
	long t = thr_find(x, r.c, NULL, pb, r.c->axes[0].name, NULL);
	nm_buf_printf(
	    &x->num,
	    "- case `%s`: %zu values overflow bf16 but not fp32 (from %.9g to %.9g)%s%.9g\n",
	    r.c->name, margin, mfirst, mlast, t >= 0 ? "; bf16's bisected first_bad " : "",
	    t >= 0 ? thr_num(x, t, "first_bad") : NAN);
	unload(&r);
	/* precision: an accumulation where fp16 is more accurate than bf16 */
	size_t worse = 0, total = 0;
	double eb = NAN, eh = NAN, at = NAN;
	if (!load(x, 6, "precision", &q))
		return V_UNSETTLED;
	const char *qb = "storage=fp32,accum=bf16", *qh = "storage=fp32,accum=fp16";
	for (size_t i = 0; i < nrows(&q); i++) {
		if (!match(&q, i, NULL, qb))
			continue;
		for (size_t j = 0; j < nrows(&q); j++)
			if (match(&q, j, NULL, qh) && axis(&q, j, 0) == axis(&q, i, 0)) {
				double e1 = num(&q, i, "result.rel_err"), e2 = num(&q, j, "result.rel_err");
				total++;
				if (e2 < e1) {
					worse++;
					eb = e1;
					eh = e2;
					at = axis(&q, i, 0);
				}
			}
	}
	nm_buf_printf(&x->num,
	              "- case `%s`: bf16 sums less accurate than fp16 at %zu of %zu lengths (at "
	              "%.0f: relative error %.3g against %.3g); bf16 has p = %d, fp16 p = %d\n",
	              q.c->name, worse, total, at, eb, eh, b->p, emu_format_by_name("fp16")->p);
	unload(&q);
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
	if (!load(x, 7, NULL, &r))
		return V_UNSETTLED;
	const char *ph = "storage=fp16", *ps = "storage=fp16,accum=fp32";
	double stall[2] = {NAN, NAN}, nmax = 0;
	bool seen[2] = {false, false};
	for (int p = 0; p < 2; p++) {
		nm_buf_printf(&x->num, "- `%s`, sequential sum of N ones:", p ? ps : ph);
		for (size_t i = 0; i < nrows(&r); i++) {
			if (!match(&r, i, NULL, p ? ps : ph))
				continue;
			double n = axis(&r, i, 0), s = num(&r, i, "result.maxabs");
			seen[p] = true;
			nmax = fmax(nmax, n);
			nm_buf_printf(&x->num, " N = %.0f → %.9g;", n, s);
			if (s < n && isnan(stall[p]))
				stall[p] = s;
		}
		nm_buf_printf(&x->num, "\n");
	}
	unload(&r);
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
	if (!load(x, 8, NULL, &r))
		return V_UNSETTLED;
	const char *rec[] = {"none", "tensor", "mx32:floor", "mx32:rceil"};
	size_t bad[4] = {0}, tot[4] = {0};
	double first[4] = {NAN, NAN, NAN, NAN};
	for (size_t i = 0; i < nrows(&r); i++) {
		const char *p = nm_csv_get(&r.t, i, r.cp), *sc = strstr(p, "scale=");
		if (!match(&r, i, NULL, NULL) || !strstr(p, "e4m3"))
			continue;
		for (int k = 0; k < 4; k++)
			if (sc ? strcmp(sc + 6, rec[k]) == 0 : k == 0) {
				tot[k]++;
				if (overflowed(status(&r, i))) {
					bad[k]++;
					if (isnan(first[k]))
						first[k] = axis(&r, i, 0);
				}
			}
	}
	unload(&r);
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
	    "E8M0 scale %s: floor(log2 amax) − 8 leaves a block maximum whose significand is "
	    "at least 1.8125 above 448, where it overflows or saturates. The ceiling rounding "
	    "that Transformer Engine and cuBLAS use %s. ",
	    bad[1] ? "still overflowed here" : "never overflowed here",
	    bad[2] ? "still overflows" : "did not overflow here",
	    bad[3] ? "overflows too" : "never overflowed");
	return a && mx_ok == 2 ? V_TRUE : !a && mx_ok == 0 ? V_FALSE : V_PARTLY;
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
	for (size_t i = 0; i < nrows(r); i++)
		if (match(r, i, NULL, policy) && (isnan(a0) || axis(r, i, 0) == a0) &&
		    (isnan(a1) || axis(r, i, 1) == a1))
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
	if (!load(x, 17, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"clipped.maxabs", "deq.rel_err"};
	static const char *const pol[2][2] = {
	    {"compute=fp32,scale=mxfp8", "compute=fp32,scale=mxfp8:floor"},
	    {"compute=fp32,scale=mxfp4", "compute=fp32,scale=mxfp4:floor"}};
	static const char *const elem[2] = {"e4m3 (MXFP8)", "e2m1 (MXFP4)"};
	if (!need_cols(x, &r, cols, 2)) {
		unload(&r);
		return V_UNSETTLED;
	}
	int holds = 0;
	for (int e = 0; e < 2; e++) {
		/* per rule: the largest and smallest clipped share, the mean SQNR */
		double clip_min[2] = {INFINITY, INFINITY}, clip_max[2] = {0, 0}, db[2] = {0, 0};
		size_t n[2] = {0, 0};
		double worst_cost = -INFINITY;
		for (int k = 0; k < 2; k++)
			for (size_t i = 0; i < nrows(&r); i++) {
				if (!match(&r, i, NULL, pol[e][k]))
					continue;
				double c = num(&r, i, "clipped.maxabs");
				clip_min[k] = fmin(clip_min[k], c);
				clip_max[k] = fmax(clip_max[k], c);
				db[k] += sqnr_db(num(&r, i, "deq.rel_err"));
				n[k]++;
				if (k == 1) {
					long j = row_of(&r, pol[e][0], axis(&r, i, 0), NAN);
					if (j >= 0)
						worst_cost = fmax(worst_cost,
						                  sqnr_db(num(&r, (size_t)j, "deq.rel_err")) -
						                      sqnr_db(num(&r, i, "deq.rel_err")));
				}
			}
		if (!n[0] || !n[1]) {
			snprintf(x->missing, sizeof x->missing, "no rows for %s or %s", pol[e][0],
			         pol[e][1]);
			unload(&r);
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
		nm_buf_printf(&x->why,
		              "For %s the floor rule %s (%.3g %% to %.3g %% of the elements) and "
		              "rounding up %s; the floor's finer scale %s (%+.2f dB on average). ",
		              elem[e], clip_min[1] > 0 ? "clipped at every magnitude" : "did not always clip",
		              100 * clip_min[1], 100 * clip_max[1],
		              clip_max[0] == 0 ? "never clipped" : "clipped too",
		              db[1] < db[0] ? "did not pay for its clipping" : "paid for its clipping",
		              db[1] - db[0]);
	}
	unload(&r);
	nm_buf_printf(&x->why,
	              "floor(log2 amax) − emax puts a block maximum whose significand exceeds that "
	              "of the element format's largest value (1.75 for e4m3, 1.5 for e2m1) above "
	              "the format's range, where it saturates; rounding the scale up never does. ");
	return holds == 2 ? V_TRUE : holds == 0 ? V_FALSE : V_PARTLY;
}

static cl_verdict claim18(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 18, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err"};
	const char *nv = "compute=fp32,scale=nvfp4", *mx = "compute=fp32,scale=mxfp4";
	if (!need_cols(x, &r, cols, 1)) {
		unload(&r);
		return V_UNSETTLED;
	}
	size_t n = 0, better = 0;
	double normal_gain = NAN, out_min = INFINITY, out_max = -INFINITY;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, nv))
			continue;
		double k = axis(&r, i, 0);
		long j = row_of(&r, mx, k, NAN);
		if (j < 0)
			continue;
		double a = sqnr_db(num(&r, i, "deq.rel_err")), b = sqnr_db(num(&r, (size_t)j, "deq.rel_err"));
		nm_buf_printf(&x->num,
		              "- %s K = %g: NVFP4 %.2f dB, MXFP4 %.2f dB: NVFP4 %s by %.2f dB\n",
		              k == 1 ? "normal," : "outliers,", k, a, b, a > b ? "ahead" : "behind",
		              fabs(a - b));
		n++;
		better += a > b;
		if (k == 1)
			normal_gain = a - b;
		else {
			out_min = fmin(out_min, a - b);
			out_max = fmax(out_max, a - b);
		}
	}
	unload(&r);
	if (!n || isnan(normal_gain) || isinf(out_min)) {
		snprintf(x->missing, sizeof x->missing, "need K = 1 and K > 1 for both recipes");
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "On a normal tensor NVFP4 is %.2f dB %s MXFP4; with outliers (one element in a "
	              "thousand times K > 1) it is between %.2f and %.2f dB ahead. The E4M3 scale "
	              "keeps three significant bits of each block's amax where E8M0 rounds it to a "
	              "power of two (losing up to a factor of 2 of the element range), 16-element "
	              "blocks follow the data more closely, and an outlier flushes 15 neighbours "
	              "instead of 31. ",
	              fabs(normal_gain), normal_gain > 0 ? "ahead of" : "behind", out_min, out_max);
	return better == n ? V_TRUE : better == 0 ? V_FALSE : V_PARTLY;
}

static cl_verdict claim19(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 19, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err"};
	const char *with = "compute=fp32,scale=nvfp4", *without = "compute=fp32,scale={nvfp4,rht=no}";
	if (!need_cols(x, &r, cols, 1) || r.c->naxes != 2) {
		if (!*x->missing)
			snprintf(x->missing, sizeof x->missing, "case %s needs axes K and F", r.c->name);
		unload(&r);
		return V_UNSETTLED;
	}
	size_t heavy = 0, helps = 0, gauss = 0, hurts_gauss = 0;
	double gauss_cost = 0, best = -INFINITY, worst = INFINITY;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, with))
			continue;
		double k = axis(&r, i, 0), f = axis(&r, i, 1);
		long j = row_of(&r, without, k, f);
		if (j < 0)
			continue;
		double a = sqnr_db(num(&r, i, "deq.rel_err"));
		double b = sqnr_db(num(&r, (size_t)j, "deq.rel_err"));
		nm_buf_printf(&x->num, "- K = %g, F = %g: with RHT %.2f dB, without %.2f dB (%+.2f dB)\n",
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
	unload(&r);
	if (!heavy || !gauss) {
		snprintf(x->missing, sizeof x->missing, "need K = 1 and K >= 100 with and without RHT");
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "Measured by the tensor's own SQNR (‖deq − x‖ after the transform is undone), "
	              "the transform gains at least 0.5 dB in %zu of %zu outlier-heavy settings "
	              "(K ≥ 100; the change ranges from %+.2f to %+.2f dB). On Gaussian data "
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
	return helps == heavy ? V_TRUE : helps == 0 ? V_FALSE : V_PARTLY;
}

static cl_verdict claim20(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 20, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"bias.maxabs", "bias_se.maxabs"};
	if (!need_cols(x, &r, cols, 2)) {
		unload(&r);
		return V_UNSETTLED;
	}
	size_t nsr = 0, biased = 0;
	int largest_biased = 0, smallest_clean = 0;
	double clip_max = 0;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, NULL))
			continue;
		const char *p = nm_csv_get(&r.t, i, r.cp), *b = strstr(p, "sr_bits=");
		double bias = num(&r, i, "bias.maxabs"), se = num(&r, i, "bias_se.maxabs");
		bool big = bias > 4 * se;
		if (!b) {
			nm_buf_printf(&x->num,
			              "- round to nearest even: |bias| %.3g of amax, standard error %.3g "
			              "(%.1f standard errors)\n",
			              bias, se, bias / se);
			continue;
		}
		int n = atoi(b + 8);
		if (has_col(&r, "clipped.maxabs"))
			clip_max = fmax(clip_max, num(&r, i, "clipped.maxabs"));
		nm_buf_printf(&x->num,
		              "- SR with %d random bit%s: |bias| %.3g of amax, standard error %.3g "
		              "(%.1f standard errors)%s\n",
		              n, n == 1 ? "" : "s", bias, se, bias / se, big ? ": biased" : "");
		nsr++;
		if (big) {
			biased++;
			largest_biased = n > largest_biased ? n : largest_biased;
		} else if (!smallest_clean || n < smallest_clean)
			smallest_clean = n;
	}
	unload(&r);
	if (!nsr) {
		snprintf(x->missing, sizeof x->missing, "no policy with sr_bits=");
		return V_UNSETTLED;
	}
	nm_buf_printf(&x->why,
	              "A bias counts when it exceeds 4 standard errors of the mean over the "
	              "tensor. %zu of %zu SR widths are biased%s",
	              biased, nsr, biased ? "" : ". ");
	if (biased)
		nm_buf_printf(&x->why,
		              ", the widest at %d bits; from %d bits on none is measurable here. "
		              "With n bits the dither compares only the first n discarded bits, so "
		              "the rest of the fraction is lost and the result leans toward zero by up "
		              "to 2^-n of an ulp (about 2^-(n+1) on average); the tensor's standard "
		              "error sets how small a bias can be seen. ",
		              largest_biased, smallest_clean);
	if (clip_max > 0)
		nm_buf_printf(&x->why,
		              "What remains at the widest SR is not the rounding's: up to %.3g %% of "
		              "the elements clip, a block maximum that SR rounds up past 6 saturating "
		              "(NVFP4's E4M3 block scale is rounded, so a block maximum can land just "
		              "above 6), which pulls toward zero. ",
		              100 * clip_max);
	nm_buf_printf(&x->why,
	              "The sweep records |bias|; its sign, toward zero, is checked in "
	              "tests/check_quant.c. Round to nearest is shown for scale: it is biased "
	              "on this data too, because the normal density falls across each rounding "
	              "interval. ");
	return biased == 0 ? V_TRUE : biased == nsr ? V_FALSE : V_PARTLY;
}

static cl_verdict claim21(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 21, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"deq.rel_err", "deq.lost"};
	const char *keep = "compute=fp32,scale=mxfp8:floor",
	           *ftz = "compute=fp32,scale={mxfp8:floor,ftz_scale=yes}",
	           *te = "compute=fp32,scale=mxfp8";
	if (!need_cols(x, &r, cols, 2)) {
		unload(&r);
		return V_UNSETTLED;
	}
	double lost_lo = NAN, lost_hi = NAN, keep_err = 0, te_lo = NAN, te_hi = NAN;
	size_t n = 0;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, ftz))
			continue;
		double sd = axis(&r, i, 0);
		long j = row_of(&r, keep, sd, NAN), t = row_of(&r, te, sd, NAN);
		if (j < 0)
			continue;
		n++;
		double ef = num(&r, i, "deq.rel_err"), ek = num(&r, (size_t)j, "deq.rel_err");
		/* lost: at least half the tensor's energy gone under FTZ, kept without */
		if (ef >= 0.5 && ek < 0.5) {
			lost_lo = isnan(lost_lo) ? sd : lost_lo;
			lost_hi = sd;
			keep_err = fmax(keep_err, ek);
		}
		if (t >= 0 && num(&r, (size_t)t, "deq.rel_err") >= 0.5) {
			te_lo = isnan(te_lo) ? sd : te_lo;
			te_hi = sd;
		}
		nm_buf_printf(&x->num,
		              "- sd %.3g: OCP floor rel_err %.3g (%s lost), with FTZ %.3g (%s lost)",
		              sd, ek, nm_csv_get(&r.t, (size_t)j, nm_csv_col(&r.t, "deq.lost")), ef,
		              nm_csv_get(&r.t, i, nm_csv_col(&r.t, "deq.lost")));
		if (t >= 0)
			nm_buf_printf(&x->num, "; TE's rounding up %.3g", num(&r, (size_t)t, "deq.rel_err"));
		nm_buf_printf(&x->num, "\n");
	}
	unload(&r);
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
	for (size_t i = 0; i < nrows(r); i++)
		if (match(r, i, variant, policy) && axis(r, i, 0) == a0 &&
		    (isnan(a1) || axis(r, i, 1) == a1))
			return (long)i;
	return -1;
}

/* One gradscaler trajectory from a case's series CSV: the fast backend's
 * scale, skipped and lost per step at axis value g0. */
typedef struct {
	size_t n, skips, uf_steps, isolated, recovered, never;
	double rec_sum, rec_max;
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
	for (size_t t = 0; ok && t < o->n; t++) {
		o->skips += sk[t] != 0;
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
	free(sk);
	free(lo);
	if (!ok || !o->n)
		snprintf(x->missing, sizeof x->missing,
		         "no fast scale series at g0 = %g in %s-series.csv", g0, r->c->name);
	return ok && o->n;
}

static cl_verdict claim9(cl_ctx *x)
{
	cl_res d, c;
	if (!load(x, 9, "default", &d))
		return V_UNSETTLED;
	if (!load(x, 9, "conservative", &c)) {
		unload(&d);
		return V_UNSETTLED;
	}
	size_t sd = 0, sc = 0, ud = 0, uc = 0, nstreams = 0, nrec[2] = {0, 0};
	double rec[2] = {0, 0};
	bool ok = true;
	for (size_t i = 0; ok && i < nrows(&d); i++) {
		if (!match(&d, i, NULL, NULL))
			continue;
		double g0 = axis(&d, i, 0);
		cl_gs a, b;
		ok = gs_traj(x, &d, g0, &a) && gs_traj(x, &c, g0, &b);
		if (!ok)
			break;
		nstreams++;
		sd += a.skips;
		sc += b.skips;
		ud += a.uf_steps;
		uc += b.uf_steps;
		const cl_gs *g[2] = {&a, &b};
		for (int k = 0; k < 2; k++) {
			rec[k] += g[k]->rec_sum;
			nrec[k] += g[k]->recovered;
			nm_buf_printf(&x->num,
			              "- g0 = %g, %s: %zu of %zu steps skipped; %zu steps ran at a "
			              "scale that stored some gradients as 0",
			              g0, k ? "conservative" : "defaults", g[k]->skips, g[k]->n,
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
	unload(&d);
	unload(&c);
	if (!ok || !nstreams)
		return V_UNSETTLED;
	nm_buf_printf(&x->why,
	              "Over the same %zu gradient streams the defaults skipped %zu steps and the "
	              "conservative settings %zu. ",
	              nstreams, sd, sc);
	if (sc)
		nm_buf_printf(
		    &x->why,
		    "A spike overflows fp16 at any scale GradScaler would use, so such steps "
		    "are skipped (found_inf) under both settings: what the lower start "
		    "saves is the defaults' first few steps at 65536, not the spikes. ");
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
	return sc == 0 && sd > 0 ? V_TRUE : sc < sd ? V_PARTLY : V_FALSE;
}

static cl_verdict claim10(cl_ctx *x)
{
	const emu_format *h = emu_format_by_name("fp16"), *s = emu_format_by_name("fp32");
	cl_res r;
	if (!h || !s || !load(x, 10, NULL, &r))
		return V_UNSETTLED;
	const char *p16 = "storage=fp16", *p32 = "storage=fp16,compute=fp32";
	const char *vars[] = {"naive", "stable"};
	/* per variant and policy: failures at |x| = 100 and at |x| = 10 */
	size_t bad100[2][2] = {{0}}, bad10[2][2] = {{0}}, seen = 0;
	for (int v = 0; v < 2; v++)
		for (int p = 0; p < 2; p++) {
			nm_buf_printf(&x->num, "- %s, `%s`:", vars[v], p ? p32 : p16);
			for (size_t i = 0; i < nrows(&r); i++) {
				if (!match(&r, i, vars[v], p ? p32 : p16))
					continue;
				double xv = axis(&r, i, 0), y = axis(&r, i, 1);
				int st = status(&r, i);
				seen++;
				nm_buf_printf(
				    &x->num, " x = %g, y = %g: %s%s%s%s;", xv, y, stname(st),
				    *nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_op")) ? " (first "
				                                                       : "",
				    nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_op")),
				    *nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_op")) ? ")" : "");
				if (overflowed(st))
					(fabs(xv) >= 100 ? bad100 : bad10)[v][p]++;
			}
			nm_buf_printf(&x->num, "\n");
		}
	unload(&r);
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
	return a && b ? V_TRUE : a || b ? V_PARTLY : V_FALSE;
}

static cl_verdict claim11(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 11, NULL, &r))
		return V_UNSETTLED;
	double lim = emu_format_by_name("fp16")->max;
	/* a tiny batch variance: below eps (sd below sqrt(1e-5)) */
	double tiny_sd = sqrt(1e-5);
	bool train_big = false, eval_big = false, seen_t = false, seen_e = false;
	double train_ymax = 0, eval_first = NAN;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, NULL))
			continue;
		const char *v = nm_csv_get(&r.t, i, r.cv);
		bool ev = strcmp(v, "eval") == 0;
		double sd = axis(&r, i, 0), y = num(&r, i, "y.maxabs");
		int st = status(&r, i);
		bool big = y > lim || overflowed(st);
		nm_buf_printf(
		    &x->num, "- %s, `%s`, input sd %g: status %s, largest finite |y| %.6g%s%s\n", v,
		    nm_csv_get(&r.t, i, r.cp), sd, stname(st), y,
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
	unload(&r);
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
	if (!load(x, 12, NULL, &r))
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
		unload(&r);
		return V_UNSETTLED;
	}
	size_t n = 0, same = 0;
	double cost_state = 0, cost_master = 0, vz_state = 0, lost_master = 0, nf_state = 0;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, pol[0]))
			continue;
		double X = axis(&r, i, 0);
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
			    X, what[p], pol[p], num(&r, k, "w.rel_err"), num(&r, k, "lost.maxabs"),
			    num(&r, k, "vzero.maxabs"), num(&r, k, "nonfinite.maxabs"));
		}
		double e1 = num(&r, (size_t)j[1], "w.rel_err"),
		       e2 = num(&r, (size_t)j[2], "w.rel_err");
		/* the statement's setup gives O2's numbers (within 1 %) */
		same += e1 == e2 || (isfinite(e1) && isfinite(e2) &&
		                     fabs(e1 - e2) <= 0.01 * fmax(fabs(e1), fabs(e2)));
		cost_state = fmax(cost_state, e1);
		cost_master = fmax(cost_master, num(&r, (size_t)j[3], "w.rel_err"));
		vz_state = fmax(vz_state, num(&r, (size_t)j[1], "vzero.maxabs"));
		nf_state = fmax(nf_state, num(&r, (size_t)j[1], "nonfinite.maxabs"));
		lost_master = fmax(lost_master, num(&r, (size_t)j[3], "lost.maxabs"));
	}
	unload(&r);
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

static cl_verdict claim13(cl_ctx *x)
{
	const emu_format *h = emu_format_by_name("fp16");
	cl_res r;
	if (!h || !load(x, 13, NULL, &r))
		return V_UNSETTLED;
	const char *pols[] = {"storage=fp32", "storage=fp16,compute=fp32", "storage=fp16"};
	bool bad16 = false, seen = false, bad32 = false;
	for (size_t i = 0; i < nrows(&r); i++)
		for (int p = 0; p < 3; p++)
			if (match(&r, i, NULL, pols[p])) {
				double s = axis(&r, i, 0);
				int st = status(&r, i);
				/* maxabs is the largest finite |value|: 0 for an infinite loss */
				if (overflowed(st))
					nm_buf_printf(&x->num,
					              "- S = %.9g, `%s`: status %s, the scaled loss is not "
					              "finite\n",
					              s, pols[p], stname(st));
				else
					nm_buf_printf(&x->num, "- S = %.9g, `%s`: status %s, scaled loss %.9g\n",
					              s, pols[p], stname(st), num(&r, i, "grad.maxabs"));
				if (s == 65536) {
					seen = true;
					if (p == 0)
						bad32 |= overflowed(st);
					else
						bad16 |= overflowed(st);
				}
			}
	unload(&r);
	if (!seen) {
		snprintf(x->missing, sizeof x->missing, "the case needs S = 65536");
		return V_UNSETTLED;
	}
	double thr = ovf_threshold(h), gap = 65536 / h->max - 1;
	nm_buf_printf(&x->num,
	              "- fp16 (descriptor): largest finite %.9g, values round to inf from %.9g\n",
	              h->max, thr);
	/* close: within 2 % of the largest value; below: a 65536 held in fp16
	 * stays finite (measured, not read off the descriptor) */
	bool close = gap < 0.02, below = !bad16;
	nm_buf_printf(&x->why,
	              "65536 is %.3g %% from fp16's largest value %.9g, but on the other side: %s "
	              "(it rounds to inf from %.9g). A scaled loss of 1 held in fp16 %s; held in "
	              "fp32, as GradScaler keeps the scale and autocast the loss, it %s. ",
	              100 * gap, h->max,
	              65536 < thr ? "it is an fp16 value"
	                          : "it is not an fp16 value, 2^16 is fp16's inf",
	              thr, bad16 ? "is inf at S = 65536" : "stays finite",
	              bad32 ? "overflows too" : "is exactly 65536");
	return close && below ? V_TRUE : close || below ? V_PARTLY : V_FALSE;
}

static cl_verdict claim14(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 14, NULL, &r))
		return V_UNSETTLED;
	const char *p16 = "storage=fp16,compute=fp32", *pb = "storage=bf16,compute=fp32";
	size_t n = 0, bad = 0, badb = 0;
	double first = NAN, last_ok = NAN, c_ok = NAN;
	char step[64] = "";
	for (size_t i = 0; i < nrows(&r); i++) {
		bool h = match(&r, i, NULL, p16), b = match(&r, i, NULL, pb);
		if (!h && !b)
			continue;
		int st = status(&r, i);
		double X = axis(&r, i, 0), c = num(&r, i, "c.maxabs");
		nm_buf_printf(
		    &x->num, "- input sd %g, `%s`: status %s, largest finite |c| %.6g%s%s\n", X,
		    h ? p16 : pb, stname(st), c,
		    *nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_step")) ? ", first failing step "
		                                                         : "",
		    nm_csv_get(&r.t, i, nm_csv_col(&r.t, "first_step")));
		if (b) {
			badb += overflowed(st);
			continue;
		}
		n++;
		if (overflowed(st)) {
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
	unload(&r);
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
	if (!load(x, 15, NULL, &r))
		return V_UNSETTLED;
	const char *fw = "storage=fp16,compute=fp32", *rc = "storage=fp16";
	size_t pairs = 0, fresh = 0;
	double first = NAN;
	const char *firstv = "";
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, fw))
			continue;
		const char *v = nm_csv_get(&r.t, i, r.cv);
		double L = axis(&r, i, 0);
		long j = row_vp(&r, v, rc, L, NAN);
		if (j < 0)
			continue;
		pairs++;
		int a = status(&r, i), b = status(&r, (size_t)j);
		nm_buf_printf(&x->num,
		              "- %s, largest |logit| %g: forward (`%s`) %s; recomputed (`%s`) %s\n",
		              v, L, fw, stname(a), rc, stname(b));
		if (!overflowed(a) && overflowed(b)) {
			fresh++;
			if (!(first <= L)) {
				first = L;
				firstv = strcmp(v, "naive") == 0 ? "naive" : "lse";
			}
		}
	}
	unload(&r);
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
	                       "precision than the forward. ");
	return fresh ? V_PARTLY : V_FALSE;
}

static cl_verdict claim16(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 16, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"frac_lost", "frac_overflow"};
	const char *ph = "storage=fp16,compute=fp32", *pb = "storage=bf16,compute=fp32";
	if (!need_cols(x, &r, cols, 2) || r.c->naxes != 2) {
		if (!*x->missing)
			snprintf(x->missing, sizeof x->missing,
			         "case %s needs axes S and magnitude", r.c->name);
		unload(&r);
		return V_UNSETTLED;
	}
	size_t n = 0, fine = 0;
	double worst_b = 0, worst_h1 = 0, worst_hs = 0, big_s = 0;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, NULL, pb) || axis(&r, i, 0) != 1)
			continue;
		double mag = axis(&r, i, 1), lb = num(&r, i, "frac_lost");
		/* fp16 with the largest scale on the axis, and unscaled */
		long js = -1, j1 = row_vp(&r, NULL, ph, 1, mag);
		for (size_t k = 0; k < nrows(&r); k++)
			if (match(&r, k, NULL, ph) && axis(&r, k, 1) == mag &&
			    axis(&r, k, 0) >= big_s) {
				big_s = axis(&r, k, 0);
				js = (long)k;
			}
		if (js < 0 || j1 < 0)
			continue;
		n++;
		double ls = num(&r, (size_t)js, "frac_lost"), l1 = num(&r, (size_t)j1, "frac_lost");
		double os = num(&r, (size_t)js, "frac_overflow");
		nm_buf_printf(
		    &x->num,
		    "- magnitude %g: bf16 unscaled loses %.3g of the gradients; fp16 loses "
		    "%.3g unscaled and %.3g at S = %g (%.3g overflowed)\n",
		    mag, lb, l1, ls, big_s, os);
		fine += lb <= ls || !(os == 0);
		worst_b = fmax(worst_b, lb);
		worst_h1 = fmax(worst_h1, l1);
		worst_hs = fmax(worst_hs, ls);
	}
	unload(&r);
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
	return fine == n ? V_TRUE : fine == 0 ? V_FALSE : V_PARTLY;
}

static cl_verdict claim22(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 22, NULL, &r))
		return V_UNSETTLED;
	/* the policies with fp16 arithmetic: what "RMSNorm in fp16" computes */
	const char *pols[] = {"storage=fp16", "storage=fp16,accum=fp32",
	                      "storage=fp16,compute=fp32"};
	const char *vars[] = {"plain", "fp32stats"};
	size_t f16 = 0, at256 = 0, ovf = 0;
	for (int v = 0; v < 2; v++)
		for (int p = 0; p < 3; p++) {
			double ok, bad;
			grid_first(&r, vars[v], pols[p], overflowed, &ok, &bad);
			long t = -1;
			const char *evs[] = {"inf", "overflow", "nan"};
			for (int k = 0; k < 3 && t < 0 && !isnan(bad); k++)
				t = thr_find(x, r.c, vars[v], pols[p], r.c->axes[0].name, evs[k]);
			if (t >= 0) {
				ok = thr_num(x, t, "last_ok");
				bad = thr_num(x, t, "first_bad");
			}
			double top = 0;
			for (size_t i = 0; i < nrows(&r); i++)
				if (match(&r, i, vars[v], pols[p]))
					top = fmax(top, axis(&r, i, 0));
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
	unload(&r);
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
	cl_res r;
	if (!h || !load(x, 23, NULL, &r))
		return V_UNSETTLED;
	const char *pols[] = {"storage=fp16", "storage=fp16,compute=fp32",
	                      "storage=fp32,state=fp16"};
	const char *what[] = {"fp16 arithmetic", "fp16 tensors, fp32 opmath (PyTorch)",
	                      "fp32 weights, fp16 state"};
	/* per policy at eps = 1e-8: eps as the arithmetic sees it, and whether
	 * the step breaks (non-finite updates) where the largest eps does not */
	bool zero[3] = {false}, nf8[3] = {false}, nftop[3] = {false}, seen[3] = {false};
	double survive = NAN, top[3] = {0, 0, 0};
	for (int p = 0; p < 3; p++)
		for (size_t i = 0; i < nrows(&r); i++) {
			if (!match(&r, i, NULL, pols[p]))
				continue;
			double e = axis(&r, i, 0), ev = num(&r, i, "eps.maxabs");
			double nf = num(&r, i, "nonfinite.maxabs");
			nm_buf_printf(&x->num,
			              "- eps %g, %s (`%s`): eps as the arithmetic sees it %.9g; "
			              "non-finite updates %.0f\n",
			              e, what[p], pols[p], ev, nf);
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
	unload(&r);
	if (!seen[0] || !seen[1] || !seen[2]) {
		snprintf(x->missing, sizeof x->missing,
		         "the case needs eps = 1e-8 under %s, %s and %s", pols[0], pols[1],
		         pols[2]);
		return V_UNSETTLED;
	}
	/* zero in effect: the scalar is 0, or the step breaks at 1e-8 and not
	 * at a larger eps (eps lost where it lands in an fp16 tensor) */
	int n = 0;
	for (int p = 0; p < 3; p++)
		n += zero[p] || (nf8[p] && !nftop[p]);
	nm_buf_printf(&x->why,
	              "fp16's smallest subnormal is %.6g and half of it %.6g: 1e-8 %s in fp16 "
	              "arithmetic; the smallest eps on the axis that survives there is %g. Under "
	              "PyTorch's opmath the scalar eps is fp32 and %s, but denom = √v/√bc2 + eps "
	              "is a tensor of v's dtype: with v = 0 in fp16 (here (1 − β2)·g² < 2^-25) "
	              "denom is 1e-8 rounded to fp16, 0, and the update divides by it (%s). eps "
	              "is zero in effect in %d of the 3 placements of fp16. ",
	              h->min_subnormal, h->min_subnormal / 2, zero[0] ? "rounds to 0" : "survives",
	              survive, zero[1] ? "0 too" : "kept",
	              nf8[1] || nf8[2] ? "non-finite updates at 1e-8, none at the largest eps"
	                               : "no non-finite update here",
	              n);
	return n == 3 ? V_TRUE : n == 0 ? V_FALSE : V_PARTLY;
}

/* Claim 24's tolerance: online's end-to-end error at most this many times
 * naive's (tests/check_attention.c asks the same of the stored inputs). */
#define CL24_TOL 1.5

static cl_verdict claim24(cl_ctx *x)
{
	cl_res r;
	if (!load(x, 24, NULL, &r))
		return V_UNSETTLED;
	static const char *const outs[] = {"O.rel_err", "L.rel_err"};
	if (!need_cols(x, &r, outs, 2)) {
		unload(&r);
		return V_UNSETTLED;
	}
	/* every (policy, scale) that naive ran, paired with online's row */
	size_t n = 0, within = 0, online_only = 0, both_fail = 0;
	double worst = 0, worst_at = NAN;
	char worst_pol[128] = "";
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, "naive", NULL))
			continue;
		const char *pol = nm_csv_get(&r.t, i, r.cp);
		double sc = axis(&r, i, 0);
		long j = row_vp(&r, "online", pol, sc, NAN);
		if (j < 0)
			continue;
		int sn = status(&r, i), so = status(&r, (size_t)j);
		bool fn = overflowed(sn), fo = overflowed(so);
		if (fn && fo) {
			both_fail++;
			nm_buf_printf(&x->num, "- `%s`, scale %g: both %s / %s\n", pol, sc,
			              stname(sn), stname(so));
			continue;
		}
		n++;
		double ratio = 0;
		if (fo) {
			online_only++;
			ratio = INFINITY;
		} else if (!fn) {
			for (int o = 0; o < 2; o++) {
				double en = num(&r, i, outs[o]), eo = num(&r, (size_t)j, outs[o]);
				double q = eo == en ? 1 : en > 0 ? eo / en : INFINITY;
				ratio = fmax(ratio, q);
			}
		}
		nm_buf_printf(&x->num,
		              "- `%s`, scale %g: O error %.4g naive, %.4g online; L error %.4g "
		              "naive, %.4g online (online / naive at most %.4g)\n",
		              pol, sc, num(&r, i, outs[0]), num(&r, (size_t)j, outs[0]),
		              num(&r, i, outs[1]), num(&r, (size_t)j, outs[1]), ratio);
		within += ratio <= CL24_TOL;
		if (ratio > worst) {
			worst = ratio;
			worst_at = sc;
			snprintf(worst_pol, sizeof worst_pol, "%s", pol);
		}
	}
	unload(&r);
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

static cl_verdict claim25(cl_ctx *x)
{
	const emu_format *e4 = emu_format_by_name("e4m3");
	cl_res r;
	if (!e4 || !load(x, 25, NULL, &r))
		return V_UNSETTLED;
	static const char *const cols[] = {"p_lost.maxabs", "O.rel_err"};
	if (!need_cols(x, &r, cols, 2)) {
		unload(&r);
		return V_UNSETTLED;
	}
	/* a P̃ is flushed when P̃·p_scale rounds to 0 in e4m3: below half the
	 * smallest subnormal over p_scale */
	const double ps = 448, thr = e4->min_subnormal / 2 / ps, u = ldexp(1, -e4->p);
	double lost = 0, big_lost = NAN, big_ps = NAN;
	size_t n = 0, big_fail = 0, big_n = 0;
	for (size_t i = 0; i < nrows(&r); i++) {
		if (!match(&r, i, "fp8", NULL))
			continue;
		const char *pol = nm_csv_get(&r.t, i, r.cp);
		double sc = axis(&r, i, 0), p = axis(&r, i, 1), pl = num(&r, i, "p_lost.maxabs");
		int st = status(&r, i);
		nm_buf_printf(&x->num,
		              "- `%s`, scale %g, p_scale %g: %s, %.0f probabilities flushed to 0, "
		              "O error %.4g\n",
		              pol, sc, p, stname(st), pl, num(&r, i, "O.rel_err"));
		if (p == ps) {
			n++;
			lost = fmax(lost, pl);
		} else if (p > ps) {
			big_n++;
			big_fail += overflowed(st);
			big_ps = p;
			big_lost = isnan(big_lost) ? pl : fmax(big_lost, pl);
		}
	}
	unload(&r);
	if (!n) {
		snprintf(x->missing, sizeof x->missing, "the case needs p_scale = 448");
		return V_UNSETTLED;
	}
	/* l ≥ 1 (the row's max contributes exp(0)), so the lost share of a
	 * row's mass is at most (lost probabilities)·thr */
	double share = lost * thr;
	nm_buf_printf(&x->why,
	              "With p_scale 448 a probability P̃ survives the e4m3 cast only above half "
	              "e4m3's smallest subnormal (%.6g) over 448, %.4g; at most %.0f are flushed "
	              "at one point of the grid, so at most %.3g of a row's mass (l ≥ 1), "
	              "against e4m3's unit roundoff %.4g on every probability kept. ",
	              e4->min_subnormal, thr, lost, share, u);
	if (big_n)
		nm_buf_printf(&x->why,
		              "A larger static scale (%g) flushes at most %.0f but overflows "
		              "e4m3 at P̃ = 1 (every row has one): %zu of %zu points fail. ",
		              big_ps, big_lost, big_fail, big_n);
	nm_buf_printf(&x->why,
	              "The statement holds in full when the lost mass reaches the cast's own "
	              "rounding (%.4g), which takes %.0f flushed probabilities in one row; "
	              "probabilities that carry less than that are lost in fact but not in "
	              "effect (partly). ",
	              u, u / thr);
	return lost == 0 ? V_FALSE : share >= u ? V_TRUE : V_PARTLY;
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
	         "Generated by `make sweep` (sweep/nm_claims.c) from the claim cases in "
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
