// What torch.stft / torch.istft reach besides the FFT primitives (src/aten/ops_fft.cpp).
// torch.stft decomposes (on vk) into pad / unfold / mul / _fft_r2c / _fft_c2c, all native.
// torch.istft needs the overlap-add of its frames, aten::unfold_backward:
//   unfold_backward(grad, input_sizes, dim, size, step) = the adjoint of x.unfold(dim, size,
//   step): out[..., p, ...] = sum over windows i and offsets t < size with i * step + t = p of
//   grad[..., i, ..., t] (zero where no window covers p).
// Composite of native ops: the window offsets are cut into chunks of `step` (chunk c holds
// t in [c step, (c + 1) step)); a chunk of every window, zero padded to `step` and flattened,
// is a contiguous run starting at c * step, added into the output with one add_. That is
// ceil(size / step) slices + adds (3 for Whisper's n_fft 400 / hop 160), each chunk in order
// (so sums round in a fixed order, like the CPU's loop over windows).
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>

#include "aten/vk_common.h"

namespace tvk::aten {
namespace {

at::Tensor unfold_backward(const at::Tensor& grad, c10::SymIntArrayRef input_sizes_sym,
                           int64_t dim, int64_t size, int64_t step) {
  const std::vector<int64_t> input_sizes = C10_AS_INTARRAYREF_SLOW(input_sizes_sym).vec();
  TORCH_CHECK(step > 0, "step is ", step, " but must be > 0");
  TORCH_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  const int64_t ndim = static_cast<int64_t>(input_sizes.size());
  dim = c10::maybe_wrap_dim(dim, std::max<int64_t>(ndim, 1));
  TORCH_CHECK(grad.dim() == std::max<int64_t>(ndim, 0) + 1,
              "unfold_backward: grad has ", grad.dim(), " dims, expected ", ndim + 1);
  const c10::DeviceGuard guard(grad.device());
  at::Tensor out = at::zeros(input_sizes, grad.options());
  if (ndim == 0) {  // x.unfold on a 0-dim tensor makes one window of its single value
    if (grad.numel() > 0) out.add_(grad.reshape({}));
    return out;
  }
  const int64_t windows = grad.size(dim);
  const int64_t length = input_sizes[dim];
  if (out.numel() == 0 || windows == 0 || size == 0) return out;
  // [..., windows, size] with the window dim next to the offsets.
  const at::Tensor frames = grad.movedim(dim, -2);
  at::Tensor out_last = out.movedim(dim, -1);
  for (int64_t start = 0; start < size; start += step) {
    const int64_t len = std::min(step, size - start);
    at::Tensor chunk = frames.narrow(-1, start, len);
    if (len < step) chunk = at::constant_pad_nd(chunk, {0, step - len}, 0);
    const at::Tensor run = chunk.flatten(-2);  // position start + i * step + (t - start)
    const int64_t take = std::min(windows * step, length - start);
    if (take <= 0) break;
    out_last.narrow(-1, start, take).add_(run.narrow(-1, 0, take));
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("unfold_backward", TORCH_FN(unfold_backward));
}

}  // namespace tvk::aten
