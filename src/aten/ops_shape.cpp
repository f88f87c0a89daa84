// Native data movement and creation ops: cat (so stack, hstack, ...), flip, roll, tril /
// triu, eye, arange / range / linspace / logspace, repeat_interleave's index expansion, and
// reflection / replication padding (1-D, 2-D and 3-D, forward and backward; negative pads crop).
//
// cat, roll and eye compose views with the native copy / fill kernels (one copy dispatch per
// input or per rolled piece); flip is one dispatch of the element-wise copy kernel over a
// geometry with negated strides; the others run src/kernels/shape.h. Checks and messages are
// PyTorch's: its meta functions where the op is structured, otherwise the CPU's.
// (repeat, constant_pad_nd, clone / contiguous, full, stack are PyTorch composites of these
// and of views + copies.)
#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Padding.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorShape.h>
#include <ATen/ops/cat_meta.h>
#include <ATen/ops/reflection_pad1d_backward_meta.h>
#include <ATen/ops/reflection_pad1d_meta.h>
#include <ATen/ops/reflection_pad3d_backward_meta.h>
#include <ATen/ops/reflection_pad3d_meta.h>
#include <ATen/ops/replication_pad1d_backward_meta.h>
#include <ATen/ops/replication_pad1d_meta.h>
#include <ATen/ops/replication_pad2d_meta.h>
#include <ATen/ops/replication_pad3d_meta.h>
#include <ATen/ops/tril_meta.h>
#include <ATen/ops/triu_meta.h>
#include <ATen/ops/unfold_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <string>

#include "aten/launch.h"
#include "aten/ops_reduce.h"
#include "aten/vk_common.h"
#include "kernels/shape.h"

namespace tvk::aten {
namespace {

using kernels::ComputeKind;

tvk::Stream& stream_for(const at::Tensor& t) { return current_stream(t.device().index()); }

// A contiguous tensor the kernel can write in place of `out` (out itself when possible);
// finish() copies it back.
at::Tensor writable(const at::Tensor& out) {
  return out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
}
void finish(const at::Tensor& tmp, const at::Tensor& out) {
  if (!tmp.is_same(out)) out.copy_(tmp);
}

// ---------------------------------------------------------------- cat
void cat_into(const at::ITensorListRef& tensors, int64_t dim, const at::Tensor& out) {
  // As on CUDA: every input on the output's device (a CPU tensor is not copied silently).
  for (const at::Tensor& t : tensors)
    TORCH_CHECK(t.device() == out.device(),
                "torch.cat(): all input tensors must be on the same device. Received ", t.device(),
                " and ", out.device());
  if (out.numel() == 0) return;
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    if (at::native::cat_should_skip_tensor(t)) continue;  // legacy empty 1-D tensors
    const int64_t len = t.size(dim);
    if (len > 0) out.narrow(dim, offset, len).copy_(t);
    offset += len;
  }
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  Structured<at::meta::structured_cat> s;
  const auto pre = s.meta(tensors, dim);
  cat_into(tensors, pre.dim, s.outs[0]);
  return s.outs[0];
}

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  Structured<at::meta::structured_cat> s(out);
  const auto pre = s.meta(tensors, dim);
  at::assert_no_internal_overlap(out);
  for (const at::Tensor& t : tensors) at::assert_no_overlap(out, t);
  cat_into(tensors, pre.dim, out);
  return out;
}

// ---------------------------------------------------------------- flip / roll
at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  const int64_t ndim = self.dim();
  const auto flipped = at::dim_list_to_bitset(dims, ndim);
  if (self.is_complex()) {  // the same flip of the real view (its trailing (re, im) dim kept)
    std::vector<int64_t> real_dims;
    for (int64_t d = 0; d < ndim; ++d)
      if (flipped[d]) real_dims.push_back(d);
    return at::view_as_complex(
        tvk::aten::flip(at::view_as_real(self.resolve_conj().resolve_neg()), real_dims));
  }
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Preserve);
  if (self.numel() == 0) return out;
  const auto type = vk_dtype(self.scalar_type(), "flip");
  TORCH_CHECK_NOT_IMPLEMENTED(ndim <= kernels::kMaxDims, "torch-vk: flip supports at most ",
                              kernels::kMaxDims, " dims, got ", ndim);
  kernels::Geometry g;
  g.ndim = static_cast<int32_t>(ndim);
  kernels::Operand ops[2] = {operand(out, "flip"), operand(self, "flip")};
  int64_t shift = 0;  // elements from self's element 0 to the flipped view's element 0
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t k = ndim - 1 - d;  // L2 geometry: dim 0 fastest
    g.sizes[k] = self.size(d);
    g.strides[0][k] = out.stride(d);
    g.strides[1][k] = flipped[d] ? -self.stride(d) : self.stride(d);
    if (flipped[d]) shift += (self.size(d) - 1) * self.stride(d);
  }
  ops[1].address += static_cast<uint64_t>(shift * static_cast<int64_t>(self.element_size()));
  ops[1].dtype = type;
  const c10::DeviceGuard guard(self.device());
  const auto kind = copy_kind_for(self.scalar_type(), self.scalar_type());
  translate_errors(
      [&] { kernels::elementwise(stream_for(self), "copy", kind, self.numel(), g, ops, 2); });
  return out;
}

at::Tensor roll_impl(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  if (dims.size() != 1 || shifts.size() != 1) {
    // The CPU's roll_common: flat roll, or one dim at a time.
    TORCH_CHECK(!shifts.empty(), "`shifts` required");
    if (dims.empty() && shifts.size() == 1) {
      const at::Tensor flat = self.contiguous().view(self.numel());
      return roll_impl(flat, shifts, at::IntArrayRef{0}).view(self.sizes());
    }
    TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ",
                shifts.size(), ", dims:", dims.size());
    const at::Tensor first = roll_impl(self, shifts.slice(0, 1), dims.slice(0, 1));
    return roll_impl(first, shifts.slice(1), dims.slice(1));
  }
  if (self.numel() == 0) return self.clone(at::MemoryFormat::Preserve);
  const int64_t dim = dims[0];
  const int64_t size = self.size(dim);
  int64_t start = (size - shifts[0]) % size;
  if (start < 0) start += size;
  return at::cat({self.narrow(dim, start, size - start), self.narrow(dim, 0, start)}, dim);
}

// ---------------------------------------------------------------- tril / triu
void triangle_into(const at::Tensor& self, int64_t diagonal, const at::Tensor& out, bool upper) {
  if (out.numel() == 0) return;
  vk_dtype(self.scalar_type(), upper ? "triu" : "tril");
  const at::Tensor in = self.contiguous();
  const at::Tensor dst = writable(out);
  const int64_t rows = in.size(-2), cols = in.size(-1);
  const int64_t batch = in.numel() / (rows * cols);
  const auto o = operand(dst, "tril"), i = operand(in, "tril");
  const c10::DeviceGuard guard(self.device());
  translate_errors(
      [&] { kernels::triangle(stream_for(self), upper, batch, rows, cols, diagonal, o, i); });
  finish(dst, out);
}

template <class Meta, bool Upper>
at::Tensor& triangle_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
  Structured<Meta> s(out);
  s.meta(self, diagonal);
  triangle_into(self, diagonal, out, Upper);
  return out;
}

// ---------------------------------------------------------------- eye
at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& result) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  result.resize_({n, m});
  if (result.numel() == 0) return result;
  result.zero_();
  result.diagonal().fill_(1);
  return result;
}
at::Tensor& eye_out(int64_t n, at::Tensor& result) { return eye_m_out(n, n, result); }

// ---------------------------------------------------------------- arange / range / linspace / logspace
bool is_float(at::ScalarType t) { return at::isFloatingType(t); }

// Float math type for `dtype`: float64 where the device has it (float32 results then match
// the CPU's double accumulation), float32 for float16 / bfloat16 (the CPU's float
// accumulation) and on devices without float64.
ComputeKind float_kind(const at::Tensor& out) {
  const auto t = out.scalar_type();
  if (t == at::kHalf || t == at::kBFloat16) return ComputeKind::Float32;
  if (t == at::kDouble) return ComputeKind::Float64;
  return is_supported_dtype(at::kDouble, out.device().index()) ? ComputeKind::Float64
                                                              : ComputeKind::Float32;
}

void launch_range(const at::Tensor& result, kernels::Range p, const char* name) {
  if (result.numel() == 0) return;
  const at::Tensor r = writable(result);
  p.numel = r.numel();
  p.out = operand(r, name);
  const c10::DeviceGuard guard(result.device());
  translate_errors([&] { kernels::range(stream_for(result), p); });
  finish(r, result);
}

void check_range_dtype(const at::Tensor& result, const char* cpu_name) {
  const auto t = result.scalar_type();
  if (t == at::kBool || !(at::isIntegralType(t, false) || is_float(t)))
    raise_not_implemented_for(cpu_name, t);
}

// Arange / range values: start + step * i in the CPU's accumulate type.
kernels::Range arange_problem(const at::Tensor& result, const at::Scalar& start,
                              const at::Scalar& step) {
  kernels::Range p;
  if (is_float(result.scalar_type())) {
    p.kind = float_kind(result);
    p.start = start.to<double>();
    p.step = step.to<double>();
  } else {
    p.kind = ComputeKind::Int64;
    p.int_start = start.to<int64_t>();
    p.int_step = step.to<int64_t>();
  }
  return p;
}

at::Tensor& arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                       at::Tensor& result) {
  check_range_dtype(result, "arange_cpu");
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, result.scalar_type(), "arange_vk", [&] {
    size = at::native::compute_arange_size<scalar_t>(start, end, step);
  });
  if (result.numel() != size) {
    if (result.numel() > 0)
      TORCH_WARN("The number of elements in the out tensor of shape ", result.sizes(), " is ",
                 result.numel(), " which does not match the computed number of elements ", size,
                 ". Note that this may occur as a result of rounding error. The out tensor will "
                 "be resized to a tensor of shape (", size, ",).");
    result.resize_({size});
  }
  launch_range(result, arange_problem(result, start, step), "arange");
  return result;
}

at::Tensor& range_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                      at::Tensor& result) {
  check_range_dtype(result, "range_cpu");
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, result.scalar_type(), "range_vk", [&] {
    using accscalar_t = at::acc_type<scalar_t, false>;
    const auto xstart = start.to<accscalar_t>();
    const auto xend = end.to<accscalar_t>();
    const auto xstep = step.to<accscalar_t>();
    TORCH_CHECK(xstep > 0 || xstep < 0, "step must be nonzero");
    TORCH_CHECK(std::isfinite(static_cast<double>(xstart)) &&
                    std::isfinite(static_cast<double>(xend)),
                "unsupported range: ", xstart, " -> ", xend);
    TORCH_CHECK(((xstep > 0) && (xend >= xstart)) || ((xstep < 0) && (xend <= xstart)),
                "upper bound and larger bound inconsistent with step sign");
    size = static_cast<int64_t>(((xend - xstart) / xstep) + 1);
  });
  if (result.numel() != size) result.resize_({size});
  launch_range(result, arange_problem(result, start, step), "range");
  return result;
}

// linspace / logspace: the CPU computes `step` and the values in the output type for floating
// outputs and in double for integer outputs.
kernels::Range spaced_problem(const at::Tensor& result, const at::Scalar& start,
                              const at::Scalar& end, int64_t steps) {
  kernels::Range p;
  p.mode = kernels::Range::Mode::Linspace;
  const bool integral = !is_float(result.scalar_type());
  p.kind = integral ? (is_supported_dtype(at::kDouble, result.device().index())
                           ? ComputeKind::Float64
                           : ComputeKind::Float32)
                    : float_kind(result);
  double s = start.to<double>(), e = end.to<double>();
  if (integral) {  // start / end are first converted to the integer type
    AT_DISPATCH_INTEGRAL_TYPES(result.scalar_type(), "linspace_vk", [&] {
      s = static_cast<double>(start.to<scalar_t>());
      e = static_cast<double>(end.to<scalar_t>());
    });
  }
  p.start = s;
  p.end = e;
  p.step = (e - s) / static_cast<double>(steps - 1);
  if (!integral) {  // the CPU's step is computed and rounded in the output type
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, result.scalar_type(), "linspace_vk", [&] {
      const scalar_t st = start.to<scalar_t>(), en = end.to<scalar_t>();
      p.start = static_cast<double>(st);
      p.end = static_cast<double>(en);
      p.step = static_cast<double>(static_cast<scalar_t>((en - st) / (steps - 1)));
    });
  }
  return p;
}

at::Tensor& linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps,
                         at::Tensor& result) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (result.numel() != steps) result.resize_({steps});
  if (steps == 0) return result;
  if (steps == 1) return result.fill_(start);
  check_range_dtype(result, "linspace_cpu");
  launch_range(result, spaced_problem(result, start, end, steps), "linspace");
  return result;
}

at::Tensor& logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps,
                         double base, at::Tensor& result) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (result.numel() != steps) result.resize_({steps});
  if (steps == 0) return result;
  if (steps == 1) return result.fill_(std::pow(base, start.to<double>()));
  check_range_dtype(result, "logspace_cpu");
  kernels::Range p;
  p.mode = kernels::Range::Mode::Logspace;
  // The CPU converts start / end to the step type (double for integer outputs) untruncated.
  p.kind = is_float(result.scalar_type()) ? float_kind(result)
           : is_supported_dtype(at::kDouble, result.device().index()) ? ComputeKind::Float64
                                                                       : ComputeKind::Float32;
  p.start = start.to<double>();
  p.end = end.to<double>();
  p.step = (p.end - p.start) / static_cast<double>(steps - 1);
  if (is_float(result.scalar_type())) {  // start, end and step in the output type, as on the CPU
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, result.scalar_type(), "logspace_vk", [&] {
      const scalar_t st = start.to<scalar_t>(), en = end.to<scalar_t>();
      p.start = static_cast<double>(st);
      p.end = static_cast<double>(en);
      p.step = static_cast<double>(static_cast<scalar_t>((en - st) / static_cast<scalar_t>(steps - 1)));
    });
  }
  p.base = base;
  launch_range(result, p, "logspace");
  return result;
}

// ---------------------------------------------------------------- repeat_interleave
at::Tensor repeat_interleave(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  if (repeats.scalar_type() != at::kLong && repeats.scalar_type() != at::kInt)
    raise_not_implemented_for("repeat_interleave_cpu", repeats.scalar_type());
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  if (repeats.size(0) == 0) return at::empty_like(repeats, at::MemoryFormat::Contiguous);
  const at::Tensor cumsum = repeats.cumsum(0, at::kLong);
  int64_t total = 0;
  if (output_size.has_value()) {
    total = output_size->guard_int(__FILE__, __LINE__);
  } else {
    // The output size lives on the device: one read-back of (total, smallest repeat).
    const at::Tensor info =
        at::stack({cumsum[-1], at::amin(repeats, {0}).to(at::kLong)}).cpu();
    total = info[0].item<int64_t>();
    TORCH_CHECK(info[1].item<int64_t>() >= 0, "repeats can not be negative");
  }
  at::Tensor result = at::empty({total}, repeats.options());
  if (total == 0) return result;
  const auto c = operand(cumsum, "repeat_interleave"), o = operand(result, "repeat_interleave");
  const c10::DeviceGuard guard(repeats.device());
  translate_errors([&] {
    kernels::repeat_index(stream_for(repeats), repeats.size(0), total, c, o);
  });
  return result;
}

// ---------------------------------------------------------------- padding
// The padded dims of `t` (1, 2 or 3 trailing dims) as [batch, d, h, w].
void pad_view(const at::Tensor& t, int dims, int64_t& batch, int64_t& d, int64_t& h, int64_t& w) {
  w = t.size(-1);
  h = dims >= 2 ? t.size(-2) : 1;
  d = dims == 3 ? t.size(-3) : 1;
  batch = (d * h * w) == 0 ? 0 : t.numel() / (d * h * w);
}

// `padding` is PyTorch's (left, right[, top, bottom[, front, back]]); negative entries crop.
// The callers ran PyTorch's checks (reflection: each pad < its input size).
kernels::Pad pad_geometry(const at::Tensor& input, const at::Tensor& output, int dims,
                          at::IntArrayRef padding, bool reflect) {
  kernels::Pad g;
  g.reflect = reflect;
  pad_view(input, dims, g.batch, g.d, g.h, g.w);
  int64_t ob;
  pad_view(output, dims, ob, g.od, g.oh, g.ow);
  g.pad_left = padding[0];
  g.pad_top = dims >= 2 ? padding[2] : 0;
  g.pad_front = dims == 3 ? padding[4] : 0;
  return g;
}

void launch_pad(const at::Tensor& input, const at::Tensor& output, int dims,
                at::IntArrayRef padding, bool reflect, const char* name) {
  if (output.numel() == 0) return;
  if (input.scalar_type() == at::kBool) raise_not_implemented_for(name, at::kBool);
  vk_dtype(input.scalar_type(), name);
  const kernels::Pad g = pad_geometry(input, output, dims, padding, reflect);
  const at::Tensor in = input.contiguous();
  const at::Tensor dst = writable(output);
  const auto o = operand(dst, name), i = operand(in, name);
  const c10::DeviceGuard guard(input.device());
  translate_errors([&] { kernels::pad(stream_for(input), g, o, i); });
  finish(dst, output);
}

void launch_pad_backward(const at::Tensor& grad_output, const at::Tensor& input,
                         const at::Tensor& grad_input, int dims, at::IntArrayRef padding,
                         bool reflect, const char* name) {
  if (grad_input.numel() == 0) return;
  if (!at::isFloatingType(grad_output.scalar_type()))
    raise_not_implemented_for(name, grad_output.scalar_type());
  vk_dtype(grad_output.scalar_type(), name);
  const kernels::Pad g = pad_geometry(input, grad_output, dims, padding, reflect);
  const at::Tensor go = grad_output.contiguous();
  const at::Tensor dst = writable(grad_input);
  const bool f64 = go.scalar_type() == at::kDouble || dst.scalar_type() == at::kDouble;
  const auto gi = operand(dst, name), gout = operand(go, name);
  const c10::DeviceGuard guard(input.device());
  translate_errors([&] {
    kernels::pad_backward(stream_for(input), g, f64 ? ComputeKind::Float64 : ComputeKind::Float32,
                          gi, gout);
  });
  finish(dst, grad_input);
}

template <class Meta, bool Reflect, int Dims>
at::Tensor& pad_out(const at::Tensor& input, at::IntArrayRef padding, at::Tensor& out) {
  Structured<Meta> s(out);
  s.meta(input, padding);
  static const std::string name = std::string(Reflect ? "reflection_pad" : "replication_pad") +
                                  std::to_string(Dims) + "d";
  launch_pad(input, out, Dims, padding, Reflect, name.c_str());
  return out;
}

// reflection_pad3d_backward is structured (its meta checks the sizes).
at::Tensor& reflection_pad3d_backward_out(const at::Tensor& grad_output, const at::Tensor& input,
                                          at::IntArrayRef padding, at::Tensor& grad_input) {
  Structured<at::meta::structured_reflection_pad3d_backward> s(grad_input);
  s.meta(grad_output, input, padding);
  launch_pad_backward(grad_output, input, grad_input, 3, padding, true, "reflection_pad3d_backward");
  return grad_input;
}

// replication_pad3d_backward is not structured: the CPU's checks
// (replication_pad3d_backward_out_cpu_template).
at::Tensor& replication_pad3d_backward_out(const at::Tensor& grad_output, const at::Tensor& input,
                                           at::IntArrayRef padding, at::Tensor& grad_input) {
  TORCH_CHECK(padding.size() == 6, "padding size is expected to be 6");
  int dim_w = 3, dim_h = 2, dim_d = 1;
  if (input.dim() == 5) {
    dim_w++;
    dim_h++;
    dim_d++;
  }
  const int64_t output_d = input.size(dim_d) + padding[4] + padding[5];
  const int64_t output_h = input.size(dim_h) + padding[2] + padding[3];
  const int64_t output_w = input.size(dim_w) + padding[0] + padding[1];
  TORCH_CHECK(output_w == grad_output.size(dim_w), "gradOutput width unexpected. Expected: ",
              output_w, ", Got: ", grad_output.size(dim_w));
  TORCH_CHECK(output_h == grad_output.size(dim_h), "gradOutput height unexpected. Expected: ",
              output_h, ", Got: ", grad_output.size(dim_h));
  TORCH_CHECK(output_d == grad_output.size(dim_d), "gradOutput depth unexpected. Expected: ",
              output_d, ", Got: ", grad_output.size(dim_d));
  grad_input.resize_as_(input);
  launch_pad_backward(grad_output, input, grad_input, 3, padding, false, "replication_pad3d_backward");
  return grad_input;
}
at::Tensor replication_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                      at::IntArrayRef padding) {
  at::Tensor grad_input = at::empty_like(input, at::MemoryFormat::Contiguous);
  return replication_pad3d_backward_out(grad_output, input, padding, grad_input);
}

template <class Meta, bool Reflect>
at::Tensor& pad1d_backward_out(const at::Tensor& grad_output, const at::Tensor& input,
                               at::IntArrayRef padding, at::Tensor& grad_input) {
  Structured<Meta> s(grad_input);
  s.meta(grad_output, input, padding);
  launch_pad_backward(grad_output, input, grad_input, 1, padding, Reflect,
                      Reflect ? "reflection_pad1d_backward_cpu" : "replication_pad1d_backward_cpu");
  return grad_input;
}

// reflection_pad2d is not structured: the CPU's checks (reflection_pad2d_out_template).
at::Tensor& reflection_pad2d_out(const at::Tensor& input, at::IntArrayRef padding,
                                 at::Tensor& output) {
  int dim_w = 2, dim_h = 1, dim_slices = 0;
  int64_t nbatch = 1;
  at::native::padding::check_valid_input<2>(input, padding);
  const int64_t ndim = input.dim();
  if (ndim == 4) {
    nbatch = input.size(0);
    dim_w++;
    dim_h++;
    dim_slices++;
  }
  const int64_t pad_l = padding[0], pad_r = padding[1], pad_t = padding[2], pad_b = padding[3];
  const int64_t nplane = input.size(dim_slices);
  const int64_t input_h = input.size(dim_h), input_w = input.size(dim_w);
  TORCH_CHECK(pad_l < input_w && pad_r < input_w,
              "Argument #4: Padding size should be less than the corresponding input dimension, "
              "but got: padding (", pad_l, ", ", pad_r, ") at dimension ", dim_w, " of input ",
              input.sizes());
  TORCH_CHECK(pad_t < input_h && pad_b < input_h,
              "Argument #6: Padding size should be less than the corresponding input dimension, "
              "but got: padding (", pad_t, ", ", pad_b, ") at dimension ", dim_h, " of input ",
              input.sizes());
  const int64_t output_h = input_h + pad_t + pad_b, output_w = input_w + pad_l + pad_r;
  TORCH_CHECK(output_w >= 1 || output_h >= 1, "input (H: ", input_h, ", W: ", input_w,
              ") is too small. Calculated output H: ", output_h, " W: ", output_w);
  if (ndim == 3)
    output.resize_({nplane, output_h, output_w});
  else
    output.resize_({nbatch, nplane, output_h, output_w});
  launch_pad(input, output, 2, padding, true, "reflection_pad2d");
  return output;
}

at::Tensor reflection_pad2d(const at::Tensor& input, at::IntArrayRef padding) {
  at::Tensor output = at::empty({0}, input.options());
  reflection_pad2d_out(input, padding, output);
  return output;
}

// The non-structured 2-D backward ops (the CPU's checks).
at::Tensor& pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& input,
                               at::IntArrayRef padding, at::Tensor& grad_input, bool reflect) {
  TORCH_CHECK(padding.size() == 4, "padding size is expected to be 4");
  int dim_w = 2, dim_h = 1;
  if (input.dim() == 4) {
    dim_w++;
    dim_h++;
  }
  const int64_t output_h = input.size(dim_h) + padding[2] + padding[3];
  const int64_t output_w = input.size(dim_w) + padding[0] + padding[1];
  const char* what = reflect ? "grad_output" : "gradOutput";
  TORCH_CHECK(output_w == grad_output.size(dim_w), what, " width unexpected. Expected: ",
              output_w, ", Got: ", grad_output.size(dim_w));
  TORCH_CHECK(output_h == grad_output.size(dim_h), what, " height unexpected. Expected: ",
              output_h, ", Got: ", grad_output.size(dim_h));
  grad_input.resize_as_(input);
  launch_pad_backward(grad_output, input, grad_input, 2, padding, reflect,
                      reflect ? "reflection_pad2d_backward_cpu" : "replication_pad2d_backward_cpu");
  return grad_input;
}

at::Tensor& reflection_pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& input,
                                          at::IntArrayRef padding, at::Tensor& grad_input) {
  return pad2d_backward_out(grad_output, input, padding, grad_input, true);
}
at::Tensor reflection_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                     at::IntArrayRef padding) {
  at::Tensor grad_input = at::empty_like(input, at::MemoryFormat::Contiguous);
  return pad2d_backward_out(grad_output, input, padding, grad_input, true);
}
at::Tensor& replication_pad2d_backward_out(const at::Tensor& grad_output, const at::Tensor& input,
                                           at::IntArrayRef padding, at::Tensor& grad_input) {
  return pad2d_backward_out(grad_output, input, padding, grad_input, false);
}
at::Tensor replication_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                      at::IntArrayRef padding) {
  at::Tensor grad_input = at::empty_like(input, at::MemoryFormat::Contiguous);
  return pad2d_backward_out(grad_output, input, padding, grad_input, false);
}

// A view (repeat and tile use it): PyTorch's own strided-view implementation.
at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  return at::native::unfold(self, dimension, size, step);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
  m.impl("flip", TORCH_FN(flip));
  m.impl("unfold", TORCH_FN(unfold));
  m.impl("roll", TORCH_FN(roll_impl));
  m.impl("tril.out", TORCH_FN((triangle_out<at::meta::structured_tril, false>)));
  m.impl("triu.out", TORCH_FN((triangle_out<at::meta::structured_triu, true>)));
  m.impl("eye.out", TORCH_FN(eye_out));
  m.impl("eye.m_out", TORCH_FN(eye_m_out));
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("range.out", TORCH_FN(range_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeat_interleave));
  m.impl("reflection_pad1d.out",
         TORCH_FN((pad_out<at::meta::structured_reflection_pad1d, true, 1>)));
  m.impl("replication_pad1d.out",
         TORCH_FN((pad_out<at::meta::structured_replication_pad1d, false, 1>)));
  m.impl("replication_pad2d.out",
         TORCH_FN((pad_out<at::meta::structured_replication_pad2d, false, 2>)));
  m.impl("reflection_pad2d", TORCH_FN(reflection_pad2d));
  m.impl("reflection_pad2d.out", TORCH_FN(reflection_pad2d_out));
  m.impl("reflection_pad1d_backward.grad_input",
         TORCH_FN((pad1d_backward_out<at::meta::structured_reflection_pad1d_backward, true>)));
  m.impl("replication_pad1d_backward.grad_input",
         TORCH_FN((pad1d_backward_out<at::meta::structured_replication_pad1d_backward, false>)));
  m.impl("reflection_pad2d_backward", TORCH_FN(reflection_pad2d_backward));
  m.impl("reflection_pad2d_backward.grad_input", TORCH_FN(reflection_pad2d_backward_out));
  m.impl("replication_pad2d_backward", TORCH_FN(replication_pad2d_backward));
  m.impl("replication_pad2d_backward.grad_input", TORCH_FN(replication_pad2d_backward_out));
  m.impl("reflection_pad3d.out",
         TORCH_FN((pad_out<at::meta::structured_reflection_pad3d, true, 3>)));
  m.impl("replication_pad3d.out",
         TORCH_FN((pad_out<at::meta::structured_replication_pad3d, false, 3>)));
  m.impl("reflection_pad3d_backward.grad_input", TORCH_FN(reflection_pad3d_backward_out));
  m.impl("replication_pad3d_backward", TORCH_FN(replication_pad3d_backward));
  m.impl("replication_pad3d_backward.grad_input", TORCH_FN(replication_pad3d_backward_out));
}

}  // namespace tvk::aten
