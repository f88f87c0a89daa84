"""Pinned host memory and data loading: Tensor.pin_memory(), non_blocking copies in both
directions (correct once the stream is synchronized), DataLoader(pin_memory=True) feeding a vk
training loop, and torch.vk.host_memory_stats()."""
import copy

import pytest
import torch
import torch.nn as nn
from torch.testing import assert_close
from torch.utils.data import DataLoader, TensorDataset

import torch_vk  # noqa: F401
from helpers import TOLERANCE, make

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")


# ---------------------------------------------------------------- pin_memory

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.uint8, torch.bool], ids=str)
def test_pin_memory_returns_pinned_copy(dtype):
    x = make((37, 5), dtype)
    pinned = x.pin_memory()
    assert pinned.is_pinned() and not x.is_pinned()
    assert pinned.device.type == "cpu" and pinned.dtype == dtype and pinned.shape == x.shape
    assert torch.equal(pinned, x)
    assert pinned.data_ptr() != x.data_ptr()  # a copy: writes to it do not touch x
    # Pinning an already pinned tensor returns it as it is.
    assert pinned.pin_memory().data_ptr() == pinned.data_ptr()
    # Views of pinned memory are pinned too.
    assert pinned[3:].is_pinned() and pinned.t().is_pinned()


def test_pin_memory_of_non_contiguous_and_empty_tensors():
    x = make((6, 8), torch.float32).t()[::2]
    pinned = x.pin_memory()
    assert pinned.is_pinned() and torch.equal(pinned, x)
    empty = torch.empty(0, 3).pin_memory()
    assert empty.shape == (0, 3)


def test_pinned_to_vk_non_blocking():
    x = make((300, 17), torch.float32)
    pinned = x.pin_memory()
    on_vk = pinned.to(VK, non_blocking=True)
    assert on_vk.device.type == "vk"
    # Work queued after the copy on the same stream sees the copied values.
    doubled = on_vk * 2
    assert torch.equal(doubled.cpu(), x * 2)
    assert torch.equal(on_vk.cpu(), x)


def test_vk_to_pinned_non_blocking_after_synchronize():
    x = make((300, 17), torch.float32)
    source = x.to(VK) + 1
    destination = torch.zeros(300, 17).pin_memory()
    destination.copy_(source, non_blocking=True)
    torch.vk.synchronize()
    assert torch.equal(destination, x + 1)


def test_vk_to_pinned_non_blocking_after_event():
    x = make((128, 9), torch.float32)
    source = x.to(VK).neg()
    destination = torch.empty(128, 9).pin_memory()
    destination.copy_(source, non_blocking=True)
    done = torch.vk.Event()
    done.record()
    done.synchronize()
    assert done.query()
    assert torch.equal(destination, -x)


def test_to_cpu_non_blocking_gives_pinned_result():
    # Like CUDA: a non_blocking device-to-host .to() allocates pinned memory.
    x = make((50, 4), torch.float32)
    result = (x.to(VK) * 3).to("cpu", non_blocking=True)
    torch.vk.synchronize()
    assert result.is_pinned()
    assert torch.equal(result, x * 3)


def test_non_blocking_copies_do_not_wait_for_the_device():
    # As on CUDA: both directions only record the copy; the host waits at the synchronization.
    source = torch.arange(4096, dtype=torch.float32).pin_memory()
    device_tensor = torch.empty(4096, device=VK)
    back = torch.empty(4096).pin_memory()
    torch.vk.synchronize()
    waits = torch_vk.stats()["host_waits"]
    device_tensor.copy_(source, non_blocking=True)
    doubled = device_tensor * 2
    back.copy_(doubled, non_blocking=True)
    as_cpu = doubled.to("cpu", non_blocking=True)
    assert torch_vk.stats()["host_waits"] == waits
    torch.vk.synchronize()
    assert torch.equal(back, source * 2)
    assert torch.equal(as_cpu, source * 2)
    assert as_cpu.is_pinned()


def test_overlapping_non_blocking_copies_in_both_directions():
    # Many uploads and downloads in flight at once, each reusing the others' results; one
    # synchronize at the end makes all of them visible.
    sources = [make((64, 33), torch.float32, seed=i).pin_memory() for i in range(6)]
    on_vk = [s.to(VK, non_blocking=True) for s in sources]
    results = [torch.empty(64, 33).pin_memory() for _ in sources]
    for i, (device_tensor, result) in enumerate(zip(on_vk, results)):
        combined = device_tensor * (i + 1) + on_vk[(i + 1) % len(on_vk)]
        result.copy_(combined, non_blocking=True)
    # Overwriting a pinned source right after its upload was queued is the caller's race in
    # CUDA as well; here the sources are left alone until the synchronize.
    round_trips = [torch.empty(64, 33).pin_memory() for _ in sources]
    for device_tensor, back in zip(on_vk, round_trips):
        back.copy_(device_tensor, non_blocking=True)
    torch.vk.synchronize()
    for i, result in enumerate(results):
        expected = sources[i] * (i + 1) + sources[(i + 1) % len(sources)]
        assert torch.equal(result, expected), i
    for back, source in zip(round_trips, sources):
        assert torch.equal(back, source)


@pytest.mark.parametrize("non_blocking", [False, True])
def test_pinned_source_freed_after_upload_is_not_reused_early(non_blocking):
    # The DataLoader pattern: each batch is pinned, uploaded, then dropped while the next one is
    # pinned. Freeing the source must not let a later pin overwrite it before the copy read it.
    uploads = []
    for i in range(6):
        pinned = torch.full((160,), float(i)).pin_memory()
        uploads.append(pinned.to(VK, non_blocking=non_blocking))
        del pinned
    assert [u.cpu().unique().tolist() for u in uploads] == [[float(i)] for i in range(6)]


def test_non_blocking_copy_into_strided_pinned_destination():
    x = make((20, 30), torch.float32)
    destination = torch.zeros(30, 20).pin_memory().t()  # non-contiguous pinned view
    destination.copy_(x.to(VK), non_blocking=True)
    torch.vk.synchronize()
    assert torch.equal(destination, x)


def test_non_blocking_upload_with_dtype_conversion():
    x = make((40, 6), torch.float32)
    on_vk = x.pin_memory().to(VK, dtype=torch.float16, non_blocking=True)
    assert on_vk.dtype == torch.float16
    assert torch.equal(on_vk.cpu(), x.half())


# ---------------------------------------------------------------- host_memory_stats

def test_host_memory_stats_move_when_pinning():
    torch.vk.synchronize()
    before = torch.vk.host_memory_stats()
    assert before.keys() >= {"allocated_bytes", "reserved_bytes"}
    size = 1 << 20
    pinned = torch.empty(size, dtype=torch.uint8).pin_memory()
    during = torch.vk.host_memory_stats()
    assert during["allocated_bytes"] >= before["allocated_bytes"] + size
    assert during["reserved_bytes"] >= during["allocated_bytes"]
    del pinned
    torch.vk.synchronize()
    after = torch.vk.host_memory_stats()
    assert after["allocated_bytes"] <= during["allocated_bytes"] - size
    assert after["reserved_bytes"] >= after["allocated_bytes"]


# ---------------------------------------------------------------- DataLoader

def dataset(samples=96, seed=0):
    g = torch.Generator().manual_seed(seed)
    inputs = torch.randn(samples, 10, generator=g)
    targets = inputs[:, :3] * 0.5 - inputs[:, 3:6] + 0.1 * torch.randn(samples, 3, generator=g)
    return TensorDataset(inputs, targets)


@pytest.mark.parametrize("num_workers", [0, 1])
def test_dataloader_pin_memory_batches_are_pinned(num_workers):
    data = dataset()
    loader = DataLoader(data, batch_size=16, pin_memory=True, num_workers=num_workers)
    seen = 0
    for inputs, targets in loader:
        assert inputs.is_pinned() and targets.is_pinned()
        assert torch.equal(inputs, data.tensors[0][seen:seen + len(inputs)])
        seen += len(inputs)
    assert seen == len(data)


def train_with_loader(model, device, loader, epochs=2):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(epochs):
        for inputs, targets in loader:
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
    return [loss.item() for loss in losses], model


def test_training_loop_with_pinned_loader_matches_cpu():
    torch.manual_seed(0)
    reference = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 3))
    data = dataset()
    # shuffle uses the loader's own CPU generator: both runs see the same order.
    cpu_loader = DataLoader(data, batch_size=16, shuffle=True,
                            generator=torch.Generator().manual_seed(4))
    vk_loader = DataLoader(data, batch_size=16, shuffle=True, pin_memory=True,
                           generator=torch.Generator().manual_seed(4))
    cpu_losses, cpu_model = train_with_loader(copy.deepcopy(reference), "cpu", cpu_loader)
    vk_losses, vk_model = train_with_loader(copy.deepcopy(reference).to(VK), VK, vk_loader)
    assert_close(vk_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for vk_param, cpu_param in zip(vk_model.parameters(), cpu_model.parameters()):
        assert vk_param.device.type == "vk"
        assert_close(vk_param.detach().cpu(), cpu_param.detach(), rtol=1e-4, atol=1e-5)
    assert cpu_losses[-1] < cpu_losses[0]
