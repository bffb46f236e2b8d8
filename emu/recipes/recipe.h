/*
 * recipe.h — scaling recipes: how a tensor is quantised to a small format
 * with per-block (and per-tensor) scales, as FP8/FP4 training does it.
 *
 * A recipe is data, like a format (docs/recipes.md has every rule and its
 * source). Quantising a tensor x (rows × cols, row-major) for a role:
 *
 *  1. x is held in the recipe's input format (fp32, or bf16 under RHT): the
 *     high-precision tensor a framework quantises. With RHT, each run of 16
 *     elements along the block direction becomes y = fp32(x · H), H =
 *     (1/4)·diag(s)·H16 (entries ±1/4, exact), each output the exact sum
 *     rounded once to fp32.
 *  2. Blocks: brows × bcols elements (0 = the whole dimension); a
 *     column-wise copy transposes the block shape (1×32 becomes 32×1).
 *     Ragged edges make smaller blocks. amax is max |x| over the block,
 *     its non-finite elements as amax_rule says.
 *  3. Per block, from its amax (max |x|; NaN if any element is NaN): the
 *     decode scale d, the value stored in the scale format, and the element
 *     multiplier m, by the recipe's scale rule (emu_rscale below).
 *  4. Elements: q = E(fp32(x · m)) (or E(fp32(x / d)) for EMU_RAPPLY_DIV),
 *     E the element format under the element rounding (RNE, or SR with
 *     sr_bits random bits), saturating when sat (OCP MX clamps, satfinite).
 *  5. The dequantised value is q · d · t exactly (t the second-level tensor
 *     decode scale, 1 without), every factor the stored value: what a
 *     scaled GEMM multiplies.
 *
 * Everything here is metadata arithmetic in fp32 done through the
 * emulator's own operations; the tests check every recipe against an
 * independent MPFR implementation of the sources' rules.
 */
#ifndef NANMAP_RECIPE_H
#define NANMAP_RECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/emu.h"

typedef enum { EMU_ROLE_ACT = 0, EMU_ROLE_WEIGHT, EMU_ROLE_GRAD, EMU_NROLES } emu_role;

/* How a block's scale comes from its amax a (fmax: the element format's
 * largest finite value, or the recipe's override; every step in fp32). */
typedef enum {
	/* no scale: q = E(x) */
	EMU_RSCALE_NONE = 0,
	/* s = fp32(fmax / a), m = s, d = fp32(1 / s); a = 0, inf or NaN: s = 1.
	 * TE's current scaling ("tensor") and the legacy per-tensor recipe. */
	EMU_RSCALE_FP32_MAX_OVER_AMAX,
	/* d = fp32(a / fmax), m = fp32(1 / d); d = 0 or not finite: m = d = 1.
	 * nanmap's legacy tile128 (dequantised by fp32(1 / m)). */
	EMU_RSCALE_FP32_RECIP,
	/* DeepGEMM's reference: a' = max(a, amin), s = fp32(fmax / a'),
	 * m = s, d = fp32(a' / fmax) (not exactly 1/s). */
	EMU_RSCALE_FP32_DEEPGEMM,
	/* TE's power-of-two current/block scaling: s = fp32(fmax / a) rounded
	 * down to a power of two (a = 0: s = 1), m = s, d = 1/s exactly. */
	EMU_RSCALE_POW2_DOWN,
	/* DeepGEMM UE8M0: d = 2^ceil(log2(fp32(max(a, amin) / fmax))), m = 1/d. */
	EMU_RSCALE_POW2_UP,
	/* OCP MX v1.0: d = 2^(floor(log2 a) − emax_elem) clamped to
	 * [2^-127, 2^127]; a = 0 reads as FLT_MIN (microxcaling), NaN gives a
	 * NaN scale (e8m0 0xFF); m = 1/d. emax_elem: the element format's emax. */
	EMU_RSCALE_E8M0_FLOOR,
	/* TE MXFP8: code = cvt.rp.satfinite.ue8m0(fp32(a · fp32(1 / fmax)))
	 * with TE's software rules (NaN 0xFF, inf 0xFE, 0 0x00), m =
	 * exp2f_rcp(code) (TE returns 1 for code 0); with scale_mode the
	 * conversion rounds by that mode instead of up. */
	EMU_RSCALE_E8M0_TE,
	/* NVFP4: S_enc = fminf(fp32(tbound·fmax / amax_tensor), FLT_MAX), 1 when
	 * amax_tensor or S_enc is 0; t = fp32(1/S_enc); d = e4m3_rn_satfinite(
	 * fp32(a · fp32(S_enc · fp32(1/fmax)))); m = fminf(fp32(1 / fp32(d · t)),
	 * FLT_MAX). 4over6 tries fmax 6 and 4 per block (below). */
	EMU_RSCALE_NVFP4,
	/* nanmap's legacy mx32: OCP floor (or rceil = 2^ceil(log2(a / fmax))
	 * in double) with scale 1 for a = 0 or not finite. */
	EMU_RSCALE_LEGACY_MX,
	/* the legacy delayed recipe: s = fp32(fmax·2^-margin / h), h the largest
	 * amax of the previous `history` rows (rows play training steps). */
	EMU_RSCALE_DELAYED,
	EMU_NRSCALES
} emu_rscale;

typedef enum {
	EMU_RAPPLY_MUL = 0, /* q = E(fp32(x · m)) */
	EMU_RAPPLY_DIV,     /* q = E(fp32(x / d)) (the reference implementations' x / sf) */
} emu_rapply;

typedef enum { EMU_R46_NONE = 0, EMU_R46_MAE, EMU_R46_MSE } emu_r46;

/* How a block's (and the tensor's) amax treats non-finite elements. */
typedef enum {
	EMU_AMAX_NAN = 0, /* a NaN element makes the amax NaN (torch.amax: microxcaling,
	                     DeepGEMM, nanmap's legacy recipes) */
	EMU_AMAX_FMAXF,   /* amax = fmaxf(amax, |x|) from 0: a NaN element is skipped,
	                     inf kept (TE's CUDA kernels) */
	EMU_AMAX_FINITE,  /* only finite elements count (TE kernels that test isfinite) */
} emu_ramax;

typedef struct emu_recipe {
	char name[64];            /* canonical spec, e.g. "nvfp4" or "mxfp8:e5m2" */
	emu_format elem;          /* element format */
	emu_format scale_fmt;     /* where the block scale is stored (e8m0, e4m3, fp32) */
	emu_rscale rule;
	emu_rapply apply;
	emu_mode scale_mode;      /* E8M0_TE: the ue8m0 conversion's rounding (EMU_UP) */
	int brows[EMU_NROLES], bcols[EMU_NROLES]; /* block shape per role; 0 = whole dim */
	emu_mode elem_mode[EMU_NROLES];           /* EMU_RNE or EMU_SR per role */
	int sr_bits;              /* random bits of SR, 1..32 (32: the emulator's EMU_SR) */
	bool sat;                 /* elements saturate to ± max finite */
	bool rht;                 /* random Hadamard transform on column-wise copies */
	bool rht_all;             /* ... and on row-wise copies too */
	double fmax;              /* the element max the scale rule aims at (0: elem.max) */
	double tbound;            /* NVFP4: the scale format's max in S_enc (448; 256 for 4over6) */
	double amin;              /* DeepGEMM's amax clamp (1e-4 as fp32), else 0 */
	emu_r46 four_over_six;    /* NVFP4 4over6: per block, scale to 6 or to 4 */
	emu_ramax amax_rule;      /* non-finite elements in the amax */
	int delayed_len, delayed_margin; /* EMU_RSCALE_DELAYED */
	bool ftz_scale;           /* d is read as 0 when subnormal in fp32 (E8M0 2^-127
	                             under FTZ): the block dequantises to zeros */
} emu_recipe;

/* Built-in recipe names, for listings: NULL-terminated. */
extern const char *const emu_recipe_names[];
/* A one-line description of a built-in, or NULL. */
const char *emu_recipe_describe(const char *name);

/* Parse a recipe: a built-in name ("nvfp4", "nvfp4:4over6", "mxfp8",
 * "mxfp8:e5m2", "mxfp6:e3m2", "mxfp6:e2m3", "mxfp4", "mx:floor" variants,
 * "deepseek", "deepseek:pow2", "deepseek:ue8m0", "tensor", "delayed",
 * "tile128", "mx32:floor", "mx32:rceil", "none"), optionally followed by
 * ",key=value" overrides, or a full spec of keys:
 *   elem=FORMAT scale=e8m0|e4m3|fp32 rule=RULE apply=mul|div
 *   block=RxC (every role) act=RxC weight=RxC grad=RxC (0 = whole dim)
 *   round=rne|sr (every role) grad_round=rne|sr sr_bits=N sat=yes|no
 *   rht=yes|no|all fmax=X tbound=X amin=X 4over6=no|mae|mse
 *   scale_round=up|down|rne|rna ftz_scale=yes|no history=N margin=N
 *   amax=nan|fmaxf|finite
 * RULE: none fp32 recip deepgemm pow2down pow2up floor te nvfp4 legacy_mx
 * delayed. On error writes a one-line reason naming the spec and returns
 * non-zero. */
emu_status emu_recipe_parse(const char *spec, emu_recipe *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* The canonical spec of r (every key), parseable back to the same recipe. */
void emu_recipe_spec(const emu_recipe *r, char *buf, size_t len);
const char *emu_role_name(emu_role r);
emu_role emu_role_by_name(const char *name); /* EMU_NROLES if unknown */

/* One quantised tensor. Arrays are malloc'ed; emu_qtensor_free frees them. */
typedef struct emu_qtensor {
	size_t rows, cols;
	bool colwise;       /* blocks run down the columns (the column-wise copy) */
	size_t brows, bcols; /* the block shape used (after transposing for colwise) */
	size_t nbr, nbc;    /* blocks down and across: nblocks = nbr · nbc */
	double *x;          /* rows·cols: the input as the recipe saw it (fp32-held, after RHT) */
	emu_bits *code;     /* rows·cols element encodings */
	double *q;          /* rows·cols element values (decoded codes) */
	double *deq;        /* rows·cols dequantised values q · d · t (exact) */
	uint8_t *flags;     /* rows·cols flags of the element conversion */
	double *amax;       /* per block (row-major over blocks) */
	double *d;          /* per block: decode scale as stored */
	double *m;          /* per block: element multiplier */
	emu_bits *dcode;    /* per block: d's encoding in scale_fmt */
	unsigned *dflags;   /* per block: flags of the scale's own conversion */
	bool *four;         /* per block, 4over6: true when the block scaled its max to 4 */
	double tensor_amax; /* amax of the whole tensor (after RHT) */
	double s_enc, t;    /* NVFP4: S_enc and t = fp32(1/S_enc); 1 and 1 otherwise */
	int elem_p;         /* the element format's precision (for the 2^-p statistic) */
	emu_format elem;    /* the element format (a scaled GEMM's operands may differ) */
} emu_qtensor;

/* Quantise x (rows × cols) by r for role (colwise: the column-wise copy).
 * seed keys SR: element i (row-major index) draws emu_sr_bits(seed, i).
 * Returns 0, or -1 when out of memory (out left empty). Never fails on
 * values: NaN, inf, zero blocks and empty tensors follow the rule's source. */
int emu_quantize(const emu_recipe *r, emu_role role, bool colwise, const double *x, size_t rows,
                 size_t cols, uint64_t seed, emu_qtensor *out) __attribute__((warn_unused_result));

/* A part of a larger tensor, for streaming a checkpoint: x holds rows
 * [row0, row0 + rows) of a tensor of total_rows rows (row0 and rows
 * multiples of the block's and RHT's row extent, except at the end), SR
 * index of element (i, j) is index0 + (row0 + i)·cols + j, and tensor_amax is the
 * whole tensor's (emu_recipe_tensor_amax; NVFP4's S_enc needs it; NaN:
 * take this part's). The delayed rule's history covers this part only. */
typedef struct emu_qpart {
	size_t row0, total_rows;
	uint64_t seed;
	double tensor_amax;
	uint64_t index0; /* 0 for a tensor alone; a kernel's second input continues the count */
} emu_qpart;
int emu_quantize_part(const emu_recipe *r, emu_role role, bool colwise, const double *x,
                      size_t rows, size_t cols, const emu_qpart *part, emu_qtensor *out)
    __attribute__((warn_unused_result));
/* emu_quantize_part with the delayed rule's history given from outside:
 * hist is the largest amax of the steps before (a trainer's history across
 * its steps; 0 when there is none, which gives scale 1), for every block. */
int emu_quantize_hist(const emu_recipe *r, emu_role role, bool colwise, const double *x,
                      size_t rows, size_t cols, const emu_qpart *part, double hist,
                      emu_qtensor *out) __attribute__((warn_unused_result));
/* The amax of x as r sees it for role and copy (fp32-held, after RHT). */
double emu_recipe_tensor_amax(const emu_recipe *r, emu_role role, bool colwise, const double *x,
                              size_t rows, size_t cols);
void emu_qtensor_free(emu_qtensor *q);
/* Does r apply the RHT to this copy of a role's tensor? */
bool emu_recipe_rht_applies(const emu_recipe *r, emu_role role, bool colwise);
/* Undo the RHT of that copy on v (rows × cols, fp32 values, dequantised):
 * each run of 16 becomes v · Hᵀ (H orthogonal), each output the exact sum
 * rounded once to fp32, so the values compare with the tensor before the
 * transform. Nothing where the RHT does not apply. */
void emu_recipe_unrht(const emu_recipe *r, emu_role role, bool colwise, double *v, size_t rows,
                      size_t cols);

/* One block's scale by r's rule from its amax a: the decode scale *d (as
 * stored, its encoding in *dcode) and the element multiplier *m. hist is
 * the delayed rule's amax history, s_enc and t the NVFP4 tensor scales (1
 * and 1 otherwise), fmax the element max aimed at (0: r's). emu/engine/scale.c
 * scales the kernels' inputs with it. */
void emu_recipe_block_scale(const emu_recipe *r, double a, double hist, double fmax, double s_enc,
                            double t, double *d, double *m, emu_bits *dcode);

/* Round one fp32 value v to f by n-bit SR (the dither form hardware uses):
 * with F the first n bits of v's fraction below f's last place and u the top
 * n bits of emu_sr_bits(seed, index), round away from zero iff F + u >= 2^n.
 * Bias toward zero: up to 2^-n of an ulp. n = 32 is the emulator's EMU_SR
 * (emu_from_double), nanmap's one definition of full SR. */
double emu_round_sr_bits(const emu_format *f, double v, int n, bool sat, uint64_t seed,
                         uint64_t index, unsigned *flags);
/* The expected value of emu_round_sr_bits(f, v, n, ...) over its 2^n equally
 * likely dithers, computed exactly (no sampling): it rounds away with
 * probability F/2^n. bounded: a rounding away past f's largest value lands
 * on it (saturation); unbounded: on the next point of the grid continued
 * past the largest, so the result is the rounding's own bias without the
 * saturation's. n above 32 counts as 32. */
double emu_round_sr_mean(const emu_format *f, double v, int n, bool bounded);

/* What quantisation did to a tensor (nanmap quant's report; docs/recipes.md
 * defines each number). Elements whose input is NaN or infinite are
 * excluded from the error statistics and counted in nan_in / inf_in. Parts
 * of one tensor accumulate (emu_qstats_add), then emu_qstats_finish. */
typedef struct emu_qstats {
	uint64_t n, nan_in, inf_in;
	uint64_t saturated; /* the element conversion overflowed: clamped (or inf/NaN without sat) */
	uint64_t flushed;   /* x nonzero, q zero */
	uint64_t lost;      /* x nonzero, q zero or its relative error >= 1 (no significant bit) */
	uint64_t within;    /* relative error below 2^-p of the element format */
	uint64_t nonfinite_out; /* deq inf or NaN from a finite input */
	double amax, sqnr_db;   /* 10·log10(Σx² / Σ(x−deq)²); +inf when exact */
	double max_rel, mean_rel; /* over finite nonzero x */
	double bias, bias_se;     /* mean signed error (deq − x) / amax, and its standard error */
	uint64_t blocks, zero_scale, nan_scale, inf_scale; /* blocks; those whose d is 0 / NaN / inf */
	uint64_t exp_hist[300];   /* blocks by floor(log2(d·t)) + 150 (finite nonzero) */
	/* running sums (emu_qstats_finish reads them) */
	double sum_x2, sum_e2, sum_e, sum_rel;
	uint64_t n_err, n_rel;
} emu_qstats;

void emu_qstats_init(emu_qstats *st);
/* Add a quantised part against the original input x0 (before fp32 and RHT;
 * pass q->x to judge the element quantisation alone). */
void emu_qstats_add(emu_qstats *st, const emu_qtensor *q, const double *x0);
void emu_qstats_finish(emu_qstats *st);
/* Per block: SQNR in dB of that block against x0 (for --per-block). */
double emu_qblock_sqnr(const emu_qtensor *q, const double *x0, size_t block);

#endif
