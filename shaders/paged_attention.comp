#version 460
// Paged attention for serving engines (vLLM's KV-cache layout), two kernels:
//
// CACHE (vk::reshape_and_cache): writes the keys and values of new tokens into the paged cache.
//   key [T, Hk, E] and value [T, Hk, Ev] rows go to slot s = slot_mapping[t] of the caches
//   key_cache [num_blocks, Hk, block_size, E] / value_cache [.., Ev] (any element strides for
//   the block, head and token dims, the head dim contiguous): block s / block_size, token
//   s % block_size. A negative slot (vLLM's padding, -1) writes nothing; a slot past the cache
//   is reported as a device-side index error and writes nothing. Bits are copied as they are
//   (the cache has the keys' dtype), so the cache holds exactly the given values.
//
// ROWS / TILED (vk::paged_attention): attention of every query row over its request's keys in
//   the paged cache, decode and chunked prefill alike (each query row is independent):
//     out[t, h, :] = sum_j softmax_j(s_j) v_j,  s_j = cap(scale * q[t, h, :] . k_j)
//   Request r owns query rows [qsl[r], qsl[r+1]) (qsl = query_start_loc) and keys [0, seq_len[r])
//   (seq_lens: the cached context plus the new tokens), key j in block
//   block_table[r, j / block_size] at token j % block_size, kv head h / group (GQA / MQA). The
//   query row at i = t - qsl[r] sits at position p = seq_len - (qsl[r+1] - qsl[r]) + i: with
//   `causal` only keys j <= p count; a sliding window w > 0 keeps keys with p - j < w (and,
//   non-causal, j - p < w); soft-capping c > 0 gives cap(x) = c * tanh(x / c). A row without a
//   key gives zeros. float16 / bfloat16 / float32 storage, float32 math (online softmax).
//   A block id outside [0, num_blocks) or a sequence longer than the block table is reported as
//   a device-side index error; those keys are skipped.
//
//   ROWS (CPU devices such as lavapipe, where barriers are coroutine switches and shared memory
//   saves no traffic): one invocation per (query row, head), q (pre-scaled) and the output
//   accumulator in registers, keys streamed one by one through the block table; excluded keys
//   cost nothing (the loop bounds come from causal / window). Dtype and head dims are
//   specialization constants; rows the launcher found 4-element aligned use vector access.
//
//   TILED (GPUs): one workgroup of TS invocations per (query row, head). Keys go in tiles of TS:
//   phase A gives every invocation one key of the tile (its page address from the block table,
//   its score against q held in shared memory, written to shared memory); phase B gives every
//   invocation head-dim elements d = lid + c * TS of the output and accumulates the tile's
//   p_j * v_j[d] with the online-softmax rescale, so lanes read consecutive elements of each
//   value row (coalesced page reads). The tile max is a subgroup max combined across subgroups
//   in shared memory where the device has subgroup arithmetic, else a shared-memory scan. The
//   per-tile loops are unrolled (constant trip counts), so an invocation's loop iterations grow
//   by a few per tile (lavapipe's loop budget, checked by the launcher).
//
// Built per head-dim bound (DMAX) by tools/build_shaders.py (paged_attention.variants.toml);
// the launcher (src/kernels/paged_attention.cpp) uploads the parameter block and passes its
// address as the only push constant.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#define KIND 0
#include "common.glsl"
#include "math.glsl"

#ifndef DMAX
#define DMAX 128
#endif
#ifndef CACHE
#define CACHE 0
#endif
#ifndef TILED
#define TILED 0
#endif
#ifndef TVK_SUBGROUPS
#define TVK_SUBGROUPS 0
#endif
#if TVK_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(push_constant) uniform Push { uint64_t params; } pc;

const float NEG_INF = -1.0 / 0.0;

#if CACHE
layout(local_size_x = 256) in;

// Mirrors CacheParams in src/kernels/paged_attention.cpp (std430). Element strides.
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t key, value, kc, vc, slots, errors;  //   0
  int k_st, k_sh, v_st, v_sh;                  //  48 key / value: token, head strides
  int kc_sb, kc_sh, kc_sn;                     //  64 key cache: block, head, token strides
  int vc_sb, vc_sh, vc_sn;                     //  76
  int tokens, heads, E, Ev;                    //  88
  int block_size, num_blocks, dtype, slot64;   // 104 slot64: slot_mapping is int64
};                                             // 120 bytes

void copy_element(uint64_t src, int si, uint64_t dst, int di, int dt) {
  if (dt == DT_FLOAT32) {
    RefI32(tvk_elem_addr(dst, di, 2)).v = RefI32(tvk_elem_addr(src, si, 2)).v;
  } else {
    RefU16(tvk_elem_addr(dst, di, 1)).v = RefU16(tvk_elem_addr(src, si, 1)).v;
  }
}

void main() {
  Params P = Params(pc.params);
  const uint width = uint(P.E + P.Ev);
  const uint total = uint(P.tokens) * uint(P.heads) * width;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const int64_t capacity = int64_t(P.num_blocks) * int64_t(P.block_size);
  for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += step) {
    const int e = int(idx % width);
    const uint row = idx / width;
    const int h = int(row % uint(P.heads));
    const int t = int(row / uint(P.heads));
    const int64_t slot = P.slot64 != 0 ? RefI64(tvk_elem_addr(P.slots, t, 3)).v
                                       : int64_t(RefI32(tvk_elem_addr(P.slots, t, 2)).v);
    if (slot < 0) continue;
    if (slot >= capacity) {
      tvk_report_index_error(P.errors, TVK_ERR_INDEX_OUT_OF_BOUNDS, slot, capacity, 0);
      continue;
    }
    const int b = int(slot / int64_t(P.block_size));
    const int n = int(slot - int64_t(b) * int64_t(P.block_size));
    if (e < P.E) {
      copy_element(P.key, t * P.k_st + h * P.k_sh + e, P.kc,
                   b * P.kc_sb + h * P.kc_sh + n * P.kc_sn + e, P.dtype);
    } else {
      const int d = e - P.E;
      copy_element(P.value, t * P.v_st + h * P.v_sh + d, P.vc,
                   b * P.vc_sb + h * P.vc_sh + n * P.vc_sn + d, P.dtype);
    }
  }
}

#else  // paged attention

// Mirrors AttentionParams in src/kernels/paged_attention.cpp (std430). Element strides; the
// head dim is contiguous in q, the caches and out.
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t q, k, v, o, block_table, seq_lens, qsl, errors;  //   0
  int q_st, q_sh, o_st, o_sh;                               //  64 token, head strides
  int k_sb, k_sh, k_sn;                                     //  80 cache: block, head, token
  int v_sb, v_sh, v_sn;                                     //  92
  int bt_stride, bt_width;                                  // 104 block table row stride, width
  int tokens, heads, group, num_reqs;                       // 112
  int block_size, E, Ev, dtype;                             // 128
  int flags, window, num_blocks, pad_;                      // 144 flags: 1 causal
  float scale, softcap;                                     // 160
};                                                          // 168 bytes

// The request owning query row t: the last r with qsl[r] <= t (binary search over the
// num_reqs + 1 ascending offsets).
int find_request(Params P, int t) {
  int lo = 0, hi = P.num_reqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (RefI32(tvk_elem_addr(P.qsl, mid, 2)).v <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// The keys [j_begin, j_end) that query row t of request `req` attends to.
ivec2 key_range(Params P, int req, int t) {
  const int q0 = RefI32(tvk_elem_addr(P.qsl, req, 2)).v;
  const int q1 = RefI32(tvk_elem_addr(P.qsl, req + 1, 2)).v;
  int seq_len = RefI32(tvk_elem_addr(P.seq_lens, req, 2)).v;
  const int64_t room = int64_t(P.bt_width) * int64_t(P.block_size);
  if (int64_t(seq_len) > room) {
    tvk_report_index_error(P.errors, TVK_ERR_INDEX_OUT_OF_BOUNDS,
                           int64_t((seq_len - 1) / P.block_size), int64_t(P.bt_width), 1);
    seq_len = int(room);
  }
  const int pos = seq_len - (q1 - q0) + (t - q0);
  int j_begin = 0, j_end = seq_len;
  if ((P.flags & 1) != 0) j_end = min(j_end, pos + 1);
  if (P.window > 0) {
    j_begin = max(0, pos - P.window + 1);
    if ((P.flags & 1) == 0) j_end = min(j_end, pos + P.window);
  }
  return ivec2(j_begin, max(j_begin, j_end));
}

// Block id of key block `jb` of request `req`; a block id outside the cache is kept in `bad`
// (reported once by the caller, after its key loop) and gives -1. No atomics inside the key
// loops: on llvmpipe (lavapipe 22.3) an invocation whose loop calls a function with atomics
// (the error report) silently stops after the loop's first iterations (measured).
int page_of(Params P, int req, int jb, inout int bad) {
  const int b = RefI32(tvk_elem_addr(P.block_table, req * P.bt_stride + jb, 2)).v;
  if (b < 0 || b >= P.num_blocks) {
    bad = b;
    return -1;
  }
  return b;
}

void report_bad_block(Params P, int bad) {
  tvk_report_index_error(P.errors, TVK_ERR_INDEX_OUT_OF_BOUNDS, int64_t(bad),
                         int64_t(P.num_blocks), 0);
}

float cap(Params P, float x) {
  return P.softcap > 0.0 ? P.softcap * tvk_tanh(x / P.softcap) : x;
}

#include "vec4_io.glsl"

#define C4 (DMAX / 4)

#if !TILED
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT = -1;  // q / cache / out dtype (-1: Params)
layout(constant_id = 2) const int SPEC_VEC = 0;  // vec4 rows: 1 q / k, 2 v
layout(constant_id = 3) const int SPEC_E = 0;    // head dim of q / k (0: Params)
layout(constant_id = 4) const int SPEC_EV = 0;   // head dim of v (0: Params)

void main() {
  Params P = Params(pc.params);
  const int dt = SPEC_DT >= 0 ? SPEC_DT : P.dtype;
  const int E = SPEC_E > 0 ? SPEC_E : P.E, Ev = SPEC_EV > 0 ? SPEC_EV : P.Ev;
  const bool vec_qk = (SPEC_VEC & 1) != 0, vec_v = (SPEC_VEC & 2) != 0;
  const uint rows = uint(P.tokens) * uint(P.heads);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint r = gl_GlobalInvocationID.x; r < rows; r += step) {
    const int t = int(r / uint(P.heads)), h = int(r % uint(P.heads));
    const int hk = h / P.group;
    const int req = find_request(P, t);
    const ivec2 range = key_range(P, req, t);
    vec4 qr[C4];
    vec4 acc[C4];
    const int q_base = t * P.q_st + h * P.q_sh;
    [[unroll]] for (int c = 0; c < C4; ++c) {
      qr[c] = 4 * c < E ? load_row4(P.q, dt, q_base, c, E, vec_qk) * P.scale : vec4(0.0);
      acc[c] = vec4(0.0);
    }
    float m = NEG_INF, l = 0.0;
    int page = -1, bad = 0;
    for (int j = range.x; j < range.y; ++j) {
      const int n = j % P.block_size;
      if (page < 0 || n == 0 || j == range.x) page = page_of(P, req, j / P.block_size, bad);
      if (page < 0) continue;
      const int kj = page * P.k_sb + hk * P.k_sh + n * P.k_sn;
      vec4 part = vec4(0.0);
      [[unroll]] for (int c = 0; c < C4; ++c)
        if (4 * c < E) part += qr[c] * load_row4(P.k, dt, kj, c, E, vec_qk);
      const float x = cap(P, (part.x + part.y) + (part.z + part.w));
      if (x > m) {  // online softmax: rescale when the running max grows (from -inf: 0)
        const float corr = tvk_exp(m - x);
        l *= corr;
        [[unroll]] for (int c = 0; c < C4; ++c) acc[c] *= corr;
        m = x;
      }
      const float p = tvk_exp(x - m);
      l += p;
      const int vj = page * P.v_sb + hk * P.v_sh + n * P.v_sn;
      [[unroll]] for (int c = 0; c < C4; ++c)
        if (4 * c < Ev) acc[c] += p * load_row4(P.v, dt, vj, c, Ev, vec_v);
    }
    if (bad != 0) report_bad_block(P, bad);
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    const int o_base = t * P.o_st + h * P.o_sh;
    [[unroll]] for (int c = 0; c < C4; ++c) {
      const vec4 o = acc[c] * inv;
      const int d = 4 * c;
      if (d < Ev) store_f32(P.o, dt, o_base + d, o.x);
      if (d + 1 < Ev) store_f32(P.o, dt, o_base + d + 1, o.y);
      if (d + 2 < Ev) store_f32(P.o, dt, o_base + d + 2, o.z);
      if (d + 3 < Ev) store_f32(P.o, dt, o_base + d + 3, o.w);
    }
  }
}

#else  // TILED

#define TS 64             // keys per tile = invocations per workgroup
#define DPL (DMAX / TS)   // output elements per invocation (DMAX >= TS)
layout(local_size_x = TS) in;
layout(constant_id = 1) const int SPEC_DT = -1;
layout(constant_id = 3) const int SPEC_E = 0;
layout(constant_id = 4) const int SPEC_EV = 0;

shared vec4 q_s[C4];       // the query row, pre-scaled
shared float s_s[TS];      // the tile's scores (-inf: no key)
shared int v_s[TS];        // the tile's value-row offsets
#if TVK_SUBGROUPS
shared float max_s[TS];    // per-subgroup maxima
#endif

void main() {
  Params P = Params(pc.params);
  const int dt = SPEC_DT >= 0 ? SPEC_DT : P.dtype;
  const int E = SPEC_E > 0 ? SPEC_E : P.E, Ev = SPEC_EV > 0 ? SPEC_EV : P.Ev;
  const int lid = int(gl_LocalInvocationID.x);
  const int h = int(gl_WorkGroupID.y);
  const int hk = h / P.group;
  for (int t = int(gl_WorkGroupID.x); t < P.tokens; t += int(gl_NumWorkGroups.x)) {
    const int req = find_request(P, t);
    const ivec2 range = key_range(P, req, t);
    barrier();  // the previous row no longer reads q_s
    const int q_base = t * P.q_st + h * P.q_sh;
    for (int c = lid; c < C4; c += TS)
      q_s[c] = 4 * c < E ? load_row4(P.q, dt, q_base, c, E, false) * P.scale : vec4(0.0);
    float acc[DPL];
    [[unroll]] for (int c = 0; c < DPL; ++c) acc[c] = 0.0;
    float m = NEG_INF, l = 0.0;
    int bad = 0;
    for (int j0 = range.x; j0 < range.y; j0 += TS) {
      barrier();  // q_s written; the previous tile's s_s / v_s no longer read
      // Phase A: this invocation's key.
      const int j = j0 + lid;
      float x = NEG_INF;
      int voff = 0;
      if (j < range.y) {
        const int page = page_of(P, req, j / P.block_size, bad);
        if (page >= 0) {
          const int n = j % P.block_size;
          const int kj = page * P.k_sb + hk * P.k_sh + n * P.k_sn;
          vec4 part = vec4(0.0);
          [[unroll]] for (int c = 0; c < C4; ++c)
            if (4 * c < E) part += q_s[c] * load_row4(P.k, dt, kj, c, E, false);
          x = cap(P, (part.x + part.y) + (part.z + part.w));
          voff = page * P.v_sb + hk * P.v_sh + n * P.v_sn;
        }
      }
      s_s[lid] = x;
      v_s[lid] = voff;
#if TVK_SUBGROUPS
      const float sub_max = subgroupMax(x);
      if (subgroupElect()) max_s[gl_SubgroupID] = sub_max;
      barrier();
      float tile_max = NEG_INF;
      for (uint s = 0; s < gl_NumSubgroups; ++s) tile_max = max(tile_max, max_s[s]);
#else
      barrier();
      float tile_max = NEG_INF;
      [[unroll]] for (int k = 0; k < TS; ++k) tile_max = max(tile_max, s_s[k]);
#endif
      const float m_new = max(m, tile_max);
      if (m_new == NEG_INF) continue;  // uniform: no key of the tile counts
      // Phase B: the tile's values, this invocation's output elements.
      const float corr = tvk_exp(m - m_new);  // 0 while m was -inf
      l *= corr;
      [[unroll]] for (int c = 0; c < DPL; ++c) acc[c] *= corr;
      const int keys = min(TS, range.y - j0);
      [[unroll]] for (int k = 0; k < TS; ++k) {
        if (k < keys) {
          const float p = tvk_exp(s_s[k] - m_new);
          l += p;
          [[unroll]] for (int c = 0; c < DPL; ++c) {
            const int d = lid + c * TS;
            if (d < Ev) acc[c] += p * load_f32(P.v, dt, v_s[k] + d);
          }
        }
      }
      m = m_new;
    }
    if (bad != 0) report_bad_block(P, bad);
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    const int o_base = t * P.o_st + h * P.o_sh;
    [[unroll]] for (int c = 0; c < DPL; ++c) {
      const int d = lid + c * TS;
      if (d < Ev) store_f32(P.o, dt, o_base + d, acc[c] * inv);
    }
  }
}
#endif  // TILED
#endif  // CACHE
