// L2: the pooling family (shaders/pool.comp). No torch headers.
//
// Max / average / adaptive pooling over up to three spatial dims of a tensor viewed as
// [batch, channels, D, H, W] (1-D and 2-D pooling use D = 1 / H = 1 with kernel 1, stride 1,
// pad 0, dilation 1), forward and backward. Every operand of one call has the same layout:
// contiguous [batch, channels, D, H, W] or channels-last [batch, D, H, W, channels].
#pragma once

#include <array>
#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

enum class PoolOp : int32_t {
  Max = 0,                  // out = max over the dilated window; indices = flat spatial index
  Avg = 1,                  // out = sum over the window / divisor
  AdaptiveAvg = 2,          // out = sum / kd / kh / kw over [floor(o*I/O), ceil((o+1)*I/O))
  AdaptiveMax = 3,          // adaptive windows, max and index
  MaxBackward = 4,          // grad_in[i] = sum of grad_out[o] with indices[o] == i
  AvgBackward = 5,          // grad_in[i] = sum of grad_out[o] / divisor(o) over windows with i
  AdaptiveAvgBackward = 6,  // grad_in[i] = sum of grad_out[o] / kd / kh / kw
  AdaptiveMaxBackward = 7,  // as MaxBackward over adaptive windows
  // out[plane, indices[i]] = in[i] (in: the pooled values, in_size its dims; out: pre-zeroed,
  // out_size its dims). An index outside [0, out plane size) is skipped and reported on the
  // device (MaxUnpool2dInvalidIndex, or MaxUnpool3dInvalidIndex when `unpool_3d`); duplicate
  // indices store in an unspecified order.
  MaxUnpool = 8,
  // out = max over the kernel-sized window at PyTorch's fractional interval starts, indices =
  // its flat spatial index. Contiguous only.
  FractionalMax = 9,
};

struct Pool {
  PoolOp op = PoolOp::Max;
  // Float32 (float16 / bfloat16 / float32 operands), Float64 (devices with shaderFloat64;
  // needed when an operand is float64), Int64 (Max, Avg and AvgBackward: integer operands).
  ComputeKind kind = ComputeKind::Float32;
  bool channels_last = false;
  int64_t batch = 1, channels = 1;
  std::array<int64_t, 3> in_size{1, 1, 1};   // (D, H, W) of x / grad_input
  std::array<int64_t, 3> out_size{1, 1, 1};  // (D, H, W) of y / grad_output
  // Window geometry (Max, Avg and their backward; ignored by the adaptive ops).
  std::array<int64_t, 3> kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
  bool count_include_pad = true;  // Avg
  int64_t divisor_override = 0;   // Avg: != 0 replaces the window size (PyTorch allows < 0)
  Operand out;      // y (forward) or grad_input (backward)
  Operand in;       // x (forward) or grad_output (backward)
  Operand indices;  // Int64, laid out like the pooled output: written by Max / AdaptiveMax
                    // (address 0: not written) and FractionalMax, read by the max backward
                    // ops and MaxUnpool
  bool unpool_3d = false;  // MaxUnpool: which error (and message) an invalid index reports
  // FractionalMax: _random_samples, contiguous [>= batch, channels, sample_dims] of the input's
  // dtype; sample_dims 2 holds (W, H) per plane, 3 holds (D, H, W). `alpha` per (D, H, W) dim
  // is (I - K) / (O - 1) already rounded to the input dtype (any value when O == 1).
  Operand samples;
  int sample_dims = 0;
  std::array<double, 3> alpha{0, 0, 0};
};

// Records the op on `stream`. MaxUnpool and FractionalMax take kinds Float32 and Float64 only. The caller has validated the geometry the way PyTorch does
// (positive kernel / stride / dilation, pad <= kernel / 2, outputs >= 1 per dim); an empty
// batch or channel count records nothing. Throws std::invalid_argument for a kind the op is not
// built for, Float64 without shaderFloat64 ("float64 is not supported on this device (no
// shaderFloat64)"), float64 operands with another kind, non-positive window parameters,
// negative sizes or padding, null or misaligned addresses, or tensors of 2^31 elements or more.
void pool(Stream& stream, const Pool& problem);

}  // namespace tvk::kernels
