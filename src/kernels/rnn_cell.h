// L2: the fused point-wise halves of LSTM / GRU cells (shaders/rnn_cell.comp). No torch headers.
//
// Every operand is contiguous and all share one dtype: gates [batch, G * hidden] (G = 4 for
// LSTM, 3 for GRU, gate k of unit j at column k * hidden + j), states [batch, hidden], biases
// [G * hidden], workspaces [batch, 4 * hidden] (LSTM: activated i, f, g, o) and
// [batch, 5 * hidden] (GRU: r, z, n, hidden n-gate with bias, hx).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class RnnCellOp : int32_t {
  LstmForward = 0,   // in: input_gates, hidden_gates, cx, [b_ih, b_hh]  out: hy, cy, workspace
  LstmBackward = 1,  // in: [grad_hy], [grad_cy], cx, cy, workspace      out: grad_gates, grad_cx
  GruForward = 2,    // in: input_gates, hidden_gates, hx, [b_ih, b_hh]  out: hy, workspace
  GruBackward = 3,   // in: grad_hy, workspace           out: grad_input_gates, grad_hidden_gates, grad_hx
};

struct RnnCell {
  RnnCellOp op = RnnCellOp::LstmForward;
  // Float32 for float16 / bfloat16 / float32 operands, Float64 for float64 (shaderFloat64).
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 0, hidden = 0;
  bool has_bias = false;  // forward ops: biases given
  // Operands in the order of the op's comment above, inputs then outputs; an optional input
  // that is absent has address 0 (LSTM backward: grad_hy or grad_cy, not both).
  Operand operands[8];
};

// Records the op on `stream`; an empty batch or hidden size records nothing. Throws
// std::invalid_argument for negative sizes, more than 2^31 - 1 gate elements, mixed dtypes,
// null (where required) or misaligned addresses, or float64 without shaderFloat64.
void rnn_cell(Stream& stream, const RnnCell& problem);

}  // namespace tvk::kernels
