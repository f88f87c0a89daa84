// Launcher of the fused recurrent-cell family (shaders/rnn_cell.comp): one invocation per
// (batch row, hidden unit), each reading its G gates and writing its states, so a cell step
// is one dispatch forward and one backward instead of ~10-20 element-wise ones.
#include "kernels/rnn_cell.h"

#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/rnn_cell.comp.
struct RnnCellPush {
  uint64_t a[8];
  int32_t batch;
  int32_t hidden;
  int32_t dtype;
  int32_t has_bias;
};
static_assert(sizeof(RnnCellPush) == 80);

constexpr const char* kWhere = "tvk::kernels::rnn_cell";

struct OpInfo {
  const char* name;
  int count;            // operands used
  int gates;            // G
  uint32_t optional;    // bit i: operand i may be absent (address 0)
};

// Operand i of `op`: its elements in units of hidden (times batch unless `per_batch` is 0)
// and whether the op writes it (see RnnCellOp in rnn_cell.h and shaders/rnn_cell.comp).
struct OperandShape {
  int units;
  bool per_batch, write;
};
const OperandShape* shapes(RnnCellOp op) {
  static const OperandShape lstm_forward[8] = {{4, true, false}, {4, true, false}, {1, true, false},
                                               {4, false, false}, {4, false, false}, {1, true, true},
                                               {1, true, true}, {4, true, true}};
  static const OperandShape lstm_backward[7] = {{1, true, false}, {1, true, false}, {1, true, false},
                                                {1, true, false}, {4, true, false}, {4, true, true},
                                                {1, true, true}};
  static const OperandShape gru_forward[7] = {{3, true, false}, {3, true, false}, {1, true, false},
                                              {3, false, false}, {3, false, false}, {1, true, true},
                                              {5, true, true}};
  static const OperandShape gru_backward[5] = {{1, true, false}, {5, true, false}, {3, true, true},
                                               {3, true, true}, {1, true, true}};
  switch (op) {
    case RnnCellOp::LstmForward: return lstm_forward;
    case RnnCellOp::LstmBackward: return lstm_backward;
    case RnnCellOp::GruForward: return gru_forward;
    case RnnCellOp::GruBackward: return gru_backward;
  }
  return lstm_forward;
}

OpInfo info(RnnCellOp op, bool has_bias) {
  const uint32_t biases = has_bias ? 0u : (1u << 3) | (1u << 4);
  switch (op) {
    case RnnCellOp::LstmForward: return {"lstm_forward", 8, 4, biases};
    case RnnCellOp::LstmBackward: return {"lstm_backward", 7, 4, 0b11u};
    case RnnCellOp::GruForward: return {"gru_forward", 7, 3, biases};
    case RnnCellOp::GruBackward: return {"gru_backward", 5, 3, 0u};
  }
  invalid(kWhere, "invalid op " + std::to_string(static_cast<int>(op)));
}

}  // namespace

void rnn_cell(Stream& stream, const RnnCell& p) {
  if (p.kind != ComputeKind::Float32 && p.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.batch < 0 || p.hidden < 0) invalid(kWhere, "negative size");
  const OpInfo op = info(p.op, p.has_bias);
  if (p.batch == 0 || p.hidden == 0) return;
  int64_t elements = 0;  // the largest operand: the GRU workspace, 5 * batch * hidden
  if (__builtin_mul_overflow(p.batch, p.hidden, &elements) ||
      __builtin_mul_overflow(elements, int64_t{5}, &elements) || elements > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");
  if (p.op == RnnCellOp::LstmBackward && p.operands[0].address == 0 && p.operands[1].address == 0)
    invalid(kWhere, "the LSTM backward needs grad_hy or grad_cy");
  DType dtype = DType::Float32;
  bool first = true;
  RnnCellPush push{};
  for (int i = 0; i < op.count; ++i) {
    const Operand& o = p.operands[i];
    push.a[i] = o.address;
    if (o.address == 0 && (op.optional >> i & 1u)) continue;
    check_operand(kWhere, o, "operand " + std::to_string(i), f64);
    if (first) dtype = o.dtype, first = false;
    else if (o.dtype != dtype) invalid(kWhere, "all operands must have the same dtype");
  }
  push.batch = static_cast<int32_t>(p.batch);
  push.hidden = static_cast<int32_t>(p.hidden);
  push.dtype = static_cast<int32_t>(dtype);
  push.has_bias = p.has_bias ? 1 : 0;

  const std::string name = std::string("rnn_cell.") + op.name + (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  const uint32_t wg = 64;
  std::vector<uint32_t> spec{tuning().specialize_dtypes ? static_cast<uint32_t>(dtype) : UINT32_MAX};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  const uint32_t groups = group_count(stream, p.batch * p.hidden, wg);
  AccessSet accesses;  // absent optional operands (address 0) add nothing
  const OperandShape* shape = shapes(p.op);
  for (int i = 0; i < op.count; ++i)
    add_dense(accesses, p.operands[i].address, dtype,
              shape[i].units * p.hidden * (shape[i].per_batch ? p.batch : 1), shape[i].write);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
}

}  // namespace tvk::kernels
