// Launcher of the grid sampling family (shaders/grid_sample.comp): one invocation per grid
// point, looping over the channels.
#include "kernels/grid_sample.h"

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/index.h"
#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/grid_sample.comp.
struct GridSamplePush {
  uint64_t input_addr;
  uint64_t grid_addr;
  uint64_t out_addr;
  uint64_t grad_input_addr;
  uint64_t grad_grid_addr;
  int32_t batch;
  int32_t channels;
  int32_t in_size[3];
  int32_t out_size[3];
  int32_t in_stride[5];
  int32_t mode;
  int32_t padding;
  int32_t flags;
  int32_t dtype;
  int32_t pad0;
};
static_assert(sizeof(GridSamplePush) == 112);
static_assert(offsetof(GridSamplePush, in_stride) == 72);
static_assert(offsetof(GridSamplePush, dtype) == 104);

constexpr const char* kWhere = "tvk::kernels::grid_sample";
constexpr uint32_t kWorkgroup = 128;

int64_t checked_product(std::initializer_list<int64_t> factors, const char* what) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t f : factors) overflow |= __builtin_mul_overflow(n, f, &n);
  if (overflow || n > kMaxIndex)
    invalid(kWhere, std::string(what) + ": more elements than the kernel's 32-bit index range");
  return n;
}

}  // namespace

void grid_sample(Stream& stream, const GridSample& p) {
  if (p.dims != 2 && p.dims != 3) invalid(kWhere, "dims must be 2 or 3");
  const int modei = static_cast<int>(p.mode), paddingi = static_cast<int>(p.padding);
  if (modei < 0 || modei > 2) invalid(kWhere, "invalid interpolation mode " + std::to_string(modei));
  if (paddingi < 0 || paddingi > 2) invalid(kWhere, "invalid padding mode " + std::to_string(paddingi));
  if (p.mode == GridSampleMode::Bicubic && p.dims != 2)
    invalid(kWhere, "bicubic interpolation needs 2 spatial dims");
  if (p.kind != ComputeKind::Float32 && p.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = p.kind == ComputeKind::Float64;
  const DeviceCapabilities& caps = stream.device().caps();
  if (f64 && !caps.float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (f64 && p.backward && !caps.int64_atomics)
    throw std::invalid_argument(
        "float64 grid_sampler backward is not supported on this device (no shaderBufferInt64Atomics)");
  if (p.batch < 0 || p.channels < 0) invalid(kWhere, "negative batch or channel count");
  for (int k = 0; k < 3; ++k) {
    if (p.in_size[k] < 1) invalid(kWhere, "input spatial sizes must be positive");
    if (p.out_size[k] < 0) invalid(kWhere, "negative grid size");
  }
  if (p.dims == 2 && (p.in_size[0] != 1 || p.out_size[0] != 1))
    invalid(kWhere, "2 spatial dims need D = 1");
  const int64_t points = checked_product({p.batch, p.out_size[0], p.out_size[1], p.out_size[2]}, "grid");
  checked_product({points, p.dims}, "grid");
  checked_product({points, p.channels}, "output");
  checked_product({p.batch, p.channels, p.in_size[0], p.in_size[1], p.in_size[2]}, "input");
  // Largest input offset: sum of (size - 1) * |stride| over (N, C, D, H, W).
  const int64_t in_dims[5] = {p.batch, p.channels, p.in_size[0], p.in_size[1], p.in_size[2]};
  int64_t reach = 0;
  for (int d = 0; d < 5; ++d) {
    if (in_dims[d] <= 1) continue;
    if (p.in_strides[d] < 0) invalid(kWhere, "negative input strides are not supported");
    int64_t term = 0;
    if (__builtin_mul_overflow(in_dims[d] - 1, p.in_strides[d], &term) ||
        __builtin_add_overflow(reach, term, &reach) || reach > kMaxIndex)
      invalid(kWhere, "input: offsets beyond the kernel's 32-bit index range");
  }
  if (points == 0 || p.channels == 0) return;

  check_operand(kWhere, p.input, "input", f64);
  check_operand(kWhere, p.grid, "grid", f64);
  if (p.grid.dtype != p.input.dtype) invalid(kWhere, "grid and input dtypes differ");
  const DType acc_dtype = f64 ? DType::Float64 : DType::Float32;
  bool want_input = false, want_grid = false;
  if (p.backward) {
    check_operand(kWhere, p.grad_output, "grad_output", f64);
    if (p.grad_output.dtype != p.input.dtype) invalid(kWhere, "grad_output and input dtypes differ");
    want_input = p.grad_input.address != 0;
    want_grid = p.grad_grid.address != 0;
    if (want_input) {
      check_operand(kWhere, p.grad_input, "grad_input", f64);
      if (p.grad_input.dtype != acc_dtype)
        invalid(kWhere, std::string("grad_input must be ") + dtype_name(acc_dtype));
    }
    if (want_grid) {
      check_operand(kWhere, p.grad_grid, "grad_grid", f64);
      if (p.grad_grid.dtype != p.input.dtype) invalid(kWhere, "grad_grid and input dtypes differ");
    }
    if (!want_input && !want_grid) return;
  } else {
    check_operand(kWhere, p.output, "output", f64);
    if (p.output.dtype != p.input.dtype) invalid(kWhere, "output and input dtypes differ");
  }

  std::string name = std::string("grid_sample.") + (p.dims == 2 ? "d2" : "d3") +
                     (p.backward ? ".backward" : ".forward") + (f64 ? ".float64" : ".float32");
  if (p.backward && !f64 && caps.float32_atomic_add && index_tuning().float_atomics)
    name += ".atomic_float";
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  GridSamplePush push{};
  push.input_addr = p.input.address;
  push.grid_addr = p.grid.address;
  push.out_addr = p.backward ? p.grad_output.address : p.output.address;
  push.grad_input_addr = want_input ? p.grad_input.address : 0;
  push.grad_grid_addr = want_grid ? p.grad_grid.address : 0;
  push.batch = static_cast<int32_t>(p.batch);
  push.channels = static_cast<int32_t>(p.channels);
  for (int k = 0; k < 3; ++k) {
    push.in_size[k] = static_cast<int32_t>(p.in_size[k]);
    push.out_size[k] = static_cast<int32_t>(p.out_size[k]);
  }
  for (int d = 0; d < 5; ++d) push.in_stride[d] = in_dims[d] <= 1 ? 0 : static_cast<int32_t>(p.in_strides[d]);
  push.mode = modei;
  push.padding = paddingi;
  push.flags = (p.align_corners ? 1 : 0) | (want_grid ? 2 : 0);
  push.dtype = static_cast<int32_t>(p.input.dtype);
  const std::vector<uint32_t> spec = {
      tuning().specialize_dtypes ? static_cast<uint32_t>(p.input.dtype) : UINT32_MAX};
  // An invocation walks every channel of its sampling point (the corner / tap loops unroll:
  // one iteration per channel, measured on lavapipe). Not split: channel counts past a
  // device's loop limit (loop_budget) raise instead of returning truncated results.
  const uint32_t groups = group_count(stream, points, kWorkgroup);
  const int64_t step = int64_t{groups} * kWorkgroup;
  if ((points + step - 1) / step * (p.channels + 16) > loop_budget(stream))
    invalid(kWhere, std::to_string(p.channels) +
                        " channels exceed the device's loop-iteration limit (max_loop_iterations)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  AccessSet accesses;
  const int64_t in_strides[5] = {p.in_strides[0], p.in_strides[1], p.in_strides[2], p.in_strides[3],
                                 p.in_strides[4]};
  add_strided(accesses, p.input.address, p.input.dtype, 5, in_dims, in_strides, false);
  add_dense(accesses, p.grid.address, p.grid.dtype, points * p.dims, false);
  if (p.backward) {
    add_dense(accesses, p.grad_output.address, p.grad_output.dtype, points * p.channels, false);
    if (want_input)  // accumulated into (read and written)
      add_dense(accesses, p.grad_input.address, p.grad_input.dtype,
                p.batch * p.channels * p.in_size[0] * p.in_size[1] * p.in_size[2], true);
    if (want_grid) add_dense(accesses, p.grad_grid.address, p.grad_grid.dtype, points * p.dims, true);
  } else {
    add_dense(accesses, p.output.address, p.output.dtype, points * p.channels, true);
  }
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
}

}  // namespace tvk::kernels
