// Native pooling ops: max_pool2d/3d_with_indices, avg_pool2d/3d, adaptive_max_pool2d/3d,
// _adaptive_avg_pool2d/3d, fractional_max_pool2d/3d, forward and backward (functional and
// out=), and max_unpool2d/3d (whose autograd backward is a gather). max_pool1d/2d,
// avg_pool1d, adaptive_*_pool1d and F.adaptive_avg_pool2d are composites of these.
// Shapes, dtypes and argument checks come from PyTorch's meta functions (the structured ops)
// or repeat the CPU's checks and messages (the others). The kernel (src/kernels/pool.h) works
// on one layout per call: contiguous, or channels-last when the input suggests it (as the CPU
// kernels do); operands in another layout are copied into that one first.
#include <ATen/ATen.h>
#include <ATen/native/AdaptivePooling.h>
#include <ATen/native/FractionalMaxPooling.h>
#include <ATen/native/Pool.h>
#include <ATen/ops/adaptive_max_pool2d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool2d_meta.h>
#include <ATen/ops/adaptive_max_pool3d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool3d_meta.h>
#include <ATen/ops/avg_pool2d_backward_meta.h>
#include <ATen/ops/avg_pool2d_meta.h>
#include <ATen/ops/avg_pool3d_backward_meta.h>
#include <ATen/ops/avg_pool3d_meta.h>
#include <ATen/ops/fractional_max_pool2d_backward_meta.h>
#include <ATen/ops/fractional_max_pool2d_meta.h>
#include <ATen/ops/fractional_max_pool3d_meta.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/pool.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;
using kernels::PoolOp;

// Window parameters in (D, H, W) order.
struct Window {
  std::array<int64_t, 3> kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
  bool count_include_pad = true;
  int64_t divisor_override = 0;
};

// PyTorch's 2-D argument convention: one value for both dims or (H, W); an empty stride means
// the kernel size. The meta functions have already validated the lengths.
std::array<int64_t, 3> spatial_arg(at::IntArrayRef v, int dims, int64_t fallback) {
  std::array<int64_t, 3> out{1, 1, 1};
  for (int k = 0; k < dims; ++k) {
    int64_t value = v.empty() ? fallback : (v.size() == 1 ? v[0] : v[k]);
    out[3 - dims + k] = value;
  }
  return out;
}

Window make_window(int dims, at::IntArrayRef kernel, at::IntArrayRef stride,
                   at::IntArrayRef padding, at::IntArrayRef dilation) {
  Window w;
  w.kernel = spatial_arg(kernel, dims, 1);
  w.stride = stride.empty() ? w.kernel : spatial_arg(stride, dims, 1);
  w.pad = {0, 0, 0};
  for (int k = 0; k < dims; ++k) w.pad[3 - dims + k] = padding.size() == 1 ? padding[0] : padding[k];
  if (!dilation.empty()) w.dilation = spatial_arg(dilation, dims, 1);
  return w;
}

bool is_channels_last(at::MemoryFormat f) {
  return f == at::MemoryFormat::ChannelsLast || f == at::MemoryFormat::ChannelsLast3d;
}

// The layout the CPU kernels use for `t` with `dims` spatial dims: channels-last only for
// batched inputs whose strides suggest it.
at::MemoryFormat layout_of(const at::Tensor& t, int dims) {
  if (t.dim() != dims + 2) return at::MemoryFormat::Contiguous;
  const at::MemoryFormat f = t.suggest_memory_format();
  return is_channels_last(f) ? f : at::MemoryFormat::Contiguous;
}

void check_dtype_in(const at::Tensor& t, std::initializer_list<at::ScalarType> allowed,
                    const char* name) {
  const at::ScalarType s = t.scalar_type();
  bool ok = at::isFloatingType(s) && s != at::kFloat8_e5m2 && s != at::kFloat8_e4m3fn &&
            s != at::kFloat8_e5m2fnuz && s != at::kFloat8_e4m3fnuz;
  for (at::ScalarType a : allowed) ok = ok || s == a;
  if (!ok) raise_not_implemented_for(name, s);
  vk_dtype(s, name);
}

ComputeKind kind_for(std::initializer_list<at::ScalarType> dtypes) {
  bool f64 = false, integer = false;
  for (at::ScalarType s : dtypes) {
    f64 = f64 || s == at::kDouble;
    integer = integer || at::isIntegralType(s, /*includeBool=*/true);
  }
  if (f64) return ComputeKind::Float64;
  return integer ? ComputeKind::Int64 : ComputeKind::Float32;
}

// Records `op`. `big` is the tensor with the pooled-input geometry (x / grad_input), `small`
// the one with the pooled-output geometry (y / grad_output); `indices` (optional) is laid out
// like `small`. Outputs of any strides: a temporary in the kernel layout is copied back.
void launch_pool(PoolOp op, int dims, const Window& w, const at::Tensor& big,
                 const at::Tensor& small, const at::Tensor& indices, at::MemoryFormat layout,
                 const char* name) {
  const bool backward = static_cast<int>(op) >= 4;
  const at::Tensor& dst = backward ? big : small;
  if (dst.numel() == 0) return;
  auto in_layout = [&](const at::Tensor& t) { return t.contiguous(layout); };
  const at::Tensor out_t = dst.is_contiguous(layout) ? dst : at::empty(dst.sizes(), dst.options().memory_format(layout));
  at::Tensor idx_t;
  const bool idx_out = indices.defined() && !backward;
  if (indices.defined())
    idx_t = backward ? in_layout(indices)
                     : (indices.is_contiguous(layout) ? indices
                                                      : at::empty(indices.sizes(), indices.options().memory_format(layout)));
  const at::Tensor in_t = in_layout(backward ? small : big);

  kernels::Pool p;
  p.op = op;
  p.kind = kind_for({in_t.scalar_type(), out_t.scalar_type()});
  p.channels_last = is_channels_last(layout);
  const int64_t nd = big.dim();
  p.batch = nd == dims + 2 ? big.size(0) : 1;
  p.channels = big.size(nd - dims - 1);
  for (int k = 0; k < dims; ++k) {
    p.in_size[3 - dims + k] = big.size(nd - dims + k);
    p.out_size[3 - dims + k] = small.size(nd - dims + k);
  }
  p.kernel = w.kernel;
  p.stride = w.stride;
  p.pad = w.pad;
  p.dilation = w.dilation;
  p.count_include_pad = w.count_include_pad;
  p.divisor_override = w.divisor_override;
  p.out = operand(out_t, name);
  p.in = operand(in_t, name);
  if (idx_t.defined()) p.indices = operand(idx_t, name);
  const c10::DeviceGuard guard(dst.device());
  tvk::Stream& stream = current_stream(dst.device().index());
  translate_errors([&] { kernels::pool(stream, p); });
  if (!out_t.is_same(dst)) dst.copy_(out_t);
  if (idx_out && !idx_t.is_same(indices)) indices.copy_(idx_t);
}

// ---------------------------------------------------------------- max_pool2d_with_indices

constexpr std::initializer_list<at::ScalarType> kMaxPoolInts = {at::kByte, at::kChar, at::kShort,
                                                                 at::kInt, at::kLong};

void max_pool2d_impl(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                     at::IntArrayRef padding, at::IntArrayRef dilation, const at::Tensor& out,
                     const at::Tensor& indices) {
  check_dtype_in(self, kMaxPoolInts, "max_pool2d");
  launch_pool(PoolOp::Max, 2, make_window(2, kernel, stride, padding, dilation), self, out,
              indices, layout_of(self, 2), "max_pool2d");
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  Structured<at::meta::structured_max_pool2d_with_indices, 2> s;
  s.meta(self, kernel, stride, padding, dilation, ceil_mode);
  max_pool2d_impl(self, kernel, stride, padding, dilation, s.outs[0], s.outs[1]);
  return {s.outs[0], s.outs[1]};
}

std::tuple<at::Tensor&, at::Tensor&> max_pool2d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices) {
  Structured<at::meta::structured_max_pool2d_with_indices, 2> s(out, indices);
  s.meta(self, kernel, stride, padding, dilation, ceil_mode);
  max_pool2d_impl(self, kernel, stride, padding, dilation, out, indices);
  return {out, indices};
}

void max_pool2d_backward_impl(const at::Tensor& grad, const at::Tensor& self,
                              at::IntArrayRef kernel, at::IntArrayRef stride,
                              at::IntArrayRef padding, at::IntArrayRef dilation,
                              const at::Tensor& indices, const at::Tensor& grad_input) {
  check_dtype_in(grad, {}, "max_pool2d_backward");
  launch_pool(PoolOp::MaxBackward, 2, make_window(2, kernel, stride, padding, dilation),
              grad_input, grad, indices, layout_of(self, 2), "max_pool2d_backward");
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor& grad, const at::Tensor& self,
                                            at::IntArrayRef kernel, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices) {
  Structured<at::meta::structured_max_pool2d_with_indices_backward> s;
  s.meta(grad, self, kernel, stride, padding, dilation, ceil_mode, indices);
  max_pool2d_backward_impl(grad, self, kernel, stride, padding, dilation, indices, s.outs[0]);
  return s.outs[0];
}

at::Tensor& max_pool2d_with_indices_backward_out(
    const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef kernel,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
    const at::Tensor& indices, at::Tensor& grad_input) {
  Structured<at::meta::structured_max_pool2d_with_indices_backward> s(grad_input);
  s.meta(grad, self, kernel, stride, padding, dilation, ceil_mode, indices);
  max_pool2d_backward_impl(grad, self, kernel, stride, padding, dilation, indices, grad_input);
  return grad_input;
}

// ---------------------------------------------------------------- max_pool3d_with_indices
// Not structured: the CPU's checks (aten/src/ATen/native/DilatedMaxPool3d.cpp).

struct MaxPool3dArgs {
  Window w;
  at::MemoryFormat layout = at::MemoryFormat::Contiguous;
};

MaxPool3dArgs max_pool3d_args(const at::Tensor& input, at::IntArrayRef kernel, at::IntArrayRef stride,
                              at::IntArrayRef padding, at::IntArrayRef dilation) {
  TORCH_CHECK(kernel.size() == 1 || kernel.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints")
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  MaxPool3dArgs a;
  a.w = make_window(3, kernel, stride, padding, dilation);
  for (int k = 0; k < 3; ++k)
    for (int64_t v : {a.w.kernel[k], a.w.stride[k], a.w.pad[k], a.w.dilation[k]})
      (void)at::native::safe_downcast<int, int64_t>(v);
  const at::MemoryFormat f = input.suggest_memory_format();
  if (f == at::MemoryFormat::ChannelsLast3d) {
    TORCH_CHECK(input.dim() == 5,
                "non-empty 5D (batch mode) tensor expected for input with channels_last_3d layout");
  } else if (f == at::MemoryFormat::Contiguous) {
    TORCH_CHECK(input.dim() == 4 || input.dim() == 5,
                "non-empty 4D or 5D (batch mode) tensor expected for input");
  } else {
    TORCH_CHECK(false, "Unsupport memory format. Supports only ChannelsLast3d, Contiguous");
  }
  a.layout = f;
  return a;
}

void max_pool3d_out_impl(const at::Tensor& input, at::IntArrayRef kernel, at::IntArrayRef stride,
                         at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                         at::Tensor& output, at::Tensor& indices) {
  const MaxPool3dArgs a = max_pool3d_args(input, kernel, stride, padding, dilation);
  const Window& w = a.w;
  const int64_t nslices = input.size(-4), it = input.size(-3), ih = input.size(-2), iw = input.size(-1);
  int64_t o[3];
  const int64_t in[3] = {it, ih, iw};
  for (int k = 0; k < 3; ++k)
    o[k] = at::native::pooling_output_shape<int64_t>(in[k], w.kernel[k], w.pad[k], w.stride[k],
                                                     w.dilation[k], ceil_mode);
  at::native::pool3d_shape_check(input, nslices, w.kernel[0], w.kernel[1], w.kernel[2], w.stride[0],
                                 w.stride[1], w.stride[2], w.pad[0], w.pad[1], w.pad[2], w.dilation[0],
                                 w.dilation[1], w.dilation[2], it, ih, iw, o[0], o[1], o[2],
                                 "max_pool3d_with_indices_out_cpu_template()");
  check_dtype_in(input, kMaxPoolInts, "max_pool3d");
  if (input.dim() == 4) {
    output.resize_({nslices, o[0], o[1], o[2]});
    indices.resize_({nslices, o[0], o[1], o[2]});
  } else {
    output.resize_({input.size(0), nslices, o[0], o[1], o[2]}, a.layout);
    indices.resize_({input.size(0), nslices, o[0], o[1], o[2]}, a.layout);
  }
  launch_pool(PoolOp::Max, 3, w, input, output, indices, layout_of(input, 3), "max_pool3d");
}

std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(
    const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  at::Tensor out = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  max_pool3d_out_impl(self, kernel, stride, padding, dilation, ceil_mode, out, indices);
  return {out, indices};
}

std::tuple<at::Tensor&, at::Tensor&> max_pool3d_with_indices_out(
    const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
    at::Tensor& indices) {
  max_pool3d_out_impl(self, kernel, stride, padding, dilation, ceil_mode, out, indices);
  return {out, indices};
}

void max_pool3d_backward_impl(const at::Tensor& grad, const at::Tensor& input, at::IntArrayRef kernel,
                              at::IntArrayRef stride, at::IntArrayRef padding,
                              at::IntArrayRef dilation, const at::Tensor& indices, at::Tensor& grad_input) {
  const MaxPool3dArgs a = max_pool3d_args(input, kernel, stride, padding, dilation);
  const Window& w = a.w;
  TORCH_CHECK(input.dtype() == grad.dtype(), "expected dtype ", input.dtype(),
              " for `gradOutput` but got dtype ", grad.dtype());
  const int64_t nslices = input.size(-4), it = input.size(-3), ih = input.size(-2), iw = input.size(-1);
  grad_input.resize_(input.sizes(), a.layout);
  at::native::max_pool3d_backward_shape_check(
      input, grad, indices, nslices, w.kernel[0], w.kernel[1], w.kernel[2], w.stride[0], w.stride[1],
      w.stride[2], w.pad[0], w.pad[1], w.pad[2], w.dilation[0], w.dilation[1], w.dilation[2], it, ih, iw,
      grad.size(-3), grad.size(-2), grad.size(-1), "max_pool3d_with_indices_backward_out_cpu_template()");
  check_dtype_in(grad, {}, "max_pool3d_backward");
  launch_pool(PoolOp::MaxBackward, 3, w, grad_input, grad, indices, layout_of(input, 3),
              "max_pool3d_backward");
}

at::Tensor max_pool3d_with_indices_backward(const at::Tensor& grad, const at::Tensor& self,
                                            at::IntArrayRef kernel, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, self.options());
  max_pool3d_backward_impl(grad, self, kernel, stride, padding, dilation, indices, grad_input);
  return grad_input;
}

at::Tensor& max_pool3d_with_indices_backward_out(
    const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef kernel,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
    const at::Tensor& indices, at::Tensor& grad_input) {
  max_pool3d_backward_impl(grad, self, kernel, stride, padding, dilation, indices, grad_input);
  return grad_input;
}

// ---------------------------------------------------------------- avg_pool2d / avg_pool3d

template <int Dims>
Window avg_window(at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  Window w = make_window(Dims, kernel, stride, padding, {});
  w.count_include_pad = count_include_pad;
  w.divisor_override = divisor_override.value_or(0);
  return w;
}

template <class Meta, int Dims>
void avg_pool_impl(Structured<Meta>& s, const at::Tensor& self, at::IntArrayRef kernel,
                   at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                   bool count_include_pad, std::optional<int64_t> divisor_override,
                   const char* name) {
  s.meta(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
  check_dtype_in(self, {at::kLong}, name);
  launch_pool(PoolOp::Avg, Dims,
              avg_window<Dims>(kernel, stride, padding, count_include_pad, divisor_override),
              self, s.outs[0], at::Tensor(), layout_of(self, Dims), name);
}

template <class Meta, int Dims>
void avg_pool_backward_impl(Structured<Meta>& s, const at::Tensor& grad, const at::Tensor& self,
                            at::IntArrayRef kernel, at::IntArrayRef stride,
                            at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                            std::optional<int64_t> divisor_override, const char* name) {
  s.meta(grad, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
  check_dtype_in(grad, {at::kLong}, name);
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0,
              "divisor must be not zero");
  at::Tensor& grad_input = s.outs[0];
  launch_pool(PoolOp::AvgBackward, Dims,
              avg_window<Dims>(kernel, stride, padding, count_include_pad, divisor_override),
              grad_input, grad, at::Tensor(), layout_of(self, Dims), name);
}

at::Tensor avg_pool2d(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  Structured<at::meta::structured_avg_pool2d> s;
  avg_pool_impl<at::meta::structured_avg_pool2d, 2>(s, self, kernel, stride, padding, ceil_mode,
                                                    count_include_pad, divisor_override, "avg_pool2d");
  return s.outs[0];
}
at::Tensor& avg_pool2d_out(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                           at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, at::Tensor& out) {
  Structured<at::meta::structured_avg_pool2d> s(out);
  avg_pool_impl<at::meta::structured_avg_pool2d, 2>(s, self, kernel, stride, padding, ceil_mode,
                                                    count_include_pad, divisor_override, "avg_pool2d");
  return out;
}
at::Tensor avg_pool2d_backward(const at::Tensor& grad, const at::Tensor& self,
                               at::IntArrayRef kernel, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  Structured<at::meta::structured_avg_pool2d_backward> s;
  avg_pool_backward_impl<at::meta::structured_avg_pool2d_backward, 2>(
      s, grad, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
      "avg_pool2d_backward");
  return s.outs[0];
}
at::Tensor& avg_pool2d_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                    at::IntArrayRef kernel, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad,
                                    std::optional<int64_t> divisor_override, at::Tensor& grad_input) {
  Structured<at::meta::structured_avg_pool2d_backward> s(grad_input);
  avg_pool_backward_impl<at::meta::structured_avg_pool2d_backward, 2>(
      s, grad, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
      "avg_pool2d_backward");
  return grad_input;
}
at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  Structured<at::meta::structured_avg_pool3d> s;
  avg_pool_impl<at::meta::structured_avg_pool3d, 3>(s, self, kernel, stride, padding, ceil_mode,
                                                    count_include_pad, divisor_override, "avg_pool3d_out_frame");
  return s.outs[0];
}
at::Tensor& avg_pool3d_out(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                           at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, at::Tensor& out) {
  Structured<at::meta::structured_avg_pool3d> s(out);
  avg_pool_impl<at::meta::structured_avg_pool3d, 3>(s, self, kernel, stride, padding, ceil_mode,
                                                    count_include_pad, divisor_override, "avg_pool3d_out_frame");
  return out;
}
at::Tensor avg_pool3d_backward(const at::Tensor& grad, const at::Tensor& self,
                               at::IntArrayRef kernel, at::IntArrayRef stride,
                               at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  Structured<at::meta::structured_avg_pool3d_backward> s;
  avg_pool_backward_impl<at::meta::structured_avg_pool3d_backward, 3>(
      s, grad, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
      "avg_pool3d_backward_out_frame");
  return s.outs[0];
}
at::Tensor& avg_pool3d_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                    at::IntArrayRef kernel, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad,
                                    std::optional<int64_t> divisor_override, at::Tensor& grad_input) {
  Structured<at::meta::structured_avg_pool3d_backward> s(grad_input);
  avg_pool_backward_impl<at::meta::structured_avg_pool3d_backward, 3>(
      s, grad, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
      "avg_pool3d_backward_out_frame");
  return grad_input;
}

// ---------------------------------------------------------------- adaptive_max_pool2d / 3d

template <class Meta, int Dims>
void adaptive_max_impl(Structured<Meta, 2>& s, const at::Tensor& self, at::IntArrayRef output_size,
                       const char* name) {
  s.meta(self, output_size);
  check_dtype_in(self, {}, name);
  launch_pool(PoolOp::AdaptiveMax, Dims, Window{}, self, s.outs[0], s.outs[1],
              layout_of(self, Dims), name);
}

template <class Meta, int Dims>
void adaptive_max_backward_impl(Structured<Meta>& s, const at::Tensor& grad, const at::Tensor& self,
                                const at::Tensor& indices, const char* name) {
  s.meta(grad, self, indices);
  check_dtype_in(grad, {}, name);
  launch_pool(PoolOp::AdaptiveMaxBackward, Dims, Window{}, s.outs[0], grad, indices,
              layout_of(self, Dims), name);
}

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d(const at::Tensor& self, at::IntArrayRef output_size) {
  Structured<at::meta::structured_adaptive_max_pool2d, 2> s;
  adaptive_max_impl<at::meta::structured_adaptive_max_pool2d, 2>(s, self, output_size, "adaptive_max_pool2d");
  return {s.outs[0], s.outs[1]};
}
std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  Structured<at::meta::structured_adaptive_max_pool2d, 2> s(out, indices);
  adaptive_max_impl<at::meta::structured_adaptive_max_pool2d, 2>(s, self, output_size, "adaptive_max_pool2d");
  return {out, indices};
}
at::Tensor adaptive_max_pool2d_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& indices) {
  Structured<at::meta::structured_adaptive_max_pool2d_backward> s;
  adaptive_max_backward_impl<at::meta::structured_adaptive_max_pool2d_backward, 2>(
      s, grad, self, indices, "adaptive_max_pool2d_backward");
  return s.outs[0];
}
at::Tensor& adaptive_max_pool2d_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  Structured<at::meta::structured_adaptive_max_pool2d_backward> s(grad_input);
  adaptive_max_backward_impl<at::meta::structured_adaptive_max_pool2d_backward, 2>(
      s, grad, self, indices, "adaptive_max_pool2d_backward");
  return grad_input;
}
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool3d(const at::Tensor& self, at::IntArrayRef output_size) {
  Structured<at::meta::structured_adaptive_max_pool3d, 2> s;
  adaptive_max_impl<at::meta::structured_adaptive_max_pool3d, 3>(s, self, output_size, "adaptive_max_pool3d_cpu");
  return {s.outs[0], s.outs[1]};
}
std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool3d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  Structured<at::meta::structured_adaptive_max_pool3d, 2> s(out, indices);
  adaptive_max_impl<at::meta::structured_adaptive_max_pool3d, 3>(s, self, output_size, "adaptive_max_pool3d_cpu");
  return {out, indices};
}
at::Tensor adaptive_max_pool3d_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& indices) {
  Structured<at::meta::structured_adaptive_max_pool3d_backward> s;
  adaptive_max_backward_impl<at::meta::structured_adaptive_max_pool3d_backward, 3>(
      s, grad, self, indices, "adaptive_max_pool3d_backward");
  return s.outs[0];
}
at::Tensor& adaptive_max_pool3d_backward_out(const at::Tensor& grad, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  Structured<at::meta::structured_adaptive_max_pool3d_backward> s(grad_input);
  adaptive_max_backward_impl<at::meta::structured_adaptive_max_pool3d_backward, 3>(
      s, grad, self, indices, "adaptive_max_pool3d_backward");
  return grad_input;
}

// ---------------------------------------------------------------- _adaptive_avg_pool2d / 3d
// Not structured: the CPU's checks (aten/src/ATen/native/AdaptiveAveragePooling{,3d}.cpp).

template <int Dims>
void adaptive_avg_out_impl(const at::Tensor& input, at::IntArrayRef output_size, at::Tensor& output) {
  const char* name = Dims == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d";
  TORCH_CHECK(static_cast<int>(output_size.size()) == Dims, name, ": output_size must be ", Dims);
  const int64_t ndim = input.dim();
  if (Dims == 2) {
    TORCH_CHECK(ndim == 3 || ndim == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
                input.sizes());
  } else {
    TORCH_CHECK(ndim == 4 || ndim == 5, "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got ",
                input.sizes());
  }
  for (int64_t i = ndim - Dims; i < ndim; ++i)
    TORCH_CHECK(input.size(i) > 0, name,
                "(): Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
                input.sizes(), " with dimension ", i, " being empty");
  for (int64_t s : output_size)
    TORCH_CHECK(s >= 0, name, ": elements of output_size must be greater than or equal to 0 but received {",
                output_size, "}");
  TORCH_CHECK(input.dtype() == output.dtype(), "expected dtype ", input.dtype(),
              " for `output` but got dtype ", output.dtype());
  check_dtype_in(input, {}, name);
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - Dims);
  sizes.insert(sizes.end(), output_size.begin(), output_size.end());
  const at::MemoryFormat layout = layout_of(input, Dims);
  output.resize_(sizes, ndim == Dims + 2 ? layout : at::MemoryFormat::Contiguous);
  if (output.numel() == 0) return;
  launch_pool(PoolOp::AdaptiveAvg, Dims, Window{}, input, output, at::Tensor(), layout, name);
}

template <int Dims>
void adaptive_avg_backward_impl(const at::Tensor& grad, const at::Tensor& input, at::Tensor& grad_input) {
  const char* name = Dims == 2 ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool3d_backward";
  at::native::adaptive_pool_empty_output_check(grad, name);
  const int64_t ndim = grad.dim();
  TORCH_CHECK(ndim == Dims + 1 || ndim == Dims + 2, name, "(): Expected ", Dims + 1, "D or ", Dims + 2,
              "D tensor, but got ", grad.sizes());
  TORCH_CHECK(input.dtype() == grad.dtype(), "expected dtype ", input.dtype(),
              " for `grad_output` but got dtype ", grad.dtype());
  TORCH_CHECK(input.dtype() == grad_input.dtype(), "expected dtype ", input.dtype(),
              " for `grad_input` but got dtype ", grad_input.dtype());
  check_dtype_in(grad, {}, name);
  const at::MemoryFormat layout = layout_of(input, Dims);
  grad_input.resize_(input.sizes(), input.dim() == Dims + 2 ? layout : at::MemoryFormat::Contiguous);
  if (grad_input.numel() == 0) return;
  launch_pool(PoolOp::AdaptiveAvgBackward, Dims, Window{}, grad_input, grad, at::Tensor(), layout, name);
}

at::Tensor adaptive_avg_pool2d(const at::Tensor& input, c10::SymIntArrayRef output_size) {
  at::Tensor out = at::empty({0}, input.options());
  adaptive_avg_out_impl<2>(input, C10_AS_INTARRAYREF_SLOW(output_size), out);
  return out;
}
at::Tensor& adaptive_avg_pool2d_out(const at::Tensor& input, c10::SymIntArrayRef output_size, at::Tensor& out) {
  adaptive_avg_out_impl<2>(input, C10_AS_INTARRAYREF_SLOW(output_size), out);
  return out;
}
at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad, const at::Tensor& input) {
  at::Tensor grad_input = at::empty({0}, input.options());
  adaptive_avg_backward_impl<2>(grad, input, grad_input);
  return grad_input;
}
at::Tensor& adaptive_avg_pool2d_backward_out(const at::Tensor& grad, const at::Tensor& input, at::Tensor& grad_input) {
  adaptive_avg_backward_impl<2>(grad, input, grad_input);
  return grad_input;
}
at::Tensor adaptive_avg_pool3d(const at::Tensor& input, c10::SymIntArrayRef output_size) {
  at::Tensor out = at::empty({0}, input.options());
  adaptive_avg_out_impl<3>(input, C10_AS_INTARRAYREF_SLOW(output_size), out);
  return out;
}
at::Tensor& adaptive_avg_pool3d_out(const at::Tensor& input, c10::SymIntArrayRef output_size, at::Tensor& out) {
  adaptive_avg_out_impl<3>(input, C10_AS_INTARRAYREF_SLOW(output_size), out);
  return out;
}
at::Tensor adaptive_avg_pool3d_backward(const at::Tensor& grad, const at::Tensor& input) {
  at::Tensor grad_input = at::empty({0}, input.options());
  adaptive_avg_backward_impl<3>(grad, input, grad_input);
  return grad_input;
}
at::Tensor& adaptive_avg_pool3d_backward_out(const at::Tensor& grad, const at::Tensor& input, at::Tensor& grad_input) {
  adaptive_avg_backward_impl<3>(grad, input, grad_input);
  return grad_input;
}

// ---------------------------------------------------------------- max_unpool2d / 3d
// Not structured in PyTorch: the CPU's checks and messages (aten/src/ATen/native/MaxUnpooling.cpp).
// The output is zero-filled, then the kernel scatters each pooled value to its index within
// its (batch, channel) plane and reports an index outside the plane on the device (the CPU's
// "Found an invalid max index"). Duplicate indices: the CPU's last write (in its loop order)
// wins; on the device the order is unspecified.

void check_unpool_common(const at::Tensor& self, const at::Tensor& indices, const char* fn) {
  TORCH_CHECK(self.sizes() == indices.sizes(),
              "Expected shape of indices to be same as that of the input tensor (", self.sizes(),
              ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, fn,
                "Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", i, " being empty.");
}

void check_unpool_output_size(at::IntArrayRef output_size, int dims) {
  bool ok = true;
  for (int64_t v : output_size) ok = ok && v >= 0;
  if (dims == 2) {
    TORCH_CHECK(ok, "max_unpooling2d(): output_size must contain non-negative spatial dimensions, but got output_size=(",
                output_size[0], ", ", output_size[1], ")");
  } else {
    TORCH_CHECK(ok, "max_unpooling3d(): output_size must contain non-negative spatial dimensions, but got output_size=(",
                output_size[0], ", ", output_size[1], ", ", output_size[2], ")");
  }
}

// Resizes `out` to the unpooled shape in `layout`, zero-fills it and scatters.
void launch_unpool(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size,
                   int dims, at::MemoryFormat layout, at::Tensor& out, const char* name) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end() - dims);
  sizes.insert(sizes.end(), output_size.begin(), output_size.end());
  out.resize_(sizes, self.dim() == dims + 2 ? layout : at::MemoryFormat::Contiguous);
  out.zero_();
  if (out.numel() == 0 || self.numel() == 0) return;
  check_dtype_in(self, {}, name);
  const at::Tensor x = self.contiguous(layout);
  const at::Tensor idx = indices.contiguous(layout);
  const at::Tensor out_t = out.is_contiguous(layout) ? out : at::zeros(out.sizes(), out.options().memory_format(layout));
  kernels::Pool p;
  p.op = PoolOp::MaxUnpool;
  p.kind = kind_for({x.scalar_type()});
  p.channels_last = is_channels_last(layout) && self.dim() == dims + 2;
  p.unpool_3d = dims == 3;
  const int64_t nd = self.dim();
  p.batch = nd == dims + 2 ? self.size(0) : 1;
  p.channels = self.size(nd - dims - 1);
  for (int k = 0; k < dims; ++k) {
    p.in_size[3 - dims + k] = self.size(nd - dims + k);
    p.out_size[3 - dims + k] = output_size[k];
  }
  p.in = operand(x, name);
  p.out = operand(out_t, name);
  p.indices = operand(idx, name);
  const c10::DeviceGuard guard(out.device());
  tvk::Stream& stream = current_stream(out.device().index());
  translate_errors([&] { kernels::pool(stream, p); });
  if (!out_t.is_same(out)) out.copy_(out_t);
}

at::Tensor& max_unpool2d_out(const at::Tensor& self, const at::Tensor& indices,
                             c10::SymIntArrayRef output_size_sym, at::Tensor& out) {
  const at::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym);
  TORCH_CHECK(indices.scalar_type() == at::kLong,
              "elements in indices should be type int64 but got: ", indices.scalar_type());
  TORCH_CHECK(output_size.size() == 2,
              "There should be exactly two elements (height, width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4,
              "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with ",
              self.dim(), " dimensions.");
  check_unpool_common(self, indices, "max_unpooling2d_forward_out_cpu(): ");
  check_unpool_output_size(output_size, 2);
  launch_unpool(self, indices, output_size, 2, layout_of(self, 2), out, "max_unpool2d");
  return out;
}
at::Tensor max_unpool2d(const at::Tensor& self, const at::Tensor& indices, c10::SymIntArrayRef output_size) {
  at::Tensor out = at::empty({0}, self.options());
  max_unpool2d_out(self, indices, output_size, out);
  return out;
}

at::Tensor& max_unpool3d_out(const at::Tensor& self, const at::Tensor& indices,
                             c10::SymIntArrayRef output_size_sym, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::Tensor& out) {
  const at::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym);
  TORCH_CHECK(indices.scalar_type() == at::kLong, "elements in indices should be type int64");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5,
              "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with ",
              self.dim(), " dimensions.");
  TORCH_CHECK(output_size.size() == 3,
              "There should be exactly three elements (depth, height, width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(stride.size() == 3,
              "There should be exactly three elements (depth, height, width) in stride, but got: ",
              stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3,
              "There should be exactly three elements (depth, height, width) in padding, but got: ",
              padding.size(), " elements.");
  check_unpool_common(self, indices, "max_unpooling3d_forward_out_cpu(): ");
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0,
              "strides should be greater than zero, but got stride: ", stride);
  check_unpool_output_size(output_size, 3);
  // The CPU writes 3-D unpooling contiguous whatever the input's layout.
  launch_unpool(self, indices, output_size, 3, at::MemoryFormat::Contiguous, out, "max_unpool3d");
  return out;
}
at::Tensor max_unpool3d(const at::Tensor& self, const at::Tensor& indices, c10::SymIntArrayRef output_size,
                        at::IntArrayRef stride, at::IntArrayRef padding) {
  at::Tensor out = at::empty({0}, self.options());
  max_unpool3d_out(self, indices, output_size, stride, padding, out);
  return out;
}

// ---------------------------------------------------------------- fractional_max_pool2d / 3d
// Shapes and checks: the meta functions (2-D forward / backward, 3-D forward) plus the CPU
// kernels' own checks (fractional_max_pool_check_shape, the 3-D backward's gradOutput checks).
// The forward kernel rebuilds the CPU's interval sequence from the same samples, so equal
// samples give equal results. The backward is a composite: grad_input = zeros, then per
// (batch, channel) plane scatter_add of grad_output at the indices (the CPU's
// gradInput[index] += gradOutput[o]).

template <int Dims>
void fractional_forward(const at::Tensor& input, at::IntArrayRef pool_size, at::IntArrayRef output_size,
                        const at::Tensor& samples, const at::Tensor& output, const at::Tensor& indices,
                        const char* name) {
  at::native::fractional_max_pool_check_shape<Dims>(input, samples);
  if (output.numel() == 0) return;
  check_dtype_in(input, {}, name);
  const at::Tensor x = input.contiguous();
  const at::Tensor u = samples.contiguous();
  const at::Tensor out_t = output.is_contiguous() ? output : at::empty(output.sizes(), output.options());
  const at::Tensor idx_t = indices.is_contiguous() ? indices : at::empty(indices.sizes(), indices.options());
  kernels::Pool p;
  p.op = PoolOp::FractionalMax;
  p.kind = kind_for({x.scalar_type()});
  const int64_t nd = x.dim();
  p.batch = nd == Dims + 2 ? x.size(0) : 1;
  p.channels = x.size(nd - Dims - 1);
  for (int k = 0; k < Dims; ++k) {
    const int d = 3 - Dims + k;
    p.in_size[d] = x.size(nd - Dims + k);
    p.out_size[d] = output_size[k];
    p.kernel[d] = pool_size[k];
    // alpha as the CPU computes it (generate_intervals): in the input's dtype.
    if (output_size[k] > 1) {
      AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "fractional_max_pool_alpha", [&] {
        const scalar_t alpha = static_cast<scalar_t>(p.in_size[d] - p.kernel[d]) /
                               static_cast<scalar_t>(output_size[k] - 1);
        p.alpha[d] = static_cast<double>(alpha);
      });
    }
  }
  p.samples = operand(u, name);
  p.sample_dims = Dims;
  p.in = operand(x, name);
  p.out = operand(out_t, name);
  p.indices = operand(idx_t, name);
  const c10::DeviceGuard guard(output.device());
  tvk::Stream& stream = current_stream(output.device().index());
  translate_errors([&] { kernels::pool(stream, p); });
  if (!out_t.is_same(output)) output.copy_(out_t);
  if (!idx_t.is_same(indices)) indices.copy_(idx_t);
}

std::tuple<at::Tensor, at::Tensor> fractional_max_pool2d(const at::Tensor& input, at::IntArrayRef pool_size,
                                                         at::IntArrayRef output_size, const at::Tensor& samples) {
  Structured<at::meta::structured_fractional_max_pool2d, 2> s;
  s.meta(input, pool_size, output_size, samples);
  fractional_forward<2>(input, pool_size, output_size, samples, s.outs[0], s.outs[1], "fractional_max_pool2d_out_frame");
  return {s.outs[0], s.outs[1]};
}
std::tuple<at::Tensor&, at::Tensor&> fractional_max_pool2d_out(const at::Tensor& input, at::IntArrayRef pool_size,
                                                               at::IntArrayRef output_size, const at::Tensor& samples,
                                                               at::Tensor& output, at::Tensor& indices) {
  Structured<at::meta::structured_fractional_max_pool2d, 2> s(output, indices);
  s.meta(input, pool_size, output_size, samples);
  fractional_forward<2>(input, pool_size, output_size, samples, output, indices, "fractional_max_pool2d_out_frame");
  return {output, indices};
}
std::tuple<at::Tensor, at::Tensor> fractional_max_pool3d(const at::Tensor& input, at::IntArrayRef pool_size,
                                                         at::IntArrayRef output_size, const at::Tensor& samples) {
  Structured<at::meta::structured_fractional_max_pool3d, 2> s;
  s.meta(input, pool_size, output_size, samples);
  fractional_forward<3>(input, pool_size, output_size, samples, s.outs[0], s.outs[1], "fractional_max_pool3d_out_frame");
  return {s.outs[0], s.outs[1]};
}
std::tuple<at::Tensor&, at::Tensor&> fractional_max_pool3d_out(const at::Tensor& input, at::IntArrayRef pool_size,
                                                               at::IntArrayRef output_size, const at::Tensor& samples,
                                                               at::Tensor& output, at::Tensor& indices) {
  Structured<at::meta::structured_fractional_max_pool3d, 2> s(output, indices);
  s.meta(input, pool_size, output_size, samples);
  fractional_forward<3>(input, pool_size, output_size, samples, output, indices, "fractional_max_pool3d_out_frame");
  return {output, indices};
}

// grad_input (shaped like input) = 0, then grad_input[plane, indices[plane, o]] += grad[plane, o].
template <int Dims>
void fractional_backward(const at::Tensor& grad, const at::Tensor& input, const at::Tensor& indices,
                         const at::Tensor& grad_input, const char* name) {
  TORCH_CHECK(grad.scalar_type() == input.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", grad.scalar_type());
  TORCH_CHECK(indices.sizes() == grad.sizes(), name, ": indices sizes unexpected");
  grad_input.zero_();
  if (grad_input.numel() == 0 || grad.numel() == 0) return;
  check_dtype_in(grad, {}, name);
  const int64_t planes = input.numel() / [&] {
    int64_t n = 1;
    for (int k = 0; k < Dims; ++k) n *= input.size(input.dim() - Dims + k);
    return n;
  }();
  const at::Tensor gi = grad_input.is_contiguous() ? grad_input : at::zeros(grad_input.sizes(), grad_input.options());
  gi.view({planes, -1}).scatter_add_(1, indices.contiguous().view({planes, -1}), grad.contiguous().view({planes, -1}));
  if (!gi.is_same(grad_input)) grad_input.copy_(gi);
}

at::Tensor fractional_max_pool2d_backward(const at::Tensor& grad, const at::Tensor& input, at::IntArrayRef pool_size,
                                          at::IntArrayRef output_size, const at::Tensor& indices) {
  Structured<at::meta::structured_fractional_max_pool2d_backward> s;
  s.meta(grad, input, pool_size, output_size, indices);
  fractional_backward<2>(grad, input, indices, s.outs[0], "fractional_max_pool2d_backward_out_frame");
  return s.outs[0];
}
at::Tensor& fractional_max_pool2d_backward_out(const at::Tensor& grad, const at::Tensor& input,
                                               at::IntArrayRef pool_size, at::IntArrayRef output_size,
                                               const at::Tensor& indices, at::Tensor& grad_input) {
  Structured<at::meta::structured_fractional_max_pool2d_backward> s(grad_input);
  s.meta(grad, input, pool_size, output_size, indices);
  fractional_backward<2>(grad, input, indices, grad_input, "fractional_max_pool2d_backward_out_frame");
  return grad_input;
}

// Not structured in PyTorch: the CPU's checks (FractionalMaxPool3d.cpp).
at::Tensor& fractional_max_pool3d_backward_out(const at::Tensor& grad, const at::Tensor& input,
                                               at::IntArrayRef pool_size, at::IntArrayRef output_size,
                                               const at::Tensor& indices, at::Tensor& grad_input) {
  TORCH_CHECK(output_size.size() == 3, "fractional_max_pool3d_backward_out(): output_size must have 3 elements");
  const int64_t nd = input.dim();
  TORCH_CHECK(nd == 4 || nd == 5, "fractional_max_pool3d_backward_out(): Expected 4D or 5D tensor, but got: ",
              input.sizes());
  TORCH_CHECK(grad.dim() == nd, "fractional_max_pool3d_backward_out(): gradOutput sizes unexpected");
  TORCH_CHECK(output_size[0] == grad.size(nd - 3), "fractional_max_pool3d_backward_out(): gradOutput time unexpected");
  TORCH_CHECK(output_size[1] == grad.size(nd - 2), "fractional_max_pool3d_backward_out(): gradOutput height unexpected");
  TORCH_CHECK(output_size[2] == grad.size(nd - 1), "fractional_max_pool3d_backward_out(): gradOutput width unexpected");
  TORCH_CHECK(grad.sizes().slice(0, nd - 3) == input.sizes().slice(0, nd - 3),
              "fractional_max_pool3d_backward_out(): gradOutput sizes unexpected");
  (void)pool_size;
  grad_input.resize_(input.sizes());
  fractional_backward<3>(grad, input, indices, grad_input, "fractional_max_pool3d_backward_out_frame");
  return grad_input;
}
at::Tensor fractional_max_pool3d_backward(const at::Tensor& grad, const at::Tensor& input, at::IntArrayRef pool_size,
                                          at::IntArrayRef output_size, const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, input.options());
  fractional_max_pool3d_backward_out(grad, input, pool_size, output_size, indices, grad_input);
  return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_unpool2d", TORCH_FN(max_unpool2d));
  m.impl("max_unpool2d.out", TORCH_FN(max_unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(max_unpool3d));
  m.impl("max_unpool3d.out", TORCH_FN(max_unpool3d_out));
  m.impl("fractional_max_pool2d", TORCH_FN(fractional_max_pool2d));
  m.impl("fractional_max_pool2d.output", TORCH_FN(fractional_max_pool2d_out));
  m.impl("fractional_max_pool2d_backward", TORCH_FN(fractional_max_pool2d_backward));
  m.impl("fractional_max_pool2d_backward.grad_input", TORCH_FN(fractional_max_pool2d_backward_out));
  m.impl("fractional_max_pool3d", TORCH_FN(fractional_max_pool3d));
  m.impl("fractional_max_pool3d.output", TORCH_FN(fractional_max_pool3d_out));
  m.impl("fractional_max_pool3d_backward", TORCH_FN(fractional_max_pool3d_backward));
  m.impl("fractional_max_pool3d_backward.grad_input", TORCH_FN(fractional_max_pool3d_backward_out));
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_with_indices_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(max_pool2d_with_indices_backward_out));
  m.impl("max_pool3d_with_indices", TORCH_FN(max_pool3d_with_indices));
  m.impl("max_pool3d_with_indices.out", TORCH_FN(max_pool3d_with_indices_out));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(max_pool3d_with_indices_backward));
  m.impl("max_pool3d_with_indices_backward.grad_input", TORCH_FN(max_pool3d_with_indices_backward_out));
  m.impl("avg_pool2d", TORCH_FN(avg_pool2d));
  m.impl("avg_pool2d.out", TORCH_FN(avg_pool2d_out));
  m.impl("avg_pool2d_backward", TORCH_FN(avg_pool2d_backward));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avg_pool2d_backward_out));
  m.impl("avg_pool3d", TORCH_FN(avg_pool3d));
  m.impl("avg_pool3d.out", TORCH_FN(avg_pool3d_out));
  m.impl("avg_pool3d_backward", TORCH_FN(avg_pool3d_backward));
  m.impl("avg_pool3d_backward.grad_input", TORCH_FN(avg_pool3d_backward_out));
  m.impl("adaptive_max_pool2d", TORCH_FN(adaptive_max_pool2d));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(adaptive_max_pool2d_out));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(adaptive_max_pool2d_backward));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(adaptive_max_pool2d_backward_out));
  m.impl("adaptive_max_pool3d", TORCH_FN(adaptive_max_pool3d));
  m.impl("adaptive_max_pool3d.out", TORCH_FN(adaptive_max_pool3d_out));
  m.impl("adaptive_max_pool3d_backward", TORCH_FN(adaptive_max_pool3d_backward));
  m.impl("adaptive_max_pool3d_backward.grad_input", TORCH_FN(adaptive_max_pool3d_backward_out));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d.out", TORCH_FN(adaptive_avg_pool2d_out));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
  m.impl("_adaptive_avg_pool2d_backward.out", TORCH_FN(adaptive_avg_pool2d_backward_out));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(adaptive_avg_pool3d));
  m.impl("_adaptive_avg_pool3d.out", TORCH_FN(adaptive_avg_pool3d_out));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(adaptive_avg_pool3d_backward));
  m.impl("_adaptive_avg_pool3d_backward.out", TORCH_FN(adaptive_avg_pool3d_backward_out));
  m.impl("adaptive_avg_pool3d_backward.grad_input", TORCH_FN(adaptive_avg_pool3d_backward_out));
}

}  // namespace tvk::aten
