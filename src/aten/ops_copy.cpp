// Copies between "vk" and CPU tensors and within "vk": any strides, broadcasting, dtype
// conversion. PyTorch routes every copy_ that involves a PrivateUse1 tensor to _copy_from
// before its own broadcasting and overlap checks, so those checks happen here.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/complex_storage.h"
#include "aten/launch.h"
#include "aten/vk_backend.h"
#include "aten/vk_common.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

void check_broadcast(const at::Tensor& src, const at::Tensor& dst) {
  const auto shape = at::infer_size_dimvector(dst.sizes(), src.sizes());
  TORCH_CHECK(c10::IntArrayRef(shape) == dst.sizes(), "output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
}

bool same_layout_dense(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.is_non_overlapping_and_dense();
}

// vk -> vk on one device: a transfer command when the bytes are laid out identically,
// otherwise the element-wise "copy" kernel (strides, broadcast, dtype conversion).
void copy_device_to_device(const at::Tensor& src, const at::Tensor& dst) {
  if (dst.numel() == 0) return;
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, src);
  if (src.scalar_type() == dst.scalar_type() && same_layout_dense(src, dst)) {
    const uint64_t bytes = dst.numel() * dst.element_size();
    // Dense tensors with equal strides cover one contiguous byte range starting at the
    // lowest-addressed element, which for non-negative strides is element 0.
    const uint64_t from = operand(src, "copy_").address;
    const uint64_t to = operand(dst, "copy_").address;
    if (from == to) return;
    translate_errors([&] { current_stream(dst.device().index()).copy(from, to, bytes); });
    return;
  }
  auto iter = at::TensorIteratorConfig()
                  .add_output(dst)
                  .add_const_input(src)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .build();
  launch_elementwise(iter, "copy", copy_kind_for(src.scalar_type(), dst.scalar_type()));
}

void copy_host_to_device(const at::Tensor& src, const at::Tensor& dst) {
  if (dst.numel() == 0) return;
  at::assert_no_internal_overlap(dst);
  // Convert and materialize on the CPU, where it is cheap, then upload contiguous bytes.
  at::Tensor host = src.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
  const uint64_t bytes = host.numel() * host.element_size();
  if (dst.is_contiguous()) {
    const uint64_t to = operand(dst, "copy_").address;
    translate_errors(
        [&] { current_stream(dst.device().index()).copy_from_host(host.data_ptr(), to, bytes); });
    return;
  }
  at::Tensor staged = at::empty(dst.sizes(), dst.options().memory_format(at::MemoryFormat::Contiguous));
  const uint64_t to = operand(staged, "copy_").address;
  translate_errors(
      [&] { current_stream(dst.device().index()).copy_from_host(host.data_ptr(), to, bytes); });
  copy_device_to_device(staged, dst);
}

// non_blocking into pinned memory of the same dtype and layout is asynchronous, as on CUDA:
// the copy is recorded on the current stream and the host reads `dst` only after a
// synchronization (the pinned block stays reserved until the copy ran). Everything else waits.
void copy_device_to_host(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0) return;
  at::Tensor dense = src.is_contiguous() ? src : src.contiguous();  // device-side gather
  const uint64_t from = operand(dense, "copy_").address;
  const uint64_t bytes = dense.numel() * dense.element_size();
  tvk::Stream& stream = current_stream(src.device().index());
  if (dst.is_contiguous() && dst.scalar_type() == dense.scalar_type() &&
      dst.sizes() == dense.sizes()) {
    if (non_blocking && src.device().index() == 0 && is_pinned_ptr(dst.data_ptr())) {
      translate_errors([&] { stream.copy_to_pinned_host(from, dst.data_ptr(), bytes); });
      return;
    }
    translate_errors([&] { stream.copy_to_host(from, dst.data_ptr(), bytes); });
    return;
  }
  at::Tensor host = at::empty(dense.sizes(), dense.options().device(at::kCPU));
  translate_errors([&] { stream.copy_to_host(from, host.data_ptr(), bytes); });
  dst.copy_(host);  // CPU handles broadcast, strides and dtype conversion
}

// uint64 is stored on vk (hash_tensor's results) but no kernel computes with it: its bits
// travel as int64 (any layout); a conversion to or from uint64 happens on the CPU side of a
// vk <-> CPU copy, and raises for vk -> vk.
void copy_uint64(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (src.scalar_type() == dst.scalar_type()) {
    dst.view(at::kLong).copy_(src.view(at::kLong), non_blocking);
    return;
  }
  const bool src_vk = src.device().is_privateuseone(), dst_vk = dst.device().is_privateuseone();
  TORCH_CHECK_TYPE(!(src_vk && dst_vk), "\"copy_\" not implemented for 'UInt64' on vk (only copies "
                   "between uint64 tensors, or to / from the CPU)");
  if (dst_vk) {  // from the CPU: converted there
    if (dst.scalar_type() == at::kUInt64)
      dst.view(at::kLong).copy_(src.to(at::kUInt64).view(at::kLong));
    else
      dst.copy_(src.to(dst.scalar_type()));
  } else {  // to the CPU: converted there
    dst.copy_(src.scalar_type() == at::kUInt64 ? src.view(at::kLong).cpu().view(at::kUInt64) : src.cpu());
  }
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined(), "copy_: source tensor is undefined");
  TORCH_CHECK(dst.defined(), "copy_: destination tensor is undefined");
  check_broadcast(self, dst);
  if (self.scalar_type() == at::kUInt64 || dst.scalar_type() == at::kUInt64) {
    copy_uint64(self, dst, non_blocking);
    return dst;
  }
  if (self.is_complex() || dst.is_complex() || self.is_neg() || dst.is_neg()) {
    // Through the real views (each part then takes the paths below), bits honoured.
    const c10::DeviceGuard guard(dst.device().is_privateuseone() ? dst.device() : self.device());
    copy_complex(self, dst, non_blocking);
    return dst;
  }
  const bool src_vk = self.device().is_privateuseone();
  const bool dst_vk = dst.device().is_privateuseone();
  if (src_vk && dst_vk) {
    if (self.device() == dst.device()) {
      const c10::DeviceGuard guard(dst.device());
      copy_device_to_device(self, dst);
    } else {
      // Between two Vulkan devices: through host memory.
      dst.copy_(self.cpu());
    }
  } else if (dst_vk) {
    TORCH_CHECK(self.device().is_cpu(), "torch-vk: copy from ", self.device(), " to ", dst.device(),
                " is not supported; copy through the CPU");
    const c10::DeviceGuard guard(dst.device());
    copy_host_to_device(self, dst);
  } else {
    TORCH_CHECK(dst.device().is_cpu(), "torch-vk: copy from ", self.device(), " to ", dst.device(),
                " is not supported; copy through the CPU");
    const c10::DeviceGuard guard(self.device());
    copy_device_to_host(self, dst, non_blocking);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  dst.copy_(self);
  return dst;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
}

}  // namespace tvk::aten
