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
 *   dot:tc[:MODEL]  the Tensor Core block-FMA model (emu/tc.h); MODEL is any
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
 * Precision policy: inputs are loaded by emu_k_load (storage format, the
 * scaling recipe, then the compute format). Sums and dot products convert
 * them to the accumulator format and do every operation there (products
 * included, as a GEMM with an fp32 accumulator does). Output `result` (one
 * per row) is in the accumulator format; gradacc outputs `grad` (rows·N,
 * accumulator format).
 *
 * The second vector of a dot product is generated, like softmax_ce's labels:
 * b_j = |x_i| with i = emu_sr_bits(seed, r·N + j) mod N, loaded like x (its
 * own scales). So b has the magnitudes of the row it multiplies (the same
 * range, the same overflow and underflow risks) and the products have the
 * signs of x: a row of one sign gives a sum-like dot product (no
 * cancellation), a row of random signs a random walk; a row of ones, b = 1.
 *
 * Tensor Cores. kern.h's emu_k_op is one rounding per operation, but a block
 * FMA rounds k products and C at once, so tc has its own path (tc_row): it
 * switches on the backend — FAST calls emu_tc_dot, EXACT the independent
 * MPFR model emu_tc_mp_dot, TRUTH computes the exact dot product — and
 * records one EMU_OP_FMA per block (step "tc_block", the index of the
 * block's first element) with that block's flags, one EMU_OP_ADD per fp32
 * promotion (step "promote") and one EMU_OP_CVT for the final conversion of
 * the fp32 accumulator (step "tc_out") when promotion is on. The blocks are
 * chained here, each block's result being the next one's C, which is the
 * model's own definition; tests/check_accum.c proves the chain equals one
 * emu_tc_dot call over the whole row, bit for bit and flag for flag.
 * The model's input format: without a scaling recipe, the storage format,
 * and the operands are the stored values (emu_k_input; an FP8 GEMM on FP8
 * data); with a recipe, the compute format, and the operands are the
 * dequantised values emu_k_load returns (a GEMM on dequantised data; the
 * scales themselves are not modelled inside the Tensor Core, so h100's FP8
 * preset then does not apply: choose scale=none for it). The output format
 * is the accumulator format when a Tensor Core can write it (sign, inf, IEEE
 * NaN, subnormals, inside binary32's range: fp32, tf32, fp16, bf16), else
 * fp32. Parameters promote=N_C (fp32 promotion every N_C products) and k
 * override the model's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "tc.h"

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

/* emu_k_note's bookkeeping, and the SR op counter emu_k_op advances. */
static void note(emu_be *be, emu_op op, unsigned fl, const char *step, uint64_t i)
{
	emu_k_note(be, op, fl, step, i);
	be->env.index++; /* as emu_k_op */
}

/* Whether a Tensor Core model can write f (the conditions of emu_tc_check). */
static bool tc_out_ok(const emu_format *f)
{
	return f->has_sign && f->has_inf && f->nan == EMU_NAN_IEEE && f->has_subnormals &&
	       f->has_zero && f->p <= 24 && f->emin >= -126 && f->emax <= 127;
}

/* One row through the Tensor Core model m: dst = Σ a_j·b_j in out. ea and eb
 * are scratch for N encodings. The blocks of each promotion chunk (the whole
 * row without promotion) are chained from C = +0. */
static void tc_row(emu_be *be, const emu_tc_model *m, const emu_format *in, const emu_format *out,
                   const emu_val *a, const emu_val *b, size_t N, emu_bits *ea, emu_bits *eb,
                   emu_val *dst, uint64_t base)
{
	const emu_format *f32 = emu_format_by_name("fp32");
	const emu_env rne = EMU_ENV_DEFAULT;
	emu_tc_model blk = *m;
	blk.promote_every = 0;
	size_t k = (size_t)m->k, chunk = m->promote_every ? m->promote_every : N;
	if (be->kind == EMU_BE_TRUTH) {
		mpfr_t part;
		mpfr_init2(part, EMU_TRUTH_PREC);
		mpfr_set_zero(dst->m, 1);
		for (size_t i0 = 0; i0 < N; i0 += chunk) {
			size_t n = N - i0 < chunk ? N - i0 : chunk;
			mpfr_set_zero(part, 1);
			for (size_t i = 0; i < n; i += k) {
				for (size_t j = i0 + i; j < i0 + i + k && j < i0 + n; j++)
					mpfr_fma(part, a[j].m, b[j].m, part, MPFR_RNDN);
				note(be, EMU_OP_FMA, mpfr_nan_p(part) ? EMU_FLAG_INVALID : 0,
				     "tc_block", base + i0 + i);
			}
			if (m->promote_every) {
				mpfr_add(dst->m, dst->m, part, MPFR_RNDN);
				note(be, EMU_OP_ADD, mpfr_nan_p(dst->m) ? EMU_FLAG_INVALID : 0,
				     "promote", base + i0);
			} else {
				mpfr_set(dst->m, part, MPFR_RNDN);
			}
		}
		if (m->promote_every)
			note(be, EMU_OP_CVT, mpfr_nan_p(dst->m) ? EMU_FLAG_INVALID : 0, "tc_out",
			     base);
		mpfr_clear(part);
		return;
	}
	bool fast = be->kind == EMU_BE_FAST;
	for (size_t j = 0; j < N; j++) {
		ea[j] = emu_encode(in, a[j].d);
		eb[j] = emu_encode(in, b[j].d);
	}
	emu_bits acc = emu_encode(f32, 0.0);
	double c = 0;
	for (size_t i0 = 0; i0 < N; i0 += chunk) {
		size_t n = N - i0 < chunk ? N - i0 : chunk;
		c = 0;
		for (size_t i = 0; i < n; i += k) {
			size_t nb = n - i < k ? n - i : k;
			const emu_bits *pa = ea + i0 + i, *pb = eb + i0 + i;
			emu_bits cb = emu_encode(f32, c); /* exact: a value of out */
			emu_result r = fast ? emu_tc_dot(&blk, in, out, pa, pb, nb, cb)
			                    : emu_tc_mp_dot(&blk, in, out, pa, pb, nb, cb);
			c = emu_decode(out, r.bits);
			note(be, EMU_OP_FMA, r.flags, "tc_block", base + i0 + i);
		}
		if (m->promote_every) { /* an RNE fp32 addition on the CUDA cores */
			emu_bits args[2] = {acc, emu_encode(f32, c)};
			emu_result s = fast ? emu_add(f32, args[0], args[1], &rne)
			                    : emu_mp_apply(EMU_OP_ADD, f32, NULL, args, &rne);
			acc = s.bits;
			note(be, EMU_OP_ADD, s.flags, "promote", base + i0);
		}
	}
	if (m->promote_every) {
		emu_result r = fast ? emu_convert(out, f32, acc, &rne)
		                    : emu_mp_apply(EMU_OP_CVT, out, f32, &acc, &rne);
		c = emu_decode(out, r.bits);
		note(be, EMU_OP_CVT, r.flags, "tc_out", base);
	}
	dst->d = c;
}

/* v[lo] = the pairwise sum of v[lo..lo+n). */
static void pairwise(emu_be *be, emu_val *v, size_t lo, size_t n, const emu_format *A,
                     uint64_t base)
{
	if (n < 2)
		return;
	size_t h = n / 2;
	pairwise(be, v, lo, h, A, base);
	pairwise(be, v, lo + h, n - h, A, base);
	emu_k_op(be, EMU_OP_ADD, &v[lo], &v[lo], &v[lo + h], NULL, A, "pairwise", base + lo + h);
}

/* s = 0, then s += p_j (or s = fma(a_j, b_j, s)) for j in [lo, hi). */
static void seq(emu_be *be, emu_val *s, const emu_val *a, const emu_val *b, size_t lo, size_t hi,
                bool fma, const emu_format *A, const char *step, uint64_t base)
{
	emu_k_const(be, s, 0);
	for (size_t j = lo; j < hi; j++) {
		if (fma)
			emu_k_op(be, EMU_OP_FMA, s, &a[j], &b[j], s, A, "fma", base + j);
		else
			emu_k_op(be, EMU_OP_ADD, s, s, &a[j], NULL, A, step, base + j);
	}
}

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
	emu_val *grad = emu_kout_add(be, out, "grad", R * N, A);
	emu_val *X = emu_k_vec(be, R * N), *t = emu_k_vec(be, 4);
	if (!grad || !X || !t || emu_k_load(be, pol, in->x, R, N, X) != 0) {
		snprintf(err, errlen, "accum: out of memory");
		return -1;
	}
	emu_val *mC = &t[0], *sC = &t[1], *g = &t[2], *tmp = &t[3];
	/* m and the loss scale in the compute format (rounded if they must be) */
	emu_k_const(be, tmp, m);
	emu_k_op(be, EMU_OP_CVT, mC, tmp, NULL, NULL, C, "to_compute", 0);
	emu_k_const(be, tmp, scale);
	emu_k_op(be, EMU_OP_CVT, sC, tmp, NULL, NULL, C, "to_compute", 0);
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N;
		emu_val *x = &X[o];
		for (uint64_t mb = 0; mb < (uint64_t)m; mb++)
			for (size_t j = 0; j < N; j++) {
				emu_k_copy(be, g, &x[j]);
				if (scale != 1)
					emu_k_op(be, EMU_OP_MUL, g, g, sC, NULL, C, "loss_scale",
					         o + j);
				if (divide)
					emu_k_op(be, EMU_OP_DIV, g, g, mC, NULL, C, "divide",
					         o + j);
				emu_k_op(be, EMU_OP_CVT, g, g, NULL, NULL, S, "store", o + j);
				emu_k_op(be, EMU_OP_CVT, g, g, NULL, NULL, A, "to_accum", o + j);
				if (mb == 0)
					emu_k_copy(be, &grad[o + j], g);
				else
					emu_k_op(be, EMU_OP_ADD, &grad[o + j], &grad[o + j], g,
					         NULL, A, "accum", o + j);
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
	if (v == GRADACC)
		return gradacc(be, pol, in, out, err, errlen);
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
	if (v == TC) {
		if (!tc_out_ok(A))
			O = emu_format_by_name("fp32");
		char why[160];
		if (spec) {
			if (emu_tc_parse(spec, I, O, &model, why, sizeof why) != EMU_OK) {
				snprintf(err, errlen, "accum: tc model '%s': %s", spec, why);
				return -1;
			}
		} else {
			model = emu_tc_default();
		}
		if (k > 0)
			model.k = (int)k;
		if (promote >= 0)
			model.promote_every = (size_t)promote;
		if (emu_tc_check(&model, I, O, why, sizeof why) != EMU_OK) {
			snprintf(err, errlen, "accum: tc with %s -> %s: %s", I->name, O->name, why);
			return -1;
		}
	}
	emu_val *res = emu_kout_add(be, out, "result", R, O);
	emu_val *X = emu_k_vec(be, R * N), *B = emu_k_vec(be, dot || v == TC ? R * N : 1);
	emu_val *t = emu_k_vec(be, 2);
	double *braw = dot ? malloc(R * N * sizeof *braw) : NULL;
	/* tc_row's encoding scratch, on every backend so that its presence
	 * follows from v alone (the truth backend leaves it unused) */
	emu_bits *ea = v == TC ? malloc(N * sizeof *ea) : NULL;
	emu_bits *eb = v == TC ? malloc(N * sizeof *eb) : NULL;
	int rc = -1;
	if (!res || !X || !B || !t || (dot && !braw) || (v == TC && (!ea || !eb)))
		goto oom;
	/* b_j = |x_i|, i drawn from the seed */
	for (size_t i = 0; dot && i < R * N; i++)
		braw[i] = fabs(in->x[i - i % N + emu_sr_bits(in->seed, i) % N]);
	if (tc_raw) { /* the stored values themselves */
		for (size_t i = 0; i < R * N; i++) {
			emu_k_input(be, &X[i], in->x[i], S, "input", i);
			if (dot)
				emu_k_input(be, &B[i], braw[i], S, "input", i);
		}
	} else if (emu_k_load(be, pol, in->x, R, N, X) != 0 ||
	           (dot && emu_k_load(be, pol, braw, R, N, B) != 0)) {
		goto oom;
	}
	for (size_t i = 0; !dot && v == TC && i < R * N; i++)
		emu_k_const(be, &B[i], 1);
	emu_val *s = &t[0], *bs = &t[1];
	for (size_t r = 0; r < R; r++) {
		size_t o = r * N;
		emu_val *a = &X[o], *b = &B[o];
		if (v == TC) {
			tc_row(be, &model, I, O, a, b, N, ea, eb, &res[r], o);
			continue;
		}
		for (size_t j = 0; j < N; j++) {
			emu_k_op(be, EMU_OP_CVT, &a[j], &a[j], NULL, NULL, A, "to_accum", o + j);
			if (dot) {
				emu_k_op(be, EMU_OP_CVT, &b[j], &b[j], NULL, NULL, A, "to_accum",
				         o + j);
				if (!fma)
					emu_k_op(be, EMU_OP_MUL, &a[j], &a[j], &b[j], NULL, A,
					         "mul", o + j);
			}
		}
		/* a now holds the terms (x_j, or p_j unless fma) */
		if (v == SEQ) {
			seq(be, &res[r], a, b, 0, N, fma, A, "sum", o);
		} else if (v == PAIRWISE) {
			pairwise(be, a, 0, N, A, o);
			emu_k_copy(be, &res[r], &a[0]);
		} else {
			emu_k_const(be, s, 0);
			for (size_t lo = 0; lo < N; lo += (size_t)k) {
				size_t hi = N - lo < (size_t)k ? N : lo + (size_t)k;
				seq(be, bs, a, b, lo, hi, fma, A, "block", o);
				emu_k_op(be, EMU_OP_ADD, s, s, bs, NULL, A, "block_sum", o + lo);
			}
			emu_k_copy(be, &res[r], s);
		}
	}
	rc = 0;
oom:
	if (rc)
		snprintf(err, errlen, "accum: out of memory");
	free(braw);
	free(ea);
	free(eb);
	return rc;
}

const emu_kernel emu_kernel_accum = {
    "accum",
    variants,
    "k=K (block length, default 32; tc: overrides the model's); fma=0|1 (dot:seq, dot:block); "
    "promote=N_C (tc: fp32 promotion every N_C products); gradacc: m=M (default 4), "
    "divide=0|1 (default 1), scale=S (loss scale, default 1)",
    run,
};
