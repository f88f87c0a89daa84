// Tensor basics every "vk" tensor needs: factories, views, resize, set_, scalar read-back,
// fill. Registered for PrivateUse1.
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/InferSize.h>
#include <ATen/TensorIterator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cstring>

#include "aten/complex_storage.h"
#include "aten/launch.h"
#include "aten/vk_common.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

constexpr c10::DispatchKeySet kVkKeys(c10::DispatchKey::PrivateUse1);

void check_factory_args(std::optional<c10::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "torch-vk supports only strided tensors, got layout ", c10::layout_or_default(layout));
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "Only dense CPU tensors can be pinned");
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  check_factory_args(layout, pin_memory);
  const auto type = c10::dtype_or_default(dtype);
  const c10::DeviceGuard guard(c10::device_or_default(device));
  check_storage_dtype(type, "empty");
  return at::detail::empty_generic(size, c10::GetAllocator(c10::DeviceType::PrivateUse1), kVkKeys,
                                   type, memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  check_factory_args(layout, pin_memory);
  const auto type = c10::dtype_or_default(dtype);
  const c10::DeviceGuard guard(c10::device_or_default(device));
  check_storage_dtype(type, "empty_strided");
  return at::detail::empty_strided_generic(size, stride,
                                           c10::GetAllocator(c10::DeviceType::PrivateUse1),
                                           kVkKeys, type);
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

// Grows the storage (through the hooks' resizePrivateUse1Bytes: allocate, device copy, swap)
// when the new shape needs more bytes; never shrinks, like CPU and CUDA.
void maybe_grow_storage(c10::TensorImpl* impl, size_t needed_bytes) {
  if (impl->numel() == 0) return;
  const c10::Storage& storage = impl->unsafe_storage();
  if (needed_bytes > storage.nbytes()) at::native::resize_bytes_nocuda(storage, needed_bytes);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  for (const auto s : size)
    TORCH_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", size);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  if (impl->sizes() != size) {
    impl->set_sizes_contiguous(size);
    const size_t needed = at::detail::computeStorageNbytesContiguous(
        size, impl->dtype().itemsize(), impl->storage_offset());
    maybe_grow_storage(impl, needed);
  }
  if (memory_format) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve,
                "Unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride) {
  TORCH_CHECK(source.device() == self.device() || !source.data(),
              "Attempted to set the storage of a tensor on device \"", self.device(),
              "\" to a storage on different device \"", source.device(), "\".");
  TORCH_CHECK(storage_offset >= 0, "Tensor: invalid storage offset ", storage_offset);
  at::native::checkInBoundsForStorage(size, stride, storage_offset, self.dtype(), source);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  if (!(impl->storage().is_alias_of(source))) impl->set_storage_keep_dtype(std::move(source));
  impl->set_storage_offset(storage_offset);
  if (stride.data() && !stride.empty()) {
    impl->set_sizes_and_strides(size, stride);
  } else {
    impl->set_sizes_contiguous(size);
  }
  return self;
}

at::Tensor& set_source_storage_offset(at::Tensor& self, c10::Storage source,
                                      int64_t storage_offset, c10::IntArrayRef size,
                                      c10::IntArrayRef stride) {
  return set_storage(self, std::move(source), storage_offset, size, stride);
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t elements = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {elements}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) return self;
  TORCH_CHECK(self.dtype() == source.dtype(), "Could not set tensor of type ", source.dtype(),
              " to a tensor of type ", self.dtype());
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(),
                     source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0,
                       c10::GetAllocator(c10::DeviceType::PrivateUse1), true);
  return set_storage(self, std::move(storage), 0, {0}, {});
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "cannot get item of an empty tensor");
  const size_t bytes = self.element_size();
  alignas(16) unsigned char host[16] = {};
  const uint64_t address = operand(self.is_complex() ? raw_real_view(self) : self, "item").address;
  translate_errors([&] { current_stream(self.device().index()).copy_to_host(address, host, bytes); });
  at::Scalar result;
  AT_DISPATCH_V2(self.scalar_type(), "_local_scalar_dense_vk", AT_WRAP([&] {
    scalar_t value;
    std::memcpy(&value, host, sizeof(scalar_t));
    result = at::Scalar(value);
  }), AT_EXPAND(AT_ALL_TYPES), AT_EXPAND(AT_COMPLEX_TYPES), at::kHalf, at::kBool, at::kBFloat16);
  if (self.is_complex() && (self.is_conj() || self.is_neg())) {
    c10::complex<double> v = result.toComplexDouble();
    if (self.is_conj()) v = std::conj(v);
    if (self.is_neg()) v = -v;
    result = at::Scalar(v);
  }
  return result;
}

// The bit pattern of `value` stored as `dtype`, widened to 32 bits when the element size
// divides 4 (so vkCmdFillBuffer can write it); nullopt when it cannot be expressed that way.
std::optional<uint32_t> fill_pattern(at::ScalarType dtype, const at::Scalar& value) {
  uint64_t bits = 0;
  size_t size = 0;
  AT_DISPATCH_V2(dtype, "fill_vk", AT_WRAP([&] {
    const scalar_t v = value.to<scalar_t>();
    std::memcpy(&bits, &v, sizeof(scalar_t));
    size = sizeof(scalar_t);
  }), AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBool, at::kBFloat16);
  switch (size) {
    case 1: return static_cast<uint32_t>(bits & 0xff) * 0x01010101u;
    case 2: return static_cast<uint32_t>(bits & 0xffff) * 0x00010001u;
    case 4: return static_cast<uint32_t>(bits);
    case 8:
      if ((bits >> 32) == (bits & 0xffffffffu)) return static_cast<uint32_t>(bits);
      return std::nullopt;
    default: return std::nullopt;
  }
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  if (self.is_complex()) {  // the real and imaginary planes of the real view
    if (self.numel() > 0) fill_complex(self, value);
    return self;
  }
  // The value as one of the dtype's, as the CPU's fill converts it (also when there is
  // nothing to fill): value.to<scalar_t>() (overflow raises, non-zero is true for bool),
  // except that a one-element float16 / bfloat16 tensor takes the relaxed cast of the CPU's
  // scalar_fill (1e6 becomes inf, like torch.tensor(1e6, dtype=torch.float16)).
  const at::ScalarType dtype = self.scalar_type();
  const c10::Scalar v = self.numel() == 1 && at::isReducedFloatingType(dtype)
                            ? scalar_cast_to_dtype(value, dtype)
                            : scalar_to_dtype(value, dtype);
  if (self.numel() == 0) return self;
  const auto pattern = fill_pattern(dtype, v);
  const uint64_t bytes = self.numel() * self.element_size();
  const uint64_t address = operand(self, "fill_").address;
  if (pattern && self.is_contiguous() && address % 4 == 0 && bytes % 4 == 0) {
    translate_errors([&] { current_stream(self.device().index()).fill(address, bytes, *pattern); });
    return self;
  }
  // No overlap check, as on the CPU: an expanded tensor is filled (all its aliases of one
  // element get the same value).
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(false)
                  .add_output(self)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .build();
  launch_elementwise(iter, "fill", dtype, make_scalars(v));
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0,
              "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  if (value.device().is_cpu()) return fill_scalar(self, value.item());
  self.copy_(value);  // device-side broadcast copy, no host round trip
  return self;
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar(self, 0); }

// Whether `self`'s TensorImpl may take `from`'s metadata (`self.data = from`, `set_data`).
// PyTorch's own rule (TensorImpl::has_compatible_shallow_copy_type) treats two dense tensors of
// CPU, CUDA, MPS, HIP, XPU, HPU or MTIA as compatible but leaves PrivateUse1 out, so without
// this kernel `Module.to("vk")` replaces every Parameter instead of moving its data: tied
// weights come apart and references to parameters go stale. vk tensors are plain dense
// TensorImpls like CUDA's, so the same rule holds with PrivateUse1 added to the dense backends.
// The dispatcher calls this kernel whenever either tensor is on vk (PyTorch's documented
// override point for PrivateUse1); every other pair keeps the built-in answer.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set())) return true;
  const auto is_dense = [](c10::DispatchKeySet keys) {
    constexpr auto dense_backends = c10::DispatchKeySet(
        {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit,
         c10::BackendComponent::MPSBit, c10::BackendComponent::HIPBit,
         c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
         c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
    return keys.has(c10::DispatchKey::Dense) && keys.has_any(dense_backends);
  };
  return is_dense(self.key_set()) && is_dense(from.key_set());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_source_storage_offset));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("fill_.Tensor", TORCH_FN(fill_tensor));
  m.impl("zero_", TORCH_FN(zero_));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

}  // namespace tvk::aten
