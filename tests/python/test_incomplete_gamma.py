"""igamma / igammac (torch.special.gammainc / gammaincc) against PyTorch's CPU: every method
of the Cephes algorithm (series, continued fraction, igammac series, asymptotic expansion for
large a), boundary values, dtypes, broadcasting, layouts, out= / in-place, autograd."""
import pytest
import torch

from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

FUNCS = {"igamma": torch.igamma, "igammac": torch.igammac,
         "gammainc": torch.special.gammainc, "gammaincc": torch.special.gammaincc}
INF, NAN = float("inf"), float("nan")
# Small, ~1, ~20 (asymptotic window 20 < a < 200), ~200, large, and the boundaries.
GRID = [0.0, 1e-30, 1e-6, 1e-3, 0.1, 0.3, 0.5, 0.75, 0.9, 1.0, 1.05, 1.1, 1.5, 2.0, 5.0, 10.0,
        19.0, 21.0, 25.0, 30.0, 50.0, 100.0, 150.0, 199.0, 201.0, 250.0, 1000.0, 1e4, 1e6, INF,
        NAN, -1.0, -INF]


def grid(dtype):
    g = torch.tensor(GRID, dtype=torch.float64).to(dtype)
    n = g.numel()
    return g[:, None].expand(n, n).contiguous(), g[None, :].expand(n, n).contiguous()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_grid_of_a_and_x(name, dtype):
    a, x = grid(dtype)
    tol = dict(atol=2e-6, rtol=2e-5) if dtype == torch.float32 else dict(atol=1e-13, rtol=1e-12)
    check(FUNCS[name], a, x, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_asymptotic_regime_and_ratios(dtype):
    # x ~ a with a in (20, 200) and a > 200: the uniform asymptotic expansion; just outside the
    # window: series / continued fraction on either side of the switch.
    a = torch.tensor([22.0, 40.0, 80.0, 120.0, 190.0, 300.0, 1e3, 5e3, 2e4], dtype=torch.float64)
    ratio = torch.tensor([0.5, 0.69, 0.71, 0.9, 0.99, 1.0, 1.01, 1.1, 1.29, 1.31, 2.0], dtype=torch.float64)
    aa = a[:, None].expand(-1, ratio.numel())
    xx = (a[:, None] * ratio[None, :])
    tol = dict(atol=5e-6, rtol=5e-5) if dtype == torch.float32 else dict(atol=1e-12, rtol=1e-11)
    for name in ("igamma", "igammac"):
        check(FUNCS[name], aa.to(dtype), xx.to(dtype), **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_random_values_dtypes_and_layouts(name, dtype):
    a = make((5, 6), dtype, low=0.0, high=30.0, seed=1)
    x = make((5, 6), dtype, low=0.0, high=30.0, seed=2)
    tol = {torch.float64: dict(atol=1e-12, rtol=1e-11)}.get(dtype)
    kw = tol or {}
    for _, layout in layouts(a):
        check(lambda p, q: FUNCS[name](layout(p), layout(q)), a, x, **kw)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_broadcast_scalars_empty_and_0dim(name):
    fn = FUNCS[name]
    check(fn, make((4, 1), torch.float32, 0.1, 10), make((1, 5), torch.float32, 0.1, 10))
    check(fn, make((3,), torch.float32, 0.1, 10), make((2, 3), torch.float64, 0.1, 10))  # promotion
    check(fn, make((), torch.float32, 0.1, 10), make((2, 3), torch.float32, 0.1, 10))
    check(fn, make((), torch.float64, 0.1, 10), make((), torch.float64, 0.1, 10))
    check(fn, make((0, 3), torch.float32), make((3,), torch.float32))
    check(fn, make((3,), torch.float16, 0.1, 10), make((3,), torch.bfloat16, 0.1, 10))
    check(lambda p: fn(p, torch.tensor(2.5)), make((4,), torch.float32, 0.1, 10))  # CPU scalar
    check(lambda p: fn(torch.tensor(2.5, dtype=torch.float64), p), make((4,), torch.float32, 0.1, 10))


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_out_and_inplace(name):
    fn = FUNCS[name]
    a, x = make((3, 4), torch.float32, 0.1, 8, seed=3), make((3, 4), torch.float32, 0.1, 8, seed=4)

    def with_out(p, q):
        out = torch.empty(0, dtype=p.dtype, device=p.device)
        r = fn(p, q, out=out)
        assert r is out
        return out

    check(with_out, a, x)
    # A float64 out= makes the device compute in float64 (the CPU: float32, then a cast), so
    # the results agree to float32 precision.
    f32 = dict(atol=1e-6, rtol=1e-5)
    check(lambda p, q: fn(p, q, out=torch.empty(3, 4, dtype=torch.float64, device=p.device)), a, x, **f32)
    check(lambda p, q: fn(p, q, out=torch.empty(3, 4, dtype=torch.float64, device=p.device)[:, :2]),
          a[:, :2], x[:, :2], **f32)
    check(lambda p, q: getattr(p.clone(), name + "_")(q), a, x)
    check(lambda p, q: getattr(p.clone().t(), name + "_")(q.t()), a, x)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_bad_inputs(name):
    fn = FUNCS[name]
    check(fn, torch.tensor([1, 2]), torch.tensor([1, 2]))  # integers: NotImplementedError
    check(fn, torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0, 3.0]))  # shapes: RuntimeError
    check(lambda p, q: getattr(p, name + "_")(q), torch.tensor([1.0]), torch.tensor([1.0, 2.0]))
    check(lambda p, q: fn(p, q, out=torch.empty(2, dtype=torch.int64, device=p.device)),
          torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_backward_wrt_x(name, dtype):
    fn = FUNCS[name]
    a = make((2, 3), dtype, 0.5, 6, seed=5)
    x = make((2, 3), dtype, 0.5, 6, seed=6)
    g = make((2, 3), dtype, seed=7)

    def grad(p, q, w):
        q = q.clone().requires_grad_()
        (fn(p, q) * w).sum().backward()
        return q.grad

    kw = dict(atol=1e-12, rtol=1e-10) if dtype == torch.float64 else {}
    check(grad, a, x, g, **kw)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_backward_wrt_a_not_implemented(name):
    fn = FUNCS[name]

    def grad(p, q):
        p = p.clone().requires_grad_()
        fn(p, q).sum().backward()
        return p.grad

    check(grad, make((3,), torch.float32, 0.5, 4), make((3,), torch.float32, 0.5, 4))
