/*
 * nm_buf.c — the growable string (nm_buf.h).
 *
 * Growth doubles from 256 bytes, so n appends cost O(n) copies; every size
 * is checked against SIZE_MAX before it is added or doubled.
 */
#include "emu/io/nm_buf.h"

#include <math.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/io/nm_parse.h"

#define NB_FIRST 256

bool nm_buf_reserve(nm_buf *b, size_t more)
{
	if (b->oom)
		return false;
	if (more > SIZE_MAX - 1 - b->len) {
		b->oom = true;
		return false;
	}
	size_t need = b->len + more + 1; /* the NUL */
	if (need <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : NB_FIRST;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	char *s = realloc(b->s, cap);
	if (!s) {
		b->oom = true;
		return false;
	}
	b->s = s;
	b->cap = cap;
	return true;
}

bool nm_buf_putn(nm_buf *b, const void *p, size_t n)
{
	if (!nm_buf_reserve(b, n))
		return false;
	if (n)
		memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
	return true;
}

bool nm_buf_put(nm_buf *b, const char *s)
{
	return nm_buf_putn(b, s, strlen(s));
}

bool nm_buf_putc(nm_buf *b, char c)
{
	return nm_buf_putn(b, &c, 1);
}

bool nm_buf_vprintf(nm_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	size_t room = b->cap - b->len;
	int n;

	if (b->oom)
		return false;
	/* print into the room left; when it is too small, grow and print again */
	va_copy(aq, ap);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive */
	n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, aq);
	va_end(aq);
	if (n >= 0 && (size_t)n >= room && nm_buf_reserve(b, (size_t)n)) {
		/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive */
		vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	}
	if (n < 0 || (size_t)n >= b->cap - b->len) {
		/* no room after all: what a cut print left beyond len goes */
		b->oom = true;
		if (b->s)
			b->s[b->len] = '\0';
		return false;
	}
	b->len += (size_t)n;
	return true;
}

bool nm_buf_printf(nm_buf *b, const char *fmt, ...)
{
	va_list ap;
	bool ok;

	va_start(ap, fmt);
	ok = nm_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return ok;
}

static bool nm_ctl(char c)
{
	return (unsigned char)c < 0x20 || c == 0x7f;
}

/* How many characters from s on need no escape: neither a control character
 * nor, with dq, a double quote. */
static size_t nm_plain_span(const char *s, bool dq)
{
	size_t n = 0;
	while (s[n] && !nm_ctl(s[n]) && !(dq && s[n] == '"'))
		n++;
	return n;
}

/* s with control characters as \xHH (and, with dq, '"' doubled), runs of
 * plain characters copied at once. */
static bool nm_buf_escaped(nm_buf *b, const char *s, bool dq)
{
	for (;;) {
		size_t n = nm_plain_span(s, dq);
		nm_buf_putn(b, s, n);
		s += n;
		if (!*s)
			break;
		if (*s == '"')
			nm_buf_putn(b, "\"\"", 2);
		else
			nm_buf_printf(b, "\\x%02x", (unsigned)(unsigned char)*s);
		s++;
	}
	return !b->oom;
}

bool nm_buf_put_shown(nm_buf *b, const char *s)
{
	return nm_buf_escaped(b, s, false);
}

bool nm_buf_csv(nm_buf *b, const char *s)
{
	bool quote = strpbrk(s, ",\"") != NULL;

	if (quote)
		nm_buf_putc(b, '"');
	nm_buf_escaped(b, s, true);
	if (quote)
		nm_buf_putc(b, '"');
	return !b->oom;
}

const char *nm_buf_str(const nm_buf *b)
{
	return b->s ? b->s : "";
}

void nm_buf_reset(nm_buf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->s)
		b->s[0] = '\0';
}

void nm_buf_free(nm_buf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

/* s as a JSON string; DEL escaped too when del. */
static bool nm_json_str(nm_buf *b, const char *s, bool del)
{
	nm_buf_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			nm_buf_putc(b, '\\');
			nm_buf_putc(b, (char)*p);
		} else if (*p < 0x20 || (del && *p == 0x7f)) {
			nm_buf_printf(b, "\\u%04x", *p);
		} else {
			nm_buf_putc(b, (char)*p);
		}
	}
	return nm_buf_putc(b, '"');
}

bool nm_buf_json_str(nm_buf *b, const char *s)
{
	return nm_json_str(b, s, true);
}

bool nm_buf_json_str_min(nm_buf *b, const char *s)
{
	return nm_json_str(b, s, false);
}

bool nm_buf_json_num(nm_buf *b, double v)
{
	char t[NM_NUM_LEN];
	if (isfinite(v))
		return nm_buf_printf(b, "%.17g", v);
	return nm_buf_json_str(b, nm_fmt_double(v, t, sizeof t));
}
