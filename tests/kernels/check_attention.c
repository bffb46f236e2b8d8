/*
 * check_attention.c — the attention kernel's known answers and its claims:
 *   - online == naive: with every format fp32 and one key block, L bit for
 *     bit (the same max, the same sum in the same order, the same log) and
 *     O within 8·2^-24·max|V| (naive divides P before P·V, online O after:
 *     24 keys, each order's error below about (n + 2)·u·max|V| in theory,
 *     measured 4); with 5-key blocks, L within 4 ulps and O within
 *     16·2^-24·max|V|;
 *   - uniform attention over equal keys gives O = the mean of V exactly
 *     (every e_j is exp(0) = 1, the sum is the key count, a power of two);
 *   - causal: the first query sees only the first key, so O_0 = V_0 and
 *     L_0 = S_00 exactly, whatever the later rows hold;
 *   - fp8: O and L bit for bit an independent computation in C floats
 *     (binary32 operations, fmaf, exp and log correctly rounded by MPFR at
 *     24 bits) from emu_quantize's e4m3 values and scales, with and without
 *     the Hadamard transform;
 *   - backward (naive and online): dQ, dK, dV within 1e-5 of central
 *     differences of Σ dO ∘ O computed in binary64 from the definition;
 *   - fp8:bwd: dQ, dK, dV, amax_ds and ds_lost bit for bit an independent
 *     C-float computation of its order (dS in e5m2 and e4m3); its forward
 *     outputs fp8's bit for bit; its truth of the original inputs the
 *     unquantised gradients (online:bwd's truth) and its errors against them
 *     bounded, smaller with dS in e4m3 than e5m2, also masked, with
 *     seq_q < seq_k and per-tensor or wider tiles; ds_lost with a static
 *     dS scale too small; its refusals (:tc, hadamard, do_fmt, ds_scale);
 *   - :tc under a Tensor Core model of one RNE product per block equals
 *     the sequential variants bit for bit (the model sits in the GEMMs);
 *   - the claim that the online softmax is as accurate as the two-pass
 *     one: O's and L's normwise errors against the truth, naive against
 *     online over seeds and formats, printed and bounded.
 * The fast == exact agreement is check_kernels.c's (every registered kernel).
 */
#include <inttypes.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"

enum { O_OUT, L_OUT };

typedef struct {
	emu_run r;
	emu_policy pol;
} att_result;

static void att_run(att_result *a, const char *spec, const char *variant, const double *x,
                    size_t rows, size_t cols, const emu_kparam *p, size_t np, emu_be_kind kind)
{
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &a->pol, err, sizeof err) == EMU_OK, "%s", err);
	emu_kin in = {x, rows, cols, p, np, 1, NULL, 0};
	ck_assert_msg(emu_run_kernel(&emu_kernel_attention, &a->pol, variant, &in, kind, &a->r, err,
	                             sizeof err) == 0,
	              "%s: %s", variant, err);
	ck_assert(a->r.out.n >= 2 && strcmp(a->r.out.item[O_OUT].name, "O") == 0 &&
	          strcmp(a->r.out.item[L_OUT].name, "L") == 0);
}

static double out(const att_result *a, int item, size_t j)
{
	return emu_kout_d(NULL, &a->r.out.item[item], j);
}

/* |a − b| in ulps of fp32 at b */
static double ulps32(double a, double b)
{
	int e;
	frexp(b, &e);
	return fabs(a - b) / ldexp(1, e - 24);
}

/* |a − b| in units of 2^-24 · vmax: O is a convex combination of V's rows,
 * so its rounding errors scale with max |V|, not with |O| (which cancels) */
static double units(double a, double b, double vmax)
{
	return fabs(a - b) / (0x1p-24 * vmax);
}

/* x rounded to nearest even in f */
static double rnd(const char *f, double x)
{
	emu_env env = EMU_ENV_DEFAULT;
	return emu_decode(t_fmt(f), emu_from_double(t_fmt(f), x, &env).bits);
}

/* rows x 3d of normal-ish values in [-X, X) drawn from (stream, i), held in fp32 */
static void fill(double *x, size_t n, double X, uint64_t stream)
{
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(X * ((double)(t_rand(stream, i) >> 11) * 0x1p-52 - 1));
}

/* sink=G sets key 0 so that query 0's logit for it is G: with the other
 * logits small, L = log Σ exp(s_j) is G plus a little; and fp8's p_mass, the
 * flushed share of l, lies in [0, 1], 0 where nothing is flushed. */
START_TEST(test_sink)
{
	enum { R = 64, D = 16 };
	double x[R * 3 * D];
	for (size_t i = 0; i < ARRAY_SIZE(x); i++)
		x[i] = (double)((i * 7919) % 41) / 80 - 0.25; /* in [−0.25, 0.25] */
	emu_kparam p[2] = {{"seq_q", 1}, {"sink", 20}};
	att_result a;
	att_run(&a, "storage=fp32", "naive", x, R, 3 * D, p, 2, EMU_BE_FAST);
	/* the other 63 logits are at most 16·0.0625·0.25 = 0.25: L − 20 < 64·e^0.25·e^-20 */
	ck_assert_msg(out(&a, L_OUT, 0) >= 20 - 1e-5 && out(&a, L_OUT, 0) - 20 < 1e-6, "L = %.9g",
	              out(&a, L_OUT, 0));
	emu_run_free(&a.r);
	p[1].value = 0;
	att_run(&a, "storage=bf16,compute=fp32", "fp8", x, R, 3 * D, p, 2, EMU_BE_FAST);
	ck_assert(a.r.out.n >= 4 && strcmp(a.r.out.item[3].name, "p_mass") == 0);
	ck_assert_msg(emu_kout_d(NULL, &a.r.out.item[3], 0) == 0, "no sink: p_mass %g",
	              emu_kout_d(NULL, &a.r.out.item[3], 0));
	emu_run_free(&a.r);
	p[1].value = 14;
	att_run(&a, "storage=bf16,compute=fp32", "fp8", x, R, 3 * D, p, 2, EMU_BE_FAST);
	double pm = emu_kout_d(NULL, &a.r.out.item[3], 0),
	       pl = emu_kout_d(NULL, &a.r.out.item[2], 0);
	ck_assert_msg(pl > 0 && pm > 0 && pm < 1, "sink 14: %g flushed, p_mass %g", pl, pm);
	emu_run_free(&a.r);
	t_count("attention: sink sets the logit; p_mass", 4);
}
END_TEST

START_TEST(test_online_matches_naive)
{
	enum { NQ = 24, D = 8, COLS = 3 * D };
	double x[NQ * COLS];
	double worst_o1 = 0, worst_on = 0, worst_ln = 0;
	for (uint64_t seed = 0; seed < 8; seed++) {
		fill(x, NQ * COLS, 3, 100 + seed);
		for (int blocks = 0; blocks < 2; blocks++) {
			emu_kparam p[] = {{"block_k", blocks ? 5 : NQ}};
			att_result nv, on;
			att_run(&nv, "storage=fp32", "naive", x, NQ, COLS, p, 1, EMU_BE_FAST);
			att_run(&on, "storage=fp32", "online", x, NQ, COLS, p, 1, EMU_BE_FAST);
			for (size_t i = 0; i < NQ; i++) {
				double a = out(&on, L_OUT, i), b = out(&nv, L_OUT, i);
				if (!blocks)
					ck_assert_msg(a == b,
					              "seed %" PRIu64 " L[%zu]: online %a naive %a",
					              seed, i, a, b);
				else
					worst_ln = fmax(worst_ln, ulps32(a, b));
			}
			for (size_t j = 0; j < NQ * D; j++) {
				double u = units(out(&on, O_OUT, j), out(&nv, O_OUT, j), 3);
				if (blocks)
					worst_on = fmax(worst_on, u);
				else
					worst_o1 = fmax(worst_o1, u);
			}
			emu_run_free(&nv.r);
			emu_run_free(&on.r);
		}
	}
	printf("attention: online vs naive, fp32: one block L bit for bit, O %.3g; "
	       "5-key blocks L %.3g ulps, O %.3g (units of 2^-24 max|V|)\n",
	       worst_o1, worst_ln, worst_on);
	ck_assert_msg(worst_o1 <= 8, "one block: O %g units apart", worst_o1);
	ck_assert_msg(worst_ln <= 4 && worst_on <= 16, "blocks: L %g ulps, O %g units apart",
	              worst_ln, worst_on);
	t_count("attention: online == naive (fp32, one block: L bit for bit)", 8 * 2);
}
END_TEST

/* Every key row equal: S is constant along a row, each e_j = exp(0) = 1,
 * l = n and O = Σ V_j / n, exact for integer V and n a power of two. */
START_TEST(test_uniform_mean)
{
	enum { NQ = 8, D = 4, COLS = 3 * D };
	static const char *const vars[] = {"naive", "online", "naive:bwd"};
	static const char *const specs[] = {"storage=fp32", "storage=fp16,compute=fp32",
	                                    "storage=bf16", "storage=fp16"};
	double x[NQ * COLS];
	int n = 0;
	for (size_t i = 0; i < NQ; i++)
		for (size_t c = 0; c < D; c++) {
			x[i * COLS + c] = (double)((int)(t_rand(7, i * D + c) % 9) - 4) / 4;
			x[i * COLS + D + c] = (double)c - 1.5; /* every key the same */
			x[i * COLS + 2 * D + c] = (double)((int)(t_rand(8, i * D + c) % 33) - 16);
		}
	for (size_t s = 0; s < ARRAY_SIZE(specs); s++)
		for (size_t v = 0; v < ARRAY_SIZE(vars); v++) {
			emu_kparam p[] = {{"block_k", 3}};
			att_result a;
			att_run(&a, specs[s], vars[v], x, NQ, COLS, p, 1, EMU_BE_FAST);
			for (size_t i = 0; i < NQ; i++)
				for (size_t c = 0; c < D; c++) {
					double mean = 0;
					for (size_t j = 0; j < NQ; j++)
						mean += x[j * COLS + 2 * D + c];
					mean /= NQ;
					double o = out(&a, O_OUT, i * D + c);
					ck_assert_msg(o == mean, "%s %s O[%zu][%zu] = %a, mean %a",
					              specs[s], vars[v], i, c, o, mean);
				}
			emu_run_free(&a.r);
			n++;
		}
	t_count("attention: equal keys give O = mean of V exactly", (uint64_t)n);
}
END_TEST

/* Causal: query 0 sees key 0 alone: P = exp(0)/1 = 1, O_0 = V_0, L_0 = m. */
START_TEST(test_causal_first_row)
{
	enum { NQ = 6, D = 4, COLS = 3 * D };
	static const char *const vars[] = {"naive", "online", "naive:bwd"};
	double x[NQ * COLS];
	int n = 0;
	fill(x, NQ * COLS, 2, 11);
	for (size_t v = 0; v < ARRAY_SIZE(vars); v++)
		for (int change = 0; change < 2; change++) {
			if (change) /* the later rows do not matter to query 0 */
				for (size_t j = COLS; j < NQ * COLS; j++)
					x[j] = -x[j] * 3;
			emu_kparam p[] = {{"causal", 1}, {"block_k", 4}};
			att_result a, nc;
			att_run(&a, "storage=bf16,compute=fp32", vars[v], x, NQ, COLS, p, 2,
			        EMU_BE_FAST);
			att_run(&nc, "storage=bf16,compute=fp32", vars[v], x, NQ, COLS, p + 1, 1,
			        EMU_BE_FAST);
			for (size_t c = 0; c < D; c++) {
				double v0 = rnd("bf16", x[2 * D + c]);
				ck_assert_msg(out(&a, O_OUT, c) == v0, "%s: O[0][%zu] = %a, V %a",
				              vars[v], c, out(&a, O_OUT, c), v0);
			}
			/* L_0 = S_00 = (q_0·k_0)·scale, computed here in the same order */
			float acc = 0;
			for (size_t c = 0; c < D; c++) {
				acc = fmaf((float)rnd("bf16", x[c]), (float)rnd("bf16", x[D + c]),
				           acc);
			}
			double s00 = (double)(acc * 0.5f);
			ck_assert_msg(out(&a, L_OUT, 0) == s00, "%s: L[0] = %a, S_00 %a", vars[v],
			              out(&a, L_OUT, 0), s00);
			/* without the mask row 0 sees every key */
			ck_assert(out(&nc, L_OUT, 0) > s00);
			emu_run_free(&a.r);
			emu_run_free(&nc.r);
			n++;
		}
	t_count("attention: causal first query attends only to itself", (uint64_t)n);
}
END_TEST

/* binary32 exp and log, correctly rounded (values far from fp32's ends) */
static float cr_exp(float x, bool log_)
{
	mpfr_t t;
	mpfr_init2(t, 24);
	mpfr_set_flt(t, x, MPFR_RNDN);
	if (log_)
		mpfr_log(t, t, MPFR_RNDN);
	else
		mpfr_exp(t, t, MPFR_RNDN);
	float r = mpfr_get_flt(t, MPFR_RNDN);
	mpfr_clear(t);
	return r;
}

/*
 * The fp8 variant's order (docs/kernels-attention.md) written again in C
 * floats from emu_quantize's outputs: every format fp32, e4m3 for P.
 */
static void fp8_reference(const double *x, size_t nq, size_t d, size_t B, bool had, double *O,
                          double *L)
{
	size_t cols = 3 * d, nk = nq;
	double *t[3];
	emu_qtensor q[3];
	for (int k = 0; k < 3; k++) {
		t[k] = malloc(nq * d * sizeof *t[k]);
		for (size_t i = 0; i < nq; i++)
			for (size_t c = 0; c < d; c++)
				t[k][i * d + c] = x[i * cols + (size_t)k * d + c];
		char spec[128], err[160];
		snprintf(spec, sizeof spec, "elem=e4m3,scale=fp32,rule=fp32,block=%zux0,rht=%s", B,
		         had && k < 2 ? "all" : "no");
		emu_recipe r;
		ck_assert_msg(emu_recipe_parse(spec, &r, err, sizeof err) == EMU_OK, "%s", err);
		emu_qpart part = {0, nq, 1, NAN, (uint64_t)k * nq * d};
		ck_assert(emu_quantize_part(&r, EMU_ROLE_ACT, false, t[k], nq, d, &part, &q[k]) ==
		          0);
	}
	float scale = (float)(1 / sqrt((double)d)), ps = 448;
	float *s = malloc(nk * sizeof *s), *e = malloc(nk * sizeof *e);
	for (size_t i = 0; i < nq; i++) {
		float m = 0, l = 0, o[64] = {0};
		for (size_t j0 = 0, b = 0; j0 < nk; j0 += B, b++) {
			size_t j1 = j0 + B < nk ? j0 + B : nk;
			float sc = (float)q[0].d[i / B] * (float)q[1].d[b];
			sc = sc * scale;
			for (size_t j = j0; j < j1; j++) {
				float acc = 0;
				for (size_t c = 0; c < d; c++)
					acc = fmaf((float)q[0].q[i * d + c],
					           (float)q[1].q[j * d + c], acc);
				s[j] = acc * sc;
			}
			float mb = s[j0], alpha = 1;
			for (size_t j = j0 + 1; j < j1; j++)
				mb = fmaxf(mb, s[j]);
			if (j0) {
				mb = fmaxf(m, mb);
				alpha = cr_exp(m - mb, false);
			}
			m = mb;
			for (size_t j = j0; j < j1; j++)
				e[j] = cr_exp(s[j] - m, false);
			if (j0)
				l = l * alpha;
			for (size_t j = j0; j < j1; j++)
				l = l + e[j];
			float vs = (float)q[2].d[b] / ps, part[64];
			for (size_t c = 0; c < d; c++) {
				float acc = 0;
				for (size_t j = j0; j < j1; j++) {
					float p8 = (float)rnd("e4m3", (double)(e[j] * ps));
					acc = fmaf(p8, (float)q[2].q[j * d + c], acc);
				}
				part[c] = acc * vs;
			}
			for (size_t c = 0; c < d; c++)
				o[c] = j0 ? o[c] * alpha + part[c] : part[c];
		}
		for (size_t c = 0; c < d; c++)
			O[i * d + c] = (double)(o[c] / l);
		L[i] = (double)(m + cr_exp(l, true));
	}
	free(s);
	free(e);
	for (int k = 0; k < 3; k++) {
		emu_qtensor_free(&q[k]);
		free(t[k]);
	}
}

START_TEST(test_fp8_reference)
{
	enum { NQ = 20, D = 16, COLS = 3 * D, B = 8 };
	double x[NQ * COLS], O[NQ * D], L[NQ];
	uint64_t n = 0;
	for (int had = 0; had < 2; had++)
		for (uint64_t seed = 0; seed < 4; seed++) {
			fill(x, NQ * COLS, 4, 200 + seed);
			emu_kparam p[] = {{"block_k", B}, {"hadamard", had}};
			att_result a;
			att_run(&a, "storage=fp32", "fp8", x, NQ, COLS, p, 2, EMU_BE_FAST);
			fp8_reference(x, NQ, D, B, had, O, L);
			for (size_t j = 0; j < NQ * D; j++)
				ck_assert_msg(out(&a, O_OUT, j) == O[j],
				              "hadamard %d seed %" PRIu64
				              " O[%zu]: kernel %a reference %a",
				              had, seed, j, out(&a, O_OUT, j), O[j]);
			for (size_t i = 0; i < NQ; i++)
				ck_assert_msg(out(&a, L_OUT, i) == L[i],
				              "hadamard %d seed %" PRIu64
				              " L[%zu]: kernel %a reference %a",
				              had, seed, i, out(&a, L_OUT, i), L[i]);
			emu_run_free(&a.r);
			n++;
		}
	t_count("attention: fp8 == independent C-float computation from emu_quantize", n);
}
END_TEST

/*
 * fp8:bwd's order (docs/kernels-attention.md, after cuDNN's FP8 SDPA
 * backward) written again in C floats from emu_quantize's outputs and the
 * forward reference's L: every format fp32, e4m3 for P, DF (e5m2 or e4m3)
 * for dO and dS, one scale per tensor for dO and dS, tiles of B rows for
 * Q, K and V. Outputs dQ, dK, dV (nq × d each) and dS's amax.
 */
static void fp8_bwd_reference(const double *x, size_t nq, size_t d, size_t B, const char *DF,
                              const double *Lr, const double *Or, double *dQ, double *dK,
                              double *dV, double *amax_out, double *lost_out)
{
	size_t cols = 3 * d, nk = nq, nt = (nq + B - 1) / B;
	double *t[4];
	emu_qtensor q[4];
	for (int k = 0; k < 4; k++) {
		t[k] = malloc(nq * d * sizeof *t[k]);
		for (size_t i = 0; i < nq; i++)
			for (size_t c = 0; c < d; c++)
				t[k][i * d + c] =
				    k < 3 ? x[i * cols + (size_t)k * d + c]
				          : (emu_sr_bits(1, i * d + c) & 1 ? -1.0 : 1.0);
		char spec[128], err[160];
		snprintf(spec, sizeof spec, "elem=%s,scale=fp32,rule=fp32,block=%zux0,rht=no",
		         k < 3 ? "e4m3" : DF, k < 3 ? B : 0);
		emu_recipe r;
		ck_assert_msg(emu_recipe_parse(spec, &r, err, sizeof err) == EMU_OK, "%s", err);
		emu_qpart part = {0, nq, 1, NAN, k < 3 ? (uint64_t)k * nq * d : 0};
		ck_assert(emu_quantize_part(&r, EMU_ROLE_ACT, false, t[k], nq, d, &part, &q[k]) ==
		          0);
	}
	const double *q8 = q[0].q, *k8 = q[1].q, *v8 = q[2].q, *do8 = q[3].q;
	float scale = (float)(1 / sqrt((double)d)), ps = 448, ddo = (float)q[3].d[0];
	float *P = malloc(nq * nk * sizeof *P), *P8 = malloc(nq * nk * sizeof *P8),
	      *dS = malloc(nq * nk * sizeof *dS), *dS8 = malloc(nq * nk * sizeof *dS8);
	for (size_t i = 0; i < nq; i++)
		for (size_t j = 0; j < nk; j++) {
			float acc = 0;
			for (size_t c = 0; c < d; c++)
				acc = fmaf((float)q8[i * d + c], (float)k8[j * d + c], acc);
			float sc = (float)q[0].d[i / B] * (float)q[1].d[j / B];
			sc = sc * scale;
			float s = acc * sc;
			P[i * nk + j] = cr_exp(s - (float)Lr[i], false);
			P8[i * nk + j] = (float)rnd("e4m3", (double)(P[i * nk + j] * ps));
		}
	float fv = ddo / ps;
	for (size_t j = 0; j < nk; j++)
		for (size_t c = 0; c < d; c++) {
			float acc = 0;
			for (size_t i = 0; i < nq; i++)
				acc = fmaf(P8[i * nk + j], (float)do8[i * d + c], acc);
			dV[j * d + c] = (double)(acc * fv);
		}
	float amax = 0;
	for (size_t i = 0; i < nq; i++) {
		float D = 0;
		for (size_t c = 0; c < d; c++)
			D = fmaf((float)do8[i * d + c], (float)Or[i * d + c], D);
		D = D * ddo;
		for (size_t j = 0; j < nk; j++) {
			float acc = 0;
			for (size_t c = 0; c < d; c++)
				acc = fmaf((float)do8[i * d + c], (float)v8[j * d + c], acc);
			float f = ddo * (float)q[2].d[j / B];
			float dp = acc * f;
			float ds = (dp - D) * P[i * nk + j];
			ds = ds * scale;
			dS[i * nk + j] = ds;
			amax = fmaxf(amax, fabsf(ds));
		}
	}
	float s = amax > 0 ? (float)(t_fmt(DF)->max / (double)amax) : 1, lost = 0;
	for (size_t i = 0; i < nq * nk; i++) {
		dS8[i] = (float)rnd(DF, (double)(dS[i] * s));
		lost += dS[i] != 0 && dS8[i] == 0;
	}
	for (size_t i = 0; i < nq; i++)
		for (size_t c = 0; c < d; c++) {
			float g = 0;
			for (size_t tt = 0; tt < nt; tt++) {
				float acc = 0, f = (float)q[1].d[tt] / s;
				for (size_t j = tt * B; j < nk && j < (tt + 1) * B; j++)
					acc = fmaf(dS8[i * nk + j], (float)k8[j * d + c], acc);
				g = tt ? g + acc * f : acc * f;
			}
			dQ[i * d + c] = (double)g;
		}
	for (size_t j = 0; j < nk; j++)
		for (size_t c = 0; c < d; c++) {
			float g = 0;
			for (size_t tt = 0; tt < nt; tt++) {
				float acc = 0, f = (float)q[0].d[tt] / s;
				for (size_t i = tt * B; i < nq && i < (tt + 1) * B; i++)
					acc = fmaf(dS8[i * nk + j], (float)q8[i * d + c], acc);
				g = tt ? g + acc * f : acc * f;
			}
			dK[j * d + c] = (double)g;
		}
	*amax_out = (double)amax;
	*lost_out = (double)lost;
	free(P);
	free(P8);
	free(dS);
	free(dS8);
	for (int k = 0; k < 4; k++) {
		emu_qtensor_free(&q[k]);
		free(t[k]);
	}
}

/* The output named name of a run (its index), asserted present. */
static int item(const att_result *a, const char *name)
{
	for (int i = 0; i < a->r.out.n; i++)
		if (!strcmp(a->r.out.item[i].name, name))
			return i;
	ck_abort_msg("no output %s", name);
	return -1;
}

/* fp8:bwd bit for bit the C-float computation above, dO and dS in e5m2
 * and in e4m3, two tiles of 8 rows (the second ragged) */
START_TEST(test_fp8_bwd_reference)
{
	enum { NQ = 13, D = 8, COLS = 3 * D, B = 8 }; /* scale 1/√8: not a power of two */
	static const char *const df[] = {"e5m2", "e4m3"};
	double x[NQ * COLS], O[NQ * D], L[NQ], g[3][NQ * D], amax, lost;
	uint64_t n = 0;
	for (int f = 0; f < 2; f++)
		for (uint64_t seed = 0; seed < 4; seed++) {
			fill(x, NQ * COLS, 2, 800 + seed);
			emu_kparam p[] = {{"block_k", B}, {"do_fmt", f ? 4 : 5}};
			att_result a;
			att_run(&a, "storage=fp32", "fp8:bwd", x, NQ, COLS, p, 2, EMU_BE_FAST);
			fp8_reference(x, NQ, D, B, false, O, L);
			fp8_bwd_reference(x, NQ, D, B, df[f], L, O, g[0], g[1], g[2], &amax, &lost);
			for (int k = 0; k < 3; k++) {
				char nm[3] = {'d', "QKV"[k], 0};
				int it = item(&a, nm);
				for (size_t j = 0; j < NQ * D; j++)
					ck_assert_msg(out(&a, it, j) == g[k][j],
					              "%s seed %" PRIu64
					              " %s[%zu]: kernel %a reference %a",
					              df[f], seed, nm, j, out(&a, it, j), g[k][j]);
			}
			ck_assert_msg(out(&a, item(&a, "amax_ds"), 0) == amax, "amax_ds %a, %a",
			              out(&a, item(&a, "amax_ds"), 0), amax);
			ck_assert(out(&a, item(&a, "ds_lost"), 0) == lost);
			emu_run_free(&a.r);
			n++;
		}
	t_count("attention: fp8:bwd == independent C-float computation", n);
}
END_TEST

/*
 * fp8's flushed probability mass per row (issue 23): p_lost counts the P̃
 * its e4m3 cast flushed; p_lost_mass_max and _mean say how much of a row's
 * mass they carried. Each flushed P̃ is below 2^-10/448 of the row's max
 * (whose own P̃ is 1, so a row's mass sums to at least 1): a row's share is
 * at most its count times that, the mean at most the max, and the max at
 * most the rows' sum. No flush, no mass; the exact backend agrees.
 */
START_TEST(test_fp8_lost_mass)
{
	enum { NK = 256, D = 16, COLS = 3 * D, NQ = 16 };
	static double x[NK * COLS];
	for (int big = 0; big < 2; big++) {
		fill(x, NK * COLS, big ? 4 : 1, 77);
		emu_kparam p[] = {{"seq_q", NQ}, {"scale", 1}};
		att_result a, e;
		att_run(&a, "storage=bf16,compute=fp32", "fp8", x, NK, COLS, p, 2, EMU_BE_FAST);
		att_run(&e, "storage=bf16,compute=fp32", "fp8", x, NK, COLS, p, 2, EMU_BE_EXACT);
		int il = item(&a, "p_lost"), imx = item(&a, "p_lost_mass_max"),
		    imn = item(&a, "p_lost_mass_mean");
		double lost = out(&a, il, 0), mx = out(&a, imx, 0), mean = out(&a, imn, 0);
		if (!big) {
			ck_assert_msg(lost == 0 && mx == 0 && mean == 0, "no flush: %g %g %g", lost, mx,
			              mean);
		} else {
			ck_assert_msg(lost > 0, "inputs of 4: nothing flushed");
			ck_assert_msg(mx > 0 && mx <= lost * 0x1p-10 / 448, "max %g, lost %g", mx, lost);
			ck_assert_msg(mean > 0 && mean <= mx && mx <= mean * NQ * (1 + 0x1p-20),
			              "mean %g, max %g", mean, mx);
		}
		ck_assert_msg(out(&e, item(&e, "p_lost_mass_max"), 0) == mx &&
		                  out(&e, item(&e, "p_lost_mass_mean"), 0) == mean,
		              "exact %g %g, fast %g %g", out(&e, item(&e, "p_lost_mass_max"), 0),
		              out(&e, item(&e, "p_lost_mass_mean"), 0), mx, mean);
		emu_run_free(&a.r);
		emu_run_free(&e.r);
	}
}
END_TEST

/* fp8:bwd's forward is fp8's, bit for bit (O, L, p_lost), under several
 * policies, with the mask, per-tensor and per-tile scales */
START_TEST(test_fp8_bwd_forward)
{
	enum { NQ = 19, D = 8, COLS = 3 * D };
	static const char *const specs[] = {"storage=fp32", "storage=bf16,compute=fp32",
	                                    "storage=fp16,compute=fp32", "storage=bf16"};
	double x[NQ * COLS];
	uint64_t n = 0;
	for (size_t s = 0; s < ARRAY_SIZE(specs); s++)
		for (int causal = 0; causal < 2; causal++)
			for (int tile = 0; tile < 2; tile++) {
				fill(x, NQ * COLS, 3, 900 + s);
				emu_kparam p[] = {
				    {"causal", causal}, {"block_k", 4}, {"tile", tile * 8}};
				att_result a, b;
				att_run(&a, specs[s], "fp8", x, NQ, COLS, p, 3, EMU_BE_FAST);
				att_run(&b, specs[s], "fp8:bwd", x, NQ, COLS, p, 3, EMU_BE_FAST);
				static const char *const outs[] = {"O", "L", "p_lost"};
				for (size_t o = 0; o < 3; o++) {
					int ia = item(&a, outs[o]), ib = item(&b, outs[o]);
					ck_assert(a.r.out.item[ia].n == b.r.out.item[ib].n);
					for (size_t j = 0; j < a.r.out.item[ia].n; j++) {
						double u = out(&a, ia, j), v = out(&b, ib, j);
						ck_assert_msg(
						    u == v || (isnan(u) && isnan(v)),
						    "%s causal %d tile %d %s[%zu]: fp8 %a, "
						    "fp8:bwd %a",
						    specs[s], causal, tile * 8, outs[o], j, u, v);
					}
				}
				emu_run_free(&a.r);
				emu_run_free(&b.r);
				n++;
			}
	t_count("attention: fp8:bwd's forward == fp8's bit for bit", n);
}
END_TEST

/*
 * Against the exact gradients: the truth of the original inputs of fp8:bwd
 * is the unquantised computation (online:bwd's truth, to 256-bit rounding),
 * and the FP8 gradients approach it as the casts get finer: dS in e4m3
 * (3 bits) beats e5m2 (2 bits) on dQ and dK, and every error stays within
 * the FP8 bounds below (bf16 storage, fp32 arithmetic, normal inputs).
 */
START_TEST(test_fp8_bwd_truth)
{
	enum { NQ = 32, D = 16, COLS = 3 * D, SEEDS = 4 };
	static const char *const g3[] = {"dQ", "dK", "dV"};
	double x[NQ * COLS], err[2][3] = {{0}};
	for (uint64_t seed = 0; seed < SEEDS; seed++) {
		fill(x, NQ * COLS, 2, 1000 + seed);
		for (int f = 0; f < 2; f++) {
			emu_kparam p[] = {{"do_fmt", f ? 4 : 5}};
			emu_kin in = {x, NQ, COLS, p,
			              1, 1,  NULL, 0}; /* att_run's seed: the same dO */
			att_result a;
			att_run(&a, "storage=bf16,compute=fp32", "fp8:bwd", x, NQ, COLS, p, 1,
			        EMU_BE_FAST);
			emu_truth t, o;
			char e[200];
			ck_assert(emu_run_truth(&emu_kernel_attention, &a.pol, "fp8:bwd", &in, &t,
			                        e, sizeof e) == 0);
			ck_assert(emu_run_truth(&emu_kernel_attention, &a.pol, "online:bwd", &in,
			                        &o, e, sizeof e) == 0);
			const emu_run *te = emu_truth_e2e(&t), *oe = emu_truth_e2e(&o);
			for (int k = 0; k < 3; k++) {
				const emu_kout_item *ti = &te->out.item[2 + k],
				                    *oi = &oe->out.item[2 + k];
				ck_assert(!strcmp(ti->name, g3[k]) && !strcmp(oi->name, g3[k]));
				for (size_t j = 0; j < ti->n; j++) {
					double u = emu_kout_d(&te->be, ti, j),
					       v = emu_kout_d(&oe->be, oi, j);
					ck_assert_msg(
					    fabs(u - v) <= 1e-30 * (1 + fabs(v)),
					    "truth %s[%zu]: fp8:bwd %.17g online:bwd %.17g", g3[k],
					    j, u, v);
				}
			}
			emu_run_compare(&a.r, &t);
			for (int k = 0; k < 3; k++)
				err[f][k] += a.r.m[item(&a, g3[k])].rel_err / SEEDS;
			emu_truth_free(&t);
			emu_truth_free(&o);
			emu_run_free(&a.r);
		}
	}
	printf("attention: fp8:bwd mean rel err against truth, dS e5m2: dQ %.3e dK %.3e dV %.3e; "
	       "e4m3: dQ %.3e dK %.3e dV %.3e\n",
	       err[0][0], err[0][1], err[0][2], err[1][0], err[1][1], err[1][2]);
	for (int k = 0; k < 3; k++)
		ck_assert_msg(err[0][k] < 0.1 && err[1][k] < 0.08, "%s: e5m2 %g e4m3 %g", g3[k],
		              err[0][k], err[1][k]);
	ck_assert_msg(err[1][0] < err[0][0] && err[1][1] < err[0][1],
	              "e4m3 dS not finer than e5m2: dQ %g %g dK %g %g", err[1][0], err[0][0],
	              err[1][1], err[0][1]);
	t_count("attention: fp8:bwd against the exact gradients (truth)", 2 * SEEDS);
}
END_TEST

/*
 * The mask, fewer queries than keys, per-tensor scales and tiles larger
 * than a block: fp8:bwd's truth is online:bwd's and its gradients stay
 * within FP8's error of it, so every index of the masked and tiled sums
 * (dV and dK from the first query that sees a key, dQ over K's tiles, dK
 * over Q's) is the one the definition has.
 */
START_TEST(test_fp8_bwd_shapes)
{
	enum { R = 32, D = 16, COLS = 3 * D };
	static const char *const g3[] = {"dQ", "dK", "dV"};
	static const struct {
		double causal, seq_q, tile, block_k;
	} cfg[] = {{1, R, 16, 16}, {1, 20, 16, 8}, {0, 20, 0, 16}, {1, R, 0, 4}, {0, R, 16, 8}};
	double x[R * COLS], worst = 0;
	for (size_t c = 0; c < ARRAY_SIZE(cfg); c++) {
		fill(x, R * COLS, 2, 1300 + c);
		emu_kparam p[] = {{"causal", cfg[c].causal},
		                  {"seq_q", cfg[c].seq_q},
		                  {"tile", cfg[c].tile},
		                  {"block_k", cfg[c].block_k}};
		emu_kin in = {x, R, COLS, p, 4, 1, NULL, 0};
		att_result a;
		att_run(&a, "storage=bf16,compute=fp32", "fp8:bwd", x, R, COLS, p, 4, EMU_BE_FAST);
		emu_truth t, o;
		char e[200];
		ck_assert(emu_run_truth(&emu_kernel_attention, &a.pol, "fp8:bwd", &in, &t, e,
		                        sizeof e) == 0);
		ck_assert(emu_run_truth(&emu_kernel_attention, &a.pol, "online:bwd", &in, &o, e,
		                        sizeof e) == 0);
		const emu_run *te = emu_truth_e2e(&t), *oe = emu_truth_e2e(&o);
		for (int k = 0; k < 3; k++) {
			const emu_kout_item *ti = &te->out.item[2 + k], *oi = &oe->out.item[2 + k];
			for (size_t j = 0; j < ti->n; j++) {
				double u = emu_kout_d(&te->be, ti, j),
				       v = emu_kout_d(&oe->be, oi, j);
				ck_assert_msg(
				    fabs(u - v) <= 1e-30 * (1 + fabs(v)),
				    "config %zu truth %s[%zu]: fp8:bwd %.17g online:bwd %.17g", c,
				    g3[k], j, u, v);
			}
		}
		emu_run_compare(&a.r, &t);
		for (int k = 0; k < 3; k++) {
			double r = a.r.m[item(&a, g3[k])].rel_err;
			worst = fmax(worst, r);
			ck_assert_msg(r < 0.12, "config %zu %s: rel err %g", c, g3[k], r);
		}
		emu_truth_free(&t);
		emu_truth_free(&o);
		emu_run_free(&a.r);
	}
	printf("attention: fp8:bwd masked, seq_q < seq_k, tiled: worst rel err %.3e\n", worst);
	t_count("attention: fp8:bwd shapes (mask, seq_q < seq_k, tiles) against truth",
	        ARRAY_SIZE(cfg));
}
END_TEST

/* A static dS scale far too small flushes every dS to zero: ds_lost counts
 * them all and dQ, dK are zero, dV untouched (it does not use dS) */
START_TEST(test_fp8_bwd_ds_lost)
{
	enum { NQ = 8, D = 4, COLS = 3 * D };
	double x[NQ * COLS];
	fill(x, NQ * COLS, 2, 1100);
	emu_kparam p[] = {{"ds_scale", 1e-9}}, p0[] = {{"ds_scale", 0}};
	att_result a, b;
	att_run(&a, "storage=fp32", "fp8:bwd", x, NQ, COLS, p, 1, EMU_BE_FAST);
	att_run(&b, "storage=fp32", "fp8:bwd", x, NQ, COLS, p0, 1, EMU_BE_FAST);
	ck_assert_msg(out(&a, item(&a, "ds_lost"), 0) == NQ * NQ, "ds_lost %g",
	              out(&a, item(&a, "ds_lost"), 0));
	ck_assert(out(&b, item(&b, "ds_lost"), 0) == 0);
	for (size_t j = 0; j < NQ * D; j++) {
		ck_assert(out(&a, item(&a, "dQ"), j) == 0 && out(&a, item(&a, "dK"), j) == 0);
		ck_assert(out(&a, item(&a, "dV"), j) == out(&b, item(&b, "dV"), j));
	}
	emu_run_free(&a.r);
	emu_run_free(&b.r);
	t_count("attention: fp8:bwd ds_lost counts dS flushed by a static scale", 2);
}
END_TEST

/* What fp8:bwd refuses, each with its reason */
START_TEST(test_fp8_bwd_errors)
{
	enum { NQ = 4, D = 4, COLS = 3 * D };
	double x[NQ * COLS];
	fill(x, NQ * COLS, 1, 1200);
	struct {
		const char *variant, *param;
		double value;
		const char *want;
	} bad[] = {
	    {"fp8:bwd:tc", NULL, 0, ":bwd does not combine with :tc"},
	    {"fp8:bwd:tc:h100", NULL, 0, ":bwd does not combine with :tc"},
	    {"fp8:bwd", "hadamard", 1, "fp8:bwd takes hadamard=0"},
	    {"fp8:bwd", "do_fmt", 3, "do_fmt"},
	    {"fp8:bwd", "do_fmt", 4.5, "do_fmt"},
	    {"fp8:bwd", "ds_scale", -1, "ds_scale"},
	    {"fp8:bwdx", NULL, 0, "unknown variant"},
	};
	emu_policy pol;
	char err[300];
	ck_assert(emu_policy_parse("storage=fp32", &pol, err, sizeof err) == EMU_OK);
	for (size_t b = 0; b < ARRAY_SIZE(bad); b++) {
		emu_kparam p[] = {{bad[b].param ? bad[b].param : "causal", bad[b].value}};
		emu_kin in = {x, NQ, COLS, p, 1, 1, NULL, 0};
		emu_run r;
		err[0] = 0;
		int rc = emu_run_kernel(&emu_kernel_attention, &pol, bad[b].variant, &in,
		                        EMU_BE_FAST, &r, err, sizeof err);
		emu_run_free(&r);
		ck_assert_msg(rc != 0 && strstr(err, bad[b].want), "%s %s=%g: rc %d, '%s'",
		              bad[b].variant, bad[b].param ? bad[b].param : "", bad[b].value, rc,
		              err);
	}
	t_count("attention: fp8:bwd's refusals name their reason", ARRAY_SIZE(bad));
}
END_TEST

/*
 * The claim: the online softmax is as accurate as the two-pass one. Both
 * against the truth of the stored inputs (the arithmetic alone), over 6
 * seeds and 4 policies, with logits of spread ~4 and 4 key blocks; the
 * online mean error must stay within 1.5 times the naive one.
 */
START_TEST(test_online_accuracy)
{
	enum { NQ = 32, D = 8, COLS = 3 * D, SEEDS = 6 };
	static const char *const specs[] = {"storage=fp16", "storage=bf16",
	                                    "storage=fp16,compute=fp32",
	                                    "storage=bf16,compute=fp32"};
	double x[NQ * COLS];
	for (size_t s = 0; s < ARRAY_SIZE(specs); s++) {
		double err[2][2] = {{0}}; /* variant × (O, L) */
		for (uint64_t seed = 0; seed < SEEDS; seed++) {
			fill(x, NQ * COLS, 3, 300 + seed);
			emu_kparam p[] = {{"block_k", 8}};
			emu_kin in = {x, NQ, COLS, p, 1, seed, NULL, 0};
			for (int v = 0; v < 2; v++) {
				const char *var = v ? "online" : "naive";
				att_result a;
				att_run(&a, specs[s], var, x, NQ, COLS, p, 1, EMU_BE_FAST);
				emu_truth t;
				char e[200];
				ck_assert(emu_run_truth(&emu_kernel_attention, &a.pol, var, &in, &t,
				                        e, sizeof e) == 0);
				emu_run_compare(&a.r, &t);
				err[v][0] += a.r.m[O_OUT].arith_rel_err / SEEDS;
				err[v][1] += a.r.m[L_OUT].arith_rel_err / SEEDS;
				emu_truth_free(&t);
				emu_run_free(&a.r);
			}
		}
		printf("attention: %-26s mean rel err O naive %.3e online %.3e, L naive %.3e "
		       "online %.3e\n",
		       specs[s], err[0][0], err[1][0], err[0][1], err[1][1]);
		ck_assert_msg(err[1][0] <= 1.5 * err[0][0] && err[1][1] <= 1.5 * err[0][1] + 1e-12,
		              "%s: online O %g L %g, naive O %g L %g", specs[s], err[1][0],
		              err[1][1], err[0][0], err[0][1]);
	}
	t_count("attention: online as accurate as naive (policies x seeds)",
	        ARRAY_SIZE(specs) * SEEDS);
}
END_TEST

/* f(X) = Σ dO ∘ O with O attention's output in binary64, straight from the
 * definition (softmax of the whole row, no max subtracted: the values are small) */
static double ref_f(const double *x, size_t nq, size_t d, bool causal, uint64_t seed)
{
	size_t cols = 3 * d;
	double f = 0, scale = 1 / sqrt((double)d);
	for (size_t i = 0; i < nq; i++) {
		size_t n = causal ? i + 1 : nq;
		double p[64], l = 0;
		for (size_t j = 0; j < n; j++) {
			double sij = 0;
			for (size_t c = 0; c < d; c++)
				sij += x[i * cols + c] * x[j * cols + d + c];
			p[j] = exp(sij * scale);
			l += p[j];
		}
		for (size_t c = 0; c < d; c++) {
			double o = 0;
			for (size_t j = 0; j < n; j++)
				o += p[j] / l * x[j * cols + 2 * d + c];
			f += (emu_sr_bits(seed, i * d + c) & 1 ? -1.0 : 1.0) * o;
		}
	}
	return f;
}

/*
 * The backward pass against central differences of Σ dO ∘ O in binary64:
 * every format fp32, both variants, with and without the causal mask. The
 * kernel's dQ, dK, dV are the gradients with respect to the three column
 * groups of X.
 */
START_TEST(test_backward_fd)
{
	enum { NQ = 6, D = 4, COLS = 3 * D };
	static const char *const vars[] = {"naive:bwd", "online:bwd"};
	double x[NQ * COLS], worst = 0;
	uint64_t n = 0;
	fill(x, NQ * COLS, 1.5, 400);
	for (int causal = 0; causal < 2; causal++)
		for (size_t v = 0; v < ARRAY_SIZE(vars); v++) {
			emu_kparam p[] = {{"causal", causal}, {"block_k", 4}};
			att_result a;
			att_run(&a, "storage=fp32", vars[v], x, NQ, COLS, p, 2, EMU_BE_FAST);
			ck_assert(a.r.out.n == 5 && !strcmp(a.r.out.item[2].name, "dQ") &&
			          !strcmp(a.r.out.item[3].name, "dK") &&
			          !strcmp(a.r.out.item[4].name, "dV"));
			for (size_t i = 0; i < NQ; i++)
				for (size_t g = 0; g < 3; g++)
					for (size_t c = 0; c < D; c++) {
						double h = 1e-5, xs = x[i * COLS + g * D + c];
						x[i * COLS + g * D + c] = xs + h;
						double fp = ref_f(x, NQ, D, causal, 1);
						x[i * COLS + g * D + c] = xs - h;
						double fm = ref_f(x, NQ, D, causal, 1);
						x[i * COLS + g * D + c] = xs;
						double fd = (fp - fm) / (2 * h);
						double k = out(&a, 2 + (int)g, i * D + c);
						worst = fmax(worst, fabs(k - fd));
						ck_assert_msg(
						    fabs(k - fd) <= 1e-5,
						    "%s causal %d d%c[%zu][%zu]: kernel %.9g, "
						    "differences %.9g",
						    vars[v], causal, "QKV"[g], i, c, k, fd);
						n++;
					}
			emu_run_free(&a.r);
		}
	printf("attention: backward against central differences: worst |error| %.3g\n", worst);
	t_count("attention: dQ dK dV against central differences (fp32)", n);
}
END_TEST

/*
 * The Tensor Core path sits in the GEMMs and nowhere else: a model of one
 * product per block, rounded to nearest with 36 extra alignment bits, is an
 * FMA rounded once, so naive:tc, online:tc and fp8:tc under it give the
 * sequential variants' O and L bit for bit (bf16 inputs, fp32 accumulator;
 * online accumulates a block's partial sum into O, where the sequential
 * fold continues from O, and both are one rounding per product here).
 */
START_TEST(test_tc_one_product)
{
	enum { NQ = 20, D = 8, COLS = 3 * D };
	static const char *const base[] = {"naive", "online", "fp8"};
	double x[NQ * COLS];
	uint64_t n = 0;
	for (uint64_t seed = 0; seed < 4; seed++) {
		fill(x, NQ * COLS, 2, 700 + seed);
		for (size_t b = 0; b < ARRAY_SIZE(base); b++) {
			char tc[64];
			snprintf(tc, sizeof tc, "%s:tc:k=1,neab=36,final=rne", base[b]);
			emu_kparam p[] = {{"block_k", 8}};
			att_result a, t;
			att_run(&a, "storage=bf16,accum=fp32", base[b], x, NQ, COLS, p, 1,
			        EMU_BE_FAST);
			att_run(&t, "storage=bf16,accum=fp32", tc, x, NQ, COLS, p, 1, EMU_BE_FAST);
			for (int it = O_OUT; it <= L_OUT; it++)
				for (size_t j = 0; j < a.r.out.item[it].n; j++)
					ck_assert_msg(out(&a, it, j) == out(&t, it, j),
					              "%s seed %" PRIu64
					              " %s[%zu]: %a, sequential %a",
					              tc, seed, a.r.out.item[it].name, j,
					              out(&t, it, j), out(&a, it, j));
			emu_run_free(&a.r);
			emu_run_free(&t.r);
			n++;
		}
	}
	t_count("attention: :tc with one RNE product per block == sequential FMAs", n);
}
END_TEST

Suite *suite_attention(void)
{
	Suite *s = suite_create("attention");
	TCase *tc = tcase_create("attention");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_online_matches_naive);
	tcase_add_test(tc, test_uniform_mean);
	tcase_add_test(tc, test_causal_first_row);
	tcase_add_test(tc, test_fp8_reference);
	tcase_add_test(tc, test_online_accuracy);
	tcase_add_test(tc, test_backward_fd);
	tcase_add_test(tc, test_tc_one_product);
	tcase_add_test(tc, test_fp8_bwd_reference);
	tcase_add_test(tc, test_fp8_bwd_forward);
	tcase_add_test(tc, test_fp8_bwd_truth);
	tcase_add_test(tc, test_fp8_bwd_shapes);
	tcase_add_test(tc, test_fp8_bwd_ds_lost);
	tcase_add_test(tc, test_fp8_bwd_errors);
	tcase_add_test(tc, test_sink);
	tcase_add_test(tc, test_fp8_lost_mass);
	suite_add_tcase(s, tc);
	return s;
}
