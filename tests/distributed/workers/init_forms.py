"""Every supported form of init_process_group / DeviceMesh, one after another in one job (each
on a fresh port, destroyed before the next): collectives on vk and CPU tensors and object
collectives must work in each, and so must new_group / split_group / set_timeout.

Arguments: the forms to run (default: all). "cpu_only" uses CPU tensors only (what CPU code
written without torch-vk in mind does); with TORCH_VK_VISIBLE_DEVICES="" it runs where the vk
device module is registered but no device exists."""

from __future__ import annotations

import datetime
import os
import sys
import warnings

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

from common import LOCAL_RANK, PORTS, RANK, TIMEOUT, WORLD, Checks, same

checks = Checks()
warnings.filterwarnings("ignore", category=FutureWarning)
_port = iter(PORTS)


def fresh_port() -> None:
    os.environ["MASTER_PORT"] = str(next(_port))


def expect_sum(t: torch.Tensor, what: str, group=None) -> None:
    n = dist.get_world_size(group)
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(WORLD))
    x = t.clone().fill_(RANK + 1)
    dist.all_reduce(x, group=group)
    same(x, torch.full(t.shape, float(sum(r + 1 for r in ranks)), dtype=t.dtype), what)
    assert n == len(ranks)


def exercise(device: str, what: str) -> None:
    expect_sum(torch.zeros(3, device=device), f"{what}: all_reduce on {device}")
    expect_sum(torch.zeros(2), f"{what}: all_reduce on cpu")
    objs = [None] * WORLD
    dist.all_gather_object(objs, RANK)
    assert objs == list(range(WORLD)), objs
    dist.barrier()


def form_no_backend() -> None:
    fresh_port()
    dist.init_process_group(timeout=TIMEOUT)
    assert dist.get_backend() == "vkgloo", dist.get_backend()
    exercise("vk", "init_process_group()")
    dist.destroy_process_group()


def form_named() -> None:
    fresh_port()
    dist.init_process_group("vkgloo", timeout=TIMEOUT)
    exercise("vk", "backend='vkgloo'")
    # Timeouts can be changed on the backend (TorchTitan does this).
    dist.group.WORLD._get_backend(torch.device("vk")).set_timeout(datetime.timedelta(seconds=90))
    exercise("vk", "after set_timeout")
    dist.destroy_process_group()


def form_mixed_string() -> None:
    fresh_port()
    dist.init_process_group("cpu:gloo,vk:vkgloo", timeout=TIMEOUT)
    pg = dist.group.WORLD
    assert pg._get_backend(torch.device("cpu")).name() == "gloo"
    assert pg._get_backend(torch.device("vk")).name() == "vkgloo"
    exercise("vk", "cpu:gloo,vk:vkgloo")
    dist.destroy_process_group()


def form_device_id() -> None:
    """device_id=vk:LOCAL_RANK (needs one visible device per local rank: on one GPU
    TORCH_VK_VISIBLE_DEVICES=0,0,... gives them), then sub-groups split from the bound group."""
    fresh_port()
    device = torch.device("vk", LOCAL_RANK)
    torch.vk.set_device(device)
    dist.init_process_group(device_id=device, timeout=TIMEOUT)
    assert dist.get_backend() == "vkgloo"
    assert dist.group.WORLD.bound_device_id == device
    exercise(f"vk:{LOCAL_RANK}", "device_id")
    halves = dist.split_group(split_ranks=[[r for r in range(WORLD) if r % 2 == k] for k in (0, 1)])
    expect_sum(torch.zeros(4, device=device), "split_group", group=halves)
    # new_group with a bound device (ranks outside get a no-op split call). After it, no
    # split_group: torch names split groups after the number of groups each rank knows, which
    # differs between members and non-members of a new_group (the ranks would wait on
    # different store keys; the same with NCCL).
    pair = [0, 1]
    sub = dist.new_group(pair)
    if RANK in pair:
        expect_sum(torch.zeros(2, device=device), "new_group of a bound group", group=sub)
    dist.barrier()
    dist.destroy_process_group()


def form_new_groups() -> None:
    """new_group / split_group on an unbound default group, odd sizes included."""
    fresh_port()
    dist.init_process_group("vkgloo", timeout=TIMEOUT)
    pair = [0, 1]
    sub = dist.new_group(pair)
    if RANK in pair:
        expect_sum(torch.zeros(3, device="vk"), "new_group", group=sub)
        expect_sum(torch.zeros(3), "new_group cpu", group=sub)
    evens = dist.new_group([r for r in range(WORLD) if r % 2 == 0], backend="vkgloo")
    if RANK % 2 == 0:
        expect_sum(torch.zeros(5, device="vk"), "new_group evens", group=evens)
    dist.destroy_process_group(sub) if RANK in pair else None
    exercise("vk", "after destroying a sub-group")
    dist.destroy_process_group()


def form_device_mesh() -> None:
    """init_device_mesh("vk", ...) with no process group yet: DeviceMesh calls
    init_process_group() and torch.vk.set_device(LOCAL_RANK)."""
    fresh_port()
    mesh = init_device_mesh("vk", (WORLD,))
    assert dist.get_backend() == "vkgloo"
    expect_sum(torch.zeros(3, device="vk"), "mesh group", group=mesh.get_group())
    exercise("vk", "init_device_mesh")
    if WORLD % 2 == 0:
        mesh2 = init_device_mesh("vk", (2, WORLD // 2), mesh_dim_names=("dp", "tp"))
        expect_sum(torch.zeros(2, device="vk"), "2-D mesh dp", group=mesh2["dp"].get_group())
        expect_sum(torch.zeros(2, device="vk"), "2-D mesh tp", group=mesh2["tp"].get_group())
    dist.destroy_process_group()


def form_cpu_only() -> None:
    """Code that knows nothing of vk: init_process_group() and CPU tensors."""
    fresh_port()
    dist.init_process_group(timeout=TIMEOUT)
    expect_sum(torch.zeros(4), "cpu-only all_reduce")
    out = [torch.zeros(2) for _ in range(WORLD)]
    dist.all_gather(out, torch.full((2,), float(RANK)))
    same(out, [torch.full((2,), float(r)) for r in range(WORLD)], "cpu-only all_gather")
    objs = [None] * WORLD
    dist.all_gather_object(objs, {"rank": RANK})
    assert [o["rank"] for o in objs] == list(range(WORLD))
    sub = dist.new_group([0, 1])
    if RANK in (0, 1):
        expect_sum(torch.zeros(1), "cpu-only new_group", group=sub)
    dist.barrier()
    dist.destroy_process_group()


FORMS = {"no_backend": form_no_backend, "named": form_named, "mixed_string": form_mixed_string,
         "device_id": form_device_id, "new_groups": form_new_groups,
         "device_mesh": form_device_mesh, "cpu_only": form_cpu_only}


def main() -> None:
    names = sys.argv[1:] or list(FORMS)
    for name in names:
        checks.run(name, FORMS[name])
        if dist.is_initialized():  # a failed form: leave the next one a clean slate
            dist.destroy_process_group()
    checks.finish()


if __name__ == "__main__":
    main()
