#version 460
// Fused scaled-dot-product attention, backward (FlashAttention-2 style): the probabilities are
// recomputed tile by tile from the forward's logsumexp, never stored, and the gradients come
// from two passes without float atomics:
//   p_ij  = exp(scale * q_i . k_j + bias_ij - lse_i)       (0 where excluded, or lse_i = -inf)
//   D_i   = dO_i . O_i
//   ds_ij = p_ij * (z_ij * dO_i . v_j - D_i)
// z_ij: dropout's keep_ij / (1 - dropout_p) (flags bit 4, regenerated from the forward's Philox
// seed and offset: attention_dropout_keep in attention_mask.glsl), 1 without dropout. D_i is
// the same either way (dO_i . O_i = sum_j p_ij z_ij dO_i . v_j).
//   DQ pass  (one workgroup per (b * h, tile of BR query rows); keys / values stream through
//            shared memory in tiles of BC): dq_i = scale * sum_j ds_ij k_j, and D_i written
//            for the second pass; with `dbias`, every ds_ij too (a float mask's gradient).
//   DKV pass (one workgroup per (b * hk, tile of BC key rows); queries / output gradients
//            stream through shared memory in tiles of BR, over every query head of the key
//            head, hk = h / group): dv_j = sum_(h, i) p_ij z_ij dO_i,
//            dk_j = scale * sum ds_ij q_i.
//            Each key's gradients are summed by its own invocations: GQA needs no reduction
//            pass and no atomics.
// TPR invocations per row own every TPR-th element of the head dim (slices in registers);
// dot products are summed across them through shared memory, as in the forward's tiled
// kernel, or by subgroup shuffles (ATTENTION_SUBGROUP_SUM, the .subgroup variants: no
// partial-sum tiles, one barrier fewer per streamed tile). fp32 math for float16 / bfloat16 / float32 storage; gradients are rounded once.
// Exclusions as in the forward (shaders/attention_mask.glsl): is_causal (j > i), a boolean
// mask (false), an additive float mask (-inf).
//
// Built per (pass, head-dim bound DMAX) by tools/build_shaders.py
// (attention_backward.variants.toml); launcher: src/kernels/attention.cpp
// (attention_backward). The parameter block `BwdParams` (uploaded) is the only push constant.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifndef ATTENTION_SUBGROUP_SUM
#define ATTENTION_SUBGROUP_SUM 0
#endif
#if ATTENTION_SUBGROUP_SUM
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#define KIND 0
#include "common.glsl"
#include "math.glsl"
#include "attention_mask.glsl"

#ifndef DMAX
#define DMAX 128
#endif
#ifndef DKV
#define DKV 0  // 0: the DQ pass, 1: the DKV pass
#endif
// A workgroup owns ROWS_PER_GROUP rows (query rows in DQ, key rows in DKV) and streams the
// other side in tiles of STREAM rows. Head dims above 128 take 8 invocations per row (the
// slices, in registers, stay 32 long) and streamed tiles of 8 rows (shared memory: 2 x 8 x
// 256 floats of tiles + the partial sums, ~24 KiB, within NVIDIA's 48 KiB).
#define ROWS_PER_GROUP 16
#define TPR (DMAX > 128 ? 8 : 4)     // invocations per row
#define STREAM (DMAX > 128 ? 8 : 16)  // rows per streamed tile
#if DKV
#define BC ROWS_PER_GROUP           // key rows per workgroup
#define BR STREAM                   // query rows per streamed tile
#else
#define BR ROWS_PER_GROUP           // query rows per workgroup
#define BC STREAM                   // key rows per streamed tile
#endif
#define SLICE (DMAX / TPR)          // head-dim elements per invocation

layout(local_size_x = ROWS_PER_GROUP * TPR) in;

#include "attention_params.glsl"

// p_ij z_ij (pz) and ds_ij from the summed dot products (s = q . k, dp = dO . v); `z`: z_ij
// (1 without dropout).
void probability(BwdParams P, bool live, int b, int h, int i, int j, float s, float dp,
                 float lse, float d_i, float z, out float pz, out float ds) {
  float x = P.scale * s;
  if (!live || lse == NEG_INF || excluded(P, b, h, i, j, x) || x == NEG_INF) {
    pz = 0.0;
    ds = 0.0;
    return;
  }
  const float p = tvk_exp(x - lse);
  pz = p * z;
  ds = p * (z * dp - d_i);
}

// Dropout: the Philox blocks of the current tile pair, [query row][key group of 4], each
// drawn once per tile by one invocation (fill_drop_bits) instead of by every lane of every
// key of a group. Both passes align key groups to multiples of 4 (tiles of 8 / 16 keys).
shared uvec4 DropBits[BR][BC / 4];

// Fills DropBits for query rows i0 .. i0 + BR - 1 of (b * heads + h) = bh and keys j0 ..
// j0 + BC - 1 (before the barrier that publishes the tiles).
void fill_drop_bits(BwdParams P, int lid, int bh, int i0, int j0) {
  if ((P.flags & 4) == 0) return;
  for (int idx = lid; idx < BR * (BC / 4); idx += ROWS_PER_GROUP * TPR) {
    const int ii = idx / (BC / 4), q = idx - ii * (BC / 4);
    DropBits[ii][q] =
        attention_dropout_block(P.drop_seed, P.drop_counter, bh * P.L + i0 + ii, j0 + 4 * q);
  }
}

// z_ij of query ii / key jj of the tile pair: keep / (1 - p), or 1 without dropout.
float dropout_factor(BwdParams P, int ii, int jj, int j) {
  if ((P.flags & 4) == 0) return 1.0;
  return attention_dropout_keep(DropBits[ii][jj >> 2], P.drop_threshold, j) ? P.drop_scale : 0.0;
}

#if !DKV
// ---------------------------------------------------------------- DQ pass
shared float Ks[BC][DMAX];
shared float Vs[BC][DMAX];
#if !ATTENTION_SUBGROUP_SUM
shared float Sp[BR][TPR][BC];  // partial q . k
shared float Dp[BR][TPR][BC];  // partial dO . v
#endif
shared float Red[BR][TPR];

void main() {
  BwdParams P = BwdParams(pc.params);
  const int lid = int(gl_LocalInvocationID.x);
  const int row = lid / TPR, lane = lid % TPR;
  const int bh = int(gl_WorkGroupID.y);
  const int b = bh / P.heads, h = bh % P.heads, hk = h / P.group;
  const int i = int(gl_WorkGroupID.x) * BR + row;
  const bool valid = i < P.L;
  const int E = P.E, Ev = P.Ev, S = P.S, dt = P.dtype;

  float qr[SLICE], dor[SLICE], dq[SLICE];
  float dot_o = 0.0;
  const int q_base = b * P.q_sb + h * P.q_sh + i * P.q_sl;
  const int do_base = b * P.do_sb + h * P.do_sh + i * P.do_sl;
  const int o_base = b * P.o_sb + h * P.o_sh + i * P.o_sl;
  for (int c = 0; c < SLICE; ++c) {
    const int d = c * TPR + lane;
    qr[c] = valid && d < E ? load_f32(P.q, dt, q_base + d) : 0.0;
    dor[c] = valid && d < Ev ? load_f32(P.dout, dt, do_base + d) : 0.0;
    if (valid && d < Ev) dot_o += dor[c] * load_f32(P.o, dt, o_base + d);
    dq[c] = 0.0;
  }
  Red[row][lane] = dot_o;
  barrier();
  float d_i = 0.0;
  for (int t = 0; t < TPR; ++t) d_i += Red[row][t];
  const int r = bh * P.L + i;
  if (valid && lane == 0) RefF32(tvk_elem_addr(P.d, r, 2)).v = d_i;
  const float lse = valid ? RefF32(tvk_elem_addr(P.lse, r, 2)).v : NEG_INF;

  const int k_base = b * P.k_sb + hk * P.k_sh;
  const int v_base = b * P.v_sb + hk * P.v_sh;
  const int i_tile = int(gl_WorkGroupID.x) * BR;
  int kv_end = S;  // keys past the tile's last row are all excluded under is_causal
  if ((P.flags & 1) != 0) kv_end = min(S, int(gl_WorkGroupID.x) * BR + BR);
  for (int j0 = 0; j0 < kv_end; j0 += BC) {
    barrier();  // the previous tile is no longer read
    for (int idx = lid; idx < BC * E; idx += BR * TPR) {
      const int rr = idx / E, d = idx - rr * E;
      Ks[rr][d] = j0 + rr < S ? load_f32(P.k, dt, k_base + (j0 + rr) * P.k_sl + d) : 0.0;
    }
    for (int idx = lid; idx < BC * Ev; idx += BR * TPR) {
      const int rr = idx / Ev, d = idx - rr * Ev;
      Vs[rr][d] = j0 + rr < S ? load_f32(P.v, dt, v_base + (j0 + rr) * P.v_sl + d) : 0.0;
    }
    fill_drop_bits(P, lid, bh, i_tile, j0);
    barrier();
#if !ATTENTION_SUBGROUP_SUM
    for (int jj = 0; jj < BC; ++jj) {
      float s = 0.0, dp = 0.0;
      for (int c = 0; c < SLICE; ++c) {  // shared elements past E / Ev were never written
        const int d = c * TPR + lane;
        if (d < E) s += qr[c] * Ks[jj][d];
        if (d < Ev) dp += dor[c] * Vs[jj][d];
      }
      Sp[row][lane][jj] = s;
      Dp[row][lane][jj] = dp;
    }
    barrier();
#endif
    for (int jj = 0; jj < BC; ++jj) {
      float s = 0.0, dp = 0.0;
#if ATTENTION_SUBGROUP_SUM
      for (int c = 0; c < SLICE; ++c) {  // shared elements past E / Ev were never written
        const int d = c * TPR + lane;
        if (d < E) s += qr[c] * Ks[jj][d];
        if (d < Ev) dp += dor[c] * Vs[jj][d];
      }
      s = attention_lane_sum(s, TPR);
      dp = attention_lane_sum(dp, TPR);
#else
      for (int t = 0; t < TPR; ++t) {
        s += Sp[row][t][jj];
        dp += Dp[row][t][jj];
      }
#endif
      const int j = j0 + jj;
      const float z = dropout_factor(P, row, jj, j);
      float pz, ds;
      probability(P, valid && j < S, b, h, i, j, s, dp, lse, d_i, z, pz, ds);
      // A float mask's gradient: d(score) itself (keys the pass skips stay the caller's 0).
      if (P.dbias != 0ul && lane == 0 && valid && j < S)
        RefF32(tvk_elem_addr(P.dbias, r * S + j, 2)).v = ds;
      if (ds != 0.0)  // (no `continue`: the next iteration's shuffles need every lane)
        for (int c = 0; c < SLICE; ++c)
          if (c * TPR + lane < E) dq[c] += ds * Ks[jj][c * TPR + lane];
    }
  }
  if (!valid) return;
  const int dq_base = b * P.dq_sb + h * P.dq_sh + i * P.dq_sl;
  for (int c = 0; c < SLICE; ++c) {
    const int d = c * TPR + lane;
    if (d < E) store_f32(P.dq, dt, dq_base + d, dq[c] * P.scale);
  }
}
#else
// ---------------------------------------------------------------- DKV pass
shared float Qs[BR][DMAX];
shared float Os[BR][DMAX];     // dO rows
shared float Ls[BR], Ds[BR];   // lse and D of the tile's query rows
#if !ATTENTION_SUBGROUP_SUM
shared float Sp[BC][TPR][BR];  // partial k . q
shared float Dp[BC][TPR][BR];  // partial v . dO
#endif

void main() {
  BwdParams P = BwdParams(pc.params);
  const int lid = int(gl_LocalInvocationID.x);
  const int row = lid / TPR, lane = lid % TPR;
  const int kv_heads = P.heads / P.group;
  const int bhk = int(gl_WorkGroupID.y);
  const int b = bhk / kv_heads, hk = bhk % kv_heads;
  const int j_tile = int(gl_WorkGroupID.x) * BC;
  const int j = j_tile + row;
  const bool valid = j < P.S;
  const int E = P.E, Ev = P.Ev, L = P.L, dt = P.dtype;

  float kr[SLICE], vr[SLICE], dk[SLICE], dv[SLICE];
  const int k_off = b * P.k_sb + hk * P.k_sh + j * P.k_sl;
  const int v_off = b * P.v_sb + hk * P.v_sh + j * P.v_sl;
  for (int c = 0; c < SLICE; ++c) {
    const int d = c * TPR + lane;
    kr[c] = valid && d < E ? load_f32(P.k, dt, k_off + d) : 0.0;
    vr[c] = valid && d < Ev ? load_f32(P.v, dt, v_off + d) : 0.0;
    dk[c] = 0.0;
    dv[c] = 0.0;
  }
  // Under is_causal, queries before the tile's first key see none of its keys.
  const int i_begin = (P.flags & 1) != 0 ? j_tile / BR * BR : 0;
  for (int g = 0; g < P.group; ++g) {
    const int h = hk * P.group + g;
    const int bh = b * P.heads + h;
    const int q_base = b * P.q_sb + h * P.q_sh;
    const int do_base = b * P.do_sb + h * P.do_sh;
    for (int i0 = i_begin; i0 < L; i0 += BR) {
      barrier();  // the previous tile is no longer read
      for (int idx = lid; idx < BR * E; idx += BC * TPR) {
        const int rr = idx / E, d = idx - rr * E;
        Qs[rr][d] = i0 + rr < L ? load_f32(P.q, dt, q_base + (i0 + rr) * P.q_sl + d) : 0.0;
      }
      for (int idx = lid; idx < BR * Ev; idx += BC * TPR) {
        const int rr = idx / Ev, d = idx - rr * Ev;
        Os[rr][d] = i0 + rr < L ? load_f32(P.dout, dt, do_base + (i0 + rr) * P.do_sl + d) : 0.0;
      }
      if (lid < BR) {
        const bool live = i0 + lid < L;
        Ls[lid] = live ? RefF32(tvk_elem_addr(P.lse, bh * L + i0 + lid, 2)).v : NEG_INF;
        Ds[lid] = live ? RefF32(tvk_elem_addr(P.d, bh * L + i0 + lid, 2)).v : 0.0;
      }
      fill_drop_bits(P, lid, bh, i0, j_tile);
      barrier();
#if !ATTENTION_SUBGROUP_SUM
      for (int ii = 0; ii < BR; ++ii) {
        float s = 0.0, dp = 0.0;
        for (int c = 0; c < SLICE; ++c) {  // shared elements past E / Ev were never written
          const int d = c * TPR + lane;
          if (d < E) s += kr[c] * Qs[ii][d];
          if (d < Ev) dp += vr[c] * Os[ii][d];
        }
        Sp[row][lane][ii] = s;
        Dp[row][lane][ii] = dp;
      }
      barrier();
#endif
      for (int ii = 0; ii < BR; ++ii) {
        float s = 0.0, dp = 0.0;
#if ATTENTION_SUBGROUP_SUM
        for (int c = 0; c < SLICE; ++c) {  // shared elements past E / Ev were never written
          const int d = c * TPR + lane;
          if (d < E) s += kr[c] * Qs[ii][d];
          if (d < Ev) dp += vr[c] * Os[ii][d];
        }
        s = attention_lane_sum(s, TPR);
        dp = attention_lane_sum(dp, TPR);
#else
        for (int t = 0; t < TPR; ++t) {
          s += Sp[row][t][ii];
          dp += Dp[row][t][ii];
        }
#endif
        const int i = i0 + ii;
        const float z = dropout_factor(P, ii, row, j);
        float pz, ds;
        probability(P, valid && i < L, b, h, i, j, s, dp, Ls[ii], Ds[ii], z, pz, ds);
        if (pz != 0.0 || ds != 0.0) {  // (no `continue`: the next shuffles need every lane)
          for (int c = 0; c < SLICE; ++c) {
            const int d = c * TPR + lane;
            if (d < Ev) dv[c] += pz * Os[ii][d];
            if (d < E) dk[c] += ds * Qs[ii][d];
          }
        }
      }
    }
  }
  if (!valid) return;
  const int dk_base = b * P.dk_sb + hk * P.dk_sh + j * P.dk_sl;
  const int dv_base = b * P.dv_sb + hk * P.dv_sh + j * P.dv_sl;
  for (int c = 0; c < SLICE; ++c) {
    const int d = c * TPR + lane;
    if (d < E) store_f32(P.dk, dt, dk_base + d, dk[c] * P.scale);
    if (d < Ev) store_f32(P.dv, dt, dv_base + d, dv[c]);
  }
}
#endif
