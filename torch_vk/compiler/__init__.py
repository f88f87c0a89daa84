"""torch.compile for "vk" (L5): FX graph -> fused GLSL kernels + the eager kernel library.

Both `torch.compile(model)` (the default Inductor backend) and `torch.compile(model,
backend="vk")` work on vk models:

- backend "vk" is registered with Dynamo;
- Inductor's entry point (`torch._inductor.compile_fx.compile_fx`) is wrapped so that a graph
  whose inputs, parameters or buffers live on vk is compiled by the vk backend; every other
  graph goes to Inductor unchanged;
- a Dynamo DeviceInterface for "vk" is registered.

Importing torch._dynamo costs seconds, so none of this happens at `import torch_vk`:
torch_vk wraps `torch.compile` and calls `register()` on its first use.
"""
from __future__ import annotations

import functools
from typing import Any

import torch

from torch_vk.compiler.backend import compile_graph, graph_uses_vk, stats, vk_backend

__all__ = ["register", "vk_backend", "compile_graph", "stats"]

_registered = False


def _device_interface() -> type:
    from torch._dynamo.device_interface import DeviceInterface

    vk = torch.vk

    class VkInterface(DeviceInterface):
        device = vk.device
        Event = vk.Event
        Stream = vk.Stream

        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                vk.set_device(device)

            @staticmethod
            def current_device() -> int:
                return vk.current_device()

            @staticmethod
            def get_device_properties(device: Any = None) -> Any:
                return vk.get_device_properties(device)

        current_device = staticmethod(vk.current_device)
        set_device = staticmethod(vk.set_device)
        device_count = staticmethod(vk.device_count)
        is_available = staticmethod(vk.is_available)
        synchronize = staticmethod(vk.synchronize)
        current_stream = staticmethod(vk.current_stream)
        set_stream = staticmethod(vk.set_stream)
        stream = staticmethod(vk.stream)
        memory_allocated = staticmethod(vk.memory_allocated)

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return vk._C._maybe_exchange_device(device)

        @staticmethod
        def exchange_device(device: int) -> int:
            return vk._C._exchange_device(device)

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return 0

        @classmethod
        def get_device_properties(cls, device: Any = None) -> Any:
            return vk.get_device_properties(device)

        @staticmethod
        def get_compute_capability(device: Any = None) -> Any:
            return 0

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return vk.is_bf16_supported()

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return False

    return VkInterface


def _route_inductor() -> None:
    import torch._inductor.compile_fx as compile_fx_module

    original = compile_fx_module.compile_fx
    if getattr(original, "_torch_vk_routed", False):
        return

    @functools.wraps(original)
    def compile_fx(model_, example_inputs_, *args, **kwargs):
        if isinstance(model_, torch.fx.GraphModule) and graph_uses_vk(model_, example_inputs_):
            return vk_backend(model_, example_inputs_)
        return original(model_, example_inputs_, *args, **kwargs)

    compile_fx._torch_vk_routed = True
    compile_fx_module.compile_fx = compile_fx


def register() -> None:
    """Registers backend "vk", the device interface and the Inductor routing (idempotent)."""
    global _registered
    if _registered:
        return
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend
    from torch._dynamo.device_interface import register_interface_for_device

    if "vk" not in _COMPILER_FNS:
        register_backend(compiler_fn=vk_backend, name="vk")
    register_interface_for_device("vk", _device_interface())
    _route_inductor()
    _registered = True
