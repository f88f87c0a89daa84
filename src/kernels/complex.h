// L2: the complex element-wise family (shaders/complex.comp). No torch headers.
//
// Complex operands are interleaved (re, im) pairs of float32 (complex64) or float64
// (complex128); the launcher sees them through their real scalars: an Operand's dtype is the
// scalar dtype (Float32 / Float64) and geometry strides count scalars, so element (c_0, c_1,
// ...) of operand o has its real part at sum_d c_d * strides[o][d] and its imaginary part at
// the next scalar. Operand 0 = out, 1 = a, 2 = b (dim 0 fastest, like launch_elementwise).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class ComplexOp : int32_t {
  Mul = 0,          // out = a * b
  Div = 1,          // out = a / b (c10::complex's scaled division)
  Exp = 10,
  Log = 11,         // log|a| + i atan2(im, re)
  Sqrt = 12,        // principal branch
  Reciprocal = 13,  // 1 / a (scaled division)
  Sgn = 14,         // a / |a|, 0 at 0
  Angle = 15,       // atan2(im, re): real out
  Abs = 16,         // hypot(re, im): real out
  Conj = 17,        // conj_physical
};

// Whether `op` writes a real (not complex) output.
inline bool complex_op_real_output(ComplexOp op) {
  return op == ComplexOp::Angle || op == ComplexOp::Abs;
}
inline bool complex_op_binary(ComplexOp op) {
  return op == ComplexOp::Mul || op == ComplexOp::Div;
}

struct ComplexElementwise {
  ComplexOp op = ComplexOp::Mul;
  // Float32 (complex64 math) or Float64 (complex128 math; shaderFloat64 only). Operands may
  // be of either scalar dtype (loads convert, the store rounds once).
  ComputeKind kind = ComputeKind::Float32;
  int64_t numel = 0;
  Geometry geometry;  // strides in scalars, operands 0 (out), 1 (a), 2 (b)
  Operand out, a, b;  // b: binary ops only
  bool conj_a = false, conj_b = false;  // negate the stored imaginary part on load
};

// Records the op on `stream` (one dispatch; numel == 0 records nothing). Throws
// std::invalid_argument for an unknown op, a kind other than Float32 / Float64, Float64
// without shaderFloat64, non-float operands, more than kMaxDims dims, numel >= 2^31 or
// scalar offsets beyond the 32-bit index range.
void complex_elementwise(Stream& stream, const ComplexElementwise& problem);

}  // namespace tvk::kernels
