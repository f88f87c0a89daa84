// Launcher of the cooperative-matrix attention forward (shaders/attention_coopmat.comp,
// variants attention.coopmat[_emulated].<float16|bfloat16>.d<64|128>): float16 or bfloat16
// q, k, v and out with head dims up to 128, the parameter block of the portable kernels
// (detail::AttentionParams), the same outputs (out, float32 logsumexp), so the backward and
// every caller are unchanged.
//
// Tiles (the real kernel): 4 subgroups of the device's subgroup size, each owning 16 query
// rows (64 per workgroup); 64 keys per tile at head dims <= 64, 32 above. Shared memory is
// 46 KiB at both, inside NVIDIA's 48 KiB. The emulation (tests, lavapipe: 32 KiB of shared
// memory, subgroups of 8) runs smaller tiles of emulated 32-lane subgroups; its tile can be
// chosen (AttentionTuning::coopmat_warps / _keys / _sg) so that the tests cover 1, 2 and 4
// lanes per softmax row.
//
// The real kernel runs on a device only after a self-check at its first use there (per
// dtype): two small problems, one per head-dim variant (partial tiles, causal, head dims that
// are not multiples of 16), compared with the portable tiled kernel.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention_internal.h"
#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels::detail {
namespace {

constexpr const char* kWhere = "tvk::kernels::attention_forward (cooperative matrix)";
constexpr int64_t kMaxHeadDim = 128;

using Coopmat = AttentionTuning::Coopmat;

Coopmat mode() {
  const Coopmat forced = attention_tuning().coopmat;
  if (forced != Coopmat::Auto) return forced;
  if (const char* v = std::getenv("TORCH_VK_ATTENTION_COOPMAT")) {
    if (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0) return Coopmat::Off;
    if (std::strcmp(v, "emulate") == 0) return Coopmat::Emulate;
  }
  return Coopmat::Auto;
}

bool half_dtype(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

const char* shader_name(DType dtype, int dmax, bool emulated) {
  static const char* const names[2][2][2] = {
      {{"attention.coopmat.float16.d64", "attention.coopmat.float16.d128"},
       {"attention.coopmat.bfloat16.d64", "attention.coopmat.bfloat16.d128"}},
      {{"attention.coopmat_emulated.float16.d64", "attention.coopmat_emulated.float16.d128"},
       {"attention.coopmat_emulated.bfloat16.d64", "attention.coopmat_emulated.bfloat16.d128"}}};
  return names[emulated][dtype == DType::BFloat16][dmax == 128];
}

// Whether the device lists the 16 x 16 x 16 float16 (bfloat16) x -> float32 subgroup shape.
bool device_has_shape(const DeviceCapabilities& caps, DType dtype) {
  if (!caps.cooperative_matrix) return false;
  const auto& shapes = dtype == DType::BFloat16 ? caps.coopmat_bf16_shapes : caps.coopmat_f16_shapes;
  for (const auto& s : shapes)
    if (s.m == 16 && s.n == 16 && s.k == 16) return true;
  return false;
}

struct Tile {
  uint32_t warps, keys, sg;
  uint32_t workgroup() const { return warps * sg; }
  uint32_t rows() const { return 16 * warps; }
};

// The tile for head-dim bound `dmax`: the real kernel's, or the emulation's (tuning, then
// TORCH_VK_ATTENTION_COOPMAT_TILE=warps,keys,sg, then the default).
Tile choose_tile(const DeviceCapabilities& caps, int dmax, bool emulated) {
  if (!emulated) return Tile{4, dmax == 64 ? 64u : 32u, caps.subgroup_size};
  const AttentionTuning& t = attention_tuning();
  Tile tile{2, dmax == 64 ? 32u : 16u, 32};
  if (t.coopmat_warps) {
    tile = Tile{t.coopmat_warps, t.coopmat_keys, t.coopmat_sg};
  } else if (const char* v = std::getenv("TORCH_VK_ATTENTION_COOPMAT_TILE"); v && *v) {
    unsigned w = 0, k = 0, s = 0;
    if (std::sscanf(v, "%u,%u,%u", &w, &k, &s) != 3)
      invalid(kWhere, "TORCH_VK_ATTENTION_COOPMAT_TILE must be warps,keys,sg");
    tile = Tile{w, k, s};
  }
  return tile;
}

// The shader's layout contract (see its header): a power-of-two subgroup of 16 .. 256 lanes,
// keys a multiple of 16 and of 4 lanes' groups per row, at most dmax (the P tiles fit in the
// q tile's space).
bool tile_valid(const Tile& t, int dmax) {
  if (t.warps < 1 || t.warps > 16 || t.sg < 16 || t.sg > 256 || (t.sg & (t.sg - 1)) != 0)
    return false;
  const uint32_t lanes_per_row = t.sg / 16;
  return t.keys >= 16 && t.keys % 16 == 0 && t.keys % (4 * lanes_per_row) == 0 &&
         t.keys <= static_cast<uint32_t>(dmax);
}

uint64_t shared_bytes(const Tile& t, int dmax, bool emulated) {
  const uint64_t ld = dmax + 8;
  uint64_t halves = 2ull * t.keys * ld + uint64_t{t.rows()} * ld;
  if (emulated) halves += uint64_t{t.warps} * 16 * (t.keys + 8);  // P beside q
  const uint64_t floats = uint64_t{t.warps} * 16 * (t.keys + 4) + uint64_t{t.warps} * t.sg + t.rows();
  return 2 * halves + 4 * floats;
}

// Loop iterations of one invocation (DeviceCapabilities::max_loop_iterations; counted as if
// nothing were unrolled): the tile loads, the fragment loops (the emulation's scalar matrix
// products per element) and the softmax, per key tile.
int64_t loop_iterations(const AttentionForward& p, const Tile& t, int dmax) {
  const int64_t wg = t.workgroup(), epl = 256 / t.sg, df = dmax / 16, kf = t.keys / 16;
  const int64_t groups = t.keys / 4 / (t.sg / 16);
  const int64_t load = (int64_t{t.keys} * dmax / 4 + wg - 1) / wg;
  const int64_t per_tile = 2 * load + kf * (2 + df) * (epl + 1) + df * (kf + 3) * (epl + 1) +
                           8 * groups + 16;
  const int64_t key_tiles = (p.S + t.keys - 1) / t.keys;
  return key_tiles * per_tile + (int64_t{t.rows()} * dmax / 4 + wg - 1) / wg + df * epl + 16;
}

// 4-element loads of every row of a [batch, heads, rows, n] operand: 8-byte aligned rows.
bool quad_rows(const Operand& op, const AttentionStrides& st, int64_t n) {
  return n % 4 == 0 && op.address % 8 == 0 && st.batch % 4 == 0 && st.head % 4 == 0 &&
         st.row % 4 == 0;
}

const char* g_last_algorithm = "";

void record(Stream& stream, const AttentionForward& p, const AttentionParams& a, const Tile& t,
            int dmax, bool emulated) {
  const char* name = shader_name(p.q.dtype, dmax, emulated);
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, std::string("no shader variant '") + name + "'");
  const uint32_t vec = (quad_rows(p.q, p.q_strides, p.E) && quad_rows(p.k, p.k_strides, p.E) ? 1u : 0u) |
                       (quad_rows(p.v, p.v_strides, p.Ev) ? 2u : 0u);
  const std::vector<uint32_t> spec = {t.sg, t.warps, t.keys, vec};
  VkPipeline pipeline = stream.device().pipelines().get(*shader, t.workgroup(), spec);
  const int64_t tiles = (p.L + t.rows() - 1) / t.rows();
  const uint64_t params = stream.upload_params(&a, sizeof a);
  const AccessSet accesses = attention_forward_accesses(p);
  stream.dispatch(pipeline, static_cast<uint32_t>(tiles), static_cast<uint32_t>(p.batch * p.heads),
                  1, &params, sizeof params, nullptr, 0, &accesses);
  g_last_algorithm = emulated ? "coopmat_emulated" : "coopmat";
}

// Whether `p` can run on the (real or emulated) kernel on this stream's device at all, and
// with which tile.
bool usable(Stream& stream, const AttentionForward& p, bool emulated, int* dmax, Tile* tile) {
  if (!half_dtype(p.q.dtype) || std::max(p.E, p.Ev) > kMaxHeadDim) return false;
  const DeviceCapabilities& caps = stream.device().caps();
  if (!emulated && !device_has_shape(caps, p.q.dtype)) return false;
  *dmax = std::max(p.E, p.Ev) <= 64 ? 64 : 128;
  if (!find_shader(shader_name(p.q.dtype, *dmax, emulated))) return false;
  *tile = choose_tile(caps, *dmax, emulated);
  if (!tile_valid(*tile, *dmax)) {
    if (emulated) invalid(kWhere, "invalid cooperative-matrix attention tile");
    return false;
  }
  if (tile->workgroup() > caps.max_workgroup_invocations ||
      tile->workgroup() > caps.max_workgroup_size[0] ||
      shared_bytes(*tile, *dmax, emulated) > caps.max_shared_memory_size)
    return false;
  if ((p.L + tile->rows() - 1) / tile->rows() > 65535) return false;
  return loop_iterations(p, *tile, *dmax) <= loop_budget(stream);
}

enum class State { Unchecked, Passed, Failed };

struct Registry {
  std::mutex mutex;
  std::map<std::pair<const Device*, DType>, State> states;
};
Registry& registry() {
  static Registry r;
  return r;
}

// Host bits of k / 64 (|k| <= 64: exact in float16 and bfloat16).
uint16_t bits_of_64ths(int k, DType dtype) {
  const float f = static_cast<float>(k) / 64.0f;
  uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  if (dtype == DType::BFloat16) return static_cast<uint16_t>(u >> 16);
  if (k == 0) return 0;
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int32_t exponent = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | ((u >> 13) & 0x3ffu));
}

float float_of_bits(uint16_t h, DType dtype) {
  if (dtype == DType::BFloat16) {
    const uint32_t u = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  const uint32_t sign = (h & 0x8000u) ? 1 : 0, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -24)
                          : std::ldexp(1.0f + static_cast<float>(mantissa) / 1024.0f,
                                       static_cast<int>(exponent) - 15);
  if (exponent == 31) v = mantissa ? NAN : INFINITY;
  return sign ? -v : v;
}

// One self-check problem: [1, 2, L, E] q, [1, 2, S, E] k, [1, 2, S, Ev] v of k / 64 values.
struct CheckProblem {
  int64_t L, S, E, Ev;
  bool causal;
};

// Compares the kernel with the portable one on `c`; false on a mismatch (out beyond 2e-2 or
// the logsumexp beyond 1e-2: the inputs are in [-1, 1], P is rounded to 16 bits) or an error.
bool check_problem(Stream& stream, DType dtype, const CheckProblem& c, std::string* why) {
  constexpr int64_t heads = 2;
  const int64_t nq = heads * c.L * c.E, nk = heads * c.S * c.E, nv = heads * c.S * c.Ev;
  const int64_t no = heads * c.L * c.Ev, nl = heads * c.L;
  std::vector<uint16_t> q(nq), k(nk), v(nv);
  auto fill = [&](std::vector<uint16_t>& x, uint32_t salt) {
    for (size_t i = 0; i < x.size(); ++i) {
      const uint32_t h = (static_cast<uint32_t>(i) + salt) * 2654435761u;
      x[i] = bits_of_64ths(static_cast<int>((h >> 16) % 129) - 64, dtype);
    }
  };
  fill(q, 1), fill(k, 7), fill(v, 13);
  Allocator& allocator = stream.device().allocator();
  std::vector<uint64_t> buffers;
  auto allocate = [&](uint64_t bytes) {
    buffers.push_back(allocator.allocate(bytes, stream.id()));
    return buffers.back();
  };
  bool ok = false;
  try {
    AttentionForward p;
    p.batch = 1, p.heads = heads, p.group = 1, p.L = c.L, p.S = c.S, p.E = c.E, p.Ev = c.Ev;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.E));
    p.causal = c.causal;
    p.q = Operand{allocate(nq * 2), dtype};
    p.k = Operand{allocate(nk * 2), dtype};
    p.v = Operand{allocate(nv * 2), dtype};
    const Operand out[2] = {{allocate(no * 2), dtype}, {allocate(no * 2), dtype}};
    const Operand lse[2] = {{allocate(nl * 4), DType::Float32}, {allocate(nl * 4), DType::Float32}};
    p.q_strides = {heads * c.L * c.E, c.L * c.E, c.E};
    p.k_strides = {heads * c.S * c.E, c.S * c.E, c.E};
    p.v_strides = {heads * c.S * c.Ev, c.S * c.Ev, c.Ev};
    p.out_strides = {heads * c.L * c.Ev, c.L * c.Ev, c.Ev};
    stream.copy_from_host(q.data(), p.q.address, nq * 2);
    stream.copy_from_host(k.data(), p.k.address, nk * 2);
    stream.copy_from_host(v.data(), p.v.address, nv * 2);
    std::vector<uint16_t> o[2] = {std::vector<uint16_t>(no), std::vector<uint16_t>(no)};
    std::vector<float> l[2] = {std::vector<float>(nl), std::vector<float>(nl)};
    for (int run = 0; run < 2; ++run) {
      p.out = out[run], p.lse = lse[run];
      AttentionParams a{};
      a.q = p.q.address, a.k = p.k.address, a.v = p.v.address, a.out = p.out.address;
      a.lse = p.lse.address;
      a.q_sb = static_cast<int32_t>(p.q_strides.batch), a.q_sh = static_cast<int32_t>(p.q_strides.head);
      a.q_sl = static_cast<int32_t>(p.q_strides.row);
      a.k_sb = static_cast<int32_t>(p.k_strides.batch), a.k_sh = static_cast<int32_t>(p.k_strides.head);
      a.k_sl = static_cast<int32_t>(p.k_strides.row);
      a.v_sb = static_cast<int32_t>(p.v_strides.batch), a.v_sh = static_cast<int32_t>(p.v_strides.head);
      a.v_sl = static_cast<int32_t>(p.v_strides.row);
      a.o_sb = static_cast<int32_t>(p.out_strides.batch), a.o_sh = static_cast<int32_t>(p.out_strides.head);
      a.o_sl = static_cast<int32_t>(p.out_strides.row);
      a.heads = heads, a.group = 1, a.batch = 1;
      a.L = static_cast<int32_t>(c.L), a.S = static_cast<int32_t>(c.S);
      a.E = static_cast<int32_t>(c.E), a.Ev = static_cast<int32_t>(c.Ev);
      a.dtype = static_cast<int32_t>(dtype);
      a.mask_dtype = static_cast<int32_t>(DType::Bool);
      a.flags = c.causal ? 1 : 0;
      a.scale = p.scale;
      a.drop_scale = 1.0f;
      a.row_end = static_cast<int32_t>(heads * c.L), a.j_end = static_cast<int32_t>(c.S);
      if (run == 0) {
        record_attention_portable(stream, p, a);
      } else {
        int dmax = 0;
        Tile tile{};
        if (!usable(stream, p, false, &dmax, &tile)) throw std::runtime_error("no tile fits the device");
        record(stream, p, a, tile, dmax, false);
      }
      stream.copy_to_host(p.out.address, o[run].data(), no * 2);
      stream.copy_to_host(p.lse.address, l[run].data(), nl * 4);
    }
    const char* fail = std::getenv("TORCH_VK_ATTENTION_COOPMAT_SELF_CHECK");
    if (attention_tuning().coopmat_fail_self_check || (fail && std::strcmp(fail, "fail") == 0))
      l[1][nl / 2] += 1.0f;
    ok = true;
    for (int64_t i = 0; i < no && ok; ++i) {
      const float x = float_of_bits(o[1][i], dtype), y = float_of_bits(o[0][i], dtype);
      ok = std::fabs(x - y) <= 2e-2f;
    }
    for (int64_t i = 0; i < nl && ok; ++i)
      ok = l[1][i] == l[0][i] || std::fabs(l[1][i] - l[0][i]) <= 1e-2f;
    if (!ok) *why = "its result differs from the portable kernel's";
  } catch (const std::exception& e) {
    *why = e.what();
    ok = false;
  }
  for (uint64_t buffer : buffers) allocator.free(buffer);
  return ok;
}

// Synchronizes `stream` (once per device, dtype and process).
bool self_check(Stream& stream, DType dtype, std::string* why) {
  // d64: a full and a partial key tile, q rows past L. d128: causal, head dims 112 / 80
  // (partial fragments), L below one workgroup's rows.
  return check_problem(stream, dtype, CheckProblem{72, 100, 64, 48, false}, why) &&
         check_problem(stream, dtype, CheckProblem{40, 70, 112, 80, true}, why);
}

}  // namespace

void set_last_attention_algorithm(const char* name) { g_last_algorithm = name; }

bool try_attention_coopmat(Stream& stream, const AttentionForward& p, const AttentionParams& a) {
  const Coopmat m = mode();
  if (m == Coopmat::Off) return false;
  const bool emulated = m == Coopmat::Emulate;
  int dmax = 0;
  Tile tile{};
  if (!usable(stream, p, emulated, &dmax, &tile)) return false;
  if (!emulated) {
    // GPUs only, and where the 64-row tiles keep the device busy: few query rows against many
    // keys (decode) take the split-KV kernel. (Thresholds not yet measured on hardware.)
    if (attention_algorithm(stream) != AttentionTuning::Algo::Tiled || p.L < 16) return false;
    if (p.L < 256 && attention_split_keys(p, (p.L + 15) / 16) > 0) return false;
    Registry& r = registry();
    const std::pair<const Device*, DType> key{&stream.device(), p.q.dtype};
    State state;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      state = r.states[key];
    }
    if (state == State::Failed) return false;
    if (state == State::Unchecked) {
      if (stream.capturing()) return false;  // the check waits on the host
      std::string why;
      const bool ok = self_check(stream, p.q.dtype, &why);
      {
        std::lock_guard<std::mutex> lock(r.mutex);
        r.states[key] = ok ? State::Passed : State::Failed;
      }
      if (!ok) {
        std::fprintf(stderr,
                     "torch-vk: the %s cooperative-matrix attention failed its self-check on %s "
                     "(%s); %s attention uses the portable kernels\n",
                     dtype_name(p.q.dtype), stream.device().caps().name.c_str(), why.c_str(),
                     dtype_name(p.q.dtype));
        return false;
      }
    }
  }
  record(stream, p, a, tile, dmax, emulated);
  return true;
}

}  // namespace tvk::kernels::detail

namespace tvk::kernels {

const char* attention_coopmat_state(Stream& stream, DType dtype) {
  using namespace detail;
  if (!half_dtype(dtype) || mode() == Coopmat::Off ||
      !device_has_shape(stream.device().caps(), dtype) ||
      !find_shader(shader_name(dtype, 64, false)))
    return "unavailable";
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.states.find({&stream.device(), dtype});
  const State state = it == r.states.end() ? State::Unchecked : it->second;
  return state == State::Passed ? "passed" : state == State::Failed ? "failed" : "unchecked";
}

void attention_coopmat_forget_self_check(Stream& stream) {
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (DType d : {DType::Float16, DType::BFloat16}) r.states.erase({&stream.device(), d});
}

const char* last_attention_algorithm() { return detail::g_last_algorithm; }

}  // namespace tvk::kernels
