"""Reductions against PyTorch's CPU: sum, mean, prod, amax / amin, max / min (with indices),
argmax / argmin, all / any, count_nonzero, var / std (+ _mean), norm / linalg.vector_norm."""
import pytest
import torch

import torch_vk
from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32,
                                   torch.int64, torch.uint8, torch.bool], ids=str)
def test_sum_dims(dtype):
    x = make((3, 4, 5), dtype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).sum(), x)
        for dim in (0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2), []):
            for keepdim in (False, True):
                check(lambda a: layout(a).sum(dim, keepdim=keepdim), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_mean_dims(dtype):
    x = make((4, 3, 6), dtype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).mean(), x)
        for dim in (0, 1, 2, (0, 2), (-1, -2)):
            for keepdim in (False, True):
                check(lambda a: layout(a).mean(dim, keepdim=keepdim), x)


def test_sum_mean_dtype_argument_and_errors():
    x = make((5, 6), torch.float16)
    check(lambda a: a.sum(dtype=torch.float32), x)
    check(lambda a: a.sum(1, dtype=torch.float32), x)
    check(lambda a: a.mean(0, dtype=torch.float32), x)
    i = make((5, 6), torch.int32)
    check(lambda a: a.sum(dtype=torch.float32), i)
    check(lambda a: a.mean(), i)                         # error: integer mean
    check(lambda a: a.mean(dtype=torch.float32), i)
    check(lambda a: a.sum(2), x)                         # error: dim out of range
    check(lambda a: a.sum((0, 0)), x)                    # error: repeated dim


def test_sum_edge_cases():
    check(lambda a: a.sum(), make((), torch.float32))
    check(lambda a: a.sum(0), make((), torch.float32))
    check(lambda a: a.sum(), make((0,), torch.float32))
    check(lambda a: a.sum(0), make((0, 4), torch.float32))
    check(lambda a: a.sum(1), make((0, 4), torch.float32))
    check(lambda a: a.mean(0), make((0, 4), torch.float32))   # NaN
    check(lambda a: a.sum(0), make((1, 1, 7), torch.float32))
    check(lambda a: a.expand(4, 5, 6).sum(1), make((1, 5, 1), torch.float32))  # broadcast input


def test_sum_large_and_accurate():
    x = torch.rand(300_000, dtype=torch.float32)
    check(lambda a: a.sum(), x, atol=1e-2, rtol=1e-5)
    check(lambda a: a.view(600, 500).sum(0), x, atol=1e-3, rtol=1e-5)
    check(lambda a: a.view(600, 500).sum(1), x, atol=1e-3, rtol=1e-5)
    h = torch.full((4096,), 1.0, dtype=torch.float16)  # fp16 would saturate without fp32 accumulation
    check(lambda a: a.sum(), h)
    big = torch.tensor([2**40, 3, -(2**41)], dtype=torch.int64)
    check(lambda a: a.sum(), big)


def test_sum_out():
    x = make((4, 5), torch.float32)
    check(lambda a: torch.sum(a, 1, out=torch.empty(4, device=a.device)), x)
    check(lambda a: torch.sum(a, 1, out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch.mean(a, 0, keepdim=True, out=torch.empty(1, 5, device=a.device)), x)
    check(lambda a: torch.sum(a, 1, dtype=torch.float16, out=torch.empty(4, device=a.device)), x)


# ---------------------------------------------------------------- helpers

ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int8,
              torch.uint8, torch.bool]
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DIMS = (0, 1, -1, (0, 2), (-1, -3), ())


def tied(shape, dtype, seed=0):
    """Values with many repeats (ties pick the first index) and negatives."""
    if dtype == torch.bool or not dtype.is_floating_point:
        x = make(shape, dtype, seed=seed)
        return x if dtype == torch.bool else x % 5 if dtype == torch.uint8 else x % 7 - 3
    return (make(shape, torch.float32, seed=seed) * 1.5).round().to(dtype)


def with_nans(x):
    y = x.clone().flatten()
    y[3] = float("nan")
    y[17] = float("nan")
    y[-2] = float("nan")
    return y.view(x.shape)


# ---------------------------------------------------------------- amax / amin / max / min

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_amax_amin(dtype):
    x = tied((3, 4, 5), dtype)
    for _, layout in layouts(x):
        for dim in DIMS:
            for keepdim in (False, True):
                check(lambda a: torch.amax(layout(a), dim, keepdim), x)
                check(lambda a: torch.amin(layout(a), dim, keepdim), x)
        check(lambda a: layout(a).max(), x)
        check(lambda a: layout(a).min(), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_max_min_dim_indices(dtype):
    x = tied((4, 6, 5), dtype, seed=1)
    for _, layout in layouts(x):
        for dim in (0, 1, 2, -1):
            for keepdim in (False, True):
                check(lambda a: tuple(torch.max(layout(a), dim, keepdim)), x)
                check(lambda a: tuple(torch.min(layout(a), dim, keepdim)), x)
        for dim in (None, 0, 2, -2):
            for keepdim in (False, True):
                check(lambda a: torch.argmax(layout(a), dim, keepdim), x)
                check(lambda a: torch.argmin(layout(a), dim, keepdim), x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_extremes_nan_and_inf(dtype):
    x = with_nans(tied((5, 7), dtype, seed=2))
    x[1, 2] = float("inf")
    x[4, 0] = -float("inf")
    for f in (lambda a: a.amax(0), lambda a: a.amin(1), lambda a: a.max(), lambda a: a.min(),
              lambda a: tuple(a.max(0)), lambda a: tuple(a.min(1)), lambda a: a.argmax(),
              lambda a: a.argmin(0), lambda a: a.argmax(1, keepdim=True)):
        check(f, x)
    only_inf = torch.full((3, 4), -float("inf"), dtype=dtype)
    check(lambda a: tuple(a.max(1)), only_inf)
    check(lambda a: a.argmax(), only_inf)
    many = torch.full((300,), float("nan"), dtype=dtype)
    check(lambda a: tuple(a.min(0)), many)


def test_extremes_long_rows_and_large():
    x = torch.rand(70_000)
    x[12_345] = 2.0
    x[54_321] = 2.0
    check(lambda a: tuple(a.max(0)), x)
    check(lambda a: a.argmax(), x)
    check(lambda a: a.view(7, 10_000).argmin(1), x)
    check(lambda a: tuple(a.view(10_000, 7).max(0)), x)
    check(lambda a: a.view(10_000, 7).amax(1), x)
    big = torch.tensor([2**62, -(2**62), 2**62 + 1, 5], dtype=torch.int64)
    check(lambda a: tuple(a.max(0)), big)
    check(lambda a: a.argmin(), big)


def test_extremes_edge_cases_and_errors():
    empty = torch.empty(0, 3)
    check(lambda a: a.max(), empty)                    # error: no dim for an empty tensor
    check(lambda a: a.min(), empty)
    check(lambda a: a.amax(), empty)                   # error
    check(lambda a: a.amax(1), empty)                  # empty result
    check(lambda a: a.amax(0), empty)                  # error: empty reduced dim
    check(lambda a: tuple(a.max(0)), empty)            # error
    check(lambda a: tuple(a.max(1)), empty)            # empty values and indices
    check(lambda a: a.argmax(), empty)                 # error
    check(lambda a: a.argmax(1), empty)
    check(lambda a: a.argmax(), make((4,), torch.bool))   # error: bool argmax
    check(lambda a: a.argmax(3), make((4, 2), torch.float32))  # error: dim out of range
    scalar = make((), torch.float32)
    for f in (lambda a: a.max(), lambda a: a.amax(), lambda a: tuple(a.max(0)),
              lambda a: a.argmax(), lambda a: a.argmax(0, keepdim=True), lambda a: a.amin(0),
              lambda a: tuple(a.min(-1, keepdim=True))):
        check(f, scalar)
    check(lambda a: a.expand(4, 5, 6).amax((0, 2)), make((1, 5, 1), torch.float32))
    check(lambda a: a.max(1).values, make((3, 1, 2), torch.float32))  # reduce a size-1 dim


def test_extremes_out():
    x = tied((4, 5), torch.float32, seed=3)
    check(lambda a: torch.amax(a, 1, out=torch.empty(4, device=a.device)), x)
    check(lambda a: torch.amin(a, (0, 1), keepdim=True, out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch.amax(a, 1, out=torch.empty(4, dtype=torch.int64, device=a.device)), x)  # error
    check(lambda a: torch.max(a, out=torch.empty(3, device=a.device)), x)

    def max_out(a):
        v = torch.empty(2, 5, device=a.device)[:, 0]
        i = torch.empty(0, dtype=torch.int64, device=a.device)
        r = torch.max(a, 1, out=(v, i))
        return v, i, r.values, r.indices

    check(max_out, x)
    check(lambda a: torch.argmax(a, 0, out=torch.empty(5, dtype=torch.int64, device=a.device)), x)
    check(lambda a: torch.argmin(a, out=torch.empty(5, dtype=torch.int64, device=a.device)), x)
    check(lambda a: torch.argmax(a, 0, out=torch.empty(5, device=a.device)), x)  # error: dtype


# ---------------------------------------------------------------- prod

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_prod(dtype):
    x = make((3, 4, 5), dtype, low=0.5, high=1.5) if dtype.is_floating_point else tied((3, 4, 5), dtype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).prod(), x)
        for dim in (0, 2, -1):
            for keepdim in (False, True):
                check(lambda a: layout(a).prod(dim, keepdim=keepdim), x)


def test_prod_dtype_out_and_edge_cases():
    x = make((4, 5), torch.float16, low=0.5, high=1.5)
    check(lambda a: a.prod(dtype=torch.float32), x)
    check(lambda a: a.prod(1, dtype=torch.float32), x)
    i = make((4, 5), torch.int32, low=-2, high=2)
    check(lambda a: a.prod(0), i)
    check(lambda a: a.prod(0, dtype=torch.int16), i)
    check(lambda a: torch.prod(i.to(a.device), 1, out=torch.empty(4, dtype=torch.int64, device=a.device)), i)
    check(lambda a: a.prod(0), torch.empty(0, 3))       # ones
    check(lambda a: a.prod(), torch.empty(0))
    check(lambda a: a.prod(0), make((), torch.float32))
    n = with_nans(make((5, 6), torch.float32))
    check(lambda a: a.prod(1), n)
    check(lambda a: a.prod(2), x)                       # error: dim out of range


# ---------------------------------------------------------------- all / any / count_nonzero

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_all_any(dtype):
    x = make((3, 4, 5), dtype)
    if dtype != torch.bool:
        x = x * (make((3, 4, 5), torch.float32, seed=9) > -1.5).to(dtype)  # some zeros
    for _, layout in layouts(x):
        check(lambda a: layout(a).all(), x)
        check(lambda a: layout(a).any(), x)
        for dim in (0, 2, -1, (0, 2), ()):
            for keepdim in (False, True):
                check(lambda a: torch.all(layout(a), dim, keepdim=keepdim), x)
                check(lambda a: torch.any(layout(a), dim, keepdim=keepdim), x)
        check(lambda a: torch.count_nonzero(layout(a), (0, 2)), x)
        check(lambda a: torch.count_nonzero(layout(a)), x)


def test_all_any_special_and_out():
    f = torch.tensor([[0.0, float("nan")], [-0.0, 0.0], [1e-30, 2.0]])
    for fn in (lambda a: a.all(1), lambda a: a.any(1), lambda a: a.all(), lambda a: a.any(0),
               lambda a: torch.count_nonzero(a, 1)):
        check(fn, f)
    for shape in ((0, 3), (0,), ()):
        x = make(shape, torch.float32)
        check(lambda a: a.all(), x)
        check(lambda a: a.any(), x)
        if len(shape) == 2:
            check(lambda a: a.all(0), x)
            check(lambda a: a.any(1), x)
    u = make((4, 5), torch.uint8)
    check(lambda a: torch.all(a, 1, out=torch.empty(4, dtype=torch.uint8, device=a.device)), u)
    check(lambda a: torch.any(a, out=torch.empty((), dtype=torch.bool, device=a.device)), u)
    check(lambda a: torch.all(a, (0, 1), out=torch.empty(3, dtype=torch.bool, device=a.device)), f)
    check(lambda a: torch.any(a, 1, out=torch.empty(3, dtype=torch.float32, device=a.device)), f)  # error
    big = torch.zeros(50_000, dtype=torch.int64)
    big[40_000] = 1
    check(lambda a: (a.any(), a.all(), (1 - a).all()), big)


# ---------------------------------------------------------------- var / std

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_var_std(dtype):
    x = make((4, 5, 6), dtype) + 2
    for _, layout in layouts(x):
        for dim in (None, 0, -1, (0, 2), 1):
            for correction in (0, 1, 2):
                for keepdim in (False, True):
                    check(lambda a: torch.var(layout(a), dim, correction=correction, keepdim=keepdim), x)
                    check(lambda a: torch.std(layout(a), dim, correction=correction, keepdim=keepdim), x)
        check(lambda a: torch.var_mean(layout(a), 1), x)
        check(lambda a: torch.std_mean(layout(a), (0, 1), correction=0, keepdim=True), x)
        check(lambda a: layout(a).var(unbiased=False), x)
        check(lambda a: layout(a).std(2, unbiased=True), x)


def test_var_std_accuracy_edge_cases_and_errors():
    shifted = torch.rand(5000) + 1000.0      # a large mean: a one-pass sum of squares would lose it
    check(lambda a: a.var(), shifted, atol=1e-4, rtol=1e-4)
    check(lambda a: a.view(50, 100).std(1), shifted, atol=1e-5, rtol=1e-4)
    check(lambda a: torch.var_mean(a.view(100, 50), 0), shifted, atol=1e-4, rtol=1e-4)
    check(lambda a: a.std(), torch.rand(200_000), atol=1e-5, rtol=1e-4)
    check(lambda a: a.var(0), make((1, 4), torch.float32))                # N - 1 = 0: NaN
    check(lambda a: a.var(), torch.empty(0))                              # NaN
    check(lambda a: a.var(0), torch.empty(0, 3))
    check(lambda a: a.var(1), torch.empty(0, 3))
    check(lambda a: a.std(), make((), torch.float32))
    check(lambda a: a.var(correction=5), make((3,), torch.float32))       # inf / NaN
    check(lambda a: a.var(), with_nans(make((4, 5), torch.float32)))
    check(lambda a: a.var(), make((4,), torch.int64))                     # error: integer input
    check(lambda a: a.std(3), make((4, 5), torch.float32))                # error: dim
    x = make((4, 5), torch.float32)
    check(lambda a: torch.var(a, 1, out=torch.empty(4, device=a.device)), x)
    check(lambda a: torch.std(a, 0, keepdim=True, out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch.var_mean(a, 1, out=(torch.empty(4, device=a.device),
                                             torch.empty(4, device=a.device))), x)


# ---------------------------------------------------------------- norms

ORDS = (2, 1, float("inf"), -float("inf"), 0, 3, 0.5, -1.5)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_vector_norm(dtype):
    x = make((4, 5, 3), dtype)
    x[1, 2, 0] = 0
    for _, layout in layouts(x):
        for ord in ORDS:
            check(lambda a: torch.linalg.vector_norm(layout(a), ord), x)
            check(lambda a: torch.linalg.vector_norm(layout(a), ord, (0, 2), keepdim=True), x)
            check(lambda a: torch.linalg.vector_norm(layout(a), ord, -1), x)
        check(lambda a: layout(a).norm(), x)
        check(lambda a: layout(a).norm(1, 1), x)
        check(lambda a: torch.norm(layout(a), float("inf"), (0, 1), keepdim=True), x)
    check(lambda a: torch.linalg.vector_norm(a, 2, dtype=torch.float32), x)
    check(lambda a: torch.norm(a, 3, 0, dtype=torch.float32), x)


def test_vector_norm_edge_cases_and_errors():
    check(lambda a: torch.linalg.vector_norm(a), torch.empty(0))
    check(lambda a: torch.linalg.vector_norm(a, 0, 1), torch.empty(3, 0))
    check(lambda a: torch.linalg.vector_norm(a, float("inf")), torch.empty(0))   # error
    check(lambda a: torch.linalg.vector_norm(a, -1), torch.empty(2, 0))            # error
    check(lambda a: torch.linalg.vector_norm(a, 3), make((), torch.float32))
    check(lambda a: torch.linalg.vector_norm(a, 2, 1), make((4, 1), torch.float32))  # size-1 dim
    check(lambda a: torch.linalg.vector_norm(a), make((4,), torch.int64))          # error
    check(lambda a: torch.linalg.vector_norm(a), with_nans(make((5, 5), torch.float32)))
    check(lambda a: torch.linalg.vector_norm(a, float("inf")), with_nans(make((5, 5), torch.float32)))
    check(lambda a: torch.linalg.vector_norm(a), torch.full((8,), 1e30))  # overflows to inf in fp32
    check(lambda a: torch.linalg.vector_norm(a), torch.rand(300_000), atol=1e-3, rtol=1e-5)
    x = make((4, 5), torch.float32)
    check(lambda a: torch.linalg.vector_norm(a, 2, 1, out=torch.empty(4, device=a.device)), x)
    check(lambda a: torch.norm(a, 2, 1, out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch.linalg.vector_norm(a, 2, 1, out=torch.empty(4, dtype=torch.int64, device=a.device)), x)


def test_clip_grad_norm():
    """clip_grad_norm_ (both the per-tensor and the foreach path) computes its norms natively;
    the surrounding glue (stack, clamp, mul_) may fall back while those ops are not native."""
    torch_vk.set_fallback_mode("silent")
    before = dict(torch_vk.stats()["fallbacks"])
    g = torch.Generator().manual_seed(0)
    shapes = [(5, 6), (5,), (3, 5), (3,)]
    for norm_type in (2.0, float("inf"), 1.0):
        for foreach in (False, True):
            grads = [torch.randn(s, generator=g) * 3 for s in shapes]
            cpu = [_param(x) for x in grads]
            vk = [_param(x.to("vk")) for x in grads]
            tc = torch.nn.utils.clip_grad_norm_(cpu, 1.0, norm_type, foreach=foreach)
            tv = torch.nn.utils.clip_grad_norm_(vk, 1.0, norm_type, foreach=foreach)
            assert tv.device.type == "vk"
            torch.testing.assert_close(tv.cpu(), tc)
            for c, v in zip(cpu, vk):
                torch.testing.assert_close(v.grad.cpu(), c.grad)
    after = torch_vk.stats()["fallbacks"]
    fell_back = [op for op, n in after.items() if "norm" in op and n != before.get(op, 0)]
    assert not fell_back, fell_back


def _param(grad):
    p = torch.nn.Parameter(torch.zeros_like(grad))
    p.grad = grad
    return p


def test_equal_matches_cpu(strict_native):
    a = torch.arange(12.0).reshape(3, 4)
    cases = [
        (a, a.clone()),
        (a, a + 0.5),
        (a, a.t().contiguous().t()),             # same values, other strides
        (a.t(), a.t().contiguous()),             # non-contiguous operand
        (a, a[:2]),                              # different sizes
        (torch.tensor([1.0, float("nan")]),) * 2,  # NaN never equals
        (torch.empty(0, 3), torch.empty(0, 3)),
        (torch.tensor(2.0), torch.tensor(2.0)),  # 0-dim
        (torch.ones(3), torch.ones(3, dtype=torch.int32)),  # promoted like the CPU
        (torch.tensor([0.5]), torch.tensor([0])),
        (torch.tensor([True, False]), torch.tensor([True, False])),
        (torch.ones(2, 3, dtype=torch.float16), torch.ones(2, 3, dtype=torch.float16)),
    ]
    for x, y in cases:
        assert torch.equal(x.to("vk"), y.to("vk")) == torch.equal(x, y), (x, y)
    with pytest.raises(RuntimeError, match="different devices"):
        torch.equal(torch.ones(2), torch.ones(2, device="vk"))
