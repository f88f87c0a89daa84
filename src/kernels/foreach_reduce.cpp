// Launcher of the multi-tensor reductions (shaders/foreach_reduce.comp): per batch of up to
// kMaxEntries tensors, pass 0 reduces every chunk of every tensor into a temporary buffer of
// partial accumulators (a workgroup per chunk, so one large and many small tensors balance over
// the grid), pass 1 combines each tensor's partials in a fixed order (a workgroup per tensor)
// and stores its 0-dim result.
#include "kernels/foreach_reduce.h"

#include <cstring>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/foreach_reduce.comp (std430).
struct ForeachReducePush {
  uint64_t entries;
  uint64_t partials;
  uint64_t p_bits;  // double
  float p_f;
  int32_t count;
  int32_t total_chunks;
  int32_t chunk;
  int32_t in_dtype;
  int32_t out_dtype;
};
static_assert(sizeof(ForeachReducePush) == 48);
static_assert(offsetof(ForeachReducePush, p_f) == 24);
static_assert(offsetof(ForeachReducePush, out_dtype) == 44);

// Mirrors `ForeachReduceEntry` in shaders/foreach_reduce.comp.
struct ForeachReduceEntryBlock {
  uint64_t in_addr;
  uint64_t out_addr;
  int32_t numel;
  int32_t first_chunk;
  int32_t nchunks;
  int32_t pad;
};
static_assert(sizeof(ForeachReduceEntryBlock) == 32);

constexpr const char* kWhere = "tvk::kernels::foreach_reduce";
// Entries per batch: bounds the parameter block (32 bytes each).
constexpr int kMaxEntries = 1024;
// A chunk is this many workgroup-widths of consecutive elements: each invocation of pass 0
// accumulates this many elements before the workgroup combine.
constexpr int64_t kChunkRows = 16;
constexpr uint32_t kPassPartials = 0;
constexpr uint32_t kPassFinish = 1;

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    default: return nullptr;
  }
}

bool is_float_dtype(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16 || t == DType::Float64;
}

VkPipeline pipeline_for(Stream& stream, const ShaderBinary& shader, uint32_t wg, uint32_t pass,
                        DType in_dtype, DType out_dtype, ReducePre pre, ReducePost post) {
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(in_dtype), static_cast<uint32_t>(out_dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX};
  spec.push_back(pass);
  spec.push_back(pass == kPassPartials ? static_cast<uint32_t>(pre) : 0u);
  spec.push_back(pass == kPassFinish ? static_cast<uint32_t>(post) : 0u);
  return stream.device().pipelines().get(shader, wg, spec);
}

}  // namespace

void foreach_reduce(Stream& stream, ReduceOp op, ComputeKind acc, const ForeachReduceEntry* entries,
                    int num_entries, DType in_dtype, DType out_dtype, ReducePre pre,
                    ReducePost post, double p) {
  const char* name = op_name(op);
  if (!name) invalid(kWhere, "op must be sum, max or min");
  if (acc != ComputeKind::Float32 && acc != ComputeKind::Float64)
    invalid(kWhere, "the accumulator kind must be float32 or float64");
  if (num_entries < 0 || (num_entries > 0 && !entries)) invalid(kWhere, "bad entry list");
  check_dtype(kWhere, in_dtype, "input");
  check_dtype(kWhere, out_dtype, "output");
  if (!is_float_dtype(in_dtype) || !is_float_dtype(out_dtype))
    invalid(kWhere, "inputs and outputs must have a floating dtype");
  if ((in_dtype == DType::Float64 || out_dtype == DType::Float64) && acc != ComputeKind::Float64)
    invalid(kWhere, "float64 operands need the float64 accumulator");
  if (acc == ComputeKind::Float64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  switch (pre) {
    case ReducePre::None: case ReducePre::Abs: case ReducePre::Square: case ReducePre::AbsPow:
    case ReducePre::NonZero: break;
    default: invalid(kWhere, "unsupported pre-op");
  }
  if (post != ReducePost::None && post != ReducePost::Sqrt && post != ReducePost::Root)
    invalid(kWhere, "unsupported post-op");
  for (int e = 0; e < num_entries; ++e) {
    const ForeachReduceEntry& in = entries[e];
    if (in.numel < 0 || in.numel > kMaxIndex)
      invalid(kWhere, "entry " + std::to_string(e) + ": numel outside [0, 2^31)");
    if (in.output == 0 || in.output % dtype_size(out_dtype) != 0)
      invalid(kWhere, "entry " + std::to_string(e) + ": null or misaligned output");
    if (in.numel > 0 && (in.input == 0 || in.input % dtype_size(in_dtype) != 0))
      invalid(kWhere, "entry " + std::to_string(e) + ": null or misaligned input");
  }
  if (num_entries == 0) return;

  const DeviceCapabilities& caps = stream.device().caps();
  std::string shader_name = std::string("foreach_reduce.") + name + "." +
                            (acc == ComputeKind::Float64 ? "float64" : "float32");
  if (acc == ComputeKind::Float32 && tuning().reduce_subgroups && caps.subgroup_basic &&
      caps.subgroup_vote && caps.subgroup_arithmetic)
    shader_name += ".subgroup";
  const ShaderBinary* shader = find_shader(shader_name);
  if (!shader) invalid(kWhere, "no shader variant '" + shader_name + "' (stale build?)");
  const uint32_t wg = tuning().reduce_workgroup;
  const int64_t chunk = static_cast<int64_t>(wg) * kChunkRows;
  VkPipeline partials_pipeline =
      pipeline_for(stream, *shader, wg, kPassPartials, in_dtype, out_dtype, pre, post);
  VkPipeline finish_pipeline =
      pipeline_for(stream, *shader, wg, kPassFinish, in_dtype, out_dtype, pre, post);
  const uint64_t acc_size = acc == ComputeKind::Float64 ? sizeof(double) : sizeof(float);

  ForeachReducePush push{};
  std::memcpy(&push.p_bits, &p, sizeof(double));
  push.p_f = static_cast<float>(p);
  push.chunk = static_cast<int32_t>(chunk);
  push.in_dtype = static_cast<int32_t>(in_dtype);
  push.out_dtype = static_cast<int32_t>(out_dtype);

  std::vector<ForeachReduceEntryBlock> block;
  Allocator& allocator = stream.device().allocator();
  int e = 0;
  while (e < num_entries) {
    // One batch: up to kMaxEntries entries, fewer than 2^31 chunks.
    block.clear();
    int64_t chunks = 0;
    for (; e < num_entries && static_cast<int>(block.size()) < kMaxEntries; ++e) {
      const ForeachReduceEntry& in = entries[e];
      const int64_t n = (in.numel + chunk - 1) / chunk;
      if (chunks + n > kMaxIndex) break;
      ForeachReduceEntryBlock out{};
      out.in_addr = in.input;
      out.out_addr = in.output;
      out.numel = static_cast<int32_t>(in.numel);
      out.first_chunk = static_cast<int32_t>(chunks);
      out.nchunks = static_cast<int32_t>(n);
      block.push_back(out);
      chunks += n;
    }
    if (block.empty()) invalid(kWhere, "entry too large");
    push.entries = stream.upload_params(block.data(), block.size() * sizeof(block[0]));
    push.count = static_cast<int32_t>(block.size());
    push.total_chunks = static_cast<int32_t>(chunks);
    uint64_t partials = 0;
    if (chunks > 0)
      partials = allocator.allocate(static_cast<uint64_t>(chunks) * acc_size, stream.id());
    // Both passes declare the partials as read and written (so the second is ordered after
    // the first), the first every input, the second every output.
    AccessSet first_pass, second_pass;
    if (chunks > 0) {
      first_pass.read(partials, static_cast<uint64_t>(chunks) * acc_size);
      first_pass.write(partials, static_cast<uint64_t>(chunks) * acc_size);
    }
    second_pass = first_pass;
    for (const ForeachReduceEntryBlock& entry : block) {
      add_dense(first_pass, entry.in_addr, in_dtype, entry.numel, false);
      add_dense(second_pass, entry.out_addr, out_dtype, 1, true);
    }
    try {
      push.partials = partials;
      if (chunks > 0)
        stream.dispatch(partials_pipeline, group_count(stream, chunks, 1), 1, 1, &push,
                        sizeof(push), nullptr, 0, &first_pass);
      stream.dispatch(finish_pipeline, group_count(stream, push.count, 1), 1, 1, &push,
                      sizeof(push), nullptr, 0, &second_pass);
    } catch (...) {
      if (partials) allocator.free(partials);
      throw;
    }
    // Stream order makes the immediate free safe: later reuse is ordered after pass 1.
    if (partials) allocator.free(partials);
  }
}

}  // namespace tvk::kernels
