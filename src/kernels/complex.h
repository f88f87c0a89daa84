// L2: the complex kernel family (shaders/complex.comp, math in shaders/complex_math.glsl).
// No torch headers.
//
// Complex operands are interleaved (re, im) pairs of float32 (complex64) or float64
// (complex128); the launchers see them through their real scalars: an Operand's dtype is the
// scalar dtype (Float32 / Float64) and geometry strides count scalars, so element (c_0, c_1,
// ...) of operand o has its real part at sum_d c_d * strides[o][d] and its imaginary part at
// the next scalar. A real-valued input (any dtype, `real`) is read as (value, 0) with strides
// in its own elements. Operand 0 = out, 1 = a, 2 = b (dim 0 fastest, like launch_elementwise).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// Results are those of PyTorch's CPU kernels (c10::complex / glibc's C99 functions),
// special values included; see shaders/complex_math.glsl.
enum class ComplexOp : int32_t {
  Mul = 0,              // out = a * b
  Div = 1,              // out = a / b (c10::complex's scaled division)
  Pow = 2,              // cpow(a, b) = exp(b * log a)
  TanhBackward = 3,     // a * conj(1 - b^2)
  SigmoidBackward = 4,  // a * conj((1 - b) b)
  Exp = 10,
  Log = 11,         // log|a| + i atan2(im, re)
  Sqrt = 12,        // principal branch
  Reciprocal = 13,  // 1 / a (scaled division)
  Sgn = 14,         // a / |a|, 0 at 0
  Angle = 15,       // atan2(im, re): real out
  Abs = 16,         // hypot(re, im): real out
  Conj = 17,        // conj_physical
  Sin = 18,
  Cos = 19,
  Tan = 20,
  Asin = 21,
  Acos = 22,  // complex128: pi/2 - asin a (the CPU's x86 kernel), complex64: cacos
  Atan = 23,
  Sinh = 24,
  Cosh = 25,
  Tanh = 26,
  Asinh = 27,
  Acosh = 28,
  Atanh = 29,
  Log2 = 30,       // log a / ln 2 (per part)
  Log10 = 31,      // log a / ln 10 (per part)
  Log1p = 32,      // c10's formula
  Expm1 = 33,      // c10's formula
  Rsqrt = 34,      // 1 / sqrt a
  Sigmoid = 35,    // 1 / (1 + exp(-a))
  Square = 36,     // a * a
  Cube = 37,       // (a * a) * a
  InvSquare = 38,  // 1 / (a * a)
  Exp2 = 39,       // exp(ln 2 * a)
};

// Whether `op` writes a real (not complex) output.
inline bool complex_op_real_output(ComplexOp op) {
  return op == ComplexOp::Angle || op == ComplexOp::Abs;
}
inline bool complex_op_binary(ComplexOp op) { return static_cast<int32_t>(op) < 10; }

// An input of a complex kernel.
struct ComplexInput {
  Operand data;          // device memory (unused for a host value)
  bool real = false;     // real-valued: read as (value, 0); any dtype
  bool conj = false;     // negate the stored imaginary part on load
  bool host = false;     // one host value, value[0] + i value[1], for every element (its
                         // geometry strides are ignored): passed in parameter memory,
                         // rounded to the compute type
  double value[2] = {0, 0};
};

struct ComplexElementwise {
  ComplexOp op = ComplexOp::Mul;
  // Float32 (complex64 math) or Float64 (complex128 math; shaderFloat64 only). Complex
  // operands may be of either scalar dtype (loads convert, the store rounds once).
  ComputeKind kind = ComputeKind::Float32;
  int64_t numel = 0;
  Geometry geometry;  // strides in scalars, operands 0 (out), 1 (a), 2 (b)
  Operand out;        // Float32 / Float64 scalars
  ComplexInput a, b;  // b: binary ops only
};

// Records the op on `stream` (one dispatch; numel == 0 records nothing). Throws
// std::invalid_argument for an unknown op, a kind other than Float32 / Float64, Float64
// without shaderFloat64, complex operands with non-float scalars, more than kMaxDims dims,
// numel >= 2^31 or scalar offsets beyond the 32-bit index range.
void complex_elementwise(Stream& stream, const ComplexElementwise& problem);

enum class ComplexRowsOp : int32_t {
  CumProd = 0,  // out[row, r] = in[row, 0] * ... * in[row, r] (in order)
  Prod = 1,     // out[row] = product of the row (1 for an empty row)
};

// Products along rows: a row is a point of `rows` (operands 0 = out, 1 = in; strides in
// scalars), its elements the points of `along` (dim 0 fastest, the order of the products;
// operand 0 = out is used by CumProd only).
struct ComplexRows {
  ComplexRowsOp op = ComplexRowsOp::CumProd;
  ComputeKind kind = ComputeKind::Float32;  // accumulator: Float32 or Float64
  int64_t num_rows = 0, row_length = 0;
  Geometry rows, along;
  Operand out;
  ComplexInput in;  // host values are not supported
};

// Records the products on `stream` (nothing when num_rows == 0). Prod reduces a long row
// with one workgroup (strided partial products and a tree); CumProd and Prod over many
// short rows run one invocation per row, in order. Throws std::invalid_argument like
// complex_elementwise.
void complex_rows(Stream& stream, const ComplexRows& problem);

}  // namespace tvk::kernels
