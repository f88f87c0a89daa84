// Native reductions: sum, mean, prod, amax / amin, max / min (full and with indices), argmax /
// argmin, all / any, count_nonzero, var / std (+ _mean), norm / linalg_vector_norm.
//
// Ops that PyTorch implements as structured kernels run PyTorch's own meta function (shapes,
// dtypes, dim checks and error messages as on the CPU; see ops_reduce.h), then one L2 call.
#include "aten/ops_reduce.h"

#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/ops/all_meta.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/any_meta.h>
#include <ATen/ops/argmax_meta.h>
#include <ATen/ops/argmin_meta.h>
#include <ATen/ops/linalg_vector_norm_meta.h>
#include <ATen/ops/max_meta.h>
#include <ATen/ops/min_meta.h>
#include <ATen/ops/norm_meta.h>
#include <ATen/ops/prod_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "aten/launch.h"
#include "aten/complex_storage.h"
#include "aten/vk_common.h"

namespace tvk::aten {

using kernels::ComputeKind;
using kernels::ReduceOp;
using kernels::ReducePost;
using kernels::ReducePre;

namespace {

// Dims of one index space, fastest first, with the element strides of up to three operands
// (output, input, index output).
struct Dims {
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, 3>> strides;

  // Appends a dim, merging it into the previous one when the strides chain in every operand
  // and dropping it when its size is 1: fewer dims means cheaper index math.
  void push(int64_t size, int64_t s0, int64_t s1, int64_t s2) {
    if (size == 1) return;
    if (!sizes.empty()) {
      const auto& last = strides.back();
      const int64_t n = sizes.back();
      if (s0 == last[0] * n && s1 == last[1] * n && s2 == last[2] * n) {
        sizes.back() *= size;
        return;
      }
    }
    sizes.push_back(size);
    strides.push_back({s0, s1, s2});
  }

  // Stores stride array k of the dims into g.strides[slot[k]].
  void store(kernels::Geometry& g, std::array<int, 3> slot, const char* name) const {
    TORCH_CHECK(sizes.size() <= static_cast<size_t>(kernels::kMaxDims), "torch-vk: ", name,
                " over a tensor with more than ", kernels::kMaxDims,
                " non-collapsible dimensions is not supported");
    g.ndim = static_cast<int32_t>(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) {
      g.sizes[d] = sizes[d];
      for (int k = 0; k < 3; ++k)
        if (slot[k] >= 0) g.strides[slot[k]][d] = strides[d][k];
    }
  }
};

// Kernel geometry for reducing `self` over `mask` into `out` (and `indices`, when defined),
// both of the reduced shape.
kernels::ReduceGeometry reduce_geometry(const at::Tensor& self, const DimMask& mask, bool keepdim,
                                        const at::Tensor& out, const at::Tensor& indices,
                                        int64_t& reduced_numel, const char* name) {
  Dims kept, reduced;
  reduced_numel = 1;
  // Output dims map to input dims in order; without keepdim the reduced dims are absent.
  int64_t out_dim = out.dim() - 1;
  for (int64_t d = self.dim() - 1; d >= 0; --d) {
    if (mask[d]) {
      reduced_numel *= self.size(d);
      reduced.push(self.size(d), 0, self.stride(d), 0);
      if (keepdim) --out_dim;
      continue;
    }
    kept.push(self.size(d), out.defined() ? out.stride(out_dim) : 0, self.stride(d),
              indices.defined() ? indices.stride(out_dim) : 0);
    --out_dim;
  }
  kernels::ReduceGeometry geometry;
  kept.store(geometry.out, {0, 1, 2}, name);
  reduced.store(geometry.reduced, {-1, 1, -1}, name);
  return geometry;
}

DimMask mask_of(const at::Tensor& self, at::OptionalIntArrayRef dims) {
  return at::native::make_dim_mask(dims, self.dim());
}

DimMask mask_of_dim(const at::Tensor& self, int64_t dim) {
  DimMask mask;
  if (self.dim() > 0) mask.set(at::maybe_wrap_dim(dim, self.dim()));
  return mask;
}

// Values and indices of the first extreme element over `mask` (max.dim, argmax, ...).
void launch_arg_reduce(const at::Tensor& self, const DimMask& mask, bool keepdim,
                       const at::Tensor& values, const at::Tensor& indices, ReduceOp op,
                       const char* name) {
  if (indices.numel() == 0) return;
  vk_dtype(self.scalar_type(), name);
  int64_t reduced_numel = 0;
  const auto geometry = reduce_geometry(self, mask, keepdim, values.defined() ? values : indices,
                                        indices, reduced_numel, name);
  const kernels::Operand in_op = operand(self, name);
  const kernels::Operand idx_op = operand(indices, name);
  const kernels::Operand val_op =
      values.defined() ? operand(values, name) : kernels::Operand{0, in_op.dtype};
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  const ComputeKind acc = reduce_acc_kind(self.scalar_type(), self.scalar_type());
  translate_errors([&] {
    kernels::arg_reduce(stream, op, acc, indices.numel(), reduced_numel, geometry, val_op, idx_op,
                        in_op);
  });
}

void launch_plain(const at::Tensor& self, const DimMask& mask, bool keepdim, const at::Tensor& out,
                  ReduceOp op, const char* name, double scale = 1.0,
                  const kernels::ReduceExtra& extra = {}) {
  if (op == ReduceOp::Prod && out.is_complex()) return complex_prod(self, mask, keepdim, out);
  launch_reduce(self, mask, keepdim, out, op, reduce_acc_kind(self.scalar_type(), out.scalar_type()),
                scale, extra, name);
}

// ---------------------------------------------------------------- sum / mean (+ prod)

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

DimMask sum_mask(const at::Tensor& self, at::OptionalIntArrayRef dims) {
  DimMask mask;
  if (!dims || dims->empty()) {
    mask.set();
    return mask;
  }
  return at::dim_list_to_bitset(*dims, self.dim());
}

std::vector<int64_t> reduced_shape(const at::Tensor& self, const DimMask& mask, bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask[d]) shape.push_back(self.size(d));
    else if (keepdim) shape.push_back(1);
  }
  return shape;
}

// Shared by sum, mean and prod: validates `out` (or allocates it) and launches.
at::Tensor& reduce_into(const at::Tensor& self, const DimMask& mask, bool keepdim,
                        at::ScalarType out_dtype, at::Tensor& out, ReduceOp op, bool mean,
                        const char* name) {
  if (self.is_complex() && op == ReduceOp::Sum && c10::isComplexType(out_dtype)) {
    // sum / mean of a complex tensor: the same reduction over its real view, whose trailing
    // (re, im) dim is kept.
    DimMask real_mask = mask;
    real_mask.reset(self.dim());
    const at::Tensor src = at::view_as_real(self.resolve_conj().resolve_neg());
    check_storage_dtype(out_dtype, name);
    const auto shape = reduced_shape(self, mask, keepdim);
    if (out.defined()) at::native::resize_output(out, shape);
    else out = at::empty(shape, self.options().dtype(out_dtype));
    TORCH_CHECK(out.is_complex(), name, ": expected a complex out tensor, got ", out.scalar_type());
    at::Tensor out_real = raw_real_view(out);
    reduce_into(src, real_mask, keepdim, c10::toRealValueType(out_dtype), out_real, op, mean, name);
    return out;
  }
  if (!(op == ReduceOp::Prod && c10::isComplexType(out_dtype))) vk_dtype(self.scalar_type(), name);
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
  // Like the CPU's make_reduction_from_out_ty: the input is first converted to the output's
  // dtype (sum(x, dtype=torch.bool) sums truth values, sum(x, dtype=torch.int8) truncated
  // values); loads convert exactly where every input value is one of the output dtype's.
  if (!holds_values_of(self.scalar_type(), out.scalar_type()) && !out.is_complex()) {
    launch_plain(self.to(out.scalar_type()), mask, keepdim, out, op, name, scale);
    return out;
  }
  launch_plain(self, mask, keepdim, out, op, name, scale);
  return out;
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  at::Tensor out;
  return reduce_into(self, sum_mask(self, dim), keepdim, sum_dtype(self, dtype), out, ReduceOp::Sum,
                     false, "sum");
}

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (dtype) {
    TORCH_CHECK(out.scalar_type() == *dtype, "Expected out tensor to have dtype ", *dtype,
                ", but got ", out.scalar_type(), " instead");
  }
  return reduce_into(self, sum_mask(self, dim), keepdim, out.scalar_type(), out, ReduceOp::Sum,
                     false, "sum");
}

at::Tensor sum_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  return sum_dim(self, std::nullopt, false, dtype);
}

at::Tensor mean_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  at::Tensor out;
  return reduce_into(self, sum_mask(self, dim), keepdim, mean_dtype(self, dtype), out,
                     ReduceOp::Sum, true, "mean");
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype, at::Tensor& out) {
  mean_dtype(self, dtype ? dtype : std::optional<at::ScalarType>(out.scalar_type()));
  if (dtype) {
    TORCH_CHECK(out.scalar_type() == *dtype, "Expected out tensor to have dtype ", *dtype,
                ", but got ", out.scalar_type(), " instead");
  }
  return reduce_into(self, sum_mask(self, dim), keepdim, out.scalar_type(), out, ReduceOp::Sum,
                     true, "mean");
}

at::Tensor mean_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  return mean_dim(self, std::nullopt, false, dtype);
}

at::Tensor prod_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  at::Tensor out;
  DimMask all;
  all.set();
  return reduce_into(self, all, false, sum_dtype(self, dtype), out, ReduceOp::Prod, false, "prod");
}

at::Tensor& prod_int_out(const at::Tensor& self, int64_t dim, bool keepdim,
                         std::optional<at::ScalarType> dtype, at::Tensor& out) {
  Structured<at::meta::structured_prod_dim_int> s(out);
  s.meta(self, dim, keepdim, dtype);
  launch_plain(self, mask_of_dim(self, dim), keepdim, out, ReduceOp::Prod, "prod");
  return out;
}

at::Tensor prod_dim(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  Structured<at::meta::structured_prod_dim_int> s;
  s.meta(self, dim, keepdim, dtype);
  launch_plain(self, mask_of_dim(self, dim), keepdim, s.outs[0], ReduceOp::Prod, "prod");
  return s.outs[0];
}

// ---------------------------------------------------------------- amax / amin / max / min

template <class Meta>
at::Tensor& extreme_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out,
                        ReduceOp op, const char* name) {
  Structured<Meta> s(out);
  s.meta(self, dim, keepdim);
  launch_plain(self, mask_of(self, dim), keepdim, out, op, name);
  return out;
}

template <class Meta>
at::Tensor extreme(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, ReduceOp op,
                   const char* name) {
  Structured<Meta> s;
  s.meta(self, dim, keepdim);
  launch_plain(self, mask_of(self, dim), keepdim, s.outs[0], op, name);
  return s.outs[0];
}

at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return extreme<at::meta::structured_amax>(self, dim, keepdim, ReduceOp::Max, "amax");
}
at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  return extreme_out<at::meta::structured_amax>(self, dim, keepdim, out, ReduceOp::Max, "amax");
}
at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return extreme<at::meta::structured_amin>(self, dim, keepdim, ReduceOp::Min, "amin");
}
at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  return extreme_out<at::meta::structured_amin>(self, dim, keepdim, out, ReduceOp::Min, "amin");
}

// max() / min() over every element.
at::Tensor& extreme_all_out(const at::Tensor& self, at::Tensor& out, ReduceOp op, const char* name) {
  TORCH_CHECK(!self.is_complex(), name, "(): does not support complex input");
  TORCH_CHECK(self.numel() > 0, name,
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
              "reduction dim with the 'dim' argument.");
  if (!out.defined()) {
    out = at::empty({}, self.options());
  } else {
    TORCH_CHECK(self.device() == out.device(), "Expected out tensor to be on device ",
                self.device(), " but got ", out.device());
    TORCH_CHECK(at::canCast(self.scalar_type(), out.scalar_type()), "result type ",
                self.scalar_type(), " can't be cast to the desired output type ",
                out.scalar_type());
    at::native::resize_output(out, {});
  }
  DimMask all;
  all.set();
  launch_plain(self, all, false, out, op, name);
  return out;
}

at::Tensor max_all(const at::Tensor& self) {
  at::Tensor out;
  return extreme_all_out(self, out, ReduceOp::Max, "max");
}
at::Tensor& max_unary_out(const at::Tensor& self, at::Tensor& out) {
  return extreme_all_out(self, out, ReduceOp::Max, "max");
}
at::Tensor min_all(const at::Tensor& self) {
  at::Tensor out;
  return extreme_all_out(self, out, ReduceOp::Min, "min");
}
at::Tensor& min_unary_out(const at::Tensor& self, at::Tensor& out) {
  return extreme_all_out(self, out, ReduceOp::Min, "min");
}

// max.dim / min.dim: (values, indices).
template <class Meta>
void extreme_dim_impl(Structured<Meta, 2>& s, const at::Tensor& self, int64_t dim, bool keepdim,
                      ReduceOp op, const char* name) {
  auto pre = s.meta(self, dim, keepdim);
  launch_arg_reduce(self, mask_of_dim(self, pre.dim), keepdim, s.outs[0], s.outs[1], op, name);
}

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  Structured<at::meta::structured_max_dim, 2> s;
  extreme_dim_impl(s, self, dim, keepdim, ReduceOp::Max, "max");
  return {s.outs[0], s.outs[1]};
}
std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  Structured<at::meta::structured_max_dim, 2> s(values, indices);
  extreme_dim_impl(s, self, dim, keepdim, ReduceOp::Max, "max");
  return {values, indices};
}
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  Structured<at::meta::structured_min_dim, 2> s;
  extreme_dim_impl(s, self, dim, keepdim, ReduceOp::Min, "min");
  return {s.outs[0], s.outs[1]};
}
std::tuple<at::Tensor&, at::Tensor&> min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  Structured<at::meta::structured_min_dim, 2> s(values, indices);
  extreme_dim_impl(s, self, dim, keepdim, ReduceOp::Min, "min");
  return {values, indices};
}

// argmax / argmin: dim=None reduces the flattened tensor (a row-major flat index).
template <class Meta>
void arg_impl(Structured<Meta>& s, const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
              ReduceOp op, const char* name) {
  s.meta(self, dim, keepdim);
  DimMask mask;
  if (dim) mask = mask_of_dim(self, *dim);
  else mask.set();
  launch_arg_reduce(self, mask, keepdim && dim.has_value(), at::Tensor(), s.outs[0], op, name);
}

at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  Structured<at::meta::structured_argmax> s;
  arg_impl(s, self, dim, keepdim, ReduceOp::Max, "argmax");
  return s.outs[0];
}
at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  Structured<at::meta::structured_argmax> s(out);
  arg_impl(s, self, dim, keepdim, ReduceOp::Max, "argmax");
  return out;
}
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  Structured<at::meta::structured_argmin> s;
  arg_impl(s, self, dim, keepdim, ReduceOp::Min, "argmin");
  return s.outs[0];
}
at::Tensor& argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  Structured<at::meta::structured_argmin> s(out);
  arg_impl(s, self, dim, keepdim, ReduceOp::Min, "argmin");
  return out;
}

// ---------------------------------------------------------------- all / any / count_nonzero

// all = min over (x != 0), any = max over (x != 0), stored as (v > 0): the empty reduction
// gives true / false from the identities +inf / -inf.
void launch_all_any(const at::Tensor& self, const DimMask& mask, bool keepdim, const at::Tensor& out,
                    bool all, const char* name) {
  vk_dtype(self.scalar_type(), name);
  const at::ScalarType in = self.scalar_type();
  const ComputeKind acc = in == at::kDouble         ? ComputeKind::Float64
                          : at::isFloatingType(in) ? ComputeKind::Float32
                                                   : ComputeKind::Int64;
  launch_reduce(self, mask, keepdim, out, all ? ReduceOp::Min : ReduceOp::Max, acc, 1.0,
                {ReducePre::NonZero, ReducePost::Truth}, name);
}

// all.dims / any.dims: an empty dim list reduces nothing (None reduces everything).
DimMask all_any_mask(const at::Tensor& self, at::OptionalIntArrayRef dims) {
  return at::native::make_dim_mask(dims, self.dim(), /*allow_empty_dims=*/true);
}

template <class Meta, bool kAll>
at::Tensor all_any_full(const at::Tensor& self) {
  Structured<Meta> s;
  s.meta(self);
  DimMask mask;
  mask.set();
  launch_all_any(self, mask, false, s.outs[0], kAll, kAll ? "all" : "any");
  return s.outs[0];
}
template <class Meta, bool kAll>
at::Tensor& all_any_full_out(const at::Tensor& self, at::Tensor& out) {
  Structured<Meta> s(out);
  s.meta(self);
  DimMask mask;
  mask.set();
  launch_all_any(self, mask, false, out, kAll, kAll ? "all" : "any");
  return out;
}
template <class Meta, bool kAll>
at::Tensor all_any_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  Structured<Meta> s;
  s.meta(self, dim, keepdim);
  launch_all_any(self, mask_of_dim(self, dim), keepdim, s.outs[0], kAll, kAll ? "all" : "any");
  return s.outs[0];
}
template <class Meta, bool kAll>
at::Tensor& all_any_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  Structured<Meta> s(out);
  s.meta(self, dim, keepdim);
  launch_all_any(self, mask_of_dim(self, dim), keepdim, out, kAll, kAll ? "all" : "any");
  return out;
}
template <class Meta, bool kAll>
at::Tensor all_any_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  Structured<Meta> s;
  s.meta(self, dim, keepdim);
  launch_all_any(self, all_any_mask(self, dim), keepdim, s.outs[0], kAll, kAll ? "all" : "any");
  return s.outs[0];
}
template <class Meta, bool kAll>
at::Tensor& all_any_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                             at::Tensor& out) {
  Structured<Meta> s(out);
  s.meta(self, dim, keepdim);
  launch_all_any(self, all_any_mask(self, dim), keepdim, out, kAll, kAll ? "all" : "any");
  return out;
}

at::Tensor count_nonzero_dims(const at::Tensor& self, at::IntArrayRef dims) {
  vk_dtype(self.scalar_type(), "count_nonzero");
  const DimMask mask = mask_of(self, dims);
  at::Tensor out = at::empty(reduced_shape(self, mask, false), self.options().dtype(at::kLong));
  const at::ScalarType in = self.scalar_type();
  const ComputeKind acc = in == at::kDouble ? ComputeKind::Float64 : at::isFloatingType(in)
                                                                         ? ComputeKind::Float32
                                                                         : ComputeKind::Int64;
  // A float accumulator counts exactly up to 2^24 per output; beyond, count in int64 from the
  // 0 / 1 values (NonZero makes any input exact).
  const ComputeKind use = self.numel() / std::max<int64_t>(out.numel(), 1) < (1 << 24) ? acc : ComputeKind::Int64;
  if (use == ComputeKind::Int64 && at::isFloatingType(in)) {
    launch_reduce(self.ne(0), mask, false, out, ReduceOp::Sum, ComputeKind::Int64, 1.0, {},
                  "count_nonzero");
  } else {
    launch_reduce(self, mask, false, out, ReduceOp::Sum, use, 1.0, {ReducePre::NonZero},
                  "count_nonzero");
  }
  return out;
}

// ---------------------------------------------------------------- var / std

// Two passes in the accumulator precision: the mean into `center` (laid out like `out`), then
// scale * sum (x - mean)^2 with scale = 1 / max(0, N - correction) (inf: NaN / inf like CPU).
void launch_var(const at::Tensor& self, const DimMask& mask, bool keepdim, const at::Tensor& out,
                const at::Tensor& center, double correction, bool take_sqrt, const char* name) {
  int64_t n = 1;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (mask[d]) n *= self.size(d);
  const double dof = std::max(0.0, static_cast<double>(n) - correction);
  if (dof <= 0 && out.numel() > 0)
    TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than the "
               "reduction factor (input numel divided by output numel).");
  const ComputeKind acc = reduce_acc_kind(self.scalar_type(), center.scalar_type());
  launch_reduce(self, mask, keepdim, center, ReduceOp::Sum, acc, 1.0 / static_cast<double>(n), {},
                name);
  kernels::ReduceExtra extra;
  extra.pre = ReducePre::SquaredDeviation;
  extra.post = take_sqrt ? ReducePost::Sqrt : ReducePost::None;
  extra.center = reinterpret_cast<uint64_t>(center.data_ptr());
  launch_reduce(self, mask, keepdim, out, ReduceOp::Sum, acc, 1.0 / dof, extra, name);
}

at::ScalarType acc_float_dtype(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

void check_var_input(const at::Tensor& self) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
  vk_dtype(self.scalar_type(), "var");
}

at::Tensor& std_var_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                        const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out,
                        bool take_sqrt, const char* name) {
  check_var_input(self);
  const DimMask mask = mask_of(self, dim);
  const auto shape = reduced_shape(self, mask, keepdim);
  if (!out.defined()) {
    out = at::empty(shape, self.options());
  } else {
    TORCH_CHECK(at::isFloatingType(out.scalar_type()), name, "(): expected a floating point out tensor, but got ",
                out.scalar_type());
    TORCH_CHECK(at::canCast(self.scalar_type(), out.scalar_type()), "result type ",
                self.scalar_type(), " can't be cast to the desired output type ", out.scalar_type());
    at::native::resize_output(out, shape);
  }
  if (out.numel() == 0) return out;
  at::Tensor center = at::empty_strided(out.sizes(), out.strides(),
                                        out.options().dtype(acc_float_dtype(
                                            at::promoteTypes(self.scalar_type(), out.scalar_type()))));
  launch_var(self, mask, keepdim, out, center, correction.value_or(1).toDouble(), take_sqrt, name);
  return out;
}

at::Tensor var_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<c10::Scalar>& correction, bool keepdim) {
  at::Tensor out;
  return std_var_out(self, dim, correction, keepdim, out, false, "var");
}
at::Tensor& var_correction_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                               const std::optional<c10::Scalar>& correction, bool keepdim,
                               at::Tensor& out) {
  return std_var_out(self, dim, correction, keepdim, out, false, "var");
}
at::Tensor std_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<c10::Scalar>& correction, bool keepdim) {
  at::Tensor out;
  return std_var_out(self, dim, correction, keepdim, out, true, "std");
}
at::Tensor& std_correction_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                               const std::optional<c10::Scalar>& correction, bool keepdim,
                               at::Tensor& out) {
  return std_var_out(self, dim, correction, keepdim, out, true, "std");
}

std::tuple<at::Tensor, at::Tensor> std_var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                const std::optional<c10::Scalar>& correction,
                                                bool keepdim, bool take_sqrt, const char* name) {
  check_var_input(self);
  const DimMask mask = mask_of(self, dim);
  const auto shape = reduced_shape(self, mask, keepdim);
  at::Tensor out = at::empty(shape, self.options());
  at::Tensor mean = at::empty(shape, self.options());
  if (out.numel() == 0) return {out, mean};
  const at::ScalarType acc_dtype = acc_float_dtype(self.scalar_type());
  at::Tensor center = acc_dtype == self.scalar_type() ? mean : at::empty(shape, self.options().dtype(acc_dtype));
  launch_var(self, mask, keepdim, out, center, correction.value_or(1).toDouble(), take_sqrt, name);
  if (!center.is_same(mean)) mean.copy_(center);
  return {out, mean};
}

std::tuple<at::Tensor, at::Tensor> var_mean_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                       const std::optional<c10::Scalar>& correction,
                                                       bool keepdim) {
  return std_var_mean(self, dim, correction, keepdim, false, "var_mean");
}
std::tuple<at::Tensor, at::Tensor> std_mean_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                       const std::optional<c10::Scalar>& correction,
                                                       bool keepdim) {
  return std_var_mean(self, dim, correction, keepdim, true, "std_mean");
}

// ---------------------------------------------------------------- vector norms

// `out` already has the meta function's shape and dtype (the dtype= argument included).
void launch_vector_norm(const at::Tensor& self, double ord, at::OptionalIntArrayRef dim, bool keepdim,
                        const at::Tensor& out) {
  vk_dtype(self.scalar_type(), "linalg.vector_norm");
  kernels::ReduceExtra extra;
  ReduceOp op = ReduceOp::Sum;
  if (ord == 0) {
    extra.pre = ReducePre::NonZero;
  } else if (ord == 1) {
    extra.pre = ReducePre::Abs;
  } else if (ord == 2) {
    extra.pre = ReducePre::Square;
    extra.post = ReducePost::Sqrt;
  } else if (std::isinf(ord)) {
    extra.pre = ReducePre::Abs;
    op = ord > 0 ? ReduceOp::Max : ReduceOp::Min;
  } else {
    extra.pre = ReducePre::AbsPow;
    extra.post = ReducePost::Root;
    extra.p = ord;
  }
  const DimMask mask = (dim && !dim->empty()) ? mask_of(self, dim) : DimMask().set();
  const ComputeKind acc = reduce_acc_kind(self.scalar_type(), out.scalar_type()) == ComputeKind::Float64
                              ? ComputeKind::Float64
                              : ComputeKind::Float32;
  launch_reduce(self, mask, keepdim, out, op, acc, 1.0, extra, "linalg.vector_norm");
}

at::Tensor linalg_vector_norm(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim,
                              bool keepdim, std::optional<at::ScalarType> dtype) {
  Structured<at::meta::structured_linalg_vector_norm> s;
  s.meta(self, ord, dim, keepdim, dtype);
  launch_vector_norm(self, ord.toDouble(), dim, keepdim, s.outs[0]);
  return s.outs[0];
}
at::Tensor& linalg_vector_norm_out(const at::Tensor& self, const c10::Scalar& ord,
                                   at::OptionalIntArrayRef dim, bool keepdim,
                                   std::optional<at::ScalarType> dtype, at::Tensor& out) {
  Structured<at::meta::structured_linalg_vector_norm> s(out);
  s.meta(self, ord, dim, keepdim, dtype);
  launch_vector_norm(self, ord.toDouble(), dim, keepdim, out);
  return out;
}

double norm_p(const at::OptionalScalarRef& p) { return p.has_value() ? p.get().toDouble() : 2.0; }

at::Tensor norm_dim(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                    bool keepdim) {
  Structured<at::meta::structured_norm_ScalarOpt_dim> s;
  const at::OptionalScalarRef pr = p ? at::OptionalScalarRef(&*p) : at::OptionalScalarRef();
  s.meta(self, pr, dim, keepdim);
  launch_vector_norm(self, norm_p(pr), dim, keepdim, s.outs[0]);
  return s.outs[0];
}
at::Tensor& norm_out(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                     bool keepdim, at::Tensor& out) {
  Structured<at::meta::structured_norm_ScalarOpt_dim> s(out);
  const at::OptionalScalarRef pr = p ? at::OptionalScalarRef(&*p) : at::OptionalScalarRef();
  s.meta(self, pr, dim, keepdim);
  launch_vector_norm(self, norm_p(pr), dim, keepdim, out);
  return out;
}
at::Tensor norm_dim_dtype(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                          at::IntArrayRef dim, bool keepdim, at::ScalarType dtype) {
  Structured<at::meta::structured_norm_ScalarOpt_dim_dtype> s;
  const at::OptionalScalarRef pr = p ? at::OptionalScalarRef(&*p) : at::OptionalScalarRef();
  s.meta(self, pr, dim, keepdim, dtype);
  launch_vector_norm(self, norm_p(pr), dim, keepdim, s.outs[0]);
  return s.outs[0];
}
at::Tensor& norm_dtype_out(const at::Tensor& self, const std::optional<c10::Scalar>& p,
                           at::IntArrayRef dim, bool keepdim, at::ScalarType dtype, at::Tensor& out) {
  Structured<at::meta::structured_norm_ScalarOpt_dim_dtype> s(out);
  const at::OptionalScalarRef pr = p ? at::OptionalScalarRef(&*p) : at::OptionalScalarRef();
  s.meta(self, pr, dim, keepdim, dtype);
  launch_vector_norm(self, norm_p(pr), dim, keepdim, out);
  return out;
}

// torch.equal: same size and every element equal after type promotion, like the CPU (NaN
// never equals). The answer is a host
// bool, so this reads back one byte: a host wait like item().
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (!self.is_same_size(other)) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

}  // namespace

ComputeKind reduce_acc_kind(at::ScalarType in, at::ScalarType out) {
  if (in == at::kDouble || out == at::kDouble) return ComputeKind::Float64;
  if (at::isFloatingType(out)) return ComputeKind::Float32;
  return ComputeKind::Int64;
}

void launch_reduce(const at::Tensor& self, const DimMask& mask, bool keepdim, const at::Tensor& out,
                   ReduceOp op, ComputeKind acc, double scale, const kernels::ReduceExtra& extra,
                   const char* name) {
  if (out.numel() == 0) return;
  vk_dtype(self.scalar_type(), name);
  int64_t reduced_numel = 0;
  const auto geometry = reduce_geometry(self, mask, keepdim, out, at::Tensor(), reduced_numel, name);
  const kernels::Operand out_op = operand(out, name);
  const kernels::Operand in_op = operand(self, name);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] {
    kernels::reduce(stream, op, acc, out.numel(), reduced_numel, geometry, out_op, in_op, scale,
                    extra);
  });
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum", TORCH_FN(sum_all));
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("sum.IntList_out", TORCH_FN(sum_out));
  m.impl("mean", TORCH_FN(mean_all));
  m.impl("mean.dim", TORCH_FN(mean_dim));
  m.impl("mean.out", TORCH_FN(mean_out));
  m.impl("prod", TORCH_FN(prod_all));
  m.impl("prod.dim_int", TORCH_FN(prod_dim));
  m.impl("prod.int_out", TORCH_FN(prod_int_out));

  m.impl("amax", TORCH_FN(amax));
  m.impl("amax.out", TORCH_FN(amax_out));
  m.impl("amin", TORCH_FN(amin));
  m.impl("amin.out", TORCH_FN(amin_out));
  m.impl("max", TORCH_FN(max_all));
  m.impl("max.unary_out", TORCH_FN(max_unary_out));
  m.impl("min", TORCH_FN(min_all));
  m.impl("min.unary_out", TORCH_FN(min_unary_out));
  m.impl("max.dim", TORCH_FN(max_dim));
  m.impl("max.dim_max", TORCH_FN(max_dim_out));
  m.impl("min.dim", TORCH_FN(min_dim));
  m.impl("min.dim_min", TORCH_FN(min_dim_out));
  m.impl("argmax", TORCH_FN(argmax));
  m.impl("argmax.out", TORCH_FN(argmax_out));
  m.impl("argmin", TORCH_FN(argmin));
  m.impl("argmin.out", TORCH_FN(argmin_out));

  m.impl("equal", TORCH_FN(equal));
  m.impl("all", TORCH_FN((all_any_full<at::meta::structured_all, true>)));
  m.impl("all.all_out", TORCH_FN((all_any_full_out<at::meta::structured_all, true>)));
  m.impl("all.dim", TORCH_FN((all_any_dim<at::meta::structured_all_dim, true>)));
  m.impl("all.out", TORCH_FN((all_any_dim_out<at::meta::structured_all_dim, true>)));
  m.impl("all.dims", TORCH_FN((all_any_dims<at::meta::structured_all_dims, true>)));
  m.impl("all.dims_out", TORCH_FN((all_any_dims_out<at::meta::structured_all_dims, true>)));
  m.impl("any", TORCH_FN((all_any_full<at::meta::structured_any, false>)));
  m.impl("any.all_out", TORCH_FN((all_any_full_out<at::meta::structured_any, false>)));
  m.impl("any.dim", TORCH_FN((all_any_dim<at::meta::structured_any_dim, false>)));
  m.impl("any.out", TORCH_FN((all_any_dim_out<at::meta::structured_any_dim, false>)));
  m.impl("any.dims", TORCH_FN((all_any_dims<at::meta::structured_any_dims, false>)));
  m.impl("any.dims_out", TORCH_FN((all_any_dims_out<at::meta::structured_any_dims, false>)));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(count_nonzero_dims));

  m.impl("var.correction", TORCH_FN(var_correction));
  m.impl("var.correction_out", TORCH_FN(var_correction_out));
  m.impl("std.correction", TORCH_FN(std_correction));
  m.impl("std.correction_out", TORCH_FN(std_correction_out));
  m.impl("var_mean.correction", TORCH_FN(var_mean_correction));
  m.impl("std_mean.correction", TORCH_FN(std_mean_correction));

  m.impl("linalg_vector_norm", TORCH_FN(linalg_vector_norm));
  m.impl("linalg_vector_norm.out", TORCH_FN(linalg_vector_norm_out));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(norm_dim));
  m.impl("norm.out", TORCH_FN(norm_out));
  m.impl("norm.ScalarOpt_dim_dtype", TORCH_FN(norm_dim_dtype));
  m.impl("norm.dtype_out", TORCH_FN(norm_dtype_out));
}

}  // namespace tvk::aten
