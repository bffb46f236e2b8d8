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

#include "gpu/gpu_host.h"

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
static long read_words(const char *path, bool binary, uint32_t **out, size_t *first_line, char *err,
                       size_t len)
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
			int d = binary ? (ch == '0'   ? 0
			                  : ch == '1' ? 1
			                              : -1)
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

int gpu_tcv_load(const char *dir, const char *gpu, const char *fmt, const char *out, gpu_tcv *v,
                 char *err, size_t len)
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

/* One hex token of at most digits digits, whole, into *v. */
static bool hex_tok(const char *s, int digits, uint32_t *v)
{
	char *end;
	size_t k = strlen(s);
	if (!k || k > (size_t)digits || strspn(s, "0123456789abcdefABCDEF") != k)
		return false;
	errno = 0;
	unsigned long x = strtoul(s, &end, 16);
	if (errno || *end)
		return false;
	*v = (uint32_t)x;
	return true;
}

/* Whether v is an encoding of a bits-wide format. */
static bool fits(uint32_t v, int bits)
{
	return bits >= 32 || v < (1u << bits);
}

static const emu_format *rule_fmt(const char *s, bool in)
{
	static const char *const ins[] = {"fp16", "bf16", "e4m3", "e5m2"};
	static const char *const outs[] = {"fp32", "fp16"};
	const char *const *set = in ? ins : outs;
	size_t n = in ? 4 : 2;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, set[i]))
			return emu_format_by_name(s);
	return NULL;
}

/* Parse one case line (tokens in tok[0..nt)) into r; NULL or what is wrong. */
static const char *rule_parse(char **tok, int nt, gpu_rule *r)
{
	uint32_t v;
	memset(r, 0, sizeof *r);
	if (nt < 6)
		return "fewer than 6 fields (name in out C model other term...)";
	if (strlen(tok[0]) >= sizeof r->name)
		return "name longer than 39 characters";
	strcpy(r->name, tok[0]);
	r->in = rule_fmt(tok[1], true);
	r->out = rule_fmt(tok[2], false);
	if (!r->in || !r->out)
		return "formats: in is fp16, bf16, e4m3 or e5m2, out is fp32 or fp16";
	r->K = r->in->bits == 8 ? 32 : 16;
	if (!hex_tok(tok[3], 8, &r->c))
		return "C is not a hex binary32 encoding";
	if (!hex_tok(tok[4], 8, &v) || !fits(v, r->out->bits))
		return "model is not a hex encoding of out";
	r->model = v;
	r->has_other = strcmp(tok[5], "-") != 0;
	if (r->has_other) {
		if (!hex_tok(tok[5], 8, &v) || !fits(v, r->out->bits))
			return "other is not a hex encoding of out or -";
		r->other = v;
	}
	bool seen[GPU_RULE_K_MAX] = {false};
	for (int i = 6; i < nt; i++) {
		char *eq = strchr(tok[i], '='), *comma = eq ? strchr(eq, ',') : NULL;
		uint32_t k, a, b;
		if (!eq || !comma)
			return "a term is not k=a,b";
		*eq = *comma = '\0';
		if (!hex_tok(tok[i], 2, &k) || k >= r->K)
			return "a term's k is not a hex index below K";
		if (seen[k])
			return "a term's k is given twice";
		seen[k] = true;
		if (!hex_tok(eq + 1, 4, &a) || !hex_tok(comma + 1, 4, &b) ||
		    !fits(a, r->in->bits) || !fits(b, r->in->bits))
			return "a term's a or b is not a hex encoding of in";
		r->a[k] = a;
		r->b[k] = b;
	}
	return NULL;
}

int gpu_rules_load(const char *path, gpu_rule **out, size_t *n, char *err, size_t len)
{
	FILE *fp = fopen(path, "r");
	*out = NULL;
	*n = 0;
	if (!fp) {
		snprintf(err, len, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	char line[2048];
	int lineno = 0;
	size_t cap = 0;
	gpu_rule *v = NULL;
	const char *why = NULL;
	while (fgets(line, sizeof line, fp)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(fp)) {
			why = "line longer than 2047 characters";
			break;
		}
		char *tok[GPU_RULE_K_MAX + 8], *save = NULL, *t;
		int nt = 0;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		for (t = strtok_r(line, " \t\r\n", &save); t;
		     t = strtok_r(NULL, " \t\r\n", &save)) {
			if (nt == (int)(sizeof tok / sizeof tok[0])) {
				why = "too many fields";
				break;
			}
			tok[nt++] = t;
		}
		if (why)
			break;
		if (!nt)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			gpu_rule *p = realloc(v, cap * sizeof *p);
			if (!p) {
				why = "out of memory";
				break;
			}
			v = p;
		}
		why = rule_parse(tok, nt, &v[*n]);
		if (why)
			break;
		for (size_t i = 0; i < *n; i++)
			if (!strcmp(v[i].name, v[*n].name))
				why = "a case name given twice";
		if (why)
			break;
		(*n)++;
	}
	if (!why && ferror(fp))
		why = "read error";
	fclose(fp);
	if (!why && !*n)
		why = "no cases";
	if (why) {
		snprintf(err, len, "%s:%d: %s", path, lineno, why);
		free(v);
		*n = 0;
		return -1;
	}
	*out = v;
	return 0;
}

const char *gpu_rule_reading(const gpu_rule *r, emu_bits got)
{
	bool a = got == r->model, b = r->has_other && got == r->other;
	return a && b ? "both" : a ? "model" : b ? "other" : "neither";
}
