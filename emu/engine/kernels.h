/*
 * kernels.h — the training kernels, each written once against kern.h and
 * run on every backend. A kernel reads a row-major input tensor (doubles;
 * stored into the policy's storage format by emu_load), named numeric
 * parameters, and a seed for anything it generates (labels, weights); it
 * returns named output arrays with the format each is held in.
 */
#ifndef NANMAP_KERNELS_H
#define NANMAP_KERNELS_H

#include "emu/engine/kern.h"

typedef struct {
	const char *name;
	double value;
} emu_kparam;

/* A tensor handed to a kernel by role (emu_kin.tensors): rows x cols values,
 * row-major, in place of the kernel's own draw of that role. */
typedef struct {
	const char *role; /* "dy", "target", "w", ... (emu_kernel_inputs lists them) */
	size_t rows, cols;
	const double *v;
} emu_ktensor;

typedef struct {
	const double *x; /* rows x cols, row-major */
	size_t rows, cols;
	const emu_kparam *params;
	size_t nparams;
	uint64_t seed;
	/* tensors given by role instead of drawn from the seed or built from the
	 * parameters (NULL: none); each must be one the kernel consumes, of its
	 * shape */
	const emu_ktensor *tensors;
	size_t ntensors;
} emu_kin;

#define EMU_KOUT_MAX 10
typedef struct {
	const char *name;      /* "loss", "grad", "y", ... */
	emu_vec *vec;          /* owned by the backend */
	size_t n;
	const emu_format *fmt; /* what the values are held in (ulp errors use it) */
} emu_kout_item;

typedef struct {
	emu_kout_item item[EMU_KOUT_MAX];
	int n;
} emu_kout;

/*
 * The tensors a kernel consumes, by role (emu/engine/kinputs.c). Besides its
 * input x, a kernel draws tensors from the seed or builds them from its
 * parameters (softmax_ce's labels, layernorm's upstream gradient dy,
 * backward's weights, the optimizer's gradient stream, ...), and some read
 * operands of their own out of x (matmul's A and B, attention's Q, K, V).
 * Each kernel lists them all, x first, in one function, the one its own run
 * takes them from: what emu_kernel_inputs lists (and `nanmap golden export`
 * writes) is what the kernel consumes, and a tensor given in emu_kin.tensors
 * under a role's name replaces that role's draw.
 */
typedef enum {
	EMU_KIN_VALUES = 0, /* numbers, rounded by the kernel into fmt (fmt NULL: used as given) */
	EMU_KIN_INDEX,      /* class indices 0, 1, ..., C − 1 */
} emu_kin_kind;

typedef struct {
	const char *role; /* static storage */
	emu_kin_kind kind;
	size_t rows, cols;
	bool vector;           /* one dimension: cols values (rows is 1) */
	const emu_format *fmt; /* the format the kernel rounds the values into (storage, or
	                          what it converts a constant into); NULL: none (x under a
	                          scaling recipe, indices, values used as they are) */
	unsigned step;         /* where it rounds them: element i at step `step`,
	                          element e0 + i (SR's key), or e0 for every i when bcast
	                          (one constant converted once and broadcast) */
	uint64_t e0;
	bool bcast;
	bool of_x;       /* an operand read out of x (matmul's a and b, attention's q k v) */
	bool given;      /* from emu_kin.tensors */
	const double *v; /* rows·cols values as the kernel is handed them, before it
	                    rounds them; NULL only in a kernel's own run, for a role it
	                    draws as it goes (the optimizer's gradient stream) */
	double *own;     /* v when allocated here */
} emu_kinput;

#define EMU_KINPUTS_MAX 8
typedef struct {
	emu_kinput item[EMU_KINPUTS_MAX];
	int n;
	bool lazy; /* a kernel's own run: a role that can be drawn as the kernel goes
	              may be left without values */
} emu_kinputs;

typedef struct emu_kernel {
	const char *name;
	const char *const *variants; /* NULL-terminated; the first is the default */
	const char *params_doc;      /* one line: the parameters it reads */
	/* 0 on success; otherwise a one-line reason in err. */
	int (*run)(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
	           emu_kout *out, char *err, size_t errlen);
	/* The tensors it consumes on in (see above), into out (emptied by the
	 * caller; emu_kinputs_free frees it, on failure too); 0, or -1 with a
	 * reason. Where the run would refuse the variant or the input's shape,
	 * it lists x alone and leaves the refusal to the run. */
	int (*inputs)(const emu_policy *pol, const char *variant, const emu_kin *in,
	              emu_kinputs *out, char *err, size_t errlen);
	/* Its steps' names, the table run hands to emu_steps: id EMU_STEP0 + k
	 * is steps[k], each name unique within the kernel and apart from the
	 * engine's own (the load's input, scale, quantize, to_compute,
	 * scale_inv, dequantize); NULL with nsteps 0 for a kernel with no steps
	 * of its own. */
	const char *const *steps;
	unsigned nsteps;
} emu_kernel;

/* Upstream gradients i0 .. i0 + n − 1 (row-major) as the norms draw them:
 * dyval everywhere, or when it is NaN ±1 from bit 0 of emu_sr_bits(seed,
 * i) (emu_draw_sign). */
void emu_kinput_signs(uint64_t seed, double dyval, size_t i0, size_t n, double *dy);

/* Every tensor k consumes on in, each with its values: k->inputs, then
 * every tensor in in->tensors must have replaced a role ("KERNEL: no tensor
 * 'ROLE' (its tensors: ...)" otherwise). 0, or -1 with a reason (out is
 * then empty). Free with emu_kinputs_free. */
int emu_kernel_inputs(const emu_kernel *k, const emu_policy *pol, const char *variant,
                      const emu_kin *in, emu_kinputs *out, char *err, size_t errlen);
/* The same for a kernel's own run (lazy: the roles it draws as it goes are
 * left without values). */
int emu_kinputs_take(const emu_kernel *k, const emu_policy *pol, const char *variant,
                     const emu_kin *in, emu_kinputs *out, char *err, size_t errlen);
/* The role named role, or NULL. */
const emu_kinput *emu_kinputs_find(const emu_kinputs *ki, const char *role);
void emu_kinputs_free(emu_kinputs *ki);
/* The encodings t's values get when the kernel rounds them into t->fmt under
 * pol (its rounding mode, overflow rule and subnormals; SR keyed as the
 * kernel keys the step), rows·cols of them into bits. t->fmt and t->v must
 * be set. */
void emu_kinput_bits(const emu_policy *pol, const emu_kinput *t, uint32_t *bits);
/* For a kernel's inputs function: add x (in->x, in->rows × in->cols; stored
 * in the storage format by emu_load, or through the scaling recipe: fmt
 * NULL). 0, or -1 when the list is full. */
int emu_kinputs_x(emu_kinputs *ki, const emu_policy *pol, const emu_kin *in, char *err,
                  size_t errlen);
/* Add role (rows × cols) to ki: *t is its entry, for the caller to set
 * fmt, step and the rest. The tensor in->tensors gives under that name,
 * if any, is its values (its shape must be rows × cols, or hold rows·cols
 * values for a vector; t->given); otherwise *draw is a fresh array of
 * rows·cols values for the caller to draw into (NULL when given, or when
 * draw_later and ki->lazy: the kernel draws them as it goes). 0, or -1 with
 * "KERNEL: ..." in err. */
int emu_kinputs_add(emu_kinputs *ki, const emu_kin *in, const char *kernel, const char *role,
                    size_t rows, size_t cols, bool draw_later, emu_kinput **t, double **draw,
                    char *err, size_t errlen);
/* Check that an index role given by a caller holds integers in [0, n). */
int emu_kinput_check_index(const emu_kinput *t, const char *kernel, size_t n, char *err,
                           size_t errlen);

const emu_kernel *emu_kernel_by_name(const char *name);
/* The index of `variant` in names (a kernel's NULL-terminated variants,
 * the row source's codes in that order): 0, the default, for NULL; -1 for
 * a name not there. */
int emu_variant_index(const char *const *names, const char *variant);
size_t emu_kernel_count(void);
const emu_kernel *emu_kernel_at(size_t i);
/* Does k read the parameter `name`: does its params_doc line name it as
 * "name=" (a whole word)? The command line and case files check with it. */
bool emu_kernel_reads_param(const emu_kernel *k, const char *name);
/* A parameter's value, or dflt when absent (unchecked: prefer the two below). */
double emu_kparam_get(const emu_kin *in, const char *name, double dflt);
/*
 * Checked parameters: true with the value in *out (dflt, unchecked, when the
 * parameter is absent), or false with "KERNEL: NAME=V must be ..." naming
 * the allowed range in err. _int: an integer in [lo, hi]. _real: a finite
 * number in [lo, hi] (±inf: no bound), lo excluded with EMU_KP_ABOVE_LO, hi
 * with EMU_KP_BELOW_HI (a scale is (0, inf): EMU_KP_ABOVE_LO).
 */
#define EMU_KP_ABOVE_LO 1u
#define EMU_KP_BELOW_HI 2u
bool emu_kparam_int(const emu_kin *in, const char *kernel, const char *name, double lo,
                    double hi, double dflt, double *out, char *err, size_t errlen);
bool emu_kparam_real(const emu_kin *in, const char *kernel, const char *name, double lo,
                     double hi, unsigned open, double dflt, double *out, char *err,
                     size_t errlen);
/* About how many values (doubles, and the truth backend's MPFR numbers) k
 * allocates on one backend for a rows x cols input with in's parameters
 * (in may be NULL): what the command line checks memory with. */
double emu_kernel_values(const emu_kernel *k, size_t rows, size_t cols, const emu_kin *in);
/* Element j of an output as the nearest double, and (TRUTH) as an MPFR number. */
double emu_kout_d(const emu_be *be, const emu_kout_item *it, size_t j);
mpfr_srcptr emu_kout_mp(const emu_kout_item *it, size_t j);
/* Add an output vector (n values of fmt) to out; NULL when full or out of memory. */
emu_vec *emu_kout_vec(emu_be *be, emu_kout *out, const char *name, size_t n,
                      const emu_format *fmt);

/* Load the input tensor x (rows × cols) the way a framework does: stored in
 * the storage format through the policy's scaling recipe, returned in out
 * (rows × cols values) dequantised in the compute format (emu/engine/scale.c). 0,
 * or -1 out of memory. Element i of the tensor is element e0 + i of the
 * load's steps (SR draws, failure sites): a second tensor loaded in one run
 * takes e0 past the first. emu_load: e0 = 0. */
int emu_load(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
             emu_vec *out);
int emu_load_at(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
                uint64_t e0, emu_vec *out);
/* The row-wise (colwise false) or column-wise copy of x as emu_load gives
 * it, a recipe's column-wise copy with its blocks down the columns
 * (emu_quantize's colwise); where the recipe applies the RHT the values are
 * transformed back (emu_recipe_unrht) so they compare with x. e0 = 0. */
/* The same with x's elements numbered from e0 (a second load of one
 * kernel draws its own SR keys). */
int emu_load_copy_at(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
                     uint64_t e0, bool colwise, emu_vec *out);
int emu_load_copy(emu_be *be, const emu_policy *pol, const double *x, size_t rows, size_t cols,
                  bool colwise, emu_vec *out);

/* ---- the Tensor Core block-FMA order as a fold (emu/kernels/tcfold.c) ---- */
struct emu_tc_model;
struct emu_tc_opnd;
/* The steps it records under: each block (EMU_OP_FMA, element base + the
 * block's first index), each fp32 promotion (EMU_OP_ADD, base + the chunk's
 * first index), the final conversion to out (EMU_OP_CVT, base). */
typedef struct {
	unsigned block, promote, out;
} emu_tc_steps;
/* acc = Σ a_j·b_j, j < N, through model m (operands values of in, the
 * result a value of out; m, in and out must pass emu_tc_check): blocks of
 * k chained from C = +0, each promotion chunk (the whole row without
 * promotion) added into an fp32 accumulator in RNE, then converted to out.
 * b may be a broadcast. 0, or -1 out of memory. */
int emu_fold_tc(emu_be *be, emu_tc_steps st, const struct emu_tc_model *m,
                const emu_format *in, const emu_format *out, emu_ref acc, emu_ref a,
                emu_ref b, size_t N, uint64_t base);
/* The same on FAST or EXACT with the operands' encodings in `in` given
 * (ea[j], eb[j], j < N, what emu_fold_tc encodes them to): a GEMM encodes
 * each operand once, not once per output element. sa and sb (NULL: none)
 * are ea and eb split (emu_tc_split), which FAST's blocks read where the
 * model lets them (emu_tc_plan_block). */
void emu_fold_tc_bits(emu_be *be, emu_tc_steps st, const struct emu_tc_model *m,
                      const emu_format *in, const emu_format *out, emu_ref acc, const emu_bits *ea,
                      const emu_bits *eb, const struct emu_tc_opnd *sa,
                      const struct emu_tc_opnd *sb, size_t N, uint64_t base);

/* ---- running a kernel on one backend and measuring it (emu/engine/run.c) ---- */
typedef enum {
	EMU_ST_OK = 0,
	EMU_ST_UNDERFLOW, /* an output nonzero in truth is zero here, or an input
	                     became zero when stored */
	EMU_ST_OVERFLOW,  /* an operation, or storing an input, overflowed
	                     (outputs still finite) */
	EMU_ST_INF,       /* an output is infinite */
	EMU_ST_NAN,       /* an output is NaN */
} emu_run_status;

/* Errors of one output (docs/run.md): end to end, against the truth of the
 * original inputs (storage, scaling recipe and arithmetic together), and
 * arith_*, against the truth of the inputs as stored (the kernel's
 * arithmetic alone). A NaN or infinite output against a finite truth has
 * error inf. */
typedef struct {
	double max_ulp;       /* largest |v − truth| in ulps of the item's format */
	double rel_err;       /* ||v − truth||_2 / ||truth||_2 */
	size_t lost;          /* elements zero here but not in truth */
	double arith_max_ulp; /* the same two against the stored-input truth */
	double arith_rel_err;
} emu_item_metrics;

typedef struct {
	emu_be be;
	emu_kout out;
	emu_run_status status;
	emu_item_metrics m[EMU_KOUT_MAX]; /* filled by emu_run_compare */
	bool have_metrics;
} emu_run;

/* Run kernel k on backend kind. 0 on success, else a reason in err.
 * Free with emu_run_free even on failure. */
int emu_run_kernel(const emu_kernel *k, const emu_policy *pol, const char *variant,
                   const emu_kin *in, emu_be_kind kind, emu_run *r, char *err, size_t errlen);
/* The same, with the GPU's transcendental tables replayed when kind is
 * EMU_BE_FAST (emu_be.tables; NULL: none). */
int emu_run_kernel_tables(const emu_kernel *k, const emu_policy *pol, const char *variant,
                          const emu_kin *in, emu_be_kind kind, const emu_gpu_tables *tables,
                          emu_run *r, char *err, size_t errlen);
/* The truth of a kernel run, twice: from the inputs as stored (stored:
 * the kernel's load, its recipe included) and from the original inputs
 * (e2e: emu_be.exact_inputs). When storing changed no input the two are
 * one run (same; e2e is not run). Free with emu_truth_free even on failure. */
typedef struct {
	emu_run stored, e2e;
	bool same;
} emu_truth;
int emu_run_truth(const emu_kernel *k, const emu_policy *pol, const char *variant,
                  const emu_kin *in, emu_truth *t, char *err, size_t errlen);
/* The truth of the original inputs (stored when they are one run). */
const emu_run *emu_truth_e2e(const emu_truth *t);
void emu_truth_free(emu_truth *t);
/* Metrics and the underflow status of r against both truths. */
void emu_run_compare(emu_run *r, const emu_truth *t);
void emu_run_free(emu_run *r);
const char *emu_run_status_name(emu_run_status s);

/*
 * Recomputation (activation checkpointing): a kernel run again, under the
 * same or another policy, compared with the first run output by output.
 * Two elements are the same when they are the same number: equal values
 * with equal signs (so −0 differs from +0), or both NaN. Within one format
 * that is equal encodings (the emulator produces one NaN per format); across
 * two formats it compares what each run stored.
 */
typedef struct {
	size_t n;             /* elements compared */
	size_t differ;        /* elements that are not the same number */
	size_t new_nonfinite; /* finite in the first run, inf or NaN in the second */
	size_t gone_nonfinite; /* inf or NaN in the first run, finite in the second */
	size_t first_differ;  /* the first differing element (n when none) */
} emu_recompute_item;
/* items[i] for output i of both runs; -1 with a reason in err when the runs'
 * outputs differ in number, names or lengths. */
int emu_recompute_compare(const emu_run *first, const emu_run *second,
                          emu_recompute_item items[EMU_KOUT_MAX], char *err, size_t errlen);

/* The kernels (one file each). */
extern const emu_kernel emu_kernel_softmax_ce;
extern const emu_kernel emu_kernel_backward;   /* emu/kernels/backward.c */
extern const emu_kernel emu_kernel_gradscaler; /* emu/kernels/backward.c */
/* backward: fractions of the stored gradients that are zero, subnormal, lost (0
 * without truth) and overflowed; -1 when r is not a backward run. */
int emu_backward_fractions(const emu_run *r, const emu_run *truth, double out[4]);
extern const emu_kernel emu_kernel_layernorm;
extern const emu_kernel emu_kernel_accum;
extern const emu_kernel emu_kernel_rmsnorm; /* emu/kernels/rmsnorm.c */
extern const emu_kernel emu_kernel_bce; /* emu/kernels/bce.c */
extern const emu_kernel emu_kernel_quant; /* emu/kernels/quant.c */
extern const emu_kernel emu_kernel_optimizer; /* emu/kernels/optimizer.c */
extern const emu_kernel emu_kernel_batchnorm; /* emu/kernels/batchnorm.c */
extern const emu_kernel emu_kernel_matmul; /* emu/kernels/matmul.c */
extern const emu_kernel emu_kernel_attention; /* emu/kernels/attention.c */

#endif
