/*
 * bench_golden.c — reading a large golden file (docs/bench.md, table 8):
 * nm_golden_open on a file of about 1 GB written at bench time into a
 * temporary folder, against fread of the same bytes into memory:
 *   golden_mb,cases,records,fread_mb_s,parse_mb_s,ratio_fread
 * ratio_fread = parse time / fread time, both wall time, best of reps
 * (at most 3: one parse of 1 GB takes seconds), interleaved. A real kernel
 * suite's golden file has many small cases, so the file is cases of one
 * 16-record output each, valid format 2 with their checksums: the reader
 * must stay linear in the number of cases (it was quadratic). Measured,
 * never asserted; the file is removed at the end.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu/io/nm_golden.h"
#include "emu/io/nm_parse.h"

void bench_golden(int reps, size_t mb);

static double bg_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Write about mb·10^6 bytes of golden file to path; the counts. */
static int bg_write(const char *path, size_t mb, size_t *ncases, size_t *nrec)
{
	FILE *fp = fopen(path, "wb");
	char c[4096];
	size_t total = 0;

	*ncases = *nrec = 0;
	if (!fp)
		return -1;
	total += (size_t)fprintf(fp, "# nanmap golden file, format %d (bench)\n", NM_GOLDEN_FORMAT);
	while (total < mb * 1000000) {
		size_t k = 0, n = *ncases;
		char id[64];
		snprintf(id, sizeof id, "bench.k%zu.fp16-fp32.safe", n);
		k += (size_t)snprintf(c + k, sizeof c - k,
		                      "case %s kernel=accum variant=sum:seq "
		                      "policy=storage=fp16,compute=fp32 rows=1 cols=16 gen=uniform "
		                      "scale=0x1p+1 seed=%zu\nstatus %s ok\nops %s add 16 "
		                      "inexact=9\noutput %s/y fp16 16\n",
		                      id, n, id, id, id);
		for (unsigned j = 0; j < 16; j++)
			k += (size_t)snprintf(c + k, sizeof c - k, "%s/y %u 0x%04x normal\n", id, j,
			                      0x3c00u + (unsigned)((n * 16 + j) & 0x3ff));
		uint64_t h = nm_fnv1a(c, k);
		k += (size_t)snprintf(c + k, sizeof c - k, "end %s %016" PRIx64 "\n\n", id, h);
		if (fwrite(c, 1, k, fp) != k)
			break;
		total += k;
		++*ncases;
		*nrec += 16;
	}
	return fclose(fp) == 0 && total >= mb * 1000000 ? 0 : -1;
}

void bench_golden(int reps, size_t mb)
{
	char dir[] = "/tmp/nanmap-bench-golden-XXXXXX", path[64], err[512];
	size_t ncases, nrec, len = 0;
	double best_read = 1e300, best_parse = 1e300;

	if (reps > 3)
		reps = 3;
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bench_golden: cannot make a temporary folder\n");
		return;
	}
	snprintf(path, sizeof path, "%s/big.golden", dir);
	fprintf(stderr, "bench_golden: writing %zu MB to %s\n", mb, path);
	if (bg_write(path, mb, &ncases, &nrec) != 0) {
		fprintf(stderr, "bench_golden: cannot write %s\n", path);
		unlink(path);
		rmdir(dir);
		return;
	}
	for (int r = 0; r < reps; r++) {
		double t0 = bg_now();
		FILE *fp = fopen(path, "rb");
		char *buf = NULL;
		if (fp && fseek(fp, 0, SEEK_END) == 0) {
			long sz = ftell(fp);
			rewind(fp);
			buf = sz > 0 ? malloc((size_t)sz) : NULL;
			len = buf ? fread(buf, 1, (size_t)sz, fp) : 0;
		}
		if (fp)
			fclose(fp);
		double t1 = bg_now();
		free(buf);
		if (t1 - t0 < best_read)
			best_read = t1 - t0;
		nm_golden *g;
		t0 = bg_now();
		nm_golden_status st = nm_golden_open(path, &g, err, sizeof err);
		t1 = bg_now();
		if (st != NM_GOLDEN_OK) {
			fprintf(stderr, "bench_golden: %s\n", err);
			break;
		}
		if (nm_golden_case_count(g) != ncases || nm_golden_find(g, "bench.k0.fp16-fp32.safe") == NULL)
			fprintf(stderr, "bench_golden: the file read back wrong\n");
		nm_golden_close(g);
		if (t1 - t0 < best_parse)
			best_parse = t1 - t0;
	}
	unlink(path);
	rmdir(dir);
	if (best_parse == 1e300)
		return;
	double m = (double)len / 1e6;
	printf("golden_mb,cases,records,fread_mb_s,parse_mb_s,ratio_fread\n");
	printf("%.0f,%zu,%zu,%.0f,%.1f,%.1f\n", m, ncases, nrec, m / best_read, m / best_parse,
	       best_parse / best_read);
	fflush(stdout);
}
