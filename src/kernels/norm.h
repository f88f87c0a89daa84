// L2: the normalization family (shaders/norm.comp): batch, layer, group and RMS norm, forward
// and backward. No torch headers.
//
// Every op views a contiguous tensor as [outer, channels, inner] (row-major: element
// (o, c, i) at (o * channels + c) * inner + i) and works per segment c, the outer * inner
// elements of channel c:
//   layer / RMS norm  Layout::Row      outer = 1, channels = rows (M), inner = normalized size (N);
//                                      parameters indexed by i
//   batch norm        Layout::Channel  outer = batch, channels = C, inner = spatial size;
//                                      parameters and statistics indexed by c
//   group norm        Layout::Group    outer = 1, channels = batch * groups,
//                                      inner = C / groups * hw; parameter of element i of
//                                      segment c: (c % groups) * (C / groups) + i / hw
// NormParamGrad instead reduces per parameter p of [outer, P, inner] (layer / RMS norm:
// outer = M, P = N, inner = 1, statistics index o; group norm: outer = batch, P = C,
// inner = hw, statistics index o * groups + p / (C / groups)).
//
// Math in fp32 for float16 / bfloat16 / float32 operands (any mix; loads convert, stores
// round once), in fp64 for the Float64 kind (devices with shaderFloat64; needed when an
// operand is float64). Statistics are two-pass (mean, then the sum of squared deviations).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class NormLayout : int32_t { Row = 0, Channel = 1, Group = 2 };

struct NormShape {
  NormLayout layout = NormLayout::Row;
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t groups = 1, hw = 1;  // Layout::Group only (inner must be a multiple of hw)
};

// Forward: per segment, mean and rstd = 1 / sqrt(var + eps) (biased variance), then
// out = (x - mean) * rstd * weight + bias. `center` false (RMS norm): mean = 0, var = mean(x^2).
// `stats_given` (batch norm eval): mean = running_mean[c], rstd = 1 / sqrt(running_var[c] + eps),
// nothing is reduced, save_* and `update` are ignored. An empty segment has mean 0, rstd NaN.
// `update` (batch norm training): running_mean = momentum * mean + (1 - momentum) * running_mean,
// running_var likewise with the unbiased variance (NaN for one element per segment).
// Optional (address 0): out (statistics only), weight, bias, save_mean, save_rstd.
struct NormForward {
  ComputeKind kind = ComputeKind::Float32;
  NormShape shape;
  bool center = true;
  bool stats_given = false;
  bool update = false;
  double eps = 1e-5, momentum = 0.1;
  Operand out, x, weight, bias;
  Operand save_mean, save_rstd;         // one element per segment
  Operand running_mean, running_var;    // one element per segment
  // Fused residual add (Layout::Row, Float32 kind, no stats_given / update): the normalized
  // input is h = x + residual, rounded to x's dtype, and h is stored to sum_out. residual
  // and sum_out have x's dtype and layout; both or neither are given.
  Operand residual, sum_out;
};
void norm_forward(Stream& stream, const NormForward& problem);

// Input gradient: with xh = (x - mean) * rstd and g = grad_out * weight,
//   train:  grad_in = rstd * (g - mean(g) - xh * mean(g * xh))   (no mean(g) without `center`)
//   !train: grad_in = g * rstd
// (mean / rstd: the saved statistics, or with `stats_given` running_mean / running_var,
// rstd = 1 / sqrt(running_var + eps)). Layout::Channel also writes grad_weight[c] =
// sum grad_out * xh and grad_bias[c] = sum grad_out. Optional: grad_in, weight, grad_weight,
// grad_bias; `mean` is unused without `center`.
struct NormBackward {
  ComputeKind kind = ComputeKind::Float32;
  NormShape shape;
  bool center = true;
  bool train = true;
  bool stats_given = false;
  double eps = 1e-5;
  Operand grad_in, x, grad_out, weight;
  Operand mean, rstd;  // or running_mean / running_var with stats_given
  Operand grad_weight, grad_bias;
};
void norm_backward(Stream& stream, const NormBackward& problem);

// Parameter gradients of layer / RMS / group norm (shape.layout Row or Group, the [outer, P,
// inner] view above, shape.channels = P): grad_weight[p] = sum grad_out * xh,
// grad_bias[p] = sum grad_out. Either output may be absent (address 0).
struct NormParamGrad {
  ComputeKind kind = ComputeKind::Float32;
  NormShape shape;
  bool center = true;
  Operand x, grad_out, mean, rstd;
  Operand grad_weight, grad_bias;
};
void norm_param_grad(Stream& stream, const NormParamGrad& problem);

// All three record nothing for zero segments, and throw std::invalid_argument for a kind
// other than Float32 / Float64, Float64 without shaderFloat64 ("float64 is not supported on
// this device (no shaderFloat64)"), float64 operands with the Float32 kind, negative or
// inconsistent sizes, missing or misaligned required addresses, or more than 2^31 - 1
// elements.

// Knobs for tests (defaults are the production choices). Not synchronized.
struct NormTuning {
  // Registers and SubgroupRow apply to layer / RMS norm forward and input gradient in float32
  // math (else Workgroup); SubgroupRow needs the subgroup variants (else Registers).
  enum class Strategy { Auto, Workgroup, Thread, Registers, SubgroupRow };
  Strategy strategy = Strategy::Auto;
  uint32_t max_workgroup = 256;  // power of two; Auto picks 32..max by segment length
  bool subgroups = true;         // use the subgroup variants when the device has them
};
NormTuning& norm_tuning();

}  // namespace tvk::kernels
