/*
 * fuzz_gputab.c — libFuzzer harness for the GPU-tables reader
 * (emu/engine/gputab.c, emu_gpu_tables_read through fmemopen).
 *
 * A table is 65536 values (4096 lines), too long for the fuzzer to write,
 * so the first byte picks the mode: even, the rest is the whole file; odd,
 * the file is a table line and 4095 valid lines of values followed by the
 * rest, so the fuzzer works on the end of a table and what comes after it
 * (a short or long last line, a second table, comments). A failure must
 * come with one line that starts with the name and leave nothing
 * allocated; a success must find every table it loaded and look up its
 * values. Built and run by tests/fuzz/run.sh with
 * clang -fsanitize=fuzzer,address,undefined.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/gputab.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_gputab: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *prefix;
static size_t prefix_len;

static void make_prefix(void)
{
	size_t cap = 32 + 4095 * 80, k = 0;
	prefix = malloc(cap);
	REQUIRE(prefix != NULL);
	k += (size_t)snprintf(prefix, cap, "# fuzz\ntable hexp fp16 65536\n");
	for (unsigned l = 0; l < 4095; l++)
		for (unsigned j = 0; j < 16; j++)
			k += (size_t)snprintf(prefix + k, cap - k, "%04x%c", (l * 16 + j) & 0xffff,
			                      j == 15 ? '\n' : ' ');
	prefix_len = k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[300];
	emu_gpu_tables ts;

	if (size < 1)
		return 0;
	if (!prefix)
		make_prefix();
	bool body = data[0] & 1;
	size_t n = (body ? prefix_len : 0) + size - 1;
	char *buf = malloc(n ? n : 1);
	REQUIRE(buf != NULL);
	if (body)
		memcpy(buf, prefix, prefix_len);
	memcpy(buf + (body ? prefix_len : 0), data + 1, size - 1);
	FILE *fp = n ? fmemopen(buf, n, "r") : fopen("/dev/null", "r");
	REQUIRE(fp != NULL);
	int rc = emu_gpu_tables_read(fp, "fuzz", &ts, err, sizeof err);
	fclose(fp);
	free(buf);
	if (rc != 0) {
		REQUIRE(ts.t == NULL && ts.n == 0);
		REQUIRE(!strncmp(err, "fuzz:", 5) && strchr(err, '\n') == NULL);
		return 0;
	}
	REQUIRE(ts.n >= 1 && ts.n <= 64);
	const emu_format *f16 = emu_format_by_name("fp16");
	for (size_t i = 0; i < ts.n; i++) {
		const emu_gpu_table *t = &ts.t[i];
		REQUIRE(emu_gpu_tables_find(&ts, t->func, t->format) == t);
		if (!strcmp(t->format, "fp16")) {
			emu_bits out = 0;
			REQUIRE(emu_gpu_tables_lookup(&ts, t->func, f16, 0x3c00, &out));
			REQUIRE(out == t->v[0x3c00]);
		}
	}
	emu_gpu_tables_free(&ts);
	REQUIRE(ts.t == NULL && ts.n == 0);
	return 0;
}
