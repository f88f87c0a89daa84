// Native reductions: sum and mean over all or some dims (keepdim, dtype=, out=).
#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <vector>

#include "aten/launch.h"
#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;

// Dims of one index space, fastest first, with the element strides of two operands.
struct Dims {
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, 2>> strides;

  // Appends a dim, merging it into the previous one when the strides chain in both operands
  // and dropping it when its size is 1: fewer dims means cheaper index math.
  void push(int64_t size, int64_t stride0, int64_t stride1) {
    if (size == 1) return;
    if (!sizes.empty()) {
      auto& last = strides.back();
      if (stride0 == last[0] * sizes.back() && stride1 == last[1] * sizes.back()) {
        sizes.back() *= size;
        return;
      }
    }
    sizes.push_back(size);
    strides.push_back({stride0, stride1});
  }

  void store(kernels::Geometry& g, const char* name) const {
    TORCH_CHECK(sizes.size() <= static_cast<size_t>(kernels::kMaxDims), "torch-vk: ", name,
                " over a tensor with more than ", kernels::kMaxDims,
                " non-collapsible dimensions is not supported");
    g.ndim = static_cast<int32_t>(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) {
      g.sizes[d] = sizes[d];
      g.strides[0][d] = strides[d][0];
      g.strides[1][d] = strides[d][1];
    }
  }
};

std::vector<int64_t> reduced_shape(const at::Tensor& self, const std::bitset<64>& mask, bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask[d]) shape.push_back(self.size(d));
    else if (keepdim) shape.push_back(1);
  }
  return shape;
}

ComputeKind accumulate_kind(at::ScalarType out_dtype) {
  if (out_dtype == at::kDouble) return ComputeKind::Float64;
  if (at::isFloatingType(out_dtype)) return ComputeKind::Float32;
  return ComputeKind::Int64;
}

// Records out = scale * sum(self over mask). `out` already has the reduced shape.
void launch_sum(const at::Tensor& self, const std::bitset<64>& mask, bool keepdim,
                const at::Tensor& out, double scale, const char* name) {
  if (out.numel() == 0) return;
  Dims kept, reduced;
  int64_t reduced_numel = 1;
  // Output dims map to input dims in order; without keepdim the reduced dims are absent.
  int64_t out_dim = out.dim() - 1;
  for (int64_t d = self.dim() - 1; d >= 0; --d) {
    if (mask[d]) {
      reduced_numel *= self.size(d);
      reduced.push(self.size(d), 0, self.stride(d));
      if (keepdim) --out_dim;
      continue;
    }
    kept.push(self.size(d), out.stride(out_dim), self.stride(d));
    --out_dim;
  }
  kernels::ReduceGeometry geometry;
  kept.store(geometry.out, name);
  reduced.store(geometry.reduced, name);
  const kernels::Operand out_op = operand(out, name);
  const kernels::Operand in_op = operand(self, name);
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] {
    kernels::reduce(stream, kernels::ReduceOp::Sum, accumulate_kind(out.scalar_type()),
                    out.numel(), reduced_numel, geometry, out_op, in_op, scale);
  });
}

at::ScalarType sum_dtype(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong : self.scalar_type();
}

at::ScalarType mean_dtype(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  const at::ScalarType type = dtype ? *dtype : self.scalar_type();
  TORCH_CHECK(at::isFloatingType(type) || at::isComplexType(type),
              "mean(): could not infer output dtype. ",
              (dtype ? "Optional" : "Input"), " dtype must be either a floating point or complex dtype. ",
              "Got: ", type);
  return type;
}

std::bitset<64> dim_mask(const at::Tensor& self, at::OptionalIntArrayRef dims) {
  std::bitset<64> mask;
  if (!dims || dims->empty()) {
    mask.set();
    return mask;
  }
  return at::dim_list_to_bitset(*dims, self.dim());
}

// Shared by sum and mean: validates `out` (or allocates it) and launches.
at::Tensor& reduce_into(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                        at::ScalarType out_dtype, at::Tensor& out, bool mean, const char* name) {
  vk_dtype(self.scalar_type(), name);
  const auto mask = dim_mask(self, dims);
  const auto shape = reduced_shape(self, mask, keepdim);
  if (out.defined()) {
    TORCH_CHECK(out.device() == self.device(), "Expected out tensor to be on device ", self.device(),
                " but got ", out.device());
    at::native::resize_output(out, shape);
  } else {
    out = at::empty(shape, self.options().dtype(out_dtype));
  }
  int64_t reduced = 1;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (mask[d]) reduced *= self.size(d);
  const double scale = mean ? 1.0 / static_cast<double>(reduced) : 1.0;
  const c10::DeviceGuard guard(self.device());
  launch_sum(self, mask, keepdim, out, scale, name);
  return out;
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  at::Tensor out;
  return reduce_into(self, dim, keepdim, sum_dtype(self, dtype), out, false, "sum");
}

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (dtype) {
    TORCH_CHECK(out.scalar_type() == *dtype, "Expected out tensor to have dtype ", *dtype,
                ", but got ", out.scalar_type(), " instead");
  }
  return reduce_into(self, dim, keepdim, out.scalar_type(), out, false, "sum");
}

at::Tensor sum_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  return sum_dim(self, std::nullopt, false, dtype);
}

at::Tensor mean_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  at::Tensor out;
  return reduce_into(self, dim, keepdim, mean_dtype(self, dtype), out, true, "mean");
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  mean_dtype(self, dtype ? dtype : std::optional<at::ScalarType>(out.scalar_type()));
  if (dtype) {
    TORCH_CHECK(out.scalar_type() == *dtype, "Expected out tensor to have dtype ", *dtype,
                ", but got ", out.scalar_type(), " instead");
  }
  return reduce_into(self, dim, keepdim, out.scalar_type(), out, true, "mean");
}

at::Tensor mean_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  return mean_dim(self, std::nullopt, false, dtype);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum", TORCH_FN(sum_all));
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("sum.IntList_out", TORCH_FN(sum_out));
  m.impl("mean", TORCH_FN(mean_all));
  m.impl("mean.dim", TORCH_FN(mean_dim));
  m.impl("mean.out", TORCH_FN(mean_out));
}

}  // namespace tvk::aten
