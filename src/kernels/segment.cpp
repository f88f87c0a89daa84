// Launcher of the segment family (shaders/segment.comp).
//
// Work layout: a workgroup of kWorkgroup invocations holds kWorkgroup / lanes work items
// (bags, indices or sorted positions); the `lanes` invocations of an item stride over the
// embedding dim, so that adjacent invocations touch adjacent columns of one row (coalesced)
// and short rows do not leave most of a workgroup idle. lanes = the next power of two >= dim,
// at most kWorkgroup.
#include "kernels/segment.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/segment.comp.
struct BagPush {
  uint64_t weight_addr;
  uint64_t indices_addr;
  uint64_t offsets_addr;
  uint64_t psw_addr;
  uint64_t out_addr;
  uint64_t aux_addr;
  uint64_t aux2_addr;
  uint64_t errors;
  int32_t num_bags;
  int32_t num_indices;
  int32_t num_offsets;
  int32_t dim;
  int32_t num_weights;
  int32_t w_stride0;
  int32_t w_stride1;
  int32_t padding_idx;
  int32_t mode;
  int32_t lanes;
  uint64_t state_addr;  // bag_forward split (0: one pass)
  int32_t i_begin, i_end;
};
static_assert(sizeof(BagPush) == 120);

// Mirrors the OP >= 3 `Push` in shaders/segment.comp.
struct SegPush {
  uint64_t data_addr;
  uint64_t offsets_addr;
  uint64_t out_addr;
  uint64_t grad_addr;
  uint64_t grad_in_addr;
  double initial;
  int32_t outer;
  int32_t axis_size;
  int32_t segments;
  int32_t inner;
  int32_t reduce;
  int32_t has_initial;
  uint64_t state;  // split passes (0: one pass)
  int32_t l_begin, l_end, phase, pad;
};
static_assert(sizeof(SegPush) == 96);

constexpr const char* kWhere = "tvk::kernels::embedding_bag";
constexpr uint32_t kWorkgroup = 64;

bool is_index_dtype(DType d) { return d == DType::Int32 || d == DType::Int64; }

void check_index_operand(const Operand& op, const char* what) {
  check_operand(kWhere, op, what, false);
  if (!is_index_dtype(op.dtype)) invalid(kWhere, std::string(what) + ": must be Int32 or Int64");
}

bool check_kind(Stream& stream, ComputeKind kind) {
  if (kind != ComputeKind::Float32 && kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  return f64;
}

void check_float_operand(const Operand& op, const char* what, bool f64) {
  check_operand(kWhere, op, what, f64);
  if (op.dtype != DType::Float16 && op.dtype != DType::BFloat16 && op.dtype != DType::Float32 &&
      op.dtype != DType::Float64)
    invalid(kWhere, std::string(what) + ": must be a floating dtype");
}

void check_count(int64_t v, const char* what) {
  if (v < 0) invalid(kWhere, std::string("negative ") + what);
  if (v > kMaxIndex) invalid(kWhere, std::string(what) + " beyond the kernel's 32-bit index range");
}

void check_product(int64_t a, int64_t b, const char* what) {
  int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p) || p > kMaxIndex)
    invalid(kWhere, std::string(what) + ": more elements than the kernel's 32-bit index range");
}

int32_t lanes_for(int64_t dim) {
  int32_t lanes = 1;
  while (lanes < static_cast<int32_t>(kWorkgroup) && lanes < dim) lanes *= 2;
  return lanes;
}

void launch(Stream& stream, const char* op, bool f64, const BagPush& push, int64_t items,
            DType float_dt, DType index_dt, DType offset_dt, DType result_dt) {
  const std::string name = std::string("segment.") + op + (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  const std::vector<uint32_t> spec = {static_cast<uint32_t>(float_dt), static_cast<uint32_t>(index_dt),
                                      static_cast<uint32_t>(offset_dt), static_cast<uint32_t>(result_dt)};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  const uint32_t per_group = kWorkgroup / static_cast<uint32_t>(push.lanes);
  stream.dispatch(pipeline, group_count(stream, items, per_group), 1, 1, &push, sizeof(push));
}

}  // namespace

void embedding_bag_forward(Stream& stream, const EmbeddingBagForward& p) {
  const bool f64 = check_kind(stream, p.kind);
  const int mode = static_cast<int>(p.mode);
  if (mode < 0 || mode > 2) invalid(kWhere, "invalid mode " + std::to_string(mode));
  check_count(p.num_weights, "number of weights");
  check_count(p.dim, "embedding dim");
  check_count(p.num_indices, "number of indices");
  check_count(p.num_offsets, "number of offsets");
  check_count(p.num_bags, "number of bags");
  if (p.num_bags > p.num_offsets || p.num_bags + 1 < p.num_offsets)
    invalid(kWhere, "num_bags must be num_offsets or num_offsets - 1");
  if (p.padding_idx < -1 || p.padding_idx >= p.num_weights) invalid(kWhere, "padding_idx out of range");
  if (p.num_bags == 0) return;
  check_product(p.num_bags, p.dim, "output");
  if (p.num_weights > 0 && p.dim > 0) {
    const int64_t reach = (p.num_weights - 1) * std::abs(p.weight_strides[0]) +
                          (p.dim - 1) * std::abs(p.weight_strides[1]);
    if (reach > kMaxIndex) invalid(kWhere, "weight offsets beyond the kernel's 32-bit index range");
  }
  if (p.dim > 0) {
    check_float_operand(p.out, "output", f64);
    if (p.num_weights > 0 && p.num_indices > 0) check_float_operand(p.weight, "weight", f64);
  }
  if (p.num_indices > 0) check_index_operand(p.indices, "indices");
  check_index_operand(p.offsets, "offsets");
  if (p.per_sample_weights.address != 0) {
    if (p.mode != BagMode::Sum) invalid(kWhere, "per_sample_weights need the sum mode");
    check_float_operand(p.per_sample_weights, "per_sample_weights", f64);
  }
  DType result_dt = DType::Int64;
  if (p.bag_size.address != 0) {
    check_index_operand(p.bag_size, "bag_size");
    result_dt = p.bag_size.dtype;
  }
  if (p.mode == BagMode::Max && p.dim > 0) {
    check_index_operand(p.max_indices, "max_indices");
    if (p.bag_size.address != 0 && p.max_indices.dtype != result_dt)
      invalid(kWhere, "max_indices and bag_size must have the same dtype");
    result_dt = p.max_indices.dtype;
  }

  BagPush push{};
  push.weight_addr = p.weight.address;
  push.indices_addr = p.indices.address;
  push.offsets_addr = p.offsets.address;
  push.psw_addr = p.per_sample_weights.address;
  push.out_addr = p.out.address;
  push.aux_addr = p.bag_size.address;
  push.aux2_addr = p.mode == BagMode::Max ? p.max_indices.address : 0;
  push.errors = stream.device_error_address();
  push.num_bags = static_cast<int32_t>(p.num_bags);
  push.num_indices = static_cast<int32_t>(p.num_indices);
  push.num_offsets = static_cast<int32_t>(p.num_offsets);
  push.dim = static_cast<int32_t>(p.dim);
  push.num_weights = static_cast<int32_t>(p.num_weights);
  push.w_stride0 = static_cast<int32_t>(p.weight_strides[0]);
  push.w_stride1 = static_cast<int32_t>(p.weight_strides[1]);
  push.padding_idx = static_cast<int32_t>(p.padding_idx);
  push.mode = mode;
  push.lanes = lanes_for(p.dim);
  const DType float_dt = p.dim > 0 ? p.out.dtype : (f64 ? DType::Float64 : DType::Float32);
  const DType index_dt = p.num_indices > 0 ? p.indices.dtype : DType::Int64;

  // The per-index pass: checks (and offset2bag).
  BagPush check = push;
  check.out_addr = p.offset2bag.address;
  check.lanes = 1;
  DType o2b_dt = DType::Int64;
  if (p.offset2bag.address != 0 && p.num_indices > 0) {
    check_index_operand(p.offset2bag, "offset2bag");
    o2b_dt = p.offset2bag.dtype;
  }
  launch(stream, "bag_offset2bag", false, check, std::max<int64_t>(p.num_indices, 1), DType::Float32,
         index_dt, p.offsets.dtype, o2b_dt);
  // A bag may hold every index: per bag an item owns, lane 0's count and each of its columns
  // walk up to num_indices positions. Under a device loop limit (loop_budget) the positions
  // are split into passes carrying the per-column state (see the shader).
  const int64_t per_group = kWorkgroup / push.lanes;
  const int64_t items_step = int64_t{group_count(stream, p.num_bags, static_cast<uint32_t>(per_group))} * per_group;
  const int64_t bags_per_item = (p.num_bags + items_step - 1) / items_step;
  const int64_t columns = (p.dim + push.lanes - 1) / push.lanes;
  const int64_t budget = loop_budget(stream);
  const int64_t whole = bags_per_item * (1 + p.num_indices + columns * (1 + p.num_indices));
  if (whole <= budget || p.dim == 0) {
    launch(stream, "bag_forward", f64, push, p.num_bags, float_dt, index_dt, p.offsets.dtype, result_dt);
    return;
  }
  const int64_t range = (budget / bags_per_item - 1) / std::max<int64_t>(columns, 1) - 1;
  if (range < 1)
    invalid(kWhere, "too many bags for the device's loop-iteration limit (max_loop_iterations)");
  const int64_t cells = p.num_bags * p.dim;
  const int64_t acc_bytes = cells * (f64 ? 8 : 4);
  const uint64_t bytes = static_cast<uint64_t>(((acc_bytes + cells * 4 + 7) & ~int64_t{7}) + cells * 8);
  Allocator& allocator = stream.device().allocator();
  const uint64_t state = allocator.allocate(bytes, stream.id());
  push.state_addr = state;
  try {
    for (int64_t i0 = 0; i0 < p.num_indices; i0 += range) {
      push.i_begin = static_cast<int32_t>(i0);
      push.i_end = static_cast<int32_t>(std::min(p.num_indices, i0 + range));
      launch(stream, "bag_forward", f64, push, p.num_bags, float_dt, index_dt, p.offsets.dtype, result_dt);
    }
  } catch (...) {
    allocator.free(state);
    throw;
  }
  allocator.free(state);  // stream order: later reuse is ordered after these dispatches
}

void embedding_bag_offset2bag(Stream& stream, int64_t num_indices, int64_t num_bags,
                              Operand offsets, Operand offset2bag) {
  check_count(num_indices, "number of indices");
  check_count(num_bags, "number of bags");
  if (num_indices == 0) return;
  check_index_operand(offset2bag, "offset2bag");
  if (num_bags > 0) check_index_operand(offsets, "offsets");
  BagPush push{};
  push.offsets_addr = offsets.address;
  push.out_addr = offset2bag.address;
  push.num_bags = static_cast<int32_t>(num_bags);
  push.num_indices = static_cast<int32_t>(num_indices);
  push.lanes = 1;
  launch(stream, "bag_offset2bag", false, push, num_indices, DType::Float32, DType::Int64,
         num_bags > 0 ? offsets.dtype : DType::Int64, offset2bag.dtype);
}

void embedding_bag_backward(Stream& stream, const EmbeddingBagBackward& p) {
  const bool f64 = check_kind(stream, p.kind);
  check_count(p.num_weights, "number of weights");
  check_count(p.dim, "embedding dim");
  check_count(p.num_indices, "number of indices");
  check_count(p.num_bags, "number of bags");
  if (p.num_indices == 0 || p.dim == 0 || p.num_weights == 0) return;
  check_product(p.num_weights, p.dim, "grad_weight");
  check_product(p.num_bags, p.dim, "grad");
  check_float_operand(p.grad, "grad", f64);
  check_float_operand(p.grad_weight, "grad_weight", f64);
  if (p.grad.dtype != p.grad_weight.dtype) invalid(kWhere, "grad and grad_weight dtypes differ");
  check_index_operand(p.sorted_indices, "sorted indices");
  check_index_operand(p.permutation, "permutation");
  check_index_operand(p.offset2bag, "offset2bag");
  if (p.mean) {
    check_index_operand(p.bag_size, "bag_size");
    if (p.bag_size.dtype != p.offset2bag.dtype) invalid(kWhere, "offset2bag and bag_size dtypes differ");
  }
  if (p.per_sample_weights.address != 0) {
    check_float_operand(p.per_sample_weights, "per_sample_weights", f64);
    if (p.per_sample_weights.dtype != p.grad.dtype) invalid(kWhere, "per_sample_weights dtype differs from grad");
  }
  if (p.padding_idx < -1 || p.padding_idx >= p.num_weights) invalid(kWhere, "padding_idx out of range");

  BagPush push{};
  push.weight_addr = p.grad.address;
  push.indices_addr = p.sorted_indices.address;
  push.offsets_addr = p.permutation.address;
  push.psw_addr = p.per_sample_weights.address;
  push.out_addr = p.grad_weight.address;
  push.aux_addr = p.offset2bag.address;
  push.aux2_addr = p.mean ? p.bag_size.address : 0;
  push.num_bags = static_cast<int32_t>(p.num_bags);
  push.num_indices = static_cast<int32_t>(p.num_indices);
  push.dim = static_cast<int32_t>(p.dim);
  push.num_weights = static_cast<int32_t>(p.num_weights);
  push.padding_idx = static_cast<int32_t>(p.padding_idx);
  push.mode = (p.mean ? 1 : 0) | (p.scale_grad_by_freq ? 2 : 0);
  push.lanes = lanes_for(p.dim);
  // A run of equal indices may span every position: per position an item owns, the run scan
  // and each of its columns walk up to num_indices positions. Under a device loop limit
  // (loop_budget) the sorted positions are split into passes, a run crossing a pass boundary
  // carrying its partial sums to the next pass (see the shader).
  const int64_t per_group = kWorkgroup / push.lanes;
  const int64_t columns = (p.dim + push.lanes - 1) / push.lanes;
  auto per_item_cost = [&](int64_t positions) {
    const int64_t step = int64_t{group_count(stream, positions, static_cast<uint32_t>(per_group))} * per_group;
    return (positions + step - 1) / step;
  };
  const int64_t budget = loop_budget(stream);
  if (per_item_cost(p.num_indices) * (1 + p.num_indices + columns * (1 + p.num_indices)) <= budget) {
    launch(stream, "bag_backward", f64, push, p.num_indices, p.grad.dtype, p.sorted_indices.dtype,
           p.permutation.dtype, p.offset2bag.dtype);
    return;
  }
  // Per pass of `range` positions (one item per invocation when range fits the grid): two
  // binary searches (<= 32 steps each) and the columns' walks over at most `range` positions.
  int64_t range = (budget - 1 - 64) / std::max<int64_t>(columns, 1) - 1;
  range = std::min(range, int64_t{group_count(stream, p.num_indices, static_cast<uint32_t>(per_group))} * per_group);
  if (range < 1)
    invalid(kWhere, "embedding dims this large exceed the device's loop-iteration limit (max_loop_iterations)");
  const int64_t passes = (p.num_indices + range - 1) / range;
  const uint64_t slot = static_cast<uint64_t>(p.dim) * (f64 ? 8 : 4);
  Allocator& allocator = stream.device().allocator();
  const uint64_t carry = allocator.allocate(slot * static_cast<uint64_t>(passes + 1), stream.id());
  try {
    for (int64_t c = 0; c < passes; ++c) {
      push.state_addr = carry + slot * static_cast<uint64_t>(c);
      push.i_begin = static_cast<int32_t>(c * range);
      push.i_end = static_cast<int32_t>(std::min(p.num_indices, (c + 1) * range));
      launch(stream, "bag_backward", f64, push, push.i_end - push.i_begin, p.grad.dtype,
             p.sorted_indices.dtype, p.permutation.dtype, p.offset2bag.dtype);
    }
  } catch (...) {
    allocator.free(carry);
    throw;
  }
  allocator.free(carry);  // stream order: later reuse is ordered after these dispatches
}

namespace {

constexpr const char* kSegWhere = "tvk::kernels::segment_reduce";

void run_segment(Stream& stream, const SegmentReduce& p, bool backward, Operand grad, Operand grad_data) {
  const int op = static_cast<int>(p.op);
  if (op < 0 || op > 4) invalid(kSegWhere, "invalid op " + std::to_string(op));
  const bool f64 = check_kind(stream, p.kind);
  if (p.outer < 0 || p.axis_size < 0 || p.segments < 0 || p.inner < 0) invalid(kSegWhere, "negative size");
  int64_t out_numel = 0, data_numel = 0, off_numel = 0;
  if (__builtin_mul_overflow(p.outer, p.segments, &out_numel) ||
      __builtin_mul_overflow(out_numel, p.inner, &out_numel) || out_numel > kMaxIndex ||
      __builtin_mul_overflow(p.outer, p.axis_size, &data_numel) ||
      __builtin_mul_overflow(data_numel, p.inner, &data_numel) || data_numel > kMaxIndex ||
      __builtin_mul_overflow(p.outer, p.segments + 1, &off_numel) || off_numel > kMaxIndex)
    invalid(kSegWhere, "more elements than the kernel's 32-bit index range");
  if (out_numel == 0) return;
  check_float_operand(p.out, backward ? "output" : "out", f64);
  check_index_operand(p.offsets, "offsets");
  if (data_numel > 0) check_float_operand(p.data, "data", f64);
  if (backward) {
    check_float_operand(grad, "grad", f64);
    if (data_numel > 0) check_float_operand(grad_data, "grad_data", f64);
    if (data_numel == 0) return;
  }
  const DType dt = p.out.dtype;
  if ((data_numel > 0 && p.data.dtype != dt) || (backward && (grad.dtype != dt || grad_data.dtype != dt)))
    invalid(kSegWhere, "data, out and gradients must share one dtype");
  SegPush push{};
  push.data_addr = p.data.address;
  push.offsets_addr = p.offsets.address;
  push.out_addr = p.out.address;
  push.grad_addr = backward ? grad.address : 0;
  push.grad_in_addr = backward ? grad_data.address : 0;
  push.initial = p.initial;
  push.outer = static_cast<int32_t>(p.outer);
  push.axis_size = static_cast<int32_t>(p.axis_size);
  push.segments = static_cast<int32_t>(p.segments);
  push.inner = static_cast<int32_t>(p.inner);
  push.reduce = op;
  push.has_initial = p.has_initial ? 1 : 0;
  const std::string name = std::string("segment.") + (backward ? "seg_backward" : "seg_forward") +
                           (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kSegWhere, "no shader variant '" + name + "' (stale build?)");
  const std::vector<uint32_t> spec = {static_cast<uint32_t>(dt), static_cast<uint32_t>(DType::Int64),
                                      static_cast<uint32_t>(p.offsets.dtype), static_cast<uint32_t>(DType::Int64)};
  const uint32_t wg = 64;
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  const uint32_t groups = group_count(stream, out_numel, wg);
  // A segment may span the whole axis: per output an invocation owns, up to two walks over it
  // (max / min backward: ties, then stores). Under a device loop limit (loop_budget) the axis
  // is split into passes (see the shader).
  const int64_t step = int64_t{groups} * wg;
  const int64_t per_invocation = (out_numel + step - 1) / step;
  const bool two_walks = backward && (op == 2 || op == 3);
  const int64_t range = loop_chunk(stream, p.axis_size, per_invocation * (two_walks ? 2 : 1), per_invocation);
  if (range >= p.axis_size) {
    stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
    return;
  }
  const int64_t pass_range = loop_chunk(stream, p.axis_size, per_invocation, per_invocation);
  Allocator& allocator = stream.device().allocator();
  const uint64_t state = allocator.allocate(static_cast<uint64_t>(out_numel) * 8, stream.id());
  push.state = state;
  try {
    for (int phase = two_walks ? 0 : 1; phase < 2; ++phase) {
      for (int64_t l0 = 0; l0 < p.axis_size; l0 += pass_range) {
        push.phase = phase;
        push.l_begin = static_cast<int32_t>(l0);
        push.l_end = static_cast<int32_t>(std::min(p.axis_size, l0 + pass_range));
        stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push));
      }
    }
  } catch (...) {
    allocator.free(state);
    throw;
  }
  allocator.free(state);  // stream order: later reuse is ordered after these dispatches
}

}  // namespace

void segment_reduce(Stream& stream, const SegmentReduce& p) { run_segment(stream, p, false, {}, {}); }

void segment_reduce_backward(Stream& stream, const SegmentReduce& p, Operand grad, Operand grad_data) {
  run_segment(stream, p, true, grad, grad_data);
}

}  // namespace tvk::kernels
