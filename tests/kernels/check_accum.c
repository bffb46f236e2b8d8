/*
 * check_accum.c — the accum kernel: what each summation order does to sums
 * of ones, the Tensor Core path against the model it wires (the chain of
 * block FMAs equals one emu_tc_dot call; FAST equals the MPFR model), the
 * FP8 accumulation error with and without fp32 promotion, and what gradient
 * accumulation does to small and large gradients. Every number comes from a
 * run of the kernel; the constants it is compared with are the facts
 * (shared/FACTS.md §3, §7) the kernel must reproduce.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"
#include "emu/kernels/tc.h"

static void parse(const char *spec, emu_policy *pol)
{
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, pol, err, sizeof err) == EMU_OK, "%s: %s", spec, err);
}

/* Run accum and fail the test if the kernel refuses. */
static void run(const emu_policy *pol, const char *variant, const double *x, size_t rows,
                size_t cols, const emu_kparam *par, size_t npar, emu_be_kind kind, emu_run *r)
{
	char err[200] = "";
	emu_kin in = {x, rows, cols, par, npar, t_seed(), NULL, 0};
	int rc = emu_run_kernel(&emu_kernel_accum, pol, variant, &in, kind, r, err, sizeof err);
	ck_assert_msg(rc == 0, "accum %s [%s]: %s", variant, pol->spec, err);
}

/* The kernel's first output for row i. */
static double out0(const emu_run *r, size_t i)
{
	return emu_kout_d(&r->be, &r->out.item[0], i);
}

/* Sum of n ones in variant under spec (one row). */
static double ones(const char *spec, const char *variant, size_t n, const emu_kparam *par,
                   size_t npar, emu_run_status *st)
{
	emu_policy pol;
	parse(spec, &pol);
	double *x = malloc(n * sizeof *x);
	ck_assert(x);
	for (size_t j = 0; j < n; j++)
		x[j] = 1;
	emu_run r;
	run(&pol, variant, x, 1, n, par, npar, EMU_BE_FAST, &r);
	double s = out0(&r, 0);
	if (st)
		*st = r.status;
	emu_run_free(&r);
	free(x);
	return s;
}

START_TEST(test_ones_seq_stall)
{
	/* s + 1 rounds back to s once s = 2^p: 2^p + 1 is a tie between 2^p and
	 * 2^p + 2, and ties go to the even significand, 2^p */
	static const struct {
		const char *spec;
		double stall;
	} c[] = {
	    {"storage=fp16", 2048},
	    {"storage=bf16", 256},
	    {"storage=e4m3", 16},
	    {"storage=e5m2", 8},
	};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		double s = ones(c[i].spec, "sum:seq", 5000, NULL, 0, NULL);
		printf("accum: sum:seq of 5000 ones [%s] = %g\n", c[i].spec, s);
		ck_assert_msg(s == c[i].stall, "%s: %g, expected %g", c[i].spec, s, c[i].stall);
		/* a dot product of ones (b = |x_i| = 1) through one FMA per step too */
		emu_kparam fma = {"fma", 1};
		ck_assert(ones(c[i].spec, "dot:seq", 5000, &fma, 1, NULL) == c[i].stall);
	}
	/* an fp32 accumulator over fp16 inputs holds every partial sum */
	ck_assert(ones("storage=fp16,accum=fp32", "sum:seq", 5000, NULL, 0, NULL) == 5000);
}
END_TEST

START_TEST(test_ones_other_orders)
{
	emu_run_status st;
	/* pairwise in fp16: the halves are 2500, 1250, 625, 312/313, ... — every
	 * partial sum below 2048 is an exact integer, and 2500 (even, < 4096)
	 * and 5000 (a multiple of 4, < 8192) are fp16 values: exact */
	double s = ones("storage=fp16", "sum:pairwise", 5000, NULL, 0, &st);
	printf("accum: sum:pairwise of 5000 ones [fp16] = %g\n", s);
	ck_assert(s == 5000 && st == EMU_ST_OK);
	/* block k=64 in fp16: blocks of 64 are exact, block sums are multiples
	 * of 64 below 8192 (7 significant bits), plus the last block's 8 */
	emu_kparam k64 = {"k", 64};
	s = ones("storage=fp16", "sum:block", 5000, &k64, 1, &st);
	printf("accum: sum:block k=64 of 5000 ones [fp16] = %g\n", s);
	ck_assert(s == 5000);
	/* bf16 (8 bits): 313 = 156 + 157 is odd above 256 and ties to 312, and
	 * such losses repeat up the tree: better than the stall, not exact */
	s = ones("storage=bf16", "sum:pairwise", 5000, NULL, 0, &st);
	printf("accum: sum:pairwise of 5000 ones [bf16] = %g\n", s);
	ck_assert(s > 256 && s < 5000 && fabs(s - 5000) / 5000 < 0.02);
	/* e4m3: pairwise does not stall, it overflows: 5000 > 448, and e4m3 has
	 * no infinity, so the sum is NaN, where sequential stalled at 16 */
	s = ones("storage=e4m3", "sum:pairwise", 5000, NULL, 0, &st);
	printf("accum: sum:pairwise of 5000 ones [e4m3] = %g (%s)\n", s, emu_run_status_name(st));
	ck_assert(isnan(s) && st == EMU_ST_NAN);
	/* a Tensor Core (h100 fp16 -> fp32) sums them exactly */
	s = ones("storage=fp16,accum=fp32", "sum:tc:h100", 5000, NULL, 0, &st);
	ck_assert(s == 5000);
}
END_TEST

/* Row data: random finite encodings of f (zeros, subnormals, normals of
 * every exponent), spread or clustered depending on the case. */
static void random_row(const emu_format *f, uint64_t stream, double *x, size_t n, int spread)
{
	for (size_t j = 0; j < n; j++) {
		double v;
		uint64_t try = 0;
		do {
			uint64_t u = t_rand(stream, j * 64 + try++);
			if (spread) {
				v = emu_decode(f, (emu_bits)(u & ((1u << f->bits) - 1)));
			} else { /* magnitudes 2^[−3, 3): no specials, one sign per row */
				double e = -3 + (double)(u % 600) / 100.0;
				emu_env env = EMU_ENV_DEFAULT;
				v = exp2(e) * ((u >> 40) & 1 ? -1 : 1);
				v = emu_decode(f,
				               emu_from_double(f, v, &env).bits); /* a value of f */
			}
		} while (!isfinite(v));
		x[j] = v;
	}
}

/* The b the kernel generates for row element o + j (its documented rule). */
static double kernel_b(const double *x, size_t o, size_t j, size_t N)
{
	return fabs(x[o + emu_sr_bits(t_seed(), o + j) % N]);
}

static bool same_stats(const emu_be_stats *a, const emu_be_stats *b)
{
	return memcmp(a->ops, b->ops, sizeof a->ops) == 0 &&
	       memcmp(a->flags, b->flags, sizeof a->flags) == 0 && a->all_flags == b->all_flags &&
	       a->first_set == b->first_set &&
	       (!a->first_set || (a->first_op == b->first_op && a->first_index == b->first_index &&
	                          strcmp(a->first_step, b->first_step) == 0));
}

/* Row r of x (N values of S, b as the kernel draws it for offset o) through
 * emu_tc_dot in one call. */
static emu_result model_row(const emu_tc_model *m, const emu_format *S, const emu_format *O,
                            const double *x, size_t o, size_t N, bool dot)
{
	emu_bits ea[200], eb[200];
	for (size_t j = 0; j < N; j++) {
		ea[j] = emu_encode(S, x[o + j]);
		eb[j] = emu_encode(S, dot ? kernel_b(x, o, j, N) : 1.0);
	}
	return emu_tc_dot(m, S, O, ea, eb, N, 0);
}

/* Blocks the kernel must record for one row: ceil(n/k) per promotion chunk. */
static uint64_t blocks_of(const emu_tc_model *m, size_t N)
{
	size_t chunk = m->promote_every ? m->promote_every : N;
	uint64_t blocks = 0;
	for (size_t i0 = 0; i0 < N; i0 += chunk) {
		size_t n = N - i0 < chunk ? N - i0 : chunk;
		blocks += (n + (size_t)m->k - 1) / (size_t)m->k;
	}
	return blocks;
}

/* The tc path: for each configuration and many rows, FAST equals EXACT
 * (bits and per-op flags), TRUTH records the same operations, and FAST
 * equals one emu_tc_dot call over the whole row (bits; and flags, on a
 * one-row run: the inputs are values of the storage format, so the only
 * flags are the model's). */
/* The same encoding, or both NaN. */
static bool same_or_nan(const emu_format *f, emu_bits a, emu_bits b)
{
	return a == b || (emu_is_nan(f, a) && emu_is_nan(f, b));
}

START_TEST(test_tc_chain_equals_model)
{
	static const struct {
		const char *spec, *variant;
		double promote;
	} c[] = {
	    {"storage=fp16,accum=fp32", "dot:tc:h100", -1},
	    {"storage=fp16", "dot:tc:h100", -1}, /* fp16 out, C pre-rounded, RNE */
	    {"storage=fp16", "dot:tc:v100", 8},
	    {"storage=bf16,accum=fp32", "dot:tc:a100", -1},
	    {"storage=e4m3,accum=fp32", "dot:tc:h100", -1},
	    {"storage=e4m3,accum=fp32", "dot:tc:h100", 64},
	    {"storage=e5m2,accum=fp32", "dot:tc:b200", 40},
	    {"storage=e4m3,accum=fp16", "dot:tc:h100", 32},
	    {"storage=fp16,accum=fp32", "dot:tc:k=4,neab=-3,final=rne,floor=-20", -1},
	    {"storage=fp16,accum=fp32", "sum:tc:k=3,neab=0,final=down", 7},
	    {"storage=bf16,accum=fp32", "dot:tc:k=5,final=up,prec=12", 11},
	};
	static const size_t lens[] = {1, 5, 31, 33, 200};
	enum { ROWS = 3 };
	const int reps = t_quick() ? 2 : 12;
	uint64_t cases = 0;
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		emu_policy pol;
		parse(c[i].spec, &pol);
		const emu_format *S = &pol.storage;
		const char *var = c[i].variant;
		bool dot = var[0] == 'd';
		emu_kparam par = {"promote", c[i].promote};
		size_t np = c[i].promote >= 0;
		for (size_t li = 0; li < ARRAY_SIZE(lens); li++) {
			size_t N = lens[li];
			for (int rep = 0; rep < reps; rep++) {
				double x[ROWS * 200];
				for (size_t r = 0; r < ROWS; r++)
					random_row(S,
					           1000 + i * 100 + li * 10 + (uint64_t)rep * 7 + r,
					           x + r * N, N, (rep + (int)r) % 3 != 0);
				emu_run a, b, t;
				run(&pol, var, x, ROWS, N, &par, np, EMU_BE_FAST, &a);
				run(&pol, var, x, ROWS, N, &par, np, EMU_BE_EXACT, &b);
				run(&pol, var, x, ROWS, N, &par, np, EMU_BE_TRUTH, &t);
				const emu_format *O = a.out.item[0].fmt;
				emu_tc_model m;
				char err[200];
				ck_assert_msg(emu_tc_parse(strchr(var + 4, ':') + 1, S, O, &m, err,
				                           sizeof err) == EMU_OK,
				              "%s", err);
				if (c[i].promote >= 0)
					m.promote_every = (size_t)c[i].promote;
				for (size_t r = 0; r < ROWS; r++) {
					emu_result d = model_row(&m, S, O, x, r * N, N, dot);
					emu_bits got = emu_encode(O, out0(&a, r));
					/* a kernel's values carry no NaN payload: its NaN is the
					 * format's, where sm_90's presets return all ones */
					ck_assert_msg(same_or_nan(O, got, d.bits),
					              "%s %s N=%zu row %zu: kernel 0x%x model 0x%x",
					              c[i].spec, var, N, r, got, d.bits);
					ck_assert_msg(emu_encode(O, out0(&b, r)) == got,
					              "%s %s: fast != exact", c[i].spec, var);
					/* the row alone (its b drawn as row 0's): bits and flags */
					emu_run one;
					run(&pol, var, x + r * N, 1, N, &par, np, EMU_BE_FAST,
					    &one);
					d = model_row(&m, S, O, x + r * N, 0, N, dot);
					ck_assert(same_or_nan(O, emu_encode(O, out0(&one, 0)), d.bits));
					ck_assert_msg(one.be.st.all_flags == d.flags,
					              "%s %s N=%zu row %zu: flags 0x%x, model 0x%x",
					              c[i].spec, var, N, r, one.be.st.all_flags,
					              d.flags);
					ck_assert(one.be.st.ops[EMU_OP_FMA] == blocks_of(&m, N));
					emu_run_free(&one);
					cases++;
				}
				ck_assert_msg(same_stats(&a.be.st, &b.be.st), "%s %s: flags differ",
				              c[i].spec, var);
				ck_assert(a.status == b.status);
				for (int op = 0; op < EMU_NOPS; op++)
					ck_assert(t.be.st.ops[op] == a.be.st.ops[op]);
				emu_run_free(&a);
				emu_run_free(&b);
				emu_run_free(&t);
			}
		}
	}
	t_count("accum: tc chain == emu_tc_dot == MPFR model (rows)", cases);
}
END_TEST

/* The largest relative error over rows of variant (promote < 0: the
 * model's own) under storage=e4m3,compute=fp32, against the truth. */
static double fp8_maxrel(const char *variant, const double *x, size_t R, size_t K, double promote,
                         double *normwise)
{
	emu_policy pol;
	parse("storage=e4m3,compute=fp32", &pol);
	emu_kparam par = {"promote", promote};
	emu_run f, t;
	run(&pol, variant, x, R, K, &par, promote >= 0, EMU_BE_FAST, &f);
	run(&pol, variant, x, R, K, &par, promote >= 0, EMU_BE_TRUTH, &t);
	ck_assert(f.out.item[0].fmt->p == 24); /* fp32 out */
	double mx = 0;
	for (size_t r = 0; r < R; r++) {
		double v = out0(&f, r), w = out0(&t, r);
		ck_assert(isfinite(v) && w != 0);
		double e = fabs(v - w) / fabs(w);
		if (e > mx)
			mx = e;
	}
	emu_run_compare(&f, &(emu_truth){.stored = t, .same = true}); /* the stored inputs' truth */
	*normwise = f.m[0].rel_err;
	emu_run_free(&f);
	emu_run_free(&t);
	return mx;
}

/* FP8 (e4m3) dot products of length 4096 through the H100 model: its
 * 13-fraction-bit window (neab = −10) chops every product against the
 * running sum, which grows with K; promotion to fp32 every 128 products
 * (DeepSeek-V3's N_C) restarts the window. FACTS §7 quotes ~2% for
 * K = 4096; the error depends on the data (how far the sum grows against
 * its terms), so three kinds of rows are measured. */
START_TEST(test_tc_fp8_k4096)
{
	enum { R = 32, K = 4096 };
	static const char *const names[] = {"one-signed 2^U[-4,4)", "N(0.5,1)", "N(0,1)"};
	double *x = malloc((size_t)R * K * sizeof *x);
	ck_assert(x);
	for (int d = 0; d < 3; d++) {
		for (size_t i = 0; i < (size_t)R * K; i++) {
			double u = (double)(t_rand(77, 2 * i) >> 11) * 0x1p-53;
			double w = (double)(t_rand(77, 2 * i + 1) >> 11) * 0x1p-53;
			double g =
			    sqrt(-2 * log1p(-u)) * cos(6.283185307179586 * w); /* Box–Muller */
			x[i] = d == 0 ? exp2(-4 + 8 * u) : d == 1 ? g + 0.5 : g;
		}
		double n0, n128, nf;
		double e0 = fp8_maxrel("dot:tc:h100", x, R, K, -1, &n0);
		double e128 = fp8_maxrel("dot:tc:h100", x, R, K, 128, &n128);
		double ef = fp8_maxrel("dot:seq", x, R, K, -1, &nf);
		printf(
		    "accum: h100 e4m3 -> fp32, K=%d, %d rows %s: max relative error %.3g%%, "
		    "promote=128 %.3g%% (norm-wise %.3g%%, %.3g%%; fp32 sequential max %.2g%%)\n",
		    K, R, names[d], 100 * e0, 100 * e128, 100 * n0, 100 * n128, 100 * ef);
		ck_assert(ef < 1e-5);
		if (d < 2) { /* the sum grows: the window's loss shows, promotion removes it */
			ck_assert_msg(e0 > 0.01 && e0 < 0.1, "%s: %g", names[d], e0);
			ck_assert_msg(e128 < e0 / 10, "%s: %g vs %g", names[d], e128, e0);
		} else { /* a random walk: the max is the rows whose dot nearly cancels */
			ck_assert_msg(n128 < n0, "%s: %g vs %g", names[d], n128, n0);
		}
	}
	free(x);
}
END_TEST

/* gradacc of one row under spec, FAST against TRUTH. */
static void gradacc(const char *spec, const double *x, size_t N, double m, double divide,
                    double scale, emu_run *f)
{
	emu_policy pol;
	parse(spec, &pol);
	emu_kparam par[3] = {{"m", m}, {"divide", divide}, {"scale", scale}};
	emu_run t;
	run(&pol, "gradacc", x, 1, N, par, 3, EMU_BE_FAST, f);
	run(&pol, "gradacc", x, 1, N, par, 3, EMU_BE_TRUTH, &t);
	emu_run_compare(f, &(emu_truth){.stored = t, .same = true}); /* the stored inputs' truth */
	emu_run_free(&t);
}

START_TEST(test_gradacc)
{
	enum { N = 64 };
	double small[N], large[N];
	/* small gradients: 2^[−24, −15), fp16 subnormals (once stored); large:
	 * 2^[−2, 0) */
	for (size_t j = 0; j < N; j++) {
		uint64_t u = t_rand(88, j);
		small[j] = exp2(-24 + (double)(u % 900) / 100.0) * ((u >> 40) & 1 ? -1 : 1);
		large[j] = exp2(-2 + (double)(u % 200) / 100.0);
	}
	emu_run r;
	/* divide=1: |g|/1024 <= 2^−25, half fp16's smallest subnormal 2^−24,
	 * rounds to 0 (2^−25 is a tie, to the even 0) for every |g| <= 2^−15:
	 * the whole gradient is lost. (Between 2^−15 and 2^−14, g/1024 rounds
	 * up to 2^−24 instead: not lost, but off by up to 2×.) */
	gradacc("storage=fp16", small, N, 1024, 1, 1, &r);
	size_t lost1 = r.m[0].lost;
	printf("accum: gradacc fp16 m=1024 divide=1, gradients 2^[-24,-15): lost %zu of %d (%s)\n",
	       lost1, N, emu_run_status_name(r.status));
	ck_assert(lost1 == N && r.status == EMU_ST_UNDERFLOW);
	emu_run_free(&r);
	/* divide=0 keeps them: 1024·g stays below 2^−4, a normal fp16 */
	gradacc("storage=fp16", small, N, 1024, 0, 1, &r);
	printf("accum: gradacc fp16 m=1024 divide=0: lost %zu, max %.3g ulp\n", r.m[0].lost,
	       r.m[0].max_ulp);
	ck_assert(r.m[0].lost == 0 && r.status == EMU_ST_OK);
	emu_run_free(&r);
	/* loss scaling (×1024) rescues divide=1 */
	gradacc("storage=fp16", small, N, 1024, 1, 1024, &r);
	ck_assert(r.m[0].lost == 0 && r.status == EMU_ST_OK);
	emu_run_free(&r);
	/* the opposite failure: loss-scaled (×1024) and not divided, 1024
	 * micro-batches of g ≥ 256 pass 65504 and the sum is inf */
	gradacc("storage=fp16", large, N, 1024, 0, 1024, &r);
	printf("accum: gradacc fp16 m=1024 divide=0 scale=1024, gradients 2^[-2,0): %s\n",
	       emu_run_status_name(r.status));
	ck_assert(r.status == EMU_ST_INF && r.be.st.first_set &&
	          strcmp(r.be.st.first_step, "accum") == 0);
	emu_run_free(&r);
	gradacc("storage=fp16", large, N, 1024, 1, 1024, &r);
	ck_assert(r.status == EMU_ST_OK);
	emu_run_free(&r);
	/* an fp32 accumulator over fp16 gradients: no overflow either way */
	gradacc("storage=fp16,accum=fp32", large, N, 1024, 0, 1024, &r);
	ck_assert(r.status == EMU_ST_OK);
	emu_run_free(&r);
}
END_TEST

/* Stochastic rounding draws are keyed by (seed, step, element): each
 * micro-batch's operations must be elements of their own, or every
 * micro-batch would round element j with the same draw and SR would be
 * biased. Ones added 4096 times in fp16 (divide=0): past 2048 every s + 1 is
 * a midpoint, which RNE ties to the even s (the stall at 2048) and SR rounds
 * up with probability 1/2. Independent draws reach 4096 ± ~45 (the walk's
 * 2048 steps of ±1); one draw per element would give 2048 or ~6144. */
START_TEST(test_gradacc_sr)
{
	enum { N = 64, M = 4096 };
	double x[N];
	for (size_t j = 0; j < N; j++)
		x[j] = 1;
	emu_policy pol;
	char spec[96];
	snprintf(spec, sizeof spec, "storage=fp16,round=sr,seed=%" PRIu64, t_seed());
	parse(spec, &pol);
	emu_kparam par[2] = {{"m", M}, {"divide", 0}};
	emu_run r;
	run(&pol, "gradacc", x, 1, N, par, 2, EMU_BE_FAST, &r);
	double mean = 0, lo = INFINITY, hi = 0;
	for (size_t j = 0; j < N; j++) {
		double v = out0(&r, j);
		mean += v / N;
		lo = fmin(lo, v);
		hi = fmax(hi, v);
	}
	printf("accum: gradacc fp16 sr, %d micro-batches of 1: mean %g, range [%g, %g]\n", M, mean,
	       lo, hi);
	ck_assert_msg(fabs(mean - M) < 0.01 * M && lo > 0.95 * M && hi < 1.05 * M,
	              "mean %g, range [%g, %g]", mean, lo, hi);
	emu_run_free(&r);
	/* round to nearest stalls every element at 2^11 */
	parse("storage=fp16", &pol);
	run(&pol, "gradacc", x, 1, N, par, 2, EMU_BE_FAST, &r);
	for (size_t j = 0; j < N; j++)
		ck_assert(out0(&r, j) == 2048);
	emu_run_free(&r);
}
END_TEST

START_TEST(test_errors)
{
	emu_policy pol;
	parse("storage=bf16", &pol);
	double x[4] = {1, 2, 3, 4};
	emu_kparam fma = {"fma", 1}, k0 = {"k", 0};
	struct {
		const char *variant;
		const emu_kparam *par;
	} bad[] = {
	    {"seq", NULL},       {"dot:tc:h100", NULL}, /* h100 has no bf16 -> bf16 */
	    {"dot:tc:zz", NULL}, {"sum:pairwise", &fma}, {"sum:block", &k0}, {"dot:tcx", NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char err[200] = "";
		emu_kin in = {x, 1, 4, bad[i].par, bad[i].par != NULL, 1, NULL, 0};
		emu_run r;
		ck_assert_msg(emu_run_kernel(&emu_kernel_accum, &pol, bad[i].variant, &in,
		                             EMU_BE_FAST, &r, err, sizeof err) != 0,
		              "%s accepted", bad[i].variant);
		ck_assert(strncmp(err, "accum: ", 7) == 0);
		emu_run_free(&r);
	}
	/* with a scaling recipe the Tensor Core takes the dequantised compute
	 * values: h100 has a bf16 model, not an fp32 one */
	emu_run r;
	parse("storage=e4m3,compute=bf16,accum=fp32,scale=tensor", &pol);
	run(&pol, "dot:tc:h100", x, 1, 4, NULL, 0, EMU_BE_FAST, &r);
	ck_assert(out0(&r, 0) > 0);
	emu_run_free(&r);
	parse("storage=e4m3,compute=fp32,scale=tensor", &pol);
	char err[200];
	emu_kin in = {x, 1, 4, NULL, 0, 1, NULL, 0};
	ck_assert(emu_run_kernel(&emu_kernel_accum, &pol, "dot:tc:h100", &in, EMU_BE_FAST, &r, err,
	                         sizeof err) != 0);
	emu_run_free(&r);
}
END_TEST

Suite *suite_accum(void)
{
	Suite *s = suite_create("accum");
	TCase *tc = tcase_create("accum");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ones_seq_stall);
	tcase_add_test(tc, test_ones_other_orders);
	tcase_add_test(tc, test_tc_chain_equals_model);
	tcase_add_test(tc, test_tc_fp8_k4096);
	tcase_add_test(tc, test_gradacc);
	tcase_add_test(tc, test_gradacc_sr);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}
