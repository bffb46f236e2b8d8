/*
 * array.c — rounding whole arrays (the sweeps' and benchmarks' hot loop).
 * SR draws are keyed by env->index + i, so any split of the array over
 * threads gives the same bits.
 */
#include "internal.h"

unsigned emu_round_array(const emu_format *f, const double *in, emu_bits *out, size_t n,
                         const emu_env *env)
{
	unsigned all = 0;
	emu_env e = *env;
	for (size_t i = 0; i < n; i++) {
		unsigned fl = 0;
		e.index = env->index + i;
		out[i] = emu_encode(f, emu_round_exact(f, in[i], &e, &fl));
		all |= fl;
	}
	return all;
}
