// Launcher of the upsampling family (shaders/upsample.comp): one invocation per produced
// element (output elements forward, grad_input elements backward) in memory order.
#include "kernels/upsample.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

// Mirrors `Push` in shaders/upsample.comp.
struct UpsamplePush {
  uint64_t in_addr;
  uint64_t out_addr;
  int32_t batch;
  int32_t channels;
  int32_t in_size[3];
  int32_t out_size[3];
  int32_t flags;
  int32_t in_dtype;
  int32_t out_dtype;
  float scale_f[3];
  uint64_t scale_d[3];
};
static_assert(sizeof(UpsamplePush) == 96);
static_assert(offsetof(UpsamplePush, scale_d) == 72);

constexpr const char* kWhere = "tvk::kernels::upsample";
constexpr uint32_t kWorkgroup = 256;

const char* mode_name(UpsampleMode mode) {
  switch (mode) {
    case UpsampleMode::Nearest: return "nearest";
    case UpsampleMode::NearestExact: return "nearest_exact";
    case UpsampleMode::Linear: return "linear";
    case UpsampleMode::Cubic: return "cubic";
  }
  return "?";
}

void check_operand(const Operand& op, const char* what, bool f64) {
  kernels::check_operand(kWhere, op, what, f64);
}

int64_t checked_numel(int64_t batch, int64_t channels, const std::array<int64_t, 3>& size,
                      const char* what) {
  int64_t n = 0;
  bool overflow = __builtin_mul_overflow(batch, channels, &n);
  for (int64_t s : size) overflow |= __builtin_mul_overflow(n, s, &n);
  if (overflow || n > kMaxIndex)
    invalid(kWhere, std::string(what) + ": more elements than the kernel's 32-bit index range");
  return n;
}

// PyTorch's compute_scales_value<T>: 1 / scale when given and positive, else in / out.
template <typename T>
T scales_value(const std::optional<double>& scale, int64_t in, int64_t out) {
  return (scale.has_value() && *scale > 0.) ? static_cast<T>(1.0 / *scale)
                                            : static_cast<T>(in) / static_cast<T>(out);
}

// PyTorch's area_pixel_compute_scale<T>.
template <typename T>
T area_scale(int64_t in, int64_t out, bool align_corners, const std::optional<double>& scale) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  return scales_value<T>(scale, in, out);
}

}  // namespace

void upsample(Stream& stream, const Upsample& p) {
  const int modei = static_cast<int>(p.mode);
  if (modei < 0 || modei > 3) invalid(kWhere, "invalid mode " + std::to_string(modei));
  if (p.kind != ComputeKind::Float32 && p.kind != ComputeKind::Float64)
    invalid(kWhere, "the kind must be Float32 or Float64");
  const bool f64 = p.kind == ComputeKind::Float64;
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (p.batch < 0 || p.channels < 0) invalid(kWhere, "negative batch or channel count");
  for (int k = 0; k < 3; ++k) {
    if (p.in_size[k] < 1 || p.out_size[k] < 1) invalid(kWhere, "spatial sizes must be positive");
    // Cubic / nearest positions are computed in 32-bit ints (and floats: exact below 2^24).
    if (p.in_size[k] > (1 << 24) || p.out_size[k] > (1 << 24))
      invalid(kWhere, "spatial sizes above 2^24 are not supported");
  }
  const int64_t in_numel = checked_numel(p.batch, p.channels, p.in_size, "input");
  const int64_t out_numel = checked_numel(p.batch, p.channels, p.out_size, "output");
  const int64_t produced = p.backward ? in_numel : out_numel;
  if (produced == 0) return;
  check_operand(p.out, "output", f64);
  check_operand(p.in, "input", f64);

  if (p.backward) {
    // An invocation gathers over the outputs whose taps reach its element: per dim about
    // out / in of them plus the taps, found by two binary searches. Not split: gathers past a
    // device's loop limit (loop_budget; huge upscaling factors) raise.
    const bool nearest_mode = p.mode == UpsampleMode::Nearest || p.mode == UpsampleMode::NearestExact;
    const int64_t taps = nearest_mode ? 1 : p.mode == UpsampleMode::Cubic ? 4 : 2;
    int64_t level = 1, total = 1;
    for (int k = 0; k < 3; ++k) {
      level *= (p.out_size[k] + p.in_size[k] - 1) / p.in_size[k] + taps + 1;
      total += level + 2 * 25;
    }
    const int64_t step = int64_t{group_count(stream, produced, kWorkgroup)} * kWorkgroup;
    if ((produced + step - 1) / step * total > loop_budget(stream))
      invalid(kWhere, "upsampling factors this large exceed the device's loop-iteration limit "
                      "in the backward pass (max_loop_iterations)");
  }

  const std::string name = std::string("upsample.") + mode_name(p.mode) +
                           (p.backward ? ".backward" : ".forward") + (f64 ? ".float64" : ".float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");

  UpsamplePush push{};
  push.in_addr = p.in.address;
  push.out_addr = p.out.address;
  push.batch = static_cast<int32_t>(p.batch);
  push.channels = static_cast<int32_t>(p.channels);
  const bool nearest = p.mode == UpsampleMode::Nearest || p.mode == UpsampleMode::NearestExact;
  for (int k = 0; k < 3; ++k) {
    push.in_size[k] = static_cast<int32_t>(p.in_size[k]);
    push.out_size[k] = static_cast<int32_t>(p.out_size[k]);
    // Nearest always uses a float scale (as the CPU); linear / cubic the math precision.
    push.scale_f[k] = nearest ? scales_value<float>(p.scales[k], p.in_size[k], p.out_size[k])
                              : area_scale<float>(p.in_size[k], p.out_size[k], p.align_corners, p.scales[k]);
    const double d = area_scale<double>(p.in_size[k], p.out_size[k], p.align_corners, p.scales[k]);
    std::memcpy(&push.scale_d[k], &d, sizeof(d));
  }
  push.flags = (p.channels_last ? 1 : 0) | (p.align_corners ? 2 : 0);
  push.in_dtype = static_cast<int32_t>(p.in.dtype);
  push.out_dtype = static_cast<int32_t>(p.out.dtype);
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(p.in.dtype), static_cast<uint32_t>(p.out.dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  // Dense operands: x / grad_input of in_numel elements, y / grad_output of out_numel; the
  // input read, the output written.
  AccessSet accesses;
  add_dense(accesses, p.in.address, p.in.dtype, p.backward ? out_numel : in_numel, false);
  add_dense(accesses, p.out.address, p.out.dtype, p.backward ? in_numel : out_numel, true);
  stream.dispatch(pipeline, group_count(stream, produced, kWorkgroup), 1, 1, &push, sizeof(push),
                  nullptr, 0, &accesses);
}

// ---------------------------------------------------------------- table-driven resampling

namespace {

// Mirrors `Push` of MODE 4 in shaders/upsample.comp.
struct ResamplePush {
  uint64_t src_addr;
  uint64_t dst_addr;
  uint64_t weights_addr;
  uint64_t index_addr;
  int32_t outer;
  int32_t src_len;
  int32_t dst_len;
  int32_t inner;
  int32_t in_dtype;
  int32_t out_dtype;
  int32_t weight_bits;
  int32_t pad0;
};
static_assert(sizeof(ResamplePush) == 64);

constexpr const char* kResampleWhere = "tvk::kernels::resample";

// PyTorch's cubic_convolution1 (|x| <= 1) and cubic_convolution2 (1 < |x| < 2).
template <typename S>
S cubic_convolution1(S x, S A) {
  return ((A + 2) * x - (A + 3)) * x * x + 1;
}
template <typename S>
S cubic_convolution2(S x, S A) {
  return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

// The CPU's aa_filter of HelperInterpLinear / HelperInterpCubic (a = -0.5 with antialias, PIL's
// Keys cubic; -0.75 without, OpenCV's). The literal types follow the CPU's code so that the
// float computation rounds the same way.
template <typename S>
S filter_value(ResampleFilter filter, bool keys_cubic, S x) {
  x = std::abs(x);
  if (filter == ResampleFilter::Linear) {
    if (x < 1.0) return 1.0 - x;
    return 0.0;
  }
  const S a = keys_cubic ? S(-0.5) : S(-0.75);
  if (x < 1.0) return cubic_convolution1(x, a);
  if (x < 2.0) return cubic_convolution2(x, a);
  return 0.0;
}

// Taps of one output position: input positions [xmin, xmin + xsize) with weights w[0..xsize).
template <typename S>
struct TapRanges {
  int64_t max_taps = 0;
  std::vector<int64_t> xmin, xsize;
  std::vector<S> w;  // [out][max_taps]
  S w_max = 0;
};

// HelperInterpBase::_compute_index_ranges_weights with _compute_indices_min_size_weights_aa
// (antialias) or _compute_indices_min_size_weights (no antialias, uint8 only).
template <typename S>
TapRanges<S> tap_ranges(const Resample& p, S scale) {
  const int interp_size = p.filter == ResampleFilter::Linear ? 2 : 4;
  TapRanges<S> t;
  S support;
  if (p.antialias) {
    support = (scale >= 1.0) ? (interp_size * 0.5) * scale : interp_size * 0.5;
    t.max_taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  } else {
    support = interp_size * 0.5;
    t.max_taps = interp_size;
  }
  const int64_t in = p.in_len, out = p.out_len;
  t.xmin.resize(out);
  t.xsize.resize(out);
  t.w.assign(out * t.max_taps, S(0));
  for (int64_t i = 0; i < out; ++i) {
    S* wt = t.w.data() + i * t.max_taps;
    int64_t xmin = 0, xsize = 0;
    if (p.antialias) {
      const S center = scale * (i + 0.5);
      S total_w = 0.0;
      const S invscale = (scale >= 1.0) ? 1.0 / scale : 1.0;
      xmin = std::max(static_cast<int64_t>(center - support + 0.5), static_cast<int64_t>(0));
      xsize = std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin;
      xsize = std::clamp(xsize, static_cast<int64_t>(0), t.max_taps);
      for (int64_t j = 0; j < xsize; ++j) {
        const S w = filter_value<S>(p.filter, true, (j + xmin - center + 0.5) * invscale);
        wt[j] = w;
        total_w += w;
      }
      if (total_w != 0.0) {
        for (int64_t j = 0; j < xsize; ++j) {
          wt[j] /= total_w;
          t.w_max = std::max(t.w_max, wt[j]);
        }
      }
    } else {
      // area_pixel_compute_source_index + guard_index_and_lambda (note its floorf), then the
      // taps outside the input folded onto the border ones.
      const bool cubic = t.max_taps > 2;
      S real;
      if (p.align_corners) {
        real = scale * i;
      } else {
        real = scale * (i + static_cast<S>(0.5)) - static_cast<S>(0.5);
        if (!cubic && real < 0) real = S(0);
      }
      const int64_t index = std::min(static_cast<int64_t>(floorf(real)), in - 1);
      const S lambda = std::min(std::max(real - index, static_cast<S>(0)), static_cast<S>(1));
      const int64_t support_i = static_cast<int64_t>(t.max_taps * 0.5);
      const int64_t unbound_min = index - support_i + 1;
      const int64_t unbound_max = index + support_i + 1;
      xmin = std::max(unbound_min, static_cast<int64_t>(0));
      xsize = std::min(unbound_max, in) - xmin;
      xsize = std::clamp(xsize, static_cast<int64_t>(0), t.max_taps);
      int64_t w_index = 0;
      for (int64_t j = 0; j < t.max_taps; ++j) {
        wt[j] = 0.0;
        const S w = filter_value<S>(p.filter, false, static_cast<S>(j + 1 - support_i) - lambda);
        if (unbound_min + j <= 0) w_index = 0;
        else if (unbound_min + j >= in - 1) w_index = xsize - 1;
        wt[w_index] += w;
        t.w_max = std::max(t.w_max, wt[w_index]);
        w_index++;
      }
    }
    t.xmin[i] = xmin;
    t.xsize[i] = xsize;
  }
  return t;
}

// The tap table in the kernel's form: per destination position d, entries
// [start[d], start[d + 1]) of (source index, weight). Forward: d = output position, sources
// xmin + j. Transposed: d = input position, sources the outputs that read it (ascending).
template <typename W, typename S, typename Convert>
void build_table(const TapRanges<S>& t, bool transpose, int64_t in_len, Convert convert,
                 std::vector<int32_t>& start, std::vector<int32_t>& index, std::vector<W>& weights) {
  const int64_t out_len = static_cast<int64_t>(t.xmin.size());
  const int64_t dst_len = transpose ? in_len : out_len;
  start.assign(dst_len + 1, 0);
  for (int64_t o = 0; o < out_len; ++o) {
    if (!transpose) start[o + 1] = static_cast<int32_t>(t.xsize[o]);
    else for (int64_t j = 0; j < t.xsize[o]; ++j) start[t.xmin[o] + j + 1] += 1;
  }
  for (int64_t d = 0; d < dst_len; ++d) start[d + 1] += start[d];
  const int64_t entries = start[dst_len];
  index.assign(entries, 0);
  weights.assign(entries, W(0));
  std::vector<int32_t> fill(start.begin(), start.end() - 1);
  for (int64_t o = 0; o < out_len; ++o) {
    for (int64_t j = 0; j < t.xsize[o]; ++j) {
      const W w = convert(t.w[o * t.max_taps + j]);
      const int64_t d = transpose ? t.xmin[o] + j : o;
      const int32_t e = fill[d]++;
      index[e] = static_cast<int32_t>(transpose ? o : t.xmin[o] + j);
      weights[e] = w;
    }
  }
}

// Uploads weights then start / index; returns (weights address, index address).
template <typename W>
std::pair<uint64_t, uint64_t> upload_table(Stream& stream, const std::vector<int32_t>& start,
                                           const std::vector<int32_t>& index,
                                           const std::vector<W>& weights) {
  const size_t wbytes = (weights.size() * sizeof(W) + 15) & ~size_t(15);
  std::vector<unsigned char> blob(wbytes + (start.size() + index.size()) * sizeof(int32_t), 0);
  if (!weights.empty()) std::memcpy(blob.data(), weights.data(), weights.size() * sizeof(W));
  std::memcpy(blob.data() + wbytes, start.data(), start.size() * sizeof(int32_t));
  if (!index.empty())
    std::memcpy(blob.data() + wbytes + start.size() * sizeof(int32_t), index.data(),
                index.size() * sizeof(int32_t));
  const uint64_t base = stream.upload_params(blob.data(), blob.size());
  return {base, base + wbytes};
}

}  // namespace

void resample(Stream& stream, const Resample& p) {
  const bool f64 = p.kind == ComputeKind::Float64;
  const bool u8 = p.kind == ComputeKind::Int32;
  if (!f64 && !u8 && p.kind != ComputeKind::Float32)
    invalid(kResampleWhere, "the kind must be Float32, Float64 or Int32");
  if (f64 && !stream.device().caps().float64)
    throw std::invalid_argument("float64 is not supported on this device (no shaderFloat64)");
  if (!p.antialias && !u8) invalid(kResampleWhere, "non-anti-aliased passes are for uint8 only");
  if (p.transpose && u8) invalid(kResampleWhere, "uint8 has no backward");
  if (p.in_len < 1 || p.out_len < 1) invalid(kResampleWhere, "sizes must be positive");
  if (p.outer < 0 || p.inner < 0) invalid(kResampleWhere, "negative outer or inner size");
  if (p.in_len > (1 << 24) || p.out_len > (1 << 24))
    invalid(kResampleWhere, "sizes above 2^24 are not supported");
  const int64_t src_len = p.transpose ? p.out_len : p.in_len;
  const int64_t dst_len = p.transpose ? p.in_len : p.out_len;
  checked_numel(p.outer, p.inner, {1, 1, src_len}, "source");
  const int64_t produced = checked_numel(p.outer, p.inner, {1, 1, dst_len}, "destination");
  if (produced == 0) return;
  check_operand(p.dst, "destination", f64);
  check_operand(p.src, "source", f64);
  const DType want = u8 ? DType::UInt8 : f64 ? DType::Float64 : DType::Float32;
  if (p.dst.dtype != want || p.src.dtype != want)
    invalid(kResampleWhere, std::string("operands must be ") + dtype_name(want) + " for this kind");

  std::vector<int32_t> start, index;
  std::pair<uint64_t, uint64_t> table;
  int32_t weight_bits = 0;
  if (u8) {
    // _compute_index_ranges_int16_weights: double weights, the largest precision that keeps
    // the largest weight below 2^15, rounded half away from zero.
    const double scale = area_scale<double>(p.in_len, p.out_len, p.align_corners, p.scale);
    const TapRanges<double> t = tap_ranges<double>(p, scale);
    unsigned bits = 0;
    for (bits = 0; bits < 22; ++bits) {
      const int next_value = static_cast<int>(0.5 + t.w_max * (1 << (bits + 1)));
      if (next_value >= (1 << 15)) break;
    }
    if (bits == 0) invalid(kResampleWhere, "degenerate uint8 weights");
    weight_bits = static_cast<int32_t>(bits);
    std::vector<int32_t> weights;
    build_table<int32_t>(t, false, p.in_len, [bits](double w) {
      const double v = w * (1 << bits);
      return static_cast<int32_t>(static_cast<int16_t>(v < 0 ? static_cast<int>(-0.5 + v)
                                                             : static_cast<int>(0.5 + v)));
    }, start, index, weights);
    table = upload_table(stream, start, index, weights);
  } else if (f64) {
    const double scale = area_scale<double>(p.in_len, p.out_len, p.align_corners, p.scale);
    std::vector<double> weights;
    build_table<double>(tap_ranges<double>(p, scale), p.transpose, p.in_len,
                        [](double w) { return w; }, start, index, weights);
    table = upload_table(stream, start, index, weights);
  } else {
    const float scale = area_scale<float>(p.in_len, p.out_len, p.align_corners, p.scale);
    std::vector<float> weights;
    build_table<float>(tap_ranges<float>(p, scale), p.transpose, p.in_len,
                       [](float w) { return w; }, start, index, weights);
    table = upload_table(stream, start, index, weights);
  }

  // Each output walks its taps once: not split, tables past a device's loop
  // limit (loop_budget; huge anti-aliased downscaling factors) raise.
  {
    int64_t widest = 0;
    for (size_t d = 0; d + 1 < start.size(); ++d) widest = std::max<int64_t>(widest, start[d + 1] - start[d]);
    const int64_t step = int64_t{group_count(stream, produced, kWorkgroup)} * kWorkgroup;
    if ((produced + step - 1) / step * (widest + 2) > loop_budget(stream))
      invalid(kResampleWhere, "resampling factors this large exceed the device's loop-iteration "
                              "limit (max_loop_iterations)");
  }
  const std::string name = std::string("upsample.table.") + (u8 ? "uint8" : f64 ? "float64" : "float32");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kResampleWhere, "no shader variant '" + name + "' (stale build?)");
  ResamplePush push{};
  push.src_addr = p.src.address;
  push.dst_addr = p.dst.address;
  push.weights_addr = table.first;
  push.index_addr = table.second;
  push.outer = static_cast<int32_t>(p.outer);
  push.src_len = static_cast<int32_t>(src_len);
  push.dst_len = static_cast<int32_t>(dst_len);
  push.inner = static_cast<int32_t>(p.inner);
  push.in_dtype = static_cast<int32_t>(p.src.dtype);
  push.out_dtype = static_cast<int32_t>(p.dst.dtype);
  push.weight_bits = weight_bits;
  std::vector<uint32_t> spec;
  if (tuning().specialize_dtypes)
    spec = {static_cast<uint32_t>(p.src.dtype), static_cast<uint32_t>(p.dst.dtype)};
  else
    spec = {UINT32_MAX, UINT32_MAX};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup, spec);
  stream.dispatch(pipeline, group_count(stream, produced, kWorkgroup), 1, 1, &push, sizeof(push));
}

}  // namespace tvk::kernels
