// Native element-wise special functions and NaN-aware binary ops, all from the element-wise op
// table (shaders/elementwise_ops.toml, math in shaders/special.glsl): logaddexp(2), xlogy,
// special_xlog1py, special_zeta, polygamma, fmax / fmin, heaviside, sinc, special_entr, logit
// (+ backward), rsub, and PReLU's kernels. Iterators are built the way the CPU's structured
// kernels build them, so broadcasting, type promotion and output dtypes match; dtypes the CPU
// kernel does not dispatch raise its "not implemented" error.
#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/BinaryOps.h>
#include <torch/library.h>

#include <optional>

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
  launch_elementwise(iter, kernel, compute_kind_for(iter, dtype), scalars);
  if (!out.defined()) out = iter.output();
  return out;
}

// out = kernel(a), integer inputs promoted to the default float dtype.
at::Tensor& unary_float(const char* kernel, at::Tensor& out, const at::Tensor& a,
                        const Scalars& scalars = {}) {
  auto iter = at::TensorIterator::unary_float_op(out, a);
  launch_elementwise(iter, kernel, compute_kind_for(iter, iter.common_dtype()), scalars);
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
  launch_elementwise(iter, "sub", compute_kind_for(iter, iter.common_dtype()), make_scalars(alpha));
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
  auto iter = at::TensorIterator::unary_float_op(out, a);
  const at::ScalarType dtype = iter.common_dtype();
  if (floats_only && dtype != at::kFloat && dtype != at::kDouble) raise_not_implemented_for(cpu_name, dtype);
  launch_elementwise(iter, kernel, compute_kind_for(iter, dtype));
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
  launch_elementwise(iter, "logit_backward", compute_kind_for(iter, iter.common_dtype()),
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

// PReLU: the composite at::prelu broadcasts the weight to the input before calling these.
at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  at::Tensor out;
  auto iter = at::TensorIterator::binary_op(out, self, weight);
  const at::ScalarType dtype = iter.common_dtype();
  if (!at::isFloatingType(dtype)) raise_not_implemented_for("prelu_cpu", dtype);
  launch_elementwise(iter, "prelu", compute_kind_for(iter, dtype));
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
  launch_elementwise(input_iter, "prelu_backward_input", compute_kind_for(input_iter, dtype));
  grad_input = input_iter.output();
  // The weight gradient has the input's shape (the weight is already broadcast to it); the
  // composite reduces it to the weight's shape.
  auto weight_iter = at::TensorIteratorConfig()
                         .add_output(grad_weight)
                         .add_const_input(grad)
                         .add_const_input(self)
                         .build();
  launch_elementwise(weight_iter, "prelu_backward_weight", compute_kind_for(weight_iter, dtype));
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
