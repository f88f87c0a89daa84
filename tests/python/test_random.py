"""Random numbers on vk: distributions (statistical checks with fixed seeds: moments, ranges,
frequencies, Kolmogorov-Smirnov and chi-square bounds), reproducibility (seeds, RNG state,
fork_rng, generators), randperm, multinomial, dropout, and the CPU's errors for bad input.

The bounds are what a correct sampler passes with overwhelming probability (4 standard errors,
KS at the 0.1% level, chi-square at the 0.1% level); a biased or broken sampler fails them."""
import math

import pytest
import torch
import torch.nn.functional as F

import torch_vk  # noqa: F401
from helpers import check

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
N = 20000


def ks_statistic(samples, cdf):
    """Kolmogorov-Smirnov distance between the samples and a CDF (a function on a float64 tensor)."""
    x = samples.double().flatten().sort().values
    n = x.numel()
    f = cdf(x)
    hi = torch.arange(1, n + 1, dtype=torch.float64) / n - f
    lo = f - torch.arange(0, n, dtype=torch.float64) / n
    return max(hi.max().item(), lo.max().item())


def ks_bound(n, quantum=0.0):
    # 0.1% critical value 1.95 / sqrt(n), plus the CDF step of the dtype's rounding.
    return 1.95 / math.sqrt(n) + quantum


QUANTUM = {torch.float32: 0.0, torch.float64: 0.0, torch.float16: 2 ** -10, torch.bfloat16: 2 ** -7}


def normal_cdf(x, mean=0.0, std=1.0):
    return 0.5 * (1 + torch.erf((x - mean) / (std * math.sqrt(2))))


def chi_square(counts, expected):
    counts = counts.double()
    expected = expected.double()
    return ((counts - expected) ** 2 / expected).sum().item()


# 0.1% critical values of chi-square with k degrees of freedom.
CHI2_999 = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 9: 27.88, 23: 49.73}


# ---------------------------------------------------------------- uniform / normal

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_uniform(dtype):
    torch.manual_seed(1)
    x = torch.rand(N, device=VK, dtype=dtype)
    assert x.device.type == "vk" and x.dtype == dtype
    c = x.cpu().double()
    assert c.min() >= 0 and c.max() < 1
    assert abs(c.mean().item() - 0.5) < 4 * math.sqrt(1 / 12 / N)
    assert abs(c.var().item() - 1 / 12) < 0.004
    assert ks_statistic(c, lambda t: t.clamp(0, 1)) < ks_bound(N, QUANTUM[dtype])
    # uniform_(from, to), non-default bounds, in place on a strided view
    y = torch.zeros(2 * N, device=VK, dtype=dtype)
    y[::2].uniform_(-3, 5)
    yc = y.cpu().double()
    assert (yc[1::2] == 0).all()
    v = yc[::2]
    assert v.min() >= -3 and v.max() < 5
    assert abs(v.mean().item() - 1) < 4 * math.sqrt(64 / 12 / N)
    assert ks_statistic(v, lambda t: ((t + 3) / 8).clamp(0, 1)) < ks_bound(N, 8 * QUANTUM[dtype])


def test_uniform_bound_never_reached_after_rounding():
    # [from, to) with to close to from: every rounded value must stay below `to`.
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        x = torch.empty(5000, device=VK, dtype=dtype).uniform_(1.0, 1.0 + 8 * torch.finfo(dtype).eps)
        c = x.cpu().double()
        assert c.min() >= 1.0 and c.max() < 1.0 + 8 * torch.finfo(dtype).eps


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_normal(dtype):
    torch.manual_seed(2)
    x = torch.randn(N, device=VK, dtype=dtype).cpu().double()
    assert abs(x.mean().item()) < 4 / math.sqrt(N)
    assert abs(x.std().item() - 1) < 0.03
    assert ks_statistic(x, normal_cdf) < ks_bound(N, 2 * QUANTUM[dtype])
    y = torch.empty(100, 200, device=VK, dtype=dtype).t().normal_(3.0, 0.5).cpu().double()
    assert abs(y.mean().item() - 3) < 4 * 0.5 / math.sqrt(N)
    assert abs(y.std().item() - 0.5) < 0.02
    assert ks_statistic(y, lambda t: normal_cdf(t, 3.0, 0.5)) < ks_bound(N, 6 * QUANTUM[dtype])


def test_normal_tensor_overloads():
    torch.manual_seed(3)
    mean = torch.tensor([-10.0, 0.0, 10.0]).repeat(4000).to(VK)
    std = torch.tensor([1.0, 2.0, 0.5]).repeat(4000).to(VK)
    for out in (torch.normal(mean, std), torch.normal(mean, 2.0), torch.normal(1.0, std)):
        assert out.device.type == "vk" and out.shape == mean.shape
    a = torch.normal(mean, std).cpu().view(4000, 3)
    assert torch.allclose(a.mean(0), torch.tensor([-10.0, 0.0, 10.0]), atol=4 * 2 / math.sqrt(4000))
    assert torch.allclose(a.std(0), torch.tensor([1.0, 2.0, 0.5]), rtol=0.05)
    b = torch.normal(mean, 2.0).cpu().view(4000, 3)
    assert torch.allclose(b.std(0), torch.full((3,), 2.0), rtol=0.05)
    c = torch.normal(1.0, std).cpu().view(4000, 3)
    assert torch.allclose(c.mean(0), torch.ones(3), atol=4 * 2 / math.sqrt(4000))
    out = torch.empty(12000, device=VK)
    torch.normal(mean, std, out=out)
    assert torch.allclose(out.cpu().view(4000, 3).mean(0), torch.tensor([-10.0, 0.0, 10.0]), atol=0.2)
    # broadcasting mean [3, 1] with std [4]
    assert torch.normal(torch.zeros(3, 1, device=VK), torch.ones(4, device=VK)).shape == (3, 4)
    # std 0 gives the mean exactly
    assert (torch.normal(mean, torch.zeros_like(std)).cpu() == mean.cpu()).all()


def test_normal_and_uniform_errors():
    check(lambda t: t.normal_(0, -1), torch.empty(3))
    check(lambda t: t.uniform_(2, 1), torch.empty(3))
    check(lambda t: t.uniform_(), torch.empty(3, dtype=torch.int64))
    check(lambda t: t.normal_(), torch.empty(3, dtype=torch.int64))
    check(lambda m, s: torch.normal(m, s), torch.zeros(3), torch.tensor([1.0, -1.0, 1.0]))
    check(lambda t: t.uniform_(0, 1e300), torch.empty(3, dtype=torch.float32))
    # empty tensors are a no-op
    assert torch.empty(0, device=VK).uniform_().shape == (0,)
    assert torch.randn(0, 3, device=VK).shape == (0, 3)


# ---------------------------------------------------------------- reproducibility

def test_manual_seed_reproduces_and_streams_advance():
    torch.manual_seed(123)
    a = torch.rand(1000, device=VK)
    b = torch.rand(1000, device=VK)
    torch.manual_seed(123)
    a2 = torch.rand(1000, device=VK)
    b2 = torch.rand(1000, device=VK)
    assert torch.equal(a.cpu(), a2.cpu()) and torch.equal(b.cpu(), b2.cpu())
    assert not torch.equal(a.cpu(), b.cpu())
    torch.manual_seed(124)
    assert not torch.equal(torch.rand(1000, device=VK).cpu(), a.cpu())
    torch.vk.manual_seed(123)
    assert torch.equal(torch.rand(1000, device=VK).cpu(), a.cpu())


def test_values_do_not_depend_on_layout():
    # Element e's numbers are a function of (seed, offset, row-major index e).
    torch.manual_seed(7)
    a = torch.empty(6, 40, device=VK).uniform_()
    torch.manual_seed(7)
    b = torch.empty(40, 6, device=VK).t().uniform_()
    torch.manual_seed(7)
    c = torch.empty(6, 80, device=VK)[:, ::2].uniform_()
    assert torch.equal(a.cpu(), b.cpu()) and torch.equal(a.cpu(), c.cpu())
    # A prefix of a larger launch: same numbers for the same indices.
    torch.manual_seed(7)
    d = torch.empty(6 * 40 + 100, device=VK).uniform_()
    assert torch.equal(d[:240].cpu(), a.flatten().cpu())


def test_rng_state_and_fork_rng():
    torch.manual_seed(5)
    torch.rand(10, device=VK)
    state = torch.vk.get_rng_state()
    a = torch.randn(500, device=VK).cpu()
    torch.vk.set_rng_state(state)
    assert torch.equal(torch.randn(500, device=VK).cpu(), a)
    with torch.random.fork_rng(device_type="vk"):
        torch.rand(1000, device=VK)
        torch.manual_seed(99)
        torch.rand(10, device=VK)
    after_fork = torch.rand(300, device=VK).cpu()
    torch.vk.set_rng_state(state)
    torch.randn(500, device=VK)
    assert torch.equal(torch.rand(300, device=VK).cpu(), after_fork)


def test_generator_objects():
    g = torch.Generator(device=VK).manual_seed(42)
    a = torch.rand(100, device=VK, generator=g).cpu()
    g.manual_seed(42)
    b = torch.rand(100, device=VK, generator=g).cpu()
    assert torch.equal(a, b)
    g2 = torch.Generator(device=VK).manual_seed(42)
    torch.manual_seed(0)
    torch.rand(5, device=VK)  # the default generator does not disturb g2
    assert torch.equal(torch.rand(100, device=VK, generator=g2).cpu(), a)
    g3 = torch.Generator(device=VK)
    g3.set_state(g.get_state())
    assert torch.equal(torch.randn(50, device=VK, generator=g).cpu(),
                       torch.randn(50, device=VK, generator=g3).cpu())


def test_like_factories():
    torch.manual_seed(8)
    base = torch.empty(50, 60, device=VK, dtype=torch.float16)
    r = torch.rand_like(base)
    n = torch.randn_like(base)
    i = torch.randint_like(base, 3, 9)
    for t in (r, n, i):
        assert t.device.type == "vk" and t.dtype == torch.float16 and t.shape == base.shape
    ic = i.cpu()
    assert ic.min() >= 3 and ic.max() <= 8 and (ic == ic.round()).all()
    assert set(ic.unique().tolist()) == {3.0, 4.0, 5.0, 6.0, 7.0, 8.0}
    assert 0 <= r.cpu().min() and r.cpu().max() < 1


# ---------------------------------------------------------------- bernoulli

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int64, torch.uint8, torch.bool], ids=str)
def test_bernoulli_scalar(dtype):
    torch.manual_seed(9)
    for p in (0.0, 0.3, 1.0):
        x = torch.empty(N, device=VK, dtype=dtype).bernoulli_(p).cpu()
        vals = x.double()
        assert ((vals == 0) | (vals == 1)).all()
        freq = vals.mean().item()
        assert abs(freq - p) <= 4 * math.sqrt(p * (1 - p) / N)
    y = torch.bernoulli(torch.empty(1000, device=VK, dtype=dtype), 0.5) if dtype.is_floating_point else None
    if y is not None:
        assert y.device.type == "vk" and y.dtype == dtype


def test_bernoulli_tensor_p():
    torch.manual_seed(10)
    p = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0], device=VK)
    probs = p.cpu().repeat(4000).view(4000, 5).to(VK)
    for sample in (torch.bernoulli(probs), torch.empty(4000, 5, device=VK).bernoulli_(probs),
                   torch.empty(4000, 5, device=VK, dtype=torch.int32).bernoulli_(p),  # broadcast
                   torch.empty(4000, 5, device=VK).bernoulli_(probs.double())):
        s = sample.cpu().double()
        freq = s.mean(0)
        bound = 4 * torch.sqrt(p.cpu() * (1 - p.cpu()) / 4000)
        assert ((freq - p.cpu()).abs() <= bound).all(), freq
    out = torch.empty(4000, 5, device=VK)
    torch.bernoulli(probs, out=out)
    assert ((out.cpu().mean(0) - p.cpu()).abs() < 0.05).all()
    assert torch.bernoulli(probs.half()).dtype == torch.float16


def test_bernoulli_errors():
    check(lambda t: t.bernoulli_(1.5), torch.empty(3))
    check(lambda t: t.bernoulli_(-0.1), torch.empty(3))
    check(lambda t: torch.bernoulli(t, -1.0), torch.empty(3))


P_MESSAGE = r"Expected p_in >= 0 && p_in <= 1 to be true, but got false\."


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("bad", [1.5, -0.25, float("nan"), float("inf")])
def test_bernoulli_tensor_p_outside_0_1_raises_like_cpu(dtype, bad):
    """Checked on the device (no host read of p), raised at the next synchronization with the
    CPU's exception type and message; the output is still 0 / 1 and the stream keeps working."""
    torch.manual_seed(12)
    values = torch.tensor([[0.25, 0.5, bad], [0.0, 1.0, 0.75]], dtype=dtype)
    layouts = {"contiguous": values, "transposed": values.t().contiguous().t(), "strided": torch.stack([values, values], -1)[..., 1]}
    calls = (lambda p: torch.bernoulli(p),
             lambda p: torch.empty(p.shape, dtype=p.dtype, device=p.device).bernoulli_(p),
             lambda p: torch.empty(4, 2, 3, dtype=torch.float32, device=p.device).bernoulli_(p),  # broadcast
             lambda p: torch.bernoulli(p, out=torch.empty(p.shape, dtype=p.dtype, device=p.device)))
    for name, p in layouts.items():
        for fn in calls:
            with pytest.raises(RuntimeError, match=P_MESSAGE):
                fn(p)
            out = fn(p.to(VK))  # recorded, not yet checked
            with pytest.raises(RuntimeError, match=P_MESSAGE):
                torch.vk.synchronize()
            got = out.cpu().double()  # the error was reported once: the read succeeds
            assert ((got == 0) | (got == 1)).all(), (name, got)
            if bad > 1:  # as the comparison u < p defines it
                assert (got[..., 0, 2] == 1).all()
            elif not bad > 0:
                assert (got[..., 0, 2] == 0).all()
    # A CPU p on a vk self is checked too; the stream works afterwards.
    with pytest.raises(RuntimeError, match=P_MESSAGE):
        torch.empty(2, 3, device=VK).bernoulli_(values).cpu()
    good = torch.full((2, 3), 0.5, dtype=dtype, device=VK)
    assert torch.bernoulli(good).cpu().shape == (2, 3)


def test_bernoulli_tensor_p_edge_values_do_not_raise():
    p = torch.tensor([0.0, 1.0, -0.0, 0.5])
    got = torch.bernoulli(p.to(VK)).cpu()
    assert got[0] == 0 and got[1] == 1 and got[2] == 0
    assert torch.bernoulli(torch.empty(0, 3, device=VK)).shape == (0, 3)
    assert torch.bernoulli(torch.tensor(0.5, device=VK)).cpu().dim() == 0
    with pytest.raises(RuntimeError, match=P_MESSAGE):
        torch.bernoulli(torch.tensor(2.0, device=VK)).cpu()


# ---------------------------------------------------------------- random_ / randint

@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES + [torch.bool], ids=str)
def test_random_ranges(dtype):
    torch.manual_seed(11)
    x = torch.empty(N, device=VK, dtype=dtype)
    full = x.random_().cpu().double()
    if dtype == torch.bool:
        hi = 1
    elif dtype.is_floating_point:
        digits = {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24, torch.float64: 53}[dtype]
        hi = 2 ** digits  # the CPU's [0, 2^digits]
    else:
        hi = torch.iinfo(dtype).max
    assert full.min() >= 0 and full.max() <= hi and (full == full.round()).all()
    assert full.max() > hi / 2  # spans the range
    if dtype != torch.bool:
        a = x.random_(10).cpu().double()  # [0, 10)
        assert a.min() >= 0 and a.max() <= 9
        counts = torch.bincount(a.long(), minlength=10)
        assert chi_square(counts, torch.full((10,), N / 10)) < CHI2_999[9]
        lo = -5 if (dtype.is_floating_point or dtype.is_signed) else 3
        b = x.random_(lo, lo + 6).cpu().double()  # [lo, lo + 6)
        assert b.min() >= lo and b.max() <= lo + 5
        counts = torch.bincount((b - lo).long(), minlength=6)
        assert chi_square(counts, torch.full((6,), N / 6)) < CHI2_999[5]
    else:
        counts = torch.bincount(full.long(), minlength=2)
        assert chi_square(counts, torch.full((2,), N / 2)) < CHI2_999[1]


def test_random_64bit_ranges():
    torch.manual_seed(12)
    big = torch.empty(5000, device=VK, dtype=torch.int64).random_(-2 ** 40, 2 ** 40).cpu()
    assert big.min() >= -2 ** 40 and big.max() < 2 ** 40
    assert big.double().abs().mean() > 2 ** 38  # spread over the range
    full = torch.empty(5000, device=VK, dtype=torch.int64).random_(-2 ** 63, None).cpu()
    assert (full < 0).any() and (full > 0).any() and full.double().abs().mean() > 2 ** 61
    frm = torch.empty(5000, device=VK, dtype=torch.int8).random_(100, None).cpu()
    assert frm.min() >= 100 and frm.max() <= 127


def test_randint():
    torch.manual_seed(13)
    for dtype in (torch.int64, torch.int32, torch.int16, torch.float32):
        x = torch.randint(-3, 4, (N,), device=VK, dtype=dtype)
        assert x.dtype == dtype and x.device.type == "vk"
        c = x.cpu().long()
        assert c.min() == -3 and c.max() == 3
        counts = torch.bincount(c + 3, minlength=7)
        assert chi_square(counts, torch.full((7,), N / 7)) < 22.46
    assert torch.randint(5, (3, 4), device=VK).shape == (3, 4)


def test_random_errors():
    check(lambda t: t.random_(5, 5), torch.empty(3, dtype=torch.int64))
    check(lambda t: t.random_(5, 2), torch.empty(3, dtype=torch.int64))
    check(lambda t: t.random_(0, 300), torch.empty(3, dtype=torch.uint8))
    check(lambda t: t.random_(-1, 3), torch.empty(3, dtype=torch.uint8))
    check(lambda t: torch.randint(3, 3, (4,), device=t.device), torch.empty(1))


# ---------------------------------------------------------------- other distributions

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_exponential_geometric_log_normal_cauchy(dtype):
    torch.manual_seed(14)
    q = 2 * QUANTUM[dtype]
    e = torch.empty(N, device=VK, dtype=dtype).exponential_(2.0).cpu().double()
    assert e.min() > 0 and abs(e.mean().item() - 0.5) < 4 * 0.5 / math.sqrt(N)
    assert ks_statistic(e, lambda t: 1 - torch.exp(-2 * t)) < ks_bound(N, q)
    g = torch.empty(N, device=VK, dtype=dtype).geometric_(0.25).cpu().double()
    assert g.min() >= 1 and (g == g.round()).all()
    assert abs(g.mean().item() - 4) < 4 * math.sqrt(0.75 / 0.25 ** 2 / N)
    counts = torch.bincount(g.long().clamp(max=6))[1:7]  # P(k) = 0.75^(k-1) 0.25, tail in 6
    probs = torch.tensor([0.75 ** (k - 1) * 0.25 for k in range(1, 6)] + [0.75 ** 5])
    assert chi_square(counts, probs * N) < CHI2_999[5]
    ln = torch.empty(N, device=VK, dtype=dtype).log_normal_(0.5, 0.25).cpu().double()
    assert ln.min() > 0
    assert ks_statistic(ln.log(), lambda t: normal_cdf(t, 0.5, 0.25)) < ks_bound(N, 4 * q)
    c = torch.empty(N, device=VK, dtype=dtype).cauchy_(1.0, 2.0).cpu().double()
    assert ks_statistic(c, lambda t: 0.5 + torch.atan((t - 1) / 2) / math.pi) < ks_bound(N, 4 * q)


def test_geometric_integer_dtypes_and_errors():
    torch.manual_seed(15)
    g = torch.empty(5000, device=VK, dtype=torch.int32).geometric_(0.5).cpu()
    assert g.min() >= 1 and abs(g.double().mean().item() - 2) < 0.1
    check(lambda t: t.geometric_(0.0), torch.empty(3))
    check(lambda t: t.geometric_(0.5), torch.empty(3, dtype=torch.bool))
    check(lambda t: t.exponential_(0.0), torch.empty(3))
    check(lambda t: t.exponential_(1.0), torch.empty(3, dtype=torch.int64))
    check(lambda t: t.log_normal_(0.0, 0.0), torch.empty(3))
    check(lambda t: t.log_normal_(), torch.empty(3, dtype=torch.int64))
    check(lambda t: t.cauchy_(0.0, -1.0), torch.empty(3))
    check(lambda t: t.cauchy_(), torch.empty(3, dtype=torch.int64))


# ---------------------------------------------------------------- randperm

@pytest.mark.parametrize("n", [0, 1, 2, 5, 100, 513, 3000])
def test_randperm_is_a_permutation(n):
    torch.manual_seed(16)
    p = torch.randperm(n, device=VK)
    assert p.device.type == "vk" and p.dtype == torch.int64 and p.shape == (n,)
    assert torch.equal(p.cpu().sort().values, torch.arange(n))
    if n >= 100:
        # Rank correlation between position and value near 0; few fixed points.
        x = torch.arange(n, dtype=torch.float64)
        r = torch.corrcoef(torch.stack([x, p.cpu().double()]))[0, 1].item()
        assert abs(r) < 4 / math.sqrt(n)
        assert (p.cpu() == torch.arange(n)).sum() < 8


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8, torch.float32, torch.float16,
                                   torch.bfloat16, torch.float64], ids=str)
def test_randperm_dtypes(dtype):
    n = 200
    p = torch.randperm(n, device=VK, dtype=dtype)
    assert p.dtype == dtype
    assert torch.equal(p.cpu().double().sort().values, torch.arange(n, dtype=torch.float64))
    out = torch.empty(7, device=VK, dtype=dtype)
    torch.randperm(n, out=out)
    assert out.shape == (n,) and torch.equal(out.cpu().double().sort().values, torch.arange(n).double())


def test_randperm_uniform_over_permutations():
    torch.manual_seed(17)
    g = torch.Generator(device=VK).manual_seed(17)
    perms = torch.stack([torch.randperm(4, device=VK, generator=g).cpu() for _ in range(480)])
    codes = perms[:, 0] * 64 + perms[:, 1] * 16 + perms[:, 2] * 4 + perms[:, 3]
    _, counts = torch.unique(codes, return_counts=True)
    assert counts.numel() == 24
    assert chi_square(counts, torch.full((24,), 480 / 24)) < CHI2_999[23]
    # reproducible from the seed
    g.manual_seed(3)
    a = torch.randperm(1000, device=VK, generator=g).cpu()
    g.manual_seed(3)
    assert torch.equal(torch.randperm(1000, device=VK, generator=g).cpu(), a)


def test_randperm_errors():
    check(lambda t: torch.randperm(-1, device=t.device), torch.empty(1))
    check(lambda t: torch.randperm(3000, dtype=torch.float16, device=t.device), torch.empty(1))


# ---------------------------------------------------------------- multinomial

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_multinomial_with_replacement(dtype):
    torch.manual_seed(18)
    probs = torch.tensor([0.1, 0.0, 0.4, 0.2, 0.3], dtype=dtype)
    s = torch.multinomial(probs.to(VK), N, replacement=True)
    assert s.dtype == torch.int64 and s.shape == (N,) and s.device.type == "vk"
    counts = torch.bincount(s.cpu(), minlength=5)
    assert counts[1] == 0
    keep = torch.tensor([0, 2, 3, 4])
    expected = probs.double()[keep] / probs.double().sum() * N  # the dtype's rounded weights
    assert chi_square(counts[keep], expected) < CHI2_999[3]
    # 2-D, unnormalized weights, per row
    w = torch.tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 5.0]], dtype=dtype)
    s2 = torch.multinomial(w.to(VK), 4000, replacement=True).cpu()
    assert s2.shape == (2, 4000) and (s2[1] == 2).all() and (s2[0] != 2).all()
    assert abs((s2[0] == 1).double().mean().item() - 0.75) < 4 * math.sqrt(0.75 * 0.25 / 4000)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_multinomial_without_replacement(dtype):
    torch.manual_seed(19)
    probs = torch.tensor([0.5, 0.0, 0.25, 0.125, 0.125, 0.0], dtype=dtype)
    rows = probs.repeat(3000, 1).to(VK)
    s = torch.multinomial(rows, 4, replacement=False).cpu()
    assert s.shape == (3000, 4)
    assert (s.sort(1).values[:, 1:] != s.sort(1).values[:, :-1]).all()  # distinct per row
    assert not ((s == 1) | (s == 5)).any()                             # zero probability never
    assert torch.equal(s.sort(1).values[0], torch.tensor([0, 2, 3, 4]))
    # The first draw follows the probabilities; the second its conditional law.
    counts = torch.bincount(s[:, 0], minlength=6)[[0, 2, 3, 4]]
    assert chi_square(counts, torch.tensor([0.5, 0.25, 0.125, 0.125]) * 3000) < CHI2_999[3]
    one = torch.multinomial(probs.to(VK), 1)
    assert one.shape == (1,) and one.item() in (0, 2, 3, 4)
    # many categories (several sort blocks)
    w = torch.rand(2, 1500) + 0.01
    w[:, ::3] = 0
    big = torch.multinomial(w.to(dtype).to(VK), 1000).cpu()
    assert all(row.unique().numel() == 1000 for row in big)
    assert not (big % 3 == 0).any()


def test_multinomial_out_and_generator():
    g = torch.Generator(device=VK).manual_seed(5)
    p = torch.rand(3, 50, device=VK)
    a = torch.multinomial(p, 20, generator=g).cpu()
    g.manual_seed(5)
    out = torch.empty(1, device=VK, dtype=torch.int64)
    torch.multinomial(p, 20, generator=g, out=out)
    assert torch.equal(out.cpu(), a)


def test_multinomial_errors():
    check(lambda p: torch.multinomial(p, 1), torch.tensor([1.0, -1.0]))
    check(lambda p: torch.multinomial(p, 1, True), torch.tensor([1.0, -1.0]))
    check(lambda p: torch.multinomial(p, 1), torch.tensor([1.0, float("nan")]))
    check(lambda p: torch.multinomial(p, 1), torch.tensor([1.0, float("inf")]))
    check(lambda p: torch.multinomial(p, 1, True), torch.tensor([0.0, 0.0]))
    check(lambda p: torch.multinomial(p, 1), torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
    check(lambda p: torch.multinomial(p, 3), torch.tensor([1.0, 1.0]))
    check(lambda p: torch.multinomial(p, 0), torch.tensor([1.0, 1.0]))
    check(lambda p: torch.multinomial(p, 1), torch.ones(2, 2, 2))
    check(lambda p: torch.multinomial(p, 1), torch.tensor([1, 2]))


# ---------------------------------------------------------------- dropout

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_dropout_train_and_backward(dtype):
    torch.manual_seed(20)
    p = 0.3
    x = (torch.rand(100, 120, dtype=dtype) + 0.5).to(VK).requires_grad_()
    y = F.dropout(x, p, training=True)
    yc, xc = y.detach().cpu().double(), x.detach().cpu().double()
    kept = yc != 0
    assert abs((~kept).double().mean().item() - p) < 4 * math.sqrt(p * (1 - p) / yc.numel())
    ref = (xc * (1 / (1 - p))).to(dtype).double()
    assert torch.allclose(yc[kept], ref[kept], rtol=1e-2 if dtype != torch.float32 else 1e-6)
    g = torch.rand(100, 120, dtype=dtype).to(VK) + 1
    (gx,) = torch.autograd.grad(y, x, g)
    gxc = gx.cpu().double()
    assert torch.equal(gxc != 0, kept)  # the backward uses the same mask
    gref = (g.cpu().double() * (1 / (1 - p))).to(dtype).double()
    assert torch.allclose(gxc[kept], gref[kept], rtol=1e-2 if dtype != torch.float32 else 1e-6)
    # nn.Dropout in train and eval mode
    m = torch.nn.Dropout(0.5)
    z = m(x.detach())
    assert ((z.cpu() == 0).double().mean() - 0.5).abs() < 0.05
    m.eval()
    assert torch.equal(m(x.detach()).cpu(), x.detach().cpu())


def test_native_dropout_ops():
    torch.manual_seed(21)
    x = torch.randn(50, 40, device=VK)
    out, mask = torch.native_dropout(x, 0.25, True)
    assert mask.dtype == torch.bool and out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), torch.where(mask.cpu(), x.cpu() / 0.75, torch.zeros(())))
    grad = torch.ops.aten.native_dropout_backward(torch.ones_like(x), mask, 4.0)
    assert torch.equal(grad.cpu(), mask.cpu().float() * 4)
    ev, evm = torch.native_dropout(x, 0.25, False)
    assert torch.equal(ev.cpu(), x.cpu()) and evm.cpu().all()
    # p = 0 keeps all, p = 1 drops all
    assert torch.equal(F.dropout(x, 0.0, True).cpu(), x.cpu())
    assert (F.dropout(x, 1.0, True).cpu() == 0).all()
    # non-contiguous input and empty input
    xt = x.t()
    o2, m2 = torch.native_dropout(xt, 0.5, True)
    torch.testing.assert_close(o2.cpu(), torch.where(m2.cpu(), xt.cpu() * 2, torch.zeros(())))
    e, em = torch.native_dropout(torch.empty(0, 3, device=VK), 0.5, True)
    assert e.shape == (0, 3) and em.shape == (0, 3)
    # feature dropout (dropout2d) goes through bernoulli_
    d2 = F.dropout2d(torch.ones(4, 8, 3, 3, device=VK), 0.5, True).cpu()
    per_channel = d2.view(32, 9)
    assert ((per_channel == 0).all(1) | (per_channel == 2).all(1)).all()


def test_dropout_errors():
    check(lambda t: F.dropout(t, 1.5, True), torch.ones(3))
    check(lambda t: F.dropout(t, -0.5, True), torch.ones(3))
    check(lambda t: torch.native_dropout(t, 1.5, True), torch.ones(3))
    check(lambda t: torch.native_dropout(t, 0.5, True), torch.ones(3, dtype=torch.int64))


# ---------------------------------------------------------------- reproducibility of training draws

def draw_everything():
    """One of each random op a training step uses, returned as CPU tensors."""
    x = torch.ones(64, 32, device=VK)
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4], device=VK)
    return [
        torch.rand(300, device=VK),
        torch.randn(300, device=VK),
        torch.randint(0, 1000, (300,), device=VK),
        F.dropout(x, 0.3, training=True),
        torch.nn.Dropout(0.5)(x),
        torch.bernoulli(torch.full((300,), 0.4, device=VK)),
        torch.empty(300, device=VK).bernoulli_(0.7),
        torch.multinomial(probs, 200, replacement=True),
        torch.multinomial(probs.expand(5, 4), 3, replacement=False),
        torch.randperm(200, device=VK),
        torch.empty(300, device=VK).exponential_(),
        torch.rand_like(x),
    ]


def assert_same_draws(first, second):
    assert len(first) == len(second)
    for i, (a, b) in enumerate(zip(first, second)):
        assert a.device.type == "vk" and b.device.type == "vk"
        assert torch.equal(a.cpu(), b.cpu()), f"draw {i} differs"


def test_manual_seed_reproduces_every_training_draw():
    torch.manual_seed(2024)
    first = draw_everything()
    torch.manual_seed(2024)
    second = draw_everything()
    assert_same_draws(first, second)
    assert torch.vk.initial_seed() == 2024
    # Draws advance the stream: a second round is different from the first.
    third = draw_everything()
    assert not torch.equal(third[0].cpu(), first[0].cpu())
    assert not torch.equal(third[3].cpu(), first[3].cpu())
    # torch.vk.manual_seed_all seeds the vk generator like torch.manual_seed does.
    torch.vk.manual_seed_all(2024)
    assert_same_draws(draw_everything(), first)


def test_rng_state_restores_every_training_draw():
    torch.manual_seed(31)
    torch.rand(17, device=VK)  # some position in the middle of the stream
    state = torch.vk.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    first = draw_everything()
    torch.vk.set_rng_state(state)
    assert_same_draws(draw_everything(), first)
    # get_rng_state returns a copy: drawing does not change a state taken earlier.
    again = state.clone()
    draw_everything()
    assert torch.equal(state, again)


def test_rng_state_all_round_trip():
    torch.manual_seed(41)
    states = torch.vk.get_rng_state_all()
    assert len(states) == torch.vk.device_count()
    assert torch.equal(states[0], torch.vk.get_rng_state())
    first = draw_everything()
    torch.manual_seed(999)  # move somewhere else entirely
    torch.vk.set_rng_state_all(states)
    assert_same_draws(draw_everything(), first)


def test_set_rng_state_from_another_seed():
    torch.manual_seed(51)
    state_51 = torch.vk.get_rng_state()
    expected = torch.randn(200, device=VK).cpu()
    torch.manual_seed(52)
    torch.randn(1000, device=VK)
    torch.vk.set_rng_state(state_51, device="vk:0")
    assert torch.equal(torch.randn(200, device=VK).cpu(), expected)


def test_fork_rng_restores_vk_stream_for_listed_devices():
    torch.manual_seed(61)
    expected = draw_everything()
    torch.manual_seed(61)
    with torch.random.fork_rng(devices=[0], device_type="vk"):
        draw_everything()
        torch.vk.manual_seed(3)
        draw_everything()
    assert_same_draws(draw_everything(), expected)
    # With fork_rng disabled the stream is not restored.
    torch.manual_seed(61)
    with torch.random.fork_rng(device_type="vk", enabled=False):
        torch.rand(10, device=VK)
    assert not torch.equal(torch.rand(300, device=VK).cpu(), expected[0].cpu())


def test_generator_draws_leave_default_stream_alone():
    torch.manual_seed(71)
    expected = torch.rand(300, device=VK).cpu()
    torch.manual_seed(71)
    g = torch.Generator(device=VK).manual_seed(71)
    assert g.device.type == "vk" and g.initial_seed() == 71
    from_generator = [torch.rand(300, device=VK, generator=g),
                      torch.randn(300, device=VK, generator=g),
                      torch.randint(0, 10, (300,), device=VK, generator=g),
                      torch.randperm(100, device=VK, generator=g),
                      torch.multinomial(torch.ones(6, device=VK), 50, True, generator=g),
                      torch.empty(300, device=VK).bernoulli_(0.5, generator=g)]
    # The default generator did not move while g drew.
    assert torch.equal(torch.rand(300, device=VK).cpu(), expected)
    # A generator with the same seed as the default generator gives the default's numbers.
    assert torch.equal(from_generator[0].cpu(), expected)
    # Reseeding g replays its own stream.
    g.manual_seed(71)
    assert torch.equal(torch.rand(300, device=VK, generator=g).cpu(), expected)
    assert torch.equal(torch.randn(300, device=VK, generator=g).cpu(), from_generator[1].cpu())


def test_cpu_and_vk_generators_are_separate():
    # torch.manual_seed seeds both; drawing on one device does not move the other.
    torch.manual_seed(81)
    cpu_expected = torch.rand(100)
    vk_expected = torch.rand(100, device=VK).cpu()
    torch.manual_seed(81)
    torch.rand(1000, device=VK)
    assert torch.equal(torch.rand(100), cpu_expected)
    torch.manual_seed(81)
    torch.rand(1000)
    assert torch.equal(torch.rand(100, device=VK).cpu(), vk_expected)


# ---------------------------------------------------------------- large-sample moments

def test_moments_with_many_samples():
    # 1e5 samples each; bounds are 5 standard errors of the statistic.
    n = 100_000
    torch.manual_seed(91)
    u = torch.rand(n, device=VK).cpu().double()
    assert abs(u.mean().item() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(u.var().item() - 1 / 12) < 5 * math.sqrt(1 / 180 / n)  # Var((U - 1/2)^2) = 1/180
    z = torch.randn(n, device=VK).cpu().double()
    assert abs(z.mean().item()) < 5 / math.sqrt(n)
    assert abs(z.std().item() - 1) < 5 / math.sqrt(2 * n)
    assert abs((z ** 3).mean().item()) < 5 * math.sqrt(15 / n)      # no skew
    assert abs((z ** 4).mean().item() - 3) < 5 * math.sqrt(96 / n)  # normal kurtosis
    b = torch.empty(n, device=VK).bernoulli_(0.2).cpu().double()
    assert abs(b.mean().item() - 0.2) < 5 * math.sqrt(0.2 * 0.8 / n)
    e = torch.empty(n, device=VK).exponential_(0.5).cpu().double()  # mean 2, sd 2
    assert abs(e.mean().item() - 2) < 5 * 2 / math.sqrt(n)
    r = torch.randint(0, 50, (n,), device=VK).cpu()
    assert r.min() == 0 and r.max() == 49
    counts = torch.bincount(r, minlength=50)
    assert chi_square(counts, torch.full((50,), n / 50)) < 85.35  # 0.1% point, 49 d.o.f.
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0])
    m = torch.multinomial(weights.to(VK), n, replacement=True).cpu()
    counts = torch.bincount(m, minlength=4)
    assert chi_square(counts, weights / weights.sum() * n) < CHI2_999[3]
