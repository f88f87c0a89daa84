"""Python entry points of the paged KV-cache ops (native kernels: src/aten/ops_paged_attention.cpp).

  torch.ops.vk.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)
  torch.ops.vk.paged_attention(out, query, key_cache, value_cache, block_table, seq_lens,
                               query_start_loc, scale, causal, sliding_window, softcap,
                               max_seq_len)

Both mutate their cache / out arguments and return nothing; the fake kernels registered here
let torch.compile and FakeTensor tracing pass over them. `paged_attention` below is the
allocating convenience form.
"""
from __future__ import annotations

import torch
import torch_vk  # noqa: F401  (loads the extension that defines torch.ops.vk.*)


@torch.library.register_fake("vk::reshape_and_cache")
def _reshape_and_cache_fake(key, value, key_cache, value_cache, slot_mapping) -> None:
    return None


@torch.library.register_fake("vk::paged_attention")
def _paged_attention_fake(out, query, key_cache, value_cache, block_table, seq_lens,
                          query_start_loc, scale, causal=True, sliding_window=0, softcap=0.0,
                          max_seq_len=0) -> None:
    return None


def reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor,
                      value_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    """Writes key / value [tokens, kv_heads, head_dim] into the caches
    [num_blocks, kv_heads, block_size, head_dim] at slot_mapping (negative: skipped)."""
    torch.ops.vk.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)


def paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_table: torch.Tensor, seq_lens: torch.Tensor,
                    query_start_loc: torch.Tensor, scale: float, causal: bool = True,
                    sliding_window: int = 0, softcap: float = 0.0, max_seq_len: int = 0,
                    out: torch.Tensor | None = None) -> torch.Tensor:
    """Attention of query [tokens, heads, head_dim] over the paged caches (see the module
    docstring of src/aten/ops_paged_attention.cpp); returns out [tokens, heads, head_dim_v]."""
    if out is None:
        out = query.new_empty((query.shape[0], query.shape[1], value_cache.shape[-1]))
    torch.ops.vk.paged_attention(out, query, key_cache, value_cache, block_table, seq_lens,
                                 query_start_loc, float(scale), bool(causal),
                                 int(sliding_window), float(softcap), int(max_seq_len))
    return out
