"""The parent side of ``python -m torch_vk coverage``: plans the units, runs them in chunks of
ops in worker processes, survives crashes and hangs, shows progress.

A unit is one (op, dtype, check). Workers (``torch_vk.coverage.worker``) append an event per
unit start and result to a file; the parent follows those files, so it always knows which unit
is running. A worker that crashes, hangs (no result for ``--unit-timeout`` seconds: killed) or
loses the device is replaced: the remaining ops of its chunk are re-run one op per process, so
the op that kills a process is identified and recorded as "crashed" (with the exit signal or
timeout and the tail of its stderr), and every other op still gets its own result.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path

VK_DTYPES = ("float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")
DEFAULT_DTYPES = ("float32", "float16", "bfloat16")


# ---------------------------------------------------------------------------------------------
# Planning (in the parent: imports op_db, never runs an op)


@dataclass
class Plan:
    units: list[tuple[str, str, str]]          # (op, dtype, check) to run
    static: dict[tuple[str, str, str], dict]   # records decided without running (skipped)
    ops: list[str]                             # op keys, op_db order
    shape_only: set[str] = field(default_factory=set)


def _matches(key: str, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(key, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def device_dtypes() -> list[str]:
    import torch

    names = list(VK_DTYPES)
    try:
        if torch.vk.is_available() and torch.vk.get_device_properties(0).float64:
            names.insert(0, "float64")
    except Exception:  # pragma: no cover - no device: the run reports the error per unit
        pass
    return names


def make_plan(op_patterns: list[str] | None, dtype_names: list[str], checks: list[str],
              pairs: dict[str, list[str]] | None = None) -> Plan:
    """Units for the ops matching ``op_patterns`` (fnmatch on the key ``name.variant`` or the
    name; None = all) or exactly the (op, dtype) ``pairs``, for ``dtype_names``."""
    from torch_vk.coverage.worker import _import_op_db

    try:
        op_db = _import_op_db()
    except ImportError as exc:
        raise SystemExit(f"torch-vk coverage needs PyTorch's OpInfo database, which could not "
                         f"be imported ({exc}); install its test dependencies: "
                         f"pip install expecttest numpy") from None
    import torch

    from torch_vk.coverage import checks as C

    supported_on_device = set(device_dtypes())
    plan = Plan(units=[], static={}, ops=[])
    used: set[str] = set()
    for op in op_db:
        key = C.op_key(op)
        if pairs is not None:
            if key not in pairs:
                continue
            wanted = pairs[key]
        else:
            if op_patterns and not _matches(key, op.name, op_patterns):
                continue
            used.update(p for p in op_patterns or () if _matches(key, op.name, [p]))
            wanted = dtype_names
        plan.ops.append(key)
        if C.is_shape_only(op):
            plan.shape_only.add(key)
        cpu_dtypes = op.supported_dtypes("cpu")
        for name in wanted:
            dtype = getattr(torch, name)
            if name not in supported_on_device:
                plan.static[(key, name, "sample")] = {
                    "status": "skipped", "message": f"the vk device has no {name}"}
            elif dtype not in cpu_dtypes:
                plan.static[(key, name, "sample")] = {
                    "status": "skipped", "message": f"the op has no {name} on the CPU"}
            else:
                plan.units.extend((key, name, c) for c in C.planned_checks(op, dtype, checks))
    for p in op_patterns or ():
        if p not in used and pairs is None:
            print(f"warning: no OpInfo matches {p!r}", file=sys.stderr)
    if pairs is not None:
        for key in sorted(set(pairs) - set(plan.ops)):
            print(f"warning: {key!r} of the gate list is not in this torch's op_db",
                  file=sys.stderr)
    return plan


# ---------------------------------------------------------------------------------------------
# Progress


class Progress:
    """A one-line bar on a terminal; on anything else one plain line per finished op."""

    def __init__(self, total_units: int, total_ops: int, enabled: bool = True):
        self.total, self.total_ops, self.done, self.ops_done = total_units, total_ops, 0, 0
        self.enabled = enabled
        self.tty = enabled and sys.stdout.isatty()
        self.current = "starting workers"
        self.passed = self.failed = 0
        self._shown = ""
        self.start = time.monotonic()
        self._last = 0.0

    def _bar(self) -> str:
        width = 28
        frac = self.done / self.total if self.total else 1.0
        filled = int(frac * width)
        elapsed = int(time.monotonic() - self.start)
        return (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"{frac * 100:3.0f}% {elapsed // 60}:{elapsed % 60:02d} "
                f"(passed {self.passed}, failed {self.failed})  {self.current}")

    def redraw(self, force: bool = False) -> None:
        if not self.tty:
            return
        now = time.monotonic()
        if force or now - self._last > 0.1:
            self._last = now
            cols = 120
            try:
                cols = os.get_terminal_size().columns
            except OSError:
                pass
            text = self._bar()[: cols - 1]
            if force or text != self._shown:
                self._shown = text
                sys.stdout.write("\r\x1b[K" + text)
                sys.stdout.flush()

    def begin(self, op: str, dtype: str, check: str) -> None:
        self.current = f"{op} {dtype}" + ("" if check == "sample" else f" ({check})")
        self.redraw()

    def unit_done(self, status: str) -> None:
        self.done += 1
        if status == "passed":
            self.passed += 1
        elif status != "skipped":
            self.failed += 1
        self.redraw()

    def op_done(self, op: str, summary: str) -> None:
        self.ops_done += 1
        if self.enabled and not self.tty:
            width = len(str(self.total_ops))
            print(f"[{self.ops_done:>{width}}/{self.total_ops}] {op}: {summary}", flush=True)

    def message(self, text: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            sys.stdout.write("\r\x1b[K")
        print(text, flush=True)
        self.redraw(force=True)

    def close(self) -> None:
        if self.tty:
            sys.stdout.write("\r\x1b[K")
            sys.stdout.flush()


# ---------------------------------------------------------------------------------------------
# Workers


@dataclass
class Job:
    units: list[tuple[str, str, str]]
    isolated: bool
    attempt: int = 0


@dataclass
class Running:
    job: Job
    proc: subprocess.Popen
    events: Path
    log: Path
    offset: int = 0
    ready: bool = False
    started: float = field(default_factory=time.monotonic)
    current: tuple[str, str, str] | None = None
    current_since: float = 0.0
    finished: bool = False
    killed_for: str = ""


def _stderr_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    keep = [line.strip() for line in text if line.strip()][-lines:]
    return " | ".join(keep)[-400:]


def _exit_reason(run: Running) -> str:
    if run.killed_for:
        return run.killed_for
    rc = run.proc.returncode
    if rc is not None and rc < 0:
        try:
            return f"process killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"process killed by signal {-rc}"
    return f"process exited with status {rc}"


class Runner:
    def __init__(self, plan: Plan, *, max_samples: int | None, jobs: int, chunk_size: int,
                 unit_timeout: float, startup_timeout: float = 180.0,
                 progress: Progress | None = None):
        self.plan = plan
        self.max_samples = max_samples
        self.jobs = max(1, jobs)
        self.chunk_size = max(1, chunk_size)
        self.unit_timeout = unit_timeout
        self.startup_timeout = startup_timeout
        self.results: dict[tuple[str, str, str], dict] = dict(plan.static)
        self.suspects: dict[tuple[str, str, str], str] = {}
        self.progress = progress or Progress(len(plan.units), len(plan.ops), enabled=False)
        self.pending_per_op: dict[str, int] = OrderedDict((op, 0) for op in plan.ops)
        for op, _dtype, _check in plan.units:
            self.pending_per_op[op] += 1
        self.tmp = Path(tempfile.mkdtemp(prefix="torch-vk-coverage-"))
        self._count = 0

    # -- results -----------------------------------------------------------------------------

    def _record(self, unit: tuple[str, str, str], record: dict) -> None:
        if unit in self.results:
            return
        if unit in self.suspects and record.get("status") != "crashed":
            record = dict(record)
            record["note"] = (f"its chunk's worker died while running it ({self.suspects[unit]});"
                              f" re-run alone: {record.get('status')}")
        self.results[unit] = record
        self.progress.unit_done(record.get("status", ""))
        if record.get("status") == "crashed":
            op, dtype, check = unit
            self.progress.message(f"crashed: {op} {dtype} {check}: {record.get('message', '')}")
        op = unit[0]
        self.pending_per_op[op] -= 1
        if self.pending_per_op[op] == 0:
            self.progress.op_done(op, self._op_summary(op))

    def _op_summary(self, op: str) -> str:
        from torch_vk.coverage.report import combine

        per_dtype: dict[str, list[str]] = OrderedDict()
        for (o, dtype, _check), rec in self.results.items():
            if o == op:
                per_dtype.setdefault(dtype, []).append(rec["status"])
        return ", ".join(f"{d} {combine(s).replace('_', ' ')}" for d, s in per_dtype.items())

    # -- processes ---------------------------------------------------------------------------

    def _start(self, job: Job) -> Running:
        self._count += 1
        base = self.tmp / f"job{self._count}"
        job_file = base.with_suffix(".json")
        job_file.write_text(json.dumps({"units": job.units, "max_samples": self.max_samples}))
        events, log = base.with_suffix(".events"), base.with_suffix(".log")
        events.touch()
        env = dict(os.environ, TORCH_VK_FALLBACK="error", PYTHONUNBUFFERED="1")
        with open(log, "wb") as log_f:
            proc = subprocess.Popen(
                [sys.executable, "-m", "torch_vk.coverage.worker", str(job_file), str(events)],
                stdin=subprocess.DEVNULL, stdout=log_f, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        return Running(job=job, proc=proc, events=events, log=log)

    def _poll_events(self, run: Running) -> None:
        with open(run.events, "rb") as f:
            f.seek(run.offset)
            data = f.read()
        end = data.rfind(b"\n")
        if end < 0:
            return
        run.offset += end + 1
        for line in data[: end + 1].splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            kind = ev.pop("event", "")
            if kind == "ready":
                run.ready = True
            elif kind == "begin":
                run.current = (ev["op"], ev["dtype"], ev["check"])
                run.current_since = time.monotonic()
                self.progress.begin(*run.current)
            elif kind == "result":
                unit = (ev.pop("op"), ev.pop("dtype"), ev.pop("check"))
                ev.pop("device_lost", None)
                self._record(unit, ev)
                run.current = None
            elif kind == "done":
                run.finished = True

    def _kill(self, run: Running, reason: str) -> None:
        run.killed_for = reason
        try:
            os.killpg(run.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            run.proc.kill()
        run.proc.wait()

    def _check_timeouts(self, run: Running) -> None:
        now = time.monotonic()
        if not run.ready and now - run.started > self.startup_timeout:
            self._kill(run, f"worker did not start within {self.startup_timeout:.0f} s")
        elif run.current and now - run.current_since > self.unit_timeout:
            self._kill(run, f"hang: no result within {self.unit_timeout:.0f} s, process killed")

    def _after_exit(self, run: Running, queue: deque) -> None:
        self._poll_events(run)
        if run.finished and run.proc.returncode == 0:
            return
        reason = _exit_reason(run)
        tail = _stderr_tail(run.log)
        remaining = [u for u in run.job.units if u not in self.results]
        if not remaining:
            return
        current = run.current
        if not run.ready:
            # The worker died before running anything (an import error, no device): once more
            # as it is, then every unit of the job is recorded as crashed (not split per op).
            if run.job.attempt >= 1:
                for unit in remaining:
                    self._record(unit, {"status": "crashed",
                                        "message": f"worker failed to start: {reason}; {tail}"})
                return
            queue.appendleft(Job(remaining, isolated=run.job.isolated, attempt=1))
            return
        if run.job.isolated:
            if current is None and run.proc.returncode == 3:  # device lost, unit recorded
                queue.appendleft(Job(remaining, isolated=True))
                return
            if current is None:
                # Died outside any unit (start-up, or after a device loss): give the op one more
                # process, then record what is left as crashed.
                if run.job.attempt >= 1:
                    for unit in remaining:
                        self._record(unit, {"status": "crashed",
                                            "message": f"{reason} (outside a unit); {tail}"})
                    return
                queue.appendleft(Job(remaining, isolated=True, attempt=run.job.attempt + 1))
                return
            msg = reason + (f"; stderr: {tail}" if tail and not run.killed_for else "")
            self._record(current, {"status": "crashed", "message": msg})
            rest = [u for u in remaining if u != current]
            if rest:
                queue.appendleft(Job(rest, isolated=True))
            return
        # A chunk died: its remaining ops, one process each (the running one first).
        if current is not None:
            self.suspects[current] = reason
        by_op: OrderedDict[str, list] = OrderedDict()
        if current is not None:
            by_op[current[0]] = []
        for unit in remaining:
            by_op.setdefault(unit[0], []).append(unit)
        for units in reversed(list(by_op.values())):
            queue.appendleft(Job(units, isolated=True))
        self.progress.message(
            f"worker died ({reason}) during {' '.join(current) if current else 'start-up'}; "
            f"re-running {len(by_op)} op(s) one per process")

    def run(self) -> dict[tuple[str, str, str], dict]:
        queue: deque[Job] = deque()
        chunk: list[tuple[str, str, str]] = []
        ops_in_chunk: set[str] = set()
        for unit in self.plan.units:
            if unit[0] not in ops_in_chunk and len(ops_in_chunk) >= self.chunk_size:
                queue.append(Job(chunk, isolated=False))
                chunk, ops_in_chunk = [], set()
            chunk.append(unit)
            ops_in_chunk.add(unit[0])
        if chunk:
            queue.append(Job(chunk, isolated=False))
        for job in queue:
            job.isolated = len({u[0] for u in job.units}) == 1
        for op, n in self.pending_per_op.items():
            if n == 0:  # nothing to run (all dtypes skipped at planning)
                self.progress.op_done(op, self._op_summary(op))
        running: list[Running] = []
        interrupted = False
        try:
            while queue or running:
                while queue and len(running) < self.jobs:
                    running.append(self._start(queue.popleft()))
                time.sleep(0.1)
                for run in list(running):
                    self._poll_events(run)
                    if run.proc.poll() is None:
                        self._check_timeouts(run)
                    if run.proc.poll() is not None:
                        running.remove(run)
                        self._after_exit(run, queue)
                self.progress.redraw()
        except KeyboardInterrupt:
            interrupted = True
        finally:
            for run in running:
                self._kill(run, "interrupted")
            self.progress.close()
            if not os.environ.get("TORCH_VK_COVERAGE_KEEP"):
                shutil.rmtree(self.tmp, ignore_errors=True)
        if interrupted:
            print(f"interrupted: {len(self.plan.units) - self.progress.done} units not run; "
                  "reporting the others", flush=True)
        return self.results
