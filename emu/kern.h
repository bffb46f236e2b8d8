/*
 * kern.h — the arithmetic the kernels are written in, one interface for the
 * three backends, and the precision policy.
 *
 * A kernel is written once against emu_k_* and runs on:
 *   EMU_BE_FAST  the fast emulator: values are doubles holding exact format
 *                values; every operation is one emu_* call;
 *   EMU_BE_EXACT MPFR in the format (emu_mp_apply) on the same doubles; must
 *                agree with FAST bit for bit and flag for flag;
 *   EMU_BE_TRUTH MPFR at EMU_TRUTH_PREC bits, formats ignored: the answer
 *                errors are judged by. Two kinds of truth run: from the
 *                inputs as stored (emu_k_input and emu_k_load give what the
 *                kernel's own load gives) and, with emu_be.exact_inputs,
 *                from the original inputs (nothing stored, no recipe).
 * Every operation names the kernel step and element index it belongs to, so
 * a run can say which operation raised overflow, invalid or divbyzero first.
 * Stochastic rounding draws are keyed by the run's seed and a counter of
 * operations in kernel order, so a run is reproducible.
 */
#ifndef NANMAP_KERN_H
#define NANMAP_KERN_H

#include <mpfr.h>

#include "emu.h"
#include "gputab.h"

#define EMU_TRUTH_PREC 256

typedef enum { EMU_BE_FAST = 0, EMU_BE_EXACT, EMU_BE_TRUTH, EMU_NBE } emu_be_kind;

/* A value: d for FAST and EXACT (an exact value of its format, or ±inf/NaN);
 * m for TRUTH (points into storage the backend owns). */
typedef struct {
	double d;
	mpfr_ptr m;
} emu_val;

enum { EMU_NFLAGS = 5 }; /* flag bits, as EMU_FLAG_* */

typedef struct {
	uint64_t ops[EMU_NOPS];
	uint64_t flags[EMU_NOPS][EMU_NFLAGS];
	unsigned all_flags;
	bool first_set; /* first op that raised overflow, invalid or divbyzero */
	emu_op first_op;
	unsigned first_flags;
	const char *first_step;
	uint64_t first_index;
	/* input elements as stored (emu_k_input, emu_k_load): how many were
	 * stored, changed by storing (value differs, or NaN for a number),
	 * raised overflow (saturated, or inf/NaN from a finite value), and
	 * became zero from a nonzero finite value (flushed). TRUTH with
	 * exact_inputs or range stores nothing: all 0. */
	uint64_t in_n, in_changed, in_overflow, in_flushed;
} emu_be_stats;

typedef struct emu_be {
	emu_be_kind kind;
	emu_env env; /* mode, sat, ftz, daz, seed; env.index counts operations */
	emu_be_stats st;
	/* TRUTH only, set after emu_be_init: values stay exact (inputs too, not
	 * stored first), and every emu_k_input / emu_k_op also raises the
	 * overflow and underflow its format would (emu_k_range), so a run finds
	 * where the exact computation leaves the formats' ranges */
	bool range;
	/* TRUTH only, set after emu_be_init: inputs are the exact doubles given,
	 * not stored and not passed through the scaling recipe (the truth of
	 * the original inputs, for end-to-end errors) */
	bool exact_inputs;
	/* set by emu_k_load while it loads: it counts the elements it stores
	 * itself (emu_k_note_input), so emu_k_input does not */
	bool loading;
	/* with range: the largest log2(|v| / (max + ulp(max)/2)) over the
	 * values checked, a continuous measure of how far the run is from (or
	 * beyond) an overflow; set it to -INFINITY together with range */
	double range_peak;
	/* FAST only, NULL by default (set after emu_be_init; not owned): fp16
	 * and bf16 exp, log, exp2, rsqrt and sqrt are the table's encoding for
	 * the operand's, as the GPU computes them (docs/gpu.md). The policy's
	 * rounding mode, overflow=sat and ftz/daz do not apply to them. Flags:
	 * the correctly rounded op's when the table agrees with it; otherwise
	 * invalid for NaN from non-NaN; from ±0 or ±inf, divbyzero for inf
	 * from 0, else none; otherwise inexact, plus overflow for inf and
	 * underflow for a zero or subnormal result. */
	const emu_gpu_tables *tables;
	/* everything emu_k_vec allocated, freed by emu_be_free */
	void **allocs;
	size_t nallocs, capallocs;
} emu_be;

/* ---- backends (emu/backend.c) ---- */
void emu_be_init(emu_be *be, emu_be_kind kind, const emu_env *env);
void emu_be_free(emu_be *be);
const char *emu_be_name(emu_be_kind k);
emu_be_kind emu_be_by_name(const char *name); /* EMU_NBE if unknown */
/* n values, all +0. Freed with the backend. NULL on allocation failure. */
emu_val *emu_k_vec(emu_be *be, size_t n);
/* x stored in f: rounded by the policy's mode in every backend (an input
 * tensor is what it is in storage), except TRUTH with range or exact_inputs,
 * which keeps x. Counted in emu_be_stats.in_*. */
void emu_k_input(emu_be *be, emu_val *dst, double x, const emu_format *f, const char *step,
                 uint64_t i);
/* A constant exactly representable in the formats it meets (0, 1, 0.5, N). */
void emu_k_const(emu_be *be, emu_val *dst, double x);
/* dst = op(a, b, c) rounded to f (TRUTH: not rounded). EMU_OP_CVT rounds a
 * into f. Operands must be values of f (convert first). */
void emu_k_op(emu_be *be, emu_op op, emu_val *dst, const emu_val *a, const emu_val *b,
              const emu_val *c, const emu_format *f, const char *step, uint64_t i);
void emu_k_copy(emu_be *be, emu_val *dst, const emu_val *a);
/* Count one input element stored: x the original, v its stored value,
 * fl the flags storing raised (emu_be_stats.in_*). */
void emu_k_note_input(emu_be *be, double x, double v, unsigned fl);
/* Record an operation a kernel computed outside emu_k_op (a Tensor Core
 * block): its flags, and the first overflow/invalid/divbyzero site. */
void emu_k_note(emu_be *be, emu_op op, unsigned fl, const char *step, uint64_t i);
/* What rounding the exact value v to f under be's environment would raise:
 * EMU_FLAG_OVERFLOW as the format's rounding decides it (RNE: |v| at or
 * above max + ulp(max)/2), EMU_FLAG_UNDERFLOW when v is nonzero and rounds
 * to zero. 0 for zero, infinities and NaN. TRUTH values only. */
unsigned emu_k_range(const emu_be *be, const emu_val *v, const emu_format *f);
/* Nearest double (TRUTH rounds to nearest). */
double emu_k_d(const emu_be *be, const emu_val *v);
/* -1, 0, 1, or 2 when unordered. */
int emu_k_cmp(const emu_be *be, const emu_val *a, const emu_val *b);

/* ---- precision policy (emu/policy.c) ---- */
typedef enum {
	EMU_SCALE_NONE = 0,
	EMU_SCALE_TENSOR,  /* current scaling: fp8_max / amax */
	EMU_SCALE_DELAYED, /* amax history of length L, margin */
	EMU_SCALE_MX32,    /* blocks of 32 with an e8m0 scale, floor or rceil */
	EMU_SCALE_TILE128, /* 1x128 tiles, s = amax / max */
} emu_scale_kind;

typedef struct {
	emu_format storage, compute, accum;
	emu_env env;
	emu_scale_kind scale;
	int delayed_len, delayed_margin;
	bool mx_rceil;
	char spec[192]; /* the canonical spec string */
} emu_policy;

/* "storage=fp16,compute=fp32,accum=fp32,round=rne,overflow=ieee" and
 * "storage=e4m3,compute=fp32,scale=mx32:rceil". Keys: storage (required),
 * compute (default: storage), accum (default: compute), round
 * (rne|rtz|up|down|rna|sr), overflow (ieee|sat), subnormals
 * (keep|ftz|daz|ftzdaz), seed (for sr), scale (none|tensor|delayed:L:margin|
 * mx32:floor|mx32:rceil|tile128). A custom format goes in braces:
 * storage={p=5,emax=15}. */
emu_status emu_policy_parse(const char *spec, emu_policy *out, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
