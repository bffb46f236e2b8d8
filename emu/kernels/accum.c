/*
 * accum.c — accumulation: sums and dot products of length N (N = cols; each
 * row is an independent problem) in the accumulator format, in a chosen
 * order; and gradient accumulation over micro-batches.
 *
 * Variants are "<op>:<order>" with op sum or dot, and gradacc:
 *   sum:seq       s = 0; s = s + x_j for j = 0..N−1 (the C loop)
 *   sum:pairwise  s(x[0..n)) = s(x[0..h)) + s(x[h..n)), h = ⌊n/2⌋, s(x_j) = x_j
 *   sum:block     blocks of k (parameter k, default 32): each block summed
 *                 sequentially from 0, then the block sums sequentially from 0
 *   dot:seq, dot:pairwise, dot:block   the same orders over the products
 *                 p_j = a_j·b_j, each rounded to the accumulator format; with
 *                 fma=1, seq and block use one FMA per step, s = fma(a_j, b_j, s)
 *   dot:tc[:MODEL]  the Tensor Core block-FMA model (emu/kernels/tc.h); MODEL is any
 *                 spec emu_tc_parse takes ("h100", "k=16,neab=2,final=rz"),
 *                 default: emu_tc_default(). sum:tc multiplies by b = 1.
 *   gradacc       m micro-batches (parameter m, default 4) each contribute the
 *                 row as their gradient: g = x·scale (parameter scale, the loss
 *                 scale, default 1), divided by m when divide=1 (the default:
 *                 `loss / accum_steps`), in the compute format, stored in the
 *                 storage format (the micro-batch's .grad), converted and added
 *                 into the accumulator (the first micro-batch assigns it, as
 *                 PyTorch does when .grad is None).
 *
 * Precision policy: inputs are loaded by emu_load (storage format, the
 * scaling recipe, then the compute format). Sums and dot products convert
 * them to the accumulator format and do every operation there (products
 * included, as a GEMM with an fp32 accumulator does). Output `result` (one
 * per row) is in the accumulator format; gradacc outputs `grad` (rows·N,
 * accumulator format).
 *
 * Written on the array-level engine (kern.h), row by row in the order the
 * per-element loop had: each row's conversions and products are maps over
 * the row, its reduction one emu_fold in the variant's order (the engine's
 * SEQ, PAIRWISE and BLOCK are this file's definitions above, element
 * indices included), so the operation counts and flags are the loop's.
 * What an array order changes: within a row, all of one map runs before the
 * next, so when two steps both fail the first failing op reported is the
 * earlier step's first failure rather than the lower element's.
 *
 * The second vector of a dot product (tensor `b`) is generated, like
 * softmax_ce's labels: b_j = |x_i| with i = emu_sr_bits(seed, r·N + j) mod N,
 * loaded like x (its own scales). So b has the magnitudes of the row it
 * multiplies (the same range, the same overflow and underflow risks) and the
 * products have the signs of x: a row of one sign gives a sum-like dot product (no
 * cancellation), a row of random signs a random walk; a row of ones, b = 1.
 *
 * Tensor Cores. The engine's map is one rounding per operation, but a block
 * FMA rounds k products and C at once, so tc folds through the Tensor Core
 * fold every kernel can use (emu_fold_tc, emu/kernels/tcfold.c): it switches on
 * the backend — FAST runs emu_tc_dot's blocks (through a plan, each
 * operand split once), EXACT the independent
 * MPFR model emu_tc_mp_dot, TRUTH computes the exact dot product — and
 * records one EMU_OP_FMA per block (step "tc_block", the index of the
 * block's first element) with that block's flags, one EMU_OP_ADD per fp32
 * promotion (step "promote") and one EMU_OP_CVT for the final conversion of
 * the fp32 accumulator (step "tc_out") when promotion is on. The blocks are
 * chained there, each block's result being the next one's C, which is the
 * model's own definition; tests/kernels/check_accum.c proves the chain equals one
 * emu_tc_dot call over the whole row, bit for bit and flag for flag.
 * The model's input format: without a scaling recipe, the storage format,
 * and the operands are the stored values (emu_input; an FP8 GEMM on FP8
 * data); with a recipe, the compute format, and the operands are the
 * dequantised values emu_load returns (a GEMM on dequantised data; the
 * scales themselves are not modelled inside the Tensor Core, so h100's FP8
 * preset then does not apply: choose scale=none for it). The output format
 * is the accumulator format when a Tensor Core can write it (sign, inf, IEEE
 * NaN, subnormals, inside binary32's range: fp32, tf32, fp16, bf16), else
 * fp32. Parameters promote=N_C (fp32 promotion every N_C products) and k
 * override the model's.
 *
 * GPU counterpart: the Tensor Core orders run on the GPU as gpu/mma.cu's mma.sync
 * GEMM and cuBLAS (gpu/blas.cu), compared with this file's dot:tc by the runner's tc
 * and gemm steps (gpu/run_tc.c, gpu/run_gemm.c; docs/gpu.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/kernels/tc.h"

static const char *const variants[] = {"sum:seq", "sum:pairwise", "sum:block",
                                       "dot:seq", "dot:pairwise", "dot:block",
                                       "dot:tc",  "gradacc",      NULL};

enum { SEQ, PAIRWISE, BLOCK, TC, GRADACC };

/* "sum:seq" → dot=false, order=SEQ; "dot:tc:h100" → spec "h100". -1 if unknown. */
static int parse_variant(const char *v, bool *dot, const char **spec)
{
	static const char *const orders[] = {"seq", "pairwise", "block", "tc"};
	*dot = false;
	*spec = NULL;
	if (!v)
		return SEQ;
	if (!strcmp(v, "gradacc"))
		return GRADACC;
	if (!strncmp(v, "sum:", 4))
		v += 4;
	else if (!strncmp(v, "dot:", 4))
		v += 4, *dot = true;
	else
		return -1;
	for (int o = 0; o < 4; o++) {
		size_t n = strlen(orders[o]);
		if (strncmp(v, orders[o], n) != 0)
			continue;
		if (v[n] == 0)
			return o;
		if (o == TC && v[n] == ':' && v[n + 1]) {
			*spec = v + n + 1;
			return o;
		}
	}
	return -1;
}

/* A parameter that must be an integer in [lo, hi]; dflt when absent. */
static bool int_param(const emu_kin *in, const char *name, double lo, double hi, double dflt,
                      double *out, char *err, size_t errlen)
{
	return emu_kparam_int(in, "accum", name, lo, hi, dflt, out, err, errlen);
}

/* The steps, each one operation site of the kernel. Sites that share a
 * name (the two operands' conversions) are apart so that their stochastic
 * rounding draws are. */
enum {
	S_TO_ACCUM_A = EMU_STEP0,
	S_TO_ACCUM_B,
	S_MUL,
	S_FMA,
	S_SUM,
	S_PAIRWISE,
	S_BLOCK,
	S_BLOCK_SUM,
	S_INPUT_B,
	S_TC_BLOCK,
	S_PROMOTE,
	S_TC_OUT,
	S_M_COMPUTE,
	S_SCALE_COMPUTE,
	S_LOSS_SCALE,
	S_DIVIDE,
	S_STORE,
	S_G_ACCUM,
	S_ACCUM,
	S_END
};
static const char *const steps[S_END - EMU_STEP0] = {
    "to_accum",     "b_to_accum",       "mul",        "fma",      "sum",     "pairwise",
    "block",        "block_sum",        "b_input",    "tc_block", "promote", "tc_out",
    "m_to_compute", "scale_to_compute", "loss_scale", "divide",   "store",   "g_to_accum",
    "accum",
};

/* element j of an operand */
/* the Tensor Core fold's three steps */
static const emu_tc_steps tc_steps = {S_TC_BLOCK, S_PROMOTE, S_TC_OUT};

/* The second vector of a dot product: b_i = |x_k|, k drawn from the seed in
 * i's row. The indices are drawn a batch at a time so that the gathers,
 * cache misses across a long row, overlap instead of waiting in turn. */
static void draw_b(const emu_kin *in, double *b)
{
	size_t n = in->rows * in->cols, N = in->cols, k[64];
	/* a power of two's remainders by a mask: a division an element was
	 * most of a long row's draws */
	size_t mask = (N & (N - 1)) == 0 ? N - 1 : 0;
	for (size_t i0 = 0; i0 < n; i0 += 64) {
		size_t m = n - i0 < 64 ? n - i0 : 64;
		for (size_t j = 0; j < m; j++) {
			size_t i = i0 + j;
			uint32_t u = (uint32_t)(emu_draw64(in->seed, i) >> 32); /* emu_sr_bits */
			k[j] = mask ? (i & ~mask) + (u & mask) : i - i % N + u % N;
		}
		for (size_t j = 0; j < m; j++)
			b[i0 + j] = fabs(in->x[k[j]]);
	}
}

/* x, and a dot product's second vector b (rows × N): drawn as draw_b says,
 * stored as x is (its elements after x's), or without a scaling recipe for
 * tc (the stored values themselves, at step "input"). */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	bool dot;
	const char *spec;
	int v = parse_variant(variant, &dot, &spec);
	emu_kinput *t;
	double *b;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (v < 0 || !dot || in->rows == 0 || in->cols == 0)
		return 0; /* no b, or the run refuses them */
	if (emu_kinputs_add(ki, in, "accum", "b", in->rows, in->cols, false, &t, &b, err, errlen) !=
	    0)
		return -1;
	bool tc_raw = v == TC && pol->scale == EMU_SCALE_NONE;
	t->fmt = pol->scale == EMU_SCALE_NONE ? &pol->storage : NULL;
	t->step = tc_raw ? S_INPUT_B : EMU_STEP_INPUT;
	t->e0 = tc_raw ? 0 : (uint64_t)in->rows * in->cols;
	if (b)
		draw_b(in, b);
	return 0;
}

/*
 * Micro-batch mb's operations on element j of row r are element
 * mb·rows·N + r·N + j of their steps: the first micro-batch numbers them as
 * the output, and every later one draws its own stochastic roundings (a
 * sum of m identical draws would not be unbiased).
 */
static int gradacc(emu_be *be, const emu_policy *pol, const emu_kin *in, emu_kout *out, char *err,
                   size_t errlen)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	size_t R = in->rows, N = in->cols;
	double m, divide;
	double scale;
	if (!int_param(in, "m", 1, 1e9, 4, &m, err, errlen) ||
	    !int_param(in, "divide", 0, 1, 1, &divide, err, errlen) ||
	    !emu_kparam_real(in, "accum", "scale", 0, INFINITY, EMU_KP_ABOVE_LO, 1, &scale, err,
	                     errlen))
		return -1;
	emu_vec *grad = emu_kout_vec(be, out, "grad", R * N, A);
	emu_vec *X = emu_vec_new(be, R * N), *g = emu_vec_new(be, N), *t = emu_vec_new(be, 3);
	if (!grad || !X || !g || !t || emu_load(be, pol, in->x, R, N, X) != 0) {
		snprintf(err, errlen, "accum: out of memory");
		return -1;
	}
	enum { MC, SC, TMP };
	emu_ref mC = emu_at(t, MC), sC = emu_at(t, SC), tmp = emu_at(t, TMP), G = emu_row(g, 0);
	/* m and the loss scale in the compute format (rounded if they must be) */
	emu_fill(be, tmp, m, 1);
	emu_op1(be, S_M_COMPUTE, EMU_OP_CVT, C, mC, tmp, EMU_NOREF, 0);
	emu_fill(be, tmp, scale, 1);
	emu_op1(be, S_SCALE_COMPUTE, EMU_OP_CVT, C, sC, tmp, EMU_NOREF, 0);
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N;
		emu_ref x = emu_row(X, o), gr = emu_row(grad, o);
		for (uint64_t mb = 0; mb < (uint64_t)m; mb++) {
			uint64_t e = mb * (R * N) + o;
			emu_ref src = x; /* g = x, then each step in place */
			if (scale != 1) {
				emu_map(be, S_LOSS_SCALE, EMU_OP_MUL, C, G, src, sC, EMU_NOREF, N,
				        e, NULL);
				src = G;
			}
			if (divide) {
				emu_map(be, S_DIVIDE, EMU_OP_DIV, C, G, src, mC, EMU_NOREF, N, e,
				        NULL);
				src = G;
			}
			emu_map(be, S_STORE, EMU_OP_CVT, S, G, src, EMU_NOREF, EMU_NOREF, N, e,
			        NULL);
			/* the first micro-batch assigns the accumulator, the others add */
			emu_ref gA = mb == 0 ? gr : G;
			emu_map(be, S_G_ACCUM, EMU_OP_CVT, A, gA, G, EMU_NOREF, EMU_NOREF, N, e,
			        NULL);
			if (mb > 0)
				emu_map(be, S_ACCUM, EMU_OP_ADD, A, gr, gr, G, EMU_NOREF, N, e,
				        NULL);
		}
	}
	return 0;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *A = &pol->accum;
	bool dot;
	const char *spec;
	int v = parse_variant(variant, &dot, &spec);
	if (v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(
		    err, errlen,
		    v < 0 ? "accum: unknown variant '%s' (sum:|dot: seq pairwise block tc[:MODEL]; "
		            "gradacc)"
		          : "accum: empty input%s",
		    v < 0 ? variant : "");
		return -1;
	}
	emu_steps(be, steps, S_END - EMU_STEP0);
	if (v == GRADACC) { /* x alone: a tensor given by role is refused */
		emu_kinputs ki;
		if (emu_kinputs_take(&emu_kernel_accum, pol, variant, in, &ki, err, errlen) != 0)
			return -1;
		emu_kinputs_free(&ki);
		return gradacc(be, pol, in, out, err, errlen);
	}
	size_t R = in->rows, N = in->cols;
	double k, fma, promote;
	if (!int_param(in, "k", v == TC ? 0 : 1, v == TC ? EMU_TC_K_MAX : 1e12, v == TC ? 0 : 32,
	               &k, err, errlen) ||
	    !int_param(in, "fma", 0, 1, 0, &fma, err, errlen) ||
	    !int_param(in, "promote", -1, 1e12, -1, &promote, err, errlen))
		return -1;
	if (fma && (!dot || (v != SEQ && v != BLOCK))) {
		snprintf(err, errlen, "accum: fma=1 applies to dot:seq and dot:block");
		return -1;
	}
	/* the Tensor Core model, its input format I and its output format O */
	bool tc_raw = v == TC && pol->scale == EMU_SCALE_NONE;
	const emu_format *I = tc_raw ? S : &pol->compute, *O = A;
	emu_tc_model model;
	if (v == TC && emu_tc_setup("accum", spec, I, A, (int)k, (long long)promote, &model, &O,
	                            err, errlen) != EMU_OK)
		return -1;
	emu_kinputs ki;
	if (emu_kinputs_take(&emu_kernel_accum, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	const double *braw = dot ? emu_kinputs_find(&ki, "b")->v : NULL;
	emu_vec *res = emu_kout_vec(be, out, "result", R, O);
	/* sum:tc multiplies by one b = 1, broadcast */
	emu_vec *X = emu_vec_new(be, R * N), *B = emu_vec_new(be, dot ? R * N : 1);
	int rc = -1;
	if (!res || !X || !B)
		goto oom;
	if (tc_raw) { /* the stored values themselves */
		emu_input(be, EMU_STEP_INPUT, S, emu_row(X, 0), in->x, 1, R * N, 0, NULL);
		if (dot)
			emu_input(be, S_INPUT_B, S, emu_row(B, 0), braw, 1, R * N, 0, NULL);
	} else if (emu_load(be, pol, in->x, R, N, X) != 0 ||
	           (dot && emu_load_at(be, pol, braw, R, N, (uint64_t)R * N, B) != 0)) {
		goto oom;
	}
	if (!dot)
		emu_fill(be, emu_at(B, 0), 1, 1);
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N;
		emu_ref a = emu_row(X, o), b = dot ? emu_row(B, o) : emu_strided(B, 0, 0);
		emu_ref s = emu_at(res, r);
		if (v == TC) {
			if (emu_fold_tc(be, tc_steps, &model, I, O, s, a, b, N, o) != 0)
				goto oom;
			continue;
		}
		emu_map(be, S_TO_ACCUM_A, EMU_OP_CVT, A, a, a, EMU_NOREF, EMU_NOREF, N, o, NULL);
		if (dot) {
			emu_map(be, S_TO_ACCUM_B, EMU_OP_CVT, A, b, b, EMU_NOREF, EMU_NOREF, N, o,
			        NULL);
			if (!fma)
				emu_map(be, S_MUL, EMU_OP_MUL, A, a, a, b, EMU_NOREF, N, o, NULL);
		}
		/* a now holds the terms (x_j, or p_j unless fma) */
		emu_op op = fma ? EMU_OP_FMA : EMU_OP_ADD;
		emu_ref bf = fma ? b : EMU_NOREF;
		emu_fill(be, s, 0, 1);
		if (v == SEQ)
			emu_fold(be, fma ? S_FMA : S_SUM, op, A, EMU_ORDER_SEQ, s, a, bf, N, o);
		else if (v == PAIRWISE)
			emu_fold(be, S_PAIRWISE, op, A, (emu_order){EMU_FOLD_PAIRWISE, 0, 0}, s, a,
			         bf, N, o);
		else
			emu_fold(be, fma ? S_FMA : S_BLOCK, op, A,
			         (emu_order){EMU_FOLD_BLOCK, (size_t)k, S_BLOCK_SUM}, s, a, bf, N,
			         o);
	}
	rc = 0;
oom:
	if (rc)
		snprintf(err, errlen, "accum: out of memory");
	emu_kinputs_free(&ki);
	return rc;
}

const emu_kernel emu_kernel_accum = {
    "accum",
    variants,
    "k=K (block length, default 32; tc: overrides the model's); fma=0|1 (dot:seq, dot:block); "
    "promote=N_C (tc: fp32 promotion every N_C products); gradacc: m=M (default 4), "
    "divide=0|1 (default 1), scale=S (loss scale, default 1)",
    run,
    inputs,
    steps,
    S_END - EMU_STEP0,
};
