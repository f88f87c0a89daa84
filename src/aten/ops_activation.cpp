// Native activations and the backward ops autograd calls for them. Each op builds the same
// TensorIterator as PyTorch's meta function (broadcasting, type promotion, output dtype),
// checks the dtypes the CPU kernel accepts (floating types only, except threshold), and
// launches one element-wise kernel of shaders/elementwise_ops.toml. Scalars beyond the two a
// kernel takes by value (s0, s1) travel as CPU scalar operands (elu's third coefficient,
// nan_to_num's third replacement).
//
// Not registered because PyTorch composes them: relu6 (hardtanh), selu and celu (elu),
// log_sigmoid (log_sigmoid_forward), silu's and gelu's math fallbacks.
//
// rrelu_with_noise is a composite of native ops: eval mode is leaky_relu with slope
// (lower + upper) / 2 (as the CPU); training draws the noise with the device generator
// (uniform_), keeps it where self <= 0 and sets 1 elsewhere, and multiplies. Its backward
// (rrelu_with_noise_backward) is PyTorch's composite of the same ops.
#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Gelu.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/result_type.h>
#include <torch/library.h>

#include <optional>
#include <string_view>
#include <tuple>

#include "aten/complex_storage.h"
#include "aten/launch.h"
#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

using c10::Scalar;
using kernels::Scalars;

// Launches `kernel` over a built iterator after the CPU's floating-types-only check.
at::Tensor& launch_float(at::TensorIterator& iter, at::Tensor& out, const char* kernel,
                         const char* cpu_name, const Scalars& scalars = {}) {
  const at::ScalarType dtype = iter.common_dtype();
  if (!at::isFloatingType(dtype)) raise_not_implemented_for(cpu_name, dtype);
  launch_elementwise(iter, kernel, dtype, scalars);
  if (!out.defined()) out = iter.output();
  return out;
}

// Forward activation of one tensor: out = f(self) with self's dtype (build_unary_op).
struct UnaryActivation {
  const char* kernel;
  const char* cpu_name;
  at::Tensor& run(at::Tensor& out, const at::Tensor& self, const Scalars& scalars = {}) const {
    auto iter = at::TensorIterator::unary_op(out, self);
    return launch_float(iter, out, kernel, cpu_name, scalars);
  }
};

// Backward of one input: grad_input = f(a, b) over the promoted dtype of a and b
// (build_borrowing_binary_op); the argument order is the meta function's.
struct BinaryBackward {
  const char* kernel;
  const char* cpu_name;
  at::Tensor& run(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const Scalars& scalars = {}) const {
    auto iter = at::TensorIterator::borrowing_binary_op(out, a, b);
    if (complex_elementwise_iter(kernel, iter)) return out.defined() ? out : (out = iter.output());
    return launch_float(iter, out, kernel, cpu_name, scalars);
  }
};

constexpr UnaryActivation kSilu{"silu", "silu_cpu"};
constexpr UnaryActivation kMish{"mish", "mish_cpu"};
constexpr UnaryActivation kHardswish{"hardswish", "hardswish_cpu"};
constexpr UnaryActivation kHardsigmoid{"hardsigmoid", "hardsigmoid_cpu"};
constexpr UnaryActivation kLogSigmoid{"log_sigmoid", "log_sigmoid_cpu"};
constexpr BinaryBackward kSiluBackward{"silu_backward", "silu_backward_cpu"};
constexpr BinaryBackward kMishBackward{"mish_backward", "mish_backward_cpu"};
constexpr BinaryBackward kHardswishBackward{"hardswish_backward", "hardswish_backward_cpu"};
constexpr BinaryBackward kHardsigmoidBackward{"hardsigmoid_backward", "hardsigmoid_backward"};
constexpr BinaryBackward kSigmoidBackward{"sigmoid_backward", "sigmoid_backward_cpu"};
constexpr BinaryBackward kTanhBackward{"tanh_backward", "tanh_backward_cpu"};

// (functional, in-place, out=) of a scalar-free activation / backward.
template <const UnaryActivation& A>
struct UnaryOverloads {
  static at::Tensor functional(const at::Tensor& self) {
    at::Tensor out;
    return A.run(out, self);
  }
  static at::Tensor& inplace(at::Tensor& self) { return A.run(self, self); }
  static at::Tensor& out(const at::Tensor& self, at::Tensor& out) { return A.run(out, self); }
};
template <const BinaryBackward& B>
struct BackwardOverloads {
  static at::Tensor functional(const at::Tensor& a, const at::Tensor& b) {
    at::Tensor out;
    return B.run(out, a, b);
  }
  static at::Tensor& out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) { return B.run(out, a, b); }
};

// ---- gelu ----
at::Tensor& gelu_out(const at::Tensor& self, std::string_view approximate, at::Tensor& out) {
  const auto type = at::native::get_gelutype_enum(approximate);
  auto iter = at::TensorIterator::unary_op(out, self);
  return launch_float(iter, out, type == at::native::GeluType::Tanh ? "gelu_tanh" : "gelu", "GeluKernelImpl");
}
at::Tensor gelu(const at::Tensor& self, std::string_view approximate) {
  at::Tensor out;
  return gelu_out(self, approximate, out);
}
at::Tensor& gelu_(at::Tensor& self, std::string_view approximate) { return gelu_out(self, approximate, self); }

at::Tensor& gelu_backward_out(const at::Tensor& grad, const at::Tensor& self, std::string_view approximate,
                              at::Tensor& grad_input) {
  const auto type = at::native::get_gelutype_enum(approximate);
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad, self);
  return launch_float(iter, grad_input, type == at::native::GeluType::Tanh ? "gelu_tanh_backward" : "gelu_backward",
                      "GeluBackwardKernelImpl");
}
at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& self, std::string_view approximate) {
  at::Tensor grad_input;
  return gelu_backward_out(grad, self, approximate, grad_input);
}

// ---- mish_backward (CPU: an output of input's options, then binary_op) ----
at::Tensor mish_backward(const at::Tensor& grad_output, const at::Tensor& input) {
  at::Tensor grad_input = at::empty({0}, input.options());
  return kMishBackward.run(grad_input, grad_output, input);
}

// ---- hardswish_backward (functional only) ----
at::Tensor hardswish_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  at::Tensor grad_input;
  return kHardswishBackward.run(grad_input, grad_output, self);
}

// ---- leaky_relu ----
at::Tensor& leaky_relu_out(const at::Tensor& self, const Scalar& negval, at::Tensor& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  return launch_float(iter, out, "leaky_relu", "leaky_relu_cpu", make_scalars(negval));
}
at::Tensor leaky_relu(const at::Tensor& self, const Scalar& negval) {
  at::Tensor out;
  return leaky_relu_out(self, negval, out);
}
at::Tensor& leaky_relu_(at::Tensor& self, const Scalar& negval) { return leaky_relu_out(self, negval, self); }

at::Tensor& leaky_relu_backward_out(const at::Tensor& grad_output, const at::Tensor& self_or_result,
                                    const Scalar& negval, bool is_result, at::Tensor& grad_input) {
  TORCH_CHECK(!is_result || negval.to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which is not "
              "supported. This is caused by calling in-place forward function with a negative slope, "
              "please call out-of-place version instead. File an issue at "
              "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
              "backward calculation with negative slope");
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, self_or_result, grad_output);
  return launch_float(iter, grad_input, "leaky_relu_backward", "leaky_relu_backward_cpu", make_scalars(negval));
}
at::Tensor leaky_relu_backward(const at::Tensor& grad_output, const at::Tensor& self_or_result,
                               const Scalar& negval, bool is_result) {
  at::Tensor grad_input;
  return leaky_relu_backward_out(grad_output, self_or_result, negval, is_result, grad_input);
}

// ---- elu (covers selu and celu) ----
// out = x < 0 ? expm1(x * input_scale) * alpha * scale : x * scale.
at::Tensor& elu_out(const at::Tensor& self, const Scalar& alpha, const Scalar& scale,
                    const Scalar& input_scale, at::Tensor& out) {
  // build_unary_op: the output has self's dtype. The third coefficient is an extra operand.
  if (out.defined())
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
                self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  const at::Tensor input_scale_operand = scalar_operand(input_scale);
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .allow_cpu_scalars(true)
                  .declare_static_dtype(self.scalar_type())
                  .add_output(out)
                  .add_const_input(self)
                  .add_const_input(input_scale_operand)
                  .build();
  const at::ScalarType dtype = self.scalar_type();
  if (!at::isFloatingType(dtype)) raise_not_implemented_for("elu_cpu", dtype);
  launch_elementwise(iter, "elu", dtype,
                     make_scalars(alpha.to<double>() * scale.to<double>(), scale),
                     {.keep_inputs = 1u << 2});
  if (!out.defined()) out = iter.output();
  return out;
}
at::Tensor elu(const at::Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  at::Tensor out;
  return elu_out(self, alpha, scale, input_scale, out);
}
at::Tensor& elu_(at::Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  return elu_out(self, alpha, scale, input_scale, self);
}

at::Tensor& elu_backward_out(const at::Tensor& grad_output, const Scalar& alpha, const Scalar& scale,
                             const Scalar& input_scale, bool is_result, const at::Tensor& self_or_result,
                             at::Tensor& grad_input) {
  TORCH_CHECK(!is_result || alpha.to<double>() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, "
              "please call out-of-place version instead.");
  // build_borrowing_binary_op(grad_output, self_or_result) plus alpha * scale as an operand:
  // the dtype check comes first so that the wrapped number cannot make integers float.
  const at::ScalarType dtype = at::result_type(grad_output, self_or_result);
  if (!at::isFloatingType(dtype)) raise_not_implemented_for("elu_backward_cpu", dtype);
  const at::Tensor negcoef = scalar_operand(alpha.to<double>() * scale.to<double>());
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(true)
                  .allow_cpu_scalars(true)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .add_output(grad_input)
                  .add_const_input(grad_output)
                  .add_const_input(self_or_result)
                  .add_const_input(negcoef)
                  .build();
  launch_elementwise(iter, is_result ? "elu_backward_result" : "elu_backward",
                     iter.common_dtype(), make_scalars(input_scale, scale), {.keep_inputs = 1u << 3});
  if (!grad_input.defined()) grad_input = iter.output();
  return grad_input;
}
at::Tensor elu_backward(const at::Tensor& grad_output, const Scalar& alpha, const Scalar& scale,
                        const Scalar& input_scale, bool is_result, const at::Tensor& self_or_result) {
  at::Tensor grad_input;
  return elu_backward_out(grad_output, alpha, scale, input_scale, is_result, self_or_result, grad_input);
}

// ---- hardtanh (clamp with the CPU's checks and integer bounds) ----
at::Tensor& hardtanh_out(const at::Tensor& self, const Scalar& min, const Scalar& max, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  Scalar min_ = min, max_ = max;
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    const int64_t minval = min.toLong(), maxval = max.toLong();
    TORCH_CHECK(self.dtype() != at::kByte || (minval >= 0 && maxval >= 0),
                "cannot do hardtanh on an unsigned type with negative limits");
    min_ = minval;
    max_ = maxval;
  }
  return at::clamp_out(out, self, min_, max_);
}
at::Tensor hardtanh(const at::Tensor& self, const Scalar& min, const Scalar& max) {
  at::Tensor out = at::empty_like(self);
  return hardtanh_out(self, min, max, out);
}
at::Tensor& hardtanh_(at::Tensor& self, const Scalar& min, const Scalar& max) {
  return hardtanh_out(self, min, max, self);
}

at::Tensor& hardtanh_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const Scalar& min,
                                  const Scalar& max, at::Tensor& grad_input) {
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad_output, self);
  const at::ScalarType dtype = iter.common_dtype();
  if (!at::isFloatingType(dtype)) raise_not_implemented_for("hardshrink_backward_cpu", dtype);
  // bounds compared in the dtype (float for bfloat16), as the CPU kernel
  const at::ScalarType bound_type = dtype == at::kBFloat16 ? at::kFloat : dtype;
  return launch_float(iter, grad_input, "hardtanh_backward", "hardshrink_backward_cpu",
                      make_scalars(scalar_to_dtype(min, bound_type), scalar_to_dtype(max, bound_type)));
}
at::Tensor hardtanh_backward(const at::Tensor& grad_output, const at::Tensor& self, const Scalar& min,
                             const Scalar& max) {
  at::Tensor grad_input;
  return hardtanh_backward_out(grad_output, self, min, max, grad_input);
}

// ---- softplus ----
at::Tensor& softplus_out(const at::Tensor& self, const Scalar& beta, const Scalar& threshold, at::Tensor& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  return launch_float(iter, out, "softplus", "softplus_cpu", make_scalars(beta, threshold));
}
at::Tensor softplus(const at::Tensor& self, const Scalar& beta, const Scalar& threshold) {
  at::Tensor out;
  return softplus_out(self, beta, threshold, out);
}
at::Tensor& softplus_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const Scalar& beta,
                                  const Scalar& threshold, at::Tensor& grad_input) {
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad_output, self);
  return launch_float(iter, grad_input, "softplus_backward", "softplus_backward_cpu", make_scalars(beta, threshold));
}
at::Tensor softplus_backward(const at::Tensor& grad_output, const at::Tensor& self, const Scalar& beta,
                             const Scalar& threshold) {
  at::Tensor grad_input;
  return softplus_backward_out(grad_output, self, beta, threshold, grad_input);
}

// ---- softshrink / hardshrink (lambda compared in the dtype, as the CPU kernels) ----
Scalars lambda_scalars(const Scalar& lambd, at::ScalarType dtype) {
  return make_scalars(at::isFloatingType(dtype) ? scalar_to_dtype(lambd, dtype) : lambd);
}
at::Tensor& softshrink_out(const at::Tensor& self, const Scalar& lambd, at::Tensor& out) {
  const double lamb = lambd.to<double>();
  TORCH_CHECK(lamb >= 0, "lambda must be greater or equal to 0, but found to be ", lamb, ".");
  auto iter = at::TensorIterator::unary_op(out, self);
  return launch_float(iter, out, "softshrink", "softshrink_check", lambda_scalars(lambd, iter.common_dtype()));
}
at::Tensor softshrink(const at::Tensor& self, const Scalar& lambd) {
  at::Tensor out;
  return softshrink_out(self, lambd, out);
}
at::Tensor& hardshrink_out(const at::Tensor& self, const Scalar& lambd, at::Tensor& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  return launch_float(iter, out, "hardshrink", "hardshrink_cpu", lambda_scalars(lambd, iter.common_dtype()));
}
at::Tensor hardshrink(const at::Tensor& self, const Scalar& lambd) {
  at::Tensor out;
  return hardshrink_out(self, lambd, out);
}
// softshrink_backward and hardshrink_backward share the CPU's shrink_backward kernel.
at::Tensor& shrink_backward_out(const at::Tensor& grad, const at::Tensor& self, const Scalar& lambd,
                                at::Tensor& grad_input) {
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad, self);
  return launch_float(iter, grad_input, "shrink_backward", "shrink_backward_cpu",
                      lambda_scalars(lambd, iter.common_dtype()));
}
at::Tensor shrink_backward(const at::Tensor& grad, const at::Tensor& self, const Scalar& lambd) {
  at::Tensor grad_input;
  return shrink_backward_out(grad, self, lambd, grad_input);
}

// ---- log_sigmoid: like CUDA, the forward's `buffer` output is empty and ignored ----
std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& self, at::Tensor& output,
                                                              at::Tensor& buffer) {
  kLogSigmoid.run(output, self);
  return std::forward_as_tuple(output, buffer);
}
std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  at::Tensor output = at::empty_like(self);
  at::Tensor buffer = at::empty({0}, self.options());
  kLogSigmoid.run(output, self);
  return std::make_tuple(output, buffer);
}
at::Tensor& log_sigmoid_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                     const at::Tensor& /*buffer*/, at::Tensor& grad_input) {
  auto iter = at::TensorIteratorConfig().add_output(grad_input).add_const_input(self).add_const_input(grad_output).build();
  return launch_float(iter, grad_input, "log_sigmoid_backward", "log_sigmoid_backward_cpu");
}
at::Tensor log_sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& buffer) {
  at::Tensor grad_input = at::empty_like(grad_output);
  return log_sigmoid_backward_out(grad_output, self, buffer, grad_input);
}

// ---- threshold: out = x <= threshold ? value : other (other = x, or grad for the backward) ----
at::Tensor& threshold_impl(const at::Tensor& x, const at::Tensor& other, const Scalar& threshold,
                           const Scalar& value, at::Tensor& out) {
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(false)  // threshold is idempotent, so overlap is okay
                  .add_output(out)
                  .add_const_input(x)
                  .add_const_input(other)
                  .allow_cpu_scalars(true)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .build();
  const at::ScalarType dtype = iter.common_dtype();
  if (dtype == at::kBool) raise_not_implemented_for("threshold_cpu", dtype);
  launch_elementwise(iter, "threshold", dtype,
                     make_scalars(scalar_to_dtype(threshold, dtype), scalar_to_dtype(value, dtype)));
  if (!out.defined()) out = iter.output();
  return out;
}
at::Tensor threshold(const at::Tensor& self, const Scalar& threshold, const Scalar& value) {
  at::Tensor out;
  return threshold_impl(self, self, threshold, value, out);
}
at::Tensor& threshold_(at::Tensor& self, const Scalar& threshold, const Scalar& value) {
  return threshold_impl(self, self, threshold, value, self);
}
at::Tensor& threshold_out(const at::Tensor& self, const Scalar& threshold, const Scalar& value, at::Tensor& out) {
  return threshold_impl(self, self, threshold, value, out);
}
at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self, const Scalar& threshold) {
  at::Tensor grad_input;
  return threshold_impl(self, grad, threshold, 0, grad_input);
}
at::Tensor& threshold_backward_out(const at::Tensor& grad, const at::Tensor& self, const Scalar& threshold,
                                   at::Tensor& grad_input) {
  return threshold_impl(self, grad, threshold, 0, grad_input);
}

// ---- rrelu_with_noise ----
// Writes the activation into `output` (any layout; may alias self) and the slopes into `noise`.
at::Tensor& rrelu_with_noise_out(const at::Tensor& self, at::Tensor& noise, const Scalar& lower, const Scalar& upper,
                                 bool training, std::optional<at::Generator> generator, at::Tensor& output) {
  TORCH_CHECK(self.sym_sizes() == noise.sym_sizes(), "noise tensor shape must match self tensor shape. Got self.shape = ",
              self.sym_sizes(), " noise.shape = ", noise.sym_sizes());
  if (!training) {
    // The CPU's slope: (lower + upper) / 2 computed in double.
    const double slope = (lower.toDouble() + upper.toDouble()) / 2.0;
    return at::leaky_relu_out(output, self, slope);
  }
  const at::ScalarType dtype = self.scalar_type();
  if (dtype != at::kFloat && dtype != at::kDouble && dtype != at::kBFloat16)
    raise_not_implemented_for("rrelu_with_noise_out_cpu", dtype);
  noise.uniform_(lower.toDouble(), upper.toDouble(), generator);
  // Slopes apply where self <= 0 (NaN: slope 1, the NaN passes through).
  noise.masked_fill_(at::gt(self, 0).logical_or_(at::isnan(self)), 1);
  at::native::resize_output(output, self.sizes());
  return at::mul_out(output, self, noise);
}

at::Tensor rrelu_with_noise(const at::Tensor& self, at::Tensor& noise, const Scalar& lower, const Scalar& upper,
                            bool training, std::optional<at::Generator> generator) {
  at::Tensor output = at::empty_like(self, at::MemoryFormat::Contiguous);
  return rrelu_with_noise_out(self, noise, lower, upper, training, std::move(generator), output);
}

at::Tensor& rrelu_with_noise_(at::Tensor& self, at::Tensor& noise, const Scalar& lower, const Scalar& upper,
                              bool training, std::optional<at::Generator> generator) {
  return rrelu_with_noise_out(self, noise, lower, upper, training, std::move(generator), self);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gelu", TORCH_FN(gelu));
  m.impl("gelu_", TORCH_FN(gelu_));
  m.impl("gelu.out", TORCH_FN(gelu_out));
  m.impl("gelu_backward", TORCH_FN(gelu_backward));
  m.impl("gelu_backward.grad_input", TORCH_FN(gelu_backward_out));
  m.impl("silu", TORCH_FN(UnaryOverloads<kSilu>::functional));
  m.impl("silu_", TORCH_FN(UnaryOverloads<kSilu>::inplace));
  m.impl("silu.out", TORCH_FN(UnaryOverloads<kSilu>::out));
  m.impl("silu_backward", TORCH_FN(BackwardOverloads<kSiluBackward>::functional));
  m.impl("silu_backward.grad_input", TORCH_FN(BackwardOverloads<kSiluBackward>::out));
  m.impl("mish", TORCH_FN(UnaryOverloads<kMish>::functional));
  m.impl("mish_", TORCH_FN(UnaryOverloads<kMish>::inplace));
  m.impl("mish.out", TORCH_FN(UnaryOverloads<kMish>::out));
  m.impl("mish_backward", TORCH_FN(mish_backward));
  m.impl("hardswish", TORCH_FN(UnaryOverloads<kHardswish>::functional));
  m.impl("hardswish_", TORCH_FN(UnaryOverloads<kHardswish>::inplace));
  m.impl("hardswish.out", TORCH_FN(UnaryOverloads<kHardswish>::out));
  m.impl("hardswish_backward", TORCH_FN(hardswish_backward));
  m.impl("hardsigmoid", TORCH_FN(UnaryOverloads<kHardsigmoid>::functional));
  m.impl("hardsigmoid_", TORCH_FN(UnaryOverloads<kHardsigmoid>::inplace));
  m.impl("hardsigmoid.out", TORCH_FN(UnaryOverloads<kHardsigmoid>::out));
  m.impl("hardsigmoid_backward", TORCH_FN(BackwardOverloads<kHardsigmoidBackward>::functional));
  m.impl("hardsigmoid_backward.grad_input", TORCH_FN(BackwardOverloads<kHardsigmoidBackward>::out));
  m.impl("sigmoid_backward", TORCH_FN(BackwardOverloads<kSigmoidBackward>::functional));
  m.impl("sigmoid_backward.grad_input", TORCH_FN(BackwardOverloads<kSigmoidBackward>::out));
  m.impl("tanh_backward", TORCH_FN(BackwardOverloads<kTanhBackward>::functional));
  m.impl("tanh_backward.grad_input", TORCH_FN(BackwardOverloads<kTanhBackward>::out));
  m.impl("leaky_relu", TORCH_FN(leaky_relu));
  m.impl("leaky_relu_", TORCH_FN(leaky_relu_));
  m.impl("leaky_relu.out", TORCH_FN(leaky_relu_out));
  m.impl("leaky_relu_backward", TORCH_FN(leaky_relu_backward));
  m.impl("leaky_relu_backward.grad_input", TORCH_FN(leaky_relu_backward_out));
  m.impl("elu", TORCH_FN(elu));
  m.impl("elu_", TORCH_FN(elu_));
  m.impl("elu.out", TORCH_FN(elu_out));
  m.impl("elu_backward", TORCH_FN(elu_backward));
  m.impl("elu_backward.grad_input", TORCH_FN(elu_backward_out));
  m.impl("hardtanh", TORCH_FN(hardtanh));
  m.impl("hardtanh_", TORCH_FN(hardtanh_));
  m.impl("hardtanh.out", TORCH_FN(hardtanh_out));
  m.impl("hardtanh_backward", TORCH_FN(hardtanh_backward));
  m.impl("hardtanh_backward.grad_input", TORCH_FN(hardtanh_backward_out));
  m.impl("softplus", TORCH_FN(softplus));
  m.impl("softplus.out", TORCH_FN(softplus_out));
  m.impl("softplus_backward", TORCH_FN(softplus_backward));
  m.impl("softplus_backward.grad_input", TORCH_FN(softplus_backward_out));
  m.impl("softshrink", TORCH_FN(softshrink));
  m.impl("softshrink.out", TORCH_FN(softshrink_out));
  m.impl("softshrink_backward", TORCH_FN(shrink_backward));
  m.impl("softshrink_backward.grad_input", TORCH_FN(shrink_backward_out));
  m.impl("hardshrink", TORCH_FN(hardshrink));
  m.impl("hardshrink.out", TORCH_FN(hardshrink_out));
  m.impl("hardshrink_backward", TORCH_FN(shrink_backward));
  m.impl("hardshrink_backward.grad_input", TORCH_FN(shrink_backward_out));
  m.impl("log_sigmoid_forward", TORCH_FN(log_sigmoid_forward));
  m.impl("log_sigmoid_forward.output", TORCH_FN(log_sigmoid_forward_out));
  m.impl("log_sigmoid_backward", TORCH_FN(log_sigmoid_backward));
  m.impl("log_sigmoid_backward.grad_input", TORCH_FN(log_sigmoid_backward_out));
  m.impl("threshold", TORCH_FN(threshold));
  m.impl("threshold_", TORCH_FN(threshold_));
  m.impl("threshold.out", TORCH_FN(threshold_out));
  m.impl("threshold_backward", TORCH_FN(threshold_backward));
  m.impl("threshold_backward.grad_input", TORCH_FN(threshold_backward_out));
  m.impl("rrelu_with_noise", TORCH_FN(rrelu_with_noise));
  m.impl("rrelu_with_noise_", TORCH_FN(rrelu_with_noise_));
  m.impl("rrelu_with_noise.out", TORCH_FN(rrelu_with_noise_out));
}

}  // namespace tvk::aten
