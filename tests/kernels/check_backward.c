/*
 * check_backward.c — the loss-scaled backward kernel and the GradScaler
 * kernel reproduce, from their own arithmetic, what loss scaling is for:
 * fp16 loses small weight gradients to zero at scale 1, a larger scale
 * brings them back, a too-large scale overflows and GradScaler skips the
 * step; bf16's range does not overflow where fp16 does; GradScaler's scale
 * halves to exactly 0.0 after 166 skipped steps and settles at 4096 for a
 * largest fp16 gradient of 10. (fast == exact for both kernels is proved by
 * check_kernels.c with every registered kernel.) The inputs are fixed, not
 * drawn from the run's seed, so the numbers in docs/kernels-backward.md are
 * the numbers asserted here.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

enum { BR = 16, BD = 16, BC = 8, NDW = BD * BC, NDX = BR * BD, KMAX = 24 };

/* Fixed draws (SplitMix64), independent of NANMAP_SEED. */
static uint64_t draw(uint64_t i)
{
	uint64_t z = 0x6261636bull ^ (i * 0x9e3779b97f4a7c15ull);
	z += 0x9e3779b97f4a7c15ull;
	return emu_mix64(z);
}

/* Small activations: ±2^-20·(1 + u), u uniform on [0, 1) (fp16 subnormals
 * of 16 to 32 ulps, so the products with dlogits ~ 1/(C·R) are ~1e-8). */
static void small_x(double *x)
{
	for (size_t i = 0; i < BR * BD; i++) {
		uint64_t r = draw(i);
		x[i] = ((r >> 63) ? -1 : 1) * ldexp(1 + (double)(r >> 11) * 0x1p-53, -20);
	}
}

typedef struct {
	double frac[4]; /* emu_backward_fractions against truth */
	size_t dw_lost, dx_lost;
	bool found_inf;
	emu_run_status status;
	char first[32];   /* first step that raised overflow/invalid/divbyzero */
	emu_bits dw[NDW]; /* unscaled dW, fp32 encodings */
} bw_result;

static void run_bw(const char *spec, double scale, const double *x, bw_result *res)
{
	emu_policy pol;
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	emu_kparam p[] = {{"wscale", 1e-3}, {"scale", scale}, {"classes", BC}};
	emu_kin in = {x, BR, BD, p, ARRAY_SIZE(p), 1, NULL, 0};
	emu_run a, t;
	ck_assert_msg(emu_run_kernel(&emu_kernel_backward, &pol, NULL, &in, EMU_BE_FAST, &a, err,
	                             sizeof err) == 0,
	              "%s", err);
	ck_assert_msg(emu_run_kernel(&emu_kernel_backward, &pol, NULL, &in, EMU_BE_TRUTH, &t, err,
	                             sizeof err) == 0,
	              "%s", err);
	emu_run_compare(&a, &(emu_truth){.stored = t, .same = true}); /* the stored inputs' truth */
	ck_assert(emu_backward_fractions(&a, &t, res->frac) == 0);
	/* items: loss, dW, dX, found_inf, grad */
	ck_assert(a.out.n == 5 && strcmp(a.out.item[1].name, "dW") == 0 &&
	          strcmp(a.out.item[3].name, "found_inf") == 0 && a.out.item[1].n == NDW);
	res->dw_lost = a.m[1].lost;
	res->dx_lost = a.m[2].lost;
	/* the helper's lost fraction is run.c's lost count of the stored gradients */
	ck_assert(fabs(res->frac[2] * (NDW + NDX) - (double)a.m[4].lost) < 0.5);
	res->found_inf = emu_kout_d(NULL, &a.out.item[3], 0) == 1;
	ck_assert(emu_kout_d(NULL, &a.out.item[3], 0) == 0 || res->found_inf);
	res->status = a.status;
	snprintf(res->first, sizeof res->first, "%s", a.be.st.first_set ? a.be.st.first_step : "-");
	for (size_t j = 0; j < NDW; j++)
		res->dw[j] = emu_encode(a.out.item[1].fmt, emu_kout_d(NULL, &a.out.item[1], j));
	emu_run_free(&a);
	emu_run_free(&t);
}

/* fp16 storage with fp32 math (autocast): the lost fraction falls as the
 * scale grows, then the scaled dlogits overflow fp16 and found_inf is set. */
START_TEST(test_fp16_loss_scale)
{
	double x[BR * BD];
	small_x(x);
	static bw_result r[KMAX + 1];
	int first_inf = -1;
	for (int k = 0; k <= KMAX; k++) {
		run_bw("storage=fp16,compute=fp32", ldexp(1, k), x, &r[k]);
		if (r[k].found_inf && first_inf < 0)
			first_inf = k;
		/* once a scale overflows, every larger one does */
		ck_assert_msg(first_inf < 0 || r[k].found_inf, "2^%d: found_inf went back to 0", k);
		if (r[k].found_inf)
			ck_assert(r[k].frac[3] > 0 && strcmp(r[k].first, "store_dlogit") == 0);
		else
			ck_assert(r[k].frac[3] == 0 && r[k].status <= EMU_ST_UNDERFLOW);
		/* the lost fraction never grows with the scale */
		if (k > 0 && !r[k].found_inf)
			ck_assert_msg(r[k].dw_lost <= r[k - 1].dw_lost &&
			                  r[k].frac[2] <= r[k - 1].frac[2],
			              "2^%d: lost %zu > %zu at 2^%d", k, r[k].dw_lost,
			              r[k - 1].dw_lost, k - 1);
	}
	/* measured (docs/kernels-backward.md): scale 1 loses 34 of the 128 weight
	 * gradients (27%), then 18, 10, 6, 4, 1 for 2^1..2^5, none from 2^6;
	 * 2^20 is the largest safe power of two, 2^21 overflows the stored
	 * dlogits (7/8 · 2^21/16 = 114688 > 65504). */
	static const size_t lost[] = {34, 18, 10, 6, 4, 1};
	for (int k = 0; k <= 20; k++)
		ck_assert_msg(r[k].dw_lost == (k < 6 ? lost[k] : 0) && r[k].dx_lost == 0 &&
		                  !r[k].found_inf,
		              "2^%d: dW lost %zu, dX lost %zu, found_inf %d", k, r[k].dw_lost,
		              r[k].dx_lost, r[k].found_inf);
	ck_assert(r[0].status == EMU_ST_UNDERFLOW && r[0].frac[0] == r[0].frac[2] &&
	          r[0].frac[1] > 0.85);
	ck_assert_msg(first_inf == 21, "first overflowing scale 2^%d", first_inf);
	ck_assert(r[24].found_inf && r[24].status == EMU_ST_NAN);
	/* with nothing subnormal and nothing overflowing, a power-of-two scale is
	 * exact: the unscaled dW are bit for bit those of 2^16 */
	for (int k = 16; k <= 20; k++) {
		ck_assert(r[k].frac[1] == 0);
		ck_assert_msg(memcmp(r[k].dw, r[16].dw, sizeof r[k].dw) == 0, "2^%d: dW differs",
		              k);
	}
	/* scale 1 is not: 34 zeros and rounded subnormals */
	ck_assert(memcmp(r[0].dw, r[16].dw, sizeof r[0].dw) != 0);
	t_count("backward: fp16 loss-scale sweeps (scales)", KMAX + 1);
}
END_TEST

/* fp16 all the way (compute too): GradScaler's default 65536 is not an fp16
 * value; converting the scale itself overflows, before any gradient. */
START_TEST(test_fp16_compute_scale)
{
	double x[BR * BD];
	small_x(x);
	bw_result r;
	run_bw("storage=fp16", 32768, x, &r);
	ck_assert_msg(!r.found_inf && r.dw_lost == 0, "32768: found_inf %d lost %zu", r.found_inf,
	              r.dw_lost);
	run_bw("storage=fp16", 65536, x, &r);
	ck_assert_msg(r.found_inf && strcmp(r.first, "scale_to_compute") == 0, "65536: first %s",
	              r.first);
}
END_TEST

/* bf16 has fp32's range: no overflow at the scales that overflow fp16, no
 * underflow at scale 1, and every power-of-two scale gives the same bits. */
START_TEST(test_bf16_range)
{
	double x[BR * BD];
	small_x(x);
	static bw_result r1, r;
	run_bw("storage=bf16,compute=fp32", 1, x, &r1);
	ck_assert(!r1.found_inf && r1.dw_lost == 0 && r1.dx_lost == 0 && r1.frac[0] == 0 &&
	          r1.frac[1] == 0);
	const int ks[] = {4, 16, 21, 24, 32, 64, 100};
	for (size_t i = 0; i < ARRAY_SIZE(ks); i++) {
		run_bw("storage=bf16,compute=fp32", ldexp(1, ks[i]), x, &r);
		ck_assert_msg(!r.found_inf && r.frac[3] == 0 && r.status == EMU_ST_OK,
		              "bf16 2^%d: found_inf %d", ks[i], r.found_inf);
		ck_assert_msg(memcmp(r.dw, r1.dw, sizeof r.dw) == 0, "bf16 2^%d: dW differs",
		              ks[i]);
	}
}
END_TEST

/* The kernel's own fractions without truth: lost is 0, overflowed counts
 * inf/NaN; a non-backward run is refused. */
START_TEST(test_fractions_without_truth)
{
	double x[BR * BD];
	small_x(x);
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse("storage=fp16,compute=fp32", &pol, err, sizeof err) == EMU_OK);
	emu_kparam p[] = {{"wscale", 1e-3}, {"scale", 0x1p24}};
	emu_kin in = {x, BR, BD, p, ARRAY_SIZE(p), 1, NULL, 0};
	emu_run a;
	ck_assert(emu_run_kernel(&emu_kernel_backward, &pol, NULL, &in, EMU_BE_FAST, &a, err,
	                         sizeof err) == 0);
	double f[4];
	ck_assert(emu_backward_fractions(&a, NULL, f) == 0);
	ck_assert(f[2] == 0 && f[3] > 0 && f[3] <= 1);
	emu_run_free(&a);
	ck_assert(emu_run_kernel(&emu_kernel_softmax_ce, &pol, NULL, &in, EMU_BE_FAST, &a, err,
	                         sizeof err) == 0);
	ck_assert(emu_backward_fractions(&a, NULL, f) == -1);
	emu_run_free(&a);
	/* bad parameters are refused with a reason */
	emu_kparam bad[] = {{"classes", 0}};
	emu_kin in2 = {x, BR, BD, bad, 1, 1, NULL, 0};
	ck_assert(emu_run_kernel(&emu_kernel_backward, &pol, NULL, &in2, EMU_BE_FAST, &a, err,
	                         sizeof err) != 0);
	ck_assert(strstr(err, "classes") != NULL);
	emu_run_free(&a);
}
END_TEST

/* A failing sum names its output and its term: the logits' products,
 * conversions and additions are element i·D + j for term j of logit
 * i = r·C + c. Row 1's class-0 products are all +20000 (x_d = 20000 / W[d][0],
 * W drawn as the kernel draws it), so the fp16 running sum passes 60000 after
 * three terms and overflows on the fourth: logit 2, term 3, element 15.
 * Row 0 (x = 1) and everything before row 1's first logit stay finite. */
START_TEST(test_first_sum_element)
{
	enum { R = 2, D = 6, C = 2 };
	const double wscale = 8;
	double x[R * D];
	for (size_t d = 0; d < D; d++) {
		uint64_t z = 1 ^ ((d * C) * 0x9e3779b97f4a7c15ull); /* seed 1, W[d][0] */
		double w =
		    wscale * ((double)(emu_mix64(z + 0x9e3779b97f4a7c15ull) >> 11) * 0x1p-52 - 1);
		ck_assert_msg(fabs(w) > 0.5, "W[%zu][0] = %g: the fixture needs |W| > 0.5", d, w);
		x[d] = 1;
		x[D + d] = 20000 / w;
	}
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse("storage=fp16", &pol, err, sizeof err) == EMU_OK);
	emu_kparam p[] = {{"wscale", wscale}, {"classes", C}};
	emu_kin in = {x, R, D, p, ARRAY_SIZE(p), 1, NULL, 0};
	for (int kind = EMU_BE_FAST; kind <= EMU_BE_EXACT; kind++) {
		emu_run a;
		ck_assert(emu_run_kernel(&emu_kernel_backward, &pol, NULL, &in, (emu_be_kind)kind,
		                         &a, err, sizeof err) == 0);
		const emu_be_stats *st = &a.be.st;
		ck_assert_msg(st->first_set && st->first_op == EMU_OP_ADD &&
		                  strcmp(st->first_step, "sum") == 0 &&
		                  st->first_index == 2 * D + 3 &&
		                  st->first_flags == EMU_FLAG_OVERFLOW,
		              "%s: first %s %" PRIu64, emu_be_name((emu_be_kind)kind),
		              st->first_set ? st->first_step : "-", st->first_index);
		emu_run_free(&a);
	}
}
END_TEST

/* ---- gradscaler ---- */

/* Run the gradscaler kernel on n steps of gmax on backend kind. */
static void run_gs(const char *spec, const double *g, size_t n, const emu_kparam *p, size_t np,
                   emu_be_kind kind, emu_run *r)
{
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK);
	emu_kin in = {g, 1, n, p, np, 1, NULL, 0};
	ck_assert_msg(
	    emu_run_kernel(&emu_kernel_gradscaler, &pol, NULL, &in, kind, r, err, sizeof err) == 0,
	    "%s", err);
	ck_assert(r->out.n == 4 && strcmp(r->out.item[0].name, "scale") == 0 &&
	          strcmp(r->out.item[1].name, "skipped") == 0);
}

START_TEST(test_gradscaler_to_zero)
{
	enum { N = 200 };
	static double g[N];
	for (size_t i = 0; i < N; i++)
		g[i] = INFINITY;
	for (int kind = 0; kind < EMU_NBE; kind++) {
		emu_run r;
		run_gs("storage=fp16", g, N, NULL, 0, (emu_be_kind)kind, &r);
		for (size_t i = 0; i < N; i++) {
			double s = emu_kout_d(&r.be, &r.out.item[0], i);
			/* step i+1 runs with 2^(16−i): 2^-149 is the last nonzero fp32;
			 * halving it ties to even, 0 */
			double want = i <= 165 ? ldexp(1, 16 - (int)i) : 0;
			ck_assert_msg(s == want && !signbit(s), "%s step %zu: scale %a",
			              emu_be_name(kind), i + 1, s);
			ck_assert(emu_kout_d(&r.be, &r.out.item[1], i) == 1);
		}
		/* 166 skipped steps take 65536 to exactly 0.0 */
		ck_assert(emu_kout_d(&r.be, &r.out.item[0], 165) == 0x1p-149);
		ck_assert(emu_kout_d(&r.be, &r.out.item[0], 166) == 0);
		ck_assert(emu_kout_d(&r.be, &r.out.item[3], 0) == 0);
		emu_run_free(&r);
	}
}
END_TEST

START_TEST(test_gradscaler_settles)
{
	/* largest gradient 10, stored in fp16 (the policy's storage): 8192·10
	 * overflows fp16, 4096·10 = 40960 does not */
	enum { N = 4100 };
	static double g[N];
	for (size_t i = 0; i < N; i++)
		g[i] = 10;
	emu_run r;
	run_gs("storage=fp16", g, N, NULL, 0, EMU_BE_FAST, &r);
	size_t at4096 = 0, skips = 0;
	for (size_t i = 0; i < N; i++) {
		double s = emu_kout_d(&r.be, &r.out.item[0], i);
		bool sk = emu_kout_d(&r.be, &r.out.item[1], i) == 1;
		at4096 += s == 4096;
		skips += sk;
		/* a step is skipped exactly when it ran with a scale above 4096 */
		ck_assert_msg(sk == (s > 4096), "step %zu: scale %g skipped %d", i + 1, s, sk);
		/* steps 1-4: 65536 down to 8192, skipped; then 4096 for 2000 steps;
		 * growth to 8192 at steps 2005 and 4006, skipped, back to 4096 */
		double want = i < 4                      ? ldexp(65536, -(int)i)
		              : (i == 2004 || i == 4005) ? 8192
		                                         : 4096;
		ck_assert_msg(s == want, "step %zu: scale %g, want %g", i + 1, s, want);
	}
	ck_assert(skips == 6 && at4096 == N - 6);
	ck_assert(emu_kout_d(&r.be, &r.out.item[3], 0) == 4096);
	emu_run_free(&r);
	/* fp32 gradients (gfmt=32) never overflow at 10: the scale stays 65536
	 * and grows once the interval is reached */
	emu_kparam p[] = {{"gfmt", 32}, {"interval", 100}};
	run_gs("storage=fp16", g, 250, p, ARRAY_SIZE(p), EMU_BE_FAST, &r);
	ck_assert(emu_kout_d(&r.be, &r.out.item[0], 99) == 65536);
	ck_assert(emu_kout_d(&r.be, &r.out.item[0], 100) == 131072);
	ck_assert(emu_kout_d(&r.be, &r.out.item[3], 0) == 262144);
	emu_run_free(&r);
}
END_TEST

/* The scale recovers gradients the fp16 backward would lose: 64 elements
 * spread below a largest gradient of 2^-14 lose a share at scale 1 and none
 * at 65536 (the `lost` output, per step). */
START_TEST(test_gradscaler_lost)
{
	double g[4] = {0x1p-14, 0x1p-14, 0x1p-14, 0x1p-14};
	emu_kparam p1[] = {{"init", 1}, {"elems", 64}, {"gfmt", 16}, {"mfmt", 32}};
	emu_kparam p2[] = {{"init", 65536}, {"elems", 64}, {"gfmt", 16}, {"mfmt", 32}};
	emu_run a, b;
	run_gs("storage=bf16", g, 4, p1, ARRAY_SIZE(p1), EMU_BE_FAST, &a);
	run_gs("storage=bf16", g, 4, p2, ARRAY_SIZE(p2), EMU_BE_FAST, &b);
	ck_assert(strcmp(a.out.item[2].name, "lost") == 0);
	for (size_t i = 0; i < 4; i++) {
		double la = emu_kout_d(&a.be, &a.out.item[2], i),
		       lb = emu_kout_d(&b.be, &b.out.item[2], i);
		ck_assert_msg(la > 0 && lb == 0, "step %zu: lost %g at scale 1, %g at 65536", i + 1,
		              la, lb);
		ck_assert(emu_kout_d(&a.be, &a.out.item[1], i) == 0);
	}
	emu_run_free(&a);
	emu_run_free(&b);
	/* parameters PyTorch rejects are refused */
	emu_kparam bad[] = {{"growth", 1}};
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse("storage=fp16", &pol, err, sizeof err) == EMU_OK);
	emu_kin in = {g, 1, 4, bad, 1, 1, NULL, 0};
	ck_assert(emu_run_kernel(&emu_kernel_gradscaler, &pol, NULL, &in, EMU_BE_FAST, &a, err,
	                         sizeof err) != 0);
	ck_assert_msg(strstr(err, "growth") != NULL, "%s", err);
	emu_run_free(&a);
}
END_TEST

Suite *suite_backward(void)
{
	Suite *s = suite_create("backward");
	TCase *tc = tcase_create("loss_scale");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fp16_loss_scale);
	tcase_add_test(tc, test_fp16_compute_scale);
	tcase_add_test(tc, test_bf16_range);
	tcase_add_test(tc, test_fractions_without_truth);
	tcase_add_test(tc, test_first_sum_element);
	tcase_add_test(tc, test_gradscaler_to_zero);
	tcase_add_test(tc, test_gradscaler_settles);
	tcase_add_test(tc, test_gradscaler_lost);
	suite_add_tcase(s, tc);
	return s;
}
