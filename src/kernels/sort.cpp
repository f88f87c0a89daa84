// Launcher of the sort family (shaders/sort.comp).
//
// Rows of at most one tile (4 * workgroup pairs) are sorted by one dispatch: a bitonic network
// in shared memory per row (several short rows share a workgroup), writing the requested
// output window directly. Longer rows are sorted tile by tile into scratch, then merged in
// log2(n / tile) global passes (each pair finds its place in the merged run by a binary
// search in the partner run); the last pass writes the outputs. Pairs carry their position in
// the row, so every pass is stable.
#include "kernels/sort.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/sort.comp.
struct SortPush {
  uint64_t in_addr;
  uint64_t values_addr;
  uint64_t indices_addr;
  uint64_t keys_a;
  uint64_t idx_a;
  uint64_t keys_b;
  uint64_t idx_b;
  int32_t rows;
  int32_t n;
  int32_t inner;
  int32_t seg;
  int32_t first;
  int32_t out_len;
  int32_t descending;
  int32_t final_pass;
};
static_assert(sizeof(SortPush) == 88);

constexpr const char* kWhere = "tvk::kernels::sort";

bool wide_key(DType dtype) { return dtype == DType::Int64 || dtype == DType::Float64; }

uint32_t workgroup_size() {
  uint32_t wg = std::clamp<uint32_t>(sort_tuning().workgroup, 2, 1024);
  uint32_t p = 1;
  while (p * 2 <= wg) p *= 2;
  return p;
}

uint64_t align8(uint64_t v) { return (v + 7) / 8 * 8; }

void check_operand(const Operand& op, const char* what) {
  check_dtype(kWhere, op.dtype, what);
  if (op.address == 0) invalid(kWhere, std::string(what) + ": address is 0");
  if (op.address % dtype_size(op.dtype) != 0)
    invalid(kWhere, std::string(what) + ": address is not aligned to its element size");
}

int64_t checked_numel(int64_t outer, int64_t n, int64_t inner) {
  if (outer < 0 || n < 0 || inner < 0) invalid(kWhere, "negative size");
  int64_t numel = 0;
  if (__builtin_mul_overflow(outer, n, &numel) || __builtin_mul_overflow(numel, inner, &numel) ||
      numel > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");
  return numel;
}

VkPipeline pipeline_for(Stream& stream, const char* op, DType dtype, uint32_t wg) {
  const std::string name =
      std::string("sort.") + op + (wide_key(dtype) ? ".key64" : ".key32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  return stream.device().pipelines().get(*shader, wg, {static_cast<uint32_t>(dtype)});
}

}  // namespace

SortTuning& sort_tuning() {
  static SortTuning t;
  return t;
}

uint64_t sort_scratch_bytes(const Sort& p) {
  const int64_t tile = 4 * static_cast<int64_t>(workgroup_size());
  if (p.n <= tile) return 0;
  const uint64_t pairs = static_cast<uint64_t>(p.outer * p.n * p.inner);
  const uint64_t key = wide_key(p.in.dtype) ? 8 : 4;
  return 2 * (align8(pairs * key) + align8(pairs * 4));
}

void sort(Stream& stream, const Sort& p) {
  const int64_t numel = checked_numel(p.outer, p.n, p.inner);
  if (p.first < 0 || p.out_len < 0 || p.first + p.out_len > p.n)
    invalid(kWhere, "output window outside the row");
  if (numel == 0 || p.out_len == 0) return;
  check_operand(p.in, "input");
  check_operand(p.values, "values");
  check_operand(p.indices, "indices");
  if (p.values.dtype != p.in.dtype) invalid(kWhere, "values must have the input's dtype");
  if (p.indices.dtype != DType::Int64) invalid(kWhere, "indices must be int64");

  const uint32_t wg = workgroup_size();
  const int64_t tile = 4 * static_cast<int64_t>(wg);
  const int64_t rows = p.outer * p.inner;
  SortPush push{};
  push.in_addr = p.in.address;
  push.values_addr = p.values.address;
  push.indices_addr = p.indices.address;
  push.rows = static_cast<int32_t>(rows);
  push.n = static_cast<int32_t>(p.n);
  push.inner = static_cast<int32_t>(p.inner);
  push.first = static_cast<int32_t>(p.first);
  push.out_len = static_cast<int32_t>(p.out_len);
  push.descending = p.descending ? 1 : 0;

  // Every pass: the input read, the output window (values and indices, contiguous [outer,
  // out_len, inner]) written, the scratch read and written (each merge pass reads the
  // previous pass's half and writes the other: consecutive passes are ordered).
  AccessSet accesses;
  add_dense(accesses, p.in.address, p.in.dtype, numel, false);
  add_dense(accesses, p.values.address, p.values.dtype, p.outer * p.out_len * p.inner, true);
  add_dense(accesses, p.indices.address, DType::Int64, p.outer * p.out_len * p.inner, true);
  const VkPipeline tile_pipeline = pipeline_for(stream, "tile", p.in.dtype, wg);
  if (p.n <= tile) {
    int64_t seg = 1;
    while (seg < p.n) seg *= 2;
    push.seg = static_cast<int32_t>(seg);
    push.final_pass = 1;
    const int64_t tiles = (rows + tile / seg - 1) / (tile / seg);
    stream.dispatch(tile_pipeline, group_count(stream, tiles, 1), 1, 1, &push, sizeof(push),
                    nullptr, 0, &accesses);
    return;
  }

  if (p.scratch == 0 || p.scratch % 8 != 0) invalid(kWhere, "missing or misaligned scratch");
  const uint64_t scratch_bytes = sort_scratch_bytes(p);
  accesses.read(p.scratch, scratch_bytes).write(p.scratch, scratch_bytes);
  const uint64_t pairs = static_cast<uint64_t>(numel);
  const uint64_t key_bytes = align8(pairs * (wide_key(p.in.dtype) ? 8 : 4));
  const uint64_t idx_bytes = align8(pairs * 4);
  uint64_t keys[2] = {p.scratch, p.scratch + key_bytes + idx_bytes};
  uint64_t idxs[2] = {p.scratch + key_bytes, keys[1] + key_bytes};

  push.seg = static_cast<int32_t>(tile);
  push.final_pass = 0;
  push.keys_b = keys[0];
  push.idx_b = idxs[0];
  const int64_t segments = rows * ((p.n + tile - 1) / tile);
  stream.dispatch(tile_pipeline, group_count(stream, segments, 1), 1, 1, &push, sizeof(push),
                  nullptr, 0, &accesses);

  const VkPipeline merge_pipeline = pipeline_for(stream, "merge", p.in.dtype, wg);
  int current = 0;
  for (int64_t width = tile; width < p.n; width *= 2) {
    push.seg = static_cast<int32_t>(width);
    push.final_pass = width * 2 >= p.n ? 1 : 0;
    push.keys_a = keys[current];
    push.idx_a = idxs[current];
    push.keys_b = keys[1 - current];
    push.idx_b = idxs[1 - current];
    stream.dispatch(merge_pipeline, group_count(stream, numel, wg), 1, 1, &push, sizeof(push),
                    nullptr, 0, &accesses);
    current = 1 - current;
  }
}

namespace {

// Runs a per-row select op (`median` / `mode`) over an ascending sort's full output.
void select_from_sorted(Stream& stream, const char* op, int first, int64_t outer, int64_t n,
                        int64_t inner, Operand sorted_values, Operand sorted_indices,
                        Operand values, Operand indices) {
  const int64_t numel = checked_numel(outer, n, inner);
  if (outer * inner == 0) return;
  if (numel == 0) invalid(kWhere, std::string(op) + " of an empty row");
  check_operand(sorted_values, "sorted values");
  check_operand(sorted_indices, "sorted indices");
  check_operand(values, "values");
  check_operand(indices, "indices");
  if (values.dtype != sorted_values.dtype) invalid(kWhere, "values must have the input's dtype");
  if (indices.dtype != DType::Int64 || sorted_indices.dtype != DType::Int64)
    invalid(kWhere, "indices must be int64");
  SortPush push{};
  push.in_addr = sorted_values.address;
  push.keys_a = sorted_indices.address;
  push.values_addr = values.address;
  push.indices_addr = indices.address;
  push.rows = static_cast<int32_t>(outer * inner);
  push.n = static_cast<int32_t>(n);
  push.inner = static_cast<int32_t>(inner);
  push.first = first;
  const uint32_t wg = 64;
  const VkPipeline pipeline = pipeline_for(stream, op, sorted_values.dtype, wg);
  const int64_t rows = outer * inner;
  const uint32_t groups = group_count(stream, rows, wg);
  // mode walks its row serially: under a device loop limit (loop_budget), ranges of the row
  // per dispatch with the run state in a scratch buffer (see the shader). median is a binary
  // search.
  const int64_t step = int64_t{groups} * wg;
  const int64_t rows_per_invocation = (rows + step - 1) / step;
  const int64_t chunk = std::strcmp(op, "mode") == 0
                            ? loop_chunk(stream, n, rows_per_invocation, rows_per_invocation)
                            : n;
  if (chunk >= n) {
    stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
    return;
  }
  if (rows_per_invocation > 1)
    invalid(kWhere, "mode: too many rows for the device's loop-iteration limit");
  Allocator& allocator = stream.device().allocator();
  const uint64_t state = allocator.allocate(static_cast<uint64_t>(rows) * 12, stream.id());
  push.keys_b = state;
  try {
    for (int64_t j0 = 0; j0 < n; j0 += chunk) {
      push.seg = static_cast<int32_t>(j0);
      push.out_len = static_cast<int32_t>(std::min(n, j0 + chunk));
      stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
    }
  } catch (...) {
    allocator.free(state);
    throw;
  }
  allocator.free(state);  // stream order: later reuse is ordered after these dispatches
}

}  // namespace

void sorted_median(Stream& stream, int64_t outer, int64_t n, int64_t inner, bool ignore_nan,
                   Operand sorted_values, Operand sorted_indices, Operand values,
                   Operand indices) {
  select_from_sorted(stream, "median", ignore_nan ? 1 : 0, outer, n, inner, sorted_values,
                     sorted_indices, values, indices);
}

void sorted_mode(Stream& stream, int64_t outer, int64_t n, int64_t inner, Operand sorted_values,
                 Operand sorted_indices, Operand values, Operand indices) {
  select_from_sorted(stream, "mode", 0, outer, n, inner, sorted_values, sorted_indices, values,
                     indices);
}

}  // namespace tvk::kernels
