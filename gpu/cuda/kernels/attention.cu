// attention.cu: causal paged attention over block tables, for decode
// tokens and prefill chunks alike, with grouped-query heads.
//
// Version 1: one block per (token, KV head, partition); one kernel per
// power-of-two bound on G (tandem_attention_g1 … _g16). The block holds
// the G = H/Hkv query heads that share the KV head, so each K/V row is
// read once per token. Positions are scored ATTN_TILE at a time (eight
// lanes per position, 16-byte K loads, lane-group sums), the softmax is
// online (running max and sum per head), and P·V is accumulated by
// threads that own (head, d) pairs, reading V rows coalesced. Long
// contexts with few tokens are split into partitions (split-K) whose
// partial results tandem_attn_combine merges; with one partition the
// kernel writes the output itself. Prefill chunks run the same code with
// one block per query token (not tiled across queries: a flash-style
// prefill kernel is a TODO).
//
// Checked by gpu/cuda TestKernelAttention against a float64 Go reference:
// GQA 1, 3, 4 and 8; D 64 and 128; block sizes 16 and 32; contexts not a
// multiple of the block size; shuffled block tables; one and several
// partitions. Output bf16: relative error ≤ 1e-2.
#include "compat.h"

#define ATTN_THREADS 128
#define ATTN_TILE 32     // positions per tile
#define ATTN_LANES 8     // lanes per position when scoring
#define ATTN_MAX_ACC 16  // G·D ≤ ATTN_THREADS·ATTN_MAX_ACC = 2048
#define ATTN_MAX_DIM 256 // D ≤ 256, D % 8 == 0

// attention is tandem_attention_gMG for G ≤ MG query heads per KV head
// (MG a power of two, so per-head arrays stay in registers).
//
// For token t = blockIdx.x, KV head kvh = blockIdx.y and partition
// p = blockIdx.z, attend the G query heads kvh·G+g to positions
// [p·part, min((p+1)·part, positions[t]+1)) of t's sequence.
//   qkv          [T][row_stride] f32, Q heads at 0 ([H][D])
//   kc, vc       [num_blocks][B][Hkv][D] bf16 (this layer)
//   tok_seq      [T] int32: t's sequence, indexing block_tables
//   positions    [T] int32
//   block_tables [S][max_blocks] int32
//   out          [T][H·D] bf16, written when gridDim.z == 1
//   part_acc     [T][H][P][D] f32, part_ml [T][H][P][2] f32: unnormalized
//                sums, running max and sum; written when gridDim.z > 1
//   grid (T, Hkv, P), block ATTN_THREADS
template <int MG>
static __device__ void attention(bf16* out, float* part_acc, float* part_ml, const float* qkv, const bf16* kc,
                                 const bf16* vc, const int* tok_seq, const int* positions, const int* block_tables,
                                 int max_blocks, int row_stride, int num_heads, int num_kv_heads, int head_dim,
                                 int block_size, int part, float scale) {
  TANDEM_SHARED float q[MG * ATTN_MAX_DIM];  // [G][D]
  TANDEM_SHARED float score[MG][ATTN_TILE];  // scores, then weights
  TANDEM_SHARED i64 slot[ATTN_TILE];
  TANDEM_SHARED float run_max[MG], run_sum[MG], alpha[MG];

  int t = blockIdx.x, kvh = blockIdx.y, p = blockIdx.z;
  int G = num_heads / num_kv_heads, D = head_dim, tid = threadIdx.x;
  int kv_dim = num_kv_heads * D;
  int n = positions[t] + 1;
  int start = p * part, end = start + part < n ? start + part : n;
  const int* table = block_tables + (i64)tok_seq[t] * max_blocks;

  for (int e = tid; e < G * D; e += ATTN_THREADS) q[e] = qkv[(i64)t * row_stride + (i64)kvh * G * D + e];
  if (tid < G) {
    run_max[tid] = neg_inf();
    run_sum[tid] = 0.0f;
  }
  float acc[ATTN_MAX_ACC];
  TANDEM_UNROLL
  for (int k = 0; k < ATTN_MAX_ACC; k++) acc[k] = 0.0f;
  sync();

  int lane = tid % ATTN_LANES, group = tid / ATTN_LANES;
  for (int base = start; base < end; base += ATTN_TILE) {
    // 1. Scores: eight lanes per position, each lane 8 elements at a time.
    for (int pp = group; pp < ATTN_TILE; pp += ATTN_THREADS / ATTN_LANES) {
      int pos = base + pp;
      bool valid = pos < end;
      float dot[MG];
      TANDEM_UNROLL
      for (int g = 0; g < MG; g++) dot[g] = 0.0f;
      i64 s = 0;
      if (valid) {
        s = (i64)table[pos / block_size] * block_size + pos % block_size;
        const bf16* krow = kc + s * kv_dim + (i64)kvh * D;
        for (int d0 = lane * 8; d0 < D; d0 += ATTN_LANES * 8) {
          u16 k8[8];
          load8_bf16(krow + d0, k8);
          TANDEM_UNROLL
          for (int i = 0; i < 8; i++) {
            float kv = bf16_to_f32(k8[i]);
            TANDEM_UNROLL
            for (int g = 0; g < MG; g++)
              if (g < G) dot[g] += q[g * D + d0 + i] * kv;
          }
        }
      }
      lane_group_sum(dot, MG, ATTN_LANES);
      if (lane == 0) {
        TANDEM_UNROLL
        for (int g = 0; g < MG; g++)
          if (g < G) score[g][pp] = valid ? dot[g] * scale : neg_inf();
        slot[pp] = s;
      }
    }
    sync();
    // 2. Online softmax, one thread per head.
    if (tid < G) {
      float m = run_max[tid];
      for (int i = 0; i < ATTN_TILE; i++) m = score[tid][i] > m ? score[tid][i] : m;
      float a = ex2((run_max[tid] - m) * 1.4426950408889634f);  // 0 on the first tile
      float sum = 0.0f;
      for (int i = 0; i < ATTN_TILE; i++) {
        float w = ex2((score[tid][i] - m) * 1.4426950408889634f);  // 0 for -inf
        score[tid][i] = w;
        sum += w;
      }
      run_sum[tid] = run_sum[tid] * a + sum;
      run_max[tid] = m;
      alpha[tid] = a;
    }
    sync();
    // 3. acc = acc·alpha + Σ weight·V over thread-owned (head, d) pairs;
    // consecutive threads read consecutive d of a V row.
    int ntile = end - base < ATTN_TILE ? end - base : ATTN_TILE;
    TANDEM_UNROLL
    for (int k = 0; k < ATTN_MAX_ACC; k++) {
      int e = tid + k * ATTN_THREADS;
      if (e < G * D) {
        int g = e / D, d = e % D;
        float a = acc[k] * alpha[g];
        for (int i = 0; i < ntile; i++) a += score[g][i] * bf16_to_f32(vc[slot[i] * kv_dim + (i64)kvh * D + d]);
        acc[k] = a;
      }
    }
    sync();  // score and slot are rewritten by the next tile
  }

  TANDEM_UNROLL
  for (int k = 0; k < ATTN_MAX_ACC; k++) {
    int e = tid + k * ATTN_THREADS;
    if (e < G * D) {
      int g = e / D, d = e % D, h = kvh * G + g;
      if (gridDim.z == 1) {
        out[(i64)t * num_heads * D + (i64)h * D + d] = f32_to_bf16(acc[k] / run_sum[g]);
      } else {
        i64 row = ((i64)t * num_heads + h) * gridDim.z + p;
        part_acc[row * D + d] = acc[k];
        if (d == 0) {
          part_ml[2 * row] = run_max[g];
          part_ml[2 * row + 1] = run_sum[g];
        }
      }
    }
  }
}

#define ATTENTION_KERNEL(MG)                                                                                        \
  TANDEM_KERNEL void __launch_bounds__(ATTN_THREADS) tandem_attention_g##MG(                                        \
      bf16* out, float* part_acc, float* part_ml, const float* qkv, const bf16* kc, const bf16* vc,                 \
      const int* tok_seq, const int* positions, const int* block_tables, int max_blocks, int row_stride,            \
      int num_heads, int num_kv_heads, int head_dim, int block_size, int part, float scale) {                       \
    attention<MG>(out, part_acc, part_ml, qkv, kc, vc, tok_seq, positions, block_tables, max_blocks, row_stride,    \
                  num_heads, num_kv_heads, head_dim, block_size, part, scale);                                      \
  }
ATTENTION_KERNEL(1)
ATTENTION_KERNEL(2)
ATTENTION_KERNEL(4)
ATTENTION_KERNEL(8)
ATTENTION_KERNEL(16)

// tandem_attn_combine merges the P partitions of each (token, head):
// out = Σ_p acc_p·e^(m_p−M) / Σ_p l_p·e^(m_p−M), M = max_p m_p. Empty
// partitions (m = −inf, l = 0) weigh nothing.
//   out [T][H·D] bf16; part_acc, part_ml as tandem_attention writes them
//   grid (T·H), block 128
TANDEM_KERNEL void tandem_attn_combine(bf16* out, const float* part_acc, const float* part_ml, int head_dim,
                                       int num_parts) {
  i64 row = blockIdx.x;  // t·H + h
  const float* ml = part_ml + row * num_parts * 2;
  float M = neg_inf();
  for (int p = 0; p < num_parts; p++) M = ml[2 * p] > M ? ml[2 * p] : M;
  float L = 0.0f;
  for (int p = 0; p < num_parts; p++) L += ml[2 * p + 1] * ex2((ml[2 * p] - M) * 1.4426950408889634f);
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float a = 0.0f;
    for (int p = 0; p < num_parts; p++)
      a += part_acc[(row * num_parts + p) * head_dim + d] * ex2((ml[2 * p] - M) * 1.4426950408889634f);
    out[row * head_dim + d] = f32_to_bf16(a / L);
  }
}
