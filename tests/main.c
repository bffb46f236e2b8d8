/*
 * main.c — runs every Check suite. The seed is printed first so any failure
 * can be reproduced with NANMAP_SEED; the cases each suite proved are
 * summed at the end; the closing line is the Check runner's own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib.h"

static void print_counts(const char *path)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return;
	char what[256];
	uint64_t n, total = 0;
	printf("cases proved:\n");
	while (fscanf(fp, "%255[^\t]\t%" SCNu64 "\n", what, &n) == 2) {
		printf("  %-58s %14" PRIu64 "\n", what, n);
		total += n;
	}
	printf("  %-58s %14" PRIu64 "\n", "total", total);
	fclose(fp);
}

int main(void)
{
	const char *path = "build/tests/counts.txt";
	setenv("NANMAP_COUNT_FILE", path, 0);
	path = getenv("NANMAP_COUNT_FILE");
	remove(path);
	printf("nanmap tests: seed 0x%" PRIx64 " (set NANMAP_SEED to change)%s\n", t_seed(),
	       t_quick() ? ", quick mode" : "");
	SRunner *sr = srunner_create(suite_format());
	srunner_add_suite(sr, suite_round());
	srunner_add_suite(sr, suite_ops());
	srunner_add_suite(sr, suite_sr());
	srunner_add_suite(sr, suite_parse());
	srunner_add_suite(sr, suite_hw());
	srunner_add_suite(sr, suite_mpfr());
	if (getenv("NANMAP_EXHAUSTIVE"))
		srunner_add_suite(sr, suite_exhaustive());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	print_counts(path);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
