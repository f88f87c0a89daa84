// Native fused optimizer steps: _fused_adam_, _fused_adamw_, _fused_sgd_ and _fused_adagrad_
// (float and Tensor lr overloads), each a thin wrapper over one multi-tensor kernel call per
// dtype group (src/kernels/optim.h); and the AMP grad-scaler ops they work with
// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_), also on the device. Semantics are those of PyTorch's CUDA / CPU fused kernels:
//   * state_steps are device tensors that the optimizer has already incremented; the kernel
//     reads them on the device (bias corrections use the incremented step);
//   * grad_scale: grads are divided by it and the unscaled grads are written back;
//   * found_inf: a value of 1 skips the step (as on CPU / CUDA), read on the device (no host sync);
//   * a Tensor lr on the CPU is read on the host (lr.item(), as CUDA does); on vk it is read
//     by the kernel.
// Tensors must be non-overlapping and dense with the parameter's sizes and strides (as CUDA
// requires), so the kernel can walk their storage linearly.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <map>
#include <optional>

#include "aten/vk_common.h"
#include "kernels/optim.h"

namespace tvk::aten {
namespace {

using kernels::OptimOp;
using kernels::OptimStep;
using kernels::OptimTensor;

uint64_t address_of(const at::Tensor& t, const char* op) { return operand(t, op).address; }

void check_like_param(const at::Tensor& param, const at::Tensor& t, const char* what,
                      const char* op) {
  TORCH_CHECK(t.device() == param.device(), op, ": ", what, " must be on ", param.device(),
              ", got ", t.device());
  TORCH_CHECK(t.scalar_type() == param.scalar_type(), op, ": ", what, " must have dtype ",
              param.scalar_type(), ", got ", t.scalar_type());
  TORCH_CHECK(t.layout() == at::kStrided && t.sizes() == param.sizes() &&
                  t.strides() == param.strides() && t.is_non_overlapping_and_dense(),
              op, ": ", what, " must be dense with the parameter's sizes and strides");
}

// A float32 device scalar for the kernel (converted on the device when needed).
at::Tensor device_scalar(const at::Tensor& t, const at::Device& device, const char* what,
                         const char* op) {
  TORCH_CHECK(t.numel() == 1, op, ": ", what, " must have one element, got ", t.numel());
  TORCH_CHECK(t.device() == device, op, ": ", what, " must be on ", device, ", got ", t.device());
  return t.scalar_type() == at::kFloat ? t : t.to(at::kFloat);
}

struct Scalars {
  std::optional<at::Tensor> lr_tensor;  // on the device, float32
  at::Tensor grad_scale, found_inf;     // undefined when absent
};

Scalars device_scalars(const at::Device& device, const at::Tensor* lr,
                       const std::optional<at::Tensor>& grad_scale,
                       const std::optional<at::Tensor>& found_inf, const char* op) {
  Scalars s;
  if (lr) s.lr_tensor = device_scalar(*lr, device, "lr", op);
  if (grad_scale.has_value() && grad_scale->defined())
    s.grad_scale = device_scalar(*grad_scale, device, "grad_scale", op);
  if (found_inf.has_value() && found_inf->defined())
    s.found_inf = device_scalar(*found_inf, device, "found_inf", op);
  return s;
}

void fill_scalars(OptimStep& step, const Scalars& s, const char* op) {
  if (s.lr_tensor) step.lr_tensor = address_of(*s.lr_tensor, op);
  if (s.grad_scale.defined()) step.grad_scale = address_of(s.grad_scale, op);
  if (s.found_inf.defined()) step.found_inf = address_of(s.found_inf, op);
}

// Runs one kernel call per dtype present in `params` (indices grouped in order).
template <class Fill>
void for_each_dtype_group(at::TensorList params, const char* op, Fill&& fill) {
  std::map<at::ScalarType, std::vector<size_t>> groups;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i];
    TORCH_CHECK(p.device().type() == c10::DeviceType::PrivateUse1, op,
                ": expected vk tensors, got a tensor on ", p.device());
    TORCH_CHECK(p.device() == params[0].device(), op, ": all tensors must be on one device");
    TORCH_CHECK(at::isFloatingType(p.scalar_type()), op,
                ": parameters must be floating point, got ", p.scalar_type());
    vk_dtype(p.scalar_type(), op);
    groups[p.scalar_type()].push_back(i);
  }
  for (auto& [dtype, indices] : groups) fill(dtype, indices);
}

void record(OptimStep& step, const at::Device& device) {
  const c10::DeviceGuard guard(device);
  tvk::Stream& stream = current_stream(device.index());
  translate_errors([&] { kernels::optim_step(stream, step); });
}

void fused_adam_impl(bool adamw, at::TensorList params, at::TensorList grads,
                     at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                     at::TensorList max_exp_avg_sqs, at::TensorList state_steps, double lr,
                     const at::Tensor* lr_tensor, double beta1, double beta2, double weight_decay,
                     double eps, bool amsgrad, bool maximize,
                     const std::optional<at::Tensor>& grad_scale,
                     const std::optional<at::Tensor>& found_inf) {
  const char* op = adamw ? "_fused_adamw_" : "_fused_adam_";
  const size_t n = params.size();
  TORCH_CHECK(grads.size() == n && exp_avgs.size() == n && exp_avg_sqs.size() == n &&
                  state_steps.size() == n,
              op, ": all tensor lists must have the same length");
  TORCH_CHECK(!amsgrad || max_exp_avg_sqs.size() == n, op,
              ": max_exp_avg_sqs must have one tensor per parameter with amsgrad");
  if (n == 0) return;
  const at::Device device = params[0].device();
  if (lr_tensor && lr_tensor->device().is_cpu()) {  // as CUDA: a CPU lr is read on the host
    lr = lr_tensor->item<double>();
    lr_tensor = nullptr;
  }
  const Scalars scalars = device_scalars(device, lr_tensor, grad_scale, found_inf, op);
  std::vector<at::Tensor> steps_f32(n);  // keeps converted step counts alive while recording
  for_each_dtype_group(params, op, [&](at::ScalarType dtype, const std::vector<size_t>& idx) {
    OptimStep step;
    step.op = adamw ? OptimOp::AdamW : OptimOp::Adam;
    step.kind = dtype == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
    step.dtype = vk_dtype(dtype, op);
    step.lr = lr;
    step.beta1 = beta1;
    step.beta2 = beta2;
    step.weight_decay = weight_decay;
    step.eps = eps;
    step.amsgrad = amsgrad;
    step.maximize = maximize;
    fill_scalars(step, scalars, op);
    for (size_t i : idx) {
      const at::Tensor& p = params[i];
      check_like_param(p, grads[i], "grad", op);
      check_like_param(p, exp_avgs[i], "exp_avg", op);
      check_like_param(p, exp_avg_sqs[i], "exp_avg_sq", op);
      if (amsgrad) check_like_param(p, max_exp_avg_sqs[i], "max_exp_avg_sq", op);
      const at::Tensor& s = state_steps[i];
      TORCH_CHECK(s.device() == device && s.numel() == 1, op,
                  ": state_steps must be one-element tensors on ", device);
      steps_f32[i] = s.scalar_type() == at::kFloat ? s : s.to(at::kFloat);
      OptimTensor t;
      t.param = address_of(p, op);
      t.grad = address_of(grads[i], op);
      t.state0 = address_of(exp_avgs[i], op);
      t.state1 = address_of(exp_avg_sqs[i], op);
      if (amsgrad) t.state2 = address_of(max_exp_avg_sqs[i], op);
      t.step = address_of(steps_f32[i], op);
      t.numel = p.numel();
      if (t.numel == 0) continue;
      step.tensors.push_back(t);
    }
    record(step, device);
  });
}

void fused_sgd_impl(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers,
                    double weight_decay, double momentum, double lr, const at::Tensor* lr_tensor,
                    double dampening, bool nesterov, bool maximize, bool is_first_step,
                    const std::optional<at::Tensor>& grad_scale,
                    const std::optional<at::Tensor>& found_inf) {
  const char* op = "_fused_sgd_";
  const size_t n = params.size();
  TORCH_CHECK(grads.size() == n, op, ": params and grads must have the same length");
  const bool has_momentum = momentum != 0.0;
  if (has_momentum) {
    TORCH_CHECK(momentum_buffers.size() == n, op,
                ": momentum_buffer_list must have one tensor per parameter");
  } else {
    TORCH_CHECK(momentum_buffers.empty(), op, ": momentum_buffer_list must be empty without momentum");
  }
  if (n == 0) return;
  const at::Device device = params[0].device();
  if (lr_tensor && lr_tensor->device().is_cpu()) {
    lr = lr_tensor->item<double>();
    lr_tensor = nullptr;
  }
  const Scalars scalars = device_scalars(device, lr_tensor, grad_scale, found_inf, op);
  for_each_dtype_group(params, op, [&](at::ScalarType dtype, const std::vector<size_t>& idx) {
    OptimStep step;
    step.op = OptimOp::Sgd;
    step.kind = dtype == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
    step.dtype = vk_dtype(dtype, op);
    step.lr = lr;
    step.beta1 = momentum;
    step.beta2 = dampening;
    step.weight_decay = weight_decay;
    step.momentum = has_momentum;
    step.nesterov = nesterov;
    step.maximize = maximize;
    step.first_step = is_first_step;
    fill_scalars(step, scalars, op);
    for (size_t i : idx) {
      const at::Tensor& p = params[i];
      check_like_param(p, grads[i], "grad", op);
      if (has_momentum) check_like_param(p, momentum_buffers[i], "momentum_buffer", op);
      OptimTensor t;
      t.param = address_of(p, op);
      t.grad = address_of(grads[i], op);
      if (has_momentum) t.state0 = address_of(momentum_buffers[i], op);
      t.numel = p.numel();
      if (t.numel == 0) continue;
      step.tensors.push_back(t);
    }
    record(step, device);
  });
}

// Adagrad (torch.optim.Adagrad(fused=True)): state_sums and state_steps as Adam's states.
void fused_adagrad_impl(at::TensorList params, at::TensorList grads, at::TensorList state_sums,
                        at::TensorList state_steps, double lr, const at::Tensor* lr_tensor,
                        double lr_decay, double weight_decay, double eps, bool maximize,
                        const std::optional<at::Tensor>& grad_scale,
                        const std::optional<at::Tensor>& found_inf) {
  const char* op = "_fused_adagrad_";
  const size_t n = params.size();
  TORCH_CHECK(grads.size() == n && state_sums.size() == n && state_steps.size() == n, op,
              ": all tensor lists must have the same length");
  if (n == 0) return;
  const at::Device device = params[0].device();
  if (lr_tensor && lr_tensor->device().is_cpu()) {
    lr = lr_tensor->item<double>();
    lr_tensor = nullptr;
  }
  const Scalars scalars = device_scalars(device, lr_tensor, grad_scale, found_inf, op);
  std::vector<at::Tensor> steps_f32(n);  // keeps converted step counts alive while recording
  for_each_dtype_group(params, op, [&](at::ScalarType dtype, const std::vector<size_t>& idx) {
    OptimStep step;
    step.op = OptimOp::Adagrad;
    step.kind = dtype == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
    step.dtype = vk_dtype(dtype, op);
    step.lr = lr;
    step.beta1 = lr_decay;
    step.weight_decay = weight_decay;
    step.eps = eps;
    step.maximize = maximize;
    fill_scalars(step, scalars, op);
    for (size_t i : idx) {
      const at::Tensor& p = params[i];
      check_like_param(p, grads[i], "grad", op);
      check_like_param(p, state_sums[i], "state_sum", op);
      const at::Tensor& s = state_steps[i];
      TORCH_CHECK(s.device() == device && s.numel() == 1, op,
                  ": state_steps must be one-element tensors on ", device);
      steps_f32[i] = s.scalar_type() == at::kFloat ? s : s.to(at::kFloat);
      OptimTensor t;
      t.param = address_of(p, op);
      t.grad = address_of(grads[i], op);
      t.state0 = address_of(state_sums[i], op);
      t.step = address_of(steps_f32[i], op);
      t.numel = p.numel();
      if (t.numel == 0) continue;
      step.tensors.push_back(t);
    }
    record(step, device);
  });
}

// ---- registered overloads ----

void fused_adagrad(at::TensorList self, at::TensorList grads, at::TensorList state_sums,
                   at::TensorList state_steps, double lr, double lr_decay, double weight_decay,
                   double eps, bool maximize, const std::optional<at::Tensor>& grad_scale,
                   const std::optional<at::Tensor>& found_inf) {
  fused_adagrad_impl(self, grads, state_sums, state_steps, lr, nullptr, lr_decay, weight_decay,
                     eps, maximize, grad_scale, found_inf);
}
void fused_adagrad_tensor_lr(at::TensorList self, at::TensorList grads, at::TensorList state_sums,
                             at::TensorList state_steps, const at::Tensor& lr, double lr_decay,
                             double weight_decay, double eps, bool maximize,
                             const std::optional<at::Tensor>& grad_scale,
                             const std::optional<at::Tensor>& found_inf) {
  fused_adagrad_impl(self, grads, state_sums, state_steps, 0.0, &lr, lr_decay, weight_decay, eps,
                     maximize, grad_scale, found_inf);
}

void fused_adam(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                at::TensorList state_steps, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize,
                const std::optional<at::Tensor>& grad_scale,
                const std::optional<at::Tensor>& found_inf) {
  fused_adam_impl(false, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
                  nullptr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}
void fused_adam_tensor_lr(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                          at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                          at::TensorList state_steps, const at::Tensor& lr, double beta1,
                          double beta2, double weight_decay, double eps, bool amsgrad,
                          bool maximize, const std::optional<at::Tensor>& grad_scale,
                          const std::optional<at::Tensor>& found_inf) {
  fused_adam_impl(false, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, 0.0,
                  &lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}
void fused_adamw(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                 at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                 at::TensorList state_steps, double lr, double beta1, double beta2,
                 double weight_decay, double eps, bool amsgrad, bool maximize,
                 const std::optional<at::Tensor>& grad_scale,
                 const std::optional<at::Tensor>& found_inf) {
  fused_adam_impl(true, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
                  nullptr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}
void fused_adamw_tensor_lr(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                           at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                           at::TensorList state_steps, const at::Tensor& lr, double beta1,
                           double beta2, double weight_decay, double eps, bool amsgrad,
                           bool maximize, const std::optional<at::Tensor>& grad_scale,
                           const std::optional<at::Tensor>& found_inf) {
  fused_adam_impl(true, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, 0.0,
                  &lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}
void fused_sgd(at::TensorList self, at::TensorList grads, at::TensorList momentum_buffer_list,
               double weight_decay, double momentum, double lr, double dampening, bool nesterov,
               bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
               const std::optional<at::Tensor>& found_inf) {
  fused_sgd_impl(self, grads, momentum_buffer_list, weight_decay, momentum, lr, nullptr,
                 dampening, nesterov, maximize, is_first_step, grad_scale, found_inf);
}
void fused_sgd_tensor_lr(at::TensorList self, at::TensorList grads,
                         at::TensorList momentum_buffer_list, double weight_decay, double momentum,
                         const at::Tensor& lr, double dampening, bool nesterov, bool maximize,
                         bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                         const std::optional<at::Tensor>& found_inf) {
  fused_sgd_impl(self, grads, momentum_buffer_list, weight_decay, momentum, 0.0, &lr, dampening,
                 nesterov, maximize, is_first_step, grad_scale, found_inf);
}

// ---- AMP grad scaling ----

void check_amp_scalar(const at::Tensor& t, at::ScalarType dtype, const char* what, const char* op) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, op, ": ", what,
              " must be a vk tensor");
  TORCH_CHECK(t.numel() == 1, op, ": ", what, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == dtype, op, ": ", what, " must be a ", dtype, " tensor.");
}

void amp_unscale(at::TensorList self, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_amp_scalar(inv_scale, at::kFloat, "inv_scale", op);
  check_amp_scalar(found_inf, at::kFloat, "found_inf", op);
  if (self.empty()) return;
  std::map<at::ScalarType, std::vector<size_t>> groups;
  for (size_t i = 0; i < self.size(); ++i) {
    const at::Tensor& t = self[i];
    TORCH_CHECK(t.device() == found_inf.device(), op, ": all tensors must be on ",
                found_inf.device(), ", got ", t.device());
    TORCH_CHECK(at::isFloatingType(t.scalar_type()), op,
                ": gradients must be floating point, got ", t.scalar_type());
    if (t.layout() != at::kStrided || !t.is_non_overlapping_and_dense()) {
      // Rare (gradients are dense): the same result from native element-wise ops.
      found_inf.copy_(at::maximum(found_inf, t.isfinite().logical_not().any().to(at::kFloat)));
      t.mul_(inv_scale);
      continue;
    }
    groups[t.scalar_type()].push_back(i);
  }
  for (auto& [dtype, idx] : groups) {
    kernels::AmpUnscale u;
    u.kind = dtype == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
    u.dtype = vk_dtype(dtype, op);
    u.found_inf = address_of(found_inf, op);
    u.inv_scale = address_of(inv_scale, op);
    for (size_t i : idx) {
      OptimTensor t;
      t.param = address_of(self[i], op);
      t.numel = self[i].numel();
      u.tensors.push_back(t);
    }
    const c10::DeviceGuard guard(found_inf.device());
    tvk::Stream& stream = current_stream(found_inf.device().index());
    translate_errors([&] { kernels::amp_unscale(stream, u); });
  }
}

at::Tensor& amp_update_scale(at::Tensor& self, at::Tensor& growth_tracker,
                             const at::Tensor& found_inf, double growth_factor,
                             double backoff_factor, int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  check_amp_scalar(self, at::kFloat, "current_scale", op);
  check_amp_scalar(growth_tracker, at::kInt, "growth_tracker", op);
  check_amp_scalar(found_inf, at::kFloat, "found_inf", op);
  TORCH_CHECK(growth_tracker.device() == self.device() && found_inf.device() == self.device(), op,
              ": all tensors must be on one device");
  const c10::DeviceGuard guard(self.device());
  tvk::Stream& stream = current_stream(self.device().index());
  translate_errors([&] {
    kernels::amp_update_scale(stream, address_of(self, op), address_of(growth_tracker, op),
                              address_of(found_inf, op), growth_factor, backoff_factor,
                              growth_interval);
  });
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(amp_unscale));
  m.impl("_amp_update_scale_", TORCH_FN(amp_update_scale));
  m.impl("_fused_adam_", TORCH_FN(fused_adam));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN(fused_adam_tensor_lr));
  m.impl("_fused_adamw_", TORCH_FN(fused_adamw));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN(fused_adamw_tensor_lr));
  m.impl("_fused_sgd_", TORCH_FN(fused_sgd));
  m.impl("_fused_adagrad_", TORCH_FN(fused_adagrad));
  m.impl("_fused_adagrad_.tensor_lr", TORCH_FN(fused_adagrad_tensor_lr));
  m.impl("_fused_sgd_.tensor_lr", TORCH_FN(fused_sgd_tensor_lr));
}

}  // namespace tvk::aten
