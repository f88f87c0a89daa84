"""Runs multi-rank jobs for the distributed tests: N processes of one worker script, bound to
127.0.0.1, each bounded by a timeout; the whole process group of a job is killed afterwards,
whatever happened. A job fails when any rank exits non-zero (its output is in the message).

Workers (tests/distributed/workers/*.py) read the usual torchrun variables (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and TVK_TEST_PORTS (a few more free ports for workers
that create several process groups or stores).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKERS = HERE / "workers"
REPO = HERE.parent.parent


def free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TORCH_VK_VALIDATION", "1")
    env["TORCH_VK_FALLBACK"] = "error"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(WORKERS), env.get("PYTHONPATH", "")])
    env["GLOO_SOCKET_IFNAME"] = env.get("TVK_TEST_GLOO_IFNAME", "lo")
    env["OMP_NUM_THREADS"] = "1"
    # torchrun / Ray / TorchTitan must not pick a CUDA device on machines that have one.
    env["CUDA_VISIBLE_DEVICES"] = ""
    env.pop("TORCHELASTIC_RUN_ID", None)
    if extra:
        env.update(extra)
    return env


@dataclass
class RankResult:
    rank: int
    returncode: int | None
    output: str


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_job(worker: str, world_size: int, args: list[str] | None = None,
            env: dict[str, str] | None = None, timeout: float = 180.0,
            expect_returncodes: dict[int, int] | None = None) -> list[RankResult]:
    """Starts `world_size` ranks of workers/<worker> and waits for them (at most `timeout`
    seconds for the whole job). Raises AssertionError naming the ranks that failed."""
    script = WORKERS / worker
    master, *extra_ports = free_ports(12)
    procs, logs = [], []
    for rank in range(world_size):
        rank_env = base_env(env)
        rank_env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
                        LOCAL_WORLD_SIZE=str(world_size), GROUP_RANK="0",
                        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(master),
                        TVK_TEST_PORTS=",".join(map(str, extra_ports)))
        log = tempfile.TemporaryFile(mode="w+")
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, str(script), *(args or [])], env=rank_env,
                                      stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO),
                                      start_new_session=True))
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            left = deadline - time.monotonic()
            try:
                p.wait(timeout=max(left, 0.1))
            except subprocess.TimeoutExpired:
                break
    finally:
        for p in procs:
            _kill_group(p)
    results = []
    for rank, (p, log) in enumerate(zip(procs, logs)):
        log.seek(0)
        results.append(RankResult(rank, p.returncode, log.read()))
        log.close()
    expected = expect_returncodes or {}
    bad = [r for r in results if r.returncode != expected.get(r.rank, 0)]
    if bad:
        details = "\n".join(f"---- rank {r.rank} (exit {r.returncode}) ----\n{r.output[-6000:]}"
                            for r in bad)
        raise AssertionError(f"{worker} with {world_size} ranks failed:\n{details}")
    return results


def run_command(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 180.0,
                cwd: str | None = None) -> subprocess.CompletedProcess:
    """Runs one command (torchrun, ip netns exec ...) in its own process group, killed after
    `timeout` seconds; raises AssertionError with its output when it fails."""
    proc = subprocess.Popen(cmd, env=base_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=cwd or str(REPO),
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out = proc.stdout.read() if proc.stdout else ""
        raise AssertionError(f"{' '.join(cmd)} timed out after {timeout}s:\n{out[-6000:]}")
    finally:
        _kill_group(proc)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{out[-8000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, "")
