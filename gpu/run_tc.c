/*
 * run_tc.c — the runner's Tensor Core steps (gpu/run.h): tc (the recorded
 * hardware vectors through our mma.sync, against the h200-mma model and
 * the recording) and rules (each disputed rule of gpu/tc-rules.txt on one
 * mma.sync, with the reading the GPU returned).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/kernels/tc.h"
#include "gpu/run.h"

/* Encodings of binary32 values that in holds exactly. */
static uint16_t enc_of(const emu_format *in, uint32_t bits)
{
	float v;
	memcpy(&v, &bits, sizeof v);
	return (uint16_t)emu_from_float(in, v, &env_rne).bits;
}

/* ---- tc: the hardware vectors through our mma.sync ---- */
void step_tc(const gpu_opts *o)
{
	static const struct {
		const char *dir, *in, *out;
	} sets[] = {{"fp16", "fp16", "fp32"}, {"fp16", "fp16", "fp16"}, {"bf16", "bf16", "fp32"},
	            {"E4M3", "e4m3", "fp32"}, {"E4M3", "e4m3", "fp16"}, {"E5M2", "e5m2", "fp32"},
	            {"E5M2", "e5m2", "fp16"}};
	if (!o->tc_vectors) {
		gpu_report_note(&run_rep,
		                "tc: SKIPPED: no vectors path (--tc-vectors or NANMAP_TC_VECTORS)");
		printf("tc: SKIPPED: no vectors path (--tc-vectors or NANMAP_TC_VECTORS)\n");
		flush_report();
		return;
	}
	gpu_report_note(&run_rep,
	                "tc: tf32 vectors not run: the mma kernel takes fp16, bf16 and fp8");
	gpu_report_note(&run_rep,
	                "tc: FP8 mma.sync on sm_90 is emulated by ptxas (fp16 HMMAs), which the "
	                "h200-mma preset models; the recorded FP8 -> fp32 files are wgmma's "
	                "native path (the h200 preset), so mma.sync against them is a "
	                "measurement of how the two paths differ");
	for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
		gpu_tcv v;
		int rc = gpu_tcv_load(o->tc_vectors, "H200", sets[s].dir, sets[s].out, &v, run_err,
		                      sizeof run_err);
		if (rc == 1) {
			gpu_report_note(&run_rep, "tc: SKIPPED %s->%s: %s", sets[s].in, sets[s].out,
			                run_err);
			printf("tc: SKIPPED %s->%s: %s\n", sets[s].in, sets[s].out, run_err);
			continue;
		}
		if (rc) {
			step_failed("tc", run_err);
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
			if (gpu_dev_mma(gfmt(in), acc16, A, B, C, 16, 8, K, 0, D, run_err,
			                sizeof run_err)) {
				step_failed("tc", run_err);
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
void step_rules(const gpu_opts *o)
{
	gpu_rule *rs = NULL;
	size_t n = 0;
	if (gpu_rules_load(o->tc_rules, &rs, &n, run_err, sizeof run_err)) {
		step_failed("rules", run_err);
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
		snprintf(run_err, sizeof run_err, "cannot write %s: %s", tmp, strerror(errno));
		step_failed("rules", run_err);
		free(rs);
		return;
	}
	fprintf(csv, "case,in,out,gpu,model,other,reading\n");
	gpu_report_note(&run_rep,
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
		if (gpu_dev_mma(gfmt(r->in), acc16, A, B, C, 16, 8, r->K, 0, D, run_err,
		                sizeof run_err)) {
			step_failed("rules", run_err);
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
		gpu_report_note(&run_rep,
		                "rules: %-18s %s->%s: GPU 0x%0*" PRIx64 ", model 0x%0*" PRIx64
		                ", other %s: %s",
		                r->name, r->in->name, r->out->name, w, (uint64_t)got, w,
		                (uint64_t)r->model, ms, reading);
		add_row(&row);
	}
	if (fclose(csv) != 0 || rename(tmp, path) != 0) {
		snprintf(run_err, sizeof run_err, "cannot write %s: %s", path, strerror(errno));
		step_failed("rules", run_err);
		remove(tmp);
	}
	free(rs);
}
