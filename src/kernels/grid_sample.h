// L2: the grid sampling family (shaders/grid_sample.comp). No torch headers.
//
// F.grid_sample over 4-d ([N, C, H, W], DIMS 2) and 5-d ([N, C, D, H, W], DIMS 3) inputs,
// forward and backward, with PyTorch's interpolation (bilinear, nearest, bicubic: 2-d only)
// and padding (zeros, border, reflection) modes and align_corners.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class GridSampleMode : int32_t { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class GridSamplePadding : int32_t { Zeros = 0, Border = 1, Reflection = 2 };

struct GridSample {
  int dims = 2;  // 2 or 3 spatial dims
  GridSampleMode mode = GridSampleMode::Bilinear;
  GridSamplePadding padding = GridSamplePadding::Zeros;
  bool align_corners = false;
  bool backward = false;
  // Float32 (float16 / bfloat16 / float32 operands) or Float64 (float64 operands; devices
  // with shaderFloat64, and shaderBufferInt64Atomics for the backward).
  ComputeKind kind = ComputeKind::Float32;
  int64_t batch = 1, channels = 1;
  std::array<int64_t, 3> in_size{1, 1, 1};   // (D, H, W) of the input (D = 1 for 2 dims)
  std::array<int64_t, 3> out_size{1, 1, 1};  // (D, H, W) of the grid's points
  // Element strides of the input, (N, C, D, H, W) order (D unused for 2 dims).
  std::array<int64_t, 5> in_strides{};
  Operand input;
  Operand grid;         // contiguous [N, oD, oH, oW, dims], input's dtype
  Operand output;       // forward: contiguous [N, C, oD, oH, oW], input's dtype
  Operand grad_output;  // backward: contiguous like output
  // Backward: contiguous [N, C, D, H, W] accumulation buffer, zeroed by the caller, float32
  // for the Float32 kind and float64 for Float64; address 0 when grad_input is not wanted.
  Operand grad_input;
  Operand grad_grid;  // backward: contiguous like grid; address 0 when not wanted
};

// Records the op on `stream`; no grid points or channels record nothing. Throws
// std::invalid_argument for bad dims / modes (bicubic needs 2 dims), non-positive input
// spatial sizes, Float64 without shaderFloat64 ("float64 is not supported on this device (no
// shaderFloat64)"), a Float64 backward without shaderBufferInt64Atomics, mismatched dtypes,
// null or misaligned addresses, or tensors / offsets of 2^31 elements or more.
void grid_sample(Stream& stream, const GridSample& problem);

}  // namespace tvk::kernels
