"""Helpers shared by the multi-rank workers: a table of named checks run in one process group,
deterministic per-rank inputs, exact comparison with the CPU, and the exit protocol (exit 1
after printing every failed check; a Vulkan validation error is a failure too)."""

from __future__ import annotations

import datetime
import faulthandler
import os
import sys
import traceback

import torch
import torch.distributed as dist

import torch_vk  # noqa: F401

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
PORTS = [int(p) for p in os.environ.get("TVK_TEST_PORTS", "").split(",") if p]
TIMEOUT = datetime.timedelta(seconds=float(os.environ.get("TVK_TEST_PG_TIMEOUT", "60")))
# A rank still running after this long prints every thread's stack and exits (the launcher's
# own timeout would kill it without a word).
faulthandler.enable()
faulthandler.dump_traceback_later(float(os.environ.get("TVK_TEST_HANG_DUMP", "150")), exit=True)


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.count = 0

    def run(self, name: str, fn, *args, **kwargs) -> None:
        self.count += 1
        try:
            fn(*args, **kwargs)
        except Exception:
            self.failures.append(f"[rank {RANK}] {name}:\n{traceback.format_exc()}")

    def finish(self) -> None:
        if torch.vk.is_available():
            torch.vk.synchronize()
        errors = torch_vk._C._validation_error_count()
        if errors:
            self.failures.append(f"[rank {RANK}] {errors} Vulkan validation error(s):\n" +
                                 "\n".join(torch_vk._C._validation_messages()[-5:]))
        for f in self.failures:
            print(f, file=sys.stderr)
        print(f"[rank {RANK}] {self.count - len(self.failures)}/{self.count} checks passed",
              flush=True)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(1 if self.failures else 0)


def make_input(shape, dtype: torch.dtype, salt: int, rank: int = RANK) -> torch.Tensor:
    """A CPU tensor that differs per rank and per salt; small integers for integer dtypes."""
    g = torch.Generator().manual_seed(1000 * rank + 7 * salt + 1)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 10, shape, generator=g).to(dtype)
    if not dtype.is_floating_point:
        return torch.randint(-5, 6, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


def same(got, ref, what: str = "") -> None:
    """Exact equality (bits of floats, NaN == NaN), shapes and dtypes included."""
    got = [t.detach().cpu() for t in (got if isinstance(got, (list, tuple)) else [got])]
    ref = [t.detach().cpu() for t in (ref if isinstance(ref, (list, tuple)) else [ref])]
    assert len(got) == len(ref), f"{what}: {len(got)} results, expected {len(ref)}"
    for i, (g, r) in enumerate(zip(got, ref)):
        torch.testing.assert_close(g, r, rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m: f"{what} [{i}]: {m}")


def init(backend: str | None = "vkgloo", **kwargs) -> None:
    kwargs.setdefault("timeout", TIMEOUT)
    if backend is None:
        dist.init_process_group(**kwargs)
    else:
        dist.init_process_group(backend, **kwargs)
