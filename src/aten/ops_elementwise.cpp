// Native element-wise ops. Each op is a row below: its kernel name in
// shaders/elementwise_ops.toml, how its TensorIterator is built (which decides broadcasting,
// type promotion and the output dtype exactly as on CPU/CUDA), and which dtypes it rejects.
// The functional, in-place and out= overloads of every row are registered by one helper.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

enum class Build { Unary, UnaryFloat, Binary, BinaryFloat, Comparison };

at::TensorIterator build_iterator(Build build, at::TensorBase& out, const at::TensorBase& a,
                                  const at::TensorBase* b) {
  switch (build) {
    case Build::Unary: return at::TensorIterator::unary_op(out, a);
    case Build::UnaryFloat: return at::TensorIterator::unary_float_op(out, a);
    case Build::Binary: return at::TensorIterator::binary_op(out, a, *b);
    case Build::BinaryFloat: return at::TensorIterator::binary_float_op(out, a, *b);
    case Build::Comparison: return at::TensorIterator::comparison_op(out, a, *b);
  }
  TORCH_INTERNAL_ASSERT(false);
}

// Dtype restrictions that CPU enforces with its own messages.
void check_dtypes(const char* kernel, const at::Tensor& a, const at::Tensor* b) {
  const bool a_bool = a.scalar_type() == at::kBool;
  const std::string_view name(kernel);
  if (name == "neg") {
    TORCH_CHECK(!a_bool,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead.");
  } else if (name == "abs") {
    if (a_bool) raise_not_implemented_for("abs_vk", at::kBool);
  } else if (name == "relu") {
    TORCH_CHECK(!a_bool, "Boolean inputs not supported for relu");
  } else if (name == "sub") {
    at::native::sub_check(a, *b);
  }
}

// One element-wise op: kernel name + iterator builder; `scalars` carries alpha etc.
struct ElementwiseRow {
  const char* kernel;
  Build build;

  at::Tensor& run(at::Tensor& out, const at::Tensor& a, const at::Tensor* b,
                  const kernels::Scalars& scalars = {}) const {
    check_dtypes(kernel, a, b);
    auto iter = build_iterator(build, out, a, b);
    launch_elementwise(iter, kernel, compute_kind_for(iter.common_dtype()), scalars);
    if (!out.defined()) out = iter.output();
    return out;
  }
};

#define TVK_ROW(var, kernel, build) constexpr ElementwiseRow var{kernel, Build::build};
TVK_ROW(kAdd, "add", Binary)
TVK_ROW(kSub, "sub", Binary)
TVK_ROW(kMul, "mul", Binary)
TVK_ROW(kDiv, "div", BinaryFloat)
TVK_ROW(kMaximum, "maximum", Binary)
TVK_ROW(kMinimum, "minimum", Binary)
TVK_ROW(kEq, "eq", Comparison)
TVK_ROW(kNe, "ne", Comparison)
TVK_ROW(kLt, "lt", Comparison)
TVK_ROW(kLe, "le", Comparison)
TVK_ROW(kGt, "gt", Comparison)
TVK_ROW(kGe, "ge", Comparison)
TVK_ROW(kNeg, "neg", Unary)
TVK_ROW(kAbs, "abs", Unary)
TVK_ROW(kRelu, "relu", Unary)
TVK_ROW(kExp, "exp", UnaryFloat)
TVK_ROW(kLog, "log", UnaryFloat)
TVK_ROW(kSqrt, "sqrt", UnaryFloat)
TVK_ROW(kSigmoid, "sigmoid", UnaryFloat)
TVK_ROW(kTanh, "tanh", UnaryFloat)
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
  static at::Tensor functional_scalar(const at::Tensor& self, const at::Scalar& other) {
    return functional(self, at::native::wrapped_scalar_tensor(other));
  }
  static at::Tensor& inplace_scalar(at::Tensor& self, const at::Scalar& other) {
    return inplace(self, at::native::wrapped_scalar_tensor(other));
  }
  static at::Tensor& out_scalar(const at::Tensor& self, const at::Scalar& other, at::Tensor& out) {
    const at::Tensor wrapped = at::native::wrapped_scalar_tensor(other);
    return R.run(out, self, &wrapped);
  }
};

// add / sub: out = a (+|-) alpha * b.
template <const ElementwiseRow& R>
struct BinaryAlpha {
  static at::Tensor& run(at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                         const at::Scalar& alpha) {
    check_dtypes(R.kernel, self, &other);
    auto iter = at::TensorIterator::binary_op(out, self, other);
    at::native::alpha_check(iter.dtype(), alpha);
    launch_elementwise(iter, R.kernel, compute_kind_for(iter.common_dtype()), make_scalars(alpha));
    if (!out.defined()) out = iter.output();
    return out;
  }
  static at::Tensor functional(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
    at::Tensor out;
    return run(out, self, other, alpha);
  }
  static at::Tensor& inplace(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
    return run(self, self, other, alpha);
  }
  static at::Tensor& out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha,
                         at::Tensor& out) {
    return run(out, self, other, alpha);
  }
};

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
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .allow_cpu_scalars(true)
                  .add_output(out)
                  .add_const_input(condition)
                  .add_const_input(self)
                  .add_const_input(other)
                  .declare_static_dtype(result_type)
                  .build();
  launch_elementwise(iter, "where", compute_kind_for(result_type));
  if (!out.defined()) out = iter.output();
  return out;
}

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  at::Tensor out;
  return where_out(condition, self, other, out);
}

}  // namespace

#define TVK_REGISTER_UNARY(m, name, row)                          \
  m.impl(name, TORCH_FN(Unary<row>::functional));                 \
  m.impl(name "_", TORCH_FN(Unary<row>::inplace));                \
  m.impl(name ".out", TORCH_FN(Unary<row>::out));

#define TVK_REGISTER_BINARY(m, name, row)                         \
  m.impl(name ".Tensor", TORCH_FN(Binary<row>::functional));      \
  m.impl(name "_.Tensor", TORCH_FN(Binary<row>::inplace));        \
  m.impl(name ".out", TORCH_FN(Binary<row>::out));

#define TVK_REGISTER_COMPARISON(m, name, row)                          \
  m.impl(name ".Tensor", TORCH_FN(Binary<row>::functional));           \
  m.impl(name "_.Tensor", TORCH_FN(Binary<row>::inplace));             \
  m.impl(name ".Tensor_out", TORCH_FN(Binary<row>::out));              \
  m.impl(name ".Scalar", TORCH_FN(Binary<row>::functional_scalar));    \
  m.impl(name "_.Scalar", TORCH_FN(Binary<row>::inplace_scalar));      \
  m.impl(name ".Scalar_out", TORCH_FN(Binary<row>::out_scalar));

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("add.Tensor", TORCH_FN(BinaryAlpha<kAdd>::functional));
  m.impl("add_.Tensor", TORCH_FN(BinaryAlpha<kAdd>::inplace));
  m.impl("add.out", TORCH_FN(BinaryAlpha<kAdd>::out));
  m.impl("sub.Tensor", TORCH_FN(BinaryAlpha<kSub>::functional));
  m.impl("sub_.Tensor", TORCH_FN(BinaryAlpha<kSub>::inplace));
  m.impl("sub.out", TORCH_FN(BinaryAlpha<kSub>::out));
  TVK_REGISTER_BINARY(m, "mul", kMul)
  TVK_REGISTER_BINARY(m, "div", kDiv)
  m.impl("maximum", TORCH_FN(Binary<kMaximum>::functional));
  m.impl("maximum.out", TORCH_FN(Binary<kMaximum>::out));
  m.impl("minimum", TORCH_FN(Binary<kMinimum>::functional));
  m.impl("minimum.out", TORCH_FN(Binary<kMinimum>::out));
  TVK_REGISTER_COMPARISON(m, "eq", kEq)
  TVK_REGISTER_COMPARISON(m, "ne", kNe)
  TVK_REGISTER_COMPARISON(m, "lt", kLt)
  TVK_REGISTER_COMPARISON(m, "le", kLe)
  TVK_REGISTER_COMPARISON(m, "gt", kGt)
  TVK_REGISTER_COMPARISON(m, "ge", kGe)
  TVK_REGISTER_UNARY(m, "neg", kNeg)
  TVK_REGISTER_UNARY(m, "abs", kAbs)
  m.impl("relu", TORCH_FN(Unary<kRelu>::functional));
  m.impl("relu_", TORCH_FN(Unary<kRelu>::inplace));
  TVK_REGISTER_UNARY(m, "exp", kExp)
  TVK_REGISTER_UNARY(m, "log", kLog)
  TVK_REGISTER_UNARY(m, "sqrt", kSqrt)
  TVK_REGISTER_UNARY(m, "sigmoid", kSigmoid)
  TVK_REGISTER_UNARY(m, "tanh", kTanh)
  m.impl("where.self", TORCH_FN(where));
  m.impl("where.self_out", TORCH_FN(where_out));
}

}  // namespace tvk::aten
