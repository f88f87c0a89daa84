"""DTensor and tensor / sequence parallelism on vk: parallelize_module with Colwise / Rowwise
(+ SequenceParallel) trains like the unsharded module on the CPU (fp32, 1e-5);
redistribute between every pair of placements (Shard(0), Shard(1), Replicate, Partial) keeps
the full tensor (Shard(0) -> Shard(1) is an all_to_all); a sharded random init draws from the
offsets DTensor's RNG tracker assigns (the vk generator's Philox state).

The mesh comes from init_device_mesh("vk", ...) with no process group yet, and every rank uses
its own logical device vk:LOCAL_RANK (TORCH_VK_VISIBLE_DEVICES=0,0,... set by the test)."""

from __future__ import annotations

import copy
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                               parallelize_module)

from common import LOCAL_RANK, RANK, WORLD, Checks

checks = Checks()
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)
TOL = dict(rtol=1e-5, atol=1e-5)
IN, HIDDEN, SEQ, BATCH = 12, 24, 6, 2


class MLP(nn.Module):
    def __init__(self, norm: bool = False):
        super().__init__()
        self.norm = nn.LayerNorm(IN) if norm else nn.Identity()
        self.fc1 = nn.Linear(IN, HIDDEN)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(HIDDEN, IN)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(self.norm(x))))


def data(steps):
    g = torch.Generator().manual_seed(5)
    return [(torch.randn(BATCH, SEQ, IN, generator=g), torch.randn(BATCH, SEQ, IN, generator=g))
            for _ in range(steps)]


def train(model, batches, device, prepare=lambda x: x, finish=lambda y: y):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        out = finish(model(prepare(x.to(device))))
        loss = nn.functional.mse_loss(out, y.to(device))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def full_params(model):
    return {n: (p.full_tensor() if isinstance(p, DTensor) else p).detach().cpu()
            for n, p in model.named_parameters()}


def tp_case(mesh, sequence_parallel: bool):
    def run():
        torch.manual_seed(0)
        base = MLP(norm=sequence_parallel)
        batches = data(5)
        ref = copy.deepcopy(base)
        ref_losses = train(ref, batches, "cpu")
        model = copy.deepcopy(base).to(device)
        if sequence_parallel:
            plan = {"norm": SequenceParallel(),
                    "fc1": ColwiseParallel(input_layouts=Shard(1)),
                    "fc2": RowwiseParallel(output_layouts=Shard(1))}
            n = SEQ // WORLD

            def prepare(x):  # each rank holds its slice of the sequence
                return x[:, RANK * n:(RANK + 1) * n]

            def finish(y):  # the loss sees the whole sequence (autograd through the gather)
                return DTensor.from_local(y, mesh, [Shard(1)]).full_tensor()
        else:
            plan = {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}
            prepare = finish = (lambda t: t)
        parallelize_module(model, mesh, plan)
        losses = train(model, batches, device, prepare, finish)
        torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), **TOL)
        got = full_params(model)
        for name, q in ref.named_parameters():
            torch.testing.assert_close(got[name], q.detach(), **TOL,
                                       msg=lambda m: f"{name}: {m}")
    checks.run(f"parallelize_module {'sequence' if sequence_parallel else 'tensor'} parallel", run)


def placement_name(p):
    return type(p).__name__ + (f"({p.dim})" if isinstance(p, Shard) else "")


def redistribute_case(mesh, src, dst):
    def run():
        # Small integers: sums and the splits of Partial are exact.
        t = torch.arange(6 * 12, dtype=torch.float32).reshape(6, 12).remainder(7).to(device)
        if isinstance(src, Partial):
            local = t if RANK == 0 else torch.zeros_like(t)
            d = DTensor.from_local(local, mesh, [Partial()])
        else:
            d = distribute_tensor(t, mesh, [src])
        r = d.redistribute(mesh, [dst])
        assert r.placements == (dst,), r.placements
        torch.testing.assert_close(r.full_tensor().cpu(), t.cpu(), rtol=0, atol=1e-6)
    checks.run(f"redistribute {placement_name(src)} -> {placement_name(dst)}", run)


def random_init_case(mesh, placement):
    """DTensor's RNG tracker runs a random op on each shard with the device generator's offset
    moved to shard_index * shard_numel (rounded up to 4) and leaves every rank's offset at
    start + numel: the vk generator's (seed, offset) state must support exactly that. The
    reference draws each rank's shard on its device from that state; replicas must agree.
    (Equality with one unsharded draw is not DTensor's contract, on CUDA neither.)"""
    def run():
        torch.manual_seed(1234)
        d = distribute_tensor(torch.empty(8, 12, device=device), mesh, [placement])
        state = torch.vk.get_rng_state(device)
        seed, offset = state.view(torch.int64).tolist()
        d.normal_()
        local = d.to_local()
        shard = RANK if isinstance(placement, Shard) else 0
        first_shard_numel = local.numel()
        if isinstance(placement, Shard):  # uneven shards: the offsets follow the first's size
            size = d.shape[placement.dim]
            first_shard_numel = d.numel() // size * -(-size // WORLD)
        incr = (shard * first_shard_numel + 3) // 4 * 4
        torch.vk.set_rng_state(torch.tensor([seed, offset + incr]).view(torch.uint8), device)
        ref = torch.empty(local.shape, device=device).normal_()
        torch.testing.assert_close(local.cpu(), ref.cpu(), rtol=0, atol=0)
        # Every rank's generator ends at the same offset.
        torch.vk.set_rng_state(torch.tensor([seed, offset]).view(torch.uint8), device)
        d2 = distribute_tensor(torch.empty(8, 12, device=device), mesh, [placement])
        d2.normal_()
        after = torch.vk.get_rng_state(device).view(torch.int64)[1].item()
        assert after == offset + (8 * 12 + 3) // 4 * 4, (after, offset)
        if isinstance(placement, Replicate):
            gathered = [torch.zeros_like(local) for _ in range(WORLD)]
            dist.all_gather(gathered, local)
            for g in gathered:
                torch.testing.assert_close(g.cpu(), local.cpu(), rtol=0, atol=0)
        else:  # the shards are different numbers
            full = d.full_tensor().cpu()
            n = full.shape[placement.dim] // WORLD
            a, b = full.narrow(placement.dim, 0, n), full.narrow(placement.dim, n, n)
            assert not torch.equal(a, b)
    checks.run(f"random init {placement_name(placement)}", run)


def main() -> None:
    global device
    mesh = init_device_mesh("vk", (WORLD,))  # init_process_group() and set_device(LOCAL_RANK)
    device = torch.device("vk", LOCAL_RANK)
    checks.run("DeviceMesh set the device", lambda: torch.vk.current_device() == LOCAL_RANK or
               (_ for _ in ()).throw(AssertionError(torch.vk.current_device())))
    checks.run("backend", lambda: dist.get_backend() == "vkgloo" or
               (_ for _ in ()).throw(AssertionError(dist.get_backend())))
    tp_case(mesh, sequence_parallel=False)
    tp_case(mesh, sequence_parallel=True)
    placements = [Shard(0), Shard(1), Replicate(), Partial()]
    for src in placements:
        for dst in placements:
            if isinstance(dst, Partial) and not isinstance(src, Partial):
                continue  # redistributing to Partial is internal to DTensor
            redistribute_case(mesh, src, dst)
    for placement in (Shard(0), Shard(1), Replicate()):
        random_init_case(mesh, placement)
    dist.destroy_process_group()
    checks.finish()


if __name__ == "__main__":
    main()
