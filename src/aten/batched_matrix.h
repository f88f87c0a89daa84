// L3: batch-dimension helpers shared by the batched matrix ops (ops_orthogonal.cpp,
// ops_eig.cpp), whose kernels take one batch stride per operand.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>

namespace tvk::aten {

// The single stride that steps through all batch dims (all dims but the last `core`) of `t`
// in row-major order, or nullopt when they do not collapse to one.
inline std::optional<int64_t> batch_stride(const at::Tensor& t, int64_t core) {
  int64_t stride = 0, expected = 0;
  bool have = false;
  for (int64_t d = t.dim() - core - 1; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (!have) {
      stride = t.stride(d);
      expected = stride * t.size(d);
      have = true;
    } else {
      if (t.stride(d) != expected) return std::nullopt;
      expected *= t.size(d);
    }
  }
  return stride;
}

// The number of matrices: the product of all dims but the last `core`.
inline int64_t batch_count(const at::Tensor& t, int64_t core) {
  int64_t n = 1;
  for (int64_t d = 0; d < t.dim() - core; ++d) n *= t.size(d);
  return n;
}

}  // namespace tvk::aten
