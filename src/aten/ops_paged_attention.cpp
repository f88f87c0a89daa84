// The paged KV-cache ops of serving engines, as torch.library ops in the `vk` namespace
// (torch.ops.vk.*), with native kernels for vk tensors (src/kernels/paged_attention.h):
//
//   reshape_and_cache(key, value, key_cache!, value_cache!, slot_mapping)
//       key / value [tokens, kv_heads, head_dim] into slot slot_mapping[t] of the caches
//       [num_blocks, kv_heads, block_size, head_dim]; a negative slot writes nothing.
//   paged_attention(out!, query, key_cache, value_cache, block_table, seq_lens,
//                   query_start_loc, scale, causal, sliding_window, softcap, max_seq_len)
//       out [tokens, heads, head_dim_v] = attention of every query row over its request's keys
//       in the cache (decode and chunked prefill in one kernel; GQA / MQA, causal masking,
//       sliding window, soft-capping). Semantics: shaders/paged_attention.comp.
//
// The Python side (torch_vk/integrations/vllm/ops.py) registers their fake (meta) kernels and
// the vLLM attention backend calls them. Argument errors raise like CUDA's ops do
// (RuntimeError / IndexError at the next sync for out-of-range slots and block ids).
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/vk_common.h"
#include "kernels/paged_attention.h"

namespace tvk::aten {
namespace {

bool is_kernel_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

void check_vk(const at::Tensor& t, const char* op, const char* what, const at::Device& device) {
  TORCH_CHECK(t.device() == device, op, ": ", what, " is on ", t.device(),
              ", expected the query's device ", device);
  TORCH_CHECK(t.layout() == at::kStrided, op, ": ", what, " must be a strided tensor");
}

// The tensor with a unit stride in its last dim (a copy only when it has none).
at::Tensor last_dim_contiguous(const at::Tensor& t) {
  return (t.size(-1) <= 1 || t.stride(-1) == 1) ? t : t.contiguous();
}

// An int32 contiguous copy of an index tensor (a view when it already is one).
at::Tensor int32_contiguous(const at::Tensor& t, const char* op, const char* what) {
  TORCH_CHECK(t.scalar_type() == at::kInt || t.scalar_type() == at::kLong, op, ": ", what,
              " must be int32 or int64, got ", t.scalar_type());
  return t.to(at::kInt).contiguous();
}

kernels::CacheStrides cache_strides(const at::Tensor& c) {
  return {c.stride(0), c.stride(1), c.stride(2)};
}

void reshape_and_cache(const at::Tensor& key, const at::Tensor& value, const at::Tensor& key_cache,
                       const at::Tensor& value_cache, const at::Tensor& slot_mapping) {
  const char* op = "vk::reshape_and_cache";
  TORCH_CHECK(key.dim() == 3 && value.dim() == 3, op,
              ": key and value must be [tokens, kv_heads, head_dim]");
  TORCH_CHECK(key_cache.dim() == 4 && value_cache.dim() == 4, op,
              ": the caches must be [num_blocks, kv_heads, block_size, head_dim]");
  TORCH_CHECK(slot_mapping.dim() == 1, op, ": slot_mapping must be 1-D");
  const at::Device device = key.device();
  for (auto [t, what] : {std::pair{&value, "value"}, {&key_cache, "key_cache"},
                         {&value_cache, "value_cache"}, {&slot_mapping, "slot_mapping"}})
    check_vk(*t, op, what, device);
  TORCH_CHECK(is_kernel_dtype(key.scalar_type()), op,
              ": key must be float32, float16 or bfloat16, got ", key.scalar_type());
  TORCH_CHECK(value.scalar_type() == key.scalar_type() &&
                  key_cache.scalar_type() == key.scalar_type() &&
                  value_cache.scalar_type() == key.scalar_type(),
              op, ": key, value and the caches must have one dtype");
  TORCH_CHECK(slot_mapping.scalar_type() == at::kInt || slot_mapping.scalar_type() == at::kLong,
              op, ": slot_mapping must be int32 or int64");
  const int64_t T = key.size(0), Hk = key.size(1), E = key.size(2), Ev = value.size(2);
  TORCH_CHECK(value.size(0) == T && value.size(1) == Hk, op,
              ": key and value differ in tokens or heads");
  TORCH_CHECK(slot_mapping.size(0) >= T, op, ": slot_mapping has ", slot_mapping.size(0),
              " entries for ", T, " tokens");
  TORCH_CHECK(key_cache.size(1) == Hk && value_cache.size(1) == Hk, op,
              ": the caches hold ", key_cache.size(1), " heads, the keys ", Hk);
  TORCH_CHECK(key_cache.size(3) == E && value_cache.size(3) == Ev, op,
              ": the caches' head dims differ from the keys' / values'");
  TORCH_CHECK(key_cache.sizes().slice(0, 3) == value_cache.sizes().slice(0, 3), op,
              ": the key and value caches differ in blocks, heads or block size");
  TORCH_CHECK((key_cache.stride(3) == 1 || E == 1) && (value_cache.stride(3) == 1 || Ev == 1),
              op, ": the caches' head dims must be contiguous");
  if (T == 0 || Hk == 0) return;
  TORCH_CHECK(key_cache.size(0) > 0 && key_cache.size(2) > 0, op, ": the caches are empty");
  const at::Tensor k = last_dim_contiguous(key), v = last_dim_contiguous(value);
  const at::Tensor slots = slot_mapping.stride(0) == 1 ? slot_mapping : slot_mapping.contiguous();

  kernels::ReshapeAndCache p;
  p.tokens = T;
  p.kv_heads = Hk;
  p.E = E;
  p.Ev = Ev;
  p.block_size = key_cache.size(2);
  p.num_blocks = key_cache.size(0);
  p.key = operand(k, op);
  p.value = operand(v, op);
  p.key_cache = operand(key_cache, op);
  p.value_cache = operand(value_cache, op);
  p.slot_mapping = operand(slots, op);
  p.key_strides = {k.stride(0), k.stride(1)};
  p.value_strides = {v.stride(0), v.stride(1)};
  p.key_cache_strides = cache_strides(key_cache);
  p.value_cache_strides = cache_strides(value_cache);
  const c10::DeviceGuard guard(device);
  tvk::Stream& stream = current_stream(device.index());
  translate_errors([&] { kernels::reshape_and_cache(stream, p); });
}

void paged_attention(const at::Tensor& out, const at::Tensor& query, const at::Tensor& key_cache,
                     const at::Tensor& value_cache, const at::Tensor& block_table,
                     const at::Tensor& seq_lens, const at::Tensor& query_start_loc, double scale,
                     bool causal, int64_t sliding_window, double softcap, int64_t max_seq_len) {
  const char* op = "vk::paged_attention";
  TORCH_CHECK(query.dim() == 3 && out.dim() == 3, op,
              ": query and out must be [tokens, heads, head_dim]");
  TORCH_CHECK(key_cache.dim() == 4 && value_cache.dim() == 4, op,
              ": the caches must be [num_blocks, kv_heads, block_size, head_dim]");
  TORCH_CHECK(block_table.dim() == 2, op, ": block_table must be [num_reqs, max_blocks]");
  TORCH_CHECK(seq_lens.dim() == 1 && query_start_loc.dim() == 1, op,
              ": seq_lens and query_start_loc must be 1-D");
  const at::Device device = query.device();
  for (auto [t, what] : {std::pair{&out, "out"}, {&key_cache, "key_cache"},
                         {&value_cache, "value_cache"}, {&block_table, "block_table"},
                         {&seq_lens, "seq_lens"}, {&query_start_loc, "query_start_loc"}})
    check_vk(*t, op, what, device);
  TORCH_CHECK(is_kernel_dtype(query.scalar_type()), op,
              ": query must be float32, float16 or bfloat16, got ", query.scalar_type());
  TORCH_CHECK(key_cache.scalar_type() == query.scalar_type() &&
                  value_cache.scalar_type() == query.scalar_type() &&
                  out.scalar_type() == query.scalar_type(),
              op, ": query, the caches and out must have one dtype");
  const int64_t T = query.size(0), H = query.size(1), E = query.size(2);
  const int64_t Hk = key_cache.size(1), Ev = value_cache.size(3);
  TORCH_CHECK(out.size(0) == T && out.size(1) == H && out.size(2) == Ev, op, ": out has shape ",
              out.sizes(), ", expected [", T, ", ", H, ", ", Ev, "]");
  TORCH_CHECK(key_cache.size(3) == E, op, ": the key cache's head dim ", key_cache.size(3),
              " differs from the query's ", E);
  TORCH_CHECK(key_cache.sizes().slice(0, 3) == value_cache.sizes().slice(0, 3), op,
              ": the key and value caches differ in blocks, heads or block size");
  TORCH_CHECK(Hk > 0 && H % Hk == 0, op, ": query heads (", H,
              ") must be a multiple of the cache's heads (", Hk, ")");
  TORCH_CHECK(E >= 1 && Ev >= 1 && E <= kernels::kPagedAttentionMaxHeadDim &&
                  Ev <= kernels::kPagedAttentionMaxHeadDim,
              op, ": head dims must be in [1, ", kernels::kPagedAttentionMaxHeadDim, "]");
  TORCH_CHECK((key_cache.stride(3) == 1 || E == 1) && (value_cache.stride(3) == 1 || Ev == 1),
              op, ": the caches' head dims must be contiguous");
  TORCH_CHECK(out.stride(2) == 1 || Ev == 1, op, ": out's head dim must be contiguous");
  const int64_t R = seq_lens.size(0);
  TORCH_CHECK(query_start_loc.size(0) == R + 1, op, ": query_start_loc has ",
              query_start_loc.size(0), " entries for ", R, " requests (expected ", R + 1, ")");
  TORCH_CHECK(block_table.size(0) >= R, op, ": block_table has ", block_table.size(0),
              " rows for ", R, " requests");
  TORCH_CHECK(sliding_window >= 0, op, ": sliding_window must be >= 0 (0: none)");
  TORCH_CHECK(softcap >= 0.0, op, ": softcap must be >= 0 (0: none)");
  if (T == 0 || H == 0) return;
  TORCH_CHECK(R > 0, op, ": ", T, " query rows but no request");
  TORCH_CHECK(key_cache.size(0) > 0 && key_cache.size(2) > 0 && block_table.size(1) > 0, op,
              ": the caches or the block table are empty");
  const at::Tensor q = last_dim_contiguous(query);
  const at::Tensor table = block_table.scalar_type() == at::kInt && block_table.stride(1) == 1
                               ? block_table
                               : int32_contiguous(block_table, op, "block_table");
  const at::Tensor lens = int32_contiguous(seq_lens, op, "seq_lens");
  const at::Tensor starts = int32_contiguous(query_start_loc, op, "query_start_loc");

  kernels::PagedAttention p;
  p.tokens = T;
  p.heads = H;
  p.kv_heads = Hk;
  p.E = E;
  p.Ev = Ev;
  p.num_reqs = R;
  p.block_size = key_cache.size(2);
  p.num_blocks = key_cache.size(0);
  p.block_table_width = table.size(1);
  p.block_table_stride = table.stride(0);
  p.max_seq_len = max_seq_len;
  p.scale = static_cast<float>(scale);
  p.causal = causal;
  p.sliding_window = sliding_window;
  p.softcap = static_cast<float>(softcap);
  p.query = operand(q, op);
  p.key_cache = operand(key_cache, op);
  p.value_cache = operand(value_cache, op);
  p.out = operand(out, op);
  p.block_table = operand(table, op);
  p.seq_lens = operand(lens, op);
  p.query_start_loc = operand(starts, op);
  p.query_strides = {q.stride(0), q.stride(1)};
  p.out_strides = {out.stride(0), out.stride(1)};
  p.key_cache_strides = cache_strides(key_cache);
  p.value_cache_strides = cache_strides(value_cache);
  const c10::DeviceGuard guard(device);
  tvk::Stream& stream = current_stream(device.index());
  translate_errors([&] { kernels::paged_attention(stream, p); });
}

}  // namespace

TORCH_LIBRARY(vk, m) {
  m.def("reshape_and_cache(Tensor key, Tensor value, Tensor(a!) key_cache, "
        "Tensor(b!) value_cache, Tensor slot_mapping) -> ()");
  m.def("paged_attention(Tensor(a!) out, Tensor query, Tensor key_cache, Tensor value_cache, "
        "Tensor block_table, Tensor seq_lens, Tensor query_start_loc, float scale, "
        "bool causal=True, int sliding_window=0, float softcap=0.0, int max_seq_len=0) -> ()");
}

TORCH_LIBRARY_IMPL(vk, PrivateUse1, m) {
  m.impl("reshape_and_cache", TORCH_FN(reshape_and_cache));
  m.impl("paged_attention", TORCH_FN(paged_attention));
}

}  // namespace tvk::aten
