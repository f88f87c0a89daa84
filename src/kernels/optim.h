// L2: fused optimizer steps (shaders/optim.comp). No torch headers.
//
// One call updates every element of a list of parameter tensors in place (Adam, AdamW or SGD,
// the math of PyTorch's fused CUDA / CPU kernels), recording one dispatch per batch of up to
// kOptimMaxTensorsPerDispatch tensors: the tensors' addresses go into a small table in the
// stream's parameter ring, so the launch count does not grow with the number of parameters.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// The values are the shader's OP codes (3 and 4 are the AMP ops).
enum class OptimOp : int32_t { Adam = 0, AdamW = 1, Sgd = 2, Adagrad = 5 };

// One parameter tensor and its state, all contiguous with `numel` elements of the step's
// dtype. Addresses that an op or configuration does not use must be 0.
struct OptimTensor {
  uint64_t param = 0;
  uint64_t grad = 0;
  uint64_t state0 = 0;  // Adam: exp_avg; SGD: momentum buffer (with momentum); Adagrad: state_sum
  uint64_t state1 = 0;  // Adam: exp_avg_sq
  uint64_t state2 = 0;  // Adam: max_exp_avg_sq (amsgrad)
  uint64_t step = 0;    // Adam, Adagrad: a float32 step count (already incremented)
  int64_t numel = 0;
};

struct OptimStep {
  OptimOp op = OptimOp::Adam;
  // Float32 for float16 / bfloat16 / float32 tensors, Float64 for float64 (shaderFloat64).
  ComputeKind kind = ComputeKind::Float32;
  DType dtype = DType::Float32;  // params, grads and state
  std::vector<OptimTensor> tensors;
  double lr = 0;
  double beta1 = 0;     // SGD: momentum; Adagrad: lr_decay
  double beta2 = 0;     // SGD: dampening
  double weight_decay = 0;
  double eps = 0;
  bool amsgrad = false;
  bool maximize = false;
  bool momentum = false;    // SGD: state0 is a momentum buffer
  bool nesterov = false;    // SGD
  bool first_step = false;  // SGD: the momentum buffer starts as the gradient
  // Device addresses of float32 scalars, or 0: the learning rate (replaces `lr`), the AMP
  // gradient scale (grads are divided by it and written back unscaled) and the found-inf flag
  // (a non-zero value skips the whole step on the device).
  uint64_t lr_tensor = 0;
  uint64_t grad_scale = 0;
  uint64_t found_inf = 0;
};

constexpr int kOptimMaxTensorsPerDispatch = 512;

// Records the step. Empty tensors are skipped; an empty list records nothing. Throws
// std::invalid_argument for a kind other than Float32 / Float64, Float64 without
// shaderFloat64, a float64 dtype with the Float32 kind, a non-floating dtype, null or
// misaligned addresses of used operands, or a tensor of 2^31 or more elements.
void optim_step(Stream& stream, const OptimStep& step);

// AMP gradient unscaling (torch._amp_foreach_non_finite_check_and_unscale_): every element
// g of every tensor becomes g * inv_scale (unchanged when inv_scale is 1), and found_inf
// (float32 scalar) is set to 1 when any g is inf or NaN; it is never reset. Tensors are
// contiguous with `numel` elements of `dtype` (floating), found_inf and inv_scale float32
// device scalars. One dispatch per kOptimMaxTensorsPerDispatch tensors.
struct AmpUnscale {
  ComputeKind kind = ComputeKind::Float32;  // Float64 for float64 tensors
  DType dtype = DType::Float32;
  std::vector<OptimTensor> tensors;  // uses param (the gradient) and numel
  uint64_t found_inf = 0;
  uint64_t inv_scale = 0;
};
void amp_unscale(Stream& stream, const AmpUnscale& problem);

// AMP loss-scale update (torch._amp_update_scale_), one invocation on the device: with
// found_inf != 0 the scale is multiplied by backoff and the growth tracker reset, else the
// tracker grows and after `growth_interval` successful steps the scale is multiplied by
// `growth` (unless that overflows) and the tracker reset. scale / found_inf: float32 scalars,
// growth_tracker: an int32 scalar.
void amp_update_scale(Stream& stream, uint64_t scale, uint64_t growth_tracker, uint64_t found_inf,
                      double growth, double backoff, int64_t growth_interval);

}  // namespace tvk::kernels
