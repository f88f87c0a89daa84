// Native embedding helpers beyond the lookup itself (embedding is index_select, its backward
// embedding_dense_backward in ops_index.cpp):
//   embedding_renorm_  (F.embedding with max_norm): rescales, in place, every row of `self`
//                      that `indices` references and whose p-norm exceeds max_norm, by
//                      max_norm / (norm + 1e-7), as the CPU does.
//                      A composite of native vk ops: gather the referenced rows, compute their
//                      norms and scales, write the rescaled rows back. Gathering every row
//                      before writing any makes repeated indices harmless: each copy of a row
//                      computes the same result from the same original values, so the
//                      write-back stores identical data (the CPU renormalizes each unique row
//                      once).
//   embedding_bag      _embedding_bag_forward_only / _embedding_bag (sum / mean / max,
//                      per_sample_weights, padding_idx, include_last_offset): one
//                      src/kernels/segment.h forward call (an index check pass that also
//                      writes offset2bag when the CPU returns one, then one workgroup slice
//                      per bag); the four outputs have the CPU's shapes and values.
//                      Backward: _embedding_bag_backward (rebuilds an empty offset2bag, as the
//                      CPU does, then calls _embedding_bag_dense_backward), the dense backward
//                      (sum / mean: a per-row gather over the stably sorted indices, no atomics;
//                      max: a scatter_add of the gradient through max_indices, skipping empty
//                      bags) and _embedding_bag_per_sample_weights_backward (composite: row dot
//                      products of the gathered gradient and weight rows).
//                      Differences from the CPU: offsets[-1] > len(indices) is not checked on
//                      the host (the device clamps the bag ranges instead of reading past the
//                      indices); with include_last_offset the last bag ends at offsets[-1]
//                      (CUDA's reading; the CPU's slow path extends it to the end of the
//                      indices when offsets[-1] < len(indices)); scale_grad_by_freq divides by
//                      each index's own frequency (CUDA, and the documented meaning; the CPU's
//                      sum / mean backward reads the count of another index when the indices
//                      have different frequencies). sparse=True raises NotImplementedError.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "aten/vk_common.h"
#include "kernels/segment.h"

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

// ---------------------------------------------------------------- embedding_bag

using Tensor4 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
constexpr int64_t kModeSum = 0;
constexpr int64_t kModeMean = 1;
constexpr int64_t kModeMax = 2;

// The CPU's promoteIndicesAndOffsets: both become their promoted type.
std::pair<at::Tensor, at::Tensor> promote_indices_and_offsets(const at::Tensor& indices,
                                                              const at::Tensor& offsets) {
  const at::ScalarType common = at::promoteTypes(offsets.scalar_type(), indices.scalar_type());
  return {indices.scalar_type() == common ? indices : indices.to(common),
          offsets.scalar_type() == common ? offsets : offsets.to(common)};
}

kernels::ComputeKind float_kind(at::ScalarType t) {
  return t == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
}

// The CPU's check_arguments (aten/src/ATen/native/EmbeddingBag.cpp) without its host reads of
// offsets[0] / offsets[-1] (offsets[0] != 0 is reported by the kernel).
void check_bag_arguments(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                         int64_t mode, const at::Tensor& per_sample_weights, bool include_last_offset) {
  const at::TensorArg indices_arg(indices, "indices", 1);
  at::checkScalarTypes("embedding_bag", indices_arg, {at::kLong, at::kInt});
  const at::TensorArg offsets_arg(offsets, "offsets", 1);
  at::checkScalarTypes("embedding_bag", offsets_arg, {at::kLong, at::kInt});
  at::checkSameType("embedding_bag", indices_arg, offsets_arg);
  const at::TensorArg weight_arg(weight, "weight", 1);
  at::checkScalarTypes("embedding_bag", weight_arg, {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  if (per_sample_weights.defined()) {
    TORCH_CHECK(mode == kModeSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    const at::TensorArg psw_arg(per_sample_weights, "per_sample_weights", 1);
    at::checkSameType("embedding_bag", weight_arg, psw_arg);
    // The CPU's message-less TORCH_CHECKs, word for word.
    constexpr const char* kPlea =
        "  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)";
    TORCH_CHECK(per_sample_weights.dim() == 1,
                "Expected per_sample_weights.value().dim() == 1 to be true, but got false.", kPlea);
    TORCH_CHECK(per_sample_weights.numel() == indices.numel(),
                "Expected per_sample_weights.value().numel() == indices.numel() to be true, but got false.", kPlea);
  }
  if (include_last_offset)
    TORCH_CHECK(offsets.size(0) >= 1, "include_last_offset: number of offset should be at least 1");
}

// Whether the CPU takes its fast sum path, for which it returns an empty offset2bag.
bool cpu_fast_sum_path(const at::Tensor& weight, const at::Tensor& per_sample_weights, int64_t padding_idx) {
  const at::ScalarType t = weight.scalar_type();
  return (t == at::kFloat || t == at::kHalf || t == at::kBFloat16) && weight.stride(1) == 1 &&
         padding_idx < 0 && (!per_sample_weights.defined() || per_sample_weights.stride(0) == 1);
}

// offset2bag (the bag of every index) from the first min(num_bags, offsets.size(0)) offsets.
at::Tensor offset2bag_of(const at::Tensor& offsets, int64_t num_indices, int64_t num_bags) {
  at::Tensor offset2bag = at::empty({num_indices}, offsets.options());
  if (num_indices == 0) return offset2bag;
  tvk::Stream& stream = current_stream(offsets.device().index());
  translate_errors([&] {
    kernels::embedding_bag_offset2bag(stream, num_indices, std::min(num_bags, offsets.size(0)),
                                      operand(offsets, "embedding_bag"), operand(offset2bag, "embedding_bag"));
  });
  return offset2bag;
}

Tensor4 embedding_bag_impl(const at::Tensor& weight, const at::Tensor& indices_in, const at::Tensor& offsets_in,
                           int64_t mode, const c10::optional<at::Tensor>& per_sample_weights_opt,
                           bool include_last_offset, int64_t padding_idx, bool requires_grad) {
  const char* name = "embedding_bag";
  TORCH_CHECK(indices_in.dim() == 1 || indices_in.dim() == 2,
              "input has to be a 1D or 2D Tensor, but got Tensor of dimension ", indices_in.dim());
  if (indices_in.dim() == 1)
    TORCH_CHECK(offsets_in.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ",
                offsets_in.dim());
  TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  const at::Tensor per_sample_weights =
      per_sample_weights_opt.has_value() ? *per_sample_weights_opt : at::Tensor();
  auto [indices, offsets] = promote_indices_and_offsets(indices_in, offsets_in);
  check_bag_arguments(weight, indices, offsets, mode, per_sample_weights, include_last_offset);
  TORCH_CHECK(mode >= kModeSum && mode <= kModeMax, "`mode` must be sum, mean, or max.");
  const c10::DeviceGuard guard(weight.device());
  vk_dtype(weight.scalar_type(), name);
  indices = indices.reshape({-1}).contiguous();
  offsets = offsets.reshape({-1}).contiguous();
  const int64_t num_offsets = offsets.size(0);
  const int64_t num_bags = include_last_offset ? num_offsets - 1 : num_offsets;
  const int64_t dim = weight.size(1);
  const int64_t pad = (padding_idx >= 0 && padding_idx < weight.size(0)) ? padding_idx : -1;
  const at::TensorOptions index_options = offsets.options();

  at::Tensor output = at::empty({num_bags, dim}, weight.options());
  const bool fast_sum = mode == kModeSum && cpu_fast_sum_path(weight, per_sample_weights, padding_idx);
  at::Tensor offset2bag = at::empty({fast_sum ? 0 : indices.numel()}, index_options);
  at::Tensor bag_size;
  if (mode == kModeSum)  // the CPU's deterministic zeros
    bag_size = at::zeros(requires_grad ? at::IntArrayRef{num_bags} : offsets.sizes(), index_options);
  else
    bag_size = at::empty({num_bags}, index_options);
  at::Tensor max_indices = mode == kModeMax ? at::zeros({num_bags, dim}, index_options) : at::Tensor();

  kernels::EmbeddingBagForward p;
  p.mode = static_cast<kernels::BagMode>(mode);
  p.kind = float_kind(weight.scalar_type());
  p.num_weights = weight.size(0);
  p.dim = dim;
  p.weight_strides[0] = weight.stride(0);
  p.weight_strides[1] = weight.stride(1);
  p.num_indices = indices.numel();
  p.num_offsets = num_offsets;
  p.num_bags = num_bags;
  p.padding_idx = pad;
  if (weight.numel() > 0) p.weight = operand(weight, name);
  if (p.num_indices > 0) p.indices = operand(indices, name);
  if (num_offsets > 0) p.offsets = operand(offsets, name);
  at::Tensor psw;
  if (per_sample_weights.defined()) {
    psw = per_sample_weights.contiguous();
    if (psw.numel() > 0) p.per_sample_weights = operand(psw, name);
  }
  if (output.numel() > 0) p.out = operand(output, name);
  if (mode != kModeSum && num_bags > 0) p.bag_size = operand(bag_size, name);
  if (mode == kModeMax && output.numel() > 0) p.max_indices = operand(max_indices, name);
  if (offset2bag.numel() > 0) p.offset2bag = operand(offset2bag, name);
  if (num_bags > 0) {
    tvk::Stream& stream = current_stream(weight.device().index());
    translate_errors([&] { kernels::embedding_bag_forward(stream, p); });
  } else if (offset2bag.numel() > 0) {
    offset2bag.zero_();  // no bag to point at
  }
  if (mode != kModeMax) max_indices = bag_size.clone();
  return {std::move(output), std::move(offset2bag), std::move(bag_size), std::move(max_indices)};
}

Tensor4 embedding_bag_forward_only(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                                   bool /*scale_grad_by_freq*/, int64_t mode, bool /*sparse*/,
                                   const c10::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
                                   int64_t padding_idx) {
  return embedding_bag_impl(weight, indices, offsets, mode, per_sample_weights, include_last_offset,
                            padding_idx, /*requires_grad=*/false);
}

Tensor4 embedding_bag(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                      bool /*scale_grad_by_freq*/, int64_t mode, bool /*sparse*/,
                      const c10::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
                      int64_t padding_idx) {
  return embedding_bag_impl(weight, indices, offsets, mode, per_sample_weights, include_last_offset,
                            padding_idx, /*requires_grad=*/true);
}

// The CPU's _embedding_bag_backward: checks, an offset2bag when the forward returned none
// (its fast sum path), then the dense backward (sparse gradients are not supported here).
at::Tensor embedding_bag_backward(const at::Tensor& grad, const at::Tensor& indices_in, const at::Tensor& offsets_in,
                                  const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                  const at::Tensor& max_indices, int64_t num_weights, bool scale_grad_by_freq,
                                  int64_t mode, bool sparse, const c10::optional<at::Tensor>& per_sample_weights,
                                  int64_t padding_idx) {
  TORCH_CHECK_NOT_IMPLEMENTED(!sparse,
                              "torch-vk: embedding_bag with sparse=True (sparse gradients) is not supported "
                              "on the vk device; use sparse=False");
  auto [indices, offsets] = promote_indices_and_offsets(indices_in, offsets_in);
  const at::TensorArg indices_arg(indices, "indices", 1);
  at::checkScalarTypes("embedding_bag", indices_arg, {at::kLong, at::kInt});
  at::checkContiguous("embedding_bag", indices_arg);
  const at::TensorArg offsets_arg(offsets, "offsets", 1);
  at::checkScalarTypes("embedding_bag", offsets_arg, {at::kLong, at::kInt});
  at::checkSameType("embedding_bag", indices_arg, offsets_arg);
  at::checkContiguous("embedding_bag", offsets_arg);
  const c10::DeviceGuard guard(grad.device());
  at::Tensor offset2bag_ = offset2bag;
  if (indices.numel() != 0 && offset2bag.numel() == 0) {
    offset2bag_ = offset2bag_of(offsets, indices.numel(), grad.size(0));
  } else {
    const at::TensorArg offset2bag_arg(offset2bag, "offset2bag", 1);
    at::checkScalarTypes("embedding_bag", offset2bag_arg, {at::kLong, at::kInt});
    at::checkContiguous("embedding_bag", offset2bag_arg);
  }
  return at::_embedding_bag_dense_backward(grad, indices, offset2bag_, bag_size, max_indices, num_weights,
                                           scale_grad_by_freq, mode, per_sample_weights, padding_idx);
}

at::Tensor embedding_bag_dense_backward(const at::Tensor& grad_in, const at::Tensor& indices,
                                        const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                        const at::Tensor& max_indices, int64_t num_weights,
                                        bool scale_grad_by_freq, int64_t mode,
                                        const c10::optional<at::Tensor>& per_sample_weights_opt,
                                        int64_t padding_idx) {
  const char* name = "_embedding_bag_dense_backward";
  const at::Tensor grad = grad_in.contiguous();
  const at::TensorArg grad_arg(grad, "grad_", 1);
  at::checkScalarTypes("embedding_bag", grad_arg, {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  TORCH_CHECK(grad.dim() == 2, "embedding_bag: expected a 2-D gradient, got ", grad.dim(), " dims");
  const c10::DeviceGuard guard(grad.device());
  vk_dtype(grad.scalar_type(), name);
  const int64_t dim = grad.size(1);
  at::Tensor grad_weight = at::zeros({num_weights, dim}, grad.options());

  if (mode == kModeMax) {
    // grad_weight[max_indices[b, d], d] += grad[b, d] over the non-empty bags (the CPU's
    // index_add_ per column); empty bags add nothing.
    TORCH_CHECK(max_indices.defined(), "embedding_bag: the max mode needs max_indices");
    if (grad.numel() == 0 || num_weights == 0) return grad_weight;
    const at::Tensor nonempty = (bag_size != 0).reshape({-1, 1});
    const at::Tensor src = at::where(nonempty, grad, at::zeros({}, grad.options()));
    grad_weight.scatter_add_(0, max_indices.to(at::kLong).expand_as(grad), src);
    return grad_weight;
  }
  TORCH_CHECK(mode == kModeSum || mode == kModeMean, "`mode` must be sum, mean, or max.");
  if (indices.numel() == 0 || dim == 0 || num_weights == 0) return grad_weight;

  const at::Tensor flat = indices.reshape({-1});
  auto [sorted, permutation] = at::sort(flat, /*stable=*/true, 0, /*descending=*/false);
  const at::Tensor o2b = offset2bag.reshape({-1}).contiguous();
  TORCH_CHECK(o2b.numel() == flat.numel(), "embedding_bag: offset2bag must have one entry per index");
  at::Tensor sizes;
  if (mode == kModeMean) {
    sizes = bag_size.to(o2b.scalar_type()).contiguous();
    TORCH_CHECK(sizes.numel() == grad.size(0), "embedding_bag: bag_size must have one entry per bag");
  }
  at::Tensor psw;
  if (per_sample_weights_opt.has_value() && per_sample_weights_opt->defined())
    psw = per_sample_weights_opt->to(grad.scalar_type()).contiguous();

  kernels::EmbeddingBagBackward p;
  p.mean = mode == kModeMean;
  p.scale_grad_by_freq = scale_grad_by_freq;
  p.kind = float_kind(grad.scalar_type());
  p.num_weights = num_weights;
  p.dim = dim;
  p.num_indices = flat.numel();
  p.num_bags = grad.size(0);
  p.padding_idx = (padding_idx >= 0 && padding_idx < num_weights) ? padding_idx : -1;
  p.grad = operand(grad, name);
  p.sorted_indices = operand(sorted, name);
  p.permutation = operand(permutation, name);
  p.offset2bag = operand(o2b, name);
  if (p.mean && sizes.numel() > 0) p.bag_size = operand(sizes, name);
  if (psw.defined() && psw.numel() > 0) p.per_sample_weights = operand(psw, name);
  p.grad_weight = operand(grad_weight, name);
  tvk::Stream& stream = current_stream(grad.device().index());
  translate_errors([&] { kernels::embedding_bag_backward(stream, p); });
  return grad_weight;
}

// d out[bag(i)] / d psw[i] = <grad[bag(i)], weight[indices[i]]> (0 for padding entries),
// composed from native gathers in the float math of the dtype.
at::Tensor embedding_bag_per_sample_weights_backward(const at::Tensor& grad, const at::Tensor& weight,
                                                     const at::Tensor& indices_in, const at::Tensor& offsets_in,
                                                     const at::Tensor& offset2bag, int64_t mode,
                                                     int64_t padding_idx) {
  TORCH_CHECK(mode == kModeSum, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  TORCH_CHECK(grad.dim() == 2 && weight.dim() == 2 && weight.size(1) == grad.size(1),
              "embedding_bag_backward: expected 2-D grad and weight with the same embedding dim");
  auto [indices, offsets] = promote_indices_and_offsets(indices_in, offsets_in);
  const at::TensorArg indices_arg(indices, "indices", 1);
  at::checkScalarTypes("embedding_bag", indices_arg, {at::kLong, at::kInt});
  at::checkContiguous("embedding_bag", indices_arg);
  TORCH_CHECK(indices.dim() == 1, "embedding_bag_backward: expected 1-D indices");
  const c10::DeviceGuard guard(grad.device());
  const int64_t n = indices.size(0);
  if (n == 0) return at::zeros({0}, grad.options());
  at::Tensor o2b = offset2bag;
  if (offset2bag.numel() == 0) {
    o2b = offset2bag_of(offsets.reshape({-1}).contiguous(), n, grad.size(0));
  } else {
    const at::TensorArg offset2bag_arg(offset2bag, "offset2bag", 1);
    at::checkScalarTypes("embedding_bag", offset2bag_arg, {at::kLong, at::kInt});
    at::checkContiguous("embedding_bag", offset2bag_arg);
  }
  const at::ScalarType math = grad.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor idx = indices.to(at::kLong);
  const at::Tensor is_pad =
      padding_idx >= 0 ? idx.eq(padding_idx) : at::zeros(idx.sizes(), idx.options().dtype(at::kBool));
  const at::Tensor rows =
      weight.index_select(0, at::where(is_pad, at::zeros({}, idx.options()), idx)).to(math);
  const at::Tensor grads = grad.index_select(0, o2b.to(at::kLong)).to(math);
  const at::Tensor dots = (rows * grads).sum(1);
  return at::where(is_pad, at::zeros({}, dots.options()), dots).to(grad.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("embedding_renorm_", TORCH_FN(embedding_renorm_));
  m.impl("_embedding_bag_forward_only", TORCH_FN(embedding_bag_forward_only));
  m.impl("_embedding_bag", TORCH_FN(embedding_bag));
  m.impl("_embedding_bag_backward", TORCH_FN(embedding_bag_backward));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(embedding_bag_per_sample_weights_backward));
}

}  // namespace tvk::aten
