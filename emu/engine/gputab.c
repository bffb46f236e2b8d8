/*
 * gputab.c — the loader of the GPU's transcendental tables (gputab.h).
 * Text, so a table can be diffed and its provenance kept in '#' lines; the
 * loader refuses anything short, long or malformed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emu/engine/gputab.h"

/* A bound on what a file (or a stream) can make the reader hold. */
#define EMU_GPU_TABLES_MAX 64

const char *emu_gpu_table_func(emu_op op)
{
	switch (op) {
	case EMU_OP_EXP:
		return "hexp";
	case EMU_OP_LOG:
		return "hlog";
	case EMU_OP_EXP2:
		return "hexp2";
	case EMU_OP_RSQRT:
		return "hrsqrt";
	case EMU_OP_SQRT:
		return "hsqrt";
	default:
		return NULL;
	}
}

void emu_gpu_tables_free(emu_gpu_tables *ts)
{
	free(ts->t);
	ts->t = NULL;
	ts->n = 0;
}

/* line 0: a reason about the whole file, named without a line */
static int bad(emu_gpu_tables *ts, char *err, size_t len, const char *path, long line,
               const char *why)
{
	if (line > 0)
		snprintf(err, len, "%s:%ld: %s", path, line, why);
	else
		snprintf(err, len, "%s: %s", path, why);
	emu_gpu_tables_free(ts);
	return -1;
}

int emu_gpu_tables_load(const char *path, emu_gpu_tables *ts, char *err, size_t len)
{
	char file[1024];
	struct stat st;
	ts->t = NULL;
	ts->n = 0;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(file, sizeof file, "%s/gpu-tables.txt", path);
	else
		snprintf(file, sizeof file, "%s", path);
	FILE *fp = fopen(file, "r");
	if (!fp) {
		snprintf(err, len, "cannot read %s: %s", file, strerror(errno));
		return -1;
	}
	int rc = emu_gpu_tables_read(fp, file, ts, err, len);
	fclose(fp);
	return rc;
}

int emu_gpu_tables_read(FILE *fp, const char *file, emu_gpu_tables *ts, char *err, size_t len)
{
	ts->t = NULL;
	ts->n = 0;
	char buf[256];
	long line = 0;
	emu_gpu_table *cur = NULL;
	int filled = 0;
	while (fgets(buf, sizeof buf, fp)) {
		line++;
		if (!strchr(buf, '\n') && !feof(fp))
			return bad(ts, err, len, file, line, "line too long");
		if (buf[0] == '#' || buf[0] == '\n')
			continue;
		if (strncmp(buf, "table ", 6) == 0) {
			if (cur && filled != EMU_GPU_TABLE_N)
				return bad(ts, err, len, file, line, "previous table is short");
			char func[16], fmt[16];
			int n, used = 0;
			if (sscanf(buf, "table %15s %15s %d %n", func, fmt, &n, &used) != 3 ||
			    buf[used] != '\0' || n != EMU_GPU_TABLE_N)
				return bad(ts, err, len, file, line,
				           "expected 'table <func> <format> 65536'");
			if (emu_gpu_tables_find(ts, func, fmt))
				return bad(ts, err, len, file, line, "table given twice");
			if (ts->n == EMU_GPU_TABLES_MAX)
				return bad(ts, err, len, file, line,
				           "more than 64 tables (6 functions x 2 formats are known)");
			emu_gpu_table *p = realloc(ts->t, (ts->n + 1) * sizeof *p);
			if (!p)
				return bad(ts, err, len, file, line, "out of memory");
			ts->t = p;
			cur = &ts->t[ts->n++];
			snprintf(cur->func, sizeof cur->func, "%s", func);
			snprintf(cur->format, sizeof cur->format, "%s", fmt);
			filled = 0;
			continue;
		}
		if (!cur)
			return bad(ts, err, len, file, line, "values before a 'table' line");
		char *s = buf;
		for (;;) {
			while (*s == ' ' || *s == '\t')
				s++;
			if (*s == '\n' || *s == '\0')
				break;
			char *end;
			errno = 0;
			unsigned long v = strtoul(s, &end, 16);
			if (end == s || errno || v > 0xffff ||
			    (*end != ' ' && *end != '\n' && *end))
				return bad(ts, err, len, file, line,
				           "not a 16-bit hex encoding");
			if (filled == EMU_GPU_TABLE_N)
				return bad(ts, err, len, file, line, "more than 65536 values");
			cur->v[filled++] = (uint16_t)v;
			s = end;
		}
	}
	if (ferror(fp))
		return bad(ts, err, len, file, line, "read error");
	if (cur && filled != EMU_GPU_TABLE_N)
		return bad(ts, err, len, file, line, "last table is short");
	if (line == 0)
		return bad(ts, err, len, file, 0, "an empty file, no table");
	if (!ts->n)
		return bad(ts, err, len, file, 0, "no table in the file (only comments and blank lines)");
	return 0;
}

const emu_gpu_table *emu_gpu_tables_find(const emu_gpu_tables *ts, const char *func,
                                         const char *format)
{
	for (size_t i = 0; i < ts->n; i++)
		if (strcmp(ts->t[i].func, func) == 0 && strcmp(ts->t[i].format, format) == 0)
			return &ts->t[i];
	return NULL;
}

bool emu_gpu_tables_lookup(const emu_gpu_tables *ts, const char *func, const emu_format *f,
                           emu_bits a, emu_bits *out)
{
	if (f->bits != 16 || !func)
		return false;
	const emu_gpu_table *t = emu_gpu_tables_find(ts, func, f->name);
	if (!t)
		return false;
	*out = t->v[a & 0xffff];
	return true;
}
