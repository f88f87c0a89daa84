"""L6: torch.distributed for ``"vk"`` tensors — the c10d backend ``"vkgloo"``.

Registered when torch-vk loads (torch's backend autoload, or ``import torch_vk``) for the
devices ``vk`` and ``cpu``, so every usual form works::

    dist.init_process_group()                          # backend chosen from the accelerator
    dist.init_process_group("vkgloo")                  # one instance serves vk and cpu tensors
    dist.init_process_group(device_id=torch.device("vk", local_rank))
    dist.init_process_group("cpu:gloo,vk:vkgloo")
    init_device_mesh("vk", (world_size,))

The backend (C++, ``torch_vk/csrc/distributed/``) holds a Gloo backend: CPU tensors go to Gloo
unchanged; vk tensors are handed to Gloo in place where the device maps its memory (unified
memory), otherwise staged through (pinned) host buffers around the Gloo call, with the
asynchronous Work / stream semantics of NCCL (see ``process_group_vk.h``). docs/DISTRIBUTED.md
describes the supported forms, launch recipes and known gaps.

Registration is cheap (``torch.distributed`` is already imported by ``import torch``); the
backend's Python class is created on the first process group.
"""

from __future__ import annotations

import datetime
from typing import Any

import torch

__all__ = ["BACKEND_NAME", "register", "is_registered", "ProcessGroupVK"]

BACKEND_NAME = "vkgloo"

_registered = False


def is_registered() -> bool:
    return _registered


def register() -> None:
    """Registers backend ``"vkgloo"`` for the devices vk and cpu (idempotent). Does nothing
    when torch was built without distributed support."""
    global _registered
    if _registered:
        return
    import torch.distributed as dist

    if not dist.is_available():
        return
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True,
                                      devices=["vk", "cpu"])
    from torch_vk.distributed import _compat

    _compat.install()
    _registered = True


def _native() -> Any:
    from torch_vk import _require_native

    native = _require_native()
    native._distributed_init()
    return native


def __getattr__(name: str) -> Any:
    if name == "ProcessGroupVK":
        return _native().ProcessGroupVK
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _create_backend(dist_options: Any, backend_options: Any) -> Any:
    """Factory that torch.distributed calls (extended API) for each process group using
    "vkgloo": a Gloo backend on the same store, wrapped by ProcessGroupVK. ``pg_options`` of
    init_process_group / new_group may be a ``ProcessGroupGloo._Options`` (devices, threads)."""
    from torch._C._distributed_c10d import ProcessGroupGloo

    native = _native()
    store = dist_options.store
    rank, size = dist_options.group_rank, dist_options.group_size
    timeout = dist_options.timeout
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    if backend_options is None:
        gloo = ProcessGroupGloo(store, rank, size, timeout)
    elif isinstance(backend_options, ProcessGroupGloo._Options):
        backend_options._timeout = timeout
        gloo = ProcessGroupGloo(store, rank, size, backend_options)
    else:
        raise TypeError(f"vkgloo: pg_options must be a ProcessGroupGloo._Options, got "
                        f"{type(backend_options).__name__}")
    # The default group comes with no list (its ranks are the global ranks). Gloo's split then
    # falls back to a process-wide table that exists only for the first Gloo group of the
    # process, so a split after destroy_process_group() + init_process_group() would index
    # an empty list (a crash in torch 2.13's ProcessGroupGloo::split): always pass the ranks.
    gloo.options.global_ranks_in_group = (list(dist_options.global_ranks_in_group)
                                          or list(range(size)))
    gloo.options.group_name = dist_options.group_id
    # What torch does for its own Gloo groups (sequence numbers for desync debugging).
    gloo._set_sequence_number_for_group()
    return native.ProcessGroupVK(gloo)
