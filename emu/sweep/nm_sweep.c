/*
 * nm_sweep.c — `nanmap sweep` (nm_sweep.h; docs/sweep.md).
 *
 * A point's index fixes where its row goes: ((variant · npolicies + policy)
 * · n0 + i0) · n1 + i1. Points run in any order (OpenMP's dynamic schedule,
 * MPI ranks taking indexes round-robin) but their results land in an array
 * by index, so the files never depend on the schedule or the rank count.
 *
 * Every finished point is one line of the case's journal, its results in
 * hexadecimal floating point (exact) with a checksum at the end: an
 * interrupted run leaves at worst one torn last line, which the checksum
 * rejects. The same line is what an MPI rank sends to rank 0, which alone
 * writes files, so a point's numbers reach the CSV through one decoder
 * whether they were computed here, on another rank, or in an earlier run.
 * A case is finished in this order: CSV (temp file, rename), thresholds
 * cache, state file, journal removed; a crash between two steps leaves a
 * state that a rerun completes without recomputing a point. The state file
 * records every output's size and FNV-1a, so a file damaged afterwards (cut
 * short, a full disk) makes its case out of date instead of "up to date".
 * Every write is checked where it happens; the first failed journal append
 * stops the sweep. One sweep at a time writes a --out folder (a flock).
 */
#include "emu/sweep/nm_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mpfr.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef NM_MPI
#include <mpi.h>
#endif

#include "emu/io/nm_buf.h"
#include "emu/sweep/nm_case.h"
#include "emu/io/nm_file.h"
#include "emu/io/nm_parse.h"
#include "emu/sweep/nm_point.h"
#include "emu/sweep/nm_thresh.h"
#if defined(__has_include)
#if __has_include("nm_plot.h")
#include "emu/sweep/nm_plot.h"
#define SW_HAVE_PLOT 1
#endif
#if __has_include("nm_claims.h")
#include "emu/sweep/nm_claims.h"
#define SW_HAVE_CLAIMS 1
#endif
#endif

#ifndef NM_VERSION
#define NM_VERSION "0.1.0"
#endif

#define SW_ERR_LEN 2048
#define SW_MAX_CASES 256
#define SW_MAX_SER 8
#define SW_NBE 2
#define SW_MAX_MEMORY 0x1p33 /* 8 GiB: --max-memory's default */

/* ---- options ---- */

struct sw_opts {
	bool quick, fresh, quiet;
	int jobs;
	double max_memory; /* bytes a case's results may take (--max-memory) */
	const char *out, *plots, *docs, *only;
	char **paths;
	size_t npaths;
};

static const char sw_usage[] =
    "usage: nanmap sweep [--quick] [--fresh] [--quiet] [-j N] [--out DIR]\n"
    "                    [--plots DIR] [--docs DIR] [--only NAME] [--max-memory SIZE]\n"
    "                    PATH...\n"
    "  PATH         a .case file, or a directory of them (and of its subdirectories,\n"
    "               one level down: cases/ includes cases/claims/)\n"
    "  --quick      the coarse grids; outputs default to build/sweep-quick/\n"
    "  --fresh      ignore finished work (journals, up-to-date results); recompute all\n"
    "  --quiet      no progress or summary lines on stderr\n"
    "  -j N         N threads (default: OpenMP's, usually one per core)\n"
    "  --out DIR    results/<case>.csv, thresholds.csv (default results)\n"
    "  --plots DIR  <case>.png and .svg (default plots)\n"
    "  --docs DIR   thresholds.md, claims.md (default docs)\n"
    "  --only NAME  run only the case NAME (every file is still checked)\n"
    "  --max-memory SIZE  the most a case's results may take in memory, in bytes\n"
    "               or with K, M, G, T (powers of 1024; default 8G)\n"
    "Every case file is checked before anything runs; an interrupted sweep\n"
    "resumes where it stopped (docs/sweep.md).\n"
    "Example: nanmap sweep tests/data/sweep_tiny.case\n";

enum { SW_O_QUICK, SW_O_FRESH, SW_O_QUIET, SW_O_JOBS, SW_O_OUT, SW_O_PLOTS, SW_O_DOCS,
       SW_O_ONLY, SW_O_MAXMEM };

static const nm_opt sw_optdefs[] = {
    {NULL, "--quick", SW_O_QUICK, 0, 0},
    {NULL, "--fresh", SW_O_FRESH, 0, 0},
    {NULL, "--quiet", SW_O_QUIET, 0, 0},
    {"-j", NULL, SW_O_JOBS, NM_OPTF_VALUE, 0},
    {NULL, "--out", SW_O_OUT, NM_OPTF_VALUE, 0},
    {NULL, "--plots", SW_O_PLOTS, NM_OPTF_VALUE, 0},
    {NULL, "--docs", SW_O_DOCS, NM_OPTF_VALUE, 0},
    {NULL, "--only", SW_O_ONLY, NM_OPTF_VALUE, 0},
    {NULL, "--max-memory", SW_O_MAXMEM, NM_OPTF_VALUE, 0},
};

static int sw_parse_size(const char *a, double *bytes);

static int sw_take(void *ctx, const nm_opt *d, const char *v)
{
	struct sw_opts *o = ctx;
	/* the option decides, not the pointer: a NULL dst told the analyzer
	 * that o itself might be NULL */
	const char **dst = d->id == SW_O_OUT     ? &o->out
	                   : d->id == SW_O_PLOTS ? &o->plots
	                   : d->id == SW_O_DOCS  ? &o->docs
	                   : d->id == SW_O_ONLY  ? &o->only
	                                         : NULL;
	uint64_t j;

	if (d->id == SW_O_OUT || d->id == SW_O_PLOTS || d->id == SW_O_DOCS || d->id == SW_O_ONLY) {
		if (!v[0])
			return nm_fail("sweep: %s needs a value", d->lng);
		*dst = v;
	} else if (d->id == SW_O_MAXMEM) {
		if (sw_parse_size(v, &o->max_memory))
			return nm_fail("sweep: bad --max-memory '%s' (bytes, or a number with K, "
			               "M, G or T)", v);
	} else if (d->id == SW_O_JOBS) {
		if (nm_parse_count("-j", v, 1, 1024, &j))
			return NM_EXIT_ERR;
		o->jobs = (int)j;
	} else {
		*(d->id == SW_O_QUICK ? &o->quick : d->id == SW_O_FRESH ? &o->fresh : &o->quiet) =
		    true;
	}
	return 0;
}

static int sw_take_path(void *ctx, const char *a)
{
	struct sw_opts *o = ctx;

	o->paths[o->npaths++] = (char *)a;
	return 0;
}

/* "123", "64K", "16G": bytes, or a whole number of KiB, MiB, GiB, TiB. */
static int sw_parse_size(const char *a, double *bytes)
{
	static const char units[] = "KMGT";
	char num[32];
	size_t n = strlen(a);
	const char *u = n ? strchr(units, a[n - 1]) : NULL;
	uint64_t v;

	if (!n || n >= sizeof(num) || (u && n == 1))
		return -1;
	memcpy(num, a, n + 1);
	if (u)
		num[n - 1] = '\0';
	if (nm_parse_u64(num, &v) != NM_OK || v == 0)
		return -1;
	*bytes = ldexp((double)v, u ? 10 * (int)(u - units + 1) : 0);
	return 0;
}

static int sw_parse_opts(struct sw_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->paths = calloc((size_t)argc + 1, sizeof(*o->paths));
	if (!o->paths)
		return nm_fail("out of memory");
	if (nm_opt_parse(&(nm_optparser){.cmd = "sweep",
	                                 .defs = sw_optdefs,
	                                 .ndefs = sizeof(sw_optdefs) / sizeof(sw_optdefs[0]),
	                                 .take = sw_take,
	                                 .arg = sw_take_path,
	                                 .ctx = o},
	                 argc - 1, argv + 1))
		return NM_EXIT_ERR;
	if (o->npaths == 0)
		return nm_fail("sweep needs a PATH (a .case file or a directory, e.g. cases)");
	if (o->max_memory == 0)
		o->max_memory = SW_MAX_MEMORY;
	if (!o->out)
		o->out = o->quick ? "build/sweep-quick/results" : "results";
	if (!o->plots)
		o->plots = o->quick ? "build/sweep-quick/plots" : "plots";
	if (!o->docs)
		o->docs = o->quick ? "build/sweep-quick/docs" : "docs";
	return 0;
}

/* ---- files ---- */

static int sw_mkdirs(const char *path, char *err, size_t errlen)
{
	char p[1024];
	size_t n = strlen(path);

	if (n >= sizeof(p)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	memcpy(p, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create directory %s: %s", p, strerror(errno));
			return -1;
		}
		p[i] = c;
	}
	return 0;
}

static bool sw_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Take the output folder's lock ("DIR/.state/lock", flock LOCK_EX|LOCK_NB) for
 * the whole run and write our pid and start time into it; *fd stays open
 * until exit, which (a kill included) releases it. Two sweeps into one
 * folder would rewrite each other's journals. A read-only folder is locked
 * through its existing lock file, read-only; one without a lock file needs
 * none (nothing can write there). 0, or -1 with err. */
static int sw_lock(const char *dir, int *fd, char *err, size_t errlen)
{
	char path[1100], info[160] = "";
	bool ro = false;
	int e;

	*fd = -1;
	snprintf(path, sizeof(path), "%s/.state", dir);
	if (sw_mkdirs(path, err, errlen))
		return -1;
	snprintf(path, sizeof(path), "%s/.state/lock", dir);
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (*fd < 0 && (errno == EROFS || errno == EACCES)) {
		ro = true;
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*fd < 0 && errno == ENOENT)
			return 0;
	}
	if (*fd < 0) {
		snprintf(err, errlen, "cannot lock %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
		e = errno;
		if (e == EWOULDBLOCK) {
			/* the holder writes its line just after it locks: wait for it */
			for (int i = 0; i < 50 && !info[0]; i++) {
				ssize_t n = pread(*fd, info, sizeof(info) - 1, 0);

				info[n > 0 ? n : 0] = '\0';
				info[strcspn(info, "\n")] = '\0';
				if (!info[0])
					nanosleep(&(struct timespec){0, 10000000}, NULL);
			}
			for (char *c = info; *c; c++)
				if ((unsigned char)*c < ' ' || (unsigned char)*c > '~')
					*c = '?';
			snprintf(err, errlen, "%s is in use by another sweep (%s; lock %s)", dir,
			         info[0] ? info : "holder unknown", path);
		} else {
			snprintf(err, errlen, "cannot lock %s: %s", path, strerror(e));
		}
		close(*fd);
		*fd = -1;
		return -1;
	}
	if (!ro) {
		time_t now = time(NULL);
		struct tm tm;
		char when[40] = "?";
		int n;

		if (gmtime_r(&now, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		n = snprintf(info, sizeof(info), "pid %ld, started %s\n", (long)getpid(), when);
		if (ftruncate(*fd, 0) != 0 || pwrite(*fd, info, (size_t)n, 0) != n) {
			snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
			close(*fd);
			*fd = -1;
			return -1;
		}
	}
	return 0;
}

/* ---- finding and loading the case files ---- */

static int sw_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool sw_is_case(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".case");
}

struct sw_list {
	char **v;
	size_t n;
};

static int sw_list_add(struct sw_list *l, const char *s)
{
	char **v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return -1;
	l->v = v;
	if (!(v[l->n] = strdup(s)))
		return -1;
	l->n++;
	return 0;
}

static void sw_list_free(struct sw_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The .case files in dir, sorted, then those of its subdirectories (sorted)
 * when depth > 0: cases/ before cases/claims/. */
static int sw_scan(const char *dir, int depth, struct sw_list *out)
{
	struct sw_list names = {0};
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return nm_fail("%s: cannot read directory: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && sw_list_add(&names, e->d_name)) {
			closedir(d);
			sw_list_free(&names);
			return nm_fail("out of memory");
		}
	closedir(d);
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), sw_cmp_str);
	for (int pass = 0; pass < 2 && !rc; pass++)
		for (size_t i = 0; i < names.n && !rc; i++) {
			char p[1024];
			struct stat st;

			snprintf(p, sizeof(p), "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
			         names.v[i]);
			if (stat(p, &st) != 0)
				continue;
			if (pass == 1 && S_ISDIR(st.st_mode) && depth > 0)
				rc = sw_scan(p, depth - 1, out);
			else if (pass == 0 && !S_ISDIR(st.st_mode) && sw_is_case(names.v[i]) &&
			         sw_list_add(out, p))
				rc = nm_fail("out of memory");
		}
	sw_list_free(&names);
	return rc;
}

/* Is the case a claims case (a file in a directory named claims)? */
static bool sw_is_claim(const nm_case *c)
{
	const char *p = c->path, *s = strrchr(p, '/');

	if (!s)
		return false;
	return (s - p >= 6 && !strncmp(s - 6, "claims", 6) && (s - p == 6 || s[-7] == '/'));
}

/* ---- one point's results, as a journal line ---- */

struct sw_series {
	char name[24];
	double *v;
	size_t n;
};

struct sw_pt {
	bool done;
	nm_point_result r[SW_NBE];
	struct sw_series ser[SW_NBE][SW_MAX_SER];
	size_t nser[SW_NBE];
};

static void sw_pt_clear(struct sw_pt *p)
{
	for (int b = 0; b < SW_NBE; b++)
		for (size_t i = 0; i < p->nser[b]; i++)
			free(p->ser[b][i].v);
	memset(p, 0, sizeof(*p));
}

/* Strings as "=" then the bytes, %XX for anything but printable non-% ASCII. */
static void sw_put_str(nm_buf *b, const char *s)
{
	nm_buf_printf(b, " =");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch > ' ' && ch < 127 && ch != '%')
			nm_buf_printf(b, "%c", ch);
		else
			nm_buf_printf(b, "%%%02X", ch);
	}
}

static void sw_encode(nm_buf *b, size_t idx, const struct sw_pt *p, int nbe)
{
	size_t start = b->len;

	nm_buf_printf(b, "p %zu %d", idx, nbe);
	for (int k = 0; k < nbe; k++) {
		const nm_point_result *r = &p->r[k];

		nm_buf_printf(b, " %d %d", (int)r->status, r->has_first);
		sw_put_str(b, r->first_op);
		sw_put_str(b, r->first_step);
		nm_buf_printf(b, " %" PRIu64 " %zu", r->first_index, r->nout);
		for (size_t i = 0; i < r->nout && i < NM_POINT_MAX_OUT; i++) {
			sw_put_str(b, r->out[i].name);
			nm_buf_printf(b, " %a %a %zu %a %zu %a %a", r->out[i].max_ulp,
			              r->out[i].rel_err, r->out[i].lost, r->out[i].maxabs,
			              r->out[i].n, r->out[i].arith_max_ulp,
			              r->out[i].arith_rel_err);
		}
		nm_buf_printf(b, " %d %a %a %a %a", r->has_fractions, r->fractions[0],
		              r->fractions[1], r->fractions[2], r->fractions[3]);
		nm_buf_printf(b, " %" PRIu64 " %" PRIu64, r->in_n, r->in_flushed);
		nm_buf_printf(b, " %zu", p->nser[k]);
		for (size_t i = 0; i < p->nser[k]; i++) {
			sw_put_str(b, p->ser[k][i].name);
			nm_buf_printf(b, " %zu", p->ser[k][i].n);
			for (size_t j = 0; j < p->ser[k][i].n; j++)
				nm_buf_printf(b, " %a", p->ser[k][i].v[j]);
		}
	}
	if (!b->oom)
		nm_buf_printf(b, " #%016" PRIx64 "\n", nm_fnv1a(b->s + start, b->len - start));
}

/* A token reader over one line. */
struct sw_tok {
	char *p;
	bool bad;
};

static char *sw_next(struct sw_tok *t)
{
	char *s;

	if (t->bad)
		return NULL;
	while (*t->p == ' ')
		t->p++;
	if (!*t->p) {
		t->bad = true;
		return NULL;
	}
	s = t->p;
	while (*t->p && *t->p != ' ')
		t->p++;
	if (*t->p)
		*t->p++ = '\0';
	return s;
}

static uint64_t sw_next_u(struct sw_tok *t, uint64_t max)
{
	char *s = sw_next(t), *end;
	unsigned long long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end || errno || v > max || s[0] == '-') {
		t->bad = true;
		return 0;
	}
	return v;
}

static double sw_next_d(struct sw_tok *t)
{
	char *s = sw_next(t), *end;
	double v;

	if (!s)
		return 0;
	v = strtod(s, &end);
	if (*end)
		t->bad = true;
	return v;
}

static void sw_next_str(struct sw_tok *t, char *dst, size_t len)
{
	char *s = sw_next(t);
	size_t n = 0;

	if (!s)
		return;
	if (*s++ != '=') {
		t->bad = true;
		return;
	}
	while (*s) {
		unsigned v;

		if (*s == '%') {
			if (sscanf(s + 1, "%2X", &v) != 1) {
				t->bad = true;
				return;
			}
			s += 3;
		} else {
			v = (unsigned char)*s++;
		}
		if (n + 1 >= len) {
			t->bad = true;
			return;
		}
		dst[n++] = (char)v;
	}
	dst[n] = '\0';
}

/* Decode one line (without its '\n', modified in place) into *idx and *p.
 * 0, or -1 when the line is not one sw_encode wrote for this case. */
static int sw_decode(char *line, size_t npoints, int nbe, size_t *idx, struct sw_pt *p)
{
	char *hash = strrchr(line, '#');
	struct sw_tok t = {line, false};
	char *end, *tag;
	uint64_t h;

	memset(p, 0, sizeof(*p));
	if (!hash || hash == line || hash[-1] != ' ')
		return -1;
	h = strtoull(hash + 1, &end, 16);
	if (*end || strlen(hash + 1) != 16 || h != nm_fnv1a(line, (size_t)(hash - 1 - line)))
		return -1;
	hash[-1] = '\0';
	tag = sw_next(&t);
	if (!tag || strcmp(tag, "p") != 0)
		return -1;
	*idx = (size_t)sw_next_u(&t, npoints - 1);
	if ((int)sw_next_u(&t, SW_NBE) != nbe || t.bad)
		return -1;
	for (int k = 0; k < nbe && !t.bad; k++) {
		nm_point_result *r = &p->r[k];

		r->status = (emu_run_status)sw_next_u(&t, EMU_ST_NAN);
		r->has_first = sw_next_u(&t, 1);
		sw_next_str(&t, r->first_op, sizeof(r->first_op));
		sw_next_str(&t, r->first_step, sizeof(r->first_step));
		r->first_index = sw_next_u(&t, UINT64_MAX);
		r->nout = (size_t)sw_next_u(&t, NM_POINT_MAX_OUT);
		for (size_t i = 0; i < r->nout && !t.bad; i++) {
			sw_next_str(&t, r->out[i].name, sizeof(r->out[i].name));
			r->out[i].max_ulp = sw_next_d(&t);
			r->out[i].rel_err = sw_next_d(&t);
			r->out[i].lost = (size_t)sw_next_u(&t, SIZE_MAX);
			r->out[i].maxabs = sw_next_d(&t);
			r->out[i].n = (size_t)sw_next_u(&t, SIZE_MAX);
			r->out[i].arith_max_ulp = sw_next_d(&t);
			r->out[i].arith_rel_err = sw_next_d(&t);
		}
		r->has_fractions = sw_next_u(&t, 1);
		for (int i = 0; i < 4; i++)
			r->fractions[i] = sw_next_d(&t);
		r->in_n = sw_next_u(&t, UINT64_MAX);
		r->in_flushed = sw_next_u(&t, r->in_n);
		p->nser[k] = (size_t)sw_next_u(&t, SW_MAX_SER);
		for (size_t i = 0; i < p->nser[k] && !t.bad; i++) {
			struct sw_series *s = &p->ser[k][i];

			sw_next_str(&t, s->name, sizeof(s->name));
			s->n = (size_t)sw_next_u(&t, 1u << 28);
			if (t.bad)
				break;
			s->v = s->n ? malloc(s->n * sizeof(*s->v)) : NULL;
			if (s->n && !s->v) {
				t.bad = true;
				break;
			}
			for (size_t j = 0; j < s->n; j++)
				s->v[j] = sw_next_d(&t);
		}
	}
	if (t.bad || sw_next(&t)) { /* short, malformed, or something after the end */
		sw_pt_clear(p);
		return -1;
	}
	return 0;
}

/* ---- a case's run ---- */

struct sw_case_run {
	const nm_case *c;
	bool quick;
	int nbe;
	size_t n0, n1, npoints;
	const double *g0, *g1;
	const char *out; /* --out */
	struct sw_pt *pts;
	char journal[1100], csv[1100], series_csv[1100], state[1100], thresh[1100];
	char tag[160]; /* version, hash, grid: what a journal or state must match */
	/* the state's lines for the data files, as this run's first state
	 * write read them back: the second (after the plot) reuses them, the
	 * series CSV being up to 100 MB */
	nm_buf files;
};

static void sw_point_of(const struct sw_case_run *cr, size_t idx, nm_point *p)
{
	size_t i1 = idx % cr->n1, t = idx / cr->n1, i0 = t % cr->n0;

	t /= cr->n0;
	memset(p, 0, sizeof(*p));
	p->c = cr->c;
	p->policy = t % cr->c->npolicies;
	p->variant = t / cr->c->npolicies;
	if (cr->c->naxes > 0)
		p->axis[0] = cr->g0[i0];
	if (cr->c->naxes > 1)
		p->axis[1] = cr->g1[i1];
}

static int sw_eval(const struct sw_case_run *cr, size_t idx, struct sw_pt *pt, char *err,
                   size_t errlen)
{
	static const emu_be_kind kinds[SW_NBE] = {EMU_BE_FAST, EMU_BE_EXACT};
	nm_point p;

	sw_point_of(cr, idx, &p);
	memset(pt, 0, sizeof(*pt));
	for (int k = 0; k < cr->nbe && k < SW_NBE; k++) {
		/* the series from the run that gives the point's result */
		const char *names[SW_MAX_SER];
		double *v[SW_MAX_SER];
		size_t n[SW_MAX_SER], ns = 0;

		for (; ns < cr->c->nseries && ns < SW_MAX_SER; ns++) {
			struct sw_series *s = &pt->ser[k][ns];

			snprintf(s->name, sizeof(s->name), "%s", cr->c->series[ns]);
			names[ns] = s->name;
		}
		if (nm_point_eval_series(&p, kinds[k], cr->c->truth, &pt->r[k], names, ns, v, n, err,
		                         errlen))
			return -1;
		for (size_t i = 0; i < ns; i++) {
			pt->ser[k][i].v = v[i];
			pt->ser[k][i].n = n[i];
		}
		pt->nser[k] = ns;
	}
	pt->done = true;
	return 0;
}

static void sw_case_paths(struct sw_case_run *cr, const struct sw_opts *o)
{
	const char *nm = cr->c->name;

	cr->out = o->out;
	snprintf(cr->csv, sizeof(cr->csv), "%s/%s.csv", o->out, nm);
	snprintf(cr->series_csv, sizeof(cr->series_csv), "%s/%s-series.csv", o->out, nm);
	snprintf(cr->journal, sizeof(cr->journal), "%s/.partial/%s.journal", o->out, nm);
	snprintf(cr->state, sizeof(cr->state), "%s/.state/%s.hash", o->out, nm);
	snprintf(cr->thresh, sizeof(cr->thresh), "%s/.state/%s.thresh", o->out, nm);
	/* r3: the results' definitions (end-to-end and arithmetic errors); an
	 * older journal or state is not reused. The kernel's parameter line
	 * stands for its interface: a kernel that grew parameters or outputs
	 * (the training run's) makes its cases' results out of date. */
	const char *doc = cr->c->kernel->params_doc ? cr->c->kernel->params_doc : "";
	snprintf(cr->tag, sizeof(cr->tag),
	         "nanmap %s r3 case %016" PRIx64 " kernel %016" PRIx64 " grid %s points %zu x%d",
	         NM_VERSION, cr->c->hash, nm_fnv1a(doc, strlen(doc)), cr->quick ? "quick" : "full",
	         cr->npoints, cr->nbe);
}

/* A case's grid sizes, as sw_case_init takes them. */
static void sw_grid_sizes(const nm_case *c, bool quick, size_t *n0, size_t *n1)
{
	*n0 = *n1 = 1;
	if (c->naxes > 0)
		*n0 = quick ? c->axes[0].nquick : c->axes[0].nvalues;
	if (c->naxes > 1)
		*n1 = quick ? c->axes[1].nquick : c->axes[1].nvalues;
}

/* What one point's results take in memory, from above: its slot in the
 * results array, its CSV rows and journal line (every output's numbers at
 * up to 26 characters, 3000 bytes a backend), and its series at the size of
 * the largest input, each value a double, a journal number and a row of the
 * series CSV (240 bytes). */
static double sw_point_bytes(const nm_case *c)
{
	double r, k, len = nm_case_max_input(c, &r, &k);
	double nbe = c->exact ? 2 : 1;

	return (double)sizeof(struct sw_pt) + nbe * (3000 + (double)c->nseries * len * 240);
}

static const char *sw_fmt_bytes(double b, char *buf, size_t len)
{
	static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	int u = 0;

	while (b >= 1024 && u < 6)
		b /= 1024, u++;
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
	return buf;
}

/* A value's bytes on the MPFR backends (the truth at EMU_TRUTH_PREC bits;
 * the exact backend's values are smaller, counted the same) */
#define SW_MP_VALUE_BYTES ((double)sizeof(mpfr_t) + EMU_TRUTH_PREC / 8.0)

/*
 * Refuse a case one of whose points cannot run in the memory there is,
 * before any point runs (the pre-run check included): a point's working
 * memory at the case's largest input is the input, the fast run's values
 * (8 bytes each), the exact run's and the truth's (twice: end to end and
 * stored) at SW_MP_VALUE_BYTES each; -j threads run that many points at
 * once. The figures are those of nanmap run's own check (docs/sweep.md).
 * sw_work_fits: 0, or 1 with why in msg; sw_work_check prints it.
 */
static int sw_work_fits(const struct sw_opts *o, const nm_case *c, char *msg, size_t len)
{
	double r, k, n = nm_case_max_input(c, &r, &k), avail = nm_memory_available();
	emu_kparam params[NM_CASE_MAX_PARAMS];
	int threads = o->jobs;
	char a[40], b[40], d[40], e[40];

#ifdef _OPENMP
	if (!threads)
		threads = omp_get_max_threads();
#endif
	if (threads < 1)
		threads = 1;
	for (size_t i = 0; i < c->nparams && i < NM_CASE_MAX_PARAMS; i++)
		params[i] = (emu_kparam){c->param_names[i], c->params[i].value};
	emu_kin kin = {NULL, (size_t)r, (size_t)k, params, c->nparams, c->gen.seed, NULL, 0};
	double vals = emu_kernel_values(c->kernel, (size_t)r, (size_t)k, &kin);
	double per = n * sizeof(double) + vals * sizeof(double) +
	             (c->exact ? vals * SW_MP_VALUE_BYTES : 0) +
	             (c->truth ? 2 * vals * SW_MP_VALUE_BYTES : 0);
	double need = per * threads;
	if (avail < 0 || need <= avail)
		return 0;
	snprintf(msg, len,
	         "%s: case %s: a point of %.0f x %.0f inputs needs about %s of working memory "
	         "(input %s, %.0f kernel values on fast%s%s), x %d threads = %s, more than the "
	         "%s of memory available%s",
	         c->path, c->name, r, k, sw_fmt_bytes(per, a, sizeof(a)),
	         sw_fmt_bytes(n * sizeof(double), b, sizeof(b)), vals, c->exact ? ", exact" : "",
	         c->truth ? " and truth (twice)" : "", threads, sw_fmt_bytes(need, d, sizeof(d)),
	         sw_fmt_bytes(avail, e, sizeof(e)),
	         threads > 1 ? " (-j 1 runs one point at a time)" : "");
	return 1;
}

static int sw_work_check(const struct sw_opts *o, const nm_case *c)
{
	char msg[NM_FAIL_LEN];

	return sw_work_fits(o, c, msg, sizeof(msg)) ? nm_fail("%s", msg) : 0;
}

/* Refuse a case whose results would not fit in --max-memory, before any
 * point runs (the alternative is a bare "out of memory" hours in). */
static int sw_size_check(const struct sw_opts *o, const nm_case *c)
{
	size_t n0, n1;
	double points, per = sw_point_bytes(c), need;
	char a[40], b[40];

	sw_grid_sizes(c, o->quick, &n0, &n1);
	points = (double)c->nvariants * (double)c->npolicies * (double)n0 * (double)n1;
	need = points * per;
	if (need <= o->max_memory && points <= (double)(SIZE_MAX / sizeof(struct sw_pt)))
		return 0;
	return nm_fail("%s: case %s has %.0f points (%zu variants x %zu policies x %zu x %zu), "
	               "about %s of results (%.0f bytes a point), more than the limit of %s "
	               "(--max-memory SIZE raises it)",
	               c->path, c->name, points, c->nvariants, c->npolicies, n0, n1,
	               sw_fmt_bytes(need, a, sizeof(a)), per, sw_fmt_bytes(o->max_memory, b, sizeof(b)));
}

static int sw_case_init(struct sw_case_run *cr, const nm_case *c, const struct sw_opts *o)
{
	memset(cr, 0, sizeof(*cr));
	cr->c = c;
	cr->quick = o->quick;
	cr->nbe = c->exact ? 2 : 1;
	sw_grid_sizes(c, o->quick, &cr->n0, &cr->n1);
	if (c->naxes > 0)
		cr->g0 = o->quick ? c->axes[0].quick : c->axes[0].values;
	if (c->naxes > 1)
		cr->g1 = o->quick ? c->axes[1].quick : c->axes[1].values;
	cr->npoints = c->nvariants * c->npolicies * cr->n0 * cr->n1;
	sw_case_paths(cr, o);
	cr->pts = calloc(cr->npoints, sizeof(*cr->pts));
	return cr->pts ? 0 : -1;
}

static void sw_case_free(struct sw_case_run *cr)
{
	if (cr->pts)
		for (size_t i = 0; i < cr->npoints; i++)
			sw_pt_clear(&cr->pts[i]);
	free(cr->pts);
	cr->pts = NULL;
	nm_buf_free(&cr->files);
}

/* Read the journal: the points it holds are done. Then rewrite it whole (a
 * torn last line must not run into the next one) and open it for appending. */
static FILE *sw_journal_open(struct sw_case_run *cr, bool fresh, size_t *ndone, char *err,
                             size_t errlen)
{
	nm_buf keep = {0};
	char *text = fresh ? NULL : nm_file_read(cr->journal, NULL);
	FILE *f;

	*ndone = 0;
	nm_buf_printf(&keep, "%s\n", cr->tag);
	if (text) {
		char *line = text, *nl = strchr(line, '\n');

		if (nl && (size_t)(nl - line) == strlen(cr->tag) &&
		    !strncmp(line, cr->tag, strlen(cr->tag))) {
			for (line = nl + 1; (nl = strchr(line, '\n')); line = nl + 1) {
				struct sw_pt p;
				size_t idx;

				*nl = '\0';
				if (sw_decode(line, cr->npoints, cr->nbe, &idx, &p))
					break; /* torn or foreign: keep what came before */
				if (cr->pts[idx].done) {
					sw_pt_clear(&p);
					continue;
				}
				cr->pts[idx] = p;
				cr->pts[idx].done = true;
				(*ndone)++;
				sw_encode(&keep, idx, &cr->pts[idx], cr->nbe);
			}
		}
		free(text);
	}
	if (keep.oom || nm_file_write(cr->journal, keep.s, keep.len, err, errlen)) {
		if (keep.oom)
			snprintf(err, errlen, "out of memory");
		nm_buf_free(&keep);
		return NULL;
	}
	nm_buf_free(&keep);
	f = fopen(cr->journal, "ab");
	if (!f)
		snprintf(err, errlen, "cannot append to %s: %s", cr->journal, strerror(errno));
	return f;
}

/* ---- progress ---- */

static double sw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct sw_progress {
	bool show;
	const char *name;
	size_t done, total;
	double t0, last;
};

static void sw_progress(struct sw_progress *pg, bool final)
{
	double now = sw_now(), dt = now - pg->t0, rate;
	long eta;

	if (!pg->show || (!final && now - pg->last < 0.2))
		return;
	pg->last = now;
	rate = dt > 0 ? (double)pg->done / dt : 0;
	eta = rate > 0 ? (long)((double)(pg->total - pg->done) / rate + 0.5) : 0;
	fprintf(stderr, "\rsweep: %s %zu/%zu points, %.0f/s, ETA %ld:%02ld\033[K", pg->name,
	        pg->done, pg->total, rate, eta / 60, eta % 60);
	if (final)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* ---- the CSV files ---- */

static void sw_csv_num(nm_buf *b, double v)
{
	char buf[NM_NUM_LEN];

	nm_buf_printf(b, ",%s", nm_fmt_double(v, buf, sizeof(buf)));
}

/* v in decimal into buf (at least 21 bytes), its length (no NUL) */
static size_t sw_utoa(size_t v, char *buf)
{
	char t[24];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = t[n - 1 - i];
	return n;
}

/* case,kernel,variant,policy,<axes> of point idx (no line end). */
static void sw_csv_lead(nm_buf *b, const struct sw_case_run *cr, size_t idx)
{
	const nm_case *c = cr->c;
	nm_point p;

	sw_point_of(cr, idx, &p);
	nm_buf_csv(b, c->name);
	nm_buf_printf(b, ",");
	nm_buf_csv(b, c->kernel->name);
	nm_buf_printf(b, ",");
	nm_buf_csv(b, c->variants[p.variant]);
	nm_buf_printf(b, ",");
	nm_buf_csv(b, c->policy_specs[p.policy]);
	for (size_t a = 0; a < c->naxes; a++)
		sw_csv_num(b, p.axis[a]);
}

static const char *const sw_be_names[SW_NBE] = {"fast", "exact"};

static int sw_write_csv(const struct sw_case_run *cr, char *err, size_t errlen)
{
	const nm_case *c = cr->c;
	const nm_point_result *r0 = &cr->pts[0].r[0];
	nm_buf b = {0};
	int rc;

	nm_buf_printf(&b, "case,kernel,variant,policy");
	for (size_t a = 0; a < c->naxes; a++) {
		nm_buf_printf(&b, ",");
		nm_buf_csv(&b, c->axes[a].name);
	}
	nm_buf_printf(&b, ",backend,status,verdict,flushed,first_op,first_step,first_index");
	for (size_t i = 0; i < r0->nout; i++)
		nm_buf_printf(
		    &b,
		    ",%s.max_ulp,%s.rel_err,%s.lost,%s.maxabs,%s.arith_max_ulp,%s.arith_rel_err",
		    r0->out[i].name, r0->out[i].name, r0->out[i].name, r0->out[i].name,
		    r0->out[i].name, r0->out[i].name);
	if (r0->has_fractions)
		nm_buf_printf(&b, ",frac_zero,frac_subnormal,frac_lost,frac_overflow");
	nm_buf_printf(&b, "\n");
	for (size_t idx = 0; idx < cr->npoints; idx++)
		for (int k = 0; k < cr->nbe && k < SW_NBE; k++) {
			const nm_point_result *r = &cr->pts[idx].r[k];

			sw_csv_lead(&b, cr, idx);
			nm_buf_printf(&b, ",%s,%s,%s", sw_be_names[k], emu_run_status_name(r->status),
			              nm_verdict_name(nm_point_verdict(c, r)));
			sw_csv_num(&b, nm_point_flushed(r));
			nm_buf_printf(&b, ",");
			if (r->has_first) {
				nm_buf_csv(&b, r->first_op);
				nm_buf_printf(&b, ",");
				nm_buf_csv(&b, r->first_step);
				nm_buf_printf(&b, ",%" PRIu64, r->first_index);
			} else {
				nm_buf_printf(&b, ",,");
			}
			for (size_t i = 0; i < r0->nout; i++) {
				size_t j = 0;

				/* the same output by name (a variant may order them otherwise) */
				while (j < r->nout && strcmp(r->out[j].name, r0->out[i].name) != 0)
					j++;
				if (j == r->nout) {
					nm_buf_printf(&b, ",,,,,,");
					continue;
				}
				sw_csv_num(&b, r->out[j].max_ulp);
				sw_csv_num(&b, r->out[j].rel_err);
				nm_buf_printf(&b, ",%zu", r->out[j].lost);
				sw_csv_num(&b, r->out[j].maxabs);
				sw_csv_num(&b, r->out[j].arith_max_ulp);
				sw_csv_num(&b, r->out[j].arith_rel_err);
			}
			if (r0->has_fractions) {
				for (int i = 0; i < 4; i++) {
					if (r->has_fractions)
						sw_csv_num(&b, r->fractions[i]);
					else
						nm_buf_printf(&b, ",");
				}
			}
			nm_buf_printf(&b, "\n");
		}
	if (b.oom) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	} else {
		rc = nm_file_write(cr->csv, b.s, b.len, err, errlen);
	}
	nm_buf_free(&b);
	if (rc || !c->nseries)
		return rc;
	nm_buf_printf(&b, "case,kernel,variant,policy");
	for (size_t a = 0; a < c->naxes; a++) {
		nm_buf_printf(&b, ",");
		nm_buf_csv(&b, c->axes[a].name);
	}
	nm_buf_printf(&b, ",backend,output,index,value\n");
	/* a series is a million rows: each row's lead (case .. output) is made
	 * once a series, and a value the same as the row before's (a loss
	 * scale's long runs) is copied, not formatted again */
	nm_buf lead = {0};
	for (size_t idx = 0; idx < cr->npoints; idx++)
		for (int k = 0; k < cr->nbe; k++)
			for (size_t i = 0; i < cr->pts[idx].nser[k]; i++) {
				const struct sw_series *s = &cr->pts[idx].ser[k][i];
				char num[NM_NUM_LEN], ix[24];
				size_t nnum = 0;
				uint64_t last = 0;

				nm_buf_reset(&lead);
				sw_csv_lead(&lead, cr, idx);
				nm_buf_printf(&lead, ",%s,", sw_be_names[k]);
				nm_buf_csv(&lead, s->name);
				nm_buf_putc(&lead, ',');
				b.oom |= lead.oom;
				for (size_t j = 0; j < s->n && !b.oom; j++) {
					uint64_t bits;
					memcpy(&bits, &s->v[j], sizeof bits);
					if (j == 0 || bits != last) {
						nm_fmt_double(s->v[j], num, sizeof num);
						nnum = strlen(num);
						last = bits;
					}
					nm_buf_putn(&b, lead.s, lead.len);
					nm_buf_putn(&b, ix, sw_utoa(j, ix));
					nm_buf_putc(&b, ',');
					nm_buf_putn(&b, num, nnum);
					nm_buf_putc(&b, '\n');
				}
			}
	nm_buf_free(&lead);
	if (b.oom) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	} else {
		rc = nm_file_write(cr->series_csv, b.s, b.len, err, errlen);
	}
	nm_buf_free(&b);
	return rc;
}

/* ---- thresholds cache: the rows of a finished case, so an up-to-date case
 * still contributes to thresholds.csv without a search ---- */

static int sw_thresh_save(const struct sw_case_run *cr, const nm_thresh_row *rows, size_t n,
                          char *err, size_t errlen)
{
	nm_buf b = {0};
	int rc;

	nm_buf_printf(&b, "%s rows %zu size %zu\n", cr->tag, n, sizeof(*rows));
	nm_buf_putn(&b, rows, n * sizeof(*rows));
	if (b.oom) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	} else {
		rc = nm_file_write(cr->thresh, b.s, b.len, err, errlen);
	}
	nm_buf_free(&b);
	return rc;
}

/* 0 with the rows (malloc'd), or -1 when there is no cache for this tag. */
static int sw_thresh_load(const struct sw_case_run *cr, nm_thresh_row **rows, size_t *n)
{
	size_t len, cnt, size;
	char *text = nm_file_read(cr->thresh, &len), *nl;
	char head[256];

	*rows = NULL;
	*n = 0;
	if (!text)
		return -1;
	nl = memchr(text, '\n', len);
	snprintf(head, sizeof(head), "%s rows ", cr->tag);
	if (!nl || strncmp(text, head, strlen(head)) != 0 ||
	    sscanf(text + strlen(head), "%zu size %zu", &cnt, &size) != 2 ||
	    size != sizeof(**rows) || len - (size_t)(nl + 1 - text) != cnt * size) {
		free(text);
		return -1;
	}
	if (cnt) {
		*rows = malloc(cnt * size);
		if (!*rows) {
			free(text);
			return -1;
		}
		memcpy(*rows, nl + 1, cnt * size);
	}
	*n = cnt;
	free(text);
	return 0;
}

/* ---- the whole sweep ---- */

struct sw_all {
	struct sw_opts o;
	int rank, size;
	nm_case *cases[SW_MAX_CASES];
	size_t ncases;
	/* the cases whose thresholds this run has (computed, or read up to
	 * date): the docs' rows of any other case stay as they are */
	bool owned[SW_MAX_CASES];
	nm_thresh_row *rows;
	size_t nrows;
	char err[SW_ERR_LEN];
	bool dirs_ok; /* sw_dirs_writable passed */
	bool together; /* cases run at once (sw_together): points as tasks, no progress line */
	/* where the time went, wall seconds: the cases' points, their
	 * thresholds, their plots */
	double t_points, t_thresh, t_plots;
};

static int sw_add_rows(struct sw_all *s, nm_thresh_row *rows, size_t n)
{
	nm_thresh_row *all;

	if (!n)
		return 0;
	all = realloc(s->rows, (s->nrows + n) * sizeof(*all));
	if (!all)
		return -1;
	memcpy(all + s->nrows, rows, n * sizeof(*rows));
	s->rows = all;
	s->nrows += n;
	return 0;
}

/* tests/sweep/faults_sweep.sh kills a run between the steps that finish a case
 * (NANMAP_SWEEP_KILL_AT=journal, csv, thresh, state or plot: just after
 * that step); a rerun must complete it to the same bytes. */
static void sw_kill_at(const char *moment)
{
	const char *at = getenv("NANMAP_SWEEP_KILL_AT");

	if (at && !strcmp(at, moment))
		raise(SIGKILL);
}

/* ---- the state file: what a finished case wrote, each file with its size
 * and FNV-1a, so "up to date" is a fact about the files, not about their
 * names: a CSV cut short or a plot broken by a full disk is redone ----
 *
 *   TAG
 *   file SIZE HASH =PATH      the CSVs and the thresholds cache (PATH in --out)
 *   plot SIZE HASH =PATH      the plots, added once they are drawn (in --plots)
 *
 * PATHs are relative to their folder, so a results folder copied or mounted
 * elsewhere is still up to date.
 */

/* path's size and FNV-1a; -1 when it cannot be read. */
static int sw_digest(const char *path, size_t *size, uint64_t *h)
{
	char *b = nm_file_read(path, size);

	if (!b)
		return -1;
	*h = nm_fnv1a(b, *size);
	free(b);
	return 0;
}

static int sw_state_add(nm_buf *b, const char *kind, const char *dir, const char *path, char *err,
                        size_t errlen)
{
	size_t size;
	uint64_t h;

	if (sw_digest(path, &size, &h)) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	nm_buf_printf(b, "%s %zu %016" PRIx64, kind, size, h);
	sw_put_str(b, path + strlen(dir) + 1);
	nm_buf_printf(b, "\n");
	return 0;
}

/* Write cr's state: its data files, and its plots under plots (NULL: none
 * yet; a plot file that is not there is not recorded). */
static int sw_state_write(struct sw_case_run *cr, const char *plots, char *err, size_t errlen)
{
	nm_buf b = {0};
	int rc = 0;

	if (plots)
		sw_kill_at("plot");
	nm_buf_printf(&b, "%s\n", cr->tag);
	if (!cr->files.len) {
		nm_buf *f = &cr->files;

		rc = sw_state_add(f, "file", cr->out, cr->csv, err, errlen);
		if (!rc && cr->c->nseries)
			rc = sw_state_add(f, "file", cr->out, cr->series_csv, err, errlen);
		if (!rc)
			rc = sw_state_add(f, "file", cr->out, cr->thresh, err, errlen);
		if (!rc && f->oom) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
		}
		if (rc)
			nm_buf_reset(f);
	}
	if (!rc)
		nm_buf_putn(&b, cr->files.s, cr->files.len);
	for (int k = 0; k < 2 && plots && !rc; k++) {
		char p[1100];

		snprintf(p, sizeof(p), "%s/%s.%s", plots, cr->c->name, k ? "svg" : "png");
		if (sw_exists(p))
			rc = sw_state_add(&b, "plot", plots, p, err, errlen);
	}
	if (!rc && b.oom) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (!rc)
		rc = nm_file_write(cr->state, b.s, b.len, err, errlen);
	nm_buf_free(&b);
	return rc;
}

/* Does the state at path carry tag, and does every file of kind it lists
 * (in dir) hold the recorded bytes, the nneed paths in need[] among them?
 * When not, why says which file did not match (empty: no state or another
 * tag). */
static bool sw_state_ok(const char *path, const char *tag, const char *kind, const char *dir,
                        const char *const *need, size_t nneed, char *why, size_t whylen)
{
	size_t len, tl = strlen(tag), found = 0;
	char *st = nm_file_read(path, &len), *line, *nl;
	bool ok;

	why[0] = '\0';
	ok = st && len > tl && !strncmp(st, tag, tl) && st[tl] == '\n';
	for (line = ok ? st + tl + 1 : NULL; ok && line && (nl = strchr(line, '\n'));
	     line = nl + 1) {
		struct sw_tok t = {line, false};
		char rel[1100] = "", name[2300], *k, *hs, *end;
		uint64_t want_size, want_h, h = 0;
		size_t size = 0;

		*nl = '\0';
		k = sw_next(&t);
		want_size = sw_next_u(&t, SIZE_MAX);
		hs = sw_next(&t);
		sw_next_str(&t, rel, sizeof(rel));
		if (t.bad || sw_next(&t) || strlen(hs) != 16 ||
		    (want_h = strtoull(hs, &end, 16), *end)) {
			snprintf(why, whylen, "%s is damaged", path);
			ok = false;
			break;
		}
		if (strcmp(k, kind) != 0)
			continue;
		snprintf(name, sizeof(name), "%s/%s", dir, rel);
		if (sw_digest(name, &size, &h)) {
			snprintf(why, whylen, "%s is missing", name);
			ok = false;
		} else if (size != want_size || h != want_h) {
			snprintf(why, whylen, "%s does not match the state (%zu bytes, %" PRIu64
			         " recorded, or another checksum)", name, size, want_size);
			ok = false;
		}
		for (size_t i = 0; i < nneed; i++)
			found += !strcmp(need[i], name);
	}
	if (ok && found < nneed) {
		ok = false;
		if (st && len > tl)
			snprintf(why, whylen, "%s has no record of every output", path);
	}
	free(st);
	return ok;
}

/* Are cr's results what its state recorded? why: as sw_state_ok. */
static bool sw_up_to_date(const struct sw_case_run *cr, char *why, size_t whylen)
{
	const char *need[3] = {cr->csv, cr->thresh, cr->series_csv};

	return sw_state_ok(cr->state, cr->tag, "file", cr->out, need, cr->c->nseries ? 3 : 2, why,
	                   whylen);
}

#ifdef NM_MPI
/* Rank r sends its lines to rank 0, which decodes them into cr->pts and
 * appends them to the journal. Tags: 1 the length, 2 the bytes. */
static int sw_mpi_gather(struct sw_all *s, struct sw_case_run *cr, nm_buf *mine, FILE *journal,
                         int failed)
{
	int anyfail = 0;

	MPI_Allreduce(&failed, &anyfail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (anyfail) {
		if (s->rank == 0 && !failed)
			snprintf(s->err, sizeof(s->err), "%s: a point failed on another rank",
			         cr->c->name);
		return -1;
	}
	if (s->rank != 0) {
		unsigned long long n = mine->len;

		MPI_Send(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, 1, MPI_COMM_WORLD);
		for (size_t off = 0; off < mine->len;) {
			int chunk = mine->len - off > (1u << 30) ? 1 << 30 : (int)(mine->len - off);
			MPI_Send(mine->s + off, chunk, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
			off += (size_t)chunk;
		}
		return 0;
	}
	for (int r = 1; r < s->size; r++) {
		unsigned long long n;
		char *buf, *line, *nl;

		MPI_Recv(&n, 1, MPI_UNSIGNED_LONG_LONG, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		buf = malloc((size_t)n + 1);
		if (!buf) {
			snprintf(s->err, sizeof(s->err), "out of memory");
			return -1; /* MPI_Abort follows */
		}
		for (size_t off = 0; off < n;) {
			int chunk = n - off > (1u << 30) ? 1 << 30 : (int)(n - off);
			MPI_Recv(buf + off, chunk, MPI_CHAR, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			off += (size_t)chunk;
		}
		buf[n] = '\0';
		for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
			struct sw_pt p;
			size_t idx;

			if (fwrite(line, 1, (size_t)(nl + 1 - line), journal) !=
			    (size_t)(nl + 1 - line)) {
				snprintf(s->err, sizeof(s->err), "cannot append to %s: %s",
				         cr->journal, strerror(errno));
				free(buf);
				return -1;
			}
			*nl = '\0';
			if (sw_decode(line, cr->npoints, cr->nbe, &idx, &p) || cr->pts[idx].done) {
				free(buf);
				snprintf(s->err, sizeof(s->err), "%s: rank %d sent a bad point",
				         cr->c->name, r);
				return -1;
			}
			cr->pts[idx] = p;
			cr->pts[idx].done = true;
		}
		free(buf);
		if (fflush(journal) != 0) {
			snprintf(s->err, sizeof(s->err), "cannot append to %s: %s", cr->journal,
			         strerror(errno));
			return -1;
		}
	}
	return 0;
}
#endif

/* What the points of one case share while they are computed. */
struct sw_points_run {
	struct sw_all *s;
	struct sw_case_run *cr;
	FILE *journal;
	const size_t *mine;
	struct sw_progress pg;
	nm_buf sendbuf;
	int failed;
	size_t stop_after, journalled;
	int stop_sig;
};

/* Point mine[k]: computed, then stored, journalled (rank 0) or queued for
 * rank 0, one thread at a time. */
static void sw_point_one(struct sw_points_run *q, size_t k)
{
	struct sw_all *s = q->s;
	struct sw_case_run *cr = q->cr;
	struct sw_pt pt;
	nm_buf line = {0};
	char err[512];
	int bad;

#pragma omp atomic read
	bad = q->failed;
	if (bad)
		return;
	if (sw_eval(cr, q->mine[k], &pt, err, sizeof(err)) == 0)
		sw_encode(&line, q->mine[k], &pt, cr->nbe);
	else
		line.oom = true, bad = 1;
#pragma omp critical(sw_store)
	{
		if (bad || line.oom) {
			if (!q->failed) {
				nm_point p;

				sw_point_of(cr, q->mine[k], &p);
				snprintf(s->err, sizeof(s->err), "%s: point %zu (variant %s, policy %s): %s",
				         cr->c->name, q->mine[k], cr->c->variants[p.variant],
				         cr->c->policy_specs[p.policy], bad ? err : "out of memory");
			}
			q->failed = 1;
			sw_pt_clear(&pt);
		} else {
			cr->pts[q->mine[k]] = pt;
			if (s->rank == 0) {
				/* a point not journalled would be lost to a resume:
				 * stop at the first failed append (ENOSPC) */
				if (fwrite(line.s, 1, line.len, q->journal) != line.len ||
				    fflush(q->journal) != 0) {
					if (!q->failed)
						snprintf(s->err, sizeof(s->err), "cannot append to %s: %s",
						         cr->journal, strerror(errno));
					q->failed = 1;
				} else if (++q->journalled == q->stop_after) {
					/* as Ctrl-C would, even where the shell
					 * started us with SIGINT ignored */
					signal(q->stop_sig, SIG_DFL);
					raise(q->stop_sig);
				}
			} else {
				nm_buf_putn(&q->sendbuf, line.s, line.len);
				if (q->sendbuf.oom) {
					snprintf(s->err, sizeof(s->err), "out of memory");
					q->failed = 1;
				}
			}
			q->pg.done++;
			sw_progress(&q->pg, false);
		}
	}
	nm_buf_free(&line);
}

/* Compute the points cr lacks. Rank 0 holds every result afterwards. With
 * cases run at once (sw_cases_together) the points are tasks, which a
 * thread whose own case is done takes up. */
static int sw_points(struct sw_all *s, struct sw_case_run *cr, FILE *journal, size_t *ncomputed)
{
	unsigned char *todo = malloc(cr->npoints ? cr->npoints : 1);
	size_t *mine = NULL, nmine = 0, nmissing = 0;
	struct sw_points_run q = {s, cr, journal, NULL, {0}, {0}, 0, 0, 0, SIGINT};
	/* tests/sweep/cli_sweep.sh interrupts a run here, after that many journal lines */
	const char *stop = getenv("NANMAP_SWEEP_INTERRUPT_AFTER");
	/* and tests/sweep/faults_sweep.sh with SIGKILL (nothing cleaned up) or
	 * SIGSTOP (a run that holds its folder while another starts) */
	const char *sig = getenv("NANMAP_SWEEP_SIGNAL");

	q.stop_after = stop ? (size_t)strtoull(stop, NULL, 10) : 0;
	q.stop_sig = sig && !strcmp(sig, "KILL")   ? SIGKILL
	             : sig && !strcmp(sig, "STOP") ? SIGSTOP
	                                           : SIGINT;
	if (!todo) {
		snprintf(s->err, sizeof(s->err), "out of memory");
		return -1;
	}
	for (size_t i = 0; i < cr->npoints; i++)
		todo[i] = !cr->pts[i].done;
#ifdef NM_MPI
	if (s->size > 1)
		MPI_Bcast(todo, (int)cr->npoints, MPI_UNSIGNED_CHAR, 0, MPI_COMM_WORLD);
#endif
	mine = malloc((cr->npoints ? cr->npoints : 1) * sizeof(*mine));
	if (!mine) {
		free(todo);
		snprintf(s->err, sizeof(s->err), "out of memory");
		return -1;
	}
	for (size_t i = 0; i < cr->npoints; i++)
		if (todo[i] && nmissing++ % (size_t)s->size == (size_t)s->rank)
			mine[nmine++] = i;
	free(todo);
	*ncomputed = nmissing;
	q.mine = mine;
	q.pg.show = s->rank == 0 && !s->o.quiet && !s->together && isatty(2);
	q.pg.name = cr->c->name;
	q.pg.total = nmine;
	q.pg.t0 = q.pg.last = sw_now();

	struct sw_points_run *qp = &q;
	if (s->together) {
#pragma omp taskloop grainsize(1)
		for (size_t k = 0; k < nmine; k++)
			sw_point_one(qp, k);
	} else {
#pragma omp parallel for schedule(dynamic)
		for (size_t k = 0; k < nmine; k++)
			sw_point_one(qp, k);
	}
	free(mine);
	if (q.pg.show && nmine)
		sw_progress(&q.pg, true);
#ifdef NM_MPI
	if (s->size > 1) {
		int rc = sw_mpi_gather(s, cr, &q.sendbuf, journal, q.failed);
		nm_buf_free(&q.sendbuf);
		return rc;
	}
#endif
	nm_buf_free(&q.sendbuf);
	return q.failed ? -1 : 0;
}

/* (one rank makes no MPI call: cases run at once call this on any thread,
 * which MPI_THREAD_FUNNELED does not allow) */
static int sw_bcast_int(const struct sw_all *s, int v)
{
	(void)s; /* one communicator for now */
#ifdef NM_MPI
	if (s->size > 1)
		MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
	return v;
}

#ifdef SW_HAVE_PLOT
/* An up-to-date case is skipped entirely when both its plots are there too. */
static bool sw_plotted(const struct sw_all *s, const nm_case *c, const char *tag)
{
	char png[1100], svg[1100], state[1100], why[2600];
	const char *need[2] = {png, svg};
	bool ok;

	snprintf(png, sizeof(png), "%s/%s.png", s->o.plots, c->name);
	snprintf(svg, sizeof(svg), "%s/%s.svg", s->o.plots, c->name);
	snprintf(state, sizeof(state), "%s/.state/%s.hash", s->o.out, c->name);
	ok = sw_state_ok(state, tag, "plot", s->o.plots, need, 2, why, sizeof(why));
	if (!ok && why[0] && !s->o.quiet)
		fprintf(stderr, "sweep: %s: %s; plotting again\n", c->name, why);
	return ok;
}
#endif

/* Before the first point is computed (once a case has any to compute):
 * every output folder takes files, or the error comes now, not after. */
static int sw_dirs_writable(struct sw_all *s)
{
	const char *dirs[] = {s->o.out, s->o.plots, s->o.docs};
	int rc = 0;

	/* cases run at once make the folders one at a time */
#pragma omp critical(sw_dirs)
	{
		for (size_t i = 0; i < 3 && !s->dirs_ok && !rc; i++)
			if (sw_mkdirs(dirs[i], s->err, sizeof(s->err))
#ifdef SW_HAVE_PLOT
			    || nm_dir_writable(dirs[i], s->err, sizeof(s->err))
#endif
			)
				rc = -1;
		if (!rc)
			s->dirs_ok = true;
	}
	return rc;
}

/* One case: points, CSV, thresholds, plot. Ranks other than 0 only compute. */
static int sw_case(struct sw_all *s, const nm_case *c)
{
	struct sw_case_run cr;
	FILE *journal = NULL;
	nm_thresh_row *rows = NULL;
	size_t nrows = 0, ndone = 0, ncomputed = 0;
	double t0 = sw_now(), t1;
	int rc = -1, skip = 0;
	char dir[1100];

	if (sw_case_init(&cr, c, &s->o)) {
		snprintf(s->err, sizeof(s->err), "%s: out of memory for %zu points", c->name,
		         cr.npoints);
		return sw_bcast_int(s, -1);
	}
	if (s->rank == 0 && !s->o.fresh) {
		char why[2600];

		if (sw_up_to_date(&cr, why, sizeof(why)) && sw_thresh_load(&cr, &rows, &nrows) == 0)
			skip = 1;
		else if (why[0] && !s->o.quiet)
			fprintf(stderr, "sweep: %s: %s; computing again\n", c->name, why);
	}
	if (sw_bcast_int(s, skip)) {
		if (s->rank == 0) {
			rc = sw_add_rows(s, rows, nrows);
			if (rc)
				snprintf(s->err, sizeof(s->err), "out of memory");
			if (!rc && !s->o.quiet)
				fprintf(stderr, "sweep: %s up to date (%zu points)\n", c->name,
				        cr.npoints);
			(void)remove(cr.journal); /* of a run killed after its state */
		}
		goto plot;
	}
	if (s->rank == 0) {
		snprintf(dir, sizeof(dir), "%s/.partial", s->o.out);
		if (!sw_dirs_writable(s) && !sw_mkdirs(dir, s->err, sizeof(s->err)))
			journal = sw_journal_open(&cr, s->o.fresh, &ndone, s->err, sizeof(s->err));
		remove(cr.state); /* the state is stale from here until the CSV is whole */
	}
	if (sw_bcast_int(s, s->rank == 0 && !journal ? -1 : 0))
		goto out;
	if (s->rank == 0)
		sw_kill_at("journal");
	if (sw_points(s, &cr, journal, &ncomputed))
		goto out;
	if (s->rank != 0) {
		rc = 0;
		goto out;
	}
	{
		int bad = fclose(journal);

		journal = NULL;
		if (bad) {
			snprintf(s->err, sizeof(s->err), "cannot append to %s: %s", cr.journal,
			         strerror(errno));
			goto out;
		}
	}
	t1 = sw_now();
	snprintf(dir, sizeof(dir), "%s/.state", s->o.out);
	if (sw_write_csv(&cr, s->err, sizeof(s->err)) || sw_mkdirs(dir, s->err, sizeof(s->err)))
		goto out;
	sw_kill_at("csv");
	{
		emu_run_status *grid = malloc((cr.npoints ? cr.npoints : 1) * sizeof(*grid));
		char terr[SW_ERR_LEN] = "";

		if (!grid) {
			snprintf(s->err, sizeof(s->err), "out of memory");
			goto out;
		}
		signed char *verdict = malloc(cr.npoints ? cr.npoints : 1);

		if (!verdict) {
			free(grid);
			snprintf(s->err, sizeof(s->err), "out of memory");
			goto out;
		}
		for (size_t i = 0; i < cr.npoints; i++) {
			grid[i] = cr.pts[i].r[0].status;
			verdict[i] = (signed char)nm_point_verdict(c, &cr.pts[i].r[0]);
		}
		if (nm_thresh_case_acc(c, cr.quick, grid, verdict, &rows, &nrows, terr,
		                       sizeof(terr))) {
			snprintf(s->err, sizeof(s->err), "%s: thresholds: %s", c->name, terr);
			free(grid);
			free(verdict);
			goto out;
		}
		free(grid);
		free(verdict);
	}
	if (sw_thresh_save(&cr, rows, nrows, s->err, sizeof(s->err)) ||
	    sw_add_rows(s, rows, nrows)) {
		if (!s->err[0])
			snprintf(s->err, sizeof(s->err), "out of memory");
		goto out;
	}
	sw_kill_at("thresh");
	if (sw_state_write(&cr, NULL, s->err, sizeof(s->err)))
		goto out;
	sw_kill_at("state");
	remove(cr.journal);
	s->t_points += t1 - t0;
	s->t_thresh += sw_now() - t1;
	if (!s->o.quiet)
		fprintf(stderr,
		        "sweep: %s %zu points (%zu computed, %zu resumed) in %.1f s, thresholds %.1f s\n",
		        c->name, cr.npoints, ncomputed, ndone, t1 - t0, sw_now() - t1);
plot:
	rc = 0;
	double tp = sw_now();
#ifdef SW_HAVE_PLOT
	if (s->rank == 0) /* what a run killed during gnuplot left, even with nothing to draw */
		nm_plot_clean_stale(s->o.plots, c->name);
	if (s->rank == 0 && !(skip && sw_plotted(s, c, cr.tag))) {
		char perr[SW_ERR_LEN] = "";
		/* the CSV's columns from the point its header came from, which the
		 * plot would otherwise run again (a training run, for a train case) */
		nm_plot_cols cols, *known = NULL;

		if (!skip && cr.npoints && cr.pts[0].done) {
			nm_plot_cols_of(&cr.pts[0].r[0], &cols);
			known = &cols;
		}
		if (nm_plot_case_rows(c, s->o.out, s->o.plots, rows, nrows, known, perr,
		                      sizeof(perr))) {
			snprintf(s->err, sizeof(s->err), "%s: plot: %s", c->name, perr);
			rc = -1;
		} else if (sw_state_write(&cr, s->o.plots, s->err, sizeof(s->err))) {
			rc = -1;
		}
	}
#endif
	s->t_plots += sw_now() - tp;
out:
	if (journal)
		fclose(journal);
	free(rows);
	sw_case_free(&cr);
	return sw_bcast_int(s, rc);
}

static int sw_load_all(struct sw_all *s)
{
	struct sw_list files = {0};
	int rc = 0;

	for (size_t i = 0; i < s->o.npaths && !rc; i++) {
		struct stat st;
		const char *p = s->o.paths[i];

		if (!p)
			break;
		if (stat(p, &st) != 0)
			rc = nm_fail("%s: %s", p, strerror(errno));
		else if (S_ISDIR(st.st_mode))
			rc = sw_scan(p, 1, &files);
		else if (sw_list_add(&files, p))
			rc = nm_fail("out of memory");
	}
	if (!rc && files.n == 0)
		rc = nm_fail("no .case files in %s", s->o.paths[0]);
	/* every file read first; the first that cannot be is reported where
	 * the checks below reach it (after the files before it passed theirs) */
	char lerr[SW_ERR_LEN] = "";
	for (size_t i = 0; i < files.n && !rc && !lerr[0]; i++) {
		nm_case *c;

		if (s->ncases == SW_MAX_CASES) {
			snprintf(lerr, sizeof(lerr), "more than %d case files", SW_MAX_CASES);
			break;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			snprintf(lerr, sizeof(lerr), "out of memory");
			break;
		}
		if (nm_case_load(files.v[i], c, lerr, sizeof(lerr))) {
			free(c);
			if (!lerr[0])
				snprintf(lerr, sizeof(lerr), "%s: cannot be read", files.v[i]);
			break;
		}
		s->cases[s->ncases++] = c;
	}
#ifdef SW_HAVE_PLOT
	/* The columns check below runs each case's first point: the cases
	 * whose point fits in memory run it here, at once on every thread, and
	 * keep what it found (a case that fails is checked again below) */
	if (!rc) {
		size_t n = s->ncases;
#pragma omp parallel for schedule(dynamic, 1)
		for (size_t i = 0; i < n; i++) {
			nm_case *c = s->cases[i];
			char why[NM_FAIL_LEN];

			if (nm_plot_wants_columns(c) && !sw_work_fits(&s->o, c, why, sizeof(why)))
				(void)nm_plot_keep_columns(c, why, sizeof(why));
		}
	}
#endif
	for (size_t i = 0; i < s->ncases && !rc; i++) {
		char err[SW_ERR_LEN];
		nm_case *c = s->cases[i];

		/* before the pre-run check below runs the case's first point */
		if ((!s->o.only || !strcmp(c->name, s->o.only)) && sw_work_check(&s->o, c)) {
			rc = NM_EXIT_ERR;
			break;
		}
#ifdef SW_HAVE_PLOT
		if (nm_plot_check_columns(c, err, sizeof(err))) {
			rc = nm_fail("%s", err);
			break;
		}
#endif
#ifdef SW_HAVE_CLAIMS
		if (nm_claims_check(c, err, sizeof(err))) {
			rc = nm_fail("%s", err);
			break;
		}
#endif
		for (size_t j = 0; j < i; j++)
			if (!strcmp(s->cases[j]->name, c->name)) {
				rc = nm_fail("%s: a case named '%s' is also %s (outputs would collide)",
				             c->path, c->name, s->cases[j]->path);
				break;
			}
	}
	if (!rc && lerr[0])
		rc = nm_fail("%s", lerr);
	if (!rc && s->o.only) {
		size_t j = 0;

		while (j < s->ncases && strcmp(s->cases[j]->name, s->o.only) != 0)
			j++;
		if (j == s->ncases)
			rc = nm_fail("--only %s: no such case", s->o.only);
	}
	sw_list_free(&files);
	return rc;
}

/* Everything after the cases: thresholds of every case, then the claims. */
static int sw_finish(struct sw_all *s)
{
	char csv[1100], md[1100];
	nm_case *claims[SW_MAX_CASES];
	size_t nclaims = 0;

	snprintf(csv, sizeof(csv), "%s/thresholds.csv", s->o.out);
	snprintf(md, sizeof(md), "%s/thresholds.md", s->o.docs);
	if (sw_mkdirs(s->o.docs, s->err, sizeof(s->err)))
		return -1;
	{
		/* only this run's cases' rows change: a sweep of one case (--only, or
		 * a case file of one's own) must not erase the others' */
		char terr[SW_ERR_LEN] = "";
		const char *order[SW_MAX_CASES], *owned[SW_MAX_CASES];
		size_t nowned = 0, kept = 0;

		for (size_t i = 0; i < s->ncases; i++) {
			order[i] = s->cases[i]->name;
			if (s->owned[i])
				owned[nowned++] = s->cases[i]->name;
		}
		if (nm_thresh_update(s->rows, s->nrows, owned, nowned, order, s->ncases, csv, md,
		                     &kept, terr, sizeof(terr))) {
			snprintf(s->err, sizeof(s->err), "thresholds: %s", terr);
			return -1;
		}
		if (kept && !s->o.quiet)
			fprintf(stderr,
			        "nanmap: sweep: %s: kept the rows of %zu case%s not swept here\n",
			        md, kept, kept == 1 ? "" : "s");
	}
	for (size_t i = 0; i < s->ncases; i++)
		if (sw_is_claim(s->cases[i]))
			claims[nclaims++] = s->cases[i];
#ifdef SW_HAVE_CLAIMS
	if (nclaims && !s->o.only) {
		char cerr[SW_ERR_LEN] = "";

		snprintf(md, sizeof(md), "%s/claims.md", s->o.docs);
		if (nm_claims_write(claims, nclaims, s->o.out, md, cerr, sizeof(cerr))) {
			snprintf(s->err, sizeof(s->err), "claims: %s", cerr);
			return -1;
		}
	}
#else
	(void)claims;
#endif
	return 0;
}

/* A case this run does not compute (another was named with --only): its
 * cached thresholds still belong in the table, when they are up to date. */
static void sw_case_cached(struct sw_all *s, size_t i)
{
	struct sw_case_run cr;
	nm_thresh_row *rows;
	size_t n;

	if (s->rank == 0 && sw_case_init(&cr, s->cases[i], &s->o) == 0) {
		char why[2600];

		if (sw_up_to_date(&cr, why, sizeof(why)) && sw_thresh_load(&cr, &rows, &n) == 0) {
			s->owned[i] = sw_add_rows(s, rows, n) == 0;
			free(rows);
		}
		sw_case_free(&cr);
	}
}

static bool sw_runs(const struct sw_all *s, size_t i)
{
	return !s->o.only || !strcmp(s->cases[i]->name, s->o.only);
}

/* The cases one after another, each spreading its points and threshold
 * searches over the threads (and the ranks). */
static int sw_cases_in_turn(struct sw_all *s)
{
	int rc = 0;

	for (size_t i = 0; i < s->ncases && !rc; i++) {
		if (!sw_runs(s, i)) {
			sw_case_cached(s, i);
			continue;
		}
		if (sw_case(s, s->cases[i]))
			rc = s->rank == 0 ? nm_fail("%s", s->err) : NM_EXIT_ERR;
		s->owned[i] = true;
	}
	return rc;
}

/*
 * Several cases on one process and several threads: the cases are tasks
 * of one parallel region, and so are their points and threshold searches
 * (taskloops), so a thread never waits at the end of a case for its
 * slowest point or search while other cases have work: it takes up the
 * next case, or the points of one running. A kernel's own parallel loops
 * run on one thread (nested). Every case writes only its own files; its
 * rows join the table in the cases' order, so the outputs are those of the
 * cases in turn. After a case fails no case starts; the error is the first
 * failed case's, in the cases' order.
 */
static bool sw_together(const struct sw_all *s)
{
	size_t n = 0;

	if (s->size != 1)
		return false;
#ifdef _OPENMP
	if (omp_get_max_threads() < 2)
		return false;
#else
	return false;
#endif
	for (size_t i = 0; i < s->ncases; i++)
		n += sw_runs(s, i);
	return n > 1;
}

static int sw_cases_together(struct sw_all *s)
{
	struct sw_all **one = calloc(s->ncases, sizeof(struct sw_all *));
	int *crc = calloc(s->ncases, sizeof(*crc)), stop = 0, rc = 0;

	if (!one || !crc) {
		free(one);
		free(crc);
		return nm_fail("out of memory");
	}
	s->together = true;
#ifdef _OPENMP
	int levels = omp_get_max_active_levels();
	omp_set_max_active_levels(1); /* a kernel's own loops: one thread */
#endif
#pragma omp parallel
#pragma omp single
	for (size_t i = 0; i < s->ncases; i++) {
		if (!sw_runs(s, i))
			continue;
#pragma omp task firstprivate(i)
		{
			int halt;

#pragma omp atomic read
			halt = stop;
			crc[i] = 1; /* not run */
			if (!halt && (one[i] = malloc(sizeof(*one[i])))) {
				*one[i] = *s;
				one[i]->rows = NULL;
				one[i]->nrows = 0;
				one[i]->err[0] = '\0';
				one[i]->t_points = one[i]->t_thresh = one[i]->t_plots = 0;
				crc[i] = sw_case(one[i], s->cases[i]);
			} else if (!halt) {
				crc[i] = -1;
			}
			if (crc[i] < 0) {
#pragma omp atomic write
				stop = 1;
			}
		}
	}
#ifdef _OPENMP
	omp_set_max_active_levels(levels);
#endif
	s->together = false;
	for (size_t i = 0; i < s->ncases && !rc; i++) /* the first failure in order */
		if (sw_runs(s, i) && crc[i] < 0)
			rc = nm_fail("%s", one[i] ? one[i]->err : "out of memory");
	for (size_t i = 0; i < s->ncases; i++) {
		if (one[i]) {
			s->dirs_ok = s->dirs_ok || one[i]->dirs_ok;
			s->t_points += one[i]->t_points;
			s->t_thresh += one[i]->t_thresh;
			s->t_plots += one[i]->t_plots;
		}
		if (rc)
			continue;
		if (!sw_runs(s, i)) {
			sw_case_cached(s, i);
			continue;
		}
		s->owned[i] = true;
		if (sw_add_rows(s, one[i]->rows, one[i]->nrows))
			rc = nm_fail("out of memory");
	}
	for (size_t i = 0; i < s->ncases; i++) {
		if (one[i])
			free(one[i]->rows);
		free(one[i]);
	}
	free(one);
	free(crc);
	return rc;
}

int nm_sweep_main(int argc, char **argv)
{
	struct sw_all *s = calloc(1, sizeof(*s));
	int rc, lockfd = -1;

	if (!s)
		return nm_fail("out of memory");
	s->size = 1;
	if (nm_wants_help(argc - 1, argv + 1)) {
		free(s);
		return nm_print_help(sw_usage);
	}
#ifdef NM_MPI
	{
		int provided;

		MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
		MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
		MPI_Comm_size(MPI_COMM_WORLD, &s->size);
		if (s->rank != 0) /* one error line, from rank 0 */
			if (!freopen("/dev/null", "w", stderr))
				return NM_EXIT_ERR;
	}
#endif
	rc = sw_parse_opts(&s->o, argc, argv);
#ifdef _OPENMP
	if (!rc && s->o.jobs) /* -j N: the checks' first points too */
		omp_set_num_threads(s->o.jobs);
#endif
	if (!rc)
		rc = sw_load_all(s);
	for (size_t i = 0; i < s->ncases && !rc; i++)
		if (!s->o.only || !strcmp(s->cases[i]->name, s->o.only))
			rc = sw_size_check(&s->o, s->cases[i]);
	if (!rc && s->rank == 0 &&
	    (sw_mkdirs(s->o.out, s->err, sizeof(s->err)) ||
	     sw_lock(s->o.out, &lockfd, s->err, sizeof(s->err)) ||
	     sw_mkdirs(s->o.plots, s->err, sizeof(s->err))))
		rc = nm_fail("%s", s->err);
	if (!rc && s->rank == 0) {
		/* what a killed run left half-written (never a live process's) */
		const char *sub[] = {"", "/.partial", "/.state"};
		char d[1100];

		for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
			snprintf(d, sizeof(d), "%s%s", s->o.out, sub[i]);
			(void)nm_file_clean(d);
		}
		(void)nm_file_clean(s->o.plots);
		(void)nm_file_clean(s->o.docs);
#ifdef SW_HAVE_PLOT
		/* and sw_dirs_writable's probes (a case at once with the one
		 * that was killed can be in the middle of one) */
		const char *probed[] = {s->o.out, s->o.plots, s->o.docs};
		for (size_t i = 0; i < 3; i++)
			(void)nm_dir_probe_clean(probed[i]);
#endif
	}
	rc = sw_bcast_int(s, rc);
	if (!rc)
		rc = sw_together(s) ? sw_cases_together(s) : sw_cases_in_turn(s);
	double tf = sw_now();
	if (!rc && s->rank == 0 && sw_finish(s))
		rc = nm_fail("%s", s->err);
	if (!rc && s->rank == 0 && !s->o.quiet)
		fprintf(
		    stderr,
		    "sweep: where the time went: points %.1f s, thresholds %.1f s, plots %.1f s, "
		    "thresholds.md and claims.md %.1f s\n",
		    s->t_points, s->t_thresh, s->t_plots, sw_now() - tf);
	rc = sw_bcast_int(s, rc);
#ifdef NM_MPI
	MPI_Finalize();
#endif
	for (size_t i = 0; i < s->ncases; i++) {
		nm_case_free(s->cases[i]);
		free(s->cases[i]);
	}
	free(s->rows);
	free(s->o.paths);
	free(s);
	if (lockfd >= 0)
		close(lockfd); /* the lock ends here */
	return rc;
}
