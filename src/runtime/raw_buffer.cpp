#include "runtime/raw_buffer.h"

#include "runtime/device.h"
#include "runtime/error.h"

// Vulkan structs are written `T x{VK_STRUCTURE_TYPE_...}`: the other members are zero on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tvk {

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

  VkBufferCreateInfo buffer_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  buffer_info.size = size;
  buffer_info.usage = kRawBufferUsage;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vk::vkCreateBuffer(dev, &buffer_info, nullptr, &b.buffer);
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

void destroy_raw_buffer(Device& device, RawBuffer& b) {
  VkDevice dev = device.handle();
  if (b.buffer) vk::vkDestroyBuffer(dev, b.buffer, nullptr);
  if (b.mapped) vk::vkUnmapMemory(dev, b.memory);
  if (b.memory) vk::vkFreeMemory(dev, b.memory, nullptr);
  b = RawBuffer{};
}

}  // namespace tvk
