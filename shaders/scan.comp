#version 460
// Inclusive scans (cumsum / cumprod) along one dim of a contiguous [outer, dim, inner] tensor:
// out[o, r, i] = in[o, 0, i] OP ... OP in[o, r, i], accumulated in the KIND type (fp32 for
// float16 / bfloat16 / float32, fp64, int64 for integers; the input is converted to the
// accumulator on load, the output rounded once on store).
//
// Built per (op, kind[, subgroups]) by tools/build_shaders.py (scan.variants.toml):
//   SCAN_OP 0 sum, 1 prod;  KIND as in common.glsl;  TVK_SUBGROUPS 1: subgroup inclusive scans
//   (float32 only) instead of the shared-memory Hillis-Steele scan.
// ABI (mirrored by ScanPush in src/kernels/scan.cpp):
//   Row q in [0, rows), rows = outer * inner: o = q / inner, i = q % inner; element r of the
//   row is at (o * dim + r) * inner + i of both operands.
//   Specialization constants: 0 = local_size_x (a power of two), 1 = in dtype, 2 = out dtype
//   (-1: read from push constants), 3 = mode (0: one workgroup per row, which walks the row in
//   tiles of local_size_x elements with a workgroup scan per tile and a running carry:
//   coalesced when inner == 1; 1: one thread per row with a serial scan: coalesced across
//   threads when inner > 1).
//   Grid: 1-D, any number of workgroups (loops cover the rest).
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

#ifndef SCAN_OP
#define SCAN_OP 0
#endif
#ifndef TVK_SUBGROUPS
#define TVK_SUBGROUPS 0
#endif
#if TVK_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

#if SCAN_OP == 0
#define IDENTITY T(0)
#define COMBINE(x, y) ((x) + (y))
#else
#define IDENTITY T(1)
#define COMBINE(x, y) ((x) * (y))
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_IN_DT = -1;
layout(constant_id = 2) const int SPEC_OUT_DT = -1;
layout(constant_id = 3) const int SPEC_MODE = 0;

layout(push_constant) uniform Push {
  uint64_t in_addr;   //  0
  uint64_t out_addr;  //  8
  int rows;           // 16
  int dim;            // 20
  int inner;          // 24
  int in_dtype;       // 28
  int out_dtype;      // 32
} pc;                 // 40 bytes (36 used)

shared T sdata[gl_WorkGroupSize.x];

int g_in_dt, g_out_dt;

// Inclusive scan of v over the workgroup (invocation order); `total` receives the combination
// of all invocations' values. Starts and ends with a barrier-free state of sdata.
T workgroup_scan(T v, out T total) {
  uint lid = gl_LocalInvocationID.x;
#if TVK_SUBGROUPS
#if SCAN_OP == 0
  T x = subgroupInclusiveAdd(v);
  T sg_total = subgroupAdd(v);
#else
  T x = subgroupInclusiveMul(v);
  T sg_total = subgroupMul(v);
#endif
  if (subgroupElect()) sdata[gl_SubgroupID] = sg_total;
  barrier();
  T before = IDENTITY;
  T all = IDENTITY;
  for (uint j = 0u; j < gl_NumSubgroups; ++j) {
    if (j < gl_SubgroupID) before = COMBINE(before, sdata[j]);
    all = COMBINE(all, sdata[j]);
  }
  barrier();
  total = all;
  return COMBINE(before, x);
#else
  sdata[lid] = v;
  barrier();
  for (uint off = 1u; off < gl_WorkGroupSize.x; off <<= 1) {
    T t = lid >= off ? COMBINE(sdata[lid - off], sdata[lid]) : sdata[lid];
    barrier();
    sdata[lid] = t;
    barrier();
  }
  T x = sdata[lid];
  total = sdata[gl_WorkGroupSize.x - 1u];
  barrier();
  return x;
#endif
}

void main() {
  g_in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  g_out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  uint rows = uint(pc.rows);
  uint n = uint(pc.dim);
  uint inner = uint(pc.inner);
  if (SPEC_MODE == 1) {
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint q = gl_GlobalInvocationID.x; q < rows; q += step) {
      uint o = q / inner;
      int base = int(o * n * inner + (q - o * inner));
      T acc = IDENTITY;
      for (uint r = 0u; r < n; ++r) {
        int i = base + int(r * inner);
        acc = COMBINE(acc, LOAD_T(pc.in_addr, g_in_dt, i));
        STORE_T(pc.out_addr, g_out_dt, i, acc);
      }
    }
    return;
  }
  uint lid = gl_LocalInvocationID.x;
  for (uint q = gl_WorkGroupID.x; q < rows; q += gl_NumWorkGroups.x) {
    uint o = q / inner;
    int base = int(o * n * inner + (q - o * inner));
    T carry = IDENTITY;
    for (uint tile = 0u; tile < n; tile += gl_WorkGroupSize.x) {
      uint r = tile + lid;
      int i = base + int(r * inner);
      T v = r < n ? LOAD_T(pc.in_addr, g_in_dt, i) : IDENTITY;
      T total;
      T x = workgroup_scan(v, total);
      if (r < n) STORE_T(pc.out_addr, g_out_dt, i, COMBINE(carry, x));
      carry = COMBINE(carry, total);
    }
  }
}
