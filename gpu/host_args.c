/*
 * host_args.c — bin/nanmap-gpu's command line, read by the one option
 * parser every command uses (emu/io/nm_parse.c's nm_opt_parse: --opt V and
 * --opt=V, an option given twice refused). Strict: an unknown option, a
 * missing value or a number out of range is one error line, never a guess.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/io/nm_parse.h"
#include "gpu/gpu_host.h"

static const char *const step_names[] = {"conv", "arith", "tables", "tc",   "gemm", "gemmex",
                                         "lt",   "kern",  "quant",  "attn", "rules"};

const char *gpu_step_name(unsigned step)
{
	for (unsigned i = 0; i < sizeof step_names / sizeof step_names[0]; i++)
		if (step == 1u << i)
			return step_names[i];
	return NULL;
}

const char *gpu_usage(void)
{
	return "usage: nanmap-gpu [--out DIR] [--only STEP,...] [--tc-vectors DIR]\n"
	       "                  [--chunk-log2 N] [--stride N] [--pairs N] [--seed N] [--quick]\n"
	       "                  [--gpu-tables FILE|DIR] [--tc-rules FILE]\n"
	       "Runs the CUDA counterparts on the first GPU and compares every output with\n"
	       "the emulator bit for bit; writes DIR/nanmap-gpu.{csv,md}, -miss.csv and\n"
	       "DIR/gpu-tables.txt. Steps: conv arith tables tc gemm gemmex lt kern quant\n"
	       "attn rules (default all).\n"
	       "--tc-vectors (or NANMAP_TC_VECTORS): the Tensor Core hardware vectors.\n"
	       "--stride N: every N-th binary32 input only; --pairs N: operand pairs per\n"
	       "arithmetic op (2^32: all pairs for add and mul); --quick: 16-row GEMMs.\n"
	       "--tc-rules FILE: the disputed Tensor Core rule cases (default\n"
	       "gpu/tc-rules.txt); the rules step writes DIR/tc-rules.csv.\n"
	       "--gpu-tables FILE|DIR: the tables a tables step wrote (default: "
	       "DIR/gpu-tables.txt\n"
	       "when present); the kern step then predicts fp16/bf16 kernels bit for bit.\n"
	       "Exit 0 when every step ran (mismatches are findings, in the report), 1 when\n"
	       "a step failed, 2 on bad arguments, 77 when no CUDA device is usable.\n";
}

/* A whole-token unsigned number (decimal or 0x hex) in [lo, hi]. */
static int num(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_steps(const char *s, unsigned *out)
{
	unsigned m = 0;
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, ",");
		unsigned bit = 0;
		for (unsigned i = 0; i < sizeof step_names / sizeof step_names[0]; i++)
			if (strlen(step_names[i]) == n && strncmp(p, step_names[i], n) == 0)
				bit = 1u << i;
		if (n == 3 && strncmp(p, "all", 3) == 0)
			bit = GPU_STEP_ALL;
		if (!bit)
			return -1;
		m |= bit;
		p += n;
		if (*p == ',' && *++p == '\0')
			return -1;
	}
	*out = m;
	return m ? 0 : -1;
}

enum {
	O_HELP,
	O_QUICK,
	O_OUT,
	O_ONLY,
	O_TCV,
	O_CHUNK,
	O_STRIDE,
	O_PAIRS,
	O_SEED,
	O_TABLES,
	O_RULES
};

static const nm_opt opt_defs[] = {
    {"-h", "--help", O_HELP, 0, 0},
    {NULL, "--quick", O_QUICK, 0, 0},
    {NULL, "--out", O_OUT, NM_OPTF_VALUE, 0},
    {NULL, "--only", O_ONLY, NM_OPTF_VALUE, 0},
    {NULL, "--tc-vectors", O_TCV, NM_OPTF_VALUE, 0},
    {NULL, "--chunk-log2", O_CHUNK, NM_OPTF_VALUE, 0},
    {NULL, "--stride", O_STRIDE, NM_OPTF_VALUE, 0},
    {NULL, "--pairs", O_PAIRS, NM_OPTF_VALUE, 0},
    {NULL, "--seed", O_SEED, NM_OPTF_VALUE, 0},
    {NULL, "--gpu-tables", O_TABLES, NM_OPTF_VALUE, 0},
    {NULL, "--tc-rules", O_RULES, NM_OPTF_VALUE, 0},
};

typedef struct {
	gpu_opts *o;
	char *err;
	size_t len;
} args_ctx;

/* One option's value into the options; an error line into err. */
static int take(void *vctx, const nm_opt *d, const char *v)
{
	args_ctx *c = vctx;
	gpu_opts *o = c->o;
	uint64_t n;
	if (v && !*v) {
		snprintf(c->err, c->len, "option '%s' needs a value", d->lng);
		return 2;
	}
	switch (d->id) {
	case O_HELP:
		o->help = true;
		return 0;
	case O_QUICK:
		o->quick = true;
		return 0;
	case O_OUT:
		o->out_dir = v;
		return 0;
	case O_ONLY:
		if (parse_steps(v, &o->steps))
			break;
		return 0;
	case O_TCV:
		o->tc_vectors = v;
		return 0;
	case O_CHUNK:
		if (num(v, 16, 30, &n))
			break;
		o->chunk_log2 = (int)n;
		return 0;
	case O_STRIDE: /* inputs 0, N, 2N, ... below 2^32 (1: every input) */
		if (num(v, 1, UINT32_MAX, &n))
			break;
		o->stride = n;
		return 0;
	case O_PAIRS:
		if (num(v, 1, 1ull << 32, &n))
			break;
		o->pairs = n;
		return 0;
	case O_SEED:
		if (num(v, 0, UINT64_MAX, &n))
			break;
		o->seed = n;
		return 0;
	case O_TABLES:
		o->gpu_tables = v;
		return 0;
	default: /* O_RULES */
		o->tc_rules = v;
		return 0;
	}
	static const char *const want[] = {
	    [O_ONLY] = "a list of conv, arith, tables, tc, gemm, gemmex, lt, kern, quant, attn, "
	               "rules, all",
	    [O_CHUNK] = "an integer in 16..30",
	    [O_STRIDE] = "an integer in 1..2^32-1",
	    [O_PAIRS] = "an integer in 1..2^32",
	    [O_SEED] = "an unsigned integer"};
	snprintf(c->err, c->len, "%s: '%s' is not %s", d->lng, v, want[d->id]);
	return 2;
}

int gpu_parse_args(int argc, char *const *argv, gpu_opts *o, char *err, size_t len)
{
	const char *env = getenv("NANMAP_TC_VECTORS");
	*o = (gpu_opts){.out_dir = "gpu-out",
	                .tc_vectors = env && *env ? env : NULL,
	                .tc_rules = "gpu/tc-rules.txt",
	                .steps = GPU_STEP_ALL,
	                .chunk_log2 = 28,
	                .stride = 1,
	                .pairs = 1u << 24,
	                .seed = 0x6e616e6d6170ull};
	args_ctx c = {o, err, len};
	return nm_opt_parse(&(nm_optparser){.cmd = "nanmap-gpu",
	                                    .defs = opt_defs,
	                                    .ndefs = sizeof opt_defs / sizeof opt_defs[0],
	                                    .take = take,
	                                    .ctx = &c,
	                                    .prog = "nanmap-gpu",
	                                    .err = err,
	                                    .errlen = len},
	                    argc > 0 ? argc - 1 : 0, argc > 0 ? (char **)argv + 1 : NULL)
	           ? -1
	           : 0;
}
