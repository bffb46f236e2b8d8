/*
 * check_kernels.c — every kernel, variant and policy: the fast and the
 * exact-format backends agree bit for bit and flag for flag (per operation
 * kind, and on the first operation that failed) on 1000 random inputs (2000
 * with make test-exhaustive),
 * with magnitudes spread from tiny to overflowing; and the facts the kernels
 * must reproduce from their own arithmetic.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"
#include "tests/lib.h"
#include "emu/io/nm_gen.h"

static const char *const policies[] = {
	"storage=fp16",
	"storage=fp16,compute=fp32",
	"storage=bf16",
	"storage=bf16,compute=fp32",
	"storage=e4m3,compute=fp32",
	"storage=e5m2,compute=fp16,accum=fp32",
	"storage=e4m3,overflow=sat",
	"storage=fp16,round=sr,seed=7",
	"storage=bf16,round=rtz,subnormals=ftzdaz",
	"storage=e4m3,compute=fp32,scale=tensor",
	"storage=e5m2,compute=fp32,scale=delayed:4:1",
	"storage=e4m3,compute=fp32,scale=mx32:floor",
	"storage=e4m3,compute=bf16,scale=mx32:rceil",
	"storage=e4m3,compute=fp32,scale=tile128",
};

/* a step's counters (nsteps is a capacity: a step past it counted nothing) */
static uint64_t step_count(const emu_be_stats *st, size_t s, int k)
{
	if (s >= st->nsteps)
		return 0;
	return k < 0 ? st->step_ops[s] : st->step_flags[s][k];
}

static bool same_stats(const emu_be_stats *a, const emu_be_stats *b)
{
	if (memcmp(a->ops, b->ops, sizeof a->ops) != 0 ||
	    memcmp(a->flags, b->flags, sizeof a->flags) != 0 || a->all_flags != b->all_flags ||
	    a->first_set != b->first_set ||
	    (a->first_set &&
	     (a->first_op != b->first_op || a->first_flags != b->first_flags ||
	      a->first_index != b->first_index || strcmp(a->first_step, b->first_step) != 0)))
		return false;
	for (size_t s = 0; s < a->nsteps || s < b->nsteps; s++)
		for (int k = -1; k < EMU_NFLAGS; k++)
			if (step_count(a, s, k) != step_count(b, s, k))
				return false;
	return true;
}

/* Random input: row r's magnitudes are 2^u with u uniform over a range that
 * runs from far below the format's smallest value to above its largest. */
static void make_input(const emu_policy *p, uint64_t k, double *x, size_t n)
{
	int lo = p->storage.emin - p->storage.p - 2, hi = p->storage.emax + 3;
	uint64_t r0 = t_rand(60, k);
	int center = lo + (int)(r0 % (uint64_t)(hi - lo + 1));
	for (size_t j = 0; j < n; j++) {
		uint64_t r = t_rand(61 + k, j);
		double u = center - 6 + (double)(r % 1200) / 100.0;
		x[j] = ((r >> 40) & 1 ? -1 : 1) * exp2(u);
	}
}

/* Run k on both backends and require the same bits of every output, the
 * same flag counts per op and the same first failing op; `what` names the
 * case in a failure message. false (and nothing compared) when the kernel
 * refuses the policy or variant: then both backends must refuse it. */
static bool same_runs(const emu_kernel *k, const emu_policy *pol, const char *variant,
                      const emu_kin *in, const char *what)
{
	char err[200], err2[200];
	emu_run a, b;
	int ra = emu_run_kernel(k, pol, variant, in, EMU_BE_FAST, &a, err, sizeof err);
	int rb = emu_run_kernel(k, pol, variant, in, EMU_BE_EXACT, &b, err2, sizeof err2);
	ck_assert_msg((ra == 0) == (rb == 0), "%s: fast %s, exact %s", what, ra ? err : "runs",
	              rb ? err2 : "runs");
	if (ra == 0) {
		ck_assert_msg(a.out.n == b.out.n, "%s: output counts", what);
		for (int i = 0; i < a.out.n; i++)
			for (size_t j = 0; j < a.out.item[i].n; j++) {
				const emu_format *f = a.out.item[i].fmt;
				emu_bits ea = emu_encode(f, emu_kout_d(NULL, &a.out.item[i], j));
				emu_bits eb = emu_encode(f, emu_kout_d(NULL, &b.out.item[i], j));
				ck_assert_msg(ea == eb, "%s: %s[%zu]: fast 0x%x exact 0x%x", what,
				              a.out.item[i].name, j, ea, eb);
			}
		ck_assert_msg(same_stats(&a.be.st, &b.be.st), "%s: flags differ", what);
		ck_assert_msg(a.status == b.status, "%s: status %s vs %s", what,
		              emu_run_status_name(a.status), emu_run_status_name(b.status));
	}
	emu_run_free(&a);
	emu_run_free(&b);
	return ra == 0;
}

/* Inputs [c0, c1) of every kernel, variant and policy; _i picks the kernel
 * and policy. make test runs the first FE_INPUTS, test-exhaustive the rest
 * up to FE_INPUTS_EXH (more inputs, not the same ones). */
enum { FE_INPUTS = 1000, FE_INPUTS_EXH = 2000 };

static void fast_equals_exact(int i, int c0, int c1)
{
	const emu_kernel *k = emu_kernel_at((size_t)i / ARRAY_SIZE(policies));
	const char *spec = policies[(size_t)i % ARRAY_SIZE(policies)];
	emu_policy pol;
	char err[200];
	ck_assert_msg(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK, "%s", err);
	enum { ROWS = 2, COLS = 6 };
	double x[ROWS * COLS];
	uint64_t cases = 0;
	for (const char *const *v = k->variants; *v; v++) {
		for (int c = c0; c < c1; c++) {
			make_input(&pol, (uint64_t)c, x, ROWS * COLS);
			emu_kin in = {x, ROWS, COLS, NULL, 0, t_seed(), NULL, 0};
			char what[300];
			snprintf(what, sizeof what, "%s %s [%s] input %d", k->name, *v, spec, c);
			ck_assert_msg(same_runs(k, &pol, *v, &in, what), "%s: refused", what);
			cases++;
		}
	}
	char what[160];
	snprintf(what, sizeof what, "kernels: %s fast == exact (bits, flags per op)", k->name);
	t_count(what, cases);
}

START_TEST(test_fast_equals_exact)
{
	fast_equals_exact(_i, 0, t_quick() ? 40 : FE_INPUTS);
}
END_TEST

START_TEST(test_fast_equals_exact_more)
{
	fast_equals_exact(_i, FE_INPUTS, FE_INPUTS_EXH);
}
END_TEST

/*
 * Random policies, as a user's `nanmap run` draws them: every kernel and
 * variant; storage, compute and (half the time) accum formats, built-in and
 * custom (nosub, noinf, fn, fnuz, none), and the optimizer's grad and state
 * formats (half the time each); every mode (sr with a seed), overflow
 * rule, subnormal option and scale recipe; shapes up to 3 x 64 from the
 * CLI's generator (emu/io/nm_gen.c) with a scale from 1e-8 to 1e6. Case c
 * depends only on (t_seed(), c), and a failure prints the `nanmap run`
 * command that repeats it. Combinations the parser or the kernel refuses are
 * counted, not compared.
 */
static const char *const rp_formats[] = {
	"fp32",          "tf32",          "fp16",          "bf16",
	"e4m3",          "e5m2",          "e4m3fnuz",      "e5m2fnuz",
	"e3m2",          "e2m3",          "e2m1",          "e8m0",
	"{p=5,emax=15}", "{p=4,emax=7}",  "{p=3,emax=15,nosub}", "{p=8,emax=31,noinf}",
	"{p=4,emax=8,nan=fn}", "{p=6,emax=15,nan=fnuz}", "{p=3,emax=4,nan=none}", "{p=11,emax=63}",
};
static const char *const rp_modes[] = {"rne", "rtz", "up", "down", "rna", "sr"};
static const char *const rp_subnormals[] = {"keep", "ftz", "daz", "ftzdaz"};
static const char *const rp_scales[] = {"none",     "tensor",      "delayed",    "mx32:floor",
                                        "mx32:rceil", "tile128",  "nvfp4",      "mxfp8",
                                        "mxfp4:floor", "deepseek", "mxfp6:e3m2", "nvfp4:4over6"};
/* the recipes that store their own element format (storage is left out) */
static bool rp_own_storage(const char *scale)
{
	return !strncmp(scale, "nvfp", 4) || !strncmp(scale, "mxfp", 4) || !strcmp(scale, "deepseek");
}
static const char *const rp_dists[] = {"normal", "uniform", "logspace"};
enum { RP_CHUNK = 100, RP_CHUNKS = 200, RP_CHUNKS_EXH = 20 * RP_CHUNKS };

#define RP_PICK(a, r) (a)[(r) % ARRAY_SIZE(a)]

/* Case c: false when refused (by the parser or the kernel). */
static bool random_policy_case(uint64_t c)
{
	uint64_t r[16];
	for (int i = 0; i < 16; i++)
		r[i] = t_rand(70, c * 16 + (uint64_t)i);
	const emu_kernel *k = emu_kernel_at(r[0] % emu_kernel_count());
	size_t nv = 0;
	while (k->variants[nv])
		nv++;
	const char *variant = k->variants[r[1] % nv];
	char spec[300];
	const char *scale = RP_PICK(rp_scales, r[7]);
	int len = rp_own_storage(scale)
	              ? snprintf(spec, sizeof spec, "role=%s,compute=%s",
	                         (r[2] & 3) == 0 ? "grad" : (r[2] & 3) == 1 ? "weight" : "act",
	                         RP_PICK(rp_formats, r[3]))
	              : snprintf(spec, sizeof spec, "storage=%s,compute=%s",
	                         RP_PICK(rp_formats, r[2]), RP_PICK(rp_formats, r[3]));
	if (r[4] & 1)
		len += snprintf(spec + len, sizeof spec - (size_t)len, ",accum=%s",
		                RP_PICK(rp_formats, r[4] >> 1));
	const char *mode = RP_PICK(rp_modes, r[5]);
	len += snprintf(spec + len, sizeof spec - (size_t)len, ",round=%s", mode);
	if (!strcmp(mode, "sr"))
		len += snprintf(spec + len, sizeof spec - (size_t)len, ",seed=%u",
		                (unsigned)(r[5] >> 8) % 1000);
	len += snprintf(spec + len, sizeof spec - (size_t)len, ",overflow=%s,subnormals=%s",
	                r[6] & 1 ? "sat" : "ieee", RP_PICK(rp_subnormals, r[6] >> 1));
	/* the optimizer's gradient and state formats (other kernels ignore them) */
	if (k == &emu_kernel_optimizer && (r[13] & 1))
		len += snprintf(spec + len, sizeof spec - (size_t)len, ",grad=%s",
		                RP_PICK(rp_formats, r[13] >> 1));
	if (k == &emu_kernel_optimizer && (r[14] & 1))
		len += snprintf(spec + len, sizeof spec - (size_t)len, ",state=%s",
		                RP_PICK(rp_formats, r[14] >> 1));
	if (!strcmp(scale, "delayed"))
		snprintf(spec + len, sizeof spec - (size_t)len, ",scale=delayed:%u:%u",
		         1 + (unsigned)(r[7] >> 8) % 4, (unsigned)(r[7] >> 16) % 3);
	else
		snprintf(spec + len, sizeof spec - (size_t)len, ",scale=%s", scale);
	emu_policy pol;
	char err[200];
	if (emu_policy_parse(spec, &pol, err, sizeof err) != EMU_OK)
		return false;

	nm_gen g = {(nm_gen_dist)(r[8] % ARRAY_SIZE(rp_dists)),
	            pow(10, -8 + 14 * (double)(r[9] >> 11) * 0x1p-53), 0x1p-16, 0x1p16,
	            r[10] % 1000, 0, 0};
	size_t cols = 1 + r[11] % 64, rows = 1 + r[12] % 3;
	double x[3 * 64];
	nm_gen_fill(&g, x, rows * cols);
	emu_kin in = {x, rows, cols, NULL, 0, g.seed, NULL, 0};
	char what[600];
	snprintf(what, sizeof what,
	         "case %" PRIu64 ": nanmap run %s --variant %s --policy '%s' --gen %s --n %zu "
	         "--rows %zu --scale %.17g --seed %" PRIu64 " --backend all --no-truth",
	         c, k->name, variant, spec, rp_dists[g.dist], cols, rows, g.scale, g.seed);
	return same_runs(k, &pol, variant, &in, what);
}

START_TEST(test_random_policies)
{
	uint64_t ran = 0, refused = 0;
	int n = t_quick() ? RP_CHUNK / 10 : RP_CHUNK;
	for (int j = 0; j < n; j++) {
		if (random_policy_case((uint64_t)_i * RP_CHUNK + (uint64_t)j))
			ran++;
		else
			refused++;
	}
	t_count("kernels: random policies fast == exact (bits, flags per op)", ran);
	t_count("kernels: random policies refused (parser or kernel)", refused);
}
END_TEST

/*
 * A Tensor Core GEMM's blocks as lanes (the fast backend's matmul tc runs
 * a row's outputs eight at a time, emu_tc_plan_lanes, and the blocks the
 * lanes leave one by one): 3 × 19 outputs, so that a row has full panels of
 * B and a partial one, k = 40 (blocks of 16, 16 and 8), B read as k × n and
 * as n × k, against the exact backend's MPFR model, every output's bits,
 * every flag count per step and the first failing operation. Inputs from
 * far below the storage format's range to above it: blocks with infinite
 * and NaN operands, tiny and overflowing sums among the lanes.
 */
START_TEST(test_matmul_tc_lanes)
{
	static const char *const specs[] = {"storage=bf16,accum=fp32", "storage=fp16,accum=fp32",
	                                    "storage=fp16", "storage=fp16,compute=fp32,accum=fp32"};
	static const char *const variants[] = {"tc", "tc:h100", "tc:a100", "tc:ada"};
	enum { M = 3, N = 19, K = 40 };
	double x[M * K + K * N];
	uint64_t ran = 0;
	int inputs = t_quick() ? 2 : 12;
	for (size_t s = 0; s < ARRAY_SIZE(specs); s++) {
		emu_policy pol;
		char err[200];
		ck_assert_msg(emu_policy_parse(specs[s], &pol, err, sizeof err) == EMU_OK, "%s", err);
		for (size_t v = 0; v < ARRAY_SIZE(variants); v++)
			for (int bt = 0; bt < 2; bt++)
				for (int c = 0; c < inputs; c++) {
					/* half the inputs within the format's range, where most
					 * blocks are the lanes' */
					make_input(&pol, (uint64_t)(1000 + c), x, ARRAY_SIZE(x));
					if (c % 2)
						for (size_t j = 0; j < ARRAY_SIZE(x); j++)
							x[j] = ldexp(x[j], -(int)round(log2(fabs(x[j]))) +
							                       (int)(j % 9) - 4);
					emu_kparam p[4] = {{"m", M}, {"n", N}, {"k", K}, {"bt", bt}};
					emu_kin in = {x, 1, ARRAY_SIZE(x), p, 4, 1, NULL, 0};
					char what[300];
					snprintf(what, sizeof what, "matmul %s [%s] bt=%d input %d",
					         variants[v], specs[s], bt, c);
					ck_assert_msg(same_runs(&emu_kernel_matmul, &pol, variants[v], &in,
					                        what),
					              "%s: refused", what);
					ran++;
				}
	}
	t_count("kernels: matmul tc 3 x 19 x 40, blocks as lanes, fast == exact", ran);
}
END_TEST

TCase *t_tcase_fast_exact_more(void)
{
	TCase *tc = tcase_create("backends-exhaustive");
	tcase_set_timeout(tc, 0);
	tcase_add_loop_test(tc, test_fast_equals_exact_more, 0,
	                    (int)(emu_kernel_count() * ARRAY_SIZE(policies)));
	return tc;
}

TCase *t_tcase_random_policies(bool exhaustive)
{
	TCase *tc = tcase_create(exhaustive ? "random-policies-exhaustive" : "random-policies");
	tcase_set_timeout(tc, exhaustive ? 0 : 300);
	/* the exhaustive cases follow the default ones: more cases, not the same */
	if (exhaustive)
		tcase_add_loop_test(tc, test_random_policies, RP_CHUNKS, RP_CHUNKS + RP_CHUNKS_EXH);
	else
		tcase_add_loop_test(tc, test_random_policies, 0, RP_CHUNKS);
	return tc;
}

/* Run softmax_ce on one row and return its status and first failing step. */
static emu_run_status softmax_row(const char *spec, const char *variant, double z0, double z1,
                                  const char **first)
{
	emu_policy pol;
	char err[200];
	ck_assert(emu_policy_parse(spec, &pol, err, sizeof err) == EMU_OK);
	double x[2] = {z0, z1};
	emu_kin in = {x, 1, 2, NULL, 0, 1, NULL, 0};
	emu_run r;
	ck_assert(emu_run_kernel(&emu_kernel_softmax_ce, &pol, variant, &in, EMU_BE_FAST, &r, err,
	                         sizeof err) == 0);
	emu_run_status st = r.status;
	*first = r.be.st.first_set ? r.be.st.first_step : "-";
	emu_run_free(&r);
	return st;
}

START_TEST(test_softmax_overflow_boundary)
{
	const char *first;
	/* exp(11.0859375) = 65247.1 < 65520: no overflow; exp(11.09375) = 65758 */
	ck_assert(softmax_row("storage=fp16", "naive", 11.0859375, 0, &first) == EMU_ST_OK);
	emu_run_status st = softmax_row("storage=fp16", "naive", 11.09375, 0, &first);
	ck_assert_msg(st != EMU_ST_OK && strcmp(first, "exp") == 0, "status %s, first %s",
	              emu_run_status_name(st), first);
	/* lse stays finite far beyond, (60000, 0) included */
	ck_assert(softmax_row("storage=fp16", "lse", 11.09375, 0, &first) == EMU_ST_OK);
	st = softmax_row("storage=fp16", "lse", 60000, 0, &first);
	ck_assert_msg(st == EMU_ST_OK || st == EMU_ST_UNDERFLOW, "lse (60000,0): %s",
	              emu_run_status_name(st));
	ck_assert(softmax_row("storage=fp16", "maxsub", 60000, 0, &first) != EMU_ST_NAN);
}
END_TEST

/* A format without a zero (e8m0) may compute: a kernel's sum starts at the
 * constant 0, which is code 0 (2^-127) in both backends (docs/numerics.md),
 * so fast and exact agree in bits and in every flag count. */
START_TEST(test_policy_zeroless_agrees)
{
	static const char *const specs[] = {"storage=e8m0", "storage=fp16,compute=e8m0",
	                                    "storage=fp16,accum=e8m0", "storage=e8m0,compute=fp32"};
	static const double xs[][2] = {{0x1p-127, 0x1p-127}, {1, 2}, {0x1p100, 0x1p-100}};
	for (size_t i = 0; i < ARRAY_SIZE(specs); i++)
		for (size_t k = 0; k < ARRAY_SIZE(xs); k++) {
			emu_policy pol;
			char err[200] = "";
			ck_assert_msg(emu_policy_parse(specs[i], &pol, err, sizeof err) == EMU_OK, "%s: %s",
			              specs[i], err);
			emu_kin in = {xs[k], 1, k == 0 ? 1 : 2, NULL, 0, 1, NULL, 0};
			emu_run f, e;
			ck_assert(emu_run_kernel(&emu_kernel_accum, &pol, "sum:seq", &in, EMU_BE_FAST, &f,
			                         err, sizeof err) == 0);
			ck_assert(emu_run_kernel(&emu_kernel_accum, &pol, "sum:seq", &in, EMU_BE_EXACT, &e,
			                         err, sizeof err) == 0);
			const emu_kout_item *a = &f.out.item[0], *b = &e.out.item[0];
			ck_assert_msg(emu_encode(a->fmt, emu_kout_d(NULL, a, 0)) == emu_encode(b->fmt, emu_kout_d(NULL, b, 0)),
			              "%s case %zu: bits differ", specs[i], k);
			ck_assert_msg(memcmp(f.be.st.flags, e.be.st.flags, sizeof f.be.st.flags) == 0 &&
			                  memcmp(f.be.st.ops, e.be.st.ops, sizeof f.be.st.ops) == 0,
			              "%s case %zu: flag counts differ", specs[i], k);
			emu_run_free(&f);
			emu_run_free(&e);
		}
}
END_TEST

/* Every kernel's step names, as "the first failing op" and the golden
 * files name a step: each unique within the kernel, none one of the
 * engine's load steps, and each listed in the kernel's page
 * (docs/kernels-NAME.md, where it has one) as `name`. */
START_TEST(test_step_names_unique)
{
	emu_be be = {0}; /* only its step table (none) is read: the engine's names */
	for (size_t i = 0; i < emu_kernel_count(); i++) {
		const emu_kernel *k = emu_kernel_at(i);
		ck_assert_msg(k->nsteps == 0 || k->steps, "%s: nsteps without a table", k->name);
		char path[128], *doc = NULL;
		snprintf(path, sizeof path, "docs/kernels-%s.md", k->name);
		FILE *f = fopen(path, "rb");
		if (f) {
			static char buf[1 << 18];
			size_t n = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
			buf[n] = 0;
			doc = buf;
		}
		for (unsigned a = 0; a < k->nsteps; a++) {
			const char *na = k->steps[a];
			ck_assert_msg(na && *na, "%s: step %u has no name", k->name, a);
			for (unsigned b = 0; b < a; b++)
				ck_assert_msg(strcmp(na, k->steps[b]) != 0,
				              "%s: steps %u and %u both named %s", k->name, b, a,
				              na);
			for (unsigned e = 0; e < EMU_STEP0; e++)
				ck_assert_msg(strcmp(na, emu_step_name(&be, e)) != 0,
				              "%s: step %u named %s, as the engine's load step %u",
				              k->name, a, na, e);
			if (doc) {
				char quoted[96];
				snprintf(quoted, sizeof quoted, "`%s`", na);
				ck_assert_msg(strstr(doc, quoted), "%s: step %s is not in %s",
				              k->name, na, path);
			}
		}
	}
}
END_TEST

Suite *suite_kernels(void)
{
	Suite *s = suite_create("kernels");
	TCase *tc = tcase_create("backends");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_fast_equals_exact, 0,
	                    (int)(emu_kernel_count() * ARRAY_SIZE(policies)));
	tcase_add_test(tc, test_softmax_overflow_boundary);
	tcase_add_test(tc, test_matmul_tc_lanes);
	tcase_add_test(tc, test_policy_zeroless_agrees);
	tcase_add_test(tc, test_step_names_unique);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, t_tcase_random_policies(false));
	return s;
}
