/*
 * nm_parse.h — strict parsing of the command line's numbers, encodings and
 * lists, and the text forms nanmap prints.
 *
 * Numbers are kept exactly enough to be rounded once: a decimal such as
 * "0.1" is not first rounded to the nearest double (that would round twice,
 * and a decimal just below a halfway point of the small format could land on
 * the halfway point in double and then tie the wrong way). Instead its exact
 * value is truncated to a 64-bit significand plus a sticky bit, which is what
 * emu_round_core() needs to round it exactly in every mode, SR included.
 */
#ifndef NANMAP_NM_PARSE_H
#define NANMAP_NM_PARSE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/emu.h"

/* The exit status of every command-line error. */
#define NM_EXIT_ERR 2

/* Print one error line "nanmap: <message>" on stderr with one write(2), so
 * that it cannot interleave with other writers of a shared pipe; returns
 * NM_EXIT_ERR. A message longer than NM_FAIL_LEN is cut, still one line.
 * Control bytes in it (an argument's, a file's) are shown as \xNN (nm_shown):
 * they never reach the terminal, and a newline never splits the line. */
int nm_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define NM_FAIL_LEN 4096
/* nm_fail's line, "nanmap: " message "\n", in buf (len >= 10); its length. */
size_t nm_fail_format(char *buf, size_t len, const char *fmt, va_list ap);

/* s as a terminal may show it: each control byte (below 0x20, and 0x7f) as
 * \xNN, every other byte as it is (UTF-8 passes), cut where buf (len >= 1)
 * ends, never inside an escape; returns buf. For names that come from outside
 * (arguments, tensor names) on their way to a table, a CSV or stderr. */
const char *nm_shown(const char *s, char *buf, size_t len);

typedef enum nm_status {
	NM_OK = 0,
	NM_ERR_SYNTAX, /* not one of the accepted forms (or empty) */
	NM_ERR_RANGE,  /* does not fit the destination / too many items */
	NM_ERR_INEXACT /* a number the format cannot hold exactly */
} nm_status;

typedef enum nm_kind { NM_NUM_FINITE = 0, NM_NUM_INF, NM_NUM_NAN } nm_kind;

/*
 * A real number: (-1)^neg * (man + s) * 2^exp with 0 <= s < 1, s != 0 iff
 * sticky. A nonzero man has its leading one at bit 63, so 63 bits lie below
 * it (emu_round_core asks for at least 34 when sticky is set). exp is the
 * text's own exponent; only texts beyond MPFR's exponent range (2^(+-2^30))
 * are replaced by the nearest number MPFR holds, with sticky set.
 */
typedef struct nm_number {
	nm_kind kind;
	bool neg;
	uint64_t man; /* 0: the number is zero */
	int exp;
	bool sticky;
} nm_number;

/*
 * Parse a whole token: a decimal or C99 hexadecimal floating constant as
 * strtod reads it (optional sign, no surrounding blanks), or inf, +inf,
 * -inf, nan, +nan, -nan in any case. Anything else is NM_ERR_SYNTAX.
 */
nm_status nm_parse_number(const char *s, nm_number *out) __attribute__((warn_unused_result));

/* d's exact value (a .npy element, say) as a number. */
void nm_number_from_double(double d, nm_number *out);

/* true, with *d set, when x is exactly a double (±inf and NaN included). */
bool nm_number_to_double(const nm_number *x, double *d);

/* -1, 0, 1 as x is below, equal to, above d; 2 when either is NaN. */
int nm_number_cmp(const nm_number *x, double d);

/* Round x's exact value once to f under env (emu_from_double's contract). */
emu_result nm_round_number(const emu_format *f, const nm_number *x, const emu_env *env);

/*
 * The encoding of x in f when f holds x exactly (NaN: when f has a NaN);
 * NM_ERR_INEXACT otherwise. No rounding-mode, sat or ftz influence.
 */
nm_status nm_exact_bits(const emu_format *f, const nm_number *x, emu_bits *out)
    __attribute__((warn_unused_result));

/*
 * An encoding in hexadecimal: "0x" (or "0X") and one or more hex digits,
 * whose value fits in f->bits bits.
 */
nm_status nm_parse_bits(const char *s, const emu_format *f, emu_bits *out)
    __attribute__((warn_unused_result));

/* An unsigned 64-bit integer: decimal digits, or 0x and hex digits. */
nm_status nm_parse_u64(const char *s, uint64_t *out) __attribute__((warn_unused_result));

/*
 * Split a -f list in place. Custom specs contain commas themselves: inside
 * an item that starts with "p=" a comma separates only when the text after
 * it (up to the next comma) is a built-in format name or starts with "p=";
 * anywhere else every comma separates. So a custom spec in a list must
 * start with "p=" ("fp16,p=4,emax=8,nan=fn,bf16" is three formats). Empty
 * items are NM_ERR_SYNTAX, more than max items NM_ERR_RANGE.
 */
nm_status nm_split_formats(char *list, char **items, size_t max, size_t *n)
    __attribute__((warn_unused_result));

/*
 * Split one input line of len bytes in place into blank-separated fields
 * (the line end, "\n" or "\r\n", is dropped). A NUL byte inside the line is
 * NM_ERR_SYNTAX, more than max fields NM_ERR_RANGE; a blank line gives 0.
 * line[len] must be writable (getline() leaves the NUL there).
 */
nm_status nm_split_fields(char *line, size_t len, char **fields, size_t max, size_t *n)
    __attribute__((warn_unused_result));

/* Text forms. NM_NUM_LEN holds any of them. */
#define NM_NUM_LEN 40
/* %.17g, but "inf", "-inf" and "nan" whatever the sign of the NaN. */
/* v as %.*g with prec digits, or inf, -inf, nan (CSV and reports). */
const char *nm_fmt_g(double v, int prec, char *buf, size_t len);
/* 64-bit FNV-1a of n bytes: case-file hashes, journal line checks, golden seeds. */
uint64_t nm_fnv1a(const void *p, size_t n);
const char *nm_fmt_double(double v, char *buf, size_t len);
/* 0x-prefixed lowercase hex, zero-padded to ceil(f->bits / 4) digits. */
const char *nm_fmt_bits(const emu_format *f, emu_bits b, char *buf, size_t len);

/* ---- the one option parser of every command ---- */

/*
 * The rules, the same for every command: "-x V", "--long V" and
 * "--long=V" give a value; "--" ends the options; an option given twice is
 * refused ("option '--out' given twice") unless it is NM_OPTF_REPEAT (-f,
 * --param) or a flag without a value (--sat twice is --sat); two options of
 * one nonzero group exclude each other (--csv and --json: one output form);
 * an unknown option names the command's help.
 */
#define NM_OPTF_VALUE 1u  /* takes a value */
#define NM_OPTF_REPEAT 2u /* may be given more than once */

typedef struct nm_opt {
	const char *shrt, *lng; /* either may be NULL */
	int id;                 /* the command's own name for it */
	unsigned flags;
	int group; /* 0, or options that exclude each other share it */
} nm_opt;

typedef struct nm_optparser {
	const char *cmd; /* "round", "golden update": messages and the help hint */
	const char *help_cmd; /* "round": "try: nanmap round --help" (NULL: cmd) */
	const nm_opt *defs;
	size_t ndefs; /* at most 64 */
	/* Is a word starting with '-' an argument (round's -1, -inf)? NULL: only "-". */
	bool (*is_arg)(const char *a);
	/* Each option in order, val NULL for a flag; 0 or nm_fail's status. */
	int (*take)(void *ctx, const nm_opt *d, const char *val);
	/* Each argument in order; 0 or nm_fail's status. NULL: none is taken. */
	int (*arg)(void *ctx, const char *a);
	void *ctx;
	/* Another program's command line (bin/nanmap-gpu, the bench): its name
	 * for the help hint ("try: nanmap-gpu --help"); NULL: "nanmap CMD". */
	const char *prog;
	/* Non-NULL: the parser's own errors go here, one line without the
	 * "nanmap: " prefix, instead of to stderr (a caller that reports them
	 * itself); take and arg write theirs as they choose. */
	char *err;
	size_t errlen;
} nm_optparser;

/* Parse argv[0..argc); 0, or the status of the first error (already printed). */
int nm_opt_parse(const nm_optparser *p, int argc, char **argv);

/* Does argv[0..argc) ask for help (-h or --help before any "--")? */
bool nm_wants_help(int argc, char **argv);
/* Print a command's help on stdout; 0, or an error line when stdout fails. */
int nm_print_help(const char *text);

/*
 * An integer option's value: decimal digits (or 0x and hex digits) in
 * [lo, hi]. The one error line names the option and says which is wrong:
 * "--n '1e12' is not an integer (write the digits: 1000000000000)",
 * "--n '2147483648000' is too large (at most 2147483648)", too small, or
 * "--n 'x' is not an integer". 0 or nm_fail's status.
 */
int nm_parse_count(const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out);

#endif
