// Native embedding helpers beyond the lookup itself (embedding is index_select, its backward
// embedding_dense_backward in ops_index.cpp):
//   embedding_renorm_  (F.embedding with max_norm): rescales, in place, every row of `self`
//                      that `indices` references and whose p-norm exceeds max_norm, by
//                      max_norm / (norm + 1e-7), as the CPU does.
// A composite of native vk ops: gather the referenced rows, compute their norms and scales,
// write the rescaled rows back. Gathering every row before writing any makes repeated indices
// harmless: each copy of a row computes the same result from the same original values, so
// the write-back stores identical data (the CPU renormalizes each unique row once).
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

at::Tensor& embedding_renorm_(at::Tensor& self, const at::Tensor& indices, double max_norm,
                              double norm_type) {
  // The CPU's argument checks (aten/src/ATen/native/Embedding.cpp, embedding_renorm_cpu_).
  const at::TensorArg self_arg(self, "self", 1);
  const at::TensorArg indices_arg(indices, "indices", 2);
  at::checkDim("embedding_renorm_", self_arg, 2);
  at::checkScalarTypes("embedding_renorm_", indices_arg, {at::kLong, at::kInt});
  if (indices.numel() == 0 || self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  // The CPU selects self[index]: negative indices count from the end. An index still out of
  // range is reported on the device by index_select (IndexError, as the CPU's select()).
  at::Tensor idx = indices.reshape({-1}).to(at::kLong);
  idx = at::where(idx < 0, idx + self.size(0), idx);
  const at::Tensor rows = self.index_select(0, idx);
  // row.norm(p) in the row's dtype, compared with max_norm and turned into a scale in the
  // float math of that dtype (float64 rows: double).
  const at::ScalarType math = self.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor norms =
      at::linalg_vector_norm(rows, norm_type, at::IntArrayRef{1}, /*keepdim=*/true).to(math);
  const at::Tensor scale = at::where(norms > max_norm,
                                     at::full_like(norms, max_norm).div_(norms + 1e-7),
                                     at::ones_like(norms));
  const at::Tensor renormed = (rows.to(math) * scale).to(self.scalar_type());
  self.index_copy_(0, idx, renormed);
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("embedding_renorm_", TORCH_FN(embedding_renorm_));
}

}  // namespace tvk::aten
