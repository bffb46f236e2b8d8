/*
 * run.h — what the runner's files (gpu/runner.c, gpu/run_*.c) share: the
 * report every step writes its rows into, the last device error, the
 * helpers that add a row or mark a step failed, and the steps themselves,
 * one family a file:
 *
 *   runner.c     main: the options, the device, the steps in order
 *   run_scalar.c conv, arith, tables: every (or a sample of) scalar input
 *   run_tc.c     tc, rules: single mma.sync tiles against the Tensor Core model
 *   run_gemm.c   gemm, gemmex, lt: whole GEMMs (ours, cuBLAS, cuBLASLt)
 *   run_kern.c   kern: the training kernels of gpu/rows.h against the engine's
 *   run_quant.c  quant: the block quantisers against emu_quantize
 *   run_attn.c   attn: attention's GEMMs and rows against the engine's
 *
 * Every comparison loop runs on all cores (OpenMP) into private rows
 * (gpu_cmp_blank) merged with gpu_cmp_merge, so the report is the same for
 * any thread count.
 */
#ifndef NANMAP_GPU_RUN_H
#define NANMAP_GPU_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/engine/kernels.h"
#include "gpu/gpu_dev.h"
#include "gpu/gpu_host.h"

/* The report (written after every row, so a run cut short keeps what
 * finished) and the device's last error message. */
extern gpu_report run_rep;
extern char run_err[512];
static const emu_env env_rne = EMU_ENV_DEFAULT;

double now(void);
/* The emulator's format of that name (exits when it has none). */
const emu_format *fmt(const char *name);
void flush_report(void);
void print_row(const gpu_cmp *c);
/* Print the row, add it to the report and write the report. */
void add_row(const gpu_cmp *c);
/* Count the step failed, say why on stderr and in the report. */
void step_failed(const char *step, const char *what);
/* Counter-based random 64 bits for (seed, stream, i): emu/core/draw.h's emu_draw64s. */
uint64_t rnd(uint64_t seed, uint64_t stream, uint64_t i);
/* The device's handles of an emulator format. */
gpu_fmt gfmt(const emu_format *in);
gpu_kfmt kfmt(const emu_format *f);

/* One output the GPU produced, by the name of the engine's output. */
typedef struct {
	const char *name;
	const float *v;
	size_t n;
} kern_out;

/* The engine's kernel on the fast backend, the reference of a kern or attn
 * row; false (the kern step marked failed, er freed) when it cannot run. */
bool kern_engine(const emu_kernel *k, const emu_policy *pol, const char *variant, const emu_kin *in,
                 emu_run *er);
/* The values of tensor `role` that kernel k consumes on in, as its own
 * inputs function draws them (emu_kernel_inputs), so the GPU is handed the
 * very tensors the engine's run takes: held in ki until emu_kinputs_free;
 * NULL (step marked failed, ki empty) when they cannot be listed. */
const double *kern_role(const char *step, const emu_kernel *k, const emu_policy *pol,
                        const char *variant, const emu_kin *in, const char *role, emu_kinputs *ki);
/* The tables to replay: --gpu-tables, else OUT/gpu-tables.txt when present. */
bool kern_tables(const gpu_opts *o, gpu_tables *t);

void step_conv(const gpu_opts *o);
void step_arith(const gpu_opts *o);
void step_tables(const gpu_opts *o);
void step_tc(const gpu_opts *o);
void step_rules(const gpu_opts *o);
void step_gemm(const gpu_opts *o);
void step_gemmex(const gpu_opts *o);
void step_lt(const gpu_opts *o);
void step_kern(const gpu_opts *o);
void step_quant(const gpu_opts *o);
void step_attn(const gpu_opts *o);

#endif
