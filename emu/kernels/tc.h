/*
 * tc.h — a bit-exact model of NVIDIA Tensor Core dot products (block FMA).
 *
 * The model (Khattak & Mikaitis, "Accurate Models of NVIDIA Tensor Cores",
 * arXiv 2512.07004; docs/tensor-cores.md is the specification) computes
 * D = sum a_i*b_i + C in blocks of k products:
 *  1. every product is exact; input subnormals are kept;
 *  2. the products and C are aligned to the largest of their alignment
 *     exponents (floored at exp_floor) and each is chopped toward zero to
 *     23 + neab fraction bits below it (no guard, round or sticky bit);
 *  3. the chopped terms are summed exactly and the sum is rounded once, with
 *     final_mode, to the block format (the output format, or a narrower
 *     precision block_prec);
 *  4. a longer vector is cut into blocks; each block's result is the next
 *     block's C. With promote_every = N, every N products the partial sum is
 *     added into a binary32 accumulator with an RNE addition and the chain
 *     restarts from +0 (DeepSeek-V3 §3.3.2).
 * A block (one instruction) may be split into chained sub-blocks over an
 * interleave of its products, and C may join once after the block's last
 * sub-block with its own rounding (c_late): the shape of code a compiler
 * emits for an instruction the unit lacks (Hopper's FP8 mma.sync, FACTS §3).
 *
 * Two implementations: emu_tc_dot (integer arithmetic) and emu_tc_mp_dot
 * (MPFR, written independently); the tests prove they agree bit for bit and
 * flag for flag, and that the presets reproduce measured hardware vectors.
 */
#ifndef NANMAP_TC_H
#define NANMAP_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/emu.h"

/* How a block's products meet the accumulator (the spec's acc key). */
typedef enum {
	EMU_TC_ACC_BLOCK = 0, /* NVIDIA's block FMA: the terms chopped to one window
	                         below the largest exponent, summed exactly and
	                         rounded once (the model above) */
	EMU_TC_ACC_FMA,       /* one IEEE fused multiply-add per product into the
	                         accumulator, in out (AMD CDNA's fp32 MFMA) */
	EMU_TC_ACC_PAIRWISE,  /* each block's products rounded to out, summed as a
	                         pairwise tree of IEEE additions in out, the block's
	                         sum then added to the accumulator (CDNA1/2 f16, bf16) */
	EMU_TC_ACC_RD,        /* the products fused (chopped to 23 + neab bits below
	                         their largest exponent); that sum and C floored to
	                         31 and 24 bits below the larger of the two exponents,
	                         added, rounded once (CDNA3, MMA-Sim's
	                         amd_fused_dot_rd_add; split=2: even and odd products
	                         fused apart, its FP8 kinds) */
} emu_tc_acc;

/* exp_floor value meaning "no floor". */
#define EMU_TC_NO_FLOOR (-100000)

/* Limits that keep the integer model exact (see tc.c). */
#define EMU_TC_NEAB_MIN (-22)
#define EMU_TC_NEAB_MAX 36
#define EMU_TC_K_MAX 65536

typedef struct emu_tc_model {
	int k;                /* products per block FMA, 1..EMU_TC_K_MAX */
	int neab;             /* extra alignment bits: terms keep 23 + neab fraction bits */
	emu_mode final_mode;  /* rounding of each block's sum: rne, rtz, up or down */
	bool c_preround;      /* C is first rounded (RNE) to the output format */
	int exp_floor;        /* least alignment exponent, or EMU_TC_NO_FLOOR */
	int block_prec;       /* 0: blocks round to the output format; else to this
	                         many bits (2..p_out) in the output's exponent range */
	size_t promote_every; /* 0: never; N: fp32 promotion every N products */
	bool sat;             /* an overflowing block gives ±max instead of ±inf */
	bool c_late;          /* C joins after the products: each block rounds its
	                         products' sum (its sub-blocks chained, the first
	                         without C), then adds C with one more rounding,
	                         in c_round */
	emu_mode c_round;     /* rounding of that addition: rne, rtz, up or down */
	int split;            /* sub-blocks per block, chained, 1 = none: sub-block j
	                         takes the block's products i with
	                         (i / group) mod split == j */
	int group;            /* run length of that interleave; k must be a
	                         multiple of split * group */
	/* Three rules no published vector decides (docs/tensor-cores.md), each
	 * settled for sm_90 by the H200 (docs/gpu-results.md): */
	bool c_emin;   /* csub=emin: C (and a block's partial passed on)
	                  aligns at no less than the output's emin, so a
	                  subnormal fp16 C counts as 2^-14 (H200; MMA-Sim);
	                  false: at its true exponent */
	bool zero_pos; /* zsign=pos: a block's zero result is +0 whatever
	                  the signs (H200; MMA-Sim); false: IEEE's sign */
	bool nan_ones; /* nan=ones: a NaN result is 0x7fff / 0x7fffffff
	                  (H200; MMA-Sim); false: the output's canonical NaN */
	bool zero_align; /* zalign=1: a zero operand counts as 2^-126 and a
	                    zero product (and a zero C) takes part in choosing
	                    the alignment point (MMA-Sim's reading; the H200
	                    says no for sm_90); 0: zeros take no part */
	emu_tc_acc acc;  /* acc=block|fma|pairwise|rd */
	bool ftz;        /* ftz=1 (fma and pairwise): subnormal inputs and C
	                    read as +0, every operation's subnormal result
	                    flushed to a zero of its sign (CDNA2's f16, bf16) */
	int gsum;        /* gsum=G > 1 (acc=block, split 1): each run of G
	                    products (from the block's start) is summed exactly
	                    first, and that sum times its scales is one term
	                    whose alignment exponent is its scales' alone (0
	                    without scales): kind::mxf4nvf4, G = 16. 0 or 1:
	                    every product is a term of its own */
} emu_tc_model;

/*
 * Block scales (tcgen05's kind::mxf8f6f4 and kind::mxf4nvf4, sm_120's
 * mma.block_scale): product i of a dot is multiplied by the magnitudes of
 * sa[i / block] and sb[i / block], encodings of fmt (a sign bit is ignored:
 * e4m3 scales read as ue4m3). The scaled product is one term, its alignment
 * exponent e(a)+e(b)+e(sa)+e(sb) (a zero scale's e is −126); a NaN scale
 * makes its products NaN. fmt must have no infinities and p <= 8; with
 * gsum > 1, block must be a multiple of gsum. Without scales every scale
 * is 1.
 */
typedef struct emu_tc_scales {
	const emu_format *fmt;
	size_t block;
	const emu_bits *sa, *sb;
} emu_tc_scales;

/* What the model does when nothing is said: k=16, neab=2, final=rtz, no C
 * pre-rounding, no floor, the output's precision, no promotion, overflow to
 * inf, C inside the block (c_round rne for when it is not), no split, C at its
 * true exponent, IEEE zero signs, the canonical NaN, zeros out of the
 * alignment, the block FMA, no flushing, no exact groups. */
emu_tc_model emu_tc_default(void);

/*
 * The measured model of a GPU ("v100", "turing", "a100", "h100", "h200",
 * "ada", "l40s", "b200", "rtx5090", "b200-tcgen05": B200's tcgen05 rule, C
 * inside the fused sum; "h100-mma", "h200-mma": sm_90's mma.sync, whose FP8
 * kinds ptxas emulates with fp16 HMMAs; "h100-wgmma", "h200-wgmma": wgmma,
 * FP8 -> fp16 native, where "h100"/"h200" FP8 -> fp16 is mma.sync's; AMD's
 * "mi100", "mi250x", "mi300x"; the block-scaled kinds "b200-mxf8f6f4" and
 * "b200-mxf4nvf4", which emu_tc_dot_scaled runs with scales, and their
 * sm_120 mma.block_scale aliases "rtx5090-mxf8f6f4", "rtx5090-mxf4nvf4")
 * for inputs in and output out (matched on the
 * descriptor's p, ebits and bias: fp32, fp16, bf16, tf32, e4m3, e5m2,
 * e4m3fnuz, e5m2fnuz, e3m2, e2m3, e2m1 in; fp32 or fp16 out;
 * docs/tensor-cores.md has the table).
 * EMU_ERR_UNKNOWN_FORMAT: the GPU does not take that pair; EMU_ERR_BAD_SPEC:
 * no such GPU.
 */
emu_status emu_tc_preset(const char *gpu, const emu_format *in, const emu_format *out,
                         emu_tc_model *m) __attribute__((warn_unused_result));

/*
 * A model from text: comma-separated items, optionally starting with a GPU
 * name (its preset for in/out), then key=value overrides:
 *   k=N  neab=N  final=rne|rtz|rz|up|down  cpre=0|1  floor=N|none
 *   prec=N|out  promote=N  sat=0|1  clate=0|1  cround=rne|rtz|rz|up|down
 *   split=N  group=N  csub=true|emin  zsign=ieee|pos  nan=canon|ones
 *   zalign=0|1  acc=block|fma|pairwise|rd  ftz=0|1  gsum=N
 * e.g. "h100", "h100,promote=128", "k=16,neab=2,final=rz,cpre=1".
 * On error writes one line into err and returns non-zero.
 */
emu_status emu_tc_parse(const char *spec, const emu_format *in, const emu_format *out,
                        emu_tc_model *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The canonical spec string of m ("k=16,neab=2,final=rtz,..."); zalign, acc,
 * ftz and gsum are written only when not their defaults. */
const char *emu_tc_spec(const emu_tc_model *m, char *buf, size_t len);

/*
 * Whether m, in and out can be run: the limits above, final_mode and
 * c_round not rna/sr, split and group >= 1 with k a multiple of split*group,
 * in with a sign and a zero, out an IEEE-style format (sign, inf, NaN,
 * subnormals) inside binary32's range; acc other than block without late C,
 * block precision or floor, split 1 (rd: 1, or 2 with group 1); fma and
 * pairwise with every value of in exact in out; ftz only with fma and
 * pairwise; gsum > 1 only with acc=block, split 1, k a multiple of gsum and
 * an in narrow enough for a group's exact sum: 2(emax − emin + p) +
 * ceil(log2 gsum) <= 46 and 2(emax + 1) + ceil(log2 gsum) + neab <= 36
 * (e4m3, e3m2, e2m3, e2m1 with gsum 16 and neab <= 12). On error writes one
 * line into err.
 */
emu_status emu_tc_check(const emu_tc_model *m, const emu_format *in, const emu_format *out,
                        char *err, size_t errlen) __attribute__((warn_unused_result));

/*
 * A kernel's Tensor Core set-up (accum's dot:tc, matmul tc, attention's
 * :tc), written once: *out is acc where a model can write it (emu_tc_check's
 * conditions on out), else fp32; *m the model spec names (NULL:
 * emu_tc_default()), with k (> 0) and promote (>= 0) in place of its own,
 * checked for in -> *out. On error one line naming the kernel ("matmul: tc
 * model 'x': ...", "matmul: tc with fp16 -> fp32: ...").
 */
emu_status emu_tc_setup(const char *kernel, const char *spec, const emu_format *in,
                        const emu_format *acc, int k, long long promote, emu_tc_model *m,
                        const emu_format **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/*
 * D = sum_{i<K} a[i]*b[i] + c under m. a and b are encodings of in, c is a
 * binary32 encoding, the result an encoding of out with the OR of every
 * step's flags (chopping a term counts as inexact). m, in and out must pass
 * emu_tc_check (otherwise: out's NaN with invalid).
 * Specials: a NaN anywhere, 0*inf, or infinities of both signs give NaN
 * (invalid unless a NaN operand); otherwise an infinity gives that infinity.
 */
emu_result emu_tc_dot(const emu_tc_model *m, const emu_format *in, const emu_format *out,
                      const emu_bits *a, const emu_bits *b, size_t K, emu_bits c);

/*
 * The same with A's elements encodings of in_a and B's of in_b: the mixed
 * FP8 GEMMs of FP8 training (e4m3 × e5m2 in dgrad and wgrad, as Transformer
 * Engine's HYBRID recipe and cuBLASLt's FP8 kinds multiply). Each product is
 * exact whatever the two formats; the model (its preset taken for in_a) is
 * otherwise unchanged. emu_tc_dot is emu_tc_dot2 with in_a = in_b.
 */
emu_result emu_tc_dot2(const emu_tc_model *m, const emu_format *in_a, const emu_format *in_b,
                       const emu_format *out, const emu_bits *a, const emu_bits *b, size_t K,
                       emu_bits c);

/*
 * The same with block scales s (NULL: emu_tc_dot2): the block-scaled kinds
 * run through the same model (presets "b200-mxf8f6f4", "b200-mxf4nvf4").
 * s must pass emu_tc_check_scales (otherwise: out's NaN with invalid).
 */
emu_result emu_tc_dot_scaled(const emu_tc_model *m, const emu_format *in_a, const emu_format *in_b,
                             const emu_format *out, const emu_bits *a, const emu_bits *b, size_t K,
                             emu_bits c, const emu_tc_scales *s);

/*
 * A GEMM's block FMAs, with the work of every block that depends only on the
 * model and the formats done once (emu_tc_plan_init), and each operand split
 * once (emu_tc_split) instead of once per output element it meets.
 *
 * An operand split: |x| = P·2^(e − p + 1), e = max(floor(log2|x|), emin),
 * the significand an integer at the format's grid; a zero has P = 0 and e =
 * EMU_TC_ZERO_E (far below every product's exponent), a NaN or an infinity
 * is marked special.
 */
#define EMU_TC_ZERO_E (-30000)
typedef struct emu_tc_opnd {
	uint32_t P;
	int16_t e;
	uint8_t neg;     /* the sign bit */
	uint8_t special; /* a NaN or an infinity */
} emu_tc_opnd;

/* o[i] for the encodings x[i] of in, i < n. */
void emu_tc_split(const emu_format *in, const emu_bits *x, size_t n, emu_tc_opnd *o);

/* What every block of one model, input and output format shares: the model
 * (promotion off: a plan runs one block), the block's rounding format and
 * environments, and whether blocks may read split operands (direct: the
 * block FMA without split, groups or scales, C inside the block, zeros out
 * of the alignment, one input format, and a block whose chopped terms sum
 * in 64 bits). Made by emu_tc_plan_init or emu_tc_plan_init2; the fields
 * are the model's code's. */
typedef struct emu_tc_plan {
	emu_tc_model m;
	const emu_tc_scales *sc;
	const emu_format *ina, *inb, *out, *fp32;
	emu_format blk; /* the format each block rounds to */
	emu_env env;    /* final_mode (and sat) */
	emu_env env_c;  /* c_round (and sat): the late addition of C */
	bool direct;
} emu_tc_plan;

/* false unless m, in and out pass emu_tc_check. */
bool emu_tc_plan_init(emu_tc_plan *p, const emu_tc_model *m, const emu_format *in,
                      const emu_format *out);

/* The same with A in ina and B in inb, and with scales of s->fmt, one per
 * s->block products (NULL: none; s must outlive p, its arrays are not
 * read). A scaled plan is for emu_tc_plan_scaled only; its direct: the block
 * FMA without split or late C, at most 64 terms a block. false unless
 * emu_tc_check (and emu_tc_check_scales) pass. */
bool emu_tc_plan_init2(emu_tc_plan *p, const emu_tc_model *m, const emu_format *ina,
                       const emu_format *inb, const emu_format *out, const emu_tc_scales *s);

/* One block of an unscaled plan: emu_tc_dot2(m with promote_every 0, ina,
 * inb, out, a, b, n, c), n <= k, bit for bit and flag for flag. sa and sb
 * (NULL: none) are a and b split;
 * a direct plan reads them instead of a and b for a block whose operands and
 * C are finite and whose products are not all zero. */
emu_result emu_tc_plan_block(const emu_tc_plan *p, const emu_bits *a, const emu_bits *b,
                             const emu_tc_opnd *sa, const emu_tc_opnd *sb, size_t n, emu_bits c);

/* The same block as a value, the flags ORed into *flags: c a value of the
 * output format (or a zero, an infinity or NaN), which C's pre-rounding
 * leaves as it is, and the result emu_decode(out, emu_tc_plan_block(...)),
 * so that a chain of blocks passes its accumulator on without encoding it. */
double emu_tc_plan_value(const emu_tc_plan *p, const emu_bits *a, const emu_bits *b,
                         const emu_tc_opnd *sa, const emu_tc_opnd *sb, size_t n, double c,
                         unsigned *flags);

/*
 * Several dot products' blocks side by side (a GEMM's outputs of one row):
 * EMU_TC_LANES lanes, lane l's product i xa[i] · xb[i·sb + l] (A's row
 * shared, B read k-major), its alignment exponent ea[i] + eb[i·sb + l].
 * The block's terms are binary64 values: a product of two operands of at
 * most 26 bits is exact, chopping it to the window is trunc() of its value
 * scaled by a power of two, and the chopped terms, each below 2^(25+neab),
 * sum exactly; the rounding of that sum to the block's format is a cut of
 * its significand in the normal range. So the lanes are computed as
 * emu_tc_plan_value computes each, bit for bit, flag for flag.
 */
#define EMU_TC_LANES 8
#define EMU_TC_LANES_K 64 /* the most products a lanes' block takes */

/* Whether p's blocks may run as lanes: a direct plan without scales,
 * k <= EMU_TC_LANES_K, final rounding rne or rtz, products exact in
 * binary64 and far inside its range, and k + 1 chopped terms summing below
 * 2^53. */
bool emu_tc_plan_lanes_ok(const emu_tc_plan *p);

/* The lanes' operands: x[i] the value of o[i] (in's operand, split; NaN
 * for a NaN or an infinity, whose block the lanes leave to
 * emu_tc_plan_value), e[i] its alignment exponent (EMU_TC_ZERO_E for a
 * zero). */
void emu_tc_split_lanes(const emu_format *in, const emu_tc_opnd *o, size_t n, double *x,
                        int32_t *e);

/* One block of n <= k products in every lane, C in c[l] (a value of the
 * output format) replaced by the block's value, and inexact[l] set to 1
 * when the block raised inexact (the only flag a lane's block raises), 0
 * when it raised none. Returns the mask of lanes (bit l) it left: an
 * operand or C not finite, every product zero, or a sum that is tiny,
 * overflows or lies outside binary64's comfortable range. Their c[l] and
 * inexact[l] are untouched: emu_tc_plan_value decides those blocks. */
unsigned emu_tc_plan_lanes(const emu_tc_plan *p, const double *xa, const int32_t *ea,
                           const double *xb, const int32_t *eb, size_t sb, size_t n, double *c,
                           unsigned *inexact);

/*
 * The same for the block-scaled kinds (emu_scaled_gemm): scales split as
 * operands are, their magnitudes (a sign bit ignored: ue4m3), a zero with
 * P = 0 and e = −126 (the exponent the model gives it), a NaN special.
 */
void emu_tc_split_scales(const emu_format *fmt, const emu_bits *x, size_t n, emu_tc_opnd *o);

/* One block (n <= k) over split operands a, b and split scales sa, sb (the
 * scales of product i at i / s->block): emu_tc_dot_scaled(m with
 * promote_every 0, ina, inb, out, ..., n, c, s) bit for bit and flag for
 * flag, into *r (p from emu_tc_plan_init2 with scales). false, with nothing
 * written, when the plan is not direct or an operand or a scale is a NaN or
 * an infinity (emu_tc_dot_scaled decides those). */
bool emu_tc_plan_scaled(const emu_tc_plan *p, const emu_tc_opnd *a, const emu_tc_opnd *b,
                        const emu_tc_opnd *sa, const emu_tc_opnd *sb, size_t n, emu_bits c,
                        emu_result *r);

/* Whether scales s can go with m: acc=block, a scale format without
 * infinities with p <= 8, block >= 1 (a multiple of gsum when gsum > 1),
 * both arrays given. On error writes one line into err. */
emu_status emu_tc_check_scales(const emu_tc_model *m, const emu_tc_scales *s, char *err,
                               size_t errlen) __attribute__((warn_unused_result));

/* The same models computed with MPFR (emu/kernels/tc_mp.c), for the tests. */
emu_result emu_tc_mp_dot(const emu_tc_model *m, const emu_format *in, const emu_format *out,
                         const emu_bits *a, const emu_bits *b, size_t K, emu_bits c);
emu_result emu_tc_mp_dot2(const emu_tc_model *m, const emu_format *in_a, const emu_format *in_b,
                          const emu_format *out, const emu_bits *a, const emu_bits *b, size_t K,
                          emu_bits c);
emu_result emu_tc_mp_dot_scaled(const emu_tc_model *m, const emu_format *in_a,
                                const emu_format *in_b, const emu_format *out, const emu_bits *a,
                                const emu_bits *b, size_t K, emu_bits c, const emu_tc_scales *s);

#endif
