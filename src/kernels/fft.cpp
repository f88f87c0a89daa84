// Launcher of the FFT family (shaders/fft.comp).
//
// Strategies:
//   Stockham  power-of-two 16 <= n <= MAX_N (1024 float32, 512 float64): one workgroup per
//             transform, ceil(log4(n)) radix-4 / radix-2 stages in shared memory, O(n log n).
//   Direct    every other n: one invocation per output element, an O(n) sum with exact
//             integer twiddle indices (accurate for any n; O(n^2) work per transform).
//             src/aten/ops_fft.cpp keeps it to short lengths and composes longer ones
//             (four-step, Bluestein) from these passes and fft_pointwise.
#include "kernels/fft.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/fft.comp.
struct FftPush {
  uint64_t in_addr;
  uint64_t out_addr;
  uint64_t tw_addr;
  int32_t n;
  int32_t batch;
  int32_t in_batch_stride;
  int32_t in_stride;
  int32_t in_count;
  int32_t out_batch_stride;
  int32_t out_stride;
  int32_t out_count;
  int32_t load_mode;
  int32_t store_real;
  int32_t inverse;
  float scale_hi;
  float scale_lo;
  int32_t inner_batch;
  int32_t in_outer_stride;
  int32_t out_outer_stride;
};
static_assert(sizeof(FftPush) == 88);

constexpr const char* kWhere = "tvk::kernels::fft";
constexpr uint32_t kWorkgroup = 256;

// Below this the direct kernel wins: a Stockham workgroup (at least 32 invocations) would
// keep only n / 2 of them busy, while the direct kernel's n multiply-adds per output are few.
constexpr int64_t kStockhamMinN = 16;

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// Largest scalar offset reached: (count - 1) * |stride| (+ 1 for the imaginary part).
int64_t extent(int64_t batch, int64_t batch_stride, int64_t count, int64_t stride, bool pair) {
  return (batch - 1) * std::llabs(batch_stride) + (count - 1) * std::llabs(stride) + (pair ? 1 : 0);
}

}  // namespace

FftTuning& fft_tuning() {
  static FftTuning t;
  return t;
}

int64_t fft_stockham_max_n(ComputeKind kind) { return kind == ComputeKind::Float64 ? 512 : 1024; }

namespace {

void record(Stream& stream, const Fft& p, bool pointwise) {
  if (p.kind != ComputeKind::Float32 && p.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.n < 0 || p.batch < 0 || p.in_count < 0 || p.out_count < 0)
    invalid(kWhere, "negative size");
  if (p.out_count > p.n && !pointwise) invalid(kWhere, "out_count exceeds n");
  if (p.n == 0 || p.batch == 0 || p.out_count == 0) return;
  const int li = static_cast<int>(p.load);
  if (li < 0 || li > 2) invalid(kWhere, "invalid load mode " + std::to_string(li));
  const DType scalar = f64 ? DType::Float64 : DType::Float32;
  check_operand(kWhere, p.in, "input", f64);
  check_operand(kWhere, p.out, "output", f64);
  const bool has_table = !pointwise || p.twiddles.address != 0;
  if (has_table) check_operand(kWhere, p.twiddles, "twiddles", f64);
  if (p.in.dtype != scalar || p.out.dtype != scalar || (has_table && p.twiddles.dtype != scalar))
    invalid(kWhere, "operands must have the kind's scalar dtype");
  const bool pair_in = p.load != FftLoad::Real;
  const int64_t in_reach = p.load == FftLoad::Hermitian ? std::min(p.in_count, p.n / 2 + 1)
                                                        : std::min(p.in_count, p.n);
  // Two-level batch: inner_batch == 0 means one level (all transforms in the inner level).
  const int64_t inner = p.inner_batch == 0 ? p.batch : p.inner_batch;
  if (inner < 0 || p.batch % inner != 0) invalid(kWhere, "batch must be a multiple of inner_batch");
  const int64_t outer = p.batch / inner;
  int64_t items = 0;
  if (__builtin_mul_overflow(p.batch, p.out_count, &items) || items > kMaxIndex ||
      2 * p.n > kMaxIndex ||
      (in_reach > 0 && extent(inner, p.in_batch_stride, in_reach, p.in_stride, pair_in) +
                               (outer - 1) * std::llabs(p.in_outer_stride) > kMaxIndex) ||
      extent(inner, p.out_batch_stride, p.out_count, p.out_stride, !p.store_real) +
              (outer - 1) * std::llabs(p.out_outer_stride) > kMaxIndex ||
      std::llabs(p.in_outer_stride) > kMaxIndex || std::llabs(p.out_outer_stride) > kMaxIndex)
    invalid(kWhere, "more elements than the kernel's 32-bit index range");

  using S = FftTuning::Strategy;
  S strategy = fft_tuning().strategy;
  const bool stockham_ok = is_pow2(p.n) && p.n >= 2 && p.n <= fft_stockham_max_n(p.kind);
  if (strategy == S::Auto || !stockham_ok)
    strategy = stockham_ok && p.n >= kStockhamMinN ? S::Stockham : S::Direct;
  if (pointwise) strategy = S::Direct;  // one invocation per output, like direct

  const std::string name = std::string("fft.") +
                           (pointwise ? "pointwise" : strategy == S::Stockham ? "stockham" : "direct") +
                           (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  FftPush push{};
  push.in_addr = p.in.address;
  push.out_addr = p.out.address;
  push.tw_addr = has_table ? p.twiddles.address : 0;
  push.n = static_cast<int32_t>(p.n);
  push.batch = static_cast<int32_t>(p.batch);
  push.in_batch_stride = static_cast<int32_t>(p.in_batch_stride);
  push.in_stride = static_cast<int32_t>(p.in_stride);
  push.in_count = static_cast<int32_t>(std::min<int64_t>(p.in_count, kMaxIndex));
  push.out_batch_stride = static_cast<int32_t>(p.out_batch_stride);
  push.out_stride = static_cast<int32_t>(p.out_stride);
  push.out_count = static_cast<int32_t>(p.out_count);
  push.load_mode = li;
  push.store_real = p.store_real ? 1 : 0;
  push.inverse = p.inverse ? 1 : 0;
  push.scale_hi = static_cast<float>(p.scale);
  push.scale_lo = static_cast<float>(p.scale - static_cast<double>(push.scale_hi));
  push.inner_batch = static_cast<int32_t>(inner);
  push.in_outer_stride = static_cast<int32_t>(p.in_outer_stride);
  push.out_outer_stride = static_cast<int32_t>(p.out_outer_stride);

  const uint32_t wg = strategy == S::Stockham
                          ? static_cast<uint32_t>(std::clamp<int64_t>(p.n / 2, 32, kWorkgroup))
                          : kWorkgroup;
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, {});
  const uint32_t groups = strategy == S::Stockham ? group_count(stream, p.batch, 1)
                                                  : group_count(stream, items, wg);
  // Scalar strides; complex values are (re, im) pairs at offsets 0 and 1.
  AccessSet accesses;
  const int64_t in_sizes[4] = {outer, inner, in_reach, pair_in ? 2 : 1};
  const int64_t in_strides[4] = {p.in_outer_stride, p.in_batch_stride, p.in_stride, 1};
  add_strided(accesses, p.in.address, scalar, 4, in_sizes, in_strides, false);
  const int64_t out_sizes[4] = {outer, inner, p.out_count, p.store_real ? 1 : 2};
  const int64_t out_strides[4] = {p.out_outer_stride, p.out_batch_stride, p.out_stride, 1};
  add_strided(accesses, p.out.address, scalar, 4, out_sizes, out_strides, true);
  if (has_table) add_dense(accesses, p.twiddles.address, scalar, 2 * p.n, false);
  stream.dispatch(pipeline, groups, 1, 1, &push, sizeof(push), nullptr, 0, &accesses);
}

}  // namespace

void fft(Stream& stream, const Fft& p) { record(stream, p, false); }

void fft_pointwise(Stream& stream, const Fft& p) { record(stream, p, true); }

}  // namespace tvk::kernels
