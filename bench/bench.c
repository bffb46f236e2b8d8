/*
 * bench.c — `make bench`: throughput of the fast backend, as CSV on stdout.
 *
 * Table 1 (the contract, n = 2^20 doubles = 8 MiB, out of cache):
 *   op,format,mode,dist,melem_s,ratio_memcpy
 * ratio_memcpy = (elements/s of the op) / (elements/s of memcpy of the same
 * n-double array), both measured in the same run, interleaved (memcpy, op,
 * memcpy, op, ...), best of several repetitions each.
 * Table 2: the same at n = 2^16 (in L2), with an n column.
 * Table 3: fast over MPFR, n = 2^14, wide data:
 *   op,format,mode,fast_melem_s,mpfr_melem_s,speedup
 * Tables 5, 6 and 12 (bench/bench_kernels.c): the kernels on the fast backend
 * against native float, the exact backend over the fast one, and every CPU
 * against one thread.
 * Table 7 (bench/bench_sweep.c): points per second of the default sweep cases.
 * Table 8 (bench/bench_golden.c): reading a 1 GB golden file against fread.
 * Table 9 (bench/bench_aops.c): the array operations against scalar and native loops.
 * Table 10 (bench/bench_quant.c): nanmap quant's path (nvfp4, mxfp8) against memcpy.
 * Table 11 (bench/bench_train.c): training steps under each preset, fast and exact;
 * 11b: against the native-float trainer (bench/train_native.c), with bytes a parameter.
 * Tables are separated by one blank line. Diagnostics go to stderr.
 * Single thread. Numbers are measured, never asserted; docs/bench.md.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "emu/core/draw.h"
#include "emu/core/emu.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_parse.h"

/* bench/bench_kernels.c: tables 5 and 6, the kernels end to end. */
void bench_kernels(int reps);
/* bench/bench_sweep.c: table 7, points of the default sweep cases. */
void bench_sweep(int reps);
/* bench/bench_golden.c: table 8, a golden file of mb MB read. */
void bench_golden(int reps, size_t mb);
/* bench/bench_aops.c: table 9, the array ops (unit, broadcast) and folds on 2^20 values. */
void bench_aops(int reps);
/* bench/bench_quant.c: table 10, nanmap quant over a 2^24-element fp32 tensor. */
void bench_quant(int reps);
/* bench/bench_train.c: table 11, whole training steps under each preset, then
 * 11b; bench_train_native: 11b alone, the emulator against native float. */
void bench_train(int reps);
void bench_train_native(int reps);

#define N_BIG (1u << 20)
#define N_SMALL (1u << 16)
#define N_MPFR (1u << 14)
/* Each timed sample repeats the kernel until it covers about this many
 * elements, so small arrays are not timed at the clock's resolution. */
#define MIN_SAMPLE_ELEMS (1u << 18)

static int reps = 5;
static volatile uint64_t sink;

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* Wall and CPU time of every timed sample: when the process got much less
 * than a whole CPU, other load distorted the numbers and main says so. */
static double timed_wall, timed_cpu;

/* the next draw of a counter stream: the library's keyed draw */
static uint64_t splitmix(uint64_t *s)
{
	return emu_draw64(0, (*s)++);
}

static double unit(uint64_t *s)
{
	return emu_draw_unit(splitmix(s));
}

typedef enum { DIST_NARROW, DIST_WIDE } dist_t;
static const char *const dist_names[] = {"narrow", "wide"};

/* narrow: [2^-14, 2), exponent uniform in -14..0, significand uniform;
 * wide: |x| log-uniform over [2^-40, 2^40), random sign. */
static void fill(double *x, size_t n, dist_t d, uint64_t seed)
{
	uint64_t s = seed;
	for (size_t i = 0; i < n; i++) {
		if (d == DIST_NARROW) {
			int e = (int)(splitmix(&s) % 15) - 14;
			x[i] = ldexp(1.0 + unit(&s), e);
		} else {
			double v = exp2(80.0 * unit(&s) - 40.0);
			x[i] = (splitmix(&s) >> 63) ? -v : v;
		}
	}
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
		exit(2);
	}
	memset(p, 0, n); /* touch every page before timing */
	return p;
}

/* ---- kernels ---- */

typedef enum { OP_ROUND, OP_ADD, OP_MUL, OP_FMA } bop;
static const char *const op_names[] = {"round", "add", "mul", "fma"};

struct work {
	bop op;
	const emu_format *f;
	emu_mode mode;
	size_t n;
	const double *in;          /* round */
	const emu_bits *a, *b, *c; /* add mul fma */
	emu_bits *out;
};

static void run_fast(const struct work *w)
{
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = w->mode;
	env.seed = 42;
	if (w->op == OP_ROUND) {
		sink += emu_round_array(w->f, w->in, w->out, w->n, &env);
		return;
	}
	for (size_t i = 0; i < w->n; i++) {
		env.index = i;
		switch (w->op) {
		case OP_ADD:
			w->out[i] = emu_add(w->f, w->a[i], w->b[i], &env).bits;
			break;
		case OP_MUL:
			w->out[i] = emu_mul(w->f, w->a[i], w->b[i], &env).bits;
			break;
		default:
			w->out[i] = emu_fma(w->f, w->a[i], w->b[i], w->c[i], &env).bits;
			break;
		}
	}
}

static void run_mpfr(const struct work *w)
{
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = w->mode;
	env.seed = 42;
	for (size_t i = 0; i < w->n; i++) {
		env.index = i;
		if (w->op == OP_ROUND) {
			w->out[i] = emu_mp_from_double(w->f, w->in[i], &env).bits;
		} else {
			emu_bits args[3] = {w->a[i], w->b[i], w->c ? w->c[i] : 0};
			emu_op op = w->op == OP_ADD   ? EMU_OP_ADD
			            : w->op == OP_MUL ? EMU_OP_MUL
			                              : EMU_OP_FMA;
			w->out[i] = emu_mp_apply(op, w->f, NULL, args, &env).bits;
		}
	}
}

/* Seconds per element of one sample of fn (repeated to MIN_SAMPLE_ELEMS). */
static double sample(void (*fn)(const struct work *), const struct work *w)
{
	size_t k = w->n >= MIN_SAMPLE_ELEMS ? 1 : MIN_SAMPLE_ELEMS / w->n;
	double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	double t0 = now();
	for (size_t r = 0; r < k; r++)
		fn(w);
	double t = now() - t0;
	timed_wall += t;
	timed_cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	sink += w->out[w->n / 2];
	return t / (double)(k * w->n);
}

static const double *memcpy_src;
static double *memcpy_dst;

static void run_memcpy(const struct work *w)
{
	memcpy(memcpy_dst, memcpy_src, w->n * sizeof(double));
	sink += (uint64_t)memcpy_dst[w->n / 3];
}

/* Best-of-reps elements/s of the op and of memcpy, interleaved. */
static void measure(const struct work *w, double *op_eps, double *memcpy_eps)
{
	double best_op = INFINITY, best_mc = INFINITY;
	run_fast(w); /* warm up: caches, page tables, lazy init */
	run_memcpy(w);
	for (int r = 0; r < reps; r++) {
		double m = sample(run_memcpy, w);
		double o = sample(run_fast, w);
		if (m < best_mc)
			best_mc = m;
		if (o < best_op)
			best_op = o;
	}
	*op_eps = 1.0 / best_op;
	*memcpy_eps = 1.0 / best_mc;
}

/* ---- data sets ---- */

struct data {
	size_t n;
	double *x, *y, *z; /* dist data */
	emu_bits *a, *b, *c, *out;
};

static void data_init(struct data *d, size_t n, dist_t dist)
{
	d->n = n;
	d->x = xmalloc(n * sizeof *d->x);
	d->y = xmalloc(n * sizeof *d->y);
	d->z = xmalloc(n * sizeof *d->z);
	d->a = xmalloc(n * sizeof *d->a);
	d->b = xmalloc(n * sizeof *d->b);
	d->c = xmalloc(n * sizeof *d->c);
	d->out = xmalloc(n * sizeof *d->out);
	fill(d->x, n, dist, 1 + 3 * (uint64_t)dist);
	fill(d->y, n, dist, 2 + 3 * (uint64_t)dist);
	fill(d->z, n, dist, 3 + 3 * (uint64_t)dist);
}

/* Operands of the arithmetic ops: the dist data rounded (RNE) to f. */
static void data_operands(struct data *d, const emu_format *f)
{
	emu_env env = EMU_ENV_DEFAULT;
	emu_round_array(f, d->x, d->a, d->n, &env);
	emu_round_array(f, d->y, d->b, d->n, &env);
	emu_round_array(f, d->z, d->c, d->n, &env);
}

static void data_free(struct data *d)
{
	free(d->x), free(d->y), free(d->z);
	free(d->a), free(d->b), free(d->c), free(d->out);
}

static const emu_format *fmt(const char *name)
{
	const emu_format *f = emu_format_by_name(name);
	if (!f) {
		fprintf(stderr, "bench: no built-in format '%s'\n", name);
		exit(2);
	}
	return f;
}

static const char *const round_formats[] = {"fp16", "bf16", "e4m3", "e5m2"};
static const char *const arith_formats[] = {"fp16", "e4m3"};
static const emu_mode bench_modes[] = {EMU_RNE, EMU_SR};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Table 1 or 2: every case at size n. */
static void throughput_table(size_t n, bool with_n)
{
	printf("%sop,format,mode,dist,melem_s,ratio_memcpy\n", with_n ? "n," : "");
	for (int di = 0; di < 2; di++) {
		struct data d;
		data_init(&d, n, (dist_t)di);
		memcpy_src = d.x;
		memcpy_dst = xmalloc(n * sizeof(double));
		double best_mc = 0;
		for (int op = OP_ROUND; op <= OP_FMA; op++) {
			const char *const *names = op == OP_ROUND ? round_formats : arith_formats;
			size_t nf = op == OP_ROUND ? COUNT(round_formats) : COUNT(arith_formats);
			for (size_t fi = 0; fi < nf; fi++) {
				const emu_format *f = fmt(names[fi]);
				if (op != OP_ROUND)
					data_operands(&d, f);
				for (size_t mi = 0; mi < COUNT(bench_modes); mi++) {
					struct work w = {(bop)op, f,   bench_modes[mi],
					                 n,       d.x, d.a,
					                 d.b,     d.c, d.out};
					double eps, mcps;
					measure(&w, &eps, &mcps);
					if (mcps > best_mc)
						best_mc = mcps;
					if (with_n)
						printf("%zu,", n);
					printf("%s,%s,%s,%s,%.1f,%.3f\n", op_names[op], f->name,
					       emu_mode_name(bench_modes[mi]), dist_names[di],
					       eps / 1e6, eps / mcps);
					fflush(stdout);
				}
			}
		}
		fprintf(stderr,
		        "bench: n=%zu %s: memcpy of the double array, best %.1f Melem/s (%.2f GB/s "
		        "copied)\n",
		        n, dist_names[di], best_mc / 1e6, best_mc * 8 / 1e9);
		free(memcpy_dst);
		data_free(&d);
	}
}

/* Table 3: fast vs MPFR, wide data, n = 2^14. Also counts disagreements
 * (the tests prove there are none; a nonzero count here is a bug report). */
static void mpfr_table(void)
{
	size_t n = N_MPFR;
	struct data d;
	data_init(&d, n, DIST_WIDE);
	emu_bits *ref = xmalloc(n * sizeof *ref);
	printf("op,format,mode,fast_melem_s,mpfr_melem_s,speedup\n");
	for (int op = OP_ROUND; op <= OP_FMA; op++) {
		const char *const *names = op == OP_ROUND ? round_formats : arith_formats;
		size_t nf = op == OP_ROUND ? COUNT(round_formats) : COUNT(arith_formats);
		for (size_t fi = 0; fi < nf; fi++) {
			const emu_format *f = fmt(names[fi]);
			if (op != OP_ROUND)
				data_operands(&d, f);
			for (size_t mi = 0; mi < COUNT(bench_modes); mi++) {
				struct work w = {(bop)op, f,    bench_modes[mi], n, d.x, d.a, d.b,
				                 d.c,     d.out};
				struct work wm = w;
				wm.out = ref;
				double bf = INFINITY, bm = INFINITY;
				int r_m = reps < 3 ? reps : 3;
				run_fast(&w);
				for (int r = 0; r < reps; r++) {
					double t = sample(run_fast, &w);
					if (t < bf)
						bf = t;
				}
				for (int r = 0; r < r_m; r++) {
					double t0 = now();
					run_mpfr(&wm);
					double t = (now() - t0) / (double)n;
					if (t < bm)
						bm = t;
				}
				/* SR in emu_round_array uses index = env->index + i,
				 * as run_mpfr does, so results must agree everywhere. */
				run_fast(&w);
				size_t diff = 0;
				for (size_t i = 0; i < n; i++)
					diff += w.out[i] != ref[i];
				if (diff)
					fprintf(stderr,
					        "bench: WARNING %s %s %s: fast and MPFR differ on "
					        "%zu of %zu elements\n",
					        op_names[op], f->name,
					        emu_mode_name(bench_modes[mi]), diff, n);
				printf("%s,%s,%s,%.2f,%.3f,%.1f\n", op_names[op], f->name,
				       emu_mode_name(bench_modes[mi]), 1e-6 / bf, 1e-6 / bm,
				       bm / bf);
				fflush(stdout);
			}
		}
	}
	free(ref);
	data_free(&d);
}

static void report_share(void)
{
	double share = timed_wall > 0 ? timed_cpu / timed_wall : 1;
	fprintf(stderr, "bench: the timed loops got %.0f%% of a CPU%s\n", 100 * share,
	        share < 0.9 ? " -- WARNING: other load on this machine, numbers are low; rerun idle"
	                    : "");
}

static void usage(void)
{
	fprintf(stderr, "usage: nanmap-bench [--quick] [--reps N] [--no-mpfr] "
	                "[--kernels-only] [--sweep-only] [--golden-only] [--golden-mb N] "
	                "[--aops-only] [--quant-only] [--train-only] [--train-native-only]\n");
	exit(2);
}

enum {
	B_QUICK,
	B_REPS,
	B_NO_MPFR,
	B_KERNELS,
	B_SWEEP,
	B_GOLDEN,
	B_AOPS,
	B_QUANT,
	B_TRAIN,
	B_NATIVE,
	B_GOLDEN_MB
};

static const nm_opt bench_opts[] = {
    {NULL, "--quick", B_QUICK, 0, 0},
    {NULL, "--reps", B_REPS, NM_OPTF_VALUE, 0},
    {NULL, "--no-mpfr", B_NO_MPFR, 0, 0},
    {NULL, "--kernels-only", B_KERNELS, 0, 1},
    {NULL, "--sweep-only", B_SWEEP, 0, 1},
    {NULL, "--golden-only", B_GOLDEN, 0, 1},
    {NULL, "--aops-only", B_AOPS, 0, 1},
    {NULL, "--quant-only", B_QUANT, 0, 1},
    {NULL, "--train-only", B_TRAIN, 0, 1},
    {NULL, "--train-native-only", B_NATIVE, 0, 1},
    {NULL, "--golden-mb", B_GOLDEN_MB, NM_OPTF_VALUE, 0},
};

typedef struct {
	bool mpfr;
	int only; /* -1, or the B_*_ONLY given */
	uint64_t golden_mb;
} bench_args;

static int bench_take(void *ctx, const nm_opt *d, const char *v)
{
	bench_args *a = ctx;
	uint64_t n;
	switch (d->id) {
	case B_QUICK:
		reps = 2;
		return 0;
	case B_REPS:
		if (nm_parse_count("--reps", v, 1, 1000000, &n))
			return 2;
		reps = (int)n;
		return 0;
	case B_NO_MPFR:
		a->mpfr = false;
		return 0;
	case B_GOLDEN_MB:
		return nm_parse_count("--golden-mb", v, 1, 1u << 20, &a->golden_mb) ? 2 : 0;
	default: /* one of the --*-only, which exclude each other */
		a->only = d->id;
		return 0;
	}
}

int main(int argc, char **argv)
{
	bench_args a = {true, -1, 1000};
	nm_heap_keep(); /* the heap as the CLI keeps it: repeated runs reuse their pages */
	if (nm_wants_help(argc - 1, argv + 1))
		usage();
	if (nm_opt_parse(&(nm_optparser){.cmd = "nanmap-bench",
	                                 .defs = bench_opts,
	                                 .ndefs = sizeof bench_opts / sizeof bench_opts[0],
	                                 .take = bench_take,
	                                 .ctx = &a,
	                                 .prog = "nanmap-bench"},
	                 argc - 1, argv + 1) != 0)
		return 2;
	bool mpfr = a.mpfr, kernels_only = a.only == B_KERNELS, sweep_only = a.only == B_SWEEP,
	     golden_only = a.only == B_GOLDEN, aops_only = a.only == B_AOPS,
	     quant_only = a.only == B_QUANT, train_only = a.only == B_TRAIN,
	     native_only = a.only == B_NATIVE;
	uint64_t golden_mb = a.golden_mb;
#ifdef _OPENMP
	omp_set_num_threads(1); /* the numbers are single-thread numbers */
#endif
	if (kernels_only) {
		bench_kernels(reps);
		return 0;
	}
	if (sweep_only) {
		bench_sweep(reps);
		return 0;
	}
	if (golden_only) {
		bench_golden(reps, (size_t)golden_mb);
		return 0;
	}
	if (aops_only) {
		bench_aops(reps);
		report_share();
		return 0;
	}
	if (quant_only) {
		bench_quant(reps);
		return 0;
	}
	if (train_only) {
		bench_train(reps);
		return 0;
	}
	if (native_only) {
		bench_train_native(reps);
		return 0;
	}
	throughput_table(N_BIG, false);
	printf("\n");
	throughput_table(N_SMALL, true);
	if (mpfr) {
		printf("\n");
		mpfr_table();
	}
	printf("\n");
	bench_kernels(reps);
	printf("\n");
	bench_sweep(reps);
	printf("\n");
	bench_golden(reps, (size_t)golden_mb);
	printf("\n");
	bench_aops(reps);
	printf("\n");
	bench_quant(reps);
	printf("\n");
	bench_train(reps);
	report_share();
	return 0;
}
