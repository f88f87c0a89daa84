// Native igamma / igammac (torch.igamma / igammac, torch.special.gammainc / gammaincc):
// functional, in-place and out=. The iterator is built like the CPU's structured kernel
// (binary_op: type promotion, broadcasting, out= resizing), integral common dtypes raise the
// CPU kernel's "not implemented" error, and the kernel (src/kernels/incomplete_gamma.h) runs
// the CPU's algorithm. The derivative wrt x comes from PyTorch's formula over native ops; the
// one wrt a is not implemented on any device (same autograd error as the CPU).
#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/incomplete_gamma.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;
using kernels::IncompleteGammaOp;

// Records the kernel over `iter` (operands: out, a, x), splitting iterators beyond 32-bit
// offsets. CPU scalar operands (wrapped Python numbers) are passed by value in the compute type.
void launch(at::TensorIteratorBase& iter, IncompleteGammaOp op, ComputeKind kind, const char* name) {
  if (iter.numel() == 0) return;
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub : iter.with_32bit_indexing()) launch(sub, op, kind, name);
    return;
  }
  TORCH_CHECK(iter.ndim() <= kernels::kMaxDims, "torch-vk: ", name, " on a tensor with ", iter.ndim(),
              " non-collapsible dimensions is not supported (at most ", kernels::kMaxDims, ")");
  tvk::Stream& stream = current_stream(iter.device(0).index());
  kernels::IncompleteGamma p;
  p.op = op;
  p.kind = kind;
  p.numel = iter.numel();
  p.geometry.ndim = static_cast<int32_t>(iter.ndim());
  const auto shape = iter.shape();
  for (int d = 0; d < iter.ndim(); ++d) p.geometry.sizes[d] = shape[d];
  kernels::Operand* operands[3] = {&p.out, &p.a, &p.x};
  for (int i = 0; i < 3; ++i) {
    const at::ScalarType dtype = iter.dtype(i);
    if (iter.is_cpu_scalar(i)) {
      for (int d = 0; d < iter.ndim(); ++d) p.geometry.strides[i][d] = 0;
      if (kind == ComputeKind::Float64) {
        const double v = iter.scalar_value<double>(i);
        *operands[i] = {stream.upload_params(&v, sizeof v), kernels::DType::Float64};
      } else {
        const float v = static_cast<float>(iter.scalar_value<double>(i));
        *operands[i] = {stream.upload_params(&v, sizeof v), kernels::DType::Float32};
      }
      continue;
    }
    operands[i]->dtype = vk_dtype(dtype, name);
    operands[i]->address = reinterpret_cast<uint64_t>(iter.data_ptr(i));
    const int64_t element_size = static_cast<int64_t>(c10::elementSize(dtype));
    const auto strides = iter.strides(i);
    for (int d = 0; d < iter.ndim(); ++d) p.geometry.strides[i][d] = strides[d] / element_size;
  }
  translate_errors([&] { kernels::incomplete_gamma(stream, p); });
}

at::Tensor& run(IncompleteGammaOp op, at::Tensor& out, const at::Tensor& a, const at::Tensor& x) {
  const char* cpu_name = op == IncompleteGammaOp::Lower ? "igamma_cpu" : "igammac_cpu";
  auto iter = at::TensorIterator::binary_op(out, a, x);
  const at::ScalarType dtype = iter.common_dtype();
  if (!at::isFloatingType(dtype)) raise_not_implemented_for(cpu_name, dtype);
  launch(iter, op, compute_kind_for(iter, dtype), op == IncompleteGammaOp::Lower ? "igamma" : "igammac");
  if (!out.defined()) out = iter.output();
  return out;
}

at::Tensor igamma(const at::Tensor& a, const at::Tensor& x) {
  at::Tensor out;
  return run(IncompleteGammaOp::Lower, out, a, x);
}
at::Tensor& igamma_(at::Tensor& a, const at::Tensor& x) { return run(IncompleteGammaOp::Lower, a, a, x); }
at::Tensor& igamma_out(const at::Tensor& a, const at::Tensor& x, at::Tensor& out) {
  return run(IncompleteGammaOp::Lower, out, a, x);
}
at::Tensor igammac(const at::Tensor& a, const at::Tensor& x) {
  at::Tensor out;
  return run(IncompleteGammaOp::Upper, out, a, x);
}
at::Tensor& igammac_(at::Tensor& a, const at::Tensor& x) { return run(IncompleteGammaOp::Upper, a, a, x); }
at::Tensor& igammac_out(const at::Tensor& a, const at::Tensor& x, at::Tensor& out) {
  return run(IncompleteGammaOp::Upper, out, a, x);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("igamma", TORCH_FN(igamma));
  m.impl("igamma_", TORCH_FN(igamma_));
  m.impl("igamma.out", TORCH_FN(igamma_out));
  m.impl("igammac", TORCH_FN(igammac));
  m.impl("igammac_", TORCH_FN(igammac_));
  m.impl("igammac.out", TORCH_FN(igammac_out));
}

}  // namespace tvk::aten
