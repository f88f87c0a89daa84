"""Kernel benchmark: vk against PyTorch on the CPU (or CUDA when present), measured in the
same run and reported as ratios.

  python benchmarks/bench_kernels.py [--quick] [--json FILE]
  python benchmarks/bench_kernels.py --gpu [--tiny] [--budget SECONDS] [--json FILE]

Default (CPU machines, lavapipe): reports
  - GEMM GFLOP/s (float32 mm) for a few square sizes,
  - element-wise GB/s (add of two float32 vectors: 12 bytes per element),
  - per-op host overhead: wall time per tiny op while recording (no waits), the recording
    thread's CPU time per op, and the dispatch count from torch_vk.stats(); and the thread CPU
    time again on a stream that holds its submissions until the end ("device held"). On
    lavapipe the device is the same CPU, so each figure has a bias: while the device executes,
    its threads compete with the recording thread for the cores and caches; while it is held,
    the driver's command buffer keeps growing (fresh pages for every few thousand commands).

--gpu (chosen automatically when CUDA is present and --quick is not given): GPU-sized
problems against CUDA PyTorch on the same GPU: GEMM 1024..8192 in float32 / float16 /
bfloat16, add of 2^24..2^27 float32 elements, and model-shaped rows (linear, softmax,
layer_norm, a ResNet conv2d, GPT-shaped scaled_dot_product_attention and a decode step of it).
Each row is timed after
warm-up (pipeline creation, cuBLAS heuristics) with a device synchronization around every
sample; a sample runs enough calls to last a few milliseconds. Rows stop when --budget seconds
are spent, and the JSON file is rewritten after every row, so a run cut short keeps what it
measured. Every "ratio" is vk speed / reference speed (> 1: vk is faster). A row whose vk
run fell back to the CPU says so ("vk_fallbacks"); a row whose op raised holds "error".
--tiny shrinks every shape (a dry run of the --gpu path on lavapipe). CUDA float32 matmuls use PyTorch's
default precision (no TF32 unless torch.backends.cuda.matmul.allow_tf32 is set).
Numbers belong in notes, never in tests.
"""
import argparse
import contextlib
import json
import os
import time

import torch
import torch.nn.functional as F

import torch_vk
from torch_vk.bench import sync, time_per_call, timeit  # sync, timeit: also for bench_quant.py
from torch_vk.bench.runner import fallback_calls


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


def bench_overhead(device, ops, held=False):
    """Per-op host cost of `x = x + 1.0` on a 16-element tensor, recorded without waits.

    Returns (wall us/op while recording, wall us/op including execution, dispatches, CPU us/op
    of this thread while recording). The thread CPU time is the host overhead proper: on a
    machine with few cores the wall time also counts the time the recording thread loses to
    lavapipe's execution threads (and to other processes). One warm-up round first, so that
    pipeline creation and first-use allocations are not counted. `held`: record on a stream
    that holds its submissions (vk only)."""
    with _held_stream() if held else contextlib.nullcontext():
        return _bench_overhead(device, ops)


@contextlib.contextmanager
def _held_stream():
    """A new vk stream that submits nothing until it synchronizes (TORCH_VK_SUBMIT_BATCH is
    read when a stream is created)."""
    saved = os.environ.get("TORCH_VK_SUBMIT_BATCH")
    os.environ["TORCH_VK_SUBMIT_BATCH"] = "1000000000"
    try:
        stream = torch.vk.Stream()
    finally:
        if saved is None:
            del os.environ["TORCH_VK_SUBMIT_BATCH"]
        else:
            os.environ["TORCH_VK_SUBMIT_BATCH"] = saved
    with torch.vk.stream(stream):
        yield
    stream.synchronize()


def _bench_overhead(device, ops):
    x = torch.ones(16, device=device)
    for _ in range(min(ops, 100)):
        x = x + 1.0
    sync(device)
    x = torch.ones(16, device=device)
    sync(device)
    if device.type == "vk":
        torch_vk.reset_stats()
    start = time.perf_counter()
    cpu_start = time.thread_time()
    for _ in range(ops):
        x = x + 1.0
    cpu = time.thread_time() - cpu_start
    record = time.perf_counter() - start
    dispatches = torch_vk.stats()["dispatches"] if device.type == "vk" else ops
    sync(device)
    total = time.perf_counter() - start
    return record / ops * 1e6, total / ops * 1e6, dispatches, cpu / ops * 1e6


def run_cpu_preset(args, vk, ref, results):
    """The default preset (CPU machines): unchanged sizes and output."""
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


# ------------------------------------------------------------------------------ --gpu preset

class Budget:
    """Wall-clock budget of the whole --gpu run: rows are skipped once it is spent."""

    def __init__(self, seconds):
        self.deadline = time.perf_counter() + seconds

    def left(self):
        return self.deadline - time.perf_counter()


class GpuRun:
    def __init__(self, args, vk, ref, results):
        self.args, self.vk, self.ref, self.results = args, vk, ref, results
        self.budget = Budget(args.budget)

    def save(self):
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump(self.results, f, indent=1)

    def measure(self, section, row, make_inputs, op, work=None, unit=None):
        """Times op(*inputs) on vk and on the reference device and appends one row to
        results[section]. make_inputs(device) builds the inputs (same values on both devices);
        work is the FLOPs or bytes one call does, unit its name ("TFLOP/s" or "GB/s")."""
        left = self.budget.left()
        if left < 1.0:
            row["skipped"] = "budget spent"
            self.results[section].append(row)
            print(f"{section:8s} {row['name']}: skipped (budget spent)", flush=True)
            return
        per_device = max(0.5, min(self.args.row_seconds, left / 2))
        try:
            inputs = make_inputs(self.vk)
            fb0 = fallback_calls()
            t_vk = time_per_call(lambda: op(*inputs), self.vk, per_device)
            row["vk_fallbacks"] = fallback_calls() - fb0
            del inputs
            inputs = make_inputs(self.ref)
            t_ref = time_per_call(lambda: op(*inputs), self.ref, per_device)
            del inputs
        except Exception as exc:  # a failing op must not end the run: record it
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            self.results[section].append(row)
            print(f"{section:8s} {row['name']}: ERROR {row['error']}", flush=True)
            self.save()
            return
        row.update({"vk_ms": t_vk * 1e3, "ref_ms": t_ref * 1e3, "ratio": t_ref / t_vk})
        rate = ""
        if work is not None:
            scale = 1e12 if unit == "TFLOP/s" else 1e9
            key = "tflops" if unit == "TFLOP/s" else "gbs"
            row[f"vk_{key}"] = work / t_vk / scale
            row[f"ref_{key}"] = work / t_ref / scale
            rate = f"  vk {row[f'vk_{key}']:9.4g} {unit}  {self.ref.type} {row[f'ref_{key}']:9.4g}"
        note = f"  ({row['vk_fallbacks']} CPU fallback calls)" if row["vk_fallbacks"] else ""
        print(f"{section:8s} {row['name']}: vk {t_vk * 1e3:9.3f} ms  {self.ref.type} "
              f"{t_ref * 1e3:9.3f} ms{rate}  ratio {t_ref / t_vk:.3f}{note}", flush=True)
        self.results[section].append(row)
        self.save()


def on(device, *tensors):
    return tuple(t.to(device) for t in tensors)


def run_gpu_preset(args, vk, ref, results):
    tiny = args.tiny
    run = GpuRun(args, vk, ref, results)
    results.update({"preset": "gpu-tiny" if tiny else "gpu", "models": [],
                    "float32_matmul_precision": torch.get_float32_matmul_precision()})
    gen = torch.Generator().manual_seed(0)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=gen).to(dtype)

    # GEMM: square mm, every dtype. Inputs are made on the host once per size and copied.
    for n in ([64, 128] if tiny else [1024, 2048, 4096, 8192]):
        a32, b32 = randn(n, n), randn(n, n)
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            a, b = a32.to(dtype), b32.to(dtype)
            name = f"mm n={n} {str(dtype).replace('torch.', '')}"
            run.measure("gemm", {"name": name, "n": n, "dtype": str(dtype)},
                        lambda d, a=a, b=b: on(d, a, b), torch.mm, 2 * n**3, "TFLOP/s")
            del a, b
        del a32, b32

    # Element-wise add, float32 (12 bytes per element), out= so no allocation is timed.
    for p in ([12, 14] if tiny else [24, 25, 26, 27]):
        n = 1 << p

        def make_add(d, n=n):
            a = torch.empty(n, device=d).uniform_()
            return a, torch.empty(n, device=d).uniform_(), torch.empty(n, device=d)
        run.measure("add", {"name": f"add n=2^{p}", "n": n, "dtype": "torch.float32"}, make_add,
                    lambda a, b, out: torch.add(a, b, out=out), 12 * n, "GB/s")

    # Model-shaped rows (full shape, tiny shape).
    def shape(full, small):
        return small if tiny else full

    for dtype in (torch.float32, torch.bfloat16):
        dn = str(dtype).replace("torch.", "")
        m, k, nn = shape((8192, 768, 3072), (256, 96, 384))
        x, w, bias = randn(m, k, dtype=dtype), randn(nn, k, dtype=dtype), randn(nn, dtype=dtype)
        run.measure("models", {"name": f"linear {m}x{k} -> {nn} {dn} (GPT MLP up)", "dtype": str(dtype)},
                    lambda d, t=(x, w, bias): on(d, *t), F.linear, 2 * m * k * nn, "TFLOP/s")
    for dtype in (torch.float32, torch.float16):
        dn = str(dtype).replace("torch.", "")
        rows, cols = shape((8 * 12 * 1024, 1024), (192, 128))  # attention probabilities
        x = randn(rows, cols, dtype=dtype)
        run.measure("models", {"name": f"softmax {rows}x{cols} dim=-1 {dn}", "dtype": str(dtype)},
                    lambda d, x=x: on(d, x), lambda t: torch.softmax(t, dim=-1),
                    2 * rows * cols * x.element_size(), "GB/s")
    for dtype in (torch.float32, torch.bfloat16):
        dn = str(dtype).replace("torch.", "")
        rows, hidden = shape((32768, 1024), (256, 128))
        x, w, b = randn(rows, hidden, dtype=dtype), randn(hidden, dtype=dtype), randn(hidden, dtype=dtype)
        run.measure("models", {"name": f"layer_norm {rows}x{hidden} {dn}", "dtype": str(dtype)},
                    lambda d, t=(x, w, b): on(d, *t),
                    lambda t, w, b: F.layer_norm(t, (t.shape[-1],), w, b),
                    2 * rows * hidden * x.element_size(), "GB/s")
    for dtype in (torch.float32, torch.float16):
        dn = str(dtype).replace("torch.", "")
        n_, c, hw = shape((32, 64, 56), (2, 8, 14))  # ResNet-50 stage 1 3x3 conv
        x, w = randn(n_, c, hw, hw, dtype=dtype), randn(c, c, 3, 3, dtype=dtype)
        run.measure("models", {"name": f"conv2d N={n_} C={c}->{c} {hw}x{hw} 3x3 pad1 {dn} (ResNet)",
                               "dtype": str(dtype)},
                    lambda d, t=(x, w): on(d, *t), lambda t, w: F.conv2d(t, w, padding=1),
                    2 * n_ * c * hw * hw * c * 9, "TFLOP/s")
    for dtype in (torch.float32, torch.float16):
        dn = str(dtype).replace("torch.", "")
        b, h, l, dh = shape((8, 12, 1024, 64), (1, 2, 64, 32))  # GPT-2 small attention
        q, k_, v = (randn(b, h, l, dh, dtype=dtype) for _ in range(3))
        run.measure("models", {"name": f"sdpa causal B={b} H={h} L={l} D={dh} {dn} (GPT)",
                               "dtype": str(dtype)},
                    lambda d, t=(q, k_, v): on(d, *t),
                    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    2 * b * h * l * l * dh, "TFLOP/s")  # causal: half of 4*B*H*L^2*D
    for dtype in (torch.float16,):
        dn = str(dtype).replace("torch.", "")
        b, h, s_, dh = shape((4, 32, 4096, 128), (1, 2, 600, 64))  # decode: one query row
        q = randn(b, h, 1, dh, dtype=dtype)
        k_, v = (randn(b, h, s_, dh, dtype=dtype) for _ in range(2))
        run.measure("models", {"name": f"sdpa decode B={b} H={h} L=1 S={s_} D={dh} {dn}",
                               "dtype": str(dtype)},
                    lambda d, t=(q, k_, v): on(d, *t), F.scaled_dot_product_attention,
                    2 * b * h * s_ * dh * k_.element_size(), "GB/s")  # reads K and V once
    run.save()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small CPU-preset sizes (lavapipe CI)")
    ap.add_argument("--gpu", action="store_true",
                    help="GPU-sized problems (default when CUDA is present and --quick is not given)")
    ap.add_argument("--tiny", action="store_true", help="with --gpu: tiny shapes (dry run)")
    ap.add_argument("--budget", type=float, default=150.0,
                    help="with --gpu: seconds for all rows; rows past it are skipped")
    ap.add_argument("--row-seconds", type=float, default=4.0,
                    help="with --gpu: most seconds spent timing one row on one device")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    gpu_preset = args.gpu or (torch.cuda.is_available() and not args.quick)
    ref = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vk = torch.device("vk")
    fallback = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("silent")
    results = {"device": torch.vk.get_device_name(0), "reference": str(ref), "gemm": [],
               "add": [], "overhead": {}}
    if ref.type == "cuda":
        results["reference_name"] = torch.cuda.get_device_name(0)
    if gpu_preset:
        run_gpu_preset(args, vk, ref, results)
    else:
        run_cpu_preset(args, vk, ref, results)
    ops = 500 if args.quick or args.tiny else 5000
    rec, tot, disp, cpu = bench_overhead(vk, ops)
    held_cpu = bench_overhead(vk, ops, held=True)[3]
    ref_rec, ref_tot, _, ref_cpu = bench_overhead(ref, ops)
    results["overhead"] = {"vk_record_us": rec, "vk_total_us": tot, "vk_dispatches": disp,
                           "vk_record_thread_cpu_us": cpu, "vk_held_thread_cpu_us": held_cpu,
                           "ref_thread_cpu_us": ref_cpu, "ref_us": ref_tot}
    print(f"host overhead per op: vk {rec:.2f} us recording ({tot:.2f} us incl. execution, "
          f"{disp / ops:.2f} dispatches/op); {ref.type} {ref_tot:.2f} us\n"
          f"host thread CPU time per op: vk {cpu:.2f} us ({held_cpu:.2f} us with the device "
          f"held), {ref.type} {ref_cpu:.2f} us")
    torch_vk.set_fallback_mode(fallback)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
