#include "runtime/raw_buffer.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "runtime/device.h"
#include "runtime/error.h"

// Vulkan structs are written `T x{VK_STRUCTURE_TYPE_...}`: the other members are zero on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tvk {
namespace {

// A buffer of `size` bytes with every usage the runtime needs (no memory bound yet).
VkResult create_buffer(VkDevice dev, uint64_t size, VkBufferCreateFlags flags, VkBuffer* out) {
  VkBufferCreateInfo buffer_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  buffer_info.flags = flags;
  buffer_info.size = size;
  buffer_info.usage = kRawBufferUsage;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  return vk::vkCreateBuffer(dev, &buffer_info, nullptr, out);
}

}  // namespace

bool memory_type_is_mappable(Device& device, uint32_t memory_type) {
  const VkMemoryPropertyFlags need =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  return (device.memory_properties().memoryTypes[memory_type].propertyFlags & need) == need;
}

VkResult create_raw_buffer(Device& device, uint64_t size, uint32_t memory_type, RawBuffer* out,
                           bool map) {
  VkDevice dev = device.handle();
  RawBuffer b;
  b.size = size;
  VkResult r = create_buffer(dev, size, 0, &b.buffer);
  if (r != VK_SUCCESS) return r;

  VkMemoryRequirements req{};
  vk::vkGetBufferMemoryRequirements(dev, b.buffer, &req);
  if (!(req.memoryTypeBits & (1u << memory_type))) {
    vk::vkDestroyBuffer(dev, b.buffer, nullptr);
    // The chosen memory type cannot back storage buffers: a driver we do not understand.
    throw VulkanError("torch-vk: memory type " + std::to_string(memory_type) +
                          " cannot back storage buffers on device " +
                          std::to_string(device.index()),
                      VK_ERROR_FEATURE_NOT_PRESENT);
  }

  // Buffers used through device addresses need memory allocated with the DEVICE_ADDRESS flag.
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.pNext = &flags;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = memory_type;
  r = vk::vkAllocateMemory(dev, &alloc, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vk::vkDestroyBuffer(dev, b.buffer, nullptr);
    return r;
  }
  r = vk::vkBindBufferMemory(dev, b.buffer, b.memory, 0);
  if (r == VK_SUCCESS && map && memory_type_is_mappable(device, memory_type)) {
    r = vk::vkMapMemory(dev, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
  }
  if (r != VK_SUCCESS) {
    vk::vkDestroyBuffer(dev, b.buffer, nullptr);
    vk::vkFreeMemory(dev, b.memory, nullptr);
    return r;
  }
  VkBufferDeviceAddressInfo addr{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  addr.buffer = b.buffer;
  b.address = vk::vkGetBufferDeviceAddress(dev, &addr);
  *out = b;
  return VK_SUCCESS;
}

VkResult create_sparse_raw_buffer(Device& device, uint64_t size, uint32_t memory_type,
                                  RawBuffer* out) {
  VkDevice dev = device.handle();
  RawBuffer b;
  b.size = size;
  VkResult r = create_buffer(dev, size, VK_BUFFER_CREATE_SPARSE_BINDING_BIT, &b.buffer);
  if (r != VK_SUCCESS) return r;
  VkMemoryRequirements req{};
  vk::vkGetBufferMemoryRequirements(dev, b.buffer, &req);
  const uint64_t align = std::max<uint64_t>(req.alignment, 1);
  const uint64_t limit = device.caps().max_memory_allocation_size;
  const uint64_t chunk = limit ? (limit / align) * align : req.size;
  if (!(req.memoryTypeBits & (1u << memory_type)) || chunk == 0) {
    vk::vkDestroyBuffer(dev, b.buffer, nullptr);
    return VK_ERROR_FEATURE_NOT_PRESENT;
  }
  std::vector<VkSparseMemoryBind> binds;
  auto fail = [&](VkResult result) {
    for (VkDeviceMemory m : b.sparse_memory) vk::vkFreeMemory(dev, m, nullptr);
    vk::vkDestroyBuffer(dev, b.buffer, nullptr);
    return result;
  };
  for (uint64_t offset = 0; offset < req.size; offset += chunk) {
    const uint64_t bytes = std::min(chunk, req.size - offset);
    VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.pNext = &flags;
    alloc.allocationSize = bytes;
    alloc.memoryTypeIndex = memory_type;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    r = vk::vkAllocateMemory(dev, &alloc, nullptr, &memory);
    if (r != VK_SUCCESS) return fail(r);
    b.sparse_memory.push_back(memory);
    VkSparseMemoryBind bind{};
    bind.resourceOffset = offset;
    bind.size = bytes;
    bind.memory = memory;
    binds.push_back(bind);
  }
  VkSparseBufferMemoryBindInfo buffer_bind{};
  buffer_bind.buffer = b.buffer;
  buffer_bind.bindCount = static_cast<uint32_t>(binds.size());
  buffer_bind.pBinds = binds.data();
  VkBindSparseInfo info{VK_STRUCTURE_TYPE_BIND_SPARSE_INFO};
  info.bufferBindCount = 1;
  info.pBufferBinds = &buffer_bind;
  {
    // Queue operations are not ordered with each other: waiting for the queue to go idle
    // makes every later submission see the binding (rare: only segments past one allocation).
    std::lock_guard<std::mutex> lock(device.queue_mutex());
    r = vk::vkQueueBindSparse(device.queue(), 1, &info, VK_NULL_HANDLE);
    if (r == VK_SUCCESS) r = vk::vkQueueWaitIdle(device.queue());
  }
  if (r != VK_SUCCESS) return fail(r);
  VkBufferDeviceAddressInfo addr{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  addr.buffer = b.buffer;
  b.address = vk::vkGetBufferDeviceAddress(dev, &addr);
  *out = std::move(b);
  return VK_SUCCESS;
}

void destroy_raw_buffer(Device& device, RawBuffer& b) {
  VkDevice dev = device.handle();
  if (b.buffer) vk::vkDestroyBuffer(dev, b.buffer, nullptr);
  if (b.mapped) vk::vkUnmapMemory(dev, b.memory);
  if (b.memory) vk::vkFreeMemory(dev, b.memory, nullptr);
  for (VkDeviceMemory m : b.sparse_memory) vk::vkFreeMemory(dev, m, nullptr);
  b = RawBuffer{};
}

}  // namespace tvk
