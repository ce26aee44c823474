// rope.cu: rotary position embedding of Q and K, and the QKV bias add.
//
// Version 1: one block per token; cos/sin come from a table the host fills
// in float64 like enginecore/cpu (freq factors, linear and llama3 scaling
// are folded into it), so the rotation is bit-exact against the Go
// reference (gpu/cuda TestKernelRoPE): x0·c − x1·s and x0·s + x1·c, each
// product rounded.
#include "compat.h"

// tandem_rope rotates every Q and K head of each token in place.
//   qkv        [num_tokens][row_stride] f32: Q heads at 0, K heads at H·D
//   positions  [num_tokens] int32
//   cos_sin    [max_position][head_dim] f32: D/2 cosines, then D/2 sines
//   neox       0: pairs (2i, 2i+1); 1: pairs (i, i+D/2)
//   grid (num_tokens), block 128
TANDEM_KERNEL void tandem_rope(float* qkv, const int* positions, const float* cos_sin, int row_stride, int num_heads,
                               int num_kv_heads, int head_dim, int neox) {
  int t = blockIdx.x, half = head_dim / 2;
  const float* cs = cos_sin + (i64)positions[t] * head_dim;
  float* row = qkv + (i64)t * row_stride;
  int n = (num_heads + num_kv_heads) * half;
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    int h = k / half, i = k % half;  // K heads follow Q heads directly
    float* x = row + h * head_dim;
    int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
    float c = cs[i], s = cs[half + i];
    float x0 = x[a], x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
  }
}

// tandem_add_bias adds bias to every row: x[t][j] += bias[j].
//   x [num_tokens][n] f32, bias [n] f32
//   grid (num_tokens, ceil(n/blockDim.x))
TANDEM_KERNEL void tandem_add_bias(float* x, const float* bias, int n) {
  int j = blockIdx.y * blockDim.x + threadIdx.x;
  if (j < n) x[(i64)blockIdx.x * n + j] += bias[j];
}
