// Launcher of the loss family (shaders/loss.comp).
#include "kernels/loss.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/loss.comp.
struct LossPush {
  uint64_t addr[kLossMaxOperands];
  uint64_t geometry;
  uint64_t pd_bits[2];
  float pf[2];
  int64_t pi;
  int32_t numel;
  int32_t mode;
  int32_t dtype[kLossMaxOperands];
  int32_t aux0;
  int32_t aux1;
};
static_assert(sizeof(LossPush) == 128);
static_assert(offsetof(LossPush, pd_bits) == 56);
static_assert(offsetof(LossPush, pi) == 80);
static_assert(offsetof(LossPush, dtype) == 96);

// Mirrors `LossGeometry` in shaders/loss.comp.
struct LossGeometryBlock {
  int32_t sizes[kMaxDims];
  int32_t strides[kLossMaxOperands][kMaxDims];
};

constexpr const char* kWhere = "tvk::kernels::loss";
// Also the workgroup size the row-per-workgroup ops assume (ROW_WG / CTC_WG in loss.comp).
constexpr uint32_t kWorkgroup = 256;

const char* op_name(LossOp op) {
  switch (op) {
    case LossOp::Mse: return "mse";
    case LossOp::MseBackward: return "mse_backward";
    case LossOp::SmoothL1: return "smooth_l1";
    case LossOp::SmoothL1Backward: return "smooth_l1_backward";
    case LossOp::Huber: return "huber";
    case LossOp::HuberBackward: return "huber_backward";
    case LossOp::Bce: return "bce";
    case LossOp::BceBackward: return "bce_backward";
    case LossOp::BceWithLogits: return "bce_logits";
  }
  return "?";
}

int operand_count(const LossElementwise& p) {
  switch (p.op) {
    case LossOp::Mse:
    case LossOp::SmoothL1:
    case LossOp::Huber: return 3;
    case LossOp::MseBackward:
    case LossOp::SmoothL1Backward:
    case LossOp::HuberBackward: return 4;
    case LossOp::Bce: return p.has_weight ? 4 : 3;
    case LossOp::BceBackward: return p.has_weight ? 5 : 4;
    case LossOp::BceWithLogits: return 5;
  }
  return 0;
}

void check_operand(const Operand& op, const std::string& what, bool f64) {
  kernels::check_operand(kWhere, op, what, f64);
}

bool check_kind(Stream& stream, ComputeKind kind) {
  if (kind != ComputeKind::Float32 && kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  return f64;
}

void set_params(LossPush& push, double p0, double p1) {
  const double p[2] = {p0, p1};
  for (int k = 0; k < 2; ++k) {
    std::memcpy(&push.pd_bits[k], &p[k], sizeof(double));
    push.pf[k] = static_cast<float>(p[k]);
  }
}

// `items_per_group`: kWorkgroup for element-parallel ops, 1 for the one-row-per-workgroup ops.
// `accesses`: the memory the dispatch reads and writes (null: everything). The device error
// record is claimed atomically and read by the host after a wait: never declared.
void dispatch(Stream& stream, const std::string& name, int64_t items, const LossPush& push,
              uint32_t items_per_group = kWorkgroup, const AccessSet* accesses = nullptr) {
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, {});
  stream.dispatch(pipeline, group_count(stream, items, items_per_group), 1, 1, &push, sizeof(push),
                  nullptr, 0, accesses);
}

// What both nll passes read: self [N, C, S], target [N * S], weight [C].
AccessSet nll_inputs(const NllLoss& p) {
  AccessSet set;
  const int64_t samples = p.n * p.spatial;
  add_dense(set, p.self.address, p.self.dtype, p.n * p.classes * p.spatial, false);
  add_dense(set, p.target.address, p.target.dtype, samples, false);
  if (p.weight.address != 0) add_dense(set, p.weight.address, p.weight.dtype, p.classes, false);
  return set;
}

}  // namespace

void loss_elementwise(Stream& stream, const LossElementwise& p) {
  const int opi = static_cast<int>(p.op);
  if (opi < 0 || opi > 8) invalid(kWhere, "invalid op " + std::to_string(opi));
  const bool f64 = check_kind(stream, p.kind);
  const int count = operand_count(p);
  if (p.num_operands != count)
    invalid(kWhere, std::string(op_name(p.op)) + " takes " + std::to_string(count) +
                        " operands, got " + std::to_string(p.num_operands));
  // The geometry comes from an at::TensorIterator, already coalesced; it is used as given (the
  // shared coalesce() handles only kMaxOperands stride arrays). Offsets are checked per operand.
  if (p.geometry.ndim < 0 || p.geometry.ndim > kMaxDims) invalid(kWhere, "bad ndim");
  int64_t product = 1;
  for (int d = 0; d < p.geometry.ndim; ++d) {
    if (p.geometry.sizes[d] < 0) invalid(kWhere, "negative size");
    product *= p.geometry.sizes[d];
  }
  if (product != p.numel) invalid(kWhere, "the geometry does not match numel");
  if (p.numel == 0) return;
  if (p.numel > kMaxIndex) invalid(kWhere, "numel exceeds the kernel's 32-bit index range");
  LossPush push{};
  LossGeometryBlock block{};
  for (int k = 0; k < count; ++k) {
    check_operand(p.operands[k], "operand " + std::to_string(k), f64);
    int64_t reach = 0;
    for (int d = 0; d < p.geometry.ndim; ++d) {
      const int64_t s = p.geometry.strides[k][d];
      reach += (p.geometry.sizes[d] - 1) * (s < 0 ? -s : s);
      if (s > kMaxIndex || s < -kMaxIndex || reach > kMaxIndex)
        invalid(kWhere, "element offsets exceed the kernel's 32-bit index range");
    }
    push.addr[k] = p.operands[k].address;
    push.dtype[k] = static_cast<int32_t>(p.operands[k].dtype);
  }
  // Operand slots: out, then the inputs in the shader's order. BCE without weight leaves the
  // weight slot empty; BceWithLogits always has 5 operands (absent w / pw are flagged off).
  push.mode = p.geometry.ndim;
  for (int d = 0; d < p.geometry.ndim; ++d) {
    block.sizes[d] = static_cast<int32_t>(p.geometry.sizes[d]);
    for (int k = 0; k < count; ++k) block.strides[k][d] = static_cast<int32_t>(p.geometry.strides[k][d]);
  }
  if (p.geometry.ndim > 0) push.geometry = stream.upload_params(&block, sizeof(block));
  set_params(push, p.param, p.norm);
  push.numel = static_cast<int32_t>(p.numel);
  push.aux0 = (p.has_weight ? 1 : 0) | (p.has_pos_weight ? 2 : 0);
  // Inputs or targets outside [0, 1] are reported there (DeviceErrorCode::Bce*OutOfRange).
  if (p.op == LossOp::Bce) push.pi = static_cast<int64_t>(stream.device_error_address());
  AccessSet accesses;  // operand 0 (the output) written, the others read, over the geometry
  for (int k = 0; k < count; ++k)
    add_strided(accesses, p.operands[k].address, p.operands[k].dtype, p.geometry.ndim,
                p.geometry.sizes, p.geometry.strides[k], k == 0);
  dispatch(stream, std::string("loss.") + op_name(p.op) + (f64 ? ".float64" : ".float32"), p.numel, push,
           kWorkgroup, &accesses);
}

namespace {
LossPush nll_push(Stream& stream, const NllLoss& p, bool& f64, int64_t& samples) {
  f64 = check_kind(stream, p.kind);
  if (p.n < 0 || p.classes < 0 || p.spatial < 0) invalid(kWhere, "nll_loss: negative size");
  samples = p.n * p.spatial;
  if (p.n * p.classes * p.spatial > kMaxIndex || 2 * samples > kMaxIndex)
    invalid(kWhere, "nll_loss: more elements than the kernel's 32-bit index range");
  LossPush push{};
  if (samples == 0) return push;
  check_operand(p.self, "self", f64);
  check_operand(p.target, "target", f64);
  if (p.target.dtype != DType::Int64 && p.target.dtype != DType::UInt8)
    invalid(kWhere, "nll_loss: the target must be Int64 or UInt8");
  const bool weighted = p.weight.address != 0;
  if (weighted) check_operand(p.weight, "weight", f64);
  push.addr[1] = p.self.address;
  push.addr[2] = p.target.address;
  push.addr[3] = p.weight.address;
  push.dtype[1] = static_cast<int32_t>(p.self.dtype);
  push.dtype[2] = static_cast<int32_t>(p.target.dtype);
  push.dtype[3] = static_cast<int32_t>(weighted ? p.weight.dtype : p.self.dtype);
  push.pi = p.ignore_index;
  push.numel = static_cast<int32_t>(samples);
  push.mode = weighted ? 1 : 0;
  push.aux0 = static_cast<int32_t>(p.classes);
  push.aux1 = static_cast<int32_t>(p.spatial);
  push.geometry = stream.device_error_address();  // out-of-range targets are reported there
  return push;
}
}  // namespace

void nll_loss_forward(Stream& stream, const NllLoss& p, bool reduction_none, Operand out) {
  bool f64 = false;
  int64_t samples = 0;
  LossPush push = nll_push(stream, p, f64, samples);
  if (samples == 0) return;
  check_operand(out, "output", f64);
  push.addr[0] = out.address;
  push.dtype[0] = static_cast<int32_t>(out.dtype);
  if (reduction_none) push.mode |= 2;
  // out: [N * S] per-sample losses (reduction none), else the [2, N * S] scratch.
  AccessSet accesses = nll_inputs(p);
  add_dense(accesses, out.address, out.dtype, reduction_none ? samples : 2 * samples, true);
  dispatch(stream, std::string("loss.nll") + (f64 ? ".float64" : ".float32"), samples, push,
           kWorkgroup, &accesses);
}

void nll_loss_backward(Stream& stream, const NllLoss& p, bool reduction_none, bool mean,
                       Operand grad_output, Operand total_weight, Operand grad_input) {
  bool f64 = false;
  int64_t samples = 0;
  LossPush push = nll_push(stream, p, f64, samples);
  if (samples == 0) return;
  check_operand(grad_input, "grad_input", f64);
  check_operand(grad_output, "grad_output", f64);
  push.addr[0] = grad_input.address;
  push.dtype[0] = static_cast<int32_t>(grad_input.dtype);
  push.addr[4] = grad_output.address;
  push.dtype[4] = static_cast<int32_t>(grad_output.dtype);
  if (reduction_none) push.mode |= 2;
  AccessSet accesses = nll_inputs(p);
  add_dense(accesses, grad_output.address, grad_output.dtype, reduction_none ? samples : 1, false);
  if (mean && !reduction_none) {
    check_operand(total_weight, "total_weight", f64);
    push.addr[5] = total_weight.address;
    push.dtype[5] = static_cast<int32_t>(total_weight.dtype);
    push.mode |= 4;
    add_dense(accesses, total_weight.address, total_weight.dtype, 1, false);
  }
  // grad_input: the target element of every sample's row (its zeros were filled before).
  add_dense(accesses, grad_input.address, grad_input.dtype, p.n * p.classes * p.spatial, true);
  dispatch(stream, std::string("loss.nll_backward") + (f64 ? ".float64" : ".float32"), samples, push,
           kWorkgroup, &accesses);
}

// ---------------------------------------------------------------- margin losses

namespace {
// Shared checks and push constants of the margin ops (shaders/loss.comp, OP 12-15): operand
// slots 1 = x, 2 = target, 3 = weight / is_target, 4 = grad_output. Returns false when there
// is nothing to record.
bool margin_push(Stream& stream, const MarginLoss& p, bool multilabel, LossPush& push, bool& f64) {
  f64 = check_kind(stream, p.kind);
  if (p.rows < 0 || p.classes < 0) invalid(kWhere, "margin loss: negative size");
  if (p.rows * p.classes > kMaxIndex) invalid(kWhere, "margin loss: more elements than the kernel's 32-bit index range");
  if (!multilabel && p.p != 1 && p.p != 2) invalid(kWhere, "multi_margin_loss: p must be 1 or 2");
  if (p.rows == 0 || p.classes == 0) return false;
  check_operand(p.self, "self", f64);
  check_operand(p.target, "target", f64);
  if (p.target.dtype != DType::Int64) invalid(kWhere, "margin loss: the target must be Int64");
  const bool weighted = !multilabel && p.weight.address != 0;
  if (weighted) check_operand(p.weight, "weight", f64);
  push = LossPush{};
  push.addr[1] = p.self.address;
  push.addr[2] = p.target.address;
  push.addr[3] = weighted ? p.weight.address : 0;
  push.dtype[1] = static_cast<int32_t>(p.self.dtype);
  push.dtype[2] = static_cast<int32_t>(p.target.dtype);
  push.dtype[3] = static_cast<int32_t>(weighted ? p.weight.dtype : p.self.dtype);
  push.numel = static_cast<int32_t>(p.rows);
  push.aux0 = static_cast<int32_t>(p.classes);
  push.mode = (weighted ? 1 : 0) | (p.p == 2 ? 2 : 0);
  push.pi = static_cast<int64_t>(stream.device_error_address());
  return true;
}

std::string variant(const char* op, bool f64) { return std::string("loss.") + op + (f64 ? ".float64" : ".float32"); }
}  // namespace

void multi_margin_loss_forward(Stream& stream, const MarginLoss& p, Operand out) {
  LossPush push{};
  bool f64 = false;
  if (!margin_push(stream, p, false, push, f64)) return;
  check_operand(out, "output", f64);
  push.addr[0] = out.address;
  push.dtype[0] = static_cast<int32_t>(out.dtype);
  set_params(push, p.margin, 1);
  dispatch(stream, variant("multi_margin", f64), p.rows, push, 1);
}

void multi_margin_loss_backward(Stream& stream, const MarginLoss& p, double scale, bool per_row_grad,
                                Operand grad_output, Operand grad_input) {
  LossPush push{};
  bool f64 = false;
  if (!margin_push(stream, p, false, push, f64)) return;
  check_operand(grad_output, "grad_output", f64);
  check_operand(grad_input, "grad_input", f64);
  push.addr[0] = grad_input.address;
  push.dtype[0] = static_cast<int32_t>(grad_input.dtype);
  push.addr[4] = grad_output.address;
  push.dtype[4] = static_cast<int32_t>(grad_output.dtype);
  if (per_row_grad) push.mode |= 4;
  set_params(push, p.margin, scale);
  dispatch(stream, variant("multi_margin_backward", f64), p.rows, push, 1);
}

void multilabel_margin_loss_forward(Stream& stream, const MarginLoss& p, Operand out, Operand is_target) {
  LossPush push{};
  bool f64 = false;
  if (!margin_push(stream, p, true, push, f64)) return;
  check_operand(out, "output", f64);
  check_operand(is_target, "is_target", f64);
  push.addr[0] = out.address;
  push.dtype[0] = static_cast<int32_t>(out.dtype);
  push.addr[3] = is_target.address;
  push.dtype[3] = static_cast<int32_t>(is_target.dtype);
  set_params(push, 1, 1);
  // Per row a workgroup owns, each invocation walks up to C targets for each of its
  // ceil(C / 256) classes, then the tree (barriers count: measured). Under a device loop limit
  // (loop_budget) the target positions are split into passes (see the shader).
  const int64_t groups = group_count(stream, p.rows, 1);
  const int64_t rows_per_group = (p.rows + groups - 1) / groups;
  const int64_t columns = (p.classes + kWorkgroup - 1) / kWorkgroup;
  const int64_t budget = loop_budget(stream);
  if (rows_per_group * (20 + columns * (1 + p.classes)) <= budget) {
    dispatch(stream, variant("multilabel_margin", f64), p.rows, push, 1);
    return;
  }
  const int64_t range = (budget / rows_per_group - 20) / columns - 1;
  if (range < 1)
    invalid(kWhere, "multilabel_margin_loss: " + std::to_string(p.classes) +
                        " classes exceed the device's loop-iteration limit (max_loop_iterations)");
  const int64_t passes = (p.classes + range - 1) / range;
  Allocator& allocator = stream.device().allocator();
  const uint64_t sums_bytes = static_cast<uint64_t>(p.rows * p.classes) * (f64 ? 8 : 4);
  const uint64_t flag_slot = static_cast<uint64_t>(p.rows) * 4;
  const uint64_t scratch = allocator.allocate(sums_bytes + flag_slot * (passes + 1) + 8, stream.id());
  const uint64_t flags = (scratch + sums_bytes + 7) & ~uint64_t{7};
  try {
    for (int64_t c = 0; c < passes; ++c) {
      LossPush pass = push;
      pass.addr[4] = scratch;
      pass.addr[5] = flags + flag_slot * static_cast<uint64_t>(c);
      const uint64_t j0 = static_cast<uint64_t>(c * range);
      const uint64_t j1 = static_cast<uint64_t>(std::min(p.classes, (c + 1) * range));
      pass.geometry = j0 | (j1 << 32);
      dispatch(stream, variant("multilabel_margin", f64), p.rows, pass, 1);
    }
  } catch (...) {
    allocator.free(scratch);
    throw;
  }
  allocator.free(scratch);  // stream order: later reuse is ordered after these dispatches
}

void multilabel_margin_loss_backward(Stream& stream, const MarginLoss& p, double scale, bool per_row_grad,
                                     Operand grad_output, Operand is_target, Operand grad_input) {
  LossPush push{};
  bool f64 = false;
  if (!margin_push(stream, p, true, push, f64)) return;
  check_operand(grad_output, "grad_output", f64);
  check_operand(is_target, "is_target", f64);
  check_operand(grad_input, "grad_input", f64);
  push.addr[0] = grad_input.address;
  push.dtype[0] = static_cast<int32_t>(grad_input.dtype);
  push.addr[3] = is_target.address;
  push.dtype[3] = static_cast<int32_t>(is_target.dtype);
  push.addr[4] = grad_output.address;
  push.dtype[4] = static_cast<int32_t>(grad_output.dtype);
  if (per_row_grad) push.mode |= 4;
  set_params(push, 1, scale);
  push.numel = static_cast<int32_t>(p.rows * p.classes);  // element-parallel: one item per gradient
  // An element of a target class walks the row's targets and then all of its classes. Not
  // split: where that walk alone is past the device's loop limit (loop_budget) every row with
  // a target would be truncated, so it raises (longer target lists are not caught: data).
  const int64_t elements = p.rows * p.classes;
  const int64_t step = int64_t{group_count(stream, elements, kWorkgroup)} * kWorkgroup;
  if ((elements + step - 1) / step * (p.classes + 2) > loop_budget(stream))
    invalid(kWhere, "multilabel_margin_loss: " + std::to_string(p.classes) +
                        " classes exceed the device's loop-iteration limit in the backward "
                        "(max_loop_iterations)");
  dispatch(stream, variant("multilabel_margin_backward", f64), elements, push);
}

// ---------------------------------------------------------------- CTC loss

namespace {
LossPush ctc_push(Stream& stream, const CtcLoss& p, bool& f64) {
  f64 = check_kind(stream, p.kind);
  if (p.time < 0 || p.batch < 0 || p.classes <= 0 || p.extended < 1) invalid(kWhere, "ctc_loss: bad sizes");
  if (p.blank < 0 || p.blank >= p.classes) invalid(kWhere, "ctc_loss: blank out of range");
  if (p.time * p.batch * p.classes > kMaxIndex || 2 * p.batch * p.time * p.extended > kMaxIndex ||
      (p.extended << 1) > kMaxIndex)
    invalid(kWhere, "ctc_loss: more elements than the kernel's 32-bit index range");
  check_operand(p.log_probs, "log_probs", f64);
  check_operand(p.targets, "targets", f64);
  check_operand(p.meta, "meta", f64);
  if (p.targets.dtype != DType::Int64 && p.targets.dtype != DType::Int32)
    invalid(kWhere, "ctc_loss: the targets must be Int32 or Int64");
  if (p.meta.dtype != DType::Int64) invalid(kWhere, "ctc_loss: meta must be Int64");
  LossPush push{};
  push.addr[1] = p.log_probs.address;
  push.addr[2] = p.targets.address;
  push.addr[3] = p.meta.address;
  push.dtype[1] = static_cast<int32_t>(p.log_probs.dtype);
  push.dtype[2] = static_cast<int32_t>(p.targets.dtype);
  push.dtype[3] = static_cast<int32_t>(p.meta.dtype);
  push.aux0 = static_cast<int32_t>(p.classes);
  push.aux1 = static_cast<int32_t>(p.time);
  push.pi = p.blank;
  push.mode = static_cast<int32_t>(p.extended << 1) | (p.zero_infinity ? 1 : 0);
  return push;
}

// Records the time recursion `name` (ctc_alpha / ctc_beta) in chunks of time steps that keep a
// workgroup's loop iterations (per sample it owns: per step, the step, its strided pass over
// the extended targets and its barrier, which lavapipe counts as one more iteration: measured)
// below the device's loop budget; one dispatch where there is no limit. Alpha runs the chunks
// forward, beta backward.
void ctc_recursion(Stream& stream, const std::string& name, const CtcLoss& p, LossPush push,
                   bool backward) {
  const int64_t groups = group_count(stream, p.batch, 1);
  const int64_t samples = (p.batch + groups - 1) / groups;
  const int64_t per_step = samples * (2 + (p.extended + kWorkgroup - 1) / kWorkgroup);
  const int64_t chunk = loop_chunk(stream, p.time, per_step, samples + 2);
  if (chunk >= p.time) {
    push.geometry = 0;
    dispatch(stream, name, p.batch, push, 1);
    return;
  }
  const int64_t chunks = (p.time + chunk - 1) / chunk;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t k = backward ? chunks - 1 - c : c;
    const uint64_t t0 = static_cast<uint64_t>(k * chunk);
    const uint64_t t1 = static_cast<uint64_t>(std::min(p.time, (k + 1) * chunk));
    push.geometry = t0 | (t1 << 32);
    dispatch(stream, name, p.batch, push, 1);
  }
}
}  // namespace

void ctc_loss_forward(Stream& stream, const CtcLoss& p, Operand log_alpha, Operand nll) {
  if (p.batch == 0 || p.time == 0) return;
  bool f64 = false;
  LossPush push = ctc_push(stream, p, f64);
  check_operand(log_alpha, "log_alpha", f64);
  check_operand(nll, "nll", f64);
  push.addr[0] = log_alpha.address;
  push.dtype[0] = static_cast<int32_t>(log_alpha.dtype);
  push.addr[4] = nll.address;
  push.dtype[4] = static_cast<int32_t>(nll.dtype);
  push.numel = static_cast<int32_t>(p.batch);
  ctc_recursion(stream, variant("ctc_alpha", f64), p, push, false);
}

void ctc_loss_backward(Stream& stream, const CtcLoss& p, Operand alpha_beta, Operand nll_grad, Operand grad) {
  if (p.batch == 0 || p.time == 0) return;
  bool f64 = false;
  LossPush push = ctc_push(stream, p, f64);
  check_operand(alpha_beta, "alpha_beta", f64);
  check_operand(nll_grad, "nll_grad", f64);
  check_operand(grad, "grad", f64);
  // log_beta: the second half of alpha_beta.
  LossPush beta = push;
  const uint64_t half = static_cast<uint64_t>(p.batch * p.time * p.extended) * dtype_size(alpha_beta.dtype);
  beta.addr[0] = alpha_beta.address + half;
  beta.dtype[0] = static_cast<int32_t>(alpha_beta.dtype);
  beta.numel = static_cast<int32_t>(p.batch);
  ctc_recursion(stream, variant("ctc_beta", f64), p, beta, true);
  // ctc_grad: per element (one per invocation, grid-stride) a walk over the extended targets.
  const int64_t elements = p.time * p.batch * p.classes;
  const int64_t step = int64_t{group_count(stream, elements, kWorkgroup)} * kWorkgroup;
  if ((elements + step - 1) / step * (p.extended + 1) > loop_budget(stream))
    invalid(kWhere, "ctc_loss: targets too long for the device's loop-iteration limit "
                    "(max_loop_iterations)");
  push.addr[0] = grad.address;
  push.dtype[0] = static_cast<int32_t>(grad.dtype);
  push.addr[4] = alpha_beta.address;
  push.dtype[4] = static_cast<int32_t>(alpha_beta.dtype);
  push.addr[5] = nll_grad.address;
  push.dtype[5] = static_cast<int32_t>(nll_grad.dtype);
  push.numel = static_cast<int32_t>(p.time * p.batch * p.classes);
  dispatch(stream, variant("ctc_grad", f64), p.time * p.batch * p.classes, push);
}

}  // namespace tvk::kernels
