"""``torch.vk.memory``: allocator history and snapshots in the format of ``torch.cuda.memory``.

A snapshot (``_snapshot()``) is the dictionary ``torch.cuda.memory._snapshot()`` returns:
``segments`` (every reserved segment with its blocks, each block ``active_allocated``,
``active_pending_free`` or ``inactive`` and, while history is recorded, the Python stack of
its allocation), ``device_traces`` (one list per vk device of the allocator's actions:
``alloc``, ``free_requested``, ``free_completed``, ``segment_alloc``, ``segment_free``,
``oom``, ``snapshot``) and ``allocator_settings``. PyTorch's ``torch.cuda._memory_viz``
(``trace_plot``, ``segment_plot``, ``segments``, ``memory``) and https://pytorch.org/memory_viz
read it unchanged::

    torch.vk.memory._record_memory_history(max_entries=100000)
    train_step()
    torch.vk.memory._dump_snapshot("snapshot.pickle")
    torch.vk.memory._record_memory_history(enabled=None)

The statistics functions (``memory_allocated``, ``memory_stats``, ``memory_summary``, ...)
are those of ``torch.vk``, re-exported here as ``torch.cuda.memory`` re-exports its own.
"""
from __future__ import annotations

import pickle
import sys
from typing import Any

from torch_vk import vk as _vk
from torch_vk.vk import (  # noqa: F401  (re-exported, as torch.cuda.memory does)
    empty_cache, max_memory_allocated, max_memory_reserved, mem_get_info, memory_allocated,
    memory_reserved, memory_stats, reset_accumulated_memory_stats, reset_max_memory_allocated,
    reset_peak_memory_stats)

__all__ = [
    "memory_summary", "memory_stats", "memory_allocated", "memory_reserved",
    "max_memory_allocated", "max_memory_reserved", "reset_peak_memory_stats",
    "reset_accumulated_memory_stats", "reset_max_memory_allocated", "empty_cache",
    "mem_get_info",
]


def _record_memory_history(enabled: str | None = "all", context: str | None = "all",
                           stacks: str = "all", max_entries: int = sys.maxsize,
                           device: Any = None, clear_history: bool = False) -> None:
    """Starts (or, with ``enabled=None``, stops) recording the allocator's history.

    As ``torch.cuda.memory._record_memory_history``: ``enabled`` ``"state"`` keeps the stack
    of each live allocation, ``"all"`` also records every action in the trace, ``None`` stops
    both; ``context`` ``None`` records no stacks, ``"state"`` / ``"alloc"`` the stacks of
    allocations, ``"all"`` those of frees too; ``stacks`` ``"python"`` gathers Python frames,
    ``"all"`` C++ frames as well; the trace keeps the newest ``max_entries`` actions;
    ``clear_history`` drops what was recorded. History covers every vk device (``device`` is
    accepted for compatibility, as CUDA's does in its current form).
    """
    del device
    for name, value, allowed in (("enabled", enabled, (None, "state", "all")),
                                 ("context", context, (None, "state", "alloc", "all")),
                                 ("stacks", stacks, ("python", "all"))):
        if value not in allowed:
            raise ValueError(f"_record_memory_history: {name} must be one of {allowed}, "
                             f"got {value!r}")
    if max_entries <= 0:
        raise ValueError("max_entries must be positive")
    native = _vk._require_native()
    # The native side stores a size_t: sys.maxsize (the default) means "keep everything".
    native._record_memory_history(enabled, context, stacks,
                                  0 if max_entries >= sys.maxsize else int(max_entries),
                                  bool(clear_history))


def _snapshot(device: Any = None) -> dict[str, Any]:
    """The allocator's state and recorded trace (see the module docstring)."""
    del device  # segments of every device, each tagged with its "device", as on CUDA
    native = _vk._require_native()
    if _vk.device_count() == 0:
        return {"segments": [], "device_traces": [], "allocator_settings": {}}
    return native._memory_snapshot()


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Pickles ``_snapshot()`` to ``filename`` (readable by pytorch.org/memory_viz)."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def _format_bytes(n: int) -> str:
    for unit in ("B  ", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 * 10 or unit == "TiB":
            return f"{n:6d} {unit}"
        n //= 1024
    return f"{n:6d} TiB"


def _format_count(n: int) -> str:
    for unit in (" ", "K", "M"):
        if abs(n) < 1000 * 10 or unit == "M":
            return f"{n:7d}{unit} "
        n //= 1000
    return f"{n:7d}M "


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A table of the allocator's statistics, laid out like ``torch.cuda.memory_summary``.

    Its "Allocated memory" and "Reserved memory" current values are the sums of the
    ``active_allocated`` block sizes and segment sizes of ``_snapshot()`` for that device.
    """
    if _vk._C is None or _vk.device_count() == 0:
        return "torch-vk: no vk device"
    index = _vk._get_device_index(device, optional=True)
    stats = memory_stats(index)
    rows = [
        ("allocated_bytes", "Allocated memory", _format_bytes),
        ("active_bytes", "Active memory", _format_bytes),
        ("requested_bytes", "Requested memory", _format_bytes),
        ("reserved_bytes", "Reserved memory", _format_bytes),
        ("inactive_split_bytes", "Non-releasable memory", _format_bytes),
        ("allocation", "Allocations", _format_count),
        ("active", "Active allocs", _format_count),
        ("segment", "Reserved segments", _format_count),
    ]
    width = 75
    line = "|" + "=" * width + "|"
    thin = "|" + "-" * width + "|"
    out = [line,
           "|" + f" PyTorch vk memory management summary, device ID {index:<d}".center(width) + "|",
           thin,
           "|" + f"  vk OOMs: {stats.get('num_ooms', 0):<12d}|  cache-release retries: "
                 f"{stats.get('num_alloc_retries', 0):<d}".ljust(width) + "|",
           line,
           "|" + "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "
           .ljust(width) + "|",
           thin]
    pools = [("all", "")] if abbreviated else [
        ("all", ""), ("large_pool", "      from large pool"), ("small_pool", "      from small pool")]
    for key, title, fmt in rows:
        for pool, pool_title in pools:
            name = title if pool == "all" else pool_title
            values = [stats.get(f"{key}.{pool}.{field}", 0)
                      for field in ("current", "peak", "allocated", "freed")]
            cells = " | ".join(fmt(v) for v in values)
            out.append("|" + f" {name:<22}| {cells} ".ljust(width) + "|")
        out.append(thin)
    heap_free, heap_total = mem_get_info(index)
    out.append("|" + f" Device heap: {heap_total >> 20} MiB, {heap_free >> 20} MiB free"
               .ljust(width) + "|")
    out.append(line)
    return "\n".join(out) + "\n"
