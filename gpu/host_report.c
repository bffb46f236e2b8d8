/*
 * host_report.c — the runner's CSV and Markdown, rewritten whole after every
 * row so that a run cut short (timeout, crash, lost device) still leaves a
 * complete report of what finished. Files go through path.tmp + rename().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/io/nm_buf.h"
#include "emu/io/nm_file.h"
#include "gpu/gpu_host.h"

void gpu_report_init(gpu_report *r, const char *dir, const char *base)
{
	memset(r, 0, sizeof *r);
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	snprintf(r->base, sizeof r->base, "%s", base);
}

int gpu_report_add(gpu_report *r, const gpu_cmp *c)
{
	if (r->nrows == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		gpu_cmp *p = realloc(r->rows, cap * sizeof *p);
		if (!p)
			return -1;
		r->rows = p;
		r->cap = cap;
	}
	r->rows[r->nrows++] = *c;
	return 0;
}

int gpu_report_note(gpu_report *r, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	char **p = realloc(r->notes, (r->nnotes + 1) * sizeof *p);
	if (!p)
		return -1;
	r->notes = p;
	if (!(r->notes[r->nnotes] = strdup(buf)))
		return -1;
	r->nnotes++;
	return 0;
}

void gpu_report_free(gpu_report *r)
{
	for (size_t i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	free(r->rows);
	memset(r, 0, sizeof *r);
}

const char *gpu_report_csv_header(void)
{
	return "step,kernel,format,mode,compared,identical,nan_equal,within_tol,tol_ulp,bad,"
	       "max_ulp,gpu_nans,verdict";
}

static const char *verdict(const gpu_cmp *c)
{
	if (gpu_cmp_bad(c))
		return "MISMATCH";
	return c->within || c->nan_equal ? "ok" : "identical";
}

static void put_ulp(nm_buf *b, uint64_t u)
{
	if (u == UINT64_MAX)
		nm_buf_printf(b, "nan");
	else
		nm_buf_printf(b, "%" PRIu64, u);
}

static void put_nans(nm_buf *b, const gpu_cmp *c)
{
	if (!c->nnan) {
		nm_buf_printf(b, "-");
		return;
	}
	for (int i = 0; i < c->nnan; i++)
		nm_buf_printf(b, "%s0x%" PRIx32 ":%" PRIu64, i ? ";" : "", c->nan_enc[i],
		              c->nan_cnt[i]);
	if (c->nan_other)
		nm_buf_printf(b, ";other:%" PRIu64, c->nan_other);
}

/* A label as one CSV field: commas would shift the columns, so they become ';'. */
static const char *field(const char *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s);
	for (char *p = buf; *p; p++)
		if (*p == ',' || *p == '\n')
			*p = ';';
	return buf;
}

static void put_labels(nm_buf *b, const gpu_cmp *c)
{
	char f[4][64];
	nm_buf_printf(b, "%s,%s,%s,%s,", field(c->step, f[0], sizeof f[0]),
	              field(c->kernel, f[1], sizeof f[1]), field(c->format, f[2], sizeof f[2]),
	              field(c->mode, f[3], sizeof f[3]));
}

static void put_csv_row(nm_buf *b, const gpu_cmp *c)
{
	put_labels(b, c);
	nm_buf_printf(b, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu32 ",%" PRIu64 ",",
	              c->compared, c->identical, c->nan_equal, c->within, c->tol.ulp,
	              gpu_cmp_bad(c));
	put_ulp(b, c->max_ulp);
	nm_buf_printf(b, ",");
	put_nans(b, c);
	nm_buf_printf(b, ",%s\n", verdict(c));
}

static int write_sb(const gpu_report *r, const char *suffix, nm_buf *b, char *err, size_t len)
{
	char path[700];
	if (b->oom) {
		snprintf(err, len, "out of memory writing the %s report", suffix);
		return -1;
	}
	snprintf(path, sizeof path, "%s/%s%s", r->dir, r->base, suffix);
	return nm_file_write(path, nm_buf_str(b), b->len, err, len);
}

int gpu_report_write(const gpu_report *r, char *err, size_t len)
{
	nm_buf csv = {0}, miss = {0}, md = {0};
	nm_buf_printf(&csv, "%s\n", gpu_report_csv_header());
	nm_buf_printf(&miss, "step,kernel,format,mode,index,input,got,want,ulp\n");
	nm_buf_printf(
	    &md, "| step | kernel | format | mode | compared | identical | NaN-equal | within tol "
	         "(ulp) | bad | max ulp | GPU NaNs | verdict |\n");
	nm_buf_printf(
	    &md,
	    "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
	for (size_t i = 0; i < r->nrows; i++) {
		const gpu_cmp *c = &r->rows[i];
		put_csv_row(&csv, c);
		nm_buf_printf(&md,
		              "| %s | %s | %s | %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64
		              " | %" PRIu64 " (%" PRIu32 ") | %" PRIu64 " | ",
		              c->step, c->kernel, c->format, c->mode, c->compared, c->identical,
		              c->nan_equal, c->within, c->tol.ulp, gpu_cmp_bad(c));
		put_ulp(&md, c->max_ulp);
		nm_buf_printf(&md, " | ");
		put_nans(&md, c);
		nm_buf_printf(&md, " | %s |\n", verdict(c));
		for (int j = 0; j < c->nshow; j++) {
			const gpu_miss *m = &c->show[j];
			put_labels(&miss, c);
			nm_buf_printf(&miss,
			              "%" PRIu64 ",0x%" PRIx64 ",0x%" PRIx32 ",0x%" PRIx32 ",",
			              m->index, m->input, m->got, m->want);
			put_ulp(&miss, m->ulp);
			nm_buf_printf(&miss, "\n");
		}
	}
	bool any = false;
	for (size_t i = 0; i < r->nrows; i++) {
		const gpu_cmp *c = &r->rows[i];
		if (!c->nshow)
			continue;
		if (!any)
			nm_buf_printf(&md,
			              "\nFirst mismatches (index, input, GPU, emulator, ulp):\n");
		any = true;
		nm_buf_printf(&md, "\n- %s %s %s %s:", c->step, c->kernel, c->format, c->mode);
		for (int j = 0; j < c->nshow; j++) {
			nm_buf_printf(
			    &md, " `%" PRIu64 " 0x%" PRIx64 " 0x%" PRIx32 " 0x%" PRIx32 " ",
			    c->show[j].index, c->show[j].input, c->show[j].got, c->show[j].want);
			put_ulp(&md, c->show[j].ulp);
			nm_buf_printf(&md, "`");
		}
		nm_buf_printf(&md, "\n");
	}
	if (r->nnotes)
		nm_buf_printf(&md, "\n");
	for (size_t i = 0; i < r->nnotes; i++)
		nm_buf_printf(&md, "- %s\n", r->notes[i]);
	int rc = write_sb(r, ".csv", &csv, err, len);
	if (!rc)
		rc = write_sb(r, "-miss.csv", &miss, err, len);
	if (!rc)
		rc = write_sb(r, ".md", &md, err, len);
	nm_buf_free(&csv);
	nm_buf_free(&miss);
	nm_buf_free(&md);
	return rc;
}
