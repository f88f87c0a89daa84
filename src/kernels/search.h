// L2: searching sorted sequences and counting (shaders/search.comp). No torch headers.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// searchsorted / bucketize: out[q] = position of in[q] in its sorted row of `boundaries`
// (the CPU's lower bound, or upper bound when `right`; NaN compares as on the CPU).
// `in` is contiguous with `numel` elements whose rows have `inner` elements (the input's
// last dim; 1 for a 0-dim input); `boundaries` is contiguous [rows, n]: one_dim (1-D
// boundaries shared by every element) or one row per `inner` input elements. With a
// `sorter` (Int64, laid out like boundaries, entries in [0, n): checked by the caller) the
// row's k-th smallest element is row[sorter_row[k]]. `in` and `boundaries` have the same
// dtype; `out` is Int32 or Int64, contiguous like `in`.
struct SearchSorted {
  int64_t numel = 0, inner = 1, n = 0;
  bool one_dim = true;
  bool right = false;
  Operand in, boundaries, out;
  Operand sorter;  // address 0: none
};
void search_sorted(Stream& stream, const SearchSorted& problem);

// isin: out[q] (Bool) = (in[q] equals an element of `sorted_test`) != invert, for the
// contiguous `in` of `numel` elements and the ascending, NaN-last `sorted_test` of `n`
// elements (the sort kernel's order) of the same dtype. NaN equals nothing.
struct IsIn {
  int64_t numel = 0, n = 0;
  bool invert = false;
  Operand in, sorted_test, out;
};
void isin_sorted(Stream& stream, const IsIn& problem);

// histc: counts[b] += number of elements of the contiguous `in` in bin b of `bins`
// equal-width bins over [left, right] (left < right, both finite and representable in the
// input dtype). counts: `bins` uint32 (an Int32 operand), zeroed by the caller. Bin selection
// follows the CPU's linear interpolation in the input dtype's arithmetic; the right edge
// belongs to the last bin; NaN and values outside [left, right] are not counted.
// Integer inputs (any integer dtype) bin like CUDA's histc, in int64 arithmetic:
// b = (x - left_int) * bins / (right_int - left_int), truncated; left / right are then unused.
struct Histc {
  int64_t numel = 0, bins = 1;
  double left = 0, right = 1;
  int64_t left_int = 0, right_int = 1;
  Operand in, counts;
};
void histc(Stream& stream, const Histc& problem);

// Each throws std::invalid_argument for bad arguments (dtypes, sizes, null or misaligned
// addresses, float64 without shaderFloat64, more than 2^31 - 1 elements); an empty problem
// records nothing.

}  // namespace tvk::kernels
