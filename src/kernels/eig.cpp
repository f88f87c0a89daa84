// Launcher of the general eigendecomposition (shaders/eig.comp): one workgroup per matrix of
// the batch, 32..256 invocations (the row / column updates of one step are n long). The
// pipeline is a fixed sequence of dispatches (no host wait): init + balancing, Hessenberg
// columns in chunks, Z, the QR iteration as dispatches of a budget of bulge-chase steps (a
// finished matrix returns at once), eigenvectors, back-transformation, output. Every dispatch
// stays at a few hundred workgroup barriers (see the note in shaders/orthogonal.comp).
#include "kernels/eig.h"

#include <algorithm>
#include <string>

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
enum Phase : int32_t { kInit = 0, kHessenberg = 1, kFormZ = 2, kQr = 3, kVectors = 4, kBack = 5, kOutput = 6 };

// Hessenberg columns per dispatch (~20 barriers each) and bulge-chase steps per QR dispatch
// (2 barriers each, plus 1-2 per iteration and deflation).
constexpr int kColumnsPerDispatch = 12;
constexpr int kStepsPerDispatch = 96;

int32_t narrow(int64_t v, const char* what) {
  if (v < 0 || v > kMaxIndex) invalid(kWhere, std::string(what) + " out of the 32-bit index range");
  return static_cast<int32_t>(v);
}

// Checks that every offset of a (d0, d1, d2) operand fits in int32 (`scale` multiplies the
// strides: 1, or 1 with the real-view's extra + 1 of a complex operand) and narrows them.
void strides3(const int64_t* s, int64_t d0, int64_t d1, int64_t d2, int64_t extra, int32_t* out,
              const char* what) {
  const int64_t dims[3] = {d0, d1, d2};
  int64_t reach = extra;
  for (int d = 0; d < 3; ++d) {
    if (s[d] < 0) invalid(kWhere, std::string(what) + ": negative stride");
    if (dims[d] > 1) {
      int64_t term = 0;
      if (__builtin_mul_overflow(dims[d] - 1, s[d], &term) || __builtin_add_overflow(reach, term, &reach))
        invalid(kWhere, std::string(what) + ": offsets out of the 32-bit index range");
    }
    out[d] = dims[d] > 1 ? narrow(s[d], what) : 0;
  }
  narrow(reach, what);
}

void check(const Operand& op, const char* what, DType dtype, bool f64) {
  check_operand(kWhere, op, what, f64);
  if (op.dtype != dtype) invalid(kWhere, std::string(what) + ": wrong dtype");
}

uint32_t workgroup_for(int64_t n) {
  uint32_t wg = 32;
  while (wg < 256 && static_cast<int64_t>(wg) < n) wg *= 2;
  return wg;
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
  strides3(e.in_strides, e.batch, e.n, e.n, 0, &push.in_sb, "input");
  int32_t vs[3];
  const int64_t vstr[3] = {e.values_strides[0], e.values_strides[1], 0};
  strides3(vstr, e.batch, e.n, 1, 1, vs, "values");
  push.vals_sb = vs[0];
  push.vals_s = vs[1];
  if (e.compute_vectors) {
    check(e.vectors, "vectors", dtype, p.f64);
    strides3(e.vectors_strides, e.batch, e.n, e.n, 1, &push.vec_sb, "vectors");
    push.vecs_addr = e.vectors.address;
  }
  const int64_t per = general_eigen_work(e.n);
  int64_t total = 0;
  if (__builtin_mul_overflow(per, e.batch, &total) || total > kMaxIndex ||
      e.batch * kEigStateInts > kMaxIndex)
    invalid(kWhere, "work buffer out of the 32-bit index range");
  push.work_stride = narrow(per, "work");
  push.in_addr = e.in.address;
  push.work_addr = e.work.address;
  push.state_addr = e.state.address;
  push.vals_addr = e.values.address;
  p.wg = workgroup_for(e.n);
  return p;
}

void launch(Stream& stream, const Prepared& p, int32_t phase, int32_t begin = 0, int32_t end = 0) {
  const std::string name = std::string("eig.") + (p.f64 ? "float64" : "float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, p.wg, {});
  EigPush push = p.push;
  push.phase = phase;
  push.begin = begin;
  push.end = end;
  const uint32_t groups = group_count(stream, push.batch, 1);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
}

void record_tail(Stream& stream, const Prepared& p, bool vectors) {
  if (vectors) {
    launch(stream, p, kVectors);
    launch(stream, p, kBack);
  }
  launch(stream, p, kOutput);
}

void record_qr(Stream& stream, const Prepared& p, int rounds) {
  for (int r = 0; r < rounds; ++r) launch(stream, p, kQr, 0, kStepsPerDispatch);
}

}  // namespace

int64_t general_eigen_work(int64_t n) { return 4 * n * n + 5 * n; }

int general_eigen_qr_rounds(int64_t n) {
  // Random matrices take about 1.1-1.3 n^2 bulge-chase steps (plus n deflations); 2 n^2 + 8 n
  // leaves room for harder ones before a resume is needed.
  const int64_t steps = 2 * n * n + 8 * n;
  return static_cast<int>(std::min<int64_t>((steps + kStepsPerDispatch - 1) / kStepsPerDispatch, 1 << 20));
}

void general_eigen(Stream& stream, const GeneralEigen& e) {
  const Prepared p = prepare(stream, e);
  if (e.batch == 0 || e.n == 0) return;
  launch(stream, p, kInit);
  for (int64_t c = 0; c + 2 < e.n; c += kColumnsPerDispatch)
    launch(stream, p, kHessenberg, static_cast<int32_t>(c),
           static_cast<int32_t>(std::min<int64_t>(c + kColumnsPerDispatch, e.n)));
  launch(stream, p, kFormZ);
  record_qr(stream, p, general_eigen_qr_rounds(e.n));
  record_tail(stream, p, e.compute_vectors);
}

void general_eigen_resume(Stream& stream, const GeneralEigen& e, int rounds) {
  const Prepared p = prepare(stream, e);
  if (e.batch == 0 || e.n == 0 || rounds <= 0) return;
  record_qr(stream, p, rounds);
  record_tail(stream, p, e.compute_vectors);
}

}  // namespace tvk::kernels
