"""The visible CPU fallback: warn once per op (default), silent, error; counted per op."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import torch_vk

# aten::gcd has no native vk kernel (and no composite decomposition): an op that really
# falls back; the fallback computes on the CPU, so the result equals the CPU's exactly. Counts
# are keyed by overload name (gcd reaches aten::gcd.out).
OP = "aten::gcd"
VALUES = [4, 9, 6, 5]
EXPECTED = torch.gcd(torch.full((4,), 6), torch.tensor(VALUES)).tolist()


def run_op():
    x = torch.tensor(VALUES).to("vk")
    return torch.gcd(torch.full((4,), 6, device="vk"), x)


def test_warn_mode_warns_once_and_computes():
    torch_vk.set_fallback_mode("warn")
    torch_vk.reset_stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = run_op()
        run_op()
    assert y.device.type == "vk"
    assert y.cpu().tolist() == EXPECTED
    fallback_warnings = [w for w in caught if "gcd" in str(w.message)]
    assert len(fallback_warnings) <= 1  # once per op per process
    counts = torch_vk.stats()["fallbacks"]
    assert sum(n for name, n in counts.items() if name.startswith(OP)) >= 2, counts


def test_error_mode_raises_not_implemented():
    torch_vk.set_fallback_mode("error")
    try:
        with pytest.raises(NotImplementedError, match="gcd"):
            run_op()
    finally:
        torch_vk.set_fallback_mode("warn")


SCRIPT = (f"x = torch.tensor({VALUES}).to('vk')\n"
          "y = torch.gcd(torch.full((4,), 6, device='vk'), x)\n")


def test_silent_mode_from_environment():
    env = dict(os.environ, TORCH_VK_FALLBACK="silent")
    code = ("import warnings, torch\nwarnings.simplefilter('error')\n" + SCRIPT +
            "print(y.cpu().tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out.strip() == str(EXPECTED)


def test_error_mode_from_environment():
    env = dict(os.environ, TORCH_VK_FALLBACK="error")
    code = "import torch\ntry:\n" + "".join("    " + line + "\n" for line in SCRIPT.splitlines()) + \
        "except NotImplementedError as e:\n    print('NIE', e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out.startswith("NIE") and "gcd" in out
