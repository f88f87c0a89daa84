// Launchers of the indexing family (shaders/index.comp); contracts in kernels/index.h.
//
// The geometry does not fit in push constants (up to 10 operands x 8 dims), so it goes to the
// stream's parameter ring (IndexParams) and the push constants carry its address and the
// stream's error record. Work is spread 1-D over the index space with a grid-stride loop;
// adjacent invocations handle adjacent elements of dim 0, which callers make the fastest
// dim of the output (coalesced writes for gathers, coalesced reads for scatters).
#include "kernels/index.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kWhere = "tvk::kernels::index";

// Mirrors `Params` in shaders/index.comp (std430).
struct IndexParams {
  uint64_t dst_addr;
  uint64_t src_addr;
  uint64_t aux_addr;
  int32_t ndim;
  int32_t num_indices;
  int32_t numel;
  int32_t dst_dtype;
  int32_t src_dtype;
  int32_t gather;
  int32_t reduce_op;
  uint32_t error_code;
  int32_t compact_mode;
  int32_t src_numel;
  int32_t sizes[kMaxDims];
  int32_t dst_strides[kMaxDims];
  int32_t src_strides[kMaxDims];
  int32_t idx_strides[kMaxIndexTensors * kMaxDims];
  uint64_t idx_addr[kMaxIndexTensors];
  int32_t idx_dtype[kMaxIndexTensors];
  int32_t idx_size[kMaxIndexTensors];
  int32_t idx_stride[kMaxIndexTensors];
  int32_t idx_wrap[kMaxIndexTensors];
  int32_t idx_error_dim[kMaxIndexTensors];
};
static_assert(sizeof(IndexParams) == 640);

struct IndexPush {
  uint64_t params;
  uint64_t errors;
};

const char* elem_suffix(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1: return "b1";
    case 2: return "b2";
    case 4: return "b4";
    default: return "b8";
  }
}

// Sum over dims of (size - 1) * |stride|, saturated; 0 for an empty space.
int64_t reach(int ndim, const int64_t* sizes, const int64_t* strides) {
  int64_t total = 0;
  for (int d = 0; d < ndim; ++d)
    if (sizes[d] == 0) return 0;
  for (int d = 0; d < ndim; ++d) {
    const int64_t s = strides[d] < 0 ? -strides[d] : strides[d];
    if (s > kMaxIndex || sizes[d] > kMaxIndex) {
      if (s != 0) return INT64_MAX / 4;
      continue;
    }
    total += (sizes[d] - 1) * s;
    if (total > kMaxIndex) return INT64_MAX / 4;
  }
  return total;
}

int64_t checked_numel(int ndim, const int64_t* sizes) {
  if (ndim < 0 || ndim > kMaxDims)
    invalid(kWhere, "ndim " + std::to_string(ndim) + " is outside 0.." + std::to_string(kMaxDims));
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] < 0) invalid(kWhere, "negative size in dim " + std::to_string(d));
    if (sizes[d] == 0) return 0;
  }
  for (int d = 0; d < ndim; ++d)
    if (__builtin_mul_overflow(numel, sizes[d], &numel) || numel > kMaxIndex)
      invalid(kWhere, "more elements than the kernel's 32-bit index range");
  return numel;
}

void check_address(const Operand& op, const char* what) {
  check_dtype(kWhere, op.dtype, what);
  if (op.address == 0) invalid(kWhere, std::string(what) + ": address is 0");
  if (op.address % dtype_size(op.dtype) != 0)
    invalid(kWhere, std::string(what) + ": address is not aligned to its element size");
}

void fill_geometry(IndexParams& p, int ndim, const int64_t* sizes, const int64_t* dst_strides,
                   const int64_t* src_strides) {
  p.ndim = ndim;
  for (int d = 0; d < ndim; ++d) {
    p.sizes[d] = static_cast<int32_t>(sizes[d]);
    p.dst_strides[d] = static_cast<int32_t>(dst_strides[d]);
    p.src_strides[d] = static_cast<int32_t>(src_strides[d]);
  }
}

// `accesses`: what the dispatch reads and writes (null: everything). The device error record
// is claimed atomically by the first failing invocation and read by the host after a wait, so
// it is never declared.
void launch(Stream& stream, const std::string& name, const IndexParams& params, int64_t numel,
            const AccessSet* accesses = nullptr) {
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  const uint32_t wg = 256;
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg);
  IndexPush push{};
  push.params = stream.upload_params(&params, sizeof(params));
  push.errors = stream.device_error_address();
  // CPU devices (invocations are SIMD lanes of a few cores): fewer invocations, each looping
  // over many elements, so that the per-invocation setup (reading the geometry) is amortized.
  const bool cpu = stream.device().caps().device_type == "cpu";
  const uint32_t per_invocation = cpu ? 32 : 1;
  stream.dispatch(pipeline, group_count(stream, numel, wg * per_invocation), 1, 1, &push,
                  sizeof(push), nullptr, 0, accesses);
}

// The span of an operand over the index space (sizes, `strides`) and, when `indexed`, over
// every index tensor's (size, stride) as well.
void add_index_operand(AccessSet& set, const Operand& op, const IndexProblem& pr,
                       const int64_t* strides, bool indexed, bool write) {
  int64_t sizes[kMaxDims + kMaxIndexTensors], st[kMaxDims + kMaxIndexTensors];
  int n = 0;
  for (int d = 0; d < pr.ndim; ++d) sizes[n] = pr.sizes[d], st[n++] = strides[d];
  if (indexed)
    for (int k = 0; k < pr.num_indices; ++k)
      if (pr.indices[k].size > 0) sizes[n] = pr.indices[k].size, st[n++] = pr.indices[k].stride;
  add_strided(set, op.address, op.dtype, n, sizes, st, write);
}

ComputeKind kind_for_dst(DType dtype) {
  switch (dtype) {
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32: return ComputeKind::Float32;
    case DType::Float64: return ComputeKind::Float64;
    case DType::Int64: return ComputeKind::Int64;
    default: return ComputeKind::Int32;
  }
}

}  // namespace

void index(Stream& stream, const IndexProblem& pr) {
  const int64_t numel = checked_numel(pr.ndim, pr.sizes);
  if (pr.num_indices < 0 || pr.num_indices > kMaxIndexTensors)
    invalid(kWhere, "at most " + std::to_string(kMaxIndexTensors) + " index tensors");
  if (numel == 0) return;
  check_address(pr.dst, "dst");
  check_address(pr.src, "src");
  const bool accumulate = pr.mode == IndexMode::Accumulate;
  if (!accumulate && dtype_size(pr.dst.dtype) != dtype_size(pr.src.dtype))
    invalid(kWhere, "dst and src must have elements of the same size");
  const bool gather = pr.mode == IndexMode::Gather;

  // Offsets: the operand without indices, then the indexed one with every index's reach.
  int64_t indexed_reach = reach(pr.ndim, pr.sizes, gather ? pr.src_strides : pr.dst_strides);
  const int64_t plain_reach = reach(pr.ndim, pr.sizes, gather ? pr.dst_strides : pr.src_strides);
  IndexParams p{};
  fill_geometry(p, pr.ndim, pr.sizes, pr.dst_strides, pr.src_strides);
  for (int k = 0; k < pr.num_indices; ++k) {
    const IndexTensor& t = pr.indices[k];
    check_address(t.values, "index");
    if (t.values.dtype != DType::Int32 && t.values.dtype != DType::Int64)
      invalid(kWhere, "index tensors must be int32 or int64");
    if (t.size < 0 || t.size > kMaxIndex) invalid(kWhere, "indexed size out of range");
    if (reach(pr.ndim, pr.sizes, t.strides) > kMaxIndex)
      invalid(kWhere, "index: element offsets exceed the 32-bit index range of the kernel");
    const int64_t s = t.stride < 0 ? -t.stride : t.stride;
    if (s > kMaxIndex) invalid(kWhere, "indexed stride exceeds the 32-bit index range");
    if (t.size > 0) indexed_reach += (t.size - 1) * s;
    p.idx_addr[k] = t.values.address;
    p.idx_dtype[k] = static_cast<int32_t>(t.values.dtype);
    p.idx_size[k] = static_cast<int32_t>(t.size);
    p.idx_stride[k] = static_cast<int32_t>(t.stride);
    p.idx_wrap[k] = t.wrap_negative ? 1 : 0;
    p.idx_error_dim[k] = t.error_dim;
    for (int d = 0; d < pr.ndim; ++d) p.idx_strides[k * kMaxDims + d] = static_cast<int32_t>(t.strides[d]);
  }
  if (indexed_reach > kMaxIndex || plain_reach > kMaxIndex)
    invalid(kWhere, "element offsets exceed the 32-bit index range of the kernel (split the "
                    "tensor or make it contiguous)");
  p.dst_addr = pr.dst.address;
  p.src_addr = pr.src.address;
  p.num_indices = pr.num_indices;
  p.numel = static_cast<int32_t>(numel);
  p.dst_dtype = static_cast<int32_t>(pr.dst.dtype);
  p.src_dtype = static_cast<int32_t>(pr.src.dtype);
  p.gather = gather ? 1 : 0;
  p.reduce_op = static_cast<int32_t>(pr.op);
  p.error_code = pr.error_code;

  std::string name;
  if (!accumulate) {
    name = std::string("index.move.") + elem_suffix(pr.dst.dtype);
  } else {
    if (pr.kind != kind_for_dst(pr.dst.dtype))
      invalid(kWhere, std::string("the accumulate kind ") + compute_kind_name(pr.kind) +
                          " does not match the destination dtype " + dtype_name(pr.dst.dtype));
    const int opi = static_cast<int>(pr.op);
    if (opi < 0 || opi > 3) invalid(kWhere, "invalid accumulate op " + std::to_string(opi));
    const DeviceCapabilities& caps = stream.device().caps();
    if ((pr.kind == ComputeKind::Float64 || pr.src.dtype == DType::Float64) && !caps.float64)
      throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
    if (pr.src.dtype == DType::Float64 && pr.kind != ComputeKind::Float64)
      invalid(kWhere, "float64 sources need a float64 destination");
    if ((pr.kind == ComputeKind::Int64 || pr.kind == ComputeKind::Float64) && !caps.int64_atomics)
      throw std::invalid_argument(
          "accumulating into int64 / float64 tensors needs shaderBufferInt64Atomics, which this "
          "device does not have");
    name = std::string("index.accumulate.") + compute_kind_name(pr.kind);
    if (pr.kind == ComputeKind::Float32 && pr.dst.dtype == DType::Float32 &&
        pr.op == AccumulateOp::Add && caps.float32_atomic_add && index_tuning().float_atomics)
      name += ".atomic_float";
  }
  // Gather reads src through the indices and writes dst; scatters read src and write dst
  // through them (accumulation reads it too); every index tensor is read over the space.
  AccessSet accesses;
  add_index_operand(accesses, pr.src, pr, pr.src_strides, gather, false);
  for (int k = 0; k < pr.num_indices; ++k)
    add_strided(accesses, pr.indices[k].values.address, pr.indices[k].values.dtype, pr.ndim,
                pr.sizes, pr.indices[k].strides, false);
  if (accumulate) add_index_operand(accesses, pr.dst, pr, pr.dst_strides, true, false);
  add_index_operand(accesses, pr.dst, pr, pr.dst_strides, !gather, true);
  launch(stream, name, p, numel, &accesses);
}

void compact(Stream& stream, const CompactProblem& pr) {
  const int64_t numel = checked_numel(pr.ndim, pr.sizes);
  if (numel == 0) return;
  check_address(pr.dst, "dst");
  if (pr.prefix == 0 || pr.prefix % 4 != 0) invalid(kWhere, "invalid prefix-sum address");
  const int mode = static_cast<int>(pr.mode);
  if (mode < 0 || mode > 2) invalid(kWhere, "invalid compact mode");
  if (pr.mode == CompactMode::Nonzero) {
    if (pr.dst.dtype != DType::Int64) invalid(kWhere, "nonzero writes int64 coordinates");
  } else {
    check_address(pr.src, "src");
    if (dtype_size(pr.dst.dtype) != dtype_size(pr.src.dtype))
      invalid(kWhere, "dst and src must have elements of the same size");
  }
  if (pr.src_numel < 0 || pr.src_numel > kMaxIndex) invalid(kWhere, "src_numel out of range");
  // Every offset is bounded by numel * max |stride| of a dense layout: check the reaches.
  int64_t out_reach = 0;
  if (pr.mode == CompactMode::Nonzero) {
    const int64_t a = std::abs(pr.dst_strides[0]), b = std::abs(pr.dst_strides[1]);
    out_reach = (numel - 1) * a + std::max(pr.ndim - 1, 0) * b;
  } else if (pr.mode == CompactMode::MaskedSelect) {
    out_reach = (numel - 1) * std::abs(pr.dst_strides[0]);
  } else {
    out_reach = reach(pr.ndim, pr.sizes, pr.dst_strides);
  }
  const int64_t in_reach = pr.mode == CompactMode::MaskedSelect ? reach(pr.ndim, pr.sizes, pr.src_strides) : 0;
  if (out_reach > kMaxIndex || in_reach > kMaxIndex)
    invalid(kWhere, "element offsets exceed the 32-bit index range of the kernel");
  IndexParams p{};
  int64_t zeros[kMaxDims] = {};
  const bool nonzero = pr.mode == CompactMode::Nonzero;
  fill_geometry(p, pr.ndim, pr.sizes, pr.dst_strides,
                pr.mode == CompactMode::MaskedSelect ? pr.src_strides : zeros);
  if (pr.mode != CompactMode::MaskedScatter) {
    // dst_strides carry the output layout, not a geometry: copy them verbatim.
    for (int d = 0; d < kMaxDims; ++d) p.dst_strides[d] = static_cast<int32_t>(pr.dst_strides[d]);
  }
  p.dst_addr = pr.dst.address;
  p.src_addr = nonzero ? pr.dst.address : pr.src.address;
  p.aux_addr = pr.prefix;
  p.numel = static_cast<int32_t>(numel);
  p.dst_dtype = static_cast<int32_t>(pr.dst.dtype);
  p.src_dtype = static_cast<int32_t>(nonzero ? pr.dst.dtype : pr.src.dtype);
  p.compact_mode = mode;
  p.src_numel = static_cast<int32_t>(pr.src_numel);
  p.error_code = static_cast<uint32_t>(DeviceErrorCode::MaskedScatterSourceTooSmall);
  launch(stream, std::string("index.compact.") + elem_suffix(pr.dst.dtype), p, numel);
}

IndexTuning& index_tuning() {
  static IndexTuning t = [] {
    IndexTuning d;
    // TORCH_VK_DISABLE_FLOAT_ATOMICS=1: float32 accumulation uses the portable
    // compare-and-swap loop even where the device has atomicAdd(float).
    const char* v = std::getenv("TORCH_VK_DISABLE_FLOAT_ATOMICS");
    if (v && *v && std::string(v) != "0") d.float_atomics = false;
    return d;
  }();
  return t;
}

}  // namespace tvk::kernels
