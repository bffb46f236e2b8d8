/*
 * host_tcv.c — reads the Tensor Core hardware vectors (Khattak & Mikaitis,
 * layout in shared/data/tensor-core-vectors/README.md) so the same cases run
 * through our mma.sync kernels and through the emulator's model. The
 * vectors are never copied into the project: the path comes from the
 * command line or NANMAP_TC_VECTORS, and their absence is a skip.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_host.h"

void gpu_tcv_free(gpu_tcv *v)
{
	free(v->a);
	free(v->b);
	free(v->c);
	free(v->d);
	memset(v, 0, sizeof *v);
}

/* Read whitespace-separated tokens: hex words (a, b) or 32-char binary (c, d).
 * Stores up to cap values; returns the count and the tokens on the first line
 * in *first_line, or -1 with err. */
static long read_words(const char *path, bool binary, uint32_t **out, size_t *first_line,
                       char *err, size_t len)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		snprintf(err, len, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	size_t n = 0, cap = 0;
	uint32_t *v = NULL;
	char tok[64];
	int c, line = 1;
	size_t k = 0;
	*first_line = 0;
	for (;;) {
		while ((c = fgetc(fp)) == ' ' || c == '\t' || c == '\r' || c == '\n')
			if (c == '\n' && line == 1 && n) {
				line = 2;
				*first_line = n;
			}
		if (c == EOF)
			break;
		k = 0;
		while (c != EOF && c != ' ' && c != '\t' && c != '\r' && c != '\n') {
			if (k + 1 < sizeof tok)
				tok[k++] = (char)c;
			else
				k = sizeof tok; /* too long: rejected below */
			c = fgetc(fp);
		}
		if (c != EOF)
			ungetc(c, fp);
		uint32_t w = 0;
		bool ok = binary ? k == 32 : (k >= 1 && k <= 8);
		for (size_t i = 0; ok && i < k; i++) {
			char ch = tok[i];
			int d = binary ? (ch == '0' ? 0 : ch == '1' ? 1 : -1)
			               : (ch >= '0' && ch <= '9'   ? ch - '0'
			                  : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
			                  : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
			                                           : -1);
			if (d < 0)
				ok = false;
			w = binary ? (w << 1) | (uint32_t)d : (w << 4) | (uint32_t)d;
		}
		if (!ok) {
			snprintf(err, len, "%s: value %zu is not a %s", path, n + 1,
			         binary ? "32-digit binary string" : "hex binary32 word");
			free(v);
			fclose(fp);
			return -1;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			uint32_t *p = realloc(v, cap * sizeof *p);
			if (!p) {
				snprintf(err, len, "out of memory reading %s", path);
				free(v);
				fclose(fp);
				return -1;
			}
			v = p;
		}
		v[n++] = w;
	}
	fclose(fp);
	if (line == 1)
		*first_line = n;
	*out = v;
	return (long)n;
}

int gpu_tcv_load(const char *dir, const char *gpu, const char *fmt, const char *out,
                 gpu_tcv *v, char *err, size_t len)
{
	char path[4][1024];
	memset(v, 0, sizeof *v);
	snprintf(path[0], sizeof path[0], "%s/%s/%s/a_%s_%s.txt", dir, gpu, fmt, gpu, fmt);
	snprintf(path[1], sizeof path[1], "%s/%s/%s/b_%s_%s.txt", dir, gpu, fmt, gpu, fmt);
	snprintf(path[2], sizeof path[2], "%s/%s/%s/c_%s_fp32.txt", dir, gpu, fmt, gpu);
	snprintf(path[3], sizeof path[3], "%s/%s/%s/d_%s_%s.txt", dir, gpu, fmt, gpu, out);
	for (int i = 0; i < 4; i++) {
		FILE *fp = fopen(path[i], "r");
		if (!fp) {
			snprintf(err, len, "%s not found", path[i]);
			return 1;
		}
		fclose(fp);
	}
	size_t line_a, line_b, l;
	long na = read_words(path[0], false, &v->a, &line_a, err, len);
	long nb = na < 0 ? -1 : read_words(path[1], false, &v->b, &line_b, err, len);
	long nc = nb < 0 ? -1 : read_words(path[2], true, &v->c, &l, err, len);
	long nd = nc < 0 ? -1 : read_words(path[3], true, &v->d, &l, err, len);
	if (nd < 0) {
		gpu_tcv_free(v);
		return -1;
	}
	v->K = line_a;
	v->n = (size_t)nd;
	if (!v->K || line_b != v->K || (size_t)na != v->n * v->K || (size_t)nb != v->n * v->K ||
	    (size_t)nc != v->n) {
		snprintf(err, len,
		         "%s/%s/%s: inconsistent sizes (a %ld, b %ld, c %ld, d %ld values, K %zu)",
		         dir, gpu, fmt, na, nb, nc, nd, line_a);
		gpu_tcv_free(v);
		return -1;
	}
	return 0;
}
