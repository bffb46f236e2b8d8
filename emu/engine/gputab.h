/*
 * gputab.h — the GPU's fp16/bf16 transcendental results (hexp hlog hexp2
 * hrcp hrsqrt hsqrt), one table of 65536 encodings per function and format,
 * as bin/nanmap-gpu writes them (docs/gpu.md). The fast kernel backend
 * replays them bit for bit (emu_be.tables) where the hardware's
 * approximation is not documented.
 *
 * File format: any number of tables; each is a line
 *   table <func> <format> 65536
 * followed by 4096 lines of 16 encodings in hex (input order 0..65535).
 * Lines starting with '#' are comments (provenance).
 */
#ifndef NANMAP_GPUTAB_H
#define NANMAP_GPUTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "emu/core/emu.h"

#define EMU_GPU_TABLE_N 65536

typedef struct {
	char func[16];   /* hexp hlog hexp2 hrcp hrsqrt hsqrt */
	char format[16]; /* fp16 bf16 */
	uint16_t v[EMU_GPU_TABLE_N];
} emu_gpu_table;

typedef struct emu_gpu_tables {
	emu_gpu_table *t;
	size_t n;
} emu_gpu_tables;

/* The CUDA function that stands for an emulator op (EMU_OP_EXP -> "hexp"), or
 * NULL. hrcp has no op of its own (a division is not a reciprocal), so its
 * tables load but are never replayed. */
const char *emu_gpu_table_func(emu_op op);
/* path is a file, or a directory holding gpu-tables.txt. 0, or -1 with a
 * one-line reason in err ("FILE:LINE: why" for a malformed file). */
int emu_gpu_tables_load(const char *path, emu_gpu_tables *ts, char *err, size_t len)
    __attribute__((warn_unused_result));
/* The same from an open stream; file names it in messages. */
int emu_gpu_tables_read(FILE *fp, const char *file, emu_gpu_tables *ts, char *err, size_t len)
    __attribute__((warn_unused_result));
const emu_gpu_table *emu_gpu_tables_find(const emu_gpu_tables *ts, const char *func,
                                         const char *format);
/* The GPU's result for func(a) in f (looked up by f->name, 16-bit formats
 * only), or false. */
bool emu_gpu_tables_lookup(const emu_gpu_tables *ts, const char *func, const emu_format *f,
                           emu_bits a, emu_bits *out);
void emu_gpu_tables_free(emu_gpu_tables *ts);

#endif
