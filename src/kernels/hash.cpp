// Launcher of hash_tensor's XOR reduction (shaders/hash.comp): one workgroup per output, or,
// for few outputs over long reductions, one per (output, chunk) writing int64 partials that a
// second pass (the same kernel over the contiguous partials) combines.
#include "kernels/hash.h"

#include <algorithm>
#include <string>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` and `HashGeometry` in shaders/hash.comp.
struct HashPush {
  uint64_t in_addr;
  uint64_t out_addr;
  uint64_t geometry;
  int32_t items;
  int32_t red_numel;
  int32_t out_ndim;
  int32_t red_ndim;
  int32_t in_dtype;
  int32_t split;
  int32_t chunk;
  int32_t pad;
};
static_assert(sizeof(HashPush) == 56);

struct HashGeometryBlock {
  int32_t out_sizes[kMaxDims];
  int32_t out_strides[kMaxDims];
  int32_t out_in_strides[kMaxDims];
  int32_t red_sizes[kMaxDims];
  int32_t red_strides[kMaxDims];
};

constexpr const char* kWhere = "tvk::kernels::xor_hash";
constexpr int64_t kSplitChunk = 16384;  // reduced elements per partial
constexpr uint32_t kWorkgroup = 128;

// Number of chunks each output's reduction is split into (1: no split).
int64_t split_of(int64_t out_numel, int64_t reduced_numel) {
  if (out_numel >= 64 || reduced_numel <= 4 * kSplitChunk) return 1;
  return (reduced_numel + kSplitChunk - 1) / kSplitChunk;
}

void dispatch(Stream& stream, HashPush push, const HashGeometryBlock& block) {
  const ShaderBinary* shader = find_shader("hash.xor");
  if (!shader) invalid(kWhere, "no shader variant 'hash.xor' (stale build?)");
  push.geometry = stream.upload_params(&block, sizeof(block));
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, {});
  stream.dispatch(pipeline, group_count(stream, push.items, 1), 1, 1, &push, sizeof(push));
}

}  // namespace

int64_t xor_hash_scratch(int64_t out_numel, int64_t reduced_numel) {
  const int64_t split = split_of(out_numel, reduced_numel);
  return split > 1 ? out_numel * split : 0;
}

void xor_hash(Stream& stream, int64_t out_numel, int64_t reduced_numel, const ReduceGeometry& g, Operand out,
              Operand in, Operand scratch) {
  if (out_numel < 0 || reduced_numel < 0) invalid(kWhere, "negative size");
  if (out_numel == 0) return;
  if (out_numel > kMaxIndex || reduced_numel > kMaxIndex) invalid(kWhere, "more elements than the 32-bit index range");
  check_operand(kWhere, out, "output", false);
  if (out.dtype != DType::Int64) invalid(kWhere, "output: the dtype must be int64");
  const Dims od = coalesce(kWhere, g.out, 2, out_numel);
  const Dims rd = coalesce(kWhere, g.reduced, 2, reduced_numel);
  check_offsets(kWhere, od, 0, "output");
  if (max_offset(od, 1) + max_offset(rd, 1) > kMaxIndex) invalid(kWhere, "input offsets out of the 32-bit index range");
  HashGeometryBlock block{};
  for (int d = 0; d < od.ndim; ++d) {
    block.out_sizes[d] = static_cast<int32_t>(od.sizes[d]);
    block.out_strides[d] = static_cast<int32_t>(od.strides[0][d]);
    block.out_in_strides[d] = static_cast<int32_t>(od.strides[1][d]);
  }
  for (int d = 0; d < rd.ndim; ++d) {
    block.red_sizes[d] = static_cast<int32_t>(rd.sizes[d]);
    block.red_strides[d] = static_cast<int32_t>(rd.strides[1][d]);
  }
  HashPush push{};
  push.red_numel = static_cast<int32_t>(reduced_numel);
  push.out_ndim = od.ndim;
  push.red_ndim = rd.ndim;
  if (reduced_numel > 0) {
    check_operand(kWhere, in, "input", in.dtype == DType::Float64);
    push.in_addr = in.address;
    push.in_dtype = static_cast<int32_t>(in.dtype);
  } else {
    push.in_dtype = static_cast<int32_t>(DType::Int64);  // nothing is read
  }
  const int64_t split = split_of(out_numel, reduced_numel);
  if (split == 1) {
    push.out_addr = out.address;
    push.items = static_cast<int32_t>(out_numel);
    push.split = 1;
    push.chunk = push.red_numel;
    dispatch(stream, push, block);
    return;
  }
  check_operand(kWhere, scratch, "scratch", false);
  if (scratch.dtype != DType::Int64) invalid(kWhere, "scratch: the dtype must be int64");
  if (out_numel * split > kMaxIndex) invalid(kWhere, "too many partials");
  // Pass 1: partial w = o * split + s of chunk s of output o.
  push.out_addr = scratch.address;
  push.items = static_cast<int32_t>(out_numel * split);
  push.split = static_cast<int32_t>(split);
  push.chunk = static_cast<int32_t>((reduced_numel + split - 1) / split);
  dispatch(stream, push, block);
  // Pass 2: output o combines partials [o * split, (o + 1) * split).
  HashGeometryBlock second{};
  for (int d = 0; d < od.ndim; ++d) {
    second.out_sizes[d] = block.out_sizes[d];
    second.out_strides[d] = block.out_strides[d];
  }
  // Output o's partials start at o * split: dim d of the outputs steps by (prod of the
  // sizes below it) * split partials.
  int64_t step = split;
  for (int d = 0; d < od.ndim; ++d) {
    second.out_in_strides[d] = static_cast<int32_t>(step);
    step *= od.sizes[d];
  }
  second.red_sizes[0] = static_cast<int32_t>(split);
  second.red_strides[0] = 1;
  HashPush p2{};
  p2.in_addr = scratch.address;
  p2.out_addr = out.address;
  p2.items = static_cast<int32_t>(out_numel);
  p2.red_numel = static_cast<int32_t>(split);
  p2.out_ndim = od.ndim;
  p2.red_ndim = 1;
  p2.in_dtype = static_cast<int32_t>(DType::Int64);
  p2.split = 1;
  p2.chunk = p2.red_numel;
  dispatch(stream, p2, second);
}

}  // namespace tvk::kernels
