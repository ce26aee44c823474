// norm.cu: RMSNorm, with the residual add fused in, and Qwen3's per-head
// QK norm.
//
// Version 1: one block per row, fp32 sum of squares reduced with warp
// shuffles then through shared memory; the scale is computed like the Go
// reference (1/float32(sqrt(float64(ss/n+eps)))). Only the summation
// order differs from enginecore/cpu, so gpu/cuda TestKernelRMSNorm allows
// 1e-5 relative on the f32 residual, and one bf16 rounding step (2^-8
// relative) on the output.
#include "compat.h"

#define NORM_THREADS 256

// block_sum returns the sum of v over the block (blockDim.x a multiple of
// 32, at most 1024) to every thread.
static __device__ float block_sum(float v) {
  TANDEM_SHARED float partial[32];
  float a[1] = {v};
  lane_group_sum(a, 1, 32);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, numWarps = blockDim.x / 32;
  if (lane == 0) partial[warp] = a[0];
  sync();
  a[0] = lane < numWarps ? partial[lane] : 0.0f;
  lane_group_sum(a, 1, 32);
  sync();  // partial is reused by the next call
  return a[0];
}

// tandem_rms_norm normalizes residual rows into bf16:
//   r = rows ? rows[i] : i          (i = blockIdx.x, the output row)
//   if delta: x[r] += delta[r]      (the fused residual add, written back)
//   out[i] = bf16(x[r] · s · w),  s = 1/sqrt(mean(x[r]²) + eps)
//   out [num_rows][dim] bf16; x, delta [*][dim] f32; w [dim] f32
//   grid (num_rows), block NORM_THREADS
TANDEM_KERNEL void __launch_bounds__(NORM_THREADS)
    tandem_rms_norm(bf16* out, float* x, const float* delta, const float* w, const int* rows, int dim, float eps) {
  int i = blockIdx.x;
  i64 r = rows ? rows[i] : i;
  float* xr = x + r * dim;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < dim; j += blockDim.x) {
    float v = xr[j];
    if (delta) {
      v = v + delta[r * dim + j];
      xr[j] = v;
    }
    ss += v * v;
  }
  ss = block_sum(ss);
  float s = rsqrt_go(ss / (float)dim + eps);
  bf16* o = out + (i64)i * dim;
  for (int j = threadIdx.x; j < dim; j += blockDim.x) o[j] = f32_to_bf16(xr[j] * s * w[j]);
}

// tandem_head_norm applies RMSNorm with gain qw to each Q head and kw to
// each K head of qkv rows, in place (Qwen3's QK norm, before RoPE).
//   qkv [num_tokens][row_stride] f32: Q heads at 0, K heads at H·D
//   qw, kw [head_dim] f32
//   grid (num_tokens, num_heads + num_kv_heads), block 32
TANDEM_KERNEL void tandem_head_norm(float* qkv, const float* qw, const float* kw, int row_stride, int num_heads,
                                    int head_dim, float eps) {
  int h = blockIdx.y;
  float* v = qkv + (i64)blockIdx.x * row_stride + (i64)h * head_dim;
  const float* g = h < num_heads ? qw : kw;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < head_dim; j += 32) ss += v[j] * v[j];
  float a[1] = {ss};
  lane_group_sum(a, 1, 32);
  float s = rsqrt_go(a[0] / (float)head_dim + eps);
  for (int j = threadIdx.x; j < head_dim; j += 32) v[j] = v[j] * s * g[j];
}
