/*
 * attention_rows.h — attention's order of operations, one query row (or one
 * key row) at a time, written once (emu/engine/krow.h):
 * emu/kernels/attention.c runs it on the engine's backends around its
 * GEMMs, gpu/kern.cu on the GPU (one thread a row, the :tc variants' GEMMs
 * our own mma.sync between launches) and gpu/host_rows.c on the fake device;
 * gpu/rows.h holds the GPU's loops over a row's key blocks.
 *
 * The forward of query row i over its keys [0, n) (emu/kernels/attention.c's
 * header has the variants and the formulas), block by block (naive: one
 * block, the whole row):
 *   k_attn_to_a        Q, K and V into A (the sequential GEMMs' operands)
 *   k_attn_qk          S_acc of the block's keys: sequential FMAs in A from
 *                      +0 (the sequential variants; :tc runs a Tensor Core
 *                      GEMM instead)
 *   k_attn_soft_block  s = C(S_acc)·scale (fp8: ·d_Q·d_K), the block max
 *                      merged into the running m, α = exp(m_old − m_new),
 *                      e = exp(s − m), l = α·l + Σ A(e) in A; fp8 casts
 *                      P = E4(e·p_scale)
 *   k_attn_pa          P (or e) into A, the P·V GEMM's operand
 *   k_attn_rescale_o   O = α·O in A (online, fp8: a later block)
 *   k_attn_pv          the block's P·V: sequential FMAs in A, continuing
 *                      from O (online) or from +0 (naive, fp8: into pv)
 *   k_attn_pv_add      O += a Tensor Core GEMM's block (online:tc)
 *   k_attn_fp8_o       fp8: pv·A(C(d_V / p_scale)), then O = α·O + pv
 *   k_attn_lc          C(l); naive: P = e / C(l)
 *   k_attn_o_store     O / l (online, fp8) in A, stored in S
 *   k_attn_lse         L = m + log C(l) in C
 * The row's scalars live in t (AT_NT values: AT_SC, the softmax scale in C,
 * and fp8's AT_PSC from k_attn_consts; the rest the row's own).
 */
#ifndef NANMAP_ATTENTION_ROWS_H
#define NANMAP_ATTENTION_ROWS_H

#ifndef K_MAP1
#error                                                                                             \
    "attention_rows.h: include emu/engine/krow.h (the engine) or gpu/krow_loops.h (the GPU) first"
#endif

/* The base variants (emu/kernels/attention.c's list adds :bwd and :tc) */
#define K_ATTENTION_VARIANTS(X)                                                                    \
	X(ATT_NAIVE, "naive")                                                                      \
	X(ATT_ONLINE, "online")                                                                    \
	X(ATT_FP8, "fp8")
enum { K_ATTENTION_VARIANTS(K_VARIANT_ID) };

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists
 * them); the order is the step ids', which key stochastic rounding */
#define K_ATTENTION_STEPS(X)                                                                       \
	X(S_SCALE_C, "scale_to_compute")                                                           \
	X(S_Q_A, "q_to_accum")                                                                     \
	X(S_K_A, "k_to_accum")                                                                     \
	X(S_V_A, "v_to_accum")                                                                     \
	X(S_Q8, "q8")                                                                              \
	X(S_Q8_SCALE, "q8_scale")                                                                  \
	X(S_D_C, "d_to_compute")                                                                   \
	X(S_Q8_A, "q8_to_accum")                                                                   \
	X(S_QK, "qk")                                                                              \
	X(S_QK_PROMOTE, "qk_promote")                                                              \
	X(S_QK_OUT, "qk_out")                                                                      \
	X(S_S_C, "s_to_compute")                                                                   \
	X(S_DESCALE, "descale")                                                                    \
	X(S_DESCALE_SCALE, "descale_scale")                                                        \
	X(S_SCALE, "logit_scale")                                                                  \
	X(S_MAX, "max")                                                                            \
	X(S_MAX_NEW, "max_new")                                                                    \
	X(S_SUB_MAX, "sub_max")                                                                    \
	X(S_EXP, "exp")                                                                            \
	X(S_RESCALE_SUB, "rescale_sub")                                                            \
	X(S_RESCALE, "rescale")                                                                    \
	X(S_E_A, "e_to_accum")                                                                     \
	X(S_ALPHA_A, "alpha_to_accum")                                                             \
	X(S_RESCALE_L, "rescale_l")                                                                \
	X(S_SUM, "sum")                                                                            \
	X(S_L_C, "l_to_compute")                                                                   \
	X(S_DIV_P, "div_p")                                                                        \
	X(S_P_SCALE_C, "p_scale_to_compute")                                                       \
	X(S_P_MUL, "p_scale")                                                                      \
	X(S_P_CAST, "p_cast")                                                                      \
	X(S_P_A, "p_to_accum")                                                                     \
	X(S_RESCALE_O, "rescale_o")                                                                \
	X(S_PV, "pv")                                                                              \
	X(S_PV_PROMOTE, "pv_promote")                                                              \
	X(S_PV_OUT, "pv_out")                                                                      \
	X(S_V_DESCALE, "v_descale")                                                                \
	X(S_VS_A, "vs_to_accum")                                                                   \
	X(S_PV_DESCALE, "pv_descale")                                                              \
	X(S_PV_ADD, "pv_add")                                                                      \
	X(S_TC_A, "tc_to_accum")                                                                   \
	X(S_DIV, "div")                                                                            \
	X(S_STORE, "o_store")                                                                      \
	X(S_LOG, "log")                                                                            \
	X(S_LSE, "lse")                                                                            \
	X(S_QK_B, "qk_bwd")                                                                        \
	X(S_S_C_B, "s_bwd_to_compute")                                                             \
	X(S_SCALE_B, "logit_scale_bwd")                                                            \
	X(S_SUB_L, "sub_lse")                                                                      \
	X(S_EXP_B, "exp_bwd")                                                                      \
	X(S_P_A_B, "p_bwd_to_accum")                                                               \
	X(S_DO, "do")                                                                              \
	X(S_DO_C, "do_to_compute")                                                                 \
	X(S_DO_A, "do_to_accum")                                                                   \
	X(S_DV, "dv")                                                                              \
	X(S_DV_STORE, "dv_store")                                                                  \
	X(S_DP, "dp")                                                                              \
	X(S_DP_C, "dp_to_compute")                                                                 \
	X(S_O_C, "o_to_compute")                                                                   \
	X(S_O_A, "o_to_accum")                                                                     \
	X(S_ROWSUM, "rowsum_do")                                                                   \
	X(S_ROWSUM_C, "rowsum_to_compute")                                                         \
	X(S_DS_SUB, "ds_sub")                                                                      \
	X(S_DS, "ds")                                                                              \
	X(S_DS_A, "ds_to_accum")                                                                   \
	X(S_DQ, "dq")                                                                              \
	X(S_DQ_C, "dq_to_compute")                                                                 \
	X(S_DQ_SCALE, "dq_scale")                                                                  \
	X(S_DQ_STORE, "store")                                                                     \
	X(S_DK, "dk")                                                                              \
	X(S_DK_C, "dk_to_compute")                                                                 \
	X(S_DK_SCALE, "dk_scale")                                                                  \
	X(S_DK_STORE, "dk_store")                                                                  \
	X(S_DO8, "do8")                                                                            \
	X(S_DO8_SCALE, "do8_scale")                                                                \
	X(S_DO8_DC, "do8_to_compute")                                                              \
	X(S_DESCALE_B, "descale_bwd")                                                              \
	X(S_DESCALE_SCALE_B, "descale_scale_bwd")                                                  \
	X(S_P_MUL_B, "p_scale_bwd")                                                                \
	X(S_P_CAST_B, "p_cast_bwd")                                                                \
	X(S_DV_FACTOR, "dv_factor")                                                                \
	X(S_DV_FACTOR_A, "dv_factor_to_accum")                                                     \
	X(S_DV_DESCALE, "dv_descale")                                                              \
	X(S_DP_FACTOR, "dp_factor")                                                                \
	X(S_DP_DESCALE, "dp_descale")                                                              \
	X(S_ROWSUM_DESCALE, "rowsum_descale")                                                      \
	X(S_DS_SCALE, "ds_attn_scale")                                                             \
	X(S_DS8_SCALE, "ds8_scale")                                                                \
	X(S_DS8_SCALE_C, "ds8_scale_to_compute")                                                   \
	X(S_DS_MUL, "ds_scale")                                                                    \
	X(S_DS_CAST, "ds_cast")                                                                    \
	X(S_DQ_FACTOR, "dq_factor")                                                                \
	X(S_DQ_FACTOR_A, "dq_factor_to_accum")                                                     \
	X(S_DQ_DESCALE, "dq_descale")                                                              \
	X(S_DQ_ADD, "dq_add")                                                                      \
	X(S_DK_FACTOR, "dk_factor")                                                                \
	X(S_DK_FACTOR_A, "dk_factor_to_accum")                                                     \
	X(S_DK_DESCALE, "dk_descale")                                                              \
	X(S_DK_ADD, "dk_add")
#ifdef K_STEP_ENUM /* the engine's step ids (the loops drop them) */
enum { S_FIRST_ = K_STEP0 - 1, K_ATTENTION_STEPS(K_STEP_ENUM) S_END };
#endif

/* the scalars of t */
enum {
	AT_SC,      /* the softmax scale, in C */
	AT_M,       /* the running max */
	AT_MB,      /* a later block's max */
	AT_ALPHA,   /* α = exp(m_old − m_new), in C */
	AT_ALPHA_A, /* α in A */
	AT_L,       /* the running sum l, in A */
	AT_LC,      /* l in C */
	AT_TMP,
	AT_DSC, /* fp8: the block's logit factor C(C(d_Q·d_K)·scale) */
	AT_PSC, /* fp8: the static P scale, in C */
	AT_VS,  /* fp8: d_V / p_scale in C */
	AT_VSA, /* and in A */
	AT_DDO, /* fp8:bwd: dO's decode scale, in C */
	AT_FA,  /* fp8:bwd: dV's factor A(C(d_dO / p_scale)) */
	AT_SDS, /* fp8:bwd: dS's scale, in C */
	AT_NT
};

/* the softmax scale (and fp8's P scale), each rounded once into C */
K_FN void k_attn_consts(k_ctx kc, int v, k_fmt C, double scale, double p_scale, k_vec t)
{
	K_CONST(S_SCALE_C, C, K_AT(t, AT_SC), scale);
	if (v == ATT_FP8)
		K_CONST(S_P_SCALE_C, C, K_AT(t, AT_PSC), p_scale);
}

/* n values of Q (which 0), K (1) or V (2) into A from element e of the
 * step, the sequential GEMMs' operands (fp8: of their e4m3 values) */
K_FN void k_attn_to_a(k_ctx kc, int v, int which, k_fmt A, k_ref x, size_t n, uint64_t e, k_ref xa)
{
	if (v == ATT_FP8)
		K_MAP1(S_Q8_A, CVT, A, xa, x, n, e);
	else if (which == 0)
		K_MAP1(S_Q_A, CVT, A, xa, x, n, e);
	else if (which == 1)
		K_MAP1(S_K_A, CVT, A, xa, x, n, e);
	else
		K_MAP1(S_V_A, CVT, A, xa, x, n, e);
}

/* S_acc[j] = q·k_j for the keys [j0, j1) of query row i: sequential FMAs in
 * A from +0 over q (row i of Q) and row j of K, both values of A */
K_FN void k_attn_qk(k_ctx kc, k_fmt A, k_ref q, k_vec K, size_t d, size_t i, size_t nk, size_t j0,
                    size_t j1, k_ref sacc)
{
	K_FILL(K_SHIFT(sacc, j0), 0, j1 - j0);
	K_FOLDN_FMA(S_QK, A, K_SHIFT(sacc, j0), q, 0, K_ROW(K, j0 * d), d, d, j1 - j0,
	            ((uint64_t)i * nk + j0) * d, d);
}

/* Block b (keys [j0, j1)) of query row i: sacc holds the block's S_acc
 * (values of A), s, e and ea (C, C, A) take the block's logits, exp and
 * their copies in A, all indexed by key; fp8: dq and dk the tiles' decode
 * scales (in C) and p its e4m3 P. The running m and l and the block's α
 * (AT_ALPHA_A: a later block's) are left in t. */
K_FN void k_attn_soft_block(k_ctx kc, int v, k_fmt C, k_fmt A, k_fmt E4, k_ref sacc, k_ref dq,
                            k_ref dk, size_t i, size_t b, size_t j0, size_t j1, size_t nk,
                            size_t nkt, k_vec t, k_ref s, k_ref e, k_ref ea, k_ref p)
{
	size_t nb = j1 - j0;
	uint64_t el = (uint64_t)i * nk + j0; /* the element of key j0; of block b: i·nkt + b */
	int first = j0 == 0;
	k_ref sb = K_SHIFT(s, j0), xb = K_SHIFT(e, j0), ab = K_SHIFT(ea, j0);
	k_ref m = K_AT(t, AT_M), mb = K_AT(t, AT_MB), alpha = K_AT(t, AT_ALPHA),
	      alpha_a = K_AT(t, AT_ALPHA_A), l = K_AT(t, AT_L), mul = K_AT(t, AT_SC);
	K_MAP1(S_S_C, CVT, C, sb, K_SHIFT(sacc, j0), nb, el);
	if (v == ATT_FP8) { /* d_Q·d_K·scale, one factor per pair of tiles */
		k_ref dsc = K_AT(t, AT_DSC);
		K_OP2(S_DESCALE, MUL, C, dsc, dq, dk, (uint64_t)i * nkt + b);
		K_OP2(S_DESCALE_SCALE, MUL, C, dsc, dsc, mul, (uint64_t)i * nkt + b);
		mul = dsc;
	}
	K_MAP2(S_SCALE, MUL, C, sb, sb, mul, nb, el);
	/* the block's max, merged into the running one */
	k_ref mx = first ? m : mb;
	K_COPY(mx, sb, 1);
	K_FOLD(S_MAX, MAX, C, mx, K_SHIFT(sb, 1), nb - 1, el + 1);
	if (!first) { /* α = exp(m_old − m_new) */
		K_OP2(S_MAX_NEW, MAX, C, mb, m, mb, (uint64_t)i * nkt + b);
		K_OP2(S_RESCALE_SUB, SUB, C, alpha, m, mb, (uint64_t)i * nkt + b);
		K_OP1(S_RESCALE, EXP, C, alpha, alpha, (uint64_t)i * nkt + b);
		K_COPY(m, mb, 1);
	}
	K_MAP2(S_SUB_MAX, SUB, C, xb, sb, m, nb, el);
	K_MAP1(S_EXP, EXP, C, xb, xb, nb, el);
	/* l = α·l + Σ e_j in A */
	K_MAP1(S_E_A, CVT, A, ab, xb, nb, el);
	if (first) {
		K_FILL(l, 0, 1);
	} else {
		K_OP1(S_ALPHA_A, CVT, A, alpha_a, alpha, (uint64_t)i * nkt + b);
		K_OP2(S_RESCALE_L, MUL, A, l, l, alpha_a, (uint64_t)i * nkt + b);
	}
	K_FOLD(S_SUM, ADD, A, l, ab, nb, el);
	if (v == ATT_FP8) { /* P = E4(e·p_scale) */
		k_ref pb = K_SHIFT(p, j0);
		K_MAP2(S_P_MUL, MUL, C, pb, xb, K_AT(t, AT_PSC), nb, el);
		K_MAP1(S_P_CAST, CVT, E4, pb, pb, nb, el);
	}
}

/* pa[j] = A(p[j]) for the keys [j0, j0 + n) of query row i: the P·V
 * GEMM's operand (the sequential variants; a Tensor Core takes p as it is) */
K_FN void k_attn_pa(k_ctx kc, k_fmt A, k_ref p, size_t i, size_t nk, size_t j0, size_t n, k_ref pa)
{
	K_MAP1(S_P_A, CVT, A, K_SHIFT(pa, j0), K_SHIFT(p, j0), n, (uint64_t)i * nk + j0);
}

/* O = α·O (d values of A), before block b of row i joins it */
K_FN void k_attn_rescale_o(k_ctx kc, k_fmt A, k_vec t, size_t d, size_t i, size_t b, size_t nkt,
                           k_ref o)
{
	K_MAP2(S_RESCALE_O, MUL, A, o, o, K_AT(t, AT_ALPHA_A), d, ((uint64_t)i * nkt + b) * d);
}

/* the keys [j0, j0 + n) of row i times V, column by column: sequential
 * FMAs in A over pa (values of A) and V's rows j (values of A), from the
 * value o holds (acc) or from +0 */
K_FN void k_attn_pv(k_ctx kc, k_fmt A, k_ref pa, k_vec V, size_t d, size_t i, size_t nk, size_t j0,
                    size_t n, int acc, k_ref o)
{
	if (!acc)
		K_FILL(o, 0, d);
	K_FOLDN_FMA(S_PV, A, o, K_SHIFT(pa, j0), 0, K_STRIDED(V, j0 * d, d), 1, n, d,
	            (uint64_t)i * d * nk + j0, nk);
}

/* o += part (one value of A each): a Tensor Core GEMM's block of P·V joins
 * the running O (online:tc), element e of the step */
K_FN void k_attn_pv_add(k_ctx kc, k_fmt A, k_ref part, uint64_t e, k_ref o)
{
	K_OP2(S_PV_ADD, ADD, A, o, o, part, e);
}

/* fp8, block b of row i: pv (d values of A, the block's P8·V8 from +0)
 * times A(C(d_V / p_scale)), dv the block's V tile's decode scale (in C);
 * then O = pv (the first block) or α·O + pv, in A */
K_FN void k_attn_fp8_o(k_ctx kc, k_fmt C, k_fmt A, k_ref dv, k_vec t, size_t d, size_t i, size_t b,
                       size_t nkt, k_ref pv, k_ref o)
{
	uint64_t eb = (uint64_t)i * nkt + b;
	k_ref vs = K_AT(t, AT_VS), vsa = K_AT(t, AT_VSA);
	K_OP2(S_V_DESCALE, DIV, C, vs, dv, K_AT(t, AT_PSC), eb);
	K_OP1(S_VS_A, CVT, A, vsa, vs, eb);
	K_MAP2(S_PV_DESCALE, MUL, A, pv, pv, vsa, d, eb * d);
	if (b == 0) {
		K_COPY(o, pv, d);
	} else {
		k_attn_rescale_o(kc, A, t, d, i, b, nkt, o);
		K_MAP2(S_PV_ADD, ADD, A, o, o, pv, d, eb * d);
	}
}

/* row i's C(l); naive: P = e / C(l) over its n keys (in C) */
K_FN void k_attn_lc(k_ctx kc, int v, k_fmt C, k_vec t, k_ref e, size_t i, size_t nk, size_t n,
                    k_ref p)
{
	k_ref lc = K_AT(t, AT_LC);
	K_OP1(S_L_C, CVT, C, lc, K_AT(t, AT_L), i);
	if (v == ATT_NAIVE)
		K_MAP2(S_DIV_P, DIV, C, p, e, lc, n, (uint64_t)i * nk);
}

/* row i of the output: online and fp8 O / l in A, then stored in S */
K_FN void k_attn_o_store(k_ctx kc, int v, k_fmt S, k_fmt A, k_vec t, size_t d, size_t i, k_ref o,
                         k_ref O)
{
	if (v != ATT_NAIVE)
		K_MAP2(S_DIV, DIV, A, o, o, K_AT(t, AT_L), d, (uint64_t)i * d);
	K_MAP1(S_STORE, CVT, S, O, o, d, (uint64_t)i * d);
}

/* row i's logsumexp L = m + log C(l), in C */
K_FN void k_attn_lse(k_ctx kc, k_fmt C, k_vec t, size_t i, k_ref L)
{
	K_OP1(S_LOG, LOG, C, L, K_AT(t, AT_LC), i);
	K_OP2(S_LSE, ADD, C, L, K_AT(t, AT_M), L, i);
}

/*
 * The backward of naive:bwd and online:bwd (emu/kernels/attention.c's
 * header has the formulas), every sum a sequential FMA fold in A over the
 * unmasked terms in index order, each from +0:
 *   k_attn_bwd_p   online: row i's P = exp(C(S_acc)·scale − L_i), S_acc
 *                  recomputed as the forward computes it, and P in A
 *   k_attn_bwd_in  dO (as stored) and O into C, then into A
 *   k_attn_bwd_dv  key row j's dV = Σ_i P_ij·dO_i, stored
 *   k_attn_bwd_ds  query row i's dP = dO_i·Vᵀ and D_i = dO_i·O_i into C,
 *                  dS = P ∘ (dP − D) in C, then into A
 *   k_attn_bwd_dq  dQ_i = C(Σ_j dS_ij·k_j)·scale, stored
 *   k_attn_bwd_dk  dK_j = C(Σ_i dS_ij·q_i)·scale, stored
 * Matrices are row-major: P, PA, dS by key (nk a row), the rest d a row;
 * Q, K, V, dO and O as the GEMMs take them (values of A); g holds d values.
 */
K_FN void k_attn_bwd_p(k_ctx kc, k_fmt C, k_fmt A, k_vec Q, k_vec K, k_vec t, k_ref L, size_t d,
                       size_t i, size_t nk, size_t n, k_ref sacc, k_ref p, k_ref pa)
{
	uint64_t el = (uint64_t)i * nk;
	K_FILL(sacc, 0, n);
	K_FOLDN_FMA(S_QK_B, A, sacc, K_ROW(Q, i * d), 0, K_ROW(K, 0), d, d, n, el * d, d);
	K_MAP1(S_S_C_B, CVT, C, p, sacc, n, el);
	K_MAP2(S_SCALE_B, MUL, C, p, p, K_AT(t, AT_SC), n, el);
	K_MAP2(S_SUB_L, SUB, C, p, p, L, n, el);
	K_MAP1(S_EXP_B, EXP, C, p, p, n, el);
	K_MAP1(S_P_A_B, CVT, A, pa, p, n, el);
}

/* n values of O (as stored) from element e into C, then into A (oa) */
K_FN void k_attn_bwd_o(k_ctx kc, k_fmt C, k_fmt A, k_ref o, size_t n, uint64_t e, k_ref oa)
{
	K_MAP1(S_O_C, CVT, C, oa, o, n, e);
	K_MAP1(S_O_A, CVT, A, oa, oa, n, e);
}

/* n values of dO (as stored, in place) and of O from element e: into C,
 * then into A (dOA, OA) */
K_FN void k_attn_bwd_in(k_ctx kc, k_fmt C, k_fmt A, k_ref o, size_t n, uint64_t e, k_ref doa,
                        k_ref oa)
{
	K_MAP1(S_DO_C, CVT, C, doa, doa, n, e);
	K_MAP1(S_DO_A, CVT, A, doa, doa, n, e);
	k_attn_bwd_o(kc, C, A, o, n, e, oa);
}

/* key row j: dV_jc = Σ_i PA_ij·dOA_ic over the queries [i0, nq) that see
 * it, stored in S */
K_FN void k_attn_bwd_dv(k_ctx kc, k_fmt S, k_fmt A, k_vec PA, k_vec DOA, size_t d, size_t nq,
                        size_t nk, size_t j, size_t i0, k_ref g, k_ref dv)
{
	K_FILL(g, 0, d);
	K_FOLDN_FMA(S_DV, A, g, K_STRIDED(PA, i0 * nk + j, nk), 0, K_STRIDED(DOA, i0 * d, d), 1,
	            nq - i0, d, (uint64_t)j * d * nq + i0, nq);
	K_MAP1(S_DV_STORE, CVT, S, dv, g, d, (uint64_t)j * d);
}

/* query row i over its n keys: dP = dO_i·Vᵀ (in ds, by key) into C, the
 * sums sequential FMAs in A from +0 (naive:bwd's and fp8:bwd's alike) */
K_FN void k_attn_bwd_dp(k_ctx kc, k_fmt C, k_fmt A, k_vec DOA, k_vec V, size_t d, size_t i,
                        size_t nk, size_t n, k_ref ds)
{
	uint64_t el = (uint64_t)i * nk;
	K_FILL(ds, 0, n);
	K_FOLDN_FMA(S_DP, A, ds, K_ROW(DOA, i * d), 0, K_ROW(V, 0), d, d, n, el * d, d);
	K_MAP1(S_DP_C, CVT, C, ds, ds, n, el);
}

/* query row i's D = dO_i·O_i (dd) into C, a sequential FMA sum in A */
K_FN void k_attn_bwd_rowsum(k_ctx kc, k_fmt C, k_fmt A, k_vec DOA, k_vec OA, size_t d, size_t i,
                            k_ref dd)
{
	K_FILL(dd, 0, 1);
	K_FOLD_FMA(S_ROWSUM, A, dd, K_ROW(DOA, i * d), K_ROW(OA, i * d), d, (uint64_t)i * d);
	K_OP1(S_ROWSUM_C, CVT, C, dd, dd, i);
}

/* query row i over its n keys: dP (in ds, by key) and D (dd) into C, then
 * dS = P ∘ (dP − D) in C (in ds) and into A (dsa) */
K_FN void k_attn_bwd_ds(k_ctx kc, k_fmt C, k_fmt A, k_vec DOA, k_vec OA, k_vec V, k_ref p, size_t d,
                        size_t i, size_t nk, size_t n, k_ref dd, k_ref ds, k_ref dsa)
{
	k_attn_bwd_dp(kc, C, A, DOA, V, d, i, nk, n, ds);
	k_attn_bwd_rowsum(kc, C, A, DOA, OA, d, i, dd);
	K_MAP2(S_DS_SUB, SUB, C, ds, ds, dd, n, (uint64_t)i * nk);
	K_MAP2(S_DS, MUL, C, ds, p, ds, n, (uint64_t)i * nk);
	K_MAP1(S_DS_A, CVT, A, dsa, ds, n, (uint64_t)i * nk);
}

/* query row i: dQ_ic = C(Σ_j dSA_ij·k_jc)·scale over its n keys, stored */
K_FN void k_attn_bwd_dq(k_ctx kc, k_fmt S, k_fmt C, k_fmt A, k_ref dsa, k_vec K, k_vec t, size_t d,
                        size_t i, size_t nk, size_t n, k_ref g, k_ref dq)
{
	K_FILL(g, 0, d);
	K_FOLDN_FMA(S_DQ, A, g, dsa, 0, K_STRIDED(K, 0, d), 1, n, d, (uint64_t)i * d * nk, nk);
	K_MAP1(S_DQ_C, CVT, C, g, g, d, (uint64_t)i * d);
	K_MAP2(S_DQ_SCALE, MUL, C, g, g, K_AT(t, AT_SC), d, (uint64_t)i * d);
	K_MAP1(S_DQ_STORE, CVT, S, dq, g, d, (uint64_t)i * d);
}

/* key row j: dK_jc = C(Σ_i dSA_ij·q_ic)·scale over the queries [i0, nq)
 * that see it, stored */
K_FN void k_attn_bwd_dk(k_ctx kc, k_fmt S, k_fmt C, k_fmt A, k_vec DSA, k_vec Q, k_vec t, size_t d,
                        size_t nq, size_t nk, size_t j, size_t i0, k_ref g, k_ref dk)
{
	K_FILL(g, 0, d);
	K_FOLDN_FMA(S_DK, A, g, K_STRIDED(DSA, i0 * nk + j, nk), 0, K_STRIDED(Q, i0 * d, d), 1,
	            nq - i0, d, (uint64_t)j * d * nq + i0, nq);
	K_MAP1(S_DK_C, CVT, C, g, g, d, (uint64_t)j * d);
	K_MAP2(S_DK_SCALE, MUL, C, g, g, K_AT(t, AT_SC), d, (uint64_t)j * d);
	K_MAP1(S_DK_STORE, CVT, S, dk, g, d, (uint64_t)j * d);
}

/*
 * The backward of fp8:bwd (emu/kernels/attention.c's header: cuDNN's FP8
 * order), on the forward's e4m3 Q, K, V in A and their tile decode scales
 * (in C; tq, tk rows a tile), dO quantised to DF (values in A: DOA, decode
 * scale t[AT_DDO]) and O in A (OA):
 *   k_attn8_bwd_p        row i's P = exp(C(S_acc)·σ − L_i), σ = C(C(d_Q·
 *                        d_K)·scale) per key block of bk, and its cast
 *                        P8 = A(E4(P·p_scale))
 *   k_attn8_bwd_dv_f     dV's factor A(C(d_dO / p_scale)) (t[AT_FA])
 *   k_attn8_bwd_dv       key row j's dV = Σ_i P8_ij·dO_i, times the factor
 *   k_attn8_bwd_dp_f     dP's factors d_dO·d_V[t] per V tile
 *   k_attn8_bwd_ds       row i's dP, D (both descaled) and dS = (dP − D)·P·
 *                        scale, in C
 * (k_attn8_bwd_do: dO8 into A), then dS's scale s (t[AT_SDS], chosen
 * from its amax outside the row
 * source), and
 *   k_attn8_bwd_cast     dS8 = A(DF(dS·s)), row i
 *   k_attn8_bwd_f        the factors A(C(d_K[t] / s)) and A(C(d_Q[t] / s))
 *   k_attn8_bwd_dq       dQ_i = Σ over K's tiles of (dS8·K8)·factor, in A
 *   k_attn8_bwd_dk       dK_j = Σ over Q's tiles of (dS8ᵀ·Q8)·factor
 */
/* n values of dO8 (DF values) from element e into A (doa) */
K_FN void k_attn8_bwd_do(k_ctx kc, k_fmt A, k_ref do8, size_t n, uint64_t e, k_ref doa)
{
	K_MAP1(S_DO_A, CVT, A, doa, do8, n, e);
}

K_FN void k_attn8_bwd_p(k_ctx kc, k_fmt C, k_fmt A, k_fmt E4, k_vec Q, k_vec K, k_ref dq, k_vec DK8,
                        k_vec t, k_ref L, size_t d, size_t i, size_t nk, size_t n, size_t bk,
                        size_t tk, k_ref sacc, k_ref p, k_ref p8, k_ref pa)
{
	uint64_t el = (uint64_t)i * nk;
	size_t nkt = (nk + bk - 1) / bk;
	k_ref dsc = K_AT(t, AT_DSC);
	K_FILL(sacc, 0, n);
	K_FOLDN_FMA(S_QK_B, A, sacc, K_ROW(Q, i * d), 0, K_ROW(K, 0), d, d, n, el * d, d);
	K_MAP1(S_S_C_B, CVT, C, p, sacc, n, el);
	for (size_t j0 = 0, b = 0; j0 < n; j0 += bk, b++) {
		size_t nb = j0 + bk < n ? bk : n - j0;
		K_OP2(S_DESCALE_B, MUL, C, dsc, dq, K_AT(DK8, j0 / tk), (uint64_t)i * nkt + b);
		K_OP2(S_DESCALE_SCALE_B, MUL, C, dsc, dsc, K_AT(t, AT_SC), (uint64_t)i * nkt + b);
		K_MAP2(S_SCALE_B, MUL, C, K_SHIFT(p, j0), K_SHIFT(p, j0), dsc, nb, el + j0);
	}
	K_MAP2(S_SUB_L, SUB, C, p, p, L, n, el);
	K_MAP1(S_EXP_B, EXP, C, p, p, n, el);
	K_MAP2(S_P_MUL_B, MUL, C, p8, p, K_AT(t, AT_PSC), n, el);
	K_MAP1(S_P_CAST_B, CVT, E4, p8, p8, n, el);
	K_MAP1(S_P_A_B, CVT, A, pa, p8, n, el);
}

K_FN void k_attn8_bwd_dv_f(k_ctx kc, k_fmt C, k_fmt A, k_vec t)
{
	K_OP2(S_DV_FACTOR, DIV, C, K_AT(t, AT_DSC), K_AT(t, AT_DDO), K_AT(t, AT_PSC), 0);
	K_OP1(S_DV_FACTOR_A, CVT, A, K_AT(t, AT_FA), K_AT(t, AT_DSC), 0);
}

K_FN void k_attn8_bwd_dv(k_ctx kc, k_fmt S, k_fmt A, k_vec PA, k_vec DOA, k_vec t, size_t d,
                         size_t nq, size_t nk, size_t j, size_t i0, k_ref g, k_ref dv)
{
	K_FILL(g, 0, d);
	K_FOLDN_FMA(S_DV, A, g, K_STRIDED(PA, i0 * nk + j, nk), 0, K_STRIDED(DOA, i0 * d, d), 1,
	            nq - i0, d, (uint64_t)j * d * nq + i0, nq);
	K_MAP2(S_DV_DESCALE, MUL, A, g, g, K_AT(t, AT_FA), d, (uint64_t)j * d);
	K_MAP1(S_DV_STORE, CVT, S, dv, g, d, (uint64_t)j * d);
}

K_FN void k_attn8_bwd_dp_f(k_ctx kc, k_fmt C, k_vec t, k_ref dv8, size_t ntk, k_ref dpf)
{
	K_MAP2(S_DP_FACTOR, MUL, C, dpf, K_AT(t, AT_DDO), dv8, ntk, 0);
}

/* query row i over its n keys: dP (in ds) descaled per V tile (dpf), D
 * (dd) descaled by d_dO, dS = (dP − D)·P·scale in C (in ds) */
K_FN void k_attn8_bwd_ds(k_ctx kc, k_fmt C, k_fmt A, k_vec DOA, k_vec OA, k_vec V, k_ref p,
                         k_vec dpf, k_vec t, size_t d, size_t i, size_t nk, size_t n, size_t tk,
                         k_ref dd, k_ref ds)
{
	uint64_t el = (uint64_t)i * nk;
	k_attn_bwd_dp(kc, C, A, DOA, V, d, i, nk, n, ds);
	for (size_t j0 = 0; j0 < n; j0 += tk)
		K_MAP2(S_DP_DESCALE, MUL, C, K_SHIFT(ds, j0), K_SHIFT(ds, j0), K_AT(dpf, j0 / tk),
		       j0 + tk < n ? tk : n - j0, el + j0);
	k_attn_bwd_rowsum(kc, C, A, DOA, OA, d, i, dd);
	K_OP2(S_ROWSUM_DESCALE, MUL, C, dd, dd, K_AT(t, AT_DDO), i);
	K_MAP2(S_DS_SUB, SUB, C, ds, ds, dd, n, el);
	K_MAP2(S_DS, MUL, C, ds, ds, p, n, el);
	K_MAP2(S_DS_SCALE, MUL, C, ds, ds, K_AT(t, AT_SC), n, el);
}

/* query row i's dS8 = DF(dS·s) (in ds8) and its value in A (dsa) */
K_FN void k_attn8_bwd_cast(k_ctx kc, k_fmt C, k_fmt A, k_fmt DF, k_vec t, size_t i, size_t nk,
                           size_t n, k_ref ds, k_ref ds8, k_ref dsa)
{
	K_MAP2(S_DS_MUL, MUL, C, ds8, ds, K_AT(t, AT_SDS), n, (uint64_t)i * nk);
	K_MAP1(S_DS_CAST, CVT, DF, ds8, ds8, n, (uint64_t)i * nk);
	K_MAP1(S_DS_A, CVT, A, dsa, ds8, n, (uint64_t)i * nk);
}

/* dQ's factors A(C(d_K[t] / s)) over K's ntk tiles and dK's A(C(d_Q[t] /
 * s)) over Q's ntq */
K_FN void k_attn8_bwd_f(k_ctx kc, k_fmt C, k_fmt A, k_vec t, k_ref dk8, size_t ntk, k_ref dq8,
                        size_t ntq, k_ref dqf, k_ref dkf)
{
	K_MAP2(S_DQ_FACTOR, DIV, C, dqf, dk8, K_AT(t, AT_SDS), ntk, 0);
	K_MAP1(S_DQ_FACTOR_A, CVT, A, dqf, dqf, ntk, 0);
	K_MAP2(S_DK_FACTOR, DIV, C, dkf, dq8, K_AT(t, AT_SDS), ntq, 0);
	K_MAP1(S_DK_FACTOR_A, CVT, A, dkf, dkf, ntq, 0);
}

/* query row i: dQ_i = Σ over K's tiles (tk keys) of (Σ_j dSA_ij·k_j)·
 * dqf[t], each tile's sum from +0, the tiles added in A in order (g; part
 * a second scratch row of d), stored */
K_FN void k_attn8_bwd_dq(k_ctx kc, k_fmt S, k_fmt A, k_ref dsa, k_vec K, k_vec dqf, size_t d,
                         size_t i, size_t nk, size_t n, size_t tk, k_ref g, k_ref part, k_ref dq)
{
	size_t ntk = (nk + tk - 1) / tk;
	for (size_t j0 = 0; j0 < n; j0 += tk) {
		size_t nt = j0 + tk < n ? tk : n - j0, tt = j0 / tk;
		k_ref dst = j0 == 0 ? g : part;
		K_FILL(dst, 0, d);
		K_FOLDN_FMA(S_DQ, A, dst, K_SHIFT(dsa, j0), 0, K_STRIDED(K, j0 * d, d), 1, nt, d,
		            (uint64_t)i * d * nk + j0, nk);
		K_MAP2(S_DQ_DESCALE, MUL, A, dst, dst, K_AT(dqf, tt), d,
		       ((uint64_t)i * ntk + tt) * d);
		if (j0)
			K_MAP2(S_DQ_ADD, ADD, A, g, g, part, d, ((uint64_t)i * ntk + tt) * d);
	}
	K_MAP1(S_DQ_STORE, CVT, S, dq, g, d, (uint64_t)i * d);
}

/* key row j: dK_j = Σ over Q's tiles (tq queries) of (Σ_i dSA_ij·q_i)·
 * dkf[t] over the queries [i0, nq) that see it, likewise */
K_FN void k_attn8_bwd_dk(k_ctx kc, k_fmt S, k_fmt A, k_vec DSA, k_vec Q, k_vec dkf, size_t d,
                         size_t nq, size_t nk, size_t j, size_t i0, size_t tq, k_ref g, k_ref part,
                         k_ref dk)
{
	size_t ntq = (nq + tq - 1) / tq;
	for (size_t tt = i0 / tq; tt * tq < nq; tt++) {
		size_t lo = tt * tq > i0 ? tt * tq : i0,
		       hi = (tt + 1) * tq < nq ? (tt + 1) * tq : nq;
		int first = tt == i0 / tq;
		k_ref dst = first ? g : part;
		K_FILL(dst, 0, d);
		K_FOLDN_FMA(S_DK, A, dst, K_STRIDED(DSA, lo * nk + j, nk), 0,
		            K_STRIDED(Q, lo * d, d), 1, hi - lo, d, (uint64_t)j * d * nq + lo, nq);
		K_MAP2(S_DK_DESCALE, MUL, A, dst, dst, K_AT(dkf, tt), d,
		       ((uint64_t)j * ntq + tt) * d);
		if (!first)
			K_MAP2(S_DK_ADD, ADD, A, g, g, part, d, ((uint64_t)j * ntq + tt) * d);
	}
	K_MAP1(S_DK_STORE, CVT, S, dk, g, d, (uint64_t)j * d);
}

#endif
