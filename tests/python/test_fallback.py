"""The visible CPU fallback: warn once per op (default), silent, error; counted per op."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import torch_vk

# aten::cumsum has no native kernel yet (the op library grows in later work): an op that is
# not native and whose result is easy to check. Counts are keyed by overload name.
OP = "aten::cumsum"


def run_op():
    x = torch.arange(5, dtype=torch.float32).to("vk")
    return torch.cumsum(x, 0)


def test_warn_mode_warns_once_and_computes():
    torch_vk.set_fallback_mode("warn")
    torch_vk.reset_stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = run_op()
        run_op()
    assert y.device.type == "vk"
    assert torch.equal(y.cpu(), torch.tensor([0.0, 1.0, 3.0, 6.0, 10.0]))
    fallback_warnings = [w for w in caught if "cumsum" in str(w.message)]
    assert len(fallback_warnings) <= 1  # once per op per process
    counts = torch_vk.stats()["fallbacks"]
    assert sum(n for name, n in counts.items() if name.startswith(OP)) >= 2, counts


def test_error_mode_raises_not_implemented():
    torch_vk.set_fallback_mode("error")
    try:
        with pytest.raises(NotImplementedError, match="cumsum"):
            run_op()
    finally:
        torch_vk.set_fallback_mode("warn")


def test_silent_mode_from_environment():
    env = dict(os.environ, TORCH_VK_FALLBACK="silent")
    code = ("import warnings, torch\nwarnings.simplefilter('error')\n"
            "x = torch.arange(4.).to('vk')\nprint(torch.cumsum(x, 0).cpu().tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out.strip() == "[0.0, 1.0, 3.0, 6.0]"


def test_error_mode_from_environment():
    env = dict(os.environ, TORCH_VK_FALLBACK="error")
    code = ("import torch\nx = torch.arange(4.).to('vk')\n"
            "try:\n    torch.cumsum(x, 0)\nexcept NotImplementedError as e:\n    print('NIE', e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out.startswith("NIE") and "cumsum" in out
