// L3 shared helpers: devices, per-thread current device and streams, dtype mapping, operands.
#include "aten/vk_common.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <mutex>

#include <c10/util/Exception.h>

#include "aten/vk_backend.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/stream.h"

namespace tvk::aten {
namespace {

constexpr int kMaxDevices = 128;  // c10::DeviceIndex is int8_t

// Logical devices already created, cached so that the per-op path takes no lock.
std::array<std::atomic<tvk::Device*>, kMaxDevices> g_devices{};

std::atomic<bool> g_bad_fork{false};

void on_fork_child() {
  for (auto& d : g_devices) {
    if (d.load(std::memory_order_relaxed) != nullptr) {
      g_bad_fork.store(true);
      return;
    }
  }
}

struct ForkHandlerRegistration {
  ForkHandlerRegistration() { pthread_atfork(nullptr, nullptr, &on_fork_child); }
} g_fork_handler_registration;

// Current device of this thread.
thread_local c10::DeviceIndex tl_current_device = 0;
// Current stream id of this thread, per device (0 = default stream).
thread_local std::array<uint32_t, kMaxDevices> tl_current_streams{};
// The tvk::Stream of tl_current_streams[index], resolved on first use (null: not resolved).
// Streams live as long as their device, so the pointer stays valid; it saves the device's
// stream-table lock on every op. Reset whenever the current stream changes.
thread_local std::array<tvk::Stream*, kMaxDevices> tl_current_stream_objects{};

std::string unavailable_message() {
  std::string reason;
  try {
    reason = tvk::Runtime::get().unavailable_reason();
  } catch (const std::exception& e) {
    reason = e.what();
  }
  if (reason.rfind("torch-vk: ", 0) == 0) reason = reason.substr(10);
  if (reason.empty()) reason = "no Vulkan device was found";
  return "torch-vk: the vk device is not available: " + reason;
}

}  // namespace

// ---------------------------------------------------------------- devices

c10::DeviceIndex device_count_noexcept() noexcept {
  try {
    int n = tvk::Runtime::get().device_count();
    return static_cast<c10::DeviceIndex>(std::min(n, kMaxDevices - 1));
  } catch (...) {
    return 0;
  }
}

bool device_initialized(c10::DeviceIndex index) noexcept {
  if (index < 0 || index >= kMaxDevices) return false;
  return g_devices[index].load(std::memory_order_acquire) != nullptr;
}

bool in_bad_fork() { return g_bad_fork.load(); }

void check_available() {
  TORCH_CHECK(!in_bad_fork(),
              "torch-vk: cannot use the vk device in a forked subprocess after it was "
              "initialized in the parent. Use the 'spawn' start method of multiprocessing.");
  TORCH_CHECK(device_count_noexcept() > 0, unavailable_message());
}

c10::DeviceIndex checked_device_index(c10::DeviceIndex index) {
  if (index < 0) index = current_device_index();
  c10::DeviceIndex n = device_count_noexcept();
  if (n == 0) check_available();
  TORCH_CHECK(index >= 0 && index < n, "torch-vk: invalid device index ", int(index),
              " (there ", n == 1 ? "is " : "are ", int(n), " vk device", n == 1 ? "" : "s", ")");
  return index;
}

tvk::Device& vk_device(c10::DeviceIndex index) {
  if (index < 0) index = tl_current_device;
  if (index >= 0 && index < kMaxDevices) {
    tvk::Device* cached = g_devices[index].load(std::memory_order_acquire);
    if (cached != nullptr && !g_bad_fork.load(std::memory_order_relaxed)) return *cached;
  }
  check_available();
  index = checked_device_index(index);
  tvk::Device& device =
      translate_errors([&]() -> tvk::Device& { return tvk::Runtime::get().device(index); });
  if (g_devices[index].load(std::memory_order_acquire) != &device) apply_memory_history(device);
  g_devices[index].store(&device, std::memory_order_release);
  return device;
}

c10::DeviceIndex current_device_index() { return tl_current_device; }

void set_current_device_index(c10::DeviceIndex index) {
  TORCH_CHECK(index >= 0 && index < kMaxDevices, "torch-vk: invalid device index ", int(index));
  tl_current_device = index;
}

// ---------------------------------------------------------------- streams

namespace {
c10::DeviceIndex resolve_index(c10::DeviceIndex index) {
  if (index < 0) index = tl_current_device;
  TORCH_CHECK(index >= 0 && index < kMaxDevices, "torch-vk: invalid device index ", int(index));
  return index;
}

c10::Stream make_c10_stream(c10::DeviceIndex index, uint32_t id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index),
                     static_cast<c10::StreamId>(id));
}
}  // namespace

tvk::Stream& current_stream(c10::DeviceIndex index) {
  index = resolve_index(index);
  tvk::Device& device = vk_device(index);  // also refuses use after a bad fork
  tvk::Stream* cached = tl_current_stream_objects[index];
  if (cached != nullptr && &cached->device() == &device) return *cached;
  tvk::Stream& stream = device.stream(tl_current_streams[index]);
  tl_current_stream_objects[index] = &stream;
  return stream;
}

c10::Stream current_c10_stream(c10::DeviceIndex index) {
  index = resolve_index(index);
  return make_c10_stream(index, tl_current_streams[index]);
}

void set_current_c10_stream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "torch-vk: expected a vk stream, got a stream of ", stream.device());
  c10::DeviceIndex index = resolve_index(stream.device_index());
  TORCH_CHECK(stream.id() >= 0 && stream.id() <= static_cast<c10::StreamId>(UINT32_MAX),
              "torch-vk: invalid stream id ", stream.id());
  tl_current_streams[index] = static_cast<uint32_t>(stream.id());
  tl_current_stream_objects[index] = nullptr;
}

tvk::Stream& stream_of(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "torch-vk: expected a vk stream, got a stream of ", stream.device());
  tvk::Device& device = vk_device(stream.device_index());
  TORCH_CHECK(stream.id() >= 0 &&
                  static_cast<uint64_t>(stream.id()) < device.stream_count(),
              "torch-vk: unknown stream id ", stream.id(), " on vk:", int(stream.device_index()));
  return device.stream(static_cast<uint32_t>(stream.id()));
}

c10::Stream c10_stream_of(tvk::Stream& stream) {
  return make_c10_stream(static_cast<c10::DeviceIndex>(stream.device().index()), stream.id());
}

// ---------------------------------------------------------------- dtypes

namespace {
bool device_has_float64(c10::DeviceIndex index) {
  if (index < 0) index = tl_current_device;
  if (device_count_noexcept() <= index) return false;
  try {
    return tvk::Runtime::get().capabilities(index).float64;
  } catch (...) {
    return false;
  }
}
}  // namespace

bool is_supported_dtype(at::ScalarType type, c10::DeviceIndex index) {
  switch (type) {
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
      return true;
    case at::kDouble:
      return device_has_float64(index);
    default:
      return false;
  }
}

kernels::DType vk_dtype(at::ScalarType type, const char* op) {
  switch (type) {
    case at::kBool: return kernels::DType::Bool;
    case at::kByte: return kernels::DType::UInt8;
    case at::kChar: return kernels::DType::Int8;
    case at::kShort: return kernels::DType::Int16;
    case at::kInt: return kernels::DType::Int32;
    case at::kLong: return kernels::DType::Int64;
    case at::kHalf: return kernels::DType::Float16;
    case at::kBFloat16: return kernels::DType::BFloat16;
    case at::kFloat: return kernels::DType::Float32;
    case at::kDouble:
      TORCH_CHECK_TYPE(device_has_float64(-1), "\"", op,
                       "\" not implemented for 'Double' on vk: this device has no shaderFloat64 "
                       "support (use float32, or run the op on the CPU)");
      return kernels::DType::Float64;
    default:
      break;
  }
  TORCH_CHECK_TYPE(false, "\"", op, "\" not implemented for '", c10::toString(type), "' on vk");
}

kernels::Operand operand(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.defined(), "\"", op, "\": expected a defined tensor");
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "\"", op,
              "\": expected a vk tensor, got a tensor on ", t.device());
  kernels::Operand result;
  result.dtype = vk_dtype(t.scalar_type(), op);
  // data_ptr() already includes the storage offset; 0 for tensors without data.
  const void* base = t.storage().data();
  result.address = base == nullptr
                       ? 0
                       : reinterpret_cast<uint64_t>(base) +
                             static_cast<uint64_t>(t.storage_offset()) * t.element_size();
  return result;
}

}  // namespace tvk::aten
