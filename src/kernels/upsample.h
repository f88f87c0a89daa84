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

namespace tvk::kernels {

// One pass of separable resampling along one dim, with taps computed on the host the way
// PyTorch's CPU computes them (aten/src/ATen/native/cpu/UpSampleKernel.cpp,
// HelperInterpBase::_compute_index_ranges_weights): the anti-aliased bilinear / bicubic
// modes (PIL's filters: triangle, Keys cubic with a = -0.5; support widened by the scale when
// downsampling; weights normalized per output) and, for uint8 data, the non-anti-aliased
// bilinear / bicubic (a = -0.75) taps quantized to int16 (the CPU's uint8 path). The data is
// contiguous [outer, len, inner]; a 2-d resize is a pass along W (inner = 1 or channels)
// then one along H.
enum class ResampleFilter : int32_t { Linear = 0, Cubic = 1 };

struct Resample {
  ResampleFilter filter = ResampleFilter::Linear;
  bool antialias = true;       // false: only for UInt8 (the CPU's uint8 bilinear / bicubic)
  bool align_corners = false;
  bool transpose = false;      // backward: src = grad_output (out_len), dst = grad_input (in_len)
  // Float32 (float32 data: weights computed in float, like the CPU), Float64 (float64 data,
  // double weights) or Int32 (uint8 data: double weights quantized to int16).
  ComputeKind kind = ComputeKind::Float32;
  int64_t outer = 1, inner = 1;
  int64_t in_len = 1, out_len = 1;  // sizes of the resize's input and output along the dim
  std::optional<double> scale;      // the user's scale factor for the dim (as PyTorch's scales_*)
  Operand dst;
  Operand src;
};

// Records the pass on `stream` (its tap table goes through Stream::upload_params). Nothing
// is recorded for empty tensors. Throws std::invalid_argument for sizes < 1, operands of the
// wrong dtype for the kind (Int32: uint8 only; Float32: float32; Float64: float64), Float64
// without shaderFloat64, a transposed or non-anti-aliased float pass that the CPU does not
// have (uint8 has no backward; float non-anti-aliased modes use `upsample`), null or
// misaligned addresses, or 2^31 elements or more.
void resample(Stream& stream, const Resample& problem);

}  // namespace tvk::kernels
