/*
 * truth_exp.h — the TRUTH backend's exponential (truth_exp.c).
 */
#ifndef NANMAP_TRUTH_EXP_H
#define NANMAP_TRUTH_EXP_H

#include <stdbool.h>

#include <mpfr.h>

/* d = exp(x) rounded to nearest: always the number mpfr_exp(d, x, MPFR_RNDN)
 * gives (its ternary value is not kept); faster when d has 256 bits, x at
 * most 256 and 2^-60 <= |x| < 2^20. */
void emu_truth_exp(mpfr_ptr d, mpfr_srcptr x);

/* For the tests: its approximation before rounding, exp(x) ≈ Y · 2^k with
 * Y in [1, 4) (Y needs 320 bits), claimed within 2^-299 of exp(x) / 2^k;
 * false where emu_truth_exp calls mpfr_exp for any d. */
bool emu_truth_exp_approx(mpfr_ptr Y, long *k, mpfr_srcptr x);

#endif
