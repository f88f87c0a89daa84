"""The op table of the differential fuzz suite (torch_vk.fuzz): one generator per op, drawing a
case (inputs, layouts, scalars, out= / in-place variant, and how it is compared) from a Gen.
Generators draw every random choice when they build the case (never inside its callable, which
runs once per device). Where the CPU's own result is undefined or depends on its code path,
the generator avoids that input with a comment saying why."""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F

from torch_vk.fuzz import (BOOL, HALF, INTS, Case, Gen, TensorArg, _DEVICE, _out,  # noqa: F401
                           compare)
# ---------------------------------------------------------------- op generators

OPS: dict[str, Callable[[Gen], Case]] = {}


def op(name: str):
    def register(f):
        assert name not in OPS, name
        OPS[name] = f
        return f
    return register


def _variant(g: Gen, inplace: bool, out: bool) -> str:
    options = ["functional", "functional"]
    if inplace:
        options.append("inplace")
    if out:
        options.append("out")
    return g.choice(options)


def unary(name: str, fn=None, kind: str = "any", tol: str = "math", inplace=True, out=True,
          dtypes=None, method=None):
    fn = fn or getattr(torch, name)
    method = method or name + "_"

    @op(name)
    def gen(g: Gen) -> Case:
        x = g.tensor(g.shape(), g.dtype(dtypes), kind)
        v = _variant(g, inplace and hasattr(torch.Tensor, method), out)
        if v == "inplace":
            return Case(name, lambda a: getattr(a, method)(), [x], tol=tol, mutates=(0,))
        if v == "out":
            o = _out(g, x.view(x.base).shape, g.dtype())
            return Case(name, lambda a, out: fn(a, out=out), [x], {"out": o}, tol=tol, functional=fn)
        return Case(name, fn, [x], tol=tol)
    return gen


def _binary_operands(g: Gen, kind_b: str, dtypes_a=None, dtypes_b=None, scalar_b=True, kind_a="any"):
    shape = g.shape()
    a = g.tensor(shape, g.dtype(dtypes_a), kind_a)
    u = g.r.random()
    if scalar_b and u < 0.35:
        b = g.scalar(kind=kind_b)
        if isinstance(b, TensorArg) and dtypes_b:
            b = TensorArg.build(g, (), g.dtype(dtypes_b), kind_b, "contiguous", b.device)
    else:
        bshape = g.broadcast_partner(shape)
        if g.chance(0.2):  # a broadcast against b
            shape, bshape = bshape, shape
            a = g.tensor(shape, a.base.dtype, kind_a)
        b = g.tensor(bshape, g.dtype(dtypes_b) if dtypes_b else (a.base.dtype if g.chance(0.5) else g.dtype()), kind_b)
    return a, b


def binary(name: str, fn=None, kind_b: str = "any", tol: str = "default", inplace=True, out=True,
           dtypes=None, scalar_b=True, method=None):
    kind_a = "dividend" if kind_b == "nonzero" else "any"
    fn = fn or getattr(torch, name)
    method = method or name + "_"

    @op(name)
    def gen(g: Gen) -> Case:
        a, b = _binary_operands(g, kind_b, dtypes, dtypes, scalar_b, kind_a)
        v = _variant(g, inplace and hasattr(torch.Tensor, method), out)
        if v == "inplace":
            return Case(name, lambda x, y: getattr(x, method)(y), [a, b], tol=tol, mutates=(0,))
        if v == "out":
            sa = a.view(a.base).shape
            sb = b.view(b.base).shape if isinstance(b, TensorArg) else ()
            o = _out(g, torch.broadcast_shapes(sa, sb), g.dtype())
            return Case(name, lambda x, y, out: fn(x, y, out=out), [a, b], {"out": o}, tol=tol, functional=fn)
        return Case(name, fn, [a, b], tol=tol)
    return gen


# --- element-wise: unary
for _n in ["abs", "neg", "sign", "sgn", "floor", "ceil", "trunc", "round", "frac", "fix",
           "positive", "square", "relu", "bitwise_not", "logical_not", "signbit"]:
    unary(_n, fn=getattr(torch, _n) if hasattr(torch, _n) else getattr(F, _n), tol="default",
          inplace=_n not in ("signbit", "positive"), out=_n not in ("positive", "relu"))
for _n in ["sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
           "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
           "atanh", "erf", "erfc", "erfinv", "lgamma", "digamma", "sigmoid", "reciprocal",
           "sinc", "deg2rad", "rad2deg", "i0", "logit", "angle"]:
    unary(_n, kind="unit" if _n in ("erfinv", "logit", "atanh") else "any",
          inplace=_n != "angle")
for _n in ["isnan", "isinf", "isposinf", "isneginf", "isfinite", "isreal"]:
    unary(_n, tol="default", inplace=False, out=_n in ("isposinf", "isneginf"))
for _n, _f in [("special.entr", torch.special.entr), ("special.ndtri", torch.special.ndtri),
               ("special.log_ndtr", torch.special.log_ndtr), ("special.erfcx", torch.special.erfcx),
               ("special.i0e", torch.special.i0e), ("special.i1", torch.special.i1),
               ("special.i1e", torch.special.i1e), ("special.expit", torch.special.expit),
               ("special.ndtr", torch.special.ndtr)]:
    unary(_n, fn=_f, kind="unit" if _n == "special.ndtri" else "any", inplace=False)


@op("nan_to_num")
def _nan_to_num(g):
    x = g.tensor(g.shape(), g.dtype())
    kw = {}
    if g.chance(0.5):
        kw["nan"] = g.choice([0.0, 1.5, -2.0])
    if g.chance(0.5):
        kw["posinf"] = g.choice([1e4, 7.0, 1e39])
    if g.chance(0.3):
        kw["neginf"] = g.choice([-1e4, -7.0])
    return Case("nan_to_num", lambda a: torch.nan_to_num(a, **kw), [x])


@op("clamp")
def _clamp(g):
    x = g.tensor(g.shape(), g.dtype())
    lo = g.scalar() if g.chance(0.8) else None
    hi = g.scalar() if (lo is None or g.chance(0.5)) else None
    if isinstance(lo, TensorArg) or isinstance(hi, TensorArg):
        lo = lo if isinstance(lo, TensorArg) or lo is None else TensorArg.build(g, (), g.dtype(), "any", "contiguous")
        hi = hi if isinstance(hi, TensorArg) or hi is None else TensorArg.build(g, (), g.dtype(), "any", "contiguous")
    v = _variant(g, True, True)
    if v == "inplace":
        return Case("clamp", lambda a, l, h: a.clamp_(l, h), [x, lo, hi], mutates=(0,))
    return Case("clamp", lambda a, l, h: torch.clamp(a, l, h), [x, lo, hi])


unary("clamp_min", fn=lambda a: torch.clamp_min(a, 0.5), inplace=False, out=False, tol="default")
unary("clamp_max", fn=lambda a: torch.clamp_max(a, -1), inplace=False, out=False, tol="default")

# --- element-wise: binary (promotion, scalars, out= and in-place)
for _n in ["add", "sub", "mul", "maximum", "minimum", "fmax", "fmin"]:
    binary(_n, inplace=_n in ("add", "sub", "mul"))
binary("div", tol="math")
binary("true_divide", tol="math")
# Integer division by zero: the CPU raises ZeroDivisionError from inside its kernel, which a
# device kernel cannot (docs/OPS.md, known gaps); divisors are drawn non-zero.
binary("div_trunc", fn=lambda a, b, **kw: torch.div(a, b, rounding_mode="trunc", **kw), kind_b="nonzero",
       inplace=False)
binary("div_floor", fn=lambda a, b, **kw: torch.div(a, b, rounding_mode="floor", **kw), kind_b="nonzero",
       inplace=False)
binary("floor_divide", kind_b="nonzero")
binary("fmod", kind_b="nonzero", tol="math")
binary("remainder", kind_b="nonzero", tol="math")
binary("pow", tol="math", kind_b="small")
binary("float_power", tol="math", kind_b="small")
binary("atan2", tol="math", dtypes=None)
binary("hypot", tol="math", scalar_b=False)
binary("copysign", tol="default")
binary("logaddexp", tol="math", scalar_b=False)
binary("logaddexp2", tol="math", scalar_b=False)
binary("xlogy", tol="math")
binary("nextafter", tol="default", scalar_b=False, dtypes=[torch.float32, torch.float64])
binary("heaviside", tol="default", scalar_b=False)
for _n in ["eq", "ne", "lt", "le", "gt", "ge"]:
    binary(_n)
for _n in ["logical_and", "logical_or", "logical_xor"]:
    binary(_n, scalar_b=False)
for _n in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    binary(_n, dtypes=[BOOL] + INTS)
binary("bitwise_left_shift", dtypes=INTS, kind_b="small")
binary("bitwise_right_shift", dtypes=INTS, kind_b="small")


@op("rsub")
def _rsub(g):
    a, b = _binary_operands(g, "any")
    alpha = g.choice([1, 2, 0.5]) if g.chance(0.3) else 1
    return Case("rsub", lambda x, y: torch.rsub(x, y, alpha=alpha), [a, b])


@op("add_alpha")
def _add_alpha(g):
    a, b = _binary_operands(g, "any", scalar_b=True)
    # The CPU's float16 / bfloat16 add rounds alpha * other to the dtype in its strided loop
    # but not in its vectorized one (same inputs, other layout, other result): alphas whose
    # products are exact there (powers of two).
    alpha = g.choice([2, -1, 0.5, True, 3] if a.base.dtype not in HALF else [2, -1, 0.5, True, 4])
    return Case("add_alpha", lambda x, y: torch.add(x, y, alpha=alpha), [a, b])


@op("pow_scalar_base")
def _pow_scalar_base(g):
    e = g.tensor(g.shape(), g.dtype(), "small")
    base = g.choice([2, 0.5, -1.5, 1, True, 3])
    return Case("pow_scalar_base", lambda x: torch.pow(base, x), [e], tol="math")


@op("pow_tensor_scalar")
def _pow_tensor_scalar(g):
    x = g.tensor(g.shape(), g.dtype())
    e = g.choice([0, 1, 2, 3, -1, -2, 0.5, -0.5, 1.5, 200, -3, 0.25, True])
    return Case("pow_tensor_scalar", lambda a: torch.pow(a, e), [x], tol="math")


def _ternary_shapes(g):
    s = g.shape()
    return s, g.broadcast_partner(s), g.broadcast_partner(s)


@op("where")
def _where(g):
    s, s1, s2 = _ternary_shapes(g)
    c = g.tensor(s1, BOOL if g.chance(0.9) else torch.uint8)
    a = g.tensor(s, g.dtype())
    b = g.tensor(s2, g.dtype()) if g.chance(0.7) else g.scalar()
    return Case("where", torch.where, [c, a, b])


@op("lerp")
def _lerp(g):
    s, s1, s2 = _ternary_shapes(g)
    dt = g.dtype(g.float_dtypes)
    a, b = g.tensor(s, dt), g.tensor(s1, dt if g.chance(0.9) else g.dtype())
    w = g.tensor(s2, dt) if g.chance(0.5) else g.choice([0.25, 0.5, 0.75, 2.0])
    return Case("lerp", torch.lerp, [a, b, w], tol="math")


for _n in ["addcmul", "addcdiv"]:
    def _gen(g, _n=_n):
        s, s1, s2 = _ternary_shapes(g)
        a, b = g.tensor(s, g.dtype()), g.tensor(s1, g.dtype())
        c = g.tensor(s2, g.dtype(), "nonzero" if _n == "addcdiv" else "any")
        value = g.choice([1, 0.5, -2, 3])
        return Case(_n, lambda x, y, z: getattr(torch, _n)(x, y, z, value=value), [a, b, c], tol="math")
    op(_n)(_gen)


# --- activations
def _float_unary(name, fn, kind="any", tol="math", dtypes=None):
    @op(name)
    def gen(g):
        x = g.tensor(g.shape(), g.dtype(dtypes or g.float_dtypes), kind)
        return Case(name, fn, [x], tol=tol)


# gelu(+-inf) is NaN on the CPU (its vectorized erf form) and +inf / NaN on CUDA and vk: gelu
# draws finite inputs.
_float_unary("gelu", F.gelu, kind="finite")
for _n, _f in [("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
               ("silu", F.silu), ("mish", F.mish), ("elu", F.elu), ("selu", F.selu),
               ("celu", lambda x: F.celu(x, 0.7)), ("leaky_relu", lambda x: F.leaky_relu(x, 0.2)),
               ("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.5)), ("relu6", F.relu6),
               ("softplus", lambda x: F.softplus(x, 2.0, 3.0)), ("hardswish", F.hardswish),
               ("hardsigmoid", F.hardsigmoid), ("logsigmoid", F.logsigmoid),
               ("softshrink", lambda x: F.softshrink(x, 0.5)), ("hardshrink", lambda x: F.hardshrink(x, 0.5)),
               ("tanhshrink", F.tanhshrink), ("softsign", F.softsign),
               ("threshold", lambda x: F.threshold(x, 0.1, 20.0))]:
    _float_unary(_n, _f)


@op("glu")
def _glu(g):
    s = list(g.shape(1, 3, empty=False))
    d = g.int(0, len(s) - 1)
    s[d] *= 2
    x = g.tensor(s, g.dtype(g.float_dtypes))
    return Case("glu", lambda a: F.glu(a, d), [x], tol="math")


@op("prelu")
def _prelu(g):
    s = g.shape(1, 4, empty=False)
    x = g.tensor(s, g.dtype(g.float_dtypes))
    c = s[1] if len(s) > 1 else 1
    w = g.tensor((g.choice([1, c]),), x.base.dtype)
    return Case("prelu", F.prelu, [x, w], tol="math")


# --- reductions
def _dims(g, ndim, multi=True):
    if ndim == 0:
        return g.choice([None, 0, -1]) if g.chance(0.5) else None
    u = g.r.random()
    if u < 0.25:
        return None
    if multi and u < 0.5:
        k = g.int(1, ndim)
        return tuple(sorted(g.r.sample(range(ndim), k)))
    return g.int(-ndim, ndim - 1)


def _cast_kind(kind: str, target: torch.dtype | None) -> str:
    """Values that convert to `target` with a defined result: a non-finite float converted
    to an integer type is undefined in C++ (the CPU's value depends on the instruction that
    converts it), so such inputs are drawn finite."""
    if target is not None and target != torch.bool and not target.is_floating_point and kind == "any":
        return "finite"
    return kind


def reduction(name, fn, multi=True, dtypes=None, tol="accum", kind="any", dim_required=False,
              out=False, dtype_kw=False):
    @op(name)
    def gen(g):
        out_dtype = g.dtype() if dtype_kw and g.chance(0.3) else None
        x = g.tensor(g.shape(), g.dtype(dtypes), _cast_kind(kind, out_dtype))
        nd = len(x.view(x.base).shape)
        dim = _dims(g, nd, multi)
        if dim is None and dim_required:
            dim = 0 if nd == 0 else g.int(-nd, nd - 1)
        kw = {}
        if dim is not None:
            kw["dim"] = dim
            kw["keepdim"] = g.chance(0.5)
        if out_dtype is not None:
            kw["dtype"] = out_dtype
        return Case(name, fn, [x], kw, tol=tol)
    return gen


reduction("sum", torch.sum, dtype_kw=True)
reduction("nansum", torch.nansum, dtype_kw=True)
reduction("mean", torch.mean, dtype_kw=True)
reduction("nanmean", torch.nanmean)
reduction("prod", torch.prod, multi=False, kind="small", dtype_kw=True)
reduction("amax", torch.amax, tol="default")
reduction("amin", torch.amin, tol="default")
reduction("all", torch.all, tol="default")
reduction("any", torch.any, tol="default")
reduction("std", torch.std, dtypes=None)
reduction("var", torch.var, dtypes=None)
# The CPU's var_mean / std_mean take the mean from Welford updates, which make it NaN when a
# row holds +-inf anywhere but in its last position (torch.mean gives the inf, as vk does for
# both): finite inputs.
reduction("var_mean", torch.var_mean, kind="finite")
reduction("std_mean", torch.std_mean, kind="finite")
reduction("logsumexp", torch.logsumexp, dim_required=True)
reduction("count_nonzero", lambda a, keepdim=False, **kw: torch.count_nonzero(a, **kw), tol="default")
reduction("norm", lambda a, **kw: torch.linalg.vector_norm(a, **kw), dtypes=None)
reduction("norm_ord1", lambda a, **kw: torch.linalg.vector_norm(a, 1, **kw), dtypes=None)
reduction("norm_inf", lambda a, **kw: torch.linalg.vector_norm(a, math.inf, **kw), dtypes=None, tol="default")


def _check_arg_extreme(values_fn):
    """Values compared; the CPU's index choice among equal values is compared only through
    the values it selects (gathering the input at vk's indices gives the CPU's values)."""
    def check(cpu, vk, cpu_args, vk_args):
        compare(cpu[0], vk[0], "default", "values")
        values_fn(cpu, vk, cpu_args, vk_args)
    return check


@op("max_dim")
def _max_dim(g):
    x = g.tensor(g.shape(empty=False), g.dtype())
    nd = len(x.view(x.base).shape)
    dim = 0 if nd == 0 else g.int(-nd, nd - 1)
    keep = g.chance(0.5)
    fn = g.choice([torch.max, torch.min])

    def check(cpu, vk, cpu_args, vk_args):
        compare(cpu[0], vk[0], "default", "values")
        idx = vk[1] if keep or nd == 0 else vk[1].unsqueeze(dim)
        src = cpu_args[0]
        got = src.gather(dim, idx) if nd > 0 else src
        compare(cpu[0] if keep or nd == 0 else cpu[0].unsqueeze(dim), got, "default", "input at vk's indices")
    return Case(f"max_dim[{fn.__name__}]", lambda a: fn(a, dim, keepdim=keep), [x], check=check)


@op("argmax")
def _argmax(g):
    # Ties: the CPU and vk both return the first occurrence (documented for argmax); exact.
    x = g.tensor(g.shape(empty=False), g.dtype([d for d in g.all_dtypes if d != BOOL]))
    nd = len(x.view(x.base).shape)
    dim = None if g.chance(0.3) or nd == 0 else g.int(-nd, nd - 1)
    fn = g.choice([torch.argmax, torch.argmin])
    keep = g.chance(0.5)
    return Case(f"argmax[{fn.__name__}]", lambda a: fn(a, dim, keepdim=keep) if dim is not None else fn(a), [x])


@op("aminmax")
def _aminmax(g):
    x = g.tensor(g.shape(empty=False), g.dtype())
    nd = len(x.view(x.base).shape)
    kw = {} if nd == 0 or g.chance(0.3) else {"dim": g.int(-nd, nd - 1), "keepdim": g.chance(0.5)}
    return Case("aminmax", lambda a: torch.aminmax(a, **kw), [x])


# --- scans
for _n in ["cumsum", "cumprod", "logcumsumexp"]:
    def _gen(g, _n=_n):
        kw = {"dtype": g.dtype()} if _n != "logcumsumexp" and g.chance(0.2) else {}
        x = g.tensor(g.shape(), g.dtype(), "small" if _n == "cumprod" else _cast_kind("any", kw.get("dtype")))
        nd = len(x.view(x.base).shape)
        dim = 0 if nd == 0 else g.int(-nd, nd - 1)
        return Case(_n, lambda a: getattr(torch, _n)(a, dim, **kw), [x], tol="accum")
    op(_n)(_gen)


@op("cummax")
def _cummax(g):
    x = g.tensor(g.shape(), g.dtype())
    nd = len(x.view(x.base).shape)
    dim = 0 if nd == 0 else g.int(-nd, nd - 1)
    fn = g.choice([torch.cummax, torch.cummin])

    def check(cpu, vk, cpu_args, vk_args):
        compare(cpu[0], vk[0], "default", "values")
        src = cpu_args[0]
        got = src.gather(dim, vk[1]) if nd > 0 else src
        compare(cpu[0], got, "default", "input at vk's indices")
    return Case(f"cummax[{fn.__name__}]", lambda a: fn(a, dim), [x], check=check)


# --- sort family
@op("sort")
def _sort(g):
    x = g.tensor(g.shape(), g.dtype())
    nd = len(x.view(x.base).shape)
    dim = 0 if nd == 0 else g.int(-nd, nd - 1)
    desc = g.chance(0.5)
    # stable=True: ties keep their input order, so the indices are specified too.
    return Case("sort", lambda a: torch.sort(a, dim=dim, descending=desc, stable=True), [x])


@op("argsort")
def _argsort(g):
    x = g.tensor(g.shape(), g.dtype())
    nd = len(x.view(x.base).shape)
    dim = -1 if nd == 0 else g.int(-nd, nd - 1)
    desc = g.chance(0.5)
    return Case("argsort", lambda a: torch.argsort(a, dim=dim, descending=desc, stable=True), [x])


@op("msort")
def _msort(g):
    x = g.tensor(g.shape(1, 3), g.dtype())
    return Case("msort", torch.msort, [x])


@op("topk")
def _topk(g):
    x = g.tensor(g.shape(), g.dtype())
    shape = x.view(x.base).shape
    nd = len(shape)
    dim = -1 if nd == 0 else g.int(-nd, nd - 1)
    n = 1 if nd == 0 else shape[dim]
    k = g.int(0, n + (1 if g.chance(0.1) else 0))
    largest = g.chance(0.5)

    def check(cpu, vk, cpu_args, vk_args):
        # Which of equal values comes first is unspecified: values compared, and the input
        # gathered at vk's indices must give those values.
        compare(cpu[0], vk[0], "default", "values")
        src = cpu_args[0]
        got = src.gather(dim, vk[1]) if nd > 0 else src.expand_as(vk[1]) if vk[1].numel() else vk[0]
        compare(cpu[0], got, "default", "input at vk's indices")
    return Case("topk", lambda a: torch.topk(a, k, dim, largest=largest), [x], check=check)


@op("kthvalue")
def _kthvalue(g):
    x = g.tensor(g.shape(empty=False), g.dtype([d for d in g.all_dtypes if d != BOOL]))
    shape = x.view(x.base).shape
    nd = len(shape)
    dim = -1 if nd == 0 else g.int(-nd, nd - 1)
    n = 1 if nd == 0 else shape[dim]
    k = g.int(1, max(n, 1))
    keep = g.chance(0.5)

    def check(cpu, vk, cpu_args, vk_args):
        compare(cpu[0], vk[0], "default", "values")
        idx = vk[1] if keep or nd == 0 else vk[1].unsqueeze(dim)
        got = cpu_args[0].gather(dim, idx) if nd > 0 else cpu_args[0]
        compare(cpu[0] if keep or nd == 0 else cpu[0].unsqueeze(dim), got, "default", "input at vk's indices")
    return Case("kthvalue", lambda a: torch.kthvalue(a, k, dim, keepdim=keep), [x], check=check)


@op("median")
def _median(g):
    x = g.tensor(g.shape(empty=False), g.dtype([d for d in g.all_dtypes if d != BOOL]))
    fn = g.choice([torch.median, torch.nanmedian])
    return Case(f"median[{fn.__name__}]", fn, [x])


@op("searchsorted")
def _searchsorted(g):
    n = g.int(0, 6)
    dt = g.dtype([d for d in g.all_dtypes if d != BOOL])
    seq = TensorArg(g.values((n,), dt, "small").sort().values, lambda t: t, "contiguous")
    v = g.tensor(g.shape(0, 2), dt, "small")
    right = g.chance(0.5)
    return Case("searchsorted", lambda s, x: torch.searchsorted(s, x, right=right), [seq, v])


@op("bucketize")
def _bucketize(g):
    n = g.int(0, 6)
    dt = g.dtype([d for d in g.all_dtypes if d != BOOL])
    b = TensorArg(g.values((n,), dt, "small").sort().values, lambda t: t, "contiguous")
    v = g.tensor(g.shape(0, 3), dt, "small")
    right = g.chance(0.5)
    return Case("bucketize", lambda x, s: torch.bucketize(x, s, right=right), [v, b])


@op("unique")
def _unique(g):
    x = g.tensor(g.shape(0, 2), g.dtype(), "small")
    ri, rc = g.chance(0.5), g.chance(0.5)
    return Case("unique", lambda a: torch.unique(a, sorted=True, return_inverse=ri, return_counts=rc), [x])


# --- indexing, scatter / gather
def _index_tensor(g, n, count_shape, allow_bad=True, dtype=torch.int64):
    """Indices in [0, n) (sometimes negative or out of range, which the CPU rejects)."""
    t = g.values(count_shape, torch.int64, f"index:{max(n, 1)}")
    if allow_bad and g.chance(0.06) and t.numel():
        t.view(-1)[0] = g.choice([n, -n - 1, n + 3, -1])
    return TensorArg(t.to(dtype), lambda x: x, "contiguous")


@op("index_select")
def _index_select(g):
    x = g.tensor(g.shape(), g.dtype())
    shape = x.view(x.base).shape
    nd = len(shape)
    dim = 0 if nd == 0 else g.int(-nd, nd - 1)
    n = 1 if nd == 0 else shape[dim]
    idx = _index_tensor(g, n, (g.int(0, 5),) if nd > 0 else (1,), dtype=g.choice([torch.int64, torch.int32]))
    return Case("index_select", lambda a, i: torch.index_select(a, dim, i), [x, idx])


@op("gather")
def _gather(g):
    x = g.tensor(g.shape(1, 3), g.dtype())
    shape = x.view(x.base).shape
    nd = len(shape)
    dim = g.int(-nd, nd - 1)
    ishape = tuple(g.int(0, s) if i != dim % nd else g.int(0, 4) for i, s in enumerate(shape))
    idx = _index_tensor(g, shape[dim], ishape)
    return Case("gather", lambda a, i: torch.gather(a, dim, i), [x, idx])


@op("take_along_dim")
def _take_along_dim(g):
    x = g.tensor(g.shape(1, 3, empty=False), g.dtype())
    shape = x.view(x.base).shape
    nd = len(shape)
    dim = g.int(-nd, nd - 1)
    ishape = tuple(s if i != dim % nd else g.int(1, 4) for i, s in enumerate(shape))
    idx = _index_tensor(g, shape[dim], ishape)
    return Case("take_along_dim", lambda a, i: torch.take_along_dim(a, i, dim), [x, idx])


@op("take")
def _take(g):
    x = g.tensor(g.shape(), g.dtype())
    n = x.view(x.base).numel()
    idx = _index_tensor(g, n, g.shape(0, 2))
    return Case("take", torch.take, [x, idx])


def _scatter_operands(g, src_dtype_same=True):
    shape = g.shape(1, 3)
    self_ = g.tensor(shape, g.dtype(), layout=False)
    nd = len(shape)
    dim = g.int(-nd, nd - 1)
    ishape = tuple(g.int(0, s) if i != dim % nd else g.int(0, 4) for i, s in enumerate(shape))
    # Distinct targets along dim, so that the result does not depend on which write wins.
    n = shape[dim]
    base = torch.zeros(ishape, dtype=torch.int64)
    if base.numel():
        for pos in torch.cartesian_prod(*[torch.arange(s) for s in ishape]).view(-1, nd) if nd > 1 else torch.arange(ishape[0]).view(-1, 1):
            base[tuple(pos.tolist())] = pos[dim % nd]
        if n > 0:
            base = base % max(n, 1)
    if g.chance(0.05) and base.numel():
        base.view(-1)[0] = n + 2
    idx = TensorArg(base, lambda t: t, "contiguous")
    src_shape = tuple(s + g.int(0, 1) for s in ishape)
    src = g.tensor(src_shape, self_.base.dtype if (src_dtype_same or g.chance(0.8)) else g.dtype())
    return self_, dim, idx, src


@op("scatter")
def _scatter(g):
    s, dim, idx, src = _scatter_operands(g)
    if g.chance(0.3):
        val = g.choice([1, 2.5, True, -3])
        return Case("scatter[value]", lambda a, i: torch.scatter(a, dim, i, val), [s, idx])
    return Case("scatter", lambda a, i, b: torch.scatter(a, dim, i, b), [s, idx, src])


@op("scatter_add")
def _scatter_add(g):
    s, dim, idx, src = _scatter_operands(g)
    return Case("scatter_add", lambda a, i, b: torch.scatter_add(a, dim, i, b), [s, idx, src], tol="accum")


@op("scatter_reduce")
def _scatter_reduce(g):
    s, dim, idx, src = _scatter_operands(g)
    red = g.choice(["sum", "prod", "mean", "amax", "amin"])
    inc = g.chance(0.5)
    return Case(f"scatter_reduce[{red}]", lambda a, i, b: torch.scatter_reduce(a, dim, i, b, red, include_self=inc),
                [s, idx, src], tol="accum")


def _index_op_operands(g):
    shape = g.shape(1, 3)
    self_ = g.tensor(shape, g.dtype(), layout=False)
    nd = len(shape)
    dim = g.int(-nd, nd - 1)
    n = shape[dim]
    k = g.int(0, max(n, 1) + 1)
    # index_copy / index_add of repeated indices: the CPU's result depends on the order of the
    # writes (copy) or is a sum (add, exact only for integers): distinct indices.
    perm = torch.randperm(max(n, 1), generator=torch.Generator().manual_seed(g.int(0, 999)))[:min(k, n)] if n else torch.zeros(0, dtype=torch.int64)
    if g.chance(0.05):
        perm = torch.cat([perm, torch.tensor([n + 1])])
    idx = TensorArg(perm.to(torch.int64), lambda t: t, "contiguous")
    src_shape = list(shape)
    src_shape[dim] = perm.numel()
    src = g.tensor(src_shape, self_.base.dtype if g.chance(0.9) else g.dtype())
    return self_, dim, idx, src


@op("index_add")
def _index_add(g):
    s, dim, idx, src = _index_op_operands(g)
    alpha = g.choice([1, 2, -1])
    return Case("index_add", lambda a, i, b: a.index_add_(dim, i, b, alpha=alpha), [s, idx, src],
                tol="accum", mutates=(0,))


@op("index_copy")
def _index_copy(g):
    s, dim, idx, src = _index_op_operands(g)
    return Case("index_copy", lambda a, i, b: torch.index_copy(a, dim, i, b), [s, idx, src])


@op("index_reduce")
def _index_reduce(g):
    s, dim, idx, src = _index_op_operands(g)
    red = g.choice(["prod", "mean", "amax", "amin"])
    inc = g.chance(0.5)
    return Case(f"index_reduce[{red}]", lambda a, i, b: a.index_reduce_(dim, i, b, red, include_self=inc),
                [s, idx, src], tol="accum", mutates=(0,))


@op("index_fill")
def _index_fill(g):
    s, dim, idx, _ = _index_op_operands(g)
    val = g.scalar()
    if isinstance(val, TensorArg):
        val = val.base.item()
    return Case("index_fill", lambda a, i: torch.index_fill(a, dim, i, val), [s, idx])


@op("masked_fill")
def _masked_fill(g):
    shape = g.shape()
    x = g.tensor(shape, g.dtype())
    m = g.tensor(g.broadcast_partner(shape), BOOL)
    val = g.scalar()
    inplace = g.chance(0.3)
    if inplace:
        return Case("masked_fill_", lambda a, mm, v: a.masked_fill_(mm, v), [x, m, val], mutates=(0,))
    return Case("masked_fill", torch.masked_fill, [x, m, val])


@op("masked_select")
def _masked_select(g):
    shape = g.shape()
    x = g.tensor(shape, g.dtype())
    m = g.tensor(g.broadcast_partner(shape), BOOL)
    return Case("masked_select", torch.masked_select, [x, m])


@op("masked_scatter")
def _masked_scatter(g):
    shape = g.shape()
    x = g.tensor(shape, g.dtype(), layout=False)
    m = g.tensor(g.broadcast_partner(shape), BOOL)
    n = math.prod(shape)
    src = g.tensor((n + g.int(0, 2),), x.base.dtype)
    return Case("masked_scatter", torch.masked_scatter, [x, m, src])


@op("nonzero")
def _nonzero(g):
    x = g.tensor(g.shape(), g.dtype(), "small")
    return Case("nonzero", torch.nonzero, [x])


@op("getitem")
def _getitem(g):
    x = g.tensor(g.shape(1, 3), g.dtype())
    shape = x.view(x.base).shape
    kind = g.choice(["int_tensor", "bool_mask", "mixed", "slice"])
    if kind == "bool_mask":
        m = g.tensor(shape, BOOL, layout=False)
        return Case("getitem[mask]", lambda a, mm: a[mm], [x, m])
    if kind == "slice":
        d = g.int(0, len(shape) - 1)
        idx = tuple([slice(None)] * d + [slice(g.int(-3, 2), g.choice([None, 3, -1]), g.choice([1, 2, 3]))])
        return Case("getitem[slice]", lambda a: a[idx].clone(), [x])
    i = _index_tensor(g, shape[0], g.shape(1, 2, empty=True))
    if kind == "mixed" and len(shape) >= 2:
        j = _index_tensor(g, shape[1], g.broadcast_partner(i.base.shape) or (1,))
        return Case("getitem[mixed]", lambda a, ii, jj: a[ii, jj], [x, i, j])
    return Case("getitem[index]", lambda a, ii: a[ii], [x, i])


@op("index_put")
def _index_put(g):
    shape = g.shape(1, 3)
    x = g.tensor(shape, g.dtype(), layout=False)
    if g.chance(0.5):
        m = g.tensor(shape, BOOL, layout=False)
        v = g.scalar()
        if isinstance(v, TensorArg) and v.device is None:
            # A 0-dim value on the device itself: CUDA's index_put_ (like vk's) takes the
            # masked-fill route only for CPU values and otherwise requires self's dtype; the
            # all-CPU reference always takes that route, so such values have self's dtype.
            v = TensorArg(v.base.to(x.base.dtype), v.view, v.layout)
        return Case("setitem[mask]", lambda a, mm, vv: a.__setitem__(mm, vv), [x, m, v], mutates=(0,))
    n = shape[0]
    k = g.int(0, n)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(g.int(0, 999)))[:k]
    idx = TensorArg(perm, lambda t: t, "contiguous")
    acc = g.chance(0.3)
    vshape = (k,) + tuple(shape[1:])
    vals = g.tensor(g.broadcast_partner(vshape), x.base.dtype)
    return Case("index_put", lambda a, i, vv: a.index_put_((i,), vv, accumulate=acc), [x, idx, vals],
                mutates=(0,), tol="accum")


@op("embedding")
def _embedding(g):
    n = g.int(0, 6)
    w = g.tensor((n, g.int(0, 4)), g.dtype(g.float_dtypes))
    idx = _index_tensor(g, n, g.shape(0, 2))
    return Case("embedding", F.embedding, [idx, w])


# --- shape ops
@op("cat")
def _cat(g):
    shape = list(g.shape(1, 3))
    nd = len(shape)
    dim = g.int(-nd, nd - 1)
    ts = []
    for _ in range(g.int(1, 3)):
        s = list(shape)
        s[dim] = g.int(0, 3)
        ts.append(g.tensor(s, g.dtype() if g.chance(0.3) else None))
    if g.chance(0.1):
        ts.append(TensorArg(torch.zeros(0), lambda t: t, "contiguous"))  # legacy empty 1-D
    return Case("cat", lambda *a: torch.cat(list(a), dim), ts)


@op("stack")
def _stack(g):
    shape = g.shape(0, 3)
    dt = g.dtype()
    ts = [g.tensor(shape, dt) for _ in range(g.int(1, 3))]
    dim = g.int(-len(shape) - 1, len(shape))
    return Case("stack", lambda *a: torch.stack(list(a), dim), ts)


@op("flip")
def _flip(g):
    x = g.tensor(g.shape(), g.dtype())
    nd = len(x.view(x.base).shape)
    dims = tuple(sorted(g.r.sample(range(nd), g.int(0, nd)))) if nd else ()
    return Case("flip", lambda a: torch.flip(a, dims), [x])


@op("roll")
def _roll(g):
    x = g.tensor(g.shape(), g.dtype())
    nd = len(x.view(x.base).shape)
    if nd == 0 or g.chance(0.3):
        s = g.int(-5, 5)
        return Case("roll", lambda a: torch.roll(a, s), [x])
    d = g.int(-nd, nd - 1)
    s = g.int(-5, 5)
    return Case("roll", lambda a: torch.roll(a, s, d), [x])


@op("tril_triu")
def _tril(g):
    x = g.tensor(g.shape(2, 3), g.dtype())
    fn = g.choice([torch.tril, torch.triu])
    k = g.int(-2, 2)
    return Case(f"tril_triu[{fn.__name__}]", lambda a: fn(a, k), [x])


@op("contiguous_copy")
def _contig(g):
    x = g.tensor(g.shape(), g.dtype())
    return Case("contiguous_copy", lambda a: a.contiguous().clone(), [x])


@op("to_dtype")
def _to_dtype(g):
    dt = g.dtype()
    x = g.tensor(g.shape(), g.dtype(), _cast_kind("any", dt))
    return Case("to_dtype", lambda a: a.to(dt), [x])


@op("copy_")
def _copy_(g):
    shape = g.shape()
    dst = g.tensor(shape, g.dtype(), layout=False)
    src = g.tensor(g.broadcast_partner(shape), g.dtype(), _cast_kind("any", dst.base.dtype))
    return Case("copy_", lambda a, b: a.copy_(b), [dst, src], mutates=(0,))


@op("fill_")
def _fill(g):
    x = g.tensor(g.shape(), g.dtype())
    v = g.scalar()
    if isinstance(v, TensorArg) and x.layout == "expanded":
        # fill_ with a 0-dim tensor is copy_ (an overlap error for an expanded self) when both
        # are on one device, fill_(value.item()) across devices (CPU and CUDA alike), which an
        # all-CPU reference cannot show: expanded tensors are filled with numbers.
        v = v.base.item()
    if isinstance(v, TensorArg) and v.device == "cpu":
        # A CPU value filling a vk tensor is fill_(value.item()) (CPU and CUDA semantics for a
        # value on another device: the checked conversion of a fill); the all-CPU reference
        # takes that same route instead of its same-device copy_.
        return Case("fill_", lambda a, vv: a.fill_(vv if a.device != vv.device else vv.item()), [x, v],
                    mutates=(0,))
    return Case("fill_", lambda a, vv: a.fill_(vv), [x, v], mutates=(0,))


@op("zero_")
def _zero(g):
    x = g.tensor(g.shape(), g.dtype())
    return Case("zero_", lambda a: a.zero_(), [x], mutates=(0,))


@op("full")
def _full(g):
    shape = g.shape(0, 3)
    dt = g.dtype()
    v = g.choice([0.5, -1, 300, 1e6, math.nan, math.inf, True, 2.7, -129, 70000, 1e39])
    return Case("full", lambda: torch.full(shape, v, dtype=dt, device=_DEVICE[0]), [],
                info=f"{shape}, {v}, dtype={dt}")


@op("arange")
def _arange(g):
    dt = g.dtype([d for d in g.all_dtypes if d != BOOL])
    start, end, step = g.choice([(0, 5, 1), (1, 2.5, 0.25), (-3, 3, 2), (5, 0, -1), (0, 0, 1), (0.1, 1.0, 0.3)])
    return Case("arange", lambda: torch.arange(start, end, step, dtype=dt, device=_DEVICE[0]), [],
                info=f"{start}, {end}, {step}, dtype={dt}")


@op("linspace")
def _linspace(g):
    dt = g.dtype(g.float_dtypes + [torch.int32, torch.int64])
    steps = g.int(0, 7)
    a, b = g.choice([(0, 1), (-2.5, 3.0), (5, -5), (0, 10)])
    return Case("linspace", lambda: torch.linspace(a, b, steps, dtype=dt, device=_DEVICE[0]), [], tol="math",
                info=f"{a}, {b}, {steps}, dtype={dt}")


@op("repeat_interleave")
def _repeat_interleave(g):
    x = g.tensor(g.shape(0, 2), g.dtype())
    r = g.int(0, 3)
    return Case("repeat_interleave", lambda a: torch.repeat_interleave(a, r, 0 if a.dim() else None), [x])


@op("repeat")
def _repeat(g):
    x = g.tensor(g.shape(0, 3), g.dtype())
    nd = len(x.view(x.base).shape)
    reps = tuple(g.int(0, 3) for _ in range(nd + g.int(0, 1)))
    return Case("repeat", lambda a: a.repeat(reps), [x])


@op("pad")
def _pad(g):
    shape = g.shape(2, 4, empty=False)
    x = g.tensor(shape, g.dtype(g.float_dtypes))
    mode = g.choice(["constant", "reflect", "replicate", "circular"])
    k = min(len(shape) - 1, 3) if mode != "constant" else g.int(1, len(shape))
    pads = []
    for d in range(k):
        size = shape[-1 - d]
        hi = max(size - 1, 0) if mode == "reflect" else (size if mode == "circular" else 2)
        pads += [g.int(0, hi), g.int(0, hi)]
    val = g.choice([0.0, 1.5]) if mode == "constant" else None
    kw = {"value": val} if mode == "constant" else {}
    return Case(f"pad[{mode}]", lambda a: F.pad(a, pads, mode=mode, **kw), [x])


@op("diag")
def _diag(g):
    x = g.tensor(g.shape(1, 2), g.dtype())
    k = g.int(-1, 1)
    return Case("diag", lambda a: torch.diag(a, k), [x])


@op("diagonal_copy")
def _diagonal(g):
    x = g.tensor(g.shape(2, 3), g.dtype())
    k = g.int(-1, 1)
    return Case("diagonal_copy", lambda a: torch.diagonal(a, k).clone(), [x])


@op("rot90")
def _rot90(g):
    x = g.tensor(g.shape(2, 3), g.dtype())
    k = g.int(-2, 3)
    return Case("rot90", lambda a: torch.rot90(a, k), [x])


# --- matmul family
def _mm_dtype(g):
    return g.dtype(g.float_dtypes + ([torch.int32, torch.int64] if g.chance(0.15) else []))


@op("mm")
def _mm(g):
    m, k, n = g.int(0, 6), g.int(0, 7), g.int(0, 6)
    dt = _mm_dtype(g)
    a, b = g.tensor((m, k), dt, "small"), g.tensor((k, n), dt if g.chance(0.95) else g.dtype())
    return Case("mm", torch.mm, [a, b], tol="accum")


@op("matmul")
def _matmul(g):
    dt = _mm_dtype(g)
    k = g.int(1, 5)
    sa = tuple(g.size() for _ in range(g.int(0, 2))) + ((g.int(0, 4), k) if g.chance(0.8) else (k,))
    sb = ((k, g.int(0, 4)) if g.chance(0.8) else (k,))
    if g.chance(0.4):
        sb = g.broadcast_partner(sa[:-2]) + sb
    return Case("matmul", torch.matmul, [g.tensor(sa, dt, "small"), g.tensor(sb, dt, "small")], tol="accum")


@op("bmm")
def _bmm(g):
    bs, m, k, n = g.int(0, 3), g.int(0, 4), g.int(0, 5), g.int(0, 4)
    dt = _mm_dtype(g)
    return Case("bmm", torch.bmm, [g.tensor((bs, m, k), dt, "small"), g.tensor((bs, k, n), dt, "small")], tol="accum")


@op("addmm")
def _addmm(g):
    m, k, n = g.int(0, 5), g.int(0, 5), g.int(0, 5)
    dt = g.dtype(g.float_dtypes)
    bias = g.tensor(g.choice([(m, n), (n,), (1, n), ()]), dt, "small")
    beta, alpha = g.choice([1, 0, 0.5]), g.choice([1, 2, -0.5])
    return Case("addmm", lambda c, a, b: torch.addmm(c, a, b, beta=beta, alpha=alpha),
                [bias, g.tensor((m, k), dt, "small"), g.tensor((k, n), dt, "small")], tol="accum")


@op("baddbmm")
def _baddbmm(g):
    bs, m, k, n = g.int(0, 3), g.int(0, 4), g.int(0, 4), g.int(0, 4)
    dt = g.dtype(g.float_dtypes)
    return Case("baddbmm", lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=1.5),
                [g.tensor((bs, m, n), dt, "small"), g.tensor((bs, m, k), dt, "small"), g.tensor((bs, k, n), dt, "small")],
                tol="accum")


@op("mv_dot")
def _mv(g):
    dt = _mm_dtype(g)
    m, k = g.int(0, 5), g.int(0, 6)
    if g.chance(0.5):
        return Case("mv", torch.mv, [g.tensor((m, k), dt, "small"), g.tensor((k,), dt, "small")], tol="accum")
    fn = g.choice([torch.dot, torch.vdot, torch.inner])
    return Case(f"dot[{fn.__name__}]", fn, [g.tensor((k,), dt, "small"), g.tensor((k,), dt, "small")], tol="accum")


@op("outer")
def _outer(g):
    dt = g.dtype()
    return Case("outer", torch.outer, [g.tensor((g.int(0, 5),), dt), g.tensor((g.int(0, 5),), dt)], tol="accum")


@op("linear")
def _linear(g):
    dt = g.dtype(g.float_dtypes)
    i, o = g.int(1, 6), g.int(1, 5)
    x = g.tensor(tuple(g.size() for _ in range(g.int(0, 2))) + (i,), dt, "small")
    w = g.tensor((o, i), dt, "small")
    b = g.tensor((o,), dt, "small") if g.chance(0.6) else None
    return Case("linear", F.linear, [x, w, b], tol="accum")


@op("einsum")
def _einsum(g):
    dt = g.dtype(g.float_dtypes)
    eq, shapes = g.choice([("ij,jk->ik", [(3, 4), (4, 2)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 1)]),
                           ("i,i->", [(5,), (5,)]), ("ij->ji", [(2, 3)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 2, 4)]),
                           ("ii->i", [(3, 3)])])
    return Case(f"einsum[{eq}]", lambda *a: torch.einsum(eq, *a), [g.tensor(s, dt, "small") for s in shapes], tol="accum")


# --- norms
@op("layer_norm")
def _layer_norm(g):
    shape = g.shape(1, 4)
    dt = g.dtype() if g.chance(0.1) else g.dtype(g.float_dtypes)
    x = g.tensor(shape, dt, "small" if g.chance(0.2) else "finite")
    k = g.int(1, len(shape))
    ns = tuple(shape[-k:])
    # Finite parameters: the CPU folds weight and bias into one scale and shift, so an
    # infinite one gives NaN or inf depending on that order of operations.
    wdt = dt if g.chance(0.85) else g.dtype(g.float_dtypes)
    w = g.tensor(ns, wdt, "finite") if g.chance(0.6) else None
    b = g.tensor(ns, wdt, "finite") if g.chance(0.5) else None
    if g.chance(0.1):  # constant rows normalise to exactly 0
        x = TensorArg(torch.full(shape, 0.1, dtype=dt if dt.is_floating_point else torch.float32), lambda t: t, "contiguous")
    return Case("layer_norm", lambda a, ww, bb: F.layer_norm(a, ns, ww, bb), [x, w, b], tol="accum")


@op("rms_norm")
def _rms_norm(g):
    shape = g.shape(1, 3)
    dt = g.dtype(g.float_dtypes)
    ns = tuple(shape[-1:])
    w = g.tensor(ns, dt, "finite") if g.chance(0.6) else None
    return Case("rms_norm", lambda a, ww: F.rms_norm(a, ns, ww), [g.tensor(shape, dt, "finite"), w], tol="accum")


@op("group_norm")
def _group_norm(g):
    n, groups, cpg = g.int(1, 3), g.int(1, 3), g.int(1, 2)
    c = groups * cpg
    shape = (n, c) + tuple(g.int(1, 3) for _ in range(g.int(0, 2)))
    dt = g.dtype(g.float_dtypes)
    w = g.tensor((c,), dt, "finite") if g.chance(0.5) else None
    b = g.tensor((c,), dt, "finite") if g.chance(0.5) else None
    return Case("group_norm", lambda a, ww, bb: F.group_norm(a, groups, ww, bb), [g.tensor(shape, dt, "finite"), w, b],
                tol="accum")


@op("batch_norm")
def _batch_norm(g):
    n, c = g.int(1, 4), g.int(1, 3)
    shape = (n, c) + tuple(g.int(1, 3) for _ in range(g.int(0, 2)))
    dt = g.dtype(g.float_dtypes)
    pdt = dt if g.chance(0.7) else torch.float32
    rm = g.tensor((c,), pdt, "finite", layout=False)
    rv = g.tensor((c,), pdt, "positive", layout=False)
    w = g.tensor((c,), pdt, "finite") if g.chance(0.5) else None  # finite, as layer_norm's
    b = g.tensor((c,), pdt, "finite") if g.chance(0.5) else None
    train = g.chance(0.6)
    if train and n * math.prod(shape[2:]) == 1:
        train = False  # the CPU's "Expected more than 1 value per channel" holds on vk too, but keep it rare
    return Case(f"batch_norm[train={train}]", lambda a, m, v, ww, bb: F.batch_norm(a, m, v, ww, bb, training=train),
                [g.tensor(shape, dt, "finite"), rm, rv, w, b], tol="accum", mutates=(1, 2))


@op("normalize")
def _normalize(g):
    x = g.tensor(g.shape(1, 3), g.dtype(g.float_dtypes), "finite")
    nd = len(x.view(x.base).shape)
    pn, dim = g.choice([1.0, 2.0]), g.int(-nd, nd - 1)
    return Case("normalize", lambda a: F.normalize(a, p=pn, dim=dim), [x], tol="accum")


@op("softmax")
def _softmax(g):
    x = g.tensor(g.shape(), g.dtype(g.float_dtypes), "finite")
    nd = len(x.view(x.base).shape)
    dim = 0 if nd == 0 else g.int(-nd, nd - 1)
    fn = g.choice([torch.softmax, torch.log_softmax])
    dt = g.choice([None, None, torch.float32])
    return Case(f"softmax[{fn.__name__}]", lambda a: fn(a, dim, dtype=dt), [x], tol="accum")


# --- losses
def _loss_inputs(g, target_kind="any"):
    shape = g.shape(0, 3)
    dt = g.dtype(g.float_dtypes)
    return g.tensor(shape, dt, "finite"), g.tensor(shape, dt, target_kind), shape, dt


for _n, _f in [("mse_loss", F.mse_loss), ("l1_loss", F.l1_loss), ("smooth_l1_loss", F.smooth_l1_loss),
               ("huber_loss", F.huber_loss), ("soft_margin_loss", F.soft_margin_loss)]:
    def _gen(g, _n=_n, _f=_f):
        a, b, _, _ = _loss_inputs(g, "finite")
        red = g.choice(["mean", "sum", "none"])
        return Case(f"{_n}[{red}]", lambda x, y: _f(x, y, reduction=red), [a, b], tol="accum")
    op(_n)(_gen)


@op("binary_cross_entropy")
def _bce(g):
    shape = g.shape(0, 3)
    dt = g.dtype([torch.float32, torch.float64])
    p = g.tensor(shape, dt, "unit")
    p = TensorArg(p.base.abs() * 0.9 + 0.05, p.view, p.layout)
    t = g.tensor(shape, dt, "unit")
    t = TensorArg(t.base.abs(), t.view, t.layout)
    red = g.choice(["mean", "sum", "none"])
    return Case(f"binary_cross_entropy[{red}]", lambda x, y: F.binary_cross_entropy(x, y, reduction=red), [p, t], tol="accum")


@op("bce_with_logits")
def _bcel(g):
    # float32 / float64: the CPU composes this loss of float16 / bfloat16 steps, each rounded,
    # where vk's kernel computes in float32, so their sums differ by more than the dtype's
    # tolerance (mse / l1 / ... check the half types).
    shape = g.shape(0, 3)
    dt = g.dtype([torch.float32, torch.float64])
    a, b = g.tensor(shape, dt, "finite"), g.tensor(shape, dt, "unit")
    pw = g.tensor(shape[-1:], dt, "positive") if shape and g.chance(0.3) else None
    red = g.choice(["mean", "sum", "none"])
    return Case(f"bce_with_logits[{red}]", lambda x, y, w: F.binary_cross_entropy_with_logits(x, y, pos_weight=w, reduction=red),
                [a, b, pw], tol="accum")


@op("cross_entropy")
def _cross_entropy(g):
    n, c = g.int(1, 4), g.int(1, 5)
    dt = g.dtype(g.float_dtypes)
    logits = g.tensor((n, c), dt, "finite")
    if g.chance(0.3):
        target = g.tensor((n, c), dt, "unit")
        target = TensorArg(target.base.abs(), target.view, target.layout)
    else:
        target = _index_tensor(g, c, (n,))
    red = g.choice(["mean", "sum", "none"])
    ls = g.choice([0.0, 0.0, 0.1])
    ii = g.choice([-100, 0])
    return Case(f"cross_entropy[{red}]", lambda x, t: F.cross_entropy(x, t, reduction=red, label_smoothing=ls, ignore_index=ii),
                [logits, target], tol="accum")


@op("nll_loss")
def _nll(g):
    n, c = g.int(1, 4), g.int(1, 5)
    dt = g.dtype(g.float_dtypes)
    red = g.choice(["mean", "sum", "none"])
    w = g.tensor((c,), dt, "positive") if g.chance(0.3) else None
    return Case(f"nll_loss[{red}]", lambda x, t, ww: F.nll_loss(x, t, weight=ww, reduction=red),
                [g.tensor((n, c), dt, "finite"), _index_tensor(g, c, (n,)), w], tol="accum")


@op("kl_div")
def _kl_div(g):
    a, b, _, _ = _loss_inputs(g, "unit")
    red = g.choice(["batchmean", "sum", "none", "mean"])
    lt = g.chance(0.5)
    return Case(f"kl_div[{red}]", lambda x, y: F.kl_div(x, y, reduction=red, log_target=lt), [a, b], tol="accum")


@op("cosine_similarity")
def _cos_sim(g):
    shape = g.shape(1, 3, empty=False)
    dt = g.dtype(g.float_dtypes)
    return Case("cosine_similarity", lambda x, y: F.cosine_similarity(x, y, dim=-1),
                [g.tensor(shape, dt, "finite"), g.tensor(shape, dt, "finite")], tol="accum")


@op("pairwise_distance")
def _pairwise(g):
    shape = (g.int(1, 4), g.int(1, 5))
    dt = g.dtype(g.float_dtypes)
    pn = g.choice([1.0, 2.0])
    return Case("pairwise_distance", lambda x, y: F.pairwise_distance(x, y, p=pn),
                [g.tensor(shape, dt, "finite"), g.tensor(shape, dt, "finite")], tol="accum")


# --- convolution and pooling
@op("conv1d")
def _conv1d(g):
    n, cin, cout, l, k = g.int(1, 2), g.int(1, 3), g.int(1, 3), g.int(1, 7), g.int(1, 3)
    dt = g.dtype([torch.float32, torch.float64] + HALF)
    stride, pad, dil = g.int(1, 2), g.int(0, 1), g.int(1, 2)
    if dt == torch.float16 and stride > 1:
        dil = 1  # PyTorch 2.13's CPU conv1d crashes (SIGSEGV) on float16 with stride and dilation 2
    b = g.tensor((cout,), dt, "small") if g.chance(0.5) else None
    return Case("conv1d", lambda x, w, bb: F.conv1d(x, w, bb, stride, pad, dil),
                [g.tensor((n, cin, l), dt, "small"), g.tensor((cout, cin, k), dt, "small"), b], tol="accum")


@op("conv2d")
def _conv2d(g):
    n, cin, cout, h, w, k = g.int(1, 2), g.int(1, 3), g.int(1, 3), g.int(1, 6), g.int(1, 6), g.int(1, 3)
    groups = g.choice([1, 1, cin]) if cout % cin == 0 else 1
    dt = g.dtype([torch.float32, torch.float64] + HALF)
    stride, pad = g.int(1, 2), g.int(0, 1)
    b = g.tensor((cout,), dt, "small") if g.chance(0.5) else None
    return Case("conv2d", lambda x, ww, bb: F.conv2d(x, ww, bb, stride, pad, 1, groups),
                [g.tensor((n, cin, h, w), dt, "small"), g.tensor((cout, cin // groups, k, k), dt, "small"), b], tol="accum")


@op("conv_transpose2d")
def _convt2d(g):
    n, cin, cout, h, w, k = g.int(1, 2), g.int(1, 3), g.int(1, 3), g.int(1, 4), g.int(1, 4), g.int(1, 3)
    dt = g.dtype([torch.float32, torch.float64])
    stride = g.int(1, 2)
    return Case("conv_transpose2d", lambda x, ww: F.conv_transpose2d(x, ww, None, stride),
                [g.tensor((n, cin, h, w), dt, "small"), g.tensor((cin, cout, k, k), dt, "small")], tol="accum")


@op("max_pool2d")
def _max_pool2d(g):
    n, c, h, w = g.int(1, 2), g.int(1, 2), g.int(1, 7), g.int(1, 7)
    k = g.int(1, 3)
    dt = g.dtype(g.float_dtypes + [torch.int32, torch.int64, torch.uint8])
    stride, pad, ceil = g.int(1, 2), g.int(0, k // 2), g.chance(0.3)
    return Case("max_pool2d", lambda x: F.max_pool2d(x, k, stride, pad, ceil_mode=ceil),
                [g.tensor((n, c, h, w), dt)], tol="default")


@op("max_pool1d")
def _max_pool1d(g):
    x = g.tensor((g.int(1, 2), g.int(1, 3), g.int(1, 8)), g.dtype(g.float_dtypes))
    k = g.int(1, 3)
    stride, pad = g.int(1, 2), g.int(0, k // 2)
    return Case("max_pool1d", lambda a: F.max_pool1d(a, k, stride, pad), [x])


@op("avg_pool2d")
def _avg_pool2d(g):
    n, c, h, w = g.int(1, 2), g.int(1, 2), g.int(1, 7), g.int(1, 7)
    k = g.int(1, 3)
    dt = g.dtype(g.float_dtypes)
    stride, pad = g.int(1, 2), g.int(0, k // 2)
    cip = g.chance(0.5)
    return Case("avg_pool2d", lambda x: F.avg_pool2d(x, k, stride, pad, count_include_pad=cip),
                [g.tensor((n, c, h, w), dt)], tol="accum")


@op("adaptive_avg_pool2d")
def _aap(g):
    x = g.tensor((g.int(1, 2), g.int(1, 2), g.int(1, 7), g.int(1, 7)), g.dtype(g.float_dtypes))
    os = (g.int(1, 4), g.int(1, 4))
    return Case("adaptive_avg_pool2d", lambda a: F.adaptive_avg_pool2d(a, os), [x], tol="accum")


@op("adaptive_max_pool2d")
def _amp(g):
    x = g.tensor((g.int(1, 2), g.int(1, 2), g.int(1, 7), g.int(1, 7)), g.dtype(g.float_dtypes))
    os = (g.int(1, 4), g.int(1, 4))
    return Case("adaptive_max_pool2d", lambda a: F.adaptive_max_pool2d(a, os), [x])


@op("interpolate")
def _interp(g):
    mode = g.choice(["nearest", "bilinear", "bicubic", "nearest-exact"])
    x = g.tensor((g.int(1, 2), g.int(1, 2), g.int(1, 5), g.int(1, 5)), g.dtype([torch.float32, torch.float64]))
    size = (g.int(1, 7), g.int(1, 7))
    kw = {"align_corners": g.chance(0.5)} if mode in ("bilinear", "bicubic") else {}
    return Case(f"interpolate[{mode}]", lambda a: F.interpolate(a, size=size, mode=mode, **kw), [x], tol="accum")
