// L2: run-time generated kernels: GLSL -> SPIR-V (glslang + SPIRV-Tools optimizer), the
// in-process registry, the on-disk SPIR-V cache and the launcher. Contracts in generated.h.
//
// The compiler is glslang's C++ API plus spvtools::Optimizer with the performance passes,
// the same pipeline as `glslc -O --target-env=vulkan1.2` (tools/build_shaders.py), both
// linked statically (Debian's libshaderc.so crashes when linked, see the lavapipe notes).
// CMake defines TVK_HAVE_RUNTIME_COMPILER when those libraries are found and link; otherwise
// compile_generated() throws a clear error and everything else still works.
#include "kernels/generated.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "kernels/kernels.h"
#include "runtime/device.h"
#include "runtime/stream.h"

#if TVK_HAVE_RUNTIME_COMPILER
#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>
#include <spirv-tools/libspirv.h>
#include <spirv-tools/optimizer.hpp>
#endif

namespace tvk::kernels {

namespace {

// Part of every disk-cache key: bump it when the meaning of a cached binary changes (compile
// options, the argument ABI, the file format).
constexpr char kCacheVersion[] = "torch-vk 0.1.0 / generated kernels v1";
// Options that shape the SPIR-V (also part of the key).
constexpr char kCompileOptions[] = "glsl460 compute vulkan1.2 spirv1.5 -O(performance passes)";

[[noreturn]] void invalid(const std::string& message) {
  throw std::invalid_argument("launch_generated: " + message);
}

// ---------------------------------------------------------------- hashing
// SHA-256 (FIPS 180-4), for cache keys.
class Sha256 {
 public:
  Sha256() { std::memcpy(h_, kInit, sizeof(h_)); }
  void update(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += size;
    while (size > 0) {
      const size_t take = std::min(size, sizeof(block_) - used_);
      std::memcpy(block_ + used_, p, take);
      used_ += take;
      p += take;
      size -= take;
      if (used_ == sizeof(block_)) {
        compress(block_);
        used_ = 0;
      }
    }
  }
  // Length-prefixed field: unambiguous concatenation of fields.
  void field(std::string_view s) {
    const uint64_t n = s.size();
    update(&n, sizeof(n));
    update(s.data(), s.size());
  }
  std::array<uint8_t, 32> digest() {
    const uint64_t bits = total_ * 8;
    const uint8_t pad = 0x80;
    update(&pad, 1);
    const uint8_t zero = 0;
    while (used_ != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(len, 8);
    std::array<uint8_t, 32> out;
    for (int i = 0; i < 8; ++i)
      for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(h_[i] >> (24 - 8 * b));
    return out;
  }

 private:
  static constexpr uint32_t kInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  static constexpr uint32_t kRound[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
      0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
      0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
      0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
      0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
      0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
      0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
      0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void compress(const uint8_t* block) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
             uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                          kRound[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
  }
  uint32_t h_[8];
  uint8_t block_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

// FNV-1a 64 over SPIR-V words: the integrity checksum of a cache file.
uint64_t fnv1a(const uint32_t* words, size_t count) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = reinterpret_cast<const uint8_t*>(words);
  for (size_t i = 0; i < count * 4; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// ---------------------------------------------------------------- compiler
#if TVK_HAVE_RUNTIME_COMPILER

// `#include "x"` of a generated source (and of the headers themselves) resolves to the
// headers embedded at build time.
class EmbeddedIncluder : public glslang::TShader::Includer {
 public:
  IncludeResult* includeLocal(const char* header, const char*, size_t) override {
    return lookup(header);
  }
  IncludeResult* includeSystem(const char* header, const char*, size_t) override {
    return lookup(header);
  }
  void releaseInclude(IncludeResult* result) override { delete result; }

 private:
  static IncludeResult* lookup(const char* header) {
    const std::string_view text = shader_source(header);
    if (text.empty()) return nullptr;  // glslang reports the missing header
    return new IncludeResult(header, text.data(), text.size(), nullptr);
  }
};

std::string compiler_version_string() {
  char glslang_version[64];
  std::snprintf(glslang_version, sizeof(glslang_version), "glslang %d.%d.%d%s",
                GLSLANG_VERSION_MAJOR, GLSLANG_VERSION_MINOR, GLSLANG_VERSION_PATCH,
                GLSLANG_VERSION_FLAVOR);
  return std::string(glslang_version) + ", " + spvSoftwareVersionDetailsString();
}

// The source lines around every error glslang reported for `name` ("ERROR: name:LINE: ..."),
// numbered, with the error lines marked.
std::string error_context(const std::string& log, const std::string& name, std::string_view source) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos <= source.size();) {
    size_t end = source.find('\n', pos);
    if (end == std::string_view::npos) end = source.size();
    lines.push_back(source.substr(pos, end - pos));
    pos = end + 1;
  }
  std::set<int> error_lines;
  const std::string prefix = name + ":";
  for (size_t pos = log.find(prefix); pos != std::string::npos && error_lines.size() < 8;
       pos = log.find(prefix, pos + 1)) {
    const int line = std::atoi(log.c_str() + pos + prefix.size());
    if (line >= 1 && line <= static_cast<int>(lines.size())) error_lines.insert(line);
  }
  if (error_lines.empty()) return "";
  std::set<int> shown;
  for (int line : error_lines)
    for (int l = std::max(1, line - 3); l <= std::min<int>(lines.size(), line + 3); ++l)
      shown.insert(l);
  std::string out = "source lines around the error" + std::string(error_lines.size() > 1 ? "s" : "") + ":\n";
  int previous = 0;
  for (int l : shown) {
    if (previous && l != previous + 1) out += "    ...\n";
    char number[24];
    std::snprintf(number, sizeof(number), "%s%5d | ", error_lines.count(l) ? ">" : " ", l);
    out += number;
    out += lines[l - 1];
    out += '\n';
    previous = l;
  }
  return out;
}

std::vector<uint32_t> compile_to_spirv(std::string_view source, const std::string& name) {
  static std::once_flag initialized;
  std::call_once(initialized, [] { glslang::InitializeProcess(); });  // never finalized

  glslang::TShader shader(EShLangCompute);
  const char* strings[] = {source.data()};
  const int lengths[] = {static_cast<int>(source.size())};
  const char* names[] = {name.c_str()};
  shader.setStringsWithLengthsAndNames(strings, lengths, names, 1);
  shader.setPreamble("#extension GL_GOOGLE_include_directive : enable\n");
  shader.setEntryPoint("main");
  shader.setSourceEntryPoint("main");
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
  const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  EmbeddedIncluder includer;
  auto fail = [&](const char* stage, const std::string& log) {
    std::string message = "compile_generated: " + std::string(stage) + " of generated kernel '" +
                          name + "' failed:\n" + log;
    if (!message.empty() && message.back() != '\n') message += '\n';
    message += error_context(log, name, source);
    throw std::invalid_argument(message);
  };
  if (!shader.parse(GetDefaultResources(), 460, ENoProfile, false, false, messages, includer))
    fail("GLSL compilation", shader.getInfoLog());
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages)) fail("linking", program.getInfoLog());

  std::vector<uint32_t> spirv;
  spv::SpvBuildLogger logger;
  glslang::SpvOptions options;
  options.disableOptimizer = true;  // the full -O pass list runs below
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &logger, &options);
  if (spirv.empty()) fail("SPIR-V generation", logger.getAllMessages());

  spvtools::Optimizer optimizer(SPV_ENV_VULKAN_1_2);
  std::string optimizer_log;
  optimizer.SetMessageConsumer([&](spv_message_level_t level, const char*, const spv_position_t&,
                                   const char* text) {
    if (level <= SPV_MSG_ERROR) optimizer_log += std::string(text) + "\n";
  });
  optimizer.RegisterPerformancePasses();
  std::vector<uint32_t> optimized;
  if (!optimizer.Run(spirv.data(), spirv.size(), &optimized))
    fail("SPIR-V optimization/validation", optimizer_log);
  return optimized;
}

#endif  // TVK_HAVE_RUNTIME_COMPILER

// ---------------------------------------------------------------- disk cache

std::string cache_directory() {
  if (const char* dir = std::getenv("TORCH_VK_CACHE_DIR"); dir && *dir) return std::string(dir) + "/spirv";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/torch_vk/spirv";
  return "";
}

bool make_directories(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos)
    if (pos == path.size() || path[pos] == '/') ::mkdir(path.substr(0, pos).c_str(), 0755);
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

constexpr uint32_t kSpirvMagic = 0x07230203u;
constexpr uint32_t kTrailerMagic = 0x314b5654u;  // "TVK1"
constexpr size_t kTrailerWords = 4;              // magic, word count, checksum (2 words)

// The cached SPIR-V at `path`, or empty when absent, unreadable or failing any check.
[[maybe_unused]] std::vector<uint32_t> load_cached(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff bytes = in.tellg();
  if (bytes < static_cast<std::streamoff>((5 + kTrailerWords) * 4) || bytes % 4 != 0 ||
      bytes > (std::streamoff(1) << 28))
    return {};
  std::vector<uint32_t> words(static_cast<size_t>(bytes) / 4);
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(words.data()), bytes)) return {};
  const size_t n = words.size() - kTrailerWords;
  const uint32_t* trailer = words.data() + n;
  const uint64_t checksum = uint64_t(trailer[2]) | uint64_t(trailer[3]) << 32;
  if (words[0] != kSpirvMagic || trailer[0] != kTrailerMagic || trailer[1] != n ||
      checksum != fnv1a(words.data(), n))
    return {};
  words.resize(n);
  return words;
}

// Atomic write (temporary file + rename); failures are ignored (the cache is optional).
[[maybe_unused]] void store_cached(const std::string& path, const std::vector<uint32_t>& spirv) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || !make_directories(path.substr(0, slash))) return;
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  std::vector<uint32_t> data = spirv;
  const uint64_t checksum = fnv1a(spirv.data(), spirv.size());
  data.push_back(kTrailerMagic);
  data.push_back(static_cast<uint32_t>(spirv.size()));
  data.push_back(static_cast<uint32_t>(checksum));
  data.push_back(static_cast<uint32_t>(checksum >> 32));
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  const bool ok = std::fwrite(data.data(), 4, data.size(), f) == data.size();
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0)
    std::remove(tmp.c_str());
}

// Every visible device's identity: a driver update changes the key.
const std::string& device_fingerprint() {
  static const std::string fingerprint = [] {
    std::string out;
    Runtime& runtime = Runtime::get();
    const int count = runtime.device_count();
    for (int i = 0; i < count; ++i) {
      const DeviceCapabilities& caps = runtime.capabilities(i);
      char line[64];
      std::snprintf(line, sizeof(line), "%04x:%04x:%u:", caps.vendor_id, caps.device_id,
                    caps.driver_version);
      out += line;
      for (uint8_t b : caps.pipeline_cache_uuid) {
        char hex[3];
        std::snprintf(hex, sizeof(hex), "%02x", b);
        out += hex;
      }
      out += ';';
    }
    return out.empty() ? std::string("no-device") : out;
  }();
  return fingerprint;
}

// Names of the headers `text` includes (`#include "name"` or <name>).
void collect_includes(std::string_view text, std::set<std::string>& seen) {
  for (size_t pos = text.find("#include"); pos != std::string_view::npos;
       pos = text.find("#include", pos + 8)) {
    size_t open = text.find_first_of("\"<\n", pos + 8);
    if (open == std::string_view::npos || text[open] == '\n') continue;
    const char close_char = text[open] == '"' ? '"' : '>';
    const size_t close = text.find_first_of(std::string{close_char, '\n'}, open + 1);
    if (close == std::string_view::npos || text[close] == '\n') continue;
    std::string header(text.substr(open + 1, close - open - 1));
    if (seen.insert(header).second) collect_includes(shader_source(header), seen);
  }
}

std::string cache_key(std::string_view source) {
  Sha256 sha;
  sha.field(kCacheVersion);
  sha.field(kCompileOptions);
  sha.field(generated_compiler_version());
  sha.field(device_fingerprint());
  sha.field(source);
  std::set<std::string> headers;  // sorted: a stable order
  collect_includes(source, headers);
  for (const std::string& header : headers) {
    sha.field(header);
    sha.field(shader_source(header));
  }
  const auto digest = sha.digest();
  std::string hex;
  for (int i = 0; i < 16; ++i) {  // 128 bits
    char byte[3];
    std::snprintf(byte, sizeof(byte), "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

std::string cache_file(std::string_view source) {
  const std::string dir = cache_directory();
  return dir.empty() ? std::string() : dir + "/" + cache_key(source) + ".spv";
}

// ---------------------------------------------------------------- registry

struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Registry {
  std::mutex mutex;  // guards by_source and kernels
  std::unordered_map<std::string, const GeneratedKernel*, TransparentHash, std::equal_to<>> by_source;
  std::vector<std::unique_ptr<GeneratedKernel>> kernels;  // index = id; never freed
  std::mutex compile_mutex;  // serializes misses (glslang is not reliably re-entrant)
  std::atomic<uint64_t> compiles{0}, memory_hits{0}, disk_hits{0};
};

Registry& registry() {
  static auto* r = new Registry();  // leaked: kernels outlive static destruction
  return *r;
}

const GeneratedKernel* find_memoized(Registry& r, std::string_view source) {
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_source.find(source);
  return it == r.by_source.end() ? nullptr : it->second;
}

}  // namespace

bool generated_compiler_available() { return TVK_HAVE_RUNTIME_COMPILER != 0; }

std::string generated_compiler_version() {
#if TVK_HAVE_RUNTIME_COMPILER
  static const std::string version = compiler_version_string();
  return version;
#else
  return "none";
#endif
}

const GeneratedKernel& compile_generated(std::string_view glsl_source, std::string_view name) {
  Registry& r = registry();
  if (const GeneratedKernel* k = find_memoized(r, glsl_source)) {
    r.memory_hits.fetch_add(1, std::memory_order_relaxed);
    return *k;
  }
#if !TVK_HAVE_RUNTIME_COMPILER
  (void)name;
  throw std::runtime_error(
      "torch-vk was built without a run-time shader compiler (glslang + SPIRV-Tools static "
      "libraries were not found), so generated kernels cannot be compiled; install the Debian "
      "packages glslang-dev and spirv-tools (scripts/setup.sh does) and rebuild torch-vk");
#else
  std::lock_guard<std::mutex> compile_lock(r.compile_mutex);
  if (const GeneratedKernel* k = find_memoized(r, glsl_source)) {  // another thread made it
    r.memory_hits.fetch_add(1, std::memory_order_relaxed);
    return *k;
  }
  auto kernel = std::make_unique<GeneratedKernel>();
  kernel->name = name.empty() ? std::string("generated") : std::string(name);
  const std::string path = cache_file(glsl_source);
  if (!path.empty()) kernel->spirv = load_cached(path);
  if (!kernel->spirv.empty()) {
    r.disk_hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    kernel->spirv = compile_to_spirv(glsl_source, kernel->name);
    r.compiles.fetch_add(1, std::memory_order_relaxed);
    if (!path.empty()) store_cached(path, kernel->spirv);
  }
  kernel->binary = ShaderBinary{kernel->name.c_str(), kernel->spirv.data(),
                                kernel->spirv.size() * sizeof(uint32_t)};
  std::lock_guard<std::mutex> lock(r.mutex);
  kernel->id = static_cast<int64_t>(r.kernels.size());
  const GeneratedKernel* result = kernel.get();
  r.kernels.push_back(std::move(kernel));
  r.by_source.emplace(std::string(glsl_source), result);
  return *result;
#endif
}

const GeneratedKernel& generated_kernel(int64_t id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (id < 0 || id >= static_cast<int64_t>(r.kernels.size()))
    throw std::invalid_argument("generated_kernel: no generated kernel with id " + std::to_string(id));
  return *r.kernels[static_cast<size_t>(id)];
}

bool generated_args_indirect(int n_addresses, int n_ints, int n_floats) {
  const uint64_t bytes = 8ull * uint64_t(std::max(n_addresses, 0)) +
                         8ull * uint64_t(std::max(n_ints, 0)) + 4ull * uint64_t(std::max(n_floats, 0));
  return bytes > kMaxPushConstantBytes;
}

void launch_generated(Stream& stream, const GeneratedKernel& kernel, uint32_t groups_x,
                      uint32_t local_size_x, const uint64_t* addresses, int n_addresses,
                      const int64_t* ints, int n_ints, const float* floats, int n_floats,
                      const TexelArgument* texels, int n_texels, const AccessSet* accesses) {
  if (n_addresses < 0 || n_ints < 0 || n_floats < 0 || n_texels < 0)
    invalid("negative argument count for kernel '" + kernel.name + "'");
  if ((n_addresses > 0 && !addresses) || (n_ints > 0 && !ints) || (n_floats > 0 && !floats) ||
      (n_texels > 0 && !texels))
    invalid("null argument array with a positive count for kernel '" + kernel.name + "'");
  if (n_texels > static_cast<int>(kMaxTexelBindings))
    invalid(std::to_string(n_texels) + " texel arguments exceed the limit of " +
            std::to_string(kMaxTexelBindings) + " for kernel '" + kernel.name + "'");
  VkBufferView views[kMaxTexelBindings] = {};
  std::vector<int64_t> ints_and_texels;
  if (n_texels > 0) {
    ints_and_texels.assign(ints, ints + n_ints);
    for (int i = 0; i < n_texels; ++i) {
      TexelView v;
      if (!stream.device().allocator().texel_view(texels[i].address, texels[i].format,
                                                  stream.id(), &v))
        invalid("texel argument " + std::to_string(i) + " of kernel '" + kernel.name +
                "' has no texel view (no texel buffers on the device, or an address outside "
                "the allocator's segments or not aligned to its texel)");
      views[i] = v.view;
      ints_and_texels.push_back(v.first);
    }
    ints = ints_and_texels.data();
    n_ints = static_cast<int>(ints_and_texels.size());
  }
  const uint32_t view_count = static_cast<uint32_t>(n_texels);
  const DeviceCapabilities& caps = stream.device().caps();
  if (groups_x < 1 || groups_x > caps.max_workgroup_count[0])
    invalid("groups_x = " + std::to_string(groups_x) + " is outside 1.." +
            std::to_string(caps.max_workgroup_count[0]) + " (the device's maxComputeWorkGroupCount[0]) for kernel '" +
            kernel.name + "'");
  if (local_size_x < 1 || local_size_x > caps.max_workgroup_size[0] ||
      local_size_x > caps.max_workgroup_invocations)
    invalid("local_size_x = " + std::to_string(local_size_x) + " is outside 1.." +
            std::to_string(std::min(caps.max_workgroup_size[0], caps.max_workgroup_invocations)) +
            " for kernel '" + kernel.name + "'");

  const size_t address_bytes = 8 * size_t(n_addresses), int_bytes = 8 * size_t(n_ints);
  const size_t bytes = address_bytes + int_bytes + 4 * size_t(n_floats);
  auto pack = [&](uint8_t* block) {
    if (n_addresses) std::memcpy(block, addresses, address_bytes);
    if (n_ints) std::memcpy(block + address_bytes, ints, int_bytes);
    if (n_floats) std::memcpy(block + address_bytes + int_bytes, floats, 4 * size_t(n_floats));
  };
  VkPipeline pipeline = stream.device().pipelines().get(kernel.binary, local_size_x);
  if (bytes <= kMaxPushConstantBytes) {
    alignas(16) uint8_t block[kMaxPushConstantBytes];
    pack(block);
    stream.dispatch(pipeline, groups_x, 1, 1, block, static_cast<uint32_t>(bytes), views,
                    view_count, accesses);
  } else {
    // Indirect: the block goes to the stream's parameter ring, its address is pushed.
    constexpr size_t kStackBytes = 1024;
    alignas(16) uint8_t stack_block[kStackBytes];
    std::vector<uint8_t> heap_block;
    uint8_t* block = stack_block;
    if (bytes > kStackBytes) {
      heap_block.resize(bytes);
      block = heap_block.data();
    }
    pack(block);
    const uint64_t block_address = stream.upload_params(block, bytes);
    stream.dispatch(pipeline, groups_x, 1, 1, &block_address, sizeof(block_address), views,
                    view_count, accesses);
  }
}

GeneratedKernelStats generated_kernel_stats() {
  Registry& r = registry();
  GeneratedKernelStats s;
  s.compiles = r.compiles.load();
  s.memory_hits = r.memory_hits.load();
  s.disk_hits = r.disk_hits.load();
  return s;
}

void clear_generated_memory_cache_for_testing() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.by_source.clear();
}

void reset_generated_kernel_stats() {
  Registry& r = registry();
  r.compiles = 0;
  r.memory_hits = 0;
  r.disk_hits = 0;
}

std::string generated_cache_path(std::string_view glsl_source) { return cache_file(glsl_source); }

}  // namespace tvk::kernels
