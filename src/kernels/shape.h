// L2: data movement and creation kernels (shaders/shape.comp). No torch headers.
// Every launcher records at most one dispatch on `stream` and throws std::invalid_argument
// for bad arguments (negative sizes, null or misaligned addresses, dtypes, more than
// 2^31 - 1 elements, float64 on a device without shaderFloat64).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// arange / range / linspace / logspace into a contiguous output of `numel` elements.
struct Range {
  enum class Mode : int32_t {
    Arange = 0,    // start + step * i
    Linspace = 1,  // i < numel / 2 ? start + step * i : end - step * (numel - 1 - i)
    Logspace = 2,  // pow(base, linspace value)
  };
  Mode mode = Mode::Arange;
  // Math type: Float32, Float64 (shaderFloat64) or Int64 (Arange only; uses the integer
  // start / step). Int32 is not accepted.
  ComputeKind kind = ComputeKind::Float32;
  int64_t numel = 0;
  double start = 0, step = 1, end = 0, base = 10;
  int64_t int_start = 0, int_step = 1;
  Operand out;  // any dtype (the value is converted C-style)
};
void range(Stream& stream, const Range& problem);

// tril (upper = false) / triu of contiguous [batch, rows, cols] arrays of one dtype;
// `out` may equal `in`.
void triangle(Stream& stream, bool upper, int64_t batch, int64_t rows, int64_t cols,
              int64_t diagonal, Operand out, Operand in);

// Reflection (reflect = true) or replication padding of contiguous [batch, d, h, w] into
// [batch, od, oh, ow] (same dtype; 1-D / 2-D padding: d = od = 1, h = oh = 1); the leading
// pads are pad_front / pad_top / pad_left, the trailing ones follow from the sizes. Pads may
// be negative (the input is cropped). Reflection needs each positive pad < the input size of
// its dimension (the caller checks, with PyTorch's messages).
struct Pad {
  bool reflect = true;
  int64_t batch = 1, d = 1, h = 1, w = 1, od = 1, oh = 1, ow = 1;
  int64_t pad_front = 0, pad_top = 0, pad_left = 0;
};
void pad(Stream& stream, const Pad& geometry, Operand out, Operand in);
// grad_in [batch, d, h, w] = the sum of grad_out [batch, od, oh, ow] over the outputs that read
// each input element (0 for cropped ones). `kind`: Float32 (float16 / bfloat16 / float32 operands) or Float64.
void pad_backward(Stream& stream, const Pad& geometry, ComputeKind kind, Operand grad_in,
                  Operand grad_out);

// repeat_interleave's index expansion: out[p] = r for cumsum[r - 1] <= p < cumsum[r], for
// p < total; `cumsum` is the int64 inclusive cumsum of `count` non-negative repeats; out is
// Int32 or Int64.
void repeat_index(Stream& stream, int64_t count, int64_t total, Operand cumsum, Operand out);

}  // namespace tvk::kernels
