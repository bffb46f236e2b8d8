/*
 * rows.h — the GPU's loops around the training kernels' row sources, and
 * the block quantisers' per-block bodies, compiled twice: by nvcc into
 * gpu/kern.cu (each operation the format's own CUDA instruction) and by the
 * host compiler into gpu/host_rows.c (each operation the emulator's, in the
 * same format). The fake device runs the host build, so when its results
 * equal the emulator's quantiser (emu/recipes/recipe.c) the order of
 * operations proved is the one the GPU runs, not a copy of it kept in step
 * by hand. The training kernels are not here: each is written once in its
 * row source (emu/kernels/NAME_rows.h), which the engine runs too and the
 * includers read through gpu/krow_loops.h; what is here of them is the
 * GPU's loops around the row sources' steps: the optimizer's over the
 * steps of one element (k_opt_elem), attention's over a query row's key
 * blocks and its backward's over query and key rows.
 *
 * Plain C that is also valid CUDA C++. The includer defines:
 *   K_FN              the qualifier of every function here (static __device__
 *                     under nvcc, static on the host)
 *   k_fmt             a handle for a format: fp32, fp16 or bf16
 *   K_RND(F, x)       x rounded to F (RNE): exact, or one rounding; F may
 *                     also be e4m3 (attention's P cast; NaN past its range)
 *   K_ADD(F, a, b)    K_SUB, K_MUL, K_DIV: F's correctly rounded operation
 *   K_EXP(F, a)       K_LOG, K_RSQRT: F's exp, log, 1/sqrt (on the GPU the
 *                     approximate hexp, hlog, expf, logf, hrsqrt; fp32 rsqrt
 *                     is __frsqrt_rn)
 *   K_MAX(F, a, b)    maximumNumber with +0 above -0 (emu_max's rule)
 *   K_LOG1P(F, a)     F's log(1 + a) (on the GPU log1pf, then rounded to
 *                     F: not correctly rounded, and no table replays it)
 *   K_NEG(F, a)       K_ABS: −a and |a|, exact
 *   K_FMA(F, a, b, c) a·b + c in F, one rounding (fmaf, __hfma)
 *   K_SQRT(F, a)      F's correctly rounded square root (on the GPU
 *                     __fsqrt_rn, then rounded to F: p ≥ 2p' + 2, so the
 *                     second rounding is innocuous)
 * and, for the block quantisers (below):
 *   K_CODE8(F, x)     x's encoding (uint8_t) in F, e4m3 or e5m2: RNE,
 *                     satfinite (on the GPU __nv_cvt_float_to_fp8 with
 *                     __NV_SATFINITE; NaN gives a NaN)
 *   K_F2U(x)          the binary32 bits of the float x (uint32_t)
 *   K_U2F(u)          the float with binary32 bits u
 * and, for the optimizer's scalars and its stochastic rounding
 * (gpu/krow_loops.h's K_CONST, K_MAP1_SR, k_sr):
 *   K_RND_D(F, x)     the binary64 x rounded once to F (RNE)
 *   K_PREC(F)         F's precision p (int: 11 fp16, 8 bf16, 24 fp32)
 *   K_EMIN(F)         F's least normal exponent (int: -14, -126, -126)
 *   K_FMAX(F)         F's largest finite value (a double)
 * Every value travels as a float: each fp16, bf16 and fp32 value is one, so
 * an operation's operands are in its format exactly and only the operation
 * rounds (never twice). Each body is one thread's work on the GPU (one row,
 * or one gradient element, or one scaling block of one row), so every sum is
 * sequential in its index.
 *
 * Stochastic rounding (the optimizer's adamw_sr) is gpu/krow_loops.h's:
 * its bits are a pure integer function of (seed, step, element)
 * (emu/core/round.c's emu_sr_bits, whose draw is emu/core/draw.h's, read by
 * both compilers, and emu/engine/kern.h's emu_sr_key), and the rounding
 * that takes them is exact arithmetic on binary64 (k_sr_round), so one
 * plain-C copy serves nvcc and cc alike, the fake device runs the very draw
 * the GPU makes, and the GPU needs no n·steps·2 words of host memory per
 * run.
 */
#ifndef NANMAP_GPU_ROWS_H
#define NANMAP_GPU_ROWS_H

#ifndef K_FN
#error "rows.h: define K_FN, k_fmt and the K_ operations first (gpu/kern.cu, gpu/host_rows.c)"
#endif

#include "gpu/krow_loops.h"
#if !defined(NANMAP_OPTIMIZER_ROWS_H) || !defined(NANMAP_ATTENTION_ROWS_H)
#error                                                                                             \
    "rows.h: include the row sources first (emu/kernels/optimizer_rows.h and attention_rows.h: its loops run them)"
#endif

/* optimizer (emu/kernels/optimizer_rows.h), element i over NS steps, on one
 * thread: the variant and switches cfg, W (values of S) updated in place, M
 * and V (values of T) and adamw_kahan's compensation from +0; GS holds the
 * stored gradients (values of G), step s's at GS[(s − 1)·n + i]; PY the
 * Python scalars (emu_opt_plan_make's); seed the policy's (adamw_sr). An i
 * past the end (a thread of the GPU's last block) writes nothing. */
K_FN void k_opt_elem(k_opt_cfg cfg, k_fmt S, k_fmt C, k_fmt G, k_fmt T, const float *GS, size_t n,
                     size_t i, unsigned NS, const double *PY, uint64_t seed, float *W, float *M,
                     float *V)
{
	if (i >= n)
		return;
	float t[OPT_NT], m = 0.0f, v = 0.0f, c = 0.0f, g, gc, wc, xc, a, d, u;
	k_opt_refs r = {K_ROW(W, i),  K_ROW(&m, 0),  K_ROW(&v, 0),  K_ROW(&c, 0),
	                K_ROW(&g, 0), K_ROW(&gc, 0), K_ROW(&wc, 0), K_ROW(&xc, 0),
	                K_ROW(&a, 0), K_ROW(&d, 0),  K_ROW(&u, 0)};
	k_opt_consts(0, cfg, C, PY, t);
	for (unsigned s = 1; s <= NS; s++) {
		uint64_t e = (uint64_t)(s - 1) * n + i; /* element i of step s */
		g = GS[e];
		k_opt_step_consts(0, cfg, C, PY, s, t);
		k_opt_step(0, cfg, S, C, G, T, s, r, t, seed, 1, e);
	}
	M[i] = m;
	V[i] = v;
}

/* ---- block quantisers: emu/recipes/recipe.c's `mxfp8` (and `mxfp8:e5m2`) and
 * `deepseek` recipes, row-wise copy (docs/recipes.md has the rules and
 * their sources). Block i of an R×N fp32 tensor X is columns
 * [b·bs, min(b·bs + bs, N)) of row r = i / nb, b = i mod nb, nb =
 * ceil(N / bs); it writes its elements' encodings into Q (R×N) and its scale
 * into SC[i]: the e8m0 code (mxfp8) or the binary32 bits of the stored
 * decode scale (deepseek). Every fp32 step is one fp32 operation. ---- */

/* max |x| over columns [c0, c1); a NaN element makes it NaN: torch's amax
 * (DeepGEMM's reference; the library's amax=nan) */
K_FN float k_block_amax(const float *x, size_t c0, size_t c1)
{
	float a = 0.0f;
	for (size_t c = c0; c < c1; c++) {
		float v = fabsf(x[c]);
		if (!(v <= a))
			a = v;
		if (isnan(a))
			break; /* nothing compares with NaN: it would be replaced */
	}
	return a;
}

/* max |x| as TE's kernels take it: fmaxf from 0, which drops a NaN
 * element (the library's amax=fmaxf) */
K_FN float k_block_amax_te(const float *x, size_t c0, size_t c1)
{
	float a = 0.0f;
	for (size_t c = c0; c < c1; c++)
		a = fmaxf(a, fabsf(x[c]));
	return a;
}

/* TE's float_to_e8m0 for v >= 0 (the software path of
 * cvt.rp.satfinite.ue8m0x2.f32): NaN 0xFF, inf 0xFE, 0 0x00, else the
 * binary32 exponent field, rounded up when the fraction is nonzero, except
 * at 0xFE (satfinite) and for subnormals up to 2^-127 (0x400000): those
 * give 0 */
K_FN uint32_t k_e8m0_up(float v)
{
	uint32_t b = K_F2U(v), e = (b >> 23) & 0xffu, frac = b & 0x7fffffu;
	if (isnan(v))
		return 0xffu;
	if (isinf(v))
		return 0xfeu;
	if (v == 0.0f)
		return 0x00u;
	if (frac != 0 && e != 0xfeu && !(e == 0 && frac <= 0x400000u))
		e++;
	return e;
}

/* TE's exp2f_rcp: 1 for code 0, else the binary32 with bits (254 − code)
 * << 23 = 2^(127 − code); code 254 gives +0 and 255 −inf (the bits wrap) */
K_FN float k_e8m0_rcp(uint32_t code)
{
	return code == 0 ? 1.0f : K_U2F((254u - code) << 23);
}

/* MXFP8 as TE computes it: code = float_to_e8m0(fp32(amax ·
 * fp32(1 / fmax))), m = exp2f_rcp(code), q = E(fp32(x · m)) */
K_FN void k_mxfp8_block(k_fmt F32, k_fmt E, float fmax, const float *x, size_t c0, size_t c1,
                        uint8_t *q, uint32_t *sc)
{
	float amax = k_block_amax_te(x, c0, c1);
	uint32_t code = k_e8m0_up(K_MUL(F32, amax, K_DIV(F32, 1.0f, fmax)));
	float m = k_e8m0_rcp(code);
	for (size_t c = c0; c < c1; c++)
		q[c] = K_CODE8(E, K_MUL(F32, x[c], m));
	*sc = code;
}

/* DeepGEMM's reference (per_token_cast_to_fp8): a' = max(amax, amin)
 * (torch's clamp: a NaN amax stays NaN), s = fp32(fmax / a'), q =
 * E(fp32(x · s)), stored scale d = fp32(a' / fmax), which is not always
 * fp32(1 / s) */
K_FN void k_deepseek_block(k_fmt F32, k_fmt E, float fmax, float amin, const float *x, size_t c0,
                           size_t c1, uint8_t *q, uint32_t *sc)
{
	float amax = k_block_amax(x, c0, c1);
	float ac = amax < amin ? amin : amax;
	float s = K_DIV(F32, fmax, ac);
	for (size_t c = c0; c < c1; c++)
		q[c] = K_CODE8(E, K_MUL(F32, x[c], s));
	*sc = K_F2U(K_DIV(F32, ac, fmax));
}

/* block i of X by rule (gpu_dev.h's gpu_qrule; F32 the fp32 handle, E the
 * element format, amin used by deepseek); an i past the last block (a
 * thread of the GPU's last thread block) writes nothing */
K_FN void k_quant_block(int rule, k_fmt F32, k_fmt E, float fmax, float amin, const float *X,
                        size_t R, size_t N, size_t bs, size_t i, uint8_t *Q, uint32_t *SC)
{
	size_t nb = (N + bs - 1) / bs;
	if (i >= R * nb)
		return;
	size_t r = i / nb, c0 = (i % nb) * bs, c1 = c0 + bs < N ? c0 + bs : N;
	if (rule == GPU_Q_MXFP8)
		k_mxfp8_block(F32, E, fmax, X + r * N, c0, c1, Q + r * N, SC + i);
	else
		k_deepseek_block(F32, E, fmax, amin, X + r * N, c0, c1, Q + r * N, SC + i);
}

/*
 * attention (emu/kernels/attention_rows.h): the GPU's loops over query row
 * i's key blocks around the row source's steps, one thread a row. The
 * accumulator format A is one a Tensor Core writes (fp32, or fp16), so a
 * GEMM's result (our mma.sync's, gpu/mma.cu, a fixed K order; gpu/run_attn.c's
 * attn step lays them out) is a value of A with no conversion. Every array
 * is row-major, a row of nk (by key) or d values; S_, E_ and EA are the
 * row's logits, exp and their copies in A (scratch), e written into P's row
 * itself but for fp8 (whose P is its e4m3 cast). sc and psc are the softmax
 * and P scales in C; DQ8, DK8, DV8 fp8's tile decode scales (tq, tk rows a
 * tile; NULL otherwise).
 */

/* the row's scalars, the scales into C by the row source (k_attn_consts;
 * the runner gives values of C, which it leaves as they are) */
K_FN void k_attn_row_t(int v, k_fmt C, float sc, float psc, float *t)
{
	int kc = 0;
	for (int j = 0; j < AT_NT; j++)
		t[j] = 0.0f;
	k_attn_consts(kc, v, C, sc, psc, t);
}

/* fp8's tile decode scale of row r (a dummy element of t without scales:
 * no other variant reads it) */
K_FN k_ref k_attn_tile(float *D8, size_t r, size_t tile, float *t)
{
	return D8 ? K_AT(D8, r / tile) : K_AT(t, AT_TMP);
}

/* row r of the nq + 2·nk rows [Q; K; V] (d values each, their own arrays;
 * V may be NULL, its rows then skipped) into A: the sequential GEMMs'
 * operands */
K_FN void k_attn_operand_row(int v, k_fmt A, float *Q, float *K, float *V, size_t nq, size_t nk,
                             size_t d, size_t r, float *QA, float *KA, float *VA)
{
	int kc = 0;
	if (r < nq)
		k_attn_to_a(kc, v, 0, A, K_ROW(Q, r * d), d, 0, K_ROW(QA, r * d));
	else if (r < nq + nk)
		k_attn_to_a(kc, v, 1, A, K_ROW(K, (r - nq) * d), d, 0, K_ROW(KA, (r - nq) * d));
	else if (V && r < nq + 2 * nk)
		k_attn_to_a(kc, v, 2, A, K_ROW(V, (r - nq - nk) * d), d, 0,
		            K_ROW(VA, (r - nq - nk) * d));
}

/* :tc, query row i between its GEMMs: SACC holds S_acc = Q·Kᵀ (values of
 * A). Writes row i of P, the P·V GEMM's operand (naive e / C(l), online e,
 * fp8 E4(e·psc); +0 for the keys the row does not see, so a block GEMM over
 * them adds nothing), α per later key block b into ALPHA[i·nkt + b] (in A),
 * LROW[i] = l, L[i] and LOST[i] (fp8: the nonzero e the cast flushed) */
K_FN void k_attn_soft_row(int v, k_fmt C, k_fmt A, k_fmt E4, float *SACC, size_t nq, size_t nk,
                          size_t bk, int causal, size_t i, float sc, float *DQ8, size_t tq,
                          float *DK8, size_t tk, float psc, float *S_, float *E_, float *EA,
                          float *P, float *ALPHA, float *LROW, float *L, float *LOST)
{
	int kc = 0;
	size_t n = causal ? i + 1 + (nk - nq) : nk, bsz = v == ATT_NAIVE ? nk : bk;
	size_t nkt = (nk + bk - 1) / bk;
	float t[AT_NT], lost = 0.0f;
	k_ref p = K_ROW(P, i * nk), e = v == ATT_FP8 ? K_ROW(E_, i * nk) : p;
	k_attn_row_t(v, C, sc, psc, t);
	for (size_t j0 = 0, b = 0; j0 < n; j0 += bsz, b++) {
		size_t j1 = j0 + bsz < n ? j0 + bsz : n;
		k_attn_soft_block(kc, v, C, A, E4, K_ROW(SACC, i * nk), k_attn_tile(DQ8, i, tq, t),
		                  k_attn_tile(DK8, j0, tk, t), i, b, j0, j1, nk, nkt, t,
		                  K_ROW(S_, i * nk), e, K_ROW(EA, i * nk), p);
		ALPHA[i * nkt + b] = b ? t[AT_ALPHA_A] : 0.0f;
		for (size_t j = j0; v == ATT_FP8 && j < j1; j++)
			lost += e.p[j] != 0.0f && p.p[j] == 0.0f;
	}
	k_attn_lc(kc, v, C, t, e, i, nk, n, p);
	K_FILL(K_SHIFT(p, n), 0, nk - n);
	LROW[i] = t[AT_L];
	k_attn_lse(kc, C, t, i, K_AT(L, i));
	LOST[i] = lost;
}

/* :tc, query row i after the P·V GEMMs: PART holds their results (values
 * of A), naive one nq×d matrix, online and fp8 one per key block b at
 * PART + b·nq·d (a block the row does not see is not read); O_ and PV_ are
 * scratch rows of d. Row i of O, stored in S. */
K_FN void k_attn_out_row(int v, k_fmt S, k_fmt C, k_fmt A, float *PART, float *ALPHA, float *LROW,
                         float *DV8, size_t tk, float psc, size_t nq, size_t nk, size_t bk,
                         int causal, size_t d, size_t i, float *O_, float *PV_, float *O)
{
	int kc = 0;
	size_t n = causal ? i + 1 + (nk - nq) : nk, nkt = (nk + bk - 1) / bk;
	float t[AT_NT];
	k_ref o = K_ROW(O_, i * d), pv = K_ROW(PV_, i * d);
	k_attn_row_t(v, C, 0.0f, psc, t);
	t[AT_L] = LROW[i];
	if (v == ATT_NAIVE)
		K_COPY(o, K_ROW(PART, i * d), d);
	for (size_t j0 = 0, b = 0; v != ATT_NAIVE && j0 < n; j0 += bk, b++) {
		k_ref part = K_ROW(PART, (b * nq + i) * d);
		t[AT_ALPHA_A] = ALPHA[i * nkt + b];
		if (v == ATT_FP8) {
			K_COPY(pv, part, d);
			k_attn_fp8_o(kc, C, A, k_attn_tile(DV8, j0, tk, t), t, d, i, b, nkt, pv, o);
		} else if (b == 0) {
			K_COPY(o, part, d);
		} else {
			k_attn_rescale_o(kc, A, t, d, i, b, nkt, o);
			for (size_t c = 0; c < d; c++)
				k_attn_pv_add(kc, A, K_SHIFT(part, c), 0, K_SHIFT(o, c));
		}
	}
	k_attn_o_store(kc, v, S, A, t, d, i, o, K_ROW(O, i * d));
}

/*
 * attention's sequential variants (naive, online, fp8 without :tc): query
 * row i's forward, every GEMM a sequential FMA fold in A from the row
 * source (QA, KA, VA: Q, K, V in A, k_attn_operand_row's). Writes SACC's
 * and P's rows (naive's P is e / C(l), the backward's), PA (P in A), O_ and
 * PV_ scratch rows of d, then row i of O, L[i] and LOST[i].
 */
K_FN void k_attn_fwd_row(int v, k_fmt S, k_fmt C, k_fmt A, k_fmt E4, float *QA, float *KA,
                         float *VA, size_t nq, size_t nk, size_t d, size_t bk, int causal, size_t i,
                         float sc, float *DQ8, size_t tq, float *DK8, size_t tk, float *DV8,
                         float psc, float *SACC, float *S_, float *E_, float *EA, float *P,
                         float *PA, float *O_, float *PV_, float *O, float *L, float *LOST)
{
	int kc = 0;
	size_t n = causal ? i + 1 + (nk - nq) : nk, bsz = v == ATT_NAIVE ? nk : bk;
	size_t nkt = (nk + bk - 1) / bk;
	float t[AT_NT], lost = 0.0f;
	k_ref sacc = K_ROW(SACC, i * nk), p = K_ROW(P, i * nk), pa = K_ROW(PA, i * nk),
	      e = v == ATT_FP8 ? K_ROW(E_, i * nk) : p, o = K_ROW(O_, i * d),
	      pv = K_ROW(PV_, i * d);
	k_attn_row_t(v, C, sc, psc, t);
	for (size_t j0 = 0, b = 0; j0 < n; j0 += bsz, b++) {
		size_t j1 = j0 + bsz < n ? j0 + bsz : n;
		int later = j0 > 0 && v != ATT_FP8; /* O continues from α·O */
		k_attn_qk(kc, A, K_ROW(QA, i * d), KA, d, i, nk, j0, j1, sacc);
		k_attn_soft_block(kc, v, C, A, E4, sacc, k_attn_tile(DQ8, i, tq, t),
		                  k_attn_tile(DK8, j0, tk, t), i, b, j0, j1, nk, nkt, t,
		                  K_ROW(S_, i * nk), e, K_ROW(EA, i * nk), p);
		if (v == ATT_NAIVE)
			break; /* one block: the whole row */
		for (size_t j = j0; v == ATT_FP8 && j < j1; j++)
			lost += e.p[j] != 0.0f && p.p[j] == 0.0f;
		k_attn_pa(kc, A, p, i, nk, j0, j1 - j0, pa);
		if (later)
			k_attn_rescale_o(kc, A, t, d, i, b, nkt, o);
		k_attn_pv(kc, A, pa, VA, d, i, nk, j0, j1 - j0, later, v == ATT_FP8 ? pv : o);
		if (v == ATT_FP8)
			k_attn_fp8_o(kc, C, A, k_attn_tile(DV8, j0, tk, t), t, d, i, b, nkt, pv, o);
	}
	k_attn_lc(kc, v, C, t, e, i, nk, n, p);
	if (v == ATT_NAIVE) {
		k_attn_pa(kc, A, p, i, nk, 0, n, pa);
		k_attn_pv(kc, A, pa, VA, d, i, nk, 0, n, 0, o);
	}
	k_attn_o_store(kc, v, S, A, t, d, i, o, K_ROW(O, i * d));
	k_attn_lse(kc, C, t, i, K_AT(L, i));
	LOST[i] = lost;
}

/* The backward of naive:bwd and online:bwd (the row source's k_attn_bwd_*),
 * query row i after the forward (SACC, P and PA as k_attn_fwd_row left
 * them; naive's P and PA are its e / C(l) and their copy in A): online's P
 * recomputed, dO's row (DOA: as stored, replaced by its value in A) and
 * O's (OA) into A, D (DD[i]), dS (DS, and in A DSA), then dQ's row; G a
 * scratch row of d */
K_FN void k_attn_bwd_q_row(int v, k_fmt S, k_fmt C, k_fmt A, float *QA, float *KA, float *VA,
                           float *L, float *O, float sc, size_t nq, size_t nk, size_t d, int causal,
                           size_t i, float *SACC, float *P, float *PA, float *DOA, float *OA,
                           float *DD, float *DS, float *DSA, float *G, float *DQ)
{
	int kc = 0;
	size_t n = causal ? i + 1 + (nk - nq) : nk;
	float t[AT_NT];
	k_attn_row_t(v, C, sc, 0.0f, t);
	if (v == ATT_ONLINE)
		k_attn_bwd_p(kc, C, A, QA, KA, t, K_AT(L, i), d, i, nk, n, K_ROW(SACC, i * nk),
		             K_ROW(P, i * nk), K_ROW(PA, i * nk));
	k_attn_bwd_in(kc, C, A, K_ROW(O, i * d), d, 0, K_ROW(DOA, i * d), K_ROW(OA, i * d));
	k_attn_bwd_ds(kc, C, A, DOA, OA, VA, K_ROW(P, i * nk), d, i, nk, n, K_AT(DD, i),
	              K_ROW(DS, i * nk), K_ROW(DSA, i * nk));
	k_attn_bwd_dq(kc, S, C, A, K_ROW(DSA, i * nk), KA, t, d, i, nk, n, K_ROW(G, i * d),
	              K_ROW(DQ, i * d));
}

/* key row j after every query row's k_attn_bwd_q_row: dV's and dK's rows
 * over the queries that see key j; G a scratch row of d */
K_FN void k_attn_bwd_k_row(k_fmt S, k_fmt C, k_fmt A, float *QA, float *PA, float *DOA, float *DSA,
                           float sc, size_t nq, size_t nk, size_t d, int causal, size_t j, float *G,
                           float *DV, float *DK)
{
	int kc = 0;
	size_t shift = nk - nq, i0 = causal && j > shift ? j - shift : 0;
	float t[AT_NT];
	k_attn_row_t(ATT_NAIVE, C, sc, 0.0f, t);
	k_attn_bwd_dv(kc, S, A, PA, DOA, d, nq, nk, j, i0, K_ROW(G, j * d), K_ROW(DV, j * d));
	k_attn_bwd_dk(kc, S, C, A, DSA, QA, t, d, nq, nk, j, i0, K_ROW(G, j * d), K_ROW(DK, j * d));
}

/*
 * fp8:bwd (the row source's k_attn8_bwd_*), on the forward's e4m3 Q, K, V
 * in A (QA, KA, VA: k_attn_operand_row's) and their tile decode scales;
 * DO8 holds dO quantised (values of its FP8 format), d_do its decode scale
 * in C; sds dS's scale in C (the runner chooses it from the amax of DS
 * between the two launches, as the engine does); masked keys get +0.
 */
K_FN void k_attn8_bwd_t(k_fmt C, float sc, float psc, float d_do, float sds, float *t)
{
	k_attn_row_t(ATT_FP8, C, sc, psc, t);
	t[AT_DDO] = d_do;
	t[AT_SDS] = sds;
}

/* one thread, before the query rows: dP's factors per V tile (DPF, ntk) */
K_FN void k_attn8_bwd_pre(k_fmt C, float d_do, float *DV8, size_t ntk, float *DPF)
{
	int kc = 0;
	float t[AT_NT];
	k_attn8_bwd_t(C, 0.0f, 0.0f, d_do, 0.0f, t);
	k_attn8_bwd_dp_f(kc, C, t, K_ROW(DV8, 0), ntk, K_ROW(DPF, 0));
}

/* query row i: dO8's and O's rows into A (DOA, OA), P recomputed (P) and
 * cast (P8, and in A P8A), D (DD[i]) and dS (DS, in C, before its scale) */
K_FN void k_attn8_bwd_q_row(k_fmt C, k_fmt A, k_fmt E4, float *QA, float *KA, float *VA, float *DQ8,
                            size_t tq, float *DK8, size_t tk, float *DPF, float *L, float *O,
                            float *DO8, float d_do, float sc, float psc, size_t nq, size_t nk,
                            size_t d, size_t bk, int causal, size_t i, float *SACC, float *P,
                            float *P8, float *DOA, float *OA, float *DD, float *P8A, float *DS)
{
	int kc = 0;
	size_t n = causal ? i + 1 + (nk - nq) : nk;
	float t[AT_NT];
	k_ref pa = K_ROW(P8A, i * nk), ds = K_ROW(DS, i * nk);
	k_attn8_bwd_t(C, sc, psc, d_do, 0.0f, t);
	k_attn8_bwd_do(kc, A, K_ROW(DO8, i * d), d, 0, K_ROW(DOA, i * d));
	k_attn_bwd_o(kc, C, A, K_ROW(O, i * d), d, 0, K_ROW(OA, i * d));
	k_attn8_bwd_p(kc, C, A, E4, QA, KA, K_AT(DQ8, i / tq), DK8, t, K_AT(L, i), d, i, nk, n, bk,
	              tk, K_ROW(SACC, i * nk), K_ROW(P, i * nk), K_ROW(P8, i * nk), pa);
	k_attn8_bwd_ds(kc, C, A, DOA, OA, VA, K_ROW(P, i * nk), DPF, t, d, i, nk, n, tk,
	               K_AT(DD, i), ds);
	K_FILL(K_SHIFT(pa, n), 0, nk - n);
	K_FILL(K_SHIFT(ds, n), 0, nk - n);
}

/* one thread, after dS's scale: dQ's and dK's factors per K and Q tile */
K_FN void k_attn8_bwd_mid(k_fmt C, k_fmt A, float sds, float *DQ8, size_t ntq, float *DK8,
                          size_t ntk, float *DQF, float *DKF)
{
	int kc = 0;
	float t[AT_NT];
	k_attn8_bwd_t(C, 0.0f, 0.0f, 0.0f, sds, t);
	k_attn8_bwd_f(kc, C, A, t, K_ROW(DK8, 0), ntk, K_ROW(DQ8, 0), ntq, K_ROW(DQF, 0),
	              K_ROW(DKF, 0));
}

/* query row i after the scale: dO8's row into A (DOA), dS cast (DS8, and
 * in A DSA; LOST[i] the nonzero dS it flushed), then dQ's row; G and PART
 * scratch rows of d */
K_FN void k_attn8_bwd_dq_row(k_fmt S, k_fmt C, k_fmt A, k_fmt DF, float *KA, float *DQF, size_t tk,
                             float *DO8, float sds, size_t nq, size_t nk, size_t d, int causal,
                             size_t i, float *DS, float *DS8, float *DSA, float *DOA, float *G,
                             float *PART, float *DQ, float *LOST)
{
	int kc = 0;
	size_t n = causal ? i + 1 + (nk - nq) : nk;
	float t[AT_NT], lost = 0.0f;
	k_ref ds = K_ROW(DS, i * nk), ds8 = K_ROW(DS8, i * nk), dsa = K_ROW(DSA, i * nk);
	k_attn8_bwd_t(C, 0.0f, 0.0f, 0.0f, sds, t);
	k_attn8_bwd_do(kc, A, K_ROW(DO8, i * d), d, 0, K_ROW(DOA, i * d));
	k_attn8_bwd_cast(kc, C, A, DF, t, i, nk, n, ds, ds8, dsa);
	for (size_t j = 0; j < n; j++)
		lost += ds.p[j] != 0.0f && ds8.p[j] == 0.0f;
	LOST[i] = lost;
	k_attn8_bwd_dq(kc, S, A, dsa, KA, DQF, d, i, nk, n, tk, K_ROW(G, i * d), K_ROW(PART, i * d),
	               K_ROW(DQ, i * d));
}

/* key row j (after every query row's dq): dV's row (its factor from d_do
 * and psc) and dK's; G and PART scratch rows of d */
K_FN void k_attn8_bwd_k_row(k_fmt S, k_fmt C, k_fmt A, float *QA, float *DKF, size_t tq, float d_do,
                            float psc, float *P8A, float *DSA, float *DOA, size_t nq, size_t nk,
                            size_t d, int causal, size_t j, float *G, float *PART, float *DV,
                            float *DK)
{
	int kc = 0;
	size_t shift = nk - nq, i0 = causal && j > shift ? j - shift : 0;
	float t[AT_NT];
	k_attn8_bwd_t(C, 0.0f, psc, d_do, 0.0f, t);
	k_attn8_bwd_dv_f(kc, C, A, t);
	k_attn8_bwd_dv(kc, S, A, P8A, DOA, t, d, nq, nk, j, i0, K_ROW(G, j * d), K_ROW(DV, j * d));
	k_attn8_bwd_dk(kc, S, A, DSA, QA, DKF, d, nq, nk, j, i0, tq, K_ROW(G, j * d),
	               K_ROW(PART, j * d), K_ROW(DK, j * d));
}

#endif
