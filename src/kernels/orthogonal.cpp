// Launcher of the orthogonal family (shaders/orthogonal.comp): one workgroup per matrix of the
// batch, the workgroup size grows with the matrix (32..256 invocations) so that each step's
// rotations of n / 2 column pairs keep the invocations busy. Long loops (Jacobi sweeps, QR
// columns, reflectors, completed U columns) are recorded as several dispatches of a few
// hundred workgroup barriers each, with the loop range in push constants (lavapipe lost most
// writes of single dispatches with thousands of barriers). A Jacobi sweep that rotates nothing
// marks the matrix converged and the remaining sweep dispatches return at once: the number of
// dispatches is fixed at record time (no host wait), kDefaultSweeps * ceil((n - 1) / 32) + 2.
#include "kernels/orthogonal.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/batched_matrix.h"
#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/orthogonal.comp.
struct OrthogonalPush {
  uint64_t in_addr;
  uint64_t work_addr;
  uint64_t vals_addr;
  uint64_t vec1_addr;
  uint64_t vec2_addr;
  int32_t batch;
  int32_t m;
  int32_t n;
  int32_t flags;
  int32_t max_sweeps;
  int32_t in_sb, in_rs, in_cs;
  int32_t vals_sb, vals_s;
  int32_t v1_sb, v1_rs, v1_cs;
  int32_t v2_sb, v2_rs, v2_cs;
  int32_t work_stride;
};
static_assert(sizeof(OrthogonalPush) == 112);

constexpr const char* kWhere = "tvk::kernels::orthogonal";
// Jacobi sweeps converge quadratically (typically 5-10 for float32, 6-12 for float64); the
// cap only ends inputs that cannot converge (NaN / Inf).
constexpr int kDefaultSweeps = 40;
// Phases of OP 0 / 1 (flags bits 3-5 in shaders/orthogonal.comp).
constexpr int32_t kPhaseInit = 8, kPhaseSweep = 16, kPhaseFinish = 32;

int32_t narrow(int64_t v, const char* what) { return narrow_index(kWhere, v, what); }

void matrix_strides(const int64_t* s, int64_t batch, int64_t rows, int64_t cols, int32_t* out,
                    const char* what) {
  kernels::matrix_strides(kWhere, s, batch, rows, cols, 0, out, what);
}

void check(const Operand& op, const char* what, DType dtype, bool f64) {
  check_operand(kWhere, op, what, f64);
  if (op.dtype != dtype) invalid(kWhere, std::string(what) + ": dtype must match the kind");
}

struct Prepared {
  OrthogonalPush push{};
  bool f64 = false;
  DType dtype = DType::Float32;
};

Prepared prepare(Stream& stream, ComputeKind kind, int64_t batch, int64_t m, int64_t n, int max_sweeps) {
  Prepared p;
  if (kind != ComputeKind::Float32 && kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  p.f64 = kind == ComputeKind::Float64;
  if (p.f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (batch < 0 || m < 0 || n < 0) invalid(kWhere, "negative size");
  p.dtype = p.f64 ? DType::Float64 : DType::Float32;
  p.push.batch = narrow(batch, "batch");
  p.push.m = narrow(m, "rows");
  p.push.n = narrow(n, "columns");
  p.push.max_sweeps = max_sweeps > 0 ? max_sweeps : kDefaultSweeps;
  return p;
}

void launch(Stream& stream, const Prepared& p, const char* op, int64_t items) {
  const std::string name = std::string("orthogonal.") + op + (p.f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, matrix_workgroup(items), {});
  const uint32_t groups = group_count(stream, p.push.batch, 1);
  stream.dispatch(pipeline, groups, 1, 1, &p.push, sizeof(p.push));
}

// Loop lengths per dispatch: each dispatch stays at a few hundred workgroup barriers (see the
// note in shaders/orthogonal.comp).
constexpr int kStepsPerDispatch = 32;     // Jacobi steps (2-3 barriers each)
constexpr int kColumnsPerDispatch = 8;    // geqrf columns / completed U columns (~25 each)
constexpr int kReflectorsPerDispatch = 64;  // applied reflectors (1 each)
constexpr int32_t kPhaseComplete = 64;

// Units (Jacobi steps, QR columns, reflectors) per dispatch: `fixed` (the constants above),
// fewer where the device limits an invocation's loop iterations (loop_budget) and a unit
// costs `unit_cost` of them per matrix an invocation owns (barriers count as one: measured
// on lavapipe). Throws when a single unit is over the budget.
int units_per_dispatch(Stream& stream, const Prepared& p, int fixed, int64_t unit_cost) {
  const int64_t budget = loop_budget(stream);
  if (budget == INT64_MAX) return fixed;
  const int64_t groups = group_count(stream, p.push.batch, 1);
  const int64_t matrices = (p.push.batch + groups - 1) / groups;
  const int64_t units = (budget / matrices - 8) / std::max<int64_t>(unit_cost, 1);
  if (units < 1)
    invalid(kWhere, "matrices this large exceed the device's loop-iteration limit (max_loop_iterations " +
                        std::to_string(stream.device().caps().max_loop_iterations) + ")");
  return static_cast<int>(std::min<int64_t>(fixed, units));
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Jacobi: init, the sweeps as dispatches of kStepsPerDispatch steps (a converged matrix
// returns at once), finish, and (SVD with vectors) the completion of U's columns up to
// `complete_to`.
void launch_jacobi(Stream& stream, Prepared p, const char* op, int64_t items, int64_t complete_to) {
  const int sweeps = p.push.max_sweeps;
  const int32_t flags = p.push.flags;
  const int steps = std::max(1, p.push.n + (p.push.n & 1) - 1);
  // A step: the rotations of its pairs and their application to rows / columns (`items` work
  // items over the workgroup, a few passes) between barriers.
  const int64_t wg = matrix_workgroup(items);
  const int steps_per_dispatch = units_per_dispatch(stream, p, kStepsPerDispatch, 8 + 3 * ceil_div(items, wg));
  p.push.max_sweeps = 1;
  p.push.flags = flags | kPhaseInit;
  launch(stream, p, op, items);
  p.push.flags = flags | kPhaseSweep;
  for (int i = 0; i < sweeps; ++i)
    for (int r = 0; r < steps; r += steps_per_dispatch) {
      p.push.in_sb = r;
      p.push.in_rs = r + steps_per_dispatch;
      launch(stream, p, op, items);
    }
  p.push.flags = flags | kPhaseFinish;
  launch(stream, p, op, items);
  p.push.flags = flags | kPhaseComplete;
  for (int64_t c = 0; c < complete_to; c += kColumnsPerDispatch) {
    p.push.in_sb = static_cast<int32_t>(c);
    p.push.in_rs = static_cast<int32_t>(std::min<int64_t>(c + kColumnsPerDispatch, complete_to));
    launch(stream, p, op, items);
  }
}

int64_t checked_work(int64_t per_matrix, int64_t batch) {
  int64_t total = 0;
  if (__builtin_mul_overflow(per_matrix, batch, &total) || total > kMaxIndex)
    invalid(kWhere, "work buffer out of the 32-bit index range");
  return total;
}

}  // namespace

int64_t symmetric_eigen_work(int64_t n) { return 2 * n * n + 2 * ((n + 1) / 2) + n + 3; }

int64_t singular_value_work(int64_t rows, int64_t cols) {
  return cols * rows + cols * cols + 2 * ((cols + 1) / 2) + 2 * cols + rows + 2;
}

void symmetric_eigen(Stream& stream, const SymmetricEigen& e) {
  Prepared p = prepare(stream, e.kind, e.batch, e.n, e.n, e.max_sweeps);
  if (e.batch == 0 || e.n == 0) return;
  check(e.in, "input", p.dtype, p.f64);
  check(e.values, "values", p.dtype, p.f64);
  check(e.work, "work", p.dtype, p.f64);
  if (e.compute_vectors) check(e.vectors, "vectors", p.dtype, p.f64);
  OrthogonalPush& push = p.push;
  matrix_strides(e.in_strides, e.batch, e.n, e.n, &push.in_sb, "input");
  int32_t vs[3];
  const int64_t vstr[3] = {e.values_strides[0], e.values_strides[1], 0};
  matrix_strides(vstr, e.batch, e.n, 1, vs, "values");
  push.vals_sb = vs[0];
  push.vals_s = vs[1];
  if (e.compute_vectors) matrix_strides(e.vectors_strides, e.batch, e.n, e.n, &push.v1_sb, "vectors");
  const int64_t per = symmetric_eigen_work(e.n);
  checked_work(per, e.batch);
  push.work_stride = narrow(per, "work");
  push.in_addr = e.in.address;
  push.work_addr = e.work.address;
  push.vals_addr = e.values.address;
  push.vec1_addr = e.compute_vectors ? e.vectors.address : 0;
  push.flags = (e.compute_vectors ? 1 : 0) | (e.upper ? 2 : 0);
  launch_jacobi(stream, p, "eigh", ((e.n + 1) / 2) * e.n, 0);
}

void singular_value_decomposition(Stream& stream, const SingularValueDecomposition& s) {
  Prepared p = prepare(stream, s.kind, s.batch, s.rows, s.cols, s.max_sweeps);
  if (s.rows < s.cols) invalid(kWhere, "the SVD kernel needs rows >= cols (pass the transpose)");
  const int64_t ucols = s.full ? s.rows : s.cols;
  if (s.batch == 0 || (s.cols == 0 && (!s.compute_vectors || ucols == 0))) return;
  // cols == 0 with a full U (rows > 0): only U is written (the identity), A, values and V
  // are empty.
  const bool has_cols = s.cols > 0;
  check(s.work, "work", p.dtype, p.f64);
  OrthogonalPush& push = p.push;
  if (has_cols) {
    check(s.in, "input", p.dtype, p.f64);
    check(s.values, "values", p.dtype, p.f64);
    matrix_strides(s.in_strides, s.batch, s.rows, s.cols, &push.in_sb, "input");
    int32_t vs[3];
    const int64_t vstr[3] = {s.values_strides[0], s.values_strides[1], 0};
    matrix_strides(vstr, s.batch, s.cols, 1, vs, "values");
    push.vals_sb = vs[0];
    push.vals_s = vs[1];
    push.in_addr = s.in.address;
    push.vals_addr = s.values.address;
  }
  if (s.compute_vectors) {
    check(s.left, "left vectors", p.dtype, p.f64);
    matrix_strides(s.left_strides, s.batch, s.rows, ucols, &push.v1_sb, "left vectors");
    push.vec1_addr = s.left.address;
    if (has_cols) {
      check(s.right, "right vectors", p.dtype, p.f64);
      matrix_strides(s.right_strides, s.batch, s.cols, s.cols, &push.v2_sb, "right vectors");
      push.vec2_addr = s.right.address;
    }
  }
  const int64_t per = singular_value_work(s.rows, s.cols);
  checked_work(per, s.batch);
  push.work_stride = narrow(per, "work");
  push.work_addr = s.work.address;
  push.flags = (s.compute_vectors ? 1 : 0) | (s.full ? 2 : 0);
  launch_jacobi(stream, p, "svd", ((s.cols + 1) / 2) * s.rows, s.compute_vectors ? ucols : 0);
}

void householder_qr(Stream& stream, const HouseholderQR& q) {
  Prepared p = prepare(stream, q.kind, q.batch, q.rows, q.cols, 1);
  const int64_t k = std::min(q.rows, q.cols);
  if (q.batch == 0 || k == 0) return;
  check(q.a, "matrix", p.dtype, p.f64);
  check(q.tau, "tau", p.dtype, p.f64);
  OrthogonalPush& push = p.push;
  matrix_strides(q.a_strides, q.batch, q.rows, q.cols, &push.v1_sb, "matrix");
  int32_t ts[3];
  const int64_t tstr[3] = {q.tau_strides[0], q.tau_strides[1], 0};
  matrix_strides(tstr, q.batch, k, 1, ts, "tau");
  push.vals_sb = ts[0];
  push.vals_s = ts[1];
  push.vec1_addr = q.a.address;
  push.vals_addr = q.tau.address;
  // A column: two scaled-norm passes and trees, the scaling, and the trailing update (per
  // trailing column an invocation owns, two walks down the column).
  const int64_t wg = matrix_workgroup(q.cols);
  const int columns = units_per_dispatch(stream, p, kColumnsPerDispatch,
                                         10 + 4 * 8 + 3 * ceil_div(q.rows, wg) +
                                             ceil_div(q.cols, wg) * (2 * q.rows + 2));
  for (int64_t j = 0; j < k; j += columns) {
    push.in_sb = static_cast<int32_t>(j);
    push.in_rs = static_cast<int32_t>(std::min<int64_t>(j + columns, k));
    launch(stream, p, "geqrf", q.cols);
  }
}

void apply_reflectors(Stream& stream, const ApplyReflectors& a) {
  Prepared p = prepare(stream, a.kind, a.batch, a.rows, a.cols, 1);
  if (a.count < 0) invalid(kWhere, "negative reflector count");
  if (a.batch == 0 || a.rows == 0 || a.cols == 0) return;
  const int64_t len = a.left ? a.rows : a.cols;
  if (a.count > len) invalid(kWhere, "more reflectors than their length");
  OrthogonalPush& push = p.push;
  check(a.c, "target", p.dtype, p.f64);
  matrix_strides(a.c_strides, a.batch, a.rows, a.cols, &push.v1_sb, "target");
  push.vec1_addr = a.c.address;
  push.max_sweeps = narrow(a.count, "count");
  if (a.count > 0) {
    check(a.reflectors, "reflectors", p.dtype, p.f64);
    check(a.tau, "tau", p.dtype, p.f64);
    matrix_strides(a.reflectors_strides, a.batch, len, a.count, &push.in_sb, "reflectors");
    int32_t ts[3];
    const int64_t tstr[3] = {a.tau_strides[0], a.tau_strides[1], 0};
    matrix_strides(tstr, a.batch, a.count, 1, ts, "tau");
    push.vals_sb = ts[0];
    push.vals_s = ts[1];
    push.in_addr = a.reflectors.address;
    push.vals_addr = a.tau.address;
  } else if (!a.identity) {
    return;  // Q = I
  }
  push.flags = (a.left ? 1 : 0) | (a.transpose ? 2 : 0) | (a.identity ? 4 : 0);
  // Reflectors [v2_sb, v2_rs) per dispatch (the identity is written by the first one).
  // A reflector: per column (left) / row (right) of C an invocation owns, two walks over
  // `len`; the identity fill of the first dispatch (orgqr) once.
  const int64_t items = a.left ? a.cols : a.rows;
  const int64_t wg = matrix_workgroup(items);
  const int reflectors = units_per_dispatch(stream, p, kReflectorsPerDispatch,
                                            2 + ceil_div(items, wg) * (2 * len + 2));
  if (a.identity && ceil_div(a.rows * a.cols, wg) > loop_budget(stream) / 2)
    invalid(kWhere, "matrices this large exceed the device's loop-iteration limit (max_loop_iterations)");
  for (int64_t r = 0; r < std::max<int64_t>(a.count, 1); r += reflectors) {
    push.v2_sb = static_cast<int32_t>(r);
    push.v2_rs = static_cast<int32_t>(std::min<int64_t>(r + reflectors, a.count));
    launch(stream, p, "apply", items);
  }
}

}  // namespace tvk::kernels
