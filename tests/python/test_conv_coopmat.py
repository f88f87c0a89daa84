"""The cooperative-matrix implicit-GEMM convolution (shaders/conv_coopmat.comp,
src/kernels/conv_coopmat.cpp) against PyTorch's CPU.

lavapipe has no cooperative matrices, so these tests run the emulated variant
(TORCH_VK_CONV_COOPMAT=emulate): the same tiles, gathers, fragment offsets and strides and the
same epilogue, with scalar code in place of the 16 x 16 x 16 matrix products, in all three
modes (forward, input gradient, weight gradient; a transposed convolution's forward is the
input-gradient mode) and in float16 and bfloat16. The tile (TORCH_VK_CONV_COOPMAT_TILE) is
varied over 1 to 8 subgroups, 1 to 4 accumulators per subgroup and 8 to 16 elements per lane.
The emulated kernel, like the real one, runs only after its self-check, whose failure path is
tested too. The real variants are checked for what can be checked without hardware: present
in the build, valid SPIR-V, the right matrix types.

The knobs are read once per process (TORCH_VK_CONV_ALGO=implicit: lavapipe's default is
im2col + GEMM), so each configuration runs in a subprocess; they run side by side."""
import os
import subprocess
import sys

import pytest

import torch_vk
from test_attention_coopmat import assert_valid_coopmat_spirv

HERE = os.path.dirname(os.path.abspath(__file__))

SCRIPT = r"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
import torch_vk
torch_vk.set_fallback_mode("error")
from test_conv import REGULAR, TRANSPOSED, check_conv, conv_nd, conv_t_nd, make, _channels_last
expected = sys.argv[2]

def ran(what):
    algo = torch_vk._C._last_conv_algorithm()
    assert algo == expected, f"{what}: {algo}"

cases = REGULAR if sys.argv[3] == "all" else [REGULAR[i] for i in (1, 3, 9, 15, 20)]
for i, (nd, n, c, spatial, cout, kernel, kw) in enumerate(cases):
    groups = kw.get("groups", 1)
    for dtype in (torch.float16, torch.bfloat16):
        x = make((n, c) + spatial, dtype, low=-1, high=1, seed=1)
        w = make((cout, c // groups) + kernel, dtype, low=-1, high=1, seed=2)
        b = make((cout,), dtype, low=-1, high=1, seed=3) if i % 2 == 0 else None
        fn = conv_nd(nd)
        check_conv(lambda a, ww, bb: fn(a, ww, bb, **kw), x, w, b)
        ran(f"regular {i} {dtype}")
if sys.argv[3] == "all":
    for i, (nd, n, cin, spatial, cout, kernel, kw) in enumerate(TRANSPOSED):
        groups = kw.get("groups", 1)
        dtype = (torch.float16, torch.bfloat16)[i % 2]
        x = make((n, cin) + spatial, dtype, low=-1, high=1, seed=1)
        w = make((cin, cout // groups) + kernel, dtype, low=-1, high=1, seed=2)
        b = make((cout,), dtype, low=-1, high=1, seed=3) if i % 2 == 0 else None
        check_conv(lambda a, ww, bb: conv_t_nd(nd)(a, ww, bb, **kw), x, w, b)
        ran(f"transposed {i}")
# Several tiles in every direction: 70 output channels (> one 64-row tile), 3 x 81 positions
# (> one 64-column tile), a reduction of 9 x 9 = 81 (several steps, a partial last one);
# channels-last input and output, and a non-contiguous (sliced) input.
x = make((3, 9, 9, 9), torch.float16, low=-1, high=1, seed=1)
w = make((70, 9, 3, 3), torch.float16, low=-1, high=1, seed=2)
b = make((70,), torch.float16, low=-1, high=1, seed=3)
conv = lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1)
check_conv(conv, x, w, b)
ran("multi-tile")
check_conv(conv, x.to(torch.bfloat16), w.to(torch.bfloat16), b.to(torch.bfloat16), layout=_channels_last)
ran("channels-last")
wide = make((3, 9, 9, 13), torch.float16, low=-1, high=1, seed=4)
check_conv(conv, wide, w, b, layout=lambda t: t[..., 2:11])
ran("sliced")
# An empty batch: nothing to reduce, an empty output, zero weight gradients.
empty = torch.zeros(0, 9, 9, 9, dtype=torch.float16)
out = F.conv2d(empty.to("vk"), w.to("vk"), padding=1)
assert out.shape == (0, 70, 9, 9)
torch.vk.synchronize()
assert torch_vk._C._validation_error_count() == 0, torch_vk._C._validation_messages()[-3:]
state = torch_vk._C._conv_coopmat_state(dtype="float16"), torch_vk._C._conv_coopmat_state(dtype="bfloat16")
print(state[0], state[1])
print("ok")
"""


def run_script(env_extra, expected, cases="all"):
    env = dict(os.environ, TORCH_VK_CONV_ALGO="implicit", TORCH_VK_CONV_COOPMAT="emulate",
               TORCH_VK_FALLBACK="error", **env_extra)
    return subprocess.Popen([sys.executable, "-c", SCRIPT, HERE, expected, cases], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_emulated_kernel_tiles_and_self_check():
    # Side by side: the default tile on every regular and transposed case; forced tiles (one
    # subgroup with 2 x 2 accumulators; 16-lane subgroups with 16 elements per lane; 64-lane
    # ones; the real kernel's large tile of 8 subgroups); the weight gradient split over the
    # batch; and a failing self-check, which leaves every convolution on the portable implicit
    # GEMM with a warning.
    runs = {
        "default": run_script({}, "coopmat_emulated"),
        "one subgroup": run_script({"TORCH_VK_CONV_COOPMAT_TILE": "32,32,16,1,1,32"},
                                   "coopmat_emulated", "some"),
        "16 lanes": run_script({"TORCH_VK_CONV_COOPMAT_TILE": "16,64,32,1,2,16"},
                               "coopmat_emulated", "some"),
        "64 lanes": run_script({"TORCH_VK_CONV_COOPMAT_TILE": "64,32,16,4,1,64"},
                               "coopmat_emulated", "some"),
        "large": run_script({"TORCH_VK_CONV_COOPMAT_TILE": "128,128,32,2,4,32"},
                            "coopmat_emulated", "some"),
        "splits": run_script({"TORCH_VK_CONV_WEIGHT_SPLITS": "2"}, "coopmat_emulated", "some"),
        "failed check": run_script({"TORCH_VK_CONV_COOPMAT_SELF_CHECK": "fail"}, "implicit", "some"),
    }
    outputs = {name: run.communicate(timeout=900)[0] for name, run in runs.items()}
    for name, run in runs.items():
        assert run.returncode == 0 and outputs[name].strip().endswith("ok"), f"{name}: {outputs[name]}"
    assert "passed passed" in outputs["default"]
    assert "failed its self-check" not in outputs["default"]
    assert "failed its self-check" in outputs["failed check"]
    assert "failed failed" in outputs["failed check"]


def test_invalid_tile_raises():
    script = ("import torch, torch.nn.functional as F, torch_vk\n"
              "x = torch.zeros(1, 4, 6, 6, dtype=torch.float16, device='vk')\n"
              "w = torch.zeros(8, 4, 3, 3, dtype=torch.float16, device='vk')\n"
              "try:\n"
              "    F.conv2d(x, w)\n"
              "except RuntimeError as e:\n"
              "    assert 'cooperative-matrix convolution tile' in str(e) or 'COOPMAT_TILE' in str(e), e\n"
              "    print('raised')\n")
    for tile in ("48,64,32,2,2,32", "64,64,24,2,2,32", "64,64,32,2,2,8", "64,64,32"):
        env = dict(os.environ, TORCH_VK_CONV_ALGO="implicit", TORCH_VK_CONV_COOPMAT="emulate",
                   TORCH_VK_CONV_COOPMAT_TILE=tile)
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0 and "raised" in r.stdout, tile + ": " + r.stdout + r.stderr


def test_states_without_emulation(monkeypatch):
    # lavapipe lists no cooperative-matrix shapes: the real kernel is unavailable; Off hides
    # the emulation too.
    monkeypatch.delenv("TORCH_VK_CONV_COOPMAT", raising=False)
    assert torch_vk._C._conv_coopmat_state(dtype="float16") == "unavailable"
    monkeypatch.setenv("TORCH_VK_CONV_COOPMAT", "0")
    assert torch_vk._C._conv_coopmat_state(dtype="bfloat16") == "unavailable"
    with pytest.raises(ValueError):
        torch_vk._C._conv_coopmat_state(dtype="float32")


@pytest.mark.parametrize("element", ["float16", "bfloat16"])
def test_real_variants_are_valid_spirv(element, tmp_path):
    # A (weights, dY) and B (gathered X, dY) fragments of the element type, float32 accumulators.
    assert_valid_coopmat_spirv(f"conv.coopmat.{element}", element, tmp_path)
