// Native segment_reduce (torch.segment_reduce) and _segment_reduce_backward.
//
// Both the lengths and the offsets forms become one offsets tensor [outer, segments + 1]
// (lengths: a zero column and the cumulative sum, native ops), and one src/kernels/segment.h
// call reduces (or differentiates) every (outer, segment, inner) element. The CPU validates
// lengths with host reads (no negative length, every row sums to data.size(axis)) unless
// unsafe=True: the same checks here read ONE small flag tensor back (CUDA reads lengths too).
// The offsets form is checked the same way for negative segment lengths (the CPU's kernel
// raises for them); with unsafe=True nothing is read and the device clamps each segment into
// [0, data.size(axis)] (a negative length is an empty segment), so no read leaves `data`.
// float16 / bfloat16 accumulate in fp32 (the CPU accumulates in the 16-bit type).
#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "aten/launch.h"
#include "aten/vk_common.h"
#include "kernels/segment.h"

namespace tvk::aten {
namespace {

using kernels::SegmentReduceOp;

SegmentReduceOp reduction_of(std::string_view reduce) {
  if (reduce == "max" || reduce == "amax") return SegmentReduceOp::Max;
  if (reduce == "mean") return SegmentReduceOp::Mean;
  if (reduce == "min" || reduce == "amin") return SegmentReduceOp::Min;
  if (reduce == "sum") return SegmentReduceOp::Sum;
  if (reduce == "prod") return SegmentReduceOp::Prod;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

void check_data_dtype(const at::Tensor& data) {
  const at::ScalarType t = data.scalar_type();
  if (t != at::kFloat && t != at::kDouble && t != at::kHalf && t != at::kBFloat16)
    raise_not_implemented_for("_segment_reduce_cpu", t);
  vk_dtype(t, "segment_reduce");
}

// The problem geometry and the offsets tensor [outer, segments + 1] (int32 / int64, contiguous).
struct Segments {
  kernels::SegmentReduce problem;
  at::Tensor offsets;
};

Segments make_segments(const at::Tensor& data, std::string_view reduce, const c10::optional<at::Tensor>& lengths,
                       const c10::optional<at::Tensor>& offsets, int64_t axis, bool validate,
                       const c10::optional<c10::Scalar>& initial) {
  const bool has_lengths = lengths.has_value() && lengths->defined();
  const bool has_offsets = offsets.has_value() && offsets->defined();
  TORCH_CHECK(has_lengths || has_offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  Segments s;
  kernels::SegmentReduce& p = s.problem;
  p.op = reduction_of(reduce);
  const at::Tensor& given = has_offsets ? *offsets : *lengths;
  const char* form = has_offsets ? "offsets" : "lengths";
  TORCH_CHECK(data.dim() >= given.dim());
  TORCH_CHECK(axis == given.dim() - 1, "segment_reduce(): Expected axis to be the last dimension of ", form,
              " but got ", axis, ".");
  if (validate && has_lengths && !has_offsets) {
    // One host read for both of the CPU's checks.
    const at::Tensor flags =
        at::stack({given.min().lt(0), given.sum({-1}).ne(data.size(axis)).any()}).cpu();
    TORCH_CHECK(!flags[0].item<bool>(), "lengths contains negative value!");
    TORCH_CHECK(!flags[1].item<bool>(), "segment_reduce(): Expected all rows of lengths along axis ",
                "to sum to data.size(lengths.dim()-1) when !unsafe.");
  }
  const at::ScalarType it = given.scalar_type();
  if (it != at::kLong && it != at::kInt)
    raise_not_implemented_for(has_offsets ? "_segment_reduce_offsets_cpu_kernel1"
                                          : "_segment_reduce_lengths_cpu_kernel1",
                              it);
  check_data_dtype(data);
  p.kind = data.scalar_type() == at::kDouble ? kernels::ComputeKind::Float64 : kernels::ComputeKind::Float32;
  p.outer = 1;
  for (int64_t d = 0; d < axis; ++d) p.outer *= data.size(d);
  p.axis_size = data.size(axis);
  p.inner = 1;
  for (int64_t d = axis + 1; d < data.dim(); ++d) p.inner *= data.size(d);
  if (has_offsets) {
    p.segments = std::max<int64_t>(given.size(axis) - 1, 0);
    s.offsets = given.contiguous();
    if (validate && p.segments > 0) {
      const at::Tensor lengths_of = s.offsets.narrow(-1, 1, p.segments) - s.offsets.narrow(-1, 0, p.segments);
      TORCH_CHECK(!lengths_of.numel() || !lengths_of.min().lt(0).cpu().item<bool>(),
                  "Expected segment_length >= 0 to be true, but got false.  (Could this error message be "
                  "improved?  If so, please report an enhancement request to PyTorch.)");
    }
  } else {
    p.segments = given.size(axis);
    const at::Tensor cum = at::cumsum(given, -1, it);
    std::vector<int64_t> zero_shape = given.sizes().vec();
    zero_shape.back() = 1;
    s.offsets = at::cat({at::zeros(zero_shape, cum.options()), cum}, -1).contiguous();
  }
  TORCH_CHECK(s.offsets.numel() == p.outer * (p.segments + 1), "segment_reduce(): the ", form,
              " must have one row per index of the dimensions before axis (", p.outer, " rows)");
  if (initial.has_value()) {
    p.has_initial = true;
    p.initial = scalar_to_dtype(*initial, data.scalar_type()).toDouble();
  }
  return s;
}

at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce, const c10::optional<at::Tensor>& lengths,
                          const c10::optional<at::Tensor>& indices, const c10::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const c10::optional<c10::Scalar>& initial) {
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(!(indices.has_value() && indices->defined()),
              "segment_reduce(): indices based reduction is not supported yet.");
  const c10::DeviceGuard guard(data.device());
  Segments s = make_segments(data, std::string_view(reduce.data(), reduce.size()), lengths, offsets, axis,
                             !unsafe, initial);
  std::vector<int64_t> shape = data.sizes().vec();
  shape[axis] = s.problem.segments;
  at::Tensor out = at::empty(shape, data.options());
  const at::Tensor data_c = data.contiguous();
  s.problem.data = data_c.numel() ? operand(data_c, "segment_reduce") : kernels::Operand{};
  s.problem.offsets = s.offsets.numel() ? operand(s.offsets, "segment_reduce") : kernels::Operand{};
  if (out.numel() == 0) return out;
  s.problem.out = operand(out, "segment_reduce");
  tvk::Stream& stream = current_stream(data.device().index());
  translate_errors([&] { kernels::segment_reduce(stream, s.problem); });
  return out;
}

at::Tensor segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                   c10::string_view reduce, const c10::optional<at::Tensor>& lengths,
                                   const c10::optional<at::Tensor>& offsets, int64_t axis,
                                   const c10::optional<c10::Scalar>& initial) {
  axis = at::maybe_wrap_dim(axis, data.dim());
  const c10::DeviceGuard guard(data.device());
  Segments s = make_segments(data, std::string_view(reduce.data(), reduce.size()), lengths, offsets, axis,
                             /*validate=*/false, initial);
  const at::Tensor grad_c = grad.contiguous().to(data.scalar_type());
  const at::Tensor output_c = output.contiguous().to(data.scalar_type());
  const at::Tensor data_c = data.contiguous();
  at::Tensor grad_data = at::zeros(data.sizes(), data.options());
  if (grad_data.numel() == 0 || grad_c.numel() == 0) return grad_data;
  TORCH_CHECK(grad_c.numel() == s.problem.outer * s.problem.segments * s.problem.inner &&
                  output_c.numel() == grad_c.numel(),
              "_segment_reduce_backward: grad and output must have the forward output's shape");
  s.problem.data = operand(data_c, "_segment_reduce_backward");
  s.problem.offsets = operand(s.offsets, "_segment_reduce_backward");
  s.problem.out = operand(output_c, "_segment_reduce_backward");
  tvk::Stream& stream = current_stream(data.device().index());
  translate_errors([&] {
    kernels::segment_reduce_backward(stream, s.problem, operand(grad_c, "_segment_reduce_backward"),
                                     operand(grad_data, "_segment_reduce_backward"));
  });
  return grad_data;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", TORCH_FN(segment_reduce));
  m.impl("_segment_reduce_backward", TORCH_FN(segment_reduce_backward));
}

}  // namespace tvk::aten
