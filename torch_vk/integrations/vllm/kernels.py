"""Stand-ins for the Triton kernels of vLLM's model runner, as vk torch ops.

vLLM launches a few small Triton kernels around the model (slot mappings, ...); Triton has no
vk backend, so the platform registers these implementations through vLLM's kernel-override
hook (Platform.register_triton_kernel_overrides -> vllm.triton_utils.dispatcher). Each one has
the original kernel's parameter names (vLLM binds launch arguments by name) and stays on the
device: no host round trip.
"""
from __future__ import annotations

import torch


def compute_slot_mapping(num_tokens, max_num_tokens, query_start_loc_ptr, positions_ptr,
                         block_table_ptr, block_table_stride, slot_mapping_ptr,
                         KV_CACHE_BLOCK_SIZE, TOTAL_CP_WORLD_SIZE, TOTAL_CP_RANK,
                         CP_KV_CACHE_INTERLEAVE_SIZE, PAD_ID, BLOCK_SIZE):
    """vllm.v1.worker.block_table.ComputeSlotMappingKernel.kernel: the KV-cache slot of every
    scheduled token (block_table[request, position // block_size] * block_size + position %
    block_size), PAD_ID for the padding up to max_num_tokens."""
    if TOTAL_CP_WORLD_SIZE != 1:
        raise NotImplementedError("context parallelism is not supported on vk")
    num_tokens, max_num_tokens = int(num_tokens), int(max_num_tokens)
    slots = slot_mapping_ptr
    if num_tokens > 0:
        device = positions_ptr.device
        positions = positions_ptr[:num_tokens].to(torch.int64)
        tokens = torch.arange(num_tokens, device=device, dtype=query_start_loc_ptr.dtype)
        # query_start_loc is ascending (padding repeats the last offset): the request of
        # token t is the last r with query_start_loc[r] <= t.
        requests = torch.searchsorted(query_start_loc_ptr, tokens, right=True).to(torch.int64) - 1
        block = KV_CACHE_BLOCK_SIZE
        index = requests * int(block_table_stride) + torch.div(positions, block,
                                                               rounding_mode="floor")
        blocks = block_table_ptr.reshape(-1).index_select(0, index).to(torch.int64)
        slots[:num_tokens] = blocks * block + positions.remainder(block)
    if max_num_tokens > num_tokens:
        slots[num_tokens:max_num_tokens] = PAD_ID


OVERRIDES = {
    "vllm.v1.worker.block_table.ComputeSlotMappingKernel.kernel": compute_slot_mapping,
}
