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
        torch.zeros(2, dtype=torch.complex64, device="vk")
