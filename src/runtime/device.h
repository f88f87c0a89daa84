// L1: Vulkan instance, physical-device discovery and selection, capability probe, logical
// devices. No torch headers.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/profiler.h"
#include "runtime/vulkan_api.h"

namespace tvk {

class Allocator;
class HostAllocator;
class PipelineCache;
class Stream;

// Everything the kernels and the Python API need to know about a device, read once at
// discovery. Kernels choose fast paths from these flags; TORCH_VK_DISABLE_* variables switch
// fast paths off for testing (see docs/ENVIRONMENT.md).
struct DeviceCapabilities {
  std::string name;
  std::string vendor;         // "NVIDIA", "AMD", "Intel", "ARM", "Qualcomm", "Apple", "Mesa", or hex id
  std::string device_type;    // "discrete", "integrated", "virtual", "cpu", "other"
  std::string driver_name;    // VkPhysicalDeviceDriverProperties::driverName
  std::string driver_info;    // VkPhysicalDeviceDriverProperties::driverInfo
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t api_version = 0;     // VK_MAKE_API_VERSION packed
  uint32_t driver_version = 0;  // vendor-specific packing
  std::array<uint8_t, 16> pipeline_cache_uuid{};

  // Shader arithmetic / storage features.
  bool float16 = false;            // shaderFloat16
  bool float64 = false;            // shaderFloat64
  bool int8 = false;               // shaderInt8
  bool int16 = false;              // shaderInt16
  bool int64 = false;              // shaderInt64 (required)
  bool storage_8bit = false;       // storageBuffer8BitAccess (required)
  bool storage_16bit = false;      // storageBuffer16BitAccess (required)
  bool buffer_device_address = false;  // (required)
  bool timeline_semaphore = false;     // (required)
  bool float32_atomic_add = false;     // VK_EXT_shader_atomic_float shaderBufferFloat32AtomicAdd
  bool int64_atomics = false;          // shaderBufferInt64Atomics
  // VK_KHR_cooperative_matrix present and enabled, with vulkanMemoryModel and shaderFloat16
  // (what the cooperative-matrix shaders declare) and at least one shape in
  // coopmat_f16_shapes. TORCH_VK_DISABLE_COOPMAT=1 clears it.
  bool cooperative_matrix = false;
  struct CooperativeMatrixShape {
    uint32_t m = 0, n = 0, k = 0;
  };
  // The subgroup-scope shapes M x N x K of float16 A / B with float32 C and result
  // (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR), in the driver's order.
  std::vector<CooperativeMatrixShape> coopmat_f16_shapes;
  // The same for bfloat16 A / B, listed only when cooperative_matrix holds and
  // VK_KHR_shader_bfloat16 offers shaderBFloat16Type and shaderBFloat16CooperativeMatrix (then
  // enabled); empty otherwise.
  std::vector<CooperativeMatrixShape> coopmat_bf16_shapes;
  bool memory_budget = false;          // VK_EXT_memory_budget present
  // Storage texel buffers bound with push descriptors (VK_KHR_push_descriptor, the formats
  // R32_SFLOAT and R32G32B32A32_SFLOAT usable as storage texel buffers). Kernels for CPU devices
  // read through them (Allocator::texel_view): lavapipe gathers a texel load in a few vector
  // instructions, against a loop over the lanes for every buffer-reference load.
  // TORCH_VK_DISABLE_TEXEL_BUFFERS=1 switches them off.
  bool texel_buffers = false;
  // texel_buffers and also R16 / RGBA16 in SFLOAT and UINT as storage texel buffers (float16 /
  // bfloat16 operands).
  bool texel_16bit = false;
  uint64_t max_texel_buffer_elements = 0;  // maxTexelBufferElements

  // SPIR-V float controls (VkPhysicalDeviceFloatControlsProperties, Vulkan 1.2 core). Index
  // 0/1/2 = 16/32/64-bit floats. The pipeline cache patches every module to request these modes
  // where supported (see pipeline.h, FloatControlsRequest); TORCH_VK_FLOAT_CONTROLS=0 clears
  // them (the driver's default float behavior, e.g. fast math and flushed denormals).
  std::array<bool, 3> signed_zero_inf_nan_preserve{};  // shaderSignedZeroInfNanPreserveFloat16/32/64
  std::array<bool, 3> denorm_preserve{};               // shaderDenormPreserveFloat16/32/64
  // VkShaderFloatControlsIndependence: 0 = 32-bit only, 1 = all, 2 = none.
  uint32_t denorm_behavior_independence = 2;

  // Subgroups.
  uint32_t subgroup_size = 0;
  bool subgroup_basic = false, subgroup_vote = false, subgroup_arithmetic = false,
       subgroup_ballot = false, subgroup_shuffle = false;
  bool subgroup_extended_types = false;  // shaderSubgroupExtendedTypes (64-bit subgroup ops)

  // Limits.
  uint64_t max_storage_buffer_range = 0;
  uint64_t max_memory_allocation_size = 0;
  uint64_t max_buffer_size = 0;
  std::array<uint32_t, 3> max_workgroup_count{};
  std::array<uint32_t, 3> max_workgroup_size{};
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_shared_memory_size = 0;
  uint32_t max_push_constants_size = 0;
  // Loop iterations one shader invocation may run, summed over all of its loops (0: no
  // limit). llvmpipe / lavapipe (gallivm) ends every loop silently once an invocation has run
  // 65535 iterations in total; launchers whose per-invocation loops grow with the problem
  // split the work across dispatches or invocations to stay below this (loop_budget() in
  // kernels/launch.h). TORCH_VK_MAX_LOOP_ITERATIONS=N overrides the detected value (tests use
  // small values to reach the split paths with small tensors).
  uint32_t max_loop_iterations = 0;
  double timestamp_period_ns = 0;  // 0 when the compute queue has no timestamps

  // Memory.
  uint64_t device_local_heap_size = 0;  // size of the heap that backs device allocations
  bool unified_memory = false;          // the device-local memory type is also host-visible
                                        // (and device blocks are mapped); forced off by
                                        // TORCH_VK_DISABLE_UNIFIED_MEMORY=1

  // Queues.
  bool compute_queue = false;           // a queue family with VK_QUEUE_COMPUTE_BIT (required)
  bool sparse_binding = false;          // sparseBinding, and the compute queue binds sparse
                                        // memory: segments beyond maxMemoryAllocationSize are
                                        // sparse buffers backed by several allocations

  // Lists missing required features (empty when the device is usable).
  std::string missing_requirements() const;
};

// Counters that tests and benchmarks read (torch_vk.stats()). Process-wide, all devices.
struct RuntimeCounters {
  std::atomic<uint64_t> dispatches{0};   // compute dispatches recorded
  std::atomic<uint64_t> transfers{0};    // copy / fill commands recorded
  std::atomic<uint64_t> submits{0};      // vkQueueSubmit calls
  std::atomic<uint64_t> host_waits{0};   // host waits asked for past the point already waited for
  std::atomic<uint64_t> pipelines_created{0};
  std::atomic<uint64_t> barriers{0};          // barriers recorded between two commands
  std::atomic<uint64_t> barriers_skipped{0};  // command pairs hazard tracking left unordered
};

// One logical device: queue, allocator, streams, pipelines. Created lazily by Runtime.
class Device {
 public:
  Device(int index, VkPhysicalDevice physical, const DeviceCapabilities& caps);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int index() const { return index_; }
  const DeviceCapabilities& caps() const { return caps_; }
  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  // Every vkQueueSubmit on this device's queue holds this lock.
  std::mutex& queue_mutex() { return queue_mutex_; }

  Allocator& allocator() { return *allocator_; }
  HostAllocator& host_allocator() { return *host_allocator_; }
  PipelineCache& pipelines() { return *pipelines_; }

  // Stream 0 is the default stream; others come from create_stream(). Streams live as long as
  // the device. Ids are small integers, stable for the process.
  Stream& stream(uint32_t id);
  uint32_t create_stream(int priority = 0);
  uint32_t stream_count() const;

  // Flushes and waits for every stream of this device.
  void synchronize();
  // Profiling (runtime/profiler.h): waits for all work, then appends every stream's profiled
  // commands to `out` on the host clock.
  void collect_profile(std::vector<profiler::CommandRecord>& out);

  // Memory type indices chosen at creation.
  uint32_t device_memory_type() const { return device_memory_type_; }
  uint32_t host_memory_type() const { return host_memory_type_; }  // HOST_VISIBLE|HOST_COHERENT

  // (free, total) bytes of the device heap, from VK_EXT_memory_budget when present, else
  // heap size minus what this process reserved.
  std::pair<uint64_t, uint64_t> memory_info() const;

  // Memory types and heaps of the physical device (read once at creation).
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_properties_; }
  // Device extensions enabled on the VkDevice.
  const std::vector<std::string>& enabled_extensions() const { return enabled_extensions_; }

 private:
  int index_;
  VkPhysicalDevice physical_;
  DeviceCapabilities caps_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  uint32_t device_memory_type_ = 0;
  uint32_t host_memory_type_ = 0;
  VkPhysicalDeviceMemoryProperties memory_properties_{};
  std::vector<std::string> enabled_extensions_;
  std::mutex queue_mutex_;
  mutable std::mutex streams_mutex_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<HostAllocator> host_allocator_;
  std::unique_ptr<PipelineCache> pipelines_;
};

// Process-wide entry point. Never throws from device_count()/available(); the first call
// opens the loader and enumerates devices.
//
// Environment:
//   TORCH_VK_VISIBLE_DEVICES  comma list of physical-device indices (like CUDA_VISIBLE_DEVICES);
//                             empty string hides all devices.
//   TORCH_VK_VALIDATION=1     enable VK_LAYER_KHRONOS_validation and a debug messenger that
//                             records every warning/error (see validation_messages()).
class Runtime {
 public:
  static Runtime& get();

  int device_count();                 // 0 if no loader / driver / usable device
  bool available() { return device_count() > 0; }
  std::string unavailable_reason();   // why device_count() is 0 ("" otherwise)
  // Capabilities of visible device `index` without creating a VkDevice.
  const DeviceCapabilities& capabilities(int index);
  // Creates the logical device on first use. Throws DeviceUnavailableError / std::out_of_range.
  Device& device(int index);
  bool device_initialized(int index);

  VkInstance instance();
  uint32_t instance_api_version() const { return instance_api_version_; }
  std::string loader_version_string();

  RuntimeCounters& counters() { return counters_; }

  bool validation_enabled() const { return validation_enabled_; }
  // Number of validation messages of severity ERROR seen so far, and their texts.
  uint64_t validation_error_count() const { return validation_errors_.load(); }
  std::vector<std::string> validation_messages();
  void record_validation_message(bool is_error, const std::string& text);

  // Flushes and waits for all devices (used at exit and by tests).
  void synchronize_all();

 private:
  Runtime();
  ~Runtime();
  void discover();

  std::mutex mutex_;
  bool discovered_ = false;
  std::string unavailable_reason_;
  VkInstance instance_ = VK_NULL_HANDLE;
  uint32_t instance_api_version_ = 0;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  bool validation_enabled_ = false;
  std::vector<VkPhysicalDevice> physical_devices_;   // visible ones, in visible order
  std::vector<DeviceCapabilities> caps_;
  std::vector<std::unique_ptr<Device>> devices_;
  // Lock-free fast path of device(): set once discovery finished / a device was created.
  std::atomic<bool> ready_{false};
  std::unique_ptr<std::atomic<Device*>[]> device_ptrs_;
  RuntimeCounters counters_;
  std::atomic<uint64_t> validation_errors_{0};
  std::mutex messages_mutex_;
  std::vector<std::string> messages_;
};

}  // namespace tvk
