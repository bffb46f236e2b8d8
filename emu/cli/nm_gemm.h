/*
 * nm_gemm.h — `nanmap gemm`: a block-scaled GEMM through a Tensor Core
 * model, with its quantisation and accumulation errors (docs/gemm.md).
 */
#ifndef NANMAP_NM_GEMM_H
#define NANMAP_NM_GEMM_H

/* argv[0] is "gemm"; returns the exit status (0, or 2 after one error line). */
int nm_gemm_main(int argc, char **argv);

#endif
