"""Launched by torchrun (one node or several): init_process_group() with no arguments, then
DDP training of an MLP on vk, compared with single-process training on the whole batch on the
CPU. Rank 0 prints "TORCHRUN-DDP-OK <world size>" when every rank matched."""

from __future__ import annotations

import copy
import os

import torch
import torch.distributed as dist

from common import RANK, WORLD, Checks
from ddp import MLP, TOL, batches, compare_models, train_ddp, train_reference

checks = Checks()


def main() -> None:
    dist.init_process_group()  # torchrun's environment; the backend follows the accelerator
    assert dist.get_backend() == "vkgloo", dist.get_backend()
    assert dist.get_world_size() == WORLD == int(os.environ["WORLD_SIZE"])

    def run():
        torch.manual_seed(0)
        base = MLP()
        data = batches(10, (12,), seed=4)
        ref = copy.deepcopy(base)
        ref_losses = train_reference(ref, data, 0.05)
        got, losses = train_ddp(copy.deepcopy(base), data, 0.05)
        torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), **TOL)
        compare_models(got, ref, "ddp under torchrun")
    checks.run("ddp under torchrun", run)
    ok = torch.tensor([0 if checks.failures else 1])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if RANK == 0 and ok.item() == 1:
        print(f"TORCHRUN-DDP-OK {WORLD}", flush=True)
    dist.destroy_process_group()
    checks.finish()


if __name__ == "__main__":
    main()
