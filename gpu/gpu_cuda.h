/*
 * gpu_cuda.h — shared by the .cu files: turn a CUDA error into one line in
 * err and leave through the function's single cleanup label.
 */
#ifndef NANMAP_GPU_CUDA_H
#define NANMAP_GPU_CUDA_H

#include <cstdio>
#include <cuda_runtime.h>

#define GPU_CK(call)                                                                      \
	do {                                                                              \
		cudaError_t e_ = (call);                                                  \
		if (e_ != cudaSuccess) {                                                  \
			snprintf(err, len, "%s: %s", #call, cudaGetErrorString(e_));      \
			goto out;                                                         \
		}                                                                         \
	} while (0)

/* After a launch: launch errors, then errors while it ran. */
#define GPU_CK_LAUNCH()                                                                   \
	do {                                                                              \
		GPU_CK(cudaGetLastError());                                               \
		GPU_CK(cudaDeviceSynchronize());                                          \
	} while (0)

#endif
