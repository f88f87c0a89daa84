"""torch.compile benchmark: eager vs compiled on vk, per model, measured in one run.

  python benchmarks/bench_compile.py [--quick] [--json FILE] [--device vk|cuda|cpu]

For an MLP, a small CNN, a GPT-2 style transformer block (also with nanoGPT's dropout 0.1, whose
compiled graphs replay with fresh random numbers) and a stack of four it reports, for the
forward pass (inference, no_grad) and for a training step (forward + backward + SGD):
  - step time (median wall time, synchronized), eager and compiled, and their ratio;
  - host time per step (vk only): CPU time of the calling thread per step, for steps recorded
    back to back while the device is held idle (a child process with
    TORCH_VK_SUBMIT_BATCH=1000000 submits nothing until it synchronizes). On lavapipe the
    "device" is the same CPU: letting it run during the measurement would time the driver's
    threads competing for the cores (and the caches they evict), not the host's work;
  - the same host time for a "floor" compile: Dynamo and AOTAutograd with compilers that do no
    work (each graph returns the outputs of its first call). It is PyTorch's own fixed cost of
    a compiled call, which any backend pays (Inductor on CUDA too); compiled minus floor is
    torch-vk's share (fused-kernel launches or the replay);
  - dispatches per step from torch_vk.stats() (vk only), eager and compiled, and their ratio.
Numbers belong in notes, never in tests.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_vk
from torch_vk.bench import sync


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width),
                                 nn.SiLU(), nn.Linear(width, 10))

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    def __init__(self, channels):
        super().__init__()
        c = channels
        self.body = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.SiLU(), nn.MaxPool2d(2),
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.SiLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(2 * c, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.body(x), 1))


class GPT2Block(nn.Module):
    """Written the way nanoGPT writes GPT-2's block: explicit attention with a causal mask
    filled with -inf, the tanh GELU as a formula, residual adds."""

    def __init__(self, dim, heads, seq, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.dropout = dropout  # nanoGPT's attention, residual and MLP dropout
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.mlp_proj = nn.Linear(4 * dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
        w = w.masked_fill(~self.bias[:t, :t], float("-inf"))
        w = self.drop(F.softmax(w, dim=-1))
        y = torch.matmul(w, v)
        return self.drop(self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c)))

    def mlp(self, x):
        h = self.c_fc(x)
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return self.drop(self.mlp_proj(h))

    def drop(self, x):
        return F.dropout(x, self.dropout, self.training) if self.dropout > 0 else x

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Stack(nn.Module):
    """Several GPT-2 blocks and a head: a graph big enough that Dynamo's and AOTAutograd's fixed
    per-call cost is amortized the way it is in real models."""

    def __init__(self, dim, heads, seq, layers):
        super().__init__()
        self.blocks = nn.Sequential(*(GPT2Block(dim, heads, seq) for _ in range(layers)))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        return self.head(self.ln_f(self.blocks(x)))


def median_time(fn, device, repeat):
    times = []
    for _ in range(repeat):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def host_time(fn, device, steps, rounds=3):
    """CPU time of this thread per step, for `steps` steps recorded back to back: the best of
    `rounds` rounds, after one warm-up round (so the caching allocator holds the blocks the
    steps need). Meaningful only while nothing is submitted (see the module docstring): the
    device must not run meanwhile."""
    best = math.inf
    for round_index in range(rounds + 1):
        sync(device)
        start = time.thread_time()
        for _ in range(steps):
            fn()
        if round_index:
            best = min(best, (time.thread_time() - start) / steps)
    sync(device)
    return best


HOLD_SUBMISSIONS = {"TORCH_VK_SUBMIT_BATCH": "1000000"}


def host_times_from_child(args) -> dict:
    """Runs this benchmark's host-time measurement in a child process whose stream holds its
    submissions; returns {(model, mode, label): seconds}."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "host.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--host-only", out,
               "--device", args.device] + (["--quick"] if args.quick else []) + \
              (["--large"] if args.large else [])
        subprocess.run(cmd, check=True, env={**os.environ, **HOLD_SUBMISSIONS})
        with open(out) as f:
            return {tuple(k.split("|")): v for k, v in json.load(f).items()}


def dispatches(fn, device):
    if device.type != "vk":
        return None
    sync(device)
    before = torch_vk.stats()["dispatches"]
    fn()
    sync(device)
    return torch_vk.stats()["dispatches"] - before


def floor_compile(model):
    """torch.compile through Dynamo and AOTAutograd with graph compilers that do no work: each
    graph computes its outputs on its first call and returns those same tensors ever after.
    Wrong results by design (only host time is measured with it)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def compiler(gm, example_inputs):
        first = []

        def run(*args):
            if not first:
                first.append(gm(*args))
            return first[0]
        return make_boxed_func(run)

    return torch.compile(model, backend=aot_autograd(fw_compiler=compiler, bw_compiler=compiler,
                                                     inference_compiler=compiler))


def measure(name, model, make_input, device, repeat, warmup, host_only=False):
    rows = []
    x = make_input()
    target = torch.randint(0, 10, (x.shape[0],), device=device)
    compiled = torch.compile(model)
    runs = [("eager", model), ("compiled", compiled)]
    if host_only:
        runs.append(("floor", floor_compile(model)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def forward(run):
        def step():
            with torch.no_grad():
                run(x)
        return step

    def train(run):
        def step():
            opt.zero_grad(set_to_none=True)
            out = run(x)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1])[: target.shape[0]], target)
            loss.backward()
            opt.step()
        return step

    for mode, make_step in (("forward", forward), ("train step", train)):
        result = {"model": name, "mode": mode}
        for label, run in runs:
            step = make_step(run)
            for _ in range(warmup):
                step()
            if host_only:
                # Enough steps per round to amortize the cold caches after each sync.
                result[f"{label}_host_us"] = host_time(step, device, max(repeat, 20)) * 1e6
                continue
            result[f"{label}_ms"] = median_time(step, device, repeat) * 1e3
            result[f"{label}_dispatches"] = dispatches(step, device)
        if not host_only:
            result["speedup"] = result["eager_ms"] / result["compiled_ms"]
            if result["eager_dispatches"]:
                result["dispatch_ratio"] = \
                    result["eager_dispatches"] / result["compiled_dispatches"]
        rows.append(result)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="")
    ap.add_argument("--device", default="vk")
    ap.add_argument("--large", action="store_true", help="GPU-sized models")
    ap.add_argument("--host-only", default="", help=argparse.SUPPRESS)  # the child's output file
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    repeat, warmup = (5, 2) if args.quick else (20, 3)
    big = args.large
    width, channels, dim, seq, batch = (1024, 64, 768, 256, 16) if big else (64, 8, 64, 32, 4)
    models = [
        ("mlp", MLP(width), lambda: torch.randn(batch * 8, width, device=device)),
        ("cnn", CNN(channels), lambda: torch.randn(batch, 3, 32 if big else 16, 32 if big else 16,
                                                   device=device)),
        ("gpt2 block", GPT2Block(dim, 12 if big else 4, seq),
         lambda: torch.randn(batch, seq, dim, device=device)),
        ("gpt2 drop", GPT2Block(dim, 12 if big else 4, seq, dropout=0.1),
         lambda: torch.randn(batch, seq, dim, device=device)),
        ("gpt2 x4", GPT2Stack(dim, 12 if big else 4, seq, 4),
         lambda: torch.randn(batch, seq, dim, device=device)),
    ]
    rows = []
    for name, model, make_input in models:
        torch._dynamo.reset()
        rows += measure(name, model.to(device), make_input, device, repeat, warmup,
                        host_only=bool(args.host_only))
    if args.host_only:
        with open(args.host_only, "w") as f:
            json.dump({f"{r['model']}|{r['mode']}|{label}": r[f"{label}_host_us"]
                       for r in rows for label in ("eager", "compiled", "floor")}, f)
        return
    if device.type == "vk":
        host = host_times_from_child(args)
        for r in rows:
            for label in ("eager", "compiled", "floor"):
                r[f"{label}_host_us"] = host[(r["model"], r["mode"], label)]
    header = f"{'model':<11} {'mode':<10} {'eager ms':>9} {'compiled ms':>11} {'speedup':>7}"
    if device.type == "vk":
        header += (f" {'host us e/c':>15} {'host c/e':>8} {'floor us':>8} {'vk share':>8}"
                   f" {'dispatches e/c':>15} {'ratio':>6}")
    print(f"device: {device}, torch {torch.__version__}")
    print(header)
    for r in rows:
        line = (f"{r['model']:<11} {r['mode']:<10} {r['eager_ms']:>9.2f} {r['compiled_ms']:>11.2f} "
                f"{r['speedup']:>7.2f}")
        if device.type == "vk":
            line += (f" {r['eager_host_us']:>7.0f}/{r['compiled_host_us']:<7.0f}"
                     f" {r['compiled_host_us'] / r['eager_host_us']:>8.2f}"
                     f" {r['floor_host_us']:>8.0f}"
                     f" {r['compiled_host_us'] - r['floor_host_us']:>8.0f}"
                     f" {r['eager_dispatches']:>7}/{r['compiled_dispatches']:<7}"
                     f" {r['dispatch_ratio']:>6.2f}")
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
