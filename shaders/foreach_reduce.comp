#version 460
// Multi-tensor reductions (_foreach_norm, _foreach_max, _foreach_powsum): one 0-dim result per
// tensor of a list, in two dispatches whatever the number of tensors.
//
//   pass 0 (partials): each tensor is cut into chunks of `chunk` elements (a multiple of the
//     workgroup size); a workgroup takes chunk g (grid-stride), finds its tensor by binary
//     search over the entries' first_chunk, reduces pre(x) over the chunk (strided per
//     invocation, then a shared-memory tree or subgroup arithmetic) and stores the unscaled
//     accumulator at partials[g].
//   pass 1 (finish): a workgroup takes entry e (grid-stride), reduces partials[first_chunk ..
//     first_chunk + nchunks) in a fixed order, applies post() and stores the result, converted
//     to the output dtype, at element 0 of the entry's output. An entry without chunks (an
//     empty tensor) gets post(identity).
// No atomics: the combine order depends only on the sizes and the workgroup size, so results
// are deterministic.
//
// Built per (op, accumulator kind[, subgroups]) by tools/build_shaders.py from
// foreach_reduce.variants.toml with defines
//   REDUCE_OP   0 sum, 2 max, 3 min (NaN-propagating, ops.glsl tvk_maximum / tvk_minimum)
//   KIND        accumulator kind: KIND_FLOAT32 (float16 / bfloat16 / float32 inputs) or
//               KIND_FLOAT64
//   TVK_SUBGROUPS  1 in the ".subgroup" variants (GL_KHR_shader_subgroup_arithmetic), used only
//               when the device reports subgroup arithmetic; the shared-memory tree is the
//               portable path.
// ABI (mirrored by ForeachReducePush / ForeachReduceEntryBlock in src/kernels/foreach_reduce.cpp):
//   Specialization constants: 0 = local_size_x (a power of two), 1 = input dtype, 2 = output
//   dtype (-1: from the push constants), 3 = pass (0 partials, 1 finish), 4 = pre-op
//   (kernels::ReducePre: 0 none, 1 |x|, 2 x*x, 3 |x|^p, 6 x != 0), 5 = post-op
//   (kernels::ReducePost: 0 none, 1 sqrt, 2 v^(1/p)).
//   Partials are stored in the accumulator type (float32 / float64), contiguous.
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
layout(constant_id = 3) const int SPEC_PASS = 0;
layout(constant_id = 4) const int SPEC_PRE = 0;
layout(constant_id = 5) const int SPEC_POST = 0;

layout(push_constant) uniform Push {
  uint64_t entries;   //  0: ForeachReduceList address
  uint64_t partials;  //  8: accumulators, one per chunk
#if TVK_FLOAT64
  double p_d;         // 16: exponent of |x|^p and of the root
#else
  uint64_t p_bits;
#endif
  float p_f;          // 24
  int count;          // 28: entries
  int total_chunks;   // 32
  int chunk;          // 36: elements per chunk
  int in_dtype;       // 40
  int out_dtype;      // 44
} pc;                 // 48 bytes

struct ForeachReduceEntry {
  uint64_t in_addr;   // element 0 of the dense input
  uint64_t out_addr;  // the 0-dim output
  int numel;          // < 2^31
  int first_chunk;    // ascending over the entries
  int nchunks;        // ceil(numel / chunk)
  int pad;
};  // 32 bytes

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ForeachReduceList {
  ForeachReduceEntry e[];
};

#if REDUCE_OP == 0
#define IDENTITY T(0)
#define COMBINE(x, y) ((x) + (y))
#elif REDUCE_OP == 2
#if KIND == KIND_FLOAT64
#define IDENTITY (-TVK_F64_INF)
#else
#define IDENTITY (-TVK_F32_INF)
#endif
#define COMBINE(x, y) tvk_maximum(x, y)
#else
#if KIND == KIND_FLOAT64
#define IDENTITY TVK_F64_INF
#else
#define IDENTITY TVK_F32_INF
#endif
#define COMBINE(x, y) tvk_minimum(x, y)
#endif

#if KIND == KIND_FLOAT64
#define ACC_DT DT_FLOAT64
#define P pc.p_d
#else
#define ACC_DT DT_FLOAT32
#define P pc.p_f
#endif

shared T sdata[gl_WorkGroupSize.x];

T pre(T x) {
  if (SPEC_PRE == 1) return abs(x);
  if (SPEC_PRE == 2) return x * x;
  if (SPEC_PRE == 3) return tvk_pow(abs(x), P);
  if (SPEC_PRE == 6) return tvk_truth(x) ? T(1) : T(0);
  return x;
}

T finish(T v) {
  if (SPEC_POST == 1) return sqrt(v);
  if (SPEC_POST == 2) return tvk_pow(v, T(1) / P);
  return v;
}

#if TVK_SUBGROUPS
T subgroup_combine(T v) {
#if REDUCE_OP == 0
  return subgroupAdd(v);
#else
  // subgroupMax / Min leave NaN handling undefined: propagate it explicitly.
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

// Combines `acc` over the workgroup; the result is valid in invocation 0. Ends with a barrier
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
  int in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  int out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  ForeachReduceList list = ForeachReduceList(pc.entries);
  uint lid = gl_LocalInvocationID.x;
  uint wg = gl_WorkGroupSize.x;

  if (SPEC_PASS == 0) {
    for (uint g = gl_WorkGroupID.x; g < uint(pc.total_chunks); g += gl_NumWorkGroups.x) {
      int lo = 0;
      int hi = pc.count - 1;
      while (lo < hi) {  // the last entry with first_chunk <= g (skips empty entries)
        int mid = (lo + hi + 1) >> 1;
        if (uint(list.e[mid].first_chunk) <= g) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      uint begin = (g - uint(list.e[lo].first_chunk)) * uint(pc.chunk);
      uint end = min(begin + uint(pc.chunk), uint(list.e[lo].numel));
      uint64_t in_addr = list.e[lo].in_addr;
      T acc = IDENTITY;
      for (uint i = begin + lid; i < end; i += wg)
        acc = COMBINE(acc, pre(LOAD_T(in_addr, in_dt, int(i))));
      acc = workgroup_combine(acc);
      if (lid == 0u) STORE_T(pc.partials, ACC_DT, int(g), acc);
    }
  } else {
    for (uint e = gl_WorkGroupID.x; e < uint(pc.count); e += gl_NumWorkGroups.x) {
      uint first = uint(list.e[e].first_chunk);
      uint n = uint(list.e[e].nchunks);
      T acc = IDENTITY;
      for (uint j = lid; j < n; j += wg)
        acc = COMBINE(acc, LOAD_T(pc.partials, ACC_DT, int(first + j)));
      acc = workgroup_combine(acc);
      if (lid == 0u) STORE_T(list.e[e].out_addr, out_dt, 0, finish(acc));
    }
  }
}
