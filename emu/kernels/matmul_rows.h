/*
 * matmul_rows.h — the GEMM's order of operations (emu/kernels/matmul.c),
 * one output element at a time, written once (emu/engine/krow.h):
 * emu/kernels/matmul.c runs it on the engine's backends, gpu/kern.cu on
 * the GPU (one thread an output element) and gpu/host_rows.c on the fake
 * device.
 *
 * C = A·B, A m × k (Av, row-major), B k × n (Bv, row-major; bt=1: n × k),
 * values of the compute format. seq: k_matmul_to_accum converts both
 * operands into the accumulator format A in place; k_matmul_dot then makes
 * output o = i·n + j: the products a_il·b_lj rounded in A and added in
 * order from +0 (fma 0), or c = fma(a_il, b_lj, c) in A (fma 1), into
 * acc[o]; k_matmul_store rounds acc into the storage format S, after every
 * dot product. tc: the Tensor Core GEMM (emu/kernels/tc.h on the engine,
 * gpu/mma.cu on the GPU) leaves its output, values of O, in D, and
 * k_matmul_tc_store takes it into acc and stores it. p holds k scratch
 * values.
 */
#ifndef NANMAP_MATMUL_ROWS_H
#define NANMAP_MATMUL_ROWS_H

/* The steps, each one operation site of the kernel under a name of its
 * own (tests/engine/check_kernels.c checks, docs/kernels-NAME.md lists them) */
#define K_MATMUL_STEPS(X)                                                                          \
	X(S_TO_ACCUM_A, "a_to_accum")                                                              \
	X(S_TO_ACCUM_B, "b_to_accum")                                                              \
	X(S_MUL, "mul")                                                                            \
	X(S_SUM, "sum")                                                                            \
	X(S_FMA, "fma")                                                                            \
	X(S_TC_BLOCK, "tc_block")                                                                  \
	X(S_PROMOTE, "promote")                                                                    \
	X(S_TC_OUT, "tc_out")                                                                      \
	X(S_STORE, "store")
#ifdef K_STEP_ENUM /* the engine's step ids (the loops drop them) */
enum { S_FIRST_ = K_STEP0 - 1, K_MATMUL_STEPS(K_STEP_ENUM) S_END };
#endif

/* seq: A's elements a0 .. a0 + na − 1 and B's b0 .. b0 + nb − 1 into the
 * accumulator format, in place (B's elements numbered after A's mk) */
K_FN void k_matmul_to_accum(k_ctx kc, k_fmt A, k_vec Av, size_t a0, size_t na, k_vec Bv, size_t b0,
                            size_t nb, size_t mk)
{
	(void)mk; /* an element number alone (the loops drop them) */
	K_MAP1(S_TO_ACCUM_A, CVT, A, K_ROW(Av, a0), K_ROW(Av, a0), na, a0);
	K_MAP1(S_TO_ACCUM_B, CVT, A, K_ROW(Bv, b0), K_ROW(Bv, b0), nb, mk + b0);
}

/* seq: the dot products of outputs o .. o + m − 1, all in one row of C
 * (o mod n + m <= n), into acc (element l of output o's is element o·k + l
 * of its steps), each exactly as if made alone, one after another (the
 * engine steps their sums together); p holds m·k scratch values. C, the
 * compute format, takes no part (the operands are in A already): the
 * mutant's sum in it (gpu/testdata/rows-mutant.sed) takes it. */
K_FN void k_matmul_dot(k_ctx kc, int fma, k_fmt C, k_fmt A, k_vec Av, k_vec Bv, int bt, size_t n,
                       size_t k, size_t o, size_t m, k_vec p, k_vec acc)
{
	size_t i = o / n, j = o % n, cb = bt ? k : 1;
	(void)C;
	k_ref a = K_ROW(Av, i * k), b = bt ? K_ROW(Bv, j * k) : K_STRIDED(Bv, j, n),
	      s = K_ROW(acc, o), P = K_ROW(p, 0);
	K_FILL(s, 0, m);
	if (fma)
		K_FOLDN_FMA(S_FMA, A, s, a, 0, b, cb, k, m, o * k, k);
	else
		K_DOTN(S_MUL, A, S_SUM, A, s, a, 0, b, cb, P, k, m, o * k, k);
}

/* the one rounding into the storage format, outputs o .. o + cnt − 1:
 * where an fp32 GEMM writing fp16 overflows */
K_FN void k_matmul_store(k_ctx kc, k_fmt S, k_vec acc, k_vec c, size_t o, size_t cnt)
{
	K_MAP1(S_STORE, CVT, S, K_ROW(c, o), K_ROW(acc, o), cnt, o);
}

/* tc: outputs o .. o + cnt − 1 of the GEMM's result D (values of O; the
 * engine's GEMM writes acc itself, D = acc) taken into acc, then stored.
 * C, the compute format, takes no part (without a scaling recipe the
 * operands are the stored values): the mutant's epilogue that rounds into
 * it (gpu/testdata/rows-mutant.sed) is caught where it is narrower than O. */
K_FN void k_matmul_tc_store(k_ctx kc, k_fmt S, k_fmt C, k_fmt O, k_vec D, k_vec acc, k_vec c,
                            size_t o, size_t cnt)
{
	(void)C;
	(void)O; /* the mutant's edit takes C for it */
	K_TAKE(O, K_ROW(acc, o), K_ROW(D, o), cnt);
	k_matmul_store(kc, S, acc, c, o, cnt);
}

#endif
