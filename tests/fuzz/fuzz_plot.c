/*
 * fuzz_plot.c — libFuzzer harness for the plot's results reader
 * (nm_plot_read_results in emu/sweep/nm_plot.c: the RFC 4180 reader and the
 * checks against the case).
 *
 * The first byte chooses the case and the file: bit 0 the case (fa: accum,
 * one axis with a quick grid and a series; fb: layernorm, two axes, exact =
 * yes), bit 1 its -series.csv (fa only). The rest is the CSV, written to a
 * temporary file. A failure must be one line starting with "PATH:" and
 * leave the table empty; a success must be a table the plot can use: the
 * header's field count in every record, as many rows as a grid of the case
 * gives (one series run per point, backend and output), known statuses.
 * Seeds: tests/fuzz/corpus_plot/ (sweep output of these two cases, the
 * selector byte first). Built and run by tests/fuzz/run.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu/sweep/nm_case.h"
#include "emu/sweep/nm_plot.h"

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_plot: %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const case_text[2] = {
    "[case]\nkernel = accum\nvariants = sum:seq sum:pairwise\npolicy = storage=fp16\n"
    "policy = storage=fp16,accum=fp32\nseries = result\n[input]\ngen = ones\nrows = 1\n"
    "seed = 1\n[axis n]\nsets = cols\ngrid = list 1 100 10000\nquick = list 1 10000\n",
    "[case]\nkernel = layernorm\npolicy = storage=fp16\nexact = yes\n[input]\ngen = normal\n"
    "rows = 1\ncols = 4\nseed = 1\n[axis eps]\nsets = param:eps\ngrid = list 1e-12 1e-1\n"
    "[axis sd]\nsets = scale\ngrid = list 1e-8 1 100\nquick = list 1e-8 100\n",
};
static const char *const case_name[2] = {"fa", "fb"};

static nm_case cases[2];
static nm_plot_cols cols[2];
static char dir[64];

static void init(void)
{
	char p[128], err[768];
	snprintf(dir, sizeof(dir), "/tmp/fuzz_plot_%ld", (long)getpid());
	REQUIRE(mkdir(dir, 0700) == 0 || access(dir, W_OK) == 0);
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s.case", dir, case_name[i]);
		FILE *f = fopen(p, "w");
		REQUIRE(f != NULL);
		REQUIRE(fputs(case_text[i], f) >= 0);
		REQUIRE(fclose(f) == 0);
		REQUIRE(nm_case_load(p, &cases[i], err, sizeof(err)) == 0);
		REQUIRE(nm_plot_columns(&cases[i], &cols[i], err, sizeof(err)) == 0);
	}
}

static size_t points(const nm_case *c, bool quick)
{
	size_t n = c->nvariants * c->npolicies * (c->exact ? 2 : 1);
	for (size_t a = 0; a < c->naxes; a++)
		n *= quick ? c->axes[a].nquick : c->axes[a].nvalues;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128], err[768];
	nm_csv t;

	if (!dir[0])
		init();
	if (size < 1)
		return 0;
	int k = data[0] & 1;
	bool series = k == 0 && (data[0] & 2);
	const nm_case *c = &cases[k];
	snprintf(path, sizeof(path), "%s/%s%s.csv", dir, case_name[k], series ? "-series" : "");
	FILE *f = fopen(path, "wb");
	REQUIRE(f != NULL);
	REQUIRE(fwrite(data + 1, 1, size - 1, f) == size - 1);
	REQUIRE(fclose(f) == 0);
	err[0] = '\0';
	if (nm_plot_read_results(c, &cols[k], path, series, &t, err, sizeof(err)) != 0) {
		REQUIRE(strncmp(err, path, strlen(path)) == 0);
		REQUIRE(err[strlen(path)] == ':');
		REQUIRE(strchr(err, '\n') == NULL);
		REQUIRE(t.cell == NULL && t.line == NULL && t.nrec == 0 && t.ncols == 0);
		return 0;
	}
	REQUIRE(t.nrec >= 2 && t.ncols >= 5 + c->naxes);
	REQUIRE(t.line[0] == 1);
	for (size_t r = 1; r < t.nrec; r++)
		REQUIRE(t.line[r] > t.line[r - 1]);
	for (size_t r = 0; r + 1 < t.nrec; r++)
		for (size_t j = 0; j < t.ncols; j++)
			REQUIRE(nm_csv_get(&t, r, (int)j) == t.cell[(r + 1) * t.ncols + j]);
	if (series) {
		size_t runs = 0;
		for (size_t r = 0; r + 1 < t.nrec; r++)
			runs += strcmp(nm_csv_get(&t, r, nm_csv_col(&t, "index")), "0") == 0;
		REQUIRE(runs == points(c, false) * c->nseries || runs == points(c, true) * c->nseries);
	} else {
		REQUIRE(t.nrec - 1 == points(c, false) || t.nrec - 1 == points(c, true));
		int cs = nm_csv_col(&t, "status");
		REQUIRE(cs >= 0);
		for (size_t r = 0; r + 1 < t.nrec; r++)
			REQUIRE(nm_status_code(nm_csv_get(&t, r, cs)) >= 0);
	}
	nm_csv_free(&t);
	return 0;
}
