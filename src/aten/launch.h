// L3 launch helpers: turn a built at::TensorIterator (or tensors) into one L2 kernel call.
#pragma once

#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>

#include "kernels/kernels.h"

namespace tvk::aten {

// Compute kind for math in `dtype` (fp32 opmath for float16/bfloat16, like CUDA).
kernels::ComputeKind compute_kind_for(at::ScalarType dtype);
// Compute kind that converts `src` to `dst` exactly (used by copies and casts).
kernels::ComputeKind copy_kind_for(at::ScalarType src, at::ScalarType dst);

// Scalar arguments for the kernel (s0, s1).
kernels::Scalars make_scalars(const c10::Scalar& s0, const c10::Scalar& s1 = c10::Scalar(0));

// Every value of dtype `from` is a value of dtype `to` (converting changes nothing).
bool holds_values_of(at::ScalarType from, at::ScalarType to);

// Exceptions to TensorIterator's conversions for launch_elementwise (below).
struct ElementwiseCasts {
  // Bit k: operand k (an input) keeps its own value instead of taking the compute dtype's: an
  // op parameter passed as a scalar operand (scalar_operand: elu's coefficient, lerp's scalar
  // weight, which the CPU kernels read in opmath), or a condition (where).
  uint32_t keep_inputs = 0;
  // The op's result is not a value of the compute dtype (frexp's int32 exponent): stored as is.
  bool keep_result = false;
  // mul / div and its rounding modes: operand 2, when it is one value broadcast over the whole
  // iteration (TensorIterator::is_scalar), keeps its value in fp32 for float16 / bfloat16,
  // as the CPU kernels read it (iter.original_scalar_value<opmath_t>(2)).
  bool opmath_scalar_operand2 = false;
};

// Records element-wise kernel `op` over `iter` (operand 0 is the output) on the current stream
// of the iterator's device, computing on values of `dtype` the way TensorIterator does on the
// CPU and CUDA (the shared promotion mechanism of every element-wise, comparison and indexing
// op): each input is converted to `dtype` before the op (a wrapped Python number or a 0-dim
// tensor of another dtype included: float16 `x == 0.1` compares with float16(0.1), uint8
// `x <= -2` with 254), and the result is a value of `dtype` converted to the output's dtype
// only when stored (`add(uint8, uint8, out=int32)` wraps in uint8; bfloat16 sums are rounded
// to bfloat16 before a float32 store). The math runs in compute_kind_for(iter, dtype). CPU
// scalar operands (0-dim CPU tensors, e.g. Python numbers) are converted on the host and passed
// by value through the parameter ring; iterators whose offsets exceed 32-bit indexing are split.
void launch_elementwise(at::TensorIteratorBase& iter, const char* op, at::ScalarType dtype,
                        const kernels::Scalars& scalars = {}, const ElementwiseCasts& casts = {});

// Without value casts: every input is loaded in `kind` and the result stored as computed.
// For conversions themselves (copy), where the output's dtype is the value dtype.
void launch_elementwise(at::TensorIteratorBase& iter, const char* op, kernels::ComputeKind kind,
                        const kernels::Scalars& scalars = {});

// The compute kind for math in `dtype` over `iter`: float32 math is upgraded to float64 when an
// operand is float64 (e.g. an out= tensor of a wider dtype), which the float32 kernels cannot load.
kernels::ComputeKind compute_kind_for(const at::TensorIteratorBase& iter, at::ScalarType dtype);

// `s` converted to `dtype` the way a CPU kernel's `s.to<scalar_t>()` does: rounded to
// float16/bfloat16/float32, truncated to integers, non-zero is true for bool, and the same
// overflow error.
c10::Scalar scalar_to_dtype(const c10::Scalar& s, at::ScalarType dtype);

// `s` converted to `dtype` by a C-style cast (c10::convert, what TensorIterator's casts and
// copies do): integers wrap, float16 / bfloat16 overflow to inf, non-zero is true for bool.
// Floating values out of an integer dtype's range raise like scalar_to_dtype (C leaves them
// undefined).
c10::Scalar scalar_cast_to_dtype(const c10::Scalar& s, at::ScalarType dtype);

// A third (or fourth) scalar argument of a kernel, passed as a 0-dim CPU tensor input of the
// iterator (a wrapped number: it does not take part in type promotion). launch_elementwise
// uploads it by value in the compute type.
at::Tensor scalar_operand(const c10::Scalar& value);

// Raises the same error as PyTorch's AT_DISPATCH macros ("\"name\" not implemented for 'T'").
[[noreturn]] void raise_not_implemented_for(const char* name, at::ScalarType dtype);

}  // namespace tvk::aten
