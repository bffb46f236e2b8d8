/* Shared fixtures for the Check suites: one suite per module, added in main.c. */
#ifndef NANMAP_TESTS_LIB_H
#define NANMAP_TESTS_LIB_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include "emu/core/emu.h"

/* Check records where every passing assertion is (a write(2) each: the
 * last place a test reached is what a crash or a timeout reports), and the
 * suites' loops assert millions of times. A passing assertion here records
 * its place only the first time it is reached among the last 16 places
 * recorded, so a loop's assertions cost a write each once: a crash is
 * still reported after the last new place it passed. */
static inline void t_mark_point(const char *file, int line)
{
	static _Thread_local struct {
		const char *file;
		int line;
	} seen[16];
	static _Thread_local unsigned next;
	for (unsigned i = 0; i < 16; i++)
		if (seen[i].line == line && seen[i].file == file)
			return;
	seen[next % 16].file = file;
	seen[next % 16].line = line;
	next++;
	_mark_point(file, line);
}
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                                   \
	((expr) ? t_mark_point(__FILE__, __LINE__)                                                 \
	        : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed",            \
	                            ##__VA_ARGS__))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* A test's description: a format name (up to 63 characters) and a sentence. */
#define T_WHAT_LEN 192

/* The run's seed: NANMAP_SEED or the fixed default; printed once by main. */
uint64_t t_seed(void);
/* true when NANMAP_QUICK is set (asan runs): suites shrink their loops. */
int t_quick(void);
/* Counter-based 64-bit random number for (seed, stream, i). */
uint64_t t_rand(uint64_t stream, uint64_t i);
/* A built-in format that must exist. */
const emu_format *t_fmt(const char *name);
/* Record how many cases a suite proved (printed in the summary). */
void t_count(const char *what, uint64_t n);
/* A test that cannot run here (missing data, CPU feature): prints
 * "SUITE: SKIPPED REASON" and counts it, so the closing line says K skipped;
 * called inside a test (which then returns) or by a suite for a test case it
 * does not add. */
void t_skip(const char *suite, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The kernels' random-policy proof (check_kernels.c): the cases of make test,
 * or (exhaustive, for suite_exhaustive) 20 times as many that follow them. */
TCase *t_tcase_random_policies(bool exhaustive);
/* The per-kernel fast == exact proof's further inputs (check_kernels.c): make
 * test takes each kernel, variant and policy on 300 inputs, suite_exhaustive
 * on the next 700. */
TCase *t_tcase_fast_exact_more(void);

/* emu_truth_exp against mpfr_exp on n arguments of a stream, and its
 * approximation's error (check_engine.c): how many fail, the first written
 * into first; *fast: how many took the fast path. */
uint64_t t_truth_exp_cases(uint64_t stream, uint64_t n, uint64_t *fast, char *first, size_t len);

Suite *suite_format(void);
Suite *suite_train(void);
/* bench/train_native.c against emu_train (tests/train/check_native.c) */
Suite *suite_native(void);
Suite *suite_round(void);
Suite *suite_ops(void);
Suite *suite_aops(void);
Suite *suite_mpfr(void);
Suite *suite_sr(void);
Suite *suite_hw(void);
Suite *suite_parse(void);
Suite *suite_exhaustive(void);
Suite *suite_gradscaler(void);
Suite *suite_npy(void);
Suite *suite_safetensors(void);
Suite *suite_kernels(void);
Suite *suite_backward(void);
Suite *suite_layernorm(void);
Suite *suite_rmsnorm(void);
Suite *suite_bce(void);
Suite *suite_quant(void);
Suite *suite_optimizer(void);
Suite *suite_batchnorm(void);
Suite *suite_matmul(void);
Suite *suite_attention(void);
Suite *suite_accum(void);
Suite *suite_tc(void);
Suite *suite_tcscaled(void);
Suite *suite_golden(void);
Suite *suite_golden_inputs(void);
Suite *suite_kinputs(void);
Suite *suite_rows(void);
Suite *suite_gpuhost(void);
Suite *suite_gputab(void);
Suite *suite_point(void);
Suite *suite_thresh(void);
Suite *suite_case(void);
Suite *suite_file(void);
Suite *suite_plot(void);
Suite *suite_claims(void);
Suite *suite_metrics(void);
Suite *suite_engine(void);
Suite *suite_buf(void);
Suite *suite_specialize(void);
Suite *suite_qstream(void);
Suite *suite_recipe(void);

#endif
