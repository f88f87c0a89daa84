"""End-to-end training of small model families on vk with no CPU fallback, tracking a CPU run.

Each test builds the model on the CPU from a fixed seed, copies it to vk, and trains both copies
on the same batches with the same optimizer configuration. With TORCH_VK_FALLBACK=error semantics
(`strict_native`), every forward, backward and optimizer op must run on the device; losses and
parameters must match the CPU run to fp32 tolerance after every step.
"""
import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.testing import assert_close

VK = torch.device("vk")
STEPS = 4

# fp32 tolerance for values that went through several optimizer steps: reductions are summed
# in a different order than the CPU's, so rounding differs in the last bits and is carried
# through the updates.
LOSS_TOL = dict(atol=1e-5, rtol=1e-4)
PARAM_TOL = dict(atol=1e-4, rtol=1e-4)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                                 nn.Linear(32, 5))

    def forward(self, x):
        return self.net(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.SiLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=1, padding=1, groups=2), nn.BatchNorm2d(16), nn.SiLU(),
            nn.AvgPool2d(2), nn.Conv2d(16, 16, 1), nn.SiLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class Block(nn.Module):
    def __init__(self, dim, heads, block_size, fused_attention):
        super().__init__()
        self.heads = heads
        self.fused_attention = fused_attention
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim))
        self.register_buffer("causal", torch.tril(torch.ones(block_size, block_size, dtype=torch.bool)))

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.fused_attention:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(~self.causal[:t, :t], float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=29, dim=32, heads=4, layers=2, block_size=16, fused_attention=True):
        super().__init__()
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(block_size, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, block_size, fused_attention)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        t = idx.size(1)
        x = self.token(idx) + self.position(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


# Adam's eps is raised from 1e-8 to 1e-5: some parameters here have a gradient that is zero in
# exact arithmetic (a conv bias before batch norm, the key bias of attention), so their
# computed gradients are rounding noise of ~1e-9, and with eps = 1e-8 Adam would turn that
# noise into full-size steps of random sign on both devices. A larger eps keeps those
# updates tiny, so the comparison tests the kernels rather than the sign of rounding noise.
def make_optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3, eps=1e-5)
    if name == "adamw_fused":
        return torch.optim.AdamW(params, lr=1e-3, eps=1e-5, weight_decay=0.01, fused=True)
    raise ValueError(name)


def train_both(model, batches, loss_fn, optimizer):
    """Trains the CPU model and a vk copy side by side and compares after each step."""
    vk_model = copy.deepcopy(model).to(VK)
    cpu_opt = make_optimizer(optimizer, model.parameters())
    vk_opt = make_optimizer(optimizer, vk_model.parameters())
    model.train()
    vk_model.train()
    for step, (x, y) in enumerate(batches):
        losses = []
        for m, opt, dev in ((model, cpu_opt, "cpu"), (vk_model, vk_opt, VK)):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(m(x.to(dev)), y.to(dev))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), max_norm=5.0)
            opt.step()
            losses.append(loss.detach())
        assert losses[1].device.type == "vk"
        assert_close(losses[1].cpu(), losses[0], **LOSS_TOL, msg=lambda m: f"step {step}: {m}")
        for (name, p_cpu), p_vk in zip(model.named_parameters(), vk_model.parameters()):
            assert_close(p_vk.detach().cpu(), p_cpu.detach(), **PARAM_TOL,
                         msg=lambda m: f"step {step}, {name}: {m}")
    for (name, b_cpu), b_vk in zip(model.named_buffers(), vk_model.buffers()):
        assert_close(b_vk.cpu(), b_cpu, **PARAM_TOL, msg=lambda m: f"buffer {name}: {m}")
    # Evaluation mode (batch norm on running statistics) must agree too.
    model.eval()
    vk_model.eval()
    x = batches[0][0]
    with torch.no_grad():
        assert_close(vk_model(x.to(VK)).cpu(), model(x), **PARAM_TOL)


OPTIMIZERS = ["sgd", "adam", "adamw_fused"]


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_mlp_trains_like_cpu(optimizer, strict_native):
    torch.manual_seed(0)
    model = MLP()
    batches = [(torch.randn(16, 12), torch.randint(0, 5, (16,))) for _ in range(STEPS)]
    train_both(model, batches, F.cross_entropy, optimizer)


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_cnn_trains_like_cpu(optimizer, strict_native):
    torch.manual_seed(0)
    model = SmallCNN()
    batches = [(torch.randn(4, 3, 12, 12), torch.randint(0, 5, (4,))) for _ in range(STEPS)]
    train_both(model, batches, F.cross_entropy, optimizer)


def gpt_loss(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), label_smoothing=0.05)


@pytest.mark.parametrize("fused_attention", [True, False], ids=["sdpa", "explicit"])
@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_gpt_trains_like_cpu(optimizer, fused_attention, strict_native):
    torch.manual_seed(0)
    model = TinyGPT(fused_attention=fused_attention)
    data = torch.randint(0, 29, (STEPS, 3, 13))
    batches = [(seq[:, :-1], seq[:, 1:]) for seq in data]
    train_both(model, batches, gpt_loss, optimizer)


def test_gpt_loss_decreases_on_vk(strict_native):
    """A longer vk-only run on a learnable sequence: the loss must go down clearly."""
    torch.manual_seed(0)
    model = TinyGPT().to(VK)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, fused=True)
    pattern = torch.arange(12) % 7
    x = pattern[:-1].repeat(4, 1).to(VK)
    y = pattern[1:].repeat(4, 1).to(VK)
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss = gpt_loss(model(x), y)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.5 * first
