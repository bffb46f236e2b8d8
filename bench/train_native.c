/*
 * train_native.c — emu/train/train.c's GPT-2 and optimizer in plain C
 * `float` (train_native.h). Each loop is the operation of docs/train.md
 * ("Each kernel's order of operations") under the fp32 policy: every sum
 * sequential from +0, every GEMM output a chain of fmaf over the contraction
 * index ascending, LayerNorm, softmax and GELU in the formulas train.c
 * evaluates, the optimizer in PyTorch's order with train.c's scalars. So the
 * losses equal the emulator's fp32 ones bit for bit but where libm's expf,
 * logf and 1/sqrtf differ from the correctly rounded values train.c uses
 * (cr evaluates those in double instead).
 *
 * Speed: the loops run over the contiguous index (the GEMMs over the output
 * column with the weights transposed, or over the contraction's row) so
 * the compiler vectorises them, the order of each output's chain
 * unchanged; the Makefile builds this file with -O3 -fno-math-errno, and on
 * x86-64 the hot functions have an x86-64-v3 clone (AVX2 and FMA: fmaf is
 * one instruction) chosen at load time, as emu/core/aops.c's loops do. No
 * engine, no function pointers, one allocation.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/train_native.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define NT_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define NT_HOT
#endif

/* the parameters in train.c's order (docs/train.md's table) */
enum {
	P_WTE,
	P_WPE,
	P_LN1W,
	P_LN1B,
	P_QKVW,
	P_QKVB,
	P_PROJW,
	P_PROJB,
	P_LN2W,
	P_LN2B,
	P_FCW,
	P_FCB,
	P_FCPROJW,
	P_FCPROJB,
	P_LNFW,
	P_LNFB,
	NP
};

static const double GELU_K = 0.044715, GELU_2C = 1.5957691216057308; /* 2·√(2/π) */

struct native_train {
	emu_train_cfg c;
	size_t L, d, H, hs, T, V, B, M, np;
	size_t off[NP], per[NP];
	bool cr;
	float *P, *G, *Mo, *Vo;
	/* per layer, L of each (the sizes: native_train_new) */
	float *ln1, *ln1y, *ln1r, *qkv, *att, *atty, *proj, *res1, *ln2, *ln2y, *ln2r, *fc, *gs,
	    *gelu, *fcproj, *res2;
	/* the head */
	float *x0, *lnf, *lnfy, *lnfr, *logits, *ez, *sum, *nll;
	/* scratch */
	float *dres, *s1, *s2, *s3, *wt, *row, *row2;
	void *block;
	size_t bytes;
	uint64_t step, adam_t;
	const int *inp, *tgt;
	double t_fwd, t_bwd, t_opt;
};

/* the thread's CPU seconds, as the bench times a step */
static double nt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* exp, log, 1/√x: libm's float functions, or double rounded to float */
static inline float nt_exp(bool cr, float x)
{
	return cr ? (float)exp((double)x) : expf(x);
}
static inline float nt_log(bool cr, float x)
{
	return cr ? (float)log((double)x) : logf(x);
}
static inline float nt_rsqrt(bool cr, float x)
{
	return cr ? (float)(1.0 / sqrt((double)x)) : 1.0f / sqrtf(x);
}
/* maximumNumber (NaN ignored, −0 < +0), as the engine's max */
static inline float nt_max(float x, float y)
{
	if (isnan(x))
		return y;
	if (isnan(y) || x > y || (x == y && !signbit(x)))
		return x;
	return y;
}

static bool global(int i)
{
	return i == P_WTE || i == P_WPE || i == P_LNFW || i == P_LNFB;
}
static size_t pcount(const native_train *t, int i)
{
	return global(i) ? t->per[i] : t->per[i] * t->L;
}
static float *PW(native_train *t, int i, size_t l)
{
	return t->P + t->off[i] + (global(i) ? 0 : l * t->per[i]);
}
static float *GW(native_train *t, int i, size_t l)
{
	return t->G + t->off[i] + (global(i) ? 0 : l * t->per[i]);
}

/* ---- linear layers: y[M,N] = x[M,K]·W[N,K]ᵀ + b ---- */

/* wt[k·N + n] = W[n·K + k] */
static void transpose(float *restrict wt, const float *restrict w, size_t N, size_t K)
{
	for (size_t n = 0; n < N; n++)
		for (size_t k = 0; k < K; k++)
			wt[k * N + n] = w[n * K + k];
}

/* y[m,n] = fold over k of fma(x[m,k], W[n,k], acc) from +0, then + b[n] */
NT_HOT static void lin_fwd(float *restrict y, const float *restrict x, const float *restrict wt,
                           const float *restrict b, size_t M, size_t K, size_t N)
{
	for (size_t m = 0; m < M; m++) {
		float *restrict ym = y + m * N;
		const float *restrict xm = x + m * K;
		for (size_t n = 0; n < N; n++)
			ym[n] = 0;
		for (size_t k = 0; k < K; k++) {
			float a = xm[k];
			const float *restrict wk = wt + k * N;
			for (size_t n = 0; n < N; n++)
				ym[n] = fmaf(a, wk[n], ym[n]);
		}
		if (b)
			for (size_t n = 0; n < N; n++)
				ym[n] = ym[n] + b[n];
	}
}

/* dx[m,k] = fold over n of dy[m,n]·W[n,k]; dW[n,k] = fold over m of
 * dy[m,n]·x[m,k], added into gw; db[n] = Σ_m dy[m,n], added into gb */
NT_HOT static void lin_bwd(float *restrict dx, float *restrict gw, float *restrict gb,
                           float *restrict acc, const float *restrict dy, const float *restrict x,
                           const float *restrict w, size_t M, size_t K, size_t N)
{
	for (size_t m = 0; m < M; m++) {
		float *restrict dxm = dx + m * K;
		for (size_t k = 0; k < K; k++)
			dxm[k] = 0;
		for (size_t n = 0; n < N; n++) {
			float a = dy[m * N + n];
			const float *restrict wn = w + n * K;
			for (size_t k = 0; k < K; k++)
				dxm[k] = fmaf(a, wn[k], dxm[k]);
		}
	}
	for (size_t n = 0; n < N; n++) {
		for (size_t k = 0; k < K; k++)
			acc[k] = 0;
		for (size_t m = 0; m < M; m++) {
			float a = dy[m * N + n];
			const float *restrict xm = x + m * K;
			for (size_t k = 0; k < K; k++)
				acc[k] = fmaf(a, xm[k], acc[k]);
		}
		float *restrict g = gw + n * K;
		for (size_t k = 0; k < K; k++)
			g[k] = g[k] + acc[k];
	}
	if (gb) {
		for (size_t n = 0; n < N; n++)
			acc[n] = 0;
		for (size_t m = 0; m < M; m++)
			for (size_t n = 0; n < N; n++)
				acc[n] = acc[n] + dy[m * N + n];
		for (size_t n = 0; n < N; n++)
			gb[n] = gb[n] + acc[n];
	}
}

/* ---- LayerNorm: y = (x − mean)·rstd·w + b; ŷ and rstd kept ---- */

NT_HOT static void ln_fwd(const native_train *t, float *restrict y, float *restrict yhat,
                          float *restrict rstd, const float *restrict x, const float *restrict w,
                          const float *restrict b)
{
	size_t d = t->d;
	float df = (float)d, eps = (float)t->c.ln_eps;
	for (size_t m = 0; m < t->M; m++) {
		const float *restrict xm = x + m * d;
		float *restrict c = yhat + m * d, *restrict ym = y + m * d;
		float s = 0;
		for (size_t j = 0; j < d; j++)
			s = s + xm[j];
		float mean = s / df;
		for (size_t j = 0; j < d; j++)
			c[j] = xm[j] - mean;
		float s2 = 0;
		for (size_t j = 0; j < d; j++) {
			float q = c[j] * c[j];
			s2 = s2 + q;
		}
		float var = s2 / df;
		float r = nt_rsqrt(t->cr, var + eps);
		rstd[m] = r;
		for (size_t j = 0; j < d; j++) {
			c[j] = c[j] * r;
			ym[j] = c[j] * w[j];
			ym[j] = ym[j] + b[j];
		}
	}
}

/* dx = rstd·(dy·w − mean(dy·w) − ŷ·mean(dy·w·ŷ)), added into dres after
 * the parameters' gradients: gw += Σ_m dy·ŷ, gb += Σ_m dy (column sums) */
NT_HOT static void ln_bwd(native_train *t, float *restrict dres, const float *restrict dy,
                          const float *restrict yhat, const float *restrict rstd,
                          const float *restrict w, float *restrict gw, float *restrict gb)
{
	size_t d = t->d, M = t->M;
	float df = (float)d;
	float *restrict dx = t->s3, *restrict dw = t->row, *restrict tmp = t->row2;
	for (size_t m = 0; m < M; m++) {
		const float *restrict dym = dy + m * d, *restrict Y = yhat + m * d;
		float *restrict X = dx + m * d;
		float a1 = 0, a2 = 0;
		for (size_t j = 0; j < d; j++) {
			dw[j] = dym[j] * w[j];
			a1 = a1 + dw[j];
		}
		for (size_t j = 0; j < d; j++) {
			tmp[j] = dw[j] * Y[j];
			a2 = a2 + tmp[j];
		}
		a1 = a1 / df;
		a2 = a2 / df;
		float r = rstd[m];
		for (size_t j = 0; j < d; j++) {
			float v = dw[j] - a1;
			v = v - Y[j] * a2;
			X[j] = v * r;
		}
	}
	for (size_t j = 0; j < d; j++)
		dw[j] = 0, tmp[j] = 0;
	for (size_t m = 0; m < M; m++)
		for (size_t j = 0; j < d; j++) {
			float p = dy[m * d + j] * yhat[m * d + j];
			dw[j] = dw[j] + p;
			tmp[j] = tmp[j] + dy[m * d + j];
		}
	for (size_t j = 0; j < d; j++) {
		gw[j] = gw[j] + dw[j];
		gb[j] = gb[j] + tmp[j];
	}
	for (size_t i = 0; i < M * d; i++)
		dres[i] = dres[i] + dx[i];
}

/* ---- causal attention, naive, per batch row and head ---- */

NT_HOT static void attn_fwd(const native_train *t, float *restrict y, float *restrict att,
                            const float *restrict qkv)
{
	size_t T = t->T, H = t->H, hs = t->hs, d = t->d, d3 = 3 * d;
	float scale = (float)(1.0 / sqrt((double)hs));
	float *restrict s = t->row;
	memset(att, 0, t->B * H * T * T * sizeof *att);
	for (size_t b = 0; b < t->B; b++)
		for (size_t h = 0; h < H; h++) {
			const float *q = qkv + b * T * d3 + h * hs, *k = q + d, *v = q + 2 * d;
			float *a = att + (b * H + h) * T * T;
			for (size_t i = 0; i < T; i++) {
				size_t n = i + 1;
				for (size_t j = 0; j < n; j++) {
					float acc = 0;
					for (size_t c = 0; c < hs; c++)
						acc = fmaf(q[i * d3 + c], k[j * d3 + c], acc);
					s[j] = acc * scale;
				}
				float mx = s[0];
				for (size_t j = 1; j < n; j++)
					mx = nt_max(mx, s[j]);
				float sum = 0;
				for (size_t j = 0; j < n; j++) {
					s[j] = nt_exp(t->cr, s[j] - mx);
					sum = sum + s[j];
				}
				for (size_t j = 0; j < n; j++)
					a[i * T + j] = s[j] / sum;
			}
			for (size_t i = 0; i < T; i++) {
				float *restrict yi = y + (b * T + i) * d + h * hs;
				for (size_t c = 0; c < hs; c++)
					yi[c] = 0;
				for (size_t j = 0; j <= i; j++) {
					float p = a[i * T + j];
					for (size_t c = 0; c < hs; c++)
						yi[c] = fmaf(p, v[j * d3 + c], yi[c]);
				}
			}
		}
}

/* dy [M,d] -> dqkv [M,3d] */
NT_HOT static void attn_bwd(const native_train *t, float *restrict dqkv, const float *restrict dy,
                            const float *restrict att, const float *restrict qkv)
{
	size_t T = t->T, H = t->H, hs = t->hs, d = t->d, d3 = 3 * d, TT = T * T;
	float scale = (float)(1.0 / sqrt((double)hs));
	float *restrict da = t->s2;
	memset(dqkv, 0, t->M * d3 * sizeof *dqkv);
	for (size_t b = 0; b < t->B; b++)
		for (size_t h = 0; h < H; h++) {
			const float *q = qkv + b * T * d3 + h * hs, *k = q + d, *v = q + 2 * d;
			const float *dyb = dy + b * T * d + h * hs;
			const float *a = att + (b * H + h) * TT;
			float *dq = dqkv + b * T * d3 + h * hs, *dk = dq + d, *dv = dq + 2 * d;
			/* datt[i,j] = Σ_c dy[i,c]·v[j,c], j ≤ i */
			memset(da, 0, TT * sizeof *da);
			for (size_t i = 0; i < T; i++)
				for (size_t j = 0; j <= i; j++) {
					float acc = 0;
					for (size_t c = 0; c < hs; c++)
						acc = fmaf(dyb[i * d + c], v[j * d3 + c], acc);
					da[i * T + j] = acc;
				}
			/* dv[j,c] = Σ_{i ≥ j} att[i,j]·dy[i,c] */
			for (size_t j = 0; j < T; j++) {
				float *restrict dvj = dv + j * d3;
				for (size_t i = j; i < T; i++) {
					float p = a[i * T + j];
					for (size_t c = 0; c < hs; c++)
						dvj[c] = fmaf(p, dyb[i * d + c], dvj[c]);
				}
			}
			/* ds = att·(datt − Σ_j att·datt)·scale */
			for (size_t i = 0; i < T; i++) {
				float s = 0;
				for (size_t j = 0; j <= i; j++) {
					float p = a[i * T + j] * da[i * T + j];
					s = s + p;
				}
				for (size_t j = 0; j <= i; j++) {
					float x = da[i * T + j] - s;
					x = x * a[i * T + j];
					da[i * T + j] = x * scale;
				}
			}
			/* dq[i,c] = Σ_{j ≤ i} ds[i,j]·k[j,c]; dk[i,c] = Σ_{j ≥ i} ds[j,i]·q[j,c] */
			for (size_t i = 0; i < T; i++) {
				float *restrict dqi = dq + i * d3, *restrict dki = dk + i * d3;
				for (size_t j = 0; j <= i; j++) {
					float p = da[i * T + j];
					for (size_t c = 0; c < hs; c++)
						dqi[c] = fmaf(p, k[j * d3 + c], dqi[c]);
				}
				for (size_t j = i; j < T; j++) {
					float p = da[j * T + i];
					for (size_t c = 0; c < hs; c++)
						dki[c] = fmaf(p, q[j * d3 + c], dki[c]);
				}
			}
		}
}

/* ---- GELU, tanh form, as train.c computes it ---- */

NT_HOT static void gelu_fwd(const native_train *t, float *restrict y, float *restrict sg,
                            const float *restrict x, size_t n)
{
	const float k = (float)GELU_K, c = (float)GELU_2C;
	for (size_t i = 0; i < n; i++) {
		float X = x[i], u = X * X;
		u = u * X;
		u = u * k;
		u = X + u;
		u = u * c; /* v = 2u */
		/* σ(v) = exp(min(0, v)) / (1 + exp(min(v, −v))); min(v, −v) is
		 * −|v| and min(v, 0) differs from v < 0 ? v : 0 only in the sign
		 * of a zero, which exp does not see: both without a branch */
		float den = 1.0f + nt_exp(t->cr, -fabsf(u));
		float num = nt_exp(t->cr, u < 0 ? u : 0.0f);
		float s = num / den;
		sg[i] = s;
		y[i] = X * s;
	}
}

/* dx = dy·(σ + x·2√(2/π)(1 + 3·0.044715x²)·σ(1 − σ)) */
NT_HOT static void gelu_bwd(float *restrict dx, const float *restrict dy, const float *restrict x,
                            const float *restrict sg, size_t n)
{
	const float k3 = (float)(3 * GELU_K), c = (float)GELU_2C;
	for (size_t i = 0; i < n; i++) {
		float X = x[i], S = sg[i], p = X * X;
		p = p * k3;
		p = 1.0f + p;
		p = p * c;
		p = p * X;
		float q = 1.0f - S;
		q = S * q;
		p = p * q;
		p = S + p;
		dx[i] = dy[i] * p;
	}
}

NT_HOT static void vadd(float *restrict out, const float *restrict a, const float *restrict b,
                        size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

/* ---- the forward pass and the loss ---- */

static float forward(native_train *t)
{
	size_t M = t->M, d = t->d, V = t->V, L = t->L;
	for (size_t m = 0; m < M; m++) {
		const float *e = PW(t, P_WTE, 0) + (size_t)t->inp[m] * d,
		            *p = PW(t, P_WPE, 0) + (m % t->T) * d;
		vadd(t->x0 + m * d, e, p, d);
	}
	const float *x = t->x0;
	for (size_t l = 0; l < L; l++) {
		size_t Md = M * d;
		float *ln1 = t->ln1 + l * Md, *qkv = t->qkv + l * 3 * Md,
		      *att = t->att + l * t->B * t->H * t->T * t->T, *atty = t->atty + l * Md,
		      *proj = t->proj + l * Md, *res1 = t->res1 + l * Md, *ln2 = t->ln2 + l * Md,
		      *fc = t->fc + l * 4 * Md, *gelu = t->gelu + l * 4 * Md,
		      *fcproj = t->fcproj + l * Md, *res2 = t->res2 + l * Md;
		ln_fwd(t, ln1, t->ln1y + l * Md, t->ln1r + l * M, x, PW(t, P_LN1W, l),
		       PW(t, P_LN1B, l));
		transpose(t->wt, PW(t, P_QKVW, l), 3 * d, d);
		lin_fwd(qkv, ln1, t->wt, PW(t, P_QKVB, l), M, d, 3 * d);
		attn_fwd(t, atty, att, qkv);
		transpose(t->wt, PW(t, P_PROJW, l), d, d);
		lin_fwd(proj, atty, t->wt, PW(t, P_PROJB, l), M, d, d);
		vadd(res1, x, proj, Md);
		ln_fwd(t, ln2, t->ln2y + l * Md, t->ln2r + l * M, res1, PW(t, P_LN2W, l),
		       PW(t, P_LN2B, l));
		transpose(t->wt, PW(t, P_FCW, l), 4 * d, d);
		lin_fwd(fc, ln2, t->wt, PW(t, P_FCB, l), M, d, 4 * d);
		gelu_fwd(t, gelu, t->gs + l * 4 * Md, fc, 4 * Md);
		transpose(t->wt, PW(t, P_FCPROJW, l), d, 4 * d);
		lin_fwd(fcproj, gelu, t->wt, PW(t, P_FCPROJB, l), M, 4 * d, d);
		vadd(res2, res1, fcproj, Md);
		x = res2;
	}
	ln_fwd(t, t->lnf, t->lnfy, t->lnfr, x, PW(t, P_LNFW, 0), PW(t, P_LNFB, 0));
	transpose(t->wt, PW(t, P_WTE, 0), V, d);
	lin_fwd(t->logits, t->lnf, t->wt, NULL, M, d, V);
	/* softmax cross-entropy, the mean over the positions */
	for (size_t m = 0; m < M; m++) {
		float *z = t->logits + m * V, *ez = t->ez + m * V;
		float mx = z[0];
		for (size_t j = 1; j < V; j++)
			mx = nt_max(mx, z[j]);
		float s = 0;
		for (size_t j = 0; j < V; j++) {
			z[j] = z[j] - mx;
			ez[j] = nt_exp(t->cr, z[j]);
			s = s + ez[j];
		}
		t->sum[m] = s;
		t->nll[m] = nt_log(t->cr, s) - z[t->tgt[m]];
	}
	float loss = 0;
	for (size_t m = 0; m < M; m++)
		loss = loss + t->nll[m];
	return loss / (float)M;
}

/* .grad = the gradients of the loss forward() computed */
static void backward(native_train *t)
{
	size_t M = t->M, d = t->d, V = t->V, L = t->L, Md = M * d;
	memset(t->G, 0, t->np * sizeof *t->G);
	/* dlogits = (softmax − onehot)·(1 / M) */
	float g = 1.0f / (float)M, *dl = t->s1;
	for (size_t m = 0; m < M; m++) {
		for (size_t j = 0; j < V; j++)
			dl[m * V + j] = t->ez[m * V + j] / t->sum[m];
		dl[m * V + (size_t)t->tgt[m]] = dl[m * V + (size_t)t->tgt[m]] - 1.0f;
		for (size_t j = 0; j < V; j++)
			dl[m * V + j] = dl[m * V + j] * g;
	}
	float *dx = t->s2, *dres = t->dres;
	lin_bwd(dx, GW(t, P_WTE, 0), NULL, t->row, dl, t->lnf, PW(t, P_WTE, 0), M, d, V);
	memset(dres, 0, Md * sizeof *dres);
	ln_bwd(t, dres, dx, t->lnfy, t->lnfr, PW(t, P_LNFW, 0), GW(t, P_LNFW, 0), GW(t, P_LNFB, 0));
	for (size_t l = L; l-- > 0;) {
		float *d1 = t->s1, *d2 = t->s2;
		/* fcproj, gelu, fc, ln2 */
		lin_bwd(d1, GW(t, P_FCPROJW, l), GW(t, P_FCPROJB, l), t->row, dres,
		        t->gelu + l * 4 * Md, PW(t, P_FCPROJW, l), M, 4 * d, d);
		gelu_bwd(d2, d1, t->fc + l * 4 * Md, t->gs + l * 4 * Md, 4 * Md);
		lin_bwd(d1, GW(t, P_FCW, l), GW(t, P_FCB, l), t->row, d2, t->ln2 + l * Md,
		        PW(t, P_FCW, l), M, d, 4 * d);
		ln_bwd(t, dres, d1, t->ln2y + l * Md, t->ln2r + l * M, PW(t, P_LN2W, l),
		       GW(t, P_LN2W, l), GW(t, P_LN2B, l));
		/* proj, attention, qkv, ln1 */
		lin_bwd(d1, GW(t, P_PROJW, l), GW(t, P_PROJB, l), t->row, dres, t->atty + l * Md,
		        PW(t, P_PROJW, l), M, d, d);
		float *dq = t->s3; /* attn_bwd's scratch is s2 */
		attn_bwd(t, dq, d1, t->att + l * t->B * t->H * t->T * t->T, t->qkv + l * 3 * Md);
		lin_bwd(d1, GW(t, P_QKVW, l), GW(t, P_QKVB, l), t->row, dq, t->ln1 + l * Md,
		        PW(t, P_QKVW, l), M, d, 3 * d);
		ln_bwd(t, dres, d1, t->ln1y + l * Md, t->ln1r + l * M, PW(t, P_LN1W, l),
		       GW(t, P_LN1W, l), GW(t, P_LN1B, l));
	}
	/* the embeddings: rows added in position order */
	for (size_t m = 0; m < M; m++) {
		vadd(GW(t, P_WTE, 0) + (size_t)t->inp[m] * d,
		     GW(t, P_WTE, 0) + (size_t)t->inp[m] * d, dres + m * d, d);
		vadd(GW(t, P_WPE, 0) + (m % t->T) * d, GW(t, P_WPE, 0) + (m % t->T) * d,
		     dres + m * d, d);
	}
}

/* ---- the optimizer: the global norm, clipping, AdamW ---- */

static bool decays(int i)
{
	return i == P_WTE || i == P_WPE || i == P_QKVW || i == P_PROJW || i == P_FCW ||
	       i == P_FCPROJW;
}

static double lr_at(const emu_train_cfg *c, uint64_t s)
{
	if (s <= c->warmup)
		return c->lr * (double)s / (double)c->warmup;
	if (c->steps <= c->warmup)
		return c->lr;
	double r = (double)(s - c->warmup) / (double)(c->steps - c->warmup);
	return c->min_lr + 0.5 * (c->lr - c->min_lr) * (1 + cos(3.141592653589793 * r));
}

NT_HOT static float sumsq(const float *restrict g, size_t n)
{
	float ss = 0;
	for (size_t j = 0; j < n; j++) {
		float x = g[j] * g[j];
		ss = ss + x;
	}
	return ss;
}

NT_HOT static void scale(float *restrict g, float coef, size_t n)
{
	for (size_t j = 0; j < n; j++)
		g[j] = g[j] * coef;
}

typedef struct {
	float decay, lerp_w, beta2, om_beta2, eps, neg_ss, bc2s;
	bool decays, small;
} adam_k;

/* torch/optim/adamw.py's _single_tensor_adamw, each tensor rounded to float */
NT_HOT static void adamw(float *restrict w, float *restrict m, float *restrict v,
                         const float *restrict g, size_t n, const adam_k *k)
{
	if (k->decays)
		for (size_t j = 0; j < n; j++)
			w[j] = w[j] * k->decay;
	for (size_t j = 0; j < n; j++) {
		float D = g[j] - m[j];
		D = k->lerp_w * D;
		m[j] = k->small ? m[j] + D : g[j] - D;
		float vv = v[j] * k->beta2;
		D = k->om_beta2 * g[j];
		D = D * g[j];
		vv = vv + D;
		v[j] = vv;
		D = sqrtf(vv);
		D = D / k->bc2s;
		D = D + k->eps;
		float X = k->neg_ss * m[j];
		X = X / D;
		w[j] = w[j] + X;
	}
}

static void optimize(native_train *t, double lr, double *gnorm)
{
	const emu_train_cfg *c = &t->c;
	/* one sequential sum over the tensors in order: they are contiguous */
	float ss = sumsq(t->G, t->np);
	float norm = sqrtf(ss);
	*gnorm = norm;
	if (c->clip > 0) {
		float coef = norm + (float)1e-6;
		coef = (float)c->clip / coef;
		if (!(coef >= 1))
			scale(t->G, coef, t->np);
	}
	uint64_t s = ++t->adam_t;
	double bc1 = 1 - pow(c->beta1, (double)s), bc2 = 1 - pow(c->beta2, (double)s);
	adam_k k = {
	    (float)(1 - lr * c->wd), (float)(1 - c->beta1), (float)c->beta2,  (float)(1 - c->beta2),
	    (float)c->eps,           (float)(-(lr / bc1)),  (float)sqrt(bc2), false,
	    1 - c->beta1 < 0.5};
	if (!k.small) /* lerp's second form: weight 1 − (1 − β1) */
		k.lerp_w = 1.0f - k.lerp_w;
	for (int i = 0; i < NP; i++) {
		size_t o = t->off[i];
		k.decays = c->wd != 0 && decays(i);
		adamw(t->P + o, t->Mo + o, t->Vo + o, t->G + o, pcount(t, i), &k);
	}
}

void native_train_step(native_train *t, const int *inputs, const int *targets, native_row *row)
{
	uint64_t s = ++t->step;
	t->inp = inputs, t->tgt = targets;
	row->lr = lr_at(&t->c, s);
	double t0 = nt_now();
	row->loss = forward(t);
	double t1 = nt_now();
	backward(t);
	double t2 = nt_now();
	optimize(t, row->lr, &row->grad_norm);
	double t3 = nt_now();
	t->t_fwd += t1 - t0, t->t_bwd += t2 - t1, t->t_opt += t3 - t2;
}

/* ---- the trainer ---- */

native_train *native_train_new(const emu_train_cfg *c, const emu_train *init, bool cr, char *err,
                               size_t errlen)
{
	if (emu_train_cfg_check(c, err, errlen) != 0)
		return NULL;
	if (c->micro != 1 || c->spike_step || c->lr_spike_step || c->pol.scaler) {
		snprintf(err, errlen,
		         "native trainer: one micro-batch, no loss scaling, no fault injection");
		return NULL;
	}
	if (emu_train_ntensors(init) != NP) {
		snprintf(err, errlen, "native trainer: %zu parameter tensors, not %d",
		         emu_train_ntensors(init), NP);
		return NULL;
	}
	native_train *t = calloc(1, sizeof *t);
	if (!t) {
		snprintf(err, errlen, "native trainer: out of memory");
		return NULL;
	}
	t->c = *c;
	t->cr = cr;
	t->L = c->layers, t->d = c->d, t->H = c->heads, t->hs = c->d / c->heads;
	t->T = c->seq, t->V = c->vocab, t->B = c->batch, t->M = t->B * t->T;
	size_t d = t->d, L = t->L, M = t->M, V = t->V, T = t->T;
	size_t per[NP] = {V * d, T * d, d,         d,     3 * d * d, 3 * d, d * d, d,
	                  d,     d,     4 * d * d, 4 * d, 4 * d * d, d,     d,     d};
	size_t o = 0;
	for (int i = 0; i < NP; i++) {
		t->off[i] = o;
		t->per[i] = per[i];
		o += pcount(t, i);
	}
	t->np = o;
	if (emu_train_nparams(init) != t->np) {
		snprintf(err, errlen, "native trainer: %zu parameters, the model here has %zu",
		         emu_train_nparams(init), t->np);
		free(t);
		return NULL;
	}
	size_t BHTT = t->B * t->H * T * T, Md = M * d;
	size_t big = 4 * Md;
	if (big < M * V)
		big = M * V;
	size_t big2 = big > T * T ? big : T * T; /* s2: attn_bwd's datt too */
	size_t w = 4 * d * d > V * d ? 4 * d * d : V * d;
	size_t rw = 4 * d > V ? 4 * d : V;
	if (rw < T)
		rw = T;
	/* every array in one block, each on a 64-byte line */
	struct {
		float **p;
		size_t n;
	} parts[] = {
	    {&t->P, t->np},       {&t->G, t->np},        {&t->Mo, t->np},
	    {&t->Vo, t->np},      {&t->ln1, L * Md},     {&t->ln1y, L * Md},
	    {&t->ln1r, L * M},    {&t->qkv, L * 3 * Md}, {&t->att, L * BHTT},
	    {&t->atty, L * Md},   {&t->proj, L * Md},    {&t->res1, L * Md},
	    {&t->ln2, L * Md},    {&t->ln2y, L * Md},    {&t->ln2r, L * M},
	    {&t->fc, L * 4 * Md}, {&t->gs, L * 4 * Md},  {&t->gelu, L * 4 * Md},
	    {&t->fcproj, L * Md}, {&t->res2, L * Md},    {&t->x0, Md},
	    {&t->lnf, Md},        {&t->lnfy, Md},        {&t->lnfr, M},
	    {&t->logits, M * V},  {&t->ez, M * V},       {&t->sum, M},
	    {&t->nll, M},         {&t->dres, Md},        {&t->s1, big},
	    {&t->s2, big2},       {&t->s3, big},         {&t->wt, w},
	    {&t->row, rw},        {&t->row2, rw},
	};
	size_t nparts = sizeof parts / sizeof *parts, floats = 0;
	for (size_t i = 0; i < nparts; i++)
		floats += (parts[i].n + 15) / 16 * 16;
	t->bytes = sizeof *t + 64 + floats * sizeof(float);
	t->block = calloc(1, 64 + floats * sizeof(float));
	if (!t->block) {
		snprintf(err, errlen, "native trainer: out of memory");
		free(t);
		return NULL;
	}
	float *p = (float *)(((uintptr_t)t->block + 63) & ~(uintptr_t)63);
	for (size_t i = 0; i < nparts; i++) {
		*parts[i].p = p;
		p += (parts[i].n + 15) / 16 * 16;
	}
	/* the initial parameters: train.c's draws, already rounded to fp32 */
	for (int i = 0; i < NP; i++) {
		double *v, *g;
		size_t n;
		emu_train_tensor(init, (size_t)i, &v, &g, &n);
		for (size_t j = 0; j < n; j++)
			t->P[t->off[i] + j] = (float)v[j];
	}
	return t;
}

void native_train_free(native_train *t)
{
	if (!t)
		return;
	free(t->block);
	free(t);
}

size_t native_train_nparams(const native_train *t)
{
	return t->np;
}

const float *native_train_params(const native_train *t, size_t *n)
{
	*n = t->np;
	return t->P;
}

size_t native_train_bytes(const native_train *t)
{
	return t->bytes;
}

void native_train_times(const native_train *t, double *fwd, double *bwd, double *opt)
{
	*fwd = t->t_fwd, *bwd = t->t_bwd, *opt = t->t_opt;
}
