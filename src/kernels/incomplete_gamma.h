// L2: the incomplete gamma family (shaders/incomplete_gamma.comp). No torch headers.
//
// out = igamma(a, x) (regularized lower incomplete gamma P(a, x)) or igammac(a, x) (upper,
// Q(a, x) = 1 - P(a, x)) element-wise over a broadcast geometry, with the CPU's (Cephes)
// algorithm and boundary values.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class IncompleteGammaOp : int32_t { Lower = 0, Upper = 1 };

struct IncompleteGamma {
  IncompleteGammaOp op = IncompleteGammaOp::Lower;
  // Float32 for float16 / bfloat16 / float32 operands (loads convert, the store rounds once),
  // Float64 (devices with shaderFloat64; needed when an operand is float64).
  ComputeKind kind = ComputeKind::Float32;
  int64_t numel = 0;
  // Iteration sizes and element strides, dim 0 fastest; operand order out, a, x (strides[0..2]).
  Geometry geometry;
  Operand out, a, x;
};

// Records the op on `stream`; numel == 0 records nothing. Throws std::invalid_argument for a
// kind other than Float32 / Float64, Float64 without shaderFloat64 ("float64 is not supported
// on this device (no shaderFloat64)"), float64 operands with the Float32 kind, bad geometry
// (sizes that do not multiply to numel, more than kMaxDims dims), numel >= 2^31 or element
// offsets beyond the 32-bit range, null or misaligned addresses.
void incomplete_gamma(Stream& stream, const IncompleteGamma& problem);

}  // namespace tvk::kernels
