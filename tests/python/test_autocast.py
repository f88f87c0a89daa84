"""torch.autocast("vk") and torch.amp.GradScaler("vk").

Autocast on vk follows CUDA's op lists (PyTorch's AT_FORALL_* lists in ATen/autocast_mode.h):
matmul / convolution / attention-like ops run in the autocast dtype, numerically sensitive ops
(exp, log, norms, losses, softmax, sums, ...) in float32, multi-input ops promote to the widest
input, and binary_cross_entropy is refused. Everything runs under strict_native: autocast must
not push any op to the CPU fallback.
"""
import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

import torch_vk  # noqa: F401

VK = "vk"
LOW = [torch.float16, torch.bfloat16]
# Tolerances of one reduced-precision rounding of results of magnitude ~1-10.
LOW_TOL = {torch.float16: dict(atol=2e-2, rtol=2e-2), torch.bfloat16: dict(atol=1e-1, rtol=5e-2)}


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_supported_dtypes_are_truthful():
    assert torch.vk.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    assert torch.amp.is_autocast_available("vk")
    x = randn(4, 4).to(VK)
    for dtype in torch.vk.get_amp_supported_dtype():
        with torch.autocast(VK, dtype=dtype):
            assert torch.is_autocast_enabled(VK)
            assert (x @ x).dtype == dtype
    # Any other dtype: PyTorch warns and disables autocast, as for CUDA.
    with pytest.warns(UserWarning, match="vk Autocast only supports dtypes"):
        with torch.autocast(VK, dtype=torch.float64):
            assert (x @ x).dtype == torch.float32
    assert not torch.is_autocast_enabled(VK)


@pytest.mark.parametrize("dtype", LOW)
def test_lower_precision_ops_run_in_the_autocast_dtype(strict_native, dtype):
    a, b = randn(5, 7, seed=1), randn(7, 3, seed=2)
    bias = randn(3, seed=3)
    batch_a, batch_b = randn(2, 5, 7, seed=4), randn(2, 7, 3, seed=5)
    image, weight = randn(2, 3, 6, 6, seed=6), randn(4, 3, 3, 3, seed=7)
    q, k, v = randn(1, 2, 4, 8, seed=8), randn(1, 2, 4, 8, seed=9), randn(1, 2, 4, 8, seed=10)
    cases = {
        "mm": (torch.mm, (a, b)),
        "matmul": (torch.matmul, (batch_a, b)),
        "bmm": (torch.bmm, (batch_a, batch_b)),
        "addmm": (torch.addmm, (bias, a, b)),
        "baddbmm": (torch.baddbmm, (randn(2, 5, 3, seed=11), batch_a, batch_b)),
        "linear": (F.linear, (a, b.t().contiguous(), bias)),
        "conv2d": (F.conv2d, (image, weight)),
        "sdpa": (lambda *t: F.scaled_dot_product_attention(*t, is_causal=True), (q, k, v)),
    }
    for name, (fn, args) in cases.items():
        with torch.autocast(VK, dtype=dtype):
            out = fn(*[t.to(VK) for t in args])
        assert out.dtype == dtype, name
        # The reference: the same op on the CPU with inputs rounded to the autocast dtype,
        # computed in float32 (what a reduced-precision kernel with fp32 accumulation gives).
        want = fn(*[t.to(dtype).float() for t in args])
        assert_close(out.cpu().float(), want, **LOW_TOL[dtype], msg=name)


@pytest.mark.parametrize("dtype", LOW)
def test_float32_ops_compute_in_float32(strict_native, dtype):
    x = randn(4, 6, seed=12).to(dtype)  # reduced-precision activations
    target = torch.tensor([1, 0, 5, 2])
    probs = torch.rand(4, 6, generator=torch.Generator().manual_seed(13))
    cases = {
        "softmax": lambda t: torch.softmax(t, -1),
        "log_softmax": lambda t: torch.log_softmax(t, -1),
        "exp": torch.exp,
        "log": lambda t: torch.log(t.abs()),  # abs is exact in every dtype
        "sum": torch.sum,
        "cumsum": lambda t: torch.cumsum(t, 1),
        "layer_norm": lambda t: F.layer_norm(t, (6,)),
        "mse_loss": lambda t: F.mse_loss(t, t.flip(0)),
        "nll_loss": lambda t: F.nll_loss(t, target.to(t.device)),
        "bce_with_logits": lambda t: F.binary_cross_entropy_with_logits(t, probs.to(t.device)),
        "norm": lambda t: torch.norm(t),
        "pow": lambda t: torch.pow(t, 2),
    }
    for name, fn in cases.items():
        with torch.autocast(VK, dtype=dtype):
            out = fn(x.to(VK))
        assert out.dtype == torch.float32, name
        # The CPU reference: the op on the float32 upcast of the same values.
        assert_close(out.cpu(), fn(x.float()), atol=1e-4, rtol=1e-4, msg=name)
    # cross_entropy is on no list: it asks log_softmax for the input's dtype explicitly (kept
    # by the fp32_set_opt_dtype policy, as on CUDA), then nll_loss runs in float32.
    with torch.autocast(VK, dtype=dtype):
        out = F.cross_entropy(x.to(VK), target.to(VK))
    assert out.dtype == torch.float32
    want = F.nll_loss(F.log_softmax(x.float(), 1).to(dtype).float(), target)
    assert_close(out.cpu(), want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", LOW)
def test_promote_ops_take_the_widest_input(strict_native, dtype):
    low, high = randn(5, seed=13).to(dtype).to(VK), randn(5, seed=14).to(VK)
    with torch.autocast(VK, dtype=dtype):
        assert torch.addcmul(low, low, high).dtype == torch.float32
        assert torch.atan2(low, high).dtype == torch.float32
        assert torch.addcmul(low, low, low).dtype == dtype
    # Ops on no list keep their input dtype.
    with torch.autocast(VK, dtype=dtype):
        assert torch.relu(high).dtype == torch.float32
        assert (low + low).dtype == dtype


def test_binary_cross_entropy_is_refused_like_cuda(strict_native):
    p, t = torch.rand(6).to(VK), torch.rand(6).to(VK)
    with torch.autocast(VK, dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, t)
        with torch.autocast(VK, enabled=False):  # the documented way out
            assert F.binary_cross_entropy(p, t).dtype == torch.float32


def test_nested_disable_and_cpu_unaffected(strict_native):
    x = randn(4, 4).to(VK)
    with torch.autocast(VK, dtype=torch.float16):
        assert (x @ x).dtype == torch.float16
        with torch.autocast(VK, enabled=False):
            assert (x @ x).dtype == torch.float32
        assert (x @ x).dtype == torch.float16
        # vk autocast leaves CPU tensors alone.
        assert (x.cpu() @ x.cpu()).dtype == torch.float32


@pytest.mark.parametrize("dtype", LOW)
def test_backward_through_autocast_gives_float32_grads(strict_native, dtype):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    reference = copy.deepcopy(model)
    model.to(VK)
    x, target = randn(6, 8, seed=15), torch.tensor([0, 1, 2, 3, 0, 1])
    with torch.autocast(VK, dtype=dtype):
        out = model(x.to(VK))
        assert out.dtype == dtype
        loss = F.cross_entropy(out, target.to(VK))
    assert loss.dtype == torch.float32
    loss.backward()
    reference_loss = F.cross_entropy(reference(x), target)
    reference_loss.backward()
    # The reduced-precision forward changes the result by its rounding, not more.
    assert_close(loss.cpu(), reference_loss, **LOW_TOL[dtype])
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert p.grad.dtype == torch.float32, name
        assert_close(p.grad.cpu(), q.grad, **LOW_TOL[dtype], msg=name)


def test_grad_scaler_skips_inf_steps_and_backs_off(strict_native):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(VK)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler(VK, init_scale=2.0**10, growth_interval=2)
    x, target = randn(6, 8, seed=16).to(VK), torch.tensor([0, 1, 2, 3, 0, 1]).to(VK)

    def step(poison):
        optimizer.zero_grad()
        with torch.autocast(VK, dtype=torch.float16):
            loss = F.cross_entropy(model(x), target)
        if poison:
            loss = loss * float("inf")  # every gradient becomes inf / NaN
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    before = [p.detach().clone() for p in model.parameters()]
    step(poison=True)
    assert scaler.get_scale() == 2.0**9  # backed off by 0.5
    for p, q in zip(model.parameters(), before):
        assert torch.equal(p.detach(), q), "a step with inf gradients must be skipped"
    step(poison=False)
    assert scaler.get_scale() == 2.0**9
    assert any(not torch.equal(p.detach(), q) for p, q in zip(model.parameters(), before))
    step(poison=False)
    assert scaler.get_scale() == 2.0**10  # grew after growth_interval good steps
    for p in model.parameters():
        assert torch.isfinite(p).all()


def test_amp_training_tracks_float32_training(strict_native):
    # fp16 autocast + GradScaler + fused AdamW on vk against plain float32 training on the CPU:
    # the same trajectory within reduced-precision rounding.
    torch.manual_seed(0)
    reference = nn.Sequential(nn.Linear(10, 32), nn.SiLU(), nn.Linear(32, 3))
    model = copy.deepcopy(reference).to(VK)
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=True)
    scaler = torch.amp.GradScaler(VK)
    data = [(randn(16, 10, seed=20 + i), torch.randint(0, 3, (16,), generator=torch.Generator().manual_seed(i)))
            for i in range(5)]
    losses = []
    for x, y in data:
        opt.zero_grad()
        with torch.autocast(VK, dtype=torch.float16):
            loss = F.cross_entropy(model(x.to(VK)), y.to(VK))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        ref_opt.zero_grad()
        ref_loss = F.cross_entropy(reference(x), y)
        ref_loss.backward()
        ref_opt.step()
        losses.append((loss.item(), ref_loss.item()))
    for vk_loss, cpu_loss in losses:
        assert abs(vk_loss - cpu_loss) < 2e-2, losses
    for p, q in zip(model.parameters(), reference.parameters()):
        assert_close(p.detach().cpu(), q.detach(), atol=2e-2, rtol=2e-2)
    assert scaler.get_scale() == 2.0**16  # no overflow, no back-off


def test_autocast_decorator_and_cache(strict_native):
    weight = nn.Parameter(randn(4, 4).to(VK))

    @torch.autocast(VK, dtype=torch.bfloat16)
    def twice(x):
        return (x @ weight) @ weight  # the cast of the leaf `weight` is cached and reused

    out = twice(randn(2, 4).to(VK))
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert weight.grad.dtype == torch.float32 and weight.grad.device.type == "vk"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.vk.synchronize()
