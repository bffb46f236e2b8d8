/* lib.c — fixtures shared by the suites: seed, counters, formats. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib.h"

#define DEFAULT_SEED 0x6e616e6d6170ull /* "nanmap" */

uint64_t t_seed(void)
{
	static uint64_t seed;
	static int ready;
	if (!ready) {
		const char *s = getenv("NANMAP_SEED");
		seed = s && *s ? strtoull(s, NULL, 0) : DEFAULT_SEED;
		ready = 1;
	}
	return seed;
}

int t_quick(void)
{
	const char *s = getenv("NANMAP_QUICK");
	return s && *s && strcmp(s, "0") != 0;
}

uint64_t t_rand(uint64_t stream, uint64_t i)
{
	uint64_t z = t_seed() ^ (stream * 0xd1b54a32d192ed03ull) ^ (i * 0x9e3779b97f4a7c15ull);
	z += 0x9e3779b97f4a7c15ull;
	return emu_mix64(z);
}

const emu_format *t_fmt(const char *name)
{
	const emu_format *f = emu_format_by_name(name);
	if (!f) {
		fprintf(stderr, "tests: built-in format %s missing\n", name);
		abort();
	}
	return f;
}

/* Counts go to a file so that forked test processes can report them. */
void t_count(const char *what, uint64_t n)
{
	const char *path = getenv("NANMAP_COUNT_FILE");
	FILE *fp = fopen(path ? path : "build/tests/counts.txt", "a");
	if (!fp)
		return;
	fprintf(fp, "%s\t%" PRIu64 "\n", what, n);
	fclose(fp);
}

/* Skips go to a file too, one line each, counted by main. */
void t_skip(const char *suite, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	printf("%s: SKIPPED %s\n", suite, msg);
	fflush(stdout);
	const char *path = getenv("NANMAP_SKIP_FILE");
	FILE *fp = fopen(path ? path : "build/tests/skipped.txt", "a");
	if (!fp)
		return;
	fprintf(fp, "%s: %s\n", suite, msg);
	fclose(fp);
}
