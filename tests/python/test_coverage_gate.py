"""The native-coverage regression gate and the crash survival of ``python -m torch_vk coverage``.

``tests/coverage/passing.json`` lists the (OpInfo op, dtype) pairs that pass natively on vk
(every sample runs without the CPU fallback and matches the CPU). Each must keep passing.
Landing a kernel adds its pairs: ``python -m torch_vk coverage --ops NAME --update-gate``.

The harness runs in child processes (it is itself crash-proof: a dying op is recorded as
"crashed"), so a crash cannot take pytest down with it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "tests" / "coverage" / "passing.json"
FAILED = ("mismatch", "not_implemented", "error", "crashed")


def _coverage(tmp_path, *args, env=None, timeout=240):
    """Runs ``python -m torch_vk coverage ARGS`` in tmp_path; returns (process, JSON results)."""
    if not torch.vk.is_available():
        pytest.skip("no Vulkan device")
    out = tmp_path / "coverage.json"
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "torch_vk", "coverage", *args, "--json", str(out),
         "--markdown", "", "--no-progress"],
        cwd=tmp_path, env=full_env, capture_output=True, text=True, timeout=timeout)
    if not out.exists():
        pytest.fail(f"coverage wrote no results (exit {proc.returncode}):\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc, json.loads(out.read_text())


def test_gate_list_is_well_formed():
    gate = json.loads(GATE.read_text())
    assert gate["pairs"], "the gate list is empty"
    for op, dtypes in gate["pairs"].items():
        assert dtypes == sorted(set(dtypes)), op
        assert all(isinstance(d, str) and hasattr(torch, d) for d in dtypes), op


def test_gate_pairs_still_pass(tmp_path):
    """Every gate pair, with the gate's settings, in one worker process. The timeout only
    guards against a hang: the run grows with the gate (~2-4 min on a 2-core lavapipe host)."""
    proc, result = _coverage(tmp_path, "--gate", "--gate-file", str(GATE), "--jobs", "1",
                             "--chunk-size", "100000", timeout=1200)
    gate = json.loads(GATE.read_text())
    pairs = {(p["op"], p["dtype"]): p for p in result["pairs"]}
    regressed, absent = [], []
    for op, dtypes in gate["pairs"].items():
        for dtype in dtypes:
            p = pairs.get((op, dtype))
            if p is None:
                absent.append(f"{op} {dtype}")  # not in this torch version's op_db
            elif p["status"] in FAILED:
                regressed.append(f"{op} {dtype}: {p['status']} ({p.get('check', '')}): "
                                 f"{p.get('message', '')}")
    if absent:
        import warnings

        warnings.warn(f"{len(absent)} gate pair(s) not in this torch's op_db: "
                      f"{', '.join(absent[:20])}")
    assert not regressed, (f"{len(regressed)} (op, dtype) pair(s) of {GATE.name} no longer "
                           "pass natively on vk:\n  " + "\n  ".join(regressed))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.rstrip().splitlines()[-1].endswith(" failed")


def test_crash_and_hang_are_recorded_and_the_run_goes_on(tmp_path):
    """A worker that aborts or hangs on one op: that op is "crashed", the others still run."""
    proc, result = _coverage(
        tmp_path, "--ops", "abs,add,neg,mul", "--dtypes", "float32", "--unit-timeout", "10",
        "--jobs", "2", env={"TORCH_VK_COVERAGE_INJECT": "crash:add,hang:neg"})
    status = {p["op"]: p for p in result["pairs"]}
    assert status["add"]["status"] == "crashed", status["add"]
    assert "SIGABRT" in status["add"]["message"]
    assert status["neg"]["status"] == "crashed", status["neg"]
    assert "hang" in status["neg"]["message"]
    assert status["abs"]["status"] == "passed", status["abs"]
    assert status["mul"]["status"] == "passed", status["mul"]
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last == "2 passed, 2 failed", proc.stdout[-2000:]
