/*
 * optimizer.h — what emu/kernels/optimizer.c lends the project's own tools:
 * the GPU runner (gpu/run_kern.c) hands the GPU's optimizer the variant,
 * switches and scalars this kernel's row source takes, and makes them here
 * rather than keeping copies. Not part of the library's interface: hidden from libnanmap.so's
 * exports (EMU_INTERNAL), though a static link reaches them.
 */
#ifndef NANMAP_KERNELS_OPTIMIZER_H
#define NANMAP_KERNELS_OPTIMIZER_H

#include "emu/core/internal.h"
#include "emu/engine/kernels.h"

/* β^t rounded to nearest in binary64 (what CPython's beta ** step gives),
 * the bias corrections' power. */
EMU_INTERNAL double emu_opt_pow(double b, double t);
/* What the row source (emu/kernels/optimizer_rows.h) takes besides the
 * tensors, for a run's parameters (emu_kin.params) and variant: the
 * variant's code and its switches (k_opt_cfg's), the step count, the
 * gradient stream's seed and scale, and Python's scalars in binary64 (py:
 * OPT_NPY of the run's, then each step's two), which the row source rounds
 * into the compute format. Returns -1 with err for an unknown variant, an
 * empty input or a bad parameter; free py with emu_opt_plan_free. */
typedef struct {
	int variant;
	unsigned flags, steps;
	uint64_t seed;
	double grad_scale;
	double *py;
	size_t npy;
} emu_opt_plan;
EMU_INTERNAL int emu_opt_plan_make(const emu_kin *in, const char *variant, emu_opt_plan *p,
                                   char *err, size_t errlen);
EMU_INTERNAL void emu_opt_plan_free(emu_opt_plan *p);

#endif
