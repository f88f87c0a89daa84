"""`python -m torch_vk bench` end to end, as a user runs it: a quick run of every suite in a
subprocess (outside the checkout, so nothing from benchmarks/ can be imported), then its JSON,
its table and its plots. The numbers themselves are not checked (they are the machine's), only
that they are there, positive and consistent: every ratio is the baseline's time over vk's.
In-process tests cover what a healthy run never shows: a target that raises, a wrong result,
a size skipped as too slow, and the argument and progress-bar contracts.
"""
import json
import math
import os
import struct
import subprocess
import sys

import pytest
import torch

import torch_vk
from torch_vk import __main__ as cli
from torch_vk.bench import parse_suites
from torch_vk.bench.cases import UNIT_SCALE, Case, targets_for
from torch_vk.bench.report import format_tables
from torch_vk.bench.runner import ProgressBar, Settings, relative_error, run_case

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(torch_vk.__file__)))
KERNEL_OPS = {"add", "softmax", "layer_norm", "matmul", "conv2d", "sdpa"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height) from the IHDR chunk; fails unless the file is a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert head[12:16] == b"IHDR", f"{path} has no IHDR chunk first"
    return struct.unpack(">II", head[16:24])


def run_quick_bench(tmp_path):
    """One quick run of all three suites; returns (JSON document, stdout, plot directory)."""
    results, plots = tmp_path / "bench.json", tmp_path / "plots"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [PACKAGE_PARENT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    # TORCH_VK_VALIDATION is inherited: under the validation layer the run uses it too.
    command = [sys.executable, "-m", "torch_vk", "bench", "--quick", "--json", str(results),
               "--plot", str(plots), "--no-progress", "--suite", "kernels,models,compile"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, (f"exit status {done.returncode}\n--- stdout\n"
                                  f"{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
    validation_errors = [line for line in done.stderr.splitlines()
                         if line.startswith("torch-vk validation:")]
    assert not validation_errors, "\n".join(validation_errors[:5])
    with open(results) as f:
        return json.load(f), done.stdout, plots


def check_document(document):
    assert document["tool"] == "python -m torch_vk bench"
    assert document["quick"] is True and document["interrupted"] is False
    assert document["suites"] == ["kernels", "models", "compile"]
    assert document["torch_version"] and document["torch_vk_version"] == torch_vk.__version__
    assert document["vk_device"]["name"] and document["vk_device"]["driver_name"]
    assert document["cpu"]["torch_threads"] >= 1
    assert "ratio" in document and document["duration_s"] > 0
    assert {case["suite"] for case in document["cases"]} == {"kernels", "models", "compile"}


def check_times_and_ratios(case):
    name = f"{case['suite']}: {case['name']} {case['dtype']}"
    assert not case["errors"] and not case["skipped"], (name, case["errors"], case["skipped"])
    times = case["times_ms"]
    assert times["vk"] > 0 and times["cpu"] > 0, name
    assert set(case["ratios"]) == set(times) - {"vk"}, name
    for label, ratio in case["ratios"].items():
        assert ratio == pytest.approx(times[label] / times["vk"], rel=1e-12), (name, label)
    for label, rate in case["throughput"].items():
        expected = case["work"] / (times[label] / 1e3) / UNIT_SCALE[case["unit"]]
        assert rate == pytest.approx(expected, rel=1e-9), (name, label)
    # Every non-CPU result was compared with the CPU's, and matched.
    assert set(case["checks"]) == set(times) - {"cpu"}, name
    assert all(status == "ok" for status in case["checks"].values()), (name, case["checks"])
    assert case["dtype"] and case["sizes"] and math.isfinite(case["x"]), name


def check_suite_contents(cases):
    kernels = [case for case in cases if case["suite"] == "kernels"]
    assert {case["op"] for case in kernels} == KERNEL_OPS
    for op in KERNEL_OPS:  # a few sizes per op: the throughput plots have points
        assert len({case["x"] for case in kernels if case["op"] == op}) >= 2, op
    assert {case["dtype"] for case in kernels if case["op"] == "matmul"} == \
        {"float32", "bfloat16", "float16"}
    models = {case["op"] for case in cases if case["suite"] == "models"}
    assert {"mlp train step", "gpt train step", "cnn train step"} <= models
    for case in cases:
        if case["suite"] == "compile":  # compiled vk against eager vk
            assert case["times_ms"]["vk_eager"] > 0 and "vk_eager" in case["ratios"]


def check_table(stdout, cases):
    assert "ratio = baseline time / vk time" in stdout
    assert "cpu/vk" in stdout and "vk_eager/vk" in stdout
    for case in cases:
        assert case["name"] in stdout


def check_plots(paths, directory):
    expected = {f"throughput_{op}.png" for op in KERNEL_OPS} | {"model_step_times.png",
                                                                 "compile_step_times.png"}
    assert {os.path.basename(path) for path in paths} == expected
    assert {p.name for p in directory.iterdir()} == expected
    for path in paths:
        width, height = png_size(path)
        assert width > 100 and height > 100, path


def test_quick_run_of_every_suite(tmp_path):
    """One subprocess run (a single test, so that pytest-xdist cannot run it twice)."""
    document, stdout, plots = run_quick_bench(tmp_path)
    check_document(document)
    for case in document["cases"]:
        check_times_and_ratios(case)
    check_suite_contents(document["cases"])
    check_table(stdout, document["cases"])
    check_plots(document["plots"], plots)


def test_unknown_suite_is_refused(capsys):
    assert cli.main(["bench", "--suite", "kernels,nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert parse_suites("compile, kernels,kernels") == ["kernels", "compile"]


def test_progress_bar_stays_off_a_non_terminal(tmp_path):
    with open(tmp_path / "progress.txt", "w") as stream:
        bar = ProgressBar(3, enabled=True, stream=stream)
        bar.show("matmul (vk)")
        bar.advance()
        bar.close()
    assert (tmp_path / "progress.txt").read_text() == ""


def test_relative_error_catches_wrong_results():
    reference = torch.tensor([1.0, -4.0, float("nan"), float("inf")])
    assert relative_error(reference.clone(), reference) == 0.0
    assert relative_error(reference + torch.tensor([0.0, 0.004, 0.0, 0.0]),
                          reference) == pytest.approx(1e-3, rel=1e-4)
    assert relative_error(torch.tensor([1.0, -4.0, 0.0, float("inf")]), reference) == math.inf
    assert relative_error(torch.tensor([1.0, -4.0, float("nan"), 1.0]), reference) == math.inf
    assert relative_error(reference[:2], reference) == math.inf


def synthetic_case(build):
    return Case("kernels", "probe", "probe n=4", torch.float32, {"n": 4}, 4, "elements", 16.0,
                "GB/s", build, targets_for("kernels", with_cuda=False))


def test_a_failing_target_is_recorded_and_the_others_still_run():
    def build(device, compiled):
        if device.type == "vk":
            raise RuntimeError("no kernel for this\nsecond line")
        return lambda: torch.ones(4, device=device)

    row = run_case(synthetic_case(build), Settings.for_run(quick=True), ProgressBar(2), {})
    assert row["errors"] == {"vk": "RuntimeError: no kernel for this"}
    assert set(row["times_ms"]) == {"cpu"} and row["ratios"] == {}
    assert "vk error: RuntimeError: no kernel for this" in format_tables([row])


def test_a_wrong_vk_result_is_marked():
    def build(device, compiled):
        value = 2.0 if device.type == "vk" else 1.0
        return lambda: torch.full((4,), value, device=device)

    row = run_case(synthetic_case(build), Settings.for_run(quick=True), ProgressBar(2), {})
    assert row["checks"]["vk"].startswith("mismatch"), row["checks"]
    assert "MISMATCH vk" in format_tables([row])


def test_sizes_estimated_too_slow_are_skipped():
    case = synthetic_case(lambda device, compiled: (lambda: torch.ones(4, device=device)))
    history = {("probe", "float32", "vk"): (1.0, 1.0)}  # 1 s for 1 unit: 16 s for this case
    row = run_case(case, Settings.for_run(quick=True), ProgressBar(2), history)
    assert "vk" in row["skipped"] and "cpu" in row["times_ms"] and not row["ratios"]
