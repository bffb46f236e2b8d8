/*
 * draw.h — nanmap's counter-based draws, written once for every layer and
 * for both compilers: the library's C and nvcc's CUDA C++ (gpu/rows.h
 * draws the optimizer's stochastic rounding on the GPU with these). A draw
 * is a pure function of (seed, counter), so the engine, the fake device
 * and the GPU make the very same one, whatever the order or the threads.
 * Not installed: the library's interface keeps emu.h's emu_mix64 and
 * emu_sr_bits.
 */
#ifndef NANMAP_EMU_DRAW_H
#define NANMAP_EMU_DRAW_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define EMU_DRAW_FN static inline __host__ __device__
/* emu.h's emu_mix64 for device code, which cannot call the installed
 * header's host function; the same three lines (a translation unit nvcc
 * compiles includes this header, not emu.h). */
EMU_DRAW_FN uint64_t emu_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
#else
#include "emu/core/emu.h"
/* inline even where the compiler would not, so loops around it vectorise */
#define EMU_DRAW_FN static inline __attribute__((always_inline))
#endif

/* φ·2^64, SplitMix64's increment (the golden ratio's fraction). */
#define EMU_DRAW_PHI 0x9e3779b97f4a7c15ull

/* The 64 random bits keyed by (seed, i): SplitMix64 of seed ⊕ i·φ, plus φ.
 * SR's draw is its high half (emu_sr_bits); a kernel's own data draws it
 * with a seed of its own. */
EMU_DRAW_FN uint64_t emu_draw64(uint64_t seed, uint64_t i)
{
	return emu_mix64((seed ^ (i * EMU_DRAW_PHI)) + EMU_DRAW_PHI);
}

/* Draw i of one of several independent streams under one seed (a
 * kernel's gradients, its noise, ...): emu_draw64 of the seed moved by the
 * stream number. */
EMU_DRAW_FN uint64_t emu_draw64s(uint64_t seed, uint64_t stream, uint64_t i)
{
	return emu_draw64(seed ^ (stream * 0xd1b54a32d192ed03ull), i);
}

/* A seed derived from a parent seed and a key (a training run's pass, its
 * batch, a quantised tensor): SplitMix64 of seed ⊕ SplitMix64(key). */
EMU_DRAW_FN uint64_t emu_draw_key(uint64_t seed, uint64_t key)
{
	return emu_mix64(seed ^ emu_mix64(key));
}

/* ±1, the sign from bit 0 of emu_sr_bits(seed, i) (bit 32 of the draw):
 * the kernels' default upstream gradient, inline so their fill loops
 * vectorise rather than call emu_sr_bits an element. */
EMU_DRAW_FN double emu_draw_sign(uint64_t seed, uint64_t i)
{
	return (double)(1 - 2 * (int)((emu_draw64(seed, i) >> 32) & 1)); /* no branch on it */
}

/* A draw's top 53 bits as a double in [0, 1), in steps of 2^-53. */
EMU_DRAW_FN double emu_draw_unit(uint64_t r)
{
	return (double)(r >> 11) * 0x1p-53;
}

/* A standard normal draw from u1 in (0, 1] and u2 in [0, 1): Box–Muller,
 * the cosine half. */
EMU_DRAW_FN double emu_box_muller(double u1, double u2)
{
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
