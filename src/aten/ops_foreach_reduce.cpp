// Multi-tensor reductions: _foreach_norm (what clip_grad_norm_ calls), _foreach_powsum and
// _foreach_max, each one 0-dim result per tensor from two dispatches (kernels::foreach_reduce:
// per-chunk partials, then a per-tensor combine in a fixed order) instead of one or two
// reductions per tensor.
//
// The fast route is CUDA's (can_use_fast_route over the list) for floating dtypes, with every
// order p of the norm (CUDA's kernel takes 1, 2 and inf only; the others are the same
// reduction with another element transform). Everything else (integer or mixed lists, non-dense
// layouts, an unsupported dtype argument, the max or an inf / negative-order norm of an empty
// tensor, which has no identity and raises) goes to PyTorch's per-tensor composites, which
// reach the native per-tensor reductions and raise PyTorch's errors.
#include <ATen/ATen.h>
#include <ATen/native/ForeachUtils.h>
#include <ATen/ops/_foreach_max_native.h>
#include <ATen/ops/_foreach_norm_native.h>
#include <ATen/ops/_foreach_powsum_native.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "aten/vk_common.h"
#include "kernels/foreach_reduce.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

using at::TensorList;
using c10::Scalar;
using kernels::ComputeKind;
using kernels::ReduceOp;
using kernels::ReducePost;
using kernels::ReducePre;

bool is_floating(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16 || t == at::kDouble;
}

bool fast_route(TensorList self) {
  if (self.empty()) return false;
  const at::Tensor& t0 = self[0];
  if (t0.device().type() != c10::DeviceType::PrivateUse1 || !is_floating(t0.scalar_type()))
    return false;
  return at::native::can_use_fast_route({self});
}

bool any_empty(TensorList self) {
  for (const at::Tensor& t : self)
    if (t.numel() == 0) return true;
  return false;
}

// The dtype argument of norm / powsum as linalg.vector_norm accepts it (floating, no narrowing
// of the input); anything else is left to the slow route, which raises.
std::optional<at::ScalarType> result_dtype(TensorList self, std::optional<at::ScalarType> dtype) {
  const at::ScalarType in = self[0].scalar_type();
  if (!dtype) return in;
  if (!is_floating(*dtype) || at::promoteTypes(in, *dtype) != *dtype) return std::nullopt;
  return *dtype;
}

// One 0-dim result per tensor: out[j] = post(op over self[j] of pre(x)).
std::vector<at::Tensor> launch(TensorList self, at::ScalarType out_dtype, ReduceOp op,
                               ReducePre pre, ReducePost post, double p) {
  const at::ScalarType in_dtype = self[0].scalar_type();
  const ComputeKind acc = in_dtype == at::kDouble || out_dtype == at::kDouble
                              ? ComputeKind::Float64
                              : ComputeKind::Float32;
  std::vector<at::Tensor> out;
  out.reserve(self.size());
  std::vector<kernels::ForeachReduceEntry> entries(self.size());
  const auto options = self[0].options().dtype(out_dtype);
  for (size_t j = 0; j < self.size(); ++j) {
    out.push_back(at::empty({}, options));
    entries[j].input = reinterpret_cast<uint64_t>(self[j].const_data_ptr());
    entries[j].output = reinterpret_cast<uint64_t>(out[j].data_ptr());
    entries[j].numel = self[j].numel();
  }
  const char* name = "_foreach_reduce";
  const kernels::DType in_vk = vk_dtype(in_dtype, name);
  const kernels::DType out_vk = vk_dtype(out_dtype, name);
  tvk::Stream& stream = current_stream(self[0].device().index());
  translate_errors([&] {
    kernels::foreach_reduce(stream, op, acc, entries.data(), static_cast<int>(entries.size()),
                            in_vk, out_vk, pre, post, p);
  });
  return out;
}

// The reduction of sum_x |x|^p for an order p: (op, pre); `root` tells whether the norm takes
// the p-th root afterwards (sqrt for 2).
struct Order {
  ReduceOp op;
  ReducePre pre;
  ReducePost root;
};
Order order_of(double p) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (p == inf) return {ReduceOp::Max, ReducePre::Abs, ReducePost::None};
  if (p == -inf) return {ReduceOp::Min, ReducePre::Abs, ReducePost::None};
  if (p == 0) return {ReduceOp::Sum, ReducePre::NonZero, ReducePost::None};
  if (p == 1) return {ReduceOp::Sum, ReducePre::Abs, ReducePost::None};
  if (p == 2) return {ReduceOp::Sum, ReducePre::Square, ReducePost::Sqrt};
  return {ReduceOp::Sum, ReducePre::AbsPow, ReducePost::Root};
}

std::vector<at::Tensor> foreach_norm(TensorList self, const Scalar& ord,
                                     std::optional<at::ScalarType> dtype) {
  at::native::check_foreach_api_restrictions(self);
  if (!fast_route(self) || ord.isComplex())
    return at::native::foreach_tensor_norm_slow(self, ord, dtype);
  const double p = ord.to<double>();
  const auto out_dtype = result_dtype(self, dtype);
  if (!out_dtype || std::isnan(p) || ((std::isinf(p) || p < 0) && any_empty(self)))
    return at::native::foreach_tensor_norm_slow(self, ord, dtype);
  const Order o = order_of(p);
  return launch(self, *out_dtype, o.op, o.pre, o.root, p);
}

// sum |x|^p per tensor (the norm without its root); inf orders as the slow route defines them.
std::vector<at::Tensor> foreach_powsum(TensorList self, const Scalar& ord,
                                       std::optional<at::ScalarType> dtype) {
  at::native::check_foreach_api_restrictions(self);
  if (!fast_route(self) || ord.isComplex())
    return at::native::foreach_tensor_powsum_slow(self, ord, dtype);
  const double p = ord.to<double>();
  const auto out_dtype = result_dtype(self, dtype);
  if (!out_dtype || !std::isfinite(p))
    return at::native::foreach_tensor_powsum_slow(self, ord, dtype);
  // powsum's order 0 is sum |x|^0 = numel (zeros included), unlike the norm's count of non-zeros
  const Order o = p == 0 ? Order{ReduceOp::Sum, ReducePre::AbsPow, ReducePost::None} : order_of(p);
  return launch(self, *out_dtype, o.op, o.pre, ReducePost::None, p);
}

std::vector<at::Tensor> foreach_max(TensorList self) {
  at::native::check_foreach_api_restrictions(self);
  if (!fast_route(self) || any_empty(self)) return at::native::foreach_tensor_max_slow(self);
  return launch(self, self[0].scalar_type(), ReduceOp::Max, ReducePre::None, ReducePost::None,
                1.0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_foreach_norm.Scalar", TORCH_FN(foreach_norm));
  m.impl("_foreach_powsum.Scalar", TORCH_FN(foreach_powsum));
  m.impl("_foreach_max", TORCH_FN(foreach_max));
}

}  // namespace tvk::aten
