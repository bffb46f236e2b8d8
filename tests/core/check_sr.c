/*
 * check_sr.c — stochastic rounding: each value rounds away from zero with
 * probability ⌈frac·2^32⌉/2^32 (a binomial test at 6 sigma), exact values
 * never move, results are one of the two neighbours, and they depend only
 * on (seed, index): 1 and 2 threads, or a split array, give the same bits.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "emu/core/draw.h"
#include "tests/lib.h"

static const struct {
	const char *fmt;
	double lo, frac; /* x = lo + frac·ulp, lo representable */
	double ulp;
} probs[] = {
	{"fp16", 1.0, 0.5, 0x1p-10},     {"fp16", 1.0, 0.25, 0x1p-10},
	{"fp16", 1.0, 0.0009765625, 0x1p-10}, {"fp16", -3.0, 0.75, 0x1p-9},
	{"bf16", 1.0, 0.1, 0x1p-7},      {"bf16", 0x1p-133, 0.3, 0x1p-133}, /* subnormal grid */
	{"e4m3", 448, 0.5, 32},          /* above max: rounds to 480 -> overflow NaN */
	{"e4m3", 0.0, 0.6, 0x1p-9},      {"e5m2", 1.0, 0.875, 0.25},
	{"e2m1", 4.0, 0.2, 2.0},
};

START_TEST(test_probability)
{
	const emu_format *f = t_fmt(probs[_i].fmt);
	double x = probs[_i].lo + probs[_i].frac * probs[_i].ulp;
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = EMU_SR;
	env.seed = t_seed();
	emu_bits down = emu_from_double(f, probs[_i].lo, &(emu_env){EMU_RNE, 0, 0, 0, 0, 0}).bits;
	const int n = t_quick() ? 20000 : 400000;
	int up = 0;
	for (int i = 0; i < n; i++) {
		env.index = (uint64_t)i;
		emu_result r = emu_from_double(f, x, &env);
		if (r.bits != down)
			up++;
		ck_assert(r.flags & EMU_FLAG_INEXACT);
	}
	/* P(away) for the magnitude; lo < 0 means "up" in magnitude is below lo */
	double p = probs[_i].lo < 0 ? 1 - probs[_i].frac : probs[_i].frac;
	if (probs[_i].lo < 0)
		p = probs[_i].frac; /* -3 - 0.75ulp: magnitude grows with prob 0.75 */
	double sd = sqrt(n * p * (1 - p));
	ck_assert_msg(fabs(up - n * p) <= 6 * sd + 1, "%s x=%a: %d of %d rounded away, expected %.1f ± %.1f",
	              f->name, x, up, n, n * p, sd);
	t_count("sr: draws in probability tests", (uint64_t)n);
}
END_TEST

START_TEST(test_exact_and_neighbours)
{
	const emu_format *f = t_fmt("fp16");
	emu_env sr = EMU_ENV_DEFAULT, dn = EMU_ENV_DEFAULT, upm = EMU_ENV_DEFAULT;
	sr.mode = EMU_SR;
	sr.seed = t_seed();
	dn.mode = EMU_RTZ;
	upm.mode = EMU_RNA; /* placeholder, replaced per sign below */
	for (uint64_t i = 0; i < 200000; i++) {
		uint64_t r = t_rand(40, i);
		double x = ldexp((double)(r >> 11) * 0x1p-53 + 0.5, (int)(r % 40) - 25);
		if (r & 1)
			x = -x;
		sr.index = i;
		emu_bits s = emu_from_double(f, x, &sr).bits;
		emu_bits z = emu_from_double(f, x, &dn).bits;
		upm.mode = x > 0 ? EMU_UP : EMU_DOWN;
		emu_bits a = emu_from_double(f, x, &upm).bits;
		ck_assert_msg(s == z || s == a, "SR(%a) = 0x%x not in {0x%x, 0x%x}", x, s, z, a);
		/* an exact value never moves */
		double v = emu_decode(f, z);
		if (isfinite(v)) {
			emu_result e = emu_from_double(f, v, &sr);
			ck_assert_msg(e.bits == z && e.flags == 0, "exact %a moved", v);
		}
	}
	t_count("sr: neighbour and exactness checks", 200000);
}
END_TEST

static void round_parallel(const emu_format *f, const double *x, emu_bits *out, size_t n,
                           int threads)
{
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = EMU_SR;
	env.seed = t_seed();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1000)
	for (size_t i = 0; i < n; i++) {
		emu_env e = env;
		e.index = i;
		out[i] = emu_from_double(f, x[i], &e).bits;
	}
}

START_TEST(test_threads)
{
	const size_t n = 300000;
	double *x = malloc(n * sizeof *x);
	emu_bits *o1 = malloc(n * sizeof *o1), *o2 = malloc(n * sizeof *o2),
	         *o3 = malloc(n * sizeof *o3);
	ck_assert(x && o1 && o2 && o3);
	for (size_t i = 0; i < n; i++)
		x[i] = ldexp((double)(t_rand(41, i) >> 11) * 0x1p-53, (int)(i % 30) - 20);
	const char *names[] = {"fp16", "bf16", "e4m3", "e5m2"};
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		const emu_format *f = t_fmt(names[k]);
		round_parallel(f, x, o1, n, 1);
		round_parallel(f, x, o2, n, 2);
		/* and the array API in two halves with an index offset */
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = EMU_SR;
		env.seed = t_seed();
		emu_round_array(f, x, o3, n / 3, &env);
		env.index = n / 3;
		emu_round_array(f, x + n / 3, o3 + n / 3, n - n / 3, &env);
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(o1[i] == o2[i] && o1[i] == o3[i],
			              "%s element %zu: 1 thread 0x%x, 2 threads 0x%x, split 0x%x", f->name, i,
			              o1[i], o2[i], o3[i]);
	}
	t_count("sr: elements compared across 1/2 threads and split arrays", 4 * n);
	free(x);
	free(o1);
	free(o2);
	free(o3);
}
END_TEST

/* SR's equal case in the array loop: the top 32 bits of what is
 * discarded equal the draw u, and only the rest below them decides (away
 * iff something is there). Random inputs meet it once in 2^32; here each
 * element is built from its own draw, in the normal range (fp16: 1 +
 * (3 + u·2^-32)·2^-10) and the subnormal one ((3 + u·2^-32)·2^-24), with
 * and without 2^-40 of the unit below. Every element must be its scalar
 * rounding, and go away exactly when the rest is there. */
START_TEST(test_array_equal_draw)
{
	enum { N = 64 };
	const emu_format *f = t_fmt("fp16");
	emu_env env = EMU_ENV_DEFAULT;
	env.mode = EMU_SR;
	env.seed = t_seed();
	env.index = 1000;
	double x[N];
	emu_bits out[N];
	for (int i = 0; i < N; i++) {
		double u = (double)emu_sr_bits(env.seed, env.index + (uint64_t)i);
		double unit = 3.0 + ldexp(u, -32) + (i & 1 ? 0x1p-40 : 0);
		x[i] = i & 2 ? ldexp(unit, -24) : 1.0 + ldexp(unit, -10);
	}
	emu_round_array(f, x, out, N, &env);
	for (int i = 0; i < N; i++) {
		emu_env e = env;
		e.index = env.index + (uint64_t)i;
		emu_result r = emu_from_double(f, x[i], &e);
		emu_bits toward = i & 2 ? 3 : 0x3c03;
		ck_assert_msg(out[i] == r.bits && r.bits == toward + (i & 1),
		              "element %d (%s, rest %d): array 0x%x, scalar 0x%x", i,
		              i & 2 ? "subnormal" : "normal", i & 1, out[i], r.bits);
	}
	t_count("sr: draws equal to the discarded bits, array and scalar", N);
}
END_TEST

/* The kernels' ±1 upstream gradients (emu_draw_sign, inline) are the sign
 * of bit 0 of emu_sr_bits, as their docs say; both signs come up. */
START_TEST(test_draw_sign)
{
	uint64_t neg = 0, n = 1u << 20;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t seed = i % 7 == 0 ? 0 : t_rand(5, i);
		double want = emu_sr_bits(seed, i * 977) & 1 ? -1.0 : 1.0;
		double got = emu_draw_sign(seed, i * 977);
		if (got != want)
			ck_abort_msg("seed %llu index %llu: %g, want %g", (unsigned long long)seed,
			             (unsigned long long)(i * 977), got, want);
		neg += got < 0;
	}
	ck_assert(neg > n / 2 - n / 64 && neg < n / 2 + n / 64);
	t_count("sr: emu_draw_sign against emu_sr_bits", n);
}
END_TEST

Suite *suite_sr(void)
{
	Suite *s = suite_create("sr");
	TCase *tc = tcase_create("stochastic");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_probability, 0, ARRAY_SIZE(probs));
	tcase_add_test(tc, test_exact_and_neighbours);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_array_equal_draw);
	tcase_add_test(tc, test_draw_sign);
	suite_add_tcase(s, tc);
	return s;
}
