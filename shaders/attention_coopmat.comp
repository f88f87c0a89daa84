#version 460
// Fused scaled-dot-product attention forward on cooperative matrices (VK_KHR_cooperative_matrix),
// float16 or bfloat16 q, k, v and out: the same contract as shaders/attention.comp's tiled
// kernel (Params in attention_params.glsl; causal, boolean / additive masks, GQA, dropout,
// out and the float32 logsumexp), with S = q k^T and P v on 16 x 16 x 16 matrix products,
// float32 accumulation, and the softmax in float32.
//
// Built by tools/build_shaders.py (shaders/attention_coopmat.variants.toml):
//   COOPMAT_EMULATE 0: the real kernel (glslangValidator 13.1+, validated with spirv-val; runs
//                   only where the device lists the 16 x 16 x 16 float16 (bfloat16) x -> float32
//                   subgroup shape). 1: every cooperative-matrix operation replaced by scalar
//                   code over the same shared-memory tiles (glslc, any device): the tests run it
//                   on lavapipe, so the tiling, the fragment offsets and strides, the softmax
//                   and the stores are checked against the CPU; only the matrix ops are not.
//   COOPMAT_BF16    1: bfloat16 q, k, v, out. The kernel moves q, k, v only as raw 16-bit
//                   patterns and writes P's patterns itself, so the real bfloat16 kernel is the
//                   float16 one with its A / B fragment types retyped in SPIR-V (patch
//                   bfloat16_ab, as gemm_coopmat.comp).
//   DMAX            64 or 128: the head dims' bound (fragments along the head dim).
//
// Work split (FlashAttention-2): one workgroup per (tile of BR = 16 * WARPS query rows,
// batch * head); subgroup w owns query rows 16w .. 16w + 15 of the tile. The q tile is loaded
// once (the real kernel keeps its DMAX / 16 A fragments in registers); keys and values stream
// through shared memory in tiles of BC rows. Per key tile, each subgroup:
//   1. S = q k^T for its 16 rows: BC / 16 accumulators over DMAX / 16 products each, stored to
//      its float32 scratch (16 x BC).
//   2. Online softmax in float32: LPR = SG / 16 lanes per row, each owning groups of 4
//      consecutive keys (so a lane draws each dropout Philox block of its row exactly once):
//      scale, mask and exclusions applied, the row max reduced through shared memory, the
//      running max m, the rescale corr = exp(m_old - m_new) (kept in shared memory per row) and
//      P = exp(s - m_new) written as 16-bit values (float16, or bfloat16 patterns) to the
//      subgroup's P tile; each lane keeps a partial row sum l over its keys (every
//      probability, dropped or not, as the tiled kernel), summed over the row's lanes at the
//      end. Dropped keys get P = 0.
//   3. O = corr * O + P v: per 16-column block of the head dim, a fresh accumulator over
//      BC / 16 products, stored to the scratch, and added by the lanes to their float32 output
//      elements (lane l owns elements l + t * SG of each 16 x 16 block: row e / 16, column
//      e % 16), which stay in registers across key tiles. (KHR cooperative matrices cannot be
//      scaled per row, hence the scratch round trip, as in ggml-vulkan's coopmat1 kernel.)
// The subgroup steps synchronize their subgroup only (the emulation, whose subgroups are
// groups of SG invocations rather than hardware subgroups, uses workgroup barriers); the key
// and value tiles are loaded between two workgroup barriers. Finally out = O * drop_scale / l
// and lse = m + log l (0 and -inf for a row without an allowed key). Rows past L and keys past
// S are loaded as zeros and excluded; head-dim columns past E / Ev are zeros.
//
// Shared memory (16-bit values; the emulation packs two per 32-bit word): the k and v tiles
// (BC x (DMAX + 8) each), the q tile (BR x (DMAX + 8)), the P tiles (WARPS x 16 x (BC + 8),
// inside the q tile in the real kernel: q is in registers by then), and float32 scratch
// (WARPS x 16 x (BC + 4)), the row maxima (WARPS x SG) and the rescale factors (BR). Rows are
// padded by 8 values (16 bytes: fragment loads stay 16-byte aligned, rows spread over banks).
// 46 KiB at DMAX 64 / BC 64 and DMAX 128 / BC 32 with 4 subgroups: inside NVIDIA's 48 KiB.
//
// Specialization constants (src/kernels/attention_coopmat.cpp):
//   0  local_size_x = WARPS * SG
//   1  SG      the subgroup size (the device's: SPIR-V 1.5 modules run with it), 16 .. 256
//   2  WARPS   subgroups per workgroup
//   3  BC      keys per tile, a multiple of 16 and of 4 * LPR, at most DMAX
//   4  VEC     bit 0: q and k rows 4-element aligned (8-byte loads), bit 1: v rows
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#ifndef COOPMAT_EMULATE
#define COOPMAT_EMULATE 0
#endif
#ifndef COOPMAT_BF16
#define COOPMAT_BF16 0
#endif
#ifndef DMAX
#define DMAX 64
#endif
#if !COOPMAT_EMULATE
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

#define KIND 0
#include "common.glsl"
#include "math.glsl"
#include "attention_mask.glsl"
#include "attention_params.glsl"

#if COOPMAT_EMULATE
#define UNROLL [[dont_unroll]]
#else
#define UNROLL [[unroll]]
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SG = 32;
layout(constant_id = 2) const int WARPS = 4;
layout(constant_id = 3) const int BC = 32;
layout(constant_id = 4) const int VEC = 0;

const int WG = WARPS * SG;
const int BR = 16 * WARPS;
const int DF = DMAX / 16;            // fragments along the head dim
const int KF = BC / 16;              // fragments along a key tile
const int LPR = SG / 16;             // lanes per query row in the softmax
const int GROUPS = BC / 4 / LPR;     // groups of 4 keys per lane and tile
const int EPL = 256 / SG;            // elements of a 16 x 16 block per lane
const int LDH = DMAX + 8;            // row stride of the q, k and v tiles (16-bit values)
const int LDP = BC + 8;              // of the P tiles
const int LDS = BC + 4;              // of the float32 scratch
const int K_AT = 0;                  // offsets in 16-bit values
const int V_AT = BC * LDH;
const int Q_AT = 2 * BC * LDH;
#if COOPMAT_EMULATE
const int P_AT = Q_AT + BR * LDH;    // q stays in shared memory: P after it
#else
const int P_AT = Q_AT;               // q is in registers once P is first written
#endif
const int H_TOTAL = P_AT == Q_AT ? Q_AT + BR * LDH : P_AT + WARPS * 16 * LDP;
const int S_AT = 0;                  // offsets in floats
const int MAX_AT = WARPS * 16 * LDS;
const int CORR_AT = MAX_AT + WARPS * SG;
const int F_TOTAL = CORR_AT + BR;

#if COOPMAT_EMULATE
shared uint sh_h[H_TOTAL / 2];       // two 16-bit patterns per word, the lower at the even index
#else
shared float16_t sh_h[H_TOTAL];
#endif
shared float sh_f[F_TOTAL];

#include "coopmat_fragments.glsl"

// ---------------------------------------------------------------- main
void main() {
  Params P = Params(pc.params);
  const int lid = int(gl_LocalInvocationIndex);
#if COOPMAT_EMULATE
  g_lane = lid % SG;
  g_warp = lid / SG;
#else
  g_lane = int(gl_SubgroupInvocationID);
  g_warp = int(gl_SubgroupID);
#endif
  const int bh = int(gl_WorkGroupID.y);
  const int b = bh / P.heads, h = bh % P.heads, hk = h / P.group;
  const int i0 = int(gl_WorkGroupID.x) * BR;
  const int E = P.E, Ev = P.Ev, L = P.L, S = P.S;
  const bool vec_qk = (VEC & 1) != 0, vec_v = (VEC & 2) != 0;
  const bool dropout = (P.flags & 4) != 0;

  // The q tile (rows i0 .., zeros past L and E).
  const int q_base = b * P.q_sb + h * P.q_sh;
  LOAD_TILE(Q_AT, BR, P.q, i0 + r < L ? q_base + (i0 + r) * P.q_sl : -1, E, vec_qk)
  barrier();
  const int row0 = 16 * g_warp;  // this subgroup's first row in the tile
#if COOPMAT_EMULATE
  FRAG_A_T qf[DF];
  [[unroll]] for (int f = 0; f < DF; ++f) qf[f] = Frag(Q_AT + row0 * LDH + 16 * f, LDH, 1);
#else
  FRAG_A_T qf[DF];
  [[unroll]] for (int f = 0; f < DF; ++f)
    if (16 * f < E) load_a(qf[f], Q_AT + row0 * LDH + 16 * f, LDH);
#endif

  // The softmax lanes: row `srow` of the subgroup, key groups part + LPR * t of a tile.
  const int srow = g_lane / LPR, part = g_lane % LPR;
  const int si = i0 + row0 + srow;  // its query row
  const int drop_row = bh * L + si;
  float m = NEG_INF, l_part = 0.0;
  float o[DF][EPL];
  [[unroll]] for (int f = 0; f < DF; ++f)
    [[unroll]] for (int t = 0; t < EPL; ++t) o[f][t] = 0.0;

  const int k_base = b * P.k_sb + hk * P.k_sh;
  const int v_base = b * P.v_sb + hk * P.v_sh;
  const int kv_end = (P.flags & 1) != 0 ? min(S, i0 + BR) : S;  // causal: later keys excluded
  const int s_at = S_AT + g_warp * 16 * LDS;  // this subgroup's scratch
  const int p_at = P_AT + g_warp * 16 * LDP;  // and P tile

  for (int j0 = 0; j0 < kv_end; j0 += BC) {
    barrier();  // every subgroup is done with the previous tiles (and, once, with q)
    LOAD_TILE(K_AT, BC, P.k, j0 + r < S ? k_base + (j0 + r) * P.k_sl : -1, E, vec_qk)
    LOAD_TILE(V_AT, BC, P.v, j0 + r < S ? v_base + (j0 + r) * P.v_sl : -1, Ev, vec_v)
    barrier();

    // 1. S = q k^T (16 x BC) into the scratch.
    UNROLL for (int kf = 0; kf < KF; ++kf) {
      ACC_T s;
      acc_zero(s);
      UNROLL for (int f = 0; f < DF; ++f) {
        if (16 * f >= E) break;  // (uniform) zero columns
        FRAG_B_T kt;
        load_b_cols(kt, K_AT + (16 * kf) * LDH + 16 * f, LDH);
        mul_add(s, qf[f], kt);
      }
      store_acc(s, s_at + 16 * kf, LDS);
    }
    subgroup_sync();

    // 2. The online softmax of this lane's keys.
    float x[GROUPS * 4];
    float mx = NEG_INF;
    [[unroll]] for (int t = 0; t < GROUPS; ++t) {
      [[unroll]] for (int u = 0; u < 4; ++u) {
        const int jj = 4 * (part + LPR * t) + u, j = j0 + jj;
        float v = sh_f[s_at + srow * LDS + jj] * P.scale;
        if (si >= L || j >= S || excluded(P, b, h, si, j, v)) v = NEG_INF;
        x[4 * t + u] = v;
        mx = max(mx, v);
      }
    }
    sh_f[MAX_AT + g_warp * SG + g_lane] = mx;
    subgroup_sync();
    [[unroll]] for (int q = 0; q < LPR; ++q)
      mx = max(mx, sh_f[MAX_AT + g_warp * SG + srow * LPR + q]);
    const float m_new = max(m, mx);
    // While no key has been allowed, (m, l, O) stay (-inf, 0, 0): corr 1, P 0.
    const float corr = m_new == NEG_INF ? 1.0 : tvk_exp(m - m_new);
    l_part *= corr;
    [[unroll]] for (int t = 0; t < GROUPS; ++t) {
      const int g = part + LPR * t;
      uvec4 bits = uvec4(0u);
      if (dropout) bits = attention_dropout_block(P.drop_seed, P.drop_counter, drop_row, j0 + 4 * g);
      uint w[4];
      [[unroll]] for (int u = 0; u < 4; ++u) {
        float p = m_new == NEG_INF ? 0.0 : tvk_exp(x[4 * t + u] - m_new);
        l_part += p;
        if (dropout && !attention_dropout_keep(bits, P.drop_threshold, j0 + 4 * g + u)) p = 0.0;
        w[u] = pattern_of(p);
      }
      put4(p_at + srow * LDP + 4 * g, w[0] | (w[1] << 16), w[2] | (w[3] << 16));
    }
    if (part == 0) sh_f[CORR_AT + row0 + srow] = corr;
    m = m_new;
    subgroup_sync();

    // 3. O = corr * O + P v, one 16-column block of the head dim at a time.
    UNROLL for (int f = 0; f < DF; ++f) {
      if (16 * f >= Ev) break;  // (uniform)
      ACC_T pv;
      acc_zero(pv);
      UNROLL for (int kf = 0; kf < KF; ++kf) {
        FRAG_A_T pa;
        FRAG_B_T vb;
        load_a(pa, p_at + 16 * kf, LDP);
        load_b_rows(vb, V_AT + (16 * kf) * LDH + 16 * f, LDH);
        mul_add(pv, pa, vb);
      }
      store_acc(pv, s_at, 16);
      subgroup_sync();
      [[unroll]] for (int t = 0; t < EPL; ++t) {
        const int e = g_lane + t * SG;
        o[f][t] = o[f][t] * sh_f[CORR_AT + row0 + (e >> 4)] + sh_f[s_at + e];
      }
      subgroup_sync();
    }
  }

  // The row sums: each row's LPR partials, then per row 1 / l (into the rescale slots).
  sh_f[MAX_AT + g_warp * SG + g_lane] = l_part;
  subgroup_sync();
  float l = 0.0;
  [[unroll]] for (int q = 0; q < LPR; ++q) l += sh_f[MAX_AT + g_warp * SG + srow * LPR + q];
  if (part == 0) {
    sh_f[CORR_AT + row0 + srow] = l > 0.0 ? P.drop_scale / l : 0.0;
    if (si < L) store_f32(P.lse, DT_FLOAT32, bh * L + si, l > 0.0 ? m + tvk_log(l) : NEG_INF);
  }
  subgroup_sync();
  const int o_base = b * P.o_sb + h * P.o_sh;
  [[unroll]] for (int f = 0; f < DF; ++f) {
    [[unroll]] for (int t = 0; t < EPL; ++t) {
      const int e = g_lane + t * SG;
      const int r = row0 + (e >> 4), d = 16 * f + (e & 15);
      if (i0 + r < L && d < Ev)
        store_f32(P.o, P.dtype, o_base + (i0 + r) * P.o_sl + d, o[f][t] * sh_f[CORR_AT + r]);
    }
  }
}
