/*
 * nm_case.c — reading a sweep case file (nm_case.h; cases/README.md is the
 * reference).
 *
 * inih splits the file into sections and key = value pairs; we feed it
 * through our own line reader so that every error can name its line
 * (Debian's libinih is built without INI_HANDLER_LINENO), so that a line
 * longer than inih's buffer is an error instead of two silently split lines,
 * and so that a section with no keys is still seen (inih calls the handler
 * only for keys). The handler only records raw text with its line; all
 * checking happens afterwards in file order, because a key may depend on one
 * written later (variants on the kernel). The first error wins and nothing
 * of the case is kept.
 */
#include "emu/sweep/nm_case.h"
#include "emu/train/train.h"

#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/io/nm_parse.h"

#define NC_MAX_BYTES (1u << 20) /* a case file is a page of text */
#define NC_MAX_GRID 100000      /* values per axis */
#define NC_MAX_LIST 64          /* variants, formats, policies, series */
#define NC_QUICK_PICKS 9

/* One key's raw text and where it was. */
struct nc_raw {
	char *text;
	int line;
};

struct nc_axis_raw {
	char name[32];
	int line; /* of the section header */
	struct nc_raw sets, grid, quick, domain, monotone;
};

struct nc_ctx {
	nm_case *c;
	const char *path;
	char *err;
	size_t errlen;
	bool failed;
	/* the line reader */
	const char *buf;
	size_t len, pos;
	int line;
	/* raw values */
	struct nc_raw title, kernel, variants, formats, truth, exact, series, tolerance, accuracy;
	struct nc_raw policy[NC_MAX_LIST];
	size_t npolicy;
	struct nc_raw gen, rows, cols, seed, scale, range, maxabs, outlier_k, outlier_frac;
	struct nc_raw param_text[NM_CASE_MAX_PARAMS];
	char param_name[NM_CASE_MAX_PARAMS][32];
	size_t nparam;
	struct nc_axis_raw axis[NM_CASE_MAX_AXES];
	size_t naxis;
};

/* Copy s to dst (len bytes) with every byte a terminal would not show as
 * text written \xNN: control bytes, DEL, and bytes that are not part of a
 * valid UTF-8 sequence. A message quoting a damaged or binary file then
 * says what is there instead of echoing it. */
static void nc_escape(char *dst, size_t len, const char *s)
{
	size_t n = 0;

	while (*s && n + 5 < len) {
		const unsigned char *u = (const unsigned char *)s;
		size_t k = u[0] >= 0xc2 && u[0] <= 0xdf   ? 2
		           : u[0] >= 0xe0 && u[0] <= 0xef ? 3
		           : u[0] >= 0xf0 && u[0] <= 0xf4 ? 4
		                                          : 1;
		bool ok = u[0] >= 0x20 && u[0] != 0x7f && (u[0] < 0x80 || k > 1);

		for (size_t i = 1; i < k && ok; i++)
			ok = (u[i] & 0xc0) == 0x80;
		if (!ok) {
			n += (size_t)snprintf(dst + n, len - n, "\\x%02X", u[0]);
			s++;
		} else if (n + k < len) {
			memcpy(dst + n, s, k);
			n += k;
			s += k;
		} else {
			break;
		}
	}
	dst[n] = '\0';
}

__attribute__((format(printf, 4, 5))) static int nc_err(struct nc_ctx *x, int line,
                                                         const char *key, const char *fmt, ...)
{
	char raw[256], msg[1024];
	va_list ap;

	if (x->failed)
		return -1;
	x->failed = true;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): false positive */
	va_end(ap);
	nc_escape(msg, sizeof(msg), raw); /* it may quote the file's bytes */
	if (line > 0 && key)
		snprintf(x->err, x->errlen, "%s:%d: key '%s': %s", x->path, line, key, msg);
	else if (line > 0)
		snprintf(x->err, x->errlen, "%s:%d: %s", x->path, line, msg);
	else
		snprintf(x->err, x->errlen, "%s: %s", x->path, msg);
	return -1;
}

static int nc_oom(struct nc_ctx *x)
{
	return nc_err(x, 0, NULL, "out of memory");
}

/* ---- the line reader inih pulls from ---- */

static char *nc_reader(char *str, int num, void *stream)
{
	struct nc_ctx *x = stream;
	size_t n = 0, start = x->pos;
	const char *p;

	if (x->failed || x->pos >= x->len)
		return NULL;
	while (x->pos < x->len && x->buf[x->pos] != '\n')
		x->pos++;
	n = x->pos - start;
	if (x->pos < x->len)
		x->pos++; /* the '\n' */
	x->line++;
	if (memchr(x->buf + start, '\0', n)) {
		nc_err(x, x->line, NULL, "a NUL byte in the line");
		return NULL;
	}
	if (n + 2 > (size_t)num) {
		nc_err(x, x->line, NULL, "line longer than %d characters", num - 2);
		return NULL;
	}
	memcpy(str, x->buf + start, n);
	str[n] = '\n';
	str[n + 1] = '\0';
	/* A section header: check it here, where an empty section is seen too. */
	p = str;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '[') {
		const char *end = strchr(p, ']');
		char name[64];
		size_t len;

		if (!end) { /* inih would skip it and blame the next key's line */
			nc_err(x, x->line, NULL, "section header '%.*s' has no closing ']'",
			       (int)strcspn(p, "\r\n"), p);
			return NULL;
		}
		len = (size_t)(end - p - 1);
		if (len >= sizeof(name)) {
			nc_err(x, x->line, NULL, "section name too long");
			return NULL;
		}
		memcpy(name, p + 1, len);
		name[len] = '\0';
		if (!strcmp(name, "case") || !strcmp(name, "input") || !strcmp(name, "param") ||
		    !strcmp(name, "plot") || !strcmp(name, "claim"))
			return str;
		if (!strncmp(name, "axis ", 5)) {
			const char *an = name + 5;
			size_t al = strlen(an);

			if (al == 0 || al >= sizeof(x->axis[0].name) || strspn(an,
			    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != al) {
				nc_err(x, x->line, NULL,
				       "section '%s': an axis name is 1 to 31 letters, digits or _",
				       name);
				return NULL;
			}
			for (size_t i = 0; i < x->naxis; i++)
				if (!strcmp(x->axis[i].name, an)) {
					nc_err(x, x->line, NULL,
					       "section '%s': axis '%s' given twice (first on line %d)",
					       name, an, x->axis[i].line);
					return NULL;
				}
			if (x->naxis == NM_CASE_MAX_AXES) {
				nc_err(x, x->line, NULL, "section '%s': at most %d axes", name,
				       NM_CASE_MAX_AXES);
				return NULL;
			}
			memcpy(x->axis[x->naxis].name, an, al + 1);
			x->axis[x->naxis].line = x->line;
			x->naxis++;
			return str;
		}
		nc_err(x, x->line, NULL,
		       "unknown section '[%s]' (sections: case input param axis NAME plot claim)",
		       name);
		return NULL;
	}
	return str;
}

/* ---- the handler: record raw text ---- */

static int nc_set(struct nc_ctx *x, struct nc_raw *r, const char *key, const char *value)
{
	if (r->text)
		return nc_err(x, x->line, key, "given twice (first on line %d)", r->line), 0;
	r->text = strdup(value);
	if (!r->text)
		return nc_oom(x), 0;
	r->line = x->line;
	return 1;
}

struct nc_key {
	const char *name;
	size_t off; /* of the nc_raw in nc_ctx */
};

#define NC_KEY(n) {#n, offsetof(struct nc_ctx, n)}
static const struct nc_key nc_case_keys[] = {
    NC_KEY(title), NC_KEY(kernel), NC_KEY(variants), NC_KEY(formats),
    NC_KEY(truth), NC_KEY(exact),  NC_KEY(series), NC_KEY(tolerance), NC_KEY(accuracy),
};
static const struct nc_key nc_input_keys[] = {
    NC_KEY(gen), NC_KEY(rows), NC_KEY(cols), NC_KEY(seed), NC_KEY(scale), NC_KEY(range), NC_KEY(maxabs),
    NC_KEY(outlier_k), NC_KEY(outlier_frac),
};

static int nc_keyed(struct nc_ctx *x, const struct nc_key *keys, size_t n, const char *section,
                    const char *name, const char *value)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i].name, name))
			return nc_set(x, (struct nc_raw *)((char *)x + keys[i].off), name, value);
	return nc_err(x, x->line, name, "unknown key in [%s]", section), 0;
}

static int nc_kv(struct nc_ctx *x, const char *section, const char *name, const char *value)
{
	nm_case *c = x->c;
	nm_case_kv *kv;

	if (c->nkv == NM_CASE_MAX_KV)
		return nc_err(x, x->line, name, "more than %d keys in [plot] and [claim]",
		              NM_CASE_MAX_KV), 0;
	if (strlen(section) >= sizeof(kv->section) || strlen(name) >= sizeof(kv->key))
		return nc_err(x, x->line, name, "name too long"), 0;
	kv = &c->kv[c->nkv];
	kv->value = strdup(value);
	if (!kv->value)
		return nc_oom(x), 0;
	strcpy(kv->section, section);
	strcpy(kv->key, name);
	kv->line = x->line;
	c->nkv++;
	return 1;
}

static int nc_handler(void *user, const char *section, const char *name, const char *value)
{
	struct nc_ctx *x = user;

	if (x->failed)
		return 0;
	if (!name[0])
		return nc_err(x, x->line, NULL, "'= %s' has no key", value), 0;
	if (!section[0]) /* not "unknown section '[]'": there is none yet */
		return nc_err(x, x->line, name,
		              "before any section header (a case file starts with [case]; "
		              "cases/README.md)"),
		       0;
	if (!strcmp(section, "case")) {
		if (!strcmp(name, "policy")) {
			if (x->npolicy == NC_MAX_LIST)
				return nc_err(x, x->line, name, "more than %d policies", NC_MAX_LIST), 0;
			x->policy[x->npolicy].line = x->line;
			x->policy[x->npolicy].text = strdup(value);
			if (!x->policy[x->npolicy].text)
				return nc_oom(x), 0;
			x->npolicy++;
			return 1;
		}
		return nc_keyed(x, nc_case_keys, sizeof(nc_case_keys) / sizeof(nc_case_keys[0]),
		                section, name, value);
	}
	if (!strcmp(section, "input"))
		return nc_keyed(x, nc_input_keys, sizeof(nc_input_keys) / sizeof(nc_input_keys[0]),
		                section, name, value);
	if (!strcmp(section, "param")) {
		for (size_t i = 0; i < x->nparam; i++)
			if (!strcmp(x->param_name[i], name))
				return nc_err(x, x->line, name, "given twice (first on line %d)",
				              x->param_text[i].line), 0;
		if (x->nparam == NM_CASE_MAX_PARAMS)
			return nc_err(x, x->line, name, "more than %d parameters",
			              NM_CASE_MAX_PARAMS), 0;
		if (strlen(name) >= sizeof(x->param_name[0]))
			return nc_err(x, x->line, name, "parameter name too long"), 0;
		strcpy(x->param_name[x->nparam], name);
		x->nparam++;
		return nc_set(x, &x->param_text[x->nparam - 1], name, value);
	}
	if (!strcmp(section, "plot") || !strcmp(section, "claim"))
		return nc_kv(x, section, name, value);
	if (!strncmp(section, "axis ", 5)) {
		struct nc_axis_raw *a = NULL;
		static const struct {
			const char *name;
			size_t off;
		} keys[] = {
		    {"sets", offsetof(struct nc_axis_raw, sets)},
		    {"grid", offsetof(struct nc_axis_raw, grid)},
		    {"quick", offsetof(struct nc_axis_raw, quick)},
		    {"domain", offsetof(struct nc_axis_raw, domain)},
		    {"monotone", offsetof(struct nc_axis_raw, monotone)},
		};

		for (size_t i = 0; i < x->naxis; i++)
			if (!strcmp(x->axis[i].name, section + 5))
				a = &x->axis[i];
		if (!a) /* the reader saw every axis header */
			return nc_err(x, x->line, name, "in an unknown section"), 0;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strcmp(keys[i].name, name))
				return nc_set(x, (struct nc_raw *)((char *)a + keys[i].off), name, value);
		return nc_err(x, x->line, name,
		              "unknown key in [%s] (keys: sets grid quick domain monotone)", section),
		       0;
	}
	return nc_err(x, x->line, name, "unknown section '[%s]'", section), 0;
}

/* ---- values ---- */

/* A number as nanmap run reads one: strict syntax, then the nearest double. */
static int nc_number(struct nc_ctx *x, const char *key, const char *s, int line, double *out)
{
	nm_number n;

	*out = 0;
	if (nm_parse_number(s, &n) != NM_OK || n.kind == NM_NUM_NAN)
		return nc_err(x, line, key, "bad number '%s'", s);
	*out = strtod(s, NULL);
	return 0;
}

static int nc_finite(struct nc_ctx *x, const char *key, const char *s, int line, double *out)
{
	if (nc_number(x, key, s, line, out))
		return -1;
	if (!isfinite(*out))
		return nc_err(x, line, key, "'%s' is not a finite number", s);
	return 0;
}

static int nc_count(struct nc_ctx *x, const struct nc_raw *r, const char *key, uint64_t max,
                    size_t *out)
{
	uint64_t v;

	if (nm_parse_u64(r->text, &v) != NM_OK || v == 0 || v > max)
		return nc_err(x, r->line, key, "bad count '%s' (an integer from 1 to %llu)", r->text,
		              (unsigned long long)max);
	*out = (size_t)v;
	return 0;
}

static int nc_bool(struct nc_ctx *x, const struct nc_raw *r, const char *key, bool dflt,
                   bool *out)
{
	int v;

	*out = dflt;
	if (!r->text)
		return 0;
	v = emu_bool_by_name(r->text);
	if (v < 0)
		return nc_err(x, r->line, key, "'%s' is not yes or no", r->text);
	*out = v;
	return 0;
}

/* Split s in place at blanks and commas; empty items are skipped. */
static size_t nc_words(char *s, char **w, size_t max, bool commas)
{
	size_t n = 0;
	const char *sep = commas ? " \t," : " \t";

	for (char *t = strtok(s, sep); t; t = strtok(NULL, sep)) {
		if (n == max)
			return max + 1;
		w[n++] = t;
	}
	return n;
}

static char *nc_dup(const char *s)
{
	return strdup(s);
}

/* ---- [case] ---- */

static void nc_list(char *buf, size_t len, const char *const *v)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; v[i] && n < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? " " : "", v[i]);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

static int nc_kernel(struct nc_ctx *x)
{
	nm_case *c = x->c;
	char list[256];
	size_t n = 0;

	for (size_t i = 0; i < emu_kernel_count() && n < sizeof(list); i++) {
		int w = snprintf(list + n, sizeof(list) - n, "%s%s", i ? " " : "",
		                 emu_kernel_at(i)->name);
		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (n < sizeof(list))
		snprintf(list + n, sizeof(list) - n, " %s", emu_kernel_train.name);
	if (!x->kernel.text)
		return nc_err(x, 0, NULL, "[case] needs a kernel (kernels: %s)", list);
	c->kernel = emu_kernel_by_name(x->kernel.text);
	if (!c->kernel && !strcmp(x->kernel.text, emu_kernel_train.name))
		c->kernel = &emu_kernel_train; /* whole training runs (emu/train) */
	if (!c->kernel)
		return nc_err(x, x->kernel.line, "kernel", "unknown kernel '%s' (kernels: %s)",
		              x->kernel.text, list);
	if (x->title.text) {
		if (strlen(x->title.text) >= sizeof(c->title))
			return nc_err(x, x->title.line, "title", "longer than %zu characters",
			              sizeof(c->title) - 1);
		strcpy(c->title, x->title.text);
	} else {
		snprintf(c->title, sizeof(c->title), "%s", c->name);
	}
	return 0;
}

static int nc_variants(struct nc_ctx *x)
{
	nm_case *c = x->c;
	const emu_kernel *k = c->kernel;
	char *w[NC_MAX_LIST + 1], list[256];
	size_t n;

	if (!x->variants.text) {
		c->variants = calloc(1, sizeof(*c->variants));
		if (!c->variants || !(c->variants[0] = nc_dup(k->variants[0])))
			return nc_oom(x);
		c->nvariants = 1;
		return 0;
	}
	n = nc_words(x->variants.text, w, NC_MAX_LIST, true);
	if (n == 0 || n > NC_MAX_LIST)
		return nc_err(x, x->variants.line, "variants", "want 1 to %d names", NC_MAX_LIST);
	c->variants = calloc(n, sizeof(*c->variants));
	if (!c->variants)
		return nc_oom(x);
	nc_list(list, sizeof(list), k->variants);
	for (size_t i = 0; i < n; i++) {
		/* a listed variant, or one with a ':' suffix the kernel parses
		 * itself (accum's dot:tc:h100) */
		const char *const *v = k->variants;
		while (*v && strcmp(*v, w[i]) != 0 &&
		       !(strncmp(*v, w[i], strlen(*v)) == 0 && w[i][strlen(*v)] == ':'))
			v++;
		if (!*v)
			return nc_err(x, x->variants.line, "variants",
			              "unknown variant '%s' for %s (variants: %s)", w[i], k->name,
			              list);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(w[j], w[i]))
				return nc_err(x, x->variants.line, "variants", "'%s' listed twice",
				              w[i]);
		if (!(c->variants[i] = nc_dup(w[i])))
			return nc_oom(x);
		c->nvariants++;
	}
	return 0;
}

/* Replace every "{fmt}" in s by f (a custom spec in braces); malloc'd. */
static char *nc_subst(const char *s, const char *f)
{
	size_t n = 0, lf = strlen(f) + 2;
	const char *p;
	char *out, *o;

	for (p = strstr(s, "{fmt}"); p; p = strstr(p + 5, "{fmt}"))
		n++;
	out = malloc(strlen(s) + n * lf + 1);
	if (!out)
		return NULL;
	o = out;
	while ((p = strstr(s, "{fmt}"))) {
		memcpy(o, s, (size_t)(p - s));
		o += p - s;
		o += sprintf(o, strchr(f, '=') ? "{%s}" : "%s", f);
		s = p + 5;
	}
	strcpy(o, s);
	return out;
}

static int nc_add_policy(struct nc_ctx *x, char *spec, int line, size_t *cap)
{
	nm_case *c = x->c;
	char perr[256] = "";
	emu_policy pol;

	if (emu_policy_parse(spec, &pol, perr, sizeof(perr)) != EMU_OK) {
		nc_err(x, line, "policy", "bad policy '%s': %s", spec, perr[0] ? perr : "bad spec");
		free(spec);
		return -1;
	}
	for (size_t i = 0; i < c->npolicies; i++)
		if (!strcmp(c->policies[i].spec, pol.spec)) {
			nc_err(x, line, "policy", "policy '%s' listed twice", spec);
			free(spec);
			return -1;
		}
	if (c->npolicies == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		char **s = realloc(c->policy_specs, ncap * sizeof(*s));
		emu_policy *p;

		if (s)
			c->policy_specs = s;
		p = s ? realloc(c->policies, ncap * sizeof(*p)) : NULL;
		if (!p) {
			free(spec);
			return nc_oom(x);
		}
		c->policies = p;
		*cap = ncap;
	}
	c->policy_specs[c->npolicies] = spec;
	c->policies[c->npolicies++] = pol;
	return 0;
}

/* Policies in the order written; a line with {fmt} gives one policy per
 * format, in the order of `formats`. */
static int nc_policies(struct nc_ctx *x)
{
	char *fw[NC_MAX_LIST + 1], *fmts[NC_MAX_LIST];
	size_t nf = 0, cap = 0;
	bool used = false;

	if (x->formats.text) {
		size_t nw = nc_words(x->formats.text, fw, NC_MAX_LIST, false);

		if (nw > NC_MAX_LIST)
			return nc_err(x, x->formats.line, "formats", "more than %d formats",
			              NC_MAX_LIST);
		for (size_t i = 0; i < nw; i++) {
			size_t k = 0;

			if (nm_split_formats(fw[i], fmts + nf, NC_MAX_LIST - nf, &k) != NM_OK)
				return nc_err(x, x->formats.line, "formats", "bad format list");
			nf += k;
		}
		if (nf == 0)
			return nc_err(x, x->formats.line, "formats", "empty list");
		for (size_t i = 0; i < nf; i++) {
			emu_format f;
			char ferr[256] = "";

			if (emu_format_parse(fmts[i], &f, ferr, sizeof(ferr)) != EMU_OK)
				return ferr[0] ? nc_err(x, x->formats.line, "formats", "%s", ferr)
				               : nc_err(x, x->formats.line, "formats",
				                        "unknown format '%s'", fmts[i]);
		}
	}
	if (x->npolicy == 0)
		return nc_err(x, 0, NULL, "[case] needs at least one policy");
	for (size_t i = 0; i < x->npolicy; i++) {
		const char *p = x->policy[i].text;

		if (!strstr(p, "{fmt}")) {
			char *s = nc_dup(p);

			if (!s)
				return nc_oom(x);
			if (nc_add_policy(x, s, x->policy[i].line, &cap))
				return -1;
			continue;
		}
		if (nf == 0)
			return nc_err(x, x->policy[i].line, "policy",
			              "'{fmt}' needs a formats list in [case]");
		used = true;
		for (size_t j = 0; j < nf; j++) {
			char *s = nc_subst(p, fmts[j]);

			if (!s)
				return nc_oom(x);
			if (nc_add_policy(x, s, x->policy[i].line, &cap))
				return -1;
		}
	}
	if (nf && !used)
		return nc_err(x, x->formats.line, "formats", "no policy uses {fmt}");
	return 0;
}

/* ---- [input] and [param] ---- */

static int nc_input(struct nc_ctx *x, bool axis_cols, bool axis_rows)
{
	nm_case *c = x->c;
	uint64_t seed = 1;
	int d = NM_GEN_NORMAL;

	c->gen = (nm_gen){NM_GEN_NORMAL, 1.0, 0x1p-16, 0x1p16, 1, 0, 0};
	if (x->gen.text && (d = nm_gen_dist_parse(x->gen.text)) < 0)
		return nc_err(x, x->gen.line, "gen",
		              "unknown generator '%s' (normal uniform logspace ones)", x->gen.text);
	c->gen.dist = (nm_gen_dist)d;
	if (x->seed.text && nm_parse_u64(x->seed.text, &seed) != NM_OK)
		return nc_err(x, x->seed.line, "seed", "bad seed '%s' (an unsigned integer)",
		              x->seed.text);
	c->gen.seed = seed;
	if (x->scale.text && nc_finite(x, "scale", x->scale.text, x->scale.line, &c->gen.scale))
		return -1;
	if (x->range.text) {
		char *comma = strchr(x->range.text, ',');

		if (c->gen.dist != NM_GEN_LOGSPACE)
			return nc_err(x, x->range.line, "range", "only for gen = logspace");
		if (!comma)
			return nc_err(x, x->range.line, "range", "want LO,HI with 0 < LO <= HI");
		*comma = '\0';
		if (nc_finite(x, "range", x->range.text, x->range.line, &c->gen.lo) ||
		    nc_finite(x, "range", comma + 1, x->range.line, &c->gen.hi))
			return -1;
		if (!(c->gen.lo > 0 && c->gen.hi >= c->gen.lo))
			return nc_err(x, x->range.line, "range", "want LO,HI with 0 < LO <= HI");
	}
	if (nc_bool(x, &x->maxabs, "maxabs", false, &c->maxabs))
		return -1;
	/* outliers (emu/io/nm_gen.h): element i times K where its own draw is below F */
	if (x->outlier_k.text &&
	    nc_finite(x, "outlier_k", x->outlier_k.text, x->outlier_k.line, &c->gen.outlier_k))
		return -1;
	if (x->outlier_frac.text &&
	    nc_finite(x, "outlier_frac", x->outlier_frac.text, x->outlier_frac.line,
	              &c->gen.outlier_frac))
		return -1;
	if (!(c->gen.outlier_frac >= 0 && c->gen.outlier_frac <= 1))
		return nc_err(x, x->outlier_frac.line, "outlier_frac", "want 0 <= F <= 1");
	c->rows = 1;
	if (x->rows.text && nc_count(x, &x->rows, "rows", 1u << 24, &c->rows))
		return -1;
	if (x->cols.text && nc_count(x, &x->cols, "cols", 1u << 26, &c->cols))
		return -1;
	if (!x->cols.text && !axis_cols)
		return nc_err(x, 0, NULL, "[input] needs cols (or an axis that sets cols)");
	(void)axis_rows;
	return 0;
}

static int nc_params(struct nc_ctx *x)
{
	nm_case *c = x->c;
	const char *doc = c->kernel->params_doc && c->kernel->params_doc[0]
	                      ? c->kernel->params_doc : "none";

	for (size_t i = 0; i < x->nparam; i++) {
		if (!emu_kernel_reads_param(c->kernel, x->param_name[i]))
			return nc_err(x, x->param_text[i].line, x->param_name[i],
			              "unknown parameter for %s (it reads: %s)", c->kernel->name, doc);
		if (nc_number(x, x->param_name[i], x->param_text[i].text, x->param_text[i].line,
		              &c->params[i].value))
			return -1;
		strcpy(c->param_names[i], x->param_name[i]);
		c->params[i].name = c->param_names[i];
		c->nparams++;
	}
	return 0;
}

/* ---- axes ---- */

/* Parse "lin A B N", "log A B N", "list V...", "pow2 A B" into a malloc'd
 * ascending array. Integer targets round to whole numbers and drop repeats. */
static int nc_grid(struct nc_ctx *x, const struct nc_raw *r, const char *key, bool integer,
                   double **out, size_t *nout)
{
	char *w[1025];
	size_t nw, n = 0, cap;
	double *v = NULL, a, b;
	char *text = nc_dup(r->text);

	*out = NULL;
	*nout = 0;
	if (!text)
		return nc_oom(x);
	nw = nc_words(text, w, 1024, false);
	if (nw == 0)
		goto bad;
	if (!strcmp(w[0], "lin") || !strcmp(w[0], "log")) {
		bool lg = w[0][1] == 'o';
		uint64_t cnt;

		if (nw != 4)
			goto bad;
		if (nc_finite(x, key, w[1], r->line, &a) || nc_finite(x, key, w[2], r->line, &b))
			goto fail;
		if (nm_parse_u64(w[3], &cnt) != NM_OK || cnt < 2 || cnt > NC_MAX_GRID) {
			nc_err(x, r->line, key, "bad count '%s' (2 to %d values)", w[3], NC_MAX_GRID);
			goto fail;
		}
		if (!(a < b) || (lg && !(a > 0))) {
			nc_err(x, r->line, key, "want %sA < B", lg ? "0 < " : "");
			goto fail;
		}
		cap = (size_t)cnt;
		v = malloc(cap * sizeof(*v));
		if (!v) {
			nc_oom(x);
			goto fail;
		}
		for (size_t i = 0; i < cap; i++) {
			double t = (double)i / (double)(cap - 1);

			/* powers of ten: decade grids land on 10, 100, ... exactly */
			v[i] = lg ? pow(10.0, log10(a) + t * (log10(b) - log10(a))) : a + t * (b - a);
		}
		v[0] = a; /* the ends exactly as written */
		v[cap - 1] = b;
		n = cap;
	} else if (!strcmp(w[0], "pow2")) {
		int ea, eb;

		if (nw != 3)
			goto bad;
		if (nc_finite(x, key, w[1], r->line, &a) || nc_finite(x, key, w[2], r->line, &b))
			goto fail;
		if (!(a > 0 && b >= a) || frexp(a, &ea) != 0.5 || frexp(b, &eb) != 0.5) {
			nc_err(x, r->line, key, "pow2 wants powers of two A <= B");
			goto fail;
		}
		cap = (size_t)(eb - ea) + 1;
		v = malloc(cap * sizeof(*v));
		if (!v) {
			nc_oom(x);
			goto fail;
		}
		for (int e = ea; e <= eb; e++)
			v[n++] = ldexp(0.5, e);
	} else if (!strcmp(w[0], "list")) {
		if (nw < 2 || nw > 1024)
			goto bad;
		v = malloc((nw - 1) * sizeof(*v));
		if (!v) {
			nc_oom(x);
			goto fail;
		}
		for (size_t i = 1; i < nw; i++) {
			if (nc_finite(x, key, w[i], r->line, &v[n]))
				goto fail;
			if (n && !(v[n] > v[n - 1])) {
				nc_err(x, r->line, key, "list values must be strictly ascending");
				goto fail;
			}
			n++;
		}
	} else {
		goto bad;
	}
	if (integer) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++) {
			double t = nearbyint(v[i]);

			if (!(t >= 1 && t <= 0x1p26)) {
				nc_err(x, r->line, key, "a count axis needs values from 1 to 2^26");
				goto fail;
			}
			if (!m || t != v[m - 1])
				v[m++] = t;
		}
		n = m;
	}
	/* lin and log over extreme or tiny ranges can give inf, NaN or repeats */
	for (size_t i = 0; i < n && !integer; i++)
		if (!isfinite(v[i]) || (i && !(v[i] > v[i - 1]))) {
			nc_err(x, r->line, key, "the grid's values are not finite and strictly ascending");
			goto fail;
		}
	free(text);
	*out = v;
	*nout = n;
	return 0;
bad:
	nc_err(x, r->line, key, "bad grid '%s' (lin A B N, log A B N, list V..., pow2 A B)",
	       r->text);
fail:
	free(text);
	free(v);
	return -1;
}

static int nc_axis(struct nc_ctx *x, size_t i)
{
	nm_case *c = x->c;
	struct nc_axis_raw *r = &x->axis[i];
	nm_axis *a = &c->axes[i];
	static const char *const dom[] = {"real", "storage", "compute", "int", "pow2"};
	bool integer;

	strcpy(a->name, r->name);
	if (!r->sets.text)
		return nc_err(x, r->line, NULL, "[axis %s] needs sets", r->name);
	if (!strcmp(r->sets.text, "scale")) {
		a->target = NM_SET_SCALE;
	} else if (!strcmp(r->sets.text, "cols")) {
		a->target = NM_SET_COLS;
	} else if (!strcmp(r->sets.text, "rows")) {
		a->target = NM_SET_ROWS;
	} else if (!strcmp(r->sets.text, "outlier_k")) {
		a->target = NM_SET_OUTLIER_K;
	} else if (!strcmp(r->sets.text, "outlier_frac")) {
		a->target = NM_SET_OUTLIER_FRAC;
	} else if (!strncmp(r->sets.text, "param:", 6)) {
		const char *p = r->sets.text + 6;

		a->target = NM_SET_PARAM;
		if (!p[0] || strlen(p) >= sizeof(a->param) || !emu_kernel_reads_param(c->kernel, p))
			return nc_err(x, r->sets.line, "sets", "'%s' is not a parameter of %s (it reads: %s)",
			              p, c->kernel->name, c->kernel->params_doc);
		strcpy(a->param, p);
		for (size_t j = 0; j < c->nparams; j++)
			if (!strcmp(c->param_names[j], p))
				return nc_err(x, r->sets.line, "sets",
				              "parameter '%s' is also fixed in [param]", p);
	} else {
		return nc_err(x, r->sets.line, "sets",
		              "bad target '%s' (scale, cols, rows, outlier_k, outlier_frac or "
		              "param:NAME)",
		              r->sets.text);
	}
	for (size_t j = 0; j < i; j++)
		if (c->axes[j].target == a->target &&
		    (a->target != NM_SET_PARAM || !strcmp(c->axes[j].param, a->param)))
			return nc_err(x, r->sets.line, "sets", "axis '%s' sets the same thing",
			              c->axes[j].name);
	integer = a->target == NM_SET_COLS || a->target == NM_SET_ROWS;
	a->domain = integer ? NM_DOM_INT : NM_DOM_REAL;
	if (r->domain.text) {
		size_t k = 0;

		while (k < 5 && strcmp(dom[k], r->domain.text) != 0)
			k++;
		if (k == 5)
			return nc_err(x, r->domain.line, "domain",
			              "unknown domain '%s' (real storage compute int pow2)",
			              r->domain.text);
		a->domain = (nm_axis_domain)k;
	}
	if (nc_bool(x, &r->monotone, "monotone", true, &a->monotone))
		return -1;
	if (!r->grid.text)
		return nc_err(x, r->line, NULL, "[axis %s] needs grid", r->name);
	if (nc_grid(x, &r->grid, "grid", integer, &a->values, &a->nvalues))
		return -1;
	if (r->quick.text) {
		if (nc_grid(x, &r->quick, "quick", integer, &a->quick, &a->nquick))
			return -1;
	} else {
		size_t n = a->nvalues, k = n <= NC_QUICK_PICKS ? n : NC_QUICK_PICKS;

		a->quick = malloc((k ? k : 1) * sizeof(*a->quick));
		if (!a->quick)
			return nc_oom(x);
		for (size_t j = 0; j < k; j++)
			a->quick[j] = a->values[k == n ? j : (j * (n - 1) + (k - 1) / 2) / (k - 1)];
		a->nquick = k;
	}
	c->naxes++;
	return 0;
}

static int nc_series(struct nc_ctx *x)
{
	nm_case *c = x->c;
	char *w[NC_MAX_LIST + 1];
	size_t n;

	if (!x->series.text)
		return 0;
	n = nc_words(x->series.text, w, NC_MAX_LIST, true);
	if (n == 0 || n > NC_MAX_LIST)
		return nc_err(x, x->series.line, "series", "want 1 to %d output names", NC_MAX_LIST);
	c->series = calloc(n, sizeof(*c->series));
	if (!c->series)
		return nc_oom(x);
	for (size_t i = 0; i < n; i++) {
		if (strlen(w[i]) >= 24)
			return nc_err(x, x->series.line, "series", "output name '%s' too long", w[i]);
		if (!(c->series[i] = nc_dup(w[i])))
			return nc_oom(x);
		c->nseries++;
	}
	return 0;
}

/* The accuracy verdict's keys: tolerance a finite number > 0 (a relative
 * error), accuracy one output name (checked against the kernel's outputs
 * by nm_plot_check_columns, which runs the kernel). */
static int nc_accuracy(struct nc_ctx *x)
{
	nm_case *c = x->c;
	char *w[2];

	c->tolerance = NM_CASE_TOLERANCE;
	if (x->tolerance.text) {
		double t;

		if (nc_number(x, "tolerance", x->tolerance.text, x->tolerance.line, &t))
			return -1;
		if (!(t > 0 && isfinite(t)))
			return nc_err(x, x->tolerance.line, "tolerance",
			              "'%s' is not a relative error > 0 (0.01 is 1 %%)",
			              x->tolerance.text);
		c->tolerance = t;
		c->tolerance_set = true;
	}
	if (x->accuracy.text) {
		if (nc_words(x->accuracy.text, w, 1, true) != 1)
			return nc_err(x, x->accuracy.line, "accuracy", "want one output name");
		if (strlen(w[0]) >= sizeof(c->accuracy))
			return nc_err(x, x->accuracy.line, "accuracy", "output name '%s' too long",
			              w[0]);
		strcpy(c->accuracy, w[0]);
	}
	return 0;
}

/* ---- loading ---- */

static void nc_raw_free(struct nc_raw *r)
{
	free(r->text);
	r->text = NULL;
}

static void nc_ctx_free(struct nc_ctx *x)
{
	struct nc_raw *all[] = {&x->title, &x->kernel, &x->variants, &x->formats, &x->truth,
	                        &x->exact, &x->series, &x->tolerance, &x->accuracy, &x->gen, &x->rows, &x->cols,
	                        &x->seed, &x->scale, &x->range, &x->maxabs,
	                        &x->outlier_k, &x->outlier_frac};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		nc_raw_free(all[i]);
	for (size_t i = 0; i < x->npolicy; i++)
		nc_raw_free(&x->policy[i]);
	for (size_t i = 0; i < x->nparam; i++)
		nc_raw_free(&x->param_text[i]);
	for (size_t i = 0; i < x->naxis; i++) {
		nc_raw_free(&x->axis[i].sets);
		nc_raw_free(&x->axis[i].grid);
		nc_raw_free(&x->axis[i].quick);
		nc_raw_free(&x->axis[i].domain);
		nc_raw_free(&x->axis[i].monotone);
	}
}

/* 0 with *buf and *len set, or -1 with the error reported: the caller
 * relies on -1, not on nc_err's value, to know *buf was not written. */
static int nc_read(struct nc_ctx *x, char **buf, size_t *len)
{
	FILE *fp = fopen(x->path, "rb");
	size_t n = 0, cap = 4096;
	char *b;

	if (!fp) {
		nc_err(x, 0, NULL, "cannot open: %s", strerror(errno));
		return -1;
	}
	b = malloc(cap);
	while (b) {
		size_t got = fread(b + n, 1, cap - n, fp);

		n += got;
		if (n > NC_MAX_BYTES) {
			fclose(fp);
			free(b);
			nc_err(x, 0, NULL, "larger than %u bytes", NC_MAX_BYTES);
			return -1;
		}
		if (n < cap) {
			if (ferror(fp)) {
				fclose(fp);
				free(b);
				nc_err(x, 0, NULL, "read error");
				return -1;
			}
			break;
		}
		char *nb = realloc(b, cap * 2);
		if (!nb)
			free(b);
		b = nb;
		cap *= 2;
	}
	fclose(fp);
	if (!b) {
		nc_oom(x);
		return -1;
	}
	*buf = b;
	*len = n;
	return 0;
}

static void nc_name(nm_case *c, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 5 && !strcmp(base + n - 5, ".case"))
		n -= 5;
	if (n >= sizeof(c->name))
		n = sizeof(c->name) - 1;
	memcpy(c->name, base, n);
	c->name[n] = '\0';
}

int nm_case_load(const char *path, nm_case *c, char *err, size_t errlen)
{
	struct nc_ctx *x = calloc(1, sizeof(*x));
	char *buf = NULL;
	size_t len = 0;
	bool axis_cols = false, axis_rows = false;
	int rc = -1, irc;

	memset(c, 0, sizeof(*c));
	if (!x) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	x->c = c;
	x->path = path;
	x->err = err;
	x->errlen = errlen;
	if (strlen(path) >= sizeof(c->path)) {
		nc_err(x, 0, NULL, "path too long");
		goto out;
	}
	strcpy(c->path, path);
	nc_name(c, path);
	if (!c->name[0] || strspn(c->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                                   "0123456789_.-") != strlen(c->name)) {
		nc_err(x, 0, NULL, "a case's file name is letters, digits, _ . - and '.case'");
		goto out;
	}
	if (nc_read(x, &buf, &len))
		goto out;
	{
		const char *nul = memchr(buf, '\0', len);

		if (nul) {
			int line = 1;

			for (const char *p = buf; p < nul; p++)
				line += *p == '\n';
			nc_err(x, 0, NULL, "not a text file (a NUL byte on line %d)", line);
			goto out;
		}
	}
	c->hash = nm_fnv1a(buf, len);
	x->buf = buf;
	x->len = len;
	irc = ini_parse_stream(nc_reader, x, nc_handler, x);
	if (irc > 0)
		nc_err(x, irc, NULL, "not a section header, key = value, or comment");
	else if (irc < 0)
		nc_oom(x);
	if (x->failed)
		goto out;
	for (size_t i = 0; i < x->naxis; i++) {
		const char *s = x->axis[i].sets.text;
		axis_cols |= s && !strcmp(s, "cols");
		axis_rows |= s && !strcmp(s, "rows");
	}
	if (nc_kernel(x) || nc_variants(x) || nc_policies(x) ||
	    nc_bool(x, &x->truth, "truth", true, &c->truth) ||
	    nc_bool(x, &x->exact, "exact", false, &c->exact) || nc_series(x) || nc_accuracy(x) ||
	    nc_input(x, axis_cols, axis_rows) || nc_params(x))
		goto out;
	for (size_t i = 0; i < x->naxis; i++)
		if (nc_axis(x, i))
			goto out;
	{
		/* the largest input any point makes must be one that can be allocated */
		double r, k;

		if (nm_case_max_input(c, &r, &k) > 0x1p28) {
			nc_err(x, 0, NULL, "inputs of up to %.0f x %.0f values (at most 2^28)", r, k);
			goto out;
		}
	}
	rc = 0;
out:
	if (rc)
		nm_case_free(c);
	nc_ctx_free(x);
	free(x);
	free(buf);
	return rc;
}

double nm_case_max_input(const nm_case *c, double *rows, double *cols)
{
	double r = (double)c->rows, k = (double)c->cols;

	for (size_t i = 0; i < c->naxes; i++) {
		const nm_axis *a = &c->axes[i];

		if (a->target == NM_SET_ROWS)
			r = a->values[a->nvalues - 1];
		if (a->target == NM_SET_COLS)
			k = a->values[a->nvalues - 1];
	}
	*rows = r;
	*cols = k;
	return r * k;
}

void nm_case_free(nm_case *c)
{
	for (size_t i = 0; i < c->nvariants; i++)
		free(c->variants[i]);
	free(c->variants);
	for (size_t i = 0; i < c->npolicies; i++)
		free(c->policy_specs[i]);
	free(c->policy_specs);
	free(c->policies);
	for (size_t i = 0; i < NM_CASE_MAX_AXES; i++) {
		free(c->axes[i].values);
		free(c->axes[i].quick);
	}
	for (size_t i = 0; i < c->nseries; i++)
		free(c->series[i]);
	free(c->series);
	for (size_t i = 0; i < c->nkv; i++)
		free(c->kv[i].value);
	memset(c, 0, sizeof(*c));
}

const nm_case_kv *nm_case_get(const nm_case *c, const char *section, const char *key)
{
	for (size_t i = 0; i < c->nkv; i++)
		if (!strcmp(c->kv[i].section, section) && !strcmp(c->kv[i].key, key))
			return &c->kv[i];
	return NULL;
}
