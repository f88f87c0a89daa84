"""Scan and search ops against PyTorch's CPU: cummax / cummin (values and indices: ties take the
last index, NaN sticks), logcumsumexp, their backward; every dtype the CPU accepts, every dim,
non-contiguous, empty and 0-dim inputs, out=, bad input."""
import pytest
import torch

from helpers import check, layouts, make, with_ties

pytestmark = [pytest.mark.usefixtures("strict_native"),
              # searchsorted warns (once, like the CPU) about non-contiguous operands.
              pytest.mark.filterwarnings("ignore:torch.searchsorted.*non-contiguous")]

ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
              torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
NAN = float("nan")
INF = float("inf")


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


# ---------------------------------------------------------------- searchsorted / bucketize
SEARCH_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
                 torch.int16, torch.int32, torch.int64, torch.uint8]


def sorted_rows(shape, dtype, seed=0):
    return with_ties(shape, dtype, seed).sort(-1).values if dtype != torch.bool else None


@pytest.mark.parametrize("dtype", SEARCH_DTYPES, ids=str)
def test_searchsorted_dtypes_sides_layouts(dtype):
    bd1 = sorted_rows((9,), dtype)
    bdn = sorted_rows((3, 4, 9), dtype, seed=1)
    values = with_ties((3, 4, 5), dtype, seed=2)
    for right in (False, True):
        for out_int32 in (False, True):
            check(lambda b, v: torch.searchsorted(b, v, right=right, out_int32=out_int32), bd1, values)
            check(lambda b, v: torch.searchsorted(b, v, right=right, out_int32=out_int32), bdn, values)
        side = "right" if right else "left"
        check(lambda b, v: torch.searchsorted(b, v, side=side), bdn, values)
    for _, layout in layouts(values):
        check(lambda b, v: torch.searchsorted(b, layout(v)), bd1, values)
        check(lambda b, v: torch.searchsorted(b, layout(v), right=True), bdn, values)
    # Non-contiguous boundaries.
    check(lambda b, v: torch.searchsorted(b.transpose(0, 1).contiguous().transpose(0, 1), v),
          sorted_rows((3, 9), dtype), with_ties((3, 2), dtype))
    check(lambda b, v: torch.bucketize(v, b), values, bd1)
    check(lambda b, v: torch.bucketize(v, b, right=True, out_int32=True), values, bd1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_searchsorted_sorter(dtype):
    unsorted = with_ties((3, 4, 9), dtype, seed=4)
    sorter = unsorted.argsort(dim=-1, stable=True)
    values = with_ties((3, 4, 5), dtype, seed=5)
    for right in (False, True):
        check(lambda b, v, s: torch.searchsorted(b, v, right=right, sorter=s), unsorted, values, sorter)
    u1 = with_ties((11,), dtype, seed=6)
    check(lambda b, v, s: torch.searchsorted(b, v, sorter=s), u1, values, u1.argsort(dim=-1, stable=True))
    # Bad sorters: out of range, wrong dtype, wrong shape.
    check(lambda b, v, s: torch.searchsorted(b, v, sorter=s), u1, values, torch.arange(11) + 1)
    check(lambda b, v, s: torch.searchsorted(b, v, sorter=s), u1, values, torch.arange(11).int())
    check(lambda b, v, s: torch.searchsorted(b, v, sorter=s), u1, values, torch.arange(10))


def test_searchsorted_nan_inf_mixed_dtypes_scalars():
    bd = torch.tensor([-INF, -1.0, 0.0, 0.0, 2.0, INF, NAN, NAN])
    values = torch.tensor([-INF, -2.0, -0.0, 0.0, 1.0, 2.0, 3.0, INF, NAN])
    for right in (False, True):
        check(lambda b, v: torch.searchsorted(b, v, right=right), bd, values)
        check(lambda b, v: torch.bucketize(v, b, right=right), values, bd)
    # Promotion to a common dtype (input int, boundaries float and the reverse).
    check(lambda b, v: torch.searchsorted(b, v), sorted_rows((7,), torch.float32), with_ties((6,), torch.int64))
    check(lambda b, v: torch.searchsorted(b, v), sorted_rows((7,), torch.int32), make((6,), torch.float16))
    check(lambda b, v: torch.searchsorted(b, v), sorted_rows((7,), torch.int64), with_ties((6,), torch.bool))
    # Scalar overloads (int and float scalars promote like binary ops).
    for scalar in (1, 0.5, -3, True):
        check(lambda b: torch.searchsorted(b, scalar), sorted_rows((7,), torch.int64))
        check(lambda b: torch.searchsorted(b, scalar, right=True), sorted_rows((7,), torch.float16))
        check(lambda b: torch.bucketize(scalar, b), sorted_rows((7,), torch.float32))


def test_searchsorted_edges_out_and_errors():
    bd = sorted_rows((6,), torch.float32)
    check(lambda b, v: torch.searchsorted(b, v), bd, make((), torch.float32))          # 0-dim value
    check(lambda b, v: torch.searchsorted(b, v), bd, make((0,), torch.float32))        # empty values
    check(lambda b, v: torch.searchsorted(b, v), bd, make((2, 0), torch.float32))
    check(lambda b, v: torch.searchsorted(b, v), make((0,), torch.float32), make((4,), torch.float32))
    check(lambda b, v: torch.searchsorted(b, v), make((3, 0), torch.float32), make((3, 2), torch.float32))
    check(lambda b, v: torch.bucketize(v, b), make((0,), torch.float32), make((2, 3), torch.float32))

    def with_out(b, v):
        out = torch.empty(5, 3, dtype=torch.long, device=v.device).t()      # non-contiguous
        r = torch.searchsorted(b, v, out=out)
        out32 = torch.empty(0, dtype=torch.int32, device=v.device)
        r32 = torch.bucketize(v, b, out_int32=True, out=out32)
        return r, out, r32, out32
    check(with_out, bd, make((3, 5), torch.float32))
    # Errors: bad side, side against right, 0-dim boundaries, leading dims that do not match,
    # 0-dim value with N-d boundaries, wrong out dtype, bool, 2-D bucketize boundaries.
    v = make((3, 4), torch.float32)
    check(lambda b, v: torch.searchsorted(b, v, side="middle"), bd, v)
    check(lambda b, v: torch.searchsorted(b, v, side="left", right=True), bd, v)
    check(lambda b, v: torch.searchsorted(b, v), make((), torch.float32), v)
    check(lambda b, v: torch.searchsorted(b, v), sorted_rows((2, 6), torch.float32), v)
    check(lambda b, v: torch.searchsorted(b, v), sorted_rows((3, 6), torch.float32), make((), torch.float32))
    check(lambda b, v: torch.searchsorted(b, v, out=torch.empty(0, dtype=torch.int32, device=v.device)), bd, v)
    check(lambda b, v: torch.searchsorted(b, v), with_ties((4,), torch.bool).sort().values,
          with_ties((3,), torch.bool))
    check(lambda b, v: torch.bucketize(v, b), sorted_rows((2, 6), torch.float32), v)


# ---------------------------------------------------------------- histc
# Counts stay below 256 per bin: the CPU accumulates them in the input dtype (bfloat16 counts
# stop growing at 256, float16 at 2048), the device counts exactly in integers.
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_histc_ranges_layouts(dtype):
    x = make((20, 30), dtype, low=-4, high=4)
    for _, layout in layouts(x):
        check(lambda a: torch.histc(layout(a), 10), x)                  # the data's min / max
        check(lambda a: torch.histc(layout(a), 7, -2, 2.5), x)         # values outside ignored
    # Global-atomics path (more bins than shared memory holds). A power of two: with other
    # counts beyond the dtype's integers the CPU computes bins past the last one (and writes
    # outside its histogram), the device clamps.
    check(lambda a: torch.histc(a, 4096, -3, 3), x)
    check(lambda a: torch.histc(a, 1, 0, 1), x)
    # Elements on the bin edges (the CPU's linear interpolation decides their bin) and on
    # the range's ends (the right end belongs to the last bin).
    edges = torch.linspace(-1, 1, 201, dtype=torch.float64).to(dtype)
    check(lambda a: torch.histc(a, 100, -1, 1), edges)
    check(lambda a: torch.histc(a, 3, 0.1, 0.7), edges)
    check(lambda a: torch.histc(a, 8, -1, 1), edges)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_histc_special_values_and_edges(dtype):
    x = torch.tensor([NAN, 1.0, 2.0, INF, -INF, 2.0, 3.0], dtype=dtype)
    check(lambda a: torch.histc(a, 4, 0, 4), x)
    check(lambda a: torch.histc(a, 4), x)                     # min / max not finite: error
    check(lambda a: torch.histc(a, 5), torch.full((6,), 2.5, dtype=dtype))  # min == max: +-1
    check(lambda a: torch.histc(a, 5, 1, 1), torch.full((6,), 2.5, dtype=dtype))
    check(lambda a: torch.histc(a, 4), make((0,), dtype))    # empty: range [-1, 1]
    check(lambda a: torch.histc(a, 4, 1, 2), make((), dtype))
    check(lambda a: torch.histc(a, 4, 0, 3), make((3, 0, 2), dtype))


def test_histc_out_and_errors():
    x = make((50,), torch.float32)

    def with_out(a):
        out = torch.empty(0, dtype=a.dtype, device=a.device)
        r = torch.histc(a, 6, -1, 1, out=out)
        return r, out
    check(with_out, x)
    check(lambda a: torch.histc(a, 0), x)                     # bins must be > 0
    check(lambda a: torch.histc(a, -3), x)
    check(lambda a: torch.histc(a, 4, 2, 1), x)              # max < min
    check(lambda a: torch.histc(a, 4, 0, INF), x)
    check(lambda a: torch.histc(a, 4, NAN, 1), x)
    check(lambda a: torch.histc(a, 4, out=torch.empty(4, dtype=torch.float64, device=a.device)), x)
    # bool raises as on the CPU; integer inputs, which the CPU refuses, bin like CUDA on vk
    # (tests/python/test_histogram.py::test_histc_integer_input_bins_like_cuda).
    check(lambda a: torch.histc(a, 4), with_ties((9,), torch.bool))
    check(lambda a: torch.histc(a, 4, 0, 3), with_ties((9,), torch.bool))


# ---------------------------------------------------------------- isin
ISIN_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
               torch.int16, torch.int32, torch.int64, torch.uint8]


@pytest.mark.parametrize("dtype", ISIN_DTYPES, ids=str)
def test_isin_dtypes_layouts(dtype):
    g = torch.Generator().manual_seed(0)
    elements = torch.randint(0, 40, (6, 7), generator=g).to(dtype)
    for n_test in (3, 60):  # a few test elements (the CPU's loop) and many (its sorting path)
        test = torch.randint(0, 40, (n_test,), generator=g).to(dtype)
        for invert in (False, True):
            for _, layout in layouts(elements):
                check(lambda a, b: torch.isin(layout(a), b, invert=invert), elements, test)
        check(lambda a, b: torch.isin(a, b.view(-1, 1)), elements, test)
        uniq = torch.unique(elements)
        check(lambda a, b: torch.isin(a, b, assume_unique=True), uniq, torch.unique(test))


def test_isin_nan_zero_mixed_scalars_edges():
    a = torch.tensor([1.0, NAN, -0.0, 0.0, INF, -INF, 2.5, 3.0])
    b = torch.tensor([NAN, 0.0, INF, 3.0, NAN, -1.0] * 5)
    for invert in (False, True):
        check(lambda x, y: torch.isin(x, y, invert=invert), a, b)
        check(lambda x, y: torch.isin(x, y, invert=invert), a, b[:4])
        check(lambda x: torch.isin(x, 3.0, invert=invert), a)                # Tensor_Scalar
        check(lambda y: torch.isin(3, y, invert=invert), b)                  # Scalar_Tensor
        check(lambda y: torch.isin(2.5, y, invert=invert), b)
    # Mixed dtypes promote to the result type.
    check(lambda x, y: torch.isin(x, y), torch.arange(10), torch.tensor([2.0, 3.5, 7.0] * 10))
    check(lambda x, y: torch.isin(x, y), torch.tensor([0.5, 2.0, 3.0]), torch.arange(40))
    check(lambda x, y: torch.isin(x, y), torch.arange(10, dtype=torch.uint8), torch.arange(-3, 30))
    # Empty, 0-dim.
    check(lambda x, y: torch.isin(x, y), make((0, 3), torch.float32), make((5,), torch.float32))
    check(lambda x, y: torch.isin(x, y, invert=True), make((4,), torch.float32), make((0,), torch.float32))
    check(lambda x, y: torch.isin(x, y), torch.tensor(2.0), torch.arange(40.0))
    check(lambda x, y: torch.isin(x, y), torch.arange(5.0), torch.tensor(3.0))

    def with_out(x, y):
        out = torch.empty(0, dtype=torch.bool, device=x.device)
        r = torch.isin(x, y, out=out)
        out2 = torch.empty(4, 2, dtype=torch.bool, device=x.device).t()  # non-contiguous
        torch.isin(x.view(2, 4), y, invert=True, out=out2)
        return r, out, out2
    check(with_out, torch.arange(8.0), torch.arange(3.0, 50.0))
    # Bool is rejected like on the CPU.
    check(lambda x, y: torch.isin(x, y), with_ties((4,), torch.bool), with_ties((4,), torch.bool))
    check(lambda x: torch.isin(x, True), with_ties((4,), torch.bool))


# ---------------------------------------------------------------- unique family
UNIQUE_DTYPES = ALL_DTYPES


def unique2(a, return_inverse=True, return_counts=True, sorted=True):
    return torch.ops.aten._unique2(a, sorted, return_inverse, return_counts)


@pytest.mark.parametrize("dtype", UNIQUE_DTYPES, ids=str)
def test_unique_flat(dtype):
    x = with_ties((4, 5, 6), dtype)
    for _, layout in layouts(x):
        for inverse in (False, True):
            for counts in (False, True):
                check(lambda a: unique2(layout(a), inverse, counts), x)
                check(lambda a: torch.ops.aten.unique_consecutive(layout(a), inverse, counts), x)
    check(lambda a: torch.unique(a, sorted=False, return_inverse=True), x)
    check(lambda a: torch.ops.aten._unique(a, True, True), x)
    check(lambda a: torch.unique_consecutive(a.sort(-1).values, return_counts=True), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.float16], ids=str)
def test_unique_dim_and_consecutive_dim(dtype):
    x = with_ties((6, 4, 3), dtype, seed=1)
    x[3] = x[1]          # duplicate slices along dim 0
    x[:, 2] = x[:, 0]    # and along dim 1
    for dim in (0, 1, 2, -1, -3):
        for flags in ((False, False), (True, True)):
            check(lambda a: torch.ops.aten.unique_dim(a, dim, True, *flags), x)
            check(lambda a: torch.ops.aten.unique_dim_consecutive(a, dim, *flags), x)
            check(lambda a: torch.ops.aten.unique_consecutive(a, *flags, dim), x)
    check(lambda a: torch.unique(a.transpose(0, 1), dim=1, return_inverse=True, return_counts=True), x)
    y = with_ties((9,), dtype, seed=2)
    check(lambda a: torch.unique_consecutive(a, return_inverse=True, return_counts=True, dim=0), y)
    check(lambda a: torch.unique(a, dim=0, return_inverse=True, return_counts=True), y)


def test_unique_special_values_and_edges():
    x = torch.tensor([NAN, 1.0, -0.0, 0.0, NAN, INF, -INF, 1.0, 0.0, -0.0])
    check(lambda a: unique2(a), x)
    check(lambda a: torch.ops.aten.unique_consecutive(a, True, True), x)
    check(lambda a: torch.ops.aten.unique_consecutive(a, True, True), torch.tensor([0.0, -0.0, 0.0]))
    # -0.0 / 0.0: the first of each group (in stable sorted order) is kept, sign included.
    for row in ([0.0, -0.0, 0.0], [-0.0, 0.0, -0.0]):
        got = unique2(torch.tensor(row).to("vk"))[0].cpu()
        assert torch.equal(torch.signbit(got), torch.signbit(unique2(torch.tensor(row))[0]))
    # 0-dim, empty, one element, long rows (multi-pass sort).
    check(lambda a: unique2(a), make((), torch.float32))
    check(lambda a: torch.ops.aten.unique_consecutive(a, True, True), make((), torch.int32))
    check(lambda a: unique2(a), make((0, 3), torch.float32))
    check(lambda a: torch.ops.aten.unique_consecutive(a, True, True), make((3, 0), torch.float32))
    check(lambda a: unique2(a), make((1,), torch.float32))
    check(lambda a: unique2(a), with_ties((3000,), torch.int16, seed=3))
    check(lambda a: unique2(a), make((2500,), torch.float32, seed=3))
    # unique_dim: the selected dim empty (allowed when it is the only one), other dims empty
    # (error), dim out of range, 0-dim input.
    check(lambda a: torch.ops.aten.unique_dim(a, 1, True, True, True), make((3, 0), torch.float32))
    check(lambda a: torch.ops.aten.unique_dim(a, 1, True, True, True), make((0, 0), torch.float32))
    check(lambda a: torch.ops.aten.unique_dim(a, 1, True, True, True), make((0, 3), torch.float32))
    check(lambda a: torch.ops.aten.unique_dim(a, 2, True, True, True), make((2, 3), torch.float32))
    check(lambda a: torch.ops.aten.unique_dim(a, 0, True, True, True), make((), torch.float32))
    check(lambda a: torch.ops.aten.unique_consecutive(a, True, True, 1), make((0, 3), torch.float32))
