"""Adapters for libraries that accept only the device names they know.

safetensors checks `load_file(..., device=...)` against its own list of device types (cpu,
cuda, mps, xpu, npu, ...), so "vk" is refused before torch sees it. torch-vk wraps
`safetensors.torch.load_file`: for a vk device it loads to the CPU (memory-mapped, as safetensors
does for every device) and moves each tensor to the device; any other device goes to the
original function unchanged. The wrapper is installed when `safetensors.torch` is imported
(or at once, when it already was), so `from safetensors.torch import load_file` elsewhere
binds the wrapper as long as torch_vk was imported first (torch's backend autoload does that).
`safetensors.safe_open(..., device="vk")` is a native class and stays refused: open with
device="cpu" and call `.to("vk")` on the tensors.
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import sys
from typing import Any, Callable

import torch

_SAFETENSORS = "safetensors.torch"


def _is_vk(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "vk"
    return isinstance(device, str) and (device == "vk" or device.startswith("vk:"))


def _wrap_safetensors(module: Any) -> None:
    original = getattr(module, "load_file", None)
    if original is None or getattr(original, "_torch_vk_wrapped", False):
        return

    @functools.wraps(original)
    def load_file(filename, device="cpu", *args, **kwargs):
        if not _is_vk(device):
            return original(filename, device, *args, **kwargs)
        target = torch.device(device)
        return {name: tensor.to(target)
                for name, tensor in original(filename, "cpu", *args, **kwargs).items()}

    load_file._torch_vk_wrapped = True
    module.load_file = load_file


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `patch(module)` right after `name` is first imported (one shot)."""

    def __init__(self, name: str, patch: Callable[[Any], None]):
        self.name = name
        self.patch = patch

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module
        patch = self.patch

        def exec_then_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_then_patch
        return spec


def install() -> None:
    """Installs the adapters (idempotent); never raises."""
    module = sys.modules.get(_SAFETENSORS)
    if module is not None:
        _wrap_safetensors(module)
    elif not any(isinstance(f, _AfterImport) and f.name == _SAFETENSORS for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(_SAFETENSORS, _wrap_safetensors))
