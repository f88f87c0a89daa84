// Native grid sampling: grid_sampler_2d, grid_sampler_3d and their backward ops
// (F.grid_sample reaches them through the grid_sampler composite; their .out overloads are
// composites over these). Argument checks and messages are the CPU's
// (ATen/native/GridSamplerUtils.h plus the CPU kernels' dtype checks); the kernel is
// src/kernels/grid_sample.h. Outputs are contiguous, like the CPU's.
#include <ATen/ATen.h>
#include <ATen/native/GridSamplerUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/grid_sample.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;
using kernels::GridSampleMode;
using kernels::GridSamplePadding;

// The CPU kernels' dtypes (float16 / bfloat16 / float32 / float64) and their "expected scalar
// type" check of the grid (and grad_output) against the input.
void check_dtypes(const at::Tensor& input, const at::Tensor& other, const char* name) {
  const at::ScalarType s = input.scalar_type();
  if (s != at::kFloat && s != at::kDouble && s != at::kHalf && s != at::kBFloat16)
    raise_not_implemented_for(name, s);
  TORCH_CHECK(other.scalar_type() == s, "expected scalar type ", s, " but found ", other.scalar_type());
  vk_dtype(s, name);
}

void check_args(const at::Tensor& input, const at::Tensor& grid, int64_t mode, int dims) {
  at::native::check_grid_sampler_common(input, grid);
  if (dims == 2) at::native::check_grid_sampler_2d(input, grid);
  else at::native::check_grid_sampler_3d(input, grid, mode);
  TORCH_CHECK(mode >= 0 && mode <= 2, "grid_sampler(): invalid interpolation mode ", mode);
}

kernels::GridSample make_problem(const at::Tensor& input, const at::Tensor& grid, int64_t mode,
                                 int64_t padding, bool align_corners, int dims) {
  TORCH_CHECK(padding >= 0 && padding <= 2, "grid_sampler(): invalid padding mode ", padding);
  kernels::GridSample p;
  p.dims = dims;
  p.mode = static_cast<GridSampleMode>(mode);
  p.padding = static_cast<GridSamplePadding>(padding);
  p.align_corners = align_corners;
  p.kind = input.scalar_type() == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
  p.batch = input.size(0);
  p.channels = input.size(1);
  for (int k = 0; k < dims; ++k) {
    p.in_size[3 - dims + k] = input.size(2 + k);
    p.out_size[3 - dims + k] = grid.size(1 + k);
  }
  p.in_strides = {input.stride(0), input.stride(1), 0, 0, 0};
  for (int k = 0; k < dims; ++k) p.in_strides[5 - dims + k] = input.stride(2 + k);
  return p;
}

// Input strides must be non-negative for the kernel (views with negative strides do not
// exist in PyTorch, but expanded inputs have stride 0, which is fine).
at::Tensor grid_sampler_forward(const at::Tensor& input, const at::Tensor& grid, int64_t mode,
                                int64_t padding, bool align_corners, int dims, const char* name) {
  check_args(input, grid, mode, dims);
  check_dtypes(input, grid, name);
  std::vector<int64_t> out_sizes = {input.size(0), input.size(1)};
  for (int k = 0; k < dims; ++k) out_sizes.push_back(grid.size(1 + k));
  at::Tensor output = at::empty(out_sizes, input.options());
  if (output.numel() == 0) return output;
  const at::Tensor grid_c = grid.contiguous();
  kernels::GridSample p = make_problem(input, grid_c, mode, padding, align_corners, dims);
  p.input = operand(input, name);
  p.grid = operand(grid_c, name);
  p.output = operand(output, name);
  const c10::DeviceGuard guard(input.device());
  tvk::Stream& stream = current_stream(input.device().index());
  translate_errors([&] { kernels::grid_sample(stream, p); });
  return output;
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& grid, int64_t mode,
    int64_t padding, bool align_corners, std::array<bool, 2> output_mask, int dims,
    const char* name) {
  check_args(input, grid, mode, dims);
  check_dtypes(input, grid, name);
  check_dtypes(input, grad_output, name);
  std::vector<int64_t> out_sizes = {input.size(0), input.size(1)};
  for (int k = 0; k < dims; ++k) out_sizes.push_back(grid.size(1 + k));
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(out_sizes), name,
              ": expected grad_output of sizes ", at::IntArrayRef(out_sizes), " but got ",
              grad_output.sizes());
  const bool want_input = output_mask[0];
  const bool want_grid = output_mask[1];
  const at::ScalarType acc_type = input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor grad_acc;
  if (want_input) grad_acc = at::zeros(input.sizes(), input.options().dtype(acc_type));
  at::Tensor grad_grid = at::empty(grid.sizes(), grid.options());
  if (grad_output.numel() != 0 && (want_input || want_grid)) {
    const at::Tensor grid_c = grid.contiguous();
    const at::Tensor go_c = grad_output.contiguous();
    kernels::GridSample p = make_problem(input, grid_c, mode, padding, align_corners, dims);
    p.backward = true;
    p.input = operand(input, name);
    p.grid = operand(grid_c, name);
    p.grad_output = operand(go_c, name);
    if (want_input) p.grad_input = operand(grad_acc, name);
    if (want_grid) p.grad_grid = operand(grad_grid, name);
    const c10::DeviceGuard guard(input.device());
    tvk::Stream& stream = current_stream(input.device().index());
    translate_errors([&] { kernels::grid_sample(stream, p); });
  } else if (want_grid) {
    grad_grid.zero_();  // no channels: d out / d grid is an empty sum
  }
  at::Tensor grad_input;
  if (want_input) grad_input = grad_acc.scalar_type() == input.scalar_type() ? grad_acc : grad_acc.to(input.scalar_type());
  return {grad_input, grad_grid};
}

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t mode,
                           int64_t padding, bool align_corners) {
  return grid_sampler_forward(input, grid, mode, padding, align_corners, 2, "grid_sampler_2d_cpu_kernel_impl");
}

at::Tensor grid_sampler_3d(const at::Tensor& input, const at::Tensor& grid, int64_t mode,
                           int64_t padding, bool align_corners) {
  return grid_sampler_forward(input, grid, mode, padding, align_corners, 3, "grid_sampler_3d_cpu");
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& grid, int64_t mode,
    int64_t padding, bool align_corners, std::array<bool, 2> output_mask) {
  return grid_sampler_backward(grad_output, input, grid, mode, padding, align_corners, output_mask, 2,
                               "grid_sampler_2d_backward_cpu_kernel_impl");
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_3d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& grid, int64_t mode,
    int64_t padding, bool align_corners, std::array<bool, 2> output_mask) {
  return grid_sampler_backward(grad_output, input, grid, mode, padding, align_corners, output_mask, 3,
                               "grid_sampler_3d_backward_cpu");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler_2d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_2d_backward));
  m.impl("grid_sampler_3d", TORCH_FN(grid_sampler_3d));
  m.impl("grid_sampler_3d_backward", TORCH_FN(grid_sampler_3d_backward));
}

}  // namespace tvk::aten
