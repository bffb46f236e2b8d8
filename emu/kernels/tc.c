/*
 * tc.c — the Tensor Core block-FMA model (emu/kernels/tc.h), in integer arithmetic.
 *
 * Why this is exact: a product of two significands of at most 24 bits is an
 * exact 48-bit integer. Every term is chopped to a multiple of 2^L, where
 * L = R − 23 − neab and R is the block's alignment exponent; a term's
 * magnitude is below 2^(R+2) (a product's significand lies in [0, 4) times
 * 2^E with E <= R; C's in [0, 2)), so the chopped term is an integer below
 * 2^(25+neab) <= 2^61, and a block of at most 2^16 of them sums exactly in
 * __int128. That sum is handed once to emu_round_core (shifted right, with a
 * sticky bit, only when it exceeds 64 bits, which leaves 63 bits below the
 * leading one, more than the 34 the core asks for). So the only roundings
 * are the ones the model has: the chop of each term and the block's one
 * final rounding (plus C's pre-rounding and the fp32 promotion additions).
 *
 * Alignment exponents follow the published model (Khattak & Mikaitis,
 * arXiv 2512.07004, and its MATLAB reference): an input x has exponent
 * e(x) = max(floor(log2|x|), emin_in) and a product a·b is held
 * "denormalised" as a significand in [0, 4) times 2^(e(a)+e(b)); C (a
 * binary32 value) has max(floor(log2|C|), −126). R is the largest of these
 * over the nonzero terms, floored at exp_floor. Zero products take no part.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/internal.h"
#include "emu/kernels/tc.h"

#define FP32_EMIN (-126)
#define TC_FRAC 23 /* the accumulator's fraction bits before neab */

/* ---- models, presets, spec strings ---- */

emu_tc_model emu_tc_default(void)
{
	return (emu_tc_model){.k = 16,
	                      .neab = 2,
	                      .final_mode = EMU_RTZ,
	                      .c_preround = false,
	                      .exp_floor = EMU_TC_NO_FLOOR,
	                      .block_prec = 0,
	                      .promote_every = 0,
	                      .sat = false,
	                      .c_late = false,
	                      .c_round = EMU_RNE,
	                      .split = 1,
	                      .group = 1,
	                      .c_emin = false,
	                      .zero_pos = false,
	                      .nan_ones = false,
	                      .zero_align = false,
	                      .acc = EMU_TC_ACC_BLOCK,
	                      .ftz = false,
	                      .gsum = 0};
}

/* The formats the presets know, told apart by their defining fields. */
enum tc_kind {
	TK_OTHER = 0,
	TK_FP32,
	TK_TF32,
	TK_FP16,
	TK_BF16,
	TK_E4M3,
	TK_E5M2,
	TK_FNUZ8, /* e4m3fnuz, e5m2fnuz: AMD CDNA3's fp8 and bf8 */
	TK_F6F4,  /* e3m2, e2m3 (and e2m1): the f6 and f4 of kind::f8f6f4 */
	TK_E2M1,  /* e2m1: a TK_F6F4 row takes it too; kind::mxf4nvf4's own */
};

static enum tc_kind tc_kind_of(const emu_format *f)
{
	static const struct {
		int p, ebits, bias;
		enum tc_kind kind;
	} kinds[] = {
	    {24, 8, 127, TK_FP32}, {11, 8, 127, TK_TF32}, {11, 5, 15, TK_FP16},
	    {8, 8, 127, TK_BF16},  {4, 4, 7, TK_E4M3},    {3, 5, 15, TK_E5M2},
	    {4, 4, 8, TK_FNUZ8},   {3, 5, 16, TK_FNUZ8},  {3, 3, 3, TK_F6F4},
	    {4, 2, 1, TK_F6F4},    {2, 2, 1, TK_E2M1},
	};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (f->p == kinds[i].p && f->ebits == kinds[i].ebits && f->bias == kinds[i].bias)
			return kinds[i].kind;
	return TK_OTHER;
}

/* One row: a GPU, an input kind (TK_E4M3 stands for both FP8 formats), an
 * output kind, and the model. Sources: FACTS §3 (Khattak & Mikaitis's table
 * of measured k, neab and final rounding; exp_floor −133, and B200's −15 for
 * fp16 output, from their H100TC.m / B200TC.m; C pre-rounded to fp16 as
 * their CUDA drivers do with __float2half for fp16 output). FP8 → fp32
 * blocks round to 14 bits (an e8m13 result, their GEMM.m's "NoManBitsOut +
 * neab"), which the H200 vectors confirm; that is wgmma's native FP8 path.
 * Hopper has no FP8 mma.sync: for FP8 → fp16 ptxas emits two chained fp16
 * HMMAs over the products with k mod 4 in {0, 1} and then {2, 3}, and an
 * HADD2 for C (the split, group and late-C columns; FACTS §3, nvdisasm of
 * CUDA 13.0 SASS), which the H200 vectors confirm. B200's FP8 vectors were
 * made with the legacy mma.sync: the fused dot of the 32 products with C = 0,
 * then a separate RNE fp32 addition of C; "b200-tcgen05" keeps the tcgen05
 * rule (MMA-Sim's kind::f16/tf32/f8f6f4: C inside the fused sum, 25 bits,
 * RZ). Ada's FP8 → fp16 row is the published parameters, unverified
 * (docs/tensor-cores.md). "h100-mma" is sm_90's mma.sync where it differs
 * from "h100": FP8 -> fp32, which ptxas emulates as FP8 -> fp16 does, with
 * fp32-accumulating HMMAs (the H200 mma.sync agrees on every FP8 vector,
 * docs/gpu-results.md); every other pair falls back to "h100", as every pair
 * but FP8 -> fp16 does for "h100-wgmma" (wgmma's native FP8 -> fp16: the
 * 13-bit window of its FP8 -> fp32, rounded RNE to fp16; MMA-Sim's wgmma).
 * "turing" (sm_75 m16n8k8, 24 bits) and "rtx5090" (sm_120 mma, 25 bits, one
 * fused sum per instruction, FP8/FP6/FP4 included) are MMA-Sim's
 * (nv_ptx.py); so are b200-tcgen05's fp16 outputs (kind::f16 and
 * kind::f8f6f4 -> f16), with B200TC.m's fp16 floor. AMD's rows are
 * MMA-Sim's CDNA models (simulator/amd.py): CDNA1 (mi100) and CDNA2
 * (mi250x) sum 4 fp16 (2 bf16 on CDNA1, 4 with CDNA2's bf16_1k) products
 * pairwise in fp32 and add the sum to the accumulator, CDNA2 flushing
 * subnormals (as AMD documents for the MI200's f16/bf16 MFMAs); CDNA3
 * (mi300x) fuses 8 fp16/bf16, 4 xf32 or 16 fp8 products (even and odd
 * apart) and floors the sum and C into one RNE rounding; fp32 MFMAs are
 * fused multiply-adds in turn. The block-scaled kinds are MMA-Sim's
 * (arithmetic.py: kind::mxf8f6f4 is the f8f6f4 fused sum, 25 bits, RZ, with
 * both scale exponents added to each product's; kind::mxf4nvf4 sums each 16
 * products exactly and aligns the group at its scales' exponents, 35 bits):
 * no floor, and MMA-Sim's rules for zeros (a zero counts as 2^-126 in the
 * alignment, results +0) and NaN (all ones), the mmasim column. */
struct tc_preset {
	const char *gpu;
	enum tc_kind in, out;
	int k, neab;
	emu_mode mode;
	bool cpre;
	int floor, prec;
	int split, group; /* 1, 1: one block per instruction */
	bool late;        /* C after the block, added with an RNE rounding */
	emu_tc_acc acc;   /* block unless said */
	bool ftz;
	bool mmasim; /* zalign=1, zsign=pos, nan=ones */
	int gsum;
};

#define NF EMU_TC_NO_FLOOR
#define PW EMU_TC_ACC_PAIRWISE
#define BL EMU_TC_ACC_BLOCK
#define FM EMU_TC_ACC_FMA
#define RD EMU_TC_ACC_RD
static const struct tc_preset presets[] = {
    {"v100", TK_FP16, TK_FP32, 4, 0, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"v100", TK_FP16, TK_FP16, 4, 0, EMU_RNE, true, NF, 0, 1, 1, false, BL, false, false, 0},
    {"turing", TK_FP16, TK_FP32, 8, 1, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"turing", TK_FP16, TK_FP16, 8, 1, EMU_RNE, true, NF, 0, 1, 1, false, BL, false, false, 0},
    {"a100", TK_FP16, TK_FP32, 8, 1, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"a100", TK_BF16, TK_FP32, 8, 1, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"a100", TK_FP16, TK_FP16, 8, 1, EMU_RNE, true, NF, 0, 1, 1, false, BL, false, false, 0},
    {"a100", TK_TF32, TK_FP32, 4, 1, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"h100", TK_FP16, TK_FP32, 16, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false, false, 0},
    {"h100", TK_BF16, TK_FP32, 16, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false, false, 0},
    {"h100", TK_FP16, TK_FP16, 16, 2, EMU_RNE, true, -133, 0, 1, 1, false, BL, false, false, 0},
    {"h100", TK_TF32, TK_FP32, 8, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false, false, 0},
    {"h100", TK_E4M3, TK_FP32, 32, -10, EMU_RTZ, false, -133, 14, 1, 1, false, BL, false, false, 0},
    {"h100", TK_E4M3, TK_FP16, 32, 2, EMU_RNE, true, -133, 0, 2, 2, true, BL, false, false, 0},
    {"h100-mma", TK_E4M3, TK_FP32, 32, 2, EMU_RTZ, false, -133, 0, 2, 2, true, BL, false, false, 0},
    {"h100-wgmma", TK_E4M3, TK_FP16, 32, -10, EMU_RNE, true, -133, 0, 1, 1, false, BL, false, false,
     0},
    {"ada", TK_FP16, TK_FP32, 8, 1, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"ada", TK_BF16, TK_FP32, 8, 1, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"ada", TK_FP16, TK_FP16, 8, 1, EMU_RNE, true, NF, 0, 1, 1, false, BL, false, false, 0},
    {"ada", TK_TF32, TK_FP32, 4, 1, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"ada", TK_E4M3, TK_FP32, 16, -10, EMU_RTZ, false, NF, 14, 1, 1, false, BL, false, false, 0},
    {"ada", TK_E4M3, TK_FP16, 16, -10, EMU_RNE, true, NF, 0, 1, 1, false, BL, false, false, 0},
    {"b200", TK_FP16, TK_FP32, 16, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false, false, 0},
    {"b200", TK_BF16, TK_FP32, 16, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false, false, 0},
    {"b200", TK_FP16, TK_FP16, 16, 2, EMU_RNE, true, -15, 0, 1, 1, false, BL, false, false, 0},
    {"b200", TK_TF32, TK_FP32, 8, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false, false, 0},
    {"b200", TK_E4M3, TK_FP32, 32, 2, EMU_RTZ, false, -133, 0, 1, 1, true, BL, false, false, 0},
    {"b200-tcgen05", TK_FP16, TK_FP32, 16, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false,
     false, 0},
    {"b200-tcgen05", TK_BF16, TK_FP32, 16, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false,
     false, 0},
    {"b200-tcgen05", TK_FP16, TK_FP16, 16, 2, EMU_RNE, true, -15, 0, 1, 1, false, BL, false, false,
     0},
    {"b200-tcgen05", TK_TF32, TK_FP32, 8, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false, false,
     0},
    {"b200-tcgen05", TK_E4M3, TK_FP32, 32, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false,
     false, 0},
    {"b200-tcgen05", TK_F6F4, TK_FP32, 32, 2, EMU_RTZ, false, -133, 0, 1, 1, false, BL, false,
     false, 0},
    {"b200-tcgen05", TK_E4M3, TK_FP16, 32, 2, EMU_RNE, true, -15, 0, 1, 1, false, BL, false, false,
     0},
    {"b200-tcgen05", TK_F6F4, TK_FP16, 32, 2, EMU_RNE, true, -15, 0, 1, 1, false, BL, false, false,
     0},
    {"rtx5090", TK_FP16, TK_FP32, 16, 2, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"rtx5090", TK_BF16, TK_FP32, 16, 2, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"rtx5090", TK_FP16, TK_FP16, 16, 2, EMU_RNE, true, NF, 0, 1, 1, false, BL, false, false, 0},
    {"rtx5090", TK_TF32, TK_FP32, 8, 2, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"rtx5090", TK_E4M3, TK_FP32, 32, 2, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"rtx5090", TK_F6F4, TK_FP32, 32, 2, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, false, 0},
    {"rtx5090", TK_E4M3, TK_FP16, 32, 2, EMU_RNE, true, NF, 0, 1, 1, false, BL, false, false, 0},
    {"rtx5090", TK_F6F4, TK_FP16, 32, 2, EMU_RNE, true, NF, 0, 1, 1, false, BL, false, false, 0},
    {"b200-mxf8f6f4", TK_E4M3, TK_FP32, 32, 2, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, true,
     0},
    {"b200-mxf8f6f4", TK_F6F4, TK_FP32, 32, 2, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, true,
     0},
    {"b200-mxf4nvf4", TK_E2M1, TK_FP32, 64, 12, EMU_RTZ, false, NF, 0, 1, 1, false, BL, false, true,
     16},
    {"mi100", TK_FP32, TK_FP32, 1, 0, EMU_RNE, false, NF, 0, 1, 1, false, FM, false, false, 0},
    {"mi100", TK_FP16, TK_FP32, 4, 0, EMU_RNE, false, NF, 0, 1, 1, false, PW, false, false, 0},
    {"mi100", TK_BF16, TK_FP32, 2, 0, EMU_RNE, false, NF, 0, 1, 1, false, PW, false, false, 0},
    {"mi250x", TK_FP32, TK_FP32, 1, 0, EMU_RNE, false, NF, 0, 1, 1, false, FM, false, false, 0},
    {"mi250x", TK_FP16, TK_FP32, 4, 0, EMU_RNE, false, NF, 0, 1, 1, false, PW, true, false, 0},
    {"mi250x", TK_BF16, TK_FP32, 4, 0, EMU_RNE, false, NF, 0, 1, 1, false, PW, true, false, 0},
    {"mi300x", TK_FP32, TK_FP32, 1, 0, EMU_RNE, false, NF, 0, 1, 1, false, FM, false, false, 0},
    {"mi300x", TK_TF32, TK_FP32, 4, 1, EMU_RNE, false, NF, 0, 1, 1, false, RD, false, false, 0},
    {"mi300x", TK_FP16, TK_FP32, 8, 1, EMU_RNE, false, NF, 0, 1, 1, false, RD, false, false, 0},
    {"mi300x", TK_BF16, TK_FP32, 8, 1, EMU_RNE, false, NF, 0, 1, 1, false, RD, false, false, 0},
    {"mi300x", TK_FNUZ8, TK_FP32, 16, 1, EMU_RNE, false, NF, 0, 2, 1, false, RD, false, false, 0},
};
#undef PW
#undef BL
#undef FM
#undef RD
#undef NF

/* GPUs that share another's model. */
static const char *tc_alias(const char *gpu)
{
	static const char *const alias[][2] = {
	    {"h200", "h100"},
	    {"h200-mma", "h100-mma"},
	    {"h200-wgmma", "h100-wgmma"},
	    {"l40s", "ada"},
	    {"t4", "turing"},
	    {"rtx-blackwell", "rtx5090"},
	    {"mi200", "mi250x"},
	    {"mi210", "mi250x"},
	    {"mi250", "mi250x"},
	    {"mi300", "mi300x"},
	    {"rtx5090-mxf8f6f4", "b200-mxf8f6f4"},
	    {"rtx5090-mxf4nvf4", "b200-mxf4nvf4"},
	    {"mi300a", "mi300x"},
	    {"mi325x", "mi300x"},
	};
	for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (!strcmp(gpu, alias[i][0]))
			return alias[i][1];
	return gpu;
}

/* The GPU whose rows a GPU takes where it has none of its own: sm_90's
 * mma.sync and wgmma differ from "h100" only in their FP8 rows. */
static const char *tc_fallback(const char *gpu)
{
	return !strcmp(gpu, "h100-mma") || !strcmp(gpu, "h100-wgmma") ? "h100" : NULL;
}

static bool tc_known_gpu(const char *gpu)
{
	for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
		if (!strcmp(presets[i].gpu, gpu))
			return true;
	return false;
}

emu_status emu_tc_preset(const char *gpu, const emu_format *in, const emu_format *out,
                         emu_tc_model *m)
{
	const char *g = tc_alias(gpu);
	enum tc_kind ki = tc_kind_of(in), ko = tc_kind_of(out);
	if (!tc_known_gpu(g))
		return EMU_ERR_BAD_SPEC;
	if (ki == TK_E5M2)
		ki = TK_E4M3;
	/* sm_90: a zero operand takes no part in the alignment (no change), a
	 * subnormal fp16 C aligns at 2^-14, zero results are +0, NaN is all ones:
	 * the H200's mma.sync on gpu/tc-rules.txt (docs/gpu-results.md) */
	bool sm90 = !strcmp(g, "h100") || tc_fallback(g);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
			const struct tc_preset *p = &presets[i];
			const char *want = pass == 0 ? g : tc_fallback(g);
			bool in_ok = p->in == ki || (p->in == TK_F6F4 && ki == TK_E2M1);
			if (!want || strcmp(p->gpu, want) != 0 || !in_ok || p->out != ko ||
			    ki == TK_OTHER)
				continue;
			*m = emu_tc_default();
			m->k = p->k;
			m->neab = p->neab;
			m->final_mode = p->mode;
			m->c_preround = p->cpre;
			m->exp_floor = p->floor;
			m->block_prec = p->prec;
			m->c_late = p->late;
			m->c_round = EMU_RNE; /* HADD2, FADD: IEEE additions */
			m->split = p->split;
			m->group = p->group;
			m->c_emin = m->zero_pos = m->nan_ones = sm90;
			m->acc = p->acc;
			m->ftz = p->ftz;
			if (p->mmasim)
				m->zero_align = m->zero_pos = m->nan_ones = true;
			m->gsum = p->gsum;
			return EMU_OK;
		}
	return EMU_ERR_UNKNOWN_FORMAT;
}

static void tc_err(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void tc_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (!err || !len)
		return;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive */
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* A whole decimal integer in [lo, hi]. */
static bool tc_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	if (!*s)
		return false;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool tc_bool(const char *s, bool *out)
{
	int v = emu_bool_by_name(s);

	if (v >= 0)
		*out = v;
	return v >= 0;
}

/* ceil(log2 n), n >= 1. */
static int tc_log2up(int n)
{
	int b = 0;
	while ((1L << b) < n)
		b++;
	return b;
}

/* acc's names, in emu_tc_acc's order. */
static const char *const tc_accs[] = {"block", "fma", "pairwise", "rd"};

/* One key=value item; returns false with err written. */
static bool tc_item(emu_tc_model *m, const char *key, const char *val, char *err, size_t len)
{
	long v;
	if (!strcmp(key, "k")) {
		if (!tc_int(val, 1, EMU_TC_K_MAX, &v))
			goto bad;
		m->k = (int)v;
	} else if (!strcmp(key, "neab")) {
		if (!tc_int(val, EMU_TC_NEAB_MIN, EMU_TC_NEAB_MAX, &v))
			goto bad;
		m->neab = (int)v;
	} else if (!strcmp(key, "final") || !strcmp(key, "cround")) {
		emu_mode md = !strcmp(val, "rz") ? EMU_RTZ : emu_mode_by_name(val);
		if (md != EMU_RNE && md != EMU_RTZ && md != EMU_UP && md != EMU_DOWN)
			goto bad;
		*(key[0] == 'f' ? &m->final_mode : &m->c_round) = md;
	} else if (!strcmp(key, "cpre")) {
		if (!tc_bool(val, &m->c_preround))
			goto bad;
	} else if (!strcmp(key, "floor")) {
		if (!strcmp(val, "none"))
			m->exp_floor = EMU_TC_NO_FLOOR;
		else if (tc_int(val, -10000, 10000, &v))
			m->exp_floor = (int)v;
		else
			goto bad;
	} else if (!strcmp(key, "prec")) {
		if (!strcmp(val, "out"))
			m->block_prec = 0;
		else if (tc_int(val, 2, 24, &v))
			m->block_prec = (int)v;
		else
			goto bad;
	} else if (!strcmp(key, "promote")) {
		if (!tc_int(val, 0, LONG_MAX, &v))
			goto bad;
		m->promote_every = (size_t)v;
	} else if (!strcmp(key, "sat")) {
		if (!tc_bool(val, &m->sat))
			goto bad;
	} else if (!strcmp(key, "clate")) {
		if (!tc_bool(val, &m->c_late))
			goto bad;
	} else if (!strcmp(key, "csub")) {
		if (strcmp(val, "true") != 0 && strcmp(val, "emin") != 0)
			goto bad;
		m->c_emin = !strcmp(val, "emin");
	} else if (!strcmp(key, "zsign")) {
		if (strcmp(val, "ieee") != 0 && strcmp(val, "pos") != 0)
			goto bad;
		m->zero_pos = !strcmp(val, "pos");
	} else if (!strcmp(key, "nan")) {
		if (strcmp(val, "canon") != 0 && strcmp(val, "ones") != 0)
			goto bad;
		m->nan_ones = !strcmp(val, "ones");
	} else if (!strcmp(key, "zalign")) {
		if (!tc_bool(val, &m->zero_align))
			goto bad;
	} else if (!strcmp(key, "ftz")) {
		if (!tc_bool(val, &m->ftz))
			goto bad;
	} else if (!strcmp(key, "acc")) {
		size_t i = 0;
		while (i < sizeof tc_accs / sizeof tc_accs[0] && strcmp(val, tc_accs[i]) != 0)
			i++;
		if (i == sizeof tc_accs / sizeof tc_accs[0])
			goto bad;
		m->acc = (emu_tc_acc)i;
	} else if (!strcmp(key, "gsum")) {
		if (!tc_int(val, 0, EMU_TC_K_MAX, &v))
			goto bad;
		m->gsum = (int)v;
	} else if (!strcmp(key, "split") || !strcmp(key, "group")) {
		if (!tc_int(val, 1, EMU_TC_K_MAX, &v))
			goto bad;
		*(key[0] == 's' ? &m->split : &m->group) = (int)v;
	} else {
		tc_err(err, len,
		       "unknown key '%s' (keys: k neab final cpre floor prec promote sat clate "
		       "cround split group csub zsign nan zalign acc ftz gsum)",
		       key);
		return false;
	}
	return true;
bad:
	tc_err(err, len, "bad value '%s' for %s", val, key);
	return false;
}

emu_status emu_tc_parse(const char *spec, const emu_format *in, const emu_format *out,
                        emu_tc_model *m, char *err, size_t errlen)
{
	char buf[256];
	emu_tc_model r = emu_tc_default();
	if (!spec || !*spec) {
		tc_err(err, errlen, "empty model");
		return EMU_ERR_BAD_SPEC;
	}
	if (strlen(spec) >= sizeof buf) {
		tc_err(err, errlen, "model spec too long");
		return EMU_ERR_BAD_SPEC;
	}
	strcpy(buf, spec);
	bool first = true;
	for (char *item = buf, *next; item; item = next, first = false) {
		next = strchr(item, ',');
		if (next)
			*next++ = 0;
		char *eq = strchr(item, '=');
		if (!*item) {
			tc_err(err, errlen, "empty item in model '%s'", spec);
			return EMU_ERR_BAD_SPEC;
		}
		if (!eq) {
			if (!first) {
				tc_err(err, errlen,
				       "'%s' is not key=value (a GPU name comes first)", item);
				return EMU_ERR_BAD_SPEC;
			}
			if (!in || !out) {
				tc_err(err, errlen, "GPU model '%s' needs input and output formats",
				       item);
				return EMU_ERR_BAD_SPEC;
			}
			emu_status st = emu_tc_preset(item, in, out, &r);
			if (st == EMU_ERR_BAD_SPEC) {
				tc_err(err, errlen,
				       "unknown GPU '%s' (v100 turing a100 h100 h200 h100-mma "
				       "h200-mma "
				       "h100-wgmma h200-wgmma ada l40s b200 b200-tcgen05 rtx5090 "
				       "b200-mxf8f6f4 b200-mxf4nvf4 mi100 mi250x mi300x)",
				       item);
				return st;
			}
			if (st != EMU_OK) {
				tc_err(err, errlen, "%s has no %s -> %s model", item, in->name,
				       out->name);
				return st;
			}
			continue;
		}
		*eq = 0;
		if (!tc_item(&r, item, eq + 1, err, errlen))
			return EMU_ERR_BAD_SPEC;
	}
	*m = r;
	return EMU_OK;
}

const char *emu_tc_spec(const emu_tc_model *m, char *buf, size_t len)
{
	char fl[16], pr[16];
	if (m->exp_floor == EMU_TC_NO_FLOOR)
		snprintf(fl, sizeof fl, "none");
	else
		snprintf(fl, sizeof fl, "%d", m->exp_floor);
	if (m->block_prec == 0)
		snprintf(pr, sizeof pr, "out");
	else
		snprintf(pr, sizeof pr, "%d", m->block_prec);
	snprintf(buf, len,
	         "k=%d,neab=%d,final=%s,cpre=%d,floor=%s,prec=%s,promote=%zu,sat=%d,clate=%d,"
	         "cround=%s,split=%d,group=%d,csub=%s,zsign=%s,nan=%s",
	         m->k, m->neab, emu_mode_name(m->final_mode), m->c_preround, fl, pr,
	         m->promote_every, m->sat, m->c_late, emu_mode_name(m->c_round), m->split, m->group,
	         m->c_emin ? "emin" : "true", m->zero_pos ? "pos" : "ieee",
	         m->nan_ones ? "ones" : "canon");
	/* the later keys only where they differ from the default, so every
	 * spec written before them reads the same */
	size_t n = strlen(buf);
	if (m->zero_align && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",zalign=1");
	if (m->acc != EMU_TC_ACC_BLOCK && (unsigned)m->acc <= EMU_TC_ACC_RD && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",acc=%s", tc_accs[m->acc]);
	if (m->ftz && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",ftz=1");
	if (m->gsum > 1 && n < len)
		snprintf(buf + n, len - n, ",gsum=%d", m->gsum);
	return buf;
}

emu_status emu_tc_check(const emu_tc_model *m, const emu_format *in, const emu_format *out,
                        char *err, size_t errlen)
{
	const char *why = NULL;
	if (m->k < 1 || m->k > EMU_TC_K_MAX)
		why = "k out of range";
	else if (m->neab < EMU_TC_NEAB_MIN || m->neab > EMU_TC_NEAB_MAX)
		why = "neab out of range";
	else if (m->final_mode != EMU_RNE && m->final_mode != EMU_RTZ && m->final_mode != EMU_UP &&
	         m->final_mode != EMU_DOWN)
		why = "final rounding must be rne, rtz, up or down";
	else if (m->c_round != EMU_RNE && m->c_round != EMU_RTZ && m->c_round != EMU_UP &&
	         m->c_round != EMU_DOWN)
		why = "cround must be rne, rtz, up or down";
	else if (m->split < 1 || m->group < 1 || m->split > m->k || m->group > m->k ||
	         m->k % ((long)m->split * m->group) != 0)
		why = "k must be a multiple of split * group";
	else if (m->block_prec != 0 && (m->block_prec < 2 || m->block_prec > out->p))
		why = "prec must lie between 2 and the output's precision";
	else if (m->exp_floor != EMU_TC_NO_FLOOR && (m->exp_floor < -10000 || m->exp_floor > 10000))
		why = "floor out of range";
	else if (!in->has_sign || !in->has_zero || in->p > 24)
		why = "the input format needs a sign and a zero";
	else if (!out->has_sign || !out->has_inf || out->nan != EMU_NAN_IEEE ||
	         !out->has_subnormals || !out->has_zero)
		why = "the output format must have a sign, infinities, NaNs and subnormals";
	else if (out->emin < FP32_EMIN || out->emax > 127)
		why = "the output format must lie within binary32's range";
	else if ((unsigned)m->acc > EMU_TC_ACC_RD)
		why = "acc must be block, fma, pairwise or rd";
	else if (m->acc != EMU_TC_ACC_BLOCK &&
	         (m->c_late || m->block_prec || m->exp_floor != EMU_TC_NO_FLOOR))
		why = "acc other than block takes no late C, block precision or floor";
	else if (m->acc != EMU_TC_ACC_BLOCK && m->split != 1 &&
	         !(m->acc == EMU_TC_ACC_RD && m->split == 2 && m->group == 1))
		why = "split must be 1 (acc=rd: 1, or 2 with group 1)";
	else if (m->ftz && m->acc != EMU_TC_ACC_FMA && m->acc != EMU_TC_ACC_PAIRWISE)
		why = "ftz is for acc=fma and acc=pairwise";
	else if ((m->acc == EMU_TC_ACC_FMA || m->acc == EMU_TC_ACC_PAIRWISE) &&
	         (out->p != 24 || out->emin != FP32_EMIN || out->emax != 127))
		why = "acc=fma and acc=pairwise accumulate in an fp32 output";
	else if ((m->acc == EMU_TC_ACC_FMA || m->acc == EMU_TC_ACC_PAIRWISE) &&
	         (in->p > out->p || in->emax > out->emax || in->emin - in->p < out->emin - out->p))
		why = "acc=fma and acc=pairwise need every input value exact in the output format";
	else if (m->gsum < 0 || m->gsum > m->k)
		why = "gsum must lie between 0 and k";
	else if (m->gsum > 1 && (m->acc != EMU_TC_ACC_BLOCK || m->split != 1 || m->k % m->gsum))
		why = "gsum takes acc=block, split 1 and k a multiple of gsum";
	else if (m->gsum > 1 && (2 * (in->emax - in->emin + in->p) + tc_log2up(m->gsum) > 46 ||
	                         2 * (in->emax + 1) + tc_log2up(m->gsum) + m->neab > 36))
		why = "gsum's exact group sums need a narrower input format (or a smaller neab)";
	if (!why)
		return EMU_OK;
	tc_err(err, errlen, "%s", why);
	return EMU_ERR_RANGE;
}

emu_status emu_tc_check_scales(const emu_tc_model *m, const emu_tc_scales *s, char *err,
                               size_t errlen)
{
	const char *why = NULL;
	if (!s->fmt || !s->sa || !s->sb)
		why = "scales need a format and both arrays";
	else if (m->acc != EMU_TC_ACC_BLOCK)
		why = "scales take acc=block";
	else if (s->fmt->has_inf || s->fmt->p > 8)
		why = "the scale format must have no infinities and at most 8 bits of precision";
	else if (s->block < 1 || (m->gsum > 1 && s->block % (size_t)m->gsum))
		why = "the scale block must be at least 1 and a multiple of gsum";
	if (!why)
		return EMU_OK;
	tc_err(err, errlen, "%s", why);
	return EMU_ERR_RANGE;
}

/* Whether a Tensor Core model can write f (emu_tc_check's conditions on
 * out). */
static bool tc_writes(const emu_format *f)
{
	return f->has_sign && f->has_inf && f->nan == EMU_NAN_IEEE && f->has_subnormals &&
	       f->has_zero && f->p <= 24 && f->emin >= -126 && f->emax <= 127;
}

emu_status emu_tc_setup(const char *kernel, const char *spec, const emu_format *in,
                        const emu_format *acc, int k, long long promote, emu_tc_model *m,
                        const emu_format **out, char *err, size_t errlen)
{
	char why[160];
	*out = tc_writes(acc) ? acc : emu_format_by_name("fp32");
	if (!spec) {
		*m = emu_tc_default();
	} else if (emu_tc_parse(spec, in, *out, m, why, sizeof why) != EMU_OK) {
		snprintf(err, errlen, "%s: tc model '%s': %s", kernel, spec, why);
		return EMU_ERR_BAD_SPEC;
	}
	if (k > 0)
		m->k = k;
	if (promote >= 0)
		m->promote_every = (size_t)promote;
	if (emu_tc_check(m, in, *out, why, sizeof why) != EMU_OK) {
		snprintf(err, errlen, "%s: tc with %s -> %s: %s", kernel, in->name, (*out)->name,
		         why);
		return EMU_ERR_RANGE;
	}
	return EMU_OK;
}

/* ---- the block FMA ---- */

/* the block FMA's context: emu_tc_plan (emu/kernels/tc.h) */
typedef emu_tc_plan tc_ctx;

/* Whether a sub-block takes the product at block position i: sub-block j of
 * `split` takes the runs of `group` products numbered j mod split. */
typedef struct {
	size_t split, group, j;
} tc_sub;

static bool tc_in_sub(const tc_sub *s, size_t i)
{
	return s->split == 1 || (i / s->group) % s->split == s->j; /* split 1: j is 0 */
}

/* |x| = P·2^lsb with e = max(floor(log2|x|), emin) and lsb = e − (p − 1):
 * the significand as an integer at the format's grid. x finite, nonzero. */
static void tc_split(double x, int emin, int p, uint64_t *P, int *e, int *lsb)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	u &= ~(1ull << 63);
	int fe = (int)(u >> 52) - 1023; /* floor(log2|x|) for a normal double */
	if (fe == -1023) {              /* a subnormal double: the general path */
		(void)frexp(x, &fe);
		*e = fe - 1 < emin ? emin : fe - 1;
		*lsb = *e - (p - 1);
		*P = (uint64_t)ldexp(fabs(x), -*lsb); /* exact: an integer below 2^p */
		return;
	}
	*e = fe < emin ? emin : fe;
	*lsb = *e - (p - 1);
	/* |x| = M·2^(fe − 52); a multiple of 2^lsb, so the shift drops zeros */
	uint64_t M = (u & ((1ull << 52) - 1)) | (1ull << 52);
	*P = M >> (52 - fe + *lsb);
}

/* Add ±P·2^sh (chopped toward zero when sh < 0) into *S. */
static void tc_add_term(__int128 *S, bool neg, uint64_t P, int sh, bool *chopped)
{
	uint64_t v;
	if (sh >= 0) {
		v = P << sh; /* < 2^(25+neab): see the top of the file */
	} else if (sh > -64) {
		v = P >> -sh;
		*chopped |= (P & ((1ull << -sh) - 1)) != 0;
	} else {
		v = 0;
		*chopped |= P != 0;
	}
	*S += neg ? -(__int128)v : (__int128)v;
}

/* emu_decode, with the common cases inline: an exponent field neither 0
 * nor all ones is a normal number in every format kind (IEEE, fn, fnuz,
 * no-inf), and so is the all-ones field of a format with neither
 * infinities nor NaN (FP4's and FP6's top binade), so its value is built
 * from the fields; a zero field is a zero or a subnormal but in fnuz (whose
 * negative zero is its NaN). The rest (fnuz's zero field, the top binade of
 * a format with specials, formats without a fraction) goes to emu_decode. */
static inline double tc_decode(const emu_format *f, emu_bits b)
{
	int m = f->p - 1;
	emu_bits mag = (f->has_sign ? b & ~f->sign_mask : b) &
	               (f->bits == 32 ? ~(emu_bits)0 : ((emu_bits)1 << f->bits) - 1);
	emu_bits ef = mag >> m, top = f->exp_mask >> m;
	bool top_normal = !f->has_inf && f->nan == EMU_NAN_NONE;
	if (m < 1 || (ef == 0 && f->nan == EMU_NAN_FNUZ) || (ef == top && !top_normal))
		return emu_decode(f, b);
	double v;
	if (ef == 0) { /* a zero or a subnormal: the fraction times 2^(1 − bias − m) */
		uint64_t q = (uint64_t)(1 - f->bias - m + 1023) << 52;
		memcpy(&v, &q, sizeof v);
		v *= (double)(mag & f->man_mask); /* exact: at most 23 bits */
	} else {
		uint64_t u = ((uint64_t)((int)ef - f->bias + 1023) << 52) |
		             ((uint64_t)(mag & f->man_mask) << (52 - m));
		memcpy(&v, &u, sizeof v);
	}
	return f->has_sign && (b & f->sign_mask) ? -v : v;
}

/* What a block sees: the special-value summary and the alignment exponent. */
typedef struct {
	bool nan, pinf, ninf, invalid;
	bool any_term;           /* a nonzero finite term exists */
	bool zero_pos, zero_neg; /* signs of the zero terms */
	int R;
	bool any_zexp; /* zalign=1: the zero terms' largest exponent, Rz */
	int Rz;
} tc_scan;

/* e(x) = max(floor(log2|x|), emin) of an operand of f; zalign=1 gives a zero
 * operand −126 (MMA-Sim's exponent of a zero significand). */
static int tc_exp(const emu_format *f, double x)
{
	if (x == 0)
		return FP32_EMIN;
	uint64_t P;
	int e, lsb;
	tc_split(x, f->emin, f->p, &P, &e, &lsb);
	return e;
}

/* zalign=1: a zero term of exponent E takes part in choosing R. */
static void tc_scan_zexp(tc_scan *s, int E)
{
	if (!s->any_zexp || E > s->Rz)
		s->Rz = E;
	s->any_zexp = true;
}

static void tc_scan_term(tc_scan *s, bool neg, bool zero, int E)
{
	if (zero) {
		if (neg)
			s->zero_neg = true;
		else
			s->zero_pos = true;
		return;
	}
	if (!s->any_term || E > s->R)
		s->R = E;
	s->any_term = true;
}

/* Pass 1's C (when with_c; c_late's sub-blocks have none, not even a zero
 * one): its specials, its zero's sign, its alignment exponent (csub=emin:
 * no less than the output's emin; its value enters pass 2 exactly either
 * way). */
static void tc_scan_c(const tc_ctx *t, tc_scan *s, double c, bool with_c)
{
	if (!with_c) {
		return;
	} else if (isnan(c)) {
		s->nan = true;
	} else if (isinf(c)) {
		*(signbit(c) ? &s->ninf : &s->pinf) = true;
	} else if (c == 0) {
		tc_scan_term(s, signbit(c), true, 0);
		if (t->m.zero_align)
			tc_scan_zexp(s, FP32_EMIN);
	} else {
		uint64_t P;
		int e, lsb;
		tc_split(c, t->m.c_emin && t->out->emin > FP32_EMIN ? t->out->emin : FP32_EMIN, 24,
		         &P, &e, &lsb);
		tc_scan_term(s, false, false, e);
	}
}

/* The block's result when pass 1 decides it (NaN, an infinity, only zeros:
 * IEEE's sign of an exact zero sum): true with it in *r. */
static bool tc_scan_done(const tc_ctx *t, const tc_scan *s, unsigned *flags, double *r)
{
	if (s->nan || s->invalid || (s->pinf && s->ninf))
		*r = emu_nan_result(t->out, s->invalid || (s->pinf && s->ninf), flags);
	else if (s->pinf || s->ninf)
		*r = s->ninf ? -INFINITY : INFINITY;
	else if (!s->any_term)
		*r = (s->zero_neg && (!s->zero_pos || t->m.final_mode == EMU_DOWN)) ? -0.0 : 0.0;
	else
		return false;
	return true;
}

/* L, the window's last place: R (zalign's zero exponents included, at
 * least the floor) less 23 + neab. */
static int tc_window(const tc_ctx *t, const tc_scan *s)
{
	int R = s->any_zexp && s->Rz > s->R ? s->Rz : s->R;
	R = R < t->m.exp_floor ? t->m.exp_floor : R;
	return R - TC_FRAC - t->m.neab;
}

/* Pass 2's C, chopped to the window. */
static void tc_add_c(__int128 *S, double c, bool with_c, int L, bool *chopped)
{
	if (!with_c || c == 0)
		return;
	uint64_t P;
	int e, lsb;
	tc_split(c, FP32_EMIN, 24, &P, &e, &lsb);
	tc_add_term(S, signbit(c), P, lsb - L, chopped);
}

/* One rounding of a block's exact sum S·2^L to t->blk. */
static double tc_round_sum(const tc_ctx *t, __int128 S, int L, unsigned *flags)
{
	if (S == 0) /* cancellation (or everything chopped away): +0, −0 in down */
		return t->m.final_mode == EMU_DOWN ? -0.0 : 0.0;
	bool neg = S < 0;
	unsigned __int128 U = neg ? -(unsigned __int128)S : (unsigned __int128)S;
	int E = L;
	bool sticky = false;
	while (U >> 64) {
		sticky |= (U & 1) != 0;
		U >>= 1;
		E++;
	}
	unsigned fl = 0;
	double r = emu_round_core(&t->blk, neg, (uint64_t)U, E, sticky, &t->env, &fl);
	if ((fl & EMU_FLAG_OVERFLOW) && !t->m.sat && isfinite(r))
		r = neg ? -INFINITY : INFINITY; /* the published model: overflow is ±inf */
	*flags |= fl;
	return r;
}

/* A term of a scaled or grouped block: |value| = P·2^lsb, alignment
 * exponent E (for a zero term, the exponent zalign=1 gives it). */
typedef struct {
	bool zero, neg;
	uint64_t P;
	int lsb, E;
} tc_term;

/* The magnitude of the scale of product idx (absolute) in s[], P·2^lsb
 * with exponent *e (a zero: P = 0, e = −126); false when it is NaN. */
static bool tc_scale(const tc_ctx *t, const emu_bits *s, size_t idx, uint64_t *P, int *lsb, int *e)
{
	const emu_format *f = t->sc->fmt;
	emu_bits x = s[idx / t->sc->block];
	if (f->has_sign)
		x &= ~f->sign_mask; /* magnitudes: ue4m3 */
	double v = emu_decode(f, x);
	if (isnan(v))
		return false;
	*P = 0;
	*lsb = *e = FP32_EMIN;
	if (v != 0)
		tc_split(v, f->emin, f->p, P, e, lsb);
	return true;
}

/* A block's scale pair, decoded once for the terms that share it. */
typedef struct {
	size_t idx; /* scale index, SIZE_MAX: none yet */
	bool nan;
	uint64_t PA, PB;
	int lA, lB, eA, eB;
} tc_spair;

/* Term j of a scaled or grouped block at absolute offset off: product j
 * times its scales (gsum <= 1), or the exact sum of group j times the
 * group's scales. NaN, infinities and invalid products go into s; returns
 * false when the term is not finite. */
static bool tc_term_at(const tc_ctx *t, const emu_bits *a, const emu_bits *b, size_t n, size_t off,
                       size_t j, tc_spair *sp, tc_scan *s, tc_term *o)
{
	const emu_tc_model *m = &t->m;
	const emu_format *fa = t->ina, *fb = t->inb;
	size_t G = m->gsum > 1 ? (size_t)m->gsum : 1;
	size_t i0 = j * G, i1 = i0 + G < n ? i0 + G : n;
	uint64_t PA = 1, PB = 1;
	int lA = 0, lB = 0, eA = 0, eB = 0;
	if (t->sc) {
		size_t idx = (off + i0) / t->sc->block;
		if (idx != sp->idx) {
			sp->idx = idx;
			sp->nan = !tc_scale(t, t->sc->sa, off + i0, &sp->PA, &sp->lA, &sp->eA) ||
			          !tc_scale(t, t->sc->sb, off + i0, &sp->PB, &sp->lB, &sp->eB);
		}
		if (sp->nan) {
			s->nan = true;
			return false;
		}
		PA = sp->PA, PB = sp->PB, lA = sp->lA, lB = sp->lB, eA = sp->eA, eB = sp->eB;
	}
	bool szero = PA == 0 || PB == 0, special = false;
	int Lg = (fa->emin - fa->p + 1) + (fb->emin - fb->p + 1); /* a group's grid */
	int64_t sum = 0;
	bool any = false, zneg = true;
	for (size_t i = i0; i < i1; i++) {
		double x = tc_decode(fa, a[i]), y = tc_decode(fb, b[i]);
		bool neg = (signbit(x) != 0) != (signbit(y) != 0);
		if (isnan(x) || isnan(y)) {
			s->nan = special = true;
		} else if (isinf(x) || isinf(y)) {
			if (x == 0 || y == 0 || szero)
				s->invalid = true;
			else
				*(neg ? &s->ninf : &s->pinf) = true;
			special = true;
		} else if (G == 1) {
			o->neg = neg;
			o->zero = x == 0 || y == 0 || szero;
			if (o->zero) /* (a nonzero term's E comes from its split) */
				o->E = tc_exp(fa, x) + tc_exp(fb, y) + eA + eB;
			else {
				uint64_t Pa, Pb;
				int ea, eb, la, lb;
				tc_split(x, fa->emin, fa->p, &Pa, &ea, &la);
				tc_split(y, fb->emin, fb->p, &Pb, &eb, &lb);
				o->P = Pa * Pb * PA * PB; /* < 2^64: p <= 24 in, <= 8 scales */
				o->lsb = la + lb + lA + lB;
				o->E = ea + eb + eA + eB;
			}
		} else if (x == 0 || y == 0) {
			zneg &= neg; /* an exact zero sum of zeros: −0 when all are */
		} else {
			uint64_t Pa, Pb;
			int ea, eb, la, lb;
			tc_split(x, fa->emin, fa->p, &Pa, &ea, &la);
			tc_split(y, fb->emin, fb->p, &Pb, &eb, &lb);
			int64_t v =
			    (int64_t)((Pa * Pb) << (la + lb - Lg)); /* emu_tc_check's bound */
			sum += neg ? -v : v;
			any = true;
		}
	}
	if (special)
		return false;
	if (G > 1) {
		/* a cancelled group is +0 (−0 rounding down), as IEEE's exact sums */
		o->neg = sum < 0 || (sum == 0 && (any ? m->final_mode == EMU_DOWN : zneg));
		o->zero = sum == 0 || szero;
		o->E = eA + eB;
		o->P = (sum < 0 ? -(uint64_t)sum : (uint64_t)sum) * PA * PB;
		o->lsb = Lg + lA + lB;
	}
	return true;
}

/* One block of a scaled or grouped model: as tc_block_ieee, its terms from
 * tc_term_at. */
static double tc_block_terms(const tc_ctx *t, const emu_bits *a, const emu_bits *b, size_t n,
                             size_t off, const tc_sub *sub, double c, bool with_c, unsigned *flags)
{
	const emu_tc_model *m = &t->m;
	size_t G = m->gsum > 1 ? (size_t)m->gsum : 1, nt = (n + G - 1) / G;
	tc_scan s = {0};
	tc_term o = {0}; /* every term tc_term_at accepts is written in full */
	tc_spair sp = {.idx = SIZE_MAX};
	/* pass 1's nonzero terms, kept for pass 2 in an instruction's worth */
	enum { TC_KEEP = 64 };
	tc_term kt[TC_KEEP];
	size_t nk = 0;
	bool keep = nt <= TC_KEEP;
	tc_scan_c(t, &s, c, with_c);
	for (size_t j = 0; j < nt; j++) {
		if (G == 1 && !tc_in_sub(sub, j))
			continue;
		if (!tc_term_at(t, a, b, n, off, j, &sp, &s, &o))
			continue;
		tc_scan_term(&s, o.neg, o.zero, o.E);
		if (o.zero && m->zero_align)
			tc_scan_zexp(&s, o.E);
		if (keep && !o.zero)
			kt[nk++] = o;
	}
	double r;
	if (tc_scan_done(t, &s, flags, &r))
		return r;

	/* pass 2: chop every term to the window and sum exactly, C first */
	int L = tc_window(t, &s);
	__int128 S = 0;
	bool chopped = false;
	tc_add_c(&S, c, with_c, L, &chopped);
	for (size_t j = 0; j < nk; j++)
		tc_add_term(&S, kt[j].neg, kt[j].P, kt[j].lsb - L, &chopped);
	for (size_t j = 0; !keep && j < nt; j++) {
		if ((G == 1 && !tc_in_sub(sub, j)) ||
		    !tc_term_at(t, a, b, n, off, j, &sp, &s, &o) || o.zero)
			continue;
		tc_add_term(&S, o.neg, o.P, o.lsb - L, &chopped);
	}
	if (chopped)
		*flags |= EMU_FLAG_INEXACT;
	return tc_round_sum(t, S, L, flags);
}

/* One block FMA: the products a[i]·b[i], i < n, that sub-block sub takes
 * (+ c when with_c), c a value of the chain (binary32-representable, or
 * ±inf, NaN). Returns the block's result as a value of t->blk (and so of
 * t->out). */
static double tc_block_ieee(const tc_ctx *t, const emu_bits *a, const emu_bits *b, size_t n,
                            const tc_sub *sub, double c, bool with_c, unsigned *flags)
{
	const emu_tc_model *m = &t->m;
	const emu_format *fa = t->ina, *fb = t->inb;
	tc_scan s = {0};
	/* the nonzero finite terms as pass 1 splits them, kept for pass 2 when
	 * the block is at most TC_KEEP long (else pass 2 splits them again) */
	enum { TC_KEEP = 64 };
	uint64_t kp[TC_KEEP];
	int kl[TC_KEEP];
	bool kn[TC_KEEP], keep = n <= TC_KEEP;
	size_t nk = 0;

	/* pass 1: specials, zero signs, the alignment exponent */
	tc_scan_c(t, &s, c, with_c);
	for (size_t i = 0; i < n; i++) {
		if (!tc_in_sub(sub, i))
			continue;
		double x = tc_decode(fa, a[i]), y = tc_decode(fb, b[i]);
		bool neg = (signbit(x) != 0) != (signbit(y) != 0);
		if (isnan(x) || isnan(y)) {
			s.nan = true;
		} else if (isinf(x) || isinf(y)) {
			if (x == 0 || y == 0)
				s.invalid = true;
			else
				*(neg ? &s.ninf : &s.pinf) = true;
		} else if (x == 0 || y == 0) {
			tc_scan_term(&s, neg, true, 0);
			if (m->zero_align)
				tc_scan_zexp(&s, tc_exp(fa, x) + tc_exp(fb, y));
		} else {
			uint64_t Pa, Pb;
			int ea, eb, la, lb;
			tc_split(x, fa->emin, fa->p, &Pa, &ea, &la);
			tc_split(y, fb->emin, fb->p, &Pb, &eb, &lb);
			tc_scan_term(&s, neg, false, ea + eb);
			if (keep) {
				kp[nk] = Pa * Pb;
				kl[nk] = la + lb;
				kn[nk++] = neg;
			}
		}
	}
	double r;
	if (tc_scan_done(t, &s, flags, &r))
		return r;

	/* pass 2: chop every term to the window and sum exactly, C first */
	int L = tc_window(t, &s);
	__int128 S = 0;
	bool chopped = false;
	tc_add_c(&S, c, with_c, L, &chopped);
	for (size_t i = 0; i < nk; i++)
		tc_add_term(&S, kn[i], kp[i], kl[i] - L, &chopped);
	for (size_t i = 0; !keep && i < n; i++) {
		double x = tc_decode(fa, a[i]), y = tc_decode(fb, b[i]);
		if (!tc_in_sub(sub, i) || x == 0 || y == 0)
			continue;
		uint64_t Pa, Pb;
		int ea, eb, la, lb;
		tc_split(x, fa->emin, fa->p, &Pa, &ea, &la);
		tc_split(y, fb->emin, fb->p, &Pb, &eb, &lb);
		tc_add_term(&S, (signbit(x) != 0) != (signbit(y) != 0), Pa * Pb, la + lb - L,
		            &chopped);
	}
	if (chopped)
		*flags |= EMU_FLAG_INEXACT;
	return tc_round_sum(t, S, L, flags);
}

/* tc_block_ieee, then zsign=pos: any zero result is +0. */
static double tc_block(const tc_ctx *t, const emu_bits *a, const emu_bits *b, size_t n, size_t off,
                       const tc_sub *sub, double c, bool with_c, unsigned *flags)
{
	double r = t->sc || t->m.gsum > 1 ? tc_block_terms(t, a, b, n, off, sub, c, with_c, flags)
	                                  : tc_block_ieee(t, a, b, n, sub, c, with_c, flags);
	return t->m.zero_pos && r == 0 ? 0.0 : r;
}

/* The encoding of a result: nan=ones gives NaN all ones (sign clear). */
static emu_result tc_result(const tc_ctx *t, emu_result r)
{
	const emu_format *o = t->out;
	bool nan = (r.bits & o->exp_mask) == o->exp_mask && (r.bits & o->man_mask) != 0;
	if (nan && t->m.nan_ones)
		r.bits = o->exp_mask | o->man_mask;
	return r;
}

/* c_late: the block's rounded product sum r plus C, rounded once more, with
 * c_round. Both are binary32-range values, so the core's adaptor (TwoSum)
 * is exact. */
static double tc_late_add(const tc_ctx *t, double r, double c, unsigned *flags)
{
	if (isnan(r) || isnan(c))
		return NAN;
	if (isinf(r) || isinf(c)) { /* the specials rule of a block, not sat's */
		if (isinf(r) && isinf(c) && signbit(r) != signbit(c))
			return emu_nan_result(t->out, true, flags);
		return isinf(r) ? r : c;
	}
	unsigned fl = 0;
	double s = emu_v_add(&t->blk, r, c, &t->env_c, &fl);
	if ((fl & EMU_FLAG_OVERFLOW) && !t->m.sat && isfinite(s))
		s = copysign(INFINITY, s);
	*flags |= fl;
	return s;
}

/* ---- AMD's accumulations: acc=fma, pairwise, rd ---- */

/* ftz=1 on an IEEE step's result: a subnormal becomes a zero of its sign. */
static emu_bits tc_ftz_out(const tc_ctx *t, emu_bits r, unsigned *flags)
{
	const emu_format *o = t->out;
	if (!t->m.ftz || (r & o->exp_mask) != 0 || (r & o->man_mask) == 0)
		return r;
	*flags |= EMU_FLAG_UNDERFLOW | EMU_FLAG_INEXACT;
	return r & o->sign_mask;
}

/* An operand of f as an encoding of out (exact, emu_tc_check); ftz=1 reads
 * a subnormal as +0. */
static emu_bits tc_to_out(const tc_ctx *t, const emu_format *f, emu_bits x, unsigned *flags)
{
	if (t->m.ftz && emu_classify(f, x) == EMU_CLASS_SUBNORMAL)
		return 0;
	emu_result r = emu_convert(t->out, f, x, &t->env);
	*flags |= r.flags;
	return r.bits;
}

/* acc=pairwise: products a[i]·b[i] (each an IEEE fma into +0) summed as a
 * tree, the first half's sum plus the second's (MMA-Sim's pairwise_dot). */
static emu_bits tc_pairwise(const tc_ctx *t, const emu_bits *a, const emu_bits *b, size_t n,
                            unsigned *flags)
{
	emu_result r;
	if (n == 1) {
		r = emu_fma(t->out, tc_to_out(t, t->ina, a[0], flags),
		            tc_to_out(t, t->inb, b[0], flags), 0, &t->env);
	} else {
		emu_bits lo = tc_pairwise(t, a, b, n / 2, flags);
		emu_bits hi = tc_pairwise(t, a + n / 2, b + n / 2, n - n / 2, flags);
		r = emu_add(t->out, lo, hi, &t->env);
	}
	*flags |= r.flags;
	return tc_ftz_out(t, r.bits, flags);
}

/* floor(S / 2^s), s >= 0; *lost when bits go. */
static __int128 tc_floor_shr(__int128 S, int s, bool *lost)
{
	if (s <= 0 || S == 0)
		return S;
	unsigned __int128 U = S < 0 ? -(unsigned __int128)S : (unsigned __int128)S;
	unsigned __int128 q = s >= 128 ? 0 : U >> s;
	bool rem = s >= 128 || (U & (((unsigned __int128)1 << s) - 1)) != 0;
	*lost |= rem;
	if (S < 0)
		return -(__int128)(q + rem);
	return (__int128)q;
}

/* acc=rd, one block (MMA-Sim's amd_fused_dot_rd_add): the products fused
 * in 23 + neab bits below their largest exponent (split=2: even and odd
 * positions apart, then floored onto the larger one's grid); that sum
 * floored to 31 bits and C to 24 bits below the larger of the products' and
 * C's exponents (split=2: a C more than 25 binades below is dropped); the
 * two added and rounded once. An exact zero is +0; a finite product of
 * magnitude 2^128 or more counts as an infinity. */
static double tc_block_rd(const tc_ctx *t, const emu_bits *a, const emu_bits *b, size_t n,
                          double c, unsigned *flags)
{
	const emu_tc_model *m = &t->m;
	const emu_format *fa = t->ina, *fb = t->inb;
	size_t halves = (size_t)m->split;
	int nb = TC_FRAC + m->neab;
	bool nan = isnan(c), pinf = isinf(c) && !signbit(c), ninf = isinf(c) && signbit(c);
	bool invalid = false, povf = false, novf = false, any[2] = {false, false};
	int R[2] = {0, 0};
	for (size_t i = 0; i < n; i++) {
		double x = tc_decode(fa, a[i]), y = tc_decode(fb, b[i]);
		bool neg = (signbit(x) != 0) != (signbit(y) != 0);
		if (isnan(x) || isnan(y)) {
			nan = true;
			continue;
		}
		if (isinf(x) || isinf(y)) {
			if (x == 0 || y == 0)
				invalid = true;
			else
				*(neg ? &ninf : &pinf) = true;
			continue;
		}
		if ((x == 0 || y == 0) && !m->zero_align)
			continue;
		if (fabs(x * y) >= 0x1p128) { /* exact: at most 48 significant bits */
			*(neg ? &novf : &povf) = true;
			continue;
		}
		int E = tc_exp(fa, x) + tc_exp(fb, y), h = (int)(i % halves);
		if (!any[h] || E > R[h])
			R[h] = E;
		any[h] = true;
	}
	if (nan || invalid || (pinf && ninf))
		return emu_nan_result(t->out, invalid || (pinf && ninf), flags);
	if (pinf || ninf)
		return ninf ? -INFINITY : INFINITY;
	if (povf && novf)
		return emu_nan_result(t->out, true, flags);
	if (povf || novf) {
		*flags |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
		double v = m->sat ? t->out->max : INFINITY;
		return novf ? -v : v;
	}

	bool lost = false;
	__int128 S[2] = {0, 0};
	for (size_t i = 0; i < n; i++) {
		double x = tc_decode(fa, a[i]), y = tc_decode(fb, b[i]);
		if (x == 0 || y == 0)
			continue;
		uint64_t Pa, Pb;
		int ea, eb, la, lb;
		size_t h = i % halves;
		tc_split(x, fa->emin, fa->p, &Pa, &ea, &la);
		tc_split(y, fb->emin, fb->p, &Pb, &eb, &lb);
		tc_add_term(&S[h], (signbit(x) != 0) != (signbit(y) != 0), Pa * Pb,
		            la + lb - (R[h] - nb), &lost);
	}
	bool anyp = any[0] || any[1];
	int Rp = any[0] ? R[0] : R[1];
	__int128 Sp = any[0] ? S[0] : S[1];
	if (any[0] && any[1]) { /* split=2: the halves onto the larger one's grid */
		Rp = R[0] > R[1] ? R[0] : R[1];
		Sp = tc_floor_shr(S[0], Rp - R[0], &lost) + tc_floor_shr(S[1], Rp - R[1], &lost);
	}

	/* C: its significand on its own grid (a zero C has exponent −126 under
	 * zalign=1, and no part otherwise) */
	bool anyc = false;
	int ec = FP32_EMIN, Lc = FP32_EMIN - TC_FRAC;
	__int128 Sc = 0;
	if (c != 0) {
		uint64_t P;
		tc_split(c, FP32_EMIN, 24, &P, &ec, &Lc);
		Sc = signbit(c) ? -(__int128)P : (__int128)P;
		anyc = true;
	} else if (m->zero_align) {
		anyc = true;
	}
	if (!anyp && !anyc)
		return 0.0;
	int maxe = !anyp ? ec : !anyc || Rp > ec ? Rp : ec;
	int Lp = Rp - nb;
	if (anyp && maxe - 31 > Lp) {
		Sp = tc_floor_shr(Sp, maxe - 31 - Lp, &lost);
		Lp = maxe - 31;
	}
	if (anyc && halves == 2 && anyp && ec < maxe - 25) {
		lost |= Sc != 0;
		anyc = false; /* dropped: no term, no grid */
	} else if (anyc && maxe - 24 > Lc) {
		Sc = tc_floor_shr(Sc, maxe - 24 - Lc, &lost);
		Lc = maxe - 24;
	}
	int G = !anyp ? Lc : !anyc || Lp < Lc ? Lp : Lc;
	__int128 T = 0;
	if (anyp)
		T += Sp * ((__int128)1 << (Lp - G));
	if (anyc)
		T += Sc * ((__int128)1 << (Lc - G));
	if (lost)
		*flags |= EMU_FLAG_INEXACT;
	if (T == 0)
		return 0.0;
	bool neg = T < 0;
	unsigned __int128 U = neg ? -(unsigned __int128)T : (unsigned __int128)T;
	unsigned fl = 0;
	double r = emu_round_core(&t->blk, neg, (uint64_t)U, G, false, &t->env, &fl);
	if ((fl & EMU_FLAG_OVERFLOW) && !m->sat && isfinite(r))
		r = neg ? -INFINITY : INFINITY;
	*flags |= fl;
	return r;
}

/* One block of the AMD kinds, from accumulator c (a value of out). */
static double tc_block_amd(const tc_ctx *t, const emu_bits *a, const emu_bits *b, size_t n,
                           double c, unsigned *flags)
{
	const emu_format *o = t->out;
	double r;
	if (t->m.acc == EMU_TC_ACC_RD) {
		r = tc_block_rd(t, a, b, n, c, flags);
	} else {
		emu_bits acc = emu_encode(o, c);
		if (t->m.ftz && (acc & ~o->sign_mask & o->exp_mask) == 0 && !isnan(c))
			acc = 0; /* ftz=1: a zero or subnormal C reads as +0 */
		if (t->m.acc == EMU_TC_ACC_FMA) {
			for (size_t i = 0; i < n; i++) {
				emu_result s = emu_fma(o, tc_to_out(t, t->ina, a[i], flags),
				                       tc_to_out(t, t->inb, b[i], flags), acc, &t->env);
				*flags |= s.flags;
				acc = tc_ftz_out(t, s.bits, flags);
			}
		} else if (n > 0) {
			emu_result s = emu_add(o, acc, tc_pairwise(t, a, b, n, flags), &t->env);
			*flags |= s.flags;
			acc = tc_ftz_out(t, s.bits, flags);
		}
		r = emu_decode(o, acc);
	}
	return t->m.zero_pos && r == 0 ? 0.0 : r;
}

/* The chain of blocks over a[0..K) starting from C = c. Each block runs
 * all its sub-blocks in turn (a short last block too: the instruction runs
 * whole), each sub-block's result the next one's accumulator; with c_late
 * the first starts without C and C is added after the last. */
static double tc_chain(const tc_ctx *t, const emu_bits *a, const emu_bits *b, size_t K, size_t off,
                       double c, unsigned *flags)
{
	size_t k = (size_t)t->m.k;
	size_t i = 0;
	tc_sub sub = {(size_t)t->m.split, (size_t)t->m.group, 0};
	do {
		size_t n = K - i < k ? K - i : k;
		if (t->m.acc != EMU_TC_ACC_BLOCK) {
			c = tc_block_amd(t, a + i, b + i, n, c, flags);
		} else if (t->m.c_late) {
			sub.j = 0;
			double h = tc_block(t, a + i, b + i, n, off + i, &sub, 0.0, false, flags);
			for (sub.j = 1; sub.j < sub.split; sub.j++)
				h = tc_block(t, a + i, b + i, n, off + i, &sub, h, true, flags);
			c = tc_late_add(t, h, c, flags);
		} else {
			for (sub.j = 0; sub.j < sub.split; sub.j++)
				c = tc_block(t, a + i, b + i, n, off + i, &sub, c, true, flags);
		}
		i += n;
	} while (i < K);
	return c;
}

static bool tc_ctx_init(tc_ctx *t, const emu_tc_model *m, const emu_format *ina,
                        const emu_format *inb, const emu_format *out, const emu_tc_scales *sc)
{
	if (emu_tc_check(m, ina, out, NULL, 0) != EMU_OK ||
	    emu_tc_check(m, inb, out, NULL, 0) != EMU_OK ||
	    (sc && emu_tc_check_scales(m, sc, NULL, 0) != EMU_OK))
		return false;
	t->m = *m;
	t->sc = sc;
	t->ina = ina;
	t->inb = inb;
	t->out = out;
	t->fp32 = emu_format_by_name("fp32");
	t->blk = *out;
	if (m->block_prec) {
		t->blk.p = m->block_prec;
		if (emu_format_init(&t->blk) != EMU_OK)
			return false;
	}
	t->env = EMU_ENV_DEFAULT;
	t->env.mode = m->final_mode;
	t->env.sat = m->sat;
	t->env_c = t->env;
	t->env_c.mode = m->c_round;
	return t->fp32 != NULL;
}

/* C as the chain takes it: binary32, or first rounded to the output (CUDA's
 * __float2half before an fp16-accumulating mma) */
static emu_bits tc_c32(const tc_ctx *t, emu_bits c, unsigned *flags)
{
	if (!t->m.c_preround)
		return c;
	const emu_env rne = EMU_ENV_DEFAULT;
	emu_result r = emu_convert(t->out, t->fp32, c, &rne);
	*flags |= r.flags;
	return emu_convert(t->fp32, t->out, r.bits, &rne).bits; /* exact */
}

emu_result emu_tc_dot(const emu_tc_model *m, const emu_format *in, const emu_format *out,
                      const emu_bits *a, const emu_bits *b, size_t K, emu_bits c)
{
	return emu_tc_dot2(m, in, in, out, a, b, K, c);
}

emu_result emu_tc_dot2(const emu_tc_model *m, const emu_format *in_a, const emu_format *in_b,
                       const emu_format *out, const emu_bits *a, const emu_bits *b, size_t K,
                       emu_bits c)
{
	return emu_tc_dot_scaled(m, in_a, in_b, out, a, b, K, c, NULL);
}

emu_result emu_tc_dot_scaled(const emu_tc_model *m, const emu_format *in_a, const emu_format *in_b,
                             const emu_format *out, const emu_bits *a, const emu_bits *b, size_t K,
                             emu_bits c, const emu_tc_scales *s)
{
	tc_ctx t;
	unsigned flags = 0;
	const emu_env rne = EMU_ENV_DEFAULT;
	if (!tc_ctx_init(&t, m, in_a, in_b, out, s))
		return (emu_result){out->nan_bits, EMU_FLAG_INVALID};

	emu_bits c32 = tc_c32(&t, c, &flags);
	if (m->promote_every == 0) {
		double d = tc_chain(&t, a, b, K, 0, emu_decode(t.fp32, c32), &flags);
		return tc_result(&t, (emu_result){emu_encode(out, d), flags});
	}

	/* promotion: each chunk's chain starts from +0 and is added into the
	 * binary32 accumulator by an RNE addition on the CUDA cores */
	emu_bits acc = c32;
	for (size_t i = 0; i < K; i += m->promote_every) {
		size_t n = K - i < m->promote_every ? K - i : m->promote_every;
		double part = tc_chain(&t, a + i, b + i, n, i, 0.0, &flags);
		emu_result s = emu_add(t.fp32, acc, emu_encode(t.fp32, part), &rne);
		flags |= s.flags;
		acc = s.bits;
	}
	emu_result r = emu_convert(out, t.fp32, acc, &rne);
	r.flags |= flags;
	return tc_result(&t, r);
}

/* ---- a GEMM's blocks over split operands ---- */

void emu_tc_split(const emu_format *in, const emu_bits *x, size_t n, emu_tc_opnd *o)
{
	for (size_t i = 0; i < n; i++) {
		double v = tc_decode(in, x[i]);
		o[i].neg = signbit(v) != 0;
		o[i].special = isnan(v) || isinf(v);
		o[i].P = 0;
		o[i].e = EMU_TC_ZERO_E;
		if (v != 0 && !o[i].special) {
			uint64_t P;
			int e, lsb;
			tc_split(v, in->emin, in->p, &P, &e, &lsb);
			o[i].P = (uint32_t)P; /* below 2^p, p <= 24 */
			o[i].e = (int16_t)e;
		}
	}
}

bool emu_tc_plan_init(emu_tc_plan *p, const emu_tc_model *m, const emu_format *in,
                      const emu_format *out)
{
	return emu_tc_plan_init2(p, m, in, in, out, NULL);
}

/* the most terms a scaled block keeps between its passes */
#define TC_SCALED_TERMS 64

bool emu_tc_plan_init2(emu_tc_plan *p, const emu_tc_model *m, const emu_format *ina,
                       const emu_format *inb, const emu_format *out, const emu_tc_scales *s)
{
	emu_tc_model one = *m;
	one.promote_every = 0;
	if (!tc_ctx_init(p, &one, ina, inb, out, s))
		return false;
	bool fits = ina->p <= 24 && inb->p <= 24 && ina->emin > -1000 && inb->emin > -1000 &&
	            ina->emax < 1000 && inb->emax < 1000;
	bool fma = one.acc == EMU_TC_ACC_BLOCK && !one.c_late && one.split == 1;
	size_t G = one.gsum > 1 ? (size_t)one.gsum : 1;
	if (s) /* the terms tc_term_at makes, at most TC_SCALED_TERMS a block */
		p->direct = fits && fma && ((size_t)one.k + G - 1) / G <= TC_SCALED_TERMS;
	else /* every chopped product is below 2^(25+neab) (the top of the file):
	      * k of them sum in an int64 */
		p->direct = fits && fma && one.gsum <= 1 && !one.zero_align &&
		            25 + one.neab + tc_log2up(one.k) <= 62;
	return true;
}

/* One block of a direct plan over split operands, as tc_block: true with
 * its value in *r, false (nothing written) when an operand or C is a NaN or
 * an infinity, or every product is zero (tc_block_ieee decides those). */
static bool tc_block_direct(const tc_ctx *t, const emu_tc_opnd *a, const emu_tc_opnd *b, size_t n,
                            double c, unsigned *flags, double *r)
{
	tc_scan s = {0};
	tc_scan_c(t, &s, c, true);
	unsigned special = s.nan || s.pinf || s.ninf;
	int R = 2 * EMU_TC_ZERO_E;
	for (size_t i = 0; i < n; i++) {
		int E = a[i].e + b[i].e; /* a zero's product: far below any other */
		R = E > R ? E : R;
		special |= a[i].special | b[i].special;
	}
	if (special || R <= EMU_TC_ZERO_E / 2)
		return false;
	if (!s.any_term || R > s.R)
		s.R = R;
	s.any_term = true;

	/* pass 2: as tc_add_term, with a product's lsb e_a + e_b − (p_a − 1) −
	 * (p_b − 1) */
	int L = tc_window(t, &s), base = (t->ina->p - 1) + (t->inb->p - 1) + L;
	int64_t S = 0;
	uint64_t lost = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t P = (uint64_t)a[i].P * b[i].P, v;
		int sh = a[i].e + b[i].e - base;
		if (sh >= 0) {
			v = P << sh;
		} else {
			int rs = -sh < 63 ? -sh : 63; /* P < 2^48: 63 drops it all */
			v = P >> rs;
			lost |= P & ((1ull << rs) - 1);
		}
		int64_t neg = -(int64_t)(a[i].neg ^ b[i].neg);
		S += ((int64_t)v ^ neg) - neg;
	}
	__int128 S2 = S;
	bool chopped = lost != 0;
	tc_add_c(&S2, c, true, L, &chopped);
	unsigned fl = chopped ? EMU_FLAG_INEXACT : 0;
	double v = tc_round_sum(t, S2, L, &fl);
	*flags |= fl;
	*r = t->m.zero_pos && v == 0 ? 0.0 : v;
	return true;
}

double emu_tc_plan_value(const emu_tc_plan *p, const emu_bits *a, const emu_bits *b,
                         const emu_tc_opnd *sa, const emu_tc_opnd *sb, size_t n, double c,
                         unsigned *flags)
{
	double d;
	if (!(p->direct && !p->sc && sa && sb && tc_block_direct(p, sa, sb, n, c, flags, &d)))
		d = tc_chain(p, a, b, n, 0, c, flags);
	if (isnan(d)) /* the NaN's encoding, as emu_tc_plan_block gives it */
		d = emu_decode(p->out, tc_result(p, (emu_result){emu_encode(p->out, d), 0}).bits);
	return d;
}

emu_result emu_tc_plan_block(const emu_tc_plan *p, const emu_bits *a, const emu_bits *b,
                             const emu_tc_opnd *sa, const emu_tc_opnd *sb, size_t n, emu_bits c)
{
	unsigned flags = 0;
	double cd = emu_decode(p->fp32, tc_c32(p, c, &flags));
	double d = emu_tc_plan_value(p, a, b, sa, sb, n, cd, &flags);
	return tc_result(p, (emu_result){emu_encode(p->out, d), flags});
}

/* ---- several dot products' blocks as lanes ---- */

bool emu_tc_plan_lanes_ok(const emu_tc_plan *p)
{
	const emu_format *a = p->ina, *b = p->inb;
	const emu_tc_model *m = &p->m;
	/* products exact (p_a + p_b <= 53) and normal doubles within 2^±400, so
	 * that a term scaled to the window (L within them) stays a normal
	 * double; terms below 2^(25+neab) <= 2^50 (tc_vtrunc's range), k + 1
	 * of them summing below 2^53 */
	return p->direct && !p->sc && m->k <= EMU_TC_LANES_K &&
	       (m->final_mode == EMU_RTZ || m->final_mode == EMU_RNE) && a->p + b->p <= 53 &&
	       a->emin - a->p + b->emin - b->p >= -400 && a->emax + b->emax <= 400 &&
	       m->neab <= 25 && 25 + m->neab + tc_log2up(m->k + 1) <= 53 && p->blk.p >= 2 &&
	       p->blk.p <= 52;
}

void emu_tc_split_lanes(const emu_format *in, const emu_tc_opnd *o, size_t n, double *x,
                        int32_t *e)
{
	for (size_t i = 0; i < n; i++) {
		double v = ldexp((double)o[i].P, o[i].e - (in->p - 1));
		x[i] = o[i].special ? NAN : o[i].neg ? -v : v; /* a zero: P = 0 */
		e[i] = o[i].e;
	}
}

/* The lanes as one vector each (GCC's vector extensions: one AVX-512
 * register, two AVX2 ones, four SSE2 ones; the exponents, int32, half
 * that). Nothing compares vectors: GCC lowers a comparison of its generic
 * vectors element by element in a cloned function, so a lane's mask (all
 * ones or zero) is made of a difference's sign bit. Macros and pointers: a
 * vector passed by value would change the ABI between the clones. */
typedef double tc_f64x8 __attribute__((vector_size(8 * EMU_TC_LANES)));
typedef int64_t tc_i64x8 __attribute__((vector_size(8 * EMU_TC_LANES)));
typedef uint64_t tc_u64x8 __attribute__((vector_size(8 * EMU_TC_LANES)));
typedef int32_t tc_i32x8 __attribute__((vector_size(4 * EMU_TC_LANES)));
typedef uint32_t tc_u32x8 __attribute__((vector_size(4 * EMU_TC_LANES)));
/* x < y, x and y integers whose difference does not overflow */
#define TC_LT(x, y) (-(tc_i64x8)((tc_u64x8)((x) - (y)) >> 63))
/* x != 0 */
#define TC_NZ(x) (-(tc_i64x8)((tc_u64x8)((x) | -(x)) >> 63))
/* m ? a : b, lane by lane */
#define TC_SEL(m, a, b) (((a) & (m)) | ((b) & ~(m)))

/* 1.5·2^52: x + M is the integer nearest x in M's last place (the FPU
 * rounding to nearest), for |x| < 2^51 */
#define TC_MAGIC 0x1.8p52

/* *t chopped toward zero to an integer (|t| < 2^50, or not finite), its
 * fraction's bits ORed into *chop (nonzero once any fraction is): the
 * magnitude a's nearest integer r, less one when above a */
static inline void tc_vchop(tc_f64x8 *t, tc_i64x8 *chop)
{
	const tc_i64x8 one = (tc_i64x8){0} + 0x3ff0000000000000;
	tc_i64x8 tb = (tc_i64x8)*t;
	tc_f64x8 a = (tc_f64x8)(tb & INT64_MAX), r = (a + TC_MAGIC) - TC_MAGIC;
	tc_i64x8 d = (tc_i64x8)(a - r); /* +0 when a is an integer */
	*chop |= d;
	r -= (tc_f64x8)(one & -(tc_i64x8)((tc_u64x8)d >> 63));
	*t = (tc_f64x8)((tc_i64x8)r | (tb & INT64_MIN));
}

/* tc_block_direct in lanes: pass 1 (the products, exact, and their largest
 * alignment exponent R), C's exponent, the window's last place L, pass 2
 * (each term chopped: its value scaled by 2^−L, exact, chopped toward
 * zero), then tc_round_sum's rounding of S·2^L as a cut of the double's
 * significand. The chops assume the FPU rounds to nearest; under another
 * direction every lane is left. */
EMU_VEC_CLONES unsigned emu_tc_plan_lanes(const emu_tc_plan *p, const double *xa,
                                          const int32_t *ea, const double *xb, const int32_t *eb,
                                          size_t sb, size_t n, double *c, unsigned *inexact)
{
	enum { W = EMU_TC_LANES };
	if (!emu_fpu_nearest())
		return (1u << W) - 1;
	tc_f64x8 pr[EMU_TC_LANES_K];
	tc_i32x8 R32 = (tc_i32x8){0} + 4 * EMU_TC_ZERO_E;
	/* pass 1 */
	for (size_t i = 0; i < n; i++) {
		tc_f64x8 b;
		tc_i32x8 f;
		memcpy(&b, xb + i * sb, sizeof b);
		memcpy(&f, eb + i * sb, sizeof f);
		tc_i32x8 E = ea[i] + f, d = R32 - E;
		R32 -= d & -(tc_i32x8)((tc_u32x8)d >> 31); /* max(R, E) */
		pr[i] = xa[i] * b;
	}
	/* every product zero leaves the lane; C's alignment exponent,
	 * max(floor(log2|c|), emin) (tc_scan_c; a finite c is a normal double,
	 * and a C that is not finite makes S so), the window's last place
	 * L = R − 23 − neab, 2^−L and 2^L */
	const emu_tc_model *m = &p->m;
	const int64_t cemin = m->c_emin && p->out->emin > FP32_EMIN ? p->out->emin : FP32_EMIN;
	const int64_t floor_e = m->exp_floor, frac = TC_FRAC + m->neab;
	const tc_i64x8 zero = {0};
	tc_f64x8 cv;
	memcpy(&cv, c, sizeof cv);
	tc_i64x8 R = __builtin_convertvector(R32, tc_i64x8), cu = (tc_i64x8)cv,
	         cmag = cu & INT64_MAX;
	tc_i64x8 left = TC_LT(R, EMU_TC_ZERO_E / 2 + 1);
	tc_i64x8 ec = ((cu >> 52) & 0x7ff) - 1023;
	ec = TC_SEL(TC_LT(ec, cemin), zero + cemin, ec);
	R = TC_SEL(TC_NZ(cmag) & TC_LT(R, ec), ec, R);
	R = TC_SEL(TC_LT(R, floor_e), zero + floor_e, R);
	tc_i64x8 L = R - frac;
	left |= TC_LT(L, -500) | TC_LT(500, L);
	L &= ~left;
	tc_f64x8 scale = (tc_f64x8)((1023 - L) << 52), unscale = (tc_f64x8)((1023 + L) << 52);
	/* pass 2, and C's term. A NaN or an infinite product (an operand that
	 * is one) makes S a NaN or infinite, which the range check leaves. */
	tc_f64x8 S = {0};
	tc_i64x8 chop = {0};
	for (size_t i = 0; i < n; i++) {
		tc_f64x8 t = pr[i] * scale;
		tc_vchop(&t, &chop);
		S += t;
	}
	tc_f64x8 t = (tc_f64x8)((tc_i64x8)(cv * scale) & ~left);
	tc_vchop(&t, &chop);
	S += t;
	/* S·2^L (exact) rounded: the significand cut to the block format's p
	 * bits; a tiny sum, or one beyond the format's max (a NaN's or an
	 * infinity's bits too), is left */
	tc_i64x8 u = (tc_i64x8)(S * unscale), mag = u & INT64_MAX;
	const emu_format *o = &p->blk;
	const int drop = 53 - o->p;
	const int64_t cut = ((int64_t)1 << drop) - 1, half = cut >> 1;
	int64_t lo, hi;
	memcpy(&lo, &o->min_normal, sizeof lo);
	memcpy(&hi, &o->max, sizeof hi);
	tc_i64x8 r = (m->final_mode == EMU_RNE ? mag + half + ((mag >> drop) & 1) : mag) & ~cut;
	tc_i64x8 nz = TC_NZ(mag);
	left |= nz & (TC_LT(mag, lo) | TC_LT(hi, r));
	tc_i64x8 inx = TC_NZ(chop & INT64_MAX) | TC_NZ(r ^ mag);
	/* S is never −0 (it starts at +0, and x + (−x) and +0 + −0 are +0 in
	 * round to nearest): a zero sum is +0, as tc_round_sum's */
	tc_i64x8 res = r | (u & INT64_MIN);
	unsigned mask = 0;
	for (size_t l = 0; l < W; l++) {
		if (left[l]) {
			mask |= 1u << l;
			continue;
		}
		inexact[l] = inx[l] != 0;
		int64_t bits = res[l]; /* (no address of a vector's element) */
		memcpy(&c[l], &bits, sizeof c[l]);
	}
	return mask;
}

/* ---- a block-scaled GEMM's blocks over split operands and scales ---- */

void emu_tc_split_scales(const emu_format *fmt, const emu_bits *x, size_t n, emu_tc_opnd *o)
{
	for (size_t i = 0; i < n; i++) {
		emu_bits v = fmt->has_sign ? x[i] & ~fmt->sign_mask : x[i]; /* ue4m3 */
		double d = emu_decode(fmt, v);
		o[i].neg = 0;
		o[i].special = !isfinite(d);
		o[i].P = 0;
		o[i].e = FP32_EMIN; /* a zero scale's exponent (tc_scale's) */
		if (d != 0 && isfinite(d)) {
			uint64_t P;
			int e, lsb;
			tc_split(d, fmt->emin, fmt->p, &P, &e, &lsb);
			o[i].P = (uint32_t)P; /* below 2^p, p <= 8 */
			o[i].e = (int16_t)e;
		}
	}
}

/* One block of a direct scaled plan, as tc_block over tc_block_terms: the
 * same terms as tc_term_at makes them, from split operands and scales
 * (sa[i / block] for product i). True with the value in *r; false (nothing
 * written) when an operand or a scale is a NaN or an infinity. */
static bool tc_block_scaled(const tc_ctx *t, const emu_tc_opnd *a, const emu_tc_opnd *b, size_t n,
                            const emu_tc_opnd *sa, const emu_tc_opnd *sb, double c, unsigned *flags,
                            double *r)
{
	const emu_tc_model *m = &t->m;
	const emu_format *fa = t->ina, *fb = t->inb;
	size_t G = m->gsum > 1 ? (size_t)m->gsum : 1, nt = (n + G - 1) / G, blk = t->sc->block;
	/* (a NaN or an infinite C is pass 1's, as in tc_block_terms; FP4 and
	 * FP6 have no specials to look for) */
	unsigned special = 0;
	if (fa->has_inf || fa->nan != EMU_NAN_NONE || fb->has_inf || fb->nan != EMU_NAN_NONE)
		for (size_t i = 0; i < n; i++)
			special |= a[i].special | b[i].special;
	for (size_t g = 0; n && g <= (n - 1) / blk; g++)
		special |= sa[g].special | sb[g].special;
	if (special)
		return false;

	tc_scan s = {0};
	tc_scan_c(t, &s, c, true);
	int pa = fa->p - 1, pb = fb->p - 1, ps = t->sc->fmt->p - 1;
	int Lg = (fa->emin - pa) + (fb->emin - pb); /* a group's grid */
	tc_term kt[TC_SCALED_TERMS];
	size_t nk = 0;
	for (size_t j = 0; j < nt; j++) {
		size_t i0 = j * G, i1 = i0 + G < n ? i0 + G : n;
		const emu_tc_opnd *A = &sa[i0 / blk], *B = &sb[i0 / blk];
		uint64_t PA = A->P, PB = B->P;
		int lA = PA ? A->e - ps : FP32_EMIN, lB = PB ? B->e - ps : FP32_EMIN;
		bool szero = PA == 0 || PB == 0;
		tc_term o = {0};
		if (G == 1) {
			const emu_tc_opnd *x = &a[i0], *y = &b[i0];
			o.neg = x->neg ^ y->neg;
			o.zero = x->P == 0 || y->P == 0 || szero;
			/* tc_exp: a zero operand's exponent is −126 */
			o.E = (x->P ? x->e : FP32_EMIN) + (y->P ? y->e : FP32_EMIN) + A->e + B->e;
			o.P = (uint64_t)x->P * y->P * PA * PB;
			o.lsb = (x->e - pa) + (y->e - pb) + lA + lB;
		} else {
			/* without branches: a zero product adds 0; zneg, read only
			 * when every product is zero, ANDs every sign */
			int64_t sum = 0;
			unsigned any = 0, zneg = 1;
			for (size_t i = i0; i < i1; i++) {
				uint64_t P = (uint64_t)a[i].P * b[i].P;
				unsigned neg = a[i].neg ^ b[i].neg, nz = P != 0;
				int sh = nz ? a[i].e + b[i].e - (pa + pb + Lg) : 0;
				int64_t v = (int64_t)(P << sh), sg = -(int64_t)neg;
				sum += (v ^ sg) - sg;
				any |= nz;
				zneg &= neg;
			}
			o.neg = sum < 0 || (sum == 0 && (any ? m->final_mode == EMU_DOWN : zneg));
			o.zero = sum == 0 || szero;
			o.E = A->e + B->e;
			o.P = (sum < 0 ? -(uint64_t)sum : (uint64_t)sum) * PA * PB;
			o.lsb = Lg + lA + lB;
		}
		tc_scan_term(&s, o.neg, o.zero, o.E);
		if (o.zero && m->zero_align)
			tc_scan_zexp(&s, o.E);
		if (!o.zero)
			kt[nk++] = o;
	}
	double v;
	if (!tc_scan_done(t, &s, flags, &v)) {
		/* pass 2: chop every term to the window and sum exactly, C first */
		int L = tc_window(t, &s);
		__int128 S = 0;
		bool chopped = false;
		tc_add_c(&S, c, true, L, &chopped);
		for (size_t j = 0; j < nk; j++)
			tc_add_term(&S, kt[j].neg, kt[j].P, kt[j].lsb - L, &chopped);
		if (chopped)
			*flags |= EMU_FLAG_INEXACT;
		v = tc_round_sum(t, S, L, flags);
	}
	*r = m->zero_pos && v == 0 ? 0.0 : v;
	return true;
}

bool emu_tc_plan_scaled(const emu_tc_plan *p, const emu_tc_opnd *a, const emu_tc_opnd *b,
                        const emu_tc_opnd *sa, const emu_tc_opnd *sb, size_t n, emu_bits c,
                        emu_result *r)
{
	if (!p->direct || !p->sc || n > (size_t)p->m.k)
		return false;
	unsigned flags = 0;
	double d, cd = emu_decode(p->fp32, tc_c32(p, c, &flags));
	if (!tc_block_scaled(p, a, b, n, sa, sb, cd, &flags, &d))
		return false;
	*r = tc_result(p, (emu_result){emu_encode(p->out, d), flags});
	return true;
}
