"""Sorting ops against PyTorch's CPU: sort (stable / unstable, ascending / descending, any dim),
argsort, msort, topk, kthvalue, median / nanmedian; ties, NaN, long rows (the multi-pass
merge path), every dtype, non-contiguous and empty inputs, bad input."""
import pytest
import torch

from helpers import check, layouts, make, with_ties

pytestmark = pytest.mark.usefixtures("strict_native")

ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
              torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]
NAN = float("nan")
INF = float("inf")


def check_unstable(fn, x):
    """For unstable sorts / topk / kthvalue the order of ties is unspecified: compare the values
    with the CPU, and check that the indices select those values from the input."""
    values, indices = fn(x)
    vv, vi = fn(x.to("vk"))
    assert vv.device.type == "vk" and vi.device.type == "vk"
    torch.testing.assert_close(vv.cpu(), values, equal_nan=True, rtol=0, atol=0)
    assert vi.dtype == torch.int64 and vi.shape == indices.shape
    return vv.cpu(), vi.cpu()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_sort_stable_dims_layouts(dtype):
    x = with_ties((4, 5, 6), dtype)
    for _, layout in layouts(x):
        for dim in (0, 1, 2, -1):
            for descending in (False, True):
                check(lambda a: torch.sort(layout(a), dim=dim, descending=descending, stable=True), x)
    check(lambda a: torch.argsort(a, dim=1, stable=True), x)
    check(lambda a: torch.argsort(a, dim=0, descending=True, stable=True), x)
    check(lambda a: torch.msort(a), x)  # values only: equal for any tie order


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16], ids=str)
def test_sort_unstable(dtype):
    x = with_ties((3, 40), dtype)
    for descending in (False, True):
        values, indices = check_unstable(lambda a: torch.sort(a, dim=1, descending=descending), x)
        torch.testing.assert_close(x.gather(1, indices), values)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_sort_nan_inf_signed_zero(dtype):
    row = torch.tensor([1.0, NAN, -INF, 0.0, -0.0, INF, NAN, -1.0, 0.0, 2.5, -0.0, NAN])
    x = torch.stack([row, row.flip(0), torch.full_like(row, NAN)]).to(dtype)
    for descending in (False, True):
        check(lambda a: torch.sort(a, dim=1, descending=descending, stable=True), x)
        check(lambda a: torch.sort(a, dim=0, descending=descending, stable=True), x)
    # -0.0 keeps its sign bit in the sorted values.
    got = torch.sort(x.to("vk"), dim=1, stable=True).values.cpu()
    expected = torch.sort(x, dim=1, stable=True).values
    assert torch.equal(torch.signbit(got), torch.signbit(expected))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int16], ids=str)
def test_sort_long_rows_multi_pass(dtype):
    # Rows longer than one tile (1024) go through the global merge passes; 5000 is not a
    # multiple of the tile or a power of two.
    for shape, dim in (((2, 5000), 1), ((5000,), 0), ((1100, 3), 0), ((2, 2049), -1)):
        x = with_ties(shape, dtype, seed=3) if dtype != torch.float32 else make(shape, dtype, seed=3)
        for descending in (False, True):
            check(lambda a: torch.sort(a, dim=dim, descending=descending, stable=True), x)
    y = make((3000,), torch.float32, seed=4)
    y[::7] = NAN
    check(lambda a: torch.sort(a, stable=True, descending=True), y)
    check_unstable(lambda a: torch.topk(a, 20), y)        # NaN ties: any NaN indices
    check(lambda a: torch.topk(a, 20), y[~y.isnan()])
    check(lambda a: torch.kthvalue(a, 1500), y)


def test_sort_edges_out_and_errors():
    check(lambda a: torch.sort(a, stable=True), make((), torch.float32))
    check(lambda a: torch.sort(a, dim=-1, stable=True), make((), torch.int32))
    check(lambda a: torch.sort(a, dim=0, stable=True), torch.empty(0))
    check(lambda a: torch.sort(a, dim=1, stable=True), torch.empty(3, 0))
    check(lambda a: torch.sort(a, dim=0, stable=True), torch.empty(0, 4))
    check(lambda a: torch.sort(a, dim=1, stable=True), make((7, 1), torch.float32))
    check(lambda a: torch.sort(a.expand(3, 5), dim=0, stable=True), make((1, 5), torch.float32))
    check(lambda a: torch.sort(a, dim=2), make((3, 4), torch.float32))     # bad dim
    check(lambda a: torch.sort(a, dim=-3), make((3, 4), torch.float32))
    x = with_ties((5, 9), torch.float32)

    def sort_out(a):
        v = torch.empty(0, device=a.device)
        i = torch.empty(0, dtype=torch.int64, device=a.device)
        torch.sort(a, dim=1, stable=True, descending=True, out=(v, i))
        return v, i
    check(sort_out, x)

    def sort_out_strided(a):
        v = torch.empty(9, 5, device=a.device).t()
        i = torch.empty(9, 5, dtype=torch.int64, device=a.device).t()
        torch.sort(a, dim=1, stable=True, out=(v, i))
        return v, i
    check(sort_out_strided, x)
    check(lambda a: torch.sort(a, out=(torch.empty(0, dtype=torch.int32, device=a.device),
                                       torch.empty(0, dtype=torch.int64, device=a.device))), x)


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != torch.bool], ids=str)
def test_topk(dtype):
    x = make((6, 33), dtype, seed=1)  # few ties
    for _, layout in layouts(x):
        for largest in (True, False):
            check_unstable(lambda a: torch.topk(layout(a), 5, dim=1, largest=largest), x)
            check_unstable(lambda a: torch.topk(layout(a), 3, dim=0, largest=largest), x)
    vals, idx = check_unstable(lambda a: torch.topk(a, 33, dim=1), x)
    torch.testing.assert_close(x.gather(1, idx), vals)
    check_unstable(lambda a: torch.topk(a, 0, dim=1), x)


def test_topk_nan_edges_out_and_errors():
    x = torch.tensor([[1.0, NAN, 3.0, -INF, 2.0], [NAN, NAN, 0.0, 1.0, -1.0]])
    check_unstable(lambda a: torch.topk(a, 3), x)
    check_unstable(lambda a: torch.topk(a, 3, largest=False), x)
    check_unstable(lambda a: torch.topk(a, 1), make((), torch.float32))
    check_unstable(lambda a: torch.topk(a, 0, dim=0), torch.empty(0, 3))
    check(lambda a: torch.topk(a, 6), x)                       # k too large
    check(lambda a: torch.topk(a, -1), x)
    check(lambda a: torch.topk(a, 1, dim=3), x)                # bad dim
    check(lambda a: torch.topk(a, 1), torch.tensor([True, False]))  # bool: rejected

    def topk_out(a):
        v = torch.empty(0, device=a.device)
        i = torch.empty(0, dtype=torch.int64, device=a.device)
        torch.topk(a, 2, dim=1, out=(v, i))
        return v, i
    check_unstable(topk_out, make((4, 9), torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32,
                                   torch.uint8, torch.int64], ids=str)
def test_kthvalue(dtype):
    x = make((5, 17), dtype, seed=2)
    for _, layout in layouts(x):
        for k, dim, keepdim in ((1, 1, False), (9, 1, True), (17, -1, False), (3, 0, True)):
            values, indices = check_unstable(lambda a: torch.kthvalue(layout(a), k, dim, keepdim), x)
            torch.testing.assert_close(x.gather(dim, indices if keepdim else indices.unsqueeze(dim)),
                                       values if keepdim else values.unsqueeze(dim))


def test_kthvalue_edges_and_errors():
    check(lambda a: torch.kthvalue(a, 1), make((), torch.float32))
    check(lambda a: torch.kthvalue(a, 2, 0), torch.tensor([NAN, 1.0, NAN, 0.5]))
    check(lambda a: torch.kthvalue(a, 6), make((3, 5), torch.float32))   # k out of range
    check(lambda a: torch.kthvalue(a, 0), make((3, 5), torch.float32))
    check(lambda a: torch.kthvalue(a, 1, 2), make((3, 5), torch.float32))
    check(lambda a: torch.kthvalue(a, 1), torch.tensor([True, False]))  # bool: not implemented
    check(lambda a: torch.kthvalue(a, 1, 1), torch.empty(3, 0))

    def kth_out(a):
        v = torch.empty(0, device=a.device)
        i = torch.empty(0, dtype=torch.int64, device=a.device)
        torch.kthvalue(a, 2, 1, out=(v, i))
        return v, i
    check(kth_out, torch.tensor([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int16,
                                   torch.int64, torch.uint8], ids=str)
def test_median(dtype):
    # Distinct values: the CPU's index for a tie is its own choice.
    for shape in ((4, 7), (4, 8), (3, 5, 2)):
        n = torch.tensor(shape).prod().item()
        x = torch.randperm(n, generator=torch.Generator().manual_seed(n)).reshape(shape)
        x = (x - n // 2).to(dtype) if dtype not in (torch.uint8,) else x.to(dtype)
        for _, layout in layouts(x):
            for dim in range(len(shape)):
                check(lambda a: torch.median(layout(a), dim), x)
                check(lambda a: torch.median(layout(a), dim, keepdim=True), x)
                check(lambda a: torch.nanmedian(layout(a), dim), x)
        check(lambda a: torch.median(a), x)
        check(lambda a: torch.nanmedian(a), x)


def test_median_nan_edges_and_errors():
    x = torch.tensor([[1.0, NAN, 2.0, NAN, 0.0], [3.0, 1.0, 2.0, 5.0, 4.0],
                      [NAN, NAN, NAN, NAN, NAN], [NAN, 7.0, 1.0, 2.0, 9.0]])
    check(lambda a: torch.median(a, 1), x)
    check(lambda a: torch.nanmedian(a, 1), x[[0, 1, 3]])
    # All-NaN row: NaN; the CPU's index there is an artifact of its selection algorithm.
    check_unstable(lambda a: torch.nanmedian(a, 1), x)
    check(lambda a: torch.median(a), x)
    check(lambda a: torch.nanmedian(a), x)
    check(lambda a: torch.nanmedian(a), x[2])
    check(lambda a: torch.median(a, 0), make((), torch.float32))
    check(lambda a: torch.median(a), make((), torch.float32))
    check(lambda a: torch.median(a, 1), torch.empty(3, 0))      # error: empty reduced dim
    check(lambda a: torch.median(a, 0), torch.empty(0, 3))
    check(lambda a: torch.median(a), torch.empty(0))
    check(lambda a: torch.median(a, 2), x)                       # bad dim
    check(lambda a: torch.median(a, 0), torch.tensor([True, False]))
    check(lambda a: torch.median(a), torch.tensor([True, False]))
    big = make((1500,), torch.float32, seed=9)                   # multi-pass sort
    check(lambda a: torch.median(a), big)
    check(lambda a: torch.median(a, 0), big)

    def median_out(a):
        v = torch.empty(0, device=a.device)
        i = torch.empty(0, dtype=torch.int64, device=a.device)
        torch.median(a, 1, out=(v, i))
        return v, i
    check(median_out, x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_mode(dtype):
    x = with_ties((4, 5, 6), dtype)
    for _, layout in layouts(x):
        for dim in (0, 1, 2, -1):
            for keepdim in (False, True):
                check(lambda a: torch.mode(layout(a), dim, keepdim), x)
    check(lambda a: torch.mode(a), x)                                  # dim=-1
    # Equally frequent values: the smallest wins, with its last occurrence.
    check(lambda a: torch.mode(a, 1), torch.tensor([[1, 2, 2, 1, 3, 1, 2], [5, 4, 4, 5, 3, 3, 0]]).to(dtype))


def test_mode_edges_out_and_errors():
    check(lambda a: torch.mode(a, 0), make((), torch.float32))
    check(lambda a: torch.mode(a, -1, True), make((), torch.int64))
    check(lambda a: torch.mode(a, 1), make((0, 3), torch.float32))
    check(lambda a: torch.mode(a, 0, True), make((0, 3), torch.float32))
    check(lambda a: torch.mode(a, 1), make((2, 0), torch.float32))     # empty reduced dim
    check(lambda a: torch.mode(a, 2), make((2, 3), torch.float32))     # dim out of range
    # Long rows (multi-pass sort): the CPU sorts them with an unstable sort, so which
    # occurrence its index names is unspecified; compare the values, check the indices.
    x = with_ties((2000, 2), torch.int16, seed=5)
    values, indices = check_unstable(lambda a: torch.mode(a, 0), x)
    torch.testing.assert_close(x.gather(0, indices.unsqueeze(0)).squeeze(0), values)
    check(lambda a: torch.mode(a, 0), torch.tensor([0.0, -0.0, -0.0, 1.0, INF, INF, INF]))

    def with_out(a):
        values = torch.empty(0, dtype=a.dtype, device=a.device)
        indices = torch.empty(3, 2, dtype=torch.long, device=a.device).t()  # non-contiguous
        r = torch.mode(a, 0, out=(values, indices))
        return r.values, r.indices, values, indices
    check(with_out, with_ties((5, 2, 3), torch.float32))

    def wrong_out(a):
        return torch.mode(a, 1, out=(torch.empty(0, dtype=torch.float64, device=a.device),
                                     torch.empty(0, dtype=torch.long, device=a.device)))
    check(wrong_out, make((2, 3), torch.float32))

    def wrong_indices(a):
        return torch.mode(a, 1, out=(torch.empty(0, dtype=a.dtype, device=a.device),
                                     torch.empty(0, dtype=torch.int32, device=a.device)))
    check(wrong_indices, make((2, 3), torch.float32))
