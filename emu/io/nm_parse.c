/*
 * nm_parse.c — strict parsers for nanmap's command line (see nm_parse.h).
 *
 * nanmap rounds the exact value of the decimal the user typed, not the
 * double nearest to it. strtod() only checks the syntax (so the accepted
 * language is exactly C's); MPFR then reads the same text truncated to 64
 * bits with a sticky bit, and emu_round_core() rounds that once. Rounding
 * through double first would round twice: "1.00146484374999999999999" is
 * below the fp16 halfway point 1.00146484375 but its nearest double is that
 * halfway point, which then ties to even the wrong way.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpfr.h>

#include "emu/io/nm_parse.h"

/*
 * Magnitudes of 2^NM_EXP_HUGE and more overflow every format (ebits <= 8
 * keeps every max below 2^256) and those below 2^NM_EXP_TINY lie far below
 * a quarter of every smallest subnormal (at least 2^-1074): every rounding
 * mode, SR's 32-bit comparison included, treats all numbers of one sign
 * beyond these bounds alike. nm_round_number hands emu_round_core one
 * representative for each side, which keeps the core's scale factors inside
 * double's range (it builds 2^(e-p+1) from bits, so e must stay below 1024).
 */
#define NM_EXP_HUGE 1000
#define NM_EXP_TINY (-1200)

/* The significand width that nm_number carries. */
#define NM_MAN_BITS 64

static bool nm_word_eq(const char *s, const char *word)
{
	for (; *word; s++, word++)
		if (tolower((unsigned char)*s) != *word)
			return false;
	return *s == '\0';
}

/* The words strtod would also take ("infinity", "nan(...)") are refused. */
static bool nm_parse_word(const char *p, bool neg, nm_number *out)
{
	if (nm_word_eq(p, "inf"))
		out->kind = NM_NUM_INF;
	else if (nm_word_eq(p, "nan"))
		out->kind = NM_NUM_NAN;
	else
		return false;
	out->neg = neg;
	return true;
}

/* strtod must consume the whole token: this fixes the accepted syntax. */
static bool nm_strtod_whole(const char *s)
{
	char *end;
	int saved = errno;

	(void)strtod(s, &end);
	errno = saved; /* ERANGE is fine: the exact value is used, not this */
	return end != s && *end == '\0';
}

/* Just above 2^e (sticky: never exact), leading one at bit 63. */
static void nm_set_beyond(nm_number *out, bool neg, long e)
{
	out->kind = NM_NUM_FINITE;
	out->neg = neg;
	out->man = UINT64_C(1) << 63;
	out->exp = (int)(e - 63);
	out->sticky = true;
}

/*
 * Truncate the text's exact value to 64 bits plus sticky (MPFR, RNDZ). The
 * exponent is kept as it is; only a text beyond MPFR's own exponent range
 * (about 2^(+-2^30)) is replaced by the last number MPFR can hold.
 */
static nm_status nm_parse_exact(const char *s, nm_number *out)
{
	mpfr_t v;
	char *end;
	int ternary;
	mpfr_exp_t e;
	nm_status st = NM_OK;

	mpfr_init2(v, NM_MAN_BITS);
	ternary = mpfr_strtofr(v, s, &end, 0, MPFR_RNDZ);
	if (end == s || *end != '\0') {
		st = NM_ERR_SYNTAX; /* strtod and MPFR disagree: refuse */
		goto out;
	}
	out->kind = NM_NUM_FINITE;
	out->neg = mpfr_signbit(v) != 0;
	out->man = 0;
	out->exp = 0;
	out->sticky = false;
	if (mpfr_zero_p(v)) {
		/* an MPFR underflow is a tiny nonzero number, not zero */
		if (ternary != 0)
			nm_set_beyond(out, out->neg, (long)mpfr_get_emin() - 1);
		goto out;
	}
	e = mpfr_get_exp(v); /* |v| = m * 2^e, 1/2 <= m < 1 */
	mpfr_abs(v, v, MPFR_RNDN);
	mpfr_set_exp(v, NM_MAN_BITS); /* exact: now an integer of 64 bits */
	out->man = (uint64_t)mpfr_get_uj(v, MPFR_RNDZ);
	out->exp = (int)e - NM_MAN_BITS;
	out->sticky = ternary != 0;
out:
	mpfr_clear(v);
	return st;
}

nm_status nm_parse_number(const char *s, nm_number *out)
{
	const char *p = s;
	bool neg = false;

	if (!s || !out)
		return NM_ERR_SYNTAX;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (nm_parse_word(p, neg, out))
		return NM_OK;
	/* no blanks, no words: a digit or the point must follow the sign */
	if (!isdigit((unsigned char)*p) && *p != '.')
		return NM_ERR_SYNTAX;
	if (!nm_strtod_whole(s))
		return NM_ERR_SYNTAX;
	return nm_parse_exact(s, out);
}

void nm_number_from_double(double d, nm_number *out)
{
	int e;
	double m;

	memset(out, 0, sizeof(*out));
	out->neg = signbit(d) != 0;
	if (isnan(d)) {
		out->kind = NM_NUM_NAN;
		return;
	}
	if (isinf(d)) {
		out->kind = NM_NUM_INF;
		return;
	}
	out->kind = NM_NUM_FINITE;
	if (d == 0)
		return;
	m = frexp(fabs(d), &e); /* 1/2 <= m < 1, 53 bits: m * 2^64 is an exact integer */
	out->man = (uint64_t)ldexp(m, NM_MAN_BITS);
	out->exp = e - NM_MAN_BITS;
}

/* x's truncated value (man * 2^exp) in t, which has NM_MAN_BITS bits. */
static void nm_number_to_mpfr(const nm_number *x, mpfr_t t)
{
	mpfr_set_uj(t, x->man, MPFR_RNDN);
	mpfr_mul_2si(t, t, x->exp, MPFR_RNDN);
	if (x->neg)
		mpfr_neg(t, t, MPFR_RNDN);
}

bool nm_number_to_double(const nm_number *x, double *d)
{
	mpfr_t t;
	bool exact;

	if (x->kind == NM_NUM_NAN) {
		*d = NAN;
		return true;
	}
	if (x->kind == NM_NUM_INF) {
		*d = x->neg ? -INFINITY : INFINITY;
		return true;
	}
	if (x->sticky)
		return false;
	mpfr_init2(t, NM_MAN_BITS);
	nm_number_to_mpfr(x, t);
	*d = mpfr_get_d(t, MPFR_RNDN);
	exact = mpfr_cmp_d(t, *d) == 0 && isfinite(*d);
	if (x->man == 0)
		*d = x->neg ? -0.0 : 0.0;
	mpfr_clear(t);
	return exact;
}

int nm_number_cmp(const nm_number *x, double d)
{
	mpfr_t t;
	int c;

	if (x->kind == NM_NUM_NAN || isnan(d))
		return 2;
	if (x->kind == NM_NUM_INF) {
		if (d == (x->neg ? -INFINITY : INFINITY))
			return 0;
		return x->neg ? -1 : 1;
	}
	mpfr_init2(t, NM_MAN_BITS);
	nm_number_to_mpfr(x, t);
	c = mpfr_cmp_d(t, d);
	mpfr_clear(t);
	if (c == 0 && x->sticky) /* the dropped bits point away from zero */
		return x->neg ? -1 : 1;
	return c < 0 ? -1 : c > 0 ? 1 : 0;
}

emu_result nm_round_number(const emu_format *f, const nm_number *x, const emu_env *env)
{
	emu_result r = {0, 0};
	nm_number y = *x;
	double v;

	if (x->kind == NM_NUM_NAN)
		return emu_from_double(f, NAN, env);
	if (x->kind == NM_NUM_INF)
		return emu_from_double(f, x->neg ? -INFINITY : INFINITY, env);
	if (x->man == 0)
		return emu_from_double(f, x->neg ? -0.0 : 0.0, env);
	if (x->exp + 63 >= NM_EXP_HUGE)
		nm_set_beyond(&y, x->neg, NM_EXP_HUGE);
	else if (x->exp + 63 < NM_EXP_TINY)
		nm_set_beyond(&y, x->neg, NM_EXP_TINY - 1);
	v = emu_round_core(f, y.neg, y.man, y.exp, y.sticky, env, &r.flags);
	r.bits = emu_encode(f, v);
	return r;
}

nm_status nm_exact_bits(const emu_format *f, const nm_number *x, emu_bits *out)
{
	emu_env env = EMU_ENV_DEFAULT;
	emu_result r = nm_round_number(f, x, &env);
	emu_class c = emu_classify(f, r.bits);

	if (r.flags != 0)
		return NM_ERR_INEXACT;
	if (x->kind == NM_NUM_NAN) {
		if (c != EMU_CLASS_NAN)
			return NM_ERR_INEXACT;
	} else if (c == EMU_CLASS_NAN || nm_number_cmp(x, emu_decode(f, r.bits)) != 0) {
		return NM_ERR_INEXACT;
	}
	*out = r.bits;
	return NM_OK;
}

static int nm_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Digits in base 10 or 16, all of s, at most max. */
static nm_status nm_parse_digits(const char *s, unsigned base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	int d;

	if (*s == '\0')
		return NM_ERR_SYNTAX;
	for (; *s; s++) {
		d = base == 16 ? nm_hex_digit(*s) : (*s >= '0' && *s <= '9' ? *s - '0' : -1);
		if (d < 0)
			return NM_ERR_SYNTAX;
		if (v > (max - (uint64_t)d) / base)
			return NM_ERR_RANGE;
		v = v * base + (uint64_t)d;
	}
	*out = v;
	return NM_OK;
}

static bool nm_has_hex_prefix(const char *s)
{
	return s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

nm_status nm_parse_bits(const char *s, const emu_format *f, emu_bits *out)
{
	uint64_t max, v;
	nm_status st;

	if (!s || !nm_has_hex_prefix(s))
		return NM_ERR_SYNTAX;
	max = f->bits >= 32 ? UINT32_MAX : (UINT64_C(1) << f->bits) - 1;
	st = nm_parse_digits(s + 2, 16, max, &v);
	if (st == NM_OK)
		*out = (emu_bits)v;
	return st;
}

nm_status nm_parse_u64(const char *s, uint64_t *out)
{
	if (!s)
		return NM_ERR_SYNTAX;
	if (nm_has_hex_prefix(s))
		return nm_parse_digits(s + 2, 16, UINT64_MAX, out);
	return nm_parse_digits(s, 10, UINT64_MAX, out);
}

/* Does the list item starting at s (up to ',' or the end) begin a format? */
static bool nm_starts_format(const char *s)
{
	char name[sizeof(((emu_format *)0)->name)];
	size_t len = strcspn(s, ",");

	if (strncmp(s, "p=", 2) == 0)
		return true;
	if (len >= sizeof(name))
		return false;
	memcpy(name, s, len);
	name[len] = '\0';
	return emu_format_by_name(name) != NULL;
}

nm_status nm_split_formats(char *list, char **items, size_t max, size_t *n)
{
	char *p;

	*n = 0;
	if (!list || *list == '\0' || *list == ',' || max == 0)
		return NM_ERR_SYNTAX;
	items[(*n)++] = list;
	for (p = strchr(list, ','); p; p = strchr(p + 1, ',')) {
		if (p[1] == '\0' || p[1] == ',')
			return NM_ERR_SYNTAX;
		/* only a custom spec (it starts with p=) holds commas */
		if (strncmp(items[*n - 1], "p=", 2) == 0 && !nm_starts_format(p + 1))
			continue;
		if (*n == max)
			return NM_ERR_RANGE;
		*p = '\0';
		items[(*n)++] = p + 1;
	}
	return NM_OK;
}

static bool nm_is_blank(char c)
{
	return c == ' ' || c == '\t';
}

nm_status nm_split_fields(char *line, size_t len, char **fields, size_t max, size_t *n)
{
	size_t i = 0;

	*n = 0;
	if (memchr(line, '\0', len))
		return NM_ERR_SYNTAX;
	if (len > 0 && line[len - 1] == '\n')
		len--;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	line[len] = '\0';
	for (;;) {
		while (i < len && nm_is_blank(line[i]))
			i++;
		if (i == len)
			return NM_OK;
		if (*n == max)
			return NM_ERR_RANGE;
		fields[(*n)++] = line + i;
		while (i < len && !nm_is_blank(line[i]))
			i++;
		if (i == len)
			return NM_OK;
		line[i++] = '\0';
	}
}

const char *nm_fmt_g(double v, int prec, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "nan");
	else if (isinf(v))
		snprintf(buf, len, "%s", v < 0 ? "-inf" : "inf");
	else
		snprintf(buf, len, "%.*g", prec, v);
	return buf;
}

const char *nm_fmt_double(double v, char *buf, size_t len)
{
	return nm_fmt_g(v, 17, buf, len);
}

uint64_t nm_fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

const char *nm_fmt_bits(const emu_format *f, emu_bits b, char *buf, size_t len)
{
	snprintf(buf, len, "0x%0*" PRIx32, (f->bits + 3) / 4, (uint32_t)b);
	return buf;
}

const char *nm_shown(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool ctl = c < 0x20 || c == 0x7f;

		if (n + (ctl ? 4 : 1) >= len)
			break;
		if (ctl)
			n += (size_t)snprintf(buf + n, len - n, "\\x%02x", c);
		else
			buf[n++] = (char)c;
	}
	buf[n] = '\0';
	return buf;
}

size_t nm_fail_format(char *buf, size_t len, const char *fmt, va_list ap)
{
	static const char prefix[] = "nanmap: ";
	char msg[NM_FAIL_LEN];
	size_t n = sizeof(prefix) - 1;

	if (len < n + 2)
		return 0;
	memcpy(buf, prefix, n);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		msg[0] = '\0';
	nm_shown(msg, buf + n, len - n - 1); /* a long one is cut */
	n += strlen(buf + n);
	buf[n++] = '\n';
	buf[n] = '\0';
	return n;
}

/*
 * One write(2) for the whole line: three stdio calls on an unbuffered stderr
 * were three writes, and another process writing to the same pipe could land
 * between them.
 */
int nm_fail(const char *fmt, ...)
{
	char buf[NM_FAIL_LEN];
	va_list ap;
	size_t n, off = 0;

	va_start(ap, fmt);
	n = nm_fail_format(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fflush(stderr); /* anything stdio still holds goes first */
	while (off < n) {
		ssize_t w = write(STDERR_FILENO, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	return NM_EXIT_ERR;
}

/* ---- the one option parser ---- */

static const nm_opt *nm_opt_find(const nm_optparser *p, const char *a, const char **inline_val)
{
	*inline_val = NULL;
	for (size_t i = 0; i < p->ndefs; i++) {
		const nm_opt *d = &p->defs[i];
		size_t n = d->lng ? strlen(d->lng) : 0;

		if (d->shrt && !strcmp(a, d->shrt))
			return d;
		if (d->lng && !strncmp(a, d->lng, n) &&
		    (a[n] == '\0' || (a[n] == '=' && (d->flags & NM_OPTF_VALUE)))) {
			if (a[n] == '=')
				*inline_val = a + n + 1;
			return d;
		}
	}
	return NULL;
}

/* The name as the command line spelt it, without "=VALUE". */
static int nm_opt_name_len(const char *a)
{
	return (int)strcspn(a, "=");
}

/* The parser's error: into p->err when the caller takes it, else nm_fail's
 * line on stderr; NM_EXIT_ERR either way. */
static int nm_opt_fail(const nm_optparser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int nm_opt_fail(const nm_optparser *p, const char *fmt, ...)
{
	char msg[NM_FAIL_LEN];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
		msg[0] = '\0';
	va_end(ap);
	if (!p->err)
		return nm_fail("%s", msg);
	snprintf(p->err, p->errlen, "%s", msg);
	return NM_EXIT_ERR;
}

int nm_opt_parse(const nm_optparser *p, int argc, char **argv)
{
	const char *hint = p->help_cmd ? p->help_cmd : p->cmd;
	const char *given[64] = {0}; /* as typed, for each definition seen */
	bool only_args = false;
	int rc;

	if (p->ndefs > 64)
		return nm_opt_fail(p, "%s: too many option definitions", p->cmd);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *val;
		const nm_opt *d;
		size_t k;

		if (!only_args && !strcmp(a, "--")) {
			only_args = true;
			continue;
		}
		if (only_args || a[0] != '-' || a[1] == '\0' || (p->is_arg && p->is_arg(a))) {
			if (!p->arg)
				return nm_opt_fail(p, "unexpected argument '%s' for %s", a, p->cmd);
			rc = p->arg(p->ctx, a);
			if (rc)
				return rc;
			continue;
		}
		d = nm_opt_find(p, a, &val);
		if (!d && p->prog)
			return nm_opt_fail(p, "unknown option '%s' (try: %s --help)", a, p->prog);
		if (!d)
			return nm_opt_fail(p, "unknown option '%s' for %s (try: nanmap %s --help)",
			                   a, p->cmd, hint);
		k = (size_t)(d - p->defs);
		if (given[k] && (d->flags & NM_OPTF_VALUE) && !(d->flags & NM_OPTF_REPEAT))
			return nm_opt_fail(p, "option '%.*s' given twice", nm_opt_name_len(a), a);
		for (size_t j = 0; d->group && j < p->ndefs; j++)
			if (j != k && given[j] && p->defs[j].group == d->group)
				return nm_opt_fail(p, "%.*s and %.*s exclude each other (give one)",
				                   nm_opt_name_len(given[j]), given[j],
				                   nm_opt_name_len(a), a);
		given[k] = a;
		if ((d->flags & NM_OPTF_VALUE) && !val) {
			if (i + 1 >= argc)
				return nm_opt_fail(p, "option '%s' needs a value", a);
			val = argv[++i];
		}
		rc = p->take(p->ctx, d, val);
		if (rc)
			return rc;
	}
	return 0;
}

bool nm_wants_help(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	}
	return false;
}

int nm_print_help(const char *text)
{
	fputs(text, stdout);
	if (fflush(stdout) != 0 || ferror(stdout))
		return nm_fail("cannot write the output: %s", strerror(errno));
	return 0;
}

/*
 * Any number form the command line takes for a value (so "1e3" is 1000),
 * judged by its exact value: an error says whether the text is not a
 * number, not an integer, or an integer out of range.
 */
int nm_parse_count(const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	nm_number x;
	uint64_t v = 0;
	bool too_big = false;

	if (nm_parse_number(arg, &x) != NM_OK)
		return nm_fail("bad %s '%s': not a number (want an integer in [%" PRIu64 ", %" PRIu64
		               "])",
		               opt, arg, lo, hi);
	if (x.kind != NM_NUM_FINITE)
		goto not_integer;
	too_big = x.man != 0 && x.exp >= 1; /* |x| >= 2^64, integer or not */
	if (x.sticky && !too_big)
		goto not_integer;
	if (x.man != 0 && !too_big) {
		if (x.exp <= -64) {
			goto not_integer;
		} else if (x.exp < 0) {
			uint64_t frac = x.man & ((UINT64_C(1) << -x.exp) - 1);
			if (frac)
				goto not_integer;
			v = x.man >> -x.exp;
		} else {
			v = x.man;
		}
	}
	if (x.neg && x.man != 0)
		return nm_fail("bad %s '%s': too small (at least %" PRIu64 ")", opt, arg, lo);
	if (too_big || v > hi)
		return nm_fail("bad %s '%s': too large (at most %" PRIu64 ")", opt, arg, hi);
	if (v < lo)
		return nm_fail("bad %s '%s': too small (at least %" PRIu64 ")", opt, arg, lo);
	*out = v;
	return 0;
not_integer:
	return nm_fail("bad %s '%s': not an integer (want an integer in [%" PRIu64 ", %" PRIu64 "])",
	               opt, arg, lo, hi);
}
