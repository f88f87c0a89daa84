// Launcher of the softmax family (shaders/softmax.comp).
//
// Strategies:
//   Workgroup  one workgroup per row; the invocations stride over the row (coalesced when the
//              softmax dim is innermost) and combine (max, sum) pairs through subgroup
//              arithmetic or a shared-memory tree. Used for rows long enough to feed a
//              workgroup: the workgroup size follows the row length (32..256 invocations,
//              ~4+ elements each).
//   Thread     one invocation per row with a serial loop: for short rows and for inner
//              (non-innermost) dims with many rows, where adjacent invocations read adjacent
//              elements.
#include "kernels/softmax.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/softmax.comp.
struct SoftmaxPush {
  uint64_t in_addr;
  uint64_t in2_addr;
  uint64_t out_addr;
  int32_t rows;
  int32_t dim;
  int32_t inner;
  int32_t in_dtype;
  int32_t in2_dtype;
  int32_t out_dtype;
};
static_assert(sizeof(SoftmaxPush) == 48);

constexpr const char* kWhere = "tvk::kernels::softmax";
constexpr int kModeWorkgroup = 0;
constexpr int kModeThread = 1;

const char* op_name(SoftmaxOp op) {
  switch (op) {
    case SoftmaxOp::Softmax: return "forward";
    case SoftmaxOp::LogSoftmax: return "log_forward";
    case SoftmaxOp::SoftmaxBackward: return "backward";
    case SoftmaxOp::LogSoftmaxBackward: return "log_backward";
  }
  return "?";
}

void check_operand(const Operand& op, const char* what, bool f64) {
  kernels::check_operand(kWhere, op, what, f64);
}

uint32_t workgroup_for(int64_t dim) {
  uint32_t max_wg = std::max<uint32_t>(32, softmax_tuning().max_workgroup);
  uint32_t wg = 32;
  while (wg < max_wg && static_cast<int64_t>(wg) * 4 < dim) wg *= 2;
  return wg;
}

}  // namespace

SoftmaxTuning& softmax_tuning() {
  static SoftmaxTuning t;
  return t;
}

void softmax(Stream& stream, const Softmax& p) {
  const int opi = static_cast<int>(p.op);
  if (opi < 0 || opi > 3) invalid(kWhere, "invalid op " + std::to_string(opi));
  if (p.kind != ComputeKind::Float32 && p.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.outer < 0 || p.dim < 0 || p.inner < 0) invalid(kWhere, "negative size");
  if (p.outer == 0 || p.dim == 0 || p.inner == 0) return;
  int64_t numel = 0;
  if (__builtin_mul_overflow(p.outer, p.dim, &numel) ||
      __builtin_mul_overflow(numel, p.inner, &numel) || numel > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");
  const bool backward = p.op == SoftmaxOp::SoftmaxBackward || p.op == SoftmaxOp::LogSoftmaxBackward;
  check_operand(p.out, "output", f64);
  check_operand(p.in, "input", f64);
  if (backward) check_operand(p.in2, "output of the forward pass", f64);
  const DType in2_dtype = backward ? p.in2.dtype : DType::Float32;

  const int64_t rows = p.outer * p.inner;
  const SoftmaxTuning& t = softmax_tuning();
  using S = SoftmaxTuning::Strategy;
  S strategy = t.strategy;
  if (strategy == S::Auto) {
    if (p.inner == 1)
      strategy = p.dim > 32 ? S::Workgroup : S::Thread;
    else  // strided rows: a thread per row is coalesced; few long rows need workgroups
      strategy = (rows >= 1024 || p.dim <= 64) ? S::Thread : S::Workgroup;
  }
  // Loop iterations of an invocation (loop_budget): per row it owns, the row loop and two
  // passes over its elements (Thread) or over its share of them plus the tree (Workgroup).
  // Thread rows that would exceed a device's loop limit go to Workgroup.
  auto loop_cost = [&](S s) {
    const uint32_t w = s == S::Thread ? 64 : workgroup_for(p.dim);
    const int64_t lanes = s == S::Thread ? w : 1;
    const int64_t step = int64_t{group_count(stream, rows, static_cast<uint32_t>(lanes))} * lanes;
    const int64_t per_row = s == S::Thread ? 1 + 2 * p.dim : 1 + 2 * ((p.dim + w - 1) / w) + 2 * 9 + w / 4;
    return (rows + step - 1) / step * per_row;
  };
  const int64_t budget = loop_budget(stream);
  if (strategy == S::Thread && loop_cost(S::Thread) > budget) strategy = S::Workgroup;
  if (loop_cost(strategy) > budget)
    invalid(kWhere, "rows of " + std::to_string(p.dim) +
                        " elements exceed the device's loop-iteration limit (max_loop_iterations)");
  const int mode = strategy == S::Thread ? kModeThread : kModeWorkgroup;
  const uint32_t wg = mode == kModeThread ? 64 : workgroup_for(p.dim);

  const DeviceCapabilities& caps = stream.device().caps();
  std::string name = std::string("softmax.") + op_name(p.op) + (f64 ? ".float64" : ".float32");
  if (!f64 && mode == kModeWorkgroup && t.subgroups && caps.subgroup_basic &&
      caps.subgroup_vote && caps.subgroup_arithmetic)
    name += ".subgroup";
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  SoftmaxPush push{};
  push.in_addr = p.in.address;
  push.in2_addr = backward ? p.in2.address : 0;
  push.out_addr = p.out.address;
  push.rows = static_cast<int32_t>(rows);
  push.dim = static_cast<int32_t>(p.dim);
  push.inner = static_cast<int32_t>(p.inner);
  push.in_dtype = static_cast<int32_t>(p.in.dtype);
  push.in2_dtype = static_cast<int32_t>(in2_dtype);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(p.in.dtype), static_cast<uint32_t>(in2_dtype),
            static_cast<uint32_t>(p.out.dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
  spec.push_back(static_cast<uint32_t>(mode));
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  const uint32_t groups = group_count(stream, rows, mode == kModeThread ? wg : 1);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
}

}  // namespace tvk::kernels
