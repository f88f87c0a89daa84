"""The examples run end to end on "vk" with no CPU fallback (TORCH_VK_FALLBACK=error).

examples/train_gpt.py runs in a subprocess, as a user would start it: a short run must lower the
loss, leave a checkpoint (and a loss-curve PNG when matplotlib is installed), and a --resume run
must continue from the checkpoint's step. The sizes are the script's --quick ones, shortened
further so that both runs together stay within about a minute on lavapipe.
"""
import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest
import torch

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN_GPT = os.path.join(REPO_ROOT, "examples", "train_gpt.py")

# The first run stops (as if interrupted) at FIRST_RUN_STEPS of a TOTAL_STEPS schedule; the
# resumed run finishes the schedule.
FIRST_RUN_STEPS = 16
TOTAL_STEPS = 20
# Short everything that does not test training itself: the corpus, evaluation, the sample.
SMALL_RUN = ["--quick", "--max-chars", "60000", "--eval-batches", "1", "--sample-chars", "16",
             "--warmup-steps", "4", "--log-every", "4"]


def run_example(script, args, timeout=300):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["TORCH_VK_FALLBACK"] = "error"  # every op must have a native kernel
    # TORCH_VK_VALIDATION is inherited: under the validation layer the script runs with it too.
    result = subprocess.run([sys.executable, script, *args], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (
        f"{os.path.basename(script)} {' '.join(args)} exited with {result.returncode}\n"
        f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}")
    # The validation layer's messenger prints every error it records with this prefix.
    validation_errors = [line for line in result.stderr.splitlines()
                         if line.startswith("torch-vk validation:")]
    assert not validation_errors, "\n".join(validation_errors[:5])
    return result


def test_train_gpt_learns_checkpoints_and_resumes(tmp_path):
    out_dir = tmp_path / "gpt"
    checkpoint = out_dir / "ckpt.pt"
    plot = out_dir / "loss.png"
    first_summary = tmp_path / "first.json"
    first = run_example(TRAIN_GPT, SMALL_RUN + [
        "--steps", str(TOTAL_STEPS), "--stop-after", str(FIRST_RUN_STEPS), "--ckpt-every", "8",
        "--eval-every", "8", "--out-dir", str(out_dir), "--summary-json", str(first_summary)])

    assert f"stopped at step {FIRST_RUN_STEPS} of {TOTAL_STEPS}" in first.stdout
    summary = json.loads(first_summary.read_text())
    assert summary["device"].startswith("vk")
    assert summary["amp"].startswith("autocast float16"), "AMP (float16) is the default"
    assert summary["fallbacks"] == {}
    assert summary["start_step"] == 0 and summary["steps"] == FIRST_RUN_STEPS
    assert summary["uniform_loss"] == pytest.approx(math.log(summary["vocab_size"]))
    # Training lowered the loss: on held-out text compared with the untrained model (which is
    # close to the uniform guess), and on the training batches compared with the first ones.
    assert summary["initial_val_loss"] == pytest.approx(summary["uniform_loss"], abs=0.5)
    assert summary["final_val_loss"] < summary["initial_val_loss"] - 0.3
    assert summary["final_train_loss"] < summary["first_train_loss"]
    assert checkpoint.is_file()
    if importlib.util.find_spec("matplotlib") is not None:
        assert plot.is_file() and plot.stat().st_size > 0
    else:
        assert not plot.exists()

    saved = torch.load(checkpoint, map_location="cpu")
    assert saved["step"] == FIRST_RUN_STEPS
    for key in ("model", "optimizer", "scaler", "scheduler", "rng", "history", "vocab"):
        assert key in saved, key
    assert saved["scaler"], "float16 AMP saves a GradScaler state"
    assert saved["rng"]["vk"] is not None

    resumed_summary = tmp_path / "resumed.json"
    resumed = run_example(TRAIN_GPT, SMALL_RUN + [
        "--steps", str(TOTAL_STEPS), "--ckpt-every", "8", "--eval-every", "8",
        "--out-dir", str(out_dir), "--resume", "--summary-json", str(resumed_summary)])
    summary2 = json.loads(resumed_summary.read_text())
    assert summary2["start_step"] == FIRST_RUN_STEPS
    assert summary2["steps"] == TOTAL_STEPS
    assert f"steps {FIRST_RUN_STEPS}..{TOTAL_STEPS}" in resumed.stdout
    assert summary2["fallbacks"] == {}
    # The resumed run extends the first one's history instead of starting a new one.
    first_history_steps = [step for step, _ in summary["history"]["train"]]
    resumed_history_steps = [step for step, _ in summary2["history"]["train"]]
    assert resumed_history_steps[:len(first_history_steps)] == first_history_steps
    assert resumed_history_steps[-1] == TOTAL_STEPS
    assert torch.load(checkpoint, map_location="cpu")["step"] == TOTAL_STEPS
