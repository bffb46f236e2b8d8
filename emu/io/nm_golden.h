/*
 * nm_golden.h — golden files: read them, and compare a kernel's outputs
 * with them bit for bit (or within a tolerance in ulps).
 *
 * A golden file (golden/README.md is the reference) holds cases; a case is
 * one kernel, variant, precision policy and seeded input; each case has
 * named outputs ("loss", "grad", ...), each an array of encodings of one
 * format. A target is one output of one case, named "CASE/OUTPUT".
 *
 *	nm_golden *g;
 *	char err[256];
 *	if (nm_golden_open("golden/softmax_ce.golden", &g, err, sizeof err))
 *		die(err);
 *	nm_golden_opts o = NM_GOLDEN_OPTS_DEFAULT;
 *	nm_golden_report r;
 *	if (nm_golden_compare(g, "softmax_ce.naive.fp16-fp16.safe/grad", my_bits, n,
 *	                      &o, &r, err, sizeof err))
 *		die(err);               // unknown target, wrong length
 *	ok = r.mismatched == 0;
 *	nm_golden_report_free(&r);
 *	nm_golden_close(g);
 *
 * docs/golden.md has the whole example (docs/examples/golden_check.c). Every
 * function that can fail returns a status and writes one line naming the
 * file (and line) into err. Encodings are the format's bits, right-aligned
 * in a uint32_t.
 */
#ifndef NANMAP_NM_GOLDEN_H
#define NANMAP_NM_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum nm_golden_status {
	NM_GOLDEN_OK = 0,
	NM_GOLDEN_ERR_IO,       /* cannot open or read a file */
	NM_GOLDEN_ERR_FORMAT,   /* not a golden file, or a bad line in one */
	NM_GOLDEN_ERR_NOTFOUND, /* no such case or output */
	NM_GOLDEN_ERR_LENGTH,   /* actual outputs of the wrong length (a truncated file) */
	NM_GOLDEN_ERR_DTYPE,    /* actual outputs of a type that cannot hold the format */
	NM_GOLDEN_ERR_NOMEM
} nm_golden_status;

typedef struct nm_golden nm_golden; /* a parsed file; opaque */

/* The format version the reader takes: the first line of a golden file is
 * "# nanmap golden file, format 2"; any other version is refused. */
#define NM_GOLDEN_FORMAT 2
/* The largest golden file nm_golden_open reads (4 GiB); a larger file or
 * stream is an error naming it and the limit. */
#define NM_GOLDEN_MAX_BYTES ((size_t)1 << 32)

/* One case: what was run (the generator's parameters let anyone redraw the
 * input; `nanmap golden export` writes it). Strings live as long as g. */
typedef struct nm_golden_case {
	const char *id;
	const char *kernel, *variant, *policy;
	size_t rows, cols;
	const char *gen;    /* generator distribution ("uniform") */
	double scale;       /* its scale X */
	uint64_t seed;      /* the generator's seed and the kernel's */
	const char *status; /* the run's status: ok underflow overflow inf nan */
} nm_golden_case;

/* One output of a case. */
typedef struct nm_golden_output {
	const char *target; /* "CASE/OUTPUT" */
	const char *name;   /* "OUTPUT" */
	size_t case_index;  /* into nm_golden_case_at */
	const char *format; /* the format's name ("fp16"; emu_format_by_name) */
	int bits;           /* encoding width: 8, 16, 32, ... */
	size_t n;
	const uint32_t *expected; /* n encodings */
} nm_golden_output;

/* Read and check a whole golden file. On error *out is NULL. */
nm_golden_status nm_golden_open(const char *path, nm_golden **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* The same from len bytes in memory; name stands for the file in messages. */
nm_golden_status nm_golden_parse(const void *buf, size_t len, const char *name, nm_golden **out,
                                 char *err, size_t errlen) __attribute__((warn_unused_result));
void nm_golden_close(nm_golden *g);

size_t nm_golden_case_count(const nm_golden *g);
const nm_golden_case *nm_golden_case_at(const nm_golden *g, size_t i);
size_t nm_golden_output_count(const nm_golden *g);
const nm_golden_output *nm_golden_output_at(const nm_golden *g, size_t i);
/* The output named "CASE/OUTPUT", or "CASE" when that case has one output;
 * NULL when there is none (or "CASE" has several outputs). */
const nm_golden_output *nm_golden_find(const nm_golden *g, const char *target);

/* How two NaNs compare: IGNORE, any NaN matches any NaN; STRICT, their
 * signs must agree too. NaN payloads are never compared (hardware and
 * libraries differ in them: CUDA writes 0x7fff, the emulator 0x7e00). */
typedef enum { NM_GOLDEN_NAN_IGNORE = 0, NM_GOLDEN_NAN_STRICT } nm_golden_nan;

typedef struct nm_golden_opts {
	uint64_t ulp; /* tolerance in ulps for finite values; 0: exact */
	nm_golden_nan nan_sign;
} nm_golden_opts;

#define NM_GOLDEN_OPTS_DEFAULT ((nm_golden_opts){0, NM_GOLDEN_NAN_IGNORE})

/* The distance of a pair that involves an infinity or a NaN. */
#define NM_GOLDEN_ULP_INF UINT64_MAX

typedef struct nm_golden_mismatch {
	size_t index;
	uint32_t expected, actual;
	uint64_t ulp; /* NM_GOLDEN_ULP_INF: an inf or NaN on either side */
} nm_golden_mismatch;

typedef struct nm_golden_report {
	size_t checked, mismatched;
	uint64_t max_ulp;               /* over every element checked */
	nm_golden_mismatch *mismatches; /* all of them, malloc'ed */
} nm_golden_report;

/*
 * Compare n actual encodings with the target's expected ones. An element
 * matches when the encodings are equal; or both are NaN (and, with STRICT,
 * of one sign); or both are finite, not a +0/−0 pair, and at most opts->ulp
 * apart in the format's order (the distance between two encodings is how
 * many representable values lie between them, +0 and −0 counted once). An
 * infinity or NaN never matches anything else, whatever the tolerance; a
 * zero of the wrong sign never matches either (1/x tells them apart).
 * n must equal the target's length (NM_GOLDEN_ERR_LENGTH) and every encoding
 * must fit the format's width (NM_GOLDEN_ERR_DTYPE).
 */
nm_golden_status nm_golden_compare(const nm_golden *g, const char *target, const uint32_t *actual,
                                   size_t n, const nm_golden_opts *opts, nm_golden_report *rep,
                                   char *err, size_t errlen) __attribute__((warn_unused_result));
void nm_golden_report_free(nm_golden_report *rep);

/* The distance in ulps of two encodings of the named format as
 * nm_golden_compare measures it (NM_GOLDEN_ULP_INF with an inf or NaN). */
uint64_t nm_golden_ulp(const nm_golden_output *o, uint32_t a, uint32_t b);
/* "nan", "-nan", "inf", "-inf", "0", "-0", "sub", "normal", "max" (±the
 * largest finite) — the class golden files record per element. */
const char *nm_golden_class(const nm_golden_output *o, uint32_t bits);

/*
 * A kernel's actual outputs from a file, as `nanmap check` reads them:
 *  - .npy (recognised by its magic): '|u1', '<u2', '<u4' hold encodings of
 *    8-, 16- and 32-bit formats (any wider dtype is refused); '<f2' holds
 *    fp16 outputs only, '<f4' fp32 outputs only (their bits are the
 *    encodings); 1-D or 2-D, read in C order;
 *  - a file whose name ends in .txt or .hex: one encoding per line in hex
 *    (0x optional), blank lines and lines starting with '#' skipped;
 *  - anything else: raw little-endian encodings, 1 byte each for formats of
 *    up to 8 bits, 2 up to 16, 4 up to 32; the size must be a multiple.
 * o says the width and format. *vals is malloc'ed, *n its length. No more
 * is read than the output can hold: a raw file of more than o->n encodings,
 * a hex file over 64 KiB + 32 bytes per encoding, or a .npy of more than
 * 2^31 elements is refused (a stream such as /dev/zero ends there).
 */
nm_golden_status nm_golden_read_actual(const char *path, const nm_golden_output *o, uint32_t **vals,
                                       size_t *n, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/*
 * A case's inputs: every tensor its kernel consumes, each by role ("x",
 * "dy", "target", "w", ...; docs/golden.md lists them per kernel), drawn by
 * the kernel's own code (emu_kernel_inputs) from the case line, so they are
 * the ones the golden outputs were computed from. A kernel run on them
 * reproduces every output of the case bit for bit.
 */
typedef struct nm_golden_input {
	const char *role; /* static storage */
	char format[64];  /* the format the kernel rounds the values into ("fp16"),
	                     "float64" (it takes them as they are) or "index" (class
	                     indices 0, 1, ...) */
	int bits;         /* that format's width; 64 for float64, 32 for index */
	int ndim;         /* 1 (cols values; rows is 1) or 2 */
	size_t rows, cols;
	bool of_x;           /* an operand the kernel reads out of x (matmul's a and b,
	                        attention's q, k, v): x holds it too */
	double *values;      /* rows·cols values, row-major, as the kernel is handed
	                        them, before it rounds them (exact doubles) */
	uint32_t *encodings; /* rows·cols encodings of format, as the kernel stores
	                        them; NULL for float64 and index */
} nm_golden_input;

typedef struct nm_golden_inputs {
	nm_golden_input *item; /* x first */
	size_t n;
} nm_golden_inputs;

/* The inputs of case case_id of g (redrawn from its case line: the
 * generator for x, the kernel's code for the rest). NOTFOUND for an unknown
 * case; FORMAT for a case whose input cannot be redrawn here (a generator
 * other than uniform and ones, whose draws go through the C library) or
 * whose kernel or policy this nanmap does not know. Free with
 * nm_golden_inputs_free (on failure out is empty). */
nm_golden_status nm_golden_case_inputs(const nm_golden *g, const char *case_id,
                                       nm_golden_inputs *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void nm_golden_inputs_free(nm_golden_inputs *in);

typedef enum { NM_GOLDEN_ACT_NPY = 0, NM_GOLDEN_ACT_HEX, NM_GOLDEN_ACT_RAW } nm_golden_act_kind;
/* The same from memory, the kind given (the fuzzer calls this). */
nm_golden_status nm_golden_read_actual_mem(const void *buf, size_t len, const char *name,
                                           nm_golden_act_kind kind, const nm_golden_output *o,
                                           uint32_t **vals, size_t *n, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
