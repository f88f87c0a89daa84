// Launcher of the scan family (shaders/scan.comp).
//
// Strategies:
//   Workgroup  one workgroup per row walking it in tiles (coalesced when the scanned dim is
//              innermost): for long innermost rows.
//   Thread     one invocation per row with a serial scan: for short rows and for non-innermost
//              dims with many rows (adjacent invocations read adjacent elements).
#include "kernels/scan.h"

#include <algorithm>
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

// Mirrors `Push` in shaders/scan.comp.
struct ScanPush {
  uint64_t in_addr;
  uint64_t out_addr;
  int32_t rows;
  int32_t dim;
  int32_t inner;
  int32_t in_dtype;
  int32_t out_dtype;
  int32_t start;
  uint64_t idx_addr;
  uint64_t carry_addr;
  uint64_t carry_idx_addr;
  int32_t count;
  int32_t pad;
};
static_assert(sizeof(ScanPush) == 72);

const char* op_name(ScanOp op) {
  switch (op) {
    case ScanOp::Sum: return "sum";
    case ScanOp::Prod: return "prod";
    case ScanOp::LogAddExp: return "lse";
    case ScanOp::Max: return "max";
    case ScanOp::Min: return "min";
  }
  return "invalid";
}

constexpr const char* kWhere = "tvk::kernels::scan";
constexpr int kModeWorkgroup = 0;
constexpr int kModeThread = 1;

}  // namespace

ScanTuning& scan_tuning() {
  static ScanTuning t;
  return t;
}

void scan(Stream& stream, const Scan& p) {
  const int opi = static_cast<int>(p.op);
  if (opi < 0 || opi > 4) invalid(kWhere, "invalid op " + std::to_string(opi));
  ComputeKind acc = p.acc;
  if (acc == ComputeKind::Int32) acc = ComputeKind::Int64;
  const int acci = static_cast<int>(acc);
  if (acci < 0 || acci > 3) invalid(kWhere, "invalid accumulator kind " + std::to_string(acci));
  if (acc == ComputeKind::Float64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  const bool pair = p.op == ScanOp::Max || p.op == ScanOp::Min;
  if (p.op == ScanOp::LogAddExp && acc != ComputeKind::Float32 && acc != ComputeKind::Float64)
    invalid(kWhere, "logcumsumexp needs a float accumulator");
  check_dtype(kWhere, p.out.dtype, "output");
  if (pair && p.indices.dtype != DType::Int64) invalid(kWhere, "indices must be int64");
  check_dtype(kWhere, p.in.dtype, "input");
  if ((p.out.dtype == DType::Float64 || p.in.dtype == DType::Float64) && acc != ComputeKind::Float64)
    invalid(kWhere, "float64 operands need the float64 accumulator");
  if (p.outer < 0 || p.dim < 0 || p.inner < 0) invalid(kWhere, "negative size");
  if (p.outer == 0 || p.dim == 0 || p.inner == 0) return;
  int64_t numel = 0;
  if (__builtin_mul_overflow(p.outer, p.dim, &numel) ||
      __builtin_mul_overflow(numel, p.inner, &numel) || numel > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");
  for (const Operand* op : {&p.out, &p.in, &p.indices}) {
    if (op == &p.indices && !pair) continue;
    if (op->address == 0) invalid(kWhere, "operand address is 0");
    if (op->address % dtype_size(op->dtype) != 0)
      invalid(kWhere, "operand address is not aligned to its element size");
  }

  const int64_t rows = p.outer * p.inner;
  const ScanTuning& t = scan_tuning();
  using S = ScanTuning::Strategy;
  S strategy = t.strategy;
  if (strategy == S::Auto) {
    if (p.inner == 1)
      strategy = p.dim > 64 ? S::Workgroup : S::Thread;
    else
      strategy = (rows >= 1024 || p.dim <= 64) ? S::Thread : S::Workgroup;
  }
  const int mode = strategy == S::Thread ? kModeThread : kModeWorkgroup;
  const uint32_t wg = mode == kModeThread ? 64 : std::max<uint32_t>(t.workgroup, 1);

  const DeviceCapabilities& caps = stream.device().caps();
  std::string name = std::string("scan.") + op_name(p.op) + "." + compute_kind_name(acc);
  const bool subgroup_variant = opi <= 1 && acc == ComputeKind::Float32 &&
                                mode == kModeWorkgroup && t.subgroups && caps.subgroup_basic &&
                                caps.subgroup_arithmetic;
  if (subgroup_variant) name += ".subgroup";
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  ScanPush push{};
  push.in_addr = p.in.address;
  push.out_addr = p.out.address;
  push.rows = static_cast<int32_t>(rows);
  push.dim = static_cast<int32_t>(p.dim);
  push.inner = static_cast<int32_t>(p.inner);
  push.in_dtype = static_cast<int32_t>(p.in.dtype);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  push.idx_addr = pair ? p.indices.address : 0;
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(p.in.dtype), static_cast<uint32_t>(p.out.dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX};
  spec.push_back(static_cast<uint32_t>(mode));
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  const uint32_t groups = group_count(stream, rows, mode == kModeThread ? wg : 1);

  // Loop iterations per invocation: each invocation (thread mode) / workgroup (workgroup
  // mode) walks `per_invocation` rows; a row costs one iteration per element (thread) or per
  // tile plus the tile's workgroup scan. lavapipe counts every barrier() as an iteration too:
  // the shared-memory scan runs log2(wg) steps of one iteration and two barriers, the
  // subgroup scan one iteration per subgroup; both add two barriers.
  const int64_t lanes = mode == kModeThread ? int64_t{groups} * wg : int64_t{groups};
  const int64_t per_invocation = (rows + lanes - 1) / lanes;
  int64_t count = p.dim;
  if (mode == kModeThread) {
    count = loop_chunk(stream, p.dim, per_invocation, 2 * per_invocation);
  } else {
    const int64_t log2_wg = 31 - __builtin_clz(wg);
    const int64_t scan_cost = subgroup_variant ? wg / std::max<uint32_t>(caps.subgroup_size, 1) + 2
                                               : 3 * log2_wg + 2;
    const int64_t tiles_total = (p.dim + wg - 1) / wg;
    const int64_t tiles =
        loop_chunk(stream, tiles_total, per_invocation * (scan_cost + 2), per_invocation * 2);
    count = tiles >= tiles_total ? p.dim : tiles * wg;
  }
  uint64_t carries = 0, carry_indices = 0;
  Allocator& allocator = stream.device().allocator();
  if (count < p.dim) {
    carries = allocator.allocate(static_cast<uint64_t>(rows) * 8, stream.id());
    if (pair) {
      try {
        carry_indices = allocator.allocate(static_cast<uint64_t>(rows) * 4, stream.id());
      } catch (...) {
        allocator.free(carries);
        throw;
      }
    }
  }
  push.carry_addr = carries;
  push.carry_idx_addr = carry_indices;
  push.count = static_cast<int32_t>(count);
  // Dense [outer, dim, inner] operands: the input read (it may be the output: in-place), the
  // output and the indices written; the carries of chunked rows read and written (each chunk
  // continues the previous one's).
  AccessSet accesses;
  add_dense(accesses, p.in.address, p.in.dtype, numel, false);
  add_dense(accesses, p.out.address, p.out.dtype, numel, true);
  if (pair) add_dense(accesses, p.indices.address, DType::Int64, numel, true);
  for (auto [address, bytes] : {std::pair{carries, rows * 8}, std::pair{carry_indices, rows * 4}})
    if (address != 0) {
      accesses.read(address, static_cast<uint64_t>(bytes));
      accesses.write(address, static_cast<uint64_t>(bytes));
    }
  try {
    for (int64_t start = 0; start < p.dim; start += count) {
      push.start = static_cast<int32_t>(start);
      stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
    }
  } catch (...) {
    if (carries) allocator.free(carries);
    if (carry_indices) allocator.free(carry_indices);
    throw;
  }
  // Stream order makes the immediate free safe: later reuse is ordered after the dispatches.
  if (carries) allocator.free(carries);
  if (carry_indices) allocator.free(carry_indices);
}

}  // namespace tvk::kernels
