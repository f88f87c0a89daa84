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
    in_place: list[bool]     # output k is stored straight into its input (see out_into)


def _native():
    import torch_vk

    return torch_vk._C


def _contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _output_strides(meta_shape, meta_stride, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The graph's static strides for an output of `shape` when they lay it out densely, else
    contiguous strides."""
    if meta_shape is not None and tuple(meta_shape) == shape and meta_stride is not None \
            and _dense(shape, meta_stride):
        return tuple(meta_stride)
    return _contiguous_strides(shape)


def _dump_source(file_name: str, source: str) -> None:
    """Writes generated GLSL under TORCH_VK_COMPILE_DEBUG_DIR when it is set."""
    debug_dir = os.environ.get("TORCH_VK_COMPILE_DEBUG_DIR")
    if debug_dir:
        os.makedirs(debug_dir, exist_ok=True)
        with open(os.path.join(debug_dir, file_name), "w") as f:
            f.write(source)


def variant_for(variants: dict, tensors: Sequence[torch.Tensor], specialise: Callable) -> Any:
    """The kernel variant for the tensors' geometry (shapes and strides), specialised on first
    use and memoized in `variants`."""
    key = tuple((t.shape, t.stride()) for t in tensors)
    variant = variants.get(key)
    if variant is None:
        variant = variants[key] = specialise(tensors)
    return variant


def eager_runner(nodes, inputs, outputs):
    """Runs fused nodes' ATen calls one by one (geometries a generated kernel does not cover):
    a callable taking the values of `inputs` and returning those of `outputs`."""

    def run(*tensors):
        env = dict(zip(inputs, tensors))

        def load(arg):
            return torch.fx.node.map_arg(arg, lambda n: env[n])

        for node in nodes:
            env[node] = node.target(*load(node.args), **load(node.kwargs))
        return tuple(env[n] for n in outputs)

    return run


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
                 fallback: Callable[..., tuple[torch.Tensor, ...]],
                 out_into: list[int | None] | None = None,
                 device: torch.device | None = None):
        self.name = name
        # Where the outputs live (the graph's metadata): a group may have no tensor input at all
        # (only host scalars, e.g. a CPU 0-dim `cache_position` copied to vk and offset).
        self.device = device
        self.program = program
        # Static shape and strides of each output from the graph's metadata (None: dynamic).
        self.out_meta = out_meta
        self.fallback = fallback
        # out_into[k] = j: output k is stored into input j (an input mutation of the graph).
        self.out_into = out_into or [None] * len(program.outputs)
        self.variants: dict[Any, _Variant] = {}
        self.tensor_inputs = program.tensor_inputs()
        self.scalar_inputs = program.scalar_inputs()
        self.__name__ = name  # shows up in the generated graph code

    def __repr__(self) -> str:
        return f"FusedKernel({self.name}, {len(self.program.steps)} ops)"

    def __call__(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        tensors = [inputs[j] for j in self.tensor_inputs]
        variant = variant_for(self.variants, tensors, self._specialise)
        if variant.kernel_id < 0:
            return self._store_into_inputs(inputs, self.fallback(*inputs))
        device = tensors[0].device if tensors else (self.device or torch.device("vk"))
        outs = tuple(inputs[into] if into is not None and variant.in_place[k] else
                     torch.empty_strided(variant.out_shape, stride, dtype=dtype, device=device)
                     for k, (into, stride, (_, dtype)) in
                     enumerate(zip(self.out_into, variant.out_strides, self.program.outputs)))
        if variant.groups:
            values = [inputs[j].item() for j in self.scalar_inputs]
            float_args = self.program.scalars_as_floats
            _native()._launch_kernel(variant.kernel_id, list(outs) + tensors,
                                     [] if float_args else [int(v) for v in values],
                                     [float(v) for v in values] if float_args else [],
                                     variant.groups, WORKGROUP_SIZE)
        if not all(variant.in_place):
            return self._store_into_inputs(inputs, outs)
        return outs

    def _store_into_inputs(self, inputs, outs):
        """Input mutations the kernel could not store in place: copy the values in."""
        result = list(outs)
        for k, into in enumerate(self.out_into):
            if into is not None and result[k] is not inputs[into]:
                inputs[into].copy_(result[k])
                result[k] = inputs[into]
        return tuple(result)

    def _specialise(self, inputs: Sequence[torch.Tensor]) -> _Variant:
        """`inputs`: the tensor inputs (host scalars excluded)."""
        shape = tuple(torch.broadcast_shapes(*(t.shape for t in inputs)))
        out_strides = []
        in_place = []
        tensor_slot = {j: slot for slot, j in enumerate(self.tensor_inputs)}
        for k, (meta_shape, meta_stride) in enumerate(self.out_meta):
            into = self.out_into[k]
            dst = inputs[tensor_slot[into]] if into is not None else None
            if dst is not None and tuple(dst.shape) == shape and _dense(shape, dst.stride()) \
                    and dst.dtype == self.program.outputs[k][1]:
                out_strides.append(tuple(dst.stride()))
                in_place.append(True)
                continue
            in_place.append(into is None)
            out_strides.append(_output_strides(meta_shape, meta_stride, shape))
        numel = 1
        for s in shape:
            numel *= s
        if numel == 0:
            return _Variant(kernel_id=0, groups=0, out_shape=shape, out_strides=out_strides,
                            in_place=in_place)
        strides = [list(s) for s in out_strides]
        strides += [_broadcast_strides(t.shape, t.stride(), shape) for t in inputs]
        if numel > glsl.MAX_INDEX or any(glsl.max_offset(shape, st) > glsl.MAX_INDEX
                                         for st in strides):
            return _Variant(kernel_id=-1, groups=0, out_shape=shape, out_strides=out_strides,
                            in_place=in_place)
        native = _native()
        n_scalars = len(self.scalar_inputs)
        float_args = self.program.scalars_as_floats
        indirect = native._generated_args_indirect(len(strides), 0 if float_args else n_scalars,
                                                   n_scalars if float_args else 0)
        source = glsl.generate(self.program, shape, strides, indirect, self.name)
        _dump_source(f"{self.name}_{len(self.variants)}.comp", source)
        kernel_id = native._compile_kernel(source, self.name)
        groups = min((numel + WORKGROUP_SIZE - 1) // WORKGROUP_SIZE, MAX_GROUPS)
        return _Variant(kernel_id=kernel_id, groups=groups, out_shape=shape,
                        out_strides=out_strides, in_place=in_place)


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


class GemmEpilogueKernel:
    """A matrix product whose element-wise consumers run in its store (a GEMM epilogue).

    Replaces `addmm(bias, mat1, mat2)` / `mm(mat1, mat2)` (2-D, float32 / float16 / bfloat16),
    an optional row-major reshape of its result, and a fused group that reads the result
    element by element. Called as kernel(mat1, mat2, bias, *group_inputs) where the group
    input `gemm_input` (the product) is passed as None. Returns the group's outputs, then the
    product itself (row-major, the matmul's shape) when `store_product`.
    """

    out_into: list[int | None]

    def __init__(self, name: str, program: glsl.Program, gemm_input: int, shape: tuple[int, ...],
                 out_meta: list[tuple[tuple[int, ...] | None, tuple[int, ...] | None]],
                 beta: float, alpha: float, product_dtype: torch.dtype, store_product: bool,
                 fallback: Callable[..., tuple[torch.Tensor, ...]]):
        self.name = name
        self.program = program
        self.gemm_input = gemm_input
        self.shape = shape  # the group's index space: the product's elements, row-major
        self.out_meta = out_meta
        self.beta, self.alpha = beta, alpha
        self.product_dtype = product_dtype
        self.store_product = store_product
        self.fallback = fallback
        self.out_into = [None] * len(program.outputs)
        self.tensor_inputs = [j for j in program.tensor_inputs() if j != gemm_input]
        self.scalar_inputs = program.scalar_inputs()
        self.variants: dict[Any, tuple[int, tuple[int, ...], list[tuple[int, ...]]]] = {}
        self.__name__ = name

    def __repr__(self) -> str:
        return f"GemmEpilogueKernel({self.name}, {len(self.program.steps)} ops)"

    def __call__(self, mat1: torch.Tensor, mat2: torch.Tensor, bias: torch.Tensor | None,
                 *inputs: Any) -> tuple[torch.Tensor, ...]:
        tensors = [inputs[j] for j in self.tensor_inputs]
        key = (mat1.shape, mat2.shape, tuple((t.shape, t.stride()) for t in tensors))
        variant = self.variants.get(key)
        if variant is None:
            variant = self._specialise(mat1, mat2, tensors)
            self.variants[key] = variant
        epilogue_id, shape, out_strides = variant
        if epilogue_id < 0:
            return self.fallback(mat1, mat2, bias, *inputs)
        device = mat1.device
        m, n = mat1.shape[0], mat2.shape[1]
        outs = [torch.empty_strided(shape, stride, dtype=dtype, device=device)
                for stride, (_, dtype) in zip(out_strides, self.program.outputs)]
        if self.store_product:
            outs.append(torch.empty((m, n), dtype=self.product_dtype, device=device))
        if bias is not None:
            bias = bias.expand(m, n)
        values = [float(inputs[j].item()) for j in self.scalar_inputs]
        _native()._launch_gemm_epilogue(epilogue_id, mat1, mat2, bias, self.beta, self.alpha,
                                        self.product_dtype, outs + tensors, values)
        return tuple(outs)

    def _specialise(self, mat1, mat2, tensors):
        m, n = mat1.shape[0], mat2.shape[1]
        shape = self.shape
        numel = 1
        for s in shape:
            numel *= s
        out_strides = [_output_strides(ms, st, shape) for ms, st in self.out_meta]
        strides = [list(s) for s in out_strides]
        strides += [_broadcast_strides(t.shape, t.stride(), shape) for t in tensors]
        if numel != m * n or numel == 0 or numel > glsl.MAX_INDEX or any(
                glsl.max_offset(shape, st) > glsl.MAX_INDEX for st in strides):
            return (-1, shape, out_strides)
        source = glsl.generate_gemm_epilogue(self.program, shape, strides, self.gemm_input,
                                             self.product_dtype, n, self.store_product)
        _dump_source(f"{self.name}_{len(self.variants)}.epilogue.glsl", source)
        return (_native()._register_gemm_epilogue(source, self.name), shape, out_strides)
