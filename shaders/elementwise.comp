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
//   push constants (120 bytes, std430): see `Push` below.
//   Index space: `numel` elements; dimension 0 is the fastest-varying. With ndim <= 1 the
//   element offsets are i * stride0[k] (ndim 0: stride0 = 0); otherwise `geometry` points to
//   an ElementwiseGeometry block (sizes[8], strides[4][8], int32 element strides, uploaded with
//   Stream::upload_params). The launcher guarantees numel < 2^31 and that every reachable
//   element offset fits in int32.
//   Specialization constants: 0 = local_size_x; 1..4 = storage dtype of operand 0..3, or -1
//   to read it from the push constants (one pipeline for every dtype combination).
//   Grid: 1-D, any number of workgroups; a grid-stride loop covers numel.
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

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT0 = -1;
layout(constant_id = 2) const int SPEC_DT1 = -1;
layout(constant_id = 3) const int SPEC_DT2 = -1;
layout(constant_id = 4) const int SPEC_DT3 = -1;

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
} pc;                 // 120 bytes

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ElementwiseGeometry {
  int sizes[8];
  int strides[4][8];
};

void main() {
  int dt0 = SPEC_DT0 >= 0 ? SPEC_DT0 : pc.dtype[0];
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
#if ARITY >= 1
    T a = LOAD_T(pc.addr[1], dt1, o1);
#endif
#if ARITY >= 2
    T b = LOAD_T(pc.addr[2], dt2, o2);
#endif
#if ARITY >= 3
    T c = LOAD_T(pc.addr[3], dt3, o3);
#endif
#if OP_BOOL
    T r = (OP_EXPR) ? T(1) : T(0);
#else
    T r = (OP_EXPR);
#endif
    STORE_T(pc.addr[0], dt0, o0, r);
  }
}
