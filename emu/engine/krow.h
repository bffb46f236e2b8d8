/*
 * krow.h — the engine's reading of a kernel's row source.
 *
 * A kernel whose GPU counterpart runs one thread a row writes its order of
 * operations once, in emu/kernels/NAME_rows.h, as maps and folds over
 * references (the K_ vocabulary below), and three places compile it:
 *   - the kernel's engine file (emu/kernels/NAME.c) through this header:
 *     each K_MAP is one emu_map, each K_FOLD one sequential emu_fold, so
 *     the fast, exact and truth backends run it with per-step flags, SR
 *     keys and the first failing operation;
 *   - gpu/kern.cu and gpu/host_rows.c through gpu/krow_loops.h: each K_MAP
 *     a loop over the elements on one thread, each operation the format's
 *     own CUDA instruction (kern.cu) or the emulator's (host_rows.c, the
 *     fake device).
 * So the fake device proves the very source nvcc compiles, and the engine
 * runs it too: no formula exists twice.
 *
 * The vocabulary (every row function takes `k_ctx kc` first; the macros use
 * it):
 *   k_ctx, k_fmt, k_vec, k_ref     the context, a format, a vector, a reference
 *   K_FN                           the qualifier of a row function
 *   K_ROW(v, off), K_AT(v, i)      v[off + j] (stride 1), v[i] broadcast
 *   K_MAP1(step, OP, F, d, a, n, e)       d[j] = OP(a[j]) in F, j < n
 *   K_MAP2(step, OP, F, d, a, b, n, e)    d[j] = OP(a[j], b[j]) in F
 *   K_MAP3(step, OP, F, d, a, b, c, n, e) d[j] = OP(a[j], b[j], c[j]) in F (FMA)
 *   K_OP1, K_OP2                   the same with n = 1 (no n argument)
 *   K_FOLD(step, OP, F, acc, a, n, e)     acc = OP(acc, a[j]), j = 0 .. n − 1
 *   K_FOLD_FMA(step, F, acc, a, b, n, e)  acc = fma(a[j], b[j], acc)
 *   K_FOLDN(step, OP, F, acc, a, ca, n, m, e, ce)
 *                                  m such K_FOLDs at once: chain c on acc's
 *                                  element c, a shifted by c·ca elements,
 *                                  numbered from e + c·ce (as K_FOLDN_FMA)
 *   K_FOLDN_FMA(step, F, acc, a, ca, b, cb, n, m, e, ce)
 *                                  m such FMA folds at once: chain c on acc's
 *                                  element c, a and b shifted by c·ca
 *                                  and c·cb elements, numbered from e + c·ce;
 *                                  each exactly its own K_FOLD_FMA, the chains
 *                                  in flight together on the engine (the
 *                                  counts and the first failing operation
 *                                  those of the m folds one after another)
 *   K_DOTN(smul, FM, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce)
 *                                  m dot products: chain c is K_MAP2(smul,
 *                                  MUL, FM, P_c, a_c, b_c, n, e_c), then
 *                                  K_FOLD(ssum, ADD, FA, acc[c], P_c, n,
 *                                  e_c), with a_c, b_c shifted by c·ca and
 *                                  c·cb, P_c = P + c·n (P holds m·n), e_c =
 *                                  e + c·ce (ce >= n); the engine runs the
 *                                  chains together, counts and first
 *                                  failing operation as if one after another
 *   K_DOTN_CVT(smul, FM, scvt, ssum, FA, ...)  the same with K_MAP1(scvt,
 *                                  CVT, FA, P_c, P_c, n, e_c) between the
 *                                  products and the sum
 *   K_DOTN_CVT_ST(smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e,
 *                 ce, sst, FS, es)
 *                                  K_DOTN_CVT with each chain's sum then
 *                                  converted in place, K_OP1(sst, CVT, FS,
 *                                  acc[c], acc[c], es + c), before chain
 *                                  c + 1 begins (a sum stored)
 *   K_DOTN_CVT_ST2(..., sst, FS, sbk, FB, es)  the same with K_OP1(sbk,
 *                                  CVT, FB, acc[c], acc[c], es + c) after
 *                                  (a sum stored, then taken back into
 *                                  compute)
 *   K_FILL(d, x, n), K_COPY(d, a, n)      constants (exact) and copies
 *   K_CONST(step, F, d, x)                d[0] = the binary64 x rounded once
 *                                         into F (a scalar of the host's)
 *   K_MAP1_SR(step, F, d, a, seed, n, e)  d[j] = a[j] stored in F by SR, the
 *                                         bits of element e + j of step
 *                                         under seed (the policy's: the
 *                                         engine's draw, which the loops
 *                                         make too; here seed is the
 *                                         backend's own)
 * OP is an emu_op without its prefix (ADD, SUB, MUL, DIV, EXP, LOG, RSQRT,
 * MAX, CVT, ...); step is the kernel's step id and e the element index the
 * operation's element 0 has in that step (both ignored by the loops).
 * Steps are declared once, in an X-macro of the row source
 * (X(ID, "name")): the row source makes the ids with K_STEP_ENUM where it
 * is defined (here, never in the loops), the kernel's file the names with
 * K_STEP_NAME.
 */
#ifndef NANMAP_KROW_H
#define NANMAP_KROW_H

#include "emu/engine/kern.h"

typedef emu_be *k_ctx;
typedef const emu_format *k_fmt;
typedef emu_vec *k_vec;
typedef emu_ref k_ref;

#define K_FN static
#define K_ROW(v, off) emu_row(v, off)
#define K_AT(v, i) emu_at(v, i)
#define K_MAP1(step, OP, F, d, a, n, e)                                                            \
	emu_map(kc, step, EMU_OP_##OP, F, d, a, EMU_NOREF, EMU_NOREF, n, e, NULL)
#define K_MAP2(step, OP, F, d, a, b, n, e)                                                         \
	emu_map(kc, step, EMU_OP_##OP, F, d, a, b, EMU_NOREF, n, e, NULL)
#define K_MAP3(step, OP, F, d, a, b, c, n, e)                                                      \
	emu_map(kc, step, EMU_OP_##OP, F, d, a, b, c, n, e, NULL)
#define K_OP1(step, OP, F, d, a, e) K_MAP1(step, OP, F, d, a, 1, e)
#define K_OP2(step, OP, F, d, a, b, e) K_MAP2(step, OP, F, d, a, b, 1, e)
#define K_FOLD(step, OP, F, acc, a, n, e)                                                          \
	emu_fold(kc, step, EMU_OP_##OP, F, EMU_ORDER_SEQ, acc, a, EMU_NOREF, n, e)
#define K_FOLD_FMA(step, F, acc, a, b, n, e)                                                       \
	emu_fold(kc, step, EMU_OP_FMA, F, EMU_ORDER_SEQ, acc, a, b, n, e)
#define K_FOLDN(step, OP, F, acc, a, ca, n, m, e, ce)                                              \
	emu_fold_n(kc, step, EMU_OP_##OP, F, acc, a, ca, EMU_NOREF, 0, n, m, e, ce)
#define K_FOLDN_FMA(step, F, acc, a, ca, b, cb, n, m, e, ce)                                       \
	emu_fold_n(kc, step, EMU_OP_FMA, F, acc, a, ca, b, cb, n, m, e, ce)
#define K_DOTN(smul, FM, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce)                              \
	emu_dot_n(kc, smul, FM, EMU_NOSTEP, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce)
#define K_DOTN_CVT(smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce)                    \
	emu_dot_n(kc, smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce)
#define K_DOTN_CVT_ST(smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce, sst, FS, es)    \
	emu_dot_n_then(kc, smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce,            \
	               &(const emu_dot_then){{sst, EMU_NOSTEP}, {FS, NULL}, es})
#define K_DOTN_CVT_ST2(smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce, sst, FS, sbk,  \
                       FB, es)                                                                     \
	emu_dot_n_then(kc, smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce,            \
	               &(const emu_dot_then){{sst, sbk}, {FS, FB}, es})
#define K_FILL(d, x, n) emu_fill(kc, d, x, n)
#define K_COPY(d, a, n) emu_copy(kc, d, a, n)
#define K_CONST(step, F, d, x)                                                                     \
	do {                                                                                       \
		emu_fill(kc, d, x, 1);                                                             \
		emu_map(kc, step, EMU_OP_CVT, F, d, d, EMU_NOREF, EMU_NOREF, 1, 0, NULL);          \
	} while (0)
#define K_MAP1_SR(step, F, d, a, seed, n, e)                                                       \
	do {                                                                                       \
		(void)(seed);                                                                      \
		emu_map_mode(kc, step, EMU_OP_CVT, EMU_SR, F, d, a, EMU_NOREF, EMU_NOREF, n, e,    \
		             NULL);                                                                \
	} while (0)

/* a step table's X-macro, as an enum from EMU_STEP0 (the row source
 * declares it) and as names (the kernel's file) */
#define K_STEP0 EMU_STEP0
#define K_STEP_ENUM(id, name) id,
#define K_STEP_NAME(id, name) name,
/* a variant table's X-macro (X(ID, "name")): the row source makes the codes
 * with K_VARIANT_ID on both sides (the loops take them too), the kernel's
 * file its variants[] with K_VARIANT_NAME, looked up by emu_variant_index */
#define K_VARIANT_ID(id, name) id,
#define K_VARIANT_NAME(id, name) name,

/* ---- operands and copies beyond the maps and folds (rmsnorm, bce,
 * backward, matmul, batchnorm) ----
 *   K_STRIDED(v, off, stride)   v[off + j·stride] (a column of a row-major
 *                               matrix, s its row length: a fold down a
 *                               column; stride 0 is K_AT)
 *   K_SHIFT(r, j)               r from its element j on (a broadcast stays)
 *   K_SEL_NEG(d, x, a, k, n)    d[j] = a[j] where x[j] < 0, else the
 *                               constant k (exact: copies, no operation and
 *                               no step; the sign is x's value on each
 *                               backend)
 *   K_TAKE(F, d, a, n)          d[j] = a[j], n values of F that an operation
 *                               outside the row source left in a (a Tensor
 *                               Core GEMM's output): here a copy, exact and
 *                               uncounted (d may be a itself); the loops
 *                               round them into F, also exact, the site an
 *                               epilogue in another format would change */
#define K_STRIDED(v, off, stride) emu_strided(v, off, stride)
static inline emu_ref k_shift(emu_ref r, size_t j)
{
	r.off += j * r.stride;
	return r;
}
#define K_SHIFT(r, j) k_shift(r, j)
#define K_SEL_NEG(d, x, a, k, n) k_sel_neg(kc, d, x, a, k, n)
static inline void k_sel_neg(emu_be *be, emu_ref d, emu_ref x, emu_ref a, double k, size_t n)
{
	if (d.v && !d.v->m) { /* doubles (a backend's vectors are all one kind) */
		for (size_t j = 0; j < n; j++)
			d.v->d[d.off + j * d.stride] =
			    x.v->d[x.off + j * x.stride] < 0 ? a.v->d[a.off + j * a.stride] : k;
		return;
	}
	for (size_t j = 0; j < n; j++) {
		emu_ref dj = emu_at(d.v, d.off + j * d.stride);
		if (emu_vget(be, x.v, x.off + j * x.stride) < 0)
			emu_copy(be, dj, emu_at(a.v, a.off + j * a.stride), 1);
		else
			emu_fill(be, dj, k, 1);
	}
}
#define K_TAKE(F, d, a, n)                                                                         \
	do {                                                                                       \
		(void)(F);                                                                         \
		emu_copy(kc, d, a, n);                                                             \
	} while (0)

#endif
