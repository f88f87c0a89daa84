#version 460
// Inclusive scans (cumsum / cumprod / logcumsumexp / cummax / cummin) along one dim of a
// contiguous [outer, dim, inner] tensor: out[o, r, i] = in[o, 0, i] OP ... OP in[o, r, i],
// accumulated in the KIND type (fp32 for float16 / bfloat16 / float32, fp64, int64 for
// integers and bool; the input is converted to the accumulator on load, the output rounded
// once on store).
//
// Built per (op, kind[, subgroups]) by tools/build_shaders.py (scan.variants.toml):
//   SCAN_OP 0 sum, 1 prod, 2 log-add-exp (float kinds only; the CPU's _log_add_exp_helper:
//   NaN propagates, equal infinities stay), 3 max, 4 min;  KIND as in common.glsl;
//   TVK_SUBGROUPS 1: subgroup inclusive scans (sum / prod, float32 only) instead of the
//   shared-memory Hillis-Steele scan.
//   Max / min scan (value, index) pairs and also write the int64 index of the running
//   extremum to idx_addr, with the CPU's rule: a later element replaces the running one when
//   it is NaN, or when the running one is not NaN and the later one is >= (max) / <= (min)
//   it; so ties take the last index and NaN sticks (a later NaN takes over its index). That
//   is max / min of (value with NaN on top, index) in lexicographic order: associative.
// ABI (mirrored by ScanPush in src/kernels/scan.cpp):
//   Row q in [0, rows), rows = outer * inner: o = q / inner, i = q % inner; element r of the
//   row is at (o * dim + r) * inner + i of both operands.
//   Specialization constants: 0 = local_size_x (a power of two), 1 = in dtype, 2 = out dtype
//   (-1: read from push constants), 3 = mode (0: one workgroup per row, which walks the row in
//   tiles of local_size_x elements with a workgroup scan per tile and a running carry:
//   coalesced when inner == 1; 1: one thread per row with a serial scan: coalesced across
//   threads when inner > 1).
//   Grid: 1-D, any number of workgroups (loops cover the rest).
//   One dispatch scans elements [start, min(start + count, dim)) of every row. A row longer
//   than the device's loop budget takes several dispatches: the running value (and index)
//   crosses them through carry_addr (accumulator type, one per row) / carry_idx_addr (int32),
//   read when start > 0 and written when the range ends before the row does; in workgroup
//   mode count is a multiple of local_size_x except in the last dispatch.
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

#if SCAN_OP >= 2
#include "math.glsl"
#endif
#if KIND == KIND_FLOAT64
#define ACC_DT DT_FLOAT64
#elif T_IS_FLOAT
#define ACC_DT DT_FLOAT32
#else
#define ACC_DT DT_INT64
#endif
#define SCAN_PAIR (SCAN_OP >= 3)
#if KIND == KIND_FLOAT64
#define SCAN_INF uint64BitsToDouble(0x7ff0000000000000ul)
#else
#define SCAN_INF uintBitsToFloat(0x7f800000u)
#endif

#if SCAN_OP == 0
#define IDENTITY T(0)
#define COMBINE(x, y) ((x) + (y))
#elif SCAN_OP == 1
#define IDENTITY T(1)
#define COMBINE(x, y) ((x) * (y))
#elif SCAN_OP == 2
#if !T_IS_FLOAT
#error "log-add-exp scans need a float KIND"
#endif
#define IDENTITY (-SCAN_INF)
#define COMBINE(x, y) log_add_exp(x, y)
// x is the earlier (running) value, y the later element; commutative up to rounding.
T log_add_exp(T x, T y) {
  if (tvk_isnan(x) || tvk_isnan(y)) return x + y;
  T lo = min(x, y), hi = max(x, y);
  if (lo == hi && !tvk_isfinite(lo)) return x;  // -inf with -inf, +inf with +inf
  return hi + tvk_log1p(tvk_exp(lo - hi));
}
#else
// Pairs (value, index): the running extremum's identity loses to every element.
#if T_IS_FLOAT
bool scan_isnan(T x) { return tvk_isnan(x); }
#if SCAN_OP == 3
#define IDENTITY (-SCAN_INF)
#else
#define IDENTITY SCAN_INF
#endif
#else
bool scan_isnan(T x) { return false; }
#if SCAN_OP == 3
#define IDENTITY T(-9223372036854775807l - 1l)
#else
#define IDENTITY T(9223372036854775807l)
#endif
#endif
// Whether the later value y replaces the earlier (running) value x.
bool takes_over(T x, T y) {
#if SCAN_OP == 3
  return scan_isnan(y) || (!scan_isnan(x) && y >= x);
#else
  return scan_isnan(y) || (!scan_isnan(x) && y <= x);
#endif
}
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
  int start;          // 36: first element of the rows this dispatch scans
  uint64_t idx_addr;  // 40: int64 indices (max / min only)
  uint64_t carry_addr;      // 48: running values between dispatches (0: single dispatch)
  uint64_t carry_idx_addr;  // 56: running indices (max / min)
  int count;          // 64: elements per row in this dispatch
  int pad;            // 68
} pc;                 // 72 bytes

shared T sdata[gl_WorkGroupSize.x];
#if SCAN_PAIR
shared int sidx[gl_WorkGroupSize.x];
#endif

int g_in_dt, g_out_dt;

#if !SCAN_PAIR
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
#endif

#if SCAN_PAIR
// Inclusive (value, index) scan over the workgroup in invocation order; (total_v, total_i)
// receive the combination of all invocations' pairs.
void workgroup_scan_pair(inout T v, inout int ix, out T total_v, out int total_i) {
  uint lid = gl_LocalInvocationID.x;
  sdata[lid] = v;
  sidx[lid] = ix;
  barrier();
  for (uint off = 1u; off < gl_WorkGroupSize.x; off <<= 1) {
    T tv = sdata[lid];
    int ti = sidx[lid];
    if (lid >= off) {
      T ev = sdata[lid - off];
      if (!takes_over(ev, tv)) {
        tv = ev;
        ti = sidx[lid - off];
      }
    }
    barrier();
    sdata[lid] = tv;
    sidx[lid] = ti;
    barrier();
  }
  v = sdata[lid];
  ix = sidx[lid];
  total_v = sdata[gl_WorkGroupSize.x - 1u];
  total_i = sidx[gl_WorkGroupSize.x - 1u];
  barrier();
}
#endif

void main() {
  g_in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  g_out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  uint rows = uint(pc.rows);
  uint n = uint(pc.dim);
  uint inner = uint(pc.inner);
  uint start = uint(pc.start);
  uint end = min(start + uint(pc.count), n);
  bool carry_in = start > 0u;
  bool carry_out = end < n;
  if (SPEC_MODE == 1) {
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint q = gl_GlobalInvocationID.x; q < rows; q += step) {
      uint o = q / inner;
      int base = int(o * n * inner + (q - o * inner));
      T acc = carry_in ? LOAD_T(pc.carry_addr, ACC_DT, int(q)) : IDENTITY;
#if SCAN_PAIR
      int acc_i = carry_in ? load_i32(pc.carry_idx_addr, DT_INT32, int(q)) : 0;
      for (uint r = start; r < end; ++r) {
        int i = base + int(r * inner);
        T x = LOAD_T(pc.in_addr, g_in_dt, i);
        if (r == 0u || takes_over(acc, x)) {
          acc = x;
          acc_i = int(r);
        }
        STORE_T(pc.out_addr, g_out_dt, i, acc);
        store_i64(pc.idx_addr, DT_INT64, i, int64_t(acc_i));
      }
      if (carry_out) store_i32(pc.carry_idx_addr, DT_INT32, int(q), acc_i);
#else
      for (uint r = start; r < end; ++r) {
        int i = base + int(r * inner);
        acc = COMBINE(acc, LOAD_T(pc.in_addr, g_in_dt, i));
        STORE_T(pc.out_addr, g_out_dt, i, acc);
      }
#endif
      if (carry_out) STORE_T(pc.carry_addr, ACC_DT, int(q), acc);
    }
    return;
  }
  uint lid = gl_LocalInvocationID.x;
  for (uint q = gl_WorkGroupID.x; q < rows; q += gl_NumWorkGroups.x) {
    uint o = q / inner;
    int base = int(o * n * inner + (q - o * inner));
    T carry = carry_in ? LOAD_T(pc.carry_addr, ACC_DT, int(q)) : IDENTITY;
#if SCAN_PAIR
    int carry_i = carry_in ? load_i32(pc.carry_idx_addr, DT_INT32, int(q)) : 0;
    for (uint tile = start; tile < end; tile += gl_WorkGroupSize.x) {
      uint r = tile + lid;
      int i = base + int(r * inner);
      // Padding past the range's end comes last in invocation order, so it never reaches a
      // valid element; only the last tile of a row has padding, and its total is not used.
      T v = r < end ? LOAD_T(pc.in_addr, g_in_dt, i) : IDENTITY;
      int ix = int(r);
      T total_v;
      int total_i;
      workgroup_scan_pair(v, ix, total_v, total_i);
      if (r < end) {
        // The carry is the earlier pair; element 0 of the row always takes over.
        if (tile > 0u && !takes_over(carry, v)) {
          v = carry;
          ix = carry_i;
        }
        STORE_T(pc.out_addr, g_out_dt, i, v);
        store_i64(pc.idx_addr, DT_INT64, i, int64_t(ix));
      }
      if (tile == 0u || takes_over(carry, total_v)) {
        carry = total_v;
        carry_i = total_i;
      }
    }
    if (carry_out && lid == 0u) store_i32(pc.carry_idx_addr, DT_INT32, int(q), carry_i);
#else
    for (uint tile = start; tile < end; tile += gl_WorkGroupSize.x) {
      uint r = tile + lid;
      int i = base + int(r * inner);
      T v = r < end ? LOAD_T(pc.in_addr, g_in_dt, i) : IDENTITY;
      T total;
      T x = workgroup_scan(v, total);
      if (r < end) STORE_T(pc.out_addr, g_out_dt, i, COMBINE(carry, x));
      carry = COMBINE(carry, total);
    }
#endif
    if (carry_out && lid == 0u) STORE_T(pc.carry_addr, ACC_DT, int(q), carry);
  }
}
