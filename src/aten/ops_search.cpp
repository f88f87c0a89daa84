// Native scan and search ops beyond cumsum / cumprod (those live in ops_softmax.cpp):
//   _cummax_helper / _cummin_helper (torch.cummax / cummin; PyTorch's cummax_out does the
//   out= checks, resizing, 0-dim and empty cases and wraps dim before it calls the helper),
//   _logcumsumexp (functional and out=),
//   searchsorted (Tensor / Scalar, functional and out=), bucketize (Tensor / Scalar, out=),
//   isin (Tensor_Tensor / Tensor_Scalar / Scalar_Tensor, functional and out=),
//   histc (functional and out=), histogram (bins_tensor / bin_ct), _histogramdd_bin_edges,
//   _histogramdd_from_bin_cts, _histogramdd_from_bin_tensors (composites of native ops),
//   _unique / _unique2 / unique_consecutive / unique_dim / unique_dim_consecutive.
// The scans run the scan kernel (src/kernels/scan.h) over a contiguous [outer, dim, inner]
// view; the searches run one binary search per output element (src/kernels/search.h): isin
// sorts the test elements first (src/kernels/sort.h via at::sort) and searches them; histc
// counts with integer atomics. The unique family is composed of native ops (stable sort,
// comparisons of neighbours, a cumsum of group starts, scatters): its output size depends on
// the data, so it reads one count (the number of groups) back to the host. Shape, dtype and error checks repeat the CPU's (same
// exception types and messages; PyTorch's own check helpers where the headers have them).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/isin_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <tuple>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/scan.h"
#include "kernels/search.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;

// A tensor with `out`'s shape that a kernel can write: `out` itself when it is contiguous
// and has `dtype`, else a contiguous temporary (copied back by copy_back()).
at::Tensor writable(const at::Tensor& out, at::ScalarType dtype) {
  if (out.is_contiguous() && out.scalar_type() == dtype) return out;
  return at::empty(out.sizes(), out.options().dtype(dtype));
}
void copy_back(const at::Tensor& tmp, const at::Tensor& out) {
  if (!tmp.is_same(out)) out.copy_(tmp);
}

// The scan kernel's accumulator for a dtype: fp64, fp32 for the other float dtypes, int64 for
// integers and bool (exact for every value they hold).
ComputeKind scan_acc(at::ScalarType t) {
  if (t == at::kDouble) return ComputeKind::Float64;
  if (at::isFloatingType(t)) return ComputeKind::Float32;
  return ComputeKind::Int64;
}

// Scans `self` along `dim` into `out` (and `indices` for Max / Min), all shaped like `self`
// with any strides; `out` has self's dtype.
void launch_scan(kernels::ScanOp op, const at::Tensor& self, int64_t dim, const at::Tensor& out,
                 const at::Tensor& indices, const char* name) {
  if (self.numel() == 0) return;
  vk_dtype(self.scalar_type(), name);
  const at::Tensor in = self.contiguous();
  const at::Tensor dst = writable(out, self.scalar_type());
  const at::Tensor idx = indices.defined() ? writable(indices, at::kLong) : at::Tensor();
  kernels::Scan p;
  p.op = op;
  p.acc = scan_acc(self.scalar_type());
  if (in.dim() > 0) {
    dim = at::maybe_wrap_dim(dim, in.dim());
    p.dim = in.size(dim);
    for (int64_t d = 0; d < dim; ++d) p.outer *= in.size(d);
    for (int64_t d = dim + 1; d < in.dim(); ++d) p.inner *= in.size(d);
  }
  p.out = operand(dst, name);
  p.in = operand(in, name);
  if (idx.defined()) p.indices = operand(idx, name);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::scan(stream, p); });
  copy_back(dst, out);
  if (idx.defined()) copy_back(idx, indices);
}

// ---------------------------------------------------------------- cummax / cummin
// Called by PyTorch's cummax_out / cummin_out with values / indices already checked and
// resized to self's shape, self non-empty and at least 1-D, and dim wrapped.
void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  launch_scan(kernels::ScanOp::Max, self, dim, values, indices, "cummax");
}
void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  launch_scan(kernels::ScanOp::Min, self, dim, values, indices, "cummin");
}

// ---------------------------------------------------------------- logcumsumexp
// Like the CPU's _logcumsumexp_out_cpu: `result` is resized to self's shape; float dtypes
// only (the CPU's dispatch name in the error); the scan accumulates in fp32 (fp64 for
// float64) with the CPU's log-add-exp rules for NaN and infinities.
at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& result) {
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  if (!at::isFloatingType(self.scalar_type()))
    raise_not_implemented_for("logcumsumexp_out_cpu", self.scalar_type());
  TORCH_CHECK(result.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", result.scalar_type(), " instead");
  if (result.sizes() != self.sizes()) at::native::resize_output(result, self.sizes());
  launch_scan(kernels::ScanOp::LogAddExp, self, wrapped, result, at::Tensor(), "logcumsumexp");
  return result;
}
at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim) {
  at::Tensor result = at::empty_like(self, at::MemoryFormat::Contiguous);
  return logcumsumexp_out(self, dim, result);
}

// ---------------------------------------------------------------- searchsorted / bucketize
// The CPU's searchsorted_out_cpu: PyTorch's pre-check (which, like the CPU and CUDA, reads the
// sorter's min / max back to validate it), resize, promotion of input and boundaries to a
// common dtype, then one binary search per input element.
at::Tensor& searchsorted_out(const at::Tensor& sorted_sequence, const at::Tensor& self,
                             bool out_int32, bool right, std::optional<c10::string_view> side,
                             const std::optional<at::Tensor>& sorter_opt, at::Tensor& result) {
  const at::Tensor sorter = sorter_opt.has_value() ? *sorter_opt : at::Tensor();
  at::native::searchsorted_pre_check(sorted_sequence, self, result, out_int32, right, side,
                                     sorter);
  at::native::resize_output(result, self.sizes());
  const bool is_right = side ? *side == "right" : right;
  if (self.numel() == 0) return result;
  at::Tensor in, bd, st;
  at::native::searchsorted_maybe_trim_input_tensors(in, bd, st, self, sorted_sequence, sorter);
  if (!in.defined()) in = self;
  if (!bd.defined()) bd = sorted_sequence;
  if (!st.defined()) st = sorter;
  if (in.scalar_type() == at::kBool) raise_not_implemented_for("searchsorted_out_cpu", at::kBool);
  vk_dtype(in.scalar_type(), "searchsorted");
  const at::Tensor dst = writable(result, result.scalar_type());
  kernels::SearchSorted p;
  p.numel = in.numel();
  p.inner = in.dim() == 0 ? 1 : in.size(-1);
  p.n = bd.size(-1);
  p.one_dim = bd.dim() == 1;
  p.right = is_right;
  p.in = operand(in, "searchsorted");
  if (bd.numel() > 0) p.boundaries = operand(bd, "searchsorted");
  p.boundaries.dtype = vk_dtype(bd.scalar_type(), "searchsorted");
  if (st.defined() && st.numel() > 0) p.sorter = operand(st, "searchsorted");
  p.out = operand(dst, "searchsorted");
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::search_sorted(stream, p); });
  copy_back(dst, result);
  return result;
}

at::Tensor searchsorted_tensor(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32,
                        bool right, std::optional<c10::string_view> side,
                        const std::optional<at::Tensor>& sorter) {
  at::Tensor result = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return searchsorted_out(sorted_sequence, self, out_int32, right, side, sorter, result);
}
at::Tensor& searchsorted_scalar_out(const at::Tensor& sorted_sequence, const at::Scalar& self,
                                    bool out_int32, bool right,
                                    std::optional<c10::string_view> side,
                                    const std::optional<at::Tensor>& sorter, at::Tensor& result) {
  const at::Tensor t = at::native::searchsorted_scalar_tensor(self, sorted_sequence.device());
  return searchsorted_out(sorted_sequence, t, out_int32, right, side, sorter, result);
}
at::Tensor searchsorted_scalar(const at::Tensor& sorted_sequence, const at::Scalar& self,
                               bool out_int32, bool right, std::optional<c10::string_view> side,
                               const std::optional<at::Tensor>& sorter) {
  const at::Tensor t = at::native::searchsorted_scalar_tensor(self, sorted_sequence.device());
  return searchsorted_tensor(sorted_sequence, t, out_int32, right, side, sorter);
}

at::Tensor& bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32,
                          bool right, at::Tensor& result) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
  return searchsorted_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, result);
}
at::Tensor bucketize_tensor(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32,
                     bool right) {
  at::Tensor result = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return bucketize_out(self, boundaries, out_int32, right, result);
}
at::Tensor bucketize_scalar(const at::Scalar& self, const at::Tensor& boundaries, bool out_int32,
                            bool right) {
  return bucketize_tensor(at::native::searchsorted_scalar_tensor(self, boundaries.device()), boundaries,
                   out_int32, right);
}

// ---------------------------------------------------------------- isin
// After PyTorch's meta function (dtype checks, bool output shaped like elements): elements and
// test elements are promoted to their result type, the test elements sorted (native sort:
// NaN last), and every element searched in them. The result is exact membership, which is
// what the CPU computes except for its undefined assume_unique=True results on inputs that
// are not unique (assume_unique is only a speed hint here).
void isin_into(const at::Tensor& elements, const at::Tensor& test_elements, bool invert,
               const at::Tensor& out) {
  if (elements.numel() == 0) return;
  if (test_elements.numel() == 0) {
    out.fill_(invert);
    return;
  }
  const at::ScalarType common = at::result_type(elements, test_elements);
  vk_dtype(common, "isin");
  const at::Tensor el = elements.to(common).contiguous();
  const at::Tensor sorted =
      std::get<0>(at::sort(test_elements.to(common).reshape({-1}), /*stable=*/false, 0, false));
  const at::Tensor dst = writable(out, at::kBool);
  kernels::IsIn p;
  p.numel = el.numel();
  p.n = sorted.numel();
  p.invert = invert;
  p.in = operand(el, "isin");
  p.sorted_test = operand(sorted, "isin");
  p.out = operand(dst, "isin");
  const c10::DeviceGuard guard(elements.device());
  tvk::Stream& stream = current_stream(elements.device().index());
  translate_errors([&] { kernels::isin_sorted(stream, p); });
  copy_back(dst, out);
}

at::Tensor isin_tt(const at::Tensor& elements, const at::Tensor& test_elements,
                   bool assume_unique, bool invert) {
  Structured<at::meta::structured_isin_Tensor_Tensor> s;
  s.meta(elements, test_elements, assume_unique, invert);
  isin_into(elements, test_elements, invert, s.outs[0]);
  return s.outs[0];
}
at::Tensor& isin_tt_out(const at::Tensor& elements, const at::Tensor& test_elements,
                        bool assume_unique, bool invert, at::Tensor& out) {
  Structured<at::meta::structured_isin_Tensor_Tensor> s(out);
  s.meta(elements, test_elements, assume_unique, invert);
  isin_into(elements, test_elements, invert, out);
  return out;
}
// Like the CPU: an element-wise (in)equality with the scalar.
at::Tensor& isin_ts_out(const at::Tensor& elements, const at::Scalar& test_element,
                        bool assume_unique, bool invert, at::Tensor& out) {
  Structured<at::meta::structured_isin_Tensor_Scalar> s(out);
  s.meta(elements, test_element, assume_unique, invert);
  return invert ? at::ne_out(out, elements, test_element) : at::eq_out(out, elements, test_element);
}
at::Tensor isin_ts(const at::Tensor& elements, const at::Scalar& test_element, bool assume_unique,
                   bool invert) {
  Structured<at::meta::structured_isin_Tensor_Scalar> s;
  s.meta(elements, test_element, assume_unique, invert);
  at::Tensor out = s.outs[0];
  return invert ? at::ne_out(out, elements, test_element) : at::eq_out(out, elements, test_element);
}
// Like the CPU: the element becomes a wrapped-number tensor on the test elements' device and
// the Tensor_Tensor overload (whose meta function gives the output its 0-dim shape) runs.
at::Tensor& isin_st_out(const at::Scalar& element, const at::Tensor& test_elements,
                        bool assume_unique, bool invert, at::Tensor& out) {
  Structured<at::meta::structured_isin_Scalar_Tensor> s(out);
  s.meta(element, test_elements, assume_unique, invert);
  return isin_tt_out(at::native::wrapped_scalar_tensor(element, test_elements.device()),
                     test_elements, assume_unique, invert, out);
}
at::Tensor isin_st(const at::Scalar& element, const at::Tensor& test_elements, bool assume_unique,
                   bool invert) {
  Structured<at::meta::structured_isin_Scalar_Tensor> s;
  s.meta(element, test_elements, assume_unique, invert);
  return isin_tt_out(at::native::wrapped_scalar_tensor(element, test_elements.device()),
                     test_elements, assume_unique, invert, s.outs[0]);
}

// ---------------------------------------------------------------- histc
// Integer input: the CPU has no integer histc, CUDA has one (and Hugging Face's mixture-of-
// experts layers count tokens per expert with it on every device but the CPU and MPS), so vk
// follows CUDA: min / max converted to the input's integer type (overflow raises), min == max
// replaced by the input's range (then widened by 1 when still empty), bins computed in int64
// arithmetic.
at::Tensor& histc_integral(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                           const at::Scalar& max, at::Tensor& hist) {
  // Scalar::to<integer>() as CUDA's `min.to<input_t>()`: truncates, raises on overflow.
  int64_t left = 0, right = 0;
  AT_DISPATCH_INTEGRAL_TYPES(self.scalar_type(), "histc", [&] {
    left = static_cast<int64_t>(min.to<scalar_t>());
    right = static_cast<int64_t>(max.to<scalar_t>());
  });
  if (left == right && self.numel() > 0) {
    auto [lo, hi] = at::aminmax(self);
    const at::Tensor both = at::stack({lo.to(at::kLong), hi.to(at::kLong)}).cpu();
    left = both[0].item<int64_t>();
    right = both[1].item<int64_t>();
  }
  if (left == right) {
    left -= 1;
    right += 1;
  }
  TORCH_CHECK(left < right, "torch.histc: max must be larger than min");
  const at::Tensor counts = at::zeros({bins}, self.options().dtype(at::kInt));
  const at::Tensor in = self.contiguous();
  kernels::Histc p;
  p.numel = in.numel();
  p.bins = bins;
  p.left_int = left;
  p.right_int = right;
  if (p.numel > 0) p.in = operand(in, "histc");
  p.in.dtype = vk_dtype(self.scalar_type(), "histc");
  p.counts = operand(counts, "histc");
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::histc(stream, p); });
  hist.copy_(counts);
  return hist;
}

// The CPU's histogram_histc_out: output checks and resize (dtype of the input, bins > 0),
// the range (min == max: the input's aminmax, read back like on the CPU and CUDA; an empty
// range widened by 1 on both sides; a range that is not finite or not increasing raises),
// then counts per bin (float dtypes only, the CPU's dispatch names in the errors).
at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, at::Tensor& hist) {
  TORCH_CHECK(self.dtype() == hist.dtype(), "torch.histogram: input tensor and hist tensor should",
              " have the same dtype, but got input ", self.dtype(), " and hist ", hist.dtype());
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension ", 0);
  if (self.scalar_type() == at::kBool) raise_not_implemented_for("linspace_cpu", at::kBool);
  at::native::resize_output(hist, {bins});
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/false))
    return histc_integral(self, bins, min, max, hist);
  double left = min.to<double>(), right = max.to<double>();
  if (left == right && self.numel() > 0) {
    auto [lo, hi] = at::aminmax(self);
    const at::Tensor both = at::stack({lo.to(at::kDouble), hi.to(at::kDouble)}).cpu();
    left = both[0].item<double>();
    right = both[1].item<double>();
  }
  if (left == right) {
    left -= 1;
    right += 1;
  }
  TORCH_CHECK(!(std::isinf(left) || std::isinf(right) || std::isnan(left) || std::isnan(right)),
              "torch.histc: range of [", left, ", ", right, "] is not finite");
  TORCH_CHECK(left < right, "torch.histc: max must be larger than min");
  if (!at::isFloatingType(self.scalar_type()))
    raise_not_implemented_for("histogram_cpu", self.scalar_type());
  vk_dtype(self.scalar_type(), "histc");
  // The CPU bins between its linspace's first and last edges: the range in the input dtype.
  const auto in_dtype = [&](double v) {
    return at::scalar_tensor(v, at::TensorOptions().dtype(self.scalar_type())).item<double>();
  };
  const at::Tensor counts = at::zeros({bins}, self.options().dtype(at::kInt));
  const at::Tensor in = self.contiguous();
  kernels::Histc p;
  p.numel = in.numel();
  p.bins = bins;
  p.left = in_dtype(left);
  p.right = in_dtype(right);
  if (p.numel > 0) p.in = operand(in, "histc");
  p.in.dtype = vk_dtype(self.scalar_type(), "histc");
  p.counts = operand(counts, "histc");
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::histc(stream, p); });
  hist.copy_(counts);
  return hist;
}
at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                 const at::Scalar& max) {
  at::Tensor hist = at::empty({0}, self.options(), at::MemoryFormat::Contiguous);
  return histc_out(self, bins, min, max, hist);
}

// ---------------------------------------------------------------- unique
// Groups of equal neighbours in `rows` ([n, k], n >= 1, grouped so that equal rows are
// adjacent; NaN equals nothing, as the CPU's operator==): the group of every row (int64 [n]),
// the first row of every group (int64 [groups]) and, when asked, the group sizes. Reads the
// number of groups back to the host (the one data-dependent size).
struct Groups {
  at::Tensor id, first, counts;
  int64_t count = 0;
};
Groups group_neighbours(const at::Tensor& rows, bool want_counts) {
  const int64_t n = rows.size(0);
  const auto long_opts = rows.options().dtype(at::kLong);
  at::Tensor differs = at::ne(rows.slice(0, 1), rows.slice(0, 0, n - 1));
  if (differs.dim() > 1) differs = differs.any(1);
  const at::Tensor starts = at::cat({at::ones({1}, differs.options()), differs});
  Groups g;
  g.id = at::cumsum(starts, 0, at::kLong).sub_(1);
  g.count = g.id[n - 1].item<int64_t>() + 1;
  // Every start writes its position to its group's slot; the other rows write to a spare slot.
  const at::Tensor slot = at::where(starts, g.id, g.count);
  g.first = at::empty({g.count + 1}, long_opts)
                .scatter_(0, slot, at::arange(n, long_opts))
                .slice(0, 0, g.count);
  if (want_counts)
    g.counts = at::cat({g.first.slice(0, 1), at::full({1}, n, long_opts)}).sub_(g.first);
  return g;
}

at::Tensor empty_long(const at::Tensor& like) { return at::empty({0}, like.options().dtype(at::kLong)); }

// _unique2 on the CPU: always sorted (whatever `sorted` says); the first element of each group
// in stable sorted order is kept; inverse shaped like self, counts per value.
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool sorted,
                                                       bool return_inverse, bool return_counts) {
  vk_dtype(self.scalar_type(), "unique");
  const int64_t n = self.numel();
  if (n == 0) {
    return {at::empty({0}, self.options()),
            return_inverse ? at::empty(self.sizes(), self.options().dtype(at::kLong)) : empty_long(self),
            empty_long(self)};
  }
  auto [values, order] = at::sort(self.reshape({-1}), /*stable=*/true, 0, false);
  Groups g = group_neighbours(values, return_counts);
  at::Tensor out = values.index_select(0, g.first);
  at::Tensor inverse = empty_long(self);
  if (return_inverse)
    inverse = at::empty({n}, self.options().dtype(at::kLong)).scatter_(0, order, g.id).view(self.sizes());
  return {out, inverse, return_counts ? g.counts : empty_long(self)};
}
std::tuple<at::Tensor, at::Tensor> unique1(const at::Tensor& self, bool sorted, bool return_inverse) {
  auto [out, inverse, counts] = unique2(self, sorted, return_inverse, false);
  return {out, inverse};
}

// Rows along `dim` (unique_dim, unique_consecutive with a dim): the CPU's checks for zero
// sizes, rows sorted lexicographically (unless consecutive) by stable sorts on the columns
// from the last to the first, then groups of equal rows. Inverse and counts are always
// computed (as on the CPU).
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_rows(const at::Tensor& self, int64_t dim,
                                                           bool consecutive) {
  vk_dtype(self.scalar_type(), "unique_dim");
  const auto sizes = self.sizes().vec();
  const auto zero_dims = std::count(sizes.begin(), sizes.end(), 0);
  if (self.size(dim) == 0) {
    TORCH_CHECK(zero_dims == 1,
                "Number of zero sized dimensions is more than one, so unique cannot be applied ");
    return {at::empty(sizes, self.options()), empty_long(self), empty_long(self)};
  }
  TORCH_CHECK(zero_dims == 0,
              "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  const at::Tensor moved = self.movedim(dim, 0);
  std::vector<int64_t> moved_sizes = moved.sizes().vec();
  const int64_t n = moved_sizes[0];
  at::Tensor rows = moved.contiguous().view({n, -1});
  const auto long_opts = self.options().dtype(at::kLong);
  at::Tensor order;
  if (!consecutive) {
    order = at::arange(n, long_opts);
    for (int64_t c = rows.size(1) - 1; c >= 0; --c) {
      const at::Tensor key = rows.select(1, c).index_select(0, order);
      order = order.index_select(0, std::get<1>(at::sort(key, /*stable=*/true, 0, false)));
    }
    rows = rows.index_select(0, order);
  }
  Groups g = group_neighbours(rows, true);
  moved_sizes[0] = g.count;
  at::Tensor out = rows.index_select(0, g.first).view(moved_sizes).movedim(0, dim);
  at::Tensor inverse = consecutive ? g.id : at::empty({n}, long_opts).scatter_(0, order, g.id);
  return {out, inverse, g.counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim(const at::Tensor& self, int64_t dim,
                                                          bool sorted, bool return_inverse,
                                                          bool return_counts) {
  return unique_rows(self, dim, false);
}
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim_consecutive(const at::Tensor& self,
                                                                      int64_t dim,
                                                                      bool return_inverse,
                                                                      bool return_counts) {
  return unique_rows(self, dim, true);
}

// unique_consecutive on the CPU: without a dim (or dim 0 of a 1-D tensor) the flattened
// elements, keeping the first of each run; else unique_dim_consecutive.
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self,
                                                                  bool return_inverse,
                                                                  bool return_counts,
                                                                  std::optional<int64_t> dim) {
  if (dim.has_value() && !(*dim == 0 && self.dim() == 1))
    return unique_rows(self, *dim, true);
  vk_dtype(self.scalar_type(), "unique_consecutive");
  const int64_t n = self.numel();
  if (n == 0) {
    return {at::empty({0}, self.options()),
            return_inverse ? at::empty(self.sizes(), self.options().dtype(at::kLong)) : empty_long(self),
            empty_long(self)};
  }
  const at::Tensor flat = self.reshape({-1});
  Groups g = group_neighbours(flat, return_counts);
  return {flat.index_select(0, g.first), return_inverse ? g.id.view(self.sizes()) : empty_long(self),
          return_counts ? g.counts : empty_long(self)};
}


// ---------------------------------------------------------------- histogram / histogramdd
// The CPU's histogramdd family (aten/src/ATen/native/Histogram.cpp), composed of native ops:
// each coordinate's bin is searchsorted(edges, x, right=True) - 1 (the CPU's BINARY_SEARCH;
// its linear interpolation with local search gives the same bins for linspace edges), the
// rightmost edge belongs to the last bin, NaN and values outside [edges[0], edges[-1]] count
// nothing; the weights (or ones) are added with index_add_ into the flattened histogram
// (exact counts; float16 / bfloat16 count in their own dtype, as the CPU does). Equal-width
// edges come from a range read back from the device (aminmax, as the CPU and CUDA read it)
// and the CPU's linspace of those two numbers (uploaded: bins + 1 values).

void histogramdd_check(const at::Tensor& input, at::TensorList bins, const c10::optional<at::Tensor>& weight) {
  TORCH_CHECK(input.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions, but got ",
              input.dim());
  const int64_t n = input.size(-1);
  TORCH_CHECK(static_cast<int64_t>(bins.size()) == n, "torch.histogramdd: expected ", n,
              " sequences of bin edges for a ", n, "-dimensional histogram but got ", bins.size());
  for (int64_t dim = 0; dim < n; ++dim) {
    const at::Tensor& b = bins[dim];
    TORCH_CHECK(input.dtype() == b.dtype(), "torch.histogramdd: input tensor and bins tensors should",
                " have the same dtype, but got input with dtype ", input.dtype(), " and bins for dimension ", dim,
                " with dtype ", b.dtype());
    TORCH_CHECK(b.dim() == 1, "torch.histogramdd: bins tensor should have one dimension,", " but got ", b.dim(),
                " dimensions in the bins tensor for dimension ", dim);
    TORCH_CHECK(b.numel() > 0, "torch.histogramdd: bins tensor should have at least 1 element,", " but got ",
                b.numel(), " elements in the bins tensor for dimension ", dim);
  }
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(input.dtype() == weight->dtype(), "torch.histogramdd: if weight tensor is provided,",
                " input tensor and weight tensor should have the same dtype, but got input(", input.dtype(), ")",
                ", and weight(", weight->dtype(), ")");
    std::vector<int64_t> input_sizes = input.sizes().vec();
    input_sizes.pop_back();
    std::vector<int64_t> weight_sizes = weight->sizes().vec();
    if (weight_sizes.empty()) weight_sizes = {1};
    TORCH_CHECK(input_sizes == weight_sizes, "torch.histogramdd: if weight tensor is provided it should have",
                " the same shape as the input tensor excluding its innermost dimension, but got input with shape ",
                input.sizes(), " and weight with shape ", weight->sizes());
  }
}

// The CPU's dispatch: the range inference ("histogramdd") takes float32 / float64, the
// counting ("histogram_cpu") float16 / bfloat16 too.
void check_histogram_dtype(const at::Tensor& input, const char* name, bool half_too) {
  const at::ScalarType t = input.scalar_type();
  const bool ok = t == at::kFloat || t == at::kDouble || (half_too && (t == at::kHalf || t == at::kBFloat16));
  if (!ok) raise_not_implemented_for(name, t);
  vk_dtype(t, name);
}

// Equal-width edges per dimension of `self` ([M, N] after flattening), as the CPU's
// select_outer_bin_edges + linspace.
std::vector<at::Tensor> histogramdd_edges(const at::Tensor& self, at::IntArrayRef bin_ct,
                                          c10::optional<c10::ArrayRef<double>> range) {
  TORCH_CHECK(self.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions");
  const int64_t n = self.size(-1);
  TORCH_CHECK(static_cast<int64_t>(bin_ct.size()) == n,
              "histogramdd: The size of bins must be equal to the innermost dimension of the input.");
  const at::Tensor flat = self.reshape({-1, n});
  std::vector<double> left(n, 0.0), right(n, 1.0);
  if (range.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(range->size()) == 2 * n, "torch.histogramdd: for a ", n,
                "-dimensional histogram", " range should have ", 2 * n, " elements, but got ", range->size());
    for (int64_t d = 0; d < n; ++d) {
      left[d] = (*range)[2 * d];
      right[d] = (*range)[2 * d + 1];
    }
  } else if (flat.numel() > 0) {
    check_histogram_dtype(self, "histogramdd", false);
    auto [lo, hi] = at::aminmax(flat, 0);
    const at::Tensor both = at::stack({lo, hi}).to(at::kDouble).cpu();  // one host read
    for (int64_t d = 0; d < n; ++d) {
      left[d] = both[0][d].item<double>();
      right[d] = both[1][d].item<double>();
    }
  }
  std::vector<at::Tensor> edges;
  for (int64_t d = 0; d < n; ++d) {
    TORCH_CHECK(std::isfinite(left[d]) && std::isfinite(right[d]), "torch.histogramdd: dimension ", d,
                "'s range [", left[d], ", ", right[d], "] is not finite");
    TORCH_CHECK(left[d] <= right[d], "torch.histogramdd: min should not exceed max, but got", " min ", left[d],
                " max ", right[d], " for dimension ", d);
    if (left[d] == right[d]) {
      left[d] -= 0.5;
      right[d] += 0.5;
    }
    TORCH_CHECK(bin_ct[d] > 0, "torch.histogram(): bins must be > 0, but got ", bin_ct[d], " for dimension ", d);
    // The edges are a function of two host numbers: the CPU's linspace makes them bit for bit
    // the CPU's (exact counts depend on them; the device linspace can differ by an ulp in
    // float64), then bins + 1 values are uploaded.
    edges.push_back(at::linspace(left[d], right[d], bin_ct[d] + 1, self.options().device(at::kCPU))
                        .to(self.device()));
  }
  return edges;
}

// The histogram of `self` ([..., N]) over the given edges (checked by histogramdd_check).
at::Tensor histogramdd_from_edges(const at::Tensor& self, at::TensorList edges, const c10::optional<at::Tensor>& weight,
                                  bool density) {
  const int64_t n = self.size(-1);
  std::vector<int64_t> shape;
  int64_t cells = 1;
  for (const at::Tensor& e : edges) {
    TORCH_CHECK(e.numel() - 1 > 0, "torch.histogram(): bins must be > 0, but got ", e.numel() - 1,
                " for dimension ", shape.size());
    shape.push_back(e.numel() - 1);
    cells *= e.numel() - 1;
  }
  check_histogram_dtype(self, "histogram_cpu", true);
  const c10::DeviceGuard guard(self.device());
  const at::Tensor flat = self.reshape({-1, n});
  const int64_t m = flat.size(0);
  at::Tensor hist = at::zeros({cells}, self.options());
  if (m > 0) {
    at::Tensor cell = at::zeros({m}, flat.options().dtype(at::kLong));
    at::Tensor valid = at::ones({m}, flat.options().dtype(at::kBool));
    int64_t stride = 1;
    for (int64_t d = n - 1; d >= 0; --d) {
      const at::Tensor e = edges[d].contiguous();
      const int64_t bins = e.numel() - 1;
      const at::Tensor x = flat.select(1, d).contiguous();
      const at::Tensor pos = (at::searchsorted(e, x, /*out_int32=*/false, /*right=*/true) - 1).clamp(0, bins - 1);
      valid = valid.logical_and(x.ge(e.select(0, 0))).logical_and(x.le(e.select(0, bins)));
      cell.add_(pos, stride);
      stride *= bins;
    }
    at::Tensor w = weight.has_value() && weight->defined() ? weight->reshape({-1}).to(self.scalar_type())
                                                           : at::ones({m}, self.options());
    w = at::where(valid, w, at::zeros({}, w.options()));
    hist.index_add_(0, cell, w);
  }
  hist = hist.reshape(shape);
  if (density) {
    hist.div_(hist.sum());
    for (int64_t d = 0; d < n; ++d) {
      std::vector<int64_t> view(n, 1);
      view[d] = shape[d];
      const at::Tensor e = edges[d];
      hist.div_((e.narrow(0, 1, shape[d]) - e.narrow(0, 0, shape[d])).reshape(view));
    }
  }
  return hist;
}

std::vector<at::Tensor> histogramdd_bin_edges(const at::Tensor& self, at::IntArrayRef bins,
                                              c10::optional<c10::ArrayRef<double>> range,
                                              const c10::optional<at::Tensor>& /*weight*/, bool /*density*/) {
  const c10::DeviceGuard guard(self.device());
  return histogramdd_edges(self, bins, range);
}

at::Tensor histogramdd_from_bin_cts(const at::Tensor& self, at::IntArrayRef bins, c10::optional<c10::ArrayRef<double>> range,
                                    const c10::optional<at::Tensor>& weight, bool density) {
  const c10::DeviceGuard guard(self.device());
  const std::vector<at::Tensor> edges = histogramdd_edges(self, bins, range);
  histogramdd_check(self, edges, weight);
  return histogramdd_from_edges(self, edges, weight, density);
}

at::Tensor histogramdd_from_bin_tensors(const at::Tensor& self, at::TensorList bins,
                                        const c10::optional<at::Tensor>& weight, bool density) {
  histogramdd_check(self, bins, weight);
  return histogramdd_from_edges(self, bins, weight, density);
}

std::tuple<at::Tensor, at::Tensor> histogram_bins_tensor(const at::Tensor& self, const at::Tensor& bins,
                                                         const c10::optional<at::Tensor>& weight, bool density) {
  const at::Tensor flat = self.reshape({self.numel(), 1});
  c10::optional<at::Tensor> flat_weight;
  if (weight.has_value() && weight->defined()) flat_weight = weight->reshape({weight->numel()});
  histogramdd_check(flat, {bins}, flat_weight);
  const at::Tensor edges = bins.contiguous().clone();
  return {histogramdd_from_edges(flat, {edges}, flat_weight, density), edges};
}

std::tuple<at::Tensor, at::Tensor> histogram_bin_ct(const at::Tensor& self, int64_t bin_ct,
                                                    c10::optional<c10::ArrayRef<double>> range,
                                                    const c10::optional<at::Tensor>& weight, bool density) {
  const c10::DeviceGuard guard(self.device());
  const at::Tensor flat = self.reshape({self.numel(), 1});
  c10::optional<at::Tensor> flat_weight;
  if (weight.has_value() && weight->defined()) flat_weight = weight->reshape({weight->numel()});
  const std::vector<at::Tensor> edges = histogramdd_edges(flat, {bin_ct}, range);
  histogramdd_check(flat, edges, flat_weight);
  return {histogramdd_from_edges(flat, edges, flat_weight, density), edges[0]};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cummax_helper", TORCH_FN(cummax_helper));
  m.impl("_cummin_helper", TORCH_FN(cummin_helper));
  m.impl("_logcumsumexp", TORCH_FN(logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(logcumsumexp_out));
  m.impl("searchsorted.Tensor", TORCH_FN(searchsorted_tensor));
  m.impl("searchsorted.Tensor_out", TORCH_FN(searchsorted_out));
  m.impl("searchsorted.Scalar", TORCH_FN(searchsorted_scalar));
  m.impl("searchsorted.Scalar_out", TORCH_FN(searchsorted_scalar_out));
  m.impl("bucketize.Tensor", TORCH_FN(bucketize_tensor));
  m.impl("bucketize.Tensor_out", TORCH_FN(bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(bucketize_scalar));
  m.impl("isin.Tensor_Tensor", TORCH_FN(isin_tt));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(isin_tt_out));
  m.impl("isin.Tensor_Scalar", TORCH_FN(isin_ts));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(isin_ts_out));
  m.impl("isin.Scalar_Tensor", TORCH_FN(isin_st));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(isin_st_out));
  m.impl("histc", TORCH_FN(histc));
  m.impl("histc.out", TORCH_FN(histc_out));
  m.impl("histogram.bins_tensor", TORCH_FN(histogram_bins_tensor));
  m.impl("histogram.bin_ct", TORCH_FN(histogram_bin_ct));
  m.impl("_histogramdd_bin_edges", TORCH_FN(histogramdd_bin_edges));
  m.impl("_histogramdd_from_bin_cts", TORCH_FN(histogramdd_from_bin_cts));
  m.impl("_histogramdd_from_bin_tensors", TORCH_FN(histogramdd_from_bin_tensors));
  m.impl("_unique", TORCH_FN(unique1));
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("unique_dim", TORCH_FN(unique_dim));
  m.impl("unique_dim_consecutive", TORCH_FN(unique_dim_consecutive));
  m.impl("unique_consecutive", TORCH_FN(unique_consecutive));
}

}  // namespace tvk::aten
