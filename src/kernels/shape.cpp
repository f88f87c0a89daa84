// Launchers of the shape family (shaders/shape.comp): one element per invocation with
// grid-stride loops, 256 invocations per workgroup.
#include "kernels/shape.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kWhere = "tvk::kernels::shape";
constexpr uint32_t kWorkgroup = 256;

struct RangePush {
  uint64_t out_addr;
  int64_t i_start;
  int64_t i_step;
  uint64_t start;
  uint64_t step;
  uint64_t end;
  uint64_t base;
  int32_t numel;
  int32_t out_dtype;
  int32_t mode;
  int32_t halfway;
};
static_assert(sizeof(RangePush) == 72);

struct TriPush {
  uint64_t in_addr;
  uint64_t out_addr;
  int32_t numel;
  int32_t rows;
  int32_t cols;
  int32_t diagonal;
  int32_t upper;
  int32_t pad;
};
static_assert(sizeof(TriPush) == 40);

struct PadPush {
  uint64_t in_addr;
  uint64_t out_addr;
  int32_t batch, d, h, w, od, oh, ow, pad_front, pad_top, pad_left, reflect, in_dtype, out_dtype;
  int32_t unused;  // the struct is 8-byte aligned
};
static_assert(sizeof(PadPush) == 72);

struct RepeatPush {
  uint64_t cumsum_addr;
  uint64_t out_addr;
  int32_t count;
  int32_t total;
  int32_t out_dtype;
  int32_t pad;
};
static_assert(sizeof(RepeatPush) == 32);

void check_operand(const Operand& op, const char* what) {
  check_dtype(kWhere, op.dtype, what);
  if (op.address == 0) invalid(kWhere, std::string(what) + ": address is 0");
  if (op.address % dtype_size(op.dtype) != 0)
    invalid(kWhere, std::string(what) + ": address is not aligned to its element size");
}

int64_t checked_product(std::initializer_list<int64_t> sizes) {
  int64_t numel = 1;
  for (int64_t s : sizes) {
    if (s < 0) invalid(kWhere, "negative size");
    if (__builtin_mul_overflow(numel, s, &numel) || numel > kMaxIndex)
      invalid(kWhere, "more elements than the kernel's 32-bit index range");
  }
  return numel;
}

void check_float64(Stream& stream, bool needed) {
  if (needed && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
}

// `accesses`: the memory the dispatch reads and writes (every operand is contiguous).
void launch(Stream& stream, const std::string& name, std::vector<uint32_t> spec, int64_t items,
            const void* push, uint32_t bytes, const AccessSet& accesses) {
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  stream.dispatch(pipeline, group_count(stream, items, kWorkgroup), 1, 1, push, bytes, nullptr, 0,
                  &accesses);
}

AccessSet reads_writes(const Operand& in, int64_t in_elements, const Operand& out,
                       int64_t out_elements) {
  AccessSet set;
  add_dense(set, in.address, in.dtype, in_elements, false);
  add_dense(set, out.address, out.dtype, out_elements, true);
  return set;
}

uint64_t double_bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}
uint64_t float_bits(double v) {
  const float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

}  // namespace

void range(Stream& stream, const Range& p) {
  const int64_t numel = checked_product({p.numel});
  if (numel == 0) return;
  check_operand(p.out, "output");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (p.kind != ComputeKind::Float32 && !f64 && p.kind != ComputeKind::Int64)
    invalid(kWhere, "range: the kind must be Float32, Float64 or Int64");
  if (p.kind == ComputeKind::Int64 && p.mode != Range::Mode::Arange)
    invalid(kWhere, "range: linspace / logspace need a float kind");
  if (p.out.dtype == DType::Float64 && p.kind == ComputeKind::Float32)
    invalid(kWhere, "range: float64 outputs need the Float64 or Int64 kind");
  check_float64(stream, f64 || p.out.dtype == DType::Float64);
  RangePush push{};
  push.out_addr = p.out.address;
  push.i_start = p.int_start;
  push.i_step = p.int_step;
  auto bits = f64 ? double_bits : float_bits;
  push.start = bits(p.start);
  push.step = bits(p.step);
  push.end = bits(p.end);
  push.base = bits(p.base);
  push.numel = static_cast<int32_t>(numel);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  push.mode = static_cast<int32_t>(p.mode);
  push.halfway = static_cast<int32_t>(numel / 2);
  AccessSet accesses;
  add_dense(accesses, p.out.address, p.out.dtype, numel, true);
  launch(stream, std::string("shape.range.") + compute_kind_name(p.kind), {}, numel, &push,
         sizeof(push), accesses);
}

void triangle(Stream& stream, bool upper, int64_t batch, int64_t rows, int64_t cols,
              int64_t diagonal, Operand out, Operand in) {
  const int64_t numel = checked_product({batch, rows, cols});
  if (numel == 0) return;
  check_operand(out, "output");
  check_operand(in, "input");
  if (in.dtype != out.dtype) invalid(kWhere, "triangle: input and output dtypes differ");
  check_float64(stream, in.dtype == DType::Float64);
  TriPush push{};
  push.in_addr = in.address;
  push.out_addr = out.address;
  push.numel = static_cast<int32_t>(numel);
  push.rows = static_cast<int32_t>(rows);
  push.cols = static_cast<int32_t>(cols);
  push.diagonal = static_cast<int32_t>(std::clamp<int64_t>(diagonal, -rows - 1, cols + 1));
  push.upper = upper ? 1 : 0;
  launch(stream, "shape.tri", {static_cast<uint32_t>(in.dtype)}, numel, &push, sizeof(push),
         reads_writes(in, numel, out, numel));
}

namespace {
// One padded dimension: input size n, output size out_n, leading pad `lead` (the trailing one is
// out_n - n - lead). Either pad may be negative (a crop). Reflection reads one mirror image, so
// a positive pad must stay below n.
void check_pad_dim(bool reflect, int64_t n, int64_t out_n, int64_t lead) {
  if (n < 0 || out_n < 0) invalid(kWhere, "pad: negative size");
  const int64_t trail = out_n - n - lead;
  if (reflect && out_n > 0 && (lead >= std::max<int64_t>(n, 1) || trail >= std::max<int64_t>(n, 1)))
    invalid(kWhere, "pad: reflection padding must be smaller than the input size");
}

PadPush pad_push(const Pad& g, Operand out, Operand in) {
  checked_product({g.batch, g.d, g.h, g.w});
  checked_product({g.batch, g.od, g.oh, g.ow});
  check_pad_dim(g.reflect, g.d, g.od, g.pad_front);
  check_pad_dim(g.reflect, g.h, g.oh, g.pad_top);
  check_pad_dim(g.reflect, g.w, g.ow, g.pad_left);
  for (const int64_t v : {g.pad_front, g.pad_top, g.pad_left, g.od - g.d - g.pad_front,
                          g.oh - g.h - g.pad_top, g.ow - g.w - g.pad_left})
    if (v < -kMaxIndex || v > kMaxIndex) invalid(kWhere, "pad: padding exceeds the 32-bit index range");
  check_operand(out, "output");
  check_operand(in, "input");
  PadPush push{};
  push.in_addr = in.address;
  push.out_addr = out.address;
  push.batch = static_cast<int32_t>(g.batch);
  push.d = static_cast<int32_t>(g.d);
  push.h = static_cast<int32_t>(g.h);
  push.w = static_cast<int32_t>(g.w);
  push.od = static_cast<int32_t>(g.od);
  push.oh = static_cast<int32_t>(g.oh);
  push.ow = static_cast<int32_t>(g.ow);
  push.pad_front = static_cast<int32_t>(g.pad_front);
  push.pad_top = static_cast<int32_t>(g.pad_top);
  push.pad_left = static_cast<int32_t>(g.pad_left);
  push.reflect = g.reflect ? 1 : 0;
  push.in_dtype = static_cast<int32_t>(in.dtype);
  push.out_dtype = static_cast<int32_t>(out.dtype);
  return push;
}
}  // namespace

void pad(Stream& stream, const Pad& g, Operand out, Operand in) {
  const PadPush push = pad_push(g, out, in);
  const int64_t numel = g.batch * g.od * g.oh * g.ow;
  if (numel == 0) return;
  if (g.batch * g.d * g.h * g.w == 0) invalid(kWhere, "pad: empty input with a non-empty output");
  if (in.dtype != out.dtype) invalid(kWhere, "pad: input and output dtypes differ");
  check_float64(stream, in.dtype == DType::Float64);
  launch(stream, "shape.pad", {static_cast<uint32_t>(in.dtype)}, numel, &push, sizeof(push),
         reads_writes(in, g.batch * g.d * g.h * g.w, out, numel));
}

void pad_backward(Stream& stream, const Pad& g, ComputeKind kind, Operand grad_in,
                  Operand grad_out) {
  const PadPush push = pad_push(g, grad_out, grad_in);
  // pad_push names the operands from the forward's point of view; swap them back.
  PadPush bw = push;
  bw.in_addr = grad_out.address;
  bw.out_addr = grad_in.address;
  bw.in_dtype = static_cast<int32_t>(grad_out.dtype);
  bw.out_dtype = static_cast<int32_t>(grad_in.dtype);
  const int64_t numel = g.batch * g.d * g.h * g.w;
  if (numel == 0) return;
  if (kind != ComputeKind::Float32 && kind != ComputeKind::Float64)
    invalid(kWhere, "pad_backward: the kind must be Float32 or Float64");
  const bool f64 = kind == ComputeKind::Float64;
  if (!f64 && (grad_in.dtype == DType::Float64 || grad_out.dtype == DType::Float64))
    invalid(kWhere, "pad_backward: float64 operands need the Float64 kind");
  check_float64(stream, f64);
  launch(stream, std::string("shape.pad_backward.") + compute_kind_name(kind), {}, numel, &bw,
         sizeof(bw), reads_writes(grad_out, g.batch * g.od * g.oh * g.ow, grad_in, numel));
}

void repeat_index(Stream& stream, int64_t count, int64_t total, Operand cumsum, Operand out) {
  checked_product({count});
  const int64_t numel = checked_product({total});
  if (numel == 0) return;
  check_operand(cumsum, "cumsum");
  check_operand(out, "output");
  if (cumsum.dtype != DType::Int64) invalid(kWhere, "repeat_index: cumsum must be int64");
  if (out.dtype != DType::Int32 && out.dtype != DType::Int64)
    invalid(kWhere, "repeat_index: the output must be int32 or int64");
  RepeatPush push{};
  push.cumsum_addr = cumsum.address;
  push.out_addr = out.address;
  push.count = static_cast<int32_t>(count);
  push.total = static_cast<int32_t>(total);
  push.out_dtype = static_cast<int32_t>(out.dtype);
  launch(stream, "shape.repeat_index", {}, numel, &push, sizeof(push),
         reads_writes(cumsum, count, out, numel));
}

}  // namespace tvk::kernels
