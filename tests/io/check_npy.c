/*
 * check_npy.c — the .npy reader and writer (emu/io/nm_npy.c):
 *  - files written by NumPy 2.4.6 (versions 1.0, 2.0, 3.0, both byte orders)
 *    read to the right values, and the writer reproduces NumPy's bytes;
 *  - round trips for every dtype, 1-D and 2-D shapes, empty ones included,
 *    by raw encodings and by values; all 65536 fp16 encodings both orders;
 *  - hand-built malformed files, each rejected with its one-line reason;
 *  - a seeded mutation fuzz loop over headers and files.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib.h"
#include "emu/io/nm_npy.h"

/* ck_assert reports every passing check to the runner; hot loops use this. */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)

#define SP4 "    "
#define SP8 SP4 SP4
#define SP16 SP8 SP8
#define SP32 SP16 SP16
#define SP56 SP32 SP16 SP8
#define SP58 SP56 "  "
#define SP60 SP56 SP4

/* Generated with NumPy 2.4.6: np.save(f, a), or
 * np.lib.format.write_array(f, a, version=...) for 2.0 and 3.0. */
static const struct {
	const char *name;
	const char *bytes;
	size_t len;
} fixtures[] = {
    {"np_f2", /* [1, -2.5, 65504, 2**-24, inf, nan, -0.0] <f2 */
     "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (7,), }" SP60 "\n"
     "\x00<\x00\xc1\xff{\x01\x00\x00|\x00~\x00\x80",
     142},
    {"np_f4_be_2d", /* [[1.5, -3], [2**-149, FLT_MAX], [0.1, -inf]] >f4 */
     "\x93NUMPY\x01\x00v\x00{'descr': '>f4', 'fortran_order': False, 'shape': (3, 2), }" SP58 "\n"
     "?\xc0\x00\x00\xc0@\x00\x00\x00\x00\x00\x01\x7f\x7f\xff\xff=\xcc\xcc\xcd\xff\x80\x00\x00",
     152},
    {"np_f8_v2", /* [0.1, -1e300, 5e-324] <f8, version (2, 0) */
     "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }" SP58
     "\n"
     "\x9a\x99\x99\x99\x99\x99\xb9?\x9cu\x00\x88<\xe4"
     "7\xfe\x01\x00\x00\x00\x00\x00\x00\x00",
     152},
    {"np_u2_v3", /* [[0, 65535, 0x7c00]] <u2, version (3, 0) */
     "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<u2', 'fortran_order': False, 'shape': (1, 3), "
     "}" SP56 "\n"
     "\x00\x00\xff\xff\x00|",
     134},
    {"np_u1", /* [0, 255, 7] u1 */
     "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }" SP60 "\n"
     "\x00\xff\x07",
     131},
    {"np_u4_be", /* [0xdeadbeef, 1] >u4 */
     "\x93NUMPY\x01\x00v\x00{'descr': '>u4', 'fortran_order': False, 'shape': (2,), }" SP60 "\n"
     "\xde\xad\xbe\xef\x00\x00\x00\x01",
     136},
    {"np_f4_2d", /* [[1, 2, 3], [4, 5, 6.5]] <f4 */
     "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" SP58 "\n"
     "\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0@\x00\x00\xd0@",
     152},
    {"np_u1_empty_2d", /* zeros((0, 5)) u1 */
     "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (0, 5), }" SP58 "\n"
     "",
     128},
};

static const struct {
	nm_npy_dtype dtype;
	bool big;
	int version, ndim;
	size_t shape[2];
	double values[8];
	bool same_as_writer; /* little-endian 1.0: the writer reproduces the bytes */
} expect[] = {
    {NM_NPY_F2, false, 1, 1, {7, 1}, {1, -2.5, 65504, 0x1p-24, INFINITY, NAN, -0.0}, true},
    {NM_NPY_F4, true, 1, 2, {3, 2}, {1.5, -3, 0x1p-149, 0x1.fffffep127, 0.1f, -INFINITY}, false},
    {NM_NPY_F8, false, 2, 1, {3, 1}, {0.1, -1e300, 0x1p-1074}, false},
    {NM_NPY_U2, false, 3, 2, {1, 3}, {0, 65535, 0x7c00}, false},
    {NM_NPY_U1, false, 1, 1, {3, 1}, {0, 255, 7}, true},
    {NM_NPY_U4, true, 1, 1, {2, 1}, {0xdeadbeef, 1}, false},
    {NM_NPY_F4, false, 1, 2, {2, 3}, {1, 2, 3, 4, 5, 6.5}, true},
    {NM_NPY_U1, false, 1, 2, {0, 5}, {0}, true},
};

static bool same_double(double a, double b)
{
	return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

START_TEST(test_numpy_files)
{
	char err[256];
	nm_npy a;
	ck_assert_uint_eq(ARRAY_SIZE(fixtures), ARRAY_SIZE(expect));
	nm_npy_status st = nm_npy_read_mem(fixtures[_i].bytes, fixtures[_i].len, fixtures[_i].name,
	                                   &a, err, sizeof err);
	ck_assert_msg(st == NM_NPY_OK, "%s", err);
	ck_assert_int_eq(a.dtype, expect[_i].dtype);
	ck_assert_int_eq(a.big_endian, expect[_i].big);
	ck_assert_int_eq(a.version, expect[_i].version);
	ck_assert_int_eq(a.ndim, expect[_i].ndim);
	ck_assert_uint_eq(a.shape[0], expect[_i].shape[0]);
	ck_assert_uint_eq(a.shape[1], expect[_i].shape[1]);
	ck_assert_uint_eq(a.count, expect[_i].shape[0] * expect[_i].shape[1]);
	for (size_t i = 0; i < a.count; i++)
		ck_assert_msg(same_double(a.values[i], expect[_i].values[i]),
		              "%s[%zu] = %a, want %a", fixtures[_i].name, i, a.values[i],
		              expect[_i].values[i]);
	if (a.dtype == NM_NPY_F2) /* NumPy's fp16 NaN and -0 encodings */
		ck_assert(a.raw[5] == 0x7e00 && a.raw[6] == 0x8000);
	if (expect[_i].same_as_writer) {
		void *buf;
		size_t len;
		st = nm_npy_encode(a.dtype, a.ndim, a.shape, a.values, NULL, &buf, &len, "enc", err,
		                   sizeof err);
		ck_assert_msg(st == NM_NPY_OK, "%s", err);
		ck_assert_uint_eq(len, fixtures[_i].len);
		ck_assert_msg(memcmp(buf, fixtures[_i].bytes, len) == 0,
		              "%s: bytes differ from NumPy's", fixtures[_i].name);
		free(buf);
	}
	nm_npy_free(&a);
	ck_assert(a.values == NULL && a.raw == NULL);
	t_count("npy: NumPy-written files", 1);
}
END_TEST

static char tmpdir[64];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/nanmap-npy-XXXXXX");
	ck_assert(mkdtemp(tmpdir) != NULL);
}

/* Remove every file in tmpdir and tmpdir; return how many files there were. */
static int clear_tmpdir(bool remove_dir)
{
	DIR *d = opendir(tmpdir);
	ck_assert(d != NULL);
	struct dirent *e;
	int n = 0;
	char path[512];
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
		remove(path);
		n++;
	}
	closedir(d);
	if (remove_dir)
		rmdir(tmpdir);
	return n;
}

static const size_t shapes[][3] = {
    /* ndim, shape */
    {1, 0, 1}, {1, 1, 1}, {1, 5, 1}, {1, 1000, 1}, {2, 0, 3},
    {2, 3, 0}, {2, 1, 1}, {2, 4, 7}, {2, 33, 2},
};

/* A random encoding of dtype t (all bit patterns, NaNs included). */
static uint64_t random_bits(nm_npy_dtype t, uint64_t k)
{
	uint64_t r = t_rand(200 + (uint64_t)t, k);
	size_t sz = nm_npy_dtype_size(t);
	return sz == 8 ? r : r & ((1ull << (8 * sz)) - 1);
}

START_TEST(test_round_trip)
{
	nm_npy_dtype t = (nm_npy_dtype)_i;
	const emu_format *f16 = t_fmt("fp16"), *f32 = t_fmt("fp32");
	char err[256], path[128];
	uint64_t checked = 0;
	make_tmpdir();
	for (size_t s = 0; s < ARRAY_SIZE(shapes); s++) {
		int ndim = (int)shapes[s][0];
		size_t shape[2] = {shapes[s][1], shapes[s][2]}, n = shape[0] * shape[1];
		double *vals = malloc((n + 1) * sizeof *vals);
		uint32_t *raw = malloc((n + 1) * sizeof *raw);
		ck_assert(vals && raw);
		for (size_t i = 0; i < n; i++) {
			uint64_t b = random_bits(t, s * 100000 + i);
			raw[i] = (uint32_t)b;
			switch (t) {
			case NM_NPY_F2:
				vals[i] = emu_decode(f16, (emu_bits)b);
				break;
			case NM_NPY_F4:
				vals[i] = emu_decode(f32, (emu_bits)b);
				break;
			case NM_NPY_F8:
				memcpy(&vals[i], &b, sizeof b);
				break;
			default:
				vals[i] = (double)b;
				break;
			}
		}
		for (int by_raw = 0; by_raw < 2; by_raw++) {
			if (by_raw && t == NM_NPY_F8)
				continue;
			snprintf(path, sizeof path, "%s/a%zu_%d.npy", tmpdir, s, by_raw);
			nm_npy_status st = nm_npy_write(path, t, ndim, shape, by_raw ? NULL : vals,
			                                by_raw ? raw : NULL, err, sizeof err);
			ck_assert_msg(st == NM_NPY_OK, "%s", err);
			nm_npy a;
			st = nm_npy_read(path, &a, err, sizeof err);
			ck_assert_msg(st == NM_NPY_OK, "%s", err);
			ck_assert(a.dtype == t && !a.big_endian && a.version == 1 &&
			          a.ndim == ndim);
			ck_assert(a.shape[0] == shape[0] && a.shape[1] == shape[1] && a.count == n);
			ck_assert(a.values != NULL && (t == NM_NPY_F8) == (a.raw == NULL));
			for (size_t i = 0; i < n; i++) {
				CHECK(same_double(a.values[i], vals[i]), "%s %s[%zu]: %a vs %a",
				      nm_npy_dtype_name(t), path, i, a.values[i], vals[i]);
				if (t == NM_NPY_F8) {
					CHECK(memcmp(&a.values[i], &vals[i], 8) == 0,
					      "f8 bits [%zu]", i);
					continue;
				}
				/* by value a NaN becomes the emulator's NaN; else bits survive */
				bool nan = isnan(vals[i]);
				CHECK(a.raw[i] == raw[i] || (!by_raw && nan),
				      "%s [%zu]: 0x%x vs 0x%x", nm_npy_dtype_name(t), i, a.raw[i],
				      raw[i]);
			}
			checked += n;
			nm_npy_free(&a);
		}
		free(vals);
		free(raw);
	}
	/* the temporary files were all renamed: only the targets are left */
	int files = clear_tmpdir(true);
	ck_assert_int_eq(files, (int)ARRAY_SIZE(shapes) * (t == NM_NPY_F8 ? 1 : 2));
	t_count("npy: round-tripped elements", checked);
}
END_TEST

/* Every fp16 encoding, little- and big-endian, decodes as the emulator does. */
START_TEST(test_f2_every_encoding)
{
	const emu_format *f16 = t_fmt("fp16");
	uint32_t *raw = malloc(65536 * sizeof *raw);
	ck_assert(raw != NULL);
	for (uint32_t i = 0; i < 65536; i++)
		raw[i] = i;
	void *buf;
	size_t len;
	char err[256];
	size_t shape[2] = {256, 256};
	ck_assert(nm_npy_encode(NM_NPY_F2, 2, shape, NULL, raw, &buf, &len, "f2", err,
	                        sizeof err) == NM_NPY_OK);
	for (int big = 0; big < 2; big++) {
		unsigned char *b = buf;
		if (big) { /* '<f2' -> '>f2', swap the data */
			char *d = memchr(b, '<', 64);
			ck_assert(d != NULL);
			*d = '>';
			for (size_t i = len - 2 * 65536; i < len; i += 2) {
				unsigned char x = b[i];
				b[i] = b[i + 1];
				b[i + 1] = x;
			}
		}
		nm_npy a;
		ck_assert_msg(nm_npy_read_mem(buf, len, "f2", &a, err, sizeof err) == NM_NPY_OK,
		              "%s", err);
		ck_assert(a.big_endian == (big == 1) && a.count == 65536);
		for (uint32_t i = 0; i < 65536; i++) {
			double v = emu_decode(f16, i);
			CHECK(a.raw[i] == i && same_double(a.values[i], v), "0x%04x: %a vs %a", i,
			      a.values[i], v);
		}
		nm_npy_free(&a);
	}
	free(buf);
	free(raw);
	t_count("npy: fp16 encodings decoded", 2 * 65536);
}
END_TEST

/* The writer rounds floats to nearest even through the emulator. */
START_TEST(test_writer_rounds)
{
	static const double in[] = {1 + 0x1p-11, 1 + 0x1.8p-10, 65519.99, 65520, 0x1p-25, 0.1};
	static const uint32_t f2[] = {0x3c00, 0x3c02, 0x7bff, 0x7c00, 0x0000, 0x2e66};
	char err[256];
	void *buf;
	size_t len, shape[2] = {ARRAY_SIZE(in), 1};
	ck_assert(nm_npy_encode(NM_NPY_F2, 1, shape, in, NULL, &buf, &len, "w", err, sizeof err) ==
	          NM_NPY_OK);
	nm_npy a;
	ck_assert(nm_npy_read_mem(buf, len, "w", &a, err, sizeof err) == NM_NPY_OK);
	for (size_t i = 0; i < ARRAY_SIZE(in); i++)
		ck_assert_msg(a.raw[i] == f2[i], "%a -> 0x%04x, want 0x%04x", in[i], a.raw[i],
		              f2[i]);
	nm_npy_free(&a);
	free(buf);
	double x = 0.1;
	shape[0] = 1;
	ck_assert(nm_npy_encode(NM_NPY_F4, 1, shape, &x, NULL, &buf, &len, "w", err, sizeof err) ==
	          NM_NPY_OK);
	ck_assert(nm_npy_read_mem(buf, len, "w", &a, err, sizeof err) == NM_NPY_OK);
	ck_assert_uint_eq(a.raw[0], 0x3dcccccd);
	nm_npy_free(&a);
	free(buf);
	t_count("npy: writer roundings", ARRAY_SIZE(in) + 1);
}
END_TEST

static const struct {
	nm_npy_dtype t;
	int ndim;
	size_t n;
	double v;     /* by value when raw == 0 */
	uint32_t raw; /* by raw when nonzero */
	nm_npy_status st;
	const char *msg;
} write_errors[] = {
    {NM_NPY_U1, 1, 1, 256, 0, NM_NPY_ERR_RANGE,
     "w: value 256 at index 0 is not an integer that |u1 holds"},
    {NM_NPY_U2, 1, 1, 1.5, 0, NM_NPY_ERR_RANGE, "w: value 1.5 at index 0"},
    {NM_NPY_U4, 1, 1, -1, 0, NM_NPY_ERR_RANGE, "w: value -1 at index 0"},
    {NM_NPY_U4, 1, 1, NAN, 0, NM_NPY_ERR_RANGE, "w: value nan at index 0"},
    {NM_NPY_U4, 1, 1, 4294967296.0, 0, NM_NPY_ERR_RANGE, "w: value 4294967296 at index 0"},
    {NM_NPY_F2, 1, 1, 0, 0x10000, NM_NPY_ERR_RANGE,
     "w: raw encoding 0x10000 at index 0 does not fit <f2"},
    {NM_NPY_U1, 1, 1, 0, 0x100, NM_NPY_ERR_RANGE,
     "w: raw encoding 0x100 at index 0 does not fit |u1"},
    {NM_NPY_F8, 1, 1, 0, 1, NM_NPY_ERR_RANGE, "w: raw encodings cannot fill <f8"},
    {NM_NPY_F4, 3, 1, 1, 0, NM_NPY_ERR_UNSUPPORTED, "w: 3-d arrays are not written"},
    {NM_NPY_F4, 0, 1, 1, 0, NM_NPY_ERR_UNSUPPORTED, "w: 0-d arrays are not written"},
    {NM_NPY_NDTYPES, 1, 1, 1, 0, NM_NPY_ERR_UNSUPPORTED, "w: unknown dtype"},
};

START_TEST(test_write_errors)
{
	char err[256] = "";
	void *buf = (void *)1;
	size_t len = 1, shape[2] = {write_errors[_i].n, 1};
	double v = write_errors[_i].v;
	uint32_t r = write_errors[_i].raw;
	nm_npy_status st =
	    nm_npy_encode(write_errors[_i].t, write_errors[_i].ndim, shape, r ? NULL : &v,
	                  r ? &r : NULL, &buf, &len, "w", err, sizeof err);
	ck_assert_int_eq(st, write_errors[_i].st);
	ck_assert_msg(strncmp(err, write_errors[_i].msg, strlen(write_errors[_i].msg)) == 0,
	              "got '%s', want '%s'", err, write_errors[_i].msg);
	ck_assert(buf == NULL && len == 0);
	t_count("npy: writer errors", 1);
}
END_TEST

START_TEST(test_write_io_errors)
{
	char err[256];
	double v = 1;
	size_t shape[2] = {1, 1};
	nm_npy_status st =
	    nm_npy_write("/nonexistent-dir/x.npy", NM_NPY_F4, 1, shape, &v, NULL, err, sizeof err);
	ck_assert_int_eq(st, NM_NPY_ERR_IO);
	ck_assert_msg(strcmp(err, "/nonexistent-dir/x.npy: cannot write: No such file or directory") ==
	                  0,
	              "%s", err);
	/* both values and raw, or neither */
	uint32_t r = 1;
	void *buf;
	size_t len;
	ck_assert_int_eq(
	    nm_npy_encode(NM_NPY_F4, 1, shape, &v, &r, &buf, &len, "w", err, sizeof err),
	    NM_NPY_ERR_RANGE);
	ck_assert_int_eq(
	    nm_npy_encode(NM_NPY_F4, 1, shape, NULL, NULL, &buf, &len, "w", err, sizeof err),
	    NM_NPY_ERR_RANGE);
	/* a failed write leaves nothing behind, a good one replaces the target */
	make_tmpdir();
	char path[128];
	snprintf(path, sizeof path, "%s/t.npy", tmpdir);
	v = 300;
	ck_assert_int_eq(nm_npy_write(path, NM_NPY_U1, 1, shape, &v, NULL, err, sizeof err),
	                 NM_NPY_ERR_RANGE);
	ck_assert_int_eq(clear_tmpdir(false), 0);
	v = 3;
	ck_assert_int_eq(nm_npy_write(path, NM_NPY_U1, 1, shape, &v, NULL, err, sizeof err),
	                 NM_NPY_OK);
	v = 4;
	ck_assert_int_eq(nm_npy_write(path, NM_NPY_U1, 1, shape, &v, NULL, err, sizeof err),
	                 NM_NPY_OK);
	nm_npy a;
	ck_assert_int_eq(nm_npy_read(path, &a, err, sizeof err), NM_NPY_OK);
	ck_assert(a.values[0] == 4);
	nm_npy_free(&a);
	ck_assert_int_eq(clear_tmpdir(true), 1);
	/* reading a missing file */
	ck_assert_int_eq(nm_npy_read(path, &a, err, sizeof err), NM_NPY_ERR_IO);
	ck_assert(strncmp(err, path, strlen(path)) == 0 && strstr(err, "cannot open"));
	ck_assert(a.values == NULL && a.raw == NULL && a.count == 0);
	t_count("npy: writer I/O checks", 8);
}
END_TEST

/* A hand-built file: magic, version, length field, header text, data. */
static unsigned char *build(int major, int minor, const char *header, size_t data_len,
                            long hlen_override, size_t *len)
{
	size_t hl = strlen(header), lb = major == 1 ? 2 : 4;
	*len = 8 + lb + hl + data_len;
	unsigned char *b = calloc(1, *len + 1);
	ck_assert(b != NULL);
	memcpy(b, "\x93NUMPY", 6);
	b[6] = (unsigned char)major;
	b[7] = (unsigned char)minor;
	uint64_t h = hlen_override >= 0 ? (uint64_t)hlen_override : hl;
	for (size_t i = 0; i < lb; i++)
		b[8 + i] = (unsigned char)(h >> (8 * i));
	memcpy(b + 8 + lb, header, hl);
	for (size_t i = 0; i < data_len; i++)
		b[8 + lb + hl + i] = (unsigned char)i;
	return b;
}

#define H(descr, fortran, shape)                                                                   \
	"{'descr': '" descr "', 'fortran_order': " fortran ", 'shape': " shape ", }\n"

static const struct {
	int major, minor;
	const char *header;
	size_t data;
	long hlen; /* -1: the header's length */
	long cut;  /* > 0: keep only this many bytes */
	nm_npy_status st;
	const char *msg; /* after "bad.npy: " */
} malformed[] = {
    {1, 0, H("<f4", "False", "(2,)"), 8, -1, 0, NM_NPY_OK, ""},
    {1, 0, H("<f4", "False", "(2,)"), 8, -1, 5, NM_NPY_ERR_FORMAT, "bad magic: not a .npy file"},
    {1, 0, H("<f4", "False", "(2,)"), 8, -1, 7, NM_NPY_ERR_FORMAT,
     "truncated header: 7 bytes, no version"},
    {1, 0, H("<f4", "False", "(2,)"), 8, -1, 9, NM_NPY_ERR_FORMAT,
     "truncated header: 9 bytes, no header length"},
    {2, 0, H("<f4", "False", "(2,)"), 8, -1, 11, NM_NPY_ERR_FORMAT,
     "truncated header: 11 bytes, no header length"},
    {1, 0, H("<f4", "False", "(2,)"), 8, -1, 30, NM_NPY_ERR_FORMAT,
     "truncated header: 20 of 58 header bytes"},
    {1, 0, H("<f4", "False", "(2,)"), 8, 200, 0, NM_NPY_ERR_FORMAT,
     "truncated header: 66 of 200 header bytes"},
    {2, 0, H("<f4", "False", "(2,)"), 8, 10001, 0, NM_NPY_ERR_FORMAT,
     "header too long: 10001 bytes (limit 10000)"},
    {3, 0, H("<f4", "False", "(2,)"), 8, 0xffffffffL, 0, NM_NPY_ERR_FORMAT,
     "header too long: 4294967295 bytes"},
    {4, 0, H("<f4", "False", "(2,)"), 8, -1, 0, NM_NPY_ERR_UNSUPPORTED,
     "unsupported format version 4.0"},
    {1, 1, H("<f4", "False", "(2,)"), 8, -1, 0, NM_NPY_ERR_UNSUPPORTED,
     "unsupported format version 1.1"},
    {1, 0, H("<i4", "False", "(2,)"), 8, -1, 0, NM_NPY_ERR_UNSUPPORTED, "unsupported dtype '<i4'"},
    {1, 0, H("|f4", "False", "(2,)"), 8, -1, 0, NM_NPY_ERR_UNSUPPORTED, "unsupported dtype '|f4'"},
    {1, 0, H("f4", "False", "(2,)"), 8, -1, 0, NM_NPY_ERR_UNSUPPORTED, "unsupported dtype 'f4'"},
    {1, 0, H("<U10", "False", "(2,)"), 8, -1, 0, NM_NPY_ERR_UNSUPPORTED,
     "unsupported dtype '<U10'"},
    {1, 0, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, -1, 0,
     NM_NPY_ERR_UNSUPPORTED, "unsupported dtype: structured"},
    {1, 0, H("<f4", "True", "(2,)"), 8, -1, 0, NM_NPY_ERR_UNSUPPORTED,
     "fortran_order True is not supported"},
    {1, 0, H("<f4", "False", "()"), 4, -1, 0, NM_NPY_ERR_UNSUPPORTED,
     "0-d arrays are not supported"},
    {1, 0, H("<f4", "False", "(2, 2, 2)"), 32, -1, 0, NM_NPY_ERR_UNSUPPORTED,
     "3-d arrays are not supported"},
    {1, 0, H("<f4", "False", "(2)"), 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: shape (n) is an int"},
    {1, 0, H("<f4", "False", "(4,)"), 12, -1, 0, NM_NPY_ERR_DATA,
     "data shorter than the shape says: 12 bytes, expected 16"},
    {1, 0, H("<f4", "False", "(4,)"), 17, -1, 0, NM_NPY_ERR_DATA,
     "1 trailing bytes after the 16 data bytes"},
    {1, 0, H("<f8", "False", "(3, 5)"), 0, -1, 0, NM_NPY_ERR_DATA,
     "data shorter than the shape says: 0 bytes, expected 120"},
    {1, 0, H("<f4", "False", "(4294967296, 4294967297)"), 0, -1, 0, NM_NPY_ERR_RANGE,
     "overflow: the shape product"},
    {1, 0, H("<f4", "False", "(99999999999999999999999,)"), 0, -1, 0, NM_NPY_ERR_RANGE,
     "overflow: a shape dimension is too large"},
    {1, 0, H("<f8", "False", "(2305843009213693952,)"), 0, -1, 0, NM_NPY_ERR_RANGE,
     "overflow: 2305843009213693952 elements of 8 bytes"},
    {1, 0, "{'descr': '<f4', 'fortran_order': False, }", 0, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: no 'shape' key"},
    {1, 0, "{'descr': '<f4', 'shape': (1,), 'fortran_order': False, 'extra': 1}", 4, -1, 0,
     NM_NPY_ERR_FORMAT, "bad header: unexpected key 'extra'"},
    {1, 0, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, -1, 0,
     NM_NPY_ERR_FORMAT, "bad header: duplicate key 'descr'"},
    {1, 0, H("<f4", "False", "(03,)"), 12, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: integer with a leading zero"},
    {1, 0, H("<f4", "False", "(-1,)"), 0, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: expected a non-negative integer in the shape, found '-'"},
    {1, 0, H("<f4", "False", "(1 2)"), 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: expected ',' or ')' in the shape"},
    {1, 0, H("<f4", "no", "(2,)"), 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: fortran_order must be True or False, found 'n'"},
    {1, 0, H("<f4", "Falsey", "(2,)"), 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: fortran_order must be True or False"},
    {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }x", 8, -1, 0,
     NM_NPY_ERR_FORMAT, "bad header: 'x' after the dict"},
    {1, 0, "{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: expected ',' or '}' after a value, found 'f'"},
    {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: expected a quoted string, found end of header"},
    {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) 'x': 1}", 8, -1, 0,
     NM_NPY_ERR_FORMAT, "bad header: expected ',' or '}' after a value"},
    {1, 0, "['descr', '<f4']", 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: expected '{' to open the header dict, found '['"},
    {1, 0, "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,), }", 8, -1, 0,
     NM_NPY_ERR_FORMAT, "bad header: escape, newline or NUL inside a string"},
    {1, 0, "", 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: expected '{' to open the header dict, found end of header"},
    /* accepted variants: Python 2 longs (1.0/2.0 only), double quotes, no
     * trailing comma, other key order, no padding, '=' and '>' byte orders */
    {1, 0, H("<f4", "False", "(2L,)"), 8, -1, 0, NM_NPY_OK, ""},
    {2, 0, H("<f4", "False", "(1L, 2L)"), 8, -1, 0, NM_NPY_OK, ""},
    {3, 0, H("<f4", "False", "(2L,)"), 8, -1, 0, NM_NPY_ERR_FORMAT,
     "bad header: expected ',' or ')' in the shape, found 'L'"},
    {1, 0, "{\"shape\":(2,),\"fortran_order\":False,\"descr\":\"=f4\"}", 8, -1, 0, NM_NPY_OK, ""},
    {1, 0, H(">u2", "False", "(2, 1,)"), 4, -1, 0, NM_NPY_OK, ""},
    {1, 0, H("<f4", "False", "(0,)"), 0, -1, 0, NM_NPY_OK, ""},
};

START_TEST(test_malformed)
{
	size_t len;
	unsigned char *b = build(malformed[_i].major, malformed[_i].minor, malformed[_i].header,
	                         malformed[_i].data, malformed[_i].hlen, &len);
	if (malformed[_i].cut > 0)
		len = (size_t)malformed[_i].cut;
	if (malformed[_i].cut == 5)
		b[4] = 'X'; /* "\x93NUMXY" */
	/* an exact-size copy, so that reading past the end is an ASan error */
	unsigned char *copy = malloc(len ? len : 1);
	ck_assert(copy != NULL);
	memcpy(copy, b, len);
	free(b);
	char err[256] = "";
	nm_npy a;
	nm_npy_status st = nm_npy_read_mem(copy, len, "bad.npy", &a, err, sizeof err);
	char want[300];
	snprintf(want, sizeof want, "bad.npy: %s", malformed[_i].msg);
	ck_assert_msg(st == malformed[_i].st, "case %d: status %d, want %d (%s)", _i, st,
	              malformed[_i].st, err);
	if (st == NM_NPY_OK) {
		ck_assert(a.count * nm_npy_dtype_size(a.dtype) == malformed[_i].data);
		nm_npy_free(&a);
	} else {
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "case %d: got '%s', want '%s'",
		              _i, err, want);
		ck_assert(strchr(err, '\n') == NULL);
		ck_assert(a.values == NULL && a.raw == NULL);
	}
	free(copy);
	t_count("npy: hand-built files", 1);
}
END_TEST

/* The same through a real file: the reason names the path. */
START_TEST(test_malformed_file)
{
	make_tmpdir();
	char path[128], err[256];
	snprintf(path, sizeof path, "%s/short.npy", tmpdir);
	size_t len;
	unsigned char *b = build(1, 0, H("<f2", "False", "(3, 2)"), 11, -1, &len);
	FILE *fp = fopen(path, "wb");
	ck_assert(fp != NULL);
	ck_assert(fwrite(b, 1, len, fp) == len);
	fclose(fp);
	free(b);
	nm_npy a;
	ck_assert_int_eq(nm_npy_read(path, &a, err, sizeof err), NM_NPY_ERR_DATA);
	char want[300];
	snprintf(want, sizeof want, "%s: data shorter than the shape says: 11 bytes, expected 12",
	         path);
	ck_assert_str_eq(err, want);
	/* a stream is read as far as its header says: /dev/zero is refused at its
	 * magic, naming what it starts with */
	ck_assert_int_eq(nm_npy_read("/dev/zero", &a, err, sizeof err), NM_NPY_ERR_FORMAT);
	ck_assert_str_eq(err, "/dev/zero: bad magic: not a .npy file (it starts with "
	                      "'\\x00\\x00\\x00\\x00\\x00\\x00', a .npy file with \\x93NUMPY)");
	/* a valid header followed by endless data: refused after 64 KiB more */
	snprintf(path, sizeof path, "%s/long.npy", tmpdir);
	b = build(1, 0, H("|u1", "False", "(4,)"), 4, -1, &len);
	fp = fopen(path, "wb");
	ck_assert(fp != NULL);
	ck_assert(fwrite(b, 1, len, fp) == len);
	static unsigned char zeros[70000];
	ck_assert(fwrite(zeros, 1, sizeof zeros, fp) == sizeof zeros);
	fclose(fp);
	free(b);
	ck_assert_int_eq(nm_npy_read(path, &a, err, sizeof err), NM_NPY_ERR_DATA);
	ck_assert_msg(strstr(err, "more than 65536 trailing bytes") != NULL, "%s", err);
	/* more elements than nanmap takes */
	b = build(1, 0, H("|u1", "False", "(2147483649,)"), 0, -1, &len);
	ck_assert_int_eq(nm_npy_read_mem(b, len, "big", &a, err, sizeof err), NM_NPY_ERR_RANGE);
	ck_assert_msg(strstr(err, "more than the 2147483648 nanmap takes") != NULL, "%s", err);
	free(b);
	clear_tmpdir(true);
	t_count("npy: hand-built files", 1);
}
END_TEST

/* ---- the mutation fuzz loop ---- */

static const char *const tokens[] = {
    "{",
    "}",
    "(",
    ")",
    ",",
    ":",
    "'",
    "\"",
    " ",
    "\n",
    "0",
    "1",
    "9",
    "L",
    "True",
    "False",
    "'descr'",
    "'shape'",
    "'fortran_order'",
    "<f2",
    ">f4",
    "|u1",
    "<u4",
    "=f8",
    "[",
    "]",
    "99999999999999999999",
    "4294967296",
    "18446744073709551615",
    "(0,)",
    "(1, 1)",
    "()",
    "\\",
    "\x00",
    "\xff",
};

/* Mutate b (len bytes, capacity cap) k times with draws from stream i. */
static size_t mutate(unsigned char *b, size_t len, size_t cap, uint64_t i)
{
	int k = 1 + (int)(t_rand(300, i) % 4);
	for (int j = 0; j < k; j++) {
		uint64_t r = t_rand(301, i * 8 + (uint64_t)j);
		size_t pos = len ? (size_t)((r >> 8) % len) : 0;
		switch (r % 8) {
		case 0: /* flip a bit */
			if (len)
				b[pos] ^= (unsigned char)(1u << ((r >> 40) % 8));
			break;
		case 1: /* a random byte */
			if (len)
				b[pos] = (unsigned char)(r >> 48);
			break;
		case 2: { /* overwrite with a token */
			const char *t = tokens[(r >> 40) % ARRAY_SIZE(tokens)];
			size_t n = strlen(t) ? strlen(t) : 1;
			for (size_t m = 0; m < n && pos + m < len; m++)
				b[pos + m] = (unsigned char)t[m];
			break;
		}
		case 3: { /* insert a token */
			const char *t = tokens[(r >> 40) % ARRAY_SIZE(tokens)];
			size_t n = strlen(t) ? strlen(t) : 1;
			if (len + n <= cap) {
				memmove(b + pos + n, b + pos, len - pos);
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
		case 6: /* the header length field: nudge or replace */
			if (len >= 10) {
				unsigned v = b[8] | (unsigned)b[9] << 8;
				v = (r >> 40) & 1 ? v + (unsigned)((r >> 41) % 9) - 4
				                  : (unsigned)(r >> 44);
				b[8] = (unsigned char)v;
				b[9] = (unsigned char)(v >> 8);
			}
			break;
		default: /* the version byte */
			if (len >= 8)
				b[6] = (unsigned char)(1 + (r >> 40) % 4);
			break;
		}
	}
	return len;
}

START_TEST(test_fuzz)
{
	const uint64_t n = t_quick() ? 20000 : 100000;
	enum { CAP = 1024 };
	static unsigned char work[CAP];
	uint64_t ok = 0, by_status[NM_NPY_ERR_NOMEM + 1] = {0};
	char err[256];
	for (uint64_t i = 0; i < n; i++) {
		size_t f = (size_t)(t_rand(302, i) % ARRAY_SIZE(fixtures));
		size_t len = fixtures[f].len;
		memcpy(work, fixtures[f].bytes, len);
		len = mutate(work, len, CAP, i);
		unsigned char *copy = malloc(len ? len : 1); /* exact size for ASan */
		ck_assert(copy != NULL);
		memcpy(copy, work, len);
		nm_npy a;
		nm_npy_status st = nm_npy_read_mem(copy, len, "fuzz", &a, err, sizeof err);
		CHECK((unsigned)st <= NM_NPY_ERR_NOMEM, "status %d", st);
		by_status[st]++;
		if (st != NM_NPY_OK) {
			CHECK(strncmp(err, "fuzz: ", 6) == 0 && !strchr(err, '\n') &&
			          a.values == NULL,
			      "mutation %llu: bad failure report '%s'", (unsigned long long)i, err);
			free(copy);
			continue;
		}
		ok++;
		CHECK(a.ndim == 1 || a.ndim == 2, "ndim %d", a.ndim);
		CHECK(a.count == a.shape[0] * a.shape[1] && (a.ndim == 2 || a.shape[1] == 1),
		      "mutation %llu: count", (unsigned long long)i);
		/* what was read re-encodes (little-endian 1.0) and reads back the same */
		void *buf;
		size_t blen;
		nm_npy_status e = nm_npy_encode(a.dtype, a.ndim, a.shape, a.raw ? NULL : a.values,
		                                a.raw, &buf, &blen, "re", err, sizeof err);
		CHECK(e == NM_NPY_OK, "re-encode: %s", err);
		nm_npy b;
		e = nm_npy_read_mem(buf, blen, "re", &b, err, sizeof err);
		CHECK(e == NM_NPY_OK && b.count == a.count, "re-read: %s", err);
		for (size_t j = 0; j < a.count; j++)
			CHECK(memcmp(&a.values[j], &b.values[j], sizeof(double)) == 0 &&
			          (!a.raw || a.raw[j] == b.raw[j]),
			      "mutation %llu: element %zu changed", (unsigned long long)i, j);
		nm_npy_free(&b);
		free(buf);
		nm_npy_free(&a);
		free(copy);
	}
	/* the loop must reach both sides */
	ck_assert_msg(ok > n / 100 && by_status[NM_NPY_ERR_FORMAT] > n / 10,
	              "%llu read, %llu format errors", (unsigned long long)ok,
	              (unsigned long long)by_status[NM_NPY_ERR_FORMAT]);
	t_count("npy: fuzzed files", n);
}
END_TEST

Suite *suite_npy(void)
{
	Suite *s = suite_create("npy");
	TCase *tc = tcase_create("files");
	tcase_add_loop_test(tc, test_numpy_files, 0, ARRAY_SIZE(fixtures));
	tcase_add_loop_test(tc, test_round_trip, 0, NM_NPY_NDTYPES);
	tcase_add_test(tc, test_f2_every_encoding);
	tcase_add_test(tc, test_writer_rounds);
	tcase_add_loop_test(tc, test_write_errors, 0, ARRAY_SIZE(write_errors));
	tcase_add_test(tc, test_write_io_errors);
	suite_add_tcase(s, tc);
	TCase *tm = tcase_create("malformed");
	tcase_add_loop_test(tm, test_malformed, 0, ARRAY_SIZE(malformed));
	tcase_add_test(tm, test_malformed_file);
	tcase_add_test(tm, test_fuzz);
	suite_add_tcase(s, tm);
	return s;
}
