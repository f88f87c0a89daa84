#version 460
// Reductions: out[o] = scale * OP_{r} in[o, r] for sum / prod / max / min.
//
// Built per (op, accumulator kind[, subgroups]) by tools/build_shaders.py with defines
//   REDUCE_OP   0 sum, 1 prod, 2 max, 3 min
//   KIND        accumulator kind: KIND_FLOAT32 (float16/bfloat16/float32 inputs), KIND_INT64
//               (all integer inputs) or KIND_FLOAT64
//   TVK_SUBGROUPS  1 in the ".subgroup" variants (GL_KHR_shader_subgroup_arithmetic): used only
//               when the device reports subgroup arithmetic in compute shaders. The shared-
//               memory tree is the portable path; the subgroup variant is a separate module
//               because a module that merely declares the capability is invalid elsewhere.
//
// ABI (mirrored by ReducePush in src/kernels/reduce.cpp):
//   Output index space: out_numel elements described by `out` dims (dim 0 fastest); for each
//   dim, out_strides = output element strides, out_in_strides = input element strides.
//   Reduced index space: red_numel elements over `red` dims with input element strides.
//   When out_ndim <= 1 / red_ndim <= 1 the push constants carry the strides (fast paths);
//   otherwise `geometry` points to a ReduceGeometry block (uploaded params).
//   Split mode (split > 1, workgroup mode only): work item w = o * split + s reduces the
//   reduced indices [s * chunk, min((s + 1) * chunk, red_numel)) of output o and stores the
//   unscaled accumulator at element w of a contiguous buffer of the accumulator dtype; a
//   second reduce over those partials finishes (see reduce.cpp).
//   Specialization constants: 0 = local_size_x (a power of two), 1 = input dtype, 2 = output
//   dtype (-1: read from push constants), 3 = mode (0: one workgroup per output with a tree
//   reduction, 1: one thread per output for small reduced sizes).
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

layout(push_constant) uniform Push {
  uint64_t in_addr;     //  0
  uint64_t out_addr;    //  8
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
} pc;                   // 80 bytes

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ReduceGeometry {
  int out_sizes[8];
  int out_strides[8];
  int out_in_strides[8];
  int red_sizes[8];
  int red_strides[8];
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

shared T sdata[gl_WorkGroupSize.x];

int g_in_dt;
int g_out_dt;

// Output o -> (output offset, input base offset).
void out_offsets(uint o, out int out_off, out int in_off) {
  if (pc.out_ndim <= 1) {
    out_off = int(o) * pc.out_stride0;
    in_off = int(o) * pc.out_in_stride0;
    return;
  }
  ReduceGeometry g = ReduceGeometry(pc.geometry);
  out_off = 0;
  in_off = 0;
  uint rem = o;
  for (int d = 0; d < pc.out_ndim; ++d) {
    uint size = uint(g.out_sizes[d]);
    uint q = rem / size;
    int idx = int(rem - q * size);
    rem = q;
    out_off += idx * g.out_strides[d];
    in_off += idx * g.out_in_strides[d];
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

T finish(T acc) {
#if T_IS_FLOAT
#if KIND == KIND_FLOAT64
  return acc * pc.scale_d;
#else
  return acc * pc.scale_f;
#endif
#else
  return acc;  // integer accumulators are never scaled (checked by the launcher)
#endif
}

#if TVK_SUBGROUPS
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

// Reduces `acc` over the workgroup; the result is valid in invocation 0. Ends with a barrier
// so that sdata can be reused.
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

void main() {
  g_in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  g_out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  uint red_n = uint(pc.red_numel);

  if (SPEC_MODE == 1) {
    // One thread per output: coalesced when outputs are adjacent in the input.
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint o = gl_GlobalInvocationID.x; o < uint(pc.out_numel); o += step) {
      int out_off, base;
      out_offsets(o, out_off, base);
      T acc = IDENTITY;
      for (uint r = 0u; r < red_n; ++r)
        acc = COMBINE(acc, LOAD_T(pc.in_addr, g_in_dt, base + red_offset(r)));
      STORE_T(pc.out_addr, g_out_dt, out_off, finish(acc));
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
    int out_off, base;
    out_offsets(o, out_off, base);
    T acc = IDENTITY;
    if (pc.red_ndim <= 1) {
      int stride = pc.red_stride0;
      for (uint r = begin + lid; r < end; r += gl_WorkGroupSize.x)
        acc = COMBINE(acc, LOAD_T(pc.in_addr, g_in_dt, base + int(r) * stride));
    } else {
      for (uint r = begin + lid; r < end; r += gl_WorkGroupSize.x)
        acc = COMBINE(acc, LOAD_T(pc.in_addr, g_in_dt, base + red_offset(r)));
    }
    acc = workgroup_combine(acc);
    if (lid == 0u) {
      if (split > 1u)
        STORE_T(pc.out_addr, g_out_dt, int(w), acc);  // partial, unscaled
      else
        STORE_T(pc.out_addr, g_out_dt, out_off, finish(acc));
    }
  }
}
