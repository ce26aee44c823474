//go:build cuda

// shim.c: see shim.h. Every call that touches a device first makes its
// context current on the calling OS thread: goroutines move between
// threads, so no thread state is trusted between calls.
#include "shim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUres;
typedef uint64_t CUptr;

struct tg_device {
  int ordinal;
  int dev;       // CUdevice
  void* ctx;     // CUcontext (the primary context)
  void* stream;  // CUstream
  void* lt;      // cublasLtHandle_t, once tg_lt_open ran
  CUptr workspace;
  size_t workspace_bytes;
};

// ---- driver ------------------------------------------------------------------

static void* libcuda;
static CUres (*cuInit)(unsigned);
static CUres (*cuDriverGetVersion)(int*);
static CUres (*cuDeviceGetCount)(int*);
static CUres (*cuDeviceGet)(int*, int);
static CUres (*cuDeviceGetName)(char*, int, int);
static CUres (*cuDeviceGetAttribute)(int*, int, int);
static CUres (*cuDevicePrimaryCtxRetain)(void**, int);
static CUres (*cuDevicePrimaryCtxRelease)(int);
static CUres (*cuCtxSetCurrent)(void*);
static CUres (*cuStreamCreate)(void**, unsigned);
static CUres (*cuStreamDestroy)(void*);
static CUres (*cuStreamSynchronize)(void*);
static CUres (*cuMemAlloc)(CUptr*, size_t);
static CUres (*cuMemFree)(CUptr);
static CUres (*cuMemGetInfo)(size_t*, size_t*);
static CUres (*cuMemcpyHtoD)(CUptr, const void*, size_t);
static CUres (*cuMemcpyDtoH)(void*, CUptr, size_t);
static CUres (*cuMemcpyDtoDAsync)(CUptr, CUptr, size_t, void*);
static CUres (*cuMemsetD32Async)(CUptr, unsigned, size_t, void*);
static CUres (*cuModuleLoadDataEx)(void**, const void*, unsigned, int*, void**);
static CUres (*cuModuleUnload)(void*);
static CUres (*cuModuleGetFunction)(void**, void*, const char*);
static CUres (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                               void**, void**);
static CUres (*cuEventCreate)(void**, unsigned);
static CUres (*cuEventRecord)(void*, void*);
static CUres (*cuEventSynchronize)(void*);
static CUres (*cuEventElapsedTime)(float*, void*, void*);
static CUres (*cuEventDestroy)(void*);
static CUres (*cuGetErrorName)(CUres, const char**);

// sym resolves the first of names that lib exports into *fp.
static int sym(void* lib, void** fp, const char* const* names, char* msg, size_t msg_len) {
  for (; *names; names++) {
    *fp = dlsym(lib, *names);
    if (*fp) return 0;
  }
  snprintf(msg, msg_len, "symbol %s not found", names[-1]);
  return TG_E_NOSYM;
}

#define SYM(lib, var, ...)                                                           \
  do {                                                                               \
    static const char* const names_##var[] = {__VA_ARGS__, NULL};                    \
    int rc_ = sym(lib, (void**)&var, names_##var, msg, msg_len);                     \
    if (rc_) return rc_;                                                             \
  } while (0)

int tg_load(char* msg, size_t msg_len) {
  if (libcuda) return 0;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(msg, msg_len, "%s", dlerror());
    return TG_E_NOLIB;
  }
  SYM(lib, cuInit, "cuInit");
  SYM(lib, cuDriverGetVersion, "cuDriverGetVersion");
  SYM(lib, cuDeviceGetCount, "cuDeviceGetCount");
  SYM(lib, cuDeviceGet, "cuDeviceGet");
  SYM(lib, cuDeviceGetName, "cuDeviceGetName");
  SYM(lib, cuDeviceGetAttribute, "cuDeviceGetAttribute");
  SYM(lib, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(lib, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  SYM(lib, cuCtxSetCurrent, "cuCtxSetCurrent");
  SYM(lib, cuStreamCreate, "cuStreamCreate");
  SYM(lib, cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
  SYM(lib, cuStreamSynchronize, "cuStreamSynchronize");
  SYM(lib, cuMemAlloc, "cuMemAlloc_v2");
  SYM(lib, cuMemFree, "cuMemFree_v2");
  SYM(lib, cuMemGetInfo, "cuMemGetInfo_v2");
  SYM(lib, cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  SYM(lib, cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  SYM(lib, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  SYM(lib, cuMemsetD32Async, "cuMemsetD32Async");
  SYM(lib, cuModuleLoadDataEx, "cuModuleLoadDataEx");
  SYM(lib, cuModuleUnload, "cuModuleUnload");
  SYM(lib, cuModuleGetFunction, "cuModuleGetFunction");
  SYM(lib, cuLaunchKernel, "cuLaunchKernel");
  SYM(lib, cuEventCreate, "cuEventCreate");
  SYM(lib, cuEventRecord, "cuEventRecord");
  SYM(lib, cuEventSynchronize, "cuEventSynchronize");
  SYM(lib, cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  SYM(lib, cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
  SYM(lib, cuGetErrorName, "cuGetErrorName");
  CUres rc = cuInit(0);
  if (rc) {
    const char* name = NULL;
    cuGetErrorName(rc, &name);
    snprintf(msg, msg_len, "cuInit: %s (%d)", name ? name : "unknown error", rc);
    dlclose(lib);
    return rc;
  }
  libcuda = lib;
  return 0;
}

const char* tg_error_name(int code) {
  const char* name = NULL;
  if (libcuda && code > 0 && code < 1000 && cuGetErrorName(code, &name) == 0 && name) return name;
  switch (code) {
    case TG_E_NOLIB: return "library not found";
    case TG_E_NOSYM: return "symbol not found";
    case TG_E_NOALGO: return "cuBLASLt: no algorithm";
    case TG_E_ARGS: return "bad arguments";
  }
  if (code >= TG_LT_BASE) return "cuBLASLt error";
  return "unknown error";
}

int tg_driver_version(int* version) { return cuDriverGetVersion(version); }
int tg_device_count(int* n) { return cuDeviceGetCount(n); }

#define CHECK(call)          \
  do {                       \
    CUres rc_ = (call);      \
    if (rc_) return rc_;     \
  } while (0)
#define CURRENT(d) CHECK(cuCtxSetCurrent((d)->ctx))

int tg_open(int ordinal, tg_device** out) {
  tg_device* d = calloc(1, sizeof(*d));
  if (!d) return TG_E_ARGS;
  d->ordinal = ordinal;
  CUres rc = cuDeviceGet(&d->dev, ordinal);
  if (!rc) rc = cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
  if (rc) {
    free(d);
    return rc;
  }
  rc = cuCtxSetCurrent(d->ctx);
  if (!rc) rc = cuStreamCreate(&d->stream, 0);  // blocking: ordered with the legacy stream's copies
  if (rc) {
    cuDevicePrimaryCtxRelease(d->dev);
    free(d);
    return rc;
  }
  *out = d;
  return 0;
}

int tg_info(tg_device* d, char* name, int name_len, int* num_sms, int* cc_major, int* cc_minor) {
  CHECK(cuDeviceGetName(name, name_len, d->dev));
  CHECK(cuDeviceGetAttribute(num_sms, TG_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev));
  CHECK(cuDeviceGetAttribute(cc_major, TG_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev));
  return cuDeviceGetAttribute(cc_minor, TG_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
}

int tg_alloc(tg_device* d, size_t bytes, uint64_t* out) {
  CURRENT(d);
  CUptr p = 0;
  CHECK(cuMemAlloc(&p, bytes));
  *out = p;
  return 0;
}

int tg_free(tg_device* d, uint64_t p) {
  CURRENT(d);
  return cuMemFree(p);
}

int tg_meminfo(tg_device* d, size_t* free_bytes, size_t* total_bytes) {
  CURRENT(d);
  return cuMemGetInfo(free_bytes, total_bytes);
}

int tg_htod(tg_device* d, uint64_t dst, const void* src, size_t bytes) {
  CURRENT(d);
  return cuMemcpyHtoD(dst, src, bytes);
}

int tg_dtoh(tg_device* d, void* dst, uint64_t src, size_t bytes) {
  CURRENT(d);
  CHECK(cuStreamSynchronize(d->stream));
  return cuMemcpyDtoH(dst, src, bytes);
}

int tg_dtod(tg_device* d, uint64_t dst, uint64_t src, size_t bytes) {
  CURRENT(d);
  return cuMemcpyDtoDAsync(dst, src, bytes, d->stream);
}

int tg_memset32(tg_device* d, uint64_t p, uint32_t value, size_t count) {
  CURRENT(d);
  return cuMemsetD32Async(p, value, count, d->stream);
}

int tg_sync(tg_device* d) {
  CURRENT(d);
  return cuStreamSynchronize(d->stream);
}

int tg_module_load(tg_device* d, const void* image, char* log, size_t log_len, void** module) {
  CURRENT(d);
  int opts[2] = {TG_CU_JIT_ERROR_LOG_BUFFER, TG_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[2] = {log, (void*)(uintptr_t)log_len};
  log[0] = 0;
  return cuModuleLoadDataEx(module, image, 2, opts, vals);
}

int tg_module_unload(tg_device* d, void* module) {
  CURRENT(d);
  return cuModuleUnload(module);
}

int tg_function(void* module, const char* name, uint64_t* fn) {
  void* f = NULL;
  CHECK(cuModuleGetFunction(&f, module, name));
  *fn = (uint64_t)(uintptr_t)f;
  return 0;
}

int tg_launch(tg_device* d, uint64_t fn, const unsigned* grid, const unsigned* block, unsigned shared_bytes,
              uint64_t* params, int num_params) {
  if (num_params > 32) return TG_E_ARGS;
  void* ptrs[32];
  for (int i = 0; i < num_params; i++) ptrs[i] = &params[i];
  CURRENT(d);
  return cuLaunchKernel((void*)(uintptr_t)fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, d->stream, ptrs,
                        NULL);
}

int tg_event_create(tg_device* d, void** ev) {
  CURRENT(d);
  return cuEventCreate(ev, 0);
}

int tg_event_record(tg_device* d, void* ev) {
  CURRENT(d);
  return cuEventRecord(ev, d->stream);
}

int tg_event_elapsed(tg_device* d, void* start, void* end, float* ms) {
  CURRENT(d);
  CHECK(cuEventSynchronize(end));
  return cuEventElapsedTime(ms, start, end);
}

int tg_event_destroy(tg_device* d, void* ev) {
  CURRENT(d);
  return cuEventDestroy(ev);
}

// ---- cuBLASLt ----------------------------------------------------------------

static void* liblt;
static LtStatus (*ltCreate)(void**);
static LtStatus (*ltDestroy)(void*);
static LtStatus (*ltMatmulDescCreate)(void**, int, int);
static LtStatus (*ltMatmulDescDestroy)(void*);
static LtStatus (*ltMatmulDescSetAttribute)(void*, int, const void*, size_t);
static LtStatus (*ltMatrixLayoutCreate)(void**, int, uint64_t, uint64_t, int64_t);
static LtStatus (*ltMatrixLayoutDestroy)(void*);
static LtStatus (*ltMatmulPreferenceCreate)(void**);
static LtStatus (*ltMatmulPreferenceDestroy)(void*);
static LtStatus (*ltMatmulPreferenceSetAttribute)(void*, int, const void*, size_t);
static LtStatus (*ltMatmulAlgoGetHeuristic)(void*, void*, void*, void*, void*, void*, void*, int, LtHeuristic*, int*);
static LtStatus (*ltMatmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*,
                            const void*, void*, void*, void*, const LtAlgo*, void*, size_t, void*);

int tg_lt_load(const char* path, char* msg, size_t msg_len) {
  if (liblt) return 0;
  static const char* const sonames[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", NULL};
  void* lib = NULL;
  if (path && *path) {
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  } else {
    for (const char* const* s = sonames; *s && !lib; s++) lib = dlopen(*s, RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) {
    snprintf(msg, msg_len, "%s", path && *path ? dlerror() : "libcublasLt.so.13 / .12 not found");
    return TG_E_NOLIB;
  }
  SYM(lib, ltCreate, "cublasLtCreate");
  SYM(lib, ltDestroy, "cublasLtDestroy");
  SYM(lib, ltMatmulDescCreate, "cublasLtMatmulDescCreate");
  SYM(lib, ltMatmulDescDestroy, "cublasLtMatmulDescDestroy");
  SYM(lib, ltMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  SYM(lib, ltMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  SYM(lib, ltMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  SYM(lib, ltMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  SYM(lib, ltMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  SYM(lib, ltMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  SYM(lib, ltMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  SYM(lib, ltMatmul, "cublasLtMatmul");
  liblt = lib;
  return 0;
}

#define LT(call)                          \
  do {                                    \
    LtStatus s_ = (call);                 \
    if (s_) return TG_LT_BASE + s_;       \
  } while (0)

int tg_lt_open(tg_device* d, size_t workspace_bytes) {
  if (!liblt) return TG_E_NOLIB;
  if (d->lt) return 0;
  CURRENT(d);
  LT(ltCreate(&d->lt));
  if (workspace_bytes) {
    CUres rc = cuMemAlloc(&d->workspace, workspace_bytes);
    if (rc) return rc;
  }
  d->workspace_bytes = workspace_bytes;
  return 0;
}

// A plan is one GEMM shape: Y[rows][out] = X[rows][in] · W[out][in]ᵀ,
// row-major. In cuBLAS's column-major terms that is Yᵀ (out × rows,
// ld out) = op_T(W: in × out, ld in) · Xᵀ (in × rows, ld in): m = out,
// n = rows, k = in, A = W transposed, B = X.
struct tg_plan {
  void* desc;
  void* a;  // W
  void* b;  // X
  void* c;  // Y
  LtAlgo algo;
  size_t workspace;
};

int tg_lt_plan_free(tg_plan* p) {
  if (!p) return 0;
  if (p->desc) ltMatmulDescDestroy(p->desc);
  if (p->a) ltMatrixLayoutDestroy(p->a);
  if (p->b) ltMatrixLayoutDestroy(p->b);
  if (p->c) ltMatrixLayoutDestroy(p->c);
  free(p);
  return 0;
}

int tg_lt_plan(tg_device* d, int y_f32, int rows, int in, int out, tg_plan** plan) {
  if (!d->lt) return TG_E_NOLIB;
  if (rows <= 0 || in <= 0 || out <= 0) return TG_E_ARGS;
  CURRENT(d);
  tg_plan* p = calloc(1, sizeof(*p));
  if (!p) return TG_E_ARGS;
  int opT = TG_CUBLAS_OP_T, opN = TG_CUBLAS_OP_N;
  int yType = y_f32 ? TG_CUDA_R_32F : TG_CUDA_R_16BF;
  LtStatus s = ltMatmulDescCreate(&p->desc, TG_CUBLAS_COMPUTE_32F, TG_CUDA_R_32F);
  if (!s) s = ltMatmulDescSetAttribute(p->desc, TG_CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT));
  if (!s) s = ltMatmulDescSetAttribute(p->desc, TG_CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN));
  if (!s) s = ltMatrixLayoutCreate(&p->a, TG_CUDA_R_16BF, (uint64_t)in, (uint64_t)out, in);
  if (!s) s = ltMatrixLayoutCreate(&p->b, TG_CUDA_R_16BF, (uint64_t)in, (uint64_t)rows, in);
  if (!s) s = ltMatrixLayoutCreate(&p->c, yType, (uint64_t)out, (uint64_t)rows, out);
  void* pref = NULL;
  if (!s) s = ltMatmulPreferenceCreate(&pref);
  uint64_t ws = d->workspace_bytes;
  if (!s) s = ltMatmulPreferenceSetAttribute(pref, TG_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  LtHeuristic h;
  int found = 0;
  if (!s) s = ltMatmulAlgoGetHeuristic(d->lt, p->desc, p->a, p->b, p->c, p->c, pref, 1, &h, &found);
  if (pref) ltMatmulPreferenceDestroy(pref);
  if (s) {
    tg_lt_plan_free(p);
    return TG_LT_BASE + s;
  }
  if (found < 1) {
    tg_lt_plan_free(p);
    return TG_E_NOALGO;
  }
  p->algo = h.algo;
  p->workspace = h.workspaceSize;
  *plan = p;
  return 0;
}

int tg_lt_matmul(tg_device* d, tg_plan* p, uint64_t y, uint64_t x, uint64_t w) {
  CURRENT(d);
  const float one = 1.0f, zero = 0.0f;
  LT(ltMatmul(d->lt, p->desc, &one, (const void*)(uintptr_t)w, p->a, (const void*)(uintptr_t)x, p->b, &zero,
              (const void*)(uintptr_t)y, p->c, (void*)(uintptr_t)y, p->c, &p->algo,
              (void*)(uintptr_t)d->workspace, p->workspace, d->stream));
  return 0;
}

int tg_close(tg_device* d) {
  if (!d) return 0;
  cuCtxSetCurrent(d->ctx);
  cuStreamSynchronize(d->stream);
  if (d->workspace) cuMemFree(d->workspace);
  if (d->lt) ltDestroy(d->lt);
  cuStreamDestroy(d->stream);
  cuDevicePrimaryCtxRelease(d->dev);
  free(d);
  return 0;
}
