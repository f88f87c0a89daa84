// The cooperative-matrix implicit-GEMM convolution (kernels/conv_coopmat.h): when it applies,
// its tiles, and its self-check. conv.cpp's ImplicitGemm records it.
//
// Tiles of the real kernel (subgroups of the device's subgroup size, 16 x 16 x 16 products):
//   M >= 128: 128 x 128 per workgroup, 2 x 4 subgroups (64 x 32 each), 32 per reduction step
//   else:      64 x 64, 2 x 2 subgroups (32 x 32 each), 32 per step
// within 27 KiB of shared memory. The emulation (tests, lavapipe) runs 64 x 64 tiles of four
// emulated 32-lane subgroups unless ConvTuning::coopmat_tile / TORCH_VK_CONV_COOPMAT_TILE
// choose another.
//
// The self-check (per device and dtype, at the first use; also before the emulated kernel
// runs, so the tests cover it): a grouped, strided, padded and dilated 2-D convolution's
// forward, input gradient and weight gradient on the cooperative-matrix kernel against the
// portable implicit GEMM, on multiples of 1/64 whose products and sums are exact in float32 (so
// both must round to the same 16-bit values).
#include "kernels/conv_coopmat.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/conv.h"
#include "kernels/coopmat_self_check.h"
#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels::detail {
namespace {

constexpr const char* kWhere = "tvk::kernels::conv (cooperative matrix)";

std::atomic<const char*> g_last_algorithm{""};  // process-wide: backward runs on autograd's threads

// What the self-check's conv calls run: the portable implicit GEMM (reference) or the
// cooperative-matrix kernel without thresholds and without a check of its own.
enum class Forced { None, Portable, Coopmat };
thread_local Forced t_forced = Forced::None;

class ForceScope {
 public:
  explicit ForceScope(Forced f) : previous_(t_forced) { t_forced = f; }
  ~ForceScope() { t_forced = previous_; }
  ForceScope(const ForceScope&) = delete;
  ForceScope& operator=(const ForceScope&) = delete;

 private:
  Forced previous_;
};

CoopmatSelfChecks& self_checks() {
  static CoopmatSelfChecks checks("convolution");
  return checks;
}

bool half_dtype(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

std::string shader_name(DType dtype, bool emulated) {
  return std::string(emulated ? "conv.coopmat_emulated." : "conv.coopmat.") +
         (dtype == DType::BFloat16 ? "bfloat16" : "float16");
}

// The (real or emulated) kernel for `dtype` if `stream`'s device can run it, else null.
const ShaderBinary* available(Stream& stream, DType dtype, bool emulated) {
  if (!half_dtype(dtype)) return nullptr;
  if (!emulated && !device_has_16x16x16(stream.device().caps(), dtype)) return nullptr;
  return find_shader(shader_name(dtype, emulated));
}

// The shader's layout contract (its header): whole 16 x 16 fragments per subgroup, a
// power-of-two subgroup of 16 .. 256 lanes.
bool tile_valid(const ConvCoopmatPlan& t) {
  if (t.warps_m < 1 || t.warps_n < 1 || t.sg < 16 || t.sg > 256 || (t.sg & (t.sg - 1)) != 0)
    return false;
  return t.bm % (16 * t.warps_m) == 0 && t.bn % (16 * t.warps_n) == 0 && t.bk >= 16 &&
         t.bk % 16 == 0 && t.bm <= 256 && t.bn <= 256 && t.bk <= 128;
}

uint64_t shared_bytes(const ConvCoopmatPlan& t) {
  const uint64_t halves = uint64_t{t.bm} * (t.bk + 8) + uint64_t{t.bk} * (t.bn + 8);
  return 2 * halves + 4 * 256 * uint64_t{t.warps_m} * t.warps_n;
}

// Environment values "a,b,c,d,e,f" (6 unsigned integers).
bool env_tile(ConvCoopmatPlan* t) {
  const char* v = std::getenv("TORCH_VK_CONV_COOPMAT_TILE");
  if (!v || !*v) return false;
  unsigned x[6];
  char end = 0;
  if (std::sscanf(v, "%u,%u,%u,%u,%u,%u%c", &x[0], &x[1], &x[2], &x[3], &x[4], &x[5], &end) != 6)
    invalid(kWhere, "TORCH_VK_CONV_COOPMAT_TILE: expected bm,bn,bk,warps_m,warps_n,sg");
  t->bm = x[0], t->bn = x[1], t->bk = x[2], t->warps_m = x[3], t->warps_n = x[4], t->sg = x[5];
  return true;
}

// The tile for m rows: tuning, then the environment, then the defaults (*chosen: whether
// tuning or the environment gave it); the real kernel always takes the device's subgroup size.
ConvCoopmatPlan choose_tile(const DeviceCapabilities& caps, int64_t m, bool emulated, bool* chosen) {
  ConvCoopmatPlan t;
  const ConvTuning::CoopmatTile& forced = conv_tuning().coopmat_tile;
  *chosen = true;
  if (forced.bm) {
    t.bm = forced.bm, t.bn = forced.bn, t.bk = forced.bk;
    t.warps_m = forced.warps_m, t.warps_n = forced.warps_n, t.sg = forced.sg;
  } else if (!env_tile(&t)) {
    *chosen = false;
    const bool large = !emulated && m >= 128;
    t.bm = large ? 128 : 64, t.bn = large ? 128 : 64, t.bk = 32;
    t.warps_m = 2, t.warps_n = large ? 4 : 2, t.sg = 32;
  }
  if (!emulated) t.sg = caps.subgroup_size;
  t.emulated = emulated;
  return t;
}

using Coopmat = ConvTuning::Coopmat;

Coopmat mode() {
  const Coopmat forced = conv_tuning().coopmat;
  if (forced != Coopmat::Auto) return forced;
  switch (coopmat_switch("TORCH_VK_CONV_COOPMAT")) {
    case CoopmatSwitch::Off: return Coopmat::Off;
    case CoopmatSwitch::Emulate: return Coopmat::Emulate;
    case CoopmatSwitch::Unset: break;
  }
  return Coopmat::Auto;
}

// Synchronizes `stream`. False on a mismatch (the reason in *why); throws on errors.
bool self_check(Stream& stream, DType dtype, std::string* why) {
  // [2, 12, 11, 9] input, [40, 6, 3, 3] weight (2 groups), stride (2, 1), padding 1,
  // dilation (1, 2): a [2, 40, 6, 7] output.
  ConvShape s;
  s.spatial = 2;
  s.batch = 2, s.in_channels = 12, s.out_channels = 40, s.groups = 2;
  s.input[0] = 11, s.input[1] = 9, s.output[0] = 6, s.output[1] = 7;
  s.kernel[0] = 3, s.kernel[1] = 3, s.stride[0] = 2, s.stride[1] = 1;
  s.padding[0] = 1, s.padding[1] = 1, s.dilation[0] = 1, s.dilation[1] = 2;
  const int64_t nx = 2 * 12 * 11 * 9, ny = 2 * 40 * 6 * 7, nw = 40 * 6 * 3 * 3;
  CheckBuffers buffers(stream);
  auto tensor = [&](const Operand& op, int64_t c, int64_t h, int64_t w) {
    ConvTensor t;
    t.address = op.address, t.dtype = dtype;
    t.strides[0] = c * h * w, t.strides[1] = h * w, t.strides[2] = w, t.strides[3] = 1;
    return t;
  };
  auto upload = [&](int64_t elements, uint32_t salt) {
    const Operand op = buffers.operand(elements, dtype);
    const std::vector<uint16_t> values = values_of_64ths(elements, salt, dtype);
    stream.copy_from_host(values.data(), op.address, static_cast<uint64_t>(elements) * 2);
    return op;
  };
  auto download = [&](const Operand& op, int64_t elements) {
    std::vector<uint16_t> v(elements);
    stream.copy_to_host(op.address, v.data(), static_cast<uint64_t>(elements) * 2);
    return v;
  };
  const Operand x = upload(nx, 1), dy = upload(ny, 7), w = upload(nw, 13);
  std::vector<uint16_t> out[2][3];
  for (int run = 0; run < 2; ++run) {
    ForceScope force(run == 0 ? Forced::Portable : Forced::Coopmat);
    const Operand y = buffers.operand(ny, dtype), dx = buffers.operand(nx, dtype),
                  dw = buffers.operand(nw, dtype);
    conv_forward(stream, s, tensor(y, 40, 6, 7), tensor(x, 12, 11, 9), w, Operand{});
    conv_backward_input(stream, s, tensor(dx, 12, 11, 9), tensor(dy, 40, 6, 7), w, Operand{});
    conv_backward_weight(stream, s, dw, tensor(x, 12, 11, 9), tensor(dy, 40, 6, 7));
    out[run][0] = download(y, ny);
    out[run][1] = download(dx, nx);
    out[run][2] = download(dw, nw);
  }
  if (conv_tuning().coopmat_fail_self_check ||
      self_check_forced_to_fail("TORCH_VK_CONV_COOPMAT_SELF_CHECK"))
    out[1][0][ny / 2] ^= 0x0400;  // flips an exponent bit
  bool ok = true;
  for (int i = 0; i < 3 && ok; ++i) ok = close_16(out[1][i], out[0][i], dtype, 1e-3f);
  if (!ok) *why = "its result differs from the portable kernel's";
  return ok;
}

}  // namespace

bool conv_coopmat_plan(Stream& stream, DType dtype, int64_t m, int64_t n, int64_t r,
                       ConvCoopmatPlan* plan) {
  if (t_forced == Forced::Portable) return false;
  const Coopmat md = mode();
  if (md == Coopmat::Off) return false;
  const bool emulated = md == Coopmat::Emulate;
  const ShaderBinary* shader = available(stream, dtype, emulated);
  if (!shader) return false;
  const DeviceCapabilities& caps = stream.device().caps();
  bool chosen = false;
  ConvCoopmatPlan t = choose_tile(caps, m, emulated, &chosen);
  if (!tile_valid(t)) {
    if (emulated || chosen) invalid(kWhere, "invalid cooperative-matrix convolution tile");
    return false;
  }
  if (t.workgroup() > caps.max_workgroup_invocations || t.workgroup() > caps.max_workgroup_size[0] ||
      shared_bytes(t) > caps.max_shared_memory_size)
    return false;
  t.shader = shader;
  if (t_forced == Forced::None) {
    // The real kernel where its tiles fill up (as the cooperative-matrix GEMM's threshold; not
    // yet measured on hardware for convolutions), after the self-check.
    if (!emulated && (m < 16 || n < 16 || double(m) * double(n) * double(r) < double(1 << 18)))
      return false;
    if (!self_checks().passed(stream, dtype, [&](std::string* why) { return self_check(stream, dtype, why); }))
      return false;
  }
  *plan = t;
  return true;
}

int64_t conv_coopmat_loop_cost(const ConvCoopmatPlan& t, int64_t tiles, int64_t r) {
  const int64_t wg = t.workgroup(), epl = 256 / t.sg;
  const int64_t fm = t.bm / (16 * t.warps_m), fn = t.bn / (16 * t.warps_n);
  const int64_t quads = (int64_t{t.bm} * t.bk / 4 + wg - 1) / wg + (int64_t{t.bk} * t.bn / 4 + wg - 1) / wg;
  // Per step: the gathers (4 elements per run) and stores, the fragment loops (the
  // emulation's products: 16 terms per element); per tile: the epilogue.
  const int64_t step = 6 * quads + t.bk / 16 * (fn + fm + fm * fn * (17 * epl + 1)) + 2;
  const int64_t steps = (r + t.bk - 1) / t.bk;
  return tiles * (4 + steps * step + fm * fn * (3 * epl + 2));
}

bool conv_coopmat_checking() { return t_forced != Forced::None; }

void set_last_conv_algorithm(const char* name) { g_last_algorithm.store(name); }

}  // namespace tvk::kernels::detail

namespace tvk::kernels {

const char* conv_coopmat_state(Stream& stream, DType dtype) {
  using namespace detail;
  const Coopmat md = mode();
  if (md == Coopmat::Off || !available(stream, dtype, md == Coopmat::Emulate)) return "unavailable";
  return self_checks().state(stream, dtype);
}

void conv_coopmat_forget_self_check(Stream& stream) { detail::self_checks().forget(stream); }

const char* last_conv_algorithm() { return detail::g_last_algorithm.load(); }

}  // namespace tvk::kernels
