#version 460
// Pooling over up to three spatial dims (D, H, W) of [batch, channels, D, H, W] tensors,
// forward and backward. 1-D / 2-D pooling uses D = 1 (and H = 1), kernel 1, stride 1, pad 0.
//   OP 0  max pool           y = max over the dilated window, idx = its flat spatial index
//   OP 1  avg pool           y = sum over the window / divisor
//   OP 2  adaptive avg pool  window [floor(o * I / O), ceil((o + 1) * I / O)) per dim
//   OP 3  adaptive max pool  same windows, max and index
//   OP 4  max pool backward            gi[i] = sum of go[o] over outputs o with idx[o] == i
//   OP 5  avg pool backward            gi[i] = sum of go[o] / divisor(o) over windows with i
//   OP 6  adaptive avg pool backward   gi[i] = sum of go[o] / area(o)
//   OP 7  adaptive max pool backward   as OP 4 over adaptive windows
//   OP 8  max unpool          y[idx[i]] = x[i] within each (batch, channel) plane (y pre-zeroed)
//   OP 9  fractional max pool  max over a kernel-sized window starting at the pseudo-random
//                              interval sequence of each plane (PyTorch's generate_intervals)
// Forward: one invocation per output element. Backward: one invocation per grad_input element,
// gathering over the outputs whose windows contain it in increasing output order (the CPU's
// accumulation order; deterministic, no atomics).
// Semantics follow PyTorch's CPU kernels: max starts from -inf (the type's minimum for
// integers) with the first in-window element's index, and takes an element when it is larger
// or NaN (the last NaN wins). Avg windows extend over the padding up to the padded size; the
// divisor is divisor_override, the window size with padding (count_include_pad) or without;
// an empty clipped window gives 0. Integer avg pooling divides with truncation (int64).
//
// Built per (op, kind) by tools/build_shaders.py (pool.variants.toml): KIND 0 (float32 math
// for float16 / bfloat16 / float32), 3 (float64) and 2 (int64, max / avg forward on integers).
// ABI (mirrored by PoolPush in src/kernels/pool.cpp):
//   Layout: flags bit 0 clear: contiguous [batch, channels, D, H, W]; set: channels-last
//   [batch, D, H, W, channels]. Every operand (input, output, indices) uses the same layout.
//   Invocation q enumerates the elements it produces in memory order (coalesced stores, and
//   coalesced loads along W or along the channels).
//   flags bit 1: count_include_pad. divisor != 0: divisor_override (may be negative).
//   Specialization constants: 0 = local_size_x, 1 = in dtype, 2 = out dtype (-1: push constants).
//   Grid: 1-D, any number of workgroups (a grid-stride loop covers the rest).
// OP 8 / 9 use their own push layout (UnpoolPush below). OP 8 runs one invocation per pooled
// element x[i] (in memory order) and scatters it; an index outside [0, plane) is not written
// but reported to the stream's error record (TVK_ERR_MAX_UNPOOL{2,3}D_INVALID_INDEX, the CPU's
// "Found an invalid max index"). Duplicate indices store in an unspecified order (the CPU: the
// last in its loop order). OP 9 is contiguous only and reproduces the CPU's arithmetic: the
// window start of output o < O - 1 along a dim is int((o + u) * alpha) - int(u * alpha) with u
// the plane's sample and alpha = (I - K) / (O - 1) (host-computed), every step rounded to the
// input dtype as c10::Half / BFloat16 arithmetic does; the last output starts at I - K.
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
#define UNPOOL (OP == 8)
#define FRACTIONAL (OP == 9)
#define BACKWARD (OP >= 4 && OP <= 7)
#define IS_MAX (OP == 0 || OP == 3 || OP == 4 || OP == 7 || OP == 9)
#define ADAPTIVE (OP == 2 || OP == 3 || OP == 6 || OP == 7)

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_IN_DT = -1;
layout(constant_id = 2) const int SPEC_OUT_DT = -1;

#if UNPOOL || FRACTIONAL
layout(push_constant) uniform UnpoolPush {
  uint64_t in_addr;    //   0: x
  uint64_t out_addr;   //   8: y
  uint64_t idx_addr;   //  16: indices (int64; OP 8: laid out like x, OP 9: like y)
  uint64_t aux_addr;   //  24: OP 8: the stream's error record (0: do not report); OP 9:
                       //      _random_samples, contiguous [>= batch, channels, sample_dims],
                       //      dtype in_dtype
  int batch;           //  32
  int channels;        //  36
  int in_size[3];      //  40: (D, H, W) of x
  int out_size[3];     //  52: (D, H, W) of y
  int kernel_size[3];  //  64: OP 9: the pool size
  int flags;           //  76: bit 0: channels-last (OP 8); bit 2: 3-D unpooling (error code)
  int in_dtype;        //  80
  int out_dtype;       //  84
  int sample_dims;     //  88: OP 9: samples per plane (2: W, H order; 3: D, H, W order)
  int reserved;        //  92
  uint64_t alpha_bits[3];  // 96: OP 9: alpha per (D, H, W) dim: float bits (float32 kind) or
                           //     double bits (float64 kind)
} pc;                  // 120 bytes
#else
layout(push_constant) uniform Push {
  uint64_t in_addr;   //   0: x (forward) or grad_output (backward)
  uint64_t out_addr;  //   8: y (forward) or grad_input (backward)
  uint64_t idx_addr;  //  16: indices (int64, laid out like the pooled output); 0: none
  int batch;          //  24
  int channels;       //  28
  int in_size[3];     //  32: (D, H, W) of x / grad_input (int arrays: 4-byte stride in std430)
  int out_size[3];    //  44: (D, H, W) of y / grad_output
  int kernel_size[3]; //  56
  int stride[3];      //  68
  int pad[3];         //  80
  int dilation[3];    //  92
  int divisor;        // 104
  int flags;          // 108
  int in_dtype;       // 112
  int out_dtype;      // 116
  uint64_t split;     // 120: forward split: PoolSplit address (0: one pass), see below
} pc;                 // 128 bytes

// Forward split (OP 0-3 on devices with a loop limit, DeviceCapabilities::max_loop_iterations):
// a pass walks only the flattened window positions [begin, end) of every output (position
// (a * eh + b) * ew + c = element lo + (a, b, c) * step of its window, e* its extents). The
// running max (value at `state` element q, int32 index after `outputs` of them, 8-byte
// aligned) or sum is read when begin > 0 and written instead of the outputs when end < last
// (the largest window); the launcher records the passes in order.
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer PoolSplit {
  uint64_t state;
  int begin, end, last, outputs;
};
#endif

int g_in_dt, g_out_dt;
ivec3 g_in_size, g_out_size, g_kernel, g_stride, g_pad, g_dilation;

#if KIND == KIND_FLOAT64
#define T_LOWEST (-TVK_F64_INF)
bool t_isnan(T x) { return tvk_isnan(x); }
#elif KIND == KIND_FLOAT32
#define T_LOWEST (-TVK_F32_INF)
bool t_isnan(T x) { return tvk_isnan(x); }
#else
#define T_LOWEST (-9223372036854775807l - 1l)
bool t_isnan(T x) { return false; }
#endif

bool channels_last() { return (pc.flags & 1) != 0; }

// Element offset of (n, c, spatial) in a tensor with spatial sizes `sz`.
int offset_of(int n, int c, ivec3 p, ivec3 sz) {
  int plane = sz.x * sz.y * sz.z;
  int s = (p.x * sz.y + p.y) * sz.z + p.z;
  return channels_last() ? (n * plane + s) * pc.channels + c
                         : (n * pc.channels + c) * plane + s;
}

// (n, c, spatial) of the element at memory position q of a tensor with spatial sizes `sz`.
void coords_of(int q, ivec3 sz, out int n, out int c, out ivec3 p) {
  int s;
  if (channels_last()) {
    c = q % pc.channels;
    int r = q / pc.channels;
    s = r % (sz.x * sz.y * sz.z);
    n = r / (sz.x * sz.y * sz.z);
  } else {
    int plane = sz.x * sz.y * sz.z;
    s = q % plane;
    int r = q / plane;
    c = r % pc.channels;
    n = r / pc.channels;
  }
  p.z = s % sz.z;
  p.y = (s / sz.z) % sz.y;
  p.x = s / (sz.z * sz.y);
}

// Adaptive window of output o along a dim: [floor(o * I / O), ceil((o + 1) * I / O)).
// Exact integer forms (PyTorch's start_index / end_index).
int adaptive_start(int o, int O, int I) { return (o / O) * I + ((o % O) * I) / O; }
int adaptive_end(int o, int O, int I) { return 1 + ((o + 1) * I - 1) / O; }

#if UNPOOL
// ---------------------------------------------------------------- max unpool (scatter)
void unpool(int q) {
  int n, c;
  ivec3 i;
  coords_of(q, g_in_size, n, c, i);
  int64_t index = RefI64(tvk_elem_addr(pc.idx_addr, q, 3)).v;
  int plane = g_out_size.x * g_out_size.y * g_out_size.z;
  if (index < 0l || index >= int64_t(plane)) {
    if ((pc.flags & 4) != 0)
      tvk_report_index_error(pc.aux_addr, TVK_ERR_MAX_UNPOOL3D_INVALID_INDEX, index,
                             (int64_t(g_out_size.y) << 32) | int64_t(g_out_size.z), g_out_size.x);
    else
      tvk_report_index_error(pc.aux_addr, TVK_ERR_MAX_UNPOOL2D_INVALID_INDEX, index,
                             int64_t(g_out_size.z), g_out_size.y);
    return;
  }
  int s = int(index);
  ivec3 o = ivec3(s / (g_out_size.y * g_out_size.z), (s / g_out_size.z) % g_out_size.y,
                  s % g_out_size.z);
  STORE_T(pc.out_addr, g_out_dt, offset_of(n, c, o, g_out_size), LOAD_T(pc.in_addr, g_in_dt, q));
}
#elif FRACTIONAL
// ---------------------------------------------------------------- fractional max pool
// `x` rounded to the input dtype (the CPU computes the intervals in scalar_t).
T round_to_input(T x) {
#if KIND == KIND_FLOAT32
  if (g_in_dt == DT_FLOAT16) return tvk_half_to_float(tvk_float_to_half(x));
  if (g_in_dt == DT_BFLOAT16) return tvk_bf16_to_float(tvk_float_to_bf16(x));
#endif
  return x;
}

T alpha_of(int k) {
#if KIND == KIND_FLOAT64
  return uint64BitsToDouble(pc.alpha_bits[k]);
#else
  return uintBitsToFloat(uint(pc.alpha_bits[k]));
#endif
}

// Window start of output o along dim k (I inputs, O outputs, pool size K, sample u).
int interval_start(int o, int k, T u) {
  int I = g_in_size[k], O = g_out_size[k], K = g_kernel[k];
  if (o == O - 1) return I - K;
  T alpha = alpha_of(k);
  precise T t = round_to_input(round_to_input(T(o)) + u);
  precise T a = round_to_input(t * alpha);
  precise T b = round_to_input(u * alpha);
  return int(a) - int(b);
}

void fractional(int q) {
  int n, c;
  ivec3 o;
  coords_of(q, g_out_size, n, c, o);
  ivec3 lo;
  int plane = n * pc.channels + c;
  for (int k = 0; k < 3; ++k) {
    // 2-D samples are (W, H); 3-D samples are (D, H, W).
    int which = pc.sample_dims == 2 ? (k == 2 ? 0 : (k == 1 ? 1 : -1)) : k;
    T u = which < 0 ? T(0) : LOAD_T(pc.aux_addr, g_in_dt, plane * pc.sample_dims + which);
    lo[k] = which < 0 ? 0 : interval_start(o[k], k, u);
  }
  ivec3 hi = lo + g_kernel;
  ivec3 isz = g_in_size;
  T best = T(T_LOWEST);
  int best_index = (lo.x * isz.y + lo.y) * isz.z + lo.z;
  for (int d = lo.x; d < hi.x; ++d)
    for (int h = lo.y; h < hi.y; ++h)
      for (int w = lo.z; w < hi.z; ++w) {
        T v = LOAD_T(pc.in_addr, g_in_dt, offset_of(n, c, ivec3(d, h, w), isz));
        if (v > best || t_isnan(v)) {
          best = v;
          best_index = (d * isz.y + h) * isz.z + w;
        }
      }
  STORE_T(pc.out_addr, g_out_dt, q, best);
  RefI64(tvk_elem_addr(pc.idx_addr, q, 3)).v = int64_t(best_index);
}
#elif !BACKWARD
// ---------------------------------------------------------------- forward
#if KIND == KIND_FLOAT64
#define STATE_DT DT_FLOAT64
#elif KIND == KIND_FLOAT32
#define STATE_DT DT_FLOAT32
#else
#define STATE_DT DT_INT64
#endif

// One pass of the split forward (see PoolSplit) over output q's window [lo, hi) step `step`.
void forward_pass(int q, int n, int c, ivec3 lo, ivec3 hi, ivec3 step, ivec3 isz
#if OP == 1
                  , int pool_size
#endif
) {
  PoolSplit sp = PoolSplit(pc.split);
  const ivec3 ext = max((hi - lo + step - 1) / step, ivec3(0));
  const int total = ext.x * ext.y * ext.z;
  const int first = sp.begin, last = min(sp.end, total);
  const uint64_t idx_state = (sp.state + uint64_t(sp.outputs) * 8ul + 7ul) & ~7ul;
#if IS_MAX
  T best = T(T_LOWEST);
  int best_index = (lo.x * isz.y + lo.y) * isz.z + lo.z;
  if (sp.begin > 0) {
    best = LOAD_T(sp.state, STATE_DT, q);
    best_index = RefI32(tvk_elem_addr(idx_state, q, 2)).v;
  }
#else
  T sum = sp.begin > 0 ? LOAD_T(sp.state, STATE_DT, q) : T(0);
#endif
  for (int p = first; p < last; ++p) {
    const int w = lo.z + (p % ext.z) * step.z;
    const int t = p / ext.z;
    const ivec3 at = ivec3(lo.x + (t / ext.y) * step.x, lo.y + (t % ext.y) * step.y, w);
    T v = LOAD_T(pc.in_addr, g_in_dt, offset_of(n, c, at, isz));
#if IS_MAX
    if (v > best || t_isnan(v)) {
      best = v;
      best_index = (at.x * isz.y + at.y) * isz.z + at.z;
    }
#else
    sum += v;
#endif
  }
  if (sp.end < sp.last) {  // more passes follow
#if IS_MAX
    STORE_T(sp.state, STATE_DT, q, best);
    RefI32(tvk_elem_addr(idx_state, q, 2)).v = best_index;
#else
    STORE_T(sp.state, STATE_DT, q, sum);
#endif
    return;
  }
#if IS_MAX
  STORE_T(pc.out_addr, g_out_dt, q, best);
  if (pc.idx_addr != 0ul) RefI64(tvk_elem_addr(pc.idx_addr, q, 3)).v = int64_t(best_index);
#else
  if (lo.x >= hi.x || lo.y >= hi.y || lo.z >= hi.z) {
    STORE_T(pc.out_addr, g_out_dt, q, T(0));
    return;
  }
#if OP == 1
  int count = (hi.x - lo.x) * (hi.y - lo.y) * (hi.z - lo.z);
  int divide = pc.divisor != 0 ? pc.divisor : ((pc.flags & 2) != 0 ? pool_size : count);
  STORE_T(pc.out_addr, g_out_dt, q, sum / T(divide));
#else
  STORE_T(pc.out_addr, g_out_dt, q, sum / T(hi.x - lo.x) / T(hi.y - lo.y) / T(hi.z - lo.z));
#endif
#endif
}

void forward(int q) {
  int n, c;
  ivec3 o;
  coords_of(q, g_out_size, n, c, o);
  ivec3 isz = g_in_size;
  ivec3 lo, hi, step = ivec3(1);
#if ADAPTIVE
  for (int k = 0; k < 3; ++k) {
    lo[k] = adaptive_start(o[k], g_out_size[k], isz[k]);
    hi[k] = adaptive_end(o[k], g_out_size[k], isz[k]);
  }
#elif OP == 0
  step = g_dilation;
  lo = o * g_stride - g_pad;
  hi = min(lo + (g_kernel - 1) * g_dilation + 1, isz);
  for (int k = 0; k < 3; ++k)
    while (lo[k] < 0) lo[k] += step[k];
#else  // OP 1
  lo = o * g_stride - g_pad;
  hi = min(lo + g_kernel, isz + g_pad);
  int pool_size = (hi.x - lo.x) * (hi.y - lo.y) * (hi.z - lo.z);
  lo = max(lo, ivec3(0));
  hi = min(hi, isz);
#endif
  int out_pos = q;
  if (pc.split != 0ul) {
    forward_pass(q, n, c, lo, hi, step, isz
#if OP == 1
                 , pool_size
#endif
    );
    return;
  }
#if IS_MAX
  T best = T(T_LOWEST);
  int best_index = (lo.x * isz.y + lo.y) * isz.z + lo.z;
  for (int d = lo.x; d < hi.x; d += step.x)
    for (int h = lo.y; h < hi.y; h += step.y)
      for (int w = lo.z; w < hi.z; w += step.z) {
        T v = LOAD_T(pc.in_addr, g_in_dt, offset_of(n, c, ivec3(d, h, w), isz));
        if (v > best || t_isnan(v)) {
          best = v;
          best_index = (d * isz.y + h) * isz.z + w;
        }
      }
  STORE_T(pc.out_addr, g_out_dt, out_pos, best);
  if (pc.idx_addr != 0ul) RefI64(tvk_elem_addr(pc.idx_addr, out_pos, 3)).v = int64_t(best_index);
#else
  T sum = T(0);
  if (lo.x >= hi.x || lo.y >= hi.y || lo.z >= hi.z) {
    STORE_T(pc.out_addr, g_out_dt, out_pos, T(0));
    return;
  }
  for (int d = lo.x; d < hi.x; ++d)
    for (int h = lo.y; h < hi.y; ++h)
      for (int w = lo.z; w < hi.z; ++w)
        sum += LOAD_T(pc.in_addr, g_in_dt, offset_of(n, c, ivec3(d, h, w), isz));
#if OP == 1
  int count = (hi.x - lo.x) * (hi.y - lo.y) * (hi.z - lo.z);
  int divide = pc.divisor != 0 ? pc.divisor : ((pc.flags & 2) != 0 ? pool_size : count);
  STORE_T(pc.out_addr, g_out_dt, out_pos, sum / T(divide));
#else  // the CPU divides by each extent in turn: sum / kd / kh / kw
  STORE_T(pc.out_addr, g_out_dt, out_pos, sum / T(hi.x - lo.x) / T(hi.y - lo.y) / T(hi.z - lo.z));
#endif
#endif
}
#else
// ---------------------------------------------------------------- backward
// Divisor of output o's window (avg pooling), as in the forward pass; 0 for an empty window.
int avg_divisor(ivec3 o) {
  ivec3 lo = o * g_stride - g_pad;
  ivec3 hi = min(lo + g_kernel, g_in_size + g_pad);
  int pool_size = (hi.x - lo.x) * (hi.y - lo.y) * (hi.z - lo.z);
  lo = max(lo, ivec3(0));
  hi = min(hi, g_in_size);
  if (pc.divisor != 0) return pc.divisor;
  if ((pc.flags & 2) != 0) return pool_size;
  return (hi.x - lo.x) * (hi.y - lo.y) * (hi.z - lo.z);
}

void backward(int q) {
  int n, c;
  ivec3 i;
  coords_of(q, g_in_size, n, c, i);
  ivec3 osz = g_out_size;
  // Outputs whose windows can contain i: [first, last] per dim.
  ivec3 first, last;
  for (int k = 0; k < 3; ++k) {
#if ADAPTIVE
    first[k] = adaptive_start(i[k], g_in_size[k], osz[k]);
    last[k] = min(adaptive_end(i[k], g_in_size[k], osz[k]), osz[k]) - 1;
#else
    // o * stride - pad <= i  and  i <= o * stride - pad + (kernel - 1) * dilation
    int span = (g_kernel[k] - 1) * g_dilation[k];
    int a = i[k] + g_pad[k] - span;  // o * stride >= a
    first[k] = a <= 0 ? 0 : (a + g_stride[k] - 1) / g_stride[k];
    last[k] = min((i[k] + g_pad[k]) / g_stride[k], osz[k] - 1);
#endif
  }
  int my_index = (i.x * g_in_size.y + i.y) * g_in_size.z + i.z;
  T acc = T(0);
  for (int d = first.x; d <= last.x; ++d)
    for (int h = first.y; h <= last.y; ++h)
      for (int w = first.z; w <= last.z; ++w) {
        ivec3 o = ivec3(d, h, w);
#if ADAPTIVE
        // The range above is exact; the check keeps it so for any rounding.
        bool inside = true;
        for (int k = 0; k < 3; ++k)
          inside = inside && adaptive_start(o[k], osz[k], g_in_size[k]) <= i[k] &&
                   i[k] < adaptive_end(o[k], osz[k], g_in_size[k]);
        if (!inside) continue;
#endif
        int opos = offset_of(n, c, o, osz);
#if IS_MAX
        if (RefI64(tvk_elem_addr(pc.idx_addr, opos, 3)).v != int64_t(my_index)) continue;
        acc += LOAD_T(pc.in_addr, g_in_dt, opos);
#elif OP == 5
        acc += LOAD_T(pc.in_addr, g_in_dt, opos) / T(avg_divisor(o));
#else  // OP 6
        T g = LOAD_T(pc.in_addr, g_in_dt, opos);
        for (int k = 0; k < 3; ++k)
          g /= T(adaptive_end(o[k], osz[k], g_in_size[k]) - adaptive_start(o[k], osz[k], g_in_size[k]));
        acc += g;
#endif
      }
  STORE_T(pc.out_addr, g_out_dt, q, acc);
}
#endif

void main() {
  g_in_dt = SPEC_IN_DT >= 0 ? SPEC_IN_DT : pc.in_dtype;
  g_out_dt = SPEC_OUT_DT >= 0 ? SPEC_OUT_DT : pc.out_dtype;
  g_in_size = ivec3(pc.in_size[0], pc.in_size[1], pc.in_size[2]);
  g_out_size = ivec3(pc.out_size[0], pc.out_size[1], pc.out_size[2]);
  g_kernel = ivec3(pc.kernel_size[0], pc.kernel_size[1], pc.kernel_size[2]);
#if !UNPOOL && !FRACTIONAL
  g_stride = ivec3(pc.stride[0], pc.stride[1], pc.stride[2]);
  g_pad = ivec3(pc.pad[0], pc.pad[1], pc.pad[2]);
  g_dilation = ivec3(pc.dilation[0], pc.dilation[1], pc.dilation[2]);
#endif
#if BACKWARD || UNPOOL
  ivec3 sz = g_in_size;
#else
  ivec3 sz = g_out_size;
#endif
  uint total = uint(pc.batch) * uint(pc.channels) * uint(sz.x * sz.y * sz.z);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < total; q += step) {
#if UNPOOL
    unpool(int(q));
#elif FRACTIONAL
    fractional(int(q));
#elif BACKWARD
    backward(int(q));
#else
    forward(int(q));
#endif
  }
}
