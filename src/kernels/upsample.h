// L2: the upsampling family (shaders/upsample.comp). No torch headers.
//
// Nearest, nearest-exact, (bi/tri)linear and bicubic interpolation over up to three spatial
// dims of a tensor viewed as [batch, channels, D, H, W] (1-D / 2-D use D = 1 / H = 1 with equal
// input and output sizes there), forward and backward. Both operands of one call have the same
// layout: contiguous [batch, channels, D, H, W] or channels-last [batch, D, H, W, channels].
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class UpsampleMode : int32_t { Nearest = 0, NearestExact = 1, Linear = 2, Cubic = 3 };

struct Upsample {
  UpsampleMode mode = UpsampleMode::Nearest;
  bool backward = false;  // out = grad_input (in_size), in = grad_output (out_size)
  // Float32 (uint8 / float16 / bfloat16 / float32 operands), Float64 (devices with
  // shaderFloat64; needed when an operand is float64).
  ComputeKind kind = ComputeKind::Float32;
  bool channels_last = false;
  bool align_corners = false;  // Linear and Cubic
  int64_t batch = 1, channels = 1;
  std::array<int64_t, 3> in_size{1, 1, 1};   // (D, H, W) of x / grad_input
  std::array<int64_t, 3> out_size{1, 1, 1};  // (D, H, W) of y / grad_output
  // The user's scale factors per dim (PyTorch's scales_d / scales_h / scales_w): used when
  // present and > 0, else in / out.
  std::array<std::optional<double>, 3> scales{};
  Operand out;  // y (forward) or grad_input (backward)
  Operand in;   // x (forward) or grad_output (backward)
};

// Records the op on `stream`; an empty batch or channel count records nothing. Throws
// std::invalid_argument for Float64 without shaderFloat64 ("float64 is not supported on this
// device (no shaderFloat64)"), float64 operands with the Float32 kind, another kind, spatial
// sizes < 1, null or misaligned addresses, or tensors of 2^31 elements or more.
void upsample(Stream& stream, const Upsample& problem);

}  // namespace tvk::kernels
