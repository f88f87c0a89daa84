#version 460
// hash_tensor's XOR reduction (mode 0): out[o] = XOR over r of bits64(in[o, r]), the 64-bit
// pattern PyTorch's CPU kernel (XorSumOps) combines:
//   floating types: the value widened to float64, bit-cast (float16 / bfloat16 / float32 go
//     through integer code here: exact for subnormals whatever the device's denormal mode,
//     NaN payloads kept and quieted as x86's float -> double conversion does);
//   integers: sign- (int8 / int16 / int32) or zero-extended (uint8) to 64 bits, int64 as is;
//   bool: 0 or 1.
// XOR is associative and commutative, so any split of the work gives the CPU's bits.
//
// ABI (mirrored by HashPush in src/kernels/hash.cpp):
//   geometry: a parameter block (HashGeometry): the output index space (out_ndim dims, dim 0
//     fastest; per dim the size, the output element stride and the input element stride) and
//     the reduced index space (red_ndim dims: size, input element stride).
//   in_dtype: the DType code of the input (pass 2 of a split: DT_INT64 partials).
//   split > 1: work item w = o * split + s reduces reduced indices [s * chunk, (s + 1) * chunk)
//     and stores its partial (int64 bits) at element w of out (a contiguous scratch buffer).
//   The output is written as int64 (the uint64 bits). One workgroup per work item
//   (grid-stride), a shared-memory XOR tree. Specialization constant 0 = local_size_x (a
//   power of two).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
  uint64_t in_addr;   //  0
  uint64_t out_addr;  //  8
  uint64_t geometry;  // 16
  int items;          // 24: work items (outputs times split)
  int red_numel;      // 28
  int out_ndim;       // 32
  int red_ndim;       // 36
  int in_dtype;       // 40
  int split;          // 44
  int chunk;          // 48
  int pad;            // 52
} pc;                 // 56 bytes

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer HashGeometry {
  int out_sizes[8];
  int out_strides[8];
  int out_in_strides[8];
  int red_sizes[8];
  int red_strides[8];
};

const uint WG = gl_WorkGroupSize.x;
shared uint64_t red[gl_WorkGroupSize.x];

// float32 bits -> float64 bits, exactly (integer code).
uint64_t f32_bits_to_f64(uint x) {
  const uint64_t sign = uint64_t(x >> 31) << 63;
  const uint e = (x >> 23) & 0xffu;
  const uint m = x & 0x7fffffu;
  if (e == 0xffu) {
    // Inf, or NaN: the payload moves up, the quiet bit is set.
    uint64_t mant = uint64_t(m) << 29;
    if (m != 0u) mant |= uint64_t(1) << 51;
    return sign | (uint64_t(0x7ff) << 52) | mant;
  }
  if (e == 0u) {
    if (m == 0u) return sign;
    // Subnormal m * 2^-149: normal in float64.
    const int p = findMSB(m);  // 0 .. 22
    const uint64_t mant = (uint64_t(m) << (52 - p)) & ((uint64_t(1) << 52) - uint64_t(1));
    return sign | (uint64_t(p - 149 + 1023) << 52) | mant;
  }
  return sign | (uint64_t(e + 896u) << 52) | (uint64_t(m) << 29);
}

// float16 bits -> float32 bits, exactly (NaN payload kept).
uint f16_bits_to_f32(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1fu;
  const uint m = h & 0x3ffu;
  if (e == 0x1fu) return sign | 0x7f800000u | (m << 13);
  if (e == 0u) {
    if (m == 0u) return sign;
    const int p = findMSB(m);  // 0 .. 9: m * 2^-24 = 2^(p - 24) * 1.f
    return sign | (uint(p - 24 + 127) << 23) | ((m << (23 - p)) & 0x7fffffu);
  }
  return sign | ((e + 112u) << 23) | (m << 13);
}

uint64_t bits_of(int i) {
  const uint64_t a = pc.in_addr;
  switch (pc.in_dtype) {
    case DT_BOOL: return uint(RefU8(tvk_elem_addr(a, i, 0)).v) != 0u ? uint64_t(1) : uint64_t(0);
    case DT_UINT8: return uint64_t(uint(RefU8(tvk_elem_addr(a, i, 0)).v));
    case DT_INT8: return uint64_t(int64_t(int(RefI8(tvk_elem_addr(a, i, 0)).v)));
    case DT_INT16: return uint64_t(int64_t(int(RefI16(tvk_elem_addr(a, i, 1)).v)));
    case DT_INT32: return uint64_t(int64_t(RefI32(tvk_elem_addr(a, i, 2)).v));
    case DT_FLOAT16: return f32_bits_to_f64(f16_bits_to_f32(uint(RefU16(tvk_elem_addr(a, i, 1)).v)));
    case DT_BFLOAT16: return f32_bits_to_f64(uint(RefU16(tvk_elem_addr(a, i, 1)).v) << 16);
    case DT_FLOAT32: return f32_bits_to_f64(uint(RefI32(tvk_elem_addr(a, i, 2)).v));
    default: return uint64_t(RefI64(tvk_elem_addr(a, i, 3)).v);  // int64, float64: the bits
  }
}

void main() {
  HashGeometry g = HashGeometry(pc.geometry);
  const int lid = int(gl_LocalInvocationID.x);
  for (int w = int(gl_WorkGroupID.x); w < pc.items; w += int(gl_NumWorkGroups.x)) {
    const int o = w / pc.split, s = w % pc.split;
    // Output o -> its input base offset and output offset.
    int base = 0, out_off = 0, rest = o;
    for (int d = 0; d < pc.out_ndim; ++d) {
      const int size = g.out_sizes[d];
      const int idx = rest % size;
      rest /= size;
      base += idx * g.out_in_strides[d];
      out_off += idx * g.out_strides[d];
    }
    const int r0 = s * pc.chunk, r1 = min(pc.red_numel, r0 + pc.chunk);
    uint64_t acc = uint64_t(0);
    for (int r = r0 + lid; r < r1; r += int(WG)) {
      int off = base, q = r;
      for (int d = 0; d < pc.red_ndim; ++d) {
        const int size = g.red_sizes[d];
        off += (q % size) * g.red_strides[d];
        q /= size;
      }
      acc ^= bits_of(off);
    }
    red[lid] = acc;
    memoryBarrierShared();
    barrier();
    for (uint hlf = WG / 2u; hlf > 0u; hlf >>= 1) {
      if (uint(lid) < hlf) red[lid] ^= red[lid + int(hlf)];
      memoryBarrierShared();
      barrier();
    }
    if (lid == 0) {
      const int at = pc.split > 1 ? w : out_off;
      RefI64(tvk_elem_addr(pc.out_addr, at, 3)).v = int64_t(red[0]);
    }
    memoryBarrierShared();
    barrier();
  }
}
