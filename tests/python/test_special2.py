"""Bessel, normal-distribution and other special functions (shaders/special.glsl,
src/aten/ops_special.cpp) against PyTorch's CPU kernels."""
import pytest
import torch

from helpers import check, layouts, make

ALL_FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
FLOAT_DOUBLE = [torch.float32, torch.float64]
INTS = [torch.int64, torch.int32, torch.uint8, torch.bool]
EDGES = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0]

# name -> (function, dtypes the CPU dispatches, input range, extra points for that op)
UNARY = {
    "i0": (torch.i0, ALL_FLOATS, (-12, 12), [8.0, -8.0, 8.5, 30.0, 80.0]),
    "i0e": (torch.special.i0e, ALL_FLOATS, (-12, 12), [8.0, 8.5, 100.0, 1e4]),
    "i1": (torch.special.i1, ALL_FLOATS, (-12, 12), [8.0, -8.0, 8.5, 30.0, 80.0]),
    "i1e": (torch.special.i1e, ALL_FLOATS, (-12, 12), [8.0, -8.5, 100.0, 1e4]),
    "ndtri": (torch.special.ndtri, FLOAT_DOUBLE, (0, 1), [0.5, 0.1, 0.9, 1e-3, 1e-20, 1 - 1e-7, 1.5, -0.2]),
    "log_ndtr": (torch.special.log_ndtr, FLOAT_DOUBLE, (-6, 6), [-1.0, -1.5, -20.0, -30.0, 5.0, 12.0]),
    "erfcx": (torch.special.erfcx, FLOAT_DOUBLE, (-5, 8), [1e-9, 0.03, 49.0, 51.0, 1e8, -6.0, -6.2, -26.0, -27.0]),
}


def _input(name, dtype, shape=(4, 8)):
    _, _, (low, high), extra = UNARY[name]
    x = make(shape, dtype, low=low, high=high, seed=11)
    points = torch.tensor(EDGES + extra, dtype=torch.float64).to(dtype)
    x.view(-1)[: points.numel()] = points
    return x


@pytest.mark.parametrize("dtype", ALL_FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype, strict_native):
    fn, dtypes, _, _ = UNARY[name]
    if dtype not in dtypes:  # the CPU's "not implemented for 'Half'" error
        with pytest.raises(NotImplementedError):
            fn(make((3,), dtype).to("vk"))
        return
    x = _input(name, dtype)
    check(fn, x)
    check(fn, make((), dtype, low=0.1, high=0.9))
    check(fn, make((0, 3), dtype))
    for _, layout in layouts(x):
        check(lambda t: fn(layout(t)), x)
    check(lambda t: fn(t, out=torch.empty_like(t)), x)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_promotes_integers(name, dtype, strict_native):
    fn = UNARY[name][0]
    check(fn, make((9,), dtype, low=-1, high=1, seed=2))


def test_i0_inplace(strict_native):
    x = make((5,), torch.float32, low=-9, high=9)
    check(lambda t: t.i0_(), x)
    check(lambda t: t.i0_(), make((5,), torch.int64))  # CPU: result type Float can't be cast to Long


GRADS = {
    "i0": torch.i0,
    "i0e": torch.special.i0e,
    "i1": torch.special.i1,
    "i1e": torch.special.i1e,
    "ndtri": torch.special.ndtri,
    "log_ndtr": torch.special.log_ndtr,
    "erfcx": torch.special.erfcx,
}


@pytest.mark.parametrize("dtype", FLOAT_DOUBLE)
@pytest.mark.parametrize("name", sorted(GRADS))
def test_unary_backward(name, dtype, strict_native):
    fn = GRADS[name]
    low, high = (0.05, 0.95) if name == "ndtri" else (-4, 4)
    x = make((3, 5), dtype, low=low, high=high, seed=5)

    def grad(t):
        t = t.clone().requires_grad_()
        fn(t).sum().backward()
        return t.grad
    check(grad, x)
