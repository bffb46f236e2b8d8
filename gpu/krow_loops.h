/*
 * krow_loops.h — the GPU's reading of a kernel's row source
 * (emu/kernels/NAME_rows.h; emu/engine/krow.h describes the vocabulary):
 * each map a loop over its elements, each fold a sequential loop, on the
 * one thread that runs the row, every operation the includer's K_ scalar
 * operation in its format (gpu/rows.h lists them). Step ids and element
 * indices are the engine's (per-step flags); here they are dropped.
 *
 * Plain C that is also valid CUDA C++: gpu/kern.cu and gpu/host_rows.c
 * include it after defining K_FN, k_fmt and the K_ operations.
 */
#ifndef NANMAP_GPU_KROW_LOOPS_H
#define NANMAP_GPU_KROW_LOOPS_H

#include "emu/core/draw.h"

typedef int k_ctx; /* nothing: the loops keep no statistics */
typedef float *k_vec;
typedef struct {
	float *p;
	size_t s; /* 1: a row; 0: one element broadcast */
} k_ref;

K_FN k_ref k_ref_of(float *p, size_t s)
{
	k_ref r;
	r.p = p;
	r.s = s;
	return r;
}

#define K_ROW(v, off) k_ref_of((v) + (off), 1)
#define K_AT(v, i) k_ref_of((v) + (i), 0)
#define K_CVT(F, a) K_RND(F, a)

#define K_MAP1(step, OP, F, d, a, n, e)                                                            \
	do {                                                                                       \
		k_ref d_ = (d), a_ = (a);                                                          \
		size_t n_ = (n);                                                                   \
		(void)kc;                                                                          \
		(void)(e);                                                                         \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] = K_##OP(F, a_.p[j_ * a_.s]);                              \
	} while (0)
#define K_MAP2(step, OP, F, d, a, b, n, e)                                                         \
	do {                                                                                       \
		k_ref d_ = (d), a_ = (a), b_ = (b);                                                \
		size_t n_ = (n);                                                                   \
		(void)kc;                                                                          \
		(void)(e);                                                                         \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] = K_##OP(F, a_.p[j_ * a_.s], b_.p[j_ * b_.s]);             \
	} while (0)
#define K_MAP3(step, OP, F, d, a, b, c, n, e)                                                      \
	do {                                                                                       \
		k_ref d_ = (d), a_ = (a), b_ = (b), c_ = (c);                                      \
		size_t n_ = (n);                                                                   \
		(void)kc;                                                                          \
		(void)(e);                                                                         \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] =                                                          \
			    K_##OP(F, a_.p[j_ * a_.s], b_.p[j_ * b_.s], c_.p[j_ * c_.s]);          \
	} while (0)
#define K_OP1(step, OP, F, d, a, e) K_MAP1(step, OP, F, d, a, 1, e)
#define K_OP2(step, OP, F, d, a, b, e) K_MAP2(step, OP, F, d, a, b, 1, e)
#define K_FOLD(step, OP, F, acc, a, n, e)                                                          \
	do {                                                                                       \
		k_ref c_ = (acc), a_ = (a);                                                        \
		size_t n_ = (n);                                                                   \
		(void)kc;                                                                          \
		(void)(e);                                                                         \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			c_.p[0] = K_##OP(F, c_.p[0], a_.p[j_ * a_.s]);                             \
	} while (0)
#define K_FOLD_FMA(step, F, acc, a, b, n, e)                                                       \
	do {                                                                                       \
		k_ref c_ = (acc), a_ = (a), b_ = (b);                                              \
		size_t n_ = (n);                                                                   \
		(void)kc;                                                                          \
		(void)(e);                                                                         \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			c_.p[0] = K_FMA(F, a_.p[j_ * a_.s], b_.p[j_ * b_.s], c_.p[0]);             \
	} while (0)
#define K_FOLDN(step, OP, F, acc, a, ca, n, m, e, ce)                                              \
	do {                                                                                       \
		k_ref c_ = (acc), a_ = (a);                                                        \
		size_t n_ = (n), m_ = (m), ca_ = (ca);                                             \
		(void)kc;                                                                          \
		(void)(e);                                                                         \
		(void)(ce);                                                                        \
		for (size_t q_ = 0; q_ < m_; q_++)                                                 \
			for (size_t j_ = 0; j_ < n_; j_++)                                         \
				c_.p[q_ * c_.s] =                                                  \
				    K_##OP(F, c_.p[q_ * c_.s], a_.p[q_ * ca_ + j_ * a_.s]);        \
	} while (0)
#define K_FOLDN_FMA(step, F, acc, a, ca, b, cb, n, m, e, ce)                                       \
	do {                                                                                       \
		k_ref c_ = (acc), a_ = (a), b_ = (b);                                              \
		size_t n_ = (n), m_ = (m), ca_ = (ca), cb_ = (cb);                                 \
		(void)kc;                                                                          \
		(void)(e);                                                                         \
		(void)(ce);                                                                        \
		for (size_t q_ = 0; q_ < m_; q_++)                                                 \
			for (size_t j_ = 0; j_ < n_; j_++)                                         \
				c_.p[q_ * c_.s] =                                                  \
				    K_FMA(F, a_.p[q_ * ca_ + j_ * a_.s],                           \
				          b_.p[q_ * cb_ + j_ * b_.s], c_.p[q_ * c_.s]);            \
	} while (0)
/* K_DOTN's chains one after another, each in P's first n values; CV:
 * whether the products are converted into FA before the sum (K_DOTN_CVT);
 * ST: how many conversions follow each sum (K_DOTN_CVT_ST: into FS;
 * K_DOTN_CVT_ST2: into FS, then into FB) */
#define K_DOTN_(CV, FM, FA, acc, a, ca, b, cb, P, n, m, ST, FS, FB)                                \
	do {                                                                                       \
		k_ref c_ = (acc), a_ = (a), b_ = (b), p_ = (P);                                    \
		size_t n_ = (n), m_ = (m), ca_ = (ca), cb_ = (cb);                                 \
		(void)kc;                                                                          \
		for (size_t q_ = 0; q_ < m_; q_++) {                                               \
			float *pq_ = p_.p;                                                         \
			for (size_t j_ = 0; j_ < n_; j_++)                                         \
				pq_[j_] = K_MUL(FM, a_.p[q_ * ca_ + j_ * a_.s],                    \
				                b_.p[q_ * cb_ + j_ * b_.s]);                       \
			for (size_t j_ = 0; (CV) && j_ < n_; j_++)                                 \
				pq_[j_] = K_CVT(FA, pq_[j_]);                                      \
			for (size_t j_ = 0; j_ < n_; j_++)                                         \
				c_.p[q_ * c_.s] = K_ADD(FA, c_.p[q_ * c_.s], pq_[j_]);             \
			if ((ST) > 0)                                                              \
				c_.p[q_ * c_.s] = K_CVT(FS, c_.p[q_ * c_.s]);                      \
			if ((ST) > 1)                                                              \
				c_.p[q_ * c_.s] = K_CVT(FB, c_.p[q_ * c_.s]);                      \
		}                                                                                  \
	} while (0)
#define K_DOTN(smul, FM, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce)                              \
	K_DOTN_(0, FM, FA, acc, a, ca, b, cb, P, n, m, 0, FA, FA)
#define K_DOTN_CVT(smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce)                    \
	K_DOTN_(1, FM, FA, acc, a, ca, b, cb, P, n, m, 0, FA, FA)
#define K_DOTN_CVT_ST(smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce, sst, FS, es)    \
	K_DOTN_(1, FM, FA, acc, a, ca, b, cb, P, n, m, 1, FS, FS)
#define K_DOTN_CVT_ST2(smul, FM, scvt, ssum, FA, acc, a, ca, b, cb, P, n, m, e, ce, sst, FS, sbk,  \
                       FB, es)                                                                     \
	K_DOTN_(1, FM, FA, acc, a, ca, b, cb, P, n, m, 2, FS, FB)
#define K_FILL(d, x, n)                                                                            \
	do {                                                                                       \
		k_ref d_ = (d);                                                                    \
		size_t n_ = (n);                                                                   \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] = (float)(x);                                              \
	} while (0)
#define K_COPY(d, a, n)                                                                            \
	do {                                                                                       \
		k_ref d_ = (d), a_ = (a);                                                          \
		size_t n_ = (n);                                                                   \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] = a_.p[j_ * a_.s];                                         \
	} while (0)

/* ---- operands and copies beyond the maps and folds (emu/engine/krow.h
 * describes them): K_TAKE rounds the values into F (exact: they are values
 * of F) ---- */
#define K_STRIDED(v, off, stride) k_ref_of((v) + (off), (stride))
#define K_SHIFT(r, j) k_ref_of((r).p + (j) * (r).s, (r).s)
#define K_SEL_NEG(d, x, a, k, n)                                                                   \
	do {                                                                                       \
		k_ref d_ = (d), x_ = (x), a_ = (a);                                                \
		size_t n_ = (n);                                                                   \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] = x_.p[j_ * x_.s] < 0.0f ? a_.p[j_ * a_.s] : (float)(k);   \
	} while (0)
#define K_TAKE(F, d, a, n) K_MAP1(0, CVT, F, d, a, n, 0)

/* ---- scalars of the host's and stochastic rounding (the optimizer's):
 * K_CONST rounds a binary64 once (the includer's K_RND_D); K_MAP1_SR draws
 * the engine's bits for element e + j of `step` and rounds with them
 * (k_sr), so those step ids exist here too: K_STEP0 is emu/engine/kern.h's
 * EMU_STEP0 (gpu/host_rows.c asserts it) ---- */
#define K_STEP0 16
/* the variants' codes (emu/engine/krow.h's K_VARIANT_ID) */
#define K_VARIANT_ID(id, name) id,
#define K_CONST(step, F, d, x)                                                                     \
	do {                                                                                       \
		k_ref d_ = (d);                                                                    \
		(void)kc;                                                                          \
		d_.p[0] = K_RND_D(F, (x));                                                         \
	} while (0)
#define K_MAP1_SR(step, F, d, a, seed, n, e)                                                       \
	do {                                                                                       \
		k_ref d_ = (d), a_ = (a);                                                          \
		size_t n_ = (n);                                                                   \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] =                                                          \
			    k_sr(F, a_.p[j_ * a_.s], k_sr_bits((seed), (step), (e) + j_));         \
	} while (0)

/* The 32 random bits the engine's stochastic rounding draws for element e
 * of step id `step` under `seed`: emu/core/round.c's emu_sr_bits(seed,
 * emu_sr_key(step, 0, e)) (emu/engine/kern.h), the draw itself
 * emu/core/draw.h's, which nvcc compiles too; integer arithmetic mod 2^64 */
K_FN uint32_t k_sr_bits(uint64_t seed, unsigned step, uint64_t e)
{
	uint64_t key = ((uint64_t)(step + 1) << 44) | (e & ((1ull << 42) - 1));
	return (uint32_t)(emu_draw64(seed, key) >> 32);
}

/* x rounded by SR with the bits u to the format of precision p, least
 * normal exponent emin (subnormals below) and largest finite fmax, as
 * emu/core/round.c rounds (EMU_SR, no saturation): with F the discarded part of
 * |x| in units of the last kept place, round away from zero iff
 * floor(F·2^32) > u, or equal with something below those 32 bits; past
 * fmax, inf. Every step is exact in binary64 (|x| has 24 bits), so nvcc and
 * cc compute the same value; zeros, infinities and NaN come back as they
 * are. */
K_FN float k_sr_round(int p, int emin, double fmax, float x, uint32_t u)
{
	double a = fabs((double)x), q, n, f, f32, r;
	int ex, e;
	if (!(a > 0.0) || isinf(a))
		return x;
	(void)frexp(a, &ex);
	e = ex - 1 < emin ? emin : ex - 1; /* the binade's exponent, or emin */
	q = ldexp(a, p - 1 - e);           /* |x| over the last kept place */
	n = floor(q);
	f = (q - n) * 4294967296.0;
	f32 = floor(f);
	if (f32 > (double)u || (f32 == (double)u && f != f32))
		n = n + 1.0;
	r = ldexp(n, e - p + 1);
	if (r > fmax)
		r = INFINITY;
	return (float)(x < 0.0f ? -r : r);
}

/* x rounded to F by SR with the bits u */
K_FN float k_sr(k_fmt F, float x, uint32_t u)
{
	return k_sr_round(K_PREC(F), K_EMIN(F), K_FMAX(F), x, u);
}

#endif
