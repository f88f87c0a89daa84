#version 460
// Fused scaled-dot-product attention backward on cooperative matrices (VK_KHR_cooperative_matrix),
// float16 / bfloat16: the contract of shaders/attention_backward.comp (BwdParams in
// attention_backward_params.glsl; two passes, probabilities recomputed from the logsumexp,
// no float atomics, dropout regenerated, causal / boolean / additive masks, GQA, a float
// mask's d(score) in the DQ pass) with every product on 16 x 16 x 16 matrices, float32
// accumulation:
//   DQ pass  (workgroup: 16 * WARPS query rows, subgroup w owning 16; keys and values stream
//            in tiles of BS): D_i = dO_i . O_i (float32, written for the DKV pass), then per
//            key tile S = q k^T and dP = dO v^T into the subgroup's float32 scratch, in turn;
//            ds = p (z dP - D) with p = exp(scale S + bias - lse), as 16-bit values in the
//            subgroup's dS tile; dq += dS k in accumulators that stay in registers.
//   DKV pass (workgroup: 16 * WARPS key rows; the queries of every query head of the key head
//            stream in tiles of BS): S^T = k q^T and dP^T = v dO^T, then p z and ds as 16-bit
//            tiles (stored transposed, [query][key], so that a lane writes 4 consecutive keys),
//            dv += (p z) dO and dk += ds q in register accumulators. Each key's gradients are
//            summed by its own subgroup: GQA needs no reduction pass.
// dS, p z (and, in the forward, P) are rounded to the inputs' 16-bit type before their
// products, as CUDA's flash-attention kernels do; everything else is float32. The element-wise
// step gives each lane groups of 4 consecutive keys of one query row (4 * BS / SG groups per
// lane), so each dropout Philox block of (query row, key group) is drawn exactly once.
//
// Built by tools/build_shaders.py (shaders/attention_backward_coopmat.variants.toml) as the
// forward (attention_coopmat.comp): COOPMAT_EMULATE, COOPMAT_BF16, DMAX (64 / 128), DKV (0: the
// DQ pass, 1: the DKV pass). Launcher: src/kernels/attention_coopmat.cpp.
//
// Shared memory (16-bit values; 8 values of padding per row):
//   DQ   k and v tiles (BS x (DMAX + 8) each); one tile of 16 * WARPS rows that holds q, then
//        dO (both are in registers after their fragment loads), then the dS tiles (WARPS x 16
//        x (BS + 8)); the emulation keeps q, dO and dS side by side. Float32: the scratch
//        (WARPS x 16 x (BS + 4)), D and lse per row, D's partial sums (WARPS x SG).
//   DKV  k and v tiles (16 * WARPS rows), q and dO tiles (BS rows), the p z and dS tiles
//        (WARPS x BS x 24, transposed); float32: the scratch, lse and D of the BS query rows.
//
// Specialization constants: 0 local_size_x = WARPS * SG; 1 SG (16 .. 256, a power of two);
// 2 WARPS; 3 BS (a multiple of 16 with 4 * BS a multiple of SG, at most DMAX); 4 VEC (bit 0:
// q and k rows 8-byte aligned, bit 1: v, bit 2: dO).
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
#ifndef DKV
#define DKV 0
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
layout(constant_id = 2) const int WARPS = 2;
layout(constant_id = 3) const int BS = 16;
layout(constant_id = 4) const int VEC = 0;

const int WG = WARPS * SG;
const int ROWS = 16 * WARPS;        // rows a workgroup owns
const int DF = DMAX / 16;
const int SF = BS / 16;
const int EPL = 256 / SG;
const int ITEMS = 4 * BS / SG;      // groups of 4 scores per lane in the element-wise step
const int LPR = SG / 16;
const int LDH = DMAX + 8;
const int LDB = BS + 8;             // DQ: the dS tiles, [query][key]
const int LDT = 24;                 // DKV: the p z and dS tiles, [query][key]
const int LDS = BS + 4;

#if DKV
const int K_AT = 0;
const int V_AT = ROWS * LDH;
const int Q_AT = 2 * ROWS * LDH;
const int DO_AT = Q_AT + BS * LDH;
const int PZ_AT = DO_AT + BS * LDH;
const int DS_AT = PZ_AT + WARPS * BS * LDT;
const int H_TOTAL = DS_AT + WARPS * BS * LDT;
const int LSH_AT = WARPS * 16 * LDS;  // floats: lse, then D, of the BS query rows
const int DSH_AT = LSH_AT + BS;
const int F_TOTAL = DSH_AT + BS;
#else
const int K_AT = 0;
const int V_AT = BS * LDH;
const int Q_AT = 2 * BS * LDH;
#if COOPMAT_EMULATE
const int DO_AT = Q_AT + ROWS * LDH;
const int DS_AT = DO_AT + ROWS * LDH;
const int H_TOTAL = DS_AT + WARPS * 16 * LDB;
#else
const int DO_AT = Q_AT;  // q is in registers when dO is loaded, dO when dS is written
const int DS_AT = Q_AT;
const int H_TOTAL = Q_AT + ROWS * LDH;
#endif
const int LSH_AT = WARPS * 16 * LDS;  // floats: lse and D of the ROWS query rows
const int DSH_AT = LSH_AT + ROWS;
const int RED_AT = DSH_AT + ROWS;
const int F_TOTAL = RED_AT + WARPS * SG;
#endif

#if COOPMAT_EMULATE
shared uint sh_h[H_TOTAL / 2];
#else
shared float16_t sh_h[H_TOTAL];
#endif
shared float sh_f[F_TOTAL];

#include "coopmat_fragments.glsl"

// 16-bit patterns of 4 values, two per word.
uvec2 patterns4(float a, float b, float c, float d) {
  return uvec2(pattern_of(a) | (pattern_of(b) << 16), pattern_of(c) | (pattern_of(d) << 16));
}

// p of score x = scale * s (+ bias) of query i, key j, 0 where excluded or lse = -inf.
float recomputed_p(BwdParams P, bool live, int b, int h, int i, int j, float s, float lse) {
  float x = P.scale * s;
  if (!live || lse == NEG_INF || excluded(P, b, h, i, j, x) || x == NEG_INF) return 0.0;
  return tvk_exp(x - lse);
}

// Stores accumulator `acc` (rows row0 .. row0 + 15 of a [rows x n] block, head-dim columns
// 16 f ..) scaled by `factor` through the scratch at s_at: element (r, d) to
// base + (first + r) * row_stride + d for first + r < rows, d < n.
void store_rows(ACC_T acc, int s_at, int f, int first, int rows, int n, uint64_t addr, int dt,
                int base, int row_stride, float factor) {
  store_acc(acc, s_at, 16);
  subgroup_sync();
  [[unroll]] for (int t = 0; t < EPL; ++t) {
    const int e = g_lane + t * SG;
    const int r = first + (e >> 4), d = 16 * f + (e & 15);
    if (r < rows && d < n) store_f32(addr, dt, base + r * row_stride + d, sh_f[s_at + e] * factor);
  }
  subgroup_sync();
}

#if !DKV
// ---------------------------------------------------------------- DQ pass
void main() {
  BwdParams P = BwdParams(pc.params);
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
  const int i_tile = int(gl_WorkGroupID.x) * ROWS;
  const int E = P.E, Ev = P.Ev, L = P.L, S = P.S, dt = P.dtype;
  const bool vec_qk = (VEC & 1) != 0, vec_v = (VEC & 2) != 0, vec_do = (VEC & 4) != 0;
  const bool dropout = (P.flags & 4) != 0;
  const int row0 = 16 * g_warp;
  const int q_base = b * P.q_sb + h * P.q_sh;
  const int do_base = b * P.do_sb + h * P.do_sh;
  const int o_base = b * P.o_sb + h * P.o_sh;

  // D_i = dO_i . O_i and lse_i of the subgroup's rows: LPR lanes per row.
  {
    const int r = g_lane / LPR, part = g_lane % LPR, i = i_tile + row0 + r;
    float sum = 0.0;
    if (i < L)
      for (int d = part; d < Ev; d += LPR)
        sum += load_f32(P.dout, dt, do_base + i * P.do_sl + d) * load_f32(P.o, dt, o_base + i * P.o_sl + d);
    sh_f[RED_AT + g_warp * SG + g_lane] = sum;
    subgroup_sync();
    if (part == 0) {
      float d_i = 0.0;
      for (int q = 0; q < LPR; ++q) d_i += sh_f[RED_AT + g_warp * SG + g_lane + q];
      sh_f[DSH_AT + row0 + r] = d_i;
      sh_f[LSH_AT + row0 + r] = i < L ? RefF32(tvk_elem_addr(P.lse, bh * L + i, 2)).v : NEG_INF;
      if (i < L) RefF32(tvk_elem_addr(P.d, bh * L + i, 2)).v = d_i;
    }
  }

  // q and dO fragments of the subgroup's rows.
  LOAD_TILE(Q_AT, ROWS, P.q, i_tile + r < L ? q_base + (i_tile + r) * P.q_sl : -1, E, vec_qk)
#if COOPMAT_EMULATE
  LOAD_TILE(DO_AT, ROWS, P.dout, i_tile + r < L ? do_base + (i_tile + r) * P.do_sl : -1, Ev, vec_do)
  barrier();
  FRAG_A_T qf[DF];  // (one declarator per declaration: glslang 13 mistypes the second)
  FRAG_A_T dof[DF];
  [[unroll]] for (int f = 0; f < DF; ++f) {
    qf[f] = Frag(Q_AT + row0 * LDH + 16 * f, LDH, 1);
    dof[f] = Frag(DO_AT + row0 * LDH + 16 * f, LDH, 1);
  }
#else
  barrier();
  FRAG_A_T qf[DF];  // (one declarator per declaration: glslang 13 mistypes the second)
  FRAG_A_T dof[DF];
  [[unroll]] for (int f = 0; f < DF; ++f)
    if (16 * f < E) load_a(qf[f], Q_AT + row0 * LDH + 16 * f, LDH);
  barrier();  // every subgroup holds its q before dO overwrites the tile
  LOAD_TILE(DO_AT, ROWS, P.dout, i_tile + r < L ? do_base + (i_tile + r) * P.do_sl : -1, Ev, vec_do)
  barrier();
  [[unroll]] for (int f = 0; f < DF; ++f)
    if (16 * f < Ev) load_a(dof[f], DO_AT + row0 * LDH + 16 * f, LDH);
#endif

  ACC_T dq[DF];
  [[unroll]] for (int f = 0; f < DF; ++f) acc_zero(dq[f]);
  const int k_base = b * P.k_sb + hk * P.k_sh;
  const int v_base = b * P.v_sb + hk * P.v_sh;
  const int kv_end = (P.flags & 1) != 0 ? min(S, i_tile + ROWS) : S;
  const int s_at = g_warp * 16 * LDS;
  const int ds_at = DS_AT + g_warp * 16 * LDB;

  for (int j0 = 0; j0 < kv_end; j0 += BS) {
    barrier();  // the previous tiles (and, once, dO) are no longer read
    LOAD_TILE(K_AT, BS, P.k, j0 + r < S ? k_base + (j0 + r) * P.k_sl : -1, E, vec_qk)
    LOAD_TILE(V_AT, BS, P.v, j0 + r < S ? v_base + (j0 + r) * P.v_sl : -1, Ev, vec_v)
    barrier();

    // S = q k^T, then p and z of this lane's groups.
    UNROLL for (int sf = 0; sf < SF; ++sf) {
      ACC_T s;
      acc_zero(s);
      UNROLL for (int f = 0; f < DF; ++f) {
        if (16 * f >= E) break;
        FRAG_B_T kt;
        load_b_cols(kt, K_AT + (16 * sf) * LDH + 16 * f, LDH);
        mul_add(s, qf[f], kt);
      }
      store_acc(s, s_at + 16 * sf, LDS);
    }
    subgroup_sync();
    float p[4 * ITEMS], z[4 * ITEMS];
    [[unroll]] for (int t = 0; t < ITEMS; ++t) {
      const int it = g_lane + t * SG, r = it / (BS / 4), g = it % (BS / 4);
      const int i = i_tile + row0 + r, jg = j0 + 4 * g;
      uvec4 bits = uvec4(0u);
      if (dropout) bits = attention_dropout_block(P.drop_seed, P.drop_counter, bh * L + i, jg);
      [[unroll]] for (int u = 0; u < 4; ++u) {
        const int j = jg + u;
        p[4 * t + u] = recomputed_p(P, i < L && j < S, b, h, i, j, sh_f[s_at + r * LDS + 4 * g + u],
                                    sh_f[LSH_AT + row0 + r]);
        z[4 * t + u] = !dropout ? 1.0
                       : attention_dropout_keep(bits, P.drop_threshold, j) ? P.drop_scale : 0.0;
      }
    }
    subgroup_sync();  // the scratch is read: dP may overwrite it

    // dP = dO v^T, then ds = p (z dP - D) into the dS tile (and the float mask's gradient).
    UNROLL for (int sf = 0; sf < SF; ++sf) {
      ACC_T dp;
      acc_zero(dp);
      UNROLL for (int f = 0; f < DF; ++f) {
        if (16 * f >= Ev) break;
        FRAG_B_T vt;
        load_b_cols(vt, V_AT + (16 * sf) * LDH + 16 * f, LDH);
        mul_add(dp, dof[f], vt);
      }
      store_acc(dp, s_at + 16 * sf, LDS);
    }
    subgroup_sync();
    [[unroll]] for (int t = 0; t < ITEMS; ++t) {
      const int it = g_lane + t * SG, r = it / (BS / 4), g = it % (BS / 4);
      const int i = i_tile + row0 + r;
      const float d_i = sh_f[DSH_AT + row0 + r];
      float ds[4];
      [[unroll]] for (int u = 0; u < 4; ++u) {
        const float dp = sh_f[s_at + r * LDS + 4 * g + u];
        ds[u] = p[4 * t + u] * (z[4 * t + u] * dp - d_i);
        const int j = j0 + 4 * g + u;
        if (P.dbias != 0ul && i < L && j < S)
          RefF32(tvk_elem_addr(P.dbias, (bh * L + i) * S + j, 2)).v = ds[u];
      }
      const uvec2 w = patterns4(ds[0], ds[1], ds[2], ds[3]);
      put4(ds_at + r * LDB + 4 * g, w.x, w.y);
    }
    subgroup_sync();

    // dq += dS k.
    FRAG_A_T dsa[SF];
    [[unroll]] for (int sf = 0; sf < SF; ++sf) load_a(dsa[sf], ds_at + 16 * sf, LDB);
    UNROLL for (int f = 0; f < DF; ++f) {
      if (16 * f >= E) break;
      UNROLL for (int sf = 0; sf < SF; ++sf) {
        FRAG_B_T kb;
        load_b_rows(kb, K_AT + (16 * sf) * LDH + 16 * f, LDH);
        mul_add(dq[f], dsa[sf], kb);
      }
    }
  }

  const int dq_base = b * P.dq_sb + h * P.dq_sh;
  [[unroll]] for (int f = 0; f < DF; ++f)
    if (16 * f < E)
      store_rows(dq[f], s_at, f, i_tile + row0, L, E, P.dq, dt, dq_base, P.dq_sl, P.scale);
}
#else
// ---------------------------------------------------------------- DKV pass
void main() {
  BwdParams P = BwdParams(pc.params);
  const int lid = int(gl_LocalInvocationIndex);
#if COOPMAT_EMULATE
  g_lane = lid % SG;
  g_warp = lid / SG;
#else
  g_lane = int(gl_SubgroupInvocationID);
  g_warp = int(gl_SubgroupID);
#endif
  const int kv_heads = P.heads / P.group;
  const int bhk = int(gl_WorkGroupID.y);
  const int b = bhk / kv_heads, hk = bhk % kv_heads;
  const int j_tile = int(gl_WorkGroupID.x) * ROWS;
  const int E = P.E, Ev = P.Ev, L = P.L, S = P.S, dt = P.dtype;
  const bool vec_qk = (VEC & 1) != 0, vec_v = (VEC & 2) != 0, vec_do = (VEC & 4) != 0;
  const bool dropout = (P.flags & 4) != 0;
  const int row0 = 16 * g_warp;
  const int k_base = b * P.k_sb + hk * P.k_sh;
  const int v_base = b * P.v_sb + hk * P.v_sh;

  // The key and value tiles stay in shared memory for the whole pass.
  LOAD_TILE(K_AT, ROWS, P.k, j_tile + r < S ? k_base + (j_tile + r) * P.k_sl : -1, E, vec_qk)
  LOAD_TILE(V_AT, ROWS, P.v, j_tile + r < S ? v_base + (j_tile + r) * P.v_sl : -1, Ev, vec_v)

  ACC_T dk[DF];
  ACC_T dv[DF];
  [[unroll]] for (int f = 0; f < DF; ++f) {
    acc_zero(dk[f]);
    acc_zero(dv[f]);
  }
  const int s_at = g_warp * 16 * LDS;
  const int pz_at = PZ_AT + g_warp * BS * LDT;
  const int ds_at = DS_AT + g_warp * BS * LDT;
  // Under is_causal, query tiles before the first key see none of the keys.
  const int i_begin = (P.flags & 1) != 0 ? j_tile / BS * BS : 0;
  for (int gq = 0; gq < P.group; ++gq) {
    const int h = hk * P.group + gq;
    const int bh = b * P.heads + h;
    const int q_base = b * P.q_sb + h * P.q_sh;
    const int do_base = b * P.do_sb + h * P.do_sh;
    for (int i0 = i_begin; i0 < L; i0 += BS) {
      barrier();  // the previous query tiles are no longer read
      LOAD_TILE(Q_AT, BS, P.q, i0 + r < L ? q_base + (i0 + r) * P.q_sl : -1, E, vec_qk)
      LOAD_TILE(DO_AT, BS, P.dout, i0 + r < L ? do_base + (i0 + r) * P.do_sl : -1, Ev, vec_do)
      for (int idx = lid; idx < BS; idx += WG) {
        const bool live = i0 + idx < L;
        sh_f[LSH_AT + idx] = live ? RefF32(tvk_elem_addr(P.lse, bh * L + i0 + idx, 2)).v : NEG_INF;
        sh_f[DSH_AT + idx] = live ? RefF32(tvk_elem_addr(P.d, bh * L + i0 + idx, 2)).v : 0.0;
      }
      barrier();

      // S^T = k q^T (16 keys x BS queries), then p and z of this lane's groups: query column
      // c, keys 4 g' .. 4 g' + 3 of the subgroup's rows.
      UNROLL for (int sf = 0; sf < SF; ++sf) {
        ACC_T s;
        acc_zero(s);
        UNROLL for (int f = 0; f < DF; ++f) {
          if (16 * f >= E) break;
          FRAG_A_T ka;
          FRAG_B_T qt;
          load_a(ka, K_AT + row0 * LDH + 16 * f, LDH);
          load_b_cols(qt, Q_AT + (16 * sf) * LDH + 16 * f, LDH);
          mul_add(s, ka, qt);
        }
        store_acc(s, s_at + 16 * sf, LDS);
      }
      subgroup_sync();
      float p[4 * ITEMS], z[4 * ITEMS];
      [[unroll]] for (int t = 0; t < ITEMS; ++t) {
        const int it = g_lane + t * SG, c = it / 4, g = it % 4;
        const int i = i0 + c, jg = j_tile + row0 + 4 * g;
        uvec4 bits = uvec4(0u);
        if (dropout) bits = attention_dropout_block(P.drop_seed, P.drop_counter, bh * L + i, jg);
        float pz[4];
        [[unroll]] for (int u = 0; u < 4; ++u) {
          const int j = jg + u;
          p[4 * t + u] = recomputed_p(P, i < L && j < S, b, h, i, j,
                                      sh_f[s_at + (4 * g + u) * LDS + c], sh_f[LSH_AT + c]);
          z[4 * t + u] = !dropout ? 1.0
                         : attention_dropout_keep(bits, P.drop_threshold, j) ? P.drop_scale : 0.0;
          pz[u] = p[4 * t + u] * z[4 * t + u];
        }
        const uvec2 w = patterns4(pz[0], pz[1], pz[2], pz[3]);
        put4(pz_at + c * LDT + 4 * g, w.x, w.y);
      }
      subgroup_sync();

      // dP^T = v dO^T, then ds into the dS tile.
      UNROLL for (int sf = 0; sf < SF; ++sf) {
        ACC_T dp;
        acc_zero(dp);
        UNROLL for (int f = 0; f < DF; ++f) {
          if (16 * f >= Ev) break;
          FRAG_A_T va;
          FRAG_B_T dot;
          load_a(va, V_AT + row0 * LDH + 16 * f, LDH);
          load_b_cols(dot, DO_AT + (16 * sf) * LDH + 16 * f, LDH);
          mul_add(dp, va, dot);
        }
        store_acc(dp, s_at + 16 * sf, LDS);
      }
      subgroup_sync();
      [[unroll]] for (int t = 0; t < ITEMS; ++t) {
        const int it = g_lane + t * SG, c = it / 4, g = it % 4;
        const float d_i = sh_f[DSH_AT + c];
        float ds[4];
        [[unroll]] for (int u = 0; u < 4; ++u)
          ds[u] = p[4 * t + u] * (z[4 * t + u] * sh_f[s_at + (4 * g + u) * LDS + c] - d_i);
        const uvec2 w = patterns4(ds[0], ds[1], ds[2], ds[3]);
        put4(ds_at + c * LDT + 4 * g, w.x, w.y);
      }
      subgroup_sync();

      // dv += (p z) dO, dk += dS q.
      UNROLL for (int sf = 0; sf < SF; ++sf) {
        FRAG_A_T pa;
        FRAG_A_T da;
        load_a_cols(pa, pz_at + (16 * sf) * LDT, LDT);
        load_a_cols(da, ds_at + (16 * sf) * LDT, LDT);
        UNROLL for (int f = 0; f < DF; ++f) {
          FRAG_B_T ob;
          FRAG_B_T qb;
          if (16 * f < Ev) {
            load_b_rows(ob, DO_AT + (16 * sf) * LDH + 16 * f, LDH);
            mul_add(dv[f], pa, ob);
          }
          if (16 * f < E) {
            load_b_rows(qb, Q_AT + (16 * sf) * LDH + 16 * f, LDH);
            mul_add(dk[f], da, qb);
          }
        }
      }
    }
  }

  const int dk_base = b * P.dk_sb + hk * P.dk_sh;
  const int dv_base = b * P.dv_sb + hk * P.dv_sh;
  [[unroll]] for (int f = 0; f < DF; ++f) {
    if (16 * f < E)
      store_rows(dk[f], s_at, f, j_tile + row0, S, E, P.dk, dt, dk_base, P.dk_sl, P.scale);
    if (16 * f < Ev)
      store_rows(dv[f], s_at, f, j_tile + row0, S, Ev, P.dv, dt, dv_base, P.dv_sl, 1.0);
  }
}
#endif
