#include "aten/launch.h"

#include <ATen/Dispatch.h>
#include <ATen/ScalarOps.h>

#include "aten/vk_common.h"
#include "runtime/stream.h"

namespace tvk::aten {

using kernels::ComputeKind;

ComputeKind compute_kind_for(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
    case at::kHalf:
    case at::kBFloat16:
      return ComputeKind::Float32;
    case at::kDouble:
      return ComputeKind::Float64;
    case at::kLong:
      return ComputeKind::Int64;
    default:
      return ComputeKind::Int32;
  }
}

ComputeKind copy_kind_for(at::ScalarType src, at::ScalarType dst) {
  if (src == at::kDouble || dst == at::kDouble) return ComputeKind::Float64;
  if (src == at::kLong) return ComputeKind::Int64;
  if (at::isFloatingType(src)) return ComputeKind::Float32;
  // Integral or bool source: int32 holds every value of the narrower integer types exactly.
  return ComputeKind::Int32;
}

kernels::Scalars make_scalars(const c10::Scalar& s0, const c10::Scalar& s1) {
  kernels::Scalars s;
  const c10::Scalar* in[2] = {&s0, &s1};
  for (int k = 0; k < 2; ++k) {
    const c10::Scalar& v = *in[k];
    if (v.isIntegral(/*includeBool=*/true)) {
      s.i[k] = v.to<int64_t>();
      s.f[k] = static_cast<double>(s.i[k]);
    } else {
      s.f[k] = v.to<double>();
      // Integer kernels truncate like a C cast; NaN/inf never reach them (dtype checks).
      s.i[k] = std::isfinite(s.f[k]) ? static_cast<int64_t>(s.f[k]) : 0;
    }
  }
  return s;
}

void launch_elementwise(at::TensorIteratorBase& iter, const char* op, ComputeKind kind,
                        const kernels::Scalars& scalars) {
  if (iter.numel() == 0) return;
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub : iter.with_32bit_indexing()) launch_elementwise(sub, op, kind, scalars);
    return;
  }
  TORCH_CHECK(iter.ndim() <= kernels::kMaxDims, "torch-vk: ", op, " on a tensor with ",
              iter.ndim(), " non-collapsible dimensions is not supported (at most ",
              kernels::kMaxDims, ")");
  TORCH_CHECK(iter.ntensors() <= kernels::kMaxOperands, "torch-vk: too many operands for ", op);
  const c10::DeviceIndex index = iter.device(0).index();
  tvk::Stream& stream = current_stream(index);

  kernels::Geometry geometry;
  geometry.ndim = static_cast<int32_t>(iter.ndim());
  const auto shape = iter.shape();
  for (int d = 0; d < iter.ndim(); ++d) geometry.sizes[d] = shape[d];

  kernels::Operand operands[kernels::kMaxOperands];
  for (int i = 0; i < iter.ntensors(); ++i) {
    const at::ScalarType dtype = iter.dtype(i);
    operands[i].dtype = vk_dtype(dtype, op);
    const int64_t element_size = static_cast<int64_t>(c10::elementSize(dtype));
    if (iter.is_cpu_scalar(i)) {
      // Passed by value in the kernel's compute type, as CUDA's kernels do with their
      // opmath scalars: a Python float next to a float16 tensor stays an fp32 value.
      for (int d = 0; d < iter.ndim(); ++d) geometry.strides[i][d] = 0;
      // The value is read straight from the scalar's CPU memory (the same value item() would
      // give, without a dispatcher round trip per op). An integer kernel fed a floating scalar
      // takes item()'s checked conversion, which raises on overflow.
      const bool checked_to_integer =
          (kind == ComputeKind::Int64 || kind == ComputeKind::Int32) && at::isFloatingType(dtype);
      switch (kind) {
        case ComputeKind::Float32: {
          const float v = static_cast<float>(iter.scalar_value<double>(i));
          operands[i] = {stream.upload_params(&v, sizeof v), kernels::DType::Float32};
          break;
        }
        case ComputeKind::Float64: {
          const double v = iter.scalar_value<double>(i);
          operands[i] = {stream.upload_params(&v, sizeof v), kernels::DType::Float64};
          break;
        }
        case ComputeKind::Int64: {
          const int64_t v =
              checked_to_integer ? iter.tensor(i).item().toLong() : iter.scalar_value<int64_t>(i);
          operands[i] = {stream.upload_params(&v, sizeof v), kernels::DType::Int64};
          break;
        }
        case ComputeKind::Int32: {
          const int32_t v = static_cast<int32_t>(
              checked_to_integer ? iter.tensor(i).item().toLong() : iter.scalar_value<int64_t>(i));
          operands[i] = {stream.upload_params(&v, sizeof v), kernels::DType::Int32};
          break;
        }
      }
      continue;
    }
    operands[i].address = reinterpret_cast<uint64_t>(iter.data_ptr(i));
    const auto strides = iter.strides(i);
    for (int d = 0; d < iter.ndim(); ++d) geometry.strides[i][d] = strides[d] / element_size;
  }
  translate_errors([&] {
    kernels::elementwise(stream, op, kind, iter.numel(), geometry, operands,
                         static_cast<int>(iter.ntensors()), scalars);
  });
}

ComputeKind compute_kind_for(const at::TensorIteratorBase& iter, at::ScalarType dtype) {
  ComputeKind kind = compute_kind_for(dtype);
  if (kind == ComputeKind::Float32)
    for (int i = 0; i < iter.ntensors(); ++i)
      if (iter.dtype(i) == at::kDouble && !iter.is_cpu_scalar(i)) return ComputeKind::Float64;
  return kind;
}

c10::Scalar scalar_to_dtype(const c10::Scalar& s, at::ScalarType dtype) {
  c10::Scalar r;
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, dtype, "scalar_to_dtype", [&] {
    if constexpr (std::is_floating_point_v<scalar_t> || std::is_same_v<scalar_t, at::Half> ||
                  std::is_same_v<scalar_t, at::BFloat16>) {
      r = c10::Scalar(static_cast<double>(s.to<scalar_t>()));
    } else {
      r = c10::Scalar(static_cast<int64_t>(s.to<scalar_t>()));
    }
  });
  return r;
}

at::Tensor scalar_operand(const c10::Scalar& value) { return at::native::wrapped_scalar_tensor(value); }

void raise_not_implemented_for(const char* name, at::ScalarType dtype) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, '"', name, "\" not implemented for '", c10::toString(dtype),
                              "'");
}

}  // namespace tvk::aten
