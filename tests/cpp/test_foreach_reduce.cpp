// L2 tests (GoogleTest) for kernels::foreach_reduce (shaders/foreach_reduce.comp): every
// transform, float32 and float64 accumulators, the shared-memory tree and the subgroup path,
// empty tensors and sizes around the chunk boundary, against host references in long double.
//
// Suite: ForeachReduceKernel. Fails when the validation layer reports an error during a test.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "host_reference.h"
#include "kernels/foreach_reduce.h"
#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace {

using namespace tvk;
using namespace tvk::kernels;
using namespace tvk_test;

class ForeachReduceKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Runtime::get().available())
      GTEST_SKIP() << "no Vulkan device: " << Runtime::get().unavailable_reason();
    errors_ = Runtime::get().validation_error_count();
    saved_ = tuning();
  }
  void TearDown() override {
    tuning() = saved_;
    EXPECT_EQ(Runtime::get().validation_error_count(), errors_) << "validation errors";
  }
  uint64_t errors_ = 0;
  Tuning saved_;
};

struct Case {
  const char* name;
  ReduceOp op;
  ReducePre pre;
  ReducePost post;
  double p;
};

V reference(const Case& c, const std::vector<V>& x) {
  V acc = c.op == ReduceOp::Sum ? 0 : (c.op == ReduceOp::Max ? -INFINITY : INFINITY);
  for (V v : x) {
    V t = v;
    switch (c.pre) {
      case ReducePre::Abs: t = std::fabs(v); break;
      case ReducePre::Square: t = v * v; break;
      case ReducePre::AbsPow: t = std::pow(std::fabs(v), static_cast<V>(c.p)); break;
      case ReducePre::NonZero: t = v != 0 ? 1 : 0; break;
      default: break;
    }
    if (c.op == ReduceOp::Sum) acc += t;
    else if (c.op == ReduceOp::Max) acc = std::max(acc, t);
    else acc = std::min(acc, t);
  }
  if (c.post == ReducePost::Sqrt) return std::sqrt(acc);
  if (c.post == ReducePost::Root) return std::pow(acc, 1 / static_cast<V>(c.p));
  return acc;
}

TEST_F(ForeachReduceKernel, EveryTransformBothCombinePaths) {
  const Case cases[] = {
      {"l2", ReduceOp::Sum, ReducePre::Square, ReducePost::Sqrt, 2},
      {"l1", ReduceOp::Sum, ReducePre::Abs, ReducePost::None, 1},
      {"l3", ReduceOp::Sum, ReducePre::AbsPow, ReducePost::Root, 3},
      {"l0", ReduceOp::Sum, ReducePre::NonZero, ReducePost::None, 0},
      {"linf", ReduceOp::Max, ReducePre::Abs, ReducePost::None, 0},
      {"l-inf", ReduceOp::Min, ReducePre::Abs, ReducePost::None, 0},
      {"max", ReduceOp::Max, ReducePre::None, ReducePost::None, 0},
      {"sum", ReduceOp::Sum, ReducePre::None, ReducePost::None, 0},
  };
  const std::vector<int64_t> sizes = {1, 5, 2047, 2048, 2049, 7000, 0, 300};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<std::vector<V>> values;
  for (int64_t n : sizes) {
    std::vector<V> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = i % 5 == 0 ? 0 : static_cast<float>(dist(rng));
    values.push_back(v);
  }
  for (ComputeKind acc : {ComputeKind::Float32, ComputeKind::Float64}) {
    if (acc == ComputeKind::Float64 && !dev().caps().float64) continue;
    const DType dt = acc == ComputeKind::Float64 ? DType::Float64 : DType::Float32;
    for (bool subgroups : {true, false}) {
      tuning().reduce_subgroups = subgroups;
      for (const Case& c : cases) {
        const bool no_identity = c.op != ReduceOp::Sum;
        std::vector<std::unique_ptr<Buffer>> in, out;
        std::vector<ForeachReduceEntry> entries;
        std::vector<size_t> used;
        for (size_t j = 0; j < sizes.size(); ++j) {
          if (no_identity && sizes[j] == 0) continue;
          in.push_back(std::make_unique<Buffer>(dt, values[j]));
          out.push_back(std::make_unique<Buffer>(dt, 1));
          entries.push_back({in.back()->address, out.back()->address, sizes[j]});
          used.push_back(j);
        }
        foreach_reduce(stream(), c.op, acc, entries.data(), static_cast<int>(entries.size()), dt,
                       dt, c.pre, c.post, c.p);
        for (size_t k = 0; k < used.size(); ++k) {
          const V expected = reference(c, values[used[k]]);
          const V got = out[k]->download()[0];
          const V tol = (acc == ComputeKind::Float64 ? 1e-12 : 2e-5) * (1 + std::fabs(expected));
          EXPECT_NEAR(static_cast<double>(got), static_cast<double>(expected),
                      static_cast<double>(tol))
              << c.name << " size " << sizes[used[k]] << " subgroups " << subgroups;
        }
      }
    }
  }
}

TEST_F(ForeachReduceKernel, NaNPropagatesThroughMaxAndMin) {
  for (bool subgroups : {true, false}) {
    tuning().reduce_subgroups = subgroups;
    std::vector<V> v(5000, 1.0);
    v[3333] = NAN;
    Buffer in(DType::Float32, v), out_max(DType::Float32, 1), out_min(DType::Float32, 1);
    ForeachReduceEntry e{in.address, out_max.address, 5000};
    foreach_reduce(stream(), ReduceOp::Max, ComputeKind::Float32, &e, 1, DType::Float32,
                   DType::Float32, ReducePre::None, ReducePost::None);
    e.output = out_min.address;
    foreach_reduce(stream(), ReduceOp::Min, ComputeKind::Float32, &e, 1, DType::Float32,
                   DType::Float32, ReducePre::Abs, ReducePost::None);
    EXPECT_TRUE(std::isnan(static_cast<double>(out_max.download()[0])));
    EXPECT_TRUE(std::isnan(static_cast<double>(out_min.download()[0])));
  }
}

TEST_F(ForeachReduceKernel, RejectsBadArguments) {
  Buffer in(DType::Float32, 4), out(DType::Float32, 1);
  ForeachReduceEntry e{in.address, out.address, 4};
  EXPECT_THROW(foreach_reduce(stream(), ReduceOp::Prod, ComputeKind::Float32, &e, 1,
                              DType::Float32, DType::Float32, ReducePre::None, ReducePost::None),
               std::invalid_argument);
  EXPECT_THROW(foreach_reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, &e, 1,
                              DType::Float64, DType::Float32, ReducePre::None, ReducePost::None),
               std::invalid_argument);
  EXPECT_THROW(foreach_reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, &e, 1,
                              DType::Float32, DType::Float32, ReducePre::SquaredDeviation,
                              ReducePost::None),
               std::invalid_argument);
  e.output = 0;
  EXPECT_THROW(foreach_reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, &e, 1,
                              DType::Float32, DType::Float32, ReducePre::None, ReducePost::None),
               std::invalid_argument);
}

}  // namespace
