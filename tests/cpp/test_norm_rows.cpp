// L2 kernel tests (GoogleTest) for the row strategies of the normalization family
// (src/kernels/norm.cpp): layer norm and RMS norm forward and input gradient with every
// strategy (Workgroup, Thread, Registers, SubgroupRow, Auto), rows below, at and above the
// register capacities, aligned (vector accesses) and misaligned (scalar) operands, float32 /
// float16 / bfloat16 mixes, with and without subgroups, against host references in long
// double.
//
// Suite: NormRowKernel (--gtest_filter='NormRow*'). Every test fails when the validation
// layer (TORCH_VK_VALIDATION=1) reports an error during it.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "host_reference.h"
#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "kernels/norm.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace {

using namespace tvk;
using namespace tvk::kernels;
using namespace tvk_test;

class NormRowKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Runtime::get().available())
      GTEST_SKIP() << "no Vulkan device: " << Runtime::get().unavailable_reason();
    errors_ = Runtime::get().validation_error_count();
    saved_ = tuning();
    saved_norm_ = norm_tuning();
  }
  void TearDown() override {
    tuning() = saved_;
    norm_tuning() = saved_norm_;
    if (!Runtime::get().available()) return;
    stream().synchronize();
    if (Runtime::get().validation_error_count() != errors_)
      for (const auto& m : Runtime::get().validation_messages()) ADD_FAILURE() << m;
  }
  uint64_t errors_ = 0;
  Tuning saved_;
  NormTuning saved_norm_;
};

std::vector<V> random_row_values(size_t n, DType dt, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(lo, hi);
  std::vector<V> v(n);
  for (auto& x : v) x = cast_to(dt, uni(rng));
  return v;
}

// `values` after `offset` zeros, then one sentinel element (must stay untouched).
constexpr V kSentinel = 7;
std::vector<V> padded(const std::vector<V>& values, int64_t offset, V tail) {
  std::vector<V> r(offset, 0);
  r.insert(r.end(), values.begin(), values.end());
  r.push_back(tail);
  return r;
}

struct RowCase {
  int64_t rows, n;
  DType x_dt, out_dt, param_dt;
  int64_t offset;  // elements from each buffer's start (1: misaligned for vector accesses)
  bool center;     // layer norm (true) or RMS norm (false)
  bool affine;
};

std::string describe(const RowCase& c) {
  return std::to_string(c.rows) + "x" + std::to_string(c.n) + " x " + dtype_name(c.x_dt) + " out " +
         dtype_name(c.out_dt) + " params " + dtype_name(c.param_dt) + " offset " + std::to_string(c.offset) +
         (c.center ? " layer" : " rms") + (c.affine ? " affine" : "");
}

double tolerance(DType dt) { return dt == DType::BFloat16 ? 1e-2 : dt == DType::Float16 ? 2e-3 : 3e-5; }

// Forward and input gradient of one case against the long-double reference: y, mean, rstd,
// then dx from the device's saved statistics (the reference uses its own).
void run_case(const RowCase& c) {
  SCOPED_TRACE(describe(c));
  const int64_t M = c.rows, N = c.n, off = c.offset;
  const double eps = 1e-5;
  auto x = random_row_values(M * N, c.x_dt, -3, 5, uint32_t(M * N + off));
  auto w = random_row_values(N, c.param_dt, 0.5, 1.5, 11);
  auto b = random_row_values(N, c.param_dt, -1, 1, 12);
  auto dy = random_row_values(M * N, c.x_dt, -1, 1, 13);

  // Reference statistics and outputs.
  std::vector<V> mean(M), rstd(M), y(M * N), dx(M * N);
  for (int64_t r = 0; r < M; ++r) {
    V m = 0, v = 0;
    if (c.center) {
      for (int64_t i = 0; i < N; ++i) m += x[r * N + i];
      m /= N;
    }
    for (int64_t i = 0; i < N; ++i) v += (x[r * N + i] - m) * (x[r * N + i] - m);
    v /= N;
    mean[r] = m;
    rstd[r] = 1 / std::sqrt(v + eps);
    V s1 = 0, s2 = 0;
    for (int64_t i = 0; i < N; ++i) {
      const V xh = (x[r * N + i] - m) * rstd[r];
      const V wi = c.affine ? w[i] : 1, bi = c.affine && c.center ? b[i] : 0;  // RMS norm: no bias
      y[r * N + i] = xh * wi + bi;
      const V g = dy[r * N + i] * wi;
      s1 += g;
      s2 += g * xh;
    }
    for (int64_t i = 0; i < N; ++i) {
      const V xh = (x[r * N + i] - m) * rstd[r];
      const V g = dy[r * N + i] * (c.affine ? w[i] : 1);
      dx[r * N + i] = rstd[r] * (g - (c.center ? s1 / N : 0) - xh * s2 / N);
    }
  }

  Buffer xb(c.x_dt, padded(x, off, 0)), wb(c.param_dt, padded(w, off, 0)), bb(c.param_dt, padded(b, off, 0));
  Buffer yb(c.out_dt, padded(std::vector<V>(M * N, 0), off, kSentinel));
  Buffer meanb(DType::Float32, M), rstdb(DType::Float32, M);
  NormForward f;
  f.shape = {NormLayout::Row, 1, M, N};
  f.center = c.center;
  f.eps = eps;
  f.x = xb.at(off);
  f.out = yb.at(off);
  if (c.affine) {
    f.weight = wb.at(off);
    if (c.center) f.bias = bb.at(off);
  }
  f.save_mean = meanb.at();
  f.save_rstd = rstdb.at();
  norm_forward(stream(), f);
  auto got_y = yb.download();
  auto got_mean = meanb.download(), got_rstd = rstdb.download();
  for (int64_t r = 0; r < M; ++r) {
    if (c.center) ASSERT_TRUE(close(got_mean[r], mean[r], 1e-5, 1e-5)) << "mean " << r;
    ASSERT_TRUE(close(got_rstd[r], rstd[r], 1e-5, 0)) << "rstd " << r;
  }
  const double tol = tolerance(c.out_dt);
  ASSERT_EQ(got_y.back(), kSentinel) << "y after the output";
  for (int64_t k = 0; k < off; ++k) ASSERT_EQ(got_y[k], 0) << "y before the output";
  for (int64_t k = 0; k < M * N; ++k)
    ASSERT_TRUE(close(got_y[off + k], cast_to(c.out_dt, y[k]), tol, tol)) << "y " << k;

  Buffer dyb(c.x_dt, padded(dy, off, 0));
  Buffer dxb(c.out_dt, padded(std::vector<V>(M * N, 0), off, kSentinel));
  NormBackward bw;
  bw.shape = f.shape;
  bw.center = c.center;
  bw.eps = eps;
  bw.x = xb.at(off);
  bw.grad_out = dyb.at(off);
  bw.grad_in = dxb.at(off);
  if (c.affine) bw.weight = wb.at(off);
  bw.mean = meanb.at();
  bw.rstd = rstdb.at();
  norm_backward(stream(), bw);
  auto got_dx = dxb.download();
  ASSERT_EQ(got_dx.back(), kSentinel) << "dx after the output";
  for (int64_t k = 0; k < M * N; ++k)
    ASSERT_TRUE(close(got_dx[off + k], cast_to(c.out_dt, dx[k]), tol, 5 * tol)) << "dx " << k;
}

TEST_F(NormRowKernel, EveryStrategyShapeAndLayout) {
  using S = NormTuning::Strategy;
  // Rows below, at and above 16 x subgroup size (lavapipe: 8) and 16 x the workgroup,
  // multiples of 4 and not, one row and many.
  const std::vector<std::array<int64_t, 2>> shapes = {{3, 64}, {5, 66}, {2, 128}, {4, 129}, {1, 700},
                                                      {2, 4100}, {40, 48}, {3, 1}};
  for (S strategy : {S::Auto, S::Workgroup, S::Thread, S::Registers, S::SubgroupRow}) {
    for (bool subgroups : {true, false}) {
      norm_tuning().strategy = strategy;
      norm_tuning().subgroups = subgroups;
      tuning().max_workgroups = subgroups ? 65535 : 2;  // few workgroups: the row loops
      for (auto [rows, n] : shapes)
        for (bool center : {true, false}) {
          SCOPED_TRACE("strategy " + std::to_string(int(strategy)) + " subgroups " + std::to_string(subgroups));
          run_case({rows, n, DType::Float32, DType::Float32, DType::Float32, 0, center, true});
        }
    }
  }
}

TEST_F(NormRowKernel, RegisterStrategiesDtypesAndAlignment) {
  using S = NormTuning::Strategy;
  const DType dts[] = {DType::Float32, DType::Float16, DType::BFloat16};
  for (S strategy : {S::Registers, S::SubgroupRow}) {
    for (bool subgroups : {true, false}) {
      norm_tuning().strategy = strategy;
      norm_tuning().subgroups = subgroups;
      for (DType x_dt : dts)
        for (DType out_dt : {x_dt, DType::Float32})
          for (int64_t offset : {0, 1})
            for (bool affine : {true, false}) {
              SCOPED_TRACE("strategy " + std::to_string(int(strategy)) + " subgroups " + std::to_string(subgroups));
              // Mixed dtypes read them from the push constants (fewer pipelines to compile on
              // lavapipe); one dtype throughout is specialized.
              tuning().specialize_dtypes = out_dt == x_dt && x_dt == DType::Float32;
              run_case({3, 96, x_dt, out_dt, DType::Float32, offset, true, affine});
              run_case({2, 50, x_dt, out_dt, x_dt, offset, false, affine});
            }
    }
  }
  // Small workgroups: rows beyond 16 x 32 take the streaming loops.
  norm_tuning().strategy = S::Registers;
  norm_tuning().max_workgroup = 32;
  run_case({2, 700, DType::Float32, DType::Float32, DType::Float32, 0, true, true});
  run_case({2, 700, DType::Float16, DType::Float16, DType::Float32, 1, false, true});
}

// The fused residual add: h = x + residual (rounded once to the dtype) is stored exactly and
// normalized, in every strategy, vector and scalar paths, 16- and 32-bit.
TEST_F(NormRowKernel, ResidualAddEveryStrategy) {
  using S = NormTuning::Strategy;
  for (S strategy : {S::Workgroup, S::Thread, S::Registers, S::SubgroupRow}) {
    norm_tuning().strategy = strategy;
    for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16})
      for (auto [M, N] : std::vector<std::array<int64_t, 2>>{{3, 64}, {2, 37}, {1, 700}}) {
        SCOPED_TRACE("strategy " + std::to_string(int(strategy)) + " " + dtype_name(dt) + " " +
                     std::to_string(M) + "x" + std::to_string(N));
        tuning().specialize_dtypes = dt == DType::Float32;  // fewer pipelines to compile
        auto x = random_row_values(M * N, dt, -3, 3, 21), r = random_row_values(M * N, dt, -2, 2, 22);
        auto w = random_row_values(N, dt, 0.5, 1.5, 23), b = random_row_values(N, dt, -1, 1, 24);
        std::vector<V> h(M * N), y(M * N);
        for (int64_t k = 0; k < M * N; ++k) h[k] = cast_to(dt, x[k] + r[k]);
        for (int64_t row = 0; row < M; ++row) {
          V mean = 0, var = 0;
          for (int64_t i = 0; i < N; ++i) mean += h[row * N + i];
          mean /= N;
          for (int64_t i = 0; i < N; ++i) var += (h[row * N + i] - mean) * (h[row * N + i] - mean);
          const V rstd = 1 / std::sqrt(var / N + 1e-5);
          for (int64_t i = 0; i < N; ++i) y[row * N + i] = (h[row * N + i] - mean) * rstd * w[i] + b[i];
        }
        Buffer xb(dt, x), rb(dt, r), wb(dt, w), bb(dt, b), hb(dt, M * N), yb(dt, M * N);
        Buffer rstdb(DType::Float32, M);
        NormForward f;
        f.shape = {NormLayout::Row, 1, M, N};
        f.x = xb.at(), f.out = yb.at(), f.weight = wb.at(), f.bias = bb.at();
        f.save_rstd = rstdb.at();
        f.residual = rb.at(), f.sum_out = hb.at();
        norm_forward(stream(), f);
        auto got_h = hb.download(), got_y = yb.download();
        const double tol = tolerance(dt);
        for (int64_t k = 0; k < M * N; ++k) {
          ASSERT_EQ(got_h[k], h[k]) << "h " << k;
          ASSERT_TRUE(close(got_y[k], cast_to(dt, y[k]), tol, tol)) << "y " << k;
        }
      }
  }
}

// A constant row has mean exactly x0 and y exactly bias in every strategy (the shifted sums).
TEST_F(NormRowKernel, ConstantRowsAreExact) {
  using S = NormTuning::Strategy;
  for (S strategy : {S::Workgroup, S::Registers, S::SubgroupRow}) {
    norm_tuning().strategy = strategy;
    const int64_t M = 2, N = 100;
    std::vector<V> x(M * N, 0.1f);
    Buffer xb(DType::Float32, x), yb(DType::Float32, M * N), rstdb(DType::Float32, M);
    NormForward f;
    f.shape = {NormLayout::Row, 1, M, N};
    f.x = xb.at();
    f.out = yb.at();
    f.save_rstd = rstdb.at();
    norm_forward(stream(), f);
    for (V v : yb.download()) ASSERT_EQ(v, 0) << "strategy " << int(strategy);
  }
}

}  // namespace
