"""Trains a small MLP on a two-spirals classification task on the "vk" device.

The only device-specific line is DEVICE = "vk". Prints the device, the loss curve, the final
accuracy, and how much ran natively (torch_vk.stats()).
"""
import math
import os
import time

import torch

import torch_vk

DEVICE = "vk"


def two_spirals(n, noise=0.15, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(n, generator=g) * 3 * math.pi + 0.5
    label = torch.randint(0, 2, (n,), generator=g)
    sign = label * 2 - 1
    x = torch.stack([t * torch.cos(t) * sign, t * torch.sin(t) * sign], dim=1) / 5
    x += noise * torch.randn(n, 2, generator=g)
    return x, label


def main():
    steps = int(os.environ.get("DEMO_STEPS", "300"))
    os.environ.setdefault("TORCH_VK_FALLBACK", "silent")
    torch_vk.set_fallback_mode(os.environ["TORCH_VK_FALLBACK"])
    props = torch.vk.get_device_properties(0)
    print(f"device: vk:0 = {props.name} [{props.vendor}, {props.device_type}, "
          f"driver {props.driver_name}], {props.total_memory / 2**30:.1f} GiB")

    torch.manual_seed(0)
    x, y = two_spirals(1024)
    x, y = x.to(DEVICE), y.to(DEVICE).float()
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 64), torch.nn.Tanh(),
        torch.nn.Linear(64, 64), torch.nn.Tanh(),
        torch.nn.Linear(64, 1),
    ).to(DEVICE)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)

    torch_vk.reset_stats()
    start = time.time()
    for step in range(1, steps + 1):
        opt.zero_grad()
        logits = model(x).squeeze(1)
        prob = torch.sigmoid(logits)
        loss = -(y * torch.log(prob + 1e-7) + (1 - y) * torch.log(1 - prob + 1e-7)).mean()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == 1:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    accuracy = ((model(x).squeeze(1) > 0).float() == y).float().mean().item()
    elapsed = time.time() - start
    stats = torch_vk.stats()
    print(f"final accuracy {accuracy * 100:.1f}% in {elapsed:.1f} s")
    print(f"kernels dispatched: {stats['dispatches']}, submits: {stats['submits']}, "
          f"host waits: {stats['host_waits']}")
    fallbacks = stats["fallbacks"]
    if fallbacks:
        ops = ", ".join(f"{name} x{count}" for name, count in sorted(fallbacks.items()))
        print(f"ops without a native kernel yet (ran on the CPU fallback): {ops}")


if __name__ == "__main__":
    main()
