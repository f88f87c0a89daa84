// Launcher of the normalization family (shaders/norm.comp).
//
// Strategies (per segment = the elements one statistic or one parameter gradient covers):
//   Workgroup  one workgroup per segment; the invocations stride over it (coalesced when the
//              segment has contiguous runs of >= 32 elements) and combine their partial sums
//              through subgroup arithmetic or a shared-memory tree. The workgroup size
//              follows the segment length (32..256 invocations, ~4+ elements each).
//   Thread     one invocation per segment with serial loops: for short contiguous runs and
//              many segments (batch norm over [N, C], layer norm's parameter gradients),
//              where adjacent invocations read adjacent elements; and on CPU devices for
//              any segment up to 4096 elements when there are >= 32 segments.
//   Registers  (float32 math; layer / RMS norm forward and input gradient) one workgroup per
//              row, the row read once into registers (16 elements per invocation in
//              four-element chunks, vector loads when aligned) and written once: one read of
//              x (and dy) instead of the streaming strategy's two or three. Rows up to
//              16 * max_workgroup elements.
//   SubgroupRow  (subgroup variants, same ops) one subgroup per row, registers as above and
//              subgroup reductions only: rows up to 16 * subgroup size, several rows per
//              workgroup, no shared memory or barriers.
#include "kernels/norm.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/norm.comp.
struct NormPush {
  uint64_t a[8];
  uint64_t eps;
  uint64_t momentum;
  int32_t outer;
  int32_t channels;
  int32_t inner;
  int32_t groups;
  int32_t hw;
  int32_t layout_flags;
  int32_t x_dt;
  int32_t out_dt;
  int32_t dy_dt;
  int32_t param_dt;
  int32_t stat_dt;
  int32_t run_dt;
};
static_assert(sizeof(NormPush) == 128);

constexpr const char* kWhere = "tvk::kernels::norm";
// SPEC_MODE values of the shader.
constexpr int kModeWorkgroup = 0;
constexpr int kModeThread = 1;
constexpr int kModeRegisters = 2;
constexpr int kModeSubgroupRow = 3;
// Elements an invocation holds in the register modes (R4 chunks of four in the shader).
constexpr int64_t kRegisterElements = 16;
constexpr int kFlagCenter = 1;
constexpr int kFlagRunning = 2;
constexpr int kFlagUpdate = 4;
constexpr int kFlagTrain = 8;
constexpr int kFlagResidual = 16;

bool check_kind(Stream& stream, ComputeKind kind) {
  if (kind != ComputeKind::Float32 && kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  return f64;
}

// Checks an operand; an optional one may have address 0. Returns its dtype code (Float32
// for an absent operand).
int32_t check_operand(const Operand& op, const char* what, bool f64, bool required) {
  if (op.address == 0) {
    if (required) invalid(kWhere, std::string(what) + ": address is 0");
    return static_cast<int32_t>(DType::Float32);
  }
  check_dtype(kWhere, op.dtype, what);
  if (op.dtype != DType::Float16 && op.dtype != DType::BFloat16 && op.dtype != DType::Float32 &&
      op.dtype != DType::Float64)
    invalid(kWhere, std::string(what) + ": must be a floating dtype");
  if (op.address % dtype_size(op.dtype) != 0)
    invalid(kWhere, std::string(what) + ": address is not aligned to its element size");
  if (op.dtype == DType::Float64 && !f64)
    invalid(kWhere, std::string(what) + ": float64 operands need the Float64 kind");
  return static_cast<int32_t>(op.dtype);
}

// Validates the shape; false when there is nothing to do (no segments).
bool check_shape(const NormShape& s) {
  const int layout = static_cast<int>(s.layout);
  if (layout < 0 || layout > 2) invalid(kWhere, "invalid layout " + std::to_string(layout));
  if (s.outer < 0 || s.channels < 0 || s.inner < 0 || s.groups < 1 || s.hw < 0)
    invalid(kWhere, "negative size or fewer than one group");
  int64_t numel = 0;
  if (__builtin_mul_overflow(s.outer, s.channels, &numel) ||
      __builtin_mul_overflow(numel, s.inner, &numel) || numel > kMaxIndex ||
      s.outer * std::max<int64_t>(s.inner, 1) > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");
  return s.channels > 0;
}

uint64_t scalar_bits(double v, bool f64) {
  if (f64) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  }
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

uint32_t workgroup_for(int64_t length) {
  const uint32_t max_wg = std::max<uint32_t>(32, norm_tuning().max_workgroup);
  uint32_t wg = 32;
  while (wg < max_wg && static_cast<int64_t>(wg) * 4 < length) wg *= 2;
  return wg;
}

// Register mode: about 8 elements per invocation, 32..max invocations.
uint32_t register_workgroup_for(int64_t length) {
  const uint32_t max_wg = std::max<uint32_t>(32, norm_tuning().max_workgroup);
  uint32_t wg = 32;
  while (wg < max_wg && static_cast<int64_t>(wg) * (kRegisterElements / 2) < length) wg *= 2;
  return wg;
}

// Four-element vector access: float32 / float16 / bfloat16 at a 4-element aligned address
// (an absent operand, address 0, does not matter).
bool vector_aligned(uint64_t address, int32_t dtype) {
  if (address == 0) return true;
  const DType dt = static_cast<DType>(dtype);
  if (dt != DType::Float32 && dt != DType::Float16 && dt != DType::BFloat16) return false;
  return address % (4 * dtype_size(dt)) == 0;
}

// Records one dispatch of `op` ("forward", "backward", "param_grad") over push.channels
// segments.
void launch(Stream& stream, const char* op, bool f64, const NormShape& shape, NormPush& push,
            const AccessSet& accesses) {
  push.outer = static_cast<int32_t>(shape.outer);
  push.channels = static_cast<int32_t>(shape.channels);
  push.inner = static_cast<int32_t>(shape.inner);
  push.groups = static_cast<int32_t>(shape.groups);
  push.hw = static_cast<int32_t>(std::max<int64_t>(shape.hw, 1));
  push.layout_flags |= static_cast<int32_t>(shape.layout);

  const int64_t length = shape.outer * shape.inner;
  // Contiguous run of a segment: the whole segment when outer == 1, else one inner block.
  const int64_t run = shape.outer == 1 ? length : shape.inner;
  const NormTuning& t = norm_tuning();
  const DeviceCapabilities& caps = stream.device().caps();
  const bool subgroups = !f64 && t.subgroups && caps.subgroup_basic && caps.subgroup_arithmetic &&
                         caps.subgroup_size > 0;
  const int64_t subgroup = subgroups ? caps.subgroup_size : 0;
  // The register modes: contiguous rows (layer / RMS norm), forward or input gradient,
  // float32 math, no running statistics.
  const int flags = push.layout_flags >> 4;
  const bool row_op = !f64 && shape.layout == NormLayout::Row && shape.outer == 1 &&
                      std::strcmp(op, "param_grad") != 0 &&
                      (flags & (kFlagRunning | kFlagUpdate)) == 0;
  using S = NormTuning::Strategy;
  S strategy = t.strategy;
  // CPU devices (lavapipe) run a workgroup's barriers as coroutine switches, which cost more
  // than a serial loop over a short segment: with enough segments to fill the SIMD lanes,
  // one invocation per segment.
  const bool cpu = caps.device_type == "cpu";
  if (strategy == S::Auto) {
    if (length <= 32 || (cpu && shape.channels >= 32 && length <= 4096))
      strategy = S::Thread;
    else if (row_op && subgroups && length <= subgroup * kRegisterElements)
      strategy = S::SubgroupRow;
    else if (row_op && length <= int64_t{register_workgroup_for(length)} * kRegisterElements)
      strategy = S::Registers;
    else if (run >= 32)
      strategy = S::Workgroup;
    else  // short strided runs: adjacent invocations read adjacent segments
      strategy = shape.channels >= 256 ? S::Thread : S::Workgroup;
  }
  if (strategy == S::SubgroupRow && !subgroups) strategy = S::Registers;
  if ((strategy == S::Registers || strategy == S::SubgroupRow) && !row_op) strategy = S::Workgroup;
  // Invocations per workgroup and segments a workgroup covers at once.
  auto shape_of = [&](S s) -> std::pair<uint32_t, uint32_t> {
    switch (s) {
      case S::Thread: return {64, 64};
      case S::Registers: return {register_workgroup_for(length), 1};
      case S::SubgroupRow: {
        const uint32_t wg = std::max<uint32_t>(128, static_cast<uint32_t>(subgroup));
        return {wg, wg / static_cast<uint32_t>(subgroup)};
      }
      default: return {workgroup_for(length), 1};
    }
  };
  // Loop iterations of an invocation (loop_budget): per segment it owns, the segment loop and
  // up to three passes over its elements (Thread) or over its share of them plus the trees
  // (Workgroup; the register modes add their fixed chunk loops to the streaming loops they
  // fall back to for longer rows). Thread segments that would exceed a device's loop limit
  // go to Workgroup.
  auto loop_cost = [&](S s) {
    const auto [w, per_group] = shape_of(s);
    const int64_t step = int64_t{group_count(stream, shape.channels, per_group)} * per_group;
    const int64_t lanes = s == S::SubgroupRow ? subgroup : w;
    int64_t per_segment = 1 + 3 * ((length + lanes - 1) / lanes) + 4 * 9 + w / 2;
    if (s == S::Thread) per_segment = 1 + 3 * length;
    if (s == S::Registers || s == S::SubgroupRow) per_segment += 4 * kRegisterElements;
    return (shape.channels + step - 1) / step * per_segment;
  };
  const int64_t budget = loop_budget(stream);
  if (strategy == S::Thread && loop_cost(S::Thread) > budget) strategy = S::Workgroup;
  if (loop_cost(strategy) > budget)
    invalid(kWhere, "segments of " + std::to_string(length) +
                        " elements exceed the device's loop-iteration limit (max_loop_iterations)");
  const int mode = strategy == S::Thread        ? kModeThread
                   : strategy == S::Registers   ? kModeRegisters
                   : strategy == S::SubgroupRow ? kModeSubgroupRow
                                                : kModeWorkgroup;
  const auto [wg, per_group] = shape_of(strategy);
  // Row-wise operands: x, y / dx, w, b (forward) or dy (backward).
  const int32_t slot3_dt = std::strcmp(op, "forward") == 0 ? push.param_dt : push.dy_dt;
  const bool residual = (flags & kFlagResidual) != 0;  // a6 / a7: residual in, sum out
  const bool vec = (mode == kModeRegisters || mode == kModeSubgroupRow) && length % 4 == 0 &&
                   vector_aligned(push.a[0], push.x_dt) && vector_aligned(push.a[1], push.out_dt) &&
                   vector_aligned(push.a[2], push.param_dt) && vector_aligned(push.a[3], slot3_dt) &&
                   (!residual || (vector_aligned(push.a[6], push.run_dt) &&
                                  vector_aligned(push.a[7], push.run_dt)));

  std::string name = std::string("norm.") + op + (f64 ? ".float64" : ".float32");
  if (mode != kModeThread && subgroups) name += ".subgroup";
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(push.x_dt),     static_cast<uint32_t>(push.out_dt),
            static_cast<uint32_t>(push.dy_dt),    static_cast<uint32_t>(push.param_dt),
            static_cast<uint32_t>(push.stat_dt),  static_cast<uint32_t>(push.run_dt)};
  else
    spec.assign(6, UINT32_MAX);
  spec.push_back(static_cast<uint32_t>(mode));
  spec.push_back(vec ? 1u : 0u);
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  const uint32_t groups = group_count(stream, shape.channels, per_group);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
}

// Element counts of the operand classes, for the dispatch's AccessSet: data tensors (the whole
// [outer, channels, inner] view), parameters and statistics. The last two are bounds that
// hold for every layout and view (a wider range only costs a barrier).
struct NormExtents {
  int64_t data, params, stats;
  explicit NormExtents(const NormShape& s) {
    data = s.outer * s.channels * s.inner;
    const int64_t group_channels = s.layout == NormLayout::Group && s.hw > 0
                                       ? s.inner / s.hw * s.groups : 0;
    params = std::max({s.inner, s.channels, group_channels});
    stats = std::max(s.channels, s.outer * std::max<int64_t>(s.groups, 1));
  }
};

void check_group_shape(const NormShape& s, bool param_view) {
  if (s.layout != NormLayout::Group) return;
  if (param_view) {
    if (s.channels % s.groups != 0) invalid(kWhere, "channels must be a multiple of groups");
  } else if (s.hw < 1 || s.inner % s.hw != 0) {
    if (s.inner != 0) invalid(kWhere, "inner must be a multiple of hw");
  }
}

}  // namespace

NormTuning& norm_tuning() {
  static NormTuning t;
  return t;
}

void norm_forward(Stream& stream, const NormForward& p) {
  const bool f64 = check_kind(stream, p.kind);
  if (!check_shape(p.shape)) return;
  check_group_shape(p.shape, false);
  NormPush push{};
  push.x_dt = check_operand(p.x, "input", f64, true);
  push.out_dt = check_operand(p.out, "output", f64, false);
  push.param_dt = check_operand(p.weight, "weight", f64, false);
  if (p.bias.address != 0) {
    const int32_t dt = check_operand(p.bias, "bias", f64, true);
    if (p.weight.address != 0 && dt != push.param_dt)
      invalid(kWhere, "weight and bias must have the same dtype");
    push.param_dt = dt;
  }
  int flags = p.center ? kFlagCenter : 0;
  if (p.stats_given) {
    flags |= kFlagRunning;
    push.stat_dt = check_operand(p.running_mean, "running_mean", f64, p.center);
    push.stat_dt = check_operand(p.running_var, "running_var", f64, true);
    if (p.center && p.running_mean.dtype != p.running_var.dtype)
      invalid(kWhere, "running_mean and running_var must have the same dtype");
    push.a[4] = p.running_mean.address;
    push.a[5] = p.running_var.address;
  } else {
    push.stat_dt = check_operand(p.save_rstd, "save_rstd", f64, false);
    if (p.save_mean.address != 0) {
      const int32_t dt = check_operand(p.save_mean, "save_mean", f64, true);
      if (p.save_rstd.address != 0 && dt != push.stat_dt)
        invalid(kWhere, "save_mean and save_rstd must have the same dtype");
      push.stat_dt = dt;
    }
    push.a[4] = p.center ? p.save_mean.address : 0;
    push.a[5] = p.save_rstd.address;
    if (p.update) {
      flags |= kFlagUpdate;
      push.run_dt = check_operand(p.running_mean, "running_mean", f64, true);
      if (check_operand(p.running_var, "running_var", f64, true) != push.run_dt)
        invalid(kWhere, "running_mean and running_var must have the same dtype");
      push.a[6] = p.running_mean.address;
      push.a[7] = p.running_var.address;
    }
  }
  if (p.residual.address != 0 || p.sum_out.address != 0) {
    if (p.shape.layout != NormLayout::Row || f64 || p.stats_given || p.update)
      invalid(kWhere, "the fused residual add needs Layout::Row, the Float32 kind and no "
                      "running statistics");
    if (check_operand(p.residual, "residual", f64, true) != push.x_dt ||
        check_operand(p.sum_out, "sum_out", f64, true) != push.x_dt)
      invalid(kWhere, "residual and sum_out must have the input's dtype");
    flags |= kFlagResidual;
    push.run_dt = push.x_dt;
    push.a[6] = p.residual.address;
    push.a[7] = p.sum_out.address;
  }
  push.a[0] = p.x.address;
  push.a[1] = p.out.address;
  push.a[2] = p.weight.address;
  push.a[3] = p.bias.address;
  push.eps = scalar_bits(p.eps, f64);
  push.momentum = scalar_bits(p.momentum, f64);
  push.dy_dt = push.x_dt;
  push.layout_flags = flags << 4;
  const NormExtents e(p.shape);
  AccessSet accesses;
  add_dense(accesses, p.x.address, p.x.dtype, e.data, false);
  add_dense(accesses, p.out.address, p.out.dtype, e.data, true);
  add_dense(accesses, p.weight.address, p.weight.dtype, e.params, false);
  add_dense(accesses, p.bias.address, p.bias.dtype, e.params, false);
  if (p.stats_given) {
    add_dense(accesses, p.running_mean.address, p.running_mean.dtype, e.stats, false);
    add_dense(accesses, p.running_var.address, p.running_var.dtype, e.stats, false);
  } else {
    add_dense(accesses, push.a[4], p.save_mean.dtype, e.stats, true);
    add_dense(accesses, p.save_rstd.address, p.save_rstd.dtype, e.stats, true);
    if (p.update) {
      for (const Operand* r : {&p.running_mean, &p.running_var}) {
        add_dense(accesses, r->address, r->dtype, e.stats, false);
        add_dense(accesses, r->address, r->dtype, e.stats, true);
      }
    }
  }
  add_dense(accesses, p.residual.address, p.residual.dtype, e.data, false);
  add_dense(accesses, p.sum_out.address, p.sum_out.dtype, e.data, true);
  launch(stream, "forward", f64, p.shape, push, accesses);
}

void norm_backward(Stream& stream, const NormBackward& p) {
  const bool f64 = check_kind(stream, p.kind);
  if (!check_shape(p.shape)) return;
  check_group_shape(p.shape, false);
  NormPush push{};
  push.x_dt = check_operand(p.x, "input", f64, true);
  push.dy_dt = check_operand(p.grad_out, "grad_out", f64, true);
  push.out_dt = check_operand(p.grad_in, "grad_input", f64, false);
  push.param_dt = check_operand(p.weight, "weight", f64, false);
  for (const Operand* g : {&p.grad_weight, &p.grad_bias}) {
    if (g->address == 0) continue;
    if (p.shape.layout != NormLayout::Channel)
      invalid(kWhere, "weight / bias gradients of this layout come from norm_param_grad");
    const int32_t dt = check_operand(*g, "weight / bias gradient", f64, true);
    if (p.weight.address != 0 && dt != push.param_dt)
      invalid(kWhere, "the weight and its gradients must have the same dtype");
    push.param_dt = dt;
  }
  push.stat_dt = check_operand(p.rstd, p.stats_given ? "running_var" : "rstd", f64, true);
  if (p.center &&
      check_operand(p.mean, p.stats_given ? "running_mean" : "mean", f64, true) != push.stat_dt)
    invalid(kWhere, "the mean and variance statistics must have the same dtype");
  push.run_dt = push.stat_dt;
  int flags = (p.center ? kFlagCenter : 0) | (p.stats_given ? kFlagRunning : 0) |
              (p.train ? kFlagTrain : 0);
  push.a[0] = p.x.address;
  push.a[1] = p.grad_in.address;
  push.a[2] = p.weight.address;
  push.a[3] = p.grad_out.address;
  push.a[4] = p.center ? p.mean.address : 0;
  push.a[5] = p.rstd.address;
  push.a[6] = p.grad_weight.address;
  push.a[7] = p.grad_bias.address;
  push.eps = scalar_bits(p.eps, f64);
  push.layout_flags = flags << 4;
  if (push.a[1] == 0 && push.a[6] == 0 && push.a[7] == 0) return;
  const NormExtents e(p.shape);
  AccessSet accesses;
  add_dense(accesses, p.x.address, p.x.dtype, e.data, false);
  add_dense(accesses, p.grad_out.address, p.grad_out.dtype, e.data, false);
  add_dense(accesses, p.grad_in.address, p.grad_in.dtype, e.data, true);
  add_dense(accesses, p.weight.address, p.weight.dtype, e.params, false);
  add_dense(accesses, push.a[4], p.mean.dtype, e.stats, false);
  add_dense(accesses, p.rstd.address, p.rstd.dtype, e.stats, false);
  add_dense(accesses, p.grad_weight.address, p.grad_weight.dtype, e.params, true);
  add_dense(accesses, p.grad_bias.address, p.grad_bias.dtype, e.params, true);
  launch(stream, "backward", f64, p.shape, push, accesses);
}

void norm_param_grad(Stream& stream, const NormParamGrad& p) {
  const bool f64 = check_kind(stream, p.kind);
  if (p.shape.layout == NormLayout::Channel)
    invalid(kWhere, "batch norm's parameter gradients come from norm_backward");
  if (!check_shape(p.shape)) return;
  check_group_shape(p.shape, true);
  if (p.grad_weight.address == 0 && p.grad_bias.address == 0) return;
  NormPush push{};
  push.x_dt = check_operand(p.x, "input", f64, true);
  push.dy_dt = check_operand(p.grad_out, "grad_out", f64, true);
  push.out_dt = push.x_dt;
  push.param_dt = check_operand(p.grad_weight, "grad_weight", f64, false);
  if (p.grad_bias.address != 0) {
    const int32_t dt = check_operand(p.grad_bias, "grad_bias", f64, true);
    if (p.grad_weight.address != 0 && dt != push.param_dt)
      invalid(kWhere, "grad_weight and grad_bias must have the same dtype");
    push.param_dt = dt;
  }
  push.stat_dt = check_operand(p.rstd, "rstd", f64, true);
  if (p.center && check_operand(p.mean, "mean", f64, true) != push.stat_dt)
    invalid(kWhere, "mean and rstd must have the same dtype");
  push.run_dt = push.stat_dt;
  push.a[0] = p.x.address;
  push.a[3] = p.grad_out.address;
  push.a[4] = p.center ? p.mean.address : 0;
  push.a[5] = p.rstd.address;
  push.a[6] = p.grad_weight.address;
  push.a[7] = p.grad_bias.address;
  push.layout_flags = (p.center ? kFlagCenter : 0) << 4;
  const NormExtents e(p.shape);
  AccessSet accesses;
  add_dense(accesses, p.x.address, p.x.dtype, e.data, false);
  add_dense(accesses, p.grad_out.address, p.grad_out.dtype, e.data, false);
  add_dense(accesses, push.a[4], p.mean.dtype, e.stats, false);
  add_dense(accesses, p.rstd.address, p.rstd.dtype, e.stats, false);
  add_dense(accesses, p.grad_weight.address, p.grad_weight.dtype, e.params, true);
  add_dense(accesses, p.grad_bias.address, p.grad_bias.dtype, e.params, true);
  launch(stream, "param_grad", f64, p.shape, push, accesses);
}

}  // namespace tvk::kernels
