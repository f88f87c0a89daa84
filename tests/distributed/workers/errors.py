"""Errors a user can cause end in a Python exception on every rank that made the call, never a
hang: a Work.wait(timeout) that expires (and the collective still completing afterwards),
tensors whose shapes differ between ranks, a collective that some ranks never call (the
group's timeout), bad arguments (the same exception type as for CPU tensors), and a peer that
dies. Each scenario uses its own group (a timed-out Gloo group is unusable afterwards)."""

from __future__ import annotations

import datetime
import os
import time
import warnings

import torch
import torch.distributed as dist

from common import RANK, WORLD, Checks, init, make_input, same

checks = Checks()
warnings.filterwarnings("ignore", category=FutureWarning)
SHORT = datetime.timedelta(seconds=3)


def raises(fn, within: float | None = None):
    start = time.monotonic()
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        if within is not None:
            assert time.monotonic() - start < within, f"raised only after {time.monotonic() - start:.1f}s"
        return exc
    raise AssertionError("no exception")


def wait_timeout_then_complete():
    group = dist.new_group(backend="vkgloo")
    x = (torch.arange(4.0) + RANK).to("vk")  # exact sums in any order
    ref = sum(torch.arange(4.0) + r for r in range(WORLD))
    if RANK == 0:
        w = dist.all_reduce(x, group=group, async_op=True)
        exc = raises(lambda: w.wait(timeout=datetime.timedelta(milliseconds=300)))
        assert isinstance(exc, dist.DistBackendError), repr(exc)
        dist.barrier()  # the other ranks join the all_reduce only now
        w.wait()
    else:
        dist.barrier()
        dist.all_reduce(x, group=group)
    same(x, ref, "all_reduce after a wait timeout")


def mismatched_shapes(async_op):
    """Gloo alone lets the ranks with the smaller tensor finish with a plausible result; the
    backend's signature check makes every rank raise."""
    group = dist.new_group(backend="vkgloo", timeout=SHORT)
    x = torch.ones(3 + RANK, device="vk")

    def call():
        w = dist.all_reduce(x, group=group, async_op=async_op)
        if async_op:
            w.wait()
    exc = raises(call, within=30)
    assert isinstance(exc, (dist.DistBackendError, RuntimeError)), repr(exc)


def mismatched_collectives():
    """Rank 0 all-gathers while the others broadcast: every rank raises."""
    group = dist.new_group(backend="vkgloo", timeout=SHORT)
    x = torch.ones(4, device="vk")

    def call():
        if RANK == 0:
            dist.all_gather_into_tensor(torch.zeros(4 * WORLD, device="vk"), x, group=group)
        else:
            dist.broadcast(x, src=0, group=group)
    exc = raises(call, within=30)
    assert "different collectives" in str(exc) or isinstance(exc, RuntimeError), repr(exc)


def mismatched_sizes_that_abort_gloo():
    """Sizes that make Gloo's receiving side abort the process (a receive buffer smaller than
    what arrives): the agreement check runs before the data moves, so every rank raises."""
    for kind in ("broadcast", "scatter", "all_to_all_single"):
        group = dist.new_group(backend="vkgloo", timeout=SHORT)
        n = 4 + (RANK == 1)

        def call():
            if kind == "broadcast":
                dist.broadcast(torch.ones(n, device="vk"), src=0, group=group)
            elif kind == "scatter":
                ins = [torch.ones(4, device="vk") for _ in range(WORLD)] if RANK == 0 else None
                dist.scatter(torch.zeros(n, device="vk"), ins, src=0, group=group)
            else:
                dist.all_to_all_single(torch.zeros(WORLD * n, device="vk"),
                                       torch.ones(WORLD * 4, device="vk"), group=group)
        exc = raises(call, within=30)
        assert "do not match" in str(exc), f"{kind}: {exc!r}"


def missing_peer():
    group = dist.new_group(backend="vkgloo", timeout=SHORT)
    if RANK == 0:
        raises(lambda: dist.all_reduce(torch.ones(2, device="vk"), group=group), within=30)
    dist.barrier()


def bad_arguments():
    for dev in ("cpu", "vk"):
        x = torch.ones(3, device=dev)
        wrong = torch.zeros(3 * WORLD + 1, device=dev)
        exc = raises(lambda: dist.all_gather_into_tensor(wrong, x))
        if dev == "cpu":
            cpu_type = type(exc)
        else:
            assert type(exc) is cpu_type, f"cpu raised {cpu_type}, vk {exc!r}"
    # One collective, two devices.
    exc = raises(lambda: dist.all_gather_into_tensor(torch.zeros(3 * WORLD), torch.ones(3, device="vk")))
    assert "one device" in str(exc), repr(exc)
    # The group still works.
    y = torch.full((2,), float(RANK + 1), device="vk")
    dist.all_reduce(y)
    same(y, torch.full((2,), float(sum(range(1, WORLD + 1)))), "after bad arguments")


def dead_peer():
    group = dist.new_group(backend="vkgloo", timeout=datetime.timedelta(seconds=20))
    dist.barrier(group=group)
    if RANK == WORLD - 1:
        os._exit(0)  # dies without a word
    exc = raises(lambda: dist.all_reduce(torch.ones(4, device="vk"), group=group), within=25)
    print(f"[rank {RANK}] dead peer: {type(exc).__name__}: {str(exc)[:200]}", flush=True)


def main() -> None:
    init("vkgloo")
    checks.run("Work.wait(timeout) expires, the collective completes later", wait_timeout_then_complete)
    checks.run("bad arguments", bad_arguments)
    checks.run("mismatched shapes (sync)", mismatched_shapes, False)
    checks.run("mismatched shapes (async)", mismatched_shapes, True)
    checks.run("mismatched collectives", mismatched_collectives)
    checks.run("mismatched sizes that would abort Gloo", mismatched_sizes_that_abort_gloo)
    checks.run("a rank that never calls", missing_peer)
    checks.run("dead peer", dead_peer)
    checks.finish()


if __name__ == "__main__":
    main()
