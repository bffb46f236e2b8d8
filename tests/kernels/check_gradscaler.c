/*
 * check_gradscaler.c — the GradScaler simulation (emu/kernels/gradscaler.c):
 *  - against a literal transcription of PyTorch's C++ update kernel in
 *    hardware float/double, bit for bit, on random settings and trajectories;
 *  - always-inf gradients take 2^16 to exactly 0.0, first after step 166;
 *    a zero scale then lets NaN gradients through (0·inf), as the kernel does;
 *  - an fp16 gradient of 10 settles at 4096 (defined in test_fp16_settles);
 *  - defaults, conservative settings (2048, 1.5, 1000), refused growth;
 *  - underflow counts, trajectories and trajectory files.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/kernels/gradscaler.h"
#include "tests/lib.h"

/* ck_assert reports every passing check to the runner (a write each); the
 * loops below use this instead. */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)

static uint32_t fbits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

static float bitsf(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof x);
	return x;
}

static emu_gs_config config(double init, double growth, double backoff, int32_t interval,
                            const char *fmt)
{
	emu_gs_config c;
	emu_gs_config_default(&c);
	c.init_scale = init;
	c.growth_factor = growth;
	c.backoff_factor = backoff;
	c.growth_interval = interval;
	c.grad_format = fmt ? t_fmt(fmt) : NULL;
	return c;
}

static emu_gs_step *run_const(const emu_gs_config *c, double g, size_t n)
{
	double *gm = malloc(n * sizeof *gm);
	emu_gs_step *out = malloc(n * sizeof *out);
	ck_assert(gm && out);
	emu_gs_traj t = {.kind = EMU_GS_CONST, .g = g};
	char err[200];
	ck_assert(emu_gs_traj_fill(&t, gm, n, err, sizeof err) == EMU_GS_OK);
	ck_assert_msg(emu_gs_simulate(c, gm, n, out, err, sizeof err) == EMU_GS_OK, "%s", err);
	free(gm);
	return out;
}

START_TEST(test_defaults)
{
	emu_gs_config c;
	emu_gs_config_default(&c);
	ck_assert(c.init_scale == 65536.0 && c.growth_factor == 2.0 && c.backoff_factor == 0.5);
	ck_assert_int_eq(c.growth_interval, 2000);
	ck_assert(c.grad_format == NULL && c.n_elems == 1);
	emu_gs_state s;
	emu_gs_init(&c, &s);
	ck_assert_uint_eq(s.scale, 0x47800000u); /* 2^16 */
	ck_assert_int_eq(s.tracker, 0);
	c = config(2048, 1.5, 0.5, 1000, NULL);
	emu_gs_init(&c, &s);
	ck_assert_uint_eq(s.scale, 0x45000000u); /* 2^11 */
	/* init_scale is stored as fp32(init_scale), as torch.full(..., float32) */
	c.init_scale = 0.1;
	emu_gs_init(&c, &s);
	ck_assert_uint_eq(s.scale, fbits(0.1f));
	t_count("gradscaler: settings checks", 4);
}
END_TEST

static const struct {
	double growth, backoff;
	int32_t interval;
	size_t n;
	double spread;
	const char *word;
} bad_configs[] = {
    {1.0, 0.5, 10, 1, 0, "growth_factor"},   {NAN, 0.5, 10, 1, 0, "growth_factor"},
    {0.5, 0.5, 10, 1, 0, "growth_factor"},   {2.0, 1.0, 10, 1, 0, "backoff_factor"},
    {2.0, NAN, 10, 1, 0, "backoff_factor"},  {2.0, 0.5, 0, 1, 0, "growth_interval"},
    {2.0, 0.5, -3, 1, 0, "growth_interval"}, {2.0, 0.5, 10, 0, 0, "n_elems"},
    {2.0, 0.5, 10, 4, -1, "spread"},         {2.0, 0.5, 10, 4, INFINITY, "spread"},
};

START_TEST(test_bad_configs)
{
	emu_gs_config c = config(65536, bad_configs[_i].growth, bad_configs[_i].backoff,
	                         bad_configs[_i].interval, NULL);
	c.n_elems = bad_configs[_i].n;
	c.spread = bad_configs[_i].spread;
	char err[200] = "";
	double g = 1;
	emu_gs_step st;
	ck_assert_int_eq(emu_gs_simulate(&c, &g, 1, &st, err, sizeof err), EMU_GS_ERR_CONFIG);
	ck_assert_msg(strstr(err, bad_configs[_i].word), "message '%s' lacks %s", err,
	              bad_configs[_i].word);
	t_count("gradscaler: settings checks", 1);
}
END_TEST

/*
 * The reference: PyTorch's code transcribed literally in hardware float and
 * double (x86-64 SSE: IEEE single and double, no excess precision):
 *   inv_scale = self._scale.double().reciprocal().float()
 *   unscale:   found_inf |= !isfinite(val); val * inv_scale (float)
 *   _amp_update_scale_cpu_kernel (see emu/kernels/gradscaler.c).
 * The scaled gradient g·scale is exact in double here (g has 24 bits), so
 * (float)(g * scale) is the single rounding the simulation makes.
 */
typedef struct {
	float scale;
	int tracker;
} ref_state;

static void ref_step(ref_state *s, double g, double growth, double backoff, int interval,
                     float *inv, bool *found, float *unscaled)
{
	*inv = (float)(1.0 / (double)s->scale);
	float val = (float)(g * (double)s->scale);
	*found = !isfinite(val);
	*unscaled = *inv == 1.f ? val : val * *inv;
	if (*found) {
		s->scale = (float)(s->scale * backoff);
		s->tracker = 0;
	} else {
		int successful = s->tracker + 1;
		if (successful == interval) {
			float new_scale = (float)(s->scale * growth);
			if (isfinite(new_scale))
				s->scale = new_scale;
			s->tracker = 0;
		} else {
			s->tracker = successful;
		}
	}
}

START_TEST(test_against_pytorch_code)
{
	static const double growths[] = {2.0, 1.5, 1.1, 3.0, 1.0001, 4.0, 1.0 + 0x1p-30};
	static const double backoffs[] = {0.5, 0.25, 0.9, 0.1, 0.0, -0.5, 0.999};
	const int runs = t_quick() ? 200 : 2000, steps = 400;
	uint64_t checked = 0;
	double *gm = malloc(steps * sizeof *gm);
	emu_gs_step *out = malloc(steps * sizeof *out);
	ck_assert(gm && out);
	for (int r = 0; r < runs; r++) {
		uint64_t k = t_rand(100, (uint64_t)r);
		double growth = growths[k % ARRAY_SIZE(growths)];
		double backoff = backoffs[(k >> 8) % ARRAY_SIZE(backoffs)];
		int interval = 1 + (int)((k >> 16) % 12);
		/* an init scale anywhere in fp32's range, subnormals included */
		double init =
		    ldexp(1.0 + (double)((k >> 24) % 1024) / 1024, (int)((k >> 40) % 288) - 160);
		emu_gs_config c = config(init, growth, backoff, interval, NULL);
		for (int t = 0; t < steps; t++) {
			uint64_t u = t_rand(101, (uint64_t)r * steps + (uint64_t)t);
			/* a float magnitude; sometimes inf or NaN */
			gm[t] = (double)ldexpf(1.0f + (float)(u & 0x7fffff) * 0x1p-23f,
			                       (int)((u >> 23) % 200) - 100);
			if ((u >> 40) % 50 == 0)
				gm[t] = INFINITY;
			else if ((u >> 40) % 50 == 1)
				gm[t] = NAN;
		}
		char err[200];
		ck_assert_msg(emu_gs_simulate(&c, gm, steps, out, err, sizeof err) == EMU_GS_OK,
		              "%s", err);
		ref_state s = {(float)init, 0};
		for (int t = 0; t < steps; t++) {
			float inv, unscaled;
			bool found;
			uint32_t before = fbits(s.scale);
			ref_step(&s, gm[t], growth, backoff, interval, &inv, &found, &unscaled);
			const emu_gs_step *o = &out[t];
			CHECK(o->scale == before && o->inv_scale == fbits(inv) &&
			          o->found_inf == found && o->skipped == found &&
			          o->scale_next == fbits(s.scale) && o->tracker == s.tracker,
			      "run %d step %d (growth %g backoff %g interval %d init %a g %a): "
			      "sim scale %08x inv %08x found %d next %08x tracker %d; "
			      "pytorch code %08x %08x %d %08x %d",
			      r, t + 1, growth, backoff, interval, init, gm[t], o->scale,
			      o->inv_scale, o->found_inf, o->scale_next, o->tracker, before,
			      fbits(inv), found, fbits(s.scale), s.tracker);
			/* an unscaled value the check missed is one the kernel let through */
			CHECK(o->n_undetected == (size_t)(!found && !isfinite(unscaled)),
			      "run %d step %d: undetected %zu", r, t + 1, o->n_undetected);
			checked++;
		}
	}
	free(gm);
	free(out);
	t_count("gradscaler: steps equal to PyTorch's kernel code in hardware float", checked);
}
END_TEST

/* The usual factors make the double product exact: one fp32 multiply. */
START_TEST(test_factor_is_one_fp32_multiply)
{
	const emu_format *f = t_fmt("fp32");
	const emu_env rne = EMU_ENV_DEFAULT;
	static const double exact[] = {2.0, 0.5, 1.5, 0.25, 4.0};
	uint64_t n = 0, differ = 0;
	for (uint64_t i = 0; i < 200000; i++) {
		emu_bits s = (emu_bits)(t_rand(110, i) & 0x7fffffffu);
		if (!isfinite(emu_gs_value(s)))
			continue;
		for (size_t j = 0; j < ARRAY_SIZE(exact); j++) {
			emu_gs_config c = config(1, exact[j] > 1 ? exact[j] : 2.0,
			                         exact[j] < 1 ? exact[j] : 0.5, 1, NULL);
			emu_gs_state st = {s, 0, 0};
			emu_gs_update(&c, &st, exact[j] < 1, NULL, NULL);
			emu_result m = emu_mul(f, s, emu_gs_fp32(exact[j]), &rne);
			bool inf = emu_classify(f, m.bits) == EMU_CLASS_INF;
			CHECK(st.scale == (inf ? s : m.bits), "%08x * %g: %08x vs emu_mul %08x", s,
			      exact[j], st.scale, m.bits);
			n++;
		}
		/* 1.1 is not exact in double: its double product is what counts */
		emu_gs_config c = config(1, 1.1, 0.5, 1, NULL);
		emu_gs_state st = {s, 0, 0};
		emu_gs_update(&c, &st, false, NULL, NULL);
		emu_result m = emu_mul(f, s, emu_gs_fp32(1.1), &rne);
		if (emu_classify(f, m.bits) != EMU_CLASS_INF && st.scale != m.bits)
			differ++;
	}
	ck_assert_msg(differ > 0, "growth 1.1: the double product never differed from fp32 ·");
	t_count("gradscaler: factor products equal to one fp32 multiply", n);
}
END_TEST

START_TEST(test_inf_reaches_zero)
{
	emu_gs_config c;
	emu_gs_config_default(&c);
	const size_t n = 300;
	double gm[300];
	emu_gs_step out[300];
	char err[200];
	emu_gs_traj t = {.kind = EMU_GS_INF};
	ck_assert(emu_gs_traj_fill(&t, gm, n, err, sizeof err) == EMU_GS_OK);
	ck_assert(emu_gs_simulate(&c, gm, n, out, err, sizeof err) == EMU_GS_OK);
	size_t first_zero = 0;
	for (size_t i = 0; i < n; i++) {
		ck_assert(out[i].found_inf && out[i].skipped && out[i].tracker == 0);
		ck_assert(out[i].n_overflow == 1);
		if (!first_zero && out[i].scale_next == 0)
			first_zero = out[i].step;
		if (first_zero)
			ck_assert_uint_eq(out[i].scale_next, 0); /* 0 · 0.5 stays 0 */
		else
			/* every halving before is exact */
			ck_assert(emu_gs_value(out[i].scale_next) ==
			          ldexp(1.0, 16 - (int)out[i].step));
	}
	ck_assert_uint_eq(first_zero, 166);
	ck_assert_uint_eq(out[164].scale_next, 0x00000001u); /* after 165: 2^-149, nonzero */
	ck_assert_uint_eq(out[165].scale, 0x00000001u);
	/* why: 2^-150 is half the smallest subnormal, a tie, and 0 is even */
	ck_assert_uint_eq(emu_gs_fp32(0x1p-150), 0);
	ck_assert_uint_eq(emu_gs_fp32(0x1.8p-150), 1);
	/* the same from another start: 2^k reaches 0 after k + 150 steps */
	for (int k = -149; k <= 127; k += 23) {
		emu_gs_config d = config(ldexp(1.0, k), 2.0, 0.5, 2000, NULL);
		emu_gs_state s;
		emu_gs_init(&d, &s);
		int steps = 0;
		while (s.scale != 0) {
			emu_gs_step_one(&d, &s, INFINITY);
			steps++;
		}
		ck_assert_int_eq(steps, k + 150);
	}
	t_count("gradscaler: always-inf steps", n);
}
END_TEST

/* Once the scale is 0, inv_scale = fp32(1/0) = inf; the scaled gradients are
 * finite zeros, so the kernel (which checks its input) finds nothing, and
 * the optimizer receives 0·inf = NaN. The scale never leaves 0. */
START_TEST(test_zero_scale_lets_nan_through)
{
	emu_gs_config c = config(0x1p-149, 2.0, 0.5, 3, NULL);
	c.n_elems = 64;
	emu_gs_state s;
	emu_gs_init(&c, &s);
	emu_gs_step r = emu_gs_step_one(&c, &s, INFINITY);
	ck_assert(r.skipped && r.scale_next == 0);
	for (int i = 0; i < 10; i++) {
		r = emu_gs_step_one(&c, &s, 1.0);
		ck_assert_uint_eq(r.inv_scale, 0x7f800000u);
		ck_assert(!r.found_inf && !r.skipped);
		ck_assert_uint_eq(r.n_undetected, 64);
		ck_assert_uint_eq(r.scale_next, 0);
		if (r.tracker == 0)
			ck_assert(r.grew); /* 0 · 2 = 0 is finite: "grows" to 0 */
	}
	t_count("gradscaler: zero-scale steps", 11);
}
END_TEST

/*
 * "Settles at 4096": with fp16 gradients whose largest element is 10 and
 * growth interval 5, from the first unskipped step s0 on
 *  - every unskipped step runs with scale 4096 (40960 fits fp16),
 *  - every skipped step runs with 8192 (81920 >= 65520 overflows fp16) and
 *    its backoff leaves exactly 4096,
 *  - skips come exactly every interval + 1 steps: interval unskipped steps
 *    at 4096, the growth to 8192, one skipped step.
 * Before s0 only skipped steps, each halving the scale from 2^16.
 */
static void check_settles(int32_t interval, size_t n, size_t *s0_out, size_t *nskip)
{
	emu_gs_config c = config(65536, 2.0, 0.5, interval, "fp16");
	emu_gs_step *out = run_const(&c, 10.0, n);
	size_t s0 = 0, last_skip = 0, skips = 0;
	for (size_t i = 0; i < n; i++) {
		const emu_gs_step *o = &out[i];
		double sc = emu_gs_value(o->scale);
		if (!s0 && !o->skipped)
			s0 = o->step;
		if (!s0) {
			CHECK(emu_gs_value(o->scale_next) == sc / 2, "step %zu", (size_t)o->step);
			continue;
		}
		if (o->skipped) {
			CHECK(sc == 8192 && emu_gs_value(o->scale_next) == 4096,
			      "step %zu: skipped at %g -> %g", (size_t)o->step, sc,
			      emu_gs_value(o->scale_next));
			if (last_skip)
				ck_assert_uint_eq(o->step - last_skip, (uint64_t)interval + 1);
			else
				ck_assert_uint_eq(o->step - s0, (uint64_t)interval);
			last_skip = o->step;
			skips++;
		} else {
			CHECK(sc == 4096, "step %zu: unskipped at %g", (size_t)o->step, sc);
		}
	}
	*s0_out = s0;
	*nskip = skips;
	free(out);
}

START_TEST(test_fp16_settles)
{
	size_t s0, skips;
	check_settles(5, 600, &s0, &skips);
	ck_assert_uint_eq(s0, 5); /* 65536, 32768, 16384, 8192 overflow */
	ck_assert_uint_eq(skips, (600 - 5 + 1) / 6);
	/* the defaults (interval 2000): skips at 1-4, 2005, 4006, 6007, 8008 */
	check_settles(2000, 10000, &s0, &skips);
	ck_assert_uint_eq(s0, 5);
	ck_assert_uint_eq(skips, 4);
	/* the fp16 threshold: scale·G overflows iff it is >= 65520 */
	emu_gs_config c = config(4096, 2.0, 0.5, 5, "fp16");
	emu_gs_state s;
	emu_gs_init(&c, &s);
	ck_assert(!emu_gs_step_one(&c, &s, 65519.0 / 4096).found_inf);
	emu_gs_init(&c, &s);
	ck_assert(emu_gs_step_one(&c, &s, 65520.0 / 4096).found_inf);
	t_count("gradscaler: settle steps", 10600);
}
END_TEST

/* With fp32 gradients the same G = 10 and interval 1 climbs to the fp32
 * ceiling instead: 2^125·10 overflows fp32, 2^124·10 does not. */
START_TEST(test_fp32_ceiling)
{
	emu_gs_config c = config(65536, 2.0, 0.5, 1, NULL);
	emu_gs_step *out = run_const(&c, 10.0, 300);
	size_t first = 0;
	for (size_t i = 0; i < 300; i++) {
		if (out[i].skipped && !first) {
			first = out[i].step;
			ck_assert(emu_gs_value(out[i].scale) == 0x1p125);
		}
		if (first)
			CHECK(emu_gs_value(out[i].scale) == (out[i].skipped ? 0x1p125 : 0x1p124),
			      "step %zu", i + 1);
	}
	ck_assert_uint_eq(first, 110); /* 109 growths from 2^16 */
	free(out);
	t_count("gradscaler: fp32 ceiling steps", 300);
}
END_TEST

/* Conservative settings: init 2048, growth 1.5, interval 1000, fp16, G = 10.
 * 2048·1.5^3 = 6912 is the first scale with scale·10 >= 65520: the first
 * skip is step 3001. Growth 1.5 and backoff 0.5 have no 2-cycle: the scale
 * keeps wandering, the value after each backoff staying in [3276, 4914). */
START_TEST(test_conservative)
{
	emu_gs_config c = config(2048, 1.5, 0.5, 1000, "fp16");
	const size_t n = 40000;
	emu_gs_step *out = run_const(&c, 10.0, n);
	size_t first = 0;
	double lo = INFINITY, hi = 0;
	for (size_t i = 0; i < n; i++) {
		double sc = emu_gs_value(out[i].scale);
		/* skipped iff the fp16 gradient overflowed: fp32(10·scale) >= 65520 */
		double prod = (double)(float)(10.0 * sc);
		CHECK(out[i].skipped == (prod >= 65520), "step %zu: scale %g skipped %d", i + 1, sc,
		      out[i].skipped);
		if (out[i].skipped) {
			if (!first) {
				first = out[i].step;
				ck_assert(sc == 6912 && emu_gs_value(out[i].scale_next) == 3456);
			}
			double b = emu_gs_value(out[i].scale_next);
			lo = fmin(lo, b);
			hi = fmax(hi, b);
		}
	}
	ck_assert_uint_eq(first, 3001);
	ck_assert_msg(lo >= 3276 && hi < 4914 && hi > lo, "after backoff: [%g, %g]", lo, hi);
	free(out);
	t_count("gradscaler: conservative-setting steps", n);
}
END_TEST

START_TEST(test_growth_refused)
{
	/* 2^127 · 2 = 2^128 is inf in fp32: refused, tracker reset */
	emu_gs_config c = config(0x1p127, 2.0, 0.5, 1, NULL);
	emu_gs_state s;
	emu_gs_init(&c, &s);
	emu_gs_step r = emu_gs_step_one(&c, &s, 1e-30);
	ck_assert(!r.skipped && r.growth_refused && !r.grew);
	ck_assert_uint_eq(r.scale_next, 0x7f000000u);
	ck_assert_int_eq(r.tracker, 0);
	/* growth 1.5 grows once (1.5·2^127 < FLT_MAX), then 2.25·2^127 is refused */
	c = config(0x1p127, 1.5, 0.5, 1, NULL);
	emu_gs_init(&c, &s);
	r = emu_gs_step_one(&c, &s, 1e-30);
	ck_assert(r.grew && emu_gs_value(r.scale_next) == 0x1.8p127);
	r = emu_gs_step_one(&c, &s, 1e-30);
	ck_assert(r.growth_refused && emu_gs_value(r.scale_next) == 0x1.8p127);
	/* the rounding boundary: (2 - 2^-24)·2^127 is the tie between FLT_MAX and
	 * 2^128 and rounds to even, inf: refused; (2 - 2^-23)·2^127 = FLT_MAX */
	c = config(0x1p127, 2.0 - 0x1p-24, 0.5, 1, NULL);
	emu_gs_init(&c, &s);
	r = emu_gs_step_one(&c, &s, 1e-30);
	ck_assert(r.growth_refused && r.scale_next == 0x7f000000u);
	c = config(0x1p127, 2.0 - 0x1p-23, 0.5, 1, NULL);
	emu_gs_init(&c, &s);
	r = emu_gs_step_one(&c, &s, 1e-30);
	ck_assert(r.grew && r.scale_next == fbits(FLT_MAX));
	/* growth with the interval not yet reached: nothing, tracker counts */
	c = config(0x1p127, 2.0, 0.5, 3, NULL);
	emu_gs_init(&c, &s);
	ck_assert_int_eq(emu_gs_step_one(&c, &s, 1e-30).tracker, 1);
	ck_assert_int_eq(emu_gs_step_one(&c, &s, 1e-30).tracker, 2);
	r = emu_gs_step_one(&c, &s, 1e-30);
	ck_assert(r.growth_refused && r.tracker == 0);
	ck_assert(bitsf(r.scale_next) == 0x1p127f);
	t_count("gradscaler: growth-refusal checks", 9);
}
END_TEST

/* Underflow in the backward pass: with fp16 gradients, an element is lost
 * when fp16(fp32(g·scale)) is 0, i.e. |g·scale| <= 2^-25 (the tie goes to
 * 0); a larger scale never loses more. */
START_TEST(test_underflow_counts)
{
	const size_t n = t_quick() ? 4000 : 20000;
	size_t prev = n + 1;
	static const double scales[] = {1.0, 0x1p10, 0x1p16, 0x1p20, 0x1p24};
	for (size_t j = 0; j < ARRAY_SIZE(scales); j++) {
		emu_gs_config c = config(scales[j], 2.0, 0.5, 2000, "fp16");
		c.n_elems = n;
		c.spread = 6;
		c.seed = t_seed();
		emu_gs_state s;
		emu_gs_init(&c, &s);
		emu_gs_step r = emu_gs_step_one(&c, &s, 1e-3);
		size_t lo = 0, hi = 0;
		for (size_t i = 0; i < n; i++) {
			double a = fabs(emu_gs_element(&c, 1, i, 1e-3)) * scales[j];
			lo += a <= 0x1p-25;
			hi += a <= 0x1p-25 * (1 + 0x1p-23);
		}
		ck_assert_msg(lo <= r.n_underflow && r.n_underflow <= hi,
		              "scale %g: %zu lost, expected %zu..%zu", scales[j], r.n_underflow, lo,
		              hi);
		ck_assert(r.n_underflow <= prev);
		ck_assert(r.frac_underflow == (double)r.n_underflow / (double)n);
		ck_assert(!r.found_inf && r.n_overflow == 0);
		prev = r.n_underflow;
	}
	ck_assert_uint_eq(prev, 0); /* at 2^24 nothing is lost in the backward pass */
	/* fp32 gradients lose nothing at this range */
	emu_gs_config c = config(65536, 2.0, 0.5, 2000, NULL);
	c.n_elems = 1000;
	c.spread = 8;
	emu_gs_state s;
	emu_gs_init(&c, &s);
	emu_gs_step r = emu_gs_step_one(&c, &s, 1e-3);
	ck_assert(r.n_underflow == 0 && r.n_unscale_underflow == 0);
	/* an fp16 backward at 2^16 loses nothing; unscaling back into fp16 loses
	 * what the scale saved (why PyTorch keeps .grad in fp32), fp32 .grad
	 * keeps it */
	c = config(65536, 2.0, 0.5, 2000, "fp16");
	c.n_elems = n;
	c.spread = 6;
	c.seed = t_seed();
	emu_gs_init(&c, &s);
	emu_gs_step h = emu_gs_step_one(&c, &s, 1e-3);
	c.master_format = t_fmt("fp32");
	emu_gs_init(&c, &s);
	emu_gs_step m = emu_gs_step_one(&c, &s, 1e-3);
	ck_assert(h.n_underflow == 0 && m.n_underflow == 0);
	ck_assert_msg(h.n_unscale_underflow > n / 200, "fp16 .grad lost only %zu",
	              h.n_unscale_underflow);
	ck_assert_uint_eq(m.n_unscale_underflow, 0);
	t_count("gradscaler: gradient elements", ARRAY_SIZE(scales) * n + 1000 + 2 * n);
}
END_TEST

START_TEST(test_trajectories)
{
	enum { N = 20000 };
	static double a[N], b[N];
	char err[200];
	emu_gs_traj t = {
	    .kind = EMU_GS_SPIKES, .g = 1.0, .spike = INFINITY, .first = 3, .period = 4};
	ck_assert(emu_gs_traj_fill(&t, a, 16, err, sizeof err) == EMU_GS_OK);
	for (int i = 0; i < 16; i++)
		ck_assert(a[i] == ((i >= 3 && (i - 3) % 4 == 0) ? INFINITY : 1.0));
	t.period = 0;
	ck_assert(emu_gs_traj_fill(&t, a, 16, err, sizeof err) == EMU_GS_OK);
	for (int i = 0; i < 16; i++)
		ck_assert(a[i] == (i == 3 ? INFINITY : 1.0));
	/* drift: seeded, reproducible, log increments ~ N(0, sigma^2) */
	t = (emu_gs_traj){.kind = EMU_GS_DRIFT, .g = 10.0, .sigma = 0.05, .seed = t_seed()};
	ck_assert(emu_gs_traj_fill(&t, a, N, err, sizeof err) == EMU_GS_OK);
	ck_assert(emu_gs_traj_fill(&t, b, N, err, sizeof err) == EMU_GS_OK);
	ck_assert(memcmp(a, b, sizeof a) == 0);
	ck_assert(a[0] == 10.0);
	double sum = 0, sq = 0;
	for (int i = 1; i < N; i++) {
		CHECK(a[i] > 0 && isfinite(a[i]), "drift %d: %g", i, a[i]);
		double d = log(a[i] / a[i - 1]);
		sum += d;
		sq += d * d;
	}
	double mean = sum / (N - 1), sd = sqrt(sq / (N - 1) - mean * mean);
	ck_assert_msg(fabs(mean) < 6 * 0.05 / sqrt(N) && fabs(sd / 0.05 - 1) < 0.05,
	              "drift increments: mean %g sd %g", mean, sd);
	t.seed ^= 1;
	ck_assert(emu_gs_traj_fill(&t, b, N, err, sizeof err) == EMU_GS_OK);
	ck_assert(memcmp(a, b, sizeof a) != 0);
	/* a spike schedule through the simulation: a spike step is always skipped */
	t = (emu_gs_traj){
	    .kind = EMU_GS_SPIKES, .g = 1e-2, .spike = NAN, .first = 10, .period = 37};
	ck_assert(emu_gs_traj_fill(&t, a, 2000, err, sizeof err) == EMU_GS_OK);
	emu_gs_config c = config(65536, 2.0, 0.5, 20, "fp16");
	emu_gs_step *out = malloc(2000 * sizeof *out);
	ck_assert(emu_gs_simulate(&c, a, 2000, out, err, sizeof err) == EMU_GS_OK);
	for (size_t i = 10; i < 2000; i += 37)
		ck_assert(out[i].skipped && out[i].tracker == 0);
	free(out);
	/* bad trajectories */
	static const emu_gs_traj bad[] = {
	    {.kind = EMU_GS_CONST, .g = -1},
	    {.kind = EMU_GS_CONST, .g = -0.0},
	    {.kind = EMU_GS_DRIFT, .g = 0},
	    {.kind = EMU_GS_DRIFT, .g = INFINITY},
	    {.kind = EMU_GS_DRIFT, .g = 1, .sigma = -1},
	    {.kind = EMU_GS_SPIKES, .g = 1, .spike = -INFINITY},
	    {.kind = EMU_GS_NKINDS, .g = 1},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		ck_assert(emu_gs_traj_fill(&bad[i], a, 4, err, sizeof err) == EMU_GS_ERR_CONFIG);
		ck_assert(strstr(err, "trajectory") != NULL);
	}
	t_count("gradscaler: trajectory values", 2 * N + 2032);
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	ck_assert(fp != NULL);
	fputs(text, fp);
	fclose(fp);
}

static const struct {
	const char *text;
	emu_gs_status st;
	const char *msg; /* after the path */
} files[] = {
    {"# largest |grad| per step\n1.5\n\n  inf \nNaN\n0x1p-3\r\n0\n2e-300\n", EMU_GS_OK, ""},
    {"1\n2\nabc\n", EMU_GS_ERR_PARSE, ":3: 'abc': not a number"},
    {"1\n-1\n", EMU_GS_ERR_PARSE, ":2: '-1': negative"},
    {"1e999\n", EMU_GS_ERR_PARSE, ":1: '1e999': beyond the double range"},
    {"1 2\n", EMU_GS_ERR_PARSE, ":1: '1 2': not a number"},
    {"# nothing\n\n", EMU_GS_ERR_PARSE, ": no values"},
    {"-inf\n", EMU_GS_ERR_PARSE, ":1: '-inf': negative"},
};

START_TEST(test_traj_file)
{
	char path[] = "/tmp/nanmap-gs-XXXXXX";
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	close(fd);
	write_file(path, files[_i].text);
	double *v = NULL;
	size_t n = 0;
	char err[300] = "";
	emu_gs_status st = emu_gs_traj_read(path, &v, &n, err, sizeof err);
	ck_assert_int_eq(st, files[_i].st);
	if (st == EMU_GS_OK) {
		ck_assert_uint_eq(n, 6);
		ck_assert(v[0] == 1.5 && isinf(v[1]) && isnan(v[2]) && v[3] == 0.125);
		ck_assert(v[4] == 0 && !signbit(v[4]) && v[5] == 2e-300);
	} else {
		char want[400];
		snprintf(want, sizeof want, "%s%s", path, files[_i].msg);
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "got '%s', want '%s...'", err,
		              want);
		ck_assert(v == NULL && n == 0);
	}
	free(v);
	remove(path);
	ck_assert_int_eq(emu_gs_traj_read(path, &v, &n, err, sizeof err), EMU_GS_ERR_IO);
	ck_assert(strncmp(err, path, strlen(path)) == 0);
	t_count("gradscaler: trajectory files", 1);
}
END_TEST

Suite *suite_gradscaler(void)
{
	Suite *s = suite_create("gradscaler");
	TCase *tc = tcase_create("scaler");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_defaults);
	tcase_add_loop_test(tc, test_bad_configs, 0, ARRAY_SIZE(bad_configs));
	tcase_add_test(tc, test_against_pytorch_code);
	tcase_add_test(tc, test_factor_is_one_fp32_multiply);
	tcase_add_test(tc, test_inf_reaches_zero);
	tcase_add_test(tc, test_zero_scale_lets_nan_through);
	tcase_add_test(tc, test_fp16_settles);
	tcase_add_test(tc, test_fp32_ceiling);
	tcase_add_test(tc, test_conservative);
	tcase_add_test(tc, test_growth_refused);
	tcase_add_test(tc, test_underflow_counts);
	suite_add_tcase(s, tc);
	TCase *tt = tcase_create("trajectories");
	tcase_add_test(tt, test_trajectories);
	tcase_add_loop_test(tt, test_traj_file, 0, ARRAY_SIZE(files));
	suite_add_tcase(s, tt);
	return s;
}
