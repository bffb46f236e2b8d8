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
 * The order of operations is written once, in emu/kernels/attention_rows.h; this file
 * runs its row steps around the GEMMs (sequential ones from the row source, or the
 * Tensor Core fold) on the engine's backends. GPU counterpart: gpu/rows.h's loops
 * over a row's key blocks (k_attn_fwd_row; :tc k_attn_soft_row and k_attn_out_row
 * around our mma.sync GEMMs, gpu/mma.cu) call the same row steps, compiled by nvcc in
 * gpu/kern.cu and with the emulator's operations in gpu/host_rows.c for the fake
 * device, whose outputs tests/gpu/ compares with this file's (docs/gpu.md); the
 * backward passes likewise (k_attn_bwd_q_row and k_attn_bwd_k_row; fp8:bwd's
 * k_attn8_bwd_*_row, dS's scale chosen by the runner between its launches).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/attention_rows.h"
#include "emu/kernels/tc.h"

static const char *const variants[] = {"naive",      "online",    "fp8",     "naive:bwd",
                                       "online:bwd", "online:tc", "fp8:bwd", NULL};

/* The steps' names (the row source declares them with their ids). */
static const char *const steps[S_END - EMU_STEP0] = {K_ATTENTION_STEPS(K_STEP_NAME)};

/* One run: its formats, shape and switches, the operands, the work vectors
 * of a row and the outputs. */
typedef struct {
	emu_be *be;
	const emu_format *S, *C, *A, *E4, *F32;
	int v; /* ATT_NAIVE, ATT_ONLINE or ATT_FP8 */
	bool bwd, tc, causal;
	size_t nq, nk, d, B, Tq, Tk, nkt; /* B: block_k; Tq, Tk: rows of a tile */
	double scale, ps, dss;
	const emu_format *DF;   /* fp8:bwd: dO's and dS's FP8 format */
	emu_recipe rq, rv, rdo; /* fp8: Q and K's, V's and (bwd) dO's recipes */
	emu_tc_model model;     /* :tc */
	const emu_format *tc_in, *tc_out;
	/* Q, K, V loaded (fp8: their e4m3 values), as the GEMMs take them
	 * (copies in A; :tc the loaded ones), and fp8's tile decode scales */
	emu_vec *Qc, *Kc, *Vc, *Qo, *Ko, *Vo, *dq8, *dk8, *dv8;
	/* a row's work (by key: S_acc, s, e, A(e)), O in A and fp8's block
	 * product (d values), the row's scalars (AT_NT), P and its copy in A
	 * (every row's with :bwd), a Tensor Core's result before it joins */
	emu_vec *sacc, *s, *e, *ea, *oacc, *pv, *t, *P, *PA, *part;
	emu_vec *O, *L, *dQ, *dK, *dV;
	double n_p_lost, p_mass_max, mass_max, mass_sum; /* fp8's diagnostics */
	double *row_mass; /* fp8: each row's lost mass, summed in row order after the rows */
	/* :tc on fast and exact: Q's and K's rows and V's columns encoded in
	 * tc_in once (NULL otherwise), and a part's row of P encoded per block;
	 * on fast, each of them split for the blocks too (emu_tc_split) */
	emu_bits *EQ, *EK, *EVt, *EP;
	emu_tc_opnd *SQ, *SK, *SVt, *SP;
} ctx;

/*
 * acc = Σ_{t<n} a_t·b_t by the Tensor Core fold from +0 (the :tc GEMMs'
 * dot products), then (accumulate) added to acc in the accumulator format
 * as a GEMM accumulates into its C. The model writes fp32 where the
 * accumulator format is not one a Tensor Core can write: its result is
 * converted into that format first.
 */
static int tc_dot(ctx *k, emu_tc_steps tst, bool accumulate, emu_ref acc, emu_ref a, emu_ref b,
                  const emu_bits *ea, const emu_bits *eb, const emu_tc_opnd *sa,
                  const emu_tc_opnd *sb, size_t n, uint64_t elem)
{
	bool conv = k->tc_out != k->A;
	emu_ref dst = accumulate || conv ? emu_at(k->part, 0) : acc;
	if (ea) /* a and b as encoded once (the same bits emu_fold_tc makes) */
		emu_fold_tc_bits(k->be, tst, &k->model, k->tc_in, k->tc_out, dst, ea, eb, sa, sb, n,
		                 elem);
	else if (emu_fold_tc(k->be, tst, &k->model, k->tc_in, k->tc_out, dst, a, b, n, elem) != 0)
		return -1;
	if (conv)
		emu_op1(k->be, S_TC_A, EMU_OP_CVT, k->A, accumulate ? dst : acc, dst, EMU_NOREF,
		        elem);
	if (accumulate)
		k_attn_pv_add(k->be, k->A, dst, elem, acc);
	return 0;
}

static const emu_tc_steps qk_steps = {S_QK, S_QK_PROMOTE, S_QK_OUT};
static const emu_tc_steps pv_steps = {S_PV, S_PV_PROMOTE, S_PV_OUT};

/* S_acc of query row i's keys [j0, j1) into k->sacc: the row source's
 * sequential GEMM, or the Tensor Core's */
static int qk_gemm(ctx *k, size_t i, size_t j0, size_t j1)
{
	emu_ref q = emu_row(k->Qo, i * k->d);
	if (!k->tc) {
		k_attn_qk(k->be, k->A, q, k->Ko, k->d, i, k->nk, j0, j1, emu_row(k->sacc, 0));
		return 0;
	}
	for (size_t j = j0; j < j1; j++)
		if (tc_dot(k, qk_steps, false, emu_at(k->sacc, j), q, emu_row(k->Ko, j * k->d),
		           k->EQ ? k->EQ + i * k->d : NULL, k->EK ? k->EK + j * k->d : NULL,
		           k->SQ ? k->SQ + i * k->d : NULL, k->SK ? k->SK + j * k->d : NULL, k->d,
		           ((uint64_t)i * k->nk + j) * k->d) != 0)
			return -1;
	return 0;
}

/* pa (row i's P in A, by key) times V's rows [j0, j0 + n) into o (d values
 * of A): the row source's sequential GEMM, continuing from o's value (acc)
 * or from +0, or the Tensor Core's (acc: its result added to o) */
static int pv_gemm(ctx *k, emu_ref pa, size_t i, size_t j0, size_t n, bool acc, emu_ref o)
{
	size_t d = k->d;
	if (!k->tc) {
		k_attn_pv(k->be, k->A, pa, k->Vo, d, i, k->nk, j0, n, acc, o);
		return 0;
	}
	if (k->EVt) { /* the block's P, encoded (and split) once for its d columns */
		for (size_t t = 0; t < n; t++)
			k->EP[t] = emu_encode(k->tc_in, pa.v->d[pa.off + (j0 + t) * pa.stride]);
		if (k->SP)
			emu_tc_split(k->tc_in, k->EP, n, k->SP);
	}
	for (size_t c = 0; c < d; c++)
		if (tc_dot(k, pv_steps, acc, k_shift(o, c), k_shift(pa, j0),
		           emu_strided(k->Vo, j0 * d + c, d), k->EVt ? k->EP : NULL,
		           k->EVt ? k->EVt + c * k->nk + j0 : NULL, k->SP,
		           k->SVt ? k->SVt + c * k->nk + j0 : NULL, n,
		           ((uint64_t)i * d + c) * k->nk + j0) != 0)
			return -1;
	return 0;
}

/* :tc on fast and exact: Q's and K's rows and V's columns encoded in tc_in
 * once, as emu_fold_tc would encode them for every dot product, and on
 * fast split once for the blocks (split); false out of memory */
static bool tc_encode(ctx *k, bool split)
{
	size_t nq = k->nq, nk = k->nk, d = k->d;
	k->EQ = malloc((nq * d + 1) * sizeof *k->EQ);
	k->EK = malloc((nk * d + 1) * sizeof *k->EK);
	k->EVt = malloc((nk * d + 1) * sizeof *k->EVt);
	if (!k->EQ || !k->EK || !k->EVt)
		return false;
	for (size_t i = 0; i < nq * d; i++)
		k->EQ[i] = emu_encode(k->tc_in, k->Qo->d[i]);
	for (size_t i = 0; i < nk * d; i++)
		k->EK[i] = emu_encode(k->tc_in, k->Ko->d[i]);
	for (size_t j = 0; j < nk; j++)
		for (size_t c = 0; c < d; c++)
			k->EVt[c * nk + j] = emu_encode(k->tc_in, k->Vo->d[j * d + c]);
	if (!split)
		return true;
	k->SQ = malloc((nq * d + 1) * sizeof *k->SQ);
	k->SK = malloc((nk * d + 1) * sizeof *k->SK);
	k->SVt = malloc((nk * d + 1) * sizeof *k->SVt);
	if (!k->SQ || !k->SK || !k->SVt)
		return false;
	emu_tc_split(k->tc_in, k->EQ, nq * d, k->SQ);
	emu_tc_split(k->tc_in, k->EK, nk * d, k->SK);
	emu_tc_split(k->tc_in, k->EVt, nk * d, k->SVt);
	return true;
}

/* "naive:bwd" → ATT_NAIVE, bwd; "online:tc:h100" → ATT_ONLINE, tc, spec "h100". */
static int parse_variant(const char *v, bool *bwd, bool *tc, const char **spec)
{
	static const char *const base[] = {K_ATTENTION_VARIANTS(K_VARIANT_NAME)};
	*bwd = *tc = false;
	*spec = NULL;
	if (!v)
		return ATT_NAIVE;
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

/* An fp8 recipe: spec (current scaling into its element format, no
 * Hadamard) with one scale per tile of `rows` rows by the whole head (0:
 * one per tensor), and the Hadamard on every row when had */
static int fp8_recipe(const char *spec, size_t rows, bool had, emu_recipe *r, char *err,
                      size_t errlen)
{
	char e[160];
	if (emu_recipe_parse(spec, r, e, sizeof e) != EMU_OK) {
		snprintf(err, errlen, "attention: %s", e);
		return -1;
	}
	for (int i = 0; i < EMU_NROLES; i++)
		r->brows[i] = (int)rows, r->bcols[i] = 0;
	r->rht = r->rht_all = had;
	return 0;
}

/* the variant, the parameters and their checks, the Tensor Core model
 * (:tc) and the recipes (fp8) into k */
static int setup(ctx *k, const char *variant, const emu_kin *in, char *err, size_t errlen)
{
	const char *spec;
	k->v = parse_variant(variant, &k->bwd, &k->tc, &spec);
	if (k->v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(err, errlen,
		         k->v < 0 ? "attention: unknown variant '%s' (naive online fp8, then :bwd "
		                    "(naive, online) or :tc[:MODEL])"
		                  : "attention: empty input%s",
		         k->v < 0 ? variant : "");
		return -1;
	}
	if (k->bwd && k->tc) {
		snprintf(err, errlen, "attention: :bwd does not combine with :tc (%s)", variant);
		return -1;
	}
	size_t R = in->rows, N = in->cols, d3 = N / 3; /* the default head: a third of a row */
	double hd, sq, sk, causal, bk, had, tile, dofmt;
	if (!emu_kparam_int(in, "attention", "head_dim", 1, 1e9, (double)d3, &hd, err, errlen))
		return -1;
	if (hd < 1 || 3 * (size_t)hd != N) {
		snprintf(err, errlen,
		         "attention: cols=%zu must be 3·head_dim (row i holds q_i, k_i, v_i)", N);
		return -1;
	}
	k->d = (size_t)hd;
	if (!emu_kparam_int(in, "attention", "seq_q", 1, (double)R, (double)R, &sq, err, errlen) ||
	    !emu_kparam_int(in, "attention", "seq_k", 1, (double)R, (double)R, &sk, err, errlen) ||
	    !emu_kparam_int(in, "attention", "causal", 0, 1, 0, &causal, err, errlen) ||
	    !emu_kparam_int(in, "attention", "block_k", 1, 1e9, 16, &bk, err, errlen) ||
	    !emu_kparam_int(in, "attention", "hadamard", 0, 1, 0, &had, err, errlen) ||
	    !emu_kparam_int(in, "attention", "tile", 0, 1e9, bk, &tile, err, errlen) ||
	    !emu_kparam_real(in, "attention", "p_scale", 0, INFINITY, EMU_KP_ABOVE_LO, 448, &k->ps,
	                     err, errlen) ||
	    !emu_kparam_real(in, "attention", "scale", 0, INFINITY, EMU_KP_ABOVE_LO,
	                     1 / sqrt((double)k->d), &k->scale, err, errlen) ||
	    !emu_kparam_int(in, "attention", "do_fmt", 4, 5, 5, &dofmt, err, errlen) ||
	    !emu_kparam_real(in, "attention", "ds_scale", 0, INFINITY, 0, 0, &k->dss, err,
	                     errlen) ||
	    !emu_kparam_real(in, "attention", "sink", -1e4, 1e4, 0, 0, &(double){0}, err, errlen))
		return -1;
	if (k->bwd && k->v == ATT_FP8 && had) {
		snprintf(
		    err, errlen,
		    "attention: fp8:bwd takes hadamard=0 (the transform rotates Q and K, so dQ "
		    "and dK would need its inverse)");
		return -1;
	}
	size_t T = (size_t)tile;
	k->nq = (size_t)sq, k->nk = (size_t)sk, k->B = (size_t)bk, k->causal = causal != 0;
	if (T % k->B != 0) {
		snprintf(err, errlen,
		         "attention: tile=%zu must be 0 (one scale per tensor) or a multiple of "
		         "block_k=%zu (a key block in one tile)",
		         T, k->B);
		return -1;
	}
	k->Tq = T ? T : k->nq, k->Tk = T ? T : k->nk; /* rows of a quantisation tile */
	k->nkt = (k->nk + k->B - 1) / k->B;           /* key blocks */
	if (k->causal && k->nq > k->nk) {
		snprintf(err, errlen,
		         "attention: causal=1 needs seq_q <= seq_k (every query a key)");
		return -1;
	}
	k->tc_in = k->v == ATT_FP8 ? k->E4 : k->C;
	if (k->tc && emu_tc_setup("attention", spec, k->tc_in, k->A, 0, -1, &k->model, &k->tc_out,
	                          err, errlen) != EMU_OK)
		return -1;
	k->DF = dofmt == 4 ? k->E4 : emu_format_by_name("e5m2"); /* dO, dS */
	/* fp8's recipes (current scaling, one fp32 scale per tile): Q and K
	 * (with hadamard=1 the Hadamard on every row), V, and fp8:bwd's dO (one
	 * scale per tensor) */
	if (k->v == ATT_FP8 &&
	    (fp8_recipe("elem=e4m3,scale=fp32,rule=fp32,block=0x0", T, had != 0, &k->rq, err,
	                errlen) != 0 ||
	     fp8_recipe("elem=e4m3,scale=fp32,rule=fp32,block=0x0", T, false, &k->rv, err,
	                errlen) != 0 ||
	     (k->bwd && fp8_recipe(dofmt == 4 ? "elem=e4m3,scale=fp32,rule=fp32,block=0x0"
	                                      : "elem=e5m2,scale=fp32,rule=fp32,block=0x0",
	                           0, false, &k->rdo, err, errlen) != 0)))
		return -1;
	return 0;
}

/* fp8, block [j0, j1) of row i after its P cast: the nonzero e that the
 * e4m3 cast flushed to 0, counted, and their sum in l's running frame
 * (scaled by α as l is: row_lost); no operation */
static double lost_block(ctx *k, double row_lost, size_t j0, size_t j1)
{
	if (j0 > 0)
		row_lost *= emu_vget(k->be, k->t, AT_ALPHA);
	for (size_t j = j0; j < j1; j++)
		if (emu_vget(k->be, k->e, j) != 0 && emu_vget(k->be, k->P, j) == 0) {
			k->n_p_lost++;
			row_lost += emu_vget(k->be, k->e, j);
		}
	return row_lost;
}

/* fp8, row i's share of its probability mass that the flushed P̃ carried,
 * in double from the row's held logits (Σ_flushed exp(s_j − max s) / Σ_j
 * exp(s_j − max s)), and the share against l (row_lost / l): a diagnostic,
 * no operation */
static void lost_mass(ctx *k, size_t i, size_t n, double row_lost)
{
	emu_be *be = k->be;
	if (n > 0) {
		double mx = -INFINITY, den = 0, fl = 0;
		for (size_t j = 0; j < n; j++)
			mx = fmax(mx, emu_vget(be, k->s, j));
		for (size_t j = 0; j < n && isfinite(mx); j++) {
			double w = exp(emu_vget(be, k->s, j) - mx);
			den += w;
			if (emu_vget(be, k->e, j) != 0 && emu_vget(be, k->P, j) == 0)
				fl += w;
		}
		double mass = den > 0 ? fl / den : 0;
		k->mass_max = fmax(k->mass_max, mass);
		k->row_mass[i] = mass;
	}
	double l = emu_vget(be, k->t, AT_L);
	if (l > 0)
		k->p_mass_max = fmax(k->p_mass_max, row_lost / l);
}

/* Query row i of the forward, in the header's order: per key block its
 * S_acc, softmax block, P·V (naive: once, after the whole row), then O and
 * L; the row source's steps around the GEMMs */
static int forward_row(ctx *k, size_t i)
{
	emu_be *be = k->be;
	const emu_format *C = k->C, *A = k->A;
	int v = k->v;
	size_t nk = k->nk, d = k->d, nkt = k->nkt;
	size_t n = k->causal ? i + 1 + (nk - k->nq) : nk; /* keys [0, n) */
	size_t bsz = v == ATT_NAIVE ? nk : k->B;
	emu_ref s = emu_row(k->s, 0), e = emu_row(k->e, 0), ea = emu_row(k->ea, 0),
	        P = emu_row(k->P, 0), PA = emu_row(k->PA, 0), o = emu_row(k->oacc, 0),
	        pv = emu_row(k->pv, 0);
	double row_lost = 0; /* fp8: the flushed P̃ of row i, in l's running frame */
	for (size_t j0 = 0, b = 0; j0 < n; j0 += bsz, b++) {
		size_t j1 = j0 + bsz < n ? j0 + bsz : n;
		bool first = j0 == 0;
		if (qk_gemm(k, i, j0, j1) != 0)
			return -1;
		emu_ref dq = EMU_NOREF, dk = EMU_NOREF;
		if (v == ATT_FP8)
			dq = emu_at(k->dq8, i / k->Tq), dk = emu_at(k->dk8, j0 / k->Tk);
		k_attn_soft_block(be, v, C, A, k->E4, emu_row(k->sacc, 0), dq, dk, i, b, j0, j1, nk,
		                  nkt, k->t, s, e, ea, P);
		if (v == ATT_NAIVE)
			break; /* one block: the whole row */
		/* O = α·O + P̃_blk·V_blk (fp8: the block's e4m3 product, descaled) */
		emu_ref pop = e;
		if (v == ATT_FP8)
			row_lost = lost_block(k, row_lost, j0, j1), pop = P;
		if (!k->tc)
			k_attn_pa(be, A, pop, i, nk, j0, j1 - j0, PA), pop = PA;
		if (!first && v != ATT_FP8)
			k_attn_rescale_o(be, A, k->t, d, i, b, nkt, o);
		if (pv_gemm(k, pop, i, j0, j1 - j0, !first && v != ATT_FP8,
		            v == ATT_FP8 ? pv : o) != 0)
			return -1;
		if (v == ATT_FP8)
			k_attn_fp8_o(be, C, A, emu_at(k->dv8, j0 / k->Tk), k->t, d, i, b, nkt, pv,
			             o);
	}
	if (v == ATT_FP8)
		lost_mass(k, i, n, row_lost);
	/* naive: P = e / l, O = P·V (with :bwd every row's P is kept) */
	size_t po = v == ATT_NAIVE && k->bwd ? i * nk : 0;
	emu_ref Pr = emu_row(k->P, po), PAr = emu_row(k->PA, po);
	k_attn_lc(be, v, C, k->t, e, i, nk, n, Pr);
	if (v == ATT_NAIVE) {
		emu_ref pop = Pr;
		if (!k->tc)
			k_attn_pa(be, A, Pr, i, nk, 0, n, PAr), pop = PAr;
		if (pv_gemm(k, pop, i, 0, n, false, o) != 0)
			return -1;
	}
	k_attn_o_store(be, v, k->S, A, k->t, d, i, o, emu_row(k->O, i * d));
	k_attn_lse(be, C, k->t, i, emu_at(k->L, i));
	return 0;
}

/*
 * fp8:bwd's backward pass (the header's order, cuDNN's FP8 SDPA backward
 * graph): the forward's e4m3 Q, K, V (accumulator-format copies Qo, Ko, Vo)
 * and tile decode scales dq8, dk8, dv8, its stored O and its L; P
 * recomputed from S and L; dO and dS in DF (e5m2 or e4m3) with one scale
 * per tensor; dV, dQ and dK stored in the storage format.
 */
/* fp8:bwd, dS's scale s into t[AT_SDS]: ds_scale, or fmax_DF / amax over
 * the unmasked entries this backend holds, clamped to the largest finite
 * value of fp32 and of the compute format (1 when the amax is 0 or not
 * finite), stored in fp32 and converted into the compute format; the amax
 * itself is an output (cuDNN's amax_dP) */
static void ds_scale(ctx *k, emu_vec *dS, emu_vec *amax_ds)
{
	emu_be *be = k->be;
	const emu_format *C = k->C, *DF = k->DF, *F32 = k->F32;
	size_t nq = k->nq, nk = k->nk, shift = nk - nq;
	bool causal = k->causal;
	double dss = k->dss;
	emu_ref sds = emu_at(k->t, AT_SDS);
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
}

static int fp8_backward(ctx *k, const emu_kin *in, const double *dor, emu_vec *ds_lost,
                        emu_vec *amax_ds)
{
	emu_be *be = k->be;
	const emu_format *S = k->S, *C = k->C, *A = k->A, *DF = k->DF;
	size_t nq = k->nq, nk = k->nk, d = k->d, shift = nk - nq, Tq = k->Tq, Tk = k->Tk,
	       ntq = (nq + Tq - 1) / Tq, ntk = (nk + Tk - 1) / Tk;
	emu_vec *dOc = emu_vec_new(be, nq * d), *dOA = emu_vec_new(be, nq * d),
	        *OA = emu_vec_new(be, nq * d), *P8 = emu_vec_new(be, nq * nk),
	        *dS = emu_vec_new(be, nq * nk), *dS8 = emu_vec_new(be, nq * nk),
	        *dSA = emu_vec_new(be, nq * nk), *Dv = emu_vec_new(be, nq), *g = emu_vec_new(be, d),
	        *part = emu_vec_new(be, d), *ddo = emu_vec_new(be, 1), *dpf = emu_vec_new(be, ntk),
	        *dqf = emu_vec_new(be, ntk), *dkf = emu_vec_new(be, ntq);
	if (!dOc || !dOA || !OA || !P8 || !dS || !dS8 || !dSA || !Dv || !g || !part || !ddo ||
	    !dpf || !dqf || !dkf)
		return -1;
	/* dO = ±1 stored, into the compute format, then quantised to DF with one
	 * fp32 scale (current scaling: fmax / amax) */
	emu_input(be, S_DO, S, emu_row(dOc, 0), dor, 1, nq * d, 0, NULL);
	emu_map(be, S_DO_C, EMU_OP_CVT, C, emu_row(dOc, 0), emu_row(dOc, 0), EMU_NOREF, EMU_NOREF,
	        nq * d, 0, NULL);
	if (quantise(be, &k->rdo, dOc, nq, d, nq, 0, in->seed, dOc, ddo, C, &do_steps) != 0)
		return -1;
	emu_copy(be, emu_at(k->t, AT_DDO), emu_at(ddo, 0), 1);
	k_attn8_bwd_do(be, A, emu_row(dOc, 0), nq * d, 0, emu_row(dOA, 0));
	k_attn_bwd_o(be, C, A, emu_row(k->O, 0), nq * d, 0, emu_row(OA, 0));
	for (size_t i = 0; i < nq; i++) /* P and its e4m3 cast, as the forward's */
		k_attn8_bwd_p(be, C, A, k->E4, k->Qo, k->Ko, emu_at(k->dq8, i / Tq), k->dk8, k->t,
		              emu_at(k->L, i), d, i, nk, k->causal ? i + 1 + shift : nk, k->B, Tk,
		              emu_row(k->sacc, 0), emu_row(k->P, i * nk), emu_row(P8, i * nk),
		              emu_row(k->PA, i * nk));
	k_attn8_bwd_dv_f(be, C, A, k->t);
	for (size_t j = 0; j < nk; j++)
		k_attn8_bwd_dv(be, S, A, k->PA, dOA, k->t, d, nq, nk, j,
		               k->causal && j > shift ? j - shift : 0, emu_row(g, 0),
		               emu_row(k->dV, j * d));
	k_attn8_bwd_dp_f(be, C, k->t, emu_row(k->dv8, 0), ntk, emu_row(dpf, 0));
	for (size_t i = 0; i < nq; i++)
		k_attn8_bwd_ds(be, C, A, dOA, OA, k->Vo, emu_row(k->P, i * nk), dpf, k->t, d, i, nk,
		               k->causal ? i + 1 + shift : nk, Tk, emu_at(Dv, i),
		               emu_row(dS, i * nk));
	ds_scale(k, dS, amax_ds);
	double lost = 0; /* dS8 = DF(dS · s), into the accumulator format */
	for (size_t i = 0; i < nq; i++) {
		size_t n = k->causal ? i + 1 + shift : nk;
		k_attn8_bwd_cast(be, C, A, DF, k->t, i, nk, n, emu_row(dS, i * nk),
		                 emu_row(dS8, i * nk), emu_row(dSA, i * nk));
		for (size_t j = 0; j < n; j++)
			lost +=
			    emu_vget(be, dS, i * nk + j) != 0 && emu_vget(be, dS8, i * nk + j) == 0;
	}
	emu_fill(be, emu_at(ds_lost, 0), lost, 1);
	k_attn8_bwd_f(be, C, A, k->t, emu_row(k->dk8, 0), ntk, emu_row(k->dq8, 0), ntq,
	              emu_row(dqf, 0), emu_row(dkf, 0));
	for (size_t i = 0; i < nq; i++)
		k_attn8_bwd_dq(be, S, A, emu_row(dSA, i * nk), k->Ko, dqf, d, i, nk,
		               k->causal ? i + 1 + shift : nk, Tk, emu_row(g, 0), emu_row(part, 0),
		               emu_row(k->dQ, i * d));
	for (size_t j = 0; j < nk; j++)
		k_attn8_bwd_dk(be, S, A, dSA, k->Qo, dkf, d, nq, nk, j,
		               k->causal && j > shift ? j - shift : 0, Tq, emu_row(g, 0),
		               emu_row(part, 0), emu_row(k->dK, j * d));
	return 0;
}

/* The backward of naive:bwd and online:bwd (the header's order): the row
 * source's steps, (online) P recomputed from S and L, dO and O into A,
 * dV, then per query dP, D, dS and dQ, then dK */
static int backward(ctx *k, const double *dor)
{
	emu_be *be = k->be;
	const emu_format *S = k->S, *C = k->C, *A = k->A;
	size_t nq = k->nq, nk = k->nk, d = k->d, shift = nk - nq;
	emu_vec *dOA = emu_vec_new(be, nq * d), *OA = emu_vec_new(be, nq * d),
	        *dP = emu_vec_new(be, nq * nk), *dSA = emu_vec_new(be, nq * nk),
	        *Dv = emu_vec_new(be, nq), *g = emu_vec_new(be, d);
	if (!dOA || !OA || !dP || !dSA || !Dv || !g)
		return -1;
	for (size_t i = 0; k->v == ATT_ONLINE && i < nq; i++) /* as FA-2's backward */
		k_attn_bwd_p(be, C, A, k->Qo, k->Ko, k->t, emu_at(k->L, i), d, i, nk,
		             k->causal ? i + 1 + shift : nk, emu_row(k->sacc, 0),
		             emu_row(k->P, i * nk), emu_row(k->PA, i * nk));
	emu_input(be, S_DO, S, emu_row(dOA, 0), dor, 1, nq * d, 0, NULL);
	k_attn_bwd_in(be, C, A, emu_row(k->O, 0), nq * d, 0, emu_row(dOA, 0), emu_row(OA, 0));
	for (size_t j = 0; j < nk; j++)
		k_attn_bwd_dv(be, S, A, k->PA, dOA, d, nq, nk, j,
		              k->causal && j > shift ? j - shift : 0, emu_row(g, 0),
		              emu_row(k->dV, j * d));
	for (size_t i = 0; i < nq; i++) {
		size_t n = k->causal ? i + 1 + shift : nk;
		k_attn_bwd_ds(be, C, A, dOA, OA, k->Vo, emu_row(k->P, i * nk), d, i, nk, n,
		              emu_at(Dv, i), emu_row(dP, i * nk), emu_row(dSA, i * nk));
		k_attn_bwd_dq(be, S, C, A, emu_row(dSA, i * nk), k->Ko, k->t, d, i, nk, n,
		              emu_row(g, 0), emu_row(k->dQ, i * d));
	}
	for (size_t j = 0; j < nk; j++)
		k_attn_bwd_dk(be, S, C, A, dSA, k->Qo, k->t, d, nq, nk, j,
		              k->causal && j > shift ? j - shift : 0, emu_row(g, 0),
		              emu_row(k->dK, j * d));
	return 0;
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
		dO[i] = emu_draw_sign(in->seed, i);
	return 0;
}

/* Q, K and V loaded (fp8: quantised to e4m3 by their recipes, which
 * replace them), and as the GEMMs take them: copies in A for the
 * sequential GEMMs, the loaded values for a Tensor Core */
static int operands(ctx *k, const emu_policy *pol, const emu_kinputs *ki, uint64_t seed)
{
	emu_be *be = k->be;
	size_t nq = k->nq, nk = k->nk, d = k->d;
	if (emu_load_at(be, pol, emu_kinputs_find(ki, "q")->v, nq, d, 0, k->Qc) != 0 ||
	    emu_load_at(be, pol, emu_kinputs_find(ki, "k")->v, nk, d, (uint64_t)(nq * d), k->Kc) !=
	        0 ||
	    emu_load_at(be, pol, emu_kinputs_find(ki, "v")->v, nk, d, (uint64_t)((nq + nk) * d),
	                k->Vc) != 0)
		return -1;
	if (k->v == ATT_FP8 && (quantise(be, &k->rq, k->Qc, nq, d, k->Tq, 0, seed, k->Qc, k->dq8,
	                                 k->C, &qkv_steps) != 0 ||
	                        quantise(be, &k->rq, k->Kc, nk, d, k->Tk, nq * d, seed, k->Kc,
	                                 k->dk8, k->C, &qkv_steps) != 0 ||
	                        quantise(be, &k->rv, k->Vc, nk, d, k->Tk, (nq + nk) * d, seed,
	                                 k->Vc, k->dv8, k->C, &qkv_steps) != 0))
		return -1;
	if (k->tc) {
		k->Qo = k->Qc, k->Ko = k->Kc, k->Vo = k->Vc;
		return 0;
	}
	k->Qo = emu_vec_new(be, nq * d), k->Ko = emu_vec_new(be, nk * d),
	k->Vo = emu_vec_new(be, nk * d);
	if (!k->Qo || !k->Ko || !k->Vo)
		return -1;
	k_attn_to_a(be, k->v, 0, k->A, emu_row(k->Qc, 0), nq * d, 0, emu_row(k->Qo, 0));
	k_attn_to_a(be, k->v, 1, k->A, emu_row(k->Kc, 0), nk * d, nq * d, emu_row(k->Ko, 0));
	k_attn_to_a(be, k->v, 2, k->A, emu_row(k->Vc, 0), nk * d, (nq + nk) * d, emu_row(k->Vo, 0));
	return 0;
}

/* forward rows i0 .. i1 − 1 (emu_rows) on be, with a row's work vectors of
 * its own (t a copy of the constants; every row's P where the naive
 * backward keeps them, the run's); fp8's counts and largest shares joined
 * into the run's, which do not depend on the order */
static int fwd_part(emu_be *be, size_t i0, size_t i1, void *arg)
{
	ctx *k0 = arg, k = *k0;
	size_t nk = k.nk, d = k.d;
	k.be = be;
	k.sacc = emu_vec_new(be, nk), k.s = emu_vec_new(be, nk), k.e = emu_vec_new(be, nk);
	k.ea = emu_vec_new(be, nk), k.oacc = emu_vec_new(be, d), k.t = emu_vec_new(be, AT_NT);
	k.pv = emu_vec_new(be, d), k.part = emu_vec_new(be, 1);
	if (!(k.v == ATT_NAIVE && k.bwd))
		k.P = emu_vec_new(be, nk), k.PA = emu_vec_new(be, nk);
	k.EP = k0->EVt ? malloc((nk + 1) * sizeof *k.EP) : NULL;
	k.SP = k0->SVt ? malloc((nk + 1) * sizeof *k.SP) : NULL;
	if (!k.sacc || !k.s || !k.e || !k.ea || !k.oacc || !k.t || !k.pv || !k.part || !k.P ||
	    !k.PA || (k0->EVt && !k.EP) || (k0->SVt && !k.SP)) {
		free(k.EP);
		free(k.SP);
		return -1;
	}
	emu_copy(be, emu_row(k.t, 0), emu_row(k0->t, 0), AT_NT);
	k.n_p_lost = k.p_mass_max = k.mass_max = 0;
	for (size_t i = i0; i < i1; i++)
		if (forward_row(&k, i) != 0) {
			free(k.EP);
			free(k.SP);
			return -1;
		}
	free(k.EP);
	free(k.SP);
#pragma omp critical(attention_fwd)
	{
		k0->n_p_lost += k.n_p_lost; /* a count: exact in any order */
		k0->p_mass_max = fmax(k0->p_mass_max, k.p_mass_max);
		k0->mass_max = fmax(k0->mass_max, k.mass_max);
	}
	return 0;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	ctx k = {.be = be,
	         .S = &pol->storage,
	         .C = &pol->compute,
	         .A = &pol->accum,
	         .E4 = emu_format_by_name("e4m3"),
	         .F32 = emu_format_by_name("fp32")};
	if (setup(&k, variant, in, err, errlen) != 0)
		return -1;
	emu_kinputs ki;
	if (emu_kinputs_take(&emu_kernel_attention, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	const double *dor = k.bwd ? emu_kinputs_find(&ki, "dO")->v : NULL;
	emu_steps(be, steps, S_END - EMU_STEP0);

	int v = k.v;
	bool bwd = k.bwd, f8 = v == ATT_FP8;
	size_t nq = k.nq, nk = k.nk, d = k.d;
	const emu_format *F32 = k.F32;
	k.O = emu_kout_vec(be, out, "O", nq * d, k.S);
	k.L = emu_kout_vec(be, out, "L", nq, k.C);
	k.dQ = bwd ? emu_kout_vec(be, out, "dQ", nq * d, k.S) : NULL;
	k.dK = bwd ? emu_kout_vec(be, out, "dK", nk * d, k.S) : NULL;
	k.dV = bwd ? emu_kout_vec(be, out, "dV", nk * d, k.S) : NULL;
	/* fp8's diagnostics (the header's p_lost, p_mass — not with :bwd, whose
	 * eight outputs fill emu_kout — p_lost_mass_max and _mean), counted on
	 * the values this backend holds */
	emu_vec *p_lost = f8 ? emu_kout_vec(be, out, "p_lost", 1, F32) : NULL;
	emu_vec *p_mass = f8 && !bwd ? emu_kout_vec(be, out, "p_mass", 1, F32) : NULL;
	emu_vec *lm_max = f8 ? emu_kout_vec(be, out, "p_lost_mass_max", 1, F32) : NULL;
	emu_vec *lm_mean = f8 ? emu_kout_vec(be, out, "p_lost_mass_mean", 1, F32) : NULL;
	/* fp8:bwd's: the nonzero dS its FP8 cast flushed to 0, and dS's amax
	 * (cuDNN's amax_dP, what a delayed recipe's history records) */
	emu_vec *ds_lost = f8 && bwd ? emu_kout_vec(be, out, "ds_lost", 1, F32) : NULL;
	emu_vec *amax_ds = f8 && bwd ? emu_kout_vec(be, out, "amax_ds", 1, k.C) : NULL;
	k.Qc = emu_vec_new(be, nq * d), k.Kc = emu_vec_new(be, nk * d),
	k.Vc = emu_vec_new(be, nk * d);
	k.sacc = emu_vec_new(be, nk), k.s = emu_vec_new(be, nk), k.e = emu_vec_new(be, nk),
	k.ea = emu_vec_new(be, nk), k.oacc = emu_vec_new(be, d), k.t = emu_vec_new(be, AT_NT);
	k.P = emu_vec_new(be, bwd ? nq * nk : nk), k.PA = emu_vec_new(be, bwd ? nq * nk : nk);
	if (f8) {
		k.dq8 = emu_vec_new(be, (nq + k.Tq - 1) / k.Tq);
		k.dk8 = emu_vec_new(be, (nk + k.Tk - 1) / k.Tk);
		k.dv8 = emu_vec_new(be, (nk + k.Tk - 1) / k.Tk);
	}
	k.pv = emu_vec_new(be, d);
	k.part = emu_vec_new(be, 1);
	k.row_mass = f8 ? calloc(nq ? nq : 1, sizeof *k.row_mass) : NULL;
	int rc = -1;
	if (!k.O || !k.L || (bwd && (!k.dQ || !k.dK || !k.dV)) || !k.Qc || !k.Kc || !k.Vc ||
	    !k.sacc || !k.s || !k.e || !k.ea || !k.oacc || !k.t || !k.P || !k.PA || !k.part ||
	    !k.pv ||
	    (f8 && (!k.dq8 || !k.dk8 || !k.dv8 || !p_lost || (!bwd && !p_mass) || !lm_max ||
	            !lm_mean || !k.row_mass)) ||
	    (f8 && bwd && (!ds_lost || !amax_ds)))
		goto oom;
	if (operands(&k, pol, &ki, in->seed) != 0)
		goto oom;
	k_attn_consts(be, v, k.C, k.scale, k.ps, k.t);
	if (k.tc && be->kind != EMU_BE_TRUTH && !tc_encode(&k, be->kind == EMU_BE_FAST))
		goto oom;
	if (emu_rows(be, nq, (uint64_t)nk * d * 4 + 16 * nk, fwd_part, &k) != 0)
		goto oom;
	for (size_t i = 0; f8 && i < nq; i++)
		k.mass_sum += k.row_mass[i];
	if (f8) {
		emu_fill(be, emu_at(p_lost, 0), k.n_p_lost, 1);
		if (p_mass)
			emu_fill(be, emu_at(p_mass, 0), k.p_mass_max, 1);
		emu_fill(be, emu_at(lm_max, 0), (double)(float)k.mass_max, 1); /* fp32, RNE */
		emu_fill(be, emu_at(lm_mean, 0), (double)(float)(nq ? k.mass_sum / (double)nq : 0),
		         1);
	}
	if (bwd && (f8 ? fp8_backward(&k, in, dor, ds_lost, amax_ds) : backward(&k, dor)) != 0)
		goto oom;
	rc = 0;
oom:
	if (rc)
		snprintf(err, errlen, "attention: out of memory");
	free(k.row_mass);
	free(k.EQ);
	free(k.EK);
	free(k.EVt);
	free(k.SQ);
	free(k.SK);
	free(k.SVt);
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
