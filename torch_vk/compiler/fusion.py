"""Groups chains of pointwise ATen nodes into fused kernels and rewrites the FX graph.

A group is a set of pointwise nodes of one compute kind that share one output shape, so one
generated kernel evaluates all of them per element. Each node joins the group(s) of its
pointwise inputs when that keeps the graph acyclic (no path leaves a group and comes back
through a node outside it); several input groups are merged. Values used outside the group
are the kernel's outputs; everything else stays in registers.

Single-node groups stay plain ATen calls: the eager kernel is the same one dispatch.

A group that reads the result of a matrix product (mm / addmm, possibly through a row-major
reshape) element by element, in the product's own index space, becomes that product's GEMM
epilogue (kernel.GemmEpilogueKernel): one dispatch computes the product and the group, and the
product only reaches memory when something else reads it. This holds for single-node groups
too (a residual add after a projection).

A group (of any size) whose value a sum / mean / amax / amin reduces becomes, together with
that reduction, one ReductionKernel (torch_vk.compiler.reduction): the group is its prologue,
evaluated per element of the reduced input, and only the values that other nodes read reach
memory. GEMM epilogues are chosen first; a group feeds at most one fused reduction.

Before any of that, row regions (torch_vk.compiler.rows) are taken out of the graph: reductions
whose results pointwise work reads back over the reduced dims (softmax, layer norm, RMSNorm by
hand, and their backward), together with that pointwise work and the pointwise work feeding
them, each become one RowKernel; the groups are formed from the remaining nodes. When running
a region as one call would close a cycle with the groups around it, the graph is fused again
without row regions.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from torch_vk.compiler import glsl, reduction, rows
from torch_vk.compiler.kernel import FusedKernel, GemmEpilogueKernel, eager_runner
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
    def __init__(self, graph: torch.fx.Graph, op_table: dict,
                 excluded: frozenset[torch.fx.Node] = frozenset()):
        """excluded: nodes computed elsewhere (row kernels); they join no group."""
        self.op_table = op_table
        self.excluded = excluded
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
        call = lower(node) if node not in self.excluded else None
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


@dataclass
class Epilogue:
    """A group fused into the store of a matrix product."""
    product: torch.fx.Node            # the mm / addmm node
    value: torch.fx.Node              # the group's input: `product` or a reshape of it
    store_product: bool               # something outside the group reads the product


_RESHAPES = {torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default,
             torch.ops.aten.reshape.default}
_PRODUCTS = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default}
_EPILOGUE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _static_shape(val: torch.Tensor) -> bool:
    return all(isinstance(s, int) for s in tuple(val.shape) + tuple(val.stride()))


def _product_of(value: torch.fx.Node) -> torch.fx.Node | None:
    """The mm / addmm whose result `value` is (directly or through a reshape that keeps the
    row-major order), when it qualifies for an epilogue."""
    product = value
    if value.op == "call_function" and value.target in _RESHAPES:
        product = value.args[0]
    if not isinstance(product, torch.fx.Node) or product.op != "call_function" \
            or product.target not in _PRODUCTS:
        return None
    val, seen = _tensor_meta(product), _tensor_meta(value)
    if val is None or seen is None or val.dim() != 2 or not _static_shape(val) \
            or not _static_shape(seen) or val.device.type != "vk" \
            or val.dtype not in _EPILOGUE_DTYPES or not val.is_contiguous() \
            or not seen.is_contiguous() or seen.numel() != val.numel():
        return None
    if product.target is torch.ops.aten.addmm.default:
        bias, mat1, mat2 = product.args[:3]
        extra = dict(zip(("beta", "alpha"), product.args[3:]), **product.kwargs)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in extra.values()):
            return None
        bias_val = _tensor_meta(bias)
        if bias_val is None or bias_val.dtype != val.dtype or bias_val.device.type != "vk" \
                or bias_val.dim() > 2:
            return None
    else:
        mat1, mat2 = product.args[:2]
    for mat in (mat1, mat2):
        mat_val = _tensor_meta(mat)
        if mat_val is None or mat_val.dtype != val.dtype or mat_val.dim() != 2:
            return None
    return product


def _depends_on(node: torch.fx.Node, target: torch.fx.Node, order: dict) -> bool:
    """Whether `node` reads `target`'s value, directly or through other nodes."""
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if current is target:
            return True
        if current in seen or order[current] < order[target]:
            continue
        seen.add(current)
        stack.extend(current.all_input_nodes)
    return False


def _find_epilogues(groups: list[Group], partition: "_Partition", graph: torch.fx.Graph,
                    writes_into: dict) -> dict[int, Epilogue]:
    order = {n: i for i, n in enumerate(graph.nodes)}
    claimed: set[torch.fx.Node] = set()
    found: dict[int, Epilogue] = {}
    for group in groups:
        if group.kind != glsl.KIND_FLOAT32 or not all(isinstance(s, int) for s in group.shape):
            continue
        members = set(group.nodes)
        if any(src in members for src, _ in writes_into.values()):
            continue  # a store into a graph input could race with the product's reads
        outside = []
        for node in group.nodes:
            for inp in node.all_input_nodes:
                if inp not in members and inp not in outside:
                    outside.append(inp)
        for value in outside:
            product = _product_of(value)
            if product is None or product in claimed:
                continue
            if tuple(value.meta["val"].shape) != tuple(group.shape):
                continue  # read broadcast, not element by element
            if partition.find(group.gid) in partition._reach_of(product):
                continue  # the product reads the group's values
            if any(_depends_on(other, product, order) for other in outside if other is not value):
                continue  # another input of the group is computed from the product
            # The product reaches memory when anything outside the group reads it.
            store = any(u is not value and u not in members for u in product.users) or \
                any(u not in members for u in value.users)
            found[group.gid] = Epilogue(product, value, store)
            claimed.add(product)
            break
    return found


def _find_reductions(graph: torch.fx.Graph, partition: "_Partition", epilogues: dict,
                     absorbed: dict) -> dict[int, reduction.ReductionPlan]:
    """Reductions (reduction.plan_of) whose input is a value of a float pointwise group, keyed
    by that group's id: the group and the reduction become one ReductionKernel. A group feeds
    at most one fused reduction (another reduction of its values reads them from memory, and
    stays an eager kernel); GEMM-epilogue groups and groups that store into graph inputs keep
    their own kernels. The kernel evaluates every member once per element of the group's index
    space, so the reduction's input must span that whole space (not a broadcast member)."""
    stores_into_input = {partition.find(partition.group_of[src]) for src, _ in absorbed.values()}
    found: dict[int, reduction.ReductionPlan] = {}
    for node in graph.nodes:
        plan = reduction.plan_of(node) if node not in partition.excluded else None
        if plan is None or plan.value not in partition.group_of:
            continue
        gid = partition.find(partition.group_of[plan.value])
        group = partition.groups[gid]
        if gid in found or gid in epilogues or gid in stores_into_input:
            continue
        if group.kind != glsl.KIND_FLOAT32 or tuple(group.shape) != tuple(plan.value.meta["val"].shape):
            continue
        if not all(_static_shape(n.meta["val"]) for n in group.nodes):
            continue
        found[gid] = plan
    return found


def _make_program(group: Group, calls: dict, op_table: dict,
                  writes_into: dict[torch.fx.Node, torch.fx.Node],
                  fused_reader: torch.fx.Node | None = None):
    """The group's program. Its outputs are the members read outside the group (`fused_reader`,
    a reduction computed by the same kernel, does not count as a reader). Returns (program,
    inputs, input_index, step_index, outputs, out_into, out_meta)."""
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
    outputs = [n for n in group.nodes
               if any(u not in members and u is not fused_reader for u in n.users)]
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
    return program, inputs, input_index, step_index, outputs, out_into, out_meta


def _kernel_name(prefix: str, group: Group, calls: dict, index: int) -> str:
    return f"{prefix}_{index}_" + "_".join(dict.fromkeys(calls[n].op for n in group.nodes))[:80]


def _build_reduction_kernel(group: Group, calls: dict, op_table: dict, index: int,
                            plan: reduction.ReductionPlan):
    program, inputs, _, step_index, outputs, _, out_meta = _make_program(
        group, calls, op_table, {}, plan.node)
    name = _kernel_name("reduce", group, calls, index) + ("_mean" if plan.mean else f"_{plan.op}")
    kernel = reduction.ReductionKernel(
        name, program, step_index[plan.value], plan, out_meta,
        reduction.reduction_eager_runner(group.nodes, inputs, outputs, plan))
    return kernel, inputs, outputs + [plan.node]


def _build_kernel(group: Group, calls: dict, op_table: dict, index: int,
                  writes_into: dict[torch.fx.Node, torch.fx.Node],
                  epilogue: Epilogue | None = None):
    program, inputs, input_index, _, outputs, out_into, out_meta = _make_program(
        group, calls, op_table, writes_into)
    name = _kernel_name("fused", group, calls, index)
    if epilogue is not None:
        product = epilogue.product
        is_addmm = product.target is torch.ops.aten.addmm.default
        extra = dict(zip(("beta", "alpha"), product.args[3:]), **product.kwargs) if is_addmm else {}
        kernel = GemmEpilogueKernel(
            "gemm_" + name, program, input_index[epilogue.value], tuple(group.shape), out_meta,
            float(extra.get("beta", 1)) if is_addmm else 0.0, float(extra.get("alpha", 1)),
            product.meta["val"].dtype, epilogue.store_product,
            _epilogue_eager_runner(epilogue, group.nodes, inputs, outputs))
        return kernel, inputs, outputs
    fallback = eager_runner(group.nodes, inputs, outputs)
    kernel = FusedKernel(name, program, out_meta, fallback, out_into,
                         device=outputs[0].meta["val"].device if outputs else None)
    return kernel, inputs, outputs


def _epilogue_eager_runner(epilogue: Epilogue, nodes, inputs, outputs):
    """GemmEpilogueKernel's fallback: the product and the group's ATen calls one by one."""
    group = eager_runner(nodes, inputs, outputs)
    product, value = epilogue.product, epilogue.value
    slot = inputs.index(value)

    def run(mat1, mat2, bias, *tensors):
        if product.target is torch.ops.aten.addmm.default:
            result = product.target(bias, mat1, mat2, *product.args[3:], **product.kwargs)
        else:
            result = product.target(mat1, mat2)
        seen = result if value is product else value.target(result, *value.args[1:])
        outs = group(*tensors[:slot], seen, *tensors[slot + 1:])
        return outs + ((result,) if epilogue.store_product else ())

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


@dataclass
class FusionCounts:
    kernels: int = 0          # FusedKernel and GemmEpilogueKernel calls
    gemm_epilogues: int = 0   # of those, GEMM epilogues
    reductions: int = 0       # ReductionKernel calls (a group and a reduction of its values)
    row_kernels: int = 0      # RowKernel calls (reductions and the pointwise work around them)


def _float_call(node: torch.fx.Node, op_table: dict) -> PointwiseCall | None:
    """The node's PointwiseCall when a float32-kind generated kernel can evaluate it."""
    call = lower(node)
    if call is None or _call_kind(node, call, op_table) != glsl.KIND_FLOAT32:
        return None
    return call


def _units_acyclic(graph: torch.fx.Graph, unit_of: dict) -> bool:
    """Whether running each unit (a group or a row region, keyed in unit_of by its members;
    other nodes are their own unit) as one call keeps the graph acyclic."""
    key = {n: unit_of[n].gid if n in unit_of else n for n in graph.nodes}
    edges: dict[Any, set] = {k: set() for k in key.values()}
    indegree: dict[Any, int] = {k: 0 for k in edges}
    for node in graph.nodes:
        for inp in node.all_input_nodes:
            a, b = key[inp], key[node]
            if a != b and b not in edges[a]:
                edges[a].add(b)
                indegree[b] += 1
    ready = [k for k, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        k = ready.pop()
        seen += 1
        for b in edges[k]:
            indegree[b] -= 1
            if indegree[b] == 0:
                ready.append(b)
    return seen == len(edges)


def fuse_pointwise(gm: torch.fx.GraphModule, op_table: dict,
                   row_kernels: bool = True) -> tuple[torch.fx.GraphModule, FusionCounts]:
    """Returns a new GraphModule in which every group of two or more pointwise nodes is one
    FusedKernel call, every group that reads a matrix product element by element is that
    product's GemmEpilogueKernel, and every group whose value a sum / mean / amax / amin
    reduces is one ReductionKernel with that reduction, every row region (rows.py: keepdim
    reductions and the pointwise work that reads them) is one RowKernel; and the counts of
    those kernels. row_kernels=False: no row regions (used when they would form a cycle with
    the groups around them)."""
    regions = rows.find_row_regions(gm.graph, lambda n: _float_call(n, op_table)) \
        if row_kernels else []
    region_of = {n: r for r in regions for n in r.nodes}
    partition = _Partition(gm.graph, op_table, frozenset(region_of))
    every_group = partition.result()
    group_of = {n: g for g in every_group for n in g.nodes if len(g.nodes) >= 2}
    absorbed = _writes_into_inputs(gm.graph, group_of)
    epilogues = _find_epilogues(every_group, partition, gm.graph, absorbed)
    reductions = _find_reductions(gm.graph, partition, epilogues, absorbed)
    groups = [g for g in every_group
              if len(g.nodes) >= 2 or g.gid in epilogues or g.gid in reductions]
    if not groups and not regions:
        return gm, FusionCounts()
    group_of = {n: g for g in groups for n in g.nodes}
    if regions and not _units_acyclic(gm.graph, {**group_of, **region_of}):
        return fuse_pointwise(gm, op_table, row_kernels=False)
    unit_of = {**group_of, **region_of}
    kernels = {}
    for r in regions:
        kernel = rows.RowKernel(r, op_table, f"row_{r.gid}_" + "_".join(
            dict.fromkeys(str(n.target).split(".")[-2] for n in r.nodes))[:80])
        kernels[r.gid] = (kernel, kernel.inputs, kernel.outputs)
    for i, g in enumerate(groups):
        if g.gid in reductions:
            kernels[g.gid] = _build_reduction_kernel(g, partition.calls, op_table, i,
                                                     reductions[g.gid])
            continue
        writes_into = {src: dst for copy, (src, dst) in absorbed.items() if group_of[src] is g}
        kernels[g.gid] = _build_kernel(g, partition.calls, op_table, i, writes_into,
                                       epilogues.get(g.gid))
    # Reduction nodes computed by their group's kernel.
    reduction_group = {plan.node: g for g in groups if (plan := reductions.get(g.gid))}
    # Products computed inside an epilogue; reshapes of them that only the group read.
    product_group = {e.product: g for g in groups if (e := epilogues.get(g.gid))}
    dropped = set()
    for g in groups:
        e = epilogues.get(g.gid)
        if e is not None and e.value is not e.product and all(u in g.nodes for u in e.value.users):
            dropped.add(e.value)

    new_graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    done: set[Any] = set()

    def emit(item):
        # item: a node outside every group, or a Group. Dependencies are emitted first, so
        # uses of a group's outputs that preceded its last member in the old order move after it.
        key = item.gid if isinstance(item, (Group, rows.RowRegion)) else item
        if key in done:
            return
        if isinstance(item, rows.RowRegion):
            kernel, inputs, outputs = kernels[item.gid]
            for inp in inputs:
                emit(unit_of.get(inp, inp))
            call = new_graph.call_function(kernel, tuple(env[i] for i in inputs))
            call.meta["val"] = tuple(o.meta["val"] for o in outputs)
            for k, out in enumerate(outputs):
                item_node = new_graph.call_function(operator.getitem, (call, k))
                item_node.meta = dict(out.meta)
                env[out] = item_node
        elif isinstance(item, Group):
            kernel, inputs, outputs = kernels[item.gid]
            epilogue = epilogues.get(item.gid)
            if epilogue is None:
                for inp in inputs:
                    emit(unit_of.get(inp, inp))
                args = tuple(env[i] for i in inputs)
            else:
                product = epilogue.product
                operands = list(product.args[:3]) if product.target is torch.ops.aten.addmm.default \
                    else [None, *product.args[:2]]
                for inp in [o for o in operands if o is not None] + \
                        [i for i in inputs if i is not epilogue.value]:
                    emit(unit_of.get(inp, inp))
                bias, mat1, mat2 = (None if o is None else env[o] for o in operands)
                args = (mat1, mat2, bias) + tuple(
                    None if i is epilogue.value else env[i] for i in inputs)
            call = new_graph.call_function(kernel, args)
            results = list(outputs) + ([epilogue.product] if epilogue and epilogue.store_product
                                       else [])
            call.meta["val"] = tuple(o.meta["val"] for o in results)
            for k, out in enumerate(results):
                item_node = new_graph.call_function(operator.getitem, (call, k))
                item_node.meta = dict(out.meta)
                env[out] = item_node
        elif item in product_group:
            emit(product_group[item])
            return
        elif item in reduction_group:
            emit(reduction_group[item])
            return
        elif item in dropped:
            done.add(key)
            return
        elif item in absorbed:
            # copy_(input, fused value): the kernel already wrote the value into `input`.
            src, dst = absorbed[item]
            emit(group_of[src])
            env[item] = env[dst]
        else:
            for inp in item.all_input_nodes:
                emit(unit_of.get(inp, inp))
            env[item] = new_graph.node_copy(item, lambda n: env[n])
        done.add(key)

    for node in gm.graph.nodes:
        emit(unit_of.get(node, node))
    new_graph.lint()
    counts = FusionCounts(kernels=len(groups) - len(reductions), gemm_epilogues=len(epilogues),
                          reductions=len(reductions), row_kernels=len(regions))
    return torch.fx.GraphModule(gm, new_graph), counts
