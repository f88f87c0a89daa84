"""The utilities of a training loop on vk, each against a CPU run of the same code from the same
initial values (a CPU model, deep-copied, moved to vk): no_grad / inference_mode, gradient
accumulation, gradient clipping, tensor and module hooks, activation checkpointing,
learning-rate schedulers, zero_grad, weight_norm and spectral_norm."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.testing import assert_close
from torch.utils.checkpoint import checkpoint

import torch_vk  # noqa: F401
from helpers import TOLERANCE

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
FP32 = TOLERANCE[torch.float32]


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 12), nn.Tanh(), nn.Linear(12, 3))


def twins(model):
    """(the CPU model, a deep copy of it on vk): the same initial values on both devices."""
    return model, copy.deepcopy(model).to(VK)


def batch(rows=8, seed=1, features=6, outputs=3):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, features, generator=g), torch.randn(rows, outputs, generator=g)


def assert_grads_close(vk_model, cpu_model, **tolerance):
    tolerance = tolerance or FP32
    for (name, vk_param), cpu_param in zip(vk_model.named_parameters(), cpu_model.parameters()):
        assert vk_param.device.type == "vk"
        if cpu_param.grad is None:
            assert vk_param.grad is None, name
            continue
        assert vk_param.grad.device.type == "vk", name
        assert_close(vk_param.grad.cpu(), cpu_param.grad, msg=name, **tolerance)


def assert_params_close(vk_model, cpu_model, **tolerance):
    tolerance = tolerance or FP32
    for (name, vk_param), cpu_param in zip(vk_model.named_parameters(), cpu_model.parameters()):
        assert vk_param.device.type == "vk"
        assert_close(vk_param.detach().cpu(), cpu_param.detach(), msg=name, **tolerance)


def backward_on_both(cpu_model, vk_model, inputs, targets, forward=None):
    forward = forward or (lambda model, x: model(x))
    for model, device in ((cpu_model, "cpu"), (vk_model, VK)):
        F.mse_loss(forward(model, inputs.to(device)), targets.to(device)).backward()


# ---------------------------------------------------------------- no_grad / inference_mode

def test_no_grad():
    cpu_model, vk_model = twins(mlp())
    inputs, _ = batch()
    with torch.no_grad():
        expected = cpu_model(inputs)
        out = vk_model(inputs.to(VK))
        assert not torch.is_grad_enabled()
    assert out.device.type == "vk"
    assert not out.requires_grad and out.grad_fn is None
    assert_close(out.cpu(), expected, **FP32)
    # In-place parameter updates under no_grad are not recorded.
    with torch.no_grad():
        for param in vk_model.parameters():
            param.mul_(0.5)
    assert all(p.requires_grad and p.grad_fn is None for p in vk_model.parameters())
    assert torch.is_grad_enabled()


def test_inference_mode():
    cpu_model, vk_model = twins(mlp())
    inputs, _ = batch()
    with torch.inference_mode():
        expected = cpu_model(inputs)
        out = vk_model(inputs.to(VK))
        assert torch.is_inference_mode_enabled()
    assert out.device.type == "vk" and out.is_inference()
    assert not out.requires_grad
    assert_close(out.cpu(), expected, **FP32)
    # Outside inference mode, an inference tensor can be read but not saved for backward or
    # updated in place: the CPU's errors, on vk.
    assert_close((out + 1).cpu(), expected + 1, **FP32)  # reading it is fine
    weight = torch.ones(3, device=VK, requires_grad=True)
    with pytest.raises(RuntimeError, match="[Ii]nference tensor"):
        (out * weight).sum().backward()
    # The version-counter check runs after the kernel (on the CPU too): the in-place add
    # happens, then raises.
    for tensor in (expected, out):
        with pytest.raises(RuntimeError, match="[Ii]nference tensor"):
            tensor.add_(1)
    assert_close(out.cpu(), expected, **FP32)
    with torch.inference_mode(False):
        assert torch.is_grad_enabled()


# ---------------------------------------------------------------- gradient accumulation

def test_gradient_accumulation_over_micro_batches():
    cpu_model, vk_model = twins(mlp())
    inputs, targets = batch(rows=16)
    micro_batches = 4
    for x, y in zip(inputs.chunk(micro_batches), targets.chunk(micro_batches)):
        for model, device in ((cpu_model, "cpu"), (vk_model, VK)):
            loss = F.mse_loss(model(x.to(device)), y.to(device)) / micro_batches
            loss.backward()  # accumulates into .grad
    assert_grads_close(vk_model, cpu_model)

    # The accumulated gradient is the full-batch gradient (same mean over equal chunks).
    full_batch = copy.deepcopy(vk_model)
    full_batch.zero_grad(set_to_none=True)
    F.mse_loss(full_batch(inputs.to(VK)), targets.to(VK)).backward()
    for accumulated, full in zip(vk_model.parameters(), full_batch.parameters()):
        assert_close(accumulated.grad.cpu(), full.grad.cpu(), atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------- gradient clipping

@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_clip_grad_norm_on_model_gradients(foreach, norm_type):
    cpu_model, vk_model = twins(mlp())
    backward_on_both(cpu_model, vk_model, *batch())
    norms = {}
    for model, name in ((cpu_model, "cpu"), (vk_model, "vk")):
        norms[name] = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.05,
                                               norm_type=norm_type, foreach=foreach)
    assert norms["vk"].device.type == "vk"
    assert_close(norms["vk"].cpu(), norms["cpu"], **FP32)
    assert norms["cpu"] > 0.05  # the clipping did something
    assert_grads_close(vk_model, cpu_model)
    clipped = nn.utils.get_total_norm([p.grad for p in vk_model.parameters()], norm_type)
    assert clipped.item() <= 0.05 * (1 + 1e-5)


@pytest.mark.parametrize("foreach", [False, True])
def test_clip_grad_value_on_model_gradients(foreach):
    cpu_model, vk_model = twins(mlp())
    backward_on_both(cpu_model, vk_model, *batch())
    assert max(p.grad.abs().max().item() for p in cpu_model.parameters()) > 0.01
    for model in (cpu_model, vk_model):
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.01, foreach=foreach)
    assert_grads_close(vk_model, cpu_model)
    assert all(p.grad.abs().max().item() <= 0.01 for p in vk_model.parameters())


# ---------------------------------------------------------------- hooks

def test_tensor_hooks_modify_gradients():
    cpu_model, vk_model = twins(mlp())
    seen_devices = []

    def scale_and_shift(grad):
        seen_devices.append(grad.device.type)
        return grad * 2 + 0.01

    def forward(model, x):
        hidden = model[1](model[0](x))
        hidden.register_hook(lambda g: g.flip(0))  # a hook on an intermediate activation
        return model[4](model[3](model[2](hidden)))

    for model in (cpu_model, vk_model):
        model[0].weight.register_hook(scale_and_shift)
        model[4].bias.register_hook(lambda g: -g)
    backward_on_both(cpu_model, vk_model, *batch(), forward=forward)
    assert seen_devices == ["cpu", "vk"]
    assert_grads_close(vk_model, cpu_model)


def halve_grad(param):
    param.grad.mul_(0.5)  # a post-accumulate hook works in place and returns None


def test_post_accumulate_grad_hook():
    cpu_model, vk_model = twins(mlp())
    for model in (cpu_model, vk_model):
        for param in model.parameters():
            param.register_post_accumulate_grad_hook(halve_grad)
    backward_on_both(cpu_model, vk_model, *batch())
    assert_grads_close(vk_model, cpu_model)


def test_module_forward_and_backward_hooks():
    cpu_model, vk_model = twins(mlp())
    outputs_seen = {"cpu": [], "vk": []}

    def record_and_scale_output(module, args, output):
        outputs_seen[output.device.type].append(output.detach().cpu())
        return output * 1.5

    def shift_input(module, args):
        return (args[0] + 0.1,)

    def scale_grad_input(module, grad_input, grad_output):
        assert grad_output[0].device == grad_input[0].device
        return (grad_input[0] * 3,)

    def clamp_grad_output(module, grad_output):
        return (grad_output[0].clamp(-0.05, 0.05),)

    for model in (cpu_model, vk_model):
        model[2].register_forward_hook(record_and_scale_output)
        model[2].register_forward_pre_hook(shift_input)
        model[2].register_full_backward_hook(scale_grad_input)
        model[4].register_full_backward_pre_hook(clamp_grad_output)
    backward_on_both(cpu_model, vk_model, *batch())
    assert len(outputs_seen["cpu"]) == len(outputs_seen["vk"]) == 1
    assert_close(outputs_seen["vk"][0], outputs_seen["cpu"][0], **FP32)
    assert_grads_close(vk_model, cpu_model)


# ---------------------------------------------------------------- activation checkpointing

@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_matches_plain_backward_and_cpu(use_reentrant):
    cpu_model, vk_model = twins(mlp())
    plain_vk = copy.deepcopy(vk_model)
    inputs, targets = batch()

    def checkpointed(model, x):
        # The reentrant variant needs an input that requires grad to produce parameter grads.
        x = x.clone().requires_grad_(use_reentrant)
        hidden = checkpoint(lambda t: model[3](model[2](model[1](model[0](t)))), x,
                            use_reentrant=use_reentrant)
        return model[4](hidden)

    backward_on_both(cpu_model, vk_model, inputs, targets, forward=checkpointed)
    F.mse_loss(plain_vk(inputs.to(VK)), targets.to(VK)).backward()
    assert_grads_close(vk_model, cpu_model)
    for a, b in zip(vk_model.parameters(), plain_vk.parameters()):
        assert_close(a.grad.cpu(), b.grad.cpu(), **FP32)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_replays_dropout_with_the_vk_rng_state(use_reentrant):
    # The recomputed forward must draw the same dropout mask: checkpoint saves and restores
    # the vk generator (torch.vk.get_rng_state / set_rng_state) around the recomputation.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 32), nn.GELU(), nn.Dropout(0.5), nn.Linear(32, 3)).to(VK)
    plain = copy.deepcopy(model)
    inputs, targets = batch()
    x = inputs.to(VK).requires_grad_(use_reentrant)

    torch.manual_seed(5)
    F.mse_loss(plain(x), targets.to(VK)).backward()
    torch.manual_seed(5)
    hidden = checkpoint(lambda t: model[2](model[1](model[0](t))), x, use_reentrant=use_reentrant)
    F.mse_loss(model[3](hidden), targets.to(VK)).backward()
    for a, b in zip(model.parameters(), plain.parameters()):
        assert torch.equal(a.grad.cpu(), b.grad.cpu())
    # Control: without restoring the RNG the recomputation would see another mask.
    model.zero_grad()
    torch.manual_seed(5)
    hidden = checkpoint(lambda t: model[2](model[1](model[0](t))), x, use_reentrant=use_reentrant,
                        preserve_rng_state=False)
    F.mse_loss(model[3](hidden), targets.to(VK)).backward()
    assert not torch.equal(model[0].weight.grad.cpu(), plain[0].weight.grad.cpu())


# ---------------------------------------------------------------- learning-rate schedulers

SCHEDULERS = {
    "step": lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5),
    "cosine": lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6, eta_min=0.001),
    "one_cycle": lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=10),
    "lambda": lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 / (1 + step)),
}


@pytest.mark.parametrize("optimizer_class", ["sgd", "adam"])
@pytest.mark.parametrize("scheduler_name", sorted(SCHEDULERS))
def test_lr_scheduler_steps_like_cpu(scheduler_name, optimizer_class):
    cpu_model, vk_model = twins(mlp())
    inputs, targets = batch()
    lrs = {}
    for model, device in ((cpu_model, "cpu"), (vk_model, VK)):
        if optimizer_class == "sgd":
            optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        else:
            optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        scheduler = SCHEDULERS[scheduler_name](optimizer)
        history = []
        for _ in range(8):
            optimizer.zero_grad()
            F.mse_loss(model(inputs.to(device)), targets.to(device)).backward()
            optimizer.step()
            scheduler.step()
            history.append(scheduler.get_last_lr()[0])
            if scheduler_name == "one_cycle" and optimizer_class == "sgd":
                history.append(optimizer.param_groups[0]["momentum"])
        lrs[str(device)] = history
    assert lrs["vk"] == lrs["cpu"]
    assert len(set(lrs["cpu"])) > 1  # the schedule changed the learning rate
    assert_params_close(vk_model, cpu_model, atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------- zero_grad

def test_zero_grad_set_to_none_and_zeros():
    _, vk_model = twins(mlp())
    optimizer = torch.optim.SGD(vk_model.parameters(), lr=0.1)
    inputs, targets = batch()
    F.mse_loss(vk_model(inputs.to(VK)), targets.to(VK)).backward()
    assert all(p.grad is not None for p in vk_model.parameters())
    optimizer.zero_grad(set_to_none=True)
    assert all(p.grad is None for p in vk_model.parameters())

    F.mse_loss(vk_model(inputs.to(VK)), targets.to(VK)).backward()
    grads_before = [p.grad for p in vk_model.parameters()]
    optimizer.zero_grad(set_to_none=False)
    for param, before in zip(vk_model.parameters(), grads_before):
        assert param.grad is before  # zeroed in place, same tensor
        assert param.grad.device.type == "vk"
        assert torch.equal(param.grad.cpu(), torch.zeros_like(param).cpu())
    vk_model.zero_grad()  # Module.zero_grad defaults to set_to_none=True
    assert all(p.grad is None for p in vk_model.parameters())


# ---------------------------------------------------------------- weight_norm / spectral_norm

def train_both(cpu_model, vk_model, inputs, targets, steps=4):
    for model, device in ((cpu_model, "cpu"), (vk_model, VK)):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        for _ in range(steps):
            optimizer.zero_grad()
            F.mse_loss(model(inputs.to(device)), targets.to(device)).backward()
            optimizer.step()


def conv_model(parametrize, seed=0, **kwargs):
    torch.manual_seed(seed)
    conv = parametrize(nn.Conv2d(2, 4, 3, padding=1), **kwargs)
    return nn.Sequential(conv, nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 3))


def conv_batch():
    g = torch.Generator().manual_seed(2)
    return torch.randn(4, 2, 5, 5, generator=g), torch.randn(4, 3, generator=g)


@pytest.mark.parametrize("dim", [0, 1])
def test_weight_norm_fused_dims_train_like_cpu(dim):
    # dim 0 and the last dim take PyTorch's fused path (_weight_norm_interface and its backward).
    torch.manual_seed(0)
    cpu_model = nn.Sequential(nn.utils.parametrizations.weight_norm(nn.Linear(6, 12), dim=dim),
                              nn.Tanh(), nn.Linear(12, 3))
    cpu_model, vk_model = twins(cpu_model)
    train_both(cpu_model, vk_model, *batch())
    assert_params_close(vk_model, cpu_model, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dim", [0, 3], ids=["first", "last"])
def test_weight_norm_fused_dims_on_conv_train_like_cpu(dim):
    cpu_model, vk_model = twins(conv_model(nn.utils.parametrizations.weight_norm, dim=dim))
    train_both(cpu_model, vk_model, *conv_batch())
    assert_params_close(vk_model, cpu_model, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dim", [1, None], ids=["middle", "whole"])
def test_weight_norm_other_dims_train_like_cpu(dim):
    # weight_norm over a middle dim, or over the whole tensor (dim=None), is computed with
    # norm_except_dim (no fused kernel).
    cpu_model, vk_model = twins(conv_model(nn.utils.parametrizations.weight_norm, dim=dim))
    train_both(cpu_model, vk_model, *conv_batch())
    assert_params_close(vk_model, cpu_model, atol=1e-5, rtol=1e-4)
    conv = vk_model[0]
    assert conv.parametrizations.weight.original0.device.type == "vk"


@pytest.mark.parametrize("layer", ["linear", "conv"])
def test_spectral_norm_trains_like_cpu(layer):
    if layer == "linear":
        torch.manual_seed(0)
        cpu_model = nn.Sequential(nn.utils.parametrizations.spectral_norm(nn.Linear(6, 12)),
                                  nn.Tanh(), nn.Linear(12, 3))
        data = batch()
    else:
        cpu_model = conv_model(nn.utils.parametrizations.spectral_norm)
        data = conv_batch()
    cpu_model, vk_model = twins(cpu_model)  # the same power-iteration vectors u, v
    train_both(cpu_model, vk_model, *data)
    assert_params_close(vk_model, cpu_model, atol=1e-5, rtol=1e-4)
    # The power-iteration buffers were updated on vk like on the CPU.
    for (name, vk_buffer), cpu_buffer in zip(vk_model.named_buffers(), cpu_model.buffers()):
        assert vk_buffer.device.type == "vk"
        assert_close(vk_buffer.cpu(), cpu_buffer, atol=1e-5, rtol=1e-4, msg=name)
    # In eval mode the normalized weight is a plain function of the stored state.
    cpu_model.eval()
    vk_model.eval()
    assert_close(vk_model(data[0].to(VK)).cpu(), cpu_model(data[0]), atol=1e-5, rtol=1e-4)
