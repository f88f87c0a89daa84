// L3 shared helpers: the bridge between PyTorch objects (devices, streams, tensors) and the
// L1/L2 objects (tvk::Device, tvk::Stream, kernels::Operand).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include "kernels/kernels.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tvk::aten {

// The device of a "vk" index, created on first use. Raises a c10::Error (Python RuntimeError)
// naming what is missing when there is no usable Vulkan device, and for bad indices.
tvk::Device& vk_device(c10::DeviceIndex index);

// Current device of this thread (set by the device guard / torch.vk.set_device).
c10::DeviceIndex current_device_index();
void set_current_device_index(c10::DeviceIndex index);

// The current stream of this thread on `index` (-1: current device). Streams are c10::Stream
// objects of type PrivateUse1 whose id is the tvk stream id of that device.
tvk::Stream& current_stream(c10::DeviceIndex index = -1);
c10::Stream current_c10_stream(c10::DeviceIndex index = -1);
void set_current_c10_stream(const c10::Stream& stream);
tvk::Stream& stream_of(const c10::Stream& stream);
c10::Stream c10_stream_of(tvk::Stream& stream);

// Storage dtype code for a PyTorch dtype; raises TypeError-like c10 errors for dtypes the
// device cannot hold (complex, quantized, float64 without shaderFloat64 ...), naming `op`.
kernels::DType vk_dtype(at::ScalarType type, const char* op);
bool is_supported_dtype(at::ScalarType type, c10::DeviceIndex index);

// Address of element 0 of `t` (storage offset applied) and its dtype.
kernels::Operand operand(const at::Tensor& t, const char* op);

// Runs `fn`, turning tvk::OutOfMemoryError into c10::OutOfMemoryError (torch.OutOfMemoryError),
// tvk::DeviceUnavailableError into a c10::Error, and the device-side errors reported at a
// host wait (runtime/error.h) into c10::IndexError (tvk::IndexError) or c10::Error
// (tvk::DeviceAssertError); other exceptions pass through.
template <typename Fn>
decltype(auto) translate_errors(Fn&& fn);

}  // namespace tvk::aten

#include "aten/vk_common_inl.h"
