// Launchers of the paged KV-cache kernels (shaders/paged_attention.comp): the cache write and
// the paged attention (Rows for CPU devices, Tiled for GPUs; see paged_attention.h). The
// parameters go in an uploaded block (they exceed the 128-byte push-constant budget).
#include "kernels/paged_attention.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kernels/launch.h"
#include "runtime/device.h"
#include "runtime/pipeline.h"
#include "runtime/stream.h"

namespace tvk::kernels {
namespace {

constexpr const char* kCacheWhere = "tvk::kernels::reshape_and_cache";
constexpr const char* kWhere = "tvk::kernels::paged_attention";
constexpr uint32_t kTile = 64;  // TS in the shader

// Mirrors `Params` of the CACHE variant (std430).
struct CacheParams {
  uint64_t key, value, kc, vc, slots, errors;
  int32_t k_st, k_sh, v_st, v_sh;
  int32_t kc_sb, kc_sh, kc_sn;
  int32_t vc_sb, vc_sh, vc_sn;
  int32_t tokens, heads, E, Ev;
  int32_t block_size, num_blocks, dtype, slot64;
};
static_assert(sizeof(CacheParams) == 120);

// Mirrors `Params` of the attention variants (std430).
struct AttentionParams {
  uint64_t q, k, v, o, block_table, seq_lens, qsl, errors;
  int32_t q_st, q_sh, o_st, o_sh;
  int32_t k_sb, k_sh, k_sn;
  int32_t v_sb, v_sh, v_sn;
  int32_t bt_stride, bt_width;
  int32_t tokens, heads, group, num_reqs;
  int32_t block_size, E, Ev, dtype;
  int32_t flags, window, num_blocks, pad;
  float scale, softcap;
};
static_assert(sizeof(AttentionParams) == 168);

bool is_float_storage(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}

// Largest |offset| reachable with these sizes and strides (saturating).
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

void check_span(const char* where, int64_t s, const char* what) {
  if (s > kMaxIndex) invalid(where, std::string(what) + ": offsets beyond the 32-bit index range");
}

void check_int32(const char* where, int64_t v, const char* what) {
  if (v < 0 || v > kMaxIndex) invalid(where, std::string(what) + " out of range");
}

int32_t narrow(int64_t v) { return static_cast<int32_t>(v); }

// Adds a [tokens, heads, dim] operand (unit stride along dim) to `set`.
void add_rows(AccessSet& set, const Operand& op, int64_t tokens, int64_t heads, int64_t dim,
              const RowStrides& st, bool write) {
  const int64_t sizes[3] = {dim, heads, tokens}, strides[3] = {1, st.head, st.token};
  add_strided(set, op.address, op.dtype, 3, sizes, strides, write);
}

// Adds a cache [num_blocks, kv_heads, block_size, dim] (unit stride along dim) to `set`.
void add_cache(AccessSet& set, const Operand& op, int64_t blocks, int64_t heads,
               int64_t block_size, int64_t dim, const CacheStrides& st, bool write) {
  const int64_t sizes[4] = {dim, block_size, heads, blocks};
  const int64_t strides[4] = {1, st.token, st.head, st.block};
  add_strided(set, op.address, op.dtype, 4, sizes, strides, write);
}

const ShaderBinary& shader(const char* where, const std::string& name) {
  const ShaderBinary* s = find_shader(name);
  if (!s) invalid(where, "no shader variant '" + name + "' (stale build?)");
  return *s;
}

}  // namespace

void reshape_and_cache(Stream& stream, const ReshapeAndCache& p) {
  if (p.tokens < 0 || p.kv_heads < 0) invalid(kCacheWhere, "negative size");
  if (p.tokens == 0 || p.kv_heads == 0) return;
  if (p.E < 1 || p.Ev < 1 || p.block_size < 1 || p.num_blocks < 1)
    invalid(kCacheWhere, "head dims, block size and block count must be positive");
  check_operand(kCacheWhere, p.key, "key", false);
  check_operand(kCacheWhere, p.value, "value", false);
  check_operand(kCacheWhere, p.key_cache, "key_cache", false);
  check_operand(kCacheWhere, p.value_cache, "value_cache", false);
  check_operand(kCacheWhere, p.slot_mapping, "slot_mapping", false);
  if (!is_float_storage(p.key.dtype) || p.value.dtype != p.key.dtype ||
      p.key_cache.dtype != p.key.dtype || p.value_cache.dtype != p.key.dtype)
    invalid(kCacheWhere, "key, value and the caches must share one of float16 / bfloat16 / float32");
  if (p.slot_mapping.dtype != DType::Int32 && p.slot_mapping.dtype != DType::Int64)
    invalid(kCacheWhere, "slot_mapping must be int32 or int64");
  const int64_t width = p.E + p.Ev;
  if (p.tokens * p.kv_heads > kMaxIndex / width)
    invalid(kCacheWhere, "more elements than the kernel's 32-bit index range");
  check_span(kCacheWhere, span({{p.tokens, p.key_strides.token}, {p.kv_heads, p.key_strides.head}, {p.E, 1}}), "key");
  check_span(kCacheWhere, span({{p.tokens, p.value_strides.token}, {p.kv_heads, p.value_strides.head}, {p.Ev, 1}}), "value");
  const CacheStrides& kc = p.key_cache_strides;
  const CacheStrides& vc = p.value_cache_strides;
  check_span(kCacheWhere, span({{p.num_blocks, kc.block}, {p.kv_heads, kc.head}, {p.block_size, kc.token}, {p.E, 1}}), "key_cache");
  check_span(kCacheWhere, span({{p.num_blocks, vc.block}, {p.kv_heads, vc.head}, {p.block_size, vc.token}, {p.Ev, 1}}), "value_cache");

  CacheParams a{};
  a.key = p.key.address;
  a.value = p.value.address;
  a.kc = p.key_cache.address;
  a.vc = p.value_cache.address;
  a.slots = p.slot_mapping.address;
  a.errors = stream.device_error_address();
  a.k_st = narrow(p.key_strides.token), a.k_sh = narrow(p.key_strides.head);
  a.v_st = narrow(p.value_strides.token), a.v_sh = narrow(p.value_strides.head);
  a.kc_sb = narrow(kc.block), a.kc_sh = narrow(kc.head), a.kc_sn = narrow(kc.token);
  a.vc_sb = narrow(vc.block), a.vc_sh = narrow(vc.head), a.vc_sn = narrow(vc.token);
  a.tokens = narrow(p.tokens);
  a.heads = narrow(p.kv_heads);
  a.E = narrow(p.E);
  a.Ev = narrow(p.Ev);
  a.block_size = narrow(p.block_size);
  a.num_blocks = narrow(p.num_blocks);
  a.dtype = static_cast<int32_t>(p.key.dtype);
  a.slot64 = p.slot_mapping.dtype == DType::Int64 ? 1 : 0;
  const int64_t total = p.tokens * p.kv_heads * width;
  const uint32_t groups = group_count(stream, total, 256);
  // Loop iterations of an invocation: one per element it owns (grid stride).
  const int64_t per_invocation = (total + int64_t{groups} * 256 - 1) / (int64_t{groups} * 256);
  if (per_invocation + 2 > loop_budget(stream))
    invalid(kCacheWhere, "too many new tokens for the device's loop-iteration limit");
  const uint64_t params = stream.upload_params(&a, sizeof a);
  VkPipeline pipeline =
      stream.device().pipelines().get(shader(kCacheWhere, "paged_attention.cache"), 256);
  // key, value and the slots read; the caches written (the device error record is claimed
  // atomically and read by the host after a wait: not declared).
  AccessSet accesses;
  add_rows(accesses, p.key, p.tokens, p.kv_heads, p.E, p.key_strides, false);
  add_rows(accesses, p.value, p.tokens, p.kv_heads, p.Ev, p.value_strides, false);
  add_dense(accesses, p.slot_mapping.address, p.slot_mapping.dtype, p.tokens, false);
  add_cache(accesses, p.key_cache, p.num_blocks, p.kv_heads, p.block_size, p.E, kc, true);
  add_cache(accesses, p.value_cache, p.num_blocks, p.kv_heads, p.block_size, p.Ev, vc, true);
  stream.dispatch(pipeline, groups, 1, 1, &params, sizeof params, nullptr, 0, &accesses);
}

PagedAttentionAlgo paged_attention_algorithm(Stream& stream) {
  if (const char* v = std::getenv("TORCH_VK_PAGED_ATTENTION_ALGO")) {
    if (std::strcmp(v, "rows") == 0) return PagedAttentionAlgo::Rows;
    if (std::strcmp(v, "tiled") == 0) return PagedAttentionAlgo::Tiled;
  }
  return stream.device().caps().device_type == "cpu" ? PagedAttentionAlgo::Rows
                                                     : PagedAttentionAlgo::Tiled;
}

void paged_attention(Stream& stream, const PagedAttention& p) {
  if (p.tokens < 0 || p.heads < 0 || p.num_reqs < 0) invalid(kWhere, "negative size");
  if (p.tokens == 0 || p.heads == 0) return;
  if (p.E < 1 || p.Ev < 1 || p.E > kPagedAttentionMaxHeadDim || p.Ev > kPagedAttentionMaxHeadDim)
    invalid(kWhere, "head dims must be in [1, " + std::to_string(kPagedAttentionMaxHeadDim) + "]");
  if (p.kv_heads < 1 || p.heads % p.kv_heads != 0)
    invalid(kWhere, "query heads must be a multiple of the key / value heads");
  if (p.num_reqs < 1) invalid(kWhere, "query rows without any request");
  if (p.block_size < 1 || p.num_blocks < 1 || p.block_table_width < 1)
    invalid(kWhere, "block size, block count and block-table width must be positive");
  if (p.sliding_window < 0) invalid(kWhere, "the sliding window must be >= 0");
  if (!(p.softcap >= 0.0f)) invalid(kWhere, "the soft cap must be >= 0");
  check_operand(kWhere, p.query, "query", false);
  check_operand(kWhere, p.key_cache, "key_cache", false);
  check_operand(kWhere, p.value_cache, "value_cache", false);
  check_operand(kWhere, p.out, "out", false);
  check_operand(kWhere, p.block_table, "block_table", false);
  check_operand(kWhere, p.seq_lens, "seq_lens", false);
  check_operand(kWhere, p.query_start_loc, "query_start_loc", false);
  const DType dt = p.query.dtype;
  if (!is_float_storage(dt) || p.key_cache.dtype != dt || p.value_cache.dtype != dt ||
      p.out.dtype != dt)
    invalid(kWhere, "query, the caches and out must share one of float16 / bfloat16 / float32");
  if (p.block_table.dtype != DType::Int32 || p.seq_lens.dtype != DType::Int32 ||
      p.query_start_loc.dtype != DType::Int32)
    invalid(kWhere, "block_table, seq_lens and query_start_loc must be int32");
  check_int32(kWhere, p.tokens * p.heads, "query rows");
  check_int32(kWhere, p.sliding_window, "sliding window");
  check_span(kWhere, span({{p.tokens, p.query_strides.token}, {p.heads, p.query_strides.head}, {p.E, 1}}), "query");
  check_span(kWhere, span({{p.tokens, p.out_strides.token}, {p.heads, p.out_strides.head}, {p.Ev, 1}}), "out");
  const CacheStrides& kc = p.key_cache_strides;
  const CacheStrides& vc = p.value_cache_strides;
  check_span(kWhere, span({{p.num_blocks, kc.block}, {p.kv_heads, kc.head}, {p.block_size, kc.token}, {p.E, 1}}), "key_cache");
  check_span(kWhere, span({{p.num_blocks, vc.block}, {p.kv_heads, vc.head}, {p.block_size, vc.token}, {p.Ev, 1}}), "value_cache");
  check_span(kWhere, span({{p.num_reqs, p.block_table_stride}, {p.block_table_width, 1}}), "block_table");

  AttentionParams a{};
  a.q = p.query.address;
  a.k = p.key_cache.address;
  a.v = p.value_cache.address;
  a.o = p.out.address;
  a.block_table = p.block_table.address;
  a.seq_lens = p.seq_lens.address;
  a.qsl = p.query_start_loc.address;
  a.errors = stream.device_error_address();
  a.q_st = narrow(p.query_strides.token), a.q_sh = narrow(p.query_strides.head);
  a.o_st = narrow(p.out_strides.token), a.o_sh = narrow(p.out_strides.head);
  a.k_sb = narrow(kc.block), a.k_sh = narrow(kc.head), a.k_sn = narrow(kc.token);
  a.v_sb = narrow(vc.block), a.v_sh = narrow(vc.head), a.v_sn = narrow(vc.token);
  a.bt_stride = narrow(p.block_table_stride);
  a.bt_width = narrow(p.block_table_width);
  a.tokens = narrow(p.tokens);
  a.heads = narrow(p.heads);
  a.group = narrow(p.heads / p.kv_heads);
  a.num_reqs = narrow(p.num_reqs);
  a.block_size = narrow(p.block_size);
  a.E = narrow(p.E);
  a.Ev = narrow(p.Ev);
  a.dtype = static_cast<int32_t>(dt);
  a.flags = p.causal ? 1 : 0;
  a.window = narrow(p.sliding_window);
  a.num_blocks = narrow(p.num_blocks);
  a.scale = p.scale;
  a.softcap = p.softcap;

  // The query, the caches and the request tables read; out written.
  AccessSet accesses;
  add_rows(accesses, p.query, p.tokens, p.heads, p.E, p.query_strides, false);
  add_cache(accesses, p.key_cache, p.num_blocks, p.kv_heads, p.block_size, p.E, kc, false);
  add_cache(accesses, p.value_cache, p.num_blocks, p.kv_heads, p.block_size, p.Ev, vc, false);
  const int64_t bt_sizes[2] = {p.block_table_width, p.num_reqs};
  const int64_t bt_strides[2] = {1, p.block_table_stride};
  add_strided(accesses, p.block_table.address, DType::Int32, 2, bt_sizes, bt_strides, false);
  add_dense(accesses, p.seq_lens.address, DType::Int32, p.num_reqs, false);
  add_dense(accesses, p.query_start_loc.address, DType::Int32, p.num_reqs + 1, false);
  add_rows(accesses, p.out, p.tokens, p.heads, p.Ev, p.out_strides, true);

  const int64_t dim = std::max(p.E, p.Ev);
  const std::string dmax = dim <= 64 ? "d64" : dim <= 128 ? "d128" : "d256";
  // Keys an invocation walks: the longest sequence (callers pass an upper bound), at least
  // the block table's reach when they pass none.
  const int64_t keys = p.max_seq_len > 0 ? p.max_seq_len : p.block_table_width * p.block_size;
  int64_t search = 1;  // iterations of find_request's binary search
  while ((int64_t{1} << search) < p.num_reqs + 1) ++search;
  const DeviceCapabilities& caps = stream.device().caps();
  const int64_t budget = loop_budget(stream);

  if (paged_attention_algorithm(stream) == PagedAttentionAlgo::Tiled) {
    const bool subgroups = caps.subgroup_basic && caps.subgroup_arithmetic;
    const std::string name = "paged_attention.tiled." + dmax + (subgroups ? ".subgroup" : "");
    const uint32_t token_groups = static_cast<uint32_t>(std::min<int64_t>(p.tokens, 65535));
    if (p.heads > 65535) invalid(kWhere, "more than 65535 query heads");
    // Per row of the workgroup: the search, the q load and per key tile two barriers and
    // (subgroup variant) the loop over the workgroup's subgroups.
    const int64_t rows_per_group = (p.tokens + token_groups - 1) / token_groups;
    const int64_t tiles = (keys + kTile - 1) / kTile;
    const int64_t per_tile =
        4 + (subgroups ? kTile / std::max<int64_t>(1, caps.subgroup_size) : 0);
    if (rows_per_group * (search + 4 + tiles * per_tile) > budget)
      invalid(kWhere, "sequences of " + std::to_string(keys) +
                          " keys exceed the device's loop-iteration limit for the Tiled kernel");
    const std::vector<uint32_t> spec = {static_cast<uint32_t>(dt), 0, static_cast<uint32_t>(p.E),
                                        static_cast<uint32_t>(p.Ev)};
    VkPipeline pipeline = stream.device().pipelines().get(shader(kWhere, name), kTile, spec);
    const uint64_t params = stream.upload_params(&a, sizeof a);
    stream.dispatch(pipeline, token_groups, static_cast<uint32_t>(p.heads), 1, &params,
                    sizeof params, nullptr, 0, &accesses);
    return;
  }

  const std::string name = "paged_attention.rows." + dmax;
  constexpr uint32_t wg = 64;
  const int64_t rows = p.tokens * p.heads;
  const uint32_t groups = group_count(stream, rows, wg);
  const int64_t rows_per_invocation = (rows + int64_t{groups} * wg - 1) / (int64_t{groups} * wg);
  if (rows_per_invocation * (search + 2 + keys) > budget)
    invalid(kWhere, "sequences of " + std::to_string(keys) +
                        " keys exceed the device's loop-iteration limit for the Rows kernel");
  // Vector access: every row starts 4-element aligned and the row length is a multiple of 4.
  auto aligned = [](const Operand& op, int64_t n, std::initializer_list<int64_t> strides) {
    if (n % 4 != 0 || op.address % (4 * dtype_size(op.dtype)) != 0) return false;
    for (int64_t s : strides)
      if (s % 4 != 0) return false;
    return true;
  };
  uint32_t vec = 0;
  if (aligned(p.query, p.E, {p.query_strides.token, p.query_strides.head}) &&
      aligned(p.key_cache, p.E, {kc.block, kc.head, kc.token}))
    vec |= 1;
  if (aligned(p.value_cache, p.Ev, {vc.block, vc.head, vc.token})) vec |= 2;
  const std::vector<uint32_t> spec = {static_cast<uint32_t>(dt), vec, static_cast<uint32_t>(p.E),
                                      static_cast<uint32_t>(p.Ev)};
  VkPipeline pipeline = stream.device().pipelines().get(shader(kWhere, name), wg, spec);
  const uint64_t params = stream.upload_params(&a, sizeof a);
  stream.dispatch(pipeline, groups, 1, 1, &params, sizeof params, nullptr, 0, &accesses);
}

}  // namespace tvk::kernels
