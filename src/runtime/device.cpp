// L1: the Vulkan instance, physical-device discovery and capability probe, logical devices.
//
// The Runtime singleton is created on first use and intentionally never destroyed: PyTorch
// may free tensors during interpreter shutdown, after static destructors ran, and those frees
// must still find a live allocator. (The pipeline cache is saved by an atexit hook, see
// pipeline.cpp.)
#include "runtime/device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "runtime/allocator.h"
#include "runtime/error.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

// Vulkan structs are written `T x{VK_STRUCTURE_TYPE_...}`: the other members are zero on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tvk {

namespace {

// VK_KHR_cooperative_matrix is newer than the Vulkan headers of Debian 12 (1.3.239); the
// feature struct is declared here when the headers lack it (values from the registry).
#ifdef VK_KHR_cooperative_matrix
using CoopMatFeatures = VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
constexpr VkStructureType kCoopMatFeaturesType =
    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
#else
struct CoopMatFeatures {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};
constexpr VkStructureType kCoopMatFeaturesType = static_cast<VkStructureType>(1000506000);
#endif

// VkCooperativeMatrixPropertiesKHR and its query, declared here for the same reason.
struct CoopMatProperties {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize, NSize, KSize;
  int32_t AType, BType, CType, ResultType;  // VkComponentTypeKHR
  VkBool32 saturatingAccumulation;
  int32_t scope;  // VkScopeKHR
};
constexpr VkStructureType kCoopMatPropertiesType = static_cast<VkStructureType>(1000506001);
constexpr int32_t kComponentFloat16 = 0, kComponentFloat32 = 1;  // VkComponentTypeKHR
constexpr int32_t kComponentBFloat16 = 1000141000;                // VK_KHR_shader_bfloat16
constexpr int32_t kScopeSubgroup = 3;                             // VkScopeKHR
using PfnCoopMatProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CoopMatProperties*);

// VkPhysicalDeviceShaderBfloat16FeaturesKHR (VK_KHR_shader_bfloat16, 2025), declared here for
// the same reason.
struct Bfloat16Features {
  VkStructureType sType;
  void* pNext;
  VkBool32 shaderBFloat16Type;
  VkBool32 shaderBFloat16DotProduct;
  VkBool32 shaderBFloat16CooperativeMatrix;
};
constexpr VkStructureType kBfloat16FeaturesType = static_cast<VkStructureType>(1000141000);

// The subgroup-scope `component` x `component` + float32 -> float32 shapes the device lists
// (component: kComponentFloat16 or kComponentBFloat16).
std::vector<DeviceCapabilities::CooperativeMatrixShape> coopmat_shapes(VkInstance instance,
                                                                       VkPhysicalDevice pd,
                                                                       int32_t component) {
  std::vector<DeviceCapabilities::CooperativeMatrixShape> shapes;
  auto query = reinterpret_cast<PfnCoopMatProperties>(
      vk::vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  uint32_t count = 0;
  if (!query || query(pd, &count, nullptr) != VK_SUCCESS || count == 0) return shapes;
  std::vector<CoopMatProperties> props(count, CoopMatProperties{kCoopMatPropertiesType, nullptr});
  if (query(pd, &count, props.data()) < 0) return shapes;
  props.resize(count);
  for (const CoopMatProperties& p : props)
    if (p.AType == component && p.BType == component &&
        p.CType == kComponentFloat32 && p.ResultType == kComponentFloat32 &&
        p.scope == kScopeSubgroup && !p.saturatingAccumulation)
      shapes.push_back({p.MSize, p.NSize, p.KSize});
  return shapes;
}

constexpr const char* kExtCoopMat = "VK_KHR_cooperative_matrix";
constexpr const char* kExtBfloat16 = "VK_KHR_shader_bfloat16";
constexpr const char* kExtAtomicFloat = "VK_EXT_shader_atomic_float";
constexpr const char* kExtMemoryBudget = "VK_EXT_memory_budget";
constexpr const char* kExtPortabilitySubset = "VK_KHR_portability_subset";
constexpr const char* kExtMaintenance4 = "VK_KHR_maintenance4";
constexpr const char* kExtPushDescriptor = "VK_KHR_push_descriptor";

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

// True when the variable is set to an explicit "off" value (0 / false / no / off).
bool env_flag_off(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s == "0" || s == "false" || s == "no" || s == "off";
}

std::string vendor_name(uint32_t id) {
  switch (id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002:
    case 0x1022: return "AMD";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106B: return "Apple";
    case 0x10005: return "Mesa";  // VK_VENDOR_ID_MESA (lavapipe)
    default: {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "0x%04x", id);
      return buf;
    }
  }
}

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

std::set<std::string> device_extensions(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vk::vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> props(n);
  vk::vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, props.data());
  std::set<std::string> out;
  for (uint32_t i = 0; i < n; ++i) out.insert(props[i].extensionName);
  return out;
}

// Index of the queue family used for everything (compute + transfer), or -1. Prefers a family
// with timestamp support; the first such compute family is normally the universal queue.
int choose_queue_family(VkPhysicalDevice pd, uint32_t* timestamp_bits,
                        VkQueueFlags* flags = nullptr) {
  uint32_t n = 0;
  vk::vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  vk::vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fams.data());
  int best = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (!(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || fams[i].queueCount == 0) continue;
    if (best < 0 || (fams[best].timestampValidBits == 0 && fams[i].timestampValidBits > 0))
      best = static_cast<int>(i);
  }
  if (timestamp_bits) *timestamp_bits = best >= 0 ? fams[best].timestampValidBits : 0;
  if (flags) *flags = best >= 0 ? fams[best].queueFlags : 0;
  return best;
}

constexpr VkMemoryPropertyFlags kExoticMemory =
    VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT |
    VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD | VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD;

// Device memory: a DEVICE_LOCAL type of the largest device-local heap. A type that is also
// HOST_VISIBLE|HOST_COHERENT is preferred (so blocks can be mapped and host copies skip
// staging) when the device shares memory with the host (integrated / CPU / virtual) or the
// type is HOST_CACHED; on discrete GPUs the host-visible device-local type is usually the small
// uncached BAR window, which must not back every tensor.
int choose_device_memory_type(const VkPhysicalDeviceMemoryProperties& mp, VkPhysicalDeviceType t) {
  uint64_t best_heap = 0;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    const auto& ty = mp.memoryTypes[i];
    if ((ty.propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && !(ty.propertyFlags & kExoticMemory))
      best_heap = std::max<uint64_t>(best_heap, mp.memoryHeaps[ty.heapIndex].size);
  }
  const VkMemoryPropertyFlags mappable =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const bool shared = t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                      t == VK_PHYSICAL_DEVICE_TYPE_CPU || t == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
  int plain = -1, mapped = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    const auto& ty = mp.memoryTypes[i];
    if (!(ty.propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) || (ty.propertyFlags & kExoticMemory))
      continue;
    if (mp.memoryHeaps[ty.heapIndex].size != best_heap) continue;
    if ((ty.propertyFlags & mappable) == mappable) {
      if (mapped < 0 && (shared || (ty.propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)))
        mapped = static_cast<int>(i);
    } else if (plain < 0) {
      plain = static_cast<int>(i);
    }
  }
  if (mapped >= 0) return mapped;
  if (plain >= 0) return plain;
  // No unexotic device-local type on the largest heap: take any device-local, then anything.
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) &&
        !(mp.memoryTypes[i].propertyFlags & kExoticMemory))
      return static_cast<int>(i);
  return mp.memoryTypeCount > 0 ? 0 : -1;
}

// Host (pinned / staging / parameter) memory: HOST_VISIBLE|HOST_COHERENT, preferring
// HOST_CACHED (fast host reads of downloads), then system memory over device memory.
int choose_host_memory_type(const VkPhysicalDeviceMemoryProperties& mp) {
  const VkMemoryPropertyFlags need =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    if ((f & need) != need || (f & kExoticMemory)) continue;
    int score = ((f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? 2 : 0) +
                ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ? 0 : 1);
    if (score > best_score) best = static_cast<int>(i), best_score = score;
  }
  return best;
}

// Everything read from a physical device in one place (used by discovery and by Device).
struct Probe {
  DeviceCapabilities caps;
  std::set<std::string> extensions;
  int queue_family = -1;
  bool maintenance4 = false;
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  CoopMatFeatures coopmat{kCoopMatFeaturesType, nullptr, VK_FALSE, VK_FALSE};
  Bfloat16Features bfloat16{kBfloat16FeaturesType, nullptr, VK_FALSE, VK_FALSE, VK_FALSE};
  bool has_13 = false;
};

void probe_device(VkInstance instance, VkPhysicalDevice pd, uint32_t instance_api, Probe* p) {
  DeviceCapabilities& c = p->caps;
  VkPhysicalDeviceProperties props{};
  vk::vkGetPhysicalDeviceProperties(pd, &props);
  const uint32_t api = std::min(props.apiVersion, instance_api);
  p->extensions = device_extensions(pd);
  auto has = [&](const char* e) { return p->extensions.count(e) > 0; };

  c.name = props.deviceName;
  c.vendor_id = props.vendorID;
  c.vendor = vendor_name(props.vendorID);
  c.device_id = props.deviceID;
  c.device_type = device_type_name(props.deviceType);
  c.api_version = props.apiVersion;
  c.driver_version = props.driverVersion;
  std::memcpy(c.pipeline_cache_uuid.data(), props.pipelineCacheUUID, VK_UUID_SIZE);

  const VkPhysicalDeviceLimits& lim = props.limits;
  c.max_storage_buffer_range = lim.maxStorageBufferRange;
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_count[i] = lim.maxComputeWorkGroupCount[i];
    c.max_workgroup_size[i] = lim.maxComputeWorkGroupSize[i];
  }
  c.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
  c.max_shared_memory_size = lim.maxComputeSharedMemorySize;
  c.max_push_constants_size = lim.maxPushConstantsSize;
  c.max_texel_buffer_elements = lim.maxTexelBufferElements;

  uint32_t ts_bits = 0;
  VkQueueFlags queue_flags = 0;
  p->queue_family = choose_queue_family(pd, &ts_bits, &queue_flags);
  c.compute_queue = p->queue_family >= 0;
  c.timestamp_period_ns = ts_bits > 0 ? static_cast<double>(lim.timestampPeriod) : 0.0;

  VkPhysicalDeviceMemoryProperties mp{};
  vk::vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  int dev_type = choose_device_memory_type(mp, props.deviceType);
  if (dev_type >= 0) {
    const auto& ty = mp.memoryTypes[dev_type];
    c.device_local_heap_size = mp.memoryHeaps[ty.heapIndex].size;
    const VkMemoryPropertyFlags mappable =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    c.unified_memory = (ty.propertyFlags & mappable) == mappable;
  }
  c.memory_budget = has(kExtMemoryBudget);

  // Vulkan 1.1/1.2 feature and property structs may only be chained on a 1.2 device.
  c.max_memory_allocation_size = 0;
  if (api < VK_API_VERSION_1_2) return;

  p->has_13 = api >= VK_API_VERSION_1_3;
  p->maintenance4 = p->has_13 || has(kExtMaintenance4);
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceMaintenance4Properties m4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
  VkPhysicalDeviceFloatControlsProperties float_controls{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  VkPhysicalDevicePushDescriptorPropertiesKHR push_descriptor{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &subgroup;
  subgroup.pNext = &driver;
  driver.pNext = &float_controls;
  float_controls.pNext = &m3;
  void** props_tail = &m3.pNext;
  if (p->maintenance4) *props_tail = &m4, props_tail = &m4.pNext;
  if (has(kExtPushDescriptor)) *props_tail = &push_descriptor, props_tail = &push_descriptor.pNext;
  vk::vkGetPhysicalDeviceProperties2(pd, &props2);
  c.signed_zero_inf_nan_preserve = {float_controls.shaderSignedZeroInfNanPreserveFloat16 == VK_TRUE,
                                    float_controls.shaderSignedZeroInfNanPreserveFloat32 == VK_TRUE,
                                    float_controls.shaderSignedZeroInfNanPreserveFloat64 == VK_TRUE};
  c.denorm_preserve = {float_controls.shaderDenormPreserveFloat16 == VK_TRUE,
                       float_controls.shaderDenormPreserveFloat32 == VK_TRUE,
                       float_controls.shaderDenormPreserveFloat64 == VK_TRUE};
  c.denorm_behavior_independence = static_cast<uint32_t>(float_controls.denormBehaviorIndependence);
  // TORCH_VK_FLOAT_CONTROLS=0: leave the modules unpatched (the driver's default float behavior).
  if (env_flag_off("TORCH_VK_FLOAT_CONTROLS")) {
    c.signed_zero_inf_nan_preserve = {};
    c.denorm_preserve = {};
  }
  c.driver_name = driver.driverName;
  // gallivm's loop limiter (LP_MAX_TGSI_LOOP_ITERATIONS), one counter per invocation shared by
  // every loop of the shader.
  if (driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) c.max_loop_iterations = 65535;
  if (const char* v = std::getenv("TORCH_VK_MAX_LOOP_ITERATIONS")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (end != v && *end == '\0') c.max_loop_iterations = static_cast<uint32_t>(std::min<unsigned long long>(n, UINT32_MAX));
  }
  c.driver_info = driver.driverInfo;
  c.max_memory_allocation_size = m3.maxMemoryAllocationSize;
  // Without maintenance4 there is no separate buffer limit; a buffer cannot outgrow the one
  // allocation that backs it.
  c.max_buffer_size = p->maintenance4 ? m4.maxBufferSize : m3.maxMemoryAllocationSize;

  c.subgroup_size = subgroup.subgroupSize;
  if (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) {
    const VkSubgroupFeatureFlags ops = subgroup.supportedOperations;
    c.subgroup_basic = ops & VK_SUBGROUP_FEATURE_BASIC_BIT;
    c.subgroup_vote = ops & VK_SUBGROUP_FEATURE_VOTE_BIT;
    c.subgroup_arithmetic = ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    c.subgroup_ballot = ops & VK_SUBGROUP_FEATURE_BALLOT_BIT;
    c.subgroup_shuffle = ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  }

  p->features2.pNext = &p->f11;
  p->f11.pNext = &p->f12;
  void** tail = &p->f12.pNext;
  if (p->has_13) *tail = &p->f13, tail = &p->f13.pNext;
  if (has(kExtAtomicFloat)) *tail = &p->atomic_float, tail = &p->atomic_float.pNext;
  if (has(kExtCoopMat)) *tail = &p->coopmat, tail = &p->coopmat.pNext;
  if (has(kExtBfloat16)) *tail = &p->bfloat16, tail = &p->bfloat16.pNext;
  vk::vkGetPhysicalDeviceFeatures2(pd, &p->features2);
  const VkPhysicalDeviceFeatures& core = p->features2.features;
  c.float16 = p->f12.shaderFloat16;
  c.float64 = core.shaderFloat64;
  c.int8 = p->f12.shaderInt8;
  c.int16 = core.shaderInt16;
  c.int64 = core.shaderInt64;
  c.sparse_binding = core.sparseBinding && (queue_flags & VK_QUEUE_SPARSE_BINDING_BIT);
  c.subgroup_extended_types = p->f12.shaderSubgroupExtendedTypes;
  c.storage_8bit = p->f12.storageBuffer8BitAccess;
  c.storage_16bit = p->f11.storageBuffer16BitAccess;
  c.buffer_device_address = p->f12.bufferDeviceAddress;
  c.timeline_semaphore = p->f12.timelineSemaphore;
  c.int64_atomics = p->f12.shaderBufferInt64Atomics;
  c.float32_atomic_add = has(kExtAtomicFloat) && p->atomic_float.shaderBufferFloat32AtomicAdd;
  c.cooperative_matrix = has(kExtCoopMat) && p->coopmat.cooperativeMatrix &&
                         p->f12.vulkanMemoryModel && p->f12.shaderFloat16;
  if (c.cooperative_matrix) c.coopmat_f16_shapes = coopmat_shapes(instance, pd, kComponentFloat16);
  if (c.coopmat_f16_shapes.empty()) c.cooperative_matrix = false;
  if (c.cooperative_matrix && has(kExtBfloat16) && p->bfloat16.shaderBFloat16Type &&
      p->bfloat16.shaderBFloat16CooperativeMatrix)
    c.coopmat_bf16_shapes = coopmat_shapes(instance, pd, kComponentBFloat16);
  auto storage_texel_format = [&](VkFormat format) {
    VkFormatProperties fp{};
    vk::vkGetPhysicalDeviceFormatProperties(pd, format, &fp);
    return (fp.bufferFeatures & VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) != 0;
  };
  c.texel_buffers = has(kExtPushDescriptor) && push_descriptor.maxPushDescriptors >= 8 &&
                    c.max_texel_buffer_elements >= 65536 &&
                    storage_texel_format(VK_FORMAT_R32_SFLOAT) &&
                    storage_texel_format(VK_FORMAT_R32G32B32A32_SFLOAT);
  c.texel_16bit = c.texel_buffers && storage_texel_format(VK_FORMAT_R16_SFLOAT) &&
                  storage_texel_format(VK_FORMAT_R16G16B16A16_SFLOAT) &&
                  storage_texel_format(VK_FORMAT_R16_UINT) &&
                  storage_texel_format(VK_FORMAT_R16G16B16A16_UINT);

  // Fast paths switched off for testing the portable baselines.
  if (env_flag("TORCH_VK_DISABLE_COOPMAT")) {
    c.cooperative_matrix = false;
    c.coopmat_f16_shapes.clear();
    c.coopmat_bf16_shapes.clear();
  }
  if (env_flag("TORCH_VK_DISABLE_TEXEL_BUFFERS")) c.texel_buffers = c.texel_16bit = false;
  // Treat device memory as not host-visible: host copies take the staging paths of discrete GPUs.
  if (env_flag("TORCH_VK_DISABLE_UNIFIED_MEMORY")) c.unified_memory = false;
  if (env_flag("TORCH_VK_DISABLE_SUBGROUPS")) {
    c.subgroup_basic = c.subgroup_vote = c.subgroup_arithmetic = false;
    c.subgroup_ballot = c.subgroup_shuffle = c.subgroup_extended_types = false;
  }
}

VKAPI_ATTR VkBool32 VKAPI_CALL debug_messenger_callback(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const char* msg = data && data->pMessage ? data->pMessage : "";
  const char* id = data && data->pMessageIdName ? data->pMessageIdName : "";
  // The loader warns that a layer was enabled through an environment variable
  // (VK_INSTANCE_LAYERS); that is informational, not a finding.
  if (std::strstr(id, "Loader") &&
      (std::strstr(msg, "env var") || std::strstr(msg, "environment variable")))
    return VK_FALSE;
  const bool is_error = severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  std::string text = std::string(is_error ? "[error] " : "[warning] ") + id + ": " + msg;
  static_cast<Runtime*>(user)->record_validation_message(is_error, text);
  if (is_error) std::fprintf(stderr, "torch-vk validation: %s\n", text.c_str());
  return VK_FALSE;
}

// Parses TORCH_VK_VISIBLE_DEVICES ("1,0"): indices into the driver's enumeration order, in the
// order given. Non-numeric and out-of-range entries are ignored. A repeated index is one more
// logical device on the same physical device ("0,0": vk:0 and vk:1 share GPU 0), so that
// launchers' rank -> device code (device_id=vk:LOCAL_RANK, DeviceMesh's set_device) runs
// unchanged when several ranks share one GPU; each process should use one of them.
std::vector<uint32_t> parse_visible_devices(const char* value, uint32_t count) {
  std::vector<uint32_t> out;
  std::stringstream ss(value);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    tok.erase(0, tok.find_first_not_of(" \t"));
    tok.erase(tok.find_last_not_of(" \t") + 1);
    if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos) continue;
    unsigned long v = std::strtoul(tok.c_str(), nullptr, 10);
    if (v >= count) continue;
    out.push_back(static_cast<uint32_t>(v));
  }
  return out;
}

}  // namespace

std::string DeviceCapabilities::missing_requirements() const {
  std::vector<const char*> missing;
  if (api_version < VK_API_VERSION_1_2) missing.push_back("Vulkan 1.2");
  if (!buffer_device_address) missing.push_back("bufferDeviceAddress");
  if (!timeline_semaphore) missing.push_back("timelineSemaphore");
  if (!int64) missing.push_back("shaderInt64");
  if (!storage_8bit) missing.push_back("storageBuffer8BitAccess");
  if (!storage_16bit) missing.push_back("storageBuffer16BitAccess");
  if (!compute_queue) missing.push_back("a compute queue");
  std::string out;
  for (const char* m : missing) out += (out.empty() ? "" : ", ") + std::string(m);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Device

Device::Device(int index, VkPhysicalDevice physical, const DeviceCapabilities& caps)
    : index_(index), physical_(physical), caps_(caps) {
  Probe p;
  probe_device(Runtime::get().instance(), physical, Runtime::get().instance_api_version(), &p);
  TVK_CHECK(p.queue_family >= 0, "device ", index, " has no compute queue");
  queue_family_ = static_cast<uint32_t>(p.queue_family);
  auto has = [&](const char* e) { return p.extensions.count(e) > 0; };

  // Extensions: only ones the device reports.
  for (const char* e : {kExtMemoryBudget, kExtAtomicFloat, kExtPortabilitySubset})
    if (has(e)) enabled_extensions_.push_back(e);
  if (caps_.cooperative_matrix) enabled_extensions_.push_back(kExtCoopMat);
  if (!caps_.coopmat_bf16_shapes.empty()) enabled_extensions_.push_back(kExtBfloat16);
  if (caps_.texel_buffers) enabled_extensions_.push_back(kExtPushDescriptor);
  if (!p.has_13 && p.maintenance4) enabled_extensions_.push_back(kExtMaintenance4);

  // Features: the required ones plus every optional compute feature the device offers.
  const VkPhysicalDeviceFeatures& sup = p.features2.features;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.features.shaderInt64 = sup.shaderInt64;
  f2.features.shaderInt16 = sup.shaderInt16;
  f2.features.shaderFloat64 = sup.shaderFloat64;
  f2.features.sparseBinding = caps_.sparse_binding ? VK_TRUE : VK_FALSE;
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.storageBuffer16BitAccess = p.f11.storageBuffer16BitAccess;
  f11.uniformAndStorageBuffer16BitAccess = p.f11.uniformAndStorageBuffer16BitAccess;
  f11.storagePushConstant16 = p.f11.storagePushConstant16;
  f11.variablePointersStorageBuffer = p.f11.variablePointersStorageBuffer;
  f11.variablePointers = p.f11.variablePointers;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.bufferDeviceAddress = p.f12.bufferDeviceAddress;
  f12.timelineSemaphore = p.f12.timelineSemaphore;
  f12.storageBuffer8BitAccess = p.f12.storageBuffer8BitAccess;
  f12.uniformAndStorageBuffer8BitAccess = p.f12.uniformAndStorageBuffer8BitAccess;
  f12.storagePushConstant8 = p.f12.storagePushConstant8;
  f12.shaderFloat16 = p.f12.shaderFloat16;
  f12.shaderInt8 = p.f12.shaderInt8;
  f12.shaderBufferInt64Atomics = p.f12.shaderBufferInt64Atomics;
  f12.shaderSharedInt64Atomics = p.f12.shaderSharedInt64Atomics;
  f12.scalarBlockLayout = p.f12.scalarBlockLayout;
  f12.vulkanMemoryModel = p.f12.vulkanMemoryModel;
  f12.vulkanMemoryModelDeviceScope = p.f12.vulkanMemoryModelDeviceScope;
  f12.shaderSubgroupExtendedTypes = p.f12.shaderSubgroupExtendedTypes;
  f12.hostQueryReset = p.f12.hostQueryReset;
  f12.uniformBufferStandardLayout = p.f12.uniformBufferStandardLayout;
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  f13.synchronization2 = p.f13.synchronization2;
  f13.maintenance4 = p.f13.maintenance4;
  f13.subgroupSizeControl = p.f13.subgroupSizeControl;
  f13.computeFullSubgroups = p.f13.computeFullSubgroups;
  f13.shaderIntegerDotProduct = p.f13.shaderIntegerDotProduct;
  VkPhysicalDeviceMaintenance4Features m4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES};
  m4.maintenance4 = VK_TRUE;
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = p.atomic_float;  // all supported bits
  CoopMatFeatures cm{kCoopMatFeaturesType, nullptr, VK_TRUE, VK_FALSE};
  Bfloat16Features bf16{kBfloat16FeaturesType, nullptr, VK_TRUE, VK_FALSE, VK_TRUE};

  f2.pNext = &f11;
  f11.pNext = &f12;
  void** tail = &f12.pNext;
  if (p.has_13) *tail = &f13, tail = &f13.pNext;
  else if (p.maintenance4) *tail = &m4, tail = &m4.pNext;
  if (has(kExtAtomicFloat)) af.pNext = nullptr, *tail = &af, tail = &af.pNext;
  if (caps_.cooperative_matrix) *tail = &cm, tail = &cm.pNext;
  if (!caps_.coopmat_bf16_shapes.empty()) *tail = &bf16, tail = &bf16.pNext;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  std::vector<const char*> ext_ptrs;
  for (const auto& e : enabled_extensions_) ext_ptrs.push_back(e.c_str());
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &f2;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = static_cast<uint32_t>(ext_ptrs.size());
  ci.ppEnabledExtensionNames = ext_ptrs.data();
  TVK_VK_CHECK_DEV(vk::vkCreateDevice(physical_, &ci, nullptr, &device_), index_);
  vk::vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

  vk::vkGetPhysicalDeviceMemoryProperties(physical_, &memory_properties_);
  VkPhysicalDeviceProperties props{};
  vk::vkGetPhysicalDeviceProperties(physical_, &props);
  int dt = choose_device_memory_type(memory_properties_, props.deviceType);
  int ht = choose_host_memory_type(memory_properties_);
  if (dt < 0 || ht < 0) {
    vk::vkDestroyDevice(device_, nullptr);
    throw DeviceUnavailableError("torch-vk: device " + std::to_string(index_) + " (" + caps_.name +
                                 ") has no usable device-local or host-visible memory type");
  }
  device_memory_type_ = static_cast<uint32_t>(dt);
  host_memory_type_ = static_cast<uint32_t>(ht);

  try {
    allocator_ = std::make_unique<Allocator>(*this);
    host_allocator_ = std::make_unique<HostAllocator>(*this);
    pipelines_ = std::make_unique<PipelineCache>(*this);
    streams_.push_back(std::make_unique<Stream>(*this, 0, 0));  // the default stream
  } catch (...) {
    streams_.clear();
    pipelines_.reset();
    host_allocator_.reset();
    allocator_.reset();
    vk::vkDestroyDevice(device_, nullptr);
    throw;
  }
}

Device::~Device() {
  try {
    synchronize();
  } catch (...) {
  }
  streams_.clear();
  pipelines_.reset();
  host_allocator_.reset();
  allocator_.reset();
  if (device_) vk::vkDestroyDevice(device_, nullptr);
}

Stream& Device::stream(uint32_t id) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  if (id >= streams_.size())
    throw std::out_of_range("torch-vk: stream " + std::to_string(id) + " does not exist on vk:" +
                            std::to_string(index_));
  return *streams_[id];
}

uint32_t Device::create_stream(int priority) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  uint32_t id = static_cast<uint32_t>(streams_.size());
  streams_.push_back(std::make_unique<Stream>(*this, id, priority));
  return id;
}

uint32_t Device::stream_count() const {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  return static_cast<uint32_t>(streams_.size());
}

void Device::synchronize() {
  std::vector<Stream*> streams;
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    for (auto& s : streams_) streams.push_back(s.get());
  }
  // Submit everything first so that streams waiting on each other can all make progress.
  std::vector<uint64_t> points;
  for (Stream* s : streams) points.push_back(s->flush());
  for (size_t i = 0; i < streams.size(); ++i) streams[i]->wait_for_point(points[i]);
}

void Device::collect_profile(std::vector<profiler::CommandRecord>& out) {
  synchronize();
  std::vector<Stream*> streams;
  for (uint32_t id = 0; id < stream_count(); ++id) streams.push_back(&stream(id));
  // Device timestamps to the host clock: a timestamp written now on the default stream and
  // waited for; the host time right after the wait stands for it (late by the wait's wake-up
  // latency, so device times come out late, never before their launch, by that much at most).
  int64_t offset_ns = 0;
  if (caps_.timestamp_period_ns > 0 && !streams.empty()) {
    try {
      const uint32_t slot = streams[0]->write_timestamp();
      streams[0]->synchronize();
      const int64_t host = profiler::host_now_ns();
      offset_ns = host - static_cast<int64_t>(streams[0]->read_timestamp_ns(slot));
    } catch (const std::exception&) {
      // The default stream captures a graph: no calibration (device times stay raw).
    }
  }
  for (Stream* s : streams) s->take_profile(out, offset_ns);
}

std::pair<uint64_t, uint64_t> Device::memory_info() const {
  const uint32_t heap = memory_properties_.memoryTypes[device_memory_type_].heapIndex;
  const uint64_t total = memory_properties_.memoryHeaps[heap].size;
  if (caps_.memory_budget && vk::vkGetPhysicalDeviceMemoryProperties2) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mp2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    mp2.pNext = &budget;
    vk::vkGetPhysicalDeviceMemoryProperties2(physical_, &mp2);
    const uint64_t b = std::min<uint64_t>(budget.heapBudget[heap], total);
    const uint64_t u = budget.heapUsage[heap];
    return {b > u ? b - u : 0, total};
  }
  const int64_t reserved = allocator_ ? allocator_->stats().reserved_bytes[0].current : 0;
  const uint64_t r = static_cast<uint64_t>(std::max<int64_t>(reserved, 0));
  return {total > r ? total - r : 0, total};
}

// ---------------------------------------------------------------------------------------------
// Runtime

Runtime& Runtime::get() {
  // Leaked on purpose (see the file comment).
  static Runtime* runtime = new Runtime();
  return *runtime;
}

Runtime::Runtime() = default;

Runtime::~Runtime() {
  // Never runs (the singleton is leaked); kept for completeness.
  devices_.clear();
  if (messenger_ && vk::vkDestroyDebugUtilsMessengerEXT)
    vk::vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) vk::vkDestroyInstance(instance_, nullptr);
}

void Runtime::discover() {
  // Called with mutex_ held, once.
  discovered_ = true;
  std::string reason;
  if (!vk::load_loader(&reason)) {
    unavailable_reason_ = "torch-vk: " + reason;
    return;
  }
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (vk::vkEnumerateInstanceVersion) vk::vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2) {
    unavailable_reason_ = "torch-vk: the Vulkan loader supports only Vulkan " +
                          version_string(loader_version) + "; Vulkan 1.2 or newer is required";
    return;
  }
  instance_api_version_ = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);

  // Instance extensions and layers.
  uint32_t n = 0;
  vk::vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vk::vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  auto has_ext = [&](const char* name) {
    for (const auto& e : exts)
      if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
  };
  std::vector<const char*> enabled_exts;
  std::vector<const char*> enabled_layers;
  VkInstanceCreateFlags flags = 0;
  if (has_ext("VK_KHR_portability_enumeration")) {  // MoltenVK devices are listed only with it
    enabled_exts.push_back("VK_KHR_portability_enumeration");
    flags |= 0x00000001;  // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
  }
  bool want_messenger = false;
  if (env_flag("TORCH_VK_VALIDATION")) {
    uint32_t nl = 0;
    vk::vkEnumerateInstanceLayerProperties(&nl, nullptr);
    std::vector<VkLayerProperties> layers(nl);
    vk::vkEnumerateInstanceLayerProperties(&nl, layers.data());
    bool found = false;
    for (const auto& l : layers)
      if (std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0) found = true;
    if (found) {
      enabled_layers.push_back("VK_LAYER_KHRONOS_validation");
      validation_enabled_ = true;
    } else {
      record_validation_message(false,
                                "[note] TORCH_VK_VALIDATION=1 but VK_LAYER_KHRONOS_validation is "
                                "not installed (Debian: vulkan-validationlayers)");
      std::fprintf(stderr,
                   "torch-vk: TORCH_VK_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not "
                   "installed\n");
    }
    // The layer provides VK_EXT_debug_utils even when the loader's list lacks it.
    if (has_ext(VK_EXT_DEBUG_UTILS_EXTENSION_NAME) || found) {
      enabled_exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      want_messenger = true;
    }
  }

  VkDebugUtilsMessengerCreateInfoEXT messenger_info{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = debug_messenger_callback;
  messenger_info.pUserData = this;

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "torch-vk";
  app.pEngineName = "torch-vk";
  app.apiVersion = instance_api_version_;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pNext = want_messenger ? &messenger_info : nullptr;  // also covers instance creation
  ci.flags = flags;
  ci.pApplicationInfo = &app;
  ci.enabledExtensionCount = static_cast<uint32_t>(enabled_exts.size());
  ci.ppEnabledExtensionNames = enabled_exts.data();
  ci.enabledLayerCount = static_cast<uint32_t>(enabled_layers.size());
  ci.ppEnabledLayerNames = enabled_layers.data();
  VkResult r = vk::vkCreateInstance(&ci, nullptr, &instance_);
  if (r != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    unavailable_reason_ = std::string("torch-vk: vkCreateInstance failed with ") +
                          vk_result_name(r) +
                          (r == VK_ERROR_INCOMPATIBLE_DRIVER
                               ? " (no Vulkan driver installed? Debian: mesa-vulkan-drivers)"
                               : "");
    return;
  }
  vk::load_instance_functions(instance_);
  if (want_messenger && vk::vkCreateDebugUtilsMessengerEXT)
    vk::vkCreateDebugUtilsMessengerEXT(instance_, &messenger_info, nullptr, &messenger_);

  uint32_t count = 0;
  vk::vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> all(count);
  if (count) vk::vkEnumeratePhysicalDevices(instance_, &count, all.data());
  all.resize(count);
  if (count == 0) {
    unavailable_reason_ =
        "torch-vk: no Vulkan device found (install a driver, e.g. Debian: mesa-vulkan-drivers)";
    return;
  }

  std::vector<uint32_t> order;
  const char* visible = std::getenv("TORCH_VK_VISIBLE_DEVICES");
  if (visible) {
    order = parse_visible_devices(visible, count);
  } else {
    for (uint32_t i = 0; i < count; ++i) order.push_back(i);
  }
  if (order.empty()) {
    unavailable_reason_ = std::string("torch-vk: TORCH_VK_VISIBLE_DEVICES=\"") + visible +
                          "\" hides all " + std::to_string(count) + " Vulkan device(s)";
    return;
  }
  std::string skipped;
  for (uint32_t i : order) {
    Probe p;
    probe_device(instance_, all[i], instance_api_version_, &p);
    std::string missing = p.caps.missing_requirements();
    if (!missing.empty()) {
      skipped += (skipped.empty() ? "" : "; ") + std::string("Vulkan device ") + std::to_string(i) +
                 " (" + p.caps.name + ") lacks " + missing;
      continue;
    }
    physical_devices_.push_back(all[i]);
    caps_.push_back(p.caps);
  }
  if (physical_devices_.empty())
    unavailable_reason_ = "torch-vk: no usable Vulkan device: " + skipped;
  devices_.resize(physical_devices_.size());
  device_ptrs_.reset(new std::atomic<Device*>[physical_devices_.size() + 1]);
  for (size_t i = 0; i <= physical_devices_.size(); ++i) device_ptrs_[i].store(nullptr);
}

int Runtime::device_count() {
  if (ready_.load(std::memory_order_acquire)) return static_cast<int>(physical_devices_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  if (!discovered_) {
    try {
      discover();
    } catch (const std::exception& e) {
      unavailable_reason_ = std::string("torch-vk: device discovery failed: ") + e.what();
      physical_devices_.clear();
      caps_.clear();
    }
    if (!device_ptrs_) {
      device_ptrs_.reset(new std::atomic<Device*>[1]);
      device_ptrs_[0].store(nullptr);
    }
    ready_.store(true, std::memory_order_release);
  }
  return static_cast<int>(physical_devices_.size());
}

std::string Runtime::unavailable_reason() {
  device_count();
  return unavailable_reason_;
}

const DeviceCapabilities& Runtime::capabilities(int index) {
  int n = device_count();
  if (index < 0 || index >= n)
    throw std::out_of_range("torch-vk: device index " + std::to_string(index) +
                            " out of range (" + std::to_string(n) + " vk device(s))");
  return caps_[index];
}

Device& Runtime::device(int index) {
  int n = device_count();
  if (index >= 0 && index < n) {
    Device* d = device_ptrs_[index].load(std::memory_order_acquire);
    if (d) return *d;
  }
  if (n == 0) throw DeviceUnavailableError(unavailable_reason_);
  if (index < 0 || index >= n)
    throw std::out_of_range("torch-vk: device index " + std::to_string(index) +
                            " out of range (" + std::to_string(n) + " vk device(s))");
  std::lock_guard<std::mutex> lock(mutex_);
  if (!devices_[index]) {
    devices_[index] = std::make_unique<Device>(index, physical_devices_[index], caps_[index]);
    device_ptrs_[index].store(devices_[index].get(), std::memory_order_release);
  }
  return *devices_[index];
}

bool Runtime::device_initialized(int index) {
  int n = device_count();
  return index >= 0 && index < n && device_ptrs_[index].load(std::memory_order_acquire) != nullptr;
}

VkInstance Runtime::instance() {
  device_count();
  return instance_;
}

std::string Runtime::loader_version_string() {
  std::string reason;
  if (!vk::load_loader(&reason)) return "";
  uint32_t v = VK_API_VERSION_1_0;
  if (vk::vkEnumerateInstanceVersion) vk::vkEnumerateInstanceVersion(&v);
  return version_string(v);
}

std::vector<std::string> Runtime::validation_messages() {
  std::lock_guard<std::mutex> lock(messages_mutex_);
  return messages_;
}

void Runtime::record_validation_message(bool is_error, const std::string& text) {
  if (is_error) validation_errors_.fetch_add(1);
  std::lock_guard<std::mutex> lock(messages_mutex_);
  // Bounded: a runaway message stream must not exhaust memory.
  if (messages_.size() < 10000) messages_.push_back(text);
}

void Runtime::synchronize_all() {
  int n = device_count();
  for (int i = 0; i < n; ++i) {
    Device* d = device_ptrs_[i].load(std::memory_order_acquire);
    if (d) d->synchronize();
  }
}

}  // namespace tvk
