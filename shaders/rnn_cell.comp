#version 460
// Fused point-wise halves of recurrent cells (the gate GEMMs run before, as separate GEMMs):
//   OP 0  LSTM forward    gates = ig + hg (+ b_ih + b_hh); i, f, o = sigmoid, g = tanh;
//                         cy = f * cx + i * g; hy = o * tanh(cy); workspace = (i, f, g, o)
//   OP 1  LSTM backward   from grad_hy / grad_cy (either may be absent: address 0), cx, cy and
//                         the workspace: grad_gates (i, f, g, o) and grad_cx
//   OP 2  GRU forward     r, z = sigmoid(ig_rz + hg_rz (+ biases)); n = tanh(ig_n + r * hg_n);
//                         hy = n + z * (hx - n); workspace = (r, z, n, hg_n incl. bias, hx)
//   OP 3  GRU backward    from grad_hy and the workspace: grad_ig, grad_hg (r, z, n) and grad_hx
// One invocation per (batch row b, hidden unit j); every operand is contiguous: gates [B, G*H]
// (gate k of unit j at b * G * H + k * H + j), states [B, H], biases [G*H], workspaces
// [B, 4H] (LSTM) / [B, 5H] (GRU). Math in fp32 for float16 / bfloat16 / float32 (KIND 0), fp64
// for float64 (KIND 3); all operands share one dtype.
//
// Built per (op, kind) by tools/build_shaders.py (rnn_cell.variants.toml).
// ABI (mirrored by RnnCellPush in src/kernels/rnn_cell.cpp): 8 addresses (meaning per OP,
// below), batch, hidden, dtype, has_bias. Grid: 1-D, any number of workgroups.
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

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT = -1;

layout(push_constant) uniform Push {
  uint64_t a[8];  //  0: operand addresses (see each OP)
  int batch;      // 64
  int hidden;     // 68
  int dtype;      // 72
  int has_bias;   // 76
} pc;             // 80 bytes

int g_dt;

T ld(uint64_t base, int i) { return LOAD_T(base, g_dt, i); }
void st(uint64_t base, int i, T v) { STORE_T(base, g_dt, i, v); }

void cell(int b, int j) {
  const int H = pc.hidden;
#if OP == 0
  // a: 0 ig, 1 hg, 2 cx, 3 b_ih, 4 b_hh, 5 hy, 6 cy, 7 workspace
  const int row = b * 4 * H;
  T gate[4];
  for (int k = 0; k < 4; ++k) {
    int idx = row + k * H + j;
    T v = ld(pc.a[0], idx) + ld(pc.a[1], idx);
    if (pc.has_bias != 0) v += ld(pc.a[3], k * H + j) + ld(pc.a[4], k * H + j);
    gate[k] = k == 2 ? tvk_tanh(v) : tvk_sigmoid(v);
  }
  T cy = gate[1] * ld(pc.a[2], b * H + j) + gate[0] * gate[2];
  st(pc.a[6], b * H + j, cy);
  st(pc.a[5], b * H + j, gate[3] * tvk_tanh(cy));
  for (int k = 0; k < 4; ++k) st(pc.a[7], row + k * H + j, gate[k]);
#elif OP == 1
  // a: 0 grad_hy (0: none), 1 grad_cy (0: none), 2 cx, 3 cy, 4 workspace, 5 grad_gates, 6 grad_cx
  const int row = b * 4 * H;
  T i = ld(pc.a[4], row + j), f = ld(pc.a[4], row + H + j);
  T g = ld(pc.a[4], row + 2 * H + j), o = ld(pc.a[4], row + 3 * H + j);
  T grad_c = pc.a[1] != 0ul ? ld(pc.a[1], b * H + j) : T(0);
  T grad_o = T(0);
  if (pc.a[0] != 0ul) {
    T gh = ld(pc.a[0], b * H + j);
    T tc = tvk_tanh(ld(pc.a[3], b * H + j));
    grad_c += gh * o * (T(1) - tc * tc);
    grad_o = gh * tc * o * (T(1) - o);
  }
  T cx = ld(pc.a[2], b * H + j);
  st(pc.a[5], row + j, grad_c * g * i * (T(1) - i));
  st(pc.a[5], row + H + j, grad_c * cx * f * (T(1) - f));
  st(pc.a[5], row + 2 * H + j, grad_c * i * (T(1) - g * g));
  st(pc.a[5], row + 3 * H + j, grad_o);
  st(pc.a[6], b * H + j, grad_c * f);
#elif OP == 2
  // a: 0 ig, 1 hg, 2 hx, 3 b_ih, 4 b_hh, 5 hy, 6 workspace
  const int row = b * 3 * H;
  T ig[3], hg[3];
  for (int k = 0; k < 3; ++k) {
    ig[k] = ld(pc.a[0], row + k * H + j);
    hg[k] = ld(pc.a[1], row + k * H + j);
    if (pc.has_bias != 0) {
      ig[k] += ld(pc.a[3], k * H + j);
      hg[k] += ld(pc.a[4], k * H + j);
    }
  }
  T r = tvk_sigmoid(ig[0] + hg[0]);
  T z = tvk_sigmoid(ig[1] + hg[1]);
  T n = tvk_tanh(ig[2] + r * hg[2]);
  T hx = ld(pc.a[2], b * H + j);
  st(pc.a[5], b * H + j, n + z * (hx - n));
  const int ws = b * 5 * H;
  st(pc.a[6], ws + j, r);
  st(pc.a[6], ws + H + j, z);
  st(pc.a[6], ws + 2 * H + j, n);
  st(pc.a[6], ws + 3 * H + j, hg[2]);
  st(pc.a[6], ws + 4 * H + j, hx);
#else
  // a: 0 grad_hy, 1 workspace, 2 grad_ig, 3 grad_hg, 4 grad_hx
  const int ws = b * 5 * H;
  T r = ld(pc.a[1], ws + j), z = ld(pc.a[1], ws + H + j), n = ld(pc.a[1], ws + 2 * H + j);
  T hn = ld(pc.a[1], ws + 3 * H + j), hx = ld(pc.a[1], ws + 4 * H + j);
  T gh = ld(pc.a[0], b * H + j);
  T grad_n = gh * (T(1) - z) * (T(1) - n * n);
  T grad_z = gh * (hx - n) * z * (T(1) - z);
  T grad_r = grad_n * hn * r * (T(1) - r);
  const int row = b * 3 * H;
  st(pc.a[2], row + j, grad_r);
  st(pc.a[2], row + H + j, grad_z);
  st(pc.a[2], row + 2 * H + j, grad_n);
  st(pc.a[3], row + j, grad_r);
  st(pc.a[3], row + H + j, grad_z);
  st(pc.a[3], row + 2 * H + j, grad_n * r);
  st(pc.a[4], b * H + j, gh * z);
#endif
}

void main() {
  g_dt = SPEC_DT >= 0 ? SPEC_DT : pc.dtype;
  const uint total = uint(pc.batch) * uint(pc.hidden);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += step)
    cell(int(e / uint(pc.hidden)), int(e % uint(pc.hidden)));
}
