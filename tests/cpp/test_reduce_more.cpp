// L2 kernel tests (GoogleTest) for the arg reductions, the transformed reductions
// (ReduceExtra: norms, variance about a center, logsumexp, all / any), the softmax family and
// the scans (cumsum / cumprod),
// against host references computed here in long double, never against earlier kernel outputs.
//
// Suites: ArgReduceKernel, ReduceExtraKernel, SoftmaxKernel, ScanKernel
// (--gtest_filter='*Kernel*').
// Every test fails when the validation layer (TORCH_VK_VALIDATION=1) reports an error during it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "host_reference.h"
#include "kernels/launch.h"
#include "kernels/scan.h"
#include "kernels/softmax.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace {

using namespace tvk;
using namespace tvk::kernels;
using namespace tvk_test;

// ---------------------------------------------------------------- host helpers

// Rounds to the storage dtype (float types only, plus int64 / int32 for index buffers).
V round_to(DType t, V v) {
  switch (t) {
    case DType::Float16: return static_cast<float>(static_cast<_Float16>(static_cast<float>(v)));
    case DType::BFloat16: return cast_to(DType::BFloat16, v);
    case DType::Float32: return static_cast<float>(v);
    case DType::Float64: return static_cast<double>(v);
    default: return v;
  }
}


class KernelFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Runtime::get().available())
      GTEST_SKIP() << "no Vulkan device: " << Runtime::get().unavailable_reason();
    errors_ = Runtime::get().validation_error_count();
    saved_ = tuning();
    saved_softmax_ = softmax_tuning();
    saved_scan_ = scan_tuning();
  }
  void TearDown() override {
    tuning() = saved_;
    softmax_tuning() = saved_softmax_;
    scan_tuning() = saved_scan_;
    if (!Runtime::get().available()) return;
    stream().synchronize();
    if (Runtime::get().validation_error_count() != errors_)
      for (const auto& m : Runtime::get().validation_messages()) ADD_FAILURE() << m;
  }
  bool has_f64() { return dev().caps().float64; }
  uint64_t errors_ = 0;
  Tuning saved_;
  SoftmaxTuning saved_softmax_;
  ScanTuning saved_scan_;
};
class ArgReduceKernel : public KernelFixture {};
class ReduceExtraKernel : public KernelFixture {};
class SoftmaxKernel : public KernelFixture {};
class ScanKernel : public KernelFixture {};

// A row-major input of sizes `shape` (outermost first) reduced over `reduced_dims`: the
// kernel geometry (dim 0 fastest, contiguous outputs) and per-output input offsets.
struct Layout {
  ReduceGeometry g;
  int64_t out_numel = 1, red_numel = 1;
  std::vector<int64_t> base;               // input offset of each output
  std::vector<int64_t> red_off;            // input offset of each reduced index (linear r)
};

Layout make_layout(const std::vector<int64_t>& shape, const std::vector<int>& reduced_dims,
                   int64_t index_stride = 1) {
  Layout l;
  int nd = int(shape.size());
  std::vector<int64_t> strides(nd);
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; --d) strides[d] = s, s *= shape[d];
  int64_t ostride = 1;
  for (int d = nd - 1; d >= 0; --d) {
    bool r = std::count(reduced_dims.begin(), reduced_dims.end(), d) > 0;
    Geometry& geo = r ? l.g.reduced : l.g.out;
    int i = geo.ndim++;
    geo.sizes[i] = shape[d];
    geo.strides[1][i] = strides[d];
    if (!r) {
      geo.strides[0][i] = ostride;
      geo.strides[2][i] = ostride * index_stride;
      ostride *= shape[d];
      l.out_numel *= shape[d];
    } else {
      l.red_numel *= shape[d];
    }
  }
  auto offsets = [](const Geometry& geo, int64_t n) {
    std::vector<int64_t> v(n);
    for (int64_t k = 0; k < n; ++k) {
      int64_t off = 0, rem = k;
      for (int i = 0; i < geo.ndim; ++i) off += (rem % geo.sizes[i]) * geo.strides[1][i], rem /= geo.sizes[i];
      v[k] = off;
    }
    return v;
  };
  l.base = offsets(l.g.out, l.out_numel);
  l.red_off = offsets(l.g.reduced, l.red_numel);
  return l;
}

std::vector<V> random_values(size_t n, DType dt, double lo, double hi, uint32_t seed, int levels = 0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(lo, hi);
  std::vector<V> v(n);
  for (auto& x : v) {
    double u = uni(rng);
    if (levels > 0) u = std::floor(u * levels) / levels;  // few distinct values: many ties
    const bool integral = dt != DType::Float16 && dt != DType::BFloat16 && dt != DType::Float32 && dt != DType::Float64;
    x = round_to(dt, integral ? std::round(u) : u);
  }
  return v;
}

using S = Tuning::ReduceStrategy;

// ---------------------------------------------------------------- arg reductions

void run_arg(ReduceOp op, ComputeKind acc, const std::vector<int64_t>& shape,
             const std::vector<int>& dims, DType dt, const std::vector<V>& in,
             bool with_values = true, int64_t index_stride = 1) {
  Layout l = make_layout(shape, dims, index_stride);
  Buffer src(dt, in), vals(dt, l.out_numel), idx(DType::Int64, l.out_numel * index_stride);
  Operand values = with_values ? vals.at() : Operand{0, dt};
  arg_reduce(stream(), op, acc, l.out_numel, l.red_numel, l.g, values, idx.at(), src.at());
  auto got_v = vals.download();
  auto got_i = idx.download();
  for (int64_t o = 0; o < l.out_numel; ++o) {
    V best = 0;
    int64_t bi = -1;
    for (int64_t r = 0; r < l.red_numel; ++r) {
      V x = in[l.base[o] + l.red_off[r]];
      bool take = bi < 0 || (std::isnan(x) && !std::isnan(best)) ||
                  (!std::isnan(best) && (op == ReduceOp::Max ? x > best : x < best));
      if (take) best = x, bi = r;
    }
    ASSERT_EQ(int64_t(got_i[o * index_stride]), bi) << "output " << o;
    if (with_values) ASSERT_TRUE(close(got_v[o], best, 0, 0)) << "output " << o;
  }
}

TEST_F(ArgReduceKernel, AllDimsAllStrategiesWithTiesAndNaN) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int>>> cases = {
      {{6, 5, 40}, {2}}, {{40, 5, 6}, {0}}, {{6, 40, 5}, {1}}, {{6, 5, 40}, {0, 1, 2}}, {{7, 9, 11}, {0, 2}}};
  auto in = random_values(1200, DType::Float32, -2, 2, 3, 4);
  auto with_nan = in;
  for (size_t i = 5; i < with_nan.size(); i += 97) with_nan[i] = NAN;
  for (S strategy : {S::Auto, S::Workgroup, S::Thread, S::Split}) {
    for (bool subgroups : {true, false}) {
      tuning().reduce_strategy = strategy;
      tuning().reduce_subgroups = subgroups;
      tuning().reduce_split_chunk = 16;
      tuning().specialize_dtypes = subgroups;
      tuning().max_workgroups = subgroups ? 65535 : 5;
      for (const auto& [shape, dims] : cases) {
        for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
          for (const auto* data : {&in, &with_nan}) {
            SCOPED_TRACE("strategy " + std::to_string(int(strategy)) + " subgroups " +
                         std::to_string(subgroups) + " op " + std::to_string(int(op)) + " ndims " +
                         std::to_string(dims.size()) + (data == &in ? "" : " nan"));
            std::vector<V> x(data->begin(), data->begin() + shape[0] * shape[1] * shape[2]);
            run_arg(op, ComputeKind::Float32, shape, dims, DType::Float32, x);
          }
        }
      }
    }
  }
}

TEST_F(ArgReduceKernel, LongRowsIntegersHalfAndStridedIndices) {
  // One long row (split under Auto) whose maximum appears twice, far apart.
  auto big = random_values(200000, DType::Float32, -1, 1, 4);
  big[150000] = 5;
  big[190000] = 5;
  big[7] = -5;
  run_arg(ReduceOp::Max, ComputeKind::Float32, {200000}, {0}, DType::Float32, big);
  run_arg(ReduceOp::Min, ComputeKind::Float32, {200000}, {0}, DType::Float32, big, false);
  big[180000] = NAN;
  run_arg(ReduceOp::Min, ComputeKind::Float32, {200000}, {0}, DType::Float32, big);
  // int64 beyond 2^53 (exact comparisons in the int64 accumulator).
  std::vector<V> i64 = {V(INT64_MAX - 3), V(INT64_MAX - 1), V(INT64_MIN), V(INT64_MAX - 1), V(0), V(INT64_MIN)};
  run_arg(ReduceOp::Max, ComputeKind::Int64, {2, 3}, {1}, DType::Int64, i64);
  run_arg(ReduceOp::Min, ComputeKind::Int64, {6}, {0}, DType::Int64, i64);
  auto h = random_values(3 * 300, DType::Float16, -4, 4, 5, 8);
  run_arg(ReduceOp::Max, ComputeKind::Float32, {3, 300}, {1}, DType::Float16, h, true, 3);
  // Many outputs with short rows (thread strategy), outputs with a strided index tensor.
  auto many = random_values(5000 * 3, DType::Float32, 0, 1, 6, 2);
  run_arg(ReduceOp::Min, ComputeKind::Float32, {5000, 3}, {1}, DType::Float32, many, true, 2);
  run_arg(ReduceOp::Max, ComputeKind::Float32, {3, 5000}, {0}, DType::Float32, many);
  if (has_f64()) {
    auto d = random_values(4000, DType::Float64, -1, 1, 7);
    run_arg(ReduceOp::Max, ComputeKind::Float64, {4, 1000}, {1}, DType::Float64, d);
  }
}

TEST_F(ArgReduceKernel, InvalidArguments) {
  Buffer x(DType::Float32, 8), v(DType::Float32, 1), i(DType::Int64, 1), i32(DType::Int32, 1);
  Layout l = make_layout({8}, {0});
  EXPECT_THROW(arg_reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, 1, 8, l.g, v.at(), i.at(), x.at()), std::invalid_argument);
  EXPECT_THROW(arg_reduce(stream(), ReduceOp::Max, ComputeKind::Float32, 1, 8, l.g, v.at(), i32.at(), x.at()), std::invalid_argument);
  EXPECT_THROW(arg_reduce(stream(), ReduceOp::Max, ComputeKind::Float32, 1, 7, l.g, v.at(), i.at(), x.at()), std::invalid_argument);
  Layout empty = make_layout({0}, {0});
  EXPECT_THROW(arg_reduce(stream(), ReduceOp::Max, ComputeKind::Float32, 1, 0, empty.g, v.at(), i.at(), x.at()), std::invalid_argument);
  Layout none = make_layout({0, 4}, {1});
  EXPECT_NO_THROW(arg_reduce(stream(), ReduceOp::Max, ComputeKind::Float32, 0, 4, none.g, v.at(), i.at(), x.at()));
}

// ---------------------------------------------------------------- transformed reductions

struct ExtraCase {
  const char* name;
  ReduceOp op;
  ReducePre pre;
  ReducePost post;
  double p;
  int center;  // 0: none, 1: mean of the row, 2: max of the row
};

V ref_extra(const ExtraCase& c, const std::vector<V>& xs, V scale) {
  V center = 0;
  if (c.center == 1) {
    for (V x : xs) center += x;
    center /= xs.empty() ? 1 : xs.size();
    center = static_cast<float>(center);
  } else if (c.center == 2) {
    center = -INFINITY;
    for (V x : xs) center = std::isnan(x) || std::isnan(center) ? NAN : std::max(center, x);
  }
  V cprime = std::isinf(center) ? 0 : center;
  V acc = c.op == ReduceOp::Sum ? 0 : c.op == ReduceOp::Prod ? 1 : c.op == ReduceOp::Max ? -INFINITY : INFINITY;
  bool nan = false;
  for (V x : xs) {
    V y = x;
    switch (c.pre) {
      case ReducePre::None: break;
      case ReducePre::Abs: y = std::fabs(x); break;
      case ReducePre::Square: y = x * x; break;
      case ReducePre::AbsPow: y = std::pow(std::fabs(x), V(c.p)); break;
      case ReducePre::SquaredDeviation: y = (x - center) * (x - center); break;
      case ReducePre::ExpDeviation: y = std::exp(x - cprime); break;
      case ReducePre::NonZero: y = x != 0 || std::isnan(x) ? 1 : 0; break;
    }
    nan |= std::isnan(y);
    if (c.op == ReduceOp::Sum) acc += y;
    else if (c.op == ReduceOp::Prod) acc *= y;
    else if (c.op == ReduceOp::Max) acc = std::max(acc, y);
    else acc = std::min(acc, y);
  }
  if (nan) acc = NAN;
  V v = acc * scale;
  switch (c.post) {
    case ReducePost::None: return v;
    case ReducePost::Sqrt: return std::sqrt(v);
    case ReducePost::Root: return std::pow(v, 1 / V(c.p));
    case ReducePost::LogPlusCenter: return std::log(v) + cprime;
    case ReducePost::Truth: return v > 0 ? 1 : 0;
  }
  return v;
}

void run_extra(const ExtraCase& c, const std::vector<int64_t>& shape, const std::vector<int>& dims,
               const std::vector<V>& in, double scale, double rtol, DType out_dt = DType::Float32) {
  Layout l = make_layout(shape, dims);
  std::vector<std::vector<V>> rows(l.out_numel);
  for (int64_t o = 0; o < l.out_numel; ++o)
    for (int64_t r = 0; r < l.red_numel; ++r) rows[o].push_back(in[l.base[o] + l.red_off[r]]);
  std::vector<V> centers(l.out_numel, 0);
  for (int64_t o = 0; o < l.out_numel; ++o) {
    if (c.center == 1) centers[o] = ref_extra({"", ReduceOp::Sum, ReducePre::None, ReducePost::None, 0, 0}, rows[o], 1.0L / rows[o].size());
    if (c.center == 2) centers[o] = ref_extra({"", ReduceOp::Max, ReducePre::None, ReducePost::None, 0, 0}, rows[o], 1);
  }
  Buffer src(DType::Float32, in), dst(out_dt, l.out_numel), center(DType::Float32, centers);
  ReduceExtra extra{c.pre, c.post, c.p, c.center ? center.address : 0};
  reduce(stream(), c.op, ComputeKind::Float32, l.out_numel, l.red_numel, l.g, dst.at(), src.at(), scale, extra);
  auto got = dst.download();
  for (int64_t o = 0; o < l.out_numel; ++o)
    ASSERT_TRUE(close(got[o], round_to(out_dt, ref_extra(c, rows[o], scale)), rtol, 1e-6)) << c.name << " output " << o;
}

const ExtraCase kExtraCases[] = {
    {"l1", ReduceOp::Sum, ReducePre::Abs, ReducePost::None, 1, 0},
    {"l2", ReduceOp::Sum, ReducePre::Square, ReducePost::Sqrt, 2, 0},
    {"l3", ReduceOp::Sum, ReducePre::AbsPow, ReducePost::Root, 3, 0},
    {"l0.5", ReduceOp::Sum, ReducePre::AbsPow, ReducePost::Root, 0.5, 0},
    {"linf", ReduceOp::Max, ReducePre::Abs, ReducePost::None, 0, 0},
    {"l-inf", ReduceOp::Min, ReducePre::Abs, ReducePost::None, 0, 0},
    {"l0", ReduceOp::Sum, ReducePre::NonZero, ReducePost::None, 0, 0},
    {"var", ReduceOp::Sum, ReducePre::SquaredDeviation, ReducePost::None, 0, 1},
    {"std", ReduceOp::Sum, ReducePre::SquaredDeviation, ReducePost::Sqrt, 0, 1},
    {"logsumexp", ReduceOp::Sum, ReducePre::ExpDeviation, ReducePost::LogPlusCenter, 0, 2},
    {"all", ReduceOp::Min, ReducePre::NonZero, ReducePost::Truth, 0, 0},
    {"any", ReduceOp::Max, ReducePre::NonZero, ReducePost::Truth, 0, 0},
};

TEST_F(ReduceExtraKernel, EveryTransformEveryStrategy) {
  auto in = random_values(1200, DType::Float32, -3, 3, 21);
  for (size_t i = 0; i < in.size(); i += 7) in[i] = 0;  // zeros for l0 / all / any
  for (S strategy : {S::Auto, S::Workgroup, S::Thread, S::Split}) {
    for (bool subgroups : {true, false}) {
      tuning().reduce_strategy = strategy;
      tuning().reduce_subgroups = subgroups;
      tuning().reduce_split_chunk = 16;
      for (const auto& c : kExtraCases) {
        SCOPED_TRACE(std::string(c.name) + " strategy " + std::to_string(int(strategy)) + " subgroups " + std::to_string(subgroups));
        double scale = c.center == 1 ? 1.0 / 39 : 1.0;  // unbiased variance of 40-element rows
        run_extra(c, {6, 5, 40}, {2}, in, c.center == 1 ? scale : 1.0, 2e-5);
        run_extra(c, {40, 5, 6}, {0}, in, c.center == 1 ? scale : 1.0, 2e-5);
        run_extra(c, {7, 9, 11}, {0, 2}, std::vector<V>(in.begin(), in.begin() + 693), c.center == 1 ? 1.0 / 76 : 1.0, 2e-5);
      }
    }
  }
}

TEST_F(ReduceExtraKernel, SpecialValuesEmptyAndInvalid) {
  // logsumexp with infinite maxima and NaN; all / any of bool output; empty reductions.
  std::vector<V> x = {INFINITY, 1, -INFINITY, -INFINITY, NAN, 2, 3, -1};
  run_extra(kExtraCases[9], {4, 2}, {1}, x, 1.0, 1e-6);
  run_extra(kExtraCases[10], {4, 2}, {1}, x, 1.0, 0, DType::Bool);
  run_extra(kExtraCases[11], {4, 2}, {1}, {0, 0, 0, NAN, 0, -0.0L, 1, 1}, 1.0, 0, DType::UInt8);
  run_extra(kExtraCases[10], {3, 0}, {1}, {}, 1.0, 0, DType::Bool);   // all() of nothing: true
  run_extra(kExtraCases[11], {3, 0}, {1}, {}, 1.0, 0, DType::Bool);   // any() of nothing: false
  run_extra(kExtraCases[9], {3, 0}, {1}, {}, 1.0, 0);                 // logsumexp: -inf
  // Integer accumulators accept Abs / NonZero / Truth but not the float transforms.
  Buffer xi(DType::Int64, std::vector<V>{-5, 0, 3, 0}), yi(DType::Int64, 2), c(DType::Float32, 2);
  Layout l = make_layout({2, 2}, {1});
  reduce(stream(), ReduceOp::Sum, ComputeKind::Int64, 2, 2, l.g, yi.at(), xi.at(), 1.0, {ReducePre::Abs});
  auto got = yi.download();
  EXPECT_EQ(got[0], 5);
  EXPECT_EQ(got[1], 3);
  EXPECT_THROW(reduce(stream(), ReduceOp::Sum, ComputeKind::Int64, 2, 2, l.g, yi.at(), xi.at(), 1.0, {ReducePre::Square, ReducePost::Sqrt}), std::invalid_argument);
  EXPECT_THROW(reduce(stream(), ReduceOp::Sum, ComputeKind::Int64, 2, 2, l.g, yi.at(), xi.at(), 1.0, {ReducePre::ExpDeviation, ReducePost::None, 2, c.address}), std::invalid_argument);
  EXPECT_THROW(reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, 2, 2, l.g, c.at(), c.at(), 1.0, {ReducePre::SquaredDeviation}), std::invalid_argument);
  EXPECT_THROW(reduce(stream(), ReduceOp::Sum, ComputeKind::Float32, 2, 2, l.g, c.at(), c.at(), 1.0, {static_cast<ReducePre>(9)}), std::invalid_argument);
}

// ---------------------------------------------------------------- softmax

// Reference of `op` over rows of a contiguous [outer, dim, inner] tensor, in long double,
// following the CPU's max-then-sum formulation (so NaN / inf give the same results).
std::vector<V> ref_softmax(SoftmaxOp op, int64_t outer, int64_t dim, int64_t inner,
                           const std::vector<V>& a, const std::vector<V>& y) {
  std::vector<V> out(a.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t r) { return (o * dim + r) * inner + i; };
      if (op == SoftmaxOp::Softmax || op == SoftmaxOp::LogSoftmax) {
        V m = -INFINITY;
        for (int64_t r = 0; r < dim; ++r) m = std::isnan(a[at(r)]) || std::isnan(m) ? NAN : std::max(m, a[at(r)]);
        V s = 0;
        for (int64_t r = 0; r < dim; ++r) s += std::exp(a[at(r)] - m);
        for (int64_t r = 0; r < dim; ++r)
          out[at(r)] = op == SoftmaxOp::Softmax ? std::exp(a[at(r)] - m) / s : (a[at(r)] - m) - std::log(s);
      } else {
        V s = 0;
        for (int64_t r = 0; r < dim; ++r) s += op == SoftmaxOp::SoftmaxBackward ? a[at(r)] * y[at(r)] : a[at(r)];
        for (int64_t r = 0; r < dim; ++r)
          out[at(r)] = op == SoftmaxOp::SoftmaxBackward ? y[at(r)] * (a[at(r)] - s) : a[at(r)] - std::exp(y[at(r)]) * s;
      }
    }
  return out;
}

// Runs `op` on `a` and compares with ref_softmax. Every operand starts `offset` elements into
// its buffer (an offset that is not a multiple of 4 takes the scalar path of the register
// strategies); the element before and after the output must stay untouched.
void run_softmax(SoftmaxOp op, int64_t outer, int64_t dim, int64_t inner, const std::vector<V>& a,
                 DType in_dt, DType out_dt, double rtol, double atol, ComputeKind kind = ComputeKind::Float32,
                 int64_t offset = 0) {
  const bool backward = op == SoftmaxOp::SoftmaxBackward || op == SoftmaxOp::LogSoftmaxBackward;
  std::vector<V> y;
  if (backward) {  // a plausible forward output: softmax (or log_softmax) of other values
    auto x = random_values(a.size(), DType::Float32, -2, 2, 99);
    y = ref_softmax(op == SoftmaxOp::SoftmaxBackward ? SoftmaxOp::Softmax : SoftmaxOp::LogSoftmax, outer, dim, inner, x, {});
    for (auto& v : y) v = round_to(in_dt, v);
  }
  auto padded = [&](const std::vector<V>& v, V fill) {
    std::vector<V> r(offset, fill);
    r.insert(r.end(), v.begin(), v.end());
    r.push_back(fill);
    return r;
  };
  const V sentinel = 7;
  Buffer in(in_dt, padded(a, 0)), in2(in_dt, padded(backward ? y : std::vector<V>(a.size(), 0), 0));
  Buffer out(out_dt, padded(std::vector<V>(a.size(), 0), sentinel));
  Softmax p;
  p.op = op;
  p.kind = kind;
  p.outer = outer;
  p.dim = dim;
  p.inner = inner;
  p.out = out.at(offset);
  p.in = in.at(offset);
  p.in2 = in2.at(offset);
  softmax(stream(), p);
  auto got = out.download();
  auto want = ref_softmax(op, outer, dim, inner, a, y);
  for (int64_t k = 0; k < offset; ++k) ASSERT_EQ(got[k], sentinel) << "before the output";
  ASSERT_EQ(got.back(), sentinel) << "after the output";
  for (size_t k = 0; k < a.size(); ++k)
    ASSERT_TRUE(close(got[offset + k], round_to(out_dt, want[k]), rtol, atol)) << "element " << k;
}

TEST_F(SoftmaxKernel, EveryOpEveryStrategy) {
  using SS = SoftmaxTuning::Strategy;
  // Innermost rows below, at and above the register capacities (16 x subgroup size for
  // SubgroupRow, 16 x workgroup for Registers: beyond them the shader streams), dims that are
  // and are not multiples of 4 (vector and scalar paths), strided rows.
  const std::vector<std::array<int64_t, 3>> shapes = {
      {7, 300, 1}, {40, 9, 1}, {3, 1, 1}, {2, 50, 6}, {3, 700, 2}, {1, 5, 1100},
      {9, 100, 1}, {5, 130, 1}, {33, 27, 1}, {6, 64, 1}, {2, 4100, 1}, {4, 2048, 1}};
  for (SS strategy : {SS::Auto, SS::Workgroup, SS::Thread, SS::Registers, SS::SubgroupRow}) {
    for (bool subgroups : {true, false}) {
      softmax_tuning().strategy = strategy;
      softmax_tuning().subgroups = subgroups;
      tuning().specialize_dtypes = subgroups;
      tuning().max_workgroups = subgroups ? 65535 : 3;
      for (auto [outer, dim, inner] : shapes) {
        auto a = random_values(outer * dim * inner, DType::Float32, -8, 8, uint32_t(outer * dim + inner));
        for (int op = 0; op < 4; ++op) {
          SCOPED_TRACE("strategy " + std::to_string(int(strategy)) + " subgroups " + std::to_string(subgroups) +
                       " op " + std::to_string(op) + " shape " + std::to_string(outer) + "x" + std::to_string(dim) + "x" + std::to_string(inner));
          run_softmax(static_cast<SoftmaxOp>(op), outer, dim, inner, a, DType::Float32, DType::Float32, 2e-5, 1e-6);
        }
      }
    }
  }
}

TEST_F(SoftmaxKernel, SpecialValuesHalfMixedAndFloat64) {
  // Rows: [-inf, 1, 2], [-inf x3], [+inf, 1, 0], [NaN, 1, 2], [1e30 scale], [+inf, +inf, 1]
  std::vector<V> x = {-INFINITY, 1, 2, -INFINITY, -INFINITY, -INFINITY, INFINITY, 1, 0,
                      NAN, 1, 2, 1e30, -1e30, 1e30, INFINITY, INFINITY, 1};
  using SS = SoftmaxTuning::Strategy;
  for (auto strategy : {SS::Workgroup, SS::Thread, SS::Registers, SS::SubgroupRow}) {
    softmax_tuning().strategy = strategy;
    run_softmax(SoftmaxOp::Softmax, 6, 3, 1, x, DType::Float32, DType::Float32, 1e-6, 0);
    run_softmax(SoftmaxOp::LogSoftmax, 6, 3, 1, x, DType::Float32, DType::Float32, 1e-6, 0);
    // The same rows padded to 4 with -inf (the vector path, every special value in one chunk).
    std::vector<V> x4;
    for (int r = 0; r < 6; ++r) {
      x4.insert(x4.end(), x.begin() + 3 * r, x.begin() + 3 * r + 3);
      x4.push_back(-INFINITY);
    }
    run_softmax(SoftmaxOp::Softmax, 6, 4, 1, x4, DType::Float32, DType::Float32, 1e-6, 0);
    run_softmax(SoftmaxOp::LogSoftmax, 6, 4, 1, x4, DType::Float32, DType::Float32, 1e-6, 0);
    // A row with NaN / +inf in a chunk of another lane than the maximum's.
    auto row = random_values(200, DType::Float32, -5, 5, 34);
    row[150] = INFINITY;
    run_softmax(SoftmaxOp::Softmax, 1, 200, 1, row, DType::Float32, DType::Float32, 1e-6, 0);
    row[150] = NAN;
    run_softmax(SoftmaxOp::LogSoftmax, 1, 200, 1, row, DType::Float32, DType::Float32, 1e-6, 0);
  }
  softmax_tuning().strategy = SoftmaxTuning::Strategy::Auto;
  // A long row with -inf and one +inf in different workgroup lanes.
  auto row = random_values(1000, DType::Float32, -5, 5, 31);
  row[3] = -INFINITY;
  run_softmax(SoftmaxOp::Softmax, 1, 1000, 1, row, DType::Float32, DType::Float32, 2e-5, 1e-7);
  row[500] = INFINITY;
  run_softmax(SoftmaxOp::LogSoftmax, 1, 1000, 1, row, DType::Float32, DType::Float32, 2e-5, 1e-7);
  // float16 in and out, float16 in with float32 out (half_to_float): fp32 math.
  auto h = random_values(4 * 500, DType::Float16, -6, 6, 32);
  run_softmax(SoftmaxOp::Softmax, 4, 500, 1, h, DType::Float16, DType::Float16, 1e-3, 1e-6);
  run_softmax(SoftmaxOp::LogSoftmax, 4, 500, 1, h, DType::Float16, DType::Float32, 2e-5, 1e-6);
  run_softmax(SoftmaxOp::SoftmaxBackward, 4, 500, 1, h, DType::Float16, DType::Float16, 2e-3, 1e-5);
  if (has_f64()) {
    auto d = random_values(3 * 400 * 2, DType::Float64, -20, 20, 33);
    for (int op = 0; op < 4; ++op)
      run_softmax(static_cast<SoftmaxOp>(op), 3, 400, 2, d, DType::Float64, DType::Float64, 1e-12, 1e-15, ComputeKind::Float64);
  }
}

// The register strategies with every 16-bit / 32-bit operand mix, aligned (vector accesses)
// and misaligned by one element (scalar accesses), with subgroups and without.
TEST_F(SoftmaxKernel, RegisterStrategiesDtypesAndAlignment) {
  using SS = SoftmaxTuning::Strategy;
  const DType dts[] = {DType::Float32, DType::Float16, DType::BFloat16};
  for (SS strategy : {SS::Registers, SS::SubgroupRow}) {
    for (bool subgroups : {true, false}) {
      softmax_tuning().strategy = strategy;
      softmax_tuning().subgroups = subgroups;
      for (DType in_dt : dts)
        for (DType out_dt : dts)
          for (int64_t offset : {0, 1})
            for (auto [outer, dim] : std::vector<std::array<int64_t, 2>>{{5, 64}, {2, 257}}) {
              // Mixed dtypes read them from the push constants (one pipeline per strategy:
              // every pipeline compile costs on lavapipe); equal ones are specialized.
              tuning().specialize_dtypes = in_dt == out_dt;
              const double rtol = out_dt == DType::BFloat16 ? 1e-2 : out_dt == DType::Float16 ? 2e-3 : 2e-5;
              auto a = random_values(outer * dim, in_dt, -6, 6, uint32_t(dim + offset));
              for (int op = 0; op < 4; ++op) {
                SCOPED_TRACE("strategy " + std::to_string(int(strategy)) + " subgroups " + std::to_string(subgroups) +
                             " op " + std::to_string(op) + " in " + dtype_name(in_dt) + " out " + dtype_name(out_dt) +
                             " offset " + std::to_string(offset) + " dim " + std::to_string(dim));
                run_softmax(static_cast<SoftmaxOp>(op), outer, dim, 1, a, in_dt, out_dt, rtol, op >= 2 ? 2e-3 : 1e-6,
                            ComputeKind::Float32, offset);
              }
            }
    }
  }
  // Small workgroups: rows beyond 16 x 32 stream.
  softmax_tuning().strategy = SS::Registers;
  softmax_tuning().max_workgroup = 32;
  auto a = random_values(2 * 700, DType::Float32, -6, 6, 35);
  for (int op = 0; op < 4; ++op)
    run_softmax(static_cast<SoftmaxOp>(op), 2, 700, 1, a, DType::Float32, DType::Float32, 2e-5, 1e-6);
}

TEST_F(SoftmaxKernel, EmptyAndInvalidArguments) {
  Buffer a(DType::Float32, 8), b(DType::Float32, 8), d(DType::Float64, 8);
  Softmax p;
  p.out = b.at();
  p.in = a.at();
  p.outer = 0;
  EXPECT_NO_THROW(softmax(stream(), p));
  p.outer = 1, p.dim = 0;
  EXPECT_NO_THROW(softmax(stream(), p));
  p.dim = 8;
  p.kind = ComputeKind::Int32;
  EXPECT_THROW(softmax(stream(), p), std::invalid_argument);
  p.kind = ComputeKind::Float32;
  p.in = d.at();
  EXPECT_THROW(softmax(stream(), p), std::invalid_argument);  // float64 operand, Float32 kind
  p.in = a.at();
  p.op = SoftmaxOp::SoftmaxBackward;  // in2 missing
  EXPECT_THROW(softmax(stream(), p), std::invalid_argument);
  p.op = static_cast<SoftmaxOp>(5);
  EXPECT_THROW(softmax(stream(), p), std::invalid_argument);
  p.op = SoftmaxOp::Softmax;
  p.dim = -1;
  EXPECT_THROW(softmax(stream(), p), std::invalid_argument);
  p.dim = 1 << 20, p.outer = 1 << 12;
  EXPECT_THROW(softmax(stream(), p), std::invalid_argument);
}

// ---------------------------------------------------------------- scans

void run_scan(ScanOp op, ComputeKind acc, int64_t outer, int64_t dim, int64_t inner,
              const std::vector<V>& in, DType in_dt, DType out_dt, double rtol, bool in_place = false) {
  Buffer src(in_dt, in), dst(out_dt, in.size());
  Scan p;
  p.op = op;
  p.acc = acc;
  p.outer = outer;
  p.dim = dim;
  p.inner = inner;
  p.in = src.at();
  p.out = in_place ? src.at() : dst.at();
  scan(stream(), p);
  auto got = (in_place ? src : dst).download();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      V acc_v = op == ScanOp::Sum ? 0 : 1, abs_acc = 0;
      for (int64_t r = 0; r < dim; ++r) {
        const size_t k = (o * dim + r) * inner + i;
        V x = in[k];
        if (acc == ComputeKind::Int64) {  // integer accumulators: exact, wrapping products
          int64_t a = static_cast<int64_t>(acc_v), b = static_cast<int64_t>(x);
          acc_v = op == ScanOp::Sum ? V(int64_t(uint64_t(a) + uint64_t(b))) : V(int64_t(uint64_t(a) * uint64_t(b)));
        } else {
          acc_v = op == ScanOp::Sum ? acc_v + x : acc_v * x;
        }
        abs_acc += std::fabs(x);
        V want = round_to(out_dt, acc_v);
        // Sums may cancel: the error bound scales with the running sum of |x|.
        double atol = op == ScanOp::Sum ? double(rtol * abs_acc) : 0;
        ASSERT_TRUE(close(got[k], want, rtol, atol)) << "row " << o << "," << i << " element " << r;
      }
    }
}

TEST_F(ScanKernel, SumAndProdEveryStrategy) {
  using SS = ScanTuning::Strategy;
  const std::vector<std::array<int64_t, 3>> shapes = {
      {3, 1000, 1}, {50, 7, 1}, {2, 300, 5}, {1, 2000, 3}, {4, 1, 1}, {1, 600, 1}};
  for (SS strategy : {SS::Auto, SS::Workgroup, SS::Thread}) {
    for (bool subgroups : {true, false}) {
      scan_tuning().strategy = strategy;
      scan_tuning().subgroups = subgroups;
      scan_tuning().workgroup = subgroups ? 256 : 64;
      tuning().specialize_dtypes = subgroups;
      tuning().max_workgroups = subgroups ? 65535 : 3;
      for (auto [outer, dim, inner] : shapes) {
        SCOPED_TRACE("strategy " + std::to_string(int(strategy)) + " subgroups " + std::to_string(subgroups) +
                     " shape " + std::to_string(outer) + "x" + std::to_string(dim) + "x" + std::to_string(inner));
        const size_t n = outer * dim * inner;
        run_scan(ScanOp::Sum, ComputeKind::Float32, outer, dim, inner, random_values(n, DType::Float32, -1, 1, 41), DType::Float32, DType::Float32, 2e-6);
        run_scan(ScanOp::Prod, ComputeKind::Float32, outer, dim, inner, random_values(n, DType::Float32, 0.99, 1.01, 42), DType::Float32, DType::Float32, 1e-5);
        run_scan(ScanOp::Sum, ComputeKind::Int64, outer, dim, inner, random_values(n, DType::Int64, -1e12, 1e12, 43), DType::Int64, DType::Int64, 0);
      }
    }
  }
}

TEST_F(ScanKernel, DTypesInPlaceSpecialValuesAndInvalid) {
  auto h = random_values(2 * 700, DType::Float16, 0, 1, 44);
  run_scan(ScanOp::Sum, ComputeKind::Float32, 2, 700, 1, h, DType::Float16, DType::Float32, 2e-6);  // fp32 accumulation
  run_scan(ScanOp::Sum, ComputeKind::Float32, 2, 700, 1, h, DType::Float16, DType::Float16, 2e-3);
  auto i32 = random_values(900, DType::Int32, -3, 3, 45);
  run_scan(ScanOp::Prod, ComputeKind::Int32, 3, 300, 1, i32, DType::Int32, DType::Int64, 0);  // wraps like int64
  run_scan(ScanOp::Sum, ComputeKind::Float32, 1, 900, 1, random_values(900, DType::Float32, -1, 1, 46), DType::Float32, DType::Float32, 2e-6, true);
  std::vector<V> special = {1, NAN, 2, 3, INFINITY, -INFINITY, 1, 0, INFINITY, 2, 0, 5};
  run_scan(ScanOp::Sum, ComputeKind::Float32, 3, 4, 1, special, DType::Float32, DType::Float32, 1e-6);
  run_scan(ScanOp::Prod, ComputeKind::Float32, 3, 4, 1, special, DType::Float32, DType::Float32, 1e-6);
  if (has_f64())
    run_scan(ScanOp::Sum, ComputeKind::Float64, 2, 500, 3, random_values(3000, DType::Float64, -1, 1, 47), DType::Float64, DType::Float64, 1e-13);

  Buffer a(DType::Float32, 8), b(DType::Float32, 8), d(DType::Float64, 8);
  Scan p;
  p.in = a.at();
  p.out = b.at();
  p.dim = 8;
  EXPECT_NO_THROW(scan(stream(), p));
  p.dim = 0;
  EXPECT_NO_THROW(scan(stream(), p));
  p.dim = 8;
  p.op = static_cast<ScanOp>(5);
  EXPECT_THROW(scan(stream(), p), std::invalid_argument);
  p.op = ScanOp::Sum;
  p.out = d.at();
  EXPECT_THROW(scan(stream(), p), std::invalid_argument);  // float64 output, Float32 accumulator
  p.out = Operand{0, DType::Float32};
  EXPECT_THROW(scan(stream(), p), std::invalid_argument);
  p.out = b.at();
  p.inner = -1;
  EXPECT_THROW(scan(stream(), p), std::invalid_argument);
}

}  // namespace
