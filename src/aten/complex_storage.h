// L3: complex tensors on vk. A complex64 / complex128 tensor is stored as interleaved
// (re, im) pairs of float32 / float64; kernels see it through its real view (a trailing dim
// of 2, doubled strides). vk_dtype() keeps rejecting complex, so every op that has not been
// taught about complex raises (or visibly falls back) instead of computing garbage.
#pragma once

#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>

#include <bitset>

#include "kernels/complex.h"

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

// run(out), or run(tmp) and a copy into `out` when `out` carries the conjugate / negative bit
// (kernels and real-view composites store plain values).
template <class F>
void with_plain_output(const at::Tensor& out, F&& run) {
  if (!out.is_conj() && !out.is_neg()) return run(out);
  at::Tensor tmp = at::empty(out.sizes(), out.options());
  run(tmp);
  out.copy_(tmp);
}

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
// ne, isnan, div, mul, add / sub (alpha 1), and one complex.comp dispatch (CPU semantics,
// conj bits read) for exp, log, log2, log10, log1p, expm1, sqrt, rsqrt, reciprocal, sgn,
// sigmoid, the trigonometric / hyperbolic functions and their inverses, pow, complex x complex
// mul / div and abs / angle. Returns false (nothing done) for other kernels, which then
// reject complex as before. `b`: the second operand of binary rows, else null.
bool complex_elementwise(const char* kernel, at::Tensor& out, const at::Tensor& a,
                         const at::Tensor* b);

// The CPU-semantics kernels of complex element-wise ops with a built iterator (operand 0 =
// out, then the inputs): complex or real inputs of any dtype and CPU scalars are read as they
// are; math in `compute`'s precision (complex64: fp32, complex128: fp64); conj_a / conj_b:
// the inputs carry the conjugate bit (read in place).
void launch_complex(kernels::ComplexOp op, at::TensorIteratorBase& iter, at::ScalarType compute,
                    bool conj_a, bool conj_b);

// The binary kernel rows of other files (pow, tanh_backward, sigmoid_backward) on their own
// iterator when its common dtype is complex. Returns false (nothing done) otherwise.
bool complex_elementwise_iter(const char* kernel, at::TensorIteratorBase& iter);

// pow(Tensor, Scalar) / pow(Scalar, Tensor) when the result type is complex, with the CPU's
// fast paths (exponent 0: ones, 1: copy, 0.5 / -0.5 / -1: sqrt / rsqrt / reciprocal, 2 / 3 /
// -2: products); `out` undefined: allocated. Return false (nothing done) for real results.
bool complex_pow_tensor_scalar(at::Tensor& out, const at::Tensor& base, const at::Scalar& exp);
bool complex_pow_scalar_tensor(at::Tensor& out, const at::Scalar& base, const at::Tensor& exp);

// cumsum (two real scans over the real view: exact, the parts are independent) or cumprod
// (complex_rows kernel, in order, fp64 accumulation where the device has it, like the CPU's
// complex<double> accumulator) of `self` along `dim` into complex `out` (its final shape and
// dtype; `self` is converted to that dtype first, as on the CPU).
void complex_scan(bool product, const at::Tensor& self, int64_t dim, const at::Tensor& out);

// prod of `self` over the dims in `mask` into complex `out` (the reduced shape, keepdim as
// given): the complex_rows kernel, accumulation in out's precision as on the CPU.
void complex_prod(const at::Tensor& self, const std::bitset<64>& mask, bool keepdim,
                  const at::Tensor& out);

// where(condition, self, other) with a complex result type (`out` undefined: allocated,
// else of that dtype): the same selection over the real views.
at::Tensor& complex_where(const at::Tensor& condition, const at::Tensor& self,
                          const at::Tensor& other, at::Tensor& out);

// masked_fill_ of complex `self` with a 0-dim `value` (CPU: two real fills of the planes; vk:
// a where), self's conjugate / negative bits honoured.
at::Tensor& complex_masked_fill_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value);

// dot(self, other) of complex 1-D tensors of one dtype (checked by the caller), conjugate /
// negative bits honoured: one real GEMM on the real views. 0-dim result.
at::Tensor complex_dot(const at::Tensor& self, const at::Tensor& other);

// The complex path of addmm / baddbmm / mm / bmm (ops_matmul.cpp): result = beta * bias +
// alpha * a @ b for 2-d (m x k, k x n) or 3-d batched operands, through the native real GEMM
// on the real views (one GEMM call). `bias` may alias `result` or be undefined (beta unused).
void complex_addbmm_into(const at::Tensor& result, const at::Tensor& bias, const at::Tensor& a,
                         const at::Tensor& b, const at::Scalar& beta, const at::Scalar& alpha);

}  // namespace tvk::aten
