// Native element-wise special functions and NaN-aware binary ops, all from the element-wise op
// table (shaders/elementwise_ops.toml, math in shaders/special.glsl): logaddexp(2), xlogy,
// special_xlog1py, special_zeta, polygamma, fmax / fmin, heaviside, sinc, special_entr, logit
// (+ backward), rsub, PReLU's kernels, the Bessel and normal-distribution functions (i0, i0e,
// i1, i1e, ndtri, log_ndtr, erfcx, bessel_j/y, modified_bessel_i/k, airy_ai, ...), the
// orthogonal polynomials, nextafter, frexp and angle; linalg_cross and renorm are composites
// of native ops. Iterators are built the way the CPU's structured
// kernels build them, so broadcasting, type promotion and output dtypes match; dtypes the CPU
// kernel does not dispatch raise its "not implemented" error.
#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <ATen/AccumulateType.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "aten/complex_storage.h"
#include "aten/launch.h"
#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

using c10::Scalar;
using kernels::Scalars;

enum class Promote { Same, ToFloat };

// out = kernel(a, b): `promote` picks binary_op or binary_float_op; `floating_only` rejects
// integral common dtypes with the CPU kernel's error under `cpu_name`.
at::Tensor& binary(const char* kernel, at::Tensor& out, const at::Tensor& a, const at::Tensor& b,
                   Promote promote, bool floating_only, const char* cpu_name,
                   const Scalars& scalars = {}) {
  auto iter = promote == Promote::ToFloat ? at::TensorIterator::binary_float_op(out, a, b)
                                          : at::TensorIterator::binary_op(out, a, b);
  const at::ScalarType dtype = iter.common_dtype();
  if (floating_only && !at::isFloatingType(dtype)) raise_not_implemented_for(cpu_name, dtype);
  launch_elementwise(iter, kernel, dtype, scalars);
  if (!out.defined()) out = iter.output();
  return out;
}

// out = kernel(a), integer inputs promoted to the default float dtype.
at::Tensor& unary_float(const char* kernel, at::Tensor& out, const at::Tensor& a,
                        const Scalars& scalars = {}) {
  auto iter = at::TensorIterator::unary_float_op(out, a);
  launch_elementwise(iter, kernel, iter.common_dtype(), scalars);
  if (!out.defined()) out = iter.output();
  return out;
}

// One registration family per binary op: functional, in-place and out=.
#define TVK_BINARY_OP(fn, kernel, promote, floating_only, cpu_name)                             \
  at::Tensor fn(const at::Tensor& a, const at::Tensor& b) {                                     \
    at::Tensor out;                                                                             \
    return binary(kernel, out, a, b, promote, floating_only, cpu_name);                         \
  }                                                                                             \
  at::Tensor& fn##_(at::Tensor& a, const at::Tensor& b) {                                       \
    return binary(kernel, a, a, b, promote, floating_only, cpu_name);                           \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {             \
    return binary(kernel, out, a, b, promote, floating_only, cpu_name);                         \
  }

TVK_BINARY_OP(logaddexp, "logaddexp", Promote::Same, true, "logaddexp_cpu")
TVK_BINARY_OP(logaddexp2, "logaddexp2", Promote::Same, true, "logaddexp2_cpu")
TVK_BINARY_OP(xlogy, "xlogy", Promote::ToFloat, false, "xlogy_cpu")
TVK_BINARY_OP(xlog1py, "xlog1py", Promote::ToFloat, false, "xlog1py_cpu")
TVK_BINARY_OP(zeta, "zeta", Promote::ToFloat, false, "zeta_cpu")
#undef TVK_BINARY_OP

void check_not_complex(const at::Tensor& a, const at::Tensor& b, const char* name) {
  TORCH_CHECK(!a.is_complex() && !b.is_complex(), name, " not implemented for complex tensors.");
}

at::Tensor& fmax_out_vk(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  check_not_complex(a, b, "fmax");
  return binary("fmax", out, a, b, Promote::Same, false, "fmax_cpu");
}
at::Tensor fmax(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor out;
  return fmax_out_vk(a, b, out);
}
at::Tensor& fmin_out_vk(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  check_not_complex(a, b, "fmin");
  return binary("fmin", out, a, b, Promote::Same, false, "fmin_cpu");
}
at::Tensor fmin(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor out;
  return fmin_out_vk(a, b, out);
}

at::Tensor& heaviside_out_vk(const at::Tensor& self, const at::Tensor& values, at::Tensor& out) {
  TORCH_CHECK(!self.is_complex() && !values.is_complex() && (!out.defined() || !out.is_complex()),
              "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(self.dtype() == values.dtype() && (!out.defined() || self.dtype() == out.dtype()),
              "heaviside is not yet implemented for tensors with different dtypes.");
  return binary("heaviside", out, self, values, Promote::Same, false, "heaviside_cpu");
}
at::Tensor heaviside(const at::Tensor& self, const at::Tensor& values) {
  at::Tensor out;
  return heaviside_out_vk(self, values, out);
}
at::Tensor& heaviside_(at::Tensor& self, const at::Tensor& values) {
  return heaviside_out_vk(self, values, self);
}

// rsub(self, other, alpha) = other - alpha * self, with sub's checks.
at::Tensor rsub(const at::Tensor& self, const at::Tensor& other, const Scalar& alpha) {
  at::native::sub_check(self, other);
  at::Tensor out;
  auto iter = at::TensorIterator::binary_op(out, other, self);
  at::native::alpha_check(iter.dtype(), alpha);
  launch_elementwise(iter, "sub", iter.common_dtype(), make_scalars(alpha));
  return iter.output();
}

#define TVK_UNARY_FLOAT_OP(fn, kernel)                                                          \
  at::Tensor fn(const at::Tensor& a) {                                                          \
    at::Tensor out;                                                                             \
    return unary_float(kernel, out, a);                                                         \
  }                                                                                             \
  at::Tensor& fn##_(at::Tensor& a) { return unary_float(kernel, a, a); }                        \
  at::Tensor& fn##_out(const at::Tensor& a, at::Tensor& out) { return unary_float(kernel, out, a); }

TVK_UNARY_FLOAT_OP(sinc, "sinc")
TVK_UNARY_FLOAT_OP(entr, "entr")
TVK_UNARY_FLOAT_OP(i0, "i0")
#undef TVK_UNARY_FLOAT_OP

// out = kernel(a) for the special_* unary ops: integer inputs promote to the default float
// dtype; `floats_only` ops (the CPU dispatches them for float32/float64 only) reject
// float16/bfloat16 with the CPU kernel's error under `cpu_name`.
at::Tensor& unary_special(const char* kernel, bool floats_only, const char* cpu_name, at::Tensor& out,
                          const at::Tensor& a) {
  // angle of a complex tensor: complex.comp (real output).
  if (a.is_complex() && complex_elementwise(kernel, out, a, nullptr)) return out;
  auto iter = at::TensorIterator::unary_float_op(out, a);
  const at::ScalarType dtype = iter.common_dtype();
  if (floats_only && dtype != at::kFloat && dtype != at::kDouble) raise_not_implemented_for(cpu_name, dtype);
  launch_elementwise(iter, kernel, dtype);
  if (!out.defined()) out = iter.output();
  return out;
}

// Functional and out= forms of one special_* unary op.
#define TVK_SPECIAL_UNARY(fn, kernel, floats_only, cpu_name)                                    \
  at::Tensor fn(const at::Tensor& a) {                                                          \
    at::Tensor out;                                                                             \
    return unary_special(kernel, floats_only, cpu_name, out, a);                                \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& a, at::Tensor& out) {                                  \
    return unary_special(kernel, floats_only, cpu_name, out, a);                                \
  }

TVK_SPECIAL_UNARY(special_i0e, "i0e", false, "i0e_cpu")
TVK_SPECIAL_UNARY(special_i1, "i1", false, "i1_cpu")
TVK_SPECIAL_UNARY(special_i1e, "i1e", false, "i1e_cpu")
TVK_SPECIAL_UNARY(special_ndtri, "ndtri", true, "ndtri_cpu")
TVK_SPECIAL_UNARY(special_log_ndtr, "log_ndtr", true, "log_ndtr_cpu")
TVK_SPECIAL_UNARY(special_erfcx, "erfcx", true, "erfcx_cpu")
TVK_SPECIAL_UNARY(special_bessel_j0, "bessel_j0", true, "bessel_j0_cpu")
TVK_SPECIAL_UNARY(special_bessel_j1, "bessel_j1", true, "bessel_j1_cpu")
TVK_SPECIAL_UNARY(special_bessel_y0, "bessel_y0", true, "bessel_y0_cpu")
TVK_SPECIAL_UNARY(special_bessel_y1, "bessel_y1", true, "bessel_y1_cpu")
TVK_SPECIAL_UNARY(special_modified_bessel_i0, "i0", true, "modified_bessel_i0_cpu")
TVK_SPECIAL_UNARY(special_modified_bessel_i1, "i1", true, "modified_bessel_i1_cpu")
TVK_SPECIAL_UNARY(special_modified_bessel_k0, "modified_bessel_k0", true, "modified_bessel_k0_cpu")
TVK_SPECIAL_UNARY(special_modified_bessel_k1, "modified_bessel_k1", true, "modified_bessel_k1_cpu")
TVK_SPECIAL_UNARY(special_scaled_modified_bessel_k0, "scaled_modified_bessel_k0", true,
                  "scaled_modified_bessel_k0_cpu")
TVK_SPECIAL_UNARY(special_scaled_modified_bessel_k1, "scaled_modified_bessel_k1", true,
                  "scaled_modified_bessel_k1_cpu")
TVK_SPECIAL_UNARY(special_spherical_bessel_j0, "spherical_bessel_j0", true, "spherical_bessel_j0_cpu")
TVK_SPECIAL_UNARY(special_airy_ai, "airy_ai", true, "airy_ai_cpu")
TVK_SPECIAL_UNARY(angle, "angle", false, "angle_cpu")
#undef TVK_SPECIAL_UNARY

// The orthogonal polynomials p_n(x): x and n promote together to a float dtype (integers to
// the default float); the CPU dispatches float32 and float64 only. The Scalar overloads are
// composites that wrap the scalar into a CPU 0-dim tensor and land here.
at::Tensor& polynomial(const char* kernel, const char* cpu_name, at::Tensor& out, const at::Tensor& x,
                       const at::Tensor& n) {
  auto iter = at::TensorIterator::binary_float_op(out, x, n);
  const at::ScalarType dtype = iter.common_dtype();
  if (dtype != at::kFloat && dtype != at::kDouble) raise_not_implemented_for(cpu_name, dtype);
  launch_elementwise(iter, kernel, dtype);
  if (!out.defined()) out = iter.output();
  return out;
}

#define TVK_POLYNOMIAL(fn, kernel)                                                              \
  at::Tensor special_##fn(const at::Tensor& x, const at::Tensor& n) {                           \
    at::Tensor out;                                                                             \
    return polynomial(kernel, kernel "_cpu", out, x, n);                                        \
  }                                                                                             \
  at::Tensor& special_##fn##_out(const at::Tensor& x, const at::Tensor& n, at::Tensor& out) {   \
    return polynomial(kernel, kernel "_cpu", out, x, n);                                        \
  }

TVK_POLYNOMIAL(chebyshev_polynomial_t, "chebyshev_polynomial_t")
TVK_POLYNOMIAL(chebyshev_polynomial_u, "chebyshev_polynomial_u")
TVK_POLYNOMIAL(chebyshev_polynomial_v, "chebyshev_polynomial_v")
TVK_POLYNOMIAL(chebyshev_polynomial_w, "chebyshev_polynomial_w")
TVK_POLYNOMIAL(shifted_chebyshev_polynomial_t, "shifted_chebyshev_polynomial_t")
TVK_POLYNOMIAL(shifted_chebyshev_polynomial_u, "shifted_chebyshev_polynomial_u")
TVK_POLYNOMIAL(shifted_chebyshev_polynomial_v, "shifted_chebyshev_polynomial_v")
TVK_POLYNOMIAL(shifted_chebyshev_polynomial_w, "shifted_chebyshev_polynomial_w")
TVK_POLYNOMIAL(hermite_polynomial_h, "hermite_polynomial_h")
TVK_POLYNOMIAL(hermite_polynomial_he, "hermite_polynomial_he")
TVK_POLYNOMIAL(laguerre_polynomial_l, "laguerre_polynomial_l")
TVK_POLYNOMIAL(legendre_polynomial_p, "legendre_polynomial_p")
#undef TVK_POLYNOMIAL

// nextafter: same-dtype promotion as the CPU's binary op; floating dtypes only. The kernel
// steps in the output's storage format (float16 / bfloat16 values are stepped on their bits).
at::Tensor& nextafter_out_vk(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  return binary("nextafter", out, a, b, Promote::Same, true, "nextafter_cpu");
}
at::Tensor nextafter(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor out;
  return nextafter_out_vk(a, b, out);
}
at::Tensor& nextafter_(at::Tensor& a, const at::Tensor& b) { return nextafter_out_vk(a, b, a); }

// frexp: mantissa in the input's dtype, exponent int32 (one element-wise pass per output).
std::tuple<at::Tensor&, at::Tensor&> frexp_out_vk(const at::Tensor& self, at::Tensor& mantissa,
                                                  at::Tensor& exponent) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ",
              self.dtype(), " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt, "torch.frexp() expects exponent to have int dtype but got ",
              exponent.dtype());
  const at::ScalarType dtype = self.scalar_type();
  auto mantissa_iter = at::TensorIteratorConfig()
                           .add_output(mantissa)
                           .add_const_input(self)
                           .check_all_same_dtype(false)
                           .set_check_mem_overlap(true)
                           .build();
  launch_elementwise(mantissa_iter, "frexp_mantissa", dtype);
  auto exponent_iter = at::TensorIteratorConfig()
                           .add_output(exponent)
                           .add_const_input(self)
                           .check_all_same_dtype(false)
                           .set_check_mem_overlap(true)
                           .build();
  launch_elementwise(exponent_iter, "frexp_exponent", dtype, {}, {.keep_result = true});
  return {mantissa, exponent};
}

// logit: eps = None is eps < 0 in the kernel (no clamping), as on the CPU.
at::Tensor& logit_out_vk(const at::Tensor& self, std::optional<double> eps, at::Tensor& out) {
  return unary_float("logit", out, self, make_scalars(eps.value_or(-1.0)));
}
at::Tensor logit(const at::Tensor& self, std::optional<double> eps) {
  at::Tensor out;
  return logit_out_vk(self, eps, out);
}
at::Tensor& logit_(at::Tensor& self, std::optional<double> eps) { return logit_out_vk(self, eps, self); }

at::Tensor& logit_backward_out_vk(const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps,
                               at::Tensor& grad_input) {
  auto iter = at::TensorIterator::binary_op(grad_input, grad, self);
  launch_elementwise(iter, "logit_backward", iter.common_dtype(),
                     make_scalars(eps.value_or(-1.0)));
  if (!grad_input.defined()) grad_input = iter.output();
  return grad_input;
}
at::Tensor logit_backward(const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps) {
  at::Tensor out;
  return logit_backward_out_vk(grad, self, eps, out);
}

at::Tensor& polygamma_out_vk(int64_t n, const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  return unary_float("polygamma", out, self, make_scalars(Scalar(static_cast<double>(n))));
}
at::Tensor polygamma(int64_t n, const at::Tensor& self) {
  at::Tensor out;
  return polygamma_out_vk(n, self, out);
}

// linalg_cross as a composite of native ops: with a_k, b_k the components along `dim` and the
// cyclic shifts s1(t) = (t_1, t_2, t_0), s2(t) = (t_2, t_0, t_1), a x b = s1(a) s2(b) - s2(a) s1(b).
at::Tensor& linalg_cross_out_vk(const at::Tensor& input, const at::Tensor& other, int64_t dim, at::Tensor& out) {
  TORCH_CHECK(input.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  TORCH_CHECK(input.size(dim) == 3 && other.size(dim) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", input.size(dim), " and ", other.size(dim));
  const auto out_size = at::infer_size(input.sizes(), other.sizes());
  TORCH_CHECK(input.scalar_type() == other.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", other.scalar_type());
  if (input.scalar_type() == at::kBool) raise_not_implemented_for("cross", at::kBool);
  const int64_t d = c10::maybe_wrap_dim(dim, input.dim());
  auto shift = [d](const at::Tensor& t, int64_t k) {
    return at::cat({t.narrow(d, k, 3 - k), t.narrow(d, 0, k)}, d);
  };
  const at::Tensor a = input.expand(out_size);
  const at::Tensor b = other.expand(out_size);
  const at::Tensor result = shift(a, 1) * shift(b, 2) - shift(a, 2) * shift(b, 1);
  if (!out.defined()) return out = result;
  at::native::resize_output(out, out_size);
  out.copy_(result);
  return out;
}
at::Tensor linalg_cross(const at::Tensor& input, const at::Tensor& other, int64_t dim) {
  at::Tensor out;
  return linalg_cross_out_vk(input, other, dim, out);
}

// renorm as the CPU computes it: per-slice p-norms along every dimension but `dim` (in fp32
// for float16/bfloat16), factor = maxnorm / (norm + 1e-7) where norm > maxnorm else 1, rounded
// to the input's dtype, then out = self * factor.
at::Tensor& renorm_out_vk(const at::Tensor& self, const Scalar& p, int64_t dim, const Scalar& maxnorm,
                          at::Tensor& out) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0.0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(maxnorm.toDouble() >= 0.0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  const int64_t ndim = self.dim();
  TORCH_CHECK(ndim > 1, "renorm: input needs at least 2 dimensions, got ", ndim, " dimensions");
  dim = c10::maybe_wrap_dim(dim, ndim);
  const at::ScalarType dtype = self.scalar_type();
  TORCH_CHECK(at::isFloatingType(dtype),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ", dtype);
  std::vector<int64_t> reduce_dims;
  for (int64_t i = 0; i < ndim; ++i) {
    if (i != dim) reduce_dims.push_back(i);
  }
  const at::ScalarType acc = at::toAccumulateType(dtype, /*is_cuda=*/true);
  const at::Tensor norm = at::linalg_vector_norm(self, p, reduce_dims, /*keepdim=*/true,
                                                 acc != dtype ? std::optional<at::ScalarType>(acc) : std::nullopt);
  const at::Tensor scaled = at::full_like(norm, maxnorm) / (norm + 1e-7);
  const at::Tensor factor = at::where(norm > maxnorm, scaled, at::ones_like(norm)).to(dtype);
  if (!out.defined()) return out = self * factor;
  at::native::resize_output(out, self.sizes());
  at::mul_out(out, self, factor);
  return out;
}
at::Tensor renorm(const at::Tensor& self, const Scalar& p, int64_t dim, const Scalar& maxnorm) {
  at::Tensor out;
  return renorm_out_vk(self, p, dim, maxnorm, out);
}
at::Tensor& renorm_(at::Tensor& self, const Scalar& p, int64_t dim, const Scalar& maxnorm) {
  return renorm_out_vk(self, p, dim, maxnorm, self);
}

// PReLU: the composite at::prelu broadcasts the weight to the input before calling these.
at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  at::Tensor out;
  auto iter = at::TensorIterator::binary_op(out, self, weight);
  const at::ScalarType dtype = iter.common_dtype();
  if (!at::isFloatingType(dtype)) raise_not_implemented_for("prelu_cpu", dtype);
  launch_elementwise(iter, "prelu", dtype);
  return iter.output();
}

std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad, const at::Tensor& self,
                                                         const at::Tensor& weight) {
  at::Tensor grad_input;
  at::Tensor grad_weight;
  auto input_iter = at::TensorIteratorConfig()
                        .add_output(grad_input)
                        .add_const_input(grad)
                        .add_const_input(self)
                        .add_const_input(weight)
                        .build();
  const at::ScalarType dtype = input_iter.common_dtype();
  if (!at::isFloatingType(dtype)) raise_not_implemented_for("prelu_backward_cpu", dtype);
  launch_elementwise(input_iter, "prelu_backward_input", dtype);
  grad_input = input_iter.output();
  // The weight gradient has the input's shape (the weight is already broadcast to it); the
  // composite reduces it to the weight's shape.
  auto weight_iter = at::TensorIteratorConfig()
                         .add_output(grad_weight)
                         .add_const_input(grad)
                         .add_const_input(self)
                         .build();
  launch_elementwise(weight_iter, "prelu_backward_weight", dtype);
  return {grad_input, weight_iter.output()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("logaddexp", TORCH_FN(logaddexp));
  m.impl("logaddexp.out", TORCH_FN(logaddexp_out));
  m.impl("logaddexp2", TORCH_FN(logaddexp2));
  m.impl("logaddexp2.out", TORCH_FN(logaddexp2_out));
  m.impl("xlogy.Tensor", TORCH_FN(xlogy));
  m.impl("xlogy_.Tensor", TORCH_FN(xlogy_));
  m.impl("xlogy.OutTensor", TORCH_FN(xlogy_out));
  m.impl("special_xlog1py", TORCH_FN(xlog1py));
  m.impl("special_xlog1py.out", TORCH_FN(xlog1py_out));
  m.impl("special_zeta", TORCH_FN(zeta));
  m.impl("special_zeta.out", TORCH_FN(zeta_out));
  m.impl("fmax", TORCH_FN(fmax));
  m.impl("fmax.out", TORCH_FN(fmax_out_vk));
  m.impl("fmin", TORCH_FN(fmin));
  m.impl("fmin.out", TORCH_FN(fmin_out_vk));
  m.impl("heaviside", TORCH_FN(heaviside));
  m.impl("heaviside_", TORCH_FN(heaviside_));
  m.impl("heaviside.out", TORCH_FN(heaviside_out_vk));
  m.impl("rsub.Tensor", TORCH_FN(rsub));
  m.impl("sinc", TORCH_FN(sinc));
  m.impl("sinc_", TORCH_FN(sinc_));
  m.impl("sinc.out", TORCH_FN(sinc_out));
  m.impl("special_entr", TORCH_FN(entr));
  m.impl("special_entr.out", TORCH_FN(entr_out));
  m.impl("i0", TORCH_FN(i0));
  m.impl("i0_", TORCH_FN(i0_));
  m.impl("i0.out", TORCH_FN(i0_out));
#define TVK_IMPL_SPECIAL(fn)                          \
  m.impl(#fn, TORCH_FN(fn));                          \
  m.impl(#fn ".out", TORCH_FN(fn##_out));
  TVK_IMPL_SPECIAL(special_i0e)
  TVK_IMPL_SPECIAL(special_i1)
  TVK_IMPL_SPECIAL(special_i1e)
  TVK_IMPL_SPECIAL(special_ndtri)
  TVK_IMPL_SPECIAL(special_log_ndtr)
  TVK_IMPL_SPECIAL(special_erfcx)
  TVK_IMPL_SPECIAL(special_bessel_j0)
  TVK_IMPL_SPECIAL(special_bessel_j1)
  TVK_IMPL_SPECIAL(special_bessel_y0)
  TVK_IMPL_SPECIAL(special_bessel_y1)
  TVK_IMPL_SPECIAL(special_modified_bessel_i0)
  TVK_IMPL_SPECIAL(special_modified_bessel_i1)
  TVK_IMPL_SPECIAL(special_modified_bessel_k0)
  TVK_IMPL_SPECIAL(special_modified_bessel_k1)
  TVK_IMPL_SPECIAL(special_scaled_modified_bessel_k0)
  TVK_IMPL_SPECIAL(special_scaled_modified_bessel_k1)
  TVK_IMPL_SPECIAL(special_spherical_bessel_j0)
  TVK_IMPL_SPECIAL(special_airy_ai)
  TVK_IMPL_SPECIAL(angle)
  TVK_IMPL_SPECIAL(special_chebyshev_polynomial_t)
  TVK_IMPL_SPECIAL(special_chebyshev_polynomial_u)
  TVK_IMPL_SPECIAL(special_chebyshev_polynomial_v)
  TVK_IMPL_SPECIAL(special_chebyshev_polynomial_w)
  TVK_IMPL_SPECIAL(special_shifted_chebyshev_polynomial_t)
  TVK_IMPL_SPECIAL(special_shifted_chebyshev_polynomial_u)
  TVK_IMPL_SPECIAL(special_shifted_chebyshev_polynomial_v)
  TVK_IMPL_SPECIAL(special_shifted_chebyshev_polynomial_w)
  TVK_IMPL_SPECIAL(special_hermite_polynomial_h)
  TVK_IMPL_SPECIAL(special_hermite_polynomial_he)
  TVK_IMPL_SPECIAL(special_laguerre_polynomial_l)
  TVK_IMPL_SPECIAL(special_legendre_polynomial_p)
  m.impl("nextafter", TORCH_FN(nextafter));
  m.impl("nextafter_", TORCH_FN(nextafter_));
  m.impl("nextafter.out", TORCH_FN(nextafter_out_vk));
  m.impl("frexp.Tensor_out", TORCH_FN(frexp_out_vk));
  m.impl("linalg_cross", TORCH_FN(linalg_cross));
  m.impl("linalg_cross.out", TORCH_FN(linalg_cross_out_vk));
  m.impl("renorm", TORCH_FN(renorm));
  m.impl("renorm_", TORCH_FN(renorm_));
  m.impl("renorm.out", TORCH_FN(renorm_out_vk));
  m.impl("logit", TORCH_FN(logit));
  m.impl("logit_", TORCH_FN(logit_));
  m.impl("logit.out", TORCH_FN(logit_out_vk));
  m.impl("logit_backward", TORCH_FN(logit_backward));
  m.impl("logit_backward.grad_input", TORCH_FN(logit_backward_out_vk));
  m.impl("polygamma", TORCH_FN(polygamma));
  m.impl("polygamma.out", TORCH_FN(polygamma_out_vk));
  m.impl("_prelu_kernel", TORCH_FN(prelu_kernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(prelu_kernel_backward));
#undef TVK_IMPL_SPECIAL
}

}  // namespace tvk::aten
