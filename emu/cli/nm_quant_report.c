/*
 * nm_quant_report.c — what `nanmap quant` writes (nm_quant_report.h): the
 * report, one row per tensor and a total, as a text table, CSV or JSON,
 * and the output files (--out: the dequantised tensors, or their encodings
 * and block scales, as .safetensors or .npy, staged and renamed into place
 * together).
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/cli/nm_quant_report.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_parse.h"

/* ---- the report ---- */

static void nq_shape_str(const struct nq_tensor *t, char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = '\0';
	if (t->ndim == 0)
		snprintf(buf, len, "scalar");
	for (int i = 0; i < t->ndim && k < len; i++) {
		int w = snprintf(buf + k, len - k, i ? "x%" PRIu64 : "%" PRIu64, t->shape[i]);
		if (w < 0)
			break;
		k += (size_t)w;
	}
}

/* "2^-3:12 2^-2:40": the blocks per scale exponent, smallest first. */
static void nq_hist_str(nm_buf *b, const emu_qstats *st)
{
	bool first = true;

	for (int k = 0; k < 300; k++)
		if (st->exp_hist[k]) {
			nm_buf_printf(b, "%s2^%d:%" PRIu64, first ? "" : " ", k - NQ_EXP_BIAS,
			              st->exp_hist[k]);
			first = false;
		}
}

static double nq_frac(uint64_t k, const emu_qstats *st)
{
	uint64_t fin = st->n - st->nan_in - st->inf_in;
	return fin ? (double)k / (double)fin : 0;
}

/* The columns of a tensor's row, in order (CSV header, table, JSON keys). */
static const char *const nq_cols[] = {
    "name",       "status",     "shape",         "dtype",     "recipe",         "role",
    "copy",       "n",          "amax",          "saturated", "saturated_frac", "flushed",
    "lost",       "within",     "nonfinite_out", "nan_in",    "inf_in",         "sqnr_db",
    "max_rel",    "mean_rel",   "bias",          "bias_se",   "blocks",         "zero_scales",
    "nan_scales", "inf_scales", "scale_exp_hist"};
#define NQ_NCOLS (sizeof(nq_cols) / sizeof(nq_cols[0]))
/* the columns that are numbers (JSON writes them bare) */
#define NQ_FIRST_NUM 7
#define NQ_LAST_NUM 25

/* The cells of one row; prec: significant digits of the real numbers.
 * Every cell is malloc'ed into cells[NQ_NCOLS]; false when out of memory. */
static bool nq_cells(const struct nq_report *rp, const struct nq_tensor *t, const emu_qstats *st,
                     const char *status, int prec, char **cells)
{
	char num[NM_NUM_LEN], shape[256];
	nm_buf h = {0};
	const char *u64fmt = "%" PRIu64;
	bool skipped = !strcmp(status, "skipped");

	memset(cells, 0, NQ_NCOLS * sizeof(*cells));
	if (t)
		nq_shape_str(t, shape, sizeof(shape));
	cells[0] = strdup(t ? t->name : "total");
	cells[1] = strdup(status);
	cells[2] = strdup(t ? shape : "");
	cells[3] = strdup(t ? t->dtype : "");
	cells[4] = strdup(skipped ? "" : rp->r->name);
	cells[5] = strdup(skipped ? "" : emu_role_name(rp->o->role));
	cells[6] = strdup(skipped ? "" : rp->o->colwise ? "col" : "row");
	if (!skipped) {
		const uint64_t ints[] = {st->n,       0,         st->saturated, 0,
		                         st->flushed, st->lost,  st->within,    st->nonfinite_out,
		                         st->nan_in,  st->inf_in};
		for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
			if (i == 1 || i == 3)
				continue;
			char v[32];
			snprintf(v, sizeof(v), u64fmt, ints[i]);
			cells[7 + i] = strdup(v);
		}
		cells[8] = strdup(nm_fmt_g(st->amax, prec, num, sizeof(num)));
		cells[10] = strdup(nm_fmt_g(nq_frac(st->saturated, st), prec, num, sizeof(num)));
		const double reals[] = {st->sqnr_db, st->max_rel, st->mean_rel, st->bias,
		                        st->bias_se};
		for (size_t i = 0; i < 5; i++)
			cells[17 + i] = strdup(nm_fmt_g(reals[i], prec, num, sizeof(num)));
		const uint64_t blk[] = {st->blocks, st->zero_scale, st->nan_scale, st->inf_scale};
		for (size_t i = 0; i < 4; i++) {
			char v[32];
			snprintf(v, sizeof(v), u64fmt, blk[i]);
			cells[22 + i] = strdup(v);
		}
		nq_hist_str(&h, st);
		cells[26] = strdup(h.oom ? "" : nm_buf_str(&h));
	} else {
		for (size_t i = 7; i < NQ_NCOLS; i++)
			cells[i] = strdup("");
	}
	bool oom = h.oom;
	nm_buf_free(&h);
	for (size_t i = 0; i < NQ_NCOLS; i++)
		if (!cells[i])
			return false;
	return !oom;
}

static void nq_cells_free(char **cells)
{
	for (size_t i = 0; i < NQ_NCOLS; i++)
		free(cells[i]);
}

/* The rows of the report: each tensor, then the total when several were
 * quantised. Calls row(ctx, tensor or NULL, stats, status, index). */
typedef void (*nq_row_fn)(void *ctx, const struct nq_report *rp, const struct nq_tensor *t,
                          const emu_qstats *st, const char *status, size_t i);

static void nq_rows(const struct nq_report *rp, nq_row_fn row, void *ctx)
{
	for (size_t i = 0; i < rp->in->nt; i++) {
		const struct nq_tensor *t = &rp->in->t[i];
		row(ctx, rp, t, &rp->res[i].st, t->skipped ? "skipped" : "ok", i);
	}
	if (rp->nquant > 1)
		row(ctx, rp, NULL, &rp->total, "total", rp->in->nt);
}

struct nq_csv_ctx {
	nm_buf *b;
	bool oom;
};

static void nq_csv_row(void *ctx, const struct nq_report *rp, const struct nq_tensor *t,
                       const emu_qstats *st, const char *status, size_t i)
{
	struct nq_csv_ctx *c = ctx;
	char *cells[NQ_NCOLS];

	(void)i;
	if (!nq_cells(rp, t, st, status, 17, cells)) {
		c->oom = true;
	} else {
		for (size_t k = 0; k < NQ_NCOLS; k++) {
			if (k)
				nm_buf_putc(c->b, ',');
			nm_buf_csv(c->b, cells[k]);
		}
		nm_buf_putc(c->b, '\n');
	}
	nq_cells_free(cells);
}

static void nq_json_row(void *ctx, const struct nq_report *rp, const struct nq_tensor *t,
                        const emu_qstats *st, const char *status, size_t i)
{
	struct nq_csv_ctx *c = ctx;
	nm_buf *b = c->b;
	char *cells[NQ_NCOLS];
	bool skipped = !strcmp(status, "skipped");

	if (!nq_cells(rp, t, st, status, 17, cells)) {
		c->oom = true;
		nq_cells_free(cells);
		return;
	}
	nm_buf_put(b, i ? ",\n  {" : "  {");
	for (size_t k = 0; k < NQ_NCOLS; k++) {
		if (skipped && k > 3)
			break;
		if (k)
			nm_buf_put(b, ", ");
		nm_buf_json_str(b, nq_cols[k]);
		nm_buf_put(b, ": ");
		if (k == 2 && t) {
			nm_buf_putc(b, '[');
			for (int d = 0; d < t->ndim; d++)
				nm_buf_printf(b, d ? ", %" PRIu64 : "%" PRIu64, t->shape[d]);
			nm_buf_putc(b, ']');
		} else if (k == 2) {
			nm_buf_put(b, "null");
		} else if (k == NQ_NCOLS - 1) {
			bool first = true;
			nm_buf_putc(b, '{');
			for (int e = 0; e < 300; e++)
				if (st->exp_hist[e]) {
					nm_buf_printf(b, "%s\"%d\": %" PRIu64, first ? "" : ", ",
					              e - NQ_EXP_BIAS, st->exp_hist[e]);
					first = false;
				}
			nm_buf_putc(b, '}');
		} else if (k >= NQ_FIRST_NUM && k <= NQ_LAST_NUM) {
			static const int real_cols[] = {8, 10, 17, 18, 19, 20, 21};
			bool real = false;
			for (size_t q = 0; q < sizeof(real_cols) / sizeof(real_cols[0]); q++)
				real |= real_cols[q] == (int)k;
			if (real)
				nm_buf_json_num(b, k == 8    ? st->amax
				                   : k == 10 ? nq_frac(st->saturated, st)
				                   : k == 17 ? st->sqnr_db
				                   : k == 18 ? st->max_rel
				                   : k == 19 ? st->mean_rel
				                   : k == 20 ? st->bias
				                             : st->bias_se);
			else
				nm_buf_put(b, cells[k]);
		} else {
			/* k < NQ_NCOLS, the array's size (cppcheck reads the range test above as
			 * a bound on k) */
			/* cppcheck-suppress arrayIndexOutOfBoundsCond */
			nm_buf_json_str(b, cells[k]);
		}
	}
	if (!skipped && t && rp->o->worst_k) {
		const struct nq_result *res = &rp->res[i];
		nm_buf_put(b, ",\n   \"worst_blocks\": [");
		for (size_t w = 0; w < res->nworst; w++) {
			const struct nq_block *k = &res->worst[w];
			char enc[NM_NUM_LEN];
			nm_buf_printf(b,
			              "%s{\"block\": %zu, \"row\": %zu, \"col\": %zu, \"amax\": ",
			              w ? ", " : "", k->index, k->row, k->col);
			nm_buf_json_num(b, k->amax);
			nm_buf_put(b, ", \"d\": ");
			nm_buf_json_num(b, k->d);
			nm_buf_printf(b, ", \"d_enc\": \"%s\", \"sqnr_db\": ",
			              nm_fmt_bits(&rp->r->scale_fmt, k->dcode, enc, sizeof(enc)));
			nm_buf_json_num(b, k->sqnr);
			nm_buf_printf(b, ", \"saturated\": %" PRIu64 "}", k->saturated);
		}
		nm_buf_putc(b, ']');
	}
	nm_buf_putc(b, '}');
	nq_cells_free(cells);
}

struct nq_table {
	char **cells; /* rows × NQ_NCOLS */
	size_t nrows, cap;
	bool oom;
};

static void nq_table_row(void *ctx, const struct nq_report *rp, const struct nq_tensor *t,
                         const emu_qstats *st, const char *status, size_t i)
{
	struct nq_table *tb = ctx;

	(void)i;
	if (tb->oom || tb->nrows == tb->cap) {
		tb->oom = true;
		return;
	}
	if (!nq_cells(rp, t, st, status, 6, tb->cells + tb->nrows * NQ_NCOLS))
		tb->oom = true;
	tb->nrows++;
}

/* An aligned table: each column as wide as its widest cell, numbers to the
 * right, text to the left, the histogram last and unpadded. */
static void nq_print_table(nm_buf *b, const char *const *head, char **cells, size_t nrows,
                           size_t ncols, const bool *right)
{
	size_t w[NQ_NCOLS + 8] = {0};
	char shown[1024]; /* a cell as nm_shown shows it: a tensor's name from a file
	                   * may hold control bytes, which must not reach a terminal */

	for (size_t c = 0; c < ncols; c++) {
		w[c] = strlen(head[c]);
		for (size_t r = 0; r < nrows; r++) {
			size_t l = strlen(nm_shown(cells[r * ncols + c], shown, sizeof(shown)));
			w[c] = l > w[c] ? l : w[c];
		}
	}
	for (size_t r = 0; r <= nrows; r++) {
		for (size_t c = 0; c < ncols; c++) {
			const char *s = nm_shown(r ? cells[(r - 1) * ncols + c] : head[c], shown,
			                         sizeof(shown));
			bool last = c + 1 == ncols;
			if (last)
				nm_buf_put(b, s);
			else if (right[c])
				nm_buf_printf(b, "%*s  ", (int)w[c], s);
			else
				nm_buf_printf(b, "%-*s  ", (int)w[c], s);
		}
		while (!b->oom && b->len > 0 && b->s[b->len - 1] == ' ')
			b->s[--b->len] = '\0'; /* a skipped tensor's empty cells */
		nm_buf_putc(b, '\n');
	}
}

static void nq_text(nm_buf *b, const struct nq_report *rp, bool *oom)
{
	struct nq_table tb = {0};
	bool right[NQ_NCOLS];

	tb.cap = rp->in->nt + 1;
	tb.cells = calloc(tb.cap * NQ_NCOLS, sizeof(*tb.cells));
	if (!tb.cells) {
		*oom = true;
		return;
	}
	nq_rows(rp, nq_table_row, &tb);
	for (size_t c = 0; c < NQ_NCOLS; c++)
		right[c] = c >= NQ_FIRST_NUM && c <= NQ_LAST_NUM;
	if (!tb.oom)
		nq_print_table(b, nq_cols, tb.cells, tb.nrows, NQ_NCOLS, right);
	*oom |= tb.oom;
	for (size_t r = 0; r < tb.nrows; r++)
		nq_cells_free(tb.cells + r * NQ_NCOLS);
	free(tb.cells);
	if (!rp->o->worst_k || *oom)
		return;
	static const char *const wh[] = {"block", "row",   "col",     "amax",
	                                 "d",     "d_enc", "sqnr_db", "saturated"};
	static const bool wr[] = {true, true, true, true, true, false, true, true};
	for (size_t i = 0; i < rp->in->nt; i++) {
		const struct nq_result *res = &rp->res[i];
		size_t nc = sizeof(wh) / sizeof(wh[0]);
		char **cells;
		if (rp->in->t[i].skipped)
			continue;
		nm_buf_put(b, "\nworst blocks of ");
		nm_buf_put_shown(b, rp->in->t[i].name);
		nm_buf_printf(b, " (%zu of %zu, lowest SQNR first):\n", res->nworst,
		              res->nbr * res->nbc);
		cells = calloc((res->nworst ? res->nworst : 1) * nc, sizeof(*cells));
		if (!cells) {
			*oom = true;
			return;
		}
		for (size_t w = 0; w < res->nworst; w++) {
			const struct nq_block *k = &res->worst[w];
			char v[3][NM_NUM_LEN], enc[NM_NUM_LEN], s[3][32];
			snprintf(s[0], sizeof(s[0]), "%zu", k->index);
			snprintf(s[1], sizeof(s[1]), "%zu", k->row);
			snprintf(s[2], sizeof(s[2]), "%zu", k->col);
			char sat[32];
			snprintf(sat, sizeof(sat), "%" PRIu64, k->saturated);
			const char *vals[] = {
			    s[0],
			    s[1],
			    s[2],
			    nm_fmt_g(k->amax, 6, v[0], sizeof(v[0])),
			    nm_fmt_g(k->d, 6, v[1], sizeof(v[1])),
			    nm_fmt_bits(&rp->r->scale_fmt, k->dcode, enc, sizeof(enc)),
			    nm_fmt_g(k->sqnr, 6, v[2], sizeof(v[2])),
			    sat};
			for (size_t c = 0; c < nc; c++)
				if (!(cells[w * nc + c] = strdup(vals[c])))
					*oom = true;
		}
		if (!*oom)
			nq_print_table(b, wh, cells, res->nworst, nc, wr);
		for (size_t c = 0; c < res->nworst * nc; c++)
			free(cells[c]);
		free(cells);
	}
}

int nq_build_report(const struct nq_report *rp, nm_buf *b)
{
	bool oom = false;
	struct nq_csv_ctx c = {b, false};

	if (rp->o->style == NQ_CSV) {
		for (size_t k = 0; k < NQ_NCOLS; k++)
			nm_buf_printf(b, k ? ",%s" : "%s", nq_cols[k]);
		nm_buf_putc(b, '\n');
		nq_rows(rp, nq_csv_row, &c);
		oom = c.oom;
	} else if (rp->o->style == NQ_JSON) {
		nm_buf_put(b, "[\n");
		nq_rows(rp, nq_json_row, &c);
		nm_buf_put(b, "\n]\n");
		oom = c.oom;
	} else {
		nq_text(b, rp, &oom);
	}
	return oom || b->oom ? nq_oom() : 0;
}

/* ---- output files ---- */

static nm_st_dtype nq_st_uint(int bits)
{
	return bits <= 8 ? NM_ST_U8 : bits <= 16 ? NM_ST_U16 : NM_ST_U32;
}

static nm_npy_dtype nq_npy_uint(int bits)
{
	return bits <= 8 ? NM_NPY_U1 : bits <= 16 ? NM_NPY_U2 : NM_NPY_U4;
}

/* n values of width bytes each, little-endian, into a malloc'ed buffer */
static uint8_t *nq_le_u32(const uint32_t *v, size_t n, size_t width)
{
	uint8_t *p = malloc(n * width > 0 ? n * width : 1);
	if (!p)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < width; k++)
			p[i * width + k] = (uint8_t)(v[i] >> (8 * k));
	return p;
}

static uint8_t *nq_le_f64(const double *v, size_t n)
{
	uint8_t *p = malloc(n > 0 ? n * 8 : 1);
	if (!p)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t u;
		memcpy(&u, &v[i], 8);
		for (size_t k = 0; k < 8; k++)
			p[i * 8 + k] = (uint8_t)(u >> (8 * k));
	}
	return p;
}

static uint32_t nq_f32_bits(double v)
{
	float f = (float)v; /* t is an fp32 value: exact */
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* Every tensor quantised, as one .safetensors file. */
/* Remove what a killed quant --out left beside its output: the temporaries
 * "NAME.tmp.PID" of the files it writes (the output, and beside a .npy its
 * .scales.npy and .tensor_scale.npy) whose PID is no running process; only
 * those names, each said on stderr, as the sweep and golden update clean
 * theirs. */
void nq_clean_stale(const char *out)
{
	static const char *const sfx[] = {"", ".scales.npy", ".tensor_scale.npy"};
	const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
	bool npy = nq_ends_with(out, ".npy");
	size_t stem = strlen(base) - (npy ? 4 : 0);
	char dir[4096], pat[1200];

	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == out ? 1 : (int)(slash - out), out);
	else
		snprintf(dir, sizeof(dir), ".");
	for (size_t k = 0; k < (npy ? 3u : 1u); k++) {
		size_t n = 0;
		const char *name = base;
		size_t len = k ? stem : strlen(base);

		/* the name literally: % and * are the pattern's */
		for (size_t i = 0; i < len && n + 2 < sizeof(pat) - 32; i++) {
			if (name[i] == '%' || name[i] == '*')
				pat[n++] = '%';
			pat[n++] = name[i];
		}
		snprintf(pat + n, sizeof(pat) - n, "%s.tmp.%%p", sfx[k]);
		(void)nm_file_clean_match(dir, pat, "left by a quant --out that did not finish");
	}
}

int nq_write_st(const struct nq_report *rp)
{
	const struct nq_opts *o = rp->o;
	size_t per = o->encodings ? 4 : 1, nout = 0;
	nm_st_out *outs = calloc(rp->in->nt * per + 1, sizeof(*outs));
	char **names = calloc(rp->in->nt * per + 1, sizeof(*names));
	uint8_t **bufs = calloc(rp->in->nt * per + 1, sizeof(*bufs));
	uint64_t(*shapes)[NM_ST_MAX_DIMS] = calloc(rp->in->nt * per + 1, sizeof(*shapes));
	char err[NQ_ERR_LEN];
	int rc = 0;
	bool nvfp4 = rp->r->rule == EMU_RSCALE_NVFP4;
	int ebits = rp->r->elem.bits, sbits = rp->r->scale_fmt.bits;

	if (!outs || !names || !bufs || !shapes) {
		rc = nq_oom();
		goto done;
	}
	for (size_t i = 0; i < rp->in->nt && !rc; i++) {
		const struct nq_tensor *t = &rp->in->t[i];
		const struct nq_result *res = &rp->res[i];
		size_t n = t->rows * t->cols, nb = res->nbr * res->nbc;
		static const char *const sfx[] = {"", ".codes", ".scales", ".tensor_scale"};
		if (t->skipped)
			continue;
		for (size_t k = 0; k < per; k++) {
			nm_st_out *w = &outs[nout];
			size_t len = strlen(t->name) + strlen(sfx[k]) + 1;
			if (k == 3 && !nvfp4)
				break;
			if (!(names[nout] = malloc(len))) {
				rc = nq_oom();
				break;
			}
			snprintf(names[nout], len, "%s%s", t->name, sfx[k]);
			w->name = names[nout];
			w->shape = shapes[nout];
			if (k == 0) {
				w->dtype = NM_ST_F64;
				w->ndim = t->ndim;
				memcpy(shapes[nout], t->shape, sizeof(t->shape));
				bufs[nout] = nq_le_f64(res->deq, n);
				w->nbytes = (uint64_t)n * 8;
			} else if (k == 1) {
				w->dtype = nq_st_uint(ebits);
				w->ndim = t->ndim;
				memcpy(shapes[nout], t->shape, sizeof(t->shape));
				size_t width = nm_st_dtype_bits(w->dtype) / 8;
				bufs[nout] = nq_le_u32(res->codes, n, width);
				w->nbytes = (uint64_t)n * width;
			} else if (k == 2) {
				w->dtype = nq_st_uint(sbits);
				w->ndim = 2;
				shapes[nout][0] = res->nbr;
				shapes[nout][1] = res->nbc;
				size_t width = nm_st_dtype_bits(w->dtype) / 8;
				bufs[nout] = nq_le_u32(res->scales, nb, width);
				w->nbytes = (uint64_t)nb * width;
			} else {
				uint32_t u = nq_f32_bits(res->t);
				w->dtype = NM_ST_F32;
				w->ndim = 1;
				shapes[nout][0] = 1;
				bufs[nout] = nq_le_u32(&u, 1, 4);
				w->nbytes = 4;
			}
			w->data = bufs[nout];
			nout++;
			if (!bufs[nout - 1]) {
				rc = nq_oom();
				break;
			}
		}
	}
	if (!rc) {
		err[0] = '\0';
		if (nm_st_write(o->out, outs, nout, err, sizeof(err)) != NM_ST_OK)
			rc = nm_fail("%s", err[0] ? err : "cannot write the --out file");
	}
done:
	for (size_t i = 0; outs && i < rp->in->nt * per; i++) {
		if (names)
			free(names[i]);
		if (bufs)
			free(bufs[i]);
	}
	free(outs);
	free(names);
	free(bufs);
	free(shapes);
	return rc;
}

/* "x.npy" with ".scales.npy" for its ".npy" */
static char *nq_sibling(const char *path, const char *suffix)
{
	size_t n = strlen(path) - 4, m = strlen(suffix);
	char *s = malloc(n + m + 1);
	if (s)
		snprintf(s, n + m + 1, "%.*s%s", (int)n, path, suffix);
	return s;
}

/* One tensor as .npy: the dequantised values ('<f8'), or with --encodings
 * the codes, FILE.scales.npy and for NVFP4 FILE.tensor_scale.npy, staged
 * together and renamed into place only when all are written. */
int nq_write_npy(const struct nq_report *rp)
{
	const struct nq_opts *o = rp->o;
	const struct nq_tensor *t = NULL;
	const struct nq_result *res = NULL;
	char *paths[3] = {NULL, NULL, NULL}, *tmps[3] = {NULL, NULL, NULL};
	void *buf = NULL;
	size_t len, nfiles = 0;
	char err[NQ_ERR_LEN];
	int rc = 0;

	for (size_t i = 0; i < rp->in->nt; i++)
		if (!rp->in->t[i].skipped) {
			t = &rp->in->t[i];
			res = &rp->res[i];
		}
	if (!t)
		return nm_fail("--out %s: no tensor was quantised", o->out);
	size_t n = t->rows * t->cols;
	/* .npy holds 1-D or 2-D: more dimensions are written as quantised,
	 * (leading dims) x last */
	int ndim = t->ndim >= 2 ? 2 : 1;
	size_t shape[2] = {ndim == 2 ? t->rows : n, t->cols};
	err[0] = '\0';
	if (!o->encodings) {
		if (nm_npy_write(o->out, NM_NPY_F8, ndim, shape, res->deq, NULL, err,
		                 sizeof(err)) != NM_NPY_OK)
			return nm_fail("%s", err[0] ? err : "cannot write the --out file");
		return 0;
	}
	size_t nb = res->nbr * res->nbc, sshape[2] = {res->nbr, res->nbc}, one = 1;
	uint32_t tbits = nq_f32_bits(res->t);
	paths[0] = strdup(o->out);
	paths[1] = nq_sibling(o->out, ".scales.npy");
	nfiles = rp->r->rule == EMU_RSCALE_NVFP4 ? 3 : 2;
	if (nfiles == 3)
		paths[2] = nq_sibling(o->out, ".tensor_scale.npy");
	for (size_t k = 0; k < nfiles; k++)
		if (!paths[k]) {
			rc = nq_oom();
			goto done;
		}
	for (size_t k = 0; k < nfiles && !rc; k++) {
		nm_npy_status s;
		if (k == 0)
			s = nm_npy_encode(nq_npy_uint(rp->r->elem.bits), ndim, shape, NULL,
			                  res->codes, &buf, &len, paths[k], err, sizeof(err));
		else if (k == 1)
			s = nm_npy_encode(nq_npy_uint(rp->r->scale_fmt.bits), 2, sshape, NULL,
			                  nb ? res->scales : &tbits, &buf, &len, paths[k], err,
			                  sizeof(err));
		else
			s = nm_npy_encode(NM_NPY_F4, 1, &one, NULL, &tbits, &buf, &len, paths[k],
			                  err, sizeof(err));
		if (s != NM_NPY_OK)
			rc = nm_fail("%s", err[0] ? err : "cannot encode the --out file");
		else if (nm_file_stage(paths[k], buf, len, &tmps[k], err, sizeof(err)))
			rc = nm_fail("%s", err);
		free(buf);
		buf = NULL;
	}
	for (size_t k = 0; k < nfiles && !rc; k++) {
		if (nm_file_commit(tmps[k], paths[k], err, sizeof(err)))
			rc = nm_fail("%s", err);
		free(tmps[k]);
		tmps[k] = NULL;
	}
done:
	for (size_t k = 0; k < 3; k++) {
		if (tmps[k]) {
			nm_file_discard(tmps[k]);
			free(tmps[k]);
		}
		free(paths[k]);
	}
	return rc;
}
