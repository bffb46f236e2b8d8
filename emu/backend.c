/*
 * backend.c — the three backends behind emu_k_*. FAST calls the emulator
 * on exact double values; EXACT encodes the same values and calls the MPFR
 * backend, so the two run the same kernel code and differ only in who
 * rounds; TRUTH computes at EMU_TRUTH_PREC bits and ignores formats.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kern.h"

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

/* TRUTH values: n mpfr_t in one block, cleared and freed with the backend. */
typedef struct {
	size_t n;
	mpfr_t v[];
} truth_block;

static bool track(emu_be *be, void *p)
{
	if (be->nallocs == be->capallocs) {
		size_t cap = be->capallocs ? 2 * be->capallocs : 16;
		void **np = realloc(be->allocs, cap * sizeof *np);
		if (!np)
			return false;
		be->allocs = np;
		be->capallocs = cap;
	}
	be->allocs[be->nallocs++] = p;
	return true;
}

/* allocations alternate: the emu_val array, then (TRUTH only) its block */
void emu_be_free(emu_be *be)
{
	for (size_t i = 0; i < be->nallocs; i++) {
		emu_val *v = be->allocs[i];
		if (be->kind == EMU_BE_TRUTH && i + 1 < be->nallocs) {
			truth_block *b = be->allocs[++i];
			for (size_t k = 0; k < b->n; k++)
				mpfr_clear(b->v[k]);
			free(b);
		}
		free(v);
	}
	free(be->allocs);
	be->allocs = NULL;
	be->nallocs = be->capallocs = 0;
}

emu_val *emu_k_vec(emu_be *be, size_t n)
{
	emu_val *v = calloc(n ? n : 1, sizeof *v);
	if (!v || !track(be, v)) {
		free(v);
		return NULL;
	}
	if (be->kind == EMU_BE_TRUTH) {
		truth_block *b = malloc(sizeof *b + n * sizeof(mpfr_t));
		if (!b || !track(be, b)) {
			free(b);
			be->nallocs--;
			free(v);
			return NULL;
		}
		b->n = n;
		for (size_t i = 0; i < n; i++) {
			mpfr_init2(b->v[i], EMU_TRUTH_PREC);
			mpfr_set_zero(b->v[i], 1);
			v[i].m = b->v[i];
		}
	}
	return v;
}

/* The value of an encoding, a NaN keeping its sign bit (an overflow or an
 * infinity in a format without inf is a signed NaN, docs/numerics.md), as
 * the fast operations' doubles do. */
static double decode(const emu_format *f, emu_bits b)
{
	double v = emu_decode(f, b);
	return isnan(v) && f->nan != EMU_NAN_FNUZ && (b & f->sign_mask) ? -v : v;
}

/* DAZ in the value domain: x, a value of f, is read as a zero of its sign
 * when it is subnormal in f (the operand's format, as emu_operand and the
 * exact backend's decode read the encoding). Formats without subnormals
 * have no such values; their values below 2^emin are zeros already. */
static double daz_value(const emu_format *f, double x)
{
	return x != 0 && fabs(x) < f->min_normal ? copysign(0.0, x) : x;
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

void emu_k_note(emu_be *be, emu_op op, unsigned fl, const char *step, uint64_t i)
{
	be->st.ops[op]++;
	be->st.all_flags |= fl;
	for (int k = 0; k < EMU_NFLAGS; k++)
		if (fl & (1u << k))
			be->st.flags[op][k]++;
	unsigned bad = fl & (EMU_FLAG_OVERFLOW | EMU_FLAG_INVALID | EMU_FLAG_DIVBYZERO);
	if (bad && !be->st.first_set) {
		be->st.first_set = true;
		be->st.first_op = op;
		be->st.first_flags = bad;
		be->st.first_step = step;
		be->st.first_index = i;
	}
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

unsigned emu_k_range(const emu_be *be, const emu_val *v, const emu_format *f)
{
	return be->kind == EMU_BE_TRUTH && f ? range_flags(v->m, f, &be->env) : 0;
}

/* range_peak: log2 |v| from MPFR's exponent, so exp(1e6) does not overflow */
static unsigned range_note(emu_be *be, const emu_val *v, const emu_format *f)
{
	if (!f)
		return 0;
	if (mpfr_number_p(v->m) && !mpfr_zero_p(v->m)) {
		long e;
		double m = mpfr_get_d_2exp(&e, v->m, MPFR_RNDN);
		double t = f->max + ldexp(1, f->emax - f->p); /* the RNE threshold */
		double peak = (double)e + log2(fabs(m)) - log2(t);
		if (peak > be->range_peak)
			be->range_peak = peak;
	}
	return emu_k_range(be, v, f);
}

void emu_k_note_input(emu_be *be, double x, double v, unsigned fl)
{
	emu_be_stats *st = &be->st;
	st->in_n++;
	if (isnan(x) ? !isnan(v) : !(v == x && signbit(v) == signbit(x)))
		st->in_changed++;
	if ((fl & EMU_FLAG_OVERFLOW) || (isfinite(x) && !isfinite(v)))
		st->in_overflow++;
	if (v == 0 && x != 0 && isfinite(x))
		st->in_flushed++;
}

void emu_k_input(emu_be *be, emu_val *dst, double x, const emu_format *f, const char *step,
                 uint64_t i)
{
	if (be->kind == EMU_BE_TRUTH && be->range) { /* the exact input, judged */
		mpfr_set_d(dst->m, x, MPFR_RNDN);
		emu_k_note(be, EMU_OP_CVT, range_note(be, dst, f), step, i);
		return;
	}
	if (be->kind == EMU_BE_TRUTH && be->exact_inputs) { /* the original input */
		mpfr_set_d(dst->m, x, MPFR_RNDN);
		be->env.index++;
		emu_k_note(be, EMU_OP_CVT, 0, step, i);
		return;
	}
	emu_env env = be->env;
	env.daz = false;
	double v;
	unsigned rfl = 0;
	if (be->kind == EMU_BE_EXACT) {
		emu_result r = emu_mp_from_double(f, x, &env);
		v = decode(f, r.bits);
		rfl = r.flags;
	} else {
		v = emu_v_from_double(f, x, &env, &rfl); /* the value domain: no encode/decode */
	}
	be->env.index++;
	if (be->kind == EMU_BE_TRUTH)
		mpfr_set_d(dst->m, v, MPFR_RNDN);
	else
		dst->d = v;
	emu_k_note(be, EMU_OP_CVT, rfl, step, i);
	if (!be->loading)
		emu_k_note_input(be, x, v, rfl);
}

void emu_k_const(emu_be *be, emu_val *dst, double x)
{
	if (be->kind == EMU_BE_TRUTH)
		mpfr_set_d(dst->m, x, MPFR_RNDN);
	else
		dst->d = x;
}

void emu_k_copy(emu_be *be, emu_val *dst, const emu_val *a)
{
	if (be->kind == EMU_BE_TRUTH)
		mpfr_set(dst->m, a->m, MPFR_RNDN);
	else
		dst->d = a->d;
}

double emu_k_d(const emu_be *be, const emu_val *v)
{
	return be->kind == EMU_BE_TRUTH ? mpfr_get_d(v->m, MPFR_RNDN) : v->d;
}

int emu_k_cmp(const emu_be *be, const emu_val *a, const emu_val *b)
{
	if (be->kind == EMU_BE_TRUTH) {
		if (mpfr_nan_p(a->m) || mpfr_nan_p(b->m))
			return 2;
		int c = mpfr_cmp(a->m, b->m);
		return c < 0 ? -1 : c > 0;
	}
	if (a->d != a->d || b->d != b->d)
		return 2;
	return a->d < b->d ? -1 : a->d > b->d;
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
		mpfr_div(d, a, b, MPFR_RNDN);
		break;
	case EMU_OP_FMA:
		mpfr_fma(d, a, b, c, MPFR_RNDN);
		break;
	case EMU_OP_SQRT:
		mpfr_sqrt(d, a, MPFR_RNDN);
		break;
	case EMU_OP_EXP:
		mpfr_exp(d, a, MPFR_RNDN);
		break;
	case EMU_OP_LOG:
		mpfr_log(d, a, MPFR_RNDN);
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

void emu_k_op(emu_be *be, emu_op op, emu_val *dst, const emu_val *a, const emu_val *b,
              const emu_val *c, const emu_format *f, const char *step, uint64_t i)
{
	unsigned fl = 0;
	if (be->kind == EMU_BE_TRUTH) {
		truth_op(op, dst->m, a->m, b ? b->m : NULL, c ? c->m : NULL);
		if (mpfr_nan_p(dst->m))
			fl |= EMU_FLAG_INVALID;
		if (be->range)
			fl |= range_note(be, dst, f);
		be->env.index++; /* as the other backends: a stored-input load replays SR */
		emu_k_note(be, op, fl, step, i);
		return;
	}
	emu_env *env = &be->env;
	double x = a->d, y = b ? b->d : 0, z = c ? c->d : 0, r;
	if (be->kind == EMU_BE_FAST) {
		/* emu_v_* take their operands as they are: read them here as
		 * emu_operand does (the other ops decode their encodings) */
		if (env->daz && (op == EMU_OP_ADD || op == EMU_OP_SUB || op == EMU_OP_MUL ||
		                  op == EMU_OP_DIV || op == EMU_OP_FMA)) {
			x = daz_value(f, x);
			y = daz_value(f, y);
			z = daz_value(f, z);
		}
		switch (op) {
		case EMU_OP_ADD:
			r = emu_v_add(f, x, y, env, &fl);
			break;
		case EMU_OP_SUB:
			r = emu_v_sub(f, x, y, env, &fl);
			break;
		case EMU_OP_MUL:
			r = emu_v_mul(f, x, y, env, &fl);
			break;
		case EMU_OP_DIV:
			r = emu_v_div(f, x, y, env, &fl);
			break;
		case EMU_OP_FMA:
			r = emu_v_fma(f, x, y, z, env, &fl);
			break;
		case EMU_OP_CVT: {
			emu_env e = *env;
			e.daz = false; /* the operand's own format is not known here */
			r = emu_round_exact(f, x, &e, &fl);
			break;
		}
		default: {
			int ar = emu_op_arity(op);
			emu_bits args[3] = {emu_encode(f, x), ar > 1 ? emu_encode(f, y) : 0,
			                    ar > 2 ? emu_encode(f, z) : 0};
			emu_result res = emu_apply(op, f, NULL, args, env);
			fl = res.flags;
			emu_bits t;
			if (be->tables &&
			    emu_gpu_tables_lookup(be->tables, emu_gpu_table_func(op), f, args[0],
			                          &t) &&
			    t != res.bits) {
				res.bits = t;
				fl = table_flags(f, x, decode(f, t));
			}
			r = decode(f, res.bits);
		}
		}
	} else {
		emu_result res;
		if (op == EMU_OP_CVT) {
			emu_env e = *env;
			e.daz = false;
			res = emu_mp_from_double(f, x, &e);
		} else {
			emu_bits args[3] = {emu_encode(f, x), emu_encode(f, y), emu_encode(f, z)};
			res = emu_mp_apply(op, f, NULL, args, env);
		}
		fl = res.flags;
		r = decode(f, res.bits);
	}
	env->index++;
	dst->d = r;
	emu_k_note(be, op, fl, step, i);
}
