"""A version-guarded patch of ``torch.distributed`` for backends registered out of tree.

``init_process_group()`` with no backend (and DeviceMesh, which calls it that way) resolves the
backend "undefined" to ``{accelerator: default_device_backend_map[accelerator]}`` only: on a
machine where vk is the accelerator, the group then has no backend for CPU tensors (every CPU
collective, object collectives included, fails with "No backend type associated with device
type cpu"), and its default backend type is GLOO, which was never registered ("Could not find
the default backend type"). So installing torch-vk would break CPU-only code that calls
``init_process_group()``.

The patch: when the backend is "undefined", the accelerator is vk and vk maps to "vkgloo",
the group is created as ``backend="vkgloo"`` (one instance serving vk and cpu tensors). Any
other case goes to torch untouched. It applies only where torch's own resolution of
"undefined" leaves the CPU out (checked per call).

Upstream change that removes it: "undefined" resolving to every device its backend supports and
the default type following the registered backends (pytorch/pytorch#179901, #189193; torch_npu
carries the same patch). Remove it once the oldest supported torch has them.
"""

from __future__ import annotations

import functools

_BACKEND_ARG = 3  # position of `backend` in _new_process_group_helper(size, rank, ranks, backend, ...)


def _torch_leaves_cpu_out(c10d) -> bool:
    try:
        mapping = c10d.BackendConfig(c10d.Backend.UNDEFINED).get_device_backend_map()
    except Exception:
        return True
    return "cpu" not in mapping


def install() -> None:
    import torch
    from torch.distributed import distributed_c10d as c10d

    from torch_vk.distributed import BACKEND_NAME

    original = c10d._new_process_group_helper
    if getattr(original, "_torch_vk_wrapped", False):
        return

    def resolve(backend):
        if str(backend) != c10d.Backend.UNDEFINED:
            return backend
        if c10d.Backend.default_device_backend_map.get("vk") != BACKEND_NAME:
            return backend
        if torch._C._get_accelerator().type != "vk" or not _torch_leaves_cpu_out(c10d):
            return backend
        return c10d.Backend(BACKEND_NAME)

    @functools.wraps(original)
    def _new_process_group_helper(*args, **kwargs):
        if "backend" in kwargs:
            kwargs["backend"] = resolve(kwargs["backend"])
        elif len(args) > _BACKEND_ARG:
            args = args[:_BACKEND_ARG] + (resolve(args[_BACKEND_ARG]),) + args[_BACKEND_ARG + 1:]
        return original(*args, **kwargs)

    _new_process_group_helper._torch_vk_wrapped = True
    c10d._new_process_group_helper = _new_process_group_helper
