// L1 private helper: one VkDeviceMemory with one VkBuffer bound over all of it, its buffer
// device address and (when the memory type is host-visible and coherent) a persistent
// mapping. Used by the caching allocator (segments), the host allocator (pinned blocks) and
// the streams (parameter / staging rings). Not part of the public contract.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/vulkan_api.h"

namespace tvk {

class Device;

struct RawBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t size = 0;
  uint64_t address = 0;     // vkGetBufferDeviceAddress(buffer)
  void* mapped = nullptr;   // persistent mapping of the whole buffer, or null
  // Sparse buffers (create_sparse_raw_buffer): the allocations bound one after another over
  // the buffer (`memory` stays null, `mapped` too: host copies go through staging).
  std::vector<VkDeviceMemory> sparse_memory;
};

// Usage of every buffer the runtime creates (storage texel buffer: Allocator::texel_view).
constexpr VkBufferUsageFlags kRawBufferUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
    VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
    VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT;

// Creates the buffer in memory type `memory_type`. Returns VK_SUCCESS, or the failing
// VkResult with nothing leaked (callers decide whether an out-of-memory result is retried).
// Maps the memory when `map` is true and the type is HOST_VISIBLE|HOST_COHERENT.
VkResult create_raw_buffer(Device& device, uint64_t size, uint32_t memory_type, RawBuffer* out,
                           bool map = true);
// A buffer larger than one allocation may be (maxMemoryAllocationSize), for devices with
// sparse binding (DeviceCapabilities::sparse_binding): a sparse buffer bound to consecutive
// allocations of at most maxMemoryAllocationSize each, one device address over all of it.
// The binding is complete when this returns (the queue is idle after vkQueueBindSparse, so
// later submissions see it). Never mapped. Same results as create_raw_buffer.
VkResult create_sparse_raw_buffer(Device& device, uint64_t size, uint32_t memory_type,
                                  RawBuffer* out);
void destroy_raw_buffer(Device& device, RawBuffer& buffer);

// True when `memory_type` of the device is HOST_VISIBLE and HOST_COHERENT (mappable without
// explicit flush/invalidate).
bool memory_type_is_mappable(Device& device, uint32_t memory_type);

}  // namespace tvk
