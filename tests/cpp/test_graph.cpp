// L1 graph capture / replay tests (GoogleTest, runtime/graph.h). References come from host
// arithmetic on the inputs and from the documented allocator policy (allocator.h), never from
// earlier outputs of the code. Run with TORCH_VK_VALIDATION=1: a validation error fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/index.h"
#include "kernels/random.h"
#include "kernels/kernels.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/stream.h"

namespace {

using namespace tvk;
using namespace tvk::kernels;

constexpr uint64_t kMiB = 1ull << 20;

Device& dev() { return Runtime::get().device(0); }

class Graph : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Runtime::get().available())
      GTEST_SKIP() << "no Vulkan device: " << Runtime::get().unavailable_reason();
    errors_ = Runtime::get().validation_error_count();
  }
  void TearDown() override {
    if (!Runtime::get().available()) return;
    dev().synchronize();
    if (Runtime::get().validation_error_count() != errors_)
      for (const auto& m : Runtime::get().validation_messages()) ADD_FAILURE() << m;
  }
  uint64_t errors_ = 0;
};

// float32 device buffer allocated on `stream`.
struct F32 {
  Stream& stream;
  size_t n;
  uint64_t address;
  F32(Stream& s, size_t count)
      : stream(s), n(count), address(dev().allocator().allocate(count * 4, s.id())) {}
  ~F32() {
    stream.synchronize();
    dev().allocator().free(address);
  }
  void upload(const std::vector<float>& v) { stream.copy_from_host(v.data(), address, v.size() * 4); }
  std::vector<float> download() {
    std::vector<float> v(n);
    stream.copy_to_host(address, v.data(), n * 4);
    return v;
  }
  Operand op() const { return {address, DType::Float32}; }
};

Geometry flat(int64_t n) {
  Geometry g;
  g.ndim = 1;
  g.sizes[0] = n;
  for (int k = 0; k < kMaxOperands; ++k) g.strides[k][0] = 1;
  return g;
}

void binary(Stream& s, const char* op, uint64_t out, uint64_t a, uint64_t b, int64_t n,
            double alpha = 1.0) {
  Operand ops[] = {{out, DType::Float32}, {a, DType::Float32}, {b, DType::Float32}};
  Scalars sc;
  sc.f[0] = alpha;
  sc.i[0] = static_cast<int64_t>(alpha);
  elementwise(s, op, ComputeKind::Float32, n, flat(n), ops, 3, sc);
}

std::vector<float> ramp(size_t n, float scale, float shift) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 29) - 14) + shift;
  return v;
}

// The captured chain (16 x 16 elements):
//   t = x * x            (t: allocated and freed inside the capture, from the graph's pool)
//   y = t + 2 * x
//   z = y^T + x          (2-D strided: its geometry goes through upload_params)
constexpr int64_t kSide = 16;
constexpr int64_t kN = kSide * kSide;

std::vector<float> host_chain(const std::vector<float>& x) {
  std::vector<float> y(kN), z(kN);
  for (int64_t i = 0; i < kN; ++i) y[i] = x[i] * x[i] + 2.0f * x[i];
  for (int64_t i1 = 0; i1 < kSide; ++i1)
    for (int64_t i0 = 0; i0 < kSide; ++i0) z[i0 + kSide * i1] = y[kSide * i0 + i1] + x[i0 + kSide * i1];
  return z;
}

// Records the chain; returns the address of the intermediate block.
uint64_t record_chain(Stream& s, const F32& x, const F32& y, const F32& z) {
  Allocator& alloc = dev().allocator();
  const uint64_t t = alloc.allocate(kN * 4, s.id());
  binary(s, "mul", t, x.address, x.address, kN);
  binary(s, "add", y.address, t, x.address, kN, 2.0);
  alloc.free(t);
  Geometry g;
  g.ndim = 2;
  g.sizes[0] = g.sizes[1] = kSide;
  g.strides[0][0] = 1, g.strides[0][1] = kSide;  // z
  g.strides[1][0] = kSide, g.strides[1][1] = 1;  // y, transposed
  g.strides[2][0] = 1, g.strides[2][1] = kSide;  // x
  Operand ops[] = {z.op(), y.op(), x.op()};
  Scalars sc;
  sc.f[0] = 1.0;
  sc.i[0] = 1;
  elementwise(s, "add", ComputeKind::Float32, kN, g, ops, 3, sc);
  return t;
}

void expect_equal(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
}

TEST_F(Graph, CaptureThenReplayWithNewInputs) {
  Stream& s = dev().stream(0);
  F32 x(s, kN), y(s, kN), z(s, kN);
  std::vector<float> x0 = ramp(kN, 0.5f, 0.25f);
  x.upload(x0);
  s.synchronize();

  auto g = std::make_unique<CapturedGraph>();
  EXPECT_FALSE(s.capturing());
  s.begin_capture(*g);
  EXPECT_TRUE(s.capturing());
  EXPECT_EQ(s.capture_graph(), g.get());
  const uint64_t t = record_chain(s, x, y, z);
  s.flush();  // submitting in batches stays allowed
  s.end_capture();
  EXPECT_FALSE(s.capturing());
  EXPECT_TRUE(g->valid());
  EXPECT_EQ(g->command_count(), 3u);
  EXPECT_EQ(g->pool_bytes(), 2 * kMiB);  // one small-pool segment (allocator.h)
  EXPECT_GT(g->param_bytes(), 0u);
  expect_equal(z.download(), host_chain(x0));  // the capture run itself computed

  // The intermediate block is never handed to allocations outside the capture.
  Allocator& alloc = dev().allocator();
  std::vector<uint64_t> outside;
  for (int k = 0; k < 8; ++k) outside.push_back(alloc.allocate(kN * 4, s.id()));
  for (uint64_t a : outside) EXPECT_NE(a, t);
  for (uint64_t a : outside) alloc.free(a);

  const uint64_t dispatches = Runtime::get().counters().dispatches.load();
  for (float shift : {1.0f, -3.0f}) {
    std::vector<float> x1 = ramp(kN, 0.25f, shift);
    x.upload(x1);  // outside capture
    g->replay(s);
    expect_equal(z.download(), host_chain(x1));
  }
  EXPECT_EQ(Runtime::get().counters().dispatches.load() - dispatches, 2 * g->command_count());

  // Replaying twice in a row gives the same result (the chain only reads x).
  g->replay(s);
  g->replay(s);
  std::vector<float> x2 = ramp(kN, -0.75f, 0.5f);
  x.upload(x2);
  g->replay(s);
  // Destroying the graph right after a replay: its parameter memory is released only once the
  // replay completed.
  g.reset();
  expect_equal(z.download(), host_chain(x2));
}

// Uniform numbers of `n` elements drawn with `philox` (a direct launch or through a block).
void uniform(Stream& s, const F32& out, int64_t n, const PhiloxState& philox) {
  RandomElementwise p;
  p.op = RandomOp::Uniform;
  p.numel = n;
  p.geometry = flat(n);
  p.out = out.op();
  p.philox = philox;
  p.p[0] = 0.0;
  p.p[1] = 1.0;
  random_elementwise(s, p);
}

// A captured random kernel reads seed and counter base from the graph's Philox block, so each
// replay with (seed, offset) draws what a direct launch with (seed, offset + delta) draws.
TEST_F(Graph, RandomKernelsReadThePhiloxBlock) {
  Stream& s = dev().stream(0);
  constexpr int64_t n = 300;
  F32 a(s, n), b(s, n), ref_a(s, n), ref_b(s, n);
  auto g = std::make_unique<CapturedGraph>();
  s.begin_capture(*g);
  const uint64_t block = g->philox_address(/*seed=*/7, /*base=*/64);
  EXPECT_EQ(g->philox_address(99, 999), block);  // created once; the first values stay
  EXPECT_TRUE(g->draws_random());
  EXPECT_EQ(g->philox().seed, 7u);
  EXPECT_EQ(g->philox().base, 64u);
  uniform(s, a, n, {0, 0, block});
  uniform(s, b, n, {0, 4, block});  // 4 counter values further
  s.end_capture();
  ASSERT_TRUE(g->valid()) << g->invalid_reason();
  EXPECT_EQ(g->command_count(), 6u);  // 4 capture-only block writes + 2 dispatches

  uniform(s, ref_a, n, {7, 64});
  uniform(s, ref_b, n, {7, 68});
  expect_equal(a.download(), ref_a.download());  // the capture run drew at (7, 64)
  expect_equal(b.download(), ref_b.download());

  const uint64_t dispatches = Runtime::get().counters().dispatches.load();
  for (auto [seed, offset] : {std::pair<uint64_t, uint64_t>{7, 64}, {7, 1ull << 36}, {0x123456789ull, 8}}) {
    g->replay(s, seed, offset);
    uniform(s, ref_a, n, {seed, offset});
    uniform(s, ref_b, n, {seed, offset + 4});
    expect_equal(a.download(), ref_a.download());
    expect_equal(b.download(), ref_b.download());
  }
  // Replays skip the capture-only writes: 2 dispatches each (+ 2 reference launches).
  EXPECT_EQ(Runtime::get().counters().dispatches.load() - dispatches, 3u * 4u);
  EXPECT_THROW(g->philox_address(1, 2), std::logic_error);  // outside a capture
}

TEST_F(Graph, ForbiddenOperationsInvalidateTheGraph) {
  Stream& s = dev().stream(0);
  Stream& other = dev().stream(dev().create_stream());
  F32 x(s, 64);
  std::vector<float> host(64, 1.0f);
  x.upload(host);
  s.synchronize();
  void* pinned = dev().host_allocator().allocate(256);

  auto expect_forbidden = [&](const char* what, auto&& fn) {
    SCOPED_TRACE(what);
    CapturedGraph g;
    s.begin_capture(g);
    binary(s, "add", x.address, x.address, x.address, 64, 0.0);
    try {
      fn();
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("is not allowed while a graph is being captured"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(g.valid());
    EXPECT_FALSE(g.invalid_reason().empty());
    s.end_capture();
    EXPECT_THROW(g.replay(s), std::runtime_error);
  };
  expect_forbidden("copy_from_host", [&] { s.copy_from_host(host.data(), x.address, 256); });
  expect_forbidden("copy_to_host", [&] { s.copy_to_host(x.address, host.data(), 256); });
  expect_forbidden("copy_to_pinned_host", [&] { s.copy_to_pinned_host(x.address, pinned, 256); });
  expect_forbidden("synchronize", [&] { s.synchronize(); });
  expect_forbidden("wait_for_point", [&] { s.wait_for_point(s.current_point()); });
  expect_forbidden("device synchronize", [&] { dev().synchronize(); });
  expect_forbidden("event synchronize", [&] {
    Event e;
    e.record(s);
    e.synchronize();
  });
  expect_forbidden("timing event", [&] {
    Event e(true);
    e.record(s);
  });
  F32 w(other, 64);
  expect_forbidden("wait on another stream", [&] {
    other.fill(w.address, 4, 0);  // gives the other stream a point to wait for
    Event e;
    e.record(other);
    e.block(s);
  });
  other.synchronize();

  // The stream keeps working normally afterwards, and allowed calls keep a graph valid.
  {
    CapturedGraph g;
    s.begin_capture(g);
    binary(s, "add", x.address, x.address, x.address, 64, 1.0);  // x = 2x
    s.flush();
    (void)s.query();
    (void)s.current_point();
    s.check_device_errors();
    Event plain;
    plain.record(s);
    s.end_capture();
    EXPECT_TRUE(g.valid());
    g.replay(s);  // x = 4x
  }
  std::vector<float> got(64);
  s.copy_to_host(x.address, got.data(), 256);
  for (float v : got) ASSERT_EQ(v, 4.0f);
  dev().host_allocator().free(pinned);
}

TEST_F(Graph, MisuseThrows) {
  Stream& s = dev().stream(0);
  Stream& other = dev().stream(dev().create_stream());
  F32 x(s, 64);
  CapturedGraph never;
  EXPECT_THROW(never.replay(s), std::logic_error);
  EXPECT_EQ(never.command_count(), 0u);
  EXPECT_EQ(never.pool_bytes(), 0u);

  CapturedGraph g, second;
  s.begin_capture(g);
  EXPECT_THROW(s.begin_capture(second), std::logic_error);  // one capture per stream
  EXPECT_THROW(g.replay(s), std::logic_error);              // capture not ended
  binary(s, "mul", x.address, x.address, x.address, 64);
  s.end_capture();
  s.end_capture();  // a no-op
  EXPECT_THROW(s.begin_capture(g), std::logic_error);  // captured once
  EXPECT_THROW(g.replay(other), std::invalid_argument);
  // Graphs do not nest: replay while the stream captures another graph.
  s.begin_capture(second);
  EXPECT_THROW(g.replay(s), std::runtime_error);
  s.end_capture();
  // Another stream captures independently (allocations there come from its own graph).
  CapturedGraph on_other;
  other.begin_capture(on_other);
  EXPECT_FALSE(s.capturing());
  const uint64_t a = dev().allocator().allocate(512, s.id());  // not from on_other's pool
  other.end_capture();
  EXPECT_EQ(on_other.pool_bytes(), 0u);
  dev().allocator().free(a);
  g.replay(s);
}

TEST_F(Graph, DestroyingTheGraphReleasesThePool) {
  Stream& s = dev().stream(0);
  Allocator& alloc = dev().allocator();
  F32 x(s, kN), y(s, kN);
  x.upload(ramp(kN, 1.0f, 0.0f));
  alloc.empty_cache();
  const int64_t reserved0 = alloc.stats().reserved_bytes[0].current;
  const int64_t allocated0 = alloc.stats().allocated_bytes[0].current;

  auto g = std::make_unique<CapturedGraph>();
  uint64_t out = 0;
  s.begin_capture(*g);
  const uint64_t tmp = alloc.allocate(kN * 4, s.id());
  binary(s, "mul", tmp, x.address, x.address, kN);
  out = alloc.allocate(kN * 4, s.id());  // the graph's output: stays allocated
  binary(s, "add", out, tmp, x.address, kN);
  alloc.free(tmp);
  // A block allocated before the capture and freed during it is held (captured commands may
  // use it) instead of being reused.
  const uint64_t before = y.address;
  y.address = 0;
  alloc.free(before);
  s.end_capture();
  const uint64_t pool = g->pool_bytes();
  EXPECT_EQ(pool, 2 * kMiB);
  EXPECT_EQ(alloc.stats().reserved_bytes[0].current, reserved0 + static_cast<int64_t>(pool));
  // +out -y: the pool counts like any other memory.
  EXPECT_EQ(alloc.stats().allocated_bytes[0].current, allocated0);
  // Neither the output's pool nor the held block serves allocations outside the capture.
  const uint64_t probe = alloc.allocate(kN * 4, s.id());
  EXPECT_NE(probe, before);
  alloc.free(probe);
  g->replay(s);

  // The output outlives the graph; freeing it afterwards returns it to the general cache.
  g.reset();
  s.synchronize();
  alloc.empty_cache();
  // The pool's segment still holds the live output. (y's segment may have been released.)
  const int64_t reserved1 = alloc.stats().reserved_bytes[0].current;
  EXPECT_LE(reserved1, reserved0 + static_cast<int64_t>(pool));
  alloc.free(out);
  alloc.empty_cache();
  EXPECT_EQ(reserved1 - alloc.stats().reserved_bytes[0].current, static_cast<int64_t>(pool));
  EXPECT_EQ(alloc.stats().allocated_bytes[0].current,
            allocated0 - static_cast<int64_t>(Allocator::round_size(kN * 4)));
  // The held block went back to the cache: the same stream may now reuse it.
  const uint64_t again = alloc.allocate(kN * 4, s.id());
  EXPECT_TRUE(alloc.owns(again));
  alloc.free(again);
}

TEST_F(Graph, TexelViewsInCapturedCommands) {
  // A GEMM taking the texel algorithm binds texel views of its operands' segments: replays
  // reuse them, and the segments stay reserved while the graph lives, even once their blocks
  // are freed and the cache is emptied (the views are baked into the captured commands).
  if (!dev().caps().texel_buffers) GTEST_SKIP() << "no texel buffers";
  Stream& s = dev().stream(0);
  Allocator& alloc = dev().allocator();
  GemmTuning saved = gemm_tuning();
  gemm_tuning().algo = GemmTuning::Algo::Texel;
  const int64_t m = 12, n = 20, k = 8;
  // x in a segment of its own: 1.2 MB comes from a 20 MiB large-pool segment (allocator.h).
  // w and y come first, from the small pool: allocated after x they would take the idle rest
  // of x's segment (small requests use free large-pool space before reserving a segment).
  alloc.empty_cache();
  F32 w(s, k * n), y(s, m * n);
  auto x = std::make_unique<F32>(s, 300000);
  w.upload(ramp(k * n, 0.125f, -1.0f));
  auto host_product = [&](const std::vector<float>& xv) {
    std::vector<float> want(m * n, 0.0f), wv = ramp(k * n, 0.125f, -1.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += double(xv[i * k + p]) * wv[p * n + j];
        want[i * n + j] = static_cast<float>(acc);
      }
    return want;
  };
  auto record_product = [&] {
    Gemm g;
    g.m = m, g.n = n, g.k = k;
    g.a = GemmMatrix{x->address, DType::Float32, k, 1, 0};
    g.b = GemmMatrix{w.address, DType::Float32, n, 1, 0};
    g.c = GemmMatrix{y.address, DType::Float32, n, 1, 0};
    gemm(s, g);
    EXPECT_STREQ(last_gemm_algorithm(), "texel");
  };
  alloc.empty_cache();
  auto g = std::make_unique<CapturedGraph>();
  s.begin_capture(*g);
  record_product();
  s.end_capture();
  ASSERT_TRUE(g->valid());
  for (float shift : {0.5f, -2.0f}) {
    std::vector<float> xv = ramp(m * k, 0.25f, shift);
    xv.resize(x->n, 0.0f);
    x->upload(xv);
    g->replay(s);
    std::vector<float> got = y.download(), want = host_product(xv);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
  }
  // x's segment held only x: freed and emptied, it stays reserved while the graph lives.
  const int64_t with_x = alloc.stats().reserved_bytes[0].current;
  x.reset();
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes[0].current, with_x);
  g.reset();
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes[0].current, with_x - static_cast<int64_t>(20 * kMiB));
  gemm_tuning() = saved;
}

TEST_F(Graph, ThousandReplays) {
  Stream& s = dev().stream(0);
  constexpr int64_t n = 512;
  F32 x(s, n), y(s, n);
  std::vector<float> xv(n), zero(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) xv[i] = static_cast<float>(i % 7) - 3.0f;
  x.upload(xv);
  y.upload(zero);
  s.synchronize();
  CapturedGraph g;
  s.begin_capture(g);
  binary(s, "add", y.address, y.address, x.address, n, 1.0);  // y += x
  binary(s, "add", y.address, y.address, x.address, n, 1.0);  // y += x
  binary(s, "sub", y.address, y.address, x.address, n, 1.0);  // y -= x
  s.end_capture();
  ASSERT_EQ(g.command_count(), 3u);
  const uint64_t dispatches = Runtime::get().counters().dispatches.load();
  constexpr int kReplays = 1000;
  for (int k = 0; k < kReplays; ++k) g.replay(s);
  EXPECT_EQ(Runtime::get().counters().dispatches.load() - dispatches, 3u * kReplays);
  s.synchronize();
  std::vector<float> got = y.download();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], xv[i] * (kReplays + 1)) << i;
}

// Replays run as one secondary command buffer: eager commands around them must find their own
// pipeline and push constants again (the primary's bound state is undefined after it), and a
// graph destroyed while replays are pending frees its command buffer only once they completed.
TEST_F(Graph, EagerCommandsAroundReplaysAndGraphDestroyedWhilePending) {
  Stream& s = dev().stream(0);
  constexpr int64_t n = 256;
  F32 x(s, n), y(s, n);
  std::vector<float> xv(n);
  for (int64_t i = 0; i < n; ++i) xv[i] = static_cast<float>(i % 5) + 1.0f;
  x.upload(xv);
  y.upload(std::vector<float>(n, 0.0f));
  s.synchronize();
  auto g = std::make_unique<CapturedGraph>();
  s.begin_capture(*g);
  binary(s, "add", y.address, y.address, x.address, n, 1.0);  // y += x
  binary(s, "mul", y.address, y.address, x.address, n);       // y *= x
  s.end_capture();  // capture run: y = x * x
  binary(s, "mul", y.address, y.address, x.address, n);       // eager, same pipeline: y = x^3
  g->replay(s);                                                // y = (x^3 + x) * x
  binary(s, "add", y.address, y.address, x.address, n, 1.0);  // eager after the replay
  g->replay(s);
  g.reset();  // replays still pending
  binary(s, "add", y.address, y.address, x.address, n, 2.0);  // y += 2x
  s.synchronize();
  std::vector<float> got = y.download();
  for (int64_t i = 0; i < n; ++i) {
    const double v = xv[i];
    double want = v * v * v;
    want = (want + v) * v;
    want = want + v;
    want = (want + v) * v;
    want = want + 2.0 * v;
    ASSERT_EQ(got[i], static_cast<float>(want)) << i;
  }
}

TEST_F(Graph, DeviceErrorsAreReportedAfterReplay) {
  Stream& s = dev().stream(0);
  constexpr int64_t n = 8;
  F32 src(s, n), dst(s, n);
  const uint64_t idx = dev().allocator().allocate(n * 4, s.id());
  std::vector<float> sv(n);
  for (int64_t i = 0; i < n; ++i) sv[i] = 10.0f + static_cast<float>(i);
  src.upload(sv);
  auto upload_idx = [&](std::vector<int32_t> v) { s.copy_from_host(v.data(), idx, n * 4); };
  upload_idx({7, 6, 5, 4, 3, 2, 1, 0});
  s.synchronize();

  IndexProblem p;
  p.mode = IndexMode::Gather;
  p.ndim = 1;
  p.sizes[0] = n;
  p.dst = dst.op();
  p.dst_strides[0] = 1;
  p.src = src.op();
  p.src_strides[0] = 0;
  p.num_indices = 1;
  p.indices[0].values = {idx, DType::Int32};
  p.indices[0].strides[0] = 1;
  p.indices[0].size = n;
  p.indices[0].stride = 1;
  p.error_code = static_cast<uint32_t>(DeviceErrorCode::IndexOutOfBounds);
  CapturedGraph g;
  s.begin_capture(g);
  index(s, p);
  s.end_capture();
  s.synchronize();  // no error in the capture run

  upload_idx({0, 1, 2, 99, 4, 5, 6, 7});
  g.replay(s);
  EXPECT_THROW(s.synchronize(), IndexError);
  EXPECT_NO_THROW(s.synchronize());  // reported once

  upload_idx({1, 1, 2, 2, 3, 3, 0, 0});
  g.replay(s);
  std::vector<float> got = dst.download();
  const int want[] = {1, 1, 2, 2, 3, 3, 0, 0};
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], sv[want[i]]) << i;
  dev().allocator().free(idx);
}

// Not a test: host time per replayed command vs. per eager L2 launch (a 100-dispatch graph
// replayed 100 times, no wait inside the loop). Run with --gtest_also_run_disabled_tests.
TEST_F(Graph, DISABLED_ReplayHostTime) {
  Stream& s = dev().stream(0);
  constexpr int64_t n = 64;
  F32 x(s, n), y(s, n);
  x.upload(std::vector<float>(n, 1.0f));
  y.upload(std::vector<float>(n, 0.0f));
  s.synchronize();
  auto body = [&] {
    for (int k = 0; k < 100; ++k) binary(s, "add", y.address, y.address, x.address, n, 1.0);
  };
  CapturedGraph g;
  s.begin_capture(g);
  body();
  s.end_capture();
  ASSERT_EQ(g.command_count(), 100u);
  for (int k = 0; k < 3; ++k) g.replay(s);
  s.synchronize();
  double best_replay = 1e30, best_eager = 1e30;
  for (int trial = 0; trial < 3; ++trial) {
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 100; ++k) g.replay(s);
    auto t1 = std::chrono::steady_clock::now();
    s.synchronize();
    best_replay = std::min(best_replay, std::chrono::duration<double>(t1 - t0).count() / 10000);
    t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 100; ++k) body();
    t1 = std::chrono::steady_clock::now();
    s.synchronize();
    best_eager = std::min(best_eager, std::chrono::duration<double>(t1 - t0).count() / 10000);
  }
  std::vector<float> got = y.download();
  const float want = 100.0f * (1 + 3 + 300 + 300);
  for (float v : got) ASSERT_EQ(v, want);
  std::printf("[ replay ] %.3f us per replayed command; %.3f us per eager elementwise launch\n",
              best_replay * 1e6, best_eager * 1e6);
}

}  // namespace
