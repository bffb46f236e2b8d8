/*
 * check_ops.c — properties of the operations that hold for every format:
 * the value-domain helpers the kernels use agree with the encoding API,
 * add and mul commute (bits and flags), a − b = a + (−b), and every result
 * of every e4m3/e5m2 pair is a valid encoding of the format.
 */
#include <math.h>

#include "lib.h"

START_TEST(test_value_domain)
{
	const char *names[] = {"e4m3", "e5m2", "e2m1", "e4m3fnuz"};
	const emu_format *f = t_fmt(names[_i]);
	emu_env env = EMU_ENV_DEFAULT;
	uint64_t n = 0;
	for (int m = 0; m < EMU_NMODES; m++) {
		env.mode = (emu_mode)m;
		for (emu_bits a = 0; a < (1u << f->bits); a++)
			for (emu_bits b = 0; b < (1u << f->bits); b++) {
				env.index = (a << 8) | b;
				double x = emu_decode(f, a), y = emu_decode(f, b);
				unsigned fl = 0;
				emu_result r = emu_add(f, a, b, &env);
				emu_bits v = emu_encode(f, emu_v_add(f, x, y, &env, &fl));
				ck_assert_msg(v == r.bits && fl == r.flags, "%s add 0x%x 0x%x", f->name, a, b);
				fl = 0;
				r = emu_mul(f, a, b, &env);
				v = emu_encode(f, emu_v_mul(f, x, y, &env, &fl));
				ck_assert_msg(v == r.bits && fl == r.flags, "%s mul 0x%x 0x%x", f->name, a, b);
				fl = 0;
				r = emu_div(f, a, b, &env);
				v = emu_encode(f, emu_v_div(f, x, y, &env, &fl));
				ck_assert_msg(v == r.bits && fl == r.flags, "%s div 0x%x 0x%x", f->name, a, b);
				fl = 0;
				r = emu_fma(f, a, b, a, &env);
				v = emu_encode(f, emu_v_fma(f, x, y, x, &env, &fl));
				ck_assert_msg(v == r.bits && fl == r.flags, "%s fma 0x%x 0x%x", f->name, a, b);
				/* commutativity */
				emu_result p = emu_add(f, a, b, &env), q = emu_add(f, b, a, &env);
				ck_assert_msg(p.bits == q.bits && p.flags == q.flags, "%s add commutes", f->name);
				p = emu_mul(f, a, b, &env);
				q = emu_mul(f, b, a, &env);
				ck_assert_msg(p.bits == q.bits && p.flags == q.flags, "%s mul commutes", f->name);
				n += 6;
			}
	}
	t_count("ops: value domain == encodings, commutativity", n);
}
END_TEST

START_TEST(test_neighbours)
{
	/* next_up walks every finite value of fp16 in increasing order */
	const emu_format *f = t_fmt("fp16");
	emu_bits b = 0xfbff; /* -max */
	double prev = emu_decode(f, b);
	int steps = 0;
	for (;;) {
		emu_bits n = emu_next_up(f, b);
		if (n == b || emu_decode(f, n) == INFINITY)
			break;
		double v = emu_decode(f, n);
		ck_assert_msg(v > prev || (v == 0 && prev == 0), "next_up 0x%x -> 0x%x", b, n);
		ck_assert_msg(emu_next_down(f, n) == b || (v == 0 && prev == 0) ||
		                  emu_decode(f, emu_next_down(f, n)) == prev,
		              "next_down(0x%x) != 0x%x", n, b);
		prev = v;
		b = n;
		steps++;
	}
	ck_assert_msg(b == 0x7bff && steps > 60000, "ended at 0x%x after %d", b, steps);
}
END_TEST

/* The array path (branch-free RNE) equals element-by-element rounding. */
START_TEST(test_array_paths)
{
	const emu_format *f = emu_format_at(_i);
	enum { N = 4096 };
	static double x[N];
	static emu_bits a[N];
	uint64_t total = 0;
	for (int rep = 0; rep < (t_quick() ? 4 : 64); rep++) {
		for (int i = 0; i < N; i++) {
			uint64_t r = t_rand(50 + rep, (uint64_t)i);
			int e = f->emin - f->p - 3 + (int)((r >> 53) % (uint64_t)(f->emax - f->emin + f->p + 7));
			x[i] = ((r >> 52) & 1 ? -1 : 1) * ldexp(1 + (double)(r & ((1ull << 52) - 1)) * 0x1p-52, e);
			if (r % 97 == 0) /* short significands: exact values and ties */
				x[i] = ldexp(floor(ldexp(x[i], 20 - e)), e - 20 + (int)(r % 3));
		}
		x[0] = INFINITY, x[1] = -INFINITY, x[2] = NAN, x[3] = 0.0, x[4] = -0.0, x[5] = 1e-310;
		x[6] = f->max, x[7] = -f->max * (1 + f->epsilon / 2), x[8] = f->min_normal;
		for (int v = 0; v < 16; v++) {
			emu_env env = EMU_ENV_DEFAULT;
			env.sat = v & 1;
			env.ftz = (v >> 1) & 1;
			env.daz = (v >> 2) & 1;
			env.mode = v >> 3 ? EMU_SR : EMU_RNE; /* the two vectorised modes */
			env.seed = t_seed();
			env.index = (uint64_t)rep << 20;
			unsigned all = emu_round_array(f, x, a, N, &env), want = 0;
			for (int i = 0; i < N; i++) {
				emu_env e1 = env;
				e1.index = env.index + (uint64_t)i;
				emu_result r = emu_from_double(f, x[i], &e1);
				want |= r.flags;
				ck_assert_msg(r.bits == a[i], "%s x=%a sat=%d ftz=%d: array 0x%x scalar 0x%x",
				              f->name, x[i], env.sat, env.ftz, a[i], r.bits);
			}
			ck_assert_msg(all == want, "%s: array flags %x, scalar %x", f->name, all, want);
			total += N;
		}
	}
	t_count("ops: array rounding path == scalar path", total);
}
END_TEST

Suite *suite_ops(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("properties");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_value_domain, 0, 4);
	tcase_add_test(tc, test_neighbours);
	tcase_add_loop_test(tc, test_array_paths, 0, (int)emu_format_count());
	suite_add_tcase(s, tc);
	return s;
}
