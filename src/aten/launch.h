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

// Records element-wise kernel `op` over `iter` (operand 0 is the output) on the current stream
// of the iterator's device. CPU scalar operands (0-dim CPU tensors, e.g. Python numbers) are
// passed by value through the parameter ring; iterators whose offsets exceed 32-bit indexing
// are split.
void launch_elementwise(at::TensorIteratorBase& iter, const char* op, kernels::ComputeKind kind,
                        const kernels::Scalars& scalars = {});

// The compute kind for math in `dtype` over `iter`: float32 math is upgraded to float64 when an
// operand is float64 (e.g. an out= tensor of a wider dtype), which the float32 kernels cannot load.
kernels::ComputeKind compute_kind_for(const at::TensorIteratorBase& iter, at::ScalarType dtype);

// `s` converted to `dtype` the way a CPU kernel's `s.to<scalar_t>()` does: rounded to
// float16/bfloat16/float32, truncated to integers, and the same overflow error.
c10::Scalar scalar_to_dtype(const c10::Scalar& s, at::ScalarType dtype);

// A third (or fourth) scalar argument of a kernel, passed as a 0-dim CPU tensor input of the
// iterator (a wrapped number: it does not take part in type promotion). launch_elementwise
// uploads it by value in the compute type.
at::Tensor scalar_operand(const c10::Scalar& value);

// Raises the same error as PyTorch's AT_DISPATCH macros ("\"name\" not implemented for 'T'").
[[noreturn]] void raise_not_implemented_for(const char* name, at::ScalarType dtype);

}  // namespace tvk::aten
