/*
 * host_tables.c — writes the GPU's fp16/bf16 transcendental results, one
 * table of 65536 encodings per function and format, so the emulator can
 * replay hexp, hlog, ... bit for bit where the hardware's approximation is
 * not documented (FACTS §2). The reader is the library's (emu/engine/gputab.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_host.h"
#include "emu/io/nm_file.h"

int gpu_tables_write(const char *path, const char *comment, const gpu_table *t, size_t n,
                     char *err, size_t len)
{
	/* 16 x "xxxx " per line plus the headers */
	size_t cap = n * (GPU_TABLE_N * 5 + 64) + (comment ? strlen(comment) : 0) + 64;
	char *s = malloc(cap), *p = s;
	if (!s) {
		snprintf(err, len, "out of memory writing %s", path);
		return -1;
	}
	if (comment)
		p += sprintf(p, "# %s\n", comment);
	for (size_t i = 0; i < n; i++) {
		p += sprintf(p, "table %s %s %d\n", t[i].func, t[i].format, GPU_TABLE_N);
		for (int j = 0; j < GPU_TABLE_N; j++)
			p += sprintf(p, "%04" PRIx16 "%c", t[i].v[j], (j & 15) == 15 ? '\n' : ' ');
	}
	int rc = nm_file_write(path, s, (size_t)(p - s), err, len);
	free(s);
	return rc;
}
