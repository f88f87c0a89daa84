"""VkAttentionBackend: vLLM's paged attention on the "vk" device.

KV cache: vLLM's per-layer [num_blocks, kv_heads, block_size, 2 * head_size] view, each row
the key followed by the value of one token (the content order of vLLM's FlashAttention
backend); the key and value caches handed to the kernels are the two halves of the row
([..., :head_size] and [..., head_size:]), views with the layout's strides, so every physical
layout vLLM picks works (the preferred one keeps each (block, head) page contiguous).

Each step: vLLM calls do_kv_cache_update (torch.ops.vk.reshape_and_cache: the new tokens'
keys / values into their slots) and then forward (torch.ops.vk.paged_attention: every query
row over its request's cached keys through the block table: decode, prefill, chunked prefill
and prefix-cache hits alike, in one kernel launch per layer).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionLayer,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
    MultipleOf,
)
from vllm.v1.kv_cache_layout import KVCacheLayout

from . import ops

MAX_HEAD_SIZE = 256


class VkAttentionBackend(AttentionBackend):
    forward_includes_kv_cache_update: bool = False
    accept_output_buffer: bool = True
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float16, torch.bfloat16, torch.float32]
    supported_kv_cache_dtypes: ClassVar[list[str]] = ["auto", "float16", "bfloat16"]

    @staticmethod
    def get_name() -> str:
        return "CUSTOM"

    @staticmethod
    def get_impl_cls() -> type["VkAttentionImpl"]:
        return VkAttentionImpl

    @staticmethod
    def get_builder_cls() -> type["VkAttentionMetadataBuilder"]:
        return VkAttentionMetadataBuilder

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list[int | MultipleOf]:
        return [MultipleOf(1)]

    @classmethod
    def supports_head_size(cls, head_size: int) -> bool:
        return 1 <= head_size <= MAX_HEAD_SIZE

    @classmethod
    def supported_kv_cache_layouts(cls) -> tuple[KVCacheLayout, ...]:
        # Page-contiguous per (block, head) first; the kernels take any strides.
        return (KVCacheLayout.LBHNC, KVCacheLayout.LBNHC, KVCacheLayout.BLHNC,
                KVCacheLayout.BLNHC)

    @classmethod
    def supports_sliding_window(cls) -> bool:
        return True

    @classmethod
    def supports_non_causal(cls) -> bool:
        return True

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        return attn_type == AttentionType.DECODER


@dataclass
class VkAttentionMetadata:
    num_actual_tokens: int
    max_query_len: int
    max_seq_len: int
    query_start_loc: torch.Tensor  # int32 [num_reqs + 1]
    seq_lens: torch.Tensor         # int32 [num_reqs]
    block_table: torch.Tensor      # int32 [num_reqs, max_blocks]
    slot_mapping: torch.Tensor     # int64 [num_tokens]
    causal: bool = True


class VkAttentionMetadataBuilder(AttentionMetadataBuilder[VkAttentionMetadata]):
    def __init__(self, kv_cache_spec, layer_names: list[str], vllm_config,
                 device: torch.device) -> None:
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> VkAttentionMetadata:
        m = common_attn_metadata
        if isinstance(m.causal, torch.Tensor):
            raise NotImplementedError("per-request causal masks are not supported on vk")
        num_reqs = m.num_reqs
        return VkAttentionMetadata(
            num_actual_tokens=m.num_actual_tokens,
            max_query_len=m.max_query_len,
            max_seq_len=m.max_seq_len,
            query_start_loc=m.query_start_loc[:num_reqs + 1],
            seq_lens=m.seq_lens[:num_reqs],
            block_table=m.block_table_tensor[:num_reqs],
            slot_mapping=m.slot_mapping,
            causal=bool(m.causal),
        )


class VkAttentionImpl(AttentionImpl[VkAttentionMetadata]):
    def __init__(self, num_heads: int, head_size: int, scale: float,
                 num_kv_heads: int | None = None, alibi_slopes: list[float] | None = None,
                 sliding_window: int | None = None, kv_cache_dtype: str = "auto",
                 logits_soft_cap: float | None = None,
                 attn_type: str = AttentionType.DECODER,
                 kv_sharing_target_layer_name: str | None = None,
                 sinks: torch.Tensor | None = None, **kwargs) -> None:
        if alibi_slopes is not None:
            raise NotImplementedError("ALiBi is not supported by the vk attention backend")
        if sinks is not None:
            raise NotImplementedError("attention sinks are not supported by the vk backend")
        if attn_type != AttentionType.DECODER:
            raise NotImplementedError(f"attention type {attn_type} is not supported on vk")
        if kv_cache_dtype not in ("auto", "float16", "bfloat16"):
            raise NotImplementedError(f"KV cache dtype {kv_cache_dtype} is not supported on vk")
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads if num_kv_heads is not None else num_heads
        self.sliding_window = int(sliding_window) if sliding_window else 0
        self.logits_soft_cap = float(logits_soft_cap) if logits_soft_cap else 0.0
        self.kv_cache_dtype = kv_cache_dtype
        self.attn_type = attn_type
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name

    def _split(self, kv_cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return kv_cache[..., :self.head_size], kv_cache[..., self.head_size:]

    def do_kv_cache_update(self, layer: torch.nn.Module, key: torch.Tensor, value: torch.Tensor,
                           kv_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
        n = slot_mapping.shape[0]
        key_cache, value_cache = self._split(kv_cache)
        ops.reshape_and_cache(key[:n], value[:n], key_cache, value_cache, slot_mapping)

    def forward(self, layer: AttentionLayer, query: torch.Tensor, key: torch.Tensor,
                value: torch.Tensor, kv_cache: torch.Tensor,
                attn_metadata: VkAttentionMetadata | None, output: torch.Tensor,
                output_scale: torch.Tensor | None = None,
                output_block_scale: torch.Tensor | None = None) -> torch.Tensor:
        if output_scale is not None or output_block_scale is not None:
            raise NotImplementedError("fused output quantization is not supported on vk")
        if attn_metadata is None:  # profiling run: no cache yet
            return output
        n = attn_metadata.num_actual_tokens
        key_cache, value_cache = self._split(kv_cache)
        ops.paged_attention(query[:n], key_cache, value_cache, attn_metadata.block_table,
                            attn_metadata.seq_lens, attn_metadata.query_start_loc, self.scale,
                            causal=attn_metadata.causal, sliding_window=self.sliding_window,
                            softcap=self.logits_soft_cap, max_seq_len=attn_metadata.max_seq_len,
                            out=output[:n])
        return output
