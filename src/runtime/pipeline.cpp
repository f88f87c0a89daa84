// L1: the shared pipeline layout, lazily created compute pipelines and the persistent
// VkPipelineCache.
//
// Persistence: the driver cache is loaded at creation from
//   $TORCH_VK_CACHE_DIR (default ~/.cache/torch_vk)/pipelines-<uuid>-<vendor>-<device>-<driver>.bin
// and written back by save(), by the destructor, and by an atexit hook (the Runtime is leaked,
// so destructors do not run at exit). IO errors are ignored: the cache is only an optimisation.
// Files are written to a temporary name and renamed, so concurrent processes never see a
// partial file.
#include "runtime/pipeline.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/stream.h"

// Vulkan structs are written `T x{VK_STRUCTURE_TYPE_...}`: the other members are zero on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tvk {

namespace {

// Live caches, saved by the atexit hook. Leaked so the hook can run after static destructors.
std::mutex& registry_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::set<PipelineCache*>& registry() {
  static auto* s = new std::set<PipelineCache*>();
  return *s;
}

void save_all_at_exit() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (PipelineCache* cache : registry()) {
    try {
      cache->save();
    } catch (...) {
    }
  }
}

void register_cache(PipelineCache* cache) {
  static bool hooked = [] {
    std::atexit(save_all_at_exit);
    return true;
  }();
  (void)hooked;
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().insert(cache);
}

void unregister_cache(PipelineCache* cache) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().erase(cache);
}

std::string cache_directory() {
  if (const char* dir = std::getenv("TORCH_VK_CACHE_DIR"); dir && *dir) return dir;
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/torch_vk";
  return "";
}

// mkdir -p; errors are ignored (the later open fails and the cache is simply not persisted).
void make_directories(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') {
      std::string prefix = path.substr(0, pos);
      if (!prefix.empty()) ::mkdir(prefix.c_str(), 0755);
    }
  }
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// True when `data` starts with a VkPipelineCacheHeaderVersionOne for this device. Some
// drivers do not cope well with foreign data, so anything else is dropped.
bool header_matches(const std::vector<char>& data, const DeviceCapabilities& caps) {
  if (data.size() < 16 + VK_UUID_SIZE) return false;
  uint32_t words[4];
  std::memcpy(words, data.data(), sizeof(words));
  return words[0] >= 16 + VK_UUID_SIZE && words[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         words[2] == caps.vendor_id && words[3] == caps.device_id &&
         std::memcmp(data.data() + 16, caps.pipeline_cache_uuid.data(), VK_UUID_SIZE) == 0;
}

}  // namespace

PipelineCache::PipelineCache(Device& device) : device_(device) {
  VkDevice dev = device.handle();
  const DeviceCapabilities& caps = device.caps();

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxPushConstantBytes};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  TVK_VK_CHECK_DEV(vk::vkCreatePipelineLayout(dev, &li, nullptr, &layout_), device.index());

  const std::string dir = cache_directory();
  if (!dir.empty()) {
    char name[160];
    std::string uuid;
    for (uint8_t b : caps.pipeline_cache_uuid) {
      char hex[3];
      std::snprintf(hex, sizeof(hex), "%02x", b);
      uuid += hex;
    }
    std::snprintf(name, sizeof(name), "/pipelines-%s-%04x-%04x-%u.bin", uuid.c_str(),
                  caps.vendor_id, caps.device_id, caps.driver_version);
    cache_path_ = dir + name;
  }
  std::vector<char> initial;
  if (!cache_path_.empty()) {
    initial = read_file(cache_path_);
    if (!header_matches(initial, caps)) initial.clear();
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = initial.size();
  ci.pInitialData = initial.empty() ? nullptr : initial.data();
  VkResult r = vk::vkCreatePipelineCache(dev, &ci, nullptr, &cache_);
  if (r != VK_SUCCESS && !initial.empty()) {  // a driver rejecting old data: start empty
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    r = vk::vkCreatePipelineCache(dev, &ci, nullptr, &cache_);
  }
  if (r != VK_SUCCESS) {
    vk::vkDestroyPipelineLayout(dev, layout_, nullptr);
    throw_vk_error(r, "vkCreatePipelineCache", __FILE__, __LINE__, device.index());
  }
  register_cache(this);
}

PipelineCache::~PipelineCache() {
  unregister_cache(this);
  try {
    save();
  } catch (...) {
  }
  VkDevice dev = device_.handle();
  for (auto& [key, pipeline] : pipelines_) vk::vkDestroyPipeline(dev, pipeline, nullptr);
  if (cache_) vk::vkDestroyPipelineCache(dev, cache_, nullptr);
  if (layout_) vk::vkDestroyPipelineLayout(dev, layout_, nullptr);
}

VkPipeline PipelineCache::get(const ShaderBinary& shader, uint32_t workgroup_size,
                              const std::vector<uint32_t>& spec) {
  TVK_CHECK(shader.spirv && shader.spirv_bytes >= 20 && shader.spirv_bytes % 4 == 0,
            "invalid SPIR-V for shader ", shader.name ? shader.name : "?");
  TVK_CHECK(workgroup_size >= 1 && workgroup_size <= device_.caps().max_workgroup_size[0] &&
                workgroup_size <= device_.caps().max_workgroup_invocations,
            "workgroup size ", workgroup_size, " of shader ", shader.name ? shader.name : "?",
            " exceeds the device limits");
  std::lock_guard<std::mutex> lock(mutex_);
  // Lookup: the key holds the SPIR-V pointer (shaders are static data), so no string compare.
  const void* code = shader.spirv;
  auto it = pipelines_.find(std::tie(code, workgroup_size, spec));
  if (it != pipelines_.end()) return it->second;

  VkDevice dev = device_.handle();
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = shader.spirv_bytes;
  mi.pCode = shader.spirv;
  VkShaderModule module = VK_NULL_HANDLE;
  TVK_VK_CHECK_DEV(vk::vkCreateShaderModule(dev, &mi, nullptr, &module), device_.index());

  // Constant 0 = local_size_x, 1..n = the caller's constants (uint32 each).
  std::vector<uint32_t> values;
  values.reserve(spec.size() + 1);
  values.push_back(workgroup_size);
  values.insert(values.end(), spec.begin(), spec.end());
  std::vector<VkSpecializationMapEntry> entries(values.size());
  for (uint32_t i = 0; i < values.size(); ++i)
    entries[i] = VkSpecializationMapEntry{i, i * 4u, 4u};
  VkSpecializationInfo si{};
  si.mapEntryCount = static_cast<uint32_t>(entries.size());
  si.pMapEntries = entries.data();
  si.dataSize = values.size() * 4;
  si.pData = values.data();

  VkComputePipelineCreateInfo pi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pi.stage.module = module;
  pi.stage.pName = "main";
  pi.stage.pSpecializationInfo = &si;
  pi.layout = layout_;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkResult r = vk::vkCreateComputePipelines(dev, cache_, 1, &pi, nullptr, &pipeline);
  vk::vkDestroyShaderModule(dev, module, nullptr);
  if (r != VK_SUCCESS) {
    std::string call = std::string("vkCreateComputePipelines(") + (shader.name ? shader.name : "?") + ")";
    throw_vk_error(r, call.c_str(), __FILE__, __LINE__, device_.index());
  }
  Runtime::get().counters().pipelines_created.fetch_add(1, std::memory_order_relaxed);
  pipelines_.emplace(std::make_tuple(code, workgroup_size, spec), pipeline);
  return pipeline;
}

VkPipeline PipelineCache::get(std::string_view shader_name, uint32_t workgroup_size,
                              const std::vector<uint32_t>& spec) {
  const ShaderBinary* shader = find_shader(shader_name);
  if (!shader) throw std::runtime_error("torch-vk: no shader named '" + std::string(shader_name) + "'");
  return get(*shader, workgroup_size, spec);
}

void PipelineCache::save() {
  if (cache_path_.empty() || !cache_) return;
  VkDevice dev = device_.handle();
  std::vector<char> data;
  {
    std::lock_guard<std::mutex> lock(mutex_);  // pipeline creation writes into the cache
    size_t size = 0;
    if (vk::vkGetPipelineCacheData(dev, cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
    data.resize(size);
    if (vk::vkGetPipelineCacheData(dev, cache_, &size, data.data()) != VK_SUCCESS) return;
    data.resize(size);
  }
  const size_t slash = cache_path_.rfind('/');
  if (slash != std::string::npos && slash > 0) make_directories(cache_path_.substr(0, slash));
  const std::string tmp = cache_path_ + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), cache_path_.c_str()) != 0)
    std::remove(tmp.c_str());
}

}  // namespace tvk
