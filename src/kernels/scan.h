// L2: inclusive scans (shaders/scan.comp). No torch headers.
//
// cumsum / cumprod / logcumsumexp / cummax / cummin along one dim of a contiguous tensor viewed as [outer, dim, inner]
// (row-major: element (o, r, i) at (o * dim + r) * inner + i, for input and output alike).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// LogAddExp: logcumsumexp (float accumulators only). Max / Min: cummax / cummin, which also
// write the int64 position of the running extremum to `indices` (ties take the last
// position; NaN wins and a later NaN takes over, as on the CPU).
enum class ScanOp : int32_t { Sum = 0, Prod = 1, LogAddExp = 2, Max = 3, Min = 4 };

struct Scan {
  ScanOp op = ScanOp::Sum;
  // Accumulator: Float32 (float16 / bfloat16 / float32), Float64 (shaderFloat64 only; needed
  // when an operand is float64) or Int64 (integers; Int32 maps here). Loads convert from the
  // input dtype (Int64 truncates floats, like casting the input to an integer dtype first),
  // the store converts to the output dtype.
  ComputeKind acc = ComputeKind::Float32;
  int64_t outer = 1, dim = 1, inner = 1;
  Operand out;
  Operand in;  // may be the same memory as `out` (in-place)
  Operand indices;  // Max / Min only: Int64, laid out like `out`
};

// Records the scan on `stream`; an empty tensor records nothing. Throws std::invalid_argument
// for bad arguments (kind, float64 without shaderFloat64, negative sizes, null / misaligned
// addresses, more than 2^31 - 1 elements).
void scan(Stream& stream, const Scan& problem);

// Knobs for tests (defaults are the production choices). Not synchronized.
struct ScanTuning {
  enum class Strategy { Auto, Workgroup, Thread };
  Strategy strategy = Strategy::Auto;
  uint32_t workgroup = 256;  // power of two (workgroup mode: tile size)
  bool subgroups = true;
};
ScanTuning& scan_tuning();

}  // namespace tvk::kernels
