#version 460
// Strided batched GEMM: C[b] = alpha * A[b] @ B[b] + beta * bias[b]   (A: M x K, B: K x N).
//
// Built per (algorithm, compute kind) by tools/build_shaders.py (shaders/gemm.variants.toml):
//   GEMM_TILED  1: shared-memory tiles (the GPU profile); 0: "direct", every invocation reads
//               its operands straight from memory (no shared memory, no barriers).
//   GEMM_LANES  1: "lanes", for devices whose invocations are the SIMD lanes of a CPU (see
//               the section below); needs subgroup broadcast. Overrides GEMM_TILED.
//   GEMM_TEXEL  1: "texel", the direct algorithm reading A and B through storage texel
//               buffers (the texel section below; KIND_FLOAT32 only). Overrides both.
//               TEXEL_DTYPE: the dtype of A and B, 0 float32 (rgba32f / r32f views), 1 float16
//               (rgba16f / r16f), 2 bfloat16 (rgba16ui / r16ui, the bits shifted into float32).
//   KIND        the accumulator kind (common.glsl): KIND_FLOAT32 for float16 / bfloat16 /
//               float32 operands, KIND_INT32 (wrapping 32-bit math: exact modulo 2^32, so
//               narrower integer outputs wrap exactly like PyTorch's), KIND_INT64, KIND_FLOAT64.
//
// ABI (mirrored by GemmPush in src/kernels/gemm.cpp):
//   Every operand is a matrix view: element (r, c) of batch b is at
//     address + (b * batch_stride + r * row_stride + c * col_stride) * element_size
//   with 64-bit batch offsets and 32-bit offsets inside one matrix (the launcher checks the
//   range). A is M x K, B is K x N, C and bias are M x N. The bias (C_in) may be C itself
//   (same address and strides: every element is read before it is written by the same
//   invocation); DT_BIAS < 0 means no bias. alpha / beta are in the compute kind.
//   Grid: x over column tiles, y over row tiles, z over the batch; each dimension loops, so
//   any grid size covers any problem.
//   Specialization constants:
//     0  local_size_x = WM * WN
//     1  DT_A, 2 DT_B, 3 DT_C, 4 DT_BIAS   storage dtype codes (-1: no bias)
//     5  TM, 6 TN     register block of one invocation (TM rows x TN columns)
//     7  WM, 8 WN     invocations along M and N; the workgroup tile is BM x BN =
//                     (WM * TM) x (WN * TN). Invocation (tm, tn) owns rows tm + i * WM and
//                     columns tn + j * WN (strided, so neighbouring invocations touch
//                     neighbouring columns: coalesced stores, conflict-free shared reads)
//     9  BK           K step of the shared-memory tiles (tiled only)
//                     (the direct algorithm with vec4 loads along m / n owns groups of 4
//                     adjacent rows / columns instead, see row_of / col_of)
//     10 A_LOAD       tiled: how a workgroup loads its A tile: 0 k fastest, 1 m fastest,
//                     2 vec4 along k, 3 vec4 along m; direct: 0 scalar loads, 2 vec4 along k,
//                     3 vec4 along m (vec4: the float32 kind with float32 / float16 / bfloat16
//                     storage, the alignment and sizes the launcher checked: one 16-byte load
//                     of 4 float32 or one 8-byte load of 4 16-bit values); texel: those and
//                     4 / 5, modes 2 / 0 with rows shared through subgroupShuffle; lanes: 0 scalar,
//                     4 groups along k (one 64-bit load: 2 float32 or 4 16-bit values)
//     11 B_LOAD       tiled: 0 n fastest, 1 k fastest, 2 vec4 along n, 3 vec4 along k;
//                     direct: 0 scalar, 2 vec4 along n, 3 vec4 along k; lanes: 0 scalar,
//                     4 groups along n (as for A)
//     12 UNIT         bit set: that stride is 1 (folds the multiply): 1 a_cs, 2 a_rs, 4 b_rs,
//                     8 b_cs, 16 c_cs, 32 c_rs (direct only; the tiled launcher passes 0)
//     13 EXACT_GRID   1: the grid is exactly (column tiles, row tiles, batch), so each
//                     workgroup runs one tile without the grid-stride loops (on lavapipe the
//                     loop nest around the k loop costs ~20% more instructions)
//     14 STAGES       tiled: 1 one shared buffer per operand, two barriers per K step; 2
//                     double buffering: the next K step's tiles are fetched into registers
//                     before the current step's products and stored to the other buffer
//                     after them (global loads in flight during the arithmetic, one barrier
//                     per K step; twice the shared memory)
//   Texel (GEMM_TEXEL): the first 16 bytes hold int32 texel indices instead of the addresses
//   of A and B: a_texel, b_texel, c_texel, bias_texel, the element (0, 0) of batch 0 of each
//   operand in its segment's one-element views (set 0: 0 A as 4-element texels, 1 A as
//   one-element texels, 2 and 3 B the same, 4 C r32f, 5 bias r32f; A / B formats by
//   TEXEL_DTYPE). C and bias keep their addresses for the buffer-reference store / load when
//   their dtype is not float32. The launcher checks that every element read or written lies
//   inside its view, so the 32-bit indices cannot overflow.
//   GEMM_EPILOGUE  1 (only in sources built at run time, src/kernels/gemm.cpp): C is not stored;
//               every output element goes to `gemm_epilogue`, a function the run-time source
//               appends (torch.compile's GEMM + element-wise fusion). Its argument block address
//               travels in the two padding words after alpha and beta (float32 kind only).
//   Loops over TM / TN / BK carry [[unroll]]: the driver unrolls them once the specialization
//   constants are known, so the register block stays in registers (on lavapipe this alone
//   was worth ~2x).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if GEMM_LANES
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_shader_subgroup_extended_types_int64 : require
#endif
#if GEMM_TEXEL
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"
#ifndef GEMM_EPILOGUE
#define GEMM_EPILOGUE 0
#endif
#if GEMM_EPILOGUE
#include "math.glsl"
#include "ops.glsl"
#endif

#ifndef GEMM_TILED
#define GEMM_TILED 0
#endif
#ifndef GEMM_LANES
#define GEMM_LANES 0
#endif
#ifndef GEMM_TEXEL
#define GEMM_TEXEL 0
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int DT_A = DT_FLOAT32;
layout(constant_id = 2) const int DT_B = DT_FLOAT32;
layout(constant_id = 3) const int DT_C = DT_FLOAT32;
layout(constant_id = 4) const int DT_BIAS = -1;
layout(constant_id = 5) const int TM = 4;
layout(constant_id = 6) const int TN = 4;
layout(constant_id = 7) const int WM = 8;
layout(constant_id = 8) const int WN = 8;
layout(constant_id = 9) const int BK = 16;
layout(constant_id = 10) const int A_LOAD = 0;
layout(constant_id = 11) const int B_LOAD = 0;
layout(constant_id = 12) const int UNIT = 0;
layout(constant_id = 13) const int EXACT_GRID = 0;
layout(constant_id = 14) const int STAGES = 1;

const int BM = WM * TM;
const int BN = WN * TN;
const int WG = WM * WN;

layout(push_constant) uniform Push {
#if GEMM_TEXEL
  int a_texel;          //   0
  int b_texel;          //   4
  int c_texel;          //   8
  int bias_texel;       //  12
#else
  uint64_t a;           //   0
  uint64_t b;           //   8
#endif
  uint64_t c;           //  16
  uint64_t bias;        //  24
  int64_t a_bs;         //  32 batch strides (elements)
  int64_t b_bs;         //  40
  int64_t c_bs;         //  48
  int64_t bias_bs;      //  56
#if KIND == KIND_FLOAT32
  float alpha;          //  64
  uint alpha_pad;       //     epilogue: low word of the argument block address
  float beta;           //  72
  uint beta_pad;        //     epilogue: high word
#elif KIND == KIND_INT32
  int alpha;
  int alpha_pad;
  int beta;
  int beta_pad;
#else
  T alpha;              //  64 (double / int64)
  T beta;               //  72
#endif
  int M;                //  80
  int N;                //  84
  int K;                //  88
  int batch;            //  92
  int a_rs;             //  96 row / column strides (elements)
  int a_cs;             // 100
  int b_rs;             // 104
  int b_cs;             // 108
  int c_rs;             // 112
  int c_cs;             // 116
  int bias_rs;          // 120
  int bias_cs;          // 124
} pc;                   // 128 bytes

int log2_size(int dt) {
  switch (dt) {
    case DT_BOOL: case DT_UINT8: case DT_INT8: return 0;
    case DT_INT16: case DT_FLOAT16: case DT_BFLOAT16: return 1;
    case DT_INT64: case DT_FLOAT64: return 3;
    default: return 2;
  }
}

int a_rs() { return (UNIT & 2) != 0 ? 1 : pc.a_rs; }
int a_cs() { return (UNIT & 1) != 0 ? 1 : pc.a_cs; }
int b_rs() { return (UNIT & 4) != 0 ? 1 : pc.b_rs; }
int b_cs() { return (UNIT & 8) != 0 ? 1 : pc.b_cs; }
int c_rs() { return (UNIT & 32) != 0 ? 1 : pc.c_rs; }
int c_cs() { return (UNIT & 16) != 0 ? 1 : pc.c_cs; }

uint64_t batch_base(uint64_t base, int bt, int64_t stride, int lg) {
  return base + uint64_t((int64_t(bt) * stride) << lg);
}

T load_a(uint64_t base, int off) { return LOAD_T(tvk_elem_addr(base, off, log2_size(DT_A)), DT_A, 0); }
T load_b(uint64_t base, int off) { return LOAD_T(tvk_elem_addr(base, off, log2_size(DT_B)), DT_B, 0); }

#if GEMM_TEXEL
#ifndef TEXEL_DTYPE
#define TEXEL_DTYPE 0
#endif
#if TEXEL_DTYPE == 0
layout(set = 0, binding = 0, rgba32f) uniform readonly imageBuffer texel_a4;
layout(set = 0, binding = 1, r32f) uniform readonly imageBuffer texel_a1;
layout(set = 0, binding = 2, rgba32f) uniform readonly imageBuffer texel_b4;
layout(set = 0, binding = 3, r32f) uniform readonly imageBuffer texel_b1;
#define TEXEL_LOAD4(image, i) imageLoad(image, i)
#define TEXEL_LOAD1(image, i) imageLoad(image, i).x
#elif TEXEL_DTYPE == 1
layout(set = 0, binding = 0, rgba16f) uniform readonly imageBuffer texel_a4;
layout(set = 0, binding = 1, r16f) uniform readonly imageBuffer texel_a1;
layout(set = 0, binding = 2, rgba16f) uniform readonly imageBuffer texel_b4;
layout(set = 0, binding = 3, r16f) uniform readonly imageBuffer texel_b1;
#define TEXEL_LOAD4(image, i) imageLoad(image, i)
#define TEXEL_LOAD1(image, i) imageLoad(image, i).x
#else
layout(set = 0, binding = 0, rgba16ui) uniform readonly uimageBuffer texel_a4;
layout(set = 0, binding = 1, r16ui) uniform readonly uimageBuffer texel_a1;
layout(set = 0, binding = 2, rgba16ui) uniform readonly uimageBuffer texel_b4;
layout(set = 0, binding = 3, r16ui) uniform readonly uimageBuffer texel_b1;
#define TEXEL_LOAD4(image, i) uintBitsToFloat(imageLoad(image, i) << 16)
#define TEXEL_LOAD1(image, i) uintBitsToFloat(imageLoad(image, i).x << 16)
#endif
layout(set = 0, binding = 4, r32f) uniform writeonly imageBuffer texel_c;
layout(set = 0, binding = 5, r32f) uniform readonly imageBuffer texel_bias;
#endif

#if KIND == KIND_FLOAT32
// ---- vector loads of float32 / float16 / bfloat16 operands (the float32 compute kind)
// A "group" is 64 bits of consecutive elements: 2 float32 or 4 float16 / bfloat16 values,
// read with one load. The launcher checks that every group read is aligned (address,
// strides, sizes) and lies inside the operand. 16-bit values are converted one by one with
// the exact integer conversions of common.glsl.
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer RefVec4 { vec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer RefGroup { uint64_t v; };

// The 64 bits of the group that starts at element `off`.
uint64_t load_group(uint64_t base, int off, int dt) {
  return RefGroup(tvk_elem_addr(base, off, log2_size(dt))).v;
}

// Element h (0: low 16 bits) of a 32-bit word of two float16 / bfloat16 values.
float word_elem(uint word, int h, int dt) {
  if (dt == DT_FLOAT16) return tvk_half_to_float(h == 0 ? word : word >> 16);
  return uintBitsToFloat(h == 0 ? word << 16 : word & 0xffff0000u);
}

// Element h of a group.
float group_elem(uint64_t w, int h, int dt) {
  uvec2 u = unpackUint2x32(w);
  if (dt == DT_FLOAT32) return uintBitsToFloat(h == 0 ? u.x : u.y);
  return word_elem(h < 2 ? u.x : u.y, h & 1, dt);
}

// Elements off .. off + 3: one 16-byte load (float32) or one 8-byte load (16-bit dtypes).
vec4 load4(uint64_t base, int off, int dt) {
  if (dt == DT_FLOAT32) return RefVec4(tvk_elem_addr(base, off, 2)).v;
  uvec2 u = unpackUint2x32(load_group(base, off, dt));
  return vec4(word_elem(u.x, 0, dt), word_elem(u.x, 1, dt), word_elem(u.y, 0, dt),
              word_elem(u.y, 1, dt));
}
#endif

// The register block of this invocation: g_acc[i * TN + j] is row i, column j.
T g_acc[TM * TN];

int row_of(int tm, int i);
int col_of(int tn, int j);

#if GEMM_EPILOGUE
// Element (m, n) of batch bt of C = alpha * A @ B + beta * bias, in the compute kind (not yet
// rounded to C's dtype). Defined by the run-time source; `args` is its argument block.
void gemm_epilogue(uint64_t args, int bt, int m, int n, T v);
#endif

// C = alpha * acc (+ beta * bias) for the block of invocation (tm, tn) of the workgroup tile
// at (row0, col0).
void store_block(int bt, int row0, int col0, int tm, int tn) {
  const int lc = log2_size(DT_C);
  uint64_t c_base = batch_base(pc.c, bt, pc.c_bs, lc);
  uint64_t bias_base = 0;
  if (DT_BIAS >= 0) bias_base = batch_base(pc.bias, bt, pc.bias_bs, log2_size(DT_BIAS));
  [[unroll]] for (int i = 0; i < TM; ++i) {
    int m = row0 + row_of(tm, i);
    if (m >= pc.M) continue;
    [[unroll]] for (int j = 0; j < TN; ++j) {
      int n = col0 + col_of(tn, j);
      if (n >= pc.N) continue;
      T v = pc.alpha * g_acc[i * TN + j];
      if (DT_BIAS >= 0) {
        T r;
#if GEMM_TEXEL
        if (DT_BIAS == DT_FLOAT32)
          r = imageLoad(texel_bias, pc.bias_texel + bt * int(pc.bias_bs) + m * pc.bias_rs +
                                        n * pc.bias_cs).x;
        else
#endif
          r = LOAD_T(tvk_elem_addr(bias_base, m * pc.bias_rs + n * pc.bias_cs,
                                   log2_size(DT_BIAS)), DT_BIAS, 0);
        v += pc.beta * r;
      }
#if GEMM_EPILOGUE
      gemm_epilogue(packUint2x32(uvec2(pc.alpha_pad, pc.beta_pad)), bt, m, n, v);
#else
#if GEMM_TEXEL
      if (DT_C == DT_FLOAT32) {
        imageStore(texel_c, pc.c_texel + bt * int(pc.c_bs) + m * c_rs() + n * c_cs(), vec4(v));
        continue;
      }
#endif
      STORE_T(tvk_elem_addr(c_base, m * c_rs() + n * c_cs(), lc), DT_C, 0, v);
#endif
    }
  }
}

#if GEMM_TEXEL
// ---------------------------------------------------------------- texel (CPU-class devices)
// The direct algorithm (register blocks straight from memory) with A and B (float32, float16
// or bfloat16: TEXEL_DTYPE) read through storage texel buffers. On lavapipe (Mesa 22.3, 8 lanes of 32 bits) a texel load is
// a short gather of the 8 lanes, while every buffer-reference load is a loop over them:
// benchmarks/bench_loads.py measures, per lane and iteration of a loop, ~0.6 ns with an r32f
// load and ~1.1 ns with an rgba32f load (4 values) against ~5 ns with one buffer-reference
// float and ~20 ns with a vec4 (the loop with an FMA alone: ~0.5 ns). So this is the CPU
// devices' GEMM for float32 / float16 / bfloat16 operands.
// A_LOAD: 0 scalar (one-element texels, any strides), 2 vec4 along k (a_cs == 1), 3 vec4 along
// m (a_rs == 1), 4 and 5 the shuffled forms of 2 and 0; B_LOAD: 0 scalar, 2 vec4 along n
// (b_cs == 1), 3 vec4 along k (b_rs == 1).
// Shuffled A (A_LOAD 4 / 5: the workgroup is one subgroup of WN invocations, WM == 1, TM a
// multiple of WN): all lanes of the subgroup own the same TM rows, so instead of each lane
// loading every row (the same texel in all lanes: a full gather for one value), lane l loads
// row g * WN + l of each group g of WN rows and the others read it with subgroupShuffle (on
// lavapipe a lane permute, ~2 instructions, against ~10 per vector of a texel load).
// Texel indices count elements (a 4-element texel holds elements 4t .. 4t + 3). Vector modes
// need every vector 4-aligned in the view (the launcher checks base, strides and sizes), and
// vector along k needs K % 4 == 0. An invocation owns groups of 4 adjacent rows / columns in
// the vector-along-m / n modes, the groups strided by WM / WN (as in the direct algorithm).
// k runs in steps of 4; a K % 4 tail (only without vector-along-k modes) runs one k at a time.
// Rows / columns past the end are clamped (loaded, never stored).
const bool SHUF_A = A_LOAD == 4 || A_LOAD == 5;
const bool VEC_A_K = A_LOAD == 2 || A_LOAD == 4, VEC_A_M = A_LOAD == 3;
const bool VEC_B_N = B_LOAD == 2, VEC_B_K = B_LOAD == 3;
const int AG = SHUF_A ? TM / WN : 1;  // row groups loaded once per subgroup (shuffled A)

int row_of(int tm, int i) { return VEC_A_M ? (tm + (i / 4) * WM) * 4 + (i % 4) : tm + i * WM; }
int col_of(int tn, int j) { return VEC_B_N ? (tn + (j / 4) * WN) * 4 + (j % 4) : tn + j * WN; }

// Shuffled A: the values of the TM rows from `own`, this lane's value of each row group.
void shuffle_rows(float own[AG], out float av[TM]) {
  [[unroll]] for (int i = 0; i < TM; ++i) av[i] = subgroupShuffle(own[i / WN], uint(i % WN));
}

// The values of A at column k for the TM rows, shuffled A (a_own: texel index of this lane's
// row of each group at k = 0).
void texel_shuffled_a(int k, int a_own[AG], out float av[TM]) {
  float own[AG];
  [[unroll]] for (int g = 0; g < AG; ++g) own[g] = TEXEL_LOAD1(texel_a1, a_own[g] + k * pc.a_cs);
  shuffle_rows(own, av);
}

// g_acc += A[rows, k .. k + 3] @ B[k .. k + 3, columns]; a_off / b_off: texel index of each
// row of A at k = 0 / each column of B at k = 0 (a_own: shuffled A). Vector-along-k operands
// come with all four k at once; the others are loaded per k, next to the FMAs that use them
// (fewer values live at once: on a CPU device each is a vector register, and the register
// block already spills).
void texel_step4(int k, int a_off[TM], int a_own[AG], int b_off[TN]) {
  vec4 ak[VEC_A_K ? (SHUF_A ? AG : TM) : 1], bk[VEC_B_K ? TN : 1];
  if (VEC_A_K && SHUF_A)
    [[unroll]] for (int g = 0; g < AG; ++g) ak[g] = TEXEL_LOAD4(texel_a4, (a_own[g] + k) >> 2);
  else if (VEC_A_K)
    [[unroll]] for (int i = 0; i < TM; ++i) ak[i] = TEXEL_LOAD4(texel_a4, (a_off[i] + k) >> 2);
  if (VEC_B_K)
    [[unroll]] for (int j = 0; j < TN; ++j) bk[j] = TEXEL_LOAD4(texel_b4, (b_off[j] + k) >> 2);
  [[unroll]] for (int q = 0; q < 4; ++q) {
    float av[TM], bv[TN];
    if (VEC_A_K && SHUF_A) {
      float own[AG];
      [[unroll]] for (int g = 0; g < AG; ++g) own[g] = ak[g][q];
      shuffle_rows(own, av);
    } else if (SHUF_A) {
      texel_shuffled_a(k + q, a_own, av);
    } else if (VEC_A_K) {
      [[unroll]] for (int i = 0; i < TM; ++i) av[i] = ak[i][q];
    } else if (VEC_A_M) {
      [[unroll]] for (int i = 0; i < TM; i += 4) {
        vec4 v = TEXEL_LOAD4(texel_a4, (a_off[i] + (k + q) * pc.a_cs) >> 2);
        [[unroll]] for (int c = 0; c < 4; ++c) av[i + c] = v[c];
      }
    } else {
      [[unroll]] for (int i = 0; i < TM; ++i)
        av[i] = TEXEL_LOAD1(texel_a1, a_off[i] + (k + q) * pc.a_cs);
    }
    if (VEC_B_K) {
      [[unroll]] for (int j = 0; j < TN; ++j) bv[j] = bk[j][q];
    } else if (VEC_B_N) {
      [[unroll]] for (int j = 0; j < TN; j += 4) {
        vec4 v = TEXEL_LOAD4(texel_b4, (b_off[j] + (k + q) * pc.b_rs) >> 2);
        [[unroll]] for (int c = 0; c < 4; ++c) bv[j + c] = v[c];
      }
    } else {
      [[unroll]] for (int j = 0; j < TN; ++j)
        bv[j] = TEXEL_LOAD1(texel_b1, b_off[j] + (k + q) * pc.b_rs);
    }
    [[unroll]] for (int i = 0; i < TM; ++i)
      [[unroll]] for (int j = 0; j < TN; ++j) g_acc[i * TN + j] = fma(av[i], bv[j], g_acc[i * TN + j]);
  }
}

// g_acc += A[rows, k] @ B[k, columns] (the K % 4 tail: no vector-along-k mode here).
void texel_step1(int k, int a_off[TM], int a_own[AG], int b_off[TN]) {
  float av[TM], bv[TN];
  if (SHUF_A) {
    texel_shuffled_a(k, a_own, av);
  } else if (VEC_A_M) {
    [[unroll]] for (int i = 0; i < TM; i += 4) {
      vec4 v = TEXEL_LOAD4(texel_a4, (a_off[i] + k * pc.a_cs) >> 2);
      [[unroll]] for (int c = 0; c < 4; ++c) av[i + c] = v[c];
    }
  } else {
    [[unroll]] for (int i = 0; i < TM; ++i) av[i] = TEXEL_LOAD1(texel_a1, a_off[i] + k * pc.a_cs);
  }
  if (VEC_B_N) {
    [[unroll]] for (int j = 0; j < TN; j += 4) {
      vec4 v = TEXEL_LOAD4(texel_b4, (b_off[j] + k * pc.b_rs) >> 2);
      [[unroll]] for (int c = 0; c < 4; ++c) bv[j + c] = v[c];
    }
  } else {
    [[unroll]] for (int j = 0; j < TN; ++j) bv[j] = TEXEL_LOAD1(texel_b1, b_off[j] + k * pc.b_rs);
  }
  [[unroll]] for (int i = 0; i < TM; ++i)
    [[unroll]] for (int j = 0; j < TN; ++j) g_acc[i * TN + j] = fma(av[i], bv[j], g_acc[i * TN + j]);
}

void tile(int bt, int ty, int tx) {
  uint lid = gl_LocalInvocationID.x;
  int tn = int(lid % uint(WN)), tm = int(lid / uint(WN));
  int row0 = ty * BM, col0 = tx * BN;
  const int a0 = pc.a_texel + bt * int(pc.a_bs), b0 = pc.b_texel + bt * int(pc.b_bs);
  int a_off[TM], a_own[AG], b_off[TN];
  [[unroll]] for (int i = 0; i < TM; ++i) {
    int m = row0 + row_of(tm, i);
    if (VEC_A_M) m = min(m - (i % 4), pc.M - 4) + (i % 4);
    a_off[i] = a0 + min(m, pc.M - 1) * pc.a_rs;
  }
  // Shuffled A: row_of(0, i) == i (WM == 1), lane l owns row g * WN + l of group g.
  [[unroll]] for (int g = 0; g < AG; ++g)
    a_own[g] = a0 + min(row0 + g * WN + int(gl_SubgroupInvocationID), pc.M - 1) * pc.a_rs;
  [[unroll]] for (int j = 0; j < TN; ++j) {
    int n = col0 + col_of(tn, j);
    if (VEC_B_N) n = min(n - (j % 4), pc.N - 4) + (j % 4);
    b_off[j] = b0 + min(n, pc.N - 1) * pc.b_cs;
  }
  [[unroll]] for (int i = 0; i < TM * TN; ++i) g_acc[i] = 0.0;
  // Two steps per iteration: on lavapipe every loop iteration blends each value it assigns
  // with the loop's lane mask, so fewer iterations cost fewer instructions.
  int k = 0;
  for (; k + 8 <= pc.K; k += 8) {
    texel_step4(k, a_off, a_own, b_off);
    texel_step4(k + 4, a_off, a_own, b_off);
  }
  for (; k + 4 <= pc.K; k += 4) texel_step4(k, a_off, a_own, b_off);
  for (; k < pc.K; ++k) texel_step1(k, a_off, a_own, b_off);
  store_block(bt, row0, col0, tm, tn);
}

#elif GEMM_LANES
// ---------------------------------------------------------------- lanes (CPU-class devices)
// On a CPU driver (lavapipe) the invocations of a subgroup are the SIMD lanes of one core: an
// FMA is one vector instruction for all lanes, while every buffer load is a loop over the
// lanes. So this algorithm minimizes loads per FMA:
//   * one workgroup is one subgroup of WN lanes (WM == 1; the launcher checks the subgroup size);
//     it owns TM rows and WN * TN columns, every lane all TM rows and TN of the columns;
//   * A is shared by all lanes: in a k step of KS values lane l loads A[row, k + l] (or the
//     pair k + 2l, k + 2l + 1) for each row, and subgroupBroadcast hands the value of step q to
//     every lane, so each A element is loaded once per workgroup instead of once per lane;
//   * B: each lane loads its own TN columns of row k (pairs with B_LOAD 4).
// Rows / columns past the end are clamped (loaded, never stored); k past the end contributes 0
// (both factors zeroed, so inf / NaN in a clamped row cannot leak in).
// Groups (A_LOAD / B_LOAD 4): 64-bit loads of 2 float32 or 4 float16 / bfloat16 values
// (vector loads above): along k for A (a lane loads a group per row and step), along n for B
// (a lane owns groups of GB adjacent columns, the groups strided by WN).
#if KIND == KIND_FLOAT32
const bool PAIR_A = A_LOAD == 4, PAIR_B = B_LOAD == 4;
#define LANES_FMA(a, b, acc) fma(a, b, acc)
#else
const bool PAIR_A = false, PAIR_B = false;
#define LANES_FMA(a, b, acc) ((acc) + (a) * (b))
#endif
const int GA = DT_A == DT_FLOAT32 ? 2 : 4;  // elements per group of A / B
const int GB = DT_B == DT_FLOAT32 ? 2 : 4;
const int KA = PAIR_A ? GA : 1;  // k values per lane and step
const int KS = WN * KA;          // k per step

int row_of(int tm, int i) { return i; }
int col_of(int tn, int j) { return PAIR_B ? (j / GB) * GB * WN + tn * GB + (j % GB) : j * WN + tn; }

void tile(int bt, int ty, int tx) {
  const int lane = int(gl_SubgroupInvocationID);
  const int row0 = ty * TM, col0 = tx * (WN * TN);
  uint64_t a_base = batch_base(pc.a, bt, pc.a_bs, log2_size(DT_A));
  uint64_t b_base = batch_base(pc.b, bt, pc.b_bs, log2_size(DT_B));
  int a_off[TM], b_off[TN];
  [[unroll]] for (int i = 0; i < TM; ++i) a_off[i] = min(row0 + i, pc.M - 1) * a_rs();
  [[unroll]] for (int j = 0; j < TN; ++j) {
    int n = col0 + col_of(lane, j);
    if (PAIR_B) n = min(n - (j % GB), pc.N - GB) + (j % GB);  // N % GB == 0: groups stay whole
    b_off[j] = min(n, pc.N - 1) * b_cs();
  }
  [[unroll]] for (int i = 0; i < TM * TN; ++i) g_acc[i] = T(0);
  for (int k = 0; k < pc.K; k += KS) {
    // This lane's share of A for the step (K % GA == 0 with groups).
    const int kl = k + lane * KA;
    const int kc = min(kl, pc.K - KA);
#if KIND == KIND_FLOAT32
    uint64_t ap[PAIR_A ? TM : 1];
    if (PAIR_A)
      [[unroll]] for (int i = 0; i < TM; ++i) {
        uint64_t w = load_group(a_base, a_off[i] + kc, DT_A);
        ap[i] = kl < pc.K ? w : uint64_t(0);
      }
#endif
    T as[PAIR_A ? 1 : TM];
    if (!PAIR_A)
      [[unroll]] for (int i = 0; i < TM; ++i) {
        T v = load_a(a_base, a_off[i] + kc * a_cs());
        as[i] = kl < pc.K ? v : T(0);
      }
    // Not unrolled: the body is already TM x TN x KA FMAs, and unrolling it WN times more
    // multiplies the driver's compile time (seconds per pipeline on lavapipe) for little gain.
    [[dont_unroll]] for (int q = 0; q < WN; ++q) {
      T av[TM * KA];  // av[i * KA + h]: row i at k + q * KA + h
#if KIND == KIND_FLOAT32
      if (PAIR_A)
        [[unroll]] for (int i = 0; i < TM; ++i) {
          uint64_t w = subgroupBroadcast(ap[i], q);
          [[unroll]] for (int h = 0; h < KA; ++h) av[i * KA + h] = group_elem(w, h, DT_A);
        }
#endif
      if (!PAIR_A)
        [[unroll]] for (int i = 0; i < TM; ++i) av[i] = subgroupBroadcast(as[i], q);
      [[unroll]] for (int h = 0; h < KA; ++h) {
        const int kq = k + q * KA + h;
        const int kb = min(kq, pc.K - 1) * b_rs();
        T bv[TN];
#if KIND == KIND_FLOAT32
        if (PAIR_B)
          [[unroll]] for (int j = 0; j < TN; j += GB) {
            uint64_t w = load_group(b_base, b_off[j] + kb, DT_B);
            [[unroll]] for (int h = 0; h < GB; ++h) bv[j + h] = group_elem(w, h, DT_B);
          }
#endif
        if (!PAIR_B)
          [[unroll]] for (int j = 0; j < TN; ++j) bv[j] = load_b(b_base, b_off[j] + kb);
        if (kq >= pc.K)
          [[unroll]] for (int j = 0; j < TN; ++j) bv[j] = T(0);
        [[unroll]] for (int i = 0; i < TM; ++i)
          [[unroll]] for (int j = 0; j < TN; ++j)
            g_acc[i * TN + j] = LANES_FMA(av[i * KA + h], bv[j], g_acc[i * TN + j]);
      }
    }
  }
  store_block(bt, row0, col0, 0, lane);
}

#elif GEMM_TILED
// ---------------------------------------------------------------- tiled (shared memory)
// The tile loaders have no branch around their loads: an element past the end of the operand
// is loaded from a clamped (valid) position and replaced by 0, so a GPU compiler can issue
// all loads of a tile back to back instead of one guarded load at a time.

shared T As[STAGES * BK * BM];  // buffer s: As[s * BK * BM + k * BM + m]
shared T Bs[STAGES * BK * BN];  // buffer s: Bs[s * BK * BN + k * BN + n]

void load_a_tile(uint64_t a_base, int row0, int k0, uint lid) {
#if KIND == KIND_FLOAT32
  if (A_LOAD == 2) {  // vec4 along k (a_cs == 1, K % 4 == 0, aligned rows)
    const int KV = BK / 4;
    for (int e = int(lid); e < BM * KV; e += WG) {
      int kk = (e % KV) * 4, mm = e / KV;
      int gm = row0 + mm, gk = k0 + kk;
      vec4 v = load4(a_base, min(gm, pc.M - 1) * a_rs() + min(gk, pc.K - 4), DT_A);
      v = gm < pc.M && gk < pc.K ? v : vec4(0.0);
      As[(kk + 0) * BM + mm] = v.x;
      As[(kk + 1) * BM + mm] = v.y;
      As[(kk + 2) * BM + mm] = v.z;
      As[(kk + 3) * BM + mm] = v.w;
    }
    return;
  }
  if (A_LOAD == 3) {  // vec4 along m (a_rs == 1, M % 4 == 0, aligned columns)
    const int MV = BM / 4;
    for (int e = int(lid); e < MV * BK; e += WG) {
      int mm = (e % MV) * 4, kk = e / MV;
      int gm = row0 + mm, gk = k0 + kk;
      vec4 v = load4(a_base, min(gm, pc.M - 4) + min(gk, pc.K - 1) * a_cs(), DT_A);
      v = gm < pc.M && gk < pc.K ? v : vec4(0.0);
      As[kk * BM + mm + 0] = v.x;
      As[kk * BM + mm + 1] = v.y;
      As[kk * BM + mm + 2] = v.z;
      As[kk * BM + mm + 3] = v.w;
    }
    return;
  }
#endif
  for (int e = int(lid); e < BM * BK; e += WG) {
    int kk, mm;
    if (A_LOAD == 1) {
      mm = e % BM;
      kk = e / BM;
    } else {
      kk = e % BK;
      mm = e / BK;
    }
    int gm = row0 + mm, gk = k0 + kk;
    T v = load_a(a_base, min(gm, pc.M - 1) * a_rs() + min(gk, pc.K - 1) * a_cs());
    As[kk * BM + mm] = gm < pc.M && gk < pc.K ? v : T(0);
  }
}

void load_b_tile(uint64_t b_base, int k0, int col0, uint lid) {
#if KIND == KIND_FLOAT32
  if (B_LOAD == 2) {  // vec4 along n (b_cs == 1, N % 4 == 0, aligned rows)
    const int NV = BN / 4;
    for (int e = int(lid); e < NV * BK; e += WG) {
      int nn = (e % NV) * 4, kk = e / NV;
      int gn = col0 + nn, gk = k0 + kk;
      vec4 v = load4(b_base, min(gk, pc.K - 1) * b_rs() + min(gn, pc.N - 4), DT_B);
      v = gn < pc.N && gk < pc.K ? v : vec4(0.0);
      Bs[kk * BN + nn + 0] = v.x;
      Bs[kk * BN + nn + 1] = v.y;
      Bs[kk * BN + nn + 2] = v.z;
      Bs[kk * BN + nn + 3] = v.w;
    }
    return;
  }
  if (B_LOAD == 3) {  // vec4 along k (b_rs == 1, K % 4 == 0, aligned columns)
    const int KV = BK / 4;
    for (int e = int(lid); e < BN * KV; e += WG) {
      int kk = (e % KV) * 4, nn = e / KV;
      int gn = col0 + nn, gk = k0 + kk;
      vec4 v = load4(b_base, min(gk, pc.K - 4) + min(gn, pc.N - 1) * b_cs(), DT_B);
      v = gn < pc.N && gk < pc.K ? v : vec4(0.0);
      Bs[(kk + 0) * BN + nn] = v.x;
      Bs[(kk + 1) * BN + nn] = v.y;
      Bs[(kk + 2) * BN + nn] = v.z;
      Bs[(kk + 3) * BN + nn] = v.w;
    }
    return;
  }
#endif
  for (int e = int(lid); e < BN * BK; e += WG) {
    int kk, nn;
    if (B_LOAD == 1) {
      kk = e % BK;
      nn = e / BK;
    } else {
      nn = e % BN;
      kk = e / BN;
    }
    int gn = col0 + nn, gk = k0 + kk;
    T v = load_b(b_base, min(gk, pc.K - 1) * b_rs() + min(gn, pc.N - 1) * b_cs());
    Bs[kk * BN + nn] = gn < pc.N && gk < pc.K ? v : T(0);
  }
}

// The products of one K step from shared buffer `stage`.
void multiply_tile(int stage, int tm, int tn) {
  const int a0 = stage * BK * BM, b0 = stage * BK * BN;
  [[unroll]] for (int kk = 0; kk < BK; ++kk) {
    T av[TM], bv[TN];
    [[unroll]] for (int i = 0; i < TM; ++i) av[i] = As[a0 + kk * BM + tm + i * WM];
    [[unroll]] for (int j = 0; j < TN; ++j) bv[j] = Bs[b0 + kk * BN + tn + j * WN];
    [[unroll]] for (int i = 0; i < TM; ++i)
      [[unroll]] for (int j = 0; j < TN; ++j) g_acc[i * TN + j] += av[i] * bv[j];
  }
}

// ---- double buffering (STAGES 2): a tile goes global -> registers (fetch_*) -> shared
// (stash_*). Item e of a tile (one element, or 4 along the vector axis in the vec4 modes)
// is fetched by invocation e % WG into register e / WG; items past the tile are fetched from
// clamped positions and not stored.
#if KIND == KIND_FLOAT32
const bool DB_VEC_A = A_LOAD == 2 || A_LOAD == 3, DB_VEC_B = B_LOAD == 2 || B_LOAD == 3;
#else
const bool DB_VEC_A = false, DB_VEC_B = false;
#endif
const int DB_A_ITEMS = DB_VEC_A ? BM * BK / 4 : BM * BK;
const int DB_B_ITEMS = DB_VEC_B ? BN * BK / 4 : BN * BK;
const int DB_A_PER = STAGES == 2 ? (DB_A_ITEMS + WG - 1) / WG : 1;
const int DB_B_PER = STAGES == 2 ? (DB_B_ITEMS + WG - 1) / WG : 1;
vec4 g_fa[DB_A_PER];  // fetched items of A in the vec4 modes
T g_sa[DB_A_PER];     // ... and in the scalar ones
vec4 g_fb[DB_B_PER];  // the same for B
T g_sb[DB_B_PER];

// (m, k) in the A tile of item e (the first of its 4 in the vec4 modes).
ivec2 a_item(int e) {
  if (DB_VEC_A && A_LOAD == 2) return ivec2(e / (BK / 4), (e % (BK / 4)) * 4);
  if (DB_VEC_A) return ivec2((e % (BM / 4)) * 4, e / (BM / 4));
  if (A_LOAD == 1) return ivec2(e % BM, e / BM);
  return ivec2(e / BK, e % BK);
}
// (k, n) in the B tile of item e.
ivec2 b_item(int e) {
  if (DB_VEC_B && B_LOAD == 2) return ivec2(e / (BN / 4), (e % (BN / 4)) * 4);
  if (DB_VEC_B) return ivec2((e % (BK / 4)) * 4, e / (BK / 4));
  if (B_LOAD == 1) return ivec2(e % BK, e / BK);
  return ivec2(e / BN, e % BN);
}

void fetch_a(uint64_t a_base, int row0, int k0, uint lid) {
  [[unroll]] for (int r = 0; r < DB_A_PER; ++r) {
    const ivec2 mk = a_item(int(lid) + r * WG);
    const int gm = row0 + mk.x, gk = k0 + mk.y;
    const bool inside = gm < pc.M && gk < pc.K;
#if KIND == KIND_FLOAT32
    if (DB_VEC_A) {
      const vec4 v = A_LOAD == 2
          ? load4(a_base, min(gm, pc.M - 1) * a_rs() + min(gk, pc.K - 4), DT_A)
          : load4(a_base, min(gm, pc.M - 4) + min(gk, pc.K - 1) * a_cs(), DT_A);
      g_fa[r] = inside ? v : vec4(0.0);
      continue;
    }
#endif
    const T v = load_a(a_base, min(gm, pc.M - 1) * a_rs() + min(gk, pc.K - 1) * a_cs());
    g_sa[r] = inside ? v : T(0);
  }
}

void fetch_b(uint64_t b_base, int k0, int col0, uint lid) {
  [[unroll]] for (int r = 0; r < DB_B_PER; ++r) {
    const ivec2 kn = b_item(int(lid) + r * WG);
    const int gk = k0 + kn.x, gn = col0 + kn.y;
    const bool inside = gk < pc.K && gn < pc.N;
#if KIND == KIND_FLOAT32
    if (DB_VEC_B) {
      const vec4 v = B_LOAD == 2
          ? load4(b_base, min(gk, pc.K - 1) * b_rs() + min(gn, pc.N - 4), DT_B)
          : load4(b_base, min(gk, pc.K - 4) + min(gn, pc.N - 1) * b_cs(), DT_B);
      g_fb[r] = inside ? v : vec4(0.0);
      continue;
    }
#endif
    const T v = load_b(b_base, min(gk, pc.K - 1) * b_rs() + min(gn, pc.N - 1) * b_cs());
    g_sb[r] = inside ? v : T(0);
  }
}

void stash_a(int stage, uint lid) {
  const int a0 = stage * BK * BM;
  [[unroll]] for (int r = 0; r < DB_A_PER; ++r) {
    const int e = int(lid) + r * WG;
    if (DB_A_ITEMS % WG != 0 && e >= DB_A_ITEMS) break;
    const ivec2 mk = a_item(e);
    if (!DB_VEC_A) {
      As[a0 + mk.y * BM + mk.x] = g_sa[r];
      continue;
    }
#if KIND == KIND_FLOAT32
    const vec4 v = g_fa[r];
    if (A_LOAD == 2) {  // 4 along k
      As[a0 + (mk.y + 0) * BM + mk.x] = v.x;
      As[a0 + (mk.y + 1) * BM + mk.x] = v.y;
      As[a0 + (mk.y + 2) * BM + mk.x] = v.z;
      As[a0 + (mk.y + 3) * BM + mk.x] = v.w;
    } else {  // 4 along m
      As[a0 + mk.y * BM + mk.x + 0] = v.x;
      As[a0 + mk.y * BM + mk.x + 1] = v.y;
      As[a0 + mk.y * BM + mk.x + 2] = v.z;
      As[a0 + mk.y * BM + mk.x + 3] = v.w;
    }
#endif
  }
}

void stash_b(int stage, uint lid) {
  const int b0 = stage * BK * BN;
  [[unroll]] for (int r = 0; r < DB_B_PER; ++r) {
    const int e = int(lid) + r * WG;
    if (DB_B_ITEMS % WG != 0 && e >= DB_B_ITEMS) break;
    const ivec2 kn = b_item(e);
    if (!DB_VEC_B) {
      Bs[b0 + kn.x * BN + kn.y] = g_sb[r];
      continue;
    }
#if KIND == KIND_FLOAT32
    const vec4 v = g_fb[r];
    if (B_LOAD == 2) {  // 4 along n
      Bs[b0 + kn.x * BN + kn.y + 0] = v.x;
      Bs[b0 + kn.x * BN + kn.y + 1] = v.y;
      Bs[b0 + kn.x * BN + kn.y + 2] = v.z;
      Bs[b0 + kn.x * BN + kn.y + 3] = v.w;
    } else {  // 4 along k
      Bs[b0 + (kn.x + 0) * BN + kn.y] = v.x;
      Bs[b0 + (kn.x + 1) * BN + kn.y] = v.y;
      Bs[b0 + (kn.x + 2) * BN + kn.y] = v.z;
      Bs[b0 + (kn.x + 3) * BN + kn.y] = v.w;
    }
#endif
  }
}

void tile(int bt, int ty, int tx) {
  uint lid = gl_LocalInvocationID.x;
  int tn = int(lid % uint(WN)), tm = int(lid / uint(WN));
  int row0 = ty * BM, col0 = tx * BN;
  uint64_t a_base = batch_base(pc.a, bt, pc.a_bs, log2_size(DT_A));
  uint64_t b_base = batch_base(pc.b, bt, pc.b_bs, log2_size(DT_B));
  [[unroll]] for (int i = 0; i < TM * TN; ++i) g_acc[i] = T(0);
  if (STAGES == 2) {
    // Step t reads buffer t % 2 and fills the other one, whose last reads (step t - 1) ended
    // before that step's barrier; the barrier after step t publishes it for step t + 1.
    fetch_a(a_base, row0, 0, lid);
    fetch_b(b_base, 0, col0, lid);
    stash_a(0, lid);
    stash_b(0, lid);
    barrier();
    int stage = 0;
    for (int k0 = 0; k0 < pc.K; k0 += BK) {
      const bool next = k0 + BK < pc.K;
      if (next) {
        fetch_a(a_base, row0, k0 + BK, lid);
        fetch_b(b_base, k0 + BK, col0, lid);
      }
      multiply_tile(stage, tm, tn);
      if (next) {
        stash_a(stage ^ 1, lid);
        stash_b(stage ^ 1, lid);
      }
      barrier();
      stage ^= 1;
    }
  } else {
    for (int k0 = 0; k0 < pc.K; k0 += BK) {
      load_a_tile(a_base, row0, k0, lid);
      load_b_tile(b_base, k0, col0, lid);
      barrier();
      multiply_tile(0, tm, tn);
      barrier();
    }
  }
  store_block(bt, row0, col0, tm, tn);
}

int row_of(int tm, int i) { return tm + i * WM; }
int col_of(int tn, int j) { return tn + j * WN; }

#else
// ---------------------------------------------------------------- direct (no shared memory)
// A_LOAD / B_LOAD: 0 scalar loads; 2 / 3 vec4 loads (load4: float32, float16 or bfloat16
// storage; the launcher checks alignment and that the vector axis is a multiple of 4 long):
//   A_LOAD 2  vec4 along k (a_cs == 1)   A_LOAD 3  vec4 along m (a_rs == 1, TM % 4 == 0)
//   B_LOAD 2  vec4 along n (b_cs == 1, TN % 4 == 0)   B_LOAD 3  vec4 along k (b_rs == 1)
// With vectors along m (n) an invocation owns groups of 4 adjacent rows (columns), the groups
// strided by WM (WN) like single rows (columns) otherwise.
#if KIND == KIND_FLOAT32
const bool VEC_A_K = A_LOAD == 2, VEC_A_M = A_LOAD == 3;
const bool VEC_B_N = B_LOAD == 2, VEC_B_K = B_LOAD == 3;
#else
const bool VEC_A_K = false, VEC_A_M = false, VEC_B_N = false, VEC_B_K = false;
#endif
const int KV = (VEC_A_K || VEC_B_K) ? 4 : 1;  // k per step

int row_of(int tm, int i) { return VEC_A_M ? (tm + (i / 4) * WM) * 4 + (i % 4) : tm + i * WM; }
int col_of(int tn, int j) { return VEC_B_N ? (tn + (j / 4) * WN) * 4 + (j % 4) : tn + j * WN; }

void tile(int bt, int ty, int tx) {
  uint lid = gl_LocalInvocationID.x;
  int tn = int(lid % uint(WN)), tm = int(lid / uint(WN));
  int row0 = ty * BM, col0 = tx * BN;
  uint64_t a_base = batch_base(pc.a, bt, pc.a_bs, log2_size(DT_A));
  uint64_t b_base = batch_base(pc.b, bt, pc.b_bs, log2_size(DT_B));
  // Rows / columns past the end are clamped (loaded, never stored): no branches in the loop.
  // Vector groups are clamped as a whole (the vector axis is a multiple of 4 long).
  int a_off[TM], b_off[TN];
  [[unroll]] for (int i = 0; i < TM; ++i) {
    int m = row0 + row_of(tm, i);
    if (VEC_A_M) m = min(m - (i % 4), pc.M - 4) + (i % 4);
    a_off[i] = min(m, pc.M - 1) * a_rs();
  }
  [[unroll]] for (int j = 0; j < TN; ++j) {
    int n = col0 + col_of(tn, j);
    if (VEC_B_N) n = min(n - (j % 4), pc.N - 4) + (j % 4);
    b_off[j] = min(n, pc.N - 1) * b_cs();
  }
  [[unroll]] for (int i = 0; i < TM * TN; ++i) g_acc[i] = T(0);
  const int sa = a_cs(), sb = b_rs();
  for (int k = 0; k < pc.K; k += KV) {
    T av[TM * KV], bv[KV * TN];  // av[i * KV + q]: row i, k + q; bv[q * TN + j]
#if KIND == KIND_FLOAT32
    if (VEC_A_K) {
      [[unroll]] for (int i = 0; i < TM; ++i) {
        vec4 v = load4(a_base, a_off[i] + k, DT_A);
        av[i * KV + 0] = v.x;
        av[i * KV + 1] = v.y;
        av[i * KV + 2] = v.z;
        av[i * KV + 3] = v.w;
      }
    } else if (VEC_A_M) {
      [[unroll]] for (int i = 0; i < TM; i += 4)
        [[unroll]] for (int q = 0; q < KV; ++q) {
          vec4 v = load4(a_base, a_off[i] + (k + q) * sa, DT_A);
          av[(i + 0) * KV + q] = v.x;
          av[(i + 1) * KV + q] = v.y;
          av[(i + 2) * KV + q] = v.z;
          av[(i + 3) * KV + q] = v.w;
        }
    } else
#endif
    {
      [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int q = 0; q < KV; ++q) av[i * KV + q] = load_a(a_base, a_off[i] + (k + q) * sa);
    }
#if KIND == KIND_FLOAT32
    if (VEC_B_K) {
      [[unroll]] for (int j = 0; j < TN; ++j) {
        vec4 v = load4(b_base, b_off[j] + k, DT_B);
        bv[0 * TN + j] = v.x;
        bv[1 * TN + j] = v.y;
        bv[2 * TN + j] = v.z;
        bv[3 * TN + j] = v.w;
      }
    } else if (VEC_B_N) {
      [[unroll]] for (int q = 0; q < KV; ++q)
        [[unroll]] for (int j = 0; j < TN; j += 4) {
          vec4 v = load4(b_base, b_off[j] + (k + q) * sb, DT_B);
          bv[q * TN + j + 0] = v.x;
          bv[q * TN + j + 1] = v.y;
          bv[q * TN + j + 2] = v.z;
          bv[q * TN + j + 3] = v.w;
        }
    } else
#endif
    {
      [[unroll]] for (int q = 0; q < KV; ++q)
        [[unroll]] for (int j = 0; j < TN; ++j) bv[q * TN + j] = load_b(b_base, b_off[j] + (k + q) * sb);
    }
    [[unroll]] for (int q = 0; q < KV; ++q)
      [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int j = 0; j < TN; ++j) g_acc[i * TN + j] += av[i * KV + q] * bv[q * TN + j];
  }
  store_block(bt, row0, col0, tm, tn);
}
#endif

void main() {
  if (EXACT_GRID == 1) {
#if GEMM_TEXEL
    // Consecutive workgroups take consecutive row tiles of one column tile: lavapipe runs
    // workgroups in x-fastest order, and this way the K x BN panel of B they share stays in
    // cache while A streams (x-fastest tiles would stream all of B once per row tile).
    uint id = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    tile(int(gl_WorkGroupID.z), int(id % gl_NumWorkGroups.y), int(id / gl_NumWorkGroups.y));
#else
    tile(int(gl_WorkGroupID.z), int(gl_WorkGroupID.y), int(gl_WorkGroupID.x));
#endif
    return;
  }
  uint tiles_m = (uint(pc.M) + uint(BM) - 1u) / uint(BM);
  uint tiles_n = (uint(pc.N) + uint(BN) - 1u) / uint(BN);
  for (uint bt = gl_WorkGroupID.z; bt < uint(pc.batch); bt += gl_NumWorkGroups.z)
    for (uint ty = gl_WorkGroupID.y; ty < tiles_m; ty += gl_NumWorkGroups.y)
      for (uint tx = gl_WorkGroupID.x; tx < tiles_n; tx += gl_NumWorkGroups.x)
        tile(int(bt), int(ty), int(tx));
}
