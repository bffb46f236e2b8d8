/*
 * nm_thresh.c — exact thresholds from a sweep's grid (docs/thresholds-method.md).
 *
 * Along every monotone axis, each pair of neighbouring grid points whose
 * statuses differ brackets a boundary. The bracket is bisected over the
 * values the axis's domain allows (encodings of a format, integers, powers
 * of two, doubles by their ordered bit patterns). Statuses are ordered by
 * severity (ok < underflow < overflow < inf < nan); with s the less severe
 * of the two grid statuses, lo always has a status no worse than s and hi
 * one worse than s, so the search ends where the status first rises above
 * s whatever happens in between. When no
 * allowed value lies strictly between lo and hi, they are last_ok and
 * first_bad. Each bisection step is one FAST evaluation; a format domain
 * takes at most its bit width of steps, doubles at most 64.
 *
 * Confirmation runs the exact-format backend at both ends; the real-valued
 * boundary bisects the grid bracket in doubles on TRUTH with format ranges.
 *
 * Work is split by (variant, policy) across OpenMP threads; each task
 * writes its own rows, joined afterwards in task order, so the output does
 * not depend on the thread count.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_parse.h"
#include "emu/sweep/nm_point.h"
#include "emu/sweep/nm_thresh.h"

#define TH_ERR_LEN 512
#define TH_MAX_STEPS 70    /* a guard; the domains need at most 64 */
#define TH_REAL_STEPS 60   /* real boundary: at most this many TRUTH steps */
#define TH_REAL_REL 1e-12  /* ... or until the bracket is this narrow, relatively */
#define TH_REAL_REL_QUICK 1e-3 /* the same for --quick (a smoke test) */

/* ---- the values a domain allows ---- */

typedef struct {
	nm_axis_domain dom;
	const emu_format *f; /* STORAGE, COMPUTE */
} th_dom;

/* An order-preserving integer key of a finite double. */
static int64_t th_dkey(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	return (u >> 63) ? -(int64_t)(u & ~(1ull << 63)) : (int64_t)u;
}

static double th_dval(int64_t k)
{
	uint64_t u = k < 0 ? ((uint64_t)-k | (1ull << 63)) : (uint64_t)k;
	double x;
	memcpy(&x, &u, sizeof x);
	return x;
}

/* The same for encodings of f (sign-magnitude, magnitudes in order). */
static int64_t th_fkey(const emu_format *f, emu_bits b)
{
	return f->has_sign && (b & f->sign_mask) ? -(int64_t)(b & ~f->sign_mask) : (int64_t)b;
}

static double th_fval(const emu_format *f, int64_t k)
{
	return emu_decode(f, k < 0 ? (emu_bits)(-k) | f->sign_mask : (emu_bits)k);
}

/* f's value nearest to x in direction mode (UP or DOWN), strictly beyond x
 * when x is itself a value of f; false when there is none (finite). */
static bool th_fnext(const emu_format *f, double x, emu_mode mode, int64_t *key)
{
	emu_env env = EMU_ENV_DEFAULT;
	unsigned fl = 0;
	env.mode = mode;
	double r = emu_round_value(f, x, 0, &env, &fl);
	if (!isfinite(r))
		return false;
	emu_bits b = emu_encode(f, r);
	if (r == x)
		b = mode == EMU_UP ? emu_next_up(f, b) : emu_next_down(f, b);
	r = emu_decode(f, b);
	if (!isfinite(r))
		return false;
	*key = th_fkey(f, b);
	return true;
}

/* A double strictly between u < w, halfway in bit patterns. */
static bool th_mid_real(double u, double w, double *mid)
{
	int64_t a = th_dkey(u) + 1, b = th_dkey(w) - 1;
	if (a > b)
		return false;
	*mid = th_dval(a + (b - a) / 2);
	return *mid > u && *mid < w;
}

/* An allowed value strictly between u < w, near the middle of the allowed
 * values there; false when there is none. */
static bool th_mid(const th_dom *d, double u, double w, double *mid)
{
	switch (d->dom) {
	case NM_DOM_STORAGE:
	case NM_DOM_COMPUTE: {
		int64_t a, b;
		if (!th_fnext(d->f, u, EMU_UP, &a) || !th_fnext(d->f, w, EMU_DOWN, &b) || a > b)
			return false;
		*mid = th_fval(d->f, a + (b - a) / 2);
		break;
	}
	case NM_DOM_INT: {
		double a = floor(u) + 1, b = ceil(w) - 1;
		if (a > b)
			return false;
		*mid = floor(a + (b - a) / 2);
		break;
	}
	case NM_DOM_POW2:
		if (u > 0) {
			int a = ilogb(u) + 1, b = ilogb(w);
			if (ldexp(1, b) == w)
				b--;
			if (a > b)
				return false;
			*mid = ldexp(1, a + (b - a) / 2);
			break;
		}
		return th_mid_real(u, w, mid); /* not positive: doubles */
	case NM_DOM_REAL:
	default:
		return th_mid_real(u, w, mid);
	}
	return *mid > u && *mid < w;
}

/* ---- one (variant, policy) ---- */

typedef struct {
	const nm_case *c;
	bool quick;
	const emu_run_status *grid;
	const signed char *verdict; /* NULL: no accuracy boundaries */
	size_t v, p;
	nm_thresh_row *rows;
	size_t n, cap;
	int rc;
	char err[TH_ERR_LEN];
} th_task;

static const double *th_grid(const nm_axis *a, bool quick, size_t *n)
{
	if (quick && a->nquick) {
		*n = a->nquick;
		return a->quick;
	}
	*n = a->nvalues;
	return a->values;
}

static int th_eval(th_task *t, const double *ax, emu_be_kind kind, bool truth,
                   nm_point_result *r)
{
	nm_point p = {t->c, t->v, t->p, {ax[0], ax[1]}};
	return nm_point_eval(&p, kind, truth, r, t->err, sizeof t->err);
}

/* Does the exact computation at ax show the event the fast status `to`
 * stands for? -1 on error. */
static int th_truth_event(th_task *t, const double *ax, emu_run_status to, double *peak)
{
	nm_point p = {t->c, t->v, t->p, {ax[0], ax[1]}};
	nm_point_range r;
	if (nm_point_truth_range(&p, &r, t->err, sizeof t->err))
		return -1;
	*peak = r.peak;
	if (to == EMU_ST_UNDERFLOW)
		return r.lost;
	return (r.flags & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID)) != 0;
}

/* th_truth_event at axis k = x, counted in row. */
static int th_truth_at(th_task *t, double *ax, size_t k, double x, emu_run_status to,
                       nm_thresh_row *row, double *peak)
{
	ax[k] = x;
	row->truth_steps++;
	return th_truth_event(t, ax, to, peak);
}

/* The shortest %g that reads back as x. */
static void th_short(double x, char *buf, size_t len)
{
	for (int prec = 6; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

static void th_hex(const th_dom *d, double x, char *buf, size_t len)
{
	if (d->f) {
		char b[24];
		snprintf(buf, len, "%s %s", d->f->name, nm_fmt_bits(d->f, emu_encode(d->f, x), b,
		                                                     sizeof b));
	} else if (d->dom == NM_DOM_INT) {
		snprintf(buf, len, "%.0f", x);
	} else {
		snprintf(buf, len, "%a", x);
	}
}

/* Is x a value of d's format (the grid's own values need not be)? */
static bool th_in_fmt(const th_dom *d, double x)
{
	if (!d->f || !isfinite(x))
		return false;
	return emu_decode(d->f, emu_encode(d->f, x)) == x;
}

/* p (cap items of size bytes) with room for item n: doubled when full,
 * NULL (p kept) without memory. */
static void *th_room(void *p, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return p;
	size_t c = *cap ? 2 * *cap : 8;
	void *q = realloc(p, c * size);
	if (q)
		*cap = c;
	return q;
}

static nm_thresh_row *th_new_row(th_task *t)
{
	nm_thresh_row *rows = th_room(t->rows, t->n, &t->cap, sizeof *rows);
	if (!rows)
		return NULL;
	t->rows = rows;
	nm_thresh_row *r = &t->rows[t->n++];
	memset(r, 0, sizeof *r);
	return r;
}

/*
 * The boundary between grid points ax[k] = a (status sa) and b (status sb)
 * along axis k (the other axis fixed at ax[1-k]).
 */
static int th_search1(th_task *t, size_t k, double *ax, double a, double b, emu_run_status sa,
                      emu_run_status sb, const char *label)
{
	const nm_case *c = t->c;
	const nm_axis *axis = &c->axes[k];
	const emu_policy *pol = &c->policies[t->p];
	th_dom d = {axis->domain, NULL};
	if (axis->target == NM_SET_COLS || axis->target == NM_SET_ROWS)
		d.dom = NM_DOM_INT; /* a shape takes integers whatever the domain says */
	if (d.dom == NM_DOM_STORAGE)
		d.f = &pol->storage;
	else if (d.dom == NM_DOM_COMPUTE)
		d.f = &pol->compute;
	/* lower severity on the lo side; statuses are ordered by severity, and
	 * a value is bad when its status is more severe than the lo side's */
	bool up = sa < sb;
	double lo = up ? a : b, hi = up ? b : a;
	emu_run_status sref = up ? sa : sb, slo = sref, shi = up ? sb : sa;
	/* UNDERFLOW needs the truth run; other statuses do not */
	bool truth = c->truth && (sa == EMU_ST_UNDERFLOW || sb == EMU_ST_UNDERFLOW);
	nm_point_result r;
	int steps = 0;
	double mid;
	while (steps < TH_MAX_STEPS && th_mid(&d, fmin(lo, hi), fmax(lo, hi), &mid)) {
		ax[k] = mid;
		if (th_eval(t, ax, EMU_BE_FAST, truth, &r))
			return -1;
		steps++;
		if (r.status <= sref) {
			lo = mid;
			slo = r.status;
		} else {
			hi = mid;
			shi = r.status;
		}
	}
	nm_thresh_row *row = th_new_row(t);
	if (!row) {
		snprintf(t->err, sizeof t->err, "out of memory");
		return -1;
	}
	snprintf(row->case_name, sizeof row->case_name, "%s", c->name);
	snprintf(row->kernel, sizeof row->kernel, "%s", c->kernel->name);
	snprintf(row->variant, sizeof row->variant, "%s", c->variants[t->v]);
	snprintf(row->policy, sizeof row->policy, "%s",
	         c->policy_specs ? c->policy_specs[t->p] : pol->spec);
	snprintf(row->axis, sizeof row->axis, "%s", label);
	if (slo == EMU_ST_OK)
		snprintf(row->event, sizeof row->event, "%s", emu_run_status_name(shi));
	else
		snprintf(row->event, sizeof row->event, "%s->%s", emu_run_status_name(slo),
		         emu_run_status_name(shi));
	row->last_ok = lo;
	row->first_bad = hi;
	th_dom show = d;
	if (show.f && !(th_in_fmt(&d, lo) && th_in_fmt(&d, hi)))
		show.f = NULL, show.dom = NM_DOM_REAL; /* a grid value outside the format */
	th_hex(&show, lo, row->last_hex, sizeof row->last_hex);
	th_hex(&show, hi, row->first_hex, sizeof row->first_hex);
	row->variant_i = t->v;
	row->policy_i = t->p;
	row->axis_i = k;
	row->domain = d.dom;
	row->steps = steps;

	/* the first failing operation, and confirmation on the exact backend
	 * (first_bad on both backends sharing one truth run) */
	nm_point_result fe[2], el;
	static const emu_be_kind both[2] = {EMU_BE_FAST, EMU_BE_EXACT};
	nm_point pt = {t->c, t->v, t->p, {ax[0], ax[1]}};
	pt.axis[k] = hi;
	if (nm_point_eval_kinds(&pt, both, 2, truth, fe, t->err, sizeof t->err))
		return -1;
	ax[k] = lo;
	if (th_eval(t, ax, EMU_BE_EXACT, truth, &el))
		return -1;
	const nm_point_result *fb = &fe[0], *eh = &fe[1];
	row->confirmed = fb->status == shi && eh->status == shi && el.status == slo;
	if (!row->confirmed) {
		snprintf(row->first_op, sizeof row->first_op, "unconfirmed");
		fprintf(stderr,
		        "nanmap: warning: %s %s [%s] %s: fast says %s at %.17g and %s at %.17g, "
		        "exact says %s and %s\n",
		        c->name, row->variant, row->policy, label, emu_run_status_name(slo), lo,
		        emu_run_status_name(fb->status), hi, emu_run_status_name(el.status),
		        emu_run_status_name(eh->status));
	} else if (fb->has_first) {
		snprintf(row->first_op, sizeof row->first_op, "%s@%s", fb->first_op, fb->first_step);
	} else {
		snprintf(row->first_op, sizeof row->first_op, "-");
	}

	/* the real boundary: where the exact computation shows the event,
	 * bisected from last_ok..first_bad when the event happens between
	 * them, else (not under --quick) from the part of the grid bracket
	 * where it does */
	row->real_boundary = NAN;
	/* an integer axis (a shape, a count parameter) has no values between */
	bool integral = d.dom == NM_DOM_INT;
	double rel = t->quick ? TH_REAL_REL_QUICK : TH_REAL_REL;
	double u = fmin(lo, hi), w = fmax(lo, hi), ga = fmin(a, b), gb = fmax(a, b);
	double fu, fw, fg;
	int tu, tw, tg;
	if ((tu = th_truth_at(t, ax, k, u, shi, row, &fu)) < 0 ||
	    (tw = th_truth_at(t, ax, k, w, shi, row, &fw)) < 0)
		return -1;
	if (tu == tw && t->quick)
		return 0;
	if (tu == tw) {
		if (ga < u) { /* below last_ok..first_bad */
			if ((tg = th_truth_at(t, ax, k, ga, shi, row, &fg)) < 0)
				return -1;
			if (tg != tu) {
				w = u, tw = tu, fw = fu;
				u = ga, tu = tg, fu = fg;
			}
		}
		if (tu == tw && gb > w) { /* above it */
			if ((tg = th_truth_at(t, ax, k, gb, shi, row, &fg)) < 0)
				return -1;
			if (tg != tw) {
				u = w, tu = tw, fu = fw;
				w = gb, tw = tg, fw = fg;
			}
		}
		if (tu == tw)
			return 0;
	}
	/*
	 * Overflow events: the run's peak (log2 of the largest |value| over
	 * its format's threshold) is a continuous function of the axis that
	 * crosses 0 where the event starts, so the next point is where the
	 * line through the ends' peaks crosses 0 (regula falsi, Illinois: the
	 * end kept twice in a row has its peak halved). The bracket is still
	 * decided by the event itself; a step that leaves the bracket, peaks of
	 * one sign, or two steps that did not halve it fall back to bisection.
	 */
	bool guide = shi != EMU_ST_UNDERFLOW && !integral;
	th_dom rd = {integral ? NM_DOM_INT : NM_DOM_REAL, NULL};
	int last = 0, slow = 0;
	for (int s = 0; s < TH_REAL_STEPS; s++) {
		double width = w - u, fm;
		if (!integral && width <= rel * fmax(fabs(u), fabs(w)))
			break;
		mid = NAN;
		if (guide && slow < 2 && isfinite(fu) && isfinite(fw) && (fu <= 0) != (fw <= 0)) {
			/* at least a quarter of the tolerance from either end, so a
			 * converged estimate closes the bracket on its other side */
			double d = 0.25 * rel * fmax(fabs(u), fabs(w));
			mid = u + width * (fu / (fu - fw));
			if (width > 4 * d)
				mid = fmin(fmax(mid, u + d), w - d);
		}
		if (!(mid > u && mid < w)) {
			if (!th_mid(&rd, u, w, &mid))
				break;
			slow = 0;
		}
		int tm = th_truth_at(t, ax, k, mid, shi, row, &fm);
		if (tm < 0)
			return -1;

		if (tm == tu) {
			u = mid, fu = fm;
			if (last < 0)
				fw /= 2;
			last = -1;
		} else {
			w = mid, fw = fm;
			if (last > 0)
				fu /= 2;
			last = 1;
		}
		slow = w - u > width / 2 ? slow + 1 : 0;
	}
	/* the side where the exact computation shows the event */
	row->real_boundary = tw ? w : u;
	return 0;
}

/*
 * The accuracy boundary between grid points ax[k] = a (verdict va) and b
 * (vb), one accurate and the other inaccurate: bisected on FAST with truth
 * to adjacent allowed values, lo accurate and hi inaccurate.
 */
static int th_search_acc(th_task *t, size_t k, double *ax, double a, double b, int va,
                         const char *label)
{
	const nm_case *c = t->c;
	const nm_axis *axis = &c->axes[k];
	const emu_policy *pol = &c->policies[t->p];
	th_dom d = {axis->domain, NULL};
	if (axis->target == NM_SET_COLS || axis->target == NM_SET_ROWS)
		d.dom = NM_DOM_INT;
	if (d.dom == NM_DOM_STORAGE)
		d.f = &pol->storage;
	else if (d.dom == NM_DOM_COMPUTE)
		d.f = &pol->compute;
	double lo = va == NM_VERDICT_ACCURATE ? a : b, hi = va == NM_VERDICT_ACCURATE ? b : a;
	nm_point_result r;
	int steps = 0;
	double mid;
	while (steps < TH_MAX_STEPS && th_mid(&d, fmin(lo, hi), fmax(lo, hi), &mid)) {
		ax[k] = mid;
		if (th_eval(t, ax, EMU_BE_FAST, true, &r))
			return -1;
		steps++;
		if (nm_point_verdict(c, &r) == NM_VERDICT_INACCURATE)
			hi = mid;
		else
			lo = mid;
	}
	nm_thresh_row *row = th_new_row(t);
	if (!row) {
		snprintf(t->err, sizeof t->err, "out of memory");
		return -1;
	}
	snprintf(row->case_name, sizeof row->case_name, "%s", c->name);
	snprintf(row->kernel, sizeof row->kernel, "%s", c->kernel->name);
	snprintf(row->variant, sizeof row->variant, "%s", c->variants[t->v]);
	snprintf(row->policy, sizeof row->policy, "%s",
	         c->policy_specs ? c->policy_specs[t->p] : pol->spec);
	snprintf(row->axis, sizeof row->axis, "%s", label);
	ax[k] = hi;
	if (th_eval(t, ax, EMU_BE_FAST, true, &r))
		return -1;
	size_t o = nm_point_accuracy_out(c, &r);
	char tol[24];
	th_short(c->tolerance, tol, sizeof tol);
	snprintf(row->event, sizeof row->event, "%.23s.rel_err>%.15s",
	         o < r.nout ? r.out[o].name : "?", tol);
	row->last_ok = lo;
	row->first_bad = hi;
	th_dom show = d;
	if (show.f && !(th_in_fmt(&d, lo) && th_in_fmt(&d, hi)))
		show.f = NULL, show.dom = NM_DOM_REAL;
	th_hex(&show, lo, row->last_hex, sizeof row->last_hex);
	th_hex(&show, hi, row->first_hex, sizeof row->first_hex);
	row->variant_i = t->v;
	row->policy_i = t->p;
	row->axis_i = k;
	row->domain = d.dom;
	row->steps = steps;
	row->real_boundary = NAN;
	/* confirmation: the exact-format backend gives the same verdicts */
	nm_point_result el, eh;
	if (th_eval(t, ax, EMU_BE_EXACT, true, &eh))
		return -1;
	ax[k] = lo;
	if (th_eval(t, ax, EMU_BE_EXACT, true, &el))
		return -1;
	row->confirmed = nm_point_verdict(c, &eh) == NM_VERDICT_INACCURATE &&
	                 nm_point_verdict(c, &el) == NM_VERDICT_ACCURATE;
	snprintf(row->first_op, sizeof row->first_op, "%s", row->confirmed ? "-" : "unconfirmed");
	if (!row->confirmed)
		fprintf(stderr,
		        "nanmap: warning: %s %s [%s] %s: fast says %s at %.17g and %s at %.17g, "
		        "exact says %s and %s\n",
		        c->name, row->variant, row->policy, label, "accurate", lo, "inaccurate", hi,
		        nm_verdict_name(nm_point_verdict(c, &el)),
		        nm_verdict_name(nm_point_verdict(c, &eh)));
	return 0;
}

static int th_search(th_task *t, size_t k, double *ax, double a, double b, emu_run_status sa,
                     emu_run_status sb, const char *label)
{
	double t0 = omp_get_wtime();
	size_t n0 = t->n;
	int rc = th_search1(t, k, ax, a, b, sa, sb, label);
	if (t->n > n0)
		t->rows[t->n - 1].seconds = omp_get_wtime() - t0;
	return rc;
}

/* One search of a task: the bracket [a, b] along axis k, the other axis at
 * ax[1-k]; a status boundary, or with acc an accuracy one (verdict va). */
typedef struct {
	size_t task, k;
	double ax[NM_CASE_MAX_AXES];
	double a, b;
	emu_run_status sa, sb;
	int va;
	bool acc;
	char label[96];
} th_job;

typedef struct {
	th_job *j;
	size_t n, cap;
} th_jobs;

static th_job *th_job_add(th_jobs *js)
{
	th_job *j = th_room(js->j, js->n, &js->cap, sizeof *j);
	if (!j)
		return NULL;
	js->j = j;
	return &j[js->n++];
}

/* Task ti's searches, appended to js in the order their rows are written. */
static int th_task_jobs(const th_task *t, size_t ti, th_jobs *js)
{
	const nm_case *c = t->c;
	size_t n[NM_CASE_MAX_AXES] = {1, 1};
	const double *g[NM_CASE_MAX_AXES] = {NULL, NULL};
	size_t naxes = c->naxes < NM_CASE_MAX_AXES ? c->naxes : NM_CASE_MAX_AXES;
	for (size_t k = 0; k < naxes; k++)
		g[k] = th_grid(&c->axes[k], t->quick, &n[k]);
	size_t base = (t->v * c->npolicies + t->p) * n[0] * n[1];
	for (size_t k = 0; k < naxes; k++) {
		if (!c->axes[k].monotone)
			continue;
		size_t o = 1 - k; /* the other axis, when there is one */
		size_t lines = naxes == 2 ? n[o] : 1;
		for (size_t j = 0; j < lines; j++) {
			th_job line = {.task = ti, .k = k};
			if (c->naxes == 2) {
				char v[40];
				line.ax[o] = g[o][j];
				th_short(line.ax[o], v, sizeof v);
				snprintf(line.label, sizeof line.label, "%s@%s=%s", c->axes[k].name,
				         c->axes[o].name, v);
			} else {
				snprintf(line.label, sizeof line.label, "%s", c->axes[k].name);
			}
			for (size_t i = 0; i + 1 < n[k]; i++) {
				size_t i0 = k == 0 ? i : j, i1 = k == 0 ? j : i;
				size_t i0b = k == 0 ? i + 1 : j, i1b = k == 0 ? j : i + 1;
				line.a = g[k][i], line.b = g[k][i + 1];
				line.sa = t->grid[base + i0 * n[1] + i1];
				line.sb = t->grid[base + i0b * n[1] + i1b];
				th_job *jb;
				if (line.sa != line.sb) {
					if (!(jb = th_job_add(js)))
						return -1;
					*jb = line;
				}
				if (!t->verdict)
					continue;
				/* signed: NM_VERDICT_NONE is -1 */
				int va = t->verdict[base + i0 * n[1] + i1];   // NOLINT(bugprone-signed-char-misuse)
				int vb = t->verdict[base + i0b * n[1] + i1b]; // NOLINT(bugprone-signed-char-misuse)
				if (va == vb || va == NM_VERDICT_NONE || vb == NM_VERDICT_NONE)
					continue;
				if (!(jb = th_job_add(js)))
					return -1;
				*jb = line;
				jb->acc = true;
				jb->va = va;
			}
		}
	}
	return 0;
}

/* One search into t's rows (t: a copy of its task with rows of its own). */
static int th_run_job(th_task *t, th_job *jb)
{
	double t0 = omp_get_wtime();
	if (!jb->acc)
		return th_search(t, jb->k, jb->ax, jb->a, jb->b, jb->sa, jb->sb, jb->label);
	if (th_search_acc(t, jb->k, jb->ax, jb->a, jb->b, jb->va, jb->label))
		return -1;
	if (t->n > 0)
		t->rows[t->n - 1].seconds = omp_get_wtime() - t0;
	return 0;
}

int nm_thresh_case(const nm_case *c, bool quick, const emu_run_status *grid, nm_thresh_row **rows,
                   size_t *n, char *err, size_t errlen)
{
	return nm_thresh_case_acc(c, quick, grid, NULL, rows, n, err, errlen);
}

int nm_thresh_case_acc(const nm_case *c, bool quick, const emu_run_status *grid,
                       const signed char *verdict, nm_thresh_row **rows, size_t *n, char *err,
                       size_t errlen)
{
	size_t ntask = c->nvariants * c->npolicies;
	*rows = NULL;
	*n = 0;
	if (ntask == 0)
		return 0;
	th_task *tasks = calloc(ntask, sizeof *tasks);
	if (!tasks) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < ntask; i++)
		tasks[i] = (th_task){.c = c, .quick = quick, .grid = grid,
		                     .verdict = c->tolerance_set && c->truth ? verdict : NULL,
		                     .v = i / c->npolicies, .p = i % c->npolicies};
	/* Every search of every task is a job of its own, so that a case with
	 * one (variant, policy) still uses every CPU; each job writes rows of
	 * its own, joined back in the tasks' order and, within a task, in its
	 * searches' order, so the output does not depend on the threads. */
	th_jobs js = {NULL, 0, 0};
	th_task *jt = NULL;
	int rc = 0;
	for (size_t i = 0; i < ntask && !rc; i++)
		rc = th_task_jobs(&tasks[i], i, &js);
	if (!rc && js.n && !(jt = calloc(js.n, sizeof *jt)))
		rc = -1;
	if (rc) {
		free(js.j);
		free(tasks);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < js.n; i++) {
		jt[i] = tasks[js.j[i].task];
		jt[i].rows = NULL, jt[i].n = jt[i].cap = 0, jt[i].err[0] = '\0';
	}
	/* inside a parallel region (a sweep running its cases at once), the
	 * jobs are tasks any thread of it takes up */
	th_job *jj = js.j;
	if (omp_in_parallel()) {
#pragma omp taskloop grainsize(1)
		for (long i = 0; i < (long)js.n; i++)
			jt[i].rc = th_run_job(&jt[i], &jj[i]);
	} else {
#pragma omp parallel for schedule(dynamic, 1)
		for (long i = 0; i < (long)js.n; i++)
			jt[i].rc = th_run_job(&jt[i], &jj[i]);
	}
	/* a task's rows, and its first failure, from its jobs in order */
	for (size_t i = 0; i < js.n; i++) {
		th_task *t = &tasks[js.j[i].task];
		if (t->rc)
			continue;
		if (jt[i].rc) {
			t->rc = -1;
			snprintf(t->err, sizeof t->err, "%s", jt[i].err);
			continue;
		}
		for (size_t r = 0; r < jt[i].n; r++) {
			nm_thresh_row *row = th_new_row(t);
			if (!row) {
				t->rc = -1;
				snprintf(t->err, sizeof t->err, "out of memory");
				break;
			}
			*row = jt[i].rows[r];
		}
	}
	for (size_t i = 0; i < js.n; i++)
		free(jt[i].rows);
	free(jt);
	free(js.j);
	size_t total = 0;
	for (size_t i = 0; i < ntask; i++) {
		if (tasks[i].rc && !rc) {
			snprintf(err, errlen, "%s: thresholds of %s [%s]: %s", c->name,
			         c->variants[tasks[i].v],
			         c->policy_specs ? c->policy_specs[tasks[i].p]
			                         : c->policies[tasks[i].p].spec,
			         tasks[i].err);
			rc = -1;
		}
		total += tasks[i].n;
	}
	nm_thresh_row *all = NULL;
	if (!rc && total) {
		all = malloc(total * sizeof *all);
		if (!all) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
	}
	size_t at = 0;
	for (size_t i = 0; i < ntask; i++) {
		if (all && tasks[i].n)
			memcpy(all + at, tasks[i].rows, tasks[i].n * sizeof *all);
		at += tasks[i].n;
		free(tasks[i].rows);
	}
	free(tasks);
	if (rc)
		return -1;
	*rows = all;
	*n = total;
	return 0;
}

/* ---- writing ---- */

/* A table cell: '|' escaped. */
static void th_cell(nm_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			nm_buf_putc(b, '\\');
		nm_buf_putc(b, *s);
	}
}

static const char th_csv_head[] =
    "case,kernel,variant,policy,axis,event,last_ok,first_bad,real_boundary,first_failing_op\n";
static void th_write_csv_rows(nm_buf *b, const nm_thresh_row *rows, size_t n);

static void th_write_csv(nm_buf *b, const nm_thresh_row *rows, size_t n)
{
	nm_buf_put(b, th_csv_head);
	th_write_csv_rows(b, rows, n);
}

static void th_write_csv_rows(nm_buf *b, const nm_thresh_row *rows, size_t n)
{
	char a[40], c[40], r[40];

	for (size_t i = 0; i < n; i++) {
		const nm_thresh_row *t = &rows[i];
		const char *f[] = {t->case_name,
		                   t->kernel,
		                   t->variant,
		                   t->policy,
		                   t->axis,
		                   t->event,
		                   nm_fmt_g(t->last_ok, 17, a, sizeof a),
		                   nm_fmt_g(t->first_bad, 17, c, sizeof c),
		                   nm_fmt_g(t->real_boundary, 17, r, sizeof r),
		                   t->first_op};
		for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
			if (k)
				nm_buf_putc(b, ',');
			nm_buf_csv(b, f[k]);
		}
		nm_buf_putc(b, '\n');
	}
}

static const char th_md_head[] =
    "# Thresholds\n\n"
    "Generated by `nanmap sweep` from the cases in `cases/` (also in\n"
    "`results/thresholds.csv`); do not edit. Each row is one place where a point's\n"
    "status changes along a monotone axis: *last ok* and *first bad* are adjacent\n"
    "values of the axis's domain (exact form in parentheses), the *real boundary* is\n"
    "where the exact computation crosses the format's range, and the *first failing\n"
    "op* is the first operation (kind@step) that overflowed, went invalid or divided\n"
    "by zero at first bad. How they are found: "
    "[thresholds-method.md](thresholds-method.md).\n";
static const char th_md_none[] = "\nNo status changes along any monotone axis.\n";

/* The rows of one case (rows[0..n), all of one case_name) as its section. */
static void th_write_md_case(nm_buf *b, const nm_thresh_row *rows, size_t n)
{
	char a[40], c[40], r[40];

	nm_buf_printf(b,
	              "\n## %s\n\nKernel `%s`.\n\n"
	              "| variant | policy | axis | event | last ok | first bad | real "
	              "boundary | first failing op |\n"
	              "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
	              rows[0].case_name, rows[0].kernel);
	for (size_t i = 0; i < n; i++) {
		const nm_thresh_row *t = &rows[i];
		nm_buf_put(b, "| ");
		th_cell(b, t->variant);
		nm_buf_put(b, " | `");
		th_cell(b, t->policy);
		nm_buf_put(b, "` | ");
		th_cell(b, t->axis);
		/* 6 digits, or as many more as tell last ok from first bad (two
		 * adjacent values differ only far down: 0.779297 and 0.779297) */
		int prec = 6;
		while (prec < 17 && t->last_ok != t->first_bad &&
		       !strcmp(nm_fmt_g(t->last_ok, prec, a, sizeof a),
		               nm_fmt_g(t->first_bad, prec, c, sizeof c)))
			prec++;
		nm_buf_printf(b, " | %s | %s (%s) | %s (%s) | %s | %s |\n", t->event,
		              nm_fmt_g(t->last_ok, prec, a, sizeof a), t->last_hex,
		              nm_fmt_g(t->first_bad, prec, c, sizeof c), t->first_hex,
		              nm_fmt_g(t->real_boundary, 6, r, sizeof r), t->first_op);
	}
}

/* the length of the run of rows from rows[0] that share its case */
static size_t th_case_run(const nm_thresh_row *rows, size_t n)
{
	size_t k = 1;

	while (k < n && !strcmp(rows[k].case_name, rows[0].case_name))
		k++;
	return k;
}

static void th_write_md(nm_buf *b, const nm_thresh_row *rows, size_t n)
{
	nm_buf_put(b, th_md_head);
	if (n == 0)
		nm_buf_put(b, th_md_none);
	for (size_t i = 0, k; i < n; i += k) {
		k = th_case_run(rows + i, n - i);
		th_write_md_case(b, rows + i, k);
	}
}

/* Format into memory, then nm_file_update: a reader never sees half a file,
 * and a file that already holds these bytes is not written at all (an
 * up-to-date sweep into a read-only folder succeeds). */
static int th_atomic(const char *path, const nm_thresh_row *rows, size_t n,
                     void (*fn)(nm_buf *, const nm_thresh_row *, size_t), char *err, size_t errlen)
{
	nm_buf b = {0};
	int rc;

	fn(&b, rows, n);
	if (b.oom) {
		snprintf(err, errlen, "cannot write %s: out of memory", path);
		nm_buf_free(&b);
		return -1;
	}
	rc = nm_file_update(path, b.s, b.len, NULL, err, errlen);
	nm_buf_free(&b);
	return rc;
}

int nm_thresh_write(const nm_thresh_row *rows, size_t n, const char *csv_path,
                    const char *md_path, char *err, size_t errlen)
{
	if (csv_path && th_atomic(csv_path, rows, n, th_write_csv, err, errlen))
		return -1;
	if (md_path && th_atomic(md_path, rows, n, th_write_md, err, errlen))
		return -1;
	return 0;
}

/* ---- a sweep of some cases: only their rows change ---- */

/* One case's part of a file: its section of thresholds.md or its rows of
 * thresholds.csv, as the text stands (in the file read, or as formatted). */
typedef struct {
	char name[64];
	const char *text;
	size_t len;
	bool fresh; /* formatted by this run */
	bool used;  /* (a fresh part) placed */
} th_part;

static bool th_named(const char *name, const char *const *names, size_t n, size_t *at)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name)) {
			if (at)
				*at = i;
			return true;
		}
	return false;
}

/* The parts of a file written by th_write_md (sections: "\n## NAME\n" up to
 * the next) or by th_write_csv (a case's rows: the lines whose first field
 * is NAME); *np of them, in the file's order, pointing into text. */
static th_part *th_split(const char *text, bool md, size_t *np)
{
	size_t cap = 16, n = 0;
	th_part *v = malloc(cap * sizeof(*v));
	const char *p = md ? strstr(text, "\n\n## ") : strchr(text, '\n');

	if (!v)
		return NULL;
	while (p) {
		const char *start = p + 1, *name = start, *end;
		size_t nl;

		if (md) {
			name += 4;
			end = strstr(start, "\n\n## ");
			end = end ? end + 1 : start + strlen(start);
			nl = strcspn(name, "\n");
		} else {
			if (!*start)
				break;
			end = strchr(start, '\n');
			end = end ? end + 1 : start + strlen(start);
			/* a quoted name keeps its quote: never one of ours, so kept */
			nl = strcspn(name, ",\n");
		}
		if (!md && n && v[n - 1].text + v[n - 1].len == start &&
		    strlen(v[n - 1].name) == nl && !strncmp(v[n - 1].name, name, nl)) {
			v[n - 1].len += (size_t)(end - start); /* the same case's next row */
		} else {
			if (n == cap) {
				th_part *w = realloc(v, 2 * cap * sizeof(*v));

				if (!w) {
					free(v);
					return NULL;
				}
				v = w;
				cap *= 2;
			}
			memset(&v[n], 0, sizeof(v[n]));
			snprintf(v[n].name, sizeof(v[n].name), "%.*s", (int)nl, name);
			v[n].text = start;
			v[n].len = (size_t)(end - start);
			n++;
		}
		p = md ? (*end ? end - 1 : NULL)
		       : (end > start && end[-1] == '\n' ? end - 1 : NULL);
	}
	*np = n;
	return v;
}

/* The file at path as it will be: its parts of cases not in owned, in their
 * places, and this run's (rows) in place of the owned ones'. */
static int th_merge(const char *path, bool md, const nm_thresh_row *rows, size_t n,
                    const char *const *owned, size_t nowned, const char *const *order,
                    size_t norder, size_t *kept, char *err, size_t errlen)
{
	size_t flen = 0, ne = 0, nf = 0, nr = 0, nkeep = 0;
	char *file = nm_file_read_max(path, (size_t)1 << 26, &flen);
	th_part *e = NULL, *f = NULL, *r = NULL;
	nm_buf fresh = {0}, out = {0};
	size_t *off = NULL;
	int rc = -1;

	if (!file && errno != ENOENT) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if (file && !(e = th_split(file, md, &ne)))
		goto oom;
	for (size_t i = 0; i < ne; i++)
		if (!th_named(e[i].name, owned, nowned, NULL))
			nkeep++;
	if (nkeep == 0) { /* nothing of another case's: the run's rows alone */
		(md ? th_write_md : th_write_csv)(&out, rows, n);
		goto write;
	}
	/* this run's parts, one per case */
	f = calloc(n + 1, sizeof(*f));
	off = calloc(n + 1, sizeof(*off));
	r = calloc(ne + n + 1, sizeof(*r));
	if (!f || !off || !r)
		goto oom;
	for (size_t i = 0, k; i < n; i += k) {
		k = th_case_run(rows + i, n - i);
		snprintf(f[nf].name, sizeof(f[nf].name), "%s", rows[i].case_name);
		off[nf] = fresh.len;
		(md ? th_write_md_case : th_write_csv_rows)(&fresh, rows + i, k);
		f[nf].len = fresh.len - off[nf];
		f[nf].fresh = true;
		nf++;
	}
	if (fresh.oom)
		goto oom;
	for (size_t i = 0; i < nf; i++)
		f[i].text = fresh.s + off[i];
	/* the file's order, an owned case's old part replaced by its new one */
	for (size_t i = 0; i < ne; i++) {
		size_t j;

		if (!th_named(e[i].name, owned, nowned, NULL)) {
			r[nr++] = e[i];
			continue;
		}
		for (j = 0; j < nf && strcmp(f[j].name, e[i].name) != 0; j++)
			;
		if (j < nf && !f[j].used) {
			f[j].used = true;
			r[nr++] = f[j];
		}
	}
	/* a case new to the file: after the last case the sweep loaded before it,
	 * else before the first it loaded after it, else at the end */
	for (size_t j = 0; j < nf; j++) {
		size_t me = 0, at = nr, x;

		if (f[j].used)
			continue;
		(void)th_named(f[j].name, order, norder, &me);
		for (size_t i = 0; i < nr; i++)
			if (th_named(r[i].name, order, norder, &x) && x < me)
				at = i + 1;
		if (at == nr)
			for (size_t i = nr; i-- > 0;)
				if (th_named(r[i].name, order, norder, &x) && x > me)
					at = i;
		memmove(r + at + 1, r + at, (nr - at) * sizeof(*r));
		r[at] = f[j];
		nr++;
	}
	nm_buf_put(&out, md ? th_md_head : th_csv_head);
	if (md && nr == 0)
		nm_buf_put(&out, th_md_none);
	for (size_t i = 0; i < nr; i++)
		nm_buf_putn(&out, r[i].text, r[i].len);
write:
	if (out.oom)
		goto oom;
	rc = nm_file_update(path, out.s, out.len, NULL, err, errlen);
	if (!rc && kept)
		*kept = nkeep;
	goto done;
oom:
	snprintf(err, errlen, "cannot write %s: out of memory", path);
done:
	nm_buf_free(&fresh);
	nm_buf_free(&out);
	free(off);
	free(r);
	free(f);
	free(e);
	free(file);
	return rc;
}

int nm_thresh_update(const nm_thresh_row *rows, size_t n, const char *const *owned, size_t nowned,
                     const char *const *order, size_t norder, const char *csv_path,
                     const char *md_path, size_t *kept, char *err, size_t errlen)
{
	size_t k = 0;

	if (kept)
		*kept = 0;
	if (csv_path &&
	    th_merge(csv_path, false, rows, n, owned, nowned, order, norder, &k, err, errlen))
		return -1;
	if (md_path &&
	    th_merge(md_path, true, rows, n, owned, nowned, order, norder, kept, err, errlen))
		return -1;
	return 0;
}
