// The single L1 error path: VkResult -> C++ exception with the failing call, the source
// location and the device index.
#include "runtime/error.h"

#include <cstring>

namespace tvk {

const char* vk_result_name(VkResult result) {
  switch (result) {
#define TVK_RESULT_CASE(r) \
  case r:                  \
    return #r;
    TVK_RESULT_CASE(VK_SUCCESS)
    TVK_RESULT_CASE(VK_NOT_READY)
    TVK_RESULT_CASE(VK_TIMEOUT)
    TVK_RESULT_CASE(VK_EVENT_SET)
    TVK_RESULT_CASE(VK_EVENT_RESET)
    TVK_RESULT_CASE(VK_INCOMPLETE)
    TVK_RESULT_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    TVK_RESULT_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    TVK_RESULT_CASE(VK_ERROR_INITIALIZATION_FAILED)
    TVK_RESULT_CASE(VK_ERROR_DEVICE_LOST)
    TVK_RESULT_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    TVK_RESULT_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    TVK_RESULT_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    TVK_RESULT_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    TVK_RESULT_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    TVK_RESULT_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    TVK_RESULT_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    TVK_RESULT_CASE(VK_ERROR_FRAGMENTED_POOL)
    TVK_RESULT_CASE(VK_ERROR_UNKNOWN)
    TVK_RESULT_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    TVK_RESULT_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    TVK_RESULT_CASE(VK_ERROR_FRAGMENTATION)
    TVK_RESULT_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    TVK_RESULT_CASE(VK_PIPELINE_COMPILE_REQUIRED)
    TVK_RESULT_CASE(VK_ERROR_SURFACE_LOST_KHR)
    TVK_RESULT_CASE(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
    TVK_RESULT_CASE(VK_SUBOPTIMAL_KHR)
    TVK_RESULT_CASE(VK_ERROR_OUT_OF_DATE_KHR)
    TVK_RESULT_CASE(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
    TVK_RESULT_CASE(VK_ERROR_VALIDATION_FAILED_EXT)
    TVK_RESULT_CASE(VK_ERROR_INVALID_SHADER_NV)
    TVK_RESULT_CASE(VK_ERROR_NOT_PERMITTED_KHR)
    TVK_RESULT_CASE(VK_THREAD_IDLE_KHR)
    TVK_RESULT_CASE(VK_THREAD_DONE_KHR)
    TVK_RESULT_CASE(VK_OPERATION_DEFERRED_KHR)
    TVK_RESULT_CASE(VK_OPERATION_NOT_DEFERRED_KHR)
    TVK_RESULT_CASE(VK_ERROR_COMPRESSION_EXHAUSTED_EXT)
#undef TVK_RESULT_CASE
    default:
      return "VK_RESULT_UNKNOWN";
  }
}

namespace {
// Shortens an absolute __FILE__ to the part from "src/" on (stable across build trees).
const char* short_file(const char* file) {
  if (!file) return "?";
  const char* best = file;
  for (const char* p = file; (p = std::strstr(p, "src/")) != nullptr; ++p) best = p;
  return best;
}
}  // namespace

void throw_vk_error(VkResult result, const char* call, const char* file, int line,
                    int device_index) {
  std::string message = std::string("torch-vk: ") + call + " failed with " +
                        vk_result_name(result) + " at " + short_file(file) + ":" + std::to_string(line);
  if (device_index >= 0) message += " (device " + std::to_string(device_index) + ")";
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw OutOfMemoryError(message);
  throw VulkanError(message, result);
}

namespace detail {
void fail_check(const char* cond, const char* file, int line, const std::string& msg) {
  std::string message = std::string("torch-vk: ");
  if (!msg.empty()) {
    message += msg + " (check '" + cond + "' failed at " + short_file(file) + ":" +
               std::to_string(line) + ")";
  } else {
    message += std::string("check '") + cond + "' failed at " + short_file(file) + ":" +
               std::to_string(line);
  }
  throw std::runtime_error(message);
}
}  // namespace detail

}  // namespace tvk
