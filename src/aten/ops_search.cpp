// Native scan and search ops beyond cumsum / cumprod (those live in ops_softmax.cpp):
//   _cummax_helper / _cummin_helper (torch.cummax / cummin; PyTorch's cummax_out does the
//   out= checks, resizing, 0-dim and empty cases and wraps dim before it calls the helper),
//   _logcumsumexp (functional and out=),
//   searchsorted (Tensor / Scalar, functional and out=) and bucketize (Tensor / Scalar, out=).
// The scans run the scan kernel (src/kernels/scan.h) over a contiguous [outer, dim, inner]
// view; the searches run one binary search per output element (src/kernels/search.h).
// Shape, dtype and error checks repeat the CPU's (same exception types and messages).
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/scan.h"

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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cummax_helper", TORCH_FN(cummax_helper));
  m.impl("_cummin_helper", TORCH_FN(cummin_helper));
  m.impl("_logcumsumexp", TORCH_FN(logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(logcumsumexp_out));
}

}  // namespace tvk::aten
