// cache.cu: write each token's K and V into the paged cache
// (reshape_and_cache in vLLM's flash/NHD layout).
//
// Version 1: one block per token, elementwise f32 → bf16. Checked bit-exact
// by gpu/cuda TestKernelReshapeAndCache, including slots < 0 (skipped) and
// shuffled block tables.
#include "compat.h"

// tandem_reshape_and_cache stores K and V of token t at slot slots[t]
// (block·B + offset); a negative slot is a padding token and is skipped.
//   kc, vc  [num_blocks][B][Hkv][D] bf16 (one layer): slot s at s·kv_dim
//   qkv     [num_tokens][row_stride] f32: K at k_off, V at k_off+kv_dim
//   slots   [num_tokens] int32
//   grid (num_tokens), block 128
TANDEM_KERNEL void tandem_reshape_and_cache(bf16* kc, bf16* vc, const float* qkv, const int* slots, int row_stride,
                                            int k_off, int kv_dim) {
  int t = blockIdx.x;
  i64 slot = slots[t];
  if (slot < 0) return;
  const float* k = qkv + (i64)t * row_stride + k_off;
  const float* v = k + kv_dim;
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    kc[slot * kv_dim + i] = f32_to_bf16(k[i]);
    vc[slot * kv_dim + i] = f32_to_bf16(v[i]);
  }
}
