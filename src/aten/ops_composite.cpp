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
//   im2col / col2im             as_strided windows of the padded input / strided slab adds
// nanmean is PyTorch's CompositeImplicitAutograd over nansum and reaches no fallback.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/im2col_shape_check.h>
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

// ---------------------------------------------------------------- glu

// The checks of at::meta::structured_glu / glu_backward_cpu_out; returns the wrapped dim.
int64_t glu_check(const at::Tensor& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t wrap_dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(wrap_dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", wrap_dim, " is size ", n);
  return wrap_dim;
}

// The CPU kernels dispatch floating types plus float16 / bfloat16 only.
void glu_check_dtype(at::ScalarType dtype, const char* name) {
  if (!at::isFloatingType(dtype)) raise_not_implemented_for(name, dtype);
}

// out = a * sigmoid(b) over the two halves of `self`, computed in the op-math dtype (fp32 for
// float16 / bfloat16, as the CPU kernel) and rounded once into `out`.
at::Tensor& glu_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  const int64_t d = glu_check(self, dim);
  glu_check_dtype(self.scalar_type(), "glu_cpu");
  const int64_t half = self.size(d) / 2;
  const at::ScalarType opmath = at::toOpMathType(self.scalar_type());
  const at::Tensor a = self.narrow(d, 0, half).to(opmath);
  const at::Tensor b = self.narrow(d, half, half).to(opmath);
  return at::mul_out(out, a, at::sigmoid(b));
}

at::Tensor glu(const at::Tensor& self, int64_t dim) {
  at::Tensor out = at::empty({0}, self.options());
  return glu_out(self, dim, out);
}

// The CPU's glu_backward_cpu_out, step by step (so float16 / bfloat16 round where it does):
// s = sigmoid(b) in the input dtype; grad_b = (1 - s) * s * a * g in the op-math dtype, rounded
// once; grad_a = s * g. grad_input is resized like the CPU's (resize_as_).
at::Tensor& glu_backward_out(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim,
                             at::Tensor& grad_input) {
  const int64_t d = glu_check(self, dim);
  glu_check_dtype(self.scalar_type(), "glu_backward_cpu");
  const int64_t half = self.size(d) / 2;
  const at::ScalarType opmath = at::toOpMathType(self.scalar_type());
  const at::Tensor sig = at::sigmoid(self.narrow(d, half, half));
  const at::Tensor sig_op = sig.to(opmath);
  const at::Tensor grad_b =
      (1 - sig_op) * sig_op * self.narrow(d, 0, half).to(opmath) * grad_output.to(opmath);
  const at::Tensor grad_a = sig * grad_output;
  grad_input.resize_as_(self);
  grad_input.narrow(d, 0, half).copy_(grad_a);
  grad_input.narrow(d, half, half).copy_(grad_b);
  return grad_input;
}

at::Tensor glu_backward(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return glu_backward_out(grad_output, self, dim, grad_input);
}

// ---------------------------------------------------------------- addbmm

// The checks of the CPU's addbmm_impl_ (LinearAlgebra.cpp), same order and messages.
void addbmm_check(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2) {
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(batch1.size(0) == batch2.size(0),
              "batch1 and batch2 must have same number of batches, got ", batch1.size(0), " and ",
              batch2.size(0));
  TORCH_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (",
              batch1.size(1), "x", batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2), ")");
  TORCH_CHECK(self.dim() == 2 && self.size(0) == batch1.size(1) && self.size(1) == batch2.size(2),
              "self tensor does not match matmul output shape");
}

// sum_b batch1[b] @ batch2[b] == [batch1[0] | batch1[1] | ...] @ [batch2[0]; batch2[1]; ...]:
// one GEMM with k' = batches * k. Zero batches give k' = 0 (beta * self, or 0 when beta == 0,
// as addmm and the CPU).
std::pair<at::Tensor, at::Tensor> addbmm_operands(const at::Tensor& batch1, const at::Tensor& batch2) {
  const int64_t b = batch1.size(0), n = batch1.size(1), k = batch1.size(2), p = batch2.size(2);
  return {batch1.permute({1, 0, 2}).reshape({n, b * k}), batch2.reshape({b * k, p})};
}

at::Tensor& addbmm_out(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  // As the CPU: self is expanded to the product's shape before the checks.
  const c10::MaybeOwned<at::Tensor> b_self =
      at::expand_size(self, {batch1.size(1), batch2.size(2)}, "addbmm_out");
  addbmm_check(*b_self, batch1, batch2);
  const auto [m1, m2] = addbmm_operands(batch1, batch2);
  out.resize_as_(*b_self);
  return at::addmm_out(out, *b_self, m1, m2, beta, alpha);
}

at::Tensor addbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                  const at::Scalar& beta, const at::Scalar& alpha) {
  at::Tensor out = at::empty({0}, self.options());
  return addbmm_out(self, batch1, batch2, beta, alpha, out);
}

// CPU: addbmm_ runs addbmm_out(self, ..., out=self): self is expanded to the product's shape
// and resized to it. The common case (self already n x p) is one in-place addmm.
at::Tensor& addbmm_(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                    const at::Scalar& beta, const at::Scalar& alpha) {
  if (batch1.dim() == 3 && batch2.dim() == 3 && self.dim() == 2 &&
      self.size(0) == batch1.size(1) && self.size(1) == batch2.size(2)) {
    addbmm_check(self, batch1, batch2);
    const auto [m1, m2] = addbmm_operands(batch1, batch2);
    return self.addmm_(m1, m2, beta, alpha);
  }
  at::Tensor result = at::empty({0}, self.options());
  addbmm_out(self, batch1, batch2, beta, alpha, result);
  self.resize_as_(result);
  self.copy_(result);
  return self;
}

// ---------------------------------------------------------------- channel_shuffle

// CPU: channel_shuffle (ChanelShuffle.cpp): (N, C, *) -> (N, g, C/g, *) -> swap g and C/g; the
// result keeps the input's suggested memory format; an empty input returns an alias.
at::Tensor channel_shuffle(const at::Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.",
              " Value of groups:", groups);
  const int64_t c = self.size(1);
  TORCH_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c,
              " channels and ", groups, " groups.");
  if (self.numel() == 0) return self.alias();
  const at::MemoryFormat format = self.suggest_memory_format();
  const at::Tensor grouped = self.reshape({self.size(0), groups, c / groups, -1});
  // clone: with groups == 1 or groups == C a reshape alone would return a view of self.
  const at::Tensor shuffled =
      grouped.permute({0, 2, 1, 3}).clone(at::MemoryFormat::Contiguous).view(self.sizes());
  return format == at::MemoryFormat::Contiguous ? shuffled : shuffled.contiguous(format);
}

// ---------------------------------------------------------------- im2col / col2im

// The argument checks of the CPU's im2col_out_cpu_template / col2im_out_cpu_template.
void check_pair(at::IntArrayRef v, const char* name) {
  TORCH_CHECK(v.size() == 2, "It is expected ", name, " equals to 2, but got size ", v.size());
}

// The CPU kernels dispatch floating types plus float16 / bfloat16 (vk has no complex).
void check_col_dtype(at::ScalarType dtype, const char* name) {
  if (!at::isFloatingType(dtype)) raise_not_implemented_for(name, dtype);
}

// im2col (nn.functional.unfold): (N, C, H, W) -> (N, C*kh*kw, oh*ow), rows ordered (c, i, j).
// The zero-padded input viewed with as_strided as (N, C, kh, kw, oh, ow), then made contiguous.
at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride) {
  check_pair(kernel_size, "kernel_size");
  check_pair(dilation, "dilation");
  check_pair(padding, "padding");
  check_pair(stride, "stride");
  const int64_t kh = kernel_size[0], kw = kernel_size[1], dh = dilation[0], dw = dilation[1];
  const int64_t ph = padding[0], pw = padding[1], sh = stride[0], sw = stride[1];
  at::native::im2col_shape_check(self, at::Tensor(), kh, kw, dh, dw, ph, pw, sh, sw);
  check_col_dtype(self.scalar_type(), "im2col_out_cpu");
  const bool batched = self.dim() == 4;
  const at::Tensor input = batched ? self : self.unsqueeze(0);
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  const int64_t oh = (h + 2 * ph - (dh * (kh - 1) + 1)) / sh + 1;
  const int64_t ow = (w + 2 * pw - (dw * (kw - 1) + 1)) / sw + 1;
  at::Tensor out;
  if (input.numel() == 0) {
    out = at::empty({n, c * kh * kw, oh * ow}, self.options());
  } else {
    const at::Tensor padded = at::constant_pad_nd(input, {pw, pw, ph, ph}, 0).contiguous();
    const int64_t hp = padded.size(2), wp = padded.size(3);
    const at::Tensor windows =
        padded.as_strided({n, c, kh, kw, oh, ow}, {c * hp * wp, hp * wp, dh * wp, dw, sh * wp, sw},
                          padded.storage_offset());
    out = windows.clone(at::MemoryFormat::Contiguous).view({n, c * kh * kw, oh * ow});
  }
  return batched ? out : out.squeeze(0);
}

// col2im (nn.functional.fold): the adjoint of im2col. Each kernel offset (i, j) adds its
// (N, C, oh, ow) slab into a strided window of the zero-padded output, in the CPU's (i, j)
// order (so float16 / bfloat16 round as the CPU's accumulation); the padding is cut off.
at::Tensor col2im(const at::Tensor& self, c10::SymIntArrayRef output_size_sym,
                  at::IntArrayRef kernel_size, at::IntArrayRef dilation, at::IntArrayRef padding,
                  at::IntArrayRef stride) {
  const std::vector<int64_t> output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym).vec();
  check_pair(output_size, "output_size");
  check_pair(kernel_size, "kernel_size");
  check_pair(dilation, "dilation");
  check_pair(padding, "padding");
  check_pair(stride, "stride");
  const int64_t h = output_size[0], w = output_size[1];
  const int64_t kh = kernel_size[0], kw = kernel_size[1], dh = dilation[0], dw = dilation[1];
  const int64_t ph = padding[0], pw = padding[1], sh = stride[0], sw = stride[1];
  at::native::col2im_shape_check(self, at::Tensor(), h, w, kh, kw, dh, dw, ph, pw, sh, sw);
  check_col_dtype(self.scalar_type(), "col2im_out_cpu");
  const bool batched = self.dim() == 3;
  const at::Tensor cols = batched ? self : self.unsqueeze(0);
  const int64_t n = cols.size(0), c = cols.size(1) / (kh * kw);
  const int64_t oh = (h + 2 * ph - (dh * (kh - 1) + 1)) / sh + 1;
  const int64_t ow = (w + 2 * pw - (dw * (kw - 1) + 1)) / sw + 1;
  at::Tensor padded = at::zeros({n, c, h + 2 * ph, w + 2 * pw}, self.options());
  if (cols.numel() > 0) {
    const at::Tensor slabs = cols.reshape({n, c, kh, kw, oh, ow});
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j)
        padded.slice(2, i * dh, i * dh + sh * (oh - 1) + 1, sh)
            .slice(3, j * dw, j * dw + sw * (ow - 1) + 1, sw)
            .add_(slabs.select(3, j).select(2, i));
  }
  at::Tensor out = (ph == 0 && pw == 0) ? padded
                                         : padded.slice(2, ph, ph + h).slice(3, pw, pw + w).contiguous();
  return batched ? out : out.squeeze(0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nansum", TORCH_FN(nansum));
  m.impl("nansum.out", TORCH_FN(nansum_out));
  m.impl("trace", TORCH_FN(trace));
  m.impl("aminmax", TORCH_FN(aminmax));
  m.impl("aminmax.out", TORCH_FN(aminmax_out));
  m.impl("glu", TORCH_FN(glu));
  m.impl("glu.out", TORCH_FN(glu_out));
  m.impl("glu_backward", TORCH_FN(glu_backward));
  m.impl("glu_backward.grad_input", TORCH_FN(glu_backward_out));
  m.impl("addbmm", TORCH_FN(addbmm));
  m.impl("addbmm.out", TORCH_FN(addbmm_out));
  m.impl("addbmm_", TORCH_FN(addbmm_));
  m.impl("channel_shuffle", TORCH_FN(channel_shuffle));
  m.impl("im2col", TORCH_FN(im2col));
  m.impl("col2im", TORCH_FN(col2im));
}

}  // namespace tvk::aten
