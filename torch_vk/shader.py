"""Custom GLSL compute kernels as callables on vk tensors: ``torch_vk.compile_shader``.

The counterpart of ``torch.mps.compile_shader`` (and of a Triton kernel on CUDA): GLSL compute
source is compiled at run time by the glslang that torch-vk links for ``torch.compile``
(memoized in-process and cached on disk under ``$TORCH_VK_CACHE_DIR/spirv``), and the returned
kernel records one dispatch on the current vk stream per call, asynchronously, like any vk op
(so it also runs inside captured graphs and ``torch.compile``d programs when wrapped in a
``torch.library.custom_op``; docs/CUSTOM_KERNELS.md).

ABI (the generated-kernel contract of src/kernels/generated.h):

* ``#version 460``, one entry point ``main``, ``layout(local_size_x_id = 0) in;`` (the
  workgroup size is specialization constant 0: ``local_size=`` of the call). A 1-D grid of
  ``grid`` workgroups. ``#include "common.glsl"`` gives the dtype helpers (``load_f32``,
  ``store_f32``, ``tvk_elem_addr``, ``RefF32`` ...) torch-vk's own kernels use.
* Arguments, in this order whatever the order of the call's arguments: every tensor as the
  64-bit device address of its element 0 (storage offset applied; any dtype, any strides:
  pass sizes and strides as ints when the kernel needs them), then every Python int as an
  int64, then every Python float as a float32. When they fit in the push constants
  (``args_indirect(...)`` is False) the push-constant block is the arguments themselves::

      layout(push_constant) uniform Args { uint64_t x; uint64_t y; int64_t n; float alpha; };

  otherwise the push constants hold the address of a block with that layout::

      layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer ArgBlock {
        uint64_t x; uint64_t y; int64_t n; float alpha; };
      layout(push_constant) uniform Push { ArgBlock args; };

  ``Kernel.declare_arguments(...)`` writes the right declaration for given names.
* GLSL errors raise ValueError with the compiler's message and the numbered source lines
  around each error.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import torch

__all__ = ["compile_shader", "Kernel", "args_indirect"]


def _native():
    from torch_vk import _require_native

    return _require_native()


def args_indirect(n_tensors: int, n_ints: int, n_floats: int) -> bool:
    """Whether an argument block of that many tensors / ints / floats is passed indirectly
    (it does not fit in the device's push constants): see the module's ABI."""
    return bool(_native()._generated_args_indirect(n_tensors, n_ints, n_floats))


class Kernel:
    """A compiled GLSL compute kernel; call it with tensors, ints and floats."""

    def __init__(self, source: str, name: str):
        self.source = source
        self.name = name
        try:
            self._id = _native()._compile_kernel(source, name)
        except (ValueError, RuntimeError) as exc:
            if isinstance(exc, RuntimeError) and "GLSL compilation" not in str(exc):
                raise  # e.g. a build without the run-time compiler
            raise ValueError(f"torch_vk.compile_shader({name!r}): {exc}") from None

    def __repr__(self) -> str:
        return f"torch_vk.Kernel({self.name!r})"

    @staticmethod
    def declare_arguments(tensors: Sequence[str] = (), ints: Sequence[str] = (),
                          floats: Sequence[str] = (), block: str = "args") -> str:
        """GLSL declaring the arguments of a call with these tensor / int / float names (in the
        ABI's order): a push-constant block, or an indirect block named `block` when the
        arguments do not fit in the push constants. Members are read as `block.name` in both
        cases (the push-constant block is given that instance name)."""
        members = ([f"uint64_t {t};" for t in tensors] + [f"int64_t {i};" for i in ints] +
                   [f"float {f};" for f in floats])
        body = " ".join(members) if members else "uint64_t unused_;"
        if args_indirect(len(tensors), len(ints), len(floats)):
            return ("layout(buffer_reference, std430, buffer_reference_align = 16) readonly "
                    f"buffer ArgBlock {{ {body} }};\n"
                    f"layout(push_constant) uniform Push {{ ArgBlock {block}; }};\n")
        return f"layout(push_constant) uniform Args {{ {body} }} {block};\n"

    def __call__(self, *args: Any, grid: int | Sequence[int] | None = None,
                 threads: int | None = None, local_size: int = 256) -> None:
        """Records one dispatch on the current stream (never waits).

        grid: workgroup count (an int or a 1-tuple); or threads: total invocations, the grid
        being ceil(threads / local_size). local_size: invocations per workgroup.
        """
        tensors, ints, floats = [], [], []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                if a.device.type != "vk":
                    raise ValueError(f"{self.name}: argument {i} is a tensor on {a.device}, "
                                     "expected a vk tensor")
                tensors.append(a)
            elif isinstance(a, bool):
                ints.append(int(a))
            elif isinstance(a, int):
                ints.append(a)
            elif isinstance(a, float):
                floats.append(a)
            else:
                raise TypeError(f"{self.name}: argument {i} is a {type(a).__name__}; kernels "
                                "take vk tensors, ints and floats")
        if (grid is None) == (threads is None):
            raise ValueError(f"{self.name}: pass exactly one of grid= and threads=")
        if grid is None:
            groups = max(1, math.ceil(int(threads) / local_size))
        else:
            dims = (grid,) if isinstance(grid, int) else tuple(grid)
            if len(dims) != 1:
                raise ValueError(f"{self.name}: grids are 1-D (loop grid-stride), got {grid!r}")
            groups = int(dims[0])
        if tensors:
            index = tensors[0].device.index
            with torch.vk.device(index):
                _native()._launch_kernel(self._id, tensors, ints, floats, groups, local_size)
        else:
            _native()._launch_kernel(self._id, tensors, ints, floats, groups, local_size)


def compile_shader(source: str, name: str = "kernel") -> Kernel:
    """Compiles GLSL compute source (see the module's ABI) into a callable Kernel."""
    if not isinstance(source, str):
        raise TypeError(f"compile_shader: source must be a str, got {type(source).__name__}")
    return Kernel(source, name)
