/*
 * fuzz_golden.c — libFuzzer harness for the golden-file reader and the
 * readers of a kernel's actual outputs (emu/io/nm_golden.c).
 *
 * The first byte picks the reader (its value mod 4): 0 the golden-file
 * reader on the rest; 1, 2, 3 the hex, raw and .npy readers of actual
 * outputs, for the format the second byte picks (fp16, bf16, e4m3, e5m2,
 * fp32), on the rest. A golden file whose first byte is 128 or more is
 * sealed first: every "end CASE HEX" line with 16 hex digits gets the
 * checksum of its case's lines, so mutations reach past the checksum.
 * A failure must come with one line that starts with the name; a golden
 * file that reads must be self-consistent: every output matches its own
 * expected encodings, a one-bit change is found at its index, and lookups by
 * target find the same output. Values read as actual outputs must fit the
 * format's width. Built and run by tests/fuzz/run.sh with
 * clang -fsanitize=fuzzer,address,undefined.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/io/nm_golden.h"
#include "emu/io/nm_parse.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_golden: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_reason(const char *err, const char *name)
{
	REQUIRE(strncmp(err, name, strlen(name)) == 0 && err[strlen(name)] == ':');
	REQUIRE(strchr(err, '\n') == NULL);
}

static void golden(const uint8_t *data, size_t size)
{
	char err[256];
	nm_golden *g;
	nm_golden_status st = nm_golden_parse(data, size, "fuzz", &g, err, sizeof err);

	if (st != NM_GOLDEN_OK) {
		REQUIRE(g == NULL);
		if (st != NM_GOLDEN_ERR_NOMEM)
			one_reason(err, "fuzz");
		return;
	}
	REQUIRE(nm_golden_output_count(g) > 0);
	for (size_t i = 0; i < nm_golden_case_count(g); i++) {
		const nm_golden_case *c = nm_golden_case_at(g, i);
		REQUIRE(c && c->id && c->kernel && c->policy && c->rows * c->cols > 0);
	}
	for (size_t i = 0; i < nm_golden_output_count(g); i++) {
		const nm_golden_output *o = nm_golden_output_at(g, i);
		nm_golden_report r;
		REQUIRE(o->n > 0 && o->case_index < nm_golden_case_count(g));
		REQUIRE(nm_golden_find(g, o->target) == o);
		uint32_t *a = malloc(o->n * sizeof *a);
		REQUIRE(a != NULL);
		memcpy(a, o->expected, o->n * sizeof *a);
		REQUIRE(nm_golden_compare(g, o->target, a, o->n, NULL, &r, err, sizeof err) ==
		        NM_GOLDEN_OK);
		REQUIRE(r.checked == o->n && r.mismatched == 0 && r.max_ulp == 0);
		nm_golden_report_free(&r);
		size_t j = o->n / 2;
		a[j] ^= 1u;
		REQUIRE(nm_golden_compare(g, o->target, a, o->n, NULL, &r, err, sizeof err) ==
		        NM_GOLDEN_OK);
		/* a changed NaN payload may still match; anything else is caught */
		REQUIRE(r.mismatched <= 1);
		REQUIRE(r.mismatched == 0 ||
		        (r.mismatches[0].index == j && r.mismatches[0].ulp > 0) ||
		        r.mismatches[0].ulp == 0);
		REQUIRE(strcmp(nm_golden_class(o, a[j]), "?") != 0);
		nm_golden_report_free(&r);
		REQUIRE(nm_golden_compare(g, o->target, a, o->n - 1, NULL, &r, err, sizeof err) ==
		        NM_GOLDEN_ERR_LENGTH);
		free(a);
	}
	nm_golden_close(g);
}

/* A copy of the text with each end line's checksum made right. */
static uint8_t *seal(const uint8_t *data, size_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	size_t case_off = 0, i = 0;

	REQUIRE(b != NULL);
	memcpy(b, data, size);
	while (i < size) {
		uint8_t *nl = memchr(b + i, '\n', size - i);
		size_t l = nl ? (size_t)(nl - (b + i)) : size - i;
		if (l >= 5 && !memcmp(b + i, "case ", 5))
			case_off = i;
		if (l >= 4 + 16 + 2 && !memcmp(b + i, "end ", 4) && b[i + l - 17] == ' ') {
			char hex[17];
			snprintf(hex, sizeof hex, "%016llx",
			         (unsigned long long)nm_fnv1a(b + case_off, i - case_off));
			memcpy(b + i + l - 16, hex, 16);
		}
		i += l + 1;
	}
	return b;
}

static void actual(int kind, const uint8_t *data, size_t size)
{
	static const struct {
		const char *name;
		int bits;
	} fmts[] = {{"fp16", 16}, {"bf16", 16}, {"e4m3", 8}, {"e5m2", 8}, {"fp32", 32}};
	char err[256];
	uint32_t *v;
	size_t n;

	if (size < 1)
		return;
	unsigned k = data[0] % 5;
	nm_golden_output o = {"t/y", "y", 0, fmts[k].name, fmts[k].bits, 1, NULL};
	nm_golden_status st = nm_golden_read_actual_mem(data + 1, size - 1, "fuzz",
	                                                kind == 1   ? NM_GOLDEN_ACT_HEX
	                                                : kind == 2 ? NM_GOLDEN_ACT_RAW
	                                                            : NM_GOLDEN_ACT_NPY,
	                                                &o, &v, &n, err, sizeof err);
	if (st != NM_GOLDEN_OK) {
		REQUIRE(v == NULL && n == 0);
		if (st != NM_GOLDEN_ERR_NOMEM)
			one_reason(err, "fuzz");
		return;
	}
	REQUIRE(v != NULL);
	uint32_t mask = fmts[k].bits == 32 ? 0xffffffffu : (1u << fmts[k].bits) - 1;
	for (size_t i = 0; i < n; i++) {
		REQUIRE((v[i] & ~mask) == 0);
		REQUIRE(strcmp(nm_golden_class(&o, v[i]), "?") != 0);
		REQUIRE(nm_golden_ulp(&o, v[i], v[i]) == 0);
	}
	free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 4 == 0 && data[0] >= 128) {
		uint8_t *b = seal(data + 1, size - 1);
		golden(b, size - 1);
		free(b);
	} else if (data[0] % 4 == 0)
		golden(data + 1, size - 1);
	else
		actual(data[0] % 4, data + 1, size - 1);
	return 0;
}
