/*
 * run_attn.c — the runner's attn step (gpu/run.h): attention's variants,
 * the GEMMs on our mma.sync, the rest gpu/rows.h, against the engine's
 * kernel and the host replay.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/kernels/tc.h"
#include "emu/recipes/recipe.h"
#include "gpu/run.h"

/* ---- attn: attention's :tc variants, the GEMMs on our mma.sync, the rest gpu/rows.h ----
 *
 * emu/kernels/attention.c's naive:tc, online:tc and fp8:tc under the h200-mma model
 * (sm_90's mma.sync) as the GPU runs them: S_acc = Q·Kᵀ one mma.sync GEMM (gpu_dev_mma, K =
 * the head, in order), then gpu/rows.h's k_attn_soft_row per query, then
 * P·V as one GEMM (naive, K = the keys) or one per key block (online, fp8:
 * K = the block's keys, each from +0), then k_attn_out_row. Compared with
 * the engine's kernel on the fast backend, and (fp16/bf16 compute, with the
 * tables) with the same pipeline on the host: rows.h with the GPU's exp and
 * log, the GEMMs by the h200-mma model, so the GPU must agree bit for bit. fp8's
 * Q, K, V are quantised on the host by the recipe library, as the kernel
 * quantises them (e4m3, one fp32 scale per tile of block_k rows), so this
 * step checks the GEMMs and the softmax, not that quantiser (the quant step
 * checks the GPU's). */

typedef struct {
	int v, causal;
	size_t nq, nk, d, bk, tq, tk;
	const emu_format *S, *C, *A, *in; /* in: the GEMMs' inputs (C, or e4m3) */
	float sc, psc;
	const float *q, *k, *vv;      /* nq×d, nk×d, nk×d values of in */
	const float *dq8, *dk8, *dv8; /* fp8: decode scales in C; else NULL */
} attn_in;

/* D (M×N) = A (M×K) · B (N×K) from +0 into attn_in's A: the GPU's mma.sync,
 * or (host) the h200-mma model it is checked against; float values of A. */
static int attn_mma(const attn_in *a, bool host, const float *Af, const float *Bf, size_t M,
                    size_t N, size_t K, float *D)
{
	const emu_format *in = a->in, *out = a->A;
	uint16_t *ea = malloc(M * K * sizeof *ea), *eb = malloc(N * K * sizeof *eb);
	uint32_t *c = calloc(M * N, sizeof *c), *d = malloc(M * N * sizeof *d);
	emu_tc_model m;
	int rc = -1;
	if (!ea || !eb || !c || !d) {
		snprintf(run_err, sizeof run_err, "attn: out of memory");
		goto out;
	}
	for (size_t i = 0; i < M * K; i++)
		ea[i] = (uint16_t)emu_from_float(in, Af[i], &env_rne).bits;
	for (size_t i = 0; i < N * K; i++)
		eb[i] = (uint16_t)emu_from_float(in, Bf[i], &env_rne).bits;
	if (!host) {
		if (gpu_dev_mma(gfmt(in), out->bits == 16, ea, eb, c, M, N, K, 0, d, run_err,
		                sizeof run_err))
			goto out;
	} else {
		if (emu_tc_preset("h200-mma", in, out, &m)) {
			snprintf(run_err, sizeof run_err, "attn: no h200-mma preset for %s -> %s",
			         in->name, out->name);
			goto out;
		}
		emu_bits *ka = malloc(K * sizeof *ka), *kb = malloc(K * sizeof *kb);
		if (!ka || !kb) {
			free(ka);
			free(kb);
			snprintf(run_err, sizeof run_err, "attn: out of memory");
			goto out;
		}
		for (size_t ij = 0; ij < M * N; ij++) {
			for (size_t t = 0; t < K; t++) {
				ka[t] = ea[ij / N * K + t];
				kb[t] = eb[ij % N * K + t];
			}
			d[ij] = (uint32_t)emu_tc_dot(&m, in, out, ka, kb, K, 0).bits;
		}
		free(ka);
		free(kb);
	}
	for (size_t i = 0; i < M * N; i++)
		D[i] = (float)emu_decode(out, out->bits == 16 ? d[i] & 0xffffu : d[i]);
	rc = 0;
out:
	free(ea);
	free(eb);
	free(c);
	free(d);
	return rc;
}

/* The whole pipeline on the device, or (host) on the host with tables t:
 * O (nq×d, values of S), L (nq, C) and the number of P flushed. */
static int attn_pipe(const attn_in *a, bool host, const gpu_tables *t, float *O, float *L,
                     double *lost)
{
	size_t nq = a->nq, nk = a->nk, d = a->d, bk = a->bk, nkt = (nk + bk - 1) / bk;
	size_t nparts = a->v == 0 ? 1 : nkt, w = a->v == 0 ? nk : bk;
	float *sacc = malloc(nq * nk * sizeof *sacc), *P = malloc(nq * nk * sizeof *P);
	float *alpha = malloc(nq * nkt * sizeof *alpha), *lrow = malloc(nq * sizeof *lrow);
	float *nl = malloc(nq * sizeof *nl), *part = malloc(nparts * nq * d * sizeof *part);
	float *pb = malloc(nq * w * sizeof *pb), *vb = malloc(d * w * sizeof *vb);
	gpu_kfmt S = kfmt(a->S), C = kfmt(a->C), A = kfmt(a->A);
	int rc = -1;
	if (!sacc || !P || !alpha || !lrow || !nl || !part || !pb || !vb) {
		snprintf(run_err, sizeof run_err, "attn: out of memory");
		goto out;
	}
	if (attn_mma(a, host, a->q, a->k, nq, nk, d, sacc))
		goto out;
	if (host ? gpu_rows_attn_soft(t, a->v, C, A, sacc, nq, nk, bk, a->causal, a->sc, a->dq8,
	                              a->tq, a->dk8, a->tk, a->psc, P, alpha, lrow, L, nl, run_err,
	                              sizeof run_err)
	         : gpu_dev_attn_soft(a->v, C, A, sacc, nq, nk, bk, a->causal, a->sc, a->dq8, a->tq,
	                             a->dk8, a->tk, a->psc, P, alpha, lrow, L, nl, run_err,
	                             sizeof run_err))
		goto out;
	/* P·V: block b's keys [b·w, b·w + w) (naive: one block, every key) */
	for (size_t b = 0; b < nparts; b++) {
		for (size_t i = 0; i < nq; i++)
			for (size_t j = 0; j < w; j++)
				pb[i * w + j] = P[i * nk + b * w + j];
		for (size_t c = 0; c < d; c++)
			for (size_t j = 0; j < w; j++)
				vb[c * w + j] = a->vv[(b * w + j) * d + c];
		if (attn_mma(a, host, pb, vb, nq, d, w, part + b * nq * d))
			goto out;
	}
	if (host ? gpu_rows_attn_out(t, a->v, S, C, A, part, alpha, lrow, a->dv8, a->tk, a->psc, nq,
	                             nk, bk, a->causal, d, O, run_err, sizeof run_err)
	         : gpu_dev_attn_out(a->v, S, C, A, part, alpha, lrow, a->dv8, a->tk, a->psc, nq, nk,
	                            bk, a->causal, d, O, run_err, sizeof run_err))
		goto out;
	*lost = 0;
	for (size_t i = 0; i < nq; i++)
		*lost += nl[i];
	rc = 0;
out:
	free(sacc);
	free(P);
	free(alpha);
	free(lrow);
	free(nl);
	free(part);
	free(pb);
	free(vb);
	return rc;
}

/* fp8's quantisation of one of Q, K, V (rows × d compute-format values x),
 * as emu/kernels/attention.c's quantise(): values into q, decode scales (in C)
 * into ds, one per tile of `tile` rows; _by takes the recipe spec (fp8:bwd's
 * dO: its FP8 format, one scale per tensor). */
static int attn_quant_by(const emu_format *C, const char *spec, const double *x, size_t rows,
                         size_t d, size_t tile, uint64_t seed, float *q, float *ds)
{
	char e[160] = "";
	emu_recipe r;
	emu_qtensor qt;
	emu_qpart part = {0, rows, seed, NAN, 0};
	if (emu_recipe_parse(spec, &r, e, sizeof e) != EMU_OK ||
	    emu_quantize_part(&r, EMU_ROLE_ACT, false, x, rows, d, &part, &qt) != 0) {
		snprintf(run_err, sizeof run_err, "attn: quantiser: %s", e);
		return -1;
	}
	for (size_t i = 0; i < rows * d; i++)
		q[i] = (float)qt.q[i];
	for (size_t t = 0; t < (rows + tile - 1) / tile; t++)
		ds[t] = (float)emu_decode(C, emu_from_double(C, qt.d[t], &env_rne).bits);
	emu_qtensor_free(&qt);
	return 0;
}

static int attn_quant(const emu_format *C, const double *x, size_t rows, size_t d, size_t tile,
                      uint64_t seed, float *q, float *ds)
{
	char spec[128];
	snprintf(spec, sizeof spec, "elem=e4m3,scale=fp32,rule=fp32,block=%zux0,rht=no", tile);
	return attn_quant_by(C, spec, x, rows, d, tile, seed, q, ds);
}

/* The GPU's outputs against the engine's (2 ulp: exp and log are the
 * GPU's own) or against the host replay (exact). */
static void attn_compare(const char *kname, const char *fmts, const emu_run *er,
                         const kern_out *outs, size_t nouts, const kern_out *rep)
{
	for (size_t g = 0; g < nouts; g++) {
		const emu_kout_item *it = NULL;
		for (int k = 0; k < er->out.n; k++)
			if (!strcmp(er->out.item[k].name, outs[g].name))
				it = &er->out.item[k];
		if (!it || it->n != outs[g].n) {
			step_failed("attn", "engine output missing or of another size");
			continue;
		}
		char name[64];
		snprintf(name, sizeof name, rep ? "%s replay" : "%s", kname);
		gpu_cmp row;
		gpu_cmp_init(&row, "attn", name, fmts, it->name, it->fmt,
		             (gpu_tol){rep ? 0 : 2, true});
		for (size_t i = 0; i < it->n; i++)
			gpu_cmp_one(&row, i, i,
			            emu_from_float(it->fmt, outs[g].v[i], &env_rne).bits,
			            rep ? emu_from_float(it->fmt, rep[g].v[i], &env_rne).bits
			                : emu_encode(it->fmt, emu_kout_d(NULL, it, i)));
		add_row(&row);
	}
}

/* One run of the seq variants: on the device, or (host) rows.h on the host. */
static int attn_seq(const attn_in *a, int bwd, bool host, const gpu_tables *t, const float *dO,
                    float *O, float *L, double *lost, float *dq, float *dk, float *dv)
{
	float *nl = malloc(a->nq * sizeof *nl);
	int rc;
	if (!nl) {
		snprintf(run_err, sizeof run_err, "attn: out of memory");
		return -1;
	}
	gpu_kfmt S = kfmt(a->S), C = kfmt(a->C), A = kfmt(a->A);
	rc = host ? gpu_rows_attn_seq(t, a->v, bwd, S, C, A, a->q, a->k, a->vv, a->nq, a->nk, a->d,
	                              a->bk, a->causal, a->sc, a->dq8, a->tq, a->dk8, a->tk, a->dv8,
	                              a->psc, dO, O, L, nl, dq, dk, dv, run_err, sizeof run_err)
	          : gpu_dev_attn_seq(a->v, bwd, S, C, A, a->q, a->k, a->vv, a->nq, a->nk, a->d,
	                             a->bk, a->causal, a->sc, a->dq8, a->tq, a->dk8, a->tk, a->dv8,
	                             a->psc, dO, O, L, nl, dq, dk, dv, run_err, sizeof run_err);
	*lost = 0;
	for (size_t i = 0; rc == 0 && i < a->nq; i++)
		*lost += nl[i];
	free(nl);
	return rc;
}

/* fp8:bwd on the device or (host) the host: the fp8 forward, dO quantised
 * as the kernel does (e5m2, one fp32 scale), then the backward rows, with
 * dS's scale chosen here from its amax as the kernel chooses it. out: O L
 * dQ dK dV; lost[0] p_lost, lost[1] ds_lost, lost[2] amax_ds. */
static int attn8_bwd(const attn_in *a, bool host, const gpu_tables *t, const float *dO_s, float *O,
                     float *L, float *dq, float *dk, float *dv, double lost[3])
{
	const emu_format *C = a->C, *F32 = fmt("fp32"), *DF = fmt("e5m2");
	size_t nq = a->nq, nk = a->nk, d = a->d;
	double *x = malloc(nq * d * sizeof *x);
	float *do8 = malloc(nq * d * sizeof *do8), *p8a = malloc(nq * nk * sizeof *p8a);
	float *ds = malloc(nq * nk * sizeof *ds), *nl = malloc(nq * sizeof *nl), d_do;
	gpu_kfmt S = kfmt(a->S), Ck = kfmt(C), A = kfmt(a->A);
	int rc = -1;
	if (!x || !do8 || !p8a || !ds || !nl) {
		snprintf(run_err, sizeof run_err, "attn: out of memory");
		goto out;
	}
	if (attn_seq(a, 0, host, t, NULL, O, L, &lost[0], dq, dk, dv))
		goto out;
	for (size_t i = 0; i < nq * d; i++)
		x[i] = emu_decode(C, emu_from_float(C, dO_s[i], &env_rne).bits);
	if (attn_quant_by(C, "elem=e5m2,scale=fp32,rule=fp32,block=0x0,rht=no", x, nq, d, nq, 0,
	                  do8, &d_do))
		goto out;
	if (host ? gpu_rows_attn8_bwd_q(t, Ck, A, a->q, a->k, a->vv, a->dq8, a->tq, a->dk8, a->dv8,
	                                a->tk, L, O, do8, d_do, a->sc, a->psc, nq, nk, d, a->bk,
	                                a->causal, p8a, ds, run_err, sizeof run_err)
	         : gpu_dev_attn8_bwd_q(Ck, A, a->q, a->k, a->vv, a->dq8, a->tq, a->dk8, a->dv8,
	                               a->tk, L, O, do8, d_do, a->sc, a->psc, nq, nk, d, a->bk,
	                               a->causal, p8a, ds, run_err, sizeof run_err))
		goto out;
	/* dS's amax over the keys each query sees, and its scale (the kernel's
	 * rule: fmax / amax, at most the largest of fp32 and C; 1 when the amax
	 * is 0 or not finite), stored in fp32, then into C */
	double amax = 0, sc8;
	bool nan = false;
	for (size_t i = 0; i < nq; i++)
		for (size_t j = 0; j < (a->causal ? i + 1 + (nk - nq) : nk); j++) {
			double v = fabs((double)ds[i * nk + j]);
			if (isnan(v))
				nan = true;
			else if (v > amax)
				amax = v;
		}
	if (nan || amax == 0 || isinf(amax)) {
		sc8 = 1;
	} else {
		double smax = C->max < F32->max ? C->max : F32->max;
		sc8 = DF->max / amax > smax ? smax : DF->max / amax;
	}
	lost[2] = nan ? NAN : amax;
	float sds = (float)emu_decode(
	    C,
	    emu_from_double(C, emu_decode(F32, emu_from_double(F32, sc8, &env_rne).bits), &env_rne)
	        .bits);
	if (host ? gpu_rows_attn8_bwd_rest(t, S, Ck, A, GPU_K_E5M2, a->q, a->k, a->dq8, a->tq,
	                                   a->dk8, a->tk, do8, d_do, a->psc, sds, p8a, ds, nq, nk,
	                                   d, a->causal, dq, dk, dv, nl, run_err, sizeof run_err)
	         : gpu_dev_attn8_bwd_rest(S, Ck, A, GPU_K_E5M2, a->q, a->k, a->dq8, a->tq, a->dk8,
	                                  a->tk, do8, d_do, a->psc, sds, p8a, ds, nq, nk, d,
	                                  a->causal, dq, dk, dv, nl, run_err, sizeof run_err))
		goto out;
	lost[1] = 0;
	for (size_t i = 0; i < nq; i++)
		lost[1] += nl[i];
	rc = 0;
out:
	free(x);
	free(do8);
	free(p8a);
	free(ds);
	free(nl);
	return rc;
}

/* the variants: kernel name, base (0 naive, 1 online, 2 fp8), Tensor
 * Cores, backward (2: fp8's) */
typedef struct {
	const char *name;
	int v, tc, bwd;
} attn_variant;

/* the step's inputs and buffers: x (R×3d), Q, K, V loaded (qkv), the
 * device's inputs (fq; fp8's scales ds), its outputs (g: the device's, then
 * the replay's) and the backward's dO */
typedef struct {
	size_t R, d;
	double *x, *qkv;
	float *fq, *ds, *g, *dO;
} attn_work;

/* One variant, causal or not, under pol (fmts its formats; rt the tables
 * of a replay, or NULL): the device's run against the engine's, and the
 * replay's against both */
static void attn_case(const gpu_opts *o, const emu_policy *pol, const char *fmts,
                      const gpu_tables *rt, const attn_variant *vd, int causal, const attn_work *w)
{
	int v = vd->v, tc = vd->tc, bwd = vd->bwd;
	size_t R = w->R, d = w->d, N = 3 * d;
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	double *x = w->x, *qkv = w->qkv;
	float *fq = w->fq, *ds = w->ds, *g = w->g, *dO = w->dO;
	/* the mma.sync GEMMs take fp16/bf16 (C) or e4m3 inputs and
	 * write fp32 or fp16 */
	const emu_format *tin = v == 2 ? fmt("e4m3") : C;
	bool a32 = A->bits == 32, a16 = A->bits == 16 && A->p == 11;
	bool in_ok = tin->bits == 8 || (tin->bits == 16 && (tin->p == 11 || !a16));
	if (tc && (!(a32 || a16) || !in_ok))
		return;
	size_t bk = v == 2 ? 32 : 16; /* an fp8 mma.sync takes k = 32 */
	attn_in a = {
	    v, causal, R,    R,    d,    bk,   bk,   bk,  S, C, A, v == 2 ? fmt("e4m3") : C,
	    0, 448,    NULL, NULL, NULL, NULL, NULL, NULL};
	a.sc = (float)emu_decode(C, emu_from_double(C, 1 / sqrt((double)d), &pol->env).bits);
	a.psc = (float)emu_decode(C, emu_from_double(C, 448, &pol->env).bits);
	if (v == 2) {
		if (attn_quant(C, qkv, R, d, bk, o->seed, fq, ds) ||
		    attn_quant(C, qkv + R * d, R, d, bk, o->seed, fq + R * d, ds + R) ||
		    attn_quant(C, qkv + 2 * R * d, R, d, bk, o->seed, fq + 2 * R * d, ds + 2 * R)) {
			step_failed("attn", run_err);
			return;
		}
		a.dq8 = ds, a.dk8 = ds + R, a.dv8 = ds + 2 * R;
	} else {
		for (size_t i = 0; i < 3 * R * d; i++)
			fq[i] = (float)qkv[i];
	}
	a.q = fq, a.k = fq + R * d, a.vv = fq + 2 * R * d;
	char kname[40];
	snprintf(kname, sizeof kname, "attention %s%s", vd->name, causal ? " causal" : "");
	emu_kparam par[] = {{"block_k", (double)bk}, {"causal", causal}};
	emu_kin in = {x, R, N, par, 2, o->seed, NULL, 0};
	emu_run er;
	/* the outputs of the device (h 0) and of the replay (h 1) */
	kern_out outs[2][8];
	float lostf[2][3];
	size_t nouts = 0;
	if (!kern_engine(&emu_kernel_attention, pol, vd->name, &in, &er))
		return;
	int h;
	for (h = 0; h < (rt ? 2 : 1); h++) {
		float *b = g + (size_t)h * (5 * R * d + R);
		float *O = b, *L = b + R * d, *dq = L + R, *dk = dq + R * d, *dv = dk + R * d;
		double lost[3] = {0, 0, 0};
		const gpu_tables *t = h ? rt : NULL;
		int bad = tc         ? attn_pipe(&a, h, t, O, L, &lost[0])
		          : bwd == 2 ? attn8_bwd(&a, h, t, dO, O, L, dq, dk, dv, lost)
		                     : attn_seq(&a, bwd, h, t, dO, O, L, &lost[0], dq, dk, dv);
		if (bad) {
			step_failed("attn", run_err);
			break;
		}
		for (int q = 0; q < 3; q++)
			lostf[h][q] = (float)lost[q];
		kern_out *k = outs[h];
		nouts = 0;
		k[nouts++] = (kern_out){"O", O, R * d};
		k[nouts++] = (kern_out){"L", L, R};
		if (v == 2)
			k[nouts++] = (kern_out){"p_lost", &lostf[h][0], 1};
		if (bwd) {
			k[nouts++] = (kern_out){"dQ", dq, R * d};
			k[nouts++] = (kern_out){"dK", dk, R * d};
			k[nouts++] = (kern_out){"dV", dv, R * d};
		}
		if (bwd == 2) {
			k[nouts++] = (kern_out){"ds_lost", &lostf[h][1], 1};
			k[nouts++] = (kern_out){"amax_ds", &lostf[h][2], 1};
		}
	}
	if (h > 0)
		attn_compare(kname, fmts, &er, outs[0], nouts, NULL);
	if (h > 1)
		attn_compare(kname, fmts, &er, outs[0], nouts, outs[1]);
	emu_run_free(&er);
}

void step_attn(const gpu_opts *o)
{
	static const char *const pols[] = {
	    "storage=fp16,compute=fp16,accum=fp32", "storage=bf16,compute=bf16,accum=fp32",
	    "storage=fp16,compute=fp16,accum=fp16", "storage=bf16,compute=fp32"};
	static const attn_variant vs[] = {{"naive:tc:h200-mma", 0, 1, 0},
	                                  {"online:tc:h200-mma", 1, 1, 0},
	                                  {"fp8:tc:h200-mma", 2, 1, 0},
	                                  {"naive", 0, 0, 0},
	                                  {"online", 1, 0, 0},
	                                  {"fp8", 2, 0, 0},
	                                  {"naive:bwd", 0, 0, 1},
	                                  {"online:bwd", 1, 0, 1},
	                                  {"fp8:bwd", 2, 0, 2}};
	const size_t R = o->quick ? 32 : 64, d = o->quick ? 32 : 64, N = 3 * d;
	double *x = malloc(R * N * sizeof *x), *qkv = malloc(3 * R * d * sizeof *qkv);
	float *fq = malloc(3 * R * d * sizeof *fq), *ds = malloc(3 * R * sizeof *ds);
	float *g = malloc(2 * (5 * R * d + R) * sizeof *g), *dO = malloc(R * d * sizeof *dO);
	gpu_tables tabs = {NULL, 0};
	bool have_tabs = false;
	if (!x || !qkv || !fq || !ds || !g || !dO) {
		step_failed("attn", "out of memory");
		goto out;
	}
	attn_work w = {R, d, x, qkv, fq, ds, g, dO};
	/* q, k, v uniform in ±2·(1 + 3·(i mod 4)): rows of logits from ~±1 to
	 * ~±100 at scale 1/sqrt(d), so exp underflows and the online rescaling
	 * matters on some rows */
	for (size_t i = 0; i < R; i++)
		for (size_t c = 0; c < N; c++) {
			double u = (double)(rnd(o->seed, 700, i * N + c) >> 40) * 0x1p-24;
			x[i * N + c] = (u - 0.5) * 4.0 * (double)(1 + 3 * (i % 4));
		}
	have_tabs = kern_tables(o, &tabs);
	for (size_t p = 0; p < sizeof pols / sizeof pols[0]; p++) {
		emu_policy pol;
		if (emu_policy_parse(pols[p], &pol, run_err, sizeof run_err)) {
			step_failed("attn", run_err);
			continue;
		}
		const emu_format *S = &pol.storage, *C = &pol.compute, *A = &pol.accum;
		/* replay where the tables hold C's exp and log */
		const gpu_tables *rt = have_tabs && C->bits == 16 ? &tabs : NULL;
		char fmts[3 * sizeof S->name + 2];
		snprintf(fmts, sizeof fmts, "%s/%s/%s", S->name, C->name, A->name);
		/* Q, K, V as emu/kernels/attention.c reads them out of x, then loads
		 * them: stored in S, then into C; and the backward's dO (±1 from the
		 * seed) as it draws it */
		static const char *const qkv_role[] = {"q", "k", "v"};
		emu_kinputs ki;
		emu_kin inq = {x, R, N, NULL, 0, o->seed, NULL, 0};
		const double *dOv =
		    kern_role("attn", &emu_kernel_attention, &pol, "naive:bwd", &inq, "dO", &ki);
		if (!dOv)
			continue;
		for (int r = 0; r < 3; r++) {
			const double *t = emu_kinputs_find(&ki, qkv_role[r])->v;
			for (size_t i = 0; i < R * d; i++) {
				double s = emu_decode(S, emu_from_double(S, t[i], &pol.env).bits);
				qkv[r * R * d + i] =
				    emu_decode(C, emu_from_double(C, s, &pol.env).bits);
			}
		}
		for (size_t i = 0; i < R * d; i++)
			dO[i] = (float)dOv[i];
		emu_kinputs_free(&ki);
		for (size_t vi = 0; vi < sizeof vs / sizeof vs[0]; vi++)
			for (int causal = 0; causal < 2; causal++) {
				attn_case(o, &pol, fmts, rt, &vs[vi], causal, &w);
			}
	}
	gpu_report_note(
	    &run_rep,
	    "attn: attention on %zu queries and keys of head dim %zu, key blocks of "
	    "16 (fp8: 32, its mma.sync's k), causal 0 and 1: naive, online and fp8 "
	    "with :tc:h200-mma (Q·Kᵀ and P·V on our mma.sync GEMMs, fixed K order; fp16 "
	    "or bf16 compute), and naive, online, fp8, naive:bwd, online:bwd, fp8:bwd "
	    "with every GEMM a sequential FMA fold (fp8:bwd: dO quantised to e5m2 "
	    "and dS's scale chosen on the host); the rest from the row source "
	    "emu/kernels/attention_rows.h (gpu/rows.h's loops); against "
	    "the fast backend within 2 ulp (the GPU's exp and log), and bit for bit "
	    "against the host replay with the GPU's tables (and the h200 model)",
	    R, d);
out:
	gpu_tables_free(&tabs);
	free(x);
	free(qkv);
	free(fq);
	free(ds);
	free(g);
	free(dO);
}
