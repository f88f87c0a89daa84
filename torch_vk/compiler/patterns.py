"""Rewrites of the Dynamo (torch-level) FX graph that run before AOTAutograd.

`fuse_attention` turns hand-written attention

    scores = q @ k.transpose(-2, -1)            # torch.matmul / Tensor.matmul / k.mT too
    scores = scores * c   (or scores / c, or no scale; c a Python number)
    scores = scores.masked_fill(~m, -inf)       # or masked_fill(m == 0, -inf),
                                                # torch.where(m, scores, -inf), or no mask
    probs = F.softmax(scores, dim=-1)           # or scores.softmax(-1), torch.softmax(scores, -1)
    probs = F.dropout(probs, p, training=False) # optional; only as the identity
    out = probs @ v

into one `F.scaled_dot_product_attention(q, k, v, attn_mask=..., scale=...)` node. It runs on the
Dynamo graph, so AOTAutograd traces SDPA itself: the forward and the backward graph both call
the fused attention kernel instead of two matrix multiplies, a scale, a mask and a softmax (and
their backward ops), and the scores are never materialised.

A chain is rewritten only when the rewrite computes the same values:

- every intermediate (scores, scaled, masked, probabilities, identity dropout) has exactly one
  user, the next step of the chain (otherwise the intermediate must be materialised anyway, e.g.
  when the attention weights are also returned);
- the scale is a finite Python number (SDPA always gets an explicit `scale`: its default would
  be 1/sqrt(head dim));
- the fill value is exactly -inf. A finite fill such as torch.finfo(dtype).min is not the same
  as SDPA's boolean mask when a row is fully masked (the softmax then averages over the filled
  positions), so such chains are left alone;
- the softmax is over the last dimension, in the input's dtype;
- the mask has at least 2 dims (SDPA's requirement) and becomes a bool "attend" mask:
  masked_fill(~m or m == 0 or logical_not(m), -inf) and where(m, s, -inf) give m itself when m
  is bool, else an inserted m != 0; masked_fill(d, -inf) and where(d, -inf, s) with a bool d
  give an inserted logical_not(d);
- q, k, v have the same floating dtype, at least 3 dimensions and the same batch dimensions,
  which SDPA accepts without broadcasting (shapes come from Dynamo's node.meta["example_value"];
  a node without metadata is left alone).

The one semantic difference, accepted on purpose: on a row whose mask is all False,
masked_fill(-inf) + softmax returns NaN (exp(-inf - -inf)), while SDPA returns zeros there
(PyTorch's own math SDPA uses a safe softmax, and so does torch-vk's kernel). Causal and padding
masks never mask a whole row, so models that produce finite outputs get the same outputs.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx
import torch.nn.functional as F

# Attention chains replaced by SDPA in this process (tests read it through `stats()`).
_STATS = {"attention": 0}


def stats() -> dict[str, int]:
    """Pattern rewrites done in this process: {"attention": chains replaced by SDPA}."""
    return dict(_STATS)


# --- node helpers ------------------------------------------------------------------------------

def _example(node: Any) -> torch.Tensor | None:
    """The (fake) tensor a Dynamo node produced, or None (not a node, not a tensor, no meta)."""
    if not isinstance(node, torch.fx.Node):
        return None
    value = node.meta.get("example_value", node.meta.get("val"))
    return value if isinstance(value, torch.Tensor) else None


def _is_function(node: Any, *targets: Callable) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and \
        any(node.target is t for t in targets)


def _is_method(node: Any, *names: str) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_method" and node.target in names


def _bind(node: torch.fx.Node, params: tuple[str, ...], defaults: dict[str, Any]) -> dict | None:
    """Arguments of `node` by parameter name (self / input first), or None when the call has
    arguments outside `params` (an `out=`, say) that the pattern does not understand."""
    if len(node.args) > len(params):
        return None
    positional = dict(zip(params, node.args))
    bound = {**defaults, **positional}
    for name, value in node.kwargs.items():
        if name not in params or name in positional:
            return None
        bound[name] = value
    if any(name not in bound for name in params):
        return None
    return bound


def _sole_user_is(node: torch.fx.Node, user: torch.fx.Node) -> bool:
    return len(node.users) == 1 and next(iter(node.users)) is user


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_minus_inf(value: Any) -> bool:
    return isinstance(value, float) and value == -math.inf


def _same_size(a: Any, b: Any) -> bool:
    """True when two sizes are provably equal (SymInts included); never adds a shape guard."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    return bool(statically_known_true(a == b))


def _same_shape(a: torch.Size, b: torch.Size) -> bool:
    return len(a) == len(b) and all(_same_size(x, y) for x, y in zip(a, b))


# --- pieces of the pattern ---------------------------------------------------------------------

def _matmul_operands(node: Any) -> tuple[Any, Any] | None:
    """(a, b) when `node` is a @ b (operator.matmul, torch.matmul, Tensor.matmul)."""
    if _is_function(node, operator.matmul, torch.matmul) or _is_method(node, "matmul"):
        names = ("input", "other") if node.op == "call_function" else ("self", "other")
        args = _bind(node, names, {})
        if args is not None:
            return args[names[0]], args["other"]
    return None


def _untransposed(node: Any) -> Any:
    """k when `node` swaps the last two dimensions of k (transpose(-2, -1) in any spelling,
    swapaxes, .mT), else None."""
    if _is_method(node, "transpose", "swapaxes", "swapdims") or \
            _is_function(node, torch.transpose, torch.swapaxes, torch.swapdims):
        if len(node.args) != 3 or node.kwargs:
            return None
        source, dim0, dim1 = node.args
        value = _example(source)
        if value is None or not isinstance(dim0, int) or not isinstance(dim1, int):
            return None
        ndim = value.dim()
        if ndim < 2 or not (-ndim <= dim0 < ndim and -ndim <= dim1 < ndim):
            return None
        if {dim0 % ndim, dim1 % ndim} == {ndim - 2, ndim - 1}:
            return source
        return None
    if _is_function(node, getattr) and len(node.args) == 2 and node.args[1] == "mT":
        return node.args[0]
    return None


def _identity_dropout_input(node: Any) -> Any:
    """The input of a dropout that is the identity (p == 0 or not training), else None."""
    if _is_function(node, F.dropout):
        args = _bind(node, ("input", "p", "training", "inplace"),
                     {"p": 0.5, "training": True, "inplace": False})
        training_key = "training"
    elif _is_function(node, torch.dropout):
        args = _bind(node, ("input", "p", "train"), {})
        training_key = "train"
    else:
        return None
    if args is None:
        return None
    p, training = args["p"], args[training_key]
    if (_is_number(p) and p == 0) or training is False:
        return args["input"]
    return None


def _softmax_input(node: Any) -> Any:
    """x when `node` is a softmax of x over its last dimension in x's own dtype, else None."""
    if _is_function(node, F.softmax):
        args = _bind(node, ("input", "dim", "_stacklevel", "dtype"),
                     {"dim": None, "_stacklevel": 3, "dtype": None})
        source_key = "input"
    elif _is_function(node, torch.softmax):
        args = _bind(node, ("input", "dim", "dtype"), {"dtype": None})
        source_key = "input"
    elif _is_method(node, "softmax"):
        args = _bind(node, ("self", "dim", "dtype"), {"dtype": None})
        source_key = "self"
    else:
        return None
    if args is None:
        return None
    source, dim, dtype = args[source_key], args["dim"], args["dtype"]
    value = _example(source)
    if value is None or not isinstance(dim, int) or isinstance(dim, bool):
        return None
    if dim not in (-1, value.dim() - 1):
        return None
    if dtype is not None and dtype != value.dtype:
        return None
    return source


def _scale_operand(node: Any) -> tuple[Any, float] | None:
    """(scores, scale) when `node` is scores * c, c * scores or scores / c with c a finite
    Python number (c != 0 for a division), else None."""
    if _is_function(node, operator.mul, torch.mul) or _is_method(node, "mul", "multiply"):
        if len(node.args) != 2 or node.kwargs:
            return None
        a, b = node.args
        if isinstance(a, torch.fx.Node) and _is_number(b):
            tensor, factor = a, float(b)
        elif isinstance(b, torch.fx.Node) and _is_number(a) and node.op == "call_function":
            tensor, factor = b, float(a)
        else:
            return None
        return (tensor, factor) if math.isfinite(factor) else None
    if _is_function(node, operator.truediv, torch.div, torch.true_divide) or \
            _is_method(node, "div", "divide", "true_divide"):
        if len(node.args) != 2 or node.kwargs:  # a rounding_mode is not a plain division
            return None
        a, b = node.args
        if not isinstance(a, torch.fx.Node) or not _is_number(b):
            return None
        divisor = float(b)
        if divisor == 0 or not math.isfinite(divisor):
            return None
        return a, 1.0 / divisor
    return None


@dataclass
class _Mask:
    """How the SDPA mask (True = attend) is obtained from a graph value."""
    source: torch.fx.Node
    # "as_is": attn_mask = source (bool); "nonzero": attn_mask = source != 0 (inserted node);
    # "negate": attn_mask = logical_not(source) (inserted node; source is bool).
    how: str
    # Nodes that only fed the mask (~m, m == 0, a -inf constant): erased when left unused.
    helpers: tuple[torch.fx.Node, ...] = ()


def _attend_mask(fill_mask: Any) -> _Mask | None:
    """The mask of positions to keep, given the bool mask of positions filled with -inf."""
    value = _example(fill_mask)
    if value is None or value.dtype != torch.bool:
        return None
    source = None
    if _is_function(fill_mask, operator.invert, torch.bitwise_not, torch.logical_not) or \
            _is_method(fill_mask, "bitwise_not", "logical_not"):
        if len(fill_mask.args) == 1 and not fill_mask.kwargs:
            source = fill_mask.args[0]
    elif _is_function(fill_mask, operator.eq, torch.eq) or _is_method(fill_mask, "eq"):
        if len(fill_mask.args) == 2 and not fill_mask.kwargs and \
                _is_number(fill_mask.args[1]) and fill_mask.args[1] == 0:
            source = fill_mask.args[0]
    source_value = _example(source)
    if source_value is None:
        return _Mask(fill_mask, "negate")
    # Each recognised fill mask means "source is zero" (~m has a bool result only for a bool
    # m), so the positions to keep are those where source is non-zero.
    if source_value.dtype == torch.bool:
        return _Mask(source, "as_is", (fill_mask,))
    return _Mask(source, "nonzero", (fill_mask,))


def _masked_input(node: Any, scores_value: torch.Tensor) -> tuple[Any, _Mask] | None:
    """(scores, mask) when `node` fills positions of scores with -inf (masked_fill or
    torch.where) and has scores' shape and dtype, else None."""
    value = _example(node)
    if value is None or value.dtype != scores_value.dtype or \
            not _same_shape(value.shape, scores_value.shape):
        return None
    if _is_method(node, "masked_fill") or _is_function(node, torch.masked_fill):
        if len(node.args) != 3 or node.kwargs or not _is_minus_inf(node.args[2]):
            return None
        scores, fill_mask, _ = node.args
        mask = _attend_mask(fill_mask)
        return (scores, mask) if mask is not None else None
    if _is_function(node, torch.where):
        if len(node.args) != 3 or node.kwargs:
            return None
        condition, if_true, if_false = node.args
        condition_value = _example(condition)
        if condition_value is None or condition_value.dtype != torch.bool:
            return None
        if isinstance(if_true, torch.fx.Node) and _minus_inf_constant(if_false):
            helpers = (if_false,) if isinstance(if_false, torch.fx.Node) else ()
            return if_true, _Mask(condition, "as_is", helpers)
        if isinstance(if_false, torch.fx.Node) and _minus_inf_constant(if_true):
            helpers = (if_true,) if isinstance(if_true, torch.fx.Node) else ()
            return if_false, _Mask(condition, "negate", helpers)
    return None


def _minus_inf_constant(value: Any) -> bool:
    """-inf as a Python float or as a torch.tensor(-inf) node of the graph."""
    if _is_minus_inf(value):
        return True
    return _is_function(value, torch.tensor) and len(value.args) == 1 and \
        _is_minus_inf(value.args[0])


@dataclass
class _Match:
    q: torch.fx.Node
    k: torch.fx.Node
    v: torch.fx.Node
    scale: float
    mask: _Mask | None
    chain: list[torch.fx.Node]      # the nodes replaced, the output (probs @ v) first
    helpers: list[torch.fx.Node]    # producers that may become unused (k^T, ~m, m == 0, ...)


def _match(output: torch.fx.Node) -> _Match | None:
    """The attention chain that ends in `output` (= probs @ v), or None."""
    operands = _matmul_operands(output)
    if operands is None:
        return None
    probs, v = operands
    chain = [output]
    if not isinstance(probs, torch.fx.Node) or not _sole_user_is(probs, output):
        return None
    dropout_input = _identity_dropout_input(probs)
    if dropout_input is not None:
        chain.append(probs)
        if not isinstance(dropout_input, torch.fx.Node) or not _sole_user_is(dropout_input, probs):
            return None
        probs = dropout_input
    softmax_input = _softmax_input(probs)
    if not isinstance(softmax_input, torch.fx.Node) or not _sole_user_is(softmax_input, probs):
        return None
    chain.append(probs)
    node = softmax_input

    # Optional mask, then optional scale, then the scores matmul. `node` is the current value.
    scores_shape_value = _example(node)
    if scores_shape_value is None:
        return None
    mask = None
    masked = _masked_input(node, scores_shape_value)
    if masked is not None:
        inner, mask = masked
        if not isinstance(inner, torch.fx.Node) or not _sole_user_is(inner, node):
            return None
        chain.append(node)
        node = inner
    scale = 1.0
    scaled = _scale_operand(node)
    if scaled is not None:
        inner, scale = scaled
        if not _sole_user_is(inner, node):
            return None
        chain.append(node)
        node = inner
    scores_operands = _matmul_operands(node)
    if scores_operands is None:
        return None
    chain.append(node)
    q, k_transposed = scores_operands
    k = _untransposed(k_transposed)
    if not all(isinstance(x, torch.fx.Node) for x in (q, k, v)):
        return None
    if any(x in chain for x in (q, k, v)) or (mask is not None and mask.source in chain):
        return None
    if not _sdpa_accepts(q, k, v, scores=node, output=output, mask=mask):
        return None
    helpers = [k_transposed] + (list(mask.helpers) if mask is not None else [])
    return _Match(q, k, v, scale, mask, chain, helpers)


def _sdpa_accepts(q: torch.fx.Node, k: torch.fx.Node, v: torch.fx.Node, scores: torch.fx.Node,
                  output: torch.fx.Node, mask: _Mask | None) -> bool:
    """Shapes and dtypes SDPA takes as they are: (B..., L, E), (B..., S, E), (B..., S, Ev)
    with equal batch dims B..., one floating dtype, and a mask that broadcasts to the scores."""
    qv, kv, vv, sv, ov = (_example(n) for n in (q, k, v, scores, output))
    if any(x is None for x in (qv, kv, vv, sv, ov)):
        return False
    if not (qv.dtype == kv.dtype == vv.dtype == sv.dtype == ov.dtype) or \
            not qv.dtype.is_floating_point:
        return False
    if not (qv.device == kv.device == vv.device):
        return False
    if qv.dim() < 3 or not (qv.dim() == kv.dim() == vv.dim() == sv.dim() == ov.dim()):
        return False
    batch = qv.shape[:-2]
    if not (_same_shape(batch, kv.shape[:-2]) and _same_shape(batch, vv.shape[:-2])):
        return False
    if not (_same_size(qv.shape[-1], kv.shape[-1]) and _same_size(kv.shape[-2], vv.shape[-2])):
        return False
    expected_scores = tuple(qv.shape[:-1]) + (kv.shape[-2],)
    expected_output = tuple(qv.shape[:-1]) + (vv.shape[-1],)
    if not (_same_shape(sv.shape, expected_scores) and _same_shape(ov.shape, expected_output)):
        return False
    if mask is not None:
        # masked_fill / where broadcast the mask to the scores' shape, so it broadcasts for
        # SDPA too; PyTorch's SDPA rejects masks of fewer than 2 dims (IndexError on the CPU).
        mv = _example(mask.source)
        if mv is None or not 2 <= mv.dim() <= sv.dim() or mv.device != qv.device:
            return False
    return True


# --- the rewrite -------------------------------------------------------------------------------

def _fake_result(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """fn on the nodes' example values under Dynamo's fake mode, or None when that fails."""
    from torch._guards import detect_fake_mode

    values = [_example(a) if isinstance(a, torch.fx.Node) else a for a in args]
    kwvalues = {n: _example(a) if isinstance(a, torch.fx.Node) else a for n, a in kwargs.items()}
    fake_mode = detect_fake_mode([v for v in values + list(kwvalues.values())
                                  if isinstance(v, torch.Tensor)])
    if fake_mode is None:
        return None
    try:
        with fake_mode:
            return fn(*values, **kwvalues)
    except Exception:  # metadata only: the graph itself is still correct without it
        return None


def _insert_call(graph: torch.fx.Graph, fn: Callable, args: tuple, kwargs: dict,
                 meta_from: torch.fx.Node) -> torch.fx.Node:
    node = graph.call_function(fn, args, kwargs)
    for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
        if key in meta_from.meta:
            node.meta[key] = meta_from.meta[key]
    value = _fake_result(fn, *args, **kwargs)
    if value is not None:
        node.meta["example_value"] = value
    return node


def _replace(graph: torch.fx.Graph, match: _Match) -> None:
    output = match.chain[0]
    with graph.inserting_before(output):
        attn_mask = None
        if match.mask is not None:
            source = match.mask.source
            if match.mask.how == "as_is":
                attn_mask = source
            elif match.mask.how == "nonzero":
                attn_mask = _insert_call(graph, torch.ne, (source, 0), {}, output)
            else:
                attn_mask = _insert_call(graph, torch.logical_not, (source,), {}, output)
        sdpa = _insert_call(graph, F.scaled_dot_product_attention, (match.q, match.k, match.v),
                            {"attn_mask": attn_mask, "dropout_p": 0.0, "is_causal": False,
                             "scale": match.scale}, output)
    if "example_value" not in sdpa.meta and "example_value" in output.meta:
        sdpa.meta["example_value"] = output.meta["example_value"]
    output.replace_all_uses_with(sdpa)
    for node in match.chain:  # users before producers
        graph.erase_node(node)
    # The recognised producers (k^T, ~m, m == 0, a -inf constant) are pure: erase them when
    # nothing else uses them.
    for node in match.helpers:
        if not getattr(node, "_erased", False) and not node.users:
            graph.erase_node(node)


def fuse_attention(gm: torch.fx.GraphModule) -> int:
    """Replaces each explicit attention chain of a Dynamo graph by one
    F.scaled_dot_product_attention call (see the module docstring for the exact conditions).
    Mutates and recompiles `gm`; returns the number of chains replaced."""
    graph = gm.graph
    replaced = 0
    # A chain's nodes all come before its output, so walking forward never meets a node that an
    # earlier replacement erased.
    for node in list(graph.nodes):
        match = _match(node)
        if match is None:
            continue
        _replace(graph, match)
        replaced += 1
    if replaced:
        graph.lint()
        gm.recompile()
        _STATS["attention"] += replaced
    return replaced
