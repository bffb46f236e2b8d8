/*
 * fuzz_case.c — libFuzzer harness for the case-file reader (emu/sweep/nm_case.c).
 *
 * Each input is a whole case file: written to a temporary file (the reader
 * takes a path, as the sweep gives it) and loaded. A failure must come with
 * one line that starts with the path and leave the case empty; a success
 * must be self-consistent: a kernel, at least one variant and policy, at
 * most two axes with finite, strictly ascending grids of at least one value.
 * Built and run by tests/fuzz/run.sh with clang -fsanitize=fuzzer,address,undefined.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/sweep/nm_case.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_case: %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_grid(const double *v, size_t n, bool integer)
{
	REQUIRE(n >= 1 && v != NULL);
	for (size_t i = 0; i < n; i++) {
		REQUIRE(isfinite(v[i]));
		REQUIRE(i == 0 || v[i] > v[i - 1]);
		REQUIRE(!integer || (v[i] >= 1 && v[i] == nearbyint(v[i])));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	char err[512];
	nm_case c;
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz_case_%ld.case", (long)getpid());
	f = fopen(path, "wb");
	REQUIRE(f != NULL);
	REQUIRE(fwrite(data, 1, size, f) == size);
	REQUIRE(fclose(f) == 0);
	err[0] = '\0';
	if (nm_case_load(path, &c, err, sizeof(err)) != 0) {
		REQUIRE(strncmp(err, path, strlen(path)) == 0);
		REQUIRE(err[strlen(path)] == ':');
		REQUIRE(strchr(err, '\n') == NULL);
		REQUIRE(c.kernel == NULL && c.npolicies == 0 && c.nvariants == 0 && c.naxes == 0);
		return 0;
	}
	REQUIRE(c.kernel != NULL);
	REQUIRE(c.nvariants >= 1 && c.npolicies >= 1);
	REQUIRE(c.naxes <= NM_CASE_MAX_AXES && c.nparams <= NM_CASE_MAX_PARAMS);
	REQUIRE(c.cols >= 1 || c.naxes >= 1);
	for (size_t i = 0; i < c.naxes; i++) {
		bool integer = c.axes[i].target == NM_SET_COLS || c.axes[i].target == NM_SET_ROWS;

		check_grid(c.axes[i].values, c.axes[i].nvalues, integer);
		check_grid(c.axes[i].quick, c.axes[i].nquick, integer);
	}
	for (size_t i = 0; i < c.npolicies; i++)
		REQUIRE(c.policy_specs[i] != NULL);
	for (size_t i = 0; i < c.nkv; i++)
		REQUIRE(nm_case_get(&c, c.kv[i].section, c.kv[i].key) != NULL);
	nm_case_free(&c);
	return 0;
}
