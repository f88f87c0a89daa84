// Launcher of the fused attention forward kernel (shaders/attention.comp), the parameters in an
// uploaded block (they exceed the 128-byte push-constant budget). Two strategies (see
// AttentionTuning in attention.h): Tiled, one workgroup per (batch * head, tile of 16 query
// rows) with k / v tiles in shared memory, for GPUs; Rows, one invocation per query row without
// shared memory or barriers, for CPU devices.
#include "kernels/attention.h"
#include "kernels/attention_internal.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kernels/launch.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
using detail::AttentionBackwardParams;
using detail::AttentionParams;
namespace {

constexpr const char* kWhere = "tvk::kernels::attention_forward";
constexpr int64_t kRowsPerGroup = 16;  // BR in the shader
constexpr uint32_t kWorkgroup = 64;    // BR * TPR

// The dropout fields shared by both parameter blocks: Philox key = seed, counter words 2, 3 =
// offset / 4 (the generator's contract, src/aten/generator.h); flags bit 2 when p > 0.
template <typename Params>
void fill_dropout(Params& a, const AttentionDropout& d, const char* where) {
  a.drop_scale = 1.0f;
  if (d.p == 0.0) return;
  if (!(d.p > 0.0 && d.p < 1.0)) invalid(where, "dropout probability must be in [0, 1)");
  if (d.offset % 4 != 0) invalid(where, "dropout offset must be a multiple of 4");
  const uint64_t counter = d.offset / 4;
  a.drop_seed[0] = static_cast<uint32_t>(d.seed), a.drop_seed[1] = static_cast<uint32_t>(d.seed >> 32);
  a.drop_counter[0] = static_cast<uint32_t>(counter);
  a.drop_counter[1] = static_cast<uint32_t>(counter >> 32);
  // Kept when the 32-bit number is below (1 - p) * 2^32: probability within 2^-32 of 1 - p.
  a.drop_threshold = static_cast<uint32_t>(std::min(4294967295.0, std::floor((1.0 - d.p) * 4294967296.0)));
  a.drop_scale = static_cast<float>(1.0 / (1.0 - d.p));
  a.flags |= 4;
}

void check_operand(const Operand& op, const char* what) {
  check_dtype(kWhere, op.dtype, what);
  if (op.address == 0) invalid(kWhere, std::string(what) + ": address is 0");
  if (op.address % dtype_size(op.dtype) != 0)
    invalid(kWhere, std::string(what) + ": address is not aligned to its element size");
}

bool is_float_storage(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}

// Largest |offset| reachable with these sizes and strides.
int64_t span(std::initializer_list<std::pair<int64_t, int64_t>> size_stride) {
  int64_t total = 0;
  for (auto [size, stride] : size_stride) {
    if (size <= 0) return 0;
    const int64_t a = stride < 0 ? -stride : stride;
    if (a > 0 && (size - 1) > (INT64_MAX / 4) / a) return INT64_MAX / 4;
    total += (size - 1) * a;
    if (total > INT64_MAX / 4) return INT64_MAX / 4;
  }
  return total;
}

int32_t narrow(int64_t v) { return static_cast<int32_t>(v); }

// Adds a [batch, heads, rows, cols] operand (unit column stride) to `set`.
void add_heads(AccessSet& set, const Operand& op, int64_t batch, int64_t heads, int64_t rows,
               int64_t cols, const AttentionStrides& st, bool write) {
  const int64_t sizes[4] = {cols, rows, heads, batch};
  const int64_t strides[4] = {1, st.row, st.head, st.batch};
  add_strided(set, op.address, op.dtype, 4, sizes, strides, write);
}

// The mask ([batch, heads, L, S], any strides, 0 for broadcast dims), read.
void add_mask(AccessSet& set, const AttentionForward& p) {
  const int64_t sizes[4] = {p.S, p.L, p.heads, p.batch};
  const int64_t strides[4] = {p.mask_strides[3], p.mask_strides[2], p.mask_strides[1],
                              p.mask_strides[0]};
  add_strided(set, p.mask.address, p.mask.dtype, 4, sizes, strides, false);
}

void check_mask(const AttentionForward& p) {
  if (p.mask.address == 0) return;
  check_operand(p.mask, "mask");
  if (p.mask.dtype != DType::Bool && !is_float_storage(p.mask.dtype))
    invalid(kWhere, "the mask must be bool, float32, float16 or bfloat16");
  if (span({{p.batch, p.mask_strides[0]}, {p.heads, p.mask_strides[1]}, {p.L, p.mask_strides[2]},
            {p.S, p.mask_strides[3]}}) > kMaxIndex)
    invalid(kWhere, "mask: offsets beyond the 32-bit index range");
}

void fill_common(AttentionParams& a, const AttentionForward& p) {
  const bool has_mask = p.mask.address != 0;
  a.lse = p.lse.address;
  a.mask = has_mask ? p.mask.address : 0;
  if (has_mask) {
    a.m_sb = narrow(p.mask_strides[0]), a.m_sh = narrow(p.mask_strides[1]);
    a.m_sl = narrow(p.mask_strides[2]), a.m_ss = narrow(p.mask_strides[3]);
  }
  a.batch = narrow(p.batch);
  a.heads = narrow(p.heads);
  a.group = narrow(p.group);
  a.L = narrow(p.L);
  a.S = narrow(p.S);
  a.E = narrow(p.E);
  a.Ev = narrow(p.Ev);
  a.dtype = static_cast<int32_t>(p.q.dtype);
  a.mask_dtype = static_cast<int32_t>(has_mask ? p.mask.dtype : DType::Bool);
  a.flags = (p.causal ? 1 : 0) | (has_mask ? 2 : 0);
  a.scale = p.scale;
  fill_dropout(a, p.dropout, kWhere);
}

// Rows: one invocation per query row over the flattened [batch, heads, L] rows (grid-stride).
// Where the device limits an invocation's loop iterations (loop_budget), the keys are split
// into chunks, recorded in order per block of rows, the running softmax state of the block
// carried through a scratch buffer (see the shader's header).
void record_rows(Stream& stream, const AttentionForward& p, AttentionParams a) {
  const int64_t dim = std::max(p.E, p.Ev);
  const int dmax = dim <= 16 ? 16 : dim <= 32 ? 32 : dim <= 64 ? 64 : dim <= 128 ? 128 : 256;
  const std::string name = "attention.rows.d" + std::to_string(dmax);
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  const AttentionTuning& t = attention_tuning();
  const uint32_t wg = std::clamp<uint32_t>(
      t.rows_workgroup, 1, stream.device().caps().max_workgroup_invocations);
  // Pipelines per (dtype, vector-access flags, head dims, mask dtype): the head-dim loops fold
  // to their exact length. The flags are read at run time (uniform branches), which keeps the
  // count of pipelines (each one a slow LLVM compile on lavapipe) down.
  std::vector<uint32_t> spec = {UINT32_MAX, 0, 0, 0, UINT32_MAX};  // all from Params, scalar
  if (t.rows_specialize) {
    // Vector access: every row of the operand starts 4-element aligned and the row length
    // is a multiple of 4.
    auto vec_rows = [](const Operand& op, const AttentionStrides& st, int64_t n) {
      const int64_t es = dtype_size(op.dtype);
      return n % 4 == 0 && op.address % (4 * es) == 0 && st.batch % 4 == 0 &&
             st.head % 4 == 0 && st.row % 4 == 0;
    };
    uint32_t vec = 0;
    if (vec_rows(p.q, p.q_strides, p.E) && vec_rows(p.k, p.k_strides, p.E)) vec |= 1;
    if (vec_rows(p.v, p.v_strides, p.Ev)) vec |= 2;
    if (vec_rows(p.out, p.out_strides, p.Ev)) vec |= 4;
    // Without a mask, the bool pipeline serves (the mask code is skipped at run time).
    spec = {static_cast<uint32_t>(a.dtype), vec, static_cast<uint32_t>(a.E),
            static_cast<uint32_t>(a.Ev), static_cast<uint32_t>(a.mask_dtype)};
  }
  VkPipeline pipeline = stream.device().pipelines().get(*shader, wg, spec);
  const int64_t rows = p.batch * p.heads * p.L;
  const uint32_t groups = group_count(stream, rows, wg);
  // Loop iterations of an invocation: per row it owns, one of the row loop and one per key.
  const int64_t step = int64_t{groups} * wg;
  const int64_t rows_per_invocation = (rows + step - 1) / step;
  const int64_t keys = std::max<int64_t>(p.S, 1);
  int64_t chunk = loop_chunk(stream, keys, rows_per_invocation, rows_per_invocation);
  a.row_begin = 0;
  a.row_end = narrow(rows);
  a.j_begin = 0;
  a.j_end = narrow(p.S);
  a.state = 0;
  AccessSet accesses = detail::attention_forward_accesses(p);
  if (chunk >= keys) {
    const uint64_t params = stream.upload_params(&a, sizeof a);
    stream.dispatch(pipeline, groups, 1, 1, &params, sizeof params, nullptr, 0, &accesses);
    return;
  }
  // Blocks of at most `block` rows (one invocation per row: the state then costs no extra
  // row-loop iterations) and a state of (dmax / 4 + 1) vec4s per row, at most ~16 MiB.
  const int64_t row_bytes = (dmax / 4 + 1) * 16;
  const int64_t block = std::min<int64_t>(
      {rows, step, std::max<int64_t>((int64_t{16} << 20) / row_bytes, wg)});
  chunk = loop_chunk(stream, keys, 1, 1);
  if (chunk < 1 || loop_budget(stream) < 3)
    invalid(kWhere, "the device's loop-iteration limit is too small for the Rows algorithm");
  Allocator& allocator = stream.device().allocator();
  const uint64_t state = allocator.allocate(static_cast<uint64_t>(block * row_bytes), stream.id());
  a.state = state;
  // Every chunk updates the running state of its rows: consecutive chunks are ordered.
  accesses.read(state, static_cast<uint64_t>(block * row_bytes));
  accesses.write(state, static_cast<uint64_t>(block * row_bytes));
  try {
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t r1 = std::min(rows, r0 + block);
      const uint32_t block_groups = group_count(stream, r1 - r0, wg);
      for (int64_t j0 = 0; j0 < p.S; j0 += chunk) {
        a.row_begin = narrow(r0);
        a.row_end = narrow(r1);
        a.j_begin = narrow(j0);
        a.j_end = narrow(std::min(p.S, j0 + chunk));
        const uint64_t params = stream.upload_params(&a, sizeof a);
        stream.dispatch(pipeline, block_groups, 1, 1, &params, sizeof params, nullptr, 0,
                        &accesses);
      }
    }
  } catch (...) {
    allocator.free(state);
    throw;
  }
  // Stream order makes the immediate free safe: later reuse is ordered after these dispatches.
  allocator.free(state);
}

}  // namespace

AccessSet detail::attention_forward_accesses(const AttentionForward& p) {
  AccessSet set;
  const int64_t kv_heads = p.heads / p.group;
  add_heads(set, p.q, p.batch, p.heads, p.L, p.E, p.q_strides, false);
  add_heads(set, p.k, p.batch, kv_heads, p.S, p.E, p.k_strides, false);
  add_heads(set, p.v, p.batch, kv_heads, p.S, p.Ev, p.v_strides, false);
  add_mask(set, p);
  add_heads(set, p.out, p.batch, p.heads, p.L, p.Ev, p.out_strides, true);
  add_dense(set, p.lse.address, DType::Float32, p.batch * p.heads * p.L, true);
  return set;
}

AttentionTuning& attention_tuning() {
  static AttentionTuning t;
  return t;
}

bool attention_subgroup_sums(Stream& stream, int64_t tpr) {
  if (!attention_tuning().subgroup_sums) return false;
  if (const char* v = std::getenv("TORCH_VK_ATTENTION_SUBGROUP"); v && std::strcmp(v, "0") == 0)
    return false;
  const DeviceCapabilities& caps = stream.device().caps();
  // The TPR invocations of a row are consecutive: a subgroup size that is a multiple of TPR
  // keeps them in one subgroup.
  return caps.subgroup_shuffle && caps.subgroup_size >= tpr && caps.subgroup_size % tpr == 0;
}

AttentionTuning::Algo attention_algorithm(Stream& stream) {
  using Algo = AttentionTuning::Algo;
  const Algo forced = attention_tuning().algo;
  if (forced != Algo::Auto) return forced;
  if (const char* v = std::getenv("TORCH_VK_ATTENTION_ALGO")) {
    if (std::strcmp(v, "rows") == 0) return Algo::Rows;
    if (std::strcmp(v, "tiled") == 0) return Algo::Tiled;
  }
  return stream.device().caps().device_type == "cpu" ? Algo::Rows : Algo::Tiled;
}

// Keys per split-KV chunk of the tiled kernel, 0 for no split. TORCH_VK_ATTENTION_SPLIT_KEYS
// (read at every launch; rounded up to whole key tiles) forces the chunk size; else the keys
// are split when the query tiles leave a GPU mostly idle (fewer than 256 workgroups: decode,
// few rows against many keys), into chunks of at least 256 keys and at most 64 chunks.
int64_t detail::attention_split_keys(const AttentionForward& p, int64_t tiles) {
  int64_t keys = attention_tuning().split_keys;
  if (const char* v = std::getenv("TORCH_VK_ATTENTION_SPLIT_KEYS"); v && *v) keys = std::atoll(v);
  if (keys > 0) return (keys + kRowsPerGroup - 1) / kRowsPerGroup * kRowsPerGroup;
  const int64_t workgroups = tiles * p.batch * p.heads;
  if (keys < 0 || workgroups >= 256 || p.S < 512) return 0;
  const int64_t chunks = std::clamp<int64_t>(256 / workgroups, 2, 64);
  keys = std::max<int64_t>(256, (p.S + chunks - 1) / chunks);
  return (keys + kRowsPerGroup - 1) / kRowsPerGroup * kRowsPerGroup;
}

void attention_forward(Stream& stream, const AttentionForward& p) {
  if (p.batch < 0 || p.heads < 0 || p.L < 0 || p.S < 0) invalid(kWhere, "negative size");
  if (p.batch == 0 || p.heads == 0 || p.L == 0) {
    detail::forward_params(p);  // (the argument checks)
    return;
  }
  const AttentionParams a = detail::forward_params(p);
  if (detail::try_attention_coopmat(stream, p, a)) return;
  detail::record_attention_portable(stream, p, a);
}

AttentionParams detail::forward_params(const AttentionForward& p) {
  if (p.batch < 0 || p.heads < 0 || p.L < 0 || p.S < 0) invalid(kWhere, "negative size");
  if (p.E < 1 || p.Ev < 1 || p.E > kAttentionMaxHeadDim || p.Ev > kAttentionMaxHeadDim)
    invalid(kWhere, "head dims must be in [1, " + std::to_string(kAttentionMaxHeadDim) + "]");
  if (p.group < 1 || (p.heads > 0 && p.heads % p.group != 0))
    invalid(kWhere, "heads must be a multiple of group");
  AttentionParams a{};
  if (p.batch == 0 || p.heads == 0 || p.L == 0) return a;
  check_operand(p.q, "query");
  check_operand(p.k, "key");
  check_operand(p.v, "value");
  check_operand(p.out, "output");
  check_operand(p.lse, "logsumexp");
  if (!is_float_storage(p.q.dtype) || p.k.dtype != p.q.dtype || p.v.dtype != p.q.dtype ||
      p.out.dtype != p.q.dtype)
    invalid(kWhere, "q, k, v and out must share one of float16 / bfloat16 / float32");
  if (p.lse.dtype != DType::Float32) invalid(kWhere, "logsumexp must be float32");
  check_mask(p);
  const int64_t kv_heads = p.heads / p.group;
  const int64_t limit = kMaxIndex;
  auto check_span = [&](int64_t s, const char* what) {
    if (s > limit) invalid(kWhere, std::string(what) + ": offsets beyond the 32-bit index range");
  };
  check_span(span({{p.batch, p.q_strides.batch}, {p.heads, p.q_strides.head}, {p.L, p.q_strides.row}, {p.E, 1}}), "query");
  check_span(span({{p.batch, p.k_strides.batch}, {kv_heads, p.k_strides.head}, {p.S, p.k_strides.row}, {p.E, 1}}), "key");
  check_span(span({{p.batch, p.v_strides.batch}, {kv_heads, p.v_strides.head}, {p.S, p.v_strides.row}, {p.Ev, 1}}), "value");
  check_span(span({{p.batch, p.out_strides.batch}, {p.heads, p.out_strides.head}, {p.L, p.out_strides.row}, {p.Ev, 1}}), "output");
  check_span(p.batch * p.heads * p.L, "logsumexp");
  if (p.batch * p.heads > 65535) invalid(kWhere, "batch * heads above 65535");

  a.q = p.q.address;
  a.k = p.k.address;
  a.v = p.v.address;
  a.out = p.out.address;
  fill_common(a, p);
  a.q_sb = narrow(p.q_strides.batch), a.q_sh = narrow(p.q_strides.head), a.q_sl = narrow(p.q_strides.row);
  a.k_sb = narrow(p.k_strides.batch), a.k_sh = narrow(p.k_strides.head), a.k_sl = narrow(p.k_strides.row);
  a.v_sb = narrow(p.v_strides.batch), a.v_sh = narrow(p.v_strides.head), a.v_sl = narrow(p.v_strides.row);
  a.o_sb = narrow(p.out_strides.batch), a.o_sh = narrow(p.out_strides.head), a.o_sl = narrow(p.out_strides.row);
  return a;
}

void detail::record_attention_portable(Stream& stream, const AttentionForward& p, AttentionParams a) {
  const int64_t tiles = (p.L + kRowsPerGroup - 1) / kRowsPerGroup;
  const int64_t head_dim = std::max(p.E, p.Ev);
  const int dmax = head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : 256;
  // Tiled runs every key tile in one invocation: per tile the k / v loads (bc * dmax elements
  // each over the 64 invocations), the barriers (one iteration each on lavapipe) and a few
  // more (measured: E = 128 truncates past ~15k keys there). Where that is past the device's
  // loop limit (loop_budget), the Rows algorithm, which splits the keys, runs instead.
  const int64_t bc = dmax > 128 ? 8 : 16;  // BC in the shader: keys per tile
  const int64_t key_tiles = (p.S + bc - 1) / bc;
  const bool tiled_fits = key_tiles * (2 * ((bc * dmax + kWorkgroup - 1) / kWorkgroup) + 8) <=
                          loop_budget(stream);
  if (attention_algorithm(stream) == AttentionTuning::Algo::Rows || !tiled_fits) {
    record_rows(stream, p, a);
    set_last_attention_algorithm("rows");
    return;
  }

  const uint32_t shared_bytes = static_cast<uint32_t>((2 * bc * dmax + 16 * 4 * bc) * 4);
  if (stream.device().caps().max_shared_memory_size < shared_bytes)
    invalid(kWhere, "the device has too little shared memory (" + std::to_string(shared_bytes) +
                        " bytes needed)");
  const std::string name = "attention.forward.d" + std::to_string(dmax) +
                           (attention_subgroup_sums(stream, 4) ? ".subgroup" : "");
  const ShaderBinary* shader = find_shader(name);
  if (!shader) invalid(kWhere, "no shader variant '" + name + "' (stale build?)");
  if (tiles > 65535) invalid(kWhere, "more than 65535 query tiles");
  VkPipeline pipeline = stream.device().pipelines().get(*shader, kWorkgroup);
  const int64_t keys = detail::attention_split_keys(p, tiles);
  const int64_t chunks = keys > 0 ? (p.S + keys - 1) / keys : 1;
  AccessSet accesses = detail::attention_forward_accesses(p);
  if (chunks <= 1) {
    const uint64_t params = stream.upload_params(&a, sizeof a);
    stream.dispatch(pipeline, static_cast<uint32_t>(tiles),
                    static_cast<uint32_t>(p.batch * p.heads), 1, &params, sizeof params, nullptr,
                    0, &accesses);
    set_last_attention_algorithm("tiled");
    return;
  }
  // Split-KV: every chunk of `keys` keys in its own workgroups, then one merge pass.
  const int64_t state_floats = p.batch * p.heads * p.L * chunks * (p.Ev + 2);
  if (state_floats > kMaxIndex) invalid(kWhere, "split-KV state beyond the 32-bit index range");
  Allocator& allocator = stream.device().allocator();
  const uint64_t state = allocator.allocate(static_cast<uint64_t>(state_floats) * 4, stream.id());
  a.state = state;
  a.j_end = narrow(keys);
  // Both passes declare the state as read and written (and out / logsumexp written), so the
  // merge is ordered after the chunks.
  accesses.read(state, static_cast<uint64_t>(state_floats) * 4);
  accesses.write(state, static_cast<uint64_t>(state_floats) * 4);
  const uint64_t params = stream.upload_params(&a, sizeof a);
  stream.dispatch(pipeline, static_cast<uint32_t>(tiles), static_cast<uint32_t>(p.batch * p.heads),
                  static_cast<uint32_t>(chunks), &params, sizeof params, nullptr, 0, &accesses);
  const ShaderBinary* combine = find_shader("attention.combine");
  if (!combine) {
    allocator.free(state);
    invalid(kWhere, "no shader variant 'attention.combine' (stale build?)");
  }
  a.j_begin = narrow(chunks);
  const uint64_t combine_params = stream.upload_params(&a, sizeof a);
  const int64_t total = p.batch * p.heads * p.L * (p.Ev + 1);
  stream.dispatch(stream.device().pipelines().get(*combine, 256), group_count(stream, total, 256),
                  1, 1, &combine_params, sizeof combine_params, nullptr, 0, &accesses);
  allocator.free(state);  // stream order: a later reuse runs after these dispatches
  set_last_attention_algorithm("split");
}

void attention_probabilities(Stream& stream, const AttentionForward& p, Operand scores,
                             Operand dropped) {
  constexpr const char* where = "tvk::kernels::attention_probabilities";
  if (p.batch < 0 || p.heads < 0 || p.L < 0 || p.S < 0) invalid(where, "negative size");
  const int64_t total = p.batch * p.heads * p.L * p.S;
  if (total == 0) return;
  if (total > kMaxIndex) invalid(where, "more elements than the kernel's 32-bit index range");
  check_operand(scores, "scores");
  check_operand(p.lse, "logsumexp");
  if (scores.dtype != DType::Float32 || p.lse.dtype != DType::Float32)
    invalid(where, "scores and logsumexp must be float32");
  check_mask(p);
  const ShaderBinary* shader = find_shader("attention.probs");
  if (!shader) invalid(where, "no shader variant 'attention.probs' (stale build?)");
  const bool dropout = p.dropout.p != 0.0;
  if (dropout) {
    check_operand(dropped, "dropped");
    if (dropped.dtype != DType::Float32) invalid(where, "dropped must be float32");
  }
  AttentionParams a{};
  a.out = scores.address;
  fill_common(a, p);
  a.dropped = dropout ? dropped.address : 0;
  const uint64_t params = stream.upload_params(&a, sizeof a);
  VkPipeline pipeline = stream.device().pipelines().get(*shader, 256);
  AccessSet accesses;  // the scores are rewritten in place
  add_dense(accesses, scores.address, scores.dtype, total, false);
  add_dense(accesses, scores.address, scores.dtype, total, true);
  if (dropout) add_dense(accesses, dropped.address, DType::Float32, total, true);
  add_dense(accesses, p.lse.address, DType::Float32, p.batch * p.heads * p.L, false);
  add_mask(accesses, p);
  stream.dispatch(pipeline, group_count(stream, total, 256), 1, 1, &params, sizeof params, nullptr,
                  0, &accesses);
}

// ---------------------------------------------------------------- backward

namespace {

constexpr const char* kBackwardWhere = "tvk::kernels::attention_backward";
constexpr int64_t kBackwardTile = 16;  // ROWS_PER_GROUP in shaders/attention_backward.comp

// The passes' geometry per head-dim bound (shaders/attention_backward.comp): the shader
// variant's DMAX, invocations per row (TPR) and rows per streamed tile (STREAM).
struct BackwardGeometry {
  int dmax;
  int64_t tpr, stream;
  int64_t workgroup() const { return kBackwardTile * tpr; }
  // The larger of the two passes' shared memory: two streamed tiles of dmax floats, the
  // partial dot products (2 x 16 x TPR x STREAM) and the row sums.
  uint64_t shared_bytes() const {
    return static_cast<uint64_t>(2 * stream * dmax + 2 * kBackwardTile * tpr * stream +
                                 std::max(kBackwardTile * tpr, 2 * stream)) * 4;
  }
};
BackwardGeometry backward_geometry(const AttentionForward& p) {
  const int64_t dim = std::max(p.E, p.Ev);
  if (dim <= 64) return {64, 4, 16};
  if (dim <= 128) return {128, 4, 16};
  return {256, 8, 8};
}

// Loop iterations of the passes' invocations (loop_budget): per streamed tile, the loads of
// two tiles over the workgroup, the barriers and the products (counted once).
bool backward_within_budget(Stream& stream, const AttentionForward& p, const BackwardGeometry& g) {
  const int64_t per_tile = 2 * ((g.stream * g.dmax + g.workgroup() - 1) / g.workgroup()) + 12;
  const int64_t key_tiles = (p.S + g.stream - 1) / g.stream;
  const int64_t query_tiles = (p.L + g.stream - 1) / g.stream;
  const int64_t budget = loop_budget(stream);
  return key_tiles * per_tile <= budget && p.group * query_tiles * per_tile <= budget;
}

}  // namespace

bool attention_backward_supported(Stream& stream, const AttentionBackward& problem) {
  const AttentionForward& p = problem.forward;
  if (p.E < 1 || p.Ev < 1 || p.E > kAttentionBackwardMaxHeadDim || p.Ev > kAttentionBackwardMaxHeadDim)
    return false;
  if (p.group < 1 || p.heads % p.group != 0) return false;
  if (p.batch * p.heads > 65535 || (p.L + kBackwardTile - 1) / kBackwardTile > 65535 ||
      (p.S + kBackwardTile - 1) / kBackwardTile > 65535)
    return false;
  const BackwardGeometry g = backward_geometry(p);
  if (stream.device().caps().max_shared_memory_size < g.shared_bytes() ||
      stream.device().caps().max_workgroup_invocations < g.workgroup())
    return false;
  return backward_within_budget(stream, p, g);
}

void attention_backward(Stream& stream, const AttentionBackward& problem) {
  const AttentionForward& p = problem.forward;
  if (p.batch < 0 || p.heads < 0 || p.L < 0 || p.S < 0) invalid(kBackwardWhere, "negative size");
  if (p.batch == 0 || p.heads == 0) return;
  const AttentionBackwardParams a = detail::backward_params(stream, problem);
  if (detail::try_attention_backward_coopmat(stream, problem, a)) return;
  detail::record_attention_backward_portable(stream, problem, a);
}

AttentionBackwardParams detail::backward_params(Stream& stream, const AttentionBackward& problem) {
  const AttentionForward& p = problem.forward;
  if (!attention_backward_supported(stream, problem))
    invalid(kBackwardWhere, "problem outside the fused backward (head dims <= " +
                                std::to_string(kAttentionBackwardMaxHeadDim) +
                                ", grid, shared memory or loop limits)");
  for (auto [op, what] : {std::pair{&p.q, "query"}, {&p.k, "key"}, {&p.v, "value"},
                          {&p.out, "output"}, {&p.lse, "logsumexp"},
                          {&problem.grad_out, "grad_out"}, {&problem.grad_q, "grad_query"},
                          {&problem.grad_k, "grad_key"}, {&problem.grad_v, "grad_value"}}) {
    check_dtype(kBackwardWhere, op->dtype, what);
    if (op->address == 0) invalid(kBackwardWhere, std::string(what) + ": address is 0");
    if (op->address % dtype_size(op->dtype) != 0)
      invalid(kBackwardWhere, std::string(what) + ": address is not aligned to its element size");
    if (op != &p.lse && op->dtype != p.q.dtype)
      invalid(kBackwardWhere, std::string(what) + ": every tensor must have q's dtype");
  }
  if (!is_float_storage(p.q.dtype)) invalid(kBackwardWhere, "q must be float16, bfloat16 or float32");
  if (p.lse.dtype != DType::Float32) invalid(kBackwardWhere, "logsumexp must be float32");
  check_mask(p);
  if (problem.grad_bias.address != 0) {
    if (problem.grad_bias.dtype != DType::Float32 || problem.grad_bias.address % 4 != 0)
      invalid(kBackwardWhere, "grad_bias must be float32");
    if (p.batch * p.heads * p.L * p.S > kMaxIndex)
      invalid(kBackwardWhere, "grad_bias: more elements than the kernel's 32-bit index range");
  }
  const int64_t kv_heads = p.heads / p.group;
  auto check_span = [&](const AttentionStrides& st, int64_t heads, int64_t rows, int64_t dim,
                        const char* what) {
    if (span({{p.batch, st.batch}, {heads, st.head}, {rows, st.row}, {dim, 1}}) > kMaxIndex)
      invalid(kBackwardWhere, std::string(what) + ": offsets beyond the 32-bit index range");
  };
  check_span(p.q_strides, p.heads, p.L, p.E, "query");
  check_span(p.k_strides, kv_heads, p.S, p.E, "key");
  check_span(p.v_strides, kv_heads, p.S, p.Ev, "value");
  check_span(p.out_strides, p.heads, p.L, p.Ev, "output");
  check_span(problem.grad_out_strides, p.heads, p.L, p.Ev, "grad_out");
  check_span(problem.grad_q_strides, p.heads, p.L, p.E, "grad_query");
  check_span(problem.grad_k_strides, kv_heads, p.S, p.E, "grad_key");
  check_span(problem.grad_v_strides, kv_heads, p.S, p.Ev, "grad_value");
  if (p.batch * p.heads * p.L > kMaxIndex) invalid(kBackwardWhere, "logsumexp beyond the 32-bit index range");

  AttentionBackwardParams a{};
  auto strides = [](const AttentionStrides& st, int32_t& sb, int32_t& sh, int32_t& sl) {
    sb = narrow(st.batch), sh = narrow(st.head), sl = narrow(st.row);
  };
  a.q = p.q.address, a.k = p.k.address, a.v = p.v.address, a.o = p.out.address;
  a.dout = problem.grad_out.address, a.lse = p.lse.address;
  a.dq = problem.grad_q.address, a.dk = problem.grad_k.address, a.dv = problem.grad_v.address;
  strides(p.q_strides, a.q_sb, a.q_sh, a.q_sl);
  strides(p.k_strides, a.k_sb, a.k_sh, a.k_sl);
  strides(p.v_strides, a.v_sb, a.v_sh, a.v_sl);
  strides(p.out_strides, a.o_sb, a.o_sh, a.o_sl);
  strides(problem.grad_out_strides, a.do_sb, a.do_sh, a.do_sl);
  strides(problem.grad_q_strides, a.dq_sb, a.dq_sh, a.dq_sl);
  strides(problem.grad_k_strides, a.dk_sb, a.dk_sh, a.dk_sl);
  strides(problem.grad_v_strides, a.dv_sb, a.dv_sh, a.dv_sl);
  const bool has_mask = p.mask.address != 0;
  a.mask = has_mask ? p.mask.address : 0;
  if (has_mask) {
    a.m_sb = narrow(p.mask_strides[0]), a.m_sh = narrow(p.mask_strides[1]);
    a.m_sl = narrow(p.mask_strides[2]), a.m_ss = narrow(p.mask_strides[3]);
  }
  a.batch = narrow(p.batch), a.heads = narrow(p.heads), a.group = narrow(p.group);
  a.L = narrow(p.L), a.S = narrow(p.S), a.E = narrow(p.E), a.Ev = narrow(p.Ev);
  a.dtype = static_cast<int32_t>(p.q.dtype);
  a.mask_dtype = static_cast<int32_t>(has_mask ? p.mask.dtype : DType::Bool);
  a.flags = (p.causal ? 1 : 0) | (has_mask ? 2 : 0);
  a.scale = p.scale;
  fill_dropout(a, p.dropout, kBackwardWhere);
  a.dbias = problem.grad_bias.address;
  return a;
}

void detail::backward_accesses(const AttentionBackward& problem, uint64_t d, AccessSet* dq_pass,
                               AccessSet* dkv_pass) {
  const AttentionForward& p = problem.forward;
  const int64_t kv_heads = p.heads / p.group;
  const int64_t rows = p.batch * p.heads * p.L;
  // Both passes read every input and read and write D (rows floats), so the dK / dV pass is
  // ordered after the dQ pass that computes D.
  AccessSet inputs;
  add_heads(inputs, p.q, p.batch, p.heads, p.L, p.E, p.q_strides, false);
  add_heads(inputs, p.k, p.batch, kv_heads, p.S, p.E, p.k_strides, false);
  add_heads(inputs, p.v, p.batch, kv_heads, p.S, p.Ev, p.v_strides, false);
  add_heads(inputs, p.out, p.batch, p.heads, p.L, p.Ev, p.out_strides, false);
  add_heads(inputs, problem.grad_out, p.batch, p.heads, p.L, p.Ev, problem.grad_out_strides, false);
  add_dense(inputs, p.lse.address, DType::Float32, rows, false);
  add_mask(inputs, p);
  add_dense(inputs, d, DType::Float32, rows, false);
  add_dense(inputs, d, DType::Float32, rows, true);
  *dq_pass = inputs;
  *dkv_pass = inputs;
  add_heads(*dq_pass, problem.grad_q, p.batch, p.heads, p.L, p.E, problem.grad_q_strides, true);
  add_dense(*dq_pass, problem.grad_bias.address, DType::Float32, p.batch * p.heads * p.L * p.S,
            true);
  add_heads(*dkv_pass, problem.grad_k, p.batch, kv_heads, p.S, p.E, problem.grad_k_strides, true);
  add_heads(*dkv_pass, problem.grad_v, p.batch, kv_heads, p.S, p.Ev, problem.grad_v_strides,
            true);
}

void detail::record_attention_backward_portable(Stream& stream, const AttentionBackward& problem,
                                                const AttentionBackwardParams& params_block) {
  const AttentionForward& p = problem.forward;
  AttentionBackwardParams a = params_block;
  const int64_t kv_heads = p.heads / p.group;
  const BackwardGeometry geometry = backward_geometry(p);
  const std::string suffix = ".d" + std::to_string(geometry.dmax) +
                             (attention_subgroup_sums(stream, geometry.tpr) ? ".subgroup" : "");
  const ShaderBinary* dq_shader = find_shader("attention_backward.dq" + suffix);
  const ShaderBinary* dkv_shader = find_shader("attention_backward.dkv" + suffix);
  if (!dq_shader || !dkv_shader)
    invalid(kBackwardWhere, "no shader variant 'attention_backward.*" + suffix + "' (stale build?)");
  Allocator& allocator = stream.device().allocator();
  const int64_t rows = p.batch * p.heads * p.L;
  const uint64_t d = rows > 0 ? allocator.allocate(static_cast<uint64_t>(rows) * 4, stream.id()) : 0;
  a.d = d != 0 ? d : p.lse.address;  // no query rows: D is never read nor written
  const uint64_t params = stream.upload_params(&a, sizeof a);
  const uint32_t wg = static_cast<uint32_t>(geometry.workgroup());
  const uint32_t query_tiles = static_cast<uint32_t>((p.L + kBackwardTile - 1) / kBackwardTile);
  const uint32_t key_tiles = static_cast<uint32_t>((p.S + kBackwardTile - 1) / kBackwardTile);
  AccessSet dq_accesses, dkv_accesses;
  detail::backward_accesses(problem, d, &dq_accesses, &dkv_accesses);
  if (query_tiles > 0)
    stream.dispatch(stream.device().pipelines().get(*dq_shader, wg), query_tiles,
                    static_cast<uint32_t>(p.batch * p.heads), 1, &params, sizeof params, nullptr,
                    0, &dq_accesses);
  if (key_tiles > 0)
    stream.dispatch(stream.device().pipelines().get(*dkv_shader, wg), key_tiles,
                    static_cast<uint32_t>(p.batch * kv_heads), 1, &params, sizeof params, nullptr,
                    0, &dkv_accesses);
  if (d != 0) allocator.free(d);  // stream order: a later reuse runs after both passes
  set_last_attention_backward_algorithm("fused");
}

}  // namespace tvk::kernels
