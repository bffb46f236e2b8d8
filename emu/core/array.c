/*
 * array.c — rounding whole arrays of doubles to encodings (the sweeps' and
 * benchmarks' hot loop). SR draws are keyed by env->index + i, so any split
 * of the array over threads gives the same bits.
 *
 * Round-to-nearest-even has a branch-free path that works on the double's
 * bits, generic over the descriptor (the float→half technique of Giesen,
 * "Float->half variations", 2013, with the exponent rebias, carry into the
 * exponent and overflow detection taken from the descriptor):
 *   normal range:  re-bias the exponent field, add the RNE rounding
 *                  increment, shift: the carry walks into the exponent;
 *   below 2^emin:  |x| + 2^(emin+52-m) rounds (in the FPU, RNE) to the
 *                  subnormal quantum; its low bits are the encoding.
 * Flags and the overflow rule are applied with selects; a signaling
 * binary64 NaN raises invalid, as emu_from_double does. Every other mode,
 * and formats without a zero (e8m0), take the scalar path, as does every
 * call if specialize.h's tininess or overflow-NaN sign is not the one the
 * selects build in. The tests prove both paths give identical bits and flags.
 */
#include <string.h>

#include "emu/core/internal.h"

static unsigned round_array_scalar(const emu_format *f, const double *in, emu_bits *out,
                                   size_t n, const emu_env *env)
{
	unsigned all = 0;
	emu_env e = *env;
	for (size_t i = 0; i < n; i++) {
		unsigned fl = emu_is_snan_double(in[i]) ? EMU_FLAG_INVALID : 0;
		e.index = env->index + i;
		out[i] = emu_encode(f, emu_round_exact(f, in[i], &e, &fl));
		all |= fl;
	}
	return all;
}

#if defined(__clang__)
#define NM_HOT_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define NM_HOT_LOOP __attribute__((target_clones("avx2", "default"), optimize("O3")))
#endif
NM_HOT_LOOP static unsigned
round_array_rne(const emu_format *f, const double *in, emu_bits *out, size_t n, bool sat,
                bool ftz, bool daz)
{
	const int m = f->p - 1, shift = 52 - m;
	const uint64_t absmask = ~(1ull << 63);
	const uint64_t rebias = (uint64_t)(1023 - f->bias) << 52;
	const uint64_t half_m1 = (1ull << (shift - 1)) - 1;
	const uint64_t lowmask = (1ull << shift) - 1;
	const uint64_t min_normal = emu_dbits(f->min_normal);
	const uint64_t tiny_below = emu_dbits(f->min_normal - emu_pow2_any(f->emin - f->p - 1));
	const uint64_t inf_d = 0x7ff0000000000000ull;
	const double magic = emu_pow2_any(f->emin + 52 - m);
	const uint64_t magic_b = emu_dbits(magic);
	const uint64_t max_bits = f->max_bits;
	const uint64_t sign_mask = f->sign_mask;
	const bool fnuz = f->nan == EMU_NAN_FNUZ, nonan = f->nan == EMU_NAN_NONE;
	/* what an overflow becomes, and an infinite input */
	const uint64_t of_bits = sat                           ? max_bits
	                         : f->has_inf                  ? f->inf_bits
	                         : emu_overflow_is_nan(f, sat) ? f->nan_bits
	                                                       : max_bits;
	const bool of_signed = !(fnuz && !sat); /* fnuz's one NaN has no sign */
	const uint64_t inf_bits = f->has_inf && !sat ? f->inf_bits : of_bits;
	const unsigned inf_flags = f->has_inf && !sat ? 0 : (EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT);
	const uint64_t nan_out = f->nan_bits;
	const unsigned nan_flags = nonan ? EMU_FLAG_INVALID : 0;
	const uint64_t inf_res = inf_bits;
	const uint64_t inf_sign = (of_signed || inf_bits != nan_out) ? sign_mask : 0;
	const uint64_t of_sign = of_signed ? sign_mask : 0;
	uint64_t fix = 0, fuf = 0, fof = 0, finf = 0, fnan = 0, fsnan = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t u = emu_dbits(in[i]);
		uint64_t a = u & absmask;
		uint64_t neg = u >> 63;
		a = (daz & (a < 0x0010000000000000ull)) ? 0 : a; /* double subnormals */
		/* normal range */
		uint64_t t = a - rebias;
		uint64_t rn = (t + half_m1 + ((t >> shift) & 1)) >> shift;
		uint64_t ixn = t & lowmask;
		/* below 2^emin */
		double y = emu_bitsd(a) + magic;
		uint64_t rs = emu_dbits(y) - magic_b;
		uint64_t ixs = emu_dbits(emu_bitsd(a) - (y - magic)) & absmask; /* 0 iff exact */
		uint64_t sub = a < min_normal;
		uint64_t r = sub ? rs : rn;
		uint64_t ix = sub ? ixs : ixn;
		uint64_t tiny = (a < tiny_below) & (a != 0);
		uint64_t flush = ftz & tiny;
		r = flush ? 0 : r;
		ix = flush ? 1 : ix;
		uint64_t isinf_ = a == inf_d;
		uint64_t isnan_ = a > inf_d;
		uint64_t of = (a < inf_d) & (r > max_bits);
		uint64_t sgn = of ? of_sign : ((fnuz & (r == 0)) ? 0 : sign_mask);
		uint64_t res = of ? of_bits : r;
		res |= neg ? sgn : 0;
		res = isinf_ ? (inf_res | (neg ? inf_sign : 0)) : res;
		res = isnan_ ? nan_out : res;
		ix = (isinf_ | isnan_) ? 0 : ix;
		tiny = (isinf_ | isnan_) ? 0 : tiny;
		out[i] = (emu_bits)res;
		fix |= ix | of;
		fuf |= tiny & (ix != 0);
		fof |= of;
		finf |= isinf_;
		fnan |= isnan_;
		fsnan |= isnan_ & !(a & EMU_F64_QUIET_BIT); /* a signaling binary64 NaN */
	}
	unsigned special =
	    (finf ? inf_flags : 0) | (fnan ? nan_flags : 0) | (fsnan ? EMU_FLAG_INVALID : 0);
	unsigned fl = special;
	if (fix)
		fl |= EMU_FLAG_INEXACT;
	if (fuf)
		fl |= EMU_FLAG_UNDERFLOW;
	if (fof)
		fl |= EMU_FLAG_OVERFLOW;
	return fl;
}

unsigned emu_round_array(const emu_format *f, const double *in, emu_bits *out, size_t n,
                         const emu_env *env)
{
	unsigned fl;
	if (emu_round_array_simd(f, in, out, n, env, &fl))
		return fl;
	/* tiny_below is tininess after rounding; of_sign keeps the overflow NaN's sign */
	if (EMU_TININESS == EMU_TININESS_AFTER_ROUNDING && EMU_OVERFLOW_NAN_SIGNED &&
	    env->mode == EMU_RNE && f->has_zero && f->has_subnormals && f->has_sign)
		return round_array_rne(f, in, out, n, env->sat, env->ftz, env->daz);
	return round_array_scalar(f, in, out, n, env);
}
