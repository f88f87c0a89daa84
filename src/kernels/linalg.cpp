// Launchers of the linalg family (shaders/linalg.comp): one workgroup per matrix of the
// batch for getrf / potrf / trsm / laswp, one invocation per matrix for the permutation.
#include "kernels/linalg.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/linalg.comp.
struct LinalgPush {
  uint64_t a_addr = 0;
  uint64_t b_addr = 0;
  uint64_t piv_addr = 0;
  uint64_t info_addr = 0;
  int32_t batch = 0;
  int32_t m = 0;
  int32_t n = 0;
  int32_t nrhs = 0;
  int32_t k = 0;
  int32_t a_stride = 0;
  int32_t flags = 0;
  int32_t step_end = 0;  // 0: all steps (see the shader's step ranges)
};
static_assert(sizeof(LinalgPush) == 64);

// Invocations per workgroup for the matrix kernels: the steps are barrier-bound, so a
// workgroup no larger than the work of one step; 64 covers small matrices, 256 the rest.
uint32_t workgroup_for(int64_t work_per_step) { return work_per_step > 64 * 16 ? 256 : 64; }

bool float_kind(const char* where, Stream& stream, ComputeKind kind) {
  if (kind != ComputeKind::Float32 && kind != ComputeKind::Float64)
    invalid(where, "the kind must be Float32 or Float64");
  const bool f64 = kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  return f64;
}

void check_matrix_operand(const char* where, const Operand& op, const char* what, bool f64) {
  check_operand(where, op, what, f64);
  if (op.dtype != (f64 ? DType::Float64 : DType::Float32))
    invalid(where, std::string(what) + ": the dtype must be " + (f64 ? "float64" : "float32"));
}

void check_int_operand(const char* where, const Operand& op, const char* what, DType dtype) {
  check_operand(where, op, what, false);
  if (op.dtype != dtype) invalid(where, std::string(what) + ": wrong dtype");
}

// Throws unless every product fits the kernels' 32-bit element indices.
void check_size(const char* where, std::initializer_list<int64_t> factors) {
  int64_t total = 1;
  for (int64_t f : factors) {
    if (f < 0) invalid(where, "negative size");
    if (__builtin_mul_overflow(total, f, &total) || total > kMaxIndex)
      invalid(where, "more elements than the kernel's 32-bit index range");
  }
}

void launch(Stream& stream, const char* where, const std::string& name, uint32_t wg,
            int64_t groups_items, uint32_t per_group, const LinalgPush& push) {
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(where, "no shader variant '" + name + "' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg);
  const uint32_t groups = group_count(stream, groups_items, per_group);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
}

const char* kind_suffix(bool f64) { return f64 ? ".float64" : ".float32"; }

// Ranges [k0, k1) of the `steps` elimination steps of a matrix such that an invocation's loop
// iterations (per matrix it owns: `fixed` plus cost(k) of each step k of the range, cost
// counting a 2x2 pivot block's overshoot for sytf2, and every workgroup barrier as one
// iteration, as lavapipe counts them: measured) stay within the device's loop budget; one
// range {0, steps} where the device has no limit. Throws when a single step is over it.
template <class Cost>
std::vector<std::pair<int64_t, int64_t>> step_ranges(Stream& stream, const char* where,
                                                     int64_t steps, int64_t matrices_per_invocation,
                                                     int64_t fixed, Cost cost) {
  const int64_t budget = loop_budget(stream);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  if (budget == INT64_MAX) {
    ranges.emplace_back(0, steps);
    return ranges;
  }
  const int64_t per_matrix = budget / std::max<int64_t>(matrices_per_invocation, 1);
  int64_t k0 = 0;
  while (k0 < steps) {
    int64_t total = fixed, k1 = k0;
    while (k1 < steps && total + cost(k1) <= per_matrix) total += cost(k1++);
    if (k1 == k0)
      invalid(where, "matrices this large exceed the device's loop-iteration limit "
                     "(max_loop_iterations " +
                         std::to_string(stream.device().caps().max_loop_iterations) + ")");
    ranges.emplace_back(k0, k1);
    k0 = k1;
  }
  return ranges;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Matrices of a batch one invocation handles (grid-stride), `per_group` matrices per workgroup.
int64_t matrices_per_invocation(Stream& stream, int64_t batch, uint32_t per_group) {
  const int64_t groups = group_count(stream, batch, per_group);
  return ceil_div(batch, groups * per_group);
}

// Records `name` once per step range, setting push.k / push.step_end (none when one range
// covers all steps).
void launch_ranges(Stream& stream, const char* where, const std::string& name, uint32_t wg,
                   int64_t items, uint32_t per_group, LinalgPush push,
                   const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  if (ranges.size() == 1) {
    launch(stream, where, name, wg, items, per_group, push);
    return;
  }
  for (auto [k0, k1] : ranges) {
    push.k = static_cast<int32_t>(k0);
    push.step_end = static_cast<int32_t>(k1);
    launch(stream, where, name, wg, items, per_group, push);
  }
}

}  // namespace

void lu_factor(Stream& stream, const LuFactor& p) {
  constexpr const char* kWhere = "tvk::kernels::lu_factor";
  const bool f64 = float_kind(kWhere, stream, p.kind);
  check_size(kWhere, {p.batch, p.m, p.n});
  if (p.batch == 0) return;
  const int64_t kmax = std::min(p.m, p.n);
  check_int_operand(kWhere, p.info, "info", DType::Int32);
  if (kmax > 0) {
    check_matrix_operand(kWhere, p.a, "matrix", f64);
    check_int_operand(kWhere, p.pivots, "pivots", DType::Int32);
  }
  LinalgPush push;
  push.a_addr = kmax > 0 ? p.a.address : 0;
  push.piv_addr = kmax > 0 ? p.pivots.address : 0;
  push.info_addr = p.info.address;
  push.batch = static_cast<int32_t>(p.batch);
  push.m = static_cast<int32_t>(p.m);
  push.n = static_cast<int32_t>(p.n);
  const uint32_t wg = workgroup_for(p.m * p.n);
  const int64_t m = p.m, n = p.n, log_wg = wg == 256 ? 8 : 6;
  auto cost = [&](int64_t k) {
    return 6 + 2 * log_wg + 2 * ceil_div(m - k, wg) + ceil_div(n, wg) +
           ceil_div((m - k - 1) * (n - k - 1), wg);
  };
  launch_ranges(stream, kWhere, std::string("linalg.getrf") + kind_suffix(f64), wg, p.batch, 1,
                push, step_ranges(stream, kWhere, kmax, matrices_per_invocation(stream, p.batch, 1), 2, cost));
}

void cholesky(Stream& stream, const Cholesky& p) {
  constexpr const char* kWhere = "tvk::kernels::cholesky";
  const bool f64 = float_kind(kWhere, stream, p.kind);
  check_size(kWhere, {p.batch, p.n, p.n});
  if (p.batch == 0) return;
  check_int_operand(kWhere, p.info, "info", DType::Int32);
  if (p.n > 0) check_matrix_operand(kWhere, p.a, "matrix", f64);
  LinalgPush push;
  push.a_addr = p.n > 0 ? p.a.address : 0;
  push.info_addr = p.info.address;
  push.batch = static_cast<int32_t>(p.batch);
  push.n = static_cast<int32_t>(p.n);
  const uint32_t wg = workgroup_for(p.n * p.n);
  const int64_t n = p.n;
  auto cost = [&](int64_t k) { return 4 + ceil_div(n - k, wg) + ceil_div((n - k - 1) * (n - k - 1), wg); };
  launch_ranges(stream, kWhere, std::string("linalg.potrf") + kind_suffix(f64), wg, p.batch, 1,
                push, step_ranges(stream, kWhere, n, matrices_per_invocation(stream, p.batch, 1), 2, cost));
}

void triangular_solve(Stream& stream, const TriangularSolve& p) {
  constexpr const char* kWhere = "tvk::kernels::triangular_solve";
  const bool f64 = float_kind(kWhere, stream, p.kind);
  check_size(kWhere, {p.batch, p.n, p.nrhs});
  check_size(kWhere, {p.n, p.n});
  if (p.a_batch_stride < 0) invalid(kWhere, "negative batch stride");
  if (p.batch == 0 || p.n == 0 || p.nrhs == 0) return;
  if (p.a_batch_stride != 0 && p.a_batch_stride < p.n * p.n)
    invalid(kWhere, "the batch stride of A overlaps its matrices");
  int64_t a_span = 0;
  if (__builtin_mul_overflow(p.batch - 1, p.a_batch_stride, &a_span) ||
      a_span + p.n * p.n > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");
  check_matrix_operand(kWhere, p.a, "A", f64);
  check_matrix_operand(kWhere, p.b, "B", f64);
  LinalgPush push;
  push.a_addr = p.a.address;
  push.b_addr = p.b.address;
  push.batch = static_cast<int32_t>(p.batch);
  push.n = static_cast<int32_t>(p.n);
  push.nrhs = static_cast<int32_t>(p.nrhs);
  push.a_stride = static_cast<int32_t>(p.a_batch_stride);
  push.flags = (p.upper ? 1 : 0) | (p.transpose ? 2 : 0) | (p.unit_diagonal ? 4 : 0);
  const uint32_t wg = workgroup_for(p.n * p.nrhs);
  const int64_t n = p.n, nrhs = p.nrhs;
  auto cost = [&](int64_t step) { return 4 + ceil_div(nrhs, wg) + ceil_div((n - step - 1) * nrhs, wg); };
  launch_ranges(stream, kWhere, std::string("linalg.trsm") + kind_suffix(f64), wg, p.batch, 1,
                push, step_ranges(stream, kWhere, n, matrices_per_invocation(stream, p.batch, 1), 2, cost));
}

void apply_pivots(Stream& stream, const ApplyPivots& p) {
  constexpr const char* kWhere = "tvk::kernels::apply_pivots";
  const bool f64 = float_kind(kWhere, stream, p.kind);
  check_size(kWhere, {p.batch, p.n, p.nrhs});
  check_size(kWhere, {p.batch, p.k});
  if (p.batch == 0 || p.n == 0 || p.nrhs == 0 || p.k == 0) return;
  check_matrix_operand(kWhere, p.b, "B", f64);
  check_int_operand(kWhere, p.pivots, "pivots", DType::Int32);
  LinalgPush push;
  push.b_addr = p.b.address;
  push.piv_addr = p.pivots.address;
  push.batch = static_cast<int32_t>(p.batch);
  push.n = static_cast<int32_t>(p.n);
  push.nrhs = static_cast<int32_t>(p.nrhs);
  push.k = static_cast<int32_t>(p.k);
  push.flags = p.reverse ? 8 : 0;
  launch(stream, kWhere, std::string("linalg.laswp") + kind_suffix(f64), 64, p.batch, 1, push);
}

void pivots_to_permutation(Stream& stream, const PivotsToPermutation& p) {
  constexpr const char* kWhere = "tvk::kernels::pivots_to_permutation";
  check_size(kWhere, {p.batch, p.m});
  check_size(kWhere, {p.batch, p.k});
  if (p.batch == 0 || p.m == 0) return;
  check_int_operand(kWhere, p.perm, "permutation", DType::Int64);
  if (p.k > 0) check_int_operand(kWhere, p.pivots, "pivots", DType::Int32);
  LinalgPush push;
  push.b_addr = p.perm.address;
  push.piv_addr = p.k > 0 ? p.pivots.address : 0;
  push.batch = static_cast<int32_t>(p.batch);
  push.m = static_cast<int32_t>(p.m);
  push.k = static_cast<int32_t>(p.k);
  constexpr uint32_t kWg = 64;
  launch(stream, kWhere, "linalg.permutation", kWg, p.batch, kWg, push);
}

void ldl_factor(Stream& stream, const LdlFactor& p) {
  constexpr const char* kWhere = "tvk::kernels::ldl_factor";
  const bool f64 = float_kind(kWhere, stream, p.kind);
  check_size(kWhere, {p.batch, p.n, p.n});
  if (p.batch == 0) return;
  check_int_operand(kWhere, p.info, "info", DType::Int32);
  if (p.n > 0) {
    check_matrix_operand(kWhere, p.a, "matrix", f64);
    check_int_operand(kWhere, p.pivots, "pivots", DType::Int32);
  }
  LinalgPush push;
  push.a_addr = p.n > 0 ? p.a.address : 0;
  push.piv_addr = p.n > 0 ? p.pivots.address : 0;
  push.info_addr = p.info.address;
  push.batch = static_cast<int32_t>(p.batch);
  push.n = static_cast<int32_t>(p.n);
  constexpr uint32_t kWg = 64;
  // A step at k (a 1x1 block, or a 2x2 block replacing steps k and k + 1): the column and row
  // scans, the interchange and the trailing update of the (n - k)^2 / 2 lower triangle.
  const int64_t n = p.n;
  auto cost = [&](int64_t k) { return (n - k) * (n - k + 1) / 2 + 4 * (n - k) + n + 8; };
  const auto ranges = step_ranges(stream, kWhere, n, matrices_per_invocation(stream, p.batch, kWg), 2, cost);
  const std::string name = std::string("linalg.sytf2") + kind_suffix(f64);
  if (ranges.size() == 1) {
    launch(stream, kWhere, name, kWg, p.batch, kWg, push);
    return;
  }
  // The step each matrix resumes at (int32 per matrix), carried between the ranges.
  Allocator& allocator = stream.device().allocator();
  const uint64_t resume = allocator.allocate(static_cast<uint64_t>(p.batch) * 4, stream.id());
  push.b_addr = resume;
  try {
    launch_ranges(stream, kWhere, name, kWg, p.batch, kWg, push, ranges);
  } catch (...) {
    allocator.free(resume);
    throw;
  }
  allocator.free(resume);  // stream order: later reuse is ordered after these dispatches
}

void ldl_solve(Stream& stream, const LdlSolve& p) {
  constexpr const char* kWhere = "tvk::kernels::ldl_solve";
  const bool f64 = float_kind(kWhere, stream, p.kind);
  check_size(kWhere, {p.batch, p.n, p.nrhs});
  check_size(kWhere, {p.batch, p.n, p.n});
  if (p.batch == 0 || p.n == 0 || p.nrhs == 0) return;
  check_matrix_operand(kWhere, p.a, "LD", f64);
  check_matrix_operand(kWhere, p.b, "B", f64);
  check_int_operand(kWhere, p.pivots, "pivots", DType::Int32);
  LinalgPush push;
  push.a_addr = p.a.address;
  push.b_addr = p.b.address;
  push.piv_addr = p.pivots.address;
  push.batch = static_cast<int32_t>(p.batch);
  push.n = static_cast<int32_t>(p.n);
  push.nrhs = static_cast<int32_t>(p.nrhs);
  constexpr uint32_t kWg = 64;
  // One invocation per column walks both triangles: ~n^2 iterations, not split.
  const int64_t per_column = p.n * (p.n + 1) + 4;
  if (matrices_per_invocation(stream, p.batch * p.nrhs, kWg) * per_column > loop_budget(stream))
    invalid(kWhere, "matrices this large exceed the device's loop-iteration limit "
                    "(max_loop_iterations " +
                        std::to_string(stream.device().caps().max_loop_iterations) + ")");
  launch(stream, kWhere, std::string("linalg.sytrs") + kind_suffix(f64), kWg, p.batch * p.nrhs,
         kWg, push);
}

}  // namespace tvk::kernels
