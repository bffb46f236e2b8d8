/*
 * run_scalar.c — the runner's scalar steps (gpu/run.h): conv (every binary32
 * input, or a stride of them, to fp16, bf16, e4m3 and e5m2, and every
 * encoding back), arith (fp16/bf16 add, mul and fma on sampled or all
 * pairs) and tables (the approximate functions on every fp16/bf16 input,
 * written to OUT/gpu-tables.txt for the replays).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu/run.h"

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

void step_conv(const gpu_opts *o)
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
		size_t idx = run_rep.nrows;
		if (gpu_report_add(&run_rep, &row))
			idx = SIZE_MAX;
		for (uint64_t j0 = 0; j0 < total && ok; j0 += chunk) {
			size_t n = total - j0 < chunk ? (size_t)(total - j0) : chunk;
			if (gpu_dev_convert(conv_rows[r].kind, j0 * o->stride, o->stride, n, got,
			                    run_err, sizeof run_err)) {
				ok = false;
				break;
			}
			gpu_cmp_convert(&row, f, &env, j0, o->stride, n, got);
			if (idx != SIZE_MAX) {
				run_rep.rows[idx] = row;
				flush_report();
			}
		}
		if (!ok) {
			char what[700];
			snprintf(what, sizeof what,
			         "%s %s: %s (the row holds the inputs compared before)",
			         conv_rows[r].fmt, conv_rows[r].mode, run_err);
			step_failed("conv", what);
			continue;
		}
		print_row(&row);
		gpu_report_note(&run_rep,
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
		if (gpu_dev_widen((gpu_fmt)g, wide, run_err, sizeof run_err)) {
			step_failed("conv", run_err);
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
void step_arith(const gpu_opts *o)
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
				if (gpu_dev_arith((gpu_fmt)g, op, a, b, c, n, got, run_err,
				                  sizeof run_err)) {
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
				step_failed("arith", run_err);
				continue;
			}
			add_row(&row);
		}
	}
	free(buf);
}

/* ---- tables: the approximate functions on every fp16/bf16 input ---- */
void step_tables(const gpu_opts *o)
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
			if (gpu_dev_table((gpu_fmt)g, fn, cur->v, run_err, sizeof run_err)) {
				step_failed("tables", run_err);
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
	         run_rep.notes && run_rep.nnotes ? run_rep.notes[0] : "a GPU");
	if (nt && gpu_tables_write(path, note, t, nt, run_err, sizeof run_err))
		step_failed("tables", run_err);
	else if (nt) {
		/* the file must replay the GPU bit for bit */
		gpu_tables ts;
		if (gpu_tables_load(path, &ts, run_err, sizeof run_err)) {
			step_failed("tables", run_err);
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
