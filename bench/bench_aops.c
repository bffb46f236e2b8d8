/*
 * bench_aops.c — table 9: the array operations (emu/aops.c) on 2^20 values
 * of fp16, bf16, e4m3 and e5m2 (add, mul in rne and sr; fma, div, sqrt,
 * exp, log in rne), against a loop of the scalar value op (emu_v_* with
 * env.index = i; emu_a_element for sqrt, exp, log), native double and
 * float arithmetic of the same arrays (fma: a·b + c, two roundings), and
 * memcpy of the double array:
 *   op,format,mode,melem_s,ratio_memcpy,scalar_melem_s,speedup_scalar,
 *   double_melem_s,float_melem_s,ratio_float
 * All rates from one run, each timed alternately with memcpy, best of reps.
 * Data: |x| with exponent uniform over [emin/2, emax/2] of the format
 * (significand uniform, random sign), rounded RNE: wide, and sums and
 * products stay finite, so the table shows the fast path, not the
 * fallback; sqrt and log read |a|. Measured, never asserted (docs/bench.md).
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
	return emu_mix64(z);
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
	emu_op op;
	emu_mode mode;
	const double *a, *b, *c;
	const float *fa, *fb, *fc;
	double *dst;
	float *fdst;
	size_t n;
};

#define BA_LOOP(stmt)                                                                              \
	do {                                                                                       \
		for (size_t i = 0; i < n; i++)                                                     \
			stmt;                                                                      \
	} while (0);                                                                               \
	break

static void ba_run(const struct ba *w, int k)
{
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = w->mode;
	env.seed = 42;
	size_t n = w->n;
	const double *a = w->a, *b = w->b, *c = w->c;
	const float *fa = w->fa, *fb = w->fb, *fc = w->fc;
	double *d = w->dst;
	float *fd = w->fdst;
	switch (k) {
	case K_AOPS: {
		const double *args[3] = {a, b, c};
		const size_t st[3] = {1, 1, 1};
		ba_sink += (double)emu_a_op(w->op, w->f, d, args, st, n, &env, NULL).any;
		break;
	}
	case K_SCALAR: {
		unsigned fl = 0;
		for (size_t i = 0; i < n; i++) {
			env.index = i;
			switch (w->op) {
			case EMU_OP_ADD:
				d[i] = emu_v_add(w->f, a[i], b[i], &env, &fl);
				break;
			case EMU_OP_MUL:
				d[i] = emu_v_mul(w->f, a[i], b[i], &env, &fl);
				break;
			case EMU_OP_FMA:
				d[i] = emu_v_fma(w->f, a[i], b[i], c[i], &env, &fl);
				break;
			case EMU_OP_DIV:
				d[i] = emu_v_div(w->f, a[i], b[i], &env, &fl);
				break;
			default:
				d[i] = emu_a_element(w->op, w->f, a[i], 0, 0, &env, &fl);
				break;
			}
		}
		ba_sink += fl;
		break;
	}
	case K_DOUBLE: /* one plain loop per op, as native code would be */
		switch (w->op) {
		case EMU_OP_ADD:
			BA_LOOP(d[i] = a[i] + b[i]);
		case EMU_OP_MUL:
			BA_LOOP(d[i] = a[i] * b[i]);
		case EMU_OP_FMA:
			BA_LOOP(d[i] = a[i] * b[i] + c[i]);
		case EMU_OP_DIV:
			BA_LOOP(d[i] = a[i] / b[i]);
		case EMU_OP_SQRT:
			BA_LOOP(d[i] = sqrt(a[i]));
		case EMU_OP_EXP:
			BA_LOOP(d[i] = exp(a[i]));
		default:
			BA_LOOP(d[i] = log(a[i]));
		}
		break;
	case K_FLOAT:
		switch (w->op) {
		case EMU_OP_ADD:
			BA_LOOP(fd[i] = fa[i] + fb[i]);
		case EMU_OP_MUL:
			BA_LOOP(fd[i] = fa[i] * fb[i]);
		case EMU_OP_FMA:
			BA_LOOP(fd[i] = fa[i] * fb[i] + fc[i]);
		case EMU_OP_DIV:
			BA_LOOP(fd[i] = fa[i] / fb[i]);
		case EMU_OP_SQRT:
			BA_LOOP(fd[i] = sqrtf(fa[i]));
		case EMU_OP_EXP:
			BA_LOOP(fd[i] = expf(fa[i]));
		default:
			BA_LOOP(fd[i] = logf(fa[i]));
		}
		ba_sink += fd[n / 2];
		break;
	default:
		memcpy(d, a, n * sizeof(double));
		break;
	}
	ba_sink += d[n / 3];
}

void bench_aops(int reps)
{
	static const char *const names[] = {"fp16", "bf16", "e4m3", "e5m2"};
	size_t n = BA_N;
	double *a = ba_alloc(n * sizeof *a), *b = ba_alloc(n * sizeof *b);
	double *c = ba_alloc(n * sizeof *c), *pa = ba_alloc(n * sizeof *pa);
	float *fc = ba_alloc(n * sizeof *fc), *fpa = ba_alloc(n * sizeof *fpa);
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
			for (int k = 0; k < 3; k++) {
				uint64_t r = ba_next(&s);
				double m = 1.0 + (double)(r >> 11) * 0x1p-53;
				int e = lo + (int)((r & 0xff) % (unsigned)(hi - lo + 1));
				double x = ldexp((r >> 8) & 1 ? -m : m, e);
				double v = emu_decode(f, emu_from_double(f, x, &env).bits);
				(k == 2 ? c : k ? b : a)[i] = v;
				(k == 2 ? fc : k ? fb : fa)[i] = (float)v;
				if (k == 0) {
					pa[i] = fabs(v);
					fpa[i] = (float)fabs(v);
				}
			}
		static const struct {
			emu_op op;
			emu_mode mode;
		} rows[] = {{EMU_OP_ADD, EMU_RNE}, {EMU_OP_MUL, EMU_RNE},  {EMU_OP_FMA, EMU_RNE},
		            {EMU_OP_DIV, EMU_RNE}, {EMU_OP_SQRT, EMU_RNE}, {EMU_OP_EXP, EMU_RNE},
		            {EMU_OP_LOG, EMU_RNE}, {EMU_OP_ADD, EMU_SR},   {EMU_OP_MUL, EMU_SR}};
		for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
			emu_op op = rows[ri].op;
			bool pos = op == EMU_OP_SQRT || op == EMU_OP_LOG;
			struct ba w = {f,  op, rows[ri].mode, pos ? pa : a, b, c, pos ? fpa : fa,
			               fb, fc, dst,           fdst,         n};
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
			printf("%s,%s,%s,%.1f,%.3f,%.1f,%.1f,%.1f,%.1f,%.3f\n", emu_op_name(op),
			       f->name, emu_mode_name(rows[ri].mode), eps[K_AOPS] / 1e6,
			       eps[K_AOPS] / eps[K_MEMCPY], eps[K_SCALAR] / 1e6,
			       eps[K_AOPS] / eps[K_SCALAR], eps[K_DOUBLE] / 1e6, eps[K_FLOAT] / 1e6,
			       eps[K_AOPS] / eps[K_FLOAT]);
			fflush(stdout);
		}
	}
	free(a), free(b), free(c), free(pa), free(dst), free(fa), free(fb), free(fc), free(fpa),
	    free(fdst);
}
