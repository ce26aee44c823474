// dequant.cu: decode GGUF rows (every supported ggml type) to bf16 or f32.
//
// Version 1: one thread per 32-element chunk (a Q4_0/Q4_1/Q8_0 block, a
// K-quant sub-block, or 32 floats), bytes read one at a time; used at load
// time for the weights (bf16, for the GEMMs) and every step for the
// embedding gather (f32, straight from the quantized token_embd rows).
//
// Checked by gpu/cuda TestKernelDequant against enginecore/model.Dequantize:
// bit-exact for every type, both outputs (products round like the Go code,
// no contraction).
#include "compat.h"

// ggml type ids (enginecore/model.DType).
enum {
  T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q8_0 = 8,
  T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14, T_BF16 = 30,
};

// scale_min_k4 is ggml's get_scale_min_k4 (model.ScaleMinK4).
static __device__ __forceinline__ void scale_min_k4(int j, const u8* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// chunk32 decodes elements [32c, 32c+32) of a row of type `type` (clipped
// to cols for float types) into y.
static __device__ void chunk32(const u8* row, int type, int c, int cols, float* y) {
  switch (type) {
    case T_F32: {
      for (int i = 0; i < 32 && 32 * c + i < cols; i++) {
        const u8* p = row + 4 * (32 * c + i);
        y[i] = as_float((u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) | ((u32)p[3] << 24));
      }
      break;
    }
    case T_F16:
      for (int i = 0; i < 32 && 32 * c + i < cols; i++) y[i] = f16_to_f32(load_u16(row + 2 * (32 * c + i)));
      break;
    case T_BF16:
      for (int i = 0; i < 32 && 32 * c + i < cols; i++) y[i] = bf16_to_f32(load_u16(row + 2 * (32 * c + i)));
      break;
    case T_Q4_0: {
      const u8* b = row + 18 * c;
      float d = f16_to_f32(load_u16(b));
      for (int j = 0; j < 16; j++) {
        u8 q = b[2 + j];
        y[j] = (float)((int)(q & 0xf) - 8) * d;
        y[j + 16] = (float)((int)(q >> 4) - 8) * d;
      }
      break;
    }
    case T_Q4_1: {
      const u8* b = row + 20 * c;
      float d = f16_to_f32(load_u16(b)), m = f16_to_f32(load_u16(b + 2));
      for (int j = 0; j < 16; j++) {
        u8 q = b[4 + j];
        y[j] = (float)(q & 0xf) * d + m;
        y[j + 16] = (float)(q >> 4) * d + m;
      }
      break;
    }
    case T_Q8_0: {
      const u8* b = row + 34 * c;
      float d = f16_to_f32(load_u16(b));
      for (int j = 0; j < 32; j++) y[j] = (float)(i8)b[2 + j] * d;
      break;
    }
    case T_Q4_K:
    case T_Q5_K: {
      // Sub-block j of super-block c/8: low nibbles of qs[32(j/2)..] for
      // even j, high nibbles for odd j; Q5_K adds bit j of qh[l].
      int sb = c / 8, j = c % 8;
      const u8* b = row + (type == T_Q4_K ? 144 : 176) * sb;
      float d = f16_to_f32(load_u16(b)), dmin = f16_to_f32(load_u16(b + 2));
      int sc, mn;
      scale_min_k4(j, b + 4, &sc, &mn);
      float d1 = d * (float)sc, dm1 = dmin * (float)mn;
      const u8* qs = b + (type == T_Q4_K ? 16 : 48) + 32 * (j / 2);
      const u8* qh = b + 16;
      int shift = (j % 2) * 4;
      for (int l = 0; l < 32; l++) {
        int q = (qs[l] >> shift) & 0xf;
        if (type == T_Q5_K) q |= ((qh[l] >> j) & 1) << 4;
        y[l] = d1 * (float)q - dm1;
      }
      break;
    }
    case T_Q6_K: {
      // Chunk c%8 = 4n+p: half n of the super-block, part p of its four
      // 32-element runs (model.dequantQ6K's yy[l+32p]).
      int sb = c / 8, n = (c % 8) / 4, p = c % 4;
      const u8* b = row + 210 * sb;
      float d = f16_to_f32(load_u16(b + 208));
      const u8* ql = b + 64 * n + (p & 1) * 32;
      const u8* qh = b + 128 + 32 * n;
      const i8* sc = (const i8*)(b + 192 + 8 * n);
      int lowShift = (p >> 1) * 4, highShift = 2 * p;
      for (int l = 0; l < 32; l++) {
        int q = (((ql[l] >> lowShift) & 0xf) | (((qh[l] >> highShift) & 3) << 4)) - 32;
        y[l] = (d * (float)sc[l / 16 + 2 * p]) * (float)q;
      }
      break;
    }
  }
}

// tandem_dequant_rows: dst row r = decoded src row rows[r] (or r when rows
// is null), cols elements each, as bf16 (out_bf16 != 0) or f32.
//   dst      [num_rows][cols] bf16 or f32
//   src      rows of row_bytes bytes in ggml layout
//   grid     (num_rows, ceil(cols/32 / blockDim.x)), any block size
TANDEM_KERNEL void tandem_dequant_rows(void* dst, int out_bf16, const u8* src, int type, long long row_bytes,
                                       const int* rows, int num_rows, int cols) {
  int r = blockIdx.x;
  int c = blockIdx.y * blockDim.x + threadIdx.x;  // 32-element chunk
  if (r >= num_rows || 32 * c >= cols) return;
  const u8* row = src + (i64)(rows ? rows[r] : r) * row_bytes;
  float y[32];
  chunk32(row, type, c, cols, y);
  int n = cols - 32 * c < 32 ? cols - 32 * c : 32;
  i64 o = (i64)r * cols + 32 * c;
  if (out_bf16) {
    bf16* out = (bf16*)dst + o;
    for (int i = 0; i < n; i++) out[i] = f32_to_bf16(y[i]);
  } else {
    float* out = (float*)dst + o;
    for (int i = 0; i < n; i++) out[i] = y[i];
  }
}
