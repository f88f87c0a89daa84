// The Vulkan loader is opened at run time (dlopen of libvulkan.so.1), so that the extension
// library always loads, even on a machine without Vulkan: there the device is simply
// unavailable, with a clear reason. All Vulkan entry points are called through the function
// pointers declared here (VK_NO_PROTOTYPES).
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <string>

// Loader-level entry points (resolved with vkGetInstanceProcAddr(nullptr, ...)).
#define TVK_VK_LOADER_FUNCTIONS(X)    \
  X(vkCreateInstance)                 \
  X(vkEnumerateInstanceVersion)       \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceLayerProperties)

// Instance-level entry points (resolved with vkGetInstanceProcAddr(instance, ...)).
#define TVK_VK_INSTANCE_FUNCTIONS(X)                 \
  X(vkDestroyInstance)                               \
  X(vkEnumeratePhysicalDevices)                      \
  X(vkGetPhysicalDeviceProperties)                   \
  X(vkGetPhysicalDeviceProperties2)                  \
  X(vkGetPhysicalDeviceFeatures2)                    \
  X(vkGetPhysicalDeviceMemoryProperties)             \
  X(vkGetPhysicalDeviceMemoryProperties2)            \
  X(vkGetPhysicalDeviceQueueFamilyProperties)        \
  X(vkGetPhysicalDeviceFormatProperties)             \
  X(vkEnumerateDeviceExtensionProperties)            \
  X(vkCreateDevice)                                  \
  X(vkGetDeviceProcAddr)                             \
  X(vkCreateDebugUtilsMessengerEXT)                  \
  X(vkDestroyDebugUtilsMessengerEXT)

// Device-level entry points. They are resolved once with vkGetInstanceProcAddr(instance, ...),
// which returns the loader's trampolines: valid for every VkDevice of every driver.
#define TVK_VK_DEVICE_FUNCTIONS(X)          \
  X(vkDestroyDevice)                        \
  X(vkDeviceWaitIdle)                       \
  X(vkGetDeviceQueue)                       \
  X(vkQueueSubmit)                          \
  X(vkQueueWaitIdle)                        \
  X(vkQueueBindSparse)                      \
  X(vkAllocateMemory)                       \
  X(vkFreeMemory)                           \
  X(vkMapMemory)                            \
  X(vkUnmapMemory)                          \
  X(vkCreateBuffer)                         \
  X(vkDestroyBuffer)                        \
  X(vkGetBufferMemoryRequirements)          \
  X(vkBindBufferMemory)                     \
  X(vkGetBufferDeviceAddress)               \
  X(vkCreateBufferView)                     \
  X(vkDestroyBufferView)                    \
  X(vkCreateDescriptorSetLayout)            \
  X(vkDestroyDescriptorSetLayout)           \
  X(vkCmdPushDescriptorSetKHR)              \
  X(vkCreateShaderModule)                   \
  X(vkDestroyShaderModule)                  \
  X(vkCreatePipelineCache)                  \
  X(vkDestroyPipelineCache)                 \
  X(vkGetPipelineCacheData)                 \
  X(vkCreatePipelineLayout)                 \
  X(vkDestroyPipelineLayout)                \
  X(vkCreateComputePipelines)               \
  X(vkDestroyPipeline)                      \
  X(vkCreateCommandPool)                    \
  X(vkDestroyCommandPool)                   \
  X(vkResetCommandPool)                     \
  X(vkAllocateCommandBuffers)               \
  X(vkFreeCommandBuffers)                   \
  X(vkBeginCommandBuffer)                   \
  X(vkEndCommandBuffer)                     \
  X(vkResetCommandBuffer)                   \
  X(vkCmdBindPipeline)                      \
  X(vkCmdPushConstants)                     \
  X(vkCmdDispatch)                          \
  X(vkCmdExecuteCommands)                   \
  X(vkCmdPipelineBarrier)                   \
  X(vkCmdCopyBuffer)                        \
  X(vkCmdFillBuffer)                        \
  X(vkCmdWriteTimestamp)                    \
  X(vkCmdResetQueryPool)                    \
  X(vkCreateQueryPool)                      \
  X(vkDestroyQueryPool)                     \
  X(vkGetQueryPoolResults)                  \
  X(vkCreateSemaphore)                      \
  X(vkDestroySemaphore)                     \
  X(vkGetSemaphoreCounterValue)             \
  X(vkWaitSemaphores)                       \
  X(vkSignalSemaphore)

namespace tvk::vk {

#define TVK_DECLARE_VK_FN(name) extern PFN_##name name;
TVK_DECLARE_VK_FN(vkGetInstanceProcAddr)
TVK_VK_LOADER_FUNCTIONS(TVK_DECLARE_VK_FN)
TVK_VK_INSTANCE_FUNCTIONS(TVK_DECLARE_VK_FN)
TVK_VK_DEVICE_FUNCTIONS(TVK_DECLARE_VK_FN)
#undef TVK_DECLARE_VK_FN

// Opens the loader and resolves the loader-level functions. Returns false (and fills `reason`)
// when libvulkan.so.1 cannot be opened. Safe to call repeatedly; never throws.
bool load_loader(std::string* reason);
// Resolves instance- and device-level functions for `instance` (optional ones such as the
// debug-utils functions stay null when absent).
void load_instance_functions(VkInstance instance);

}  // namespace tvk::vk

