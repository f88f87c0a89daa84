"""Caching allocator statistics, empty_cache, out-of-memory, tensors beyond
maxStorageBufferRange."""
import gc

import pytest
import torch

import torch_vk

pytestmark = pytest.mark.usefixtures("strict_native")

BLOCK = 512  # allocation granularity (docs/ARCHITECTURE.md)


def rounded(nbytes):
    return (nbytes + BLOCK - 1) // BLOCK * BLOCK


def test_memory_allocated_moves_by_block_size():
    torch.vk.synchronize()
    base = torch.vk.memory_allocated()
    x = torch.empty(1000, dtype=torch.uint8, device="vk")
    assert torch.vk.memory_allocated() - base == rounded(1000)
    y = torch.empty(3, 5, dtype=torch.float32, device="vk")
    assert torch.vk.memory_allocated() - base == rounded(1000) + rounded(60)
    del x
    assert torch.vk.memory_allocated() - base == rounded(60)
    del y
    assert torch.vk.memory_allocated() == base


def test_peak_and_reset():
    torch.vk.reset_peak_memory_stats()
    base = torch.vk.memory_allocated()
    x = torch.empty(1 << 20, dtype=torch.uint8, device="vk")
    del x
    assert torch.vk.max_memory_allocated() >= base + (1 << 20)
    torch.vk.reset_peak_memory_stats()
    assert torch.vk.max_memory_allocated() == torch.vk.memory_allocated()


def test_empty_cache_returns_reserved_memory():
    gc.collect()
    torch.vk.empty_cache()
    reserved0 = torch.vk.memory_reserved()
    # Tensors still alive (earlier tests of this worker) keep their chunks reserved, and a
    # chunk's free space can serve a new allocation: ask for more than all of it.
    free = reserved0 - torch.vk.memory_allocated()
    x = torch.empty(free + (8 << 20), dtype=torch.uint8, device="vk")
    x.fill_(1)
    assert torch.vk.memory_reserved() >= reserved0 + (8 << 20)
    del x
    assert torch.vk.memory_reserved() >= reserved0 + (8 << 20)  # cached, not returned
    torch.vk.empty_cache()
    assert torch.vk.memory_reserved() == reserved0
    stats = torch.vk.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.vk.memory_allocated()
    assert stats["reserved_bytes.all.current"] == torch.vk.memory_reserved()
    assert "Allocated" in torch.vk.memory_summary() or "allocated" in torch.vk.memory_summary()


def test_torch_accelerator_memory_api():
    x = torch.empty(4096, device="vk")
    assert torch.accelerator.memory_allocated() == torch.vk.memory_allocated()
    del x


def test_block_reuse_after_free():
    x = torch.empty(100_000, dtype=torch.uint8, device="vk")
    address = x.data_ptr()
    del x
    y = torch.empty(100_000, dtype=torch.uint8, device="vk")
    assert y.data_ptr() == address  # the cached block is handed out again


def test_out_of_memory_then_keeps_working():
    total = torch.vk.get_device_properties(0).total_memory
    ooms = torch.vk.memory_stats().get("num_ooms", 0)
    with pytest.raises(torch.OutOfMemoryError, match="out of memory"):
        torch.empty(total + (1 << 30), dtype=torch.uint8, device="vk")
    assert torch.vk.memory_stats()["num_ooms"] == ooms + 1
    x = torch.ones(1000, device="vk")
    assert (x + x).sum().item() == 2000.0


def test_tensor_larger_than_max_storage_buffer_range():
    props = torch.vk.get_device_properties(0)
    limit = props.max_storage_buffer_range
    n = limit // 4 + (1 << 20)  # float32 elements: more bytes than one descriptor may cover
    x = torch.empty(n, device="vk")
    x.fill_(0.5)
    y = x + x
    y[-3:].fill_(2.0)
    assert y[-1].item() == 2.0 and y[0].item() == 1.0 and y[n // 2].item() == 1.0
    tail = y[-(1 << 20):].cpu()
    assert tail[:-3].eq(1.0).all() and tail[-3:].eq(2.0).all()
    del x, y
    torch.vk.empty_cache()
