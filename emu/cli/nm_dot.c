/*
 * nm_dot.c — `nanmap dot`: the Tensor Core model (emu/kernels/tc.h) on vectors read
 * from files, printing results in the hardware vectors' own form so that
 * `diff` compares them with measured outputs.
 *
 * Input layout (shared/data/tensor-core-vectors/README.md): A and B hold one
 * case per line, K binary32 bit patterns in hex; C holds one binary32 per
 * line as 32 '0'/'1' characters. Every value of A and B must be exactly a
 * value of --in (the vectors were made that way); anything else is an error
 * naming file:line, never a silent rounding.
 *
 * The reader takes a byte at a time into a fixed buffer, so a line of any
 * length costs at most NM_DOT_MAX_LINE bytes and an overlong line, a NUL
 * byte or a bad digit is reported with its file and line. As in the other
 * commands the whole output is built first and printed only when every case
 * was good: an error never leaves half a result file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/emu.h"
#include "emu/cli/nm_dot.h"
#include "emu/io/nm_parse.h"
#include "emu/kernels/tc.h"

#define NM_ERR_LEN 512

static const char nm_dot_usage[] =
    "usage: nanmap dot --model MODEL --in FMT [--in-b FMT] --out FMT [--bits]\n"
    "                  [--scales S_FILE --scale-fmt e8m0|ue4m3 [--block N]]\n"
    "                  A_FILE B_FILE [C_FILE]\n"
    "\n"
    "  D = A*B + C for each case (line) of the files, through the Tensor Core\n"
    "  model MODEL; without C_FILE, C = 0.\n"
    "  A_FILE, B_FILE: one case per line, K binary32 bit patterns in hex, each\n"
    "                  exactly a value of the input format FMT (B: --in-b's, when\n"
    "                  given: mixed operands such as e4m3 x e5m2)\n"
    "  C_FILE:         one binary32 per line as 32 characters 0/1\n"
    "  S_FILE:         block scales (the block-scaled kinds): one case per line,\n"
    "                  A's ceil(K/N) scale codes in hex, then B's; product i\n"
    "                  takes scale i/N of each (N: --block, default 32 for e8m0,\n"
    "                  16 for ue4m3)\n"
    "  Output: one line per case, the result widened to binary32 as 32\n"
    "  characters 0/1 (the form of the hardware d files); with --bits the\n"
    "  result's own encoding in hex (0x3c00 for fp16 1.0).\n"
    "MODEL: a GPU (v100 turing a100 h100 h200 h100-mma h200-mma h100-wgmma\n"
    "       h200-wgmma ada l40s b200 b200-tcgen05 rtx5090 b200-mxf8f6f4\n"
    "       b200-mxf4nvf4 mi100 mi250x mi300x)\n"
    "       and/or key=value items, e.g. h100  h100,promote=128  k=16,neab=2,final=rz\n"
    "       keys: k neab final cpre floor prec promote sat clate cround split group\n"
    "       csub zsign nan zalign acc ftz gsum\n"
    "       (docs/tensor-cores.md)\n"
    "Errors: one line on stderr, exit status 2.\n"
    "Example: nanmap dot --model h200 --in fp16 --out fp32 tests/data/tc/a_fp16.txt\n"
    "         tests/data/tc/b_fp16.txt tests/data/tc/c_fp32.txt\n";

/* ---- reading the vector files ---- */

void nm_vecs_free(nm_vecs *v)
{
	free(v->v);
	memset(v, 0, sizeof(*v));
}

/* One line reader over a FILE with a fixed-size buffer. */
struct nm_lines {
	FILE *fp;
	const char *path;
	char *buf;
	size_t len, lineno;
};

/* Read the next line into r->buf (without its "\n" or "\r\n").
 * Returns 1 for a line, 0 at the end, -1 with err written. */
static int nm_next_line(struct nm_lines *r, char *err, size_t errlen)
{
	int ch;
	size_t n = 0;

	ch = getc(r->fp);
	if (ch == EOF) {
		if (ferror(r->fp)) {
			snprintf(err, errlen, "%s: cannot read: %s", r->path, strerror(errno));
			return -1;
		}
		return 0;
	}
	r->lineno++;
	for (; ch != EOF && ch != '\n'; ch = getc(r->fp)) {
		if (ch == 0) {
			snprintf(err, errlen, "%s:%zu: a NUL byte in the line", r->path, r->lineno);
			return -1;
		}
		if (n + 1 >= NM_DOT_MAX_LINE) {
			snprintf(err, errlen, "%s:%zu: line longer than %u bytes", r->path,
			         r->lineno, NM_DOT_MAX_LINE - 1);
			return -1;
		}
		r->buf[n++] = (char)ch;
	}
	if (ch == EOF && ferror(r->fp)) {
		snprintf(err, errlen, "%s: cannot read: %s", r->path, strerror(errno));
		return -1;
	}
	if (n && r->buf[n - 1] == '\r')
		n--;
	r->buf[n] = 0;
	r->len = n;
	return 1;
}

static int nm_lines_open(struct nm_lines *r, const char *path, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->buf = malloc(NM_DOT_MAX_LINE);
	if (!r->buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->fp = fopen(path, "r");
	if (!r->fp) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		free(r->buf);
		r->buf = NULL;
		return -1;
	}
	return 0;
}

static void nm_lines_close(struct nm_lines *r)
{
	if (r->fp)
		fclose(r->fp);
	free(r->buf);
	r->fp = NULL;
	r->buf = NULL;
}

static bool nm_is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

static int nm_hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* A token of 1..8 hex digits with an optional 0x: a binary32 pattern. */
static bool nm_hex32(const char *s, size_t n, uint32_t *out)
{
	uint32_t v = 0;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		n -= 2;
	}
	if (n == 0 || n > 8)
		return false;
	for (size_t i = 0; i < n; i++) {
		int d = nm_hex_digit(s[i]);
		if (d < 0)
			return false;
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return true;
}

/* The most values one input file may hold (A, B or C): 2^24, 64 MiB of
 * encodings, far beyond any vector file; a stream that never ends is
 * refused there. */
#define NM_DOT_MAX_VALUES ((size_t)1 << 24)

/* Append one value, growing the array geometrically; -1 out of memory,
 * -2 past NM_DOT_MAX_VALUES. */
static int nm_append(nm_vecs *v, size_t *used, size_t *cap, emu_bits x)
{
	if (*used == NM_DOT_MAX_VALUES)
		return -2;
	if (*used == *cap) {
		size_t nc = *cap ? *cap * 2 : 4096;
		emu_bits *p = realloc(v->v, nc * sizeof(*p));
		if (!p)
			return -1;
		v->v = p;
		*cap = nc;
	}
	v->v[(*used)++] = x;
	return 0;
}

static void nm_append_fail(int ap, const struct nm_lines *r, char *err, size_t errlen)
{
	if (ap == -2)
		snprintf(err, errlen, "%s:%zu: more than %zu values, the limit of an input file",
		         r->path, r->lineno, NM_DOT_MAX_VALUES);
	else
		snprintf(err, errlen, "out of memory");
}

/* The end of a reader: got is nm_next_line's last result (0 at the end of
 * the file, -1 after an error, as for a bad line); a file without a line
 * is an error ("no WHAT"). On success *out takes v; otherwise v is freed. */
static int nm_vecs_finish(struct nm_lines *r, nm_vecs *v, int got, const char *what, nm_vecs *out,
                          char *err, size_t errlen)
{
	int rc = got;

	if (rc == 0 && v->count == 0) {
		snprintf(err, errlen, "%s: no %s", r->path, what);
		rc = -1;
	}
	nm_lines_close(r);
	if (rc)
		nm_vecs_free(v);
	else
		*out = *v;
	return rc;
}

int nm_read_hex_vectors(const char *path, nm_vecs *out, char *err, size_t errlen)
{
	struct nm_lines r;
	nm_vecs v = {0};
	size_t used = 0, cap = 0;
	int got;

	if (nm_lines_open(&r, path, err, errlen))
		return -1;
	while ((got = nm_next_line(&r, err, errlen)) == 1) {
		size_t k = 0, i = 0;
		while (i < r.len) {
			while (i < r.len && nm_is_blank(r.buf[i]))
				i++;
			if (i == r.len)
				break;
			size_t start = i;
			while (i < r.len && !nm_is_blank(r.buf[i]))
				i++;
			uint32_t x;
			if (!nm_hex32(r.buf + start, i - start, &x)) {
				snprintf(
				    err, errlen,
				    "%s:%zu: value %zu ('%.*s') is not a binary32 bit pattern in "
				    "hex",
				    path, r.lineno, k + 1, (int)(i - start > 20 ? 20 : i - start),
				    r.buf + start);
				goto fail;
			}
			int ap = nm_append(&v, &used, &cap, x);
			if (ap) {
				nm_append_fail(ap, &r, err, errlen);
				goto fail;
			}
			k++;
		}
		if (k == 0) {
			snprintf(err, errlen, "%s:%zu: empty line", path, r.lineno);
			goto fail;
		}
		if (v.count == 0) {
			v.K = k;
		} else if (k != v.K) {
			snprintf(err, errlen, "%s:%zu: %zu values, the first line has %zu", path,
			         r.lineno, k, v.K);
			goto fail;
		}
		v.count++;
	}
	return nm_vecs_finish(&r, &v, got, "vectors", out, err, errlen);
fail:
	return nm_vecs_finish(&r, &v, -1, NULL, out, err, errlen);
}

int nm_read_bin_scalars(const char *path, nm_vecs *out, char *err, size_t errlen)
{
	struct nm_lines r;
	nm_vecs v = {0};
	size_t used = 0, cap = 0;
	int got;

	if (nm_lines_open(&r, path, err, errlen))
		return -1;
	v.K = 1;
	while ((got = nm_next_line(&r, err, errlen)) == 1) {
		size_t n = r.len;
		uint32_t x = 0;
		while (n && nm_is_blank(r.buf[n - 1]))
			n--;
		bool ok = n == 32;
		for (size_t i = 0; ok && i < 32; i++) {
			if (r.buf[i] != '0' && r.buf[i] != '1')
				ok = false;
			x = x << 1 | (uint32_t)(r.buf[i] == '1');
		}
		if (!ok) {
			snprintf(err, errlen,
			         "%s:%zu: expected a binary32 as 32 characters 0/1, got '%.*s'%s",
			         path, r.lineno, (int)(n > 40 ? 40 : n), r.buf,
			         n > 40 ? "..." : "");
			goto fail;
		}
		int ap = nm_append(&v, &used, &cap, x);
		if (ap) {
			nm_append_fail(ap, &r, err, errlen);
			goto fail;
		}
		v.count++;
	}
	return nm_vecs_finish(&r, &v, got, "values", out, err, errlen);
fail:
	return nm_vecs_finish(&r, &v, -1, NULL, out, err, errlen);
}

/* ---- the command ---- */

struct nm_dot_opts {
	const char *model, *in, *in_b, *out;
	const char *scales, *scale_fmt;
	uint64_t block; /* 0: the scale format's default */
	bool bits;
	const char *files[3];
	size_t nfiles;
};

enum { ND_O_MODEL, ND_O_IN, ND_O_INB, ND_O_OUT, ND_O_BITS, ND_O_SCALES, ND_O_SFMT, ND_O_BLOCK };

static const nm_opt nm_dot_optdefs[] = {
    {"-m", "--model", ND_O_MODEL, NM_OPTF_VALUE, 0},
    {NULL, "--in", ND_O_IN, NM_OPTF_VALUE, 0},
    {NULL, "--in-b", ND_O_INB, NM_OPTF_VALUE, 0},
    {NULL, "--out", ND_O_OUT, NM_OPTF_VALUE, 0},
    {NULL, "--bits", ND_O_BITS, 0, 0},
    {NULL, "--scales", ND_O_SCALES, NM_OPTF_VALUE, 0},
    {NULL, "--scale-fmt", ND_O_SFMT, NM_OPTF_VALUE, 0},
    {NULL, "--block", ND_O_BLOCK, NM_OPTF_VALUE, 0},
};

static int nm_dot_take(void *ctx, const nm_opt *d, const char *v)
{
	struct nm_dot_opts *o = ctx;

	if (d->id == ND_O_MODEL)
		o->model = v;
	else if (d->id == ND_O_IN)
		o->in = v;
	else if (d->id == ND_O_INB)
		o->in_b = v;
	else if (d->id == ND_O_OUT)
		o->out = v;
	else if (d->id == ND_O_SCALES)
		o->scales = v;
	else if (d->id == ND_O_SFMT)
		o->scale_fmt = v;
	else if (d->id == ND_O_BLOCK)
		return nm_parse_count("--block", v, 1, EMU_TC_K_MAX, &o->block);
	else
		o->bits = true;
	return 0;
}

static int nm_dot_file(void *ctx, const char *s)
{
	struct nm_dot_opts *o = ctx;

	if (o->nfiles == 3)
		return nm_fail("dot: too many files ('%s'): A_FILE B_FILE [C_FILE]", s);
	o->files[o->nfiles++] = s;
	return 0;
}

static int nm_dot_args(int argc, char **argv, struct nm_dot_opts *o)
{
	memset(o, 0, sizeof(*o));
	if (nm_opt_parse(
	        &(nm_optparser){.cmd = "dot",
	                        .defs = nm_dot_optdefs,
	                        .ndefs = sizeof(nm_dot_optdefs) / sizeof(nm_dot_optdefs[0]),
	                        .take = nm_dot_take,
	                        .arg = nm_dot_file,
	                        .ctx = o},
	        argc - 1, argv + 1))
		return NM_EXIT_ERR;
	if (!o->model)
		return nm_fail("dot: --model is required (e.g. --model h100)");
	if (!o->in || !o->out)
		return nm_fail("dot: --in and --out are required (e.g. --in fp16 --out fp32)");
	if (o->nfiles < 2)
		return nm_fail("dot: needs A_FILE and B_FILE");
	if (!o->scales != !o->scale_fmt)
		return nm_fail("dot: --scales and --scale-fmt go together");
	if (o->block && !o->scales)
		return nm_fail("dot: --block needs --scales");
	return 0;
}

/* Turn the binary32 patterns of A or B into encodings of in, exactly. */
static int nm_dot_to_input(nm_vecs *v, const char *path, const emu_format *in,
                           const emu_format *fp32)
{
	const emu_env rne = EMU_ENV_DEFAULT;

	for (size_t i = 0; i < v->count * v->K; i++) {
		emu_bits x = v->v[i];
		emu_result r = emu_convert(in, fp32, x, &rne);
		bool src_nan = emu_is_nan(fp32, x);
		if (r.flags != 0 || emu_is_nan(in, r.bits) != src_nan)
			return nm_fail("%s:%zu: value %zu (0x%08x) is not exactly a value of %s",
			               path, i / v->K + 1, i % v->K + 1, (unsigned)x, in->name);
		v->v[i] = r.bits;
	}
	return 0;
}

static int nm_dot_run(const struct nm_dot_opts *o)
{
	char err[NM_ERR_LEN];
	emu_format in, in_b, out;
	const emu_format *fp32 = emu_format_by_name("fp32");
	emu_tc_model m;
	nm_vecs A = {0}, B = {0}, C = {0}, S = {0};
	char *text = NULL;
	int rc;

	if (emu_format_parse(o->in, &in, err, sizeof err) != EMU_OK)
		return nm_fail("dot: --in: %s", err);
	if (emu_format_parse(o->out, &out, err, sizeof err) != EMU_OK)
		return nm_fail("dot: --out: %s", err);
	in_b = in;
	if (o->in_b && emu_format_parse(o->in_b, &in_b, err, sizeof err) != EMU_OK)
		return nm_fail("dot: --in-b: %s", err);
	if (emu_tc_parse(o->model, &in, &out, &m, err, sizeof err) != EMU_OK)
		return nm_fail("dot: --model: %s", err);
	if (emu_tc_check(&m, &in, &out, err, sizeof err) != EMU_OK)
		return nm_fail("dot: --model %s with %s -> %s: %s", o->model, in.name, out.name,
		               err);
	if (emu_tc_check(&m, &in_b, &out, err, sizeof err) != EMU_OK)
		return nm_fail("dot: --model %s with B in %s -> %s: %s", o->model, in_b.name,
		               out.name, err);
	/* block scales: e8m0, or ue4m3 (e4m3 whose sign bit the model ignores) */
	emu_tc_scales sc = {0};
	if (o->scales) {
		bool ue = !strcmp(o->scale_fmt, "ue4m3") || !strcmp(o->scale_fmt, "e4m3");
		if (!ue && strcmp(o->scale_fmt, "e8m0") != 0)
			return nm_fail("dot: --scale-fmt '%s': e8m0 or ue4m3", o->scale_fmt);
		sc.fmt = emu_format_by_name(ue ? "e4m3" : "e8m0");
		sc.block = o->block ? (size_t)o->block : ue ? 16 : 32;
		static const emu_bits unset = 0;
		sc.sa = sc.sb = &unset; /* each case's scales come later */
		if (emu_tc_check_scales(&m, &sc, err, sizeof err) != EMU_OK)
			return nm_fail("dot: --model %s with %s scales per %zu: %s", o->model,
			               o->scale_fmt, sc.block, err);
	}
	rc = NM_EXIT_ERR;
	if (nm_read_hex_vectors(o->files[0], &A, err, sizeof err) ||
	    nm_read_hex_vectors(o->files[1], &B, err, sizeof err) ||
	    (o->nfiles == 3 && nm_read_bin_scalars(o->files[2], &C, err, sizeof err)) ||
	    (o->scales && nm_read_hex_vectors(o->scales, &S, err, sizeof err))) {
		nm_fail("%s", err);
		goto done;
	}
	if (B.count != A.count || B.K != A.K) {
		nm_fail("%s: %zu cases of %zu values, but %s has %zu of %zu", o->files[1], B.count,
		        B.K, o->files[0], A.count, A.K);
		goto done;
	}
	if (o->nfiles == 3 && C.count != A.count) {
		nm_fail("%s: %zu values, but %s has %zu cases", o->files[2], C.count, o->files[0],
		        A.count);
		goto done;
	}
	if (nm_dot_to_input(&A, o->files[0], &in, fp32) ||
	    nm_dot_to_input(&B, o->files[1], &in_b, fp32))
		goto done;
	size_t ns = o->scales ? (A.K + sc.block - 1) / sc.block : 0;
	if (o->scales && (S.count != A.count || S.K != 2 * ns)) {
		nm_fail("%s: %zu cases of %zu scales, but %s has %zu cases of %zu values (%zu "
		        "scales for A, then %zu for B, per line)",
		        o->scales, S.count, S.K, o->files[0], A.count, A.K, ns, ns);
		goto done;
	}
	for (size_t i = 0; i < S.count * S.K; i++)
		if ((S.v[i] >> sc.fmt->bits) != 0) {
			nm_fail("%s:%zu: scale %zu (0x%x) is not a code of %s", o->scales,
			        i / S.K + 1, i % S.K + 1, (unsigned)S.v[i], o->scale_fmt);
			goto done;
		}

	/* each output line is at most 33 bytes ("0x" + 8 hex digits is less) */
	text = malloc(A.count * 34 + 1);
	if (!text) {
		nm_fail("out of memory");
		goto done;
	}
	size_t pos = 0;
	const emu_env rne = EMU_ENV_DEFAULT;
	for (size_t i = 0; i < A.count; i++) {
		emu_bits c = o->nfiles == 3 ? C.v[i] : 0;
		if (o->scales) {
			sc.sa = S.v + i * S.K;
			sc.sb = sc.sa + ns;
		}
		emu_result d = emu_tc_dot_scaled(&m, &in, &in_b, &out, A.v + i * A.K, B.v + i * A.K,
		                                 A.K, c, o->scales ? &sc : NULL);
		if (o->bits) {
			char hex[NM_NUM_LEN];
			pos += (size_t)sprintf(text + pos, "%s\n",
			                       nm_fmt_bits(&out, d.bits, hex, sizeof hex));
		} else {
			emu_bits w =
			    emu_convert(fp32, &out, d.bits, &rne).bits; /* exact widening */
			for (int j = 31; j >= 0; j--)
				text[pos++] = (char)('0' + ((w >> j) & 1));
			text[pos++] = '\n';
		}
	}
	if (fwrite(text, 1, pos, stdout) != pos || fflush(stdout) != 0 || ferror(stdout)) {
		nm_fail("cannot write the output: %s", strerror(errno));
		goto done;
	}
	rc = 0;
done:
	free(text);
	nm_vecs_free(&A);
	nm_vecs_free(&B);
	nm_vecs_free(&C);
	nm_vecs_free(&S);
	return rc;
}

int nm_dot_main(int argc, char **argv)
{
	struct nm_dot_opts o;

	if (nm_wants_help(argc - 1, argv + 1))
		return nm_print_help(nm_dot_usage);
	if (nm_dot_args(argc, argv, &o))
		return NM_EXIT_ERR;
	return nm_dot_run(&o);
}
