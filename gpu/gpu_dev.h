/*
 * gpu_dev.h — the launch functions of the CUDA kernels (the .cu files in gpu/), callable
 * from C. They take and return encodings only; what the outputs mean and
 * whether they are right is decided on the host (gpu_host.h).
 *
 * Every function returns 0, or -1 with one line in err (the CUDA or cuBLAS
 * error), so one failing step never takes the others down.
 */
#ifndef NANMAP_GPU_DEV_H
#define NANMAP_GPU_DEV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 when a device is usable (its name in name), else -1 with the reason. */
int gpu_dev_init(char *name, size_t nlen, char *err, size_t len);

/* Storage formats the kernels take (encodings right-aligned in uint16_t). */
typedef enum { GPU_F16 = 0, GPU_BF16, GPU_E4M3, GPU_E5M2, GPU_NFMT } gpu_fmt;

/* float -> format conversions: the CUDA intrinsic (or PTX cvt) named. */
typedef enum {
	GPU_CV_F16_RN = 0,  /* __float2half_rn */
	GPU_CV_F16_RZ,      /* __float2half_rz */
	GPU_CV_F16_RN_SAT,  /* cvt.rn.satfinite.f16.f32 */
	GPU_CV_BF16_RN,     /* __float2bfloat16_rn */
	GPU_CV_BF16_RZ,     /* __float2bfloat16_rz */
	GPU_CV_BF16_RN_SAT, /* cvt.rn.satfinite.bf16.f32 */
	GPU_CV_E4M3_SAT,    /* __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) */
	GPU_CV_E4M3_NOSAT,  /* __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3) */
	GPU_CV_E5M2_SAT,
	GPU_CV_E5M2_NOSAT,
	GPU_CV_N
} gpu_cv;

/* out[i] = convert(float with bits (first + i*stride) mod 2^32), i < n. */
int gpu_dev_convert(gpu_cv kind, uint64_t first, uint64_t stride, size_t n, uint16_t *out,
                    char *err, size_t len);
/* out[i] = binary32 bits of format encoding i widened to float, for every
 * encoding (65536 or 256 of them). */
int gpu_dev_widen(gpu_fmt f, uint32_t *out, char *err, size_t len);

/* fp16/bf16 elementwise: op 0 __hadd_rn, 1 __hmul_rn, 2 __hfma; c used by fma. */
int gpu_dev_arith(gpu_fmt f, int op, const uint16_t *a, const uint16_t *b, const uint16_t *c,
                  size_t n, uint16_t *out, char *err, size_t len);

/* The approximate functions, every input: 0 hexp 1 hlog 2 hexp2 3 hrcp 4 hrsqrt 5 hsqrt. */
#define GPU_NFUNC 6
int gpu_dev_table(gpu_fmt f, int func, uint16_t *out /* 65536 */, char *err, size_t len);

/*
 * Our own Tensor Core GEMM (mma.sync): D = A·B + C with A M×K row-major, B
 * N×K (each column of B contiguous), C and D M×N row-major. Each warp owns
 * one 16×8 tile and walks K upward in steps of the instruction's k (16 for
 * fp16/bf16, 32 for fp8), each step's D feeding the next step's C: the K
 * order is fixed. promote = N (a multiple of that k): every N products the
 * tile's partial sum is added to a binary32 accumulator (__fadd_rn) and the
 * chain restarts from zero; 0: never. acc16: fp16 accumulator (fp16/e4m3/e5m2
 * inputs; C and D are fp16 encodings in uint32_t, no promotion); else
 * binary32 bits. M % 16 == 0, N % 8 == 0, K % k == 0.
 */
int gpu_dev_mma(gpu_fmt in, int acc16, const uint16_t *A, const uint16_t *B, const uint32_t *C,
                size_t M, size_t N, size_t K, size_t promote, uint32_t *D, char *err, size_t len);

/* cublasGemmEx, fp16 A (M×K row-major) and B (N×K), D M×N row-major:
 * compute16 = 1: CUBLAS_COMPUTE_16F, fp16 D (in uint32_t); 0: 32F, fp32 D. */
int gpu_dev_gemmex(int compute16, const uint16_t *A, const uint16_t *B, size_t M, size_t N,
                   size_t K, uint32_t *D, char *err, size_t len);

/* cuBLASLt FP8: A e4m3 (M×K row-major), B e4m3 or e5m2 (N×K), fp32 D (M×N
 * row-major) = scale_a·scale_b·(A·B); fast_accum sets
 * CUBLASLT_MATMUL_DESC_FAST_ACCUM. M, N, K multiples of 16. Of the
 * heuristic's algorithms the first that does not split K is used; *splitk
 * gets its CUBLASLT_ALGO_CONFIG_SPLITK_NUM (1: no split; 0: unknown). */
int gpu_dev_lt_fp8(gpu_fmt bfmt, int fast_accum, const uint8_t *A, const uint8_t *B, size_t M,
                   size_t N, size_t K, float scale_a, float scale_b, uint32_t *D, int *splitk,
                   char *err, size_t len);

/* fp32's exp, log and log1p in the training kernels: 0 (default) CUDA's expf,
 * logf and log1pf (within 2 ulp, not correctly rounded); 1 the binary64
 * function rounded once to fp32 (correctly rounded unless the binary64 result
 * lies within its 1-ulp error of an fp32 midpoint, about 2^-28 of inputs), so
 * the kernels' order of operations can be proved bit for bit where the GPU
 * has no table. 0, or -1 with err. */
int gpu_dev_fp32_math(int cr, char *err, size_t len);

/*
 * softmax_ce (emu/kernels/softmax.c) in the emulator's exact order of operations,
 * one thread per row: variant 0 naive, 1 maxsub, 2 lse; S, C, A the
 * storage, compute and accumulator formats. x holds the inputs already
 * stored in S (as floats, exact); grad gets the stored gradient (values of
 * S), loss the mean loss (a value of A). Each operation is the one
 * instruction of its format (__hadd_rn, __hsub_rn, __hdiv, hexp, hlog in
 * fp16/bf16; __fadd_rn, __fsub_rn, __fdiv_rn, expf, logf in fp32), so only
 * exp and log may differ from the emulator's correctly rounded ones.
 */
typedef enum { GPU_K_F32 = 0, GPU_K_F16, GPU_K_BF16, GPU_K_E4M3, GPU_K_E5M2 } gpu_kfmt;
int gpu_dev_softmax(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x, size_t R,
                    size_t N, float *grad, float *loss, char *err, size_t len);

/*
 * layernorm (emu/kernels/layernorm.c), forward and backward, variant 0 twopass,
 * 1 onepass, 2 welford, one thread per row, in the emulator's order. x and
 * dy hold values of S; eps_c is eps already rounded into C. Outputs: y and
 * dx (values of S), rstd and var per row (values of C). rsqrt is hrsqrt in
 * fp16/bf16 and the correctly rounded __frsqrt_rn in fp32.
 */
int gpu_dev_layernorm(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                      const float *dy, size_t R, size_t N, float eps_c, float *y, float *dx,
                      float *rstd, float *var, char *err, size_t len);

/*
 * backward (emu/kernels/backward.c): a linear layer (X R×D times W D×K, values of
 * S) with softmax cross-entropy (maxsub, label r mod K), its backward under
 * the loss scale `scale` (already an fp32 value), the gradients dW (D×K) and
 * dX (R×D) stored in S into grad (dW first), then unscaled in fp32 by inv
 * (skipped when inv is 1) into un, with found = 1 when any unscaled value
 * is inf or NaN; loss is the mean loss in A. Sums are sequential in A.
 */
int gpu_dev_backward(gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x, const float *w, size_t R,
                     size_t D, size_t K, float scale, float inv, float *grad, float *un,
                     float *loss, float *found, char *err, size_t len);

/*
 * rmsnorm (emu/kernels/rmsnorm.c), forward and backward, variant 0 plain,
 * 1 prescaled, 2 fp32stats (statistics in fp32), one thread per row, then
 * one per column for dg, in the emulator's order. x and dy hold values of
 * S; eps_c is eps already rounded into C (fp32 for fp32stats); g_s is the
 * weight (every weight) stored in S. Outputs: y and dx (values of S), rstd
 * and ms per row (values of C; fp32 for fp32stats), dg (N values of A).
 */
int gpu_dev_rmsnorm(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                    const float *dy, size_t R, size_t N, float eps_c, float g_s, float *y,
                    float *dx, float *rstd, float *ms, float *dg, char *err, size_t len);

/*
 * bce (emu/kernels/bce.c): binary cross-entropy with logits, variant 0 naive,
 * 1 stable, one thread per row, then the mean loss on one thread. x holds
 * values of S, target 0 or 1 per element. Outputs: grad (values of S) and
 * the mean loss in A. stable's log1p is log1pf rounded to C, not correctly
 * rounded: the GPU may differ from the emulator there.
 */
int gpu_dev_bce(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                const float *target, size_t R, size_t N, float *grad, float *loss, char *err,
                size_t len);

/*
 * matmul (emu/kernels/matmul.c, variant seq): C = A·B, x holding A (m×k) then
 * B (k×n), row-major, values of S; one thread per output element, each
 * operand in C then A, products rounded in A and added in order from +0
 * (fma = 1: one fused multiply-add in A per step). Outputs: acc (m·n values
 * of A) and c (acc stored in S).
 */
int gpu_dev_matmul(int fma, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x, size_t m, size_t n,
                   size_t k, float *acc, float *c, char *err, size_t len);

/*
 * batchnorm (emu/kernels/batchnorm.c, training mode), variant 0 twopass,
 * 1 welford, one thread per channel (column) of the NB×CH input x and the
 * upstream gradient dy (values of S); cst: eps, gamma, beta, momentum and
 * the running mean and variance before the step, each in C. Outputs: y and
 * dx (values of S), mean and var (CH values of C), the running mean and
 * variance, dgamma and dbeta (CH values of S). Variant 2 is eval
 * (inference): mean and var are the running statistics given, which it
 * stores unchanged (momentum unused), and dx = dy · gamma · invstd.
 */
int gpu_dev_batchnorm(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *x,
                      const float *dy, size_t NB, size_t CH, const float cst[6], float *y,
                      float *dx, float *mean, float *var, float *rm, float *rv, float *dgamma,
                      float *dbeta, char *err, size_t len);

/*
 * optimizer (emu/kernels/optimizer_rows.h), one thread per element over
 * `steps` steps (gpu/rows.h's k_opt_elem): the variant's code and its
 * switches, and Python's scalars py (OPT_NPY + 2·steps of them), as
 * emu/kernels/optimizer.c's emu_opt_plan_make gives them; gs holds the
 * stored gradients (values of G), step s's n at gs[(s − 1)·n]; seed the
 * policy's (adamw_sr's draws). w (values of S) is updated in place; m and v
 * (values of T) start at 0.
 */
int gpu_dev_optimizer(int variant, unsigned flags, gpu_kfmt S, gpu_kfmt C, gpu_kfmt G, gpu_kfmt T,
                      const float *gs, size_t n, unsigned steps, const double *py, uint64_t seed,
                      float *w, float *m, float *v, char *err, size_t len);

/*
 * matmul (emu/kernels/matmul.c, variant tc): gpu_dev_mma's GEMM (S fp16 or bf16
 * encodings: a m×k row-major, b n×k, B's columns contiguous; C zero, no
 * promotion; output O, GPU_K_F32, or GPU_K_F16 for fp16's fp16
 * accumulator), then one thread per output element
 * (emu/kernels/matmul_rows.h's k_matmul_tc_store): acc (m·n values of O) and c (acc stored in S).
 * m % 16, n % 8, k % 16 must be 0.
 */
int gpu_dev_matmul_tc(gpu_kfmt S, gpu_kfmt C, gpu_kfmt O, const uint16_t *a, const uint16_t *b,
                      size_t m, size_t n, size_t k, float *acc, float *c, char *err, size_t len);

/*
 * Block quantisers (gpu/rows.h's k_quant_block), one thread per block of
 * one row of the R×N fp32 tensor x: rule GPU_Q_MXFP8 (TE's MXFP8: e8m0
 * scale from fp32(amax · fp32(1/fmax)) rounded up, the element multiplier
 * TE's exp2f_rcp) or GPU_Q_DEEPSEEK (DeepGEMM: s = fp32(fmax / max(amax,
 * amin)), stored scale fp32(max(amax, amin) / fmax)); blocks of bs columns
 * (the last of a row may be shorter); elements elem (GPU_K_E4M3 or
 * GPU_K_E5M2) of fp32(x · multiplier), RN, satfinite. Outputs: q (R×N
 * encodings) and scale (R·ceil(N / bs), row-major over blocks: the e8m0
 * code, or the stored scale's binary32 bits).
 */
typedef enum { GPU_Q_MXFP8 = 0, GPU_Q_DEEPSEEK } gpu_qrule;
int gpu_dev_quant(gpu_qrule rule, gpu_kfmt elem, float fmax, float amin, size_t bs, const float *x,
                  size_t R, size_t N, uint8_t *q, uint32_t *scale, char *err, size_t len);

/*
 * attention (emu/kernels/attention.c, naive:tc, online:tc, fp8:tc) around its
 * two GEMMs, which run as gpu_dev_mma calls (gpu/run_attn.c's attn step):
 * gpu/rows.h's k_attn_soft_row and k_attn_out_row, one thread per query
 * row; variant 0 naive, 1 online, 2 fp8; A fp32 or fp16 (the GEMMs write
 * it). soft: sacc (nq×nk values of A, S = Q·Kᵀ) in; P (nq×nk, the P·V
 * GEMM's operand, values of C, or of e4m3 for fp8), alpha (nq × the number
 * of key blocks, values of A), lrow (l, A), lse (L, C) and lost (per row)
 * out. fp8: dq8, dk8 the decode scales per tile of tq, tk rows (values of
 * C; NULL otherwise). out: part (naive nq×d; else one nq×d matrix per key
 * block, values of A) and soft's alpha and lrow in; o (nq×d, values of S)
 * out; fp8: dv8 per tile of tk key rows.
 */
int gpu_dev_attn_soft(int variant, gpu_kfmt C, gpu_kfmt A, const float *sacc, size_t nq, size_t nk,
                      size_t bk, int causal, float sc, const float *dq8, size_t tq,
                      const float *dk8, size_t tk, float psc, float *p, float *alpha, float *lrow,
                      float *lse, float *lost, char *err, size_t len);
int gpu_dev_attn_out(int variant, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *part,
                     const float *alpha, const float *lrow, const float *dv8, size_t tk, float psc,
                     size_t nq, size_t nk, size_t bk, int causal, size_t d, float *o, char *err,
                     size_t len);

/*
 * attention's sequential variants (naive, online, fp8 without :tc; bwd = 1:
 * the backward of naive and online), every GEMM a sequential FMA fold in A:
 * gpu/rows.h's k_attn_qk_row, k_attn_soft_row and k_attn_pv_row one thread
 * per query, then (bwd) k_attn_bwd_q_row per query and k_attn_bwd_k_row per
 * key. q (nq×d), k, v (nk×d) hold the loaded values (of C; fp8: e4m3 values
 * with dq8, dk8, dv8 their decode scales per tile of tq / tk rows); dO (nq×d,
 * values of S) the upstream gradient. Outputs: o (nq×d, S), lse (nq, C),
 * lost (per row, fp8), and with bwd dq (nq×d), dk and dv (nk×d, S).
 */
int gpu_dev_attn_seq(int variant, int bwd, gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, const float *q,
                     const float *k, const float *v, size_t nq, size_t nk, size_t d, size_t bk,
                     int causal, float sc, const float *dq8, size_t tq, const float *dk8, size_t tk,
                     const float *dv8, float psc, const float *dO, float *o, float *lse,
                     float *lost, float *dq, float *dk, float *dv, char *err, size_t len);

/*
 * fp8:bwd (emu/kernels/attention.c's fp8_backward) after the fp8 forward
 * (gpu_dev_attn_seq, variant 2): q8, k8, v8 the forward's e4m3 values with
 * their decode scales dq8, dk8, dv8 (C) per tile of tq / tk rows, L and o
 * the forward's outputs, do8 the upstream gradient quantised to its FP8
 * format with decode scale d_do (C). attn8_bwd_q (k_attn8_bwd_q_row per
 * query): p8a (P's e4m3 cast, in A) and ds (dS in C), nq×nk. The caller
 * chooses dS's scale sds (C) from ds's amax; attn8_bwd_rest
 * (k_attn8_bwd_dq_row per query, then k_attn8_bwd_k_row per key), DF the
 * format dS is cast to (GPU_K_E4M3 or GPU_K_E5M2): dq (nq×d), dk, dv (nk×d,
 * values of S) and lost (per query: the nonzero dS the cast flushed).
 */
int gpu_dev_attn8_bwd_q(gpu_kfmt C, gpu_kfmt A, const float *q8, const float *k8, const float *v8,
                        const float *dq8, size_t tq, const float *dk8, const float *dv8, size_t tk,
                        const float *lse, const float *o, const float *do8, float d_do, float sc,
                        float psc, size_t nq, size_t nk, size_t d, size_t bk, int causal,
                        float *p8a, float *ds, char *err, size_t len);
int gpu_dev_attn8_bwd_rest(gpu_kfmt S, gpu_kfmt C, gpu_kfmt A, gpu_kfmt DF, const float *q8,
                           const float *k8, const float *dq8, size_t tq, const float *dk8,
                           size_t tk, const float *do8, float d_do, float psc, float sds,
                           const float *p8a, const float *ds, size_t nq, size_t nk, size_t d,
                           int causal, float *dq, float *dk, float *dv, float *lost, char *err,
                           size_t len);

#ifdef __cplusplus
}
#endif

#endif
