/*
 * bench_sweep.c — points per second of the default sweep cases (docs/bench.md,
 * table 7), the call `nanmap sweep` makes for each point (nm_point_eval:
 * the input generated, the kernel run, status and metrics), one thread.
 *
 * For each cases/NAME.case file (read from the working directory: make bench
 * runs from the repository root), BS_POINTS points spread evenly over its
 * full grid (point indexes round(i · (n − 1) / (BS_POINTS − 1))):
 *   case,points,elems,fast_pts_s,ratio_memcpy,sweep_pts_s,ratio_truth
 * elems: the mean input size of those points (rows × cols);
 * fast_pts_s: points per second on the fast backend alone (truth off);
 * ratio_memcpy: the fast point's time over a memcpy of its input array,
 *   both timed in this run (how many copies of the input one point costs);
 * sweep_pts_s: points per second as the sweep runs them (with the truth
 *   backend when the case asks for it); ratio_truth = fast_pts_s / sweep_pts_s.
 * CPU seconds of the thread, best of reps for the fast run (one run with
 * truth: MPFR at 256 bits takes long). Measured, never asserted.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu/sweep/nm_case.h"
#include "emu/sweep/nm_point.h"

void bench_sweep(int reps);

#define BS_POINTS 6
#define BS_MIN_S 2e-3 /* a memcpy sample covers at least this long */

static volatile unsigned char bs_sink;

static double bs_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bs_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Point idx of c on the full grids (the sweep's numbering). */
static void bs_point(const nm_case *c, size_t idx, nm_point *p)
{
	size_t n0 = c->naxes > 0 ? c->axes[0].nvalues : 1, n1 = c->naxes > 1 ? c->axes[1].nvalues : 1;
	size_t i1 = idx % n1, t = idx / n1, i0 = t % n0;

	t /= n0;
	memset(p, 0, sizeof(*p));
	p->c = c;
	p->policy = t % c->npolicies;
	p->variant = t / c->npolicies;
	if (c->naxes > 0)
		p->axis[0] = c->axes[0].values[i0];
	if (c->naxes > 1)
		p->axis[1] = c->axes[1].values[i1];
}

/* Seconds of one memcpy of n doubles, best of reps samples. */
static double bs_memcpy(size_t n, int reps)
{
	double *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b)), best = 1e300;

	if (!a || !b) {
		free(a);
		free(b);
		return 0;
	}
	memset(a, 1, n * sizeof(*a));
	for (int r = 0; r < reps; r++) {
		double t0 = bs_cpu(), dt;
		long k = 0;

		do {
			memcpy(b, a, n * sizeof(*a));
			bs_sink ^= ((unsigned char *)b)[k % (long)(n * sizeof(*a))];
			k++;
			dt = bs_cpu() - t0;
		} while (dt < BS_MIN_S);
		if (dt / (double)k < best)
			best = dt / (double)k;
	}
	free(a);
	free(b);
	return best;
}

static void bs_case(const char *path, int reps)
{
	char err[512];
	nm_case c;
	size_t npoints, elems = 0;
	double fast = 0, sweep = 0, copy = 0;

	if (nm_case_load(path, &c, err, sizeof(err))) {
		fprintf(stderr, "bench: %s\n", err);
		return;
	}
	npoints = c.nvariants * c.npolicies;
	for (size_t a = 0; a < c.naxes; a++)
		npoints *= c.axes[a].nvalues;
	for (int i = 0; i < BS_POINTS; i++) {
		size_t idx = (size_t)((double)i * (double)(npoints - 1) / (BS_POINTS - 1) + 0.5);
		nm_point p;
		nm_point_result r;
		double *x, best = 1e300, t0;
		size_t rows, cols;

		bs_point(&c, idx, &p);
		if (nm_point_input(&p, &x, &rows, &cols, err, sizeof(err))) {
			fprintf(stderr, "bench: %s: %s\n", c.name, err);
			goto out;
		}
		free(x);
		elems += rows * cols;
		copy += bs_memcpy(rows * cols, reps);
		for (int k = 0; k < reps; k++) {
			t0 = bs_cpu();
			if (nm_point_eval(&p, EMU_BE_FAST, false, &r, err, sizeof(err))) {
				fprintf(stderr, "bench: %s: %s\n", c.name, err);
				goto out;
			}
			if (bs_cpu() - t0 < best)
				best = bs_cpu() - t0;
		}
		fast += best;
		t0 = bs_cpu();
		if (nm_point_eval(&p, EMU_BE_FAST, c.truth, &r, err, sizeof(err))) {
			fprintf(stderr, "bench: %s: %s\n", c.name, err);
			goto out;
		}
		sweep += bs_cpu() - t0;
	}
	printf("%s,%d,%zu,%.4g,%.4g,%.4g,%.3g\n", c.name, BS_POINTS, elems / BS_POINTS,
	       BS_POINTS / fast, copy > 0 ? fast / copy : 0.0, BS_POINTS / sweep, sweep / fast);
	fflush(stdout);
out:
	nm_case_free(&c);
}

void bench_sweep(int reps)
{
	DIR *d = opendir("cases");
	struct dirent *e;
	char *names[256];
	size_t n = 0;

	if (!d) {
		fprintf(stderr, "bench: no cases/ here (run from the repository root): table 7 skipped\n");
		return;
	}
	while ((e = readdir(d)) && n < 256) {
		size_t len = strlen(e->d_name);

		if (len > 5 && !strcmp(e->d_name + len - 5, ".case") && e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), bs_cmp);
	printf("case,points,elems,fast_pts_s,ratio_memcpy,sweep_pts_s,ratio_truth\n");
	for (size_t i = 0; i < n; i++) {
		char path[600];

		if (!names[i])
			continue;
		snprintf(path, sizeof(path), "cases/%s", names[i]);
		bs_case(path, reps);
		free(names[i]);
	}
}
