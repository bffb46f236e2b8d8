/*
 * mma.cu — our own Tensor Core GEMM with a known K order: one warp per
 * 16×8 output tile, mma.sync steps walking K upward, each step's D the next
 * step's C — the chained block FMA of the model in emu/kernels/tc.h, so the model's
 * prediction for every output element is exact, not statistical. With
 * promotion, every N products the tile's partial sum is added into binary32
 * registers with __fadd_rn and the chain restarts from +0 (DeepSeek-V3
 * §3.3.2; emu_tc_model.promote_every).
 * sm_90 has no FP8 mma.sync: ptxas emulates one with FP8 -> fp16 unpacking
 * and two chained fp16 HMMAs (FACTS §3), which the h200 FP8 -> fp16 preset
 * models; wgmma is the native FP8 path that the FP8 -> fp32 preset models.
 *
 * Fragment layouts: PTX ISA, "Matrix fragments for mma.m16n8k16" (fp16,
 * bf16) and "mma.m16n8k32" (e4m3, e5m2): groupID = lane/4, tig = lane%4.
 */
#include <cuda_fp16.h>

#include "gpu/gpu_cuda.h"
#include "gpu/gpu_dev.h"

/* Element i of a thread's A fragment: its row and column in the 16×k tile. */
static __device__ void a_pos(int kstep, int lane, int i, int *row, int *col)
{
	int g = lane >> 2, t = lane & 3;
	if (kstep == 16) {
		*row = g + ((i & 2) ? 8 : 0);
		*col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
	} else {
		*row = g + ((i & 4) ? 8 : 0);
		*col = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
	}
}

/* Element i of a thread's B fragment: its k (row) in the k×8 tile; column g. */
static __device__ int b_k(int kstep, int lane, int i)
{
	int t = lane & 3;
	if (kstep == 16)
		return t * 2 + (i & 1) + (i >= 2 ? 8 : 0);
	return t * 4 + (i & 3) + (i >= 4 ? 16 : 0);
}

/* Pack elements (16-bit or 8-bit encodings) into 32-bit registers. */
static __device__ void pack(int ebits, const unsigned short *e, int n, unsigned *r)
{
	int per = 32 / ebits;
	for (int j = 0; j < n / per; j++) {
		unsigned w = 0;
		for (int q = 0; q < per; q++)
			w |= (unsigned)(e[j * per + q] & ((1u << ebits) - 1)) << (q * ebits);
		r[j] = w;
	}
}

template <int FMT>
static __device__ void mma_f32(const unsigned *a, const unsigned *b, float *c)
{
	if (FMT == GPU_F16)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
		             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
		             : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	else if (FMT == GPU_BF16)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
		             : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	else if (FMT == GPU_E4M3)
		asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
		             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
		             : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	else
		asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 "
		             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
		             : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* fp16 accumulator: c holds two f16x2 registers (elements 0,1 and 2,3). */
template <int FMT>
static __device__ void mma_f16(const unsigned *a, const unsigned *b, unsigned *c)
{
	if (FMT == GPU_F16)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
		             "{%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
		             : "+r"(c[0]), "+r"(c[1])
		             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	else if (FMT == GPU_E4M3)
		asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 "
		             "{%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
		             : "+r"(c[0]), "+r"(c[1])
		             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	else if (FMT == GPU_E5M2)
		asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e5m2.f16 "
		             "{%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
		             : "+r"(c[0]), "+r"(c[1])
		             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int FMT, bool ACC16>
static __global__ void k_mma(const unsigned short *A, const unsigned short *B, const uint32_t *C,
                             size_t M, size_t N, size_t K, size_t promote, uint32_t *D)
{
	const int kstep = FMT == GPU_F16 || FMT == GPU_BF16 ? 16 : 32;
	const int ebits = kstep == 16 ? 16 : 8;
	const int na = kstep == 16 ? 8 : 16, nb = na / 2;
	size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
	int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	size_t tiles_n = N / 8;
	if (warp >= (M / 16) * tiles_n)
		return;
	size_t m0 = (warp / tiles_n) * 16, n0 = (warp % tiles_n) * 8;
	/* this thread's four C/D elements */
	size_t crow[4], ccol[4];
	for (int i = 0; i < 4; i++) {
		crow[i] = m0 + g + (i >= 2 ? 8 : 0);
		ccol[i] = n0 + t * 2 + (i & 1);
	}
	float part[4], acc[4];
	unsigned part16[2] = {0, 0};
	for (int i = 0; i < 4; i++) {
		uint32_t c = C[crow[i] * N + ccol[i]];
		acc[i] = __uint_as_float(c);
		part[i] = promote ? 0.0f : acc[i];
		if (ACC16)
			part16[i >> 1] |= (c & 0xffffu) << ((i & 1) * 16);
	}
	size_t since = 0;
	for (size_t k0 = 0; k0 < K; k0 += kstep) {
		unsigned short ea[16], eb[8];
		unsigned ra[4], rb[2];
		for (int i = 0; i < na; i++) {
			int r, c;
			a_pos(kstep, lane, i, &r, &c);
			ea[i] = A[(m0 + r) * K + k0 + c];
		}
		for (int i = 0; i < nb; i++)
			eb[i] = B[(n0 + g) * K + k0 + b_k(kstep, lane, i)];
		pack(ebits, ea, na, ra);
		pack(ebits, eb, nb, rb);
		if (ACC16) {
			mma_f16<FMT>(ra, rb, part16);
			continue;
		}
		mma_f32<FMT>(ra, rb, part);
		since += kstep;
		if (promote && since == promote) {
			for (int i = 0; i < 4; i++) {
				acc[i] = __fadd_rn(acc[i], part[i]);
				part[i] = 0.0f;
			}
			since = 0;
		}
	}
	for (int i = 0; i < 4; i++) {
		uint32_t d;
		if (ACC16)
			d = (part16[i >> 1] >> ((i & 1) * 16)) & 0xffffu;
		else if (promote)
			d = __float_as_uint(since ? __fadd_rn(acc[i], part[i]) : acc[i]);
		else
			d = __float_as_uint(part[i]);
		D[crow[i] * N + ccol[i]] = d;
	}
}

extern "C" int gpu_dev_mma(gpu_fmt in, int acc16, const uint16_t *A, const uint16_t *B,
                           const uint32_t *C, size_t M, size_t N, size_t K, size_t promote,
                           uint32_t *D, char *err, size_t len)
{
	size_t kstep = in == GPU_F16 || in == GPU_BF16 ? 16 : 32;
	unsigned short *dA = NULL, *dB = NULL;
	uint32_t *dC = NULL, *dD = NULL;
	size_t warps = (M / 16) * (N / 8);
	unsigned blocks = (unsigned)((warps * 32 + 127) / 128);
	int rc = -1;
	if (M % 16 || N % 8 || K % kstep || (promote && promote % kstep) ||
	    (acc16 && (in == GPU_BF16 || promote))) {
		snprintf(err, len, "mma: bad shape or mode (M %zu N %zu K %zu promote %zu acc16 %d)", M,
		         N, K, promote, acc16);
		return -1;
	}
	GPU_CK(cudaMalloc(&dA, M * K * sizeof *dA));
	GPU_CK(cudaMalloc(&dB, N * K * sizeof *dB));
	GPU_CK(cudaMalloc(&dC, M * N * sizeof *dC));
	GPU_CK(cudaMalloc(&dD, M * N * sizeof *dD));
	GPU_CK(cudaMemcpy(dA, A, M * K * sizeof *dA, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dB, B, N * K * sizeof *dB, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(dC, C, M * N * sizeof *dC, cudaMemcpyHostToDevice));
#define LAUNCH(F, A16) k_mma<F, A16><<<blocks, 128>>>(dA, dB, dC, M, N, K, promote, dD)
	switch (in) {
	case GPU_F16:
		if (acc16)
			LAUNCH(GPU_F16, true);
		else
			LAUNCH(GPU_F16, false);
		break;
	case GPU_BF16:
		LAUNCH(GPU_BF16, false);
		break;
	case GPU_E4M3:
		if (acc16)
			LAUNCH(GPU_E4M3, true);
		else
			LAUNCH(GPU_E4M3, false);
		break;
	default:
		if (acc16)
			LAUNCH(GPU_E5M2, true);
		else
			LAUNCH(GPU_E5M2, false);
		break;
	}
#undef LAUNCH
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(D, dD, M * N * sizeof *dD, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(dA);
	cudaFree(dB);
	cudaFree(dC);
	cudaFree(dD);
	return rc;
}
