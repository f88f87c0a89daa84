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

// ---- device-side errors ----
// Kernels cannot throw. A kernel that finds a bad argument in device memory (an index out of
// range, a class target out of range, a source too small) skips the access and records one
// error in its stream's error record (Stream::device_error_address(), written with
// tvk_report_error / tvk_report_index_error from shaders/common.glsl). The host looks at the
// record whenever it waits for the stream (Stream::wait_for_point: synchronize, copies to host,
// .item(), event / device synchronize, the count read of nonzero ...), resets it and throws
// one of the two exceptions below. Only the first error is kept until it is reported.
//
// The codes are part of the shader ABI: a kernel passes one of them (a push constant) and
// the host formats the message from (code, index, size, dim).
enum class DeviceErrorCode : uint32_t {
  None = 0,
  // IndexError "index {index} is out of bounds for dimension {dim} with size {size}"
  // (index.Tensor, index_put_, index_fill_)
  IndexOutOfBounds = 1,
  // RuntimeError with the same text (gather, scatter, scatter_add, scatter_reduce, one_hot)
  ScatterGatherOutOfBounds = 2,
  // IndexError "index out of range in self" (index_select, index_add_, embedding)
  IndexOutOfRangeInSelf = 3,
  // IndexError "index_copy_(): index {index} is out of bounds for dimension {dim} with size {size}"
  IndexCopyOutOfBounds = 4,
  // IndexError "out of range: tried to access index {index} on a tensor of {size} elements."
  // (take, put_)
  TakeOutOfRange = 5,
  // RuntimeError "Number of elements of source < number of ones in mask" (masked_scatter_)
  MaskedScatterSourceTooSmall = 6,
  // IndexError "Target {index} is out of bounds." (nll_loss and friends)
  TargetOutOfBounds = 7,
  // RuntimeError "all elements of input should be between 0 and 1" (binary_cross_entropy)
  BceInputOutOfRange = 8,
  // RuntimeError "all elements of target should be between 0 and 1" (binary_cross_entropy)
  BceTargetOutOfRange = 9,
  // RuntimeError "Expected p_in >= 0 && p_in <= 1 to be true, but got false." (bernoulli with
  // a probability tensor)
  BernoulliProbabilityOutOfRange = 10,
  // RuntimeError "Found an invalid max index: {index} (output volumes are of size {dim}x{size})"
  // (max_unpool2d: dim = output height, size = output width)
  MaxUnpool2dInvalidIndex = 11,
  // Same text with "{dim}x{size >> 32}x{size & 0xffffffff}" (max_unpool3d: dim = output depth,
  // size = output height << 32 | output width)
  MaxUnpool3dInvalidIndex = 12,
  // RuntimeError "Index {dim} of input takes value {index} which is not in the valid range
  // [0, {size})" (embedding_bag, mode sum / mean)
  EmbeddingBagIndexOutOfRange = 13,
  // RuntimeError "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be
  // {index}" (embedding_bag, mode max)
  EmbeddingBagMaxIndexOutOfRange = 14,
  // RuntimeError "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start
  // from position 0. However, got {index}" (embedding_bag)
  EmbeddingBagFirstOffsetNotZero = 15,
  // RuntimeError "target out of range" (multi_margin_loss)
  MultiMarginTargetOutOfRange = 16,
  // RuntimeError "argument #2 'target' is out of range" (multilabel_margin_loss)
  MultilabelMarginTargetOutOfRange = 17,
};

// Layout of the per-stream error record in device memory (mirrored by TvkErrorRecord in
// shaders/common.glsl). `state`: 0 empty, 1 being written by a kernel, 2 complete.
struct DeviceErrorRecord {
  uint32_t state;
  uint32_t code;  // DeviceErrorCode
  int32_t dim;
  uint32_t reserved;
  int64_t index;
  int64_t size;
};
static_assert(sizeof(DeviceErrorRecord) == 32);

// A device-side index error (L3 turns it into c10::IndexError, Python IndexError).
class IndexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Any other device-side argument error (L3 turns it into c10::Error, Python RuntimeError).
class DeviceAssertError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws the IndexError / DeviceAssertError that `record` describes (PyTorch's CPU wording).
[[noreturn]] void throw_device_error(const DeviceErrorRecord& record);

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
