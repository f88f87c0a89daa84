// L2 private: operand helpers shared by the launchers of batched matrix kernels, one
// workgroup per matrix (orthogonal.cpp, eig.cpp). No torch headers.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/launch.h"

namespace tvk::kernels {

// `v` as int32; throws std::invalid_argument("<where>: <what> out of the 32-bit index range").
inline int32_t narrow_index(const char* where, int64_t v, const char* what) {
  if (v < 0 || v > kMaxIndex) invalid(where, std::string(what) + " out of the 32-bit index range");
  return static_cast<int32_t>(v);
}

// Checks that every offset of a (d0, d1, d2) operand -- batch, rows, cols -- plus `extra` (1
// for the imaginary part of a complex operand's real view) fits in int32, and writes the
// strides narrowed to `out` (0 for dims of size 1). Negative strides are refused.
inline void matrix_strides(const char* where, const int64_t* s, int64_t d0, int64_t d1,
                           int64_t d2, int64_t extra, int32_t* out, const char* what) {
  const int64_t dims[3] = {d0, d1, d2};
  int64_t reach = extra;
  for (int d = 0; d < 3; ++d) {
    if (s[d] < 0) invalid(where, std::string(what) + ": negative stride");
    if (dims[d] > 1) {
      int64_t term = 0;
      if (__builtin_mul_overflow(dims[d] - 1, s[d], &term) ||
          __builtin_add_overflow(reach, term, &reach))
        invalid(where, std::string(what) + ": offsets out of the 32-bit index range");
    }
    out[d] = dims[d] > 1 ? narrow_index(where, s[d], what) : 0;
  }
  narrow_index(where, reach, what);
}

// Workgroup size for `items` parallel items of one matrix: a power of two in [32, 256].
inline uint32_t matrix_workgroup(int64_t items) {
  uint32_t wg = 32;
  while (wg < 256 && static_cast<int64_t>(wg) < items) wg *= 2;
  return wg;
}

}  // namespace tvk::kernels
