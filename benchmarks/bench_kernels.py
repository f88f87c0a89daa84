"""Kernel benchmark: vk against PyTorch on the CPU (or CUDA when present), measured in the
same run and reported as ratios.

  python benchmarks/bench_kernels.py [--quick] [--json FILE]

Reports
  - GEMM GFLOP/s (float32 mm) for a few square sizes,
  - element-wise GB/s (add of two float32 vectors: 12 bytes per element),
  - per-op host overhead: wall time per tiny op while recording (no waits), and the
    dispatch count from torch_vk.stats().
Numbers belong in notes, never in tests.
"""
import argparse
import json
import time

import torch

import torch_vk


def sync(device):
    if device.type == "vk":
        torch.vk.synchronize()
    elif device.type == "cuda":
        torch.cuda.synchronize()


def timeit(fn, device, repeat, warmup=2):
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def bench_gemm(device, n, repeat):
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    t = timeit(lambda: torch.mm(a, b), device, repeat)
    return 2 * n**3 / t / 1e9


def bench_add(device, n, repeat):
    a = torch.randn(n, device=device)
    b = torch.randn(n, device=device)
    out = torch.empty(n, device=device)
    t = timeit(lambda: torch.add(a, b, out=out), device, repeat)
    return 12 * n / t / 1e9


def bench_overhead(device, ops):
    x = torch.ones(16, device=device)
    sync(device)
    if device.type == "vk":
        torch_vk.reset_stats()
    start = time.perf_counter()
    for _ in range(ops):
        x = x + 1.0
    record = time.perf_counter() - start
    dispatches = torch_vk.stats()["dispatches"] if device.type == "vk" else ops
    sync(device)
    total = time.perf_counter() - start
    return record / ops * 1e6, total / ops * 1e6, dispatches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    ref = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vk = torch.device("vk")
    fallback = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("silent")
    results = {"device": torch.vk.get_device_name(0), "reference": str(ref), "gemm": [],
               "add": [], "overhead": {}}
    sizes = [128, 256] if args.quick else [256, 512, 1024]
    for n in sizes:
        rep = 3 if n >= 1024 else 5
        g_vk, g_ref = bench_gemm(vk, n, rep), bench_gemm(ref, n, rep)
        results["gemm"].append({"n": n, "vk_gflops": g_vk, "ref_gflops": g_ref, "ratio": g_vk / g_ref})
        print(f"gemm n={n:5d}: vk {g_vk:8.2f} GFLOP/s  {ref.type} {g_ref:8.2f}  ratio {g_vk / g_ref:.3f}")
    for n in ([1 << 18] if args.quick else [1 << 20, 1 << 24]):
        b_vk, b_ref = bench_add(vk, n, 5), bench_add(ref, n, 5)
        results["add"].append({"n": n, "vk_gbs": b_vk, "ref_gbs": b_ref, "ratio": b_vk / b_ref})
        print(f"add  n={n:9d}: vk {b_vk:8.2f} GB/s  {ref.type} {b_ref:8.2f}  ratio {b_vk / b_ref:.3f}")
    ops = 500 if args.quick else 5000
    rec, tot, disp = bench_overhead(vk, ops)
    ref_rec, ref_tot, _ = bench_overhead(ref, ops)
    results["overhead"] = {"vk_record_us": rec, "vk_total_us": tot, "vk_dispatches": disp,
                           "ref_us": ref_tot}
    print(f"host overhead per op: vk {rec:.2f} us recording ({tot:.2f} us incl. execution, "
          f"{disp / ops:.2f} dispatches/op); {ref.type} {ref_tot:.2f} us")
    torch_vk.set_fallback_mode(fallback)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
