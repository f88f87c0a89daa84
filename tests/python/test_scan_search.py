"""Scan and search ops against PyTorch's CPU: cummax / cummin (values and indices: ties take the
last index, NaN sticks), logcumsumexp, their backward; every dtype the CPU accepts, every dim,
non-contiguous, empty and 0-dim inputs, out=, bad input."""
import pytest
import torch

from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
              torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
NAN = float("nan")
INF = float("inf")


def with_ties(shape, dtype, seed=0):
    """Values with many ties (small integer range) so that the tie rule matters."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    x = torch.randint(0, 5, shape, generator=g)
    if dtype != torch.uint8:
        x = x - 2
    return x.to(dtype)


def grad_check(fn, x, atol=1e-5, rtol=1e-4):
    """Gradients of fn(x) weighted by a fixed random tensor, CPU vs vk."""
    a = x.clone().requires_grad_()
    b = x.to("vk").requires_grad_()
    out_a, out_b = fn(a), fn(b)
    w = make(out_a.shape, out_a.dtype, seed=7)
    (out_a * w).sum().backward()
    (out_b * w.to("vk")).sum().backward()
    assert b.grad.device.type == "vk"
    torch.testing.assert_close(b.grad.cpu(), a.grad, atol=atol, rtol=rtol, equal_nan=True)


# ---------------------------------------------------------------- cummax / cummin
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", [torch.cummax, torch.cummin], ids=["cummax", "cummin"])
def test_cummax_cummin_dims_layouts(op, dtype):
    x = with_ties((4, 5, 6), dtype)
    for _, layout in layouts(x):
        for dim in (0, 1, 2, -1, -3):
            check(lambda a: op(layout(a), dim), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16, torch.int16], ids=str)
@pytest.mark.parametrize("op", [torch.cummax, torch.cummin], ids=["cummax", "cummin"])
def test_cummax_cummin_long_rows(op, dtype):
    # Long innermost rows run one workgroup per row with tiles and a carry; 3000 is not a
    # multiple of the tile. Short rows along an outer dim run one thread per row.
    for shape, dim in (((3, 3000), 1), ((3000,), 0), ((700, 5), 0), ((2, 257), -1)):
        check(lambda a: op(a, dim), with_ties(shape, dtype, seed=2))
    if dtype.is_floating_point:
        y = make((2, 2100), dtype, seed=5)
        y[0, 1500] = NAN
        y[1, 100] = NAN
        y[1, 1900] = NAN
        check(lambda a: op(a, 1), y)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_cummax_cummin_nan_inf_signed_zero(dtype):
    row = torch.tensor([1.0, -INF, 0.0, -0.0, 0.0, INF, INF, NAN, -1.0, NAN, 2.5, -0.0])
    x = torch.stack([row, row.flip(0), torch.full_like(row, NAN), torch.full_like(row, -INF)])
    x = x.to(dtype)
    for op in (torch.cummax, torch.cummin):
        for dim in (0, 1):
            check(lambda a: op(a, dim), x)
        # -0.0 keeps its sign (NaN payload / sign bits are not part of the contract).
        got, expected = op(x.to("vk"), 1).values.cpu(), op(x, 1).values
        numbers = ~expected.isnan()
        assert torch.equal(torch.signbit(got[numbers]), torch.signbit(expected[numbers]))


def test_cummax_cummin_edges_out_and_errors():
    for op in (torch.cummax, torch.cummin):
        check(lambda a: op(a, 0), make((), torch.float32))
        check(lambda a: op(a, -1), make((), torch.int32))
        check(lambda a: op(a, 1), make((3, 0, 2), torch.float32))
        check(lambda a: op(a, 0), make((0,), torch.int64))
        check(lambda a: op(a, 2), make((3, 4), torch.float32))    # dim out of range
        check(lambda a: op(a, -3), make((3, 4), torch.float32))

        def with_out(a, op=op):
            values = torch.empty(4, 3, dtype=a.dtype, device=a.device).t()  # non-contiguous
            indices = torch.empty(0, dtype=torch.long, device=a.device)
            r = op(a, 1, out=(values, indices))
            return r.values, r.indices, values, indices
        check(with_out, with_ties((3, 4), torch.float32))

        def wrong_out_dtype(a, op=op):
            return op(a, 0, out=(torch.empty(3, dtype=torch.float64, device=a.device),
                                 torch.empty(3, dtype=torch.long, device=a.device)))
        check(wrong_out_dtype, make((3,), torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_cummax_cummin_backward(dtype):
    x = with_ties((3, 7, 4), dtype)
    for op in (torch.cummax, torch.cummin):
        for dim in (0, 1, -1):
            grad_check(lambda a: op(a, dim).values, x)
    grad_check(lambda a: torch.cummax(a, 0).values, make((), dtype))


# ---------------------------------------------------------------- logcumsumexp
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_logcumsumexp_dims_layouts(dtype):
    x = make((4, 5, 6), dtype)
    for _, layout in layouts(x):
        for dim in (0, 1, 2, -1):
            check(lambda a: torch.logcumsumexp(layout(a), dim), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_logcumsumexp_long_rows(dtype):
    for shape, dim in (((3, 3000), 1), ((3000,), 0), ((700, 5), 0)):
        check(lambda a: torch.logcumsumexp(a, dim), make(shape, dtype, low=-20, high=20, seed=3),
              atol=1e-4 if dtype != torch.bfloat16 else None,
              rtol=1e-5 if dtype != torch.bfloat16 else None)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_logcumsumexp_special_values(dtype):
    rows = [[-INF, -INF, 0.0, -INF, 1.0],
            [INF, -INF, INF, 1.0, 2.0],
            [1.0, NAN, 2.0, -INF, INF],
            [-INF, INF, -INF, NAN, 0.0],
            [100.0, -100.0, 100.0, 0.0, -0.0]]
    check(lambda a: torch.logcumsumexp(a, 1), torch.tensor(rows, dtype=dtype))
    check(lambda a: torch.logcumsumexp(a, 0), torch.tensor(rows, dtype=dtype))


def test_logcumsumexp_edges_out_and_errors():
    check(lambda a: torch.logcumsumexp(a, 0), make((), torch.float32))
    check(lambda a: torch.logcumsumexp(a, -1), make((), torch.float64))
    check(lambda a: torch.logcumsumexp(a, 1), make((2, 0), torch.float32))
    check(lambda a: torch.logcumsumexp(a, 2), make((2, 3), torch.float32))
    for dtype in (torch.int64, torch.int32, torch.uint8, torch.bool):
        check(lambda a: torch.logcumsumexp(a, 0), with_ties((3,), dtype))

    def with_out(a):
        out = torch.empty(4, 3, dtype=a.dtype, device=a.device).t()
        r = torch.logcumsumexp(a, 1, out=out)
        return r, out
    check(with_out, make((3, 4), torch.float32))

    def resized_out(a):
        out = torch.empty(0, dtype=torch.float64, device=a.device)
        return torch.logcumsumexp(a, 0, out=out)
    check(resized_out, make((5,), torch.float64))

    def wrong_out_dtype(a):
        return torch.logcumsumexp(a, 0, out=torch.empty(3, dtype=torch.float64, device=a.device))
    check(wrong_out_dtype, make((3,), torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_logcumsumexp_backward(dtype):
    x = make((3, 6, 4), dtype)
    for dim in (0, 1, -1):
        grad_check(lambda a: torch.logcumsumexp(a, dim), x)
    grad_check(lambda a: torch.logcumsumexp(a, 0), make((), dtype))
