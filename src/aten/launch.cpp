#include "aten/launch.h"

#include <ATen/Dispatch.h>
#include <ATen/ScalarOps.h>
#include <c10/util/TypeCast.h>

#include <cstdint>
#include <optional>
#include <utility>

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

bool holds_values_of(at::ScalarType from, at::ScalarType to) {
  if (from == to || from == at::kBool) return true;
  if (to == at::kBool) return false;
  if (at::isFloatingType(from)) {
    if (!at::isFloatingType(to)) return false;
    if (to == at::kDouble) return true;
    return to == at::kFloat && (from == at::kHalf || from == at::kBFloat16);
  }
  // from is an integer type
  auto range = [](at::ScalarType t) -> std::pair<int64_t, int64_t> {
    switch (t) {
      case at::kByte: return {0, 255};
      case at::kChar: return {-128, 127};
      case at::kShort: return {INT16_MIN, INT16_MAX};
      case at::kInt: return {INT32_MIN, INT32_MAX};
      default: return {INT64_MIN, INT64_MAX};
    }
  };
  const auto [lo, hi] = range(from);
  if (at::isIntegralType(to, /*includeBool=*/false)) {
    const auto [tlo, thi] = range(to);
    return tlo <= lo && hi <= thi;
  }
  // Integers that a float type represents exactly: |v| <= 2^(mantissa digits).
  const int digits = to == at::kHalf ? 11 : to == at::kBFloat16 ? 8 : to == at::kFloat ? 24 : 53;
  const int64_t exact = int64_t{1} << digits;
  return -exact <= lo && hi <= exact;
}

namespace {

// The dtype whose values are exactly the compute type's.
at::ScalarType native_dtype(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::Float32: return at::kFloat;
    case ComputeKind::Float64: return at::kDouble;
    case ComputeKind::Int64: return at::kLong;
    case ComputeKind::Int32: return at::kInt;
  }
  return at::kFloat;
}

// The value of CPU scalar operand `i` as a c10::Scalar of its own type.
c10::Scalar cpu_scalar_value(at::TensorIteratorBase& iter, int i) {
  const at::ScalarType dtype = iter.dtype(i);
  if (at::isFloatingType(dtype)) return c10::Scalar(iter.scalar_value<double>(i));
  if (dtype == at::kBool) return c10::Scalar(iter.scalar_value<int64_t>(i) != 0);
  return c10::Scalar(iter.scalar_value<int64_t>(i));
}

// launch_elementwise over one 32-bit-indexable piece. `host_casts` bit i: CPU scalar operand i
// is converted to `value_dtype` on the host (the kernel's round_inputs cover device operands).
// `out_dtype`: operand 0's dtype when it is not the iterator's (the int64 twin of a float64
// output, see launch_elementwise).
void launch_piece(at::TensorIteratorBase& iter, const char* op, ComputeKind kind,
                  const kernels::Scalars& scalars, const kernels::ValueCasts& casts,
                  uint32_t host_casts, at::ScalarType value_dtype,
                  std::optional<at::ScalarType> out_dtype = std::nullopt) {
  if (iter.numel() == 0) return;
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub : iter.with_32bit_indexing())
      launch_piece(sub, op, kind, scalars, casts, host_casts, value_dtype, out_dtype);
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
    const at::ScalarType dtype = i == 0 && out_dtype ? *out_dtype : iter.dtype(i);
    operands[i].dtype = vk_dtype(dtype, op);
    const int64_t element_size = static_cast<int64_t>(c10::elementSize(dtype));
    if (iter.is_cpu_scalar(i)) {
      // Passed by value in the kernel's compute type, as CUDA's kernels do with their
      // opmath scalars, after TensorIterator's conversion to the value dtype when it takes
      // part in it (host_casts). The value is read straight from the scalar's CPU memory
      // (the same value item() would give, without a dispatcher round trip per op).
      for (int d = 0; d < iter.ndim(); ++d) geometry.strides[i][d] = 0;
      double fv = 0;
      int64_t iv = 0;
      if (host_casts & (1u << i)) {
        const c10::Scalar v = scalar_cast_to_dtype(cpu_scalar_value(iter, i), value_dtype);
        fv = v.isFloatingPoint() ? v.toDouble() : static_cast<double>(v.toLong());
        iv = v.isFloatingPoint() ? 0 : v.toLong();
      } else if (kind == ComputeKind::Int64 || kind == ComputeKind::Int32) {
        // An integer kernel fed a floating parameter takes item()'s checked conversion,
        // which raises on overflow.
        iv = at::isFloatingType(dtype) ? iter.tensor(i).item().toLong() : iter.scalar_value<int64_t>(i);
      } else {
        fv = iter.scalar_value<double>(i);
      }
      switch (kind) {
        case ComputeKind::Float32: {
          const float v = static_cast<float>(fv);
          operands[i] = {stream.upload_params(&v, sizeof v), kernels::DType::Float32};
          break;
        }
        case ComputeKind::Float64: {
          operands[i] = {stream.upload_params(&fv, sizeof fv), kernels::DType::Float64};
          break;
        }
        case ComputeKind::Int64: {
          operands[i] = {stream.upload_params(&iv, sizeof iv), kernels::DType::Int64};
          break;
        }
        case ComputeKind::Int32: {
          const int32_t v = static_cast<int32_t>(iv);
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
                         static_cast<int>(iter.ntensors()), scalars, casts);
  });
}

}  // namespace

void launch_elementwise(at::TensorIteratorBase& iter, const char* op, at::ScalarType dtype,
                        const kernels::Scalars& scalars, const ElementwiseCasts& options) {
  if (iter.numel() == 0) return;
  TORCH_INTERNAL_ASSERT(iter.noutputs() == 1, "launch_elementwise: one output expected");
  const ComputeKind kind = compute_kind_for(iter, dtype);
  const at::ScalarType native = native_dtype(kind);
  kernels::ValueCasts casts;
  casts.defined = true;
  casts.value = vk_dtype(dtype, op);
  uint32_t host_casts = 0;
  for (int i = 1; i < iter.ntensors(); ++i) {
    if (options.keep_inputs & (1u << i)) continue;
    if (options.opmath_scalar_operand2 && i == 2 && at::isReducedFloatingType(dtype) &&
        iter.is_scalar(2)) {
      // The CPU's kernel for this case computes in fp32 and rounds only its result.
      casts.opmath_expression = true;
      casts.expression = kernels::DType::Float32;
      continue;
    }
    if (iter.is_cpu_scalar(i)) {
      host_casts |= 1u << i;
    } else if (dtype != native && !holds_values_of(iter.dtype(i), dtype)) {
      casts.round_inputs |= 1u << i;
    }
  }
  const kernels::ElementwiseOpInfo* info = kernels::find_elementwise_op(op);
  const bool bool_result = info && info->bool_result;
  casts.round_result =
      !options.keep_result && !bool_result && dtype != native && iter.dtype(0) != dtype;
  if ((kind == ComputeKind::Int32 || kind == ComputeKind::Int64) && iter.dtype(0) == at::kDouble) {
    // The integer kernels have no float64 stores (they run on devices without shaderFloat64):
    // the result goes to an int64 twin of the output (the same element size, so the
    // iterator's byte strides fit it unchanged), then a copy converts it as the output cast
    // would (exactly, or correctly rounded past 2^53).
    const at::Tensor out(iter.tensor_base(0));
    at::Tensor twin = at::empty_strided(out.sizes(), out.strides(), out.options().dtype(at::kLong));
    void* original = iter.data_ptr(0);
    iter.unsafe_replace_operand(0, twin.data_ptr());
    launch_piece(iter, op, kind, scalars, casts, host_casts, dtype, at::kLong);
    iter.unsafe_replace_operand(0, original);
    out.copy_(twin);
    return;
  }
  launch_piece(iter, op, kind, scalars, casts, host_casts, dtype);
}

void launch_elementwise(at::TensorIteratorBase& iter, const char* op, ComputeKind kind,
                        const kernels::Scalars& scalars) {
  launch_piece(iter, op, kind, scalars, kernels::ValueCasts{}, 0, at::kFloat);
}

ComputeKind compute_kind_for(const at::TensorIteratorBase& iter, at::ScalarType dtype) {
  ComputeKind kind = compute_kind_for(dtype);
  if (kind == ComputeKind::Float32)
    for (int i = 0; i < iter.ntensors(); ++i)
      if (iter.dtype(i) == at::kDouble && !iter.is_cpu_scalar(i)) return ComputeKind::Float64;
  return kind;
}

c10::Scalar scalar_cast_to_dtype(const c10::Scalar& s, at::ScalarType dtype) {
  TORCH_CHECK(!s.isComplex(), "torch-vk: a complex scalar cannot be converted to ", dtype);
  if (dtype == at::kBool)
    return c10::Scalar(s.isFloatingPoint() ? !(s.toDouble() == 0.0) : s.toLong() != 0);
  if (at::isIntegralType(dtype, /*includeBool=*/false) && s.isFloatingPoint())
    return scalar_to_dtype(s, dtype);
  c10::Scalar r;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "scalar_cast_to_dtype", [&] {
    const scalar_t v = s.isFloatingPoint() ? c10::convert<scalar_t>(s.toDouble())
                                           : c10::convert<scalar_t>(s.toLong());
    if constexpr (std::is_floating_point_v<scalar_t> || std::is_same_v<scalar_t, at::Half> ||
                  std::is_same_v<scalar_t, at::BFloat16>) {
      r = c10::Scalar(static_cast<double>(v));
    } else {
      r = c10::Scalar(static_cast<int64_t>(v));
    }
  });
  return r;
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
