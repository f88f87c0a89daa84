"""Reductions fused with the pointwise group that produces their input (generated GLSL).

A sum / mean / amax / amin node whose input is computed by a pointwise group becomes ONE
generated kernel: per element of the group's index space it evaluates the group's program (the
"prologue", the same op-table rows and _element_lines as a FusedKernel), stores the group's
values that other nodes read, and reduces the reduction's input value. The reduction of a plain
graph value (no prologue) stays an eager vk kernel call. Reductions whose results pointwise
work reads back over the reduced dims (a softmax) are row kernels instead (rows.py), which
reuse this module's plans, identities and combine expressions.

Kernel shape: one workgroup per output element ("row"; grid-stride over rows when there are
more than MAX_GROUPS), its invocations stride over the reduced elements (coalesced when the
reduced dims are innermost in memory), then a shared-memory tree reduction. The index space is
the group's shape with the kept dims first and the reduced dims last, so element
`row * reduced + j` of that permuted row-major space is reduced element j of output row `row`;
the usual dim coalescing keeps that linear-index -> offset map, so the pointwise index math is
reused unchanged.

Semantics follow the eager reduce kernels (shaders/reduce.comp): float16 / bfloat16 / float32
values accumulate in float32; a mean is the sum times float32(1 / count); the result is rounded
to the node's output dtype on the store; amax / amin propagate NaN (tvk_maximum / tvk_minimum);
an empty reduction gives sum 0 and mean NaN, and amax / amin of an empty row run the eager op
(which raises, like the CPU). Geometries the kernel cannot index (2^31 or more elements or
element offsets) also run the eager ops.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
import torch.fx

from torch_vk.compiler import glsl
from torch_vk.compiler.kernel import (MAX_GROUPS, _broadcast_strides, _dump_source, _native,
                                      _output_strides, eager_runner, variant_for)

aten = torch.ops.aten

MAX_WORKGROUP = 256
MIN_WORKGROUP = 32
# One workgroup reduces a whole row, so a few very long rows (a full reduction of a large
# tensor) would leave all but a few compute units idle: such geometries run the eager ops,
# whose reduction kernel splits long rows over many workgroups.
LONG_ROW = 1 << 16
MIN_ROWS_FOR_LONG_ROWS = 64


_LOOP_LIMITS: dict[int, int] = {}


def within_loop_budget(device: torch.device, rows: int, reduced: int, workgroup: int,
                       passes: int) -> bool:
    """Whether one workgroup per row stays within the device's loop-iteration limit
    (DeviceCapabilities::max_loop_iterations: lavapipe ends every loop of an invocation after
    65535 iterations, counting barriers). A workgroup walks ceil(rows / groups) rows; per row
    and pass, its share of the row plus the tree (log2(workgroup) steps of an iteration and a
    barrier) and three barriers. Outside the budget the eager ops run (they split the work)."""
    index = device.index or 0
    limit = _LOOP_LIMITS.get(index)
    if limit is None:
        limit = _LOOP_LIMITS[index] = int(
            _native()._get_device_properties(index).get("max_loop_iterations", 0))
    if limit == 0:
        return True
    per_group = -(-rows // min(rows, MAX_GROUPS))
    per_pass = -(-reduced // workgroup) + 2 * (workgroup.bit_length() - 1) + 3
    return per_group * (1 + passes * per_pass) <= limit - limit // 8


def too_few_rows(rows: int, reduced: int) -> bool:
    """True when `rows` rows of `reduced` elements are too few, too long rows for one
    workgroup per row (see LONG_ROW)."""
    return reduced > LONG_ROW and rows < MIN_ROWS_FOR_LONG_ROWS

_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass
class ReductionPlan:
    """A reduction node the generator can compute from its input's pointwise group."""
    node: torch.fx.Node          # the reduction
    value: torch.fx.Node         # its input (a member of the group)
    op: str                      # "sum", "amax" or "amin"
    mean: bool                   # sum scaled by 1 / count
    dims: tuple[int, ...]        # reduced dims of the input, non-negative, sorted, unique
    keepdim: bool


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _static(val: Any) -> bool:
    return isinstance(val, torch.Tensor) and all(
        isinstance(s, int) for s in tuple(val.shape) + tuple(val.stride()))


def _normalise_dims(dims: Any, ndim: int) -> tuple[int, ...] | None:
    """Sorted non-negative dims; an empty list or None means every dim (as sum / amax do)."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) for d in dims):
        return None
    if len(dims) == 0:
        return tuple(range(ndim))
    out = set()
    for d in dims:
        if ndim == 0 and d in (0, -1):
            continue  # a 0-dim tensor reduces over "dim 0": nothing to reduce
        if not -ndim <= d < ndim:
            return None
        out.add(d % ndim)
    return tuple(sorted(out))


def plan_of(node: torch.fx.Node) -> ReductionPlan | None:
    """The plan for `node` when it is a reduction the generator covers, else None."""
    if node.op != "call_function":
        return None
    target = node.target
    if target in (aten.sum.dim_IntList, aten.mean.dim):
        op, mean = "sum", target is aten.mean.dim
        dims, keepdim = _arg(node, 1, "dim"), _arg(node, 2, "keepdim", False)
        if set(node.kwargs) - {"dim", "keepdim", "dtype"}:
            return None
    elif target in (aten.sum.default, aten.mean.default):
        op, mean = "sum", target is aten.mean.default
        dims, keepdim = None, False
        if set(node.kwargs) - {"dtype"} or len(node.args) > 1:
            return None
    elif target in (aten.amax.default, aten.amin.default):
        op, mean = ("amax" if target is aten.amax.default else "amin"), False
        dims, keepdim = _arg(node, 1, "dim", []), _arg(node, 2, "keepdim", False)
        if node.kwargs.keys() - {"dim", "keepdim"}:
            return None
    else:
        return None
    value = node.args[0]
    if not isinstance(value, torch.fx.Node) or not isinstance(keepdim, bool):
        return None
    val_in, val_out = value.meta.get("val"), node.meta.get("val")
    if not (_static(val_in) and _static(val_out)):
        return None
    if val_in.dtype not in _FLOAT_DTYPES or val_out.dtype not in _FLOAT_DTYPES:
        return None
    if val_in.device.type != "vk" or val_out.device.type != "vk":
        return None
    dims = _normalise_dims(dims, val_in.dim())
    if dims is None:
        return None
    return ReductionPlan(node, value, op, mean, dims, keepdim)


@dataclass
class _Variant:
    kernel_id: int                  # -1: run the eager fallback
    groups: int
    workgroup: int
    out_strides: list[tuple[int, ...]]


_IDENTITY = {"sum": "T(0)", "amax": "(-TVK_F32_INF)", "amin": "TVK_F32_INF"}
_COMBINE = {"sum": "({a} + {b})", "amax": "tvk_maximum({a}, {b})",
            "amin": "tvk_minimum({a}, {b})"}


def generate_reduction(program: glsl.Program, value_step: int, op: str, mean: bool,
                       sizes: Sequence[int], strides: Sequence[Sequence[int]], rows: int,
                       reduced: int, result_dtype: torch.dtype, workgroup: int, indirect: bool,
                       name: str) -> str:
    """Kernel source: `sizes` is the group's index space permuted to (kept dims, reduced dims)
    with rows * reduced elements; strides[k] (aligned with sizes) for the program's stored
    outputs, then its tensor inputs. Argument block: the stored outputs' addresses, the
    result's (contiguous, `rows` elements), the tensor inputs'; then the host scalars."""
    sizes, strides = glsl.coalesce(sizes, strides)
    n_out = len(program.outputs)
    scalar_inputs = program.scalar_inputs()
    float_args = program.scalars_as_floats
    members = glsl._arg_members(len(strides) + 1, 0 if float_args else len(scalar_inputs),
                                len(scalar_inputs) if float_args else 0)
    combine = _COMBINE[op]
    if op == "sum" and mean:
        finish = "TVK_F32_NAN" if reduced == 0 else \
            f"total * {glsl.literal(1.0 / reduced, glsl.KIND_FLOAT32)}"
    else:
        finish = "total"
    lines, block = glsl.kernel_prologue(name, program.kind, members, indirect,
                                        [f"shared T partial[{workgroup}];"])
    lines += [
        f"  const uint rows = {rows}u;",
        f"  const uint reduced = {reduced}u;",
        "  uint lid = gl_LocalInvocationID.x;",
        # `row` is uniform in the workgroup, so the barriers below are in uniform control flow.
        "  for (uint row = gl_WorkGroupID.x; row < rows; row += gl_NumWorkGroups.x) {",
        f"    T acc = {_IDENTITY[op]};",
        f"    for (uint j = lid; j < reduced; j += {workgroup}u) {{",
        "      T reduced_value;",
        "      {",
    ]
    lines += glsl._element_lines(program, sizes, strides, "row * reduced + j", block,
                                 "        ", first_input_slot=n_out + 1)
    lines += [
        f"        reduced_value = v{value_step};",
        "      }",
        f"      acc = {combine.format(a='acc', b='reduced_value')};",
        "    }",
        "    partial[lid] = acc;",
        "    barrier();",
        f"    for (uint s = {workgroup // 2}u; s > 0u; s >>= 1) {{",
        f"      if (lid < s) partial[lid] = {combine.format(a='partial[lid]', b='partial[lid + s]')};",
        "      barrier();",
        "    }",
        "    if (lid == 0u) {",
        "      T total = partial[0];",
        f"      STORE_T({block}.addr[{n_out}], {glsl.DTYPE_CODE[result_dtype]}, int(row), {finish});",
        "    }",
        "    barrier();  // partial[] is reused by the next row",
        "  }",
        "}",
        "",
    ]
    return "\n".join(lines)


def _workgroup_for(reduced: int) -> int:
    size = MIN_WORKGROUP
    while size < reduced and size < MAX_WORKGROUP:
        size *= 2
    return size


class ReductionKernel:
    """Callable that replaces a pointwise group and the reduction of one of its values.

    Called with the group's inputs; returns the group's stored outputs (values read by other
    nodes), then the reduction's result (contiguous, the node's shape and dtype)."""

    def __init__(self, name: str, program: glsl.Program, value_step: int, plan: ReductionPlan,
                 out_meta: list[tuple[tuple[int, ...], tuple[int, ...]]],
                 fallback: Callable[..., tuple[torch.Tensor, ...]]):
        self.name = name
        self.program = program
        self.value_step = value_step
        self.op, self.mean = plan.op, plan.mean
        self.dims = plan.dims
        value_val, result_val = plan.value.meta["val"], plan.node.meta["val"]
        self.shape = tuple(value_val.shape)        # the group's index space
        self.result_shape = tuple(result_val.shape)
        self.result_dtype = result_val.dtype
        self.out_meta = out_meta
        self.fallback = fallback
        self.out_into = [None] * (len(program.outputs) + 1)  # never stores into an input
        self.tensor_inputs = program.tensor_inputs()
        self.scalar_inputs = program.scalar_inputs()
        self.variants: dict[Any, _Variant] = {}
        self.__name__ = name

    def __repr__(self) -> str:
        return f"ReductionKernel({self.name}, {self.op}, {len(self.program.steps)} ops)"

    def __call__(self, *inputs: Any) -> tuple[torch.Tensor, ...]:
        tensors = [inputs[j] for j in self.tensor_inputs]
        variant = variant_for(self.variants, tensors, self._specialise)
        if variant.kernel_id < 0:
            return tuple(self.fallback(*inputs))
        device = tensors[0].device if tensors else torch.device("vk")
        outs = [torch.empty_strided(self.shape, stride, dtype=dtype, device=device)
                for stride, (_, dtype) in zip(variant.out_strides, self.program.outputs)]
        result = torch.empty(self.result_shape, dtype=self.result_dtype, device=device)
        if variant.groups:
            values = [inputs[j].item() for j in self.scalar_inputs]
            float_args = self.program.scalars_as_floats
            _native()._launch_kernel(variant.kernel_id, outs + [result] + tensors,
                                     [] if float_args else [int(v) for v in values],
                                     [float(v) for v in values] if float_args else [],
                                     variant.groups, variant.workgroup)
        return (*outs, result)

    def _specialise(self, tensors: Sequence[torch.Tensor]) -> _Variant:
        shape = self.shape
        out_strides = [_output_strides(ms, st, shape) for ms, st in self.out_meta]
        try:
            traced = all(tuple(torch.broadcast_shapes(t.shape, shape)) == shape for t in tensors)
        except RuntimeError:
            traced = False
        if not traced:
            return _Variant(-1, 0, 0, out_strides)  # not the traced geometry: eager ops
        kept = [d for d in range(len(shape)) if d not in self.dims]
        perm = kept + list(self.dims)
        rows, reduced = 1, 1
        for d in kept:
            rows *= shape[d]
        for d in self.dims:
            reduced *= shape[d]
        if rows == 0:
            return _Variant(0, 0, 0, out_strides)  # nothing to compute or store
        if reduced == 0 and self.op != "sum":
            return _Variant(-1, 0, 0, out_strides)  # eager amax / amin raise on empty rows
        if too_few_rows(rows, reduced):
            return _Variant(-1, 0, 0, out_strides)
        strides = [list(s) for s in out_strides]
        strides += [_broadcast_strides(t.shape, t.stride(), shape) for t in tensors]
        numel = rows * reduced
        if numel > glsl.MAX_INDEX or rows > glsl.MAX_INDEX or any(
                glsl.max_offset(shape, st) > glsl.MAX_INDEX for st in strides):
            return _Variant(-1, 0, 0, out_strides)
        sizes_p = [shape[d] for d in perm]
        strides_p = [[st[d] for d in perm] for st in strides]
        native = _native()
        n_scalars = len(self.scalar_inputs)
        float_args = self.program.scalars_as_floats
        indirect = native._generated_args_indirect(len(strides) + 1,
                                                   0 if float_args else n_scalars,
                                                   n_scalars if float_args else 0)
        workgroup = _workgroup_for(reduced)
        device = tensors[0].device if tensors else torch.device("vk")
        if not within_loop_budget(device, rows, reduced, workgroup, 1):
            return _Variant(-1, 0, 0, out_strides)
        source = generate_reduction(self.program, self.value_step, self.op, self.mean, sizes_p,
                                    strides_p, rows, reduced, self.result_dtype, workgroup,
                                    indirect, self.name)
        _dump_source(f"{self.name}_{len(self.variants)}.comp", source)
        kernel_id = native._compile_kernel(source, self.name)
        return _Variant(kernel_id, min(rows, MAX_GROUPS), workgroup, out_strides)


def reduction_eager_runner(nodes: list[torch.fx.Node], inputs: list[torch.fx.Node],
                           outputs: list[torch.fx.Node], plan: ReductionPlan):
    """ReductionKernel's fallback: the group's ATen calls one by one, then the reduction."""
    reduction = plan.node
    group = eager_runner(nodes, inputs, list(outputs) + [plan.value])

    def run(*tensors):
        *values, reduced_input = group(*tensors)
        result = reduction.target(reduced_input, *reduction.args[1:], **reduction.kwargs)
        return (*values, result)

    return run
