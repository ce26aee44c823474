// abi_check.c: compiled (never linked) by `scripts/kernels.sh abi` against
// the CUDA 13.0 headers of the nvidia-* PyPI wheels, to check the numbers
// and struct layouts shim.h types by hand. Not part of the Go build: the
// build tag below never holds.
//go:build tandem_abi_check

#include <cublasLt.h>
#include <cuda.h>
#include <library_types.h>

#include "shim.h"

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
SAME(TG_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(TG_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(TG_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(TG_CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER);
SAME(TG_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
SAME(TG_CUDA_R_16BF, CUDA_R_16BF);
SAME(TG_CUDA_R_32F, CUDA_R_32F);
SAME(TG_CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F);
SAME(TG_CUBLAS_OP_N, CUBLAS_OP_N);
SAME(TG_CUBLAS_OP_T, CUBLAS_OP_T);
SAME(TG_CUBLASLT_MATMUL_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSA);
SAME(TG_CUBLASLT_MATMUL_DESC_TRANSB, CUBLASLT_MATMUL_DESC_TRANSB);
SAME(TG_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
_Static_assert(sizeof(LtAlgo) == sizeof(cublasLtMatmulAlgo_t), "LtAlgo size");
_Static_assert(sizeof(LtHeuristic) == sizeof(cublasLtMatmulHeuristicResult_t), "LtHeuristic size");
_Static_assert(__builtin_offsetof(LtHeuristic, workspaceSize) == __builtin_offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize), "workspaceSize offset");
_Static_assert(__builtin_offsetof(LtHeuristic, state) == __builtin_offsetof(cublasLtMatmulHeuristicResult_t, state), "state offset");
_Static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), "CUdeviceptr is 64-bit");
_Static_assert(sizeof(CUdevice) == sizeof(int), "CUdevice is int");
_Static_assert(sizeof(CUresult) == sizeof(int), "CUresult is int");
