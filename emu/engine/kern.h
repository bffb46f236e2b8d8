/*
 * kern.h — the arithmetic the kernels are written in, one interface for the
 * three backends, and the precision policy.
 *
 * A kernel is written once against the array-level interface below (maps
 * and folds over vectors, docs/engine.md) and runs on:
 *   EMU_BE_FAST  the fast emulator: values are doubles holding exact format
 *                values; a map is one array operation (emu_a_op);
 *   EMU_BE_EXACT MPFR in the format (emu_mp_apply) on the same doubles,
 *                element by element; must agree with FAST bit for bit and
 *                flag for flag;
 *   EMU_BE_TRUTH MPFR at EMU_TRUTH_PREC bits, formats ignored: the answer
 *                errors are judged by. Two kinds of truth run: from the
 *                inputs as stored (emu_input and emu_load give what the
 *                kernel's own load gives) and, with emu_be.exact_inputs,
 *                from the original inputs (nothing stored, no recipe).
 * Every operation names the kernel step and element index it belongs to, so
 * a run can say which operation raised overflow, invalid or divbyzero first.
 * Stochastic rounding draws are keyed by the run's seed, the step and the
 * element, so a run is reproducible and independent of operation order.
 */
#ifndef NANMAP_KERN_H
#define NANMAP_KERN_H

#include <mpfr.h>

#include "emu/core/emu.h"
#include "emu/engine/gputab.h"
#include "emu/recipes/recipe.h"

#define EMU_TRUTH_PREC 256

typedef enum { EMU_BE_FAST = 0, EMU_BE_EXACT, EMU_BE_TRUTH, EMU_NBE } emu_be_kind;

/* A vector of values (the array-level interface below). */
typedef struct emu_vec {
	size_t n;
	double *d;        /* FAST, EXACT: n values */
	__mpfr_struct *m; /* TRUTH: n numbers of EMU_TRUTH_PREC bits */
} emu_vec;

enum { EMU_NFLAGS = 5 }; /* flag bits, as EMU_FLAG_* */

typedef struct {
	uint64_t ops[EMU_NOPS];
	uint64_t flags[EMU_NOPS][EMU_NFLAGS];
	unsigned all_flags;
	bool first_set; /* first op that raised overflow, invalid or divbyzero */
	emu_op first_op;
	unsigned first_flags;
	const char *first_step;
	uint64_t first_index;
	/* input elements as stored (emu_input, emu_load): how many were
	 * stored, changed by storing (value differs, or NaN for a number),
	 * raised overflow (saturated, or inf/NaN from a finite value), and
	 * became zero from a nonzero finite value (flushed). TRUTH with
	 * exact_inputs or range stores nothing: all 0. */
	uint64_t in_n, in_changed, in_overflow, in_flushed;
	/* per step id (emu_steps): operations and how many raised each flag;
	 * nsteps entries: every step emu_steps declared, grown if another is
	 * met */
	uint64_t *step_ops;
	uint64_t (*step_flags)[EMU_NFLAGS];
	size_t nsteps;
} emu_be_stats;

typedef struct emu_be {
	emu_be_kind kind;
	emu_env env; /* mode, sat, ftz, daz, seed; env.index counts operations */
	emu_be_stats st;
	/* TRUTH only, set after emu_be_init: values stay exact (inputs too, not
	 * stored first), and every emu_input / emu_map also raises the
	 * overflow and underflow its format would (emu_k_range), so a run finds
	 * where the exact computation leaves the formats' ranges */
	bool range;
	/* TRUTH only, set after emu_be_init: inputs are the exact doubles given,
	 * not stored and not passed through the scaling recipe (the truth of
	 * the original inputs, for end-to-end errors) */
	bool exact_inputs;
	/* set by emu_load while it loads: it counts the elements it stores
	 * itself (emu_k_note_input), so emu_input does not */
	bool loading;
	/* with range: the largest log2(|v| / (max + ulp(max)/2)) over the
	 * values checked, a continuous measure of how far the run is from (or
	 * beyond) an overflow; set it to -INFINITY together with range */
	double range_peak;
	/* FAST only, NULL by default (set after emu_be_init; not owned): fp16
	 * and bf16 exp, log, exp2, rsqrt and sqrt are the table's encoding for
	 * the operand's, as the GPU computes them (docs/gpu.md). The policy's
	 * rounding mode, overflow=sat and ftz/daz do not apply to them. Flags:
	 * the correctly rounded op's when the table agrees with it; otherwise
	 * invalid for NaN from non-NaN; from ±0 or ±inf, divbyzero for inf
	 * from 0, else none; otherwise inexact, plus overflow for inf and
	 * underflow for a zero or subnormal result. */
	const emu_gpu_tables *tables;
	/* the kernel's step names (emu_steps): id EMU_STEP0 + k is names[k] */
	const char *const *step_names;
	unsigned nstep_names;
	/* every emu_vec_new, freed by emu_be_free */
	emu_vec **vecs;
	size_t nvecs, capvecs;
	emu_vec *scratch; /* a few values for the folds' partial sums */
	/* TRUTH: vectors emu_truth_split took apart for emu_dot_n (forks share
	 * the owner's) */
	struct emu_td_split *td;
} emu_be;

/* ---- backends (emu/engine/backend.c) ---- */
void emu_be_init(emu_be *be, emu_be_kind kind, const emu_env *env);
void emu_be_free(emu_be *be);
const char *emu_be_name(emu_be_kind k);
emu_be_kind emu_be_by_name(const char *name); /* EMU_NBE if unknown */
/* Count one input element stored: x the original, v its stored value,
 * fl the flags storing raised (emu_be_stats.in_*). */
void emu_k_note_input(emu_be *be, double x, double v, unsigned fl);
/* What rounding the exact value v to f under be's environment would raise:
 * EMU_FLAG_OVERFLOW as the format's rounding decides it (RNE: |v| at or
 * above max + ulp(max)/2), EMU_FLAG_UNDERFLOW when v is nonzero and rounds
 * to zero. 0 for zero, infinities and NaN. TRUTH values only. */
unsigned emu_k_range(const emu_be *be, mpfr_srcptr v, const emu_format *f);

/* ---- the array-level kernel interface (emu/engine/backend.c) ----
 *
 * A kernel is written once, in its exact order of operations, as maps
 * (elementwise, with broadcast) and folds (reductions in a named order)
 * over vectors. On FAST a map is one emu_a_op call over double[] (the
 * array operations' branch-free paths); EXACT runs the same calls element
 * by element through the MPFR backend, TRUTH at EMU_TRUTH_PREC bits.
 *
 * Steps are ids: the engine's own below EMU_STEP0 (loading inputs), a
 * kernel's from EMU_STEP0 on, named by emu_steps. Every operation counts
 * per op kind and per step, and the first that raised overflow, invalid or
 * divbyzero is reported by step name and element.
 *
 * Stochastic rounding is keyed by (seed, step, element): the draw of
 * element e of step s is emu_sr_bits(seed, emu_sr_key(s, phase, e)), so a
 * result does not depend on the order operations run in, on chunking or on
 * threads.
 */

/* An operand: elements v[off + j·stride], j = 0..n-1 (stride 0: v[off]
 * broadcast). A destination has stride 1, or n = 1. */
typedef struct {
	emu_vec *v;
	size_t off, stride;
} emu_ref;

static inline emu_ref emu_row(emu_vec *v, size_t off)
{
	return (emu_ref){v, off, 1};
}
static inline emu_ref emu_at(emu_vec *v, size_t i)
{
	return (emu_ref){v, i, 0};
}
static inline emu_ref emu_strided(emu_vec *v, size_t off, size_t stride)
{
	return (emu_ref){v, off, stride};
}
#define EMU_NOREF ((emu_ref){NULL, 0, 0})

/* The engine's steps (the input load, emu/engine/scale.c). */
enum {
	EMU_STEP_INPUT = 0, /* an input stored in its format */
	EMU_STEP_SCALE,     /* x · s in fp32 (scaling recipes) */
	EMU_STEP_QUANTIZE,  /* into the storage format */
	EMU_STEP_TO_COMPUTE,
	EMU_STEP_SCALE_INV, /* fp32(1/s) into the compute format */
	EMU_STEP_DEQUANTIZE,
	EMU_STEP0 = 16 /* a kernel's first step */
};

/* The SR index of element e of step s; phase tells a fold's inner and
 * outer operations apart (0..3). e < 2^42. */
static inline uint64_t emu_sr_key(unsigned step, unsigned phase, uint64_t e)
{
	return ((uint64_t)(step + 1) << 44) | ((uint64_t)(phase & 3) << 42) |
	       (e & ((1ull << 42) - 1));
}

/* names[k] names step EMU_STEP0 + k (not copied: static storage). */
void emu_steps(emu_be *be, const char *const *names, unsigned n);
/* The name of step id s ("?" if unknown). */
const char *emu_step_name(const emu_be *be, unsigned s);
/* n values, all +0, freed with the backend; NULL on allocation failure.
 * TRUTH: 64 bytes a value. */
emu_vec *emu_vec_new(emu_be *be, size_t n);
/* Element i as the nearest double (TRUTH rounds to nearest). */
double emu_vget(const emu_be *be, const emu_vec *v, size_t i);
/* x = d exactly, for x an element of a TRUTH vector (emu_vec_new's: its
 * significand the vector's, EMU_TRUTH_PREC bits): mpfr_set_d's number,
 * a finite nonzero d written into the limbs directly. */
void emu_truth_set_d(mpfr_ptr x, double d);
/* n elements of dst set to the constant x (exact in the formats it meets:
 * 0, 1, N), or copied from src. */
void emu_fill(emu_be *be, emu_ref dst, double x, size_t n);
/* dst[j] = x[j], j < n, exactly (values a kernel holds as they are, such as
 * 0/1 targets): no rounding, nothing counted, as emu_fill */
void emu_set(emu_be *be, emu_ref dst, const double *x, size_t n);
void emu_copy(emu_be *be, emu_ref dst, emu_ref src, size_t n);
/* n input doubles x[j·sx] stored in f (rounded by the policy's mode, as
 * emu_load; TRUTH with range or exact_inputs keeps them), counted in
 * emu_be_stats.in_* unless be->loading. fl, if not NULL, ORs each
 * element's flags into fl[j]. */
void emu_input(emu_be *be, unsigned step, const emu_format *f, emu_ref dst, const double *x,
               size_t sx, size_t n, uint64_t elem, uint8_t *fl);
/* dst[j] = op(a[j], b[j], c[j]) rounded to f (TRUTH: exact), j < n;
 * element j is element elem + j of the step. EMU_OP_CVT rounds a into f.
 * dst may be an operand itself (same offset and stride) or apart from it.
 * fl as emu_input. */
void emu_map(emu_be *be, unsigned step, emu_op op, const emu_format *f, emu_ref dst, emu_ref a,
             emu_ref b, emu_ref c, size_t n, uint64_t elem, uint8_t *fl);
/* emu_map rounding in mode instead of the policy's (the rest of the
 * environment, SR's seed and keys included, is the policy's): a kernel that
 * rounds one site differently, such as a weight update stored with
 * stochastic rounding, names the mode at that site. TRUTH: exact, as
 * emu_map. */
void emu_map_mode(emu_be *be, unsigned step, emu_op op, emu_mode mode, const emu_format *f,
                  emu_ref dst, emu_ref a, emu_ref b, emu_ref c, size_t n, uint64_t elem,
                  uint8_t *fl);
/* emu_map under env instead of the backend's (a load that casts with
 * satfinite names its own environment: the backend's is never changed in
 * place). env's index is set per element as emu_map sets it. */
void emu_map_env(emu_be *be, const emu_env *env, unsigned step, emu_op op, const emu_format *f,
                 emu_ref dst, emu_ref a, emu_ref b, emu_ref c, size_t n, uint64_t elem,
                 uint8_t *fl);
/* One element: emu_map with n = 1. */
static inline void emu_op1(emu_be *be, unsigned step, emu_op op, const emu_format *f,
                           emu_ref dst, emu_ref a, emu_ref b, uint64_t elem)
{
	emu_map(be, step, op, f, dst, a, b, EMU_NOREF, 1, elem, NULL);
}

/* m sequential folds at once (emu_fold's EMU_ORDER_SEQ, each exactly as
 * one call would run it, several in flight): chain c folds a shifted by c·ca
 * elements (and b by c·cb) into element c of acc (its stride apart),
 * numbered from elem + c·ce; the counts and the first failing operation are
 * those of the m calls made one after the other. */
void emu_fold_n(emu_be *be, unsigned step, emu_op op, const emu_format *f, emu_ref acc, emu_ref a,
                size_t ca, emu_ref b, size_t cb, size_t n, size_t m, uint64_t elem, uint64_t ce);

/* No step: emu_dot_n without a conversion. */
#define EMU_NOSTEP (~0u)

/* m dot products at once, each exactly the calls
 *   emu_map(smul, MUL, fm, P_c, a_c, b_c, n, e_c),
 *   emu_map(scvt, CVT, fa, P_c, P_c, n, e_c) (unless scvt is EMU_NOSTEP),
 *   emu_fold(ssum, ADD, fa, SEQ, acc[c], P_c, n, e_c)
 * made for c = 0 .. m − 1 in turn: a_c is a shifted by c·ca elements, b_c
 * b by c·cb, P_c = P + c·n (P holds m·n values), e_c = elem + c·ce, ce >= n.
 * FAST runs every chain's maps and then the m sums stepped together
 * (emu_fold_n); when an operation raised overflow, invalid or divbyzero
 * and none had before, it runs them again in turn, so the counts and the
 * first failing operation are always those of the calls above. TRUTH
 * without range sums a chain in an integer accumulator when none of its
 * steps can round (operands of at most 64 bits, all its terms within 256
 * bits of each other): the same numbers and counts. P is scratch: its
 * values afterwards are not part of the result. */
void emu_dot_n(emu_be *be, unsigned smul, const emu_format *fm, unsigned scvt, unsigned ssum,
               const emu_format *fa, emu_ref acc, emu_ref a, size_t ca, emu_ref b, size_t cb,
               emu_ref P, size_t n, size_t m, uint64_t elem, uint64_t ce);

/* What emu_dot_n_then does to each chain's sum after its fold: up to two
 * conversions in place, acc[c] = CVT(acc[c]) into f[0] under step s[0],
 * then into f[1] under s[1] (EMU_NOSTEP: none), as element e + c of the
 * step (a sum stored in the storage format, then taken back into the
 * compute format). */
typedef struct {
	unsigned s[2];
	const emu_format *f[2];
	uint64_t e;
} emu_dot_then;

/* emu_dot_n with th's conversions made right after each chain's sum (th
 * NULL: none), in the calls' order: chain c's conversions before chain c +
 * 1's products (FAST runs them after the m sums and, as emu_dot_n, again in
 * turn when an operation failed, so the counts and the first failing
 * operation are always those of the calls in turn). */
void emu_dot_n_then(emu_be *be, unsigned smul, const emu_format *fm, unsigned scvt, unsigned ssum,
                    const emu_format *fa, emu_ref acc, emu_ref a, size_t ca, emu_ref b, size_t cb,
                    emu_ref P, size_t n, size_t m, uint64_t elem, uint64_t ce,
                    const emu_dot_then *th);

/* TRUTH vectors' acc + Σ a_j·b_j (j < n) into acc, exactly, when the sum
 * cannot round at EMU_TRUTH_PREC bits in any order (emu_dot_n's condition:
 * finite operands of at most 64 significant bits, all terms within 256 bits
 * of each other), so that every chain of MPFR products, fmas and adds over
 * these terms gives this number; a zero sum is −0 only when acc and every
 * product are −0. false (acc untouched) otherwise. */
bool emu_truth_dot_exact(mpfr_ptr acc, emu_ref a, emu_ref b, size_t n);
/* TRUTH without range: every value of a and b (either may be NULL) taken
 * apart once for the exact dot products of emu_dot_n, which read a GEMM's
 * rows once per output (its values must not change until
 * emu_truth_split_free, or emu_be_free, undoes it). Elsewhere, or out of
 * memory, nothing: the dot products take their operands apart themselves. */
/* g[c·n + j] = p[c·cs + j·s], j < n, c < mc: mc strided chains laid out
 * one after another (a matrix's columns as rows read in blocks of 8 steps,
 * each line once; unit strides copied) */
void emu_gather_chains(double *g, const double *p, size_t s, size_t cs, size_t n, size_t mc);
void emu_truth_split(emu_be *be, const emu_vec *a, const emu_vec *b);
void emu_truth_split_free(emu_be *be);

/* Fold orders. */
typedef enum {
	EMU_FOLD_SEQ = 0,  /* acc = acc op a[0], then op a[1], ... (a C loop) */
	EMU_FOLD_PAIRWISE, /* acc = s(a[0..n)), s(a[lo..hi)) = s(a[lo..h)) + s(a[h..hi)),
	                      h = lo + ⌊(hi−lo)/2⌋, s(a_j) = a_j; acc's value is not read
	                      and a is overwritten (a[0] holds the sum) */
	EMU_FOLD_BLOCK,    /* blocks of k: each summed sequentially from +0 (step), then
	                      acc = acc + block sum, block by block (step2) */
} emu_fold_order;

typedef struct {
	emu_fold_order order;
	size_t k;       /* BLOCK: block length */
	unsigned step2; /* BLOCK: the step of the block sums */
} emu_order;
#define EMU_ORDER_SEQ ((emu_order){EMU_FOLD_SEQ, 0, 0})

/* acc = fold of op over a[0..n) (op ADD, SUB, MUL, MIN, MAX: acc =
 * op(acc, a[j])), or of fma (acc = fma(a[j], b[j], acc); SEQ and BLOCK)
 * in f, in order o. Step j's element is elem + j (pairwise: the node
 * splitting at h is elem + h; a block sum is elem + its first index). */
void emu_fold(emu_be *be, unsigned step, emu_op op, const emu_format *f, emu_order o,
              emu_ref acc, emu_ref a, emu_ref b, size_t n, uint64_t elem);
/* Record operations a kernel computed itself (a Tensor Core block): count
 * ops of kind op under step s with flags fl, element e. */
void emu_note(emu_be *be, unsigned s, emu_op op, unsigned fl, uint64_t e);
/* n such operations at once: f's counts and flags' OR, and f->first_bad
 * the element of the first that raised overflow, invalid or divbyzero
 * (UINT64_MAX: none), with its flags f->first_flags: as n emu_note calls
 * in order. */
void emu_note_n(emu_be *be, unsigned s, emu_op op, uint64_t n, const emu_a_flags *f);

/* st += fs: fs's counts as if its operations had run after st's (sums,
 * the flags' OR, st's first failing operation unless it has none, the
 * inputs stored); out of memory, the per-step counts beyond st's are not
 * kept. A load on another backend and a kernel's parts are added so. */
void emu_be_stats_add(emu_be_stats *st, const emu_be_stats *fs);

/* ---- a kernel's rows on several threads (emu/engine/rows.c) ----
 *
 * fn runs rows r0 .. r1 − 1 of a kernel's row loop on be, allocating its
 * own scratch vectors there (emu_vec_new) and reading and writing the
 * kernel's vectors through arg; 0, or −1 out of memory. emu_rows runs fn
 * over rows 0 .. R − 1 in contiguous parts, one per thread (at most
 * emu_threads()), each on a backend forked from be, then adds each part's
 * counts to be's in row order: the values, the counts, the flags, the
 * inputs stored, the range peak and the first failing operation are
 * exactly those of fn(be, 0, R, arg), which is what one thread runs. A
 * part takes at least the rows of emu_rows_min_work operations (per_row
 * a row's, roughly; a 32nd of it on exact and truth), so a small kernel
 * runs on one thread. Rows must write different elements, and a row must
 * not read what another row writes. */
typedef int (*emu_rows_fn)(emu_be *be, size_t r0, size_t r1, void *arg);
int emu_rows(emu_be *be, size_t R, uint64_t per_row, emu_rows_fn fn, void *arg);
/* How many parts emu_rows cuts R rows into (1: fn(be, 0, R, arg) alone),
 * at most EMU_MAX_PARTS. A long map (emu_map) is cut the same way, its
 * elements rows of one operation, and its counts added in element order. */
enum { EMU_MAX_PARTS = 64 };
size_t emu_rows_parts(const emu_be *be, size_t R, uint64_t per_row);
/* The fewest operations worth a thread of their own (default 65536; tests
 * set 1 to run small kernels in many parts). Not thread-safe: set it
 * before running kernels. */
void emu_rows_min_work(uint64_t ops);
/* The threads a kernel's rows may take: OpenMP's (OMP_NUM_THREADS,
 * omp_set_num_threads), 1 inside a parallel region (a sweep's points). */
int emu_threads(void);

/* ---- precision policy (emu/engine/policy.c) ---- */
typedef enum {
	EMU_SCALE_NONE = 0,
	EMU_SCALE_TENSOR,  /* current scaling: fp8_max / amax */
	EMU_SCALE_DELAYED, /* amax history of length L, margin */
	EMU_SCALE_MX32,    /* blocks of 32 with an e8m0 scale, floor or rceil */
	EMU_SCALE_TILE128, /* 1x128 tiles, s = amax / max */
	EMU_SCALE_RECIPE,  /* any other recipe of emu/recipes/recipe.h, through emu_quantize */
} emu_scale_kind;

typedef struct {
	emu_format storage, compute, accum;
	emu_format grad, state; /* an optimizer's gradients and states (default: storage) */
	emu_env env;
	emu_scale_kind scale;
	int delayed_len, delayed_margin;
	bool mx_rceil;
	/* the recipe (every scale kind has one: the legacy kinds' scales come
	 * from emu_recipe_block_scale too) and the role its inputs play */
	emu_recipe recipe;
	emu_role role;
	char spec[192]; /* the canonical spec string */
} emu_policy;

/* "storage=fp16,compute=fp32,accum=fp32,round=rne,overflow=ieee" and
 * "storage=e4m3,compute=fp32,scale=mx32:rceil". Keys: storage (required),
 * compute (default: storage), accum (default: compute), round
 * (rne|rtz|up|down|rna|sr), overflow (ieee|sat), subnormals
 * (keep|ftz|daz|ftzdaz), seed (for sr), scale (none|tensor|delayed:L:margin|
 * mx32:floor|mx32:rceil|tile128, or any recipe of emu/recipes/recipe.h by name,
 * e.g. nvfp4, mxfp8, deepseek, or as a spec in braces), role (act|weight|
 * grad: the recipe's block shape and element rounding; default act), grad
 * and state (the formats an optimizer holds its gradients and its states
 * m, v in; default: storage, which is then the master weights'). A
 * recipe other than the legacy ones stores its own element format: storage
 * may be left out, and must name that format if given. A custom format
 * goes in braces: storage={p=5,emax=15}. */
emu_status emu_policy_parse(const char *spec, emu_policy *out, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
