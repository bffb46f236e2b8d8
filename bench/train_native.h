/*
 * train_native.h — the trainer of emu/train/train.c written again in plain C
 * `float`: the same GPT-2 (docs/train.md), the same initial parameters and
 * batches, the same order of operations (sequential sums, the GEMMs'
 * fused multiply-adds k ascending), AdamW with warm-up, cosine decay and
 * clipping as there, with no engine in between: what a training step costs
 * natively, the baseline the emulated steps are measured against
 * (bench/bench_train.c), and under the fp32 policy the same losses
 * (tests/train/check_native.c).
 */
#ifndef NANMAP_BENCH_TRAIN_NATIVE_H
#define NANMAP_BENCH_TRAIN_NATIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "emu/train/train.h"

typedef struct native_train native_train;

typedef struct {
	double loss;      /* the batch's mean loss, as computed in float */
	double grad_norm; /* global norm of the gradients, before clipping */
	double lr;
} native_row;

/* A trainer of the model and optimisation of c, its parameters copied from
 * init (an emu_train built from c under the fp32 policy, before its first
 * step: its initial draws, rounded to float). cr: exp, log and 1/√x
 * evaluated in double and rounded to float (correctly rounded but for rare
 * inputs, as the emulator's are) instead of expf, logf and 1/sqrtf. The
 * settings train.c has and this does not (more than one micro-batch, loss
 * scaling, fault injection) are refused: NULL with one line in err. The
 * data is the caller's (native_train_step), so every task works. */
native_train *native_train_new(const emu_train_cfg *c, const emu_train *init, bool cr, char *err,
                               size_t errlen);
void native_train_free(native_train *t);
size_t native_train_nparams(const native_train *t);
/* The parameters, n of them, in emu_train_tensor's order, one flat array. */
const float *native_train_params(const native_train *t, size_t *n);
/* Bytes the trainer allocated: parameters, gradients, AdamW's m and v,
 * activations and scratch, in one block. */
size_t native_train_bytes(const native_train *t);
/* One optimizer step on one batch (inputs and targets, batch × seq tokens:
 * emu_train_batch's, batch step − 1 of the training stream). */
void native_train_step(native_train *t, const int *inputs, const int *targets, native_row *row);
/* CPU seconds (of the calling thread) spent so far in the forward pass
 * (with the loss), the backward pass and the optimizer (norm, clipping,
 * AdamW). */
void native_train_times(const native_train *t, double *fwd, double *bwd, double *opt);

#endif
