/*
 * hw_x86.c — the x86 hardware oracles declared in hw.h.
 *
 * Detection reads CPUID and XCR0 directly (not only __builtin_cpu_supports),
 * so the skip message can name the exact bit that is missing and so a CPU
 * whose OS does not save the AVX/ZMM state counts as "absent". The kernels are
 * compiled with target attributes; nothing here needs -march flags. The
 * rounding mode is an immediate in every instruction, so each kernel is
 * instantiated once per mode by a macro and picked by a switch.
 */
#include "tests/oracles/hw.h"

#include <string.h>

static const char *const feature_names[EMU_HW_NFEATURES] = {
    "F16C",
    "AVX-512 FP16",
    "AVX-512 BF16",
};

const char *emu_hw_feature_name(emu_hw_feature f)
{
	return (unsigned)f < EMU_HW_NFEATURES ? feature_names[f] : "?";
}

bool emu_hw_mode_ok(emu_mode m)
{
	return m == EMU_RNE || m == EMU_RTZ || m == EMU_UP || m == EMU_DOWN;
}

#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

/* The FP16/BF16 intrinsics need GCC >= 12 or a clang whose immintrin.h
 * declares them without a global -mavx512fp16 (clang 14 does not): test the
 * headers' include guards, and report the oracle absent when they are
 * missing rather than failing the build. */
#if defined(__AVX512FP16INTRIN_H_INCLUDED) || defined(__AVX512FP16INTRIN_H)
#define HW_HAVE_FP16_INTRIN 1
#else
#define HW_HAVE_FP16_INTRIN 0
#endif
#if defined(_AVX512BF16INTRIN_H_INCLUDED) || defined(__AVX512BF16INTRIN_H)
#define HW_HAVE_BF16_INTRIN 1
#else
#define HW_HAVE_BF16_INTRIN 0
#endif

/* ---- detection ---- */

enum {
	R_OK = 0,
	R_NOCPUID,
	R_NOF16C,
	R_NOOSXSAVE,
	R_NOAVXSTATE,
	R_NOLEAF7,
	R_NOAVX512F,
	R_NOZMMSTATE,
	R_NOAVX512BW,
	R_NOAVX512VL,
	R_NOFP16,
	R_NOLEAF7_1,
	R_NOBF16,
	R_NOINTRIN,
	R_COUNT
};

/* Indexed by feature and R_* code: whole sentences, nothing to format. */
#define REASONS(NAME)                                                                              \
	{                                                                                          \
		[R_OK] = "", [R_NOCPUID] = NAME " absent (no CPUID leaf 1)",                       \
		[R_NOF16C] = NAME " absent (CPUID leaf 1 ECX bit 29)",                             \
		[R_NOOSXSAVE] =                                                                    \
		    NAME " unusable (CPUID leaf 1 ECX bit 27: OS has not enabled XSAVE)",          \
		[R_NOAVXSTATE] = NAME " unusable (XCR0 bits 1-2: OS does not save AVX state)",     \
		[R_NOLEAF7] = NAME " absent (CPUID leaf 7 not supported)",                         \
		[R_NOAVX512F] = NAME " unusable (CPUID leaf 7 EBX bit 16: no AVX-512F)",           \
		[R_NOZMMSTATE] = NAME " unusable (XCR0 bits 5-7: OS does not save ZMM state)",     \
		[R_NOAVX512BW] = NAME " unusable (CPUID leaf 7 EBX bit 30: no AVX-512BW)",         \
		[R_NOAVX512VL] = NAME " unusable (CPUID leaf 7 EBX bit 31: no AVX-512VL)",         \
		[R_NOFP16] = NAME " absent (CPUID leaf 7 EDX bit 23)",                             \
		[R_NOLEAF7_1] = NAME " absent (CPUID leaf 7 subleaf 1 not supported)",             \
		[R_NOBF16] = NAME " absent (CPUID leaf 7 subleaf 1 EAX bit 5)",                    \
		[R_NOINTRIN] = NAME                                                                \
		    " oracle not compiled (this compiler's immintrin.h lacks the intrinsics)",     \
	}
/* Each entry is NAME followed by a reason: the concatenation is meant. */
/* NOLINTBEGIN(bugprone-suspicious-missing-comma) */
static const char *const reason_text[EMU_HW_NFEATURES][R_COUNT] = {
    REASONS("F16C"),
    REASONS("AVX-512 FP16"),
    REASONS("AVX-512 BF16"),
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

static uint64_t read_xcr0(void)
{
	uint32_t lo, hi;
	/* xgetbv with ECX = 0; only called once OSXSAVE is known to be set. */
	__asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/* What CPUID and XCR0 say, read once. */
struct cpu {
	unsigned max_leaf;
	bool f16c, osxsave, avx_state, zmm_state;
	unsigned leaf7_max_sub;
	bool avx512f, avx512bw, avx512vl, avx512fp16, avx512bf16;
};

static void read_cpu(struct cpu *c)
{
	unsigned a, b, cx, d;
	memset(c, 0, sizeof *c);
	c->max_leaf = __get_cpuid_max(0, NULL);
	if (c->max_leaf < 1)
		return;
	__cpuid(1, a, b, cx, d);
	c->f16c = (cx >> 29) & 1;
	c->osxsave = (cx >> 27) & 1;
	uint64_t xcr0 = c->osxsave ? read_xcr0() : 0;
	c->avx_state = (xcr0 & 0x6) == 0x6;
	c->zmm_state = (xcr0 & 0xe6) == 0xe6;
	if (c->max_leaf < 7)
		return;
	__cpuid_count(7, 0, a, b, cx, d);
	c->leaf7_max_sub = a;
	c->avx512f = (b >> 16) & 1;
	c->avx512bw = (b >> 30) & 1;
	c->avx512vl = (b >> 31) & 1;
	c->avx512fp16 = (d >> 23) & 1;
	if (c->leaf7_max_sub >= 1) {
		__cpuid_count(7, 1, a, b, cx, d);
		c->avx512bf16 = (a >> 5) & 1;
	}
}

static unsigned f16c_reason(const struct cpu *c)
{
	if (c->max_leaf < 1)
		return R_NOCPUID;
	if (!c->f16c)
		return R_NOF16C;
	if (!c->osxsave)
		return R_NOOSXSAVE;
	return c->avx_state ? R_OK : R_NOAVXSTATE;
}

/* The extension's own bit is reported first: "no FP16" is the useful
 * message on a CPU that has AVX-512 but not the extension. */
static unsigned avx512_reason(const struct cpu *c, bool ext_bit, unsigned no_ext)
{
	if (c->max_leaf < 1)
		return R_NOCPUID;
	if (c->max_leaf < 7)
		return R_NOLEAF7;
	if (!ext_bit)
		return no_ext;
	if (!c->avx512f)
		return R_NOAVX512F;
	if (!c->osxsave)
		return R_NOOSXSAVE;
	if (!c->zmm_state)
		return R_NOZMMSTATE;
	if (!c->avx512bw)
		return R_NOAVX512BW;
	return c->avx512vl ? R_OK : R_NOAVX512VL;
}

/* One reason code per feature, packed 4 bits each, plus a "done" bit: one
 * atomic word, so concurrent first calls compute the same value race-free.
 * A compiler without the FP16/BF16 intrinsics built no kernel for them:
 * those are absent whatever the CPU says. */
static _Atomic uint32_t detected;

static uint32_t detect(void)
{
	uint32_t d = atomic_load_explicit(&detected, memory_order_relaxed);
	if (d)
		return d;
	struct cpu c;
	read_cpu(&c);
	unsigned f16c = f16c_reason(&c);
	unsigned fp16 =
	    HW_HAVE_FP16_INTRIN ? avx512_reason(&c, c.avx512fp16, R_NOFP16) : R_NOINTRIN;
	unsigned bf16 = !HW_HAVE_BF16_INTRIN ? R_NOINTRIN
	                : c.max_leaf >= 7 && c.leaf7_max_sub < 1
	                    ? R_NOLEAF7_1
	                    : avx512_reason(&c, c.avx512bf16, R_NOBF16);
	d = 0x80000000u | f16c | (fp16 << 4) | (bf16 << 8);
	atomic_store_explicit(&detected, d, memory_order_relaxed);
	return d;
}

static unsigned reason_code(emu_hw_feature f)
{
	if ((unsigned)f >= EMU_HW_NFEATURES)
		return R_NOCPUID;
	return (detect() >> (4 * (unsigned)f)) & 0xf;
}

bool emu_hw_has(emu_hw_feature f)
{
	return (unsigned)f < EMU_HW_NFEATURES && reason_code(f) == R_OK;
}

const char *emu_hw_absent_reason(emu_hw_feature f)
{
	if ((unsigned)f >= EMU_HW_NFEATURES)
		return "unknown hardware feature";
	return reason_text[f][reason_code(f)];
}

/* ---- F16C ---- */

#define F16C_TARGET __attribute__((target("avx,f16c")))

/* 8 at a time with ymm; the tail goes through a zero-padded buffer. */
#define DEF_F16C_FROM(NAME, RC)                                                                    \
	F16C_TARGET static void NAME(const float *in, uint16_t *out, size_t n)                     \
	{                                                                                          \
		size_t i = 0;                                                                      \
		for (; i + 8 <= n; i += 8) {                                                       \
			__m256 v = _mm256_loadu_ps(in + i);                                        \
			__m128i h = _mm256_cvtps_ph(v, (RC) | _MM_FROUND_NO_EXC);                  \
			_mm_storeu_si128((__m128i *)(void *)(out + i), h);                         \
		}                                                                                  \
		if (i < n) {                                                                       \
			float fb[8] = {0};                                                         \
			uint16_t hb[8];                                                            \
			memcpy(fb, in + i, (n - i) * sizeof *fb);                                  \
			__m128i h =                                                                \
			    _mm256_cvtps_ph(_mm256_loadu_ps(fb), (RC) | _MM_FROUND_NO_EXC);        \
			_mm_storeu_si128((__m128i *)(void *)hb, h);                                \
			memcpy(out + i, hb, (n - i) * sizeof *hb);                                 \
		}                                                                                  \
	}

DEF_F16C_FROM(f16c_from_rne, _MM_FROUND_TO_NEAREST_INT)
DEF_F16C_FROM(f16c_from_down, _MM_FROUND_TO_NEG_INF)
DEF_F16C_FROM(f16c_from_up, _MM_FROUND_TO_POS_INF)
DEF_F16C_FROM(f16c_from_rtz, _MM_FROUND_TO_ZERO)

F16C_TARGET static void f16c_to(const uint16_t *in, float *out, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
		_mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
	}
	if (i < n) {
		uint16_t hb[8] = {0};
		float fb[8];
		memcpy(hb, in + i, (n - i) * sizeof *hb);
		_mm256_storeu_ps(
		    fb, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)hb)));
		memcpy(out + i, fb, (n - i) * sizeof *fb);
	}
}

/* MXCSR.DAZ (bit 6) would make vcvtps2ph read subnormal floats as zero; the
 * oracle must see the true input, so clear it for the call. FTZ is ignored
 * by vcvtps2ph and the rounding mode comes from imm8. */
#define MXCSR_DAZ 0x40u

bool emu_hw_f16c_from_float(const float *in, uint16_t *out, size_t n, emu_mode m)
{
	if (!emu_hw_has(EMU_HW_F16C) || !emu_hw_mode_ok(m))
		return false;
	unsigned csr = _mm_getcsr();
	if (csr & MXCSR_DAZ)
		_mm_setcsr(csr & ~MXCSR_DAZ);
	switch (m) {
	case EMU_RNE:
		f16c_from_rne(in, out, n);
		break;
	case EMU_DOWN:
		f16c_from_down(in, out, n);
		break;
	case EMU_UP:
		f16c_from_up(in, out, n);
		break;
	default:
		f16c_from_rtz(in, out, n);
		break;
	}
	if (csr & MXCSR_DAZ)
		_mm_setcsr(csr);
	return true;
}

bool emu_hw_f16c_to_float(const uint16_t *in, float *out, size_t n)
{
	if (!emu_hw_has(EMU_HW_F16C))
		return false;
	f16c_to(in, out, n);
	return true;
}

/* ---- AVX-512 FP16 ---- */
#if HW_HAVE_FP16_INTRIN

#define FP16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512fp16")))

/* 32 halves per zmm. Unused operands are read from a zero vector. */
#define DEF_FP16(NAME, RC)                                                                         \
	FP16_TARGET static __m512h NAME##_one(emu_op op, __m512h x, __m512h y, __m512h z)          \
	{                                                                                          \
		switch (op) {                                                                      \
		case EMU_OP_ADD:                                                                   \
			return _mm512_add_round_ph(x, y, (RC) | _MM_FROUND_NO_EXC);                \
		case EMU_OP_SUB:                                                                   \
			return _mm512_sub_round_ph(x, y, (RC) | _MM_FROUND_NO_EXC);                \
		case EMU_OP_MUL:                                                                   \
			return _mm512_mul_round_ph(x, y, (RC) | _MM_FROUND_NO_EXC);                \
		case EMU_OP_DIV:                                                                   \
			return _mm512_div_round_ph(x, y, (RC) | _MM_FROUND_NO_EXC);                \
		case EMU_OP_SQRT:                                                                  \
			return _mm512_sqrt_round_ph(x, (RC) | _MM_FROUND_NO_EXC);                  \
		default:                                                                           \
			return _mm512_fmadd_round_ph(x, y, z, (RC) | _MM_FROUND_NO_EXC);           \
		}                                                                                  \
	}                                                                                          \
	FP16_TARGET static void NAME(emu_op op, const uint16_t *a, const uint16_t *b,              \
	                             const uint16_t *c, uint16_t *out, size_t n)                   \
	{                                                                                          \
		uint16_t ab[32], bb[32], cb[32], ob[32];                                           \
		for (size_t i = 0; i < n; i += 32) {                                               \
			size_t k = n - i < 32 ? n - i : 32;                                        \
			memset(ab, 0, sizeof ab);                                                  \
			memset(bb, 0, sizeof bb);                                                  \
			memset(cb, 0, sizeof cb);                                                  \
			memcpy(ab, a + i, k * sizeof *ab);                                         \
			if (b)                                                                     \
				memcpy(bb, b + i, k * sizeof *bb);                                 \
			if (c)                                                                     \
				memcpy(cb, c + i, k * sizeof *cb);                                 \
			__m512h x = _mm512_castsi512_ph(_mm512_loadu_si512(ab));                   \
			__m512h y = _mm512_castsi512_ph(_mm512_loadu_si512(bb));                   \
			__m512h z = _mm512_castsi512_ph(_mm512_loadu_si512(cb));                   \
			_mm512_storeu_si512(ob, _mm512_castph_si512(NAME##_one(op, x, y, z)));     \
			memcpy(out + i, ob, k * sizeof *ob);                                       \
		}                                                                                  \
	}

DEF_FP16(fp16_rne, _MM_FROUND_TO_NEAREST_INT)
DEF_FP16(fp16_down, _MM_FROUND_TO_NEG_INF)
DEF_FP16(fp16_up, _MM_FROUND_TO_POS_INF)
DEF_FP16(fp16_rtz, _MM_FROUND_TO_ZERO)

bool emu_hw_fp16_apply(emu_op op, emu_mode m, const uint16_t *a, const uint16_t *b,
                       const uint16_t *c, uint16_t *out, size_t n)
{
	if (!emu_hw_has(EMU_HW_AVX512FP16) || !emu_hw_mode_ok(m) || !a)
		return false;
	switch (op) {
	case EMU_OP_SQRT:
		break;
	case EMU_OP_FMA:
		if (!c)
			return false;
		/* fall through */
	case EMU_OP_ADD:
	case EMU_OP_SUB:
	case EMU_OP_MUL:
	case EMU_OP_DIV:
		if (!b)
			return false;
		break;
	default:
		return false;
	}
	switch (m) {
	case EMU_RNE:
		fp16_rne(op, a, b, c, out, n);
		break;
	case EMU_DOWN:
		fp16_down(op, a, b, c, out, n);
		break;
	case EMU_UP:
		fp16_up(op, a, b, c, out, n);
		break;
	default:
		fp16_rtz(op, a, b, c, out, n);
		break;
	}
	return true;
}
#else
bool emu_hw_fp16_apply(emu_op op, emu_mode m, const uint16_t *a, const uint16_t *b,
                       const uint16_t *c, uint16_t *out, size_t n)
{
	(void)op, (void)m, (void)a, (void)b, (void)c, (void)out, (void)n;
	return false;
}
#endif

/* ---- AVX-512 BF16 ---- */
#if HW_HAVE_BF16_INTRIN

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

BF16_TARGET static void bf16_from(const float *in, uint16_t *out, size_t n)
{
	float fb[16];
	uint16_t hb[16];
	for (size_t i = 0; i < n; i += 16) {
		size_t k = n - i < 16 ? n - i : 16;
		memset(fb, 0, sizeof fb);
		memcpy(fb, in + i, k * sizeof *fb);
		__m256bh r = _mm512_cvtneps_pbh(_mm512_loadu_ps(fb));
		__m256i ri;
		memcpy(&ri, &r, sizeof ri);
		_mm256_storeu_si256((__m256i *)(void *)hb, ri);
		memcpy(out + i, hb, k * sizeof *hb);
	}
}

bool emu_hw_bf16_from_float(const float *in, uint16_t *out, size_t n)
{
	if (!emu_hw_has(EMU_HW_AVX512BF16))
		return false;
	bf16_from(in, out, n);
	return true;
}
#else
bool emu_hw_bf16_from_float(const float *in, uint16_t *out, size_t n)
{
	(void)in, (void)out, (void)n;
	return false;
}
#endif

#else /* not x86: every oracle is absent */

bool emu_hw_has(emu_hw_feature f)
{
	(void)f;
	return false;
}

const char *emu_hw_absent_reason(emu_hw_feature f)
{
	switch (f) {
	case EMU_HW_F16C:
		return "F16C absent (not an x86 build)";
	case EMU_HW_AVX512FP16:
		return "AVX-512 FP16 absent (not an x86 build)";
	case EMU_HW_AVX512BF16:
		return "AVX-512 BF16 absent (not an x86 build)";
	default:
		return "unknown hardware feature";
	}
}

bool emu_hw_f16c_from_float(const float *in, uint16_t *out, size_t n, emu_mode m)
{
	(void)in, (void)out, (void)n, (void)m;
	return false;
}

bool emu_hw_f16c_to_float(const uint16_t *in, float *out, size_t n)
{
	(void)in, (void)out, (void)n;
	return false;
}

bool emu_hw_fp16_apply(emu_op op, emu_mode m, const uint16_t *a, const uint16_t *b,
                       const uint16_t *c, uint16_t *out, size_t n)
{
	(void)op, (void)m, (void)a, (void)b, (void)c, (void)out, (void)n;
	return false;
}

bool emu_hw_bf16_from_float(const float *in, uint16_t *out, size_t n)
{
	(void)in, (void)out, (void)n;
	return false;
}

#endif
