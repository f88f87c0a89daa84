"""The multi-tensor reductions (src/aten/ops_foreach_reduce.cpp, shaders/foreach_reduce.comp)
against the CPU: _foreach_norm for every order and the dtype argument, _foreach_powsum,
_foreach_max; two dispatches per call on the fast route whatever the number of tensors; the
per-tensor composites for layouts and dtypes the fast route does not take; PyTorch's errors;
clip_grad_norm_ / clip_grad_value_ in a handful of dispatches."""
import math

import pytest
import torch
from helpers import dispatch_count, same_error_by_device


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INF = float("inf")
# A 0-dim tensor, an empty one, small ones, and ones of several 2048-element chunks.
SHAPES = [(), (0,), (5,), (3, 7), (2, 3, 4), (4100,), (9000,)]
ORDS = [2, 1, 0, INF, -INF, 3, 0.5, -1.5]


def make_list(dtype, seed, shapes=SHAPES, zeros=True):
    g = torch.Generator().manual_seed(seed)
    out = []
    for shape in shapes:
        t = torch.randn(shape, generator=g, dtype=torch.float64)
        if zeros and t.numel() > 2:
            t.view(-1)[::3] = 0  # exercises the order-0 count and negative orders
        out.append(t.to(dtype))
    return out


def to_vk(tensors):
    return [t.to("vk") for t in tensors]


def tol(dtype):
    # float32 sums of a few thousand terms in another order than the CPU's
    return {torch.float16: dict(atol=1e-3, rtol=2e-3), torch.bfloat16: dict(atol=1e-2, rtol=1e-2),
            torch.float32: dict(atol=1e-5, rtol=2e-5), torch.float64: dict(atol=1e-12, rtol=1e-12)}[dtype]


def assert_results_close(got, expected, dtype):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.device.type == "vk" and g.dtype == e.dtype and g.shape == e.shape == ()
        torch.testing.assert_close(g.cpu(), e, equal_nan=True, **tol(dtype))


def run(fn, vk_list):
    result = {}
    n = dispatch_count(lambda: result.update(out=fn(vk_list)))
    return n, result["out"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ord", ORDS, ids=str)
def test_norm_matches_cpu_in_two_dispatches(strict_native, ord, dtype):
    cpu = make_list(dtype, 0)
    if math.isinf(ord) or ord < 0:  # no identity: the CPU raises for an empty tensor
        cpu = [t for t in cpu if t.numel() > 0]
    n, got = run(lambda l: torch._foreach_norm(l, ord), to_vk(cpu))
    assert n == 2
    assert_results_close(got, torch._foreach_norm(cpu, ord), dtype)


@pytest.mark.parametrize("dtype,out_dtype", [(torch.float16, torch.float32),
                                             (torch.bfloat16, torch.float64),
                                             (torch.float32, torch.float64),
                                             (torch.float32, torch.float32)], ids=str)
@pytest.mark.parametrize("ord", [2, 1, INF], ids=str)
def test_norm_dtype_argument(strict_native, ord, dtype, out_dtype):
    cpu = [t for t in make_list(dtype, 1) if t.numel() > 0]
    n, got = run(lambda l: torch._foreach_norm(l, ord, dtype=out_dtype), to_vk(cpu))
    assert n == 2
    assert_results_close(got, torch._foreach_norm(cpu, ord, dtype=out_dtype), out_dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ord", [2, 1, 0, 3, 0.5], ids=str)
def test_powsum(strict_native, ord, dtype):
    cpu = make_list(dtype, 2)
    n, got = run(lambda l: torch._foreach_powsum(l, ord), to_vk(cpu))
    assert n == 2
    assert_results_close(got, torch._foreach_powsum(cpu, ord), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_max(strict_native, dtype):
    cpu = [t for t in make_list(dtype, 3) if t.numel() > 0]
    cpu.append(-torch.rand(3000, dtype=torch.float64).to(dtype) - 1)  # all negative
    n, got = run(torch._foreach_max, to_vk(cpu))
    assert n == 2
    expected = torch._foreach_max(cpu)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == ()
        assert torch.equal(g.cpu(), e)


def test_nan_and_inf(strict_native):
    nan = float("nan")
    cpu = [torch.tensor([1.0, nan, 2.0]), torch.full((5000,), 1.0), torch.tensor([INF, -3.0])]
    cpu[1][4321] = nan
    vk = to_vk(cpu)
    for fn in (torch._foreach_max, lambda l: torch._foreach_norm(l, 2),
               lambda l: torch._foreach_norm(l, INF), lambda l: torch._foreach_norm(l, -INF),
               lambda l: torch._foreach_norm(l, 1), lambda l: torch._foreach_norm(l, 0)):
        for g, e in zip(fn(vk), fn(cpu)):
            torch.testing.assert_close(g.cpu(), e, equal_nan=True)


def test_many_tensors(strict_native):
    # more tensors than one batch (1024) and one large tensor among many small ones
    cpu = [torch.randn(1 + i % 7) for i in range(1100)] + [torch.randn(70000)]
    n, got = run(lambda l: torch._foreach_norm(l, 2), to_vk(cpu))
    assert n == 4  # two batches of two dispatches
    assert_results_close(got, torch._foreach_norm(cpu, 2), torch.float32)


def test_deterministic(strict_native):
    vk = to_vk([torch.randn(50000), torch.randn(3)])
    first = [t.cpu() for t in torch._foreach_norm(vk, 1)]
    for _ in range(3):
        again = [t.cpu() for t in torch._foreach_norm(vk, 1)]
        assert all(torch.equal(a, b) for a, b in zip(first, again))


def test_slow_route(strict_native):
    # non-dense layouts, mixed dtypes and integer lists: the per-tensor reductions
    base = torch.randn(6, 8)
    cpu = [base.t(), base[:, ::2], torch.randn(4).double()]
    vk = [base.to("vk").t(), base.to("vk")[:, ::2], cpu[2].to("vk")]
    for fn in (lambda l: torch._foreach_norm(l, 2), lambda l: torch._foreach_norm(l, INF),
               lambda l: torch._foreach_norm(l, 1.5), torch._foreach_max):
        for g, e in zip(fn(vk), fn(cpu)):
            assert g.dtype == e.dtype
            torch.testing.assert_close(g.cpu(), e)
    ints = [torch.arange(-3, 4), torch.arange(5)]
    for g, e in zip(torch._foreach_max(to_vk(ints)), torch._foreach_max(ints)):
        assert g.dtype == e.dtype and torch.equal(g.cpu(), e)


def test_errors_match_cpu():
    a = [torch.randn(3), torch.zeros(0)]
    same_error_by_device(lambda dev: torch._foreach_norm([], 2))
    same_error_by_device(lambda dev: torch._foreach_max([t.to(dev) for t in a]))
    same_error_by_device(lambda dev: torch._foreach_norm([t.to(dev) for t in a], INF))
    same_error_by_device(lambda dev: torch._foreach_norm([t.to(dev) for t in a], -1))
    same_error_by_device(lambda dev: torch._foreach_norm([torch.randn(3, device=dev)], 2, dtype=torch.float16))
    same_error_by_device(lambda dev: torch._foreach_norm([torch.randn(3, device=dev)], 2, dtype=torch.int32))


def make_grads(seed, nonfinite=None):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(*[torch.nn.Linear(6, 6) for _ in range(25)])  # 50 parameters
    grads = [torch.randn(p.shape) for p in model.parameters()]
    if nonfinite is not None:
        grads[6][0, 1] = nonfinite
    return grads


@pytest.mark.parametrize("norm_type", [2.0, 1.0, INF], ids=str)
def test_clip_grad_norm_in_a_few_dispatches(strict_native, norm_type):
    cpu = [torch.nn.Parameter(torch.zeros(g.shape)) for g in make_grads(0)]
    vk = [torch.nn.Parameter(torch.zeros(g.shape, device="vk")) for g in make_grads(0)]
    for p, q, g in zip(cpu, vk, make_grads(0)):
        p.grad, q.grad = g.clone(), g.to("vk")
    expected = torch.nn.utils.clip_grad_norm_(cpu, 0.5, norm_type=norm_type)
    result = {}
    n = dispatch_count(lambda: result.update(
        norm=torch.nn.utils.clip_grad_norm_(vk, 0.5, norm_type=norm_type)))
    assert n <= 8, n  # norms, stack, total norm, coefficient, scale: not per parameter
    torch.testing.assert_close(result["norm"].cpu(), expected, atol=1e-5, rtol=1e-5)
    for p, q in zip(cpu, vk):
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("bad", [INF, float("nan")], ids=str)
def test_clip_grad_norm_error_if_nonfinite(strict_native, bad):
    vk = [torch.nn.Parameter(torch.zeros(g.shape, device="vk")) for g in make_grads(1)]
    cpu = [torch.nn.Parameter(torch.zeros(g.shape)) for g in make_grads(1)]
    for p, q, g in zip(cpu, vk, make_grads(1, nonfinite=bad)):
        p.grad, q.grad = g.clone(), g.to("vk")
    with pytest.raises(RuntimeError) as cpu_error:
        torch.nn.utils.clip_grad_norm_(cpu, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as vk_error:
        torch.nn.utils.clip_grad_norm_(vk, 1.0, error_if_nonfinite=True)
    assert str(vk_error.value) == str(cpu_error.value)
    # without the check: a non-finite total norm, as on the CPU
    got = torch.nn.utils.clip_grad_norm_(vk, 1.0)
    torch.testing.assert_close(got.cpu(), torch.nn.utils.clip_grad_norm_(cpu, 1.0), equal_nan=True)


def test_clip_grad_value_in_two_dispatches(strict_native):
    cpu = [torch.nn.Parameter(torch.zeros(g.shape)) for g in make_grads(2)]
    vk = [torch.nn.Parameter(torch.zeros(g.shape, device="vk")) for g in make_grads(2)]
    for p, q, g in zip(cpu, vk, make_grads(2)):
        p.grad, q.grad = g.clone(), g.to("vk")
    torch.nn.utils.clip_grad_value_(cpu, 0.3)
    assert dispatch_count(lambda: torch.nn.utils.clip_grad_value_(vk, 0.3)) == 2  # clamp_min_, clamp_max_
    for p, q in zip(cpu, vk):
        torch.testing.assert_close(q.grad.cpu(), p.grad)
