// L2: the softmax family (shaders/softmax.comp). No torch headers.
//
// Softmax, log-softmax and their backward passes along one dim of a contiguous tensor viewed
// as [outer, dim, inner] (row-major: element (o, r, i) at (o * dim + r) * inner + i).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class SoftmaxOp : int32_t {
  Softmax = 0,             // out = exp(x - max) / sum exp(x - max)
  LogSoftmax = 1,          // out = (x - max) - log(sum exp(x - max))
  SoftmaxBackward = 2,     // out = y * (g - sum(g * y))          in = g, in2 = y
  LogSoftmaxBackward = 3,  // out = g - exp(y) * sum(g)           in = g, in2 = y
};

struct Softmax {
  SoftmaxOp op = SoftmaxOp::Softmax;
  // Float32 for float16 / bfloat16 / float32 operands (any mix: loads convert, the store
  // rounds once), Float64 (devices with shaderFloat64; needed when an operand is float64).
  ComputeKind kind = ComputeKind::Float32;
  int64_t outer = 1, dim = 1, inner = 1;
  Operand out;  // y (forward) or grad_input (backward)
  Operand in;   // x (forward) or grad_output (backward)
  Operand in2;  // backward: the forward output y; unused forward
};

// Records the op on `stream`. Every row of `dim` elements is independent; dim == 0 or an
// empty outer / inner records nothing. Throws std::invalid_argument for a kind other than
// Float32 / Float64, Float64 without shaderFloat64 ("float64 is not supported on this
// device (no shaderFloat64)"), float64 operands with the Float32 kind, negative sizes,
// null or misaligned addresses, or more than 2^31 - 1 elements.
void softmax(Stream& stream, const Softmax& problem);

// Knobs for tests (defaults are the production choices). Not synchronized.
struct SoftmaxTuning {
  // Registers and SubgroupRow apply to float32 math along the innermost dim (else
  // Workgroup); SubgroupRow needs the subgroup variants (else Registers).
  enum class Strategy { Auto, Workgroup, Thread, Registers, SubgroupRow };
  Strategy strategy = Strategy::Auto;
  uint32_t max_workgroup = 256;  // power of two; Auto picks 32..max by row length
  bool subgroups = true;         // use the subgroup variants when the device has them
};
SoftmaxTuning& softmax_tuning();

}  // namespace tvk::kernels
