/*
 * check_engine.c — the array-level kernel interface (emu/engine/backend.c, the
 * maps and folds of kern.h) against the scalar operations it is made of:
 * every element of a map and every step of a fold equals the scalar
 * operation with the SR index emu_sr_key(step, phase, element), bits and
 * flags, on the fast and the exact backends; a result does not depend on
 * how the elements are grouped into calls (SR keyed by position); flag
 * counts per op kind and per step, and the first failing element, are
 * those of the elements.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "emu/engine/truth_exp.h"
#include "tests/lib.h"

static const char *const fmts[] = {"fp16", "bf16", "e4m3", "e5m2", "fp32"};
static const char *const envs[] = {"rne", "rtz", "up", "down", "rna", "sr"};

/* n random values of f, spread from below its subnormals to above its max,
 * with a few specials */
static void fill(const emu_format *f, uint64_t stream, double *x, size_t n)
{
	emu_env e = EMU_ENV_DEFAULT;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = t_rand(stream, i);
		double u = f->emin - f->p - 2 +
		           (double)(r % 10000) / 10000.0 * (f->emax - f->emin + f->p + 6);
		double v = ((r >> 40) & 1 ? -1 : 1) * exp2(u);
		if (r % 97 == 0)
			v = (r >> 20) & 1 ? INFINITY : NAN;
		if (r % 89 == 0)
			v = 0;
		x[i] = emu_decode(f, emu_from_double(f, v, &e).bits);
		if (isnan(x[i]) && f->nan != EMU_NAN_FNUZ && ((r >> 21) & 1))
			x[i] = -x[i];
	}
}

/* the same MPFR number: both NaN, or equal with the same sign (±0 apart) */
static bool mp_same(mpfr_srcptr a, mpfr_srcptr b)
{
	return (mpfr_nan_p(a) && mpfr_nan_p(b)) ||
	       (mpfr_equal_p(a, b) && mpfr_signbit(a) == mpfr_signbit(b));
}

static unsigned bad_of(unsigned fl)
{
	return fl & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID | EMU_FLAG_DIVBYZERO);
}

/* One element through the scalar reference of backend kind. */
static double scalar(emu_be_kind kind, emu_op op, const emu_format *f, double x, double y, double z,
                     const emu_env *env, unsigned *fl)
{
	emu_env e = *env;
	if (op == EMU_OP_CVT)
		e.daz = false;
	if (kind == EMU_BE_FAST)
		return emu_a_element(op, f, x, y, z, &e, fl);
	emu_result r;
	if (op == EMU_OP_CVT) {
		r = emu_mp_from_double(f, x, &e);
	} else {
		emu_bits a[3] = {emu_encode(f, x), emu_encode(f, y), emu_encode(f, z)};
		r = emu_mp_apply(op, f, NULL, a, &e);
	}
	*fl |= r.flags;
	double v = emu_decode(f, r.bits);
	return isnan(v) && f->nan != EMU_NAN_FNUZ && (r.bits & f->sign_mask) ? -v : v;
}

static const emu_op mops[] = {EMU_OP_CVT, EMU_OP_ADD,  EMU_OP_SUB, EMU_OP_MUL, EMU_OP_DIV,
                              EMU_OP_FMA, EMU_OP_SQRT, EMU_OP_EXP, EMU_OP_LOG, EMU_OP_MAX};

enum { N = 700, STEP = EMU_STEP0 + 3 };
static const char *const names[] = {"s0", "s1", "s2", "mapped", "s4", "s5", "s6"};

/* A map with a broadcast second operand, over every op, format, mode and
 * backend: element j is the scalar op at emu_sr_key(STEP, 0, 1000 + j). */
START_TEST(test_map_elements)
{
	uint64_t cases = 0;
	for (size_t fi = 0; fi < ARRAY_SIZE(fmts); fi++)
		for (size_t m = 0; m < ARRAY_SIZE(envs); m++)
			for (int kind = EMU_BE_FAST; kind <= EMU_BE_EXACT; kind++)
				for (size_t o = 0; o < ARRAY_SIZE(mops); o++) {
					const emu_format *f = t_fmt(fmts[fi]);
					emu_env env = EMU_ENV_DEFAULT;
					env.mode = emu_mode_by_name(envs[m]);
					env.seed = 99;
					emu_be be;
					emu_be_init(&be, (emu_be_kind)kind, &env);
					emu_steps(&be, names, 5);
					emu_vec *a = emu_vec_new(&be, N), *b = emu_vec_new(&be, N),
					        *c = emu_vec_new(&be, N), *d = emu_vec_new(&be, N);
					ck_assert(a && b && c && d);
					fill(f, 1 + o, a->d, N);
					fill(f, 2 + o, b->d, N);
					fill(f, 3 + o, c->d, N);
					uint8_t *fl = calloc(N, 1);
					emu_op op = mops[o];
					/* b broadcast from element 7 */
					emu_map(&be, STEP, op, f, emu_row(d, 0), emu_row(a, 0),
					        emu_at(b, 7), emu_row(c, 0), N, 1000, fl);
					uint64_t cnt[5] = {0};
					uint64_t first = UINT64_MAX;
					unsigned ffl = 0;
					for (size_t j = 0; j < N; j++) {
						unsigned v = 0;
						emu_env e = env;
						e.index = emu_sr_key(STEP, 0, 1000 + j);
						double w = scalar((emu_be_kind)kind, op, f, a->d[j],
						                  b->d[7], c->d[j], &e, &v);
						ck_assert_msg(
						    emu_encode(f, w) == emu_encode(f, d->d[j]) &&
						        fl[j] == v,
						    "%s %s %s %s j %zu: %a %a -> %a (%x), want %a "
						    "(%x)",
						    emu_be_name((emu_be_kind)kind), f->name,
						    envs[m], emu_op_name(op), j, a->d[j], b->d[7],
						    d->d[j], fl[j], w, v);
						for (int k = 0; k < 5; k++)
							cnt[k] += (v >> k) & 1;
						if (first == UINT64_MAX && bad_of(v)) {
							first = 1000 + j;
							ffl = bad_of(v);
						}
					}
					for (int k = 0; k < 5; k++) {
						ck_assert_uint_eq(be.st.flags[op][k], cnt[k]);
						ck_assert_uint_eq(be.st.step_flags[STEP][k],
						                  cnt[k]);
					}
					ck_assert_uint_eq(be.st.ops[op], N);
					ck_assert_uint_eq(be.st.step_ops[STEP], N);
					ck_assert_int_eq(be.st.first_set, first != UINT64_MAX);
					if (first != UINT64_MAX) {
						ck_assert_uint_eq(be.st.first_index, first);
						ck_assert_uint_eq(be.st.first_flags, ffl);
						ck_assert_str_eq(be.st.first_step, "mapped");
					}
					free(fl);
					emu_be_free(&be);
					cases += N;
				}
	t_count("engine: map elements == scalar ops (fast, exact)", cases);
}
END_TEST

/* SR keyed by position: one map over n elements, the same map split into
 * pieces of every size in reverse order, and in place, give the same bits. */
START_TEST(test_map_grouping)
{
	const emu_format *f = t_fmt("e5m2");
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = EMU_SR;
	env.seed = 5;
	emu_be be;
	emu_be_init(&be, EMU_BE_FAST, &env);
	emu_vec *a = emu_vec_new(&be, N), *b = emu_vec_new(&be, N), *d1 = emu_vec_new(&be, N),
	        *d2 = emu_vec_new(&be, N);
	ck_assert(a && b && d1 && d2);
	fill(f, 11, a->d, N);
	fill(f, 12, b->d, N);
	emu_map(&be, STEP, EMU_OP_MUL, f, emu_row(d1, 0), emu_row(a, 0), emu_row(b, 0), EMU_NOREF,
	        N, 0, NULL);
	for (size_t piece = 1; piece < 64; piece += 7) {
		for (size_t j0 = (N - 1) / piece * piece;; j0 -= piece) {
			size_t m = N - j0 < piece ? N - j0 : piece;
			emu_copy(&be, emu_row(d2, j0), emu_row(a, j0), m);
			emu_map(&be, STEP, EMU_OP_MUL, f, emu_row(d2, j0), emu_row(d2, j0),
			        emu_row(b, j0), EMU_NOREF, m, j0, NULL);
			if (j0 == 0)
				break;
		}
		for (size_t j = 0; j < N; j++)
			ck_assert_msg(emu_encode(f, d1->d[j]) == emu_encode(f, d2->d[j]),
			              "piece %zu j %zu", piece, j);
	}
	/* another step draws other bits: some result differs */
	emu_map(&be, STEP + 1, EMU_OP_MUL, f, emu_row(d2, 0), emu_row(a, 0), emu_row(b, 0),
	        EMU_NOREF, N, 0, NULL);
	size_t differ = 0;
	for (size_t j = 0; j < N; j++)
		differ += emu_encode(f, d1->d[j]) != emu_encode(f, d2->d[j]);
	ck_assert_uint_gt(differ, 0);
	emu_be_free(&be);
	t_count("engine: SR map results independent of grouping", 9 * N);
}
END_TEST

/* emu_map_mode: a map in another rounding mode is the map a policy of that
 * mode gives (bits, and per-op flag counts), on fast and exact, and leaves
 * the backend's own environment as it was. */
START_TEST(test_map_mode)
{
	const emu_format *f = t_fmt("e5m2");
	for (int kind = EMU_BE_FAST; kind <= EMU_BE_EXACT; kind++) {
		emu_env sr = EMU_ENV_DEFAULT, rne = EMU_ENV_DEFAULT;
		sr.mode = EMU_SR;
		sr.seed = rne.seed = 9;
		emu_be b1, b2;
		emu_be_init(&b1, (emu_be_kind)kind, &sr);
		emu_be_init(&b2, (emu_be_kind)kind, &rne);
		emu_vec *a1 = emu_vec_new(&b1, N), *c1 = emu_vec_new(&b1, N);
		emu_vec *d1 = emu_vec_new(&b1, N), *a2 = emu_vec_new(&b2, N);
		emu_vec *c2 = emu_vec_new(&b2, N), *d2 = emu_vec_new(&b2, N);
		ck_assert(a1 && c1 && d1 && a2 && c2 && d2);
		fill(f, 21, a1->d, N);
		fill(f, 22, c1->d, N);
		memcpy(a2->d, a1->d, N * sizeof *a1->d);
		memcpy(c2->d, c1->d, N * sizeof *c1->d);
		emu_map(&b1, STEP, EMU_OP_DIV, f, emu_row(d1, 0), emu_row(a1, 0), emu_row(c1, 0),
		        EMU_NOREF, N, 3, NULL);
		emu_map_mode(&b2, STEP, EMU_OP_DIV, EMU_SR, f, emu_row(d2, 0), emu_row(a2, 0),
		             emu_row(c2, 0), EMU_NOREF, N, 3, NULL);
		for (size_t j = 0; j < N; j++)
			ck_assert_msg(emu_encode(f, d1->d[j]) == emu_encode(f, d2->d[j]),
			              "%s j %zu: 0x%x 0x%x", emu_be_name((emu_be_kind)kind), j,
			              emu_encode(f, d1->d[j]), emu_encode(f, d2->d[j]));
		ck_assert(memcmp(b1.st.flags, b2.st.flags, sizeof b1.st.flags) == 0);
		ck_assert(b2.env.mode == EMU_RNE);
		emu_be_free(&b1);
		emu_be_free(&b2);
	}
	t_count("engine: emu_map_mode(sr) == a map under an sr policy (fast, exact)", 2 * N);
}
END_TEST

/* The pairwise sum of v[lo..lo+n) by its definition: the node splitting
 * at lo + h is element lo + h of the step. */
static double pairwise_ref(emu_be_kind kind, const emu_format *f, const double *v, size_t lo,
                           size_t n, const emu_env *env)
{
	if (n < 2)
		return v[lo];
	size_t h = n / 2;
	double l = pairwise_ref(kind, f, v, lo, h, env),
	       r = pairwise_ref(kind, f, v, lo + h, n - h, env);
	unsigned fl = 0;
	emu_env e = *env;
	e.index = emu_sr_key(STEP, 0, lo + h);
	return scalar(kind, EMU_OP_ADD, f, l, r, 0, &e, &fl);
}

/* Folds: seq (add, max, fma), pairwise and block equal their scalar
 * recurrences, on fast and exact, in RNE and SR. */
START_TEST(test_folds)
{
	uint64_t cases = 0;
	for (size_t fi = 0; fi < ARRAY_SIZE(fmts); fi++)
		for (int sr = 0; sr < 2; sr++)
			for (int kind = EMU_BE_FAST; kind <= EMU_BE_EXACT; kind++) {
				const emu_format *f = t_fmt(fmts[fi]);
				emu_env env = EMU_ENV_DEFAULT;
				env.mode = sr ? EMU_SR : EMU_RNE;
				env.seed = 3;
				emu_be be;
				emu_be_init(&be, (emu_be_kind)kind, &env);
				emu_vec *a = emu_vec_new(&be, N), *b = emu_vec_new(&be, N),
				        *s = emu_vec_new(&be, 4);
				ck_assert(a && b && s);
				fill(f, 21 + fi, a->d, N);
				fill(f, 31 + fi, b->d, N);
				for (size_t j = 0; j < N; j++) { /* mostly finite sums */
					if (!isfinite(a->d[j]) && j % 5)
						a->d[j] = 1;
					a->d[j] = emu_decode(f, emu_encode(f, ldexp(a->d[j], 0)));
				}
				const emu_op fops[] = {EMU_OP_ADD, EMU_OP_MAX, EMU_OP_FMA};
				for (size_t o = 0; o < ARRAY_SIZE(fops); o++) {
					emu_op op = fops[o];
					s->d[0] = 0;
					emu_fold(&be, STEP, op, f, EMU_ORDER_SEQ, emu_at(s, 0),
					         emu_row(a, 0),
					         op == EMU_OP_FMA ? emu_row(b, 0) : EMU_NOREF, N,
					         40);
					double w = 0;
					for (size_t j = 0; j < N; j++) {
						unsigned v = 0;
						emu_env e = env;
						e.index = emu_sr_key(STEP, 0, 40 + j);
						w = op == EMU_OP_FMA
						        ? scalar((emu_be_kind)kind, op, f, a->d[j],
						                 b->d[j], w, &e, &v)
						        : scalar((emu_be_kind)kind, op, f, w,
						                 a->d[j], 0, &e, &v);
					}
					ck_assert_msg(emu_encode(f, w) == emu_encode(f, s->d[0]),
					              "%s %s seq %s", f->name, emu_be_name(be.kind),
					              emu_op_name(op));
				}
				/* block of 32: block sums from +0, then added at step + 1 */
				emu_order bo = {EMU_FOLD_BLOCK, 32, STEP + 1};
				s->d[0] = 0;
				emu_fold(&be, STEP, EMU_OP_ADD, f, bo, emu_at(s, 0), emu_row(a, 0),
				         EMU_NOREF, N, 0);
				double w = 0;
				for (size_t lo = 0; lo < N; lo += 32) {
					double bs = 0;
					unsigned v = 0;
					emu_env e = env;
					for (size_t j = lo; j < N && j < lo + 32; j++) {
						e.index = emu_sr_key(STEP, 0, j);
						bs = scalar((emu_be_kind)kind, EMU_OP_ADD, f, bs,
						            a->d[j], 0, &e, &v);
					}
					e.index = emu_sr_key(STEP + 1, 0, lo);
					w = scalar((emu_be_kind)kind, EMU_OP_ADD, f, w, bs, 0, &e,
					           &v);
				}
				ck_assert_msg(emu_encode(f, w) == emu_encode(f, s->d[0]),
				              "%s block", f->name);
				/* pairwise over a copy (the fold overwrites its operand) */
				double *ref = malloc(N * sizeof *ref);
				memcpy(ref, a->d, N * sizeof *ref);
				emu_fold(&be, STEP, EMU_OP_ADD, f,
				         (emu_order){EMU_FOLD_PAIRWISE, 0, 0}, emu_at(s, 1),
				         emu_row(a, 0), EMU_NOREF, N, 0);
				w = pairwise_ref((emu_be_kind)kind, f, ref, 0, N, &env);
				ck_assert_msg(emu_encode(f, w) == emu_encode(f, s->d[1]),
				              "%s pairwise", f->name);
				free(ref);
				emu_be_free(&be);
				cases += 5 * N;
			}
	t_count("engine: folds == scalar recurrences", cases);
}
END_TEST

/* Two backends' statistics the same: counts per op and per step, and the
 * first failing operation. */
static void same_stats(const emu_be_stats *x, const emu_be_stats *y, const char *what)
{
	ck_assert_msg(!memcmp(x->ops, y->ops, sizeof x->ops) &&
	                  !memcmp(x->flags, y->flags, sizeof x->flags) &&
	                  x->all_flags == y->all_flags,
	              "%s: counts differ", what);
	for (size_t s = 0; s < x->nsteps || s < y->nsteps; s++) {
		uint64_t ox = s < x->nsteps ? x->step_ops[s] : 0,
		         oy = s < y->nsteps ? y->step_ops[s] : 0;
		ck_assert_msg(ox == oy, "%s: step %zu: %llu ops against %llu", what, s,
		              (unsigned long long)ox, (unsigned long long)oy);
		for (int k = 0; k < EMU_NFLAGS; k++) {
			uint64_t fx = s < x->nsteps ? x->step_flags[s][k] : 0,
			         fy = s < y->nsteps ? y->step_flags[s][k] : 0;
			ck_assert_msg(fx == fy, "%s: step %zu flag %d", what, s, k);
		}
	}
	ck_assert_msg(x->first_set == y->first_set, "%s: first set %d against %d", what,
	              x->first_set, y->first_set);
	if (x->first_set)
		ck_assert_msg(
		    x->first_op == y->first_op && x->first_flags == y->first_flags &&
		        x->first_index == y->first_index && !strcmp(x->first_step, y->first_step),
		    "%s: first failing %s %s[%llu] against %s %s[%llu]", what,
		    emu_op_name(x->first_op), x->first_step, (unsigned long long)x->first_index,
		    emu_op_name(y->first_op), y->first_step, (unsigned long long)y->first_index);
}

/* emu_dot_n against its definition, the 2 or 3 calls of each chain made in
 * turn: every sum's encoding, the counts and the first failing operation,
 * on data that overflows and turns NaN in some chains' products, conversions
 * or sums (so that a later chain's product may fail before an earlier
 * chain's sum), with and without a failure recorded before, rne and sr.
 * Half the cases are emu_dot_n_then's, each sum then stored in place into
 * a format that may overflow (e4m3, fp16, bf16) and, half of those, taken
 * back into the accumulator's: its one or two calls follow each chain's. */
START_TEST(test_dot_n)
{
	static const char *const pairs[][2] = {{"fp16", "fp16"},
	                                       {"fp16", "fp32"},
	                                       {"bf16", "fp32"},
	                                       {"e4m3", "fp16"},
	                                       {"e5m2", "e5m2"}};
	uint64_t cases = 0, failed_in = 0, then_failed = 0;
	enum { NMAX = 40, MMAX = 21 };
	for (uint64_t i = 0; i < 3000; i++) {
		uint64_t r = t_rand(77, i);
		const emu_format *fm = t_fmt(pairs[r % 5][0]), *fa = t_fmt(pairs[r % 5][1]);
		bool cvt = !emu_format_same(fm, fa), sr = (r >> 4) & 1, before = (r >> 5) % 4 == 0;
		size_t n = 1 + (r >> 8) % NMAX, m = 1 + (r >> 16) % MMAX;
		size_t ca = (r >> 24) & 1 ? n : 0, cb = (r >> 25) & 1 ? 1 : n,
		       ce = n + (r >> 26) % 3;
		static const char *const stores[] = {"e4m3", "fp16", "bf16"};
		unsigned nthen = (r >> 32) % 4 < 2 ? 0 : 1 + (r >> 34) % 2;
		emu_dot_then th = {{nthen > 0 ? EMU_STEP0 + 5 : EMU_NOSTEP,
		                    nthen > 1 ? EMU_STEP0 + 6 : EMU_NOSTEP},
		                   {t_fmt(stores[(r >> 36) % 3]), fa},
		                   50 + (r >> 40) % 7};
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = sr ? EMU_SR : EMU_RNE;
		env.seed = 5;
		emu_be be[2];
		emu_vec *a[2], *b[2], *P[2], *acc[2];
		for (int k = 0; k < 2; k++) {
			emu_be_init(&be[k], EMU_BE_FAST, &env);
			emu_steps(&be[k], names, ARRAY_SIZE(names));
			a[k] = emu_vec_new(&be[k], MMAX * NMAX + NMAX);
			b[k] = emu_vec_new(&be[k], MMAX * NMAX + NMAX);
			P[k] = emu_vec_new(&be[k], MMAX * NMAX);
			acc[k] = emu_vec_new(&be[k], MMAX);
			ck_assert(a[k] && b[k] && P[k] && acc[k]);
			fill(fm, 100 + i, a[k]->d, MMAX * NMAX + NMAX);
			fill(fm, 200 + i, b[k]->d, MMAX * NMAX + NMAX);
			for (size_t c = 0; c < MMAX;
			     c++) /* mostly finite: failures in some chains */
				acc[k]->d[c] = 0;
			for (size_t j = 0; j < MMAX * NMAX + NMAX; j++)
				if (!isfinite(a[k]->d[j]) && (j / 7 + i) % 3)
					a[k]->d[j] = 0.5;
			if (before) /* a failure on record already */
				emu_map(&be[k], EMU_STEP0 + 4, EMU_OP_DIV, fa,
				        emu_at(acc[k], MMAX - 1), emu_at(acc[k], MMAX - 1),
				        emu_at(acc[k], 0), EMU_NOREF, 1, 9, NULL);
		}
		bool set_before = be[0].st.first_set;
		emu_dot_n_then(&be[0], EMU_STEP0, fm, cvt ? EMU_STEP0 + 1 : EMU_NOSTEP,
		               EMU_STEP0 + 2, fa, emu_row(acc[0], 0), emu_row(a[0], 0), ca,
		               emu_strided(b[0], 0, cb == 1 ? m : 1), cb, emu_row(P[0], 0), n, m,
		               1000, ce, nthen ? &th : NULL);
		for (size_t c = 0; c < m; c++) {
			emu_ref Pc = emu_row(P[1], c * n);
			emu_map(&be[1], EMU_STEP0, EMU_OP_MUL, fm, Pc, emu_row(a[1], c * ca),
			        emu_strided(b[1], c * cb, cb == 1 ? m : 1), EMU_NOREF, n,
			        1000 + c * ce, NULL);
			if (cvt)
				emu_map(&be[1], EMU_STEP0 + 1, EMU_OP_CVT, fa, Pc, Pc, EMU_NOREF,
				        EMU_NOREF, n, 1000 + c * ce, NULL);
			emu_fold(&be[1], EMU_STEP0 + 2, EMU_OP_ADD, fa, EMU_ORDER_SEQ,
			         emu_at(acc[1], c), Pc, EMU_NOREF, n, 1000 + c * ce);
			for (unsigned k = 0; k < nthen; k++)
				emu_op1(&be[1], th.s[k], EMU_OP_CVT, th.f[k], emu_at(acc[1], c),
				        emu_at(acc[1], c), EMU_NOREF, th.e + c);
		}
		char what[200];
		snprintf(what, sizeof what, "case %llu: %s -> %s, n %zu, m %zu, %s, then %u",
		         (unsigned long long)i, fm->name, fa->name, n, m, sr ? "sr" : "rne", nthen);
		const emu_format *fo = nthen == 1 ? th.f[0] : fa; /* the sums' format now */
		for (size_t c = 0; c < m; c++)
			ck_assert_msg(emu_encode(fo, acc[0]->d[c]) == emu_encode(fo, acc[1]->d[c]),
			              "%s: chain %zu", what, c);
		same_stats(&be[0].st, &be[1].st, what);
		failed_in += !set_before && be[0].st.first_set;
		then_failed += nthen && !set_before && be[0].st.first_set &&
		               strcmp(be[0].st.first_step, "s5") == 0;
		for (int k = 0; k < 2; k++)
			emu_be_free(&be[k]);
		cases++;
	}
	/* the path that runs the chains again in turn was taken, often */
	ck_assert_msg(failed_in > 300, "only %llu cases failed inside",
	              (unsigned long long)failed_in);
	/* and a store failed first, before a later chain's operation */
	ck_assert_msg(then_failed > 20, "only %llu cases failed first in a store",
	              (unsigned long long)then_failed);
	t_count("engine: dot_n == its chains in turn", cases);
}
END_TEST

/* An operand of test_dot_n_f32: a bf16 value's 8-bit significand at an
 * exponent the case's kind picks. Kind 0: in [2^-10, 2^11), so products are
 * exact binary32 values; 1: a third at 2^-70, whose products with each other
 * are exact binary32 subnormals (ftz flushes them); 2: a's tenth at 2^-130,
 * a binary32 subnormal (daz reads it as zero) with exact products; 3: kind
 * 0 with infinities (exact products, sat clamps them); 4: fill's spread
 * (overflow, inexact products, NaN). */
static double f32_operand(unsigned kind, bool is_a, uint64_t r)
{
	double m = (double)(128 + r % 128) / 256 * ((r >> 8) & 1 ? -1 : 1);
	int e = (int)((r >> 12) % 21) - 10;
	if (kind == 1 && (r >> 20) % 3 == 0)
		e = -70;
	if (kind == 2 && is_a && (r >> 20) % 10 == 0)
		e = -130;
	if (kind == 3 && (r >> 20) % 17 == 0)
		return m < 0 ? -INFINITY : INFINITY;
	return ldexp(m, e);
}

/* emu_dot_n in binary32 (a GEMM's fp32 accumulation of fp16 or bf16
 * operands taken into it) against its chains in turn, as test_dot_n:
 * FAST's products that are all exact binary32 values skip the maps; under
 * ftz, daz and sat, and where one is not exact, they must not. B's chains
 * as rows or columns, a's as rows, shared, or a shared column (stride 3):
 * the ways FAST gathers them. */
START_TEST(test_dot_n_f32)
{
	const emu_format *f = t_fmt("fp32");
	uint64_t cases = 0, by_kind[5] = {0};
	enum { NMAX = 40, MMAX = 21, NV = MMAX * NMAX + 3 * NMAX };
	for (uint64_t i = 0; i < 2000; i++) {
		uint64_t r = t_rand(79, i);
		unsigned kind = (unsigned)(r % 5);
		size_t n = 1 + (r >> 8) % NMAX, m = 1 + (r >> 16) % MMAX;
		size_t ca = (r >> 24) & 1 ? n : 0, cb = (r >> 25) & 1 ? 1 : n,
		       ce = n + (r >> 26) % 3, sa = (r >> 37) & 1 ? 3 : 1; /* a column */
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = (r >> 30) & 1 ? EMU_SR : EMU_RNE;
		env.seed = 5;
		env.ftz = (r >> 31) % 4 == 0;
		env.daz = (r >> 33) % 4 == 0;
		env.sat = (r >> 35) % 4 == 0;
		emu_be be[2];
		emu_vec *a[2], *b[2], *P[2], *acc[2];
		for (int k = 0; k < 2; k++) {
			emu_be_init(&be[k], EMU_BE_FAST, &env);
			emu_steps(&be[k], names, ARRAY_SIZE(names));
			a[k] = emu_vec_new(&be[k], NV);
			b[k] = emu_vec_new(&be[k], NV);
			P[k] = emu_vec_new(&be[k], MMAX * NMAX);
			acc[k] = emu_vec_new(&be[k], MMAX);
			ck_assert(a[k] && b[k] && P[k] && acc[k]);
			if (kind == 4) {
				fill(f, 300 + i, a[k]->d, NV);
				fill(f, 400 + i, b[k]->d, NV);
			}
			for (size_t j = 0; kind < 4 && j < NV; j++) {
				a[k]->d[j] = f32_operand(kind, true, t_rand(300 + i, j));
				b[k]->d[j] = f32_operand(kind, false, t_rand(400 + i, j));
			}
			for (size_t c = 0; c < MMAX; c++)
				acc[k]->d[c] = 0;
		}
		emu_dot_n(&be[0], EMU_STEP0, f, EMU_NOSTEP, EMU_STEP0 + 2, f, emu_row(acc[0], 0),
		          emu_strided(a[0], 0, sa), ca, emu_strided(b[0], 0, cb == 1 ? m : 1), cb,
		          emu_row(P[0], 0), n, m, 1000, ce);
		for (size_t c = 0; c < m; c++) {
			emu_ref Pc = emu_row(P[1], c * n);
			emu_map(&be[1], EMU_STEP0, EMU_OP_MUL, f, Pc, emu_strided(a[1], c * ca, sa),
			        emu_strided(b[1], c * cb, cb == 1 ? m : 1), EMU_NOREF, n,
			        1000 + c * ce, NULL);
			emu_fold(&be[1], EMU_STEP0 + 2, EMU_OP_ADD, f, EMU_ORDER_SEQ,
			         emu_at(acc[1], c), Pc, EMU_NOREF, n, 1000 + c * ce);
		}
		char what[200];
		snprintf(what, sizeof what, "case %llu: kind %u, n %zu, m %zu, %s%s%s%s",
		         (unsigned long long)i, kind, n, m, env.mode == EMU_SR ? "sr" : "rne",
		         env.ftz ? " ftz" : "", env.daz ? " daz" : "", env.sat ? " sat" : "");
		for (size_t c = 0; c < m; c++)
			ck_assert_msg(emu_encode(f, acc[0]->d[c]) == emu_encode(f, acc[1]->d[c]),
			              "%s: chain %zu", what, c);
		same_stats(&be[0].st, &be[1].st, what);
		uint64_t mul_fl = 0; /* a product that raised a flag, or was NaN */
		for (int k = 0; k < EMU_NFLAGS; k++)
			mul_fl |= be[1].st.flags[EMU_OP_MUL][k];
		for (size_t j = 0; j < m * n; j++)
			mul_fl |= isnan(P[1]->d[j]);
		by_kind[kind] += mul_fl != 0;
		for (int k = 0; k < 2; k++)
			emu_be_free(&be[k]);
		cases++;
	}
	/* kind 0's products are exact; the others' raised flags (or made NaN)
	 * where the exact path must stand aside */
	ck_assert_uint_eq(by_kind[0], 0);
	for (unsigned k = 1; k < 5; k++)
		ck_assert_msg(by_kind[k] > 30, "kind %u: only %llu cases' products raised a flag",
		              k, (unsigned long long)by_kind[k]);
	t_count("engine: dot_n in binary32 == its chains in turn", cases);
}
END_TEST

/* A TRUTH operand of kind k for test_dot_n_truth: small integers (exact
 * sums, signed zeros, cancellation), doubles over a narrow or a wide
 * exponent range, values of more than 64 bits, inf and NaN */
static void truth_operand(mpfr_ptr x, unsigned k, uint64_t r)
{
	double sgn = (r >> 63) & 1 ? -1 : 1;
	switch (k) {
	case 0: /* −3 .. 3, a third of them ±0 */
		mpfr_set_d(x, sgn * (double)((r >> 8) % 4), MPFR_RNDN);
		break;
	case 1: /* 53 bits, exponents −20 .. 20 */
		mpfr_set_d(x,
		           sgn * ldexp((double)((r >> 8) | 1) / 0x1p56, (int)((r >> 2) % 41) - 20),
		           MPFR_RNDN);
		break;
	case 2: /* 53 bits, exponents −300 .. 300: often past 256 bits apart */
		mpfr_set_d(
		    x, sgn * ldexp((double)((r >> 8) | 1) / 0x1p56, (int)((r >> 2) % 601) - 300),
		    MPFR_RNDN);
		break;
	case 3: /* 1 + 2^-70: 71 bits */
		mpfr_set_ui(x, 1, MPFR_RNDN);
		mpfr_add_d(x, x, sgn * 0x1p-70, MPFR_RNDN);
		break;
	default:
		if (r % 3)
			mpfr_set_inf(x, (int)sgn);
		else
			mpfr_set_nan(x);
	}
}

/* emu_dot_n on TRUTH (whose chains without rounding are summed in an
 * integer accumulator) against the calls in turn, each product and sum an
 * MPFR operation at EMU_TRUTH_PREC bits: values, signs of zero, NaN,
 * counts, flags and the first failure; B's chains as rows or as columns
 * (stride M), and a and b taken apart beforehand (emu_truth_split, as a
 * GEMM does) or by each dot product. */
START_TEST(test_dot_n_truth)
{
	enum { N = 24, M = 9 };
	uint64_t cases = 0, exact_done = 0;
	for (uint64_t i = 0; i < 4000; i++) {
		uint64_t r = t_rand(78, i);
		size_t n = 1 + r % N, m = 1 + (r >> 8) % M;
		/* per case: mostly one kind, a few of another */
		unsigned k0 = (r >> 16) % 4, k1 = (r >> 20) % 6;
		bool cvt = (r >> 24) & 1;
		size_t ca = (r >> 25) & 1 ? 0 : N; /* 0: every chain shares a's row */
		bool split = (r >> 26) & 1, bcol = (r >> 27) & 1;
		/* chain c's element l of b: b[c·N + l], or b[l·M + c] (a column) */
		size_t cb = bcol ? 1 : N, sb = bcol ? M : 1;
#define BAT(c, l) ((c) * cb + (l) * sb)
		emu_be be[2];
		emu_vec *a[2], *b[2], *P[2], *acc[2];
		for (int q = 0; q < 2; q++) {
			emu_be_init(&be[q], EMU_BE_TRUTH, &EMU_ENV_DEFAULT);
			emu_steps(&be[q], names, ARRAY_SIZE(names));
			a[q] = emu_vec_new(&be[q], M * N);
			b[q] = emu_vec_new(&be[q], M * N);
			P[q] = emu_vec_new(&be[q], M * N);
			acc[q] = emu_vec_new(&be[q], M);
			ck_assert(a[q] && b[q] && P[q] && acc[q]);
			for (size_t j = 0; j < M * N; j++) {
				uint64_t ra = t_rand(79, i * M * N + j),
				         rb = t_rand(80, i * M * N + j);
				truth_operand(&a[q]->m[j], ra % 17 ? k0 : k1, ra);
				truth_operand(&b[q]->m[j], rb % 19 ? k0 : k1, rb);
			}
			for (size_t c = 0; c < M; c++) { /* ±0, a double or 1/3 (256 bits) */
				uint64_t rc = t_rand(81, i * M + c);
				if (rc % 4 == 0)
					mpfr_set_ui(&acc[q]->m[c], 1, MPFR_RNDN),
					    mpfr_div_ui(&acc[q]->m[c], &acc[q]->m[c], 3, MPFR_RNDN);
				else if (rc % 4 == 1)
					truth_operand(&acc[q]->m[c], k0, rc);
				else
					mpfr_set_zero(&acc[q]->m[c], rc % 4 == 2 ? -1 : 1);
			}
		}
		const emu_format *f = t_fmt("fp16");
		if (split)
			emu_truth_split(&be[0], a[0], b[0]);
		emu_dot_n(&be[0], EMU_STEP0, f, cvt ? EMU_STEP0 + 1 : EMU_NOSTEP, EMU_STEP0 + 2, f,
		          emu_row(acc[0], 0), emu_row(a[0], 0), ca, emu_strided(b[0], 0, sb), cb,
		          emu_row(P[0], 0), n, m, 1000, n);
		emu_truth_split_free(&be[0]);
		for (size_t c = 0; c < m; c++) {
			emu_ref Pc = emu_row(P[1], c * n);
			emu_map(&be[1], EMU_STEP0, EMU_OP_MUL, f, Pc, emu_row(a[1], c * ca),
			        emu_strided(b[1], BAT(c, 0), sb), EMU_NOREF, n, 1000 + c * n, NULL);
			if (cvt)
				emu_map(&be[1], EMU_STEP0 + 1, EMU_OP_CVT, f, Pc, Pc, EMU_NOREF,
				        EMU_NOREF, n, 1000 + c * n, NULL);
			emu_fold(&be[1], EMU_STEP0 + 2, EMU_OP_ADD, f, EMU_ORDER_SEQ,
			         emu_at(acc[1], c), Pc, EMU_NOREF, n, 1000 + c * n);
		}
		char what[120];
		snprintf(what, sizeof what,
		         "case %llu: kinds %u/%u, n %zu, m %zu, ca %zu, split %d, b columns %d",
		         (unsigned long long)i, k0, k1, n, m, ca, split, bcol);
		for (size_t c = 0; c < m; c++) {
			ck_assert(mpfr_get_prec(&acc[0]->m[c]) == EMU_TRUTH_PREC);
			mpfr_ptr got = &acc[0]->m[c], ref = &acc[1]->m[c];
			ck_assert_msg(mp_same(got, ref), "%s: chain %zu", what, c);
		}
		same_stats(&be[0].st, &be[1].st, what);
		/* emu_truth_dot_exact (the Tensor Core fold's truth) against an
		 * fma chain from +0, as emu_fold_tc's truth makes it */
		for (size_t c = 0; c < m; c++) {
			mpfr_t u, v;
			mpfr_inits2(EMU_TRUTH_PREC, u, v, (mpfr_ptr)0);
			mpfr_set_zero(u, 1);
			mpfr_set_zero(v, 1);
			for (size_t l = 0; l < n; l++)
				mpfr_fma(v, &a[1]->m[c * ca + l], &b[1]->m[BAT(c, l)], v, MPFR_RNDN);
			if (emu_truth_dot_exact(u, emu_row(a[1], c * ca),
			                        emu_strided(b[1], BAT(c, 0), sb), n)) {
				exact_done++;
				ck_assert_msg(
				    mpfr_equal_p(u, v) && mpfr_signbit(u) == mpfr_signbit(v),
				    "%s: chain %zu: exact dot against the fma chain", what, c);
			}
			/* the sequential fma fold on truth, from another first value */
			emu_vec *w = emu_vec_new(&be[1], 1);
			ck_assert(w);
			mpfr_set(&w->m[0], &acc[0]->m[M - 1], MPFR_RNDN); /* (whatever it holds) */
			mpfr_set(v, &w->m[0], MPFR_RNDN);
			for (size_t l = 0; l < n; l++)
				mpfr_fma(v, &a[1]->m[c * ca + l], &b[1]->m[BAT(c, l)], v, MPFR_RNDN);
			uint64_t ops = be[1].st.ops[EMU_OP_FMA];
			unsigned all = be[1].st.all_flags;
			emu_fold(&be[1], EMU_STEP0 + 3, EMU_OP_FMA, f, EMU_ORDER_SEQ, emu_at(w, 0),
			         emu_row(a[1], c * ca), emu_strided(b[1], BAT(c, 0), sb), n, 5000);
			ck_assert_msg(mp_same(v, &w->m[0]), "%s: chain %zu: fma fold", what, c);
			ck_assert(be[1].st.ops[EMU_OP_FMA] == ops + n);
			ck_assert(mpfr_nan_p(v) || be[1].st.all_flags == all);
			mpfr_clears(u, v, (mpfr_ptr)0);
		}
		for (int q = 0; q < 2; q++)
			emu_be_free(&be[q]);
		cases++;
#undef BAT
	}
	ck_assert_msg(exact_done > 5000, "the exact dot took only %llu chains",
	              (unsigned long long)exact_done);
	t_count("engine: truth dot_n == its chains in turn", cases);
}
END_TEST

/* TRUTH's division by ±2^k (a shift) and by anything else against
 * mpfr_div at EMU_TRUTH_PREC bits: dividends of 53 and 256 bits, ±0, ±inf
 * and NaN; divisors ±2^k over MPFR's range and past 2^±1074, and the
 * values next to them; the quotient written over the dividend, over the
 * divisor, or apart. */
START_TEST(test_truth_div_pow2)
{
	enum { N = 64 };
	emu_be be;
	emu_be_init(&be, EMU_BE_TRUTH, &EMU_ENV_DEFAULT);
	emu_steps(&be, names, ARRAY_SIZE(names));
	emu_vec *a = emu_vec_new(&be, N), *b = emu_vec_new(&be, N), *d = emu_vec_new(&be, N);
	ck_assert(a && b && d);
	mpfr_t want;
	mpfr_init2(want, EMU_TRUTH_PREC);
	uint64_t checked = 0, pow2 = 0;
	for (uint64_t i = 0; i < 3000; i++) {
		for (size_t j = 0; j < N; j++) {
			uint64_t ra = t_rand(85, i * N + j), rb = t_rand(86, i * N + j);
			double sa = ra >> 63 ? -1 : 1, sb = rb >> 63 ? -1 : 1;
			switch (ra % 8) {
			case 0: mpfr_set_zero(&a->m[j], (int)sa); break;
			case 1: mpfr_set_inf(&a->m[j], (int)sa); break;
			case 2: mpfr_set_nan(&a->m[j]); break;
			case 3: /* 256 bits */
				mpfr_set_ui(&a->m[j], 1, MPFR_RNDN);
				mpfr_div_ui(&a->m[j], &a->m[j], 3 + (ra >> 8) % 1000, MPFR_RNDN);
				mpfr_mul_2si(&a->m[j], &a->m[j], (long)((ra >> 20) % 4000) - 2000, MPFR_RNDN);
				break;
			default:
				mpfr_set_d(&a->m[j], sa * ldexp((double)(ra >> 11) / 0x1p53 + 0.5,
				                                (int)((ra >> 3) % 2000) - 1000),
				           MPFR_RNDN);
			}
			long k = (long)((rb >> 8) % 4400) - 2200;
			switch (rb % 8) {
			case 0: mpfr_set_zero(&b->m[j], (int)sb); break;
			case 1: mpfr_set_inf(&b->m[j], (int)sb); break;
			case 2: mpfr_set_nan(&b->m[j]); break;
			case 3: /* next to ±2^k, above or below */
				mpfr_set_si_2exp(&b->m[j], (long)sb, k, MPFR_RNDN);
				if ((rb >> 40) & 1)
					mpfr_nextabove(&b->m[j]);
				else
					mpfr_nextbelow(&b->m[j]);
				break;
			case 4: mpfr_set_d(&b->m[j], sb * 3.0, MPFR_RNDN); break;
			default: mpfr_set_si_2exp(&b->m[j], (long)sb, k, MPFR_RNDN); pow2++;
			}
		}
		unsigned alias = i % 3; /* 0 apart, 1 over a, 2 over b */
		emu_vec *dst = alias == 1 ? a : alias == 2 ? b : d;
		emu_vec *keep = emu_vec_new(&be, 2 * N);
		ck_assert(keep);
		for (size_t j = 0; j < N; j++) {
			mpfr_set(&keep->m[j], &a->m[j], MPFR_RNDN);
			mpfr_set(&keep->m[N + j], &b->m[j], MPFR_RNDN);
		}
		emu_map(&be, EMU_STEP0, EMU_OP_DIV, t_fmt("fp32"), emu_row(dst, 0), emu_row(a, 0),
		        emu_row(b, 0), EMU_NOREF, N, 0, NULL);
		for (size_t j = 0; j < N; j++) {
			mpfr_div(want, &keep->m[j], &keep->m[N + j], MPFR_RNDN);
			mpfr_srcptr got = &dst->m[j];
			ck_assert_msg(mp_same(got, want), "case %llu, element %zu (alias %u)",
			              (unsigned long long)i, j, alias);
			checked++;
		}
	}
	ck_assert(pow2 > 50000);
	mpfr_clear(want);
	emu_be_free(&be);
	t_count("engine: truth division (by 2^k a shift) == mpfr_div", checked);
}
END_TEST

/* emu_truth_set_d against mpfr_set_d at EMU_TRUTH_PREC bits: random bit
 * patterns (normal, subnormal, ±0, ±inf, NaN), every power of two and its
 * neighbours from the smallest subnormal up, written over elements that
 * held other values (a regular number, zero, inf, NaN) */
START_TEST(test_truth_set_d)
{
	enum { N = 4096 };
	emu_be be;
	emu_be_init(&be, EMU_BE_TRUTH, &EMU_ENV_DEFAULT);
	emu_vec *v = emu_vec_new(&be, N);
	ck_assert(v);
	mpfr_t want;
	mpfr_init2(want, EMU_TRUTH_PREC);
	uint64_t checked = 0, sub = 0;
	for (uint64_t i = 0; i < 200; i++)
		for (size_t j = 0; j < N; j++) {
			uint64_t r = t_rand(87, i * N + j), u = t_rand(88, i * N + j);
			switch (r % 8) {
			case 0: u &= 0x800fffffffffffffull; break; /* subnormal or ±0 */
			case 1: u = (u & 0x8000000000000000ull) | 0x7ff0000000000000ull |
			            (r >> 8 & 1 ? u & 0xfffffffffffffull : 0); break; /* inf, NaN */
			case 2: { /* ±2^k and its neighbours */
				int k = (int)((r >> 8) % 2100) - 1075;
				double d = ldexp(1.0, k);
				d = r >> 40 & 1 ? nextafter(d, INFINITY) : r >> 41 & 1 ? nextafter(d, 0) : d;
				memcpy(&u, &d, sizeof u);
				u |= r & 0x8000000000000000ull;
				break;
			}
			default: break; /* any bits */
			}
			double d;
			memcpy(&d, &u, sizeof d);
			sub += fpclassify(d) == FP_SUBNORMAL;
			switch (r >> 50 & 3) { /* what the element held */
			case 0: mpfr_set_ui(&v->m[j], 3, MPFR_RNDN); mpfr_div_ui(&v->m[j], &v->m[j], 7, MPFR_RNDN); break;
			case 1: mpfr_set_zero(&v->m[j], -1); break;
			case 2: mpfr_set_inf(&v->m[j], 1); break;
			default: mpfr_set_nan(&v->m[j]);
			}
			emu_truth_set_d(&v->m[j], d);
			mpfr_set_d(want, d, MPFR_RNDN);
			mpfr_srcptr got = &v->m[j];
			ck_assert_msg(mp_same(got, want) && mpfr_get_prec(got) == EMU_TRUTH_PREC,
			              "%a (bits 0x%016llx)", d, (unsigned long long)u);
			checked++;
		}
	ck_assert(sub > 10000);
	mpfr_clear(want);
	emu_be_free(&be);
	t_count("engine: truth set_d == mpfr_set_d", checked);
}
END_TEST

/* emu_input on TRUTH from stored inputs (the storage format's values, then
 * exact) against EXACT's, whose element loop rounds with MPFR: every
 * value, flag, count and the input counts, in every format and mode, for
 * source strides 1 and 3 and destination strides 1 and 2, over more
 * elements than one of TRUTH's array conversions takes (2048). */
START_TEST(test_truth_input_stored)
{
	enum { NI = 2500 };
	double *x = malloc(3 * NI * sizeof *x);
	uint8_t *fl[2] = {calloc(NI, 1), calloc(NI, 1)};
	ck_assert(x && fl[0] && fl[1]);
	uint64_t checked = 0;
	for (size_t fi = 0; fi < ARRAY_SIZE(fmts); fi++)
		for (size_t m = 0; m < ARRAY_SIZE(envs); m++)
			for (int lay = 0; lay < 4; lay++) {
				const emu_format *f = t_fmt(fmts[fi]);
				size_t sx = lay & 1 ? 3 : 1, sd = lay & 2 ? 2 : 1;
				for (size_t i = 0; i < 3 * NI; i++) { /* doubles, not f's values */
					uint64_t r = t_rand(91 + fi, i);
					double u = f->emin - f->p - 2 +
					           (double)(r % 100000) / 100000.0 *
					               (f->emax - f->emin + f->p + 6);
					x[i] = ((r >> 40) & 1 ? -1 : 1) * exp2(u);
					if (r % 97 == 0)
						x[i] = (r >> 20) & 1 ? INFINITY : NAN;
					if (r % 89 == 0)
						x[i] = (r >> 21) & 1 ? -0.0 : 0.0;
				}
				emu_env env = EMU_ENV_DEFAULT;
				env.mode = emu_mode_by_name(envs[m]);
				env.seed = 7;
				emu_be be[2];
				emu_vec *d[2];
				for (int q = 0; q < 2; q++) {
					emu_be_init(&be[q], q ? EMU_BE_EXACT : EMU_BE_TRUTH, &env);
					emu_steps(&be[q], names, 5);
					d[q] = emu_vec_new(&be[q], 2 * NI);
					ck_assert(d[q]);
					memset(fl[q], 0, NI);
					emu_input(&be[q], STEP, f, emu_strided(d[q], 0, sd), x, sx, NI, 1000,
					          fl[q]);
				}
				char what[96];
				snprintf(what, sizeof what, "%s %s, strides %zu and %zu", f->name,
				         envs[m], sx, sd);
				for (size_t j = 0; j < NI; j++) {
					mpfr_srcptr t = &d[0]->m[j * sd];
					double w = d[1]->d[j * sd];
					ck_assert_msg(isnan(w) ? mpfr_nan_p(t)
					                       : mpfr_cmp_d(t, w) == 0 &&
					                             !mpfr_signbit(t) == !signbit(w),
					              "%s: element %zu: %a stored as %a, truth %a", what, j,
					              x[j * sx], w, mpfr_get_d(t, MPFR_RNDN));
					ck_assert_msg(fl[0][j] == fl[1][j], "%s: element %zu: flags %x, %x",
					              what, j, fl[0][j], fl[1][j]);
				}
				same_stats(&be[0].st, &be[1].st, what);
				ck_assert_msg(be[0].st.in_n == be[1].st.in_n &&
				                  be[0].st.in_changed == be[1].st.in_changed &&
				                  be[0].st.in_overflow == be[1].st.in_overflow &&
				                  be[0].st.in_flushed == be[1].st.in_flushed,
				              "%s: input counts", what);
				for (int q = 0; q < 2; q++)
					emu_be_free(&be[q]);
				checked += NI;
			}
	free(x);
	free(fl[0]);
	free(fl[1]);
	t_count("engine: truth's stored inputs == exact's", checked);
}
END_TEST

/* emu_truth_dot_exact over long chains (the accumulator's digits carried
 * part-way, every TD_SPAN terms): 64-bit significands whose products fill
 * 128 bits, exponents spread so each product lands on every bit offset,
 * both signs, and halves of a chain that cancel to a few bits or to zero,
 * against the fma chain in MPFR at EMU_TRUTH_PREC bits (exact whenever the
 * exact dot takes the chain). */
START_TEST(test_truth_dot_long)
{
	enum { NMAX = 5000 };
	const size_t cases = 400;
	emu_be be;
	emu_be_init(&be, EMU_BE_TRUTH, &EMU_ENV_DEFAULT);
	emu_steps(&be, names, ARRAY_SIZE(names));
	emu_vec *a = emu_vec_new(&be, NMAX), *b = emu_vec_new(&be, NMAX),
	        *P = emu_vec_new(&be, NMAX), *s = emu_vec_new(&be, 1);
	ck_assert(a && b && P && s);
	const emu_format *f = t_fmt("fp32");
	mpfr_t u, v;
	mpfr_inits2(EMU_TRUTH_PREC, u, v, (mpfr_ptr)0);
	uint64_t done = 0, zeros = 0;
	for (uint64_t i = 0; i < cases; i++) {
		uint64_t r = t_rand(82, i);
		size_t n = 900 + r % (NMAX - 900);
		int spread = 1 + (int)((r >> 16) % 150); /* exponents 0 .. spread − 1 */
		bool cancel = (r >> 24) % 3 == 0;        /* the second half −(the first) */
		for (size_t l = 0; l < n; l++) {
			uint64_t ra = t_rand(83, i * NMAX + l), rb = t_rand(84, i * NMAX + l);
			if (cancel && l >= n / 2 && l - n / 2 < n / 2) {
				mpfr_neg(&a->m[l], &a->m[l - n / 2], MPFR_RNDN);
				mpfr_set(&b->m[l], &b->m[l - n / 2], MPFR_RNDN);
				continue;
			}
			/* a: 64 bits (top and bottom set), b: up to 64 bits */
			mpfr_set_ui_2exp(&a->m[l], ra | 1ull << 63 | 1,
			                 (long)(ra % (uint64_t)spread) - 64, MPFR_RNDN);
			mpfr_set_ui_2exp(&b->m[l], (rb | 1) >> (rb >> 58), (long)((rb >> 20) % 7),
			                 MPFR_RNDN);
			if (ra >> 62 & 1)
				mpfr_neg(&a->m[l], &a->m[l], MPFR_RNDN);
		}
		mpfr_set_zero(v, 1);
		for (size_t l = 0; l < n; l++)
			mpfr_fma(v, &a->m[l], &b->m[l], v, MPFR_RNDN);
		mpfr_set_zero(u, 1);
		if (!emu_truth_dot_exact(u, emu_row(a, 0), emu_row(b, 0), n))
			continue;
		done++;
		zeros += mpfr_zero_p(u) != 0;
		ck_assert_msg(mpfr_equal_p(u, v) && mpfr_signbit(u) == mpfr_signbit(v),
		              "case %llu: n %zu, spread %d, cancel %d", (unsigned long long)i, n,
		              spread, cancel);
		/* through emu_dot_n with a and b taken apart beforehand (one pass
		 * when the vectors' bounds allow it, else two) */
		emu_truth_split(&be, a, b);
		mpfr_set_zero(&s->m[0], 1);
		emu_dot_n(&be, EMU_STEP0, f, EMU_NOSTEP, EMU_STEP0 + 2, f, emu_row(s, 0), emu_row(a, 0),
		          0, emu_row(b, 0), n, emu_row(P, 0), n, 1, 0, n);
		emu_truth_split_free(&be);
		ck_assert_msg(mp_same(&s->m[0], v), "case %llu: n %zu, spread %d, cancel %d, split",
		              (unsigned long long)i, n, spread, cancel);
	}
	/* most chains fit 256 bits; some cancelled to zero exactly */
	ck_assert_msg(done > cases / 2 && zeros > 0, "exact dot took %llu chains, %llu zero",
	              (unsigned long long)done, (unsigned long long)zeros);
	mpfr_clears(u, v, (mpfr_ptr)0);
	emu_be_free(&be);
	t_count("engine: long truth dot == MPFR's fma chain", done);
}
END_TEST

/* Argument i of the truth exp proof: doubles over ranges a kernel meets
 * and past the fast path's ends (2^-60, 2^20), 256-bit values, values next
 * to multiples of ln 2 (r near 0 and near ln 2), and specials. */
static void texp_arg(mpfr_ptr x, uint64_t stream, uint64_t i)
{
	uint64_t r = t_rand(stream, i);
	double u = (double)(r >> 11) / 0x1p53 * 2 - 1, sgn = (r & 1) ? -1 : 1;
	unsigned kind = (unsigned)((r >> 1) % 9);
	switch (kind) {
	case 0:
		mpfr_set_d(x, u * 40, MPFR_RNDN);
		break;
	case 1:
		mpfr_set_d(x, u * 1100, MPFR_RNDN);
		break;
	case 2: /* 2^-70 .. 2^25 */
		mpfr_set_d(x, sgn * ldexp(1 + fabs(u), (int)((r >> 8) % 96) - 70), MPFR_RNDN);
		break;
	case 3: /* 256 bits */
		mpfr_set_ui(x, 1, MPFR_RNDN);
		mpfr_div_ui(x, x, 3 + (r >> 8) % 1000, MPFR_RNDN);
		mpfr_add_d(x, x, u * 60, MPFR_RNDN);
		break;
	case 4: /* k · ln 2 (at 256 bits) plus a few units of its last place */
	case 5: {
		mpfr_const_log2(x, MPFR_RNDN);
		mpfr_mul_si(x, x, (long)((r >> 8) % 4001) - 2000, MPFR_RNDN);
		mpfr_t e;
		mpfr_init2(e, 64);
		mpfr_set_si(e, (long)((r >> 20) % 9) - 4, MPFR_RNDN);
		/* (k = 0: units of 2^-256 around 0) */
		long ex = mpfr_zero_p(x) ? 0 : (long)mpfr_get_exp(x);
		mpfr_mul_2si(e, e, ex - (kind == 4 ? 256 : 200), MPFR_RNDN);
		mpfr_add(x, x, e, MPFR_RNDN);
		mpfr_clear(e);
		break;
	}
	case 6: /* the ends of the fast path */
		mpfr_set_ui_2exp(x, 1, (r >> 8) & 1 ? 20 : -61, MPFR_RNDN);
		if ((r >> 9) & 1)
			mpfr_nextbelow(x);
		if ((r >> 10) & 1)
			mpfr_neg(x, x, MPFR_RNDN);
		break;
	case 7: /* few bits */
		mpfr_set_si(x, (long)((r >> 8) % 2001) - 1000, MPFR_RNDN);
		mpfr_div_2ui(x, x, (r >> 20) % 12, MPFR_RNDN);
		break;
	default:
		if (r % 4 == 0)
			mpfr_set_nan(x);
		else if (r % 4 == 1)
			mpfr_set_inf(x, (int)sgn);
		else
			mpfr_set_zero(x, (int)sgn);
	}
}

uint64_t t_truth_exp_cases(uint64_t stream, uint64_t n, uint64_t *fast, char *first, size_t len)
{
	mpfr_t x, a, b, c, y, e;
	mpfr_inits2(EMU_TRUTH_PREC, x, a, b, (mpfr_ptr)0);
	mpfr_init2(c, 53);
	mpfr_init2(y, 320);
	mpfr_init2(e, 640);
	*fast = 0;
	uint64_t bad = 0;
	for (uint64_t i = 0; i < n; i++) {
		texp_arg(x, stream, i);
		mpfr_exp(a, x, MPFR_RNDN);
		emu_truth_exp(b, x);
		bool same = mp_same(a, b);
		if (i % 64 == 0) { /* a 53-bit result: always MPFR's own */
			mpfr_t a53;
			mpfr_init2(a53, 53);
			mpfr_exp(a53, x, MPFR_RNDN);
			emu_truth_exp(c, x);
			same = same && ((mpfr_nan_p(a53) && mpfr_nan_p(c)) || mpfr_equal_p(a53, c));
			mpfr_clear(a53);
		}
		/* the approximation's error against exp(x) at 640 bits: within
		 * 2^-306 (the bound it is rounded under is 2^-299) */
		long k;
		if (emu_truth_exp_approx(y, &k, x)) {
			(*fast)++;
			mpfr_exp(e, x, MPFR_RNDN);
			mpfr_mul_2si(e, e, -k, MPFR_RNDN);
			mpfr_sub(e, e, y, MPFR_RNDN);
			same = same && (mpfr_zero_p(e) || mpfr_get_exp(e) <= -306);
		}
		if (!same && !bad++)
			mpfr_snprintf(first, len, "exp(%.80Rg)", x);
	}
	mpfr_clears(x, a, b, c, y, e, (mpfr_ptr)0);
	return bad;
}

/* emu_truth_exp is mpfr_exp's number at 256 bits, and its approximation
 * (before mpfr_can_round) is within 2^-306 of exp(x), 7 bits inside the
 * bound it claims: 300,000 arguments here, 10^7 more in make
 * test-exhaustive */
START_TEST(test_truth_exp)
{
	char first[200] = "";
	enum { N = 300000 };
	uint64_t fast, bad = t_truth_exp_cases(82, N, &fast, first, sizeof first);
	ck_assert_msg(bad == 0, "%llu of %d differ from mpfr_exp, first %s",
	              (unsigned long long)bad, N, first);
	/* the fast path taken where it should be (kinds 0, 1, 3, 4, 5, 7 and
	 * part of 2 and 6: about 70%) */
	ck_assert_msg(fast > N / 2, "the fast path took only %llu of %d", (unsigned long long)fast,
	              N);
	t_count("engine: truth exp == mpfr_exp (256 bits)", N);
}
END_TEST

Suite *suite_engine(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("engine");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_map_elements);
	tcase_add_test(tc, test_map_grouping);
	tcase_add_test(tc, test_map_mode);
	tcase_add_test(tc, test_folds);
	tcase_add_test(tc, test_dot_n);
	tcase_add_test(tc, test_dot_n_f32);
	tcase_add_test(tc, test_dot_n_truth);
	tcase_add_test(tc, test_truth_dot_long);
	tcase_add_test(tc, test_truth_input_stored);
	tcase_add_test(tc, test_truth_div_pow2);
	tcase_add_test(tc, test_truth_set_d);
	tcase_add_test(tc, test_truth_exp);
	suite_add_tcase(s, tc);
	return s;
}
