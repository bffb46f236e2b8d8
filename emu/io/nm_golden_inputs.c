/*
 * nm_golden_inputs.c — a golden case's inputs: every tensor its kernel
 * consumes (nm_golden.h), for `nanmap golden export` and nanmap.golden.
 *
 * Why nothing is drawn here: x comes from the generator the golden files
 * were made with (nm_gen, the case line's gen, scale and seed), everything
 * else from the kernel's own inputs function (emu_kernel_inputs), the one
 * its run takes them from. So the export cannot drift from the kernel: a
 * backward case's dy is the kernel's dy, not a re-derivation of its draw.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "emu/io/nm_gen.h"
#include "emu/io/nm_golden.h"

void nm_golden_inputs_free(nm_golden_inputs *in)
{
	for (size_t i = 0; in->item && i < in->n; i++) {
		free(in->item[i].values);
		free(in->item[i].encodings);
	}
	free(in->item);
	memset(in, 0, sizeof *in);
}

/* One role into item: its values copied, its encodings computed as the
 * kernel rounds them. 0, or -1 out of memory. */
static int ngi_item(const emu_policy *pol, const emu_kinput *t, nm_golden_input *item)
{
	size_t n = t->rows * t->cols;

	item->role = t->role;
	item->ndim = t->vector ? 1 : 2;
	item->rows = t->rows;
	item->cols = t->cols;
	item->of_x = t->of_x;
	if (t->kind == EMU_KIN_INDEX) {
		snprintf(item->format, sizeof item->format, "index");
		item->bits = 32;
	} else if (!t->fmt) {
		snprintf(item->format, sizeof item->format, "float64");
		item->bits = 64;
	} else {
		snprintf(item->format, sizeof item->format, "%s", t->fmt->name);
		item->bits = t->fmt->bits;
	}
	item->values = malloc((n ? n : 1) * sizeof *item->values);
	if (!item->values)
		return -1;
	memcpy(item->values, t->v, n * sizeof *item->values);
	if (t->kind == EMU_KIN_INDEX || !t->fmt)
		return 0;
	item->encodings = malloc((n ? n : 1) * sizeof *item->encodings);
	if (!item->encodings)
		return -1;
	emu_kinput_bits(pol, t, item->encodings);
	return 0;
}

nm_golden_status nm_golden_case_inputs(const nm_golden *g, const char *case_id,
                                       nm_golden_inputs *out, char *err, size_t errlen)
{
	const nm_golden_case *c = NULL;
	emu_policy pol;
	emu_kinputs ki;
	char e[256] = "";

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < nm_golden_case_count(g) && !c; i++)
		if (!strcmp(nm_golden_case_at(g, i)->id, case_id))
			c = nm_golden_case_at(g, i);
	if (!c) {
		snprintf(err, errlen, "no case '%s'", case_id);
		return NM_GOLDEN_ERR_NOTFOUND;
	}
	const emu_kernel *k = emu_kernel_by_name(c->kernel);
	int dist = nm_gen_dist_parse(c->gen);
	if (!k || (dist != NM_GEN_UNIFORM && dist != NM_GEN_ONES)) {
		snprintf(err, errlen,
		         k ? "case %s: generator '%s' (its inputs are redrawn for uniform and ones "
		             "only)"
		           : "case %s: no kernel '%s' in this nanmap",
		         c->id, k ? c->gen : c->kernel);
		return NM_GOLDEN_ERR_FORMAT;
	}
	if (emu_policy_parse(c->policy, &pol, e, sizeof e) != EMU_OK) {
		snprintf(err, errlen, "case %s: bad policy '%s': %s", c->id, c->policy, e);
		return NM_GOLDEN_ERR_FORMAT;
	}
	size_t n = c->rows * c->cols;
	double *x = malloc((n ? n : 1) * sizeof *x);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return NM_GOLDEN_ERR_NOMEM;
	}
	nm_gen gen = {(nm_gen_dist)dist, c->scale, 0, 0, c->seed, 0, 0};
	nm_gen_fill(&gen, x, n);
	/* the kernel's parameters are its defaults: golden cases set none */
	emu_kin in = {x, c->rows, c->cols, NULL, 0, c->seed, NULL, 0};
	if (emu_kernel_inputs(k, &pol, c->variant, &in, &ki, e, sizeof e) != 0) {
		free(x);
		snprintf(err, errlen, "case %s: %s", c->id, e);
		return NM_GOLDEN_ERR_FORMAT;
	}
	nm_golden_status st = NM_GOLDEN_OK;
	out->item = calloc((size_t)ki.n, sizeof *out->item);
	if (!out->item)
		st = NM_GOLDEN_ERR_NOMEM;
	for (int i = 0; st == NM_GOLDEN_OK && i < ki.n; i++) {
		out->n++;
		if (ngi_item(&pol, &ki.item[i], &out->item[i]) != 0)
			st = NM_GOLDEN_ERR_NOMEM;
	}
	emu_kinputs_free(&ki);
	free(x);
	if (st != NM_GOLDEN_OK) {
		nm_golden_inputs_free(out);
		snprintf(err, errlen, "out of memory");
	}
	return st;
}
