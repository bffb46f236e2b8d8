/*
 * tcscaled.h — Blackwell's block-scaled Tensor Core instructions
 * (tcgen05.mma kind::mxf8f6f4 and kind::mxf4nvf4) as dot products with C,
 * and a GEMM driver that runs quantised matrices through them (or through
 * Hopper's FP8 wgmma with DeepSeek-style software scaling).
 *
 * The rules are MMA-Sim's (microsoft/MMA-Sim, mmasim/simulator/arithmetic.py,
 * nv_fused_dot_add and nv_fused_dot_add_with_block_scale; Xie et al.,
 * arXiv 2511.10909), validated by its authors on B200 hardware; we have no
 * block-scaled hardware vectors of our own. docs/gemm.md is the
 * specification, including the corners MMA-Sim leaves open and how we
 * close them.
 *
 * Every value is s·2^e with subnormals pinned at their format's minimum
 * exponent and a zero read as 0·2^-126 (MMA-Sim's extract_significand_
 * exponent): the exponent e, not the magnitude, decides alignment.
 *
 * Both kinds are presets of the Tensor Core model (emu/kernels/tc.h,
 * "b200-mxf8f6f4" and "b200-mxf4nvf4", run by emu_tc_dot_scaled), so they
 * have its two implementations: emu_tcs_* (integer arithmetic, tc.c) and
 * emu_tcs_mp_* (MPFR, tc_mp.c, written independently); tests/
 * check_tcscaled.c proves they agree bit for bit and flag for flag.
 */
#ifndef NANMAP_TCSCALED_H
#define NANMAP_TCSCALED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/emu.h"
#include "emu/recipes/recipe.h"

#define EMU_TCS_K_F8F6F4 32 /* products per kind::mxf8f6f4 instruction */
#define EMU_TCS_K_F4 64     /* products per kind::mxf4nvf4 instruction */
#define EMU_TCS_GROUP 16    /* kind::mxf4nvf4 sums products exactly in groups of 16 */

/* The fp32 NaN both kinds return (MMA-Sim's 0x7FFF_FFFF). */
#define EMU_TCS_NAN 0x7fffffffu

/*
 * kind::mxf8f6f4: D = sum_{i<32} (a_i·b_i)·2^(ea+eb) + c, one fused sum.
 * fa, fb: element formats (e4m3, e5m2, e3m2, e2m3, e2m1, each by its
 * descriptor); sa, sb: ue8m0 codes (0xFF is NaN); c and D: binary32.
 * Every product keeps its exponent plus both scale exponents, C its own;
 * each of the 33 terms is truncated toward zero to 25 fraction bits below
 * the largest exponent; the exact sum is rounded toward zero to fp32 (an
 * exact sum of 2^128 or more gives inf). A NaN anywhere (0xFF scales
 * included), inf·0 or infinities of both signs give EMU_TCS_NAN (invalid
 * when an inf·0 or inf − inf occurs, a NaN beside it or not); otherwise an
 * infinity gives that infinity. A zero result is +0. Flags: inexact when a term or the result lost
 * bits, underflow when the result is tiny and the rounding inexact, overflow at 2^128. Formats
 * other than those five: EMU_TCS_NAN with invalid.
 */
emu_result emu_tcs_mxf8f6f4(const emu_format *fa, const emu_format *fb, const emu_bits *a,
                            const emu_bits *b, emu_bits sa, emu_bits sb, emu_bits c);
emu_result emu_tcs_mp_mxf8f6f4(const emu_format *fa, const emu_format *fb, const emu_bits *a,
                               const emu_bits *b, emu_bits sa, emu_bits sb, emu_bits c);

/*
 * kind::mxf4nvf4: 64 e2m1 products; sf the scale format (e8m0 with block
 * 16 or 32, or e4m3 read as ue4m3, its sign bit dropped, with block 16):
 * sa[j], sb[j] scale products [j·block, (j+1)·block). Each group of 16 products is summed
 * exactly, multiplied by both scales' significands and given the sum of
 * their exponents; the four group terms and c are truncated toward zero
 * to 35 fraction bits below the largest exponent, summed exactly and
 * rounded toward zero to fp32. A NaN scale or a NaN c gives EMU_TCS_NAN; an
 * infinite c gives c (MMA-Sim raises there). Flags as above.
 * Another scale format or block: EMU_TCS_NAN with invalid.
 */
emu_result emu_tcs_mxf4nvf4(const emu_format *sf, int block, const emu_bits *a, const emu_bits *b,
                            const emu_bits *sa, const emu_bits *sb, emu_bits c);
emu_result emu_tcs_mp_mxf4nvf4(const emu_format *sf, int block, const emu_bits *a,
                               const emu_bits *b, const emu_bits *sa, const emu_bits *sb,
                               emu_bits c);

/* ---- the GEMM ---- */

typedef enum {
	EMU_GEMM_BLACKWELL = 0, /* tcgen05 block-scaled kinds, C chained in the accumulator */
	EMU_GEMM_HOPPER,        /* h100 FP8 wgmma per 128-long K chunk, fp32 promotion */
	EMU_GEMM_NMODELS
} emu_gemm_model;

const char *emu_gemm_model_name(emu_gemm_model m);
emu_gemm_model emu_gemm_model_by_name(const char *s); /* EMU_GEMM_NMODELS if unknown */

/* Hopper's promotion: d = fp32(acc + fp32(r · s)) (false) or one fp32 FMA
 * fma(r, s, acc) (true), s = fp32(a_scale · b_scale), r the chunk's result. */
typedef struct emu_gemm_opts {
	emu_gemm_model model;
	bool hopper_fma;
} emu_gemm_opts;

/*
 * Quantise A (M×K, row-major, role act, blocks along K) and B (K×N,
 * row-major, role weight, the column-wise copy: blocks along K) by r (B
 * by rb when not NULL: mixed operands such as MXFP8 e4m3 × e5m2), the
 * way a forward GEMM consumes them: RHT off (TE transforms only wgrad's
 * column-wise operands). seed keys SR; B continues A's SR count.
 * Returns 0 or -1 (out of memory).
 */
int emu_gemm_quantize(const emu_recipe *r, const emu_recipe *rb, const double *A, const double *B,
                      size_t M, size_t N, size_t K, uint64_t seed, emu_qtensor *qa, emu_qtensor *qb)
    __attribute__((warn_unused_result));

/*
 * D (M×N, row-major, binary32 values as doubles) = qa · qb through the
 * model. Blackwell: e8m0-scaled recipes with elements e4m3/e5m2/e3m2/e2m3/
 * e2m1 run kind::mxf8f6f4 per 32 along K; e4m3-scaled e2m1 (NVFP4) runs
 * kind::mxf4nvf4 per 64 with ue4m3 scales per 16 and D = fp32(alpha · acc),
 * alpha = fp32(t_A · t_B). Hopper: e4m3/e5m2 elements, any scale stored in
 * fp32, per 128 along K (see emu_gemm_opts). A K tail pads with zero
 * elements (and zero scales for whole missing groups), as TMA fills.
 * EMU_ERR_BAD_SPEC with one line in err when the recipe does not fit the
 * model (element or scale format, blocks that do not line up with the
 * instruction's scale granularity). Allocates nothing.
 */
emu_status emu_scaled_gemm(const emu_qtensor *qa, const emu_qtensor *qb, const emu_recipe *r,
                           const emu_gemm_opts *o, double *D, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* D against the exact product of X (M×K) and Y (K×N), each exact dot
 * product correctly rounded to double by MPFR (mpfr_sum of exact products). */
typedef struct emu_gemm_err {
	double max_rel;   /* max |D − R| / |R| over finite D and nonzero R */
	double sqnr_db;   /* 10·log10(Σ R² / Σ (D − R)²) over finite D; +inf when equal */
	size_t nonfinite; /* D inf or NaN */
	size_t n_inf, n_nan;
} emu_gemm_err;

/* Returns 0 or -1 (out of memory). */
int emu_gemm_compare(const double *D, const double *X, const double *Y, size_t M, size_t N,
                     size_t K, emu_gemm_err *out) __attribute__((warn_unused_result));

#endif
