/*
 * hw.h — hardware oracles: the x86 instructions that compute in a small
 * format, used by the tests as an independent reference for the emulator.
 *
 * Every function is compiled with __attribute__((target(...))) so the library
 * builds with portable flags; call one only after emu_hw_has() said yes (the
 * functions themselves check and return false, writing nothing, otherwise).
 * On non-x86 builds everything reports "not available".
 *
 * Encodings are uint16_t, exactly the bits the instruction produced: NaN
 * payloads are the hardware's (the emulator produces one canonical NaN), so
 * callers compare NaN against NaN by class, not by bits.
 */
#ifndef NANMAP_HW_H
#define NANMAP_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/emu.h"

typedef enum {
	EMU_HW_F16C = 0,   /* vcvtps2ph / vcvtph2ps (CPUID.1:ECX.29 + OS AVX state) */
	EMU_HW_AVX512FP16, /* fp16 arithmetic (CPUID.(7,0):EDX.23 + OS ZMM state) */
	EMU_HW_AVX512BF16, /* vcvtneps2bf16 (CPUID.(7,1):EAX.5 + OS ZMM state) */
	EMU_HW_NFEATURES
} emu_hw_feature;

/* true when the CPU has the feature and the OS saves its registers. */
bool emu_hw_has(emu_hw_feature f);
/* "F16C", "AVX-512 FP16", "AVX-512 BF16". */
const char *emu_hw_feature_name(emu_hw_feature f);
/* Why the feature is absent, one line without a trailing newline, e.g.
 * "AVX-512 FP16 absent (CPUID leaf 7 EDX bit 23)"; "" when it is present. */
const char *emu_hw_absent_reason(emu_hw_feature f);

/* The rounding modes the instructions encode in imm8/EVEX.RC: RNE, RTZ, UP,
 * DOWN. RNA and SR have no hardware equivalent. */
bool emu_hw_mode_ok(emu_mode m);

/* F16C: n floats -> fp16 encodings with the given static rounding mode
 * (vcvtps2ph imm8, MXCSR not consulted; DAZ is cleared for the call so
 * subnormal floats are read as they are). Exceptions are suppressed. */
bool emu_hw_f16c_from_float(const float *in, uint16_t *out, size_t n, emu_mode m);
/* F16C: n fp16 encodings -> floats (exact; vcvtph2ps). */
bool emu_hw_f16c_to_float(const uint16_t *in, float *out, size_t n);

/* AVX-512 FP16: out[i] = op(a[i], b[i], c[i]) on fp16 encodings with embedded
 * rounding mode m (MXCSR not consulted; FP16 instructions never flush
 * subnormals). op is EMU_OP_ADD, SUB, MUL, DIV, SQRT (a only) or FMA
 * (a*b + c, one rounding). Operands an op does not use may be NULL. */
bool emu_hw_fp16_apply(emu_op op, emu_mode m, const uint16_t *a, const uint16_t *b,
                       const uint16_t *c, uint16_t *out, size_t n);

/* AVX-512 BF16: n floats -> bf16 with vcvtneps2bf16. Intel documents it as
 * RNE with fixed non-IEEE behaviour: subnormal inputs become a zero of the
 * same sign (DAZ), NaNs keep their truncated payload with the quiet bit set,
 * no flags. IEEE-comparable inputs: everything but fp32 subnormals. */
bool emu_hw_bf16_from_float(const float *in, uint16_t *out, size_t n);

#endif
