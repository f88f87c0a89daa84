// L2: sorting along one dim (shaders/sort.comp). No torch headers.
//
// The tensor is viewed as contiguous [outer, n, inner] (row-major: element (o, j, i) at
// (o * n + j) * inner + i); every (o, i) is a row of n elements sorted independently.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

struct Sort {
  int64_t outer = 1, n = 1, inner = 1;
  bool descending = false;
  // Output window: sorted positions [first, first + out_len) of every row are written to
  // `values` / `indices`, laid out as contiguous [outer, out_len, inner]. sort: (0, n),
  // topk: (0, k), kthvalue: (k - 1, 1).
  int64_t first = 0, out_len = 1;
  Operand in;       // any dtype
  Operand values;   // the input's dtype (the element bits are copied)
  Operand indices;  // Int64: positions in the row
  // Scratch for rows longer than one tile (sort_scratch_bytes; address 0 when it is 0 bytes),
  // aligned to 8 bytes. Not read before it is written.
  uint64_t scratch = 0;
};

// The order is PyTorch's: NaN above every number (first when descending), -0.0 == 0.0, and
// ties in input order (stable) in both directions.
// Records the sort on `stream`; an empty problem records nothing. Throws
// std::invalid_argument for bad arguments (sizes, window outside [0, n], dtypes, null or
// misaligned addresses, missing scratch, more than 2^31 - 1 elements).
void sort(Stream& stream, const Sort& problem);

// Bytes of scratch `sort` needs for the problem's sizes and input dtype (0 when every row
// fits one tile).
uint64_t sort_scratch_bytes(const Sort& problem);

// Median per row of an ascending sort's full output (`sorted_values` / `sorted_indices` as
// [outer, n, inner] of a Sort with first = 0, out_len = n): writes values[q] / indices[q] for
// q = o * inner + i. ignore_nan = false (median): the lower median, or the row's first NaN;
// true (nanmedian): the lower median of the non-NaN values (NaN, index 0 for all-NaN rows).
void sorted_median(Stream& stream, int64_t outer, int64_t n, int64_t inner, bool ignore_nan,
                   Operand sorted_values, Operand sorted_indices, Operand values,
                   Operand indices);

// Mode per row of an ascending stable sort's full output (as for sorted_median): the most
// frequent value (the smallest one among equally frequent values; -0.0 equals 0.0, every NaN
// is a value of its own, as on the CPU) and the input position of its last occurrence.
void sorted_mode(Stream& stream, int64_t outer, int64_t n, int64_t inner, Operand sorted_values,
                 Operand sorted_indices, Operand values, Operand indices);

// Knobs for tests (defaults are the production choices). Not synchronized.
struct SortTuning {
  uint32_t workgroup = 256;  // power of two; the tile holds 4 * workgroup pairs
};
SortTuning& sort_tuning();

}  // namespace tvk::kernels
