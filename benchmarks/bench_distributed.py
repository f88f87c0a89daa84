"""Distributed benchmark: the "vkgloo" backend against plain Gloo on CPU tensors, measured in
the same run and reported as ratios.

  python benchmarks/bench_distributed.py [--quick] [--json FILE]

Starts its own ranks (2 processes on 127.0.0.1, like torchrun) and reports:
  - all_reduce (SUM, float32) algorithm bandwidth (bytes / time) at 4 MiB and 64 MiB of
      * CPU tensors over a plain "gloo" group (the reference),
      * vk tensors over "vkgloo" (the default: on unified-memory devices such as lavapipe Gloo
        works on the vk memory in place; the agreement check of every collective included),
      * vk tensors over "vkgloo" with TORCH_VK_DIST_VERIFY=0 (no agreement check),
      * vk tensors staged through pinned host memory (a second job with
        TORCH_VK_DISABLE_UNIFIED_MEMORY=1: the path of discrete GPUs),
    as medians of interleaved samples; "ratio" = vk bandwidth / Gloo CPU bandwidth;
  - DDP step time (forward, backward, all-reduce of the buckets, SGD step) of an MLP on vk with
    2 ranks (each its own batch) against 1 rank, and the ratio.
On lavapipe the device is the CPU the ranks also communicate with: 2 ranks share 2 cores with
the driver's threads, so step-time ratios there say little about GPUs. Numbers belong in
notes, never in tests.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

MIB = 1 << 20


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def launch(world, mode, extra_env=None, quick=False):
    """Runs this file as `world` ranks in `mode`; returns rank 0's JSON line."""
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo",
                   OMP_NUM_THREADS="1", TORCH_VK_FALLBACK="error", **(extra_env or {}))
        args = [sys.executable, os.path.abspath(__file__), "--worker", mode] + (["--quick"] if quick else [])
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    for p, out in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"worker exited {p.returncode}:\n{out}")
    return json.loads([line for line in outs[0].splitlines() if line.startswith("{")][-1])


def worker(mode, quick):
    import torch
    import torch.distributed as dist

    import torch_vk  # noqa: F401

    dist.init_process_group("vkgloo")
    rank = dist.get_rank()
    result = {}
    if mode == "allreduce":
        gloo = dist.new_group(backend="gloo")
        vk = dist.group.WORLD
        os.environ["TORCH_VK_DIST_VERIFY"] = "0"  # read when a vkgloo group is created
        vk_unchecked = dist.new_group(backend="vkgloo")
        sizes = [4 * MIB] if quick else [4 * MIB, 64 * MIB]
        for nbytes in sizes:
            iters = max(3, min(30, (256 * MIB) // nbytes))
            samples = {"gloo_cpu": [], "vk": [], "vk_unchecked": []}
            tensors = {"gloo_cpu": (torch.ones(nbytes // 4), gloo),
                       "vk": (torch.ones(nbytes // 4, device="vk"), vk),
                       "vk_unchecked": (torch.ones(nbytes // 4, device="vk"), vk_unchecked)}
            for _ in range(2):  # warm-up
                for t, g in tensors.values():
                    dist.all_reduce(t, group=g)
            torch.vk.synchronize()
            for _ in range(3 if quick else 5):  # interleaved samples
                for name, (t, g) in tensors.items():
                    dist.barrier(group=gloo)
                    start = time.perf_counter()
                    for _ in range(iters):
                        dist.all_reduce(t, group=g)
                    if t.device.type == "vk":
                        torch.vk.synchronize()
                    samples[name].append((time.perf_counter() - start) / iters)
            row = {name: nbytes / statistics.median(s) / 1e9 for name, s in samples.items()}
            result[f"{nbytes // MIB}MiB"] = row
    else:  # ddp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        torch.manual_seed(0)
        width = 256 if quick else 512
        model = DDP(nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(width, width), nn.ReLU())])
                    .to("vk"))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(64, width, device="vk")

        def step():
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        for _ in range(3):
            step()
        torch.vk.synchronize()
        times = []
        for _ in range(5 if quick else 10):
            dist.barrier()
            start = time.perf_counter()
            step()
            torch.vk.synchronize()
            times.append(time.perf_counter() - start)
        result["step_ms"] = statistics.median(times) * 1e3
        result["params"] = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(json.dumps(result), flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.quick)
    report = {"allreduce": launch(2, "allreduce", quick=args.quick),
              "allreduce_staged": launch(2, "allreduce", {"TORCH_VK_DISABLE_UNIFIED_MEMORY": "1"},
                                         quick=args.quick),
              "ddp_1_rank": launch(1, "ddp", quick=args.quick),
              "ddp_2_ranks": launch(2, "ddp", quick=args.quick)}
    print("all_reduce float32 SUM, 2 ranks, algorithm bandwidth GB/s (ratio = vk / Gloo CPU)")
    print(f"{'size':>7} {'gloo cpu':>9} {'vk':>7} {'ratio':>6} {'vk no check':>12} {'ratio':>6} "
          f"{'vk staged':>10} {'ratio':>6}")
    for size, row in report["allreduce"].items():
        staged = report["allreduce_staged"][size]
        c = row["gloo_cpu"]
        print(f"{size:>7} {c:9.2f} {row['vk']:7.2f} {row['vk'] / c:6.2f} {row['vk_unchecked']:12.2f} "
              f"{row['vk_unchecked'] / c:6.2f} {staged['vk']:10.2f} {staged['vk'] / staged['gloo_cpu']:6.2f}")
    one, two = report["ddp_1_rank"]["step_ms"], report["ddp_2_ranks"]["step_ms"]
    print(f"DDP step ({report['ddp_1_rank']['params']} parameters, batch 64 per rank): 1 rank "
          f"{one:.1f} ms, 2 ranks {two:.1f} ms, ratio 2/1 = {two / one:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
