/*
 * truth_exp.c — TRUTH's exponential, the same bits as mpfr_exp at
 * EMU_TRUTH_PREC bits in a tenth of its time.
 *
 * Softmax rows of 32,000 classes spend most of their truth runs in exp. For
 * an argument x of at most 256 bits with |x| < 2^20 (everything a kernel
 * meets), exp(x) = 2^k · exp(r) is computed in fixed point with F = 316
 * fraction bits (five limbs):
 *   - r = x − k·ln 2 in [0, 1): x is exact in fixed point; ln 2 is held to
 *     384 bits, so k·ln 2 is off by less than 2^-F after truncation;
 *   - exp(r) = exp(j1/2^8) · exp(j2/2^16) · exp(j3/2^24) · exp(s), the j's
 *     r's next three bytes (three tables of 256 values rounded to F bits),
 *     s < 2^-24, and exp(s) the Taylor polynomial of degree 11 by Horner
 *     (the next term, s^12/12!, is below 2^-316.8 = 0.57u).
 * With u = 2^-F: r is off by at most 1.01u (k·ln 2's truncation, and
 * |k|·2^-384 for |k| < 2^21), which moves exp(r) < e by under 2.75u; a
 * table value or coefficient is off by u/2; a product (tx_mul) by under
 * 1.01u, and Horner's step n by up to 2^(24n − 6)u more (its early steps
 * leave out low columns, their errors multiplied by s^n). exp(s) is then
 * within 2.3u, and the three products of values below 4 take the total to
 * under 16u = 2^-312, so the result Y in [1, 4) is within
 * 2^-299 of exp(r). mpfr_can_round then decides whether Y's rounding to
 * 256 bits is exp(r)'s (exp(r) is never a 257-bit number for r ≠ 0, so a
 * bracket free of 257-bit values fixes the nearest 256-bit one); when it
 * cannot (about once in 2^40 arguments) or x is outside the fast path,
 * mpfr_exp computes it. The result is therefore always mpfr_exp's.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "emu/engine/truth_exp.h"

#define TX_L 5   /* limbs of a fixed-point value */
#define TX_F 316 /* its fraction bits */
#define TX_TB 8  /* bits of r each table takes */
#define TX_DEG 11

static mp_limb_t tx_tab[3][1 << TX_TB][TX_L]; /* exp(j / 2^(8t + 8)) */
static mp_limb_t tx_coef[TX_DEG + 1][TX_L];   /* 1/n! */
static mp_limb_t tx_ln2[6];                   /* ln 2 · 2^384 */
static pthread_once_t tx_once = PTHREAD_ONCE_INIT;

/* v · 2^frac rounded to an integer of `limbs` limbs (v >= 0, small) */
static void tx_fixed(mp_limb_t *o, mpfr_srcptr v, int frac, size_t limbs)
{
	mpfr_t t;
	mpz_t z;
	mpfr_init2(t, mpfr_get_prec(v));
	mpfr_mul_2si(t, v, frac, MPFR_RNDN); /* exact */
	mpz_init(z);
	mpfr_get_z(z, t, MPFR_RNDN);
	memset(o, 0, limbs * sizeof *o);
	size_t cnt;
	mpz_export(o, &cnt, -1, sizeof *o, 0, 0, z);
	mpz_clear(z);
	mpfr_clear(t);
}

static void tx_init(void)
{
	mpfr_t v;
	mpfr_init2(v, 512);
	for (int t = 0; t < 3; t++)
		for (long j = 0; j < (1 << TX_TB); j++) {
			mpfr_set_si_2exp(v, j, -TX_TB * (t + 1), MPFR_RNDN);
			mpfr_exp(v, v, MPFR_RNDN);
			tx_fixed(tx_tab[t][j], v, TX_F, TX_L);
		}
	for (unsigned long n = 0; n <= TX_DEG; n++) {
		mpfr_set_ui(v, 1, MPFR_RNDN);
		for (unsigned long i = 2; i <= n; i++)
			mpfr_div_ui(v, v, i, MPFR_RNDN);
		tx_fixed(tx_coef[n], v, TX_F, TX_L);
	}
	mpfr_const_log2(v, MPFR_RNDN);
	tx_fixed(tx_ln2, v, 384, 6);
	mpfr_clear(v);
}

typedef unsigned __int128 tx_u128;

/*
 * o = a · b in units of 2^-F, truncated (a · b < 2^(5·64 − F)), from the
 * limb products of columns c0 and up only (i + j >= c0; c0 a constant where
 * the call is inlined). Each product's halves add into their columns'
 * 128-bit sums without carries (ten values below 2^64 at most a column),
 * which are carried once at the end. The products left out sum below
 * c0 · 2^(64·c0 + 64) and take o down by less than c0 · 2^(64·c0 − 252)
 * units: 2^-58 for c0 = 3, which every product but Horner's early steps
 * uses; the truncation adds less than one unit.
 */
static inline __attribute__((always_inline)) void tx_mul(mp_limb_t *o, const mp_limb_t *a,
                                                          const mp_limb_t *b, int c0)
{
	tx_u128 col[2 * TX_L + 1] = {0};
#pragma GCC unroll 5
	for (int i = 0; i < TX_L; i++)
#pragma GCC unroll 5
		for (int j = 0; j < TX_L; j++) {
			if (i + j < c0)
				continue;
			tx_u128 t = (tx_u128)a[i] * b[j];
			col[i + j] += (uint64_t)t;
			col[i + j + 1] += (uint64_t)(t >> 64);
		}
	uint64_t p[2 * TX_L] = {0};
	tx_u128 carry = 0;
#pragma GCC unroll 10
	for (int c = c0; c < 2 * TX_L; c++) {
		carry += col[c];
		p[c] = (uint64_t)carry;
		carry >>= 64;
	}
	const unsigned sh = TX_F % 64; /* F = 4·64 + sh: o[k] from columns 4+k, 5+k */
#pragma GCC unroll 5
	for (int k = 0; k < TX_L; k++)
		o[k] = p[k + 4] >> sh | p[k + 5] << (64 - sh);
}

/* o = a + b (the sums stay below 2^(5·64)) */
static inline void tx_add(mp_limb_t *o, const mp_limb_t *a, const mp_limb_t *b)
{
	tx_u128 carry = 0;
#pragma GCC unroll 5
	for (int k = 0; k < TX_L; k++) {
		carry += (tx_u128)a[k] + b[k];
		o[k] = (mp_limb_t)carry;
		carry >>= 64;
	}
}

/* The first column Horner's step n needs: its error is multiplied by
 * s^n < 2^(-24n) in the result, so it may be up to 2^(24n − 6) units
 * (c0 · 2^(64·c0 − 252) <= 2^(24n − 6), tx_mul's bound). */
static inline __attribute__((always_inline)) int tx_c0(int n)
{
	int c0 = 3;
	while (c0 < 8 && (c0 + 1) * 64 + 4 <= 24 * n + 246)
		c0++;
	return c0;
}

/* r = x − k·ln 2 in units of 2^-F (8 limbs), for |x|·2^F = X; false if
 * negative */
static bool tx_reduce(mp_limb_t *R, const mp_limb_t *X, bool xneg, long k)
{
	mp_limb_t P[7], K[8] = {0};
	unsigned long ak = k < 0 ? 0UL - (unsigned long)k : (unsigned long)k;
	P[6] = mpn_mul_1(P, tx_ln2, 6, ak);
	mpn_rshift(K, P + 1, 6, 384 - TX_F - 64); /* |k|·ln 2 · 2^F, truncated */
	bool kneg = k < 0;
	if (xneg != kneg) { /* ±(|x| + |k| ln 2) */
		mpn_add_n(R, X, K, 8);
		return !xneg;
	}
	int c = mpn_cmp(X, K, 8); /* ±(|x| − |k| ln 2) */
	if (c >= 0) {
		mpn_sub_n(R, X, K, 8);
		return !xneg || c == 0;
	}
	mpn_sub_n(R, K, X, 8);
	return xneg;
}

/* exp(x) ≈ y · 2^(k − F), y in [2^F, 2^(F+2)) within 32 units of its last
 * place (the file's comment); false outside the fast path */
static bool tx_approx(mpfr_srcptr x, mp_limb_t *y, long *kp)
{
	if (!mpfr_regular_p(x) || mpfr_get_prec(x) > 256)
		return false;
	long ex = (long)mpfr_get_exp(x);
	if (ex > 20 || ex < -60) /* |x| >= 2^20, or below 2^-60: not here */
		return false;
	pthread_once(&tx_once, tx_init);

	/* X = |x| · 2^F: the significand's nx limbs shifted left */
	size_t nx = (size_t)(mpfr_get_prec(x) + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS;
	const mp_limb_t *xm = mpfr_custom_get_significand((mpfr_ptr)x);
	mp_limb_t X[8] = {0}, R[8];
	long sh = ex - 64 * (long)nx + TX_F; /* >= 0: ex >= -60, nx <= 4 */
	size_t q = (size_t)sh / 64;
	unsigned b = (unsigned)(sh % 64);
	if (b)
		X[q + nx] = mpn_lshift(X + q, xm, nx, b);
	else
		memcpy(X + q, xm, nx * sizeof *xm);
	bool xneg = mpfr_signbit(x) != 0;
	long k = (long)floor(mpfr_get_d(x, MPFR_RNDN) / 0.6931471805599453);
	while (!tx_reduce(R, X, xneg, k))
		k--;
	if (R[5] | R[6] | R[7] || R[4] >> (TX_F % 64)) /* r >= 1 */
		return false;

	/* r's three bytes below the point, and s = the rest */
	unsigned j[3];
	for (int t = 0; t < 3; t++) {
		int at = TX_F - TX_TB * (t + 1);
		mp_limb_t w = R[at / 64] >> (at % 64);
		if (at % 64 > 64 - TX_TB)
			w |= R[at / 64 + 1] << (64 - at % 64);
		j[t] = (unsigned)w & ((1u << TX_TB) - 1);
	}
	mp_limb_t S[TX_L], P[TX_L], tmp[TX_L];
	memcpy(S, R, sizeof S);
	int at = TX_F - 3 * TX_TB;
	S[at / 64] &= ((mp_limb_t)1 << (at % 64)) - 1;
	for (int i = at / 64 + 1; i < TX_L; i++)
		S[i] = 0;
	memcpy(P, tx_coef[TX_DEG], sizeof P); /* exp(s) by Horner */
#pragma GCC unroll 16
	for (int n = TX_DEG - 1; n >= 0; n--) {
		tx_mul(tmp, S, P, tx_c0(n));
		tx_add(P, tx_coef[n], tmp);
	}
	tx_mul(y, tx_tab[0][j[0]], tx_tab[1][j[1]], 3);
	tx_mul(tmp, y, tx_tab[2][j[2]], 3);
	tx_mul(y, tmp, P, 3);
	*kp = k;
	return true;
}

bool emu_truth_exp_approx(mpfr_ptr Y, long *k, mpfr_srcptr x)
{
	mp_limb_t y[TX_L];
	if (!tx_approx(x, y, k))
		return false;
	mpz_t z;
	mpz_roinit_n(z, y, TX_L);
	mpfr_set_z_2exp(Y, z, -TX_F, MPFR_RNDN);
	return true;
}

void emu_truth_exp(mpfr_ptr d, mpfr_srcptr x)
{
	mp_limb_t y[TX_L];
	long k;
	if (mpfr_get_prec(d) != 256 || mpfr_get_emin() > -(1L << 22) ||
	    mpfr_get_emax() < (1L << 22) || !tx_approx(x, y, &k)) {
		mpfr_exp(d, x, MPFR_RNDN);
		return;
	}
	/* Y = y · 2^-F in [1, 4), as a 320-bit MPFR number */
	int lz = __builtin_clzll(y[TX_L - 1]); /* 2 or 3 */
	mpn_lshift(y, y, TX_L, (unsigned)lz);
	mpfr_t Y;
	mpfr_custom_init_set(Y, MPFR_REGULAR_KIND, (mpfr_exp_t)(TX_L * 64 - lz - TX_F), TX_L * 64,
	                     y);
	if (!mpfr_can_round(Y, mpfr_get_exp(Y) + 299, MPFR_RNDN, MPFR_RNDZ, 257)) {
		mpfr_exp(d, x, MPFR_RNDN);
		return;
	}
	mpfr_set(d, Y, MPFR_RNDN);
	mpfr_mul_2si(d, d, k, MPFR_RNDN); /* exact: far inside the exponent range */
}
