"""Type promotion, scalar wrapping, output casting, bool casts, empty tensors and bad input:
every case of issue 23, each compared with the CPU (its values and dtypes, or the type of the
exception it raises)."""
import math

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("strict_native")


def on_both(fn):
    """fn(device) on the CPU and on vk: (cpu result or exception, vk result or exception)."""
    out = []
    for device in ("cpu", "vk"):
        try:
            r = fn(device)
            if isinstance(r, torch.Tensor):
                r = r.cpu()
            elif isinstance(r, tuple):
                r = tuple(x.cpu() for x in r)
            if device == "vk":
                torch.vk.synchronize()
            out.append(r)
        except Exception as e:  # noqa: BLE001 - the exception type is compared
            out.append(e)
    return out


def assert_same(fn, exact=True):
    cpu, vk = on_both(fn)
    if isinstance(cpu, Exception):
        assert isinstance(vk, Exception), f"CPU raised {type(cpu).__name__}: {cpu}; vk gave {vk}"
        assert type(vk) is type(cpu), f"CPU raised {type(cpu).__name__}: {cpu}; vk {type(vk).__name__}: {vk}"
        return
    assert not isinstance(vk, Exception), f"CPU gave {cpu}; vk raised {type(vk).__name__}: {vk}"
    for c, v in zip(cpu if isinstance(cpu, tuple) else (cpu,), vk if isinstance(vk, tuple) else (vk,)):
        assert v.dtype == c.dtype and v.shape == c.shape
        if exact:
            torch.testing.assert_close(v, c, rtol=0, atol=0, equal_nan=True)
        else:
            torch.testing.assert_close(v, c, equal_nan=True)


def t(values, dtype, device):
    return torch.tensor(values, dtype=dtype, device=device)


# ---------------------------------------------------------------- scalar wrapping

@pytest.mark.parametrize("case", [
    # a wrapped Python number takes the tensor's dtype before the op
    lambda d: t([0.1, 0.2], torch.float16, d) == 0.1,
    lambda d: t([0.1, 0.2], torch.bfloat16, d) != 0.2,
    lambda d: t([0.1, 0.3], torch.bfloat16, d) - 0.1,
    lambda d: t([0.1, 1.7], torch.float16, d) + 0.1,
    lambda d: torch.add(t([0.1, 1.7], torch.bfloat16, d), 0.1, alpha=3),
    # 0-dim tensors of another dtype do not promote past a dimensioned tensor's category
    lambda d: t([0.1, 1.0], torch.float16, d) + torch.tensor(1e-4, device=d),
    lambda d: t([0.1, 1.0], torch.float16, d) + torch.tensor(0.1),  # a CPU 0-dim tensor
    lambda d: t([0.1, 1.0], torch.float16, d) < torch.tensor(0.1, dtype=torch.float64, device=d),
    # integers wrap into the tensor's dtype
    lambda d: t([0, 5, 255], torch.uint8, d) <= -2,
    lambda d: t([0, 5, 255], torch.uint8, d) // -3,
    lambda d: t([-128, 0, 127], torch.int8, d) >= -129,
    lambda d: torch.maximum(t([0, 5, 255], torch.uint8, d), torch.tensor(-4, dtype=torch.int32, device=d)),
    lambda d: torch.minimum(t([0, 5, 255], torch.uint8, d), torch.tensor(300, dtype=torch.int32)),
    lambda d: t([1, 2, 3], torch.int8, d) * torch.tensor(200, device=d),
    lambda d: t([1, 2, 3], torch.uint8, d) + 300,
    lambda d: t([100, 2, 3], torch.int16, d) == 65636,
    lambda d: torch.where(t([True, False], torch.bool, d), t([1, 2], torch.uint8, d), -1),
])
def test_scalars_take_the_tensors_dtype(case):
    assert_same(case)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", ["mul", "div", "trunc", "floor"])
def test_mul_and_div_read_a_scalar_in_float32(op, dtype):
    # The CPU's exception to the rule: mul / div (and its rounding modes) read a scalar
    # second operand in float32 (not rounded to the tensor's dtype first).
    def case(d):
        x = torch.arange(1, 40, device=d).to(dtype) * 0.37
        for s in (0.3, 0.1, torch.tensor(0.7, device=d), torch.tensor(1.7)):
            if op == "mul":
                r = x * s
            elif op == "div":
                r = x / s
            else:
                r = torch.div(x, s, rounding_mode=op)
            x = torch.cat([x, r])
        return x
    assert_same(case)


# ---------------------------------------------------------------- computation dtype vs out=

@pytest.mark.parametrize("case", [
    lambda d: torch.add(t([200, 7], torch.uint8, d), t([100, 1], torch.uint8, d),
                        out=torch.empty(2, dtype=torch.int32, device=d)),
    lambda d: torch.mul(t([100, -3], torch.int8, d), 3, out=torch.empty(2, dtype=torch.int32, device=d)),
    lambda d: torch.sub(t([0, 7], torch.uint8, d), 1, out=torch.empty(2, dtype=torch.int64, device=d)),
    lambda d: torch.add(t([1.0, 3.0], torch.bfloat16, d), t([0.00390625 * 0.75, 0.01], torch.bfloat16, d),
                        out=torch.empty(2, dtype=torch.float32, device=d)),
    lambda d: torch.mul(t([1.001, 3.3], torch.float16, d), t([1.001, 0.7], torch.float16, d),
                        out=torch.empty(2, dtype=torch.float64, device=d)),
    lambda d: torch.add(torch.tensor([1.0, 2.0**-30], device=d), torch.tensor([2.0**-30, 1.0], device=d),
                        out=torch.empty(2, dtype=torch.float64, device=d)),
    lambda d: torch.bitwise_left_shift(t([200, 1], torch.uint8, d), t([1, 7], torch.uint8, d),
                                       out=torch.empty(2, dtype=torch.int32, device=d)),
    lambda d: torch.eq(t([1, 2], torch.int16, d), t([1, 3], torch.int16, d),
                       out=torch.empty(2, dtype=torch.float64, device=d)),
    lambda d: torch.logical_or(t([0, 2], torch.int16, d), t([0, 0], torch.int16, d),
                               out=torch.empty(2, dtype=torch.float64, device=d)),
    lambda d: torch.add(t([2**31 - 1, 5], torch.int32, d), 1, out=torch.empty(2, dtype=torch.float64, device=d)),
])
def test_out_dtype_does_not_change_the_computation(case):
    assert_same(case)


# ---------------------------------------------------------------- casts to bool

@pytest.mark.parametrize("case", [
    lambda d: torch.zeros(3, dtype=torch.bool, device=d).fill_(0.5),
    lambda d: torch.zeros(5, dtype=torch.bool, device=d).fill_(-0.25),
    lambda d: torch.full((3,), math.nan, dtype=torch.bool, device=d),
    lambda d: torch.full((), 0.5, dtype=torch.bool, device=d),
    lambda d: torch.full((2, 2), 2, dtype=torch.bool, device=d),
])
def test_fill_bool_is_nonzero(case):
    assert_same(case)


def test_masked_assign_inf_into_bool():
    def case(d):
        x = torch.zeros(3, dtype=torch.bool, device=d)
        x[torch.tensor([True, False, True], device=d)] = math.inf
        y = torch.zeros(4, dtype=torch.bool, device=d)
        y[torch.tensor([False, True, True, False], device=d)] = torch.tensor(0.25)
        return torch.cat([x, y])
    assert_same(case)


# ---------------------------------------------------------------- the other listed cases

def test_topk_of_a_0dim_tensor():
    for k in (0, 1):
        assert_same(lambda d: torch.topk(torch.tensor(1.5, device=d), k))
    assert_same(lambda d: torch.topk(torch.tensor(1.5, device=d), 2))  # raises


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("exponent", [0.5, -0.5, -1, 2, 3, -2, 1.5])
def test_pow_of_special_values(exponent, dtype):
    # Special values exactly (inf, NaN and the signs of zeros); finite ones within tolerance.
    values = [-math.inf, -0.0, 0.0, 4.0, math.inf, -2.0, math.nan, 0.25, 1.7]
    assert_same(lambda d: torch.pow(torch.tensor(values, dtype=dtype, device=d), exponent), exact=False)
    def signs(d):  # of every non-NaN result (a NaN's sign bit is not specified)
        r = torch.pow(torch.tensor(values, dtype=dtype, device=d), exponent)
        return r.signbit() & ~r.isnan()
    assert_same(signs)


def test_layer_norm_of_a_constant_row_is_zero():
    # Exactly 0 in float32, as the CPU's (its float16 / bfloat16 kernels leave a residue of
    # about 1e-6 there, which vk's exact 0 matches within their tolerance).
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        exact = dtype == torch.float32
        assert_same(lambda d: F.layer_norm(torch.full((3, 7), 0.1, dtype=dtype, device=d), (7,)), exact)
        assert_same(lambda d: F.layer_norm(torch.full((2, 5), -3.3, dtype=dtype, device=d), (5,),
                                           torch.full((5,), 2.0, dtype=dtype, device=d),
                                           torch.full((5,), 0.5, dtype=dtype, device=d)), exact)
        assert_same(lambda d: F.group_norm(torch.full((2, 4, 3), -1.3, dtype=dtype, device=d), 2), exact)


@pytest.mark.parametrize("case", [
    lambda d: torch.full((), 1e6, dtype=torch.float16, device=d),   # inf (one element)
    lambda d: torch.full((1,), -1e39, dtype=torch.bfloat16, device=d),
    lambda d: torch.full((3,), 1e6, dtype=torch.float16, device=d),  # raises
    lambda d: torch.full((3,), 300, dtype=torch.int8, device=d),     # raises
    lambda d: torch.full((3,), -1, dtype=torch.uint8, device=d),     # 255
    lambda d: torch.pow(t([2, 3], torch.int8, d), 200),               # raises
    lambda d: torch.pow(t([2, 3], torch.float16, d), 1e5),             # raises
    lambda d: torch.pow(t([2, 3], torch.int8, d), 3),
    lambda d: torch.zeros(3, dtype=torch.int8, device=d).masked_fill(
        t([True, False, True], torch.bool, d), torch.tensor(1e4, dtype=torch.bfloat16, device=d)),
    lambda d: torch.zeros(3, dtype=torch.int8, device=d).masked_fill(
        t([True, False, True], torch.bool, d), torch.tensor(100, dtype=torch.int64, device=d)),
    lambda d: torch.zeros(3, dtype=torch.float16, device=d).masked_fill(
        t([True, False, True], torch.bool, d), torch.tensor(3.5, dtype=torch.float16, device=d)),
])
def test_overflowing_conversions(case):
    assert_same(case)


@pytest.mark.parametrize("case", [
    lambda d: torch.zeros(1, 3, device=d).expand(2, 3).fill_(1.5),
    lambda d: torch.ones(1, 3, dtype=torch.int16, device=d).expand(2, 3).zero_(),
    lambda d: torch.ones(3, 1, device=d).expand(3, 4).masked_fill_(t([True, False, True, True], torch.bool, d), 2.0),
    # one element behind every position: it takes the value where any alias is masked
    lambda d: torch.full((1,), 253, dtype=torch.uint8, device=d).expand(5, 2).masked_fill_(
        t([[False, False], [False, True], [False, False], [False, False], [False, False]], torch.bool, d),
        torch.tensor(0.0, dtype=torch.bfloat16, device=d)),
    lambda d: torch.full((1,), 3.0, device=d).expand(4).masked_fill_(t([False] * 4, torch.bool, d), 9.0),
])
def test_writes_to_expanded_tensors(case):
    assert_same(case)


@pytest.mark.parametrize("case", [
    lambda d: torch.zeros(0, 3, device=d).index_add_(0, t([0], torch.int64, d), torch.ones(1, 3, device=d)),
    lambda d: torch.zeros(0, device=d).index_add_(0, t([0], torch.int64, d), torch.ones(1, device=d)),
    lambda d: torch.zeros(0, 3, device=d).index_reduce_(0, t([0], torch.int64, d), torch.ones(1, 3, device=d), "prod"),
    lambda d: torch.zeros(3, 0, device=d).index_reduce_(0, t([4], torch.int64, d), torch.ones(1, 0, device=d), "amax"),
    lambda d: torch.zeros(3, 0, device=d).index_reduce_(0, t([1], torch.int64, d), torch.ones(1, 0, device=d), "amin"),
    lambda d: torch.zeros(0, 3, device=d).index_select(0, t([0], torch.int64, d)),
    lambda d: torch.zeros(0, device=d).index_select(0, t([0], torch.int64, d)),
    lambda d: torch.zeros(2, 0, device=d).index_select(0, t([1, 0], torch.int64, d)),
    lambda d: torch.zeros(3, 0, device=d).index_select(0, t([5], torch.int64, d)),
    lambda d: torch.zeros(3, 0, device=d).index_select(0, t([-1], torch.int32, d)),
    lambda d: F.embedding(t([0], torch.int64, d), torch.zeros(0, 3, device=d)),
    lambda d: F.embedding(t([1], torch.int64, d), torch.zeros(2, 0, device=d)),
    lambda d: torch.zeros(0, device=d).index_reduce_(0, t([1], torch.int64, d), torch.ones(1, device=d), "prod",
                                                     include_self=False),
    lambda d: torch.zeros(3, 0, device=d).index_reduce_(0, t([4], torch.int64, d), torch.ones(1, 0, device=d), "amax",
                                                        include_self=False),
    lambda d: torch.zeros(0, 2, dtype=torch.bool, device=d).scatter_reduce(
        0, torch.zeros(0, 2, dtype=torch.int64, device=d), torch.ones(1, 2, dtype=torch.bool, device=d), "mean"),
    lambda d: torch.full((0, 1), 1e39, dtype=torch.int32, device=d),
    lambda d: torch.zeros(4, 0, 1, dtype=torch.uint8, device=d).index_fill_(1, t([0], torch.int64, d), 300),
    lambda d: torch.ones(4, 1, 5, dtype=torch.bool, device=d).index_reduce_(
        2, torch.zeros(0, dtype=torch.int64, device=d), torch.ones(4, 1, 0, dtype=torch.bool, device=d), "mean"),
])
def test_empty_tensors_in_indexing(case):
    assert_same(case)


@pytest.mark.parametrize("case", [
    lambda d: torch.signbit(t([-1.0, 1.0], torch.float32, d), out=torch.empty(2, dtype=torch.int32, device=d)),
    lambda d: torch.isposinf(t([1.0], torch.float32, d), out=torch.empty(1, dtype=torch.float32, device=d)),
    lambda d: F.layer_norm(t([[1, 2, 3]], torch.int64, d), (3,)),
    lambda d: F.layer_norm(t([[1, 2, 3]], torch.int64, d), (3,), weight=torch.ones(3, device=d)),
    lambda d: F.layer_norm(t([[1, 2, 3]], torch.int32, d), (3,)),
    lambda d: torch.abs(t([True, False], torch.bool, d), out=torch.empty(2, dtype=torch.uint8, device=d)),
    lambda d: torch.abs(t([True, False], torch.bool, d)),
])
def test_error_types(case):
    assert_same(case)


@pytest.mark.parametrize("case", [
    # reductions and scans convert their input to dtype= first, as the CPU
    lambda d: torch.sum(t([[-1.5, 0.5], [1.25, 0.25]], torch.float16, d), 0, dtype=torch.bool),
    lambda d: torch.sum(t([[-1.5, 0.5], [1.75, 2.25]], torch.float32, d), 0, dtype=torch.int8),
    lambda d: torch.prod(t([-1.5, 2.5, 3.5], torch.float32, d), 0, dtype=torch.int16),
    lambda d: torch.cumsum(t([1, 2], torch.int64, d), 0, dtype=torch.bool),  # raises
    lambda d: torch.cumprod(t([1, 2], torch.int64, d), 0, dtype=torch.bool),  # raises
    # index_add converts alpha to the dtype (-1 is true for bool)
    lambda d: t([[True, False], [True, False]], torch.bool, d).index_add_(
        0, t([0, 1], torch.int64, d), t([[True, True], [False, True]], torch.bool, d), alpha=-1),
    lambda d: t([[1, 2], [3, 4]], torch.int8, d).index_add_(
        0, t([1, 0], torch.int64, d), t([[100, 1], [2, 3]], torch.int8, d), alpha=3),
    # out-of-range indices raise the exception type of the CPU's code path
    lambda d: torch.ones(2, 4, device=d).index_select(1, t([4], torch.int64, d)),
    lambda d: torch.ones(4, 2, device=d).index_select(0, t([4], torch.int64, d)),
    lambda d: torch.ones(3, 1, device=d).index_add_(0, t([0, 4], torch.int64, d), torch.ones(2, 1, device=d)),
    lambda d: torch.ones(3, 2, 2, device=d).index_add_(1, t([0, 4], torch.int64, d), torch.ones(3, 2, 2, device=d)),
])
def test_reduction_and_index_conversions(case):
    assert_same(case)


def test_cat_of_a_vk_and_a_cpu_tensor_raises_like_cuda():
    with pytest.raises(RuntimeError, match="same device"):
        torch.cat([torch.ones(2, device="vk"), torch.ones(2)])
    with pytest.raises(RuntimeError, match="same device"):
        torch.stack([torch.ones(2), torch.ones(2, device="vk")])


def test_setitem_with_a_cpu_value_of_another_dtype():
    def case(d):
        x = torch.zeros(2, 3, dtype=torch.float16, device=d)
        x[torch.ones(2, 3, dtype=torch.bool, device=d)] = torch.tensor(7, dtype=torch.uint8)
        return x
    assert_same(case)
