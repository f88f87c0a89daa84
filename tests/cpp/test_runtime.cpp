// L1 runtime tests (GoogleTest). References come from the Vulkan spec, from arithmetic and
// from the documented allocator policy (allocator.h), never from earlier outputs of the code.
//
// Every test runs on the first visible device and is skipped when there is none. Run the whole
// binary with TORCH_VK_VALIDATION=1 as well: the environment's TearDown fails the run on any
// validation error.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace {

using namespace tvk;
constexpr uint64_t kMiB = 1ull << 20;

// Compiled with: glslc --target-env=vulkan1.2 -O -mfmt=c double_index.comp
//   #version 450
//   #extension GL_EXT_buffer_reference : require
//   #extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
//   layout(local_size_x_id = 0) in;
//   layout(buffer_reference, std430, buffer_reference_align = 4) buffer Data { uint v[]; };
//   layout(push_constant) uniform Params { uint64_t address; uint n; } p;
//   void main() {
//     uint i = gl_GlobalInvocationID.x;
//     if (i < p.n) Data(p.address).v[i] = i * 2u;
//   }
const uint32_t kDoubleIndexSpv[] = {
    0x07230203,0x00010500,0x000d000b,0x0000002f,0x00000000,0x00020011,0x00000001,0x00020011,
    0x0000000b,0x00020011,0x000014e3,0x0006000b,0x00000001,0x4c534c47,0x6474732e,0x3035342e,
    0x00000000,0x0003000e,0x000014e4,0x00000001,0x0007000f,0x00000005,0x00000004,0x6e69616d,
    0x00000000,0x0000000b,0x00000014,0x00060010,0x00000004,0x00000011,0x00000001,0x00000001,
    0x00000001,0x00040047,0x0000000b,0x0000000b,0x0000001c,0x00050048,0x00000012,0x00000000,
    0x00000023,0x00000000,0x00050048,0x00000012,0x00000001,0x00000023,0x00000008,0x00030047,
    0x00000012,0x00000002,0x00040047,0x00000023,0x00000006,0x00000004,0x00050048,0x00000024,
    0x00000000,0x00000023,0x00000000,0x00030047,0x00000024,0x00000002,0x00040047,0x0000002c,
    0x00000001,0x00000000,0x00040047,0x0000002e,0x0000000b,0x00000019,0x00020013,0x00000002,
    0x00030021,0x00000003,0x00000002,0x00040015,0x00000006,0x00000020,0x00000000,0x00040017,
    0x00000009,0x00000006,0x00000003,0x00040020,0x0000000a,0x00000001,0x00000009,0x0004003b,
    0x0000000a,0x0000000b,0x00000001,0x0004002b,0x00000006,0x0000000c,0x00000000,0x00040020,
    0x0000000d,0x00000001,0x00000006,0x00040015,0x00000011,0x00000040,0x00000000,0x0004001e,
    0x00000012,0x00000011,0x00000006,0x00040020,0x00000013,0x00000009,0x00000012,0x0004003b,
    0x00000013,0x00000014,0x00000009,0x00040015,0x00000015,0x00000020,0x00000001,0x0004002b,
    0x00000015,0x00000016,0x00000001,0x00040020,0x00000017,0x00000009,0x00000006,0x00020014,
    0x0000001a,0x0004002b,0x00000015,0x0000001e,0x00000000,0x00040020,0x0000001f,0x00000009,
    0x00000011,0x00030027,0x00000022,0x000014e5,0x0003001d,0x00000023,0x00000006,0x0003001e,
    0x00000024,0x00000023,0x00040020,0x00000022,0x000014e5,0x00000024,0x0004002b,0x00000006,
    0x00000028,0x00000002,0x00040020,0x0000002a,0x000014e5,0x00000006,0x00040032,0x00000006,
    0x0000002c,0x00000001,0x0004002b,0x00000006,0x0000002d,0x00000001,0x00060033,0x00000009,
    0x0000002e,0x0000002c,0x0000002d,0x0000002d,0x00050036,0x00000002,0x00000004,0x00000000,
    0x00000003,0x000200f8,0x00000005,0x00050041,0x0000000d,0x0000000e,0x0000000b,0x0000000c,
    0x0004003d,0x00000006,0x0000000f,0x0000000e,0x00050041,0x00000017,0x00000018,0x00000014,
    0x00000016,0x0004003d,0x00000006,0x00000019,0x00000018,0x000500b0,0x0000001a,0x0000001b,
    0x0000000f,0x00000019,0x000300f7,0x0000001d,0x00000000,0x000400fa,0x0000001b,0x0000001c,
    0x0000001d,0x000200f8,0x0000001c,0x00050041,0x0000001f,0x00000020,0x00000014,0x0000001e,
    0x0004003d,0x00000011,0x00000021,0x00000020,0x00040078,0x00000022,0x00000025,0x00000021,
    0x00050084,0x00000006,0x00000029,0x0000000f,0x00000028,0x00060041,0x0000002a,0x0000002b,
    0x00000025,0x0000001e,0x0000000f,0x0005003e,0x0000002b,0x00000029,0x00000002,0x00000004,
    0x000200f9,0x0000001d,0x000200f8,0x0000001d,0x000100fd,0x00010038,
};

// Compiled with: glslc --target-env=vulkan1.2 -O -mfmt=c add_const.comp
//   #version 450
//   #extension GL_EXT_buffer_reference : require
//   #extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
//   layout(local_size_x_id = 0) in;
//   layout(constant_id = 1) const uint kAdd = 1u;
//   layout(buffer_reference, std430, buffer_reference_align = 4) buffer Data { uint v[]; };
//   layout(push_constant) uniform Params { uint64_t address; uint n; } p;
//   void main() {
//     uint i = gl_GlobalInvocationID.x;
//     if (i < p.n) Data(p.address).v[i] += kAdd;
//   }
const uint32_t kAddConstSpv[] = {
    0x07230203,0x00010500,0x000d000b,0x00000030,0x00000000,0x00020011,0x00000001,0x00020011,
    0x0000000b,0x00020011,0x000014e3,0x0006000b,0x00000001,0x4c534c47,0x6474732e,0x3035342e,
    0x00000000,0x0003000e,0x000014e4,0x00000001,0x0007000f,0x00000005,0x00000004,0x6e69616d,
    0x00000000,0x0000000b,0x00000014,0x00060010,0x00000004,0x00000011,0x00000001,0x00000001,
    0x00000001,0x00040047,0x0000000b,0x0000000b,0x0000001c,0x00050048,0x00000012,0x00000000,
    0x00000023,0x00000000,0x00050048,0x00000012,0x00000001,0x00000023,0x00000008,0x00030047,
    0x00000012,0x00000002,0x00040047,0x00000023,0x00000006,0x00000004,0x00050048,0x00000024,
    0x00000000,0x00000023,0x00000000,0x00030047,0x00000024,0x00000002,0x00040047,0x00000027,
    0x00000001,0x00000001,0x00040047,0x0000002d,0x00000001,0x00000000,0x00040047,0x0000002f,
    0x0000000b,0x00000019,0x00020013,0x00000002,0x00030021,0x00000003,0x00000002,0x00040015,
    0x00000006,0x00000020,0x00000000,0x00040017,0x00000009,0x00000006,0x00000003,0x00040020,
    0x0000000a,0x00000001,0x00000009,0x0004003b,0x0000000a,0x0000000b,0x00000001,0x0004002b,
    0x00000006,0x0000000c,0x00000000,0x00040020,0x0000000d,0x00000001,0x00000006,0x00040015,
    0x00000011,0x00000040,0x00000000,0x0004001e,0x00000012,0x00000011,0x00000006,0x00040020,
    0x00000013,0x00000009,0x00000012,0x0004003b,0x00000013,0x00000014,0x00000009,0x00040015,
    0x00000015,0x00000020,0x00000001,0x0004002b,0x00000015,0x00000016,0x00000001,0x00040020,
    0x00000017,0x00000009,0x00000006,0x00020014,0x0000001a,0x0004002b,0x00000015,0x0000001e,
    0x00000000,0x00040020,0x0000001f,0x00000009,0x00000011,0x00030027,0x00000022,0x000014e5,
    0x0003001d,0x00000023,0x00000006,0x0003001e,0x00000024,0x00000023,0x00040020,0x00000022,
    0x000014e5,0x00000024,0x00040032,0x00000006,0x00000027,0x00000001,0x00040020,0x00000028,
    0x000014e5,0x00000006,0x00040032,0x00000006,0x0000002d,0x00000001,0x0004002b,0x00000006,
    0x0000002e,0x00000001,0x00060033,0x00000009,0x0000002f,0x0000002d,0x0000002e,0x0000002e,
    0x00050036,0x00000002,0x00000004,0x00000000,0x00000003,0x000200f8,0x00000005,0x00050041,
    0x0000000d,0x0000000e,0x0000000b,0x0000000c,0x0004003d,0x00000006,0x0000000f,0x0000000e,
    0x00050041,0x00000017,0x00000018,0x00000014,0x00000016,0x0004003d,0x00000006,0x00000019,
    0x00000018,0x000500b0,0x0000001a,0x0000001b,0x0000000f,0x00000019,0x000300f7,0x0000001d,
    0x00000000,0x000400fa,0x0000001b,0x0000001c,0x0000001d,0x000200f8,0x0000001c,0x00050041,
    0x0000001f,0x00000020,0x00000014,0x0000001e,0x0004003d,0x00000011,0x00000021,0x00000020,
    0x00040078,0x00000022,0x00000025,0x00000021,0x00060041,0x00000028,0x00000029,0x00000025,
    0x0000001e,0x0000000f,0x0006003d,0x00000006,0x0000002a,0x00000029,0x00000002,0x00000004,
    0x00050080,0x00000006,0x0000002b,0x0000002a,0x00000027,0x0005003e,0x00000029,0x0000002b,
    0x00000002,0x00000004,0x000200f9,0x0000001d,0x000200f8,0x0000001d,0x000100fd,0x00010038,
};

// Compiled with: glslc --target-env=vulkan1.2 -O -mfmt=c copy_words.comp
//   #version 450
//   #extension GL_EXT_buffer_reference : require
//   #extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
//   layout(local_size_x_id = 0) in;
//   layout(buffer_reference, std430, buffer_reference_align = 4) buffer Data { uint v[]; };
//   layout(push_constant) uniform Params { uint64_t src; uint64_t dst; uint n; } p;
//   void main() {
//     uint i = gl_GlobalInvocationID.x;
//     if (i < p.n) Data(p.dst).v[i] = Data(p.src).v[i];
//   }
const uint32_t kCopyWordsSpv[] = {
    0x07230203,0x00010500,0x000d000b,0x00000033,0x00000000,0x00020011,0x00000001,0x00020011,
    0x0000000b,0x00020011,0x000014e3,0x0006000b,0x00000001,0x4c534c47,0x6474732e,0x3035342e,
    0x00000000,0x0003000e,0x000014e4,0x00000001,0x0007000f,0x00000005,0x00000004,0x6e69616d,
    0x00000000,0x0000000b,0x00000014,0x00060010,0x00000004,0x00000011,0x00000001,0x00000001,
    0x00000001,0x00040047,0x0000000b,0x0000000b,0x0000001c,0x00050048,0x00000012,0x00000000,
    0x00000023,0x00000000,0x00050048,0x00000012,0x00000001,0x00000023,0x00000008,0x00050048,
    0x00000012,0x00000002,0x00000023,0x00000010,0x00030047,0x00000012,0x00000002,0x00040047,
    0x00000023,0x00000006,0x00000004,0x00050048,0x00000024,0x00000000,0x00000023,0x00000000,
    0x00030047,0x00000024,0x00000002,0x00040047,0x00000030,0x00000001,0x00000000,0x00040047,
    0x00000032,0x0000000b,0x00000019,0x00020013,0x00000002,0x00030021,0x00000003,0x00000002,
    0x00040015,0x00000006,0x00000020,0x00000000,0x00040017,0x00000009,0x00000006,0x00000003,
    0x00040020,0x0000000a,0x00000001,0x00000009,0x0004003b,0x0000000a,0x0000000b,0x00000001,
    0x0004002b,0x00000006,0x0000000c,0x00000000,0x00040020,0x0000000d,0x00000001,0x00000006,
    0x00040015,0x00000011,0x00000040,0x00000000,0x0005001e,0x00000012,0x00000011,0x00000011,
    0x00000006,0x00040020,0x00000013,0x00000009,0x00000012,0x0004003b,0x00000013,0x00000014,
    0x00000009,0x00040015,0x00000015,0x00000020,0x00000001,0x0004002b,0x00000015,0x00000016,
    0x00000002,0x00040020,0x00000017,0x00000009,0x00000006,0x00020014,0x0000001a,0x0004002b,
    0x00000015,0x0000001e,0x00000001,0x00040020,0x0000001f,0x00000009,0x00000011,0x00030027,
    0x00000022,0x000014e5,0x0003001d,0x00000023,0x00000006,0x0003001e,0x00000024,0x00000023,
    0x00040020,0x00000022,0x000014e5,0x00000024,0x0004002b,0x00000015,0x00000026,0x00000000,
    0x00040020,0x0000002c,0x000014e5,0x00000006,0x00040032,0x00000006,0x00000030,0x00000001,
    0x0004002b,0x00000006,0x00000031,0x00000001,0x00060033,0x00000009,0x00000032,0x00000030,
    0x00000031,0x00000031,0x00050036,0x00000002,0x00000004,0x00000000,0x00000003,0x000200f8,
    0x00000005,0x00050041,0x0000000d,0x0000000e,0x0000000b,0x0000000c,0x0004003d,0x00000006,
    0x0000000f,0x0000000e,0x00050041,0x00000017,0x00000018,0x00000014,0x00000016,0x0004003d,
    0x00000006,0x00000019,0x00000018,0x000500b0,0x0000001a,0x0000001b,0x0000000f,0x00000019,
    0x000300f7,0x0000001d,0x00000000,0x000400fa,0x0000001b,0x0000001c,0x0000001d,0x000200f8,
    0x0000001c,0x00050041,0x0000001f,0x00000020,0x00000014,0x0000001e,0x0004003d,0x00000011,
    0x00000021,0x00000020,0x00040078,0x00000022,0x00000025,0x00000021,0x00050041,0x0000001f,
    0x00000028,0x00000014,0x00000026,0x0004003d,0x00000011,0x00000029,0x00000028,0x00040078,
    0x00000022,0x0000002a,0x00000029,0x00060041,0x0000002c,0x0000002d,0x0000002a,0x00000026,
    0x0000000f,0x0006003d,0x00000006,0x0000002e,0x0000002d,0x00000002,0x00000004,0x00060041,
    0x0000002c,0x0000002f,0x00000025,0x00000026,0x0000000f,0x0005003e,0x0000002f,0x0000002e,
    0x00000002,0x00000004,0x000200f9,0x0000001d,0x000200f8,0x0000001d,0x000100fd,0x00010038,
};

const ShaderBinary kDoubleIndex{"test_double_index", kDoubleIndexSpv, sizeof(kDoubleIndexSpv)};
const ShaderBinary kAddConst{"test_add_const", kAddConstSpv, sizeof(kAddConstSpv)};
const ShaderBinary kCopyWords{"test_copy_words", kCopyWordsSpv, sizeof(kCopyWordsSpv)};

struct AddressN {  // push constants of double_index / add_const (std430 push block: 16 bytes)
  uint64_t address;
  uint32_t n;
  uint32_t pad;
};
struct CopyPush {  // push constants of copy_words
  uint64_t src;
  uint64_t dst;
  uint32_t n;
  uint32_t pad;
};

std::string g_cache_dir;

// Points the pipeline cache at a private directory (unless the user chose one) before any
// device exists, and fails the run on validation errors at the end.
class RuntimeEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!std::getenv("TORCH_VK_CACHE_DIR")) {
      // One directory per user, shared by test processes (cache files are replaced atomically).
      const std::string dir = "/tmp/tvk_test_cache-" + std::to_string(getuid());
      setenv("TORCH_VK_CACHE_DIR", dir.c_str(), 1);
    }
    g_cache_dir = std::getenv("TORCH_VK_CACHE_DIR") ? std::getenv("TORCH_VK_CACHE_DIR") : "";
  }
  void TearDown() override {
    Runtime& rt = Runtime::get();
    if (!rt.available()) return;
    rt.synchronize_all();
    // Errors and warnings both end up in the log; only errors fail the run.
    const auto messages = rt.validation_messages();
    for (size_t i = 0; i < messages.size() && i < 50; ++i)
      std::fprintf(stderr, "validation message: %s\n", messages[i].c_str());
    EXPECT_EQ(rt.validation_error_count(), 0u) << "validation layer reported errors";
  }
};
const auto* g_env = ::testing::AddGlobalTestEnvironment(new RuntimeEnvironment);

#define REQUIRE_DEVICE()                                                              \
  do {                                                                                \
    if (!Runtime::get().available())                                                  \
      GTEST_SKIP() << "no Vulkan device: " << Runtime::get().unavailable_reason();    \
  } while (0)

Device& dev() { return Runtime::get().device(0); }

uint32_t fresh_stream() { return dev().create_stream(); }

uint32_t batch_limit() {
  const char* v = std::getenv("TORCH_VK_SUBMIT_BATCH");
  return v && std::atoi(v) >= 1 ? static_cast<uint32_t>(std::atoi(v)) : 64u;
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(Error, ResultNamesAndExceptions) {
  EXPECT_STREQ(vk_result_name(VK_ERROR_OUT_OF_DEVICE_MEMORY), "VK_ERROR_OUT_OF_DEVICE_MEMORY");
  EXPECT_STREQ(vk_result_name(VK_ERROR_DEVICE_LOST), "VK_ERROR_DEVICE_LOST");
  try {
    throw_vk_error(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory(x)", "src/runtime/a.cpp", 12, 3);
    FAIL();
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()),
              "torch-vk: vkAllocateMemory(x) failed with VK_ERROR_OUT_OF_DEVICE_MEMORY at "
              "src/runtime/a.cpp:12 (device 3)");
  }
  EXPECT_THROW(throw_vk_error(VK_ERROR_OUT_OF_HOST_MEMORY, "f", "f.cpp", 1, -1), OutOfMemoryError);
  try {
    TVK_VK_CHECK(VK_ERROR_DEVICE_LOST);
    FAIL();
  } catch (const VulkanError& e) {
    EXPECT_EQ(e.result(), VK_ERROR_DEVICE_LOST);
    EXPECT_NE(std::string(e.what()).find("VK_ERROR_DEVICE_LOST"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("(device"), std::string::npos);
  }
  TVK_VK_CHECK(VK_INCOMPLETE);  // positive codes are not errors
  try {
    TVK_CHECK(1 + 1 == 3, "arithmetic is ", "broken");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("arithmetic is broken"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// Discovery and capabilities

TEST(Discovery, DeviceAndCapabilities) {
  Runtime& rt = Runtime::get();
  ASSERT_GE(rt.device_count(), 1) << rt.unavailable_reason();
  EXPECT_EQ(rt.unavailable_reason(), "");
  EXPECT_NE(rt.instance(), VK_NULL_HANDLE);
  EXPECT_GE(rt.instance_api_version(), VK_API_VERSION_1_2);
  EXPECT_FALSE(rt.loader_version_string().empty());
  for (int i = 0; i < rt.device_count(); ++i) {
    const DeviceCapabilities& c = rt.capabilities(i);
    EXPECT_EQ(c.missing_requirements(), "");
    EXPECT_FALSE(c.name.empty());
    EXPECT_FALSE(c.vendor.empty());
    EXPECT_FALSE(c.driver_name.empty());
    EXPECT_GE(c.api_version, VK_API_VERSION_1_2);
    EXPECT_TRUE(c.buffer_device_address && c.timeline_semaphore && c.int64 && c.storage_8bit &&
                c.storage_16bit && c.compute_queue);
    // Minimum limits guaranteed by the Vulkan spec (Table "Required Limits").
    EXPECT_GE(c.max_storage_buffer_range, 1ull << 27);
    EXPECT_GE(c.max_memory_allocation_size, 1ull << 30);
    EXPECT_GE(c.max_buffer_size, c.max_memory_allocation_size > 0 ? 1ull << 30 : 0);
    for (int d = 0; d < 3; ++d) EXPECT_GE(c.max_workgroup_count[d], 65535u);
    EXPECT_GE(c.max_workgroup_size[0], 128u);
    EXPECT_GE(c.max_workgroup_invocations, 128u);
    EXPECT_GE(c.max_shared_memory_size, 16384u);
    EXPECT_GE(c.max_push_constants_size, kMaxPushConstantBytes);
    EXPECT_GT(c.device_local_heap_size, 0u);
    EXPECT_GE(c.subgroup_size, 1u);
    EXPECT_EQ(c.subgroup_size & (c.subgroup_size - 1), 0u) << "subgroup size is a power of two";
    EXPECT_GE(c.timestamp_period_ns, 0.0);
    if (std::getenv("TORCH_VK_DISABLE_SUBGROUPS")) EXPECT_FALSE(c.subgroup_arithmetic);
    if (std::getenv("TORCH_VK_DISABLE_COOPMAT")) EXPECT_FALSE(c.cooperative_matrix);
  }
  EXPECT_THROW(rt.capabilities(rt.device_count()), std::out_of_range);
  EXPECT_THROW(rt.device(-1), std::out_of_range);
  Device& d = dev();
  EXPECT_TRUE(rt.device_initialized(0));
  EXPECT_NE(d.handle(), VK_NULL_HANDLE);
  EXPECT_NE(d.queue(), VK_NULL_HANDLE);
  EXPECT_EQ(&d, &rt.device(0));
  EXPECT_EQ(d.stream(0).id(), 0u);
  const auto& mp = d.memory_properties();
  const VkMemoryPropertyFlags dev_flags = mp.memoryTypes[d.device_memory_type()].propertyFlags;
  const VkMemoryPropertyFlags host_flags = mp.memoryTypes[d.host_memory_type()].propertyFlags;
  EXPECT_TRUE(dev_flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  EXPECT_EQ(host_flags & (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT),
            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (std::getenv("TORCH_VK_DISABLE_UNIFIED_MEMORY"))
    EXPECT_FALSE(d.caps().unified_memory);
  else
    EXPECT_EQ(d.caps().unified_memory, (dev_flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0);
  auto [free_bytes, total] = d.memory_info();
  EXPECT_EQ(total, d.caps().device_local_heap_size);
  EXPECT_LE(free_bytes, total);
}

TEST(Discovery, ValidationLayerWhenRequested) {
  REQUIRE_DEVICE();
  const char* v = std::getenv("TORCH_VK_VALIDATION");
  if (!v || std::string(v) != "1") GTEST_SKIP() << "TORCH_VK_VALIDATION is not 1";
  bool layer_missing = false;
  for (const auto& m : Runtime::get().validation_messages())
    layer_missing |= m.find("not installed") != std::string::npos;
  EXPECT_TRUE(Runtime::get().validation_enabled() || layer_missing);
}

// TORCH_VK_VISIBLE_DEVICES is read once per process, so each case runs in a fresh child
// process (a "threadsafe" death test re-executes this binary).
int child_device_count_exit() {
  int n = Runtime::get().device_count();
  std::fprintf(stderr, "count=%d reason=%s\n", n, Runtime::get().unavailable_reason().c_str());
  std::fflush(stderr);
  std::_Exit(std::min(n, 100));
}

TEST(Discovery, VisibleDevicesEnvironment) {
  const bool in_child = std::getenv("TVK_TEST_VISIBLE_CHILD") != nullptr;
  if (!in_child && std::getenv("TORCH_VK_VISIBLE_DEVICES"))
    GTEST_SKIP() << "TORCH_VK_VISIBLE_DEVICES is set for the whole run";
  // Assumes every physical device is usable (true on the lavapipe CI machine).
  const int all = in_child ? 0 : Runtime::get().device_count();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("TVK_TEST_VISIBLE_CHILD", "1", 1);
  setenv("TORCH_VK_VISIBLE_DEVICES", "", 1);
  EXPECT_EXIT(child_device_count_exit(), ::testing::ExitedWithCode(0),
              "count=0 reason=.*TORCH_VK_VISIBLE_DEVICES");
  setenv("TORCH_VK_VISIBLE_DEVICES", "99", 1);  // out of range: ignored
  EXPECT_EXIT(child_device_count_exit(), ::testing::ExitedWithCode(0), "count=0");
  setenv("TORCH_VK_VISIBLE_DEVICES", "0", 1);
  EXPECT_EXIT(child_device_count_exit(), ::testing::ExitedWithCode(std::min(all, 1)), "count=");
  setenv("TORCH_VK_VISIBLE_DEVICES", "0,42,x", 1);  // out-of-range and junk ignored
  EXPECT_EXIT(child_device_count_exit(), ::testing::ExitedWithCode(std::min(all, 1)), "count=");
  setenv("TORCH_VK_VISIBLE_DEVICES", "0,0,0", 1);  // a repeat is one more logical device
  EXPECT_EXIT(child_device_count_exit(), ::testing::ExitedWithCode(all >= 1 ? 3 : 0), "count=");
  unsetenv("TORCH_VK_VISIBLE_DEVICES");
  unsetenv("TVK_TEST_VISIBLE_CHILD");
}

// ---------------------------------------------------------------------------------------------
// Allocator

TEST(Allocator, RoundSize) {
  EXPECT_EQ(Allocator::round_size(1), 512u);
  EXPECT_EQ(Allocator::round_size(512), 512u);
  EXPECT_EQ(Allocator::round_size(513), 1024u);
  EXPECT_EQ(Allocator::round_size(1000), 1024u);
  EXPECT_EQ(Allocator::round_size(3 * kMiB + 1), 3 * kMiB + 512);
}

TEST(Allocator, ExactStats) {
  REQUIRE_DEVICE();
  Allocator& a = dev().allocator();
  const uint32_t s = fresh_stream();  // no cached blocks belong to a new stream
  a.empty_cache();
  const MemoryStats before = a.stats();
  EXPECT_EQ(a.allocate(0, s), 0u);
  const uint64_t p = a.allocate(1000, s);
  ASSERT_NE(p, 0u);
  MemoryStats st = a.stats();
  EXPECT_EQ(st.allocated_bytes[0].current - before.allocated_bytes[0].current, 1024);
  EXPECT_EQ(st.allocated_bytes[1].current - before.allocated_bytes[1].current, 1024);
  EXPECT_EQ(st.allocated_bytes[2].current - before.allocated_bytes[2].current, 0);
  EXPECT_EQ(st.reserved_bytes[0].current - before.reserved_bytes[0].current, int64_t(2 * kMiB));
  EXPECT_EQ(st.reserved_bytes[1].current - before.reserved_bytes[1].current, int64_t(2 * kMiB));
  EXPECT_EQ(st.requested_bytes[0].current - before.requested_bytes[0].current, 1000);
  EXPECT_EQ(st.allocation[0].current - before.allocation[0].current, 1);
  EXPECT_EQ(st.segment[0].current - before.segment[0].current, 1);
  EXPECT_EQ(st.num_device_alloc - before.num_device_alloc, 1);
  EXPECT_EQ(st.inactive_split_bytes[0].current - before.inactive_split_bytes[0].current,
            int64_t(2 * kMiB - 1024));
  EXPECT_EQ(a.block_size(p), 1024u);
  EXPECT_GE(st.allocated_bytes[0].peak, st.allocated_bytes[0].current);

  a.free(p);
  st = a.stats();
  EXPECT_EQ(st.allocated_bytes[0].current, before.allocated_bytes[0].current);
  EXPECT_EQ(st.allocation[0].current, before.allocation[0].current);
  EXPECT_EQ(st.reserved_bytes[0].current - before.reserved_bytes[0].current, int64_t(2 * kMiB));
  EXPECT_EQ(st.inactive_split_bytes[0].current, before.inactive_split_bytes[0].current);
  EXPECT_EQ(st.allocated_bytes[0].freed - before.allocated_bytes[0].freed, 1024);

  a.empty_cache();
  st = a.stats();
  EXPECT_EQ(st.reserved_bytes[0].current, before.reserved_bytes[0].current);
  EXPECT_EQ(st.segment[0].current, before.segment[0].current);
  EXPECT_EQ(st.num_device_free - before.num_device_free, 1);

  a.reset_peak_stats();
  st = a.stats();
  EXPECT_EQ(st.allocated_bytes[0].peak, st.allocated_bytes[0].current);
  a.reset_accumulated_stats();
  st = a.stats();
  EXPECT_EQ(st.allocated_bytes[0].allocated, 0);
  EXPECT_EQ(st.num_device_alloc, 0);
  EXPECT_NE(a.summary().find("MiB"), std::string::npos);
}

TEST(Allocator, SplitCoalesceAndLargePool) {
  REQUIRE_DEVICE();
  Allocator& a = dev().allocator();
  const uint32_t s = fresh_stream();
  a.empty_cache();
  const int64_t r0 = a.stats().reserved_bytes[0].current;

  const uint64_t x = a.allocate(1000, s);
  const uint64_t y = a.allocate(1000, s);
  EXPECT_EQ(y, x + 1024);  // best fit from the split remainder of the same segment
  a.free(x);
  const uint64_t z = a.allocate(512, s);
  EXPECT_EQ(z, x);  // the 1024-byte hole is the best fit; it is split (512 B remainder)
  EXPECT_EQ(a.block_size(z), 512u);
  a.free(z);
  a.free(y);
  // Fully coalesced: two 1 MiB blocks fill the single 2 MiB segment exactly.
  const uint64_t m1 = a.allocate(kMiB, s);
  const uint64_t m2 = a.allocate(kMiB, s);
  EXPECT_EQ(a.stats().reserved_bytes[0].current - r0, int64_t(2 * kMiB));
  EXPECT_EQ(m2, m1 + kMiB);
  a.free(m1);
  a.free(m2);

  // Large pool: (1, 10] MiB requests come from 20 MiB segments.
  const MemoryStats b = a.stats();
  const uint64_t l1 = a.allocate(3 * kMiB, s);
  MemoryStats st = a.stats();
  EXPECT_EQ(st.reserved_bytes[2].current - b.reserved_bytes[2].current, int64_t(20 * kMiB));
  EXPECT_EQ(st.allocated_bytes[2].current - b.allocated_bytes[2].current, int64_t(3 * kMiB));
  // 16.5 MiB fits the 17 MiB remainder; the 0.5 MiB rest is <= 1 MiB, so no split.
  const uint64_t l2 = a.allocate(16 * kMiB + kMiB / 2, s);
  EXPECT_EQ(l2, l1 + 3 * kMiB);
  EXPECT_EQ(a.block_size(l2), 17 * kMiB);
  st = a.stats();
  EXPECT_EQ(st.reserved_bytes[2].current - b.reserved_bytes[2].current, int64_t(20 * kMiB));
  EXPECT_EQ(st.allocated_bytes[2].current - b.allocated_bytes[2].current, int64_t(20 * kMiB));
  // > 10 MiB with no fitting free block: a segment of its own, rounded up to 2 MiB.
  const uint64_t l3 = a.allocate(31 * kMiB + 1, s);
  st = a.stats();
  EXPECT_EQ(st.reserved_bytes[2].current - b.reserved_bytes[2].current, int64_t(52 * kMiB));
  // Its remainder (1 MiB - 512 B) is not > 1 MiB: not split, the block is the whole segment.
  EXPECT_EQ(a.block_size(l3), 32 * kMiB);
  a.free(l1);
  a.free(l2);
  a.free(l3);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes[0].current, b.reserved_bytes[0].current - int64_t(2 * kMiB));
}

TEST(Allocator, SmallRequestsReuseAFreedLargeBlock) {
  // The from_pretrained warm-up pattern: one block the size of the model, freed, then the
  // weights (many of them small) must fit in it without new segments.
  REQUIRE_DEVICE();
  Allocator& a = dev().allocator();
  const uint32_t s = fresh_stream();
  a.empty_cache();
  const uint64_t warm = a.allocate(24 * kMiB, s);
  const MemoryStats before = a.stats();
  a.free(warm);
  std::vector<uint64_t> small;
  for (int i = 0; i < 40; ++i) small.push_back(a.allocate(256 * 1024 + 100, s));  // ~10 MiB
  const uint64_t large = a.allocate(8 * kMiB, s);
  MemoryStats st = a.stats();
  EXPECT_EQ(st.reserved_bytes[0].current, before.reserved_bytes[0].current);
  EXPECT_EQ(st.num_device_alloc, before.num_device_alloc);
  for (uint64_t p : small) {
    EXPECT_GE(p, warm);
    EXPECT_LT(p, warm + 24 * kMiB);
    EXPECT_EQ(a.block_size(p), Allocator::round_size(256 * 1024 + 100));
  }
  EXPECT_GE(large, warm);
  // Stats of blocks carved from the large pool count in the large pool, on both sides.
  EXPECT_EQ(st.allocated_bytes[1].current, before.allocated_bytes[1].current);
  for (uint64_t p : small) a.free(p);
  a.free(large);
  st = a.stats();
  EXPECT_EQ(st.allocated_bytes[0].current, before.allocated_bytes[0].current - int64_t(24 * kMiB));
  EXPECT_EQ(st.allocated_bytes[2].current, before.allocated_bytes[2].current - int64_t(24 * kMiB));
  // Everything coalesced back into one free segment: the next 24 MiB request reuses it.
  EXPECT_EQ(a.allocate(24 * kMiB, s), warm);
  a.free(warm);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes[0].current,
            before.reserved_bytes[0].current - int64_t(24 * kMiB));
}

TEST(Allocator, ResolveInteriorAddresses) {
  REQUIRE_DEVICE();
  Allocator& a = dev().allocator();
  const uint32_t s = fresh_stream();
  const uint64_t p = a.allocate(4096, s);
  const ResolvedAddress r0 = a.resolve(p);
  const ResolvedAddress r = a.resolve(p + 100);
  EXPECT_EQ(r.buffer, r0.buffer);
  EXPECT_EQ(r.offset, r0.offset + 100);
  EXPECT_EQ(r.bytes_to_end, 4096u - 100);
  EXPECT_EQ(r.device_address, p + 100);
  EXPECT_EQ(r0.bytes_to_end, 4096u);
  if (dev().caps().unified_memory) {
    ASSERT_NE(r0.host_pointer, nullptr);
    EXPECT_EQ(static_cast<char*>(r.host_pointer), static_cast<char*>(r0.host_pointer) + 100);
  } else {
    EXPECT_EQ(r0.host_pointer, nullptr);
  }
  EXPECT_TRUE(a.owns(p + 4095));
  EXPECT_FALSE(a.owns(p + 4096));  // the rest of the segment is free
  EXPECT_THROW(a.resolve(p + 4096), std::runtime_error);
  EXPECT_THROW(a.resolve(12345), std::runtime_error);
  EXPECT_THROW(a.free(p + 8), std::runtime_error);
  a.free(p);
  EXPECT_FALSE(a.owns(p));
}

TEST(Allocator, LargerThanMaxStorageBufferRange) {
  REQUIRE_DEVICE();
  Device& d = dev();
  const uint64_t bytes = 200 * kMiB;
  // Lavapipe's range is 128 MiB; GPUs with a 4 GiB range cannot exceed it with one allocation.
  if (bytes <= d.caps().max_storage_buffer_range)
    GTEST_SKIP() << "maxStorageBufferRange is " << d.caps().max_storage_buffer_range
                 << " bytes: a 200 MiB block does not exceed it on this device";
  Allocator& a = d.allocator();
  Stream& s = d.stream(0);
  const uint64_t p = a.allocate(bytes);
  const size_t n = bytes / 4;
  std::vector<uint32_t> in(n), out(n, 0);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<uint32_t>(i * 2654435761u);
  s.copy_from_host(in.data(), p, bytes);
  // A shader writes 2*i through a device address 190 MiB into the block (past 128 MiB).
  const uint64_t off = 190 * kMiB;
  const uint32_t m = 1 << 20;
  VkPipeline pipe = d.pipelines().get(kDoubleIndex, 256);
  AddressN push{p + off, m, 0};
  s.dispatch(pipe, m / 256, 1, 1, &push, 12);
  s.copy_to_host(p, out.data(), bytes);
  for (size_t i = 0; i < n; ++i) {
    const bool shader = i >= off / 4 && i < off / 4 + m;
    const uint32_t expect = shader ? static_cast<uint32_t>((i - off / 4) * 2) : in[i];
    if (out[i] != expect) {
      ADD_FAILURE() << "mismatch at word " << i << ": " << out[i] << " != " << expect;
      break;
    }
  }
  a.free(p);
  a.empty_cache();
}

TEST(Allocator, OutOfMemoryThenRecovers) {
  REQUIRE_DEVICE();
  Allocator& a = dev().allocator();
  const MemoryStats b = a.stats();
  const uint64_t too_big = dev().caps().device_local_heap_size + 64 * kMiB;
  try {
    a.allocate(too_big);
    FAIL() << "allocating more than the heap succeeded";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory on vk:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("tried to allocate"), std::string::npos) << msg;
  }
  const MemoryStats st = a.stats();
  EXPECT_EQ(st.num_ooms - b.num_ooms, 1);
  EXPECT_EQ(st.num_alloc_retries - b.num_alloc_retries, 1);
  const uint64_t p = a.allocate(4 * kMiB);
  EXPECT_NE(p, 0u);
  dev().stream(0).fill(p, 4 * kMiB, 7);
  uint32_t w = 0;
  dev().stream(0).copy_to_host(p + 4 * kMiB - 4, &w, 4);
  EXPECT_EQ(w, 7u);
  a.free(p);
}

TEST(Allocator, RecordStreamDefersReuse) {
  REQUIRE_DEVICE();
  if (batch_limit() < 8) GTEST_SKIP() << "needs unflushed work on a stream";
  Device& d = dev();
  Allocator& a = d.allocator();
  const uint32_t s1 = fresh_stream(), s2 = fresh_stream();
  const uint64_t x = a.allocate(1000, s1);
  const uint64_t keep = a.allocate(1000, s1);  // keeps the segment split
  const uint64_t other = a.allocate(4096, s2);
  a.record_stream(x, s2);
  d.stream(s2).fill(other, 4096, 1);  // recorded, not yet submitted: s2 has not passed it
  const int64_t active0 = a.stats().active_bytes[0].current;
  a.free(x);
  EXPECT_EQ(a.stats().active_bytes[0].current, active0);  // pending blocks stay active
  const uint64_t y = a.allocate(1000, s1);
  EXPECT_NE(y, x) << "a block still used by another stream was reused";
  // Every allocation scans the pending blocks again: later scans must keep the waits.
  const uint64_t y2 = a.allocate(1000, s1);
  const uint64_t y3 = a.allocate(1000, s1);
  EXPECT_NE(y2, x) << "a pending block lost its waits after one scan";
  EXPECT_NE(y3, x) << "a pending block lost its waits after two scans";
  a.free(y2);
  a.free(y3);
  d.stream(s2).synchronize();
  const uint64_t z = a.allocate(1000, s1);
  EXPECT_EQ(z, x) << "the block was not reused after the other stream completed";
  for (uint64_t p : {y, z, keep, other}) a.free(p);
}

TEST(HostAllocator, PinnedBlocks) {
  REQUIRE_DEVICE();
  Device& d = dev();
  HostAllocator& h = d.host_allocator();
  const uint32_t sid = fresh_stream();
  Stream& s = d.stream(sid);
  EXPECT_EQ(h.allocate(0), nullptr);
  auto* p = static_cast<uint8_t*>(h.allocate(1000));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
  EXPECT_TRUE(h.is_pinned(p));
  EXPECT_TRUE(h.is_pinned(p + 999));
  int local = 0;
  EXPECT_FALSE(h.is_pinned(&local));
  EXPECT_EQ(h.resolve(p + 10).offset, h.resolve(p).offset + 10);
  EXPECT_EQ(h.resolve(p + 10).device_address, h.resolve(p).device_address + 10);
  EXPECT_GE(h.allocated_bytes(), 1000u);
  EXPECT_GE(h.reserved_bytes(), h.allocated_bytes());

  // pinned -> device -> pinned, asynchronously.
  for (int i = 0; i < 1000; ++i) p[i] = static_cast<uint8_t>(i * 7);
  auto* q = static_cast<uint8_t*>(h.allocate(1000));
  const uint64_t dbuf = d.allocator().allocate(1000, sid);
  s.copy_from_host(p, dbuf, 1000);
  s.copy_to_pinned_host(dbuf, q, 1000);
  s.synchronize();
  EXPECT_EQ(std::memcmp(p, q, 1000), 0);

  // A block recorded on a stream with unfinished work is not reused before completion.
  if (batch_limit() >= 8) {
    s.fill(dbuf, 512, 0);  // unsubmitted work
    h.record_stream(q, sid);
    h.free(q);
    EXPECT_FALSE(h.is_pinned(q));
    void* r = h.allocate(1000);
    EXPECT_NE(r, q);
    // Every allocation scans the pending blocks again: later scans must keep the waits.
    void* r2 = h.allocate(1000);
    void* r3 = h.allocate(1000);
    EXPECT_NE(r2, q) << "a pending pinned block lost its waits after one scan";
    EXPECT_NE(r3, q) << "a pending pinned block lost its waits after two scans";
    s.synchronize();
    h.free(r);
    h.free(r2);
    h.free(r3);
  } else {
    h.free(q);
  }
  h.free(p);
  d.allocator().free(dbuf);
  h.empty_cache();
}

// ---------------------------------------------------------------------------------------------
// Streams

TEST(Stream, CopyRoundTripFillAndOverlap) {
  REQUIRE_DEVICE();
  Device& d = dev();
  Stream& s = d.stream(0);
  Allocator& a = d.allocator();
  const uint64_t x = a.allocate(8192), y = a.allocate(8192);
  std::vector<uint8_t> in(8192), out(8192);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 31 + 7);
  s.copy_from_host(in.data(), x, 8192);
  s.copy(x + 3, y + 5, 1001);  // unaligned device-to-device
  s.fill(y + 2048, 1024, 0xA5A5A5A5u);
  std::vector<uint8_t> got(8192, 0);
  s.copy_to_host(y, got.data(), 8192);
  EXPECT_EQ(std::memcmp(got.data() + 5, in.data() + 3, 1001), 0);
  for (int i = 2048; i < 3072; ++i) ASSERT_EQ(got[i], 0xA5) << i;

  // Overlapping copy inside one block behaves like memmove.
  std::vector<uint8_t> ref = in;
  std::memmove(ref.data() + 8, ref.data(), 4000);
  s.copy(x, x + 8, 4000);
  s.copy_to_host(x, out.data(), 8192);
  EXPECT_EQ(out, ref);

  // Uploads are ordered after earlier work of the stream, whichever path they take (an idle
  // stream may write unified memory directly; a busy one goes through staging).
  s.synchronize();
  std::vector<uint8_t> ones(8192, 1), twos(100, 2);
  s.copy_from_host(ones.data(), x, 8192);   // idle stream
  s.fill(x, 8192, 0x03030303u);             // busy from here on
  s.copy_from_host(twos.data(), x + 50, 100);
  s.copy_to_host(x, out.data(), 8192);
  for (int i = 0; i < 8192; ++i) ASSERT_EQ(out[i], (i >= 50 && i < 150) ? 2 : 3) << i;

  // A large (> staging chunk) upload takes the dedicated pinned path.
  const uint64_t big = a.allocate(12 * kMiB);
  std::vector<uint32_t> bin(3 * kMiB), bout(3 * kMiB);
  std::iota(bin.begin(), bin.end(), 11u);
  s.copy_from_host(bin.data(), big, 12 * kMiB);
  s.copy_to_host(big, bout.data(), 12 * kMiB);
  EXPECT_EQ(bin, bout);
  EXPECT_THROW(s.copy(x, y, 9000), std::runtime_error);   // past the end of the block
  EXPECT_THROW(s.fill(x + 2, 8, 0), std::runtime_error);  // fill needs 4-byte alignment
  for (uint64_t p : {x, y, big}) a.free(p);
}

TEST(Stream, HostWaitsCountWaitsPastThePointWaitedFor) {
  REQUIRE_DEVICE();
  Device& d = dev();
  const uint32_t sid = fresh_stream();
  Stream& s = d.stream(sid);
  RuntimeCounters& c = Runtime::get().counters();
  s.synchronize();
  const uint64_t w0 = c.host_waits.load();
  s.synchronize();  // nothing recorded: no wait
  s.wait_for_point(s.completed_point());
  EXPECT_TRUE(s.query());
  EXPECT_EQ(c.host_waits.load(), w0);

  // Shader work the host waits for.
  const uint32_t n = 4 << 20;
  const uint64_t p = d.allocator().allocate(n * 4ull, sid);
  VkPipeline add = d.pipelines().get(kAddConst, 256);
  AddressN push{p, n, 0};
  s.fill(p, n * 4ull, 0);
  for (int i = 0; i < 4; ++i) s.dispatch(add, n / 256, 1, 1, &push, 12);
  s.synchronize();
  const uint64_t w1 = c.host_waits.load();
  EXPECT_EQ(w1, w0 + 1);  // counted whether or not the device was already done
  s.synchronize();
  EXPECT_EQ(c.host_waits.load(), w1);
  uint32_t v = 0;
  s.copy_to_host(p + 4ull * (n - 1), &v, 4);
  EXPECT_EQ(v, 4u);
  d.allocator().free(p);
}

// Hazard tracking: a barrier only between conflicting commands; undeclared commands are
// ordered against everything; the reverse test mode runs barrier-free groups backwards.
TEST(Stream, HazardTrackedBarriers) {
  REQUIRE_DEVICE();
  Device& d = dev();
  const uint32_t sid = fresh_stream();
  Stream& s = d.stream(sid);
  RuntimeCounters& c = Runtime::get().counters();
  const BarrierMode saved = barrier_mode();
  set_barrier_mode(BarrierMode::Tracked);
  const uint32_t n = 1000;
  const uint64_t bytes = n * 4ull;
  const uint64_t a = d.allocator().allocate(bytes, sid), b = d.allocator().allocate(bytes, sid);
  VkPipeline index2 = d.pipelines().get(kDoubleIndex, 128, {});
  VkPipeline add1 = d.pipelines().get(kAddConst, 64, {1});
  AddressN pa{a, n, 0}, pb{b, n, 0};
  AccessSet write_a, write_b, update_a, update_b;
  write_a.write(a, bytes);
  write_b.write(b, bytes);
  update_a.read(a, bytes).write(a, bytes);
  update_b.read(b, bytes).write(b, bytes);
  auto check = [&](uint64_t buf, uint32_t plus) {
    std::vector<uint32_t> out(n);
    s.copy_to_host(buf, out.data(), bytes);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2 * i + plus) << i;
  };

  s.synchronize();
  const uint64_t b0 = c.barriers.load(), k0 = c.barriers_skipped.load();
  s.dispatch(index2, (n + 127) / 128, 1, 1, &pa, 12, nullptr, 0, &write_a);  // first: none
  s.dispatch(index2, (n + 127) / 128, 1, 1, &pb, 12, nullptr, 0, &write_b);  // independent
  EXPECT_EQ(c.barriers.load() - b0, 0u);
  EXPECT_EQ(c.barriers_skipped.load() - k0, 1u);
  s.dispatch(add1, (n + 63) / 64, 1, 1, &pa, 12, nullptr, 0, &update_a);  // reads a: barrier
  EXPECT_EQ(c.barriers.load() - b0, 1u);
  s.dispatch(add1, (n + 63) / 64, 1, 1, &pb, 12);  // undeclared: barrier
  s.dispatch(add1, (n + 63) / 64, 1, 1, &pa, 12, nullptr, 0, &update_a);  // after it: barrier
  EXPECT_EQ(c.barriers.load() - b0, 3u);
  EXPECT_EQ(c.barriers_skipped.load() - k0, 1u);
  s.copy(a, b, 4);  // reads a, writes b: conflicts with both
  EXPECT_EQ(c.barriers.load() - b0, 4u);
  check(a, 2);
  std::vector<uint32_t> first(1);
  s.copy_to_host(b, first.data(), 4);
  EXPECT_EQ(first[0], 2u);  // a[0] = 0 + 2

  // TORCH_VK_BARRIERS=all: a barrier between every two commands.
  set_barrier_mode(BarrierMode::All);
  s.synchronize();
  const uint64_t b1 = c.barriers.load();
  s.dispatch(index2, (n + 127) / 128, 1, 1, &pa, 12, nullptr, 0, &write_a);
  s.dispatch(index2, (n + 127) / 128, 1, 1, &pb, 12, nullptr, 0, &write_b);
  EXPECT_EQ(c.barriers.load() - b1, 1u);

  // Reverse mode: a declaration that misses the read of `a` lets the add run before the write
  // it depends on; the correct declaration keeps the order.
  set_barrier_mode(BarrierMode::Reverse);
  s.synchronize();
  AccessSet wrong;
  wrong.write(b, bytes);
  s.dispatch(index2, (n + 127) / 128, 1, 1, &pa, 12, nullptr, 0, &write_a);
  s.dispatch(add1, (n + 63) / 64, 1, 1, &pa, 12, nullptr, 0, &wrong);
  check(a, 0);  // the add ran first, then the write replaced its result
  s.dispatch(index2, (n + 127) / 128, 1, 1, &pa, 12, nullptr, 0, &write_a);
  s.dispatch(index2, (n + 127) / 128, 1, 1, &pb, 12, nullptr, 0, &write_b);
  s.dispatch(add1, (n + 63) / 64, 1, 1, &pa, 12, nullptr, 0, &update_a);
  s.dispatch(add1, (n + 63) / 64, 1, 1, &pb, 12, nullptr, 0, &update_b);
  check(a, 1);
  check(b, 1);
  set_barrier_mode(saved);

  // An AccessSet past its capacity widens ranges of the same kind (never drops one).
  AccessSet many;
  for (int i = 0; i < AccessSet::kCapacity + 5; ++i) many.read(4096 + 64 * i, 16);
  many.write(1 << 20, 8);
  EXPECT_TRUE(many.known());
  EXPECT_LE(many.size(), AccessSet::kCapacity);
  bool write_kept = false;
  uint64_t lowest = UINT64_MAX, highest = 0;
  for (int i = 0; i < many.size(); ++i) {
    if (many[i].write) write_kept = many[i].begin <= (1u << 20) && many[i].end >= (1u << 20) + 8;
    else lowest = std::min(lowest, many[i].begin), highest = std::max(highest, many[i].end);
  }
  EXPECT_TRUE(write_kept);
  EXPECT_EQ(lowest, 4096u);
  EXPECT_EQ(highest, 4096u + 64 * (AccessSet::kCapacity + 4) + 16);
  AccessSet reads_only;  // full of reads, then a write: the reads collapse into one span
  for (int i = 0; i < AccessSet::kCapacity; ++i) reads_only.read(4096 + 64 * i, 16);
  reads_only.write(1 << 20, 8);
  ASSERT_EQ(reads_only.size(), 2);
  EXPECT_EQ(reads_only[0].begin, 4096u);
  EXPECT_EQ(reads_only[0].end, 4096u + 64 * (AccessSet::kCapacity - 1) + 16);
  EXPECT_TRUE(reads_only[1].write);
  d.allocator().free(a);
  d.allocator().free(b);
}

TEST(Stream, BatchedSubmits) {
  REQUIRE_DEVICE();
  Device& d = dev();
  const uint32_t sid = fresh_stream();
  Stream& s = d.stream(sid);
  const uint64_t p = d.allocator().allocate(4096, sid);
  RuntimeCounters& c = Runtime::get().counters();
  const uint64_t sub0 = c.submits.load(), tr0 = c.transfers.load();
  const uint64_t point0 = s.current_point();
  for (uint32_t i = 0; i < 200; ++i) s.fill(p, 4096, i);
  s.flush();
  const uint32_t b = batch_limit();
  EXPECT_EQ(c.submits.load() - sub0, (200 + b - 1) / b);
  EXPECT_EQ(c.transfers.load() - tr0, 200u);
  EXPECT_EQ(s.current_point(), point0 + (200 + b - 1) / b);
  EXPECT_EQ(s.flush(), s.current_point());  // nothing new: no submit
  EXPECT_EQ(c.submits.load() - sub0, (200 + b - 1) / b);
  uint32_t v = 0;
  s.copy_to_host(p + 4092, &v, 4);
  EXPECT_EQ(v, 199u);  // in-order: the last fill wins
  d.allocator().free(p);
}

TEST(Stream, EventsQuerySynchronizeElapsed) {
  REQUIRE_DEVICE();
  Device& d = dev();
  Stream& s = d.stream(0);
  Event unrecorded;
  EXPECT_TRUE(unrecorded.query());
  Event e1(true), e2(true);
  e1.record(s);
  const uint64_t p = d.allocator().allocate(16 * kMiB);
  s.fill(p, 16 * kMiB, 3);
  e2.record(s);
  EXPECT_TRUE(e2.recorded());
  EXPECT_EQ(e2.stream(), &s);
  e2.synchronize();
  EXPECT_TRUE(e2.query());
  EXPECT_TRUE(e1.query());
  EXPECT_GE(s.completed_point(), e2.point());
  if (d.caps().timestamp_period_ns > 0) {
    const double ms = e1.elapsed_ms(e2);
    EXPECT_GE(ms, 0.0);
    EXPECT_LT(ms, 60000.0);
  }
  Event plain;
  plain.record(s);
  plain.synchronize();
  EXPECT_TRUE(plain.query());
  EXPECT_THROW(plain.elapsed_ms(e2), std::runtime_error);
  d.allocator().free(p);
}

TEST(Stream, TwoStreamsOrderedByEvent) {
  REQUIRE_DEVICE();
  Device& d = dev();
  const uint32_t id1 = fresh_stream(), id2 = fresh_stream();
  Stream &s1 = d.stream(id1), &s2 = d.stream(id2);
  const uint32_t n = 1 << 20;
  const uint64_t x = d.allocator().allocate(n * 4ull, id1);
  const uint64_t y = d.allocator().allocate(n * 4ull, id2);
  VkPipeline add = d.pipelines().get(kAddConst, 256);
  AddressN push{x, n, 0};
  s1.fill(x, n * 4ull, 1);
  for (int i = 0; i < 20; ++i) s1.dispatch(add, n / 256, 1, 1, &push, 12);
  Event done;
  done.record(s1);
  done.block(s2);  // s2 waits on the device, the host does not
  s2.copy(x, y, n * 4ull);
  d.allocator().record_stream(x, id2);
  std::vector<uint32_t> out(n);
  s2.copy_to_host(y, out.data(), n * 4ull);
  for (uint32_t i = 0; i < n; i += 4099) ASSERT_EQ(out[i], 21u) << i;
  EXPECT_EQ(out[n - 1], 21u);
  // A wait on a stream point that already passed is dropped.
  const uint64_t sub = Runtime::get().counters().submits.load();
  s2.wait_for_stream_point(s1, s1.completed_point());
  s2.flush();
  EXPECT_EQ(Runtime::get().counters().submits.load(), sub);
  d.allocator().free(x);
  d.allocator().free(y);
}

TEST(Stream, ConcurrentThreads) {
  REQUIRE_DEVICE();
  Device& d = dev();
  VkPipeline dbl = d.pipelines().get(kDoubleIndex, 64);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      // Threads 0, 1 share the default stream; 2, 3 have their own.
      const uint32_t sid = t < 2 ? 0 : d.create_stream();
      Stream& s = d.stream(sid);
      for (int iter = 0; iter < 20; ++iter) {
        const uint32_t n = 1000 + 37 * t + iter;
        const uint64_t p = d.allocator().allocate(n * 4ull, sid);
        AddressN push{p, n, 0};
        s.dispatch(dbl, (n + 63) / 64, 1, 1, &push, 12);
        std::vector<uint32_t> out(n);
        s.copy_to_host(p, out.data(), n * 4ull);
        for (uint32_t i = 0; i < n; ++i)
          if (out[i] != 2 * i) {
            failures++;
            break;
          }
        d.allocator().free(p);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---------------------------------------------------------------------------------------------
// Pipelines

TEST(Pipeline, DispatchWritesExpectedValues) {
  REQUIRE_DEVICE();
  Device& d = dev();
  Stream& s = d.stream(0);
  RuntimeCounters& c = Runtime::get().counters();
  const uint64_t created0 = c.pipelines_created.load();
  VkPipeline p1 = d.pipelines().get(kDoubleIndex, 128, {});
  VkPipeline p2 = d.pipelines().get(kDoubleIndex, 128, {});
  EXPECT_EQ(p1, p2);
  EXPECT_LE(c.pipelines_created.load() - created0, 1u);  // 0 if an earlier test made it
  VkPipeline p3 = d.pipelines().get(kDoubleIndex, 32);
  EXPECT_NE(p3, p1);
  EXPECT_THROW(d.pipelines().get("no_such_shader_xyz", 64), std::runtime_error);

  const uint32_t n = 1000;  // not a multiple of the workgroup size
  const uint64_t buf = d.allocator().allocate(n * 4 + 64);
  s.fill(buf, n * 4 + 64, 0xFFFFFFFFu);
  const uint64_t d0 = c.dispatches.load();
  AddressN push{buf, n, 0};
  s.dispatch(p1, (n + 127) / 128, 1, 1, &push, 12);
  s.dispatch(p1, 0, 1, 1, &push, 12);  // empty grid: nothing recorded
  EXPECT_EQ(c.dispatches.load() - d0, 1u);
  std::vector<uint32_t> out(n + 16);
  s.copy_to_host(buf, out.data(), out.size() * 4);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2 * i) << i;
  for (uint32_t i = n; i < n + 16; ++i) ASSERT_EQ(out[i], 0xFFFFFFFFu) << i;

  // Specialization constant 1 = the increment; consecutive dispatches see each other's writes.
  VkPipeline add5 = d.pipelines().get(kAddConst, 64, {5});
  for (int i = 0; i < 10; ++i) s.dispatch(add5, (n + 63) / 64, 1, 1, &push, 12);
  s.copy_to_host(buf, out.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2 * i + 50) << i;
  EXPECT_THROW(s.dispatch(p1, 1, 1, 1, &push, kMaxPushConstantBytes + 4), std::runtime_error);
  d.allocator().free(buf);
}

TEST(Pipeline, UploadParamsAcrossChunks) {
  REQUIRE_DEVICE();
  Device& d = dev();
  const uint32_t sid = fresh_stream();
  Stream& s = d.stream(sid);
  VkPipeline copy = d.pipelines().get(kCopyWords, 256);
  const uint32_t words = 1024, rounds = 300;  // 1.2 MiB of parameters: several ring chunks
  const uint64_t dst = d.allocator().allocate(uint64_t(words) * 4 * rounds, sid);
  uint64_t last = 0;
  for (uint32_t r = 0; r < rounds; ++r) {
    std::vector<uint32_t> data(words);
    for (uint32_t i = 0; i < words; ++i) data[i] = r * 100000 + i;
    const uint64_t src = s.upload_params(data.data(), words * 4);
    EXPECT_EQ(src % 16, 0u);
    EXPECT_NE(src, last);
    last = src;
    CopyPush push{src, dst + uint64_t(r) * words * 4, words, 0};
    s.dispatch(copy, words / 256, 1, 1, &push, 20);
  }
  std::vector<uint32_t> out(size_t(words) * rounds);
  s.copy_to_host(dst, out.data(), out.size() * 4);
  for (uint32_t r = 0; r < rounds; ++r)
    for (uint32_t i = 0; i < words; i += 97)
      ASSERT_EQ(out[size_t(r) * words + i], r * 100000 + i) << r << " " << i;
  d.allocator().free(dst);
}

// The build-time shader table: names are unique, find_shader() finds each entry, every binary
// is SPIR-V (magic number 0x07230203, whole words). An L1-only build links an empty stub.
TEST(Pipeline, EmbeddedShaderTable) {
  const std::vector<ShaderBinary>& shaders = all_shaders();
  std::set<std::string> names;
  for (const ShaderBinary& sh : shaders) {
    ASSERT_NE(sh.name, nullptr);
    EXPECT_TRUE(names.insert(sh.name).second) << "duplicate shader " << sh.name;
    const ShaderBinary* found = find_shader(sh.name);
    ASSERT_NE(found, nullptr) << sh.name;
    EXPECT_EQ(found->spirv, sh.spirv) << sh.name;  // the pipeline cache keys on this pointer
    EXPECT_EQ(found->spirv_bytes, sh.spirv_bytes) << sh.name;
    ASSERT_GE(sh.spirv_bytes, 20u) << sh.name;
    EXPECT_EQ(sh.spirv_bytes % 4, 0u) << sh.name;
    EXPECT_EQ(sh.spirv[0], 0x07230203u) << sh.name;
  }
  EXPECT_EQ(find_shader("no_such_shader_xyz"), nullptr);
}

TEST(Pipeline, PersistentCacheFile) {
  REQUIRE_DEVICE();
  Device& d = dev();
  PipelineCache& cache = d.pipelines();
  d.pipelines().get(kDoubleIndex, 64);
  const std::string path = cache.cache_path();
  ASSERT_FALSE(path.empty());
  if (!g_cache_dir.empty()) EXPECT_EQ(path.rfind(g_cache_dir, 0), 0u) << path;
  EXPECT_NE(path.find("/pipelines-"), std::string::npos);
  std::remove(path.c_str());
  cache.save();
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << path;
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // VkPipelineCacheHeaderVersionOne: length, version, vendorID, deviceID, pipelineCacheUUID.
  ASSERT_GE(data.size(), 32u);
  uint32_t header[4];
  std::memcpy(header, data.data(), 16);
  EXPECT_EQ(header[1], uint32_t(VK_PIPELINE_CACHE_HEADER_VERSION_ONE));
  EXPECT_EQ(header[2], d.caps().vendor_id);
  EXPECT_EQ(header[3], d.caps().device_id);
  EXPECT_EQ(std::memcmp(data.data() + 16, d.caps().pipeline_cache_uuid.data(), 16), 0);
}

}  // namespace
