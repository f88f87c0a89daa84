// Launcher of the reduction kernel (shaders/reduce.comp).
//
// Strategies (chosen per call, see choose_strategy):
//   Thread     one thread per output, a serial loop over the reduced elements: small reduced
//              sizes, or outer reductions where adjacent outputs are adjacent in memory.
//   Workgroup  one workgroup per output: per-thread strided partials, then a shared-memory tree
//              (or subgroup arithmetic where the device has it).
//   Split      few outputs with a large reduced size: pass 1 reduces chunks of each output into
//              a temporary buffer of accumulators, pass 2 reduces the partials (more
//              parallelism, shorter serial sums).
//
// The same kernel does the arg reductions (argmax / argmin: value and index; the split
// strategy keeps partial indices next to partial values) and the transformed reductions of
// ReduceExtra (norms, variance about a center, logsumexp, all / any).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/reduce.comp (std430).
struct ReducePush {
  uint64_t in_addr;
  uint64_t out_addr;
  uint64_t geometry;
  uint64_t scale_bits;  // double
  float scale_f;
  int32_t out_numel;
  int32_t red_numel;
  int32_t out_ndim;
  int32_t red_ndim;
  int32_t in_dtype;
  int32_t out_dtype;
  int32_t split;
  int32_t chunk;
  int32_t red_stride0;
  int32_t out_stride0;
  int32_t out_in_stride0;
  uint64_t aux_addr;
  uint64_t idx_addr;
  uint64_t p_bits;  // double
  float p_f;
  int32_t idx_stride0;
};
static_assert(sizeof(ReducePush) == 112);
static_assert(sizeof(ReducePush) <= kMaxPushConstantBytes);
static_assert(offsetof(ReducePush, scale_f) == 32);
static_assert(offsetof(ReducePush, split) == 60);
static_assert(offsetof(ReducePush, out_in_stride0) == 76);
static_assert(offsetof(ReducePush, aux_addr) == 80);
static_assert(offsetof(ReducePush, p_f) == 104);

// Mirrors `ReduceGeometry` in shaders/reduce.comp.
struct ReduceGeometryBlock {
  int32_t out_sizes[kMaxDims];
  int32_t out_strides[kMaxDims];
  int32_t out_in_strides[kMaxDims];
  int32_t red_sizes[kMaxDims];
  int32_t red_strides[kMaxDims];
  int32_t idx_strides[kMaxDims];
};
static_assert(sizeof(ReduceGeometryBlock) == 192);

constexpr const char* kWhere = "tvk::kernels::reduce";
constexpr const char* kArgWhere = "tvk::kernels::arg_reduce";
constexpr int kModeWorkgroup = 0;
constexpr int kModeThread = 1;

const char* op_name(ReduceOp op, bool arg) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return arg ? "argmax" : "max";
    case ReduceOp::Min: return arg ? "argmin" : "min";
  }
  return "?";
}

// One dispatch of reduce.comp. `out_dims` strides: [0] output, [1] input, [2] index output;
// `red_dims` strides: [0] input.
struct Pass {
  Dims out_dims;
  Dims red_dims;
  int64_t out_numel = 0;
  int64_t red_numel = 0;
  uint64_t in_addr = 0, out_addr = 0, aux_addr = 0, idx_addr = 0;
  DType in_dtype = DType::Float32, out_dtype = DType::Float32;
  double scale = 1.0;
  double p = 2.0;
  ReducePre pre = ReducePre::None;
  ReducePost post = ReducePost::None;
  bool arg = false;
  int mode = kModeWorkgroup;
  int64_t split = 1, chunk = 0;
};

DType acc_storage(ComputeKind acc);

// What one pass reads and writes. The input is indexed by the output dims (strides[1]) and
// the reduced dims together; split-mode partials are contiguous, out_numel * split elements.
AccessSet pass_accesses(ComputeKind acc, const Pass& p) {
  AccessSet set;
  int64_t sizes[2 * kMaxDims], strides[2 * kMaxDims];
  int n = 0;
  for (int d = 0; d < p.out_dims.ndim; ++d, ++n) {
    sizes[n] = p.out_dims.sizes[d];
    strides[n] = p.out_dims.strides[1][d];
  }
  for (int d = 0; d < p.red_dims.ndim; ++d, ++n) {
    sizes[n] = p.red_dims.sizes[d];
    strides[n] = p.red_dims.strides[0][d];
  }
  add_strided(set, p.in_addr, p.in_dtype, n, sizes, strides, false);
  if (p.arg && p.aux_addr != 0)  // pass 2 of a split arg reduction: indices like the input
    add_strided(set, p.aux_addr, DType::Int64, n, sizes, strides, false);
  else  // the center, laid out like the output
    add_dims(set, p.aux_addr, acc_storage(acc), p.out_dims, 0, false);
  if (p.split > 1) {
    add_dense(set, p.out_addr, p.out_dtype, p.out_numel * p.split, true);
    add_dense(set, p.idx_addr, DType::Int64, p.out_numel * p.split, true);
  } else {
    add_dims(set, p.out_addr, p.out_dtype, p.out_dims, 0, true);
    add_dims(set, p.idx_addr, DType::Int64, p.out_dims, 2, true);
  }
  return set;
}

void record(Stream& stream, ReduceOp op, ComputeKind acc, const Pass& p) {
  const DeviceCapabilities& caps = stream.device().caps();
  std::string name = std::string("reduce.") + op_name(op, p.arg) + "." +
                     (acc == ComputeKind::Float64 ? "float64"
                      : acc == ComputeKind::Float32 ? "float32"
                                                    : "int64");
  if (acc == ComputeKind::Float32 && p.mode == kModeWorkgroup && tuning().reduce_subgroups &&
      caps.subgroup_basic && caps.subgroup_vote && caps.subgroup_arithmetic)
    name += ".subgroup";
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  ReducePush push{};
  push.in_addr = p.in_addr;
  push.out_addr = p.out_addr;
  push.aux_addr = p.aux_addr;
  push.idx_addr = p.idx_addr;
  std::memcpy(&push.scale_bits, &p.scale, sizeof(double));
  push.scale_f = static_cast<float>(p.scale);
  std::memcpy(&push.p_bits, &p.p, sizeof(double));
  push.p_f = static_cast<float>(p.p);
  push.out_numel = static_cast<int32_t>(p.out_numel);
  push.red_numel = static_cast<int32_t>(p.red_numel);
  push.out_ndim = p.out_dims.ndim;
  push.red_ndim = p.red_dims.ndim;
  push.in_dtype = static_cast<int32_t>(p.in_dtype);
  push.out_dtype = static_cast<int32_t>(p.out_dtype);
  push.split = static_cast<int32_t>(p.split);
  push.chunk = static_cast<int32_t>(p.split > 1 ? p.chunk : p.red_numel);
  if (p.red_dims.ndim == 1) push.red_stride0 = static_cast<int32_t>(p.red_dims.strides[0][0]);
  if (p.out_dims.ndim == 1) {
    push.out_stride0 = static_cast<int32_t>(p.out_dims.strides[0][0]);
    push.out_in_stride0 = static_cast<int32_t>(p.out_dims.strides[1][0]);
    push.idx_stride0 = static_cast<int32_t>(p.out_dims.strides[2][0]);
  }
  if (p.out_dims.ndim > 1 || p.red_dims.ndim > 1) {
    ReduceGeometryBlock block{};
    for (int d = 0; d < p.out_dims.ndim; ++d) {
      block.out_sizes[d] = static_cast<int32_t>(p.out_dims.sizes[d]);
      block.out_strides[d] = static_cast<int32_t>(p.out_dims.strides[0][d]);
      block.out_in_strides[d] = static_cast<int32_t>(p.out_dims.strides[1][d]);
      block.idx_strides[d] = static_cast<int32_t>(p.out_dims.strides[2][d]);
    }
    for (int d = 0; d < p.red_dims.ndim; ++d) {
      block.red_sizes[d] = static_cast<int32_t>(p.red_dims.sizes[d]);
      block.red_strides[d] = static_cast<int32_t>(p.red_dims.strides[0][d]);
    }
    push.geometry = stream.upload_params(&block, sizeof(block));
  }

  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(p.in_dtype), static_cast<uint32_t>(p.out_dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX};
  spec.push_back(static_cast<uint32_t>(p.mode));
  spec.push_back(static_cast<uint32_t>(p.pre));
  spec.push_back(static_cast<uint32_t>(p.post));
  uint32_t wg = tuning().reduce_workgroup;
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  int64_t items = p.mode == kModeThread ? p.out_numel : p.out_numel * p.split;
  uint32_t groups = group_count(stream, items, p.mode == kModeThread ? wg : 1);
  const AccessSet accesses = pass_accesses(acc, p);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
}

DType acc_storage(ComputeKind acc) {
  switch (acc) {
    case ComputeKind::Float32: return DType::Float32;
    case ComputeKind::Float64: return DType::Float64;
    default: return DType::Int64;
  }
}

// Checks shared by reduce and arg_reduce; returns the accumulator kind to use.
ComputeKind check_common(const char* where, Stream& stream, ReduceOp op, ComputeKind acc,
                         Operand out, Operand in) {
  int opi = static_cast<int>(op), acci = static_cast<int>(acc);
  if (opi < 0 || opi > 3) invalid(where, "invalid reduce op " + std::to_string(opi));
  if (acci < 0 || acci > 3) invalid(where, "invalid accumulator kind " + std::to_string(acci));
  if (acc == ComputeKind::Int32) acc = ComputeKind::Int64;  // integer sums accumulate in int64
  check_dtype(where, out.dtype, "output");
  check_dtype(where, in.dtype, "input");
  if (acc == ComputeKind::Float64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if ((out.dtype == DType::Float64 || in.dtype == DType::Float64) && acc != ComputeKind::Float64)
    invalid(where, "float64 operands need the float64 accumulator");
  return acc;
}

// Loop iterations one invocation of `p` runs (for loop_budget): the grid-stride loop over
// its outputs (work items), the index decoding loops over the dims, the reduced elements it
// accumulates and the workgroup tree (log2 steps, plus the subgroup partials' loop).
int64_t loop_cost(Stream& stream, const Pass& p, int mode, int64_t split, int64_t chunk) {
  const int64_t wg = tuning().reduce_workgroup;
  const int64_t items = mode == kModeThread ? p.out_numel : p.out_numel * split;
  const int64_t lanes = mode == kModeThread ? wg : 1;
  const int64_t groups = group_count(stream, items, static_cast<uint32_t>(lanes));
  const int64_t per_invocation = (items + groups * lanes - 1) / (groups * lanes);
  const int64_t per_element = p.red_dims.ndim > 1 ? 1 + p.red_dims.ndim : 1;
  const int64_t elements = mode == kModeThread ? p.red_numel : (chunk + wg - 1) / wg;
  const int64_t fixed = 1 + (p.out_dims.ndim > 1 ? p.out_dims.ndim : 0) +
                        (mode == kModeThread ? 0 : 2 * 9 + wg / 4);
  return per_invocation * (fixed + elements * per_element);
}

// Records `pass` (geometry, operands and transforms filled in) with the strategy chosen from
// the shape, splitting long reductions of few outputs over two passes. On devices that limit
// an invocation's loop iterations (loop_budget), a strategy whose invocations would run past
// the limit gives way: Thread to Workgroup, Workgroup to Split, Split to more partials.
void run(Stream& stream, ReduceOp op, ComputeKind acc, Pass pass) {
  const int64_t out_numel = pass.out_numel, reduced_numel = pass.red_numel;
  const Dims& out_dims = pass.out_dims;
  const Dims& red_dims = pass.red_dims;
  using S = Tuning::ReduceStrategy;
  S strategy = tuning().reduce_strategy;
  const int64_t chunk_target = std::max<uint32_t>(tuning().reduce_split_chunk, 1);
  if (strategy == S::Auto) {
    bool outer = out_dims.ndim > 0 && out_dims.strides[1][0] == 1 &&
                 (red_dims.ndim == 0 || red_dims.strides[0][0] != 1);
    if (reduced_numel <= 32 || (outer && out_numel >= 1024 && reduced_numel <= 65536))
      strategy = S::Thread;
    else if (out_numel < 256 && reduced_numel >= 4 * chunk_target)
      strategy = S::Split;
    else
      strategy = S::Workgroup;
  }
  const int64_t budget = loop_budget(stream);
  if (strategy == S::Thread && loop_cost(stream, pass, kModeThread, 1, 0) > budget)
    strategy = S::Workgroup;
  if (strategy == S::Workgroup &&
      loop_cost(stream, pass, kModeWorkgroup, 1, reduced_numel) > budget)
    strategy = S::Split;
  if (strategy == S::Split && reduced_numel < 2) strategy = S::Workgroup;

  if (strategy == S::Thread || strategy == S::Workgroup) {
    pass.mode = strategy == S::Thread ? kModeThread : kModeWorkgroup;
    record(stream, op, acc, pass);
    return;
  }

  // ---- split: pass 1 writes out_numel * split partial accumulators (contiguous, output-
  // major; arg reductions also their int64 indices), pass 2 reduces each output's partials.
  int64_t split = (reduced_numel + chunk_target - 1) / chunk_target;
  int64_t max_items = std::max<int64_t>(2, 4096 / out_numel);
  split = std::clamp<int64_t>(split, 2, std::min<int64_t>(max_items, reduced_numel));
  int64_t chunk = (reduced_numel + split - 1) / split;
  // Shorter chunks (more partials) while pass 1's invocations would exceed the loop budget.
  while (chunk > 1 && loop_cost(stream, pass, kModeWorkgroup, (reduced_numel + chunk - 1) / chunk,
                                chunk) > budget)
    chunk = (chunk + 1) / 2;
  split = (reduced_numel + chunk - 1) / chunk;  // no empty chunks
  if (out_numel * split > kMaxIndex) invalid(kWhere, "too many partial results");
  DType partial_dtype = acc_storage(acc);
  Allocator& allocator = stream.device().allocator();
  const uint64_t count = static_cast<uint64_t>(out_numel * split);
  uint64_t partials = allocator.allocate(count * dtype_size(partial_dtype), stream.id());
  uint64_t partial_idx = 0;
  try {
    if (pass.arg) partial_idx = allocator.allocate(count * sizeof(int64_t), stream.id());
    Pass p1 = pass;
    p1.mode = kModeWorkgroup;
    p1.split = split;
    p1.chunk = chunk;
    p1.out_addr = partials;
    p1.out_dtype = partial_dtype;
    p1.idx_addr = partial_idx;
    p1.scale = 1.0;
    p1.post = ReducePost::None;
    record(stream, op, acc, p1);

    Pass p2 = pass;
    p2.in_addr = partials;
    p2.in_dtype = partial_dtype;
    p2.pre = ReducePre::None;
    if (pass.arg) p2.aux_addr = partial_idx;
    // Output o's partials start at element o * split, o being the linear output index in
    // coalesced dim order (dim 0 fastest).
    int64_t linear = split;
    for (int d = 0; d < p2.out_dims.ndim; ++d) {
      p2.out_dims.strides[1][d] = linear;
      linear *= p2.out_dims.sizes[d];
    }
    p2.red_dims = Dims{};
    p2.red_dims.ndim = 1;
    p2.red_dims.sizes[0] = split;
    p2.red_dims.strides[0][0] = 1;
    p2.red_numel = split;
    p2.mode = split <= 32 ? kModeThread : kModeWorkgroup;
    record(stream, op, acc, p2);
  } catch (...) {
    allocator.free(partials);
    if (partial_idx) allocator.free(partial_idx);
    throw;
  }
  // Stream order makes the immediate free safe: later reuse is ordered after pass 2.
  allocator.free(partials);
  if (partial_idx) allocator.free(partial_idx);
}

// Coalesced dims of `geometry`; reduced strides moved to slot 0.
void coalesce_geometry(const char* where, const ReduceGeometry& geometry, int out_strides,
                       int64_t out_numel, int64_t reduced_numel, Dims& out_dims, Dims& red_dims) {
  out_dims = coalesce(where, geometry.out, out_strides, out_numel);
  Geometry red_geometry = geometry.reduced;
  for (int d = 0; d < kMaxDims; ++d) red_geometry.strides[0][d] = geometry.reduced.strides[1][d];
  red_dims = coalesce(where, red_geometry, 1, reduced_numel);
}

}  // namespace

void reduce(Stream& stream, ReduceOp op, ComputeKind acc, int64_t out_numel,
            int64_t reduced_numel, const ReduceGeometry& geometry, Operand out, Operand in,
            double scale, const ReduceExtra& extra) {
  acc = check_common(kWhere, stream, op, acc, out, in);
  const int pre = static_cast<int>(extra.pre), post = static_cast<int>(extra.post);
  if (pre < 0 || pre > static_cast<int>(ReducePre::NonZero))
    invalid(kWhere, "invalid pre-op " + std::to_string(pre));
  if (post < 0 || post > static_cast<int>(ReducePost::Truth))
    invalid(kWhere, "invalid post-op " + std::to_string(post));
  const bool float_acc = acc == ComputeKind::Float32 || acc == ComputeKind::Float64;
  const bool float_pre = extra.pre == ReducePre::AbsPow ||
                         extra.pre == ReducePre::SquaredDeviation ||
                         extra.pre == ReducePre::ExpDeviation;
  const bool float_post = extra.post == ReducePost::Sqrt || extra.post == ReducePost::Root ||
                          extra.post == ReducePost::LogPlusCenter;
  if (!float_acc && (float_pre || float_post))
    invalid(kWhere, "this pre/post-op needs a float accumulator");
  if (acc == ComputeKind::Int64 && scale != 1.0)
    invalid(kWhere, "scale must be 1 for integer accumulators (mean is for float kinds)");
  const bool needs_center = extra.pre == ReducePre::SquaredDeviation ||
                            extra.pre == ReducePre::ExpDeviation ||
                            extra.post == ReducePost::LogPlusCenter;
  if (needs_center && (extra.center == 0 || extra.center % dtype_size(acc_storage(acc)) != 0))
    invalid(kWhere, "this pre/post-op needs an aligned center array");

  Dims out_dims, red_dims;
  coalesce_geometry(kWhere, geometry, 2, out_numel, reduced_numel, out_dims, red_dims);
  if (out_numel == 0) return;
  if (out_numel > kMaxIndex || reduced_numel > kMaxIndex)
    invalid(kWhere, "numel exceeds the kernel's 32-bit index range");
  if (out.address == 0 || (in.address == 0 && reduced_numel > 0))
    invalid(kWhere, "operand address is 0");
  if (out.address % dtype_size(out.dtype) != 0 || in.address % dtype_size(in.dtype) != 0)
    invalid(kWhere, "operand address is not aligned to its element size");
  check_offsets(kWhere, out_dims, 0, "output");
  if (max_offset(out_dims, 1) + max_offset(red_dims, 0) > kMaxIndex)
    invalid(kWhere, "input: element offsets exceed the 32-bit index range of the kernel");

  Pass pass;
  pass.out_dims = out_dims;
  pass.red_dims = red_dims;
  pass.out_numel = out_numel;
  pass.red_numel = reduced_numel;
  pass.in_addr = in.address;
  pass.out_addr = out.address;
  pass.aux_addr = needs_center ? extra.center : 0;
  pass.in_dtype = in.dtype;
  pass.out_dtype = out.dtype;
  pass.scale = scale;
  pass.p = extra.p;
  pass.pre = extra.pre;
  pass.post = extra.post;
  run(stream, op, acc, pass);
}

void arg_reduce(Stream& stream, ReduceOp op, ComputeKind acc, int64_t out_numel,
                int64_t reduced_numel, const ReduceGeometry& geometry, Operand values,
                Operand indices, Operand in) {
  acc = check_common(kArgWhere, stream, op, acc, values, in);
  if (op != ReduceOp::Max && op != ReduceOp::Min) invalid(kArgWhere, "op must be Max or Min");
  if (indices.dtype != DType::Int64) invalid(kArgWhere, "indices must be int64");
  Dims out_dims, red_dims;
  coalesce_geometry(kArgWhere, geometry, 3, out_numel, reduced_numel, out_dims, red_dims);
  if (out_numel == 0) return;
  if (reduced_numel == 0) invalid(kArgWhere, "empty reduced space (no identity)");
  if (out_numel > kMaxIndex || reduced_numel > kMaxIndex)
    invalid(kArgWhere, "numel exceeds the kernel's 32-bit index range");
  if (indices.address == 0 || in.address == 0) invalid(kArgWhere, "operand address is 0");
  if (values.address % dtype_size(values.dtype) != 0 || in.address % dtype_size(in.dtype) != 0 ||
      indices.address % 8 != 0)
    invalid(kArgWhere, "operand address is not aligned to its element size");
  if (values.address != 0) check_offsets(kArgWhere, out_dims, 0, "values");
  check_offsets(kArgWhere, out_dims, 2, "indices");
  if (max_offset(out_dims, 1) + max_offset(red_dims, 0) > kMaxIndex)
    invalid(kArgWhere, "input: element offsets exceed the 32-bit index range of the kernel");

  Pass pass;
  pass.arg = true;
  pass.out_dims = out_dims;
  pass.red_dims = red_dims;
  pass.out_numel = out_numel;
  pass.red_numel = reduced_numel;
  pass.in_addr = in.address;
  pass.out_addr = values.address;
  pass.idx_addr = indices.address;
  pass.in_dtype = in.dtype;
  pass.out_dtype = values.address != 0 ? values.dtype : acc_storage(acc);
  run(stream, op, acc, pass);
}

}  // namespace tvk::kernels
