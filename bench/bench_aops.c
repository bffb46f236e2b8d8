/*
 * bench_aops.c — table 9: the array operations (emu/aops.c) on 2^20 values
 * of fp16, bf16, e4m3 and e5m2, RNE, against a loop of the scalar value
 * op (emu_v_add / emu_v_mul with env.index = i), native double and float
 * arithmetic of the same arrays, and memcpy of the double array:
 *   op,format,mode,melem_s,ratio_memcpy,scalar_melem_s,speedup_scalar,
 *   double_melem_s,float_melem_s,ratio_float
 * All rates from one run, each timed alternately with memcpy, best of reps.
 * Data: |x| with exponent uniform over [emin/2, emax/2] of the format
 * (significand uniform, random sign), rounded RNE: wide, and sums and
 * products stay finite, so the table shows the fast path, not the
 * fallback. Measured, never asserted (docs/bench.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu.h"

void bench_aops(int reps);

#define BA_N (1u << 20)

static volatile double ba_sink;

static double ba_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t ba_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void *ba_alloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
		exit(2);
	}
	memset(p, 0, n);
	return p;
}

enum { K_AOPS, K_SCALAR, K_DOUBLE, K_FLOAT, K_MEMCPY, K_N };

struct ba {
	const emu_format *f;
	bool mul;
	const double *a, *b;
	const float *fa, *fb;
	double *dst;
	float *fdst;
	size_t n;
};

static void ba_run(const struct ba *w, int k)
{
	emu_env env = EMU_ENV_DEFAULT;
	size_t n = w->n;
	switch (k) {
	case K_AOPS:
		if (w->mul)
			ba_sink +=
			    (double)emu_a_mul(w->f, w->dst, w->a, 1, w->b, 1, n, &env, NULL).any;
		else
			ba_sink +=
			    (double)emu_a_add(w->f, w->dst, w->a, 1, w->b, 1, n, &env, NULL).any;
		break;
	case K_SCALAR: {
		unsigned fl = 0;
		for (size_t i = 0; i < n; i++) {
			env.index = i;
			w->dst[i] = w->mul ? emu_v_mul(w->f, w->a[i], w->b[i], &env, &fl)
			                   : emu_v_add(w->f, w->a[i], w->b[i], &env, &fl);
		}
		ba_sink += fl;
		break;
	}
	case K_DOUBLE:
		if (w->mul)
			for (size_t i = 0; i < n; i++)
				w->dst[i] = w->a[i] * w->b[i];
		else
			for (size_t i = 0; i < n; i++)
				w->dst[i] = w->a[i] + w->b[i];
		break;
	case K_FLOAT:
		if (w->mul)
			for (size_t i = 0; i < n; i++)
				w->fdst[i] = w->fa[i] * w->fb[i];
		else
			for (size_t i = 0; i < n; i++)
				w->fdst[i] = w->fa[i] + w->fb[i];
		ba_sink += w->fdst[n / 2];
		break;
	default:
		memcpy(w->dst, w->a, n * sizeof(double));
		break;
	}
	ba_sink += w->dst[n / 3];
}

void bench_aops(int reps)
{
	static const char *const names[] = {"fp16", "bf16", "e4m3", "e5m2"};
	size_t n = BA_N;
	double *a = ba_alloc(n * sizeof *a), *b = ba_alloc(n * sizeof *b);
	double *dst = ba_alloc(n * sizeof *dst);
	float *fa = ba_alloc(n * sizeof *fa), *fb = ba_alloc(n * sizeof *fb);
	float *fdst = ba_alloc(n * sizeof *fdst);
	printf("op,format,mode,melem_s,ratio_memcpy,scalar_melem_s,speedup_scalar,double_melem_s,"
	       "float_melem_s,ratio_float\n");
	for (size_t fi = 0; fi < sizeof names / sizeof names[0]; fi++) {
		const emu_format *f = emu_format_by_name(names[fi]);
		if (!f) {
			fprintf(stderr, "bench: no built-in format '%s'\n", names[fi]);
			exit(2);
		}
		uint64_t s = 77 + fi;
		emu_env env = EMU_ENV_DEFAULT;
		int lo = f->emin / 2, hi = f->emax / 2;
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 2; k++) {
				uint64_t r = ba_next(&s);
				double m = 1.0 + (double)(r >> 11) * 0x1p-53;
				int e = lo + (int)((r & 0xff) % (unsigned)(hi - lo + 1));
				double x = ldexp((r >> 8) & 1 ? -m : m, e);
				double v = emu_decode(f, emu_from_double(f, x, &env).bits);
				(k ? b : a)[i] = v;
				(k ? fb : fa)[i] = (float)v;
			}
		for (int op = 0; op < 2; op++) {
			struct ba w = {f, op == 1, a, b, fa, fb, dst, fdst, n};
			double best[K_N];
			for (int k = 0; k < K_N; k++) {
				best[k] = INFINITY;
				ba_run(&w, k); /* warm up */
			}
			for (int r = 0; r < reps; r++)
				for (int k = 0; k < K_N; k++) {
					double t0 = ba_now();
					ba_run(&w, k);
					double t = ba_now() - t0;
					if (t < best[k])
						best[k] = t;
				}
			double eps[K_N];
			for (int k = 0; k < K_N; k++)
				eps[k] = (double)n / best[k];
			printf("%s,%s,rne,%.1f,%.3f,%.1f,%.1f,%.1f,%.1f,%.3f\n", op ? "mul" : "add",
			       f->name, eps[K_AOPS] / 1e6, eps[K_AOPS] / eps[K_MEMCPY],
			       eps[K_SCALAR] / 1e6, eps[K_AOPS] / eps[K_SCALAR],
			       eps[K_DOUBLE] / 1e6, eps[K_FLOAT] / 1e6, eps[K_AOPS] / eps[K_FLOAT]);
			fflush(stdout);
		}
	}
	free(a), free(b), free(dst), free(fa), free(fb), free(fdst);
}
