// compat.h: one set of kernel sources for three compilers.
//
//   nvcc       (__NVCC__)               CUDA toolkit headers; PTX + SASS
//   clang-19   (__clang__ && __CUDA__)  -nocudainc -nocudalib; PTX only
//   host C++   (TANDEM_EMU)             the CPU emulator in gpu/cuda/emu
//
// Kernels use only what is defined here: the CUDA qualifiers, the thread
// and block indices, sync(), the bf16/f16 conversions, ex2(), rsqrt_go()
// and the lane-group sums. bf16 travels as unsigned short; conversions
// are integer code (round to nearest even, NaNs quieted), so results are
// the same bits on every compiler and equal to enginecore/model's
// F32ToBF16. Floating-point contraction is off everywhere (nvcc
// -fmad=false, clang and g++ -ffp-contract=off): a*b+c rounds twice, like
// the Go reference.
#ifndef TANDEM_COMPAT_H
#define TANDEM_COMPAT_H

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
typedef u16 bf16;

// 16 bytes, aligned: one vector load of 8 bf16.
struct __attribute__((aligned(16))) u32x4 {
  u32 x, y, z, w;
};

#if defined(TANDEM_EMU)
// ---- host emulation ------------------------------------------------------
#include <cmath>
#include <cstring>
#include "emu_rt.h"  // tandem_emu_self, tandem_emu_sync, tandem_emu_exchange
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define TANDEM_UNROLL
#define TANDEM_SHARED static thread_local
#define threadIdx (tandem_emu_self()->thread_idx)
#define blockIdx (tandem_emu_self()->block_idx)
#define blockDim (tandem_emu_self()->block_dim)
#define gridDim (tandem_emu_self()->grid_dim)
static inline void sync() { tandem_emu_sync(); }
static inline float as_float(u32 u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline u32 as_u32(float f) { u32 u; std::memcpy(&u, &f, 4); return u; }
static inline float ex2(float x) { return std::exp2(x); }
static inline float rsqrt_go(float x) {  // 1 / float32(math.Sqrt(float64(x))) in Go
  volatile float s = (float)std::sqrt((double)x);
  return 1.0f / s;
}
// lane_group_sum adds v[0..n) across each aligned group of `width` lanes
// (width a power of two ≤ 32); every thread of the block must call it.
static inline void lane_group_sum(float* v, int n, int width) { tandem_emu_group_sum(v, n, width); }
static inline void load8_bf16(const bf16* p, u16 out[8]) { std::memcpy(out, p, 16); }

#else
// ---- device compilers ----------------------------------------------------
#if defined(__NVCC__)
#include <cuda_runtime.h>
static __device__ __forceinline__ float as_float(u32 u) { return __uint_as_float(u); }
static __device__ __forceinline__ u32 as_u32(float f) { return __float_as_uint(f); }
static __device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
static __device__ __forceinline__ void sync() { __syncthreads(); }
#elif defined(__clang__) && defined(__CUDA__)
#include <__clang_cuda_builtin_vars.h>
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __attribute__((always_inline)) inline
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
static __device__ __forceinline__ float as_float(u32 u) { return __builtin_bit_cast(float, u); }
static __device__ __forceinline__ u32 as_u32(float f) { return __builtin_bit_cast(u32, f); }
static __device__ __forceinline__ float shfl_xor(float v, int mask) {
  return __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, mask, 0x1f);
}
static __device__ __forceinline__ void sync() { __syncthreads(); }
#else
#error "compat.h: compile with nvcc, clang -x cuda, or -DTANDEM_EMU"
#endif
#define TANDEM_SHARED __shared__
#define TANDEM_UNROLL _Pragma("unroll")

// ex2 is 2^x, ex2.approx (max relative error 2^-22).
static __device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// rsqrt_go is 1 / float32(math.Sqrt(float64(x))), as the Go reference
// computes it: IEEE double sqrt, rounded to float, IEEE float division.
static __device__ __forceinline__ float rsqrt_go(float x) {
  double d = (double)x, s;
  float f, r;
  asm("sqrt.rn.f64 %0, %1;" : "=d"(s) : "d"(d));
  asm("cvt.rn.f32.f64 %0, %1;" : "=f"(f) : "d"(s));
  asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(1.0f), "f"(f));
  return r;
}
static __device__ __forceinline__ void lane_group_sum(float* v, int n, int width) {
  for (int m = width / 2; m > 0; m /= 2)
    for (int i = 0; i < n; i++) v[i] += shfl_xor(v[i], m);
}
static __device__ __forceinline__ void load8_bf16(const bf16* p, u16 out[8]) {
  u32x4 w = *(const u32x4*)p;
  out[0] = (u16)w.x; out[1] = (u16)(w.x >> 16);
  out[2] = (u16)w.y; out[3] = (u16)(w.y >> 16);
  out[4] = (u16)w.z; out[5] = (u16)(w.z >> 16);
  out[6] = (u16)w.w; out[7] = (u16)(w.w >> 16);
}
#endif

#define TANDEM_KERNEL extern "C" __global__

// ---- number formats (every compiler) ---------------------------------------

static __device__ __forceinline__ float bf16_to_f32(bf16 h) { return as_float((u32)h << 16); }

// f32_to_bf16 rounds to nearest even and quiets NaNs (ggml / model.F32ToBF16).
static __device__ __forceinline__ bf16 f32_to_bf16(float f) {
  u32 n = as_u32(f);
  if ((n & 0x7fffffffu) > 0x7f800000u) return (bf16)((n >> 16) | 64);
  return (bf16)((n + 0x7fffu + ((n >> 16) & 1u)) >> 16);
}

// f16_to_f32 converts IEEE binary16 bits exactly (model.F16ToF32).
static __device__ __forceinline__ float f16_to_f32(u16 h) {
  u32 sign = (u32)(h & 0x8000u) << 16;
  u32 exp = (h >> 10) & 0x1fu;
  u32 mant = h & 0x3ffu;
  if (exp == 0x1f) return as_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float f = (float)mant * 5.9604644775390625e-8f;  // 2^-24
    return sign ? -f : f;
  }
  return as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

static __device__ __forceinline__ u16 load_u16(const u8* p) { return (u16)(p[0] | (p[1] << 8)); }

static __device__ __forceinline__ float neg_inf() { return as_float(0xff800000u); }

#endif  // TANDEM_COMPAT_H
