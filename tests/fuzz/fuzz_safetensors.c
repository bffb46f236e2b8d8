/*
 * fuzz_safetensors.c — libFuzzer harness for the .safetensors reader
 * (emu/io/nm_safetensors.c).
 *
 * Each input is a whole file given to nm_st_open_mem. A failure must come
 * with a one-line reason that starts with the name and leave nothing to
 * free; a success must describe its bytes exactly (every tensor inside the
 * data, the tensors tiling it with no hole or overlap, counts matching bytes),
 * decode where its dtype decodes, and survive nm_st_encode and a second read
 * with identical tensors. Built and run by tests/fuzz/run.sh with
 * clang -fsanitize=fuzzer,address,undefined.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/io/nm_safetensors.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_safetensors: %s:%d: %s\n", __FILE__, __LINE__,       \
			        #cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_begin(const void *a, const void *b)
{
	const nm_st_tensor *x = *(const nm_st_tensor *const *)a,
	                   *y = *(const nm_st_tensor *const *)b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	nm_st_file f;
	nm_st_status st = nm_st_open_mem(data, size, "fuzz", &f, err, sizeof err);
	REQUIRE((unsigned)st <= NM_ST_ERR_NOMEM);
	if (st != NM_ST_OK) {
		REQUIRE(strncmp(err, "fuzz: ", 6) == 0);
		REQUIRE(strchr(err, '\n') == NULL);
		REQUIRE(f.map == NULL && f.t == NULL && f.ntensors == 0 && f.nmeta == 0);
		return 0;
	}
	REQUIRE(f.maplen == size && f.header_len <= size - 8);
	const uint8_t *base = f.map, *start = base + 8 + f.header_len;
	uint64_t dlen = size - 8 - f.header_len;
	const nm_st_tensor **order =
	    malloc((f.ntensors ? f.ntensors : 1) * sizeof(const nm_st_tensor *));
	REQUIRE(order != NULL);
	for (size_t i = 0; i < f.ntensors; i++) {
		const nm_st_tensor *t = &f.t[i];
		uint64_t count = 1;
		for (int d = 0; d < t->ndim; d++)
			count *= t->shape[d];
		REQUIRE(t->ndim >= 0 && t->ndim <= NM_ST_MAX_DIMS);
		REQUIRE((unsigned)t->dtype < NM_ST_NDTYPES);
		REQUIRE(count == t->count);
		REQUIRE(t->nbytes * 8 == t->count * nm_st_dtype_bits(t->dtype));
		REQUIRE(t->data == start + t->begin);
		REQUIRE(t->begin <= dlen && t->nbytes <= dlen - t->begin);
		REQUIRE(nm_st_find(&f, t->name) == t);
		if (nm_st_dtype_decodable(t->dtype) && t->count) {
			double v[4];
			size_t n = t->count < 4 ? (size_t)t->count : 4;
			REQUIRE(nm_st_decode(&f, t, t->count - n, n, v, err, sizeof err) ==
			        NM_ST_OK);
		}
		order[i] = t;
	}
	/* sorted by offset, each begins where the previous ended, the last at the end */
	qsort(order, f.ntensors, sizeof(const nm_st_tensor *), by_begin);
	uint64_t pos = 0;
	for (size_t i = 0; i < f.ntensors; i++) {
		REQUIRE(order[i]->begin == pos);
		pos += order[i]->nbytes;
	}
	REQUIRE(pos == dlen);
	free(order);
	for (size_t i = 0; i < f.nmeta; i++)
		REQUIRE(f.meta_keys[i] != NULL && f.meta_values[i] != NULL);

	nm_st_out *o = malloc((f.ntensors ? f.ntensors : 1) * sizeof *o);
	REQUIRE(o != NULL);
	for (size_t i = 0; i < f.ntensors; i++)
		o[i] = (nm_st_out){f.t[i].name,  f.t[i].dtype, f.t[i].ndim,
		                   f.t[i].shape, f.t[i].data,  f.t[i].nbytes};
	void *buf;
	size_t len;
	st = nm_st_encode(o, f.ntensors, &buf, &len, "re", err, sizeof err);
	REQUIRE(st == NM_ST_OK);
	nm_st_file g;
	st = nm_st_open_mem(buf, len, "re", &g, err, sizeof err);
	REQUIRE(st == NM_ST_OK);
	REQUIRE(g.ntensors == f.ntensors && g.header_len % 8 == 0);
	for (size_t i = 0; i < f.ntensors; i++) {
		const nm_st_tensor *a = &f.t[i], *b = &g.t[i];
		REQUIRE(strcmp(a->name, b->name) == 0);
		REQUIRE(a->dtype == b->dtype && a->ndim == b->ndim && a->count == b->count);
		REQUIRE(memcmp(a->shape, b->shape, sizeof a->shape) == 0);
		REQUIRE(a->nbytes == b->nbytes);
		REQUIRE(a->nbytes == 0 || memcmp(a->data, b->data, (size_t)a->nbytes) == 0);
	}
	nm_st_close(&g);
	free(buf);
	free(o);
	nm_st_close(&f);
	REQUIRE(f.map == NULL && f.t == NULL);
	return 0;
}
