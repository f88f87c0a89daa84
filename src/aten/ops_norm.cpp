// Native normalization ops: batch norm (native_batch_norm, _native_batch_norm_legit*,
// _batch_norm_with_update, _batch_norm_no_update and their backward ops), layer norm
// (native_layer_norm[_backward]), group norm (native_group_norm[_backward]) and RMS norm
// (_fused_rms_norm[_backward], which aten::rms_norm calls when the weight has the input's
// dtype). Checks, output dtypes and statistics dtypes follow PyTorch's CPU kernels: float16 /
// bfloat16 inputs may come with float32 parameters ("mixed": statistics in float32), any other
// mix is rejected with the CPU's message. Operands are made contiguous (as CUDA does) and the
// work is one or two L2 dispatches (src/kernels/norm.h), with fp32 / fp64 math.
#include <ATen/ATen.h>
#include <ATen/native/cpu/mixed_data_type.h>
#include <ATen/native/Resize.h>
#include <ATen/native/layer_norm.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>
#include <tuple>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/norm.h"

namespace tvk::aten {
namespace {

using at::Tensor;
using kernels::ComputeKind;
using kernels::NormLayout;
using kernels::Operand;
using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;

const Tensor& value_or_undefined(const std::optional<Tensor>& t) {
  static const Tensor undefined;
  return t.has_value() ? *t : undefined;
}

void check_float(const Tensor& t, const char* name) {
  if (!at::isFloatingType(t.scalar_type())) raise_not_implemented_for(name, t.scalar_type());
  vk_dtype(t.scalar_type(), name);
}

// The CPU's dtype rule for an input and its parameters / statistics: all the input's dtype,
// or a float16 / bfloat16 input with float32 parameters. Returns whether the mix is used.
template <class... Ts>
bool check_param_dtypes(const Tensor& input, const Ts&... params) {
  const bool mixed = at::native::is_mixed_type(input, params...);
  if (mixed) at::native::check_mixed_data_type(input, params...);
  for (const Tensor* p : {&params...})
    TORCH_CHECK(!p->defined() || p->scalar_type() == (mixed ? at::kFloat : input.scalar_type()),
                "expected scalar type ", input.scalar_type(), " but found ", p->scalar_type());
  return mixed;
}

ComputeKind kind_of(const Tensor& input) {
  return input.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
}

// Operand of an optional tensor (address 0 when undefined).
Operand maybe_operand(const Tensor& t, const char* name) {
  return t.defined() ? operand(t, name) : Operand{};
}

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? t.contiguous() : t; }

template <class Fn>
void record(const Tensor& input, Fn&& fn) {
  const c10::DeviceGuard guard(input.device());
  tvk::Stream& stream = current_stream(input.device().index());
  translate_errors([&] { fn(stream); });
}

// ---------------------------------------------------------------- batch norm

kernels::NormShape batch_norm_shape(const Tensor& input) {
  TORCH_CHECK_INDEX(input.dim() >= 2, "Dimension out of range (expected to be in range of [",
                    -std::max<int64_t>(input.dim(), 1), ", ", std::max<int64_t>(input.dim(), 1) - 1,
                    "], but got 1)");
  kernels::NormShape s;
  s.layout = NormLayout::Channel;
  s.outer = input.size(0);
  s.channels = input.size(1);
  s.inner = 1;
  for (int64_t d = 2; d < input.dim(); ++d) s.inner *= input.size(d);
  return s;
}

void check_channel_vector(const Tensor& t, int64_t channels, const char* what) {
  TORCH_CHECK(!t.defined() || t.numel() == channels, what, " should contain ", channels,
              " elements not ", t.numel());
}

// Forward of every batch norm entry point. `train`: batch statistics (saved as save_mean /
// save_invstd of shape [C]) and, when running stats are given, their update; else the running
// statistics normalize and the saved ones are empty. Running stats are updated in place.
Tensor3 batch_norm_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool train,
                           double momentum, double eps) {
  check_float(input, "batch_norm");
  const bool mixed = check_param_dtypes(input, weight, bias, running_mean, running_var);
  const kernels::NormShape shape = batch_norm_shape(input);
  const int64_t channels = shape.channels;
  check_channel_vector(weight, channels, "weight");
  check_channel_vector(bias, channels, "bias");
  check_channel_vector(running_mean, channels, "running_mean");
  check_channel_vector(running_var, channels, "running_var");
  TORCH_CHECK(running_mean.defined() == running_var.defined(),
              "running_mean and running_var must be defined together");
  const at::ScalarType stat_dtype = at::native::param_scalar_type(input, mixed);
  const Tensor x = input.contiguous();
  Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  Tensor save_mean, save_invstd;
  if (train) {
    TORCH_CHECK(input.numel() != 0, "input tensor must have at least one element, but got input_sizes = ",
                input.sizes());
    save_mean = at::empty({channels}, x.options().dtype(stat_dtype));
    save_invstd = at::empty({channels}, x.options().dtype(stat_dtype));
  } else {
    TORCH_CHECK(running_mean.defined(), "batch_norm: running_mean and running_var must be defined "
                                        "in evaluation mode");
    save_mean = at::empty({0}, x.options().dtype(stat_dtype));
    save_invstd = at::empty({0}, x.options().dtype(stat_dtype));
  }
  const Tensor w = contiguous_or_undefined(weight), b = contiguous_or_undefined(bias);
  // In-place running stats: a non-contiguous buffer is updated through a temporary.
  const bool update = train && running_mean.defined();
  const Tensor rm = contiguous_or_undefined(running_mean), rv = contiguous_or_undefined(running_var);
  kernels::NormForward p;
  p.kind = kind_of(input);
  p.shape = shape;
  p.stats_given = !train;
  p.update = update;
  p.eps = eps;
  p.momentum = momentum;
  p.out = operand(out, "batch_norm");
  p.x = operand(x, "batch_norm");
  p.weight = maybe_operand(w, "batch_norm");
  p.bias = maybe_operand(b, "batch_norm");
  if (train) {
    p.save_mean = operand(save_mean, "batch_norm");
    p.save_rstd = operand(save_invstd, "batch_norm");
  }
  p.running_mean = maybe_operand(rm, "batch_norm");
  p.running_var = maybe_operand(rv, "batch_norm");
  if (out.numel() > 0 || train) record(input, [&](tvk::Stream& s) { kernels::norm_forward(s, p); });
  if (update) {
    if (!rm.is_same(running_mean)) running_mean.copy_(rm);
    if (!rv.is_same(running_var)) running_var.copy_(rv);
  }
  return {out, save_mean, save_invstd};
}

Tensor3 batch_norm_native(const Tensor& input, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                          const std::optional<Tensor>& running_var, bool training, double momentum,
                          double eps) {
  return batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                            value_or_undefined(running_mean), value_or_undefined(running_var),
                            training, momentum, eps);
}

void copy_to_out(const Tensor& src, Tensor& out) {
  at::native::resize_output(out, src.sizes());
  out.copy_(src);
}

std::tuple<Tensor&, Tensor&, Tensor&> native_batch_norm_out(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    bool training, double momentum, double eps, Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  auto [o, m, r] = batch_norm_native(input, weight, bias, running_mean, running_var, training, momentum, eps);
  copy_to_out(o, out);
  copy_to_out(m, save_mean);
  copy_to_out(r, save_invstd);
  return {out, save_mean, save_invstd};
}

Tensor3 batch_norm_legit(const Tensor& input, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias, Tensor& running_mean,
                         Tensor& running_var, bool training, double momentum, double eps) {
  return batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                            running_mean, running_var, training, momentum, eps);
}

std::tuple<Tensor&, Tensor&, Tensor&> batch_norm_legit_out(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    Tensor& running_mean, Tensor& running_var, bool training, double momentum, double eps,
    Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  auto [o, m, r] = batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum, eps);
  copy_to_out(o, out);
  copy_to_out(m, save_mean);
  copy_to_out(r, save_invstd);
  return {out, save_mean, save_invstd};
}

Tensor3 batch_norm_legit_no_stats(const Tensor& input, const std::optional<Tensor>& weight,
                                  const std::optional<Tensor>& bias, bool training,
                                  double momentum, double eps) {
  return batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias), Tensor(),
                            Tensor(), training, momentum, eps);
}

Tensor3 batch_norm_legit_no_training(const Tensor& input, const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& bias, const Tensor& running_mean,
                                     const Tensor& running_var, double momentum, double eps) {
  return batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                            running_mean, running_var, /*train=*/false, momentum, eps);
}

Tensor reserve_for(const Tensor& input) { return at::empty({0}, input.options().dtype(at::kByte)); }

std::tuple<Tensor, Tensor, Tensor, Tensor> batch_norm_with_update(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    Tensor& running_mean, Tensor& running_var, double momentum, double eps) {
  auto [o, m, r] = batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                                      running_mean, running_var, /*train=*/true, momentum, eps);
  return {o, m, r, reserve_for(input)};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> batch_norm_with_update_out(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    Tensor& running_mean, Tensor& running_var, double momentum, double eps, Tensor& out,
    Tensor& save_mean, Tensor& save_invstd, Tensor& reserve) {
  auto [o, m, r, s] = batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps);
  copy_to_out(o, out);
  copy_to_out(m, save_mean);
  copy_to_out(r, save_invstd);
  at::native::resize_output(reserve, {0});
  return {out, save_mean, save_invstd, reserve};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> batch_norm_no_update(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    double momentum, double eps) {
  auto [o, m, r] = batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                                      value_or_undefined(running_mean),
                                      value_or_undefined(running_var), /*train=*/false, momentum, eps);
  return {o, m, r, reserve_for(input)};
}

// grad_input, grad_weight, grad_bias per `mask`. train: the saved batch statistics (mean,
// invstd); else the running statistics.
Tensor3 batch_norm_backward_impl(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                                 const Tensor& running_mean, const Tensor& running_var,
                                 const Tensor& save_mean, const Tensor& save_invstd, bool train,
                                 double eps, std::array<bool, 3> mask) {
  check_float(input, "batch_norm_backward_cpu");
  const bool mixed = check_param_dtypes(input, weight, running_mean, running_var, save_mean, save_invstd);
  const kernels::NormShape shape = batch_norm_shape(input);
  const Tensor& mean = train ? save_mean : running_mean;
  const Tensor& var = train ? save_invstd : running_var;
  TORCH_CHECK(mean.defined() && var.defined(), "batch_norm_backward: ",
              train ? "save_mean and save_invstd" : "running_mean and running_var",
              " must be defined");
  check_channel_vector(weight, shape.channels, "weight");
  check_channel_vector(mean, shape.channels, train ? "save_mean" : "running_mean");
  check_channel_vector(var, shape.channels, train ? "save_invstd" : "running_var");
  TORCH_CHECK(grad_out.sizes() == input.sizes(), "batch_norm_backward: grad_out has size ",
              grad_out.sizes(), ", expected ", input.sizes());
  const at::ScalarType param_dtype = at::native::param_scalar_type(input, mixed);
  const Tensor x = input.contiguous(), dy = grad_out.contiguous();
  Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (mask[1]) grad_weight = at::empty({shape.channels}, x.options().dtype(param_dtype));
  if (mask[2]) grad_bias = at::empty({shape.channels}, x.options().dtype(param_dtype));
  const Tensor w = contiguous_or_undefined(weight);
  const Tensor m = mean.contiguous(), v = var.contiguous();
  kernels::NormBackward p;
  p.kind = kind_of(input);
  p.shape = shape;
  p.train = train;
  p.stats_given = !train;
  p.eps = eps;
  p.grad_in = maybe_operand(grad_input, "batch_norm_backward");
  p.x = operand(x, "batch_norm_backward");
  p.grad_out = operand(dy, "batch_norm_backward");
  p.weight = maybe_operand(w, "batch_norm_backward");
  p.mean = operand(m, "batch_norm_backward");
  p.rstd = operand(v, "batch_norm_backward");
  p.grad_weight = maybe_operand(grad_weight, "batch_norm_backward");
  p.grad_bias = maybe_operand(grad_bias, "batch_norm_backward");
  record(input, [&](tvk::Stream& s) { kernels::norm_backward(s, p); });
  return {grad_input, grad_weight, grad_bias};
}

Tensor3 native_batch_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& running_mean,
                                   const std::optional<Tensor>& running_var,
                                   const std::optional<Tensor>& save_mean,
                                   const std::optional<Tensor>& save_invstd, bool train,
                                   double eps, std::array<bool, 3> mask) {
  return batch_norm_backward_impl(grad_out, input, value_or_undefined(weight),
                                  value_or_undefined(running_mean), value_or_undefined(running_var),
                                  value_or_undefined(save_mean), value_or_undefined(save_invstd),
                                  train, eps, mask);
}

Tensor3 batch_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                            const std::optional<Tensor>& running_mean,
                            const std::optional<Tensor>& running_var,
                            const std::optional<Tensor>& save_mean,
                            const std::optional<Tensor>& save_var, bool update, double eps,
                            std::array<bool, 3> mask, const Tensor& /*reserve*/) {
  return batch_norm_backward_impl(grad_out, input, weight, value_or_undefined(running_mean),
                                  value_or_undefined(running_var), value_or_undefined(save_mean),
                                  value_or_undefined(save_var), update, eps, mask);
}

// ---------------------------------------------------------------- layer norm / RMS norm

// [input_shape[:axis], 1, ..., 1]
std::vector<int64_t> stat_shape_of(const Tensor& input, size_t normalized_ndim) {
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  for (size_t d = shape.size() - normalized_ndim; d < shape.size(); ++d) shape[d] = 1;
  return shape;
}

// Forward of layer norm (center) and RMS norm (!center, mean not produced).
// With `residual` (and `sum_out`) defined: the normalized input is x + residual, stored to
// sum_out (the fused residual add; float32 kind).
void row_norm_forward(const Tensor& x, const Tensor& out, const Tensor& weight, const Tensor& bias,
                      const Tensor& mean, const Tensor& rstd, int64_t M, int64_t N, bool center,
                      double eps, ComputeKind kind, const char* name,
                      const Tensor& residual = Tensor(), const Tensor& sum_out = Tensor()) {
  if (N == 0) {  // empty rows: mean 0, rstd NaN (as the CPU kernel)
    if (mean.defined()) mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
    return;
  }
  kernels::NormForward p;
  p.kind = kind;
  p.shape.layout = NormLayout::Row;
  p.shape.channels = M;
  p.shape.inner = N;
  p.center = center;
  p.eps = eps;
  p.out = maybe_operand(out.numel() > 0 ? out : Tensor(), name);
  p.x = operand(x, name);
  p.weight = maybe_operand(weight, name);
  p.bias = maybe_operand(bias, name);
  p.save_mean = maybe_operand(mean, name);
  p.save_rstd = operand(rstd, name);
  p.residual = maybe_operand(residual, name);
  p.sum_out = maybe_operand(sum_out, name);
  record(x, [&](tvk::Stream& s) { kernels::norm_forward(s, p); });
}

// Backward of layer norm / RMS norm: grad_input (per row) and the parameter gradients (per
// normalized element, reduced over the rows).
void row_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                       const Tensor& weight, const Tensor& grad_input, const Tensor& grad_weight,
                       const Tensor& grad_bias, int64_t M, int64_t N, bool center,
                       ComputeKind kind, const char* name) {
  if (grad_input.defined() && grad_input.numel() > 0) {
    kernels::NormBackward p;
    p.kind = kind;
    p.shape.layout = NormLayout::Row;
    p.shape.channels = M;
    p.shape.inner = N;
    p.center = center;
    p.grad_in = operand(grad_input, name);
    p.x = operand(x, name);
    p.grad_out = operand(dy, name);
    p.weight = maybe_operand(weight, name);
    p.mean = maybe_operand(mean, name);
    p.rstd = operand(rstd, name);
    record(x, [&](tvk::Stream& s) { kernels::norm_backward(s, p); });
  }
  if ((grad_weight.defined() || grad_bias.defined()) && N > 0) {
    kernels::NormParamGrad p;
    p.kind = kind;
    p.shape.layout = NormLayout::Row;
    p.shape.outer = M;
    p.shape.channels = N;
    p.shape.inner = 1;
    p.center = center;
    p.x = M > 0 ? operand(x, name) : Operand{};
    p.grad_out = M > 0 ? operand(dy, name) : Operand{};
    p.mean = M > 0 ? maybe_operand(mean, name) : Operand{};
    p.rstd = M > 0 ? operand(rstd, name) : Operand{};
    if (M == 0) {  // nothing to reduce: zeros (the kernels need real input addresses)
      if (grad_weight.defined()) grad_weight.zero_();
      if (grad_bias.defined()) grad_bias.zero_();
      return;
    }
    p.grad_weight = maybe_operand(grad_weight, name);
    p.grad_bias = maybe_operand(grad_bias, name);
    record(x, [&](tvk::Stream& s) { kernels::norm_param_grad(s, p); });
  }
}

Tensor3 native_layer_norm(const Tensor& input, c10::SymIntArrayRef normalized_shape_sym,
                          const std::optional<Tensor>& weight_opt,
                          const std::optional<Tensor>& bias_opt, double eps) {
  const at::IntArrayRef normalized_shape = C10_AS_INTARRAYREF_SLOW(normalized_shape_sym);
  const Tensor& weight = value_or_undefined(weight_opt);
  const Tensor& bias = value_or_undefined(bias_opt);
  const auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  // The CPU's order: the mixed-dtype check (an integer input with float parameters is a
  // RuntimeError), then its kernel's dtype dispatch (NotImplementedError).
  const bool mixed = check_param_dtypes(input, weight, bias);
  check_float(input, "LayerNormKernelImpl");
  const at::ScalarType stat_dtype = at::native::param_scalar_type(input, mixed);
  const Tensor x = input.contiguous();
  Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  Tensor mean = at::empty({M}, x.options().dtype(stat_dtype));
  Tensor rstd = at::empty({M}, x.options().dtype(stat_dtype));
  if (M > 0)
    row_norm_forward(x, out, contiguous_or_undefined(weight), contiguous_or_undefined(bias), mean,
                     rstd, M, N, /*center=*/true, eps, kind_of(input), "native_layer_norm");
  const std::vector<int64_t> stat_shape = stat_shape_of(input, normalized_shape.size());
  return {out, mean.view(stat_shape), rstd.view(stat_shape)};
}

Tensor3 native_layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   c10::SymIntArrayRef normalized_shape_sym, const Tensor& mean,
                                   const Tensor& rstd, const std::optional<Tensor>& weight_opt,
                                   const std::optional<Tensor>& bias_opt, std::array<bool, 3> mask) {
  const at::IntArrayRef normalized_shape = C10_AS_INTARRAYREF_SLOW(normalized_shape_sym);
  const Tensor& weight = value_or_undefined(weight_opt);
  const Tensor& bias = value_or_undefined(bias_opt);
  const auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  check_float(input, "LayerNormBackwardKernelImpl");
  check_param_dtypes(input, weight, bias);
  TORCH_CHECK(mean.numel() == M && rstd.numel() == M, "native_layer_norm_backward: expected ", M,
              " statistics, got mean of ", mean.numel(), " and rstd of ", rstd.numel());
  const Tensor x = input.contiguous(), dy = grad_out.contiguous();
  TORCH_CHECK(dy.sizes() == x.sizes(), "native_layer_norm_backward: grad_out has size ", dy.sizes(),
              ", expected ", x.sizes());
  Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (mask[1] && weight.defined()) grad_weight = at::empty_like(weight, at::MemoryFormat::Contiguous);
  if (mask[2] && (bias.defined() || weight.defined()))
    grad_bias = at::empty_like(bias.defined() ? bias : weight, at::MemoryFormat::Contiguous);
  const Tensor r = rstd.contiguous();
  const Tensor m = mean.scalar_type() == r.scalar_type() ? mean.contiguous()
                                                          : mean.to(r.scalar_type()).contiguous();
  row_norm_backward(dy, x, m, r, contiguous_or_undefined(weight), grad_input, grad_weight,
                    grad_bias, M, N, /*center=*/true, kind_of(input), "native_layer_norm_backward");
  return {grad_input, grad_weight, grad_bias};
}

std::pair<int64_t, int64_t> rms_norm_sizes(const Tensor& input, at::IntArrayRef normalized_shape,
                                           const Tensor& weight) {
  at::native::_check_rms_norm_inputs_symint(input, c10::fromIntArrayRefSlow(normalized_shape), weight);
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  int64_t M = 1, N = 1;
  for (int64_t d = 0; d < input.dim(); ++d) (d < axis ? M : N) *= input.size(d);
  return {M, N};
}

// vk::add_layer_norm: (h, y, mean, rstd) with h = input + residual and (y, mean, rstd) =
// native_layer_norm(h), as the two ops give them (h rounded to the input's dtype before it
// is normalized), in one kernel: torch.compile's fused residual add + layer norm
// (torch_vk/compiler/residual_norm.py). float64 runs the two ops.
std::tuple<Tensor, Tensor, Tensor, Tensor> add_layer_norm(
    const Tensor& input, const Tensor& residual, at::IntArrayRef normalized_shape,
    const std::optional<Tensor>& weight_opt, const std::optional<Tensor>& bias_opt, double eps) {
  TORCH_CHECK(residual.sizes() == input.sizes() && residual.scalar_type() == input.scalar_type() &&
                  residual.device() == input.device(),
              "add_layer_norm: the residual must have the input's shape, dtype and device");
  if (input.scalar_type() == at::kDouble || !at::isFloatingType(input.scalar_type())) {
    const Tensor h = input + residual;
    auto [y, mean, rstd] = native_layer_norm(h, c10::fromIntArrayRefSlow(normalized_shape),
                                             weight_opt, bias_opt, eps);
    return {h, y, mean, rstd};
  }
  const Tensor& weight = value_or_undefined(weight_opt);
  const Tensor& bias = value_or_undefined(bias_opt);
  const auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  const bool mixed = check_param_dtypes(input, weight, bias);
  const at::ScalarType stat_dtype = at::native::param_scalar_type(input, mixed);
  const Tensor x = input.contiguous(), r = residual.contiguous();
  Tensor h = at::empty_like(x, at::MemoryFormat::Contiguous);
  Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  Tensor mean = at::empty({M}, x.options().dtype(stat_dtype));
  Tensor rstd = at::empty({M}, x.options().dtype(stat_dtype));
  if (M > 0)
    row_norm_forward(x, out, contiguous_or_undefined(weight), contiguous_or_undefined(bias), mean,
                     rstd, M, N, /*center=*/true, eps, kind_of(input), "add_layer_norm", r, h);
  const std::vector<int64_t> stat_shape = stat_shape_of(input, normalized_shape.size());
  return {h, out, mean.view(stat_shape), rstd.view(stat_shape)};
}

// aten::rms_norm calls this when the weight (if any) has the input's dtype. Like PyTorch's
// composite: math in fp32 (fp64 for float64), eps defaulting to the epsilon of that type,
// rstd of that type with the normalized dims kept as 1.
std::tuple<Tensor, Tensor> fused_rms_norm(const Tensor& input, at::IntArrayRef normalized_shape,
                                          const std::optional<Tensor>& weight_opt,
                                          std::optional<double> eps_opt) {
  const Tensor& weight = value_or_undefined(weight_opt);
  const auto [M, N] = rms_norm_sizes(input, normalized_shape, weight);
  check_float(input, "rms_norm");
  if (weight.defined()) check_float(weight, "rms_norm");
  const bool f64 = input.scalar_type() == at::kDouble;
  const at::ScalarType opmath = f64 ? at::kDouble : at::kFloat;
  const double eps = eps_opt.value_or(f64 ? std::numeric_limits<double>::epsilon()
                                          : std::numeric_limits<float>::epsilon());
  const Tensor x = input.contiguous();
  // The composite computes in `opmath` (times the weight, promoted) and casts to the input's dtype.
  Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  Tensor rstd = at::empty({M}, x.options().dtype(opmath));
  const bool f64_math = f64 || (weight.defined() && weight.scalar_type() == at::kDouble);
  const ComputeKind kind = f64_math ? ComputeKind::Float64 : ComputeKind::Float32;
  if (M > 0)
    row_norm_forward(x, out, contiguous_or_undefined(weight), Tensor(), Tensor(), rstd, M, N,
                     /*center=*/false, eps, kind, "rms_norm");
  return {out, rstd.view(stat_shape_of(input, normalized_shape.size()))};
}

// vk::add_rms_norm: (h, y, rstd) with h = input + residual and (y, rstd) = _fused_rms_norm(h),
// as the two ops give them (h rounded to the input's dtype before it is normalized), in one
// kernel: torch.compile's fused residual add + RMS norm (torch_vk/compiler/residual_norm.py).
// float64 inputs or weights run the two ops.
std::tuple<Tensor, Tensor, Tensor> add_rms_norm(const Tensor& input, const Tensor& residual,
                                                at::IntArrayRef normalized_shape,
                                                const std::optional<Tensor>& weight_opt,
                                                std::optional<double> eps_opt) {
  TORCH_CHECK(residual.sizes() == input.sizes() && residual.scalar_type() == input.scalar_type() &&
                  residual.device() == input.device(),
              "add_rms_norm: the residual must have the input's shape, dtype and device");
  const Tensor& weight = value_or_undefined(weight_opt);
  if (input.scalar_type() == at::kDouble || !at::isFloatingType(input.scalar_type()) ||
      (weight.defined() && weight.scalar_type() == at::kDouble)) {
    const Tensor h = input + residual;
    auto [y, rstd] = fused_rms_norm(h, normalized_shape, weight_opt, eps_opt);
    return {h, y, rstd};
  }
  const auto [M, N] = rms_norm_sizes(input, normalized_shape, weight);
  check_float(input, "add_rms_norm");
  if (weight.defined()) check_float(weight, "add_rms_norm");
  const double eps = eps_opt.value_or(std::numeric_limits<float>::epsilon());
  const Tensor x = input.contiguous(), r = residual.contiguous();
  Tensor h = at::empty_like(x, at::MemoryFormat::Contiguous);
  Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  Tensor rstd = at::empty({M}, x.options().dtype(at::kFloat));
  if (M > 0)
    row_norm_forward(x, out, contiguous_or_undefined(weight), Tensor(), Tensor(), rstd, M, N,
                     /*center=*/false, eps, ComputeKind::Float32, "add_rms_norm", r, h);
  return {h, out, rstd.view(stat_shape_of(input, normalized_shape.size()))};
}

std::tuple<Tensor, Tensor> fused_rms_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                   at::IntArrayRef normalized_shape,
                                                   const Tensor& rstd,
                                                   const std::optional<Tensor>& weight_opt,
                                                   std::array<bool, 2> mask) {
  const Tensor& weight = value_or_undefined(weight_opt);
  const auto [M, N] = rms_norm_sizes(input, normalized_shape, weight);
  check_float(input, "rms_norm_backward");
  TORCH_CHECK(rstd.numel() == M, "_fused_rms_norm_backward: expected ", M, " rstd values, got ",
              rstd.numel());
  const Tensor x = input.contiguous(), dy = grad_out.contiguous();
  TORCH_CHECK(dy.sizes() == x.sizes(), "_fused_rms_norm_backward: grad_out has size ", dy.sizes(),
              ", expected ", x.sizes());
  Tensor grad_input, grad_weight;
  if (mask[0]) grad_input = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (mask[1] && weight.defined()) grad_weight = at::empty_like(weight, at::MemoryFormat::Contiguous);
  const bool f64 = input.scalar_type() == at::kDouble || grad_out.scalar_type() == at::kDouble ||
                   (weight.defined() && weight.scalar_type() == at::kDouble);
  row_norm_backward(dy, x, Tensor(), rstd.contiguous(), contiguous_or_undefined(weight), grad_input,
                    grad_weight, Tensor(), M, N, /*center=*/false,
                    f64 ? ComputeKind::Float64 : ComputeKind::Float32, "rms_norm_backward");
  return {grad_input, grad_weight};
}

// ---------------------------------------------------------------- group norm

void check_group_norm(const Tensor& X, const Tensor& weight, const Tensor& bias, int64_t N,
                      int64_t C, int64_t HxW, int64_t group) {
  TORCH_CHECK(group > 0, "Expected num groups to be greater than 0, got ", group);
  TORCH_CHECK(C % group == 0, "Expected number of channels in input to be divisible by ",
              "num_groups, but got input of shape ", X.sizes(), " and num_groups=", group);
  TORCH_CHECK(X.numel() == N * C * HxW, "Expected X.numel() == N * C * HxW to be true, but got false.");
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C),
              "Expected weight to be a vector of size equal to the number of channels in input, "
              "but got weight of shape ", weight.sizes(), " and input of shape ", X.sizes());
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.numel() == C),
              "Expected bias to be a vector of size equal to the number of channels in input, "
              "but got bias of shape ", bias.sizes(), " and input of shape ", X.sizes());
}

kernels::NormShape group_norm_shape(int64_t N, int64_t C, int64_t HxW, int64_t group) {
  kernels::NormShape s;
  s.layout = NormLayout::Group;
  s.outer = 1;
  s.channels = N * group;
  s.inner = C / group * HxW;
  s.groups = group;
  s.hw = HxW;
  return s;
}

Tensor3 native_group_norm(const Tensor& X, const std::optional<Tensor>& weight_opt,
                          const std::optional<Tensor>& bias_opt, c10::SymInt N_sym,
                          c10::SymInt C_sym, c10::SymInt HxW_sym, int64_t group, double eps) {
  const int64_t N = N_sym.expect_int(), C = C_sym.expect_int(), HxW = HxW_sym.expect_int();
  const Tensor& weight = value_or_undefined(weight_opt);
  const Tensor& bias = value_or_undefined(bias_opt);
  check_group_norm(X, weight, bias, N, C, HxW, group);
  const bool mixed = check_param_dtypes(X, weight, bias);  // before the dtype dispatch, as the CPU
  check_float(X, "group_norm");
  const at::ScalarType stat_dtype = at::native::param_scalar_type(X, mixed);
  const Tensor x = X.contiguous();
  Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  Tensor mean = at::empty({N, group}, x.options().dtype(stat_dtype));
  Tensor rstd = at::empty({N, group}, x.options().dtype(stat_dtype));
  if (N > 0 && x.numel() == 0) {  // empty groups: mean 0, rstd NaN (as the CPU kernel)
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
  } else if (N > 0) {
    kernels::NormForward p;
    p.kind = kind_of(X);
    p.shape = group_norm_shape(N, C, HxW, group);
    p.eps = eps;
    p.out = maybe_operand(out.numel() > 0 ? out : Tensor(), "native_group_norm");
    p.x = operand(x, "native_group_norm");
    const Tensor w = contiguous_or_undefined(weight), b = contiguous_or_undefined(bias);
    p.weight = maybe_operand(w, "native_group_norm");
    p.bias = maybe_operand(b, "native_group_norm");
    p.save_mean = operand(mean, "native_group_norm");
    p.save_rstd = operand(rstd, "native_group_norm");
    record(X, [&](tvk::Stream& s) { kernels::norm_forward(s, p); });
  }
  return {out, mean, rstd};
}

Tensor3 native_group_norm_backward(const Tensor& grad_out, const Tensor& X, const Tensor& mean,
                                   const Tensor& rstd, const std::optional<Tensor>& weight_opt,
                                   c10::SymInt N_sym, c10::SymInt C_sym, c10::SymInt HxW_sym,
                                   int64_t group, std::array<bool, 3> mask) {
  const int64_t N = N_sym.expect_int(), C = C_sym.expect_int(), HxW = HxW_sym.expect_int();
  const Tensor& weight = value_or_undefined(weight_opt);
  check_group_norm(X, weight, Tensor(), N, C, HxW, group);
  check_float(X, "GroupNormBackwardKernelImpl");
  const bool mixed = check_param_dtypes(X, weight, mean, rstd);
  TORCH_CHECK(mean.numel() == N * group && rstd.numel() == N * group,
              "native_group_norm_backward: expected ", N * group, " statistics");
  TORCH_CHECK(grad_out.sizes() == X.sizes(), "native_group_norm_backward: grad_out has size ",
              grad_out.sizes(), ", expected ", X.sizes());
  const Tensor x = X.contiguous(), dy = grad_out.contiguous();
  const Tensor m = mean.contiguous(), r = rstd.contiguous();
  const Tensor w = contiguous_or_undefined(weight);
  const at::ScalarType param_dtype = at::native::param_scalar_type(X, mixed);
  Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) grad_input = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (mask[1]) grad_weight = at::empty({C}, x.options().dtype(param_dtype));
  if (mask[2]) grad_bias = at::empty({C}, x.options().dtype(param_dtype));
  const ComputeKind kind = kind_of(X);
  if (grad_input.defined() && grad_input.numel() > 0) {
    kernels::NormBackward p;
    p.kind = kind;
    p.shape = group_norm_shape(N, C, HxW, group);
    p.grad_in = operand(grad_input, "native_group_norm_backward");
    p.x = operand(x, "native_group_norm_backward");
    p.grad_out = operand(dy, "native_group_norm_backward");
    p.weight = maybe_operand(w, "native_group_norm_backward");
    p.mean = operand(m, "native_group_norm_backward");
    p.rstd = operand(r, "native_group_norm_backward");
    record(X, [&](tvk::Stream& s) { kernels::norm_backward(s, p); });
  }
  if (grad_weight.defined() || grad_bias.defined()) {
    if (x.numel() == 0) {
      if (grad_weight.defined()) grad_weight.zero_();
      if (grad_bias.defined()) grad_bias.zero_();
    } else {
      kernels::NormParamGrad p;
      p.kind = kind;
      p.shape.layout = NormLayout::Group;
      p.shape.outer = N;
      p.shape.channels = C;
      p.shape.inner = HxW;
      p.shape.groups = group;
      p.shape.hw = HxW;
      p.x = operand(x, "native_group_norm_backward");
      p.grad_out = operand(dy, "native_group_norm_backward");
      p.mean = operand(m, "native_group_norm_backward");
      p.rstd = operand(r, "native_group_norm_backward");
      p.grad_weight = maybe_operand(grad_weight, "native_group_norm_backward");
      p.grad_bias = maybe_operand(grad_bias, "native_group_norm_backward");
      record(X, [&](tvk::Stream& s) { kernels::norm_param_grad(s, p); });
    }
  }
  return {grad_input, grad_weight, grad_bias};
}

// ---------------------------------------------------------------- weight norm
// w = g * v / ||v|| with the norm over every dim but `dim` (torch.nn.utils weight_norm, the
// fused path PyTorch takes for dim 0 and the last dim). Composed from native vk ops: the
// reductions and element-wise ops it needs already run as one or two dispatches each.

std::vector<int64_t> dims_except(const at::Tensor& v, int64_t dim) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (d != dim) dims.push_back(d);
  return dims;
}

std::tuple<at::Tensor, at::Tensor> weight_norm_interface(const at::Tensor& v, const at::Tensor& g,
                                                         int64_t dim) {
  TORCH_CHECK(v.device() == g.device(), "_weight_norm_interface: v and g must be on the same device");
  TORCH_CHECK(dim == 0 || dim == v.dim() - 1,
              "fused kernels can only be applied for first or last dim");
  at::Tensor norms = at::linalg_vector_norm(v, 2, dims_except(v, dim), /*keepdim=*/true);
  if (v.dim() > 0) norms = norms.reshape(g.sizes());
  at::Tensor w = v * (g / norms);
  return {w, norms};
}

std::tuple<at::Tensor, at::Tensor> weight_norm_interface_backward(
    const at::Tensor& grad_w, const at::Tensor& saved_v, const at::Tensor& saved_g,
    const at::Tensor& saved_norms, int64_t dim) {
  TORCH_CHECK(saved_v.is_contiguous(), "saved_v must be contiguous");
  TORCH_CHECK(saved_g.is_contiguous(), "saved_g must be contiguous");
  TORCH_CHECK(saved_norms.is_contiguous(), "saved_norms must be contiguous");
  TORCH_CHECK(dim == 0 || dim == saved_v.dim() - 1,
              "fused kernels can only differentiate the first or last dim");
  // d/dv (g v / n) applied to grad_w: (g / n) (grad_w - v (v . grad_w) / n^2).
  const at::Tensor norms = saved_norms.reshape(saved_g.sizes());
  at::Tensor dot = at::sum(grad_w * saved_v, dims_except(saved_v, dim), /*keepdim=*/true);
  if (saved_v.dim() > 0) dot = dot.reshape(saved_g.sizes());
  at::Tensor grad_g = dot / norms;
  at::Tensor grad_v = (saved_g / norms) * (grad_w - saved_v * (grad_g / norms));
  return {grad_v, grad_g};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_weight_norm_interface", TORCH_FN(weight_norm_interface));
  m.impl("_weight_norm_interface_backward", TORCH_FN(weight_norm_interface_backward));
  m.impl("native_batch_norm", TORCH_FN(batch_norm_native));
  m.impl("native_batch_norm.out", TORCH_FN(native_batch_norm_out));
  m.impl("_native_batch_norm_legit", TORCH_FN(batch_norm_legit));
  m.impl("_native_batch_norm_legit.out", TORCH_FN(batch_norm_legit_out));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(batch_norm_legit_no_stats));
  m.impl("_native_batch_norm_legit_no_training", TORCH_FN(batch_norm_legit_no_training));
  m.impl("_batch_norm_with_update", TORCH_FN(batch_norm_with_update));
  m.impl("_batch_norm_with_update.out", TORCH_FN(batch_norm_with_update_out));
  m.impl("_batch_norm_no_update", TORCH_FN(batch_norm_no_update));
  m.impl("native_batch_norm_backward", TORCH_FN(native_batch_norm_backward));
  m.impl("batch_norm_backward", TORCH_FN(batch_norm_backward));
  m.impl("native_layer_norm", TORCH_FN(native_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(native_layer_norm_backward));
  m.impl("native_group_norm", TORCH_FN(native_group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(native_group_norm_backward));
  m.impl("_fused_rms_norm", TORCH_FN(fused_rms_norm));
  m.impl("_fused_rms_norm_backward", TORCH_FN(fused_rms_norm_backward));
}

TORCH_LIBRARY_FRAGMENT(vk, m) {
  m.def("add_layer_norm(Tensor input, Tensor residual, int[] normalized_shape, Tensor? weight, "
        "Tensor? bias, float eps) -> (Tensor, Tensor, Tensor, Tensor)");
  m.def("add_rms_norm(Tensor input, Tensor residual, int[] normalized_shape, Tensor? weight, "
        "float? eps) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(vk, PrivateUse1, m) {
  m.impl("add_layer_norm", TORCH_FN(add_layer_norm));
  m.impl("add_rms_norm", TORCH_FN(add_rms_norm));
}

}  // namespace tvk::aten
