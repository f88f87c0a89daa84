"""Ops along one dim against PyTorch's CPU: softmax / log_softmax (forward, backward, autograd),
logsumexp, and the scans cumprod / cumsum."""
import pytest
import torch

import torch_vk
from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
FUNCS = {"softmax": torch.softmax, "log_softmax": torch.log_softmax}
BACKWARD = {"softmax": torch.ops.aten._softmax_backward_data,
            "log_softmax": torch.ops.aten._log_softmax_backward_data}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_forward_dims_layouts(name, dtype):
    fn = FUNCS[name]
    x = make((3, 4, 5), dtype, low=-6, high=6)
    for _, layout in layouts(x):
        for dim in (0, 1, 2, -1, -3):
            check(lambda a: fn(layout(a), dim), x)
    for shape, dim in (((2, 700), 1), ((700, 3), 0), ((40, 9), 1), ((3, 300, 4), 1), ((5,), 0)):
        check(lambda a: fn(a, dim), make(shape, dtype, low=-10, high=10))


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_forward_special_values_and_edges(name):
    fn = FUNCS[name]
    inf, nan = float("inf"), float("nan")
    rows = torch.tensor([[-inf, 1.0, 2.0, 0.5], [-inf, -inf, -inf, -inf], [inf, 1.0, 0.0, -1.0],
                         [nan, 1.0, 2.0, 3.0], [1e30, -1e30, 1e30, 0.0], [inf, inf, 1.0, 2.0],
                         [88.0, 89.0, -100.0, 0.0]])
    check(lambda a: fn(a, 1), rows)
    check(lambda a: fn(a, 0), rows)
    check(lambda a: fn(a, 1), rows.repeat(1, 100))      # workgroup-per-row path
    check(lambda a: fn(a, 0), make((), torch.float32))  # 0-dim: 1 / 0
    check(lambda a: fn(a, -1), make((), torch.float32))
    check(lambda a: fn(a, 0), torch.empty(0, 3))
    check(lambda a: fn(a, 1), torch.empty(0, 3))
    check(lambda a: fn(a, 1), torch.empty(3, 0))
    check(lambda a: fn(a, 2), make((3, 4), torch.float32))                 # error: dim
    check(lambda a: fn(a, 0), make((3, 4), torch.int64))                   # error: integer
    check(lambda a: fn(a, 1, dtype=torch.float32), make((3, 4), torch.int64))
    check(lambda a: fn(a, 1, dtype=torch.float32), make((3, 40), torch.float16))
    check(lambda a: fn(a.expand(4, 6, 5), 1), make((4, 1, 5), torch.float32))  # broadcast input


def test_forward_out_and_half_to_float():
    x = make((4, 50), torch.float32)
    op = torch.ops.aten._softmax.out
    check(lambda a: op(a, 1, False, out=torch.empty(4, 50, device=a.device)), x)
    check(lambda a: torch.ops.aten._log_softmax.out(a, 0, False, out=torch.empty(0, device=a.device)), x)
    # A strided out= (compared with the math: the CPU kernel writes it as if contiguous).
    strided = torch.empty(50, 4, device="vk").t()
    op(x.to("vk"), 1, False, out=strided)
    torch.testing.assert_close(strided.cpu(), torch.softmax(x, 1))
    check(lambda a: op(a, 1, False, out=torch.empty(4, 50, dtype=torch.float16, device=a.device)), x)
    # half_to_float (what CUDA's softmax(dtype=float32) uses; the CPU refuses it): compare with
    # the CPU result of the float32 input.
    h = make((6, 70), torch.float16)
    for f, ref in ((torch.ops.aten._softmax, torch.softmax), (torch.ops.aten._log_softmax, torch.log_softmax)):
        got = f(h.to("vk"), 1, True)
        assert got.dtype == torch.float32
        torch.testing.assert_close(got.cpu(), ref(h.float(), 1), **TOLERANCE[torch.float32])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_autograd(name, dtype):
    fn = FUNCS[name]
    for shape, dim in (((3, 4, 5), 1), ((3, 4, 5), -1), ((2, 300), 1), ((300, 2), 0), ((), 0)):
        x = make(shape, dtype, low=-4, high=4)
        g = make(shape, dtype, seed=5)
        xc = x.clone().requires_grad_()
        xv = x.to("vk").requires_grad_()
        (gc,) = torch.autograd.grad(fn(xc, dim), xc, g)
        (gv,) = torch.autograd.grad(fn(xv, dim), xv, g.to("vk"))
        assert gv.device.type == "vk"
        if dtype == torch.float32:
            torch.testing.assert_close(gv.cpu(), gc, atol=1e-5, rtol=1e-4)
            continue
        # float16 / bfloat16: one-ulp differences of the rounded forward output are amplified
        # by the backward over long rows; require vk to be as close to the float64 gradient of
        # the same inputs as the CPU is.
        xd = x.double().requires_grad_()
        (gd,) = torch.autograd.grad(fn(xd, dim), xd, g.double())
        err_cpu = (gc.double() - gd).abs().max().item()
        err_vk = (gv.cpu().double() - gd).abs().max().item()
        assert err_vk <= 2 * err_cpu + TOLERANCE[dtype]["atol"], (err_vk, err_cpu)


@pytest.mark.parametrize("name", sorted(BACKWARD))
def test_backward_ops(name):
    fwd, bwd = FUNCS[name], BACKWARD[name]
    x = make((5, 6, 7), torch.float32)
    for dim in (0, 1, 2):
        y = fwd(x, dim)
        for _, layout in layouts(x):
            check(lambda g, o: bwd(layout(g), o, dim, torch.float32), make((5, 6, 7), torch.float32, seed=3), y)
    y = fwd(x, 1)
    check(lambda g, o: bwd(g.expand(5, 6, 7), o, 1, torch.float32), make((5, 1, 7), torch.float32), y)
    out = torch.ops.aten._softmax_backward_data.out if name == "softmax" else torch.ops.aten._log_softmax_backward_data.out
    check(lambda g, o: out(g, o, 1, torch.float32, grad_input=torch.empty(0, device=g.device)), x, y)
    h = x.half()
    check(lambda g, o: bwd(g, o, 2, torch.float16), h, fwd(h, 2))
    check(lambda g, o: bwd(g, o, 0, torch.float32), torch.empty(0, 3), torch.empty(0, 3))


# ---------------------------------------------------------------- logsumexp

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int64, torch.int32, torch.bool], ids=str)
def test_logsumexp(dtype):
    x = make((3, 4, 5), dtype, low=-20, high=20)
    for _, layout in layouts(x):
        for dim in (0, -1, (0, 2), (0, 1, 2)):
            for keepdim in (False, True):
                check(lambda a: torch.logsumexp(layout(a), dim, keepdim), x)


def test_logsumexp_special_edges_and_out():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[inf, 1.0], [-inf, -inf], [nan, 1.0], [-inf, 2.0], [100.0, 100.0], [1e38, 1e38]])
    check(lambda a: torch.logsumexp(a, 1), x)
    check(lambda a: torch.logsumexp(a, 0), x)
    check(lambda a: torch.logsumexp(a, 0), torch.empty(0, 3))      # -inf
    check(lambda a: torch.logsumexp(a, 1), torch.empty(0, 3))
    check(lambda a: torch.logsumexp(a, 0), make((), torch.float32))
    check(lambda a: torch.logsumexp(a, 2), make((3, 4), torch.float32))   # error: dim
    check(lambda a: torch.logsumexp(a, 0), torch.rand(100_000) * 50, atol=1e-4, rtol=1e-5)
    y = make((4, 5), torch.float32)
    check(lambda a: torch.logsumexp(a, 1, out=torch.empty(4, device=a.device)), y)
    check(lambda a: torch.logsumexp(a, 0, True, out=torch.empty(0, device=a.device)), y)
    check(lambda a: torch.logsumexp(a, 0, out=torch.empty(5, dtype=torch.int64, device=a.device)), y)  # error
    xv = y.to("vk").requires_grad_()
    xc = y.clone().requires_grad_()
    (gv,) = torch.autograd.grad(torch.logsumexp(xv, 1).sum(), xv)
    (gc,) = torch.autograd.grad(torch.logsumexp(xc, 1).sum(), xc)
    torch.testing.assert_close(gv.cpu(), gc)


# ---------------------------------------------------------------- cumprod / cumsum

SCANS = {"cumprod": torch.cumprod, "cumsum": torch.cumsum}


def scan_input(name, shape, dtype, seed=0):
    if name == "cumprod" and dtype.is_floating_point:
        return make(shape, dtype, low=0.6, high=1.5, seed=seed)   # products stay in range
    if name == "cumprod" and dtype != torch.bool:
        return make(shape, dtype, low=-0.2, high=0.2, seed=seed)  # -2..2
    return make(shape, dtype, seed=seed)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int32, torch.int64, torch.uint8, torch.bool], ids=str)
@pytest.mark.parametrize("name", ["cumprod", "cumsum"])
def test_scans(name, dtype):
    fn = SCANS[name]
    x = scan_input(name, (3, 4, 5), dtype)
    for _, layout in layouts(x):
        for dim in (0, 1, 2, -1):
            check(lambda a: fn(layout(a), dim), x)
    for shape, dim in (((2, 600), 1), ((300, 3), 0), ((2, 200, 3), 1)):
        check(lambda a: fn(a, dim), scan_input(name, shape, dtype, seed=1),
              **({} if dtype != torch.float32 else dict(atol=1e-4, rtol=1e-4)))


@pytest.mark.parametrize("name", ["cumprod", "cumsum"])
def test_scans_dtype_out_special_and_edges(name):
    fn = SCANS[name]
    x = scan_input(name, (4, 6), torch.float32)
    check(lambda a: fn(a, 1, dtype=torch.float16), x)
    check(lambda a: fn(a, 0, dtype=torch.int64), x * 3)         # the input is cast first
    check(lambda a: fn(a, 1, dtype=torch.float32), scan_input(name, (4, 6), torch.int32))
    check(lambda a: fn(a, 1, out=torch.empty(4, 6, device=a.device)), x)
    check(lambda a: fn(a, 0, out=torch.empty(0, device=a.device)), x)
    check(lambda a: fn(a, 1, out=torch.empty(6, 4, device=a.device).t()), x)   # strided out
    check(lambda a: fn(a, 1, out=torch.empty(4, 6, dtype=torch.int64, device=a.device)), x)  # error
    check(lambda a: fn(a.clone(), 1), x)
    inf, nan = float("inf"), float("nan")
    check(lambda a: fn(a, 1), torch.tensor([[1.0, nan, 2.0, 3.0], [inf, 0.0, 2.0, -inf], [0.0, 5.0, inf, 1.0]]))
    check(lambda a: fn(a, 0), make((), torch.float32))
    check(lambda a: fn(a, 0), torch.empty(0, 3))
    check(lambda a: fn(a, 1), torch.empty(3, 0))
    check(lambda a: fn(a, 2), x)                                  # error: dim out of range
    y = make((3, 5), torch.float32, low=0.5, high=1.5)
    yc, yv = y.clone().requires_grad_(), y.to("vk").requires_grad_()
    (gc,) = torch.autograd.grad(fn(yc, 1).sum(), yc)
    torch_vk.set_fallback_mode("silent")   # the backward formula uses other ops (flip, ...)
    (gv,) = torch.autograd.grad(fn(yv, 1).sum(), yv)   # (strict_native restores the mode)
    torch.testing.assert_close(gv.cpu(), gc)
