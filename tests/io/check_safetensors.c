/*
 * check_safetensors.c — the .safetensors reader and writer
 * (emu/io/nm_safetensors.c):
 *  - files built byte by byte here decode to known answers (fp16 0x3C00 = 1,
 *    bf16 0x3F80 = 1, e4m3 0x7E = 448, e5m2 0x7B = 57344, binary32/64 bits,
 *    NaNs, infinities, subnormals); every dtype name; metadata; scalars and
 *    zero-size tensors; padding;
 *  - write -> open round trips through a real file (the mmap path), and
 *    missing, unreadable and non-regular files;
 *  - one malformed file per validation rule, each refused with its exact
 *    one-line reason;
 *  - a seeded mutation fuzz loop over valid files.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib.h"
#include "emu/io/nm_safetensors.h"

/* ck_assert reports every passing check to the runner; hot loops use this. */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)

/* One tensor's entry: E("w", "F32", "[2, 3]", 0, 24). */
#define E(name, dt, shape, b, e)                                                                   \
	"\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

/* A file: the 8-byte length of json, json, then dlen bytes of data (data,
 * or zeros when data is NULL); malloc'ed, its length in *len. */
static uint8_t *build(const char *json, size_t jlen, const void *data, size_t dlen, size_t *len)
{
	*len = 8 + jlen + dlen;
	uint8_t *b = malloc(*len ? *len : 1);
	ck_assert(b != NULL);
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)jlen >> (8 * i));
	memcpy(b + 8, json, jlen);
	if (data)
		memcpy(b + 8 + jlen, data, dlen);
	else
		memset(b + 8 + jlen, 0, dlen);
	return b;
}

static nm_st_status open_json(const char *json, const void *data, size_t dlen, nm_st_file *f,
                              char *err, size_t errlen)
{
	size_t len;
	uint8_t *b = build(json, strlen(json), data, dlen, &len);
	nm_st_status st = nm_st_open_mem(b, len, "m", f, err, errlen);
	free(b); /* the reader keeps its own copy */
	return st;
}

static bool same_double(double a, double b)
{
	return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

/* ---- known answers ---- */

static const uint8_t ka_data[] = {
    /* h: F16 [5]: 1, +inf, -inf, 2^-24, NaN */
    0x00, 0x3c, 0x00, 0x7c, 0x00, 0xfc, 0x01, 0x00, 0x00, 0x7e,
    /* b: BF16 [3]: 1, 2^-133 (the least subnormal), -inf */
    0x80, 0x3f, 0x01, 0x00, 0x80, 0xff,
    /* e4: F8_E4M3 [3]: 448, 2^-9, NaN */
    0x7e, 0x01, 0x7f,
    /* e5: F8_E5M2 [3]: 57344, +inf, 2^-16 */
    0x7b, 0x7c, 0x01,
    /* f: F32 [2, 2]: 1.5, 2^-149, -inf, NaN */
    0x00, 0x00, 0xc0, 0x3f, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xff, 0x00, 0x00, 0xc0, 0x7f,
    /* d: F64 scalar: 0.1 */
    0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f,
    /* g: F64 [2]: -2^-1074, 0x1.fffffffffffffp1023 */
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xef, 0x7f};

static const char ka_json[] =
    "{" E("h", "F16", "[5]", 0, 10) "," E("b", "BF16", "[3]", 10, 16) "," E(
        "e4", "F8_E4M3", "[3]", 16, 19) "," E("e5", "F8_E5M2", "[3]", 19,
                                              22) "," E("f", "F32", "[2, 2]", 22,
                                                        38) "," E("d", "F64", "[]", 38,
                                                                  46) "," E("g", "F64", "[2]", 46,
                                                                            62) "}";

static const struct {
	const char *name;
	nm_st_dtype dtype;
	int ndim;
	uint64_t count;
	double want[5];
} ka[] = {
    {"h", NM_ST_F16, 1, 5, {1, INFINITY, -INFINITY, 0x1p-24, NAN}},
    {"b", NM_ST_BF16, 1, 3, {1, 0x1p-133, -INFINITY}},
    {"e4", NM_ST_F8_E4M3, 1, 3, {448, 0x1p-9, NAN}},
    {"e5", NM_ST_F8_E5M2, 1, 3, {57344, INFINITY, 0x1p-16}},
    {"f", NM_ST_F32, 2, 4, {1.5, 0x1p-149, -INFINITY, NAN}},
    {"d", NM_ST_F64, 0, 1, {0.1}},
    {"g", NM_ST_F64, 1, 2, {-0x1p-1074, 0x1.fffffffffffffp1023}},
};

START_TEST(test_known_answers)
{
	char err[256];
	nm_st_file f;
	nm_st_status st = open_json(ka_json, ka_data, sizeof ka_data, &f, err, sizeof err);
	ck_assert_msg(st == NM_ST_OK, "%s", err);
	ck_assert_uint_eq(f.ntensors, ARRAY_SIZE(ka));
	ck_assert(!f.mapped && f.nmeta == 0);
	ck_assert_str_eq(f.name, "m");
	for (size_t i = 0; i < ARRAY_SIZE(ka); i++) {
		const nm_st_tensor *t = &f.t[i]; /* in the header's order */
		ck_assert_str_eq(t->name, ka[i].name);
		ck_assert_ptr_eq(nm_st_find(&f, ka[i].name), t);
		ck_assert_int_eq(t->dtype, ka[i].dtype);
		ck_assert_int_eq(t->ndim, ka[i].ndim);
		ck_assert_uint_eq(t->count, ka[i].count);
		ck_assert_uint_eq(t->nbytes, t->count * nm_st_dtype_bits(t->dtype) / 8);
		double got[5];
		st = nm_st_decode(&f, t, 0, (size_t)t->count, got, err, sizeof err);
		ck_assert_msg(st == NM_ST_OK, "%s", err);
		for (size_t j = 0; j < t->count; j++)
			ck_assert_msg(same_double(got[j], ka[i].want[j]), "%s[%zu] = %a, want %a",
			              t->name, j, got[j], ka[i].want[j]);
	}
	ck_assert_ptr_null(nm_st_find(&f, "nope"));
	ck_assert_uint_eq(f.t[4].shape[0], 2);
	ck_assert_uint_eq(f.t[4].shape[1], 2);
	/* a range inside a tensor, and one past it */
	double two[2];
	const nm_st_tensor *h = nm_st_find(&f, "h");
	ck_assert_int_eq(nm_st_decode(&f, h, 3, 2, two, err, sizeof err), NM_ST_OK);
	ck_assert(two[0] == 0x1p-24 && isnan(two[1]));
	ck_assert_int_eq(nm_st_decode(&f, h, 4, 2, two, err, sizeof err), NM_ST_ERR_RANGE);
	ck_assert_str_eq(err, "m: tensor 'h': elements [4, 4 + 2) outside its 5");
	ck_assert_int_eq(nm_st_decode(&f, h, UINT64_MAX, 1, two, err, sizeof err), NM_ST_ERR_RANGE);
	ck_assert_int_eq(nm_st_decode(&f, h, 5, 0, NULL, err, sizeof err), NM_ST_OK);
	nm_st_close(&f);
	ck_assert(f.t == NULL && f.map == NULL && f.ntensors == 0);
	nm_st_close(&f); /* twice is nothing */
}
END_TEST

/* every 16- and 8-bit encoding of the emulated dtypes decodes as the emulator says */
START_TEST(test_every_encoding)
{
	static const struct {
		const char *dt, *fmt;
		unsigned n;
	} fs[] = {{"F16", "fp16", 65536},
	          {"BF16", "bf16", 65536},
	          {"F8_E4M3", "e4m3", 256},
	          {"F8_E5M2", "e5m2", 256}};
	char json[160], err[256];
	for (size_t k = 0; k < ARRAY_SIZE(fs); k++) {
		size_t isz = fs[k].n > 256 ? 2 : 1, nb = fs[k].n * isz;
		snprintf(json, sizeof json,
		         "{\"x\":{\"dtype\":\"%s\",\"shape\":[%u],\"data_offsets\":[0,%zu]}}",
		         fs[k].dt, fs[k].n, nb);
		uint8_t *data = malloc(nb);
		double *got = malloc(fs[k].n * sizeof *got);
		ck_assert(data && got);
		for (unsigned i = 0; i < fs[k].n; i++) {
			data[i * isz] = (uint8_t)i;
			if (isz == 2)
				data[i * isz + 1] = (uint8_t)(i >> 8);
		}
		nm_st_file f;
		ck_assert_int_eq(open_json(json, data, nb, &f, err, sizeof err), NM_ST_OK);
		ck_assert_int_eq(nm_st_decode(&f, &f.t[0], 0, fs[k].n, got, err, sizeof err),
		                 NM_ST_OK);
		const emu_format *fmt = t_fmt(fs[k].fmt);
		for (unsigned i = 0; i < fs[k].n; i++) {
			double want = emu_decode(fmt, (emu_bits)i);
			CHECK(same_double(got[i], want), "%s 0x%04x: %a, want %a", fs[k].dt, i,
			      got[i], want);
		}
		nm_st_close(&f);
		free(data);
		free(got);
	}
	t_count("safetensors: encodings decoded", 2 * 65536 + 2 * 256);
}
END_TEST

START_TEST(test_dtypes)
{
	static const char *const names[NM_ST_NDTYPES] = {
	    "F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "BOOL", "U8",      "I8",      "U16",
	    "I16", "U32", "I32", "U64",  "I64",     "F8_E8M0", "F4",   "F6_E2M3", "F6_E3M2", "C64"};
	static const size_t bits[NM_ST_NDTYPES] = {64, 32, 16, 16, 8,  8, 8, 8, 8, 16,
	                                           16, 32, 32, 64, 64, 8, 4, 6, 6, 64};
	nm_st_dtype t = (nm_st_dtype)_i;
	ck_assert_str_eq(nm_st_dtype_name(t), names[_i]);
	ck_assert_uint_eq(nm_st_dtype_bits(t), bits[_i]);
	ck_assert_int_eq(nm_st_dtype_decodable(t), _i <= NM_ST_F8_E5M2);
	/* 8 elements: a whole number of bytes for every dtype */
	char json[160], err[256];
	snprintf(json, sizeof json,
	         "{\"x\":{\"dtype\":\"%s\",\"shape\":[2, 4],\"data_offsets\":[0,%zu]}}", names[_i],
	         bits[_i]);
	nm_st_file f;
	nm_st_status st = open_json(json, NULL, bits[_i], &f, err, sizeof err);
	ck_assert_msg(st == NM_ST_OK, "%s", err);
	ck_assert_int_eq(f.t[0].dtype, t);
	ck_assert_uint_eq(f.t[0].count, 8);
	ck_assert_uint_eq(f.t[0].nbytes, bits[_i]);
	double out[8];
	st = nm_st_decode(&f, &f.t[0], 0, 8, out, err, sizeof err);
	if (nm_st_dtype_decodable(t)) {
		ck_assert_msg(st == NM_ST_OK, "%s", err);
		for (int i = 0; i < 8; i++)
			ck_assert(out[i] == 0 && !signbit(out[i]));
	} else {
		ck_assert_int_eq(st, NM_ST_ERR_UNSUPPORTED);
		char want[200];
		snprintf(want, sizeof want,
		         "m: tensor 'x': dtype %s is not decoded (F64 F32 F16 BF16 F8_E4M3 F8_E5M2 "
		         "are)",
		         names[_i]);
		ck_assert_str_eq(err, want);
	}
	nm_st_close(&f);
	ck_assert_str_eq(nm_st_dtype_name(NM_ST_NDTYPES), "?");
	ck_assert_uint_eq(nm_st_dtype_bits(NM_ST_NDTYPES), 0);
	ck_assert(!nm_st_dtype_decodable(NM_ST_NDTYPES));
}
END_TEST

START_TEST(test_metadata)
{
	/* escapes of every kind, \u00e9 (2 bytes), \u20ac (3), a surrogate
	 * pair (4), and raw UTF-8 */
	const char *json =
	    "{\"__metadata__\":{\"format\":\"pt\",\"k\\u00e9\":\"v\\ud83d\\ude00\","
	    "\"esc\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u20ac\",\"raw\":\"\xc3\xa9\xf0\x9f\x98\x80\","
	    "\"\":\"\"}," E("a", "U8", "[2]", 0, 2) "}";
	static const char *const keys[] = {"format", "k\xc3\xa9", "esc", "raw", ""};
	static const char *const values[] = {"pt", "v\xf0\x9f\x98\x80",
	                                     "\"\\/\b\f\n\r\t\xe2\x82\xac",
	                                     "\xc3\xa9\xf0\x9f\x98\x80", ""};
	char err[256];
	nm_st_file f;
	nm_st_status st = open_json(json, "ab", 2, &f, err, sizeof err);
	ck_assert_msg(st == NM_ST_OK, "%s", err);
	ck_assert_uint_eq(f.nmeta, ARRAY_SIZE(keys));
	for (size_t i = 0; i < f.nmeta; i++) {
		ck_assert_str_eq(f.meta_keys[i], keys[i]);
		ck_assert_str_eq(f.meta_values[i], values[i]);
	}
	ck_assert_uint_eq(f.ntensors, 1);
	ck_assert(memcmp(f.t[0].data, "ab", 2) == 0);
	nm_st_close(&f);
	/* metadata alone, empty metadata, and metadata after the tensors */
	ck_assert_int_eq(open_json("{\"__metadata__\":{}}", NULL, 0, &f, err, sizeof err),
	                 NM_ST_OK);
	ck_assert(f.ntensors == 0 && f.nmeta == 0);
	nm_st_close(&f);
	ck_assert_int_eq(open_json("{" E("a", "I8", "[1]", 0, 1) ",\"__metadata__\":{\"x\":\"y\"}}",
	                           NULL, 1, &f, err, sizeof err),
	                 NM_ST_OK);
	ck_assert(f.ntensors == 1 && f.nmeta == 1);
	nm_st_close(&f);
}
END_TEST

START_TEST(test_shapes_and_padding)
{
	char err[256];
	nm_st_file f;
	/* no tensors at all */
	ck_assert_int_eq(open_json("{}", NULL, 0, &f, err, sizeof err), NM_ST_OK);
	ck_assert(f.ntensors == 0 && f.header_len == 2);
	nm_st_close(&f);
	/* a scalar, zero-size tensors sharing offsets with others, a huge
	 * dimension times 0, names in the header's order (not by offset) */
	const char *json = "{" E("z", "F32", "[3, 0]", 4, 4) "," E("s", "F32", "[]", 0, 4) "," E(
	    "e", "F16", "[0]", 0, 0) "," E("w", "BF16", "[18446744073709551615, 0, 7]", 4,
	                                   4) "," E("last", "U8", "[1]", 4,
	                                            5) "," E("end", "F4", "[0]", 5, 5) "}";
	static const uint8_t data[] = {0x00, 0x00, 0x40, 0xc0, 0x09}; /* -3.0f */
	nm_st_status st = open_json(json, data, sizeof data, &f, err, sizeof err);
	ck_assert_msg(st == NM_ST_OK, "%s", err);
	ck_assert_uint_eq(f.ntensors, 6);
	static const char *const order[] = {"z", "s", "e", "w", "last", "end"};
	static const uint64_t counts[] = {0, 1, 0, 0, 1, 0};
	for (size_t i = 0; i < 6; i++) {
		ck_assert_str_eq(f.t[i].name, order[i]);
		ck_assert_uint_eq(f.t[i].count, counts[i]);
	}
	ck_assert_int_eq(f.t[1].ndim, 0);
	double v;
	ck_assert_int_eq(nm_st_decode(&f, &f.t[1], 0, 1, &v, err, sizeof err), NM_ST_OK);
	ck_assert(v == -3.0);
	ck_assert_int_eq(nm_st_decode(&f, &f.t[0], 0, 0, NULL, err, sizeof err), NM_ST_OK);
	ck_assert_int_eq(nm_st_decode(&f, &f.t[0], 0, 1, &v, err, sizeof err), NM_ST_ERR_RANGE);
	ck_assert_uint_eq(f.t[4].data[0], 0x09);
	nm_st_close(&f);
	/* eight dimensions, the most */
	ck_assert_int_eq(open_json("{" E("a", "U8", "[1,1,1,1,1,1,1,2]", 0, 2) "}", NULL, 2, &f,
	                           err, sizeof err),
	                 NM_ST_OK);
	ck_assert_int_eq(f.t[0].ndim, 8);
	nm_st_close(&f);
	/* JSON whitespace inside, spaces after */
	st = open_json(" {\"a\":{}}", NULL, 0, &f, err, sizeof err);
	ck_assert_int_eq(st, NM_ST_ERR_FORMAT); /* but not before the '{' */
	json = "{ \"a\" :\t{\r\n\"dtype\" : \"U16\" , \"shape\" : [ 1 ] , \"data_offsets\" : [ 0 , "
	       "2 ] "
	       "}\n}          ";
	st = open_json(json, "xy", 2, &f, err, sizeof err);
	ck_assert_msg(st == NM_ST_OK, "%s", err);
	ck_assert_uint_eq(f.header_len, strlen(json));
	ck_assert(memcmp(f.t[0].data, "xy", 2) == 0);
	nm_st_close(&f);
}
END_TEST

/* ---- files on disk ---- */

static char tmpdir[64];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nanmap-st-XXXXXX");
	ck_assert_msg(mkdtemp(tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
}

static void remove_in_tmpdir(const char *name)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%s", tmpdir, name);
	remove(p);
}

START_TEST(test_round_trip)
{
	make_tmpdir();
	char path[128], err[256];
	snprintf(path, sizeof path, "%s/rt.safetensors", tmpdir);
	static const uint64_t s23[] = {2, 3}, s4[] = {4}, s0[] = {5, 0}, s1[] = {1};
	static const float w[6] = {1, -2, 0.5f, 3e-45f, INFINITY, -0.0f};
	static const uint16_t h[4] = {0x3c00, 0x7bff, 0x0001, 0x8000};
	static const uint8_t f4[2] = {0x21, 0x43};
	static const double d = -0.1;
	const nm_st_out outs[] = {
	    {"weight", NM_ST_F32, 2, s23, w, sizeof w},
	    {"h\"al\\f\n\xc3\xa9", NM_ST_F16, 1, s4, h, sizeof h},
	    {"packed", NM_ST_F4, 1, s4, f4, sizeof f4},
	    {"scalar", NM_ST_F64, 0, NULL, &d, sizeof d},
	    {"empty", NM_ST_I32, 2, s0, NULL, 0},
	    {"", NM_ST_BOOL, 1, s1, "\x01", 1},
	};
	nm_st_status st = nm_st_write(path, outs, ARRAY_SIZE(outs), err, sizeof err);
	ck_assert_msg(st == NM_ST_OK, "%s", err);
	nm_st_file f;
	st = nm_st_open(path, &f, err, sizeof err);
	ck_assert_msg(st == NM_ST_OK, "%s", err);
	ck_assert(f.mapped);
	ck_assert_str_eq(f.name, path);
	ck_assert_uint_eq(f.header_len % 8, 0);
	ck_assert_uint_eq(f.maplen, 8 + f.header_len + sizeof w + sizeof h + sizeof f4 + 8 + 1);
	ck_assert_uint_eq(f.ntensors, ARRAY_SIZE(outs));
	for (size_t i = 0; i < ARRAY_SIZE(outs); i++) {
		const nm_st_tensor *t = &f.t[i];
		ck_assert_str_eq(t->name, outs[i].name);
		ck_assert_int_eq(t->dtype, outs[i].dtype);
		ck_assert_int_eq(t->ndim, outs[i].ndim);
		for (int k = 0; k < t->ndim; k++)
			ck_assert_uint_eq(t->shape[k], outs[i].shape[k]);
		ck_assert_uint_eq(t->nbytes, outs[i].nbytes);
		ck_assert(t->nbytes == 0 || memcmp(t->data, outs[i].data, t->nbytes) == 0);
	}
	double got[6];
	ck_assert_int_eq(nm_st_decode(&f, &f.t[0], 0, 6, got, err, sizeof err), NM_ST_OK);
	for (int i = 0; i < 6; i++)
		ck_assert(same_double(got[i], w[i]));
	ck_assert_int_eq(nm_st_decode(&f, &f.t[1], 0, 4, got, err, sizeof err), NM_ST_OK);
	ck_assert(got[0] == 1 && got[1] == 65504 && got[2] == 0x1p-24 && signbit(got[3]));
	ck_assert_int_eq(nm_st_decode(&f, &f.t[3], 0, 1, got, err, sizeof err), NM_ST_OK);
	ck_assert(got[0] == -0.1);
	/* a name with a newline is shown escaped: the message stays one line */
	ck_assert_int_eq(nm_st_decode(&f, &f.t[1], 9, 1, got, err, sizeof err), NM_ST_ERR_RANGE);
	char want[300];
	snprintf(want, sizeof want,
	         "%s: tensor 'h\"al\\x5cf\\x0a\\xc3\\xa9': elements [9, 9 + 1) outside its 4",
	         path);
	ck_assert_str_eq(err, want);
	nm_st_close(&f);
	/* nothing else in the folder: the temporary was renamed */
	snprintf(path, sizeof path, "%s/none.safetensors", tmpdir);
	ck_assert_int_eq(nm_st_write(path, NULL, 0, err, sizeof err), NM_ST_OK);
	ck_assert_int_eq(nm_st_open(path, &f, err, sizeof err), NM_ST_OK);
	ck_assert(f.ntensors == 0 && f.maplen == 16);
	ck_assert(memcmp((const char *)f.map + 8, "{}      ", 8) == 0);
	nm_st_close(&f);
	remove_in_tmpdir("rt.safetensors");
	remove_in_tmpdir("none.safetensors");
	ck_assert_int_eq(rmdir(tmpdir), 0);
}
END_TEST

START_TEST(test_open_errors)
{
	make_tmpdir();
	char path[128], want[300], err[256];
	nm_st_file f;
	/* missing */
	snprintf(path, sizeof path, "%s/missing.safetensors", tmpdir);
	ck_assert_int_eq(nm_st_open(path, &f, err, sizeof err), NM_ST_ERR_IO);
	snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
	ck_assert_str_eq(err, want);
	ck_assert(f.map == NULL && f.t == NULL);
	/* a folder, a device */
	ck_assert_int_eq(nm_st_open(tmpdir, &f, err, sizeof err), NM_ST_ERR_IO);
	snprintf(want, sizeof want, "%s: not a regular file", tmpdir);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(nm_st_open("/dev/zero", &f, err, sizeof err), NM_ST_ERR_IO);
	ck_assert_str_eq(err, "/dev/zero: not a regular file");
	/* empty, and short of the length */
	snprintf(path, sizeof path, "%s/empty.safetensors", tmpdir);
	FILE *fp = fopen(path, "wb");
	ck_assert(fp != NULL);
	ck_assert(fwrite("\x02\0\0", 1, 3, fp) == 3);
	fclose(fp);
	ck_assert_int_eq(nm_st_open(path, &f, err, sizeof err), NM_ST_ERR_FORMAT);
	snprintf(want, sizeof want, "%s: 3 bytes, too short for the 8-byte header length", path);
	ck_assert_str_eq(err, want);
	/* a path through a file */
	char sub[160];
	snprintf(sub, sizeof sub, "%s/x", path);
	ck_assert_int_eq(nm_st_open(sub, &f, err, sizeof err), NM_ST_ERR_IO);
	snprintf(want, sizeof want, "%s: cannot open: Not a directory", sub);
	ck_assert_str_eq(err, want);
	/* a malformed file on disk: the map is released, the message names it */
	size_t len;
	const char *bad = "{" E("w", "F32", "[2, 3]", 0, 12) "}";
	uint8_t *b = build(bad, strlen(bad), NULL, 12, &len);
	fp = fopen(path, "wb");
	ck_assert(fp != NULL);
	ck_assert(fwrite(b, 1, len, fp) == len);
	fclose(fp);
	free(b);
	ck_assert_int_eq(nm_st_open(path, &f, err, sizeof err), NM_ST_ERR_FORMAT);
	snprintf(want, sizeof want,
	         "%s: tensor 'w': data_offsets [0, 12] hold 12 bytes, shape [2, 3] F32 needs 24",
	         path);
	ck_assert_str_eq(err, want);
	ck_assert(f.map == NULL && !f.mapped);
	/* writes that cannot happen leave nothing */
	static const uint64_t s2[] = {2};
	nm_st_out o = {"a", NM_ST_U8, 1, s2, "xy", 2};
	snprintf(sub, sizeof sub, "%s/no/such/dir.safetensors", tmpdir);
	ck_assert_int_eq(nm_st_write(sub, &o, 1, err, sizeof err), NM_ST_ERR_IO);
	ck_assert_msg(strncmp(err, sub, strlen(sub)) == 0 && strstr(err, ": cannot write: "), "%s",
	              err);
	remove_in_tmpdir("empty.safetensors");
	ck_assert_int_eq(rmdir(tmpdir), 0);
}
END_TEST

START_TEST(test_unreadable)
{
	if (geteuid() == 0) { /* root reads any file: nothing to show */
		t_skip("safetensors", "an unreadable file (running as root)");
		return;
	}
	make_tmpdir();
	char path[128], want[300], err[256];
	snprintf(path, sizeof path, "%s/locked.safetensors", tmpdir);
	FILE *fp = fopen(path, "wb");
	ck_assert(fp != NULL);
	ck_assert(fwrite("\x02\0\0\0\0\0\0\0{}", 1, 10, fp) == 10);
	fclose(fp);
	ck_assert_int_eq(chmod(path, 0), 0);
	nm_st_file f;
	ck_assert_int_eq(nm_st_open(path, &f, err, sizeof err), NM_ST_ERR_IO);
	snprintf(want, sizeof want, "%s: cannot open: Permission denied", path);
	ck_assert_str_eq(err, want);
	remove_in_tmpdir("locked.safetensors");
	ck_assert_int_eq(rmdir(tmpdir), 0);
}
END_TEST

/* nm_st_encode refuses what it could not read back */
static const uint64_t we_s2[] = {2}, we_s3[] = {3}, we_s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1},
                      we_big[] = {UINT64_MAX, 2};
static const struct {
	nm_st_out o[2];
	size_t n;
	nm_st_status st;
	const char *msg;
} write_errors[] = {
    {{{"a", NM_ST_U8, 1, we_s2, "xy", 2}, {"a", NM_ST_U8, 1, we_s2, "xy", 2}},
     2,
     NM_ST_ERR_FORMAT,
     "out: duplicate tensor name 'a'"},
    {{{"a", NM_ST_U8, 1, we_s2, "xyz", 3}},
     1,
     NM_ST_ERR_FORMAT,
     "out: tensor 'a': 3 bytes given, shape [2] U8 needs 2"},
    {{{"__metadata__", NM_ST_U8, 1, we_s2, "xy", 2}},
     1,
     NM_ST_ERR_FORMAT,
     "out: a tensor cannot be called '__metadata__'"},
    {{{"\xc0\x80", NM_ST_U8, 1, we_s2, "xy", 2}},
     1,
     NM_ST_ERR_FORMAT,
     "out: tensor '\\xc0\\x80': the name is not valid UTF-8"},
    {{{"a", NM_ST_U8, 9, we_s9, "x", 1}},
     1,
     NM_ST_ERR_UNSUPPORTED,
     "out: tensor 'a': 9 dimensions (0 to 8 are written)"},
    {{{"a", NM_ST_NDTYPES, 1, we_s2, "xy", 2}},
     1,
     NM_ST_ERR_UNSUPPORTED,
     "out: tensor 'a': unknown dtype 20"},
    {{{"a", NM_ST_F4, 1, we_s3, "xy", 2}},
     1,
     NM_ST_ERR_FORMAT,
     "out: tensor 'a': shape [3] F4 is 12 bits, not a whole number of bytes"},
    {{{"a", NM_ST_U8, 2, we_big, "xy", 2}},
     1,
     NM_ST_ERR_RANGE,
     "out: tensor 'a': shape [18446744073709551615, 2] U8 overflows 64 bits"},
    {{{NULL, NM_ST_U8, 1, we_s2, "xy", 2}}, 1, NM_ST_ERR_FORMAT, "out: tensor 0 has no name"},
};

START_TEST(test_write_errors)
{
	char err[256];
	void *buf = (void *)1;
	size_t len = 1;
	nm_st_status st = nm_st_encode(write_errors[_i].o, write_errors[_i].n, &buf, &len, "out",
	                               err, sizeof err);
	ck_assert_int_eq(st, write_errors[_i].st);
	ck_assert_str_eq(err, write_errors[_i].msg);
	ck_assert(buf == NULL && len == 0);
}
END_TEST

/* ---- one malformed file per rule ---- */

#define T1 "\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}"

static const struct {
	const char *json; /* header; "" with raw */
	size_t dlen;      /* zero bytes of data after it */
	nm_st_status st;
	const char *msg; /* the whole line after "m: " */
} malformed[] = {
    /* the first byte */
    {"[]", 0, NM_ST_ERR_FORMAT, "header does not start with '{' (found '[')"},
    {"", 0, NM_ST_ERR_FORMAT, "header does not start with '{' (found the end of the header)"},
    {"\n{}", 0, NM_ST_ERR_FORMAT, "header does not start with '{' (found byte 0x0a)"},
    /* JSON syntax */
    {"{", 0, NM_ST_ERR_FORMAT,
     "bad header: expected a string, found the end of the header at header byte 1"},
    {"{\"t\" {}}", 0, NM_ST_ERR_FORMAT,
     "bad header: expected ':' after a key, found '{' at header byte 5"},
    {"{" T1 ",}", 1, NM_ST_ERR_FORMAT,
     "bad header: expected a string, found '}' at header byte 53"},
    {"{" T1 " " T1 "}", 1, NM_ST_ERR_FORMAT,
     "bad header: expected ',' or '}' after a value, found '\"' at header byte 53"},
    {"{\"t", 0, NM_ST_ERR_FORMAT, "bad header: unterminated string from header byte 1"},
    {"{'t':{}}", 0, NM_ST_ERR_FORMAT, "bad header: expected a string, found ''' at header byte 1"},
    {"{\"a\tb\":{}}", 0, NM_ST_ERR_FORMAT,
     "bad header: control byte 0x09 inside a string at header byte 3"},
    {"{\"a\\x\":{}}", 0, NM_ST_ERR_FORMAT, "bad header: unknown escape at header byte 3"},
    {"{\"a\\u12g4\":{}}", 0, NM_ST_ERR_FORMAT,
     "bad header: \\u needs four hex digits at header byte 5"},
    {"{\"a\\ud800\":{}}", 0, NM_ST_ERR_FORMAT,
     "bad header: high surrogate \\ud800 without a low one at header byte 3"},
    {"{\"a\\ud800\\u0041\":{}}", 0, NM_ST_ERR_FORMAT,
     "bad header: high surrogate \\ud800 without a low one at header byte 3"},
    {"{\"a\\udc00\":{}}", 0, NM_ST_ERR_FORMAT,
     "bad header: lone low surrogate \\udc00 at header byte 3"},
    {"{\"\xc0\x80\":{}}", 0, NM_ST_ERR_FORMAT, "bad header: invalid UTF-8 at header byte 2"},
    {"{\"\xed\xa0\x80\":{}}", 0, NM_ST_ERR_FORMAT, "bad header: invalid UTF-8 at header byte 2"},
    {"{\"\xf4\x90\x80\x80\":{}}", 0, NM_ST_ERR_FORMAT,
     "bad header: invalid UTF-8 at header byte 2"},
    {"{\"\xe2\x82\":{}}", 0, NM_ST_ERR_FORMAT, "bad header: invalid UTF-8 at header byte 2"},
    /* trailing bytes other than spaces */
    {"{}x", 0, NM_ST_ERR_FORMAT,
     "bad header: 'x' after the object at header byte 2 (only spaces may pad it)"},
    {"{}  \n", 0, NM_ST_ERR_FORMAT,
     "bad header: byte 0x0a after the object at header byte 4 (only spaces may pad it)"},
    {"{}{}", 0, NM_ST_ERR_FORMAT,
     "bad header: '{' after the object at header byte 2 (only spaces may pad it)"},
    /* numbers */
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}}", 1, NM_ST_ERR_FORMAT,
     "bad header: negative number at header byte 28"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1.0],\"data_offsets\":[0,1]}}", 1, NM_ST_ERR_FORMAT,
     "bad header: number at header byte 28 is not a plain integer"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1e0],\"data_offsets\":[0,1]}}", 1, NM_ST_ERR_FORMAT,
     "bad header: number at header byte 28 is not a plain integer"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[01],\"data_offsets\":[0,1]}}", 1, NM_ST_ERR_FORMAT,
     "bad header: integer with a leading zero at header byte 28"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[\"1\"],\"data_offsets\":[0,1]}}", 1, NM_ST_ERR_FORMAT,
     "bad header: expected a non-negative integer, found '\"' at header byte 28"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}}", 1,
     NM_ST_ERR_RANGE, "integer at header byte 49 does not fit 64 bits (18446744073709551616)"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1,],\"data_offsets\":[0,1]}}", 1, NM_ST_ERR_FORMAT,
     "bad header: expected a non-negative integer, found ']' at header byte 30"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,1]}}", 1, NM_ST_ERR_FORMAT,
     "bad header: expected '[' to open the shape, found '1' at header byte 27"},
    /* the schema */
    {"{\"t\":[]}", 0, NM_ST_ERR_FORMAT,
     "bad header: expected '{' to open a tensor's entry, found '[' at header byte 5"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}", 1, NM_ST_ERR_FORMAT,
     "tensor 't': unexpected key 'x'"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, NM_ST_ERR_FORMAT,
     "tensor 't': no 'data_offsets' key"},
    {"{\"t\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, NM_ST_ERR_FORMAT,
     "tensor 't': no 'dtype' key"},
    {"{\"t\":{}}", 0, NM_ST_ERR_FORMAT, "tensor 't': no 'dtype' key"},
    {"{\"t\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     NM_ST_ERR_FORMAT, "tensor 't': duplicate key 'dtype'"},
    {"{\"t\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}}", 16,
     NM_ST_ERR_UNSUPPORTED, "tensor 't': unknown dtype 'F128'"},
    {"{\"t\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NM_ST_ERR_UNSUPPORTED,
     "tensor 't': unknown dtype 'f32'"},
    {"{\"t\":{\"dtype\":1,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NM_ST_ERR_FORMAT,
     "bad header: expected a string, found '1' at header byte 14"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
     NM_ST_ERR_UNSUPPORTED, "tensor 't': shape has more than 8 dimensions"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,1]}}", 1, NM_ST_ERR_FORMAT,
     "tensor 't': data_offsets must be [BEGIN, END], two integers"},
    {"{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1]}}", 1, NM_ST_ERR_FORMAT,
     "tensor 't': data_offsets must be [BEGIN, END], two integers"},
    {"{\"a\\u0000b\":{}}", 0, NM_ST_ERR_FORMAT, "tensor 'a\\x00b': the name holds a NUL (\\u0000)"},
    /* duplicates */
    {"{" T1 "," T1 "}", 1, NM_ST_ERR_FORMAT, "duplicate tensor name 't'"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, NM_ST_ERR_FORMAT,
     "bad header: duplicate key '__metadata__'"},
    {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, NM_ST_ERR_FORMAT,
     "duplicate __metadata__ key 'k'"},
    /* metadata */
    {"{\"__metadata__\":{\"k\":1}}", 0, NM_ST_ERR_FORMAT,
     "bad header: expected a string, found '1' at header byte 21"},
    {"{\"__metadata__\":[]}", 0, NM_ST_ERR_FORMAT,
     "bad header: expected '{' to open __metadata__, found '[' at header byte 16"},
    {"{\"__metadata__\":null}", 0, NM_ST_ERR_FORMAT,
     "bad header: expected '{' to open __metadata__, found 'n' at header byte 16"},
    {"{\"__metadata__\":{\"k\":\"a\\u0000\"}}", 0, NM_ST_ERR_FORMAT,
     "bad header: __metadata__ entry at header byte 17 holds a NUL (\\u0000)"},
    /* sizes */
    {"{" E("w", "F32", "[2, 3]", 0, 12) "}", 12, NM_ST_ERR_FORMAT,
     "tensor 'w': data_offsets [0, 12] hold 12 bytes, shape [2, 3] F32 needs 24"},
    {"{" E("w", "F32", "[]", 0, 0) "}", 0, NM_ST_ERR_FORMAT,
     "tensor 'w': data_offsets [0, 0] hold 0 bytes, shape [] F32 needs 4"},
    {"{" E("w", "U8", "[1]", 4, 3) "}", 4, NM_ST_ERR_FORMAT,
     "tensor 'w': data_offsets [4, 3] end before they begin"},
    {"{" E("w", "F4", "[3]", 0, 2) "}", 2, NM_ST_ERR_FORMAT,
     "tensor 'w': shape [3] F4 is 12 bits, not a whole number of bytes"},
    {"{" E("w", "F6_E2M3", "[2]", 0, 2) "}", 2, NM_ST_ERR_FORMAT,
     "tensor 'w': shape [2] F6_E2M3 is 12 bits, not a whole number of bytes"},
    {"{" E("w", "U8", "[4294967296, 4294967296]", 0, 0) "}", 0, NM_ST_ERR_RANGE,
     "tensor 'w': shape [4294967296, 4294967296] U8 overflows 64 bits"},
    {"{" E("w", "F64", "[2305843009213693952, 1]", 0, 0) "}", 0, NM_ST_ERR_RANGE,
     "tensor 'w': shape [2305843009213693952, 1] F64 overflows 64 bits"},
    /* the tiling of the data */
    {"{" E("a", "U8", "[2]", 2, 4) "}", 4, NM_ST_ERR_FORMAT,
     "tensor 'a' begins at 2, not at 0 (a hole at the data's start)"},
    {"{" E("b", "U8", "[2]", 4, 6) "," E("a", "U8", "[2]", 0, 2) "}", 6, NM_ST_ERR_FORMAT,
     "tensor 'b' begins at 4 but the previous ends at 2 (a hole)"},
    {"{" E("a", "U8", "[4]", 0, 4) "," E("b", "U8", "[4]", 2, 6) "}", 6, NM_ST_ERR_FORMAT,
     "tensor 'b' begins at 2 but the previous ends at 4 (an overlap)"},
    {"{" E("a", "U8", "[4]", 0, 4) "," E("b", "U8", "[4]", 0, 4) "}", 4, NM_ST_ERR_FORMAT,
     "tensor 'b' begins at 0 but the previous ends at 4 (an overlap)"},
    {"{" E("a", "U8", "[4]", 0, 4) "}", 3, NM_ST_ERR_FORMAT,
     "tensor 'a' ends at 4, past the end of the data (3 bytes)"},
    {"{" E("a", "U8", "[4]", 0, 4) "}", 5, NM_ST_ERR_FORMAT,
     "the tensors end at 4 but the data holds 5 bytes (1 trailing)"},
    {"{}", 1, NM_ST_ERR_FORMAT, "the tensors end at 0 but the data holds 1 bytes (1 trailing)"},
    {"{\"__metadata__\":{\"k\":\"v\"}}", 8, NM_ST_ERR_FORMAT,
     "the tensors end at 0 but the data holds 8 bytes (8 trailing)"},
    /* long and odd names are shown short and printable */
    {"{\"0123456789012345678901234567890123456789ABC\":{\"dtype\":\"X\",\"shape\":[],"
     "\"data_offsets\":[0,0]}}",
     0, NM_ST_ERR_UNSUPPORTED,
     "tensor '0123456789012345678901234567890123456789...': unknown dtype 'X'"},
};

START_TEST(test_malformed)
{
	char err[256], want[300];
	nm_st_file f;
	memset(&f, 0xa5, sizeof f);
	nm_st_status st =
	    open_json(malformed[_i].json, NULL, malformed[_i].dlen, &f, err, sizeof err);
	ck_assert_msg(st == malformed[_i].st, "row %d: status %d, want %d (%s)", _i, st,
	              malformed[_i].st, st ? err : "");
	snprintf(want, sizeof want, "m: %s", malformed[_i].msg);
	ck_assert_msg(strcmp(err, want) == 0, "row %d:\n got  %s\n want %s", _i, err, want);
	ck_assert(f.map == NULL && f.t == NULL && f.name == NULL && f.ntensors == 0 &&
	          f.meta_keys == NULL);
}
END_TEST

/* the header length against the limit and the file */
START_TEST(test_header_length)
{
	char err[256];
	nm_st_file f;
	uint8_t b[24] = {0};
	ck_assert_int_eq(nm_st_open_mem(b, 5, "m", &f, err, sizeof err), NM_ST_ERR_FORMAT);
	ck_assert_str_eq(err, "m: 5 bytes, too short for the 8-byte header length");
	ck_assert_int_eq(nm_st_open_mem(NULL, 0, "m", &f, err, sizeof err), NM_ST_ERR_FORMAT);
	ck_assert_str_eq(err, "m: 0 bytes, too short for the 8-byte header length");
	ck_assert_int_eq(nm_st_open_mem(NULL, 8, "m", &f, err, sizeof err), NM_ST_ERR_IO);
	b[0] = 12;
	b[8] = '{';
	b[9] = '}';
	ck_assert_int_eq(nm_st_open_mem(b, 18, "m", &f, err, sizeof err), NM_ST_ERR_FORMAT);
	ck_assert_str_eq(err, "m: header length 12 exceeds the file (10 bytes after it)");
	/* 100,000,001 and 2^64 - 1: over the limit, not read */
	b[0] = 0x01;
	b[1] = 0xe1;
	b[2] = 0xf5;
	b[3] = 0x05;
	ck_assert_int_eq(nm_st_open_mem(b, 24, "m", &f, err, sizeof err), NM_ST_ERR_FORMAT);
	ck_assert_str_eq(err, "m: header length 100000001 exceeds the limit of 100000000 bytes");
	memset(b, 0xff, 8);
	ck_assert_int_eq(nm_st_open_mem(b, 24, "m", &f, err, sizeof err), NM_ST_ERR_FORMAT);
	ck_assert_str_eq(
	    err, "m: header length 18446744073709551615 exceeds the limit of 100000000 bytes");
	/* the length counts the padding: 2 bytes of "{}" + 6 spaces */
	memset(b, 0, 8);
	b[0] = 8;
	memset(b + 8, ' ', 8);
	b[8] = '{';
	b[9] = '}';
	ck_assert_int_eq(nm_st_open_mem(b, 16, "m", &f, err, sizeof err), NM_ST_OK);
	ck_assert_uint_eq(f.header_len, 8);
	nm_st_close(&f);
	/* a NULL name */
	ck_assert_int_eq(nm_st_open_mem(b, 5, NULL, &f, err, sizeof err), NM_ST_ERR_FORMAT);
	ck_assert_str_eq(err, "(safetensors): 5 bytes, too short for the 8-byte header length");
}
END_TEST

/* ---- the mutation fuzz loop ---- */

static const char *const tokens[] = {
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    " ",
    "\n",
    "\\",
    "\\u",
    "\\ud83d",
    "\\u0000",
    "0",
    "1",
    "4",
    "8",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
    "-",
    ".",
    "e",
    "\"dtype\"",
    "\"shape\"",
    "\"data_offsets\"",
    "\"__metadata__\"",
    "\"F32\"",
    "\"F16\"",
    "\"BF16\"",
    "\"F4\"",
    "\"F6_E2M3\"",
    "\"F8_E4M3\"",
    "\"U8\"",
    "\"C64\"",
    "[]",
    "[0,0]",
    "{}",
    "\xc3\xa9",
    "\xed\xa0\x80",
    "\xff",
    "\x00",
};

/* Mutate b (len bytes, capacity cap) k times with draws from stream i. */
static size_t mutate(uint8_t *b, size_t len, size_t cap, uint64_t i)
{
	int k = 1 + (int)(t_rand(400, i) % 4);
	for (int j = 0; j < k; j++) {
		uint64_t r = t_rand(401, i * 8 + (uint64_t)j);
		size_t pos = len ? (size_t)((r >> 8) % len) : 0;
		switch (r % 9) {
		case 0: /* flip a bit */
			if (len)
				b[pos] ^= (uint8_t)(1u << ((r >> 40) % 8));
			break;
		case 1: /* a random byte */
			if (len)
				b[pos] = (uint8_t)(r >> 48);
			break;
		case 2: { /* overwrite with a token */
			const char *t = tokens[(r >> 40) % ARRAY_SIZE(tokens)];
			size_t n = strlen(t) ? strlen(t) : 1;
			for (size_t m = 0; m < n && pos + m < len; m++)
				b[pos + m] = (uint8_t)t[m];
			break;
		}
		case 3: { /* insert a token */
			const char *t = tokens[(r >> 40) % ARRAY_SIZE(tokens)];
			size_t n = strlen(t) ? strlen(t) : 1;
			if (len + n <= cap) {
				memmove(b + pos + n, b + pos, len - pos);
				/* bytes, not a string:
				 * NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
				memcpy(b + pos, t, n);
				len += n;
			}
			break;
		}
		case 4: { /* delete a range */
			size_t n = 1 + (size_t)((r >> 40) % 8);
			if (pos + n <= len) {
				memmove(b + pos, b + pos + n, len - pos - n);
				len -= n;
			}
			break;
		}
		case 5: /* truncate */
			len = pos;
			break;
		case 6: /* append bytes */
			for (size_t n = 1 + (size_t)((r >> 40) % 8); n && len < cap; n--)
				b[len++] = (uint8_t)(r >> 48);
			break;
		case 7: /* the header length: nudge, or the length of what follows */
			if (len >= 8) {
				uint64_t v = 0;
				for (int q = 0; q < 8; q++)
					v |= (uint64_t)b[q] << (8 * q);
				if ((r >> 40) & 1)
					v += (uint64_t)((r >> 41) % 9) - 4;
				else if ((r >> 42) & 1)
					v = len - 8 -
					    (size_t)((r >> 43) % 4 < len - 8 ? (r >> 43) % 4 : 0);
				else
					v = (uint64_t)1 << ((r >> 44) % 64);
				for (int q = 0; q < 8; q++)
					b[q] = (uint8_t)(v >> (8 * q));
			}
			break;
		default: { /* a digit of a number changed: offsets and shapes */
			for (size_t m = 0; m < len; m++) {
				size_t p = (pos + m) % len;
				if (p >= 8 && b[p] >= '0' && b[p] <= '9') {
					b[p] = (uint8_t)('0' + (r >> 40) % 10);
					break;
				}
			}
			break;
		}
		}
	}
	return len;
}

/* A parse that succeeded must describe its bytes exactly. */
static void consistent(const nm_st_file *f, uint64_t i)
{
	const uint8_t *base = f->map, *data = base + 8 + f->header_len;
	CHECK(f->maplen >= 8 + f->header_len, "mutation %llu: header past the file",
	      (unsigned long long)i);
	uint64_t dlen = f->maplen - 8 - f->header_len, total = 0;
	uint64_t *ends = malloc((f->ntensors ? f->ntensors : 1) * 2 * sizeof *ends);
	ck_assert(ends != NULL);
	for (size_t k = 0; k < f->ntensors; k++) {
		const nm_st_tensor *t = &f->t[k];
		uint64_t count = 1;
		for (int d = 0; d < t->ndim; d++)
			count *= t->shape[d];
		CHECK(t->ndim >= 0 && t->ndim <= NM_ST_MAX_DIMS && count == t->count &&
		          (unsigned)t->dtype < NM_ST_NDTYPES &&
		          t->nbytes * 8 == t->count * nm_st_dtype_bits(t->dtype),
		      "mutation %llu: tensor %zu counts", (unsigned long long)i, k);
		CHECK(t->data == data + t->begin && t->begin <= dlen &&
		          t->nbytes <= dlen - t->begin,
		      "mutation %llu: tensor %zu outside the file", (unsigned long long)i, k);
		CHECK(nm_st_find(f, t->name) == t, "mutation %llu: names", (unsigned long long)i);
		total += t->nbytes;
		ends[2 * k] = t->begin;
		ends[2 * k + 1] = t->begin + t->nbytes;
		if (nm_st_dtype_decodable(t->dtype) && t->count) {
			double v[2];
			char err[256];
			size_t n = t->count < 2 ? (size_t)t->count : 2;
			CHECK(nm_st_decode(f, t, t->count - n, n, v, err, sizeof err) == NM_ST_OK,
			      "mutation %llu: decode: %s", (unsigned long long)i, err);
		}
	}
	/* contiguous: the bytes sum to the data, and no two spans of bytes overlap */
	CHECK(total == dlen, "mutation %llu: %llu bytes in tensors, %llu of data",
	      (unsigned long long)i, (unsigned long long)total, (unsigned long long)dlen);
	for (size_t a = 0; a < f->ntensors; a++)
		for (size_t c = a + 1; c < f->ntensors; c++)
			CHECK(ends[2 * a] == ends[2 * a + 1] || ends[2 * c] == ends[2 * c + 1] ||
			          ends[2 * a + 1] <= ends[2 * c] || ends[2 * c + 1] <= ends[2 * a],
			      "mutation %llu: tensors %zu and %zu overlap", (unsigned long long)i,
			      a, c);
	free(ends);
}

/* The seeds: the known-answer file, one with metadata and odd shapes, and
 * what the writer writes. */
static uint8_t *seed(size_t k, size_t *len)
{
	static const char meta[] =
	    "{\"__metadata__\":{\"format\":\"pt\",\"k\\u00e9\":\"\\ud83d\\ude00\"}," E(
	        "s", "F32", "[]", 0, 4) "," E("z", "BF16", "[0, 3]", 4,
	                                      4) "," E("p", "F4", "[2, 2]", 4,
	                                               6) "," E("b", "BOOL", "[2]", 6, 8) "}   ";
	switch (k) {
	case 0:
		return build(ka_json, strlen(ka_json), ka_data, sizeof ka_data, len);
	case 1:
		return build(meta, strlen(meta), "\x00\x00\x80\x3f\x12\x34\x01\x00", 8, len);
	default: {
		static const uint64_t s2[] = {2, 2}, s1[] = {3};
		static const uint16_t h[4] = {0x3c00, 0x7e00, 0xfc00, 0x0001};
		const nm_st_out o[] = {{"h", NM_ST_F16, 2, s2, h, sizeof h},
		                       {"e", NM_ST_F8_E5M2, 1, s1, "\x7b\x7c\x01", 3},
		                       {"x", NM_ST_F64, 0, NULL, "\0\0\0\0\0\0\xf0\x3f", 8}};
		void *buf;
		char err[256];
		ck_assert_int_eq(nm_st_encode(o, ARRAY_SIZE(o), &buf, len, "seed", err, sizeof err),
		                 NM_ST_OK);
		return buf;
	}
	}
}

START_TEST(test_fuzz)
{
	const uint64_t n = t_quick() ? 20000 : 100000;
	enum { CAP = 1024, NSEEDS = 3 };
	static uint8_t work[CAP];
	uint8_t *seeds[NSEEDS];
	size_t seedlen[NSEEDS];
	for (size_t k = 0; k < NSEEDS; k++) {
		seeds[k] = seed(k, &seedlen[k]);
		ck_assert(seedlen[k] <= CAP);
	}
	uint64_t ok = 0, by_status[NM_ST_ERR_NOMEM + 1] = {0};
	char err[256];
	for (uint64_t i = 0; i < n; i++) {
		size_t k = (size_t)(t_rand(402, i) % NSEEDS), len = seedlen[k];
		memcpy(work, seeds[k], len);
		len = mutate(work, len, CAP, i);
		uint8_t *copy = malloc(len ? len : 1); /* exact size for ASan */
		ck_assert(copy != NULL);
		memcpy(copy, work, len);
		nm_st_file f;
		err[0] = '\0';
		nm_st_status st = nm_st_open_mem(copy, len, "fuzz", &f, err, sizeof err);
		free(copy);
		CHECK((unsigned)st <= NM_ST_ERR_NOMEM, "status %d", st);
		by_status[st]++;
		if (st != NM_ST_OK) {
			CHECK(strncmp(err, "fuzz: ", 6) == 0 && !strchr(err, '\n') &&
			          f.map == NULL && f.t == NULL && f.ntensors == 0,
			      "mutation %llu: bad failure report '%s'", (unsigned long long)i, err);
			continue;
		}
		ok++;
		consistent(&f, i);
		/* what was read writes and reads back the same tensors */
		nm_st_out *o = malloc((f.ntensors ? f.ntensors : 1) * sizeof *o);
		ck_assert(o != NULL);
		for (size_t j = 0; j < f.ntensors; j++)
			o[j] = (nm_st_out){f.t[j].name,  f.t[j].dtype, f.t[j].ndim,
			                   f.t[j].shape, f.t[j].data,  f.t[j].nbytes};
		void *buf;
		size_t blen;
		st = nm_st_encode(o, f.ntensors, &buf, &blen, "re", err, sizeof err);
		CHECK(st == NM_ST_OK, "mutation %llu: re-encode: %s", (unsigned long long)i, err);
		nm_st_file g;
		st = nm_st_open_mem(buf, blen, "re", &g, err, sizeof err);
		CHECK(st == NM_ST_OK && g.ntensors == f.ntensors, "mutation %llu: re-read: %s",
		      (unsigned long long)i, err);
		for (size_t j = 0; j < f.ntensors; j++)
			CHECK(strcmp(g.t[j].name, f.t[j].name) == 0 &&
			          g.t[j].dtype == f.t[j].dtype && g.t[j].ndim == f.t[j].ndim &&
			          memcmp(g.t[j].shape, f.t[j].shape, sizeof g.t[j].shape) == 0 &&
			          g.t[j].nbytes == f.t[j].nbytes &&
			          (!g.t[j].nbytes ||
			           memcmp(g.t[j].data, f.t[j].data, g.t[j].nbytes) == 0),
			      "mutation %llu: tensor %zu changed", (unsigned long long)i, j);
		nm_st_close(&g);
		free(buf);
		free(o);
		nm_st_close(&f);
	}
	for (size_t k = 0; k < NSEEDS; k++)
		free(seeds[k]);
	/* the loop must reach both sides */
	ck_assert_msg(ok > n / 100 && by_status[NM_ST_ERR_FORMAT] > n / 10,
	              "%llu read, %llu format errors", (unsigned long long)ok,
	              (unsigned long long)by_status[NM_ST_ERR_FORMAT]);
	t_count("safetensors: fuzzed files", n);
}
END_TEST

Suite *suite_safetensors(void)
{
	Suite *s = suite_create("safetensors");
	TCase *tc = tcase_create("files");
	tcase_add_test(tc, test_known_answers);
	tcase_add_test(tc, test_every_encoding);
	tcase_add_loop_test(tc, test_dtypes, 0, NM_ST_NDTYPES);
	tcase_add_test(tc, test_metadata);
	tcase_add_test(tc, test_shapes_and_padding);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_unreadable);
	tcase_add_loop_test(tc, test_write_errors, 0, ARRAY_SIZE(write_errors));
	suite_add_tcase(s, tc);
	TCase *tm = tcase_create("malformed");
	tcase_add_loop_test(tm, test_malformed, 0, ARRAY_SIZE(malformed));
	tcase_add_test(tm, test_header_length);
	tcase_add_test(tm, test_fuzz);
	tcase_set_timeout(tm, 60);
	suite_add_tcase(s, tm);
	return s;
}
