// Native loss ops: nll_loss_forward / backward, nll_loss2d_forward / backward, mse_loss,
// smooth_l1_loss, huber_loss, binary_cross_entropy (+ their backward ops) and
// binary_cross_entropy_with_logits, multi_margin_loss, multilabel_margin_loss_forward and
// _ctc_loss (+ their backward ops). cross_entropy (log_softmax + nll_loss, soft targets,
// label smoothing), l1_loss and kl_div are PyTorch composites over native ops.
//
// The element-wise terms run in one kernel over an at::TensorIterator (broadcasting, dtype
// checks and error messages as the CPU's); mean / sum reductions use the reduce kernels
// (at::mean / at::sum on the device), as the CPU's apply_loss_reduction does.
#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/nll_loss_backward_meta.h>
#include <ATen/ops/nll_loss_forward_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/loss.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;
using kernels::LossOp;

at::Tensor apply_reduction(const at::Tensor& loss, int64_t reduction) {
  if (reduction == at::Reduction::Mean) return loss.mean();
  if (reduction == at::Reduction::Sum) return loss.sum();
  return loss;
}

// Runs `op` over a built iterator (operand 0 = output). `present[k]` false: input k is absent
// (the kernel does not read it; a dummy operand fills the slot).
void launch_loss(at::TensorIteratorBase& iter, LossOp op, const char* name, double param = 0,
                 double norm = 1, bool has_weight = false, bool has_pos_weight = false,
                 int dummy_slots = 0) {
  if (iter.numel() == 0) return;
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub : iter.with_32bit_indexing())
      launch_loss(sub, op, name, param, norm, has_weight, has_pos_weight, dummy_slots);
    return;
  }
  TORCH_CHECK(iter.ndim() <= kernels::kMaxDims, "torch-vk: ", name, " on a tensor with ", iter.ndim(),
              " non-collapsible dimensions is not supported (at most ", kernels::kMaxDims, ")");
  const at::ScalarType common = iter.common_dtype();
  if (!at::isFloatingType(common)) raise_not_implemented_for(name, common);
  kernels::LossElementwise p;
  p.op = op;
  bool f64 = false;
  for (int k = 0; k < iter.ntensors(); ++k) f64 |= iter.dtype(k) == at::kDouble;
  p.kind = f64 ? ComputeKind::Float64 : ComputeKind::Float32;
  p.numel = iter.numel();
  p.geometry.ndim = static_cast<int32_t>(iter.ndim());
  const auto shape = iter.shape();
  for (int d = 0; d < iter.ndim(); ++d) p.geometry.sizes[d] = shape[d];
  const int n = static_cast<int>(iter.ntensors());
  for (int k = 0; k < n; ++k) {
    p.operands[k] = kernels::Operand{reinterpret_cast<uint64_t>(iter.data_ptr(k)),
                                     vk_dtype(iter.dtype(k), name)};
    const int64_t size = static_cast<int64_t>(c10::elementSize(iter.dtype(k)));
    const auto strides = iter.strides(k);
    for (int d = 0; d < iter.ndim(); ++d) p.geometry.strides[k][d] = strides[d] / size;
  }
  for (int k = n; k < n + dummy_slots; ++k) p.operands[k] = p.operands[1];  // never read
  p.num_operands = n + dummy_slots;
  p.has_weight = has_weight;
  p.has_pos_weight = has_pos_weight;
  p.param = param;
  p.norm = norm;
  const c10::DeviceIndex index = iter.device(0).index();
  const c10::DeviceGuard guard(iter.device(0));
  tvk::Stream& stream = current_stream(index);
  translate_errors([&] { kernels::loss_elementwise(stream, p); });
}

// Forward of a two-input loss (self, target) with type promotion, as the CPU's
// TensorIterator::borrowing_binary_op.
at::Tensor binary_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, LossOp op,
                       double param, const char* name) {
  at::Tensor loss;
  auto iter = at::TensorIteratorConfig()
                  .add_output(loss)
                  .add_const_input(self)
                  .add_const_input(target)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .build();
  launch_loss(iter, op, name, param);
  return apply_reduction(iter.output(), reduction);
}

// Backward of a two-input loss: grad_input (self's shape) = f(grad_output, self, target).
at::Tensor& binary_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                 const at::Tensor& target, int64_t reduction, LossOp op, double param,
                                 at::Tensor& grad_input, const char* name) {
  const double norm = reduction == at::Reduction::Mean ? 1.0 / static_cast<double>(self.numel()) : 1.0;
  auto iter = at::TensorIteratorConfig()
                  .add_output(grad_input)
                  .add_const_input(grad_output)
                  .add_const_input(self)
                  .add_const_input(target)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .build();
  launch_loss(iter, op, name, param, norm);
  return grad_input;
}

// ---------------------------------------------------------------- mse / smooth_l1 / huber

at::Tensor mse_loss_vk(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  return binary_loss(self, target, reduction, LossOp::Mse, 0, "mse_cpu");
}
at::Tensor& mse_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& out) {
  at::Tensor r = mse_loss_vk(self, target, reduction);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}
at::Tensor& mse_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& target, int64_t reduction, at::Tensor& grad_input) {
  return binary_loss_backward(grad_output, self, target, reduction, LossOp::MseBackward, 0, grad_input,
                              "mse_backward_cpu");
}
at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  return mse_loss_backward_out(grad_output, self, target, reduction, grad_input);
}

at::Tensor smooth_l1_loss_vk(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  return binary_loss(self, target, reduction, LossOp::SmoothL1, beta, "smooth_l1_cpu");
}
at::Tensor& smooth_l1_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta,
                               at::Tensor& out) {
  at::Tensor r = smooth_l1_loss_vk(self, target, reduction, beta);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}
at::Tensor& smooth_l1_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& target, int64_t reduction, double beta,
                                        at::Tensor& grad_input) {
  return binary_loss_backward(grad_output, self, target, reduction, LossOp::SmoothL1Backward, beta,
                              grad_input, "smooth_l1_backward_cpu_out");
}
at::Tensor smooth_l1_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                   const at::Tensor& target, int64_t reduction, double beta) {
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  return smooth_l1_loss_backward_out(grad_output, self, target, reduction, beta, grad_input);
}

at::Tensor huber_loss_vk(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return binary_loss(self, target, reduction, LossOp::Huber, delta, "huber_cpu");
}
at::Tensor& huber_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta,
                           at::Tensor& out) {
  at::Tensor r = huber_loss_vk(self, target, reduction, delta);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}
at::Tensor& huber_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& target, int64_t reduction, double delta,
                                    at::Tensor& grad_input) {
  return binary_loss_backward(grad_output, self, target, reduction, LossOp::HuberBackward, delta,
                              grad_input, "huber_backward_cpu_out");
}
at::Tensor huber_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               int64_t reduction, double delta) {
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  return huber_loss_backward_out(grad_output, self, target, reduction, delta, grad_input);
}

// ---------------------------------------------------------------- binary cross entropy

// The input must lie in [0, 1] (the CPU checks every element; like CUDA, the device does not:
// values outside give NaN or the clamped logarithms).
at::Tensor binary_cross_entropy_vk(const at::Tensor& self, const at::Tensor& target,
                                const std::optional<at::Tensor>& weight_opt, int64_t reduction) {
  const bool weighted = weight_opt.has_value() && weight_opt->defined();
  at::Tensor loss;
  at::TensorIteratorConfig config;
  config.add_output(loss).add_const_input(self).add_const_input(target);
  if (weighted) config.add_const_input(*weight_opt);
  auto iter = config.build();
  launch_loss(iter, LossOp::Bce, "binary_cross_entropy", 0, 1, weighted);
  return apply_reduction(iter.output(), reduction);
}
at::Tensor& binary_cross_entropy_out(const at::Tensor& self, const at::Tensor& target,
                                     const std::optional<at::Tensor>& weight, int64_t reduction, at::Tensor& out) {
  at::Tensor r = binary_cross_entropy_vk(self, target, weight, reduction);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}
at::Tensor& binary_cross_entropy_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                              const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
                                              int64_t reduction, at::Tensor& grad_input) {
  const bool weighted = weight_opt.has_value() && weight_opt->defined();
  at::native::resize_output(grad_input, self.sizes());
  const double norm = reduction == at::Reduction::Mean ? 1.0 / static_cast<double>(self.numel()) : 1.0;
  at::TensorIteratorConfig config;
  config.add_output(grad_input).add_const_input(grad).add_const_input(self).add_const_input(target);
  if (weighted) config.add_const_input(*weight_opt);
  auto iter = config.build();
  launch_loss(iter, LossOp::BceBackward, "binary_cross_entropy_backward", 0, norm, weighted);
  return grad_input;
}
at::Tensor binary_cross_entropy_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                                         const std::optional<at::Tensor>& weight, int64_t reduction) {
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  return binary_cross_entropy_backward_out(grad, self, target, weight, reduction, grad_input);
}

at::Tensor binary_cross_entropy_with_logits(const at::Tensor& self, const at::Tensor& target,
                                            const std::optional<at::Tensor>& weight_opt,
                                            const std::optional<at::Tensor>& pos_weight_opt, int64_t reduction) {
  const bool weighted = weight_opt.has_value() && weight_opt->defined();
  const bool pos_weighted = pos_weight_opt.has_value() && pos_weight_opt->defined();
  at::Tensor loss;
  at::TensorIteratorConfig config;
  config.add_output(loss).add_const_input(self).add_const_input(target);
  // Absent weights take their slot with the input itself (flagged off, never read).
  config.add_const_input(weighted ? *weight_opt : self);
  config.add_const_input(pos_weighted ? *pos_weight_opt : self);
  config.promote_inputs_to_common_dtype(true).cast_common_dtype_to_outputs(true);
  auto iter = config.build();
  launch_loss(iter, LossOp::BceWithLogits, "binary_cross_entropy_with_logits", 0, 1, weighted, pos_weighted);
  return apply_reduction(iter.output(), reduction);
}

// ---------------------------------------------------------------- nll_loss

void check_target_dtype(const at::Tensor& target) {
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
}

kernels::NllLoss nll_problem(const at::Tensor& self_c, const at::Tensor& target_c, const at::Tensor& weight_c,
                             int64_t n, int64_t classes, int64_t spatial, int64_t ignore_index, const char* name) {
  kernels::NllLoss p;
  const bool f64 = self_c.scalar_type() == at::kDouble;
  p.kind = f64 ? ComputeKind::Float64 : ComputeKind::Float32;
  p.n = n;
  p.classes = classes;
  p.spatial = spatial;
  p.ignore_index = ignore_index;
  p.self = operand(self_c, name);
  p.target = operand(target_c, name);
  if (weight_c.defined()) p.weight = operand(weight_c, name);
  return p;
}

// Targets outside [0, C) (other than ignore_index) are skipped by the kernel (they read
// nothing and contribute nothing) and reported through the stream's device error record: the
// next synchronization raises the CPU's IndexError("Target t is out of bounds.").
//
// Shared forward: `self` viewed as [N, C, S], per-sample output (reduction none) shaped
// `none_shape`, else a scalar; total_weight a scalar.
void nll_forward_impl(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight,
                      int64_t reduction, int64_t ignore_index, int64_t n, int64_t classes, int64_t spatial,
                      bool per_sample, const at::Tensor& output, const at::Tensor& total_weight,
                      const char* name) {
  check_target_dtype(target);
  if (!at::isFloatingType(self.scalar_type())) raise_not_implemented_for(name, self.scalar_type());
  vk_dtype(self.scalar_type(), name);
  const at::Tensor self_c = self.contiguous();
  const at::Tensor target_c = target.contiguous();
  const at::Tensor weight_c = weight.defined() ? weight.contiguous() : weight;
  const kernels::NllLoss p = nll_problem(self_c, target_c, weight_c, n, classes, spatial, ignore_index, name);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  if (per_sample) {
    const bool direct = output.is_contiguous();
    at::Tensor out = direct ? output : at::empty(output.sizes(), output.options());
    translate_errors([&] { kernels::nll_loss_forward(stream, p, true, operand(out, name)); });
    if (!direct) output.copy_(out);
    return;
  }
  const at::ScalarType acc = self.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor scratch = at::empty({2, n * spatial}, self.options().dtype(acc));
  translate_errors([&] { kernels::nll_loss_forward(stream, p, false, operand(scratch, name)); });
  const at::Tensor sums = scratch.sum(1);  // [sum of terms, total weight]
  const at::Tensor tw = sums.select(0, 1);
  total_weight.copy_(tw);
  output.copy_(reduction == at::Reduction::Mean ? sums.select(0, 0) / tw : sums.select(0, 0));
}

void nll_backward_impl(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                       const at::Tensor& weight, int64_t reduction, int64_t ignore_index,
                       const at::Tensor& total_weight, int64_t n, int64_t classes, int64_t spatial,
                       bool per_sample, const at::Tensor& grad_input, const char* name) {
  check_target_dtype(target);
  if (!at::isFloatingType(self.scalar_type())) raise_not_implemented_for(name, self.scalar_type());
  grad_input.zero_();
  if (n * spatial == 0) return;
  const at::Tensor self_c = self.contiguous();
  const at::Tensor target_c = target.contiguous();
  const at::Tensor weight_c = weight.defined() ? weight.contiguous() : weight;
  const at::Tensor grad_c = grad_output.contiguous();
  const at::Tensor tw = total_weight.to(self.device()).contiguous();
  const kernels::NllLoss p = nll_problem(self_c, target_c, weight_c, n, classes, spatial, ignore_index, name);
  const bool direct = grad_input.is_contiguous();
  at::Tensor gi = direct ? grad_input : at::zeros(grad_input.sizes(), grad_input.options());
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] {
    kernels::nll_loss_backward(stream, p, per_sample, reduction == at::Reduction::Mean, operand(grad_c, name),
                               operand(tw, name), operand(gi, name));
  });
  if (!direct) grad_input.copy_(gi);
}

at::Tensor optional_tensor(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? *t : at::Tensor();
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                           const std::optional<at::Tensor>& weight_opt,
                                                           int64_t reduction, int64_t ignore_index,
                                                           at::Tensor& output, at::Tensor& total_weight) {
  const at::Tensor weight = optional_tensor(weight_opt);
  Structured<at::meta::structured_nll_loss_forward, 2> s(output, total_weight);
  s.meta(self, target, at::OptionalTensorRef(weight), reduction, ignore_index);
  const int64_t n = self.dim() == 1 ? 1 : self.size(0);
  nll_forward_impl(self, target, weight, reduction, ignore_index, n, self.size(-1), 1,
                   reduction == at::Reduction::None && self.dim() == 2, output, total_weight, "nll_loss_out_frame");
  return {output, total_weight};
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight_opt, int64_t reduction,
                                                    int64_t ignore_index) {
  const at::Tensor weight = optional_tensor(weight_opt);
  Structured<at::meta::structured_nll_loss_forward, 2> s;
  s.meta(self, target, at::OptionalTensorRef(weight), reduction, ignore_index);
  const int64_t n = self.dim() == 1 ? 1 : self.size(0);
  nll_forward_impl(self, target, weight, reduction, ignore_index, n, self.size(-1), 1,
                   reduction == at::Reduction::None && self.dim() == 2, s.outs[0], s.outs[1], "nll_loss_out_frame");
  return {s.outs[0], s.outs[1]};
}

at::Tensor& nll_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                  const std::optional<at::Tensor>& weight_opt, int64_t reduction,
                                  int64_t ignore_index, const at::Tensor& total_weight, at::Tensor& grad_input) {
  const at::Tensor weight = optional_tensor(weight_opt);
  Structured<at::meta::structured_nll_loss_backward> s(grad_input);
  s.meta(grad_output, self, target, at::OptionalTensorRef(weight), reduction, ignore_index, total_weight);
  const int64_t n = self.dim() == 1 ? 1 : self.size(0);
  nll_backward_impl(grad_output, self, target, weight, reduction, ignore_index, total_weight, n, self.size(-1), 1,
                    reduction == at::Reduction::None && self.dim() == 2, grad_input, "nll_loss_backward_out_frame");
  return grad_input;
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight_opt, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  const at::Tensor weight = optional_tensor(weight_opt);
  Structured<at::meta::structured_nll_loss_backward> s;
  s.meta(grad_output, self, target, at::OptionalTensorRef(weight), reduction, ignore_index, total_weight);
  const int64_t n = self.dim() == 1 ? 1 : self.size(0);
  nll_backward_impl(grad_output, self, target, weight, reduction, ignore_index, total_weight, n, self.size(-1), 1,
                    reduction == at::Reduction::None && self.dim() == 2, s.outs[0], "nll_loss_backward_out_frame");
  return s.outs[0];
}

// nll_loss2d: self [N, C, H, W], target [N, H, W] (the CPU's check_inputs_nll_loss2d).
void check_nll2d(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight) {
  TORCH_CHECK(target.dim() == 3,
              "only batches of spatial targets supported (3D tensors) but got targets of dimension: ", target.dim());
  TORCH_CHECK(self.dim() == 4,
              "only batches of spatial inputs supported (4D tensors), but got input of dimension: ", self.dim());
  TORCH_CHECK(!weight.defined() || weight.numel() == self.size(1),
              "weight tensor should be defined either for all or no classes");
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
              "size mismatch (got input: ", self.sizes(), " , target: ", target.sizes());
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                             const std::optional<at::Tensor>& weight_opt,
                                                             int64_t reduction, int64_t ignore_index,
                                                             at::Tensor& output, at::Tensor& total_weight) {
  const at::Tensor weight = optional_tensor(weight_opt);
  check_nll2d(self, target, weight);
  const bool per_sample = reduction == at::Reduction::None;
  at::native::resize_output(total_weight, {});
  if (per_sample)
    at::native::resize_output(output, target.sizes());
  else
    at::native::resize_output(output, {});
  nll_forward_impl(self, target, weight, reduction, ignore_index, self.size(0), self.size(1),
                   self.size(2) * self.size(3), per_sample, output, total_weight, "nll_loss2d_forward_out_frame");
  return {output, total_weight};
}

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight_opt,
                                                      int64_t reduction, int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options());
  at::Tensor total_weight = at::empty({0}, self.options());
  nll_loss2d_forward_out(self, target, weight_opt, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

at::Tensor& nll_loss2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    const std::optional<at::Tensor>& weight_opt, int64_t reduction,
                                    int64_t ignore_index, const at::Tensor& total_weight, at::Tensor& grad_input) {
  const at::Tensor weight = optional_tensor(weight_opt);
  check_nll2d(self, target, weight);
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
  if (reduction == at::Reduction::None) {
    TORCH_CHECK(grad_output.dim() == 3 && grad_output.sizes() == target.sizes(),
                "grad_output must have same dimension as target (3) but got dimension: ", grad_output.sizes());
  } else {
    TORCH_CHECK(grad_output.numel() == 1, "expected grad_output to be a single element tensor, got: ",
                grad_output.sizes());
  }
  at::native::resize_output(grad_input, self.sizes());
  nll_backward_impl(grad_output, self, target, weight, reduction, ignore_index, total_weight, self.size(0),
                    self.size(1), self.size(2) * self.size(3), reduction == at::Reduction::None, grad_input,
                    "nll_loss2d_backward_out_frame");
  return grad_input;
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight_opt, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  return nll_loss2d_backward_out(grad_output, self, target, weight_opt, reduction, ignore_index, total_weight,
                                 grad_input);
}

// ---------------------------------------------------------------- margin losses
// The CPU's shape checks and messages (LossMultiMargin.cpp / LossMultiLabelMargin.cpp);
// float32 / float64 only, like the CPU. Target ranges are checked on the device (reported at
// the next sync as the CPU's RuntimeError), the per-row losses reduced with at::sum / mean.

// Rows and classes of a margin-loss input: 0-dim is one row of one class, 1-D one row.
void margin_input_shape(const at::Tensor& input, int64_t& nframe, int64_t& dim) {
  const int64_t ndims = input.dim();
  const bool valid = (ndims == 2 && input.size(1) != 0) || (ndims == 1 && input.size(0) != 0) || ndims == 0;
  TORCH_CHECK(valid, "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", input.sizes());
  nframe = ndims <= 1 ? 1 : input.size(0);
  dim = ndims == 0 ? 1 : input.size(ndims - 1);
}

void check_margin_dtypes(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight,
                         const char* kernel_name) {
  if (self.scalar_type() != at::kFloat && self.scalar_type() != at::kDouble)
    raise_not_implemented_for(kernel_name, self.scalar_type());
  vk_dtype(self.scalar_type(), kernel_name);
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ", target.scalar_type());
  TORCH_CHECK(!weight.defined() || weight.scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", weight.scalar_type());
}

int multi_margin_p(const at::Scalar& p) {
  const int64_t value = p.toLong();
  TORCH_CHECK(value == 1 || value == 2, "only p == 1 and p == 2 supported");
  return static_cast<int>(value);
}

kernels::MarginLoss margin_problem(const at::Tensor& self_c, const at::Tensor& target_c, const at::Tensor& weight_c,
                                   int64_t nframe, int64_t dim, const char* name) {
  kernels::MarginLoss p;
  p.kind = self_c.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
  p.rows = nframe;
  p.classes = dim;
  p.self = operand(self_c, name);
  p.target = operand(target_c, name);
  if (weight_c.defined()) p.weight = operand(weight_c, name);
  return p;
}

// grad_output is per row when the reduction is none and it is not 0-dim (the CPU's rule).
bool per_row_grad(const at::Tensor& grad_output, int64_t reduction, int64_t nframe) {
  if (reduction != at::Reduction::None || grad_output.dim() == 0) {
    TORCH_CHECK(grad_output.numel() == 1, "expected grad_output to be a single element tensor, got: ",
                grad_output.sizes());
    return false;
  }
  TORCH_CHECK(grad_output.dim() == 1 && grad_output.size(0) == nframe, "Expected tensor to have size ", nframe,
              " at dimension 0, but got size ", grad_output.size(0), " for argument #1 'grad_output'");
  return true;
}

// Writes `r` into `out` (resized), as the CPU's out= variants.
void assign_output(at::Tensor& out, const at::Tensor& r) {
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
}

at::Tensor multi_margin_loss_vk(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p_scalar,
                                const at::Scalar& margin, const std::optional<at::Tensor>& weight_opt,
                                int64_t reduction) {
  const char* name = "multi_margin_loss_cpu_kernel";
  const at::Tensor weight = optional_tensor(weight_opt);
  const int p = multi_margin_p(p_scalar);
  int64_t nframe = 0, dim = 0;
  margin_input_shape(self, nframe, dim);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == nframe, "inconsistent target size, expected ", nframe,
              " but got ", target.sizes());
  if (weight.defined()) {
    TORCH_CHECK(weight.dim() <= 1 && weight.numel() == dim, "inconsistent weight size, expected ", dim,
                " but got ", weight.sizes());
  }
  check_margin_dtypes(self, target, weight, name);
  const at::Tensor self_c = self.contiguous();
  const at::Tensor target_c = target.contiguous();
  const at::Tensor weight_c = weight.defined() ? weight.contiguous() : weight;
  kernels::MarginLoss problem = margin_problem(self_c, target_c, weight_c, nframe, dim, name);
  problem.p = p;
  problem.margin = margin.toDouble();
  at::Tensor per_row = at::empty({nframe}, self.options());
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] { kernels::multi_margin_loss_forward(stream, problem, operand(per_row, name)); });
  if (reduction == at::Reduction::None) return target.dim() > 0 ? per_row : per_row.reshape({});
  return apply_reduction(per_row, reduction);
}

at::Tensor& multi_margin_loss_out(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                                  const at::Scalar& margin, const std::optional<at::Tensor>& weight, int64_t reduction,
                                  at::Tensor& out) {
  assign_output(out, multi_margin_loss_vk(self, target, p, margin, weight, reduction));
  return out;
}

at::Tensor& multi_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, const at::Scalar& p_scalar,
                                           const at::Scalar& margin, const std::optional<at::Tensor>& weight_opt,
                                           int64_t reduction, at::Tensor& grad_input) {
  const char* name = "multi_margin_loss_backward_cpu_kernel";
  const at::Tensor weight = optional_tensor(weight_opt);
  const int p = multi_margin_p(p_scalar);
  int64_t nframe = 0, dim = 0;
  margin_input_shape(self, nframe, dim);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == nframe, "inconsistent target size, got: ", target.sizes());
  if (weight.defined()) {
    TORCH_CHECK(weight.dim() <= 1 && weight.numel() == dim, "inconsistent weight size, expected ", dim,
                " but got ", weight.sizes());
  }
  check_margin_dtypes(self, target, weight, name);
  at::native::resize_output(grad_input, self.sizes());
  TORCH_CHECK(grad_input.is_contiguous(), "grad_input must be contiguous");
  if (self.numel() == 0) return grad_input;
  const bool per_row = per_row_grad(grad_output, reduction, nframe);
  const at::Tensor self_c = self.contiguous();
  const at::Tensor target_c = target.contiguous();
  const at::Tensor weight_c = weight.defined() ? weight.contiguous() : weight;
  const at::Tensor grad_c = grad_output.to(self.scalar_type()).contiguous();
  kernels::MarginLoss problem = margin_problem(self_c, target_c, weight_c, nframe, dim, name);
  problem.p = p;
  problem.margin = margin.toDouble();
  const double scale = reduction == at::Reduction::Mean ? 1.0 / static_cast<double>(nframe * dim)
                                                        : 1.0 / static_cast<double>(dim);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] {
    kernels::multi_margin_loss_backward(stream, problem, scale, per_row, operand(grad_c, name),
                                        operand(grad_input, name));
  });
  return grad_input;
}

at::Tensor multi_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                      const at::Scalar& p, const at::Scalar& margin,
                                      const std::optional<at::Tensor>& weight, int64_t reduction) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return multi_margin_loss_backward_out(grad_output, self, target, p, margin, weight, reduction, grad_input);
}

void multilabel_shape_check(const at::Tensor& self, const at::Tensor& target, int64_t& nframe, int64_t& dim) {
  margin_input_shape(self, nframe, dim);
  if (self.dim() <= 1) {
    TORCH_CHECK(target.dim() <= 1 && target.numel() == dim, "inconsistent size ", target.sizes(),
                " for argument #2 'target'");
  } else {
    TORCH_CHECK(target.dim() == 2 && target.size(0) == nframe && target.size(1) == dim, "inconsistent size ",
                target.sizes(), " for argument #2 'target'");
  }
}

std::tuple<at::Tensor&, at::Tensor&> multilabel_margin_loss_forward_out(const at::Tensor& self,
                                                                        const at::Tensor& target, int64_t reduction,
                                                                        at::Tensor& output, at::Tensor& is_target) {
  const char* name = "multilabel_margin_loss_forward_out_frame";
  int64_t nframe = 0, dim = 0;
  multilabel_shape_check(self, target, nframe, dim);
  check_margin_dtypes(self, target, at::Tensor(), name);
  at::native::resize_output(is_target, target.sizes());
  TORCH_CHECK(is_target.is_contiguous(), "is_target must be contiguous");
  const at::Tensor self_c = self.contiguous();
  const at::Tensor target_c = target.contiguous();
  const kernels::MarginLoss problem = margin_problem(self_c, target_c, at::Tensor(), nframe, dim, name);
  at::Tensor per_row = at::empty({nframe}, self.options());
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] {
    kernels::multilabel_margin_loss_forward(stream, problem, operand(per_row, name), operand(is_target, name));
  });
  at::Tensor r;
  if (reduction == at::Reduction::None)
    r = target.dim() <= 1 ? per_row.reshape({}) : per_row;
  else
    r = apply_reduction(per_row, reduction);
  assign_output(output, r);
  return {output, is_target};
}

std::tuple<at::Tensor, at::Tensor> multilabel_margin_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                                  int64_t reduction) {
  at::Tensor output = at::empty({0}, self.options());
  at::Tensor is_target = at::empty({0}, self.options());
  multilabel_margin_loss_forward_out(self, target, reduction, output, is_target);
  return {output, is_target};
}

at::Tensor& multilabel_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                                const at::Tensor& target, int64_t reduction,
                                                const at::Tensor& is_target, at::Tensor& grad_input) {
  const char* name = "multilabel_margin_loss_backward_out_frame";
  int64_t nframe = 0, dim = 0;
  multilabel_shape_check(self, target, nframe, dim);
  TORCH_CHECK(target.sizes() == is_target.sizes(), "Expected tensor for argument #3 'target' to have same size as ",
              "tensor for argument #5 'is_target'; but ", target.sizes(), " does not equal ", is_target.sizes(),
              " (while checking arguments for multilabel_margin_loss_backward_cpu_template)");
  check_margin_dtypes(self, target, at::Tensor(), name);
  at::native::resize_output(grad_input, self.sizes());
  if (grad_input.numel() == 0) return grad_input;
  TORCH_CHECK(grad_input.is_contiguous(), "grad_input must be contiguous");
  const bool per_row = per_row_grad(grad_output, reduction, nframe);
  const at::Tensor self_c = self.contiguous();
  const at::Tensor target_c = target.contiguous();
  const at::Tensor is_target_c = is_target.to(self.scalar_type()).contiguous();
  const at::Tensor grad_c = grad_output.to(self.scalar_type()).contiguous();
  const kernels::MarginLoss problem = margin_problem(self_c, target_c, at::Tensor(), nframe, dim, name);
  const double scale = reduction == at::Reduction::Mean ? 1.0 / static_cast<double>(nframe * dim)
                                                        : 1.0 / static_cast<double>(dim);
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] {
    kernels::multilabel_margin_loss_backward(stream, problem, scale, per_row, operand(grad_c, name),
                                             operand(is_target_c, name), operand(grad_input, name));
  });
  return grad_input;
}

at::Tensor multilabel_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, int64_t reduction, const at::Tensor& is_target) {
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  return multilabel_margin_loss_backward_out(grad_output, self, target, reduction, is_target, grad_input);
}

// ---------------------------------------------------------------- CTC loss
// _ctc_loss with host lengths (ctc_loss and F.ctc_loss are composites that bring the lengths to
// the host, as on the CPU): the CPU's checks (ctc_loss_allocate_outputs) and messages, then the
// log-space recursions on the device. float32 / float64, Int32 / Int64 targets, padded 2-D or
// concatenated 1-D targets.

struct CtcSetup {
  kernels::CtcLoss problem;
  at::Tensor log_probs_c, targets_c, meta;
  int64_t max_target_length = 0;
};

CtcSetup ctc_setup(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef input_lengths,
                   at::IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {
  const char* c = "ctc_loss_allocate_outputs";
  TORCH_CHECK(targets.scalar_type() == at::kLong || targets.scalar_type() == at::kInt,
              "Expected tensor for argument #2 'targets' to have scalar type Int; but got ", targets.toString(),
              " instead (while checking arguments for ", c, ")");
  TORCH_CHECK(log_probs.dim() == 3, "Expected 3-dimensional tensor, but got ", log_probs.dim(),
              "-dimensional tensor for argument #1 'log_probs' (while checking arguments for ", c, ")");
  TORCH_CHECK(targets.dim() >= 1 && targets.dim() <= 2, "Expected 1 to 2 dimensions, but got ", targets.dim(),
              "-dimensional tensor for argument #2 'targets' (while checking arguments for ", c, ")");
  const int64_t batch = log_probs.size(1), classes = log_probs.size(2), time = log_probs.size(0);
  TORCH_CHECK(0 <= blank && blank < classes, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == batch, "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == batch, "target_lengths must be of size batch_size");
  const at::Tensor targets_c = targets.contiguous();
  std::vector<int64_t> meta(3 * batch);
  int64_t max_target_length = 0, pos = 0;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(target_lengths[b] >= 0, "Expected target_lengths to have value at least 0, but got value ",
                target_lengths[b], " (while checking arguments for ", c, ")");
    meta[batch + b] = target_lengths[b];
    meta[2 * batch + b] = targets.dim() == 1 ? pos : b * targets_c.size(1);
    pos += target_lengths[b];
    max_target_length = std::max(max_target_length, target_lengths[b]);
  }
  if (targets.dim() == 1) {
    TORCH_CHECK(targets.size(0) == pos, "Expected tensor to have size ", pos, " at dimension 0, but got size ",
                targets.size(0), " for argument #2 'targets' (while checking arguments for ", c, ")");
  } else {
    TORCH_CHECK(targets.size(0) == batch, "Expected tensor to have size ", batch, " at dimension 0, but got size ",
                targets.size(0), " for argument #2 'targets' (while checking arguments for ", c, ")");
    TORCH_CHECK(targets.size(1) >= max_target_length, "Expected tensor to have size at least ", max_target_length,
                " at dimension 1, but got size ", targets.size(1), " for argument #2 'targets' (while checking ",
                "arguments for ", c, ")");
  }
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(input_lengths[b] >= 0, "Expected input_lengths to have value at least 0, but got value ",
                input_lengths[b], " (while checking arguments for ", c, ")");
    TORCH_CHECK(input_lengths[b] <= time, "Expected input_lengths to have value at most ", time,
                ", but got value ", input_lengths[b], " (while checking arguments for ", c, ")");
    meta[b] = input_lengths[b];
  }
  if (log_probs.scalar_type() != at::kFloat && log_probs.scalar_type() != at::kDouble)
    raise_not_implemented_for("ctc_loss_cpu", log_probs.scalar_type());
  vk_dtype(log_probs.scalar_type(), "ctc_loss");
  CtcSetup setup;
  setup.log_probs_c = log_probs.contiguous();
  setup.targets_c = targets_c;
  // The lengths are host values: one host-to-device copy, no wait.
  setup.meta = at::tensor(meta, at::TensorOptions().dtype(at::kLong)).to(log_probs.device());
  setup.max_target_length = max_target_length;
  kernels::CtcLoss& p = setup.problem;
  p.kind = log_probs.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
  p.time = time;
  p.batch = batch;
  p.classes = classes;
  p.extended = 2 * max_target_length + 1;
  p.blank = blank;
  p.zero_infinity = zero_infinity;
  if (batch > 0 && time > 0) {
    p.log_probs = operand(setup.log_probs_c, "ctc_loss");
    p.meta = operand(setup.meta, "ctc_loss");
    if (targets_c.numel() > 0) {
      p.targets = operand(targets_c, "ctc_loss");
    } else {  // no labels at all: never read, any valid address will do
      p.targets = kernels::Operand{p.meta.address, kernels::DType::Int64};
    }
  }
  return setup;
}

std::tuple<at::Tensor, at::Tensor> ctc_loss_vk(const at::Tensor& log_probs, const at::Tensor& targets,
                                               at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                               int64_t blank, bool zero_infinity) {
  CtcSetup setup = ctc_setup(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
  const kernels::CtcLoss& p = setup.problem;
  at::Tensor log_alpha = at::empty({p.batch, p.time, p.extended}, log_probs.options());
  at::Tensor nll = at::empty({p.batch}, log_probs.options());
  if (p.batch > 0 && p.time == 0) nll.fill_(0);  // no frames: only empty targets are possible
  const c10::DeviceGuard guard(log_probs.device());
  tvk::Stream& stream = current_stream(log_probs.device().index());
  translate_errors([&] {
    kernels::ctc_loss_forward(stream, p, operand(log_alpha, "ctc_loss"), operand(nll, "ctc_loss"));
  });
  return {nll, log_alpha};
}

at::Tensor ctc_loss_backward_vk(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                                at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                                bool zero_infinity) {
  CtcSetup setup = ctc_setup(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
  const kernels::CtcLoss& p = setup.problem;
  at::Tensor result = at::empty({p.time, p.batch, p.classes}, log_probs.options());
  if (p.batch == 0 || p.time == 0) return result.zero_();
  TORCH_CHECK(log_alpha.dim() == 3 && log_alpha.size(0) == p.batch && log_alpha.size(1) == p.time &&
                  log_alpha.size(2) == p.extended,
              "ctc_loss_backward: log_alpha must have shape [", p.batch, ", ", p.time, ", ", p.extended, "]");
  TORCH_CHECK(neg_log_likelihood.numel() == p.batch && grad.numel() == p.batch,
              "ctc_loss_backward: expected one loss and one gradient per sample");
  at::Tensor alpha_beta = at::empty({2, p.batch, p.time, p.extended}, log_probs.options());
  alpha_beta.select(0, 0).copy_(log_alpha);
  const at::Tensor nll_grad = at::stack({neg_log_likelihood.reshape({p.batch}).to(log_probs.scalar_type()),
                                         grad.reshape({p.batch}).to(log_probs.scalar_type())})
                                  .contiguous();
  const c10::DeviceGuard guard(log_probs.device());
  tvk::Stream& stream = current_stream(log_probs.device().index());
  translate_errors([&] {
    kernels::ctc_loss_backward(stream, p, operand(alpha_beta, "ctc_loss_backward"),
                               operand(nll_grad, "ctc_loss_backward"), operand(result, "ctc_loss_backward"));
  });
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
  m.impl("nll_loss_forward.output", TORCH_FN(nll_loss_forward_out));
  m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_loss_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll_loss2d_forward_out));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll_loss2d_backward_out));
  m.impl("mse_loss", TORCH_FN(mse_loss_vk));
  m.impl("mse_loss.out", TORCH_FN(mse_loss_out));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_loss_backward_out));
  m.impl("smooth_l1_loss", TORCH_FN(smooth_l1_loss_vk));
  m.impl("smooth_l1_loss.out", TORCH_FN(smooth_l1_loss_out));
  m.impl("smooth_l1_loss_backward", TORCH_FN(smooth_l1_loss_backward));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smooth_l1_loss_backward_out));
  m.impl("huber_loss", TORCH_FN(huber_loss_vk));
  m.impl("huber_loss.out", TORCH_FN(huber_loss_out));
  m.impl("huber_loss_backward", TORCH_FN(huber_loss_backward));
  m.impl("huber_loss_backward.out", TORCH_FN(huber_loss_backward_out));
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy_vk));
  m.impl("binary_cross_entropy.out", TORCH_FN(binary_cross_entropy_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(binary_cross_entropy_backward));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(binary_cross_entropy_backward_out));
  m.impl("binary_cross_entropy_with_logits", TORCH_FN(binary_cross_entropy_with_logits));
  m.impl("multi_margin_loss", TORCH_FN(multi_margin_loss_vk));
  m.impl("multi_margin_loss.out", TORCH_FN(multi_margin_loss_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(multi_margin_loss_backward));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(multi_margin_loss_backward_out));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(multilabel_margin_loss_forward));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(multilabel_margin_loss_forward_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(multilabel_margin_loss_backward));
  m.impl("multilabel_margin_loss_backward.grad_input", TORCH_FN(multilabel_margin_loss_backward_out));
  m.impl("_ctc_loss", TORCH_FN(ctc_loss_vk));
  m.impl("_ctc_loss_backward", TORCH_FN(ctc_loss_backward_vk));
}

}  // namespace tvk::aten
