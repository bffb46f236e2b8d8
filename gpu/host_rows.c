/*
 * host_mirror.c — the training kernels of gpu/kern.cu on the host, line by
 * line, each GPU instruction replaced by the emulator's operation of the same
 * format. Two uses:
 *  - with no tables it is the fake device's kernel (gpu/dev_fake.c): the
 *    emulator's own kernels (emu/softmax.c, layernorm.c, backward.c) must give
 *    the same bits, which proves the CUDA code keeps their order of
 *    operations without a GPU;
 *  - with the tables measured on the GPU (gpu-tables.txt), fp16/bf16 exp,
 *    log and rsqrt are the GPU's own results, every other operation is
 *    correctly rounded on both sides, so the mirror predicts the GPU's fp16
 *    and bf16 kernels bit for bit (the "replay" rows of the kern step).
 * Keep it in step with gpu/kern.cu: a change there is a change here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_dev.h"
#include "gpu_host.h"

static const emu_env rne = EMU_ENV_DEFAULT;

static const emu_format *kf(int f)
{
	return emu_format_by_name(f == GPU_K_F16 ? "fp16" : f == GPU_K_BF16 ? "bf16" : "fp32");
}

static double rnd(int f, double x)
{
	return emu_decode(kf(f), emu_from_double(kf(f), x, &rne).bits);
}

/* op in format f; exp, log and rsqrt of fp16/bf16 from t when given */
static double f_op(const gpu_tables *t, int f, emu_op op, double a, double b)
{
	const emu_format *F = kf(f);
	emu_bits args[2] = {emu_encode(F, a), emu_encode(F, b)}, r;
	if (t && gpu_tables_lookup(t, gpu_table_func(op), F, args[0], &r))
		return emu_decode(F, r);
	return emu_decode(F, emu_apply(op, F, NULL, args, &rne).bits);
}

#define F_ADD(f, a, b) f_op(t, f, EMU_OP_ADD, a, b)
#define F_SUB(f, a, b) f_op(t, f, EMU_OP_SUB, a, b)
#define F_DIV(f, a, b) f_op(t, f, EMU_OP_DIV, a, b)
#define F_EXP(f, a) f_op(t, f, EMU_OP_EXP, a, 0)
#define F_LOG(f, a) f_op(t, f, EMU_OP_LOG, a, 0)
#define F_MAX(f, a, b) f_op(t, f, EMU_OP_MAX, a, b)

int gpu_mirror_softmax(const gpu_tables *t, int v, int S, int C, int A,
                       const float *X, size_t R, size_t N, float *grad, float *loss, char *err,
                       size_t len)
{
	double *la_acc = malloc(R * sizeof *la_acc);
	if (!la_acc) {
		snprintf(err, len, "fake: out of memory");
		return -1;
	}
	for (size_t r = 0; r < R; r++) {
		const float *x = X + r * N;
		size_t y = r % N;
		double Rc = rnd(C, (double)R), m = 0.0, s = 0.0, ls, la;
#define XC(j) rnd(C, x[j])
		if (v >= 1) {
			m = XC(0);
			for (size_t j = 1; j < N; j++)
				m = F_MAX(C, m, XC(j));
		}
		for (size_t j = 0; j < N; j++) {
			double e = v >= 1 ? F_EXP(C, F_SUB(C, XC(j), m)) : F_EXP(C, XC(j));
			s = F_ADD(A, s, rnd(A, e));
		}
		s = rnd(C, s);
		ls = F_LOG(C, s);
		if (v == 0) {
			la = F_SUB(C, ls, XC(y));
		} else if (v == 1) {
			la = F_SUB(C, ls, F_SUB(C, XC(y), m));
		} else {
			ls = F_ADD(C, m, ls);
			la = F_SUB(C, ls, XC(y));
		}
		la_acc[r] = rnd(A, la);
		for (size_t j = 0; j < N; j++) {
			double g;
			if (v == 2)
				g = F_EXP(C, F_SUB(C, XC(j), ls));
			else
				g = F_DIV(C, v >= 1 ? F_EXP(C, F_SUB(C, XC(j), m)) : F_EXP(C, XC(j)), s);
			if (j == y)
				g = F_SUB(C, g, 1.0);
			g = F_DIV(C, g, Rc);
			grad[r * N + j] = (float)rnd(S, g);
		}
#undef XC
	}
	double sum = 0.0;
	for (size_t r = 0; r < R; r++)
		sum = F_ADD(A, sum, la_acc[r]);
	*loss = (float)F_DIV(A, sum, rnd(A, (double)R));
	free(la_acc);
	return 0;
}

#define F_MUL(f, a, b) f_op(t, f, EMU_OP_MUL, a, b)
#define F_RSQRT(f, a) f_op(t, f, EMU_OP_RSQRT, a, 0)

/* layernorm: gpu/kern.cu's k_layernorm_rows */
int gpu_mirror_layernorm(const gpu_tables *t, int v, int S, int C, int A,
                         const float *X, const float *DY, size_t R, size_t N, float epsc,
                         float *Y, float *DX, float *RSTD, float *VAR, char *err, size_t len)
{
	double *yc = malloc(N * sizeof *yc);
	if (!yc) {
		snprintf(err, len, "fake: out of memory");
		return -1;
	}
	for (size_t r = 0; r < R; r++) {
		const float *x = X + r * N, *dyin = DY + r * N;
		double Na = rnd(A, (double)N), mean = 0.0, s = 0.0, s2 = 0.0, ma, tmp, tmp2;
#define XC(j) rnd(C, x[j])
		if (v == 2) {
			ma = 0.0;
			for (size_t j = 0; j < N; j++) {
				double xa = rnd(A, XC(j));
				tmp = F_SUB(A, xa, ma);
				tmp2 = F_DIV(A, tmp, rnd(A, (double)(j + 1)));
				ma = F_ADD(A, ma, tmp2);
				tmp2 = F_SUB(A, xa, ma);
				tmp = F_MUL(A, tmp, tmp2);
				s2 = F_ADD(A, s2, tmp);
			}
			s2 = F_DIV(A, s2, Na);
		} else {
			for (size_t j = 0; j < N; j++) {
				s = F_ADD(A, s, rnd(A, XC(j)));
				if (v == 1)
					s2 = F_ADD(A, s2, rnd(A, F_MUL(C, XC(j), XC(j))));
			}
			ma = F_DIV(A, s, Na);
			if (v == 1) {
				s2 = F_DIV(A, s2, Na);
				s2 = F_SUB(A, s2, F_MUL(A, ma, ma));
			} else {
				mean = rnd(C, ma);
				for (size_t j = 0; j < N; j++) {
					yc[j] = F_SUB(C, XC(j), mean);
					s2 = F_ADD(A, s2, rnd(A, F_MUL(C, yc[j], yc[j])));
				}
				s2 = F_DIV(A, s2, Na);
			}
		}
		if (v != 0)
			mean = rnd(C, ma);
		double vr = rnd(C, s2);
		double rs = F_RSQRT(C, F_ADD(C, vr, epsc));
		VAR[r] = (float)vr;
		RSTD[r] = (float)rs;
		for (size_t j = 0; j < N; j++) {
			if (v != 0)
				yc[j] = F_SUB(C, XC(j), mean);
			yc[j] = F_MUL(C, yc[j], rs);
			Y[r * N + j] = (float)rnd(S, yc[j]);
		}
		s = 0.0;
		s2 = 0.0;
		for (size_t j = 0; j < N; j++) {
			double dy = rnd(C, dyin[j]);
			s = F_ADD(A, s, rnd(A, dy));
			s2 = F_ADD(A, s2, rnd(A, F_MUL(C, dy, yc[j])));
		}
		double dmean = rnd(C, F_DIV(A, s, Na));
		double dproj = rnd(C, F_DIV(A, s2, Na));
		for (size_t j = 0; j < N; j++) {
			double dy = rnd(C, dyin[j]);
			tmp = F_SUB(C, dy, dmean);
			tmp2 = F_MUL(C, yc[j], dproj);
			tmp = F_SUB(C, tmp, tmp2);
			tmp = F_MUL(C, tmp, rs);
			DX[r * N + j] = (float)rnd(S, tmp);
		}
#undef XC
	}
	free(yc);
	return 0;
}

/* backward: gpu/kern.cu's k_bw_rows, k_softmax_mean, k_bw_grads, k_bw_unscale */
int gpu_mirror_backward(const gpu_tables *t, int S, int C, int A, const float *X,
                        const float *W, size_t R, size_t D, size_t K, float scale, float inv,
                        float *G, float *U, float *loss, float *found, char *err, size_t len)
{
	double *z = malloc(K * sizeof *z), *e = malloc(K * sizeof *e);
	double *DL = malloc(R * K * sizeof *DL), *la = malloc(R * sizeof *la);
	int rc = -1;
	if (!z || !e || !DL || !la) {
		snprintf(err, len, "fake: out of memory");
		goto out;
	}
	double Rc = rnd(C, (double)R), SR = F_DIV(C, rnd(C, scale), Rc);
	for (size_t r = 0; r < R; r++) {
		size_t y = r % K;
		for (size_t c = 0; c < K; c++) {
			double acc = 0.0;
			for (size_t d = 0; d < D; d++)
				acc = F_ADD(A, acc,
				            rnd(A, F_MUL(C, rnd(C, X[r * D + d]), rnd(C, W[d * K + c]))));
			z[c] = rnd(C, rnd(S, acc));
		}
		double m = z[0], s = 0.0;
		for (size_t c = 1; c < K; c++)
			m = F_MAX(C, m, z[c]);
		for (size_t c = 0; c < K; c++) {
			e[c] = F_EXP(C, F_SUB(C, z[c], m));
			s = F_ADD(A, s, rnd(A, e[c]));
		}
		s = rnd(C, s);
		double ls = F_LOG(C, s);
		la[r] = rnd(A, F_SUB(C, ls, F_SUB(C, z[y], m)));
		for (size_t c = 0; c < K; c++) {
			double g = F_DIV(C, e[c], s);
			if (c == y)
				g = F_SUB(C, g, 1.0);
			g = F_MUL(C, g, SR);
			DL[r * K + c] = rnd(C, rnd(S, g));
		}
	}
	double sum = 0.0;
	for (size_t r = 0; r < R; r++)
		sum = F_ADD(A, sum, la[r]);
	*loss = (float)F_DIV(A, sum, rnd(A, (double)R));
	for (size_t i = 0; i < D * K + R * D; i++) {
		double acc = 0.0;
		if (i < D * K) {
			size_t d = i / K, c = i % K;
			for (size_t r = 0; r < R; r++)
				acc = F_ADD(A, acc, rnd(A, F_MUL(C, rnd(C, X[r * D + d]), DL[r * K + c])));
		} else {
			size_t r = (i - D * K) / D, d = (i - D * K) % D;
			for (size_t c = 0; c < K; c++)
				acc = F_ADD(A, acc, rnd(A, F_MUL(C, DL[r * K + c], rnd(C, W[d * K + c]))));
		}
		G[i] = (float)rnd(S, acc);
	}
	*found = 0.0f;
	for (size_t i = 0; i < D * K + R * D; i++) {
		double o = inv != 1.0f ? F_MUL(GPU_K_F32, G[i], inv) : G[i];
		U[i] = (float)o;
		if (!isfinite(o))
			*found = 1.0f;
	}
	rc = 0;
out:
	free(z);
	free(e);
	free(DL);
	free(la);
	return rc;
}
