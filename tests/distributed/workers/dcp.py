"""torch.distributed.checkpoint with vk tensors: save an FSDP2-sharded model and its optimizer
on N ranks, load them on M ranks (into FSDP2, and into DDP), and into a single process without
a process group; every loaded tensor must equal the saved one bit for bit.

    dcp.py save DIR          # N ranks: train 2 steps, dcp.save, and DIR/reference.pt (rank 0)
    dcp.py load DIR          # M ranks: dcp.load into FSDP2 and into DDP, compare
    dcp.py load_single DIR   # one process, no process group: dcp.load into a plain model
"""

from __future__ import annotations

import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_state_dict, set_model_state_dict,
                                                     set_state_dict)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

from common import RANK, WORLD, Checks, init
from fsdp import PER_RANK, Transformer, data, loss_of

checks = Checks()
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)


def sharded_model(mesh):
    torch.manual_seed(0)
    model = Transformer().to("vk")
    for blk in model.blocks:
        fully_shard(blk, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def full_state(model, opt=None, cpu_offload=True):
    """Unsharded copies of the model (and optimizer) state: on the CPU and on rank 0 only with
    cpu_offload (the other ranks get empty dicts), on every rank's device without."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=cpu_offload)
    if opt is None:
        return get_model_state_dict(model, options=options)
    return get_state_dict(model, opt, options=options)


def same_state(got, ref, what):
    if isinstance(ref, dict):
        assert set(got) == set(ref), f"{what}: keys {sorted(set(got) ^ set(ref))}"
        for k in ref:
            same_state(got[k], ref[k], f"{what}.{k}")
    elif isinstance(ref, (list, tuple)):
        for i, (g, r) in enumerate(zip(got, ref)):
            same_state(g, r, f"{what}[{i}]")
    elif isinstance(ref, torch.Tensor):
        torch.testing.assert_close(got.detach().cpu(), ref.detach().cpu(), rtol=0, atol=0,
                                   msg=lambda m: f"{what}: {m}")
    else:
        assert got == ref, f"{what}: {got!r} != {ref!r}"


def save(path):
    init("vkgloo")
    torch.vk.set_device(0)
    mesh = init_device_mesh("vk", (WORLD,))
    model, opt = sharded_model(mesh)
    for tokens in data()[:2]:
        opt.zero_grad()
        loss_of(model, tokens[RANK * PER_RANK:(RANK + 1) * PER_RANK].to("vk")).backward()
        opt.step()
    msd, osd = get_state_dict(model, opt)
    checks.run("dcp.save", dcp.save, {"model": msd, "optim": osd}, checkpoint_id=path)
    ref_model, ref_optim = full_state(model, opt)
    if RANK == 0:
        torch.save({"model": ref_model, "optim": ref_optim}, os.path.join(path, "reference.pt"))
    dist.barrier()
    dist.destroy_process_group()


def load(path):
    init("vkgloo")
    torch.vk.set_device(0)
    ref = torch.load(os.path.join(path, "reference.pt"), weights_only=False)
    mesh = init_device_mesh("vk", (WORLD,))

    def into_fsdp():
        model, opt = sharded_model(mesh)
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        got_model, got_optim = full_state(model, opt, cpu_offload=False)
        same_state(got_model, ref["model"], "model")
        same_state(got_optim, ref["optim"], "optim")
        got_model, got_optim = full_state(model, opt)
        if RANK == 0:
            same_state(got_model, ref["model"], "model (cpu_offload)")
            same_state(got_optim, ref["optim"], "optim (cpu_offload)")
        else:
            assert got_model == {}, sorted(got_model)
    checks.run(f"load on {WORLD} ranks into FSDP2", into_fsdp)

    def into_ddp():
        torch.manual_seed(1)
        model = DDP(Transformer().to("vk"))
        state = {"model": get_model_state_dict(model)}
        dcp.load(state, checkpoint_id=path)
        set_model_state_dict(model, state["model"])
        same_state(full_state(model, cpu_offload=False), ref["model"], "ddp model")
    checks.run(f"load on {WORLD} ranks into DDP", into_ddp)
    dist.destroy_process_group()


def load_single(path):
    assert not dist.is_initialized()
    ref = torch.load(os.path.join(path, "reference.pt"), weights_only=False)

    def run():
        torch.manual_seed(2)
        model = Transformer().to("vk")
        state = {"model": model.state_dict()}
        dcp.load(state, checkpoint_id=path)  # no process group: a single-process load
        model.load_state_dict(state["model"])
        same_state({k: v for k, v in model.state_dict().items()}, ref["model"], "single process")
        assert all(v.device.type == "vk" for v in model.state_dict().values())
    checks.run("load into one process", run)


if __name__ == "__main__":
    mode, directory = sys.argv[1], sys.argv[2]
    {"save": save, "load": load, "load_single": load_single}[mode](directory)
    checks.finish()
