#version 460
// Indexing family: gather / scatter through index tensors, accumulating scatters, and the
// compactions behind nonzero / masked_select / masked_scatter_.
//
// Built per variant by tools/build_shaders.py (index.variants.toml):
//   MODE 0  move        raw element copy (ELEM_LOG2: 1, 2, 4 or 8-byte elements, no dtype
//                       conversion: every dtype, float64 included, on every device)
//   MODE 1  accumulate  dst[...] op= src[...] in compute kind KIND (op: add, mul, max, min),
//                       atomic: a compare-and-swap loop on the 32-bit word that holds the
//                       element (1/2/4-byte dtypes) or on the 64-bit element (8-byte dtypes,
//                       needs shaderBufferInt64Atomics); native atomics where GLSL has them
//                       (int32 add/max/min, int64 add, float32 add with TVK_ATOMIC_FLOAT)
//   MODE 2  compact     nonzero / masked_select / masked_scatter_ from an inclusive prefix sum
//
// ABI (mirrored by IndexParams / IndexPush in src/kernels/index.cpp):
//   The index space has `ndim` <= 8 dims, dim 0 fastest; linear id i in [0, numel) decodes
//   into coordinates c[d]. Element offsets: dst_off = sum c[d] * dst_strides[d], likewise
//   src_off and, for every index tensor k, idx_off[k] = sum c[d] * idx_strides[k][d].
//   Index value v_k = idx_k[idx_off[k]] (int32 or int64). When idx_wrap[k] != 0, negative
//   values are wrapped (v += idx_size[k]). A value outside [0, idx_size[k]) is reported to the
//   stream's error record (code error_code, dim idx_error_dim[k]) and the element is skipped
//   (gather writes 0 instead). Otherwise v_k * idx_stride[k] is added to the src offset
//   (gather = 1) or the dst offset (gather = 0).
//   Compact (MODE 2): prefix = inclusive int32 prefix sum of the mask over the index space in
//   linear-id order; element i is selected when prefix[i] != prefix[i - 1] (prefix[-1] = 0),
//   k = prefix[i] - 1 is its rank. compact_mode 0 (nonzero): dst (int64) at
//   k * dst_strides[0] + (ndim - 1 - d) * dst_strides[1] gets c[d] (dims were reversed by
//   the caller, so column j is PyTorch dim j). 1 (masked_select): dst[k * dst_strides[0]] =
//   src[src_off]. 2 (masked_scatter_): dst[dst_off] = src[k] when k < src_numel, else an
//   error is reported.
//   Grid: 1-D, any number of workgroups (grid-stride loop).
#extension GL_GOOGLE_include_directive : require

#ifndef MODE
#define MODE 0
#endif
#if MODE == 1 && KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"

#if MODE == 1 && (KIND == 2 || KIND == 3)
#extension GL_EXT_shader_atomic_int64 : require
#endif
#ifndef TVK_ATOMIC_FLOAT
#define TVK_ATOMIC_FLOAT 0
#endif
#if TVK_ATOMIC_FLOAT
#extension GL_EXT_shader_atomic_float : require
#endif
#ifndef ELEM_LOG2
#define ELEM_LOG2 2
#endif

layout(local_size_x_id = 0) in;

#define MAX_DIMS 8
#define MAX_INDICES 8

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Params {
  uint64_t dst_addr;
  uint64_t src_addr;
  uint64_t aux_addr;      // compact: the prefix sum (int32)
  int ndim;
  int num_indices;
  int numel;
  int dst_dtype;
  int src_dtype;
  int gather;
  int reduce_op;          // accumulate: 0 add, 1 mul, 2 max, 3 min
  uint error_code;
  int compact_mode;
  int src_numel;
  int sizes[MAX_DIMS];
  int dst_strides[MAX_DIMS];
  int src_strides[MAX_DIMS];
  int idx_strides[MAX_INDICES * MAX_DIMS];  // [k * MAX_DIMS + d]
  uint64_t idx_addr[MAX_INDICES];
  int idx_dtype[MAX_INDICES];
  int idx_size[MAX_INDICES];
  int idx_stride[MAX_INDICES];
  int idx_wrap[MAX_INDICES];
  int idx_error_dim[MAX_INDICES];
};

layout(push_constant) uniform Push {
  uint64_t params;  // 0
  uint64_t errors;  // 8: the stream's error record
} pc;               // 16 bytes

layout(buffer_reference, std430, buffer_reference_align = 4) buffer RefU32 { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefU64 { uint64_t v; };

// ---------------------------------------------------------------- raw element moves

void move_element(uint64_t dst, int doff, uint64_t src, int soff) {
#if ELEM_LOG2 == 0
  RefU8(tvk_elem_addr(dst, doff, 0)).v = RefU8(tvk_elem_addr(src, soff, 0)).v;
#elif ELEM_LOG2 == 1
  RefU16(tvk_elem_addr(dst, doff, 1)).v = RefU16(tvk_elem_addr(src, soff, 1)).v;
#elif ELEM_LOG2 == 2
  RefU32(tvk_elem_addr(dst, doff, 2)).v = RefU32(tvk_elem_addr(src, soff, 2)).v;
#else
  RefU64(tvk_elem_addr(dst, doff, 3)).v = RefU64(tvk_elem_addr(src, soff, 3)).v;
#endif
}

void zero_element(uint64_t dst, int doff) {
#if ELEM_LOG2 == 0
  RefU8(tvk_elem_addr(dst, doff, 0)).v = uint8_t(0);
#elif ELEM_LOG2 == 1
  RefU16(tvk_elem_addr(dst, doff, 1)).v = uint16_t(0);
#elif ELEM_LOG2 == 2
  RefU32(tvk_elem_addr(dst, doff, 2)).v = 0u;
#else
  RefU64(tvk_elem_addr(dst, doff, 3)).v = 0ul;
#endif
}

// ---------------------------------------------------------------- accumulation
#if MODE == 1

T combine(T a, T b, int op) {
  switch (op) {
    case 0: return a + b;
    case 1: return a * b;
#if T_IS_FLOAT
    // NaN propagates (PyTorch's scatter_reduce amax / amin).
    case 2: return isnan(a) ? a : (isnan(b) ? b : max(a, b));
    default: return isnan(a) ? a : (isnan(b) ? b : min(a, b));
#else
    case 2: return max(a, b);
    default: return min(a, b);
#endif
  }
}

#if KIND == KIND_FLOAT32 || KIND == KIND_INT32
// Decode / encode the `bits` of one 1/2/4-byte element of dtype `dt` (zero-extended).
T decode_bits(uint bits, int dt) {
#if KIND == KIND_FLOAT32
  if (dt == DT_FLOAT16) return tvk_half_to_float(bits);
  if (dt == DT_BFLOAT16) return tvk_bf16_to_float(bits);
  return uintBitsToFloat(bits);
#else
  switch (dt) {
    case DT_BOOL: return bits != 0u ? 1 : 0;
    case DT_INT8: return bitfieldExtract(int(bits), 0, 8);
    case DT_INT16: return bitfieldExtract(int(bits), 0, 16);
    default: return int(bits);  // uint8 (zero-extended) and int32
  }
#endif
}

uint encode_bits(T v, int dt) {
#if KIND == KIND_FLOAT32
  if (dt == DT_FLOAT16) return tvk_float_to_half(v);
  if (dt == DT_BFLOAT16) return tvk_float_to_bf16(v);
  return floatBitsToUint(v);
#else
  if (dt == DT_BOOL) return v != 0 ? 1u : 0u;
  return uint(v);  // masked to the element width by the caller
#endif
}

void accumulate(uint64_t base, int off, int dt, T v, int op) {
  const int log2size = (dt == DT_BOOL || dt == DT_UINT8 || dt == DT_INT8) ? 0
                       : (dt == DT_INT16 || dt == DT_FLOAT16 || dt == DT_BFLOAT16) ? 1 : 2;
  const uint64_t addr = tvk_elem_addr(base, off, log2size);
#if KIND == KIND_INT32
  if (log2size == 2) {
    if (op == 0) { atomicAdd(RefI32(addr).v, v); return; }
    if (op == 2) { atomicMax(RefI32(addr).v, v); return; }
    if (op == 3) { atomicMin(RefI32(addr).v, v); return; }
  }
#endif
#if TVK_ATOMIC_FLOAT
  if (dt == DT_FLOAT32 && op == 0) { atomicAdd(RefF32(addr).v, v); return; }
#endif
  // Compare-and-swap on the aligned 32-bit word that contains the element; the other bytes
  // of the word are written back unchanged.
  const uint64_t word_addr = addr & ~3ul;
  const uint shift = uint(addr & 3ul) * 8u;
  const uint mask = log2size == 2 ? 0xffffffffu : (((1u << (8u << log2size)) - 1u) << shift);
  RefU32 word = RefU32(word_addr);
  uint old = word.v;
  for (;;) {
    const uint bits = (old & mask) >> shift;
    const uint updated = (encode_bits(combine(decode_bits(bits, dt), v, op), dt) << shift) & mask;
    const uint desired = (old & ~mask) | updated;
    const uint seen = atomicCompSwap(word.v, old, desired);
    if (seen == old) break;
    old = seen;
  }
}
#else  // 8-byte elements: int64 / float64 kinds
void accumulate(uint64_t base, int off, int dt, T v, int op) {
  const uint64_t addr = tvk_elem_addr(base, off, 3);
#if KIND == KIND_INT64
  if (op == 0) { atomicAdd(RefI64(addr).v, v); return; }
#endif
  RefU64 word = RefU64(addr);
  uint64_t old = word.v;
  for (;;) {
#if KIND == KIND_INT64
    const uint64_t desired = uint64_t(combine(int64_t(old), v, op));
#else
    const uint64_t desired = doubleBitsToUint64(combine(uint64BitsToDouble(old), v, op));
#endif
    const uint64_t seen = atomicCompSwap(word.v, old, desired);
    if (seen == old) break;
    old = seen;
  }
}
#endif
#endif  // MODE == 1

// ---------------------------------------------------------------- main

void main() {
  Params p = Params(pc.params);
  const int numel = p.numel;
  const int ndim = p.ndim;
  const int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  // The geometry is read once per invocation, not once per element: on CPU drivers every
  // buffer load is a loop over the SIMD lanes, and the launcher gives each invocation many
  // elements there.
  int sizes[MAX_DIMS], dst_strides[MAX_DIMS], src_strides[MAX_DIMS];
  for (int d = 0; d < ndim; ++d) {
    sizes[d] = p.sizes[d];
    dst_strides[d] = p.dst_strides[d];
    src_strides[d] = p.src_strides[d];
  }
#if MODE != 2
  const int num_indices = p.num_indices;
  int idx_strides[MAX_INDICES * MAX_DIMS];
  uint64_t idx_addr[MAX_INDICES];
  int idx_dtype[MAX_INDICES], idx_size[MAX_INDICES], idx_stride[MAX_INDICES], idx_wrap[MAX_INDICES];
  for (int k = 0; k < num_indices; ++k) {
    for (int d = 0; d < ndim; ++d) idx_strides[k * MAX_DIMS + d] = p.idx_strides[k * MAX_DIMS + d];
    idx_addr[k] = p.idx_addr[k];
    idx_dtype[k] = p.idx_dtype[k];
    idx_size[k] = p.idx_size[k];
    idx_stride[k] = p.idx_stride[k];
    idx_wrap[k] = p.idx_wrap[k];
  }
  const bool gather = p.gather != 0;
#endif
  for (int i = int(gl_GlobalInvocationID.x); i < numel; i += stride) {
    int coords[MAX_DIMS];
    int dst_off = 0, src_off = 0;
    int rem = i;
    for (int d = 0; d < ndim; ++d) {
      const int c = rem % sizes[d];
      rem /= sizes[d];
      coords[d] = c;
      dst_off += c * dst_strides[d];
      src_off += c * src_strides[d];
    }
#if MODE == 2
    RefI32 prefix = RefI32(tvk_elem_addr(p.aux_addr, i, 2));
    const int incl = prefix.v;
    const int prev = i > 0 ? RefI32(tvk_elem_addr(p.aux_addr, i - 1, 2)).v : 0;
    if (incl == prev) continue;
    const int k = incl - 1;
    if (p.compact_mode == 0) {
      for (int d = 0; d < ndim; ++d)
        RefI64(tvk_elem_addr(p.dst_addr, k * p.dst_strides[0] + (ndim - 1 - d) * p.dst_strides[1], 3)).v =
            int64_t(coords[d]);
    } else if (p.compact_mode == 1) {
      move_element(p.dst_addr, k * p.dst_strides[0], p.src_addr, src_off);
    } else {
      if (k >= p.src_numel) {
        tvk_report_index_error(pc.errors, p.error_code, int64_t(k), int64_t(p.src_numel));
        continue;
      }
      move_element(p.dst_addr, dst_off, p.src_addr, k);
    }
#else
    // Resolve every index; any bad one skips the element (the first bad one is reported).
    int64_t extra = 0;
    int bad = -1;
    int64_t bad_value = 0;
    for (int k = 0; k < num_indices; ++k) {
      int ioff = 0;
      for (int d = 0; d < ndim; ++d) ioff += coords[d] * idx_strides[k * MAX_DIMS + d];
      const int64_t v = idx_dtype[k] == DT_INT32
                            ? int64_t(RefI32(tvk_elem_addr(idx_addr[k], ioff, 2)).v)
                            : RefI64(tvk_elem_addr(idx_addr[k], ioff, 3)).v;
      const int64_t size = int64_t(idx_size[k]);
      const int64_t wrapped = (idx_wrap[k] != 0 && v < 0l) ? v + size : v;
      const bool in_range = wrapped >= 0l && wrapped < size;
      if (!in_range && bad < 0) {
        bad = k;
        bad_value = v;
      }
      extra += in_range ? wrapped * int64_t(idx_stride[k]) : 0l;
    }
    const bool ok = bad < 0;
    if (!ok)
      tvk_report_index_error(pc.errors, p.error_code, bad_value, int64_t(idx_size[bad]),
                             p.idx_error_dim[bad]);
    if (gather) src_off += int(extra);
    else dst_off += int(extra);
#if MODE == 0
    if (ok) move_element(p.dst_addr, dst_off, p.src_addr, src_off);
    else if (gather) zero_element(p.dst_addr, dst_off);
#else
    if (ok) accumulate(p.dst_addr, dst_off, p.dst_dtype, LOAD_T(p.src_addr, p.src_dtype, src_off), p.reduce_op);
#endif
#endif
  }
}
