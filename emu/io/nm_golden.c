/*
 * nm_golden.c — reading golden files and comparing outputs with them
 * (nm_golden.h; golden/README.md describes the format).
 *
 * The reader is strict, as MPFR's data-driven tests are: the first line must
 * be the file's magic, every line is one of the documented kinds, every
 * record belongs to the output declared just before it, comes in index
 * order, fits the format's width and carries the class its encoding has; an
 * output must have exactly as many records as it declares. A golden file
 * that a careless edit damaged fails loudly with file and line.
 *
 * Distances in ulps are counted on the format's ordered encodings: a
 * sign-magnitude encoding maps to ±magnitude, so neighbours differ by one and
 * +0 and −0 coincide (a flipped zero sign is reported separately).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emu/core/emu.h"
#include "emu/engine/kern.h"
#include "emu/io/nm_golden.h"
#include "emu/io/nm_npy.h"
#include "emu/io/nm_parse.h"

#define NG_MAGIC "# nanmap golden file"
#define NG_MAX_FIELDS 16

/* The longest golden file the reader takes (nm_golden.h). */
#define NG_MAX_BYTES NM_GOLDEN_MAX_BYTES

struct ng_out {
	nm_golden_output pub;
	const emu_format *fmt;
	uint32_t *exp;
	size_t filled;
};

struct ng_case {
	nm_golden_case pub;
	size_t first_out, nouts; /* its outputs, contiguous in outs */
	emu_format storage, compute, accum; /* its policy's */
};

/* One hash table of strings to indices, open addressing, linear probing;
 * the keys point into the file's text. Lookups by case id and by target
 * cost O(1), so a file of many cases reads in time linear in its size. */
struct ng_slot {
	const char *key;
	size_t idx;
};

struct ng_map {
	struct ng_slot *s;
	size_t cap, n; /* cap a power of two, or 0 */
};

struct nm_golden {
	char *text; /* the file, split in place: the strings point into it */
	struct ng_case *cases;
	size_t ncases, capcases;
	struct ng_out *outs;
	size_t nouts, capouts;
	struct ng_map by_id, by_target;
};

#define NG_NONE ((size_t)-1)

static size_t ng_map_get(const struct ng_map *m, const char *key)
{
	if (!m->cap)
		return NG_NONE;
	size_t mask = m->cap - 1, i = (size_t)nm_fnv1a(key, strlen(key)) & mask;
	for (; m->s[i].key; i = (i + 1) & mask)
		if (!strcmp(m->s[i].key, key))
			return m->s[i].idx;
	return NG_NONE;
}

/* Insert a key that is not there; false when out of memory. */
static bool ng_map_put(struct ng_map *m, const char *key, size_t idx)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct ng_slot *s = calloc(cap, sizeof *s);
		if (!s)
			return false;
		for (size_t j = 0; j < m->cap; j++)
			if (m->s[j].key) {
				size_t i = (size_t)nm_fnv1a(m->s[j].key, strlen(m->s[j].key)) &
				           (cap - 1);
				while (s[i].key)
					i = (i + 1) & (cap - 1);
				s[i] = m->s[j];
			}
		free(m->s);
		m->s = s;
		m->cap = cap;
	}
	size_t mask = m->cap - 1, i = (size_t)nm_fnv1a(key, strlen(key)) & mask;
	while (m->s[i].key)
		i = (i + 1) & mask;
	m->s[i].key = key;
	m->s[i].idx = idx;
	m->n++;
	return true;
}

static nm_golden_status ng_fail(char *err, size_t errlen, nm_golden_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static nm_golden_status ng_fail(char *err, size_t errlen, nm_golden_status st, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized) */
		va_end(ap);
	}
	return st;
}

/* ---- formats, classes, distances ---- */

static int ng_width_bytes(int bits)
{
	return bits <= 8 ? 1 : bits <= 16 ? 2 : 4;
}

static uint32_t ng_mask(int bits)
{
	return bits >= 32 ? 0xffffffffu : (1u << bits) - 1;
}

static bool ng_neg(const emu_format *f, uint32_t b)
{
	return f->has_sign && (b & f->sign_mask) && f->nan != EMU_NAN_FNUZ;
}

static const char *ng_class(const emu_format *f, uint32_t b)
{
	bool neg = ng_neg(f, b);

	switch (emu_classify(f, b)) {
	case EMU_CLASS_NAN:
		return neg ? "-nan" : "nan";
	case EMU_CLASS_INF:
		return neg ? "-inf" : "inf";
	case EMU_CLASS_ZERO:
		return neg ? "-0" : "0";
	case EMU_CLASS_SUBNORMAL:
		return "sub";
	default:
		return (b & ~f->sign_mask) == f->max_bits ? "max" : "normal";
	}
}

static int64_t ng_ord(const emu_format *f, uint32_t b)
{
	uint32_t mag = f->has_sign ? b & ~f->sign_mask : b;
	return f->has_sign && (b & f->sign_mask) ? -(int64_t)mag : (int64_t)mag;
}

static uint64_t ng_ulp(const emu_format *f, uint32_t a, uint32_t b)
{
	emu_class ca = emu_classify(f, a), cb = emu_classify(f, b);

	if (a == b)
		return 0;
	if (ca == EMU_CLASS_NAN || cb == EMU_CLASS_NAN || ca == EMU_CLASS_INF ||
	    cb == EMU_CLASS_INF)
		return NM_GOLDEN_ULP_INF;
	int64_t d = ng_ord(f, a) - ng_ord(f, b);
	return d < 0 ? (uint64_t)-d : (uint64_t)d;
}

const char *nm_golden_class(const nm_golden_output *o, uint32_t bits)
{
	const emu_format *f = emu_format_by_name(o->format);
	return f ? ng_class(f, bits) : "?";
}

uint64_t nm_golden_ulp(const nm_golden_output *o, uint32_t a, uint32_t b)
{
	const emu_format *f = emu_format_by_name(o->format);
	return f ? ng_ulp(f, a, b) : NM_GOLDEN_ULP_INF;
}

/* ---- the reader ---- */

struct ng_parse {
	nm_golden *g;
	const char *name;
	size_t line;
	char *err;
	size_t errlen;
	struct ng_out *cur; /* the output whose records come next */
	size_t bytes_left;  /* bounds a declared length before allocating */
	const char *orig;   /* the bytes as given, for the checksums */
	size_t line_off;    /* where the current line starts in them */
	size_t case_off;    /* where the open case's line starts */
	bool open;          /* the last case has no end line yet */
};

#define NG_BAD(P, ...) ng_bad(P, __VA_ARGS__)

static nm_golden_status ng_bad(struct ng_parse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static nm_golden_status ng_bad(struct ng_parse *p, const char *fmt, ...)
{
	if (p->err && p->errlen) {
		int n = snprintf(p->err, p->errlen, "%s:%zu: ", p->name, p->line);
		if (n >= 0 && (size_t)n < p->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap); /* NOLINT */
			va_end(ap);
		}
	}
	return NM_GOLDEN_ERR_FORMAT;
}

static bool ng_u64(const char *s, uint64_t *out)
{
	return nm_parse_u64(s, out) == NM_OK;
}

/* Hex digits, "0x" optional, at most 8, value below 2^bits. */
static bool ng_hex(const char *s, size_t len, int bits, uint32_t *out)
{
	uint32_t v = 0;
	size_t i = 0;

	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	if (i == len || len - i > 8)
		return false;
	for (; i < len; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0)
			return false;
		v = v << 4 | (uint32_t)d;
	}
	if (v & ~ng_mask(bits))
		return false;
	*out = v;
	return true;
}

static nm_golden_case *ng_case_by_id(nm_golden *g, const char *id)
{
	size_t i = ng_map_get(&g->by_id, id);
	return i == NG_NONE ? NULL : &g->cases[i].pub;
}

static nm_golden_status ng_nomem(struct ng_parse *p)
{
	return ng_fail(p->err, p->errlen, NM_GOLDEN_ERR_NOMEM, "%s: out of memory", p->name);
}

/* The open case, the one the lines of f[1] must belong to. */
static nm_golden_case *ng_open_case(struct ng_parse *p, const char *what, const char *id)
{
	nm_golden *g = p->g;
	if (!p->open || strcmp(g->cases[g->ncases - 1].pub.id, id) != 0) {
		if (!p->open)
			NG_BAD(p, "%s of '%s' outside a case (after its end line, or before any)",
			       what, id);
		else
			NG_BAD(p, "%s of '%s' inside case %s", what, id,
			       g->cases[g->ncases - 1].pub.id);
		return NULL;
	}
	return &g->cases[g->ncases - 1].pub;
}

static nm_golden_status ng_complete(struct ng_parse *p)
{
	struct ng_out *o = p->cur;

	if (o && o->filled != o->pub.n)
		return NG_BAD(p, "output %s has %zu of its %zu records", o->pub.target, o->filled,
		              o->pub.n);
	p->cur = NULL;
	return NM_GOLDEN_OK;
}

static bool ng_valid_id(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(*s == '.' || *s == '-' || *s == '_' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
}

static nm_golden_status ng_case(struct ng_parse *p, char **f, size_t n)
{
	nm_golden *g = p->g;
	nm_golden_case c;
	unsigned seen = 0;
	static const char *const keys[] = {"kernel", "variant", "policy", "rows",
	                                   "cols",   "gen",     "scale",  "seed"};

	memset(&c, 0, sizeof c);
	if (p->open)
		return NG_BAD(p, "case %s has no end line before the next case",
		              g->cases[g->ncases - 1].pub.id);
	if (n < 2 || !ng_valid_id(f[1]))
		return NG_BAD(p, "a case needs an id of letters, digits, '.', '-' and '_'");
	if (ng_case_by_id(g, f[1]))
		return NG_BAD(p, "case %s given twice", f[1]);
	c.id = f[1];
	for (size_t i = 2; i < n; i++) {
		char *eq = strchr(f[i], '=');
		size_t k = 0;
		uint64_t u;
		if (!eq)
			return NG_BAD(p, "'%s' is not KEY=VALUE", f[i]);
		*eq = '\0';
		const char *v = eq + 1;
		while (k < sizeof keys / sizeof keys[0] && strcmp(keys[k], f[i]) != 0)
			k++;
		if (k == sizeof keys / sizeof keys[0])
			return NG_BAD(p, "unknown case key '%s'", f[i]);
		if (seen & (1u << k))
			return NG_BAD(p, "case key '%s' given twice", f[i]);
		seen |= 1u << k;
		switch (k) {
		case 0:
			c.kernel = v;
			break;
		case 1:
			c.variant = v;
			break;
		case 2:
			c.policy = v;
			break;
		case 3:
		case 4:
			if (!ng_u64(v, &u) || u == 0 || u > ((uint64_t)1 << 31))
				return NG_BAD(p, "bad %s '%s'", keys[k], v);
			*(k == 3 ? &c.rows : &c.cols) = (size_t)u;
			break;
		case 5:
			c.gen = v;
			break;
		case 6: {
			nm_number x;
			if (nm_parse_number(v, &x) != NM_OK || x.kind != NM_NUM_FINITE ||
			    !nm_number_to_double(&x, &c.scale))
				return NG_BAD(p, "bad scale '%s' (a finite double)", v);
			break;
		}
		default:
			if (!ng_u64(v, &c.seed))
				return NG_BAD(p, "bad seed '%s'", v);
			break;
		}
		if (!*v && k != 6)
			return NG_BAD(p, "empty %s", keys[k]);
	}
	if (seen != (1u << (sizeof keys / sizeof keys[0])) - 1)
		return NG_BAD(p,
		              "case %s lacks a key (it needs kernel variant policy rows "
		              "cols gen scale seed)",
		              c.id);
	if (c.rows > ((uint64_t)1 << 31) / c.cols)
		return NG_BAD(p, "case %s: rows x cols is too large", c.id);
	c.status = "?";
	emu_policy pol;
	char pe[128] = "";
	if (emu_policy_parse(c.policy, &pol, pe, sizeof pe) != EMU_OK)
		return NG_BAD(p, "case %s: bad policy '%s': %s", c.id, c.policy, pe);
	if (g->ncases == g->capcases) {
		size_t cap = g->capcases ? 2 * g->capcases : 16;
		struct ng_case *a = realloc(g->cases, cap * sizeof *a);
		if (!a)
			return ng_nomem(p);
		g->cases = a;
		g->capcases = cap;
	}
	if (!ng_map_put(&g->by_id, c.id, g->ncases))
		return ng_nomem(p);
	struct ng_case *nc = &g->cases[g->ncases++];
	memset(nc, 0, sizeof *nc);
	nc->pub = c;
	nc->first_out = g->nouts;
	nc->storage = pol.storage;
	nc->compute = pol.compute;
	nc->accum = pol.accum;
	p->open = true;
	p->case_off = p->line_off;
	return NM_GOLDEN_OK;
}

static nm_golden_status ng_status(struct ng_parse *p, char **f, size_t n)
{
	static const char *const names[] = {"ok", "underflow", "overflow", "inf", "nan"};
	nm_golden_case *c;
	size_t k = 0;

	if (n != 3)
		return NG_BAD(p, "want: status CASE STATUS");
	c = ng_open_case(p, "status", f[1]);
	if (!c)
		return NM_GOLDEN_ERR_FORMAT;
	while (k < sizeof names / sizeof names[0] && strcmp(names[k], f[2]) != 0)
		k++;
	if (k == sizeof names / sizeof names[0])
		return NG_BAD(p, "unknown status '%s' (ok underflow overflow inf nan)", f[2]);
	c->status = names[k];
	return NM_GOLDEN_OK;
}

/* "ops CASE KIND COUNT [FLAG=N]..." and "first CASE OP STEP INDEX FLAGS": the
 * run's flag statistics; the reader checks their shape, the tests their
 * values. */
static nm_golden_status ng_stats(struct ng_parse *p, char **f, size_t n)
{
	uint64_t u;

	if (n < 3)
		return NG_BAD(p, "%s without a case", f[0]);
	if (!ng_open_case(p, f[0], f[1]))
		return NM_GOLDEN_ERR_FORMAT;
	if (!strcmp(f[0], "first")) {
		if (n != 6 || !ng_u64(f[4], &u))
			return NG_BAD(p, "want: first CASE OP STEP INDEX FLAGS");
		return NM_GOLDEN_OK;
	}
	if (n < 4 || emu_op_by_name(f[2]) == EMU_NOPS || !ng_u64(f[3], &u))
		return NG_BAD(p, "want: ops CASE KIND COUNT [FLAG=N]...");
	for (size_t i = 4; i < n; i++) {
		char *eq = strchr(f[i], '=');
		if (!eq || eq == f[i] || !ng_u64(eq + 1, &u))
			return NG_BAD(p, "bad flag count '%s' (FLAG=N)", f[i]);
	}
	return NM_GOLDEN_OK;
}

static nm_golden_status ng_output(struct ng_parse *p, char **f, size_t n)
{
	nm_golden *g = p->g;
	uint64_t len;
	const emu_format *fmt;
	char *slash;

	if (n != 4)
		return NG_BAD(p, "want: output CASE/NAME FORMAT N");
	slash = strchr(f[1], '/');
	if (!slash || strchr(slash + 1, '/') || !ng_valid_id(slash + 1))
		return NG_BAD(p, "bad output '%s' (CASE/NAME)", f[1]);
	*slash = '\0';
	if (!p->open || strcmp(g->cases[g->ncases - 1].pub.id, f[1]) != 0)
		return NG_BAD(p, "output of '%s', which is not the case just declared", f[1]);
	*slash = '/';
	if (ng_map_get(&g->by_target, f[1]) != NG_NONE)
		return NG_BAD(p, "output %s given twice", f[1]);
	fmt = emu_format_by_name(f[2]);
	if (!fmt)
		return NG_BAD(p, "unknown format '%s' (a built-in name)", f[2]);
	/* a kernel holds its outputs in the policy's formats, or fp32 (the
	 * master copies and scales PyTorch keeps in fp32) */
	struct ng_case *c = &g->cases[g->ncases - 1];
	if (!emu_format_same(fmt, &c->storage) && !emu_format_same(fmt, &c->compute) &&
	    !emu_format_same(fmt, &c->accum) && strcmp(fmt->name, "fp32") != 0)
		return NG_BAD(p,
		              "output %s in %s, a format its case's policy %s has no place for "
		              "(storage, compute, accum or fp32)",
		              f[1], fmt->name, c->pub.policy);
	/* every record takes at least 8 bytes: refuse lengths the rest of the
	 * file cannot hold before allocating them */
	if (!ng_u64(f[3], &len) || len == 0 || len > p->bytes_left / 8)
		return NG_BAD(p, "bad length '%s' for %s", f[3], f[1]);
	if (g->nouts == g->capouts) {
		size_t cap = g->capouts ? 2 * g->capouts : 16;
		struct ng_out *a = realloc(g->outs, cap * sizeof *a);
		if (!a)
			return ng_nomem(p);
		g->outs = a;
		g->capouts = cap;
	}
	struct ng_out *o = &g->outs[g->nouts];
	memset(o, 0, sizeof *o);
	o->exp = malloc((size_t)len * sizeof *o->exp);
	if (!o->exp)
		return ng_nomem(p);
	if (!ng_map_put(&g->by_target, f[1], g->nouts)) {
		free(o->exp);
		return ng_nomem(p);
	}
	g->nouts++;
	c->nouts++;
	o->fmt = fmt;
	o->pub.target = f[1];
	o->pub.name = slash + 1;
	o->pub.case_index = g->ncases - 1;
	o->pub.format = fmt->name;
	o->pub.bits = fmt->bits;
	o->pub.n = (size_t)len;
	o->pub.expected = o->exp;
	p->cur = o;
	return NM_GOLDEN_OK;
}

static nm_golden_status ng_record(struct ng_parse *p, char **f, size_t n)
{
	struct ng_out *o = p->cur;
	const emu_format *fmt;
	uint64_t idx;
	uint32_t b;
	const char *cls;

	if (!o)
		return NG_BAD(p, "a record outside an output (or an unknown line '%s')", f[0]);
	if (n != 4)
		return NG_BAD(p, "want: CASE/NAME INDEX HEX CLASS");
	if (strcmp(f[0], o->pub.target) != 0)
		return NG_BAD(p, "a record of %s inside output %s", f[0], o->pub.target);
	if (!ng_u64(f[1], &idx) || idx != o->filled)
		return NG_BAD(p, "index '%s' where %zu comes next", f[1], o->filled);
	fmt = o->fmt;
	if (!ng_hex(f[2], strlen(f[2]), fmt->bits, &b))
		return NG_BAD(p, "bad encoding '%s' for %s (hex, %d bits)", f[2], fmt->name,
		              fmt->bits);
	cls = ng_class(fmt, b);
	if (strcmp(cls, f[3]) != 0)
		return NG_BAD(p, "class '%s' for %s, which is %s", f[3], f[2], cls);
	o->exp[o->filled++] = b;
	if (o->filled == o->pub.n)
		p->cur = NULL;
	return NM_GOLDEN_OK;
}

/* "end CASE FNV": the case's checksum, the 64-bit FNV-1a of its bytes from
 * the start of its case line to the start of this line, in 16 hex digits. */
static nm_golden_status ng_end(struct ng_parse *p, char **f, size_t n)
{
	nm_golden *g = p->g;
	uint32_t hi, lo;

	if (n != 3 || strlen(f[2]) != 16 || strspn(f[2], "0123456789abcdef") != 16 ||
	    !ng_hex(f[2], 8, 32, &hi) || !ng_hex(f[2] + 8, 8, 32, &lo))
		return NG_BAD(p, "want: end CASE FNV (16 hex digits)");
	if (!ng_open_case(p, "end", f[1]))
		return NM_GOLDEN_ERR_FORMAT;
	struct ng_case *c = &g->cases[g->ncases - 1];
	if (c->nouts == 0)
		return NG_BAD(p, "case %s has no outputs", c->pub.id);
	uint64_t want = (uint64_t)hi << 32 | lo;
	uint64_t got = nm_fnv1a(p->orig + p->case_off, p->line_off - p->case_off);
	if (got != want)
		return NG_BAD(p,
		              "case %s: its lines do not match its checksum (%016llx, the lines "
		              "give %016llx): the file was edited or damaged; regenerate it with "
		              "nanmap golden update",
		              c->pub.id, (unsigned long long)want, (unsigned long long)got);
	p->open = false;
	return NM_GOLDEN_OK;
}

static bool ng_keyword(const char *s)
{
	return !strcmp(s, "case") || !strcmp(s, "status") || !strcmp(s, "ops") ||
	       !strcmp(s, "first") || !strcmp(s, "output") || !strcmp(s, "end");
}

/* The first line: the magic and the format's version. */
static nm_golden_status ng_magic(struct ng_parse *p, const char *line, size_t len)
{
	size_t m = strlen(NG_MAGIC), k = strlen(", format ");
	uint64_t v = 0;
	size_t i;

	if (len < m || memcmp(line, NG_MAGIC, m) != 0)
		return NG_BAD(p, "not a golden file (the first line must start with '%s')",
		              NG_MAGIC);
	if (len < m + k + 1 || memcmp(line + m, ", format ", k) != 0 || line[m + k] < '0' ||
	    line[m + k] > '9')
		return NG_BAD(p, "no format version (the first line must start with '%s, format "
		                 "%d')",
		              NG_MAGIC, NM_GOLDEN_FORMAT);
	for (i = m + k; i < len && line[i] >= '0' && line[i] <= '9' && v < 1000000; i++)
		v = v * 10 + (uint64_t)(line[i] - '0');
	if (v != NM_GOLDEN_FORMAT)
		return NG_BAD(p,
		              "format %llu, but this nanmap reads format %d (regenerate the file "
		              "with nanmap golden update)",
		              (unsigned long long)v, NM_GOLDEN_FORMAT);
	return NM_GOLDEN_OK;
}

static nm_golden_status ng_line(struct ng_parse *p, char *line, size_t len)
{
	char *f[NG_MAX_FIELDS];
	size_t n;
	nm_status st;

	if (p->line == 1)
		return ng_magic(p, line, len);
	st = nm_split_fields(line, len, f, NG_MAX_FIELDS, &n);
	if (st == NM_ERR_SYNTAX)
		return NG_BAD(p, "a NUL byte");
	if (st != NM_OK)
		return NG_BAD(p, "too many fields");
	if (n == 0 || f[0][0] == '#')
		return NM_GOLDEN_OK;
	if (p->cur && !ng_keyword(f[0]))
		return ng_record(p, f, n);
	if (p->cur && ng_complete(p) != NM_GOLDEN_OK)
		return NM_GOLDEN_ERR_FORMAT;
	if (!strcmp(f[0], "end"))
		return ng_end(p, f, n);
	if (!strcmp(f[0], "case"))
		return ng_case(p, f, n);
	if (!strcmp(f[0], "status"))
		return ng_status(p, f, n);
	if (!strcmp(f[0], "ops") || !strcmp(f[0], "first"))
		return ng_stats(p, f, n);
	if (!strcmp(f[0], "output"))
		return ng_output(p, f, n);
	return ng_record(p, f, n);
}

void nm_golden_close(nm_golden *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nouts; i++)
		free(g->outs[i].exp);
	free(g->outs);
	free(g->cases);
	free(g->by_id.s);
	free(g->by_target.s);
	free(g->text);
	free(g);
}

nm_golden_status nm_golden_parse(const void *buf, size_t len, const char *name, nm_golden **out,
                                 char *err, size_t errlen)
{
	struct ng_parse p;
	nm_golden *g;
	nm_golden_status st = NM_GOLDEN_OK;

	*out = NULL;
	name = name ? name : "(golden)";
	g = calloc(1, sizeof *g);
	if (!g || !(g->text = malloc(len + 1))) {
		free(g);
		return ng_fail(err, errlen, NM_GOLDEN_ERR_NOMEM, "%s: out of memory", name);
	}
	if (len)
		memcpy(g->text, buf, len);
	g->text[len] = '\0';
	memset(&p, 0, sizeof p);
	p.g = g;
	p.name = name;
	p.err = err;
	p.errlen = errlen;
	p.orig = buf;
	char *s = g->text, *end = g->text + len;
	if (len == 0) {
		p.line = 1;
		st = NG_BAD(&p, "an empty file, not a golden file");
	}
	while (st == NM_GOLDEN_OK && s < end) {
		char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t l = nl ? (size_t)(nl - s) : (size_t)(end - s);
		p.line++;
		p.bytes_left = (size_t)(end - s) - l;
		p.line_off = (size_t)(s - g->text);
		st = ng_line(&p, s, l);
		s += l + (nl != NULL);
	}
	if (st == NM_GOLDEN_OK)
		st = ng_complete(&p);
	if (st == NM_GOLDEN_OK && p.open)
		st = NG_BAD(&p, "case %s has no end line (a truncated file?)",
		            g->cases[g->ncases - 1].pub.id);
	if (st == NM_GOLDEN_OK && g->nouts == 0)
		st = NG_BAD(&p, "no outputs");
	if (st != NM_GOLDEN_OK) {
		nm_golden_close(g);
		return st;
	}
	*out = g;
	return NM_GOLDEN_OK;
}

/* The whole file in memory, *len its size: at most cap bytes, else an error
 * naming the file and the limit (what says what the limit is for). With
 * magic, the first bytes must be it, so a stream that is not a golden file
 * (/dev/zero) is refused at its first block, not at the cap. */
static nm_golden_status ng_slurp(const char *path, size_t cap_bytes, const char *what,
                                 const char *magic, char **buf, size_t *len, char *err,
                                 size_t errlen)
{
	FILE *fp = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	char *b;

	*buf = NULL;
	*len = 0;
	if (!fp)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_IO, "%s: cannot open: %s", path,
		               strerror(errno));
	b = malloc(cap);
	while (b) {
		n += fread(b + n, 1, cap - n, fp);
		if (magic && n >= strlen(magic) && memcmp(b, magic, strlen(magic)) != 0)
			break; /* the parser says what is wrong */
		if (n < cap)
			break;
		if (n > cap_bytes) {
			free(b);
			fclose(fp);
			return ng_fail(err, errlen, NM_GOLDEN_ERR_FORMAT,
			               "%s: larger than %zu bytes, the limit for %s", path,
			               cap_bytes, what);
		}
		size_t nc = cap * 2 > cap_bytes + 1 ? cap_bytes + 1 : cap * 2;
		char *nb = realloc(b, nc);
		if (!nb) {
			free(b);
			b = NULL;
			break;
		}
		b = nb;
		cap = nc;
	}
	if (!b) {
		fclose(fp);
		return ng_fail(err, errlen, NM_GOLDEN_ERR_NOMEM, "%s: out of memory", path);
	}
	if (ferror(fp)) {
		int e = errno;
		fclose(fp);
		free(b);
		return ng_fail(err, errlen, NM_GOLDEN_ERR_IO, "%s: cannot read: %s", path,
		               strerror(e));
	}
	fclose(fp);
	if (n > cap_bytes) {
		free(b);
		return ng_fail(err, errlen, NM_GOLDEN_ERR_FORMAT,
		               "%s: larger than %zu bytes, the limit for %s", path, cap_bytes,
		               what);
	}
	*buf = b;
	*len = n;
	return NM_GOLDEN_OK;
}

nm_golden_status nm_golden_open(const char *path, nm_golden **out, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	nm_golden_status st;

	*out = NULL;
	st = ng_slurp(path, NG_MAX_BYTES, "a golden file", NG_MAGIC, &buf, &len, err, errlen);
	if (st != NM_GOLDEN_OK)
		return st;
	st = nm_golden_parse(buf, len, path, out, err, errlen);
	free(buf);
	return st;
}

size_t nm_golden_case_count(const nm_golden *g)
{
	return g->ncases;
}

const nm_golden_case *nm_golden_case_at(const nm_golden *g, size_t i)
{
	return i < g->ncases ? &g->cases[i].pub : NULL;
}

size_t nm_golden_output_count(const nm_golden *g)
{
	return g->nouts;
}

const nm_golden_output *nm_golden_output_at(const nm_golden *g, size_t i)
{
	return i < g->nouts ? &g->outs[i].pub : NULL;
}

const nm_golden_output *nm_golden_find(const nm_golden *g, const char *target)
{
	size_t i = ng_map_get(&g->by_target, target);

	if (i != NG_NONE)
		return &g->outs[i].pub;
	i = ng_map_get(&g->by_id, target);
	if (i != NG_NONE && g->cases[i].nouts == 1)
		return &g->outs[g->cases[i].first_out].pub;
	return NULL;
}

/* ---- comparing ---- */

void nm_golden_report_free(nm_golden_report *rep)
{
	free(rep->mismatches);
	memset(rep, 0, sizeof *rep);
}

nm_golden_status nm_golden_compare(const nm_golden *g, const char *target, const uint32_t *actual,
                                   size_t n, const nm_golden_opts *opts, nm_golden_report *rep,
                                   char *err, size_t errlen)
{
	const nm_golden_output *o = nm_golden_find(g, target);
	nm_golden_opts dflt = NM_GOLDEN_OPTS_DEFAULT;
	const emu_format *f;

	memset(rep, 0, sizeof *rep);
	if (!opts)
		opts = &dflt;
	if (!o)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_NOTFOUND,
		               "no output '%s' (CASE/OUTPUT; a bare CASE only when it has one)",
		               target);
	f = emu_format_by_name(o->format);
	if (n != o->n)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_LENGTH,
		               "%s: %zu actual elements, %zu expected", o->target, n, o->n);
	for (size_t i = 0; i < n; i++)
		if (actual[i] & ~ng_mask(f->bits))
			return ng_fail(err, errlen, NM_GOLDEN_ERR_DTYPE,
			               "%s: actual element %zu, 0x%x, is wider than %s (%d bits)",
			               o->target, i, (unsigned)actual[i], f->name, f->bits);
	for (size_t i = 0; i < n; i++) {
		uint32_t e = o->expected[i], a = actual[i];
		emu_class ce = emu_classify(f, e), ca = emu_classify(f, a);
		uint64_t d = ng_ulp(f, e, a);
		bool match;

		if (ce == EMU_CLASS_NAN && ca == EMU_CLASS_NAN) {
			d = 0;
			match =
			    opts->nan_sign == NM_GOLDEN_NAN_IGNORE || ng_neg(f, e) == ng_neg(f, a);
		} else if (ce == EMU_CLASS_ZERO && ca == EMU_CLASS_ZERO) {
			match = ng_neg(f, e) == ng_neg(f, a);
		} else {
			match = e == a || (d != NM_GOLDEN_ULP_INF && d <= opts->ulp);
		}
		rep->checked++;
		if (d > rep->max_ulp)
			rep->max_ulp = d;
		if (match)
			continue;
		if (!rep->mismatches) {
			rep->mismatches = malloc(n * sizeof *rep->mismatches);
			if (!rep->mismatches)
				return ng_fail(err, errlen, NM_GOLDEN_ERR_NOMEM, "out of memory");
		}
		rep->mismatches[rep->mismatched++] = (nm_golden_mismatch){i, e, a, d};
	}
	return NM_GOLDEN_OK;
}

/* ---- actual outputs from files ---- */

static bool ng_same_format(const emu_format *a, const char *name)
{
	const emu_format *b = emu_format_by_name(name);
	return b && emu_format_same(a, b);
}

/* A .npy read (from a file when path, else from memory) as encodings of f. */
static nm_golden_status ng_act_npy(const char *path, const void *buf, size_t len, const char *name,
                                   const emu_format *f, uint32_t **vals, size_t *n, char *err,
                                   size_t errlen)
{
	nm_npy a;
	char e[256];
	nm_npy_status st = path ? nm_npy_read(path, &a, e, sizeof e)
	                        : nm_npy_read_mem(buf, len, name, &a, e, sizeof e);

	if (st == NM_NPY_ERR_NOMEM)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_NOMEM, "%s", e);
	if (st == NM_NPY_ERR_IO)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_IO, "%s", e);
	if (st == NM_NPY_ERR_DATA)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_LENGTH, "%s", e);
	if (st != NM_NPY_OK)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_FORMAT, "%s", e);
	bool fits;
	switch (a.dtype) {
	case NM_NPY_U1:
	case NM_NPY_U2:
	case NM_NPY_U4:
		fits = nm_npy_dtype_size(a.dtype) == (size_t)ng_width_bytes(f->bits);
		break;
	case NM_NPY_F2:
		fits = ng_same_format(f, "fp16");
		break;
	case NM_NPY_F4:
		fits = ng_same_format(f, "fp32");
		break;
	default:
		fits = false;
	}
	if (!fits) {
		nm_npy_dtype t = a.dtype;
		nm_npy_free(&a);
		return ng_fail(err, errlen, NM_GOLDEN_ERR_DTYPE,
		               "%s: dtype %s does not hold %s encodings (use %s%s)", name,
		               nm_npy_dtype_name(t), f->name,
		               nm_npy_dtype_name(ng_width_bytes(f->bits) == 1   ? NM_NPY_U1
		                                 : ng_width_bytes(f->bits) == 2 ? NM_NPY_U2
		                                                                : NM_NPY_U4),
		               ng_same_format(f, "fp16")   ? " or <f2"
		               : ng_same_format(f, "fp32") ? " or <f4"
		                                           : "");
	}
	for (size_t i = 0; i < a.count; i++)
		if (a.raw[i] & ~ng_mask(f->bits)) {
			nm_golden_status r =
			    ng_fail(err, errlen, NM_GOLDEN_ERR_DTYPE,
			            "%s: element %zu, 0x%x, is wider than %s (%d bits)", name, i,
			            (unsigned)a.raw[i], f->name, f->bits);
			nm_npy_free(&a);
			return r;
		}
	*vals = a.raw; /* ours now */
	*n = a.count;
	a.raw = NULL;
	nm_npy_free(&a);
	if (!*vals) { /* a zero-length array */
		*vals = malloc(1);
		if (!*vals)
			return ng_fail(err, errlen, NM_GOLDEN_ERR_NOMEM, "out of memory");
	}
	return NM_GOLDEN_OK;
}

static nm_golden_status ng_act_hex(const char *s, size_t len, const char *name, const emu_format *f,
                                   uint32_t **vals, size_t *n, char *err, size_t errlen)
{
	size_t cap = 64, k = 0, line = 0;
	uint32_t *v = malloc(cap * sizeof *v);
	const char *end = s + len;

	if (!v)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_NOMEM, "out of memory");
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end, *a = s;
		line++;
		s = nl ? nl + 1 : end;
		while (a < e && (*a == ' ' || *a == '\t'))
			a++;
		while (e > a && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (a == e || *a == '#')
			continue;
		if (k == cap) {
			uint32_t *nv = realloc(v, 2 * cap * sizeof *v);
			if (!nv) {
				free(v);
				return ng_fail(err, errlen, NM_GOLDEN_ERR_NOMEM, "out of memory");
			}
			v = nv;
			cap *= 2;
		}
		if (!ng_hex(a, (size_t)(e - a), 32, &v[k])) {
			free(v);
			return ng_fail(err, errlen, NM_GOLDEN_ERR_FORMAT,
			               "%s:%zu: not an encoding in hex (one per line, 0x optional)",
			               name, line);
		}
		if (v[k] & ~ng_mask(f->bits)) {
			nm_golden_status r = ng_fail(err, errlen, NM_GOLDEN_ERR_DTYPE,
			                             "%s:%zu: 0x%x is wider than %s (%d bits)",
			                             name, line, (unsigned)v[k], f->name, f->bits);
			free(v);
			return r;
		}
		k++;
	}
	*vals = v;
	*n = k;
	return NM_GOLDEN_OK;
}

static nm_golden_status ng_act_raw(const unsigned char *s, size_t len, const char *name,
                                   const emu_format *f, uint32_t **vals, size_t *n, char *err,
                                   size_t errlen)
{
	size_t w = (size_t)ng_width_bytes(f->bits), k = len / w;
	uint32_t *v;

	if (len % w)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_LENGTH,
		               "%s: %zu bytes is not a whole number of %zu-byte %s encodings "
		               "(truncated?)",
		               name, len, w, f->name);
	v = malloc((k ? k : 1) * sizeof *v);
	if (!v)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < k; i++) {
		uint32_t x = 0;
		for (size_t j = w; j-- > 0;)
			x = x << 8 | s[i * w + j];
		if (x & ~ng_mask(f->bits)) {
			nm_golden_status r =
			    ng_fail(err, errlen, NM_GOLDEN_ERR_DTYPE,
			            "%s: element %zu, 0x%x, is wider than %s (%d bits)", name, i,
			            (unsigned)x, f->name, f->bits);
			free(v);
			return r;
		}
		v[i] = x;
	}
	*vals = v;
	*n = k;
	return NM_GOLDEN_OK;
}

nm_golden_status nm_golden_read_actual_mem(const void *buf, size_t len, const char *name,
                                           nm_golden_act_kind kind, const nm_golden_output *o,
                                           uint32_t **vals, size_t *n, char *err, size_t errlen)
{
	const emu_format *f = emu_format_by_name(o->format);

	*vals = NULL;
	*n = 0;
	name = name ? name : "(actual)";
	if (!f)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_NOTFOUND, "%s: unknown format '%s'", name,
		               o->format);
	switch (kind) {
	case NM_GOLDEN_ACT_NPY:
		return ng_act_npy(NULL, buf, len, name, f, vals, n, err, errlen);
	case NM_GOLDEN_ACT_HEX:
		return ng_act_hex(buf, len, name, f, vals, n, err, errlen);
	default:
		return ng_act_raw(buf, len, name, f, vals, n, err, errlen);
	}
}

static bool ng_ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && !strcmp(s + a - b, tail);
}

nm_golden_status nm_golden_read_actual(const char *path, const nm_golden_output *o, uint32_t **vals,
                                       size_t *n, char *err, size_t errlen)
{
	char *buf, head[6], what[160];
	size_t len, cap;
	nm_golden_act_kind kind = NM_GOLDEN_ACT_RAW;
	const emu_format *f = emu_format_by_name(o->format);
	FILE *fp;

	*vals = NULL;
	*n = 0;
	if (!f)
		return ng_fail(err, errlen, NM_GOLDEN_ERR_NOTFOUND, "%s: unknown format '%s'", path,
		               o->format);
	/* the kind from the first bytes (the file may be a pipe: open it once
	 * here only when it is not one the readers below open again) */
	if (ng_ends_with(path, ".npy"))
		kind = NM_GOLDEN_ACT_NPY; /* the reader names what is wrong with it */
	else if (ng_ends_with(path, ".txt") || ng_ends_with(path, ".hex"))
		kind = NM_GOLDEN_ACT_HEX;
	else if ((fp = fopen(path, "rb")) != NULL) {
		struct stat sb;
		if (fstat(fileno(fp), &sb) == 0 && S_ISREG(sb.st_mode) &&
		    fread(head, 1, 6, fp) == 6 && !memcmp(head, "\x93NUMPY", 6))
			kind = NM_GOLDEN_ACT_NPY;
		fclose(fp);
	}
	if (kind == NM_GOLDEN_ACT_NPY)
		return ng_act_npy(path, NULL, 0, path, f, vals, n, err, errlen);
	/* read no more than the output can take: raw, its n encodings; hex
	 * text, 32 bytes an encoding and 64 KiB of comments */
	size_t w = (size_t)ng_width_bytes(f->bits);
	if (kind == NM_GOLDEN_ACT_RAW) {
		cap = o->n * w;
		snprintf(what, sizeof what, "%s (%zu encodings of %zu byte%s)", o->target, o->n, w,
		         w == 1 ? "" : "s");
	} else {
		cap = ((size_t)1 << 16) + 32 * o->n;
		snprintf(what, sizeof what, "a hex file of %s's %zu encodings (64 KiB + 32 bytes "
		         "each)", o->target, o->n);
	}
	nm_golden_status st = ng_slurp(path, cap, what, NULL, &buf, &len, err, errlen);
	if (st != NM_GOLDEN_OK)
		return st;
	st = nm_golden_read_actual_mem(buf, len, path, kind, o, vals, n, err, errlen);
	free(buf);
	return st;
}
