// L3: complex tensors on vk. A complex64 / complex128 tensor is stored as interleaved
// (re, im) pairs of float32 / float64; kernels see it through its real view (a trailing dim
// of 2, doubled strides). vk_dtype() keeps rejecting complex, so every op that has not been
// taught about complex raises (or visibly falls back) instead of computing garbage.
#pragma once

#include <ATen/ATen.h>

namespace tvk::aten {

// Factories: complex64 (and complex128 where the device has shaderFloat64) may be stored,
// and uint64 (hash_tensor's result: stored and copied as int64 bits, never computed with);
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

// Element-wise complex arithmetic as composites over the real views (native float kernels),
// for the add / sub / mul kernels of ops_elementwise.cpp. Either operand may be real (or a
// wrapped CPU number); `out` undefined: allocated. PyTorch's type promotion and broadcasting.
inline bool any_complex(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  return a.is_complex() || b.is_complex() || (out.defined() && out.is_complex());
}
at::Tensor& complex_add(at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                        const at::Scalar& alpha, bool subtract);
at::Tensor& complex_mul(at::Tensor& out, const at::Tensor& self, const at::Tensor& other);

// The element-wise kernel rows of ops_elementwise.cpp with a complex operand: neg, abs, eq,
// ne, isnan, div, mul, add / sub (alpha 1), exp, log, sqrt, reciprocal, sgn (the last
// five and complex x complex mul / div, abs: one complex.comp dispatch, conj bits read). Returns false (nothing done) for other kernels,
// which then reject complex as before. `b`: the second operand of binary rows, else null.
bool complex_elementwise(const char* kernel, at::Tensor& out, const at::Tensor& a,
                         const at::Tensor* b);

// The complex path of addmm / baddbmm / mm / bmm (ops_matmul.cpp): result = beta * bias +
// alpha * a @ b for 2-d (m x k, k x n) or 3-d batched operands, through the native real GEMM
// on the real views (one GEMM call). `bias` may alias `result` or be undefined (beta unused).
void complex_addbmm_into(const at::Tensor& result, const at::Tensor& bias, const at::Tensor& a,
                         const at::Tensor& b, const at::Scalar& beta, const at::Scalar& alpha);

}  // namespace tvk::aten
