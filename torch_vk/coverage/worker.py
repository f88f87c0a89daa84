"""Coverage worker: ``python -m torch_vk.coverage.worker JOB.json EVENTS.jsonl``.

Runs the units listed in JOB.json (``{"units": [[op_key, dtype, check], ...],
"max_samples": n}``) with ``TORCH_VK_FALLBACK=error`` and appends one JSON line per event to
EVENTS.jsonl, flushed at once, so that the parent sees what is running when the process
crashes or hangs:

    {"event": "ready"}
    {"event": "begin", "op": ..., "dtype": ..., "check": ...}
    {"event": "result", "op": ..., "dtype": ..., "check": ..., "status": ..., ...}
    {"event": "done"}

Exit status 0 after "done"; 3 after a device loss (the parent runs the rest elsewhere).

For the tests of the harness itself, ``TORCH_VK_COVERAGE_INJECT="crash:OP,hang:OP"`` makes the
worker abort (SIGABRT) or sleep when it begins a unit of OP.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings


def _import_op_db():
    """``torch_vk`` first: common_device_type registers PrivateUse1 tests only if the backend
    exists when it is imported."""
    os.environ["TORCH_VK_FALLBACK"] = "error"
    import torch_vk

    torch_vk.set_fallback_mode("error")
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def main(argv: list[str]) -> int:
    job_path, events_path = argv[0], argv[1]
    with open(job_path) as f:
        job = json.load(f)
    events = open(events_path, "a", buffering=1)

    def emit(**fields):
        events.write(json.dumps(fields) + "\n")
        events.flush()

    warnings.simplefilter("ignore")
    op_db = _import_op_db()
    import torch

    from torch_vk.coverage import checks

    ops = {checks.op_key(op): op for op in op_db}
    import torch_vk

    def validation_errors() -> int:
        if not torch_vk._C._validation_enabled():
            return 0
        try:
            torch.vk.synchronize()
        except Exception:
            pass
        return int(torch_vk._C._validation_error_count())

    inject = dict(reversed(item.split(":", 1)) for item in
                  os.environ.get("TORCH_VK_COVERAGE_INJECT", "").split(",") if ":" in item)
    emit(event="ready")
    max_samples = job.get("max_samples")
    for key, dtype_name, check in job["units"]:
        emit(event="begin", op=key, dtype=dtype_name, check=check)
        if inject.get(key) == "crash":
            os.abort()
        if inject.get(key) == "hang":
            time.sleep(3600)
        op = ops.get(key)
        if op is None:
            record = {"status": "skipped", "message": f"no OpInfo named {key!r}"}
        else:
            before = validation_errors()
            record = checks.run_unit(op, getattr(torch, dtype_name), check, max_samples)
            new = validation_errors() - before
            if new > 0:  # the Vulkan validation layer (TORCH_VK_VALIDATION=1) complained
                last = torch_vk._C._validation_messages()[-1]
                record["status"] = "error"
                record["message"] = checks._one_line(
                    f"{new} Vulkan validation error(s): {last}")
        emit(event="result", op=key, dtype=dtype_name, check=check, **record)
        if record.get("device_lost"):
            events.close()
            return 3
    emit(event="done")
    events.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
