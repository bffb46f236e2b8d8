/*
 * nm_buf.h — a growable string in memory: nanmap's reports, CSV files,
 * journals and golden texts are built in one and put in place at once
 * (nm_file_write), so a failed run never leaves half a file.
 *
 * Why a sticky oom flag rather than a status per append: a report is a few
 * hundred appends, and one check before the text is used says whether all
 * of them happened. Once an allocation fails (or a size would overflow
 * size_t), oom is set, the text stays as it was, and every later append
 * does nothing and returns false.
 */
#ifndef NANMAP_NM_BUF_H
#define NANMAP_NM_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Zero-initialise ({0}) before the first append. */
typedef struct nm_buf {
	char *s;    /* the text, NUL-terminated; NULL until the first append */
	size_t len; /* its length, the NUL not counted */
	size_t cap; /* bytes allocated */
	bool oom;   /* an allocation failed: the text is incomplete */
} nm_buf;

/* Room for more bytes after len (and the NUL); false when it cannot be had. */
bool nm_buf_reserve(nm_buf *b, size_t more);
/* Append n bytes (any bytes, NUL included), a string, a character. */
bool nm_buf_putn(nm_buf *b, const void *p, size_t n);
bool nm_buf_put(nm_buf *b, const char *s);
bool nm_buf_putc(nm_buf *b, char c);
/* Append printf's output; false also when vsnprintf fails (then oom). */
bool nm_buf_printf(nm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool nm_buf_vprintf(nm_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* s as one CSV field (RFC 4180): as it is, or between double quotes, each
 * quote doubled, when it holds a comma or a quote (custom format names and
 * policies contain commas). Control bytes, line ends included (an escape
 * sequence in a tensor's name), are shown as \xNN, as nm_shown shows them:
 * a CSV on a terminal cannot drive it, and a record is one line. */
bool nm_buf_csv(nm_buf *b, const char *s);
/* s as nm_shown shows it: each control byte as \xNN. */
bool nm_buf_put_shown(nm_buf *b, const char *s);
/* s as a JSON string: between double quotes, '"' and '\\' escaped, control
 * characters (and DEL) as \u00XX; other bytes as they are (UTF-8 passes). */
bool nm_buf_json_str(nm_buf *b, const char *s);
/* The same escaped only where JSON requires it, DEL kept as it is: a
 * .safetensors header's names, as the reference writer (serde_json) writes
 * them. */
bool nm_buf_json_str_min(nm_buf *b, const char *s);
/* v as JSON: %.17g when finite, else the string "inf", "-inf" or "nan"
 * (JSON has no such numbers). */
bool nm_buf_json_num(nm_buf *b, double v);

/* The text, "" while nothing was appended. */
const char *nm_buf_str(const nm_buf *b);
/* Empty again, oom cleared; the memory is kept for the next text. */
void nm_buf_reset(nm_buf *b);
/* The memory freed; b is as {0} again. */
void nm_buf_free(nm_buf *b);

#endif
