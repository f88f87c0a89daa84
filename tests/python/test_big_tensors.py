"""Tensors larger than one Vulkan allocation (maxMemoryAllocationSize: 2 GiB on lavapipe) and
than maxStorageBufferRange: on devices with sparse binding, a segment past one allocation is a
sparse buffer over several allocations with one device address (src/runtime/raw_buffer.h), so
a 3 GiB tensor allocates, fills, copies both ways, runs element-wise, reduction and matmul
kernels and saves / loads like any other; without sparse binding it raises
torch.OutOfMemoryError and the device keeps working. Past the heap: OutOfMemoryError.

scripts/test.sh runs this file a second time under Mesa 25's lavapipe (sparse binding;
scripts/mesa25.sh), where the 3 GiB path runs; Debian 12's lavapipe (Mesa 22.3) has no sparse
binding and takes the error path.
"""
import os

import pytest
import torch

import torch_vk  # noqa: F401

pytestmark = pytest.mark.usefixtures("strict_native")

GiB = 1 << 30


def _props():
    return torch.vk.get_device_properties(0)


def test_past_the_heap_raises_out_of_memory_and_the_device_keeps_working():
    props = _props()
    too_many = (props.total_memory + GiB) // 4
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(too_many, device="vk")
    assert torch.ones(4, device="vk").sum().item() == 4


def test_three_gib_tensor():
    props = _props()
    n = 3 * GiB // 4  # float32 elements
    fits = (props.sparse_binding and 3 * GiB <= props.max_buffer_size and
            3 * GiB < props.total_memory)
    if os.environ.get("TORCH_VK_EXPECT_SPARSE_BINDING") == "1":  # scripts/test.sh, Mesa 25
        assert fits, f"expected sparse binding and a heap above 3 GiB: {props}"
    if not fits:
        assert 3 * GiB > props.max_memory_allocation_size
        with pytest.raises(torch.OutOfMemoryError, match="vk"):
            torch.empty(n, device="vk")
        assert torch.ones(4, device="vk").sum().item() == 4
        return
    rows, cols = n // 1024, 1024
    g = torch.Generator().manual_seed(0)
    host = torch.randn(rows, cols, generator=g)
    dev = host.to("vk")
    assert dev.device.type == "vk" and dev.nbytes == 3 * GiB
    # Rows on both sides of each 2 GiB allocation boundary, and the last one.
    boundary = (2 * GiB) // (4 * cols)
    for r in (0, boundary - 1, boundary, rows - 1):
        assert torch.equal(dev[r].cpu(), host[r]), r
    back = dev.cpu()
    assert torch.equal(back, host)
    del back
    # Element-wise (in place: one 3 GiB tensor on the device), reduction, matmul.
    dev.mul_(2.0).add_(1.0)
    host.mul_(2.0).add_(1.0)
    for r in (0, boundary, rows - 1):
        assert torch.equal(dev[r].cpu(), host[r]), r
    torch.testing.assert_close(dev.sum(dtype=torch.float64).cpu(), host.sum(dtype=torch.float64),
                               rtol=1e-9, atol=1e-3)
    torch.testing.assert_close(dev.amax(dim=0).cpu(), host.amax(dim=0))
    v = torch.randn(cols, generator=g)
    torch.testing.assert_close((dev @ v.to("vk")).cpu(), host @ v, rtol=1e-4, atol=1e-3)
    # A filled 3 GiB tensor: fill_ and zero_ reach the last element.
    dev.fill_(0.25)
    assert dev[-1, -1].item() == 0.25 and dev[boundary, 0].item() == 0.25
    del dev
    torch.vk.empty_cache()


def test_three_gib_tensor_save_and_load(tmp_path):
    props = _props()
    n = 3 * GiB
    if not (props.sparse_binding and 3 * GiB <= props.max_buffer_size and
            3 * GiB < props.total_memory):
        with pytest.raises(torch.OutOfMemoryError):
            torch.empty(n, dtype=torch.uint8, device="vk")
        return
    dev = torch.empty(n, dtype=torch.uint8, device="vk")
    dev.fill_(7)
    dev[-16:] = torch.arange(16, dtype=torch.uint8, device="vk")
    path = tmp_path / "big.pt"
    torch.save(dev, path)
    del dev
    loaded = torch.load(path, map_location="vk")
    assert loaded.device.type == "vk" and loaded.numel() == n
    assert loaded[-16:].cpu().tolist() == list(range(16))
    assert loaded[: 1 << 20].sum().item() == 7 << 20
    assert loaded[2 * GiB - 8: 2 * GiB + 8].cpu().tolist() == [7] * 16
