"""Execution is asynchronous: ops only record work; the host waits only when it reads
device memory."""
import pytest
import torch

import torch_vk

pytestmark = pytest.mark.usefixtures("strict_native")


def test_long_chain_has_no_host_wait_until_cpu():
    x = torch.rand(256, 256).to("vk")
    y = torch.rand(256, 256).to("vk")
    torch.vk.synchronize()
    torch_vk.reset_stats()
    z = x
    for i in range(200):
        z = torch.sigmoid(z * y + x) - 0.25
        z = torch.where(z > 0, z, -z)
    s = z.sum()
    stats = torch_vk.stats()
    assert stats["host_waits"] == 0, stats
    assert stats["dispatches"] >= 5 * 200
    assert stats["submits"] >= 1  # batches were submitted without waiting
    value = s.item()
    assert torch_vk.stats()["host_waits"] >= 1

    ref_x, ref_y = x.cpu(), y.cpu()
    ref = ref_x
    for i in range(200):
        ref = torch.sigmoid(ref * ref_y + ref_x) - 0.25
        ref = torch.where(ref > 0, ref, -ref)
    assert value == pytest.approx(ref.sum().item(), rel=1e-4)


def test_upload_does_not_wait():
    torch.vk.synchronize()
    torch_vk.reset_stats()
    for _ in range(20):
        torch.ones(1000).to("vk")
    assert torch_vk.stats()["host_waits"] == 0


def test_freed_memory_reused_in_stream_order():
    # A block freed while queued work still reads it may be handed out again at once: stream
    # order makes the later writes happen after the earlier reads.
    torch.vk.synchronize()
    a = torch.full((100_000,), 2.0, device="vk")
    b = a * 3
    del a
    c = torch.full((100_000,), 5.0, device="vk")  # likely reuses a's block
    total = b + c
    assert total.cpu().eq(11.0).all()


@pytest.fixture
def barrier_mode():
    saved = torch_vk._C._barrier_mode()
    yield
    torch_vk._C._set_barrier_mode(saved)


def _two_products_and_their_sum(a, b):
    torch.vk.synchronize()  # the next command opens a command buffer
    torch_vk.reset_stats()
    x = a * 2
    y = b * 3  # touches none of x's memory: no barrier before it
    z = x + y  # reads what both wrote: a barrier
    stats = torch_vk.stats()
    return z, stats["barriers"], stats["barriers_skipped"]


def test_barriers_only_between_dependent_commands(barrier_mode):
    # Hazard tracking (runtime/stream.h): a memory barrier only before a command that reads or
    # overwrites memory a command since the last barrier wrote. The counts are the same in
    # every mode that reorders nothing of what they count ("tracked" and CI's "reverse").
    a, b = torch.randn(300), torch.randn(300)
    av, bv = a.to("vk"), b.to("vk")
    if torch_vk._C._barrier_mode() == "all":
        torch_vk._C._set_barrier_mode("tracked")
    z, barriers, skipped = _two_products_and_their_sum(av, bv)
    assert (barriers, skipped) == (1, 1)
    torch.testing.assert_close(z.cpu(), a * 2 + b * 3, rtol=0, atol=0)

    torch_vk._C._set_barrier_mode("all")  # TORCH_VK_BARRIERS=all: between every two commands
    z, barriers, skipped = _two_products_and_their_sum(av, bv)
    assert (barriers, skipped) == (2, 0)
    torch.testing.assert_close(z.cpu(), a * 2 + b * 3, rtol=0, atol=0)

    torch_vk._C._set_barrier_mode("reverse")  # the test mode: the two products run swapped
    z, barriers, skipped = _two_products_and_their_sum(av, bv)
    assert (barriers, skipped) == (1, 1)
    torch.testing.assert_close(z.cpu(), a * 2 + b * 3, rtol=0, atol=0)
    with pytest.raises(ValueError, match="barrier mode"):
        torch_vk._C._set_barrier_mode("sometimes")


def test_in_place_chain_on_views_keeps_its_order(barrier_mode):
    # Overlapping views of one storage: each op must see the previous one's writes, also when
    # they touch different elements of the same rows (byte spans overlap).
    base = torch.arange(64, dtype=torch.float32)
    v = base.to("vk")
    ref = base.clone()
    for mode in ("tracked", "reverse"):
        torch_vk._C._set_barrier_mode(mode)
        v2, r2 = v.clone(), ref.clone()
        for t in (v2, r2):
            t[::2] += 1
            t[1::2] *= t[::2]
            t[:32] -= t[32:]
            t.view(8, 8)[1:] += t.view(8, 8)[0]
            t.view(8, 8).t()[:, 4:] *= t.view(8, 8).t()[:, :4]
        torch.testing.assert_close(v2.cpu(), r2, rtol=0, atol=0)
