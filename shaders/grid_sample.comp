#version 460
// Grid sampling (F.grid_sample; aten grid_sampler_2d / grid_sampler_3d and their backward).
// One invocation per grid point (n, spatial output position): it computes the source
// coordinates once and loops over the channels.
//   forward  (BACKWARD 0): out[n, c, p] = interpolation of input[n, c] at grid[n, p].
//   backward (BACKWARD 1): grad_input[n, c, taps] += weight * grad_output[n, c, p] (atomic
//     adds into a float32 / float64 accumulation buffer: a compare-and-swap loop on the
//     value's bits, which every Vulkan device has for 32 bits, or atomicAdd(float) with
//     TVK_ATOMIC_FLOAT on devices with shaderBufferFloat32AtomicAdd; 64-bit needs
//     shaderBufferInt64Atomics), and grad_grid[n, p, :] = d out / d grid summed over channels
//     (no atomics: one writer per grid point).
// Interpolation modes: 0 bilinear (trilinear for DIMS 3), 1 nearest (round half to even),
// 2 bicubic (DIMS 2 only; A = -0.75). Padding modes: 0 zeros, 1 border, 2 reflection.
// Coordinate math follows PyTorch's aten/src/ATen/native/GridSampler.h (unnormalize, clip,
// reflect and their *_set_grad forms; for DIMS 2 the CPU's vectorized 2-D kernel, see
// unnormalize); source positions that are not finite or beyond
// +-2^30 become -100 (every tap out of bounds), as PyTorch's CUDA kernel does.
//
// Spatial dims are indexed k = 0, 1, 2 for (D, H, W); grid component c (x, y, z) addresses
// dim k = 2 - c. DIMS 2 uses D = 1.
// Built per (dims, direction, kind) by tools/build_shaders.py (grid_sample.variants.toml).
// ABI (mirrored by GridSamplePush in src/kernels/grid_sample.cpp):
//   input: any element strides (in_stride, N C D H W order); grid [N, oD, oH, oW, DIMS],
//   out / grad_output [N, C, oD, oH, oW], grad_grid like grid and grad_input
//   [N, C, D, H, W] are contiguous. grad_input is the accumulation buffer (float32 for
//   KIND 0, float64 for KIND 3), zeroed by the caller; 0 when not wanted. flags: bit 0
//   align_corners, bit 1 grad_grid wanted.
//   Specialization constants: 0 = local_size_x, 1 = dtype (-1: push constant).
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

#ifndef DIMS
#define DIMS 2
#endif
#ifndef BACKWARD
#define BACKWARD 0
#endif
#ifndef TVK_ATOMIC_FLOAT
#define TVK_ATOMIC_FLOAT 0
#endif
#if BACKWARD && KIND == KIND_FLOAT64
#extension GL_EXT_shader_atomic_int64 : require
#endif
#if TVK_ATOMIC_FLOAT
#extension GL_EXT_shader_atomic_float : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT = -1;

layout(push_constant) uniform Push {
  uint64_t input_addr;      //  0
  uint64_t grid_addr;       //  8
  uint64_t out_addr;        // 16: output (forward) or grad_output (backward)
  uint64_t grad_input_addr; // 24: accumulation buffer or 0
  uint64_t grad_grid_addr;  // 32
  int batch;                // 40
  int channels;             // 44
  int in_size[3];           // 48: (D, H, W)
  int out_size[3];          // 60
  int in_stride[5];         // 72: (N, C, D, H, W)
  int mode;                 // 92
  int padding;              // 96
  int flags;                // 100
  int dtype;                // 104
  int pad0;                 // 108
} pc;                       // 112 bytes

layout(buffer_reference, std430, buffer_reference_align = 4) buffer RefU32 { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefU64 { uint64_t v; };

int g_dt;

bool align_corners() { return (pc.flags & 1) != 0; }

// ---------------------------------------------------------------- coordinates

// PyTorch's grid_sampler_unnormalize_set_grad: [-1, 1] -> pixel position, d pos / d coord.
// DIMS 2 follows the CPU's vectorized 2-D kernel (GridSamplerKernel.cpp's ComputeLocation)
// instead, whose rounding differs for positions far outside the input: (coord + 1) * scale
// (- 0.5), every operation rounded on its own (`precise`: no fused multiply-add).
T unnormalize(T coord, int size, out T grad) {
#if DIMS == 2
  precise T shifted = coord + T(1);
  if (align_corners()) {
    grad = T(size - 1) / T(2);
    precise T scaled = shifted * grad;
    return scaled;
  }
  grad = T(size) / T(2);
  precise T scaled = shifted * grad;
  precise T centered = scaled - T(0.5);
  return centered;
#else
  if (align_corners()) {
    grad = T(size - 1) / T(2);
    return (coord + T(1)) / T(2) * T(size - 1);
  }
  grad = T(size) / T(2);
  return ((coord + T(1)) * T(size) - T(1)) / T(2);
#endif
}

// clip_coordinates_set_grad: clamp to [0, limit - 1].
T clip_coordinates(T x, int limit, out T grad) {
  if (x <= T(0)) {
    grad = T(0);
    return T(0);
  }
  T top = T(limit - 1);
  if (x >= top) {
    grad = T(0);
    return top;
  }
  grad = T(1);
  return x;
}

// reflect_coordinates_set_grad: reflect x into [twice_low / 2, twice_high / 2].
T reflect_coordinates(T x, int twice_low, int twice_high, out T grad) {
  if (twice_low == twice_high) {
    grad = T(0);
    return T(0);
  }
  T lo = T(twice_low) / T(2);
#if DIMS == 2
  // The CPU's vectorized 2-D kernel: truncated division by twice the span, then one more
  // flip where the remainder passes the span; each operation rounded on its own, so that
  // far positions (whose remainders are mostly rounding) reproduce the CPU's values.
  T twice_span = T(twice_high - twice_low);
  precise T shifted = x - lo;
  precise T abs_in = abs(shifted);
  T double_flips = trunc(abs_in / twice_span);
  precise T whole = double_flips * twice_span;
  precise T extra = abs_in - whole;
  precise T reflected = twice_span - extra;
  bool one_more_flip = extra > reflected;
  grad = (one_more_flip != (shifted < T(0))) ? T(-1) : T(1);
  precise T result = (one_more_flip ? reflected : extra) + lo;
  return result;
#else
  T span = T(twice_high - twice_low) / T(2);
  x = x - lo;
  T sign = T(1);
  if (x < T(0)) {
    sign = T(-1);
    x = -x;
  }
  T extra = mod(x, span);  // x >= 0: the same as C fmod
  int flips = int(floor(x / span));
  if ((flips & 1) == 0) {
    grad = sign;
    return extra + lo;
  }
  grad = -sign;
  return span - extra + lo;
#endif
}

// compute_coordinates (with its gradient): the padding mode applied to a pixel position.
T pad_coordinates(T x, int size, out T grad) {
  grad = T(1);
  if (pc.padding == 1) {
    x = clip_coordinates(x, size, grad);
  } else if (pc.padding == 2) {
    T g_reflect, g_clip;
    if (align_corners()) x = reflect_coordinates(x, 0, 2 * (size - 1), g_reflect);
    else x = reflect_coordinates(x, -1, 2 * size - 1, g_reflect);
    x = clip_coordinates(x, size, g_clip);
    grad = g_reflect * g_clip;
  }
  return x;
}

// Positions that do not fit an int become -100 (out of bounds for every tap).
T safe_position(T x) { return abs(x) < T(1073741824.0) ? x : T(-100); }

// ---------------------------------------------------------------- memory

int input_offset(int n, int c, ivec3 p) {
  return n * pc.in_stride[0] + c * pc.in_stride[1] + p.x * pc.in_stride[2] +
         p.y * pc.in_stride[3] + p.z * pc.in_stride[4];
}

bool in_bounds(ivec3 p) {
  return all(greaterThanEqual(p, ivec3(0))) &&
         all(lessThan(p, ivec3(pc.in_size[0], pc.in_size[1], pc.in_size[2])));
}

T input_at(int n, int c, ivec3 p) { return LOAD_T(pc.input_addr, g_dt, input_offset(n, c, p)); }

#if BACKWARD
// grad_input[n, c, p] += v (contiguous accumulation buffer).
void accumulate(int n, int c, ivec3 p, T v) {
  int idx = ((n * pc.channels + c) * pc.in_size[0] + p.x) * pc.in_size[1] * pc.in_size[2] +
            p.y * pc.in_size[2] + p.z;
#if KIND == KIND_FLOAT64
  RefU64 word = RefU64(pc.grad_input_addr + uint64_t(idx) * 8ul);
  uint64_t old = word.v;
  for (;;) {
    uint64_t desired = doubleBitsToUint64(uint64BitsToDouble(old) + v);
    uint64_t seen = atomicCompSwap(word.v, old, desired);
    if (seen == old) break;
    old = seen;
  }
#elif TVK_ATOMIC_FLOAT
  atomicAdd(RefF32(pc.grad_input_addr + uint64_t(idx) * 4ul).v, v);
#else
  RefU32 word = RefU32(pc.grad_input_addr + uint64_t(idx) * 4ul);
  uint old = word.v;
  for (;;) {
    uint desired = floatBitsToUint(uintBitsToFloat(old) + v);
    uint seen = atomicCompSwap(word.v, old, desired);
    if (seen == old) break;
    old = seen;
  }
#endif
}
#endif

// ---------------------------------------------------------------- bicubic weights (DIMS 2)

#if DIMS == 2
const float CUBIC_A = -0.75;

// get_cubic_upsample_coefficients
void cubic_coefficients(T t, out T w[4]) {
  const T A = T(CUBIC_A);
  T x1 = t + T(1);
  w[0] = ((A * x1 - T(5) * A) * x1 + T(8) * A) * x1 - T(4) * A;
  w[1] = ((A + T(2)) * t - (A + T(3))) * t * t + T(1);
  T x2 = T(1) - t;
  w[2] = ((A + T(2)) * x2 - (A + T(3))) * x2 * x2 + T(1);
  T x3 = x2 + T(1);
  w[3] = ((A * x3 - T(5) * A) * x3 + T(8) * A) * x3 - T(4) * A;
}

// d w[j] / d t (PyTorch's get_cubic_coefficients_grad gives the negated values and
// subtracts them).
void cubic_coefficients_grad(T t, out T g[4]) {
  const T A = T(CUBIC_A);
  T x = -T(1) - t;
  g[0] = -((-T(3) * A * x - T(10) * A) * x - T(8) * A);
  x = -t;
  g[1] = -((-T(3) * (A + T(2)) * x - T(2) * (A + T(3))) * x);
  x = T(1) - t;
  g[2] = -((T(3) * (A + T(2)) * x - T(2) * (A + T(3))) * x);
  x = T(2) - t;
  g[3] = -((T(3) * A * x - T(10) * A) * x + T(8) * A);
}

// The padded integer position of tap position x along a dim of `size` (get_value_bounded).
int bounded_tap(int x, int size) {
  T unused;
  return int(pad_coordinates(T(x), size, unused));
}
#endif

// ---------------------------------------------------------------- main loop

void sample_point(int q) {
  const int out_plane = pc.out_size[0] * pc.out_size[1] * pc.out_size[2];
  const int n = q / out_plane;
  const int s = q - n * out_plane;
  // Source positions per spatial dim k (D, H, W); dims absent in DIMS 2 sit at 0.
  T pos[3], mult[3];
  pos[0] = T(0);
  mult[0] = T(0);
  for (int c = 0; c < DIMS; ++c) {
    const int k = 2 - c;
    T coord = LOAD_T(pc.grid_addr, g_dt, q * DIMS + c);
    T g_un;
    T x = unnormalize(coord, pc.in_size[k], g_un);
    if (pc.mode != 2) {
      T g_pad;
      x = pad_coordinates(x, pc.in_size[k], g_pad);
      g_un *= g_pad;
    }
    pos[k] = safe_position(x);
    mult[k] = g_un;
  }
#if BACKWARD
  T gpos[3] = T[3](T(0), T(0), T(0));
  const bool want_input = pc.grad_input_addr != 0ul;
  const bool want_grid = (pc.flags & 2) != 0;
#endif
  const int out_base = n * pc.channels * out_plane + s;

  if (pc.mode == 0) {
    // (Tri/bi)linear: 2^DIMS corners; corner bit c set = the upper neighbour along x / y / z.
    ivec3 lo = ivec3(0, int(floor(pos[1])), int(floor(pos[2])));
    if (DIMS == 3) lo.x = int(floor(pos[0]));
    T frac[3];  // pos - lo per dim
    frac[0] = T(0);
    for (int k = 3 - DIMS; k < 3; ++k) frac[k] = pos[k] - T(lo[k]);
    ivec3 cp[1 << DIMS];
    T cw[1 << DIMS];
    bool cin[1 << DIMS];
#if BACKWARD
    T cdw[1 << DIMS][3];  // d weight / d pos[k]
#endif
    for (int corner = 0; corner < (1 << DIMS); ++corner) {
      ivec3 p = lo;
      T w = T(1);
      for (int c = 0; c < DIMS; ++c) {
        const int k = 2 - c;
        const bool up = ((corner >> c) & 1) != 0;
        p[k] += up ? 1 : 0;
        w *= up ? frac[k] : T(1) - frac[k];
      }
      cp[corner] = p;
      cw[corner] = w;
      cin[corner] = in_bounds(p);
#if BACKWARD
      cdw[corner][0] = T(0);
      for (int c = 0; c < DIMS; ++c) {
        T d = ((corner >> c) & 1) != 0 ? T(1) : T(-1);
        for (int c2 = 0; c2 < DIMS; ++c2) {
          if (c2 == c) continue;
          const int k2 = 2 - c2;
          d *= ((corner >> c2) & 1) != 0 ? frac[k2] : T(1) - frac[k2];
        }
        cdw[corner][2 - c] = d;
      }
#endif
    }
    for (int ch = 0; ch < pc.channels; ++ch) {
      const int o = out_base + ch * out_plane;
#if BACKWARD
      T g = LOAD_T(pc.out_addr, g_dt, o);
      for (int corner = 0; corner < (1 << DIMS); ++corner) {
        if (!cin[corner]) continue;
        if (want_input) accumulate(n, ch, cp[corner], cw[corner] * g);
        if (want_grid) {
          T v = input_at(n, ch, cp[corner]) * g;
          for (int k = 3 - DIMS; k < 3; ++k) gpos[k] += v * cdw[corner][k];
        }
      }
#else
      T acc = T(0);
      for (int corner = 0; corner < (1 << DIMS); ++corner)
        if (cin[corner]) acc += cw[corner] * input_at(n, ch, cp[corner]);
      STORE_T(pc.out_addr, g_dt, o, acc);
#endif
    }
  } else if (pc.mode == 1) {
    ivec3 p = ivec3(0, int(roundEven(pos[1])), int(roundEven(pos[2])));
    if (DIMS == 3) p.x = int(roundEven(pos[0]));
    const bool inside = in_bounds(p);
    for (int ch = 0; ch < pc.channels; ++ch) {
      const int o = out_base + ch * out_plane;
#if BACKWARD
      if (want_input && inside) accumulate(n, ch, p, LOAD_T(pc.out_addr, g_dt, o));
#else
      STORE_T(pc.out_addr, g_dt, o, inside ? input_at(n, ch, p) : T(0));
#endif
    }
  }
#if DIMS == 2
  else {
    // Bicubic: 4 x 4 taps around floor(pos), each tap position padded on its own.
    const int y0 = int(floor(pos[1])), x0 = int(floor(pos[2]));
    T wy[4], wx[4];
    cubic_coefficients(pos[1] - T(y0), wy);
    cubic_coefficients(pos[2] - T(x0), wx);
#if BACKWARD
    T dwy[4], dwx[4];
    cubic_coefficients_grad(pos[1] - T(y0), dwy);
    cubic_coefficients_grad(pos[2] - T(x0), dwx);
#endif
    int ty[4], tx[4];
    for (int j = 0; j < 4; ++j) {
      ty[j] = bounded_tap(y0 - 1 + j, pc.in_size[1]);
      tx[j] = bounded_tap(x0 - 1 + j, pc.in_size[2]);
    }
    for (int ch = 0; ch < pc.channels; ++ch) {
      const int o = out_base + ch * out_plane;
#if BACKWARD
      T g = LOAD_T(pc.out_addr, g_dt, o);
#else
      T acc = T(0);
#endif
      for (int j = 0; j < 4; ++j) {
#if !BACKWARD
        T row = T(0);
#endif
        for (int i = 0; i < 4; ++i) {
          ivec3 p = ivec3(0, ty[j], tx[i]);
          if (!in_bounds(p)) continue;
#if BACKWARD
          if (want_input) accumulate(n, ch, p, g * wx[i] * wy[j]);
          if (want_grid) {
            T v = input_at(n, ch, p);
            gpos[2] += v * dwx[i] * wy[j] * g;
            gpos[1] += v * dwy[j] * wx[i] * g;
          }
#else
          row += wx[i] * input_at(n, ch, p);
#endif
        }
#if !BACKWARD
        acc += wy[j] * row;
#endif
      }
#if !BACKWARD
      STORE_T(pc.out_addr, g_dt, o, acc);
#endif
    }
  }
#endif
#if BACKWARD
  if (want_grid) {
    for (int c = 0; c < DIMS; ++c) {
      const int k = 2 - c;
      STORE_T(pc.grad_grid_addr, g_dt, q * DIMS + c, pc.mode == 1 ? T(0) : mult[k] * gpos[k]);
    }
  }
#endif
}

void main() {
  g_dt = SPEC_DT >= 0 ? SPEC_DT : pc.dtype;
  const uint total = uint(pc.batch) * uint(pc.out_size[0] * pc.out_size[1] * pc.out_size[2]);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < total; q += step) sample_point(int(q));
}
