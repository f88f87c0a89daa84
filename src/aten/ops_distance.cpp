// Native pairwise distances: _cdist_forward / _cdist_backward and _pdist_forward /
// _pdist_backward (cdist, pdist and torch.nn.functional.pdist are PyTorch composites over them).
//
// Checks, batch broadcasting, empty-input rules and the choice of the matrix-multiplication
// path for p = 2 follow the CPU (Distance.cpp): with compute_mode 1, or 0 and more than 25 rows
// on either side, p = 2 goes through at::_euclidean_dist (matmul over native ops, the CPU's
// composite, so results agree to rounding); every other case runs the distance kernel, which
// computes the CPU's per-norm formulas (DistanceOpsKernel.cpp). float32 / float64, as the CPU's
// kernel (the matmul path also takes float16 / bfloat16, as on the CPU).
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/accumulate.h>
#include <torch/library.h>

#include <vector>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/distance.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;

ComputeKind kind_of(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
}

// The distance kernel's dtypes (the CPU's AT_DISPATCH_FLOATING_TYPES under `name`).
void check_kernel_dtype(const at::Tensor& t, const char* name) {
  if (t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble) raise_not_implemented_for(name, t.scalar_type());
  vk_dtype(t.scalar_type(), name);
}

bool use_matmul_path(double p, int64_t mode, int64_t r1, int64_t r2) {
  return p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)));
}

at::Tensor cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()), "cdist only supports floating-point dtypes, X1 got: ",
              x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()), "cdist only supports floating-point dtypes, X2 got: ",
              x2.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
  const int64_t c1 = x1.size(-1), r1 = x1.size(-2), r2 = x2.size(-2);
  // Batch dimensions broadcast and collapse to one.
  const std::vector<int64_t> batch =
      at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  const int64_t batch_product = c10::multiply_integers(batch);
  std::vector<int64_t> size1(batch), size2(batch), out_shape(batch);
  size1.insert(size1.end(), {r1, c1});
  size2.insert(size2.end(), {r2, c1});
  out_shape.insert(out_shape.end(), {r1, r2});
  if (r1 == 0 || r2 == 0 || batch_product == 0) return at::empty(out_shape, x1.options());
  if (c1 == 0) return at::zeros(out_shape, x1.options());
  const bool matmul = use_matmul_path(p, mode, r1, r2);
  if (!matmul) {
    check_kernel_dtype(x1, "cdist");
    TORCH_CHECK(x2.scalar_type() == x1.scalar_type(), "expected scalar type ", x1.scalar_type(), " but found ",
                x2.scalar_type());
  }
  const at::Tensor e1 = x1.expand(size1).contiguous().view({batch_product, r1, c1});
  const at::Tensor e2 = x2.expand(size2).contiguous().view({batch_product, r2, c1});
  if (matmul) {
    const at::Tensor dist = batch_product == 1 ? at::_euclidean_dist(x1, x2) : at::_euclidean_dist(e1, e2);
    return dist.view(out_shape);
  }
  at::Tensor out = at::empty(out_shape, x1.options());
  kernels::Distance d;
  d.kind = kind_of(x1);
  d.p = p;
  d.batch = batch_product;
  d.r1 = r1;
  d.r2 = r2;
  d.m = c1;
  const c10::DeviceGuard guard(x1.device());
  tvk::Stream& stream = current_stream(x1.device().index());
  translate_errors([&] {
    kernels::cdist_forward(stream, d, operand(e1, "cdist"), operand(e2, "cdist"), operand(out, "cdist"));
  });
  return out;
}

at::Tensor& cdist_forward_out(const at::Tensor& x1, const at::Tensor& x2, double p,
                              std::optional<int64_t> compute_mode, at::Tensor& out) {
  const at::Tensor r = cdist_forward(x1, x2, p, compute_mode);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

at::Tensor cdist_backward(const at::Tensor& grad, const at::Tensor& x1_in, const at::Tensor& x2_in, double p,
                          const at::Tensor& cdist) {
  const int64_t c1 = x1_in.size(-1), r1 = x1_in.size(-2), r2 = x2_in.size(-2);
  const std::vector<int64_t> batch =
      at::infer_size(x1_in.sizes().slice(0, x1_in.dim() - 2), x2_in.sizes().slice(0, x2_in.dim() - 2));
  const int64_t batch_product = c10::multiply_integers(batch);
  if (r1 == 0 || r2 == 0 || c1 == 0 || batch_product == 0) return at::zeros_like(x1_in);
  std::vector<int64_t> size1(batch), size2(batch);
  size1.insert(size1.end(), {r1, c1});
  size2.insert(size2.end(), {r2, c1});
  const at::Tensor x1 = x1_in.expand(size1).contiguous();
  const at::Tensor x2 = x2_in.expand(size2).contiguous();
  check_kernel_dtype(x1, "cdist_backward");
  TORCH_CHECK(x2.scalar_type() == x1.scalar_type() && grad.scalar_type() == x1.scalar_type() &&
                  cdist.scalar_type() == x1.scalar_type(),
              "_cdist_backward: expected grad, x1, x2 and cdist of one dtype");
  const at::Tensor grad_c = grad.contiguous();
  const at::Tensor dist_c = cdist.contiguous();
  TORCH_CHECK(grad_c.numel() == batch_product * r1 * r2 && dist_c.numel() == grad_c.numel(),
              "_cdist_backward: grad and cdist must have ", batch_product * r1 * r2, " elements");
  at::Tensor grad_x1 = at::empty({batch_product, r1, c1}, x1.options());
  kernels::Distance d;
  d.kind = kind_of(x1);
  d.p = p;
  d.batch = batch_product;
  d.r1 = r1;
  d.r2 = r2;
  d.m = c1;
  const char* name = "cdist_backward";
  const c10::DeviceGuard guard(x1.device());
  tvk::Stream& stream = current_stream(x1.device().index());
  translate_errors([&] {
    kernels::cdist_backward(stream, d, operand(grad_c, name), operand(x1, name), operand(x2, name),
                            operand(dist_c, name), operand(grad_x1, name));
  });
  // The gradient of the expanded x1: autograd reduces the broadcast batch dimensions.
  return grad_x1.view(x1.sizes());
}

at::Tensor& cdist_backward_out(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                               const at::Tensor& cdist, at::Tensor& out) {
  const at::Tensor r = cdist_backward(grad, x1, x2, p, cdist);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

at::Tensor pdist_forward(const at::Tensor& self, double p) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  const int64_t n = self.size(0);
  const int64_t m = self.size(1);
  check_kernel_dtype(self, "pdist");
  if (n <= 1) return at::empty({0}, self.options());
  at::Tensor out = at::empty({n * (n - 1) / 2}, self.options());
  if (m == 0) return out.zero_();
  kernels::Distance d;
  d.kind = kind_of(self);
  d.p = p;
  d.r1 = d.r2 = n;
  d.m = m;
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::pdist_forward(stream, d, operand(self, "pdist"), operand(out, "pdist")); });
  return out;
}

at::Tensor& pdist_forward_out(const at::Tensor& self, double p, at::Tensor& out) {
  const at::Tensor r = pdist_forward(self, p);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

at::Tensor pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p, const at::Tensor& pdist) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_backward requires self to be contiguous");
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  const char* name = "pdist_backward";
  check_kernel_dtype(self, name);
  at::Tensor result = at::empty_like(self, at::MemoryFormat::Contiguous);
  if (p == 0 || grad.numel() == 0 || self.numel() == 0) return result.zero_();
  const int64_t n = self.size(0);
  TORCH_CHECK(grad.numel() == n * (n - 1) / 2 && pdist.numel() == grad.numel(),
              "_pdist_backward: grad and pdist must have ", n * (n - 1) / 2, " elements");
  TORCH_CHECK(grad.scalar_type() == self.scalar_type() && pdist.scalar_type() == self.scalar_type(),
              "_pdist_backward: expected grad, self and pdist of one dtype");
  const at::Tensor grad_c = grad.contiguous();
  kernels::Distance d;
  d.kind = kind_of(self);
  d.p = p;
  d.r1 = d.r2 = n;
  d.m = self.size(1);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] {
    kernels::pdist_backward(stream, d, operand(grad_c, name), operand(self, name), operand(pdist, name),
                            operand(result, name));
  });
  return result;
}

at::Tensor& pdist_backward_out(const at::Tensor& grad, const at::Tensor& self, double p, const at::Tensor& pdist,
                               at::Tensor& out) {
  const at::Tensor r = pdist_backward(grad, self, p, pdist);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cdist_forward", TORCH_FN(cdist_forward));
  m.impl("_cdist_forward.out", TORCH_FN(cdist_forward_out));
  m.impl("_cdist_backward", TORCH_FN(cdist_backward));
  m.impl("_cdist_backward.out", TORCH_FN(cdist_backward_out));
  m.impl("_pdist_forward", TORCH_FN(pdist_forward));
  m.impl("_pdist_forward.out", TORCH_FN(pdist_forward_out));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward));
  m.impl("_pdist_backward.out", TORCH_FN(pdist_backward_out));
}

}  // namespace tvk::aten
