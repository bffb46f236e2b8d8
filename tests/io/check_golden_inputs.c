/*
 * check_golden_inputs.c — a golden case's exported inputs reproduce it
 * (emu/io/nm_golden_inputs.c): what a kernel developer does, through the
 * public API only. For every case of every golden file: take every tensor
 * the case's kernel consumes (nm_golden_case_inputs: x, and dy, target, w,
 * grad, gamma, ... as the kernel draws them), hand them to the kernel
 * (emu_kin.tensors) and compare every output with the file, bit for bit:
 *  - from the float64 values, and from the stored encodings decoded (what a
 *    kernel that reads fp16/bf16/FP8 tensors is given);
 *  - where the kernel consumes tensors beyond x, again under another seed:
 *    nothing it needs is left to be re-derived from the seed (the seed still
 *    keys stochastic rounding, so cases whose recipe rounds stochastically
 *    keep theirs);
 *  - and the other way round, x alone under another seed does not reproduce
 *    a case whose dy (or w, b, target, grad) the seed drew: the tensors are
 *    what made the records.
 * Run from the repository root (the files are read from golden/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/cli/nm_goldcmd.h"
#include "emu/engine/kernels.h"
#include "emu/io/nm_golden.h"
#include "tests/lib.h"

/* How a run is handed the case's inputs. */
enum { FROM_VALUES, FROM_ENCODINGS, X_ALONE };

/* Run case c of g on the fast backend with its inputs ins (as `from` says)
 * and seed; the number of outputs that differ from the records (bit for
 * bit), -1 when the run fails. *nout: the outputs compared. */
static int run_case(const nm_golden *g, const nm_golden_case *c, const nm_golden_inputs *ins,
                    int from, uint64_t seed, size_t *nout, char *err, size_t errlen)
{
	const emu_kernel *k = emu_kernel_by_name(c->kernel);
	emu_policy pol;
	emu_ktensor kt[EMU_KINPUTS_MAX];
	double *vals[EMU_KINPUTS_MAX] = {0};
	size_t nt = 0;
	emu_run r;
	int bad = -1;

	ck_assert_msg(k && ins->n >= 1 && ins->n <= EMU_KINPUTS_MAX, "%s", c->id);
	ck_assert_msg(emu_policy_parse(c->policy, &pol, err, errlen) == EMU_OK, "%s", err);
	/* each tensor as values: the float64 ones, or the encodings decoded */
	for (size_t i = 0; i < ins->n; i++) {
		const nm_golden_input *t = &ins->item[i];
		size_t n = t->rows * t->cols;
		vals[i] = malloc((n ? n : 1) * sizeof *vals[i]);
		ck_assert(vals[i] != NULL);
		const emu_format *f = t->encodings ? emu_format_by_name(t->format) : NULL;
		ck_assert_msg(!t->encodings || f, "%s: %s in %s", c->id, t->role, t->format);
		for (size_t j = 0; j < n; j++)
			vals[i][j] = from == FROM_ENCODINGS && f ? emu_decode(f, t->encodings[j])
			                                         : t->values[j];
		if (i > 0 && from != X_ALONE)
			kt[nt++] =
			    (emu_ktensor){t->role, t->ndim == 1 ? 1 : t->rows, t->cols, vals[i]};
	}
	ck_assert_msg(!strcmp(ins->item[0].role, "x"), "%s: x first", c->id);
	emu_kin in = {vals[0], c->rows, c->cols, NULL, 0, seed, kt, nt};
	if (emu_run_kernel(k, &pol, c->variant, &in, EMU_BE_FAST, &r, err, errlen) != 0)
		goto out;
	bad = 0;
	*nout = 0;
	for (int i = 0; i < r.out.n; i++) {
		const emu_kout_item *it = &r.out.item[i];
		char target[512];
		snprintf(target, sizeof target, "%s/%s", c->id, it->name);
		const nm_golden_output *o = nm_golden_find(g, target);
		const emu_format *f = emu_format_by_name(it->fmt->name);
		ck_assert_msg(o && f && o->n == it->n, "%s: no record of the same length", target);
		uint32_t *bits = malloc((it->n ? it->n : 1) * sizeof *bits);
		ck_assert(bits != NULL);
		for (size_t j = 0; j < it->n; j++)
			bits[j] = emu_encode(f, emu_kout_d(&r.be, it, j));
		nm_golden_opts opts = {0, NM_GOLDEN_NAN_STRICT};
		nm_golden_report rep;
		ck_assert_msg(nm_golden_compare(g, target, bits, it->n, &opts, &rep, err, errlen) ==
		                  NM_GOLDEN_OK,
		              "%s", err);
		/* bit for bit: the comparison's verdict, and every encoding (NaN
		 * payloads included) */
		bool same = rep.mismatched == 0 && !memcmp(bits, o->expected, it->n * sizeof *bits);
		if (!same && from != X_ALONE && rep.mismatched)
			fprintf(stderr, "%s[%zu]: expected 0x%x, got 0x%x\n", target,
			        rep.mismatches[0].index, (unsigned)rep.mismatches[0].expected,
			        (unsigned)rep.mismatches[0].actual);
		bad += !same;
		++*nout;
		nm_golden_report_free(&rep);
		free(bits);
	}
out:
	emu_run_free(&r);
	for (size_t i = 0; i < ins->n; i++)
		free(vals[i]);
	return bad;
}

/* Does c's seed key stochastic rounding in its kernel (a recipe that rounds
 * stochastically)? Then only the case's seed reproduces it. */
static bool seed_rounds(const nm_golden_case *c)
{
	emu_policy pol;
	char e[256];
	if (emu_policy_parse(c->policy, &pol, e, sizeof e) != EMU_OK)
		return true;
	for (int r = 0; r < EMU_NROLES; r++)
		if (pol.recipe.elem_mode[r] == EMU_SR)
			return true;
	return pol.env.mode == EMU_SR;
}

START_TEST(test_reproduce)
{
	const char *kernel = nm_gold_kernel_at((size_t)_i);
	char path[256], err[512];
	nm_golden *g;
	size_t ncases = 0, nouts = 0, ntensors = 0, nreseeded = 0;

	snprintf(path, sizeof path, "golden/%s.golden", kernel);
	ck_assert_msg(nm_golden_open(path, &g, err, sizeof err) == NM_GOLDEN_OK, "%s", err);
	for (size_t i = 0; i < nm_golden_case_count(g); i++) {
		const nm_golden_case *c = nm_golden_case_at(g, i);
		nm_golden_inputs ins;
		size_t nout = 0;
		ck_assert_msg(nm_golden_case_inputs(g, c->id, &ins, err, sizeof err) ==
		                  NM_GOLDEN_OK,
		              "%s", err);
		for (int from = FROM_VALUES; from <= FROM_ENCODINGS; from++) {
			int bad = run_case(g, c, &ins, from, c->seed, &nout, err, sizeof err);
			ck_assert_msg(bad == 0, "%s from its exported %s: %s", c->id,
			              from == FROM_VALUES ? "values" : "encodings",
			              bad < 0 ? err : "outputs differ from the records");
		}
		if (ins.n > 1 && !seed_rounds(c)) {
			int bad =
			    run_case(g, c, &ins, FROM_VALUES, ~c->seed, &nout, err, sizeof err);
			ck_assert_msg(bad == 0, "%s under another seed: %s", c->id,
			              bad < 0 ? err : "outputs differ: it re-derives an input");
			nreseeded++;
		}
		ncases++;
		nouts += nout;
		ntensors += ins.n;
		nm_golden_inputs_free(&ins);
	}
	nm_golden_close(g);
	ck_assert_msg(ncases > 0, "%s: no cases", path);
	t_count("golden cases reproduced from their exported inputs", ncases);
	t_count("golden outputs reproduced bit for bit from exported inputs", nouts);
	t_count("golden tensors exported (x, dy, target, w, ...)", ntensors);
	t_count("golden cases reproduced under another seed from their tensors", nreseeded);
}
END_TEST

/* Cases whose tensors beyond x the seed draws: x alone under another seed
 * misses them (so the round trip above does prove they were consumed). */
static const char *const seed_drawn[] = {
    "layernorm.twopass.fp16-fp32.safe",   "rmsnorm.plain.bf16-fp32.safe",
    "batchnorm.twopass.fp16-fp32.safe",   "backward.maxsub.fp16-fp32.safe",
    "attention.naive-bwd.bf16-fp32.safe", "attention.fp8-bwd.fp16-fp32.safe",
    "bce.stable.fp16-fp32.safe",          "accum.dot-seq.bf16-fp32.safe",
    "optimizer.adamw.e5m2-fp32.safe",     "optimizer.sgd.bf16-bf16.safe",
};

START_TEST(test_seed_alone_misses)
{
	const char *id = seed_drawn[_i];
	char path[256], err[512], kernel[64];
	nm_golden *g;
	nm_golden_inputs ins;
	size_t nout;

	snprintf(kernel, sizeof kernel, "%.*s", (int)strcspn(id, "."), id);
	snprintf(path, sizeof path, "golden/%s.golden", kernel);
	ck_assert_msg(nm_golden_open(path, &g, err, sizeof err) == NM_GOLDEN_OK, "%s", err);
	const nm_golden_case *c = NULL;
	for (size_t i = 0; i < nm_golden_case_count(g) && !c; i++)
		if (!strcmp(nm_golden_case_at(g, i)->id, id))
			c = nm_golden_case_at(g, i);
	ck_assert_msg(c != NULL, "%s: no case %s", path, id);
	ck_assert_msg(nm_golden_case_inputs(g, id, &ins, err, sizeof err) == NM_GOLDEN_OK, "%s",
	              err);
	ck_assert_msg(ins.n > 1, "%s: only x", id);
	ck_assert_msg(run_case(g, c, &ins, X_ALONE, c->seed, &nout, err, sizeof err) == 0,
	              "%s: x alone under its own seed: %s", id, err);
	int bad = run_case(g, c, &ins, X_ALONE, ~c->seed, &nout, err, sizeof err);
	ck_assert_msg(bad > 0, "%s: x alone under another seed still reproduces it (%s)", id,
	              bad < 0 ? err : "its tensors would go untested");
	nm_golden_inputs_free(&ins);
	nm_golden_close(g);
}
END_TEST

/* What each kernel consumes, by role, as docs/golden.md lists it. */
static const struct {
	const char *id, *roles;
} role_lists[] = {
    {"softmax_ce.naive.fp16-fp16.safe", "x target"},
    {"layernorm.welford.bf16-fp32.safe", "x dy"},
    {"accum.sum-seq.fp16-fp32.safe", "x"},
    {"accum.dot-tc.e4m3-fp32.safe", "x b"},
    {"accum.gradacc.fp16-fp32.safe", "x"},
    {"backward.maxsub.fp16-fp32.safe", "x w target"},
    {"gradscaler.pytorch.fp16-fp32.safe", "x"},
    {"rmsnorm.prescaled.fp16-fp32.safe", "x g dy"},
    {"bce.naive.fp16-fp32.safe", "x target"},
    {"quant.col.nvfp4-grad", "x"},
    {"optimizer.sgd.fp16-fp32.safe", "x grad"},
    {"optimizer.adamw.fp16-fp32.safe", "x grad m v"},
    {"optimizer.adamw_kahan.fp16-fp32.safe", "x grad m v c"},
    {"batchnorm.eval.fp16-fp32.safe", "x gamma beta running_mean running_var dy"},
    {"matmul.seq.fp16-fp32.safe", "x a b"},
    {"attention.online.fp16-fp32.safe", "x q k v"},
    {"attention.online-bwd.fp16-fp32.safe", "x q k v dO"},
};

START_TEST(test_roles)
{
	const char *id = role_lists[_i].id;
	char path[256], err[512], kernel[64], got[256] = "";
	nm_golden *g;
	nm_golden_inputs ins;

	snprintf(kernel, sizeof kernel, "%.*s", (int)strcspn(id, "."), id);
	snprintf(path, sizeof path, "golden/%s.golden", kernel);
	ck_assert_msg(nm_golden_open(path, &g, err, sizeof err) == NM_GOLDEN_OK, "%s", err);
	ck_assert_msg(nm_golden_case_inputs(g, id, &ins, err, sizeof err) == NM_GOLDEN_OK, "%s",
	              err);
	for (size_t i = 0; i < ins.n; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
		         ins.item[i].role);
	ck_assert_msg(!strcmp(got, role_lists[_i].roles), "%s: roles '%s', want '%s'", id, got,
	              role_lists[_i].roles);
	nm_golden_inputs_free(&ins);
	/* an unknown case is NOTFOUND, with its name */
	ck_assert(nm_golden_case_inputs(g, "nope", &ins, err, sizeof err) ==
	          NM_GOLDEN_ERR_NOTFOUND);
	ck_assert_msg(strstr(err, "nope") != NULL, "%s", err);
	ck_assert(ins.n == 0 && ins.item == NULL);
	nm_golden_close(g);
}
END_TEST

Suite *suite_golden_inputs(void)
{
	Suite *s = suite_create("golden_inputs");
	TCase *tc = tcase_create("round_trip");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_reproduce, 0, (int)nm_gold_kernel_count());
	tcase_add_loop_test(tc, test_seed_alone_misses, 0, ARRAY_SIZE(seed_drawn));
	tcase_add_loop_test(tc, test_roles, 0, ARRAY_SIZE(role_lists));
	suite_add_tcase(s, tc);
	return s;
}
