// Native composites: aten ops with no kernel of their own, built in L3 from other native vk
// ops (no new shaders, nothing copied to the CPU). Each keeps the CPU's semantics: result
// dtypes, shape checks and error messages / exception types follow the CPU implementations in
// aten/src/ATen/native (ReduceOps.cpp, LinearAlgebra.cpp, Activation / GatedLinearUnit.cpp,
// ChanelShuffle.cpp), via PyTorch's meta functions where the op is structured.
//
//   nansum (+ .out)             sum of x with NaNs masked to 0 (integer inputs: plain sum)
//   trace                       diagonal().sum(); integer inputs give int64 (the CPU's promotion)
//   aminmax (+ .out)            (amin, amax) over one dim or all elements
//   glu (+ .out), glu_backward  narrow halves, sigmoid and mul, computed in the op-math dtype
//   addbmm (+ .out, _)          one addmm of the batches laid side by side along k
//   channel_shuffle             view + permute + contiguous
// nanmean is PyTorch's CompositeImplicitAutograd over nansum and reaches no fallback.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/aminmax_meta.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

// ---------------------------------------------------------------- nansum

// x with NaNs replaced by 0 (floating inputs only; the caller passes integers straight on).
at::Tensor zero_nans(const at::Tensor& self) { return self.masked_fill(at::isnan(self), 0); }

// CPU: nansum_out (ReduceOps.cpp): integral (and bool) inputs are a plain sum; the result dtype
// is get_dtype_from_self(self, dtype, promote_integers=true), as sum's. For a floating input,
// make_reduction casts the input to an explicit `dtype` first (an integral dtype then sums the
// cast values), while an integral out= without `dtype` reaches the nansum kernel with an
// integer dtype, which the CPU does not dispatch (NotImplementedError).
at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(!c10::isComplexType(self.scalar_type()), "nansum does not support complex inputs");
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true))
    return at::sum(self, dim, keepdim, dtype);
  if (dtype.has_value() && !at::isFloatingType(*dtype))
    return at::sum(zero_nans(self).to(*dtype), dim, keepdim, dtype);
  return at::sum(zero_nans(self), dim, keepdim, dtype);
}

at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, at::Tensor& out) {
  TORCH_CHECK(!c10::isComplexType(self.scalar_type()), "nansum does not support complex inputs");
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true))
    return at::sum_out(out, self, dim, keepdim, dtype);
  if (dtype.has_value() && !at::isFloatingType(*dtype))
    return at::sum_out(out, zero_nans(self).to(*dtype), dim, keepdim, dtype);
  if (!dtype.has_value() && !at::isFloatingType(out.scalar_type()))
    raise_not_implemented_for("nansum_cpu", out.scalar_type());
  return at::sum_out(out, zero_nans(self), dim, keepdim, dtype);
}

// ---------------------------------------------------------------- trace

// CPU: trace_cpu (ReduceOps.cpp): 2-D only; integer inputs accumulate into int64; bool is not
// dispatched (NotImplementedError).
at::Tensor trace(const at::Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  if (self.scalar_type() == at::kBool) raise_not_implemented_for("trace", at::kBool);
  return at::sum(self.diagonal(), at::OptionalIntArrayRef{}, false, std::nullopt);
}

// ---------------------------------------------------------------- aminmax

// at::meta::structured_aminmax checks the dim, rejects empty reductions (the CPU's messages)
// and sizes both outputs; amin / amax then fill them.
void aminmax_impl(Structured<at::meta::structured_aminmax, 2>& s, const at::Tensor& self,
                  std::optional<int64_t> dim, bool keepdim) {
  s.meta(self, dim, keepdim);
  if (dim.has_value()) {
    at::amin_out(s.outs[0], self, {*dim}, keepdim);
    at::amax_out(s.outs[1], self, {*dim}, keepdim);
  } else {
    at::amin_out(s.outs[0], self, {}, keepdim);
    at::amax_out(s.outs[1], self, {}, keepdim);
  }
}

std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim,
                                           bool keepdim) {
  Structured<at::meta::structured_aminmax, 2> s;
  aminmax_impl(s, self, dim, keepdim);
  return {s.outs[0], s.outs[1]};
}

std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self, std::optional<int64_t> dim,
                                                 bool keepdim, at::Tensor& min, at::Tensor& max) {
  Structured<at::meta::structured_aminmax, 2> s(min, max);
  aminmax_impl(s, self, dim, keepdim);
  return {min, max};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nansum", TORCH_FN(nansum));
  m.impl("nansum.out", TORCH_FN(nansum_out));
  m.impl("trace", TORCH_FN(trace));
  m.impl("aminmax", TORCH_FN(aminmax));
  m.impl("aminmax.out", TORCH_FN(aminmax_out));
}

}  // namespace tvk::aten
