"""Ray Train on vk: a local Ray cluster (127.0.0.1, 2 CPUs), TorchTrainer with 2 workers and
TorchConfig(backend="vkgloo"); each worker moves a small MLP to vk, wraps it with Ray's
prepare_model (DDP), trains on its shard, and reports whether every worker ends with the same
parameters. Prints RAY-TRAIN-OK when they do.

    python ray_train.py STORAGE_DIR
"""

import json
import os
import sys
import tempfile


def train_loop(config):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    import ray.train
    import ray.train.torch

    assert dist.get_backend() == "vkgloo", dist.get_backend()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to("vk")
    # Ray's device helpers know CUDA / HPU / NPU only (get_device() says cpu here): the model is
    # moved by hand and DDP takes its device from the parameters.
    model = ray.train.torch.prepare_model(model, move_to_device=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        x = torch.randn(4 * world, 8, generator=g)[rank * 4:(rank + 1) * 4].to("vk")
        y = torch.randn(4 * world, 2, generator=g)[rank * 4:(rank + 1) * 4].to("vk")
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    identical = all(torch.equal(t.cpu(), gathered[0].cpu()) for t in gathered)
    metrics = {"identical": identical, "device": flat.device.type, "world": world}
    ray.train.report(metrics)
    # Ray Train 2.x keeps reported metrics only with checkpoints: the driver reads these files.
    with open(os.path.join(config["out"], f"rank{rank}.json"), "w") as f:
        json.dump(metrics, f)


def main(storage):
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=True, _temp_dir=tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    try:
        out = os.path.join(storage, "reports")
        os.makedirs(out, exist_ok=True)
        trainer = TorchTrainer(
            train_loop, train_loop_config={"out": out},
            torch_config=TorchConfig(backend="vkgloo"),
            scaling_config=ScalingConfig(num_workers=2, use_gpu=False,
                                         resources_per_worker={"CPU": 1}),
            run_config=RunConfig(storage_path=storage, name="vk"))
        trainer.fit()
        reports = []
        for r in range(2):
            with open(os.path.join(out, f"rank{r}.json")) as f:
                reports.append(json.load(f))
        print("reports:", reports, flush=True)
        assert all(m["identical"] and m["device"] == "vk" and m["world"] == 2 for m in reports)
        print("RAY-TRAIN-OK", flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]))
