#version 460
// Upsampling (interpolation) over up to three spatial dims (D, H, W) of [batch, channels, D, H,
// W] tensors, forward and backward; 1-D / 2-D use D = 1 (and H = 1) with in == out there.
//   MODE 0  nearest        src = min(floor(o * scale), in - 1)   (scale in float, like the CPU)
//   MODE 1  nearest-exact  src = min(floor((o + 0.5) * scale), in - 1)
//   MODE 2  linear         two taps per dim (PyTorch's compute_source_index_and_lambda)
//   MODE 3  cubic          four taps per dim, A = -0.75, clamped to the border
//   MODE 4  table          one separable pass along one dim with host-computed taps (see
//                          "Table-driven pass" below): anti-aliased bilinear / bicubic and
//                          the uint8 bilinear / bicubic of PyTorch's CPU (int16 weights)
// The interpolation is separable: out[o] = sum over taps of wd * wh * ww * x[taps]. Forward:
// one invocation per output element. Backward (BACKWARD 1): one invocation per grad_input
// element i, summing go[o] * wd * wh * ww over the outputs o whose taps include i, in
// increasing output order (deterministic gather, no atomics). The taps of o move monotonically
// with o, so the outputs that reach i form a range per dim, found by binary search.
// Tap positions and weights follow PyTorch's CPU (aten/src/ATen/native/UpSample.h): the
// out == in and out == 2 * in shortcuts of nearest, the out == in identity of linear, the
// clamp of negative source positions for linear (not cubic) without align_corners.
//
// Built per (mode, direction, kind) by tools/build_shaders.py (upsample.variants.toml).
// ABI (mirrored by UpsamplePush in src/kernels/upsample.cpp):
//   Layout: flags bit 0 clear: contiguous [batch, channels, D, H, W]; set: channels-last
//   [batch, D, H, W, channels]; both operands use it. flags bit 1: align_corners.
//   scale_f / scale_d: per-dim source step, computed by the host the way the CPU does (float
//   for nearest and float32 math, double bits for float64 math).
//   Specialization constants: 0 = local_size_x, 1 = in dtype, 2 = out dtype (-1: push constants).
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

#ifndef MODE
#define MODE 0
#endif

#if MODE == 4
// ---------------------------------------------------------------- table-driven pass
// The data is viewed as contiguous [outer, len, inner]; the pass maps src [outer, src_len,
// inner] to dst [outer, dst_len, inner]:
//   dst[a, d, b] = sum over e in [start[d], start[d + 1]) of w[e] * src[a, index[e], b]
// summed in table order from 0 (PyTorch's interpolate_aa_single_dim order). The host builds
// the table (src/kernels/upsample.cpp) exactly as PyTorch's CPU computes its weights; the
// backward uses the transposed table. KIND 1 (uint8 data, int16 weights scaled by
// 2^weight_bits): dst = clamp((2^(weight_bits-1) + sum w * src) >> weight_bits, 0, 255) in int32,
// as PyTorch's basic_loop_aa_horizontal<uint8_t>.
// ABI (mirrored by ResamplePush in src/kernels/upsample.cpp): weights_addr holds w[E]
// (float32 / float64 / int32 by kind), index_addr holds start[dst_len + 1] then index[E]
// (int32). Specialization constants as above.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_IN_DT = -1;
layout(constant_id = 2) const int SPEC_OUT_DT = -1;

layout(push_constant) uniform Push {
  uint64_t src_addr;      //  0
  uint64_t dst_addr;      //  8
  uint64_t weights_addr;  // 16
  uint64_t index_addr;    // 24
  int outer;              // 32
  int src_len;            // 36
  int dst_len;            // 40
  int inner;              // 44
  int in_dtype;           // 48
  int out_dtype;          // 52
  int weight_bits;        // 56: KIND 1: the weights' fixed-point precision
  int pad0;               // 60
} pc;                     // 64 bytes

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer IndexTable { int v[]; };
#if KIND == KIND_FLOAT64
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer WeightTable { double v[]; };
#elif KIND == KIND_INT32
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer WeightTable { int v[]; };
#else
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer WeightTable { float v[]; };
#endif

void main() {
  const int in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  const int out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  IndexTable index = IndexTable(pc.index_addr);
  WeightTable weights = WeightTable(pc.weights_addr);
  const uint total = uint(pc.outer) * uint(pc.dst_len) * uint(pc.inner);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint qu = gl_GlobalInvocationID.x; qu < total; qu += step) {
    const int q = int(qu);
    const int b = q % pc.inner;
    const int r = q / pc.inner;
    const int d = r % pc.dst_len;
    const int a = r / pc.dst_len;
    const int base = a * pc.src_len * pc.inner + b;
    const int e0 = index.v[d], e1 = index.v[d + 1];
    const int entries = pc.dst_len + 1;
#if KIND == KIND_INT32
    int acc = 1 << (pc.weight_bits - 1);
    for (int e = e0; e < e1; ++e)
      acc += weights.v[e] * LOAD_T(pc.src_addr, in_dt, base + index.v[entries + e] * pc.inner);
    STORE_T(pc.dst_addr, out_dt, q, clamp(acc >> pc.weight_bits, 0, 255));
#else
    T acc = T(0);
    for (int e = e0; e < e1; ++e)
      acc += weights.v[e] * LOAD_T(pc.src_addr, in_dt, base + index.v[entries + e] * pc.inner);
    STORE_T(pc.dst_addr, out_dt, q, acc);
#endif
  }
}
#else  // MODE < 4
#ifndef BACKWARD
#define BACKWARD 0
#endif
#if MODE < 2
#define TAPS 1
#elif MODE == 2
#define TAPS 2
#else
#define TAPS 4
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_IN_DT = -1;
layout(constant_id = 2) const int SPEC_OUT_DT = -1;

layout(push_constant) uniform Push {
  uint64_t in_addr;     //  0: x (forward) or grad_output (backward)
  uint64_t out_addr;    //  8: y (forward) or grad_input (backward)
  int batch;            // 16
  int channels;         // 20
  int in_size[3];       // 24: (D, H, W) of x / grad_input
  int out_size[3];      // 36: (D, H, W) of y / grad_output
  int flags;            // 48
  int in_dtype;         // 52
  int out_dtype;        // 56
  float scale_f[3];     // 60
  uint64_t scale_d[3];  // 72: float64 bits
} pc;                   // 96 bytes

int g_in_dt, g_out_dt;
ivec3 g_in_size, g_out_size;

bool channels_last() { return (pc.flags & 1) != 0; }
bool align_corners() { return (pc.flags & 2) != 0; }

int offset_of(int n, int c, ivec3 p, ivec3 sz) {
  int plane = sz.x * sz.y * sz.z;
  int s = (p.x * sz.y + p.y) * sz.z + p.z;
  return channels_last() ? (n * plane + s) * pc.channels + c
                         : (n * pc.channels + c) * plane + s;
}

void coords_of(int q, ivec3 sz, out int n, out int c, out ivec3 p) {
  int plane = sz.x * sz.y * sz.z;
  int s;
  if (channels_last()) {
    c = q % pc.channels;
    int r = q / pc.channels;
    s = r % plane;
    n = r / plane;
  } else {
    s = q % plane;
    int r = q / plane;
    c = r % pc.channels;
    n = r / pc.channels;
  }
  p.z = s % sz.z;
  p.y = (s / sz.z) % sz.y;
  p.x = s / (sz.z * sz.y);
}

T scale_of(int k) {
#if KIND == KIND_FLOAT64
  return uint64BitsToDouble(pc.scale_d[k]);
#else
  return pc.scale_f[k];
#endif
}

// Taps of output position o along dim k: first index (before clamping for cubic) and weights.
// `idx[j]` are the input positions (already clamped), `w[j]` their weights.
void taps_of(int k, int o, out int idx[TAPS], out T w[TAPS]) {
  int I = g_in_size[k], O = g_out_size[k];
#if MODE == 0
  int src;
  if (O == I) src = o;
  else if (O == 2 * I) src = o >> 1;
  else src = min(int(floor(float(o) * pc.scale_f[k])), I - 1);
  idx[0] = src;
  w[0] = T(1);
#elif MODE == 1
  idx[0] = min(int(floor((float(o) + 0.5) * pc.scale_f[k])), I - 1);
  w[0] = T(1);
#elif MODE == 2
  if (O == I) {
    idx[0] = o;
    idx[1] = o;
    w[0] = T(1);
    w[1] = T(0);
    return;
  }
  T scale = scale_of(k);
  T real = align_corners() ? scale * T(o) : scale * (T(o) + T(0.5)) - T(0.5);
  if (!align_corners() && real < T(0)) real = T(0);
  int i0 = min(int(floor(real)), I - 1);
  T l1 = clamp(real - T(i0), T(0), T(1));
  idx[0] = i0;
  idx[1] = i0 + (i0 < I - 1 ? 1 : 0);
  w[0] = T(1) - l1;
  w[1] = l1;
#else
  T scale = scale_of(k);
  T real = align_corners() ? scale * T(o) : scale * (T(o) + T(0.5)) - T(0.5);
  int i0 = min(int(floor(real)), I - 1);
  T t = clamp(real - T(i0), T(0), T(1));
  const T A = T(-0.75);
  // PyTorch's cubic_convolution1 (|x| <= 1) and cubic_convolution2 (1 < |x| < 2).
  T x1 = t + T(1);
  w[0] = ((A * x1 - T(5) * A) * x1 + T(8) * A) * x1 - T(4) * A;
  w[1] = ((A + T(2)) * t - (A + T(3))) * t * t + T(1);
  T x2 = T(1) - t;
  w[2] = ((A + T(2)) * x2 - (A + T(3))) * x2 * x2 + T(1);
  T x3 = x2 + T(1);
  w[3] = ((A * x3 - T(5) * A) * x3 + T(8) * A) * x3 - T(4) * A;
  for (int j = 0; j < 4; ++j) idx[j] = clamp(i0 - 1 + j, 0, I - 1);
#endif
}

#if !BACKWARD
void forward(int q) {
  int n, c;
  ivec3 o;
  coords_of(q, g_out_size, n, c, o);
  int id[TAPS], ih[TAPS], iw[TAPS];
  T wd[TAPS], wh[TAPS], ww[TAPS];
  taps_of(0, o.x, id, wd);
  taps_of(1, o.y, ih, wh);
  taps_of(2, o.z, iw, ww);
#if TAPS == 1
  // A copy (exact for every dtype the float math holds, NaN payloads aside).
  T v = LOAD_T(pc.in_addr, g_in_dt, offset_of(n, c, ivec3(id[0], ih[0], iw[0]), g_in_size));
  STORE_T(pc.out_addr, g_out_dt, q, v);
#else
  // Only the D dim can be trivial (size 1 in and out); skip its zero-weight taps there.
  int nd = g_in_size.x == 1 && g_out_size.x == 1 ? 1 : TAPS;
  int nh = g_in_size.y == 1 && g_out_size.y == 1 ? 1 : TAPS;
  T acc_d = T(0);
  for (int a = 0; a < nd; ++a) {
    T acc_h = T(0);
    for (int b = 0; b < nh; ++b) {
      T acc_w = T(0);
      for (int e = 0; e < TAPS; ++e)
        acc_w += ww[e] * LOAD_T(pc.in_addr, g_in_dt, offset_of(n, c, ivec3(id[a], ih[b], iw[e]), g_in_size));
      acc_h += nh == 1 ? acc_w : wh[b] * acc_w;
    }
    acc_d += nd == 1 ? acc_h : wd[a] * acc_h;
  }
  STORE_T(pc.out_addr, g_out_dt, q, acc_d);
#endif
}
#else
// Weight of input position i in output position o along dim k; false when no tap reaches it.
bool weight_of(int k, int o, int i, out T weight) {
  int idx[TAPS];
  T w[TAPS];
  taps_of(k, o, idx, w);
  bool hit = false;
  weight = T(0);
  for (int j = 0; j < TAPS; ++j)
    if (idx[j] == i) {
      weight = hit ? weight + w[j] : w[j];
      hit = true;
    }
  return hit;
}

int first_tap(int k, int o) {
  int idx[TAPS];
  T w[TAPS];
  taps_of(k, o, idx, w);
  return idx[0];
}

int last_tap(int k, int o) {
  int idx[TAPS];
  T w[TAPS];
  taps_of(k, o, idx, w);
  return idx[TAPS - 1];
}

// Outputs [lo, hi] along dim k whose taps can include input i (both tap bounds are
// non-decreasing in o). lo > hi: none.
void output_range(int k, int i, out int lo, out int hi) {
  int O = g_out_size[k];
  int a = 0, b = O;  // lo = first o with last_tap(o) >= i
  while (a < b) {
    int m = (a + b) >> 1;
    if (last_tap(k, m) >= i) b = m; else a = m + 1;
  }
  lo = a;
  a = 0;
  b = O;  // hi + 1 = first o with first_tap(o) > i
  while (a < b) {
    int m = (a + b) >> 1;
    if (first_tap(k, m) > i) b = m; else a = m + 1;
  }
  hi = a - 1;
}

void backward(int q) {
  int n, c;
  ivec3 i;
  coords_of(q, g_in_size, n, c, i);
  ivec3 lo, hi;
  for (int k = 0; k < 3; ++k) output_range(k, i[k], lo[k], hi[k]);
  T acc = T(0);
  for (int d = lo.x; d <= hi.x; ++d) {
    T wd;
    if (!weight_of(0, d, i.x, wd)) continue;
    for (int h = lo.y; h <= hi.y; ++h) {
      T wh;
      if (!weight_of(1, h, i.y, wh)) continue;
      for (int w = lo.z; w <= hi.z; ++w) {
        T ww;
        if (!weight_of(2, w, i.z, ww)) continue;
        T g = LOAD_T(pc.in_addr, g_in_dt, offset_of(n, c, ivec3(d, h, w), g_out_size));
#if TAPS == 1
        acc += g;
#else
        acc += wd * wh * ww * g;
#endif
      }
    }
  }
  STORE_T(pc.out_addr, g_out_dt, q, acc);
}
#endif

void main() {
  g_in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  g_out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  g_in_size = ivec3(pc.in_size[0], pc.in_size[1], pc.in_size[2]);
  g_out_size = ivec3(pc.out_size[0], pc.out_size[1], pc.out_size[2]);
#if BACKWARD
  ivec3 sz = g_in_size;
#else
  ivec3 sz = g_out_size;
#endif
  uint total = uint(pc.batch) * uint(pc.channels) * uint(sz.x * sz.y * sz.z);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < total; q += step) {
#if BACKWARD
    backward(int(q));
#else
    forward(int(q));
#endif
  }
}
#endif  // MODE < 4
