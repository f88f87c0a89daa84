// L2: the paged KV cache of serving engines (shaders/paged_attention.comp). No torch headers.
//
// Layout (vLLM's): a cache is [num_blocks, kv_heads, block_size, head_dim] with any element
// strides for the block, head and token dims and a contiguous head dim (key and value caches
// may be two views of one buffer, e.g. the two halves of vLLM's [.., 2 * head_dim] rows).
// Query / output rows are [tokens, heads, head_dim], the same stride rules.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace tvk {
class Stream;
}

namespace tvk::kernels {

// Element strides of the block, head and token dims of a cache.
struct CacheStrides {
  int64_t block = 0, head = 0, token = 0;
};

// Element strides of the token and head dims of a [tokens, heads, head_dim] tensor.
struct RowStrides {
  int64_t token = 0, head = 0;
};

struct ReshapeAndCache {
  int64_t tokens = 0, kv_heads = 0, E = 0, Ev = 0, block_size = 0, num_blocks = 0;
  // key [tokens, kv_heads, E], value [tokens, kv_heads, Ev] and both caches: one of float16,
  // bfloat16, float32, all the same. slot_mapping: int32 or int64 [tokens]; slot < 0 skips
  // the token, slot >= num_blocks * block_size is a device-side index error.
  Operand key, value, key_cache, value_cache, slot_mapping;
  RowStrides key_strides, value_strides;
  CacheStrides key_cache_strides, value_cache_strides;
};

// Records the cache write (nothing for 0 tokens). Throws std::invalid_argument for
// unsupported dtypes, null or misaligned addresses, sizes < 1 or offsets beyond 32 bits.
void reshape_and_cache(Stream& stream, const ReshapeAndCache& problem);

struct PagedAttention {
  int64_t tokens = 0, heads = 0, kv_heads = 0, E = 0, Ev = 0;
  int64_t num_reqs = 0, block_size = 0, num_blocks = 0;
  int64_t block_table_width = 0, block_table_stride = 0;  // entries per request row, row stride
  int64_t max_seq_len = 0;  // an upper bound of the seq_lens (plans lavapipe's loop budget)
  float scale = 1.0f;
  bool causal = true;
  int64_t sliding_window = 0;  // > 0: keys with |position difference| < window
  float softcap = 0.0f;        // > 0: scores become softcap * tanh(score / softcap)
  // query [tokens, heads, E], out [tokens, heads, Ev], caches: one of float16 / bfloat16 /
  // float32, all the same. block_table int32 [num_reqs, >= width], seq_lens int32 [num_reqs],
  // query_start_loc int32 [num_reqs + 1] (ascending, 0 first, tokens last).
  Operand query, key_cache, value_cache, out, block_table, seq_lens, query_start_loc;
  RowStrides query_strides, out_strides;
  CacheStrides key_cache_strides, value_cache_strides;
};

// Head dims the kernels take (1 .. kPagedAttentionMaxHeadDim).
constexpr int64_t kPagedAttentionMaxHeadDim = 256;

// Strategies (see the shader's header): Rows (one invocation per query row and head, CPU
// devices) and Tiled (one workgroup per query row and head, GPUs). Auto: Rows on devices of
// type "cpu", Tiled elsewhere; TORCH_VK_PAGED_ATTENTION_ALGO=rows|tiled|auto overrides it (read
// at every launch).
enum class PagedAttentionAlgo { Auto, Rows, Tiled };
PagedAttentionAlgo paged_attention_algorithm(Stream& stream);

// Records the attention (nothing for 0 tokens). Throws std::invalid_argument for unsupported
// dtypes or head dims, heads not a multiple of kv_heads, null or misaligned addresses, offsets
// beyond 32 bits, or (devices with a loop limit) sequences longer than the kernel's budget.
void paged_attention(Stream& stream, const PagedAttention& problem);

}  // namespace tvk::kernels
