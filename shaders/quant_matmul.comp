#version 460
// Weight-only quantized matmul (PyTorch's _weight_int8pack_mm / _weight_int4pack_mm on vk):
//
//   C[m, n] = sum_k A[m, k] * W(n, k)                  A [M, K], C [M, N]: float32 / float16 /
//                                                      bfloat16 (C has A's dtype)
//   INT4=0: W(n, k) = float(q[n, k]) and the sum is multiplied by scales[n] at the end
//           (q: int8 [N, K] rows; scales [N]) -- the CPU's and CUDA's order.
//   INT4=1: W(n, k) = float(q - 8) * scale + zero, (scale, zero) = sz[k / group, n, 0..1],
//           q = 4-bit value of row n at k: byte n * (K / 2) + k / 2, the high nibble for even
//           k, the low one for odd k (torchao's packing of uint8 [N, K / 2]; vk's
//           _convert_weight_to_int4pack keeps those bytes as they are).
//   Float32 accumulation, one rounding to C's dtype.
//
// TILED=0, GEMV (decode: M <= MMAX rows): one workgroup of WG invocations per NC output
//   columns. Invocations stride over the K dim of the NC weight rows one 32-bit word at a time
//   (4 int8 or 8 int4 values; consecutive invocations read consecutive words: coalesced), so
//   every weight byte is read once and serves all M rows. The M x NC partial sums are then
//   added up across the workgroup in shared memory (log2(WG) barriers). Rows whose bytes do
//   not start on a 4-byte boundary (int8 with K % 4 != 0) read bytes instead (WORDS=0 in the
//   parameter block).
// TILED=1 (prefill: M > MMAX): one workgroup of 16 x 16 invocations per 32 x 32 block of C,
//   K in steps of 32 through shared memory (the activations converted to float, the weights
//   dequantized once per tile), 2 x 2 outputs per invocation. Weight tiles are loaded with
//   consecutive invocations along k (consecutive bytes of a row).
//
// ROWS=1 (CPU devices such as lavapipe, where barriers are coroutine switches and shared
//   memory saves no traffic; the launcher's default there): one invocation per output element
//   (grid-stride), the weight row read word by word along K and dequantized in registers. For
//   decode (M = 1) every weight byte is still read once.
//
// The launcher (src/kernels/quant_matmul.cpp) uploads the parameter block and passes its
// address as the only push constant; variants come from quant_matmul.variants.toml.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#define KIND 0
#include "common.glsl"

#ifndef TILED
#define TILED 0
#endif
#ifndef INT4
#define INT4 0
#endif
#ifndef ROWS
#define ROWS 0
#endif

layout(push_constant) uniform Push { uint64_t params; } pc;

// Mirrors QuantParams in src/kernels/quant_matmul.cpp (std430).
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t a, w, s, c;             //  0 activations, weights, scales (and zeros), output
  int M, N, K, lda;                // 32 lda: element stride of A's rows
  int ldc, a_dtype, group, words;  // 48 group: int4 group size; words: 32-bit weight reads
};                                 // 64 bytes

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer RefU32 { uint v; };

// Bytes of one weight row.
int row_bytes(Params P) { return INT4 != 0 ? P.K / 2 : P.K; }

// The 4-bit value at k of the row starting at byte `row`.
uint nibble(uint64_t row, int k) {
  const uint b = uint(RefU8(row + uint64_t(k >> 1)).v);
  return (k & 1) == 0 ? (b >> 4) : (b & 15u);
}

// Dequantized int4 weight (k, n): (q - 8) * scale + zero (the CPU's formula).
float dequant4(Params P, uint q, int k, int n) {
  const int i = ((k / P.group) * P.N + n) * 2;
  return fma(float(int(q) - 8), load_f32(P.s, P.a_dtype, i), load_f32(P.s, P.a_dtype, i + 1));
}

#if ROWS
#define EPW (INT4 != 0 ? 8 : 4)  // weights per 32-bit word
layout(local_size_x = 64) in;

void main() {
  Params P = Params(pc.params);
  const int rb = row_bytes(P);
  const uint total = uint(P.M) * uint(P.N);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += step) {
    const int n = int(idx % uint(P.N)), m = int(idx / uint(P.N));
    const uint64_t row = P.w + uint64_t(n) * uint64_t(rb);
    const int a0 = m * P.lda;
    float acc = 0.0;
    if (P.words != 0) {
      for (int k0 = 0; k0 < P.K; k0 += EPW) {
        const uint word = RefU32(row + uint64_t(INT4 != 0 ? k0 / 2 : k0)).v;
#if INT4
        const int i = ((k0 / P.group) * P.N + n) * 2;
        const float scale = load_f32(P.s, P.a_dtype, i), zero = load_f32(P.s, P.a_dtype, i + 1);
        [[unroll]] for (int j = 0; j < 4; ++j) {
          const uint b = (word >> (8 * j)) & 255u;
          acc = fma(load_f32(P.a, P.a_dtype, a0 + k0 + 2 * j),
                    fma(float(int(b >> 4) - 8), scale, zero), acc);
          acc = fma(load_f32(P.a, P.a_dtype, a0 + k0 + 2 * j + 1),
                    fma(float(int(b & 15u) - 8), scale, zero), acc);
        }
#else
        [[unroll]] for (int j = 0; j < 4; ++j)
          acc = fma(load_f32(P.a, P.a_dtype, a0 + k0 + j), float(int(word << (24 - 8 * j)) >> 24),
                    acc);
#endif
      }
    } else {
      for (int k = 0; k < P.K; ++k) {
#if INT4
        const float wv = dequant4(P, nibble(row, k), k, n);
#else
        const float wv = float(int(RefI8(row + uint64_t(k)).v));
#endif
        acc = fma(load_f32(P.a, P.a_dtype, a0 + k), wv, acc);
      }
    }
#if INT4 == 0
    acc *= load_f32(P.s, P.a_dtype, n);
#endif
    store_f32(P.c, P.a_dtype, m * P.ldc + n, acc);
  }
}

#elif TILED == 0
#define WG 64
#define NC 4
#define MMAX 8
#define EPW (INT4 != 0 ? 8 : 4)  // weights per 32-bit word
layout(local_size_x = WG) in;

shared float red_s[MMAX * NC][WG];

void main() {
  Params P = Params(pc.params);
  const int lid = int(gl_LocalInvocationID.x);
  const int n0 = int(gl_WorkGroupID.x) * NC;
  const int rb = row_bytes(P);
  float acc[MMAX][NC];
  [[unroll]] for (int m = 0; m < MMAX; ++m)
    [[unroll]] for (int c = 0; c < NC; ++c) acc[m][c] = 0.0;

  if (P.words != 0) {
    // One 32-bit word per step: EPW weights at k0 .. k0 + EPW - 1 of each of the NC rows.
    const int nwords = P.K / EPW;
    for (int kw = lid; kw < nwords; kw += WG) {
      const int k0 = kw * EPW;
      float av[MMAX][EPW];
      [[unroll]] for (int m = 0; m < MMAX; ++m)
        [[unroll]] for (int e = 0; e < EPW; ++e)
          av[m][e] = m < P.M ? load_f32(P.a, P.a_dtype, m * P.lda + k0 + e) : 0.0;
      [[unroll]] for (int c = 0; c < NC; ++c) {
        const int n = n0 + c;
        if (n >= P.N) break;
        const uint word =
            RefU32(P.w + uint64_t(n) * uint64_t(rb) + uint64_t(INT4 != 0 ? k0 / 2 : k0)).v;
        float wv[EPW];
#if INT4
        // Byte j holds k0 + 2j (high nibble) and k0 + 2j + 1 (low nibble); one group per word
        // (the group size is a multiple of 8).
        const int i = ((k0 / P.group) * P.N + n) * 2;
        const float scale = load_f32(P.s, P.a_dtype, i), zero = load_f32(P.s, P.a_dtype, i + 1);
        [[unroll]] for (int j = 0; j < 4; ++j) {
          const uint b = (word >> (8 * j)) & 255u;
          wv[2 * j] = fma(float(int(b >> 4) - 8), scale, zero);
          wv[2 * j + 1] = fma(float(int(b & 15u) - 8), scale, zero);
        }
#else
        [[unroll]] for (int j = 0; j < 4; ++j) wv[j] = float(int(word << (24 - 8 * j)) >> 24);
#endif
        [[unroll]] for (int m = 0; m < MMAX; ++m)
          [[unroll]] for (int e = 0; e < EPW; ++e) acc[m][c] = fma(av[m][e], wv[e], acc[m][c]);
      }
    }
  } else {
    // Byte reads (int8 rows that do not start on a word boundary).
    for (int k = lid; k < P.K; k += WG) {
      [[unroll]] for (int c = 0; c < NC; ++c) {
        const int n = n0 + c;
        if (n >= P.N) break;
#if INT4
        const float wv = dequant4(P, nibble(P.w + uint64_t(n) * uint64_t(rb), k), k, n);
#else
        const float wv = float(int(RefI8(P.w + uint64_t(n) * uint64_t(rb) + uint64_t(k)).v));
#endif
        [[unroll]] for (int m = 0; m < MMAX; ++m)
          if (m < P.M) acc[m][c] = fma(load_f32(P.a, P.a_dtype, m * P.lda + k), wv, acc[m][c]);
      }
    }
  }

  [[unroll]] for (int m = 0; m < MMAX; ++m)
    [[unroll]] for (int c = 0; c < NC; ++c) red_s[m * NC + c][lid] = acc[m][c];
  barrier();
  [[unroll]] for (int span = WG / 2; span > 0; span /= 2) {
    if (lid < span) {
      [[unroll]] for (int i = 0; i < MMAX * NC; ++i) red_s[i][lid] += red_s[i][lid + span];
    }
    barrier();
  }
  if (lid < MMAX * NC) {
    const int m = lid / NC, n = n0 + lid % NC;
    if (m < P.M && n < P.N) {
      float v = red_s[lid][0];
#if INT4 == 0
      v *= load_f32(P.s, P.a_dtype, n);
#endif
      store_f32(P.c, P.a_dtype, m * P.ldc + n, v);
    }
  }
}

#else  // TILED
#define BM 32
#define BN 32
#define BK 32
layout(local_size_x = 16, local_size_y = 16) in;

shared float a_s[BM][BK + 1];
shared float w_s[BN][BK + 1];

void main() {
  Params P = Params(pc.params);
  const int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  const int tid = ty * 16 + tx;
  const int m0 = int(gl_WorkGroupID.y) * BM, n0 = int(gl_WorkGroupID.x) * BN;
  const int rb = row_bytes(P);
  float acc[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
  for (int k0 = 0; k0 < P.K; k0 += BK) {
    // 1024 elements per tile, 4 per invocation; kk = tid % 32 runs along k (coalesced).
    [[unroll]] for (int r = 0; r < 4; ++r) {
      const int row = tid / BK + r * 8, kk = tid % BK, k = k0 + kk;
      const int m = m0 + row, n = n0 + row;
      a_s[row][kk] = (m < P.M && k < P.K) ? load_f32(P.a, P.a_dtype, m * P.lda + k) : 0.0;
      float wv = 0.0;
      if (n < P.N && k < P.K) {
        const uint64_t base = P.w + uint64_t(n) * uint64_t(rb);
#if INT4
        wv = dequant4(P, nibble(base, k), k, n);
#else
        wv = float(int(RefI8(base + uint64_t(k)).v));
#endif
      }
      w_s[row][kk] = wv;
    }
    barrier();
    [[unroll]] for (int kk = 0; kk < BK; ++kk) {
      [[unroll]] for (int i = 0; i < 2; ++i)
        [[unroll]] for (int j = 0; j < 2; ++j)
          acc[i][j] = fma(a_s[ty + 16 * i][kk], w_s[tx + 16 * j][kk], acc[i][j]);
    }
    barrier();
  }
  [[unroll]] for (int i = 0; i < 2; ++i)
    [[unroll]] for (int j = 0; j < 2; ++j) {
      const int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < P.M && n < P.N) {
        float v = acc[i][j];
#if INT4 == 0
        v *= load_f32(P.s, P.a_dtype, n);
#endif
        store_f32(P.c, P.a_dtype, m * P.ldc + n, v);
      }
    }
}
#endif
