/*
 * backend.c — the three backends behind the kernel interface. FAST calls the emulator
 * on exact double values; EXACT encodes the same values and calls the MPFR
 * backend, so the two run the same kernel code and differ only in who
 * rounds; TRUTH computes at EMU_TRUTH_PREC bits and ignores formats.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/internal.h"
#include "emu/engine/kern.h"
#include "emu/engine/truth_exp.h"

static const char *const be_names[EMU_NBE] = {"fast", "exact", "truth"};

const char *emu_be_name(emu_be_kind k)
{
	return k < EMU_NBE ? be_names[k] : "?";
}

emu_be_kind emu_be_by_name(const char *name)
{
	for (int i = 0; i < EMU_NBE; i++)
		if (strcmp(be_names[i], name) == 0)
			return (emu_be_kind)i;
	return EMU_NBE;
}

void emu_be_init(emu_be *be, emu_be_kind kind, const emu_env *env)
{
	memset(be, 0, sizeof *be);
	be->kind = kind;
	be->env = *env;
	be->env.index = 0;
}

void emu_be_free(emu_be *be)
{
	emu_truth_split_free(be);
	for (size_t i = 0; i < be->nvecs; i++)
		free(be->vecs[i]);
	free(be->vecs);
	be->vecs = NULL;
	be->nvecs = be->capvecs = 0;
	be->scratch = NULL;
	free(be->st.step_ops);
	free(be->st.step_flags);
	be->st.step_ops = NULL;
	be->st.step_flags = NULL;
	be->st.nsteps = 0;
}

/* The value of an encoding, a NaN keeping its sign bit (an overflow or an
 * infinity in a format without inf is a signed NaN, docs/numerics.md), as
 * the fast operations' doubles do. */
static double decode(const emu_format *f, emu_bits b)
{
	double v = emu_decode(f, b);
	return isnan(v) && f->nan != EMU_NAN_FNUZ && (b & f->sign_mask) ? -v : v;
}

/* Flags of a table result v that is not the correctly rounded one (so
 * never exact): docs/gpu.md. */
static unsigned table_flags(const emu_format *f, double x, double v)
{
	if (isnan(v))
		return isnan(x) ? 0 : EMU_FLAG_INVALID;
	if (x == 0 || isinf(x)) /* the exact cases: only a pole is signalled */
		return isinf(v) && x == 0 ? EMU_FLAG_DIVBYZERO : 0;
	unsigned fl = EMU_FLAG_INEXACT;
	if (isinf(v) && isfinite(x))
		fl |= EMU_FLAG_OVERFLOW;
	if (fabs(v) < f->min_normal)
		fl |= EMU_FLAG_UNDERFLOW;
	return fl;
}

/*
 * Range check of an exact value. Rounding v to f depends only on which side
 * of f's values and midpoints v lies, and those are doubles (p <= 24): so v
 * is replaced by its nearest double x plus a tail that only carries the
 * sign of v − x (|tail| far below ulp(x)/2), which emu_round_value rounds
 * exactly as it would round v, in every mode. Magnitudes beyond 2^±900 lie
 * beyond every format's range and are clamped there.
 */
static unsigned range_flags(mpfr_srcptr v, const emu_format *f, const emu_env *env)
{
	if (!mpfr_number_p(v) || mpfr_zero_p(v))
		return 0;
	double x, tail = 0;
	mpfr_exp_t e = mpfr_get_exp(v);
	/* 2^emin <= |v| < 2^emax <= max: rounds to a nonzero finite value in
	 * every mode */
	if (e - 1 >= f->emin && e <= f->emax && ldexp(1, f->emax) <= f->max)
		return 0;
	/* |v| < 2^(emin − p − 1), under half of f's smallest subnormal: to
	 * nearest or toward zero, zero (a softmax's far tail, most of its
	 * elements) */
	if (e < (mpfr_exp_t)f->emin - f->p - 1 && f->has_zero &&
	    (env->mode == EMU_RNE || env->mode == EMU_RNA || env->mode == EMU_RTZ))
		return EMU_FLAG_UNDERFLOW;
	if (e > 900 || e < -900) {
		x = ldexp(mpfr_sgn(v) < 0 ? -1.0 : 1.0, e > 0 ? 900 : -900);
	} else {
		x = mpfr_get_d(v, MPFR_RNDN);
		int c = mpfr_cmp_d(v, x);
		if (c)
			tail = ldexp(c < 0 ? -fabs(x) : fabs(x), -80);
	}
	emu_env e2 = *env;
	e2.daz = false;
	unsigned fl = 0;
	double r = emu_round_value(f, x, tail, &e2, &fl);
	return (fl & EMU_FLAG_OVERFLOW) | (r == 0 ? EMU_FLAG_UNDERFLOW : 0);
}

unsigned emu_k_range(const emu_be *be, mpfr_srcptr v, const emu_format *f)
{
	return be->kind == EMU_BE_TRUTH && f ? range_flags(v, f, &be->env) : 0;
}

/* range_peak: log2 |v| from MPFR's exponent, so exp(1e6) does not overflow */
static unsigned range_note_mp(emu_be *be, mpfr_srcptr v, const emu_format *f)
{
	if (!f)
		return 0;
	if (mpfr_number_p(v) && !mpfr_zero_p(v)) {
		/* log2 of the RNE threshold, f's last */
		static _Thread_local const emu_format *lf;
		static _Thread_local double lt;
		if (f != lf) {
			lt = log2(f->max + ldexp(1, f->emax - f->p));
			lf = f;
		}
		/* e + log2 |m| <= EXP(v) (m in [1/2, 1), e = EXP(v), or EXP(v) + 1
		 * with m = 1/2 when m rounds up): a peak that cannot beat the
		 * one held is not computed */
		if ((double)mpfr_get_exp(v) - lt > be->range_peak) {
			long e;
			double m = mpfr_get_d_2exp(&e, v, MPFR_RNDN);
			double peak = (double)e + log2(fabs(m)) - lt;
			if (peak > be->range_peak)
				be->range_peak = peak;
		}
	}
	return be->kind == EMU_BE_TRUTH ? range_flags(v, f, &be->env) : 0;
}

/* What input x stored as v (flags fl) counts: changed (another encoding,
 * unless both are NaN), overflowed (the flag, or finite to not finite),
 * flushed (a finite nonzero to a zero); each 0 or 1, from the doubles' bits
 * without branches, so that a loop of them vectorises. */
static inline void in_counts(double x, double v, unsigned fl, uint64_t *ch, uint64_t *ov,
                             uint64_t *fz)
{
	const uint64_t mag = ~(1ull << 63), inf = 0x7ffull << 52;
	uint64_t ux, uv;
	memcpy(&ux, &x, sizeof ux);
	memcpy(&uv, &v, sizeof uv);
	uint64_t ax = ux & mag, av = uv & mag;
	uint64_t xfin = (ax < inf), vfin = (av < inf), xnan = (ax > inf), vnan = (av > inf);
	*ch += (ux != uv) & !(xnan & vnan);
	*ov += ((fl & EMU_FLAG_OVERFLOW) != 0) | (xfin & !vfin);
	*fz += (av == 0) & (ax != 0) & xfin;
}

void emu_k_note_input(emu_be *be, double x, double v, unsigned fl)
{
	emu_be_stats *st = &be->st;
	st->in_n++;
	in_counts(x, v, fl, &st->in_changed, &st->in_overflow, &st->in_flushed);
}

/* emu_k_note_input for n inputs x[j·sx] stored as d[j] with flags fl[j] */
EMU_VEC_CLONES static void note_inputs(emu_be *be, const double *x, size_t sx, const double *d,
                                       const uint8_t *fl, size_t n)
{
	uint64_t ch = 0, ov = 0, fz = 0;
	for (size_t j = 0; j < n; j++)
		in_counts(x[j * sx], d[j], fl[j], &ch, &ov, &fz);
	be->st.in_n += n;
	be->st.in_changed += ch;
	be->st.in_overflow += ov;
	be->st.in_flushed += fz;
}

/* A regular x's significand when it fits its top limb (every lower limb
 * 0) into *top; false when it does not. */
static bool mp_top_limb(mpfr_srcptr x, mp_limb_t *top)
{
	size_t nl = (size_t)(mpfr_get_prec(x) + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS;
	const mp_limb_t *l = mpfr_custom_get_significand((mpfr_ptr)x);
	for (size_t i = 0; i + 1 < nl; i++)
		if (l[i])
			return false;
	*top = l[nl - 1];
	return true;
}

/* x = ±2^k (its significand 1, every lower limb 0): a / x is a shift,
 * exact at any precision in MPFR's exponent range, so mpfr_div's value */
static bool mp_pow2(mpfr_srcptr x)
{
	mp_limb_t top;
	return mpfr_regular_p(x) && mp_top_limb(x, &top) &&
	       top == (mp_limb_t)1 << (GMP_NUMB_BITS - 1);
}

static void truth_op(emu_op op, mpfr_ptr d, mpfr_srcptr a, mpfr_srcptr b, mpfr_srcptr c)
{
	switch (op) {
	case EMU_OP_CVT:
		mpfr_set(d, a, MPFR_RNDN);
		break;
	case EMU_OP_ADD:
		mpfr_add(d, a, b, MPFR_RNDN);
		break;
	case EMU_OP_SUB:
		mpfr_sub(d, a, b, MPFR_RNDN);
		break;
	case EMU_OP_MUL:
		mpfr_mul(d, a, b, MPFR_RNDN);
		break;
	case EMU_OP_DIV:
		if (mp_pow2(b)) { /* a kernel's 1/R, a scale: exact, a shift */
			bool neg = mpfr_signbit(b) != 0;
			mpfr_div_2si(d, a, (long)mpfr_get_exp(b) - 1, MPFR_RNDN);
			if (neg)
				mpfr_neg(d, d, MPFR_RNDN);
		} else {
			mpfr_div(d, a, b, MPFR_RNDN);
		}
		break;
	case EMU_OP_FMA:
		mpfr_fma(d, a, b, c, MPFR_RNDN);
		break;
	case EMU_OP_SQRT:
		mpfr_sqrt(d, a, MPFR_RNDN);
		break;
	case EMU_OP_EXP:
		emu_truth_exp(d, a);
		break;
	case EMU_OP_LOG:
		mpfr_log(d, a, MPFR_RNDN);
		break;
	case EMU_OP_LOG1P:
		mpfr_log1p(d, a, MPFR_RNDN);
		break;
	case EMU_OP_EXP2:
		mpfr_exp2(d, a, MPFR_RNDN);
		break;
	case EMU_OP_RSQRT:
		mpfr_rec_sqrt(d, a, MPFR_RNDN);
		break;
	case EMU_OP_MIN:
		mpfr_min(d, a, b, MPFR_RNDN);
		break;
	case EMU_OP_MAX:
		mpfr_max(d, a, b, MPFR_RNDN);
		break;
	case EMU_OP_NEG:
		mpfr_neg(d, a, MPFR_RNDN);
		break;
	case EMU_OP_ABS:
		mpfr_abs(d, a, MPFR_RNDN);
		break;
	default:
		mpfr_set_nan(d);
	}
}

/* ================= the array-level interface ================= */

static const char *const engine_steps[EMU_STEP0] = {
    "input", "scale", "quantize", "to_compute", "scale_inv", "dequantize",
};

static bool step_slot(emu_be_stats *st, size_t s);

void emu_steps(emu_be *be, const char *const *names, unsigned n)
{
	be->step_names = names;
	be->nstep_names = n;
	/* every step's counters at once, so their number does not depend on
	 * the order steps are met in (a kernel's parts on several threads meet
	 * them in another) */
	(void)step_slot(&be->st, EMU_STEP0 + (size_t)n);
}

const char *emu_step_name(const emu_be *be, unsigned s)
{
	if (s < EMU_STEP0)
		return engine_steps[s] ? engine_steps[s] : "?";
	s -= EMU_STEP0;
	return s < be->nstep_names && be->step_names[s] ? be->step_names[s] : "?";
}

/* the per-step counters, grown to hold step s; false out of memory (the
 * per-step counts are then not kept, everything else is) */
static bool step_slot(emu_be_stats *st, size_t s)
{
	if (s < st->nsteps)
		return true;
	size_t n = s + 1 > 2 * st->nsteps ? s + 1 : 2 * st->nsteps;
	uint64_t *ops = realloc(st->step_ops, n * sizeof *ops);
	if (!ops)
		return false;
	st->step_ops = ops;
	uint64_t(*fl)[EMU_NFLAGS] = realloc(st->step_flags, n * sizeof *fl);
	if (!fl)
		return false;
	st->step_flags = fl;
	memset(ops + st->nsteps, 0, (n - st->nsteps) * sizeof *ops);
	memset(fl + st->nsteps, 0, (n - st->nsteps) * sizeof *fl);
	st->nsteps = n;
	return true;
}

/* n operations of kind op in step s, cnt[k] of which raised flag k; the
 * first of them to raise overflow, invalid or divbyzero is element e with
 * flags efl (e = UINT64_MAX: none did) */
static void record(emu_be *be, unsigned s, emu_op op, uint64_t n, const uint64_t *cnt, unsigned any,
                   uint64_t e, unsigned efl)
{
	emu_be_stats *st = &be->st;
	st->ops[op] += n;
	st->all_flags |= any;
	bool ss = step_slot(st, s);
	if (ss)
		st->step_ops[s] += n;
	for (int k = 0; k < EMU_NFLAGS; k++) {
		st->flags[op][k] += cnt[k];
		if (ss)
			st->step_flags[s][k] += cnt[k];
	}
	unsigned bad = efl & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID | EMU_FLAG_DIVBYZERO);
	if (e != UINT64_MAX && bad && !st->first_set) {
		st->first_set = true;
		st->first_op = op;
		st->first_flags = bad;
		st->first_step = emu_step_name(be, s);
		st->first_index = e;
	}
}

void emu_be_stats_add(emu_be_stats *st, const emu_be_stats *fs)
{
	for (int op = 0; op < EMU_NOPS; op++) {
		st->ops[op] += fs->ops[op];
		for (int k = 0; k < EMU_NFLAGS; k++)
			st->flags[op][k] += fs->flags[op][k];
	}
	st->all_flags |= fs->all_flags;
	if (fs->nsteps > st->nsteps) {
		uint64_t *ops = realloc(st->step_ops, fs->nsteps * sizeof *ops);
		uint64_t(*fl)[EMU_NFLAGS] =
		    ops ? realloc(st->step_flags, fs->nsteps * sizeof *fl) : NULL;
		if (ops)
			st->step_ops = ops;
		if (fl) {
			st->step_flags = fl;
			memset(ops + st->nsteps, 0, (fs->nsteps - st->nsteps) * sizeof *ops);
			memset(fl + st->nsteps, 0, (fs->nsteps - st->nsteps) * sizeof *fl);
			st->nsteps = fs->nsteps;
		}
	}
	for (size_t s = 0; s < fs->nsteps && s < st->nsteps; s++) {
		st->step_ops[s] += fs->step_ops[s];
		for (int k = 0; k < EMU_NFLAGS; k++)
			st->step_flags[s][k] += fs->step_flags[s][k];
	}
	if (fs->first_set && !st->first_set) {
		st->first_set = true;
		st->first_op = fs->first_op;
		st->first_flags = fs->first_flags;
		st->first_step = fs->first_step;
		st->first_index = fs->first_index;
	}
	st->in_n += fs->in_n;
	st->in_changed += fs->in_changed;
	st->in_overflow += fs->in_overflow;
	st->in_flushed += fs->in_flushed;
}

void emu_note(emu_be *be, unsigned s, emu_op op, unsigned fl, uint64_t e)
{
	uint64_t cnt[EMU_NFLAGS];
	for (int k = 0; k < EMU_NFLAGS; k++)
		cnt[k] = (fl >> k) & 1;
	record(be, s, op, 1, cnt, fl, e, fl);
}

void emu_note_n(emu_be *be, unsigned s, emu_op op, uint64_t n, const emu_a_flags *f)
{
	record(be, s, op, n, f->count, f->any, f->first_bad, f->first_flags);
}

emu_vec *emu_vec_new(emu_be *be, size_t n)
{
	if (be->nvecs == be->capvecs) {
		size_t cap = be->capvecs ? 2 * be->capvecs : 16;
		emu_vec **nv = realloc(
		    be->vecs,
		    cap *
		        sizeof(
		            emu_vec *)); // NOLINT(bugprone-sizeof-expression): an array of pointers
		if (!nv)
			return NULL;
		be->vecs = nv;
		be->capvecs = cap;
	}
	bool truth = be->kind == EMU_BE_TRUTH;
	size_t limbs = mpfr_custom_get_size(EMU_TRUTH_PREC);
	size_t each = truth ? sizeof(__mpfr_struct) + limbs : sizeof(double);
	if (n > (SIZE_MAX - sizeof(emu_vec) - 64) / each)
		return NULL;
	emu_vec *v = malloc(sizeof(emu_vec) + 64 + n * each);
	if (!v)
		return NULL;
	v->n = n;
	v->d = NULL;
	v->m = NULL;
	/* the values start on a 64-byte line after the header */
	char *base = (char *)(v + 1) + ((64 - ((uintptr_t)(v + 1) & 63)) & 63);
	if (truth) {
		v->m = (__mpfr_struct *)(void *)base;
		char *lp = (char *)(v->m + n);
		for (size_t i = 0; i < n; i++)
			mpfr_custom_init_set(&v->m[i], MPFR_ZERO_KIND, 0, EMU_TRUTH_PREC,
			                     lp + i * limbs);
	} else {
		v->d = (double *)(void *)base;
		memset(v->d, 0, n * sizeof *v->d);
	}
	be->vecs[be->nvecs++] = v;
	return v;
}

void emu_truth_set_d(mpfr_ptr x, double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	uint64_t a = u & 0x7fffffffffffffffull;
	mpfr_prec_t p = mpfr_get_prec(x);
	if (GMP_NUMB_BITS != 64 || p < 53 || a == 0 || a >= 0x7ff0000000000000ull) {
		mpfr_set_d(x, d, MPFR_RNDN); /* zeros, inf, NaN */
		return;
	}
	/* d = ±m · 2^(bexp − 1075), m below 2^53; the top limb holds m shifted
	 * to its top bit (53 bits or fewer: p >= 53 leaves the bits below the
	 * precision zero), the lower limbs 0 */
	int bexp = (int)(a >> 52);
	uint64_t m = a & 0xfffffffffffffull;
	if (bexp)
		m |= 1ull << 52;
	else
		bexp = 1; /* a subnormal */
	int lz = __builtin_clzll(m);
	size_t nl = (size_t)(p + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS;
	mp_limb_t *l = mpfr_custom_get_significand(x);
	memset(l, 0, (nl - 1) * sizeof *l);
	l[nl - 1] = (mp_limb_t)(m << lz);
	mpfr_custom_init_set(x, u >> 63 ? -MPFR_REGULAR_KIND : MPFR_REGULAR_KIND,
	                     (mpfr_exp_t)(bexp - 1075 - lz + 64), p, l);
}

double emu_vget(const emu_be *be, const emu_vec *v, size_t i)
{
	(void)be;
	return v->m ? mpfr_get_d(&v->m[i], MPFR_RNDN) : v->d[i];
}

/* element j of an operand */
static inline size_t ix(emu_ref r, size_t j)
{
	return r.off + j * r.stride;
}

void emu_fill(emu_be *be, emu_ref dst, double x, size_t n)
{
	(void)be;
	if (!dst.v)
		return;
	for (size_t j = 0; j < n; j++) {
		if (dst.v->m)
			emu_truth_set_d(&dst.v->m[ix(dst, j)], x);
		else
			dst.v->d[ix(dst, j)] = x;
	}
}

void emu_set(emu_be *be, emu_ref dst, const double *x, size_t n)
{
	(void)be;
	if (!dst.v)
		return;
	if (dst.v->m) {
		for (size_t j = 0; j < n; j++)
			emu_truth_set_d(&dst.v->m[ix(dst, j)], x[j]);
	} else if (dst.stride == 1) {
		memcpy(dst.v->d + dst.off, x, n * sizeof *x);
	} else {
		for (size_t j = 0; j < n; j++)
			dst.v->d[ix(dst, j)] = x[j];
	}
}

void emu_copy(emu_be *be, emu_ref dst, emu_ref src, size_t n)
{
	(void)be;
	if (!dst.v || !src.v)
		return;
	for (size_t j = 0; j < n; j++) {
		if (dst.v->m)
			mpfr_set(&dst.v->m[ix(dst, j)], &src.v->m[ix(src, j)], MPFR_RNDN);
		else
			dst.v->d[ix(dst, j)] = src.v->d[ix(src, j)];
	}
}

/* What a run of operations raised: how many raised each flag, their OR,
 * and the first element that raised overflow, invalid or divbyzero. */
typedef struct {
	uint64_t cnt[EMU_NFLAGS];
	unsigned any, efl;
	uint64_t first; /* UINT64_MAX: none */
} tally;
#define TALLY0 ((tally){{0}, 0, 0, UINT64_MAX})

/* element e raised fl (most raise nothing: their counts are not touched,
 * which in an element loop of TRUTH was a fifth of map_part's time) */
static inline void tally_one(tally *t, unsigned fl, uint64_t e)
{
	if (!fl)
		return;
	for (int k = 0; k < EMU_NFLAGS; k++)
		t->cnt[k] += (fl >> k) & 1;
	t->any |= fl;
	if (t->first == UINT64_MAX &&
	    (fl & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID | EMU_FLAG_DIVBYZERO))) {
		t->first = e;
		t->efl = fl;
	}
}

/* an array operation's counts, its elements numbered from e0 */
static void tally_array(tally *t, const emu_a_flags *r, uint64_t e0)
{
	for (int k = 0; k < EMU_NFLAGS; k++)
		t->cnt[k] += r->count[k];
	t->any |= r->any;
	if (t->first == UINT64_MAX && r->first_bad != UINT64_MAX) {
		t->first = e0 + r->first_bad;
		t->efl = r->first_flags;
	}
}

static void record_tally(emu_be *be, unsigned s, emu_op op, uint64_t n, const tally *t)
{
	record(be, s, op, n, t->cnt, t->any, t->first, t->efl);
}

void emu_input(emu_be *be, unsigned step, const emu_format *f, emu_ref dst, const double *x,
               size_t sx, size_t n, uint64_t elem, uint8_t *fl)
{
	tally tl = TALLY0;
	emu_env env = be->env;
	env.daz = false;
	/* the array conversion: FAST's values, or TRUTH's stored inputs (the
	 * same values, then made exact) */
	bool stored = be->kind == EMU_BE_TRUTH && !be->range && !be->exact_inputs;
	if ((be->kind == EMU_BE_FAST || stored) && (dst.stride == 1 || stored)) {
		uint8_t buf[2048];
		double vals[2048];
		for (size_t j0 = 0; j0 < n; j0 += sizeof buf) {
			size_t m = n - j0 < sizeof buf ? n - j0 : sizeof buf;
			const double *args[1] = {x + j0 * sx};
			size_t st[1] = {sx};
			// cppcheck-suppress legacyUninitvar ; vals receives the chunk's values
			double *d = stored ? vals : dst.v->d + dst.off + j0;
			env.index = emu_sr_key(step, 0, elem + j0);
			emu_a_flags r = emu_a_op(EMU_OP_CVT, f, d, args, st, m, &env, buf);
			tally_array(&tl, &r, elem + j0);
			for (size_t j = 0; stored && j < m; j++)
				emu_truth_set_d(&dst.v->m[ix(dst, j0 + j)], vals[j]);
			for (size_t j = 0; fl && j < m; j++)
				fl[j0 + j] |= buf[j];
			if (!be->loading)
				note_inputs(be, x + j0 * sx, sx, d, buf, m);
		}
		record_tally(be, step, EMU_OP_CVT, n, &tl);
		return;
	}
	for (size_t j = 0; j < n; j++) {
		double xj = x[j * sx];
		size_t i = ix(dst, j);
		unsigned rfl = 0;
		double v;
		if (be->kind == EMU_BE_TRUTH && (be->range || be->exact_inputs)) {
			emu_truth_set_d(&dst.v->m[i], xj);
			if (be->range)
				rfl = range_note_mp(be, &dst.v->m[i], f);
		} else {
			env.index = emu_sr_key(step, 0, elem + j);
			if (be->kind == EMU_BE_EXACT) {
				emu_result r = emu_mp_from_double(f, xj, &env);
				v = decode(f, r.bits);
				rfl = r.flags;
			} else {
				v = emu_v_from_double(f, xj, &env, &rfl);
			}
			if (be->kind == EMU_BE_TRUTH)
				emu_truth_set_d(&dst.v->m[i], v);
			else
				dst.v->d[i] = v;
			if (!be->loading)
				emu_k_note_input(be, xj, v, rfl);
		}
		if (fl)
			fl[j] |= (uint8_t)rfl;
		tally_one(&tl, rfl, elem + j);
	}
	record_tally(be, step, EMU_OP_CVT, n, &tl);
}

/* One element on FAST with the GPU's tables (the table ops of fp16/bf16),
 * or any element of FAST through the scalar reference. */
static double fast_one(const emu_be *be, emu_op op, const emu_format *f, double x, double y,
                       double z, const emu_env *env, unsigned *fl)
{
	if (op == EMU_OP_CVT) {
		emu_env e = *env;
		e.daz = false; /* the operand's own format is not known here */
		return emu_a_element(op, f, x, y, z, &e, fl);
	}
	if (be->tables && op != EMU_OP_ADD && op != EMU_OP_SUB && op != EMU_OP_MUL &&
	    op != EMU_OP_DIV && op != EMU_OP_FMA) {
		int ar = emu_op_arity(op);
		emu_bits args[3] = {emu_encode(f, x), ar > 1 ? emu_encode(f, y) : 0,
		                    ar > 2 ? emu_encode(f, z) : 0};
		emu_result res = emu_apply(op, f, NULL, args, env);
		unsigned rf = res.flags;
		emu_bits t;
		if (emu_gpu_tables_lookup(be->tables, emu_gpu_table_func(op), f, args[0], &t) &&
		    t != res.bits) {
			res.bits = t;
			rf = table_flags(f, x, decode(f, t));
		}
		*fl |= rf;
		return decode(f, res.bits);
	}
	return emu_a_element(op, f, x, y, z, env, fl);
}

/* One element on EXACT: the MPFR backend on encodings. */
static double exact_one(emu_op op, const emu_format *f, double x, double y, double z,
                        const emu_env *env, unsigned *fl)
{
	emu_result res;
	if (op == EMU_OP_CVT) {
		emu_env e = *env;
		e.daz = false;
		res = emu_mp_from_double(f, x, &e);
	} else {
		emu_bits args[3] = {emu_encode(f, x), emu_encode(f, y), emu_encode(f, z)};
		res = emu_mp_apply(op, f, NULL, args, env);
	}
	*fl |= res.flags;
	return decode(f, res.bits);
}

static mpfr_srcptr mp_at(emu_ref r, size_t j)
{
	return r.v ? &r.v->m[ix(r, j)] : NULL;
}

static double d_at(emu_ref r, size_t j)
{
	return r.v ? r.v->d[ix(r, j)] : 0.0;
}

/* element j of a map on EXACT or TRUTH (or FAST's element path); inlined
 * into its loops, whose refs would otherwise be copied to the stack at every
 * element and read back wider than written (a store-forwarding stall an
 * element, a third of map_part's time on TRUTH) */
static inline __attribute__((always_inline)) unsigned
map_one(emu_be *be, emu_op op, const emu_format *f, const emu_env *env, emu_ref d, emu_ref a,
        emu_ref b, emu_ref c, size_t j)
{
	unsigned fl = 0;
	if (be->kind == EMU_BE_TRUTH) {
		mpfr_ptr dm = &d.v->m[ix(d, j)];
		truth_op(op, dm, mp_at(a, j), mp_at(b, j), mp_at(c, j));
		if (mpfr_nan_p(dm))
			fl |= EMU_FLAG_INVALID;
		if (be->range)
			fl |= range_note_mp(be, dm, f);
		return fl;
	}
	double x = d_at(a, j), y = d_at(b, j), z = d_at(c, j), r;
	if (be->kind == EMU_BE_FAST)
		r = fast_one(be, op, f, x, y, z, env, &fl);
	else
		r = exact_one(op, f, x, y, z, env, &fl);
	d.v->d[ix(d, j)] = r;
	return fl;
}

static bool table_op(const emu_be *be, emu_op op)
{
	return be->tables && op != EMU_OP_CVT && op != EMU_OP_ADD && op != EMU_OP_SUB &&
	       op != EMU_OP_MUL && op != EMU_OP_DIV && op != EMU_OP_FMA;
}

/* elements j0 .. j0 + n − 1 of a map (refs, fl and env.index at element
 * 0), counted into tl */
static void map_part(emu_be *be, const emu_env *env0, emu_op op, const emu_format *f, emu_ref dst,
                     emu_ref a, emu_ref b, emu_ref c, size_t j0, size_t n, uint64_t elem,
                     uint8_t *fl, tally *tl)
{
	emu_env env = *env0;
	env.index += j0;
	elem += j0;
	dst.off += j0 * dst.stride;
	a.off += j0 * a.stride;
	b.off += j0 * b.stride;
	c.off += j0 * c.stride;
	if (fl)
		fl += j0;
	if (be->kind == EMU_BE_FAST && !table_op(be, op) && (dst.stride == 1 || n == 1)) {
		int ar = emu_op_arity(op);
		if ((ar > 1 && !b.v) || (ar > 2 && !c.v))
			return; /* map_env refused it already */
		const double *args[3] = {a.v->d + a.off, ar > 1 ? b.v->d + b.off : NULL,
		                         ar > 2 ? c.v->d + c.off : NULL};
		size_t st[3] = {a.stride, ar > 1 ? b.stride : 0, ar > 2 ? c.stride : 0};
		double *d = dst.v->d + dst.off;
		uint8_t buf[2048];
		for (size_t i0 = 0; i0 < n; i0 += fl ? sizeof buf : n) {
			size_t m = fl && n - i0 > sizeof buf ? sizeof buf : n - i0;
			const double *pa[3] = {args[0] + i0 * st[0],
			                       args[1] ? args[1] + i0 * st[1] : NULL,
			                       args[2] ? args[2] + i0 * st[2] : NULL};
			emu_env e = env;
			e.index = env.index + i0;
			// cppcheck-suppress legacyUninitvar ; buf receives each element's flags
			emu_a_flags r = emu_a_op(op, f, d + i0, pa, st, m, &e, fl ? buf : NULL);
			tally_array(tl, &r, elem + i0);
			for (size_t j = 0; fl && j < m; j++)
				fl[i0 + j] |= buf[j];
		}
		return;
	}
	emu_env e = env;
	for (size_t j = 0; j < n; j++) {
		e.index = env.index + j;
		unsigned v = map_one(be, op, f, &e, dst, a, b, c, j);
		if (fl)
			fl[j] |= (uint8_t)v;
		tally_one(tl, v, elem + j);
	}
}

/* a map under env (the policy's, or one with another rounding mode); a
 * long one in parts on several threads (emu_rows_parts; not with range,
 * whose peak is the backend's), their counts added in element order */
static void map_env(emu_be *be, const emu_env *base, unsigned step, emu_op op, const emu_format *f,
                    emu_ref dst, emu_ref a, emu_ref b, emu_ref c, size_t n, uint64_t elem,
                    uint8_t *fl)
{
	if (n == 0 || !dst.v || !a.v)
		return;
	int ar = emu_op_arity(op);
	if ((ar > 1 && !b.v) || (ar > 2 && !c.v))
		return; /* an operand missing: a caller's error */
	emu_env env = *base;
	env.index = emu_sr_key(step, 0, elem);
	if (op == EMU_OP_CVT)
		env.daz = false; /* the operand's own format is not known here */
	tally tl = TALLY0;
	size_t T = be->range ? 1 : emu_rows_parts(be, n, 1);
	if (T <= 1) {
		map_part(be, &env, op, f, dst, a, b, c, 0, n, elem, fl, &tl);
	} else {
		tally part[64];
#pragma omp parallel for schedule(static, 1) num_threads((int)T)
		for (size_t p = 0; p < T; p++) {
			part[p] = TALLY0;
			map_part(be, &env, op, f, dst, a, b, c, n * p / T,
			         n * (p + 1) / T - n * p / T, elem, fl, &part[p]);
		}
		for (size_t p = 0; p < T; p++) {
			for (int k = 0; k < EMU_NFLAGS; k++)
				tl.cnt[k] += part[p].cnt[k];
			tl.any |= part[p].any;
			if (tl.first == UINT64_MAX && part[p].first != UINT64_MAX) {
				tl.first = part[p].first;
				tl.efl = part[p].efl;
			}
		}
	}
	record_tally(be, step, op, n, &tl);
}

void emu_map(emu_be *be, unsigned step, emu_op op, const emu_format *f, emu_ref dst, emu_ref a,
             emu_ref b, emu_ref c, size_t n, uint64_t elem, uint8_t *fl)
{
	map_env(be, &be->env, step, op, f, dst, a, b, c, n, elem, fl);
}

void emu_map_mode(emu_be *be, unsigned step, emu_op op, emu_mode mode, const emu_format *f,
                  emu_ref dst, emu_ref a, emu_ref b, emu_ref c, size_t n, uint64_t elem,
                  uint8_t *fl)
{
	emu_env env = be->env; /* the policy's stays as it was validated */
	env.mode = mode;
	map_env(be, &env, step, op, f, dst, a, b, c, n, elem, fl);
}

void emu_map_env(emu_be *be, const emu_env *env, unsigned step, emu_op op, const emu_format *f,
                 emu_ref dst, emu_ref a, emu_ref b, emu_ref c, size_t n, uint64_t elem, uint8_t *fl)
{
	map_env(be, env, step, op, f, dst, a, b, c, n, elem, fl);
}

/* the backend's few scratch values (a block fold's partial sum) */
static emu_vec *scratch(emu_be *be)
{
	if (!be->scratch)
		be->scratch = emu_vec_new(be, 4);
	return be->scratch;
}

/* s(a[lo..lo+n)) into a[lo]: the pairwise order */
static void pairwise(emu_be *be, unsigned step, const emu_format *f, emu_ref a, size_t lo, size_t n,
                     uint64_t elem)
{
	if (n < 2)
		return;
	size_t h = n / 2;
	pairwise(be, step, f, a, lo, h, elem);
	pairwise(be, step, f, a, lo + h, n - h, elem);
	emu_ref x = emu_at(a.v, ix(a, lo)), y = emu_at(a.v, ix(a, lo + h));
	emu_map(be, step, EMU_OP_ADD, f, x, x, y, EMU_NOREF, 1, elem + lo + h, NULL);
}

/* the sequential fold of a[0..n) (and b) into acc */
static void fold_seq(emu_be *be, unsigned step, unsigned phase, emu_op op, const emu_format *f,
                     emu_ref acc, emu_ref a, emu_ref b, size_t n, uint64_t elem)
{
	if (n == 0 || !acc.v || !a.v)
		return;
	emu_env env = be->env;
	env.index = emu_sr_key(step, phase, elem);
	bool fma = op == EMU_OP_FMA;
	if (fma && !b.v)
		return; /* an operand missing: a caller's error */
	if (be->kind == EMU_BE_FAST && !table_op(be, op)) {
		double *s = &acc.v->d[acc.off];
		emu_a_flags r =
		    emu_a_fold(op, f, s, a.v->d + a.off, a.stride, fma ? b.v->d + b.off : NULL,
		               fma ? b.stride : 0, n, &env, NULL);
		tally tl = TALLY0;
		tally_array(&tl, &r, elem);
		record_tally(be, step, op, n, &tl);
		return;
	}
	tally tl = TALLY0;
	/* TRUTH: fmas that cannot round raise nothing, and give the exact sum */
	if (fma && be->kind == EMU_BE_TRUTH && !be->range &&
	    emu_truth_dot_exact(&acc.v->m[acc.off], a, b, n)) {
		record_tally(be, step, op, n, &tl);
		return;
	}
	emu_ref s = emu_at(acc.v, acc.off);
	emu_env e = env;
	for (size_t j = 0; j < n; j++) {
		e.index = env.index + j;
		emu_ref x = emu_at(a.v, ix(a, j));
		unsigned v = fma ? map_one(be, op, f, &e, s, x, emu_at(b.v, ix(b, j)), s, 0)
		                 : map_one(be, op, f, &e, s, s, x, EMU_NOREF, 0);
		tally_one(&tl, v, elem + j);
	}
	record_tally(be, step, op, n, &tl);
}

/* the pairwise order on FAST: the scalar op per node, counted in one go */
static double pairwise_fast(const emu_format *f, const double *a, size_t sa, size_t lo, size_t n,
                            const emu_env *env, uint64_t elem, tally *t)
{
	if (n < 2)
		return a[lo * sa];
	size_t h = n / 2;
	double l = pairwise_fast(f, a, sa, lo, h, env, elem, t);
	double r = pairwise_fast(f, a, sa, lo + h, n - h, env, elem, t);
	emu_env e = *env;
	e.index = env->index + lo + h;
	unsigned v = 0;
	double s = emu_a_element(EMU_OP_ADD, f, l, r, 0, &e, &v);
	tally_one(t, v, elem + lo + h); /* the first failing node in the recursion's order */
	return s;
}

void emu_fold_n(emu_be *be, unsigned step, emu_op op, const emu_format *f, emu_ref acc, emu_ref a,
                size_t ca, emu_ref b, size_t cb, size_t n, size_t m, uint64_t elem, uint64_t ce)
{
	bool fma = op == EMU_OP_FMA;
	if (n == 0 || m == 0 || !acc.v || !a.v || (fma && !b.v))
		return;
	if (be->kind == EMU_BE_FAST && !table_op(be, op)) {
		emu_env env = be->env;
		env.index = emu_sr_key(step, 0, elem);
		emu_a_flags r = emu_a_fold_n(op, f, &acc.v->d[acc.off], acc.stride, a.v->d + a.off,
		                             a.stride, ca, fma ? b.v->d + b.off : NULL,
		                             fma ? b.stride : 0, fma ? cb : 0, n, m, &env, ce);
		tally tl = TALLY0;
		tally_array(&tl, &r, elem);
		record_tally(be, step, op, n * m, &tl);
		return;
	}
	for (size_t c = 0; c < m; c++) /* the other backends: one chain after another */
		fold_seq(be, step, 0, op, f, emu_at(acc.v, ix(acc, c)),
		         emu_strided(a.v, a.off + c * ca, a.stride),
		         fma ? emu_strided(b.v, b.off + c * cb, b.stride) : EMU_NOREF, n,
		         elem + c * ce);
}

/*
 * TRUTH's dot products without range checks, when no step rounds. Each
 * product of operands of at most 64 significant bits is exact at
 * EMU_TRUTH_PREC bits, and so is every partial sum when all the terms are
 * multiples of 2^lo and the sum of their magnitudes is below 2^(lo + 256):
 * the steps' numbers are then the exact sum's, which an integer
 * accumulator of 320 bits (two's complement, in units of 2^lo) finds
 * without MPFR. A zero sum is −0 only when every term was −0 (x + −x and
 * +0 + −0 are +0 to nearest).
 */
#if GMP_NUMB_BITS == 64 && EMU_TRUTH_PREC == 256
#define TD_LIMBS 5
#define TD_EXP_MAX (1L << 24) /* far inside MPFR's default exponent range */

/* x = (−1)^neg · m · 2^e, m odd and at most 64 bits (or m = 0 for ±0);
 * false for inf, NaN, more bits or an exponent far out */
static inline bool td_operand(mpfr_srcptr x, uint64_t *m, long *e, bool *neg)
{
	*neg = mpfr_signbit(x) != 0;
	*m = 0;
	*e = 0;
	if (mpfr_zero_p(x))
		return true;
	mp_limb_t top;
	if (!mpfr_regular_p(x) || !mp_top_limb(x, &top))
		return false;
	long ex = (long)mpfr_get_exp(x);
	if (ex > TD_EXP_MAX || ex < -TD_EXP_MAX)
		return false;
	int tz = __builtin_ctzll(top);
	*m = top >> tz;
	*e = ex - 64 + tz;
	return true;
}

/*
 * The sum in units of 2^lo, its carries deferred: digit k holds bits 32k ..
 * 32k + 31 in an int64_t, and a term adds or subtracts less than 2^32 to
 * each of the five digits it spans, without a branch; the digits are
 * brought to 0 .. 2^32 − 1 (carries passed up) every TD_SPAN terms and at the
 * end. A term v · 2^s < 2^256 has s ≤ 255, so its digits end below 12.
 */
#define TD_DIGITS 12
#define TD_SPAN 1024 /* far inside the 2^31 terms the digits hold */

static inline void td_put(int64_t *D, unsigned __int128 v, unsigned s, bool neg)
{
	unsigned r = s % 32;
	uint64_t lo = (uint64_t)v, hi = (uint64_t)(v >> 64);
	/* v << r in three words; x >> 1 >> (63 − r) is x >> (64 − r), 0 for r = 0 */
	uint64_t w0 = lo << r, w1 = hi << r | lo >> 1 >> (63 - r), w2 = hi >> 1 >> (63 - r);
	int64_t m = -(int64_t)neg; /* (x ^ m) − m: x, or −x when neg */
	int64_t *p = D + s / 32;
	p[0] += ((int64_t)(w0 & 0xffffffffu) ^ m) - m;
	p[1] += ((int64_t)(w0 >> 32) ^ m) - m;
	p[2] += ((int64_t)(w1 & 0xffffffffu) ^ m) - m;
	p[3] += ((int64_t)(w1 >> 32) ^ m) - m;
	p[4] += ((int64_t)(w2 & 0xffffffffu) ^ m) - m;
}

/* every digit but the top one to 0 .. 2^32 − 1, the carries passed up
 * (the top digit keeps the sign) */
static void td_carry(int64_t *D)
{
	for (int k = 0; k + 1 < TD_DIGITS; k++) {
		int64_t c = D[k] >= 0 ? D[k] / 0x100000000 : -((-D[k] + 0xffffffff) / 0x100000000);
		D[k + 1] += c;
		D[k] = (int64_t)((uint64_t)D[k] & 0xffffffffu);
	}
}

static int td_bits(unsigned __int128 v)
{
	uint64_t hi = (uint64_t)(v >> 64);
	return hi ? 128 - __builtin_clzll(hi) : 64 - __builtin_clzll((uint64_t)v);
}

/* a nonzero product: v · 2^e, v < 2^128 */
typedef struct {
	unsigned __int128 v;
	long e;
	bool neg;
} td_term;

/* an operand as td_operand splits it; ok: it could */
typedef struct {
	uint64_t m;
	int32_t e; /* |e| < 2^24 + 64 */
	bool neg, ok;
} td_op;

/* a's n operands split once, for chains that share them */
static void td_split_all(emu_ref a, size_t n, td_op *o)
{
	for (size_t l = 0; l < n; l++) {
		long e;
		o[l].ok = td_operand(mp_at(a, l), &o[l].m, &e, &o[l].neg);
		o[l].e = (int32_t)e;
	}
}

/* a vector emu_truth_split took apart: its splits, whether every value
 * split, and over its nonzero values the lowest bit (emin) and the highest
 * bit's successor (tmax), so that a product of two of them lies in
 * [2^(emin_a + emin_b), 2^(tmax_a + tmax_b)) at multiples of the first
 * (emin = LONG_MAX: every value zero) */
typedef struct {
	const emu_vec *v;
	td_op *ops;
	bool all_ok;
	long emin, tmax;
} td_vec;

/* operand l of a dot product: from its split (d) when there is one, else
 * taken apart now; false when td_operand cannot */
static inline bool td_get(const td_op *d, emu_ref r, size_t l, uint64_t *m, long *e, bool *neg)
{
	if (!d)
		return td_operand(mp_at(r, l), m, e, neg);
	*m = d[l].m, *e = d[l].e, *neg = d[l].neg;
	return d[l].ok;
}

/* The sum D holds in units of 2^lo into acc (lo = LONG_MAX: every term
 * was zero, −0 when all were −0) */
static bool td_finish(mpfr_ptr acc, int64_t *D, long lo, bool allneg)
{
	if (lo == LONG_MAX) {
		mpfr_set_zero(acc, allneg ? -1 : 1);
		return true;
	}
	td_carry(D);
	mp_limb_t A[TD_LIMBS];
	for (int i = 0; i < TD_LIMBS; i++)
		A[i] = (mp_limb_t)D[2 * i] | (mp_limb_t)D[2 * i + 1] << 32;
	bool neg = (A[TD_LIMBS - 1] >> 63) != 0;
	if (neg)
		mpn_neg(A, A, TD_LIMBS);
	mp_size_t sz = TD_LIMBS;
	while (sz > 0 && !A[sz - 1])
		sz--;
	if (!sz) { /* cancelled to zero */
		mpfr_set_zero(acc, 1);
		return true;
	}
	mpz_t z;
	mpz_roinit_n(z, A, neg ? -sz : sz);
	mpfr_set_z_2exp(acc, z, lo, MPFR_RNDN); /* at most 256 bits: exact */
	return true;
}

/* ⌈log2(n + 1)⌉: n + 1 terms below 2^top each stay below 2^(top + lg) */
static int td_lg(size_t n)
{
	int lg = 0;
	while ((1ull << lg) < (unsigned long long)n + 1)
		lg++;
	return lg;
}

/* A dot product's first value acc split (td_operand), and the lowest bit
 * and the highest bit's successor of the sum so far (LONG_MAX and LONG_MIN
 * for a zero); false when acc cannot be split */
static bool td_start(mpfr_srcptr acc, uint64_t *m0, long *e0, bool *n0, long *lo, long *top)
{
	if (!td_operand(acc, m0, e0, n0))
		return false;
	*lo = *m0 ? *e0 : LONG_MAX;
	*top = *m0 ? *e0 + (64 - __builtin_clzll(*m0)) : LONG_MIN;
	return true;
}

/* acc + Σ a_l·b_l over l < n into acc, exactly (t: n terms of scratch; da:
 * a's operands split already, or NULL); false (nothing written) when a
 * step might round or an operand is not finite */
static bool truth_dot_exact(mpfr_ptr acc, emu_ref a, const td_op *da, emu_ref b, size_t n,
                            td_term *t)
{
	uint64_t m0;
	long e0, lo, top;
	bool n0;
	if (!td_start(acc, &m0, &e0, &n0, &lo, &top))
		return false;
	/* pass 1: the nonzero products, their lowest bit and highest bit */
	bool allneg = n0;
	size_t nt = 0;
	for (size_t l = 0; l < n; l++) {
		uint64_t ma, mb;
		long ea, eb;
		bool sa, sb;
		if (!td_get(da, a, l, &ma, &ea, &sa) || !td_operand(mp_at(b, l), &mb, &eb, &sb))
			return false;
		allneg = allneg && sa != sb;
		if (!ma || !mb)
			continue;
		td_term *u = &t[nt++];
		u->v = (unsigned __int128)ma * mb;
		u->e = ea + eb;
		u->neg = sa != sb;
		long tp = u->e + td_bits(u->v);
		lo = u->e < lo ? u->e : lo;
		top = tp > top ? tp : top;
	}
	if (lo != LONG_MAX && top - lo + td_lg(n) > 256)
		return false;
	/* pass 2: the sum in units of 2^lo, two's complement in D */
	int64_t D[TD_DIGITS] = {0};
	if (m0)
		td_put(D, m0, (unsigned)(e0 - lo), n0);
	for (size_t l = 0; l < nt; l++) {
		td_put(D, t[l].v, (unsigned)(t[l].e - lo), t[l].neg);
		if ((l + 1) % TD_SPAN == 0)
			td_carry(D);
	}
	return td_finish(acc, D, lo, allneg);
}

/*
 * truth_dot_exact with both operands split already (emu_truth_split; da
 * and db with strides sa and sb), without its scratch and without a branch
 * an element (a zero product adds zeros at digit 0). With the vectors'
 * bounds (ta, tb) every product's lowest bit is known to be at least
 * emin_a + emin_b and its highest below tmax_a + tmax_b: when those are
 * within 256 bits the sum is made in one pass in units of the first (the
 * same exact sum, so the same result); otherwise the first pass finds the
 * products' own.
 */
static bool truth_dot_split(mpfr_ptr acc, const td_op *da, size_t sa, const td_op *db, size_t sb,
                            size_t n, const td_vec *ta, const td_vec *tb)
{
	uint64_t m0;
	long e0, lo, top;
	bool n0;
	if (!td_start(acc, &m0, &e0, &n0, &lo, &top))
		return false;
	bool allneg = n0, ok = true, any = m0 != 0;
	bool bounded = ta && tb && ta->all_ok && tb->all_ok && ta->emin != LONG_MAX &&
	               tb->emin != LONG_MAX;
	if (bounded) {
		lo = lo < ta->emin + tb->emin ? lo : ta->emin + tb->emin;
		top = top > ta->tmax + tb->tmax ? top : ta->tmax + tb->tmax;
		bounded = top - lo + td_lg(n) <= 256;
	}
	if (!bounded) {
		for (size_t l = 0; l < n; l++) {
			const td_op *x = &da[l * sa], *y = &db[l * sb];
			ok &= x->ok & y->ok;
			unsigned __int128 v = (unsigned __int128)x->m * y->m;
			long e = (long)x->e + y->e, tp = e + td_bits(v | 1);
			bool nz = v != 0;
			lo = nz && e < lo ? e : lo;
			top = nz && tp > top ? tp : top;
		}
		if (!ok || (lo != LONG_MAX && top - lo + td_lg(n) > 256))
			return false;
	}
	int64_t D[TD_DIGITS] = {0};
	if (m0)
		td_put(D, m0, (unsigned)(e0 - lo), n0);
	for (size_t l = 0; l < n; l++) {
		const td_op *x = &da[l * sa], *y = &db[l * sb];
		unsigned __int128 v = (unsigned __int128)x->m * y->m;
		bool nz = v != 0;
		any |= nz;
		allneg &= x->neg != y->neg;
		td_put(D, v, nz ? (unsigned)((long)x->e + y->e - lo) : 0, x->neg != y->neg);
		if ((l + 1) % TD_SPAN == 0)
			td_carry(D);
	}
	return td_finish(acc, D, any ? lo : LONG_MAX, allneg);
}

/* truth_dot_exact with its scratch (on the stack for short chains; none
 * when both operands come split) */
static bool truth_dot_scratch(mpfr_ptr acc, emu_ref a, const td_op *da, size_t sa, emu_ref b,
                              const td_op *db, size_t sb, size_t n, const td_vec *ta,
                              const td_vec *tb)
{
	if (da && db)
		return truth_dot_split(acc, da, sa, db, sb, n, ta, tb);
	td_term buf[256], *t = n <= 256 ? buf : malloc(n * sizeof *t);
	/* truth_dot_exact reads a split of a with stride 1 only */
	bool done = t && truth_dot_exact(acc, a, sa == 1 ? da : NULL, b, n, t);
	(void)sb;
	if (t != buf)
		free(t);
	return done;
}

bool emu_truth_dot_exact(mpfr_ptr acc, emu_ref a, emu_ref b, size_t n)
{
	return truth_dot_scratch(acc, a, NULL, 0, b, NULL, 0, n, NULL, NULL);
}

/* the vectors emu_truth_split took apart, and their splits */
struct emu_td_split {
	const emu_be *owner;
	td_vec t[2];
};

void emu_truth_split(emu_be *be, const emu_vec *a, const emu_vec *b)
{
	emu_truth_split_free(be);
	if (be->kind != EMU_BE_TRUTH || be->range)
		return;
	struct emu_td_split *s = calloc(1, sizeof *s);
	if (!s)
		return;
	s->owner = be;
	const emu_vec *v[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		td_vec *t = &s->t[i];
		if (!v[i] || !v[i]->m || (t->ops = malloc((v[i]->n ? v[i]->n : 1) *
		                                          sizeof *t->ops)) == NULL)
			continue;
		t->v = v[i];
		td_split_all(emu_row((emu_vec *)v[i], 0), v[i]->n, t->ops);
		t->all_ok = true;
		t->emin = LONG_MAX;
		t->tmax = LONG_MIN;
		for (size_t j = 0; j < v[i]->n; j++) {
			const td_op *o = &t->ops[j];
			t->all_ok &= o->ok;
			if (!o->m)
				continue;
			long tp = (long)o->e + (64 - __builtin_clzll(o->m));
			t->emin = o->e < t->emin ? o->e : t->emin;
			t->tmax = tp > t->tmax ? tp : t->tmax;
		}
	}
	be->td = s;
}

void emu_truth_split_free(emu_be *be)
{
	struct emu_td_split *s = be->td;
	be->td = NULL;
	if (!s || s->owner != be)
		return;
	free(s->t[0].ops);
	free(s->t[1].ops);
	free(s);
}

/* r's vector as emu_truth_split took it apart, or NULL */
static const td_vec *td_vec_of(const emu_be *be, emu_ref r)
{
	for (int i = 0; be->td && i < 2; i++)
		if (be->td->t[i].v && be->td->t[i].v == r.v)
			return &be->td->t[i];
	return NULL;
}

/* One TRUTH dot product of emu_dot_n through truth_dot_exact, counted as
 * its calls count it (none raises a flag); false: not done */
static bool truth_dot(emu_be *be, unsigned smul, unsigned scvt, unsigned ssum, emu_ref acc,
                      emu_ref a, const td_op *da, emu_ref b, size_t n)
{
	if (be->kind != EMU_BE_TRUTH || be->range)
		return false;
	/* a split vector's operands (element j of a ref at j · stride) */
	const td_vec *ta = td_vec_of(be, a), *tb = td_vec_of(be, b);
	const td_op *xa = ta ? ta->ops + a.off : da, *xb = tb ? tb->ops + b.off : NULL;
	if (!truth_dot_scratch(&acc.v->m[ix(acc, 0)], a, xa, ta ? a.stride : 1, b, xb, b.stride, n,
	                       ta, tb))
		return false;
	tally tl = TALLY0;
	record_tally(be, smul, EMU_OP_MUL, n, &tl);
	if (scvt != EMU_NOSTEP)
		record_tally(be, scvt, EMU_OP_CVT, n, &tl);
	record_tally(be, ssum, EMU_OP_ADD, n, &tl);
	return true;
}
#else
typedef struct {
	int unused;
} td_op;
static void td_split_all(emu_ref a, size_t n, td_op *o)
{
	(void)a, (void)n, (void)o;
}
static bool truth_dot(emu_be *be, unsigned smul, unsigned scvt, unsigned ssum, emu_ref acc,
                      emu_ref a, const td_op *da, emu_ref b, size_t n)
{
	(void)be, (void)smul, (void)scvt, (void)ssum, (void)acc, (void)a, (void)da, (void)b,
	    (void)n;
	return false;
}
static const void *td_vec_of(const emu_be *be, emu_ref r)
{
	(void)be, (void)r;
	return NULL;
}
void emu_truth_split(emu_be *be, const emu_vec *a, const emu_vec *b)
{
	(void)be, (void)a, (void)b;
}
void emu_truth_split_free(emu_be *be)
{
	be->td = NULL;
}
bool emu_truth_dot_exact(mpfr_ptr acc, emu_ref a, emu_ref b, size_t n)
{
	(void)acc, (void)a, (void)b, (void)n;
	return false;
}
#endif

/* One dot product of emu_dot_n, in its calls' order. */
static void dot_one(emu_be *be, unsigned smul, const emu_format *fm, unsigned scvt, unsigned ssum,
                    const emu_format *fa, emu_ref acc, emu_ref a, emu_ref b, emu_ref P, size_t n,
                    uint64_t elem)
{
	emu_map(be, smul, EMU_OP_MUL, fm, P, a, b, EMU_NOREF, n, elem, NULL);
	if (scvt != EMU_NOSTEP)
		emu_map(be, scvt, EMU_OP_CVT, fa, P, P, EMU_NOREF, EMU_NOREF, n, elem, NULL);
	fold_seq(be, ssum, 0, EMU_OP_ADD, fa, acc, P, EMU_NOREF, n, elem);
}

/* FAST: the products (and conversions) of mc short chains whose elements
 * follow one another (ce = n) as one map each, their operands gathered
 * chain after chain: element c·n + j is chain c's j, numbered e0 + c·n + j
 * as its own map numbers it, so the values, counts and draws are the
 * chains' own (only the order differs, which emu_dot_n_then's separate
 * counts allow) */
enum { DOT_GATHER = 2048 };

/* FAST, the products of mc chains into P (chain c's at c·n) when each is a
 * binary32 value (and finite) and fm (and fa, when the products are
 * converted) is binary32: the product of two values of fm is exact in
 * binary64, so each map's element would be that value with no flag raised,
 * whatever the rounding (no ftz, daz: a subnormal stays itself); both
 * maps' records then are n·mc operations, no flags. False, P half
 * written, when any product is not so: the maps decide. A GEMM of
 * operands narrower than its binary32 accumulator (fp16 or bf16 into
 * fp32) has such products but where they overflow or underflow. */
/* g[c·n + j] = p[c·cs + j·s], j < n, c < mc: mc chains laid out one after
 * another. Unit strides are copies; chains side by side in memory (cs < s:
 * a row-major matrix's columns) are read in blocks of 8 steps, each line
 * once, where chain after chain would read every line mc times. */
void emu_gather_chains(double *g, const double *p, size_t s, size_t cs, size_t n, size_t mc)
{
	if (s == 1) {
		for (size_t c = 0; c < mc; c++)
			memcpy(g + c * n, p + c * cs, n * sizeof *g);
	} else if (cs < s) {
		for (size_t j0 = 0; j0 < n; j0 += 8) {
			size_t je = n - j0 < 8 ? n : j0 + 8;
			for (size_t c = 0; c < mc; c++)
				for (size_t j = j0; j < je; j++)
					g[c * n + j] = p[c * cs + j * s];
		}
	} else {
		for (size_t c = 0; c < mc; c++)
			for (size_t j = 0; j < n; j++)
				g[c * n + j] = p[c * cs + j * s];
	}
}

/* d[c·n + j] = a[c·ca + j·sa]·b[c·cb + j·sb], j < n, c < mc (exact in
 * binary64 for binary32 values), chain after chain; whether each is a
 * finite binary32 value (false at the first chain with one that is not) */
EMU_VEC_CLONES static bool products_f32(double *d, const double *a, size_t sa, size_t ca,
                                        const double *b, size_t sb, size_t cb, size_t n,
                                        size_t mc)
{
	for (size_t c = 0; c < mc; c++, d += n, a += ca, b += cb) {
		int32_t ok = 1;
		if (sa == 1 && sb == 1) /* as one vector loop */
			for (size_t j = 0; j < n; j++) {
				double p = a[j] * b[j];
				d[j] = p;
				ok &= ((double)(float)p == p) & (fabs(p) <= FLT_MAX);
			}
		else
			for (size_t j = 0; j < n; j++) {
				double p = a[j * sa] * b[j * sb];
				d[j] = p;
				ok &= ((double)(float)p == p) & (fabs(p) <= FLT_MAX);
			}
		if (!ok)
			return false;
	}
	return true;
}

static bool dot_products_exact(emu_be *be, unsigned smul, const emu_format *fm, unsigned scvt,
                               const emu_format *fa, emu_ref a0, size_t ca, emu_ref b0, size_t cb,
                               emu_ref P, size_t n, size_t mc)
{
	if (!emu_is_binary32(fm) || (scvt != EMU_NOSTEP && !emu_is_binary32(fa)) ||
	    be->env.ftz || be->env.daz || be->range || P.stride != 1)
		return false;
	const double *pa = a0.v->d + a0.off, *pb = b0.v->d + b0.off;
	double *d = P.v->d + P.off;
	size_t sa = a0.stride, sb = b0.stride;
	double ga[DOT_GATHER], gb[DOT_GATHER];
	if (ca == 0 && sa > 1 && mc > 1 && n <= DOT_GATHER) { /* a shared column: read once */
		emu_gather_chains(ga, pa, sa, 0, n, 1);
		pa = ga, sa = 1;
	}
	if (sb > 1 && mc * n <= DOT_GATHER) { /* b's chains as rows, so the products vectorise */
		emu_gather_chains(gb, pb, sb, cb, n, mc);
		pb = gb, sb = 1, cb = n;
	}
	if (!products_f32(d, pa, sa, ca, pb, sb, cb, n, mc))
		return false;
	tally none = TALLY0;
	record_tally(be, smul, EMU_OP_MUL, n * mc, &none);
	if (scvt != EMU_NOSTEP)
		record_tally(be, scvt, EMU_OP_CVT, n * mc, &none);
	return true;
}

static void dot_maps_gathered(emu_be *be, unsigned smul, const emu_format *fm, unsigned scvt,
                              const emu_format *fa, emu_ref a0, size_t ca, emu_ref b0, size_t cb,
                              emu_ref P, size_t n, size_t mc, uint64_t e0)
{
	double ga[DOT_GATHER], gb[DOT_GATHER];
	const double *pa = a0.v->d + a0.off, *pb = b0.v->d + b0.off;
	emu_gather_chains(ga, pa, a0.stride, ca, n, mc);
	emu_gather_chains(gb, pb, b0.stride, cb, n, mc);
	emu_vec va = {mc * n, ga, NULL}, vb = {mc * n, gb, NULL};
	emu_ref Pr = emu_row(P.v, P.off);
	emu_map(be, smul, EMU_OP_MUL, fm, Pr, emu_row(&va, 0), emu_row(&vb, 0), EMU_NOREF, mc * n,
	        e0, NULL);
	if (scvt != EMU_NOSTEP)
		emu_map(be, scvt, EMU_OP_CVT, fa, Pr, Pr, EMU_NOREF, EMU_NOREF, mc * n, e0, NULL);
}

/* What a chunk of emu_dot_n's chains run out of order can change in the
 * counts, kept to undo it when a chain failed (the chains then run again in
 * turn): the counts of the ops a dot product records (its products, their
 * conversion and the conversions after it, its sum), of the steps it
 * records at, and the flags' OR. A chunk runs apart only while no failure
 * is set. (The chunk's counts were kept in a second set and added after;
 * copying that set in and out, twice 900 bytes a chunk, was a fifth of
 * backward, whose dX elements are 8 products each.) */
enum { DOT_NOPS = 3, DOT_NSTEPS = 5 };
static const emu_op dot_ops[DOT_NOPS] = {EMU_OP_MUL, EMU_OP_CVT, EMU_OP_ADD};
typedef struct {
	uint64_t ops[DOT_NOPS], flags[DOT_NOPS][EMU_NFLAGS];
	uint64_t step_ops[DOT_NSTEPS], step_flags[DOT_NSTEPS][EMU_NFLAGS];
	unsigned all_flags;
	size_t nsteps;
} dot_snap;

static void dot_snap_take(const emu_be_stats *st, const unsigned *used, dot_snap *d)
{
	for (int i = 0; i < DOT_NOPS; i++) {
		d->ops[i] = st->ops[dot_ops[i]];
		memcpy(d->flags[i], st->flags[dot_ops[i]], sizeof d->flags[i]);
	}
	d->all_flags = st->all_flags;
	d->nsteps = st->nsteps;
	for (int i = 0; i < DOT_NSTEPS; i++)
		if (used[i] < st->nsteps) {
			d->step_ops[i] = st->step_ops[used[i]];
			memcpy(d->step_flags[i], st->step_flags[used[i]], sizeof d->step_flags[i]);
		}
}

/* st as it was when d was taken (a step met first since then: zero) */
static void dot_snap_undo(emu_be_stats *st, const unsigned *used, const dot_snap *d)
{
	for (int i = 0; i < DOT_NOPS; i++) {
		st->ops[dot_ops[i]] = d->ops[i];
		memcpy(st->flags[dot_ops[i]], d->flags[i], sizeof d->flags[i]);
	}
	st->all_flags = d->all_flags;
	st->first_set = false;
	for (int i = 0; i < DOT_NSTEPS; i++) {
		size_t s = used[i];
		if (s < d->nsteps) {
			st->step_ops[s] = d->step_ops[i];
			memcpy(st->step_flags[s], d->step_flags[i], sizeof d->step_flags[i]);
		} else if (s < st->nsteps) {
			st->step_ops[s] = 0;
			memset(st->step_flags[s], 0, sizeof st->step_flags[s]);
		}
	}
}

/* th's conversions of chains c0 .. c0 + mc − 1's sums, in place (ac: chain
 * c0's), as one map a step: in turn when mc is 1 */
static void dot_then(emu_be *be, const emu_dot_then *th, emu_ref ac, size_t c0, size_t mc)
{
	for (int k = 0; th && k < 2; k++)
		if (th->s[k] != EMU_NOSTEP)
			emu_map(be, th->s[k], EMU_OP_CVT, th->f[k], ac, ac, EMU_NOREF, EMU_NOREF,
			        mc, th->e + c0, NULL);
}

void emu_dot_n(emu_be *be, unsigned smul, const emu_format *fm, unsigned scvt, unsigned ssum,
               const emu_format *fa, emu_ref acc, emu_ref a, size_t ca, emu_ref b, size_t cb,
               emu_ref P, size_t n, size_t m, uint64_t elem, uint64_t ce)
{
	emu_dot_n_then(be, smul, fm, scvt, ssum, fa, acc, a, ca, b, cb, P, n, m, elem, ce, NULL);
}

void emu_dot_n_then(emu_be *be, unsigned smul, const emu_format *fm, unsigned scvt, unsigned ssum,
                    const emu_format *fa, emu_ref acc, emu_ref a, size_t ca, emu_ref b, size_t cb,
                    emu_ref P, size_t n, size_t m, uint64_t elem, uint64_t ce,
                    const emu_dot_then *th)
{
	enum { CHUNK = 16 }; /* chains in flight: the accumulators kept for a rerun */
	if (n == 0 || m == 0 || !acc.v || !a.v || !b.v || !P.v)
		return;
	for (size_t c0 = 0; c0 < m; c0 += CHUNK) {
		size_t mc = m - c0 < CHUNK ? m - c0 : CHUNK;
		emu_ref ac = emu_strided(acc.v, ix(acc, c0), acc.stride);
		emu_ref a0 = emu_strided(a.v, a.off + c0 * ca, a.stride),
		        b0 = emu_strided(b.v, b.off + c0 * cb, b.stride);
		uint64_t e0 = elem + c0 * ce;
		if (be->kind == EMU_BE_FAST && mc > 1 && ce >= n) {
			/* out of order, undone and run again in turn if a chain fails,
			 * unless a failure is set already (then the order cannot
			 * change what is reported) */
			bool apart = !be->st.first_set;
			double keep[CHUNK];
			for (size_t c = 0; c < mc; c++)
				keep[c] = acc.v->d[ix(ac, c)];
			const unsigned used[DOT_NSTEPS] = {smul, scvt, ssum,
			                                   th ? th->s[0] : EMU_NOSTEP,
			                                   th ? th->s[1] : EMU_NOSTEP};
			dot_snap snap;
			if (apart)
				dot_snap_take(&be->st, used, &snap);
			if (dot_products_exact(be, smul, fm, scvt, fa, a0, ca, b0, cb, P, n,
			                                  mc))
				; /* every product exact, no flag */
			else if (ce == n && mc * n <= DOT_GATHER)
				dot_maps_gathered(be, smul, fm, scvt, fa, a0, ca, b0, cb, P, n, mc,
				                  e0);
			else
				for (size_t c = 0; c < mc; c++) {
					emu_ref Pc = emu_row(P.v, P.off + c * n);
					emu_map(be, smul, EMU_OP_MUL, fm, Pc,
					        emu_strided(a0.v, a0.off + c * ca, a0.stride),
					        emu_strided(b0.v, b0.off + c * cb, b0.stride),
					        EMU_NOREF, n, e0 + c * ce, NULL);
					if (scvt != EMU_NOSTEP)
						emu_map(be, scvt, EMU_OP_CVT, fa, Pc, Pc, EMU_NOREF,
						        EMU_NOREF, n, e0 + c * ce, NULL);
				}
			emu_fold_n(be, ssum, EMU_OP_ADD, fa, ac, emu_row(P.v, P.off), n, EMU_NOREF,
			           0, n, mc, e0, ce);
			dot_then(be, th, ac, c0, mc);
			if (!apart || !be->st.first_set)
				continue;
			/* a chain failed: again in turn, from the same accumulators */
			dot_snap_undo(&be->st, used, &snap);
			for (size_t c = 0; c < mc; c++)
				acc.v->d[ix(ac, c)] = keep[c];
		}
		/* TRUTH: operands emu_truth_split took apart, or chains that share
		 * a (ca = 0) split it once */
		td_op *da = !td_vec_of(be, a0) && be->kind == EMU_BE_TRUTH && !be->range && ca == 0 &&
		                    mc > 1
		                ? malloc(n * sizeof *da)
		                : NULL;
		if (da)
			td_split_all(a0, n, da);
		for (size_t c = 0; c < mc; c++) {
			if (!truth_dot(be, smul, scvt, ssum, emu_at(ac.v, ix(ac, c)),
			               emu_strided(a0.v, a0.off + c * ca, a0.stride), da,
			               emu_strided(b0.v, b0.off + c * cb, b0.stride), n))
				dot_one(be, smul, fm, scvt, ssum, fa, emu_at(ac.v, ix(ac, c)),
				        emu_strided(a0.v, a0.off + c * ca, a0.stride),
				        emu_strided(b0.v, b0.off + c * cb, b0.stride),
				        emu_row(P.v, P.off + c * n), n, e0 + c * ce);
			dot_then(be, th, emu_at(ac.v, ix(ac, c)), c0 + c, 1);
		}
		free(da);
	}
}

void emu_fold(emu_be *be, unsigned step, emu_op op, const emu_format *f, emu_order o, emu_ref acc,
              emu_ref a, emu_ref b, size_t n, uint64_t elem)
{
	switch (o.order) {
	case EMU_FOLD_PAIRWISE:
		if (n == 0)
			return;
		if (be->kind == EMU_BE_FAST) {
			tally tl = TALLY0;
			emu_env env = be->env;
			env.index = emu_sr_key(step, 0, elem);
			double s =
			    pairwise_fast(f, a.v->d + a.off, a.stride, 0, n, &env, elem, &tl);
			a.v->d[a.off] = s;
			if (n > 1)
				record_tally(be, step, EMU_OP_ADD, n - 1, &tl);
			emu_copy(be, acc, emu_at(a.v, a.off), 1);
			return;
		}
		pairwise(be, step, f, a, 0, n, elem);
		emu_copy(be, acc, emu_at(a.v, a.off), 1);
		return;
	case EMU_FOLD_BLOCK: {
		emu_vec *t = scratch(be);
		size_t k = o.k ? o.k : n;
		for (size_t lo = 0; lo < n; lo += k) {
			size_t m = n - lo < k ? n - lo : k;
			emu_fill(be, emu_at(t, 0), 0, 1);
			fold_seq(
			    be, step, 0, op, f, emu_at(t, 0), emu_strided(a.v, ix(a, lo), a.stride),
			    b.v ? emu_strided(b.v, ix(b, lo), b.stride) : EMU_NOREF, m, elem + lo);
			emu_ref s = emu_at(acc.v, acc.off);
			emu_map(be, o.step2, EMU_OP_ADD, f, s, s, emu_at(t, 0), EMU_NOREF, 1,
			        elem + lo, NULL);
		}
		return;
	}
	default:
		fold_seq(be, step, 0, op, f, acc, a, b, n, elem);
	}
}
