"""ATen pointwise ops the code generator can fuse, expressed as rows of the element-wise op table.

The op table (shaders/elementwise_ops.toml, read through ``torch_vk._C``) holds one GLSL
expression per op in the operands ``a, b, c`` and the scalars ``s0, s1``. This module maps an
FX node of the ATen graph onto one of those rows: which row, which node or literal feeds each
operand, which scalars it takes, and the dtype whose compute kind the op runs in. The mapping
mirrors what the eager kernels in src/aten do for the same ATen op, so a fused kernel computes
exactly what the eager op computes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx

aten = torch.ops.aten
prims = torch.ops.prims


@dataclass
class PointwiseCall:
    op: str                              # op-table row
    operands: list[Any]                  # fx.Node or a Python number (a literal), for a, b, c
    scalars: tuple[Any, Any] = (0, 0)    # s0, s1
    bool_result: bool = False            # the op yields a truth value (comparisons, isnan...)
    kind_from_inputs: bool = False       # compute kind from the promoted inputs (comparisons)
    extra: dict[str, Any] = field(default_factory=dict)


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _unary(op: str, **flags: Any) -> Callable[[torch.fx.Node], PointwiseCall]:
    return lambda n: PointwiseCall(op, [n.args[0]], **flags)


def _binary(op: str, **flags: Any) -> Callable[[torch.fx.Node], PointwiseCall]:
    return lambda n: PointwiseCall(op, [n.args[0], n.args[1]], **flags)


def _with_alpha(op: str) -> Callable[[torch.fx.Node], PointwiseCall]:
    return lambda n: PointwiseCall(op, [n.args[0], n.args[1]], (_arg(n, 2, "alpha", 1), 0))


def _rsub(n: torch.fx.Node) -> PointwiseCall:
    # rsub(self, other, alpha) = other - alpha * self
    return PointwiseCall("sub", [n.args[1], n.args[0]], (_arg(n, 2, "alpha", 1), 0))


def _div_mode(n: torch.fx.Node) -> PointwiseCall | None:
    mode = _arg(n, 2, "rounding_mode")
    op = {None: "div", "trunc": "div_trunc", "floor": "div_floor"}.get(mode)
    return None if op is None else PointwiseCall(op, [n.args[0], n.args[1]])


def _gelu(n: torch.fx.Node) -> PointwiseCall:
    tanh = _arg(n, 1, "approximate", "none") == "tanh"
    return PointwiseCall("gelu_tanh" if tanh else "gelu", [n.args[0]])


def _gelu_backward(n: torch.fx.Node) -> PointwiseCall:
    tanh = _arg(n, 2, "approximate", "none") == "tanh"
    return PointwiseCall("gelu_tanh_backward" if tanh else "gelu_backward",
                         [n.args[0], n.args[1]])


def _leaky_relu(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("leaky_relu", [n.args[0]], (_arg(n, 1, "negative_slope", 0.01), 0))


def _leaky_relu_backward(n: torch.fx.Node) -> PointwiseCall:
    # leaky_relu_backward(grad, self, slope, self_is_result): the table row takes a = input.
    return PointwiseCall("leaky_relu_backward", [n.args[1], n.args[0]], (n.args[2], 0))


def _hardtanh(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("clamp", [n.args[0]], (_arg(n, 1, "min_val", -1.0), _arg(n, 2, "max_val", 1.0)))


def _hardtanh_backward(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("hardtanh_backward", [n.args[0], n.args[1]], (n.args[2], n.args[3]))


def _softplus(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("softplus", [n.args[0]], (_arg(n, 1, "beta", 1), _arg(n, 2, "threshold", 20)))


def _softplus_backward(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("softplus_backward", [n.args[0], n.args[1]], (n.args[2], n.args[3]))


def _elu(n: torch.fx.Node) -> PointwiseCall:
    alpha, scale, input_scale = (_arg(n, 1, "alpha", 1), _arg(n, 2, "scale", 1),
                                 _arg(n, 3, "input_scale", 1))
    return PointwiseCall("elu", [n.args[0], input_scale], (alpha * scale, scale))


def _clamp(n: torch.fx.Node) -> PointwiseCall | None:
    lo, hi = _arg(n, 1, "min"), _arg(n, 2, "max")
    if lo is not None and hi is not None:
        return PointwiseCall("clamp", [n.args[0]], (lo, hi))
    if lo is not None:
        return PointwiseCall("clamp_min", [n.args[0]], (lo, 0))
    if hi is not None:
        return PointwiseCall("clamp_max", [n.args[0]], (hi, 0))
    return None


def _clamp_tensor(n: torch.fx.Node) -> PointwiseCall | None:
    lo, hi = _arg(n, 1, "min"), _arg(n, 2, "max")
    if lo is None or hi is None:
        return None
    return PointwiseCall("clamp_tensor", [n.args[0], lo, hi])


def _where(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("where", [n.args[0], n.args[1], n.args[2]])


def _masked_fill(n: torch.fx.Node) -> PointwiseCall:
    # masked_fill(self, mask, value) = where(mask, value, self)
    return PointwiseCall("where", [n.args[1], n.args[2], n.args[0]])


def _lerp(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("lerp", [n.args[0], n.args[1], n.args[2]])


def _addc(op: str) -> Callable[[torch.fx.Node], PointwiseCall]:
    return lambda n: PointwiseCall(op, [n.args[0], n.args[1], n.args[2]], (_arg(n, 3, "value", 1), 0))


def _threshold_backward(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("threshold_backward", [n.args[0], n.args[1]], (n.args[2], 0))


def _copy(n: torch.fx.Node) -> PointwiseCall:
    return PointwiseCall("copy", [n.args[0]])


def _to_copy(n: torch.fx.Node) -> PointwiseCall | None:
    # Only dtype conversions on the same device; layout / device moves stay ATen calls.
    if n.kwargs.get("layout") not in (None, torch.strided):
        return None
    device = n.kwargs.get("device")
    if device is not None and torch.device(device).type != "vk":
        return None
    return PointwiseCall("copy", [n.args[0]])


def _full_like(n: torch.fx.Node) -> PointwiseCall | None:
    # full_like(t, value): the value everywhere; `t` only gives the shape (a geometry input).
    if n.kwargs.get("layout") not in (None, torch.strided) or n.kwargs.get("device") is not None:
        return None
    return PointwiseCall("fill", [], (n.args[1], 0), extra={"geometry": [n.args[0]]})


def _round(n: torch.fx.Node) -> PointwiseCall | None:
    return PointwiseCall("round", [n.args[0]])


def _nan_to_num(n: torch.fx.Node) -> PointwiseCall | None:
    val = n.meta.get("val")
    if not isinstance(val, torch.Tensor) or not val.dtype.is_floating_point:
        return None
    info = torch.finfo(val.dtype)
    nan = _arg(n, 1, "nan")
    posinf = _arg(n, 2, "posinf")
    neginf = _arg(n, 3, "neginf")
    nan = 0.0 if nan is None else nan
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    return PointwiseCall("nan_to_num", [n.args[0], neginf], (nan, posinf))


_BOOL = dict(bool_result=True, kind_from_inputs=True)

LOWERINGS: dict[Any, Callable[[torch.fx.Node], PointwiseCall | None]] = {
    aten.add.Tensor: _with_alpha("add"),
    aten.add.Scalar: _with_alpha("add"),
    aten.sub.Tensor: _with_alpha("sub"),
    aten.sub.Scalar: _with_alpha("sub"),
    aten.rsub.Tensor: _rsub,
    aten.rsub.Scalar: _rsub,
    aten.mul.Tensor: _binary("mul"),
    aten.mul.Scalar: _binary("mul"),
    aten.div.Tensor: _binary("div"),
    aten.div.Scalar: _binary("div"),
    aten.div.Tensor_mode: _div_mode,
    aten.pow.Tensor_Scalar: _binary("pow"),
    aten.pow.Tensor_Tensor: _binary("pow"),
    aten.pow.Scalar: _binary("pow"),
    aten.maximum.default: _binary("maximum"),
    aten.minimum.default: _binary("minimum"),
    aten.fmax.default: _binary("fmax"),
    aten.fmin.default: _binary("fmin"),
    aten.fmod.Tensor: _binary("fmod"),
    aten.fmod.Scalar: _binary("fmod"),
    aten.remainder.Tensor: _binary("remainder"),
    aten.remainder.Scalar: _binary("remainder"),
    aten.atan2.default: _binary("atan2"),
    aten.copysign.Tensor: _binary("copysign"),
    aten.hypot.default: _binary("hypot"),
    aten.addcmul.default: _addc("addcmul"),
    aten.addcdiv.default: _addc("addcdiv"),
    aten.lerp.Scalar: _lerp,
    aten.lerp.Tensor: _lerp,
    aten.where.self: _where,
    aten.masked_fill.Scalar: _masked_fill,
    aten.masked_fill.Tensor: _masked_fill,
    aten.clamp.default: _clamp,
    aten.clamp.Tensor: _clamp_tensor,
    aten.clamp_min.default: lambda n: PointwiseCall("clamp_min", [n.args[0]], (n.args[1], 0)),
    aten.clamp_max.default: lambda n: PointwiseCall("clamp_max", [n.args[0]], (n.args[1], 0)),
    aten.hardtanh.default: _hardtanh,
    aten.hardtanh_backward.default: _hardtanh_backward,
    aten.leaky_relu.default: _leaky_relu,
    aten.leaky_relu_backward.default: _leaky_relu_backward,
    aten.softplus.default: _softplus,
    aten.softplus_backward.default: _softplus_backward,
    aten.elu.default: _elu,
    aten.gelu.default: _gelu,
    aten.gelu_backward.default: _gelu_backward,
    aten.threshold_backward.default: _threshold_backward,
    aten.sigmoid_backward.default: _binary("sigmoid_backward"),
    aten.tanh_backward.default: _binary("tanh_backward"),
    aten.silu_backward.default: _binary("silu_backward"),
    aten.mish_backward.default: _binary("mish_backward"),
    aten.hardswish_backward.default: _binary("hardswish_backward"),
    aten.hardsigmoid_backward.default: _binary("hardsigmoid_backward"),
    aten.nan_to_num.default: _nan_to_num,
    aten.round.default: _round,
    aten.full_like.default: _full_like,
    aten.clone.default: _copy,
    aten._to_copy.default: _to_copy,
    prims.convert_element_type.default: _copy,
    aten.eq.Tensor: _binary("eq", **_BOOL),
    aten.eq.Scalar: _binary("eq", **_BOOL),
    aten.ne.Tensor: _binary("ne", **_BOOL),
    aten.ne.Scalar: _binary("ne", **_BOOL),
    aten.lt.Tensor: _binary("lt", **_BOOL),
    aten.lt.Scalar: _binary("lt", **_BOOL),
    aten.le.Tensor: _binary("le", **_BOOL),
    aten.le.Scalar: _binary("le", **_BOOL),
    aten.gt.Tensor: _binary("gt", **_BOOL),
    aten.gt.Scalar: _binary("gt", **_BOOL),
    aten.ge.Tensor: _binary("ge", **_BOOL),
    aten.ge.Scalar: _binary("ge", **_BOOL),
    aten.logical_not.default: _unary("logical_not", **_BOOL),
    aten.logical_and.default: _binary("logical_and", **_BOOL),
    aten.logical_or.default: _binary("logical_or", **_BOOL),
    aten.logical_xor.default: _binary("logical_xor", **_BOOL),
    aten.isnan.default: _unary("isnan", **_BOOL),
    aten.isinf.default: _unary("isinf", **_BOOL),
    aten.bitwise_and.Tensor: _binary("bitwise_and"),
    aten.bitwise_or.Tensor: _binary("bitwise_or"),
    aten.bitwise_xor.Tensor: _binary("bitwise_xor"),
    aten.bitwise_and.Scalar: _binary("bitwise_and"),
    aten.bitwise_or.Scalar: _binary("bitwise_or"),
    aten.bitwise_xor.Scalar: _binary("bitwise_xor"),
    aten.bitwise_not.default: _unary("bitwise_not"),
}

for _name in ("neg", "abs", "reciprocal", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2",
              "log10", "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "erfc", "erfinv",
              "sign", "floor", "ceil", "trunc", "frac", "relu", "silu", "mish", "asin", "acos",
              "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma", "digamma",
              "hardswish", "hardsigmoid"):
    LOWERINGS[getattr(aten, _name).default] = _unary(_name)


def lower(node: torch.fx.Node) -> PointwiseCall | None:
    """The op-table call for `node`, or None when the node is not a fusable pointwise op."""
    if node.op != "call_function":
        return None
    rule = LOWERINGS.get(node.target)
    if rule is None:
        return None
    call = rule(node)
    if call is None:
        return None
    for value in list(call.operands) + list(call.scalars):
        if isinstance(value, torch.fx.Node) or isinstance(value, (bool, int, float)):
            continue
        return None  # symbolic scalars, lists, ...: leave the node to ATen
    return call
