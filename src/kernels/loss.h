// L2: loss functions (shaders/loss.comp). No torch headers.
//
// The element-wise loss terms and their gradients over a strided, broadcast index space (the
// caller reduces the terms with the reduce kernels), and the per-sample gather / scatter of
// nll_loss over contiguous [N, C, S] inputs.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class LossOp : int32_t {
  Mse = 0,               // out = (x - y)^2                                   in = {x, y}
  MseBackward = 1,       // out = norm * 2 * (x - y) * g                      in = {g, x, y}
  SmoothL1 = 2,          // |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta      in = {x, y}
  SmoothL1Backward = 3,  // d <= -beta ? -norm g : d >= beta ? norm g : norm d g / beta   in = {g, x, y}
  Huber = 4,             // |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta)   in = {x, y}
  HuberBackward = 5,     // d <= -delta ? -norm g delta : d >= delta ? norm g delta : norm d g
  Bce = 6,               // (y - 1) max(log1p(-x), -100) - y max(log x, -100), times w
                         //                                                   in = {x, y[, w]}
                         // x or y outside [0, 1] or NaN: reported as a device error
                         // (Bce{Input,Target}OutOfRange, thrown at the stream's next wait)
  BceBackward = 7,       // norm * w * g (x - y) / max((1 - x) x, 1e-12)      in = {g, x, y[, w]}
  BceWithLogits = 8,     // w ((1 - y) x - (1 + (pw - 1) y) log_sigmoid(x))  in = {x, y, w, pw}
};

constexpr int kLossMaxOperands = 6;

struct LossGeometry {
  int32_t ndim = 0;  // dimension 0 fastest
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kLossMaxOperands][kMaxDims] = {};  // element strides; operand 0 = out
};

struct LossElementwise {
  LossOp op = LossOp::Mse;
  ComputeKind kind = ComputeKind::Float32;  // Float32 (fp16 / bf16 / fp32) or Float64
  int64_t numel = 0;
  LossGeometry geometry;
  // operands[0] = out, then the inputs listed above; an absent optional weight (Bce*:
  // has_weight false; BceWithLogits: has_weight / has_pos_weight) is not read.
  Operand operands[kLossMaxOperands];
  int num_operands = 0;
  bool has_weight = false;
  bool has_pos_weight = false;
  double param = 0;  // beta (SmoothL1*), delta (Huber*)
  double norm = 1;   // gradient scale (1 / numel for mean reductions)
};

// Records the op; numel == 0 records nothing. Throws std::invalid_argument for a wrong
// operand count, bad kinds, float64 without shaderFloat64, more than 2^31 - 1 elements or
// offsets, null or misaligned operands.
void loss_elementwise(Stream& stream, const LossElementwise& problem);

// nll_loss over a contiguous `self` [N, C, S] (log-probabilities), `target` [N, S] (Int64 or
// UInt8), optional `weight` [C] (address 0: none). Samples whose target equals ignore_index
// contribute 0 with weight 0; targets outside [0, C) are skipped the same way (the caller
// reports them when it can).
struct NllLoss {
  ComputeKind kind = ComputeKind::Float32;
  int64_t n = 0, classes = 0, spatial = 1;
  int64_t ignore_index = -100;
  Operand self, target, weight;
};
// reduction none: out[n * S + s] = -w[t] self[n, t, s] (out: self's dtype class, contiguous).
// Otherwise `out` is a [2, N * S] scratch of the accumulator dtype (Float32 / Float64): the
// per-sample terms, then the per-sample weights.
void nll_loss_forward(Stream& stream, const NllLoss& problem, bool reduction_none, Operand out);
// grad_input (contiguous [N, C, S], zero-filled by the caller) at [n, t, s] =
// w[t] * -(g / total_weight if mean else g), g = grad_output[n * S + s] (reduction none) or
// grad_output[0].
void nll_loss_backward(Stream& stream, const NllLoss& problem, bool reduction_none, bool mean,
                       Operand grad_output, Operand total_weight, Operand grad_input);

}  // namespace tvk::kernels
