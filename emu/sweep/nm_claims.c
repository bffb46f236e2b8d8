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

bool cl_has_col(const cl_res *r, const char *col)
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
void cl_grid_first(const cl_res *r, const char *variant, const char *policy, bool (*bad)(int),
                   double *last_ok, double *first_bad)
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
void cl_grid_last(const cl_res *r, const char *variant, const char *policy, bool (*bad)(int),
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

bool cl_is_underflow(int st)
{
	return st == 1;
}

/* Overflow threshold under RNE: max + half an ulp of max. */
double cl_ovf_threshold(const emu_format *f)
{
	return ldexp(2 - ldexp(1, -f->p), f->emax);
}

/* ---- the claims ---- */

/* A kernel-level verdict with what a claim's training runs showed
 * (nm_claims_train.c: 1 they support the statement, 0 they contradict it,
 * -1 none): agreeing runs leave it, disagreeing ones make it partly. */
cl_verdict cl_with_runs(cl_verdict v, int runs)
{
	if (runs < 0 || v == V_UNSETTLED)
		return v;
	if (runs == 1)
		return v == V_FALSE ? V_PARTLY : v;
	return v == V_TRUE ? V_PARTLY : v;
}

bool cl_need_cols(cl_ctx *x, const cl_res *r, const char *const *cols, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!cl_has_col(r, cols[k])) {
			snprintf(x->missing, sizeof x->missing, "case %s has no column %s", r->c->name,
			         cols[k]);
			return false;
		}
	return true;
}

/* The first fast row of variant and policy at axis values a0 (and a1 when
 * not NAN); -1 when none. */
long cl_row_vp(const cl_res *r, const char *variant, const char *policy, double a0, double a1)
{
	for (size_t i = 0; i < cl_nrows(r); i++)
		if (cl_match(r, i, variant, policy) && cl_axis(r, i, 0) == a0 &&
		    (isnan(a1) || cl_axis(r, i, 1) == a1))
			return (long)i;
	return -1;
}

static cl_verdict (*const claim_fn[NM_CLAIMS_N])(cl_ctx *) = {
    cl_claim_fp16_range,    cl_claim_scaled_loss,    cl_claim_ce_float,
    cl_claim_layernorm_eps, cl_claim_gradacc_divide, cl_claim_bf16_vs_fp16,
    cl_claim_sum_stall,     cl_claim_fp8_scaling,    cl_claim_gradscaler_settings,
    cl_claim_bce_float,     cl_claim_batchnorm_var,  cl_claim_apex_o2,
    cl_claim_scale_65536,   cl_claim_einsum_fp16,    cl_claim_recompute_fp16,
    cl_claim_bf16_unscaled, cl_claim_mx_floor,       cl_claim_nvfp4_vs_mxfp4,
    cl_claim_rht_outliers,  cl_claim_sr_unbiased,    cl_claim_e8m0_ftz,
    cl_claim_rmsnorm_256,   cl_claim_adam_eps,       cl_claim_online_softmax,
    cl_claim_fp8_p_scale,
};

const char *cl_vname(cl_verdict v)
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
	const char *v = cl_vname(run_claim(id, &x));
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
		nm_buf_printf(&md, "| %d | %s | **%s** |\n", id, stmt, cl_vname(v));
		nm_buf_printf(&body, "\n## %d. %s\n\n**Verdict: %s.**\n\n", id, stmt, cl_vname(v));
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
