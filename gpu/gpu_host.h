/*
 * gpu_host.h — the host side of bin/nanmap-gpu, plain C and tested in
 * `make test` without a GPU: the command line, the comparison of GPU
 * outputs with the emulator (tolerance rules, ulp distance, the first
 * mismatches, the NaN encodings the hardware produced), the report and CSV
 * writers, the transcendental tables measured on the GPU, and the reader of
 * the Tensor Core hardware vectors.
 *
 * The .cu files hold only kernels and launch code (gpu_dev.h); everything
 * that decides what "the same" means lives here, so it can be proved with
 * recorded or synthetic GPU outputs (gpu/testdata/).
 */
#ifndef NANMAP_GPU_HOST_H
#define NANMAP_GPU_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/emu.h"
#include "emu/engine/gputab.h"

/* Exit status when no CUDA device is usable (the automake "skipped" code). */
#define GPU_EXIT_SKIP 77

/* ---- the command line (gpu/host_args.c) ---- */
enum {
	GPU_STEP_CONV = 1u << 0,   /* exhaustive float -> fp16/bf16/e4m3/e5m2, and back */
	GPU_STEP_ARITH = 1u << 1,  /* fp16/bf16 add, mul, fma (_rn) on sampled pairs */
	GPU_STEP_TABLES = 1u << 2, /* hexp hlog hexp2 hrcp hrsqrt hsqrt, all 65536 inputs */
	GPU_STEP_TC = 1u << 3,     /* Tensor Core vectors through mma.sync */
	GPU_STEP_GEMM = 1u << 4,   /* own mma.sync GEMM, known K order, with/without promotion */
	GPU_STEP_GEMMEX = 1u << 5, /* cublasGemmEx fp16 in, 16F and 32F compute */
	GPU_STEP_LT = 1u << 6,     /* cuBLASLt FP8, FAST_ACCUM 0/1: the promotion interval */
	GPU_STEP_KERN = 1u << 7,   /* softmax_ce in the emulator's order of operations */
	GPU_STEP_QUANT = 1u << 8,  /* the mxfp8 and deepseek block quantisers vs emu_quantize */
	GPU_STEP_ATTN = 1u << 9,   /* attention: mma.sync GEMMs and gpu/rows.h's softmax rows */
	GPU_STEP_RULES = 1u << 10, /* the disputed Tensor Core rules (gpu/tc-rules.txt) */
	GPU_STEP_ALL = (1u << 11) - 1
};

typedef struct {
	const char *out_dir;    /* --out DIR (default "gpu-out") */
	const char *tc_vectors; /* --tc-vectors DIR, else $NANMAP_TC_VECTORS, else NULL */
	const char *gpu_tables; /* --gpu-tables FILE|DIR: measured tables for the kern replay */
	const char *tc_rules;   /* --tc-rules FILE (default gpu/tc-rules.txt) */
	unsigned steps;         /* --only a,b,... (default all) */
	int chunk_log2;         /* --chunk-log2 N: inputs per GPU launch, 16..30 (28) */
	uint64_t stride;        /* --stride N: conversions visit 0, N, 2N, ... < 2^32 (1: all) */
	uint64_t pairs;         /* --pairs N: sampled operand pairs per arithmetic op */
	uint64_t seed;          /* --seed N: arithmetic samples and GEMM inputs */
	bool quick;             /* --quick: 16-row GEMMs (self-tests on small machines) */
	bool help;
} gpu_opts;

/* Parse argv (argv[0] is the program). 0, or non-zero with one line in err. */
int gpu_parse_args(int argc, char *const *argv, gpu_opts *o, char *err, size_t len);
/* "conv", "arith", ... for one GPU_STEP_* bit; NULL otherwise. */
const char *gpu_step_name(unsigned step);
/* The usage text. */
const char *gpu_usage(void);

/* ---- comparing with the emulator (gpu/host_cmp.c) ---- */
/* What counts as a match: identical bits; or, with nan_any, any NaN for a
 * NaN (the encodings are then reported, not judged); or, with ulp > 0, an
 * ulp distance up to ulp (approximate functions). */
typedef struct {
	uint32_t ulp;
	bool nan_any;
} gpu_tol;

#define GPU_SHOW_MAX 16
#define GPU_NANENC_MAX 4

typedef struct {
	uint64_t index; /* element number in the comparison */
	uint64_t input; /* the input's bits (or packed operands, or a case number) */
	emu_bits got, want;
	uint64_t ulp; /* UINT64_MAX: one side is NaN */
} gpu_miss;

typedef struct {
	char step[16], kernel[64], format[24], mode[40];
	const emu_format *f; /* the output format */
	gpu_tol tol;
	uint64_t compared;
	uint64_t identical; /* same bits */
	uint64_t nan_equal; /* both NaN, different encodings, accepted by nan_any */
	uint64_t within;    /* not identical, inside the ulp tolerance */
	uint64_t max_ulp;   /* over all compared; UINT64_MAX for NaN vs number */
	int nshow;          /* the first mismatches (lowest index) */
	gpu_miss show[GPU_SHOW_MAX];
	int nnan; /* NaN encodings the GPU produced, with counts */
	emu_bits nan_enc[GPU_NANENC_MAX];
	uint64_t nan_cnt[GPU_NANENC_MAX];
	uint64_t nan_other; /* NaNs beyond GPU_NANENC_MAX distinct encodings */
} gpu_cmp;

void gpu_cmp_init(gpu_cmp *c, const char *step, const char *kernel, const char *format,
                  const char *mode, const emu_format *f, gpu_tol tol);
/* Count one element: got from the GPU, want from the emulator. */
void gpu_cmp_one(gpu_cmp *c, uint64_t index, uint64_t input, emu_bits got, emu_bits want);
/* Add the counts of from (same row) into into; the shown mismatches stay
 * the lowest indices, so the result does not depend on how work was split. */
void gpu_cmp_merge(gpu_cmp *into, const gpu_cmp *from);
/* A row with row's labels and rule and no counts (one per thread). */
gpu_cmp gpu_cmp_blank(const gpu_cmp *row);
/* The conversion comparison: GPU outputs got[i] for the binary32 inputs
 * with bits (j0 + i)·stride mod 2^32, i < n, against the emulator's
 * rounding of the same inputs under env; element index j0 + i. OpenMP. */
void gpu_cmp_convert(gpu_cmp *row, const emu_format *f, const emu_env *env, uint64_t j0,
                     uint64_t stride, size_t n, const uint16_t *got);
/* Mismatches outside the tolerance. */
uint64_t gpu_cmp_bad(const gpu_cmp *c);
/* Distance in encodings between a and b along the number line (+0 and -0
 * are 0 apart); 0 when both are NaN; UINT64_MAX when one is. */
uint64_t gpu_ulp_dist(const emu_format *f, emu_bits a, emu_bits b);

/* ---- the report (gpu/host_report.c) ---- */
/* Rows and notes of one run, written as DIR/<base>.csv (one line per row),
 * DIR/<base>-miss.csv (the shown mismatches) and DIR/<base>.md; every write
 * replaces the files atomically, so a crash leaves the last complete one. */
typedef struct {
	char dir[512], base[64];
	gpu_cmp *rows;
	size_t nrows, cap;
	char **notes;
	size_t nnotes;
} gpu_report;

void gpu_report_init(gpu_report *r, const char *dir, const char *base);
/* 0, or -1 out of memory. */
int gpu_report_add(gpu_report *r, const gpu_cmp *c);
int gpu_report_note(gpu_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gpu_report_write(const gpu_report *r, char *err, size_t len);
void gpu_report_free(gpu_report *r);
/* The CSV header line of DIR/<base>.csv (without newline). */
const char *gpu_report_csv_header(void);

/* ---- transcendental tables measured on the GPU ---- */
/* The loader and lookup are the library's (emu/engine/gputab.h: file format there);
 * gpu/host_tables.c only writes them. The old names stay for gpu/ code. */
#define GPU_TABLE_N EMU_GPU_TABLE_N
typedef emu_gpu_table gpu_table;
typedef emu_gpu_tables gpu_tables;
#define gpu_table_func emu_gpu_table_func
#define gpu_tables_load emu_gpu_tables_load
#define gpu_tables_find emu_gpu_tables_find
#define gpu_tables_lookup emu_gpu_tables_lookup
#define gpu_tables_free emu_gpu_tables_free
int gpu_tables_write(const char *path, const char *comment, const gpu_table *t, size_t n, char *err,
                     size_t len);

/* ---- gpu/rows.h on the host (gpu/host_rows.c) ---- */
/* The same arguments as gpu_dev_softmax, gpu_dev_layernorm,
 * gpu_dev_backward, gpu_dev_rmsnorm, gpu_dev_bce, gpu_dev_matmul,
 * gpu_dev_batchnorm and gpu_dev_optimizer (gpu_dev.h;
 * formats are gpu_kfmt values), computed by the row bodies kern.cu compiles, with the
 * emulator's operations; with t, fp16/bf16 exp, log and rsqrt are looked up
 * in the GPU's tables (log1p has none). 0, or -1 with err. */
int gpu_rows_softmax(const gpu_tables *t, int v, int S, int C, int A, const float *x, size_t R,
                     size_t N, float *grad, float *loss, char *err, size_t len);
int gpu_rows_layernorm(const gpu_tables *t, int v, int S, int C, int A, const float *x,
                       const float *dy, size_t R, size_t N, float eps_c, float *y, float *dx,
                       float *rstd, float *var, char *err, size_t len);
int gpu_rows_backward(const gpu_tables *t, int S, int C, int A, const float *x, const float *w,
                      size_t R, size_t D, size_t K, float scale, float inv, float *grad, float *un,
                      float *loss, float *found, char *err, size_t len);
int gpu_rows_rmsnorm(const gpu_tables *t, int v, int S, int C, int A, const float *x,
                     const float *dy, size_t R, size_t N, float eps_c, float g_s, float *y,
                     float *dx, float *rstd, float *ms, float *dg, char *err, size_t len);
int gpu_rows_bce(const gpu_tables *t, int v, int S, int C, int A, const float *x,
                 const float *target, size_t R, size_t N, float *grad, float *loss, char *err,
                 size_t len);
int gpu_rows_matmul(const gpu_tables *t, int fma, int S, int C, int A, const float *x, size_t m,
                    size_t n, size_t k, float *acc, float *c, char *err, size_t len);
int gpu_rows_batchnorm(const gpu_tables *t, int v, int S, int C, int A, const float *x,
                       const float *dy, size_t NB, size_t CH, const float cst[6], float *y,
                       float *dx, float *mean, float *var, float *rm, float *rv, float *dgamma,
                       float *dbeta, char *err, size_t len);
int gpu_rows_optimizer(const gpu_tables *t, int v, unsigned flags, int S, int C, int G, int T,
                       const float *gs, size_t n, unsigned steps, const double *py, uint64_t seed,
                       float *w, float *m, float *vv, char *err, size_t len);
/* rows.h's stochastic rounding (k_sr, k_sr_bits) of x[0..n) into F (a
 * gpu_kfmt): element i draws the bits of element e0 + i of step id step */
int gpu_rows_sr(int F, const float *x, size_t n, uint64_t seed, unsigned step, uint64_t e0,
                float *out, char *err, size_t len);
/* gpu_dev_matmul_tc's store, after the GEMM: d holds its m·n results widened
 * to float (values of O) */
int gpu_rows_matmul_tc_store(int S, int C, int O, const float *d, size_t no, float *acc, float *c,
                             char *err, size_t len);
/* gpu_dev_quant's arguments (rule a gpu_qrule, elem a gpu_kfmt), by the
 * block bodies kern.cu compiles, with the emulator's operations. */
int gpu_rows_quant(int rule, int elem, float fmax, float amin, size_t bs, const float *x, size_t R,
                   size_t N, uint8_t *q, uint32_t *scale, char *err, size_t len);

/* gpu_dev_attn_soft's and gpu_dev_attn_out's arguments, by the row bodies
 * kern.cu compiles, with the emulator's operations (t as above). */
int gpu_rows_attn_soft(const gpu_tables *t, int v, int C, int A, const float *sacc, size_t nq,
                       size_t nk, size_t bk, int causal, float sc, const float *dq8, size_t tq,
                       const float *dk8, size_t tk, float psc, float *p, float *alpha, float *lrow,
                       float *lse, float *lost, char *err, size_t len);
int gpu_rows_attn_out(const gpu_tables *t, int v, int S, int C, int A, const float *part,
                      const float *alpha, const float *lrow, const float *dv8, size_t tk, float psc,
                      size_t nq, size_t nk, size_t bk, int causal, size_t d, float *o, char *err,
                      size_t len);

int gpu_rows_attn_seq(const gpu_tables *t, int v, int bwd, int S, int C, int A, const float *q,
                      const float *k, const float *vv, size_t nq, size_t nk, size_t d, size_t bk,
                      int causal, float sc, const float *dq8, size_t tq, const float *dk8,
                      size_t tk, const float *dv8, float psc, const float *dO, float *o, float *lse,
                      float *lost, float *dq, float *dk, float *dv, char *err, size_t len);

int gpu_rows_attn8_bwd_q(const gpu_tables *t, int C, int A, const float *q8, const float *k8,
                         const float *v8, const float *dq8, size_t tq, const float *dk8,
                         const float *dv8, size_t tk, const float *lse, const float *o,
                         const float *do8, float d_do, float sc, float psc, size_t nq, size_t nk,
                         size_t d, size_t bk, int causal, float *p8a, float *ds, char *err,
                         size_t len);
int gpu_rows_attn8_bwd_rest(const gpu_tables *t, int S, int C, int A, int DF, const float *q8,
                            const float *k8, const float *dq8, size_t tq, const float *dk8,
                            size_t tk, const float *do8, float d_do, float psc, float sds,
                            const float *p8a, const float *ds, size_t nq, size_t nk, size_t d,
                            int causal, float *dq, float *dk, float *dv, float *lost, char *err,
                            size_t len);

/* ---- Tensor Core hardware vectors (gpu/host_tcv.c) ---- */
/* <dir>/<gpu>/<fmt>/{a,b}_<gpu>_<fmt>.txt (hex binary32, K per line),
 * c_<gpu>_fp32.txt and d_<gpu>_<out>.txt (32-character binary strings);
 * the layout of shared/data/tensor-core-vectors. */
typedef struct {
	size_t n, K;
	uint32_t *a, *b; /* n*K binary32 bit patterns */
	uint32_t *c, *d; /* n each (d as stored: fp16 results widened to binary32) */
} gpu_tcv;

/* 0; 1 when the files are absent (a reason in err: the caller skips);
 * -1 on a malformed file (a reason in err). */
int gpu_tcv_load(const char *dir, const char *gpu, const char *fmt, const char *out, gpu_tcv *v,
                 char *err, size_t len);
void gpu_tcv_free(gpu_tcv *v);

/* ---- the disputed Tensor Core rules (gpu/tc-rules.txt, read by host_tcv.c) ---- */
#define GPU_RULE_K_MAX 32
typedef struct {
	char name[40];
	const emu_format *in, *out;
	size_t K;              /* 16 for fp16/bf16, 32 for fp8: one mma.sync */
	uint32_t c;            /* the addend, binary32 */
	emu_bits model, other; /* D under each reading (encodings of out): the
	                          h200-mma model's, and the rival reading's */
	bool has_other;        /* false: no rival reading to test (-) */
	emu_bits a[GPU_RULE_K_MAX], b[GPU_RULE_K_MAX];
} gpu_rule;

/* Read the cases of path into *out (malloc'd, *n of them). 0, or -1 with one
 * line in err naming the file, the line and what is wrong. */
int gpu_rules_load(const char *path, gpu_rule **out, size_t *n, char *err, size_t len);
/* Which reading got is: "model", "other", "both" or "neither". */
const char *gpu_rule_reading(const gpu_rule *r, emu_bits got);

#endif
