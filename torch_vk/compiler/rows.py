"""Whole-row kernels: reductions and the pointwise work around them in ONE generated kernel.

Softmax, log-softmax, layer norm and RMSNorm written with ATen ops are chains in which
pointwise work consumes a reduction's result broadcast back over the reduced dims (keepdim=True
reductions), often with several reductions in sequence (amax, then the sum of exp(x - amax);
mean, then the mean of squares of x - mean). Like Inductor's persistent reductions, such a
chain becomes one kernel (a "row region"):

- the region has one index space S (the reductions' input shape) and one set of reduced dims R;
  its members are sum / mean / amax / amin nodes over R of values of shape S, float pointwise
  nodes of shape S ("full" values) or of S with R set to 1 ("row" values), and views that are
  the same values per element: expand of a value to S (autograd's backward of a keepdim
  reduction), view / reshape / unsqueeze of a keepdim=False reduction to S with R set to 1;
- one workgroup per row (grid-stride over rows); pass k evaluates, per reduced element, the
  pointwise steps that reduction k's input needs (re-computing them: cheap ops, any row length),
  reduces into shared memory and hands the result to every invocation of the workgroup; the
  last pass evaluates every step and stores the values read outside the region: full values
  per element, row values once per row (at reduced element 0), reduction results per row.

The element index math is the pointwise kernels' (glsl._element_lines): the index space is S
permuted to (kept dims, reduced dims), so element `row * reduced + j` is reduced element j of
`row`. Values and reductions round exactly as the eager kernels do (reduction.py's contract).
Geometries the kernel cannot index run the region's ATen ops one by one (the eager fallback).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
import torch.fx

from torch_vk.compiler import glsl
from torch_vk.compiler.kernel import (MAX_GROUPS, _broadcast_strides, _dump_source, _native,
                                      _output_strides, eager_runner, variant_for)
from torch_vk.compiler.reduction import (_COMBINE, _IDENTITY, ReductionPlan, _static,
                                         _workgroup_for, plan_of, too_few_rows,
                                         within_loop_budget)


@dataclass
class RowRegion:
    gid: str                              # key of the region in fusion's emit
    shape: tuple[int, ...]                # S
    dims: tuple[int, ...]                 # R
    nodes: list[torch.fx.Node]            # members in graph order
    plans: list[ReductionPlan]            # the reductions, in graph (= pass) order
    calls: dict[torch.fx.Node, Any] = field(default_factory=dict)  # pointwise members' calls
    # expand members (a row value broadcast back over the reduced dims, as autograd's
    # backward of a keepdim reduction writes it) and views of keepdim=False reductions that
    # re-insert the reduced dims: the same value as their input per element.
    aliases: dict[torch.fx.Node, torch.fx.Node] = field(default_factory=dict)


_ALIAS = "alias"            # an expand member
_ROW_VIEW = "row view"      # a view member
_EXPAND = torch.ops.aten.expand.default
_VIEWS = {torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default,
          torch.ops.aten.reshape.default, torch.ops.aten.unsqueeze.default}


def _row_shape(shape: Sequence[int], dims: Sequence[int]) -> tuple[int, ...]:
    return tuple(1 if d in dims else s for d, s in enumerate(shape))


def find_row_regions(graph: torch.fx.Graph,
                     classify: Callable[[torch.fx.Node], Any]) -> list[RowRegion]:
    """Row regions of `graph`. classify(node): the node's PointwiseCall when it is a pointwise
    node a float32-kind kernel can evaluate, else None. A region is kept when it is worth a
    row kernel (a pointwise node reads a reduction's result, or it has several reductions);
    members are dropped until running it as one unit keeps the graph acyclic (nothing outside
    the region both reads a member's value and, directly or not, feeds a member)."""
    nodes = list(graph.nodes)
    plans = {}
    for node in nodes:
        plan = plan_of(node)
        if plan is not None and plan.dims and _static(plan.value.meta["val"]):
            plans[node] = plan
    assigned: set[torch.fx.Node] = set()
    regions: list[RowRegion] = []
    for seed, seed_plan in plans.items():
        if seed in assigned:
            continue
        shape = tuple(seed_plan.value.meta["val"].shape)
        dims = seed_plan.dims
        row_shape = _row_shape(shape, dims)
        members: dict[torch.fx.Node, Any] = {}
        stack = [seed]
        while stack:
            node = stack.pop()
            if node in members or node in assigned or node.op != "call_function":
                continue
            if node in plans:
                plan = plans[node]
                if tuple(plan.value.meta["val"].shape) != shape or plan.dims != dims:
                    continue
                members[node] = None
            else:
                val = node.meta.get("val")
                if not isinstance(val, torch.Tensor) or not _static(val) \
                        or tuple(val.shape) not in (shape, row_shape):
                    continue
                if node.target in _VIEWS:
                    # A keepdim=False reduction viewed with the reduced dims re-inserted: the
                    # rows' row-major order is the same, so the view is the keepdim result.
                    source = node.args[0]
                    plan = plans.get(source)
                    if plan is None or plan.keepdim or tuple(val.shape) != row_shape \
                            or tuple(plan.value.meta["val"].shape) != shape or plan.dims != dims:
                        continue
                    members[node] = _ROW_VIEW
                    stack.append(source)
                    stack.extend(node.users)
                    continue
                if node.target is _EXPAND:
                    source = node.args[0]
                    if tuple(val.shape) != shape or node.kwargs or len(node.args) != 2 \
                            or not isinstance(source, torch.fx.Node) \
                            or not _static(source.meta.get("val")) \
                            or source.meta["val"].dtype != val.dtype:
                        continue
                    members[node] = _ALIAS
                    stack.append(source)
                    stack.extend(node.users)
                    continue
                call = classify(node)
                if call is None:
                    continue
                members[node] = call
            stack.extend(node.all_input_nodes)
            stack.extend(node.users)
        region = _validated(nodes, members, plans, shape, dims, len(regions))
        if region is not None:
            regions.append(region)
            assigned.update(region.nodes)
    return regions


def _validated(nodes, members, plans, shape, dims, index) -> RowRegion | None:
    """The region of `members` after dropping the members that read a value computed from the
    region outside it (e.g. a residual add of a projection of the region's output), repeatedly;
    None when it is not a row pattern or not worth a row kernel."""
    members = dict(members)
    while True:
        depends: set[torch.fx.Node] = set()  # outside nodes that read a member, directly or not
        cut = []
        for node in nodes:
            if node in members:
                if any(inp in depends for inp in node.all_input_nodes):
                    cut.append(node)
                elif members[node] in (_ALIAS, _ROW_VIEW) \
                        and any(u not in members for u in node.users):
                    cut.append(node)  # a view read outside: stays a view of a stored value
                elif members[node] is not _ROW_VIEW and any(
                        inp in members and inp in plans and not plans[inp].keepdim
                        for inp in node.all_input_nodes):
                    cut.append(node)  # reads a keepdim=False result broadcast the numpy way
            elif any(inp in members or inp in depends for inp in node.all_input_nodes):
                depends.add(node)
        if not cut:
            break
        for node in cut:
            del members[node]
    reductions = [n for n in nodes if n in members and n in plans]
    aliases = {n: n.args[0] for n, c in members.items() if c in (_ALIAS, _ROW_VIEW)}

    def resolve(node):
        while node in aliases:
            node = aliases[node]
        return node

    for r in reductions:
        if resolve(plans[r].value) in plans and resolve(plans[r].value) in members:
            return None  # a reduction of a reduction (size-1 reduced dims): not a row pattern

    tail = any(resolve(inp) in plans and resolve(inp) in members for n in members
               if n not in plans and n not in aliases for inp in n.all_input_nodes)
    if not tail and len(reductions) < 2:
        return None  # a reduction with a prologue only: reduction.py's kernel does it
    ordered = [n for n in nodes if n in members]
    return RowRegion(f"row{index}", shape, dims, ordered, [plans[r] for r in reductions],
                     {n: c for n, c in members.items() if c not in (None, _ALIAS, _ROW_VIEW)},
                     aliases)


@dataclass
class _Variant:
    kernel_id: int                   # -1: run the eager fallback
    groups: int
    workgroup: int
    out_strides: list[tuple[int, ...]]


class RowKernel:
    """Callable that replaces a row region. Called with the region's inputs (graph values read
    by members); returns the values of `outputs` (members read outside the region): pointwise
    members first (program.outputs order), then the stored reductions."""

    def __init__(self, region: RowRegion, op_table: dict, name: str):
        self.name = self.__name__ = name
        self.shape, self.dims = region.shape, region.dims
        self.row_shape = _row_shape(region.shape, region.dims)
        members = set(region.nodes)
        reductions = [p.node for p in region.plans]
        assert all(n in region.calls or n in reductions or n in region.aliases
                   for n in region.nodes)

        def resolve(node):
            while node in region.aliases:
                node = region.aliases[node]
            return node
        inputs: list[torch.fx.Node] = []
        input_index: dict[torch.fx.Node, int] = {}

        def input_of(node):
            if node not in input_index:
                input_index[node] = len(inputs)
                inputs.append(node)
            return input_index[node]

        for n in region.nodes:
            for inp in n.all_input_nodes:
                if resolve(inp) not in members:
                    input_of(resolve(inp))
        self.inputs = list(inputs)             # graph values the kernel is called with
        # Reduction results enter the program as pseudo-inputs after the real ones.
        pseudo = {r: len(inputs) + k for k, r in enumerate(reductions)}
        steps, step_index = [], {}
        for n in region.nodes:
            if n in pseudo or n in region.aliases:
                continue
            call = region.calls[n]
            operands, dtypes = [], []
            for operand in call.operands:
                if isinstance(operand, torch.fx.Node):
                    operand = resolve(operand)
                    if operand in step_index:
                        operands.append(("val", step_index[operand]))
                    elif operand in pseudo:
                        operands.append(("in", pseudo[operand]))
                    else:
                        operands.append(("in", input_index[operand]))
                    dtypes.append(operand.meta["val"].dtype)
                else:
                    operands.append(("lit", operand))
                    dtypes.append(n.meta["val"].dtype)
            row = op_table[call.op]
            step_index[n] = len(steps)
            steps.append(glsl.Step(
                op=call.op, expression=row["expressions"]["float32"], operands=operands,
                operand_dtypes=dtypes, scalars=call.scalars, out_dtype=n.meta["val"].dtype,
                bool_result=row["bool"]))
        read_outside = [n for n in region.nodes if any(u not in members for u in n.users)]
        self.stored_pointwise = [n for n in read_outside if n in step_index]
        self.stored_reductions = [r for r in reductions if r in read_outside]
        self.outputs = self.stored_pointwise + self.stored_reductions
        from torch_vk.compiler.fusion import _host_scalar  # fusion imports this module
        self.program = glsl.Program(
            kind=glsl.KIND_FLOAT32, steps=steps,
            input_dtypes=[n.meta["val"].dtype for n in inputs]
            + [r.meta["val"].dtype for r in reductions],
            outputs=[(step_index[n], n.meta["val"].dtype) for n in self.stored_pointwise],
            input_is_scalar=[_host_scalar(n.meta["val"]) for n in inputs]
            + [False] * len(reductions))
        self.pseudo = [pseudo[r] for r in reductions]
        # Per pass: the reduction, its input ('val', step) / ('in', input), the steps it needs.
        self.passes = []
        for plan in region.plans:
            value = resolve(plan.value)
            if value in step_index:
                source, needed = f"v{step_index[value]}", self._closure(steps, step_index[value])
            else:
                source, needed = f"x{input_index[value]}", set()
            self.passes.append((plan, source, needed))
        self.pointwise_meta = [(tuple(n.meta["val"].shape), tuple(n.meta["val"].stride()))
                               for n in self.stored_pointwise]
        self.reduction_meta = [(tuple(r.meta["val"].shape), r.meta["val"].dtype)
                               for r in self.stored_reductions]
        self.tensor_inputs = [j for j in self.program.tensor_inputs() if j < len(inputs)]
        self.scalar_inputs = self.program.scalar_inputs()
        self.fallback = eager_runner(region.nodes, inputs, self.outputs)
        self.variants: dict[Any, _Variant] = {}

    @staticmethod
    def _closure(steps, k: int) -> set[int]:
        needed, stack = set(), [k]
        while stack:
            s = stack.pop()
            if s in needed:
                continue
            needed.add(s)
            stack.extend(ref for tag, ref in steps[s].operands if tag == "val")
        return needed

    def __repr__(self) -> str:
        return (f"RowKernel({self.name}, {len(self.passes)} reductions, "
                f"{len(self.program.steps)} ops)")

    def __call__(self, *inputs: Any) -> tuple[torch.Tensor, ...]:
        tensors = [inputs[j] for j in self.tensor_inputs]
        variant = variant_for(self.variants, tensors, self._specialise)
        if variant.kernel_id < 0:
            return tuple(self.fallback(*inputs))
        device = tensors[0].device if tensors else torch.device("vk")
        outs = [torch.empty_strided(shape, stride, dtype=dtype, device=device)
                for (shape, _), stride, (_, dtype)
                in zip(self.pointwise_meta, variant.out_strides, self.program.outputs)]
        results = [torch.empty(shape, dtype=dtype, device=device)
                   for shape, dtype in self.reduction_meta]
        if variant.groups:
            values = [inputs[j].item() for j in self.scalar_inputs]
            _native()._launch_kernel(variant.kernel_id, outs + results + tensors, [],
                                     [float(v) for v in values], variant.groups,
                                     variant.workgroup)
        return (*outs, *results)

    def _specialise(self, tensors: Sequence[torch.Tensor]) -> _Variant:
        shape = self.shape
        out_strides = [_output_strides(ms, st, ms) for ms, st in self.pointwise_meta]
        try:
            traced = all(tuple(torch.broadcast_shapes(t.shape, shape)) == shape for t in tensors)
        except RuntimeError:
            traced = False
        if not traced:
            return _Variant(-1, 0, 0, out_strides)
        kept = [d for d in range(len(shape)) if d not in self.dims]
        rows, reduced = 1, 1
        for d in kept:
            rows *= shape[d]
        for d in self.dims:
            reduced *= shape[d]
        if rows == 0:
            return _Variant(0, 0, 0, out_strides)  # nothing to compute or store
        if reduced == 0 and any(plan.op != "sum" for plan, _, _ in self.passes):
            return _Variant(-1, 0, 0, out_strides)  # eager amax / amin raise on empty rows
        if too_few_rows(rows, reduced):
            return _Variant(-1, 0, 0, out_strides)
        strides = [_broadcast_strides(ms, st, shape)
                   for (ms, _), st in zip(self.pointwise_meta, out_strides)]
        strides += [_broadcast_strides(t.shape, t.stride(), shape) for t in tensors]
        if rows * reduced > glsl.MAX_INDEX or any(
                glsl.max_offset(shape, st) > glsl.MAX_INDEX for st in strides):
            return _Variant(-1, 0, 0, out_strides)
        perm = kept + list(self.dims)
        sizes_p = [shape[d] for d in perm]
        strides_p = [[st[d] for d in perm] for st in strides]
        n_addresses = len(strides) + len(self.reduction_meta)
        indirect = _native()._generated_args_indirect(n_addresses, 0, len(self.scalar_inputs))
        workgroup = _workgroup_for(reduced)
        passes = len(self.passes) + (1 if self.program.outputs else 0)
        device = tensors[0].device if tensors else torch.device("vk")
        if not within_loop_budget(device, rows, reduced, workgroup, passes):
            return _Variant(-1, 0, 0, out_strides)
        source = self.generate(sizes_p, strides_p, rows, reduced, workgroup, indirect)
        _dump_source(f"{self.name}_{len(self.variants)}.comp", source)
        kernel_id = _native()._compile_kernel(source, self.name)
        return _Variant(kernel_id, min(rows, MAX_GROUPS), workgroup, out_strides)

    def generate(self, sizes: Sequence[int], strides: Sequence[Sequence[int]], rows: int,
                 reduced: int, workgroup: int, indirect: bool) -> str:
        """Kernel source. `sizes`: S permuted to (kept dims, reduced dims); strides (aligned
        with sizes): the stored pointwise members', then the tensor inputs'. Argument block:
        those members' addresses, the stored reductions' (contiguous, `rows` elements), the
        tensor inputs'; then the host scalars as float32."""
        program = self.program
        sizes, strides = glsl.coalesce(sizes, strides)
        n_out = len(program.outputs)
        first_input = n_out + len(self.reduction_meta)
        members = glsl._arg_members(len(strides) + len(self.reduction_meta), 0,
                                    len(self.scalar_inputs))
        lines, block = glsl.kernel_prologue(self.name, glsl.KIND_FLOAT32, members, indirect,
                                            [f"shared T partial[{workgroup}];"])
        lines += [
            f"  const uint rows = {rows}u;",
            f"  const uint reduced = {reduced}u;",
            "  uint lid = gl_LocalInvocationID.x;",
            # `row` is uniform in the workgroup: the barriers are in uniform control flow.
            "  for (uint row = gl_WorkGroupID.x; row < rows; row += gl_NumWorkGroups.x) {",
        ]
        value_inputs = {j: f"red{k}" for k, j in enumerate(self.pseudo)}
        lines += [f"    T red{k} = T(0);" for k in range(len(self.passes))]
        stored = {r: slot for slot, r in enumerate(self.stored_reductions)}
        for k, (plan, source, needed) in enumerate(self.passes):
            combine = _COMBINE[plan.op]
            lines += [
                f"    // pass {k}: {plan.node.name}",
                f"    T acc{k} = {_IDENTITY[plan.op]};",
                f"    for (uint j = lid; j < reduced; j += {workgroup}u) {{",
                "      T reduced_value;",
                "      {",
            ]
            lines += glsl._element_lines(program, sizes, strides, "row * reduced + j", block,
                                         "        ", value_inputs, first_input,
                                         only_steps=needed)
            lines += [
                f"        reduced_value = {source};",
                "      }",
                f"      acc{k} = {combine.format(a=f'acc{k}', b='reduced_value')};",
                "    }",
                f"    partial[lid] = acc{k};",
                "    barrier();",
                f"    for (uint s = {workgroup // 2}u; s > 0u; s >>= 1) {{",
                "      if (lid < s) partial[lid] = "
                f"{combine.format(a='partial[lid]', b='partial[lid + s]')};",
                "      barrier();",
                "    }",
            ]
            if plan.op == "sum" and plan.mean:
                total = "TVK_F32_NAN" if reduced == 0 else \
                    f"partial[0] * {glsl.literal(1.0 / reduced, glsl.KIND_FLOAT32)}"
            else:
                total = "partial[0]"
            dtype = plan.node.meta["val"].dtype
            rounded = glsl.round_to_dtype(total, dtype, glsl.KIND_FLOAT32, False)
            lines.append(f"    red{k} = {rounded};")
            if plan.node in stored:
                slot = n_out + stored[plan.node]
                lines.append(f"    if (lid == 0u) STORE_T({block}.addr[{slot}], "
                             f"{glsl.DTYPE_CODE[dtype]}, int(row), red{k});")
            lines.append("    barrier();  // partial[] is reused")
        if n_out:
            row_values = {o for o, (_, _) in enumerate(program.outputs)
                          if self.pointwise_meta[o][0] != self.shape}
            lines += [
                "    // last pass: every step, stores",
                f"    for (uint j = lid; j < reduced; j += {workgroup}u) {{",
            ]
            lines += glsl._element_lines(program, sizes, strides, "row * reduced + j", block,
                                         "      ", value_inputs, first_input,
                                         store_guards={o: "j == 0u" for o in row_values})
            lines.append("    }")
        lines += ["  }", "}", ""]
        return "\n".join(lines)
