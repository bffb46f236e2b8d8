/*
 * round_simd.c — the branch-free loop behind emu_round_array for RNE and SR
 * (formats with sign, zero and subnormals; NaN style ieee-with-inf or fn;
 * no sat/ftz/daz; RNE only under the FE_TONEAREST environment). Anything
 * else returns false and emu_round_array takes its other paths; the tests
 * prove every path equal to element-by-element rounding, bits and flags.
 *
 * Idea: everything the per-element path decides with branches and libm
 * calls (ilogb, ldexp) is computed for every element from the double's bits,
 * with shifts by a compile-time S = 53 - p (one instance per precision), and
 * selected with masks (-(uint64_t)cond), never ?: or if:
 *  - normal range (|x| >= 2^emin): the p-bit rounding is integer rounding of
 *    the magnitude bits a at shift S; the carry runs into the exponent field,
 *    so binade bumps and overflow need no case; the encoding is
 *    r - ((1023 - bias) << (p-1)).
 *  - subnormal range: RNE lets the FPU round |x| + 2^(emin-p+1+52); SR
 *    scales |x| into units of the quantum (exact) and splits integer and
 *    fraction exactly.
 *  - tininess after rounding: r (the p-bit rounding with unbounded exponent)
 *    below the encoding of 2^emin.
 * With no branch left, GCC vectorizes both loops; the x86-64-v4 (AVX-512)
 * clone is what reaches memcpy speed (docs/bench.md).
 */
#include <fenv.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "emu/core/internal.h"

/* The same draw as emu_sr_bits (checked by the bench against the library). */
static inline uint32_t sr_bits(uint64_t seed, uint64_t index)
{
	return emu_sr_draw(seed, index);
}

struct consts {
	uint64_t rebias;    /* (1023 - bias) << (p-1) */
	uint64_t minnorm;   /* bits of 2^emin */
	uint64_t r_minnorm; /* minnorm >> s: p-bit code of 2^emin */
	double minnorm_d;   /* 2^emin */
	double magic;       /* 2^(emin-p+1+52): ulp 1 = one subnormal quantum */
	double inv_quantum; /* 2^-(emin-p+1) */
	uint64_t max_bits, sign_mask, ovf_bits, inf_in_bits, nan_bits;
	unsigned inf_in_flags;
};

static bool setup(const emu_format *f, const emu_env *env, struct consts *c)
{
	if (!f->has_sign || !f->has_zero || !f->has_subnormals || env->sat || env->ftz)
		return false;
	/* the loop detects tininess after rounding and keeps the overflow NaN's
	 * sign (specialize.h); other choices take the scalar path */
	if (EMU_TININESS != EMU_TININESS_AFTER_ROUNDING || !EMU_OVERFLOW_NAN_SIGNED)
		return false;
	if (env->mode != EMU_RNE && env->mode != EMU_SR)
		return false;
	/* RNE lets the FPU round the subnormal range (x + magic): needs the
	 * default rounding direction. */
	if (env->mode == EMU_RNE && !emu_fpu_nearest())
		return false;
	if (!(f->nan == EMU_NAN_IEEE && f->has_inf) && f->nan != EMU_NAN_FN)
		return false;
	if (f->p < 2 || f->p > 24 || f->emin - f->p + 1 < -1000)
		return false;
	int s = 53 - f->p;
	c->rebias = (uint64_t)(1023 - f->bias) << (f->p - 1);
	c->minnorm = (uint64_t)(1023 + f->emin) << 52;
	c->r_minnorm = c->minnorm >> s;
	c->minnorm_d = emu_bitsd(c->minnorm);
	c->magic = emu_bitsd((uint64_t)(1023 + f->emin - f->p + 1 + 52) << 52);
	c->inv_quantum = emu_bitsd((uint64_t)(1023 - (f->emin - f->p + 1)) << 52);
	c->max_bits = f->max_bits;
	c->sign_mask = f->sign_mask;
	c->nan_bits = f->nan_bits;
	if (f->has_inf) {
		c->ovf_bits = f->inf_bits; /* overflow in RNE/SR: inf */
		c->inf_in_bits = f->inf_bits;
		c->inf_in_flags = 0;
	} else { /* fn: overflow and inf give a NaN keeping the sign */
		c->ovf_bits = f->nan_bits;
		c->inf_in_bits = f->nan_bits;
		c->inf_in_flags = EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
	}
	return true;
}

/* All-ones when c is true: selections are mask arithmetic, so the compiler
 * neither branches on data (with wide data normal/subnormal/overflow are
 * coin flips for the predictor) nor refuses to vectorize. */
#define MASK(c) (-(uint64_t)(c))
#define SEL(m, x, y) (((x) & (m)) | ((y) & ~(m)))

struct acc {
	uint64_t ix, ov, uf, inf_in, snan;
};

#define ELEMENT(SR_)                                                                               \
	do {                                                                                       \
		uint64_t b = emu_dbits(in[i]);                                                     \
		uint64_t a = b & 0x7fffffffffffffffull;                                            \
		uint64_t sign = MASK(b >> 63) & sign_mask;                                         \
		uint64_t m_sub = MASK(a < minnorm);                                                \
		uint64_t m_special = MASK(a >= infbits);                                           \
		uint64_t m_nan = MASK(a > infbits);                                                \
		uint64_t disc = a & low;                                                           \
		uint64_t enc_s, ix_s, up_n;                                                        \
		if (SR_) {                                                                         \
			/* 64-bit lanes, and no conversion between doubles and                     \
			 * 64-bit or unsigned integers: AVX2 has no vector form                    \
			 * of those, and the loop would stay scalar */                             \
			int64_t u = (int64_t)sr_bits(seed, index + i);                             \
			int64_t f32 = S >= 32 ? (int64_t)(disc >> (S >= 32 ? S - 32 : 0))          \
			                      : (int64_t)(disc << (S < 32 ? 32 - S : 0));          \
			uint64_t rest =                                                            \
			    S > 32 ? (disc & ((1ull << (S > 32 ? S - 32 : 0)) - 1)) != 0 : 0;      \
			up_n = (uint64_t)(f32 > u) | ((uint64_t)(f32 == u) & rest);                \
			/* subnormal range: fixed point in units of the quantum;                   \
			 * away iff fr·2^32 > u (u exact as 2^52 + u less 2^52),                  \
			 * the code qi + away read off qi + away + 2^52 */                         \
			double q = emu_bitsd(a & m_sub) * inv_quantum;                             \
			double qf = (double)(int32_t)q;                                            \
			double fr = q - qf;                                                        \
			double ud = emu_bitsd((uint64_t)u | 0x4330000000000000ull) - 0x1p52;       \
			double up_s = emu_bitsd(MASK(fr * 0x1p32 > ud) & 0x3ff0000000000000ull);   \
			enc_s = emu_dbits(qf + up_s + 0x1p52) - 0x4330000000000000ull;             \
			ix_s = fr != 0;                                                            \
		} else {                                                                           \
			up_n = ((a + half_m1 + ((a >> S) & 1)) >> S) - (a >> S);                   \
			/* subnormal range: the FPU rounds |x| + magic to the quantum */           \
			double ax = emu_bitsd(a & m_sub);                                          \
			double y = ax + magic;                                                     \
			enc_s = emu_dbits(y) - emu_dbits(magic);                                   \
			ix_s = (y - magic) != ax;                                                  \
		}                                                                                  \
		uint64_t r = (a >> S) + up_n;                                                      \
		uint64_t enc_n = r - rebias;                                                       \
		uint64_t inexact = SEL(m_sub, ix_s, (uint64_t)(disc != 0)) & ~m_special;           \
		uint64_t m_ovf = MASK(enc_n > max_bits) & ~m_sub & ~m_special;                     \
		uint64_t enc = SEL(m_sub, enc_s, enc_n);                                           \
		enc = SEL(m_ovf, ovf_bits, enc) | sign;                                            \
		enc = SEL(m_special, inf_in_bits | sign, enc);                                     \
		enc = SEL(m_nan, nan_bits, enc);                                                   \
		enc64[i] = enc;                                                                    \
		ix |= inexact | (m_ovf & 1);                                                       \
		ov |= m_ovf & 1;                                                                   \
		/* tiny after rounding: the p-bit rounding (unbounded exponent) */                 \
		uf |= (uint64_t)(r < r_minnorm) & inexact;                                         \
		inf_in |= m_special & ~m_nan & 1;                                                  \
		snan |= m_nan & ~(a >> 51) & 1; /* signaling binary64 NaN: invalid */              \
                                                                                                   \
	} while (0)

/* The loop for one precision (S = 53 - p, a constant after inlining, so
 * every shift is by an immediate) and one mode. */
static inline __attribute__((always_inline)) void kern(const int S, const bool sr,
                                                       const struct consts *cp, const double *in0,
                                                       emu_bits *out, size_t n, uint64_t seed,
                                                       uint64_t index0, struct acc *acc)
{
	const uint64_t low = (1ull << S) - 1, half_m1 = (1ull << (S - 1)) - 1;
	const uint64_t rebias = cp->rebias, minnorm = cp->minnorm, r_minnorm = cp->r_minnorm;
	const uint64_t max_bits = cp->max_bits, sign_mask = cp->sign_mask;
	const uint64_t ovf_bits = cp->ovf_bits, inf_in_bits = cp->inf_in_bits;
	const uint64_t nan_bits = cp->nan_bits;
	const double magic = cp->magic, inv_quantum = cp->inv_quantum;
	const uint64_t infbits = 0x7ff0000000000000ull;
	uint64_t ix = 0, ov = 0, uf = 0, inf_in = 0, snan = 0;
	/* Plain loops: GCC vectorizes both at -O3 (see CLONES). SR's draw needs
	 * 64-bit multiplies, which only AVX-512DQ has as one instruction
	 * (vpmullq); the AVX2 clone makes each of three. */
	/* The encodings are made in 64-bit lanes into enc64 and narrowed to
	 * emu_bits by a loop of their own: with the 32-bit store inside, the
	 * vectoriser takes 8 elements a step, two registers for each 64-bit
	 * value, and without AVX-512's 32 registers it spills them. */
	uint64_t enc64[256];
	for (size_t i0 = 0; i0 < n; i0 += 256) {
		size_t m = n - i0 < 256 ? n - i0 : 256;
		const double *in = in0 + i0;
		uint64_t index = index0 + i0;
		if (sr) {
			for (size_t i = 0; i < m; i++)
				ELEMENT(true);
		} else {
			for (size_t i = 0; i < m; i++)
				ELEMENT(false);
		}
		for (size_t j = 0; j < m; j++)
			out[i0 + j] = (emu_bits)enc64[j];
	}
	acc->ix |= ix, acc->ov |= ov, acc->uf |= uf, acc->inf_in |= inf_in, acc->snan |= snan;
}

#define CASES(SR)                                                                                  \
	switch (p) {                                                                               \
	case 11:                                                                                   \
		kern(42, SR, c, in, out, n, seed, index, acc);                                     \
		break;                                                                             \
	case 8:                                                                                    \
		kern(45, SR, c, in, out, n, seed, index, acc);                                     \
		break;                                                                             \
	case 4:                                                                                    \
		kern(49, SR, c, in, out, n, seed, index, acc);                                     \
		break;                                                                             \
	case 3:                                                                                    \
		kern(50, SR, c, in, out, n, seed, index, acc);                                     \
		break;                                                                             \
	case 24:                                                                                   \
		kern(29, SR, c, in, out, n, seed, index, acc);                                     \
		break;                                                                             \
	default:                                                                                   \
		return false;                                                                      \
	}

/* Cloned (EMU_VEC_CLONES, internal.h). */
#define CLONES EMU_VEC_CLONES

CLONES static bool loops(int p, bool sr, const struct consts *c, const double *in, emu_bits *out,
                         size_t n, uint64_t seed, uint64_t index, struct acc *acc)
{
	if (sr) {
		CASES(true)
	} else {
		CASES(false)
	}
	return true;
}

bool emu_round_array_simd(const emu_format *f, const double *in, emu_bits *out, size_t n,
                          const emu_env *env, unsigned *flags_out)
{
	struct consts c;
	if (!setup(f, env, &c))
		return false;
	struct acc acc = {0, 0, 0, 0, 0};
	if (!loops(f->p, env->mode == EMU_SR, &c, in, out, n, env->seed, env->index, &acc))
		return false;
	unsigned fl = acc.inf_in ? c.inf_in_flags : 0;
	if (acc.snan)
		fl |= EMU_FLAG_INVALID;
	if (acc.ix)
		fl |= EMU_FLAG_INEXACT;
	if (acc.ov)
		fl |= EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT;
	if (acc.uf)
		fl |= EMU_FLAG_UNDERFLOW;
	*flags_out = fl;
	return true;
}
