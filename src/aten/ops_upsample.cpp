// Native upsampling ops: upsample_nearest{1,2,3}d, _upsample_nearest_exact{1,2,3}d,
// upsample_linear1d, upsample_bilinear2d, upsample_trilinear3d, upsample_bicubic2d,
// _upsample_bilinear2d_aa, _upsample_bicubic2d_aa, forward and backward (functional and out=).
// F.interpolate reaches these through the .vec composites. The anti-aliased modes and uint8
// bilinear / bicubic run as separable passes with the CPU's tap tables (kernels::resample),
// W then H, skipping a dim whose size does not change (as the CPU's forward does).
// Shapes and argument checks come from PyTorch's meta functions; the kernel
// (src/kernels/upsample.h) works on one layout per call: channels-last when the input (forward)
// or grad_output (backward) suggests it, as the CPU kernels do, else contiguous.
#include <ATen/ATen.h>
#include <ATen/ops/_upsample_bicubic2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_bicubic2d_aa_meta.h>
#include <ATen/ops/_upsample_bilinear2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_bilinear2d_aa_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_meta.h>
#include <ATen/ops/upsample_bicubic2d_backward_meta.h>
#include <ATen/ops/upsample_bicubic2d_meta.h>
#include <ATen/ops/upsample_bilinear2d_backward_meta.h>
#include <ATen/ops/upsample_bilinear2d_meta.h>
#include <ATen/ops/upsample_linear1d_backward_meta.h>
#include <ATen/ops/upsample_linear1d_meta.h>
#include <ATen/ops/upsample_nearest1d_backward_meta.h>
#include <ATen/ops/upsample_nearest1d_meta.h>
#include <ATen/ops/upsample_nearest2d_backward_meta.h>
#include <ATen/ops/upsample_nearest2d_meta.h>
#include <ATen/ops/upsample_nearest3d_backward_meta.h>
#include <ATen/ops/upsample_nearest3d_meta.h>
#include <ATen/ops/upsample_trilinear3d_backward_meta.h>
#include <ATen/ops/upsample_trilinear3d_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/upsample.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;
using kernels::ResampleFilter;
using kernels::UpsampleMode;
using Scale = std::optional<double>;

bool is_channels_last(at::MemoryFormat f) {
  return f == at::MemoryFormat::ChannelsLast || f == at::MemoryFormat::ChannelsLast3d;
}

// Dtypes of the CPU kernels: floating types, plus uint8 for the nearest forward ops.
void check_dtype(const at::Tensor& t, bool allow_byte, const char* name) {
  const at::ScalarType s = t.scalar_type();
  const bool ok = s == at::kFloat || s == at::kDouble || s == at::kHalf || s == at::kBFloat16 ||
                  (allow_byte && s == at::kByte);
  if (!ok) raise_not_implemented_for(name, s);
  vk_dtype(s, name);
}

// Records one upsample. `src` is the op's input (x / grad_output), `dst` its output (y /
// grad_input, any strides: a temporary in the kernel layout is copied back).
void launch_upsample(UpsampleMode mode, bool backward, int dims, const at::Tensor& src,
                     const at::Tensor& dst, bool align_corners, std::array<Scale, 3> scales,
                     const char* name) {
  if (dst.numel() == 0 || src.numel() == 0) {
    if (backward && dst.numel() != 0) dst.zero_();
    return;
  }
  at::MemoryFormat layout = at::MemoryFormat::Contiguous;
  if (src.dim() == dims + 2 && dims >= 2) {
    const at::MemoryFormat f = src.suggest_memory_format();
    if (is_channels_last(f)) layout = f;
  }
  const at::Tensor in_t = src.contiguous(layout);
  const at::Tensor out_t = dst.is_contiguous(layout) ? dst : at::empty(dst.sizes(), dst.options().memory_format(layout));
  const at::Tensor& big = backward ? dst : src;    // the upsample input geometry
  const at::Tensor& small = backward ? src : dst;  // the upsample output geometry
  kernels::Upsample p;
  p.mode = mode;
  p.backward = backward;
  p.kind = (in_t.scalar_type() == at::kDouble || out_t.scalar_type() == at::kDouble)
               ? ComputeKind::Float64 : ComputeKind::Float32;
  p.channels_last = is_channels_last(layout);
  p.align_corners = align_corners;
  p.batch = big.size(0);
  p.channels = big.size(1);
  for (int k = 0; k < dims; ++k) {
    p.in_size[3 - dims + k] = big.size(2 + k);
    p.out_size[3 - dims + k] = small.size(2 + k);
  }
  p.scales = scales;
  p.out = operand(out_t, name);
  p.in = operand(in_t, name);
  const c10::DeviceGuard guard(dst.device());
  tvk::Stream& stream = current_stream(dst.device().index());
  translate_errors([&] { kernels::upsample(stream, p); });
  if (!out_t.is_same(dst)) dst.copy_(out_t);
}

// Records a separable 2-d resample (kernels::resample) of `src` into `dst`: the anti-aliased
// modes (forward and backward) and uint8 bilinear / bicubic (forward, antialias false).
// Forward: a pass along W then one along H, each skipped when that size does not change.
// Backward: the transposed passes (H, then W), both always run like the CPU's backward.
void launch_resample(ResampleFilter filter, bool antialias, bool backward, const at::Tensor& src,
                     const at::Tensor& dst, bool align_corners, Scale scale_h, Scale scale_w,
                     const char* name) {
  if (dst.numel() == 0 || src.numel() == 0) {
    if (backward && dst.numel() != 0) dst.zero_();
    return;
  }
  at::MemoryFormat layout = at::MemoryFormat::Contiguous;
  if (src.suggest_memory_format() == at::MemoryFormat::ChannelsLast) layout = at::MemoryFormat::ChannelsLast;
  const bool cl = layout == at::MemoryFormat::ChannelsLast;
  const at::Tensor in_t = src.contiguous(layout);
  const at::Tensor out_t = dst.is_contiguous(layout) ? dst : at::empty(dst.sizes(), dst.options().memory_format(layout));
  const at::Tensor& big = backward ? dst : src;
  const at::Tensor& small = backward ? src : dst;
  const int64_t N = big.size(0), C = big.size(1), H = big.size(2), W = big.size(3);
  const int64_t OH = small.size(2), OW = small.size(3);
  const at::ScalarType st = src.scalar_type();
  const ComputeKind kind = st == at::kByte ? ComputeKind::Int32 : st == at::kDouble ? ComputeKind::Float64 : ComputeKind::Float32;
  const c10::DeviceGuard guard(dst.device());
  tvk::Stream& stream = current_stream(dst.device().index());
  // One pass from `from` to `to` along W (along_w) or H; the other spatial size is the same
  // in both.
  auto pass = [&](const at::Tensor& from, const at::Tensor& to, bool along_w, int64_t in_len,
                  int64_t out_len, Scale scale) {
    kernels::Resample p;
    p.filter = filter;
    p.antialias = antialias;
    p.align_corners = align_corners;
    p.transpose = backward;
    p.kind = kind;
    if (along_w) {
      p.outer = cl ? N * to.size(2) : N * C * to.size(2);
      p.inner = cl ? C : 1;
    } else {
      p.outer = cl ? N : N * C;
      p.inner = cl ? to.size(3) * C : to.size(3);
    }
    p.in_len = in_len;
    p.out_len = out_len;
    p.scale = scale;
    p.src = operand(from, name);
    p.dst = operand(to, name);
    translate_errors([&] { kernels::resample(stream, p); });
  };
  if (!backward) {
    at::Tensor cur = in_t;
    if (OW != W) {
      at::Tensor next = OH == H ? out_t : at::empty({N, C, H, OW}, in_t.options().memory_format(layout));
      pass(cur, next, true, W, OW, scale_w);
      cur = next;
    }
    if (OH != H) pass(cur, out_t, false, H, OH, scale_h);
    if (OW == W && OH == H) out_t.copy_(in_t);
  } else {
    const at::Tensor mid = at::empty({N, C, H, OW}, in_t.options().memory_format(layout));
    pass(in_t, mid, false, H, OH, scale_h);
    pass(mid, out_t, true, W, OW, scale_w);
  }
  if (!out_t.is_same(dst)) dst.copy_(out_t);
}

// Scales of the trailing dims (D, H, W order) from the op's trailing scale arguments.
std::array<Scale, 3> scales3(Scale d, Scale h, Scale w) { return {d, h, w}; }

// ---------------------------------------------------------------- nearest / nearest-exact

#define TVK_NEAREST_1D(fn, Meta, mode, name)                                                   \
  at::Tensor fn(const at::Tensor& self, c10::SymIntArrayRef output_size, Scale s) {             \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), s);                                    \
    check_dtype(self, true, name);                                                              \
    launch_upsample(mode, false, 1, self, st.outs[0], false, scales3({}, {}, s), name);          \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& self, c10::SymIntArrayRef output_size, Scale s,        \
                       at::Tensor& out) {                                                       \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), s);                                    \
    check_dtype(self, true, name);                                                              \
    launch_upsample(mode, false, 1, self, out, false, scales3({}, {}, s), name);                \
    return out;                                                                                 \
  }

#define TVK_NEAREST_1D_BACKWARD(fn, Meta, mode, name)                                          \
  at::Tensor fn(const at::Tensor& grad, c10::SymIntArrayRef output_size,                        \
                c10::SymIntArrayRef input_size, Scale s) {                                      \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), s); \
    check_dtype(grad, false, name);                                                             \
    launch_upsample(mode, true, 1, grad, st.outs[0], false, scales3({}, {}, s), name);          \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& grad, c10::SymIntArrayRef output_size,                 \
                       c10::SymIntArrayRef input_size, Scale s, at::Tensor& out) {              \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), s); \
    check_dtype(grad, false, name);                                                             \
    launch_upsample(mode, true, 1, grad, out, false, scales3({}, {}, s), name);                 \
    return out;                                                                                 \
  }

#define TVK_NEAREST_2D(fn, Meta, mode, name)                                                   \
  at::Tensor fn(const at::Tensor& self, c10::SymIntArrayRef output_size, Scale h, Scale w) {    \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), h, w);                                 \
    check_dtype(self, true, name);                                                              \
    launch_upsample(mode, false, 2, self, st.outs[0], false, scales3({}, h, w), name);          \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& self, c10::SymIntArrayRef output_size, Scale h,        \
                       Scale w, at::Tensor& out) {                                              \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), h, w);                                 \
    check_dtype(self, true, name);                                                              \
    launch_upsample(mode, false, 2, self, out, false, scales3({}, h, w), name);                 \
    return out;                                                                                 \
  }

#define TVK_NEAREST_2D_BACKWARD(fn, Meta, mode, name)                                          \
  at::Tensor fn(const at::Tensor& grad, c10::SymIntArrayRef output_size,                        \
                c10::SymIntArrayRef input_size, Scale h, Scale w) {                             \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), h, w); \
    check_dtype(grad, false, name);                                                             \
    launch_upsample(mode, true, 2, grad, st.outs[0], false, scales3({}, h, w), name);           \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& grad, c10::SymIntArrayRef output_size,                 \
                       c10::SymIntArrayRef input_size, Scale h, Scale w, at::Tensor& out) {     \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), h, w); \
    check_dtype(grad, false, name);                                                             \
    launch_upsample(mode, true, 2, grad, out, false, scales3({}, h, w), name);                  \
    return out;                                                                                 \
  }

#define TVK_NEAREST_3D(fn, Meta, mode, name)                                                   \
  at::Tensor fn(const at::Tensor& self, c10::SymIntArrayRef output_size, Scale d, Scale h,      \
                Scale w) {                                                                      \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), d, h, w);                              \
    check_dtype(self, true, name);                                                              \
    launch_upsample(mode, false, 3, self, st.outs[0], false, scales3(d, h, w), name);           \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& self, c10::SymIntArrayRef output_size, Scale d,        \
                       Scale h, Scale w, at::Tensor& out) {                                     \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), d, h, w);                              \
    check_dtype(self, true, name);                                                              \
    launch_upsample(mode, false, 3, self, out, false, scales3(d, h, w), name);                  \
    return out;                                                                                 \
  }

#define TVK_NEAREST_3D_BACKWARD(fn, Meta, mode, name)                                          \
  at::Tensor fn(const at::Tensor& grad, c10::SymIntArrayRef output_size,                        \
                c10::SymIntArrayRef input_size, Scale d, Scale h, Scale w) {                    \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), d, h, w); \
    check_dtype(grad, false, name);                                                             \
    launch_upsample(mode, true, 3, grad, st.outs[0], false, scales3(d, h, w), name);            \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& grad, c10::SymIntArrayRef output_size,                 \
                       c10::SymIntArrayRef input_size, Scale d, Scale h, Scale w,               \
                       at::Tensor& out) {                                                       \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), d, h, w); \
    check_dtype(grad, false, name);                                                             \
    launch_upsample(mode, true, 3, grad, out, false, scales3(d, h, w), name);                   \
    return out;                                                                                 \
  }

TVK_NEAREST_1D(upsample_nearest1d, structured_upsample_nearest1d, UpsampleMode::Nearest, "upsample_nearest1d")
TVK_NEAREST_1D(upsample_nearest_exact1d, structured__upsample_nearest_exact1d, UpsampleMode::NearestExact, "_upsample_nearest_exact1d")
TVK_NEAREST_1D_BACKWARD(upsample_nearest1d_backward, structured_upsample_nearest1d_backward, UpsampleMode::Nearest, "upsample_nearest1d_backward")
TVK_NEAREST_1D_BACKWARD(upsample_nearest_exact1d_backward, structured__upsample_nearest_exact1d_backward, UpsampleMode::NearestExact, "_upsample_nearest_exact1d_backward")
TVK_NEAREST_2D(upsample_nearest2d, structured_upsample_nearest2d, UpsampleMode::Nearest, "upsample_nearest2d")
TVK_NEAREST_2D(upsample_nearest_exact2d, structured__upsample_nearest_exact2d, UpsampleMode::NearestExact, "_upsample_nearest_exact2d")
TVK_NEAREST_2D_BACKWARD(upsample_nearest2d_backward, structured_upsample_nearest2d_backward, UpsampleMode::Nearest, "upsample_nearest2d_backward")
TVK_NEAREST_2D_BACKWARD(upsample_nearest_exact2d_backward, structured__upsample_nearest_exact2d_backward, UpsampleMode::NearestExact, "_upsample_nearest_exact2d_backward")
TVK_NEAREST_3D(upsample_nearest3d, structured_upsample_nearest3d, UpsampleMode::Nearest, "upsample_nearest3d")
TVK_NEAREST_3D(upsample_nearest_exact3d, structured__upsample_nearest_exact3d, UpsampleMode::NearestExact, "_upsample_nearest_exact3d")
TVK_NEAREST_3D_BACKWARD(upsample_nearest3d_backward, structured_upsample_nearest3d_backward, UpsampleMode::Nearest, "upsample_nearest3d_backward")
TVK_NEAREST_3D_BACKWARD(upsample_nearest_exact3d_backward, structured__upsample_nearest_exact3d_backward, UpsampleMode::NearestExact, "_upsample_nearest_exact3d_backward")

// ---------------------------------------------------------------- linear / bilinear / trilinear / bicubic
// The CPU's uint8 bilinear / bicubic kernels use their own fixed-point rounding; only the
// floating types are native here.

at::Tensor upsample_linear1d(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align, Scale s) {
  Structured<at::meta::structured_upsample_linear1d> st;
  st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), align, s);
  check_dtype(self, false, "upsample_linear1d");
  launch_upsample(UpsampleMode::Linear, false, 1, self, st.outs[0], align, scales3({}, {}, s), "upsample_linear1d");
  return st.outs[0];
}
at::Tensor& upsample_linear1d_out(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align, Scale s,
                                  at::Tensor& out) {
  Structured<at::meta::structured_upsample_linear1d> st(out);
  st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), align, s);
  check_dtype(self, false, "upsample_linear1d");
  launch_upsample(UpsampleMode::Linear, false, 1, self, out, align, scales3({}, {}, s), "upsample_linear1d");
  return out;
}
at::Tensor upsample_linear1d_backward(const at::Tensor& grad, c10::SymIntArrayRef output_size,
                                      c10::SymIntArrayRef input_size, bool align, Scale s) {
  Structured<at::meta::structured_upsample_linear1d_backward> st;
  st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, s);
  check_dtype(grad, false, "upsample_linear1d_backward");
  launch_upsample(UpsampleMode::Linear, true, 1, grad, st.outs[0], align, scales3({}, {}, s), "upsample_linear1d_backward");
  return st.outs[0];
}
at::Tensor& upsample_linear1d_backward_out(const at::Tensor& grad, c10::SymIntArrayRef output_size,
                                           c10::SymIntArrayRef input_size, bool align, Scale s, at::Tensor& out) {
  Structured<at::meta::structured_upsample_linear1d_backward> st(out);
  st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, s);
  check_dtype(grad, false, "upsample_linear1d_backward");
  launch_upsample(UpsampleMode::Linear, true, 1, grad, out, align, scales3({}, {}, s), "upsample_linear1d_backward");
  return out;
}

// Bilinear / bicubic 2-d forward: floating types through `upsample`, uint8 (the CPU's int16
// weights path) through `resample`.
void interp2d_forward(UpsampleMode mode, const at::Tensor& self, const at::Tensor& out, bool align,
                      Scale h, Scale w, const char* name) {
  if (self.scalar_type() == at::kByte) {
    vk_dtype(at::kByte, name);
    const ResampleFilter filter = mode == UpsampleMode::Cubic ? ResampleFilter::Cubic : ResampleFilter::Linear;
    launch_resample(filter, false, false, self, out, align, h, w, name);
    return;
  }
  check_dtype(self, false, name);
  launch_upsample(mode, false, 2, self, out, align, scales3({}, h, w), name);
}

#define TVK_INTERP_2D(fn, Meta, mode, name)                                                    \
  at::Tensor fn(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align, Scale h,   \
                Scale w) {                                                                      \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), align, h, w);                          \
    interp2d_forward(mode, self, st.outs[0], align, h, w, name);                                \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align,     \
                       Scale h, Scale w, at::Tensor& out) {                                     \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), align, h, w);                          \
    interp2d_forward(mode, self, out, align, h, w, name);                                       \
    return out;                                                                                 \
  }

#define TVK_INTERP_2D_BACKWARD(fn, Meta, mode, name)                                           \
  at::Tensor fn(const at::Tensor& grad, c10::SymIntArrayRef output_size,                        \
                c10::SymIntArrayRef input_size, bool align, Scale h, Scale w) {                 \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, h, w); \
    check_dtype(grad, false, name);                                                             \
    launch_upsample(mode, true, 2, grad, st.outs[0], align, scales3({}, h, w), name);           \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& grad, c10::SymIntArrayRef output_size,                 \
                       c10::SymIntArrayRef input_size, bool align, Scale h, Scale w,            \
                       at::Tensor& out) {                                                       \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, h, w); \
    check_dtype(grad, false, name);                                                             \
    launch_upsample(mode, true, 2, grad, out, align, scales3({}, h, w), name);                  \
    return out;                                                                                 \
  }

TVK_INTERP_2D(upsample_bilinear2d, structured_upsample_bilinear2d, UpsampleMode::Linear, "upsample_bilinear2d")
TVK_INTERP_2D_BACKWARD(upsample_bilinear2d_backward, structured_upsample_bilinear2d_backward, UpsampleMode::Linear, "upsample_bilinear2d_backward")
TVK_INTERP_2D(upsample_bicubic2d, structured_upsample_bicubic2d, UpsampleMode::Cubic, "upsample_bicubic2d")
TVK_INTERP_2D_BACKWARD(upsample_bicubic2d_backward, structured_upsample_bicubic2d_backward, UpsampleMode::Cubic, "upsample_bicubic2d_backward")

// ---------------------------------------------------------------- anti-aliased 2-d

// The CPU's dtypes: float32 / float64 / uint8 forward ("compute_index_ranges_weights"),
// float32 / float64 backward.
void check_aa_dtype(const at::Tensor& t, bool backward, const char* cpu_name, const char* name) {
  const at::ScalarType s = t.scalar_type();
  if (!(s == at::kFloat || s == at::kDouble || (!backward && s == at::kByte)))
    raise_not_implemented_for(cpu_name, s);
  vk_dtype(s, name);
}

#define TVK_AA_2D(fn, Meta, filter, name)                                                      \
  at::Tensor fn(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align, Scale h,   \
                Scale w) {                                                                      \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), align, h, w);                          \
    check_aa_dtype(self, false, "compute_index_ranges_weights", name);                          \
    launch_resample(filter, true, false, self, st.outs[0], align, h, w, name);                  \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align,     \
                       Scale h, Scale w, at::Tensor& out) {                                     \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), align, h, w);                          \
    check_aa_dtype(self, false, "compute_index_ranges_weights", name);                          \
    launch_resample(filter, true, false, self, out, align, h, w, name);                         \
    return out;                                                                                 \
  }

#define TVK_AA_2D_BACKWARD(fn, Meta, filter, cpu_name, name)                                   \
  at::Tensor fn(const at::Tensor& grad, c10::SymIntArrayRef output_size,                        \
                c10::SymIntArrayRef input_size, bool align, Scale h, Scale w) {                 \
    Structured<at::meta::Meta> st;                                                              \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, h, w); \
    check_aa_dtype(grad, true, cpu_name, name);                                                 \
    launch_resample(filter, true, true, grad, st.outs[0], align, h, w, name);                   \
    return st.outs[0];                                                                          \
  }                                                                                             \
  at::Tensor& fn##_out(const at::Tensor& grad, c10::SymIntArrayRef output_size,                 \
                       c10::SymIntArrayRef input_size, bool align, Scale h, Scale w,            \
                       at::Tensor& out) {                                                       \
    Structured<at::meta::Meta> st(out);                                                         \
    st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, h, w); \
    check_aa_dtype(grad, true, cpu_name, name);                                                 \
    launch_resample(filter, true, true, grad, out, align, h, w, name);                          \
    return out;                                                                                 \
  }

TVK_AA_2D(upsample_bilinear2d_aa, structured__upsample_bilinear2d_aa, ResampleFilter::Linear, "_upsample_bilinear2d_aa")
TVK_AA_2D(upsample_bicubic2d_aa, structured__upsample_bicubic2d_aa, ResampleFilter::Cubic, "_upsample_bicubic2d_aa")
TVK_AA_2D_BACKWARD(upsample_bilinear2d_aa_backward, structured__upsample_bilinear2d_aa_backward, ResampleFilter::Linear,
                   "upsample_bilinear2d_aa_backward_cpu", "_upsample_bilinear2d_aa_backward")
TVK_AA_2D_BACKWARD(upsample_bicubic2d_aa_backward, structured__upsample_bicubic2d_aa_backward, ResampleFilter::Cubic,
                   "upsample_bicubic2d_aa_backward_cpu", "_upsample_bicubic2d_aa_backward")

at::Tensor upsample_trilinear3d(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align, Scale d,
                                Scale h, Scale w) {
  Structured<at::meta::structured_upsample_trilinear3d> st;
  st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), align, d, h, w);
  check_dtype(self, false, "upsample_trilinear3d");
  launch_upsample(UpsampleMode::Linear, false, 3, self, st.outs[0], align, scales3(d, h, w), "upsample_trilinear3d");
  return st.outs[0];
}
at::Tensor& upsample_trilinear3d_out(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align,
                                     Scale d, Scale h, Scale w, at::Tensor& out) {
  Structured<at::meta::structured_upsample_trilinear3d> st(out);
  st.meta(self, C10_AS_INTARRAYREF_SLOW(output_size), align, d, h, w);
  check_dtype(self, false, "upsample_trilinear3d");
  launch_upsample(UpsampleMode::Linear, false, 3, self, out, align, scales3(d, h, w), "upsample_trilinear3d");
  return out;
}
at::Tensor upsample_trilinear3d_backward(const at::Tensor& grad, c10::SymIntArrayRef output_size,
                                         c10::SymIntArrayRef input_size, bool align, Scale d, Scale h, Scale w) {
  Structured<at::meta::structured_upsample_trilinear3d_backward> st;
  st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, d, h, w);
  check_dtype(grad, false, "upsample_trilinear3d_backward");
  launch_upsample(UpsampleMode::Linear, true, 3, grad, st.outs[0], align, scales3(d, h, w), "upsample_trilinear3d_backward");
  return st.outs[0];
}
at::Tensor& upsample_trilinear3d_backward_out(const at::Tensor& grad, c10::SymIntArrayRef output_size,
                                              c10::SymIntArrayRef input_size, bool align, Scale d, Scale h,
                                              Scale w, at::Tensor& out) {
  Structured<at::meta::structured_upsample_trilinear3d_backward> st(out);
  st.meta(grad, C10_AS_INTARRAYREF_SLOW(output_size), C10_AS_INTARRAYREF_SLOW(input_size), align, d, h, w);
  check_dtype(grad, false, "upsample_trilinear3d_backward");
  launch_upsample(UpsampleMode::Linear, true, 3, grad, out, align, scales3(d, h, w), "upsample_trilinear3d_backward");
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define TVK_REGISTER(op, fn)                  \
  m.impl(op, TORCH_FN(fn));                   \
  m.impl(op ".out", TORCH_FN(fn##_out));
#define TVK_REGISTER_BACKWARD(op, fn)         \
  m.impl(op, TORCH_FN(fn));                   \
  m.impl(op ".grad_input", TORCH_FN(fn##_out));
  TVK_REGISTER("upsample_nearest1d", upsample_nearest1d)
  TVK_REGISTER("_upsample_nearest_exact1d", upsample_nearest_exact1d)
  TVK_REGISTER_BACKWARD("upsample_nearest1d_backward", upsample_nearest1d_backward)
  TVK_REGISTER_BACKWARD("_upsample_nearest_exact1d_backward", upsample_nearest_exact1d_backward)
  TVK_REGISTER("upsample_nearest2d", upsample_nearest2d)
  TVK_REGISTER("_upsample_nearest_exact2d", upsample_nearest_exact2d)
  TVK_REGISTER_BACKWARD("upsample_nearest2d_backward", upsample_nearest2d_backward)
  TVK_REGISTER_BACKWARD("_upsample_nearest_exact2d_backward", upsample_nearest_exact2d_backward)
  TVK_REGISTER("upsample_nearest3d", upsample_nearest3d)
  TVK_REGISTER("_upsample_nearest_exact3d", upsample_nearest_exact3d)
  TVK_REGISTER_BACKWARD("upsample_nearest3d_backward", upsample_nearest3d_backward)
  TVK_REGISTER_BACKWARD("_upsample_nearest_exact3d_backward", upsample_nearest_exact3d_backward)
  TVK_REGISTER("upsample_linear1d", upsample_linear1d)
  TVK_REGISTER_BACKWARD("upsample_linear1d_backward", upsample_linear1d_backward)
  TVK_REGISTER("upsample_bilinear2d", upsample_bilinear2d)
  TVK_REGISTER_BACKWARD("upsample_bilinear2d_backward", upsample_bilinear2d_backward)
  TVK_REGISTER("upsample_trilinear3d", upsample_trilinear3d)
  TVK_REGISTER_BACKWARD("upsample_trilinear3d_backward", upsample_trilinear3d_backward)
  TVK_REGISTER("upsample_bicubic2d", upsample_bicubic2d)
  TVK_REGISTER_BACKWARD("upsample_bicubic2d_backward", upsample_bicubic2d_backward)
  TVK_REGISTER("_upsample_bilinear2d_aa", upsample_bilinear2d_aa)
  TVK_REGISTER_BACKWARD("_upsample_bilinear2d_aa_backward", upsample_bilinear2d_aa_backward)
  TVK_REGISTER("_upsample_bicubic2d_aa", upsample_bicubic2d_aa)
  TVK_REGISTER_BACKWARD("_upsample_bicubic2d_aa_backward", upsample_bicubic2d_aa_backward)
#undef TVK_REGISTER
#undef TVK_REGISTER_BACKWARD
}

}  // namespace tvk::aten
