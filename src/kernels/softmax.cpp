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
//   Registers  (float32 math, innermost dim) one workgroup per row, the row read once into
//              registers (16 elements per invocation in four-element chunks, vector loads
//              when aligned), reduced twice (max, then the sum) and written once: a row
//              costs one read and one write of memory instead of the streaming strategy's two
//              reads. Rows up to 16 * max_workgroup elements.
//   SubgroupRow  (subgroup variants, innermost dim) one subgroup per row, registers as
//              above and subgroup reductions only (no shared memory, no barriers): rows up to
//              16 * subgroup size elements, several rows per workgroup.
#include "kernels/softmax.h"

#include <algorithm>
#include <string>
#include <utility>
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
// SPEC_MODE values of the shader.
constexpr int kModeWorkgroup = 0;
constexpr int kModeThread = 1;
constexpr int kModeRegisters = 2;
constexpr int kModeSubgroupRow = 3;
// Elements an invocation holds in the register modes (R4 chunks of four in the shader).
constexpr int64_t kRegisterElements = 16;

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

// Register mode: about 8 elements per invocation (half the capacity, so that rows slightly
// longer than a power of two keep the same size), 32..max invocations.
uint32_t register_workgroup_for(int64_t dim) {
  uint32_t max_wg = std::max<uint32_t>(32, softmax_tuning().max_workgroup);
  uint32_t wg = 32;
  while (wg < max_wg && static_cast<int64_t>(wg) * (kRegisterElements / 2) < dim) wg *= 2;
  return wg;
}

// Vector accesses of four elements: float32 / float16 / bfloat16 at a 4-element aligned
// address (rows then stay aligned when dim % 4 == 0).
bool vector_aligned(const Operand& op) {
  if (op.dtype != DType::Float32 && op.dtype != DType::Float16 && op.dtype != DType::BFloat16)
    return false;
  return op.address % (4 * dtype_size(op.dtype)) == 0;
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
  const DeviceCapabilities& caps = stream.device().caps();
  const bool subgroups = !f64 && t.subgroups && caps.subgroup_basic && caps.subgroup_vote &&
                         caps.subgroup_arithmetic && caps.subgroup_size > 0;
  const int64_t subgroup = subgroups ? caps.subgroup_size : 0;
  using S = SoftmaxTuning::Strategy;
  S strategy = t.strategy;
  if (strategy == S::Auto) {
    if (p.inner == 1 && !f64) {
      if (p.dim <= 16)
        strategy = S::Thread;
      else if (subgroups && p.dim <= subgroup * kRegisterElements)
        strategy = S::SubgroupRow;
      else if (p.dim <= int64_t{register_workgroup_for(p.dim)} * kRegisterElements)
        strategy = S::Registers;
      else
        strategy = S::Workgroup;
    } else if (p.inner == 1) {
      strategy = p.dim > 32 ? S::Workgroup : S::Thread;
    } else {  // strided rows: a thread per row is coalesced; few long rows need workgroups
      strategy = (rows >= 1024 || p.dim <= 64) ? S::Thread : S::Workgroup;
    }
  }
  // The register modes need contiguous rows and float32 math; the subgroup mode the
  // subgroup variant.
  if (strategy == S::SubgroupRow && !subgroups) strategy = S::Registers;
  if ((strategy == S::Registers || strategy == S::SubgroupRow) && (f64 || p.inner != 1))
    strategy = S::Workgroup;

  // Invocations per workgroup and rows a workgroup covers at once.
  auto shape = [&](S s) -> std::pair<uint32_t, uint32_t> {
    switch (s) {
      case S::Thread: return {64, 64};
      case S::Registers: return {register_workgroup_for(p.dim), 1};
      case S::SubgroupRow: {
        const uint32_t wg = std::max<uint32_t>(128, static_cast<uint32_t>(subgroup));
        return {wg, wg / static_cast<uint32_t>(subgroup)};
      }
      default: return {workgroup_for(p.dim), 1};
    }
  };
  // Loop iterations of an invocation (loop_budget): per row it owns, the row loop and two
  // passes over its elements (Thread) or over its share of them plus the reductions. The
  // register modes count their fixed chunk loops and the streaming loop they fall back to
  // for rows longer than their registers. Thread rows that would exceed a device's loop
  // limit go to Workgroup.
  auto loop_cost = [&](S s) {
    const auto [wg, rows_per_group] = shape(s);
    const int64_t step = int64_t{group_count(stream, rows, rows_per_group)} * rows_per_group;
    const int64_t lanes = s == S::SubgroupRow ? subgroup : wg;
    const int64_t streaming = 1 + 2 * ((p.dim + lanes - 1) / lanes) + 3 * 9 + wg / 4;
    int64_t per_row = 0;
    switch (s) {
      case S::Thread: per_row = 1 + 2 * p.dim; break;
      case S::Registers:
      case S::SubgroupRow: per_row = streaming + 3 * kRegisterElements * 2; break;
      default: per_row = streaming; break;
    }
    return (rows + step - 1) / step * per_row;
  };
  const int64_t budget = loop_budget(stream);
  if (strategy == S::Thread && loop_cost(S::Thread) > budget) strategy = S::Workgroup;
  if (loop_cost(strategy) > budget)
    invalid(kWhere, "rows of " + std::to_string(p.dim) +
                        " elements exceed the device's loop-iteration limit (max_loop_iterations)");
  const int mode = strategy == S::Thread        ? kModeThread
                   : strategy == S::Registers   ? kModeRegisters
                   : strategy == S::SubgroupRow ? kModeSubgroupRow
                                                : kModeWorkgroup;
  const auto [wg, rows_per_group] = shape(strategy);
  const bool vec = (mode == kModeRegisters || mode == kModeSubgroupRow) && p.dim % 4 == 0 &&
                   vector_aligned(p.out) && vector_aligned(p.in) &&
                   (!backward || vector_aligned(p.in2));

  std::string name = std::string("softmax.") + op_name(p.op) + (f64 ? ".float64" : ".float32");
  if (mode != kModeThread && subgroups) name += ".subgroup";
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
  spec.push_back(vec ? 1u : 0u);
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  const uint32_t groups = group_count(stream, rows, rows_per_group);
  AccessSet accesses;
  add_dense(accesses, p.in.address, p.in.dtype, numel, false);
  if (backward) add_dense(accesses, p.in2.address, p.in2.dtype, numel, false);
  add_dense(accesses, p.out.address, p.out.dtype, numel, true);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
}

}  // namespace tvk::kernels
