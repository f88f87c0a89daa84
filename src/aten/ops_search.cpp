// Native scan and search ops beyond cumsum / cumprod (those live in ops_softmax.cpp):
//   _cummax_helper / _cummin_helper (torch.cummax / cummin; PyTorch's cummax_out does the
//   out= checks, resizing, 0-dim and empty cases and wraps dim before it calls the helper),
//   _logcumsumexp (functional and out=),
//   searchsorted (Tensor / Scalar, functional and out=), bucketize (Tensor / Scalar, out=),
//   isin (Tensor_Tensor / Tensor_Scalar / Scalar_Tensor, functional and out=),
//   histc (functional and out=).
// The scans run the scan kernel (src/kernels/scan.h) over a contiguous [outer, dim, inner]
// view; the searches run one binary search per output element (src/kernels/search.h): isin
// sorts the test elements first (src/kernels/sort.h via at::sort) and searches them; histc
// counts with integer atomics. Shape, dtype and error checks repeat the CPU's (same
// exception types and messages; PyTorch's own check helpers where the headers have them).
#include <ATen/ATen.h>
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/isin_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
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
// The CPU's histogram_histc_out: output checks and resize (dtype of the input, bins > 0),
// the range (min == max: the input's aminmax, read back like on the CPU and CUDA; an empty
// range widened by 1 on both sides; a range that is not finite or not increasing raises),
// then counts per bin (float dtypes only, the CPU's dispatch names in the errors).
at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, at::Tensor& hist) {
  TORCH_CHECK(self.dtype() == hist.dtype(), "torch.histogram: input tensor and hist tensor should",
              " have the same dtype, but got input ", self.dtype(), " and hist ", hist.dtype());
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension ", 0);
  at::native::resize_output(hist, {bins});
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
  if (self.scalar_type() == at::kBool) raise_not_implemented_for("linspace_cpu", at::kBool);
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
}

}  // namespace tvk::aten
