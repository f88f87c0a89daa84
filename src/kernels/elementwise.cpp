// Launcher of the generic element-wise kernel (shaders/elementwise.comp, one variant per row
// of shaders/elementwise_ops.toml and compute kind).
//
// Per call: validate, coalesce dims (fewer dims = less index math), check the 32-bit index
// range, fill the push constants (and upload the geometry block when more than one dim is
// left), pick the pipeline specialized for the operand dtypes, record one dispatch.
// Contiguous float32-math calls (one dim after coalescing, dense or broadcast-scalar inputs,
// float32 / float16 / bfloat16 operands at 4-element aligned addresses) take the vector path:
// four elements per invocation and per 16- / 8-byte access.
#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/elementwise.comp (std430).
struct ElementwisePush {
  uint64_t addr[4];
  uint64_t geometry;
  int64_t si[2];
  uint64_t sd_bits[2];  // the float64 scalars' bits
  float sf[2];
  int32_t numel;
  int32_t ndim;
  int32_t dtype[4];
  int32_t stride0[4];
  int32_t value_dtype;
  int32_t cast_mask;  // bit 0: round the result, bit k: round input k, bits 8..15: the
                      // expression dtype + 1 (0: the value dtype) (ValueCasts)
};
static_assert(sizeof(ElementwisePush) == 128);
static_assert(sizeof(ElementwisePush) <= kMaxPushConstantBytes);
static_assert(offsetof(ElementwisePush, si) == 40);
static_assert(offsetof(ElementwisePush, sd_bits) == 56);
static_assert(offsetof(ElementwisePush, sf) == 72);
static_assert(offsetof(ElementwisePush, numel) == 80);
static_assert(offsetof(ElementwisePush, dtype) == 88);
static_assert(offsetof(ElementwisePush, stride0) == 104);
static_assert(offsetof(ElementwisePush, value_dtype) == 120);

// Mirrors `ElementwiseGeometry` in shaders/elementwise.comp.
struct ElementwiseGeometryBlock {
  int32_t sizes[kMaxDims];
  int32_t strides[kMaxOperands][kMaxDims];
};
static_assert(sizeof(ElementwiseGeometryBlock) == 160);

// Mirrors `ElementwiseListEntry` / `ElementwiseList` in shaders/elementwise.comp.
struct ElementwiseListEntryBlock {
  uint64_t addr[kMaxOperands];
  int32_t stride0[kMaxOperands];
  int32_t numel;
  int32_t first_chunk;
  uint32_t s0_bits[2];
};
static_assert(sizeof(ElementwiseListEntryBlock) == 64);
struct ElementwiseListHeader {
  int32_t count;
  int32_t chunk;
  int32_t per_entry_s0;
  int32_t pad;
};
static_assert(sizeof(ElementwiseListHeader) == 16);
// Entries per dispatch: bounds the parameter block (16 + 64 * 256 bytes).
constexpr int kMaxListEntries = 256;
// A chunk of a list entry is this many workgroup-widths of consecutive elements.
constexpr uint32_t kListChunkRows = 4;

constexpr const char* kWhere = "tvk::kernels::elementwise";

// Shader binaries per (op index in elementwise_ops(), kind), resolved once.
const ShaderBinary* shader_for(const ElementwiseOpInfo& op, ComputeKind kind) {
  static const std::vector<std::array<const ShaderBinary*, 4>> table = [] {
    const auto& ops = elementwise_ops();
    std::vector<std::array<const ShaderBinary*, 4>> t(ops.size());
    for (size_t i = 0; i < ops.size(); ++i)
      for (int k = 0; k < 4; ++k)
        t[i][k] = find_shader(std::string("elementwise.") + ops[i].name + "." +
                              compute_kind_name(static_cast<ComputeKind>(k)));
    return t;
  }();
  return table[&op - elementwise_ops().data()][static_cast<int>(kind)];
}

// Tensor-list variants (op-table rows marked `list`), or null.
const ShaderBinary* list_shader_for(const ElementwiseOpInfo& op, ComputeKind kind) {
  static const std::vector<std::array<const ShaderBinary*, 4>> table = [] {
    const auto& ops = elementwise_ops();
    std::vector<std::array<const ShaderBinary*, 4>> t(ops.size());
    for (size_t i = 0; i < ops.size(); ++i)
      for (int k = 0; k < 4; ++k)
        t[i][k] = find_shader(std::string("elementwise_list.") + ops[i].name + "." +
                              compute_kind_name(static_cast<ComputeKind>(k)));
    return t;
  }();
  return table[&op - elementwise_ops().data()][static_cast<int>(kind)];
}

// The op of `op_name`, checked against `kind`, the operand count and dtypes.
const ElementwiseOpInfo& checked_op(Stream& stream, std::string_view op_name, ComputeKind kind,
                                   const DType* dtypes, int num_operands) {
  const ElementwiseOpInfo* op = find_elementwise_op(op_name);
  if (!op) invalid(kWhere, "unknown element-wise op '" + std::string(op_name) + "'");
  int k = static_cast<int>(kind);
  if (k < 0 || k > 3) invalid(kWhere, "invalid compute kind " + std::to_string(k));
  if (!(op->compute_kinds & (1u << k)))
    invalid(kWhere, "op '" + std::string(op->name) + "' is not built for the " +
                        compute_kind_name(kind) + " compute kind");
  if (num_operands != op->arity + 1)
    invalid(kWhere, "op '" + std::string(op->name) + "' takes " + std::to_string(op->arity + 1) +
                        " operands (output first), got " + std::to_string(num_operands));
  const DeviceCapabilities& caps = stream.device().caps();
  if (kind == ComputeKind::Float64 && !caps.float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  for (int i = 0; i < num_operands; ++i) {
    check_dtype(kWhere, dtypes[i], "operand");
    if (dtypes[i] == DType::Float64 && kind != ComputeKind::Float64)
      invalid(kWhere, "a float64 operand needs the float64 compute kind");
  }
  return *op;
}

// Push constants common to both modes: dtypes, value casts and scalars.
ElementwisePush base_push(const DType* dtypes, int num_operands, const Scalars& scalars,
                          const ValueCasts& casts) {
  ElementwisePush push{};
  for (int i = 0; i < num_operands; ++i) push.dtype[i] = static_cast<int32_t>(dtypes[i]);
  push.value_dtype = static_cast<int32_t>(casts.defined ? casts.value : dtypes[0]);
  if (casts.defined) {
    check_dtype(kWhere, casts.value, "value dtype");
    if ((casts.round_inputs & ~((2u << (num_operands - 1)) - 2u)) != 0)
      invalid(kWhere, "round_inputs names an operand that is not an input");
    push.cast_mask = static_cast<int32_t>(casts.round_inputs | (casts.round_result ? 1u : 0u));
    if (casts.opmath_expression) {
      check_dtype(kWhere, casts.expression, "expression dtype");
      push.cast_mask |= (static_cast<int32_t>(casts.expression) + 1) << 8;
    }
  }
  for (int j = 0; j < 2; ++j) {
    push.si[j] = scalars.i[j];
    std::memcpy(&push.sd_bits[j], &scalars.f[j], sizeof(double));
    push.sf[j] = static_cast<float>(scalars.f[j]);
  }
  return push;
}

// Whether a call can take the shader's vector path (SPEC_VEC; the contract is in
// shaders/elementwise.comp): float32 math on one coalesced dim, output stride 1, inputs of
// stride 1 or 0, 32- / 16-bit float operands, stride-1 addresses 4-element aligned.
bool vector_path(ComputeKind kind, const Dims& dims, int64_t numel, const Operand* operands,
                 int num_operands) {
  if (kind != ComputeKind::Float32 || dims.ndim != 1 || numel < 4 || !tuning().elementwise_vec4)
    return false;
  for (int i = 0; i < num_operands; ++i) {
    const DType dt = operands[i].dtype;
    if (dt != DType::Float32 && dt != DType::Float16 && dt != DType::BFloat16) return false;
    const int64_t stride = dims.strides[i][0];
    if (stride == 0 && i > 0) continue;
    if (stride != 1 || operands[i].address % (4 * dtype_size(dt)) != 0) return false;
  }
  return true;
}

// The pipeline of `op` for `kind` (its tensor-list variant when `list`), specialized for the
// push constants' dtypes (and the vector path when `vec`).
VkPipeline pipeline_for(Stream& stream, const ElementwiseOpInfo& op, ComputeKind kind,
                        const ElementwisePush& push, int num_operands, bool list = false,
                        bool vec = false) {
  const ShaderBinary* shader = list ? list_shader_for(op, kind) : shader_for(op, kind);
  if (!shader)
    invalid(kWhere, std::string(list ? "no tensor-list variant (`list = true` in the op table)"
                                     : "no shader variant") +
                        " for op '" + op.name + "' kind " + compute_kind_name(kind));
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes) {
    // Unused operand slots are 0 so that they do not multiply pipelines.
    spec.assign(6, 0u);
    for (int i = 0; i < num_operands; ++i) spec[i] = static_cast<uint32_t>(push.dtype[i]);
    spec[4] = static_cast<uint32_t>(push.cast_mask);
    spec[5] = static_cast<uint32_t>(push.value_dtype);
  }
  if (vec) {
    if (spec.empty()) spec.assign(6, UINT32_MAX);  // -1: dtypes from the push constants
    spec.push_back(1u);
  }
  return stream.device().pipelines().get(*shader, tuning().elementwise_workgroup, spec);
}

}  // namespace

void elementwise(Stream& stream, std::string_view op_name, ComputeKind kind, int64_t numel,
                 const Geometry& geometry, const Operand* operands, int num_operands,
                 const Scalars& scalars, const ValueCasts& casts) {
  if (!operands) invalid(kWhere, "operands is null");
  if (num_operands < 1 || num_operands > kMaxOperands)
    invalid(kWhere, "bad operand count " + std::to_string(num_operands));
  DType dtypes[kMaxOperands];
  for (int i = 0; i < num_operands; ++i) dtypes[i] = operands[i].dtype;
  const ElementwiseOpInfo& op = checked_op(stream, op_name, kind, dtypes, num_operands);

  Dims dims = coalesce(kWhere, geometry, num_operands, numel);
  if (numel == 0) return;
  if (numel > kMaxIndex)
    invalid(kWhere, "numel " + std::to_string(numel) + " exceeds the kernel's 32-bit index range");
  for (int i = 0; i < num_operands; ++i) {
    if (operands[i].address == 0) invalid(kWhere, "operand " + std::to_string(i) + " has address 0");
    if (operands[i].address % dtype_size(operands[i].dtype) != 0)
      invalid(kWhere, "operand " + std::to_string(i) + " is not aligned to its element size");
    check_offsets(kWhere, dims, i, i == 0 ? "output" : "input");
  }

  ElementwisePush push = base_push(dtypes, num_operands, scalars, casts);
  for (int i = 0; i < num_operands; ++i) push.addr[i] = operands[i].address;
  push.numel = static_cast<int32_t>(numel);
  push.ndim = dims.ndim;
  if (dims.ndim == 1) {
    for (int i = 0; i < num_operands; ++i) push.stride0[i] = static_cast<int32_t>(dims.strides[i][0]);
  } else if (dims.ndim > 1) {
    ElementwiseGeometryBlock block{};
    for (int d = 0; d < dims.ndim; ++d) {
      block.sizes[d] = static_cast<int32_t>(dims.sizes[d]);
      for (int i = 0; i < num_operands; ++i)
        block.strides[i][d] = static_cast<int32_t>(dims.strides[i][d]);
    }
    push.geometry = stream.upload_params(&block, sizeof(block));
  }

  const bool vec = vector_path(kind, dims, numel, operands, num_operands);
  VkPipeline pipeline = pipeline_for(stream, op, kind, push, num_operands, false, vec);
  const uint32_t wg = tuning().elementwise_workgroup;
  const int64_t items = vec ? (numel + 3) / 4 : numel;  // vector path: four elements each
  AccessSet accesses;
  for (int i = 0; i < num_operands; ++i)
    add_dims(accesses, operands[i].address, operands[i].dtype, dims, i, /*write=*/i == 0);
  stream.dispatch(pipeline, group_count(stream, items, wg), 1, 1, &push, sizeof(push), nullptr, 0,
                  &accesses);
}

void elementwise_list(Stream& stream, std::string_view op_name, ComputeKind kind,
                      const ElementwiseListEntry* entries, int num_entries, const DType* dtypes,
                      int num_operands, const Scalars& scalars, bool per_entry_s0) {
  if (num_entries < 0 || (num_entries > 0 && !entries)) invalid(kWhere, "bad entry list");
  if (!dtypes) invalid(kWhere, "dtypes is null");
  if (num_operands < 1 || num_operands > kMaxOperands)
    invalid(kWhere, "bad operand count " + std::to_string(num_operands));
  const ElementwiseOpInfo& op = checked_op(stream, op_name, kind, dtypes, num_operands);
  for (int e = 0; e < num_entries; ++e) {
    if (entries[e].numel < 0 || entries[e].numel > kMaxIndex)
      invalid(kWhere, "entry " + std::to_string(e) + ": numel " +
                          std::to_string(entries[e].numel) + " outside [0, 2^31)");
    if (entries[e].numel == 0) continue;
    for (int i = 0; i < num_operands; ++i) {
      const int32_t stride = entries[e].stride[i];
      if (stride != 0 && stride != 1)
        invalid(kWhere, "entry " + std::to_string(e) + ": stride must be 0 or 1");
      if (i == 0 && stride != 1) invalid(kWhere, "the output of an entry must have stride 1");
      if (entries[e].address[i] == 0 || entries[e].address[i] % dtype_size(dtypes[i]) != 0)
        invalid(kWhere, "entry " + std::to_string(e) + ": operand " + std::to_string(i) +
                            " has a null or misaligned address");
    }
  }
  ElementwisePush push = base_push(dtypes, num_operands, scalars, ValueCasts{});
  push.ndim = -1;
  VkPipeline pipeline = pipeline_for(stream, op, kind, push, num_operands, /*list=*/true);
  const uint32_t wg = tuning().elementwise_workgroup;
  const int64_t chunk = static_cast<int64_t>(wg) * kListChunkRows;

  std::vector<uint8_t> block;
  int e = 0;
  while (e < num_entries) {
    // One dispatch: up to kMaxListEntries non-empty entries, fewer than 2^31 chunks.
    block.assign(sizeof(ElementwiseListHeader), 0);
    int count = 0;
    int64_t chunks = 0;
    AccessSet accesses;
    for (; e < num_entries && count < kMaxListEntries; ++e) {
      const ElementwiseListEntry& in = entries[e];
      if (in.numel == 0) continue;
      const int64_t entry_chunks = (in.numel + chunk - 1) / chunk;
      if (chunks + entry_chunks > kMaxIndex) break;
      ElementwiseListEntryBlock out{};
      for (int i = 0; i < num_operands; ++i) {
        out.addr[i] = in.address[i];
        out.stride0[i] = in.stride[i];
      }
      out.numel = static_cast<int32_t>(in.numel);
      out.first_chunk = static_cast<int32_t>(chunks);
      for (int i = 0; i < num_operands; ++i)
        add_dense(accesses, in.address[i], dtypes[i], in.stride[i] == 0 ? 1 : in.numel, i == 0);
      if (per_entry_s0) {
        uint64_t bits = 0;
        if (kind == ComputeKind::Float32) {
          const float f = static_cast<float>(in.s0.f[0]);
          uint32_t bits32 = 0;
          std::memcpy(&bits32, &f, sizeof f);
          bits = bits32;
        } else if (kind == ComputeKind::Float64) {
          std::memcpy(&bits, &in.s0.f[0], sizeof bits);
        } else {
          bits = static_cast<uint64_t>(in.s0.i[0]);
        }
        out.s0_bits[0] = static_cast<uint32_t>(bits);
        out.s0_bits[1] = static_cast<uint32_t>(bits >> 32);
      }
      const auto* bytes = reinterpret_cast<const uint8_t*>(&out);
      block.insert(block.end(), bytes, bytes + sizeof(out));
      chunks += entry_chunks;
      ++count;
    }
    if (count == 0) continue;
    const ElementwiseListHeader header{count, static_cast<int32_t>(chunk), per_entry_s0 ? 1 : 0,
                                       0};
    std::memcpy(block.data(), &header, sizeof(header));
    push.geometry = stream.upload_params(block.data(), block.size());
    push.numel = static_cast<int32_t>(chunks);
    stream.dispatch(pipeline, group_count(stream, chunks * wg, wg), 1, 1, &push, sizeof(push),
                    nullptr, 0, &accesses);
  }
}

}  // namespace tvk::kernels
