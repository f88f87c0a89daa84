// Launcher of the generic element-wise kernel (shaders/elementwise.comp, one variant per row
// of shaders/elementwise_ops.toml and compute kind).
//
// Per call: validate, coalesce dims (fewer dims = less index math), check the 32-bit index
// range, fill the push constants (and upload the geometry block when more than one dim is
// left), pick the pipeline specialized for the operand dtypes, record one dispatch.
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
};
static_assert(sizeof(ElementwisePush) == 120);
static_assert(sizeof(ElementwisePush) <= kMaxPushConstantBytes);
static_assert(offsetof(ElementwisePush, si) == 40);
static_assert(offsetof(ElementwisePush, sd_bits) == 56);
static_assert(offsetof(ElementwisePush, sf) == 72);
static_assert(offsetof(ElementwisePush, numel) == 80);
static_assert(offsetof(ElementwisePush, dtype) == 88);
static_assert(offsetof(ElementwisePush, stride0) == 104);

// Mirrors `ElementwiseGeometry` in shaders/elementwise.comp.
struct ElementwiseGeometryBlock {
  int32_t sizes[kMaxDims];
  int32_t strides[kMaxOperands][kMaxDims];
};
static_assert(sizeof(ElementwiseGeometryBlock) == 160);

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

}  // namespace

void elementwise(Stream& stream, std::string_view op_name, ComputeKind kind, int64_t numel,
                 const Geometry& geometry, const Operand* operands, int num_operands,
                 const Scalars& scalars) {
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
  if (!operands) invalid(kWhere, "operands is null");
  const DeviceCapabilities& caps = stream.device().caps();
  if (kind == ComputeKind::Float64 && !caps.float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  for (int i = 0; i < num_operands; ++i) {
    check_dtype(kWhere, operands[i].dtype, "operand");
    if (operands[i].dtype == DType::Float64 && kind != ComputeKind::Float64)
      invalid(kWhere, "a float64 operand needs the float64 compute kind");
  }

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

  const ShaderBinary* shader = shader_for(*op, kind);
  if (!shader)
    invalid(kWhere, "no shader variant for op '" + std::string(op->name) + "' kind " +
                        compute_kind_name(kind) + " (stale build?)");

  ElementwisePush push{};
  for (int i = 0; i < num_operands; ++i) {
    push.addr[i] = operands[i].address;
    push.dtype[i] = static_cast<int32_t>(operands[i].dtype);
  }
  for (int j = 0; j < 2; ++j) {
    push.si[j] = scalars.i[j];
    std::memcpy(&push.sd_bits[j], &scalars.f[j], sizeof(double));
    push.sf[j] = static_cast<float>(scalars.f[j]);
  }
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

  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes) {
    // Unused operand slots are 0 so that they do not multiply pipelines.
    spec.assign(4, 0u);
    for (int i = 0; i < num_operands; ++i) spec[i] = static_cast<uint32_t>(push.dtype[i]);
  }
  uint32_t wg = tuning().elementwise_workgroup;
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  stream.dispatch(pipeline, group_count(stream, numel, wg), 1, 1, &push, sizeof(push));
}

}  // namespace tvk::kernels
