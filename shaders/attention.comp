#version 460
// Fused scaled-dot-product attention, forward (flash-attention style):
//   out[b,h,i,:] = sum_j softmax_j(s_ij) v[b,hk,j,:],  s_ij = scale * q[b,h,i,:] . k[b,hk,j,:] + bias
//   lse[b,h,i]   = log sum_j exp(s_ij)          (float32; -inf for a row with no allowed key)
// hk = h / group (grouped-query attention: group = heads of q per head of k / v). Key j is
// excluded (-inf) when j > i with is_causal (top-left aligned, like torch.tril), where a
// boolean mask is false, and the float mask value is added otherwise. A row without any
// allowed key gives out = 0 (and lse = -inf), like PyTorch's math path (_safe_softmax).
// Dropout (flags bit 2): out[b,h,i,:] = sum_j softmax_j(s_ij) z_ij v[b,hk,j,:] with z_ij =
// keep_ij / (1 - dropout_p), keep_ij drawn from Philox by (seed, offset, row, key) (see
// attention_dropout_keep in attention_mask.glsl): the running sum l takes every
// probability, the accumulator only the kept ones, and 1 / (1 - dropout_p) (drop_scale, 1
// without dropout) is applied with the normalization. lse stays the undropped softmax's.
//
// Work split: one workgroup per (b * h, tile of BR query rows); TPR invocations per row, each
// owning every TPR-th element of the head dim (its slice of q and of the output accumulator
// stay in registers). Keys and values stream through shared memory in tiles of BC rows; the
// softmax is the online one (running max m and sum l, rescaled by exp(m_old - m_new)), all in
// fp32 whatever the storage dtype (float16 / bfloat16 / float32, converted on load). A row's
// partial dot products are summed through shared memory and a barrier, or (the .subgroup
// variants, ATTENTION_SUBGROUP_SUM: devices with subgroup shuffles) by subgroupShuffleXor
// among its TPR invocations, which saves the partial-sum tile and one barrier per key tile.
//
// Variant ROWS (for CPU devices, lavapipe / SwiftShader, where a workgroup's barriers are
// coroutine switches and shared memory buys nothing): one invocation per query row, no shared
// memory, no barriers. The row's q (pre-scaled) and output accumulator stay in registers; keys
// stream one at a time through the same online softmax; an excluded key (causal j > i, boolean
// mask false, additive mask -inf) costs no load of k or v. With is_causal the loop stops at
// j = i. The dtypes and the head dims are specialization constants (so the dtype switches fold
// and the head-dim loops have constant bounds; -1 / 0: read from Params); rows that the
// launcher found 4-element aligned load and store 4 elements at a time
// (SPEC_VEC). The flags are read at run time (uniform branches).
// Split (devices with a loop limit, DeviceCapabilities::max_loop_iterations: lavapipe ends
// every loop of an invocation after 65535 iterations in total): a dispatch may cover only
// the rows [row_begin, row_end) and the keys [j_begin, j_end). With `state` != 0 the
// running (m, l, acc) of row r live at state + (r - row_begin) * (C4 + 1) vec4s (v[0] =
// (m, l, 0, 0), v[1 + c] = acc[c]): read when j_begin > 0, written instead of the output
// when j_end < S; the launcher records the key chunks of a row block in order on one stream.
//
// Split-KV (the tiled kernel with `state` != 0; decode: few query rows, many keys): the keys
// are cut into gl_NumWorkGroups.z chunks of j_end keys (a multiple of BC), workgroup z
// covering chunk z, so (batch * head) x query tiles x chunks workgroups share the work. Each
// writes its row's partial (m, l, acc[Ev]) unnormalized to state (float32, at
// ((bh * L + i) * chunks + z) * (Ev + 2)) instead of the output, and variant COMBINE (one
// invocation per (row, element of Ev + 1)) merges the chunks: M = max m_z,
// l = sum l_z exp(m_z - M), out = sum acc_z exp(m_z - M) / l, lse = M + log l (j_begin holds
// the chunk count there).
//
// Variant PROBS (the backward's recomputation): scores [b, h, i, j] (float32, contiguous,
// q . k^T from a GEMM) are turned in place into the probabilities
//   p_ij = exp(scale * scores_ij + bias_ij - lse[b,h,i])   (0 where excluded, as above, and in
//   rows whose lse is -inf), one invocation per element; with dropout (flags bit 2, `dropped`
//   != 0) also p_ij * z_ij at `dropped` (same layout).
//
// Built per head-dim bound (DMAX: the largest head dim of q / k and of v) by
// tools/build_shaders.py from attention.variants.toml. The launcher (src/kernels/attention.cpp)
// uploads the parameter block `Params` and passes its address as the only push constant.
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
#include "attention_params.glsl"

#ifndef DMAX
#define DMAX 128
#endif
#ifndef PROBS
#define PROBS 0
#endif
#ifndef ROWS
#define ROWS 0
#endif
#ifndef COMBINE
#define COMBINE 0
#endif
#define BR 16                 // query rows per workgroup
#define TPR 4                 // invocations per query row
#define BC (DMAX > 128 ? 8 : 16)  // keys per shared-memory tile (at most 32 KiB of shared memory)
#define SLICE (DMAX / TPR)    // head-dim elements per invocation

#if PROBS || COMBINE
layout(local_size_x = 256) in;
#elif ROWS
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT = -1;  // q, k, v, out dtype (-1: Params)
layout(constant_id = 2) const int SPEC_VEC = 0;  // vec4 rows: 1 q / k, 2 v, 4 out
layout(constant_id = 3) const int SPEC_E = 0;    // head dim of q / k (0: Params)
layout(constant_id = 4) const int SPEC_EV = 0;   // head dim of v (0: Params)
layout(constant_id = 5) const int SPEC_MASK_DT = -1;  // mask dtype (-1: Params)
#else
layout(local_size_x = BR * TPR) in;
#endif

#if PROBS
void main() {
  Params P = Params(pc.params);
  const int L = P.L, S = P.S;
  const uint total = uint(P.batch) * uint(P.heads) * uint(L) * uint(S);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += step) {
    const int j = int(idx % uint(S));
    const uint r = idx / uint(S);
    const int i = int(r % uint(L));
    const int bh = int(r / uint(L));
    const int b = bh / P.heads, h = bh % P.heads;
    float x = RefF32(tvk_elem_addr(P.o, int(idx), 2)).v * P.scale;
    const float lse = RefF32(tvk_elem_addr(P.lse, int(r), 2)).v;
    const bool zero = excluded(P, b, h, i, j, x) || lse == NEG_INF;
    const float prob = zero ? 0.0 : tvk_exp(x - lse);
    RefF32(tvk_elem_addr(P.o, int(idx), 2)).v = prob;
    if ((P.flags & 4) != 0 && P.dropped != 0ul) {
      const uvec4 block = attention_dropout_block(P.drop_seed, P.drop_counter, int(r), j);
      const bool keep = attention_dropout_keep(block, P.drop_threshold, j);
      RefF32(tvk_elem_addr(P.dropped, int(idx), 2)).v = keep ? prob * P.drop_scale : 0.0;
    }
  }
}
#elif COMBINE
void main() {
  Params P = Params(pc.params);
  const int chunks = P.j_begin, Ev = P.Ev, L = P.L;
  const uint per_row = uint(Ev + 1);  // Ev outputs, then the lse
  const uint total = uint(P.batch) * uint(P.heads) * uint(L) * per_row;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += step) {
    const int d = int(idx % per_row);
    const int r = int(idx / per_row);  // (bh, i)
    const int i = r % L, bh = r / L;
    const int b = bh / P.heads, h = bh % P.heads;
    const int base = r * chunks * (Ev + 2);
    float mx = NEG_INF;
    for (int z = 0; z < chunks; ++z) mx = max(mx, RefF32(tvk_elem_addr(P.state, base + z * (Ev + 2), 2)).v);
    float l = 0.0, acc = 0.0;
    if (mx != NEG_INF) {
      for (int z = 0; z < chunks; ++z) {
        const int zb = base + z * (Ev + 2);
        const float mz = RefF32(tvk_elem_addr(P.state, zb, 2)).v;
        if (mz == NEG_INF) continue;  // no allowed key in the chunk: l = acc = 0
        const float f = tvk_exp(mz - mx);
        l += RefF32(tvk_elem_addr(P.state, zb + 1, 2)).v * f;
        if (d < Ev) acc += RefF32(tvk_elem_addr(P.state, zb + 2 + d, 2)).v * f;
      }
    }
    if (d == Ev) {
      store_f32(P.lse, DT_FLOAT32, r, l > 0.0 ? mx + tvk_log(l) : NEG_INF);
    } else {
      store_f32(P.o, P.dtype, b * P.o_sb + h * P.o_sh + i * P.o_sl + d,
                l > 0.0 ? acc / l * P.drop_scale : 0.0);
    }
  }
}
#elif ROWS
#define C4 (DMAX / 4)  // head-dim elements in vec4 groups

#include "vec4_io.glsl"

layout(buffer_reference, std430, buffer_reference_align = 16) buffer RowState { vec4 v[]; };

void main() {
  Params P = Params(pc.params);
  const int dt = SPEC_DT >= 0 ? SPEC_DT : P.dtype;
  const int mdt = SPEC_MASK_DT >= 0 ? SPEC_MASK_DT : P.mask_dtype;
  const int E = SPEC_E > 0 ? SPEC_E : P.E, Ev = SPEC_EV > 0 ? SPEC_EV : P.Ev;
  const bool vec_qk = (SPEC_VEC & 1) != 0, vec_v = (SPEC_VEC & 2) != 0;
  const bool vec_out = (SPEC_VEC & 4) != 0;
  const bool causal = (P.flags & 1) != 0, has_mask = (P.flags & 2) != 0;
  const bool dropout = (P.flags & 4) != 0;
  const int L = P.L, S = P.S;
  const uint rows = uint(P.row_end);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const bool split = P.state != 0ul;
  for (uint r = uint(P.row_begin) + gl_GlobalInvocationID.x; r < rows; r += step) {
    const int i = int(r % uint(L));
    const int bh = int(r / uint(L));
    const int b = bh / P.heads, h = bh % P.heads, hk = h / P.group;
    // Fully unrolled head-dim loops keep q and the accumulator in registers; with the head
    // dims specialized, the `4 * c < E` tests fold away.
    vec4 qr[C4];
    vec4 acc[C4];
    const int q_base = b * P.q_sb + h * P.q_sh + i * P.q_sl;
    [[unroll]] for (int c = 0; c < C4; ++c) {
      qr[c] = 4 * c < E ? load_row4(P.q, dt, q_base, c, E, vec_qk) * P.scale : vec4(0.0);
      acc[c] = vec4(0.0);
    }
    float m = NEG_INF, l = 0.0;
    RowState st = RowState(P.state);
    const int st_base = int(r - uint(P.row_begin)) * (C4 + 1);
    if (split && P.j_begin > 0) {
      const vec4 ml = st.v[st_base];
      m = ml.x;
      l = ml.y;
      [[unroll]] for (int c = 0; c < C4; ++c) acc[c] = st.v[st_base + 1 + c];
    }
    const int k_base = b * P.k_sb + hk * P.k_sh;
    const int v_base = b * P.v_sb + hk * P.v_sh;
    const int m_base = b * P.m_sb + h * P.m_sh + i * P.m_sl;
    const int kv_end = min(causal ? min(S, i + 1) : S, P.j_end);
    int drop_q = -1;  // the group of 4 keys whose dropout numbers drop_bits holds
    uvec4 drop_bits = uvec4(0u);
    for (int j = P.j_begin; j < kv_end; ++j) {
      float bias = 0.0;
      if (has_mask) {
        if (mdt == DT_BOOL) {
          if (uint(RefU8(tvk_elem_addr(P.mask, m_base + j * P.m_ss, 0)).v) == 0u) continue;
        } else {
          bias = load_f32(P.mask, mdt, m_base + j * P.m_ss);
          if (bias == NEG_INF) continue;
        }
      }
      const int kj = k_base + j * P.k_sl;
      vec4 part = vec4(0.0);
      [[unroll]] for (int c = 0; c < C4; ++c)
        if (4 * c < E) part += qr[c] * load_row4(P.k, dt, kj, c, E, vec_qk);
      const float x = (part.x + part.y) + (part.z + part.w) + bias;
      if (x == NEG_INF) continue;
      // Online softmax: rescale when the running max grows (from -inf: corr = 0).
      if (x > m) {
        const float corr = tvk_exp(m - x);
        l *= corr;
        [[unroll]] for (int c = 0; c < C4; ++c) acc[c] *= corr;
        m = x;
      }
      const float p = tvk_exp(x - m);
      l += p;
      if (dropout) {
        if ((j >> 2) != drop_q) {
          drop_q = j >> 2;
          drop_bits = attention_dropout_block(P.drop_seed, P.drop_counter, int(r), j);
        }
        if (!attention_dropout_keep(drop_bits, P.drop_threshold, j)) continue;  // no v load
      }
      const int vj = v_base + j * P.v_sl;
      [[unroll]] for (int c = 0; c < C4; ++c)
        if (4 * c < Ev) acc[c] += p * load_row4(P.v, dt, vj, c, Ev, vec_v);
    }
    if (split && P.j_end < S) {  // more key chunks follow
      st.v[st_base] = vec4(m, l, 0.0, 0.0);
      [[unroll]] for (int c = 0; c < C4; ++c) st.v[st_base + 1 + c] = acc[c];
      continue;
    }
    const float inv = l > 0.0 ? P.drop_scale / l : 0.0;
    const int o_base = b * P.o_sb + h * P.o_sh + i * P.o_sl;
    [[unroll]] for (int c = 0; c < C4; ++c) {
      const vec4 o = acc[c] * inv;
      const int d = 4 * c;
      if (vec_out) {
        if (d < Ev) store_row4(P.o, dt, o_base, c, o);
        continue;
      }
      if (d < Ev) store_f32(P.o, dt, o_base + d, o.x);
      if (d + 1 < Ev) store_f32(P.o, dt, o_base + d + 1, o.y);
      if (d + 2 < Ev) store_f32(P.o, dt, o_base + d + 2, o.z);
      if (d + 3 < Ev) store_f32(P.o, dt, o_base + d + 3, o.w);
    }
    store_f32(P.lse, DT_FLOAT32, int(r), l > 0.0 ? m + tvk_log(l) : NEG_INF);
  }
}
#else
shared float Ks[BC][DMAX];
shared float Vs[BC][DMAX];
#if !ATTENTION_SUBGROUP_SUM
shared float Sp[BR][TPR][BC];
#endif
// Dropout: the Philox blocks of the tile's BR rows x BC / 4 key groups, each drawn once per
// tile by one invocation instead of by every lane of the row.
shared uvec4 DropBits[BR][BC / 4];

void main() {
  Params P = Params(pc.params);
  const uint lid = gl_LocalInvocationID.x;
  const int row = int(lid) / TPR;
  const int lane = int(lid) % TPR;
  const int bh = int(gl_WorkGroupID.y);
  const int b = bh / P.heads, h = bh % P.heads, hk = h / P.group;
  const int i = int(gl_WorkGroupID.x) * BR + row;
  const bool valid = i < P.L;
  const int E = P.E, Ev = P.Ev, S = P.S, dt = P.dtype;
  const bool causal = (P.flags & 1) != 0, dropout = (P.flags & 4) != 0;

  float qr[SLICE];
  float acc[SLICE];
  const int q_base = b * P.q_sb + h * P.q_sh + i * P.q_sl;
  for (int c = 0; c < SLICE; ++c) {
    const int d = c * TPR + lane;
    qr[c] = (valid && d < E) ? load_f32(P.q, dt, q_base + d) * P.scale : 0.0;
    acc[c] = 0.0;
  }
  float m = NEG_INF, l = 0.0;

  const int k_base = b * P.k_sb + hk * P.k_sh;
  const int v_base = b * P.v_sb + hk * P.v_sh;
  // Keys beyond the last row of this tile are all masked under is_causal.
  int kv_end = S;
  if (causal) kv_end = min(S, int(gl_WorkGroupID.x) * BR + BR);
  // Split-KV: this workgroup's chunk of keys.
  const bool split = P.state != 0ul;
  const int j_lo = split ? int(gl_WorkGroupID.z) * P.j_end : 0;
  const int j_hi = split ? min(S, j_lo + P.j_end) : S;
  kv_end = min(kv_end, j_hi);

  for (int j0 = j_lo; j0 < kv_end; j0 += BC) {
    barrier();  // the previous tile is no longer read
    for (int idx = int(lid); idx < BC * E; idx += BR * TPR) {
      const int r = idx / E, d = idx - r * E;
      Ks[r][d] = j0 + r < S ? load_f32(P.k, dt, k_base + (j0 + r) * P.k_sl + d) : 0.0;
    }
    for (int idx = int(lid); idx < BC * Ev; idx += BR * TPR) {
      const int r = idx / Ev, d = idx - r * Ev;
      Vs[r][d] = j0 + r < S ? load_f32(P.v, dt, v_base + (j0 + r) * P.v_sl + d) : 0.0;
    }
    if (dropout) {  // (j0 is a multiple of 4: key group q holds keys j0 + 4q ..)
      for (int idx = int(lid); idx < BR * (BC / 4); idx += BR * TPR) {
        const int rr = idx / (BC / 4), q = idx - rr * (BC / 4);
        DropBits[rr][q] = attention_dropout_block(
            P.drop_seed, P.drop_counter, bh * P.L + int(gl_WorkGroupID.x) * BR + rr, j0 + 4 * q);
      }
    }
    barrier();
    float s[BC];
    float tile_max = NEG_INF;
#if !ATTENTION_SUBGROUP_SUM
    for (int jj = 0; jj < BC; ++jj) {
      float part = 0.0;
      for (int c = 0; c < SLICE; ++c) {
        const int d = c * TPR + lane;
        if (d < E) part += qr[c] * Ks[jj][d];
      }
      Sp[row][lane][jj] = part;
    }
    barrier();
#endif
    for (int jj = 0; jj < BC; ++jj) {
#if ATTENTION_SUBGROUP_SUM
      float part = 0.0;
      for (int c = 0; c < SLICE; ++c) {
        const int d = c * TPR + lane;
        if (d < E) part += qr[c] * Ks[jj][d];
      }
      float x = attention_lane_sum(part, TPR);
#else
      float x = 0.0;
      for (int t = 0; t < TPR; ++t) x += Sp[row][t][jj];
#endif
      const int j = j0 + jj;
      if (!valid || j >= j_hi || excluded(P, b, h, i, j, x)) x = NEG_INF;
      s[jj] = x;
      tile_max = max(tile_max, x);
    }
    const float m_new = max(m, tile_max);
    // While no key has been allowed, (m, l, acc) stay (-inf, 0, 0).
    if (m_new != NEG_INF) {
      const float corr = tvk_exp(m - m_new);  // 0 when m was -inf
      l *= corr;
      for (int c = 0; c < SLICE; ++c) acc[c] *= corr;
      uvec4 drop_bits = uvec4(0u);
      for (int jj = 0; jj < BC; ++jj) {
        float p = tvk_exp(s[jj] - m_new);
        l += p;
        if (dropout) {
          if ((jj & 3) == 0) drop_bits = DropBits[row][jj >> 2];
          if (!attention_dropout_keep(drop_bits, P.drop_threshold, j0 + jj)) p = 0.0;
        }
        for (int c = 0; c < SLICE; ++c) {
          const int d = c * TPR + lane;
          if (d < Ev) acc[c] += p * Vs[jj][d];
        }
      }
      m = m_new;
    }
  }

  if (!valid) return;
  if (split) {  // the chunk's partial state, merged by COMBINE
    const int zb = ((bh * P.L + i) * int(gl_NumWorkGroups.z) + int(gl_WorkGroupID.z)) * (Ev + 2);
    if (lane == 0) {
      RefF32(tvk_elem_addr(P.state, zb, 2)).v = m;
      RefF32(tvk_elem_addr(P.state, zb + 1, 2)).v = l;
    }
    for (int c = 0; c < SLICE; ++c) {
      const int d = c * TPR + lane;
      if (d < Ev) RefF32(tvk_elem_addr(P.state, zb + 2 + d, 2)).v = acc[c];
    }
    return;
  }
  const float inv = l > 0.0 ? P.drop_scale / l : 0.0;
  const int o_base = b * P.o_sb + h * P.o_sh + i * P.o_sl;
  for (int c = 0; c < SLICE; ++c) {
    const int d = c * TPR + lane;
    if (d < Ev) store_f32(P.o, dt, o_base + d, acc[c] * inv);
  }
  if (lane == 0) store_f32(P.lse, DT_FLOAT32, bh * P.L + i, l > 0.0 ? m + tvk_log(l) : NEG_INF);
}
#endif
