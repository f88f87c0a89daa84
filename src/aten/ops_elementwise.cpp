// Native element-wise ops. Each op is a row below: its kernel name in
// shaders/elementwise_ops.toml, how its TensorIterator is built (which decides broadcasting,
// type promotion and the output dtype exactly as on CPU/CUDA), and which dtypes it rejects
// (with the CPU's error). The functional, in-place and out= overloads of every row are
// registered by one helper. Activations and their backward ops are in ops_activation.cpp.
//
// Overloads that PyTorch implements as composites (CompositeImplicitAutograd, or
// CompositeExplicitAutograd ones that only wrap a scalar and redispatch, like fmod.Scalar or
// bitwise_and.Scalar) are not registered: they reach the rows below by themselves.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>
#include <optional>
#include <string_view>

#include "aten/complex_storage.h"
#include "aten/launch.h"
#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

using c10::Scalar;
using kernels::Scalars;

enum class Build { Unary, UnaryFloat, UnaryBool, UnaryAnyOut, Binary, BinaryFloat, Comparison };

at::TensorIterator build_iterator(Build build, at::TensorBase& out, const at::TensorBase& a,
                                  const at::TensorBase* b) {
  switch (build) {
    case Build::Unary: return at::TensorIterator::unary_op(out, a);
    case Build::UnaryFloat: return at::TensorIterator::unary_float_op(out, a);
    case Build::UnaryBool:  // build_unary_force_boolean_op (isnan, signbit, ...)
      return at::TensorIteratorConfig()
          .check_all_same_dtype(false)
          .declare_static_dtype(at::kBool)
          .declare_static_device(a.device())
          .add_output(out)
          .add_const_input(a)
          .build();
    case Build::UnaryAnyOut:  // logical_not: the input keeps its dtype, any output dtype
      return at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(a).build();
    case Build::Binary: return at::TensorIterator::binary_op(out, a, *b);
    case Build::BinaryFloat: return at::TensorIterator::binary_float_op(out, a, *b);
    case Build::Comparison: return at::TensorIterator::comparison_op(out, a, *b);
  }
  TORCH_INTERNAL_ASSERT(false);
}

// Dtypes the CPU kernel accepts (AT_DISPATCH); others raise NotImplementedError.
enum class Dtypes { All, NoBool, Floating, Integral, IntegralNoBool };

bool accepts(Dtypes d, at::ScalarType t) {
  switch (d) {
    case Dtypes::All: return true;
    case Dtypes::NoBool: return t != at::kBool;
    case Dtypes::Floating: return at::isFloatingType(t);
    case Dtypes::Integral: return at::isIntegralType(t, /*includeBool=*/true);
    case Dtypes::IntegralNoBool: return at::isIntegralType(t, /*includeBool=*/false);
  }
  return false;
}

// Dtype restrictions that CPU enforces with its own messages before its kernel runs.
void check_dtypes(const char* kernel, const at::Tensor& a, const at::Tensor* b) {
  const bool a_bool = a.scalar_type() == at::kBool;
  const std::string_view name(kernel);
  if (name == "neg") {
    TORCH_CHECK(!a_bool,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead.");
  } else if (name == "relu") {
    TORCH_CHECK(!a_bool, "Boolean inputs not supported for relu");
  } else if (name == "sub") {
    at::native::sub_check(a, *b);
  } else if (name == "sign") {
    TORCH_CHECK(!a.is_complex(),
                "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                "torch.sgn instead.");
  }
}

// One element-wise op: kernel name + iterator builder + accepted dtypes; `scalars` carries
// alpha etc.
struct ElementwiseRow {
  const char* kernel;
  Build build;
  Dtypes dtypes = Dtypes::All;
  const char* cpu_name = nullptr;  // the CPU kernel's name in its "not implemented" error
  // mul / div: a scalar second operand keeps its fp32 value for float16 / bfloat16
  // (ElementwiseCasts::opmath_scalar_operand2).
  bool opmath_scalar_operand2 = false;

  at::Tensor& run(at::Tensor& out, const at::Tensor& a, const at::Tensor* b,
                  const Scalars& scalars = {}) const {
    // Complex operands: the composites over real views (aten/complex_storage.h) for the ops
    // they cover; any other op goes on to check_dtypes, which rejects complex.
    if ((a.is_complex() || (b && b->is_complex()) || (out.defined() && out.is_complex())) &&
        complex_elementwise(kernel, out, a, b))
      return out;
    check_dtypes(kernel, a, b);
    // The CPU's out= checks of the truth-valued unary ops (isposinf, isneginf, signbit).
    TORCH_CHECK(build != Build::UnaryBool || !out.defined() || out.scalar_type() == at::kBool,
                kernel, " does not support non-boolean outputs.");
    auto iter = build_iterator(build, out, a, b);
    const at::ScalarType dtype =
        build == Build::UnaryBool || build == Build::UnaryAnyOut ? iter.input_dtype(0) : iter.common_dtype();
    if (!accepts(dtypes, dtype)) raise_not_implemented_for(cpu_name ? cpu_name : kernel, dtype);
    launch_elementwise(iter, kernel, dtype, scalars, {.opmath_scalar_operand2 = opmath_scalar_operand2});
    if (!out.defined()) out = iter.output();
    return out;
  }
};

#define TVK_ROW(var, ...) constexpr ElementwiseRow var{__VA_ARGS__};
// arithmetic
TVK_ROW(kAdd, "add", Build::Binary)
TVK_ROW(kSub, "sub", Build::Binary)
TVK_ROW(kMul, "mul", Build::Binary, Dtypes::All, nullptr, true)
TVK_ROW(kDiv, "div", Build::BinaryFloat, Dtypes::All, nullptr, true)
TVK_ROW(kDivTrunc, "div_trunc", Build::Binary, Dtypes::NoBool, "div_trunc_cpu", true)
TVK_ROW(kDivFloor, "div_floor", Build::Binary, Dtypes::NoBool, "div_floor_cpu", true)
TVK_ROW(kFmod, "fmod", Build::Binary, Dtypes::NoBool, "fmod_cpu")
TVK_ROW(kRemainder, "remainder", Build::Binary, Dtypes::NoBool, "remainder_cpu")
TVK_ROW(kPow, "pow", Build::Binary, Dtypes::NoBool, "pow")
TVK_ROW(kCopysign, "copysign", Build::BinaryFloat)
TVK_ROW(kAtan2, "atan2", Build::BinaryFloat)
TVK_ROW(kHypot, "hypot", Build::Binary, Dtypes::Floating, "hypot_cpu")
TVK_ROW(kMaximum, "maximum", Build::Binary)
TVK_ROW(kMinimum, "minimum", Build::Binary)
TVK_ROW(kNeg, "neg", Build::Unary)
TVK_ROW(kAbs, "abs", Build::Unary, Dtypes::NoBool, "abs_cpu")
TVK_ROW(kSign, "sign", Build::Unary)
TVK_ROW(kReciprocal, "reciprocal", Build::UnaryFloat)
TVK_ROW(kRsqrt, "rsqrt", Build::UnaryFloat)
// comparison and logic
TVK_ROW(kEq, "eq", Build::Comparison)
TVK_ROW(kNe, "ne", Build::Comparison)
TVK_ROW(kLt, "lt", Build::Comparison)
TVK_ROW(kLe, "le", Build::Comparison)
TVK_ROW(kGt, "gt", Build::Comparison)
TVK_ROW(kGe, "ge", Build::Comparison)
TVK_ROW(kLogicalNot, "logical_not", Build::UnaryAnyOut)
TVK_ROW(kLogicalAnd, "logical_and", Build::Comparison)
TVK_ROW(kLogicalOr, "logical_or", Build::Comparison)
TVK_ROW(kLogicalXor, "logical_xor", Build::Comparison)
TVK_ROW(kBitwiseAnd, "bitwise_and", Build::Binary, Dtypes::Integral, "bitwise_and_cpu")
TVK_ROW(kBitwiseOr, "bitwise_or", Build::Binary, Dtypes::Integral, "bitwise_or_cpu")
TVK_ROW(kBitwiseXor, "bitwise_xor", Build::Binary, Dtypes::Integral, "bitwise_xor_cpu")
TVK_ROW(kBitwiseNot, "bitwise_not", Build::Unary, Dtypes::Integral, "bitwise_not_cpu")
TVK_ROW(kShiftLeft, "bitwise_left_shift", Build::Binary, Dtypes::IntegralNoBool, "lshift_cpu")
TVK_ROW(kShiftRight, "bitwise_right_shift", Build::Binary, Dtypes::IntegralNoBool, "rshift_cpu")
TVK_ROW(kIsnan, "isnan", Build::UnaryBool)
TVK_ROW(kIsinf, "isinf", Build::UnaryBool)
TVK_ROW(kIsposinf, "isposinf", Build::UnaryBool)
TVK_ROW(kIsneginf, "isneginf", Build::UnaryBool)
TVK_ROW(kSignbit, "signbit", Build::UnaryBool)
// rounding (identity on integers, like the CPU's copy)
TVK_ROW(kFloor, "floor", Build::Unary, Dtypes::NoBool, "floor_vml_cpu")
TVK_ROW(kCeil, "ceil", Build::Unary, Dtypes::NoBool, "ceil_vml_cpu")
TVK_ROW(kTrunc, "trunc", Build::Unary, Dtypes::NoBool, "trunc_vml_cpu")
TVK_ROW(kRound, "round", Build::Unary, Dtypes::NoBool, "round_vml_cpu")
TVK_ROW(kFrac, "frac", Build::Unary, Dtypes::Floating, "frac_cpu")
// math (integer inputs promote to the default float dtype)
TVK_ROW(kExp, "exp", Build::UnaryFloat)
TVK_ROW(kExp2, "exp2", Build::UnaryFloat)
TVK_ROW(kExpm1, "expm1", Build::UnaryFloat)
TVK_ROW(kLog, "log", Build::UnaryFloat)
TVK_ROW(kLog2, "log2", Build::UnaryFloat)
TVK_ROW(kLog10, "log10", Build::UnaryFloat)
TVK_ROW(kLog1p, "log1p", Build::UnaryFloat)
TVK_ROW(kSqrt, "sqrt", Build::UnaryFloat)
TVK_ROW(kSin, "sin", Build::UnaryFloat)
TVK_ROW(kCos, "cos", Build::UnaryFloat)
TVK_ROW(kTan, "tan", Build::UnaryFloat)
TVK_ROW(kAsin, "asin", Build::UnaryFloat)
TVK_ROW(kAcos, "acos", Build::UnaryFloat)
TVK_ROW(kAtan, "atan", Build::UnaryFloat)
TVK_ROW(kSinh, "sinh", Build::UnaryFloat)
TVK_ROW(kCosh, "cosh", Build::UnaryFloat)
TVK_ROW(kTanh, "tanh", Build::UnaryFloat)
TVK_ROW(kAsinh, "asinh", Build::UnaryFloat)
TVK_ROW(kAcosh, "acosh", Build::UnaryFloat)
TVK_ROW(kAtanh, "atanh", Build::UnaryFloat)
TVK_ROW(kErf, "erf", Build::UnaryFloat)
TVK_ROW(kErfc, "erfc", Build::UnaryFloat)
TVK_ROW(kErfinv, "erfinv", Build::UnaryFloat)
TVK_ROW(kLgamma, "lgamma", Build::UnaryFloat)
TVK_ROW(kDigamma, "digamma", Build::UnaryFloat)
TVK_ROW(kSigmoid, "sigmoid", Build::UnaryFloat)
TVK_ROW(kRelu, "relu", Build::Unary)
#undef TVK_ROW

// ---- overload adapters: (functional, in-place, out=) for each row shape ----
template <const ElementwiseRow& R>
struct Unary {
  static at::Tensor functional(const at::Tensor& self) {
    at::Tensor out;
    return R.run(out, self, nullptr);
  }
  static at::Tensor& inplace(at::Tensor& self) { return R.run(self, self, nullptr); }
  static at::Tensor& out(const at::Tensor& self, at::Tensor& out) { return R.run(out, self, nullptr); }
};

template <const ElementwiseRow& R>
struct Binary {
  static at::Tensor functional(const at::Tensor& self, const at::Tensor& other) {
    at::Tensor out;
    return R.run(out, self, &other);
  }
  static at::Tensor& inplace(at::Tensor& self, const at::Tensor& other) {
    return R.run(self, self, &other);
  }
  static at::Tensor& out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    return R.run(out, self, &other);
  }
  // Scalar-operand overloads (eq.Scalar, ...): the scalar becomes a wrapped CPU number.
  static at::Tensor functional_scalar(const at::Tensor& self, const Scalar& other) {
    return functional(self, at::native::wrapped_scalar_tensor(other));
  }
  static at::Tensor& inplace_scalar(at::Tensor& self, const Scalar& other) {
    return inplace(self, at::native::wrapped_scalar_tensor(other));
  }
  static at::Tensor& out_scalar(const at::Tensor& self, const Scalar& other, at::Tensor& out) {
    const at::Tensor wrapped = at::native::wrapped_scalar_tensor(other);
    return R.run(out, self, &wrapped);
  }
  // Scalar-self overloads (remainder.Scalar_Tensor).
  static at::Tensor scalar_self(const Scalar& self, const at::Tensor& other) {
    at::Tensor out;
    const at::Tensor wrapped = at::native::wrapped_scalar_tensor(self);
    return R.run(out, wrapped, &other);
  }
};

// add / sub: out = a (+|-) alpha * b.
template <const ElementwiseRow& R>
struct BinaryAlpha {
  static at::Tensor& run(at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                         const Scalar& alpha) {
    if (any_complex(out, self, other)) return complex_add(out, self, other, alpha, &R == &kSub);
    check_dtypes(R.kernel, self, &other);
    auto iter = at::TensorIterator::binary_op(out, self, other);
    at::native::alpha_check(iter.dtype(), alpha);
    launch_elementwise(iter, R.kernel, iter.common_dtype(), make_scalars(alpha));
    if (!out.defined()) out = iter.output();
    return out;
  }
  static at::Tensor functional(const at::Tensor& self, const at::Tensor& other, const Scalar& alpha) {
    at::Tensor out;
    return run(out, self, other, alpha);
  }
  static at::Tensor& inplace(at::Tensor& self, const at::Tensor& other, const Scalar& alpha) {
    return run(self, self, other, alpha);
  }
  static at::Tensor& out(const at::Tensor& self, const at::Tensor& other, const Scalar& alpha,
                         at::Tensor& out) {
    return run(out, self, other, alpha);
  }
};

// ---- div with rounding_mode ----
const ElementwiseRow& div_row(std::optional<std::string_view> mode) {
  if (!mode.has_value()) return kDiv;
  if (*mode == "trunc") return kDivTrunc;
  if (*mode == "floor") return kDivFloor;
  TORCH_CHECK(false, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
              *mode, "'");
}
at::Tensor div_mode(const at::Tensor& self, const at::Tensor& other, std::optional<std::string_view> mode) {
  at::Tensor out;
  return div_row(mode).run(out, self, &other);
}
at::Tensor& div_mode_(at::Tensor& self, const at::Tensor& other, std::optional<std::string_view> mode) {
  return div_row(mode).run(self, self, &other);
}
at::Tensor& div_mode_out(const at::Tensor& self, const at::Tensor& other,
                         std::optional<std::string_view> mode, at::Tensor& out) {
  return div_row(mode).run(out, self, &other);
}

// ---- pow ----
at::Tensor& pow_tensor_scalar_out(const at::Tensor& base, const Scalar& exp, at::Tensor& out) {
  TORCH_CHECK(!(at::isIntegralType(base.scalar_type(), true) && exp.isIntegral(true) && exp.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  // Complex results (complex base or exponent): complex.comp with the CPU's fast paths.
  if ((base.is_complex() || exp.isComplex() || (out.defined() && out.is_complex())) &&
      complex_pow_tensor_scalar(out, base, exp))
    return out;
  // pow(x, 0) = 1 and pow(x, 1) = x exactly in the kernel (also for bool, where the CPU fills
  // or copies instead of dispatching its pow kernel).
  const at::Tensor wrapped = at::native::wrapped_scalar_tensor(exp);
  auto iter = at::TensorIterator::binary_op(out, base, wrapped);
  const at::ScalarType dtype = iter.common_dtype();
  const bool trivial = exp.equal(0.0) || exp.equal(false) || exp.equal(1.0) || exp.equal(true);
  if (!trivial) {
    if (dtype == at::kBool) raise_not_implemented_for("pow", dtype);
    // The CPU kernel: float32 / float64 / bfloat16 run sqrt, rsqrt and reciprocal for the
    // exponents 0.5, -0.5 and -1 (so pow(-inf, 0.5) is NaN and pow(-0.0, -0.5) is -inf, unlike
    // std::pow); float16, bfloat16 and integer dtypes read the exponent as a value of the
    // dtype, with the checked conversion that raises on overflow (pow(int8, 200)).
    if (dtype == at::kFloat || dtype == at::kDouble || dtype == at::kBFloat16) {
      const char* fast = exp.equal(0.5) ? "sqrt" : exp.equal(-0.5) ? "rsqrt" : exp.equal(-1.0) ? "reciprocal" : nullptr;
      if (fast) {
        iter.remove_operand(2);
        launch_elementwise(iter, fast, dtype);
        if (!out.defined()) out = iter.output();
        return out;
      }
    }
    if (dtype != at::kFloat && dtype != at::kDouble) (void)scalar_to_dtype(exp, dtype);
  }
  launch_elementwise(iter, "pow", dtype);
  if (!out.defined()) out = iter.output();
  return out;
}
at::Tensor pow_tensor_scalar(const at::Tensor& base, const Scalar& exp) {
  at::Tensor out;
  return pow_tensor_scalar_out(base, exp, out);
}
at::Tensor& pow_tensor_scalar_(at::Tensor& base, const Scalar& exp) {
  return pow_tensor_scalar_out(base, exp, base);
}
at::Tensor& pow_scalar_out(const Scalar& base, const at::Tensor& exp, at::Tensor& out) {
  if ((base.isComplex() || exp.is_complex() || (out.defined() && out.is_complex())) &&
      complex_pow_scalar_tensor(out, base, exp))
    return out;
  const at::Tensor wrapped = at::native::wrapped_scalar_tensor(base);
  auto iter = at::TensorIterator::binary_op(out, wrapped, exp);
  // base == 1 fills ones on the CPU (for every dtype); the kernel gives 1 as well.
  if (!base.equal(1)) {
    const at::ScalarType dtype = iter.common_dtype();
    if (!accepts(Dtypes::NoBool, dtype)) raise_not_implemented_for("pow", dtype);
  }
  launch_elementwise(iter, "pow", iter.common_dtype());
  if (!out.defined()) out = iter.output();
  return out;
}
at::Tensor pow_scalar(const Scalar& base, const at::Tensor& exp) {
  at::Tensor out;
  return pow_scalar_out(base, exp, out);
}

// ---- round(decimals) ----
at::Tensor& round_decimals_out(const at::Tensor& self, int64_t decimals, at::Tensor& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  // decimals == 0 runs the CPU's round kernel directly (no integer copy path): floating only.
  if (!at::isFloatingType(iter.common_dtype()))
    raise_not_implemented_for(decimals == 0 ? "round_vml_cpu" : "round_cpu", iter.common_dtype());
  if (decimals == 0) {
    launch_elementwise(iter, "round", iter.common_dtype());
    if (!out.defined()) out = iter.output();
    return out;
  }
  // torch's kernel: ten_pow_decimals = 10^|decimals| in the op math type.
  const double ten_pow = std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals));
  launch_elementwise(iter, "round_decimals", iter.common_dtype(),
                     make_scalars(ten_pow, decimals < 0 ? 1 : 0));
  if (!out.defined()) out = iter.output();
  return out;
}
at::Tensor round_decimals(const at::Tensor& self, int64_t decimals) {
  at::Tensor out;
  return round_decimals_out(self, decimals, out);
}
at::Tensor& round_decimals_(at::Tensor& self, int64_t decimals) {
  return round_decimals_out(self, decimals, self);
}

// ---- addcmul / addcdiv: out = self + value * t1 (*|/) t2 ----
template <bool kDivide>
at::Tensor& addc_out(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                     const Scalar& value, at::Tensor& out) {
  if (kDivide && at::isIntegralType(t1.scalar_type(), true) && at::isIntegralType(t2.scalar_type(), true)) {
    TORCH_CHECK(false,
                "Integer division with addcdiv is no longer supported, and in a future  ",
                "release addcdiv will perform a true division of tensor1 and tensor2. ",
                "The historic addcdiv behavior can be implemented as ",
                "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) ",
                "for integer inputs and as ",
                "(input + value * tensor1 / tensor2) for float inputs. ",
                "The future addcdiv behavior is just the latter implementation: ",
                "(input + value * tensor1 / tensor2), for all dtypes.");
  }
  auto iter = at::TensorIteratorConfig()
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .add_output(out)
                  .add_const_input(self)
                  .add_const_input(t1)
                  .add_const_input(t2)
                  .build();
  const at::ScalarType dtype = iter.common_dtype();
  if (dtype == at::kBool) raise_not_implemented_for(kDivide ? "addcdiv_cpu_out" : "addcmul_cpu_out", dtype);
  launch_elementwise(iter, kDivide ? "addcdiv" : "addcmul", dtype, make_scalars(value));
  if (!out.defined()) out = iter.output();
  return out;
}
template <bool kDivide>
at::Tensor addc(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const Scalar& value) {
  at::Tensor out;
  return addc_out<kDivide>(self, t1, t2, value, out);
}
template <bool kDivide>
at::Tensor& addc_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const Scalar& value) {
  return addc_out<kDivide>(self, t1, t2, value, self);
}

// ---- lerp ----
at::Tensor& lerp_impl(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight,
                      bool weight_is_scalar, at::Tensor& out) {
  TORCH_CHECK(self.dtype() == end.dtype(), "expected dtype ", self.dtype(), " for `end` but got dtype ",
              end.dtype());
  if (!weight_is_scalar) {
    TORCH_CHECK(self.dtype() == weight.dtype(), "expected dtype ", self.dtype(),
                " for `weight` but got dtype ", weight.dtype());
  } else if (!at::isFloatingType(self.scalar_type())) {
    // the CPU's iterator does not see the scalar weight: integer inputs stay integer
    raise_not_implemented_for("lerp_kernel_scalar", self.scalar_type());
  }
  auto iter = at::TensorIteratorConfig()
                  .add_output(out)
                  .add_const_input(self)
                  .add_const_input(end)
                  .add_const_input(weight)
                  .allow_cpu_scalars(true)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .build();
  const at::ScalarType dtype = iter.common_dtype();
  if (!at::isFloatingType(dtype))
    raise_not_implemented_for(weight_is_scalar ? "lerp_kernel_scalar" : "lerp_kernel_tensor", dtype);
  // A scalar weight is read in opmath (weight.to<opmath_t>()), not as a value of the dtype.
  launch_elementwise(iter, "lerp", dtype, {}, {.keep_inputs = weight_is_scalar ? 1u << 3 : 0u});
  if (!out.defined()) out = iter.output();
  return out;
}
at::Tensor lerp_scalar(const at::Tensor& self, const at::Tensor& end, const Scalar& weight) {
  at::Tensor out;
  return lerp_impl(self, end, scalar_operand(weight), true, out);
}
at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const Scalar& weight) {
  return lerp_impl(self, end, scalar_operand(weight), true, self);
}
at::Tensor& lerp_scalar_out(const at::Tensor& self, const at::Tensor& end, const Scalar& weight, at::Tensor& out) {
  return lerp_impl(self, end, scalar_operand(weight), true, out);
}
at::Tensor lerp_tensor(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  at::Tensor out;
  return lerp_impl(self, end, weight, false, out);
}
at::Tensor& lerp_tensor_(at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  return lerp_impl(self, end, weight, false, self);
}
at::Tensor& lerp_tensor_out(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight,
                            at::Tensor& out) {
  return lerp_impl(self, end, weight, false, out);
}

// ---- clamp ----
// Scalar bounds (torch's meta function: integer tensors promote with the bounds, in-place
// may not change the dtype; NaN bounds give NaN, as the kernels' NaN-propagating min/max do).
at::Tensor& clamp_scalar_out(const at::Tensor& self, const std::optional<Scalar>& min,
                             const std::optional<Scalar>& max, at::Tensor& out) {
  TORCH_CHECK(min.has_value() || max.has_value(),
              "torch.clamp: At least one of 'min' or 'max' must not be None");
  at::ScalarType result_type = self.scalar_type();
  TORCH_CHECK(!at::isComplexType(result_type), "clamp is not supported for complex types");
  if (!at::isFloatingType(result_type)) {
    at::native::ResultTypeState state = {};
    state = at::native::update_result_type_state(self, state);
    if (min) state = at::native::update_result_type_state(*min, state);
    if (max) state = at::native::update_result_type_state(*max, state);
    result_type = at::native::result_type(state);
    TORCH_CHECK(result_type == self.scalar_type() || !out.defined() || !out.is_same(self), "result type ",
                result_type, " can't be cast to the desired output type ", self.dtype());
  }
  TORCH_CHECK(!at::isComplexType(result_type), "clamp is not supported for complex types");
  const at::Tensor input = self.to(result_type);
  auto iter = at::TensorIterator::unary_op(out, input);
  const at::ScalarType dtype = iter.common_dtype();
  if (dtype == at::kBool)
    raise_not_implemented_for(min && max ? "clamp_scalar_cpu" : (min ? "clamp_min_scalar_cpu" : "clamp_max_scalar_cpu"), dtype);
  // The CPU kernels compare with the bounds converted to the dtype (min.to<scalar_t>()).
  auto bound = [&](const Scalar& s) {
    return (s.isFloatingPoint() && std::isnan(s.toDouble())) ? s : scalar_to_dtype(s, dtype);
  };
  const char* kernel = min && max ? "clamp" : (min ? "clamp_min" : "clamp_max");
  const Scalars scalars = min && max ? make_scalars(bound(*min), bound(*max)) : make_scalars(bound(min ? *min : *max));
  launch_elementwise(iter, kernel, dtype, scalars);
  if (!out.defined()) out = iter.output();
  return out;
}
at::Tensor clamp_scalar(const at::Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  at::Tensor out;
  return clamp_scalar_out(self, min, max, out);
}
at::Tensor& clamp_scalar_(at::Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp_scalar_out(self, min, max, self);
}
at::Tensor clamp_min_scalar(const at::Tensor& self, const Scalar& min) { return clamp_scalar(self, min, std::nullopt); }
at::Tensor& clamp_min_scalar_(at::Tensor& self, const Scalar& min) { return clamp_scalar_(self, min, std::nullopt); }
at::Tensor& clamp_min_scalar_out(const at::Tensor& self, const Scalar& min, at::Tensor& out) {
  return clamp_scalar_out(self, min, std::nullopt, out);
}
at::Tensor clamp_max_scalar(const at::Tensor& self, const Scalar& max) { return clamp_scalar(self, std::nullopt, max); }
at::Tensor& clamp_max_scalar_(at::Tensor& self, const Scalar& max) { return clamp_scalar_(self, std::nullopt, max); }
at::Tensor& clamp_max_scalar_out(const at::Tensor& self, const Scalar& max, at::Tensor& out) {
  return clamp_scalar_out(self, std::nullopt, max, out);
}

// Tensor bounds: all three promote to a common dtype; one bound is maximum / minimum.
at::Tensor& clamp_tensor_out(const at::Tensor& self, const std::optional<at::Tensor>& min,
                             const std::optional<at::Tensor>& max, at::Tensor& out) {
  const bool has_min = min.has_value() && min->defined(), has_max = max.has_value() && max->defined();
  TORCH_CHECK(has_min || has_max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  TORCH_CHECK(!at::isComplexType(self.scalar_type()), "clamp is not supported for complex types");
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(true)
      .add_output(out)
      .add_const_input(self)
      .promote_inputs_to_common_dtype(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true);
  if (has_min) config.add_const_input(*min);
  if (has_max) config.add_const_input(*max);
  auto iter = config.build();
  const at::ScalarType dtype = iter.common_dtype();
  if (has_min && has_max && dtype == at::kBool) raise_not_implemented_for("clamp_cpu", dtype);
  const char* kernel = has_min && has_max ? "clamp_tensor" : (has_min ? "maximum" : "minimum");
  launch_elementwise(iter, kernel, dtype);
  if (!out.defined()) out = iter.output();
  return out;
}
at::Tensor clamp_tensor(const at::Tensor& self, const std::optional<at::Tensor>& min,
                        const std::optional<at::Tensor>& max) {
  at::Tensor out;
  return clamp_tensor_out(self, min, max, out);
}
at::Tensor& clamp_tensor_(at::Tensor& self, const std::optional<at::Tensor>& min,
                          const std::optional<at::Tensor>& max) {
  return clamp_tensor_out(self, min, max, self);
}

// ---- nan_to_num ----
at::Tensor& nan_to_num_out(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                           std::optional<double> neginf, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "nan_to_num: dtype of out: ", out.scalar_type(),
              " should be same as input: ", self.scalar_type());
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
    return out;
  }
  // The replacements are converted to the dtype (unchecked), as the CPU kernel does.
  const at::ScalarType dtype = self.scalar_type();
  double nan_r = 0, pos_r = 0, neg_r = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "nan_to_num", [&] {
    nan_r = static_cast<double>(static_cast<scalar_t>(nan.value_or(0.0)));
    pos_r = posinf ? static_cast<double>(static_cast<scalar_t>(*posinf))
                   : static_cast<double>(std::numeric_limits<scalar_t>::max());
    neg_r = neginf ? static_cast<double>(static_cast<scalar_t>(*neginf))
                   : static_cast<double>(std::numeric_limits<scalar_t>::lowest());
  });
  const at::Tensor neginf_operand = scalar_operand(neg_r);
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .allow_cpu_scalars(true)
                  .declare_static_dtype(dtype)
                  .add_output(out)
                  .add_const_input(self)
                  .add_const_input(neginf_operand)
                  .build();
  launch_elementwise(iter, "nan_to_num", dtype, make_scalars(nan_r, pos_r));
  return out;
}

// ---- isnan / isinf / isposinf / isneginf / signbit ----
at::Tensor isnan(const at::Tensor& self) { return Unary<kIsnan>::functional(self); }
at::Tensor isinf(const at::Tensor& self) { return Unary<kIsinf>::functional(self); }

// where(condition, self, other): the result dtype promotes self and other; the condition
// must be bool (uint8 is accepted with a deprecation warning on CPU; we accept it silently).
at::Tensor& where_out(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other,
                      at::Tensor& out) {
  TORCH_CHECK(condition.scalar_type() == at::kBool || condition.scalar_type() == at::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              condition.scalar_type());
  const auto result_type = at::result_type(self, other);
  if (out.defined()) {
    TORCH_CHECK(out.scalar_type() == result_type, "Expected out type to be ", result_type,
                " but got ", out.scalar_type());
  }
  if (at::isComplexType(result_type)) return complex_where(condition, self, other, out);
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .allow_cpu_scalars(true)
                  .add_output(out)
                  .add_const_input(condition)
                  .add_const_input(self)
                  .add_const_input(other)
                  .declare_static_dtype(result_type)
                  .build();
  launch_elementwise(iter, "where", result_type, {}, {.keep_inputs = 1u << 1});  // the condition
  if (!out.defined()) out = iter.output();
  return out;
}

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  at::Tensor out;
  return where_out(condition, self, other, out);
}

}  // namespace

// sgn: the sign row for real dtypes, the complex kernel (z / |z|) for complex ones.
at::Tensor sgn_functional(const at::Tensor& self) {
  at::Tensor out;
  if (self.is_complex() && complex_elementwise("sgn", out, self, nullptr)) return out;
  return Unary<kSign>::functional(self);
}
at::Tensor& sgn_inplace(at::Tensor& self) {
  if (self.is_complex() && complex_elementwise("sgn", self, self, nullptr)) return self;
  return Unary<kSign>::inplace(self);
}
at::Tensor& sgn_out(const at::Tensor& self, at::Tensor& out) {
  if (self.is_complex() && complex_elementwise("sgn", out, self, nullptr)) return out;
  return Unary<kSign>::out(self, out);
}

#define TVK_REGISTER_UNARY(m, name, row)                          \
  m.impl(name, TORCH_FN(Unary<row>::functional));                 \
  m.impl(name "_", TORCH_FN(Unary<row>::inplace));                \
  m.impl(name ".out", TORCH_FN(Unary<row>::out));

#define TVK_REGISTER_BINARY(m, name, row)                         \
  m.impl(name ".Tensor", TORCH_FN(Binary<row>::functional));      \
  m.impl(name "_.Tensor", TORCH_FN(Binary<row>::inplace));        \
  m.impl(name ".out", TORCH_FN(Binary<row>::out));

// Ops whose out= overload is named .Tensor_out (fmod, remainder, bitwise_*, shifts).
#define TVK_REGISTER_BINARY_TENSOR_OUT(m, name, row)              \
  m.impl(name ".Tensor", TORCH_FN(Binary<row>::functional));      \
  m.impl(name "_.Tensor", TORCH_FN(Binary<row>::inplace));        \
  m.impl(name ".Tensor_out", TORCH_FN(Binary<row>::out));

#define TVK_REGISTER_COMPARISON(m, name, row)                          \
  m.impl(name ".Tensor", TORCH_FN(Binary<row>::functional));           \
  m.impl(name "_.Tensor", TORCH_FN(Binary<row>::inplace));             \
  m.impl(name ".Tensor_out", TORCH_FN(Binary<row>::out));              \
  m.impl(name ".Scalar", TORCH_FN(Binary<row>::functional_scalar));    \
  m.impl(name "_.Scalar", TORCH_FN(Binary<row>::inplace_scalar));      \
  m.impl(name ".Scalar_out", TORCH_FN(Binary<row>::out_scalar));

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // arithmetic
  m.impl("add.Tensor", TORCH_FN(BinaryAlpha<kAdd>::functional));
  m.impl("add_.Tensor", TORCH_FN(BinaryAlpha<kAdd>::inplace));
  m.impl("add.out", TORCH_FN(BinaryAlpha<kAdd>::out));
  m.impl("sub.Tensor", TORCH_FN(BinaryAlpha<kSub>::functional));
  m.impl("sub_.Tensor", TORCH_FN(BinaryAlpha<kSub>::inplace));
  m.impl("sub.out", TORCH_FN(BinaryAlpha<kSub>::out));
  TVK_REGISTER_BINARY(m, "mul", kMul)
  TVK_REGISTER_BINARY(m, "div", kDiv)
  m.impl("div.Tensor_mode", TORCH_FN(div_mode));
  m.impl("div_.Tensor_mode", TORCH_FN(div_mode_));
  m.impl("div.out_mode", TORCH_FN(div_mode_out));
  m.impl("floor_divide", TORCH_FN(Binary<kDivFloor>::functional));
  m.impl("floor_divide_.Tensor", TORCH_FN(Binary<kDivFloor>::inplace));
  m.impl("floor_divide.out", TORCH_FN(Binary<kDivFloor>::out));
  TVK_REGISTER_BINARY_TENSOR_OUT(m, "fmod", kFmod)
  TVK_REGISTER_BINARY_TENSOR_OUT(m, "remainder", kRemainder)
  m.impl("remainder.Scalar_Tensor", TORCH_FN(Binary<kRemainder>::scalar_self));
  m.impl("pow.Tensor_Tensor", TORCH_FN(Binary<kPow>::functional));
  m.impl("pow_.Tensor", TORCH_FN(Binary<kPow>::inplace));
  m.impl("pow.Tensor_Tensor_out", TORCH_FN(Binary<kPow>::out));
  m.impl("pow.Tensor_Scalar", TORCH_FN(pow_tensor_scalar));
  m.impl("pow_.Scalar", TORCH_FN(pow_tensor_scalar_));
  m.impl("pow.Tensor_Scalar_out", TORCH_FN(pow_tensor_scalar_out));
  m.impl("pow.Scalar", TORCH_FN(pow_scalar));
  m.impl("pow.Scalar_out", TORCH_FN(pow_scalar_out));
  m.impl("copysign.Tensor", TORCH_FN(Binary<kCopysign>::functional));
  m.impl("copysign_.Tensor", TORCH_FN(Binary<kCopysign>::inplace));
  m.impl("copysign.out", TORCH_FN(Binary<kCopysign>::out));
  m.impl("atan2", TORCH_FN(Binary<kAtan2>::functional));
  m.impl("atan2_", TORCH_FN(Binary<kAtan2>::inplace));
  m.impl("atan2.out", TORCH_FN(Binary<kAtan2>::out));
  m.impl("hypot", TORCH_FN(Binary<kHypot>::functional));
  m.impl("hypot_", TORCH_FN(Binary<kHypot>::inplace));
  m.impl("hypot.out", TORCH_FN(Binary<kHypot>::out));
  m.impl("maximum", TORCH_FN(Binary<kMaximum>::functional));
  m.impl("maximum.out", TORCH_FN(Binary<kMaximum>::out));
  m.impl("minimum", TORCH_FN(Binary<kMinimum>::functional));
  m.impl("minimum.out", TORCH_FN(Binary<kMinimum>::out));
  m.impl("addcmul", TORCH_FN(addc<false>));
  m.impl("addcmul_", TORCH_FN(addc_<false>));
  m.impl("addcmul.out", TORCH_FN(addc_out<false>));
  m.impl("addcdiv", TORCH_FN(addc<true>));
  m.impl("addcdiv_", TORCH_FN(addc_<true>));
  m.impl("addcdiv.out", TORCH_FN(addc_out<true>));
  m.impl("lerp.Scalar", TORCH_FN(lerp_scalar));
  m.impl("lerp_.Scalar", TORCH_FN(lerp_scalar_));
  m.impl("lerp.Scalar_out", TORCH_FN(lerp_scalar_out));
  m.impl("lerp.Tensor", TORCH_FN(lerp_tensor));
  m.impl("lerp_.Tensor", TORCH_FN(lerp_tensor_));
  m.impl("lerp.Tensor_out", TORCH_FN(lerp_tensor_out));
  TVK_REGISTER_UNARY(m, "neg", kNeg)
  TVK_REGISTER_UNARY(m, "abs", kAbs)
  TVK_REGISTER_UNARY(m, "sign", kSign)
  // real dtypes: sgn is sign; complex: z / |z| (complex.comp through complex_elementwise)
  m.impl("sgn", TORCH_FN(sgn_functional));
  m.impl("sgn_", TORCH_FN(sgn_inplace));
  m.impl("sgn.out", TORCH_FN(sgn_out));
  TVK_REGISTER_UNARY(m, "reciprocal", kReciprocal)
  TVK_REGISTER_UNARY(m, "rsqrt", kRsqrt)
  // rounding
  TVK_REGISTER_UNARY(m, "floor", kFloor)
  TVK_REGISTER_UNARY(m, "ceil", kCeil)
  TVK_REGISTER_UNARY(m, "trunc", kTrunc)
  TVK_REGISTER_UNARY(m, "round", kRound)
  TVK_REGISTER_UNARY(m, "frac", kFrac)
  m.impl("round.decimals", TORCH_FN(round_decimals));
  m.impl("round_.decimals", TORCH_FN(round_decimals_));
  m.impl("round.decimals_out", TORCH_FN(round_decimals_out));
  // math
  TVK_REGISTER_UNARY(m, "exp", kExp)
  TVK_REGISTER_UNARY(m, "exp2", kExp2)
  TVK_REGISTER_UNARY(m, "expm1", kExpm1)
  TVK_REGISTER_UNARY(m, "log", kLog)
  TVK_REGISTER_UNARY(m, "log2", kLog2)
  TVK_REGISTER_UNARY(m, "log10", kLog10)
  TVK_REGISTER_UNARY(m, "log1p", kLog1p)
  TVK_REGISTER_UNARY(m, "sqrt", kSqrt)
  TVK_REGISTER_UNARY(m, "sin", kSin)
  TVK_REGISTER_UNARY(m, "cos", kCos)
  TVK_REGISTER_UNARY(m, "tan", kTan)
  TVK_REGISTER_UNARY(m, "asin", kAsin)
  TVK_REGISTER_UNARY(m, "acos", kAcos)
  TVK_REGISTER_UNARY(m, "atan", kAtan)
  TVK_REGISTER_UNARY(m, "sinh", kSinh)
  TVK_REGISTER_UNARY(m, "cosh", kCosh)
  TVK_REGISTER_UNARY(m, "tanh", kTanh)
  TVK_REGISTER_UNARY(m, "asinh", kAsinh)
  TVK_REGISTER_UNARY(m, "acosh", kAcosh)
  TVK_REGISTER_UNARY(m, "atanh", kAtanh)
  TVK_REGISTER_UNARY(m, "erf", kErf)
  TVK_REGISTER_UNARY(m, "erfc", kErfc)
  TVK_REGISTER_UNARY(m, "erfinv", kErfinv)
  TVK_REGISTER_UNARY(m, "lgamma", kLgamma)
  TVK_REGISTER_UNARY(m, "digamma", kDigamma)
  TVK_REGISTER_UNARY(m, "sigmoid", kSigmoid)
  m.impl("relu", TORCH_FN(Unary<kRelu>::functional));
  m.impl("relu_", TORCH_FN(Unary<kRelu>::inplace));
  // clamp
  m.impl("clamp", TORCH_FN(clamp_scalar));
  m.impl("clamp_", TORCH_FN(clamp_scalar_));
  m.impl("clamp.out", TORCH_FN(clamp_scalar_out));
  m.impl("clamp.Tensor", TORCH_FN(clamp_tensor));
  m.impl("clamp_.Tensor", TORCH_FN(clamp_tensor_));
  m.impl("clamp.Tensor_out", TORCH_FN(clamp_tensor_out));
  m.impl("clamp_min", TORCH_FN(clamp_min_scalar));
  m.impl("clamp_min_", TORCH_FN(clamp_min_scalar_));
  m.impl("clamp_min.out", TORCH_FN(clamp_min_scalar_out));
  m.impl("clamp_max", TORCH_FN(clamp_max_scalar));
  m.impl("clamp_max_", TORCH_FN(clamp_max_scalar_));
  m.impl("clamp_max.out", TORCH_FN(clamp_max_scalar_out));
  m.impl("clamp_min.Tensor", TORCH_FN(Binary<kMaximum>::functional));
  m.impl("clamp_min_.Tensor", TORCH_FN(Binary<kMaximum>::inplace));
  m.impl("clamp_min.Tensor_out", TORCH_FN(Binary<kMaximum>::out));
  m.impl("clamp_max.Tensor", TORCH_FN(Binary<kMinimum>::functional));
  m.impl("clamp_max_.Tensor", TORCH_FN(Binary<kMinimum>::inplace));
  m.impl("clamp_max.Tensor_out", TORCH_FN(Binary<kMinimum>::out));
  m.impl("nan_to_num.out", TORCH_FN(nan_to_num_out));
  // comparison, logic, bits
  TVK_REGISTER_COMPARISON(m, "eq", kEq)
  TVK_REGISTER_COMPARISON(m, "ne", kNe)
  TVK_REGISTER_COMPARISON(m, "lt", kLt)
  TVK_REGISTER_COMPARISON(m, "le", kLe)
  TVK_REGISTER_COMPARISON(m, "gt", kGt)
  TVK_REGISTER_COMPARISON(m, "ge", kGe)
  m.impl("logical_not.out", TORCH_FN(Unary<kLogicalNot>::out));
  m.impl("logical_and.out", TORCH_FN(Binary<kLogicalAnd>::out));
  m.impl("logical_or.out", TORCH_FN(Binary<kLogicalOr>::out));
  m.impl("logical_xor.out", TORCH_FN(Binary<kLogicalXor>::out));
  TVK_REGISTER_BINARY_TENSOR_OUT(m, "bitwise_and", kBitwiseAnd)
  TVK_REGISTER_BINARY_TENSOR_OUT(m, "bitwise_or", kBitwiseOr)
  TVK_REGISTER_BINARY_TENSOR_OUT(m, "bitwise_xor", kBitwiseXor)
  TVK_REGISTER_UNARY(m, "bitwise_not", kBitwiseNot)
  TVK_REGISTER_BINARY_TENSOR_OUT(m, "bitwise_left_shift", kShiftLeft)
  TVK_REGISTER_BINARY_TENSOR_OUT(m, "bitwise_right_shift", kShiftRight)
  m.impl("__lshift__.Tensor", TORCH_FN(Binary<kShiftLeft>::functional));
  m.impl("__lshift__.Scalar", TORCH_FN(Binary<kShiftLeft>::functional_scalar));
  m.impl("__ilshift__.Tensor", TORCH_FN(Binary<kShiftLeft>::inplace));
  m.impl("__ilshift__.Scalar", TORCH_FN(Binary<kShiftLeft>::inplace_scalar));
  m.impl("__rshift__.Tensor", TORCH_FN(Binary<kShiftRight>::functional));
  m.impl("__rshift__.Scalar", TORCH_FN(Binary<kShiftRight>::functional_scalar));
  m.impl("__irshift__.Tensor", TORCH_FN(Binary<kShiftRight>::inplace));
  m.impl("__irshift__.Scalar", TORCH_FN(Binary<kShiftRight>::inplace_scalar));
  // classification
  m.impl("isnan", TORCH_FN(isnan));
  m.impl("isinf", TORCH_FN(isinf));
  m.impl("isposinf", TORCH_FN(Unary<kIsposinf>::functional));
  m.impl("isposinf.out", TORCH_FN(Unary<kIsposinf>::out));
  m.impl("isneginf", TORCH_FN(Unary<kIsneginf>::functional));
  m.impl("isneginf.out", TORCH_FN(Unary<kIsneginf>::out));
  m.impl("signbit", TORCH_FN(Unary<kSignbit>::functional));
  m.impl("signbit.out", TORCH_FN(Unary<kSignbit>::out));
  // selection
  m.impl("where.self", TORCH_FN(where));
  m.impl("where.self_out", TORCH_FN(where_out));
}

}  // namespace tvk::aten
