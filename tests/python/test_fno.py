"""A tiny Fourier Neural Operator (rfft2 -> complex spectral weights contracted with einsum ->
irfft2, plus a pointwise linear path and GELU; complex nn.Parameters) trains for 3 Adam steps
on vk without any CPU fallback and matches the same model trained on the CPU."""
import copy

import pytest
import torch
from torch import nn
import torch.nn.functional as F

import torch_vk  # noqa: F401

pytestmark = pytest.mark.usefixtures("strict_native")


class SpectralConv2d(nn.Module):
    def __init__(self, cin, cout, modes1, modes2):
        super().__init__()
        self.modes1, self.modes2 = modes1, modes2
        scale = 1.0 / (cin * cout)
        g = torch.Generator().manual_seed(cin * 31 + cout)
        self.w1 = nn.Parameter(scale * torch.randn(cin, cout, modes1, modes2, dtype=torch.cfloat,
                                                   generator=g))
        self.w2 = nn.Parameter(scale * torch.randn(cin, cout, modes1, modes2, dtype=torch.cfloat,
                                                   generator=g))

    def forward(self, x):
        b, _, h, w = x.shape
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(b, self.w1.shape[1], h, w // 2 + 1, dtype=torch.cfloat,
                             device=x.device)
        m1, m2 = self.modes1, self.modes2
        out_ft[:, :, :m1, :m2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m1, :m2], self.w1)
        out_ft[:, :, -m1:, :m2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -m1:, :m2], self.w2)
        return torch.fft.irfft2(out_ft, s=(h, w))


class FNO2d(nn.Module):
    def __init__(self, width=4, modes=3):
        super().__init__()
        torch.manual_seed(0)
        self.lift = nn.Linear(3, width)
        self.spectral = nn.ModuleList([SpectralConv2d(width, width, modes, modes) for _ in range(2)])
        self.pointwise = nn.ModuleList([nn.Conv2d(width, width, 1) for _ in range(2)])
        self.project = nn.Linear(width, 1)

    def forward(self, a):  # a: (b, h, w, 1)
        b, h, w, _ = a.shape
        gy = torch.linspace(0, 1, h, device=a.device).view(1, h, 1, 1).expand(b, h, w, 1)
        gx = torch.linspace(0, 1, w, device=a.device).view(1, 1, w, 1).expand(b, h, w, 1)
        x = self.lift(torch.cat([a, gy, gx], -1)).permute(0, 3, 1, 2)
        for i, (spec, pw) in enumerate(zip(self.spectral, self.pointwise)):
            x = spec(x) + pw(x)
            if i + 1 < len(self.spectral):
                x = F.gelu(x)
        return self.project(x.permute(0, 2, 3, 1))


def train(model, a, u, device, steps=3):
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    a, u = a.to(device), u.to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(model(a), u)
        loss.backward()
        opt.step()
        losses.append(loss.detach().cpu())
    return model, torch.stack(losses)


def test_fno_trains_like_cpu():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(2, 8, 8, 1, generator=g)
    u = torch.randn(2, 8, 8, 1, generator=g)
    ref = FNO2d()
    dev = copy.deepcopy(ref)
    ref, ref_losses = train(ref, a, u, "cpu")
    dev, dev_losses = train(dev, a, u, "vk")
    torch.testing.assert_close(dev_losses, ref_losses, rtol=1e-4, atol=1e-5)
    for (name, p_ref), (_, p_dev) in zip(ref.named_parameters(), dev.named_parameters()):
        torch.testing.assert_close(p_dev.detach().cpu(), p_ref.detach(), rtol=1e-4, atol=1e-5,
                                   msg=lambda m, name=name: f"{name}: {m}")
    assert ref_losses[-1] < ref_losses[0]
