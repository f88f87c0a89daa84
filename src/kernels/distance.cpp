// Launcher of the distance family (shaders/distance.comp).
#include "kernels/distance.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/distance.comp.
struct DistancePush {
  uint64_t addr[5];
  uint64_t pd_bits;
  float pf;
  int32_t norm;
  int32_t numel;
  int32_t batch;
  int32_t r1;
  int32_t r2;
  int32_t m;
  int32_t dtype;
  uint64_t state;  // split passes (0: one pass)
  int32_t l_begin, l_end;
};
static_assert(sizeof(DistancePush) == 96);
static_assert(offsetof(DistancePush, pd_bits) == 40);
static_assert(offsetof(DistancePush, numel) == 56);

constexpr const char* kWhere = "tvk::kernels::distance";
constexpr uint32_t kWorkgroup = 256;

// The shader's NORM code for p (DistanceOpsKernel.cpp's specializations).
int32_t norm_code(double p) {
  if (p == 0) return 0;
  if (p == 1) return 1;
  if (p == 2) return 2;
  if (std::isinf(p)) return 3;
  return 4;
}

DistancePush make_push(Stream& stream, const Distance& d, int64_t outputs, std::initializer_list<Operand> operands,
                       bool& f64) {
  if (d.kind != ComputeKind::Float32 && d.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  f64 = d.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (!(d.p >= 0)) invalid(kWhere, "p must be non-negative");
  if (d.batch < 0 || d.r1 < 0 || d.r2 < 0 || d.m < 0) invalid(kWhere, "negative size");
  const int64_t sizes[] = {outputs, d.batch * d.r1 * d.m, d.batch * d.r2 * d.m, d.batch * d.r1 * d.r2};
  for (int64_t s : sizes)
    if (s > kMaxIndex) invalid(kWhere, "more elements than the kernel's 32-bit index range");
  DistancePush push{};
  int k = 0;
  DType dtype = DType::Float32;
  for (const Operand& op : operands) {
    if (op.address != 0) {
      check_operand(kWhere, op, "operand " + std::to_string(k), f64);
      if (k == 0) dtype = op.dtype;
      if (op.dtype != dtype) invalid(kWhere, "all operands must have one dtype");
    }
    push.addr[k++] = op.address;
  }
  if (dtype != DType::Float32 && dtype != DType::Float64) invalid(kWhere, "operands must be Float32 or Float64");
  if ((dtype == DType::Float64) != f64) invalid(kWhere, "the kind does not match the operands' dtype");
  std::memcpy(&push.pd_bits, &d.p, sizeof(double));
  push.pf = static_cast<float>(d.p);
  push.norm = norm_code(d.p);
  push.numel = static_cast<int32_t>(outputs);
  push.batch = static_cast<int32_t>(d.batch);
  push.r1 = static_cast<int32_t>(d.r1);
  push.r2 = static_cast<int32_t>(d.r2);
  push.m = static_cast<int32_t>(d.m);
  push.dtype = static_cast<int32_t>(dtype);
  return push;
}

// Records `op` over `items` outputs, each walking `walk` elements of one dim serially. Under a
// device loop limit (loop_budget) the walk is split into passes carrying each output's
// accumulator through a scratch buffer (see the shader); one dispatch otherwise.
void dispatch(Stream& stream, const char* op, bool f64, int64_t items, int64_t walk,
              DistancePush push) {
  const std::string name = std::string("distance.") + op + (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, {});
  const uint32_t groups = group_count(stream, items, kWorkgroup);
  const int64_t step = int64_t{groups} * kWorkgroup;
  const int64_t per_invocation = (items + step - 1) / step;
  // Per output: the grid-stride iteration, pdist's two row-search loops, the walk.
  const int64_t chunk = loop_chunk(stream, walk, per_invocation, 4 * per_invocation);
  if (chunk >= walk) {
    stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
    return;
  }
  Allocator& allocator = stream.device().allocator();
  const uint64_t state = allocator.allocate(static_cast<uint64_t>(items) * (f64 ? 8 : 4), stream.id());
  push.state = state;
  try {
    for (int64_t l0 = 0; l0 < walk; l0 += chunk) {
      push.l_begin = static_cast<int32_t>(l0);
      push.l_end = static_cast<int32_t>(std::min(walk, l0 + chunk));
      stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
    }
  } catch (...) {
    allocator.free(state);
    throw;
  }
  allocator.free(state);  // stream order: later reuse is ordered after these dispatches
}

}  // namespace

void cdist_forward(Stream& stream, const Distance& d, Operand x1, Operand x2, Operand out) {
  const int64_t outputs = d.batch * d.r1 * d.r2;
  if (outputs == 0) return;
  bool f64 = false;
  const DistancePush push = make_push(stream, d, outputs, {out, x1, x2}, f64);
  dispatch(stream, "cdist", f64, outputs, d.m, push);
}

void cdist_backward(Stream& stream, const Distance& d, Operand grad, Operand x1, Operand x2, Operand dist,
                    Operand grad_x1) {
  const int64_t outputs = d.batch * d.r1 * d.m;
  if (outputs == 0) return;
  bool f64 = false;
  const DistancePush push = make_push(stream, d, outputs, {grad_x1, x1, x2, grad, dist}, f64);
  dispatch(stream, "cdist_backward", f64, outputs, d.r2, push);
}

void pdist_forward(Stream& stream, const Distance& d, Operand x, Operand out) {
  if (d.batch != 1 || d.r1 != d.r2) invalid(kWhere, "pdist: batch must be 1 and r1 == r2");
  const int64_t outputs = d.r1 * (d.r1 - 1) / 2;
  if (outputs <= 0) return;
  bool f64 = false;
  const DistancePush push = make_push(stream, d, outputs, {out, x}, f64);
  dispatch(stream, "pdist", f64, outputs, d.m, push);
}

void pdist_backward(Stream& stream, const Distance& d, Operand grad, Operand x, Operand dist, Operand grad_x) {
  if (d.batch != 1 || d.r1 != d.r2) invalid(kWhere, "pdist: batch must be 1 and r1 == r2");
  const int64_t outputs = d.r1 * d.m;
  if (outputs == 0) return;
  bool f64 = false;
  const DistancePush push = make_push(stream, d, outputs, {grad_x, x, Operand{}, grad, dist}, f64);
  dispatch(stream, "pdist_backward", f64, outputs, d.r1, push);
}

}  // namespace tvk::kernels
