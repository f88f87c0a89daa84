"""Special functions and NaN-aware binary ops (src/aten/ops_special.cpp) against the CPU."""
import pytest
import torch
import torch.nn.functional as F

from helpers import check, layouts, make

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
SPECIAL = torch.tensor([0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 0.5, 1e-3])


def with_specials(x):
    flat = x.flatten().clone()
    n = min(flat.numel(), SPECIAL.numel())
    flat[:n] = SPECIAL[:n].to(flat.dtype)
    return flat.view(x.shape)


BINARY = {
    "logaddexp": torch.logaddexp,
    "logaddexp2": torch.logaddexp2,
    "xlogy": torch.xlogy,
    "xlog1py": torch.special.xlog1py,
    "fmax": torch.fmax,
    "fmin": torch.fmin,
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float(name, dtype, strict_native):
    fn = BINARY[name]
    a = with_specials(make((4, 6), dtype, seed=1))
    b = make((4, 6), dtype, low=-2, high=4, seed=2)
    check(fn, a, b)
    check(fn, b, a)
    check(fn, a, b[0])  # broadcast
    check(fn, make((), dtype), b)  # 0-dim
    check(fn, make((0, 6), dtype), b[:1])  # empty
    for _, layout in layouts(a):
        check(lambda x, y: fn(layout(x), y), a, b)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_binary_float_promotes_integers(name, strict_native):
    fn = BINARY[name]
    check(fn, make((5,), torch.int64), make((5,), torch.int32, low=0, high=3))
    check(fn, make((5,), torch.int64), 2.5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
@pytest.mark.parametrize("name", ["fmax", "fmin", "logaddexp"])
def test_binary_integers(name, dtype, strict_native):
    check(BINARY[name], make((7,), dtype, seed=3), make((7,), dtype, seed=4))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32, torch.bool])
def test_heaviside(dtype, strict_native):
    x = make((3, 5), dtype)
    if dtype.is_floating_point:
        x = with_specials(x)
    v = make((5,), dtype, seed=7)
    check(torch.heaviside, x, v)
    check(lambda a, b: a.heaviside_(b), x.clone(), v)
    check(torch.heaviside, x, make((5,), torch.float64 if dtype != torch.float64 else torch.float32))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["sinc", "entr"])
def test_unary(name, dtype, strict_native):
    fn = torch.sinc if name == "sinc" else torch.special.entr
    x = with_specials(make((3, 7), dtype, low=-4, high=4))
    check(fn, x)
    check(fn, make((), dtype))
    check(fn, make((0, 2), dtype))
    check(fn, make((6,), torch.int64))  # promotes to float
    for _, layout in layouts(x):
        check(lambda t: fn(layout(t)), x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("eps", [None, 0.0, 0.1])
def test_logit_and_backward(dtype, eps, strict_native):
    x = make((4, 5), dtype, low=-0.2, high=1.2)
    x.view(-1)[:3] = torch.tensor([0.0, 1.0, 0.5], dtype=dtype)
    check(lambda t: torch.logit(t, eps), x)
    check(lambda t: t.logit_(eps), x.clone())
    if dtype in (torch.float32, torch.float64):
        def grad(t):
            t = t.clone().requires_grad_()
            torch.logit(t, eps).sum().backward()
            return t.grad
        check(grad, x)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_polygamma(n, dtype, strict_native):
    x = make((20,), dtype, low=-3.5, high=6)
    x[:4] = torch.tensor([1.0, 0.25, 10.0, 30.0], dtype=dtype)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-10, rtol=1e-10)
    check(lambda t: torch.polygamma(n, t), x, **tol)


def test_polygamma_negative_n_raises():
    with pytest.raises(RuntimeError, match="negative n"):
        torch.polygamma(-1, torch.ones(2, device="vk"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_zeta(dtype, strict_native):
    x = make((12,), dtype, low=1.0, high=6.0)
    q = make((12,), dtype, low=0.2, high=5.0, seed=5)
    x[0], q[1], q[2] = 1.0, 0.0, -2.0
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else None
    check(torch.special.zeta, x, q, **(tol or {}))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_rsub(dtype, strict_native):
    a = make((3, 4), dtype)
    check(lambda t: 1 - t, a)
    check(lambda t, u: torch.rsub(t, u, alpha=2), a, make((4,), dtype))
    check(lambda t: torch.rsub(t, 3), make((3,), torch.int64))
    check(lambda t, u: torch.rsub(t, u), make((3,), torch.bool), make((3,), torch.bool))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_prelu_forward_backward(dtype, strict_native):
    x = make((2, 3, 4), dtype)
    for w in (make((1,), dtype, low=0, high=1), make((3,), dtype, low=0, high=1, seed=9)):
        check(F.prelu, x, w)

        def grads(t, weight):
            t = t.clone().requires_grad_()
            weight = weight.clone().requires_grad_()
            F.prelu(t, weight).sum().backward()
            return t.grad, weight.grad
        if dtype != torch.float16:
            check(grads, x, w)
