#version 460
// The implicit-GEMM convolution on cooperative matrices (VK_KHR_cooperative_matrix): float16 or
// bfloat16 operands, float32 accumulation, the three modes of shaders/conv.comp's OP 3 kernel
// (forward, input gradient, weight gradient) with its ABI (ConvPush, ConvGeometry, the same
// index math: conv_implicit.glsl), so src/kernels/conv.cpp fills one push block for both.
//
// Built by tools/build_shaders.py (shaders/conv_coopmat.variants.toml):
//   COOPMAT_EMULATE 0: the real kernel (glslangValidator, validated with spirv-val; runs only
//                   where the device lists the 16 x 16 x 16 subgroup shape, after its
//                   self-check). 1: the same kernel with scalar code in place of the matrix
//                   operations (glslc, any device): the tests' stand-in on lavapipe.
//   COOPMAT_BF16    1: bfloat16 operands (the real kernel: the float16 code with its A / B
//                   fragments retyped in SPIR-V, spirv_patch bfloat16_ab; operands move only
//                   as raw 16-bit patterns).
//
// Structure (gemm_coopmat.comp's warp tiles over conv.comp's gathered operands): a workgroup
// of WARPS_M x WARPS_N subgroups computes one BM x BN tile of C = A @ B for one group;
// subgroup (wm, wn) owns a WTM x WTN sub-tile as FM x FN 16 x 16 float32 accumulators. The
// reduction advances by BK: every invocation gathers the next step's A (BM x BK) and B (BK x BN)
// elements in runs of 4 (4 consecutive r of one row of A, 4 consecutive columns of B: the
// output or input positions, coalesced along the width) into registers as raw 16-bit patterns
// while the current tiles are multiplied, then stores them to shared memory (row-major, rows
// padded by 8 values: 16-byte aligned fragment loads). Elements outside the problem and the
// convolution's padding are zeros. The epilogue goes through a 16 x 16 float32 scratch per
// subgroup: each lane adds the bias, converts and stores its elements with store_c (any
// output strides).
//
// Specialization constants (src/kernels/conv.cpp):
//   0  local_size_x = WARPS_M * WARPS_N * SG
//   1..4  the operand dtypes (conv_params.glsl)
//   5  BM, 6 BN, 7 BK   the workgroup tile: BM % (16 * WARPS_M) == 0, BN % (16 * WARPS_N) == 0,
//                       BK % 16 == 0
//   8  WARPS_M, 9 WARPS_N
//   10 CONV_MODE        0 forward, 1 input gradient, 2 weight gradient
//   11 SG               the subgroup size (the device's: SPIR-V 1.5 modules run with it);
//                       256 % SG == 0
// Grid: x over column tiles, y over row tiles, z over the (split, group) pairs; each loops.
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

// The real kernel unrolls its fragment loops; the emulation does not (fully unrolled scalar
// fragment math takes lavapipe minutes to compile).
#if COOPMAT_EMULATE
#define UNROLL [[dont_unroll]]
#else
#define UNROLL [[unroll]]
#endif

layout(local_size_x_id = 0) in;
#include "conv_params.glsl"

layout(constant_id = 5) const int BM = 64;
layout(constant_id = 6) const int BN = 64;
layout(constant_id = 7) const int BK = 32;
layout(constant_id = 8) const int WARPS_M = 2;
layout(constant_id = 9) const int WARPS_N = 2;
layout(constant_id = 10) const int CONV_MODE = 0;
layout(constant_id = 11) const int SG = 32;

const int WG = WARPS_M * WARPS_N * SG;
const int WTM = BM / WARPS_M;         // rows of one subgroup's sub-tile
const int WTN = BN / WARPS_N;
const int FM = WTM / 16;              // accumulators per subgroup along M / N
const int FN = WTN / 16;
const int EPL = 256 / SG;             // elements of a 16 x 16 block per lane
const int LDA = BK + 8;               // row strides of the shared tiles (16-bit values)
const int LDB = BN + 8;
const int A_AT = 0;                   // offsets in 16-bit values
const int B_AT = BM * LDA;
const int H_TOTAL = B_AT + BK * LDB;
const int A_QUADS = (BM * BK / 4 + WG - 1) / WG;  // runs of 4 one invocation gathers per step
const int B_QUADS = (BK * BN / 4 + WG - 1) / WG;

#if COOPMAT_EMULATE
shared uint sh_h[H_TOTAL / 2];        // two 16-bit patterns per word, the lower at the even index
#else
shared float16_t sh_h[H_TOTAL];
#endif
shared float sh_f[WARPS_M * WARPS_N * 256];

#include "coopmat_fragments.glsl"
#include "conv_implicit.glsl"

// The next reduction step's runs of 4, as raw 16-bit patterns (two per word).
uvec2 a_next[A_QUADS];
uvec2 b_next[B_QUADS];

uint bits_at(uint64_t base, int at) {
  return at < 0 ? 0u : uint(RefU16(tvk_elem_addr(base, at, 1)).v);
}

// Gathers the A and B runs of reduction elements r0 .. r0 + BK - 1 for rows m0.. and columns
// j0.. of group grp into a_next / b_next (zeros outside the problem).
void fetch(int lid, int grp, int m0, int j0, int r0) {
  [[unroll]] for (int e = 0; e < A_QUADS; ++e) {
    const int q = lid + e * WG;
    const int m = m0 + q / (BK / 4), r = r0 + (q % (BK / 4)) * 4;
    int at[4] = {-1, -1, -1, -1};
    const bool live = q < BM * BK / 4 && m < g_M && r < g_R;
    if (live) a_offsets4(grp, m, r, at);
    uint w[4];
    [[unroll]] for (int u = 0; u < 4; ++u) w[u] = live && r + u < g_R ? bits_at(pc.aux, at[u]) : 0u;
    a_next[e] = uvec2(w[0] | (w[1] << 16), w[2] | (w[3] << 16));
  }
  [[unroll]] for (int e = 0; e < B_QUADS; ++e) {
    const int q = lid + e * WG;
    const int r = r0 + q / (BN / 4), j = j0 + (q % (BN / 4)) * 4;
    int at[4] = {-1, -1, -1, -1};
    if (q < BK * BN / 4 && r < g_R && j < g_N) b_offsets4(grp, r, j, at);
    uint w[4];
    [[unroll]] for (int u = 0; u < 4; ++u) w[u] = bits_at(pc.src, at[u]);
    b_next[e] = uvec2(w[0] | (w[1] << 16), w[2] | (w[3] << 16));
  }
}

// Stores the gathered runs into the shared tiles (A[m][k] at A_AT + m * LDA + k, B[k][n] at
// B_AT + k * LDB + n).
void store_tiles(int lid) {
  [[unroll]] for (int e = 0; e < A_QUADS; ++e) {
    const int q = lid + e * WG;
    if (q < BM * BK / 4) put4(A_AT + (q / (BK / 4)) * LDA + (q % (BK / 4)) * 4, a_next[e].x, a_next[e].y);
  }
  [[unroll]] for (int e = 0; e < B_QUADS; ++e) {
    const int q = lid + e * WG;
    if (q < BK * BN / 4) put4(B_AT + (q / (BN / 4)) * LDB + (q % (BN / 4)) * 4, b_next[e].x, b_next[e].y);
  }
}

void main() {
  read_dtypes();
  setup_implicit();
  const int lid = int(gl_LocalInvocationIndex);
#if COOPMAT_EMULATE
  g_lane = lid % SG;
  g_warp = lid / SG;
#else
  g_lane = int(gl_SubgroupInvocationID);
  g_warp = int(gl_SubgroupID);
#endif
  const int wm = g_warp / WARPS_N, wn = g_warp % WARPS_N;
  const int s_at = g_warp * 256;  // this subgroup's epilogue scratch in sh_f
  const int col_tiles = (g_N + BN - 1) / BN, row_tiles = (g_M + BM - 1) / BM;

  // Uniform loop bounds per workgroup: every invocation reaches the same barriers.
  for (int gz = int(gl_WorkGroupID.z); gz < g_groups * g_splits; gz += int(gl_NumWorkGroups.z)) {
    const int grp = select_group(gz);
    for (int rt = int(gl_WorkGroupID.y); rt < row_tiles; rt += int(gl_NumWorkGroups.y)) {
      const int m0 = rt * BM;
      for (int ct = int(gl_WorkGroupID.x); ct < col_tiles; ct += int(gl_NumWorkGroups.x)) {
        const int j0 = ct * BN;
        ACC_T acc[FM * FN];
        UNROLL for (int f = 0; f < FM * FN; ++f) acc_zero(acc[f]);
        fetch(lid, grp, m0, j0, 0);
        for (int r0 = 0; r0 < g_R; r0 += BK) {
          barrier();  // the previous step's products are done with the shared tiles
          store_tiles(lid);
          barrier();
          if (r0 + BK < g_R) fetch(lid, grp, m0, j0, r0 + BK);
          UNROLL for (int kk = 0; kk < BK / 16; ++kk) {
            FRAG_B_T fb[FN];
            UNROLL for (int fn = 0; fn < FN; ++fn)
              load_b_rows(fb[fn], B_AT + kk * 16 * LDB + wn * WTN + fn * 16, LDB);
            UNROLL for (int fm = 0; fm < FM; ++fm) {
              FRAG_A_T fa;
              load_a(fa, A_AT + (wm * WTM + fm * 16) * LDA + kk * 16, LDA);
              UNROLL for (int fn = 0; fn < FN; ++fn) mul_add(acc[fm * FN + fn], fa, fb[fn]);
            }
          }
        }
        UNROLL for (int f = 0; f < FM * FN; ++f) {
          store_acc(acc[f], s_at, 16);
          subgroup_sync();
          const int mb = m0 + wm * WTM + (f / FN) * 16, jb = j0 + wn * WTN + (f % FN) * 16;
          [[unroll]] for (int t = 0; t < EPL; ++t) {
            const int e = g_lane + t * SG;
            const int m = mb + (e >> 4), j = jb + (e & 15);
            if (m < g_M && j < g_N) store_c(grp, m, j, sh_f[s_at + e]);
          }
          subgroup_sync();  // the scratch is rewritten by the next accumulator
        }
      }
    }
  }
}
