/*
 * emu.h — nanmap's bit-exact emulator of small floating-point formats.
 *
 * Contract (the full rules are in docs/numerics.md):
 *  - A format is one emu_format value. Every limit and mask is derived from a
 *    few fields (p, ebits, bias, inf, NaN style, subnormals, sign) by
 *    emu_format_init(); no code branches on a format's name.
 *  - Encodings (emu_bits) are the format's bits, right-aligned in a uint32_t.
 *  - Every operation returns the result's encoding and its flags
 *    (EMU_FLAG_*). Tininess is detected AFTER rounding (as x86 and MPFR do);
 *    underflow is raised only when the result is tiny and inexact.
 *  - Values in the "value domain" are doubles that hold a representable value
 *    of the format exactly (or ±inf / NaN); the kernels compute on those.
 *  - Two backends implement every operation: the fast one (emu_*, bit
 *    manipulation and error-free transforms on double) and the exact-format
 *    MPFR one (emu_mp_*). They agree bit for bit and flag for flag; the tests
 *    prove it.
 *
 * Restrictions that keep the fast backend exact: 1 <= p <= 24, ebits <= 8
 * and exponents within the widest range 8 exponent bits give (emin >=
 * EMU_EMIN_LIMIT, emax <= EMU_EMAX_LIMIT, whatever the bias), so every
 * format value, every product of two and every quotient remainder is exact
 * in double.
 */
#ifndef NANMAP_EMU_H
#define NANMAP_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint32_t emu_bits;

/* The exponent range every format lies in: fnuz and e8m0 reach emin = -127
 * with 8 exponent bits, fn emax = 128 (emu_format_init refuses the rest). */
#define EMU_EMIN_LIMIT (-127)
#define EMU_EMAX_LIMIT 128

/* Flags, OR-ed together. */
enum {
	EMU_FLAG_INVALID = 1u << 0,
	EMU_FLAG_DIVBYZERO = 1u << 1,
	EMU_FLAG_OVERFLOW = 1u << 2,
	EMU_FLAG_UNDERFLOW = 1u << 3,
	EMU_FLAG_INEXACT = 1u << 4,
};
#define EMU_FLAG_ALL 0x1fu

typedef enum {
	EMU_RNE = 0, /* to nearest, ties to even (default) */
	EMU_RTZ,     /* toward zero */
	EMU_UP,      /* toward +inf */
	EMU_DOWN,    /* toward -inf */
	EMU_RNA,     /* to nearest, ties away from zero */
	EMU_SR,      /* stochastic: away from zero with probability frac */
	EMU_NMODES
} emu_mode;

/* How NaN (and infinity) are encoded. */
typedef enum {
	EMU_NAN_IEEE = 0, /* top exponent reserved: inf (if any) and NaNs */
	EMU_NAN_FN,       /* OCP "FN": only S.1..1.1..1 is NaN, no inf (e8m0: 0xff) */
	EMU_NAN_FNUZ,     /* only 1.0..0.0..0 (the would-be -0) is NaN */
	EMU_NAN_NONE,     /* no NaN at all (MX FP6/FP4) */
} emu_nan_style;

typedef enum {
	EMU_CLASS_ZERO = 0,
	EMU_CLASS_SUBNORMAL,
	EMU_CLASS_NORMAL,
	EMU_CLASS_INF,
	EMU_CLASS_NAN
} emu_class;

typedef struct emu_format {
	char name[64]; /* a built-in's name, or the custom spec as given */
	/* defining fields */
	int p;               /* precision, implicit bit included */
	int ebits;           /* exponent field width */
	int bias;
	bool has_sign;       /* false: e8m0, custom "unsigned" (no sign bit) */
	bool has_inf;
	bool has_subnormals; /* false: values below 2^emin round to 0 or 2^emin */
	bool has_zero;       /* false: e8m0, custom "nozero" (code 0 is 2^emin) */
	emu_nan_style nan;
	/* derived by emu_format_init() */
	int bits;            /* storage width */
	int emin, emax;      /* exponents of the smallest normal and largest finite */
	emu_bits man_mask, exp_mask, sign_mask;
	emu_bits max_bits;   /* +max finite */
	emu_bits nan_bits;   /* the NaN this emulator produces (none: 0) */
	emu_bits inf_bits;   /* +inf, if has_inf */
	double max;          /* largest finite */
	double min_normal;   /* 2^emin */
	double min_subnormal;/* 2^(emin-p+1), or min_normal without subnormals */
	double epsilon;      /* 2^(1-p) */
} emu_format;

/* Rounding environment. sat: clamp overflow (and infinite results) to
 * ±max finite instead of inf/NaN. ftz: tiny nonzero results become a zero of
 * the same sign (underflow|inexact). daz: subnormal inputs are read as zero.
 * SR draws 32 random bits keyed by (seed, index); see emu_sr_bits(). */
typedef struct emu_env {
	emu_mode mode;
	bool sat, ftz, daz;
	uint64_t seed;
	uint64_t index;
} emu_env;

#define EMU_ENV_DEFAULT ((emu_env){EMU_RNE, false, false, false, 0, 0})

typedef struct {
	emu_bits bits;
	unsigned flags;
} emu_result;

typedef enum {
	EMU_OP_CVT = 0, /* one operand, from another format (emu_convert) */
	EMU_OP_ADD,
	EMU_OP_SUB,
	EMU_OP_MUL,
	EMU_OP_DIV,
	EMU_OP_FMA,
	EMU_OP_SQRT,
	EMU_OP_EXP,
	EMU_OP_LOG,
	EMU_OP_EXP2,
	EMU_OP_RSQRT,
	EMU_OP_MIN,
	EMU_OP_MAX,
	EMU_OP_NEG,
	EMU_OP_ABS,
	EMU_OP_LOG1P, /* log(1 + x); last so ops keep their indices */
	EMU_NOPS
} emu_op;

typedef enum {
	EMU_OK = 0,
	EMU_ERR_UNKNOWN_FORMAT,
	EMU_ERR_BAD_SPEC,
	EMU_ERR_RANGE
} emu_status;

/* ---- formats (emu/core/format.c) ---- */
/* Number of built-in formats and the i-th of them. */
size_t emu_format_count(void);
const emu_format *emu_format_at(size_t i);
/* A built-in by name, or NULL. */
const emu_format *emu_format_by_name(const char *name);
/* Do a and b describe the same encoding (every defining field equal; the
 * names may differ)? */
bool emu_format_same(const emu_format *a, const emu_format *b);
/* A name or a custom spec such as "p=5,emax=15,nan=fn,nosub" or
 * "p=4,ebits=4,bias=11,nan=fnuz" (format.c lists the items). On error
 * writes a one-line reason into err and returns non-zero. */
emu_status emu_format_parse(const char *spec, emu_format *out, char *err,
                            size_t errlen) __attribute__((warn_unused_result));
/* Derive every limit of f from its defining fields. */
emu_status emu_format_init(emu_format *f) __attribute__((warn_unused_result));

/* ---- encode / decode (emu/core/codec.c) ---- */
double emu_decode(const emu_format *f, emu_bits b);
emu_class emu_classify(const emu_format *f, emu_bits b);
/* Encoding of a value that is representable in f (or ±inf, NaN). */
emu_bits emu_encode(const emu_format *f, double v);
/* true when b is any NaN encoding of f */
bool emu_is_nan(const emu_format *f, emu_bits b);
/* true when b is a signaling NaN of f: ieee style, quiet bit (the top
 * fraction bit) clear. Formats with one NaN have none. */
bool emu_is_snan(const emu_format *f, emu_bits b);
/* true when x is a signaling binary64 NaN (bit 51 clear). */
bool emu_is_snan_double(double x);
/* Next encoding toward +inf / -inf (for neighbours in error messages). */
emu_bits emu_next_up(const emu_format *f, emu_bits b);
emu_bits emu_next_down(const emu_format *f, emu_bits b);

/* ---- rounding core (emu/core/round.c) ---- */
/* Round the exact value x + tail to f (a double-double: |tail| <= ulp(x)/2,
 * e.g. from TwoSum). Returns the rounded value as a double (the value
 * domain: exact, or ±inf/NaN) and ORs flags into *flags. */
double emu_round_value(const emu_format *f, double x, double tail,
                       const emu_env *env, unsigned *flags);
/* Round (M + s)·2^E, 0 <= s < 1 with s != 0 iff sticky, negated if neg.
 * With sticky set, M must have at least 34 bits below its leading one or
 * the value must lie below a quarter of f's smallest subnormal. */
double emu_round_core(const emu_format *f, bool neg, uint64_t M, int E,
                      bool sticky, const emu_env *env, unsigned *flags);
/* SplitMix64's finaliser (Steele, Lea, Flood 2014): nanmap's one mixer for
 * counter-based draws (SR, generators, kernels' own data). Callers form the
 * counter (seed ^ index·φ + φ for SR, docs/run.md for the generator). */
static inline uint64_t emu_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The 32 random bits SR uses for (seed, index). */
uint32_t emu_sr_bits(uint64_t seed, uint64_t index);

/* ---- operations on encodings (emu/core/apply.c and one file per op) ---- */
emu_result emu_from_double(const emu_format *f, double x, const emu_env *env);
emu_result emu_from_float(const emu_format *f, float x, const emu_env *env);
emu_result emu_convert(const emu_format *dst, const emu_format *src,
                       emu_bits a, const emu_env *env);
emu_result emu_add(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env);
emu_result emu_sub(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env);
emu_result emu_mul(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env);
emu_result emu_div(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env);
emu_result emu_fma(const emu_format *f, emu_bits a, emu_bits b, emu_bits c,
                   const emu_env *env);
emu_result emu_sqrt(const emu_format *f, emu_bits a, const emu_env *env);
emu_result emu_exp(const emu_format *f, emu_bits a, const emu_env *env);
emu_result emu_log(const emu_format *f, emu_bits a, const emu_env *env);
emu_result emu_exp2(const emu_format *f, emu_bits a, const emu_env *env);
emu_result emu_rsqrt(const emu_format *f, emu_bits a, const emu_env *env);
emu_result emu_min(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env);
emu_result emu_max(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env);
emu_result emu_neg(const emu_format *f, emu_bits a, const emu_env *env);
emu_result emu_abs(const emu_format *f, emu_bits a, const emu_env *env);
emu_result emu_log1p(const emu_format *f, emu_bits a, const emu_env *env);
/* -1, 0, 1 for less, equal, greater; 2 unordered. Quiet: no flags. */
int emu_compare(const emu_format *f, emu_bits a, emu_bits b, const emu_env *env);

/* Table-driven dispatch: args[0..arity-1]; for EMU_OP_CVT src is the
 * source format (ignored otherwise). */
int emu_op_arity(emu_op op);
const char *emu_op_name(emu_op op);
emu_op emu_op_by_name(const char *name); /* EMU_NOPS if unknown */
emu_result emu_apply(emu_op op, const emu_format *f, const emu_format *src,
                     const emu_bits *args, const emu_env *env);

/* Value-domain helpers for the kernels: operands are exact values of f, or
 * ±0 in a format without zero, read as code 0 (2^emin) as emu_encode makes it. */
double emu_v_add(const emu_format *f, double a, double b, const emu_env *env, unsigned *fl);
double emu_v_sub(const emu_format *f, double a, double b, const emu_env *env, unsigned *fl);
double emu_v_mul(const emu_format *f, double a, double b, const emu_env *env, unsigned *fl);
double emu_v_div(const emu_format *f, double a, double b, const emu_env *env, unsigned *fl);
double emu_v_fma(const emu_format *f, double a, double b, double c, const emu_env *env,
                 unsigned *fl);

/* Arrays (emu/core/array.c): round n doubles to encodings; SR index = env->index + i.
 * Returns the OR of all flags. */
unsigned emu_round_array(const emu_format *f, const double *in, emu_bits *out,
                         size_t n, const emu_env *env);

/* ---- array operations (emu/core/aops.c) ----
 * Over n values of f held in doubles (the value domain), operand k read at
 * x_k[i * s_k] (stride 0: one scalar broadcast), result i written to dst[i].
 * Element i is exactly the scalar operation under env with SR index
 * env->index + i (emu_a_element); every mode, sat, ftz and daz apply.
 * Returns how many elements raised each flag (count[k] for flag 1 << k)
 * and their OR; flags, when not NULL, receives each element's flags.
 * Round-to-nearest-even add, sub, mul, div, sqrt, fma (sr too for p <= 20),
 * exp, log, exp2, rsqrt and log1p take a branch-free binary64 path, with loops of
 * their own for unit strides and a broadcast operand (docs/numerics.md);
 * everything else goes element by element.
 * dst may overlap any operand: a chunk whose results would overwrite an
 * operand it still reads is computed into a buffer first. */
typedef struct {
	uint64_t count[5]; /* INVALID, DIVBYZERO, OVERFLOW, UNDERFLOW, INEXACT */
	unsigned any;      /* the OR of every element's flags */
	uint64_t first_bad; /* the first element that raised overflow, invalid or
	                       divbyzero; UINT64_MAX when none did */
	unsigned first_flags; /* that element's flags */
} emu_a_flags;

/* One element, the scalar reference of the array ops: add..fma through
 * emu_v_* (daz applied to the values), cvt as emu_from_double, the rest
 * through encodings and emu_apply (a NaN result keeps its sign). */
double emu_a_element(emu_op op, const emu_format *f, double x, double y, double z,
                     const emu_env *env, unsigned *fl);
/* args[0..arity-1] with strides[0..arity-1]. */
emu_a_flags emu_a_op(emu_op op, const emu_format *f, double *dst, const double *const *args,
                     const size_t *strides, size_t n, const emu_env *env, uint8_t *flags);
#define EMU_A_UNARY(name)                                                                          \
	emu_a_flags name(const emu_format *f, double *dst, const double *a, size_t sa, size_t n,  \
	                 const emu_env *env, uint8_t *flags)
#define EMU_A_BINARY(name)                                                                         \
	emu_a_flags name(const emu_format *f, double *dst, const double *a, size_t sa,            \
	                 const double *b, size_t sb, size_t n, const emu_env *env, uint8_t *flags)
EMU_A_UNARY(emu_a_cvt); /* any doubles into f, as emu_from_double */
EMU_A_UNARY(emu_a_sqrt);
EMU_A_UNARY(emu_a_exp);
EMU_A_UNARY(emu_a_log);
EMU_A_UNARY(emu_a_exp2);
EMU_A_UNARY(emu_a_rsqrt);
EMU_A_UNARY(emu_a_neg);
EMU_A_UNARY(emu_a_abs);
EMU_A_BINARY(emu_a_add);
EMU_A_BINARY(emu_a_sub);
EMU_A_BINARY(emu_a_mul);
EMU_A_BINARY(emu_a_div);
EMU_A_BINARY(emu_a_min);
EMU_A_BINARY(emu_a_max);
#undef EMU_A_UNARY
#undef EMU_A_BINARY
emu_a_flags emu_a_fma(const emu_format *f, double *dst, const double *a, size_t sa,
                      const double *b, size_t sb, const double *c, size_t sc, size_t n,
                      const emu_env *env, uint8_t *flags);

/* A sequential fold, the order of a C loop: for j = 0..n-1, *acc =
 * op(*acc, a[j·sa]) (add, sub, mul, min, max), or *acc = fma(a[j·sa],
 * b[j·sb], *acc) for EMU_OP_FMA; step j is the scalar operation under env
 * with SR index env->index + j. Counts, first_bad (the first step j that
 * raised overflow, invalid or divbyzero) and flags[j] as emu_a_op. Add,
 * sub, mul and fma in rne (and sr for p <= 20), min and max take the fast
 * path's step, the scalar op only where a step cannot be decided. */
emu_a_flags emu_a_fold(emu_op op, const emu_format *f, double *acc, const double *a, size_t sa,
                       const double *b, size_t sb, size_t n, const emu_env *env, uint8_t *flags);
/* m such folds, chain c on acc[c·sacc], a + c·ca and b + c·cb, its SR
 * indices from env->index + c·cidx: every chain in its own sequential order,
 * exactly emu_a_fold's, several in flight at once (a dependent chain of
 * rounded steps is latency-bound; independent ones overlap). The counts are
 * summed; first_bad numbers chain c's step j as c·cidx + j, and is the first
 * chain's (in chain order) that raised overflow, invalid or divbyzero, as m
 * emu_a_fold calls one after the other would report it. */
emu_a_flags emu_a_fold_n(emu_op op, const emu_format *f, double *acc, size_t sacc, const double *a,
                         size_t sa, size_t ca, const double *b, size_t sb, size_t cb, size_t n,
                         size_t m, const emu_env *env, uint64_t cidx);

/* How many transcendental results the fast backend could not decide from
 * double and long double evaluations and took from MPFR (Ziv fallback). */
uint64_t emu_fallback_count(void);

/* ---- the exact-format MPFR backend (emu/core/mpref.c) ---- */
emu_result emu_mp_from_double(const emu_format *f, double x, const emu_env *env);
emu_result emu_mp_apply(emu_op op, const emu_format *f, const emu_format *src,
                        const emu_bits *args, const emu_env *env);

/* ---- names (emu/core/names.c) ---- */
const char *emu_mode_name(emu_mode m);
emu_mode emu_mode_by_name(const char *name); /* EMU_NMODES if unknown */
const char *emu_class_name(emu_class c);
/* "overflow|inexact" or "-"; buf must hold 48 bytes. */
const char *emu_flags_str(unsigned flags, char *buf, size_t len);
/* nanmap's one vocabulary of yes and no, in case files, tensor-core model
 * specs and plot options alike: 1 for yes, true, on, 1; 0 for no, false,
 * off, 0 (lower case, the whole word); -1 for anything else. */
int emu_bool_by_name(const char *word);

#endif
