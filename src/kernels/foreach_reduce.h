// Multi-tensor reductions (shaders/foreach_reduce.comp): one 0-dim result per input tensor of
// a list, in two dispatches per batch of tensors whatever their number and sizes (the
// _foreach_norm / _foreach_max / _foreach_powsum ops).
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// One tensor of a list: a dense input read as a flat run of `numel` elements (any numel >= 0,
// < 2^31), and the address of its 0-dim output.
struct ForeachReduceEntry {
  uint64_t input = 0;
  uint64_t output = 0;
  int64_t numel = 0;
};

// For each entry: output = post(op over the input's elements of pre(x)), with `acc` the
// accumulator kind (Float32 for float16 / bfloat16 / float32 inputs, Float64 for float64).
// `op`: Sum, Max or Min (NaN-propagating); `pre`: None, Abs, Square, AbsPow, NonZero; `post`:
// None, Sqrt, Root (p applies to AbsPow / Root). Every input has dtype `in_dtype`, every output
// `out_dtype`. An empty input gives post(identity of op) (0 for sums; callers reject max / min
// of an empty tensor). Deterministic: partial results per chunk, combined in a fixed order, no
// atomics. Throws std::invalid_argument for bad arguments.
void foreach_reduce(Stream& stream, ReduceOp op, ComputeKind acc, const ForeachReduceEntry* entries,
                    int num_entries, DType in_dtype, DType out_dtype, ReducePre pre,
                    ReducePost post, double p = 2.0);

}  // namespace tvk::kernels
