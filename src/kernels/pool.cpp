// Launcher of the pooling family (shaders/pool.comp): one invocation per produced element
// (output elements forward, grad_input elements backward) in memory order, 256 per workgroup.
#include "kernels/pool.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/pool.comp.
struct PoolPush {
  uint64_t in_addr;
  uint64_t out_addr;
  uint64_t idx_addr;
  int32_t batch;
  int32_t channels;
  int32_t in_size[3];
  int32_t out_size[3];
  int32_t kernel[3];
  int32_t stride[3];
  int32_t pad[3];
  int32_t dilation[3];
  int32_t divisor;
  int32_t flags;
  int32_t in_dtype;
  int32_t out_dtype;
  uint64_t split;  // forward split: PoolSplit address (0: one pass)
};
static_assert(sizeof(PoolPush) == 128);

// Mirrors `PoolSplit` in shaders/pool.comp.
struct PoolSplitBlock {
  uint64_t state;
  int32_t begin, end, last, outputs;
};
static_assert(sizeof(PoolSplitBlock) == 24);

// Mirrors `UnpoolPush` in shaders/pool.comp (MaxUnpool and FractionalMax).
struct UnpoolPush {
  uint64_t in_addr;
  uint64_t out_addr;
  uint64_t idx_addr;
  uint64_t aux_addr;
  int32_t batch;
  int32_t channels;
  int32_t in_size[3];
  int32_t out_size[3];
  int32_t kernel[3];
  int32_t flags;
  int32_t in_dtype;
  int32_t out_dtype;
  int32_t sample_dims;
  int32_t reserved;
  uint64_t alpha_bits[3];
};
static_assert(sizeof(UnpoolPush) == 120);

constexpr const char* kWhere = "tvk::kernels::pool";
constexpr uint32_t kWorkgroup = 256;

const char* op_name(PoolOp op) {
  switch (op) {
    case PoolOp::Max: return "max";
    case PoolOp::Avg: return "avg";
    case PoolOp::AdaptiveAvg: return "adaptive_avg";
    case PoolOp::AdaptiveMax: return "adaptive_max";
    case PoolOp::MaxBackward: return "max_backward";
    case PoolOp::AvgBackward: return "avg_backward";
    case PoolOp::AdaptiveAvgBackward: return "adaptive_avg_backward";
    case PoolOp::AdaptiveMaxBackward: return "adaptive_max_backward";
    case PoolOp::MaxUnpool: return "max_unpool";
    case PoolOp::FractionalMax: return "fractional_max";
  }
  return "?";
}

void check_operand(const Operand& op, const char* what, bool f64) {
  kernels::check_operand(kWhere, op, what, f64);
}

// Elements of a [batch, channels, D, H, W] tensor; throws past the 32-bit index range.
int64_t checked_numel(int64_t batch, int64_t channels, const std::array<int64_t, 3>& size,
                      const char* what) {
  int64_t n = 0;
  bool overflow = __builtin_mul_overflow(batch, channels, &n);
  for (int64_t s : size) overflow |= __builtin_mul_overflow(n, s, &n);
  if (overflow || n > kMaxIndex)
    invalid(kWhere, std::string(what) + ": more elements than the kernel's 32-bit index range");
  return n;
}

// Whether an invocation's nested window loops (extent[0] x extent[1] x extent[2], every
// level's iterations counted, per element it produces) fit the device's loop budget; throws
// when they do not and `fatal`.
bool window_loops_fit(Stream& stream, int64_t produced, const int64_t extent[3], bool fatal) {
  const int64_t budget = loop_budget(stream);
  if (budget == INT64_MAX) return true;
  const int64_t step = int64_t{group_count(stream, produced, kWorkgroup)} * kWorkgroup;
  const int64_t per_invocation = (produced + step - 1) / step;
  int64_t level = 1, total = 1;
  for (int k = 0; k < 3; ++k) {
    level = std::min<int64_t>(level * std::max<int64_t>(extent[k], 1), int64_t{1} << 40);
    total += level;
  }
  if (per_invocation * total <= budget) return true;
  if (fatal)
    invalid(kWhere, "pooling windows of " + std::to_string(level) +
                        " elements exceed the device's loop-iteration limit (max_loop_iterations " +
                        std::to_string(stream.device().caps().max_loop_iterations) + ")");
  return false;
}

void check_window_loops(Stream& stream, int64_t produced, const int64_t extent[3]) {
  window_loops_fit(stream, produced, extent, true);
}

// MaxUnpool and FractionalMax: their own push layout.
void unpool_or_fractional(Stream& stream, const Pool& p) {
  const bool unpool = p.op == PoolOp::MaxUnpool;
  const char* kind_name = p.kind == ComputeKind::Float32   ? "float32"
                          : p.kind == ComputeKind::Float64 ? "float64"
                                                           : nullptr;
  if (!kind_name) invalid(kWhere, std::string("op ") + op_name(p.op) + " is not built for this kind");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.batch < 0 || p.channels < 0) invalid(kWhere, "negative batch or channel count");
  for (int k = 0; k < 3; ++k) {
    if (p.in_size[k] < 0 || p.out_size[k] < 0 || p.in_size[k] > kMaxIndex || p.out_size[k] > kMaxIndex)
      invalid(kWhere, "spatial sizes must be non-negative and fit in int32");
    if (!unpool && (p.kernel[k] < 0 || p.in_size[k] < 1 || p.out_size[k] < 1 ||
                    p.out_size[k] + p.kernel[k] - 1 > p.in_size[k]))
      invalid(kWhere, "fractional pooling windows must lie inside the input");
  }
  const int64_t in_numel = checked_numel(p.batch, p.channels, p.in_size, "input");
  const int64_t out_numel = checked_numel(p.batch, p.channels, p.out_size, "output");
  const int64_t produced = unpool ? in_numel : out_numel;
  // Unpooling into empty planes: every index is invalid, but there is nowhere to write and the
  // caller reports that case itself (no output elements: nothing recorded).
  if (produced == 0 || out_numel == 0) return;
  check_operand(p.out, "output", f64);
  check_operand(p.in, "input", f64);
  check_operand(p.indices, "indices", f64);
  if (p.indices.dtype != DType::Int64) invalid(kWhere, "indices must be Int64");
  if (!unpool) {
    if (p.channels_last) invalid(kWhere, "fractional pooling is contiguous only");
    check_operand(p.samples, "samples", f64);
    if (p.samples.dtype != p.in.dtype) invalid(kWhere, "samples must have the input's dtype");
    if (p.sample_dims != 2 && p.sample_dims != 3) invalid(kWhere, "sample_dims must be 2 or 3");
    if (p.batch * p.channels * p.sample_dims > kMaxIndex)
      invalid(kWhere, "samples: more elements than the kernel's 32-bit index range");
  }

  if (!unpool) check_window_loops(stream, produced, p.kernel.data());

  const std::string name = std::string("pool.") + op_name(p.op) + "." + kind_name;
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  UnpoolPush push{};
  push.in_addr = p.in.address;
  push.out_addr = p.out.address;
  push.idx_addr = p.indices.address;
  push.aux_addr = unpool ? stream.device_error_address() : p.samples.address;
  push.batch = static_cast<int32_t>(p.batch);
  push.channels = static_cast<int32_t>(p.channels);
  for (int k = 0; k < 3; ++k) {
    push.in_size[k] = static_cast<int32_t>(p.in_size[k]);
    push.out_size[k] = static_cast<int32_t>(p.out_size[k]);
    push.kernel[k] = static_cast<int32_t>(unpool ? 1 : p.kernel[k]);
    if (f64) {
      std::memcpy(&push.alpha_bits[k], &p.alpha[k], sizeof(double));
    } else {
      const float a = static_cast<float>(p.alpha[k]);
      uint32_t bits = 0;
      std::memcpy(&bits, &a, sizeof(float));
      push.alpha_bits[k] = bits;
    }
  }
  push.flags = (p.channels_last ? 1 : 0) | (p.unpool_3d ? 4 : 0);
  push.in_dtype = static_cast<int32_t>(p.in.dtype);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  push.sample_dims = unpool ? 0 : p.sample_dims;
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(p.in.dtype), static_cast<uint32_t>(p.out.dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  stream.dispatch(pipeline, group_count(stream, produced, kWorkgroup), 1, 1, &push, sizeof(push));
}

}  // namespace

void pool(Stream& stream, const Pool& p) {
  const int opi = static_cast<int>(p.op);
  if (opi < 0 || opi > 9) invalid(kWhere, "invalid op " + std::to_string(opi));
  if (p.op == PoolOp::MaxUnpool || p.op == PoolOp::FractionalMax) return unpool_or_fractional(stream, p);
  const bool backward = opi >= 4;
  const bool is_max = p.op == PoolOp::Max || p.op == PoolOp::AdaptiveMax ||
                      p.op == PoolOp::MaxBackward || p.op == PoolOp::AdaptiveMaxBackward;
  const bool adaptive = p.op == PoolOp::AdaptiveAvg || p.op == PoolOp::AdaptiveMax ||
                        p.op == PoolOp::AdaptiveAvgBackward || p.op == PoolOp::AdaptiveMaxBackward;
  const char* kind_name = nullptr;
  switch (p.kind) {
    case ComputeKind::Float32: kind_name = "float32"; break;
    case ComputeKind::Float64: kind_name = "float64"; break;
    case ComputeKind::Int64:
      if (p.op == PoolOp::Max || p.op == PoolOp::Avg || p.op == PoolOp::AvgBackward) kind_name = "int64";
      break;
    default: break;
  }
  if (!kind_name) invalid(kWhere, std::string("op ") + op_name(p.op) + " is not built for this kind");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.batch < 0 || p.channels < 0) invalid(kWhere, "negative batch or channel count");
  for (int k = 0; k < 3; ++k) {
    if (p.in_size[k] < 1 || p.out_size[k] < 1) invalid(kWhere, "spatial sizes must be positive");
    for (int64_t v : {p.in_size[k], p.out_size[k], p.kernel[k], p.stride[k], p.pad[k], p.dilation[k]})
      if (v > kMaxIndex) invalid(kWhere, "sizes and window parameters must fit in int32");
    if (!adaptive && (p.kernel[k] < 1 || p.stride[k] < 1 || p.dilation[k] < 1 || p.pad[k] < 0))
      invalid(kWhere, "kernel, stride and dilation must be positive and padding non-negative");
    // The adaptive window bounds compute (o + 1) * I in 32 bits.
    if (adaptive && (p.in_size[k] + 1) * (p.out_size[k] + 1) > kMaxIndex)
      invalid(kWhere, "adaptive pooling sizes exceed the kernel's 32-bit index range");
    if (!adaptive && (p.kernel[k] * p.dilation[k] > kMaxIndex ||
                      (p.out_size[k] + 1) * p.stride[k] + p.pad[k] > kMaxIndex ||
                      p.in_size[k] + 2 * p.pad[k] > kMaxIndex))
      invalid(kWhere, "window geometry exceeds the kernel's 32-bit index range");
  }
  const int64_t in_numel = checked_numel(p.batch, p.channels, p.in_size, "input");
  const int64_t out_numel = checked_numel(p.batch, p.channels, p.out_size, "output");
  const int64_t produced = backward ? in_numel : out_numel;
  if (produced == 0) return;
  check_operand(p.out, "output", f64);
  check_operand(p.in, "input", f64);
  const bool indices_used = is_max && (backward || p.indices.address != 0);
  if (indices_used) {
    check_operand(p.indices, "indices", f64);
    if (p.indices.dtype != DType::Int64) invalid(kWhere, "indices must be Int64");
  }
  if (p.divisor_override > kMaxIndex || p.divisor_override < -kMaxIndex)
    invalid(kWhere, "divisor_override exceeds int32");

  // An invocation walks its window (forward) or the outputs covering its element (backward)
  // in nested loops. Past a device's loop limit (loop_budget) the forward walks the window in
  // passes (see PoolSplit in the shader); the backward raises.
  int64_t extent[3];
  for (int k = 0; k < 3; ++k) {
    if (adaptive)
      extent[k] = backward ? (p.out_size[k] + p.in_size[k] - 1) / p.in_size[k] + 1
                           : (p.in_size[k] + p.out_size[k] - 1) / p.out_size[k] + 1;
    else
      extent[k] = backward ? (p.kernel[k] - 1) * p.dilation[k] / p.stride[k] + 2 : p.kernel[k];
  }
  const bool split = !window_loops_fit(stream, produced, extent, backward);

  const std::string name = std::string("pool.") + op_name(p.op) + "." + kind_name;
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  PoolPush push{};
  push.in_addr = p.in.address;
  push.out_addr = p.out.address;
  push.idx_addr = indices_used ? p.indices.address : 0;
  push.batch = static_cast<int32_t>(p.batch);
  push.channels = static_cast<int32_t>(p.channels);
  for (int k = 0; k < 3; ++k) {
    push.in_size[k] = static_cast<int32_t>(p.in_size[k]);
    push.out_size[k] = static_cast<int32_t>(p.out_size[k]);
    push.kernel[k] = static_cast<int32_t>(p.kernel[k]);
    push.stride[k] = static_cast<int32_t>(p.stride[k]);
    push.pad[k] = static_cast<int32_t>(p.pad[k]);
    push.dilation[k] = static_cast<int32_t>(p.dilation[k]);
  }
  push.divisor = static_cast<int32_t>(p.divisor_override);
  push.flags = (p.channels_last ? 1 : 0) | (p.count_include_pad ? 2 : 0);
  push.in_dtype = static_cast<int32_t>(p.in.dtype);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(p.in.dtype), static_cast<uint32_t>(p.out.dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  const uint32_t groups = group_count(stream, produced, kWorkgroup);
  // Dense operands: x / grad_input have the input's in_numel elements, y / grad_output and the
  // indices the pooled out_numel. Forward: in read, out (and the indices) written; backward:
  // grad_output (in) and the indices read, grad_input (out) written.
  AccessSet accesses;
  add_dense(accesses, p.in.address, p.in.dtype, backward ? out_numel : in_numel, false);
  add_dense(accesses, p.out.address, p.out.dtype, backward ? in_numel : out_numel, true);
  if (indices_used) add_dense(accesses, p.indices.address, DType::Int64, out_numel, !backward);
  if (!split) {
    stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
    return;
  }
  const int64_t window = extent[0] * extent[1] * extent[2];  // >= every output's window
  if (window > kMaxIndex) invalid(kWhere, "pooling windows beyond the kernel's 32-bit index range");
  const int64_t step = int64_t{groups} * kWorkgroup;
  const int64_t range = loop_chunk(stream, window, (produced + step - 1) / step, 8 * ((produced + step - 1) / step));
  Allocator& allocator = stream.device().allocator();
  const uint64_t state = allocator.allocate(static_cast<uint64_t>(produced) * 12 + 8, stream.id());
  // Every pass carries the running state of its outputs: consecutive passes are ordered.
  accesses.read(state, static_cast<uint64_t>(produced) * 12 + 8);
  accesses.write(state, static_cast<uint64_t>(produced) * 12 + 8);
  try {
    for (int64_t w0 = 0; w0 < window; w0 += range) {
      PoolSplitBlock block{state, static_cast<int32_t>(w0),
                           static_cast<int32_t>(std::min(window, w0 + range)),
                           static_cast<int32_t>(window), static_cast<int32_t>(produced)};
      push.split = stream.upload_params(&block, sizeof(block));
      stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
    }
  } catch (...) {
    allocator.free(state);
    throw;
  }
  allocator.free(state);  // stream order: later reuse is ordered after these dispatches
}

}  // namespace tvk::kernels
