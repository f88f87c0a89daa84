// Run-time generated kernels (src/kernels/generated.h): compile + launch in push-constant and
// indirect argument mode against host computations, the in-process memo, the disk cache
// (hits, corrupt entries, unwritable directory), compile errors and concurrent compiles.
//
// Suite: Generated (run with --gtest_filter='Generated*'). Every test points
// TORCH_VK_CACHE_DIR at its own temporary directory and fails when the validation layer
// (TORCH_VK_VALIDATION=1) reports an error during it.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "host_reference.h"
#include "kernels/gemm.h"
#include "kernels/generated.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace {

using namespace tvk;
using namespace tvk::kernels;
using namespace tvk_test;

// out[i] = a[i * stride_a] * alpha + b[i] + offset, arguments in the push constants
// (3 addresses, 3 ints, 1 float = 52 bytes).
const char* kPushSource = R"glsl(#version 460
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant) uniform Args {
  uint64_t out_addr;
  uint64_t a_addr;
  uint64_t b_addr;
  int64_t n;
  int64_t stride_a;
  int64_t offset;
  float alpha;
} args;
void main() {
  Floats out_ = Floats(args.out_addr);
  Floats a = Floats(args.a_addr);
  Floats b = Floats(args.b_addr);
  int n = int(args.n);
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step)
    out_.v[i] = a.v[i * int(args.stride_a)] * args.alpha + b.v[i] + float(args.offset);
}
)glsl";

// out[i] = sum_j w[j] * x_j[i] + w[9] * float(k0 + k1 * i) + w[10] - w[11] * float(k2),
// 10 addresses + 4 ints + 12 floats = 160 bytes: passed through a parameter block.
const char* kIndirectSource = R"glsl(#version 460
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ArgBlock {
  uint64_t addr[10];
  int64_t iv[4];
  float fv[12];
};
layout(push_constant) uniform Push { ArgBlock args; } pc;
void main() {
  ArgBlock args = pc.args;
  Floats out_ = Floats(args.addr[0]);
  int n = int(args.iv[0]);
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step) {
    float acc = 0.0;
    for (int j = 0; j < 9; ++j) acc += args.fv[j] * Floats(args.addr[1 + j]).v[i];
    acc += args.fv[9] * float(args.iv[1] + args.iv[2] * i) + args.fv[10] - args.fv[11] * float(args.iv[3]);
    out_.v[i] = acc;
  }
}
)glsl";

// A source nobody else compiled in this process (a fresh memo and disk entry).
std::string unique_source(const char* base, const std::string& tag) {
  static int counter = 0;
  return std::string(base) + "// unique: " + tag + " " + std::to_string(::getpid()) + " " +
         std::to_string(counter++) + "\n";
}

std::vector<V> ramp(size_t n, V scale, V shift) {
  std::vector<V> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(scale * V(int(i % 97) - 40) + shift);
  return v;
}

class Generated : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Runtime::get().available())
      GTEST_SKIP() << "no Vulkan device: " << Runtime::get().unavailable_reason();
    if (!generated_compiler_available()) GTEST_SKIP() << "built without a run-time compiler";
    errors_ = Runtime::get().validation_error_count();
    // The device (and its driver pipeline cache, saved at exit under TORCH_VK_CACHE_DIR as
    // seen at creation) exists before the variable points at this test's directory.
    dev();
    if (const char* old = std::getenv("TORCH_VK_CACHE_DIR")) saved_dir_ = old, had_dir_ = true;
    char pattern[] = "/tmp/tvk_generated_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    ::setenv("TORCH_VK_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::string cmd = "rm -rf '" + dir_ + "'";
      if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not remove " << dir_;
    }
    if (had_dir_) ::setenv("TORCH_VK_CACHE_DIR", saved_dir_.c_str(), 1);
    else ::unsetenv("TORCH_VK_CACHE_DIR");
    if (!Runtime::get().available() || !generated_compiler_available()) return;
    stream().synchronize();
    if (Runtime::get().validation_error_count() != errors_)
      for (const auto& m : Runtime::get().validation_messages()) ADD_FAILURE() << m;
  }
  std::string dir_, saved_dir_;
  bool had_dir_ = false;
  uint64_t errors_ = 0;
};

TEST_F(Generated, PushModeMatchesHost) {
  const int n = 1000, stride = 3;
  ASSERT_FALSE(generated_args_indirect(3, 3, 1));
  const GeneratedKernel& kernel = compile_generated(kPushSource, "axpb");
  const auto a_values = ramp(n * stride, 0.25L, 1);
  const auto b_values = ramp(n, -0.5L, 3);
  Buffer a(DType::Float32, a_values), b(DType::Float32, b_values), out(DType::Float32, n);
  const uint64_t addresses[] = {out.address, a.address, b.address};
  const int64_t ints[] = {n, stride, -7};
  const float floats[] = {1.5f};
  const uint64_t dispatches = Runtime::get().counters().dispatches.load();
  // 2 workgroups of 64: the grid-stride loop covers the rest.
  launch_generated(stream(), kernel, 2, 64, addresses, 3, ints, 3, floats, 1);
  EXPECT_EQ(Runtime::get().counters().dispatches.load(), dispatches + 1);
  const auto got = out.download();
  for (int i = 0; i < n; ++i) {
    const float want = static_cast<float>(a_values[i * stride]) * 1.5f +
                       static_cast<float>(b_values[i]) + float(-7);
    ASSERT_NEAR(double(got[i]), want, 1e-5 * (1 + std::fabs(want))) << "i = " << i;
  }
}

TEST_F(Generated, IndirectModeMatchesHost) {
  const int n = 777;
  ASSERT_TRUE(generated_args_indirect(10, 4, 12));
  const GeneratedKernel& kernel = compile_generated(kIndirectSource, "weighted_sum9");
  std::vector<std::unique_ptr<Buffer>> inputs;
  std::vector<std::vector<V>> values;
  for (int j = 0; j < 9; ++j) {
    values.push_back(ramp(n, 0.125L * (j + 1), j));
    inputs.push_back(std::make_unique<Buffer>(DType::Float32, values.back()));
  }
  Buffer out(DType::Float32, n);
  std::vector<uint64_t> addresses = {out.address};
  for (auto& in : inputs) addresses.push_back(in->address);
  const int64_t ints[] = {n, 5, -2, 11};
  float floats[12];
  for (int j = 0; j < 12; ++j) floats[j] = 0.5f + 0.25f * j - (j % 3 == 0 ? 1.0f : 0.0f);
  launch_generated(stream(), kernel, 3, 128, addresses.data(), 10, ints, 4, floats, 12);
  const auto got = out.download();
  for (int i = 0; i < n; ++i) {
    double want = 0;
    for (int j = 0; j < 9; ++j) want += double(floats[j]) * double(float(values[j][i]));
    want += double(floats[9]) * double(5 - 2 * i) + floats[10] - double(floats[11]) * 11;
    ASSERT_NEAR(double(got[i]), want, 1e-4 * (1 + std::fabs(want))) << "i = " << i;
  }
}

TEST_F(Generated, MemoryHitThenDiskHit) {
  const std::string source = unique_source(kPushSource, "memory-disk");
  reset_generated_kernel_stats();
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  const GeneratedKernel& first = compile_generated(source, "first");
  auto t1 = clock::now();
  GeneratedKernelStats s = generated_kernel_stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.memory_hits, 0u);
  EXPECT_EQ(s.disk_hits, 0u);
  ASSERT_FALSE(first.spirv.empty());
  EXPECT_EQ(first.spirv[0], 0x07230203u);
  const std::string path = generated_cache_path(source);
  ASSERT_EQ(path.rfind(dir_ + "/spirv/", 0), 0u) << path;
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << "no cache file " << path;

  auto t2 = clock::now();
  const GeneratedKernel& again = compile_generated(source, "again");
  auto t3 = clock::now();
  EXPECT_EQ(&again, &first);
  s = generated_kernel_stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.memory_hits, 1u);

  clear_generated_memory_cache_for_testing();
  auto t4 = clock::now();
  const GeneratedKernel& from_disk = compile_generated(source, "from_disk");
  auto t5 = clock::now();
  s = generated_kernel_stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.disk_hits, 1u);
  EXPECT_NE(&from_disk, &first);  // a new registry entry; the old one stays valid
  EXPECT_EQ(from_disk.spirv, first.spirv);
  EXPECT_EQ(&generated_kernel(first.id), &first);
  EXPECT_EQ(&generated_kernel(from_disk.id), &from_disk);
  EXPECT_THROW(generated_kernel(-1), std::invalid_argument);
  EXPECT_THROW(generated_kernel(from_disk.id + 1000000), std::invalid_argument);
  auto us = [](auto a, auto b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  std::printf("[generated] compile %.0f us, memory hit %.1f us, disk hit %.0f us (%s)\n",
              us(t0, t1), us(t2, t3), us(t4, t5), generated_compiler_version().c_str());

  // Both kernels run (each gets its own pipeline).
  const int n = 40;
  const auto a_values = ramp(n, 1, 0), b_values = ramp(n, 2, 1);
  Buffer a(DType::Float32, a_values), b(DType::Float32, b_values), out1(DType::Float32, n),
      out2(DType::Float32, n);
  const int64_t ints[] = {n, 1, 0};
  const float floats[] = {2.0f};
  const uint64_t addresses1[] = {out1.address, a.address, b.address};
  const uint64_t addresses2[] = {out2.address, a.address, b.address};
  launch_generated(stream(), first, 1, 32, addresses1, 3, ints, 3, floats, 1);
  launch_generated(stream(), from_disk, 1, 32, addresses2, 3, ints, 3, floats, 1);
  const auto got1 = out1.download(), got2 = out2.download();
  for (int i = 0; i < n; ++i) {
    const float want = float(a_values[i]) * 2.0f + float(b_values[i]);
    EXPECT_EQ(double(got1[i]), want) << i;
    EXPECT_EQ(double(got2[i]), want) << i;
  }
}

TEST_F(Generated, CorruptCacheFileIsRecompiled) {
  const std::string source = unique_source(kPushSource, "corrupt");
  const GeneratedKernel& original = compile_generated(source, "corrupt");
  const std::string path = generated_cache_path(source);
  std::vector<char> good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(good.size(), 64u);
  // Damage: truncated to a non-multiple of 4, truncated by one word, a flipped byte in the
  // code, a bad SPIR-V magic, an empty file.
  std::vector<std::vector<char>> damaged;
  damaged.emplace_back(good.begin(), good.begin() + 7);
  damaged.emplace_back(good.begin(), good.end() - 4);
  damaged.push_back(good);
  damaged.back()[good.size() / 2] ^= 0x20;
  damaged.push_back(good);
  damaged.back()[0] ^= 0x01;
  damaged.emplace_back();
  for (size_t d = 0; d < damaged.size(); ++d) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(damaged[d].data(), static_cast<std::streamsize>(damaged[d].size()));
    }
    clear_generated_memory_cache_for_testing();
    const GeneratedKernelStats before = generated_kernel_stats();
    const GeneratedKernel& k = compile_generated(source, "corrupt");
    const GeneratedKernelStats after = generated_kernel_stats();
    EXPECT_EQ(after.compiles, before.compiles + 1) << "damage " << d;
    EXPECT_EQ(after.disk_hits, before.disk_hits) << "damage " << d;
    EXPECT_EQ(k.spirv, original.spirv) << "damage " << d;
    // The entry was rewritten: the next miss is a disk hit again.
    clear_generated_memory_cache_for_testing();
    compile_generated(source, "corrupt");
    EXPECT_EQ(generated_kernel_stats().disk_hits, after.disk_hits + 1) << "damage " << d;
  }
}

TEST_F(Generated, UnwritableCacheDirectoryOnlyDisablesTheDiskCache) {
  // A regular file where the directory should be: mkdir fails, nothing is cached.
  const std::string blocker = dir_ + "/not_a_directory";
  { std::ofstream(blocker) << "x"; }
  ::setenv("TORCH_VK_CACHE_DIR", blocker.c_str(), 1);
  const std::string source = unique_source(kPushSource, "unwritable");
  const GeneratedKernelStats before = generated_kernel_stats();
  const GeneratedKernel& k = compile_generated(source, "unwritable");
  EXPECT_FALSE(k.spirv.empty());
  clear_generated_memory_cache_for_testing();
  compile_generated(source, "unwritable");
  const GeneratedKernelStats after = generated_kernel_stats();
  EXPECT_EQ(after.compiles, before.compiles + 2);
  EXPECT_EQ(after.disk_hits, before.disk_hits);
}

TEST_F(Generated, CompileErrorThrowsWithLogAndSourceLines) {
  const std::string source =
      "#version 460\n"
      "layout(local_size_x_id = 0) in;\n"
      "layout(push_constant) uniform Args { uint n; } args;\n"
      "void main() {\n"
      "  uint i = gl_GlobalInvocationID.x;\n"
      "  float y = undefined_variable_xyz * 2.0;\n"
      "}\n";
  try {
    compile_generated(source, "broken_kernel");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("broken_kernel"), std::string::npos) << what;
    EXPECT_NE(what.find("undefined_variable_xyz"), std::string::npos) << what;
    EXPECT_NE(what.find("ERROR"), std::string::npos) << what;  // glslang's log
    EXPECT_NE(what.find(">    6 |   float y = undefined_variable_xyz * 2.0;"), std::string::npos) << what;
    EXPECT_NE(what.find("     5 |   uint i = gl_GlobalInvocationID.x;"), std::string::npos) << what;
  }
  // A missing header is a compile error too.
  EXPECT_THROW(compile_generated("#version 460\n#include \"no_such_header.glsl\"\nvoid main() {}\n", "nohdr"),
               std::invalid_argument);
}

TEST_F(Generated, ConcurrentCompilesAreSafe) {
  const int kSources = 4;
  std::vector<std::string> sources;
  for (int i = 0; i < kSources; ++i) sources.push_back(unique_source(kPushSource, "threads"));
  const GeneratedKernelStats before = generated_kernel_stats();
  const GeneratedKernel* results[2][kSources] = {};
  std::string errors[2];
  auto work = [&](int t) {
    try {
      for (int i = 0; i < kSources; ++i) {
        const int s = t == 0 ? i : kSources - 1 - i;  // opposite orders
        results[t][s] = &compile_generated(sources[s], "threaded");
      }
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  for (int i = 0; i < kSources; ++i) {
    ASSERT_NE(results[0][i], nullptr);
    EXPECT_EQ(results[0][i], results[1][i]) << "source " << i << " compiled twice";
    EXPECT_EQ(results[0][i]->spirv[0], 0x07230203u);
  }
  const GeneratedKernelStats after = generated_kernel_stats();
  EXPECT_EQ(after.compiles - before.compiles, uint64_t(kSources));
  EXPECT_EQ(after.memory_hits - before.memory_hits, uint64_t(kSources));
}

TEST_F(Generated, LaunchRejectsBadArguments) {
  const GeneratedKernel& kernel = compile_generated(kPushSource, "axpb");
  const uint64_t addresses[3] = {0, 0, 0};
  const int64_t ints[3] = {0, 1, 0};
  const float floats[1] = {0};
  const uint32_t max_groups = dev().caps().max_workgroup_count[0];
  EXPECT_THROW(launch_generated(stream(), kernel, 0, 64, addresses, 3, ints, 3, floats, 1),
               std::invalid_argument);
  EXPECT_THROW(launch_generated(stream(), kernel, max_groups + 1u, 64, addresses, 3, ints, 3, floats, 1),
               std::invalid_argument);
  EXPECT_THROW(launch_generated(stream(), kernel, 1, 0, addresses, 3, ints, 3, floats, 1),
               std::invalid_argument);
  EXPECT_THROW(launch_generated(stream(), kernel, 1, 64, nullptr, 3, ints, 3, floats, 1),
               std::invalid_argument);
  EXPECT_THROW(launch_generated(stream(), kernel, 1, 64, addresses, -1, ints, 3, floats, 1),
               std::invalid_argument);
  EXPECT_FALSE(generated_args_indirect(16, 0, 0));  // exactly 128 bytes
  EXPECT_TRUE(generated_args_indirect(16, 0, 1));
  EXPECT_TRUE(generated_args_indirect(0, 0, 33));
}

}  // namespace

namespace {

// Builds without glslang / SPIRV-Tools: compiling raises the documented error (the other
// tests skip there).
// A GEMM epilogue: out[m][n] = relu(v) + row[n] * scale, and the product itself into prod.
const char* kEpilogue = R"glsl(
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer EpiArgs {
  uint64_t addr[3];
  float scale;
};
void gemm_epilogue(uint64_t args_address, int bt, int m, int n, T v) {
  EpiArgs args = EpiArgs(args_address);
  T row = load_f32(args.addr[2], DT_FLOAT32, n);
  store_f32(args.addr[0], DT_FLOAT32, m * pc.N + n, max(v, 0.0) + row * args.scale);
  store_f32(args.addr[1], DT_FLOAT32, m * pc.N + n, v);
}
)glsl";

TEST_F(Generated, GemmEpilogueOnEveryAlgorithm) {
  const int64_t m = 19, n = 22, k = 13;
  const auto a_values = ramp(m * k, 0.125L, 0.5L), b_values = ramp(k * n, -0.0625L, 0.25L);
  const auto bias_values = ramp(n, 0.5L, -1), row_values = ramp(n, 0.25L, 2);
  Buffer a(DType::Float32, a_values), b(DType::Float32, b_values), bias(DType::Float32, bias_values),
      row(DType::Float32, row_values), out(DType::Float32, m * n), prod(DType::Float32, m * n);
  const int64_t id = register_gemm_epilogue(kEpilogue, "relu_plus_row");
  EXPECT_EQ(register_gemm_epilogue(kEpilogue, "another name"), id);  // memoized by text
  struct {
    uint64_t addr[3];
    float scale;
  } args{{out.address, prod.address, row.address}, -1.5f};
  GemmTuning saved = gemm_tuning();
  for (GemmTuning::Algo algo : {GemmTuning::Algo::Auto, GemmTuning::Algo::Tiled,
                                GemmTuning::Algo::Direct, GemmTuning::Algo::Lanes}) {
    gemm_tuning() = saved;
    gemm_tuning().algo = algo;
    // Small register blocks: the big default ones take seconds per pipeline on lavapipe.
    if (algo != GemmTuning::Algo::Auto) {
      gemm_tuning().tm = 4, gemm_tuning().tn = 2, gemm_tuning().bk = 4;
      gemm_tuning().wm = 4, gemm_tuning().wn = 8;
    }
    Gemm g;
    g.m = m, g.n = n, g.k = k;
    g.a = GemmMatrix{a.address, DType::Float32, k, 1, 0};
    g.b = GemmMatrix{b.address, DType::Float32, 1, k, 0};  // column-major B: b[c * k + r]
    g.bias = GemmMatrix{bias.address, DType::Float32, 0, 1, 0};
    g.c = GemmMatrix{0, DType::Float32, 0, 0, 0};
    g.alpha = GemmScalar{2.0, 0};
    g.beta = GemmScalar{0.5, 0};
    const uint64_t dispatches = Runtime::get().counters().dispatches.load();
    gemm(stream(), g, GemmEpilogueCall{id, &args, sizeof args});
    EXPECT_EQ(Runtime::get().counters().dispatches.load(), dispatches + 1);
    const auto got = out.download(), got_prod = prod.download();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        V acc = 0;
        for (int64_t q = 0; q < k; ++q) acc += a_values[i * k + q] * b_values[j * k + q];
        const V v = 2 * acc + 0.5L * bias_values[j];
        const V want = std::max(v, V(0)) + row_values[j] * V(-1.5);
        ASSERT_NEAR(double(got_prod[i * n + j]), double(v), 1e-4 * (1 + std::fabs(double(v))))
            << "algo " << int(algo) << " at " << i << "," << j;
        ASSERT_NEAR(double(got[i * n + j]), double(want), 1e-4 * (1 + std::fabs(double(want))))
            << "algo " << int(algo) << " at " << i << "," << j;
      }
  }
  gemm_tuning() = saved;
  // Integer kinds have no epilogue; unknown ids are rejected.
  Gemm g;
  g.kind = ComputeKind::Int32;
  g.m = g.n = g.k = 1;
  EXPECT_THROW(gemm(stream(), g, GemmEpilogueCall{id, &args, sizeof args}), std::invalid_argument);
  g.kind = ComputeKind::Float32;
  g.a = GemmMatrix{a.address, DType::Float32, 1, 1, 0};
  g.b = g.a;
  EXPECT_THROW(gemm(stream(), g, GemmEpilogueCall{id + 1000, &args, sizeof args}),
               std::invalid_argument);
}

TEST(GeneratedWithoutCompiler, CompileRaisesAClearError) {
  if (tvk::kernels::generated_compiler_available()) GTEST_SKIP() << "this build has a compiler";
  try {
    tvk::kernels::compile_generated("#version 460\nvoid main() {}\n", "k");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("built without a run-time shader compiler"),
              std::string::npos) << e.what();
  }
}

}  // namespace
