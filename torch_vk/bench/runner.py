"""Runs the cases of ``python -m torch_vk bench`` and turns each into a result row.

A row (a JSON-ready dict) holds, per target label ("vk", "cpu", "cuda", "vk_eager"):
``times_ms`` (median milliseconds per call), ``throughput`` (in the case's unit), and
``ratios`` = that baseline's time / vk's time for every label other than "vk" (> 1: vk is
faster). A target that raised is in ``errors`` instead, one skipped in ``skipped``; neither
has a time or a ratio. ``checks`` says, per non-CPU target, whether its first result matched
the CPU's (``"ok"``) or not (``"mismatch ..."``); ``vk_fallback_calls`` counts the ops of the
vk targets that ran on the CPU fallback.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import sys
import time
from typing import Any, TextIO

import torch

from torch_vk.bench.cases import UNIT_SCALE, VK, Case, Target, dtype_name
from torch_vk.bench.timing import sync, time_per_call

__all__ = ["Settings", "ProgressBar", "run_case", "relative_error", "environment",
           "fallback_calls"]


@dataclasses.dataclass(frozen=True)
class Settings:
    """How long each target of a case is timed.

    ``seconds_per_target`` bounds the timing of one target (after its first, checked call);
    a sample lasts at least ``min_sample_s`` (back-to-back calls), ``samples`` samples at most.
    A larger size of an op whose call is estimated to take more than ``max_call_s`` on a
    target (from the smaller size's time) is skipped on that target."""

    seconds_per_target: float
    min_sample_s: float
    samples: int
    warmup: int
    max_call_s: float

    @classmethod
    def for_run(cls, quick: bool) -> "Settings":
        if quick:
            return cls(seconds_per_target=0.12, min_sample_s=0.002, samples=3, warmup=1,
                       max_call_s=0.5)
        return cls(seconds_per_target=2.0, min_sample_s=0.01, samples=7, warmup=1, max_call_s=1.5)


class ProgressBar:
    """A one-line text bar on stderr, ``[######......] 7/20 0:12 matmul 64x64 (vk)``, redrawn
    in place. It draws only when ``enabled`` and the stream is a terminal; otherwise every
    method does nothing, so output captured in a file or a pipe stays clean."""

    WIDTH = 30

    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.active = enabled and self.stream.isatty()
        self.total = max(total, 1)
        self.done = 0
        self.started = time.monotonic()

    def show(self, current: str) -> None:
        """Redraws the bar with ``current`` (what runs now) after it."""
        if not self.active:
            return
        filled = self.WIDTH * self.done // self.total
        seconds = int(time.monotonic() - self.started)
        text = (f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total} "
                f"{seconds // 60}:{seconds % 60:02d} {current}")
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError):
            columns = 100
        self.stream.write("\r\x1b[K" + text[: columns - 1])
        self.stream.flush()

    def advance(self) -> None:
        self.done += 1

    def close(self) -> None:
        """Erases the bar (the table is printed after it)."""
        if self.active:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def relative_error(result: torch.Tensor, reference: torch.Tensor) -> float:
    """max |result - reference| / max |reference| over the finite values (inf when the shapes,
    the NaN positions or the infinities differ)."""
    if result.shape != reference.shape:
        return math.inf
    result, reference = result.double(), reference.double()
    if not torch.equal(torch.isnan(result), torch.isnan(reference)):
        return math.inf
    finite = torch.isfinite(reference)
    if not torch.equal(result[~finite].nan_to_num(), reference[~finite].nan_to_num()):
        return math.inf
    if not finite.any():
        return 0.0
    scale = max(reference[finite].abs().max().item(), 1e-30)
    return (result[finite] - reference[finite]).abs().max().item() / scale


def fallback_calls() -> int:
    """Calls of ops that ran on the CPU fallback so far in this process."""
    import torch_vk

    return sum(torch_vk.stats().get("fallbacks", {}).values())


def _describe(exc: BaseException) -> str:
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first_line}"[:300]


@dataclasses.dataclass
class _Measurement:
    seconds: float
    first_result: torch.Tensor
    fallback_calls: int


def _measure(case: Case, target: Target, settings: Settings) -> _Measurement:
    """Builds the case on the target, runs it once (its result, copied to the CPU as float32,
    is the one checked), then times it."""
    device = torch.device(target.device)
    fallbacks_before = fallback_calls() if device.type == "vk" else 0
    call = case.build(device, target.compiled)
    first = call().detach().to("cpu", torch.float32, copy=True)
    sync(device)
    seconds = time_per_call(call, device, settings.seconds_per_target, settings.min_sample_s,
                            settings.samples, warmup=settings.warmup)
    fallbacks = fallback_calls() - fallbacks_before if device.type == "vk" else 0
    del call  # free the case's tensors before the next target allocates its own
    gc.collect()
    return _Measurement(seconds, first, fallbacks)


def _ordered(targets: tuple[Target, ...]) -> list[Target]:
    """The CPU first: its first result is the reference of the others' checks."""
    return sorted(targets, key=lambda t: t.label != "cpu")


def run_case(case: Case, settings: Settings, progress: ProgressBar,
             history: dict[tuple[str, str, str], tuple[float, float]]) -> dict[str, Any]:
    """Measures ``case`` on each of its targets and returns its row (see the module docstring).

    ``history`` maps (op, dtype, label) to (seconds per call, work per call) of the last case
    of that op and dtype measured on that target; this case's measurements are added to it.
    A target whose call would take longer than ``settings.max_call_s`` by that history (its
    time scaled by the ratio of the works) is skipped. An exception on one target is recorded
    in the row; the other targets still run."""
    dtype = dtype_name(case.dtype)
    row: dict[str, Any] = {
        "suite": case.suite, "op": case.op, "name": case.name, "dtype": dtype,
        "sizes": dict(case.sizes), "x": case.x, "x_label": case.x_label, "work": case.work,
        "unit": case.unit, "times_ms": {}, "throughput": {}, "ratios": {}, "checks": {},
        "errors": {}, "skipped": {}, "vk_fallback_calls": 0,
    }
    first_results: dict[str, torch.Tensor] = {}
    for target in _ordered(case.targets):
        progress.show(f"{case.suite}: {case.name} {dtype} ({target.label})")
        key = (case.op, dtype, target.label)
        if key in history:
            seconds, work = history[key]
            estimate = seconds * case.work / work
            if estimate > settings.max_call_s:
                row["skipped"][target.label] = (f"about {estimate:.1f} s per call, estimated "
                                                f"from the smaller size")
                progress.advance()
                continue
        try:
            measured = _measure(case, target, settings)
        except Exception as exc:  # a failing target must not end the run: record it
            row["errors"][target.label] = _describe(exc)
        else:
            row["times_ms"][target.label] = measured.seconds * 1e3
            row["throughput"][target.label] = case.work / measured.seconds / UNIT_SCALE[case.unit]
            row["vk_fallback_calls"] += measured.fallback_calls
            first_results[target.label] = measured.first_result
            history[key] = (measured.seconds, case.work)
        progress.advance()
    times = row["times_ms"]
    if VK in times:
        row["ratios"] = {label: t / times[VK] for label, t in times.items() if label != VK}
    reference = first_results.get("cpu")
    for label, result in first_results.items():
        if label == "cpu":
            continue
        if reference is None:
            row["checks"][label] = "not checked (no CPU result)"
            continue
        error = relative_error(result, reference)
        row["checks"][label] = ("ok" if error <= case.tolerance else
                                f"mismatch (max relative error {error:.2g} > {case.tolerance:g})")
    return row


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def environment(with_cuda: bool) -> dict[str, Any]:
    """Versions, the vk device's properties (``torch.vk.get_device_properties(0)``, bytes as
    hex strings), the CPU and, with ``with_cuda``, the CUDA device: the context a run's
    numbers belong to."""
    import platform

    import torch_vk

    info: dict[str, Any] = {
        "torch_vk_version": torch_vk.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "vulkan_loader": torch_vk._C._loader_version() or "",
        "fallback_mode": torch_vk.fallback_mode(),
        "vk_device_count": torch.vk.device_count(),
        "vk_device": {key: value.hex() if isinstance(value, bytes) else value
                      for key, value in torch.vk.get_device_properties(0).as_dict().items()},
        "cpu": {"name": _cpu_model(), "cores": os.cpu_count(),
                "torch_threads": torch.get_num_threads(),
                "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
    }
    if with_cuda:
        props = torch.cuda.get_device_properties(0)
        info["cuda"] = {"name": props.name, "total_memory": props.total_memory,
                        "capability": f"{props.major}.{props.minor}",
                        "cuda_version": torch.version.cuda,
                        "float32_matmul_precision": torch.get_float32_matmul_precision()}
    return info
