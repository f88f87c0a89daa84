// Launcher of the upsampling family (shaders/upsample.comp): one invocation per produced
// element (output elements forward, grad_input elements backward) in memory order.
#include "kernels/upsample.h"

#include <cstddef>
#include <cstring>
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
  stream.dispatch(pipeline, group_count(stream, produced, kWorkgroup), 1, 1, &push, sizeof(push));
}

}  // namespace tvk::kernels
