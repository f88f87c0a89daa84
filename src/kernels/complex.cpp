// Launchers of the complex kernel family (shaders/complex.comp): element-wise ops (one
// invocation per output element, grid-stride loop) and products along rows (cumprod / prod).
// The iteration geometry and any host input values go to the stream's parameter memory.
// Every op is its own shader variant, so a pipeline carries only its op's code (no register
// pressure or driver compile time of the other ops).
#include "kernels/complex.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kWhere = "tvk::kernels::complex_elementwise";
constexpr const char* kWhereRows = "tvk::kernels::complex_rows";
constexpr int kGeoDims = 8;  // CX_MAX_DIMS in complex.comp
static_assert(kMaxDims <= kGeoDims);

// Mirrors `Push` of the element-wise entry point in shaders/complex.comp.
struct ComplexPush {
  uint64_t out_addr;
  uint64_t a_addr;
  uint64_t b_addr;
  uint64_t geo_addr;
  int32_t numel;
  int32_t a_dtype;
  int32_t b_dtype;
  int32_t out_dtype;
  int32_t flags;
  int32_t pad;
};
static_assert(sizeof(ComplexPush) == 56);

// Mirrors `CxGeometry` in shaders/complex.comp, followed by the host input values (read by
// the kernel as ordinary operands with stride 0).
struct ComplexParams {
  int32_t ndim;
  int32_t sizes[kGeoDims];
  int32_t strides[3 * kGeoDims];
  int32_t pad;
  double host_f64[2][2];  // [input a / b][re, im]
  float host_f32[2][2];
};
static_assert(offsetof(ComplexParams, host_f64) % 8 == 0);

// Mirrors the rows entry point's `Push` and `CxRowsGeometry`.
struct RowsPush {
  uint64_t out_addr;
  uint64_t in_addr;
  uint64_t geo_addr;
  int32_t rows;
  int32_t n;
  int32_t in_dtype;
  int32_t out_dtype;
  int32_t flags;
  int32_t start;
  uint64_t carry_addr;
  int32_t count;
  int32_t pad;
};
static_assert(sizeof(RowsPush) == 64);

struct RowsGeometry {
  int32_t ndim;
  int32_t sizes[kGeoDims];
  int32_t strides[2 * kGeoDims];
  int32_t rdim;
  int32_t rsizes[kGeoDims];
  int32_t rstrides[2 * kGeoDims];
};

// The variant name of each op (complex.variants.toml); nullptr for unknown ops.
const char* op_name(int32_t op) {
  switch (op) {
    case 0: return "mul";
    case 1: return "div";
    case 2: return "pow";
    case 3: return "tanh_backward";
    case 4: return "sigmoid_backward";
    case 10: return "exp";
    case 11: return "log";
    case 12: return "sqrt";
    case 13: return "reciprocal";
    case 14: return "sgn";
    case 15: return "angle";
    case 16: return "abs";
    case 17: return "conj";
    case 18: return "sin";
    case 19: return "cos";
    case 20: return "tan";
    case 21: return "asin";
    case 22: return "acos";
    case 23: return "atan";
    case 24: return "sinh";
    case 25: return "cosh";
    case 26: return "tanh";
    case 27: return "asinh";
    case 28: return "acosh";
    case 29: return "atanh";
    case 30: return "log2";
    case 31: return "log10";
    case 32: return "log1p";
    case 33: return "expm1";
    case 34: return "rsqrt";
    case 35: return "sigmoid";
    case 36: return "square";
    case 37: return "cube";
    case 38: return "inv_square";
    case 39: return "exp2";
    default: return nullptr;
  }
}

void check_kind(ComputeKind kind, Stream& stream, const char* where) {
  if (kind != ComputeKind::Float32 && kind != ComputeKind::Float64)
    invalid(where, "the kind must be Float32 or Float64");
  if (kind == ComputeKind::Float64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
}

// A complex operand (or output) stores float32 / float64 scalars; a real input any dtype.
void check_complex_operand(const char* where, const Operand& op, const char* what, bool f64) {
  check_operand(where, op, what, f64);
  if (op.dtype != DType::Float32 && op.dtype != DType::Float64)
    invalid(where, std::string(what) + ": expected float32 / float64 scalars");
}
void check_input(const char* where, const ComplexInput& in, const char* what, bool f64) {
  if (in.host) return;
  if (in.real) check_operand(where, in.data, what, f64);
  else check_complex_operand(where, in.data, what, f64);
}

// Sizes of `g` into `sizes` (checked positive, multiplying to `numel`).
void store_sizes(const char* where, const Geometry& g, int64_t numel, int32_t* sizes) {
  if (g.ndim < 0 || g.ndim > kMaxDims) invalid(where, "unsupported number of dims");
  int64_t count = 1;
  for (int d = 0; d < g.ndim; ++d) {
    if (g.sizes[d] <= 0) invalid(where, "non-positive size in the geometry");
    count *= g.sizes[d];
    sizes[d] = static_cast<int32_t>(g.sizes[d]);
  }
  if (count != numel) invalid(where, "sizes do not multiply to the element count");
}

// Strides of operand `o` of `g` into `strides`, checking the 32-bit offset range (`unit`: the
// scalars one element spans, 2 for complex operands: the imaginary part after the farthest
// real part).
void store_strides(const char* where, const Geometry& g, int o, int unit, int32_t* strides) {
  int64_t span = unit;
  for (int d = 0; d < g.ndim; ++d) {
    span += (g.sizes[d] - 1) * std::llabs(g.strides[o][d]);
    strides[d] = static_cast<int32_t>(g.strides[o][d]);
  }
  if (span > kMaxIndex) invalid(where, "scalar offsets beyond the 32-bit index range");
}

int32_t input_flags(const ComplexInput& in, int conj_bit, int real_bit) {
  return (in.conj && !in.host && !in.real ? conj_bit : 0) | (in.real && !in.host ? real_bit : 0);
}

}  // namespace

// Declares operand k of `first` (and of `second`, where given: a row's elements) with scalar
// strides, its elements (re, im) pairs unless `real` (hazard tracking).
void add_operand(AccessSet& set, uint64_t address, DType dtype, const Geometry& first,
                 const Geometry* second, int k, bool real, bool write) {
  int64_t sizes[2 * kMaxDims + 1], strides[2 * kMaxDims + 1];
  int n = 0;
  for (const Geometry* g : {&first, second}) {
    if (!g) continue;
    for (int d = 0; d < g->ndim; ++d) sizes[n] = g->sizes[d], strides[n++] = g->strides[k][d];
  }
  sizes[n] = real ? 1 : 2, strides[n++] = 1;
  add_strided(set, address, dtype, n, sizes, strides, write);
}

void complex_elementwise(Stream& stream, const ComplexElementwise& p) {
  const int32_t opi = static_cast<int32_t>(p.op);
  const char* op_variant = op_name(opi);
  if (!op_variant) invalid(kWhere, "invalid op " + std::to_string(opi));
  check_kind(p.kind, stream, kWhere);
  const bool f64 = p.kind == ComputeKind::Float64;
  if (p.numel < 0) invalid(kWhere, "negative numel");
  if (p.numel == 0) return;
  if (p.numel > kMaxIndex) invalid(kWhere, "more elements than the kernel's 32-bit index range");
  const bool binary = complex_op_binary(p.op);
  check_complex_operand(kWhere, p.out, "output", f64);
  check_input(kWhere, p.a, "a", f64);
  if (binary) check_input(kWhere, p.b, "b", f64);

  ComplexParams params{};
  const Geometry& g = p.geometry;
  store_sizes(kWhere, g, p.numel, params.sizes);
  params.ndim = g.ndim;
  const ComplexInput* inputs[2] = {&p.a, &p.b};
  store_strides(kWhere, g, 0, complex_op_real_output(p.op) ? 1 : 2, &params.strides[0]);
  for (int i = 0; i < (binary ? 2 : 1); ++i) {
    const ComplexInput& in = *inputs[i];
    if (in.host) {
      params.host_f64[i][0] = in.value[0];
      params.host_f64[i][1] = in.value[1];
      params.host_f32[i][0] = static_cast<float>(in.value[0]);
      params.host_f32[i][1] = static_cast<float>(in.value[1]);
      continue;  // strides stay 0
    }
    store_strides(kWhere, g, i + 1, in.real ? 1 : 2, &params.strides[(i + 1) * kGeoDims]);
  }

  const std::string name =
      std::string("complex.") + op_variant + (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  ComplexPush push{};
  push.geo_addr = stream.upload_params(&params, sizeof params);
  const uint64_t host_addr[2] = {
      push.geo_addr + (f64 ? offsetof(ComplexParams, host_f64[0]) : offsetof(ComplexParams, host_f32[0])),
      push.geo_addr + (f64 ? offsetof(ComplexParams, host_f64[1]) : offsetof(ComplexParams, host_f32[1]))};
  const DType host_dtype = f64 ? DType::Float64 : DType::Float32;
  auto address = [&](const ComplexInput& in, int i) { return in.host ? host_addr[i] : in.data.address; };
  auto dtype = [&](const ComplexInput& in) {
    return static_cast<int32_t>(in.host ? host_dtype : in.data.dtype);
  };
  const ComplexInput& b = binary ? p.b : p.a;
  push.out_addr = p.out.address;
  push.a_addr = address(p.a, 0);
  push.b_addr = address(b, binary ? 1 : 0);
  push.numel = static_cast<int32_t>(p.numel);
  push.a_dtype = dtype(p.a);
  push.b_dtype = dtype(b);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  push.flags = input_flags(p.a, 1, 4) | (binary ? input_flags(p.b, 2, 8) : 0);
  constexpr uint32_t kWorkgroup = 128;
  VkPipeline pipeline =
      stream.device().pipelines().get(*shader, kWorkgroup, {static_cast<uint32_t>(opi)});
  AccessSet accesses;  // host values live in the parameter block: nothing to declare
  add_operand(accesses, p.out.address, p.out.dtype, g, nullptr, 0, complex_op_real_output(p.op), true);
  for (int i = 0; i < (binary ? 2 : 1); ++i)
    if (!inputs[i]->host)
      add_operand(accesses, inputs[i]->data.address, inputs[i]->data.dtype, g, nullptr, i + 1,
                  inputs[i]->real, false);
  stream.dispatch(pipeline, group_count(stream, p.numel, kWorkgroup), 1, 1, &push, sizeof(push),
                  nullptr, 0, &accesses);
}

void complex_rows(Stream& stream, const ComplexRows& p) {
  if (p.op != ComplexRowsOp::CumProd && p.op != ComplexRowsOp::Prod)
    invalid(kWhereRows, "invalid op " + std::to_string(static_cast<int32_t>(p.op)));
  check_kind(p.kind, stream, kWhereRows);
  const bool f64 = p.kind == ComputeKind::Float64;
  if (p.num_rows < 0 || p.row_length < 0) invalid(kWhereRows, "negative size");
  if (p.num_rows == 0) return;
  if (p.num_rows > kMaxIndex || p.row_length > kMaxIndex)
    invalid(kWhereRows, "more elements than the kernel's 32-bit index range");
  if (p.in.host) invalid(kWhereRows, "host inputs are not supported");
  check_complex_operand(kWhereRows, p.out, "output", f64);
  if (p.row_length > 0) check_input(kWhereRows, p.in, "in", f64);  // empty rows read nothing
  const bool scan = p.op == ComplexRowsOp::CumProd;

  RowsGeometry geo{};
  store_sizes(kWhereRows, p.rows, p.num_rows, geo.sizes);
  geo.ndim = p.rows.ndim;
  store_strides(kWhereRows, p.rows, 0, 2, &geo.strides[0]);
  store_strides(kWhereRows, p.rows, 1, p.in.real ? 1 : 2, &geo.strides[kGeoDims]);
  if (p.row_length > 0) {
    store_sizes(kWhereRows, p.along, p.row_length, geo.rsizes);
    geo.rdim = p.along.ndim;
    if (scan) store_strides(kWhereRows, p.along, 0, 2, &geo.rstrides[0]);
    store_strides(kWhereRows, p.along, 1, p.in.real ? 1 : 2, &geo.rstrides[kGeoDims]);
  }

  const std::string name = f64 ? "complex_rows.float64" : "complex_rows.float32";
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhereRows, "no shader variant '" + name + "' (stale build?)");
  RowsPush push{};
  push.out_addr = p.out.address;
  push.in_addr = p.in.data.address;
  push.geo_addr = stream.upload_params(&geo, sizeof geo);
  push.rows = static_cast<int32_t>(p.num_rows);
  push.n = static_cast<int32_t>(p.row_length);
  push.in_dtype = static_cast<int32_t>(p.in.data.dtype);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  push.flags = input_flags(p.in, 1, 4);
  // A workgroup per row where rows are long and few enough to leave lanes idle otherwise.
  const bool per_workgroup = !scan && p.row_length >= 64 && p.num_rows < 4096;
  const uint32_t workgroup = per_workgroup ? 128 : 64;
  VkPipeline pipeline = stream.device().pipelines().get(
      *shader, workgroup, {static_cast<uint32_t>(p.op), per_workgroup ? 1u : 0u});
  const uint32_t groups = per_workgroup ? group_count(stream, p.num_rows, 1)
                                        : group_count(stream, p.num_rows, workgroup);
  // Loop iterations per invocation: `per_invocation` rows, each decoding its row index (ndim
  // steps) and walking its elements (2 + rdim steps each; per workgroup: a strided share plus
  // the log2 tree).
  const int64_t lanes = per_workgroup ? int64_t{groups} : int64_t{groups} * workgroup;
  const int64_t per_invocation = (p.num_rows + lanes - 1) / lanes;
  // (Measured on lavapipe: an element of a one-dim row costs three iterations.)
  const int64_t per_element = 2 + std::max<int64_t>(geo.rdim, 1);
  int64_t count = p.row_length;
  if (per_workgroup) {
    const int64_t shares_total = (p.row_length + workgroup - 1) / workgroup;
    // The tree: log2(128) steps of one iteration and one barrier, plus two barriers.
    const int64_t shares = loop_chunk(stream, shares_total, per_invocation * per_element,
                                      per_invocation * (geo.ndim + 2 * 7 + 4));
    count = shares >= shares_total ? p.row_length : shares * workgroup;
  } else {
    count = loop_chunk(stream, p.row_length, per_invocation * per_element,
                       per_invocation * (geo.ndim + 2));
  }
  count = std::max<int64_t>(count, 1);
  Allocator& allocator = stream.device().allocator();
  const uint64_t carries =
      count < p.row_length
          ? allocator.allocate(static_cast<uint64_t>(p.num_rows) * 2 * (f64 ? 8 : 4), stream.id())
          : 0;
  push.carry_addr = carries;
  push.count = static_cast<int32_t>(count);
  AccessSet accesses;  // out: one value per row (Prod) or the row's (CumProd)
  add_operand(accesses, p.out.address, p.out.dtype, p.rows, scan ? &p.along : nullptr, 0, false, true);
  if (p.row_length > 0)
    add_operand(accesses, p.in.data.address, p.in.data.dtype, p.rows, &p.along, 1, p.in.real, false);
  // The carries between the dispatches (read and written by each: a write range covers both).
  if (carries) add_dense(accesses, carries, f64 ? DType::Float64 : DType::Float32, 2 * p.num_rows, true);
  try {
    // An empty row still runs one dispatch: prod writes its identity.
    int64_t start = 0;
    do {
      push.start = static_cast<int32_t>(start);
      stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
      start += count;
    } while (start < p.row_length);
  } catch (...) {
    if (carries) allocator.free(carries);
    throw;
  }
  // Stream order makes the immediate free safe: later reuse is ordered after the dispatches.
  if (carries) allocator.free(carries);
}

}  // namespace tvk::kernels
