#version 460
// Reductions: out[o] = post(scale * OP_{r} pre(in[o, r])) for sum / prod / max / min, and the
// arg reductions (the extreme value and the index of its first occurrence).
//
// Built per (op, accumulator kind[, subgroups]) by tools/build_shaders.py with defines
//   REDUCE_OP   0 sum, 1 prod, 2 max, 3 min
//   ARG         1 in the argmax / argmin variants (REDUCE_OP 2 / 3): each invocation tracks
//               (value, index); ties keep the smaller index, NaN beats every number and the
//               first NaN wins (PyTorch's CPU semantics).
//   KIND        accumulator kind: KIND_FLOAT32 (float16/bfloat16/float32 inputs), KIND_INT64
//               (all integer inputs) or KIND_FLOAT64
//   TVK_SUBGROUPS  1 in the ".subgroup" variants (GL_KHR_shader_subgroup_arithmetic): used only
//               when the device reports subgroup arithmetic in compute shaders. The shared-
//               memory tree is the portable path; the subgroup variant is a separate module
//               because a module that merely declares the capability is invalid elsewhere.
//
// ABI (mirrored by ReducePush in src/kernels/reduce.cpp):
//   Output index space: out_numel elements described by `out` dims (dim 0 fastest); for each
//   dim, out_strides = output element strides, out_in_strides = input element strides,
//   idx_strides = index output element strides (arg variants).
//   Reduced index space: red_numel elements over `red` dims with input element strides. The
//   index of an arg reduction is the linear reduced index r (dim 0 fastest).
//   When out_ndim <= 1 / red_ndim <= 1 the push constants carry the strides (fast paths);
//   otherwise `geometry` points to a ReduceGeometry block (uploaded params).
//   Split mode (split > 1, workgroup mode only): work item w = o * split + s reduces the
//   reduced indices [s * chunk, min((s + 1) * chunk, red_numel)) of output o and stores the
//   unscaled accumulator (arg: value and int64 index) at element w of contiguous buffers; a
//   second reduce over those partials finishes (see reduce.cpp). In that second pass of an arg
//   reduction `aux_addr` holds the partial indices (int64, at the same element offsets as the
//   partial values) and candidate indices are read from there instead of being r.
//   Pre-op (spec constant 4, ReducePre): 0 none, 1 |x|, 2 x*x, 3 |x|^p, 4 (x - c)^2,
//   5 exp(x - c') with c' = c if finite else 0, 6 (x != 0) (NaN counts as non-zero).
//   Post-op (spec constant 5, ReducePost), applied after the scale: 0 none, 1 sqrt(v),
//   2 v^(1/p), 3 log(v) + c', 4 (v > 0). `c` is read from aux_addr (accumulator dtype, laid
//   out like the output: same element offsets) once per output.
//   Specialization constants: 0 = local_size_x (a power of two), 1 = input dtype, 2 = output
//   dtype (-1: read from push constants), 3 = mode (0: one workgroup per output with a tree
//   reduction, 1: one thread per output for small reduced sizes), 4 = pre-op, 5 = post-op.
//   Grid: 1-D, any number of workgroups (loops cover the rest).
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"
#include "math.glsl"
#include "ops.glsl"

#ifndef REDUCE_OP
#define REDUCE_OP 0
#endif
#ifndef ARG
#define ARG 0
#endif
#ifndef TVK_SUBGROUPS
#define TVK_SUBGROUPS 0
#endif
#if TVK_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_IN_DT = -1;
layout(constant_id = 2) const int SPEC_OUT_DT = -1;
layout(constant_id = 3) const int SPEC_MODE = 0;
layout(constant_id = 4) const int SPEC_PRE = 0;
layout(constant_id = 5) const int SPEC_POST = 0;

layout(push_constant) uniform Push {
  uint64_t in_addr;     //  0
  uint64_t out_addr;    //  8: values (0: not written, arg variants only)
  uint64_t geometry;    // 16: ReduceGeometry address when out_ndim > 1 or red_ndim > 1
#if TVK_FLOAT64
  double scale_d;       // 24
#else
  uint64_t scale_bits;
#endif
  float scale_f;        // 32
  int out_numel;        // 36
  int red_numel;        // 40
  int out_ndim;         // 44
  int red_ndim;         // 48
  int in_dtype;         // 52
  int out_dtype;        // 56
  int split;            // 60: chunks per output (1: no split)
  int chunk;            // 64: reduced elements per chunk
  int red_stride0;      // 68: input stride of the reduced dim (red_ndim <= 1)
  int out_stride0;      // 72: output stride (out_ndim <= 1)
  int out_in_stride0;   // 76: input stride of the output dim (out_ndim <= 1)
  uint64_t aux_addr;    // 80: center c (pre/post ops) or partial indices (arg pass 2)
  uint64_t idx_addr;    // 88: index output (int64, arg variants)
#if TVK_FLOAT64
  double p_d;           // 96: exponent of the |x|^p pre-op and the root post-op
#else
  uint64_t p_bits;
#endif
  float p_f;            // 104
  int idx_stride0;      // 108: index output stride (out_ndim <= 1)
} pc;                   // 112 bytes

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ReduceGeometry {
  int out_sizes[8];
  int out_strides[8];
  int out_in_strides[8];
  int red_sizes[8];
  int red_strides[8];
  int idx_strides[8];
};

#if REDUCE_OP == 0
#define IDENTITY T(0)
#define COMBINE(x, y) ((x) + (y))
#elif REDUCE_OP == 1
#define IDENTITY T(1)
#define COMBINE(x, y) ((x) * (y))
#elif REDUCE_OP == 2
#if KIND == KIND_FLOAT32
#define IDENTITY (-TVK_F32_INF)
#elif KIND == KIND_FLOAT64
#define IDENTITY (-TVK_F64_INF)
#else
#define IDENTITY int64_t(0x8000000000000000ul)
#endif
#define COMBINE(x, y) tvk_maximum(x, y)
#elif REDUCE_OP == 3
#if KIND == KIND_FLOAT32
#define IDENTITY TVK_F32_INF
#elif KIND == KIND_FLOAT64
#define IDENTITY TVK_F64_INF
#else
#define IDENTITY int64_t(0x7ffffffffffffffful)
#endif
#define COMBINE(x, y) tvk_minimum(x, y)
#endif

#if KIND == KIND_FLOAT64
#define ACC_DT DT_FLOAT64
#define SCALE pc.scale_d
#define P pc.p_d
#elif KIND == KIND_FLOAT32
#define ACC_DT DT_FLOAT32
#define SCALE pc.scale_f
#define P pc.p_f
#else
#define ACC_DT DT_INT64
#endif

#define NO_INDEX 0x7fffffff

shared T sdata[gl_WorkGroupSize.x];
#if ARG
shared int sidx[gl_WorkGroupSize.x];
#endif

int g_in_dt;
int g_out_dt;
T g_center;  // c' of the current output (pre-ops 4, 5 and post-op 3)

// Output o -> (output offset, index output offset, input base offset).
void out_offsets(uint o, out int out_off, out int idx_off, out int in_off) {
  if (pc.out_ndim <= 1) {
    out_off = int(o) * pc.out_stride0;
    idx_off = int(o) * pc.idx_stride0;
    in_off = int(o) * pc.out_in_stride0;
    return;
  }
  ReduceGeometry g = ReduceGeometry(pc.geometry);
  out_off = 0;
  idx_off = 0;
  in_off = 0;
  uint rem = o;
  for (int d = 0; d < pc.out_ndim; ++d) {
    uint size = uint(g.out_sizes[d]);
    uint q = rem / size;
    int idx = int(rem - q * size);
    rem = q;
    out_off += idx * g.out_strides[d];
    in_off += idx * g.out_in_strides[d];
#if ARG
    idx_off += idx * g.idx_strides[d];
#endif
  }
}

// Reduced index r -> input offset relative to the output's base offset.
int red_offset(uint r) {
  if (pc.red_ndim <= 1) return int(r) * pc.red_stride0;
  ReduceGeometry g = ReduceGeometry(pc.geometry);
  int off = 0;
  uint rem = r;
  for (int d = 0; d < pc.red_ndim; ++d) {
    uint size = uint(g.red_sizes[d]);
    uint q = rem / size;
    off += int(rem - q * size) * g.red_strides[d];
    rem = q;
  }
  return off;
}

void load_center(int out_off) {
#if T_IS_FLOAT
  if (SPEC_PRE == 4 || SPEC_PRE == 5 || SPEC_POST == 3) {
    T c = LOAD_T(pc.aux_addr, ACC_DT, out_off);
    // exp-based ops shift by the maximum only when it is finite (as PyTorch's logsumexp).
    if ((SPEC_PRE == 5 || SPEC_POST == 3) && tvk_isinf(c)) c = T(0);
    g_center = c;
  }
#endif
}

T pre(T x) {
  if (SPEC_PRE == 1) return x < T(0) ? -x : x;
  if (SPEC_PRE == 2) return x * x;
#if T_IS_FLOAT
  if (SPEC_PRE == 3) return tvk_pow(abs(x), P);
  if (SPEC_PRE == 4) {
    T d = x - g_center;
    return d * d;
  }
  if (SPEC_PRE == 5) return tvk_exp(x - g_center);
#endif
  if (SPEC_PRE == 6) return tvk_truth(x) ? T(1) : T(0);
  return x;
}

T finish(T acc) {
#if T_IS_FLOAT
  T v = acc * SCALE;
  if (SPEC_POST == 1) return sqrt(v);
  if (SPEC_POST == 2) return tvk_pow(v, T(1) / P);
  if (SPEC_POST == 3) return tvk_log(v) + g_center;
  if (SPEC_POST == 4) return v > T(0) ? T(1) : T(0);
  return v;
#else
  // integer accumulators are never scaled (checked by the launcher)
  if (SPEC_POST == 4) return acc > T(0) ? T(1) : T(0);
  return acc;
#endif
}

#if ARG
// Whether candidate (b, ib) replaces (a, ia).
bool arg_better(T b, int ib, T a, int ia) {
#if T_IS_FLOAT
  bool bn = tvk_isnan(b), an = tvk_isnan(a);
  if (an || bn) return bn && (!an || ib < ia);
#endif
#if REDUCE_OP == 2
  return b > a || (b == a && ib < ia);
#else
  return b < a || (b == a && ib < ia);
#endif
}

// Candidate index of reduced element r at input offset `off`.
int cand_index(uint r, int off) {
  if (pc.aux_addr != 0ul) return int(load_i64(pc.aux_addr, DT_INT64, off));
  return int(r);
}
#endif

#if TVK_SUBGROUPS
#if ARG
void subgroup_arg(inout T v, inout int i) {
  bool nan = tvk_isnan(v);
  bool cand;
  T best;
  if (subgroupAny(nan)) {
    best = TVK_F32_NAN;
    cand = nan;
  } else {
#if REDUCE_OP == 2
    best = subgroupMax(v);
#else
    best = subgroupMin(v);
#endif
    cand = v == best;
  }
  i = subgroupMin(cand ? i : NO_INDEX);
  v = best;
}
#else
T subgroup_combine(T v) {
#if REDUCE_OP == 0
  return subgroupAdd(v);
#elif REDUCE_OP == 1
  return subgroupMul(v);
#else
  // subgroupMax/Min leave NaN handling undefined: propagate it explicitly.
  bool any_nan = subgroupAny(tvk_isnan(v));
#if REDUCE_OP == 2
  T r = subgroupMax(v);
#else
  T r = subgroupMin(v);
#endif
  return any_nan ? TVK_F32_NAN : r;
#endif
}
#endif
#endif

// Reduces (acc[, ai]) over the workgroup; the result is valid in invocation 0. Ends with a
// barrier so that the shared arrays can be reused.
#if ARG
void workgroup_combine(inout T acc, inout int ai) {
  uint lid = gl_LocalInvocationID.x;
#if TVK_SUBGROUPS
  subgroup_arg(acc, ai);
  if (subgroupElect()) {
    sdata[gl_SubgroupID] = acc;
    sidx[gl_SubgroupID] = ai;
  }
  barrier();
  if (gl_SubgroupID == 0u) {
    acc = IDENTITY;
    ai = NO_INDEX;
    for (uint j = gl_SubgroupInvocationID; j < gl_NumSubgroups; j += gl_SubgroupSize)
      if (arg_better(sdata[j], sidx[j], acc, ai)) {
        acc = sdata[j];
        ai = sidx[j];
      }
    subgroup_arg(acc, ai);
  }
  barrier();
#else
  sdata[lid] = acc;
  sidx[lid] = ai;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (lid < s && arg_better(sdata[lid + s], sidx[lid + s], sdata[lid], sidx[lid])) {
      sdata[lid] = sdata[lid + s];
      sidx[lid] = sidx[lid + s];
    }
    barrier();
  }
  acc = sdata[0];
  ai = sidx[0];
  barrier();
#endif
}
#else
T workgroup_combine(T acc) {
  uint lid = gl_LocalInvocationID.x;
#if TVK_SUBGROUPS
  acc = subgroup_combine(acc);
  if (subgroupElect()) sdata[gl_SubgroupID] = acc;
  barrier();
  if (gl_SubgroupID == 0u) {
    acc = IDENTITY;
    for (uint j = gl_SubgroupInvocationID; j < gl_NumSubgroups; j += gl_SubgroupSize)
      acc = COMBINE(acc, sdata[j]);
    acc = subgroup_combine(acc);
  }
  barrier();
  return acc;
#else
  sdata[lid] = acc;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (lid < s) sdata[lid] = COMBINE(sdata[lid], sdata[lid + s]);
    barrier();
  }
  T r = sdata[0];
  barrier();
  return r;
#endif
}
#endif

// Accumulates the elements [begin, end) step `step` of the output whose input base is `base`.
#if ARG
void accumulate(inout T acc, inout int ai, int base, uint begin, uint end, uint step) {
  for (uint r = begin; r < end; r += step) {
    int off = base + red_offset(r);
    T x = LOAD_T(pc.in_addr, g_in_dt, off);
    int xi = cand_index(r, off);
    if (arg_better(x, xi, acc, ai)) {
      acc = x;
      ai = xi;
    }
  }
}

void store_result(int out_off, int idx_off, T acc, int ai) {
  if (pc.out_addr != 0ul) STORE_T(pc.out_addr, g_out_dt, out_off, acc);
  store_i64(pc.idx_addr, DT_INT64, idx_off, int64_t(ai));
}
#else
T accumulate(T acc, int base, uint begin, uint end, uint step) {
  if (pc.red_ndim <= 1) {
    int stride = pc.red_stride0;
    for (uint r = begin; r < end; r += step)
      acc = COMBINE(acc, pre(LOAD_T(pc.in_addr, g_in_dt, base + int(r) * stride)));
  } else {
    for (uint r = begin; r < end; r += step)
      acc = COMBINE(acc, pre(LOAD_T(pc.in_addr, g_in_dt, base + red_offset(r))));
  }
  return acc;
}
#endif

void main() {
  g_in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  g_out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  g_center = T(0);
  uint red_n = uint(pc.red_numel);

  if (SPEC_MODE == 1) {
    // One thread per output: coalesced when outputs are adjacent in the input.
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint o = gl_GlobalInvocationID.x; o < uint(pc.out_numel); o += step) {
      int out_off, idx_off, base;
      out_offsets(o, out_off, idx_off, base);
#if ARG
      T acc = IDENTITY;
      int ai = NO_INDEX;
      accumulate(acc, ai, base, 0u, red_n, 1u);
      store_result(out_off, idx_off, acc, ai);
#else
      load_center(out_off);
      T acc = accumulate(IDENTITY, base, 0u, red_n, 1u);
      STORE_T(pc.out_addr, g_out_dt, out_off, finish(acc));
#endif
    }
    return;
  }

  // One workgroup per work item (an output, or an output's chunk in split mode).
  uint split = uint(pc.split);
  uint items = uint(pc.out_numel) * split;
  uint lid = gl_LocalInvocationID.x;
  for (uint w = gl_WorkGroupID.x; w < items; w += gl_NumWorkGroups.x) {
    uint o = w / split;
    uint s = w - o * split;
    uint begin = s * uint(pc.chunk);
    uint end = split == 1u ? red_n : min(red_n, begin + uint(pc.chunk));
    int out_off, idx_off, base;
    out_offsets(o, out_off, idx_off, base);
#if ARG
    T acc = IDENTITY;
    int ai = NO_INDEX;
    accumulate(acc, ai, base, begin + lid, end, gl_WorkGroupSize.x);
    workgroup_combine(acc, ai);
    if (lid == 0u) {
      if (split > 1u)
        store_result(int(w), int(w), acc, ai);  // partials: contiguous values and indices
      else
        store_result(out_off, idx_off, acc, ai);
    }
#else
    load_center(out_off);
    T acc = accumulate(IDENTITY, base, begin + lid, end, gl_WorkGroupSize.x);
    acc = workgroup_combine(acc);
    if (lid == 0u) {
      if (split > 1u)
        STORE_T(pc.out_addr, g_out_dt, int(w), acc);  // partial, unscaled, no post-op
      else
        STORE_T(pc.out_addr, g_out_dt, out_off, finish(acc));
    }
#endif
  }
}
