/*
 * bench_aops.c — table 9: the array operations (emu/core/aops.c) on 2^20 values
 * of fp16, bf16, e4m3 and e5m2, in three shapes: unit (every operand of
 * stride 1: add, mul in rne and sr; fma, div, sqrt, exp, log, exp2, rsqrt
 * in rne), bcast (the second operand broadcast, stride 0: add, mul; fma
 * with b and c broadcast, a·s + t) and fold (emu_a_fold over rows of 1024:
 * add, fma, max in rne, add in sr), against a loop of the scalar value op
 * (emu_v_* with env.index = i; emu_a_element for the rest), native double
 * and float code of the same shape (fma: a·b + c, two roundings; a fold:
 * s = s + a[j] in a C loop), and memcpy of the double array:
 *   op,format,mode,shape,melem_s,ratio_memcpy,ratio_double,scalar_melem_s,
 *   speedup_scalar,double_melem_s,float_melem_s,ratio_float
 * All rates from one run, each timed alternately with memcpy, best of reps.
 * Data: |x| with exponent uniform over [emin/2, emax/2] of the format
 * (significand uniform, random sign), rounded RNE: wide, and sums and
 * products stay finite, so the table shows the fast path, not the
 * fallback; sqrt, log, rsqrt read |a|, exp and exp2 values uniform in
 * [-14, 2] (softmax's exp(x - max) reads such values); folds
 * read |x| in [2^-3, 2^1) with a random sign, so a row's sum stays finite.
 * Measured, never asserted (docs/bench.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu/core/draw.h"
#include "emu/core/emu.h"

void bench_aops(int reps);

#define BA_N (1u << 20)
#define BA_ROW 1024 /* a fold's row: the kernels fold rows */

static volatile double ba_sink;

static double ba_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the next draw of a counter stream: the library's keyed draw */
static uint64_t ba_next(uint64_t *s)
{
	return emu_draw64(0, (*s)++);
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

enum shape { S_UNIT, S_BCAST, S_FOLD };
static const char *const shape_name[] = {"unit", "bcast", "fold"};

struct ba {
	const emu_format *f;
	emu_op op;
	emu_mode mode;
	enum shape shape;
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

/* a fold's native loops, one per op */
#define BA_FOLD(T, acc, stmt)                                                                      \
	do {                                                                                       \
		for (size_t r0 = 0; r0 < n; r0 += BA_ROW) {                                        \
			T acc = 0;                                                                 \
			for (size_t i = r0; i < r0 + BA_ROW; i++)                                  \
				stmt;                                                              \
			sink += (double)acc;                                                       \
		}                                                                                  \
	} while (0);                                                                               \
	break

static double ba_scalar(const struct ba *w, emu_env *env, double x, double y, double z,
                        unsigned *fl)
{
	switch (w->op) {
	case EMU_OP_ADD:
		return emu_v_add(w->f, x, y, env, fl);
	case EMU_OP_MUL:
		return emu_v_mul(w->f, x, y, env, fl);
	case EMU_OP_FMA:
		return emu_v_fma(w->f, x, y, z, env, fl);
	case EMU_OP_DIV:
		return emu_v_div(w->f, x, y, env, fl);
	default:
		return emu_a_element(w->op, w->f, x, y, z, env, fl);
	}
}

static void ba_run_fold(const struct ba *w, int k)
{
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = w->mode;
	env.seed = 42;
	size_t n = w->n;
	const double *a = w->a, *b = w->b;
	const float *fa = w->fa, *fb = w->fb;
	double sink = 0;
	switch (k) {
	case K_AOPS:
		for (size_t r0 = 0; r0 < n; r0 += BA_ROW) {
			double s = 0;
			env.index = r0;
			sink += (double)emu_a_fold(w->op, w->f, &s, a + r0, 1, b + r0, 1, BA_ROW,
			                           &env, NULL)
			            .any;
			sink += s;
		}
		break;
	case K_SCALAR: {
		unsigned fl = 0;
		for (size_t r0 = 0; r0 < n; r0 += BA_ROW) {
			double s = 0;
			for (size_t i = r0; i < r0 + BA_ROW; i++) {
				env.index = i;
				s = w->op == EMU_OP_FMA ? ba_scalar(w, &env, a[i], b[i], s, &fl)
				                        : ba_scalar(w, &env, s, a[i], 0, &fl);
			}
			sink += s;
		}
		sink += fl;
		break;
	}
	case K_DOUBLE:
		switch (w->op) {
		case EMU_OP_ADD:
			BA_FOLD(double, s, s = s + a[i]);
		case EMU_OP_FMA:
			BA_FOLD(double, s, s = a[i] * b[i] + s);
		default:
			BA_FOLD(double, s, s = fmax(s, a[i]));
		}
		break;
	case K_FLOAT:
		switch (w->op) {
		case EMU_OP_ADD:
			BA_FOLD(float, s, s = s + fa[i]);
		case EMU_OP_FMA:
			BA_FOLD(float, s, s = fa[i] * fb[i] + s);
		default:
			BA_FOLD(float, s, s = fmaxf(s, fa[i]));
		}
		break;
	default:
		memcpy(w->dst, a, n * sizeof(double));
		sink += w->dst[n / 3];
		break;
	}
	ba_sink += sink;
}

static void ba_run(const struct ba *w, int k)
{
	if (w->shape == S_FOLD) {
		ba_run_fold(w, k);
		return;
	}
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = w->mode;
	env.seed = 42;
	size_t n = w->n;
	const double *a = w->a, *b = w->b, *c = w->c;
	const float *fa = w->fa, *fb = w->fb, *fc = w->fc;
	double *d = w->dst;
	float *fd = w->fdst;
	/* bcast: the second operand (and fma's third) is element 0, stride 0 */
	size_t sb = w->shape == S_BCAST ? 0 : 1;
	double bs = b[0], cs = c[0];
	float fbs = fb[0], fcs = fc[0];
	switch (k) {
	case K_AOPS: {
		const double *args[3] = {a, b, c};
		const size_t st[3] = {1, sb, sb};
		ba_sink += (double)emu_a_op(w->op, w->f, d, args, st, n, &env, NULL).any;
		break;
	}
	case K_SCALAR: {
		unsigned fl = 0;
		for (size_t i = 0; i < n; i++) {
			env.index = i;
			d[i] = ba_scalar(w, &env, a[i], b[i * sb], c[i * sb], &fl);
		}
		ba_sink += fl;
		break;
	}
	case K_DOUBLE: /* one plain loop per op, as native code would be */
		if (w->shape == S_BCAST) {
			switch (w->op) {
			case EMU_OP_ADD:
				BA_LOOP(d[i] = a[i] + bs);
			case EMU_OP_MUL:
				BA_LOOP(d[i] = a[i] * bs);
			default:
				BA_LOOP(d[i] = a[i] * bs + cs);
			}
			break;
		}
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
		case EMU_OP_EXP2:
			BA_LOOP(d[i] = exp2(a[i]));
		case EMU_OP_RSQRT:
			BA_LOOP(d[i] = 1 / sqrt(a[i]));
		default:
			BA_LOOP(d[i] = log(a[i]));
		}
		break;
	case K_FLOAT:
		if (w->shape == S_BCAST) {
			switch (w->op) {
			case EMU_OP_ADD:
				BA_LOOP(fd[i] = fa[i] + fbs);
			case EMU_OP_MUL:
				BA_LOOP(fd[i] = fa[i] * fbs);
			default:
				BA_LOOP(fd[i] = fa[i] * fbs + fcs);
			}
			ba_sink += fd[n / 2];
			break;
		}
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
		case EMU_OP_EXP2:
			BA_LOOP(fd[i] = exp2f(fa[i]));
		case EMU_OP_RSQRT:
			BA_LOOP(fd[i] = 1 / sqrtf(fa[i]));
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
	/* exp, exp2: uniform in [-14, 2] (softmax's x - max); folds: |x| in [2^-3, 2^1) */
	double *ea = ba_alloc(n * sizeof *ea), *ra = ba_alloc(n * sizeof *ra);
	double *rb = ba_alloc(n * sizeof *rb);
	float *fea = ba_alloc(n * sizeof *fea), *fra = ba_alloc(n * sizeof *fra);
	float *frb = ba_alloc(n * sizeof *frb);
	printf("op,format,mode,shape,melem_s,ratio_memcpy,ratio_double,scalar_melem_s,"
	       "speedup_scalar,double_melem_s,float_melem_s,ratio_float\n");
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
			for (int k = 0; k < 5; k++) {
				uint64_t r = ba_next(&s);
				double m = 1.0 + (double)(r >> 11) * 0x1p-53;
				int e = k > 2 ? (int)((r & 0xff) % 4) - 3
				              : lo + (int)((r & 0xff) % (unsigned)(hi - lo + 1));
				double x = ldexp((r >> 8) & 1 ? -m : m, e);
				double v = emu_decode(f, emu_from_double(f, x, &env).bits);
				if (k > 2) {
					(k == 3 ? ra : rb)[i] = v;
					(k == 3 ? fra : frb)[i] = (float)v;
					continue;
				}
				(k == 2 ? c : k ? b : a)[i] = v;
				(k == 2 ? fc : k ? fb : fa)[i] = (float)v;
				if (k == 0) {
					pa[i] = fabs(v);
					fpa[i] = (float)fabs(v);
					ea[i] = 2 - 16 * (double)(r >> 11) * 0x1p-53;
					ea[i] = emu_decode(f, emu_from_double(f, ea[i], &env).bits);
					fea[i] = (float)ea[i];
				}
			}
		static const struct {
			emu_op op;
			emu_mode mode;
			enum shape shape;
		} rows[] = {{EMU_OP_ADD, EMU_RNE, S_UNIT},   {EMU_OP_MUL, EMU_RNE, S_UNIT},
		            {EMU_OP_FMA, EMU_RNE, S_UNIT},   {EMU_OP_DIV, EMU_RNE, S_UNIT},
		            {EMU_OP_SQRT, EMU_RNE, S_UNIT},  {EMU_OP_EXP, EMU_RNE, S_UNIT},
		            {EMU_OP_LOG, EMU_RNE, S_UNIT},   {EMU_OP_EXP2, EMU_RNE, S_UNIT},
		            {EMU_OP_RSQRT, EMU_RNE, S_UNIT}, {EMU_OP_ADD, EMU_SR, S_UNIT},
		            {EMU_OP_MUL, EMU_SR, S_UNIT},    {EMU_OP_ADD, EMU_RNE, S_BCAST},
		            {EMU_OP_MUL, EMU_RNE, S_BCAST},  {EMU_OP_FMA, EMU_RNE, S_BCAST},
		            {EMU_OP_ADD, EMU_RNE, S_FOLD},   {EMU_OP_FMA, EMU_RNE, S_FOLD},
		            {EMU_OP_MAX, EMU_RNE, S_FOLD},   {EMU_OP_ADD, EMU_SR, S_FOLD}};
		for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
			emu_op op = rows[ri].op;
			enum shape sh = rows[ri].shape;
			bool pos = op == EMU_OP_SQRT || op == EMU_OP_LOG || op == EMU_OP_RSQRT;
			bool ex = op == EMU_OP_EXP || op == EMU_OP_EXP2;
			struct ba w = {f,
			               op,
			               rows[ri].mode,
			               sh,
			               sh == S_FOLD ? ra
			               : pos        ? pa
			               : ex         ? ea
			                            : a,
			               sh == S_FOLD ? rb : b,
			               c,
			               sh == S_FOLD ? fra
			               : pos        ? fpa
			               : ex         ? fea
			                            : fa,
			               sh == S_FOLD ? frb : fb,
			               fc,
			               dst,
			               fdst,
			               n};
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
			printf("%s,%s,%s,%s,%.1f,%.3f,%.3f,%.1f,%.1f,%.1f,%.1f,%.3f\n",
			       emu_op_name(op), f->name, emu_mode_name(rows[ri].mode),
			       shape_name[sh], eps[K_AOPS] / 1e6, eps[K_AOPS] / eps[K_MEMCPY],
			       eps[K_AOPS] / eps[K_DOUBLE], eps[K_SCALAR] / 1e6,
			       eps[K_AOPS] / eps[K_SCALAR], eps[K_DOUBLE] / 1e6, eps[K_FLOAT] / 1e6,
			       eps[K_AOPS] / eps[K_FLOAT]);
			fflush(stdout);
		}
	}
	free(ea), free(ra), free(rb), free(fea), free(fra), free(frb);
	free(a), free(b), free(c), free(pa), free(dst), free(fa), free(fb), free(fc), free(fpa),
	    free(fdst);
}
