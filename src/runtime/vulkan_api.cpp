// Run-time loading of the Vulkan loader (libvulkan.so.1) and resolution of every entry point
// listed in vulkan_api.h. Nothing here throws: a missing loader is reported through
// load_loader()'s `reason`, a missing function stays null.
#include "runtime/vulkan_api.h"

#include <dlfcn.h>

#include <mutex>

namespace tvk::vk {

#define TVK_DEFINE_VK_FN(name) PFN_##name name = nullptr;
TVK_DEFINE_VK_FN(vkGetInstanceProcAddr)
TVK_VK_LOADER_FUNCTIONS(TVK_DEFINE_VK_FN)
TVK_VK_INSTANCE_FUNCTIONS(TVK_DEFINE_VK_FN)
TVK_VK_DEVICE_FUNCTIONS(TVK_DEFINE_VK_FN)
#undef TVK_DEFINE_VK_FN

namespace {

std::mutex g_load_mutex;
void* g_library = nullptr;
bool g_attempted = false;
std::string g_failure;

// Resolves `name`, falling back to the KHR/EXT-suffixed alias of a promoted function (for
// loaders or drivers that only expose the extension name).
PFN_vkVoidFunction resolve(VkInstance instance, const char* name) {
  PFN_vkVoidFunction fn = vkGetInstanceProcAddr(instance, name);
  if (fn) return fn;
  for (const char* suffix : {"KHR", "EXT"}) {
    std::string alias = std::string(name) + suffix;
    fn = vkGetInstanceProcAddr(instance, alias.c_str());
    if (fn) return fn;
  }
  return nullptr;
}

}  // namespace

bool load_loader(std::string* reason) {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  if (g_attempted) {
    if (!g_library && reason) *reason = g_failure;
    return g_library != nullptr;
  }
  g_attempted = true;
  // RTLD_LOCAL: the loader's symbols must not interpose anything in the host process.
  for (const char* candidate : {"libvulkan.so.1", "libvulkan.so"}) {
    g_library = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (g_library) break;
  }
  if (!g_library) {
    g_failure =
        "libvulkan.so.1 not found (install the Vulkan loader, Debian: libvulkan1, and a driver, "
        "e.g. mesa-vulkan-drivers)";
    if (reason) *reason = g_failure;
    return false;
  }
  vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(g_library, "vkGetInstanceProcAddr"));
  if (!vkGetInstanceProcAddr) {
    dlclose(g_library);
    g_library = nullptr;
    g_failure = "the Vulkan loader does not export vkGetInstanceProcAddr";
    if (reason) *reason = g_failure;
    return false;
  }
#define TVK_LOAD_GLOBAL(name) \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  TVK_VK_LOADER_FUNCTIONS(TVK_LOAD_GLOBAL)
#undef TVK_LOAD_GLOBAL
  if (!vkCreateInstance || !vkEnumerateInstanceExtensionProperties) {
    g_failure = "the Vulkan loader is unusable (vkCreateInstance missing)";
    if (reason) *reason = g_failure;
    g_library = nullptr;  // keep the handle open; just report unavailability
    return false;
  }
  return true;
}

void load_instance_functions(VkInstance instance) {
  // Device-level functions are resolved through the instance: the loader returns trampolines
  // that dispatch on the VkDevice / VkCommandBuffer / VkQueue argument, so one set of pointers
  // serves every device of every driver.
#define TVK_LOAD_INSTANCE(name) name = reinterpret_cast<PFN_##name>(resolve(instance, #name));
  TVK_VK_INSTANCE_FUNCTIONS(TVK_LOAD_INSTANCE)
  TVK_VK_DEVICE_FUNCTIONS(TVK_LOAD_INSTANCE)
#undef TVK_LOAD_INSTANCE
}

}  // namespace tvk::vk
