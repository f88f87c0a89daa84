"""accelerate: multi-process runs on vk fail loudly instead of training apart.

Launched with several processes (`accelerate launch`, `torchrun`: LOCAL_RANK and WORLD_SIZE
set), accelerate picks its distributed type from a fixed table of device types
(`TORCH_DISTRIBUTED_BACKENDS`, and the `DistributedType.MULTI_<DEVICE>` enum, which cannot be
extended from outside). vk is in neither, so `PartialState` settles on `DistributedType.NO`:
every process would train its own copy of the model without any gradient exchange, and
`Trainer` / `Accelerator` would report success. With vk the machine's accelerator, this patch
turns that case into a RuntimeError on every rank, naming what works instead (DDP / FSDP2 over
the `vkgloo` process group, docs/DISTRIBUTED.md; `--cpu` for CPU training). Single-process
runs, `cpu=True` and machines without vk are untouched.
Upstream change that removes it: a `DistributedType` for out-of-tree accelerators taken from
`torch.accelerator` and `torch.distributed.Backend.default_device_backend_map`.
Version guard: accelerate 1.x with `PartialState._prepare_backend`.
"""
from __future__ import annotations

import functools
import os

from torch_vk.integrations import vk_available

TARGETS = ("accelerate",)


def _world_size() -> int:
    for name in ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"):
        try:
            return int(os.environ.get(name, "1"))
        except ValueError:
            continue
    return 1


def patch(module) -> None:
    if not vk_available() or not str(getattr(module, "__version__", "")).startswith("1."):
        return
    import importlib

    state = importlib.import_module("accelerate.state")
    cls = getattr(state, "PartialState", None)
    original = getattr(cls, "_prepare_backend", None)
    if original is None or getattr(original, "_torch_vk_wrapped", False):
        return

    @functools.wraps(original)
    def _prepare_backend(self, cpu: bool = False, sagemaker_dp=False, backend=None):
        result = original(self, cpu, sagemaker_dp, backend)
        distributed_type = result[1]
        if (not cpu and distributed_type == state.DistributedType.NO
                and int(os.environ.get("LOCAL_RANK", -1)) != -1 and _world_size() > 1):
            import torch

            accelerator = torch.accelerator.current_accelerator()
            if accelerator is not None and accelerator.type == "vk":
                raise RuntimeError(
                    "accelerate cannot run several processes on 'vk' devices: its distributed "
                    "types cover a fixed list of devices, so each of the "
                    f"{_world_size()} processes would train alone without exchanging gradients. "
                    "Use torchrun with torch.nn.parallel.DistributedDataParallel or FSDP2 over "
                    "the 'vkgloo' process group (torch-vk's docs/DISTRIBUTED.md), or pass --cpu "
                    "/ cpu=True to train on the CPU.")
        return result

    _prepare_backend._torch_vk_wrapped = True
    cls._prepare_backend = _prepare_backend
