// Launcher of the complex element-wise family (shaders/complex.comp): one invocation per
// output element (grid-stride loop), the iteration geometry in the stream's parameter memory.
#include "kernels/complex.h"

#include <cstdlib>
#include <string>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kWhere = "tvk::kernels::complex_elementwise";
constexpr int kGeoDims = 8;  // CX_MAX_DIMS in complex.comp
static_assert(kMaxDims <= kGeoDims);

// Mirrors `Push` in shaders/complex.comp.
struct ComplexPush {
  uint64_t out_addr;
  uint64_t a_addr;
  uint64_t b_addr;
  uint64_t geo_addr;
  int32_t numel;
  int32_t op;
  int32_t a_dtype;
  int32_t b_dtype;
  int32_t out_dtype;
  int32_t flags;
};
static_assert(sizeof(ComplexPush) == 56);

// Mirrors `CxGeometry` in shaders/complex.comp.
struct ComplexGeometry {
  int32_t ndim;
  int32_t sizes[kGeoDims];
  int32_t strides[3 * kGeoDims];
};

bool known_op(int32_t op) { return op == 0 || op == 1 || (op >= 10 && op <= 17); }

void check_float(const Operand& op, const char* what, bool f64) {
  check_operand(kWhere, op, what, f64);
  if (op.dtype != DType::Float32 && op.dtype != DType::Float64)
    invalid(kWhere, std::string(what) + ": expected float32 / float64 scalars");
}

}  // namespace

void complex_elementwise(Stream& stream, const ComplexElementwise& p) {
  const int32_t opi = static_cast<int32_t>(p.op);
  if (!known_op(opi)) invalid(kWhere, "invalid op " + std::to_string(opi));
  if (p.kind != ComputeKind::Float32 && p.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.numel < 0) invalid(kWhere, "negative numel");
  if (p.numel == 0) return;
  if (p.numel > kMaxIndex) invalid(kWhere, "more elements than the kernel's 32-bit index range");
  const Geometry& g = p.geometry;
  if (g.ndim < 0 || g.ndim > kMaxDims) invalid(kWhere, "unsupported number of dims");
  const bool binary = complex_op_binary(p.op);
  check_float(p.out, "output", f64);
  check_float(p.a, "a", f64);
  if (binary) check_float(p.b, "b", f64);

  ComplexGeometry geo{};
  geo.ndim = g.ndim;
  int64_t count = 1;
  for (int d = 0; d < g.ndim; ++d) {
    if (g.sizes[d] <= 0) invalid(kWhere, "non-positive size in the geometry");
    count *= g.sizes[d];
    geo.sizes[d] = static_cast<int32_t>(g.sizes[d]);
  }
  if (count != p.numel) invalid(kWhere, "sizes do not multiply to numel");
  for (int o = 0; o < 3; ++o) {
    if (o == 2 && !binary) continue;
    int64_t span = 1;  // + 1: the imaginary scalar after the farthest real part
    for (int d = 0; d < g.ndim; ++d) {
      span += (g.sizes[d] - 1) * std::llabs(g.strides[o][d]);
      geo.strides[o * kGeoDims + d] = static_cast<int32_t>(g.strides[o][d]);
    }
    if (span > kMaxIndex) invalid(kWhere, "scalar offsets beyond the 32-bit index range");
  }

  const std::string name = f64 ? "complex.float64" : "complex.float32";
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  ComplexPush push{};
  push.out_addr = p.out.address;
  push.a_addr = p.a.address;
  push.b_addr = binary ? p.b.address : p.a.address;
  push.geo_addr = stream.upload_params(&geo, sizeof geo);
  push.numel = static_cast<int32_t>(p.numel);
  push.op = opi;
  push.a_dtype = static_cast<int32_t>(p.a.dtype);
  push.b_dtype = static_cast<int32_t>(binary ? p.b.dtype : p.a.dtype);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  push.flags = (p.conj_a ? 1 : 0) | (binary && p.conj_b ? 2 : 0);
  constexpr uint32_t kWorkgroup = 128;
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, {});
  stream.dispatch(pipeline, group_count(stream, p.numel, kWorkgroup), 1, 1, &push, sizeof(push));
}

}  // namespace tvk::kernels
