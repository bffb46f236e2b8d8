/*
 * main.c — runs every Check suite. The seed is printed first so any failure
 * can be reproduced with NANMAP_SEED; the cases each suite proved are
 * summed at the end, after the Check runner's own summary; the closing line
 * counts the tests as "check: N passed, N failed, N skipped" (a test that
 * called t_skip is skipped, not passed) and, when NANMAP_RESULTS is set,
 * goes to that file for make test's total (tests/results.sh).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib.h"

/* Sum the counts the (forked) tests appended, merging repeated names. */
static void print_counts(const char *path)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return;
	static char names[512][128];
	static uint64_t sums[512];
	size_t k = 0;
	char what[128];
	uint64_t n, total = 0;
	while (fscanf(fp, "%127[^\t]\t%" SCNu64 "\n", what, &n) == 2) {
		size_t j = 0;
		while (j < k && strcmp(names[j], what) != 0)
			j++;
		if (j == k && k < 512)
			snprintf(names[k++], sizeof names[0], "%s", what);
		if (j < 512)
			sums[j] += n;
		total += n;
	}
	fclose(fp);
	printf("cases checked:\n");
	for (size_t j = 0; j < k; j++)
		printf("  %-66s %14" PRIu64 "\n", names[j], sums[j]);
	printf("  %-66s %14" PRIu64 "\n", "total", total);
}

/* Lines "SUITE: REASON" in the skip file after the first `from`: the skips
 * (t_skip) of the suite CK_RUN_SUITE names, or of all suites. */
static int count_skips(const char *path, int from)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return 0;
	const char *only = getenv("CK_RUN_SUITE");
	size_t olen = only ? strlen(only) : 0;
	char line[640];
	int n = 0, i = 0;
	while (fgets(line, sizeof line, fp)) {
		if (i++ >= from && (!olen || (strncmp(line, only, olen) == 0 && line[olen] == ':')))
			n++;
	}
	fclose(fp);
	return n;
}

int main(void)
{
	const char *path = "build/tests/counts.txt";
	setenv("NANMAP_COUNT_FILE", path, 0);
	path = getenv("NANMAP_COUNT_FILE");
	remove(path);
	setenv("NANMAP_SKIP_FILE", "build/tests/skipped.txt", 0);
	const char *skip_path = getenv("NANMAP_SKIP_FILE");
	remove(skip_path);
	printf("nanmap tests: seed 0x%" PRIx64 " (set NANMAP_SEED to change)%s\n", t_seed(),
	       t_quick() ? ", quick mode" : "");
	SRunner *sr = srunner_create(suite_format());
	srunner_add_suite(sr, suite_round());
	srunner_add_suite(sr, suite_ops());
	srunner_add_suite(sr, suite_aops());
	srunner_add_suite(sr, suite_sr());
	srunner_add_suite(sr, suite_parse());
	srunner_add_suite(sr, suite_hw());
	srunner_add_suite(sr, suite_mpfr());
	srunner_add_suite(sr, suite_gradscaler());
	srunner_add_suite(sr, suite_npy());
	srunner_add_suite(sr, suite_safetensors());
	srunner_add_suite(sr, suite_kernels());
	srunner_add_suite(sr, suite_backward());
	srunner_add_suite(sr, suite_layernorm());
	srunner_add_suite(sr, suite_rmsnorm());
	srunner_add_suite(sr, suite_bce());
	srunner_add_suite(sr, suite_quant());
	srunner_add_suite(sr, suite_optimizer());
	srunner_add_suite(sr, suite_batchnorm());
	srunner_add_suite(sr, suite_matmul());
	srunner_add_suite(sr, suite_attention());
	srunner_add_suite(sr, suite_accum());
	srunner_add_suite(sr, suite_tc());
	srunner_add_suite(sr, suite_tcscaled());
	srunner_add_suite(sr, suite_golden());
	srunner_add_suite(sr, suite_golden_inputs());
	srunner_add_suite(sr, suite_kinputs());
	srunner_add_suite(sr, suite_gpuhost());
	srunner_add_suite(sr, suite_gputab());
	srunner_add_suite(sr, suite_point());
	srunner_add_suite(sr, suite_thresh());
	srunner_add_suite(sr, suite_case());
	srunner_add_suite(sr, suite_file());
	srunner_add_suite(sr, suite_plot());
	srunner_add_suite(sr, suite_claims());
	srunner_add_suite(sr, suite_metrics());
	srunner_add_suite(sr, suite_engine());
	srunner_add_suite(sr, suite_buf());
	srunner_add_suite(sr, suite_specialize());
	srunner_add_suite(sr, suite_qstream());
	srunner_add_suite(sr, suite_recipe());
	srunner_add_suite(sr, suite_train());
	srunner_add_suite(sr, suite_native());
	if (getenv("NANMAP_EXHAUSTIVE"))
		srunner_add_suite(sr, suite_exhaustive());
	/* test cases a suite did not add (skipped there) are not among those run */
	int not_added = count_skips(skip_path, 0);
	FILE *sp = fopen(skip_path, "r");
	int built = 0;
	if (sp) {
		for (int ch; (ch = getc(sp)) != EOF;)
			built += ch == '\n';
		fclose(sp);
	}
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	int run = srunner_ntests_run(sr);
	srunner_free(sr);
	print_counts(path);
	int in_tests = count_skips(skip_path, built);
	int skipped = not_added + in_tests;
	int passed = run - failed - in_tests;
	printf("check: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
	const char *results = getenv("NANMAP_RESULTS");
	FILE *fp = results && *results ? fopen(results, "a") : NULL;
	if (fp) {
		fprintf(fp, "check_nanmap\t%d\t%d\t%d\n", passed, failed, skipped);
		fclose(fp);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
