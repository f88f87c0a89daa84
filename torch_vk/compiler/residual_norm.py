"""Fused residual add + layer norm / RMS norm in AOTAutograd's (aten-level) graphs.

A transformer block computes `h = x + branch` and normalizes it at once, `native_layer_norm(h)`,
while `h` also flows on (the next residual add, the backward's saved input). Eager mode reads
x and the branch, writes h, then reads h again for the norm's statistics and output. The
rewrite replaces the pair with one `torch.ops.vk.add_layer_norm(x, branch, ...)` node that
returns (h, y, mean, rstd): one kernel that reads x and the branch once, writes h and y
(src/aten/ops_norm.cpp, the norm kernel's FLAG_RESIDUAL), with the values the two ops give
(h rounded to its dtype before it is normalized). RMS norm the same: `h = x + branch` then
`_fused_rms_norm(h)` (what F.rms_norm / nn.RMSNorm become) -> `torch.ops.vk.add_rms_norm`,
returning (h, y, rstd). (Hand-written RMS norms, pow / mean / rsqrt / mul, already become one
row kernel with their residual add: torch_vk/compiler/rows.py.)

A pair is rewritten only when:
- the add is `aten.add.Tensor(a, b)` without alpha, of two tensors of h's shape and dtype (no
  broadcast, no promotion), float32 / float16 / bfloat16, on a vk device;
- the norm's weight (and layer norm's bias), when given, have h's dtype;
- every other user of h comes after the layer norm in the graph (the fused node takes the
  norm's place), so the graph stays topologically ordered, and the norm's users are the
  getitems of its three outputs.
"""
from __future__ import annotations

import operator

import torch
import torch.fx

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def _val(node) -> torch.Tensor | None:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


# norm op -> (fused op, number of the norm's arguments, positions of its weight / bias)
_NORMS = {
    torch.ops.aten.native_layer_norm.default: (torch.ops.vk.add_layer_norm.default, 5, (2, 3)),
    torch.ops.aten._fused_rms_norm.default: (torch.ops.vk.add_rms_norm.default, 4, (2,)),
}


def _fusable(norm: torch.fx.Node, order: dict) -> bool:
    _, arg_count, params = _NORMS[norm.target]
    if len(norm.args) < arg_count - 1 or norm.kwargs:
        return False
    h = norm.args[0]
    if not (isinstance(h, torch.fx.Node) and h.op == "call_function"
            and h.target is torch.ops.aten.add.Tensor and len(h.args) == 2 and not h.kwargs):
        return False
    hv = _val(h)
    if hv is None or hv.device.type != "vk" or hv.dtype not in _FLOATS:
        return False
    for operand in h.args:
        v = _val(operand)
        if v is None or v.shape != hv.shape or v.dtype != hv.dtype or v.device != hv.device:
            return False
    for i in params:
        param = norm.args[i] if i < len(norm.args) else None
        if param is not None and (_val(param) is None or _val(param).dtype != hv.dtype):
            return False
    if not all(user.target is operator.getitem for user in norm.users):
        return False
    return all(user is norm or order[user] > order[norm] for user in h.users)


def fuse_residual_norm(gm: torch.fx.GraphModule) -> int:
    """Rewrites the fusable add -> native_layer_norm / _fused_rms_norm pairs of `gm` in place;
    returns how many (counted in torch_vk.compiler.stats()["residual_norms"])."""
    graph = gm.graph
    order = {node: i for i, node in enumerate(graph.nodes)}
    norms = [n for n in graph.nodes if n.op == "call_function"
             and n.target in _NORMS and _fusable(n, order)]
    for norm in norms:
        h = norm.args[0]
        fused_op, arg_count, _ = _NORMS[norm.target]
        rest = tuple(norm.args[1:arg_count]) + (None,) * (arg_count - len(norm.args))
        with graph.inserting_before(norm):
            fused = graph.call_function(fused_op, (h.args[0], h.args[1], *rest))
            fused.meta["val"] = (h.meta["val"], *norm.meta["val"])
            h_out = graph.call_function(operator.getitem, (fused, 0))
            h_out.meta["val"] = h.meta["val"]
        for user in list(norm.users):  # getitem(norm, k) -> getitem(fused, k + 1)
            user.args = (fused, user.args[1] + 1)
        graph.erase_node(norm)
        h.replace_all_uses_with(h_out)
        graph.erase_node(h)
    if norms:
        graph.lint()
        gm.recompile()
    return len(norms)
