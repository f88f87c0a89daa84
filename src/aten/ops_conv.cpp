// Native convolution: convolution_overrideable and convolution_backward_overrideable.
//
// at::convolution -> at::_convolution selects ConvBackend::Overrideable for devices other than
// CPU / CUDA / MPS / XPU, after PyTorch's own argument checks (check_shape_forward: dims,
// channel / group / bias consistency, negative or zero stride and padding, kernel larger than
// the padded input, output padding) and after the empty-input cases (batch 0 or 0 channels,
// the Empty backend made of other ops). 1-D convolutions arrive as 2-D ones (a size-1 height,
// contiguous input); conv1d / conv2d / conv3d / conv_transpose{1,2,3}d, padding='same' /
// 'valid' (_convolution_mode) and the double backward (_convolution_double_backward) all
// reduce to these two ops. The autograd formula of `convolution` calls convolution_backward,
// which reaches convolution_backward_overrideable the same way.
//
// The kernels (src/kernels/conv.h) implement a regular convolution's forward, input gradient
// and weight gradient. A transposed convolution is the adjoint of the regular convolution
// with the same weight whose input is the transposed convolution's output:
//   transposed forward      = regular backward_input (+ bias per output channel)
//   transposed grad_input   = regular forward of grad_output
//   transposed grad_weight  = regular backward_weight with X = grad_output, dY = input
// The bias gradient is a sum of grad_output over every dim but the channels (native sum).
// Output memory format: the input's (channels-last in, channels-last out, as the CPU does);
// the weight is read contiguous.
#include <ATen/ATen.h>
#include <ATen/core/op_registration/adaption.h>
#include <ATen/native/ConvUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>
#include <vector>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/conv.h"

namespace tvk::aten {
namespace {

using kernels::ConvShape;
using kernels::ConvTensor;

void check_same_device(const char* method, const at::Tensor& a, const char* an, const at::Tensor& b,
                       const char* bn) {
  std::optional<c10::Device> common;
  c10::impl::check_and_update_common_device(common, a, method, an);
  c10::impl::check_and_update_common_device(common, b, method, bn);
}

// The dtype checks of the CPU backends (same messages), then the device's float dtypes.
void check_dtypes(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                  const char* name) {
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (", input.scalar_type(),
              ") and weight type (", weight.scalar_type(), ") should be the same");
  TORCH_CHECK(!bias.defined() || bias.scalar_type() == input.scalar_type(), "Input type (",
              input.scalar_type(), ") and bias type (", bias.scalar_type(), ") should be the same");
  if (!at::isFloatingType(input.scalar_type())) raise_not_implemented_for(name, input.scalar_type());
  vk_dtype(input.scalar_type(), name);
}

ConvTensor conv_tensor(const at::Tensor& t, const char* name) {
  ConvTensor c;
  const kernels::Operand op = operand(t, name);
  c.address = op.address;
  c.dtype = op.dtype;
  for (int64_t d = 0; d < t.dim() && d < 5; ++d) c.strides[d] = t.stride(d);
  return c;
}

kernels::Operand optional_operand(const at::Tensor& t, const char* name) {
  if (!t.defined() || t.numel() == 0) return kernels::Operand{};
  return operand(t, name);
}

// True when the spatial dims (2..) of `t` collapse to one stride (what the kernels need of
// Y / dY, which are read or written as [C x L] matrices).
bool spatial_collapses(const at::Tensor& t) {
  int64_t expect = -1;
  for (int64_t d = t.dim() - 1; d >= 2; --d) {
    if (t.size(d) == 1) continue;
    if (expect >= 0 && t.stride(d) != expect) return false;
    expect = t.stride(d) * t.size(d);
  }
  return true;
}

at::Tensor collapsible(const at::Tensor& t) {
  return spatial_collapses(t) ? t : t.contiguous(t.suggest_memory_format());
}

// The regular convolution X [N, C, *x_spatial] -> Y [N, COUT, *y_spatial] with weight `w`
// ([COUT, C / groups, *kernel]).
ConvShape regular_shape(at::IntArrayRef x_sizes, at::IntArrayRef y_sizes, at::IntArrayRef w_sizes,
                        at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                        int64_t groups) {
  ConvShape s;
  const int64_t spatial = static_cast<int64_t>(w_sizes.size()) - 2;
  TORCH_CHECK(spatial >= 1 && spatial <= 3, "convolution: expected a 3-D, 4-D or 5-D weight, got ",
              w_sizes.size(), "-D");
  TORCH_CHECK(static_cast<int64_t>(x_sizes.size()) == spatial + 2 &&
                  static_cast<int64_t>(y_sizes.size()) == spatial + 2,
              "convolution: input, weight and output dims differ");
  TORCH_CHECK(static_cast<int64_t>(stride.size()) == spatial &&
                  static_cast<int64_t>(padding.size()) == spatial &&
                  static_cast<int64_t>(dilation.size()) == spatial,
              "convolution: expected stride, padding and dilation of ", spatial, " values");
  s.spatial = static_cast<int>(spatial);
  s.batch = x_sizes[0];
  s.in_channels = x_sizes[1];
  s.out_channels = y_sizes[1];
  s.groups = groups;
  for (int64_t d = 0; d < spatial; ++d) {
    s.input[d] = x_sizes[2 + d];
    s.output[d] = y_sizes[2 + d];
    s.kernel[d] = w_sizes[2 + d];
    s.stride[d] = stride[d];
    s.padding[d] = padding[d];
    s.dilation[d] = dilation[d];
  }
  return s;
}

at::MemoryFormat format_of(const at::Tensor& t) {
  return t.dim() >= 4 ? t.suggest_memory_format() : at::MemoryFormat::Contiguous;
}

// The checks of the CPU's transposed kernels (slow_conv_transpose{2,3}d_shape_check) that
// at::_convolution leaves to the backend.
void check_transposed(const at::Tensor& input, at::IntArrayRef out_sizes, at::IntArrayRef stride,
                      at::IntArrayRef dilation, at::IntArrayRef output_padding) {
  const size_t spatial = out_sizes.size() - 2;
  TORCH_CHECK(output_padding.size() == spatial && stride.size() == spatial && dilation.size() == spatial,
              "convolution: expected output_padding, stride and dilation of ", spatial, " values");
  for (size_t d = 0; d < spatial; ++d) {
    TORCH_CHECK(dilation[d] > 0, "dilation should be greater than zero, but got dilation: ", dilation);
    TORCH_CHECK(output_padding[d] < stride[d] || output_padding[d] < dilation[d],
                "output padding must be smaller than either stride or dilation, but got "
                "output_padding: ", output_padding, " stride: ", stride, " dilation: ", dilation);
  }
  for (size_t d = 0; d < spatial; ++d)
    TORCH_CHECK(out_sizes[2 + d] >= 1, "Given input size per channel: ", input.sizes().slice(2),
                ". Calculated output size per channel: ", out_sizes.slice(2),
                ". Output size is too small");
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias_opt, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups) {
  constexpr const char* name = "convolution_overrideable";
  const at::Tensor bias = bias_opt.has_value() ? *bias_opt : at::Tensor();
  check_same_device("wrapper_PrivateUse1__convolution_overrideable", input, "input", weight, "weight");
  if (bias.defined())
    check_same_device("wrapper_PrivateUse1__convolution_overrideable", input, "input", bias, "bias");
  check_dtypes(input, weight, bias, name);
  TORCH_CHECK(groups > 0, "non-positive groups is not supported");
  const std::vector<int64_t> out_sizes =
      transposed ? at::native::conv_input_size(input.sizes(), weight.sizes(), padding, output_padding,
                                               stride, dilation, groups)
                 : at::native::conv_output_size(input.sizes(), weight.sizes(), padding, stride, dilation);
  if (transposed) check_transposed(input, out_sizes, stride, dilation, output_padding);
  at::Tensor output = at::empty(out_sizes, input.options().memory_format(format_of(input)));
  if (output.numel() == 0) return output;
  const at::Tensor w = weight.contiguous();
  const at::Tensor b = bias.defined() ? bias.contiguous() : at::Tensor();
  const c10::DeviceGuard guard(input.device());
  tvk::Stream& stream = current_stream(input.device().index());
  if (!transposed) {
    const ConvShape shape =
        regular_shape(input.sizes(), output.sizes(), w.sizes(), stride, padding, dilation, groups);
    translate_errors([&] {
      kernels::conv_forward(stream, shape, conv_tensor(output, name), conv_tensor(input, name),
                            optional_operand(w, name), optional_operand(b, name));
    });
  } else {
    const at::Tensor x = collapsible(input);
    const ConvShape shape =
        regular_shape(output.sizes(), x.sizes(), w.sizes(), stride, padding, dilation, groups);
    translate_errors([&] {
      kernels::conv_backward_input(stream, shape, conv_tensor(output, name), conv_tensor(x, name),
                                   optional_operand(w, name), optional_operand(b, name));
    });
  }
  return output;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  constexpr const char* name = "convolution_backward_overrideable";
  (void)output_padding;  // implied by the sizes of input and grad_output
  check_same_device("wrapper_PrivateUse1__convolution_backward_overrideable", grad_output,
                    "grad_output", input, "input");
  check_same_device("wrapper_PrivateUse1__convolution_backward_overrideable", input, "input",
                    weight, "weight");
  check_dtypes(input, weight, at::Tensor(), name);
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "Input type (",
              input.scalar_type(), ") and grad_output type (", grad_output.scalar_type(),
              ") should be the same");
  TORCH_CHECK(groups > 0, "non-positive groups is not supported");
  const c10::DeviceGuard guard(input.device());
  tvk::Stream& stream = current_stream(input.device().index());
  const at::Tensor w = weight.contiguous();
  // The regular convolution: X -> Y. Not transposed: X = input, Y = grad_output's shape;
  // transposed: X = grad_output's shape, Y = input.
  const at::Tensor& xt = transposed ? grad_output : input;
  const at::Tensor& yt = transposed ? input : grad_output;
  const ConvShape shape =
      regular_shape(xt.sizes(), yt.sizes(), w.sizes(), stride, padding, dilation, groups);

  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    grad_input = at::empty(input.sizes(), input.options().memory_format(format_of(input)));
    if (grad_input.numel() > 0) {
      if (!transposed) {
        const at::Tensor dy = collapsible(grad_output);
        translate_errors([&] {
          kernels::conv_backward_input(stream, shape, conv_tensor(grad_input, name),
                                       conv_tensor(dy, name), optional_operand(w, name),
                                       kernels::Operand{});
        });
      } else {
        translate_errors([&] {
          kernels::conv_forward(stream, shape, conv_tensor(grad_input, name),
                                conv_tensor(grad_output, name), optional_operand(w, name),
                                kernels::Operand{});
        });
      }
    }
  }
  if (output_mask[1]) {
    grad_weight = at::empty(weight.sizes(), weight.options().memory_format(at::MemoryFormat::Contiguous));
    if (grad_weight.numel() > 0) {
      const at::Tensor dy = collapsible(yt);
      translate_errors([&] {
        kernels::conv_backward_weight(stream, shape, optional_operand(grad_weight, name),
                                      conv_tensor(xt, name), conv_tensor(dy, name));
      });
    }
  }
  if (output_mask[2]) {
    std::vector<int64_t> dims = {0};
    for (int64_t d = 2; d < grad_output.dim(); ++d) dims.push_back(d);
    grad_bias = grad_output.sum(dims);
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable));
}

}  // namespace tvk::aten
