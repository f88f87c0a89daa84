"""Run time of a fused element-wise kernel: specialise per input geometry, compile, launch.

A FusedKernel is called from the compiled graph's code with the group's input tensors and
returns its output tensors. The first call with a new (shape, stride) signature generates the
GLSL for that geometry and compiles it (torch_vk._C._compile_kernel keeps an in-process table
and a disk cache, so a warm process or a second process pays nothing). Later calls look the
signature up and launch: one dispatch, no waits.

Geometries the generated kernels do not cover (2^31 or more elements, element offsets beyond
int32) run the group's ops one by one through ATen on the device instead.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from torch_vk.compiler import glsl

WORKGROUP_SIZE = 256
MAX_GROUPS = 65535


@dataclass
class _Variant:
    kernel_id: int           # -1: run `fallback`
    groups: int
    out_shape: tuple[int, ...]
    out_strides: list[tuple[int, ...]]


def _native():
    import torch_vk

    return torch_vk._C


def _contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _broadcast_strides(shape: Sequence[int], stride: Sequence[int], target: Sequence[int]):
    """Strides of a tensor of `shape` broadcast to `target` (0 in expanded dims)."""
    pad = len(target) - len(shape)
    out = [0] * pad
    for size, st, tsize in zip(shape, stride, target[pad:]):
        out.append(0 if size == 1 and tsize != 1 else st)
    return out


class FusedKernel:
    """Callable that replaces a group of pointwise nodes in a compiled graph."""

    def __init__(self, name: str, program: glsl.Program,
                 out_meta: list[tuple[tuple[int, ...] | None, tuple[int, ...] | None]],
                 fallback: Callable[..., tuple[torch.Tensor, ...]]):
        self.name = name
        self.program = program
        # Static shape and strides of each output from the graph's metadata (None: dynamic).
        self.out_meta = out_meta
        self.fallback = fallback
        self.variants: dict[Any, _Variant] = {}
        self.__name__ = name  # shows up in the generated graph code

    def __repr__(self) -> str:
        return f"FusedKernel({self.name}, {len(self.program.steps)} ops)"

    def __call__(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        key = tuple((t.shape, t.stride()) for t in inputs)
        variant = self.variants.get(key)
        if variant is None:
            variant = self._specialise(inputs)
            self.variants[key] = variant
        if variant.kernel_id < 0:
            return self.fallback(*inputs)
        device = inputs[0].device
        outs = tuple(torch.empty_strided(variant.out_shape, stride, dtype=dtype, device=device)
                     for stride, (_, dtype) in zip(variant.out_strides, self.program.outputs))
        if variant.groups:
            _native()._launch_kernel(variant.kernel_id, list(outs) + list(inputs), [], [],
                                     variant.groups, WORKGROUP_SIZE)
        return outs

    def _specialise(self, inputs: Sequence[torch.Tensor]) -> _Variant:
        shape = tuple(torch.broadcast_shapes(*(t.shape for t in inputs)))
        out_strides = []
        for meta_shape, meta_stride in self.out_meta:
            if meta_shape is not None and tuple(meta_shape) == shape and meta_stride is not None \
                    and _dense(shape, meta_stride):
                out_strides.append(tuple(meta_stride))
            else:
                out_strides.append(_contiguous_strides(shape))
        numel = 1
        for s in shape:
            numel *= s
        if numel == 0:
            return _Variant(kernel_id=0, groups=0, out_shape=shape, out_strides=out_strides)
        strides = [list(s) for s in out_strides]
        strides += [_broadcast_strides(t.shape, t.stride(), shape) for t in inputs]
        if numel > glsl.MAX_INDEX or any(glsl.max_offset(shape, st) > glsl.MAX_INDEX
                                         for st in strides):
            return _Variant(kernel_id=-1, groups=0, out_shape=shape, out_strides=out_strides)
        native = _native()
        indirect = native._generated_args_indirect(len(strides), 0, 0)
        source = glsl.generate(self.program, shape, strides, indirect, self.name)
        debug_dir = os.environ.get("TORCH_VK_COMPILE_DEBUG_DIR")
        if debug_dir:
            os.makedirs(debug_dir, exist_ok=True)
            path = os.path.join(debug_dir, f"{self.name}_{len(self.variants)}.comp")
            with open(path, "w") as f:
                f.write(source)
        kernel_id = native._compile_kernel(source, self.name)
        groups = min((numel + WORKGROUP_SIZE - 1) // WORKGROUP_SIZE, MAX_GROUPS)
        return _Variant(kernel_id=kernel_id, groups=groups, out_shape=shape,
                        out_strides=out_strides)


def _dense(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """True when `stride` lays out `shape` without gaps or overlaps (some permutation of the
    contiguous strides), so empty_strided with it allocates exactly numel elements."""
    dims = sorted((st, s) for s, st in zip(shape, stride) if s != 1)
    expected = 1
    for st, s in dims:
        if st != expected:
            return False
        expected *= s
    return True
