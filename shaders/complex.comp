#version 460
// Complex kernel family over interleaved (re, im) storage (complex64: float32 pairs,
// complex128: float64 pairs). The math is complex_math.glsl's (c10 / glibc semantics, so
// special values come out as on PyTorch's CPU). Two entry points, built per kind by
// tools/build_shaders.py (complex.variants.toml):
//
// complex.<op>.<kind> (CX_ROWS 0): element-wise ops with broadcasting and arbitrary strides
//   (the iteration geometry of a TensorIterator, dim 0 fastest), one variant per op
//   (CX_VARIANT = op; specialization constant 1 = the same op):
//     binary  0 mul   1 div (c10's scaled division)   2 pow (cpow: exp(b * log a), Annex G
//             product)   3 tanh_backward a * conj(1 - b^2)   4 sigmoid_backward
//             a * conj((1 - b) b)
//     unary   10 exp  11 log  12 sqrt  13 reciprocal  14 sgn (z / |z|, 0 at 0)
//             15 angle (atan2(im, re))  16 abs (hypot(re, im))   (15, 16: real out)
//             17 conj (conj_physical)  18 sin  19 cos  20 tan  21 asin  22 acos  23 atan
//             24 sinh  25 cosh  26 tanh  27 asinh  28 acosh  29 atanh  30 log2  31 log10
//             (log / real ln 2, ln 10 per part, as the CPU's vectorized kernels)  32 log1p
//             33 expm1 (c10's formulas)  34 rsqrt (1 / sqrt)  35 sigmoid (1 / (1 + exp(-z)))
//             36 square z*z  37 cube (z*z)*z  38 inv_square 1 / (z*z)
//             (36-38: PyTorch's pow(z, 2 / 3 / -2) fast paths)  39 exp2 (exp(ln 2 z))
//             22 acos of complex128 is (pi/2 - re asin z) - i im asin z, what PyTorch's x86
//             complex128 kernels compute (complex64: glibc's cacosf)
//   ABI (mirrored by ComplexPush in src/kernels/complex.cpp): element q in [0, numel) has
//   coordinates c_d over the geometry dims; operand o (0 = out, 1 = a, 2 = b) is read at
//   sum_d c_d * stride[o][d] scalars from its address (complex operands: the real part, the
//   imaginary part follows; real operands: the value, imaginary part 0). flags: bit 0 / 1: a
//   / b carry the conjugate bit (stored imaginary part negated on load); bit 2 / 3: a / b
//   are real-valued (any real dtype). Math in fp32 for complex64 (KIND 0), fp64 for
//   complex128 (KIND 3; shaderFloat64 only); loads convert, the store rounds once.
//
// complex_rows.<kind> (CX_ROWS 1): products along rows. A row is a point of the row index
//   space (geometry `ndim / sizes / strides`, operands 0 = out, 1 = in); its elements are
//   the points of the "along" space (`rdim / rsizes / rstrides`, dim 0 fastest, visited in
//   that order). Specialization constant 1 = op: 0 cumprod (inclusive scan: out at every
//   element, acc = acc * x as c10's operator*=), 1 prod (one output per row; identity 1 for
//   empty rows). Specialization constant 2 = mode: 0 one invocation per row (serial, in
//   order); 1 one workgroup per row (prod only: strided partial products, then a
//   shared-memory tree; local_size_x a power of two <= 128). flags bit 0: in carries the
//   conjugate bit; bit 2: in is real-valued. One dispatch covers elements [start, min(start +
//   count, n)) of every row; rows longer than the device's loop budget take several, the
//   running product crossing them through carry_addr (one (re, im) pair of the math type per
//   row; read when start > 0, written when the range ends before the row).
//
// Specialization constant 0 = local_size_x. Grid: 1-D, any number of workgroups.
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#ifndef CX_ROWS
#define CX_ROWS 0
#endif
#ifndef CX_VARIANT
#define CX_VARIANT 0
#endif
#include "common.glsl"
#include "complex_math.glsl"

#define CX_MAX_DIMS 8

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int CX_OP = 0;

// Operand value at scalar offset `off`: (re, im), (value, 0) for a real operand.
CT cx_load(uint64_t addr, int dtype, int off, bool real, bool conj) {
  T re = LOAD_T(addr, dtype, off);
  if (real) return CT(re, T(0));
  T im = LOAD_T(addr, dtype, off + 1);
  return CT(re, conj ? -im : im);
}

#if !CX_ROWS
// ---------------------------------------------------------------- element-wise

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer CxGeometry {
  int ndim;
  int sizes[CX_MAX_DIMS];
  int strides[3 * CX_MAX_DIMS];  // [operand][dim]
};

layout(push_constant) uniform Push {
  uint64_t out_addr;  //  0
  uint64_t a_addr;    //  8
  uint64_t b_addr;    // 16 (binary ops)
  uint64_t geo_addr;  // 24 CxGeometry
  int numel;          // 32
  int a_dtype;        // 36 scalar dtype of a (real dtype: its own)
  int b_dtype;        // 40
  int out_dtype;      // 44
  int flags;          // 48
  int pad;            // 52
} pc;                 // 56 bytes

// The op of this variant (CX_VARIANT); y is unused by unary ops. Only the variant's own case
// is compiled; it is still selected by the specialization constant CX_OP (== CX_VARIANT),
// because glslc 2023.2's optimizer crashes on some of these functions inlined into the
// geometry loop when the op is a compile-time constant.
#define CX_WANT(n) (CX_VARIANT == (n))
CT apply_op(CT x, CT y) {
#if CX_WANT(0)
  if (CX_OP == 0) return cx_mul(x, y);
#endif
#if CX_WANT(1)
  if (CX_OP == 1) return cx_div(x, y);
#endif
#if CX_WANT(2)
  if (CX_OP == 2) return cx_pow(x, y);
#endif
#if CX_WANT(3)
  if (CX_OP == 3) {  // tanh_backward(grad = x, tanh = y)
    CT w = CT(1, 0) - cx_mul(y, y);
    return cx_mul(x, CT(w.x, -w.y));
  }
#endif
#if CX_WANT(4)
  if (CX_OP == 4) {  // sigmoid_backward(grad = x, sigmoid = y)
    CT w = cx_mul(CT(1, 0) - y, y);
    return cx_mul(x, CT(w.x, -w.y));
  }
#endif
#if CX_WANT(10)
  if (CX_OP == 10) return cx_exp(x);
#endif
#if CX_WANT(11)
  if (CX_OP == 11) return cx_log(x);
#endif
#if CX_WANT(12)
  if (CX_OP == 12) return cx_sqrt(x);
#endif
#if CX_WANT(13)
  if (CX_OP == 13) return cx_reciprocal(x);
#endif
#if CX_WANT(14)
  if (CX_OP == 14) {
    T m = cx_hypot(x.x, x.y);
    return m != T(0) ? CT(cx_fdiv(x.x, m), cx_fdiv(x.y, m)) : CT(0, 0);
  }
#endif
#if CX_WANT(15)
  if (CX_OP == 15) return CT(cx_atan2(x.y, x.x), 0);
#endif
#if CX_WANT(16)
  if (CX_OP == 16) return CT(cx_hypot(x.x, x.y), 0);
#endif
#if CX_WANT(17)
  if (CX_OP == 17) return CT(x.x, -x.y);
#endif
#if CX_WANT(18)
  if (CX_OP == 18) return cx_sin(x);
#endif
#if CX_WANT(19)
  if (CX_OP == 19) return cx_cos(x);
#endif
#if CX_WANT(20)
  if (CX_OP == 20) return cx_tan(x);
#endif
#if CX_WANT(21)
  if (CX_OP == 21) return cx_asin(x);
#endif
#if CX_WANT(22)
  if (CX_OP == 22) {
#if KIND == KIND_FLOAT64
    return cx_acos_vec(x);  // what the CPU's x86 complex128 kernel computes
#else
    return cx_acos(x);
#endif
  }
#endif
#if CX_WANT(23)
  if (CX_OP == 23) return cx_atan(x);
#endif
#if CX_WANT(24)
  if (CX_OP == 24) return cx_sinh(x);
#endif
#if CX_WANT(25)
  if (CX_OP == 25) return cx_cosh(x);
#endif
#if CX_WANT(26)
  if (CX_OP == 26) return cx_tanh(x);
#endif
#if CX_WANT(27)
  if (CX_OP == 27) return cx_asinh(x);
#endif
#if CX_WANT(28)
  if (CX_OP == 28) return cx_acosh(x);
#endif
#if CX_WANT(29)
  if (CX_OP == 29) return cx_atanh(x);
#endif
#if CX_WANT(30)
  if (CX_OP == 30) {
    CT l = cx_log(x);
    return CT(cx_fdiv(l.x, CX_LN2), cx_fdiv(l.y, CX_LN2));
  }
#endif
#if CX_WANT(31)
  if (CX_OP == 31) {
    CT l = cx_log(x);
    return CT(cx_fdiv(l.x, CX_LN10), cx_fdiv(l.y, CX_LN10));
  }
#endif
#if CX_WANT(32)
  if (CX_OP == 32) return cx_log1p(x);
#endif
#if CX_WANT(33)
  if (CX_OP == 33) return cx_expm1(x);
#endif
#if CX_WANT(34)
  if (CX_OP == 34) return cx_reciprocal(cx_sqrt(x));
#endif
#if CX_WANT(35)
  if (CX_OP == 35) {
    CT e = cx_exp(-x);
    return cx_reciprocal(CT(T(1) + e.x, cx_plus_zero(e.y)));  // c10: 1 + e
  }
#endif
#if CX_WANT(36)
  if (CX_OP == 36) return cx_mul(x, x);
#endif
#if CX_WANT(37)
  if (CX_OP == 37) return cx_mul(cx_mul(x, x), x);
#endif
#if CX_WANT(38)
  if (CX_OP == 38) return cx_reciprocal(cx_mul(x, x));
#endif
#if CX_WANT(39)
  if (CX_OP == 39) return cx_exp(CT(CX_LN2 * x.x, CX_LN2 * x.y));  // exp(ln 2 * z), as c10
#endif
  return x;  // unreachable: the launcher pairs each variant with its op
}

void main() {
  CxGeometry geo = CxGeometry(pc.geo_addr);
  const int nd = geo.ndim;
  const bool binary = CX_VARIANT < 10;
  const bool real_out = CX_VARIANT == 15 || CX_VARIANT == 16;
  const int stride_step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int q = int(gl_GlobalInvocationID.x); q < pc.numel; q += stride_step) {
    int rest = q, off_out = 0, off_a = 0, off_b = 0;
    for (int d = 0; d < nd; ++d) {
      int size = geo.sizes[d];
      int c = rest % size;
      rest /= size;
      off_out += c * geo.strides[d];
      off_a += c * geo.strides[CX_MAX_DIMS + d];
      off_b += c * geo.strides[2 * CX_MAX_DIMS + d];
    }
    CT x = cx_load(pc.a_addr, pc.a_dtype, off_a, (pc.flags & 4) != 0, (pc.flags & 1) != 0);
    CT y = CT(0);
    if (binary) y = cx_load(pc.b_addr, pc.b_dtype, off_b, (pc.flags & 8) != 0, (pc.flags & 2) != 0);
    CT r = apply_op(x, y);
    STORE_T(pc.out_addr, pc.out_dtype, off_out, r.x);
    if (!real_out) STORE_T(pc.out_addr, pc.out_dtype, off_out + 1, r.y);
  }
}

#else
// ---------------------------------------------------------------- products along rows

layout(constant_id = 2) const int CX_MODE = 0;

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer CxRowsGeometry {
  int ndim;
  int sizes[CX_MAX_DIMS];
  int strides[2 * CX_MAX_DIMS];   // rows: [operand][dim]
  int rdim;
  int rsizes[CX_MAX_DIMS];
  int rstrides[2 * CX_MAX_DIMS];  // along a row: [operand][dim]
};

layout(push_constant) uniform Push {
  uint64_t out_addr;  //  0
  uint64_t in_addr;   //  8
  uint64_t geo_addr;  // 16 CxRowsGeometry
  int rows;           // 24
  int n;              // 28 elements per row
  int in_dtype;       // 32
  int out_dtype;      // 36
  int flags;          // 40
  int start;          // 44
  uint64_t carry_addr;  // 48
  int count;          // 56
  int pad;            // 60
} pc;                 // 64 bytes

shared CT partial[128];

// Scalar offsets (out, in) of row q / of element r along a row.
ivec2 row_offsets(CxRowsGeometry geo, int q) {
  ivec2 off = ivec2(0);
  for (int d = 0; d < geo.ndim; ++d) {
    int size = geo.sizes[d];
    int c = q % size;
    q /= size;
    off += c * ivec2(geo.strides[d], geo.strides[CX_MAX_DIMS + d]);
  }
  return off;
}
ivec2 along_offsets(CxRowsGeometry geo, int r) {
  ivec2 off = ivec2(0);
  for (int d = 0; d < geo.rdim; ++d) {
    int size = geo.rsizes[d];
    int c = r % size;
    r /= size;
    off += c * ivec2(geo.rstrides[d], geo.rstrides[CX_MAX_DIMS + d]);
  }
  return off;
}

CT load_in(int off) {
  return cx_load(pc.in_addr, pc.in_dtype, off, (pc.flags & 4) != 0, (pc.flags & 1) != 0);
}
void store_out(int off, CT v) {
  STORE_T(pc.out_addr, pc.out_dtype, off, v.x);
  STORE_T(pc.out_addr, pc.out_dtype, off + 1, v.y);
}

#if KIND == KIND_FLOAT64
#define CARRY_DT DT_FLOAT64
#else
#define CARRY_DT DT_FLOAT32
#endif
CT load_carry(int q) {
  return CT(LOAD_T(pc.carry_addr, CARRY_DT, 2 * q), LOAD_T(pc.carry_addr, CARRY_DT, 2 * q + 1));
}
void store_carry(int q, CT v) {
  STORE_T(pc.carry_addr, CARRY_DT, 2 * q, v.x);
  STORE_T(pc.carry_addr, CARRY_DT, 2 * q + 1, v.y);
}

void main() {
  CxRowsGeometry geo = CxRowsGeometry(pc.geo_addr);
  const int start = pc.start, end = min(pc.start + pc.count, pc.n);
  const bool carry_in = start > 0, carry_out = end < pc.n;
  if (CX_MODE == 0) {
    const int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int q = int(gl_GlobalInvocationID.x); q < pc.rows; q += step) {
      ivec2 base = row_offsets(geo, q);
      CT acc = carry_in ? load_carry(q) : CT(1, 0);
      for (int r = start; r < end; ++r) {
        ivec2 off = base + along_offsets(geo, r);
        acc = cx_mul(acc, load_in(off.y));
        if (CX_OP == 0) store_out(off.x, acc);
      }
      if (carry_out) store_carry(q, acc);
      else if (CX_OP == 1) store_out(base.x, acc);
    }
  } else {
    const int lid = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
    for (int q = int(gl_WorkGroupID.x); q < pc.rows; q += int(gl_NumWorkGroups.x)) {
      ivec2 base = row_offsets(geo, q);
      CT acc = CT(1, 0);
      for (int r = start + lid; r < end; r += wg) acc = cx_mul(acc, load_in(base.y + along_offsets(geo, r).y));
      partial[lid] = acc;
      barrier();
      for (int s = wg / 2; s > 0; s /= 2) {
        if (lid < s) partial[lid] = cx_mul(partial[lid], partial[lid + s]);
        barrier();
      }
      if (lid == 0) {
        CT total = carry_in ? cx_mul(load_carry(q), partial[0]) : partial[0];
        if (carry_out) store_carry(q, total);
        else store_out(base.x, total);
      }
      barrier();
    }
  }
}
#endif
