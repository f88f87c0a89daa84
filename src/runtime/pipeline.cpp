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
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <tuple>

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

// ---------------------------------------------------------------------------------------------
// SPIR-V float controls patch. Numbers from the SPIR-V specification (spirv.core.grammar.json).
namespace spirv {
constexpr uint32_t kMagic = 0x07230203u;
constexpr uint32_t kHeaderWords = 5;
constexpr uint32_t kOpExtension = 10;
constexpr uint32_t kOpEntryPoint = 15;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kOpTypeFloat = 22;
constexpr uint32_t kOpExecutionModeId = 331;
constexpr uint32_t kCapabilityDenormPreserve = 4464;
constexpr uint32_t kCapabilitySignedZeroInfNanPreserve = 4466;
constexpr uint32_t kModeDenormPreserve = 4459;
constexpr uint32_t kModeDenormFlushToZero = 4460;
constexpr uint32_t kModeSignedZeroInfNanPreserve = 4461;
constexpr char kFloatControlsExtension[] = "SPV_KHR_float_controls";
constexpr uint32_t kVersion1_4 = 0x00010400u;

uint32_t instruction(uint32_t opcode, uint32_t word_count) { return (word_count << 16) | opcode; }

// A literal string operand: UTF-8 bytes, NUL-terminated, zero-padded to whole words, packed
// little-endian (first byte in the low-order bits).
std::vector<uint32_t> literal_string(const char* text) {
  const size_t n = std::strlen(text) + 1;
  std::vector<uint32_t> out((n + 3) / 4, 0u);
  for (size_t i = 0; i < n - 1; ++i)
    out[i / 4] |= static_cast<uint32_t>(static_cast<unsigned char>(text[i])) << (8 * (i % 4));
  return out;
}

// The string operand starting at words[0] (at most `max_words` words), without its padding.
std::string read_literal_string(const uint32_t* words, size_t max_words) {
  std::string out;
  for (size_t w = 0; w < max_words; ++w) {
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((words[w] >> (8 * b)) & 0xffu);
      if (c == '\0') return out;
      out.push_back(c);
    }
  }
  return out;
}

int width_index(uint32_t bits) { return bits == 16 ? 0 : bits == 32 ? 1 : bits == 64 ? 2 : -1; }
constexpr uint32_t kWidths[3] = {16, 32, 64};
}  // namespace spirv

}  // namespace

FloatControlsRequest float_controls_request(const DeviceCapabilities& caps) {
  FloatControlsRequest r;
  r.signed_zero_inf_nan_preserve = caps.signed_zero_inf_nan_preserve;
  r.denorm_preserve = caps.denorm_preserve;
  r.denorm_behavior_independence = caps.denorm_behavior_independence;
  return r;
}

std::vector<uint32_t> patch_float_controls(const uint32_t* words, size_t word_count,
                                           const FloatControlsRequest& request) {
  using namespace spirv;
  if (!words || word_count < kHeaderWords || words[0] != kMagic)
    throw std::invalid_argument("patch_float_controls: not a SPIR-V module (bad magic or size)");
  const uint32_t version = words[1];

  // One pass over the module: what it declares, and where each section ends (the word index
  // after its last instruction; 0 = section absent).
  std::set<uint32_t> capabilities;
  bool has_extension = false;
  std::vector<uint32_t> entry_points;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> modes;  // (entry, mode, width)
  std::array<bool, 3> declared{};                             // OpTypeFloat widths
  std::array<bool, 3> flush_to_zero{};                        // widths with DenormFlushToZero
  size_t capability_end = 0, extension_end = 0, entry_point_end = 0, mode_end = 0;
  for (size_t pos = kHeaderWords; pos < word_count;) {
    const uint32_t opcode = words[pos] & 0xffffu;
    const uint32_t count = words[pos] >> 16;
    if (count == 0 || count > word_count - pos)
      throw std::invalid_argument("patch_float_controls: truncated instruction at word " +
                                  std::to_string(pos));
    const uint32_t* op = words + pos;
    const size_t end = pos + count;
    switch (opcode) {
      case kOpCapability:
        if (count >= 2) capabilities.insert(op[1]);
        capability_end = end;
        break;
      case kOpExtension:
        if (count >= 2 && read_literal_string(op + 1, count - 1) == kFloatControlsExtension)
          has_extension = true;
        extension_end = end;
        break;
      case kOpEntryPoint:
        if (count >= 3) entry_points.push_back(op[2]);
        entry_point_end = end;
        break;
      case kOpExecutionMode:
      case kOpExecutionModeId:
        if (opcode == kOpExecutionMode && count >= 4) {
          modes.emplace(op[1], op[2], op[3]);
          const int w = width_index(op[3]);
          if (op[2] == kModeDenormFlushToZero && w >= 0) flush_to_zero[w] = true;
        }
        mode_end = end;
        break;
      case kOpTypeFloat:
        if (count >= 3 && width_index(op[2]) >= 0) declared[width_index(op[2])] = true;
        break;
      default:
        break;
    }
    pos = end;
  }

  // Modes to request, per width.
  std::array<bool, 3> want_szinp{}, want_denorm{};
  for (int w = 0; w < 3; ++w) {
    want_szinp[w] = declared[w] && request.signed_zero_inf_nan_preserve[w];
    want_denorm[w] = declared[w] && request.denorm_preserve[w] && !flush_to_zero[w];
  }
  // Denorm independence: the widths that must share one denorm mode get it together or not at all.
  auto keep_together = [&](std::initializer_list<int> group) {
    bool all = true;
    for (int w : group) all = all && (!declared[w] || want_denorm[w]);
    if (!all)
      for (int w : group) want_denorm[w] = false;
  };
  if (request.denorm_behavior_independence == 2) keep_together({0, 1, 2});        // NONE
  else if (request.denorm_behavior_independence == 0) keep_together({0, 2});      // 32_BIT_ONLY

  std::vector<uint32_t> new_modes;
  bool uses_szinp = false, uses_denorm = false;
  for (uint32_t entry : entry_points) {
    for (int w = 0; w < 3; ++w) {
      const std::pair<bool, uint32_t> wanted[2] = {{want_szinp[w], kModeSignedZeroInfNanPreserve},
                                                   {want_denorm[w], kModeDenormPreserve}};
      for (const auto& [want, mode] : wanted) {
        if (!want) continue;
        (mode == kModeDenormPreserve ? uses_denorm : uses_szinp) = true;
        if (modes.count({entry, mode, kWidths[w]})) continue;
        new_modes.insert(new_modes.end(), {instruction(kOpExecutionMode, 4), entry, mode, kWidths[w]});
      }
    }
  }
  std::vector<uint32_t> new_capabilities;
  if (uses_szinp && !capabilities.count(kCapabilitySignedZeroInfNanPreserve))
    new_capabilities.insert(new_capabilities.end(),
                            {instruction(kOpCapability, 2), kCapabilitySignedZeroInfNanPreserve});
  if (uses_denorm && !capabilities.count(kCapabilityDenormPreserve))
    new_capabilities.insert(new_capabilities.end(),
                            {instruction(kOpCapability, 2), kCapabilityDenormPreserve});
  std::vector<uint32_t> new_extension;
  if ((uses_szinp || uses_denorm) && version < kVersion1_4 && !has_extension) {
    std::vector<uint32_t> name = literal_string(kFloatControlsExtension);
    new_extension.push_back(instruction(kOpExtension, static_cast<uint32_t>(name.size() + 1)));
    new_extension.insert(new_extension.end(), name.begin(), name.end());
  }

  std::vector<uint32_t> out(words, words + word_count);
  if (new_modes.empty() && new_capabilities.empty() && new_extension.empty()) return out;
  // Insertion points in the original module, in layout order.
  if (capability_end == 0) capability_end = kHeaderWords;
  if (extension_end == 0) extension_end = capability_end;
  if (mode_end == 0) mode_end = entry_point_end;
  if (mode_end == 0) throw std::invalid_argument("patch_float_controls: module has no OpEntryPoint");
  out.clear();
  out.reserve(word_count + new_modes.size() + new_capabilities.size() + new_extension.size());
  out.insert(out.end(), words, words + capability_end);
  out.insert(out.end(), new_capabilities.begin(), new_capabilities.end());
  out.insert(out.end(), words + capability_end, words + extension_end);
  out.insert(out.end(), new_extension.begin(), new_extension.end());
  out.insert(out.end(), words + extension_end, words + mode_end);
  out.insert(out.end(), new_modes.begin(), new_modes.end());
  out.insert(out.end(), words + mode_end, words + word_count);
  return out;
}

PipelineCache::PipelineCache(Device& device)
    : device_(device), float_controls_(float_controls_request(device.caps())) {
  VkDevice dev = device.handle();
  const DeviceCapabilities& caps = device.caps();

  if (caps.texel_buffers) {
    VkDescriptorSetLayoutBinding bindings[kMaxTexelBindings];
    for (uint32_t i = 0; i < kMaxTexelBindings; ++i)
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
                     nullptr};
    VkDescriptorSetLayoutCreateInfo si{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    si.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    si.bindingCount = kMaxTexelBindings;
    si.pBindings = bindings;
    TVK_VK_CHECK_DEV(vk::vkCreateDescriptorSetLayout(dev, &si, nullptr, &texel_set_layout_),
                     device.index());
  }
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxPushConstantBytes};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.setLayoutCount = texel_set_layout_ ? 1 : 0;
  li.pSetLayouts = texel_set_layout_ ? &texel_set_layout_ : nullptr;
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  VkResult layout_result = vk::vkCreatePipelineLayout(dev, &li, nullptr, &layout_);
  if (layout_result != VK_SUCCESS && texel_set_layout_)
    vk::vkDestroyDescriptorSetLayout(dev, texel_set_layout_, nullptr);
  TVK_VK_CHECK_DEV(layout_result, device.index());

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
    if (texel_set_layout_) vk::vkDestroyDescriptorSetLayout(dev, texel_set_layout_, nullptr);
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
  if (texel_set_layout_) vk::vkDestroyDescriptorSetLayout(dev, texel_set_layout_, nullptr);
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
  // The float-control modes are added here, on the one path every module takes (embedded
  // and run-time generated shaders alike); the pipeline key stays the original binary.
  std::vector<uint32_t> patched;
  if (float_controls_.any())
    patched = patch_float_controls(shader.spirv, shader.spirv_bytes / 4, float_controls_);
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = patched.empty() ? shader.spirv_bytes : patched.size() * sizeof(uint32_t);
  mi.pCode = patched.empty() ? shader.spirv : patched.data();
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
  names_.emplace(pipeline, shader.name ? shader.name : "kernel");
  return pipeline;
}

std::string PipelineCache::name_of(VkPipeline pipeline) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = names_.find(pipeline);
  return it == names_.end() ? std::string("kernel") : it->second;
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
