"""Timing primitives shared by ``python -m torch_vk bench`` and the scripts in ``benchmarks/``.

Every measurement synchronizes the device around the timed calls, so a time always covers the
device's execution, not only the host's recording of it.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import torch

__all__ = ["sync", "timeit", "time_per_call"]


def sync(device: torch.device | str) -> None:
    """Returns once every kernel queued on ``device`` has finished (nothing to wait for on the
    CPU)."""
    kind = torch.device(device).type
    if kind == "vk":
        torch.vk.synchronize()
    elif kind == "cuda":
        torch.cuda.synchronize()


def timeit(fn: Callable[[], Any], device: torch.device | str, repeat: int,
           warmup: int = 2) -> float:
    """Median seconds of one call of ``fn``: ``warmup`` untimed calls, then ``repeat`` calls,
    each timed alone with a synchronization of ``device`` after it (for an even ``repeat``
    the upper of the two middle samples)."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def time_per_call(fn: Callable[[], Any], device: torch.device | str, max_seconds: float,
                  min_sample_s: float = 0.005, samples: int = 5, warmup: int = 1) -> float:
    """Median seconds per call of ``fn`` on ``device``, for calls short or long.

    ``warmup`` untimed calls (pipeline creation, library heuristics, first allocations), one
    probe call that sizes the samples, then up to ``samples`` samples of ``inner`` back-to-back
    calls (enough to last ``min_sample_s``, at most 1000) with a synchronization on both ends,
    all within ``max_seconds`` counted from the start. At least one sample is always taken;
    when a single call does not fit in what is left of ``max_seconds``, the probe's time is
    returned."""
    start = time.perf_counter()
    for _ in range(warmup):
        fn()
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    probe = max(time.perf_counter() - t0, 1e-7)
    if time.perf_counter() - start + probe > max_seconds:
        return probe
    inner = max(1, min(1000, math.ceil(min_sample_s / probe)))
    left = max_seconds - (time.perf_counter() - start)
    samples = max(1, min(samples, int(left / (probe * inner)) if left > 0 else 1))
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync(device)
        times.append((time.perf_counter() - t0) / inner)
    times.sort()
    return times[len(times) // 2]
