/*
 * internal.h — what the fast backend's operation files share: the special
 * results (NaN, infinities, zeros) every operation ends in, the input reader
 * that applies DAZ, and the exact-value adaptors into the rounding core.
 * The choices those results make are specialize.h's. Nothing here is part
 * of the library's interface: the functions are hidden from libnanmap.so's
 * exports (EMU_INTERNAL), though a static link still reaches them.
 */
#ifndef NANMAP_EMU_INTERNAL_H
#define NANMAP_EMU_INTERNAL_H

#include <fenv.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/core/emu.h"
#include "emu/core/specialize.h"

#define EMU_INTERNAL __attribute__((visibility("hidden")))

/* A hot loop cloned for x86-64-v4 (AVX-512: 32 vector registers, compares
 * into mask registers, vpmullq, vcvttpd2qq, vpmovqd), AVX2 and plain
 * x86-64; glibc's ifunc picks one at load time. optimize("O3"): the default
 * -O2 cost model of GCC 12 does not vectorize these loops. An "arch=<cpu>"
 * clone would only be chosen on exactly that CPU model, hence the feature
 * level. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define EMU_VEC_CLONES                                                                             \
	__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"), optimize("O3")))
#else
#define EMU_VEC_CLONES
#endif

/* A NaN result; `invalid` says whether the operation itself was invalid. */
EMU_INTERNAL double emu_nan_result(const emu_format *f, bool invalid, unsigned *flags);
/* An infinite result of sign neg; dbz: exact (divide by zero), else from an
 * infinite operand. Applies sat and the format's lack of inf. */
EMU_INTERNAL double emu_inf_result(const emu_format *f, bool neg, bool dbz, const emu_env *env,
                                   unsigned *flags);
/* An exact zero result of sign neg (fnuz: +0; no zero: e8m0 rule). */
EMU_INTERNAL double emu_zero_result(const emu_format *f, bool neg, unsigned *flags);
/* An exact real result that may need rounding: x exact in double. */
EMU_INTERNAL double emu_round_exact(const emu_format *f, double x, const emu_env *env,
                                    unsigned *flags);
/* A binary64 source rounded into f (emu_from_double in the value domain):
 * daz on the source, invalid for a signaling NaN. */
EMU_INTERNAL double emu_v_from_double(const emu_format *f, double x, const emu_env *env,
                                      unsigned *flags);
/* An operand: decoded, with DAZ applied. */
EMU_INTERNAL double emu_operand(const emu_format *f, emu_bits b, const emu_env *env);
/* invalid for a signaling NaN operand (IEEE 754-2019 §7.2(a)); the result
 * is the produced NaN, which is quiet, so quieting needs nothing else. */
/* Does the CPU's double arithmetic round to nearest? The fast paths let
 * it round (x + magic, the products' error terms). On x86-64 that
 * arithmetic is SSE's, whose MXCSR rounding bits (13-14) are read inline:
 * fegetround is a call into libm at every array operation. (The library
 * as a whole assumes binary64 subnormals are kept: no FTZ or DAZ.) */
static inline bool emu_fpu_nearest(void)
{
#if defined(__x86_64__) && defined(__SSE2__)
	return (__builtin_ia32_stmxcsr() & 0x6000u) == 0;
#else
	return fegetround() == FE_TONEAREST;
#endif
}

/* Does the CPU keep float subnormals? The binary32 paths (round_f32, the
 * float folds) let float conversions and arithmetic make binary32's
 * subnormals, which MXCSR's FTZ (bit 15) and DAZ (bit 6) would flush: set
 * in a process built with -ffast-math, or by a framework asked to flush
 * denormals. Elsewhere assumed kept. */
static inline bool emu_fpu_subnormals(void)
{
#if defined(__x86_64__) && defined(__SSE2__)
	return (__builtin_ia32_stmxcsr() & 0x8040u) == 0;
#else
	return true;
#endif
}

/* f is IEEE binary32 (float): its values and the CPU's float arithmetic
 * on them are the same */
static inline bool emu_is_binary32(const emu_format *f)
{
	return f->p == 24 && f->emin == -126 && f->emax == 127 && f->has_sign && f->has_inf &&
	       f->has_subnormals && f->has_zero && f->nan == EMU_NAN_IEEE;
}

static inline unsigned emu_snan_flag(const emu_format *f, emu_bits b)
{
	return emu_is_snan(f, b) ? EMU_FLAG_INVALID : 0;
}
static inline emu_result emu_pack(const emu_format *f, double v, unsigned flags)
{
	return (emu_result){emu_encode(f, v), flags};
}
/* The vectorised RNE/SR array loop (round_simd.c); false when the format,
 * mode or environment is outside its scope. */
EMU_INTERNAL bool emu_round_array_simd(const emu_format *f, const double *in, emu_bits *out,
                                       size_t n, const emu_env *env, unsigned *flags_out);
/* A double's bits and back (memcpy: no aliasing trouble, compiles to a move). */
static inline uint64_t emu_dbits(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}
static inline double emu_bitsd(uint64_t u)
{
	double x;
	memcpy(&x, &u, sizeof x);
	return x;
}
/* 2^k for -1022 <= k <= 1023, built from bits (exact, no libm call). */
static inline double emu_pow2(int k)
{
	union {
		uint64_t u;
		double d;
	} c = {.u = (uint64_t)(k + 1023) << 52};
	return c.d;
}
/* 2^k for any k, exact where double has it: emu_pow2 in the normal range,
 * ldexp (subnormal, zero or inf) outside it. */
static inline double emu_pow2_any(int k)
{
	return k >= -1022 && k <= 1023 ? emu_pow2(k) : ldexp(1.0, k);
}

/* SR's 32 random bits for (seed, index), inline for the vectorised loops
 * (round_simd.c, aops.c); emu_sr_bits is this, as a function. */
static inline __attribute__((always_inline)) uint32_t emu_sr_draw(uint64_t seed,
                                                                   uint64_t index)
{
	return (uint32_t)(emu_draw64(seed, index) >> 32);
}

#endif
