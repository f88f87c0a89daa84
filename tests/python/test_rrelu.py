"""rrelu / rrelu_with_noise on vk. Eval mode is leaky_relu with slope (lower + upper) / 2 and
must equal the CPU. Training draws the noise with vk's own generator, so the values differ
from the CPU's: the tests check the defining properties instead (noise in [lower, upper] where
input <= 0 and 1 elsewhere, output = input * noise, gradient = grad * noise) and determinism
under torch.manual_seed."""
import pytest
import torch
import torch.nn.functional as F

import torch_vk  # noqa: F401
from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
LOWER, UPPER = 0.1, 0.4
# The CPU trains rrelu in float32 / float64 / bfloat16 (float16 only in eval mode).
TRAIN_DTYPES = [torch.float32, torch.float64, torch.bfloat16]
ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def tol(dtype):
    return TOLERANCE.get(dtype, {}) or dict(atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_rrelu_eval_equals_cpu(dtype):
    x = make((6, 5), dtype)
    for _, layout in layouts(x):
        check(lambda a: F.rrelu(layout(a), LOWER, UPPER, training=False), x, **tol(dtype))
    check(lambda a: F.rrelu(a), x, **tol(dtype))  # default bounds
    check(lambda a: F.rrelu(a, LOWER, UPPER, training=False, inplace=True), x.clone(), **tol(dtype))
    check(lambda a: F.rrelu(a), make((), dtype), **tol(dtype))
    check(lambda a: F.rrelu(a), torch.empty(0, 3, dtype=dtype))
    # eval backward: leaky_relu_backward with the mean slope
    grads = []
    for device in ("cpu", "vk"):
        a = x.detach().clone().to(device).requires_grad_(True)
        F.rrelu(a, LOWER, UPPER, training=False).backward(make(x.shape, dtype, seed=3).to(device))
        grads.append(a.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], **tol(dtype))


def train_on_vk(x, dtype, seed):
    torch.manual_seed(seed)
    a = x.detach().to(VK).requires_grad_(True)
    noise = torch.empty_like(a)
    out = torch.ops.aten.rrelu_with_noise(a, noise, LOWER, UPPER, True)
    return a, noise, out


@pytest.mark.parametrize("dtype", TRAIN_DTYPES, ids=str)
def test_rrelu_training_properties_and_gradient(dtype):
    x = make((7, 9), dtype)
    x[0, :3] = torch.tensor([0.0, -0.0, float("nan")], dtype=dtype)
    a, noise, out = train_on_vk(x, dtype, seed=5)
    n, o = noise.cpu(), out.detach().cpu()
    neg = x <= 0
    assert torch.all((n[neg] >= LOWER) & (n[neg] <= UPPER))
    assert torch.all(n[~neg] == 1)
    torch.testing.assert_close(o, x * n, equal_nan=True, **tol(dtype))
    assert torch.unique(n[neg]).numel() > neg.sum().item() // 2  # drawn per element
    g = make(x.shape, dtype, seed=2)
    out.backward(g.to(VK))
    torch.testing.assert_close(a.grad.cpu(), g * n, **tol(dtype))
    # the same seed draws the same noise; another one does not
    _, noise2, out2 = train_on_vk(x, dtype, seed=5)
    assert torch.equal(noise2.cpu(), n)
    torch.testing.assert_close(out2.detach().cpu(), o, equal_nan=True, atol=0, rtol=0)
    _, noise3, _ = train_on_vk(x, dtype, seed=6)
    assert not torch.equal(noise3.cpu(), n)


def test_rrelu_training_functional_inplace_and_layouts():
    x = make((4, 6), torch.float32)
    torch.manual_seed(0)
    y = F.rrelu(x.to(VK), LOWER, UPPER, training=True)
    ratio = (y.cpu() / x)[x < 0]
    assert torch.all((ratio >= LOWER - 1e-6) & (ratio <= UPPER + 1e-6))
    torch.testing.assert_close(y.cpu()[x > 0], x[x > 0])
    torch.manual_seed(0)
    inplace = x.to(VK)
    F.rrelu(inplace, LOWER, UPPER, training=True, inplace=True)
    assert torch.equal(inplace.cpu(), y.cpu())  # same draws in place
    # a transposed input and a transposed noise tensor
    xt = x.t()
    noise = torch.empty(4, 6, device=VK).t()
    out = torch.ops.aten.rrelu_with_noise(xt.to(VK), noise, LOWER, UPPER, True)
    n = noise.cpu()
    torch.testing.assert_close(out.cpu(), xt * n)
    assert torch.all(n[xt > 0] == 1)
    # out= variant and the functional variant used by torch.compile's functionalization
    out = torch.empty(0, device=VK)
    noise = torch.empty(4, 6, device=VK)
    torch.ops.aten.rrelu_with_noise.out(x.to(VK), noise, LOWER, UPPER, True, out=out)
    torch.testing.assert_close(out.cpu(), x * noise.cpu())
    r, n2 = torch.ops.aten.rrelu_with_noise_functional(x.to(VK), torch.empty(4, 6, device=VK), LOWER, UPPER, True)
    torch.testing.assert_close(r.cpu(), x * n2.cpu())
    # empty input
    e = torch.empty(0, 3, device=VK)
    assert F.rrelu(e, training=True).shape == (0, 3)


def test_rrelu_errors():
    x = make((3, 4), torch.float32)
    check(lambda a: F.rrelu(a, 0.5, 0.1, training=True), x)                     # lower > upper
    check(lambda a: F.rrelu(a, training=True), x.half())                        # no float16 training
    check(lambda a: F.rrelu(a, training=True), make((3,), torch.int64))         # integer input
    check(lambda a, n: torch.ops.aten.rrelu_with_noise(a, n, LOWER, UPPER, True), x, torch.empty(4, 3))
