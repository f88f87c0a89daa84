#version 460
// Data movement and creation kernels that views plus the copy kernel cannot express
// (shaders/shape.variants.toml, launcher src/kernels/shape.cpp). One output element (or one
// input element for pad backward) per invocation; grid-stride loops cover any grid.
//
//   OP 0  range:  out[i] = start + step * i                          (mode 0: arange / range)
//                 out[i] = i < halfway ? start + step * i
//                                      : end - step * (numel - 1 - i) (mode 1: linspace)
//                 out[i] = pow(base, <linspace value>)               (mode 2: logspace)
//                 computed in the KIND type (float32, float64 or int64), stored converted
//                 to the output dtype (like the CPU's kernels with their accumulate types).
//   OP 1  tri:    tril / triu of contiguous [batch, R, C]: out = keep ? in : 0 with
//                 keep = (c - r <= diagonal) (tril) or (c - r >= diagonal) (triu). out may
//                 be in (in-place).
//   OP 2  pad:    reflection / replication padding of contiguous [B, D, H, W] to
//                 [B, OD, OH, OW] (1-D / 2-D padding is D = OD = 1 and H = OH = 1):
//                 out[b, z, y, x] = in[b, map(z), map(y), map(x)]. A negative pad crops (the
//                 map is the same: output o reads input o - pad, reflected or clamped).
//   OP 3  pad backward: grad_in[b, d, h, w] = sum of grad_out over the outputs that read
//                 (d, h, w) (a gather: deterministic, no atomics); KIND float32 / float64.
//   OP 4  repeat index: out[p] = the r with cumsum[r - 1] <= p < cumsum[r] (int64 cumsum of
//                 the repeats, binary search), stored as the output dtype (int32 / int64).
// Ops 1 and 2 copy element bits (any dtype: specialization constant 1 = dtype).
// Specialization constants: 0 = local_size_x, 1 = dtype (ops 1, 2).
#extension GL_GOOGLE_include_directive : require

#ifndef OP
#define OP 0
#endif
#if OP == 0 || OP == 3
#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#endif
#include "common.glsl"
#if OP == 0 && KIND != 2
#include "math.glsl"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT = 8;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer RefU32 { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefU64 { uint64_t v; };

uint64_t load_bits(uint64_t base, int i) {
  switch (SPEC_DT) {
    case DT_BOOL: case DT_UINT8: case DT_INT8:
      return uint64_t(uint(RefU8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT16: case DT_FLOAT16: case DT_BFLOAT16:
      return uint64_t(uint(RefU16(tvk_elem_addr(base, i, 1)).v));
    case DT_INT32: case DT_FLOAT32:
      return uint64_t(RefU32(tvk_elem_addr(base, i, 2)).v);
    default:
      return RefU64(tvk_elem_addr(base, i, 3)).v;
  }
}

void store_bits(uint64_t base, int i, uint64_t bits) {
  switch (SPEC_DT) {
    case DT_BOOL: case DT_UINT8: case DT_INT8:
      RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(uint(bits)); break;
    case DT_INT16: case DT_FLOAT16: case DT_BFLOAT16:
      RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(uint(bits)); break;
    case DT_INT32: case DT_FLOAT32:
      RefU32(tvk_elem_addr(base, i, 2)).v = uint(bits); break;
    default:
      RefU64(tvk_elem_addr(base, i, 3)).v = bits; break;
  }
}

uint grid_step() { return gl_NumWorkGroups.x * gl_WorkGroupSize.x; }

#if OP == 0
layout(push_constant) uniform Push {
  uint64_t out_addr;  //  0
  int64_t i_start;    //  8: int64 kind
  int64_t i_step;     // 16
  uint64_t start;     // 24: float kinds: float64 bits, or float32 bits in the low word
  uint64_t step;      // 32
  uint64_t end;       // 40
  uint64_t base;      // 48
  int numel;          // 56
  int out_dtype;      // 60
  int mode;           // 64
  int halfway;        // 68
} pc;                 // 72 bytes

#if KIND == KIND_FLOAT64
double from_bits(uint64_t b) { return uint64BitsToDouble(b); }
#elif KIND == KIND_FLOAT32
float from_bits(uint64_t b) { return uintBitsToFloat(uint(b)); }
#endif

#if KIND != KIND_INT64
// base^e, exact by repeated squaring for small integral exponents (integer logspace outputs
// truncate, so 2^3 must be 8, not 7.999...), else tvk_pow.
T power(T base, T e) {
  if (e != tvk_trunc(e) || abs(e) > T(64)) return tvk_pow(base, e);
  int k = int(abs(e));
  T r = T(1), b = base;
  while (k > 0) {
    if ((k & 1) != 0) r *= b;
    b *= b;
    k >>= 1;
  }
  return e < T(0) ? T(1) / r : r;
}
#endif

void main() {
  uint n = uint(pc.numel);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += grid_step()) {
#if KIND == KIND_INT64
    int64_t v = pc.i_start + pc.i_step * int64_t(i);
#else
    T start = from_bits(pc.start), step = from_bits(pc.step);
    precise T v;
    if (pc.mode == 0 || int(i) < pc.halfway) {
      v = start + step * T(i);
    } else {
      v = from_bits(pc.end) - step * T(n - 1u - i);
    }
    if (pc.mode == 2) v = power(from_bits(pc.base), v);
#endif
    STORE_T(pc.out_addr, pc.out_dtype, int(i), v);
  }
}

#elif OP == 1
layout(push_constant) uniform Push {
  uint64_t in_addr;   //  0
  uint64_t out_addr;  //  8
  int numel;          // 16
  int rows;           // 20
  int cols;           // 24
  int diagonal;       // 28 (clamped to [-rows, cols] by the launcher)
  int upper;          // 32: 1 triu, 0 tril
} pc;

void main() {
  uint n = uint(pc.numel);
  uint cols = uint(pc.cols), rows = uint(pc.rows);
  for (uint e = gl_GlobalInvocationID.x; e < n; e += grid_step()) {
    uint c = e % cols;
    uint r = (e / cols) % rows;
    int d = int(c) - int(r);
    bool keep = pc.upper != 0 ? d >= pc.diagonal : d <= pc.diagonal;
    store_bits(pc.out_addr, int(e), keep ? load_bits(pc.in_addr, int(e)) : 0ul);
  }
}

#elif OP == 2 || OP == 3
layout(push_constant) uniform Push {
  uint64_t in_addr;   //  0: input (op 2) or grad_output (op 3)
  uint64_t out_addr;  //  8: output (op 2) or grad_input (op 3)
  int batch;          // 16
  int d;              // 20: input depth / height / width
  int h;              // 24
  int w;              // 28
  int od;             // 32: output depth / height / width
  int oh;             // 36
  int ow;             // 40
  int pad_front;      // 44: leading pads (negative: cropped)
  int pad_top;        // 48
  int pad_left;       // 52
  int reflect;        // 56: 1 reflection, 0 replication
  int in_dtype;       // 60 (op 3)
  int out_dtype;      // 64 (op 3)
} pc;

// Input coordinate read by output coordinate o (pad = leading padding, n = input size). The
// host guarantees |pad| < n for reflection on the padded sides, so one reflection suffices.
int source_of(int o, int pad, int n) {
  int x = o - pad;
  if (pc.reflect != 0) {
    if (x < 0) x = -x;
    if (x >= n) x = 2 * (n - 1) - x;
    return x;
  }
  return clamp(x, 0, n - 1);
}

#if OP == 2
void main() {
  uint ow = uint(pc.ow), oh = uint(pc.oh), od = uint(pc.od);
  uint total = uint(pc.batch) * od * oh * ow;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += grid_step()) {
    uint x = e % ow;
    uint t = e / ow;
    uint y = t % oh;
    t /= oh;
    uint z = t % od;
    uint b = t / od;
    int sz = source_of(int(z), pc.pad_front, pc.d);
    int sy = source_of(int(y), pc.pad_top, pc.h);
    int sx = source_of(int(x), pc.pad_left, pc.w);
    int src = int(((b * uint(pc.d) + uint(sz)) * uint(pc.h) + uint(sy)) * uint(pc.w) + uint(sx));
    store_bits(pc.out_addr, int(e), load_bits(pc.in_addr, src));
  }
}
#else
// The output coordinates that read input coordinate s: up to three disjoint ranges [lo, hi)
// (possibly empty), clipped to [0, out_n) (negative pads crop).
void ranges_of(int s, int pad, int n, int out_n, out ivec2 r[3]) {
  r[0] = ivec2(s + pad, s + pad + 1);                                   // o - pad == s
  r[1] = ivec2(0, 0);
  r[2] = ivec2(0, 0);
  if (pc.reflect != 0) {
    if (s >= 1) r[1] = ivec2(pad - s, pad - s + 1);                     // left reflection
    int o = pad + 2 * (n - 1) - s;                                      // right reflection
    if (s <= n - 2) r[2] = ivec2(o, o + 1);
  } else {
    if (s == 0) r[1] = ivec2(0, pad);                                   // left edge copies
    if (s == n - 1) r[2] = ivec2(pad + n, out_n);                       // right edge copies
  }
  for (int k = 0; k < 3; ++k) r[k] = ivec2(max(r[k].x, 0), min(r[k].y, out_n));
}

T sum_row(int row_base, ivec2 xr[3]) {
  T acc = T(0);
  for (int k = 0; k < 3; ++k)
    for (int x = xr[k].x; x < xr[k].y; ++x) acc += LOAD_T(pc.in_addr, pc.in_dtype, row_base + x);
  return acc;
}

void main() {
  uint w = uint(pc.w), h = uint(pc.h), d = uint(pc.d);
  uint total = uint(pc.batch) * d * h * w;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += grid_step()) {
    int sx = int(e % w);
    uint t = e / w;
    int sy = int(t % h);
    t /= h;
    int sz = int(t % d);
    int b = int(t / d);
    ivec2 zr[3], yr[3], xr[3];
    ranges_of(sz, pc.pad_front, pc.d, pc.od, zr);
    ranges_of(sy, pc.pad_top, pc.h, pc.oh, yr);
    ranges_of(sx, pc.pad_left, pc.w, pc.ow, xr);
    T acc = T(0);
    for (int kz = 0; kz < 3; ++kz)
      for (int z = zr[kz].x; z < zr[kz].y; ++z)
        for (int ky = 0; ky < 3; ++ky)
          for (int y = yr[ky].x; y < yr[ky].y; ++y)
            acc += sum_row(((b * pc.od + z) * pc.oh + y) * pc.ow, xr);
    STORE_T(pc.out_addr, pc.out_dtype, int(e), acc);
  }
}
#endif

#else  // OP == 4
layout(push_constant) uniform Push {
  uint64_t cumsum_addr;  //  0: int64 inclusive cumsum of the repeats
  uint64_t out_addr;     //  8
  int count;             // 16: number of repeats
  int total;             // 20: output length (cumsum[count - 1])
  int out_dtype;         // 24
} pc;

void main() {
  uint n = uint(pc.total);
  for (uint p = gl_GlobalInvocationID.x; p < n; p += grid_step()) {
    int lo = 0, hi = pc.count;  // first r with cumsum[r] > p
    while (lo < hi) {
      int mid = (lo + hi) >> 1;
      if (RefI64(tvk_elem_addr(pc.cumsum_addr, mid, 3)).v > int64_t(p))
        hi = mid;
      else
        lo = mid + 1;
    }
    store_i64(pc.out_addr, pc.out_dtype, int(p), int64_t(lo));
  }
}
#endif
