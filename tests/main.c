/*
 * main.c — runs every Check suite. The seed is printed first so any failure
 * can be reproduced with NANMAP_SEED; the cases each suite proved are
 * summed at the end, after the Check runner's own summary; the closing line
 * counts the tests as "check: N passed, N failed, N skipped" (a test that
 * called t_skip is skipped, not passed) and, when NANMAP_RESULTS is set,
 * goes to that file for make test's total (tests/results.sh).
 *
 * The suites run side by side, NANMAP_JOBS at a time (default: the online
 * CPUs, at most 8; 1 runs them in this process, in order), the slowest
 * known ones first: each in a child process whose output is printed whole
 * when it ends, so the suites' lines never interleave. A test's counts and
 * skips go to shared files line by line (appends), so they are the same
 * whatever the number of jobs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* Run suite s here: its tests run, its failures, its wall seconds. */
static double run_one(Suite *s, int *run, int *failed)
{
	SRunner *sr = srunner_create(s);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	srunner_run_all(sr, CK_NORMAL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*failed = srunner_ntests_failed(sr);
	*run = srunner_ntests_run(sr);
	srunner_free(sr);
	return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

/* The suites in the order they start: the slowest known first (make test's
 * timings), then the rest as listed, so the longest one does not start
 * last */
static void suite_order(const char *const *names, size_t ns, size_t *order)
{
	static const char *const slow[] = {"kernels", "mpfr",   "ops",     "aops",
	                                   "train",   "recipe", "qstream", "tc"};
	size_t k = 0;
	bool taken[128] = {false};
	for (size_t j = 0; j < sizeof slow / sizeof *slow; j++)
		for (size_t i = 0; i < ns && i < 128; i++)
			if (!taken[i] && strcmp(names[i], slow[j]) == 0)
				order[k++] = i, taken[i] = true;
	for (size_t i = 0; i < ns && i < 128; i++)
		if (!taken[i])
			order[k++] = i;
}

/* NANMAP_JOBS, or the online CPUs (at most 8, and no more than n suites) */
static int jobs(size_t n)
{
	const char *e = getenv("NANMAP_JOBS");
	long j = e && *e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
	if (j > 8)
		j = 8;
	if (j > (long)n)
		j = (long)n;
	return j < 1 ? 1 : (int)j;
}

/* A child's file: its output, then "RUN FAILED SECONDS" on a last line. */
static void child_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "build/tests/suite-%s.out", name);
}

/* Print a finished child's output (all but its last line) and read its
 * counts; a child that died without them counts one failure. */
static void reap(const char *name, int status, double *secs, int *run, int *failed)
{
	char path[256], line[4096], last[4096] = "";
	child_path(name, path, sizeof path);
	FILE *fp = fopen(path, "r");
	*run = 0, *failed = 1, *secs = 0;
	if (fp) {
		bool have = false;
		while (fgets(line, sizeof line, fp)) {
			if (have)
				fputs(last, stdout);
			snprintf(last, sizeof last, "%s", line);
			have = true;
		}
		fclose(fp);
		if (sscanf(last, "%d %d %lf", run, failed, secs) != 3) {
			fputs(last, stdout);
			*run = 0, *failed = 1;
		}
	}
	remove(path);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		printf("%s: the suite's process ended abnormally (status %d)\n", name, status);
	fflush(stdout);
}

/* The suites order[0 .. n), jobs_n at a time (1: here, in order) */
static void run_suites(Suite **made, const char *const *names, const size_t *order, size_t n,
                       int jobs_n, double *secs, int *run, int *failed)
{
	if (jobs_n <= 1) {
		for (size_t k = 0; k < n; k++) {
			int r, f;
			secs[order[k]] = run_one(made[order[k]], &r, &f);
			*run += r, *failed += f;
		}
		return;
	}
	pid_t pid[128];
	size_t next = 0, busy = 0;
	for (size_t k = 0; k < n; k++)
		pid[k] = 0;
	fflush(stdout);
	while (next < n || busy > 0) {
		if (next < n && busy < (size_t)jobs_n) {
			size_t i = order[next];
			char path[256];
			child_path(names[i], path, sizeof path);
			pid_t p = fork();
			if (p == 0) {
				/* the CPUs shared among the jobs: suites side by side,
				 * each on every CPU, only wait on each other's threads
				 * (make test 11% faster on 2 CPUs); OMP_NUM_THREADS wins */
				if (!getenv("OMP_NUM_THREADS")) {
					long c = sysconf(_SC_NPROCESSORS_ONLN) / jobs_n;
					omp_set_num_threads(c < 1 ? 1 : (int)c);
				}
				int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
				if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
					_exit(3);
				close(fd);
				int r, f;
				double t = run_one(made[i], &r, &f);
				printf("%d %d %.3f\n", r, f, t);
				fflush(stdout);
				_exit(0);
			}
			if (p < 0) { /* no process: this one here */
				int r, f;
				secs[i] = run_one(made[i], &r, &f);
				*run += r, *failed += f;
			} else {
				pid[next] = p, busy++;
				srunner_free(srunner_create(made[i])); /* the child's to run */
			}
			next++;
			continue;
		}
		int status;
		pid_t p = wait(&status);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (size_t k = 0; k < next; k++)
			if (pid[k] == p) {
				int r, f;
				reap(names[order[k]], status, &secs[order[k]], &r, &f);
				*run += r, *failed += f;
				pid[k] = 0, busy--;
			}
	}
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
	    SUITE(recipe),     SUITE(train),         SUITE(native),      SUITE(rows),
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
	size_t order[NSUITES + 1], no = 0;
	suite_order(names, ns, order);
	for (size_t k = 0; k < ns; k++) {
		size_t i = order[k];
		secs[i] = 0;
		if (only && *only && strcmp(only, names[i]) != 0) /* Check would run none of it */
			srunner_free(srunner_create(made[i]));    /* frees the suite */
		else
			order[no++] = i;
	}
	int nj = jobs(no);
	struct timespec w0, w1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	run_suites(made, names, order, no, nj, secs, &run, &failed);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	double wall = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
	for (size_t k = 0; k < no; k++)
		total_s += secs[order[k]];
	/* the suites that took a second or more, slowest first */
	printf("time: %.1f s in the suites (%d at a time: %.1f s of wall time)", total_s, nj, wall);
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
