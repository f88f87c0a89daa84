// L3: complex tensors on vk. A complex64 / complex128 tensor is stored as interleaved
// (re, im) pairs of float32 / float64; kernels see it through its real view (a trailing dim
// of 2, doubled strides). vk_dtype() keeps rejecting complex, so every op that has not been
// taught about complex raises (or visibly falls back) instead of computing garbage.
#pragma once

#include <ATen/ATen.h>

namespace tvk::aten {

// Factories: complex64 (and complex128 where the device has shaderFloat64) may be stored;
// other dtypes as vk_dtype(). Raises like vk_dtype, naming `op`.
void check_storage_dtype(at::ScalarType type, const char* op);

// An alias of `t`'s memory (same storage, offset, sizes, strides) without the conjugate and
// negative bits: the bytes as they are stored.
at::Tensor raw_alias(const at::Tensor& t);

// The real view of the stored bytes of complex `t` (raw_alias + view_as_real).
at::Tensor raw_real_view(const at::Tensor& t);

// copy_ where `src` or `dst` is complex (vk <-> CPU, vk <-> vk): complex <-> complex through
// the real views, real -> complex sets the imaginary part 0, complex -> real keeps the real
// part (with PyTorch's warning). The conjugate / negative bits of both sides are honoured.
// `dst` already has the broadcast shape.
void copy_complex(const at::Tensor& src, const at::Tensor& dst, bool non_blocking);

// fill_ of a complex vk tensor with `value` (the real and imaginary planes of its real view).
void fill_complex(const at::Tensor& self, const at::Scalar& value);

}  // namespace tvk::aten
