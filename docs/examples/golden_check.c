/*
 * golden_check.c — how a kernel's own test suite uses nanmap's golden files
 * (docs/golden.md walks through it).
 *
 *   cc -std=c11 golden_check.c $(pkg-config --cflags --libs nanmap)
 *   ./golden_check golden/softmax_ce.golden softmax_ce.naive.fp16-fp16.safe/grad out.bin
 *
 * Here the kernel's outputs come from a file (raw encodings, hex text or
 * .npy, as `nanmap check` reads them); in a real test they are the buffer
 * the kernel just wrote. Exit status 0 when every element matches bit for
 * bit, 1 when one does not, 2 on an error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "nm_golden.h"

int main(int argc, char **argv)
{
	nm_golden *g;
	nm_golden_report rep;
	nm_golden_opts opts = NM_GOLDEN_OPTS_DEFAULT; /* bit for bit; any NaN matches */
	const nm_golden_output *out;
	uint32_t *actual;
	size_t n;
	char err[512];
	int rc = 2;

	if (argc != 4) {
		fprintf(stderr, "usage: golden_check GOLDEN_FILE CASE/OUTPUT ACTUAL_FILE\n");
		return 2;
	}
	if (nm_golden_open(argv[1], &g, err, sizeof err) != NM_GOLDEN_OK) {
		fprintf(stderr, "golden_check: %s\n", err);
		return 2;
	}
	out = nm_golden_find(g, argv[2]);
	if (!out) {
		fprintf(stderr, "golden_check: %s: no output %s\n", argv[1], argv[2]);
		goto done;
	}
	/* the outputs of the kernel under test: out->n encodings of out->format */
	if (nm_golden_read_actual(argv[3], out, &actual, &n, err, sizeof err) != NM_GOLDEN_OK) {
		fprintf(stderr, "golden_check: %s\n", err);
		goto done;
	}
	if (nm_golden_compare(g, out->target, actual, n, &opts, &rep, err, sizeof err) !=
	    NM_GOLDEN_OK) {
		fprintf(stderr, "golden_check: %s\n", err); /* wrong length, say */
		free(actual);
		goto done;
	}
	for (size_t i = 0; i < rep.mismatched; i++) {
		const nm_golden_mismatch *m = &rep.mismatches[i];
		printf("%s[%zu]: expected 0x%x (%s), got 0x%x (%s)\n", out->name, m->index,
		       (unsigned)m->expected, nm_golden_class(out, m->expected),
		       (unsigned)m->actual, nm_golden_class(out, m->actual));
	}
	printf("%s: %zu checked, %zu mismatched\n", out->target, rep.checked, rep.mismatched);
	rc = rep.mismatched ? 1 : 0;
	nm_golden_report_free(&rep);
	free(actual);
done:
	nm_golden_close(g);
	return rc;
}
