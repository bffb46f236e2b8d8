/*
 * optimizer.h — what emu/kernels/optimizer.c lends the project's own tools:
 * the GPU runner (gpu/run_kern.c) hands a CUDA optimizer the scalars and the
 * SR steps this kernel uses, and takes them from here rather than keeping
 * copies. Not part of the library's interface: hidden from libnanmap.so's
 * exports (EMU_INTERNAL), though a static link reaches them.
 */
#ifndef NANMAP_KERNELS_OPTIMIZER_H
#define NANMAP_KERNELS_OPTIMIZER_H

#include "emu/core/internal.h"

/* β^t rounded to nearest in binary64 (what CPython's beta ** step gives),
 * the bias corrections' power. */
EMU_INTERNAL double emu_opt_pow(double b, double t);
/* The step ids of the kernel's two stores of the weights, decay_store and
 * store, whose SR draws adamw_sr keys by. */
EMU_INTERNAL void emu_opt_store_steps(unsigned *decay_store, unsigned *store);

#endif
