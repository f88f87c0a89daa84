// Shared by every torch-vk compute shader: extensions, the storage dtype codes, and typed
// load/store helpers over buffer device addresses.
//
// Contract (the ABI between shaders and src/kernels):
//   * Memory is addressed by 64-bit buffer device addresses (GL_EXT_buffer_reference); there
//     are no descriptor sets. An element is at `base + index * dtype_size` where `index` is a
//     signed 32-bit element offset (strides may be negative).
//   * Only storage-level 8/16-bit access is used (storageBuffer8BitAccess /
//     storageBuffer16BitAccess): 8/16-bit values are loaded/stored and converted to 32-bit
//     immediately. No shaderInt8/shaderInt16/shaderFloat16 arithmetic is required. float16 and
//     bfloat16 are handled as raw uint16 bits with integer code (exact, portable, round to
//     nearest even on store, independent of the device's denormal/rounding modes).
//   * shaderInt64 is required (int64 tensors, 64-bit addresses). double appears only when the
//     includer defines TVK_FLOAT64 1 (those variants are used only on devices with
//     shaderFloat64).
//   * Conversions are C-style like PyTorch: float -> integer truncates toward zero (narrow
//     integer types wrap through int32), any -> bool is (value != 0) (NaN -> true).
//   * The `dt` argument of every helper is uniform (a push constant or a specialization
//     constant), so the switch never diverges inside a subgroup.
#ifndef TVK_COMMON_GLSL
#define TVK_COMMON_GLSL

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require

#ifndef TVK_FLOAT64
#define TVK_FLOAT64 0
#endif

// Storage dtype codes: identical to tvk::kernels::DType.
#define DT_BOOL 0
#define DT_UINT8 1
#define DT_INT8 2
#define DT_INT16 3
#define DT_INT32 4
#define DT_INT64 5
#define DT_FLOAT16 6
#define DT_BFLOAT16 7
#define DT_FLOAT32 8
#define DT_FLOAT64 9

// One scalar per reference; the address is computed explicitly so that negative offsets are
// plain pointer arithmetic rather than out-of-range array indices.
layout(buffer_reference, std430, buffer_reference_align = 1) buffer RefU8 { uint8_t v; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer RefI8 { int8_t v; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer RefU16 { uint16_t v; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer RefI16 { int16_t v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer RefI32 { int v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer RefF32 { float v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefI64 { int64_t v; };
#if TVK_FLOAT64
layout(buffer_reference, std430, buffer_reference_align = 8) buffer RefF64 { double v; };
#endif

// Byte address of element `index` of an array of `1 << log2size`-byte elements at `base`.
uint64_t tvk_elem_addr(uint64_t base, int index, int log2size) {
  return base + uint64_t(int64_t(index) << log2size);
}

// ---- float16 / bfloat16 bit conversions (integer-only, exact) ----
// Both directions are branch-free (the cases are computed side by side and chosen with
// selects): they sit inside the tile loaders of GEMM-like kernels, where a branch on every
// freshly loaded value keeps a GPU compiler from issuing the loads of a tile back to back
// (each value must arrive before its branch) and costs a reconvergence point per element.
// No float16 hardware conversion is used: its handling of subnormals (and NaN payloads)
// varies between drivers, and these helpers must match PyTorch's CPU bit for bit everywhere.

// Exact for every input, only the low 16 bits of `h` are read. NaN payloads are kept, and
// signalling NaNs come out quiet, as PyTorch's CPU conversion gives them.
float tvk_half_to_float(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint em = h & 0x7fffu;  // exponent and mantissa
  // Normal: shift into place and rebias the exponent 15 -> 127 (+112 << 23); inf / NaN
  // (exponent 31): +224 << 23 takes the exponent field to 255 and keeps the mantissa.
  uint wide = (em << 13) + mix(0x38000000u, 0x70000000u, em >= 0x7c00u);
  wide |= mix(0u, 0x00400000u, em > 0x7c00u);  // NaN: set the quiet bit
  // Zero / subnormal: m * 2^-24 = (0.5 + m * 2^-24) - 0.5, both steps exact in fp32 and no
  // fp32 subnormal involved (so flush-to-zero modes cannot change it).
  uint tiny = floatBitsToUint(uintBitsToFloat(0x3f000000u | em) - 0.5);
  return uintBitsToFloat(sign | mix(wide, tiny, em < 0x0400u));
}

// Round to nearest even; overflow -> inf; NaN -> quiet NaN with the sign kept (as c10::Half).
uint tvk_float_to_half(float f) {
  uint x = floatBitsToUint(f);
  uint sign = (x >> 16) & 0x8000u;
  uint ax = x & 0x7fffffffu;
  // Normal half (ax >= 2^-14): rebias the exponent 127 -> 15 and round the 13 dropped bits
  // to nearest even (a carry into the exponent is the correct rounding up).
  uint r = ax - 0x38000000u;
  uint normal = (r + 0x0fffu + ((r >> 13) & 1u)) >> 13;
  // Subnormal half (ax < 2^-14): value / 2^-24 = m >> shift, rounded to nearest even. shift is
  // capped at 25: everything below 2^-25 (fp32 zeros and subnormals included) rounds to 0
  // (2^-25 itself is a tie that goes to the even 0).
  uint m = (ax & 0x7fffffu) | 0x800000u;
  uint shift = min(126u - min(ax >> 23, 126u), 25u);
  uint subnormal = (m + ((1u << shift) >> 1) - 1u + ((m >> shift) & 1u)) >> shift;
  uint h = mix(subnormal, normal, ax >= 0x38800000u);
  h = mix(h, 0x7c00u, ax >= 0x477ff000u);  // >= 65520 rounds to inf (and inf itself)
  h = mix(h, 0x7e00u, ax > 0x7f800000u);   // NaN
  return sign | h;
}

float tvk_bf16_to_float(uint h) { return uintBitsToFloat(h << 16); }

// Round to nearest even; NaN -> 0x7fc0 (as c10::BFloat16).
uint tvk_float_to_bf16(float f) {
  uint x = floatBitsToUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

// ---- loads: storage dtype -> compute type ----
float load_f32(uint64_t base, int dt, int i) {
  switch (dt) {
    case DT_BOOL: return uint(RefU8(tvk_elem_addr(base, i, 0)).v) != 0u ? 1.0 : 0.0;
    case DT_UINT8: return float(uint(RefU8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT8: return float(int(RefI8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT16: return float(int(RefI16(tvk_elem_addr(base, i, 1)).v));
    case DT_INT32: return float(RefI32(tvk_elem_addr(base, i, 2)).v);
    case DT_INT64: return float(RefI64(tvk_elem_addr(base, i, 3)).v);
    case DT_FLOAT16: return tvk_half_to_float(uint(RefU16(tvk_elem_addr(base, i, 1)).v));
    case DT_BFLOAT16: return tvk_bf16_to_float(uint(RefU16(tvk_elem_addr(base, i, 1)).v));
#if TVK_FLOAT64
    case DT_FLOAT64: return float(RefF64(tvk_elem_addr(base, i, 3)).v);
#endif
    default: return RefF32(tvk_elem_addr(base, i, 2)).v;
  }
}

int load_i32(uint64_t base, int dt, int i) {
  switch (dt) {
    case DT_BOOL: return uint(RefU8(tvk_elem_addr(base, i, 0)).v) != 0u ? 1 : 0;
    case DT_UINT8: return int(uint(RefU8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT8: return int(RefI8(tvk_elem_addr(base, i, 0)).v);
    case DT_INT16: return int(RefI16(tvk_elem_addr(base, i, 1)).v);
    case DT_INT64: return int(RefI64(tvk_elem_addr(base, i, 3)).v);
    case DT_FLOAT16: return int(tvk_half_to_float(uint(RefU16(tvk_elem_addr(base, i, 1)).v)));
    case DT_BFLOAT16: return int(tvk_bf16_to_float(uint(RefU16(tvk_elem_addr(base, i, 1)).v)));
    case DT_FLOAT32: return int(RefF32(tvk_elem_addr(base, i, 2)).v);
#if TVK_FLOAT64
    case DT_FLOAT64: return int(RefF64(tvk_elem_addr(base, i, 3)).v);
#endif
    default: return RefI32(tvk_elem_addr(base, i, 2)).v;
  }
}

int64_t load_i64(uint64_t base, int dt, int i) {
  switch (dt) {
    case DT_BOOL: return uint(RefU8(tvk_elem_addr(base, i, 0)).v) != 0u ? 1l : 0l;
    case DT_UINT8: return int64_t(uint(RefU8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT8: return int64_t(int(RefI8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT16: return int64_t(int(RefI16(tvk_elem_addr(base, i, 1)).v));
    case DT_INT32: return int64_t(RefI32(tvk_elem_addr(base, i, 2)).v);
    case DT_FLOAT16: return int64_t(tvk_half_to_float(uint(RefU16(tvk_elem_addr(base, i, 1)).v)));
    case DT_BFLOAT16: return int64_t(tvk_bf16_to_float(uint(RefU16(tvk_elem_addr(base, i, 1)).v)));
    case DT_FLOAT32: return int64_t(RefF32(tvk_elem_addr(base, i, 2)).v);
#if TVK_FLOAT64
    case DT_FLOAT64: return int64_t(RefF64(tvk_elem_addr(base, i, 3)).v);
#endif
    default: return RefI64(tvk_elem_addr(base, i, 3)).v;
  }
}

#if TVK_FLOAT64
double load_f64(uint64_t base, int dt, int i) {
  switch (dt) {
    case DT_BOOL: return uint(RefU8(tvk_elem_addr(base, i, 0)).v) != 0u ? 1.0lf : 0.0lf;
    case DT_UINT8: return double(uint(RefU8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT8: return double(int(RefI8(tvk_elem_addr(base, i, 0)).v));
    case DT_INT16: return double(int(RefI16(tvk_elem_addr(base, i, 1)).v));
    case DT_INT32: return double(RefI32(tvk_elem_addr(base, i, 2)).v);
    case DT_INT64: return double(RefI64(tvk_elem_addr(base, i, 3)).v);
    case DT_FLOAT16: return double(tvk_half_to_float(uint(RefU16(tvk_elem_addr(base, i, 1)).v)));
    case DT_BFLOAT16: return double(tvk_bf16_to_float(uint(RefU16(tvk_elem_addr(base, i, 1)).v)));
    case DT_FLOAT32: return double(RefF32(tvk_elem_addr(base, i, 2)).v);
    default: return RefF64(tvk_elem_addr(base, i, 3)).v;
  }
}
#endif

// ---- stores: compute type -> storage dtype ----
// Narrow integer storage wraps like PyTorch's C-style casts (through int32 / int64).
void store_i32(uint64_t base, int dt, int i, int v) {
  switch (dt) {
    case DT_BOOL: RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(v != 0 ? 1u : 0u); break;
    case DT_UINT8: RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(uint(v)); break;
    case DT_INT8: RefI8(tvk_elem_addr(base, i, 0)).v = int8_t(v); break;
    case DT_INT16: RefI16(tvk_elem_addr(base, i, 1)).v = int16_t(v); break;
    case DT_INT64: RefI64(tvk_elem_addr(base, i, 3)).v = int64_t(v); break;
    case DT_FLOAT16: RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(tvk_float_to_half(float(v))); break;
    case DT_BFLOAT16: RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(tvk_float_to_bf16(float(v))); break;
    case DT_FLOAT32: RefF32(tvk_elem_addr(base, i, 2)).v = float(v); break;
#if TVK_FLOAT64
    case DT_FLOAT64: RefF64(tvk_elem_addr(base, i, 3)).v = double(v); break;
#endif
    default: RefI32(tvk_elem_addr(base, i, 2)).v = v; break;
  }
}

void store_i64(uint64_t base, int dt, int i, int64_t v) {
  switch (dt) {
    case DT_BOOL: RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(v != 0l ? 1u : 0u); break;
    case DT_UINT8: RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(uint(v)); break;
    case DT_INT8: RefI8(tvk_elem_addr(base, i, 0)).v = int8_t(int(v)); break;
    case DT_INT16: RefI16(tvk_elem_addr(base, i, 1)).v = int16_t(int(v)); break;
    case DT_INT32: RefI32(tvk_elem_addr(base, i, 2)).v = int(v); break;
    case DT_FLOAT16: RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(tvk_float_to_half(float(v))); break;
    case DT_BFLOAT16: RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(tvk_float_to_bf16(float(v))); break;
    case DT_FLOAT32: RefF32(tvk_elem_addr(base, i, 2)).v = float(v); break;
#if TVK_FLOAT64
    case DT_FLOAT64: RefF64(tvk_elem_addr(base, i, 3)).v = double(v); break;
#endif
    default: RefI64(tvk_elem_addr(base, i, 3)).v = v; break;
  }
}

// float -> integer storage truncates toward zero; narrow types wrap through int32 (values
// beyond the int32 range are undefined, as in C).
void store_f32(uint64_t base, int dt, int i, float v) {
  switch (dt) {
    case DT_BOOL: RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(v == 0.0 ? 0u : 1u); break;
    case DT_UINT8: RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(uint(int(v))); break;
    case DT_INT8: RefI8(tvk_elem_addr(base, i, 0)).v = int8_t(int(v)); break;
    case DT_INT16: RefI16(tvk_elem_addr(base, i, 1)).v = int16_t(int(v)); break;
    case DT_INT32: RefI32(tvk_elem_addr(base, i, 2)).v = int(v); break;
    case DT_INT64: RefI64(tvk_elem_addr(base, i, 3)).v = int64_t(v); break;
    case DT_FLOAT16: RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(tvk_float_to_half(v)); break;
    case DT_BFLOAT16: RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(tvk_float_to_bf16(v)); break;
#if TVK_FLOAT64
    case DT_FLOAT64: RefF64(tvk_elem_addr(base, i, 3)).v = double(v); break;
#endif
    default: RefF32(tvk_elem_addr(base, i, 2)).v = v; break;
  }
}

#if TVK_FLOAT64
void store_f64(uint64_t base, int dt, int i, double v) {
  switch (dt) {
    case DT_BOOL: RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(v == 0.0lf ? 0u : 1u); break;
    case DT_UINT8: RefU8(tvk_elem_addr(base, i, 0)).v = uint8_t(uint(int(v))); break;
    case DT_INT8: RefI8(tvk_elem_addr(base, i, 0)).v = int8_t(int(v)); break;
    case DT_INT16: RefI16(tvk_elem_addr(base, i, 1)).v = int16_t(int(v)); break;
    case DT_INT32: RefI32(tvk_elem_addr(base, i, 2)).v = int(v); break;
    case DT_INT64: RefI64(tvk_elem_addr(base, i, 3)).v = int64_t(v); break;
    // double -> float -> half/bf16, as c10::Half(double) does.
    case DT_FLOAT16: RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(tvk_float_to_half(float(v))); break;
    case DT_BFLOAT16: RefU16(tvk_elem_addr(base, i, 1)).v = uint16_t(tvk_float_to_bf16(float(v))); break;
    case DT_FLOAT32: RefF32(tvk_elem_addr(base, i, 2)).v = float(v); break;
    default: RefF64(tvk_elem_addr(base, i, 3)).v = v; break;
  }
}
#endif

// ---- compute kinds (ComputeKind codes) ----
#define KIND_FLOAT32 0
#define KIND_INT32 1
#define KIND_INT64 2
#define KIND_FLOAT64 3

// When the includer defines KIND, T / LOAD_T / STORE_T name the compute type and its helpers.
#ifdef KIND
#if KIND == KIND_FLOAT32
#define T float
#define LOAD_T load_f32
#define STORE_T store_f32
#define T_IS_FLOAT 1
#elif KIND == KIND_INT32
#define T int
#define LOAD_T load_i32
#define STORE_T store_i32
#define T_IS_FLOAT 0
#elif KIND == KIND_INT64
#define T int64_t
#define LOAD_T load_i64
#define STORE_T store_i64
#define T_IS_FLOAT 0
#elif KIND == KIND_FLOAT64
#define T double
#define LOAD_T load_f64
#define STORE_T store_f64
#define T_IS_FLOAT 1
#else
#error "unknown KIND"
#endif
#endif

// ---- value casts (TensorIterator's conversions to an op's common dtype) ----
// tvk_round_to(v, dt): the compute-type value `v` converted to storage dtype `dt` and back, as
// PyTorch's C-style casts do (round to nearest even for float16 / bfloat16 / float32, wrap for
// narrow integers, v != 0 for bool). The identity when every value of T is one of `dt`'s.
#ifdef KIND
#if KIND == KIND_FLOAT32
float tvk_round_to(float v, int dt) {
  if (dt == DT_FLOAT16) return tvk_half_to_float(tvk_float_to_half(v));
  if (dt == DT_BFLOAT16) return tvk_bf16_to_float(tvk_float_to_bf16(v));
  return v;
}
#elif KIND == KIND_FLOAT64
double tvk_round_to(double v, int dt) {
  if (dt == DT_FLOAT32) return double(float(v));
  if (dt == DT_FLOAT16) return double(tvk_half_to_float(tvk_float_to_half(float(v))));
  if (dt == DT_BFLOAT16) return double(tvk_bf16_to_float(tvk_float_to_bf16(float(v))));
  return v;
}
#elif KIND == KIND_INT32
int tvk_round_to(int v, int dt) {
  if (dt == DT_BOOL) return v != 0 ? 1 : 0;
  if (dt == DT_UINT8) return v & 0xff;
  if (dt == DT_INT8) return (v << 24) >> 24;
  if (dt == DT_INT16) return (v << 16) >> 16;
  return v;
}
#elif KIND == KIND_INT64
int64_t tvk_round_to(int64_t v, int dt) {
  if (dt == DT_BOOL) return v != 0l ? 1l : 0l;
  if (dt == DT_UINT8) return v & 0xffl;
  if (dt == DT_INT8) return (v << 56) >> 56;
  if (dt == DT_INT16) return (v << 48) >> 48;
  if (dt == DT_INT32) return (v << 32) >> 32;
  return v;
}
#endif
#endif

// ---- device-side errors (runtime/error.h: DeviceErrorCode, DeviceErrorRecord) ----
// A kernel that finds a bad argument in device memory (e.g. an index out of range) skips the
// access and calls tvk_report_index_error(addr, code, index, size[, dim]) with `addr` the
// stream's error record (Stream::device_error_address(), passed in push constants; 0: do not
// report). The first report wins; the host throws it at its next wait on the stream. The
// record is read only after the state is 2, so the fields need no atomics of their own.
#define TVK_ERR_INDEX_OUT_OF_BOUNDS 1u
#define TVK_ERR_SCATTER_GATHER_OUT_OF_BOUNDS 2u
#define TVK_ERR_INDEX_OUT_OF_RANGE_IN_SELF 3u
#define TVK_ERR_INDEX_COPY_OUT_OF_BOUNDS 4u
#define TVK_ERR_TAKE_OUT_OF_RANGE 5u
#define TVK_ERR_MASKED_SCATTER_SOURCE_TOO_SMALL 6u
#define TVK_ERR_TARGET_OUT_OF_BOUNDS 7u
#define TVK_ERR_BCE_INPUT_OUT_OF_RANGE 8u
#define TVK_ERR_BCE_TARGET_OUT_OF_RANGE 9u
#define TVK_ERR_BERNOULLI_P_OUT_OF_RANGE 10u
#define TVK_ERR_MAX_UNPOOL2D_INVALID_INDEX 11u
#define TVK_ERR_MAX_UNPOOL3D_INVALID_INDEX 12u
#define TVK_ERR_EMBEDDING_BAG_INDEX_OUT_OF_RANGE 13u
#define TVK_ERR_EMBEDDING_BAG_MAX_INDEX_OUT_OF_RANGE 14u
#define TVK_ERR_EMBEDDING_BAG_FIRST_OFFSET_NOT_ZERO 15u
#define TVK_ERR_MULTI_MARGIN_TARGET_OUT_OF_RANGE 16u
#define TVK_ERR_MULTILABEL_MARGIN_TARGET_OUT_OF_RANGE 17u

layout(buffer_reference, std430, buffer_reference_align = 8) buffer TvkErrorRecord {
  uint state;  // 0 empty, 1 being written, 2 complete
  uint code;
  int dim;
  uint reserved;
  int64_t index;
  int64_t size;
};

void tvk_report_index_error(uint64_t addr, uint code, int64_t index, int64_t size, int dim) {
  if (addr == 0ul) return;
  TvkErrorRecord r = TvkErrorRecord(addr);
  if (r.state != 0u) return;  // already claimed: keep the first error, avoid contention
  if (atomicCompSwap(r.state, 0u, 1u) != 0u) return;
  r.code = code;
  r.dim = dim;
  r.index = index;
  r.size = size;
  memoryBarrierBuffer();
  atomicExchange(r.state, 2u);
}

void tvk_report_index_error(uint64_t addr, uint code, int64_t index, int64_t size) {
  tvk_report_index_error(addr, code, index, size, 0);
}

#endif  // TVK_COMMON_GLSL
