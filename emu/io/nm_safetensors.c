/*
 * nm_safetensors.c — strict .safetensors reading and writing (see
 * nm_safetensors.h).
 *
 * The rules are the reference library's (huggingface/safetensors,
 * safetensors/src/tensor.rs: read_metadata and Metadata::validate): the
 * header length against MAX_HEADER_SIZE and the file, a '{' first, JSON,
 * each tensor's byte count from its shape and dtype bits (a whole number of
 * bytes), and the tensors sorted by offsets covering the data exactly.
 * Where serde_json would be lenient this reader is not: unknown keys,
 * anything but plain non-negative integers, and trailing bytes other than
 * spaces are refused.
 *
 * The header is parsed by a small recursive-descent reader over its byte
 * range (never NUL-terminated, never read past its end) for exactly this
 * schema, so no nesting deeper than three levels is ever followed. Strings
 * are measured before they are copied, every product is checked before it
 * is used, and duplicate names are found by sorting, so a 100 MB header
 * costs O(n log n), not O(n^2).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu/core/emu.h"
#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_safetensors.h"

static const struct {
	const char *name;
	size_t bits;
	const char *emu; /* the emulator's format, for the 8- and 16-bit floats */
} dtypes[NM_ST_NDTYPES] = {
    [NM_ST_F64] = {"F64", 64, NULL},
    [NM_ST_F32] = {"F32", 32, NULL},
    [NM_ST_F16] = {"F16", 16, "fp16"},
    [NM_ST_BF16] = {"BF16", 16, "bf16"},
    [NM_ST_F8_E4M3] = {"F8_E4M3", 8, "e4m3"},
    [NM_ST_F8_E5M2] = {"F8_E5M2", 8, "e5m2"},
    [NM_ST_BOOL] = {"BOOL", 8, NULL},
    [NM_ST_U8] = {"U8", 8, NULL},
    [NM_ST_I8] = {"I8", 8, NULL},
    [NM_ST_U16] = {"U16", 16, NULL},
    [NM_ST_I16] = {"I16", 16, NULL},
    [NM_ST_U32] = {"U32", 32, NULL},
    [NM_ST_I32] = {"I32", 32, NULL},
    [NM_ST_U64] = {"U64", 64, NULL},
    [NM_ST_I64] = {"I64", 64, NULL},
    [NM_ST_F8_E8M0] = {"F8_E8M0", 8, NULL},
    [NM_ST_F4] = {"F4", 4, NULL},
    [NM_ST_F6_E2M3] = {"F6_E2M3", 6, NULL},
    [NM_ST_F6_E3M2] = {"F6_E3M2", 6, NULL},
    [NM_ST_C64] = {"C64", 64, NULL},
};

const char *nm_st_dtype_name(nm_st_dtype t)
{
	return (unsigned)t < NM_ST_NDTYPES ? dtypes[t].name : "?";
}

size_t nm_st_dtype_bits(nm_st_dtype t)
{
	return (unsigned)t < NM_ST_NDTYPES ? dtypes[t].bits : 0;
}

bool nm_st_dtype_decodable(nm_st_dtype t)
{
	return (unsigned)t <= NM_ST_F8_E5M2;
}

static void fail_msg(char *err, size_t errlen, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The error line in err, and st as the value of the expression (as nm_npy.c). */
#define fail(err, errlen, name, st, ...) (fail_msg(err, errlen, name, __VA_ARGS__), (st))

static void fail_msg(char *err, size_t errlen, const char *name, const char *fmt, ...)
{
	if (err && errlen) {
		int n = snprintf(err, errlen, "%s: ", name ? name : "(safetensors)");
		if (n >= 0 && (size_t)n < errlen) {
			va_list ap;
			va_start(ap, fmt);
			/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive */
			vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
}

/* A name for messages: printable ASCII as it is (backslash and quote
 * escaped), other bytes as \xHH, at most 40 source bytes and "..." after. */
static const char *show_name(const char *s, size_t len, char *buf, size_t n)
{
	size_t k = 0, i = 0;
	for (; i < len && i < 40 && k + 5 < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
			buf[k++] = (char)c;
		else
			k += (size_t)snprintf(buf + k, n - k, "\\x%02x", c);
	}
	if (i < len && k + 4 < n) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
	return buf;
}

#define SHOWN 200 /* room for show_name's 40 bytes, escaped */

/* "[2, 3]" into buf. */
static const char *show_shape(const uint64_t *shape, int ndim, char *buf, size_t n)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%llu", i ? ", " : "",
		                      (unsigned long long)shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

static uint64_t load_le(const uint8_t *p, size_t size)
{
	uint64_t v = 0;
	for (size_t i = 0; i < size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void store_le(uint8_t *p, uint64_t v, size_t size)
{
	for (size_t i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
	uint8_t c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	uint8_t lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* ---- the header's JSON ---- */

typedef struct {
	const uint8_t *base, *s, *end;
	const char *name;
	char *err;
	size_t errlen;
	nm_st_status st;
} hdr;

static void herr_msg(hdr *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* h->st = status, the message in h->err, false (as nm_npy.c's herr). */
#define herr(h, status, ...) ((h)->st = (status), herr_msg((h), __VA_ARGS__), false)

static void herr_msg(hdr *h, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized) */
	va_end(ap);
	fail_msg(h->err, h->errlen, h->name, "%s", msg);
}

static void skip_ws(hdr *h)
{
	while (h->s < h->end && (*h->s == ' ' || *h->s == '\t' || *h->s == '\n' || *h->s == '\r'))
		h->s++;
}

static long at(const hdr *h)
{
	return (long)(h->s - h->base);
}

/* The byte at h->s for messages. */
static const char *show(const hdr *h, char *buf, size_t len)
{
	if (h->s >= h->end)
		snprintf(buf, len, "the end of the header");
	else if (*h->s >= 0x20 && *h->s < 0x7f)
		snprintf(buf, len, "'%c'", *h->s);
	else
		snprintf(buf, len, "byte 0x%02x", *h->s);
	return buf;
}

static bool expect(hdr *h, char c, const char *what)
{
	skip_ws(h);
	if (h->s < h->end && *h->s == (uint8_t)c) {
		h->s++;
		return true;
	}
	char b[40];
	return herr(h, NM_ST_ERR_FORMAT, "bad header: expected %s, found %s at header byte %ld",
	            what, show(h, b, sizeof b), at(h));
}

/* The next non-blank byte is c (consumed) */
static bool next_is(hdr *h, char c)
{
	skip_ws(h);
	if (h->s < h->end && *h->s == (uint8_t)c) {
		h->s++;
		return true;
	}
	return false;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool hex4(hdr *h, const uint8_t *p, unsigned *u)
{
	*u = 0;
	for (int i = 0; i < 4; i++) {
		int d = p + i < h->end ? hexval(p[i]) : -1;
		if (d < 0)
			return herr(h, NM_ST_ERR_FORMAT,
			            "bad header: \\u needs four hex digits at header byte %ld",
			            (long)(p - h->base));
		*u = *u << 4 | (unsigned)d;
	}
	return true;
}

/* A JSON string, decoded into a malloc'ed NUL-terminated copy (*out, its
 * length *len; *nul when it holds U+0000). */
static bool string(hdr *h, char **out, size_t *len, bool *nul)
{
	skip_ws(h);
	*out = NULL;
	*nul = false;
	if (h->s >= h->end || *h->s != '"') {
		char b[40];
		return herr(h, NM_ST_ERR_FORMAT,
		            "bad header: expected a string, found %s at header byte %ld",
		            show(h, b, sizeof b), at(h));
	}
	const uint8_t *start = ++h->s, *p = start;
	while (p < h->end && *p != '"')
		p += *p == '\\' ? 2 : 1;
	if (p >= h->end)
		return herr(h, NM_ST_ERR_FORMAT,
		            "bad header: unterminated string from header byte %ld",
		            (long)(start - 1 - h->base));
	const uint8_t *close = p;
	char *s = malloc((size_t)(close - start) + 1);
	if (!s)
		return herr(h, NM_ST_ERR_NOMEM, "out of memory for a %zu-byte string",
		            (size_t)(close - start));
	size_t k = 0;
	for (p = start; p < close;) {
		uint8_t c = *p;
		if (c < 0x20) {
			free(s);
			return herr(h, NM_ST_ERR_FORMAT,
			            "bad header: control byte 0x%02x inside a string at header "
			            "byte %ld",
			            c, (long)(p - h->base));
		}
		if (c >= 0x80) {
			size_t n = utf8_seq(p, (size_t)(close - p));
			if (!n) {
				free(s);
				return herr(h, NM_ST_ERR_FORMAT,
				            "bad header: invalid UTF-8 at header byte %ld",
				            (long)(p - h->base));
			}
			memcpy(s + k, p, n);
			k += n;
			p += n;
			continue;
		}
		if (c != '\\') {
			s[k++] = (char)c;
			p++;
			continue;
		}
		const uint8_t *esc = p;
		c = p[1];
		p += 2;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			s[k++] = (char)c;
			continue;
		case 'b':
			s[k++] = '\b';
			continue;
		case 'f':
			s[k++] = '\f';
			continue;
		case 'n':
			s[k++] = '\n';
			continue;
		case 'r':
			s[k++] = '\r';
			continue;
		case 't':
			s[k++] = '\t';
			continue;
		case 'u':
			break;
		default:
			free(s);
			return herr(h, NM_ST_ERR_FORMAT,
			            "bad header: unknown escape at header byte %ld",
			            (long)(esc - h->base));
		}
		unsigned u;
		if (!hex4(h, p, &u)) {
			free(s);
			return false;
		}
		p += 4;
		if (u >= 0xdc00 && u <= 0xdfff) {
			free(s);
			return herr(h, NM_ST_ERR_FORMAT,
			            "bad header: lone low surrogate \\u%04x at header byte %ld", u,
			            (long)(esc - h->base));
		}
		if (u >= 0xd800 && u <= 0xdbff) {
			unsigned lo = 0;
			if (close - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(h, p + 2, &lo) ||
			    lo < 0xdc00 || lo > 0xdfff) {
				free(s);
				return herr(
				    h, NM_ST_ERR_FORMAT,
				    "bad header: high surrogate \\u%04x without a low one at "
				    "header byte %ld",
				    u, (long)(esc - h->base));
			}
			p += 6;
			u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (u == 0)
			*nul = true;
		/* UTF-8: at most 4 bytes from an escape of at least 6 */
		if (u < 0x80)
			s[k++] = (char)u;
		else if (u < 0x800) {
			s[k++] = (char)(0xc0 | u >> 6);
			s[k++] = (char)(0x80 | (u & 0x3f));
		} else if (u < 0x10000) {
			s[k++] = (char)(0xe0 | u >> 12);
			s[k++] = (char)(0x80 | ((u >> 6) & 0x3f));
			s[k++] = (char)(0x80 | (u & 0x3f));
		} else {
			s[k++] = (char)(0xf0 | u >> 18);
			s[k++] = (char)(0x80 | ((u >> 12) & 0x3f));
			s[k++] = (char)(0x80 | ((u >> 6) & 0x3f));
			s[k++] = (char)(0x80 | (u & 0x3f));
		}
	}
	s[k] = '\0';
	h->s = close + 1;
	*out = s;
	*len = k;
	return true;
}

/* A plain non-negative integer: digits, no leading zero, no sign, fraction
 * or exponent, at most UINT64_MAX. */
static bool integer(hdr *h, uint64_t *v)
{
	skip_ws(h);
	const uint8_t *start = h->s;
	if (h->s < h->end && *h->s == '-')
		return herr(h, NM_ST_ERR_FORMAT, "bad header: negative number at header byte %ld",
		            at(h));
	uint64_t x = 0;
	bool big = false;
	while (h->s < h->end && *h->s >= '0' && *h->s <= '9') {
		unsigned d = (unsigned)(*h->s - '0');
		if (x > (UINT64_MAX - d) / 10)
			big = true;
		x = x * 10 + d;
		h->s++;
	}
	if (h->s == start) {
		char b[40];
		return herr(h, NM_ST_ERR_FORMAT,
		            "bad header: expected a non-negative integer, found %s at header byte "
		            "%ld",
		            show(h, b, sizeof b), at(h));
	}
	if (h->s < h->end && (*h->s == '.' || *h->s == 'e' || *h->s == 'E'))
		return herr(h, NM_ST_ERR_FORMAT,
		            "bad header: number at header byte %ld is not a plain integer",
		            (long)(start - h->base));
	if (h->s - start > 1 && *start == '0')
		return herr(h, NM_ST_ERR_FORMAT,
		            "bad header: integer with a leading zero at header byte %ld",
		            (long)(start - h->base));
	if (big)
		return herr(h, NM_ST_ERR_RANGE,
		            "integer at header byte %ld does not fit 64 bits (%.*s)",
		            (long)(start - h->base), (int)(h->s - start < 40 ? h->s - start : 40),
		            (const char *)start);
	*v = x;
	return true;
}

/* "[a, b, ...]" of at most max integers; *n of them. */
static bool int_array(hdr *h, uint64_t *v, int max, int *n, const char *what, const char *tname)
{
	*n = 0;
	if (!expect(h, '[', what))
		return false;
	if (next_is(h, ']'))
		return true;
	for (;;) {
		uint64_t x;
		if (!integer(h, &x))
			return false;
		if (*n == max) {
			char b[SHOWN];
			if (max == NM_ST_MAX_DIMS)
				return herr(h, NM_ST_ERR_UNSUPPORTED,
				            "tensor '%s': shape has more than %d dimensions",
				            show_name(tname, strlen(tname), b, sizeof b),
				            NM_ST_MAX_DIMS);
			return herr(h, NM_ST_ERR_FORMAT,
			            "tensor '%s': data_offsets must be [BEGIN, END], two integers",
			            show_name(tname, strlen(tname), b, sizeof b));
		}
		v[(*n)++] = x;
		if (next_is(h, ']'))
			return true;
		if (!expect(h, ',', "',' or ']' in an array"))
			return false;
	}
}

/* What the parse builds: tensors and metadata, grown by doubling. */
typedef struct {
	nm_st_tensor *t;
	uint64_t *end; /* data_offsets[1] of each tensor */
	size_t nt, capt, cape;
	char **mk, **mv;
	size_t nm, capk, capv;
} built;

/* p with room for need items of size (*cap of them), or NULL (p kept). */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	size_t nc = *cap ? *cap * 2 : 16;
	if (nc > SIZE_MAX / size)
		return NULL;
	void *q = realloc(p, nc * size);
	if (q)
		*cap = nc;
	return q;
}

/* The value of a tensor's key: {"dtype": ..., "shape": ..., "data_offsets": ...} */
static bool tensor(hdr *h, nm_st_tensor *t, uint64_t *end)
{
	static const char *const keys[] = {"dtype", "shape", "data_offsets"};
	bool have[3] = {false, false, false};
	char b[SHOWN];
	const char *tn = show_name(t->name, strlen(t->name), b, sizeof b);
	if (!expect(h, '{', "'{' to open a tensor's entry"))
		return false;
	if (!next_is(h, '}')) {
		for (;;) {
			char *key;
			size_t klen;
			bool nul;
			if (!string(h, &key, &klen, &nul))
				return false;
			int k = 0;
			while (k < 3 &&
			       !(strlen(keys[k]) == klen && memcmp(key, keys[k], klen) == 0))
				k++;
			char kb[SHOWN];
			if (k == 3) {
				(void)herr(h, NM_ST_ERR_FORMAT, "tensor '%s': unexpected key '%s'",
				           tn, show_name(key, klen, kb, sizeof kb));
				free(key);
				return false;
			}
			free(key);
			if (have[k])
				return herr(h, NM_ST_ERR_FORMAT, "tensor '%s': duplicate key '%s'",
				            tn, keys[k]);
			have[k] = true;
			if (!expect(h, ':', "':' after a key"))
				return false;
			if (k == 0) {
				char *dt;
				size_t dlen;
				if (!string(h, &dt, &dlen, &nul))
					return false;
				int d = 0;
				while (d < NM_ST_NDTYPES &&
				       !(strlen(dtypes[d].name) == dlen &&
				         memcmp(dt, dtypes[d].name, dlen) == 0))
					d++;
				if (d == NM_ST_NDTYPES) {
					(void)herr(h, NM_ST_ERR_UNSUPPORTED,
					           "tensor '%s': unknown dtype '%s'", tn,
					           show_name(dt, dlen, kb, sizeof kb));
					free(dt);
					return false;
				}
				free(dt);
				t->dtype = (nm_st_dtype)d;
			} else if (k == 1) {
				if (!int_array(h, t->shape, NM_ST_MAX_DIMS, &t->ndim,
				               "'[' to open the shape", t->name))
					return false;
			} else {
				uint64_t off[2];
				int n;
				if (!int_array(h, off, 2, &n, "'[' to open data_offsets", t->name))
					return false;
				if (n != 2)
					return herr(
					    h, NM_ST_ERR_FORMAT,
					    "tensor '%s': data_offsets must be [BEGIN, END], "
					    "two integers",
					    tn);
				t->begin = off[0];
				*end = off[1];
			}
			if (next_is(h, '}'))
				break;
			if (!expect(h, ',', "',' or '}' in a tensor's entry"))
				return false;
		}
	}
	for (int k = 0; k < 3; k++)
		if (!have[k])
			return herr(h, NM_ST_ERR_FORMAT, "tensor '%s': no '%s' key", tn, keys[k]);
	return true;
}

/* The value of "__metadata__": an object of string -> string. */
static bool metadata(hdr *h, built *w)
{
	if (!expect(h, '{', "'{' to open __metadata__"))
		return false;
	if (next_is(h, '}'))
		return true;
	for (;;) {
		char **mk = grow(w->mk, &w->capk, w->nm + 1, sizeof *w->mk);
		if (mk)
			w->mk = mk;
		char **mv = mk ? grow(w->mv, &w->capv, w->nm + 1, sizeof *w->mv) : NULL;
		if (!mv)
			return herr(h, NM_ST_ERR_NOMEM, "out of memory for the metadata");
		w->mv = mv;
		char *k = NULL, *v = NULL;
		size_t klen, vlen;
		bool nul_k, nul_v = false;
		const uint8_t *kat = h->s;
		if (!string(h, &k, &klen, &nul_k))
			return false;
		if (!expect(h, ':', "':' after a key") || !string(h, &v, &vlen, &nul_v)) {
			free(k);
			return false;
		}
		if (nul_k || nul_v) {
			free(k);
			free(v);
			h->s = kat;
			return herr(h, NM_ST_ERR_FORMAT,
			            "bad header: __metadata__ entry at header byte %ld holds a NUL "
			            "(\\u0000)",
			            (long)(kat - h->base));
		}
		w->mk[w->nm] = k;
		w->mv[w->nm] = v;
		w->nm++;
		if (next_is(h, '}'))
			return true;
		if (!expect(h, ',', "',' or '}' in __metadata__"))
			return false;
	}
}

/* The whole header: {"name": {...}, "__metadata__": {...}, ...} and spaces. */
static bool header(hdr *h, built *w)
{
	bool have_meta = false;
	if (h->s >= h->end || *h->s != '{') {
		char b[40];
		return herr(h, NM_ST_ERR_FORMAT, "header does not start with '{' (found %s)",
		            show(h, b, sizeof b));
	}
	h->s++;
	if (!next_is(h, '}')) {
		for (;;) {
			char *key;
			size_t klen;
			bool nul;
			if (!string(h, &key, &klen, &nul))
				return false;
			if (strcmp(key, "__metadata__") == 0 && klen == 12) {
				free(key);
				if (have_meta)
					return herr(h, NM_ST_ERR_FORMAT,
					            "bad header: duplicate key '__metadata__'");
				have_meta = true;
				if (!expect(h, ':', "':' after a key") || !metadata(h, w))
					return false;
			} else {
				char b[SHOWN];
				if (nul) {
					(void)herr(h, NM_ST_ERR_FORMAT,
					           "tensor '%s': the name holds a NUL (\\u0000)",
					           show_name(key, klen, b, sizeof b));
					free(key);
					return false;
				}
				nm_st_tensor *nt = grow(w->t, &w->capt, w->nt + 1, sizeof *w->t);
				if (nt)
					w->t = nt;
				uint64_t *ne =
				    nt ? grow(w->end, &w->cape, w->nt + 1, sizeof *w->end) : NULL;
				if (ne)
					w->end = ne;
				if (!ne) {
					free(key);
					return herr(h, NM_ST_ERR_NOMEM,
					            "out of memory for the tensors");
				}
				nm_st_tensor *t = &w->t[w->nt++];
				memset(t, 0, sizeof *t);
				t->name = key;
				if (!expect(h, ':', "':' after a key") ||
				    !tensor(h, t, &w->end[w->nt - 1]))
					return false;
			}
			if (next_is(h, '}'))
				break;
			if (!expect(h, ',', "',' or '}' after a value"))
				return false;
		}
	}
	while (h->s < h->end && *h->s == ' ')
		h->s++;
	if (h->s != h->end) {
		char b[40];
		return herr(h, NM_ST_ERR_FORMAT,
		            "bad header: %s after the object at header byte %ld (only spaces may "
		            "pad it)",
		            show(h, b, sizeof b), at(h));
	}
	return true;
}

static void free_built(built *w)
{
	for (size_t i = 0; i < w->nt; i++)
		free(w->t[i].name);
	for (size_t i = 0; i < w->nm; i++) {
		free(w->mk[i]);
		free(w->mv[i]);
	}
	free(w->t);
	free(w->end);
	free(w->mk);
	free(w->mv);
	memset(w, 0, sizeof *w);
}

/* ---- checks on what the header says ---- */

static int by_name(const void *a, const void *b)
{
	return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* The first name that appears twice among n (pointers to char *), or NULL. */
static const char *duplicate(char ***names, size_t n)
{
	qsort(names, n, sizeof *names, by_name);
	for (size_t i = 1; i < n; i++)
		if (strcmp(*names[i - 1], *names[i]) == 0)
			return *names[i];
	return NULL;
}

typedef struct {
	const nm_st_tensor *t;
	uint64_t end;
} span;

static int by_offsets(const void *a, const void *b)
{
	const span *x = a, *y = b;
	if (x->t->begin != y->t->begin)
		return x->t->begin < y->t->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* The bytes count elements of dtype take, or false (with the message). */
static nm_st_status tensor_bytes(const nm_st_tensor *t, uint64_t *bytes, const char *name,
                                 char *err, size_t errlen)
{
	char b[SHOWN], sb[400];
	uint64_t count = 1;
	bool over = false;
	for (int i = 0; i < t->ndim; i++) {
		if (t->shape[i] && count > UINT64_MAX / t->shape[i])
			over = true;
		count *= t->shape[i];
	}
	/* a zero dimension makes 0 elements however large the others are */
	for (int i = 0; i < t->ndim; i++)
		if (t->shape[i] == 0)
			over = false, count = 0;
	size_t bits = dtypes[t->dtype].bits;
	if (over || count > UINT64_MAX / bits)
		return fail(err, errlen, name, NM_ST_ERR_RANGE,
		            "tensor '%s': shape %s %s overflows 64 bits",
		            show_name(t->name, strlen(t->name), b, sizeof b),
		            show_shape(t->shape, t->ndim, sb, sizeof sb), dtypes[t->dtype].name);
	if (count * bits % 8)
		return fail(err, errlen, name, NM_ST_ERR_FORMAT,
		            "tensor '%s': shape %s %s is %llu bits, not a whole number of bytes",
		            show_name(t->name, strlen(t->name), b, sizeof b),
		            show_shape(t->shape, t->ndim, sb, sizeof sb), dtypes[t->dtype].name,
		            (unsigned long long)(count * bits));
	*bytes = count * bits / 8;
	return NM_ST_OK;
}

/* Everything after the JSON: names, sizes, the tiling of the data. */
static nm_st_status validate(built *w, uint64_t data_len, const char *name, char *err,
                             size_t errlen)
{
	char b[SHOWN];
	size_t n = w->nt > w->nm ? w->nt : w->nm;
	char ***names = malloc((n ? n : 1) * sizeof *names);
	span *spans = malloc((w->nt ? w->nt : 1) * sizeof *spans);
	nm_st_status st = NM_ST_OK;
	if (!names || !spans) {
		st = fail(err, errlen, name, NM_ST_ERR_NOMEM, "out of memory for %zu tensors", n);
		goto out;
	}
	for (size_t i = 0; i < w->nt; i++)
		names[i] = &w->t[i].name;
	const char *dup = duplicate(names, w->nt);
	if (dup) {
		st = fail(err, errlen, name, NM_ST_ERR_FORMAT, "duplicate tensor name '%s'",
		          show_name(dup, strlen(dup), b, sizeof b));
		goto out;
	}
	for (size_t i = 0; i < w->nm; i++)
		names[i] = &w->mk[i];
	dup = duplicate(names, w->nm);
	if (dup) {
		st = fail(err, errlen, name, NM_ST_ERR_FORMAT, "duplicate __metadata__ key '%s'",
		          show_name(dup, strlen(dup), b, sizeof b));
		goto out;
	}
	for (size_t i = 0; i < w->nt; i++) {
		nm_st_tensor *t = &w->t[i];
		uint64_t need = 0, end = w->end[i];
		const char *tn = show_name(t->name, strlen(t->name), b, sizeof b);
		if (end < t->begin) {
			st = fail(err, errlen, name, NM_ST_ERR_FORMAT,
			          "tensor '%s': data_offsets [%llu, %llu] end before they begin",
			          tn, (unsigned long long)t->begin, (unsigned long long)end);
			goto out;
		}
		st = tensor_bytes(t, &need, name, err, errlen);
		if (st != NM_ST_OK)
			goto out;
		t->count = 1;
		for (int d = 0; d < t->ndim; d++)
			t->count *= t->shape[d];
		t->nbytes = end - t->begin;
		if (t->nbytes != need) {
			char sb[400];
			st = fail(
			    err, errlen, name, NM_ST_ERR_FORMAT,
			    "tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, shape %s %s "
			    "needs %llu",
			    tn, (unsigned long long)t->begin, (unsigned long long)end,
			    (unsigned long long)t->nbytes,
			    show_shape(t->shape, t->ndim, sb, sizeof sb), dtypes[t->dtype].name,
			    (unsigned long long)need);
			goto out;
		}
		spans[i] = (span){t, end};
	}
	qsort(spans, w->nt, sizeof *spans, by_offsets);
	uint64_t pos = 0;
	for (size_t i = 0; i < w->nt; i++) {
		const nm_st_tensor *t = spans[i].t;
		const char *tn = show_name(t->name, strlen(t->name), b, sizeof b);
		if (t->begin != pos) {
			if (i == 0)
				st = fail(
				    err, errlen, name, NM_ST_ERR_FORMAT,
				    "tensor '%s' begins at %llu, not at 0 (a hole at the data's "
				    "start)",
				    tn, (unsigned long long)t->begin);
			else
				st = fail(
				    err, errlen, name, NM_ST_ERR_FORMAT,
				    "tensor '%s' begins at %llu but the previous ends at %llu (%s)",
				    tn, (unsigned long long)t->begin, (unsigned long long)pos,
				    t->begin > pos ? "a hole" : "an overlap");
			goto out;
		}
		pos = spans[i].end;
		if (pos > data_len) {
			st = fail(err, errlen, name, NM_ST_ERR_FORMAT,
			          "tensor '%s' ends at %llu, past the end of the data (%llu bytes)",
			          tn, (unsigned long long)pos, (unsigned long long)data_len);
			goto out;
		}
	}
	if (pos != data_len)
		st = fail(err, errlen, name, NM_ST_ERR_FORMAT,
		          "the tensors end at %llu but the data holds %llu bytes (%llu trailing)",
		          (unsigned long long)pos, (unsigned long long)data_len,
		          (unsigned long long)(data_len - pos));
out:
	free(names);
	free(spans);
	return st;
}

/* Check the len bytes at map and fill *out (which then owns map and name).
 * On error nothing is kept: the caller frees map. */
static nm_st_status parse(void *map, size_t len, const char *name, nm_st_file *out, char *err,
                          size_t errlen)
{
	const uint8_t *b = map;
	if (len < 8)
		return fail(err, errlen, name, NM_ST_ERR_FORMAT,
		            "%zu bytes, too short for the 8-byte header length", len);
	uint64_t n = load_le(b, 8);
	if (n > NM_ST_MAX_HEADER)
		return fail(err, errlen, name, NM_ST_ERR_FORMAT,
		            "header length %llu exceeds the limit of %d bytes",
		            (unsigned long long)n, NM_ST_MAX_HEADER);
	if (n > len - 8)
		return fail(err, errlen, name, NM_ST_ERR_FORMAT,
		            "header length %llu exceeds the file (%zu bytes after it)",
		            (unsigned long long)n, len - 8);
	hdr h = {b + 8, b + 8, b + 8 + n, name, err, errlen, NM_ST_OK};
	built w = {0};
	if (!header(&h, &w)) {
		free_built(&w);
		return h.st;
	}
	nm_st_status st = validate(&w, len - 8 - n, name, err, errlen);
	char *nm = st == NM_ST_OK ? strdup(name ? name : "(safetensors)") : NULL;
	if (st == NM_ST_OK && !nm)
		st = fail(err, errlen, name, NM_ST_ERR_NOMEM, "out of memory");
	if (st != NM_ST_OK) {
		free_built(&w);
		return st;
	}
	for (size_t i = 0; i < w.nt; i++)
		w.t[i].data = b + 8 + n + w.t[i].begin;
	free(w.end);
	out->map = map;
	out->maplen = len;
	out->ntensors = w.nt;
	out->t = w.t;
	out->nmeta = w.nm;
	out->meta_keys = w.mk;
	out->meta_values = w.mv;
	out->name = nm;
	out->header_len = n;
	return NM_ST_OK;
}

nm_st_status nm_st_open_mem(const void *buf, size_t len, const char *name, nm_st_file *out,
                            char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (!buf && len)
		return fail(err, errlen, name, NM_ST_ERR_IO, "no buffer");
	void *copy = malloc(len ? len : 1);
	if (!copy)
		return fail(err, errlen, name, NM_ST_ERR_NOMEM, "out of memory for %zu bytes", len);
	if (len)
		memcpy(copy, buf, len);
	nm_st_status st = parse(copy, len, name, out, err, errlen);
	if (st != NM_ST_OK) {
		free(copy);
		memset(out, 0, sizeof *out);
	}
	return st;
}

nm_st_status nm_st_open(const char *path, nm_st_file *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, path, NM_ST_ERR_IO, "cannot open: %s", strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int e = errno;
		close(fd);
		return fail(err, errlen, path, NM_ST_ERR_IO, "cannot stat: %s", strerror(e));
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return fail(err, errlen, path, NM_ST_ERR_IO, "not a regular file");
	}
	if (sb.st_size < 8) { /* mmap cannot map an empty file */
		close(fd);
		return fail(err, errlen, path, NM_ST_ERR_FORMAT,
		            "%lld bytes, too short for the 8-byte header length",
		            (long long)sb.st_size);
	}
	if ((unsigned long long)sb.st_size > SIZE_MAX) {
		close(fd);
		return fail(err, errlen, path, NM_ST_ERR_RANGE, "%lld bytes do not fit in memory",
		            (long long)sb.st_size);
	}
	size_t len = (size_t)sb.st_size;
	void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	int e = errno;
	close(fd);
	if (map == MAP_FAILED)
		return fail(err, errlen, path, NM_ST_ERR_IO, "cannot map: %s", strerror(e));
	nm_st_status st = parse(map, len, path, out, err, errlen);
	if (st != NM_ST_OK) {
		munmap(map, len);
		memset(out, 0, sizeof *out);
		return st;
	}
	out->mapped = true;
	return NM_ST_OK;
}

void nm_st_close(nm_st_file *f)
{
	if (!f)
		return;
	if (f->map) {
		if (f->mapped)
			munmap(f->map, f->maplen);
		else
			free(f->map);
	}
	for (size_t i = 0; i < f->ntensors; i++)
		free(f->t[i].name);
	for (size_t i = 0; i < f->nmeta; i++) {
		free(f->meta_keys[i]);
		free(f->meta_values[i]);
	}
	free(f->t);
	free(f->meta_keys);
	free(f->meta_values);
	free(f->name);
	memset(f, 0, sizeof *f);
}

const nm_st_tensor *nm_st_find(const nm_st_file *f, const char *name)
{
	for (size_t i = 0; f && name && i < f->ntensors; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

/* ---- decoding ---- */

nm_st_status nm_st_decode(const nm_st_file *f, const nm_st_tensor *t, uint64_t first, size_t n,
                          double *out, char *err, size_t errlen)
{
	char b[SHOWN];
	const char *fname = f && f->name ? f->name : "(safetensors)";
	if (!t)
		return fail(err, errlen, fname, NM_ST_ERR_RANGE, "no tensor");
	const char *tn = show_name(t->name, strlen(t->name), b, sizeof b);
	if (!nm_st_dtype_decodable(t->dtype))
		return fail(err, errlen, fname, NM_ST_ERR_UNSUPPORTED,
		            "tensor '%s': dtype %s is not decoded (F64 F32 F16 BF16 F8_E4M3 "
		            "F8_E5M2 are)",
		            tn, nm_st_dtype_name(t->dtype));
	if (first > t->count || n > t->count - first)
		return fail(err, errlen, fname, NM_ST_ERR_RANGE,
		            "tensor '%s': elements [%llu, %llu + %zu) outside its %llu", tn,
		            (unsigned long long)first, (unsigned long long)first, n,
		            (unsigned long long)t->count);
	size_t isz = dtypes[t->dtype].bits / 8;
	const uint8_t *p = t->data + first * isz;
	const emu_format *fmt =
	    dtypes[t->dtype].emu ? emu_format_by_name(dtypes[t->dtype].emu) : NULL;
	for (size_t i = 0; i < n; i++, p += isz) {
		uint64_t v = load_le(p, isz);
		if (fmt)
			out[i] = emu_decode(fmt, (emu_bits)v);
		else if (isz == 4) {
			float x;
			uint32_t u = (uint32_t)v;
			memcpy(&x, &u, sizeof x);
			out[i] = x;
		} else
			memcpy(&out[i], &v, sizeof v);
	}
	return NM_ST_OK;
}

/* ---- writing ---- */

nm_st_status nm_st_encode(const nm_st_out *t, size_t n, void **buf, size_t *len, const char *name,
                          char *err, size_t errlen)
{
	*buf = NULL;
	*len = 0;
	char b[SHOWN];
	uint64_t data = 0, hcap = 2; /* "{}" */
	nm_st_status st = NM_ST_OK;
	char ***names = malloc((n ? n : 1) * sizeof *names);
	char **copies = calloc(n ? n : 1, sizeof *copies);
	nm_buf hb = {0};
	uint8_t *out = NULL;
	if (!names || !copies) {
		st = fail(err, errlen, name, NM_ST_ERR_NOMEM, "out of memory for %zu tensors", n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const nm_st_out *o = &t[i];
		if (!o->name) {
			st = fail(err, errlen, name, NM_ST_ERR_FORMAT, "tensor %zu has no name", i);
			goto out;
		}
		size_t nl = strlen(o->name);
		const char *tn = show_name(o->name, nl, b, sizeof b);
		for (size_t k = 0; k < nl;) {
			size_t q = utf8_seq((const uint8_t *)o->name + k, nl - k);
			if (!q) {
				st = fail(err, errlen, name, NM_ST_ERR_FORMAT,
				          "tensor '%s': the name is not valid UTF-8", tn);
				goto out;
			}
			k += q;
		}
		if (strcmp(o->name, "__metadata__") == 0) {
			st = fail(err, errlen, name, NM_ST_ERR_FORMAT,
			          "a tensor cannot be called '__metadata__'");
			goto out;
		}
		if ((unsigned)o->dtype >= NM_ST_NDTYPES) {
			st = fail(err, errlen, name, NM_ST_ERR_UNSUPPORTED,
			          "tensor '%s': unknown dtype %d", tn, (int)o->dtype);
			goto out;
		}
		if (o->ndim < 0 || o->ndim > NM_ST_MAX_DIMS || (o->ndim && !o->shape)) {
			st = fail(err, errlen, name, NM_ST_ERR_UNSUPPORTED,
			          "tensor '%s': %d dimensions (0 to %d are written)", tn, o->ndim,
			          NM_ST_MAX_DIMS);
			goto out;
		}
		nm_st_tensor probe = {.name = (char *)o->name, .dtype = o->dtype, .ndim = o->ndim};
		if (o->ndim)
			memcpy(probe.shape, o->shape, (size_t)o->ndim * sizeof *o->shape);
		uint64_t need = 0;
		st = tensor_bytes(&probe, &need, name, err, errlen);
		if (st != NM_ST_OK)
			goto out;
		if (o->nbytes != need || (need && !o->data)) {
			char sb[400];
			st = fail(err, errlen, name, NM_ST_ERR_FORMAT,
			          "tensor '%s': %llu bytes given, shape %s %s needs %llu", tn,
			          (unsigned long long)o->nbytes,
			          show_shape(o->shape, o->ndim, sb, sizeof sb),
			          dtypes[o->dtype].name, (unsigned long long)need);
			goto out;
		}
		if (need > UINT64_MAX - data) {
			st = fail(err, errlen, name, NM_ST_ERR_RANGE, "the data overflows 64 bits");
			goto out;
		}
		data += need;
		/* the name quoted, the entry's fixed text, 21 digits a number */
		hcap += 6 * (uint64_t)nl + 2 + 80 + 22 * (2 + (uint64_t)o->ndim) + 8;
		copies[i] = (char *)o->name;
		names[i] = &copies[i];
		if (hcap > 2 * (uint64_t)NM_ST_MAX_HEADER) {
			st = fail(err, errlen, name, NM_ST_ERR_RANGE,
			          "the header would pass the limit of %d bytes", NM_ST_MAX_HEADER);
			goto out;
		}
	}
	const char *dup = duplicate(names, n);
	if (dup) {
		st = fail(err, errlen, name, NM_ST_ERR_FORMAT, "duplicate tensor name '%s'",
		          show_name(dup, strlen(dup), b, sizeof b));
		goto out;
	}
	uint64_t off = 0;
	nm_buf_reserve(&hb, (size_t)hcap + 8);
	nm_buf_putc(&hb, '{');
	for (size_t i = 0; i < n; i++) {
		const nm_st_out *o = &t[i];
		if (i)
			nm_buf_putc(&hb, ',');
		nm_buf_json_str_min(&hb, o->name);
		nm_buf_printf(&hb, ":{\"dtype\":\"%s\",\"shape\":[", dtypes[o->dtype].name);
		for (int d = 0; d < o->ndim; d++)
			nm_buf_printf(&hb, "%s%llu", d ? "," : "", (unsigned long long)o->shape[d]);
		uint64_t end = off + o->nbytes; /* no overflow: the sum was checked above */
		nm_buf_printf(&hb, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
		              (unsigned long long)end);
		off = end;
	}
	nm_buf_putc(&hb, '}');
	while (hb.len % 8)
		nm_buf_putc(&hb, ' ');
	if (hb.oom) {
		st = fail(err, errlen, name, NM_ST_ERR_NOMEM, "out of memory for the header");
		goto out;
	}
	size_t k = hb.len;
	if (k > NM_ST_MAX_HEADER) {
		st =
		    fail(err, errlen, name, NM_ST_ERR_RANGE,
		         "the header is %zu bytes, more than the limit of %d", k, NM_ST_MAX_HEADER);
		goto out;
	}
	if (data > SIZE_MAX - 8 - k) {
		st = fail(err, errlen, name, NM_ST_ERR_RANGE,
		          "%llu data bytes do not fit in memory", (unsigned long long)data);
		goto out;
	}
	size_t total = 8 + k + (size_t)data;
	out = malloc(total);
	if (!out) {
		st = fail(err, errlen, name, NM_ST_ERR_NOMEM, "out of memory (%zu bytes)", total);
		goto out;
	}
	store_le(out, k, 8);
	memcpy(out + 8, hb.s, k);
	size_t pos = 8 + k;
	for (size_t i = 0; i < n; i++) {
		if (t[i].nbytes)
			memcpy(out + pos, t[i].data, (size_t)t[i].nbytes);
		pos += (size_t)t[i].nbytes;
	}
	*buf = out;
	*len = total;
	out = NULL;
out:
	free(names);
	free(copies);
	nm_buf_free(&hb);
	free(out);
	return st;
}

nm_st_status nm_st_write(const char *path, const nm_st_out *t, size_t n, char *err, size_t errlen)
{
	void *buf;
	size_t len;
	nm_st_status st = nm_st_encode(t, n, &buf, &len, path, err, errlen);
	if (st != NM_ST_OK)
		return st;
	char e[512];
	if (nm_file_write(path, buf, len, e, sizeof e) != 0)
		st = fail(err, errlen, path, NM_ST_ERR_IO, "cannot write: %s", strerror(errno));
	free(buf);
	return st;
}
