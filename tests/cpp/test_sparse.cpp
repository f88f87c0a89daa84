// L2 tests (GoogleTest) for kernels::spmm (shaders/sparse.comp): CSR sparse @ dense for every
// floating storage dtype (float32 math) and float64, rows with no / one / many nonzeros, widths
// around the workgroup size, nnz == 0, and argument validation, against a host reference.
//
// Suite: SparseKernel. Fails when the validation layer reports an error during a test.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "host_reference.h"
#include "kernels/launch.h"
#include "kernels/sparse.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace {

using namespace tvk;
using namespace tvk::kernels;
using namespace tvk_test;

class SparseKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Runtime::get().available())
      GTEST_SKIP() << "no Vulkan device: " << Runtime::get().unavailable_reason();
    errors_ = Runtime::get().validation_error_count();
  }
  void TearDown() override {
    EXPECT_EQ(Runtime::get().validation_error_count(), errors_) << "validation errors";
  }
  uint64_t errors_ = 0;
};

// A random CSR matrix (rows x k) with row r holding (r * 7) % 5 nonzeros (0 for some rows).
struct Csr {
  std::vector<V> row_ptr, cols, values;
};

Csr random_csr(int64_t rows, int64_t k, DType dt, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-2, 2);
  Csr c;
  c.row_ptr.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t count = (r * 7) % 5;
    for (int64_t i = 0; i < count; ++i) {
      c.cols.push_back(static_cast<V>((r * 3 + i * 11) % k));
      c.values.push_back(cast_to(dt, static_cast<V>(dist(rng))));
    }
    c.row_ptr.push_back(static_cast<V>(c.cols.size()));
  }
  return c;
}

TEST_F(SparseKernel, MatchesHostReferenceForEveryDtype) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-2, 2);
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    if (dt == DType::Float64 && !dev().caps().float64) continue;
    const ComputeKind kind = dt == DType::Float64 ? ComputeKind::Float64 : ComputeKind::Float32;
    for (int64_t n : {1, 3, 127, 128, 129, 300}) {
      const int64_t rows = 11, k = 9;
      const Csr c = random_csr(rows, k, dt, rng);
      std::vector<V> dense(k * n);
      for (V& x : dense) x = cast_to(dt, static_cast<V>(dist(rng)));
      Buffer row_ptr(DType::Int64, c.row_ptr), cols(DType::Int64, c.cols), values(dt, c.values);
      Buffer b(dt, dense), out(dt, rows * n);
      Spmm p;
      p.kind = kind;
      p.rows = rows;
      p.k = k;
      p.n = n;
      p.nnz = static_cast<int64_t>(c.cols.size());
      p.row_ptr = row_ptr.at();
      p.cols = cols.at();
      p.values = values.at();
      p.dense = b.at();
      p.out = out.at();
      spmm(stream(), p);
      const std::vector<V> got = out.download();
      const double tol = dt == DType::Float64 ? 1e-12 : (dt == DType::Float32 ? 1e-5 : 2e-2);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) {
          V want = 0;
          for (auto q = static_cast<int64_t>(c.row_ptr[r]); q < static_cast<int64_t>(c.row_ptr[r + 1]); ++q)
            want += c.values[q] * dense[static_cast<int64_t>(c.cols[q]) * n + j];
          ASSERT_TRUE(close(got[r * n + j], cast_to(dt, want), tol, tol))
              << "dtype " << static_cast<int>(dt) << " n " << n << " at (" << r << ", " << j << ")";
        }
    }
  }
}

TEST_F(SparseKernel, NoNonzerosWritesZeros) {
  const int64_t rows = 4, n = 5;
  Buffer row_ptr(DType::Int64, std::vector<V>(rows + 1, 0)), b(DType::Float32, 3 * n);
  Buffer out(DType::Float32, std::vector<V>(rows * n, 7));
  Spmm p;
  p.rows = rows;
  p.k = 3;
  p.n = n;
  p.row_ptr = row_ptr.at();
  p.dense = b.at();
  p.out = out.at();
  spmm(stream(), p);
  for (V v : out.download()) EXPECT_EQ(static_cast<double>(v), 0.0);
}

TEST_F(SparseKernel, RejectsBadArguments) {
  Buffer row_ptr(DType::Int64, std::vector<V>{0, 1}), cols(DType::Int64, std::vector<V>{0});
  Buffer values(DType::Float32, 1), b(DType::Float32, 2), out(DType::Float32, 2), f64(DType::Float64, 2);
  Spmm p;
  p.rows = 1;
  p.k = 1;
  p.n = 2;
  p.nnz = 1;
  p.row_ptr = row_ptr.at();
  p.cols = cols.at();
  p.values = values.at();
  p.dense = b.at();
  p.out = out.at();
  spmm(stream(), p);  // valid
  Spmm bad = p;
  bad.kind = ComputeKind::Int64;
  EXPECT_THROW(spmm(stream(), bad), std::invalid_argument);
  bad = p;
  bad.cols = values.at();  // float column indices
  EXPECT_THROW(spmm(stream(), bad), std::invalid_argument);
  bad = p;
  bad.out = f64.at();  // float64 operand with the Float32 kind
  EXPECT_THROW(spmm(stream(), bad), std::invalid_argument);
  bad = p;
  bad.n = -1;
  EXPECT_THROW(spmm(stream(), bad), std::invalid_argument);
  bad = p;
  bad.rows = 1 << 20;
  bad.n = 1 << 12;  // 2^32 outputs
  EXPECT_THROW(spmm(stream(), bad), std::invalid_argument);
  bad = p;
  bad.out.address = 0;
  EXPECT_THROW(spmm(stream(), bad), std::invalid_argument);
}

}  // namespace
