"""Native element-wise ops against PyTorch's CPU: dtypes, layouts, broadcasting, empty and
0-dim tensors, CPU scalars, bad input."""
import pytest
import torch

from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int8,
          torch.uint8, torch.bool]
SHAPES = [(5, 7), (), (0, 3), (2, 3, 4)]

UNARY = {
    "neg": torch.neg, "abs": torch.abs, "relu": torch.relu, "exp": torch.exp,
    "log": torch.log, "sqrt": torch.sqrt, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
}
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
}


def positive_if(name, x):
    # log/sqrt of negatives give NaN on both sides; keep most inputs in the domain.
    if name in ("log", "sqrt") and x.dtype.is_floating_point:
        return x.abs() + 0.1
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    fn = UNARY[name]
    for shape in SHAPES:
        x = positive_if(name, make(shape, dtype))
        for _, layout in layouts(x):
            check(lambda a: fn(layout(a)), x)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_inplace_and_out(name):
    fn = UNARY[name]
    x = positive_if(name, make((4, 5), torch.float32))
    check(lambda a: getattr(a, name + "_")(), x)
    check(lambda a: fn(a, out=torch.empty_like(a)), x)
    # out= with a wrong-shaped output is resized, like on CPU
    check(lambda a: fn(a, out=torch.empty(0, device=a.device)), x)


def test_unary_special_values():
    x = torch.tensor([0.0, -0.0, 1e-30, 80.0, -80.0, 1e30, -1e30, float("inf"), float("-inf"),
                      float("nan")])
    for name, fn in UNARY.items():
        check(fn, x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, dtype):
    fn = BINARY[name]
    for shape in SHAPES:
        a = make(shape, dtype, seed=1)
        b = make(shape, dtype, seed=2)
        if name == "div" and not dtype.is_floating_point and dtype != torch.bool:
            b = torch.where(b == 0, torch.ones_like(b), b)
        for _, layout in layouts(a):
            check(lambda x, y: fn(layout(x), y), a, b)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_and_scalars(name):
    fn = BINARY[name]
    a = make((3, 1, 5), torch.float32, seed=3)
    b = make((4, 1), torch.float32, seed=4)
    check(fn, a, b)
    check(lambda x: fn(x, 2.5), a)                        # Python scalar
    check(lambda x: fn(x, torch.tensor(-1.5)), a)         # 0-dim CPU tensor
    check(lambda x, s: fn(x, s), a, torch.tensor(0.75))   # 0-dim vk tensor
    check(lambda x: fn(x, 3), make((6,), torch.int32))    # int tensor, int scalar
    check(lambda x: fn(x, 0.5), make((6,), torch.int64))  # int tensor, float scalar: promotion


@pytest.mark.parametrize("a_dtype,b_dtype", [
    (torch.float32, torch.float16), (torch.int32, torch.float32), (torch.int64, torch.int32),
    (torch.bool, torch.int32), (torch.uint8, torch.int8), (torch.bfloat16, torch.float16),
    (torch.bool, torch.float16)])
@pytest.mark.parametrize("name", ["add", "mul", "div", "lt", "maximum"])
def test_binary_type_promotion(name, a_dtype, b_dtype):
    a, b = make((4, 3), a_dtype, seed=5), make((4, 3), b_dtype, seed=6)
    if name == "div" and not b_dtype.is_floating_point and b_dtype != torch.bool:
        b = torch.where(b == 0, torch.ones_like(b), b)
    check(BINARY[name], a, b)


def test_add_sub_alpha():
    a, b = make((5, 4), torch.float32, seed=7), make((5, 4), torch.float32, seed=8)
    check(lambda x, y: torch.add(x, y, alpha=-2.5), a, b)
    check(lambda x, y: torch.sub(x, y, alpha=3), a, b)
    ia, ib = make((5,), torch.int64, seed=9), make((5,), torch.int64, seed=10)
    check(lambda x, y: torch.add(x, y, alpha=4), ia, ib)
    check(lambda x, y: torch.add(x, y, alpha=0.5), ia, ib)       # error on both
    check(lambda x, y: torch.sub(x, y), make((3,), torch.bool), make((3,), torch.bool))  # error


def test_inplace_binary():
    a, b = make((4, 6), torch.float32, seed=11), make((6,), torch.float32, seed=12)
    check(lambda x, y: x.add_(y), a, b)
    check(lambda x, y: x.mul_(y), a, b)
    check(lambda x, y: x.sub_(y, alpha=2), a, b)
    check(lambda x, y: x.div_(y), a, b)
    check(lambda x: x.add_(1), make((3,), torch.int32))
    # results that cannot be cast back raise like on CPU
    check(lambda x, y: x.add_(y), make((3,), torch.int32), make((3,), torch.float32))
    # in-place output must have the broadcast shape
    check(lambda x, y: x.add_(y), make((3,), torch.float32), make((2, 3), torch.float32))


def test_int64_exact_beyond_2_pow_32():
    a = torch.tensor([2**40 + 1, -(2**35) - 7, 2**62], dtype=torch.int64)
    b = torch.tensor([3, 2**33, -5], dtype=torch.int64)
    for fn in (torch.add, torch.sub, torch.mul, torch.maximum, torch.eq, torch.lt):
        check(fn, a, b)


def test_where():
    c = make((4, 5), torch.bool, seed=13)
    a, b = make((4, 5), torch.float32, seed=14), make((1, 5), torch.float32, seed=15)
    check(torch.where, c, a, b)
    check(lambda c_, a_: torch.where(c_, a_, 0.0), c, a)
    check(lambda c_, a_: torch.where(c_, 2, a_), c, a)
    check(torch.where, c, make((4, 5), torch.int32), make((4, 5), torch.float16))
    check(torch.where, make((), torch.bool), make((3,), torch.int64), make((3,), torch.int64))
    check(torch.where, c[:0], a[:0], b)  # empty
    check(lambda c_, a_, b_: torch.where(c_.t(), a_.t(), b_.t()), c, a, b[:, :])
    check(torch.where, make((4, 5), torch.float32), a, b)  # non-bool condition: error


def test_mixed_device_error_matches_cuda():
    a = torch.ones(3, device="vk")
    b = torch.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mul(b, a)
    # a 0-dim CPU tensor is a scalar and is allowed, as with CUDA
    assert torch.equal((a + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))


def test_shape_mismatch_error():
    check(torch.add, make((3,), torch.float32), make((4,), torch.float32))
    check(torch.add, make((2, 3), torch.float32), make((3, 2), torch.float32))


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises((TypeError, RuntimeError), match="vk"):
        torch.zeros(2, dtype=torch.uint32, device="vk")
    # complex tensors exist on vk, but an element-wise kernel not taught about them refuses
    with pytest.raises((TypeError, RuntimeError), match="vk"):
        z = torch.zeros(2, dtype=torch.complex64, device="vk")
        torch.addcmul(z, z, z)


# ---------------------------------------------------------------- math and rounding ops

MATH_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
               torch.int64, torch.bool]
MATH_SHAPES = [(5, 7), (), (0, 3)]
F = torch.nn.functional

MATH_UNARY = {
    "exp2": torch.exp2, "expm1": torch.expm1, "log2": torch.log2, "log10": torch.log10,
    "log1p": torch.log1p, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
    "cosh": torch.cosh, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
    "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv, "lgamma": torch.lgamma,
    "digamma": torch.digamma, "reciprocal": torch.reciprocal, "rsqrt": torch.rsqrt,
    "sign": torch.sign, "sgn": torch.sgn, "floor": torch.floor, "ceil": torch.ceil,
    "trunc": torch.trunc, "frac": torch.frac, "round": torch.round,
    "round_decimals": lambda x: torch.round(x, decimals=2),
    "round_neg_decimals": lambda x: torch.round(x * 100, decimals=-1),
    "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite,
    "isposinf": torch.isposinf, "isneginf": torch.isneginf, "signbit": torch.signbit,
    "nan_to_num": torch.nan_to_num, "logical_not": torch.logical_not,
    "bitwise_not": torch.bitwise_not,
}
# Inputs mostly inside the function's domain (outside it both sides give NaN).
DOMAIN = {
    "log2": lambda x: x.abs() + 0.1, "log10": lambda x: x.abs() + 0.1,
    "log1p": lambda x: x.abs(), "rsqrt": lambda x: x.abs() + 0.1,
    "asin": lambda x: x / 3.5, "acos": lambda x: x / 3.5, "atanh": lambda x: x / 3.5,
    "erfinv": lambda x: x / 3.2, "acosh": lambda x: x.abs() + 1,
}


def in_domain(name, x):
    if name in DOMAIN and x.dtype.is_floating_point:
        return DOMAIN[name](x)
    return x


@pytest.mark.parametrize("dtype", MATH_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(MATH_UNARY))
def test_math_unary(name, dtype):
    fn = MATH_UNARY[name]
    for shape in MATH_SHAPES:
        x = in_domain(name, make(shape, dtype))
        for _, layout in (layouts(x) if shape == (5, 7) else [("contiguous", lambda a: a)]):
            check(lambda a: fn(layout(a)), x)


SPECIAL = [0.0, -0.0, 1e-30, -1e-7, 0.5, -0.5, 1.0, -1.0, 2.0, -2.5, 3.7, -4.2, 30.0, -30.0,
           80.0, -80.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(MATH_UNARY))
def test_math_unary_special_values(name, dtype):
    if name == "bitwise_not":
        return
    x = torch.tensor(SPECIAL, dtype=dtype)
    check(MATH_UNARY[name], x)


@pytest.mark.parametrize("name", ["exp2", "tan", "atan", "lgamma", "digamma", "erfinv", "floor",
                                  "frac", "sign", "round_decimals", "nan_to_num", "isnan"])
def test_math_unary_inplace_and_out(name):
    fn = MATH_UNARY[name]
    x = in_domain(name, make((4, 5), torch.float32))
    check(lambda a: fn(a, out=torch.empty_like(a)) if name != "round_decimals"
          else torch.round(a, decimals=2, out=torch.empty_like(a)), x)
    if name not in ("isnan", "nan_to_num"):
        inplace = {"round_decimals": lambda a: a.round_(decimals=2)}.get(name, lambda a: getattr(a, name + "_")())
        check(inplace, x)
    # in-place float op on an integer tensor: the result cannot be cast back (CPU raises)
    if name in ("exp2", "tan", "lgamma"):
        check(lambda a: getattr(a, name + "_")(), make((3,), torch.int32))


def test_accurate_special_functions_dense():
    # Dense sweeps, also across the zeros of lgamma and digamma (where formulas cancel).
    x = torch.cat([torch.linspace(-9.9, 9.9, 4001), torch.linspace(-3.0, -2.0, 2001),
                   torch.logspace(-6, 6, 801), -torch.logspace(-6, 6, 801)])
    for fn in (torch.lgamma, torch.digamma, torch.tan, torch.atan, torch.sinh, torch.asinh,
               torch.erfinv, torch.atanh, torch.cosh):
        arg = x / 10 if fn in (torch.erfinv, torch.atanh) else x
        if fn in (torch.sinh, torch.cosh):
            # float32 sinh/cosh are finite up to 89.4; the CPU's vectorized ones overflow from
            # about 89, its scalar ones do not.
            arg = arg.clamp(-88, 88)
        check(fn, arg)
        check(fn, arg.double())


def test_nan_to_num_arguments():
    x = torch.tensor([float("nan"), float("inf"), float("-inf"), 1.5, -2.0, 7e4])
    for kw in ({}, dict(nan=1.0), dict(posinf=5.0, neginf=-6.0), dict(nan=-1.0, posinf=1e10),
               dict(neginf=float("-inf"))):
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
            check(lambda a: torch.nan_to_num(a, **kw), x.to(dtype))
    check(lambda a: torch.nan_to_num_(a, nan=3.0), x)
    check(lambda a: torch.nan_to_num(a, out=torch.empty_like(a)), x)
    check(lambda a: torch.nan_to_num(a, out=torch.empty_like(a, dtype=torch.float64)), x)  # error
    check(torch.nan_to_num, make((4,), torch.int32))


def test_round_decimals():
    x = torch.tensor([0.125, 1.2345, -2.675, 1e10, 123456.5, float("nan"), float("inf")])
    for d in (0, 1, 2, 3, -1, -2):
        for dtype in (torch.float32, torch.float64, torch.float16):
            check(lambda a: torch.round(a, decimals=d), x.to(dtype))
    check(lambda a: torch.round(a, decimals=0), make((4,), torch.int32))
    check(lambda a: torch.round(a, decimals=1), make((4,), torch.int32))  # error on both


MATH_BINARY = {
    "pow": torch.pow, "fmod": torch.fmod, "remainder": torch.remainder,
    "floor_divide": torch.floor_divide,
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "copysign": torch.copysign, "atan2": torch.atan2, "hypot": torch.hypot,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor, "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift,
    "bitwise_right_shift": torch.bitwise_right_shift,
    "clamp_min": torch.clamp_min, "clamp_max": torch.clamp_max,
}
INT_DIVISION = ("fmod", "remainder", "floor_divide", "div_trunc", "div_floor")


def nonzero_if(name, b):
    # Integer division by zero raises ZeroDivisionError on the CPU; the device gives 0.
    if name in INT_DIVISION and not b.dtype.is_floating_point and b.dtype != torch.bool:
        return torch.where(b == 0, torch.ones_like(b), b)
    if name == "pow" and not b.dtype.is_floating_point:
        return b.abs() % 5 if b.dtype != torch.bool else b
    return b


@pytest.mark.parametrize("dtype", DTYPES + [torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(MATH_BINARY))
def test_math_binary(name, dtype):
    fn = MATH_BINARY[name]
    for shape in MATH_SHAPES:
        a = make(shape, dtype, seed=1)
        b = nonzero_if(name, make(shape, dtype, seed=2))
        for _, layout in (layouts(a) if shape == (5, 7) else [("contiguous", lambda t: t)]):
            check(lambda x, y: fn(layout(x), y), a, b)


@pytest.mark.parametrize("name", sorted(MATH_BINARY))
def test_math_binary_broadcast_scalars_promotion(name):
    fn = MATH_BINARY[name]
    a, b = make((3, 1, 5), torch.float32, seed=3), make((4, 1), torch.float32, seed=4)
    ia, ib = make((3, 1, 5), torch.int32, seed=5), nonzero_if(name, make((4, 1), torch.int64, seed=6))
    check(fn, a, b)
    check(fn, ia, ib)
    check(fn, a, ib)                                      # int + float promotion
    check(fn, a.half(), b)                                 # float16 + float32
    check(lambda x: fn(x, torch.tensor(1.5)), a)          # 0-dim CPU tensor
    check(lambda x, s: fn(x, s), a, torch.tensor(-0.75))  # 0-dim vk tensor
    check(lambda x: fn(x, 3), ia)                          # int tensor, Python int
    check(lambda x: fn(x, 2.5), ia)                        # int tensor, Python float
    if hasattr(ia, name + "_"):
        check(lambda x: getattr(x, name + "_")(torch.full((5,), 3, dtype=x.dtype, device=x.device)), ia)
    out_dtype = torch.bool if name.startswith("logical") else torch.float32
    check(lambda x, y: fn(x, y, out=torch.empty(0, dtype=out_dtype, device=x.device)), a, b)


@pytest.mark.parametrize("name", ["pow", "fmod", "remainder", "div_trunc", "div_floor",
                                  "floor_divide", "copysign", "atan2", "hypot"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_math_binary_special_values(name, dtype):
    s = torch.tensor(SPECIAL, dtype=dtype)
    a, b = torch.meshgrid(s, s, indexing="ij")
    fn = MATH_BINARY[name]
    if name in ("fmod", "remainder") and dtype == torch.float32:
        # vk's fmod is exact; the CPU's vectorized float32 one gives NaN for huge quotients
        # (1e30 mod 1e-30), so the reference is computed in float64 (exact, then rounded).
        cpu_fn = fn
        fn = lambda x, y: cpu_fn(x.double(), y.double()).float() if x.device.type == "cpu" else cpu_fn(x, y)  # noqa: E731
    check(fn, a.contiguous(), b.contiguous())


def test_pow_overloads():
    x = make((4, 5), torch.float32)
    i = make((4, 5), torch.int32)
    for e in (0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5, True, False):
        check(lambda a: torch.pow(a, e), x)
        check(lambda a: a.pow_(e), x)
        check(lambda a: torch.pow(a, e), i)                 # negative int powers: error on both
        check(lambda a: torch.pow(a, e), make((3,), torch.bool))
    for base in (2, 2.5, -1.5, 1, 0):
        check(lambda a: torch.pow(base, a), x)
        check(lambda a: torch.pow(base, a), i.abs() % 6)
        check(lambda a: torch.pow(base, a, out=torch.empty_like(a)), x)
    check(lambda a: torch.pow(True, a), make((3,), torch.bool))
    check(lambda a: a ** 2, x.half())
    check(lambda a: 2 ** a, x.double())
    check(torch.pow, x, x.abs())
    check(lambda a, b: torch.pow(a, b, out=torch.empty_like(a)), x, x.abs())
    check(lambda a, b: a.pow_(b), i.abs(), make((4, 5), torch.int32, seed=3).abs() % 4)
    check(torch.pow, make((3,), torch.bool), make((3,), torch.bool))  # error on both


def test_fmod_remainder_floor_divide_scalars_and_signs():
    a = torch.tensor([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 7.0, 1e8])
    b = torch.tensor([2.0, 2.0, -2.0, -2.0, 3.0, -3.0, 0.1, 3.0])
    for fn in (torch.fmod, torch.remainder, torch.floor_divide,
               lambda x, y: torch.div(x, y, rounding_mode="trunc"),
               lambda x, y: torch.div(x, y, rounding_mode="floor")):
        check(fn, a, b)
        check(fn, a.half(), b.half())
        check(fn, a.double(), b.double())
        check(lambda x: fn(x, 1.5), a)
        check(lambda x: fn(x, -3), a)
    ia = torch.tensor([7, -7, 7, -7, 0, -128, 127], dtype=torch.int8)
    ib = torch.tensor([2, 2, -2, -2, 5, 3, -1], dtype=torch.int8)
    for dtype in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
        for fn in (torch.fmod, torch.remainder, torch.floor_divide):
            check(fn, ia.to(dtype), ib.to(dtype))
    check(lambda y: torch.remainder(7, y), b)            # remainder.Scalar_Tensor
    check(lambda y: torch.remainder(-7, y), ib.int())
    check(lambda x: x.fmod_(2.5), a)
    check(lambda x: x.remainder_(-2.5), a)
    check(lambda x: x.floor_divide_(2), ia.int())
    check(lambda x, y: torch.div(x, y, rounding_mode="round"), a, b)  # bad mode: error on both


def test_int64_division_and_shifts_beyond_2_pow_32():
    a = torch.tensor([2**40 + 3, -(2**35) - 7, 2**62, -(2**63), 5], dtype=torch.int64)
    b = torch.tensor([3, 2**33, -5, 7, -(2**40)], dtype=torch.int64)
    for fn in (torch.fmod, torch.remainder, torch.floor_divide,
               lambda x, y: torch.div(x, y, rounding_mode="trunc")):
        check(fn, a, b)
    s = torch.tensor([0, 1, 31, 33, 63], dtype=torch.int64)
    check(torch.bitwise_left_shift, a, s)
    check(torch.bitwise_right_shift, a, s)


def test_shifts_and_bitwise_overloads():
    x = make((6,), torch.int32)
    for dtype in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
        v = torch.tensor([1, -1, 100, -100, 7, 0], dtype=torch.int64).to(dtype)
        s = torch.tensor([0, 3, 7, 8, 9, 40], dtype=dtype)
        check(lambda a, b: a << b, v, s)
        check(lambda a, b: a >> b, v, s)
        check(lambda a: a << 2, v)
        check(lambda a: a >> 1, v)
    check(lambda a: a.__ilshift__(2), x)
    check(lambda a: a.__irshift__(1), x)
    check(lambda a, b: a & b, x, make((6,), torch.int32, seed=4))
    check(lambda a: a | 5, x)
    check(lambda a: a ^ True, make((6,), torch.bool))
    check(lambda a: ~a, make((6,), torch.bool))
    check(lambda a: ~a, x)
    check(lambda a: a.bitwise_and_(3), x)
    check(lambda a: torch.bitwise_xor(a, a, out=torch.empty_like(a)), x)
    check(lambda a: a << 1, make((3,), torch.float32))  # error on both
    check(lambda a: a & a, make((3,), torch.float32))   # error on both


def test_logical_ops_dtypes_and_out():
    a, b = make((4, 5), torch.float32, seed=1), make((4, 5), torch.int32, seed=2)
    a[0, 0] = float("nan")
    for fn in (torch.logical_and, torch.logical_or, torch.logical_xor):
        check(fn, a, b)
        check(fn, a, make((4, 5), torch.bool))
        check(lambda x, y: fn(x, y, out=torch.empty(0, dtype=torch.float32, device=x.device)), a, b)
        check(lambda x, y: getattr(x, fn.__name__ + "_")(y), make((4, 5), torch.bool), b)
    check(torch.logical_not, a)
    check(lambda x: torch.logical_not(x, out=torch.empty(0, dtype=torch.int16, device=x.device)), a)
    check(lambda x: x.logical_not_(), b)


def test_clamp_overloads():
    x = make((4, 6), torch.float32)
    x[0, 0] = float("nan")
    i = make((4, 6), torch.int32)
    for lo, hi in ((-1, 2), (-1.5, None), (None, 0.5), (2, -1), (float("nan"), 1), (0, float("nan"))):
        check(lambda a: torch.clamp(a, lo, hi), x)
        check(lambda a: torch.clamp(a, lo, hi), x.half())
        check(lambda a: torch.clamp(a, lo, hi), i)            # float bounds promote ints
        check(lambda a: a.clamp_(lo, hi), x)
        check(lambda a: a.clamp_(lo, hi), i)                  # promotion in place: error
        check(lambda a: torch.clamp(a, lo, hi, out=torch.empty_like(a)), x)
    check(lambda a: torch.clamp(a, 0.1, 0.3), make((8,), torch.float16))  # bounds in the dtype
    check(lambda a: torch.clamp(a, 1, 5), make((6,), torch.bool))
    check(lambda a: torch.clamp(a, True, True), make((6,), torch.bool))  # error on both
    check(lambda a: torch.clamp(a), x)                                 # error on both
    check(lambda a: torch.clamp(a, 300), make((6,), torch.int8))        # overflow: error on both
    check(lambda a: torch.clamp_min(a, -0.5), x)
    check(lambda a: torch.clamp_max(a, 7), i)
    check(lambda a: a.clamp_min_(0), i)
    lo, hi = make((1, 6), torch.float32, seed=7) - 1, make((4, 1), torch.float32, seed=8) + 1
    check(torch.clamp, x, lo, hi)
    check(lambda a, l: torch.clamp(a, min=l), x, lo)
    check(lambda a, h: torch.clamp(a, max=h), x, hi)
    check(lambda a, l, h: a.clamp_(l, h), x, lo, hi)
    check(lambda a, l, h: torch.clamp(a, l, h), i, lo.int(), hi.double())
    check(lambda a, l: torch.clamp_min(a, l), i, lo)
    check(lambda a, b: torch.clamp(a, a, b), make((4,), torch.bool), make((4,), torch.bool))  # error


def test_lerp_addcmul_addcdiv():
    a, b = make((4, 5), torch.float32, seed=1), make((4, 5), torch.float32, seed=2)
    w = make((5,), torch.float32, seed=3)
    for weight in (0.0, 0.25, 0.5, 1.0, -2.0, 3.5):
        check(lambda x, y: torch.lerp(x, y, weight), a, b)
        check(lambda x, y: torch.lerp(x, y, weight), a.half(), b.half())
        check(lambda x, y: x.lerp_(y, weight), a, b)
    check(torch.lerp, a, b, w)
    check(torch.lerp, a.double(), b.double(), w.double())
    check(lambda x, y, z: torch.lerp(x, y, z, out=torch.empty_like(x)), a, b, w)
    check(lambda x, y, z: x.lerp_(y, z), a, b, w)
    check(torch.lerp, a, b, w.double())                               # dtype mismatch: error
    check(lambda x, y: torch.lerp(x, y, 0.5), a.int(), b.int())      # error on both
    c = make((4, 5), torch.float32, seed=4).abs() + 0.5
    for value in (1, 0.5, -2):
        check(lambda x, y, z: torch.addcmul(x, y, z, value=value), a, b, c)
        check(lambda x, y, z: torch.addcdiv(x, y, z, value=value), a, b, c)
        check(lambda x, y, z: x.addcmul_(y, z, value=value), a, b, c)
        check(lambda x, y, z: x.addcdiv_(y, z, value=value), a, b, c)
    check(torch.addcmul, a.half(), b, w)
    ia, ib = make((4, 5), torch.int32, seed=5), make((4, 5), torch.int64, seed=6)
    check(lambda x, y: torch.addcmul(x, y, y, value=3), ia, ib)
    check(lambda x, y: torch.addcdiv(x, y, y), ia, ib)               # error on both
    check(lambda x: torch.addcmul(x, x, x), make((3,), torch.bool))  # error on both


def test_to_dtype_is_native():
    x = make((3, 4), torch.float32)
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int8,
                  torch.uint8, torch.bool, torch.int64):
        check(lambda a: a.to(dtype), x)
        check(lambda a: a.t().to(dtype), x)
    check(lambda a: a.to(torch.float32), make((3, 4), torch.int64))
