// Native sorting ops: sort (stable or not, ascending / descending, functional and out=; so
// argsort and msort), topk, kthvalue, median / nanmedian (all and along a dim), mode. All of
// them run the sort kernel (src/kernels/sort.h) along one dim of a contiguous
// [outer, n, inner] view and keep a window of sorted positions; median and mode pick their
// element from the sorted row with a second small kernel. The kernel's order is PyTorch's: NaN above every number, ties
// in input order (the CPU's stable order; unstable sorts get it too). Shape, dim and dtype
// checks come from PyTorch's meta functions where the op is structured, else they repeat the
// CPU's checks and messages.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/SortingUtils.h>
#include <ATen/ops/sort_meta.h>
#include <ATen/ops/topk_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>
#include <tuple>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/sort.h"

namespace tvk::aten {
namespace {

// A tensor with `out`'s shape that the kernel can write: `out` itself when it is contiguous
// and has `dtype`, else a contiguous temporary (copied back by finish()).
at::Tensor writable(const at::Tensor& out, at::ScalarType dtype) {
  if (out.is_contiguous() && out.scalar_type() == dtype) return out;
  return at::empty(out.sizes(), out.options().dtype(dtype));
}
void finish(const at::Tensor& tmp, const at::Tensor& out) {
  if (!tmp.is_same(out)) out.copy_(tmp);
}

// [outer, n, inner] of `t` around `dim` (a 0-dim tensor is one row of one element).
void split_dims(const at::Tensor& t, int64_t dim, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = n = inner = 1;
  if (t.dim() == 0) return;
  n = t.size(dim);
  for (int64_t d = 0; d < dim; ++d) outer *= t.size(d);
  for (int64_t d = dim + 1; d < t.dim(); ++d) inner *= t.size(d);
}

// Sorts `self` along `dim` (wrapped) and writes sorted positions [first, first + len) of
// every row to `values` / `indices`, shaped like `self` with size `len` along `dim` (any
// strides and an indices dtype of int64; values of self's dtype).
void launch_sort(const at::Tensor& self, int64_t dim, bool descending, int64_t first, int64_t len,
                 const at::Tensor& values, const at::Tensor& indices, const char* name) {
  if (values.numel() == 0) return;
  const at::Tensor in = self.contiguous();
  const at::Tensor v = writable(values, self.scalar_type());
  const at::Tensor i = writable(indices, at::kLong);
  kernels::Sort p;
  split_dims(in, dim, p.outer, p.n, p.inner);
  p.descending = descending;
  p.first = first;
  p.out_len = len;
  p.in = operand(in, name);
  p.values = operand(v, name);
  p.indices = operand(i, name);
  const c10::DeviceGuard guard(self.device());
  at::Tensor scratch;
  const uint64_t bytes = kernels::sort_scratch_bytes(p);
  if (bytes > 0) {
    scratch = at::empty({static_cast<int64_t>(bytes / 8)}, self.options().dtype(at::kLong));
    p.scratch = operand(scratch, name).address;
  }
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::sort(stream, p); });
  finish(v, values);
  finish(i, indices);
}

// ---------------------------------------------------------------- sort
void sort_into(const at::Tensor& self, int64_t dim, bool descending, const at::Tensor& values,
               const at::Tensor& indices) {
  vk_dtype(self.scalar_type(), "sort");
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  launch_sort(self, dim, descending, 0, n, values, indices, "sort");
}

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable,
                                               int64_t dim, bool descending) {
  Structured<at::meta::structured_sort_stable, 2> s;
  s.meta(self, stable, dim, descending);
  sort_into(self, dim, descending, s.outs[0], s.outs[1]);
  return {s.outs[0], s.outs[1]};
}

std::tuple<at::Tensor&, at::Tensor&> sort_stable_out(const at::Tensor& self,
                                                     std::optional<bool> stable, int64_t dim,
                                                     bool descending, at::Tensor& values,
                                                     at::Tensor& indices) {
  Structured<at::meta::structured_sort_stable, 2> s(values, indices);
  s.meta(self, stable, dim, descending);
  sort_into(self, dim, descending, values, indices);
  return {values, indices};
}

// ---------------------------------------------------------------- topk
void topk_into(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
               const at::Tensor& values, const at::Tensor& indices) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "topk does not support bool dtypes");
  vk_dtype(self.scalar_type(), "topk");
  dim = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  if (self.dim() == 0) {  // the CPU's rule: a 0-dim input is its own top-k for k = 0 and 1
    values.copy_(self);
    indices.zero_();
    return;
  }
  launch_sort(self, dim, largest, 0, k, values, indices, "topk");
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, int64_t k, int64_t dim,
                                        bool largest, bool sorted) {
  Structured<at::meta::structured_topk, 2> s;
  s.meta(self, k, dim, largest, sorted);
  topk_into(self, k, dim, largest, s.outs[0], s.outs[1]);
  return {s.outs[0], s.outs[1]};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, int64_t k, int64_t dim,
                                              bool largest, bool sorted, at::Tensor& values,
                                              at::Tensor& indices) {
  Structured<at::meta::structured_topk, 2> s(values, indices);
  s.meta(self, k, dim, largest, sorted);
  topk_into(self, k, dim, largest, values, indices);
  return {values, indices};
}

// ---------------------------------------------------------------- kthvalue
std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, int64_t k,
                                                  int64_t dim_, bool keepdim, at::Tensor& values,
                                                  at::Tensor& indices) {
  const int64_t dim = at::maybe_wrap_dim(dim_, self.dim(), /*wrap_scalar=*/true);
  const int64_t slicesize = self.dim() == 0 ? 1 : self.size(dim);
  at::native::zero_numel_check_dims(self, dim, "kthvalue()");
  TORCH_CHECK(k >= 1 && k <= slicesize, "kthvalue(): selected number k out of range for dimension ",
              dim);
  at::assert_no_overlap(self, values);
  at::native::_reduction_with_indices_allocate_or_resize_output(values, indices, self, dim_,
                                                                keepdim);
  if (self.scalar_type() == at::kBool) raise_not_implemented_for("kthvalue_cpu", at::kBool);
  vk_dtype(self.scalar_type(), "kthvalue");
  // values / indices now have size 1 along dim (like the CPU, squeezed at the end).
  launch_sort(self, dim, false, k - 1, 1, values, indices, "kthvalue");
  if (!keepdim && self.dim() > 0) {
    values.squeeze_(dim);
    indices.squeeze_(dim);
  }
  return {values, indices};
}

// ---------------------------------------------------------------- median / nanmedian
void median_into(const at::Tensor& self, int64_t dim, bool ignore_nan, const at::Tensor& values,
                 const at::Tensor& indices, const char* name) {
  const at::Tensor in = self.contiguous();
  int64_t outer, n, inner;
  split_dims(in, dim, outer, n, inner);
  const at::Tensor sv = at::empty(in.sizes(), in.options());
  const at::Tensor si = at::empty(in.sizes(), in.options().dtype(at::kLong));
  launch_sort(in, dim, false, 0, n, sv, si, name);
  const at::Tensor v = writable(values, self.scalar_type());
  const at::Tensor i = writable(indices, at::kLong);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  const auto ov = operand(v, name), oi = operand(i, name);
  const auto osv = operand(sv, name), osi = operand(si, name);
  translate_errors(
      [&] { kernels::sorted_median(stream, outer, n, inner, ignore_nan, osv, osi, ov, oi); });
  finish(v, values);
  finish(i, indices);
}

std::tuple<at::Tensor&, at::Tensor&> median_dim_impl(const at::Tensor& self, int64_t dim,
                                                     bool keepdim, at::Tensor& values,
                                                     at::Tensor& indices, bool ignore_nan) {
  const char* name = ignore_nan ? "nanmedian()" : "median()";
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::native::zero_numel_check_dims(self, dim, name);
  at::checkDeviceType("median", {values, indices}, self.device().type());
  at::checkScalarType("median", {indices, "indices", 1}, at::kLong);
  at::checkSameType("median", {values, "values", 0}, {self, "self", 2});
  std::vector<int64_t> out_shape = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim)
      out_shape[dim] = 1;
    else
      out_shape.erase(out_shape.begin() + dim);
  }
  at::native::resize_output(values, out_shape);
  at::native::resize_output(indices, out_shape);
  if (self.scalar_type() == at::kBool) raise_not_implemented_for("median_out", at::kBool);
  vk_dtype(self.scalar_type(), "median");
  if (self.numel() == 0) return {values, indices};
  const bool squeeze = !keepdim && self.dim() > 0;
  median_into(self, dim, ignore_nan, squeeze ? values.unsqueeze(dim) : values,
              squeeze ? indices.unsqueeze(dim) : indices, name);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& self, int64_t dim,
                                                    bool keepdim, at::Tensor& values,
                                                    at::Tensor& indices) {
  return median_dim_impl(self, dim, keepdim, values, indices, false);
}
std::tuple<at::Tensor&, at::Tensor&> nanmedian_dim_out(const at::Tensor& self, int64_t dim,
                                                       bool keepdim, at::Tensor& values,
                                                       at::Tensor& indices) {
  return median_dim_impl(self, dim, keepdim, values, indices, true);
}

at::Tensor median_all_impl(const at::Tensor& self, bool ignore_nan) {
  const char* name = ignore_nan ? "nanmedian_cpu" : "median_cpu";
  if (self.scalar_type() == at::kBool) raise_not_implemented_for(name, at::kBool);
  vk_dtype(self.scalar_type(), name);
  if (self.numel() == 0)
    return at::full({}, std::numeric_limits<float>::quiet_NaN(), self.options());
  const at::Tensor flat = self.reshape({-1});
  at::Tensor values = at::empty({}, self.options());
  at::Tensor indices = at::empty({}, self.options().dtype(at::kLong));
  median_into(flat, 0, ignore_nan, values.unsqueeze(0), indices.unsqueeze(0), name);
  return values;
}

at::Tensor median_all(const at::Tensor& self) { return median_all_impl(self, false); }
at::Tensor nanmedian_all(const at::Tensor& self) { return median_all_impl(self, true); }

// ---------------------------------------------------------------- mode
// The CPU's mode_out: output checks, the empty and 0-dim cases, then a stable ascending sort
// along dim and the mode select kernel: the most frequent value (the smallest among equally
// frequent ones) and the index of its last occurrence. (With NaN in a row the CPU's order is
// undefined; here every NaN is a value of its own.)
std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                              at::Tensor& values, at::Tensor& indices) {
  TORCH_CHECK(self.device() == values.device(), "expected device '", self.device(), "' but got '",
              values.device(), "' for values output");
  TORCH_CHECK(self.device() == indices.device(), "expected device '", self.device(),
              "' but got '", indices.device(), "' for indices output");
  TORCH_CHECK(self.scalar_type() == values.scalar_type(), "expected scalar type '",
              self.scalar_type(), "' but got '", values.scalar_type(), "' for values output");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type '", at::kLong,
              "' but got '", indices.scalar_type(), "' for indices output");
  dim = at::maybe_wrap_dim(dim, self.dim());
  if (self.numel() == 0) {
    const auto sizes = at::native::get_zero_numel_tensor_size(self, dim, keepdim, "mode()");
    at::native::resize_output(values, sizes);
    at::native::resize_output(indices, sizes);
    return {values, indices};
  }
  if (at::native::_dimreduce_return_trivial_no_ident(values, self, dim, keepdim, "mode")) {
    indices.resize_({}).fill_(0);
    return {values, indices};
  }
  vk_dtype(self.scalar_type(), "mode");
  // values / indices now have size 1 along dim (like the CPU, squeezed at the end).
  at::native::_reduction_with_indices_allocate_or_resize_output(values, indices, self, dim,
                                                                keepdim);
  const at::Tensor in = self.contiguous();
  int64_t outer, n, inner;
  split_dims(in, dim, outer, n, inner);
  const at::Tensor sv = at::empty(in.sizes(), in.options());
  const at::Tensor si = at::empty(in.sizes(), in.options().dtype(at::kLong));
  launch_sort(in, dim, false, 0, n, sv, si, "mode");
  const at::Tensor v = writable(values, self.scalar_type());
  const at::Tensor i = writable(indices, at::kLong);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  const auto ov = operand(v, "mode"), oi = operand(i, "mode");
  const auto osv = operand(sv, "mode"), osi = operand(si, "mode");
  translate_errors([&] { kernels::sorted_mode(stream, outer, n, inner, osv, osi, ov, oi); });
  finish(v, values);
  finish(i, indices);
  if (!keepdim) {
    values.squeeze_(dim);
    indices.squeeze_(dim);
  }
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  mode_out(self, dim, keepdim, values, indices);
  return {values, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort.stable", TORCH_FN(sort_stable));
  m.impl("sort.values_stable", TORCH_FN(sort_stable_out));
  m.impl("topk", TORCH_FN(topk));
  m.impl("topk.values", TORCH_FN(topk_out));
  m.impl("kthvalue.values", TORCH_FN(kthvalue_out));
  m.impl("median", TORCH_FN(median_all));
  m.impl("median.dim_values", TORCH_FN(median_dim_out));
  m.impl("nanmedian", TORCH_FN(nanmedian_all));
  m.impl("nanmedian.dim_values", TORCH_FN(nanmedian_dim_out));
  m.impl("mode", TORCH_FN(mode));
  m.impl("mode.values", TORCH_FN(mode_out));
}

}  // namespace tvk::aten
