"""torch.histogram / torch.histogramdd against PyTorch's CPU: exact counts (bin edges from a
range or from the data, tensor edges, the rightmost-edge rule, NaN and out-of-range values),
weights, density, float32 / float64, and bad arguments."""
import pytest
import torch

from helpers import check, make

pytestmark = pytest.mark.usefixtures("strict_native")

DTYPES = [torch.float32, torch.float64]


def sync():
    torch.vk.synchronize()


def exact(fn, *args):
    """Same results as the CPU, bit for bit (counts, edges)."""
    check(fn, *args, atol=0, rtol=0)


def sample(dtype, n=200, seed=0):
    x = make((n,), dtype, seed=seed)
    x[::17] = x[3]          # repeated values
    x[5] = float("nan")
    x[7] = 10.0             # outside the explicit ranges below
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_histogram_bin_count(dtype):
    x = sample(dtype)
    finite = x[torch.isfinite(x)]
    exact(lambda a: torch.histogram(a, bins=7, range=(-3.0, 3.0)), x)
    exact(lambda a: torch.histogram(a, bins=1, range=(-2.0, 2.0)), x)
    exact(lambda a: torch.histogram(a, bins=13), finite)          # range from the data
    exact(lambda a: torch.histogram(a, bins=4), finite[:198].reshape(-1, 3)[:, 1:])  # n-d, strided
    # values exactly on the edges, the rightmost edge included in the last bin
    edges_hit = torch.linspace(-1, 1, 9, dtype=dtype)
    exact(lambda a: torch.histogram(a, bins=8, range=(-1.0, 1.0)), edges_hit)
    exact(lambda a: torch.histogram(a, bins=3), torch.full((4,), 2.0, dtype=dtype))  # empty range
    exact(lambda a: torch.histogram(a, bins=3), torch.zeros(0, dtype=dtype))
    w = make(x.shape, dtype, low=0, high=2, seed=1)
    check(lambda a, b: torch.histogram(a, bins=5, range=(-3.0, 3.0), weight=b), x, w)
    check(lambda a: torch.histogram(a, bins=5, range=(-3.0, 3.0), density=True), x)
    check(lambda a, b: torch.histogram(a, bins=6, weight=b, density=True), finite, w[: finite.numel()])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_histogram_bin_tensor(dtype):
    x = sample(dtype)
    bins = torch.tensor([-2.5, -1.0, 0.0, 0.25, 2.0], dtype=dtype)
    exact(lambda a, b: torch.histogram(a, bins=b), x, bins)
    exact(lambda a, b: torch.histogram(a, bins=b), x, bins[:1])
    exact(lambda a, b: torch.histogram(a, bins=b), bins, bins)     # every edge, the last one included
    w = make(x.shape, dtype, low=0, high=2, seed=2)
    check(lambda a, b, c: torch.histogram(a, bins=b, weight=c), x, bins, w)
    check(lambda a, b, c: torch.histogram(a, bins=b, weight=c, density=True), x, bins, w)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_histogramdd(dtype):
    pts = make((60, 3), dtype, seed=3)
    pts[4, 1] = float("nan")
    exact(lambda a: torch.histogramdd(a, bins=[3, 4, 2], range=[-3.0, 3.0, -2.0, 2.0, -1.0, 3.0]), pts)
    finite = pts[torch.isfinite(pts).all(1)]
    exact(lambda a: torch.histogramdd(a, bins=[2, 5, 3]), finite)
    exact(lambda a: torch.histogramdd(a, bins=4), finite[:, :2])
    w = make((60,), dtype, low=0, high=1, seed=4)
    check(lambda a, b: torch.histogramdd(a, bins=[3, 3, 3], range=[-3.0, 3.0] * 3, weight=b, density=True), pts, w)
    edges = [torch.tensor([-3.0, 0.0, 3.0], dtype=dtype), torch.tensor([-1.0, 1.0], dtype=dtype),
             torch.tensor([-3.0, -1.0, 0.5, 3.0], dtype=dtype)]
    exact(lambda a, e0, e1, e2: torch.histogramdd(a, bins=[e0, e1, e2]), pts, *edges)
    check(lambda a, b, e0, e1, e2: torch.histogramdd(a, bins=[e0, e1, e2], weight=b, density=True), pts, w, *edges)
    exact(lambda a: torch.histogramdd(a, bins=[2, 2, 2]), pts.reshape(3, 20, 3))   # batched points


def test_histogram_bad_arguments():
    x = make((10,), torch.float32)
    x64 = make((10,), torch.float64)
    cases = [
        (lambda a: torch.histogram(a, bins=0), x),
        (lambda a: torch.histogram(a, bins=3, range=(2.0, 1.0)), x),
        (lambda a: torch.histogram(a, bins=3, range=(0.0, float("inf"))), x),
        (lambda a: torch.histogram(a, bins=3, weight=torch.ones(3, device=a.device)), x),
        (lambda a: torch.histogram(a, bins=3, weight=torch.ones(10, dtype=torch.float64, device=a.device)), x),
        (lambda a: torch.histogram(a, bins=torch.tensor([0.0, 1.0], device=a.device)), x64),
        (lambda a: torch.histogramdd(a.reshape(5, 2), bins=[2, 2, 2]), x),
        (lambda a: torch.histogramdd(a.reshape(5, 2), bins=[2, 2], range=[0.0, 1.0]), x),
    ]
    for fn, a in cases:
        with pytest.raises(RuntimeError) as cpu:
            fn(a)
        with pytest.raises(RuntimeError) as vk:
            fn(a.to("vk"))
            sync()
        assert str(cpu.value).splitlines()[0] == str(vk.value).splitlines()[0]
    for dtype in (torch.int64, torch.float16):
        with pytest.raises(NotImplementedError):
            torch.histogram(make((10,), dtype), bins=3)
        with pytest.raises(NotImplementedError):
            torch.histogram(make((10,), dtype).to("vk"), bins=3)
    with pytest.raises(NotImplementedError):
        torch.histogram(make((10,), torch.int64).to("vk"), bins=3, range=(0.0, 1.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_histogram_half_with_range_or_edges(dtype):
    x = sample(torch.float32).to(dtype)
    exact(lambda a: torch.histogram(a, bins=6, range=(-3.0, 3.0)), x)
    exact(lambda a, b: torch.histogram(a, bins=b), x, torch.tensor([-2.5, -1.0, 0.0, 0.25, 2.0], dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64],
                         ids=str)
def test_histc_integer_input_bins_like_cuda(dtype):
    """The CPU has no integer histc; CUDA bins integers in int64 arithmetic
    ((x - min) * bins / (max - min), truncated; the right edge in the last bin; min == max: the
    input's range). Hugging Face's mixture-of-experts layers count tokens per expert this way
    on every device but the CPU. Reference: that arithmetic in Python."""
    low = 0 if dtype == torch.uint8 else -7
    x = torch.randint(low, 20, (300,), generator=torch.Generator().manual_seed(5)).to(dtype)
    for bins, lo, hi in [(5, low, 19), (7, 0, 0), (3, low + 5, 10), (4, 2.7, 9.5), (20, 0, 3)]:
        got = torch.histc(x.to("vk"), bins=bins, min=lo, max=hi)
        assert got.dtype == dtype and got.device.type == "vk"
        left, right = int(lo), int(hi)
        if left == right:
            left, right = int(x.min()), int(x.max())
        expected = [0] * bins
        for v in x.tolist():
            if left <= v <= right:
                expected[min((v - left) * bins // (right - left), bins - 1)] += 1
        assert got.cpu().tolist() == expected
    # Expert ids 0..E-1 counted into E bins: the bincount.
    ids = torch.randint(0, 4, (50,), dtype=torch.int32)
    assert torch.histc(ids.to("vk"), bins=4, min=0, max=3).cpu().tolist() == \
        torch.bincount(ids, minlength=4).tolist()
    assert torch.histc(torch.zeros(0, dtype=dtype, device="vk"), bins=3).cpu().tolist() == [0] * 3
    if dtype == torch.uint8:  # -2 wraps to 254 (Scalar::to<uint8_t>, as on CUDA): an empty range
        with pytest.raises(RuntimeError, match="max must be larger than min"):
            torch.histc(x.to("vk"), bins=3, min=-2, max=10)
    with pytest.raises(RuntimeError, match="overflow"):  # past the dtype: Scalar::to raises
        torch.histc(x.to("vk"), bins=3, min=0, max=1e30)
