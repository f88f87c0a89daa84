// Storage dtypes and compute kinds: sizes and names (see kernels.h; the codes are the shader
// ABI in shaders/common.glsl).
#include <stdexcept>
#include <string>

#include "kernels/kernels.h"

namespace tvk::kernels {

uint32_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8: return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Int32:
    case DType::Float32: return 4;
    case DType::Int64:
    case DType::Float64: return 8;
  }
  throw std::invalid_argument("invalid dtype code " + std::to_string(static_cast<int>(dtype)));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "invalid";
}

const char* compute_kind_name(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::Float32: return "float32";
    case ComputeKind::Int32: return "int32";
    case ComputeKind::Int64: return "int64";
    case ComputeKind::Float64: return "float64";
  }
  return "invalid";
}

}  // namespace tvk::kernels
