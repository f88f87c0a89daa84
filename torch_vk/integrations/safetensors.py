"""safetensors: `load_file(path, device="vk")`.

safetensors checks `load_file(..., device=...)` against its own list of device types (cpu,
cuda, mps, xpu, npu, ...), so "vk" is refused before torch sees it. The wrapper loads a vk
request to the CPU (memory-mapped, as safetensors does for every device) and moves each tensor
to the device; any other device goes to the original function unchanged.
`safetensors.safe_open(..., device="vk")` is a native class and stays refused: open with
device="cpu" and call `.to("vk")` on the tensors.
Upstream change that removes this: safetensors accepting any device torch knows
(`torch.device(device)` instead of its fixed list).
"""
from __future__ import annotations

import functools

import torch

from torch_vk.integrations import is_vk

TARGETS = ("safetensors.torch",)


def patch(module) -> None:
    original = getattr(module, "load_file", None)
    if original is None or getattr(original, "_torch_vk_wrapped", False):
        return

    @functools.wraps(original)
    def load_file(filename, device="cpu", *args, **kwargs):
        if not is_vk(device):
            return original(filename, device, *args, **kwargs)
        target = torch.device(device)
        return {name: tensor.to(target)
                for name, tensor in original(filename, "cpu", *args, **kwargs).items()}

    load_file._torch_vk_wrapped = True
    module.load_file = load_file
