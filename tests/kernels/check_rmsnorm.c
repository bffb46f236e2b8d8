/*
 * check_rmsnorm.c — what the RMS-norm kernel's own arithmetic gives where
 * RMS norm is known to break, each expectation worked out here from the
 * formats' definitions rather than read off the kernel: fp16's x² overflows
 * from |x| ≥ 255.97 (x² ≥ 65504 + 16 rounds to inf), its Σ x² from 65520;
 * eps = 1e-8 is 0 in fp16 (below 2^-25, half the smallest subnormal); a
 * constant row normalises to sign(c)·g; the backward pass against the
 * formula evaluated in binary64. The fast == exact agreement is
 * check_kernels.c's, which covers every registered kernel.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

static const char *const variants[] = {"plain", "prescaled", "fp32stats"};
enum { PLAIN, PRESCALED, FP32STATS };
enum { Y, DX, RSTD, MS, DG }; /* the kernel's outputs, in order */

/* Run rmsnorm on the fast backend with parameters p and compare it with the
 * truth backend (the stored inputs' truth). */
static void rn_run(emu_run *r, const char *spec, const char *variant, const double *x, size_t rows,
                   size_t cols, const emu_kparam *p, size_t np)
{
	emu_policy pol;
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	emu_kin in = {x, rows, cols, p, np, 1, NULL, 0};
	emu_run t;
	ck_assert_msg(emu_run_kernel(&emu_kernel_rmsnorm, &pol, variant, &in, EMU_BE_FAST, r, err,
	                             sizeof err) == 0,
	              "%s", err);
	ck_assert_msg(emu_run_kernel(&emu_kernel_rmsnorm, &pol, variant, &in, EMU_BE_TRUTH, &t, err,
	                             sizeof err) == 0,
	              "%s", err);
	ck_assert(r->out.n == 5 && strcmp(r->out.item[MS].name, "ms") == 0 &&
	          strcmp(r->out.item[DG].name, "dg") == 0);
	emu_run_compare(r, &(emu_truth){.stored = t, .same = true});
	emu_run_free(&t);
}

static double out_d(const emu_run *r, int item, size_t j)
{
	return emu_kout_d(NULL, &r->out.item[item], j);
}

static const char *first_step(const emu_run *r)
{
	return r->be.st.first_set ? r->be.st.first_step : "-";
}

enum { N8 = 8 };

/* A row of RMS ≥ 256 in fp16: some |x_j| ≥ RMS ≥ 255.97, so plain's first
 * failing operation is the square of the first such element (the maps run
 * before the sum). A row of RMS 200 (all |x| < 255.97) squares fine and
 * overflows in the sum instead: 40000 + 40000 ≥ 65520. prescaled (x/s ≤ 1)
 * and fp32stats (fp32 squares) raise nothing on either row. */
START_TEST(test_fp16_overflow)
{
	/* integers below 2048: exact in fp16 */
	static const double big[N8] = {180, -150, 200, 300, -250, 260, 330, -340};
	double rms = 0;
	size_t first = N8;
	for (size_t j = 0; j < N8; j++) {
		rms += big[j] * big[j] / N8;
		if (first == N8 && big[j] * big[j] >= 65520)
			first = j;
	}
	rms = sqrt(rms);
	ck_assert_msg(rms >= 256 && first == 3, "rms %g, first %zu", rms, first);
	double flat[N8];
	for (size_t j = 0; j < N8; j++)
		flat[j] = j & 1 ? -200 : 200;
	const double *rows[2] = {big, flat};
	const char *const want_step[2] = {"square", "sumsq"};
	const emu_op want_op[2] = {EMU_OP_MUL, EMU_OP_ADD};
	const uint64_t want_index[2] = {first, 1};
	for (int k = 0; k < 2; k++) {
		emu_run r;
		rn_run(&r, "storage=fp16", "plain", rows[k], 1, N8, NULL, 0);
		ck_assert_msg(r.be.st.first_set && strcmp(r.be.st.first_step, want_step[k]) == 0 &&
		                  r.be.st.first_op == want_op[k] &&
		                  r.be.st.first_flags == EMU_FLAG_OVERFLOW &&
		                  r.be.st.first_index == want_index[k],
		              "row %d: first %s op %d flags %x index %llu", k, first_step(&r),
		              (int)r.be.st.first_op, r.be.st.first_flags,
		              (unsigned long long)r.be.st.first_index);
		ck_assert_msg(isinf(out_d(&r, MS, 0)) && out_d(&r, RSTD, 0) == 0 &&
		                  r.status >= EMU_ST_INF,
		              "row %d: ms %g rstd %g %s", k, out_d(&r, MS, 0), out_d(&r, RSTD, 0),
		              emu_run_status_name(r.status));
		emu_run_free(&r);
		for (int v = PRESCALED; v <= FP32STATS; v++) {
			rn_run(&r, "storage=fp16", variants[v], rows[k], 1, N8, NULL, 0);
			ck_assert_msg(r.status == EMU_ST_OK && !r.be.st.first_set,
			              "row %d %s: %s, first %s", k, variants[v],
			              emu_run_status_name(r.status), first_step(&r));
			ck_assert_msg(r.m[Y].rel_err < 2e-3 && r.m[DX].rel_err < 1e-2,
			              "row %d %s: y rel %g dx rel %g", k, variants[v],
			              r.m[Y].rel_err, r.m[DX].rel_err);
			emu_run_free(&r);
		}
	}
}
END_TEST

/* A zero row. eps = 1e-8 is 0 in fp16, so plain's rsqrt(0 + 0) = inf with
 * divbyzero and x̂ = 0 · inf = NaN; eps = 1e-6 (17·2^-24 in fp16) keeps it
 * finite and y = 0, as is the truth. prescaled divides by s = 0: NaN,
 * invalid, at "prescale", whatever eps. fp32stats holds 1e-8 in fp32. */
START_TEST(test_zero_row)
{
	double x[N8] = {0};
	emu_kparam e8[1] = {{"eps", 1e-8}}, e6[1] = {{"eps", 1e-6}};
	emu_run r;

	rn_run(&r, "storage=fp16", "plain", x, 1, N8, e8, 1);
	ck_assert_msg(r.status == EMU_ST_NAN && r.be.st.first_set &&
	                  strcmp(r.be.st.first_step, "rsqrt") == 0 &&
	                  r.be.st.first_op == EMU_OP_RSQRT &&
	                  r.be.st.first_flags == EMU_FLAG_DIVBYZERO,
	              "plain eps 1e-8: %s, first %s flags %x", emu_run_status_name(r.status),
	              first_step(&r), r.be.st.first_flags);
	ck_assert(isinf(out_d(&r, RSTD, 0)) && isnan(out_d(&r, Y, 0)) && isnan(out_d(&r, DX, 0)));
	emu_run_free(&r);

	rn_run(&r, "storage=fp16", "plain", x, 1, N8, e6, 1);
	ck_assert_msg(r.status == EMU_ST_OK && !r.be.st.first_set, "plain eps 1e-6: %s, first %s",
	              emu_run_status_name(r.status), first_step(&r));
	ck_assert_msg(fabs(out_d(&r, RSTD, 0) * sqrt(17 * ldexp(1, -24)) - 1) < ldexp(1, -10),
	              "rstd %g", out_d(&r, RSTD, 0));
	for (size_t j = 0; j < N8; j++)
		ck_assert(out_d(&r, Y, j) == 0);
	emu_run_free(&r);

	for (int k = 0; k < 2; k++) {
		rn_run(&r, "storage=fp16", "prescaled", x, 1, N8, k ? e6 : e8, 1);
		ck_assert_msg(r.status == EMU_ST_NAN && r.be.st.first_set &&
		                  strcmp(r.be.st.first_step, "prescale") == 0 &&
		                  r.be.st.first_op == EMU_OP_DIV &&
		                  r.be.st.first_flags == EMU_FLAG_INVALID,
		              "prescaled: %s, first %s flags %x", emu_run_status_name(r.status),
		              first_step(&r), r.be.st.first_flags);
		emu_run_free(&r);
	}

	rn_run(&r, "storage=fp16", "fp32stats", x, 1, N8, e8, 1);
	ck_assert_msg(r.status == EMU_ST_OK && !r.be.st.first_set, "fp32stats: %s, first %s",
	              emu_run_status_name(r.status), first_step(&r));
	ck_assert(isfinite(out_d(&r, RSTD, 0)) && out_d(&r, Y, 0) == 0);
	emu_run_free(&r);
}
END_TEST

/* A constant row c: mean(x²) = c², so y = c / sqrt(c² + eps) · g, within
 * eps/(2c²) ≤ 3.2e-5 of sign(c)·g for |c| ≥ 0.125: within an ulp of the
 * storage format at |g| (g a power of two). N = 4 keeps 4·100² under fp16's
 * 65504 for plain. */
START_TEST(test_constant_row)
{
	static const char *const specs[] = {"storage=fp16", "storage=bf16",
	                                    "storage=fp16,compute=fp32"};
	static const double cs[] = {3, -0.75, 100, -0.125};
	static const double gs[] = {1, 0.5};
	enum { N4 = 4 };
	for (size_t s = 0; s < ARRAY_SIZE(specs); s++) {
		emu_policy pol;
		char err[200];
		ck_assert(emu_policy_parse(specs[s], &pol, err, sizeof err) == EMU_OK);
		for (size_t c = 0; c < ARRAY_SIZE(cs); c++)
			for (size_t gi = 0; gi < ARRAY_SIZE(gs); gi++)
				for (int v = 0; v < 3; v++) {
					double x[N4];
					for (int j = 0; j < N4; j++)
						x[j] = cs[c];
					emu_kparam p[1] = {{"g", gs[gi]}};
					emu_run r;
					rn_run(&r, specs[s], variants[v], x, 1, N4, p, 1);
					double want = copysign(gs[gi], cs[c]);
					double ulp = ldexp(gs[gi], 1 - pol.storage.p);
					ck_assert_msg(r.status == EMU_ST_OK, "%s %s c %g: %s",
					              specs[s], variants[v], cs[c],
					              emu_run_status_name(r.status));
					for (int j = 0; j < N4; j++)
						ck_assert_msg(fabs(out_d(&r, Y, j) - want) <= ulp,
						              "%s %s c %g g %g: y %a want %a",
						              specs[s], variants[v], cs[c], gs[gi],
						              out_d(&r, Y, j), want);
					emu_run_free(&r);
				}
	}
}
END_TEST

/* The backward pass against its formula in binary64, on benign rows with
 * fp32 storage and compute: dx_j = r·(g·dy_j − x̂_j·mean(g·dy·x̂)), dg_j =
 * Σ_rows dy_j·x̂_j, with dy = ±1 from the seed as the kernel draws it. */
START_TEST(test_backward_formula)
{
	enum { R = 3, N = 16 };
	const double g = 0.75, eps = 1e-6;
	double x[R * N], dxw[R * N], dgw[N] = {0}, yw[R * N];
	for (size_t k = 0; k < R * N; k++)
		x[k] = 0.3 + 4.0 * ((double)(t_rand(71, k) >> 11) / 9007199254740992.0 - 0.5);
	for (size_t r = 0; r < R; r++) {
		double ss = 0, m = 0, dy[N];
		for (size_t j = 0; j < N; j++)
			ss += x[r * N + j] * x[r * N + j];
		double rs = 1 / sqrt(ss / N + eps);
		for (size_t j = 0; j < N; j++) {
			dy[j] = emu_sr_bits(1, r * N + j) & 1 ? -1.0 : 1.0; /* emu_kin seed 1 */
			m += g * dy[j] * x[r * N + j] * rs / N;
		}
		for (size_t j = 0; j < N; j++) {
			double xh = x[r * N + j] * rs;
			yw[r * N + j] = xh * g;
			dxw[r * N + j] = rs * (g * dy[j] - xh * m);
			dgw[j] += dy[j] * xh;
		}
	}
	emu_kparam p[2] = {{"g", g}, {"eps", eps}};
	for (int v = 0; v < 3; v++) {
		emu_run r;
		rn_run(&r, "storage=fp32", variants[v], x, R, N, p, 2);
		ck_assert(r.status == EMU_ST_OK && !r.be.st.first_set);
		for (size_t k = 0; k < R * N; k++) {
			ck_assert_msg(fabs(out_d(&r, Y, k) - yw[k]) <= 1e-5 * fabs(yw[k]) + 1e-6,
			              "%s y[%zu] %g want %g", variants[v], k, out_d(&r, Y, k),
			              yw[k]);
			ck_assert_msg(fabs(out_d(&r, DX, k) - dxw[k]) <= 1e-5 * fabs(dxw[k]) + 1e-5,
			              "%s dx[%zu] %g want %g", variants[v], k, out_d(&r, DX, k),
			              dxw[k]);
		}
		for (size_t j = 0; j < N; j++)
			ck_assert_msg(fabs(out_d(&r, DG, j) - dgw[j]) <= 1e-5 * fabs(dgw[j]) + 1e-5,
			              "%s dg[%zu] %g want %g", variants[v], j, out_d(&r, DG, j),
			              dgw[j]);
		emu_run_free(&r);
	}
}
END_TEST

/* Parameters: an unknown variant and a negative eps are errors that name
 * them. */
START_TEST(test_params)
{
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse("storage=fp16,compute=fp32", &pol, err, sizeof err) == EMU_OK);
	double x[N8];
	for (int j = 0; j < N8; j++)
		x[j] = 0.25 * j - 1;
	emu_kin in = {x, 1, N8, NULL, 0, 1, NULL, 0};
	emu_run r;
	ck_assert(emu_run_kernel(&emu_kernel_rmsnorm, &pol, "layer", &in, EMU_BE_FAST, &r, err,
	                         sizeof err) != 0);
	ck_assert_msg(strstr(err, "layer") != NULL, "%s", err);
	emu_run_free(&r);
	emu_kparam p[1] = {{"eps", -1}};
	in.params = p;
	in.nparams = 1;
	ck_assert(emu_run_kernel(&emu_kernel_rmsnorm, &pol, "plain", &in, EMU_BE_FAST, &r, err,
	                         sizeof err) != 0);
	ck_assert_msg(strstr(err, "eps=-1") != NULL, "%s", err);
	emu_run_free(&r);
}
END_TEST

Suite *suite_rmsnorm(void)
{
	Suite *s = suite_create("rmsnorm");
	TCase *tc = tcase_create("numerics");
	tcase_add_test(tc, test_fp16_overflow);
	tcase_add_test(tc, test_zero_row);
	tcase_add_test(tc, test_constant_row);
	tcase_add_test(tc, test_backward_formula);
	tcase_add_test(tc, test_params);
	suite_add_tcase(s, tc);
	return s;
}
