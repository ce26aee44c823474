// shim.h: the C side of gpu/cuda. It loads the CUDA driver (libcuda.so.1)
// and cuBLASLt with dlopen and calls them through hand-typed function
// pointers, so nothing CUDA is needed to build or link, and the binary
// starts without a GPU. Device pointers cross into Go as uint64.
//
// Every function returns 0 on success, a CUresult (driver), or
// TG_LT_BASE + cublasStatus_t (cuBLASLt), or a TG_E_* code.
#ifndef TANDEM_GPU_SHIM_H
#define TANDEM_GPU_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define TG_E_NOLIB 1001     // a library could not be opened
#define TG_E_NOSYM 1002     // a library lacks a symbol
#define TG_E_NOALGO 1003    // cuBLASLt found no algorithm for a shape
#define TG_E_ARGS 1004      // bad arguments
#define TG_LT_BASE 2000     // cuBLASLt status s is reported as TG_LT_BASE + s

// Numeric values from cuda.h / cublasLt.h / library_types.h (CUDA 13.0),
// checked against the headers by scripts/kernels.sh abi.
#define TG_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define TG_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define TG_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define TG_CU_JIT_ERROR_LOG_BUFFER 5
#define TG_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define TG_CUDA_R_16BF 14
#define TG_CUDA_R_32F 0
#define TG_CUBLAS_COMPUTE_32F 68
#define TG_CUBLAS_OP_N 0
#define TG_CUBLAS_OP_T 1
#define TG_CUBLASLT_MATMUL_DESC_TRANSA 3
#define TG_CUBLASLT_MATMUL_DESC_TRANSB 4
#define TG_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1

// Types mirrored from cublasLt.h.
typedef int LtStatus;  // cublasStatus_t
typedef struct {
  uint64_t data[8];
} LtAlgo;  // cublasLtMatmulAlgo_t
typedef struct {
  LtAlgo algo;
  size_t workspaceSize;
  LtStatus state;
  float wavesCount;
  int reserved[4];
} LtHeuristic;  // cublasLtMatmulHeuristicResult_t

typedef struct tg_device tg_device;
typedef struct tg_plan tg_plan;

// Driver.
int tg_load(char* msg, size_t msg_len);  // dlopen libcuda.so.1, cuInit(0)
int tg_driver_version(int* version);
int tg_device_count(int* n);
const char* tg_error_name(int code);
int tg_open(int ordinal, tg_device** out);
int tg_close(tg_device* d);
int tg_info(tg_device* d, char* name, int name_len, int* num_sms, int* cc_major, int* cc_minor);
int tg_alloc(tg_device* d, size_t bytes, uint64_t* out);
int tg_free(tg_device* d, uint64_t p);
int tg_meminfo(tg_device* d, size_t* free_bytes, size_t* total_bytes);
int tg_htod(tg_device* d, uint64_t dst, const void* src, size_t bytes);
int tg_dtoh(tg_device* d, void* dst, uint64_t src, size_t bytes);
int tg_dtod(tg_device* d, uint64_t dst, uint64_t src, size_t bytes);
int tg_memset32(tg_device* d, uint64_t p, uint32_t value, size_t count);
int tg_sync(tg_device* d);
int tg_module_load(tg_device* d, const void* image, char* log, size_t log_len, void** module);
int tg_module_unload(tg_device* d, void* module);
int tg_function(void* module, const char* name, uint64_t* fn);  // fn: a CUfunction
int tg_launch(tg_device* d, uint64_t fn, const unsigned* grid, const unsigned* block, unsigned shared_bytes,
              uint64_t* params, int num_params);
int tg_event_create(tg_device* d, void** ev);
int tg_event_record(tg_device* d, void* ev);
int tg_event_elapsed(tg_device* d, void* start, void* end, float* ms);
int tg_event_destroy(tg_device* d, void* ev);

// cuBLASLt.
int tg_lt_load(const char* path, char* msg, size_t msg_len);  // path "" tries the usual sonames
int tg_lt_open(tg_device* d, size_t workspace_bytes);
int tg_lt_plan(tg_device* d, int y_f32, int rows, int in, int out, tg_plan** plan);
int tg_lt_plan_free(tg_plan* p);
int tg_lt_matmul(tg_device* d, tg_plan* p, uint64_t y, uint64_t x, uint64_t w);

#endif
