// L3 internal interface between the PrivateUse1 integration pieces (allocator, guard, hooks,
// generator, fallback) and the Python bindings (torch_vk/csrc/module.cpp). Op kernels use
// vk_common.h; they need this header only for the generator (generator.h) or the allocator.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Device.h>
#include <c10/core/Storage.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/allocator.h"

namespace tvk {
class Device;
}
namespace c10 {
class OperatorHandle;
struct IValue;
}  // namespace c10
namespace torch::jit {
using Stack = std::vector<c10::IValue>;
}  // namespace torch::jit

namespace tvk::aten {

// ---- devices ----
// Number of visible devices; 0 when there is no loader / driver / usable device. Never throws.
c10::DeviceIndex device_count_noexcept() noexcept;
// True when the logical device `index` has been created (no creation, never throws).
bool device_initialized(c10::DeviceIndex index) noexcept;
// Raises a c10::Error (RuntimeError) naming what is missing when vk is unusable.
void check_available();
// Validates an index (-1 = current) and returns it.
c10::DeviceIndex checked_device_index(c10::DeviceIndex index);
// True in a child process forked after a device was created (Vulkan state does not survive
// fork, like CUDA).
bool in_bad_fork();

// ---- allocators ----
c10::DeviceAllocator* device_allocator();
// The pinned host allocator (an at::HostAllocator, registered for kPrivateUse1).
c10::Allocator* host_allocator();
// Device that owns a device address handed out by the allocator (any address inside a live
// block), or -1.
c10::DeviceIndex device_of_address(const void* ptr);
// Resizes a vk storage to `new_bytes`: allocates, copies min(old, new) bytes on the current
// stream, swaps the data pointer.
void resize_storage_bytes(const c10::Storage& storage, size_t new_bytes);
// Pinned memory check that never creates a device.
bool is_pinned_ptr(const void* ptr) noexcept;

// ---- allocator history (torch.vk.memory._record_memory_history) ----
struct MemoryHistoryConfig {
  tvk::HistorySettings settings;  // applied to every device, also those created later
  bool free_contexts = false;     // gather a context for frees too (context="all")
  // Gathers the context of an allocation or free (a stack trace; set by the Python
  // bindings). Called before the allocator's lock is taken, on the allocating thread.
  std::function<tvk::AllocationContext()> recorder;
};
void set_memory_history(MemoryHistoryConfig config, bool clear);
// Applies the current history settings to a device just created (vk_device).
void apply_memory_history(tvk::Device& device);

// ---- CPU fallback ----
enum class FallbackMode { Warn, Silent, Error };
FallbackMode fallback_mode();
void set_fallback_mode(FallbackMode mode);
// "warn" / "silent" / "error"; throws c10::Error (ValueError) for anything else.
void set_fallback_mode(const std::string& mode);
const char* fallback_mode_name(FallbackMode mode);
// The boxed CPU fallback itself (mode, warning and count included), for native kernels that
// cover only some dtypes of an op: they hand the other calls here, boxed.
void run_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// Per-operator ("aten::foo" or "aten::foo.overload") number of calls that ran on the CPU.
std::map<std::string, uint64_t> fallback_counts();
void reset_fallback_counts();

}  // namespace tvk::aten
