/*
 * host_args.c — bin/nanmap-gpu's command line. Strict: an unknown option, a
 * missing value or a number out of range is one error line, never a guess.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			o->help = true;
			continue;
		}
		if (strcmp(a, "--quick") == 0) {
			o->quick = true;
			continue;
		}
		static const char *const with_value[] = {
		    "--out",   "--only", "--tc-vectors", "--chunk-log2", "--stride",
		    "--pairs", "--seed", "--gpu-tables", "--tc-rules"};
		int k = -1;
		for (int j = 0; j < (int)(sizeof with_value / sizeof with_value[0]); j++)
			if (strcmp(a, with_value[j]) == 0)
				k = j;
		if (k < 0) {
			snprintf(err, len, "unknown argument '%s' (try --help)", a);
			return -1;
		}
		if (i + 1 >= argc || !*argv[i + 1]) {
			snprintf(err, len, "%s needs a value", a);
			return -1;
		}
		const char *v = argv[++i];
		uint64_t n;
		switch (k) {
		case 0:
			o->out_dir = v;
			break;
		case 1:
			if (parse_steps(v, &o->steps)) {
				snprintf(err, len,
				         "--only: '%s' is not a list of conv, arith, tables, tc, "
				         "gemm, gemmex, lt, kern, quant, attn, rules, all",
				         v);
				return -1;
			}
			break;
		case 2:
			o->tc_vectors = v;
			break;
		case 3:
			if (num(v, 16, 30, &n)) {
				snprintf(err, len, "--chunk-log2: '%s' is not an integer in 16..30",
				         v);
				return -1;
			}
			o->chunk_log2 = (int)n;
			break;
		case 4:
			/* inputs 0, N, 2N, ... below 2^32 (1: every input) */
			if (num(v, 1, UINT32_MAX, &n)) {
				snprintf(err, len, "--stride: '%s' is not an integer in 1..2^32-1",
				         v);
				return -1;
			}
			o->stride = n;
			break;
		case 5:
			if (num(v, 1, 1ull << 32, &n)) {
				snprintf(err, len, "--pairs: '%s' is not an integer in 1..2^32", v);
				return -1;
			}
			o->pairs = n;
			break;
		case 6:
			if (num(v, 0, UINT64_MAX, &n)) {
				snprintf(err, len, "--seed: '%s' is not an unsigned integer", v);
				return -1;
			}
			o->seed = n;
			break;
		case 7:
			o->gpu_tables = v;
			break;
		case 8:
			o->tc_rules = v;
			break;
		}
	}
	return 0;
}
