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
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] = K_##OP(F, a_.p[j_ * a_.s]);                              \
	} while (0)
#define K_MAP2(step, OP, F, d, a, b, n, e)                                                         \
	do {                                                                                       \
		k_ref d_ = (d), a_ = (a), b_ = (b);                                                \
		size_t n_ = (n);                                                                   \
		(void)kc;                                                                          \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			d_.p[j_ * d_.s] = K_##OP(F, a_.p[j_ * a_.s], b_.p[j_ * b_.s]);             \
	} while (0)
#define K_MAP3(step, OP, F, d, a, b, c, n, e)                                                      \
	do {                                                                                       \
		k_ref d_ = (d), a_ = (a), b_ = (b), c_ = (c);                                      \
		size_t n_ = (n);                                                                   \
		(void)kc;                                                                          \
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
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			c_.p[0] = K_##OP(F, c_.p[0], a_.p[j_ * a_.s]);                             \
	} while (0)
#define K_FOLD_FMA(step, F, acc, a, b, n, e)                                                       \
	do {                                                                                       \
		k_ref c_ = (acc), a_ = (a), b_ = (b);                                              \
		size_t n_ = (n);                                                                   \
		(void)kc;                                                                          \
		for (size_t j_ = 0; j_ < n_; j_++)                                                 \
			c_.p[0] = K_FMA(F, a_.p[j_ * a_.s], b_.p[j_ * b_.s], c_.p[0]);             \
	} while (0)
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

#endif
