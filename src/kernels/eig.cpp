// Launcher of the general eigendecomposition (shaders/eig.comp): one workgroup per matrix of
// the batch, 32..256 invocations (the row / column updates of one step are n long). The
// pipeline is a fixed sequence of dispatches (no host wait): init, balancing (a work budget
// per dispatch; what is not done by the last one is skipped, which only loses LAPACK's exact
// scaling), Hessenberg columns, Z's reflectors, clearing, the QR iteration (a work budget per
// dispatch; a finished matrix returns at once), T's column norms, eigenvectors,
// back-transformation, output. The fixed-size phases are cut into ranges whose loop
// iterations per invocation stay under kWorkBudget: lavapipe's shader compiler ends every
// loop after the current pass once an invocation has run 65535 loop iterations (gallivm's
// infinite-loop guard), so longer dispatches would silently compute garbage there. Batches
// beyond the workgroup-count limit are recorded as several dispatches of a slice each, so a
// workgroup never loops over matrices.
#include "kernels/eig.h"

#include <algorithm>
#include <string>

#include "kernels/batched_matrix.h"
#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/eig.comp.
struct EigPush {
  uint64_t in_addr;
  uint64_t work_addr;
  uint64_t state_addr;
  uint64_t vals_addr;
  uint64_t vecs_addr;
  int32_t batch;
  int32_t n;
  int32_t phase;
  int32_t flags;
  int32_t begin;
  int32_t end;
  int32_t in_sb, in_rs, in_cs;
  int32_t vals_sb, vals_s;
  int32_t vec_sb, vec_rs, vec_cs;
  int32_t work_stride;
  int32_t itmax;
};
static_assert(sizeof(EigPush) == 104);

constexpr const char* kWhere = "tvk::kernels::general_eigen";
enum Phase : int32_t {
  kInit = 0, kHessenberg = 1, kFormZ = 2, kQr = 3, kVectors = 4, kBack = 5, kOutput = 6,
  kBalance = 7, kClear = 8, kColumnNorms = 9,
};

// Loop iterations one invocation may run in a dispatch (lavapipe's hard limit is 65535; the
// per-phase costs below are upper bounds of the shader's loop counts, the margin covers the
// constant overheads they round off).
constexpr int64_t kWorkBudget = 32000;
constexpr int64_t kQrBudget = 24000;  // the QR dispatch's own count of its loop iterations
constexpr int32_t kFlagLastBalance = 2;

int32_t narrow(int64_t v, const char* what) { return narrow_index(kWhere, v, what); }

void check(const Operand& op, const char* what, DType dtype, bool f64) {
  check_operand(kWhere, op, what, f64);
  if (op.dtype != dtype) invalid(kWhere, std::string(what) + ": wrong dtype");
}

struct Prepared {
  EigPush push{};
  bool f64 = false;
  uint32_t wg = 32;
};

Prepared prepare(Stream& stream, const GeneralEigen& e) {
  Prepared p;
  if (e.kind != ComputeKind::Float32 && e.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  p.f64 = e.kind == ComputeKind::Float64;
  if (p.f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (e.batch < 0 || e.n < 0) invalid(kWhere, "negative size");
  if (e.max_iterations < 0) invalid(kWhere, "negative iteration cap");
  if (e.n > kMaxGeneralEigenOrder)
    invalid(kWhere, "order above " + std::to_string(kMaxGeneralEigenOrder) + " (the per-dispatch work bound)");
  const DType dtype = p.f64 ? DType::Float64 : DType::Float32;
  EigPush& push = p.push;
  push.batch = narrow(e.batch, "batch");
  push.n = narrow(e.n, "order");
  push.itmax = e.max_iterations;
  push.flags = e.compute_vectors ? 1 : 0;
  if (e.batch == 0 || e.n == 0) return p;
  check(e.in, "input", dtype, p.f64);
  check(e.values, "values", dtype, p.f64);
  check(e.work, "work", dtype, p.f64);
  check(e.state, "state", DType::Int32, p.f64);
  matrix_strides(kWhere, e.in_strides, e.batch, e.n, e.n, 0, &push.in_sb, "input");
  int32_t vs[3];
  const int64_t vstr[3] = {e.values_strides[0], e.values_strides[1], 0};
  matrix_strides(kWhere, vstr, e.batch, e.n, 1, 1, vs, "values");
  push.vals_sb = vs[0];
  push.vals_s = vs[1];
  if (e.compute_vectors) {
    check(e.vectors, "vectors", dtype, p.f64);
    matrix_strides(kWhere, e.vectors_strides, e.batch, e.n, e.n, 1, &push.vec_sb, "vectors");
    push.vecs_addr = e.vectors.address;
  }
  const int64_t per = general_eigen_work(e.n);
  int64_t total = 0;
  if (__builtin_mul_overflow(per, e.batch, &total) || total > kMaxIndex ||
      e.batch * static_cast<int64_t>(kEigStateInts) > kMaxIndex)
    invalid(kWhere, "work buffer out of the 32-bit index range");
  push.work_stride = narrow(per, "work");
  push.in_addr = e.in.address;
  push.work_addr = e.work.address;
  push.state_addr = e.state.address;
  push.vals_addr = e.values.address;
  p.wg = matrix_workgroup(e.n);
  return p;
}

// Records `phase` for the whole batch: one dispatch per slice of at most the device's
// workgroup count matrices (operand addresses advanced to the slice).
void launch(Stream& stream, const Prepared& p, int32_t phase, int64_t begin = 0, int64_t end = 0,
            int32_t extra_flags = 0) {
  const std::string name = std::string("eig.") + (p.f64 ? "float64" : "float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, p.wg, {});
  const uint64_t esize = p.f64 ? 8 : 4;
  const int64_t cap = group_count(stream, p.push.batch, 1);
  for (int64_t b0 = 0; b0 < p.push.batch; b0 += cap) {
    EigPush push = p.push;
    push.phase = phase;
    push.begin = static_cast<int32_t>(begin);
    push.end = static_cast<int32_t>(end);
    push.flags |= extra_flags;
    push.batch = static_cast<int32_t>(std::min<int64_t>(cap, p.push.batch - b0));
    push.in_addr += static_cast<uint64_t>(b0 * push.in_sb) * esize;
    push.work_addr += static_cast<uint64_t>(b0 * push.work_stride) * esize;
    push.state_addr += static_cast<uint64_t>(b0 * kEigStateInts) * 4;
    push.vals_addr += static_cast<uint64_t>(b0 * push.vals_sb) * esize;
    if (push.vecs_addr) push.vecs_addr += static_cast<uint64_t>(b0 * push.vec_sb) * esize;
    stream.dispatch(pipeline, static_cast<uint32_t>(push.batch), 1, 1, &push, sizeof(push));
  }
}

// Records a fixed-size phase over [0, total) in ranges of `per` (>= 1).
void launch_ranges(Stream& stream, const Prepared& p, int32_t phase, int64_t total, int64_t per) {
  per = std::max<int64_t>(per, 1);
  for (int64_t r = 0; r < total; r += per) launch(stream, p, phase, r, std::min(r + per, total));
}

// Upper bounds of one unit's loop iterations per invocation (q = ceil(n / wg)).
struct Costs {
  int64_t n, q, log_wg;
  int64_t hessenberg_column() const { return 4 * n * q + 4 * q + 2 * log_wg + 16; }
  int64_t reflector() const { return 2 * n * q + 2 * q + 4; }
  int64_t vector() const { return n * (q + 40) + 2 * q + 8; }
  int64_t back_column() const { return n + 2; }  // per element of the column range / wg
  int64_t output_column() const { return 8 * n + 16; }
  int64_t balance_step() const { return 8 * q + 4 * log_wg + 24; }
};

Costs costs_of(const Prepared& p) {
  Costs c;
  c.n = p.push.n;
  c.q = (c.n + p.wg - 1) / p.wg;
  c.log_wg = 0;
  while ((1u << (c.log_wg + 1)) <= p.wg) ++c.log_wg;
  return c;
}

void record_qr(Stream& stream, const Prepared& p, int rounds) {
  for (int r = 0; r < rounds; ++r) launch(stream, p, kQr, 0, kQrBudget);
}

void record_tail(Stream& stream, const Prepared& p, bool vectors) {
  const Costs c = costs_of(p);
  const int64_t n = c.n;
  if (vectors) {
    launch(stream, p, kColumnNorms);
    launch_ranges(stream, p, kVectors, n, kWorkBudget / c.vector());
    // Columns per back-transform dispatch: ceil(n * cols / wg) * (n + 2) <= budget.
    launch_ranges(stream, p, kBack, n, (kWorkBudget / c.back_column()) * p.wg / n);
  }
  launch_ranges(stream, p, kOutput, n, (kWorkBudget / c.output_column()) * p.wg);
}

}  // namespace

int64_t general_eigen_work(int64_t n) { return 4 * n * n + 5 * n; }

int general_eigen_qr_rounds(int64_t n) {
  // Random matrices take about 1.1-1.3 n^2 bulge-chase steps and ~2 iterations per
  // eigenvalue; twice that leaves room for harder ones before a resume is needed.
  const int64_t q = (n + 255) / 256 + (n < 256 ? 1 : 0);
  const int64_t work = 2 * (n * n * (3 * q + 9) + 2 * n * (2 * n + 3 * q + 40));
  return static_cast<int>(std::min<int64_t>(work / kQrBudget + 1, 1 << 20));
}

void general_eigen(Stream& stream, const GeneralEigen& e) {
  const Prepared p = prepare(stream, e);
  if (e.batch == 0 || e.n == 0) return;
  const Costs c = costs_of(p);
  const int64_t n = e.n;
  launch(stream, p, kInit);
  // Balancing: the permutation scans take up to ~n^2 steps (one isolated row per scan, as
  // for a lower triangular matrix, whose eigenvalues only the permutations compute
  // accurately: they are exponentially ill-conditioned otherwise), a dense matrix 2n; then
  // ~8 scaling passes of n steps, typically far fewer. Whatever remains after these
  // dispatches is skipped; a finished matrix returns at once from the rest.
  const int64_t balance_steps = n * n + 12 * n + 16;
  const int64_t per_balance = std::max<int64_t>(kWorkBudget / c.balance_step(), 1);
  const int64_t balance_dispatches = (balance_steps + per_balance - 1) / per_balance;
  for (int64_t d = 0; d < balance_dispatches; ++d)
    launch(stream, p, kBalance, 0, per_balance * c.balance_step(), d + 1 == balance_dispatches ? kFlagLastBalance : 0);
  launch_ranges(stream, p, kHessenberg, std::max<int64_t>(n - 2, 0), kWorkBudget / c.hessenberg_column());
  if (e.compute_vectors)
    launch_ranges(stream, p, kFormZ, std::max<int64_t>(n - 2, 1),
                  (kWorkBudget - n * c.q) / c.reflector());
  launch(stream, p, kClear);
  record_qr(stream, p, general_eigen_qr_rounds(n));
  record_tail(stream, p, e.compute_vectors);
}

void general_eigen_resume(Stream& stream, const GeneralEigen& e, int rounds) {
  const Prepared p = prepare(stream, e);
  if (e.batch == 0 || e.n == 0 || rounds <= 0) return;
  record_qr(stream, p, rounds);
  record_tail(stream, p, e.compute_vectors);
}

}  // namespace tvk::kernels
