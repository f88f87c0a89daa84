"""Groups chains of pointwise ATen nodes into fused kernels and rewrites the FX graph.

A group is a set of pointwise nodes of one compute kind that share one output shape, so one
generated kernel evaluates all of them per element. Each node joins the group(s) of its
pointwise inputs when that keeps the graph acyclic (no path leaves a group and comes back
through a node outside it); several input groups are merged. Values used outside the group
are the kernel's outputs; everything else stays in registers.

Single-node groups stay plain ATen calls: the eager kernel is the same one dispatch.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from torch_vk.compiler import glsl
from torch_vk.compiler.kernel import FusedKernel
from torch_vk.compiler.pointwise import PointwiseCall, lower


@dataclass
class Group:
    gid: int
    kind: int
    shape_key: tuple[str, ...]
    shape: tuple[Any, ...]
    nodes: list[torch.fx.Node] = field(default_factory=list)


def _tensor_meta(node: Any) -> torch.Tensor | None:
    if not isinstance(node, torch.fx.Node):
        return None
    val = node.meta.get("val")
    return val if isinstance(val, torch.Tensor) else None


def _host_scalar(val: torch.Tensor | None) -> bool:
    """A 0-dim CPU tensor (a scalar computed on the host, e.g. an optimizer's bias correction):
    the fused kernel takes its value as a push-constant argument, as the eager kernels do."""
    return (val is not None and val.device.type == "cpu" and val.dim() == 0
            and (glsl.compute_kind(val.dtype) is not None))


def _fusable_tensor(val: torch.Tensor | None) -> bool:
    return (val is not None and val.device.type == "vk" and val.layout == torch.strided
            and glsl.compute_kind(val.dtype) is not None and val.dtype != torch.float64)


# Kind of nodes that only combine truth values (bool in, bool out): they compute the same in
# every kind, so they join a group of any kind.
ANY_KIND = -1
_LOGICAL_OF_BITWISE = {"bitwise_not": "logical_not", "bitwise_and": "logical_and",
                       "bitwise_or": "logical_or", "bitwise_xor": "logical_xor"}
_TRUTH_OPS = {"logical_not", "logical_and", "logical_or", "logical_xor"}


def _kinds_compatible(a: int, b: int) -> bool:
    return a == b or a == ANY_KIND or b == ANY_KIND


def _call_kind(node: torch.fx.Node, call: PointwiseCall, op_table: dict) -> int | None:
    """Compute kind of `call` (ANY_KIND for pure truth-value ops), or None when the node cannot
    be fused. Bitwise ops on bool tensors become the equivalent logical ops."""
    out = _tensor_meta(node)
    if not _fusable_tensor(out):
        return None
    operand_vals = []
    for operand in call.operands:
        if isinstance(operand, torch.fx.Node):
            val = _tensor_meta(operand)
            if not (_fusable_tensor(val) or _host_scalar(val)):
                return None
            operand_vals.append(val)
        else:
            operand_vals.append(operand)
    all_bool = out.dtype == torch.bool and all(
        isinstance(v, torch.Tensor) and v.dtype == torch.bool for v in operand_vals)
    if all_bool and call.op in _LOGICAL_OF_BITWISE:
        call.op = _LOGICAL_OF_BITWISE[call.op]
        call.bool_result = True
    if all_bool and call.op in _TRUTH_OPS:
        return ANY_KIND
    if call.kind_from_inputs:
        dtype = operand_vals[0].dtype if isinstance(operand_vals[0], torch.Tensor) else None
        if dtype is None:
            return None
        if len(operand_vals) == 2:
            dtype = torch.result_type(operand_vals[0], operand_vals[1])
    else:
        dtype = out.dtype
    kind = glsl.compute_kind(dtype)
    if kind is None or kind == glsl.KIND_FLOAT64:
        return None
    row = op_table.get(call.op)
    if row is None or glsl.KIND_NAMES[kind] not in row["expressions"]:
        return None
    if len(call.operands) != row["arity"]:
        return None
    return kind


class _Partition:
    def __init__(self, graph: torch.fx.Graph, op_table: dict):
        self.op_table = op_table
        self.parent: dict[int, int] = {}
        self.groups: dict[int, Group] = {}
        self.group_of: dict[torch.fx.Node, int] = {}
        self.calls: dict[torch.fx.Node, PointwiseCall] = {}
        # Groups each node depends on (transitively), as group ids (resolve with find()).
        self.reach: dict[torch.fx.Node, set[int]] = {}
        for node in graph.nodes:
            self._visit(node)

    def find(self, gid: int) -> int:
        while self.parent[gid] != gid:
            self.parent[gid] = self.parent[self.parent[gid]]
            gid = self.parent[gid]
        return gid

    def _reach_of(self, node: torch.fx.Node) -> set[int]:
        return {self.find(g) for g in self.reach.get(node, ())}

    def _acyclic(self, gids: set[int], node: torch.fx.Node) -> bool:
        members = {m for g in gids for m in self.groups[g].nodes} | {node}
        for member in members:
            for inp in member.all_input_nodes:
                if inp not in members and self._reach_of(inp) & gids:
                    return False
        return True

    def _absorbable(self, group: Group, node: torch.fx.Node) -> bool:
        """A group of a smaller shape that only `node` uses can be recomputed per element of
        `node`'s shape: its values broadcast to it (numpy rules), and nothing else reads them."""
        small = group.shape
        big = node.meta["val"].shape
        if not all(isinstance(s, int) for s in tuple(small) + tuple(big)) or len(small) > len(big):
            return False
        for s, b in zip(reversed(small), reversed(big)):
            if s != b and s != 1:
                return False
        members = set(group.nodes)
        return all(user in members or user is node for m in group.nodes for user in m.users)

    def _visit(self, node: torch.fx.Node) -> None:
        inputs = node.all_input_nodes
        reach: set[int] = set()
        for inp in inputs:
            reach |= self._reach_of(inp)
        call = lower(node)
        kind = _call_kind(node, call, self.op_table) if call is not None else None
        if kind is None:
            self.reach[node] = reach
            return
        shape_key = tuple(str(s) for s in node.meta["val"].shape)
        candidates = set()
        for inp in call.operands:
            if isinstance(inp, torch.fx.Node) and inp in self.group_of:
                g = self.groups[self.find(self.group_of[inp])]
                if not _kinds_compatible(g.kind, kind):
                    continue
                if g.shape_key == shape_key or self._absorbable(g, node):
                    candidates.add(g.gid)
        # Merging is only valid without a cycle: no node outside the merged set may depend on
        # a member of it while a member (or `node`) depends on that node. Every such path
        # leaves through an input of a member, so checking the members' outside inputs is
        # exact. Fall back to the largest single candidate that is valid, or to none.
        if candidates and not self._acyclic(candidates, node):
            valid = [g for g in sorted(candidates) if self._acyclic({g}, node)]
            candidates = {valid[0]} if valid else set()
        concrete = {self.groups[g].kind for g in candidates} | {kind}
        concrete.discard(ANY_KIND)
        if len(concrete) > 1:  # e.g. a float group and an int group under one truth op
            candidates = {min(candidates)}
            concrete = {self.groups[min(candidates)].kind, kind} - {ANY_KIND}
        if candidates:
            target = min(candidates)
            if concrete:
                self.groups[target].kind = concrete.pop()
            self.groups[target].shape_key = shape_key
            self.groups[target].shape = tuple(node.meta["val"].shape)
            for gid in candidates - {target}:
                self.parent[gid] = target
                self.groups[target].nodes.extend(self.groups.pop(gid).nodes)
        else:
            target = len(self.parent)
            self.parent[target] = target
            self.groups[target] = Group(target, kind, shape_key, tuple(node.meta["val"].shape))
        self.groups[target].nodes.append(node)
        self.group_of[node] = target
        self.calls[node] = call
        reach.add(target)
        self.reach[node] = reach

    def result(self) -> list[Group]:
        out = []
        for gid, group in self.groups.items():
            if group.kind == ANY_KIND:
                group.kind = glsl.KIND_INT32
            order = {n: i for i, n in enumerate(group.nodes[0].graph.nodes)}
            group.nodes.sort(key=lambda n: order[n])
            out.append(group)
        return out


def _build_kernel(group: Group, calls: dict, op_table: dict, index: int,
                  writes_into: dict[torch.fx.Node, torch.fx.Node]):
    members = set(group.nodes)
    inputs: list[torch.fx.Node] = []
    input_index: dict[torch.fx.Node, int] = {}
    step_index: dict[torch.fx.Node, int] = {}
    steps = []
    for node in group.nodes:
        call = calls[node]
        operands, dtypes = [], []
        for operand in call.operands:
            if isinstance(operand, torch.fx.Node) and operand in members:
                operands.append(("val", step_index[operand]))
                dtypes.append(operand.meta["val"].dtype)
            elif isinstance(operand, torch.fx.Node):
                if operand not in input_index:
                    input_index[operand] = len(inputs)
                    inputs.append(operand)
                operands.append(("in", input_index[operand]))
                dtypes.append(operand.meta["val"].dtype)
            else:
                operands.append(("lit", operand))
                dtypes.append(node.meta["val"].dtype)
        for geometry in call.extra.get("geometry", []):
            if isinstance(geometry, torch.fx.Node) and geometry not in members \
                    and geometry not in input_index:
                input_index[geometry] = len(inputs)
                inputs.append(geometry)
        row = op_table[call.op]
        step_index[node] = len(steps)
        steps.append(glsl.Step(
            op=call.op, expression=row["expressions"][glsl.KIND_NAMES[group.kind]],
            operands=operands, operand_dtypes=dtypes, scalars=call.scalars,
            out_dtype=node.meta["val"].dtype, bool_result=row["bool"]))
    outputs = [n for n in group.nodes if any(u not in members for u in n.users)]
    out_into = []
    for n in outputs:
        dst = writes_into.get(n)
        if dst is not None and dst not in input_index:
            input_index[dst] = len(inputs)
            inputs.append(dst)
        out_into.append(None if dst is None else input_index[dst])
    program = glsl.Program(
        kind=group.kind, steps=steps, input_dtypes=[n.meta["val"].dtype for n in inputs],
        outputs=[(step_index[n], n.meta["val"].dtype) for n in outputs],
        input_is_scalar=[_host_scalar(n.meta["val"]) for n in inputs])
    out_meta = []
    for n in outputs:
        val = n.meta["val"]
        static = all(isinstance(s, int) for s in val.shape) and \
            all(isinstance(s, int) for s in val.stride())
        out_meta.append((tuple(val.shape), tuple(val.stride())) if static else (None, None))
    name = f"fused_{index}_" + "_".join(dict.fromkeys(calls[n].op for n in group.nodes))[:80]
    fallback = _eager_runner(group.nodes, inputs, outputs)
    kernel = FusedKernel(name, program, out_meta, fallback, out_into)
    return kernel, inputs, outputs


def _eager_runner(nodes, inputs, outputs):
    """Runs the group's ATen calls one by one (geometries the generated kernel does not cover)."""

    def run(*tensors):
        env = dict(zip(inputs, tensors))

        def load(arg):
            return torch.fx.node.map_arg(arg, lambda n: env[n])

        for node in nodes:
            env[node] = node.target(*load(node.args), **load(node.kwargs))
        return tuple(env[n] for n in outputs)

    return run


def _writes_into_inputs(graph: torch.fx.Graph, group_of: dict) -> dict:
    """copy_(input, value) nodes (input mutations kept in the graph by AOTAutograd) whose value
    a fused kernel can store straight into the input: value is a group output used only by
    the copy_, of the same dtype and shape, and nothing outside the group reads the input
    (so writing it early, inside the kernel that also reads it element by element, is safe).
    Returns {copy_ node: (value node, input node)}."""
    found = {}
    for node in graph.nodes:
        if node.op != "call_function" or node.target is not torch.ops.aten.copy_.default:
            continue
        if len(node.args) != 2 or node.kwargs:
            continue
        dst, src = node.args
        if not isinstance(src, torch.fx.Node) or src not in group_of:
            continue
        if not isinstance(dst, torch.fx.Node) or dst.op != "placeholder":
            continue
        group = group_of[src]
        members = set(group.nodes)
        if any(u is not node and u not in members for u in src.users):
            continue
        if any(u is not node and u not in members for u in dst.users):
            continue
        if any(v[1] is dst for v in found.values()):
            continue
        dst_val, src_val = dst.meta.get("val"), src.meta.get("val")
        if not (isinstance(dst_val, torch.Tensor) and isinstance(src_val, torch.Tensor)):
            continue
        if dst_val.dtype != src_val.dtype or dst_val.device != src_val.device \
                or tuple(dst_val.shape) != tuple(src_val.shape):
            continue
        found[node] = (src, dst)
    return found


def fuse_pointwise(gm: torch.fx.GraphModule, op_table: dict) -> tuple[torch.fx.GraphModule, int]:
    """Returns a new GraphModule in which every group of two or more pointwise nodes is one
    FusedKernel call, and the number of such kernels."""
    partition = _Partition(gm.graph, op_table)
    groups = [g for g in partition.result() if len(g.nodes) >= 2]
    if not groups:
        return gm, 0
    group_of = {n: g for g in groups for n in g.nodes}
    absorbed = _writes_into_inputs(gm.graph, group_of)
    kernels = {}
    for i, g in enumerate(groups):
        writes_into = {src: dst for copy, (src, dst) in absorbed.items() if group_of[src] is g}
        kernels[g.gid] = _build_kernel(g, partition.calls, op_table, i, writes_into)

    new_graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    done: set[Any] = set()

    def emit(item):
        # item: a node outside every group, or a Group. Dependencies are emitted first, so
        # uses of a group's outputs that preceded its last member in the old order move after it.
        key = item.gid if isinstance(item, Group) else item
        if key in done:
            return
        if isinstance(item, Group):
            _, inputs, outputs = kernels[item.gid]
            for inp in inputs:
                emit(group_of.get(inp, inp))
            kernel = kernels[item.gid][0]
            call = new_graph.call_function(kernel, tuple(env[i] for i in inputs))
            call.meta["val"] = tuple(o.meta["val"] for o in outputs)
            for k, out in enumerate(outputs):
                item_node = new_graph.call_function(operator.getitem, (call, k))
                item_node.meta = dict(out.meta)
                env[out] = item_node
        elif item in absorbed:
            # copy_(input, fused value): the kernel already wrote the value into `input`.
            src, dst = absorbed[item]
            emit(group_of[src])
            env[item] = env[dst]
        else:
            for inp in item.all_input_nodes:
                emit(group_of.get(inp, inp))
            env[item] = new_graph.node_copy(item, lambda n: env[n])
        done.add(key)

    for node in gm.graph.nodes:
        emit(group_of.get(node, node))
    new_graph.lint()
    return torch.fx.GraphModule(gm, new_graph), len(groups)
