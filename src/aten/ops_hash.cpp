// Native hash_tensor (functional and out=): the XOR reduction of mode 0 over the 64-bit
// patterns of the elements (src/kernels/hash.h), bit-exact with the CPU for every dtype the
// CPU's kernel takes (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32,
// float64). The result dtype is uint64, which vk stores (and copies) but computes nothing
// else with; the kernel writes its bits through an int64 view. Shapes, dim / keepdim handling
// and the errors for empty inputs come from PyTorch's meta function.
#include <ATen/ATen.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/ops/hash_tensor_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <vector>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/hash.h"

namespace tvk::aten {
namespace {

bool hashable(at::ScalarType t) {
  switch (t) {
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble:
      return true;
    default:
      return false;
  }
}

// The kept dims of `self` (output strides, input strides) and the reduced dims (input
// strides), fastest first, size-1 dims dropped (the kernel launcher merges contiguous ones).
kernels::ReduceGeometry hash_geometry(const at::Tensor& self, const DimMask& mask, bool keepdim,
                                      const at::Tensor& out, int64_t& reduced_numel) {
  kernels::ReduceGeometry g;
  reduced_numel = 1;
  int64_t out_dim = out.dim() - 1;
  for (int64_t d = self.dim() - 1; d >= 0; --d) {
    const int64_t size = self.size(d);
    if (mask[d]) {
      reduced_numel *= size;
      if (keepdim) --out_dim;
      if (size == 1) continue;
      TORCH_CHECK(g.reduced.ndim < kernels::kMaxDims, "torch-vk: hash_tensor over more than ",
                  kernels::kMaxDims, " reduced dimensions of size > 1 is not supported");
      g.reduced.sizes[g.reduced.ndim] = size;
      g.reduced.strides[1][g.reduced.ndim] = self.stride(d);
      ++g.reduced.ndim;
      continue;
    }
    const int64_t out_stride = out.stride(out_dim);
    --out_dim;
    if (size == 1) continue;
    TORCH_CHECK(g.out.ndim < kernels::kMaxDims, "torch-vk: hash_tensor keeping more than ",
                kernels::kMaxDims, " dimensions of size > 1 is not supported");
    g.out.sizes[g.out.ndim] = size;
    g.out.strides[0][g.out.ndim] = out_stride;
    g.out.strides[1][g.out.ndim] = self.stride(d);
    ++g.out.ndim;
  }
  return g;
}

void launch_hash(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode, const at::Tensor& out) {
  TORCH_CHECK(mode == 0, "Unknown hash_tensor mode: ", mode);
  const at::ScalarType type = self.scalar_type();
  if (!hashable(type)) raise_not_implemented_for("xor_sum_vk", type);
  if (out.numel() == 0) return;
  const char* name = "hash_tensor";
  const DimMask mask = at::native::make_dim_mask(dim, self.dim());
  int64_t reduced_numel = 0;
  const kernels::ReduceGeometry g = hash_geometry(self, mask, keepdim, out, reduced_numel);
  const kernels::Operand out_op = operand(out.view(at::kLong), name);
  kernels::Operand in_op{0, kernels::DType::Int64};
  if (reduced_numel > 0) in_op = operand(self, name);
  const int64_t scratch_numel = kernels::xor_hash_scratch(out.numel(), reduced_numel);
  at::Tensor scratch;
  kernels::Operand scratch_op{0, kernels::DType::Int64};
  if (scratch_numel > 0) {
    scratch = at::empty({scratch_numel}, out.options().dtype(at::kLong));
    scratch_op = operand(scratch, name);
  }
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::xor_hash(stream, out.numel(), reduced_numel, g, out_op, in_op, scratch_op); });
}

at::Tensor hash_tensor_vk(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode) {
  Structured<at::meta::structured_hash_tensor> s;
  s.meta(self, dim, keepdim, mode);
  launch_hash(self, dim, keepdim, mode, s.outs[0]);
  return s.outs[0];
}

at::Tensor& hash_tensor_out_vk(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode,
                               at::Tensor& out) {
  Structured<at::meta::structured_hash_tensor> s(out);
  s.meta(self, dim, keepdim, mode);
  launch_hash(self, dim, keepdim, mode, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("hash_tensor", TORCH_FN(hash_tensor_vk));
  m.impl("hash_tensor.out", TORCH_FN(hash_tensor_out_vk));
}

}  // namespace tvk::aten
