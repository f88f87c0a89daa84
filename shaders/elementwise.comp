#version 460
// Generic element-wise kernel: out = OP(a, b, c) over an arbitrary strided index space.
//
// Built once per (op, compute kind) by tools/build_shaders.py from shaders/elementwise_ops.toml
// with these defines:
//   KIND      compute kind code (common.glsl KIND_*): selects T, LOAD_T, STORE_T
//   ARITY     number of tensor inputs (0..3)
//   OP_EXPR   the op's expression in a, b, c, s0, s1 (T) and dt0..dt3
//   OP_BOOL   1 when OP_EXPR is a truth value (stored as 1/0)
//   TVK_FLOAT64  1 for the float64 kind (only used on devices with shaderFloat64)
//
// ABI (mirrored by ElementwisePush in src/kernels/elementwise.cpp):
//   push constants (128 bytes, std430): see `Push` below.
//   Index space: `numel` elements; dimension 0 is the fastest-varying. With ndim <= 1 the
//   element offsets are i * stride0[k] (ndim 0: stride0 = 0); otherwise `geometry` points to
//   an ElementwiseGeometry block (sizes[8], strides[4][8], int32 element strides, uploaded with
//   Stream::upload_params). The launcher guarantees numel < 2^31 and that every reachable
//   element offset fits in int32.
//   Specialization constants: 0 = local_size_x; 1..4 = storage dtype of operand 0..3, 5 = the
//   cast mask, 6 = the value dtype, each -1 to read it from the push constants (one pipeline
//   for every dtype combination); 7 = vec (float32 kind only): 1 when the launcher checked
//   that ndim == 1, the output has stride 1, every input stride 1 or 0 (a broadcast scalar),
//   every operand is float32 / float16 / bfloat16 and every stride-1 operand's address is
//   4-element aligned: each invocation then moves four consecutive elements per operand in
//   one 16-byte (float32) or 8-byte (16-bit) access, the last partial group element-wise.
//   Value casts (TensorIterator's type promotion): the op computes on values of one dtype, the
//   `value dtype` (the CPU kernel's scalar_t; dt0 of the expression is this dtype, not the
//   output's storage dtype). Bit k (1..3) of the cast mask rounds input k to the value dtype
//   after its load (an operand of another dtype, e.g. a 0-dim int32 tensor next to uint8);
//   bit 0 rounds the result to it before the store converts to the output's dtype (an out=
//   tensor of a wider dtype: add(uint8, uint8, out=int32) wraps in uint8 first). Bits 8..15,
//   when not 0, are the dtype code + 1 that the expression sees as dt0 instead of the value
//   dtype (float16 kernels of the CPU that compute in fp32 and round only their result).
//   Grid: 1-D, any number of workgroups; a grid-stride loop covers numel.
//
// Tensor-list variant (TENSOR_LIST=1, built for the op-table rows marked `list`; ndim == -1;
// the multi-tensor _foreach ops): `geometry` points to an
// ElementwiseList block of `count` flat tensors, each cut into chunks of `chunk` elements
// (a multiple of the workgroup size); `numel` is the total number of chunks. A workgroup takes
// chunks in a grid-stride loop, finds the chunk's entry by binary search over `first_chunk`,
// and covers the chunk with consecutive invocations (coalesced). Per entry: the operands'
// addresses and element strides (1: a dense tensor read as flat; 0: a scalar operand, e.g. a
// per-tensor value of a scalar list) and, with `per_entry_s0`, its own s0 (a scalar list
// feeding an op's scalar argument, e.g. addcdiv's value). numel < 2^31 per entry.
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"
#include "math.glsl"
#include "ops.glsl"

#ifndef ARITY
#define ARITY 1
#endif
#ifndef OP_EXPR
#define OP_EXPR a
#endif
#ifndef OP_BOOL
#define OP_BOOL 0
#endif
#ifndef TENSOR_LIST
#define TENSOR_LIST 0
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT0 = -1;
layout(constant_id = 2) const int SPEC_DT1 = -1;
layout(constant_id = 3) const int SPEC_DT2 = -1;
layout(constant_id = 4) const int SPEC_DT3 = -1;
layout(constant_id = 5) const int SPEC_CAST_MASK = -1;
layout(constant_id = 6) const int SPEC_VALUE_DT = -1;
layout(constant_id = 7) const int SPEC_VEC = 0;

layout(push_constant) uniform Push {
  uint64_t addr[4];   //   0: device address of element 0 of out, a, b, c
  uint64_t geometry;  //  32: ElementwiseGeometry address (ndim >= 2), else 0
  int64_t si[2];      //  40: scalars for integer kinds
#if TVK_FLOAT64
  double sd[2];       //  56: scalars for the float64 kind
#else
  uint64_t sd_bits[2];
#endif
  float sf[2];        //  72: scalars for the float32 kind
  int numel;          //  80
  int ndim;           //  84
  int dtype[4];       //  88: storage dtype codes (used when SPEC_DTk < 0)
  int stride0[4];     // 104: element strides of dimension 0 (ndim <= 1 fast path)
  int value_dtype;    // 120: the op's value dtype (used when SPEC_VALUE_DT < 0)
  int cast_mask;      // 124: value casts (used when SPEC_CAST_MASK < 0)
} pc;                 // 128 bytes

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ElementwiseGeometry {
  int sizes[8];
  int strides[4][8];
};

#if TENSOR_LIST
struct ElementwiseListEntry {
  uint64_t addr[4];  // out, a, b, c
  int stride0[4];    // element strides: 1 or 0
  int numel;         // > 0
  int first_chunk;   // index of the entry's first chunk; ascending over the entries
  uint s0_lo;        // the entry's own s0 when the list has per_entry_s0: float bits (float32),
  uint s0_hi;        // double or int64 bits (lo, hi) otherwise
};  // 64 bytes, mirrored by ElementwiseListEntryBlock in src/kernels/elementwise.cpp

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ElementwiseList {
  int count;
  int chunk;
  int per_entry_s0;  // 1: each entry carries its own s0 (a scalar list's values)
  int pad0;
  ElementwiseListEntry entries[];
};
#endif

// OP on loaded inputs (unused ones are 0): input k rounded to the value dtype when bit k of
// `casts` says so, the result rounded when bit 0 does (see the ABI above).
T op_value(T a, T b, T c, int vdt, int dt1, int dt2, int dt3, int casts, T s0, T s1) {
  int dt0 = (casts >> 8) != 0 ? (casts >> 8) - 1 : vdt;  // the expression's dt0
  if ((casts & 2) != 0) a = tvk_round_to(a, vdt);
  if ((casts & 4) != 0) b = tvk_round_to(b, vdt);
  if ((casts & 8) != 0) c = tvk_round_to(c, vdt);
#if OP_BOOL
  return (OP_EXPR) ? T(1) : T(0);
#else
  T r = (OP_EXPR);
  if ((casts & 1) != 0) r = tvk_round_to(r, vdt);
  return r;
#endif
}

// out[o0] = OP(a[o1], b[o2], c[o3]) at the given addresses; st0 is the output's storage dtype,
// vdt the value dtype (see the ABI above), `casts` the cast mask.
void apply_op(uint64_t addr0, uint64_t addr1, uint64_t addr2, uint64_t addr3, int o0, int o1,
              int o2, int o3, int st0, int vdt, int dt1, int dt2, int dt3, int casts, T s0,
              T s1) {
  T a = T(0), b = T(0), c = T(0);
#if ARITY >= 1
  a = LOAD_T(addr1, dt1, o1);
#endif
#if ARITY >= 2
  b = LOAD_T(addr2, dt2, o2);
#endif
#if ARITY >= 3
  c = LOAD_T(addr3, dt3, o3);
#endif
  STORE_T(addr0, st0, o0, op_value(a, b, c, vdt, dt1, dt2, dt3, casts, s0, s1));
}

#if KIND == KIND_FLOAT32 && !TENSOR_LIST
// ---- the vector path (SPEC_VEC): four consecutive elements per access ----
#include "vec4_io.glsl"

// Elements 4q .. 4q+3 of an input of stride 1 (one vector load when `full`), or its one
// element four times (stride 0).
vec4 load_input4(uint64_t addr, int dt, int stride, int q, int n, bool full) {
  if (stride == 0) return vec4(load_f32(addr, dt, 0));
  return load_row4(addr, dt, 0, q, n, full);
}

void run_vec4(int st0, int vdt, int dt1, int dt2, int dt3, int casts, T s0, T s1) {
  const int n = pc.numel;
  const uint groups4 = (uint(n) + 3u) / 4u;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint g = gl_GlobalInvocationID.x; g < groups4; g += step) {
    const int q = int(g);
    const bool full = 4 * q + 4 <= n;  // else the last, partial group: element accesses
    vec4 va = vec4(0.0), vb = vec4(0.0), vc = vec4(0.0);
#if ARITY >= 1
    va = load_input4(pc.addr[1], dt1, pc.stride0[1], q, n, full);
#endif
#if ARITY >= 2
    vb = load_input4(pc.addr[2], dt2, pc.stride0[2], q, n, full);
#endif
#if ARITY >= 3
    vc = load_input4(pc.addr[3], dt3, pc.stride0[3], q, n, full);
#endif
    vec4 r;
    for (int j = 0; j < 4; ++j) r[j] = op_value(va[j], vb[j], vc[j], vdt, dt1, dt2, dt3, casts, s0, s1);
    store_row4_masked(pc.addr[0], st0, 0, q, n, full, r);
  }
}
#endif

#if TENSOR_LIST
void run_list(int st0, int dt0, int dt1, int dt2, int dt3, int casts, T s0, T s1) {
  ElementwiseList list = ElementwiseList(pc.geometry);
  int count = list.count;
  uint chunk = uint(list.chunk);
  for (uint g = gl_WorkGroupID.x; g < uint(pc.numel); g += gl_NumWorkGroups.x) {
    int lo = 0;
    int hi = count - 1;
    while (lo < hi) {  // the last entry with first_chunk <= g
      int mid = (lo + hi + 1) >> 1;
      if (uint(list.entries[mid].first_chunk) <= g) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    uint begin = (g - uint(list.entries[lo].first_chunk)) * chunk;
    uint end = min(begin + chunk, uint(list.entries[lo].numel));
    uint64_t addr0 = list.entries[lo].addr[0];
    uint64_t addr1 = list.entries[lo].addr[1];
    uint64_t addr2 = list.entries[lo].addr[2];
    uint64_t addr3 = list.entries[lo].addr[3];
    int stride_out = list.entries[lo].stride0[0];
    int st1 = list.entries[lo].stride0[1];
    int st2 = list.entries[lo].stride0[2];
    int st3 = list.entries[lo].stride0[3];
    T es0 = s0;
    if (list.per_entry_s0 != 0) {
      uint bits_lo = list.entries[lo].s0_lo;
      uint bits_hi = list.entries[lo].s0_hi;
#if KIND == KIND_FLOAT32
      es0 = uintBitsToFloat(bits_lo);
#elif KIND == KIND_FLOAT64
      es0 = packDouble2x32(uvec2(bits_lo, bits_hi));
#else
      es0 = T(int64_t(uint64_t(bits_lo) | (uint64_t(bits_hi) << 32)));
#endif
    }
    for (uint i = begin + gl_LocalInvocationID.x; i < end; i += gl_WorkGroupSize.x) {
      int ii = int(i);
      apply_op(addr0, addr1, addr2, addr3, ii * stride_out, ii * st1, ii * st2, ii * st3, st0,
               dt0, dt1, dt2, dt3, casts, es0, s1);
    }
  }
}
#endif

void main() {
  int st0 = SPEC_DT0 >= 0 ? SPEC_DT0 : pc.dtype[0];
  int dt0 = SPEC_VALUE_DT >= 0 ? SPEC_VALUE_DT : pc.value_dtype;
  int casts = SPEC_CAST_MASK >= 0 ? SPEC_CAST_MASK : pc.cast_mask;
  int dt1 = SPEC_DT1 >= 0 ? SPEC_DT1 : pc.dtype[1];
  int dt2 = SPEC_DT2 >= 0 ? SPEC_DT2 : pc.dtype[2];
  int dt3 = SPEC_DT3 >= 0 ? SPEC_DT3 : pc.dtype[3];
#if KIND == KIND_FLOAT32
  T s0 = pc.sf[0];
  T s1 = pc.sf[1];
#elif KIND == KIND_FLOAT64
  T s0 = pc.sd[0];
  T s1 = pc.sd[1];
#else
  T s0 = T(pc.si[0]);
  T s1 = T(pc.si[1]);
#endif

#if TENSOR_LIST
  run_list(st0, dt0, dt1, dt2, dt3, casts, s0, s1);
#else
#if KIND == KIND_FLOAT32
  if (SPEC_VEC != 0) {
    run_vec4(st0, dt0, dt1, dt2, dt3, casts, s0, s1);
    return;
  }
#endif
  uint n = uint(pc.numel);
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;  // < 2^32 - 2^31: i + step never wraps
  for (uint i = gl_GlobalInvocationID.x; i < n; i += step) {
    int o0, o1, o2, o3;
    if (pc.ndim <= 1) {
      int ii = int(i);
      o0 = ii * pc.stride0[0];
      o1 = ii * pc.stride0[1];
      o2 = ii * pc.stride0[2];
      o3 = ii * pc.stride0[3];
    } else {
      ElementwiseGeometry g = ElementwiseGeometry(pc.geometry);
      o0 = 0;
      o1 = 0;
      o2 = 0;
      o3 = 0;
      uint rem = i;
      for (int d = 0; d < pc.ndim; ++d) {
        uint size = uint(g.sizes[d]);
        uint q = rem / size;
        int idx = int(rem - q * size);
        rem = q;
        o0 += idx * g.strides[0][d];
#if ARITY >= 1
        o1 += idx * g.strides[1][d];
#endif
#if ARITY >= 2
        o2 += idx * g.strides[2][d];
#endif
#if ARITY >= 3
        o3 += idx * g.strides[3][d];
#endif
      }
    }
    apply_op(pc.addr[0], pc.addr[1], pc.addr[2], pc.addr[3], o0, o1, o2, o3, st0, dt0, dt1, dt2,
             dt3, casts, s0, s1);
  }
#endif
}
