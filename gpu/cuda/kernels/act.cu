// act.cu: SwiGLU, silu(gate)·up, from the merged gate_up projection.
//
// Version 1: elementwise; exp via ex2.approx, so gpu/cuda
// TestKernelSiLUMul allows one bf16 rounding step against the Go
// reference g/(1+exp(−g))·u.
#include "compat.h"

// tandem_silu_mul: out[t][i] = bf16(silu(gu[t][i]) · gu[t][F+i]).
//   out [num_tokens][F] bf16, gu [num_tokens][2F] f32 (gate, then up)
//   grid (num_tokens, ceil(F/blockDim.x))
TANDEM_KERNEL void tandem_silu_mul(bf16* out, const float* gu, int F) {
  int t = blockIdx.x, i = blockIdx.y * blockDim.x + threadIdx.x;
  if (i >= F) return;
  float g = gu[(i64)t * 2 * F + i], u = gu[(i64)t * 2 * F + F + i];
  float e = ex2(-g * 1.4426950408889634f);  // exp(−g)
  out[(i64)t * F + i] = f32_to_bf16(g / (1.0f + e) * u);
}
