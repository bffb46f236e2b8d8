/*
 * golden_inputs.c — how a kernel's test checks every output of a golden
 * case from the case's inputs, a backward case's upstream gradient included
 * (docs/golden.md walks through it).
 *
 *   cc -std=c11 golden_inputs.c $(pkg-config --cflags --libs nanmap)
 *   ./golden_inputs golden/layernorm.golden layernorm.twopass.fp16-fp32.safe
 *
 * nm_golden_case_inputs gives every tensor the case's kernel consumed (x,
 * and dy, target, w, ... as the kernel drew them), each as values and as the
 * encodings it stored. The kernel under test here is nanmap's own, handed
 * those tensors by role (emu_kin.tensors) under seed 0, so that nothing is
 * re-derived from the case's seed: put yours in its place. Exit status 0
 * when every output matches bit for bit, 1 when one does not, 2 on an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "nm_golden.h"

int main(int argc, char **argv)
{
	nm_golden *g;
	nm_golden_inputs ins;
	emu_ktensor tensors[EMU_KINPUTS_MAX];
	emu_policy pol;
	emu_run run;
	char err[512];
	size_t nt = 0;
	int rc = 2;

	if (argc != 3) {
		fprintf(stderr, "usage: golden_inputs GOLDEN_FILE CASE\n");
		return 2;
	}
	if (nm_golden_open(argv[1], &g, err, sizeof err) != NM_GOLDEN_OK) {
		fprintf(stderr, "golden_inputs: %s\n", err);
		return 2;
	}
	if (nm_golden_case_inputs(g, argv[2], &ins, err, sizeof err) != NM_GOLDEN_OK) {
		fprintf(stderr, "golden_inputs: %s\n", err);
		nm_golden_close(g);
		return 2;
	}
	const nm_golden_case *c = NULL;
	for (size_t i = 0; i < nm_golden_case_count(g); i++)
		if (!strcmp(nm_golden_case_at(g, i)->id, argv[2]))
			c = nm_golden_case_at(g, i);
	for (size_t i = 1; i < ins.n && nt < EMU_KINPUTS_MAX; i++) { /* item 0 is x */
		const nm_golden_input *t = &ins.item[i];
		printf("%s: %s %zu x %zu (%s)\n", c->id, t->role, t->rows, t->cols, t->format);
		tensors[nt++] = (emu_ktensor){t->role, t->rows, t->cols, t->values};
	}

	/* ---- the kernel under test: its outputs as encodings ---- */
	const emu_kernel *k = emu_kernel_by_name(c->kernel);
	emu_kin in = {ins.item[0].values, c->rows, c->cols, NULL, 0, 0, tensors, nt};
	if (!k || emu_policy_parse(c->policy, &pol, err, sizeof err) != EMU_OK ||
	    emu_run_kernel(k, &pol, c->variant, &in, EMU_BE_FAST, &run, err, sizeof err) != 0) {
		fprintf(stderr, "golden_inputs: %s: %s\n", c->id, k ? err : "no such kernel");
		if (k)
			emu_run_free(&run);
		goto done;
	}
	rc = 0;
	for (int i = 0; i < run.out.n; i++) {
		const emu_kout_item *it = &run.out.item[i];
		const emu_format *f = emu_format_by_name(it->fmt->name);
		uint32_t *actual = malloc((it->n ? it->n : 1) * sizeof *actual);
		char target[256];
		nm_golden_report rep;
		nm_golden_opts opts = NM_GOLDEN_OPTS_DEFAULT; /* bit for bit; any NaN matches */
		if (!f || !actual) {
			free(actual);
			rc = 2;
			break;
		}
		for (size_t j = 0; j < it->n; j++)
			actual[j] = emu_encode(f, emu_kout_d(&run.be, it, j));
		snprintf(target, sizeof target, "%s/%s", c->id, it->name);
		/* ---- compared with the golden output ---- */
		if (nm_golden_compare(g, target, actual, it->n, &opts, &rep, err, sizeof err) !=
		    NM_GOLDEN_OK) {
			fprintf(stderr, "golden_inputs: %s\n", err);
			free(actual);
			rc = 2;
			break;
		}
		printf("%s: %zu checked, %zu mismatched\n", target, rep.checked, rep.mismatched);
		for (size_t m = 0; m < rep.mismatched; m++)
			printf("%s[%zu]: expected 0x%x, got 0x%x\n", target,
			       rep.mismatches[m].index, (unsigned)rep.mismatches[m].expected,
			       (unsigned)rep.mismatches[m].actual);
		if (rep.mismatched)
			rc = 1;
		nm_golden_report_free(&rep);
		free(actual);
	}
	emu_run_free(&run);
done:
	nm_golden_inputs_free(&ins);
	nm_golden_close(g);
	return rc;
}
