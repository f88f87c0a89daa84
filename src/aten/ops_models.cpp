// Native vk ops that whole models reach and that had no vk kernel (found by
// tests/python/test_model_zoo.py under TORCH_VK_FALLBACK=error).
//
//   _thnn_fused_lstm_cell, _thnn_fused_lstm_cell_backward_impl
//   _thnn_fused_gru_cell,  _thnn_fused_gru_cell_backward
//       The point-wise halves of an LSTM / GRU cell. PyTorch's RNN code (RNN.cpp, LSTMCell /
//       GRUCell) calls them for CUDA, XPU *and* PrivateUse1 inputs after the two gate GEMMs,
//       so nn.LSTM / nn.GRU / LSTMCell / GRUCell on vk reach them on every time step; the CPU has
//       no kernel for them at all (the fallback could not run them). Semantics follow CUDA's
//       RNN.cu: float32 / float64 / float16 / bfloat16, half types computed in float32.
//       One dispatch per call (shaders/rnn_cell.comp); the backward adds one bias-gradient
//       reduction per bias.
//       The workspace layout is private to this file (forward and backward agree on it):
//         LSTM: [B, 4H] = activated gates (sigmoid i, sigmoid f, tanh g, sigmoid o), as CUDA;
//         GRU:  [B, 5H] = (r, z, n, hidden n-gate incl. bias, hx): the backward gets no hx.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/rnn_cell.h"

namespace tvk::aten {
namespace {

using Tensor2 = std::tuple<at::Tensor, at::Tensor>;
using Tensor3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using Tensor5 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// CUDA's checkSizes / checkSameGPU for the fused cells: gates [B, G*H], state [B, H], biases [G*H].
void check_cell_inputs(const char* name, const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                       const at::Tensor& state, const std::optional<at::Tensor>& input_bias,
                       const std::optional<at::Tensor>& hidden_bias, int64_t gate_count) {
  TORCH_CHECK(input_gates.dim() == 2, name, ": expected 2-D input_gates, got ", input_gates.dim(), "-D");
  TORCH_CHECK(state.dim() == 2, name, ": expected a 2-D hidden state, got ", state.dim(), "-D");
  const int64_t batch = input_gates.size(0);
  const int64_t hidden = state.size(1);
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes(), name, ": input_gates ", input_gates.sizes(),
              " and hidden_gates ", hidden_gates.sizes(), " must have the same size");
  TORCH_CHECK(input_gates.size(1) == gate_count * hidden && state.size(0) == batch, name,
              ": expected gates of size [", batch, ", ", gate_count * hidden, "], got ", input_gates.sizes());
  const bool has_input_bias = input_bias.has_value() && input_bias->defined();
  const bool has_hidden_bias = hidden_bias.has_value() && hidden_bias->defined();
  TORCH_CHECK(has_input_bias == has_hidden_bias, name, ": input_bias and hidden_bias must both be given or both omitted");
  if (has_input_bias) {
    for (const at::Tensor* bias : {&*input_bias, &*hidden_bias}) {
      TORCH_CHECK(bias->dim() == 1 && bias->size(0) == gate_count * hidden, name, ": expected a bias of size [",
                  gate_count * hidden, "], got ", bias->sizes());
    }
  }
  for (const at::Tensor* t : {&input_gates, &hidden_gates, &state}) {
    TORCH_CHECK(t->device() == input_gates.device(), name, ": all tensors must be on the same device");
    TORCH_CHECK(t->scalar_type() == input_gates.scalar_type(), name, ": all tensors must have the same dtype");
  }
  const auto dtype = input_gates.scalar_type();
  if (!(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf || dtype == at::kBFloat16))
    raise_not_implemented_for(name, dtype);
}

// Records one fused cell dispatch (shaders/rnn_cell.comp) over contiguous operands; an
// undefined tensor in `tensors` is an absent optional operand.
void launch_cell(kernels::RnnCellOp op, int64_t batch, int64_t hidden, bool has_bias,
                 std::initializer_list<at::Tensor> tensors, const char* name) {
  kernels::RnnCell p;
  p.op = op;
  p.batch = batch;
  p.hidden = hidden;
  p.has_bias = has_bias;
  bool f64 = false;
  int i = 0;
  const at::Tensor* first = nullptr;  // the first operand given (an optional one may be absent)
  for (const at::Tensor& t : tensors) {
    if (t.defined()) {
      if (!first) first = &t;
      TORCH_INTERNAL_ASSERT(t.is_contiguous());
      p.operands[i] = operand(t, name);
      f64 = f64 || t.scalar_type() == at::kDouble;
    }
    ++i;
  }
  p.kind = f64 ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
  TORCH_INTERNAL_ASSERT(first != nullptr);
  const c10::DeviceGuard guard(first->device());
  tvk::Stream& stream = current_stream(first->device().index());
  translate_errors([&] { kernels::rnn_cell(stream, p); });
}

at::Tensor contiguous_or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? t->contiguous() : at::Tensor();
}

// ---------------------------------------------------------------- LSTM cell

Tensor3 fused_lstm_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
                        const std::optional<at::Tensor>& input_bias,
                        const std::optional<at::Tensor>& hidden_bias) {
  check_cell_inputs("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, input_bias, hidden_bias, 4);
  const int64_t batch = cx.size(0), hidden = cx.size(1);
  const at::Tensor b_ih = contiguous_or_undefined(input_bias), b_hh = contiguous_or_undefined(hidden_bias);
  at::Tensor hy = at::empty({batch, hidden}, cx.options());
  at::Tensor cy = at::empty({batch, hidden}, cx.options());
  at::Tensor workspace = at::empty({batch, 4 * hidden}, input_gates.options());
  launch_cell(kernels::RnnCellOp::LstmForward, batch, hidden, b_ih.defined(),
              {input_gates.contiguous(), hidden_gates.contiguous(), cx.contiguous(), b_ih, b_hh, hy, cy, workspace},
              "_thnn_fused_lstm_cell");
  return {hy, cy, workspace};
}

// Returns (grad_gates [B, 4H], grad_cx [B, H], grad_bias [4H] when has_bias).
Tensor3 fused_lstm_cell_backward_impl(const std::optional<at::Tensor>& grad_hy_opt,
                                      const std::optional<at::Tensor>& grad_cy_opt, const at::Tensor& cx,
                                      const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  const at::Tensor grad_hy = contiguous_or_undefined(grad_hy_opt), grad_cy = contiguous_or_undefined(grad_cy_opt);
  if (!grad_hy.defined() && !grad_cy.defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
  TORCH_CHECK(workspace.dim() == 2 && cx.dim() == 2 && workspace.size(1) == 4 * cx.size(1) &&
                  cy.sizes() == cx.sizes() && workspace.size(0) == cx.size(0),
              "_thnn_fused_lstm_cell_backward_impl: expected workspace [B, 4H] and cx / cy [B, H], got ",
              workspace.sizes(), ", ", cx.sizes(), ", ", cy.sizes());
  for (const at::Tensor* g : {&grad_hy, &grad_cy})
    TORCH_CHECK(!g->defined() || g->sizes() == cx.sizes(), "_thnn_fused_lstm_cell_backward_impl: expected ",
                "gradients of size ", cx.sizes(), ", got ", g->sizes());
  const int64_t batch = cx.size(0), hidden = cx.size(1);
  at::Tensor grad_gates = at::empty({batch, 4 * hidden}, workspace.options());
  at::Tensor grad_cx = at::empty({batch, hidden}, cx.options());
  launch_cell(kernels::RnnCellOp::LstmBackward, batch, hidden, false,
              {grad_hy, grad_cy, cx.contiguous(), cy.contiguous(), workspace.contiguous(), grad_gates, grad_cx},
              "_thnn_fused_lstm_cell_backward_impl");
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

// ---------------------------------------------------------------- GRU cell

Tensor2 fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
                       const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  check_cell_inputs("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, input_bias, hidden_bias, 3);
  const int64_t batch = hx.size(0), hidden = hx.size(1);
  const at::Tensor b_ih = contiguous_or_undefined(input_bias), b_hh = contiguous_or_undefined(hidden_bias);
  at::Tensor hy = at::empty({batch, hidden}, hx.options());
  at::Tensor workspace = at::empty({batch, 5 * hidden}, input_gates.options());
  launch_cell(kernels::RnnCellOp::GruForward, batch, hidden, b_ih.defined(),
              {input_gates.contiguous(), hidden_gates.contiguous(), hx.contiguous(), b_ih, b_hh, hy, workspace},
              "_thnn_fused_gru_cell");
  return {hy, workspace};
}

// Returns (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias).
Tensor5 fused_gru_cell_backward(const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  TORCH_CHECK(workspace.dim() == 2 && grad_hy.dim() == 2 && workspace.size(1) == 5 * grad_hy.size(1) &&
                  workspace.size(0) == grad_hy.size(0),
              "_thnn_fused_gru_cell_backward: expected workspace [B, 5H] and grad_hy [B, H], got ",
              workspace.sizes(), " and ", grad_hy.sizes());
  const int64_t batch = grad_hy.size(0), hidden = grad_hy.size(1);
  at::Tensor grad_input_gates = at::empty({batch, 3 * hidden}, workspace.options());
  at::Tensor grad_hidden_gates = at::empty({batch, 3 * hidden}, workspace.options());
  at::Tensor grad_hx = at::empty({batch, hidden}, grad_hy.options());
  launch_cell(kernels::RnnCellOp::GruBackward, batch, hidden, false,
              {grad_hy.contiguous(), workspace.contiguous(), grad_input_gates, grad_hidden_gates, grad_hx},
              "_thnn_fused_gru_cell_backward");
  at::Tensor grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = grad_input_gates.sum(0);
    grad_hidden_bias = grad_hidden_gates.sum(0);
  }
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fused_lstm_cell_backward_impl));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fused_gru_cell_backward));
}

}  // namespace tvk::aten
