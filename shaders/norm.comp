#version 460
// Normalization family (batch / layer / group / RMS norm), forward and backward.
//
// Every op views its (contiguous) tensor as [outer, C, inner] and works per "segment" c: the
// outer * inner elements (o, c, i) at (o * C + c) * inner + i, r = o * inner + i in [0, L).
//   layer / RMS norm: outer = 1, C = rows, inner = normalized size      (LAYOUT_ROW)
//   batch norm:       outer = N, C = channels, inner = spatial size     (LAYOUT_CHANNEL)
//   group norm:       outer = 1, C = N * groups, inner = C/groups * HxW (LAYOUT_GROUP)
// The param-gradient op (OP 2) instead reduces per parameter p of [outer, P, inner]:
//   layer / RMS norm: outer = rows, P = normalized size, inner = 1; group norm: outer = N,
//   P = channels, inner = HxW. (Batch norm's parameter gradients come out of OP 1.)
//
//   OP 0  forward: segment statistics, then y = (x - mean) * rstd * w + b.
//         Statistics: two-pass (mean, then the sum of squared deviations) in fp32 (fp64 for
//         KIND_FLOAT64), or read from running stats (FLAG_RUNNING: slot mean = running_mean,
//         slot rstd = running_var, rstd = 1 / sqrt(var + eps)). Without FLAG_CENTER (RMS
//         norm) mean = 0 and var = mean(x^2). An empty segment gives mean 0, rstd NaN (the
//         CPU's result). Writes save_mean / save_rstd where their addresses are non-zero and,
//         with FLAG_UPDATE, running_mean / running_var (momentum; unbiased variance).
//   OP 1  input gradient (and batch norm's dweight / dbias): with xh = (x - mean) * rstd and
//         g = dy * w, dx = rstd * (g - mean(g) - xh * mean(g * xh)) (FLAG_TRAIN; without
//         FLAG_CENTER the mean(g) term is dropped), or dx = g * rstd (statistics constant:
//         batch norm in eval mode). LAYOUT_CHANNEL also writes dweight[c] = sum dy * xh and
//         dbias[c] = sum dy where those addresses are non-zero.
//   OP 2  parameter gradients of layer / RMS / group norm: dweight[p] = sum dy * xh,
//         dbias[p] = sum dy over the elements that parameter p scales.
//
// ABI (mirrored by NormPush in src/kernels/norm.cpp): see Push. Address slots per op:
//         a0   a1   a2  a3  a4          a5           a6           a7
//   OP 0  x    y    w   b   save_mean   save_rstd    running_mean running_var
//   OP 1  x    dx   w   dy  mean        rstd         dweight      dbias
//   OP 2  x    -    -   dy  mean        rstd         dweight      dbias
// (FLAG_RUNNING: slots a4 / a5 hold running_mean / running_var, typed dt_stat.)
// FLAG_RESIDUAL (OP 0, layer / RMS norm): the normalized input is h = x + residual, rounded
// to dt_run (the dtype of x, residual and h), with the residual at a6; h is stored at a7
// (the fused residual-add + norm of torch.compile, one read of x and of the residual).
// Any address but x, dy and (OP 1/2) the statistics may be 0: not read / not written.
// Specialization constants: 0 = local_size_x (a power of two), 1..6 = dtypes of x, out
// (y / dx), dy, params (w, b, dweight, dbias), stats (a4, a5), running stats (a6, a7)
// (-1: read from push constants), 7 = mode, 8 = vec (register modes: 1 when the launcher
// checked that the row length is a multiple of 4, every operand read or written row-wise
// (x, y / dx, dy, w, b) is float32 / float16 / bfloat16 and 4-element aligned).
// Modes:
//   0  one workgroup per segment, invocations stride over it;
//   1  one invocation per segment, coalesced across invocations when inner is small;
//   2  (float32 math; layer / RMS norm forward and input gradient: LAYOUT_ROW, outer == 1,
//      no running statistics) one workgroup per row, the row held in registers (chunks of
//      four elements c = lane + k * lanes, k < R4, so reads are coalesced): x (and dy) are
//      read once, the statistics reduced from registers, y (dx) written once. Rows longer
//      than 4 * R4 lanes fall back to mode 0's loops;
//   3  (subgroup variants, same ops) one subgroup per row, registers as in mode 2 and
//      subgroup reductions only (no shared memory, no barriers).
// Grid: 1-D, any number of workgroups (loops cover the rest).
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
#endif

#if KIND == KIND_FLOAT64
#define T_NAN TVK_F64_NAN
#else
#define T_NAN TVK_F32_NAN
#endif

#define LAYOUT_ROW 0
#define LAYOUT_CHANNEL 1
#define LAYOUT_GROUP 2

#define FLAG_CENTER 1
#define FLAG_RUNNING 2
#define FLAG_UPDATE 4
#define FLAG_TRAIN 8
#define FLAG_RESIDUAL 16  // OP 0, LAYOUT_ROW: the input is x + residual (a6), also stored (a7)

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_X_DT = -1;
layout(constant_id = 2) const int SPEC_OUT_DT = -1;
layout(constant_id = 3) const int SPEC_DY_DT = -1;
layout(constant_id = 4) const int SPEC_PARAM_DT = -1;
layout(constant_id = 5) const int SPEC_STAT_DT = -1;
layout(constant_id = 6) const int SPEC_RUN_DT = -1;
layout(constant_id = 7) const int SPEC_MODE = 0;
layout(constant_id = 8) const int SPEC_VEC = 0;

const int MODE_STREAM = 0, MODE_THREAD = 1, MODE_REGISTERS = 2, MODE_SUBGROUP_ROW = 3;
// Reduction scopes: who shares one segment.
const int SCOPE_THREAD = 0, SCOPE_SUBGROUP = 1, SCOPE_WORKGROUP = 2;

layout(push_constant) uniform Push {
  uint64_t a[8];      //   0: address slots (see the table above)
  uint64_t eps;       //  64: bits of eps (float64 kind: a double; else a float in the low word)
  uint64_t momentum;  //  72: bits of the momentum, as eps
  int outer;          //  80
  int channels;       //  84: C (segments) or P (OP 2)
  int inner;          //  88
  int groups;         //  92: group norm: groups per sample
  int hw;             //  96: group norm: spatial size per channel
  int layout_flags;   // 100: layout | flags << 4
  int x_dt;           // 104
  int out_dt;         // 108
  int dy_dt;          // 112
  int param_dt;       // 116
  int stat_dt;        // 120
  int run_dt;         // 124
} pc;                 // 128 bytes

int g_x_dt, g_out_dt, g_dy_dt, g_param_dt, g_stat_dt, g_run_dt;
int g_layout, g_flags;
T g_eps, g_momentum;

shared T sa[gl_WorkGroupSize.x];
shared T sb[gl_WorkGroupSize.x];

T scalar_of(uint64_t bits) {
#if KIND == KIND_FLOAT64
  return uint64BitsToDouble(bits);
#else
  return uintBitsToFloat(uint(bits & 0xffffffffUL));
#endif
}

bool has(int flag) { return (g_flags & flag) != 0; }

// Element offset of (o, c, i) in [outer, C, inner], r = o * inner + i.
int elem(uint c, uint r) {
  uint inner = uint(pc.inner);
  uint o = r / inner;
  uint i = r - o * inner;
  return int((o * uint(pc.channels) + c) * inner + i);
}

// Index of the parameter (w, b) that scales element r of segment c (OP 0 / 1).
int param_index(uint c, uint r) {
  if (g_layout == LAYOUT_CHANNEL) return int(c);
  uint i = r % uint(pc.inner);
  if (g_layout == LAYOUT_ROW) return int(i);
  uint groups = uint(pc.groups);
  uint group_channels = uint(pc.inner) / uint(pc.hw);
  return int((c % groups) * group_channels + i / uint(pc.hw));
}

T load_param(int slot, int i, T dflt) {
  return pc.a[slot] != 0UL ? LOAD_T(pc.a[slot], g_param_dt, i) : dflt;
}

// The (mean, rstd) of statistics index s from the stat slots.
void load_stats(int s, out T mean, out T rstd) {
  mean = has(FLAG_CENTER) ? LOAD_T(pc.a[4], g_stat_dt, s) : T(0);
  T v = LOAD_T(pc.a[5], g_stat_dt, s);
  rstd = has(FLAG_RUNNING) ? T(1) / sqrt(v + g_eps) : v;
}

#if OP == 0
// Element e of the normalized input: x, or x + residual rounded to its dtype (FLAG_RESIDUAL).
T load_input(int e) {
  T v = LOAD_T(pc.a[0], g_x_dt, e);
  if (has(FLAG_RESIDUAL)) v = tvk_round_to(v + LOAD_T(pc.a[6], g_run_dt, e), g_run_dt);
  return v;
}
#endif

// ---- sums over the scope: every invocation receives the totals ----
void group_sum2(inout T a, inout T b, int scope) {
  if (scope == SCOPE_THREAD) return;
  uint lid = gl_LocalInvocationID.x;
#if TVK_SUBGROUPS
  a = subgroupAdd(a);
  b = subgroupAdd(b);
  if (scope == SCOPE_SUBGROUP) return;
  if (subgroupElect()) {
    sa[gl_SubgroupID] = a;
    sb[gl_SubgroupID] = b;
  }
  barrier();
  a = T(0);
  b = T(0);
  for (uint j = 0u; j < gl_NumSubgroups; ++j) {
    a += sa[j];
    b += sb[j];
  }
#else
  sa[lid] = a;
  sb[lid] = b;
  barrier();
  for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
    if (lid < h) {
      sa[lid] += sa[lid + h];
      sb[lid] += sb[lid + h];
    }
    barrier();
  }
  a = sa[0];
  b = sb[0];
#endif
  barrier();  // the shared arrays are reused by the next reduction
}

#if OP == 0
void forward_segment(uint c, uint first, uint step, int scope) {
  uint n = uint(pc.outer) * uint(pc.inner);
  T mean, rstd;
  if (has(FLAG_RUNNING)) {
    load_stats(int(c), mean, rstd);
  } else {
    T s = T(0), unused = T(0);
    mean = T(0);
    if (has(FLAG_CENTER)) {
      // Shifted by the segment's first element: a constant segment has mean exactly x0, so
      // its deviations and its normalized values are exactly 0 (as the CPU's Welford
      // moments give), and the sum carries less cancellation error in general.
      T x0 = n > 0u ? load_input(elem(c, 0u)) : T(0);
      for (uint r = first; r < n; r += step) s += load_input(elem(c, r)) - x0;
      group_sum2(s, unused, scope);
      mean = n > 0u ? x0 + s / T(n) : T(0);
    }
    T m2 = T(0);
    for (uint r = first; r < n; r += step) {
      T d = load_input(elem(c, r)) - mean;
      m2 += d * d;
    }
    group_sum2(m2, unused, scope);
    T var = n > 0u ? m2 / T(n) : T_NAN;
    rstd = T(1) / sqrt(var + g_eps);
    if (first == 0u) {
      if (pc.a[4] != 0UL) STORE_T(pc.a[4], g_stat_dt, int(c), mean);
      if (pc.a[5] != 0UL) STORE_T(pc.a[5], g_stat_dt, int(c), rstd);
      if (has(FLAG_UPDATE)) {
        T unbiased = n > 1u ? m2 / T(n - 1u) : T_NAN;
        T rm = LOAD_T(pc.a[6], g_run_dt, int(c));
        T rv = LOAD_T(pc.a[7], g_run_dt, int(c));
        STORE_T(pc.a[6], g_run_dt, int(c), g_momentum * mean + (T(1) - g_momentum) * rm);
        STORE_T(pc.a[7], g_run_dt, int(c), g_momentum * unbiased + (T(1) - g_momentum) * rv);
      }
    }
  }
  if (pc.a[1] == 0UL && !has(FLAG_RESIDUAL)) return;
  for (uint r = first; r < n; r += step) {
    int e = elem(c, r);
    int p = param_index(c, r);
    const T xv = load_input(e);
    if (has(FLAG_RESIDUAL)) STORE_T(pc.a[7], g_run_dt, e, xv);
    if (pc.a[1] == 0UL) continue;
    T y = (xv - mean) * rstd;
    y = y * load_param(2, p, T(1)) + load_param(3, p, T(0));
    STORE_T(pc.a[1], g_out_dt, e, y);
  }
}
#elif OP == 1
void backward_segment(uint c, uint first, uint step, int scope) {
  uint n = uint(pc.outer) * uint(pc.inner);
  T mean, rstd;
  load_stats(int(c), mean, rstd);
  bool per_channel = g_layout == LAYOUT_CHANNEL;
  bool param_grads = per_channel && (pc.a[6] != 0UL || pc.a[7] != 0UL);
  T s1 = T(0), s2 = T(0);  // sum g, sum g * xh (per channel: of dy, the weight is constant)
  if (has(FLAG_TRAIN) || param_grads) {
    for (uint r = first; r < n; r += step) {
      int e = elem(c, r);
      T g = LOAD_T(pc.a[3], g_dy_dt, e);
      if (!per_channel) g *= load_param(2, param_index(c, r), T(1));
      T xh = (LOAD_T(pc.a[0], g_x_dt, e) - mean) * rstd;
      s1 += g;
      s2 += g * xh;
    }
    group_sum2(s1, s2, scope);
  }
  T wc = T(1);
  if (per_channel) {
    if (first == 0u) {
      if (pc.a[6] != 0UL) STORE_T(pc.a[6], g_param_dt, int(c), s2);
      if (pc.a[7] != 0UL) STORE_T(pc.a[7], g_param_dt, int(c), s1);
    }
    wc = load_param(2, int(c), T(1));
    s1 *= wc;
    s2 *= wc;
  }
  if (pc.a[1] == 0UL) return;
  T inv_n = n > 0u ? T(1) / T(n) : T(0);
  T mean_g = has(FLAG_CENTER) ? s1 * inv_n : T(0);
  T mean_gxh = s2 * inv_n;
  for (uint r = first; r < n; r += step) {
    int e = elem(c, r);
    T g = LOAD_T(pc.a[3], g_dy_dt, e) * (per_channel ? wc : load_param(2, param_index(c, r), T(1)));
    T dx;
    if (has(FLAG_TRAIN)) {
      T xh = (LOAD_T(pc.a[0], g_x_dt, e) - mean) * rstd;
      dx = rstd * (g - mean_g - xh * mean_gxh);
    } else {
      dx = g * rstd;
    }
    STORE_T(pc.a[1], g_out_dt, e, dx);
  }
}
#else
// Statistics index of element (o, p, i) in [outer, P, inner].
int stat_index(uint o, uint p) {
  if (g_layout == LAYOUT_ROW) return int(o);
  uint group_channels = uint(pc.channels) / uint(pc.groups);
  return int(o * uint(pc.groups) + p / group_channels);
}

void param_grad(uint p, uint first, uint step, int scope) {
  uint n = uint(pc.outer) * uint(pc.inner);
  uint inner = uint(pc.inner);
  T dw = T(0), db = T(0);
  for (uint r = first; r < n; r += step) {
    uint o = r / inner;
    int e = elem(p, r);
    T mean, rstd;
    load_stats(stat_index(o, p), mean, rstd);
    T dy = LOAD_T(pc.a[3], g_dy_dt, e);
    dw += dy * (LOAD_T(pc.a[0], g_x_dt, e) - mean) * rstd;
    db += dy;
  }
  group_sum2(dw, db, scope);
  if (first == 0u) {
    if (pc.a[6] != 0UL) STORE_T(pc.a[6], g_param_dt, int(p), dw);
    if (pc.a[7] != 0UL) STORE_T(pc.a[7], g_param_dt, int(p), db);
  }
}
#endif

void process(uint c, uint first, uint step, int scope) {
#if OP == 0
  forward_segment(c, first, step, scope);
#elif OP == 1
  backward_segment(c, first, step, scope);
#else
  param_grad(c, first, step, scope);
#endif
}


#if KIND == KIND_FLOAT32 && OP < 2
// ---- register modes (LAYOUT_ROW, outer == 1): row c is elements c * inner .. + inner ----
#include "vec4_io.glsl"
#define R4 4  // four-element chunks per invocation: rows of up to 16 * lanes elements

// w (slot 2) and b (slot 3) for chunk `ch` of the row, or their defaults when absent.
vec4 load_param4(int slot, int ch, int n, bool vec, float dflt) {
  return pc.a[slot] != 0UL ? load_row4(pc.a[slot], g_param_dt, 0, ch, n, vec) : vec4(dflt);
}

#if OP == 0
void forward_row_registers(uint c, uint lane, uint lanes, int scope, bool vec) {
  const int n = pc.inner;
  const int base = int(c) * n;
  vec4 xs[R4];
  const bool residual = has(FLAG_RESIDUAL);
  for (int k = 0; k < R4; ++k) {
    const int ch = int(lane + uint(k) * lanes);
    if (4 * ch >= n) {
      xs[k] = vec4(0.0);
      continue;
    }
    xs[k] = load_row4(pc.a[0], g_x_dt, base, ch, n, vec);
    if (residual) {  // h = x + residual in its dtype, stored as it is read
      const vec4 h = xs[k] + load_row4(pc.a[6], g_run_dt, base, ch, n, vec);
      xs[k] = vec4(tvk_round_to(h.x, g_run_dt), tvk_round_to(h.y, g_run_dt),
                   tvk_round_to(h.z, g_run_dt), tvk_round_to(h.w, g_run_dt));
      store_row4_masked(pc.a[7], g_run_dt, base, ch, n, vec, xs[k]);
    }
  }
  float mean = 0.0, unused = 0.0;
  if (has(FLAG_CENTER)) {
    // Shifted by the row's first element, as forward_segment (exact for constant rows).
    const float x0 = n > 0 ? load_input(base) : 0.0;
    float s = 0.0;
    for (int k = 0; k < R4; ++k) {
      const int ch = int(lane + uint(k) * lanes);
      for (int j = 0; j < 4; ++j)
        if (4 * ch + j < n) s += xs[k][j] - x0;
    }
    group_sum2(s, unused, scope);
    mean = n > 0 ? x0 + s / float(n) : 0.0;
  }
  float m2 = 0.0;
  for (int k = 0; k < R4; ++k) {
    const int ch = int(lane + uint(k) * lanes);
    for (int j = 0; j < 4; ++j) {
      const float d = xs[k][j] - mean;
      if (4 * ch + j < n) m2 += d * d;
    }
  }
  group_sum2(m2, unused, scope);
  const float rstd = 1.0 / sqrt((n > 0 ? m2 / float(n) : T_NAN) + g_eps);
  if (lane == 0u) {
    if (pc.a[4] != 0UL) STORE_T(pc.a[4], g_stat_dt, int(c), mean);
    if (pc.a[5] != 0UL) STORE_T(pc.a[5], g_stat_dt, int(c), rstd);
  }
  if (pc.a[1] == 0UL) return;
  for (int k = 0; k < R4; ++k) {
    const int ch = int(lane + uint(k) * lanes);
    if (4 * ch >= n) break;
    const vec4 y = (xs[k] - mean) * rstd * load_param4(2, ch, n, vec, 1.0) +
                   load_param4(3, ch, n, vec, 0.0);
    store_row4_masked(pc.a[1], g_out_dt, base, ch, n, vec, y);
  }
}
#else
void backward_row_registers(uint c, uint lane, uint lanes, int scope, bool vec) {
  const int n = pc.inner;
  const int base = int(c) * n;
  float mean, rstd;
  load_stats(int(c), mean, rstd);
  vec4 gs[R4], xh[R4];
  float s1 = 0.0, s2 = 0.0;  // sum g, sum g * xh with g = dy * w
  for (int k = 0; k < R4; ++k) {
    const int ch = int(lane + uint(k) * lanes);
    if (4 * ch < n) {
      // Elements past n load as dy = 0: they add nothing to the sums.
      gs[k] = load_row4(pc.a[3], g_dy_dt, base, ch, n, vec) * load_param4(2, ch, n, vec, 1.0);
      xh[k] = (load_row4(pc.a[0], g_x_dt, base, ch, n, vec) - mean) * rstd;
    } else {
      gs[k] = vec4(0.0);
      xh[k] = vec4(0.0);
    }
    s1 += (gs[k].x + gs[k].y) + (gs[k].z + gs[k].w);
    s2 += dot(gs[k], xh[k]);
  }
  if (has(FLAG_TRAIN)) group_sum2(s1, s2, scope);
  if (pc.a[1] == 0UL) return;
  const float inv_n = n > 0 ? 1.0 / float(n) : 0.0;
  const float mean_g = has(FLAG_CENTER) ? s1 * inv_n : 0.0;
  const float mean_gxh = s2 * inv_n;
  for (int k = 0; k < R4; ++k) {
    const int ch = int(lane + uint(k) * lanes);
    if (4 * ch >= n) break;
    const vec4 dx = has(FLAG_TRAIN) ? rstd * (gs[k] - mean_g - xh[k] * mean_gxh) : gs[k] * rstd;
    store_row4_masked(pc.a[1], g_out_dt, base, ch, n, vec, dx);
  }
}
#endif

// Row c shared by `lanes` invocations of the scope: in registers when it fits, else the
// streaming loops (with the scope's reductions).
void process_row_registers(uint c, uint lane, uint lanes, int scope) {
  if (uint(pc.inner) > 4u * uint(R4) * lanes) {
    process(c, lane, lanes, scope);
    return;
  }
#if OP == 0
  forward_row_registers(c, lane, lanes, scope, SPEC_VEC != 0);
#else
  backward_row_registers(c, lane, lanes, scope, SPEC_VEC != 0);
#endif
}
#endif

void main() {
  g_x_dt = SPEC_X_DT >= 0 ? SPEC_X_DT : pc.x_dt;
  g_out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dt;
  g_dy_dt = SPEC_DY_DT >= 0 ? SPEC_DY_DT : pc.dy_dt;
  g_param_dt = SPEC_PARAM_DT >= 0 ? SPEC_PARAM_DT : pc.param_dt;
  g_stat_dt = SPEC_STAT_DT >= 0 ? SPEC_STAT_DT : pc.stat_dt;
  g_run_dt = SPEC_RUN_DT >= 0 ? SPEC_RUN_DT : pc.run_dt;
  g_layout = pc.layout_flags & 15;
  g_flags = pc.layout_flags >> 4;
  g_eps = scalar_of(pc.eps);
  g_momentum = scalar_of(pc.momentum);
  uint segments = uint(pc.channels);
  if (SPEC_MODE == MODE_THREAD) {
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint c = gl_GlobalInvocationID.x; c < segments; c += step) process(c, 0u, 1u, SCOPE_THREAD);
    return;
  }
#if KIND == KIND_FLOAT32 && OP < 2
  if (SPEC_MODE == MODE_REGISTERS) {
    for (uint c = gl_WorkGroupID.x; c < segments; c += gl_NumWorkGroups.x)
      process_row_registers(c, gl_LocalInvocationID.x, gl_WorkGroupSize.x, SCOPE_WORKGROUP);
    return;
  }
#if TVK_SUBGROUPS
  if (SPEC_MODE == MODE_SUBGROUP_ROW) {
    // Lane numbers from the active invocations: correct for partial subgroups too.
    const uint lane = subgroupExclusiveAdd(1u), lanes = subgroupAdd(1u);
    for (uint c = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID; c < segments;
         c += gl_NumWorkGroups.x * gl_NumSubgroups)
      process_row_registers(c, lane, lanes, SCOPE_SUBGROUP);
    return;
  }
#endif
#endif
  // Uniform loop bound per workgroup: every invocation reaches the same barriers.
  for (uint c = gl_WorkGroupID.x; c < segments; c += gl_NumWorkGroups.x)
    process(c, gl_LocalInvocationID.x, gl_WorkGroupSize.x, SCOPE_WORKGROUP);
}
