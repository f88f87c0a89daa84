// Native ops along one dim: the softmax family (_softmax, _log_softmax and their backward ops,
// functional and out=), logsumexp, and the scans cumprod / cumsum. Shapes, dtypes and dim
// checks come from PyTorch's meta functions; the softmax and scan kernels work on contiguous
// [outer, dim, inner] views (non-contiguous operands are made contiguous, as CUDA does), see
// src/kernels/softmax.h and src/kernels/scan.h.
#include <ATen/ATen.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/ops/_log_softmax_backward_data_meta.h>
#include <ATen/ops/_log_softmax_meta.h>
#include <ATen/ops/_softmax_backward_data_meta.h>
#include <ATen/ops/_softmax_meta.h>
#include <ATen/ops/cumprod_meta.h>
#include <ATen/ops/cumsum_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/complex_storage.h"
#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/scan.h"
#include "kernels/softmax.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;
using kernels::SoftmaxOp;

void check_float(const at::Tensor& t, const char* name) {
  if (!at::isFloatingType(t.scalar_type())) raise_not_implemented_for(name, t.scalar_type());
  vk_dtype(t.scalar_type(), name);
}

// Runs `op` with `out` of the input's shape (any strides: a contiguous temporary is used and
// copied back when `out` is not contiguous).
void launch_softmax(SoftmaxOp op, const at::Tensor& in, const at::Tensor& in2, int64_t dim,
                    const at::Tensor& out, const char* name) {
  if (out.numel() == 0) return;
  const at::Tensor a = in.contiguous();
  const at::Tensor b = in2.defined() ? in2.contiguous() : at::Tensor();
  const bool direct = out.is_contiguous();
  const at::Tensor dst = direct ? out : at::empty(out.sizes(), out.options());
  kernels::Softmax p;
  p.op = op;
  const bool f64 = a.scalar_type() == at::kDouble || out.scalar_type() == at::kDouble ||
                   (b.defined() && b.scalar_type() == at::kDouble);
  p.kind = f64 ? ComputeKind::Float64 : ComputeKind::Float32;
  if (a.dim() > 0) {
    dim = at::maybe_wrap_dim(dim, a.dim());
    p.dim = a.size(dim);
    for (int64_t d = 0; d < dim; ++d) p.outer *= a.size(d);
    for (int64_t d = dim + 1; d < a.dim(); ++d) p.inner *= a.size(d);
  }
  p.out = operand(dst, name);
  p.in = operand(a, name);
  if (b.defined()) p.in2 = operand(b, name);
  const c10::DeviceGuard guard(in.device());
  tvk::Stream& stream = current_stream(in.device().index());
  translate_errors([&] { kernels::softmax(stream, p); });
  if (!direct) out.copy_(dst);
}

template <class Meta>
at::Tensor forward(const at::Tensor& self, int64_t dim, bool half_to_float, SoftmaxOp op,
                   const char* name) {
  Structured<Meta> s;
  s.meta(self, dim, half_to_float);
  check_float(self, name);
  launch_softmax(op, self, at::Tensor(), dim, s.outs[0], name);
  return s.outs[0];
}

template <class Meta>
at::Tensor& forward_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out,
                        SoftmaxOp op, const char* name) {
  Structured<Meta> s(out);
  s.meta(self, dim, half_to_float);
  check_float(self, name);
  launch_softmax(op, self, at::Tensor(), dim, out, name);
  return out;
}

template <class Meta>
at::Tensor backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                    at::ScalarType input_dtype, SoftmaxOp op, const char* name) {
  Structured<Meta> s;
  s.meta(grad, output, dim, input_dtype);
  check_float(grad, name);
  launch_softmax(op, grad, output, dim, s.outs[0], name);
  return s.outs[0];
}

template <class Meta>
at::Tensor& backward_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                         at::ScalarType input_dtype, at::Tensor& out, SoftmaxOp op, const char* name) {
  Structured<Meta> s(out);
  s.meta(grad, output, dim, input_dtype);
  check_float(grad, name);
  launch_softmax(op, grad, output, dim, out, name);
  return out;
}

at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return forward<at::meta::structured__softmax>(self, dim, half_to_float, SoftmaxOp::Softmax,
                                                "softmax_kernel_impl");
}
at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  return forward_out<at::meta::structured__softmax>(self, dim, half_to_float, out,
                                                    SoftmaxOp::Softmax, "softmax_kernel_impl");
}
at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return forward<at::meta::structured__log_softmax>(self, dim, half_to_float,
                                                    SoftmaxOp::LogSoftmax, "log_softmax_kernel_impl");
}
at::Tensor& log_softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  return forward_out<at::meta::structured__log_softmax>(self, dim, half_to_float, out,
                                                        SoftmaxOp::LogSoftmax, "log_softmax_kernel_impl");
}
at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                            at::ScalarType input_dtype) {
  return backward<at::meta::structured__softmax_backward_data>(
      grad, output, dim, input_dtype, SoftmaxOp::SoftmaxBackward, "softmax_backward_data");
}
at::Tensor& softmax_backward_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                 at::ScalarType input_dtype, at::Tensor& out) {
  return backward_out<at::meta::structured__softmax_backward_data>(
      grad, output, dim, input_dtype, out, SoftmaxOp::SoftmaxBackward, "softmax_backward_data");
}
at::Tensor log_softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                at::ScalarType input_dtype) {
  return backward<at::meta::structured__log_softmax_backward_data>(
      grad, output, dim, input_dtype, SoftmaxOp::LogSoftmaxBackward, "log_softmax_backward_data");
}
at::Tensor& log_softmax_backward_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                     at::ScalarType input_dtype, at::Tensor& out) {
  return backward_out<at::meta::structured__log_softmax_backward_data>(
      grad, output, dim, input_dtype, out, SoftmaxOp::LogSoftmaxBackward,
      "log_softmax_backward_data");
}

// ---------------------------------------------------------------- logsumexp

// max + log(sum(exp(x - max))) with the max replaced by 0 where it is infinite (as the CPU
// does): pass 1 writes the max (accumulator dtype, laid out like `out`), pass 2 the rest.
at::Tensor& logsumexp_out(const at::Tensor& self, at::IntArrayRef dims, bool keepdim, at::Tensor& out) {
  TORCH_CHECK(at::isFloatingType(out.scalar_type()),
              "logsumexp(): Expected floating point type for result tensor, but got: ",
              out.scalar_type());
  TORCH_CHECK(out.device() == self.device(), "Expected out tensor to be on device ", self.device(),
              " but got ", out.device());
  vk_dtype(self.scalar_type(), "logsumexp");
  const DimMask mask = at::native::make_dim_mask(dims, self.dim());
  at::native::resize_output(out, at::native::shape_from_dim_mask(self, mask, keepdim));
  if (out.numel() == 0) return out;
  const ComputeKind acc = reduce_acc_kind(self.scalar_type(), out.scalar_type()) == ComputeKind::Float64
                              ? ComputeKind::Float64
                              : ComputeKind::Float32;
  const at::Tensor center = at::empty_strided(
      out.sizes(), out.strides(),
      out.options().dtype(acc == ComputeKind::Float64 ? at::kDouble : at::kFloat));
  // Integer inputs: the kernels read them as float (the CPU converts to the default dtype).
  launch_reduce(self, mask, keepdim, center, kernels::ReduceOp::Max, acc, 1.0, {}, "logsumexp");
  kernels::ReduceExtra extra;
  extra.pre = kernels::ReducePre::ExpDeviation;
  extra.post = kernels::ReducePost::LogPlusCenter;
  extra.center = reinterpret_cast<uint64_t>(center.data_ptr());
  launch_reduce(self, mask, keepdim, out, kernels::ReduceOp::Sum, acc, 1.0, extra, "logsumexp");
  return out;
}

at::Tensor logsumexp(const at::Tensor& self, at::IntArrayRef dims, bool keepdim) {
  const at::ScalarType dtype = at::isIntegralType(self.scalar_type(), /*includeBool=*/true)
                                   ? at::typeMetaToScalarType(c10::get_default_dtype())
                                   : self.scalar_type();
  at::Tensor out = at::empty({0}, self.options().dtype(dtype));
  return logsumexp_out(self, dims, keepdim, out);
}

// ---------------------------------------------------------------- cumsum / cumprod

// Like the CPU: the input is first converted to the output dtype (cumsum(x, dtype=...)), then
// scanned with fp32 (float16 / bfloat16 / float32), fp64 or int64 accumulation.
void launch_scan(kernels::ScanOp op, const at::Tensor& self, int64_t dim, const at::Tensor& out,
                 const char* name) {
  if (out.numel() == 0) return;
  if (out.is_complex()) return complex_scan(op == kernels::ScanOp::Prod, self, dim, out);
  vk_dtype(self.scalar_type(), name);
  // The CPU's scan kernels have no bool variant (its 0-dim case is a fill).
  if (out.scalar_type() == at::kBool && self.dim() > 0)
    raise_not_implemented_for(op == kernels::ScanOp::Prod ? "cumprod_out_cpu" : "cumsum_out_cpu", at::kBool);
  const at::Tensor a = (self.scalar_type() == out.scalar_type() ? self : self.to(out.scalar_type())).contiguous();
  const bool direct = out.is_contiguous();
  const at::Tensor dst = direct ? out : at::empty(out.sizes(), out.options());
  kernels::Scan p;
  p.op = op;
  p.acc = reduce_acc_kind(a.scalar_type(), out.scalar_type());
  if (a.dim() > 0) {
    dim = at::maybe_wrap_dim(dim, a.dim());
    p.dim = a.size(dim);
    for (int64_t d = 0; d < dim; ++d) p.outer *= a.size(d);
    for (int64_t d = dim + 1; d < a.dim(); ++d) p.inner *= a.size(d);
  }
  p.out = operand(dst, name);
  p.in = operand(a, name);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::scan(stream, p); });
  if (!direct) out.copy_(dst);
}

template <class Meta>
at::Tensor scan_op(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                   kernels::ScanOp op, const char* name) {
  Structured<Meta> s;
  s.meta(self, dim, dtype);
  launch_scan(op, self, dim, s.outs[0], name);
  return s.outs[0];
}

template <class Meta>
at::Tensor& scan_op_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                        at::Tensor& out, kernels::ScanOp op, const char* name) {
  Structured<Meta> s(out);
  s.meta(self, dim, dtype);
  launch_scan(op, self, dim, out, name);
  return out;
}

at::Tensor cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return scan_op<at::meta::structured_cumsum>(self, dim, dtype, kernels::ScanOp::Sum, "cumsum");
}
at::Tensor& cumsum_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                       at::Tensor& out) {
  return scan_op_out<at::meta::structured_cumsum>(self, dim, dtype, out, kernels::ScanOp::Sum,
                                                  "cumsum");
}
at::Tensor cumprod(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return scan_op<at::meta::structured_cumprod>(self, dim, dtype, kernels::ScanOp::Prod, "cumprod");
}
at::Tensor& cumprod_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                        at::Tensor& out) {
  return scan_op_out<at::meta::structured_cumprod>(self, dim, dtype, out, kernels::ScanOp::Prod,
                                                   "cumprod");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_softmax", TORCH_FN(softmax));
  m.impl("_softmax.out", TORCH_FN(softmax_out));
  m.impl("_log_softmax", TORCH_FN(log_softmax));
  m.impl("_log_softmax.out", TORCH_FN(log_softmax_out));
  m.impl("_softmax_backward_data", TORCH_FN(softmax_backward));
  m.impl("_softmax_backward_data.out", TORCH_FN(softmax_backward_out));
  m.impl("_log_softmax_backward_data", TORCH_FN(log_softmax_backward));
  m.impl("_log_softmax_backward_data.out", TORCH_FN(log_softmax_backward_out));
  m.impl("logsumexp", TORCH_FN(logsumexp));
  m.impl("logsumexp.out", TORCH_FN(logsumexp_out));
  m.impl("cumprod", TORCH_FN(cumprod));
  m.impl("cumprod.out", TORCH_FN(cumprod_out));
  m.impl("cumsum", TORCH_FN(cumsum));
  m.impl("cumsum.out", TORCH_FN(cumsum_out));
}

}  // namespace tvk::aten
