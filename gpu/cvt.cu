/*
 * cvt.cu — conversions, elementwise fp16/bf16 arithmetic and the
 * approximate functions, one thread per element. Built with --fmad=false
 * and the _rn intrinsics so that nothing is fused or reordered: each
 * output is exactly the one operation named (FACTS §2).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "gpu/gpu_cuda.h"
#include "gpu/gpu_dev.h"

extern "C" int gpu_dev_init(char *name, size_t nlen, char *err, size_t len)
{
	int n = 0;
	cudaDeviceProp p;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		snprintf(err, len, "%s", cudaGetErrorString(e));
		return -1;
	}
	if (n == 0) {
		snprintf(err, len, "cudaGetDeviceCount found 0 devices");
		return -1;
	}
	e = cudaGetDeviceProperties(&p, 0);
	if (e != cudaSuccess) {
		snprintf(err, len, "%s", cudaGetErrorString(e));
		return -1;
	}
	snprintf(name, nlen, "%s (sm_%d%d, %d SMs)", p.name, p.major, p.minor,
	         p.multiProcessorCount);
	return 0;
}

static __device__ unsigned short cvt_sat_f16(float x)
{
	unsigned short r;
	asm("cvt.rn.satfinite.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
	return r;
}

static __device__ unsigned short cvt_sat_bf16(float x)
{
	unsigned short r;
	asm("cvt.rn.satfinite.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
	return r;
}

static __device__ unsigned short convert_one(int kind, float x)
{
	switch (kind) {
	case GPU_CV_F16_RN:
		return __half_as_ushort(__float2half_rn(x));
	case GPU_CV_F16_RZ:
		return __half_as_ushort(__float2half_rz(x));
	case GPU_CV_F16_RN_SAT:
		return cvt_sat_f16(x);
	case GPU_CV_BF16_RN:
		return __bfloat16_as_ushort(__float2bfloat16_rn(x));
	case GPU_CV_BF16_RZ:
		return __bfloat16_as_ushort(__float2bfloat16_rz(x));
	case GPU_CV_BF16_RN_SAT:
		return cvt_sat_bf16(x);
	case GPU_CV_E4M3_SAT:
		return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
	case GPU_CV_E4M3_NOSAT:
		return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3);
	case GPU_CV_E5M2_SAT:
		return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
	default:
		return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
	}
}

static __global__ void k_convert(int kind, uint64_t first, uint64_t stride, size_t n,
                                 unsigned short *out)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t bits = (uint32_t)(first + i * stride);
	out[i] = convert_one(kind, __uint_as_float(bits));
}

extern "C" int gpu_dev_convert(gpu_cv kind, uint64_t first, uint64_t stride, size_t n,
                               uint16_t *out, char *err, size_t len)
{
	unsigned short *d = NULL;
	int rc = -1;
	GPU_CK(cudaMalloc(&d, n * sizeof *d));
	k_convert<<<(unsigned)((n + 255) / 256), 256>>>((int)kind, first, stride, n, d);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(out, d, n * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

static __global__ void k_widen(int f, uint32_t *out, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x;
	if (f == GPU_F16) {
		x = __half2float(__ushort_as_half((unsigned short)i));
	} else if (f == GPU_BF16) {
		x = __bfloat162float(__ushort_as_bfloat16((unsigned short)i));
	} else if (f == GPU_E4M3) {
		__nv_fp8_e4m3 v;
		v.__x = (__nv_fp8_storage_t)i;
		x = (float)v;
	} else {
		__nv_fp8_e5m2 v;
		v.__x = (__nv_fp8_storage_t)i;
		x = (float)v;
	}
	out[i] = __float_as_uint(x);
}

extern "C" int gpu_dev_widen(gpu_fmt f, uint32_t *out, char *err, size_t len)
{
	unsigned n = f == GPU_F16 || f == GPU_BF16 ? 65536 : 256;
	uint32_t *d = NULL;
	int rc = -1;
	GPU_CK(cudaMalloc(&d, n * sizeof *d));
	k_widen<<<(n + 255) / 256, 256>>>((int)f, d, n);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(out, d, n * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

template <typename T> static __device__ T from_bits(unsigned short b);
template <> __device__ __half from_bits<__half>(unsigned short b)
{
	return __ushort_as_half(b);
}
template <> __device__ __nv_bfloat16 from_bits<__nv_bfloat16>(unsigned short b)
{
	return __ushort_as_bfloat16(b);
}
static __device__ unsigned short to_bits(__half h)
{
	return __half_as_ushort(h);
}
static __device__ unsigned short to_bits(__nv_bfloat16 h)
{
	return __bfloat16_as_ushort(h);
}

template <typename T>
static __global__ void k_arith(int op, const unsigned short *a, const unsigned short *b,
                               const unsigned short *c, size_t n, unsigned short *out)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	T x = from_bits<T>(a[i]), y = from_bits<T>(b[i]);
	T r;
	if (op == 0)
		r = __hadd_rn(x, y);
	else if (op == 1)
		r = __hmul_rn(x, y);
	else
		r = __hfma(x, y, from_bits<T>(c[i]));
	out[i] = to_bits(r);
}

extern "C" int gpu_dev_arith(gpu_fmt f, int op, const uint16_t *a, const uint16_t *b,
                             const uint16_t *c, size_t n, uint16_t *out, char *err, size_t len)
{
	unsigned short *d = NULL;
	int rc = -1;
	size_t sz = n * sizeof(unsigned short);
	unsigned blocks = (unsigned)((n + 255) / 256);
	if (f != GPU_F16 && f != GPU_BF16) {
		snprintf(err, len, "arith: fp16 or bf16 only");
		return -1;
	}
	GPU_CK(cudaMalloc(&d, 4 * sz));
	GPU_CK(cudaMemcpy(d, a, sz, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + n, b, sz, cudaMemcpyHostToDevice));
	GPU_CK(cudaMemcpy(d + 2 * n, c ? c : a, sz, cudaMemcpyHostToDevice));
	if (f == GPU_F16)
		k_arith<__half><<<blocks, 256>>>(op, d, d + n, d + 2 * n, n, d + 3 * n);
	else
		k_arith<__nv_bfloat16><<<blocks, 256>>>(op, d, d + n, d + 2 * n, n, d + 3 * n);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(out, d + 3 * n, sz, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}

template <typename T> static __global__ void k_table(int func, unsigned short *out)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= 65536)
		return;
	T x = from_bits<T>((unsigned short)i), r;
	switch (func) {
	case 0:
		r = hexp(x);
		break;
	case 1:
		r = hlog(x);
		break;
	case 2:
		r = hexp2(x);
		break;
	case 3:
		r = hrcp(x);
		break;
	case 4:
		r = hrsqrt(x);
		break;
	default:
		r = hsqrt(x);
		break;
	}
	out[i] = to_bits(r);
}

extern "C" int gpu_dev_table(gpu_fmt f, int func, uint16_t *out, char *err, size_t len)
{
	unsigned short *d = NULL;
	int rc = -1;
	if (f != GPU_F16 && f != GPU_BF16) {
		snprintf(err, len, "tables: fp16 or bf16 only");
		return -1;
	}
	GPU_CK(cudaMalloc(&d, 65536 * sizeof *d));
	if (f == GPU_F16)
		k_table<__half><<<256, 256>>>(func, d);
	else
		k_table<__nv_bfloat16><<<256, 256>>>(func, d);
	GPU_CK_LAUNCH();
	GPU_CK(cudaMemcpy(out, d, 65536 * sizeof *d, cudaMemcpyDeviceToHost));
	rc = 0;
out:
	cudaFree(d);
	return rc;
}
