#version 460
// Softmax family along one dim of a contiguous [outer, dim, inner] tensor:
//   OP 0  softmax        y = exp(x - m) / s            m = max_r x, s = sum_r exp(x - m)
//   OP 1  log_softmax    y = (x - m) - log(s)
//   OP 2  softmax backward      gi = y * (g - sum_r g * y)
//   OP 3  log_softmax backward  gi = g - exp(y) * sum_r g
// Math in fp32 for float16 / bfloat16 / float32 operands (KIND_FLOAT32), in fp64 for float64
// (KIND_FLOAT64). The forward pass finds (m, s) in one read with the online rescaling
// s <- s * exp(m_old - m_new), then writes in a second read. NaN and infinities give what the
// CPU's max-then-sum formulation gives: a NaN or +inf in a row makes the whole row NaN
// (inf - inf), a row of -inf is NaN, and -inf elements contribute 0 otherwise.
//
// Built per (op, kind[, subgroups]) by tools/build_shaders.py (softmax.variants.toml).
// ABI (mirrored by SoftmaxPush in src/kernels/softmax.cpp):
//   Row q in [0, rows), rows = outer * inner: o = q / inner, i = q % inner; element r of the
//   row is at (o * dim + r) * inner + i of every operand (all contiguous).
//   Specialization constants: 0 = local_size_x (a power of two), 1 = in dtype, 2 = in2 dtype,
//   3 = out dtype (-1: read from push constants), 4 = mode, 5 = vec (register modes: 1 when
//   the launcher checked that dim % 4 == 0, every operand is float32 / float16 / bfloat16 and
//   every address is 4-element aligned, so rows move in 16- / 8-byte vector accesses).
//   Modes:
//     0  one workgroup per row, the invocations stride over the row with the online (m, s)
//        (coalesced when inner == 1; rows of any length);
//     1  one thread per row (coalesced across threads when inner > 1);
//     2  (float32 math, inner == 1) one workgroup per row, the row held in registers: chunk
//        c = lane + k * lanes (k < R4) of four elements per invocation, so each read is
//        coalesced; the row is read once and written once. Rows longer than 4 * R4 lanes
//        fall back to mode 0's loop;
//     3  (subgroup variants, inner == 1) one subgroup per row, registers as in mode 2 with
//        subgroup reductions only (no barriers); rows too long for the subgroup's registers
//        fall back to the subgroup-wide loop.
//   Register modes compute the CPU's max-then-sum formulas directly (m = max x with NaN
//   propagated, s = sum exp(x - m)), which give the inf / NaN results described above.
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

#ifndef OP
#define OP 0
#endif
#ifndef TVK_SUBGROUPS
#define TVK_SUBGROUPS 0
#endif
#if TVK_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif

#if KIND == KIND_FLOAT64
#define T_INF TVK_F64_INF
#define T_NAN TVK_F64_NAN
#else
#define T_INF TVK_F32_INF
#define T_NAN TVK_F32_NAN
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_IN_DT = -1;
layout(constant_id = 2) const int SPEC_IN2_DT = -1;
layout(constant_id = 3) const int SPEC_OUT_DT = -1;
layout(constant_id = 4) const int SPEC_MODE = 0;
layout(constant_id = 5) const int SPEC_VEC = 0;

const int MODE_STREAM = 0, MODE_THREAD = 1, MODE_REGISTERS = 2, MODE_SUBGROUP_ROW = 3;
// Reduction scopes of the row helpers: who shares one row.
const int SCOPE_THREAD = 0, SCOPE_SUBGROUP = 1, SCOPE_WORKGROUP = 2;

layout(push_constant) uniform Push {
  uint64_t in_addr;   //  0: x (forward) or grad_output (backward)
  uint64_t in2_addr;  //  8: the forward output y (backward)
  uint64_t out_addr;  // 16: y (forward) or grad_input (backward)
  int rows;           // 24
  int dim;            // 28
  int inner;          // 32
  int in_dtype;       // 36
  int in2_dtype;      // 40
  int out_dtype;      // 44
} pc;                 // 48 bytes

int g_in_dt, g_in2_dt, g_out_dt;

shared T sm[gl_WorkGroupSize.x];
#if OP < 2
shared T ss[gl_WorkGroupSize.x];
#endif

T load_x(int i) { return LOAD_T(pc.in_addr, g_in_dt, i); }
T load_y(int i) { return LOAD_T(pc.in2_addr, g_in2_dt, i); }

// Sum over the scope (subgroup or workgroup); every invocation receives the result.
T group_sum(T v, int scope) {
  uint lid = gl_LocalInvocationID.x;
#if TVK_SUBGROUPS
  v = subgroupAdd(v);
  if (scope == SCOPE_SUBGROUP) return v;
  if (subgroupElect()) sm[gl_SubgroupID] = v;
  barrier();
  v = T(0);
  for (uint j = 0u; j < gl_NumSubgroups; ++j) v += sm[j];
#else
  sm[lid] = v;
  barrier();
  for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
    if (lid < h) sm[lid] += sm[lid + h];
    barrier();
  }
  v = sm[0];
#endif
  barrier();  // sm is reused by the next reduction
  return v;
}

// Maximum over the scope with NaN propagated (a NaN anywhere gives NaN).
T group_max(T v, int scope) {
  uint lid = gl_LocalInvocationID.x;
#if TVK_SUBGROUPS
  bool nan = subgroupAny(tvk_isnan(v));
  v = subgroupMax(nan ? -T_INF : v);
  if (nan) v = T_NAN;
  if (scope == SCOPE_SUBGROUP) return v;
  if (subgroupElect()) sm[gl_SubgroupID] = v;
  barrier();
  v = sm[0];
  for (uint j = 1u; j < gl_NumSubgroups; ++j) {
    T o = sm[j];
    v = (tvk_isnan(v) || tvk_isnan(o)) ? T_NAN : max(v, o);
  }
#else
  sm[lid] = v;
  barrier();
  for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
    if (lid < h) {
      T a = sm[lid], b = sm[lid + h];
      sm[lid] = (tvk_isnan(a) || tvk_isnan(b)) ? T_NAN : max(a, b);
    }
    barrier();
  }
  v = sm[0];
#endif
  barrier();
  return v;
}

#if OP < 2
// ---- forward: running (max, sum of exp(x - max)) ----
void add_element(inout T m, inout T s, T x) {
  if (x > m) {
    // A +inf maximum: the CPU computes exp(inf - inf) = NaN for that element.
    s = s * tvk_exp(m - x) + (tvk_isinf(x) ? T_NAN : T(1));
    m = x;
  } else if (x <= m) {
    if (x != -T_INF) s += tvk_exp(x - m);  // exp(x - m) is NaN when x == m == +inf
  } else {  // x or m is NaN
    m = T_NAN;
    s = T_NAN;
  }
}

// (m, s) <- merge with (m2, s2). The factor is skipped when a part already has the maximum
// (inf - inf would be NaN).
void merge(inout T m, inout T s, T m2, T s2) {
  bool nan = tvk_isnan(m) || tvk_isnan(m2);
  T mm = m > m2 ? m : m2;
  T a = m == mm ? s : s * tvk_exp(m - mm);
  T b = m2 == mm ? s2 : s2 * tvk_exp(m2 - mm);
  m = nan ? T_NAN : mm;
  s = nan ? T_NAN : a + b;
}

// Merge over the scope (subgroup or workgroup); every invocation receives the result.
void group_merge(inout T m, inout T s, int scope) {
  uint lid = gl_LocalInvocationID.x;
#if TVK_SUBGROUPS
  bool nan = subgroupAny(tvk_isnan(m));
  T mm = subgroupMax(m);
  T part = m == mm ? s : s * tvk_exp(m - mm);
  T sum = subgroupAdd(part);
  if (nan) mm = T_NAN, sum = T_NAN;
  if (scope == SCOPE_SUBGROUP) {
    m = mm;
    s = sum;
    return;
  }
  if (subgroupElect()) {
    sm[gl_SubgroupID] = mm;
    ss[gl_SubgroupID] = sum;
  }
  barrier();
  m = sm[0];
  s = ss[0];
  for (uint j = 1u; j < gl_NumSubgroups; ++j) merge(m, s, sm[j], ss[j]);
#else
  sm[lid] = m;
  ss[lid] = s;
  barrier();
  for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
    if (lid < h) {
      T m1 = sm[lid], s1 = ss[lid];
      merge(m1, s1, sm[lid + h], ss[lid + h]);
      sm[lid] = m1;
      ss[lid] = s1;
    }
    barrier();
  }
  m = sm[0];
  s = ss[0];
#endif
  barrier();  // the shared arrays are reused by the next row
}

// Row statistics from invocation `first` with step `step`, then the output.
void forward_row(int base, uint first, uint step, int scope) {
  uint n = uint(pc.dim);
  int inner = pc.inner;
  T m = -T_INF, s = T(0);
  for (uint r = first; r < n; r += step) add_element(m, s, load_x(base + int(r) * inner));
  if (scope != SCOPE_THREAD) group_merge(m, s, scope);
#if OP == 0
  for (uint r = first; r < n; r += step) {
    int i = base + int(r) * inner;
    STORE_T(pc.out_addr, g_out_dt, i, tvk_exp(load_x(i) - m) / s);
  }
#else
  T ls = tvk_log(s);
  for (uint r = first; r < n; r += step) {
    int i = base + int(r) * inner;
    STORE_T(pc.out_addr, g_out_dt, i, (load_x(i) - m) - ls);
  }
#endif
}
#else
// ---- backward: one sum per row ----
void backward_row(int base, uint first, uint step, int scope) {
  uint n = uint(pc.dim);
  int inner = pc.inner;
  T acc = T(0);
  for (uint r = first; r < n; r += step) {
    int i = base + int(r) * inner;
#if OP == 2
    acc += load_x(i) * load_y(i);
#else
    acc += load_x(i);
#endif
  }
  if (scope != SCOPE_THREAD) acc = group_sum(acc, scope);
  for (uint r = first; r < n; r += step) {
    int i = base + int(r) * inner;
#if OP == 2
    T gi = load_y(i) * (load_x(i) - acc);
#else
    T gi = load_x(i) - tvk_exp(load_y(i)) * acc;
#endif
    STORE_T(pc.out_addr, g_out_dt, i, gi);
  }
}
#endif

void process_row(uint q, uint first, uint step, int scope) {
  uint inner = uint(pc.inner);
  uint o = q / inner;
  uint i = q - o * inner;
  int base = int(o * uint(pc.dim) * inner + i);
#if OP < 2
  forward_row(base, first, step, scope);
#else
  backward_row(base, first, step, scope);
#endif
}

#if KIND == KIND_FLOAT32
// ---- register modes (inner == 1): the row read once into registers ----
#include "vec4_io.glsl"
#define R4 4  // four-element chunks per invocation: rows of up to 16 * lanes elements

bool element_valid(int c, int j, int n) { return 4 * c + j < n; }

#if OP < 2
void forward_row_registers(int base, uint lane, uint lanes, int scope, bool vec) {
  const int n = pc.dim;
  vec4 xs[R4];
  float m = -T_INF;
  bool nan = false;
  for (int k = 0; k < R4; ++k) {
    const int c = int(lane + uint(k) * lanes);
    xs[k] = 4 * c < n ? load_row4(pc.in_addr, g_in_dt, base, c, n, vec) : vec4(0.0);
    for (int j = 0; j < 4; ++j) {
      if (!element_valid(c, j, n)) continue;
      const float x = xs[k][j];
      nan = nan || tvk_isnan(x);
      m = x > m ? x : m;
    }
  }
  m = group_max(nan ? T_NAN : m, scope);
  float s = 0.0;
  for (int k = 0; k < R4; ++k) {
    const int c = int(lane + uint(k) * lanes);
    for (int j = 0; j < 4; ++j)
      if (element_valid(c, j, n)) s += tvk_exp(xs[k][j] - m);
  }
  s = group_sum(s, scope);
#if OP == 1
  const float ls = tvk_log(s);
#endif
  for (int k = 0; k < R4; ++k) {
    const int c = int(lane + uint(k) * lanes);
    if (4 * c >= n) break;
    vec4 y;
    for (int j = 0; j < 4; ++j) {
#if OP == 0
      y[j] = tvk_exp(xs[k][j] - m) / s;
#else
      y[j] = (xs[k][j] - m) - ls;
#endif
    }
    store_row4_masked(pc.out_addr, g_out_dt, base, c, n, vec, y);
  }
}
#else
void backward_row_registers(int base, uint lane, uint lanes, int scope, bool vec) {
  const int n = pc.dim;
  vec4 gs[R4], ys[R4];
  float acc = 0.0;
  for (int k = 0; k < R4; ++k) {
    const int c = int(lane + uint(k) * lanes);
    const bool live = 4 * c < n;
    gs[k] = live ? load_row4(pc.in_addr, g_in_dt, base, c, n, vec) : vec4(0.0);
    ys[k] = live ? load_row4(pc.in2_addr, g_in2_dt, base, c, n, vec) : vec4(0.0);
    // Elements past n load as 0 and add nothing.
#if OP == 2
    acc += dot(gs[k], ys[k]);
#else
    acc += (gs[k].x + gs[k].y) + (gs[k].z + gs[k].w);
#endif
  }
  acc = group_sum(acc, scope);
  for (int k = 0; k < R4; ++k) {
    const int c = int(lane + uint(k) * lanes);
    if (4 * c >= n) break;
    vec4 gi;
    for (int j = 0; j < 4; ++j) {
#if OP == 2
      gi[j] = ys[k][j] * (gs[k][j] - acc);
#else
      gi[j] = gs[k][j] - tvk_exp(ys[k][j]) * acc;
#endif
    }
    store_row4_masked(pc.out_addr, g_out_dt, base, c, n, vec, gi);
  }
}
#endif

// Row q (inner == 1) shared by `lanes` invocations of the scope: in registers when it fits,
// else the streaming loop.
void process_row_registers(uint q, uint lane, uint lanes, int scope) {
  const int base = int(q * uint(pc.dim));
  if (uint(pc.dim) > 4u * uint(R4) * lanes) {
    process_row(q, lane, lanes, scope);
    return;
  }
#if OP < 2
  forward_row_registers(base, lane, lanes, scope, SPEC_VEC != 0);
#else
  backward_row_registers(base, lane, lanes, scope, SPEC_VEC != 0);
#endif
}
#endif

void main() {
  g_in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  g_in2_dt = SPEC_IN2_DT >= 0 ? SPEC_IN2_DT : pc.in2_dtype;
  g_out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  uint rows = uint(pc.rows);
  if (SPEC_MODE == MODE_THREAD) {
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint q = gl_GlobalInvocationID.x; q < rows; q += step)
      process_row(q, 0u, 1u, SCOPE_THREAD);
    return;
  }
#if KIND == KIND_FLOAT32
  if (SPEC_MODE == MODE_REGISTERS) {
    for (uint q = gl_WorkGroupID.x; q < rows; q += gl_NumWorkGroups.x)
      process_row_registers(q, gl_LocalInvocationID.x, gl_WorkGroupSize.x, SCOPE_WORKGROUP);
    return;
  }
#if TVK_SUBGROUPS
  if (SPEC_MODE == MODE_SUBGROUP_ROW) {
    // Lane numbers from the active invocations: correct for partial subgroups too.
    const uint lane = subgroupExclusiveAdd(1u), lanes = subgroupAdd(1u);
    const uint per_group = gl_NumSubgroups;
    for (uint q = gl_WorkGroupID.x * per_group + gl_SubgroupID; q < rows;
         q += gl_NumWorkGroups.x * per_group)
      process_row_registers(q, lane, lanes, SCOPE_SUBGROUP);
    return;
  }
#endif
#endif
  for (uint q = gl_WorkGroupID.x; q < rows; q += gl_NumWorkGroups.x)
    process_row(q, gl_LocalInvocationID.x, gl_WorkGroupSize.x, SCOPE_WORKGROUP);
}
