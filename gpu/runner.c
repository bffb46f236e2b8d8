/*
 * runner.c — bin/nanmap-gpu: runs each step's CUDA kernels (gpu_dev.h) and
 * compares every output with the emulator under the same policy
 * (gpu_host.h), writing the report after every row so a run cut short keeps
 * what finished. The steps are in gpu/run_*.c, one family a file (gpu/run.h);
 * here are main and what they share.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "emu/core/draw.h"
#include "gpu/run.h"

gpu_report run_rep;
char run_err[512];
static int failed_steps;

double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

const emu_format *fmt(const char *name)
{
	const emu_format *f = emu_format_by_name(name);
	if (!f) {
		fprintf(stderr, "nanmap-gpu: format %s missing from the emulator\n", name);
		exit(1);
	}
	return f;
}

void flush_report(void)
{
	char e[512];
	if (gpu_report_write(&run_rep, e, sizeof e))
		fprintf(stderr, "nanmap-gpu: %s\n", e);
}

void print_row(const gpu_cmp *c)
{
	printf("%-6s %-28s %-10s %-22s compared %12" PRIu64 " identical %12" PRIu64
	       " bad %10" PRIu64 "\n",
	       c->step, c->kernel, c->format, c->mode, c->compared, c->identical, gpu_cmp_bad(c));
	fflush(stdout);
}

void add_row(const gpu_cmp *c)
{
	print_row(c);
	if (gpu_report_add(&run_rep, c))
		fprintf(stderr, "nanmap-gpu: out of memory for the report\n");
	flush_report();
}

void step_failed(const char *step, const char *what)
{
	failed_steps++;
	fprintf(stderr, "nanmap-gpu: %s: %s\n", step, what);
	gpu_report_note(&run_rep, "step %s FAILED: %s", step, what);
	flush_report();
}

uint64_t rnd(uint64_t seed, uint64_t stream, uint64_t i)
{
	return emu_draw64s(seed, stream, i);
}

gpu_fmt gfmt(const emu_format *in)
{
	return in->bits == 8 ? (in->p == 4 ? GPU_E4M3 : GPU_E5M2)
	                     : (in->p == 11 ? GPU_F16 : GPU_BF16);
}
gpu_kfmt kfmt(const emu_format *f)
{
	return f->bits == 32 ? GPU_K_F32 : f->p == 11 ? GPU_K_F16 : GPU_K_BF16;
}

int main(int argc, char **argv)
{
	gpu_opts o;
	char name[256];
	if (gpu_parse_args(argc, argv, &o, run_err, sizeof run_err)) {
		fprintf(stderr, "nanmap-gpu: %s\n", run_err);
		return 2;
	}
	if (o.help) {
		fputs(gpu_usage(), stdout);
		return 0;
	}
	if (gpu_dev_init(name, sizeof name, run_err, sizeof run_err)) {
		fprintf(stderr, "nanmap-gpu: no CUDA device (%s)\n", run_err);
		return GPU_EXIT_SKIP;
	}
	if (mkdir(o.out_dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "nanmap-gpu: cannot create %s: %s\n", o.out_dir, strerror(errno));
		return 2;
	}
	gpu_report_init(&run_rep, o.out_dir, "nanmap-gpu");
	gpu_report_note(&run_rep, "%s", name);
	printf("nanmap-gpu: %s\n", name);
	static void (*const steps[])(const gpu_opts *) = {
	    step_conv, step_tables, step_arith, step_tc,   step_gemm, step_gemmex,
	    step_lt,   step_kern,   step_quant, step_attn, step_rules};
	static const unsigned bits[] = {GPU_STEP_CONV, GPU_STEP_TABLES, GPU_STEP_ARITH,
	                                GPU_STEP_TC,   GPU_STEP_GEMM,   GPU_STEP_GEMMEX,
	                                GPU_STEP_LT,   GPU_STEP_KERN,   GPU_STEP_QUANT,
	                                GPU_STEP_ATTN, GPU_STEP_RULES};
	for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
		if (!(o.steps & bits[s]))
			continue;
		double t0 = now();
		steps[s](&o);
		gpu_report_note(&run_rep, "step %s: %.1f s", gpu_step_name(bits[s]), now() - t0);
		flush_report();
	}
	gpu_report_free(&run_rep);
	return failed_steps ? 1 : 0;
}
