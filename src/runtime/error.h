// L1 error path: every failing Vulkan call becomes a C++ exception that names the call,
// the source location, the device and the VkResult. No torch headers here.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/vulkan_api.h"

namespace tvk {

// A Vulkan call returned an error (other than out-of-memory).
class VulkanError : public std::runtime_error {
 public:
  VulkanError(const std::string& message, VkResult result)
      : std::runtime_error(message), result_(result) {}
  VkResult result() const { return result_; }

 private:
  VkResult result_;
};

// Device memory is exhausted even after the allocator released its cache and retried.
// The message carries a short memory summary. L3 turns it into torch.OutOfMemoryError.
class OutOfMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No usable Vulkan loader, driver or device. The message says what is missing.
class DeviceUnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const char* vk_result_name(VkResult result);

// Throws VulkanError (or OutOfMemoryError for VK_ERROR_OUT_OF_*_MEMORY) with context.
[[noreturn]] void throw_vk_error(VkResult result, const char* call, const char* file, int line,
                                 int device_index);

}  // namespace tvk

// Checks a VkResult. `device_index` is -1 when no device is involved.
#define TVK_VK_CHECK_DEV(call, device_index)                                      \
  do {                                                                            \
    VkResult tvk_result_ = (call);                                                \
    if (tvk_result_ < 0)                                                          \
      ::tvk::throw_vk_error(tvk_result_, #call, __FILE__, __LINE__, (device_index)); \
  } while (0)

#define TVK_VK_CHECK(call) TVK_VK_CHECK_DEV(call, -1)

// Internal invariant / argument check for L1/L2 code: throws std::runtime_error.
#define TVK_CHECK(cond, ...)                                                         \
  do {                                                                               \
    if (!(cond)) ::tvk::detail::fail_check(#cond, __FILE__, __LINE__, ::tvk::detail::concat(__VA_ARGS__)); \
  } while (0)

#include <sstream>
namespace tvk::detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
[[noreturn]] void fail_check(const char* cond, const char* file, int line, const std::string& msg);
}  // namespace tvk::detail
