// Launcher of the cooperative-matrix attention kernels: the forward
// (shaders/attention_coopmat.comp, variants attention.coopmat[_emulated].<float16|bfloat16>.
// d<64|128>) and the backward's two passes (shaders/attention_backward_coopmat.comp,
// attention_backward.coopmat[_emulated].<dtype>.<dq|dkv>.d<64|128>): float16 or bfloat16
// with head dims up to 128, the parameter blocks of the portable kernels
// (detail::AttentionParams / AttentionBackwardParams) and the same outputs, so callers do not
// change.
//
// Tiles of the real kernels (subgroups of the device's subgroup size, each owning 16 rows):
//   forward  4 subgroups (64 query rows); 64 keys per tile at head dims <= 64, 32 above
//   DQ pass  4 subgroups (64 query rows); 32 keys per tile
//   DKV pass 4 subgroups (64 keys) at head dims <= 64, 2 (32 keys) above; 16 queries per tile
// all within 47 KiB of shared memory (NVIDIA's limit is 48 KiB). The emulation (tests,
// lavapipe: 32 KiB of shared memory, subgroups of 8) runs smaller tiles of emulated 32-lane
// subgroups; the tests choose others (AttentionTuning::coopmat_*,
// TORCH_VK_ATTENTION_COOPMAT_TILE / _BACKWARD_TILE) to cover 1, 2 and 4 lanes per row and 1 to
// 4 subgroups.
//
// The real kernels run on a device only after a self-check at their first use there (per
// dtype): two forward problems (one per head-dim variant: partial tiles, causal, head dims
// that are not multiples of 16) and a backward one (GQA, causal, a partial key tile), compared
// with the portable kernels.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention_internal.h"
#include "kernels/coopmat_self_check.h"
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
  switch (coopmat_switch("TORCH_VK_ATTENTION_COOPMAT")) {
    case CoopmatSwitch::Off: return Coopmat::Off;
    case CoopmatSwitch::Emulate: return Coopmat::Emulate;
    case CoopmatSwitch::Unset: break;
  }
  return Coopmat::Auto;
}

bool half_dtype(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

enum class Kernel { Forward, Dq, Dkv };

// The shader variant of `kernel` for (dtype, dmax).
std::string shader_name(Kernel kernel, DType dtype, int dmax, bool emulated) {
  std::string name = kernel == Kernel::Forward ? "attention" : "attention_backward";
  name += emulated ? ".coopmat_emulated." : ".coopmat.";
  name += dtype == DType::BFloat16 ? "bfloat16" : "float16";
  if (kernel == Kernel::Dq) name += ".dq";
  if (kernel == Kernel::Dkv) name += ".dkv";
  return name + (dmax == 64 ? ".d64" : ".d128");
}

// A kernel's tile: `warps` subgroups of `sg` lanes, each owning 16 rows; `bs` rows per streamed
// tile (keys in the forward and the DQ pass, queries in the DKV pass).
struct Tile {
  uint32_t warps, bs, sg;
  uint32_t workgroup() const { return warps * sg; }
  uint32_t rows() const { return 16 * warps; }
};

// Tiles from an environment variable: `count` unsigned integers separated by commas.
bool parse_tile_env(const char* name, unsigned* values, int count) {
  const char* v = std::getenv(name);
  if (!v || !*v) return false;
  int n = 0, used = 0;
  const char* at = v;
  while (n < count && std::sscanf(at, "%u%n", &values[n], &used) == 1) {
    at += used;
    ++n;
    if (*at == ',') ++at;
  }
  if (n != count || *at != '\0') invalid(kWhere, std::string(name) + ": wrong number of values");
  return true;
}

// The tile of `kernel` for head-dim bound `dmax`: the real kernels', or the emulation's
// (tuning, then the environment, then the defaults).
Tile choose_tile(const DeviceCapabilities& caps, Kernel kernel, int dmax, bool emulated) {
  const bool d64 = dmax == 64;
  if (!emulated) {
    const uint32_t sg = caps.subgroup_size;
    if (kernel == Kernel::Forward) return Tile{4, d64 ? 64u : 32u, sg};
    if (kernel == Kernel::Dq) return Tile{4, 32, sg};
    return Tile{d64 ? 4u : 2u, 16, sg};
  }
  const AttentionTuning& t = attention_tuning();
  if (kernel == Kernel::Forward) {
    if (t.coopmat_warps) return Tile{t.coopmat_warps, t.coopmat_keys, t.coopmat_sg};
    unsigned v[3];
    if (parse_tile_env("TORCH_VK_ATTENTION_COOPMAT_TILE", v, 3)) return Tile{v[0], v[1], v[2]};
    return Tile{2, d64 ? 32u : 16u, 32};
  }
  unsigned v[5];
  if (parse_tile_env("TORCH_VK_ATTENTION_COOPMAT_BACKWARD_TILE", v, 5))
    return kernel == Kernel::Dq ? Tile{v[0], v[1], v[4]} : Tile{v[2], v[3], v[4]};
  if (kernel == Kernel::Dq) return Tile{2, d64 ? 32u : 16u, 32};
  return Tile{d64 ? 2u : 1u, 16, 32};
}

// The shaders' layout contract (see their headers): a power-of-two subgroup of 16 .. 256
// lanes, bs a multiple of 16 and of the groups of 4 scores per lane, at most dmax (the P / dS
// tiles fit in the q tile's space).
bool tile_valid(const Tile& t, int dmax) {
  if (t.warps < 1 || t.warps > 16 || t.sg < 16 || t.sg > 256 || (t.sg & (t.sg - 1)) != 0)
    return false;
  return t.bs >= 16 && t.bs % 16 == 0 && (4 * t.bs) % t.sg == 0 &&
         t.bs <= static_cast<uint32_t>(dmax);
}

uint64_t shared_bytes(const Tile& t, Kernel kernel, int dmax, bool emulated) {
  const uint64_t ld = dmax + 8, rows = t.rows(), w = t.warps, bs = t.bs;
  uint64_t halves = 0, floats = w * 16 * (bs + 4);  // the scratch
  switch (kernel) {
    case Kernel::Forward:  // k, v, q (+ P beside q in the emulation); maxima, rescales
      halves = 2 * bs * ld + rows * ld + (emulated ? w * 16 * (bs + 8) : 0);
      floats += w * t.sg + rows;
      break;
    case Kernel::Dq:  // k, v, q / dO / dS (side by side in the emulation); lse, D, partials
      halves = 2 * bs * ld + (emulated ? 2 * rows * ld + w * 16 * (bs + 8) : rows * ld);
      floats += 2 * rows + w * t.sg;
      break;
    case Kernel::Dkv:  // k, v, q, dO, p z and dS (transposed, rows of 24); lse, D
      halves = 2 * rows * ld + 2 * bs * ld + 2 * w * bs * 24;
      floats += 2 * bs;
      break;
  }
  return 2 * halves + 4 * floats;
}

// Loop iterations of one invocation (DeviceCapabilities::max_loop_iterations; counted as if
// nothing were unrolled): the tile loads, the fragment loops (the emulation's scalar matrix
// products per element) and the element-wise steps, per streamed tile.
int64_t loop_iterations(const AttentionForward& p, const Tile& t, Kernel kernel, int dmax) {
  const int64_t wg = t.workgroup(), epl = 256 / t.sg, df = dmax / 16, sf = t.bs / 16;
  const int64_t items = 4 * int64_t{t.bs} / t.sg;
  const int64_t load = (int64_t{t.bs} * dmax / 4 + wg - 1) / wg;
  const int64_t own = (int64_t{t.rows()} * dmax / 4 + wg - 1) / wg;  // the rows' own tiles
  const int64_t product = df * (epl + 1) + 2 * epl + 2;               // one accumulator
  switch (kernel) {
    case Kernel::Forward:
      return (p.S + t.bs - 1) / t.bs * (2 * load + sf * product + df * (sf + 3) * (epl + 1) + 8 * items + 16) +
             own + df * epl + 16;
    case Kernel::Dq:
      return (p.S + t.bs - 1) / t.bs * (2 * load + 2 * sf * product + df * sf * (epl + 1) + 8 * items + 16) +
             2 * own + p.Ev + df * (2 * epl + 2) + 16;
    case Kernel::Dkv:
      return p.group * ((p.L + t.bs - 1) / t.bs) *
                 (2 * load + 2 * sf * product + 2 * df * sf * (epl + 1) + 8 * items + 24) +
             2 * own + 2 * df * (2 * epl + 2) + 16;
  }
  return 0;
}

// 4-element loads of every row of a [batch, heads, rows, n] operand: 8-byte aligned rows.
bool quad_rows(const Operand& op, const AttentionStrides& st, int64_t n) {
  return n % 4 == 0 && op.address % 8 == 0 && st.batch % 4 == 0 && st.head % 4 == 0 &&
         st.row % 4 == 0;
}

std::atomic<const char*> g_last_algorithm{""};  // process-wide: backward runs on autograd's threads
std::atomic<const char*> g_last_backward_algorithm{""};

// The pipeline of `kernel` with tile `t` (spec constants SG, WARPS, BS, VEC).
VkPipeline pipeline_of(Stream& stream, Kernel kernel, DType dtype, int dmax, bool emulated,
                       const Tile& t, uint32_t vec) {
  const std::string name = shader_name(kernel, dtype, dmax, emulated);
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "'");
  const std::vector<uint32_t> spec = {t.sg, t.warps, t.bs, vec};
  return stream.device().pipelines().get(*shader, t.workgroup(), spec);
}

// Whether `kernel` can run `p` (the real kernel or the emulation) on this stream's device at
// all, and with which tile.
bool usable(Stream& stream, const AttentionForward& p, Kernel kernel, bool emulated, int* dmax,
            Tile* tile) {
  if (!half_dtype(p.q.dtype) || std::max(p.E, p.Ev) > kMaxHeadDim) return false;
  const DeviceCapabilities& caps = stream.device().caps();
  if (!emulated && !device_has_16x16x16(caps, p.q.dtype)) return false;
  *dmax = std::max(p.E, p.Ev) <= 64 ? 64 : 128;
  if (!find_shader(shader_name(kernel, p.q.dtype, *dmax, emulated))) return false;
  *tile = choose_tile(caps, kernel, *dmax, emulated);
  if (!tile_valid(*tile, *dmax)) {
    if (emulated) invalid(kWhere, "invalid cooperative-matrix attention tile");
    return false;
  }
  if (tile->workgroup() > caps.max_workgroup_invocations ||
      tile->workgroup() > caps.max_workgroup_size[0] ||
      shared_bytes(*tile, kernel, *dmax, emulated) > caps.max_shared_memory_size)
    return false;
  const int64_t owned = kernel == Kernel::Dkv ? p.S : p.L;
  if ((owned + tile->rows() - 1) / tile->rows() > 65535) return false;
  return loop_iterations(p, *tile, kernel, *dmax) <= loop_budget(stream);
}

void record_forward(Stream& stream, const AttentionForward& p, const AttentionParams& a,
                    bool emulated) {
  int dmax = 0;
  Tile t{};
  if (!usable(stream, p, Kernel::Forward, emulated, &dmax, &t))
    invalid(kWhere, "the problem does not fit the cooperative-matrix forward");
  const uint32_t vec = (quad_rows(p.q, p.q_strides, p.E) && quad_rows(p.k, p.k_strides, p.E) ? 1u : 0u) |
                       (quad_rows(p.v, p.v_strides, p.Ev) ? 2u : 0u);
  VkPipeline pipeline = pipeline_of(stream, Kernel::Forward, p.q.dtype, dmax, emulated, t, vec);
  const int64_t tiles = (p.L + t.rows() - 1) / t.rows();
  const uint64_t params = stream.upload_params(&a, sizeof a);
  const AccessSet accesses = attention_forward_accesses(p);
  stream.dispatch(pipeline, static_cast<uint32_t>(tiles), static_cast<uint32_t>(p.batch * p.heads),
                  1, &params, sizeof params, nullptr, 0, &accesses);
  g_last_algorithm = emulated ? "coopmat_emulated" : "coopmat";
}

bool backward_usable(Stream& stream, const AttentionForward& p, bool emulated) {
  int dmax = 0;
  Tile t{};
  return usable(stream, p, Kernel::Dq, emulated, &dmax, &t) &&
         usable(stream, p, Kernel::Dkv, emulated, &dmax, &t);
}

void record_backward(Stream& stream, const AttentionBackward& problem,
                     const AttentionBackwardParams& block, bool emulated) {
  const AttentionForward& p = problem.forward;
  int dmax = 0;
  Tile dq{}, dkv{};
  if (!usable(stream, p, Kernel::Dq, emulated, &dmax, &dq) ||
      !usable(stream, p, Kernel::Dkv, emulated, &dmax, &dkv))
    invalid(kWhere, "the problem does not fit the cooperative-matrix backward");
  const uint32_t vec = (quad_rows(p.q, p.q_strides, p.E) && quad_rows(p.k, p.k_strides, p.E) ? 1u : 0u) |
                       (quad_rows(p.v, p.v_strides, p.Ev) ? 2u : 0u) |
                       (quad_rows(problem.grad_out, problem.grad_out_strides, p.Ev) ? 4u : 0u);
  VkPipeline dq_pipeline = pipeline_of(stream, Kernel::Dq, p.q.dtype, dmax, emulated, dq, vec);
  VkPipeline dkv_pipeline = pipeline_of(stream, Kernel::Dkv, p.q.dtype, dmax, emulated, dkv, vec);
  AttentionBackwardParams a = block;
  Allocator& allocator = stream.device().allocator();
  const int64_t rows = p.batch * p.heads * p.L;
  const uint64_t d = rows > 0 ? allocator.allocate(static_cast<uint64_t>(rows) * 4, stream.id()) : 0;
  a.d = d != 0 ? d : p.lse.address;  // no query rows: D is never read nor written
  const uint64_t params = stream.upload_params(&a, sizeof a);
  AccessSet dq_accesses, dkv_accesses;
  backward_accesses(problem, d, &dq_accesses, &dkv_accesses);
  const int64_t query_tiles = (p.L + dq.rows() - 1) / dq.rows();
  const int64_t key_tiles = (p.S + dkv.rows() - 1) / dkv.rows();
  if (query_tiles > 0)
    stream.dispatch(dq_pipeline, static_cast<uint32_t>(query_tiles),
                    static_cast<uint32_t>(p.batch * p.heads), 1, &params, sizeof params, nullptr,
                    0, &dq_accesses);
  if (key_tiles > 0)
    stream.dispatch(dkv_pipeline, static_cast<uint32_t>(key_tiles),
                    static_cast<uint32_t>(p.batch * (p.heads / p.group)), 1, &params,
                    sizeof params, nullptr, 0, &dkv_accesses);
  if (d != 0) allocator.free(d);  // stream order: a later reuse runs after both passes
  g_last_backward_algorithm = emulated ? "coopmat_emulated" : "coopmat";
}
CoopmatSelfChecks& self_checks() {
  static CoopmatSelfChecks checks("attention");
  return checks;
}

// One self-check problem: [1, heads, L, E] q, [1, heads / group, S, E] k, [.., S, Ev] v (and
// a [1, heads, L, Ev] output gradient) of k / 64 values; `backward`: also the gradients.
struct CheckProblem {
  int64_t heads, group, L, S, E, Ev;
  bool causal, backward;
};

// Runs `c` on the portable kernels and on the cooperative-matrix ones and compares them (the
// forward's out within 2e-2 and its logsumexp within 1e-2; the gradients within 5e-2 of
// max(1, |value|): the inputs are in [-1, 1], P and dS are rounded to 16 bits). False on a
// mismatch; throws on errors.
bool check_problem(Stream& stream, DType dtype, const CheckProblem& c, std::string* why) {
  const int64_t kv = c.heads / c.group;
  const int64_t nq = c.heads * c.L * c.E, nk = kv * c.S * c.E, nv = kv * c.S * c.Ev;
  const int64_t no = c.heads * c.L * c.Ev, nl = c.heads * c.L;
  CheckBuffers buffers(stream);
  auto allocate = [&](int64_t elements, DType dt) { return buffers.operand(elements, dt); };
  auto upload = [&](const Operand& op, int64_t n, uint32_t salt) {
    const std::vector<uint16_t> x = values_of_64ths(n, salt, dtype);
    stream.copy_from_host(x.data(), op.address, n * 2);
  };
  auto download = [&](const Operand& op, int64_t n) {
    std::vector<uint16_t> x(n);
    stream.copy_to_host(op.address, x.data(), n * 2);
    return x;
  };
  bool ok = false;
  AttentionForward p;
  p.batch = 1, p.heads = c.heads, p.group = c.group, p.L = c.L, p.S = c.S, p.E = c.E, p.Ev = c.Ev;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.E));
  p.causal = c.causal;
  p.q = allocate(nq, dtype), p.k = allocate(nk, dtype), p.v = allocate(nv, dtype);
  p.q_strides = {nq, c.L * c.E, c.E};
  p.k_strides = {nk, c.S * c.E, c.E};
  p.v_strides = {nv, c.S * c.Ev, c.Ev};
  p.out_strides = {no, c.L * c.Ev, c.Ev};
  upload(p.q, nq, 1), upload(p.k, nk, 7), upload(p.v, nv, 13);
  const Operand out[2] = {allocate(no, dtype), allocate(no, dtype)};
  const Operand lse[2] = {allocate(nl, DType::Float32), allocate(nl, DType::Float32)};
  for (int run = 0; run < 2; ++run) {
    p.out = out[run], p.lse = lse[run];
    const AttentionParams a = forward_params(p);
    if (run == 0) record_attention_portable(stream, p, a);
    else record_forward(stream, p, a, false);
  }
  const bool fail_on_purpose = attention_tuning().coopmat_fail_self_check ||
                               self_check_forced_to_fail("TORCH_VK_ATTENTION_COOPMAT_SELF_CHECK");
  std::vector<float> l[2] = {std::vector<float>(nl), std::vector<float>(nl)};
  for (int run = 0; run < 2; ++run) stream.copy_to_host(lse[run].address, l[run].data(), nl * 4);
  if (fail_on_purpose) l[1][nl / 2] += 1.0f;
  ok = close_16(download(out[1], no), download(out[0], no), dtype, 2e-2f);
  for (int64_t i = 0; i < nl && ok; ++i)
    ok = l[1][i] == l[0][i] || std::fabs(l[1][i] - l[0][i]) <= 1e-2f;
  if (ok && c.backward) {
    AttentionBackward g;
    g.forward = p;
    g.forward.out = out[0], g.forward.lse = lse[0];
    g.grad_out = allocate(no, dtype);
    upload(g.grad_out, no, 21);
    g.grad_out_strides = p.out_strides;
    g.grad_q_strides = p.q_strides, g.grad_k_strides = p.k_strides, g.grad_v_strides = p.v_strides;
    std::vector<uint16_t> grads[2][3];
    for (int run = 0; run < 2; ++run) {
      g.grad_q = allocate(nq, dtype), g.grad_k = allocate(nk, dtype), g.grad_v = allocate(nv, dtype);
      const AttentionBackwardParams a = backward_params(stream, g);
      if (run == 0) record_attention_backward_portable(stream, g, a);
      else record_backward(stream, g, a, false);
      grads[run][0] = download(g.grad_q, nq);
      grads[run][1] = download(g.grad_k, nk);
      grads[run][2] = download(g.grad_v, nv);
    }
    for (int i = 0; i < 3 && ok; ++i) ok = close_16(grads[1][i], grads[0][i], dtype, 5e-2f);
  }
  if (!ok) *why = "its result differs from the portable kernels'";
  return ok;
}

// Synchronizes `stream` (once per device, dtype and process).
bool self_check(Stream& stream, DType dtype, std::string* why) {
  // d64: a full and a partial key tile, q rows past L. d128: causal, head dims 112 / 80
  // (partial fragments), L below one workgroup's rows. Backward (d64): GQA, causal, L != S.
  return check_problem(stream, dtype, CheckProblem{2, 1, 72, 100, 64, 48, false, false}, why) &&
         check_problem(stream, dtype, CheckProblem{2, 1, 40, 70, 112, 80, true, false}, why) &&
         check_problem(stream, dtype, CheckProblem{4, 2, 70, 45, 64, 64, true, true}, why);
}

// Whether the real kernels may run on `stream`'s device for `dtype`: their self-check passed
// (run now if it has not, except while capturing).
bool checked(Stream& stream, DType dtype) {
  return self_checks().passed(stream, dtype,
                              [&](std::string* why) { return self_check(stream, dtype, why); });
}

}  // namespace

void set_last_attention_algorithm(const char* name) { g_last_algorithm = name; }
void set_last_attention_backward_algorithm(const char* name) { g_last_backward_algorithm = name; }

bool try_attention_coopmat(Stream& stream, const AttentionForward& p, const AttentionParams& a) {
  const Coopmat m = mode();
  if (m == Coopmat::Off) return false;
  const bool emulated = m == Coopmat::Emulate;
  int dmax = 0;
  Tile tile{};
  if (!usable(stream, p, Kernel::Forward, emulated, &dmax, &tile)) return false;
  if (!emulated) {
    // GPUs only, and where the 64-row tiles keep the device busy: few query rows against many
    // keys (decode) take the split-KV kernel. (Thresholds not yet measured on hardware.)
    if (attention_algorithm(stream) != AttentionTuning::Algo::Tiled || p.L < 16) return false;
    if (p.L < 256 && attention_split_keys(p, (p.L + 15) / 16) > 0) return false;
    if (!checked(stream, p.q.dtype)) return false;
  }
  record_forward(stream, p, a, emulated);
  return true;
}

bool try_attention_backward_coopmat(Stream& stream, const AttentionBackward& problem,
                                    const AttentionBackwardParams& a) {
  const Coopmat m = mode();
  if (m == Coopmat::Off) return false;
  const bool emulated = m == Coopmat::Emulate;
  const AttentionForward& p = problem.forward;
  if (!backward_usable(stream, p, emulated)) return false;
  if (!emulated && (attention_algorithm(stream) != AttentionTuning::Algo::Tiled ||
                    !checked(stream, p.q.dtype)))
    return false;
  record_backward(stream, problem, a, emulated);
  return true;
}

}  // namespace tvk::kernels::detail

namespace tvk::kernels {

const char* attention_coopmat_state(Stream& stream, DType dtype) {
  using namespace detail;
  if (!half_dtype(dtype) || mode() == Coopmat::Off ||
      !device_has_16x16x16(stream.device().caps(), dtype) ||
      !find_shader(shader_name(Kernel::Forward, dtype, 64, false)))
    return "unavailable";
  return self_checks().state(stream, dtype);
}

void attention_coopmat_forget_self_check(Stream& stream) { detail::self_checks().forget(stream); }

const char* last_attention_algorithm() { return detail::g_last_algorithm.load(); }
const char* last_attention_backward_algorithm() { return detail::g_last_backward_algorithm.load(); }

}  // namespace tvk::kernels
