"""A small MLP trains on vk and tracks the same model trained on the CPU."""
import copy

import torch

import torch_vk


def train(model, device, steps=5):
    torch.manual_seed(0)
    data = torch.randn(32, 8)
    target = torch.randn(32, 2)
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = model(data.to(device))
        loss = ((out - target.to(device)) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


def test_mlp_training_matches_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2),
                                torch.nn.Tanh())
    torch_vk.set_fallback_mode("silent")  # matmul & co. are native in later work
    try:
        cpu_losses, cpu_model = train(copy.deepcopy(model), "cpu")
        vk_losses, vk_model = train(copy.deepcopy(model), "vk")
    finally:
        torch_vk.set_fallback_mode("warn")
    torch.testing.assert_close(vk_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for p_vk, p_cpu in zip(vk_model.parameters(), cpu_model.parameters()):
        assert p_vk.device.type == "vk"
        torch.testing.assert_close(p_vk.cpu(), p_cpu, rtol=1e-4, atol=1e-5)
    assert cpu_losses[-1] < cpu_losses[0]
