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

// Margin losses over a contiguous x [N, C] (N = rows, C = classes; Float32 or Float64 operands
// of one dtype, targets Int64). Targets are checked on the device: a bad one is reported to the
// stream's device error record (thrown at its next wait) and never used as an index.
struct MarginLoss {
  ComputeKind kind = ComputeKind::Float32;
  int64_t rows = 0, classes = 0;
  Operand self;    // x [N, C]
  Operand target;  // multi_margin: [N]; multilabel: [N, C], each row's labels up to its first -1
  Operand weight;  // multi_margin only; address 0: none
  int p = 1;       // multi_margin: 1 or 2
  double margin = 1;
};
// out[n] = sum_{i != t_n} w[t_n] max(0, margin - x[n, t_n] + x[n, i])^p / C (one per row).
// Targets outside [0, C): DeviceErrorCode::MultiMarginTargetOutOfRange, the row gives 0.
void multi_margin_loss_forward(Stream& stream, const MarginLoss& problem, Operand out);
// grad_input [N, C] = the CPU's gradient times scale * grad_output (grad_output[n] when
// per_row_grad, else grad_output[0]); scale = 1 / C (1 / (N C) for mean).
void multi_margin_loss_backward(Stream& stream, const MarginLoss& problem, double scale, bool per_row_grad,
                                Operand grad_output, Operand grad_input);
// out[n] = sum over the row's labels j and non-label classes i of max(0, 1 - x[j] + x[i]) / C;
// is_target [N, C] = 1 at the labels, else 0. Entries outside [-1, C):
// DeviceErrorCode::MultilabelMarginTargetOutOfRange (ignored as labels).
void multilabel_margin_loss_forward(Stream& stream, const MarginLoss& problem, Operand out, Operand is_target);
void multilabel_margin_loss_backward(Stream& stream, const MarginLoss& problem, double scale, bool per_row_grad,
                                     Operand grad_output, Operand is_target, Operand grad_input);

// CTC loss (log-space alpha / beta recursions, one workgroup per sample). log_probs [T, N, C]
// contiguous Float32 / Float64; targets Int32 / Int64, sample b's labels contiguous from
// offset meta[2][b]; meta Int64 [3, N] = input lengths, target lengths, target offsets (the
// caller validates them: lengths within T and the targets); S = 2 max_target_length + 1.
// Labels outside [0, C) have probability 0 (they are never used as an index).
struct CtcLoss {
  ComputeKind kind = ComputeKind::Float32;
  int64_t time = 0, batch = 0, classes = 0, extended = 1;  // T, N, C, S
  int64_t blank = 0;
  bool zero_infinity = false;
  Operand log_probs, targets, meta;
};
// log_alpha [N, T, S] (-inf outside each sample's lengths) and nll [N].
void ctc_loss_forward(Stream& stream, const CtcLoss& problem, Operand log_alpha, Operand nll);
// grad [T, N, C] (0 for t >= input length, and for samples with nll = inf under zero_infinity).
// alpha_beta: [2, N, T, S] scratch whose first half holds log_alpha (the second is written
// here); nll_grad: [2, N] = nll, grad_output.
void ctc_loss_backward(Stream& stream, const CtcLoss& problem, Operand alpha_beta, Operand nll_grad, Operand grad);

}  // namespace tvk::kernels
