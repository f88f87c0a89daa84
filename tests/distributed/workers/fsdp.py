"""FSDP2 (fully_shard) on vk matches single-process training on the whole batch on the CPU:
a 2-block transformer, fp32, reshard_after_forward True and False, CPU offload, and a
gradient divide factor (reduce-scatter with PREMUL_SUM); with bf16 MixedPrecisionPolicy it
matches the same FSDP2 run on CPU tensors (Gloo) through the same group. The ranks share
device vk:0 (set before the mesh, as on a one-GPU host)."""

from __future__ import annotations

import copy
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

from common import RANK, WORLD, Checks, init

checks = Checks()
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)
VOCAB, DIM, SEQ, PER_RANK, STEPS = 32, 16, 8, 2, 8
TOL = dict(rtol=1e-5, atol=1e-5)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        # No bias: the key bias has an exactly-zero gradient (softmax is shift-invariant), and
        # Adam would turn its rounding noise into full-size steps that differ run to run.
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.proj = nn.Linear(DIM, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, 2, DIM // 2).unbind(2)
        a = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                       v.transpose(1, 2), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, DIM))
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


def data():
    g = torch.Generator().manual_seed(3)
    return [torch.randint(0, VOCAB, (PER_RANK * WORLD, SEQ + 1), generator=g) for _ in range(STEPS)]


def loss_of(model, tokens):
    logits = model(tokens[:, :-1])
    return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))


def train_reference(model, batches):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for tokens in batches:
        opt.zero_grad()
        loss = loss_of(model, tokens)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def train_fsdp(model, batches, device, mesh, sgd=False, **shard_kwargs):
    divide = shard_kwargs.pop("gradient_divide_factor", None)
    for blk in model.blocks:
        fully_shard(blk, mesh=mesh, **shard_kwargs)
    fully_shard(model, mesh=mesh, **shard_kwargs)
    if divide is not None:
        model.set_gradient_divide_factor(divide)
    opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if sgd
           else torch.optim.AdamW(model.parameters(), lr=1e-2))
    losses = []
    for tokens in batches:
        opt.zero_grad()
        local = tokens[RANK * PER_RANK:(RANK + 1) * PER_RANK].to(device)
        loss = loss_of(model, local)
        loss.backward()
        opt.step()
        total = loss.detach().to(device)
        dist.all_reduce(total)
        losses.append((total / WORLD).item())
    full = {n: p.full_tensor().detach().cpu() for n, p in model.named_parameters()}
    return full, losses


def compare(full, losses, ref_model, ref_losses, what, tol=TOL):
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), **tol,
                               msg=lambda m: f"{what}: losses: {m}")
    for name, q in ref_model.named_parameters():
        torch.testing.assert_close(full[name], q.detach().cpu(), **tol,
                                   msg=lambda m: f"{what}: {name}: {m}")


def case(name, mesh, **shard_kwargs):
    def run():
        torch.manual_seed(0)
        base = Transformer()
        batches = data()
        ref = copy.deepcopy(base)
        ref_losses = train_reference(ref, batches)
        model = copy.deepcopy(base)
        if "offload_policy" not in shard_kwargs:
            model = model.to("vk")
        full, losses = train_fsdp(model, batches, "vk", mesh, **shard_kwargs)
        compare(full, losses, ref, ref_losses, name)
    checks.run(name, run)


def bf16_case(vk_mesh, cpu_mesh):
    def run():
        torch.manual_seed(0)
        base = Transformer()
        batches = data()
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        # SGD: Adam would turn a gradient element that rounds differently into a full step.
        cpu_full, cpu_losses = train_fsdp(copy.deepcopy(base), batches, "cpu", cpu_mesh, sgd=True,
                                          mp_policy=mp)
        full, losses = train_fsdp(copy.deepcopy(base).to("vk"), batches, "vk", vk_mesh, sgd=True,
                                  mp_policy=mp)
        # bf16 rounding of activations: vk and CPU kernels may round a value differently.
        tol = dict(rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(torch.tensor(losses), torch.tensor(cpu_losses), **tol)
        for name, q in cpu_full.items():
            torch.testing.assert_close(full[name], q, **tol, msg=lambda m: f"bf16: {name}: {m}")
    checks.run("bf16 MixedPrecisionPolicy", run)


def main() -> None:
    init("vkgloo")
    torch.vk.set_device(0)
    mesh = init_device_mesh("vk", (WORLD,))
    cpu_mesh = init_device_mesh("cpu", (WORLD,))
    case("fp32 reshard_after_forward=True", mesh)
    case("fp32 reshard_after_forward=False", mesh, reshard_after_forward=False)
    case("fp32 gradient divide factor (PREMUL_SUM)", mesh, gradient_divide_factor=float(WORLD))
    case("fp32 CPU offload", mesh, offload_policy=CPUOffloadPolicy())
    bf16_case(mesh, cpu_mesh)
    stats = dist.group.WORLD._get_backend(torch.device("vk")).stats()
    checks.run("asynchronous path used", lambda: stats["queued"] > 0 or (_ for _ in ()).throw(
        AssertionError(stats)))
    dist.destroy_process_group()
    checks.finish()


if __name__ == "__main__":
    main()
