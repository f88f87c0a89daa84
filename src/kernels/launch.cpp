// L2 private launcher helpers (see launch.h).
#include "kernels/launch.h"

#include <algorithm>
#include <cstdlib>

namespace tvk::kernels {

Tuning& tuning() {
  static Tuning t = [] {
    Tuning d;
    // TORCH_VK_DISABLE_DTYPE_SPECIALIZATION=1: one pipeline per shader variant (dtypes read at
    // run time) instead of one per dtype combination; fewer pipeline compilations.
    const char* v = std::getenv("TORCH_VK_DISABLE_DTYPE_SPECIALIZATION");
    if (v && *v && std::string(v) != "0") d.specialize_dtypes = false;
    return d;
  }();
  return t;
}

void invalid(const char* where, const std::string& message) {
  throw std::invalid_argument(std::string(where) + ": " + message);
}

Dims coalesce(const char* where, const Geometry& g, int nstrides, int64_t numel) {
  if (g.ndim < 0 || g.ndim > kMaxDims)
    invalid(where, "ndim " + std::to_string(g.ndim) + " is outside 0.." + std::to_string(kMaxDims));
  if (numel < 0) invalid(where, "negative numel " + std::to_string(numel));
  int64_t product = 1;
  bool overflow = false;
  for (int d = 0; d < g.ndim; ++d) {
    if (g.sizes[d] < 0) invalid(where, "negative size in dim " + std::to_string(d));
    overflow |= __builtin_mul_overflow(product, g.sizes[d], &product);
  }
  for (int d = 0; d < g.ndim; ++d)
    if (g.sizes[d] == 0) product = 0, overflow = false;
  if (overflow) invalid(where, "the geometry has more than 2^63 elements");
  if (product != numel)
    invalid(where, "the geometry has " + std::to_string(product) + " elements but numel is " +
                       std::to_string(numel));
  Dims out;
  for (int d = 0; d < g.ndim; ++d) {
    if (g.sizes[d] == 1) continue;
    if (out.ndim > 0) {
      // Merge into the previous (faster) dim when contiguous for every stride array.
      int p = out.ndim - 1;
      bool mergeable = true;
      for (int k = 0; k < nstrides; ++k)
        if (g.strides[k][d] != out.strides[k][p] * out.sizes[p]) mergeable = false;
      if (mergeable) {
        out.sizes[p] *= g.sizes[d];
        continue;
      }
    }
    out.sizes[out.ndim] = g.sizes[d];
    for (int k = 0; k < nstrides; ++k) out.strides[k][out.ndim] = g.strides[k][d];
    ++out.ndim;
  }
  return out;
}

int64_t max_offset(const Dims& d, int k) {
  constexpr int64_t kSaturated = INT64_MAX / 4;
  int64_t total = 0;
  for (int i = 0; i < d.ndim; ++i)
    if (d.sizes[i] == 0) return 0;  // empty: no element is reachable
  for (int i = 0; i < d.ndim; ++i) {
    int64_t s = d.strides[k][i];
    if (s == INT64_MIN) return kSaturated;
    s = s < 0 ? -s : s;
    if (s > kMaxIndex || d.sizes[i] > kMaxIndex) {
      if (s != 0) return kSaturated;
      continue;
    }
    total += (d.sizes[i] - 1) * s;  // < 2^62
    if (total > kMaxIndex) return kSaturated;
  }
  return total;
}

void check_offsets(const char* where, const Dims& d, int k, const char* what) {
  if (max_offset(d, k) > kMaxIndex)
    invalid(where, std::string(what) +
                       ": element offsets exceed the 32-bit index range of the kernel (split the "
                       "tensor or make it contiguous)");
}

void check_dtype(const char* where, DType dtype, const char* what) {
  int code = static_cast<int>(dtype);
  if (code < 0 || code > static_cast<int>(DType::Float64))
    invalid(where, std::string(what) + ": invalid dtype code " + std::to_string(code));
}

void check_operand(const char* where, const Operand& op, const std::string& what, bool f64) {
  check_dtype(where, op.dtype, what.c_str());
  if (op.address == 0) invalid(where, what + ": address is 0");
  if (op.address % dtype_size(op.dtype) != 0)
    invalid(where, what + ": address is not aligned to its element size");
  if (op.dtype == DType::Float64 && !f64) invalid(where, what + ": float64 operands need the Float64 kind");
}

uint32_t group_count(Stream& stream, int64_t items, uint32_t per_group) {
  int64_t groups = (items + per_group - 1) / per_group;
  int64_t cap = std::min<int64_t>(tuning().max_workgroups,
                                  stream.device().caps().max_workgroup_count[0]);
  cap = std::max<int64_t>(cap, 1);
  return static_cast<uint32_t>(std::clamp<int64_t>(groups, 1, cap));
}

int64_t loop_budget(Stream& stream) {
  const uint32_t limit = stream.device().caps().max_loop_iterations;
  if (limit == 0) return INT64_MAX;
  // 1/8 of the limit stays free for fixed overhead the callers do not count (index decoding
  // loops over dims, loop exit tests).
  return std::max<int64_t>(int64_t{limit} - int64_t{limit} / 8, 1);
}

int64_t loop_chunk(Stream& stream, int64_t total, int64_t per_item, int64_t fixed) {
  const int64_t budget = loop_budget(stream);
  if (budget == INT64_MAX) return total;
  const int64_t chunk = (budget - fixed) / std::max<int64_t>(per_item, 1);
  return std::clamp<int64_t>(chunk, 1, std::max<int64_t>(total, 1));
}

void add_strided(AccessSet& set, uint64_t address, DType dtype, int ndim, const int64_t* sizes,
                 const int64_t* strides, bool write) {
  if (address == 0) return;
  int64_t low = 0, high = 0;  // element offsets of the lowest and highest element
  for (int i = 0; i < ndim; ++i) {
    if (sizes[i] == 0) return;
    const int64_t reach = (sizes[i] - 1) * strides[i];
    (reach < 0 ? low : high) += reach;
  }
  const int64_t size = dtype_size(dtype);
  const int64_t begin = static_cast<int64_t>(address) + low * size;
  if (write)
    set.write(static_cast<uint64_t>(begin), static_cast<uint64_t>((high - low + 1) * size));
  else
    set.read(static_cast<uint64_t>(begin), static_cast<uint64_t>((high - low + 1) * size));
}

void add_dims(AccessSet& set, uint64_t address, DType dtype, const Dims& d, int k, bool write) {
  add_strided(set, address, dtype, d.ndim, d.sizes, d.strides[k], write);
}

void add_dense(AccessSet& set, uint64_t address, DType dtype, int64_t elements, bool write) {
  if (elements <= 0) return;
  const uint64_t bytes = static_cast<uint64_t>(elements) * dtype_size(dtype);
  if (write) set.write(address, bytes);
  else set.read(address, bytes);
}

}  // namespace tvk::kernels
