/*
 * aops.c — arithmetic over arrays of format values (the value domain:
 * doubles that hold values of f), exact and with flags, for every mode,
 * overflow rule and subnormal option.
 *
 * Two paths, one result (tests/core/check_aops.c proves them equal, bits and
 * flags, to the scalar operations):
 *  - generic: element i goes through the proven scalar operation under
 *    env with index env->index + i (emu_v_* for add, sub, mul, div, fma,
 *    as the kernel engine's fast backend; encodings and emu_apply for the unary ops
 *    and min/max; emu_v_from_double for cvt);
 *  - fast: round-to-nearest-even (and SR for p <= 20) without ftz or daz
 *    (sat too, but for the transcendentals), formats with sign, zero and
 *    subnormals, p <= 25, for cvt (a double rounded once), add, sub, mul,
 *    div, sqrt and fma: r = a op b in binary64 (innocuous double rounding,
 *    docs/numerics.md), its exact error term for the inexact flag; for fma
 *    the exact a·b + c as r + e (TwoSum) rounded to odd at 53 bits; then r
 *    rounded to f with masks, no branch on data, overflow included. exp,
 *    log, exp2, rsqrt in rne: f(x) in binary64 within a proven error bound,
 *    kept when both ends of the interval round alike (a Ziv check). An
 *    element it cannot decide (an operand or r not finite, a square root
 *    below 2^emin, an interval across a rounding boundary) is counted, found
 *    again in a second look over its chunk (IEEE specials decided there for
 *    add, sub, mul, div, sqrt and cvt) and the rest redone by the generic
 *    path. Unit strides and the broadcasts of the kernels' maps get loops
 *    of their own.
 *  - emu_a_fold, a sequential chain, takes the fast path's step (min and
 *    max: a compare) with a branch around the rare cases instead of masks.
 */
#include <fenv.h>
#include <float.h>

#include "emu/core/internal.h"

/* A result encoding read back as the value domain holds it: a NaN keeps
 * the encoding's sign (as backend.c's decode). */
static double value_of(const emu_format *f, emu_bits b)
{
	double v = emu_decode(f, b);
	return isnan(v) && f->nan != EMU_NAN_FNUZ && (b & f->sign_mask) ? -v : v;
}

/* DAZ in the value domain (as backend.c): subnormal values of f are read
 * as zeros of their sign. */
static double daz_value(const emu_format *f, double x)
{
	return x != 0 && fabs(x) < f->min_normal ? copysign(0.0, x) : x;
}

double emu_a_element(emu_op op, const emu_format *f, double x, double y, double z,
                     const emu_env *env, unsigned *fl)
{
	if (env->daz && op >= EMU_OP_ADD && op <= EMU_OP_FMA) {
		x = daz_value(f, x);
		y = daz_value(f, y);
		z = daz_value(f, z);
	}
	switch (op) {
	case EMU_OP_CVT:
		return emu_v_from_double(f, x, env, fl);
	case EMU_OP_ADD:
		return emu_v_add(f, x, y, env, fl);
	case EMU_OP_SUB:
		return emu_v_sub(f, x, y, env, fl);
	case EMU_OP_MUL:
		return emu_v_mul(f, x, y, env, fl);
	case EMU_OP_DIV:
		return emu_v_div(f, x, y, env, fl);
	case EMU_OP_FMA:
		return emu_v_fma(f, x, y, z, env, fl);
	default: {
		int ar = emu_op_arity(op);
		emu_bits args[3] = {emu_encode(f, x), ar > 1 ? emu_encode(f, y) : 0, 0};
		emu_result r = emu_apply(op, f, NULL, args, env);
		*fl |= r.flags;
		return value_of(f, r.bits);
	}
	}
}

#define MASK(c) (-(uint64_t)(c))
#define SEL(m, x, y) (((x) & (m)) | ((y) & ~(m)))
#define CHUNK 2048

struct fconsts {
	uint64_t low, half_m1, max_d, minnorm_d, fnuz;
	uint64_t ovf_d; /* what an overflow gives: inf, NaN or max (and under sat) */
	double magic;
	int S;
	double inv_quantum; /* 2^-(emin-p+1): below 2^emin, units of the quantum */
	double quantum;
	uint64_t seed;
	bool spec; /* spec_chunk may decide this format's specials */
	bool f32;  /* binary32 without sat, float subnormals kept: round_f32 may round */
};

/* The draw of emu_sr_bits (round.c), inline so that the loop vectorises;
 * the tests prove every SR element equal to the scalar op. */
static inline __attribute__((always_inline)) uint32_t a_sr_bits(uint64_t seed, uint64_t index)
{
	return emu_sr_draw(seed, index);
}

/* r (binary64, finite) rounded to f in RNE: the p-bit rounding of its
 * magnitude bits (the carry runs into the exponent), or below 2^emin the
 * FPU's rounding of |r| + 2^(emin-p+1+52) to the quantum. ix: the rounding
 * was inexact; tiny: the p-bit rounding with unbounded exponent is below
 * 2^emin; big: above max, the result then is the format's overflow value. */
static inline __attribute__((always_inline)) double
round_rne(const struct fconsts *c, double r, uint64_t *ix, uint64_t *tiny, uint64_t *big)
{
	const int S = c->S;
	uint64_t b = emu_dbits(r);
	uint64_t a = b & 0x7fffffffffffffffull;
	uint64_t sign = b & 0x8000000000000000ull;
	uint64_t rn = (a + c->half_m1 + ((a >> S) & 1)) & ~c->low;
	uint64_t m_sub = MASK(a < c->minnorm_d);
	double ax = emu_bitsd(a & m_sub);
	double y = (ax + c->magic) - c->magic;
	uint64_t res = SEL(m_sub, emu_dbits(y), rn);
	*ix = res != a;
	*tiny = rn < c->minnorm_d;
	*big = rn > c->max_d;
	res = SEL(MASK(*big), c->ovf_d, res);
	/* fnuz has no -0: a zero result is +0 */
	res |= sign & ~(c->fnuz & MASK(res == 0));
	return emu_bitsd(res);
}

/* round_rne for a chain of dependent steps (a fold): the common case (r
 * normal in f, no overflow) by its few integer operations alone, the rest
 * by round_rne, so that only the taken path is on the chain's latency;
 * the same results and outputs as round_rne. */
static inline __attribute__((always_inline)) double
round_rne_chain(const struct fconsts *c, double r, uint64_t *ix, uint64_t *tiny, uint64_t *big)
{
	/* on the sign-magnitude bits as they are: the carry of a normal r's
	 * rounding stays below the sign bit (rn <= max_d is checked) */
	uint64_t b = emu_dbits(r);
	uint64_t rn = (b + c->half_m1 + ((b >> c->S) & 1)) & ~c->low;
	uint64_t a = b & 0x7fffffffffffffffull;
	if (__builtin_expect(a >= c->minnorm_d && (rn & 0x7fffffffffffffffull) <= c->max_d, 1)) {
		*ix = rn != b;
		*tiny = 0;
		*big = 0;
		return emu_bitsd(rn);
	}
	return round_rne(c, r, ix, tiny, big);
}

/* r (binary64, finite, rounded to odd at 53 bits) rounded to f in SR with
 * the draw u, as the core does: away from zero iff the top 32 discarded
 * bits exceed u (or equal it with anything below). S >= 33 (p <= 20), so
 * those 32 bits and the sticky rest lie inside r. Below 2^emin |r| is
 * scaled (exactly) into units of the quantum and split there. Outputs as
 * round_rne. */
static inline __attribute__((always_inline)) double
round_sr(const struct fconsts *c, double r, uint32_t u, uint64_t *ix, uint64_t *tiny, uint64_t *big)
{
	const int S = c->S;
	uint64_t b = emu_dbits(r);
	uint64_t a = b & 0x7fffffffffffffffull;
	uint64_t sign = b & 0x8000000000000000ull;
	uint64_t disc = a & c->low;
	/* in 64-bit lanes, and no conversion between doubles and 64-bit or
	 * unsigned integers, which AVX2 has no vector form of: the loop
	 * vectorises without AVX-512 too */
	int64_t uu = (int64_t)u;
	int64_t f32 = (int64_t)(disc >> (S - 32));
	uint64_t rest = (disc & ((1ull << (S - 32)) - 1)) != 0;
	uint64_t up = (uint64_t)(f32 > uu) | ((uint64_t)(f32 == uu) & rest);
	uint64_t rn = (a & ~c->low) + (up << S);
	uint64_t m_sub = MASK(a < c->minnorm_d);
	double q = emu_bitsd(a & m_sub) * c->inv_quantum; /* < 2^(p-1) */
	double qf = (double)(int32_t)q;
	double fr = q - qf;
	/* away iff the fraction's top 32 bits exceed u, or equal it with more
	 * below: iff fr·2^32 > u (u < 2^52: exact as 2^52 + u less 2^52) */
	double ud = emu_bitsd((uint64_t)uu | 0x4330000000000000ull) - 0x1p52;
	uint64_t ups = fr * 0x1p32 > ud;
	double ys = (qf + emu_bitsd(MASK(ups) & emu_dbits(1.0))) * c->quantum;
	uint64_t res = SEL(m_sub, emu_dbits(ys), rn);
	*ix = SEL(m_sub, (uint64_t)(fr != 0), (uint64_t)(disc != 0));
	*tiny = rn < c->minnorm_d;
	*big = rn > c->max_d;
	res = SEL(MASK(*big), c->ovf_d, res);
	res |= sign & ~(c->fnuz & MASK(res == 0));
	return emu_bitsd(res);
}

/* round_sr for a chain (as round_rne_chain): r normal in f and its SR
 * rounding below overflow by the integer split alone, the rest by
 * round_sr; the same results and outputs. */
static inline __attribute__((always_inline)) double round_sr_chain(const struct fconsts *c,
                                                                   double r, uint32_t u,
                                                                   uint64_t *ix, uint64_t *tiny,
                                                                   uint64_t *big)
{
	const int S = c->S;
	uint64_t b = emu_dbits(r);
	uint64_t a = b & 0x7fffffffffffffffull;
	uint64_t disc = a & c->low;
	uint32_t f32 = (uint32_t)(disc >> (S - 32));
	uint64_t rest = (disc & ((1ull << (S - 32)) - 1)) != 0;
	uint64_t up = (uint64_t)(f32 > u) | ((uint64_t)(f32 == u) & rest);
	uint64_t rn = (a & ~c->low) + (up << S);
	if (__builtin_expect(a >= c->minnorm_d && rn <= c->max_d, 1)) {
		*ix = disc != 0;
		*tiny = 0;
		*big = 0;
		return emu_bitsd(rn | (b & 0x8000000000000000ull));
	}
	return round_sr(c, r, u, ix, tiny, big);
}

/* round_rne for binary32 (c->f32: no sat) by the CPU's conversion, which
 * rounds r (finite) to nearest even into binary32, subnormals and overflow
 * to infinity included (the FPU rounds to nearest: fast_ok; FTZ and DAZ
 * clear in MXCSR: c->f32 asks). Tiny: r's 24-bit rounding with
 * unbounded exponent is below 2^-126, i.e. |r| < 2^-126 − 2^-151 (the
 * midpoint rounds to the even 2^-126). The same value and outputs as
 * round_rne on r, in a few instructions. */
static inline __attribute__((always_inline)) double round_f32(double r, uint64_t *ix,
                                                              uint64_t *tiny, uint64_t *big)
{
	double v = (double)(float)r;
	*ix = v != r;
	*tiny = fabs(r) < 0x1p-126 - 0x1p-151;
	*big = fabs(v) > FLT_MAX;
	return v;
}

/* r replaced by the exact value r + d rounded to odd at 53 bits, where d is
 * known by whether it is nonzero (nz) and its sign bit (dneg): the
 * truncation is r, or its neighbour toward zero when d points there, and
 * the last bit is set when inexact (Boldo & Melquiond 2008). */
static inline __attribute__((always_inline)) double to_odd(double r, uint64_t nz, uint64_t dneg)
{
	uint64_t rb = emu_dbits(r);
	uint64_t toward = nz & (dneg ^ (rb >> 63));
	return emu_bitsd((rb - toward) | nz);
}

#define FIN(x) ((emu_dbits(x) & 0x7fffffffffffffffull) < 0x7ff0000000000000ull)

/* ---- exp, log, exp2, rsqrt, log1p: a Ziv check in binary64 (docs/numerics.md) ----
 * y = f(x) is computed in binary64 with a relative error below 2^-46 (the
 * bounds are derived below each function); the exact value then lies
 * strictly between lo and hi, y's magnitude TR_K units of the last place
 * down and up (at least 2^8 · 2^-53 · |lo| = 2^-45 |lo| away from y). Rounding
 * is monotone, so when lo and hi round to the same value with the same
 * tininess and overflow, so does the exact value, which is irrational
 * (exp, exp2 of a non-integer, log of x != 1; rsqrt of x != 4^k is either
 * irrational or a non-dyadic rational, never a midpoint): inexact, with
 * underflow when tiny. The exact cases (exp(±0), exp2(n), log(1),
 * rsqrt(4^k)) are computed exactly and rounded once. Anything else (NaN,
 * infinities, zeros and negatives where the function is special, huge
 * arguments, and the about 2^(p-44) of inputs whose interval straddles a
 * rounding boundary) is left to the scalar op. */
#define TR_K 256
#define IS_TR(op)                                                                                  \
	((op) == EMU_OP_EXP || (op) == EMU_OP_LOG || (op) == EMU_OP_EXP2 || (op) == EMU_OP_RSQRT ||   \
	 (op) == EMU_OP_LOG1P)

/* 2^k's binade offset: round-to-nearest integer of t by adding 1.5·2^52 */
#define TR_SHIFT 0x1.8p52
/* fdlibm's ln2_hi (its low 21 bits are zero: k·LN2_HI is exact for
 * |k| < 2^21) and ln2_lo, |ln2 - LN2_HI - LN2_LO| < 2^-84 */
#define TR_LN2_HI 0x1.62e42feep-1
#define TR_LN2_LO 0x1.a39ef35793c76p-33
#define TR_INV_LN2 0x1.71547652b82fep0
#define TR_LN2 0x1.62e42fefa39efp-1

/* e^r for |r| <= 0.3466: Taylor to degree 13 (coefficients 1/k! rounded to
 * double; 13! < 2^53, so each quotient is one correct rounding). Error:
 * remainder |r|^14/14!·e^|r| < 2^-56.7 relative; coefficients 2^-53·e^|r|
 * absolute; Horner's rounding (Higham, ASNA §5.1) gamma_26·Σ|c_k||r|^k
 * <= 26·2^-53·e^0.3466 absolute; over e^r >= e^-0.3466 that totals < 2^-47.1
 * relative. */
static inline __attribute__((always_inline)) double tr_exp_poly(double r)
{
	double p = 1.0 / 6227020800.0;
	p = p * r + 1.0 / 479001600.0;
	p = p * r + 1.0 / 39916800.0;
	p = p * r + 1.0 / 3628800.0;
	p = p * r + 1.0 / 362880.0;
	p = p * r + 1.0 / 40320.0;
	p = p * r + 1.0 / 5040.0;
	p = p * r + 1.0 / 720.0;
	p = p * r + 1.0 / 120.0;
	p = p * r + 1.0 / 24.0;
	p = p * r + 1.0 / 6.0;
	p = p * r + 0.5;
	p = p * r + 1.0;
	return p * r + 1.0;
}

/* One element of exp, log, exp2, rsqrt, log1p in rne (outputs as fast_elem). */
static inline __attribute__((always_inline)) uint64_t tr_elem(emu_op op, const struct fconsts *c,
                                                              double x, double *v, uint64_t *ixo,
                                                              uint64_t *ufo, uint64_t *ovo)
{
	uint64_t xb = emu_dbits(x), exm, bad; /* exm: all ones for an exact case */
	double y;
	switch (op) {
	case EMU_OP_EXP: {
		/* x = k·ln2 + r: t's low bits hold k (k·LN2_HI exact, x - k·LN2_HI
		 * exact by Sterbenz), |r| <= ln2/2 + 2^-40; r's error (ln2's
		 * approximation times |k| <= 1010, two roundings) < 2^-54.4 absolute,
		 * so e^r's relative error from it < 2^-54.3; p·2^k is exact (an
		 * exponent field add: |x| <= 700 keeps it normal). Total < 2^-47. */
		double t = x * TR_INV_LN2 + TR_SHIFT;
		double kd = t - TR_SHIFT;
		uint64_t kb = emu_dbits(t) - emu_dbits(TR_SHIFT);
		double r = (x - kd * TR_LN2_HI) - kd * TR_LN2_LO;
		y = emu_bitsd(emu_dbits(tr_exp_poly(r)) + (kb << 52));
		exm = MASK(x == 0);
		bad = !(fabs(x) <= 700);
		break;
	}
	case EMU_OP_EXP2: {
		/* x = k + r exactly (x has <= 25 bits), |r| <= 1/2; r·ln2 has a
		 * relative error below 2^-52, e^(r·ln2) then as exp. An integer x
		 * gives r = 0 and 2^k exactly. */
		double t = x + TR_SHIFT;
		double kd = t - TR_SHIFT;
		uint64_t kb = emu_dbits(t) - emu_dbits(TR_SHIFT);
		double r = x - kd;
		y = emu_bitsd(emu_dbits(tr_exp_poly(r * TR_LN2)) + (kb << 52));
		exm = MASK(r == 0);
		bad = !(fabs(x) <= 1000);
		break;
	}
	case EMU_OP_LOG1P:
	case EMU_OP_LOG: {
		/* log1p(x) is log(u) for u = 1 + x where that sum is exact (its
		 * TwoSum error zero): the same value, so the same bound; x = ±0
		 * (log1p(-0) is -0), x <= -1 and a rounded 1 + x (x has bits
		 * below 2^-52) are the scalar op's. */
		uint64_t bad1p = 0;
		if (op == EMU_OP_LOG1P) {
			double u = 1.0 + x, bb = u - 1.0;
			bad1p = (((1.0 - (u - bb)) + (x - bb)) != 0) | (x == 0) | !FIN(x);
			x = u;
			xb = emu_dbits(u);
		}
		/* x = 2^k·m, m in [√2/2, √2); f = m - 1 exact (Sterbenz);
		 * log m = 2 atanh(s), s = f/(2 + f), |s| <= 0.1716: the series to
		 * s^19 (remainder < 2^-55 relative), s with two roundings (2^-52),
		 * the sum's own roundings: log m within 2^-49.5 relative; then
		 * k·LN2_HI (exact) + (k·LN2_LO + log m): for k != 0, |log x| >=
		 * ln2 - 0.3466 >= |log m|, so the sum's error stays below 2^-48
		 * relative; k = 0 gives log m itself. */
		uint64_t mant = xb & 0x000fffffffffffffull;
		uint64_t up = mant >= 0x6a09e667f3bcdull; /* m >= √2: halve it */
		uint64_t kb = (xb >> 52) - 1023 + up;
		double m = emu_bitsd(mant | ((1023 - up) << 52));
		double kd = emu_bitsd(emu_dbits(TR_SHIFT) + kb) - TR_SHIFT;
		double f = m - 1.0;
		double sv = f / (2.0 + f), s2 = sv * sv;
		double q = 1.0 / 19;
		q = q * s2 + 1.0 / 17;
		q = q * s2 + 1.0 / 15;
		q = q * s2 + 1.0 / 13;
		q = q * s2 + 1.0 / 11;
		q = q * s2 + 1.0 / 9;
		q = q * s2 + 1.0 / 7;
		q = q * s2 + 1.0 / 5;
		q = q * s2 + 1.0 / 3;
		double ts = sv + sv;
		double lm = ts + ts * (s2 * q);
		y = kd * TR_LN2_HI + (kd * TR_LN2_LO + lm);
		exm = MASK(x == 1);
		bad = !(x >= 0x1p-1022) | !FIN(x) | bad1p;
		break;
	}
	default: {
		/* rsqrt without sqrt (GCC keeps libm's errno call, and a scalar loop,
		 * around sqrt): the bit guess 0x5fe6eb50c7b537a9 - x/2 (relative error
		 * e0 < 0.035, Lomont 2003; < 0.2 is all this needs), then five Newton
		 * steps y(3/2 - x·y²/2): |e'| <= 1.5e² + 0.5|e|³ takes 0.2 below 2^-54,
		 * and each step's own roundings (about 4·2^-53) are squared away by the
		 * next but the last's: < 2^-50.5. x = 4^k: 2^-k from the exponent. */
		double h = 0.5 * x;
		y = emu_bitsd(0x5fe6eb50c7b537a9ull - (xb >> 1));
		y = y * (1.5 - h * y * y); /* unrolled: an inner loop stops the vectoriser */
		y = y * (1.5 - h * y * y);
		y = y * (1.5 - h * y * y);
		y = y * (1.5 - h * y * y);
		y = y * (1.5 - h * y * y);
		/* masks, not a bool &: GCC 12 does not vectorise the latter here */
		exm = MASK((xb & 0x000fffffffffffffull) == 0) & MASK((xb >> 52) & 1);
		y = emu_bitsd(SEL(exm, ((3069 - (xb >> 52)) >> 1) << 52, emu_dbits(y)));
		bad = !(x >= 0x1p-1022) | !FIN(x);
		break;
	}
	}
	uint64_t yb = emu_dbits(y);
	uint64_t sign = yb & 0x8000000000000000ull, mag = yb & 0x7fffffffffffffffull;
	uint64_t kk = SEL(exm, 0, (uint64_t)TR_K);
	uint64_t ix1, t1, b1, ix2, t2, b2;
	double v1 = round_rne(c, emu_bitsd((mag - kk) | sign), &ix1, &t1, &b1);
	double v2 = round_rne(c, emu_bitsd((mag + kk) | sign), &ix2, &t2, &b2);
	bad |= (emu_dbits(v1) != emu_dbits(v2)) | (t1 != t2) | (b1 != b2);
	uint64_t ix = SEL(exm, ix1 | b1, 1);
	*v = v1;
	*ixo = ix;
	*ufo = t1 & ix;
	*ovo = b1;
	return bad;
}

/* One element of the fast path: the value into *v, its inexact, underflow
 * and overflow bits; returns 1 when the generic path must decide it. */
static inline __attribute__((always_inline)) uint64_t
fast_elem_x(const int S, emu_op op, const bool sr, const bool chain, const bool f32,
            const struct fconsts *c0, double x, double y, double z, uint32_t u, double *v,
            uint64_t *ixo, uint64_t *ufo, uint64_t *ovo)
{
	struct fconsts c = *c0;
	c.S = S;
	if (IS_TR(op))
		return tr_elem(op, &c, x, v, ixo, ufo, ovo);
	if (op == EMU_OP_SUB)
		y = -y;
	if (op == EMU_OP_SQRT || op == EMU_OP_CVT) /* unary: whatever y the caller read */
		y = 0;
	if (op != EMU_OP_FMA)
		z = 0;
	double r, err;
	uint64_t sqrt_low = 0, zbad = 0, onz = 0, oneg = 0;
	switch (op) {
	case EMU_OP_ADD:
	case EMU_OP_SUB: { /* TwoSum (Knuth): r + err = x + y exactly */
		r = x + y;
		double bb = r - x;
		err = (x - (r - bb)) + (y - bb);
		onz = (uint64_t)(err != 0); /* SR needs the exact discarded part */
		oneg = emu_dbits(err) >> 63;
		break;
	}
	case EMU_OP_MUL: /* 2p <= 50 bits, exponent in [-298, 256]: exact */
		r = x * y;
		err = 0;
		break;
	case EMU_OP_DIV: /* the remainder of a rounded quotient is exact */
		r = x / y;
		err = fma(-r, y, x);
		onz = (uint64_t)(err != 0); /* x/y - r = err/y */
		oneg = (emu_dbits(err) ^ emu_dbits(y)) >> 63;
		break;
	case EMU_OP_FMA: { /* x·y exact; TwoSum: r + e = x·y + z exactly */
		double pr = x * y;
		r = pr + z;
		double bb = r - pr;
		double e = (pr - (r - bb)) + (z - bb);
		/* r to odd: the exact value's truncation to 53 bits with its last bit
		 * set when inexact; rounding that to p <= 51 bits is the exact
		 * value's rounding (Boldo & Melquiond 2008) */
		onz = (uint64_t)(e != 0);
		oneg = emu_dbits(e) >> 63;
		err = 0;
		zbad = !FIN(z);
		break;
	}
	case EMU_OP_CVT: /* a double: rounded once */
		r = x;
		err = 0;
		break;
	default: /* sqrt: the residual is exact */
		/* of |x|: GCC then knows errno is never set and keeps no branch; a
		 * negative x (and every zero) is left to the generic path */
		r = sqrt(fabs(x));
		err = fma(-r, r, x);
		sqrt_low = (r < emu_bitsd(c.minnorm_d)) | (x < 0);
		onz = (uint64_t)(err != 0); /* sqrt(x) - r has the sign of x - r² */
		oneg = emu_dbits(err) >> 63;
		break;
	}
	uint64_t ix, tiny, big;
	uint64_t rbad = !FIN(r);
	if (sr || op == EMU_OP_FMA) { /* r to odd (fma: always) */
		r = to_odd(r, onz, oneg);
		err = 0;
	}
	if (f32)
		*v = round_f32(r, &ix, &tiny, &big);
	else if (sr && chain)
		*v = round_sr_chain(&c, r, u, &ix, &tiny, &big);
	else if (sr)
		*v = round_sr(&c, r, u, &ix, &tiny, &big);
	else if (chain)
		*v = round_rne_chain(&c, r, &ix, &tiny, &big);
	else
		*v = round_rne(&c, r, &ix, &tiny, &big);
	ix |= (err != 0) | big;
	*ixo = ix;
	*ufo = tiny & ix;
	*ovo = big;
	return !FIN(x) | !FIN(y) | rbad | sqrt_low | zbad;
}

/* The vector loops' element (branch free). */
static inline __attribute__((always_inline)) uint64_t
fast_elem(const int S, emu_op op, const bool sr, const struct fconsts *c, double x, double y,
          double z, uint32_t u, double *v, uint64_t *ixo, uint64_t *ufo, uint64_t *ovo)
{
	return fast_elem_x(S, op, sr, false, false, c, x, y, z, u, v, ixo, ufo, ovo);
}

/* One chunk of the fast path: values into dst, per-element flags into fl
 * when it is not NULL (bit 7: left to the generic path); adds the inexact
 * underflow and overflow counts of the decided elements to cnt[0..2] and
 * returns how many it left undecided. */
static inline __attribute__((always_inline)) unsigned
fast_chunk(const int S, emu_op op, const bool sr, const bool f32, const struct fconsts *c,
           double *dst, const double *a, size_t sa, const double *b, size_t sb, const double *cc,
           size_t sc, size_t n, uint64_t idx0, uint8_t *fl, uint64_t *cnt)
{
	uint64_t nfb = 0, nix = 0, nuf = 0, nov = 0;
	for (size_t i = 0; i < n; i++) {
		double y = op == EMU_OP_SQRT || op == EMU_OP_CVT ? 0.0 : b[i * sb], v;
		uint64_t ix, uf, ov;
		double z = op == EMU_OP_FMA ? cc[i * sc] : 0.0;
		uint32_t u = sr ? a_sr_bits(c->seed, idx0 + i) : 0;
		uint64_t bad = fast_elem_x(S, op, sr, false, f32, c, a[i * sa], y, z, u, &v, &ix,
		                           &uf, &ov);
		dst[i] = v;
		if (fl)
			fl[i] = (uint8_t)((ix << 4) | (uf << 3) | (ov << 2) | (bad << 7));
		nfb += bad;
		nix += ix & ~bad;
		nuf += uf & ~bad;
		nov += ov & ~bad;
	}
	cnt[0] += nix;
	cnt[1] += nuf;
	cnt[2] += nov;
	return (unsigned)nfb;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define A_CLONES                                                                                   \
	__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"),               \
	               optimize("O3", "no-math-errno")))
#else
#define A_CLONES
#endif

/*
 * The specials of an element the fast path left to the generic one, for an
 * IEEE format with infinities and NaN, neither saturating nor flushing
 * (c->spec), as the scalar ops decide them: a NaN operand gives the NaN
 * without flags (cvt of a signaling binary64 NaN: invalid); an infinite
 * operand, or a division by zero, the binary64 operation's infinity, zero or
 * NaN, a NaN raising invalid and x/0 for finite x ≠ 0 divbyzero; the square
 * root of a number below zero NaN and invalid. NaN is emu_nan_value's (the
 * sign clear). Returns 1 when the element is decided, with its value and
 * its invalid and divbyzero bits. add, sub, mul, div, sqrt and cvt (y 0 for
 * the last two).
 */
static inline __attribute__((always_inline)) uint64_t
spec_elem(emu_op op, double x, double y, double *v, uint64_t *inv, uint64_t *dbz)
{
	uint64_t ux = emu_dbits(x) & ~(1ull << 63), uy = emu_dbits(y) & ~(1ull << 63);
	const uint64_t inf = 0x7ff0000000000000ull;
	uint64_t xn = ux > inf, yn = uy > inf, xi = ux == inf, yi = uy == inf, in = 0, dz = 0, dec;
	double r;
	switch (op) {
	case EMU_OP_ADD:
		r = x + y;
		dec = xn | yn | xi | yi;
		break;
	case EMU_OP_SUB:
		r = x - y;
		dec = xn | yn | xi | yi;
		break;
	case EMU_OP_MUL:
		r = x * y;
		dec = xn | yn | xi | yi;
		break;
	case EMU_OP_DIV: {
		uint64_t y0 = uy == 0;
		r = x / y;
		dec = xn | yn | xi | yi | y0;
		dz = y0 & (ux != 0) & (ux < inf);
		break;
	}
	case EMU_OP_SQRT: /* +0's root is +0, exact; −0 (and every tiny root)
	                   * stays with the scalar op */
		r = sqrt(x);
		dec = xn | xi | (uint64_t)(x < 0) | (uint64_t)(emu_dbits(x) == 0);
		break;
	default: /* cvt: a binary64 NaN is signaling when its quiet bit is clear */
		r = x;
		dec = xn | xi;
		in = xn & !((ux >> 51) & 1);
		break;
	}
	uint64_t rn = (emu_dbits(r) & ~(1ull << 63)) > inf;
	in |= rn & !(xn | yn);
	*v = emu_bitsd(SEL(MASK(rn), emu_dbits(NAN), emu_dbits(r)));
	*inv = in & dec;
	*dbz = dz & dec;
	return dec;
}

/* A chunk's second look when it left elements to the generic path: each
 * element's fast_elem verdict again, and for the undecided ones spec_elem.
 * st[i]: 0 decided by the first look, 0x80 still for the generic path, else
 * 0x40 | flags of a special decided here (its value written to dst[i]).
 * Adds the invalid and divbyzero counts to cnt[0..1]; returns how many are
 * left. */
static inline __attribute__((always_inline)) unsigned
spec_chunk(const int S, emu_op op, const struct fconsts *c, double *dst, const double *a, size_t sa,
           const double *b, size_t sb, size_t n, uint8_t *st, uint64_t *cnt)
{
	uint64_t left = 0, ninv = 0, ndbz = 0;
	for (size_t i = 0; i < n; i++) {
		double x = a[i * sa], y = op == EMU_OP_SQRT || op == EMU_OP_CVT ? 0.0 : b[i * sb],
		       v, w;
		uint64_t ix, uf, ov, inv, dbz;
		uint64_t bad = fast_elem(S, op, false, c, x, y, 0.0, 0, &v, &ix, &uf, &ov);
		uint64_t dec = bad & spec_elem(op, x, y, &w, &inv, &dbz);
		dst[i] = dec ? w : dst[i];
		st[i] =
		    (uint8_t)(((bad & ~dec) << 7) | (dec << 6) | (dec & inv) | ((dec & dbz) << 1));
		left += bad & ~dec;
		ninv += dec & inv;
		ndbz += dec & dbz;
	}
	cnt[0] += ninv;
	cnt[1] += ndbz;
	return (unsigned)left;
}

/* The stride patterns with loops of their own (FAST_LOOPS); an operand the
 * op does not read counts as unit stride. */
enum stride_pat { PAT_UNIT, PAT_B0, PAT_A0, PAT_C0, PAT_BC0, PAT_OTHER };

static inline __attribute__((always_inline)) enum stride_pat stride_pat(emu_op op, size_t sa,
                                                                        size_t sb, size_t sc)
{
	/* the fast ops' arities, known at compile time (emu_op_arity is a call) */
	int ar = op == EMU_OP_FMA                                                               ? 3
	         : op == EMU_OP_ADD || op == EMU_OP_SUB || op == EMU_OP_MUL || op == EMU_OP_DIV ? 2
	                                                                                        : 1;
	sb = ar > 1 ? sb : 1;
	sc = ar > 2 ? sc : 1;
	if (sa == 1 && sb == 1 && sc == 1)
		return PAT_UNIT;
	if (ar > 1 && sa == 1 && sb == 0 && sc == 1)
		return PAT_B0;
	if (ar > 1 && sa == 0 && sb == 1 && sc == 1)
		return PAT_A0;
	if (ar > 2 && sa == 1 && sb == 1 && sc == 0)
		return PAT_C0;
	if (ar > 2 && sa == 1 && sb == 0 && sc == 0)
		return PAT_BC0;
	return PAT_OTHER;
}

/* One instance per op. Without per-element flags, unit strides and the
 * broadcasts the kernels' maps use (a[i] op s, s op b[i]; fma with c, b or
 * both broadcast) get loops with constant strides, so a broadcast operand is
 * one register and the loop vectorises as the unit one; with flags, unit
 * strides get their own loop (a byte store per element would otherwise set
 * the vector width). Anything else takes the loop with strides as given. */
#define FAST_CALL(OP, SR, SA, SB, SC, FL)                                                          \
	fast_chunk(c->S, OP, SR, false, c, dst, a, SA, b, SB, cc, SC, n, idx0, FL, cnt)
/* binary32 in rne (c->f32) without per-element flags, unit strides or b
 * broadcast: rounded by the CPU's conversion (round_f32) */
#define F32_CALL(OP, SB)                                                                           \
	fast_chunk(c->S, OP, false, true, c, dst, a, 1, b, SB, cc, 1, n, idx0, NULL, cnt)
#define FAST_LOOPS(OP, SR)                                                                         \
	do {                                                                                       \
		if (!fl && pat == PAT_UNIT)                                                        \
			return FAST_CALL(OP, SR, 1, 1, 1, NULL);                                   \
		if (!fl && pat == PAT_B0)                                                          \
			return FAST_CALL(OP, SR, 1, 0, 1, NULL);                                   \
		if (!fl && pat == PAT_A0)                                                          \
			return FAST_CALL(OP, SR, 0, 1, 1, NULL);                                   \
		if (!fl && pat == PAT_C0)                                                          \
			return FAST_CALL(OP, SR, 1, 1, 0, NULL);                                   \
		if (!fl && pat == PAT_BC0)                                                         \
			return FAST_CALL(OP, SR, 1, 0, 0, NULL);                                   \
		if (pat == PAT_UNIT)                                                               \
			return FAST_CALL(OP, SR, 1, 1, 1, fl);                                     \
		return FAST_CALL(OP, SR, sa, sb, sc, fl);                                          \
	} while (0)
#define FAST_OP(OP, NAME)                                                                          \
	A_CLONES static unsigned NAME(const struct fconsts *c, bool sr, double *dst,               \
	                              const double *a, size_t sa, const double *b, size_t sb,      \
	                              const double *cc, size_t sc, size_t n, uint64_t idx0,        \
	                              uint8_t *fl, uint64_t *cnt)                                  \
	{                                                                                          \
		enum stride_pat pat = stride_pat(OP, sa, sb, sc);                                  \
		if (!IS_TR(OP) && c->f32 && !sr && !fl && pat == PAT_UNIT)                         \
			return F32_CALL(OP, 1);                                                    \
		if (!IS_TR(OP) && c->f32 && !sr && !fl && pat == PAT_B0)                           \
			return F32_CALL(OP, 0);                                                    \
		if (sr && !IS_TR(OP)) /* fast_ok: the transcendentals only in rne */               \
			FAST_LOOPS(OP, true);                                                      \
		FAST_LOOPS(OP, false);                                                             \
	}                                                                                          \
	/* Is element (x, y, z) left to the generic path? (the chunk's second look;                \
	 * the mode does not change the answer) */                                                 \
	static bool NAME##_bad(const struct fconsts *c, double x, double y, double z)              \
	{                                                                                          \
		double v;                                                                          \
		uint64_t ix, uf, ov;                                                               \
		return fast_elem(c->S, OP, false, c, x, y, z, 0, &v, &ix, &uf, &ov) != 0;          \
	}
/* The second look of the ops spec_elem knows, as FAST_LOOPS: unit strides
 * apart. */
#define SPEC_OP(OP, NAME)                                                                          \
	A_CLONES static unsigned NAME##_spec(const struct fconsts *c, double *dst,                 \
	                                     const double *a, size_t sa, const double *b,          \
	                                     size_t sb, size_t n, uint8_t *st, uint64_t *cnt)      \
	{                                                                                          \
		if (sa == 1 && (sb == 1 || (OP) == EMU_OP_SQRT || (OP) == EMU_OP_CVT))             \
			return spec_chunk(c->S, OP, c, dst, a, 1, b, 1, n, st, cnt);               \
		return spec_chunk(c->S, OP, c, dst, a, sa, b, sb, n, st, cnt);                     \
	}
FAST_OP(EMU_OP_ADD, fast_add)
FAST_OP(EMU_OP_SUB, fast_sub)
FAST_OP(EMU_OP_MUL, fast_mul)
FAST_OP(EMU_OP_DIV, fast_div)
FAST_OP(EMU_OP_SQRT, fast_sqrt)
FAST_OP(EMU_OP_FMA, fast_fma)
FAST_OP(EMU_OP_CVT, fast_cvt)
FAST_OP(EMU_OP_EXP, fast_exp)
FAST_OP(EMU_OP_LOG, fast_log)
FAST_OP(EMU_OP_EXP2, fast_exp2)
FAST_OP(EMU_OP_RSQRT, fast_rsqrt)
FAST_OP(EMU_OP_LOG1P, fast_log1p)
SPEC_OP(EMU_OP_ADD, fast_add)
SPEC_OP(EMU_OP_SUB, fast_sub)
SPEC_OP(EMU_OP_MUL, fast_mul)
SPEC_OP(EMU_OP_DIV, fast_div)
SPEC_OP(EMU_OP_SQRT, fast_sqrt)
SPEC_OP(EMU_OP_CVT, fast_cvt)

/*
 * min, max, neg and abs return an operand (neg, abs: its negation or
 * magnitude) and raise nothing when their operands are finite values of
 * the format. An element is left to the generic path (the operands encoded,
 * then the scalar op) when an operand is not finite or not a value of the
 * format (its rounding in RNE would change its bits: fnuz's −0 included),
 * when min and max meet two zeros (−0 < +0, and a format's own zeros) or
 * neg a zero (fnuz has no −0). Returns 1 for those.
 */
static inline __attribute__((always_inline)) uint64_t pick_elem(emu_op op, const struct fconsts *c,
                                                                double x, double y, double *v)
{
	uint64_t ix, tiny, big;
	uint64_t ok = FIN(x) & (emu_dbits(round_rne(c, x, &ix, &tiny, &big)) == emu_dbits(x));
	double r;
	if (op == EMU_OP_MIN || op == EMU_OP_MAX) {
		ok &= FIN(y) & (emu_dbits(round_rne(c, y, &ix, &tiny, &big)) == emu_dbits(y)) &
		      ((x != 0) | (y != 0));
		r = (op == EMU_OP_MIN) == (x < y) ? x : y;
	} else if (op == EMU_OP_NEG) {
		ok &= x != 0;
		r = -x;
	} else {
		r = fabs(x);
	}
	*v = r;
	return ok ^ 1;
}

static inline __attribute__((always_inline)) unsigned
pick_chunk(emu_op op, const struct fconsts *c, double *dst, const double *a, size_t sa,
           const double *b, size_t sb, size_t n, uint8_t *fl)
{
	uint64_t nfb = 0;
	for (size_t i = 0; i < n; i++) {
		double v;
		uint64_t bad = pick_elem(op, c, a[i * sa], b[i * sb], &v);
		dst[i] = v;
		if (fl)
			fl[i] = (uint8_t)(bad << 7);
		nfb += bad;
	}
	return (unsigned)nfb;
}

/* As FAST_OP (no rounding, so the mode and the counts play no part); a
 * unary op's b is its a (emu_a_op), read and ignored. */
#define PICK_OP(OP, NAME)                                                                          \
	A_CLONES static unsigned NAME(const struct fconsts *c, bool sr, double *dst,               \
	                              const double *a, size_t sa, const double *b, size_t sb,      \
	                              const double *cc, size_t sc, size_t n, uint64_t idx0,        \
	                              uint8_t *fl, uint64_t *cnt)                                  \
	{                                                                                          \
		(void)sr, (void)cc, (void)sc, (void)idx0, (void)cnt;                               \
		if (!fl && sa == 1 && sb == 1)                                                     \
			return pick_chunk(OP, c, dst, a, 1, b, 1, n, NULL);                        \
		if (!fl && sa == 1 && sb == 0)                                                     \
			return pick_chunk(OP, c, dst, a, 1, b, 0, n, NULL);                        \
		return pick_chunk(OP, c, dst, a, sa, b, sb, n, fl);                                \
	}                                                                                          \
	static bool NAME##_bad(const struct fconsts *c, double x, double y, double z)              \
	{                                                                                          \
		double v;                                                                          \
		(void)z;                                                                           \
		return pick_elem(OP, c, x, y, &v) != 0;                                            \
	}
PICK_OP(EMU_OP_MIN, fast_min)
PICK_OP(EMU_OP_MAX, fast_max)
PICK_OP(EMU_OP_NEG, fast_neg)
PICK_OP(EMU_OP_ABS, fast_abs)

typedef unsigned (*fast_fn)(const struct fconsts *, bool, double *, const double *, size_t,
                            const double *, size_t, const double *, size_t, size_t, uint64_t,
                            uint8_t *, uint64_t *);
typedef bool (*bad_fn)(const struct fconsts *, double, double, double);
typedef unsigned (*spec_fn)(const struct fconsts *, double *, const double *, size_t,
                            const double *, size_t, size_t, uint8_t *, uint64_t *);
static const struct {
	fast_fn run;
	bad_fn bad;
	spec_fn spec; /* NULL: the second look is bad's, element by element */
} fast_tab[EMU_NOPS] = {
    [EMU_OP_ADD] = {fast_add, fast_add_bad, fast_add_spec},
    [EMU_OP_SUB] = {fast_sub, fast_sub_bad, fast_sub_spec},
    [EMU_OP_MUL] = {fast_mul, fast_mul_bad, fast_mul_spec},
    [EMU_OP_DIV] = {fast_div, fast_div_bad, fast_div_spec},
    [EMU_OP_SQRT] = {fast_sqrt, fast_sqrt_bad, fast_sqrt_spec},
    [EMU_OP_FMA] = {fast_fma, fast_fma_bad, NULL},
    [EMU_OP_EXP] = {fast_exp, fast_exp_bad, NULL},
    [EMU_OP_LOG] = {fast_log, fast_log_bad, NULL},
    [EMU_OP_EXP2] = {fast_exp2, fast_exp2_bad, NULL},
    [EMU_OP_RSQRT] = {fast_rsqrt, fast_rsqrt_bad, NULL},
    [EMU_OP_LOG1P] = {fast_log1p, fast_log1p_bad, NULL},
    [EMU_OP_CVT] = {fast_cvt, fast_cvt_bad, fast_cvt_spec},
    [EMU_OP_MIN] = {fast_min, fast_min_bad, NULL},
    [EMU_OP_MAX] = {fast_max, fast_max_bad, NULL},
    [EMU_OP_NEG] = {fast_neg, fast_neg_bad, NULL},
    [EMU_OP_ABS] = {fast_abs, fast_abs_bad, NULL},
};

/* The fast path over operands of any stride without per-element flags:
 * strided operands gathered GATHER elements at a time, so that the run
 * takes the unit-stride loop, which vectorises (the strided one stays
 * scalar); the same elements, counts and results. */
enum { GATHER = 256 };
static unsigned fast_run_gathered(emu_op op, const struct fconsts *k, bool sr, double *out,
                                  const double *pa, size_t sa, const double *pb, size_t sb,
                                  const double *pc, size_t sc, size_t m, uint64_t idx0,
                                  uint64_t *cnt)
{
	double ga[GATHER], gb[GATHER], gc[GATHER];
	unsigned nfb = 0;
	for (size_t i = 0; i < m; i += GATHER) {
		size_t q = m - i < GATHER ? m - i : GATHER;
		const double *xa = pa + i * sa, *xb = pb + i * sb, *xc = pc + i * sc;
		size_t ta = sa, tb = sb, tc = sc;
		if (sa > 1) {
			for (size_t j = 0; j < q; j++)
				ga[j] = xa[j * sa];
			xa = ga, ta = 1;
		}
		if (sb > 1) {
			for (size_t j = 0; j < q; j++)
				gb[j] = xb[j * sb];
			xb = gb, tb = 1;
		}
		if (sc > 1) {
			for (size_t j = 0; j < q; j++)
				gc[j] = xc[j * sc];
			xc = gc, tc = 1;
		}
		nfb += fast_tab[op].run(k, sr, out + i, xa, ta, xb, tb, xc, tc, q, idx0 + i, NULL,
		                        cnt);
	}
	return nfb;
}

static bool fast_ok(emu_op op, const emu_format *f, const emu_env *env, struct fconsts *c)
{
	if (op >= EMU_NOPS || !fast_tab[op].run)
		return false;
	if ((env->mode != EMU_RNE && env->mode != EMU_SR) || env->ftz || env->daz)
		return false;
	/* sat: an overflow gives ±max (below); non-finite operands, whose clamped
	 * results differ, go to the generic path anyway. The transcendentals'
	 * check keeps the unsaturated overflow. */
	if (env->sat && IS_TR(op))
		return false;
	/* the transcendental check rounds with round_rne */
	if (env->mode == EMU_SR && IS_TR(op))
		return false;
	/* SR reads the top 32 discarded bits and a sticky bit from r to odd */
	if (env->mode == EMU_SR && f->p > 20)
		return false;
	if (!f->has_sign || !f->has_zero || !f->has_subnormals || f->p < 2 || f->p > 25)
		return false;
	if (!emu_fpu_nearest())
		return false;
	c->S = 53 - f->p;
	c->low = (1ull << c->S) - 1;
	c->half_m1 = (1ull << (c->S - 1)) - 1;
	c->max_d = emu_dbits(f->max);
	c->minnorm_d = emu_dbits(f->min_normal);
	c->magic = emu_pow2_any(f->emin - f->p + 1 + 52);
	c->fnuz = MASK(f->nan == EMU_NAN_FNUZ);
	c->quantum = emu_pow2_any(f->emin - f->p + 1);
	c->inv_quantum = emu_pow2_any(-(f->emin - f->p + 1));
	c->seed = env->seed;
	c->spec = f->has_inf && f->nan == EMU_NAN_IEEE && !env->sat;
	c->f32 = emu_is_binary32(f) && !env->sat && emu_fpu_subnormals();
	c->ovf_d = env->sat || (!f->has_inf && f->nan == EMU_NAN_NONE) ? emu_dbits(f->max)
	           : f->has_inf                                        ? emu_dbits(INFINITY)
	                                                               : emu_dbits(NAN);
	return true;
}

static void tally(uint64_t *count, unsigned v)
{
	for (int k = 0; k < 5; k++)
		count[k] += (v >> k) & 1;
}

/* Does [d, d + m) overlap the elements operand x reads, x[0..(m-1)·s]? */
static bool overlaps(const double *d, const double *x, size_t s, size_t m)
{
	const double *xe = x + (m - 1) * s + 1;
	return d < xe && x < d + m;
}

static bool bad_flags(unsigned v)
{
	return (v & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID | EMU_FLAG_DIVBYZERO)) != 0;
}

/*
 * A conversion into binary32 of values that all are binary32 values: each
 * is its own result, with no flag, in every rounding mode (SR included:
 * nothing is discarded); not under ftz (a subnormal would be flushed; daz
 * leaves a conversion's operand as it is), and an infinity only without
 * sat (which clamps it). The kernels
 * take every operand of binary32 compute so (fp16 or bf16 storage, or a
 * state read back). Checked first, over unit-stride operands, then copied
 * (memmove: dst may overlap a); false leaves dst untouched where it overlaps a
 * (apart from a, it may hold some of the values: the caller then writes
 * every element).
 */
A_CLONES static bool cvt_f32_same(const emu_format *f, double *dst, const double *a, size_t sa,
                                  size_t n, const emu_env *env, uint8_t *flags)
{
	if (sa != 1 || env->ftz || !emu_is_binary32(f))
		return false;
	const double lim = env->sat ? FLT_MAX : INFINITY;
	/* apart from a, dst is written as a is checked (one pass; a block that
	 * fails leaves values in dst that the caller's path writes again) */
	uintptr_t ud = (uintptr_t)dst, ua = (uintptr_t)a, nb = n * sizeof *dst;
	bool apart = ud + nb <= ua || ua + nb <= ud;
	for (size_t i0 = 0; i0 < n; i0 += 256) { /* blocks: a map of other values stops early */
		size_t m = n - i0 < 256 ? n - i0 : 256;
		int32_t ok = 1;
		if (apart) {
			for (size_t i = i0; i < i0 + m; i++) {
				double x = a[i];
				dst[i] = x;
				ok &= ((double)(float)x == x) & (fabs(x) <= lim);
			}
		} else {
			for (size_t i = i0; i < i0 + m; i++) {
				double x = a[i];
				ok &= ((double)(float)x == x) & (fabs(x) <= lim);
			}
		}
		if (!ok)
			return false;
	}
	if (dst != a && !apart)
		memmove(dst, a, n * sizeof *dst);
	if (flags)
		memset(flags, 0, n);
	return true;
}

emu_a_flags emu_a_op(emu_op op, const emu_format *f, double *dst, const double *const *args,
                     const size_t *strides, size_t n, const emu_env *env, uint8_t *flags)
{
	emu_a_flags acc = {{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
	if (op == EMU_OP_CVT && cvt_f32_same(f, dst, args[0], strides[0], n, env, flags))
		return acc;
	int ar = emu_op_arity(op);
	const double *a = args[0], *b = ar > 1 ? args[1] : a, *c = ar > 2 ? args[2] : a;
	size_t sa = strides[0], sb = ar > 1 ? strides[1] : 0, sc = ar > 2 ? strides[2] : 0;
	struct fconsts k;
	bool fast = fast_ok(op, f, env, &k);
	bool sr = env->mode == EMU_SR;
	uint64_t cnt[3] = {0, 0, 0}; /* the fast path's inexact, underflow, overflow counts */
	emu_env e = *env;
	double buf[CHUNK]; /* the chunk's results when dst overlaps an operand */
	for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
		size_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
		const double *pa = a + i0 * sa, *pb = b + i0 * sb, *pc = c + i0 * sc;
		/* an operand overwritten in place would be read again by the second
		 * look and the generic path: results go to buf, then to dst */
		bool alias = overlaps(dst + i0, pa, sa, m) ||
		             (ar > 1 && overlaps(dst + i0, pb, sb, m)) ||
		             (ar > 2 && overlaps(dst + i0, pc, sc, m));
		// cppcheck-suppress legacyUninitvar ; buf is where the chunk's results are written
		double *out = alias ? buf : dst + i0;
		uint8_t *fl = flags ? flags + i0 : NULL;
		unsigned nfb = (unsigned)m;
		uint64_t ov0 = cnt[2];
		bool chunk_bad = false;
		bool (*bad)(const struct fconsts *, double, double, double) = NULL;
		if (fast && !fl && (sa > 1 || sb > 1 || sc > 1)) {
			nfb = fast_run_gathered(op, &k, sr, out, pa, sa, pb, sb, pc, sc, m,
			                        env->index + i0, cnt);
			bad = fast_tab[op].bad;
			chunk_bad = cnt[2] != ov0;
		} else if (fast) {
			nfb = fast_tab[op].run(&k, sr, out, pa, sa, pb, sb, pc, sc, m,
			                       env->index + i0, fl, cnt);
			bad = fast_tab[op].bad;
			chunk_bad = cnt[2] != ov0;
		}
		/* the second look over the chunk at once, deciding IEEE specials */
		uint8_t st[CHUNK];
		bool looked = nfb && fast && k.spec && fast_tab[op].spec;
		if (looked) {
			uint64_t sc2[2] = {0, 0};
			nfb = fast_tab[op].spec(&k, out, pa, sa, pb, sb, m, st, sc2);
			acc.count[0] += sc2[0];
			acc.count[1] += sc2[1];
			chunk_bad |= (sc2[0] | sc2[1]) != 0;
			for (size_t j = 0; fl && j < m; j++)
				if (st[j] & 0x40)
					fl[j] = st[j] & 0x3;
		}
		for (size_t j = 0; nfb && j < m; j++) {
			if (looked ? st[j] != 0x80
			           : bad && (fl ? !(fl[j] & 0x80)
			                        : !bad(&k, pa[j * sa], pb[j * sb], pc[j * sc])))
				continue;
			unsigned v = 0;
			e.index = env->index + i0 + j;
			out[j] = emu_a_element(op, f, pa[j * sa], pb[j * sb], pc[j * sc], &e, &v);
			if (fl)
				fl[j] = (uint8_t)v;
			tally(acc.count, v);
			chunk_bad |= bad_flags(v);
			nfb--;
		}
		/* the first element that raised overflow, invalid or divbyzero: looked
		 * for element by element (the scalar op's flags equal the fast
		 * path's) in the first chunk that has one */
		for (size_t j = 0; chunk_bad && acc.first_bad == UINT64_MAX && j < m; j++) {
			unsigned v = 0;
			if (fl) {
				v = fl[j];
			} else {
				e.index = env->index + i0 + j;
				(void)emu_a_element(op, f, pa[j * sa], pb[j * sb], pc[j * sc], &e,
				                    &v);
			}
			if (bad_flags(v)) {
				acc.first_bad = i0 + j;
				acc.first_flags = v;
			}
		}
		if (alias) /* every element of out was written above */
			// cppcheck-suppress uninitvar ; the chunk's results, all m written
			memcpy(dst + i0, buf, m * sizeof *buf);
	}
	/* built from scalars: the counts read back as the wider words the
	 * return copies stalled each call's store forwarding (a tenth of
	 * emu_a_op in a training run, whose maps are short) */
	uint64_t c0 = acc.count[0], c1 = acc.count[1], c2 = acc.count[2] + cnt[2],
	         c3 = acc.count[3] + cnt[1], c4 = acc.count[4] + cnt[0];
	unsigned any = (unsigned)(c0 != 0) | (unsigned)(c1 != 0) << 1 | (unsigned)(c2 != 0) << 2 |
	               (unsigned)(c3 != 0) << 3 | (unsigned)(c4 != 0) << 4;
	return (emu_a_flags){{c0, c1, c2, c3, c4}, any, acc.first_bad, acc.first_flags};
}

#define A1(NAME, OP)                                                                               \
	emu_a_flags NAME(const emu_format *f, double *dst, const double *a, size_t sa, size_t n,   \
	                 const emu_env *env, uint8_t *flags)                                       \
	{                                                                                          \
		const double *args[1] = {a};                                                       \
		size_t st[1] = {sa};                                                               \
		return emu_a_op(OP, f, dst, args, st, n, env, flags);                              \
	}
#define A2(NAME, OP)                                                                               \
	emu_a_flags NAME(const emu_format *f, double *dst, const double *a, size_t sa,             \
	                 const double *b, size_t sb, size_t n, const emu_env *env, uint8_t *flags) \
	{                                                                                          \
		const double *args[2] = {a, b};                                                    \
		size_t st[2] = {sa, sb};                                                           \
		return emu_a_op(OP, f, dst, args, st, n, env, flags);                              \
	}
A1(emu_a_cvt, EMU_OP_CVT)
A1(emu_a_sqrt, EMU_OP_SQRT)
A1(emu_a_exp, EMU_OP_EXP)
A1(emu_a_log, EMU_OP_LOG)
A1(emu_a_exp2, EMU_OP_EXP2)
A1(emu_a_rsqrt, EMU_OP_RSQRT)
A1(emu_a_neg, EMU_OP_NEG)
A1(emu_a_abs, EMU_OP_ABS)
A2(emu_a_add, EMU_OP_ADD)
A2(emu_a_sub, EMU_OP_SUB)
A2(emu_a_mul, EMU_OP_MUL)
A2(emu_a_div, EMU_OP_DIV)
A2(emu_a_min, EMU_OP_MIN)
A2(emu_a_max, EMU_OP_MAX)

emu_a_flags emu_a_fma(const emu_format *f, double *dst, const double *a, size_t sa, const double *b,
                      size_t sb, const double *c, size_t sc, size_t n, const emu_env *env,
                      uint8_t *flags)
{
	const double *args[3] = {a, b, c};
	size_t st[3] = {sa, sb, sc};
	return emu_a_op(EMU_OP_FMA, f, dst, args, st, n, env, flags);
}

/* One step of a fold on the fast path: min and max of two finite values
 * that differ and are not zeros (no flags; a NaN, an infinity or a zero
 * result, whose sign rules and format encodings the scalar op knows, are
 * left to it), the others as emu_a_op's elements with the rounding of a
 * chain. Returns 1 when the generic path must take the step. */
static inline __attribute__((always_inline)) uint64_t
fold_step(const emu_op op, const bool sr, const struct fconsts *c, double s, double x, double y,
          uint64_t index, double *v, uint64_t *ix, uint64_t *uf, uint64_t *ov)
{
	if (op == EMU_OP_MIN || op == EMU_OP_MAX) {
		double r = (op == EMU_OP_MIN) == (x < s) ? x : s;
		*v = r;
		*ix = *uf = *ov = 0;
		return !FIN(s) | !FIN(x) | (s == x) | (r == 0);
	}
	uint32_t u = sr ? a_sr_bits(c->seed, index) : 0;
	return op == EMU_OP_FMA
	           ? fast_elem_x(c->S, op, sr, true, false, c, x, y, s, u, v, ix, uf, ov)
	           : fast_elem_x(c->S, op, sr, true, false, c, s, x, 0.0, u, v, ix, uf, ov);
}

/* A fold's step j that raised v (the generic path's): its flags, the
 * counts, the first failing step */
static inline __attribute__((always_inline)) void fold_note(emu_a_flags *r, uint8_t *flags,
                                                            size_t j, unsigned v)
{
	if (flags)
		flags[j] = (uint8_t)v;
	tally(r->count, v);
	if (bad_flags(v) && r->first_bad == UINT64_MAX) {
		r->first_bad = j;
		r->first_flags = v;
	}
}

/* A fold's end: the fast steps' inexact, underflow and overflow counts
 * added, and the flags any step raised */
static inline __attribute__((always_inline)) void fold_done(emu_a_flags *r, uint64_t nix,
                                                            uint64_t nuf, uint64_t nov)
{
	r->count[4] += nix;
	r->count[3] += nuf;
	r->count[2] += nov;
	for (int k = 0; k < 5; k++)
		if (r->count[k])
			r->any |= 1u << k;
}

/* The fold's loop for one op and mode (constant after inlining): a chain of
 * scalar steps, each the fast path's element or, where that cannot decide,
 * emu_a_element; fast says whether the fast path applies at all. The fast
 * steps' counts stay in registers (a tally in memory would be a second
 * chain). */
static inline __attribute__((always_inline)) emu_a_flags
fold_loop(const emu_op op, const bool sr, const bool fast, const struct fconsts *c,
          const emu_format *f, double *acc, const double *a, size_t sa, const double *b, size_t sb,
          size_t n, const emu_env *env, uint8_t *flags)
{
	emu_a_flags r = {{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
	emu_env e = *env;
	double s = *acc;
	uint64_t nix = 0, nuf = 0, nov = 0;
	for (size_t j = 0; j < n; j++) {
		unsigned v = 0;
		double x = a[j * sa], y = op == EMU_OP_FMA ? b[j * sb] : 0.0, t;
		uint64_t ix, uf, ov;
		if (fast && !fold_step(op, sr, c, s, x, y, env->index + j, &t, &ix, &uf, &ov)) {
			s = t;
			nix += ix;
			nuf += uf;
			nov += ov;
			if (flags)
				flags[j] = (uint8_t)((ix << 4) | (uf << 3) | (ov << 2));
			if (__builtin_expect(ov && r.first_bad == UINT64_MAX, 0)) {
				r.first_bad = j;
				r.first_flags = (unsigned)((ix << 4) | (uf << 3) | (ov << 2));
			}
			continue;
		}
		e.index = env->index + j;
		s = op == EMU_OP_FMA ? emu_a_element(op, f, x, y, s, &e, &v)
		                     : emu_a_element(op, f, s, x, 0, &e, &v);
		fold_note(&r, flags, j, v);
	}
	*acc = s;
	fold_done(&r, nix, nuf, nov);
	return r;
}

/* Step j of one chain, as fold_loop steps it (fold_loop_w's, and
 * fold_lanes' when a block runs again): the fast step or the generic one,
 * its counts into the chain's, an overflow's step noted as the first
 * failing one; returns the new accumulator. */
static inline __attribute__((always_inline)) double
fold_chain_step(const emu_op op, const bool sr, const struct fconsts *c, const emu_format *f,
                const emu_env *env, double s, double x, double y, uint64_t index, size_t j,
                uint64_t *nix, uint64_t *nuf, uint64_t *nov, emu_a_flags *r)
{
	double t;
	uint64_t ix, uf, ov;
	if (!fold_step(op, sr, c, s, x, y, index, &t, &ix, &uf, &ov)) {
		*nix += ix;
		*nuf += uf;
		*nov += ov;
		if (__builtin_expect(ov && r->first_bad == UINT64_MAX, 0)) {
			r->first_bad = j;
			r->first_flags = (unsigned)((ix << 4) | (uf << 3) | (ov << 2));
		}
		return t;
	}
	emu_env e = *env;
	unsigned v = 0;
	e.index = index;
	t = op == EMU_OP_FMA ? emu_a_element(op, f, x, y, s, &e, &v)
	                     : emu_a_element(op, f, s, x, 0, &e, &v);
	fold_note(r, NULL, j, v);
	return t;
}

/* FOLD_W chains of one op and mode stepped together (fold_loop's steps,
 * chain w on acc[w·sacc], a + w·ca, b + w·cb, SR index env->index + w·cidx
 * + j); r[w] each chain's own result, as fold_loop gives it. The chains are
 * independent, so their steps overlap where one chain's would wait. */
#define FOLD_W 4
static inline __attribute__((always_inline)) void
fold_loop_w(const emu_op op, const bool sr, const struct fconsts *c, const emu_format *f,
            double *acc, size_t sacc, const double *a, size_t sa, size_t ca, const double *b,
            size_t sb, size_t cb, size_t n, const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	double s[FOLD_W];
	uint64_t nix[FOLD_W] = {0}, nuf[FOLD_W] = {0}, nov[FOLD_W] = {0};
	for (int w = 0; w < FOLD_W; w++) {
		s[w] = acc[w * sacc];
		r[w] = (emu_a_flags){{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
	}
	for (size_t j = 0; j < n; j++) {
#pragma GCC unroll 4
		for (int w = 0; w < FOLD_W; w++) {
			double x = a[w * ca + j * sa],
			       y = op == EMU_OP_FMA ? b[w * cb + j * sb] : 0.0;
			s[w] = fold_chain_step(op, sr, c, f, env, s[w], x, y,
			                       env->index + w * cidx + j, j, &nix[w], &nuf[w],
			                       &nov[w], &r[w]);
		}
	}
	for (int w = 0; w < FOLD_W; w++) {
		acc[w * sacc] = s[w];
		fold_done(&r[w], nix[w], nuf[w], nov[w]);
	}
}

/*
 * FOLD_V chains of one op in RNE as vector lanes (fold_loop_w's chains,
 * r[w] as it gives them): a block of up to FOLD_VB steps runs branch-free
 * in every lane, each step fast_elem's (round_rne where fold_step takes
 * round_rne_chain: the same results), the block's counts kept aside. A
 * block where a lane's step was left to the generic path or overflowed
 * (its first failing step must be found) runs again from its start
 * through fold_step, lane after lane, exactly as fold_loop_w steps it. S
 * is c->S, a constant where the caller's switch made it one.
 */
#define FOLD_V 8
#define FOLD_VB 32
static inline __attribute__((always_inline)) void
fold_lanes(const int S, const emu_op op, const struct fconsts *c, const emu_format *f, double *acc,
           size_t sacc, const double *a, size_t sa, size_t ca, const double *b, size_t sb,
           size_t cb, size_t n, const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	double s[FOLD_V];
	uint64_t nix[FOLD_V], nuf[FOLD_V], nov[FOLD_V];
	for (int w = 0; w < FOLD_V; w++) {
		s[w] = acc[w * sacc];
		r[w] = (emu_a_flags){{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
		nix[w] = nuf[w] = nov[w] = 0;
	}
	for (size_t j0 = 0, m; j0 < n; j0 += m) {
		m = n - j0 < FOLD_VB ? n - j0 : FOLD_VB;
		double t[FOLD_V];
		uint64_t bad[FOLD_V], bix[FOLD_V], buf[FOLD_V], bov[FOLD_V], any = 0;
		for (int w = 0; w < FOLD_V; w++) {
			t[w] = s[w];
			bad[w] = bix[w] = buf[w] = bov[w] = 0;
		}
		for (size_t j = j0; j < j0 + m; j++)
			for (int w = 0; w < FOLD_V; w++) {
				double x = a[w * ca + j * sa],
				       y = op == EMU_OP_FMA ? b[w * cb + j * sb] : 0.0, v;
				uint64_t ix, uf, ov;
				bad[w] |= op == EMU_OP_FMA
				              ? fast_elem(S, op, false, c, x, y, t[w], 0, &v, &ix, &uf, &ov)
				              : fast_elem(S, op, false, c, t[w], x, 0.0, 0, &v, &ix, &uf,
				                          &ov);
				t[w] = v;
				bix[w] += ix;
				buf[w] += uf;
				bov[w] += ov;
			}
		for (int w = 0; w < FOLD_V; w++)
			any |= bad[w] | bov[w];
		if (!any) {
			for (int w = 0; w < FOLD_V; w++) {
				s[w] = t[w];
				nix[w] += bix[w];
				nuf[w] += buf[w];
				nov[w] += bov[w];
			}
			continue;
		}
		for (int w = 0; w < FOLD_V; w++)
			for (size_t j = j0; j < j0 + m; j++) {
				double x = a[w * ca + j * sa],
				       y = op == EMU_OP_FMA ? b[w * cb + j * sb] : 0.0;
				s[w] = fold_chain_step(op, false, c, f, env, s[w], x, y,
				                       env->index + w * cidx + j, j, &nix[w],
				                       &nuf[w], &nov[w], &r[w]);
			}
	}
	for (int w = 0; w < FOLD_V; w++) {
		acc[w * sacc] = s[w];
		fold_done(&r[w], nix[w], nuf[w], nov[w]);
	}
}

#define FOLD_LANES_S(OP)                                                                           \
	case OP:                                                                                   \
		if (c->S == 45) /* bf16 */                                                         \
			fold_lanes(45, OP, c, f, acc, sacc, a, sa, ca, b, sb, cb, n, env, cidx, r); \
		else if (c->S == 42) /* fp16 */                                                    \
			fold_lanes(42, OP, c, f, acc, sacc, a, sa, ca, b, sb, cb, n, env, cidx, r); \
		else                                                                               \
			fold_lanes(c->S, OP, c, f, acc, sacc, a, sa, ca, b, sb, cb, n, env, cidx,  \
			           r);                                                             \
		break

/* fold_lanes for add, sub, mul and fma (fast_ok's constants in c) */
A_CLONES static void fold_lanes_8(emu_op op, const struct fconsts *c, const emu_format *f,
                                  double *acc, size_t sacc, const double *a, size_t sa, size_t ca,
                                  const double *b, size_t sb, size_t cb, size_t n,
                                  const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	switch (op) {
		FOLD_LANES_S(EMU_OP_ADD);
		FOLD_LANES_S(EMU_OP_SUB);
		FOLD_LANES_S(EMU_OP_MUL);
		FOLD_LANES_S(EMU_OP_FMA);
	default:
		break;
	}
}

/* f is IEEE binary32 (what the CPU's float is) */
/*
 * An add or sub fold in binary32, RNE, no sat, ftz or daz: each step is the
 * CPU's float addition, which is that rounding, so the chain waits only for
 * it; whether the step was exact comes from Knuth's TwoSum in float, off
 * the chain. Tininess needs no test: an inexact float sum is at least
 * 2^-126 (a sum below it is a multiple of 2^-149, exact). A step whose
 * operand is not a float value, or whose result is not finite (NaN, an
 * infinity, an overflow), is emu_a_element's, as in fold_loop.
 *
 * F32_BLK steps at a time while the state is a float: the operands
 * converted and checked in one vector loop, the chain of float sums alone
 * in a second (each sum kept), their TwoSum errors and finiteness in a
 * third; a block where any operand or sum fails is run again step by step
 * from its start (fold_f32_steps), which the blocks leave untouched.
 */
enum { F32_BLK = 256 };

/* The inexact bit of the float sum t = p + x (Knuth's TwoSum, in float) */
static inline __attribute__((always_inline)) uint64_t f32_add_inexact(float p, float x, float t)
{
	float bb = t - p;
	return ((p - (t - bb)) + (x - bb)) != 0;
}

/* Steps j0..j1-1 one at a time from the state (*s, *fs, *in_float). */
static void fold_f32_steps(emu_op op, const emu_format *f, const double *a, size_t sa, size_t j0,
                           size_t j1, const emu_env *env, uint8_t *flags, double *s, float *fs,
                           bool *in_float, uint64_t *nix, emu_a_flags *r)
{
	emu_env e = *env;
	for (size_t j = j0; j < j1; j++) {
		double x = op == EMU_OP_SUB ? -a[j * sa] : a[j * sa];
		float fx = (float)x;
		if (*in_float && (double)fx == x) {
			float t = *fs + fx;
			if (isfinite(t)) {
				uint64_t ix = f32_add_inexact(*fs, fx, t);
				*nix += ix;
				if (flags)
					flags[j] = (uint8_t)(ix << 4);
				*fs = t;
				continue;
			}
		}
		unsigned v = 0;
		e.index = env->index + j;
		if (*in_float)
			*s = (double)*fs;
		*s = emu_a_element(op, f, *s, a[j * sa], 0, &e, &v);
		*fs = (float)*s;
		*in_float = (double)*fs == *s;
		fold_note(r, flags, j, v);
	}
}

A_CLONES static emu_a_flags fold_f32(emu_op op, const emu_format *f, double *acc, const double *a,
                                     size_t sa, size_t n, const emu_env *env, uint8_t *flags)
{
	emu_a_flags r = {{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
	double s = *acc;
	/* the chain's state stays a float (no conversion on it) while s is one */
	float fs = (float)s;
	bool in_float = (double)fs == s;
	uint64_t nix = 0;
	const double sg = op == EMU_OP_SUB ? -1.0 : 1.0;
	float xb[F32_BLK], tb[F32_BLK];
	for (size_t j = 0; j < n;) {
		size_t m = n - j < F32_BLK ? n - j : F32_BLK;
		if (in_float) {
			int32_t good = 1;
			for (size_t i = 0; i < m; i++) {
				double x = sg * a[(j + i) * sa];
				xb[i] = (float)x;
				good &= (double)xb[i] == x;
			}
			if (good) {
				float c = fs;
				for (size_t i = 0; i < m; i++) {
					c = c + xb[i];
					tb[i] = c;
				}
				uint64_t nb = 0;
				for (size_t i = 0; i < m; i++) {
					uint64_t ix =
					    f32_add_inexact(i ? tb[i - 1] : fs, xb[i], tb[i]);
					good &= fabsf(tb[i]) <= FLT_MAX;
					nb += ix;
					if (flags)
						flags[j + i] = (uint8_t)(ix << 4);
				}
				if (good) {
					nix += nb;
					fs = tb[m - 1];
					j += m;
					continue;
				}
			}
		}
		fold_f32_steps(op, f, a, sa, j, j + m, env, flags, &s, &fs, &in_float, &nix, &r);
		j += m;
	}
	*acc = in_float ? (double)fs : s;
	fold_done(&r, nix, 0, 0);
	return r;
}

/* Eight chains of fold_f32 (as fold_f32_w gives them) as vector lanes, or
 * sixteen as two vectors (V): a
 * block of F32_LB steps while every lane's state is a float, its operands
 * converted and checked first, then the eight chains of float sums stepped
 * as one vector, their TwoSum errors counted without a branch (a sum that
 * is not finite leaves the lane's last one so: an infinity plus a float is
 * an infinity or NaN, and NaN stays); a block where an operand is not a
 * float value or a lane's last sum is not finite runs again from its start
 * through fold_f32_steps, lane after lane. */
enum { F32_LB = 32 };
typedef float f32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) void
fold_f32_v(const int V, emu_op op, const emu_format *f, double *acc, size_t sacc, const double *a,
           size_t sa, size_t ca, size_t n, const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	enum { VMAX = 2 };
	const int W = 8 * V;
	double s[8 * VMAX];
	float fs[8 * VMAX];
	bool in_float[8 * VMAX];
	uint64_t nix[8 * VMAX];
	const double sg = op == EMU_OP_SUB ? -1.0 : 1.0;
	float xb[F32_LB * 8 * VMAX]; /* step j's lanes at j·W: rows of W */
	for (int w = 0; w < W; w++) {
		r[w] = (emu_a_flags){{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
		s[w] = acc[w * sacc];
		fs[w] = (float)s[w];
		in_float[w] = (double)fs[w] == s[w];
		nix[w] = 0;
	}
	for (size_t j0 = 0, m; j0 < n; j0 += m) {
		m = n - j0 < F32_LB ? n - j0 : F32_LB;
		int32_t all = 1;
		for (int w = 0; w < W; w++)
			all &= in_float[w];
		if (all) { /* the operands, lane by lane a step, checked */
			for (size_t j = 0; j < m; j++)
				for (int w = 0; w < W; w++) {
					double x = sg * a[w * ca + (j0 + j) * sa];
					xb[j * W + w] = (float)x;
					all &= (double)xb[j * W + w] == x;
				}
		}
		if (all) { /* the sums: once not finite, a lane's sums stay so */
			/* a vector of eight chains (GCC's vector extension; V of
			 * them side by side, each stepping while another waits on
			 * its add): written lane by lane, GCC kept the chain's adds
			 * scalar and shuffled them into the vector TwoSum at every
			 * step */
			f32x8 t[VMAX], z = {0};
			i32x8 bix[VMAX];
			for (int v = 0; v < V; v++) {
				memcpy(&t[v], fs + 8 * v, sizeof t[v]);
				bix[v] = (i32x8){0};
			}
			for (size_t j = 0; j < m; j++)
				for (int v = 0; v < V; v++) {
					f32x8 x;
					memcpy(&x, xb + j * W + 8 * v, sizeof x);
					f32x8 tw = t[v] + x;
					f32x8 bb = tw - t[v];
					f32x8 err = (t[v] - (tw - bb)) + (x - bb);
					bix[v] -= err != z; /* all ones where inexact */
					t[v] = tw;
				}
			for (int w = 0; w < W; w++)
				// cppcheck-suppress uninitvar ; t[v] is set for every v < V
				all &= fabsf(t[w / 8][w % 8]) <= FLT_MAX;
			if (all) {
				for (int w = 0; w < W; w++) {
					fs[w] = t[w / 8][w % 8];
					nix[w] += (uint64_t)bix[w / 8][w % 8];
				}
				continue;
			}
		}
		for (int w = 0; w < W; w++) {
			emu_env e = *env;
			e.index = env->index + (uint64_t)w * cidx;
			fold_f32_steps(op, f, a + w * ca, sa, j0, j0 + m, &e, NULL, &s[w], &fs[w],
			               &in_float[w], &nix[w], &r[w]);
		}
	}
	for (int w = 0; w < W; w++) {
		acc[w * sacc] = in_float[w] ? (double)fs[w] : s[w];
		fold_done(&r[w], nix[w], 0, 0);
	}
}

A_CLONES static void fold_f32_8(emu_op op, const emu_format *f, double *acc, size_t sacc,
                                const double *a, size_t sa, size_t ca, size_t n,
                                const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	fold_f32_v(1, op, f, acc, sacc, a, sa, ca, n, env, cidx, r);
}

A_CLONES static void fold_f32_16(emu_op op, const emu_format *f, double *acc, size_t sacc,
                                 const double *a, size_t sa, size_t ca, size_t n,
                                 const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	fold_f32_v(2, op, f, acc, sacc, a, sa, ca, n, env, cidx, r);
}

/* FOLD_W chains of fold_f32 stepped together, each exactly its own call
 * (chain w on acc[w·sacc] and a + w·ca, its SR indices from env->index +
 * w·cidx: rne has none, but its scalar steps keep them) */
static void fold_f32_w(emu_op op, const emu_format *f, double *acc, size_t sacc, const double *a,
                       size_t sa, size_t ca, size_t n, const emu_env *env, uint64_t cidx,
                       emu_a_flags *r)
{
	enum { W = 4 };
	double s[W];
	float fs[W];
	bool in_float[W];
	uint64_t nix[W] = {0};
	for (int w = 0; w < W; w++) {
		r[w] = (emu_a_flags){{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
		s[w] = acc[w * sacc];
		fs[w] = (float)s[w];
		in_float[w] = (double)fs[w] == s[w];
	}
	for (size_t j = 0; j < n; j++) {
#pragma GCC unroll 4
		for (int w = 0; w < W; w++) {
			double x = a[w * ca + j * sa];
			x = op == EMU_OP_SUB ? -x : x;
			float fx = (float)x;
			if (in_float[w] && (double)fx == x) {
				float t = fs[w] + fx;
				if (isfinite(t)) {
					float bb = t - fs[w];
					float err = (fs[w] - (t - bb)) + (fx - bb);
					nix[w] += err != 0;
					fs[w] = t;
					continue;
				}
			}
			unsigned v = 0;
			emu_env e = *env;
			e.index = env->index + (uint64_t)w * cidx + j;
			if (in_float[w])
				s[w] = (double)fs[w];
			s[w] = emu_a_element(op, f, s[w], a[w * ca + j * sa], 0, &e, &v);
			fs[w] = (float)s[w];
			in_float[w] = (double)fs[w] == s[w];
			fold_note(&r[w], NULL, j, v);
		}
	}
	for (int w = 0; w < W; w++) {
		acc[w * sacc] = in_float[w] ? (double)fs[w] : s[w];
		fold_done(&r[w], nix[w], 0, 0);
	}
}

/* A step fold_fma32's float path leaves: emu_a_element's, noted */
static __attribute__((noinline)) double fma32_slow(const emu_format *f, double x, double y,
                                                   double s, const emu_env *env, uint64_t index,
                                                   emu_a_flags *r, uint8_t *flags, size_t j)
{
	unsigned v = 0;
	emu_env e = *env;
	e.index = index;
	s = emu_a_element(EMU_OP_FMA, f, x, y, s, &e, &v);
	fold_note(r, flags, j, v);
	return s;
}

/* Whether tw = fmaf(x, y, c) decides a binary32 fma step alone: x and y
 * float values, tw finite, and not inexact at or below 2^-126 (where
 * tininess asks the unbounded rounding); *ix its inexact bit: x·y is exact
 * in double, TwoSum gives x·y + c = d + e exactly, and the step is exact
 * iff e = 0 and tw = d. */
static inline __attribute__((always_inline)) int32_t fma32_decided(double x, double y, float c,
                                                                   float tw, int32_t *ix)
{
	double p = x * y, c0 = (double)c, d = p + c0, bb = d - p;
	double e = (p - (d - bb)) + (c0 - bb);
	int32_t ixw = (e != 0) | ((double)tw != d);
	float at = fabsf(tw);
	*ix = ixw;
	return ((double)(float)x == x) & ((double)(float)y == y) & (at <= FLT_MAX) &
	       (!ixw | (at > 0x1p-126f));
}

/*
 * FMA_BLK steps of fma32_lanes' L chains at once while every lane's state is
 * a float: the fmaf chains alone, each step's sum kept, then every step's
 * exactness (TwoSum in double of x·y and the sum before it), operands and
 * finiteness checked as fma32_lanes checks them. true, with the lanes'
 * states, inexact counts and (L = 1) flags advanced, when every step of
 * every lane is decided so; false, with the states untouched, otherwise.
 */
enum { FMA_BLK = 64, FMA_LMAX = 16 };
static inline __attribute__((always_inline)) bool
fma32_block(const int L, float *fs, const int32_t *ok, uint64_t *nix, const double *a, size_t sa,
            size_t ca, const double *b, size_t sb, size_t cb, size_t j0, size_t m, uint8_t *flags)
{
	int32_t good = 1;
	for (int w = 0; w < L; w++)
		good &= ok[w];
	if (!good)
		return false;
	float tb[FMA_BLK][FMA_LMAX], c[FMA_LMAX];
	uint64_t nb[FMA_LMAX];
	for (int w = 0; w < L; w++) {
		c[w] = fs[w];
		nb[w] = 0;
	}
	for (size_t i = 0; i < m; i++)
		for (int w = 0; w < L; w++) {
			size_t j = j0 + i;
			c[w] = fmaf((float)a[w * ca + j * sa], (float)b[w * cb + j * sb], c[w]);
			tb[i][w] = c[w];
		}
	for (size_t i = 0; i < m; i++)
		for (int w = 0; w < L; w++) {
			size_t j = j0 + i;
			int32_t ixw;
			good &= fma32_decided(a[w * ca + j * sa], b[w * cb + j * sb],
			                      i ? tb[i - 1][w] : fs[w], tb[i][w], &ixw);
			nb[w] += (uint64_t)ixw;
			if (flags)
				flags[j] = (uint8_t)(ixw << 4);
		}
	if (!good)
		return false;
	for (int w = 0; w < L; w++) {
		/* m >= 1: row m - 1 was written */
		fs[w] = tb[m - 1][w]; // NOLINT(clang-analyzer-core.uninitialized.Assign)
		nix[w] += nb[w];
	}
	return true;
}

/*
 * An fma fold in binary32, RNE, no sat, ftz or daz: each step is the CPU's
 * float fma (fmaf: correctly rounded, one instruction in the clones that
 * have FMA, glibc's otherwise), which is that rounding, so the chain waits
 * only for it. Whether the step was exact comes off the chain: x·y is exact
 * in double (two floats), TwoSum gives x·y + s = d + e exactly, and the
 * step is exact iff e = 0 and t = d. A step whose operands are not float
 * values, whose result is not finite, or which is inexact at or below
 * 2^-126 (where tininess asks the unbounded rounding) is emu_a_element's,
 * as in fold_loop.
 *
 * L chains as lanes (chain w on acc[w·sacc], a + w·ca, b + w·cb; SR indices
 * env->index + w·cidx + j, which the scalar steps keep), each exactly its
 * own fold: each step computed for every lane without a branch (so the
 * lanes vectorise), taken as a whole when every lane's float step decides
 * it, else lane by lane, a lane the float path leaves going to fma32_slow
 * from its state before the step. A lane's state is its accumulator as a
 * float while it is a float value (ok), as a double otherwise. flags: each
 * step's, L = 1 only.
 */
static inline __attribute__((always_inline)) void
fma32_lanes(const int L, const emu_format *f, double *acc, size_t sacc, const double *a, size_t sa,
            size_t ca, const double *b, size_t sb, size_t cb, size_t n, const emu_env *env,
            uint64_t cidx, emu_a_flags *r, uint8_t *flags)
{
	float fs[FMA_LMAX];
	double s[FMA_LMAX];
	int32_t ok[FMA_LMAX];
	uint64_t nix[FMA_LMAX];
	for (int w = 0; w < L; w++) {
		r[w] = (emu_a_flags){{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
		s[w] = acc[w * sacc];
		fs[w] = (float)s[w];
		ok[w] = (double)fs[w] == s[w];
		nix[w] = 0;
	}
	for (size_t j0 = 0, m; j0 < n; j0 += m) {
		m = n - j0 < FMA_BLK ? n - j0 : FMA_BLK;
		if (fma32_block(L, fs, ok, nix, a, sa, ca, b, sb, cb, j0, m, flags))
			continue;
		for (size_t j = j0; j < j0 + m; j++) {
			float t[FMA_LMAX];
			int32_t ix[FMA_LMAX], good[FMA_LMAX], all = 1;
			for (int w = 0; w < L; w++) {
				double x = a[w * ca + j * sa], y = b[w * cb + j * sb];
				float tw = fmaf((float)x, (float)y, fs[w]);
				int32_t ixw;
				good[w] = ok[w] & fma32_decided(x, y, fs[w], tw, &ixw);
				t[w] = tw;
				ix[w] = ixw;
				all &= good[w];
			}
			for (int w = 0; w < L; w++) {
				if (all || good[w]) {
					fs[w] = t[w];
					nix[w] += (uint64_t)ix[w];
					if (flags)
						flags[j] = (uint8_t)(ix[w] << 4);
					continue;
				}
				double x = a[w * ca + j * sa], y = b[w * cb + j * sb];
				s[w] = fma32_slow(f, x, y, ok[w] ? (double)fs[w] : s[w], env,
				                  env->index + (uint64_t)w * cidx + j, &r[w], flags,
				                  j);
				fs[w] = (float)s[w];
				ok[w] = (double)fs[w] == s[w];
			}
		}
	}
	for (int w = 0; w < L; w++) {
		acc[w * sacc] = ok[w] ? (double)fs[w] : s[w];
		fold_done(&r[w], nix[w], 0, 0);
	}
}

A_CLONES static emu_a_flags fold_fma32(const emu_format *f, double *acc, const double *a, size_t sa,
                                       const double *b, size_t sb, size_t n, const emu_env *env,
                                       uint8_t *flags)
{
	emu_a_flags r;
	fma32_lanes(1, f, acc, 0, a, sa, 0, b, sb, 0, n, env, 0, &r, flags);
	return r;
}

A_CLONES static void fold_fma32_4(const emu_format *f, double *acc, size_t sacc, const double *a,
                                  size_t sa, size_t ca, const double *b, size_t sb, size_t cb,
                                  size_t n, const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	fma32_lanes(4, f, acc, sacc, a, sa, ca, b, sb, cb, n, env, cidx, r, NULL);
}

/* L lanes, with the chains' shared operand (ca = 0: one row of A against
 * several columns, a GEMM's dot products) read once a step, and the
 * other's lanes adjacent (cb = 1) loaded as a vector */
static inline __attribute__((always_inline)) void
fma32_lanes_strided(const int L, const emu_format *f, double *acc, size_t sacc, const double *a,
                    size_t sa, size_t ca, const double *b, size_t sb, size_t cb, size_t n,
                    const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	if (ca == 0 && cb == 1)
		fma32_lanes(L, f, acc, sacc, a, sa, 0, b, sb, 1, n, env, cidx, r, NULL);
	else if (ca == 0)
		fma32_lanes(L, f, acc, sacc, a, sa, 0, b, sb, cb, n, env, cidx, r, NULL);
	else
		fma32_lanes(L, f, acc, sacc, a, sa, ca, b, sb, cb, n, env, cidx, r, NULL);
}

A_CLONES static void fold_fma32_8(const emu_format *f, double *acc, size_t sacc, const double *a,
                                  size_t sa, size_t ca, const double *b, size_t sb, size_t cb,
                                  size_t n, const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	fma32_lanes_strided(8, f, acc, sacc, a, sa, ca, b, sb, cb, n, env, cidx, r);
}

/* Sixteen lanes: two vectors of chains in flight, so that one waits on
 * its fmaf while the other steps */
A_CLONES static void fold_fma32_16(const emu_format *f, double *acc, size_t sacc, const double *a,
                                   size_t sa, size_t ca, const double *b, size_t sb, size_t cb,
                                   size_t n, const emu_env *env, uint64_t cidx, emu_a_flags *r)
{
	fma32_lanes_strided(16, f, acc, sacc, a, sa, ca, b, sb, cb, n, env, cidx, r);
}

/* The binary32 RNE folds above apply: fold_f32 (add, sub), fold_fma32. */
static bool f32_fold(emu_op op, const emu_format *f, const emu_env *env)
{
	return (op == EMU_OP_ADD || op == EMU_OP_SUB || op == EMU_OP_FMA) && env->mode == EMU_RNE &&
	       !env->sat && !env->ftz && !env->daz && emu_is_binary32(f) && emu_fpu_nearest() &&
	       emu_fpu_subnormals();
}

#define FOLD_CASE(OP)                                                                              \
	case OP:                                                                                   \
		return sr ? fold_loop(OP, true, true, &k, f, acc, a, sa, b, sb, n, env, flags)     \
		          : fold_loop(OP, false, true, &k, f, acc, a, sa, b, sb, n, env, flags)

emu_a_flags emu_a_fold(emu_op op, const emu_format *f, double *acc, const double *a, size_t sa,
                       const double *b, size_t sb, size_t n, const emu_env *env, uint8_t *flags)
{
	struct fconsts k;
	if (f32_fold(op, f, env) && (op != EMU_OP_FMA || b))
		return op == EMU_OP_FMA ? fold_fma32(f, acc, a, sa, b, sb, n, env, flags)
		                        : fold_f32(op, f, acc, a, sa, n, env, flags);
	/* min and max never round: the fast path's conditions hold for them in
	 * every mode (sr needs no p limit) */
	emu_env rne = *env;
	bool minmax = op == EMU_OP_MIN || op == EMU_OP_MAX;
	if (minmax)
		rne.mode = EMU_RNE;
	bool sr = !minmax && env->mode == EMU_SR;
	if (fast_ok(minmax ? EMU_OP_ADD : op, f, &rne, &k)) {
		switch (op) {
			FOLD_CASE(EMU_OP_ADD);
			FOLD_CASE(EMU_OP_SUB);
			FOLD_CASE(EMU_OP_MUL);
			FOLD_CASE(EMU_OP_FMA);
			FOLD_CASE(EMU_OP_MIN);
			FOLD_CASE(EMU_OP_MAX);
		default:
			break;
		}
	}
	return fold_loop(op, false, false, &k, f, acc, a, sa, b, sb, n, env, flags);
}

/* chain w's result into the sum of m chains' (first_bad numbered w·cidx + j) */
static void fold_merge(emu_a_flags *t, const emu_a_flags *r, size_t w, uint64_t cidx)
{
	for (int k = 0; k < 5; k++)
		t->count[k] += r->count[k];
	t->any |= r->any;
	if (t->first_bad == UINT64_MAX && r->first_bad != UINT64_MAX) {
		t->first_bad = (uint64_t)w * cidx + r->first_bad;
		t->first_flags = r->first_flags;
	}
}

#define FOLD_W_CASE(OP)                                                                            \
	case OP:                                                                                   \
		if (sr)                                                                            \
			fold_loop_w(OP, true, &k, f, acc + w * sacc, sacc, a + w * ca, sa, ca,     \
			            b ? b + w * cb : NULL, sb, cb, n, &e, cidx, r);                \
		else                                                                               \
			fold_loop_w(OP, false, &k, f, acc + w * sacc, sacc, a + w * ca, sa, ca,    \
			            b ? b + w * cb : NULL, sb, cb, n, &e, cidx, r);                \
		break

emu_a_flags emu_a_fold_n(emu_op op, const emu_format *f, double *acc, size_t sacc, const double *a,
                         size_t sa, size_t ca, const double *b, size_t sb, size_t cb, size_t n,
                         size_t m, const emu_env *env, uint64_t cidx)
{
	emu_a_flags t = {{0, 0, 0, 0, 0}, 0, UINT64_MAX, 0};
	struct fconsts k;
	bool sr = env->mode == EMU_SR;
	bool wide =
	    (op == EMU_OP_ADD || op == EMU_OP_SUB || op == EMU_OP_MUL || op == EMU_OP_FMA) &&
	    fast_ok(op, f, env, &k);
	size_t w = 0;
	/* binary32 in rne: fold_f32's and fold_fma32's float steps, chains
	 * together */
	bool f32 = f32_fold(op, f, env) && (op != EMU_OP_FMA || b);
	/* sixteen chains as lanes where they are long enough for a step's
	 * latency to matter (a short chain's set-up is the cost) */
	/* sixteen chains as two vectors where they are long enough for a
	 * step's latency to matter (a short chain's set-up is the cost), then
	 * eight as one, then four */
	const size_t long16 = op == EMU_OP_FMA ? 16 : F32_LB; /* the least n for 16 */
	while (f32 && w + 4 <= m) {
		const size_t L = n >= long16 && w + 16 <= m ? 16 : w + 8 <= m ? 8 : 4;
		emu_a_flags r[16];
		emu_env e = *env;
		e.index = env->index + w * cidx;
		double *aw = acc + w * sacc;
		const double *xa = a + w * ca, *xb = op == EMU_OP_FMA ? b + w * cb : NULL;
		if (op == EMU_OP_FMA && L == 16)
			fold_fma32_16(f, aw, sacc, xa, sa, ca, xb, sb, cb, n, &e, cidx, r);
		else if (op == EMU_OP_FMA && L == 8)
			fold_fma32_8(f, aw, sacc, xa, sa, ca, xb, sb, cb, n, &e, cidx, r);
		else if (op == EMU_OP_FMA)
			fold_fma32_4(f, aw, sacc, xa, sa, ca, xb, sb, cb, n, &e, cidx, r);
		else if (L == 16)
			fold_f32_16(op, f, aw, sacc, xa, sa, ca, n, &e, cidx, r);
		else if (L == 8)
			fold_f32_8(op, f, aw, sacc, xa, sa, ca, n, &e, cidx, r);
		else
			fold_f32_w(op, f, aw, sacc, xa, sa, ca, n, &e, cidx, r);
		for (size_t q = 0; q < L; q++)
			fold_merge(&t, &r[q], w + q, cidx);
		w += L;
	}
	for (; wide && !sr && !f32 && (op != EMU_OP_FMA || b) && w + FOLD_V <= m; w += FOLD_V) {
		emu_a_flags r[FOLD_V];
		emu_env e = *env;
		e.index = env->index + w * cidx;
		fold_lanes_8(op, &k, f, acc + w * sacc, sacc, a + w * ca, sa, ca,
		             b ? b + w * cb : NULL, sb, cb, n, &e, cidx, r);
		for (int q = 0; q < FOLD_V; q++)
			fold_merge(&t, &r[q], w + (size_t)q, cidx);
	}
	for (; wide && !f32 && w + FOLD_W <= m; w += FOLD_W) {
		emu_a_flags r[FOLD_W];
		emu_env e = *env;
		e.index = env->index + w * cidx;
		switch (op) {
			FOLD_W_CASE(EMU_OP_ADD);
			FOLD_W_CASE(EMU_OP_SUB);
			FOLD_W_CASE(EMU_OP_MUL);
			FOLD_W_CASE(EMU_OP_FMA);
		default:
			break;
		}
		for (int q = 0; q < FOLD_W; q++)
			fold_merge(&t, &r[q], w + (size_t)q, cidx);
	}
	for (; w < m; w++) { /* the rest (and min, max, the slow cases): one chain at a time */
		emu_env e = *env;
		e.index = env->index + w * cidx;
		emu_a_flags r = emu_a_fold(op, f, acc + w * sacc, a + w * ca, sa,
		                           b ? b + w * cb : NULL, sb, n, &e, NULL);
		fold_merge(&t, &r, w, cidx);
	}
	return t;
}
