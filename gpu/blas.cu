/*
 * blas.cu — the library GEMMs whose K order we do not choose: cublasGemmEx
 * with fp16 inputs (16F and 32F compute) and cuBLASLt FP8 with and without
 * FAST_ACCUM (FACTS §4). Row-major host matrices are passed as the
 * column-major transposes cuBLAS expects, so no copy is reshaped on the GPU.
 * The host compares the outputs with the Tensor Core model under candidate
 * orders and promotion intervals; that is a measurement, not a prediction.
 */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include "gpu/gpu_cuda.h"
#include "gpu/gpu_dev.h"

#define GPU_CKB(call)                                                                     \
	do {                                                                              \
		cublasStatus_t s_ = (call);                                               \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                        \
			snprintf(err, len, "%s: %s", #call, cublasGetStatusString(s_));   \
			goto out;                                                         \
		}                                                                         \
	} while (0)

extern "C" int gpu_dev_gemmex(int compute16, const uint16_t *A, const uint16_t *B, size_t M,
                              size_t N, size_t K, uint32_t *D, char *err, size_t len)
{
	cublasHandle_t h = NULL;
	unsigned short *dA = NULL, *dB = NULL;
	void *dD = NULL;
	size_t dsz = compute16 ? 2 : 4;
	unsigned short *tmp = NULL;
	int rc = -1;
	__half a16 = __float2half(1.0f), b16 = __float2half(0.0f);
	float a32 = 1.0f, b32 = 0.0f;
	GPU_CKB(cublasCreate(&h));
	GPU_CK(cudaMalloc(&dA, M * K * 2));
	GPU_CK(cudaMalloc(&dB, N * K * 2));
	GPU_CK(cudaMalloc(&dD, M * N * dsz));
	GPU_CK(cudaMemcpy(dA, A, M * K * 2, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dB, B, N * K * 2, cudaMemcpyHostToDevice));
	/* D^T (N×M column-major, = D row-major) = B (K×N col-major)^T · A (K×M col-major) */
	GPU_CKB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K,
	                     compute16 ? (const void *)&a16 : (const void *)&a32, dB, CUDA_R_16F,
	                     (int)K, dA, CUDA_R_16F, (int)K,
	                     compute16 ? (const void *)&b16 : (const void *)&b32, dD,
	                     compute16 ? CUDA_R_16F : CUDA_R_32F, (int)N,
	                     compute16 ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F,
	                     CUBLAS_GEMM_DEFAULT));
	GPU_CK(cudaDeviceSynchronize());
	if (compute16) {
		tmp = (unsigned short *)malloc(M * N * 2);
		if (!tmp) {
			snprintf(err, len, "gemmex: out of memory");
			goto out;
		}
		GPU_CK(cudaMemcpy(tmp, dD, M * N * 2, cudaMemcpyDeviceToHost));
		for (size_t i = 0; i < M * N; i++)
			D[i] = tmp[i];
	} else {
		GPU_CK(cudaMemcpy(D, dD, M * N * 4, cudaMemcpyDeviceToHost));
	}
	rc = 0;
out:
	free(tmp);
	cudaFree(dA);
	cudaFree(dB);
	cudaFree(dD);
	if (h)
		cublasDestroy(h);
	return rc;
}

extern "C" int gpu_dev_lt_fp8(gpu_fmt bfmt, int fast_accum, const uint8_t *A, const uint8_t *B,
                              size_t M, size_t N, size_t K, float scale_a, float scale_b,
                              uint32_t *D, int *splitk, char *err, size_t len)
{
	cublasLtHandle_t lt = NULL;
	cublasLtMatmulDesc_t op = NULL;
	cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t heur[32];
	int nres = 0, order[32], norder = 0, ran = -1;
	cublasStatus_t last = CUBLAS_STATUS_NOT_SUPPORTED;
	uint8_t *dA = NULL, *dB = NULL;
	/* the per-tensor scales enter as alpha = scale_a * scale_b, not as
	 * CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER: on the H200 with cuBLASLt 13.1
	 * every algorithm the heuristic returned refused to run with the scale
	 * pointers set, and ran without them (docs/gpu-results.md). For the
	 * power-of-two scales of the lt step the two are the same arithmetic. */
	float *dD = NULL, alpha = scale_a * scale_b, beta = 0.0f;
	uint32_t *cm = NULL;
	void *ws = NULL;
	size_t wsz = 32u << 20;
	cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	int8_t fa = fast_accum ? 1 : 0;
	cudaDataType_t bt = bfmt == GPU_E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
	int rc = -1;
	GPU_CKB(cublasLtCreate(&lt));
	GPU_CK(cudaMalloc(&dA, M * K));
	GPU_CK(cudaMalloc(&dB, N * K));
	GPU_CK(cudaMalloc(&dD, M * N * 4));
	GPU_CK(cudaMalloc(&ws, wsz));
	GPU_CK(cudaMemcpy(dA, A, M * K, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dB, B, N * K, cudaMemcpyHostToDevice));
	GPU_CKB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	GPU_CKB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
	GPU_CKB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
	GPU_CKB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa));
	/* TN: A is K×M column-major (our M×K row-major), B K×N (our N×K) */
	GPU_CKB(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, K, M, K));
	GPU_CKB(cublasLtMatrixLayoutCreate(&lb, bt, K, N, K));
	GPU_CKB(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, M, N, M));
	GPU_CKB(cublasLtMatmulPreferenceCreate(&pref));
	GPU_CKB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
	                                             &wsz, sizeof wsz));
	GPU_CKB(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 32, heur, &nres));
	/* Algorithms that do not split K first (a split changes the K order and
	 * would hide the promotion interval), then the rest, each in the
	 * heuristic's order; a returned algorithm is no promise that it runs
	 * (cuBLASLt's own samples try them one by one), so the first that runs
	 * is the one measured, its split reported. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < nres; i++) {
			int32_t sk = 1;
			size_t w = 0;
			if (heur[i].state != CUBLAS_STATUS_SUCCESS)
				continue;
			if (cublasLtMatmulAlgoConfigGetAttribute(&heur[i].algo,
			                                         CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk,
			                                         sizeof sk, &w) != CUBLAS_STATUS_SUCCESS)
				sk = 0; /* unknown */
			if ((sk == 1) == (pass == 0))
				order[norder++] = i;
		}
	*splitk = 0;
	for (int j = 0; j < norder && ran < 0; j++) {
		int i = order[j];
		last = cublasLtMatmul(lt, op, &alpha, dA, la, dB, lb, &beta, dD, ld, dD, ld,
		                      &heur[i].algo, ws, wsz, 0);
		if (last == CUBLAS_STATUS_SUCCESS) {
			int32_t sk = 0;
			size_t w = 0;
			ran = i;
			if (cublasLtMatmulAlgoConfigGetAttribute(&heur[i].algo,
			                                         CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk,
			                                         sizeof sk, &w) == CUBLAS_STATUS_SUCCESS)
				*splitk = sk;
		}
	}
	if (ran < 0) {
		snprintf(err, len,
		         "cuBLASLt: none of the %d FP8 algorithms the heuristic returned for M %zu N %zu "
		         "K %zu ran (last: %s)",
		         norder, M, N, K, cublasGetStatusString(last));
		goto out;
	}
	GPU_CK(cudaDeviceSynchronize());
	cm = (uint32_t *)malloc(M * N * 4);
	if (!cm) {
		snprintf(err, len, "lt: out of memory");
		goto out;
	}
	GPU_CK(cudaMemcpy(cm, dD, M * N * 4, cudaMemcpyDeviceToHost));
	for (size_t m = 0; m < M; m++)
		for (size_t n = 0; n < N; n++)
			D[m * N + n] = cm[n * M + m];
	rc = 0;
out:
	free(cm);
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	if (la)
		cublasLtMatrixLayoutDestroy(la);
	if (lb)
		cublasLtMatrixLayoutDestroy(lb);
	if (ld)
		cublasLtMatrixLayoutDestroy(ld);
	if (op)
		cublasLtMatmulDescDestroy(op);
	if (lt)
		cublasLtDestroy(lt);
	cudaFree(dA);
	cudaFree(dB);
	cudaFree(dD);
	cudaFree(ws);
	return rc;
}
