/*
 * sqrt.c — √a with one rounding, by integer square root: the significand is
 * scaled to N in [2^124, 2^126) with an even exponent, r = ⌊√N⌋ lies in
 * [2^62, 2^63) and r² != N gives the sticky bit.
 */
#include <string.h>

#include "emu/core/internal.h"

static uint64_t isqrt128(unsigned __int128 n)
{
	uint64_t r = (uint64_t)sqrtl((long double)n);
	/* sqrtl is within a few units; settle exactly */
	while ((unsigned __int128)r * r > n)
		r--;
	while ((unsigned __int128)(r + 1) * (r + 1) <= n)
		r++;
	return r;
}

emu_result emu_sqrt(const emu_format *f, emu_bits ab, const emu_env *env)
{
	unsigned fl = emu_snan_flag(f, ab);
	double a = emu_operand(f, ab, env), r;
	if (isnan(a)) {
		r = emu_nan_result(f, false, &fl);
	} else if (a == 0) {
		r = emu_zero_result(f, signbit(a), &fl); /* sqrt(-0) = -0 */
	} else if (a < 0) {
		r = emu_nan_result(f, true, &fl);
	} else if (isinf(a)) {
		r = emu_inf_result(f, false, false, env, &fl);
	} else {
		uint64_t b;
		memcpy(&b, &a, sizeof b);
		uint64_t m = (b & ((1ull << 52) - 1)) | (1ull << 52);
		int e = (int)((b >> 52) & 0x7ff) - 1075;
		int k = ((e - 72) & 1) ? 73 : 72; /* e - k even */
		unsigned __int128 n = (unsigned __int128)m << k;
		uint64_t s = isqrt128(n);
		bool sticky = (unsigned __int128)s * s != n;
		r = emu_round_core(f, false, s, (e - k) / 2, sticky, env, &fl);
	}
	return emu_pack(f, r, fl);
}
