/*
 * bench_kernels.c — the kernels end to end, as `nanmap run` runs them
 * (docs/bench.md, tables 5 and 6).
 *
 * Table 5: softmax_ce on 64 rows x 32768 classes, the fast backend
 * (emu_run_kernel, the call `nanmap run --backend fast --no-truth` makes,
 * allocation and status included) against the same loops written in native
 * float (expf, logf, one pass per step as the kernel does them), timed in
 * the same run:
 *   kernel,variant,policy,rows,cols,fast_s,native_s,ratio_native
 * ratio_native = fast_s / native_s (the goal is <= 10; measured, never
 * asserted).
 * Table 6: the exact-format MPFR backend over the fast one on 8 rows x 1024
 * classes; the outputs and flag statistics of the two must agree (a
 * WARNING on stderr otherwise):
 *   kernel,variant,policy,rows,cols,exact_s,fast_s,ratio_exact_fast
 * Times are the thread's CPU seconds (CLOCK_THREAD_CPUTIME_ID), best of the
 * repetitions (at most 3 for table 5: one fast run takes seconds): on a
 * busy machine CPU time is distorted much less than wall time. Tables 5 and
 * 6 run the kernels on one thread (omp_set_num_threads(1)), so a thread's
 * CPU time is all the work. Inputs: N(0, 1) from a fixed seed.
 * Table 6b: the truth backend's exp and dot products that cannot round
 * against the MPFR calls they replace, same data, results compared:
 *   primitive,size,shortcut_s,mpfr_s,ratio_mpfr_shortcut
 * Table 12: the same kernels on every CPU (emu_rows: rows, or a long map's
 * elements, in parts) against one thread, wall seconds, best of the
 * repetitions; the two runs must be the same byte for byte (a WARNING on
 * stderr otherwise):
 *   kernel,variant,policy,backend,rows,cols,threads,wall_1_s,wall_n_s,speedup
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/engine/truth_exp.h"
#include "emu/io/nm_gen.h"

void bench_kernels(int reps);

static volatile double bk_sink;

static double bk_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bk_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bk_wall, bk_cpu_used;

static void *bk_alloc(size_t n)
{
	void *p = calloc(n, 1);
	if (!p) {
		fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

/* N(0, 1): the library's generator (emu/io/nm_gen.c) */
static void bk_fill(double *x, size_t n, uint64_t seed)
{
	nm_gen_fill(&(nm_gen){.dist = NM_GEN_NORMAL, .scale = 1, .seed = seed}, x, n);
}

enum { BK_NAIVE = 0, BK_MAXSUB, BK_LSE };

/* softmax_ce in native float with the kernel's structure (emu/kernels/softmax.c):
 * max, exp and sum, log, loss, then one gradient pass; returns the loss. */
static float bk_native(const float *x, size_t R, size_t N, int v, float *grad, float *e)
{
	float sumloss = 0, Rf = (float)R;
	for (size_t r = 0; r < R; r++) {
		const float *xr = x + r * N;
		size_t y = r % N;
		float m = 0, s = 0, ls, la;
		if (v >= BK_MAXSUB) {
			m = xr[0];
			for (size_t j = 1; j < N; j++)
				m = fmaxf(m, xr[j]);
		}
		for (size_t j = 0; j < N; j++) {
			e[j] = v >= BK_MAXSUB ? expf(xr[j] - m) : expf(xr[j]);
			s += e[j];
		}
		ls = logf(s);
		if (v == BK_NAIVE) {
			la = ls - xr[y];
		} else if (v == BK_MAXSUB) {
			la = ls - (xr[y] - m);
		} else {
			ls = m + ls;
			la = ls - xr[y];
		}
		sumloss += la;
		for (size_t j = 0; j < N; j++) {
			float g = v == BK_LSE ? expf(xr[j] - ls) : e[j] / s;
			if (j == y)
				g -= 1;
			grad[r * N + j] = g / Rf;
		}
	}
	return sumloss / Rf;
}

/* layernorm (twopass) forward and backward in native float with the
 * kernel's structure (emu/kernels/layernorm.c): sum, mean, centre and square-sum,
 * rsqrt, y; then dy's two sums and dx. dy = ±1 as the kernel draws it. */
static float bk_native_ln(const float *x, size_t R, size_t N, float *y, float *dx, float *yc,
                          const float *dy)
{
	float eps = 1e-5f, Nf = (float)N, acc = 0;
	for (size_t r = 0; r < R; r++) {
		const float *xr = x + r * N;
		const float *d = dy + r * N;
		float s = 0, s2 = 0;
		for (size_t j = 0; j < N; j++)
			s += xr[j];
		float mean = s / Nf;
		for (size_t j = 0; j < N; j++) {
			yc[j] = xr[j] - mean;
			s2 += yc[j] * yc[j];
		}
		float rstd = 1 / sqrtf(s2 / Nf + eps);
		for (size_t j = 0; j < N; j++) {
			yc[j] *= rstd;
			y[r * N + j] = yc[j];
		}
		float dm = 0, dp = 0;
		for (size_t j = 0; j < N; j++) {
			dm += d[j];
			dp += d[j] * yc[j];
		}
		dm /= Nf;
		dp /= Nf;
		for (size_t j = 0; j < N; j++)
			dx[r * N + j] = (d[j] - dm - yc[j] * dp) * rstd;
		acc += rstd;
	}
	return acc;
}

/* accum dot:seq in native float: b_j = |x_i| with i drawn as the kernel
 * draws it, then s += a_j·b_j. */
static float bk_native_dot(const float *x, size_t N, uint64_t seed, float *b)
{
	for (size_t i = 0; i < N; i++)
		b[i] = fabsf(x[emu_sr_bits(seed, i) % N]);
	float s = 0;
	for (size_t j = 0; j < N; j++)
		s += x[j] * b[j];
	return s;
}

/* rmsnorm (plain) forward and backward in native float with the kernel's
 * structure (emu/kernels/rmsnorm_rows.h): x², their sum, rsqrt, x̂ and y =
 * x̂·g; then g·dy, the sum of g·dy·x̂, dx, and dg's column sums; g = 1 */
static float bk_native_rms(const float *x, size_t R, size_t N, float *y, float *dx, float *xh,
                           float *dg, const float *dy)
{
	float eps = 1e-6f, Nf = (float)N, acc = 0;
	for (size_t j = 0; j < N; j++)
		dg[j] = 0;
	for (size_t r = 0; r < R; r++) {
		const float *xr = x + r * N, *d = dy + r * N;
		float s = 0;
		for (size_t j = 0; j < N; j++)
			s += xr[j] * xr[j];
		float rs = 1 / sqrtf(s / Nf + eps), m = 0;
		for (size_t j = 0; j < N; j++) {
			xh[j] = xr[j] * rs;
			y[r * N + j] = xh[j];
			m += d[j] * xh[j];
		}
		m /= Nf;
		for (size_t j = 0; j < N; j++) {
			dx[r * N + j] = (d[j] - xh[j] * m) * rs;
			dg[j] += d[j] * xh[j];
		}
		acc += rs;
	}
	return acc + dg[0];
}

/* matmul seq in native float: C = A·B, A m×k then B k×n in x, each c_ij a
 * sequential sum over l, the i-j-l loop of the kernel's order */
static float bk_native_mm(const float *x, size_t m, size_t n, size_t k, float *c)
{
	const float *a = x, *b = x + m * k;
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++) {
			float s = 0;
			for (size_t l = 0; l < k; l++)
				s += a[i * k + l] * b[l * n + j];
			c[i * n + j] = s;
		}
	return c[0];
}

/* attention naive forward in native float (emu/kernels/attention_rows.h):
 * row i of x is [q_i | k_i | v_i]; per query S = q·K (sequential sums),
 * ·scale, the max, e = exp(s − max), l = Σ e, P = e / l, O = P·V, L = max +
 * log l */
static float bk_native_attn(const float *x, size_t R, size_t d, float *s, float *o, float *L)
{
	size_t N = 3 * d;
	float sc = 1 / sqrtf((float)d), acc = 0;
	for (size_t i = 0; i < R; i++) {
		for (size_t j = 0; j < R; j++) {
			float t = 0;
			for (size_t c = 0; c < d; c++)
				t += x[i * N + c] * x[j * N + d + c];
			s[j] = t * sc;
		}
		float mx = s[0], l = 0;
		for (size_t j = 1; j < R; j++)
			mx = fmaxf(mx, s[j]);
		for (size_t j = 0; j < R; j++) {
			s[j] = expf(s[j] - mx);
			l += s[j];
		}
		for (size_t j = 0; j < R; j++)
			s[j] /= l;
		for (size_t c = 0; c < d; c++) {
			float t = 0;
			for (size_t j = 0; j < R; j++)
				t += s[j] * x[j * N + 2 * d + c];
			o[i * d + c] = t;
		}
		L[i] = mx + logf(l);
		acc += L[i];
	}
	return acc + o[0];
}

/* attention online forward in native float (FlashAttention-2's order):
 * per query, key blocks of B: the block's scores (sequential sums, ·scale),
 * the running max, α = exp(m_old − m), e = exp(s − m), l = α·l + Σ e,
 * O = α·O + e·V_blk; then O / l and L = m + log l */
static float bk_native_attn_online(const float *x, size_t R, size_t d, size_t B, float *s, float *o,
                                   float *L)
{
	size_t N = 3 * d;
	float sc = 1 / sqrtf((float)d), acc = 0;
	for (size_t i = 0; i < R; i++) {
		float m = -INFINITY, l = 0, *oi = o + i * d;
		for (size_t c = 0; c < d; c++)
			oi[c] = 0;
		for (size_t j0 = 0; j0 < R; j0 += B) {
			size_t j1 = j0 + B < R ? j0 + B : R;
			float mb = m;
			for (size_t j = j0; j < j1; j++) {
				float t = 0;
				for (size_t c = 0; c < d; c++)
					t += x[i * N + c] * x[j * N + d + c];
				s[j] = t * sc;
				mb = fmaxf(mb, s[j]);
			}
			float alpha = expf(m - mb), sum = 0;
			for (size_t j = j0; j < j1; j++) {
				s[j] = expf(s[j] - mb);
				sum += s[j];
			}
			l = alpha * l + sum;
			for (size_t c = 0; c < d; c++) {
				float t = 0;
				for (size_t j = j0; j < j1; j++)
					t += s[j] * x[j * N + 2 * d + c];
				oi[c] = alpha * oi[c] + t;
			}
			m = mb;
		}
		for (size_t c = 0; c < d; c++)
			oi[c] /= l;
		L[i] = m + logf(l);
		acc += L[i];
	}
	return acc + o[0];
}

/* attention naive backward in native float, after bk_native_attn's
 * forward (P kept, R×R): with dO = ±1, D_i = Σ_c dO_ic·O_ic; dV = Pᵀ·dO;
 * dP = dO·Vᵀ; dS = P∘(dP − D)·scale; dQ = dS·K; dK = dSᵀ·Q (sequential
 * sums) */
static float bk_native_attn_bwd(const float *x, size_t R, size_t d, float *P, float *o, float *L,
                                const float *dO, float *dq, float *dk, float *dv, float *ds)
{
	size_t N = 3 * d;
	float sc = 1 / sqrtf((float)d);
	for (size_t i = 0; i < R; i++) { /* the forward, keeping P */
		float *p = P + i * R, mx = -INFINITY, l = 0;
		for (size_t j = 0; j < R; j++) {
			float t = 0;
			for (size_t c = 0; c < d; c++)
				t += x[i * N + c] * x[j * N + d + c];
			p[j] = t * sc;
			mx = fmaxf(mx, p[j]);
		}
		for (size_t j = 0; j < R; j++) {
			p[j] = expf(p[j] - mx);
			l += p[j];
		}
		for (size_t j = 0; j < R; j++)
			p[j] /= l;
		for (size_t c = 0; c < d; c++) {
			float t = 0;
			for (size_t j = 0; j < R; j++)
				t += p[j] * x[j * N + 2 * d + c];
			o[i * d + c] = t;
		}
		L[i] = mx + logf(l);
	}
	for (size_t j = 0; j < R; j++) /* dV */
		for (size_t c = 0; c < d; c++) {
			float t = 0;
			for (size_t i = 0; i < R; i++)
				t += P[i * R + j] * dO[i * d + c];
			dv[j * d + c] = t;
		}
	for (size_t i = 0; i < R; i++) { /* dS, row by row */
		float D = 0;
		for (size_t c = 0; c < d; c++)
			D += dO[i * d + c] * o[i * d + c];
		for (size_t j = 0; j < R; j++) {
			float t = 0;
			for (size_t c = 0; c < d; c++)
				t += dO[i * d + c] * x[j * N + 2 * d + c];
			ds[i * R + j] = P[i * R + j] * (t - D) * sc;
		}
	}
	for (size_t i = 0; i < R; i++) /* dQ */
		for (size_t c = 0; c < d; c++) {
			float t = 0;
			for (size_t j = 0; j < R; j++)
				t += ds[i * R + j] * x[j * N + d + c];
			dq[i * d + c] = t;
		}
	for (size_t j = 0; j < R; j++) /* dK */
		for (size_t c = 0; c < d; c++) {
			float t = 0;
			for (size_t i = 0; i < R; i++)
				t += ds[i * R + j] * x[i * N + c];
			dk[j * d + c] = t;
		}
	return dq[0] + dk[0] + dv[0] + L[0];
}

/* backward (the classifier's loss-scaled backward) in native float: per
 * row the logits z = x·W (sequential sums over D), the max, exp, the sum,
 * the loss, dlogits = (p − onehot)·S/R; the mean loss; dW = Xᵀ·dlogits
 * (sums over R), dX = dlogits·Wᵀ (sums over K); then unscale (·1/S) */
static float bk_native_bw(const float *x, const float *w, size_t R, size_t D, size_t K,
                          const int *y, float *z, float *dl, float *dW, float *dX)
{
	float S = 1, loss = 0;
	for (size_t r = 0; r < R; r++) {
		float mx = -INFINITY, s = 0, *zr = z + r * K;
		for (size_t c = 0; c < K; c++) {
			float t = 0;
			for (size_t d = 0; d < D; d++)
				t += x[r * D + d] * w[d * K + c];
			zr[c] = t;
			mx = fmaxf(mx, t);
		}
		for (size_t c = 0; c < K; c++) {
			dl[r * K + c] = expf(zr[c] - mx);
			s += dl[r * K + c];
		}
		loss += logf(s) - (zr[y[r]] - mx);
		for (size_t c = 0; c < K; c++)
			dl[r * K + c] =
			    (dl[r * K + c] / s - (c == (size_t)y[r] ? 1.0f : 0.0f)) * S / (float)R;
	}
	for (size_t d = 0; d < D; d++)
		for (size_t c = 0; c < K; c++) {
			float t = 0;
			for (size_t r = 0; r < R; r++)
				t += x[r * D + d] * dl[r * K + c];
			dW[d * K + c] = t / S;
		}
	for (size_t r = 0; r < R; r++)
		for (size_t d = 0; d < D; d++) {
			float t = 0;
			for (size_t c = 0; c < K; c++)
				t += dl[r * K + c] * w[d * K + c];
			dX[r * D + d] = t / S;
		}
	return loss / (float)R + dW[0] + dX[0];
}

/* a GEMM in native float blocked as the Tensor Core model is (h100, bf16
 * in, fp32 accumulation): each c_ij the sum over k-blocks of kb products,
 * each block summed from 0 then added to c (A m×k, B read as n×k, the TN
 * layout) */
static float bk_native_gemm_blocked(const float *a, const float *b, size_t m, size_t n, size_t k,
                                    size_t kb, float *c)
{
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++) {
			float acc = 0;
			for (size_t l0 = 0; l0 < k; l0 += kb) {
				float t = 0;
				for (size_t l = l0; l < l0 + kb && l < k; l++)
					t += a[i * k + l] * b[j * k + l];
				acc += t;
			}
			c[i * n + j] = acc;
		}
	return c[0];
}

/* batchnorm (twopass, training) forward, running statistics and backward
 * in native float with the kernel's structure (emu/kernels/batchnorm_rows.h,
 * PyTorch's order): per channel (a column of the N × C input) the sum, mean,
 * the centred square-sum, var, invstd = 1 / sqrtf, y, the running
 * statistics; then dy's two sums, dgamma, dbeta and dx; gamma 1, beta 0,
 * momentum 0.1 */
static float bk_native_bn(const float *x, size_t N, size_t C, float *y, float *dx, const float *dy,
                          float *rm, float *rv)
{
	float eps = 1e-5f, mom = 0.1f, Nf = (float)N, acc = 0;
	for (size_t c = 0; c < C; c++) {
		float s = 0, s2 = 0;
		for (size_t n = 0; n < N; n++)
			s += x[n * C + c];
		float mean = s / Nf;
		for (size_t n = 0; n < N; n++) {
			float t = x[n * C + c] - mean;
			s2 += t * t;
		}
		float var = s2 / Nf, invstd = 1 / sqrtf(var + eps);
		for (size_t n = 0; n < N; n++)
			y[n * C + c] = (x[n * C + c] - mean) * invstd;
		rm[c] = mom * mean + (1 - mom) * rm[c];
		rv[c] = mom * (s2 / (Nf - 1)) + (1 - mom) * rv[c];
		float sdy = 0, sdyx = 0;
		for (size_t n = 0; n < N; n++) {
			sdy += dy[n * C + c];
			sdyx += dy[n * C + c] * (x[n * C + c] - mean);
		}
		float mdy = sdy / Nf, f1 = invstd * invstd * sdyx / Nf;
		for (size_t n = 0; n < N; n++)
			dx[n * C + c] =
			    ((dy[n * C + c] - mdy) - (x[n * C + c] - mean) * f1) * invstd;
		acc += sdyx * invstd + sdy;
	}
	return acc;
}

/* bce (stable) in native float: targets as the kernel draws them (bit 31
 * of emu_sr_bits(seed, j)), loss terms max(x, 0) − x·y + log1pf(expf(−|x|))
 * summed in order and divided by the count, grad (σ(x) − y) / count */
static float bk_native_bce(const float *x, size_t n, uint64_t seed, float *grad)
{
	float s = 0, nf = (float)n;
	for (size_t j = 0; j < n; j++) {
		float y = (float)(emu_sr_bits(seed, j) >> 31), xj = x[j];
		float e = expf(-fabsf(xj));
		s += (xj > 0 ? xj : 0) - xj * y + log1pf(e);
		float sig = xj >= 0 ? 1 / (1 + e) : e / (1 + e);
		grad[j] = (sig - y) / nf;
	}
	return s / nf;
}

/* adamw in native float over n weights for 10 steps (PyTorch's
 * single-tensor order, emu/kernels/optimizer_rows.h): each step's gradient
 * drawn as the kernel draws it (emu/kernels/optimizer.c's stream: two
 * SplitMix64 finalisers and a 53-bit unit, scale 1e-3), w·(1 − lr·wd), m's
 * lerp, v's update, the bias corrections, sqrt(v)/sqrt(bc2) + eps and the
 * update; lr 1e-3, betas 0.9 and 0.999, eps 1e-8, weight decay 0.01 */
static float bk_native_adamw(float *w, size_t n, float *m, float *v)
{
	const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
	for (size_t i = 0; i < n; i++)
		m[i] = v[i] = 0;
	for (uint64_t t = 1; t <= 10; t++) {
		float bc1 = 1 - powf(b1, (float)t), bc2 = 1 - powf(b2, (float)t);
		float step = lr / bc1, bc2s = sqrtf(bc2);
		for (size_t i = 0; i < n; i++) {
			uint64_t r = emu_mix64(emu_mix64(0) ^ ((t << 40) + i));
			float g = (float)(1e-3 * (2 * emu_draw_unit(r) - 1));
			w[i] *= 1 - lr * wd;
			m[i] += (g - m[i]) * (1 - b1);
			v[i] = v[i] * b2 + (1 - b2) * g * g;
			w[i] -= step * m[i] / (sqrtf(v[i]) / bc2s + eps);
		}
	}
	return w[0];
}

struct bk_case {
	const emu_kernel *k;
	const emu_policy *pol;
	const char *variant;
	const emu_kin *in;
	emu_be_kind kind;
};

/* CPU seconds of one emu_run_kernel call (run and free). */
static double bk_time_kernel(const struct bk_case *c)
{
	emu_run r;
	char err[256];
	double c0 = bk_cpu(), t0 = bk_now();
	if (emu_run_kernel(c->k, c->pol, c->variant, c->in, c->kind, &r, err, sizeof err) != 0) {
		fprintf(stderr, "bench: %s: %s\n", c->k->name, err);
		exit(2);
	}
	bk_sink += emu_kout_d(&r.be, &r.out.item[0], 0);
	emu_run_free(&r);
	double t = bk_cpu() - c0;
	bk_wall += bk_now() - t0;
	bk_cpu_used += t;
	return t;
}

static const char *const bk_variants[] = {"naive", "lse"};
static const int bk_variant_ids[] = {BK_NAIVE, BK_LSE};
static const char *const bk_policies[] = {"storage=fp16,compute=fp32", "storage=fp16"};

static void bk_policy(const char *spec, emu_policy *p)
{
	char err[256];
	if (emu_policy_parse(spec, p, err, sizeof err) != EMU_OK) {
		fprintf(stderr, "bench: policy %s: %s\n", spec, err);
		exit(2);
	}
}

/* The best of 2·reps native runs (after a warm-up) of fn, CPU seconds. */
#define BK_BEST_NATIVE(best, reps, call)                                                           \
	do {                                                                                       \
		best = INFINITY;                                                                   \
		for (int k_ = 0; k_ < 2 * (reps) + 1; k_++) {                                      \
			double c0_ = bk_cpu(), t0_ = bk_now(), t_;                                 \
			bk_sink += (call);                                                         \
			t_ = bk_cpu() - c0_;                                                       \
			if (k_) {                                                                  \
				bk_wall += bk_now() - t0_;                                         \
				bk_cpu_used += t_;                                                 \
				best = t_ < best ? t_ : best;                                      \
			}                                                                          \
		}                                                                                  \
	} while (0)

/* Table 5's layernorm (64 x 4096, twopass) and accum (dot:seq over 2^20) rows. */
static void bk_other_rows(int reps)
{
	const size_t R = 64, N = 4096, ND = (size_t)1 << 20;
	size_t n = R * N > ND ? R * N : ND;
	double *x = bk_alloc(n * sizeof *x);
	float *xf = bk_alloc(n * sizeof *xf), *o1 = bk_alloc(n * sizeof *o1);
	float *o2 = bk_alloc(n * sizeof *o2), *dy = bk_alloc(n * sizeof *dy);
	float *yc = bk_alloc(N * sizeof *yc);
	int nrep = reps < 3 ? reps : 3;
	bk_fill(x, n, 13);
	for (size_t i = 0; i < n; i++) {
		xf[i] = (float)x[i];
		dy[i] = emu_sr_bits(0, i) & 1 ? -1.0f : 1.0f;
	}
	static const char *const pols[] = {"storage=fp16,compute=fp32",
	                                   "storage=bf16,compute=fp32"};
	double nat_ln, nat_dot;
	BK_BEST_NATIVE(nat_ln, reps, bk_native_ln(xf, R, N, o1, o2, yc, dy));
	BK_BEST_NATIVE(nat_dot, reps, bk_native_dot(xf, ND, 0, o1));
	for (int kk = 0; kk < 2; kk++)
		for (size_t pi = 0; pi < 2; pi++) {
			emu_policy pol;
			bk_policy(pols[pi], &pol);
			emu_kin in = {x, kk ? 1 : R, kk ? ND : N, NULL, 0, 0, NULL, 0};
			struct bk_case c = {kk ? &emu_kernel_accum : &emu_kernel_layernorm, &pol,
			                    kk ? "dot:seq" : "twopass", &in, EMU_BE_FAST};
			double best_f = INFINITY, nat = kk ? nat_dot : nat_ln;
			for (int k = 0; k < nrep; k++) {
				double t = bk_time_kernel(&c);
				best_f = t < best_f ? t : best_f;
			}
			printf("%s,%s,\"%s\",%zu,%zu,%.4f,%.5f,%.1f\n", c.k->name, c.variant,
			       pols[pi], in.rows, in.cols, best_f, nat, best_f / nat);
			fflush(stdout);
		}
	free(x), free(xf), free(o1), free(o2), free(dy), free(yc);
}

/* One row of table 5: the kernel on the fast backend (best of nrep) against
 * its native time nat. */
static void bk_row(const emu_kernel *k, const char *variant, const char *spec, const emu_kin *in,
                   int nrep, double nat)
{
	emu_policy pol;
	bk_policy(spec, &pol);
	struct bk_case c = {k, &pol, variant, in, EMU_BE_FAST};
	double best_f = INFINITY;
	for (int r = 0; r < nrep; r++) {
		double t = bk_time_kernel(&c);
		best_f = t < best_f ? t : best_f;
	}
	printf("%s,%s,\"%s\",%zu,%zu,%.4f,%.5f,%.1f\n", k->name, variant, spec, in->rows, in->cols,
	       best_f, nat, best_f / nat);
	fflush(stdout);
}

/* Table 5's rmsnorm (plain, 64 x 4096, forward and backward), matmul (seq,
 * 256 x 256 times 256 x 256), attention (naive forward, 256 queries and
 * keys of head dim 64), batchnorm (twopass training, 4096 samples x 64
 * channels, forward, running statistics and backward), bce (stable,
 * 64 x 4096) and optimizer (adamw, 10 steps over 64 x 4096 weights) rows. */
static void bk_more_rows(int reps)
{
	const size_t R = 64, N = 4096, MK = 256, AR = 256, AD = 64;
	size_t n = R * N;
	double *x = bk_alloc(n * sizeof *x);
	float *xf = bk_alloc(n * sizeof *xf), *o1 = bk_alloc(n * sizeof *o1);
	float *o2 = bk_alloc(n * sizeof *o2), *dy = bk_alloc(n * sizeof *dy);
	float *w1 = bk_alloc(N * sizeof *w1), *w2 = bk_alloc(N * sizeof *w2);
	int nrep = reps < 3 ? reps : 3;
	bk_fill(x, n, 17);
	for (size_t i = 0; i < n; i++) {
		xf[i] = (float)x[i];
		dy[i] = emu_sr_bits(0, i) & 1 ? -1.0f : 1.0f;
	}
	static const char *const pols[] = {"storage=fp16,compute=fp32",
	                                   "storage=bf16,compute=fp32"};
	double nat_rms, nat_mm, nat_attn, nat_bn, nat_bce;
	BK_BEST_NATIVE(nat_rms, reps, bk_native_rms(xf, R, N, o1, o2, w1, w2, dy));
	BK_BEST_NATIVE(nat_bn, reps, bk_native_bn(xf, N, R, o1, o2, dy, w1, w2));
	BK_BEST_NATIVE(nat_bce, reps, bk_native_bce(xf, R * N, 0, o1));
	double nat_opt;
	memcpy(o2, xf, R * N * sizeof *o2);
	BK_BEST_NATIVE(nat_opt, reps, bk_native_adamw(o2, R * N, o1, dy));
	BK_BEST_NATIVE(nat_mm, reps, bk_native_mm(xf, MK, MK, MK, o1));
	BK_BEST_NATIVE(nat_attn, reps, bk_native_attn(xf, AR, AD, w1, o1, o2));
	/* attention online (block_k 16) and naive:bwd; backward's classifier
	 * (8 classes, W drawn as the kernel draws it) */
	const size_t BK = 8;
	float *P = bk_alloc(AR * AR * sizeof *P), *ds = bk_alloc(AR * AR * sizeof *ds);
	float *dq = bk_alloc(AR * AD * sizeof *dq), *dk = bk_alloc(AR * AD * sizeof *dk);
	float *dv = bk_alloc(AR * AD * sizeof *dv), *wf = bk_alloc(N * BK * sizeof *wf);
	float *z = bk_alloc(R * BK * sizeof *z), *dX = bk_alloc(R * N * sizeof *dX);
	int *yl = bk_alloc(R * sizeof *yl);
	for (size_t i = 0; i < N * BK; i++)
		wf[i] = (float)((1 / sqrt((double)N)) *
		                ((double)(emu_draw64(0, i) >> 11) * 0x1p-52 - 1));
	for (size_t r = 0; r < R; r++)
		yl[r] = (int)(r % BK);
	double nat_online, nat_abwd, nat_bw;
	BK_BEST_NATIVE(nat_online, reps, bk_native_attn_online(xf, AR, AD, 16, w1, o1, o2));
	BK_BEST_NATIVE(nat_abwd, reps,
	               bk_native_attn_bwd(xf, AR, AD, P, o1, o2, dy, dq, dk, dv, ds));
	BK_BEST_NATIVE(nat_bw, reps, bk_native_bw(xf, wf, R, N, BK, yl, z, o1, o2, dX));
	for (size_t pi = 0; pi < 2; pi++) {
		emu_kin in_rms = {x, R, N, NULL, 0, 0, NULL, 0};
		emu_kin in_mm = {x, 2 * MK, MK, NULL, 0, 0, NULL, 0};
		emu_kin in_attn = {x, AR, 3 * AD, NULL, 0, 0, NULL, 0};
		bk_row(&emu_kernel_rmsnorm, "plain", pols[pi], &in_rms, nrep, nat_rms);
		bk_row(&emu_kernel_matmul, "seq", pols[pi], &in_mm, nrep, nat_mm);
		bk_row(&emu_kernel_attention, "naive", pols[pi], &in_attn, nrep, nat_attn);
		emu_kin in_bn = {x, N, R, NULL, 0, 0, NULL, 0};
		bk_row(&emu_kernel_batchnorm, "twopass", pols[pi], &in_bn, nrep, nat_bn);
		bk_row(&emu_kernel_bce, "stable", pols[pi], &in_rms, nrep, nat_bce);
		bk_row(&emu_kernel_optimizer, "adamw", pols[pi], &in_rms, nrep, nat_opt);
		bk_row(&emu_kernel_attention, "online", pols[pi], &in_attn, nrep, nat_online);
		bk_row(&emu_kernel_attention, "naive:bwd", pols[pi], &in_attn, nrep, nat_abwd);
		emu_kparam bp = {"classes", (double)BK};
		emu_kin in_bw = {x, R, N, &bp, 1, 0, NULL, 0};
		bk_row(&emu_kernel_backward, "maxsub", pols[pi], &in_bw, nrep, nat_bw);
	}
	/* matmul seq accumulating in fp16 and bf16 (the policy's compute and
	 * accumulator formats are the storage's): sums of emulated roundings */
	static const char *const lowp[] = {"storage=fp16", "storage=bf16"};
	for (size_t pi = 0; pi < 2; pi++) {
		emu_kin in_mm = {x, 2 * MK, MK, NULL, 0, 0, NULL, 0};
		bk_row(&emu_kernel_matmul, "seq", lowp[pi], &in_mm, nrep, nat_mm);
	}
	free(x), free(xf), free(o1), free(o2), free(dy), free(w1), free(w2);
	free(P), free(dq), free(dk), free(dv), free(ds), free(wf), free(yl), free(z), free(dX);
}

/* Table 5b: a GEMM in GFLOP/s, m = n = k = 256, bf16 operands (B read as
 * n × k) through the h100 Tensor Core model with fp32 accumulation
 * (matmul tc:h100, storage=bf16,accum=fp32), against native float of the
 * same blocking (16-product blocks added into the accumulator):
 *   kernel,variant,policy,m,n,k,fast_s,native_s,fast_gflops,native_gflops,ratio_native */
static void bk_gemm_table(int reps)
{
	const size_t M = 256;
	double *x = bk_alloc(2 * M * M * sizeof *x);
	float *xf = bk_alloc(2 * M * M * sizeof *xf), *c = bk_alloc(M * M * sizeof *c);
	bk_fill(x, 2 * M * M, 23);
	for (size_t i = 0; i < 2 * M * M; i++)
		xf[i] = (float)x[i];
	double nat;
	BK_BEST_NATIVE(nat, reps, bk_native_gemm_blocked(xf, xf + M * M, M, M, M, 16, c));
	static const char *const spec = "storage=bf16,accum=fp32";
	emu_policy pol;
	bk_policy(spec, &pol);
	emu_kparam bt = {"bt", 1};
	emu_kin in = {x, 2 * M, M, &bt, 1, 0, NULL, 0};
	struct bk_case cs = {&emu_kernel_matmul, &pol, "tc:h100", &in, EMU_BE_FAST};
	double best = INFINITY;
	for (int r = 0; r < (reps < 3 ? reps : 3); r++) {
		double t = bk_time_kernel(&cs);
		best = t < best ? t : best;
	}
	double flop = 2.0 * (double)M * (double)M * (double)M;
	printf(
	    "kernel,variant,policy,m,n,k,fast_s,native_s,fast_gflops,native_gflops,ratio_native\n");
	printf("matmul,tc:h100,\"%s\",%zu,%zu,%zu,%.4f,%.5f,%.3f,%.2f,%.1f\n", spec, M, M, M, best,
	       nat, flop / best * 1e-9, flop / nat * 1e-9, best / nat);
	fflush(stdout);
	free(x), free(xf), free(c);
}

/* Table 5. */
static void bk_native_table(int reps)
{
	const size_t R = 64, N = 32768;
	double *x = bk_alloc(R * N * sizeof *x);
	float *xf = bk_alloc(R * N * sizeof *xf), *grad = bk_alloc(R * N * sizeof *grad);
	float *e = bk_alloc(N * sizeof *e);
	emu_kin in = {x, R, N, NULL, 0, 0, NULL, 0};
	int nrep = reps < 3 ? reps : 3;

	bk_fill(x, R * N, 11);
	for (size_t i = 0; i < R * N; i++)
		xf[i] = (float)x[i];
	printf("kernel,variant,policy,rows,cols,fast_s,native_s,ratio_native\n");
	for (size_t vi = 0; vi < 2; vi++) {
		double best_n = INFINITY;
		for (int k = 0; k < 2 * reps + 1; k++) { /* native first: it is cheap */
			double c0 = bk_cpu(), t0 = bk_now(), t;
			bk_sink += bk_native(xf, R, N, bk_variant_ids[vi], grad, e);
			t = bk_cpu() - c0;
			if (k) { /* the first is a warm-up */
				bk_wall += bk_now() - t0;
				bk_cpu_used += t;
				best_n = t < best_n ? t : best_n;
			}
		}
		for (size_t pi = 0; pi < 2; pi++) {
			emu_policy pol;
			bk_policy(bk_policies[pi], &pol);
			struct bk_case c = {&emu_kernel_softmax_ce, &pol, bk_variants[vi], &in,
			                    EMU_BE_FAST};
			double best_f = INFINITY;
			for (int k = 0; k < nrep; k++) {
				double t = bk_time_kernel(&c);
				best_f = t < best_f ? t : best_f;
			}
			printf("softmax_ce,%s,\"%s\",%zu,%zu,%.4f,%.5f,%.1f\n", bk_variants[vi],
			       bk_policies[pi], R, N, best_f, best_n, best_f / best_n);
			fflush(stdout);
		}
	}
	free(x), free(xf), free(grad), free(e);
	bk_other_rows(reps);
	bk_more_rows(reps);
}

static bool bk_same(const emu_run *a, const emu_run *b)
{
	if (a->out.n != b->out.n || a->status != b->status)
		return false;
	for (int i = 0; i < a->out.n; i++)
		for (size_t j = 0; j < a->out.item[i].n; j++) {
			const emu_format *f = a->out.item[i].fmt;
			if (emu_encode(f, emu_kout_d(NULL, &a->out.item[i], j)) !=
			    emu_encode(f, emu_kout_d(NULL, &b->out.item[i], j)))
				return false;
		}
	return memcmp(a->be.st.ops, b->be.st.ops, sizeof a->be.st.ops) == 0 &&
	       memcmp(a->be.st.flags, b->be.st.flags, sizeof a->be.st.flags) == 0;
}

/* Table 6. */
static void bk_exact_table(int reps)
{
	const size_t R = 8, N = 1024;
	double *x = bk_alloc(R * N * sizeof *x);
	emu_kin in = {x, R, N, NULL, 0, 0, NULL, 0};
	char err[256];

	bk_fill(x, R * N, 12);
	printf("kernel,variant,policy,rows,cols,exact_s,fast_s,ratio_exact_fast\n");
	for (size_t vi = 0; vi < 2; vi++)
		for (size_t pi = 0; pi < 2; pi++) {
			emu_policy pol;
			bk_policy(bk_policies[pi], &pol);
			struct bk_case cf = {&emu_kernel_softmax_ce, &pol, bk_variants[vi], &in,
			                     EMU_BE_FAST};
			struct bk_case ce = {&emu_kernel_softmax_ce, &pol, bk_variants[vi], &in,
			                     EMU_BE_EXACT};
			double best_f = INFINITY, best_e = INFINITY;
			emu_run a, b;
			for (int k = 0; k < reps; k++) {
				double t = bk_time_kernel(&ce);
				best_e = t < best_e ? t : best_e;
				t = bk_time_kernel(&cf);
				best_f = t < best_f ? t : best_f;
			}
			if (emu_run_kernel(&emu_kernel_softmax_ce, &pol, bk_variants[vi], &in,
			                   EMU_BE_FAST, &a, err, sizeof err) != 0 ||
			    emu_run_kernel(&emu_kernel_softmax_ce, &pol, bk_variants[vi], &in,
			                   EMU_BE_EXACT, &b, err, sizeof err) != 0) {
				fprintf(stderr, "bench: softmax_ce: %s\n", err);
				exit(2);
			}
			if (!bk_same(&a, &b))
				fprintf(stderr,
				        "bench: WARNING softmax_ce %s %s: fast and exact differ\n",
				        bk_variants[vi], bk_policies[pi]);
			emu_run_free(&a);
			emu_run_free(&b);
			printf("softmax_ce,%s,\"%s\",%zu,%zu,%.4f,%.5f,%.1f\n", bk_variants[vi],
			       bk_policies[pi], R, N, best_e, best_f, best_e / best_f);
			fflush(stdout);
		}
	free(x);
}

/* Table 6b: the truth backend's two shortcuts against the MPFR calls they
 * replace, on the same data, one thread's CPU seconds, best of the
 * repetitions, the results compared bit for bit (a WARNING otherwise):
 * exp on 32,768 softmax arguments (8·N(0, 1) minus their max), and 32
 * dot products of 4096 bf16-valued terms (emu_dot_n against the products'
 * map and the sequential fold, chain after chain). */
static void bk_truth_table(int reps)
{
	enum { NE = 32768, M = 32, K = 4096 };
	double *x = bk_alloc(NE * sizeof *x), mx = -INFINITY;
	bk_fill(x, NE, 21);
	for (size_t i = 0; i < NE; i++)
		mx = fmax(mx, x[i] *= 8);
	mpfr_t *a = bk_alloc(NE * sizeof *a), y, z;
	for (size_t i = 0; i < NE; i++) {
		mpfr_init2(a[i], EMU_TRUTH_PREC);
		mpfr_set_d(a[i], x[i], MPFR_RNDN);
		mpfr_sub_d(a[i], a[i], mx, MPFR_RNDN);
	}
	mpfr_inits2(EMU_TRUTH_PREC, y, z, (mpfr_ptr)0);
	double best[2] = {INFINITY, INFINITY};
	bool same = true;
	for (int k = 0; k < reps; k++) {
		double c0 = bk_cpu();
		for (size_t i = 0; i < NE; i++)
			emu_truth_exp(y, a[i]);
		double c1 = bk_cpu();
		for (size_t i = 0; i < NE; i++)
			mpfr_exp(z, a[i], MPFR_RNDN);
		double c2 = bk_cpu();
		best[0] = fmin(best[0], c1 - c0);
		best[1] = fmin(best[1], c2 - c1);
	}
	for (size_t i = 0; i < NE; i++) {
		emu_truth_exp(y, a[i]);
		mpfr_exp(z, a[i], MPFR_RNDN);
		same = same && mpfr_equal_p(y, z);
		mpfr_clear(a[i]);
	}
	mpfr_clears(y, z, (mpfr_ptr)0);
	free(a);
	free(x);
	printf("primitive,size,shortcut_s,mpfr_s,ratio_mpfr_shortcut\n");
	printf("truth_exp,%d,%.5f,%.5f,%.2f\n", NE, best[0], best[1], best[1] / best[0]);
	if (!same)
		fprintf(stderr, "bench: WARNING truth exp differs from mpfr_exp\n");

	const emu_format *bf = emu_format_by_name("bf16");
	emu_env env = EMU_ENV_DEFAULT;
	emu_be be;
	emu_be_init(&be, EMU_BE_TRUTH, &env);
	emu_vec *A = emu_vec_new(&be, (size_t)M * K), *B = emu_vec_new(&be, (size_t)M * K),
	        *P = emu_vec_new(&be, (size_t)M * K), *acc = emu_vec_new(&be, 2 * M);
	double *v = bk_alloc((size_t)M * K * sizeof *v);
	if (!A || !B || !P || !acc) {
		fprintf(stderr, "bench: out of memory\n");
		exit(2);
	}
	for (int t = 0; t < 2; t++) {
		bk_fill(v, (size_t)M * K, 22 + (uint64_t)t);
		for (size_t i = 0; i < (size_t)M * K; i++) {
			unsigned fl = 0;
			mpfr_set_d(&(t ? B : A)->m[i], emu_round_value(bf, v[i], 0, &env, &fl),
			           MPFR_RNDN);
		}
	}
	best[0] = best[1] = INFINITY;
	for (int k = 0; k < reps; k++) {
		double c0 = bk_cpu();
		emu_dot_n(&be, EMU_STEP_SCALE, bf, EMU_NOSTEP, EMU_STEP_SCALE, bf, emu_row(acc, 0),
		          emu_row(A, 0), K, emu_row(B, 0), K, emu_row(P, 0), K, M, 0, K);
		double c1 = bk_cpu();
		for (size_t c = 0; c < M; c++) {
			emu_fill(&be, emu_at(acc, M + c), 0, 1);
			emu_map(&be, EMU_STEP_SCALE, EMU_OP_MUL, bf, emu_row(P, c * K),
			        emu_row(A, c * K), emu_row(B, c * K), EMU_NOREF, K, c * K, NULL);
			emu_fold(&be, EMU_STEP_SCALE, EMU_OP_ADD, bf, EMU_ORDER_SEQ,
			         emu_at(acc, M + c), emu_row(P, c * K), EMU_NOREF, K, c * K);
		}
		double c2 = bk_cpu();
		best[0] = fmin(best[0], c1 - c0);
		best[1] = fmin(best[1], c2 - c1);
		for (size_t c = 0; c < M; c++)
			same = same && mpfr_equal_p(&acc->m[c], &acc->m[M + c]);
		emu_fill(&be, emu_row(acc, 0), 0, M);
	}
	printf("truth_dot,%dx%d,%.5f,%.5f,%.2f\n", M, K, best[0], best[1], best[1] / best[0]);
	if (!same)
		fprintf(stderr, "bench: WARNING truth dot products differ from the MPFR calls\n");
	free(v);
	emu_be_free(&be);
}

/* Tables 5 and 6, separated by a blank line; called by bench.c's main. */
/* every output bit for bit and every count: a and b the same run */
static bool bk_same_run(const emu_run *a, const emu_run *b)
{
	const emu_be_stats *s = &a->be.st, *t = &b->be.st;
	if (a->out.n != b->out.n || memcmp(s->ops, t->ops, sizeof s->ops) != 0 ||
	    memcmp(s->flags, t->flags, sizeof s->flags) != 0 || s->first_set != t->first_set ||
	    (s->first_set && (s->first_index != t->first_index || s->first_op != t->first_op)))
		return false;
	for (int i = 0; i < a->out.n; i++) {
		const emu_kout_item *x = &a->out.item[i], *y = &b->out.item[i];
		if (x->n != y->n)
			return false;
		for (size_t j = 0; j < x->n; j++) {
			double u = emu_kout_d(&a->be, x, j), v = emu_kout_d(&b->be, y, j);
			if (memcmp(&u, &v, sizeof u) != 0)
				return false;
		}
	}
	return true;
}

/* wall seconds of one run on `threads` threads, kept in r */
static double bk_wall_run(const struct bk_case *c, int threads, emu_run *r)
{
	char err[256];
	omp_set_num_threads(threads);
	double t0 = bk_now();
	if (emu_run_kernel(c->k, c->pol, c->variant, c->in, c->kind, r, err, sizeof err) != 0) {
		fprintf(stderr, "bench: %s: %s\n", c->k->name, err);
		exit(2);
	}
	return bk_now() - t0;
}

/* Table 12: one thread against every CPU, the same run */
static void bk_threads_table(int reps)
{
	const size_t R = 64, N = 4096, MK = 256, AR = 256, AD = 64;
	int T = omp_get_num_procs();
	double *x = bk_alloc(R * N * sizeof *x);
	bk_fill(x, R * N, 17);
	emu_kin in_rn = {x, R, N, NULL, 0, 0, NULL, 0},
	        in_mm = {x, 2 * MK, MK, NULL, 0, 0, NULL, 0};
	emu_kin in_at = {x, AR, 3 * AD, NULL, 0, 0, NULL, 0},
	        in_bn = {x, N, R, NULL, 0, 0, NULL, 0};
	emu_kin in_sm = {x, 64, 1024, NULL, 0, 0, NULL, 0},
	        in_mm_x = {x, 64, 64, NULL, 0, 0, NULL, 0};
	const struct {
		const emu_kernel *k;
		const char *variant;
		const emu_kin *in;
		emu_be_kind kind;
	} rows[] = {
	    {&emu_kernel_softmax_ce, "lse", &in_rn, EMU_BE_FAST},
	    {&emu_kernel_layernorm, "twopass", &in_rn, EMU_BE_FAST},
	    {&emu_kernel_rmsnorm, "plain", &in_rn, EMU_BE_FAST},
	    {&emu_kernel_bce, "stable", &in_rn, EMU_BE_FAST},
	    {&emu_kernel_optimizer, "adamw", &in_rn, EMU_BE_FAST},
	    {&emu_kernel_batchnorm, "twopass", &in_bn, EMU_BE_FAST},
	    {&emu_kernel_matmul, "seq", &in_mm, EMU_BE_FAST},
	    {&emu_kernel_matmul, "tc:h100", &in_mm, EMU_BE_FAST},
	    {&emu_kernel_attention, "online", &in_at, EMU_BE_FAST},
	    {&emu_kernel_layernorm, "twopass", &in_sm, EMU_BE_EXACT},
	    {&emu_kernel_layernorm, "twopass", &in_sm, EMU_BE_TRUTH},
	    {&emu_kernel_matmul, "seq", &in_mm_x, EMU_BE_TRUTH},
	};
	static const char *const spec = "storage=bf16,compute=fp32";
	emu_policy pol;
	bk_policy(spec, &pol);
	int nrep = reps < 3 ? reps : 3;
	printf("kernel,variant,policy,backend,rows,cols,threads,wall_1_s,wall_n_s,speedup\n");
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		struct bk_case c = {rows[i].k, &pol, rows[i].variant, rows[i].in, rows[i].kind};
		double b1 = INFINITY, bn = INFINITY;
		bool same = true;
		for (int r = 0; r < nrep; r++) {
			emu_run r1, rn;
			double t1 = bk_wall_run(&c, 1, &r1), tn = bk_wall_run(&c, T, &rn);
			same = same && bk_same_run(&r1, &rn);
			emu_run_free(&r1);
			emu_run_free(&rn);
			b1 = t1 < b1 ? t1 : b1;
			bn = tn < bn ? tn : bn;
		}
		if (!same)
			fprintf(stderr, "bench: WARNING: %s %s differs on %d threads\n", c.k->name,
			        c.variant, T);
		printf("%s,%s,\"%s\",%s,%zu,%zu,%d,%.4f,%.4f,%.2f\n", c.k->name, c.variant, spec,
		       emu_be_name(c.kind), c.in->rows, c.in->cols, T, b1, bn, b1 / bn);
		fflush(stdout);
	}
	omp_set_num_threads(1);
	free(x);
}

void bench_kernels(int reps)
{
	int threads = omp_get_max_threads();
	omp_set_num_threads(1); /* tables 5 and 6: one thread's CPU time is all the work */
	bk_native_table(reps);
	printf("\n");
	bk_gemm_table(reps);
	printf("\n");
	bk_exact_table(reps);
	printf("\n");
	bk_truth_table(reps);
	printf("\n");
	bk_threads_table(reps);
	omp_set_num_threads(threads);
	double share = bk_wall > 0 ? bk_cpu_used / bk_wall : 1;
	fprintf(stderr, "bench: kernels: the timed runs got %.0f%% of a CPU%s\n", 100 * share,
	        share < 0.9 ? " -- other load on this machine: CPU times are less distorted "
	                      "than wall times, but rerun idle for final numbers"
	                    : "");
}
