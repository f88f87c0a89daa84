"""DistributedDataParallel on vk matches single-process training on the whole batch on the CPU
(fp32, 1e-5): an MLP and a small CNN, several buckets, gradient_as_bucket_view, no_sync
gradient accumulation, find_unused_parameters, and the allreduce comm hook; the fp16 / bf16
compression hooks match the same hooks on CPU tensors through the same group. Each rank trains on its
shard of every global batch."""

from __future__ import annotations

import copy
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from common import RANK, WORLD, Checks, init

checks = Checks()
warnings.filterwarnings("ignore", category=FutureWarning)
TOL = dict(rtol=1e-5, atol=1e-5)
PER_RANK = 4


class MLP(nn.Module):
    def __init__(self, unused_branch: bool = False):
        super().__init__()
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 16)
        self.head = nn.Linear(16, 3)
        self.extra = nn.Linear(16, 3) if unused_branch else None

    def forward(self, x, use_extra: bool = False):
        h = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        out = self.head(h)
        if use_extra and self.extra is not None:
            out = out + self.extra(h)
        return out


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.GroupNorm(2, 6), nn.ReLU(),
                                  nn.MaxPool2d(2), nn.Conv2d(6, 8, 3), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3))

    def forward(self, x, use_extra: bool = False):
        return self.body(x)


def batches(steps, shape, seed):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(PER_RANK * WORLD, *shape, generator=g),
             torch.randint(0, 3, (PER_RANK * WORLD,), generator=g)) for _ in range(steps)]


def shard(t):
    return t[RANK * PER_RANK:(RANK + 1) * PER_RANK]


def train_reference(model, data, lr, micro=1, use_extra=lambda step: False):
    """Single process, whole batch, CPU."""
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for step in range(0, len(data), micro):
        opt.zero_grad()
        for x, y in data[step:step + micro]:
            loss = nn.functional.cross_entropy(model(x, use_extra(step)), y)
            loss.backward()
        losses.append(loss.item())
        opt.step()
    return losses


def train_ddp(module, data, lr, device="vk", micro=1, use_extra=lambda step: False, hook=None,
              **ddp_kwargs):
    model = DDP(module.to(device), **ddp_kwargs)
    if hook is not None:
        model.register_comm_hook(*hook)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for step in range(0, len(data), micro):
        opt.zero_grad()
        for k, (x, y) in enumerate(data[step:step + micro]):
            x, y = shard(x).to(device), shard(y).to(device)
            if k < micro - 1:
                with model.no_sync():  # accumulate locally, reduce on the last micro-batch
                    nn.functional.cross_entropy(model(x, use_extra(step)), y).backward()
            else:
                loss = nn.functional.cross_entropy(model(x, use_extra(step)), y)
                loss.backward()
        # The loss of the whole batch is the mean of the ranks' (equal shard sizes).
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append((total / WORLD).item())
        opt.step()
    return model.module, losses


def compare_models(got, ref, what, tol=TOL):
    for (name, p), (_, q) in zip(got.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), **tol,
                                   msg=lambda m: f"{what}: parameter {name}: {m}")


def case(name, make, shape, steps=20, lr=0.05, micro=1, use_extra=lambda step: False, **kw):
    def run():
        torch.manual_seed(0)
        base = make()
        data = batches(steps * micro, shape, seed=1)
        ref = copy.deepcopy(base)
        ref_losses = train_reference(ref, data, lr, micro, use_extra)
        got, losses = train_ddp(copy.deepcopy(base), data, lr, micro=micro, use_extra=use_extra, **kw)
        torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), **TOL)
        compare_models(got, ref, name)
    checks.run(name, run)


def compress_hook(state, bucket):
    """bf16 compression (the body of default_hooks.bf16_compress_hook, which DDP refuses by
    name unless CUDA + NCCL or XPU + XCCL are present)."""
    group = state if state is not None else dist.group.WORLD
    compressed = bucket.buffer().to(torch.bfloat16).div_(dist.get_world_size(group))
    fut = dist.all_reduce(compressed, group=group, async_op=True).get_future()
    buffer = bucket.buffer()

    def decompress(f):
        buffer.copy_(f.value()[0])
        return buffer
    return fut.then(decompress)


def compress_hook_case(name, hook):
    """Compression rounds the gradients: the reference is the same hook on CPU tensors (Gloo),
    through the same group."""
    def run():
        torch.manual_seed(0)
        base = MLP()
        data = batches(10, (12,), seed=2)
        cpu, cpu_losses = train_ddp(copy.deepcopy(base), data, 0.05, device="cpu", hook=(None, hook))
        got, losses = train_ddp(copy.deepcopy(base), data, 0.05, hook=(None, hook))
        tol = dict(rtol=1e-3, atol=1e-3)  # a gradient element may round the other way
        torch.testing.assert_close(torch.tensor(losses), torch.tensor(cpu_losses), **tol)
        compare_models(got, cpu, name, tol)
    checks.run(name, run)


def main() -> None:
    init("vkgloo")
    case("mlp", MLP, (12,))
    case("mlp small buckets, gradient_as_bucket_view", MLP, (12,), bucket_cap_mb=0.001,
         gradient_as_bucket_view=True)
    case("mlp no_sync accumulation", MLP, (12,), steps=8, micro=2)
    case("mlp find_unused_parameters", lambda: MLP(unused_branch=True), (12,), steps=12,
         use_extra=lambda step: step % 3 == 0, find_unused_parameters=True)
    case("mlp allreduce comm hook", MLP, (12,), hook=(None, default_hooks.allreduce_hook))
    case("cnn", CNN, (3, 8, 8), steps=8)
    compress_hook_case("fp16_compress_hook", default_hooks.fp16_compress_hook)
    compress_hook_case("bf16 compress hook", compress_hook)
    dist.destroy_process_group()
    checks.finish()


if __name__ == "__main__":
    main()
