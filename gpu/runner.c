/*
 * runner.c — bin/nanmap-gpu: runs each step's CUDA kernels (gpu_dev.h) and
 * compares every output with the emulator under the same policy
 * (gpu_host.h), writing the report after every row so a run cut short keeps
 * what finished.
 *
 * Every comparison loop runs on all cores (OpenMP) into private rows
 * (gpu_cmp_blank) merged with gpu_cmp_merge, so the report is the same for
 * any thread count.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpu/gpu_dev.h"
#include "gpu/gpu_host.h"
#include "emu/engine/kernels.h"
#include "emu/recipes/recipe.h"
#include "emu/kernels/tc.h"

static gpu_report rep;
static const emu_env env_rne = EMU_ENV_DEFAULT;
static int failed_steps;
static char err[512];

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const emu_format *fmt(const char *name)
{
	const emu_format *f = emu_format_by_name(name);
	if (!f) {
		fprintf(stderr, "nanmap-gpu: format %s missing from the emulator\n", name);
		exit(1);
	}
	return f;
}

static void flush_report(void)
{
	char e[512];
	if (gpu_report_write(&rep, e, sizeof e))
		fprintf(stderr, "nanmap-gpu: %s\n", e);
}

static void print_row(const gpu_cmp *c)
{
	printf("%-6s %-28s %-10s %-22s compared %12" PRIu64 " identical %12" PRIu64
	       " bad %10" PRIu64 "\n",
	       c->step, c->kernel, c->format, c->mode, c->compared, c->identical, gpu_cmp_bad(c));
	fflush(stdout);
}

static void add_row(const gpu_cmp *c)
{
	print_row(c);
	if (gpu_report_add(&rep, c))
		fprintf(stderr, "nanmap-gpu: out of memory for the report\n");
	flush_report();
}

static void step_failed(const char *step, const char *what)
{
	failed_steps++;
	fprintf(stderr, "nanmap-gpu: %s: %s\n", step, what);
	gpu_report_note(&rep, "step %s FAILED: %s", step, what);
	flush_report();
}

/* Counter-based random 64 bits for (seed, stream, i): splitmix64. */
static uint64_t rnd(uint64_t seed, uint64_t stream, uint64_t i)
{
	uint64_t z = seed ^ (stream * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull);
	return emu_mix64(z);
}

/* ---- conv: every binary32 input (or a stride) to each format ---- */
static const struct {
	gpu_cv kind;
	const char *fmt, *mode, *name;
	emu_mode m;
	bool sat;
} conv_rows[] = {
    {GPU_CV_F16_RN, "fp16", "rn", "__float2half_rn", EMU_RNE, false},
    {GPU_CV_F16_RZ, "fp16", "rz", "__float2half_rz", EMU_RTZ, false},
    {GPU_CV_F16_RN_SAT, "fp16", "rn-satfinite", "cvt.rn.satfinite.f16", EMU_RNE, true},
    {GPU_CV_BF16_RN, "bf16", "rn", "__float2bfloat16_rn", EMU_RNE, false},
    {GPU_CV_BF16_RZ, "bf16", "rz", "__float2bfloat16_rz", EMU_RTZ, false},
    {GPU_CV_BF16_RN_SAT, "bf16", "rn-satfinite", "cvt.rn.satfinite.bf16", EMU_RNE, true},
    {GPU_CV_E4M3_SAT, "e4m3", "rn-satfinite", "__nv_cvt_float_to_fp8", EMU_RNE, true},
    {GPU_CV_E4M3_NOSAT, "e4m3", "rn-nosat", "__nv_cvt_float_to_fp8", EMU_RNE, false},
    {GPU_CV_E5M2_SAT, "e5m2", "rn-satfinite", "__nv_cvt_float_to_fp8", EMU_RNE, true},
    {GPU_CV_E5M2_NOSAT, "e5m2", "rn-nosat", "__nv_cvt_float_to_fp8", EMU_RNE, false},
};

static void step_conv(const gpu_opts *o)
{
	uint64_t total = (UINT32_MAX / o->stride) + 1;
	size_t chunk = (size_t)1 << o->chunk_log2;
	uint16_t *got = malloc(chunk * sizeof *got);
	if (!got) {
		step_failed("conv", "out of memory");
		return;
	}
	for (size_t r = 0; r < sizeof conv_rows / sizeof conv_rows[0]; r++) {
		const emu_format *f = fmt(conv_rows[r].fmt);
		emu_env env = EMU_ENV_DEFAULT;
		env.mode = conv_rows[r].m;
		env.sat = conv_rows[r].sat;
		gpu_cmp row;
		gpu_cmp_init(&row, "conv", conv_rows[r].name, conv_rows[r].fmt, conv_rows[r].mode,
		             f, (gpu_tol){0, true});
		double t0 = now();
		bool ok = true;
		/* the row goes into the report at once and is rewritten after every
		 * chunk: a run stopped by its time limit keeps the inputs it compared */
		size_t idx = rep.nrows;
		if (gpu_report_add(&rep, &row))
			idx = SIZE_MAX;
		for (uint64_t j0 = 0; j0 < total && ok; j0 += chunk) {
			size_t n = total - j0 < chunk ? (size_t)(total - j0) : chunk;
			if (gpu_dev_convert(conv_rows[r].kind, j0 * o->stride, o->stride, n, got,
			                    err, sizeof err)) {
				ok = false;
				break;
			}
			gpu_cmp_convert(&row, f, &env, j0, o->stride, n, got);
			if (idx != SIZE_MAX) {
				rep.rows[idx] = row;
				flush_report();
			}
		}
		if (!ok) {
			char what[700];
			snprintf(what, sizeof what,
			         "%s %s: %s (the row holds the inputs compared before)",
			         conv_rows[r].fmt, conv_rows[r].mode, err);
			step_failed("conv", what);
			continue;
		}
		print_row(&row);
		gpu_report_note(&rep,
		                "conv %s %s: %" PRIu64 " inputs (stride %" PRIu64 ") in %.1f s",
		                conv_rows[r].fmt, conv_rows[r].mode, total, o->stride, now() - t0);
	}
	free(got);

	/* and back: every encoding widened to binary32 */
	static const char *const names[GPU_NFMT] = {"fp16", "bf16", "e4m3", "e5m2"};
	static uint32_t wide[65536];
	const emu_format *f32 = fmt("fp32");
	for (int g = 0; g < GPU_NFMT; g++) {
		const emu_format *f = fmt(names[g]);
		if (gpu_dev_widen((gpu_fmt)g, wide, err, sizeof err)) {
			step_failed("conv", err);
			continue;
		}
		gpu_cmp row;
		gpu_cmp_init(&row, "conv", "widen to float", names[g], "exact", f32,
		             (gpu_tol){0, true});
		emu_env env = EMU_ENV_DEFAULT;
		for (uint32_t b = 0; b < (1u << f->bits); b++)
			gpu_cmp_one(&row, b, b, wide[b], emu_convert(f32, f, b, &env).bits);
		add_row(&row);
	}
}

/* ---- arith: fp16/bf16 add, mul, fma on sampled (or all) pairs ---- */
static void step_arith(const gpu_opts *o)
{
	static const char *const fnames[2] = {"fp16", "bf16"};
	static const char *const onames[3] = {"__hadd_rn", "__hmul_rn", "__hfma"};
	bool all = o->pairs == (1ull << 32);
	size_t chunk = (size_t)1 << (o->chunk_log2 < 26 ? o->chunk_log2 : 26);
	uint16_t *buf = malloc(4 * chunk * sizeof *buf);
	if (!buf) {
		step_failed("arith", "out of memory");
		return;
	}
	uint16_t *a = buf, *b = buf + chunk, *c = buf + 2 * chunk, *got = buf + 3 * chunk;
	for (int g = 0; g < 2; g++) {
		const emu_format *f = fmt(fnames[g]);
		for (int op = 0; op < 3; op++) {
			gpu_cmp row;
			gpu_cmp_init(&row, "arith", onames[op], fnames[g],
			             all && op < 2 ? "rn-allpairs" : "rn-sampled", f,
			             (gpu_tol){0, true});
			bool ok = true;
			for (uint64_t j0 = 0; j0 < o->pairs && ok; j0 += chunk) {
				size_t n = o->pairs - j0 < chunk ? (size_t)(o->pairs - j0) : chunk;
#pragma omp parallel for schedule(static)
				for (size_t i = 0; i < n; i++) {
					uint64_t r =
					    rnd(o->seed, 1 + (uint64_t)(g * 3 + op), j0 + i);
					bool pair = all && op < 2;
					a[i] = pair ? (uint16_t)((j0 + i) >> 16) : (uint16_t)r;
					b[i] = pair ? (uint16_t)(j0 + i) : (uint16_t)(r >> 16);
					c[i] = (uint16_t)(r >> 32);
				}
				if (gpu_dev_arith((gpu_fmt)g, op, a, b, c, n, got, err,
				                  sizeof err)) {
					ok = false;
					break;
				}
#pragma omp parallel
				{
					gpu_cmp mine = gpu_cmp_blank(&row);
					emu_env env = EMU_ENV_DEFAULT;
#pragma omp for schedule(static)
					for (size_t i = 0; i < n; i++) {
						emu_bits w =
						    op == 0 ? emu_add(f, a[i], b[i], &env).bits
						    : op == 1
						        ? emu_mul(f, a[i], b[i], &env).bits
						        : emu_fma(f, a[i], b[i], c[i], &env).bits;
						uint64_t in = (uint64_t)a[i] << 32 |
						              (uint64_t)b[i] << 16 | c[i];
						gpu_cmp_one(&mine, j0 + i, in, got[i], w);
					}
#pragma omp critical
					gpu_cmp_merge(&row, &mine);
				}
			}
			if (!ok) {
				step_failed("arith", err);
				continue;
			}
			add_row(&row);
		}
	}
	free(buf);
}

/* ---- tables: the approximate functions on every fp16/bf16 input ---- */
static void step_tables(const gpu_opts *o)
{
	static const char *const fnames[2] = {"fp16", "bf16"};
	static const char *const funcs[GPU_NFUNC] = {"hexp", "hlog",   "hexp2",
	                                             "hrcp", "hrsqrt", "hsqrt"};
	gpu_table *t = calloc(2 * GPU_NFUNC, sizeof *t);
	size_t nt = 0;
	if (!t) {
		step_failed("tables", "out of memory");
		return;
	}
	for (int g = 0; g < 2; g++) {
		const emu_format *f = fmt(fnames[g]);
		emu_bits one = emu_from_double(f, 1.0, &env_rne).bits;
		for (int fn = 0; fn < GPU_NFUNC; fn++) {
			gpu_table *cur = &t[nt];
			if (gpu_dev_table((gpu_fmt)g, fn, cur->v, err, sizeof err)) {
				step_failed("tables", err);
				continue;
			}
			snprintf(cur->func, sizeof cur->func, "%s", funcs[fn]);
			snprintf(cur->format, sizeof cur->format, "%s", fnames[g]);
			nt++;
			/* against the correctly rounded result: 1 ulp is the documented
			 * class of these approximations (FACTS §2) */
			gpu_cmp row;
			gpu_cmp_init(&row, "tables", funcs[fn], fnames[g], "vs correctly rounded",
			             f, (gpu_tol){1, true});
#pragma omp parallel
			{
				gpu_cmp mine = gpu_cmp_blank(&row);
				emu_env env = EMU_ENV_DEFAULT;
#pragma omp for schedule(static)
				for (uint32_t x = 0; x < 65536; x++) {
					emu_bits w;
					switch (fn) {
					case 0:
						w = emu_exp(f, x, &env).bits;
						break;
					case 1:
						w = emu_log(f, x, &env).bits;
						break;
					case 2:
						w = emu_exp2(f, x, &env).bits;
						break;
					case 3:
						w = emu_div(f, one, x, &env).bits;
						break;
					case 4:
						w = emu_rsqrt(f, x, &env).bits;
						break;
					default:
						w = emu_sqrt(f, x, &env).bits;
						break;
					}
					gpu_cmp_one(&mine, x, x, cur->v[x], w);
				}
#pragma omp critical
				gpu_cmp_merge(&row, &mine);
			}
			add_row(&row);
		}
	}
	char path[700], note[256];
	snprintf(path, sizeof path, "%s/gpu-tables.txt", o->out_dir);
	snprintf(note, sizeof note,
	         "nanmap-gpu tables: hexp hlog hexp2 hrcp hrsqrt hsqrt of every fp16/bf16 input, "
	         "measured on %s",
	         rep.notes && rep.nnotes ? rep.notes[0] : "a GPU");
	if (nt && gpu_tables_write(path, note, t, nt, err, sizeof err))
		step_failed("tables", err);
	else if (nt) {
		/* the file must replay the GPU bit for bit */
		gpu_tables ts;
		if (gpu_tables_load(path, &ts, err, sizeof err)) {
			step_failed("tables", err);
		} else {
			gpu_cmp row;
			gpu_cmp_init(&row, "tables", "replay gpu-tables.txt", "fp16+bf16", "lookup",
			             fmt("fp16"), (gpu_tol){0, false});
			for (size_t i = 0; i < nt; i++)
				for (uint32_t x = 0; x < 65536; x++) {
					emu_bits w = 0xffffffffu;
					gpu_tables_lookup(&ts, t[i].func, fmt(t[i].format), x, &w);
					gpu_cmp_one(&row, i * 65536 + x, x, t[i].v[x], w);
				}
			add_row(&row);
			gpu_tables_free(&ts);
		}
	}
	free(t);
}

/* Encodings of binary32 values that in holds exactly. */
static uint16_t enc_of(const emu_format *in, uint32_t bits)
{
	float v;
	memcpy(&v, &bits, sizeof v);
	return (uint16_t)emu_from_float(in, v, &env_rne).bits;
}

static gpu_fmt gfmt(const emu_format *in)
{
	return in->bits == 8 ? (in->p == 4 ? GPU_E4M3 : GPU_E5M2)
	                     : (in->p == 11 ? GPU_F16 : GPU_BF16);
}

/* ---- tc: the hardware vectors through our mma.sync ---- */
static void step_tc(const gpu_opts *o)
{
	static const struct {
		const char *dir, *in, *out;
	} sets[] = {{"fp16", "fp16", "fp32"}, {"fp16", "fp16", "fp16"}, {"bf16", "bf16", "fp32"},
	            {"E4M3", "e4m3", "fp32"}, {"E4M3", "e4m3", "fp16"}, {"E5M2", "e5m2", "fp32"},
	            {"E5M2", "e5m2", "fp16"}};
	if (!o->tc_vectors) {
		gpu_report_note(&rep,
		                "tc: SKIPPED: no vectors path (--tc-vectors or NANMAP_TC_VECTORS)");
		printf("tc: SKIPPED: no vectors path (--tc-vectors or NANMAP_TC_VECTORS)\n");
		flush_report();
		return;
	}
	gpu_report_note(&rep, "tc: tf32 vectors not run: the mma kernel takes fp16, bf16 and fp8");
	gpu_report_note(&rep,
	                "tc: FP8 mma.sync on sm_90 is emulated by ptxas (fp16 HMMAs), which the "
	                "h200-mma preset models; the recorded FP8 -> fp32 files are wgmma's "
	                "native path (the h200 preset), so mma.sync against them is a "
	                "measurement of how the two paths differ");
	for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
		gpu_tcv v;
		int rc = gpu_tcv_load(o->tc_vectors, "H200", sets[s].dir, sets[s].out, &v, err,
		                      sizeof err);
		if (rc == 1) {
			gpu_report_note(&rep, "tc: SKIPPED %s->%s: %s", sets[s].in, sets[s].out,
			                err);
			printf("tc: SKIPPED %s->%s: %s\n", sets[s].in, sets[s].out, err);
			continue;
		}
		if (rc) {
			step_failed("tc", err);
			continue;
		}
		const emu_format *in = fmt(sets[s].in), *out = fmt(sets[s].out), *f32 = fmt("fp32");
		bool fp8 = in->bits == 8, acc16 = out->bits == 16;
		/* the FP8 -> fp32 files are wgmma's, run with C = 0; the FP8 -> fp16
		 * files are mma.sync's with fp16(C) (FACTS §3) */
		bool with_c = !fp8 || acc16;
		size_t K = v.K;
		/* eight cases per 16×8 tile: case j of a group is row j of A, column
		 * j of B, and C and D at (j, j); rows 8..15 are zero */
		uint16_t *A = malloc(16 * K * sizeof *A), *B = malloc(8 * K * sizeof *B);
		uint32_t C[16 * 8], D[16 * 8];
		emu_bits *ea = malloc(K * sizeof *ea), *eb = malloc(K * sizeof *eb);
		emu_tc_model m;
		gpu_cmp vs_model, vs_hw;
		gpu_cmp_init(&vs_model, "tc", "mma.sync vs model h200-mma", sets[s].in, sets[s].out,
		             out, (gpu_tol){0, true});
		gpu_cmp_init(&vs_hw, "tc", "mma.sync vs recorded H200", sets[s].in, sets[s].out,
		             out, (gpu_tol){0, true});
		if (!A || !B || !ea || !eb) {
			step_failed("tc", "out of memory");
			goto next;
		}
		if (emu_tc_preset("h200-mma", in, out, &m)) {
			step_failed("tc", "no h200-mma preset for this pair");
			goto next;
		}
		for (size_t g0 = 0; g0 < v.n; g0 += 8) {
			size_t ng = v.n - g0 < 8 ? v.n - g0 : 8;
			memset(A, 0, 16 * K * sizeof *A);
			memset(B, 0, 8 * K * sizeof *B);
			memset(C, 0, sizeof C);
			for (size_t j = 0; j < ng; j++) {
				size_t i = g0 + j;
				for (size_t k = 0; k < K; k++) {
					A[j * K + k] = enc_of(in, v.a[i * K + k]);
					B[j * K + k] = enc_of(in, v.b[i * K + k]);
				}
				uint32_t c = with_c ? v.c[i] : 0;
				if (acc16)
					c = emu_convert(out, f32, c, &env_rne).bits;
				C[j * 8 + j] = c;
			}
			if (gpu_dev_mma(gfmt(in), acc16, A, B, C, 16, 8, K, 0, D, err,
			                sizeof err)) {
				step_failed("tc", err);
				goto next;
			}
			for (size_t j = 0; j < ng; j++) {
				size_t i = g0 + j;
				for (size_t k = 0; k < K; k++) {
					ea[k] = A[j * K + k];
					eb[k] = B[j * K + k];
				}
				uint32_t c = with_c ? v.c[i] : 0;
				emu_bits want = emu_tc_dot(&m, in, out, ea, eb, K, c).bits;
				gpu_cmp_one(&vs_model, i, i, D[j * 8 + j], want);
				emu_bits hw =
				    acc16 ? emu_convert(out, f32, v.d[i], &env_rne).bits : v.d[i];
				gpu_cmp_one(&vs_hw, i, i, D[j * 8 + j], hw);
			}
		}
		add_row(&vs_model);
		add_row(&vs_hw);
	next:
		free(A);
		free(B);
		free(ea);
		free(eb);
		gpu_tcv_free(&v);
	}
}

/* ---- rules: the disputed Tensor Core rules, one mma.sync a case ----
 * Each case of gpu/tc-rules.txt alone in a 16×8 tile (row 0, column 0; every
 * other element 0), C in the output format, one mma.sync (K = 16, or 32 for
 * fp8). Each case's row compares with the h200-mma model; the note and
 * DIR/tc-rules.csv say which reading (the model's or the rival one's) the
 * hardware returned, which is the finding. */
static void step_rules(const gpu_opts *o)
{
	gpu_rule *rs = NULL;
	size_t n = 0;
	if (gpu_rules_load(o->tc_rules, &rs, &n, err, sizeof err)) {
		step_failed("rules", err);
		return;
	}
	char path[300], tmp[320];
	if (snprintf(path, sizeof path, "%s/tc-rules.csv", o->out_dir) >= (int)sizeof path) {
		step_failed("rules", "--out: the directory name is too long");
		free(rs);
		return;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *csv = fopen(tmp, "w");
	if (!csv) {
		snprintf(err, sizeof err, "cannot write %s: %s", tmp, strerror(errno));
		step_failed("rules", err);
		free(rs);
		return;
	}
	fprintf(csv, "case,in,out,gpu,model,other,reading\n");
	gpu_report_note(&rep,
	                "rules: each case of %s on one mma.sync; the reading the GPU "
	                "returned (the h200-mma model's, the other one's, both or neither):",
	                o->tc_rules);
	const emu_format *f32 = fmt("fp32");
	uint16_t A[16 * GPU_RULE_K_MAX], B[8 * GPU_RULE_K_MAX];
	uint32_t C[16 * 8], D[16 * 8];
	for (size_t i = 0; i < n; i++) {
		const gpu_rule *r = &rs[i];
		bool acc16 = r->out->bits == 16;
		char pair[2 * sizeof r->in->name + 2];
		gpu_cmp row;
		snprintf(pair, sizeof pair, "%s->%s", r->in->name, r->out->name);
		gpu_cmp_init(&row, "rules", "mma.sync vs model h200-mma", pair, r->name, r->out,
		             (gpu_tol){0, false});
		memset(A, 0, sizeof A);
		memset(B, 0, sizeof B);
		memset(C, 0, sizeof C);
		for (size_t k = 0; k < r->K; k++) {
			A[k] = (uint16_t)r->a[k];
			B[k] = (uint16_t)r->b[k];
		}
		C[0] = acc16 ? (uint32_t)emu_convert(r->out, f32, r->c, &env_rne).bits : r->c;
		if (gpu_dev_mma(gfmt(r->in), acc16, A, B, C, 16, 8, r->K, 0, D, err, sizeof err)) {
			step_failed("rules", err);
			break;
		}
		emu_tc_model m;
		if (emu_tc_preset("h200-mma", r->in, r->out, &m)) {
			step_failed("rules", "no h200-mma preset for this pair");
			break;
		}
		emu_bits got = acc16 ? (D[0] & 0xffffu) : D[0];
		emu_bits want = emu_tc_dot(&m, r->in, r->out, r->a, r->b, r->K, r->c).bits;
		gpu_cmp_one(&row, i, i, got, want);
		const char *reading = gpu_rule_reading(r, got);
		int w = acc16 ? 4 : 8;
		char ms[16];
		if (r->has_other)
			snprintf(ms, sizeof ms, "0x%0*" PRIx64, w, (uint64_t)r->other);
		else
			snprintf(ms, sizeof ms, "-");
		fprintf(csv, "%s,%s,%s,0x%0*" PRIx64 ",0x%0*" PRIx64 ",%s,%s\n", r->name,
		        r->in->name, r->out->name, w, (uint64_t)got, w, (uint64_t)r->model, ms,
		        reading);
		gpu_report_note(&rep,
		                "rules: %-18s %s->%s: GPU 0x%0*" PRIx64 ", model 0x%0*" PRIx64
		                ", other %s: %s",
		                r->name, r->in->name, r->out->name, w, (uint64_t)got, w,
		                (uint64_t)r->model, ms, reading);
		add_row(&row);
	}
	if (fclose(csv) != 0 || rename(tmp, path) != 0) {
		snprintf(err, sizeof err, "cannot write %s: %s", path, strerror(errno));
		step_failed("rules", err);
		remove(tmp);
	}
	free(rs);
}

/* A random normal encoding of in with a small exponent (no overflow in K ≤ 4096 sums). */
static uint16_t rnd_enc(const emu_format *in, uint64_t r)
{
	uint32_t e = (uint32_t)(in->bias - 3 + (int)((r >> 8) % 5));
	uint32_t man = (uint32_t)(r >> 20) & in->man_mask;
	uint32_t s = (r & 1) ? in->sign_mask : 0;
	return (uint16_t)(s | (e << (in->p - 1)) | man);
}

/* D (M×N) of a GEMM against the Tensor Core model m, in natural K order. */
static void cmp_gemm(gpu_cmp *row, const emu_tc_model *m, const emu_format *in,
                     const emu_format *in_b, const emu_format *out, const uint16_t *A,
                     const uint16_t *B, size_t M, size_t N, size_t K, const uint32_t *D,
                     double scale)
{
	const emu_format *f32 = emu_format_by_name("fp32");
#pragma omp parallel
	{
		gpu_cmp mine = gpu_cmp_blank(row);
		emu_bits *ea = malloc(K * sizeof *ea), *eb = malloc(K * sizeof *eb);
#pragma omp for schedule(dynamic, 4)
		for (size_t ij = 0; ij < M * N; ij++) {
			size_t i = ij / N, j = ij % N;
			if (!ea || !eb)
				continue;
			for (size_t k = 0; k < K; k++) {
				ea[k] = A[i * K + k];
				eb[k] = B[j * K + k];
			}
			emu_bits w = emu_tc_dot2(m, in, in_b, out, ea, eb, K, 0).bits;
			if (scale != 1.0) /* a power of two: exact unless out of range */
				w = emu_from_double(f32, emu_decode(f32, w) * scale, &env_rne).bits;
			gpu_cmp_one(&mine, ij, (uint64_t)i << 32 | j, D[ij], w);
		}
		free(ea);
		free(eb);
#pragma omp critical
		gpu_cmp_merge(row, &mine);
	}
}

/* ---- gemm: our mma.sync GEMM, known K order, with and without promotion ---- */
static void step_gemm(const gpu_opts *o)
{
	static const struct {
		const char *in, *out;
		size_t K, promote;
	} runs[] = {{"fp16", "fp32", 1024, 0},   {"fp16", "fp32", 1024, 128},
	            {"bf16", "fp32", 1024, 0},   {"bf16", "fp32", 1024, 128},
	            {"fp16", "fp16", 256, 0},    {"e4m3", "fp32", 1024, 0},
	            {"e4m3", "fp32", 1024, 128}, {"e5m2", "fp32", 1024, 0},
	            {"e5m2", "fp32", 1024, 128}, {"e4m3", "fp16", 256, 0}};
	const size_t M = o->quick ? 16 : 64, N = M;
	for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
		const emu_format *in = fmt(runs[r].in), *out = fmt(runs[r].out);
		size_t K = runs[r].K;
		uint16_t *A = malloc(M * K * sizeof *A), *B = malloc(N * K * sizeof *B);
		uint32_t *C = calloc(M * N, sizeof *C), *D = malloc(M * N * sizeof *D);
		emu_tc_model m;
		char mode[48];
		if (!A || !B || !C || !D) {
			step_failed("gemm", "out of memory");
			goto next;
		}
		for (size_t i = 0; i < M * K; i++)
			A[i] = rnd_enc(in, rnd(o->seed, 100 + r, i));
		for (size_t i = 0; i < N * K; i++)
			B[i] = rnd_enc(in, rnd(o->seed, 200 + r, i));
		if (emu_tc_preset("h200-mma", in, out, &m)) {
			step_failed("gemm", "no h200-mma preset");
			goto next;
		}
		m.promote_every = runs[r].promote;
		if (gpu_dev_mma(gfmt(in), out->bits == 16, A, B, C, M, N, K, runs[r].promote, D,
		                err, sizeof err)) {
			step_failed("gemm", err);
			goto next;
		}
		snprintf(mode, sizeof mode, "->%s K=%zu promote=%zu", runs[r].out, K,
		         runs[r].promote);
		gpu_cmp row;
		gpu_cmp_init(&row, "gemm", "mma.sync vs model h200-mma", runs[r].in, mode, out,
		             (gpu_tol){0, true});
		cmp_gemm(&row, &m, in, in, out, A, B, M, N, K, D, 1.0);
		add_row(&row);
	next:
		free(A);
		free(B);
		free(C);
		free(D);
	}
}

/* ---- gemmex: cuBLAS fp16 GEMM against the model in natural K order ---- */
static void step_gemmex(const gpu_opts *o)
{
	const size_t M = o->quick ? 16 : 64, N = M, K = 1024;
	const emu_format *in = fmt("fp16");
	uint16_t *A = malloc(M * K * sizeof *A), *B = malloc(N * K * sizeof *B);
	uint32_t *D = malloc(M * N * sizeof *D);
	if (!A || !B || !D) {
		step_failed("gemmex", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < M * K; i++)
		A[i] = rnd_enc(in, rnd(o->seed, 300, i));
	for (size_t i = 0; i < N * K; i++)
		B[i] = rnd_enc(in, rnd(o->seed, 301, i));
	for (int c16 = 0; c16 < 2; c16++) {
		const emu_format *out = fmt(c16 ? "fp16" : "fp32");
		emu_tc_model m;
		if (gpu_dev_gemmex(c16, A, B, M, N, K, D, err, sizeof err)) {
			step_failed("gemmex", err);
			continue;
		}
		if (emu_tc_preset("h200", in, out, &m)) {
			step_failed("gemmex", "no h200 preset");
			continue;
		}
		gpu_cmp row;
		gpu_cmp_init(&row, "gemmex",
		             c16 ? "cublasGemmEx COMPUTE_16F" : "cublasGemmEx COMPUTE_32F", "fp16",
		             "vs model h200 K order 0..K-1", out, (gpu_tol){0, true});
		cmp_gemm(&row, &m, in, in, out, A, B, M, N, K, D, 1.0);
		add_row(&row);
	}
	gpu_report_note(&rep, "gemmex: cuBLAS picks its own K order and split; a mismatch against "
	                      "the natural order is a measurement, not an emulator error");
out:
	free(A);
	free(B);
	free(D);
}

/* ---- lt: cuBLASLt FP8 on inputs that reveal the promotion interval ----
 * Row i of A holds one large value (448, the largest e4m3) at a
 * row-dependent position and 2^-6 elsewhere; B's column j holds 2^-(j%4).
 * The ratio, about 2^14.8, exceeds the 13 fraction bits an FP8 chain keeps
 * below its largest exponent, so every small product that meets the large
 * one in a chain is chopped away, while chunks promoted to binary32 apart
 * from it keep theirs: how much survives says where the promotions fell.
 * The positions (97·i + 13 mod K) fall at different offsets inside every
 * candidate interval, so the candidates give different sums. Each candidate
 * is one row of the report. */
static void step_lt(const gpu_opts *o)
{
	const size_t M = o->quick ? 16 : 64, N = 16, K = 4096;
	static const size_t cand[] = {0, 32, 64, 128, 256, 512, 1024};
	const float sa = 1.0f, sb = 2.0f;
	const emu_format *e4 = fmt("e4m3"), *f32 = fmt("fp32");
	uint16_t *A = malloc(M * K * sizeof *A), *B = malloc(N * K * sizeof *B);
	uint8_t *A8 = malloc(M * K), *B8 = malloc(N * K);
	uint32_t *D = malloc(M * N * sizeof *D);
	if (!A || !B || !A8 || !B8 || !D) {
		step_failed("lt", "out of memory");
		goto out;
	}
	for (int bf = 0; bf < 2; bf++) {
		const emu_format *bfmt = fmt(bf ? "e5m2" : "e4m3");
		for (size_t i = 0; i < M; i++)
			for (size_t k = 0; k < K; k++) {
				bool big = k == (i * 97 + 13) % K;
				A[i * K + k] =
				    (uint16_t)emu_from_double(e4, big ? 448.0 : 0x1p-6, &env_rne)
				        .bits;
				A8[i * K + k] = (uint8_t)A[i * K + k];
			}
		for (size_t j = 0; j < N; j++)
			for (size_t k = 0; k < K; k++) {
				B[j * K + k] = (uint16_t)emu_from_double(
				                   bfmt, ldexp(1.0, -(int)(j % 4)), &env_rne)
				                   .bits;
				B8[j * K + k] = (uint8_t)B[j * K + k];
			}
		for (int fast = 0; fast < 2; fast++) {
			char kern[40];
			snprintf(kern, sizeof kern, "cublasLt e4m3x%s FAST_ACCUM=%d",
			         bf ? "e5m2" : "e4m3", fast);
			int splitk = 0;
			if (gpu_dev_lt_fp8(bf ? GPU_E5M2 : GPU_E4M3, fast, A8, B8, M, N, K, sa, sb,
			                   D, &splitk, err, sizeof err)) {
				step_failed("lt", err);
				continue;
			}
			gpu_report_note(
			    &rep, "lt %s: cuBLASLt algorithm with SPLITK_NUM %d%s", kern, splitk,
			    splitk == 1 ? "" : " (K is split or unknown: no candidate may match)");
			for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++) {
				emu_tc_model m;
				char mode[48];
				/* the preset of the input pair: e4m3 stands for both FP8 formats */
				if (emu_tc_preset("h200", e4, f32, &m)) {
					step_failed("lt", "no h200 fp8 preset");
					break;
				}
				m.promote_every = cand[c];
				snprintf(mode, sizeof mode, "model promote=%zu", cand[c]);
				gpu_cmp row;
				gpu_cmp_init(&row, "lt", kern, bf ? "e4m3xe5m2" : "e4m3xe4m3", mode,
				             f32, (gpu_tol){0, true});
				/* mixed inputs: A in e4m3, B in its own format (emu_tc_dot2) */
				cmp_gemm(&row, &m, e4, bfmt, f32, A, B, M, N, K, D,
				         (double)sa * sb);
				add_row(&row);
			}
		}
	}
	gpu_report_note(&rep,
	                "lt: the candidate whose row is all identical is the promotion "
	                "interval cuBLASLt used for this shape (M %zu N %zu K %zu)",
	                M, N, K);
out:
	free(A);
	free(B);
	free(A8);
	free(B8);
	free(D);
}

/* ---- kern: the training kernels of gpu/rows.h in the emulator's order of operations ---- */
static gpu_kfmt kfmt(const emu_format *f)
{
	return f->bits == 32 ? GPU_K_F32 : f->p == 11 ? GPU_K_F16 : GPU_K_BF16;
}

/* One row per output the emulator produced that the GPU produced too. */
typedef struct {
	const char *name;
	const float *v;
	size_t n;
} kern_out;

/* The engine's kernel on the fast backend, the reference of a kern row; false
 * (the step marked failed, er freed) when it cannot run. */
static bool kern_engine(const emu_kernel *k, const emu_policy *pol, const char *variant,
                        const emu_kin *in, emu_run *er)
{
	char err[256];
	if (emu_run_kernel(k, pol, variant, in, EMU_BE_FAST, er, err, sizeof err) == 0)
		return true;
	emu_run_free(er);
	step_failed("kern", err);
	return false;
}

/* The second pass of step_kern: fp32's exp, log and log1p correctly rounded
 * on the GPU, so its rows must be identical (and are tagged "cr-fp32"). */
static bool kern_cr;

static void kern_compare(const char *kname, const char *fmts, const emu_run *er,
                         const kern_out *outs, size_t nouts)
{
	char tagged[64];
	snprintf(tagged, sizeof tagged, "%s%s", kname, kern_cr ? " cr-fp32" : "");
	for (int k = 0; k < er->out.n; k++) {
		const emu_kout_item *it = &er->out.item[k];
		const kern_out *g = NULL;
		for (size_t i = 0; i < nouts; i++)
			if (!strcmp(outs[i].name, it->name))
				g = &outs[i];
		if (!g)
			continue;
		if (it->n != g->n) {
			step_failed("kern", "unexpected output size");
			continue;
		}
		/* the approximate exp, log and rsqrt of fp16/bf16 (FACTS §2), expf
		 * and logf: 2 ulp; none in the cr-fp32 pass */
		gpu_cmp row;
		gpu_cmp_init(&row, "kern", tagged, fmts, it->name, it->fmt,
		             (gpu_tol){kern_cr ? 0 : 2, true});
		for (size_t i = 0; i < it->n; i++)
			gpu_cmp_one(&row, i, i, emu_from_float(it->fmt, g->v[i], &env_rne).bits,
			            emu_encode(it->fmt, emu_kout_d(NULL, it, i)));
		add_row(&row);
	}
}

/* GPU outputs against gpu/rows.h on the host with the GPU's tables: exact. */
static void kern_replay(const char *kname, const char *fmts, const kern_out *g, const kern_out *m,
                        const emu_format *const *f, size_t n)
{
	char name[64];
	snprintf(name, sizeof name, "%s replay%s", kname, kern_cr ? " cr-fp32" : "");
	for (size_t k = 0; k < n; k++) {
		gpu_cmp row;
		gpu_cmp_init(&row, "kern", name, fmts, g[k].name, f[k], (gpu_tol){0, true});
		for (size_t i = 0; i < g[k].n; i++)
			gpu_cmp_one(&row, i, i, emu_from_float(f[k], g[k].v[i], &env_rne).bits,
			            emu_from_float(f[k], m[k].v[i], &env_rne).bits);
		add_row(&row);
	}
}

/* The tables to replay: --gpu-tables, else OUT/gpu-tables.txt when present. */
static bool kern_tables(const gpu_opts *o, gpu_tables *t)
{
	char path[700];
	const char *p = o->gpu_tables;
	if (!p) {
		snprintf(path, sizeof path, "%s/gpu-tables.txt", o->out_dir);
		FILE *fp = fopen(path, "r");
		if (!fp) {
			gpu_report_note(&rep, "kern: no replay rows: no --gpu-tables and no %s",
			                path);
			return false;
		}
		fclose(fp);
		p = path;
	}
	if (gpu_tables_load(p, t, err, sizeof err)) {
		step_failed("kern", err);
		return false;
	}
	gpu_report_note(&rep, "kern: replay rows use the tables in %s", p);
	return true;
}

/* backward.c's generator of W: SplitMix64 of seed ⊕ i·φ (the same formula) */
static uint64_t bw_mix(uint64_t seed, uint64_t i)
{
	uint64_t z = seed ^ (i * 0x9e3779b97f4a7c15ull);
	z += 0x9e3779b97f4a7c15ull;
	return emu_mix64(z);
}

/* backward at loss scales 1 and 2^16 (fp16 gradients overflow at the
 * second on some elements, and underflow at the first) */
static void kern_backward(const gpu_opts *o, const emu_policy *pol, const char *fmts,
                          const gpu_tables *tabs)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const emu_format *f32 = fmt("fp32");
	const size_t R = o->quick ? 16 : 64, D = o->quick ? 32 : 128, K = 8, G = D * K + R * D;
	double *x = malloc(R * D * sizeof *x);
	float *xs = malloc(R * D * sizeof *xs), *ws = malloc(D * K * sizeof *ws);
	float *grad = malloc(G * sizeof *grad), *un = malloc(G * sizeof *un);
	float *mgrad = malloc(G * sizeof *mgrad), *mun = malloc(G * sizeof *mun);
	if (!x || !xs || !ws || !grad || !un || !mgrad || !mun) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < R * D; i++) {
		x[i] = ((double)(rnd(o->seed, 500, i) >> 40) * 0x1p-24 - 0.5) * 4.0;
		xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol->env).bits);
	}
	for (size_t i = 0; i < D * K; i++) {
		double wd =
		    (1 / sqrt((double)D)) * ((double)(bw_mix(o->seed, i) >> 11) * 0x1p-52 - 1);
		ws[i] = (float)emu_decode(S, emu_from_double(S, wd, &pol->env).bits);
	}
	for (int sc = 0; sc < 2; sc++) {
		double scale = sc ? 65536.0 : 1.0;
		float inv = (float)emu_decode(f32, emu_from_double(f32, 1 / scale, &env_rne).bits);
		float loss, found;
		emu_kparam par = {"scale", scale};
		emu_kin in = {x, R, D, &par, 1, o->seed, NULL, 0};
		emu_run er;
		char kname[40];
		snprintf(kname, sizeof kname, "backward scale=%g", scale);
		if (gpu_dev_backward(kfmt(S), kfmt(C), kfmt(A), xs, ws, R, D, K, (float)scale, inv,
		                     grad, un, &loss, &found, err, sizeof err)) {
			step_failed("kern", err);
			continue;
		}
		if (!kern_engine(&emu_kernel_backward, pol, "maxsub", &in, &er))
			continue;
		kern_out outs[] = {{"loss", &loss, 1},
		                   {"dW", un, D * K},
		                   {"dX", un + D * K, R * D},
		                   {"found_inf", &found, 1},
		                   {"grad", grad, G}};
		kern_compare(kname, fmts, &er, outs, 5);
		emu_run_free(&er);
		float mloss, mfound;
		if (tabs && gpu_rows_backward(tabs, kfmt(S), kfmt(C), kfmt(A), xs, ws, R, D, K,
		                              (float)scale, inv, mgrad, mun, &mloss, &mfound, err,
		                              sizeof err)) {
			step_failed("kern", err);
		} else if (tabs) {
			kern_out mo[] = {{"loss", &mloss, 1},
			                 {"dW", mun, D * K},
			                 {"dX", mun + D * K, R * D},
			                 {"found_inf", &mfound, 1},
			                 {"grad", mgrad, G}};
			const emu_format *f[] = {A, f32, f32, f32, S};
			kern_replay(kname, fmts, outs, mo, f, 5);
		}
	}
out:
	free(x);
	free(xs);
	free(ws);
	free(grad);
	free(un);
	free(mgrad);
	free(mun);
}

/* rmsnorm (its defaults: eps 1e-6, g = 1, dy = ±1 from the seed) on
 * layernorm's rows, and bce on logits uniform in ±(1 + r mod 4), each
 * variant against the fast backend, and replayed with the GPU's tables where
 * they hold every approximate function the variant calls (not bce stable's
 * log1p). bce's loss is the mean of every element, so one NaN term hides the
 * rest: within ±4 even bf16's 1 + exp(−x) stays above 1, every naive term
 * is finite, and the loss row proves the order of the sum too. */
static void kern_norm_bce(const gpu_opts *o, const emu_policy *pol, const char *fmts,
                          const gpu_tables *rt, const double *xl, const float *xls,
                          const float *dys, const float *ty, size_t R, size_t N)
{
	static const char *const rn_var[] = {"plain", "prescaled", "fp32stats"};
	static const char *const bce_var[] = {"naive", "stable"};
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const emu_format *f32 = fmt("fp32");
	float *y = malloc(R * N * sizeof *y), *dx = malloc(R * N * sizeof *dx);
	float *my = malloc(R * N * sizeof *my), *mdx = malloc(R * N * sizeof *mdx);
	float *rs = malloc(R * sizeof *rs), *ms = malloc(R * sizeof *ms);
	float *mrs = malloc(R * sizeof *mrs), *mms = malloc(R * sizeof *mms);
	float *dg = malloc(N * sizeof *dg), *mdg = malloc(N * sizeof *mdg);
	double *x = malloc(R * N * sizeof *x);
	float *xs = malloc(R * N * sizeof *xs);
	float gs = (float)emu_decode(S, emu_from_double(S, 1.0, &pol->env).bits);
	if (!y || !dx || !my || !mdx || !rs || !ms || !mrs || !mms || !dg || !mdg || !x || !xs) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t r = 0; r < R; r++)
		for (size_t j = 0; j < N; j++) {
			double u = (double)(rnd(o->seed, 410, r * N + j) >> 40) * 0x1p-24;
			x[r * N + j] = (u - 0.5) * 2.0 * (double)(1 + r % 4);
			xs[r * N + j] =
			    (float)emu_decode(S, emu_from_double(S, x[r * N + j], &pol->env).bits);
		}
	for (int v = 0; v < 3; v++) {
		char kname[40];
		emu_run er;
		const emu_format *SC = v == 2 ? f32 : C; /* fp32stats: statistics in fp32 */
		float epsc = (float)emu_decode(SC, emu_from_double(SC, 1e-6, &pol->env).bits);
		snprintf(kname, sizeof kname, "rmsnorm %s", rn_var[v]);
		emu_kin in = {xl, R, N, NULL, 0, o->seed, NULL, 0};
		if (gpu_dev_rmsnorm(v, kfmt(S), kfmt(C), kfmt(A), xls, dys, R, N, epsc, gs, y, dx,
		                    rs, ms, dg, err, sizeof err)) {
			step_failed("kern", err);
			continue;
		}
		if (!kern_engine(&emu_kernel_rmsnorm, pol, rn_var[v], &in, &er))
			continue;
		kern_out outs[] = {{"y", y, R * N},
		                   {"dx", dx, R * N},
		                   {"rstd", rs, R},
		                   {"ms", ms, R},
		                   {"dg", dg, N}};
		kern_compare(kname, fmts, &er, outs, 5);
		emu_run_free(&er);
		if (rt && gpu_rows_rmsnorm(rt, v, kfmt(S), kfmt(C), kfmt(A), xls, dys, R, N, epsc,
		                           gs, my, mdx, mrs, mms, mdg, err, sizeof err)) {
			step_failed("kern", err);
		} else if (rt) {
			kern_out mo[] = {{"y", my, R * N},
			                 {"dx", mdx, R * N},
			                 {"rstd", mrs, R},
			                 {"ms", mms, R},
			                 {"dg", mdg, N}};
			const emu_format *f[] = {S, S, SC, SC, A};
			kern_replay(kname, fmts, outs, mo, f, 5);
		}
	}
	for (int v = 0; v < 2; v++) {
		char kname[40];
		emu_run er;
		float loss, mloss;
		snprintf(kname, sizeof kname, "bce %s", bce_var[v]);
		emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
		if (gpu_dev_bce(v, kfmt(S), kfmt(C), kfmt(A), xs, ty, R, N, y, &loss, err,
		                sizeof err)) {
			step_failed("kern", err);
			continue;
		}
		if (!kern_engine(&emu_kernel_bce, pol, bce_var[v], &in, &er))
			continue;
		kern_out outs[] = {{"grad", y, R * N}, {"loss", &loss, 1}};
		kern_compare(kname, fmts, &er, outs, 2);
		emu_run_free(&er);
		if (rt && v == 0 &&
		    gpu_rows_bce(rt, v, kfmt(S), kfmt(C), kfmt(A), xs, ty, R, N, my, &mloss, err,
		                 sizeof err)) {
			step_failed("kern", err);
		} else if (rt && v == 0) {
			kern_out mo[] = {{"grad", my, R * N}, {"loss", &mloss, 1}};
			const emu_format *f[] = {S, A};
			kern_replay(kname, fmts, outs, mo, f, 2);
		}
	}
out:
	free(x);
	free(xs);
	free(y);
	free(dx);
	free(my);
	free(mdx);
	free(rs);
	free(ms);
	free(mrs);
	free(mms);
	free(dg);
	free(mdg);
}

/* matmul seq (fma 0 and 1), A·B with the input's default shape (A the
 * first ⌈R/2⌉ rows, B the rest, k = N) on values uniform in ±2, against
 * the fast backend: acc and c. No replay: it calls no approximate
 * function, so the tables change nothing. */
static void kern_matmul(const gpu_opts *o, const emu_policy *pol, const char *fmts, size_t R,
                        size_t N)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const size_t m = (R + 1) / 2, n = R - m, k = N;
	double *x = malloc(R * N * sizeof *x);
	float *xs = malloc(R * N * sizeof *xs);
	float *acc = malloc(m * n * sizeof *acc), *c = malloc(m * n * sizeof *c);
	if (!x || !xs || !acc || !c) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < R * N; i++) {
		x[i] = ((double)(rnd(o->seed, 420, i) >> 40) * 0x1p-24 - 0.5) * 4.0;
		xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol->env).bits);
	}
	for (int fma = 0; fma < 2; fma++) {
		char kname[40];
		emu_run er;
		emu_kparam par = {"fma", fma};
		emu_kin in = {x, R, N, &par, 1, o->seed, NULL, 0};
		snprintf(kname, sizeof kname, fma ? "matmul seq fma=1" : "matmul seq");
		if (gpu_dev_matmul(fma, kfmt(S), kfmt(C), kfmt(A), xs, m, n, k, acc, c, err,
		                   sizeof err)) {
			step_failed("kern", err);
			continue;
		}
		if (!kern_engine(&emu_kernel_matmul, pol, "seq", &in, &er))
			continue;
		kern_out outs[] = {{"acc", acc, m * n}, {"c", c, m * n}};
		kern_compare(kname, fmts, &er, outs, 2);
		emu_run_free(&er);
	}
out:
	free(x);
	free(xs);
	free(acc);
	free(c);
}

/* matmul tc with the h200 model (variant "tc:h200"): gpu/mma.cu's mma.sync
 * GEMM, its K order fixed, then gpu/rows.h's store into S, on the first
 * min(R, 64) rows of kern_matmul's input in its default shape (A m×k
 * row-major; B, k×n there, laid out n×k for the GEMM: at full size 32×512
 * by 512×32, since the engine's Tensor Core model takes ~6 s a policy on
 * the whole 128×512 by 512×128), against the fast backend: acc (the Tensor Core's
 * output format: the accumulator format, fp16 or fp32) and c. Only where
 * the storage format is fp16 or bf16: mma.sync takes no fp32 operands. */
static void kern_matmul_tc(const gpu_opts *o, const emu_policy *pol, const char *fmts, size_t Rall,
                           size_t N)
{
	const emu_format *S = &pol->storage, *A = &pol->accum;
	const size_t R = Rall < 64 ? Rall : 64, m = (R + 1) / 2, n = R - m, k = N;
	bool s16 = S->bits == 16 && (S->p == 11 || S->p == 8);
	bool o16 = A->bits == 16 && A->p == 11 && S->p == 11, o32 = A->bits == 32;
	if (!s16 || !(o16 || o32)) {
		gpu_report_note(&rep,
		                "kern: no matmul tc:h200 row for %s (mma.sync takes fp16 or "
		                "bf16 operands into an fp32, or fp16's fp16, accumulator)",
		                fmts);
		return;
	}
	double *x = malloc(R * N * sizeof *x);
	uint16_t *a = malloc(m * k * sizeof *a), *bt = malloc(n * k * sizeof *bt);
	float *acc = malloc(m * n * sizeof *acc), *c = malloc(m * n * sizeof *c);
	emu_run er;
	emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
	if (!x || !a || !bt || !acc || !c) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < R * N; i++) /* kern_matmul's values */
		x[i] = ((double)(rnd(o->seed, 420, i) >> 40) * 0x1p-24 - 0.5) * 4.0;
	for (size_t i = 0; i < m * k; i++)
		a[i] = (uint16_t)emu_from_double(S, x[i], &pol->env).bits;
	for (size_t l = 0; l < k; l++)
		for (size_t j = 0; j < n; j++)
			bt[j * k + l] =
			    (uint16_t)emu_from_double(S, x[m * k + l * n + j], &pol->env).bits;
	if (gpu_dev_matmul_tc(kfmt(S), kfmt(&pol->compute), o16 ? GPU_K_F16 : GPU_K_F32, a, bt, m,
	                      n, k, acc, c, err, sizeof err)) {
		step_failed("kern", err);
		goto out;
	}
	if (!kern_engine(&emu_kernel_matmul, pol, "tc:h200", &in, &er))
		goto out;
	kern_out outs[] = {{"acc", acc, m * n}, {"c", c, m * n}};
	kern_compare("matmul tc:h200", fmts, &er, outs, 2);
	emu_run_free(&er);
out:
	free(x);
	free(a);
	free(bt);
	free(acc);
	free(c);
}

/* batchnorm twopass and welford (training; its defaults: eps 1e-5, gamma
 * 1, beta 0, momentum 0.1, running statistics 0 and 1, dy = ±1 from the
 * seed, as layernorm's), and eval (inference with those running statistics) on R samples of N
 * channels, channel c around 0, 4, 300 or 2000 by c mod 4 with spread ±1, against the fast backend.
 * No replay: its sqrt is correctly rounded on the GPU, nothing to look up. */
static void kern_batchnorm(const gpu_opts *o, const emu_policy *pol, const char *fmts,
                           const float *dys, size_t R, size_t N)
{
	static const char *const bn_var[] = {"twopass", "welford", "eval"};
	static const double off[4] = {0, 4, 300, 2000};
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const double cd[6] = {1e-5, 1, 0, 0.1, 0, 1};
	float cst[6];
	double *x = malloc(R * N * sizeof *x);
	float *xs = malloc(R * N * sizeof *xs), *y = malloc(R * N * sizeof *y),
	      *dx = malloc(R * N * sizeof *dx), *ch = malloc(6 * N * sizeof *ch);
	if (!x || !xs || !y || !dx || !ch) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (int i = 0; i < 6; i++)
		cst[i] = (float)emu_decode(C, emu_from_double(C, cd[i], &pol->env).bits);
	for (size_t i = 0; i < R * N; i++) {
		double u = (double)(rnd(o->seed, 430, i) >> 40) * 0x1p-24;
		x[i] = off[(i % N) % 4] + (u - 0.5) * 2.0;
		xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol->env).bits);
	}
	for (int v = 0; v < 3; v++) {
		char kname[40];
		emu_run er;
		emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
		snprintf(kname, sizeof kname, "batchnorm %s", bn_var[v]);
		if (gpu_dev_batchnorm(v, kfmt(S), kfmt(C), kfmt(A), xs, dys, R, N, cst, y, dx, ch,
		                      ch + N, ch + 2 * N, ch + 3 * N, ch + 4 * N, ch + 5 * N, err,
		                      sizeof err)) {
			step_failed("kern", err);
			continue;
		}
		if (!kern_engine(&emu_kernel_batchnorm, pol, bn_var[v], &in, &er))
			continue;
		kern_out outs[] = {{"y", y, R * N},
		                   {"dx", dx, R * N},
		                   {"mean", ch, N},
		                   {"var", ch + N, N},
		                   {"running_mean", ch + 2 * N, N},
		                   {"running_var", ch + 3 * N, N},
		                   {"dgamma", ch + 4 * N, N},
		                   {"dbeta", ch + 5 * N, N}};
		kern_compare(kname, fmts, &er, outs, 8);
		emu_run_free(&er);
	}
out:
	free(x);
	free(xs);
	free(y);
	free(dx);
	free(ch);
}

/* β^t in binary64, correctly rounded (emu/kernels/optimizer.c's pow_d) */
static double opt_pow(double b, double t)
{
	mpfr_t x, y;
	mpfr_inits2(53, x, y, (mpfr_ptr)0);
	mpfr_set_d(x, b, MPFR_RNDN);
	mpfr_set_d(y, t, MPFR_RNDN);
	mpfr_pow(x, x, y, MPFR_RNDN);
	double r = mpfr_get_d(x, MPFR_RNDN);
	mpfr_clears(x, y, (mpfr_ptr)0);
	return r;
}

/* The step ids of emu/kernels/optimizer.c's two stores of the weights (its
 * S_DECAY_STORE and S_STORE), whose SR draws adamw_sr keys by: checked by
 * name against the engine's run, so a renumbering fails the step loudly. */
#define OPT_STEP_DECAY_STORE (EMU_STEP0 + 22)
#define OPT_STEP_STORE (EMU_STEP0 + 49)

/* adamw_kahan and adamw_sr on kern_optimizer's weights, gradients and
 * scalars (k with −lr·wd after the steps'), SR keyed by the policy's seed,
 * against the fast backend: w, m and v. w, m and vv are scratch. */
static void kern_adamw_ext(const emu_policy *pol, const char *fmts, uint64_t seed, const double *x,
                           const float *xs, size_t R, size_t N, unsigned NS, const float *gs,
                           const float *k, float *w, float *m, float *vv)
{
	static const char *const ext_var[] = {"adamw_kahan", "adamw_sr"};
	const emu_format *S = &pol->storage, *C = &pol->compute, *G = &pol->grad, *T = &pol->state;
	const size_t n = R * N;
	for (int v = 0; v < 2; v++) {
		char kname[40];
		emu_run er;
		emu_kin in = {x, R, N, NULL, 0, seed, NULL, 0};
		snprintf(kname, sizeof kname, "optimizer %s", ext_var[v]);
		memcpy(w, xs, n * sizeof *w);
		if (gpu_dev_adamw_ext(v, kfmt(S), kfmt(C), kfmt(G), kfmt(T), gs, n, NS, k,
		                      pol->env.seed, OPT_STEP_DECAY_STORE, OPT_STEP_STORE, w, m, vv,
		                      err, sizeof err)) {
			step_failed("kern", err);
			continue;
		}
		if (!kern_engine(&emu_kernel_optimizer, pol, ext_var[v], &in, &er))
			continue;
		if (strcmp(emu_step_name(&er.be, OPT_STEP_DECAY_STORE), "decay_store") ||
		    strcmp(emu_step_name(&er.be, OPT_STEP_STORE), "store")) {
			step_failed("kern",
			            "optimizer adamw_sr: emu/kernels/optimizer.c's store steps are "
			            "no longer the runner's OPT_STEP_DECAY_STORE and "
			            "OPT_STEP_STORE");
			emu_run_free(&er);
			continue;
		}
		kern_out outs[] = {{"w", w, n}, {"m", m, n}, {"v", vv, n}};
		kern_compare(kname, fmts, &er, outs, 3);
		emu_run_free(&er);
	}
}

/* sgd and adamw (their defaults: 10 steps, lr 1e-3, β 0.9 and 0.999, eps
 * 1e-8, weight decay 0 sgd and 0.01 adamw, momentum 0.9, gradients uniform
 * in ±1e-3 from the run's seed) on R·N weights uniform in ±1, against the
 * fast backend: w, m and v. The gradient stream is emu/kernels/optimizer.c's
 * formula, stored in the grad format; the Python scalars are binary64,
 * rounded into the compute format, as there. Then adamw_kahan and adamw_sr
 * on the same (kern_adamw_ext). */
static void kern_optimizer(const gpu_opts *o, const emu_policy *pol, const char *fmts, size_t R,
                           size_t N)
{
	static const char *const op_var[] = {"sgd", "adamw"};
	const emu_format *S = &pol->storage, *C = &pol->compute, *G = &pol->grad, *T = &pol->state;
	const unsigned NS = 10;
	const size_t n = R * N;
	const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01, mu = 0.9;
	double *x = malloc(n * sizeof *x);
	float *xs = malloc(n * sizeof *xs), *w = malloc(n * sizeof *w), *m = malloc(n * sizeof *m),
	      *vv = malloc(n * sizeof *vv), *gs = malloc(NS * n * sizeof *gs);
	float k[8 + 2 * 10]; /* k_opt_elem's, then −lr·wd (k_adamw_ext_elem's) */
	if (!x || !xs || !w || !m || !vv || !gs) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		x[i] = ((double)(rnd(o->seed, 440, i) >> 40) * 0x1p-24 - 0.5) * 2.0;
		xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol->env).bits);
	}
	for (unsigned s = 1; s <= NS; s++)
		for (size_t i = 0; i < n; i++) {
			uint64_t r = emu_mix64(emu_mix64(o->seed) ^ (((uint64_t)s << 40) + i));
			double g = 1e-3 * (2 * ((double)(r >> 11) * 0x1p-53) - 1);
			gs[(s - 1) * n + i] =
			    (float)emu_decode(G, emu_from_double(G, g, &pol->env).bits);
		}
#define KC(x) ((float)emu_decode(C, emu_from_double(C, (x), &pol->env).bits))
	k[0] = KC(eps);
	k[1] = KC(-lr);
	k[2] = KC(mu);
	k[3] = KC(1 - lr * wd);
	k[4] = KC(1 - b1);
	k[5] = KC(b2);
	k[6] = KC(1 - b2);
	for (unsigned s = 1; s <= NS; s++) {
		k[7 + 2 * (s - 1)] = KC(-(lr / (1 - opt_pow(b1, s))));
		k[8 + 2 * (s - 1)] = KC(sqrt(1 - opt_pow(b2, s)));
	}
	k[7 + 2 * NS] = KC(-(lr * wd));
#undef KC
	for (int v = 0; v < 2; v++) {
		char kname[40];
		emu_run er;
		emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
		snprintf(kname, sizeof kname, "optimizer %s", op_var[v]);
		memcpy(w, xs, n * sizeof *w);
		if (gpu_dev_optimizer(v, kfmt(S), kfmt(C), kfmt(G), kfmt(T), gs, n, NS, k, w, m, vv,
		                      err, sizeof err)) {
			step_failed("kern", err);
			continue;
		}
		if (!kern_engine(&emu_kernel_optimizer, pol, op_var[v], &in, &er))
			continue;
		kern_out outs[] = {{"w", w, n}, {"m", m, n}, {"v", vv, n}};
		kern_compare(kname, fmts, &er, outs, 3);
		emu_run_free(&er);
	}
	kern_adamw_ext(pol, fmts, o->seed, x, xs, R, N, NS, gs, k, w, m, vv);
out:
	free(x);
	free(xs);
	free(w);
	free(m);
	free(vv);
	free(gs);
}

static void step_kern(const gpu_opts *o)
{
	static const char *const pols[] = {"storage=fp16,compute=fp16,accum=fp16",
	                                   "storage=fp16,compute=fp16,accum=fp32",
	                                   "storage=fp16,compute=fp32",
	                                   "storage=bf16,compute=bf16,accum=fp32",
	                                   "storage=bf16,compute=fp32",
	                                   "storage=fp32"};
	static const char *const sm_var[] = {"naive", "maxsub", "lse"};
	static const char *const ln_var[] = {"twopass", "onepass", "welford"};
	const size_t R = o->quick ? 32 : 256, N = o->quick ? 64 : 512;
	double *x = malloc(R * N * sizeof *x), *xl = malloc(R * N * sizeof *xl);
	float *xs = malloc(R * N * sizeof *xs), *xls = malloc(R * N * sizeof *xls);
	float *dys = malloc(R * N * sizeof *dys), *o1 = malloc(R * N * sizeof *o1);
	float *o2 = malloc(R * N * sizeof *o2), *o3 = malloc(R * sizeof *o3);
	float *o4 = malloc(R * sizeof *o4);
	float *m1 = malloc(R * N * sizeof *m1), *m2 = malloc(R * N * sizeof *m2);
	float *m3 = malloc(R * sizeof *m3), *m4 = malloc(R * sizeof *m4);
	float *ty = malloc(R * N * sizeof *ty);
	gpu_tables tabs = {NULL, 0};
	bool have_tabs = false;
	if (!x || !xl || !xs || !xls || !dys || !o1 || !o2 || !o3 || !o4 || !m1 || !m2 || !m3 ||
	    !m4 || !ty) {
		step_failed("kern", "out of memory");
		goto out;
	}
	/* softmax logits uniform in ±8·(1 + 4·(r mod 4)): rows up to ±104, past
	 * exp's fp16 range, so naive overflows on some rows on both sides;
	 * layernorm rows around 0, 4, 300, 2000 with spread ±1: onepass cancels */
	for (size_t r = 0; r < R; r++)
		for (size_t j = 0; j < N; j++) {
			double u = (double)(rnd(o->seed, 400, r * N + j) >> 40) * 0x1p-24;
			static const double off[4] = {0, 4, 300, 2000};
			x[r * N + j] = (u - 0.5) * 16.0 * (double)(1 + 4 * (r % 4));
			xl[r * N + j] = off[r % 4] + (u - 0.5) * 2.0;
		}
	/* bce's targets, as emu/kernels/bce.c draws them: bit 31 of the element's draw */
	for (size_t i = 0; i < R * N; i++)
		ty[i] = (float)(emu_sr_bits(o->seed, i) >> 31);
	have_tabs = kern_tables(o, &tabs);
	/* every policy with CUDA's expf, logf and log1pf; then the fp32-compute
	 * ones again with those correctly rounded (gpu_dev_fp32_math), rows
	 * tagged "cr-fp32", where the order of operations must agree bit for bit */
	const size_t npol = sizeof pols / sizeof pols[0];
	for (size_t pp = 0; pp < 2 * npol; pp++) {
		size_t p = pp % npol;
		emu_policy pol;
		if (emu_policy_parse(pols[p], &pol, err, sizeof err)) {
			step_failed("kern", err);
			continue;
		}
		const emu_format *S = &pol.storage, *C = &pol.compute, *A = &pol.accum;
		if (pp >= npol && C->p != 24)
			continue;
		if (pp >= npol && !kern_cr) {
			if (gpu_dev_fp32_math(1, err, sizeof err)) {
				step_failed("kern", err);
				break;
			}
			kern_cr = true;
		}
		/* replay where the compute format's approximate functions are tabulated */
		const gpu_tables *rt = have_tabs && C->bits == 16 ? &tabs : NULL;
		char fmts[3 * sizeof S->name + 2];
		snprintf(fmts, sizeof fmts, "%s/%s/%s", S->name, C->name, A->name);
		for (size_t i = 0; i < R * N; i++) {
			double d = emu_sr_bits(o->seed, i) & 1 ? -1.0 : 1.0; /* layernorm's dy */
			xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol.env).bits);
			xls[i] = (float)emu_decode(S, emu_from_double(S, xl[i], &pol.env).bits);
			dys[i] = (float)emu_decode(S, emu_from_double(S, d, &pol.env).bits);
		}
		float epsc = (float)emu_decode(C, emu_from_double(C, 1e-5, &pol.env).bits);
		for (int v = 0; v < 3; v++) {
			char kname[40];
			emu_run er;
			/* softmax_ce */
			snprintf(kname, sizeof kname, "softmax_ce %s", sm_var[v]);
			emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
			if (gpu_dev_softmax(v, kfmt(S), kfmt(C), kfmt(A), xs, R, N, o1, o3, err,
			                    sizeof err)) {
				step_failed("kern", err);
			} else if (kern_engine(&emu_kernel_softmax_ce, &pol, sm_var[v], &in, &er)) {
				kern_out outs[] = {{"grad", o1, R * N}, {"loss", o3, 1}};
				kern_compare(kname, fmts, &er, outs, 2);
				emu_run_free(&er);
				if (rt && gpu_rows_softmax(rt, v, kfmt(S), kfmt(C), kfmt(A), xs, R,
				                           N, m1, m3, err, sizeof err)) {
					step_failed("kern", err);
				} else if (rt) {
					kern_out mo[] = {{"grad", m1, R * N}, {"loss", m3, 1}};
					const emu_format *f[] = {S, A};
					kern_replay(kname, fmts, outs, mo, f, 2);
				}
			}
			/* layernorm, forward and backward (eps 1e-5, dy = ±1 from the seed) */
			snprintf(kname, sizeof kname, "layernorm %s", ln_var[v]);
			emu_kin inl = {xl, R, N, NULL, 0, o->seed, NULL, 0};
			if (gpu_dev_layernorm(v, kfmt(S), kfmt(C), kfmt(A), xls, dys, R, N, epsc,
			                      o1, o2, o3, o4, err, sizeof err)) {
				step_failed("kern", err);
			} else if (kern_engine(&emu_kernel_layernorm, &pol, ln_var[v], &inl, &er)) {
				kern_out outs[] = {{"y", o1, R * N},
				                   {"dx", o2, R * N},
				                   {"rstd", o3, R},
				                   {"var", o4, R}};
				kern_compare(kname, fmts, &er, outs, 4);
				emu_run_free(&er);
				if (rt && gpu_rows_layernorm(rt, v, kfmt(S), kfmt(C), kfmt(A), xls,
				                             dys, R, N, epsc, m1, m2, m3, m4, err,
				                             sizeof err)) {
					step_failed("kern", err);
				} else if (rt) {
					kern_out mo[] = {{"y", m1, R * N},
					                 {"dx", m2, R * N},
					                 {"rstd", m3, R},
					                 {"var", m4, R}};
					const emu_format *f[] = {S, S, C, C};
					kern_replay(kname, fmts, outs, mo, f, 4);
				}
			}
		}
		kern_norm_bce(o, &pol, fmts, rt, xl, xls, dys, ty, R, N);
		kern_backward(o, &pol, fmts, rt);
		kern_matmul(o, &pol, fmts, R, N);
		kern_matmul_tc(o, &pol, fmts, R, N);
		kern_batchnorm(o, &pol, fmts, dys, R, N);
		kern_optimizer(o, &pol, fmts, R, N);
	}
	if (kern_cr && gpu_dev_fp32_math(0, err, sizeof err))
		step_failed("kern", err);
	kern_cr = false;
	gpu_report_note(&rep,
	                "kern: softmax_ce, layernorm, rmsnorm and bce on %zu rows of %zu, "
	                "matmul seq (fma=0 and 1) on the same input as A then B, and tc:h200 "
	                "(mma.sync, then the store) on its first 64 rows where storage is "
	                "fp16 or bf16, "
	                "batchnorm twopass, welford and eval on as many samples and channels, "
	                "sgd, adamw, adamw_kahan and adamw_sr over 10 steps on as many "
	                "weights, "
	                "backward on %s, against the fast "
	                "backend; exp, log, log1p and fp16/bf16 rsqrt are the GPU's own (hexp, "
	                "hlog, expf, logf, log1pf, hrsqrt), so agreement within 2 ulp is "
	                "accepted and the largest distance is reported; bce stable is not "
	                "replayed (no table holds log1pf)",
	                R, N, o->quick ? "16x32 inputs" : "64x128 inputs, 8 classes");
out:
	gpu_tables_free(&tabs);
	free(m1);
	free(m2);
	free(m3);
	free(m4);
	free(ty);
	free(x);
	free(xl);
	free(xs);
	free(xls);
	free(dys);
	free(o1);
	free(o2);
	free(o3);
	free(o4);
}

/* ---- quant: the mxfp8 and deepseek block quantisers against emu_quantize ---- */

/* Input (r, c) of the quant step: rows of eight kinds, chosen to reach every
 * branch of the two scale rules (docs/gpu.md): r mod 8 = 0 normal with
 * outliers (1 in 64 times 64), 1 normal times 2^e, e per 32-block in
 * [-100, 100), 2 zero blocks (+0 in columns 0..127, -0 in 512..543),
 * 3 one NaN, +inf and -inf (in different blocks), 4 near FLT_MAX (and
 * FLT_MAX), 5 tiny (down to fp32 subnormals, amax below DeepGEMM's 1e-4),
 * 6 amax 957 in the first 32-block (the OCP/TE example), 448·2^k exactly in
 * the others, 7 random binary32 encodings (every finite exponent). */
static float quant_input(uint64_t seed, size_t r, size_t c, size_t N)
{
	uint64_t i = r * N + c, u = rnd(seed, 600, i), v = rnd(seed, 601, i);
	double u1 = ((double)(u >> 11) + 1) * 0x1p-53, u2 = (double)(v >> 11) * 0x1p-53;
	double g = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2), x = g;
	size_t blk = c / 32;
	switch (r % 8) {
	case 0:
		x = (v & 63) == 0 ? 64 * g : g;
		break;
	case 1:
		x = ldexp(g, (int)(rnd(seed, 602, r * N / 32 + blk) % 200) - 100);
		break;
	case 2:
		x = c < 128 ? 0.0 : c >= 512 && c < 544 ? -0.0 : g;
		break;
	case 3: {
		size_t at = (r / 8 * 37) % 64;
		x = c == at ? NAN : c == at + 200 ? INFINITY : c == at + 300 ? -INFINITY : g;
		break;
	}
	case 4:
		x = c % 97 == 0 ? FLT_MAX : g * 0x1p126;
		break;
	case 5:
		x = ldexp(g, -110 - (int)(blk % 40));
		break;
	case 6:
		if (blk == 0)
			x = c == 3 ? 957.0 : (u2 - 0.5) * 1900.0;
		else
			x = c % 32 == 7 ? -ldexp(448.0, (int)blk - 16)
			                : ldexp(g / 8, (int)blk - 16);
		break;
	default: {
		uint32_t b = (uint32_t)u;
		if ((b & 0x7f800000u) == 0x7f800000u)
			b &= ~0x40000000u; /* a finite exponent */
		float f;
		memcpy(&f, &b, sizeof f);
		return f;
	}
	}
	if (fabs(x) > FLT_MAX && isfinite(x))
		x = x < 0 ? -FLT_MAX : FLT_MAX;
	return (float)x;
}

static void step_quant(const gpu_opts *o)
{
	static const struct {
		const char *recipe;
		gpu_qrule rule;
	} qr[] = {
	    {"mxfp8", GPU_Q_MXFP8}, {"mxfp8:e5m2", GPU_Q_MXFP8}, {"deepseek", GPU_Q_DEEPSEEK}};
	const size_t R = o->quick ? 64 : 512, N = 1024;
	float *xs = malloc(R * N * sizeof *xs);
	double *xd = malloc(R * N * sizeof *xd);
	uint8_t *q = malloc(R * N);
	uint32_t *sc = malloc(R * N * sizeof *sc); /* at least one scale per block */
	if (!xs || !xd || !q || !sc) {
		step_failed("quant", "out of memory");
		goto out;
	}
	for (size_t r = 0; r < R; r++)
		for (size_t c = 0; c < N; c++) {
			xs[r * N + c] = quant_input(o->seed, r, c, N);
			xd[r * N + c] = xs[r * N + c];
		}
	for (size_t k = 0; k < sizeof qr / sizeof qr[0]; k++) {
		emu_recipe rc;
		emu_qtensor want;
		if (emu_recipe_parse(qr[k].recipe, &rc, err, sizeof err)) {
			step_failed("quant", err);
			continue;
		}
		/* the recipe's own data: block, element format, fmax, amin */
		const emu_format *E = fmt(rc.elem.name), *SF = fmt(rc.scale_fmt.name);
		size_t bs = (size_t)rc.bcols[EMU_ROLE_ACT];
		float fmax = (float)(rc.fmax > 0 ? rc.fmax : rc.elem.max), amin = (float)rc.amin;
		gpu_kfmt ek = E->bits == 8 && E->p == 4 ? GPU_K_E4M3 : GPU_K_E5M2;
		if (rc.brows[EMU_ROLE_ACT] != 1 || bs == 0 || E->bits != 8) {
			step_failed("quant", "the recipe's act blocks are not 1xN, or not 8-bit");
			continue;
		}
		if (gpu_dev_quant(qr[k].rule, ek, fmax, amin, bs, xs, R, N, q, sc, err,
		                  sizeof err)) {
			step_failed("quant", err);
			continue;
		}
		if (emu_quantize(&rc, EMU_ROLE_ACT, false, xd, R, N, o->seed, &want)) {
			step_failed("quant", "emu_quantize: out of memory");
			continue;
		}
		gpu_cmp el, bl;
		gpu_cmp_init(&el, "quant", qr[k].recipe, E->name, "elements rn-satfinite", E,
		             (gpu_tol){0, true});
		gpu_cmp_init(&bl, "quant", qr[k].recipe, SF->name, "block scales", SF,
		             (gpu_tol){0, true});
		for (size_t i = 0; i < R * N; i++) {
			uint32_t xb;
			memcpy(&xb, &xs[i], sizeof xb);
			gpu_cmp_one(&el, i, xb, q[i], want.code[i]);
		}
		for (size_t b = 0; b < want.nbr * want.nbc; b++)
			gpu_cmp_one(&bl, b, b, sc[b], want.dcode[b]);
		add_row(&el);
		add_row(&bl);
		emu_qtensor_free(&want);
	}
	gpu_report_note(&rep,
	                "quant: %zu rows of %zu fp32 inputs (normal, outliers, zero, NaN "
	                "and infinite blocks, near FLT_MAX, tiny, amax 957 and 448*2^k), "
	                "row-wise, role act, one GPU thread per block, against emu_quantize",
	                R, N);
out:
	free(xs);
	free(xd);
	free(q);
	free(sc);
}

/* ---- attn: attention's :tc variants, the GEMMs on our mma.sync, the rest gpu/rows.h ----
 *
 * emu/kernels/attention.c's naive:tc, online:tc and fp8:tc under the h200-mma model
 * (sm_90's mma.sync) as the GPU runs them: S_acc = Q·Kᵀ one mma.sync GEMM (gpu_dev_mma, K =
 * the head, in order), then gpu/rows.h's k_attn_soft_row per query, then
 * P·V as one GEMM (naive, K = the keys) or one per key block (online, fp8:
 * K = the block's keys, each from +0), then k_attn_out_row. Compared with
 * the engine's kernel on the fast backend, and (fp16/bf16 compute, with the
 * tables) with the same pipeline on the host: rows.h with the GPU's exp and
 * log, the GEMMs by the h200-mma model, so the GPU must agree bit for bit. fp8's
 * Q, K, V are quantised on the host by the recipe library, as the kernel
 * quantises them (e4m3, one fp32 scale per tile of block_k rows), so this
 * step checks the GEMMs and the softmax, not that quantiser (the quant step
 * checks the GPU's). */

typedef struct {
	int v, causal;
	size_t nq, nk, d, bk, tq, tk;
	const emu_format *S, *C, *A, *in; /* in: the GEMMs' inputs (C, or e4m3) */
	float sc, psc;
	const float *q, *k, *vv;      /* nq×d, nk×d, nk×d values of in */
	const float *dq8, *dk8, *dv8; /* fp8: decode scales in C; else NULL */
} attn_in;

/* D (M×N) = A (M×K) · B (N×K) from +0 into attn_in's A: the GPU's mma.sync,
 * or (host) the h200-mma model it is checked against; float values of A. */
static int attn_mma(const attn_in *a, bool host, const float *Af, const float *Bf, size_t M,
                    size_t N, size_t K, float *D)
{
	const emu_format *in = a->in, *out = a->A;
	uint16_t *ea = malloc(M * K * sizeof *ea), *eb = malloc(N * K * sizeof *eb);
	uint32_t *c = calloc(M * N, sizeof *c), *d = malloc(M * N * sizeof *d);
	emu_tc_model m;
	int rc = -1;
	if (!ea || !eb || !c || !d) {
		snprintf(err, sizeof err, "attn: out of memory");
		goto out;
	}
	for (size_t i = 0; i < M * K; i++)
		ea[i] = (uint16_t)emu_from_float(in, Af[i], &env_rne).bits;
	for (size_t i = 0; i < N * K; i++)
		eb[i] = (uint16_t)emu_from_float(in, Bf[i], &env_rne).bits;
	if (!host) {
		if (gpu_dev_mma(gfmt(in), out->bits == 16, ea, eb, c, M, N, K, 0, d, err,
		                sizeof err))
			goto out;
	} else {
		if (emu_tc_preset("h200-mma", in, out, &m)) {
			snprintf(err, sizeof err, "attn: no h200-mma preset for %s -> %s", in->name,
			         out->name);
			goto out;
		}
		emu_bits *ka = malloc(K * sizeof *ka), *kb = malloc(K * sizeof *kb);
		if (!ka || !kb) {
			free(ka);
			free(kb);
			snprintf(err, sizeof err, "attn: out of memory");
			goto out;
		}
		for (size_t ij = 0; ij < M * N; ij++) {
			for (size_t t = 0; t < K; t++) {
				ka[t] = ea[ij / N * K + t];
				kb[t] = eb[ij % N * K + t];
			}
			d[ij] = (uint32_t)emu_tc_dot(&m, in, out, ka, kb, K, 0).bits;
		}
		free(ka);
		free(kb);
	}
	for (size_t i = 0; i < M * N; i++)
		D[i] = (float)emu_decode(out, out->bits == 16 ? d[i] & 0xffffu : d[i]);
	rc = 0;
out:
	free(ea);
	free(eb);
	free(c);
	free(d);
	return rc;
}

/* The whole pipeline on the device, or (host) on the host with tables t:
 * O (nq×d, values of S), L (nq, C) and the number of P flushed. */
static int attn_pipe(const attn_in *a, bool host, const gpu_tables *t, float *O, float *L,
                     double *lost)
{
	size_t nq = a->nq, nk = a->nk, d = a->d, bk = a->bk, nkt = (nk + bk - 1) / bk;
	size_t nparts = a->v == 0 ? 1 : nkt, w = a->v == 0 ? nk : bk;
	float *sacc = malloc(nq * nk * sizeof *sacc), *P = malloc(nq * nk * sizeof *P);
	float *alpha = malloc(nq * nkt * sizeof *alpha), *lrow = malloc(nq * sizeof *lrow);
	float *nl = malloc(nq * sizeof *nl), *part = malloc(nparts * nq * d * sizeof *part);
	float *pb = malloc(nq * w * sizeof *pb), *vb = malloc(d * w * sizeof *vb);
	gpu_kfmt S = kfmt(a->S), C = kfmt(a->C), A = kfmt(a->A);
	int rc = -1;
	if (!sacc || !P || !alpha || !lrow || !nl || !part || !pb || !vb) {
		snprintf(err, sizeof err, "attn: out of memory");
		goto out;
	}
	if (attn_mma(a, host, a->q, a->k, nq, nk, d, sacc))
		goto out;
	if (host ? gpu_rows_attn_soft(t, a->v, C, A, sacc, nq, nk, bk, a->causal, a->sc, a->dq8,
	                              a->tq, a->dk8, a->tk, a->psc, P, alpha, lrow, L, nl, err,
	                              sizeof err)
	         : gpu_dev_attn_soft(a->v, C, A, sacc, nq, nk, bk, a->causal, a->sc, a->dq8, a->tq,
	                             a->dk8, a->tk, a->psc, P, alpha, lrow, L, nl, err, sizeof err))
		goto out;
	/* P·V: block b's keys [b·w, b·w + w) (naive: one block, every key) */
	for (size_t b = 0; b < nparts; b++) {
		for (size_t i = 0; i < nq; i++)
			for (size_t j = 0; j < w; j++)
				pb[i * w + j] = P[i * nk + b * w + j];
		for (size_t c = 0; c < d; c++)
			for (size_t j = 0; j < w; j++)
				vb[c * w + j] = a->vv[(b * w + j) * d + c];
		if (attn_mma(a, host, pb, vb, nq, d, w, part + b * nq * d))
			goto out;
	}
	if (host ? gpu_rows_attn_out(t, a->v, S, C, A, part, alpha, lrow, a->dv8, a->tk, a->psc, nq,
	                             nk, bk, a->causal, d, O, err, sizeof err)
	         : gpu_dev_attn_out(a->v, S, C, A, part, alpha, lrow, a->dv8, a->tk, a->psc, nq, nk,
	                            bk, a->causal, d, O, err, sizeof err))
		goto out;
	*lost = 0;
	for (size_t i = 0; i < nq; i++)
		*lost += nl[i];
	rc = 0;
out:
	free(sacc);
	free(P);
	free(alpha);
	free(lrow);
	free(nl);
	free(part);
	free(pb);
	free(vb);
	return rc;
}

/* fp8's quantisation of one of Q, K, V (rows × d compute-format values x),
 * as emu/kernels/attention.c's quantise(): values into q, decode scales (in C)
 * into ds, one per tile of `tile` rows; _by takes the recipe spec (fp8:bwd's
 * dO: its FP8 format, one scale per tensor). */
static int attn_quant_by(const emu_format *C, const char *spec, const double *x, size_t rows,
                         size_t d, size_t tile, uint64_t seed, float *q, float *ds)
{
	char e[160] = "";
	emu_recipe r;
	emu_qtensor qt;
	emu_qpart part = {0, rows, seed, NAN, 0};
	if (emu_recipe_parse(spec, &r, e, sizeof e) != EMU_OK ||
	    emu_quantize_part(&r, EMU_ROLE_ACT, false, x, rows, d, &part, &qt) != 0) {
		snprintf(err, sizeof err, "attn: quantiser: %s", e);
		return -1;
	}
	for (size_t i = 0; i < rows * d; i++)
		q[i] = (float)qt.q[i];
	for (size_t t = 0; t < (rows + tile - 1) / tile; t++)
		ds[t] = (float)emu_decode(C, emu_from_double(C, qt.d[t], &env_rne).bits);
	emu_qtensor_free(&qt);
	return 0;
}

static int attn_quant(const emu_format *C, const double *x, size_t rows, size_t d, size_t tile,
                      uint64_t seed, float *q, float *ds)
{
	char spec[128];
	snprintf(spec, sizeof spec, "elem=e4m3,scale=fp32,rule=fp32,block=%zux0,rht=no", tile);
	return attn_quant_by(C, spec, x, rows, d, tile, seed, q, ds);
}

/* The GPU's outputs against the engine's (2 ulp: exp and log are the
 * GPU's own) or against the host replay (exact). */
static void attn_compare(const char *kname, const char *fmts, const emu_run *er,
                         const kern_out *outs, size_t nouts, const kern_out *rep)
{
	for (size_t g = 0; g < nouts; g++) {
		const emu_kout_item *it = NULL;
		for (int k = 0; k < er->out.n; k++)
			if (!strcmp(er->out.item[k].name, outs[g].name))
				it = &er->out.item[k];
		if (!it || it->n != outs[g].n) {
			step_failed("attn", "engine output missing or of another size");
			continue;
		}
		char name[64];
		snprintf(name, sizeof name, rep ? "%s replay" : "%s", kname);
		gpu_cmp row;
		gpu_cmp_init(&row, "attn", name, fmts, it->name, it->fmt,
		             (gpu_tol){rep ? 0 : 2, true});
		for (size_t i = 0; i < it->n; i++)
			gpu_cmp_one(&row, i, i,
			            emu_from_float(it->fmt, outs[g].v[i], &env_rne).bits,
			            rep ? emu_from_float(it->fmt, rep[g].v[i], &env_rne).bits
			                : emu_encode(it->fmt, emu_kout_d(NULL, it, i)));
		add_row(&row);
	}
}

/* One run of the seq variants: on the device, or (host) rows.h on the host. */
static int attn_seq(const attn_in *a, int bwd, bool host, const gpu_tables *t, const float *dO,
                    float *O, float *L, double *lost, float *dq, float *dk, float *dv)
{
	float *nl = malloc(a->nq * sizeof *nl);
	int rc;
	if (!nl) {
		snprintf(err, sizeof err, "attn: out of memory");
		return -1;
	}
	gpu_kfmt S = kfmt(a->S), C = kfmt(a->C), A = kfmt(a->A);
	rc = host ? gpu_rows_attn_seq(t, a->v, bwd, S, C, A, a->q, a->k, a->vv, a->nq, a->nk, a->d,
	                              a->bk, a->causal, a->sc, a->dq8, a->tq, a->dk8, a->tk, a->dv8,
	                              a->psc, dO, O, L, nl, dq, dk, dv, err, sizeof err)
	          : gpu_dev_attn_seq(a->v, bwd, S, C, A, a->q, a->k, a->vv, a->nq, a->nk, a->d,
	                             a->bk, a->causal, a->sc, a->dq8, a->tq, a->dk8, a->tk, a->dv8,
	                             a->psc, dO, O, L, nl, dq, dk, dv, err, sizeof err);
	*lost = 0;
	for (size_t i = 0; rc == 0 && i < a->nq; i++)
		*lost += nl[i];
	free(nl);
	return rc;
}

/* fp8:bwd on the device or (host) the host: the fp8 forward, dO quantised
 * as the kernel does (e5m2, one fp32 scale), then the backward rows, with
 * dS's scale chosen here from its amax as the kernel chooses it. out: O L
 * dQ dK dV; lost[0] p_lost, lost[1] ds_lost, lost[2] amax_ds. */
static int attn8_bwd(const attn_in *a, bool host, const gpu_tables *t, const float *dO_s, float *O,
                     float *L, float *dq, float *dk, float *dv, double lost[3])
{
	const emu_format *C = a->C, *F32 = fmt("fp32"), *DF = fmt("e5m2");
	size_t nq = a->nq, nk = a->nk, d = a->d;
	double *x = malloc(nq * d * sizeof *x);
	float *do8 = malloc(nq * d * sizeof *do8), *p8a = malloc(nq * nk * sizeof *p8a);
	float *ds = malloc(nq * nk * sizeof *ds), *nl = malloc(nq * sizeof *nl), d_do;
	gpu_kfmt S = kfmt(a->S), Ck = kfmt(C), A = kfmt(a->A);
	int rc = -1;
	if (!x || !do8 || !p8a || !ds || !nl) {
		snprintf(err, sizeof err, "attn: out of memory");
		goto out;
	}
	if (attn_seq(a, 0, host, t, NULL, O, L, &lost[0], dq, dk, dv))
		goto out;
	for (size_t i = 0; i < nq * d; i++)
		x[i] = emu_decode(C, emu_from_float(C, dO_s[i], &env_rne).bits);
	if (attn_quant_by(C, "elem=e5m2,scale=fp32,rule=fp32,block=0x0,rht=no", x, nq, d, nq, 0,
	                  do8, &d_do))
		goto out;
	if (host ? gpu_rows_attn8_bwd_q(t, Ck, A, a->q, a->k, a->vv, a->dq8, a->tq, a->dk8, a->dv8,
	                                a->tk, L, O, do8, d_do, a->sc, a->psc, nq, nk, d, a->bk,
	                                a->causal, p8a, ds, err, sizeof err)
	         : gpu_dev_attn8_bwd_q(Ck, A, a->q, a->k, a->vv, a->dq8, a->tq, a->dk8, a->dv8,
	                               a->tk, L, O, do8, d_do, a->sc, a->psc, nq, nk, d, a->bk,
	                               a->causal, p8a, ds, err, sizeof err))
		goto out;
	/* dS's amax over the keys each query sees, and its scale (the kernel's
	 * rule: fmax / amax, at most the largest of fp32 and C; 1 when the amax
	 * is 0 or not finite), stored in fp32, then into C */
	double amax = 0, sc8;
	bool nan = false;
	for (size_t i = 0; i < nq; i++)
		for (size_t j = 0; j < (a->causal ? i + 1 + (nk - nq) : nk); j++) {
			double v = fabs((double)ds[i * nk + j]);
			if (isnan(v))
				nan = true;
			else if (v > amax)
				amax = v;
		}
	if (nan || amax == 0 || isinf(amax)) {
		sc8 = 1;
	} else {
		double smax = C->max < F32->max ? C->max : F32->max;
		sc8 = DF->max / amax > smax ? smax : DF->max / amax;
	}
	lost[2] = nan ? NAN : amax;
	float sds = (float)emu_decode(
	    C,
	    emu_from_double(C, emu_decode(F32, emu_from_double(F32, sc8, &env_rne).bits), &env_rne)
	        .bits);
	if (host ? gpu_rows_attn8_bwd_rest(t, S, Ck, A, GPU_K_E5M2, a->q, a->k, a->dq8, a->tq,
	                                   a->dk8, a->tk, do8, d_do, a->psc, sds, p8a, ds, nq, nk,
	                                   d, a->causal, dq, dk, dv, nl, err, sizeof err)
	         : gpu_dev_attn8_bwd_rest(S, Ck, A, GPU_K_E5M2, a->q, a->k, a->dq8, a->tq, a->dk8,
	                                  a->tk, do8, d_do, a->psc, sds, p8a, ds, nq, nk, d,
	                                  a->causal, dq, dk, dv, nl, err, sizeof err))
		goto out;
	lost[1] = 0;
	for (size_t i = 0; i < nq; i++)
		lost[1] += nl[i];
	rc = 0;
out:
	free(x);
	free(do8);
	free(p8a);
	free(ds);
	free(nl);
	return rc;
}

static void step_attn(const gpu_opts *o)
{
	static const char *const pols[] = {
	    "storage=fp16,compute=fp16,accum=fp32", "storage=bf16,compute=bf16,accum=fp32",
	    "storage=fp16,compute=fp16,accum=fp16", "storage=bf16,compute=fp32"};
	/* the variants: kernel name, base (0 naive, 1 online, 2 fp8), Tensor
	 * Cores, backward (2: fp8's) */
	static const struct {
		const char *name;
		int v, tc, bwd;
	} vs[] = {{"naive:tc:h200-mma", 0, 1, 0},
	          {"online:tc:h200-mma", 1, 1, 0},
	          {"fp8:tc:h200-mma", 2, 1, 0},
	          {"naive", 0, 0, 0},
	          {"online", 1, 0, 0},
	          {"fp8", 2, 0, 0},
	          {"naive:bwd", 0, 0, 1},
	          {"online:bwd", 1, 0, 1},
	          {"fp8:bwd", 2, 0, 2}};
	const size_t R = o->quick ? 32 : 64, d = o->quick ? 32 : 64, N = 3 * d;
	double *x = malloc(R * N * sizeof *x), *qkv = malloc(3 * R * d * sizeof *qkv);
	float *fq = malloc(3 * R * d * sizeof *fq), *ds = malloc(3 * R * sizeof *ds);
	float *g = malloc(2 * (5 * R * d + R) * sizeof *g), *dO = malloc(R * d * sizeof *dO);
	gpu_tables tabs = {NULL, 0};
	bool have_tabs = false;
	if (!x || !qkv || !fq || !ds || !g || !dO) {
		step_failed("attn", "out of memory");
		goto out;
	}
	/* q, k, v uniform in ±2·(1 + 3·(i mod 4)): rows of logits from ~±1 to
	 * ~±100 at scale 1/sqrt(d), so exp underflows and the online rescaling
	 * matters on some rows */
	for (size_t i = 0; i < R; i++)
		for (size_t c = 0; c < N; c++) {
			double u = (double)(rnd(o->seed, 700, i * N + c) >> 40) * 0x1p-24;
			x[i * N + c] = (u - 0.5) * 4.0 * (double)(1 + 3 * (i % 4));
		}
	/* the backward's dO, as emu/kernels/attention.c draws it: ±1 by bit 0 */
	for (size_t i = 0; i < R * d; i++)
		dO[i] = emu_sr_bits(o->seed, i) & 1 ? -1.0f : 1.0f;
	have_tabs = kern_tables(o, &tabs);
	for (size_t p = 0; p < sizeof pols / sizeof pols[0]; p++) {
		emu_policy pol;
		if (emu_policy_parse(pols[p], &pol, err, sizeof err)) {
			step_failed("attn", err);
			continue;
		}
		const emu_format *S = &pol.storage, *C = &pol.compute, *A = &pol.accum;
		/* replay where the tables hold C's exp and log */
		const gpu_tables *rt = have_tabs && C->bits == 16 ? &tabs : NULL;
		char fmts[3 * sizeof S->name + 2];
		snprintf(fmts, sizeof fmts, "%s/%s/%s", S->name, C->name, A->name);
		/* Q, K, V as the kernel loads them: stored in S, then into C */
		for (size_t i = 0; i < R; i++)
			for (size_t c = 0; c < N; c++) {
				double s =
				    emu_decode(S, emu_from_double(S, x[i * N + c], &pol.env).bits);
				double v = emu_decode(C, emu_from_double(C, s, &pol.env).bits);
				qkv[(c / d) * R * d + i * d + c % d] = v;
			}
		for (size_t vi = 0; vi < sizeof vs / sizeof vs[0]; vi++)
			for (int causal = 0; causal < 2; causal++) {
				int v = vs[vi].v, tc = vs[vi].tc, bwd = vs[vi].bwd;
				/* the mma.sync GEMMs take fp16/bf16 (C) or e4m3 inputs and
				 * write fp32 or fp16 */
				const emu_format *tin = v == 2 ? fmt("e4m3") : C;
				bool a32 = A->bits == 32, a16 = A->bits == 16 && A->p == 11;
				bool in_ok =
				    tin->bits == 8 || (tin->bits == 16 && (tin->p == 11 || !a16));
				if (tc && (!(a32 || a16) || !in_ok))
					continue;
				size_t bk = v == 2 ? 32 : 16; /* an fp8 mma.sync takes k = 32 */
				attn_in a = {v,    causal, R,    R,
				             d,    bk,     bk,   bk,
				             S,    C,      A,    v == 2 ? fmt("e4m3") : C,
				             0,    448,    NULL, NULL,
				             NULL, NULL,   NULL, NULL};
				a.sc = (float)emu_decode(
				    C, emu_from_double(C, 1 / sqrt((double)d), &pol.env).bits);
				a.psc =
				    (float)emu_decode(C, emu_from_double(C, 448, &pol.env).bits);
				if (v == 2) {
					if (attn_quant(C, qkv, R, d, bk, o->seed, fq, ds) ||
					    attn_quant(C, qkv + R * d, R, d, bk, o->seed,
					               fq + R * d, ds + R) ||
					    attn_quant(C, qkv + 2 * R * d, R, d, bk, o->seed,
					               fq + 2 * R * d, ds + 2 * R)) {
						step_failed("attn", err);
						continue;
					}
					a.dq8 = ds, a.dk8 = ds + R, a.dv8 = ds + 2 * R;
				} else {
					for (size_t i = 0; i < 3 * R * d; i++)
						fq[i] = (float)qkv[i];
				}
				a.q = fq, a.k = fq + R * d, a.vv = fq + 2 * R * d;
				char kname[40];
				snprintf(kname, sizeof kname, "attention %s%s", vs[vi].name,
				         causal ? " causal" : "");
				emu_kparam par[] = {{"block_k", (double)bk}, {"causal", causal}};
				emu_kin in = {x, R, N, par, 2, o->seed, NULL, 0};
				emu_run er;
				/* the outputs of the device (h 0) and of the replay (h 1) */
				kern_out outs[2][8];
				float lostf[2][3];
				size_t nouts = 0;
				if (!kern_engine(&emu_kernel_attention, &pol, vs[vi].name, &in,
				                 &er))
					continue;
				int h;
				for (h = 0; h < (rt ? 2 : 1); h++) {
					float *b = g + (size_t)h * (5 * R * d + R);
					float *O = b, *L = b + R * d, *dq = L + R, *dk = dq + R * d,
					      *dv = dk + R * d;
					double lost[3] = {0, 0, 0};
					const gpu_tables *t = h ? rt : NULL;
					int bad = tc         ? attn_pipe(&a, h, t, O, L, &lost[0])
					          : bwd == 2 ? attn8_bwd(&a, h, t, dO, O, L, dq, dk,
					                                 dv, lost)
					                     : attn_seq(&a, bwd, h, t, dO, O, L,
					                                &lost[0], dq, dk, dv);
					if (bad) {
						step_failed("attn", err);
						break;
					}
					for (int q = 0; q < 3; q++)
						lostf[h][q] = (float)lost[q];
					kern_out *k = outs[h];
					nouts = 0;
					k[nouts++] = (kern_out){"O", O, R * d};
					k[nouts++] = (kern_out){"L", L, R};
					if (v == 2)
						k[nouts++] = (kern_out){"p_lost", &lostf[h][0], 1};
					if (bwd) {
						k[nouts++] = (kern_out){"dQ", dq, R * d};
						k[nouts++] = (kern_out){"dK", dk, R * d};
						k[nouts++] = (kern_out){"dV", dv, R * d};
					}
					if (bwd == 2) {
						k[nouts++] = (kern_out){"ds_lost", &lostf[h][1], 1};
						k[nouts++] = (kern_out){"amax_ds", &lostf[h][2], 1};
					}
				}
				if (h > 0)
					attn_compare(kname, fmts, &er, outs[0], nouts, NULL);
				if (h > 1)
					attn_compare(kname, fmts, &er, outs[0], nouts, outs[1]);
				emu_run_free(&er);
			}
	}
	gpu_report_note(
	    &rep,
	    "attn: attention on %zu queries and keys of head dim %zu, key blocks of "
	    "16 (fp8: 32, its mma.sync's k), causal 0 and 1: naive, online and fp8 "
	    "with :tc:h200-mma (Q·Kᵀ and P·V on our mma.sync GEMMs, fixed K order; fp16 "
	    "or bf16 compute), and naive, online, fp8, naive:bwd, online:bwd, fp8:bwd "
	    "with every GEMM a sequential FMA fold (fp8:bwd: dO quantised to e5m2 "
	    "and dS's scale chosen on the host); the rest from gpu/rows.h; against "
	    "the fast backend within 2 ulp (the GPU's exp and log), and bit for bit "
	    "against the host replay with the GPU's tables (and the h200 model)",
	    R, d);
out:
	gpu_tables_free(&tabs);
	free(x);
	free(qkv);
	free(fq);
	free(ds);
	free(g);
	free(dO);
}

int main(int argc, char **argv)
{
	gpu_opts o;
	char name[256];
	if (gpu_parse_args(argc, argv, &o, err, sizeof err)) {
		fprintf(stderr, "nanmap-gpu: %s\n", err);
		return 2;
	}
	if (o.help) {
		fputs(gpu_usage(), stdout);
		return 0;
	}
	if (gpu_dev_init(name, sizeof name, err, sizeof err)) {
		fprintf(stderr, "nanmap-gpu: no CUDA device (%s)\n", err);
		return GPU_EXIT_SKIP;
	}
	if (mkdir(o.out_dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "nanmap-gpu: cannot create %s: %s\n", o.out_dir, strerror(errno));
		return 2;
	}
	gpu_report_init(&rep, o.out_dir, "nanmap-gpu");
	gpu_report_note(&rep, "%s", name);
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
		gpu_report_note(&rep, "step %s: %.1f s", gpu_step_name(bits[s]), now() - t0);
		flush_report();
	}
	gpu_report_free(&rep);
	return failed_steps ? 1 : 0;
}
