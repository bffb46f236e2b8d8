/*
 * fuzz_npy.c — libFuzzer harness for the .npy reader (emu/io/nm_npy.c).
 *
 * Each input is a whole file given to nm_npy_read_mem. A failure must come
 * with a one-line reason that starts with the name; a success must be
 * self-consistent and survive a re-encode (little-endian, version 1.0) and
 * a second read bit for bit. Built and run by tests/fuzz/run.sh with
 * clang -fsanitize=fuzzer,address,undefined.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/io/nm_npy.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_npy: %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	nm_npy a;
	nm_npy_status st = nm_npy_read_mem(data, size, "fuzz", &a, err, sizeof err);
	REQUIRE((unsigned)st <= NM_NPY_ERR_NOMEM);
	if (st != NM_NPY_OK) {
		REQUIRE(strncmp(err, "fuzz: ", 6) == 0);
		REQUIRE(strchr(err, '\n') == NULL);
		REQUIRE(a.values == NULL && a.raw == NULL && a.count == 0);
		return 0;
	}
	REQUIRE(a.ndim == 1 || a.ndim == 2);
	REQUIRE(a.ndim == 2 || a.shape[1] == 1);
	REQUIRE(a.count == a.shape[0] * a.shape[1]);
	REQUIRE(a.count * nm_npy_dtype_size(a.dtype) <= size);
	REQUIRE(a.values != NULL);
	void *buf;
	size_t len;
	st = nm_npy_encode(a.dtype, a.ndim, a.shape, a.raw ? NULL : a.values, a.raw, &buf, &len,
	                   "re", err, sizeof err);
	REQUIRE(st == NM_NPY_OK);
	nm_npy b;
	st = nm_npy_read_mem(buf, len, "re", &b, err, sizeof err);
	REQUIRE(st == NM_NPY_OK);
	REQUIRE(b.dtype == a.dtype && b.ndim == a.ndim && b.count == a.count);
	REQUIRE(b.shape[0] == a.shape[0] && b.shape[1] == a.shape[1]);
	for (size_t i = 0; i < a.count; i++) {
		REQUIRE(memcmp(&a.values[i], &b.values[i], sizeof(double)) == 0);
		REQUIRE(!a.raw || a.raw[i] == b.raw[i]);
	}
	nm_npy_free(&b);
	free(buf);
	nm_npy_free(&a);
	return 0;
}
