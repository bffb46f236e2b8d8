/*
 * nm_run_report.c — the report of `nanmap run` (nm_run_report.h) in its
 * three styles, text, CSV (backend,kind,key,value) and JSON, built in
 * memory from the runs nm_run.c made.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "emu/cli/nm_run_report.h"
#include "emu/io/nm_parse.h"

/* The run shown for backend k: truth is the truth of the original inputs. */
static const emu_run *nr_run_of(const struct nr_report *r, emu_be_kind k)
{
	return k == EMU_BE_TRUTH ? emu_truth_e2e(&r->truth) : &r->runs[k];
}

/* ---- the facts the three styles print ---- */

/* The order flags are listed in (emu_flags_str's): overflow underflow inexact
 * invalid divbyzero, as bit numbers. */
static const int nr_flag_order[EMU_NFLAGS] = {2, 3, 4, 0, 1};

static const char *nr_flag_name(int bit)
{
	static const char *const names[EMU_NFLAGS] = {"invalid", "divbyzero", "overflow",
	                                              "underflow", "inexact"};
	return names[bit];
}

static bool nr_op_has_flags(const emu_be_stats *st, int op)
{
	for (int k = 0; k < EMU_NFLAGS; k++)
		if (st->flags[op][k])
			return true;
	return false;
}

struct nr_summary {
	double min, max;
	size_t nans;
};

static struct nr_summary nr_summarise(const emu_run *run, const emu_kout_item *it)
{
	struct nr_summary s = {NAN, NAN, 0};

	for (size_t j = 0; j < it->n; j++) {
		double v = emu_kout_d(&run->be, it, j);
		if (isnan(v)) {
			s.nans++;
			continue;
		}
		if (isnan(s.min) || v < s.min)
			s.min = v;
		if (isnan(s.max) || v > s.max)
			s.max = v;
	}
	return s;
}

/* ---- text ---- */

/* All values, or for a big output: min, max (and the NaN count), then the
 * first NR_SHOW_FIRST values on a second line indented by `indent`. */
static void nr_text_values(nm_buf *b, const emu_run *run, const emu_kout_item *it, int indent)
{
	char v[NM_NUM_LEN];
	size_t show = it->n > NR_SHOW_ALL ? NR_SHOW_FIRST : it->n;

	if (it->n > NR_SHOW_ALL) {
		struct nr_summary s = nr_summarise(run, it);
		char lo[NM_NUM_LEN];
		nm_buf_printf(b, "min %s  max %s", nm_fmt_double(s.min, lo, sizeof(lo)),
		              nm_fmt_double(s.max, v, sizeof(v)));
		if (s.nans)
			nm_buf_printf(b, "  nan %zu", s.nans);
		nm_buf_printf(b, "\n%*sfirst %d:", indent, "", NR_SHOW_FIRST);
	}
	for (size_t j = 0; j < show; j++)
		nm_buf_printf(b, "%s%s", j || it->n > NR_SHOW_ALL ? " " : "",
		              nm_fmt_double(emu_kout_d(&run->be, it, j), v, sizeof(v)));
	nm_buf_putc(b, '\n');
}

static void nr_text_backend(nm_buf *b, const struct nr_report *r, emu_be_kind k)
{
	const emu_run *run = nr_run_of(r, k);
	const emu_be_stats *st = &run->be.st;
	char g1[NM_NUM_LEN], g2[NM_NUM_LEN], fl[48];
	int w = 5;
	bool any = false;

	nm_buf_printf(b, "%s: %s\n", emu_be_name(k), emu_run_status_name(run->status));
	for (int i = 0; i < run->out.n; i++)
		if ((int)strlen(run->out.item[i].name) > w)
			w = (int)strlen(run->out.item[i].name);
	for (int i = 0; i < run->out.n; i++) {
		const emu_kout_item *it = &run->out.item[i];
		char shape[96]; /* a format name (63) and [n] */
		snprintf(shape, sizeof(shape), "%s[%zu]",
		         k == EMU_BE_TRUTH ? "real" : it->fmt->name, it->n);
		nm_buf_printf(b, "  %-*s %s  ", w, it->name, shape);
		nr_text_values(b, run, it, 2 + w + 1 + (int)strlen(shape) + 2);
		if (run->have_metrics) {
			const emu_item_metrics *m = &run->m[i];
			nm_buf_printf(b, "  %-*s max_ulp %s  rel_err %s", w, "",
			              nm_fmt_g(m->max_ulp, 4, g1, sizeof(g1)),
			              nm_fmt_g(m->rel_err, 4, g2, sizeof(g2)));
			if (m->lost)
				nm_buf_printf(b, "  lost %zu", m->lost);
			nm_buf_putc(b, '\n');
			/* storing changed the inputs: the kernel's arithmetic alone */
			if (!r->truth.same)
				nm_buf_printf(b, "  %-*s arith_max_ulp %s  arith_rel_err %s\n", w,
				              "", nm_fmt_g(m->arith_max_ulp, 4, g1, sizeof(g1)),
				              nm_fmt_g(m->arith_rel_err, 4, g2, sizeof(g2)));
		}
	}
	if (k != EMU_BE_TRUTH && (st->in_overflow || st->in_flushed)) {
		nm_buf_printf(b, "  %-*s %" PRIu64 " input%s:", w, "stored", st->in_n,
		              st->in_n == 1 ? "" : "s");
		if (st->in_overflow)
			nm_buf_printf(b, " overflow %" PRIu64 "%s", st->in_overflow,
			              st->in_flushed ? "," : "");
		if (st->in_flushed)
			nm_buf_printf(b, " flushed to zero %" PRIu64, st->in_flushed);
		nm_buf_putc(b, '\n');
	}
	for (int op = 0; op < EMU_NOPS; op++) {
		if (!nr_op_has_flags(st, op))
			continue;
		nm_buf_printf(b, "  %-*s %-5s %" PRIu64 " op%s:", w, any ? "" : "flags",
		              emu_op_name((emu_op)op), st->ops[op], st->ops[op] == 1 ? "" : "s");
		for (int i = 0, sep = 0; i < EMU_NFLAGS; i++) {
			int bit = nr_flag_order[i];
			if (st->flags[op][bit])
				nm_buf_printf(b, "%s %s %" PRIu64, sep++ ? "," : "",
				              nr_flag_name(bit), st->flags[op][bit]);
		}
		nm_buf_putc(b, '\n');
		any = true;
	}
	if (!any)
		nm_buf_printf(b, "  %-*s none\n", w, "flags");
	if (st->first_set)
		nm_buf_printf(b, "  %-*s %s at step %s, element %" PRIu64 ": %s\n", w, "first",
		              emu_op_name(st->first_op), st->first_step, st->first_index,
		              emu_flags_str(st->first_flags, fl, sizeof(fl)));
}

/* The second run of backend k against its first, output by output. */
static void nr_text_recompute(nm_buf *b, const struct nr_report *r, emu_be_kind k)
{
	const emu_run *run = &r->reruns[k];
	const emu_be_stats *st = &run->be.st;
	char fl[48];
	int w = 5;

	nm_buf_printf(b, "recompute %s, policy %s: %s\n", emu_be_name(k), r->s->pol2.spec,
	              emu_run_status_name(run->status));
	for (int i = 0; i < run->out.n; i++)
		if ((int)strlen(run->out.item[i].name) > w)
			w = (int)strlen(run->out.item[i].name);
	for (int i = 0; i < run->out.n; i++) {
		const emu_kout_item *it = &run->out.item[i];
		const emu_recompute_item *d = &r->diff[k][i];
		char shape[96]; /* a format name (63) and [n] */
		snprintf(shape, sizeof(shape), "%s[%zu]", it->fmt->name, it->n);
		nm_buf_printf(b, "  %-*s %s  differ %zu", w, it->name, shape, d->differ);
		if (d->differ)
			nm_buf_printf(b, " (first %zu)", d->first_differ);
		if (d->new_nonfinite)
			nm_buf_printf(b, "  new inf/nan %zu", d->new_nonfinite);
		if (d->gone_nonfinite)
			nm_buf_printf(b, "  inf/nan gone %zu", d->gone_nonfinite);
		nm_buf_putc(b, '\n');
	}
	if (st->first_set)
		nm_buf_printf(b, "  %-*s %s at step %s, element %" PRIu64 ": %s\n", w, "first",
		              emu_op_name(st->first_op), st->first_step, st->first_index,
		              emu_flags_str(st->first_flags, fl, sizeof(fl)));
}

static void nr_text_params(nm_buf *b, const struct nr_opts *o)
{
	for (size_t i = 0; i < o->nparams; i++)
		nm_buf_printf(b, "%s%s=%s", i ? " " : ", params ", o->params[i].name,
		              o->params[i].value_text);
}

static void nr_text(nm_buf *b, const struct nr_report *r)
{
	static const emu_be_kind order[EMU_NBE] = {EMU_BE_FAST, EMU_BE_EXACT, EMU_BE_TRUTH};
	const struct nr_opts *o = r->o;

	nm_buf_printf(b, "%s %s, policy %s, input %zu x %zu (%s), seed %" PRIu64, r->s->k->name,
	              r->s->variant, r->s->pol.spec, r->in->rows, r->in->cols, r->in->desc,
	              o->seed);
	nr_text_params(b, o);
	nm_buf_putc(b, '\n');
	for (int i = 0; i < EMU_NBE; i++)
		if (r->shown[order[i]]) {
			nm_buf_putc(b, '\n');
			nr_text_backend(b, r, order[i]);
		}
	for (int i = 0; i < EMU_NBE; i++)
		if (r->reran[order[i]]) {
			nm_buf_putc(b, '\n');
			nr_text_recompute(b, r, order[i]);
		}
	if (r->tabled)
		nm_buf_put(b, "\nfast == exact: not compared (--gpu-tables)\n");
	if (r->compared) {
		nm_buf_printf(b, "\nfast == exact: %s", r->agree ? "yes" : "no");
		if (!r->agree)
			nm_buf_printf(b, " (%s)", r->why);
		nm_buf_putc(b, '\n');
	}
}

/* ---- CSV: backend,kind,key,value ---- */

static void nr_csv_row(nm_buf *b, const char *be, const char *kind, const char *key,
                       const char *value)
{
	nm_buf_csv(b, be);
	nm_buf_putc(b, ',');
	nm_buf_csv(b, kind);
	nm_buf_putc(b, ',');
	nm_buf_csv(b, key);
	nm_buf_putc(b, ',');
	nm_buf_csv(b, value);
	nm_buf_putc(b, '\n');
}

static void nr_csv_backend(nm_buf *b, const struct nr_report *r, emu_be_kind k)
{
	const emu_run *run = nr_run_of(r, k);
	const emu_be_stats *st = &run->be.st;
	const char *be = emu_be_name(k);
	char key[128], val[NM_NUM_LEN + 64];

	nr_csv_row(b, be, "status", "status", emu_run_status_name(run->status));
	for (int i = 0; i < run->out.n; i++) {
		const emu_kout_item *it = &run->out.item[i];
		snprintf(key, sizeof(key), "%s.format", it->name);
		nr_csv_row(b, be, "meta", key, k == EMU_BE_TRUTH ? "real" : it->fmt->name);
		snprintf(key, sizeof(key), "%s.n", it->name);
		snprintf(val, sizeof(val), "%zu", it->n);
		nr_csv_row(b, be, "meta", key, val);
	}
	for (int i = 0; i < run->out.n; i++) {
		const emu_kout_item *it = &run->out.item[i];
		for (size_t j = 0; j < it->n; j++) {
			double v = emu_kout_d(&run->be, it, j);
			snprintf(key, sizeof(key), "%s[%zu]", it->name, j);
			nr_csv_row(b, be, "output", key, nm_fmt_double(v, val, sizeof(val)));
			if (k != EMU_BE_TRUTH)
				nr_csv_row(
				    b, be, "bits", key,
				    nm_fmt_bits(it->fmt, emu_encode(it->fmt, v), val, sizeof(val)));
		}
	}
	if (run->have_metrics)
		for (int i = 0; i < run->out.n; i++) {
			const emu_item_metrics *m = &run->m[i];
			/* in this order; lost (a count) is the one that is not a double */
			const struct {
				const char *key;
				double v;
			} mets[] = {{"max_ulp", m->max_ulp},
			            {"rel_err", m->rel_err},
			            {"lost", NAN},
			            {"arith_max_ulp", m->arith_max_ulp},
			            {"arith_rel_err", m->arith_rel_err}};
			for (size_t j = 0; j < sizeof(mets) / sizeof(mets[0]); j++) {
				snprintf(key, sizeof(key), "%s.%s", run->out.item[i].name,
				         mets[j].key);
				if (j == 2)
					snprintf(val, sizeof(val), "%zu", m->lost);
				else
					nm_fmt_double(mets[j].v, val, sizeof(val));
				nr_csv_row(b, be, "metric", key, val);
			}
		}
	if (k != EMU_BE_TRUTH) {
		static const char *const keys[4] = {"n", "changed", "overflow", "flushed"};
		const uint64_t cnt[4] = {st->in_n, st->in_changed, st->in_overflow, st->in_flushed};
		for (int i = 0; i < 4; i++) {
			snprintf(val, sizeof(val), "%" PRIu64, cnt[i]);
			nr_csv_row(b, be, "stored", keys[i], val);
		}
	}
	for (int op = 0; op < EMU_NOPS; op++) {
		if (!st->ops[op])
			continue;
		snprintf(val, sizeof(val), "%" PRIu64, st->ops[op]);
		nr_csv_row(b, be, "ops", emu_op_name((emu_op)op), val);
	}
	for (int op = 0; op < EMU_NOPS; op++)
		for (int i = 0; i < EMU_NFLAGS; i++) {
			int bit = nr_flag_order[i];
			if (!st->flags[op][bit])
				continue;
			snprintf(key, sizeof(key), "%s.%s", emu_op_name((emu_op)op),
			         nr_flag_name(bit));
			snprintf(val, sizeof(val), "%" PRIu64, st->flags[op][bit]);
			nr_csv_row(b, be, "flags", key, val);
		}
	if (st->first_set) {
		nr_csv_row(b, be, "first", "op", emu_op_name(st->first_op));
		nr_csv_row(b, be, "first", "step", st->first_step);
		snprintf(val, sizeof(val), "%" PRIu64, st->first_index);
		nr_csv_row(b, be, "first", "index", val);
		nr_csv_row(b, be, "first", "flags",
		           emu_flags_str(st->first_flags, val, sizeof(val)));
	}
}

static void nr_csv_recompute(nm_buf *b, const struct nr_report *r, emu_be_kind k)
{
	const emu_run *run = &r->reruns[k];
	const char *be = emu_be_name(k);
	char key[128], val[64];

	nr_csv_row(b, be, "recompute", "status", emu_run_status_name(run->status));
	for (int i = 0; i < run->out.n; i++) {
		const emu_recompute_item *d = &r->diff[k][i];
		const char *name = run->out.item[i].name;
		const struct {
			const char *key;
			size_t v;
		} f[] = {{"n", d->n},
		         {"differ", d->differ},
		         {"new_nonfinite", d->new_nonfinite},
		         {"gone_nonfinite", d->gone_nonfinite}};
		snprintf(key, sizeof(key), "%s.format", name);
		nr_csv_row(b, be, "recompute", key, run->out.item[i].fmt->name);
		for (size_t j = 0; j < sizeof(f) / sizeof(f[0]); j++) {
			snprintf(key, sizeof(key), "%s.%s", name, f[j].key);
			snprintf(val, sizeof(val), "%zu", f[j].v);
			nr_csv_row(b, be, "recompute", key, val);
		}
	}
}

static void nr_csv(nm_buf *b, const struct nr_report *r)
{
	static const emu_be_kind order[EMU_NBE] = {EMU_BE_FAST, EMU_BE_EXACT, EMU_BE_TRUTH};
	const struct nr_opts *o = r->o;
	char val[64];

	nm_buf_put(b, "backend,kind,key,value\n");
	nr_csv_row(b, "", "run", "kernel", r->s->k->name);
	nr_csv_row(b, "", "run", "variant", r->s->variant);
	nr_csv_row(b, "", "run", "policy", r->s->pol.spec);
	nr_csv_row(b, "", "run", "input", r->in->desc);
	snprintf(val, sizeof(val), "%zu", r->in->rows);
	nr_csv_row(b, "", "run", "rows", val);
	snprintf(val, sizeof(val), "%zu", r->in->cols);
	nr_csv_row(b, "", "run", "cols", val);
	snprintf(val, sizeof(val), "%" PRIu64, o->seed);
	nr_csv_row(b, "", "run", "seed", val);
	for (size_t i = 0; i < o->nparams; i++)
		nr_csv_row(b, "", "param", o->params[i].name,
		           nm_fmt_double(o->kparams[i].value, val, sizeof(val)));
	for (int i = 0; i < EMU_NBE; i++)
		if (r->shown[order[i]])
			nr_csv_backend(b, r, order[i]);
	if (o->recompute)
		nr_csv_row(b, "", "recompute", "policy", r->s->pol2.spec);
	for (int i = 0; i < EMU_NBE; i++)
		if (r->reran[order[i]])
			nr_csv_recompute(b, r, order[i]);
	if (r->compared)
		nr_csv_row(b, "", "agree", "fast==exact", r->agree ? "yes" : "no");
	else if (r->tabled)
		nr_csv_row(b, "", "agree", "fast==exact", "not compared (--gpu-tables)");
}

/* ---- JSON ---- */

static void nr_json_backend(nm_buf *b, const struct nr_report *r, emu_be_kind k)
{
	const emu_run *run = nr_run_of(r, k);
	const emu_be_stats *st = &run->be.st;
	char t[64];
	bool first = true;

	nm_buf_put(b, "    ");
	nm_buf_json_str(b, emu_be_name(k));
	nm_buf_put(b, ": {\n      \"status\": ");
	nm_buf_json_str(b, emu_run_status_name(run->status));
	nm_buf_put(b, ",\n      \"outputs\": [");
	for (int i = 0; i < run->out.n; i++) {
		const emu_kout_item *it = &run->out.item[i];
		nm_buf_put(b, i ? ",\n        {\"name\": " : "\n        {\"name\": ");
		nm_buf_json_str(b, it->name);
		nm_buf_put(b, ", \"format\": ");
		nm_buf_json_str(b, k == EMU_BE_TRUTH ? "real" : it->fmt->name);
		nm_buf_printf(b, ", \"n\": %zu", it->n);
		if (run->have_metrics) {
			nm_buf_put(b, ", \"max_ulp\": ");
			nm_buf_json_num(b, run->m[i].max_ulp);
			nm_buf_put(b, ", \"rel_err\": ");
			nm_buf_json_num(b, run->m[i].rel_err);
			nm_buf_printf(b, ", \"lost\": %zu", run->m[i].lost);
			nm_buf_put(b, ", \"arith_max_ulp\": ");
			nm_buf_json_num(b, run->m[i].arith_max_ulp);
			nm_buf_put(b, ", \"arith_rel_err\": ");
			nm_buf_json_num(b, run->m[i].arith_rel_err);
		}
		nm_buf_put(b, ",\n         \"values\": [");
		for (size_t j = 0; j < it->n; j++) {
			if (j)
				nm_buf_put(b, ", ");
			nm_buf_json_num(b, emu_kout_d(&run->be, it, j));
		}
		nm_buf_put(b, "]");
		if (k != EMU_BE_TRUTH) {
			nm_buf_put(b, ",\n         \"bits\": [");
			for (size_t j = 0; j < it->n; j++) {
				nm_buf_put(b, j ? ", \"" : "\"");
				nm_buf_put(b,
				           nm_fmt_bits(it->fmt,
				                       emu_encode(it->fmt, emu_kout_d(NULL, it, j)),
				                       t, sizeof(t)));
				nm_buf_putc(b, '"');
			}
			nm_buf_put(b, "]");
		}
		nm_buf_put(b, "}");
	}
	nm_buf_put(b, "],");
	if (k != EMU_BE_TRUTH)
		nm_buf_printf(b,
		              "\n      \"stored\": {\"n\": %" PRIu64 ", \"changed\": %" PRIu64
		              ", \"overflow\": %" PRIu64 ", \"flushed\": %" PRIu64 "},",
		              st->in_n, st->in_changed, st->in_overflow, st->in_flushed);
	nm_buf_put(b, "\n      \"ops\": {");
	for (int op = 0; op < EMU_NOPS; op++) {
		if (!st->ops[op])
			continue;
		nm_buf_put(b, first ? "" : ", ");
		nm_buf_json_str(b, emu_op_name((emu_op)op));
		nm_buf_printf(b, ": %" PRIu64, st->ops[op]);
		first = false;
	}
	nm_buf_put(b, "},\n      \"flags\": {");
	first = true;
	for (int op = 0; op < EMU_NOPS; op++) {
		if (!nr_op_has_flags(st, op))
			continue;
		nm_buf_put(b, first ? "" : ", ");
		nm_buf_json_str(b, emu_op_name((emu_op)op));
		nm_buf_put(b, ": {");
		for (int i = 0, sep = 0; i < EMU_NFLAGS; i++) {
			int bit = nr_flag_order[i];
			if (!st->flags[op][bit])
				continue;
			nm_buf_put(b, sep++ ? ", " : "");
			nm_buf_json_str(b, nr_flag_name(bit));
			nm_buf_printf(b, ": %" PRIu64, st->flags[op][bit]);
		}
		nm_buf_put(b, "}");
		first = false;
	}
	nm_buf_put(b, "},\n      \"first\": ");
	if (st->first_set) {
		nm_buf_put(b, "{\"op\": ");
		nm_buf_json_str(b, emu_op_name(st->first_op));
		nm_buf_put(b, ", \"step\": ");
		nm_buf_json_str(b, st->first_step);
		nm_buf_printf(b, ", \"index\": %" PRIu64 ", \"flags\": ", st->first_index);
		nm_buf_json_str(b, emu_flags_str(st->first_flags, t, sizeof(t)));
		nm_buf_put(b, "}");
	} else {
		nm_buf_put(b, "null");
	}
	nm_buf_put(b, "\n    }");
}

/* "recompute": {"policy": ..., "fast": {"status": ..., "outputs": [...]}, ...}, */
static void nr_json_recompute(nm_buf *b, const struct nr_report *r)
{
	static const emu_be_kind order[2] = {EMU_BE_FAST, EMU_BE_EXACT};

	nm_buf_put(b, "\n  \"recompute\": {\"policy\": ");
	nm_buf_json_str(b, r->s->pol2.spec);
	for (int i = 0; i < 2; i++) {
		emu_be_kind k = order[i];
		const emu_run *run = &r->reruns[k];
		if (!r->reran[k])
			continue;
		nm_buf_put(b, ",\n    ");
		nm_buf_json_str(b, emu_be_name(k));
		nm_buf_put(b, ": {\"status\": ");
		nm_buf_json_str(b, emu_run_status_name(run->status));
		nm_buf_put(b, ", \"outputs\": [");
		for (int j = 0; j < run->out.n; j++) {
			const emu_recompute_item *d = &r->diff[k][j];
			nm_buf_put(b, j ? ",\n      {\"name\": " : "\n      {\"name\": ");
			nm_buf_json_str(b, run->out.item[j].name);
			nm_buf_put(b, ", \"format\": ");
			nm_buf_json_str(b, run->out.item[j].fmt->name);
			nm_buf_printf(b,
			              ", \"n\": %zu, \"differ\": %zu, \"new_nonfinite\": %zu, "
			              "\"gone_nonfinite\": %zu}",
			              d->n, d->differ, d->new_nonfinite, d->gone_nonfinite);
		}
		nm_buf_put(b, "]}");
	}
	nm_buf_put(b, "},");
}

static void nr_json(nm_buf *b, const struct nr_report *r)
{
	static const emu_be_kind order[EMU_NBE] = {EMU_BE_FAST, EMU_BE_EXACT, EMU_BE_TRUTH};
	const struct nr_opts *o = r->o;
	bool first = true;

	nm_buf_put(b, "{\n  \"kernel\": ");
	nm_buf_json_str(b, r->s->k->name);
	nm_buf_put(b, ",\n  \"variant\": ");
	nm_buf_json_str(b, r->s->variant);
	nm_buf_put(b, ",\n  \"policy\": ");
	nm_buf_json_str(b, r->s->pol.spec);
	nm_buf_put(b, ",\n  \"input\": {\"source\": ");
	nm_buf_json_str(b, r->in->desc);
	nm_buf_printf(b,
	              ", \"rows\": %zu, \"cols\": %zu},\n  \"seed\": %" PRIu64 ",\n  \"params\": {",
	              r->in->rows, r->in->cols, o->seed);
	for (size_t i = 0; i < o->nparams; i++) {
		nm_buf_put(b, i ? ", " : "");
		nm_buf_json_str(b, o->params[i].name);
		nm_buf_put(b, ": ");
		nm_buf_json_num(b, o->kparams[i].value);
	}
	nm_buf_put(b, "},\n  \"backends\": {\n");
	for (int i = 0; i < EMU_NBE; i++)
		if (r->shown[order[i]]) {
			nm_buf_put(b, first ? "" : ",\n");
			nr_json_backend(b, r, order[i]);
			first = false;
		}
	nm_buf_put(b, "\n  },");
	if (o->recompute)
		nr_json_recompute(b, r);
	nm_buf_put(b, "\n  \"fast_equals_exact\": ");
	if (!r->compared) {
		nm_buf_put(b, "null");
		if (r->tabled)
			nm_buf_put(b, ",\n  \"not_compared\": \"--gpu-tables\"");
	} else {
		nm_buf_put(b, r->agree ? "true" : "false");
		if (!r->agree) {
			nm_buf_put(b, ",\n  \"difference\": ");
			nm_buf_json_str(b, r->why);
		}
	}
	nm_buf_put(b, "\n}\n");
}

void nr_write(nm_buf *b, const struct nr_report *r)
{
	if (r->o->style == NR_CSV)
		nr_csv(b, r);
	else if (r->o->style == NR_JSON)
		nr_json(b, r);
	else
		nr_text(b, r);
}
