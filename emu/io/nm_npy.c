/*
 * nm_npy.c — strict .npy reading and writing (see nm_npy.h).
 *
 * The format (numpy/lib/format.py): "\x93NUMPY", major, minor, the header
 * length (uint16 LE for 1.0; uint32 LE for 2.0 and 3.0), then the header: a
 * Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), }
 * padded with spaces and ended by '\n' (3.0 allows UTF-8 in it), then the
 * data. NumPy pads so that magic + length + header is a multiple of 64.
 *
 * The header is parsed by a small recursive-descent reader over the byte
 * range (never NUL-terminated, never read past its length); every length and
 * product is checked for overflow before use; nothing is allocated until the
 * data length has been checked against the shape.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu/core/emu.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_npy.h"

static const struct {
	const char *name; /* little-endian descr */
	char kind;        /* 'f' or 'u' */
	size_t size;
} dtypes[NM_NPY_NDTYPES] = {
    [NM_NPY_F2] = {"<f2", 'f', 2}, [NM_NPY_F4] = {"<f4", 'f', 4}, [NM_NPY_F8] = {"<f8", 'f', 8},
    [NM_NPY_U1] = {"|u1", 'u', 1}, [NM_NPY_U2] = {"<u2", 'u', 2}, [NM_NPY_U4] = {"<u4", 'u', 4},
};

const char *nm_npy_dtype_name(nm_npy_dtype t)
{
	return (unsigned)t < NM_NPY_NDTYPES ? dtypes[t].name : "?";
}

size_t nm_npy_dtype_size(nm_npy_dtype t)
{
	return (unsigned)t < NM_NPY_NDTYPES ? dtypes[t].size : 0;
}

static void fail_msg(char *err, size_t errlen, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The error line in err, and st as the value of the expression itself, so
 * that the status a caller returns is plain at the call (the analyzer does
 * not follow variadic calls, and took a failed header for a read one). */
#define fail(err, errlen, name, st, ...) (fail_msg(err, errlen, name, __VA_ARGS__), (st))

static void fail_msg(char *err, size_t errlen, const char *name, const char *fmt, ...)
{
	if (err && errlen) {
		int n = snprintf(err, errlen, "%s: ", name ? name : "(npy)");
		if (n >= 0 && (size_t)n < errlen) {
			va_list ap;
			va_start(ap, fmt);
			/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive */
			vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
}

static bool host_big_endian(void)
{
	const uint16_t one = 1;
	unsigned char c;
	memcpy(&c, &one, 1);
	return c == 0;
}

/* ---- the header: a Python dict literal ---- */

typedef struct {
	const unsigned char *base, *s, *end;
	int version;
	const char *name;
	char *err;
	size_t errlen;
	nm_npy_status st;
} hdr;

static void herr_msg(hdr *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* h->st = status, the message in h->err, false: written out in the expression,
 * as fail is, so that a parser returning false has plainly set h->st. */
#define herr(h, status, ...) ((h)->st = (status), herr_msg((h), __VA_ARGS__), false)

static void herr_msg(hdr *h, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized) */
	va_end(ap);
	fail_msg(h->err, h->errlen, h->name, "%s", msg);
}

static void skip_ws(hdr *h)
{
	while (h->s < h->end && *h->s && strchr(" \t\n\r\f\v", *h->s))
		h->s++;
}

/* A character for messages: printable or \xNN. */
static const char *show(hdr *h, char *buf, size_t len)
{
	if (h->s >= h->end)
		snprintf(buf, len, "end of header");
	else if (*h->s >= 0x20 && *h->s < 0x7f)
		snprintf(buf, len, "'%c'", *h->s);
	else
		snprintf(buf, len, "byte 0x%02x", *h->s);
	return buf;
}

static bool expect(hdr *h, char c, const char *what)
{
	skip_ws(h);
	if (h->s < h->end && *h->s == (unsigned char)c) {
		h->s++;
		return true;
	}
	char b[32];
	return herr(h, NM_NPY_ERR_FORMAT, "bad header: expected %s, found %s at header offset %ld",
	            what, show(h, b, sizeof b), (long)(h->s - h->base));
}

/* A quoted string without escapes; *p and *n give its contents. */
static bool string(hdr *h, const unsigned char **p, size_t *n)
{
	skip_ws(h);
	if (h->s >= h->end || (*h->s != '\'' && *h->s != '"')) {
		char b[32];
		return herr(h, NM_NPY_ERR_FORMAT, "bad header: expected a quoted string, found %s",
		            show(h, b, sizeof b));
	}
	unsigned char q = *h->s++;
	const unsigned char *start = h->s;
	while (h->s < h->end && *h->s != q) {
		if (*h->s == '\\' || *h->s == '\n' || *h->s == '\0')
			return herr(h, NM_NPY_ERR_FORMAT,
			            "bad header: escape, newline or NUL inside a string");
		h->s++;
	}
	if (h->s >= h->end)
		return herr(h, NM_NPY_ERR_FORMAT, "bad header: unterminated string");
	*p = start;
	*n = (size_t)(h->s - start);
	h->s++;
	return true;
}

static bool word(hdr *h, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(h->end - h->s) >= n && memcmp(h->s, w, n) == 0) {
		const unsigned char *after = h->s + n;
		if (after == h->end || !(*after == '_' || (*after >= '0' && *after <= '9') ||
		                         ((*after | 0x20) >= 'a' && (*after | 0x20) <= 'z'))) {
			h->s = after;
			return true;
		}
	}
	return false;
}

/* A non-negative Python int (no leading zeros; 'L' suffix in 1.0/2.0). */
static bool integer(hdr *h, uint64_t *v, bool *too_big)
{
	skip_ws(h);
	const unsigned char *start = h->s;
	uint64_t x = 0;
	*too_big = false;
	while (h->s < h->end && *h->s >= '0' && *h->s <= '9') {
		unsigned d = (unsigned)(*h->s - '0');
		if (x > (UINT64_MAX - d) / 10)
			*too_big = true;
		else
			x = x * 10 + d;
		h->s++;
	}
	if (h->s == start) {
		char b[32];
		return herr(h, NM_NPY_ERR_FORMAT,
		            "bad header: expected a non-negative integer in the shape, found %s",
		            show(h, b, sizeof b));
	}
	if (h->s - start > 1 && *start == '0')
		return herr(h, NM_NPY_ERR_FORMAT, "bad header: integer with a leading zero");
	if (h->version < 3 && h->s < h->end && *h->s == 'L')
		h->s++; /* Python 2 long, as NumPy's _filter_header accepts */
	*v = x;
	return true;
}

typedef struct {
	bool have_descr, have_fortran, have_shape;
	char descr[8];
	size_t descr_len;
	bool structured; /* descr was a list */
	bool fortran;
	int ndim;
	uint64_t shape[3]; /* up to 3 kept; ndim counts all */
	bool shape_too_big;
} header_dict;

static bool parse_shape(hdr *h, header_dict *d)
{
	if (!expect(h, '(', "'(' to open the shape tuple"))
		return false;
	d->ndim = 0;
	bool comma_after_last = false;
	for (;;) {
		skip_ws(h);
		if (h->s < h->end && *h->s == ')') {
			h->s++;
			break;
		}
		if (d->ndim > 0 && !comma_after_last)
			return expect(h, ',', "',' or ')' in the shape");
		uint64_t v = 0;
		bool big = false;
		if (!integer(h, &v, &big))
			return false;
		if (d->ndim < 3)
			d->shape[d->ndim] = v;
		if (big)
			d->shape_too_big = true;
		if (d->ndim == INT_MAX)
			return herr(h, NM_NPY_ERR_FORMAT, "bad header: shape too long");
		d->ndim++;
		skip_ws(h);
		comma_after_last = false;
		if (h->s < h->end && *h->s == ',') {
			h->s++;
			comma_after_last = true;
		}
	}
	if (d->ndim == 1 && !comma_after_last)
		return herr(h, NM_NPY_ERR_FORMAT,
		            "bad header: shape (n) is an int, not a tuple (write (n,))");
	return true;
}

static bool parse_value(hdr *h, header_dict *d, int key)
{
	skip_ws(h);
	if (key == 0) { /* descr */
		if (h->s < h->end && *h->s == '[') {
			d->structured = true;
			/* skip the list: brackets balanced, strings skipped */
			int depth = 0;
			while (h->s < h->end) {
				unsigned char c = *h->s;
				if (c == '\'' || c == '"') {
					const unsigned char *p = NULL;
					size_t n = 0;
					if (!string(h, &p, &n))
						return false;
					continue;
				}
				h->s++;
				if (c == '[' || c == '(')
					depth++;
				else if ((c == ']' || c == ')') && --depth == 0)
					return true;
			}
			return herr(h, NM_NPY_ERR_FORMAT, "bad header: unterminated descr list");
		}
		const unsigned char *p = NULL;
		size_t n = 0;
		if (!string(h, &p, &n))
			return false;
		d->descr_len = n;
		memcpy(d->descr, p, n < sizeof d->descr - 1 ? n : sizeof d->descr - 1);
		d->descr[n < sizeof d->descr - 1 ? n : sizeof d->descr - 1] = '\0';
		return true;
	}
	if (key == 1) { /* fortran_order */
		if (word(h, "True"))
			d->fortran = true;
		else if (word(h, "False"))
			d->fortran = false;
		else {
			char b[32];
			return herr(h, NM_NPY_ERR_FORMAT,
			            "bad header: fortran_order must be True or False, found %s",
			            show(h, b, sizeof b));
		}
		return true;
	}
	return parse_shape(h, d);
}

static bool parse_header(hdr *h, header_dict *d)
{
	static const char *const keys[] = {"descr", "fortran_order", "shape"};
	memset(d, 0, sizeof *d);
	if (!expect(h, '{', "'{' to open the header dict"))
		return false;
	bool need_comma = false;
	for (;;) {
		skip_ws(h);
		if (h->s < h->end && *h->s == '}') {
			h->s++;
			break;
		}
		if (need_comma && !expect(h, ',', "',' or '}' after a value"))
			return false;
		skip_ws(h);
		if (need_comma && h->s < h->end && *h->s == '}') {
			h->s++;
			break;
		}
		const unsigned char *p = NULL;
		size_t n = 0;
		if (!string(h, &p, &n))
			return false;
		int key = -1;
		for (int k = 0; k < 3; k++)
			if (n == strlen(keys[k]) && memcmp(p, keys[k], n) == 0)
				key = k;
		if (key < 0) {
			char shown[24];
			size_t m = n < 20 ? n : 20;
			for (size_t i = 0; i < m; i++)
				shown[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '?';
			shown[m] = '\0';
			return herr(h, NM_NPY_ERR_FORMAT, "bad header: unexpected key '%s%s'",
			            shown, n > 20 ? "..." : "");
		}
		bool *have = key == 0   ? &d->have_descr
		             : key == 1 ? &d->have_fortran
		                        : &d->have_shape;
		if (*have)
			return herr(h, NM_NPY_ERR_FORMAT, "bad header: duplicate key '%s'",
			            keys[key]);
		*have = true;
		if (!expect(h, ':', "':' after a key") || !parse_value(h, d, key))
			return false;
		need_comma = true;
	}
	skip_ws(h);
	if (h->s != h->end) {
		char b[32];
		return herr(h, NM_NPY_ERR_FORMAT, "bad header: %s after the dict",
		            show(h, b, sizeof b));
	}
	for (int k = 0; k < 3; k++) {
		bool have = k == 0 ? d->have_descr : k == 1 ? d->have_fortran : d->have_shape;
		if (!have)
			return herr(h, NM_NPY_ERR_FORMAT, "bad header: no '%s' key", keys[k]);
	}
	return true;
}

/* descr -> dtype and byte order, or false with the message set. */
static bool parse_descr(hdr *h, const header_dict *d, nm_npy_dtype *t, bool *big)
{
	if (d->structured)
		return herr(h, NM_NPY_ERR_UNSUPPORTED,
		            "unsupported dtype: structured (a list descr); this reader takes "
		            "<f2 <f4 <f8 |u1 <u2 <u4 (either byte order)");
	if (d->descr_len == 3) {
		char order = d->descr[0];
		for (int k = 0; k < NM_NPY_NDTYPES; k++) {
			if (memcmp(d->descr + 1, dtypes[k].name + 1, 2) != 0)
				continue;
			if (order == '|' && dtypes[k].size != 1)
				break;
			if (order != '<' && order != '>' && order != '|' && order != '=')
				break;
			*t = (nm_npy_dtype)k;
			*big = order == '>' || (order == '=' && host_big_endian());
			if (dtypes[k].size == 1)
				*big = false;
			return true;
		}
	}
	char shown[8];
	size_t n = d->descr_len < 7 ? d->descr_len : 7;
	for (size_t i = 0; i < n; i++)
		shown[i] = (d->descr[i] >= 0x20 && d->descr[i] < 0x7f) ? d->descr[i] : '?';
	shown[n] = '\0';
	return herr(h, NM_NPY_ERR_UNSUPPORTED,
	            "unsupported dtype '%s%s'; this reader takes <f2 <f4 <f8 |u1 <u2 <u4 "
	            "(either byte order)",
	            shown, d->descr_len > 7 ? "..." : "");
}

static uint64_t load(const unsigned char *p, size_t size, bool big)
{
	uint64_t v = 0;
	for (size_t i = 0; i < size; i++)
		v |= (uint64_t)p[big ? size - 1 - i : i] << (8 * i);
	return v;
}

/* What a file starts with, for the bad-magic message: up to 6 bytes,
 * printable ones as they are, the others as \xHH. */
static const char *show_start(const unsigned char *b, size_t len, char *buf, size_t n)
{
	size_t k = 0;
	if (len == 0)
		return "nothing: the file is empty";
	buf[k++] = '\'';
	for (size_t i = 0; i < len && i < 6 && k + 6 < n; i++) {
		if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\' && b[i] != '\'')
			buf[k++] = (char)b[i];
		else
			k += (size_t)snprintf(buf + k, n - k, "\\x%02x", b[i]);
	}
	buf[k++] = '\'';
	buf[k] = '\0';
	return buf;
}

/* The header of a .npy in the first len bytes of b: everything but the
 * data's length is checked; *start the data's offset, *need its bytes. */
struct npy_meta {
	nm_npy_dtype t;
	bool big;
	int major, ndim;
	uint64_t s0, s1;
	size_t count, isz, start, need;
};

static nm_npy_status npy_meta(const unsigned char *b, size_t len, const char *name,
                              struct npy_meta *m, char *err, size_t errlen)
{
	char shown[40];
	if (len < 6 || memcmp(b, "\x93NUMPY", 6) != 0)
		return fail(err, errlen, name, NM_NPY_ERR_FORMAT,
		            "bad magic: not a .npy file (it starts with %s, a .npy file with "
		            "\\x93NUMPY)",
		            show_start(b, len, shown, sizeof shown));
	if (len < 8)
		return fail(err, errlen, name, NM_NPY_ERR_FORMAT,
		            "truncated header: %zu bytes, no version", len);
	int major = b[6], minor = b[7];
	if ((major != 1 && major != 2 && major != 3) || minor != 0)
		return fail(err, errlen, name, NM_NPY_ERR_UNSUPPORTED,
		            "unsupported format version %d.%d (1.0, 2.0 and 3.0 are read)", major,
		            minor);
	size_t lenbytes = major == 1 ? 2 : 4, start = 8 + lenbytes;
	if (len < start)
		return fail(err, errlen, name, NM_NPY_ERR_FORMAT,
		            "truncated header: %zu bytes, no header length", len);
	uint64_t hlen = load(b + 8, lenbytes, false);
	if (hlen > NM_NPY_MAX_HEADER)
		return fail(err, errlen, name, NM_NPY_ERR_FORMAT,
		            "header too long: %llu bytes (limit %d)", (unsigned long long)hlen,
		            NM_NPY_MAX_HEADER);
	if (len - start < hlen)
		return fail(err, errlen, name, NM_NPY_ERR_FORMAT,
		            "truncated header: %zu of %llu header bytes", len - start,
		            (unsigned long long)hlen);
	hdr h = {b + start, b + start, b + start + hlen, major, name, err, errlen, NM_NPY_OK};
	header_dict d;
	nm_npy_dtype t = NM_NPY_F8;
	bool big = false;
	if (!parse_header(&h, &d) || !parse_descr(&h, &d, &t, &big))
		return h.st;
	if (d.fortran)
		return fail(err, errlen, name, NM_NPY_ERR_UNSUPPORTED,
		            "fortran_order True is not supported (C order only)");
	if (d.ndim == 0)
		return fail(err, errlen, name, NM_NPY_ERR_UNSUPPORTED,
		            "0-d arrays are not supported (shape (); 1-D or 2-D only)");
	if (d.ndim > 2)
		return fail(err, errlen, name, NM_NPY_ERR_UNSUPPORTED,
		            "%d-d arrays are not supported (1-D or 2-D only)", d.ndim);
	uint64_t s0 = d.shape[0], s1 = d.ndim == 2 ? d.shape[1] : 1;
	size_t isz = dtypes[t].size;
	if (d.shape_too_big || s0 > SIZE_MAX || s1 > SIZE_MAX)
		return fail(err, errlen, name, NM_NPY_ERR_RANGE,
		            "overflow: a shape dimension is too large");
	if (s1 && s0 > SIZE_MAX / s1)
		return fail(err, errlen, name, NM_NPY_ERR_RANGE,
		            "overflow: the shape product %llu x %llu", (unsigned long long)s0,
		            (unsigned long long)s1);
	size_t count = (size_t)(s0 * s1);
	if (count > SIZE_MAX / isz || count > SIZE_MAX / sizeof(double))
		return fail(err, errlen, name, NM_NPY_ERR_RANGE,
		            "overflow: %zu elements of %zu bytes", count, isz);
	if (count > NM_NPY_MAX_ELEMS)
		return fail(err, errlen, name, NM_NPY_ERR_RANGE,
		            "%zu elements, more than the %llu nanmap takes", count,
		            (unsigned long long)NM_NPY_MAX_ELEMS);
	m->t = t;
	m->big = big;
	m->major = major;
	m->ndim = d.ndim;
	m->s0 = s0;
	m->s1 = s1;
	m->count = count;
	m->isz = isz;
	m->start = start + (size_t)hlen;
	m->need = count * isz;
	return NM_NPY_OK;
}

nm_npy_status nm_npy_read_mem(const void *buf, size_t len, const char *name, nm_npy *out, char *err,
                              size_t errlen)
{
	memset(out, 0, sizeof *out);
	const unsigned char *b = buf;
	if (!b && len)
		return fail(err, errlen, name, NM_NPY_ERR_IO, "no buffer");
	struct npy_meta m = {0}; /* set by npy_meta on NM_NPY_OK, zero otherwise */
	nm_npy_status ms = npy_meta(b, len, name, &m, err, errlen);
	if (ms != NM_NPY_OK)
		return ms;
	nm_npy_dtype t = m.t;
	bool big = m.big;
	size_t count = m.count, isz = m.isz;
	size_t need = m.need, have = len - m.start;
	if (have < need)
		return fail(err, errlen, name, NM_NPY_ERR_DATA,
		            "data shorter than the shape says: %zu bytes, expected %zu", have,
		            need);
	if (have > need)
		return fail(err, errlen, name, NM_NPY_ERR_DATA,
		            "%zu trailing bytes after the %zu data bytes the shape says",
		            have - need, need);
	double *vals = malloc(count ? count * sizeof *vals : 1);
	uint32_t *raw = NULL;
	if (vals && t != NM_NPY_F8)
		raw = malloc(count ? count * sizeof *raw : 1);
	if (!vals || (t != NM_NPY_F8 && !raw)) {
		free(vals);
		free(raw);
		return fail(err, errlen, name, NM_NPY_ERR_NOMEM, "out of memory for %zu elements",
		            count);
	}
	const emu_format *f16 = emu_format_by_name("fp16"), *f32 = emu_format_by_name("fp32");
	const unsigned char *p = b + m.start;
	for (size_t i = 0; i < count; i++, p += isz) {
		uint64_t v = load(p, isz, big);
		switch (t) {
		case NM_NPY_F2:
			vals[i] = emu_decode(f16, (emu_bits)v);
			break;
		case NM_NPY_F4:
			vals[i] = emu_decode(f32, (emu_bits)v);
			break;
		case NM_NPY_F8:
			memcpy(&vals[i], &v, sizeof v);
			break;
		default:
			vals[i] = (double)v;
			break;
		}
		if (raw)
			raw[i] = (uint32_t)v;
	}
	out->dtype = t;
	out->big_endian = big;
	out->version = m.major;
	out->ndim = m.ndim;
	out->shape[0] = (size_t)m.s0;
	out->shape[1] = (size_t)m.s1;
	out->count = count;
	out->values = vals;
	out->raw = raw;
	return NM_NPY_OK;
}

void nm_npy_free(nm_npy *a)
{
	if (!a)
		return;
	free(a->values);
	free(a->raw);
	memset(a, 0, sizeof *a);
}

/* Read up to want more bytes of fp into *buf (length *len, room *cap),
 * growing it as the bytes arrive, so a header that claims more than the
 * file holds costs no more memory than the file. false when out of memory. */
static bool read_more(FILE *fp, unsigned char **buf, size_t *len, size_t *cap, size_t want)
{
	while (want > 0) {
		if (*len == *cap) {
			size_t nc = *cap < 4096 ? 4096 : *cap * 2;
			unsigned char *nb = realloc(*buf, nc);
			if (!nb)
				return false;
			*buf = nb;
			*cap = nc;
		}
		size_t chunk = *cap - *len < want ? *cap - *len : want;
		size_t got = fread(*buf + *len, 1, chunk, fp);
		*len += got;
		want -= got;
		if (got < chunk)
			break;
	}
	return true;
}

/* A file is read as far as its header says and no further (a stream such
 * as /dev/zero is refused at its magic); the bytes then go through
 * nm_npy_read_mem, so the two readers give the same answers. */
nm_npy_status nm_npy_read(const char *path, nm_npy *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return fail(err, errlen, path, NM_NPY_ERR_IO, "cannot open: %s", strerror(errno));
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;
	nm_npy_status st = NM_NPY_OK;
	struct npy_meta m = {0}; /* set by npy_meta on NM_NPY_OK, zero otherwise */
	bool ok = read_more(fp, &buf, &len, &cap, 12), data = false;
	if (ok && len >= 12 && !memcmp(buf, "\x93NUMPY", 6) && (buf[6] == 1 || buf[6] == 2 ||
	                                                          buf[6] == 3)) {
		size_t lb = buf[6] == 1 ? 2 : 4;
		uint64_t hlen = load(buf + 8, lb, false);
		if (hlen <= NM_NPY_MAX_HEADER)
			ok = read_more(fp, &buf, &len, &cap, 8 + lb + (size_t)hlen - len);
		if (ok && hlen <= NM_NPY_MAX_HEADER && len == 8 + lb + hlen &&
		    npy_meta(buf, len, path, &m, NULL, 0) == NM_NPY_OK) {
			/* what reading takes at its peak: the data as read, then a
			 * double and (but for f8) an encoding a value; refused with
			 * the figures before any of it is allocated */
			double need = (double)m.need + 65536 +
			              (double)m.count * (8 + (m.t == NM_NPY_F8 ? 0 : 4));
			double avail = nm_memory_available();
			char a[24], b[24], c[24];
			if (avail >= 0 && need > avail) {
				fclose(fp);
				free(buf);
				return fail(err, errlen, path, NM_NPY_ERR_NOMEM,
				            "%zu values (%s of data) need about %s to read (the data, "
				            "then %zu bytes a value), more than the %s of memory available",
				            m.count, nm_fmt_bytes((double)m.need, a, sizeof a),
				            nm_fmt_bytes(need, b, sizeof b),
				            m.t == NM_NPY_F8 ? (size_t)8 : (size_t)12,
				            nm_fmt_bytes(avail, c, sizeof c));
			}
			/* the data and at most 64 KiB more, to say how many trail */
			ok = data = read_more(fp, &buf, &len, &cap, m.need + 65536);
		}
	}
	if (!ok)
		st = fail(err, errlen, path, NM_NPY_ERR_NOMEM, "out of memory reading the file");
	else if (ferror(fp))
		st = fail(err, errlen, path, NM_NPY_ERR_IO, "read error: %s", strerror(errno));
	else if (data && len == m.start + m.need + 65536 && getc(fp) != EOF)
		st = fail(err, errlen, path, NM_NPY_ERR_DATA,
		          "more than 65536 trailing bytes after the data the shape says");
	fclose(fp);
	if (st == NM_NPY_OK)
		st = nm_npy_read_mem(buf, len, path, out, err, errlen);
	free(buf);
	return st;
}

/* ---- writing ---- */

static void store(unsigned char *p, uint64_t v, size_t size)
{
	for (size_t i = 0; i < size; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

nm_npy_status nm_npy_encode(nm_npy_dtype dtype, int ndim, const size_t *shape, const double *values,
                            const uint32_t *raw, void **buf, size_t *len, const char *name,
                            char *err, size_t errlen)
{
	*buf = NULL;
	*len = 0;
	if ((unsigned)dtype >= NM_NPY_NDTYPES)
		return fail(err, errlen, name, NM_NPY_ERR_UNSUPPORTED, "unknown dtype %d",
		            (int)dtype);
	if (ndim != 1 && ndim != 2)
		return fail(err, errlen, name, NM_NPY_ERR_UNSUPPORTED,
		            "%d-d arrays are not written (1-D or 2-D only)", ndim);
	size_t s0 = shape[0], s1 = ndim == 2 ? shape[1] : 1, isz = dtypes[dtype].size;
	if (s1 && s0 > SIZE_MAX / s1)
		return fail(err, errlen, name, NM_NPY_ERR_RANGE, "overflow: the shape product");
	size_t count = s0 * s1;
	if (values && raw)
		return fail(err, errlen, name, NM_NPY_ERR_RANGE, "give values or raw, not both");
	if (!values && !raw && count)
		return fail(err, errlen, name, NM_NPY_ERR_RANGE, "no values");
	if (raw && dtype == NM_NPY_F8)
		return fail(err, errlen, name, NM_NPY_ERR_RANGE, "raw encodings cannot fill <f8");
	char header[128];
	int hl;
	if (ndim == 1)
		hl = snprintf(header, sizeof header,
		              "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }",
		              dtypes[dtype].name, s0);
	else
		hl = snprintf(header, sizeof header,
		              "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }",
		              dtypes[dtype].name, s0, s1);
	/* numpy/lib/format.py _write_array_header (NumPy >= 1.23) first leaves
	 * room for shape[0] to grow to 21 digits, then _wrap_header pads with
	 * spaces so that 10 + len(header) + padding + 1 ('\n') is a multiple of
	 * 64: the bytes are NumPy's own */
	char digits[32];
	size_t grow = 21 - (size_t)snprintf(digits, sizeof digits, "%zu", s0);
	size_t pad = grow + 64 - ((10 + (size_t)hl + grow + 1) % 64);
	size_t hlen = (size_t)hl + pad + 1, off = 10 + hlen;
	if (count > (SIZE_MAX - off) / isz)
		return fail(err, errlen, name, NM_NPY_ERR_RANGE, "overflow: %zu elements", count);
	size_t total = off + count * isz;
	unsigned char *b = malloc(total);
	if (!b)
		return fail(err, errlen, name, NM_NPY_ERR_NOMEM, "out of memory (%zu bytes)",
		            total);
	static const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
	memcpy(b, magic, sizeof magic);
	store(b + 8, hlen, 2);
	memcpy(b + 10, header, (size_t)hl);
	memset(b + 10 + hl, ' ', pad);
	b[off - 1] = '\n';
	const emu_format *f16 = emu_format_by_name("fp16"), *f32 = emu_format_by_name("fp32");
	const emu_env rne = {EMU_RNE, false, false, false, 0, 0};
	uint64_t maxraw = isz >= 4 ? UINT32_MAX : (1ull << (8 * isz)) - 1;
	for (size_t i = 0; i < count; i++) {
		uint64_t v;
		if (raw) {
			v = raw[i];
			if (v > maxraw) {
				free(b);
				return fail(err, errlen, name, NM_NPY_ERR_RANGE,
				            "raw encoding 0x%llx at index %zu does not fit %s",
				            (unsigned long long)v, i, dtypes[dtype].name);
			}
		} else {
			double x = values[i];
			switch (dtype) {
			case NM_NPY_F2:
				v = emu_from_double(f16, x, &rne).bits;
				break;
			case NM_NPY_F4:
				v = emu_from_double(f32, x, &rne).bits;
				break;
			case NM_NPY_F8:
				memcpy(&v, &x, sizeof v);
				break;
			default:
				if (!(x >= 0 && x <= (double)maxraw) || x != (double)(uint64_t)x) {
					free(b);
					return fail(
					    err, errlen, name, NM_NPY_ERR_RANGE,
					    "value %.17g at index %zu is not an integer that %s "
					    "holds",
					    x, i, dtypes[dtype].name);
				}
				v = (uint64_t)x;
				break;
			}
		}
		store(b + off + i * isz, v, isz);
	}
	*buf = b;
	*len = total;
	return NM_NPY_OK;
}

nm_npy_status nm_npy_write(const char *path, nm_npy_dtype dtype, int ndim, const size_t *shape,
                           const double *values, const uint32_t *raw, char *err, size_t errlen)
{
	void *buf;
	size_t len;
	nm_npy_status st =
	    nm_npy_encode(dtype, ndim, shape, values, raw, &buf, &len, path, err, errlen);
	if (st != NM_NPY_OK)
		return st;
	char e[512];
	if (nm_file_write(path, buf, len, e, sizeof e) != 0)
		st = fail(err, errlen, path, NM_NPY_ERR_IO, "cannot write: %s", strerror(errno));
	free(buf);
	return st;
}
