/*
 * attention.c — scaled dot-product attention for one head, forward (and the
 * naive variant's backward): S = Q·Kᵀ·scale, P = softmax(S) row-wise,
 * O = P·V, and the logsumexp L of every row.
 *
 * Layout: row i of the input X holds [q_i | k_i | v_i], d = cols / 3 values
 * each (head_dim); Q has seq_q rows, K and V seq_k (default: all rows).
 * Rows past seq_q (past seq_k) carry no query (no key and value) and are not
 * read. sink=G replaces k_0 by q_0·G/(scale·|q_0|²) before anything is
 * rounded, so query 0's logit for key 0 is G: an attention sink. Q, K and V are each loaded by
 * emu_load as a tensor of its own (the storage format, the policy's scaling recipe with its own
 * scales, then the compute format); element (i, c) of Q is element i·d + c of the load, K's follow
 * Q's and V's K's.
 *
 * Variants (docs/kernels-attention.md has every order of operations):
 *   naive   the whole row of S, then the max-subtracted softmax:
 *           m = max_j S_j, e_j = exp(S_j − m), l = Σ e_j (accumulator
 *           format), P_j = e_j / l, O = P·V, L = m + log l.
 *   online  FlashAttention-2's algorithm 1 over key blocks of block_k: the
 *           first block sets m, l and the unnormalised O; every later block
 *           takes m_new = max(m, rowmax S_blk), α = exp(m − m_new),
 *           l = α·l + Σ exp(S_j − m_new), O = α·O + exp(S_blk − m_new)·V_blk;
 *           at the end O = O / l and L = m + log l.
 *   fp8     FlashAttention-3's FP8 forward on online's loop: Q, K and V
 *           quantised to e4m3 by a per-tile recipe (a tile is `tile` rows,
 *           default block_k, by the whole head, so a key block lies in one
 *           tile; tile=0: one scale per tensor; fp32 scale fmax / amax,
 *           TE's current scaling), with hadamard=1 the recipe's fixed-sign 16-wide
 *           Hadamard (H = diag(s)·H16 / 4, orthogonal) applied to every row
 *           of Q and K (so Q·Kᵀ is unchanged in exact arithmetic); the
 *           GEMMs run on the e4m3 values and are descaled after (S by
 *           d_Q·d_K, each block of P·V by d_V / p_scale); P is cast to e4m3
 *           as P·p_scale (static scale, default 448); its output p_lost
 *           counts the nonzero P̃ that cast flushed to 0, and p_mass is
 *           the largest share of a row's l those flushed P̃ carried (their
 *           sum rescaled by α as l is, over l; in double from the values
 *           this backend holds, a diagnostic as p_lost is; not with :bwd);
 *           p_lost_mass_max and p_lost_mass_mean (with :bwd too) are that
 *           share measured against the row's exact mass instead, from its
 *           held logits in double (Σ_flushed exp(s_j − max) / Σ_j exp(s_j −
 *           max)), the largest and the mean over the rows.
 * Suffixes: ":bwd" (naive, online, fp8) adds the backward pass; ":tc" or
 * ":tc:MODEL" runs both forward GEMMs through the Tensor Core fold
 * (emu_fold_tc, any model emu_tc_parse takes; default emu_tc_default()),
 * each dot product in a fixed K order (the head for Q·Kᵀ, the keys in
 * order for P·V).
 *
 * Precision policy: elementwise work (scale, max, exp, the rescaling
 * factor, P, log) in the compute format; the GEMMs are sequential FMA folds
 * in the accumulator format (operands converted there first, as a GEMM with
 * an fp32 accumulator does), or the Tensor Core fold whose inputs are the
 * compute-format values (fp8: the e4m3 values) and whose output is the
 * accumulator format when a Tensor Core can write it, else fp32 converted
 * into the accumulator format (step "to_accum"); the row sum
 * l and the unnormalised O are held in the accumulator format. O (and dQ,
 * dK, dV) is stored in the storage format; L is held in the compute format.
 *
 * Causal (causal=1): query i sees keys j ≤ i + seq_k − seq_q (the bottom
 * right alignment of FlashAttention-2 from 2.1; seq_q ≤ seq_k), so with
 * seq_q = seq_k the first query sees only the first key. Masked keys are
 * not computed at all, as a blocked kernel skips them.
 *
 * Backward (naive:bwd, online:bwd): the upstream gradient dO_ic = ±1, the
 * sign from bit 0 of emu_sr_bits(seed, i·d + c) (as layernorm's dy), stored
 * in the storage format; P is naive's compute-format P (e / l), or for
 * online P_ij = exp(S_ij − L_i) from S recomputed and the forward's L (as
 * FlashAttention-2's backward, which keeps L rather than P); with O the
 * stored output:
 * dV = Pᵀ·dO, dP = dO·Vᵀ, D_i = Σ_c dO_ic·O_ic, dS = P ∘ (dP − D),
 * dQ = dS·K·scale, dK = dSᵀ·Q·scale, every sum a sequential FMA fold in the
 * accumulator format over the unmasked terms in index order, converted to
 * the compute format, and the results stored. (FlashAttention-2 sums dQ
 * over key blocks with atomic adds, in no fixed order; the key order here is
 * one of its orders.)
 *
 * Backward of fp8 (fp8:bwd): the order of cuDNN's FP8 SDPA backward graph,
 * SDPAFP8BackwardNode::expand_node in cudnn-frontend
 * (https://github.com/NVIDIA/cudnn-frontend/blob/main/include/cudnn_frontend/node/sdpa_fp8_bwd.h,
 * the per-tensor path: every FP8 GEMM descaled after, dS multiplied by the
 * softmax scale and cast to dO's FP8 format with Scale_dP, amax_dP out),
 * the FP8 formats of Transformer Engine's HYBRID recipe (e4m3 forward, e5m2
 * gradients). The forward is fp8's, unchanged; then, with Q8, K8, V8 the
 * forward's e4m3 tensors and d_Q, d_K, d_V their tile decode scales:
 *   dO (±1 as above, stored) is quantised to DF (do_fmt=5: e5m2, the
 *   default; 4: e4m3) with one fp32 scale per tensor, fmax / amax (TE's
 *   current scaling), decode scale d_dO;
 *   P_ij = C(exp(C(S_ij − L_i))), S_ij recomputed as the forward computes it
 *   (σ = C(C(d_Q·d_K)·scale) per block), P8 = E(C(P·p_scale)) as the forward;
 *   dV = S(A(Σ_i P8_ij·dO8_ic) · A(C(d_dO / p_scale)))   one GEMM over the queries
 *   dP_ij = C(C(Σ_c dO8_ic·V8_jc) · C(d_dO·d_V[t]))      t: key j's tile
 *   D_i = C(C(Σ_c dO8_ic·O_ic) · d_dO)                   O as stored
 *   dS_ij = C(C(C(dP_ij − D_i) · P_ij) · scale)          P before its cast
 *   s = ds_scale, or (default 0) fmax_DF / amax(dS) over the unmasked
 *   entries held, clamped to fp32's and the compute format's largest finite
 *   value (1 when the amax is 0 or not finite), stored in fp32, into C;
 *   dS8 = DF(C(dS · s));
 *   dQ_i = S(Σ_t A(A(Σ_{j∈t} dS8_ij·K8_jc) · A(C(d_K[t] / s))))  over K's tiles,
 *   dK_j = S(Σ_t A(A(Σ_{i∈t} dS8_ij·Q8_ic) · A(C(d_Q[t] / s))))  over Q's tiles,
 *   each tile's GEMM from +0, the tiles added in order in A (one tile with
 *   tile=0, cuDNN's per-tensor case). Outputs ds_lost (the nonzero dS the
 *   cast flushed to 0) and amax_ds (cuDNN's amax_dP, what a delayed
 *   recipe's history would record). On the truth of the original inputs the
 *   quantisation of dO is skipped like Q's, and the casts and scales are
 *   exact there, so it is the unquantised gradient. hadamard=1 is refused
 *   (dQ and dK would need the inverse transform), and so is :tc.
 *
 * GPU counterpart: gpu/rows.h's `k_attn_*` rows (its Tensor Core GEMMs are gpu/mma.cu
 * between them), compiled by nvcc in gpu/kern.cu and with the emulator's operations in
 * gpu/host_rows.c for the fake device, whose outputs tests/gpu/ compares with this file's
 * (docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "emu/kernels/tc.h"

static const char *const variants[] = {"naive",      "online",    "fp8",     "naive:bwd",
                                       "online:bwd", "online:tc", "fp8:bwd", NULL};

enum { NAIVE, ONLINE, FP8 };

/* The steps, each one operation site of the kernel. */
enum {
	S_SCALE_C = EMU_STEP0,
	S_Q_A,
	S_K_A,
	S_V_A,
	S_Q8,
	S_Q8_SCALE,
	S_D_C,
	S_Q8_A,
	S_QK,
	S_QK_PROMOTE,
	S_QK_OUT,
	S_S_C,
	S_DESCALE,
	S_DESCALE_SCALE,
	S_SCALE,
	S_MAX,
	S_MAX_NEW,
	S_SUB_MAX,
	S_EXP,
	S_RESCALE_SUB,
	S_RESCALE,
	S_E_A,
	S_ALPHA_A,
	S_RESCALE_L,
	S_SUM,
	S_L_C,
	S_DIV_P,
	S_P_SCALE_C,
	S_P_MUL,
	S_P_CAST,
	S_P_A,
	S_RESCALE_O,
	S_PV,
	S_PV_PROMOTE,
	S_PV_OUT,
	S_V_DESCALE,
	S_VS_A,
	S_PV_DESCALE,
	S_PV_ADD,
	S_TC_A,
	S_DIV,
	S_STORE,
	S_LOG,
	S_LSE,
	S_QK_B,
	S_S_C_B,
	S_SCALE_B,
	S_SUB_L,
	S_EXP_B,
	S_P_A_B,
	S_DO,
	S_DO_C,
	S_DO_A,
	S_DV,
	S_DV_STORE,
	S_DP,
	S_DP_C,
	S_O_C,
	S_O_A,
	S_ROWSUM,
	S_ROWSUM_C,
	S_DS_SUB,
	S_DS,
	S_DS_A,
	S_DQ,
	S_DQ_C,
	S_DQ_SCALE,
	S_DQ_STORE,
	S_DK,
	S_DK_C,
	S_DK_SCALE,
	S_DK_STORE,
	/* fp8:bwd's own sites */
	S_DO8,
	S_DO8_SCALE,
	S_DO8_DC,
	S_DESCALE_B,
	S_DESCALE_SCALE_B,
	S_P_MUL_B,
	S_P_CAST_B,
	S_DV_FACTOR,
	S_DV_FACTOR_A,
	S_DV_DESCALE,
	S_DP_FACTOR,
	S_DP_DESCALE,
	S_ROWSUM_DESCALE,
	S_DS_SCALE,
	S_DS8_SCALE,
	S_DS8_SCALE_C,
	S_DS_MUL,
	S_DS_CAST,
	S_DQ_FACTOR,
	S_DQ_FACTOR_A,
	S_DQ_DESCALE,
	S_DQ_ADD,
	S_DK_FACTOR,
	S_DK_FACTOR_A,
	S_DK_DESCALE,
	S_DK_ADD,
	S_END
};
static const char *const steps[S_END - EMU_STEP0] = {
    [S_SCALE_C - EMU_STEP0] = "scale_to_compute",
    [S_Q_A - EMU_STEP0] = "q_to_accum",
    [S_K_A - EMU_STEP0] = "k_to_accum",
    [S_V_A - EMU_STEP0] = "v_to_accum",
    [S_Q8 - EMU_STEP0] = "q8",
    [S_Q8_SCALE - EMU_STEP0] = "q8_scale",
    [S_D_C - EMU_STEP0] = "d_to_compute",
    [S_Q8_A - EMU_STEP0] = "q8_to_accum",
    [S_QK - EMU_STEP0] = "qk",
    [S_QK_PROMOTE - EMU_STEP0] = "qk_promote",
    [S_QK_OUT - EMU_STEP0] = "qk_out",
    [S_S_C - EMU_STEP0] = "s_to_compute",
    [S_DESCALE - EMU_STEP0] = "descale",
    [S_DESCALE_SCALE - EMU_STEP0] = "descale_scale",
    [S_SCALE - EMU_STEP0] = "logit_scale",
    [S_MAX - EMU_STEP0] = "max",
    [S_MAX_NEW - EMU_STEP0] = "max_new",
    [S_SUB_MAX - EMU_STEP0] = "sub_max",
    [S_EXP - EMU_STEP0] = "exp",
    [S_RESCALE_SUB - EMU_STEP0] = "rescale_sub",
    [S_RESCALE - EMU_STEP0] = "rescale",
    [S_E_A - EMU_STEP0] = "e_to_accum",
    [S_ALPHA_A - EMU_STEP0] = "alpha_to_accum",
    [S_RESCALE_L - EMU_STEP0] = "rescale_l",
    [S_SUM - EMU_STEP0] = "sum",
    [S_L_C - EMU_STEP0] = "l_to_compute",
    [S_DIV_P - EMU_STEP0] = "div_p",
    [S_P_SCALE_C - EMU_STEP0] = "p_scale_to_compute",
    [S_P_MUL - EMU_STEP0] = "p_scale",
    [S_P_CAST - EMU_STEP0] = "p_cast",
    [S_P_A - EMU_STEP0] = "p_to_accum",
    [S_RESCALE_O - EMU_STEP0] = "rescale_o",
    [S_PV - EMU_STEP0] = "pv",
    [S_PV_PROMOTE - EMU_STEP0] = "pv_promote",
    [S_PV_OUT - EMU_STEP0] = "pv_out",
    [S_V_DESCALE - EMU_STEP0] = "v_descale",
    [S_VS_A - EMU_STEP0] = "vs_to_accum",
    [S_PV_DESCALE - EMU_STEP0] = "pv_descale",
    [S_PV_ADD - EMU_STEP0] = "pv_add",
    [S_TC_A - EMU_STEP0] = "tc_to_accum",
    [S_DIV - EMU_STEP0] = "div",
    [S_STORE - EMU_STEP0] = "o_store",
    [S_LOG - EMU_STEP0] = "log",
    [S_LSE - EMU_STEP0] = "lse",
    [S_QK_B - EMU_STEP0] = "qk_bwd",
    [S_S_C_B - EMU_STEP0] = "s_bwd_to_compute",
    [S_SCALE_B - EMU_STEP0] = "logit_scale_bwd",
    [S_SUB_L - EMU_STEP0] = "sub_lse",
    [S_EXP_B - EMU_STEP0] = "exp_bwd",
    [S_P_A_B - EMU_STEP0] = "p_bwd_to_accum",
    [S_DO - EMU_STEP0] = "do",
    [S_DO_C - EMU_STEP0] = "do_to_compute",
    [S_DO_A - EMU_STEP0] = "do_to_accum",
    [S_DV - EMU_STEP0] = "dv",
    [S_DV_STORE - EMU_STEP0] = "dv_store",
    [S_DP - EMU_STEP0] = "dp",
    [S_DP_C - EMU_STEP0] = "dp_to_compute",
    [S_O_C - EMU_STEP0] = "o_to_compute",
    [S_O_A - EMU_STEP0] = "o_to_accum",
    [S_ROWSUM - EMU_STEP0] = "rowsum_do",
    [S_ROWSUM_C - EMU_STEP0] = "rowsum_to_compute",
    [S_DS_SUB - EMU_STEP0] = "ds_sub",
    [S_DS - EMU_STEP0] = "ds",
    [S_DS_A - EMU_STEP0] = "ds_to_accum",
    [S_DQ - EMU_STEP0] = "dq",
    [S_DQ_C - EMU_STEP0] = "dq_to_compute",
    [S_DQ_SCALE - EMU_STEP0] = "dq_scale",
    [S_DQ_STORE - EMU_STEP0] = "store",
    [S_DK - EMU_STEP0] = "dk",
    [S_DK_C - EMU_STEP0] = "dk_to_compute",
    [S_DK_SCALE - EMU_STEP0] = "dk_scale",
    [S_DK_STORE - EMU_STEP0] = "dk_store",
    [S_DO8 - EMU_STEP0] = "do8",
    [S_DO8_SCALE - EMU_STEP0] = "do8_scale",
    [S_DO8_DC - EMU_STEP0] = "do8_to_compute",
    [S_DESCALE_B - EMU_STEP0] = "descale_bwd",
    [S_DESCALE_SCALE_B - EMU_STEP0] = "descale_scale_bwd",
    [S_P_MUL_B - EMU_STEP0] = "p_scale_bwd",
    [S_P_CAST_B - EMU_STEP0] = "p_cast_bwd",
    [S_DV_FACTOR - EMU_STEP0] = "dv_factor",
    [S_DV_FACTOR_A - EMU_STEP0] = "dv_factor_to_accum",
    [S_DV_DESCALE - EMU_STEP0] = "dv_descale",
    [S_DP_FACTOR - EMU_STEP0] = "dp_factor",
    [S_DP_DESCALE - EMU_STEP0] = "dp_descale",
    [S_ROWSUM_DESCALE - EMU_STEP0] = "rowsum_descale",
    [S_DS_SCALE - EMU_STEP0] = "ds_attn_scale",
    [S_DS8_SCALE - EMU_STEP0] = "ds8_scale",
    [S_DS8_SCALE_C - EMU_STEP0] = "ds8_scale_to_compute",
    [S_DS_MUL - EMU_STEP0] = "ds_scale",
    [S_DS_CAST - EMU_STEP0] = "ds_cast",
    [S_DQ_FACTOR - EMU_STEP0] = "dq_factor",
    [S_DQ_FACTOR_A - EMU_STEP0] = "dq_factor_to_accum",
    [S_DQ_DESCALE - EMU_STEP0] = "dq_descale",
    [S_DQ_ADD - EMU_STEP0] = "dq_add",
    [S_DK_FACTOR - EMU_STEP0] = "dk_factor",
    [S_DK_FACTOR_A - EMU_STEP0] = "dk_factor_to_accum",
    [S_DK_DESCALE - EMU_STEP0] = "dk_descale",
    [S_DK_ADD - EMU_STEP0] = "dk_add",
};

/* Whether a Tensor Core model can write f (the conditions of emu_tc_check). */
static bool tc_out_ok(const emu_format *f)
{
	return f->has_sign && f->has_inf && f->nan == EMU_NAN_IEEE && f->has_subnormals &&
	       f->has_zero && f->p <= 24 && f->emin >= -126 && f->emax <= 127;
}

typedef struct {
	emu_be *be;
	const emu_format *S, *C, *A;
	bool tc;
	emu_tc_model model;
	const emu_format *tc_in, *tc_out;
	emu_vec *part; /* TC: one block's partial sum before it joins O */
} ctx;

/*
 * acc = Σ_{t<n} a_t·b_t in the GEMM's order: sequential FMAs in the
 * accumulator format from +0 (accumulate: from acc's value, as a GEMM
 * accumulates into its C), or the Tensor Core fold from +0 whose result is
 * then added to acc in the accumulator format (step add) when accumulating.
 */
static int gemm_dot(ctx *k, unsigned step, emu_tc_steps tst, unsigned add, bool accumulate,
                    emu_ref acc, emu_ref a, emu_ref b, size_t n, uint64_t elem)
{
	if (!k->tc) {
		if (!accumulate)
			emu_fill(k->be, acc, 0, 1);
		emu_fold(k->be, step, EMU_OP_FMA, k->A, EMU_ORDER_SEQ, acc, a, b, n, elem);
		return 0;
	}
	/* the model writes fp32 where the accumulator format is not one a Tensor
	 * Core can write: its result is converted into that format first */
	bool conv = k->tc_out != k->A;
	emu_ref dst = accumulate || conv ? emu_at(k->part, 0) : acc;
	if (emu_fold_tc(k->be, tst, &k->model, k->tc_in, k->tc_out, dst, a, b, n, elem) != 0)
		return -1;
	if (conv)
		emu_op1(k->be, S_TC_A, EMU_OP_CVT, k->A, accumulate ? dst : acc, dst, EMU_NOREF,
		        elem);
	if (accumulate)
		emu_op1(k->be, add, EMU_OP_ADD, k->A, acc, acc, dst, elem);
	return 0;
}

static const emu_tc_steps qk_steps = {S_QK, S_QK_PROMOTE, S_QK_OUT};
static const emu_tc_steps pv_steps = {S_PV, S_PV_PROMOTE, S_PV_OUT};

/* "naive:bwd" → NAIVE, bwd; "online:tc:h100" → ONLINE, tc, spec "h100". */
static int parse_variant(const char *v, bool *bwd, bool *tc, const char **spec)
{
	static const char *const base[] = {"naive", "online", "fp8"};
	*bwd = *tc = false;
	*spec = NULL;
	if (!v)
		return NAIVE;
	for (int b = 0; b < 3; b++) {
		size_t n = strlen(base[b]);
		if (strncmp(v, base[b], n) != 0 || (v[n] != 0 && v[n] != ':'))
			continue;
		const char *r = v + n;
		if (!strncmp(r, ":bwd", 4) && (r[4] == 0 || r[4] == ':'))
			*bwd = true, r += 4;
		if (!strncmp(r, ":tc", 3) && (r[3] == 0 || (r[3] == ':' && r[4]))) {
			*tc = true;
			*spec = r[3] ? r + 4 : NULL;
			r = "";
		}
		return *r ? -1 : b;
	}
	return -1;
}

/* The fp8 variant's quantised tensor: the recipe's element values (e4m3;
 * fp8:bwd's dO: e5m2 or e4m3) in the vector q, one decode scale per tile of
 * rows in d (compute format); st: the steps of the elements, the scales as
 * stored and their conversion into the compute format. */
typedef struct {
	unsigned q, scale, to_c;
} qsteps;
static const qsteps qkv_steps = {S_Q8, S_Q8_SCALE, S_D_C};
static const qsteps do_steps = {S_DO8, S_DO8_SCALE, S_DO8_DC};

static int quantise(emu_be *be, const emu_recipe *rc, emu_vec *src, size_t rows, size_t dd,
                    size_t tile, uint64_t e0, uint64_t seed, emu_vec *q, emu_vec *dsc,
                    const emu_format *C, const qsteps *st)
{
	const emu_format *e4 = emu_format_by_name(rc->elem.name), *f32 = emu_format_by_name("fp32");
	size_t n = rows * dd, nt = (rows + tile - 1) / tile;
	double *x = malloc((n ? n : 1) * sizeof *x), *ds = malloc(nt * sizeof *ds);
	int rc_ = -1;
	if (!x || !ds)
		goto out;
	for (size_t i = 0; i < n; i++)
		x[i] = emu_vget(be, src, i);
	if (be->kind == EMU_BE_TRUTH && be->exact_inputs) {
		/* the original tensors: no quantisation, no transform, scale 1 */
		for (size_t t = 0; t < nt; t++)
			ds[t] = 1;
		emu_input(be, st->q, e4, emu_row(q, 0), x, 1, n, e0, NULL);
	} else {
		emu_qtensor qt;
		emu_qpart part = {0, rows, seed, NAN, e0};
		if (emu_quantize_part(rc, EMU_ROLE_ACT, false, x, rows, dd, &part, &qt) != 0)
			goto out;
		for (size_t i = 0; i < n; i++)
			emu_k_note_input(be, x[i], qt.deq[i], qt.flags[i]);
		for (size_t t = 0; t < nt; t++)
			ds[t] = qt.d[t];
		bool was = be->loading;
		be->loading = true; /* counted above, as the quantisation's */
		emu_input(be, st->q, e4, emu_row(q, 0), qt.q, 1, n, e0, NULL);
		be->loading = was;
		emu_qtensor_free(&qt);
	}
	bool was = be->loading;
	be->loading = true;
	emu_input(be, st->scale, f32, emu_row(dsc, 0), ds, 1, nt, e0, NULL);
	be->loading = was;
	emu_map(be, st->to_c, EMU_OP_CVT, C, emu_row(dsc, 0), emu_row(dsc, 0), EMU_NOREF, EMU_NOREF,
	        nt, e0, NULL);
	rc_ = 0;
out:
	free(x);
	free(ds);
	return rc_;
}

/*
 * fp8:bwd's backward pass (the header's order, cuDNN's FP8 SDPA backward
 * graph): the forward's e4m3 Q, K, V (accumulator-format copies Qo, Ko, Vo)
 * and tile decode scales dq8, dk8, dv8, its stored O and its L; P
 * recomputed from S and L; dO and dS in DF (e5m2 or e4m3) with one scale
 * per tensor; dV, dQ and dK stored in the storage format.
 */
static int fp8_backward(ctx *k, const emu_kin *in, const double *dor, const emu_recipe *rdo,
                        const emu_format *DF, emu_vec *Qo, emu_vec *Ko, emu_vec *Vo, emu_vec *dq8,
                        emu_vec *dk8, emu_vec *dv8, emu_vec *O, emu_vec *L, emu_vec *dQ,
                        emu_vec *dK, emu_vec *dV, emu_vec *ds_lost, emu_vec *amax_ds, size_t nq,
                        size_t nk, size_t d, size_t B, size_t Tq, size_t Tk, bool causal,
                        double dss, emu_ref sc, emu_ref psc, emu_vec *P, emu_vec *PA, emu_vec *sacc)
{
	emu_be *be = k->be;
	const emu_format *S = k->S, *C = k->C, *A = k->A, *E4 = emu_format_by_name("e4m3"),
	                 *F32 = emu_format_by_name("fp32");
	size_t shift = nk - nq, nkt = (nk + B - 1) / B, ntq = (nq + Tq - 1) / Tq,
	       ntk = (nk + Tk - 1) / Tk;
	emu_vec *dOc = emu_vec_new(be, nq * d), *dOA = emu_vec_new(be, nq * d),
	        *OA = emu_vec_new(be, nq * d), *P8 = emu_vec_new(be, nq * nk),
	        *dS = emu_vec_new(be, nq * nk), *dS8 = emu_vec_new(be, nq * nk),
	        *dSA = emu_vec_new(be, nq * nk), *Dv = emu_vec_new(be, nq), *g = emu_vec_new(be, d),
	        *part = emu_vec_new(be, d), *ddo = emu_vec_new(be, 1), *dpf = emu_vec_new(be, ntk),
	        *dqf = emu_vec_new(be, ntk), *dkf = emu_vec_new(be, ntq), *t = emu_vec_new(be, 4);
	int rc = -1;
	if (!dOc || !dOA || !OA || !P8 || !dS || !dS8 || !dSA || !Dv || !g || !part || !ddo ||
	    !dpf || !dqf || !dkf || !t)
		goto out;
	emu_ref dsc = emu_at(t, 0), fa = emu_at(t, 1), sds = emu_at(t, 2), d_do = emu_at(ddo, 0);
	/* dO = ±1 stored, into the compute format, then quantised to DF with one
	 * fp32 scale (current scaling: fmax / amax) */
	emu_input(be, S_DO, S, emu_row(dOc, 0), dor, 1, nq * d, 0, NULL);
	emu_map(be, S_DO_C, EMU_OP_CVT, C, emu_row(dOc, 0), emu_row(dOc, 0), EMU_NOREF, EMU_NOREF,
	        nq * d, 0, NULL);
	if (quantise(be, rdo, dOc, nq, d, nq, 0, in->seed, dOc, ddo, C, &do_steps) != 0)
		goto out;
	emu_map(be, S_DO_A, EMU_OP_CVT, A, emu_row(dOA, 0), emu_row(dOc, 0), EMU_NOREF, EMU_NOREF,
	        nq * d, 0, NULL);
	emu_map(be, S_O_C, EMU_OP_CVT, C, emu_row(OA, 0), emu_row(O, 0), EMU_NOREF, EMU_NOREF,
	        nq * d, 0, NULL);
	emu_map(be, S_O_A, EMU_OP_CVT, A, emu_row(OA, 0), emu_row(OA, 0), EMU_NOREF, EMU_NOREF,
	        nq * d, 0, NULL);
	/* P_ij = exp(S_ij − L_i) with S as the forward computes it, and its e4m3
	 * cast P8 = E(P · p_scale) as the forward's */
	for (size_t i = 0; i < nq; i++) {
		size_t n = causal ? i + 1 + shift : nk;
		uint64_t el = (uint64_t)i * nk;
		emu_ref Pr = emu_row(P, i * nk), P8r = emu_row(P8, i * nk);
		for (size_t j = 0; j < n; j++) {
			emu_fill(be, emu_at(sacc, j), 0, 1);
			emu_fold(be, S_QK_B, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(sacc, j),
			         emu_row(Qo, i * d), emu_row(Ko, j * d), d, (el + j) * d);
		}
		emu_map(be, S_S_C_B, EMU_OP_CVT, C, Pr, emu_row(sacc, 0), EMU_NOREF, EMU_NOREF, n,
		        el, NULL);
		for (size_t j0 = 0, b = 0; j0 < n; j0 += B, b++) {
			size_t nb = j0 + B < n ? B : n - j0;
			uint64_t pe = (uint64_t)i * nkt + b;
			emu_op1(be, S_DESCALE_B, EMU_OP_MUL, C, dsc, emu_at(dq8, i / Tq),
			        emu_at(dk8, j0 / Tk), pe);
			emu_op1(be, S_DESCALE_SCALE_B, EMU_OP_MUL, C, dsc, dsc, sc, pe);
			emu_map(be, S_SCALE_B, EMU_OP_MUL, C, emu_row(P, i * nk + j0),
			        emu_row(P, i * nk + j0), dsc, EMU_NOREF, nb, el + j0, NULL);
		}
		emu_map(be, S_SUB_L, EMU_OP_SUB, C, Pr, Pr, emu_at(L, i), EMU_NOREF, n, el, NULL);
		emu_map(be, S_EXP_B, EMU_OP_EXP, C, Pr, Pr, EMU_NOREF, EMU_NOREF, n, el, NULL);
		emu_map(be, S_P_MUL_B, EMU_OP_MUL, C, P8r, Pr, psc, EMU_NOREF, n, el, NULL);
		emu_map(be, S_P_CAST_B, EMU_OP_CVT, E4, P8r, P8r, EMU_NOREF, EMU_NOREF, n, el,
		        NULL);
		emu_map(be, S_P_A_B, EMU_OP_CVT, A, emu_row(PA, i * nk), P8r, EMU_NOREF, EMU_NOREF,
		        n, el, NULL);
	}
	/* dV = P8ᵀ·dO8 (one GEMM), descaled by d_dO / p_scale */
	emu_op1(be, S_DV_FACTOR, EMU_OP_DIV, C, dsc, d_do, psc, 0);
	emu_op1(be, S_DV_FACTOR_A, EMU_OP_CVT, A, fa, dsc, EMU_NOREF, 0);
	for (size_t j = 0; j < nk; j++) {
		size_t i0 = causal && j > shift ? j - shift : 0;
		for (size_t c = 0; c < d; c++) {
			emu_fill(be, emu_at(g, c), 0, 1);
			emu_fold(be, S_DV, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(g, c),
			         emu_strided(PA, i0 * nk + j, nk), emu_strided(dOA, i0 * d + c, d),
			         nq - i0, ((uint64_t)j * d + c) * nq + i0);
		}
		emu_map(be, S_DV_DESCALE, EMU_OP_MUL, A, emu_row(g, 0), emu_row(g, 0), fa,
		        EMU_NOREF, d, (uint64_t)j * d, NULL);
		emu_map(be, S_DV_STORE, EMU_OP_CVT, S, emu_row(dV, j * d), emu_row(g, 0), EMU_NOREF,
		        EMU_NOREF, d, (uint64_t)j * d, NULL);
	}
	/* dP = dO8·V8ᵀ descaled by d_dO·d_V (one factor per V tile); D = dO8·O
	 * descaled by d_dO; dS = (dP − D)·P·scale, all in the compute format */
	emu_map(be, S_DP_FACTOR, EMU_OP_MUL, C, emu_row(dpf, 0), d_do, emu_row(dv8, 0), EMU_NOREF,
	        ntk, 0, NULL);
	for (size_t i = 0; i < nq; i++) {
		size_t n = causal ? i + 1 + shift : nk;
		uint64_t el = (uint64_t)i * nk;
		emu_ref dSr = emu_row(dS, i * nk);
		for (size_t j = 0; j < n; j++) {
			emu_fill(be, emu_at(dS, i * nk + j), 0, 1);
			emu_fold(be, S_DP, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(dS, i * nk + j),
			         emu_row(dOA, i * d), emu_row(Vo, j * d), d, (el + j) * d);
		}
		emu_map(be, S_DP_C, EMU_OP_CVT, C, dSr, dSr, EMU_NOREF, EMU_NOREF, n, el, NULL);
		for (size_t j0 = 0; j0 < n; j0 += Tk)
			emu_map(be, S_DP_DESCALE, EMU_OP_MUL, C, emu_row(dS, i * nk + j0),
			        emu_row(dS, i * nk + j0), emu_at(dpf, j0 / Tk), EMU_NOREF,
			        (j0 + Tk < n ? Tk : n - j0), el + j0, NULL);
		emu_fill(be, emu_at(Dv, i), 0, 1);
		emu_fold(be, S_ROWSUM, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(Dv, i),
		         emu_row(dOA, i * d), emu_row(OA, i * d), d, (uint64_t)i * d);
		emu_op1(be, S_ROWSUM_C, EMU_OP_CVT, C, emu_at(Dv, i), emu_at(Dv, i), EMU_NOREF, i);
		emu_op1(be, S_ROWSUM_DESCALE, EMU_OP_MUL, C, emu_at(Dv, i), emu_at(Dv, i), d_do, i);
		emu_map(be, S_DS_SUB, EMU_OP_SUB, C, dSr, dSr, emu_at(Dv, i), EMU_NOREF, n, el,
		        NULL);
		emu_map(be, S_DS, EMU_OP_MUL, C, dSr, dSr, emu_row(P, i * nk), EMU_NOREF, n, el,
		        NULL);
		emu_map(be, S_DS_SCALE, EMU_OP_MUL, C, dSr, dSr, sc, EMU_NOREF, n, el, NULL);
	}
	/* dS's amax over the unmasked entries (on the values this backend
	 * holds), its scale (ds_scale, or fmax / amax clamped to the largest
	 * finite value of fp32 and of the compute format; 1 when the amax is 0
	 * or not finite), stored in fp32 and converted into the compute format */
	double amax = 0, s;
	bool nan = false;
	for (size_t i = 0; i < nq; i++) {
		size_t n = causal ? i + 1 + shift : nk;
		for (size_t j = 0; j < n; j++) {
			double a = fabs(emu_vget(be, dS, i * nk + j));
			if (isnan(a))
				nan = true;
			else if (a > amax)
				amax = a;
		}
	}
	if (dss > 0) {
		s = dss;
	} else if (nan || amax == 0 || isinf(amax)) {
		s = 1;
	} else {
		double smax = C->max < F32->max ? C->max : F32->max;
		s = DF->max / amax;
		if (s > smax)
			s = smax;
	}
	emu_fill(be, emu_at(amax_ds, 0), nan ? NAN : amax, 1);
	bool was = be->loading;
	be->loading = true; /* a scale the recipe chose, not an input */
	emu_input(be, S_DS8_SCALE, F32, sds, &s, 1, 1, 0, NULL);
	be->loading = was;
	emu_op1(be, S_DS8_SCALE_C, EMU_OP_CVT, C, sds, sds, EMU_NOREF, 0);
	/* dS8 = DF(dS · s), into the accumulator format */
	double lost = 0;
	for (size_t i = 0; i < nq; i++) {
		size_t n = causal ? i + 1 + shift : nk;
		uint64_t el = (uint64_t)i * nk;
		emu_ref r8 = emu_row(dS8, i * nk);
		emu_map(be, S_DS_MUL, EMU_OP_MUL, C, r8, emu_row(dS, i * nk), sds, EMU_NOREF, n, el,
		        NULL);
		emu_map(be, S_DS_CAST, EMU_OP_CVT, DF, r8, r8, EMU_NOREF, EMU_NOREF, n, el, NULL);
		for (size_t j = 0; j < n; j++)
			lost +=
			    emu_vget(be, dS, i * nk + j) != 0 && emu_vget(be, dS8, i * nk + j) == 0;
		emu_map(be, S_DS_A, EMU_OP_CVT, A, emu_row(dSA, i * nk), r8, EMU_NOREF, EMU_NOREF,
		        n, el, NULL);
	}
	emu_fill(be, emu_at(ds_lost, 0), lost, 1);
	/* the descale factors A(C(d_K[t] / s)) and A(C(d_Q[t] / s)) */
	emu_map(be, S_DQ_FACTOR, EMU_OP_DIV, C, emu_row(dqf, 0), emu_row(dk8, 0), sds, EMU_NOREF,
	        ntk, 0, NULL);
	emu_map(be, S_DQ_FACTOR_A, EMU_OP_CVT, A, emu_row(dqf, 0), emu_row(dqf, 0), EMU_NOREF,
	        EMU_NOREF, ntk, 0, NULL);
	emu_map(be, S_DK_FACTOR, EMU_OP_DIV, C, emu_row(dkf, 0), emu_row(dq8, 0), sds, EMU_NOREF,
	        ntq, 0, NULL);
	emu_map(be, S_DK_FACTOR_A, EMU_OP_CVT, A, emu_row(dkf, 0), emu_row(dkf, 0), EMU_NOREF,
	        EMU_NOREF, ntq, 0, NULL);
	/* dQ_i = Σ over K's tiles of (dS8_i,tile · K8_tile) · factor, tile by tile
	 * added in the accumulator format, stored */
	for (size_t i = 0; i < nq; i++) {
		size_t n = causal ? i + 1 + shift : nk;
		for (size_t j0 = 0; j0 < n; j0 += Tk) {
			size_t nt = j0 + Tk < n ? Tk : n - j0, tt = j0 / Tk;
			emu_vec *dst = j0 == 0 ? g : part;
			for (size_t c = 0; c < d; c++) {
				emu_fill(be, emu_at(dst, c), 0, 1);
				emu_fold(be, S_DQ, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(dst, c),
				         emu_row(dSA, i * nk + j0), emu_strided(Ko, j0 * d + c, d),
				         nt, ((uint64_t)i * d + c) * nk + j0);
			}
			uint64_t pe = ((uint64_t)i * ntk + tt) * d;
			emu_map(be, S_DQ_DESCALE, EMU_OP_MUL, A, emu_row(dst, 0), emu_row(dst, 0),
			        emu_at(dqf, tt), EMU_NOREF, d, pe, NULL);
			if (j0)
				emu_map(be, S_DQ_ADD, EMU_OP_ADD, A, emu_row(g, 0), emu_row(g, 0),
				        emu_row(part, 0), EMU_NOREF, d, pe, NULL);
		}
		emu_map(be, S_DQ_STORE, EMU_OP_CVT, S, emu_row(dQ, i * d), emu_row(g, 0), EMU_NOREF,
		        EMU_NOREF, d, (uint64_t)i * d, NULL);
	}
	/* dK_j = Σ over Q's tiles of (dS8ᵀ_j,tile · Q8_tile) · factor, likewise */
	for (size_t j = 0; j < nk; j++) {
		size_t i0 = causal && j > shift ? j - shift : 0;
		bool first = true;
		for (size_t tt = i0 / Tq; tt * Tq < nq; tt++, first = false) {
			size_t lo = tt * Tq > i0 ? tt * Tq : i0,
			       hi = (tt + 1) * Tq < nq ? (tt + 1) * Tq : nq;
			emu_vec *dst = first ? g : part;
			for (size_t c = 0; c < d; c++) {
				emu_fill(be, emu_at(dst, c), 0, 1);
				emu_fold(be, S_DK, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(dst, c),
				         emu_strided(dSA, lo * nk + j, nk),
				         emu_strided(Qo, lo * d + c, d), hi - lo,
				         ((uint64_t)j * d + c) * nq + lo);
			}
			uint64_t pe = ((uint64_t)j * ntq + tt) * d;
			emu_map(be, S_DK_DESCALE, EMU_OP_MUL, A, emu_row(dst, 0), emu_row(dst, 0),
			        emu_at(dkf, tt), EMU_NOREF, d, pe, NULL);
			if (!first)
				emu_map(be, S_DK_ADD, EMU_OP_ADD, A, emu_row(g, 0), emu_row(g, 0),
				        emu_row(part, 0), EMU_NOREF, d, pe, NULL);
		}
		emu_map(be, S_DK_STORE, EMU_OP_CVT, S, emu_row(dK, j * d), emu_row(g, 0), EMU_NOREF,
		        EMU_NOREF, d, (uint64_t)j * d, NULL);
	}
	rc = 0;
out:
	return rc;
}

/* x; the operands read out of it (row i: [q_i | k_i | v_i]; sink=G sets
 * k_0 first), q (seq_q × d), k and v (seq_k × d), each loaded as a tensor of
 * its own (k's elements after q's, v's after k's); with :bwd the upstream
 * gradient dO (seq_q × d, stored at step "dO"): ±1 from bit 0 of
 * emu_sr_bits(seed, i·d + c). */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	size_t R = in->rows, N = in->cols, d3 = N / 3; /* the default head: a third of a row */
	bool bwd, tc;
	const char *spec;
	double hd, sq, sk, scale, sink, *q, *kk, *vv, *dO;
	emu_kinput *tq, *tk, *tv, *tdo;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (parse_variant(variant, &bwd, &tc, &spec) < 0 || R == 0 || N == 0 || (bwd && tc))
		return 0; /* the run refuses them */
	if (!emu_kparam_int(in, "attention", "head_dim", 1, 1e9, (double)d3, &hd, err, errlen))
		return -1;
	if (hd < 1 || 3 * (size_t)hd != N)
		return 0; /* the run refuses it */
	size_t d = (size_t)hd;
	if (!emu_kparam_int(in, "attention", "seq_q", 1, (double)R, (double)R, &sq, err, errlen) ||
	    !emu_kparam_int(in, "attention", "seq_k", 1, (double)R, (double)R, &sk, err, errlen) ||
	    !emu_kparam_real(in, "attention", "scale", 0, INFINITY, EMU_KP_ABOVE_LO,
	                     1 / sqrt((double)d), &scale, err, errlen) ||
	    !emu_kparam_real(in, "attention", "sink", -1e4, 1e4, 0, 0, &sink, err, errlen))
		return -1;
	size_t nq = (size_t)sq, nk = (size_t)sk;
	if (emu_kinputs_add(ki, in, "attention", "q", nq, d, false, &tq, &q, err, errlen) != 0 ||
	    emu_kinputs_add(ki, in, "attention", "k", nk, d, false, &tk, &kk, err, errlen) != 0 ||
	    emu_kinputs_add(ki, in, "attention", "v", nk, d, false, &tv, &vv, err, errlen) != 0)
		return -1;
	tq->fmt = tk->fmt = tv->fmt = pol->scale == EMU_SCALE_NONE ? &pol->storage : NULL;
	tq->step = tk->step = tv->step = EMU_STEP_INPUT;
	tk->e0 = (uint64_t)(nq * d);
	tv->e0 = (uint64_t)((nq + nk) * d);
	tq->of_x = tk->of_x = tv->of_x = true;
	for (size_t i = 0; q && i < nq; i++)
		for (size_t c = 0; c < d; c++)
			q[i * d + c] = in->x[i * N + c];
	for (size_t j = 0; kk && j < nk; j++)
		for (size_t c = 0; c < d; c++)
			kk[j * d + c] = in->x[j * N + d + c];
	for (size_t j = 0; vv && j < nk; j++)
		for (size_t c = 0; c < d; c++)
			vv[j * d + c] = in->x[j * N + 2 * d + c];
	if (sink != 0) { /* an attention sink: k_0 = q_0 · sink / (scale·|q_0|²), so
		            query 0's logit for key 0 is sink before any rounding */
		ki->item[0].fmt = NULL; /* x itself is not what the kernel stores */
		double qq = 0;
		for (size_t c = 0; c < d; c++)
			qq += tq->v[c] * tq->v[c];
		for (size_t c = 0; kk && qq > 0 && c < d; c++)
			kk[c] = tq->v[c] * sink / (scale * qq);
	}
	if (!bwd)
		return 0;
	if (emu_kinputs_add(ki, in, "attention", "dO", nq, d, false, &tdo, &dO, err, errlen) != 0)
		return -1;
	tdo->fmt = &pol->storage;
	tdo->step = S_DO;
	for (size_t i = 0; dO && i < nq * d; i++)
		dO[i] = emu_sr_bits(in->seed, i) & 1 ? -1.0 : 1.0;
	return 0;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const emu_format *E4 = emu_format_by_name("e4m3");
	bool bwd, tc;
	const char *spec;
	int v = parse_variant(variant, &bwd, &tc, &spec);
	if (v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(err, errlen,
		         v < 0 ? "attention: unknown variant '%s' (naive online fp8, then :bwd "
		                 "(naive, online) or :tc[:MODEL])"
		               : "attention: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	if (bwd && tc) {
		snprintf(err, errlen, "attention: :bwd does not combine with :tc (%s)", variant);
		return -1;
	}
	size_t R = in->rows, N = in->cols, d3 = N / 3; /* the default head: a third of a row */
	double hd, sq, sk, causal, bk, had, ps, scale, tile, dofmt, dss, sink;
	if (!emu_kparam_int(in, "attention", "head_dim", 1, 1e9, (double)d3, &hd, err, errlen))
		return -1;
	if (hd < 1 || 3 * (size_t)hd != N) {
		snprintf(err, errlen,
		         "attention: cols=%zu must be 3·head_dim (row i holds q_i, k_i, v_i)", N);
		return -1;
	}
	size_t d = (size_t)hd;
	if (!emu_kparam_int(in, "attention", "seq_q", 1, (double)R, (double)R, &sq, err, errlen) ||
	    !emu_kparam_int(in, "attention", "seq_k", 1, (double)R, (double)R, &sk, err, errlen) ||
	    !emu_kparam_int(in, "attention", "causal", 0, 1, 0, &causal, err, errlen) ||
	    !emu_kparam_int(in, "attention", "block_k", 1, 1e9, 16, &bk, err, errlen) ||
	    !emu_kparam_int(in, "attention", "hadamard", 0, 1, 0, &had, err, errlen) ||
	    !emu_kparam_int(in, "attention", "tile", 0, 1e9, bk, &tile, err, errlen) ||
	    !emu_kparam_real(in, "attention", "p_scale", 0, INFINITY, EMU_KP_ABOVE_LO, 448, &ps,
	                     err, errlen) ||
	    !emu_kparam_real(in, "attention", "scale", 0, INFINITY, EMU_KP_ABOVE_LO,
	                     1 / sqrt((double)d), &scale, err, errlen) ||
	    !emu_kparam_int(in, "attention", "do_fmt", 4, 5, 5, &dofmt, err, errlen) ||
	    !emu_kparam_real(in, "attention", "ds_scale", 0, INFINITY, 0, 0, &dss, err, errlen) ||
	    !emu_kparam_real(in, "attention", "sink", -1e4, 1e4, 0, 0, &sink, err, errlen))
		return -1;
	if (bwd && v == FP8 && had) {
		snprintf(
		    err, errlen,
		    "attention: fp8:bwd takes hadamard=0 (the transform rotates Q and K, so dQ "
		    "and dK would need its inverse)");
		return -1;
	}
	size_t nq = (size_t)sq, nk = (size_t)sk, B = (size_t)bk, T = (size_t)tile;
	if (T % B != 0) {
		snprintf(err, errlen,
		         "attention: tile=%zu must be 0 (one scale per tensor) or a multiple of "
		         "block_k=%zu (a key block in one tile)",
		         T, B);
		return -1;
	}
	size_t Tq = T ? T : nq, Tk = T ? T : nk; /* rows of a quantisation tile */
	if (causal && nq > nk) {
		snprintf(err, errlen,
		         "attention: causal=1 needs seq_q <= seq_k (every query a key)");
		return -1;
	}
	size_t shift = nk - nq; /* causal: query i sees keys j <= i + shift */

	ctx k = {be, S, C, A, tc, {0}, NULL, NULL, NULL};
	if (tc) {
		k.tc_in = v == FP8 ? E4 : C;
		k.tc_out = tc_out_ok(A) ? A : emu_format_by_name("fp32");
		char why[160];
		if (spec) {
			if (emu_tc_parse(spec, k.tc_in, k.tc_out, &k.model, why, sizeof why) !=
			    EMU_OK) {
				snprintf(err, errlen, "attention: tc model '%s': %s", spec, why);
				return -1;
			}
		} else {
			k.model = emu_tc_default();
		}
		if (emu_tc_check(&k.model, k.tc_in, k.tc_out, why, sizeof why) != EMU_OK) {
			snprintf(err, errlen, "attention: tc with %s -> %s: %s", k.tc_in->name,
			         k.tc_out->name, why);
			return -1;
		}
	}
	emu_recipe rq, rv, rdo;
	const emu_format *DF = dofmt == 4 ? E4 : emu_format_by_name("e5m2"); /* dO, dS */
	if (v == FP8 && bwd) { /* dO: one fp32 scale per tensor, current scaling */
		char rs[160], e[160];
		snprintf(rs, sizeof rs, "elem=%s,scale=fp32,rule=fp32,block=0x0,rht=no", DF->name);
		if (emu_recipe_parse(rs, &rdo, e, sizeof e) != EMU_OK) {
			snprintf(err, errlen, "attention: %s", e);
			return -1;
		}
	}
	if (v == FP8) {
		char rs[160], e[160];
		snprintf(rs, sizeof rs, "elem=e4m3,scale=fp32,rule=fp32,block=%zux0,rht=%s", T,
		         had ? "all" : "no");
		if (emu_recipe_parse(rs, &rq, e, sizeof e) != EMU_OK) {
			snprintf(err, errlen, "attention: %s", e);
			return -1;
		}
		snprintf(rs, sizeof rs, "elem=e4m3,scale=fp32,rule=fp32,block=%zux0,rht=no", T);
		if (emu_recipe_parse(rs, &rv, e, sizeof e) != EMU_OK) {
			snprintf(err, errlen, "attention: %s", e);
			return -1;
		}
	}
	emu_kinputs ki;
	if (emu_kinputs_take(&emu_kernel_attention, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	const double *qr = emu_kinputs_find(&ki, "q")->v, *kr = emu_kinputs_find(&ki, "k")->v,
	             *vr = emu_kinputs_find(&ki, "v")->v;
	const double *dor = bwd ? emu_kinputs_find(&ki, "dO")->v : NULL;
	emu_steps(be, steps, S_END - EMU_STEP0);

	emu_vec *O = emu_kout_vec(be, out, "O", nq * d, S);
	emu_vec *L = emu_kout_vec(be, out, "L", nq, C);
	emu_vec *dQ = bwd ? emu_kout_vec(be, out, "dQ", nq * d, S) : NULL;
	emu_vec *dK = bwd ? emu_kout_vec(be, out, "dK", nk * d, S) : NULL;
	emu_vec *dV = bwd ? emu_kout_vec(be, out, "dV", nk * d, S) : NULL;
	/* fp8's diagnostic: how many nonzero P̃ the e4m3 cast of P̃·p_scale
	 * flushed to zero (those below half e4m3's smallest subnormal over
	 * p_scale), counted on the values this backend holds */
	const emu_format *F32 = emu_format_by_name("fp32");
	emu_vec *p_lost = v == FP8 ? emu_kout_vec(be, out, "p_lost", 1, F32) : NULL;
	/* (not with :bwd, whose eight outputs fill emu_kout) */
	emu_vec *p_mass = v == FP8 && !bwd ? emu_kout_vec(be, out, "p_mass", 1, F32) : NULL;
	/* and the share of each row's probability mass those flushed P̃
	 * carried, its largest and its mean over the rows (in double from the
	 * row's held logits: Σ_flushed exp(s_j − max s) / Σ_j exp(s_j − max s)) */
	emu_vec *lm_max = v == FP8 ? emu_kout_vec(be, out, "p_lost_mass_max", 1, F32) : NULL;
	emu_vec *lm_mean = v == FP8 ? emu_kout_vec(be, out, "p_lost_mass_mean", 1, F32) : NULL;
	double mass_max = 0, mass_sum = 0;
	/* fp8:bwd's: the nonzero dS its FP8 cast flushed to 0, and dS's amax
	 * (cuDNN's amax_dP, what a delayed recipe's history records) */
	emu_vec *ds_lost = v == FP8 && bwd ? emu_kout_vec(be, out, "ds_lost", 1, F32) : NULL;
	emu_vec *amax_ds = v == FP8 && bwd ? emu_kout_vec(be, out, "amax_ds", 1, C) : NULL;
	double n_p_lost = 0, p_mass_max = 0;
	emu_vec *Qc = emu_vec_new(be, nq * d), *Kc = emu_vec_new(be, nk * d),
	        *Vc = emu_vec_new(be, nk * d);
	/* the GEMM operands: accumulator-format copies, or the TC's input values */
	emu_vec *Qo = NULL, *Ko = NULL, *Vo = NULL;
	emu_vec *sacc = emu_vec_new(be, nk), *s = emu_vec_new(be, nk), *e = emu_vec_new(be, nk),
	        *ea = emu_vec_new(be, nk), *oacc = emu_vec_new(be, d), *t = emu_vec_new(be, 16);
	emu_vec *P = emu_vec_new(be, bwd ? nq * nk : nk), *PA = emu_vec_new(be, bwd ? nq * nk : nk);
	size_t nkt = (nk + B - 1) / B; /* key blocks */
	emu_vec *dq8 = v == FP8 ? emu_vec_new(be, (nq + Tq - 1) / Tq) : NULL,
	        *dk8 = v == FP8 ? emu_vec_new(be, (nk + Tk - 1) / Tk) : NULL,
	        *dv8 = v == FP8 ? emu_vec_new(be, (nk + Tk - 1) / Tk) : NULL,
	        *pv = emu_vec_new(be, d);
	int rc = -1;
	k.part = emu_vec_new(be, 1);
	if (!O || !L || (bwd && (!dQ || !dK || !dV)) || !Qc || !Kc || !Vc || !sacc || !s || !e ||
	    !ea || !oacc || !t || !P || !PA || !k.part || !pv ||
	    (v == FP8 &&
	     (!dq8 || !dk8 || !dv8 || !p_lost || (!bwd && !p_mass) || !lm_max || !lm_mean)) ||
	    (v == FP8 && bwd && (!ds_lost || !amax_ds)))
		goto oom;
	if (emu_load_at(be, pol, qr, nq, d, 0, Qc) != 0 ||
	    emu_load_at(be, pol, kr, nk, d, (uint64_t)(nq * d), Kc) != 0 ||
	    emu_load_at(be, pol, vr, nk, d, (uint64_t)((nq + nk) * d), Vc) != 0)
		goto oom;
	if (v == FP8) { /* the e4m3 tensors replace Q, K and V */
		if (quantise(be, &rq, Qc, nq, d, Tq, 0, in->seed, Qc, dq8, C, &qkv_steps) != 0 ||
		    quantise(be, &rq, Kc, nk, d, Tk, nq * d, in->seed, Kc, dk8, C, &qkv_steps) !=
		        0 ||
		    quantise(be, &rv, Vc, nk, d, Tk, (nq + nk) * d, in->seed, Vc, dv8, C,
		             &qkv_steps) != 0)
			goto oom;
	}
	if (tc) {
		Qo = Qc, Ko = Kc, Vo = Vc;
	} else {
		unsigned sq_ = v == FP8 ? S_Q8_A : S_Q_A, sk_ = v == FP8 ? S_Q8_A : S_K_A,
		         sv_ = v == FP8 ? S_Q8_A : S_V_A;
		Qo = emu_vec_new(be, nq * d), Ko = emu_vec_new(be, nk * d),
		Vo = emu_vec_new(be, nk * d);
		if (!Qo || !Ko || !Vo)
			goto oom;
		emu_map(be, sq_, EMU_OP_CVT, A, emu_row(Qo, 0), emu_row(Qc, 0), EMU_NOREF,
		        EMU_NOREF, nq * d, 0, NULL);
		emu_map(be, sk_, EMU_OP_CVT, A, emu_row(Ko, 0), emu_row(Kc, 0), EMU_NOREF,
		        EMU_NOREF, nk * d, nq * d, NULL);
		emu_map(be, sv_, EMU_OP_CVT, A, emu_row(Vo, 0), emu_row(Vc, 0), EMU_NOREF,
		        EMU_NOREF, nk * d, (nq + nk) * d, NULL);
	}
	enum { SC, M, MB, ALPHA, ALPHA_A, LSUM, LC, TMP, DSC, PSC, VS, VSA };
	emu_ref sc = emu_at(t, SC), m = emu_at(t, M), mb = emu_at(t, MB), alpha = emu_at(t, ALPHA),
	        alpha_a = emu_at(t, ALPHA_A), l = emu_at(t, LSUM), lc = emu_at(t, LC),
	        tmp = emu_at(t, TMP), dsc = emu_at(t, DSC), psc = emu_at(t, PSC),
	        vs = emu_at(t, VS), vsa = emu_at(t, VSA);
	/* the softmax scale (and fp8's P scale) in the compute format */
	emu_fill(be, tmp, scale, 1);
	emu_op1(be, S_SCALE_C, EMU_OP_CVT, C, sc, tmp, EMU_NOREF, 0);
	if (v == FP8) {
		emu_fill(be, tmp, ps, 1);
		emu_op1(be, S_P_SCALE_C, EMU_OP_CVT, C, psc, tmp, EMU_NOREF, 0);
	}
	size_t bsz = v == NAIVE ? nk : B;
	for (size_t i = 0; i < nq; i++) {
		size_t n = causal ? i + 1 + shift : nk; /* keys [0, n) */
		emu_ref q = emu_row(Qo, i * d);
		double row_lost = 0; /* the flushed P̃ of row i, in l's running frame */
		for (size_t j0 = 0, b = 0; j0 < n; j0 += bsz, b++) {
			size_t j1 = j0 + bsz < n ? j0 + bsz : n, nb = j1 - j0;
			uint64_t el = (uint64_t)i * nk + j0; /* element of (i, j0) */
			bool first = j0 == 0;
			/* S_blk = Q_i·K_blkᵀ, then into the compute format and scaled */
			for (size_t j = j0; j < j1; j++)
				if (gemm_dot(&k, S_QK, qk_steps, 0, false, emu_at(sacc, j), q,
				             emu_row(Ko, j * d), d,
				             ((uint64_t)i * nk + j) * d) != 0)
					goto oom;
			emu_ref sb = emu_row(s, j0), eb = emu_row(e, j0), eab = emu_row(ea, j0);
			emu_map(be, S_S_C, EMU_OP_CVT, C, sb, emu_row(sacc, j0), EMU_NOREF,
			        EMU_NOREF, nb, el, NULL);
			emu_ref mul = sc;
			if (v == FP8) { /* d_Q·d_K·scale, one factor per pair of tiles */
				uint64_t pe = (uint64_t)i * nkt + b;
				emu_op1(be, S_DESCALE, EMU_OP_MUL, C, dsc, emu_at(dq8, i / Tq),
				        emu_at(dk8, j0 / Tk), pe);
				emu_op1(be, S_DESCALE_SCALE, EMU_OP_MUL, C, dsc, dsc, sc, pe);
				mul = dsc;
			}
			emu_map(be, S_SCALE, EMU_OP_MUL, C, sb, sb, mul, EMU_NOREF, nb, el, NULL);
			/* the block's max, merged into the running one */
			emu_ref mx = first ? m : mb;
			emu_copy(be, mx, sb, 1);
			emu_fold(be, S_MAX, EMU_OP_MAX, C, EMU_ORDER_SEQ, mx, emu_row(s, j0 + 1),
			         EMU_NOREF, nb - 1, el + 1);
			uint64_t be_ = (uint64_t)i * nkt + b;
			if (!first) { /* α = exp(m_old − m_new) */
				emu_op1(be, S_MAX_NEW, EMU_OP_MAX, C, mb, m, mb, be_);
				emu_op1(be, S_RESCALE_SUB, EMU_OP_SUB, C, alpha, m, mb, be_);
				emu_op1(be, S_RESCALE, EMU_OP_EXP, C, alpha, alpha, EMU_NOREF, be_);
				emu_copy(be, m, mb, 1);
			}
			emu_map(be, S_SUB_MAX, EMU_OP_SUB, C, eb, sb, m, EMU_NOREF, nb, el, NULL);
			emu_map(be, S_EXP, EMU_OP_EXP, C, eb, eb, EMU_NOREF, EMU_NOREF, nb, el,
			        NULL);
			/* l = α·l + Σ e_j in the accumulator format */
			emu_map(be, S_E_A, EMU_OP_CVT, A, eab, eb, EMU_NOREF, EMU_NOREF, nb, el,
			        NULL);
			if (first) {
				emu_fill(be, l, 0, 1);
			} else {
				emu_op1(be, S_ALPHA_A, EMU_OP_CVT, A, alpha_a, alpha, EMU_NOREF,
				        be_);
				emu_op1(be, S_RESCALE_L, EMU_OP_MUL, A, l, l, alpha_a, be_);
			}
			emu_fold(be, S_SUM, EMU_OP_ADD, A, EMU_ORDER_SEQ, l, eab, EMU_NOREF, nb,
			         el);
			if (v == NAIVE)
				break; /* one block: the whole row */
			/* O = α·O + P̃_blk·V_blk (fp8: the block's e4m3 product, descaled) */
			emu_ref pop;
			if (v == FP8) {
				emu_map(be, S_P_MUL, EMU_OP_MUL, C, emu_row(P, j0), eb, psc,
				        EMU_NOREF, nb, el, NULL);
				emu_map(be, S_P_CAST, EMU_OP_CVT, E4, emu_row(P, j0),
				        emu_row(P, j0), EMU_NOREF, EMU_NOREF, nb, el, NULL);
				if (!first)
					row_lost *= emu_vget(be, t, ALPHA);
				for (size_t j = j0; j < j1; j++)
					if (emu_vget(be, e, j) != 0 && emu_vget(be, P, j) == 0) {
						n_p_lost++;
						row_lost += emu_vget(be, e, j);
					}
				pop = emu_row(P, j0);
			} else {
				pop = eb;
			}
			if (!tc) {
				emu_map(be, S_P_A, EMU_OP_CVT, A, emu_row(PA, j0), pop, EMU_NOREF,
				        EMU_NOREF, nb, el, NULL);
				pop = emu_row(PA, j0);
			}
			if (!first && v != FP8)
				emu_map(be, S_RESCALE_O, EMU_OP_MUL, A, emu_row(oacc, 0),
				        emu_row(oacc, 0), alpha_a, EMU_NOREF, d, be_ * d, NULL);
			emu_vec *dst = v == FP8 ? pv : oacc;
			for (size_t c = 0; c < d; c++)
				if (gemm_dot(&k, S_PV, pv_steps, S_PV_ADD, !first && v != FP8,
				             emu_at(dst, c), pop, emu_strided(Vo, j0 * d + c, d),
				             nb, ((uint64_t)i * d + c) * nk + j0) != 0)
					goto oom;
			if (v == FP8) { /* part · (d_V / p_scale), then O = α·O + part */
				emu_op1(be, S_V_DESCALE, EMU_OP_DIV, C, vs, emu_at(dv8, j0 / Tk),
				        psc, be_);
				emu_op1(be, S_VS_A, EMU_OP_CVT, A, vsa, vs, EMU_NOREF, be_);
				emu_map(be, S_PV_DESCALE, EMU_OP_MUL, A, emu_row(pv, 0),
				        emu_row(pv, 0), vsa, EMU_NOREF, d, be_ * d, NULL);
				if (first) {
					emu_copy(be, emu_row(oacc, 0), emu_row(pv, 0), d);
				} else {
					emu_map(be, S_RESCALE_O, EMU_OP_MUL, A, emu_row(oacc, 0),
					        emu_row(oacc, 0), alpha_a, EMU_NOREF, d, be_ * d,
					        NULL);
					emu_map(be, S_PV_ADD, EMU_OP_ADD, A, emu_row(oacc, 0),
					        emu_row(oacc, 0), emu_row(pv, 0), EMU_NOREF, d,
					        be_ * d, NULL);
				}
			}
		}
		if (v == FP8 && n > 0) { /* row i's flushed mass (a diagnostic, no operation) */
			double mx = -INFINITY, den = 0, fl = 0;
			for (size_t j = 0; j < n; j++)
				mx = fmax(mx, emu_vget(be, s, j));
			for (size_t j = 0; j < n && isfinite(mx); j++) {
				double w = exp(emu_vget(be, s, j) - mx);
				den += w;
				if (emu_vget(be, e, j) != 0 && emu_vget(be, P, j) == 0)
					fl += w;
			}
			double mass = den > 0 ? fl / den : 0;
			mass_max = fmax(mass_max, mass);
			mass_sum += mass;
		}
		uint64_t od = (uint64_t)i * d;
		if (v == FP8 && emu_vget(be, t, LSUM) > 0)
			p_mass_max = fmax(p_mass_max, row_lost / emu_vget(be, t, LSUM));
		emu_op1(be, S_L_C, EMU_OP_CVT, C, lc, l, EMU_NOREF, i);
		if (v == NAIVE) { /* P = e / l, O = P·V */
			size_t po = bwd ? i * nk : 0;
			emu_ref Pr = emu_row(P, po), PAr = emu_row(PA, po);
			emu_map(be, S_DIV_P, EMU_OP_DIV, C, Pr, emu_row(e, 0), lc, EMU_NOREF, n,
			        (uint64_t)i * nk, NULL);
			emu_ref pop = Pr;
			if (!tc) {
				emu_map(be, S_P_A, EMU_OP_CVT, A, PAr, Pr, EMU_NOREF, EMU_NOREF, n,
				        (uint64_t)i * nk, NULL);
				pop = PAr;
			}
			for (size_t c = 0; c < d; c++)
				if (gemm_dot(&k, S_PV, pv_steps, 0, false, emu_at(oacc, c), pop,
				             emu_strided(Vo, c, d), n, (od + c) * nk) != 0)
					goto oom;
		} else { /* O = O / l */
			emu_map(be, S_DIV, EMU_OP_DIV, A, emu_row(oacc, 0), emu_row(oacc, 0), l,
			        EMU_NOREF, d, od, NULL);
		}
		emu_map(be, S_STORE, EMU_OP_CVT, S, emu_row(O, od), emu_row(oacc, 0), EMU_NOREF,
		        EMU_NOREF, d, od, NULL);
		/* L = m + log l */
		emu_op1(be, S_LOG, EMU_OP_LOG, C, emu_at(L, i), lc, EMU_NOREF, i);
		emu_op1(be, S_LSE, EMU_OP_ADD, C, emu_at(L, i), m, emu_at(L, i), i);
	}
	if (v == FP8) {
		emu_fill(be, emu_at(p_lost, 0), n_p_lost, 1);
		if (p_mass)
			emu_fill(be, emu_at(p_mass, 0), p_mass_max, 1);
		emu_fill(be, emu_at(lm_max, 0), (double)(float)mass_max, 1); /* fp32, RNE */
		emu_fill(be, emu_at(lm_mean, 0), (double)(float)(nq ? mass_sum / (double)nq : 0), 1);
	}
	if (bwd && v == FP8) {
		if (fp8_backward(&k, in, dor, &rdo, DF, Qo, Ko, Vo, dq8, dk8, dv8, O, L, dQ, dK, dV,
		                 ds_lost, amax_ds, nq, nk, d, B, Tq, Tk, causal != 0, dss, sc, psc,
		                 P, PA, sacc) != 0)
			goto oom;
	} else if (bwd) {
		/* dO (±1), O stored, both in the accumulator format */
		emu_vec *dOA = emu_vec_new(be, nq * d), *OA = emu_vec_new(be, nq * d),
		        *dP = emu_vec_new(be, nq * nk), *dSA = emu_vec_new(be, nq * nk),
		        *Dv = emu_vec_new(be, nq), *g = emu_vec_new(be, d);
		if (!dOA || !OA || !dP || !dSA || !Dv || !g)
			goto oom;
		if (v == ONLINE) /* P_ij = exp(S_ij − L_i), S recomputed, as FA-2's backward */
			for (size_t i = 0; i < nq; i++) {
				size_t n = causal ? i + 1 + shift : nk;
				uint64_t el = (uint64_t)i * nk;
				emu_ref Pr = emu_row(P, i * nk);
				for (size_t j = 0; j < n; j++) {
					emu_fill(be, emu_at(sacc, j), 0, 1);
					emu_fold(be, S_QK_B, EMU_OP_FMA, A, EMU_ORDER_SEQ,
					         emu_at(sacc, j), emu_row(Qo, i * d),
					         emu_row(Ko, j * d), d, (el + j) * d);
				}
				emu_map(be, S_S_C_B, EMU_OP_CVT, C, Pr, emu_row(sacc, 0), EMU_NOREF,
				        EMU_NOREF, n, el, NULL);
				emu_map(be, S_SCALE_B, EMU_OP_MUL, C, Pr, Pr, sc, EMU_NOREF, n, el,
				        NULL);
				emu_map(be, S_SUB_L, EMU_OP_SUB, C, Pr, Pr, emu_at(L, i), EMU_NOREF,
				        n, el, NULL);
				emu_map(be, S_EXP_B, EMU_OP_EXP, C, Pr, Pr, EMU_NOREF, EMU_NOREF, n,
				        el, NULL);
				emu_map(be, S_P_A_B, EMU_OP_CVT, A, emu_row(PA, i * nk), Pr,
				        EMU_NOREF, EMU_NOREF, n, el, NULL);
			}
		emu_input(be, S_DO, S, emu_row(dOA, 0), dor, 1, nq * d, 0, NULL);
		emu_map(be, S_DO_C, EMU_OP_CVT, C, emu_row(dOA, 0), emu_row(dOA, 0), EMU_NOREF,
		        EMU_NOREF, nq * d, 0, NULL);
		emu_map(be, S_DO_A, EMU_OP_CVT, A, emu_row(dOA, 0), emu_row(dOA, 0), EMU_NOREF,
		        EMU_NOREF, nq * d, 0, NULL);
		emu_map(be, S_O_C, EMU_OP_CVT, C, emu_row(OA, 0), emu_row(O, 0), EMU_NOREF,
		        EMU_NOREF, nq * d, 0, NULL);
		emu_map(be, S_O_A, EMU_OP_CVT, A, emu_row(OA, 0), emu_row(OA, 0), EMU_NOREF,
		        EMU_NOREF, nq * d, 0, NULL);
		/* dV_jc = Σ_i P_ij·dO_ic over the queries that see key j */
		for (size_t j = 0; j < nk; j++) {
			size_t i0 = causal && j > shift ? j - shift : 0;
			for (size_t c = 0; c < d; c++) {
				emu_ref acc = emu_at(g, c);
				emu_fill(be, acc, 0, 1);
				emu_fold(be, S_DV, EMU_OP_FMA, A, EMU_ORDER_SEQ, acc,
				         emu_strided(PA, i0 * nk + j, nk),
				         emu_strided(dOA, i0 * d + c, d), nq - i0,
				         ((uint64_t)j * d + c) * nq + i0);
			}
			emu_map(be, S_DV_STORE, EMU_OP_CVT, S, emu_row(dV, j * d), emu_row(g, 0),
			        EMU_NOREF, EMU_NOREF, d, (uint64_t)j * d, NULL);
		}
		for (size_t i = 0; i < nq; i++) {
			size_t n = causal ? i + 1 + shift : nk;
			uint64_t el = (uint64_t)i * nk;
			/* dP_ij = dO_i·V_j, D_i = dO_i·O_i */
			for (size_t j = 0; j < n; j++) {
				emu_fill(be, emu_at(dP, i * nk + j), 0, 1);
				emu_fold(be, S_DP, EMU_OP_FMA, A, EMU_ORDER_SEQ,
				         emu_at(dP, i * nk + j), emu_row(dOA, i * d),
				         emu_row(Vo, j * d), d, (el + j) * d);
			}
			emu_map(be, S_DP_C, EMU_OP_CVT, C, emu_row(dP, i * nk), emu_row(dP, i * nk),
			        EMU_NOREF, EMU_NOREF, n, el, NULL);
			emu_fill(be, emu_at(Dv, i), 0, 1);
			emu_fold(be, S_ROWSUM, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(Dv, i),
			         emu_row(dOA, i * d), emu_row(OA, i * d), d, (uint64_t)i * d);
			emu_op1(be, S_ROWSUM_C, EMU_OP_CVT, C, emu_at(Dv, i), emu_at(Dv, i),
			        EMU_NOREF, i);
			/* dS = P ∘ (dP − D) */
			emu_map(be, S_DS_SUB, EMU_OP_SUB, C, emu_row(dP, i * nk),
			        emu_row(dP, i * nk), emu_at(Dv, i), EMU_NOREF, n, el, NULL);
			emu_map(be, S_DS, EMU_OP_MUL, C, emu_row(dP, i * nk), emu_row(P, i * nk),
			        emu_row(dP, i * nk), EMU_NOREF, n, el, NULL);
			emu_map(be, S_DS_A, EMU_OP_CVT, A, emu_row(dSA, i * nk),
			        emu_row(dP, i * nk), EMU_NOREF, EMU_NOREF, n, el, NULL);
			/* dQ_i = dS_i·K·scale */
			for (size_t c = 0; c < d; c++) {
				emu_fill(be, emu_at(g, c), 0, 1);
				emu_fold(be, S_DQ, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(g, c),
				         emu_row(dSA, i * nk), emu_strided(Ko, c, d), n,
				         ((uint64_t)i * d + c) * nk);
			}
			emu_ref gr = emu_row(g, 0), dq = emu_row(dQ, i * d);
			emu_map(be, S_DQ_C, EMU_OP_CVT, C, gr, gr, EMU_NOREF, EMU_NOREF, d, i * d,
			        NULL);
			emu_map(be, S_DQ_SCALE, EMU_OP_MUL, C, gr, gr, sc, EMU_NOREF, d, i * d,
			        NULL);
			emu_map(be, S_DQ_STORE, EMU_OP_CVT, S, dq, gr, EMU_NOREF, EMU_NOREF, d,
			        i * d, NULL);
		}
		/* dK_j = dS_jᵀ·Q·scale over the queries that see key j */
		for (size_t j = 0; j < nk; j++) {
			size_t i0 = causal && j > shift ? j - shift : 0;
			for (size_t c = 0; c < d; c++) {
				emu_fill(be, emu_at(g, c), 0, 1);
				emu_fold(be, S_DK, EMU_OP_FMA, A, EMU_ORDER_SEQ, emu_at(g, c),
				         emu_strided(dSA, i0 * nk + j, nk),
				         emu_strided(Qo, i0 * d + c, d), nq - i0,
				         ((uint64_t)j * d + c) * nq + i0);
			}
			emu_ref gr = emu_row(g, 0), dk = emu_row(dK, j * d);
			emu_map(be, S_DK_C, EMU_OP_CVT, C, gr, gr, EMU_NOREF, EMU_NOREF, d, j * d,
			        NULL);
			emu_map(be, S_DK_SCALE, EMU_OP_MUL, C, gr, gr, sc, EMU_NOREF, d, j * d,
			        NULL);
			emu_map(be, S_DK_STORE, EMU_OP_CVT, S, dk, gr, EMU_NOREF, EMU_NOREF, d,
			        j * d, NULL);
		}
	}
	rc = 0;
oom:
	if (rc)
		snprintf(err, errlen, "attention: out of memory");
	emu_kinputs_free(&ki);
	return rc;
}

const emu_kernel emu_kernel_attention = {
    "attention",
    variants,
    "head_dim=D (cols = 3·D: row i is q_i k_i v_i); seq_q=NQ seq_k=NK (default rows); "
    "scale=S (default 1/sqrt(D) in the compute format); causal=0|1; block_k=B (online, fp8: "
    "key block, default 16); fp8: tile=T (rows of a quantisation tile, a multiple of B, 0: one "
    "scale per tensor; default B), p_scale=PS (default 448), hadamard=0|1; fp8:bwd: do_fmt=5|4 "
    "(dO and dS in e5m2, default, or e4m3), ds_scale=X (dS's FP8 scale; default 0: this run's "
    "fmax / amax); sink=G (default 0: none; key 0 set to q_0·G/(scale·|q_0|²), so query 0's "
    "logit for it is G: an attention sink)",
    run,
    inputs,
    steps,
    S_END - EMU_STEP0,
};
