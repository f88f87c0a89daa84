// Launcher of the cooperative-matrix GEMM (shaders/gemm_coopmat.comp, variants
// gemm.coopmat[_emulated].float16 / .bfloat16): float16 or bfloat16 A and B (both the same),
// or float32 A and B converted to bfloat16 while loaded (Gemm::float32_inputs: one rounded
// term, or hi + lo parts and three products), float32 accumulation, C and the bias of any
// float32-kind dtype. Each element type has its own device shapes
// (DeviceCapabilities::coopmat_f16_shapes / coopmat_bf16_shapes, float32 using bfloat16's)
// and its own self-check per device.
//
// Profiles (WARPS_M x WARPS_N subgroups of the device's subgroup size SG; CM x CN x CK the
// device's cooperative-matrix shape, 16 x 16 x 16 where listed):
//   large   BM x BN = 128 x 128, BK 32, 2 x 4 subgroups: each subgroup a 64 x 32 sub-tile
//           (4 x 2 fragments of 16 x 16), the tile shapes ggml-vulkan and the CUTLASS-style
//           kernels use for big products; for m, n >= 512
//   medium  64 x 64, BK 32, 2 x 2 subgroups (32 x 32 each, 2 x 2 fragments); smaller
//           products, where 128-wide tiles would leave most of the GPU idle
// Shared memory: (BM + 8)(BK + 8) + (BK + 8)(BN + 8) float16 values and WARPS_M * WARPS_N
// float32 scratch fragments: 30 KiB for large, well inside NVIDIA's 48 KiB per workgroup.
// A profile that does not fit the device (workgroup size, shared memory) falls back to medium,
// then to the portable kernels.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/coopmat_self_check.h"
#include "kernels/gemm_internal.h"
#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels::detail {
namespace {

constexpr const char* kWhere = "tvk::kernels::gemm (cooperative matrix)";

// The element types of A and B the kernel has variants for.
struct Element {
  DType dtype;
  const char* shader;
  const char* emulated_shader;
};
constexpr int kElementCount = 3;
constexpr Element kElements[kElementCount] = {
    {DType::Float16, "gemm.coopmat.float16", "gemm.coopmat_emulated.float16"},
    {DType::BFloat16, "gemm.coopmat.bfloat16", "gemm.coopmat_emulated.bfloat16"},
    // float32 operands converted to bfloat16 by the bfloat16 kernel (spec constant F32_TERMS)
    {DType::Float32, "gemm.coopmat.bfloat16", "gemm.coopmat_emulated.bfloat16"},
};
// Index into kElements of `dtype`, -1 for others.
int element_index(DType dtype) {
  return dtype == DType::Float16 ? 0 : dtype == DType::BFloat16 ? 1 : dtype == DType::Float32 ? 2 : -1;
}
const std::vector<DeviceCapabilities::CooperativeMatrixShape>& device_shapes(
    const DeviceCapabilities& caps, int e) {
  return e == 0 ? caps.coopmat_f16_shapes : caps.coopmat_bf16_shapes;
}

struct Profile {
  uint32_t bm, bn, bk, warps_m, warps_n;
  uint32_t cm = 16, cn = 16, ck = 16;
};

constexpr Profile kLarge{128, 128, 32, 2, 4};
constexpr Profile kMedium{64, 64, 32, 2, 2};

CoopmatSelfChecks& self_checks() {
  static CoopmatSelfChecks checks("GEMM");
  return checks;
}

bool emulating() { return gemm_tuning().coopmat == GemmTuning::Coopmat::Emulate; }

// The shape the real kernel uses on this device: 16 x 16 x 16 where listed, otherwise the first
// listed shape whose sides are multiples of 8 and at most 32 (the profiles' tiles divide by it).
bool device_shape(const DeviceCapabilities& caps, int e, Profile* out) {
  const DeviceCapabilities::CooperativeMatrixShape* pick = nullptr;
  for (const auto& s : device_shapes(caps, e))
    if (s.m == 16 && s.n == 16 && s.k == 16) pick = &s;
  if (!pick)
    for (const auto& s : device_shapes(caps, e))
      if (s.m && s.n && s.k && s.m <= 32 && s.n <= 32 && s.k <= 32 && s.m % 8 == 0 &&
          s.n % 8 == 0 && s.k % 8 == 0) {
        pick = &s;
        break;
      }
  if (!pick) return false;
  out->cm = pick->m, out->cn = pick->n, out->ck = pick->k;
  return true;
}

// Whether this process can run the (real or emulated) kernel for element type `e` on
// `stream`'s device at all.
bool available(Stream& stream, int e, Profile* shape) {
  const GemmTuning& t = gemm_tuning();
  if (t.coopmat == GemmTuning::Coopmat::Off) return false;
  if (emulating()) {
    *shape = Profile{};
    return find_shader(kElements[e].emulated_shader) != nullptr;
  }
  const DeviceCapabilities& caps = stream.device().caps();
  return caps.cooperative_matrix && find_shader(kElements[e].shader) != nullptr &&
         device_shape(caps, e, shape);
}

// `terms`: F32_TERMS (3: second tiles for the lo parts).
uint64_t shared_bytes(const Profile& f, bool emulated, int terms) {
  const uint64_t elem = emulated ? 4 : 2;  // the emulation keeps 16-bit values in 32-bit words
  const uint64_t tiles = terms == 3 ? 2 : 1;
  return tiles * elem * ((f.bm + 8) * (f.bk + 8) + (f.bk + 8) * (f.bn + 8)) +
         4ull * f.warps_m * f.warps_n * f.cm * f.cn;
}

bool profile_valid(const Profile& f, uint32_t sg) {
  const uint32_t wg = f.warps_m * f.warps_n * sg;
  return f.bm && f.bn && f.bk && f.warps_m && f.warps_n && f.cm && f.cn && f.ck && sg &&
         f.bm % (f.warps_m * f.cm) == 0 && f.bn % (f.warps_n * f.cn) == 0 && f.bk % f.ck == 0 &&
         (f.bm * f.bk) % (4 * wg) == 0 && (f.bk * f.bn) % (4 * wg) == 0 &&
         (f.cm * f.cn) % sg == 0 && f.bm % 4 == 0 && f.bk % 4 == 0 && f.bn % 4 == 0;
}

bool fits(const DeviceCapabilities& caps, const Profile& f, uint32_t sg, bool emulated, int terms) {
  const uint32_t wg = f.warps_m * f.warps_n * sg;
  return wg <= caps.max_workgroup_invocations && wg <= caps.max_workgroup_size[0] &&
         shared_bytes(f, emulated, terms) <= caps.max_shared_memory_size;
}

// The profile for `p` (F32_TERMS `terms`), with the device's (or the tuning's emulated) shape;
// false when none fits the device. (The large profile with terms 3 needs 51 KiB of shared
// memory: past NVIDIA's 48 KiB it takes the medium one.)
bool choose_profile(Stream& stream, const Gemm& p, const Profile& shape, int terms, Profile* out) {
  const DeviceCapabilities& caps = stream.device().caps();
  const GemmTuning& t = gemm_tuning();
  const bool emulated = emulating();
  const uint32_t sg = caps.subgroup_size;
  Profile f = p.m >= 512 && p.n >= 512 ? kLarge : kMedium;
  f.cm = shape.cm, f.cn = shape.cn, f.ck = shape.ck;
  if (t.coopmat_bm) {
    f = Profile{t.coopmat_bm, t.coopmat_bn, t.coopmat_bk, t.coopmat_warps_m, t.coopmat_warps_n,
                f.cm, f.cn, f.ck};
    if (emulated && t.coopmat_cm) f.cm = t.coopmat_cm, f.cn = t.coopmat_cn, f.ck = t.coopmat_ck;
    if (!profile_valid(f, sg)) invalid(kWhere, "invalid cooperative-matrix tile configuration");
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (profile_valid(f, sg) && fits(caps, f, sg, emulated, terms)) {
      *out = f;
      return true;
    }
    f = Profile{kMedium.bm, kMedium.bn, kMedium.bk, kMedium.warps_m, kMedium.warps_n, f.cm, f.cn,
                f.ck};
  }
  return false;
}

// 4-element loads along one axis (8 bytes of 16-bit values, 16 of float32): aligned to them,
// unit stride along it, the other stride, the batch stride and the length along it multiples
// of 4.
bool quad_ok(const GemmMatrix& x, int64_t batch, int64_t unit_stride, int64_t other_stride,
             int64_t length) {
  return unit_stride == 1 && x.address % (4 * dtype_size(x.dtype)) == 0 && other_stride % 4 == 0 &&
         length % 4 == 0 && (batch == 1 || x.batch_stride % 4 == 0);
}

// F32_TERMS of `p` for element type `e` (0 for 16-bit operands).
int f32_terms(const Gemm& p, int e) {
  if (e != 2) return 0;
  return p.float32_inputs == Gemm::Float32Inputs::BFloat16 ? 1 : 3;
}

void record(Stream& stream, const Gemm& p, const Profile& f) {
  const bool emulated = emulating();
  const int e = element_index(p.a.dtype);
  const Element& element = kElements[e];
  const char* name = emulated ? element.emulated_shader : element.shader;
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, std::string("no shader variant '") + name + "'");
  const DeviceCapabilities& caps = stream.device().caps();
  const uint32_t sg = caps.subgroup_size;
  uint32_t a_load = abs64(p.a.col_stride) <= abs64(p.a.row_stride) ? 0 : 1;
  if (quad_ok(p.a, p.batch, p.a.col_stride, p.a.row_stride, p.k))
    a_load = 2;
  else if (quad_ok(p.a, p.batch, p.a.row_stride, p.a.col_stride, p.m))
    a_load = 3;
  uint32_t b_load = abs64(p.b.col_stride) <= abs64(p.b.row_stride) ? 0 : 1;
  if (quad_ok(p.b, p.batch, p.b.col_stride, p.b.row_stride, p.n))
    b_load = 2;
  else if (quad_ok(p.b, p.batch, p.b.row_stride, p.b.col_stride, p.k))
    b_load = 3;
  const GemmPush push = gemm_push(p);
  const bool has_bias = p.bias.address != 0;
  const uint32_t gx = grid_groups(caps, (p.n + f.bn - 1) / f.bn, 0);
  const uint32_t gy = grid_groups(caps, (p.m + f.bm - 1) / f.bm, 1);
  const uint32_t gz = grid_groups(caps, p.batch, 2);
  std::vector<uint32_t> spec = {
      static_cast<uint32_t>(p.a.dtype), static_cast<uint32_t>(p.b.dtype),
      static_cast<uint32_t>(p.c.dtype),
      has_bias ? static_cast<uint32_t>(p.bias.dtype) : UINT32_MAX,
      f.bm, f.bn, f.bk, f.warps_m, f.warps_n, sg, f.cm, f.cn, f.ck, a_load, b_load,
      static_cast<uint32_t>(f32_terms(p, e))};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, f.warps_m * f.warps_n * sg, spec);
  const AccessSet accesses = gemm_accesses(p);
  stream.dispatch(pipeline, gx, gy, gz, &push, sizeof(push), nullptr, 0, &accesses);
  set_last_gemm_algorithm(emulated ? "coopmat_emulated" : "coopmat");
}

// Self-check: C = A @ B for 70 x 88 and 88 x 52 matrices (element type `e`) of small
// multiples of 1/8, so that every product and every partial sum is exact in float32 whatever
// the order; the cooperative-matrix result must equal the portable kernel's bit for bit.
// Synchronizes `stream` (once per device, element type and process). Returns false on a
// mismatch; throws on errors.
bool self_check(Stream& stream, int e, const Profile& shape, std::string* why) {
  constexpr int64_t M = 70, N = 52, K = 88;
  const DType dtype = kElements[e].dtype;
  const int64_t esize = dtype_size(dtype);
  std::vector<uint16_t> a(M * K), b(K * N);
  std::vector<float> af, bf;  // float32: the same values
  auto bfloat16_of_eighths = [](int v) {  // v / 8 as bfloat16 bits (exact: few mantissa bits)
    const float f = static_cast<float>(v) / 8.0f;
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    return static_cast<uint16_t>(bits >> 16);
  };
  auto half_of_eighths = [&](int v) {  // v / 8 for |v| <= 8 as float16 (or bfloat16) bits
    if (dtype == DType::BFloat16) return bfloat16_of_eighths(v);
    if (v == 0) return uint16_t(0);
    const uint16_t sign = v < 0 ? 0x8000 : 0;
    int m = v < 0 ? -v : v, e = 0;
    while (m >= 2) m >>= 1, ++e;  // m * 2^e, the top bit
    const int value = v < 0 ? -v : v;
    const int frac = value - (1 << e);                    // value = 2^e + frac
    const uint16_t exponent = static_cast<uint16_t>(15 + e - 3);
    const uint16_t mantissa = static_cast<uint16_t>((frac << 10) >> e);
    return static_cast<uint16_t>(sign | exponent << 10 | mantissa);
  };
  for (int64_t i = 0; i < M * K; ++i) a[i] = half_of_eighths(static_cast<int>((i * 37) % 17) - 8);
  for (int64_t i = 0; i < K * N; ++i) b[i] = half_of_eighths(static_cast<int>((i * 11) % 13) - 6);
  if (dtype == DType::Float32) {
    for (int64_t i = 0; i < M * K; ++i) af.push_back(static_cast<float>((i * 37) % 17 - 8) / 8.0f);
    for (int64_t i = 0; i < K * N; ++i) bf.push_back(static_cast<float>((i * 11) % 13 - 6) / 8.0f);
  }
  const void* a_data = af.empty() ? static_cast<const void*>(a.data()) : af.data();
  const void* b_data = bf.empty() ? static_cast<const void*>(b.data()) : bf.data();
  CheckBuffers buffers(stream);
  auto allocate = [&](uint64_t bytes) { return buffers.allocate(bytes); };
  const uint64_t da = allocate(a.size() * esize), db = allocate(b.size() * esize);
  const uint64_t c1 = allocate(M * N * 4), c2 = allocate(M * N * 4);
  stream.copy_from_host(a_data, da, a.size() * esize);
  stream.copy_from_host(b_data, db, b.size() * esize);
  Gemm g;
  g.m = M, g.n = N, g.k = K;
  g.a = GemmMatrix{da, dtype, K, 1, 0};
  g.b = GemmMatrix{db, dtype, N, 1, 0};
  g.c = GemmMatrix{c1, DType::Float32, N, 1, 0};
  g.c.address = c2;
  record_portable(stream, g);
  std::vector<float> r1(M * N), r2(M * N);
  stream.copy_to_host(c2, r2.data(), r2.size() * 4);
  g.c.address = c1;
  bool ok = true;
  // float32: both conversions (rounded, and hi + lo parts), each its own pipeline.
  for (auto inputs : {Gemm::Float32Inputs::BFloat16x3, Gemm::Float32Inputs::BFloat16}) {
    g.float32_inputs = inputs;
    Profile f;
    if (!choose_profile(stream, g, shape, f32_terms(g, e), &f))
      throw std::runtime_error("no profile fits");
    record(stream, g, f);
    stream.copy_to_host(c1, r1.data(), r1.size() * 4);
    if (gemm_tuning().coopmat_fail_self_check) r1[M * N / 2] += 1.0f;
    ok = ok && std::memcmp(r1.data(), r2.data(), r1.size() * 4) == 0;
    if (dtype != DType::Float32) break;
  }
  if (!ok) *why = "its result differs from the portable kernel's";
  return ok;
}

}  // namespace

bool try_gemm_coopmat(Stream& stream, const Gemm& p) {
  const int e = element_index(p.a.dtype);
  if (p.kind != ComputeKind::Float32 || p.k == 0 || e < 0 || p.b.dtype != p.a.dtype) return false;
  if (e == 2 && p.float32_inputs == Gemm::Float32Inputs::Exact) return false;
  const bool emulated = emulating();
  if (!emulated) {
    const double macs = double(p.m) * double(p.n) * double(p.k) * double(p.batch);
    if (p.m < 16 || p.n < 16 || macs < double(1 << 18)) return false;
  }
  Profile shape;
  if (!available(stream, e, &shape)) return false;
  Profile f;
  if (!choose_profile(stream, p, shape, f32_terms(p, e), &f)) return false;

  // Keyed by A's dtype: float32 A / B (converted to bfloat16) have a check of their own.
  if (!self_checks().passed(stream, p.a.dtype,
                            [&](std::string* why) { return self_check(stream, e, shape, why); }))
    return false;
  record(stream, p, f);
  return true;
}

}  // namespace tvk::kernels::detail

namespace tvk::kernels {

const char* gemm_coopmat_state(Stream& stream, uint32_t shape[3], DType dtype) {
  using namespace detail;
  Profile s;
  shape[0] = shape[1] = shape[2] = 0;
  const int e = element_index(dtype);
  if (e < 0 || !available(stream, e, &s)) return "unavailable";
  shape[0] = s.cm, shape[1] = s.cn, shape[2] = s.ck;
  return self_checks().state(stream, dtype);
}

void gemm_coopmat_forget_self_check(Stream& stream) { detail::self_checks().forget(stream); }

}  // namespace tvk::kernels
