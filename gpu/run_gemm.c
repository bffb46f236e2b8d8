/*
 * run_gemm.c — the runner's GEMM steps (gpu/run.h): gemm (our mma.sync GEMM
 * in a known K order, with and without promotion), gemmex (cuBLAS's fp16
 * GEMM) and lt (cuBLASLt's FP8 GEMM on inputs that reveal its promotion
 * interval), each against the Tensor Core model in natural K order.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "emu/kernels/tc.h"
#include "gpu/run.h"

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
void step_gemm(const gpu_opts *o)
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
		                run_err, sizeof run_err)) {
			step_failed("gemm", run_err);
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
void step_gemmex(const gpu_opts *o)
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
		if (gpu_dev_gemmex(c16, A, B, M, N, K, D, run_err, sizeof run_err)) {
			step_failed("gemmex", run_err);
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
	gpu_report_note(&run_rep,
	                "gemmex: cuBLAS picks its own K order and split; a mismatch against "
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
void step_lt(const gpu_opts *o)
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
			                   D, &splitk, run_err, sizeof run_err)) {
				step_failed("lt", run_err);
				continue;
			}
			gpu_report_note(
			    &run_rep, "lt %s: cuBLASLt algorithm with SPLITK_NUM %d%s", kern,
			    splitk,
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
	gpu_report_note(&run_rep,
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
