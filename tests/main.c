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
#include <time.h>

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
	/* the suites, built first (a suite that leaves a test out records its skip
	 * as it is built), then each run and timed on its own: where make test's
	 * time goes */
#define SUITE(n)                                                                                   \
	{                                                                                          \
		suite_##n, #n                                                                      \
	}
	static const struct {
		Suite *(*make)(void);
		const char *name;
	} list[] = {
	    SUITE(format),     SUITE(round),         SUITE(ops),         SUITE(aops),
	    SUITE(sr),         SUITE(parse),         SUITE(hw),          SUITE(mpfr),
	    SUITE(gradscaler), SUITE(npy),           SUITE(safetensors), SUITE(kernels),
	    SUITE(backward),   SUITE(layernorm),     SUITE(rmsnorm),     SUITE(bce),
	    SUITE(quant),      SUITE(optimizer),     SUITE(batchnorm),   SUITE(matmul),
	    SUITE(attention),  SUITE(accum),         SUITE(tc),          SUITE(tcscaled),
	    SUITE(golden),     SUITE(golden_inputs), SUITE(kinputs),     SUITE(gpuhost),
	    SUITE(gputab),     SUITE(point),         SUITE(thresh),      SUITE(case),
	    SUITE(file),       SUITE(plot),          SUITE(claims),      SUITE(metrics),
	    SUITE(engine),     SUITE(buf),           SUITE(specialize),  SUITE(qstream),
	    SUITE(recipe),     SUITE(train),         SUITE(native),
	};
#undef SUITE
	enum { NSUITES = sizeof list / sizeof *list };
	Suite *made[NSUITES + 1];
	const char *names[NSUITES + 1];
	size_t ns = 0;
	for (; ns < NSUITES; ns++)
		made[ns] = list[ns].make(), names[ns] = list[ns].name;
	if (getenv("NANMAP_EXHAUSTIVE"))
		made[ns] = suite_exhaustive(), names[ns++] = "exhaustive";
	/* test cases a suite did not add (skipped there) are not among those run */
	int not_added = count_skips(skip_path, 0);
	FILE *sp = fopen(skip_path, "r");
	int built = 0;
	if (sp) {
		for (int ch; (ch = getc(sp)) != EOF;)
			built += ch == '\n';
		fclose(sp);
	}
	int failed = 0, run = 0;
	double secs[NSUITES + 1], total_s = 0;
	const char *only = getenv("CK_RUN_SUITE");
	for (size_t i = 0; i < ns; i++) {
		secs[i] = 0;
		if (only && *only && strcmp(only, names[i]) != 0) { /* Check would run none of it */
			srunner_free(srunner_create(made[i]));      /* frees the suite */
			continue;
		}
		SRunner *sr = srunner_create(made[i]);
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		srunner_run_all(sr, CK_NORMAL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs[i] =
		    (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
		total_s += secs[i];
		failed += srunner_ntests_failed(sr);
		run += srunner_ntests_run(sr);
		srunner_free(sr);
	}
	/* the suites that took a second or more, slowest first */
	printf("time: %.1f s in the suites", total_s);
	for (int shown = 0; shown < 12; shown++) {
		size_t k = ns;
		for (size_t i = 0; i < ns; i++)
			if (secs[i] >= 1 && (k == ns || secs[i] > secs[k]))
				k = i;
		if (k == ns)
			break;
		printf("%s %s %.1f s", shown ? "," : ";", names[k], secs[k]);
		secs[k] = -1;
	}
	printf("\n");
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
