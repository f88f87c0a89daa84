"""Splits functional `_foreach_*` nodes into one pointwise node per list element.

Compiled optimizer steps (torch.compile of `optimizer.step()`) reach the compiler as chains of
functional `_foreach_*` ops over the parameter lists. Split per tensor, each parameter's update
chain becomes ordinary pointwise nodes, which the fusion pass turns into one kernel per
parameter. Lists whose tensors are not all on vk (the step counters of non-capturable
optimizers live on the CPU) are left as they are.
"""
from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx

from torch_vk.compiler.fusion import _host_scalar

aten = torch.ops.aten

_UNARY = ("sqrt", "neg", "reciprocal", "exp", "abs", "sign", "sigmoid", "tanh", "log", "rsqrt",
          "zero", "ceil", "floor", "round", "trunc", "frac", "expm1", "log1p", "log2", "log10",
          "sin", "cos", "erf")


def _target(name: str, overload: str, elements: list[Any]):
    """The per-element ATen overload for `_foreach_<name>.<overload>`, or None."""
    if name in ("add", "sub", "mul", "div"):
        return getattr(aten, name).Tensor
    if name in ("addcmul", "addcdiv") and overload in ("Scalar", "ScalarList"):
        return getattr(aten, name).default
    if name == "pow":
        return {"ScalarAndTensor": aten.pow.Scalar, "Scalar": aten.pow.Tensor_Scalar,
                "List": aten.pow.Tensor_Tensor, "ScalarList": aten.pow.Tensor_Scalar}.get(overload)
    if name == "lerp":
        return {"Scalar": aten.lerp.Scalar, "List": aten.lerp.Tensor,
                "ScalarList": aten.lerp.Scalar}.get(overload)
    if name in ("maximum", "minimum") and overload == "List":
        return getattr(aten, name).default
    if name in ("clamp_min", "clamp_max") and overload == "Scalar":
        return getattr(aten, name).default
    if name in _UNARY and overload == "default" and name != "zero":
        return getattr(aten, name).default
    return None


def _on_vk(value: Any) -> bool:
    val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and val.device.type == "vk"


def split_foreach(gm: torch.fx.GraphModule) -> int:
    """Rewrites `gm` in place; returns the number of foreach nodes split."""
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        packet = node.target.overloadpacket.__name__
        if not packet.startswith("_foreach_") or packet.endswith("_"):
            continue
        name = packet[len("_foreach_"):]
        overload = node.target._overloadname
        lists = [a for a in node.args if isinstance(a, (list, tuple))]
        tensor_lists = [a for a in lists if a and isinstance(a[0], torch.fx.Node)]
        # The first list must live on vk; the others may hold host scalars (0-dim CPU
        # tensors, e.g. bias corrections), which fused kernels take by value.
        if not tensor_lists or not all(_on_vk(t) for t in tensor_lists[0]) or \
                not all(_on_vk(t) or _host_scalar(t.meta.get("val")) for lst in tensor_lists
                        for t in lst):
            continue
        target = _target(name, overload, tensor_lists[0])
        if target is None:
            continue
        length = len(tensor_lists[0])
        users = list(node.users)
        if not all(u.op == "call_function" and u.target is operator.getitem for u in users):
            continue
        kwargs = dict(node.kwargs)
        if name in ("addcmul", "addcdiv") and overload == "ScalarList":
            scalars = node.args[3] if len(node.args) > 3 else kwargs.pop("scalars")
        elements = []
        with graph.inserting_before(node):
            for i in range(length):
                args = [a[i] if isinstance(a, (list, tuple)) else a for a in node.args]
                element_kwargs = dict(kwargs)
                if name in ("addcmul", "addcdiv"):
                    if overload == "ScalarList":
                        args = args[:3]
                        element_kwargs = {"value": scalars[i]}
                    elif len(args) > 3:
                        element_kwargs = {"value": args[3]}
                        args = args[:3]
                elif name in ("add", "sub") and "alpha" in element_kwargs:
                    pass
                new = graph.call_function(target, tuple(args), element_kwargs)
                vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
                val_kwargs = {k: (v.meta["val"] if isinstance(v, torch.fx.Node) else v)
                              for k, v in element_kwargs.items()}
                fake_mode = next(v.fake_mode for v in vals
                                 if isinstance(v, torch.Tensor) and hasattr(v, "fake_mode"))
                with fake_mode:
                    new.meta["val"] = target(*vals, **val_kwargs)
                elements.append(new)
        for user in users:
            user.replace_all_uses_with(elements[user.args[1]])
            graph.erase_node(user)
        graph.erase_node(node)
        count += 1
    if count:
        graph.lint()
        gm.recompile()
    return count
