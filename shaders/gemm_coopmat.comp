#version 460
// Strided batched GEMM on cooperative matrices (VK_KHR_cooperative_matrix):
//   C[b] = alpha * A[b] @ B[b] + beta * bias[b]      A: M x K, B: K x N, float16 or bfloat16
// operands (both the same), float32 accumulation (exact products, as cuBLAS's default 16-bit
// GEMMs), C / bias of any float dtype. The same ABI as gemm.comp (push constants, matrix views, bias may be C itself),
// so src/kernels/gemm.cpp fills one push block for both.
//
// Built by tools/build_shaders.py (shaders/gemm_coopmat.variants.toml):
//   COOPMAT_EMULATE 0: the real kernel (glslangValidator 13.1+, validated with spirv-val; runs
//                   only where the device lists the float16 x float16 -> float32 subgroup shape
//                   CM x CN x CK). 1: the same kernel with every cooperative-matrix operation
//                   replaced by scalar code over the same shared-memory tiles (glslc, any
//                   device): tests run it on lavapipe, so the tiling, the load modes, the shared
//                   layouts, the offsets and strides given to the fragment loads and the epilogue
//                   are checked against the CPU everywhere; only the hardware matrix ops are not.
//   COOPMAT_BF16    1: bfloat16 A and B (or float32 A and B converted to bfloat16 while they are
//                   loaded, F32_TERMS below). The kernel moves A and B only as raw 16-bit patterns
//                   (memory -> registers -> shared tiles, by bit casts), so the real bfloat16
//                   kernel is this float16 code with its A / B fragment types retyped to
//                   bfloat16 in SPIR-V after compiling (tools/build_shaders.py, patch
//                   bfloat16_ab: glslang 13.1 has no GL_EXT_bfloat16); the emulation converts
//                   the patterns as bfloat16.
//
// Structure (the FlashAttention / ggml-vulkan "warp tile" scheme):
//   * A workgroup computes one BM x BN tile of C with WARPS_M x WARPS_N subgroups; subgroup
//     (wm, wn) owns the WTM x WTN = (BM / WARPS_M) x (BN / WARPS_N) sub-tile, held as
//     FM x FN accumulator fragments of CM x CN.
//   * K advances by BK: the invocations load the next A (BM x BK) and B (BK x BN) tiles from
//     memory into registers while the current tiles in shared memory are multiplied
//     (software pipelining), then store them to shared memory. Each tile is kept in the layout
//     its loads are contiguous in (row-major when A is contiguous along k, column-major when
//     along m; B likewise), and the fragment loads are told the layout, so shared-memory stores
//     stay contiguous in every mode. Rows are padded by 8 elements (16 bytes: keeps fragment
//     loads 16-byte aligned and spreads rows over the banks).
//   * The epilogue goes through a per-subgroup CM x CN float32 scratch in shared memory: the
//     fragment is stored there, then each lane applies alpha, beta * bias and the conversion
//     to C's dtype to its elements and stores them with bounds checks (C may have any strides).
//   * Out-of-range rows, columns and k of edge tiles are loaded as zeros.
// Grid: x over column tiles, y over row tiles, z over the batch; each dimension loops, so any
// grid covers any problem.
//
// Specialization constants (src/kernels/gemm_coopmat.cpp):
//   0  local_size_x = WARPS_M * WARPS_N * SG
//   1  DT_A, 2 DT_B (float16), 3 DT_C, 4 DT_BIAS (-1: no bias)
//   5  BM, 6 BN, 7 BK          workgroup tile and K step
//   8  WARPS_M, 9 WARPS_N      subgroups along M and N
//   10 SG                      the subgroup size (the device's subgroupSize: SPIR-V 1.5
//                              modules run with it, so gl_NumSubgroups == WARPS_M * WARPS_N)
//   11 CM, 12 CN, 13 CK        the cooperative-matrix shape
//   14 A_LOAD                  0 scalar, k fastest; 1 scalar, m fastest; 2 four elements along
//                              k in one 8-byte load; 3 four along m (the launcher checks
//                              alignment, strides and sizes for 2 / 3)
//   15 B_LOAD                  0 scalar, n fastest; 1 scalar, k fastest; 2 four along n;
//                              3 four along k
//   16 F32_TERMS               bfloat16 variants with float32 A and B (DT_A = DT_B = float32,
//                              set_float32_matmul_precision "medium" / "high"): 1 each value is
//                              rounded to bfloat16 (to nearest even; NaN stays NaN); 3 each value
//                              is split into hi = its top 16 bits and lo = bfloat16(x - hi), and
//                              a @ b = hi*hi + hi*lo + lo*hi (|lo| < 2^-7 |x|: the lo*lo term left
//                              out is below 2^-14 of the product, and rounding lo adds at most
//                              2^-16 per operand: about 1.5 * 2^-14 per product, against TF32's
//                              2^-10), with second shared tiles for the lo parts.
//                              0: 16-bit A and B.
// Launcher contract: BM % (WARPS_M * CM) == 0, BN % (WARPS_N * CN) == 0, BK % CK == 0,
// BM * BK and BK * BN multiples of 4 * WG, (CM * CN) % SG == 0.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#ifndef COOPMAT_EMULATE
#define COOPMAT_EMULATE 0
#endif
#ifndef COOPMAT_BF16
#define COOPMAT_BF16 0
#endif
#if !COOPMAT_EMULATE
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

#define KIND 0
#include "common.glsl"

// The real kernel unrolls its fragment loops (the driver keeps fragments in registers); the
// emulation does not: fully unrolled scalar fragment math takes lavapipe minutes to compile.
#if COOPMAT_EMULATE
#define UNROLL [[dont_unroll]]
#else
#define UNROLL [[unroll]]
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int DT_A = DT_FLOAT16;
layout(constant_id = 2) const int DT_B = DT_FLOAT16;
layout(constant_id = 3) const int DT_C = DT_FLOAT32;
layout(constant_id = 4) const int DT_BIAS = -1;
layout(constant_id = 5) const int BM = 64;
layout(constant_id = 6) const int BN = 64;
layout(constant_id = 7) const int BK = 32;
layout(constant_id = 8) const int WARPS_M = 2;
layout(constant_id = 9) const int WARPS_N = 2;
layout(constant_id = 10) const int SG = 32;
layout(constant_id = 11) const uint CM = 16;
layout(constant_id = 12) const uint CN = 16;
layout(constant_id = 13) const uint CK = 16;
layout(constant_id = 14) const int A_LOAD = 0;
layout(constant_id = 15) const int B_LOAD = 0;
layout(constant_id = 16) const int F32_TERMS = 0;

const int WG = WARPS_M * WARPS_N * SG;
const int WTM = BM / WARPS_M;           // rows of one subgroup's sub-tile
const int WTN = BN / WARPS_N;
const int FM = WTM / int(CM);           // fragments per subgroup along M / N
const int FN = WTN / int(CN);
const int PAD = 8;
const bool A_COLMAJOR = A_LOAD == 1 || A_LOAD == 3;  // shared A tile: element (r, k) at k * LDA + r
const bool B_COLMAJOR = B_LOAD == 1 || B_LOAD == 3;  // shared B tile: element (k, c) at c * LDB + k
const int LDA = A_COLMAJOR ? BM + PAD : BK + PAD;
const int LDB = B_COLMAJOR ? BK + PAD : BN + PAD;
const int A_ELEMS = BM * BK / WG;       // elements of the A tile one invocation loads
const int B_ELEMS = BK * BN / WG;
const int EPL = int(CM * CN) / SG;      // elements of a CM x CN fragment per lane (epilogue)
const bool SPLIT = F32_TERMS == 3;      // lo parts: their registers and shared tiles
const int LO_A = SPLIT ? (BM + PAD) * (BK + PAD) : 1;
const int LO_B = SPLIT ? (BK + PAD) * (BN + PAD) : 1;

layout(push_constant) uniform Push {
  uint64_t a;           //   0
  uint64_t b;           //   8
  uint64_t c;           //  16
  uint64_t bias;        //  24
  int64_t a_bs;         //  32 batch strides (elements)
  int64_t b_bs;         //  40
  int64_t c_bs;         //  48
  int64_t bias_bs;      //  56
  float alpha;          //  64
  uint alpha_pad;
  float beta;           //  72
  uint beta_pad;
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

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer RefQuad { uvec2 v; };

// Shared tiles. The real kernel keeps float16 values (what the fragment loads read); the
// emulation keeps the raw 16-bit patterns in 32-bit words (no shaderFloat16 needed).
#if COOPMAT_EMULATE
#define SH_T uint
#define TO_SH(bits) (bits)
#else
#define SH_T float16_t
#define TO_SH(bits) unpackFloat2x16(bits).x
#endif
shared SH_T sh_a[(BM + PAD) * (BK + PAD)];
shared SH_T sh_b[(BK + PAD) * (BN + PAD)];
shared SH_T sh_a_lo[LO_A];
shared SH_T sh_b_lo[LO_B];
shared float sh_scratch[WARPS_M * WARPS_N * CM * CN];

// ---------------------------------------------------------------- fragments
#if COOPMAT_EMULATE
// A fragment is where it lies in its shared tile; an accumulator is EPL values per lane, lane l
// holding elements e = l + j * SG (row e / CN, column e % CN) of the CM x CN block.
struct FragA { int off; int stride; bool lo; };
struct FragB { int off; int stride; bool lo; };
struct Acc { float v[EPL]; };
#if COOPMAT_BF16
#define TILE_FLOAT(bits) uintBitsToFloat((bits) << 16)
#else
#define TILE_FLOAT(bits) tvk_half_to_float(bits)
#endif
float frag_a(FragA f, int r, int k) {
  const int i = A_COLMAJOR ? f.off + k * f.stride + r : f.off + r * f.stride + k;
  return TILE_FLOAT(SPLIT && f.lo ? sh_a_lo[i] : sh_a[i]);
}
float frag_b(FragB f, int k, int c) {
  const int i = B_COLMAJOR ? f.off + c * f.stride + k : f.off + k * f.stride + c;
  return TILE_FLOAT(SPLIT && f.lo ? sh_b_lo[i] : sh_b[i]);
}
#define ACC_T Acc
#define FRAG_A_T FragA
#define FRAG_B_T FragB
#else
#define ACC_T coopmat<float, gl_ScopeSubgroup, CM, CN, gl_MatrixUseAccumulator>
#define FRAG_A_T coopmat<float16_t, gl_ScopeSubgroup, CM, CK, gl_MatrixUseA>
#define FRAG_B_T coopmat<float16_t, gl_ScopeSubgroup, CK, CN, gl_MatrixUseB>
#endif

int g_lane, g_warp;

void acc_zero(inout ACC_T acc) {
#if COOPMAT_EMULATE
  UNROLL for (int j = 0; j < EPL; ++j) acc.v[j] = 0.0;
#else
  acc = ACC_T(0.0);
#endif
}

// The CM x CK fragment of the A tile at rows r0.., k kk.. (of the lo tile with `lo`).
void load_frag_a(out FRAG_A_T f, int r0, int kk, bool lo) {
  const int off = A_COLMAJOR ? kk * LDA + r0 : r0 * LDA + kk;
#if COOPMAT_EMULATE
  f.off = off;
  f.stride = LDA;
  f.lo = lo;
#else
  // (The layout operand must be a constant: one call per layout.)
  if (SPLIT && lo) {
    if (A_COLMAJOR)
      coopMatLoad(f, sh_a_lo, uint(off), uint(LDA), gl_CooperativeMatrixLayoutColumnMajor);
    else
      coopMatLoad(f, sh_a_lo, uint(off), uint(LDA), gl_CooperativeMatrixLayoutRowMajor);
  } else if (A_COLMAJOR) {
    coopMatLoad(f, sh_a, uint(off), uint(LDA), gl_CooperativeMatrixLayoutColumnMajor);
  } else {
    coopMatLoad(f, sh_a, uint(off), uint(LDA), gl_CooperativeMatrixLayoutRowMajor);
  }
#endif
}

// The CK x CN fragment of the B tile at k kk.., columns c0.. (of the lo tile with `lo`).
void load_frag_b(out FRAG_B_T f, int kk, int c0, bool lo) {
  const int off = B_COLMAJOR ? c0 * LDB + kk : kk * LDB + c0;
#if COOPMAT_EMULATE
  f.off = off;
  f.stride = LDB;
  f.lo = lo;
#else
  if (SPLIT && lo) {
    if (B_COLMAJOR)
      coopMatLoad(f, sh_b_lo, uint(off), uint(LDB), gl_CooperativeMatrixLayoutColumnMajor);
    else
      coopMatLoad(f, sh_b_lo, uint(off), uint(LDB), gl_CooperativeMatrixLayoutRowMajor);
  } else if (B_COLMAJOR) {
    coopMatLoad(f, sh_b, uint(off), uint(LDB), gl_CooperativeMatrixLayoutColumnMajor);
  } else {
    coopMatLoad(f, sh_b, uint(off), uint(LDB), gl_CooperativeMatrixLayoutRowMajor);
  }
#endif
}

void mul_add(inout ACC_T acc, FRAG_A_T fa, FRAG_B_T fb) {
#if COOPMAT_EMULATE
  UNROLL for (int j = 0; j < EPL; ++j) {
    const int e = g_lane + j * SG;
    const int r = e / int(CN), c = e % int(CN);
    float s = acc.v[j];
    for (int k = 0; k < int(CK); ++k) s += frag_a(fa, r, k) * frag_b(fb, k, c);
    acc.v[j] = s;
  }
#else
  acc = coopMatMulAdd(fa, fb, acc);
#endif
}

// The fragment into this subgroup's CM x CN scratch (row-major, stride CN).
void store_scratch(ACC_T acc) {
  const uint base = uint(g_warp) * CM * CN;
#if COOPMAT_EMULATE
  UNROLL for (int j = 0; j < EPL; ++j) sh_scratch[base + uint(g_lane + j * SG)] = acc.v[j];
#else
  coopMatStore(acc, sh_scratch, base, CN, gl_CooperativeMatrixLayoutRowMajor);
#endif
}

// ---------------------------------------------------------------- tile loads
uint g_ra[A_ELEMS];  // the next tiles' raw 16-bit values (low half of each word)
uint g_rb[B_ELEMS];
uint g_ra_lo[SPLIT ? A_ELEMS : 1];  // F32_TERMS 3: the lo parts
uint g_rb_lo[SPLIT ? B_ELEMS : 1];

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer RefQuad32 { uvec4 v; };

const bool F32_IN = F32_TERMS != 0;  // float32 A and B, converted while loaded
uint load_bits(uint64_t base, int off) { return uint(RefU16(tvk_elem_addr(base, off, 1)).v); }
uvec2 load_quad(uint64_t base, int off) { return RefQuad(tvk_elem_addr(base, off, 1)).v; }
uint load_word(uint64_t base, int off) { return floatBitsToUint(RefF32(tvk_elem_addr(base, off, 2)).v); }
uvec4 load_quad32(uint64_t base, int off) { return RefQuad32(tvk_elem_addr(base, off, 2)).v; }

// float32 bits -> bfloat16 bits rounded to nearest even; NaN stays a (quiet) NaN.
uint bf16_rne(uint u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
// F32_TERMS 1: the rounded value. 3: hi = the top 16 bits (x - hi is then exact in float32 and
// hi never overflows), lo = bfloat16(x - hi); NaN -> (NaN, 0), +-inf -> (+-inf, 0).
uint f32_hi(uint u) {
  if (F32_TERMS == 1) return bf16_rne(u);
  return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : u >> 16;
}
uint f32_lo(uint u) {
  if ((u & 0x7f800000u) == 0x7f800000u) return 0u;
  return bf16_rne(floatBitsToUint(uintBitsToFloat(u) - uintBitsToFloat(u & 0xffff0000u)));
}

// Element i of the A tile in load order -> (row, k) in the tile. Vector modes give the first
// of 4 consecutive elements along their axis.
ivec2 a_coord(int i) {
  const int t = int(gl_LocalInvocationIndex);
  if (A_LOAD == 0) { int e = t + i * WG; return ivec2(e / BK, e % BK); }
  if (A_LOAD == 1) { int e = t + i * WG; return ivec2(e % BM, e / BM); }
  if (A_LOAD == 2) { int e = t + (i / 4) * WG; return ivec2(e / (BK / 4), (e % (BK / 4)) * 4); }
  int e = t + (i / 4) * WG;
  return ivec2((e % (BM / 4)) * 4, e / (BM / 4));
}

// (k, column) in the B tile, as a_coord.
ivec2 b_coord(int i) {
  const int t = int(gl_LocalInvocationIndex);
  if (B_LOAD == 0) { int e = t + i * WG; return ivec2(e / BN, e % BN); }
  if (B_LOAD == 1) { int e = t + i * WG; return ivec2(e % BK, e / BK); }
  if (B_LOAD == 2) { int e = t + (i / 4) * WG; return ivec2(e / (BN / 4), (e % (BN / 4)) * 4); }
  int e = t + (i / 4) * WG;
  return ivec2((e % (BK / 4)) * 4, e / (BK / 4));
}

// Element i of a tile from float32 word `u` (F32_TERMS 1 / 3).
void put_a(int i, uint u) {
  g_ra[i] = f32_hi(u);
  if (SPLIT) g_ra_lo[i] = f32_lo(u);
}
void put_b(int i, uint u) {
  g_rb[i] = f32_hi(u);
  if (SPLIT) g_rb_lo[i] = f32_lo(u);
}

void load_tiles(uint64_t a_base, uint64_t b_base, int row0, int col0, int k0) {
  const bool a_vec = A_LOAD >= 2, b_vec = B_LOAD >= 2;
  UNROLL for (int i = 0; i < A_ELEMS; i += (a_vec ? 4 : 1)) {
    const ivec2 rk = a_coord(i);
    const int m = row0 + rk.x, k = k0 + rk.y;
    if (F32_IN) {
      const bool inside = m < pc.M && k < pc.K;
      if (a_vec) {  // 16 bytes: four float32 values
        const uvec4 q = inside ? load_quad32(a_base, m * pc.a_rs + k * pc.a_cs) : uvec4(0u);
        put_a(i, q.x); put_a(i + 1, q.y); put_a(i + 2, q.z); put_a(i + 3, q.w);
      } else {
        put_a(i, inside ? load_word(a_base, m * pc.a_rs + k * pc.a_cs) : 0u);
      }
    } else if (a_vec) {
      // Four along k (A_LOAD 2) or m (3): K (M) % 4 == 0, so a vector is wholly in or out.
      const bool inside = m < pc.M && k < pc.K;
      const uvec2 q = inside ? load_quad(a_base, m * pc.a_rs + k * pc.a_cs) : uvec2(0u);
      g_ra[i] = q.x & 0xffffu; g_ra[i + 1] = q.x >> 16;
      g_ra[i + 2] = q.y & 0xffffu; g_ra[i + 3] = q.y >> 16;
    } else {
      g_ra[i] = m < pc.M && k < pc.K ? load_bits(a_base, m * pc.a_rs + k * pc.a_cs) : 0u;
    }
  }
  UNROLL for (int i = 0; i < B_ELEMS; i += (b_vec ? 4 : 1)) {
    const ivec2 kc = b_coord(i);
    const int k = k0 + kc.x, n = col0 + kc.y;
    if (F32_IN) {
      const bool inside = k < pc.K && n < pc.N;
      if (b_vec) {
        const uvec4 q = inside ? load_quad32(b_base, k * pc.b_rs + n * pc.b_cs) : uvec4(0u);
        put_b(i, q.x); put_b(i + 1, q.y); put_b(i + 2, q.z); put_b(i + 3, q.w);
      } else {
        put_b(i, inside ? load_word(b_base, k * pc.b_rs + n * pc.b_cs) : 0u);
      }
    } else if (b_vec) {
      const bool inside = k < pc.K && n < pc.N;
      const uvec2 q = inside ? load_quad(b_base, k * pc.b_rs + n * pc.b_cs) : uvec2(0u);
      g_rb[i] = q.x & 0xffffu; g_rb[i + 1] = q.x >> 16;
      g_rb[i + 2] = q.y & 0xffffu; g_rb[i + 3] = q.y >> 16;
    } else {
      g_rb[i] = k < pc.K && n < pc.N ? load_bits(b_base, k * pc.b_rs + n * pc.b_cs) : 0u;
    }
  }
}

void store_tiles() {
  UNROLL for (int i = 0; i < A_ELEMS; ++i) {
    ivec2 rk = a_coord(i);
    if (A_LOAD == 2) rk.y += i % 4;
    if (A_LOAD == 3) rk.x += i % 4;
    const int at = A_COLMAJOR ? rk.y * LDA + rk.x : rk.x * LDA + rk.y;
    sh_a[at] = TO_SH(g_ra[i]);
    if (SPLIT) sh_a_lo[at] = TO_SH(g_ra_lo[i]);
  }
  UNROLL for (int i = 0; i < B_ELEMS; ++i) {
    ivec2 kc = b_coord(i);
    if (B_LOAD == 2) kc.y += i % 4;
    if (B_LOAD == 3) kc.x += i % 4;
    const int at = B_COLMAJOR ? kc.y * LDB + kc.x : kc.x * LDB + kc.y;
    sh_b[at] = TO_SH(g_rb[i]);
    if (SPLIT) sh_b_lo[at] = TO_SH(g_rb_lo[i]);
  }
}

// ---------------------------------------------------------------- main
uint64_t batch_base(uint64_t base, int bt, int64_t stride, int lg) {
  return base + uint64_t((int64_t(bt) * stride) << lg);
}

int log2_size(int dt) {
  return dt == DT_FLOAT16 || dt == DT_BFLOAT16 ? 1 : dt == DT_FLOAT64 || dt == DT_INT64 ? 3 : 2;
}

void main() {
#if COOPMAT_EMULATE
  g_lane = int(gl_LocalInvocationIndex) % SG;
  g_warp = int(gl_LocalInvocationIndex) / SG;
#else
  g_lane = int(gl_SubgroupInvocationID);
  g_warp = int(gl_SubgroupID);
#endif
  const int wm = g_warp % WARPS_M, wn = g_warp / WARPS_M;
  const int tiles_m = (pc.M + BM - 1) / BM, tiles_n = (pc.N + BN - 1) / BN;
  const int k_tiles = (pc.K + BK - 1) / BK;
  const int lc = log2_size(DT_C);
  for (int bt = int(gl_WorkGroupID.z); bt < pc.batch; bt += int(gl_NumWorkGroups.z)) {
    const uint64_t a_base = batch_base(pc.a, bt, pc.a_bs, F32_IN ? 2 : 1);
    const uint64_t b_base = batch_base(pc.b, bt, pc.b_bs, F32_IN ? 2 : 1);
    const uint64_t c_base = batch_base(pc.c, bt, pc.c_bs, lc);
    uint64_t bias_base = 0;
    if (DT_BIAS >= 0) bias_base = batch_base(pc.bias, bt, pc.bias_bs, log2_size(DT_BIAS));
    for (int ty = int(gl_WorkGroupID.y); ty < tiles_m; ty += int(gl_NumWorkGroups.y)) {
      for (int tx = int(gl_WorkGroupID.x); tx < tiles_n; tx += int(gl_NumWorkGroups.x)) {
        const int row0 = ty * BM, col0 = tx * BN;
        ACC_T acc[FM * FN];
        UNROLL for (int f = 0; f < FM * FN; ++f) acc_zero(acc[f]);

        load_tiles(a_base, b_base, row0, col0, 0);
        barrier();  // the previous tile's last reads of shared memory (grid-stride loops)
        store_tiles();
        barrier();
        for (int kt = 0; kt < k_tiles; ++kt) {
          if (kt + 1 < k_tiles) load_tiles(a_base, b_base, row0, col0, (kt + 1) * BK);
          UNROLL for (int kk = 0; kk < BK; kk += int(CK)) {
            // (One declarator per declaration: glslang 13.1 drops the matrix use of the second
            // declarator of a cooperative-matrix declaration.)
            FRAG_A_T fa[FM];
            FRAG_A_T fa_lo[SPLIT ? FM : 1];
            UNROLL for (int i = 0; i < FM; ++i) {
              load_frag_a(fa[i], wm * WTM + i * int(CM), kk, false);
              if (SPLIT) load_frag_a(fa_lo[i], wm * WTM + i * int(CM), kk, true);
            }
            UNROLL for (int j = 0; j < FN; ++j) {
              FRAG_B_T fb;
              FRAG_B_T fb_lo;
              load_frag_b(fb, kk, wn * WTN + j * int(CN), false);
              if (SPLIT) load_frag_b(fb_lo, kk, wn * WTN + j * int(CN), true);
              UNROLL for (int i = 0; i < FM; ++i) {
                if (SPLIT) {  // the small terms first
                  mul_add(acc[i * FN + j], fa_lo[i], fb);
                  mul_add(acc[i * FN + j], fa[i], fb_lo);
                }
                mul_add(acc[i * FN + j], fa[i], fb);
              }
            }
          }
          barrier();
          if (kt + 1 < k_tiles) {
            store_tiles();
            barrier();
          }
        }

        // Epilogue, one fragment at a time through this subgroup's scratch.
        UNROLL for (int f = 0; f < FM * FN; ++f) {
          store_scratch(acc[f]);
          barrier();
          const int fr = row0 + wm * WTM + (f / FN) * int(CM);
          const int fc = col0 + wn * WTN + (f % FN) * int(CN);
          UNROLL for (int j = 0; j < EPL; ++j) {
            const int e = g_lane + j * SG;
            const int m = fr + e / int(CN), n = fc + e % int(CN);
            if (m >= pc.M || n >= pc.N) continue;
            float v = pc.alpha * sh_scratch[uint(g_warp) * CM * CN + uint(e)];
            if (DT_BIAS >= 0)
              v += pc.beta * load_f32(bias_base, DT_BIAS, m * pc.bias_rs + n * pc.bias_cs);
            store_f32(c_base, DT_C, m * pc.c_rs + n * pc.c_cs, v);
          }
          barrier();
        }
      }
    }
  }
}
