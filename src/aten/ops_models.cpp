// Native composites for ops that whole models reach and that had no vk kernel (found by
// tests/python/test_model_zoo.py under TORCH_VK_FALLBACK=error). Built in L3 from other native
// vk ops: nothing is copied to the CPU.
//
//   _thnn_fused_lstm_cell, _thnn_fused_lstm_cell_backward_impl
//   _thnn_fused_gru_cell,  _thnn_fused_gru_cell_backward
//       The point-wise halves of an LSTM / GRU cell. PyTorch's RNN code (RNN.cpp, LSTMCell /
//       GRUCell) calls them for CUDA, XPU *and* PrivateUse1 inputs after the two gate GEMMs,
//       so nn.LSTM / nn.GRU / LSTMCell / GRUCell on vk reach them on every time step; the CPU has
//       no kernel for them at all (the fallback could not run them). Semantics follow CUDA's
//       RNN.cu: float32 / float64 / float16 / bfloat16, half types computed in float32.
//       The workspace layout is private to this file (forward and backward agree on it):
//         LSTM: [B, 4H] = activated gates (sigmoid i, sigmoid f, tanh g, sigmoid o), as CUDA;
//         GRU:  [B, 5H] = (r, z, n, hidden n-gate incl. bias, hx): the backward gets no hx.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/vk_common.h"

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

// float16 / bfloat16 are computed in float32 (as CUDA's kernels accumulate in opmath).
at::Tensor op_math(const at::Tensor& t) {
  if (!t.defined()) return t;
  return t.to(at::toOpMathType(t.scalar_type()));
}

// gates + biases, in op math: one dispatch per add.
at::Tensor biased(const at::Tensor& gates, const std::optional<at::Tensor>& bias) {
  at::Tensor g = op_math(gates);
  if (bias.has_value() && bias->defined()) g = g + op_math(*bias);
  return g;
}

// ---------------------------------------------------------------- LSTM cell

Tensor3 fused_lstm_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
                        const std::optional<at::Tensor>& input_bias,
                        const std::optional<at::Tensor>& hidden_bias) {
  check_cell_inputs("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, input_bias, hidden_bias, 4);
  const auto dtype = input_gates.scalar_type();
  const int64_t hidden = cx.size(1);
  at::Tensor gates = op_math(input_gates) + op_math(hidden_gates);
  if (input_bias.has_value() && input_bias->defined()) gates = gates + (op_math(*input_bias) + op_math(*hidden_bias));
  // Workspace = activated gates: sigmoid over all four, then tanh over the cell-candidate quarter.
  at::Tensor workspace = at::sigmoid(gates);
  workspace.narrow(1, 2 * hidden, hidden).copy_(at::tanh(gates.narrow(1, 2 * hidden, hidden)));
  const auto chunks = workspace.chunk(4, 1);
  const at::Tensor& i = chunks[0];
  const at::Tensor& f = chunks[1];
  const at::Tensor& g = chunks[2];
  const at::Tensor& o = chunks[3];
  at::Tensor cy = at::addcmul(f * op_math(cx), i, g);
  at::Tensor hy = o * at::tanh(cy);
  return {hy.to(dtype), cy.to(dtype), workspace.to(dtype)};
}

// Returns (grad_gates [B, 4H], grad_cx [B, H], grad_bias [4H] when has_bias).
Tensor3 fused_lstm_cell_backward_impl(const std::optional<at::Tensor>& grad_hy_opt,
                                      const std::optional<at::Tensor>& grad_cy_opt, const at::Tensor& cx,
                                      const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  const bool has_grad_hy = grad_hy_opt.has_value() && grad_hy_opt->defined();
  const bool has_grad_cy = grad_cy_opt.has_value() && grad_cy_opt->defined();
  if (!has_grad_hy && !has_grad_cy) return {at::Tensor(), at::Tensor(), at::Tensor()};
  TORCH_CHECK(workspace.dim() == 2 && cx.dim() == 2 && workspace.size(1) == 4 * cx.size(1) &&
                  cy.sizes() == cx.sizes() && workspace.size(0) == cx.size(0),
              "_thnn_fused_lstm_cell_backward_impl: expected workspace [B, 4H] and cx / cy [B, H], got ",
              workspace.sizes(), ", ", cx.sizes(), ", ", cy.sizes());
  const auto dtype = workspace.scalar_type();
  const auto chunks = op_math(workspace).chunk(4, 1);
  const at::Tensor& i = chunks[0];
  const at::Tensor& f = chunks[1];
  const at::Tensor& g = chunks[2];
  const at::Tensor& o = chunks[3];
  const at::Tensor cx_m = op_math(cx);
  // d loss / d cy in total: the direct gradient plus the path through hy = o * tanh(cy).
  at::Tensor grad_c = has_grad_cy ? op_math(*grad_cy_opt) : at::zeros_like(cx_m);
  at::Tensor grad_o;
  if (has_grad_hy) {
    const at::Tensor grad_hy = op_math(*grad_hy_opt);
    const at::Tensor tanh_cy = at::tanh(op_math(cy));
    grad_c = grad_c + grad_hy * o * (1 - tanh_cy * tanh_cy);
    grad_o = grad_hy * tanh_cy * o * (1 - o);
  } else {
    grad_o = at::zeros_like(cx_m);
  }
  at::Tensor grad_i = grad_c * g * i * (1 - i);
  at::Tensor grad_f = grad_c * cx_m * f * (1 - f);
  at::Tensor grad_g = grad_c * i * (1 - g * g);
  at::Tensor grad_cx = grad_c * f;
  at::Tensor grad_gates = at::cat({grad_i, grad_f, grad_g, grad_o}, 1);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0).to(dtype) : at::Tensor();
  return {grad_gates.to(dtype), grad_cx.to(dtype), grad_bias};
}

// ---------------------------------------------------------------- GRU cell

Tensor2 fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& hx,
                       const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  check_cell_inputs("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, input_bias, hidden_bias, 3);
  const auto dtype = input_gates.scalar_type();
  const int64_t hidden = hx.size(1);
  const at::Tensor ig = biased(input_gates, input_bias);
  const at::Tensor hg = biased(hidden_gates, hidden_bias);
  const at::Tensor hx_m = op_math(hx);
  // Reset and update gates together: one add and one sigmoid over [B, 2H].
  const at::Tensor rz = at::sigmoid(ig.narrow(1, 0, 2 * hidden) + hg.narrow(1, 0, 2 * hidden));
  const at::Tensor r = rz.narrow(1, 0, hidden);
  const at::Tensor z = rz.narrow(1, hidden, hidden);
  const at::Tensor hn = hg.narrow(1, 2 * hidden, hidden);
  const at::Tensor n = at::tanh(at::addcmul(ig.narrow(1, 2 * hidden, hidden), r, hn));
  at::Tensor hy = at::addcmul(n, z, hx_m - n);  // (1 - z) * n + z * hx
  at::Tensor workspace = at::cat({rz, n, hn, hx_m}, 1);
  return {hy.to(dtype), workspace.to(dtype)};
}

// Returns (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias).
Tensor5 fused_gru_cell_backward(const at::Tensor& grad_hy_in, const at::Tensor& workspace, bool has_bias) {
  TORCH_CHECK(workspace.dim() == 2 && grad_hy_in.dim() == 2 && workspace.size(1) == 5 * grad_hy_in.size(1) &&
                  workspace.size(0) == grad_hy_in.size(0),
              "_thnn_fused_gru_cell_backward: expected workspace [B, 5H] and grad_hy [B, H], got ",
              workspace.sizes(), " and ", grad_hy_in.sizes());
  const auto dtype = workspace.scalar_type();
  const auto chunks = op_math(workspace).chunk(5, 1);
  const at::Tensor& r = chunks[0];
  const at::Tensor& z = chunks[1];
  const at::Tensor& n = chunks[2];
  const at::Tensor& hn = chunks[3];
  const at::Tensor& hx = chunks[4];
  const at::Tensor grad_hy = op_math(grad_hy_in);
  const at::Tensor grad_n = grad_hy * (1 - z) * (1 - n * n);  // before the tanh
  const at::Tensor grad_z = grad_hy * (hx - n) * z * (1 - z);
  const at::Tensor grad_r = grad_n * hn * r * (1 - r);
  at::Tensor grad_input_gates = at::cat({grad_r, grad_z, grad_n}, 1);
  at::Tensor grad_hidden_gates = at::cat({grad_r, grad_z, grad_n * r}, 1);
  at::Tensor grad_hx = grad_hy * z;
  at::Tensor grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = grad_input_gates.sum(0).to(dtype);
    grad_hidden_bias = grad_hidden_gates.sum(0).to(dtype);
  }
  return {grad_input_gates.to(dtype), grad_hidden_gates.to(dtype), grad_hx.to(dtype), grad_input_bias,
          grad_hidden_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fused_lstm_cell_backward_impl));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fused_gru_cell_backward));
}

}  // namespace tvk::aten
