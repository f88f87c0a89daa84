"""Convolutions against PyTorch's CPU: conv1d / conv2d / conv3d and conv_transpose1d / 2d / 3d,
forward and autograd gradients (input, weight, bias) over stride, padding (incl. 'same' /
'valid'), dilation, groups (incl. depthwise), bias, output_padding; non-contiguous and
channels-last inputs, empty batches, every float dtype; bad arguments raise what the CPU raises.

References: float32 / float64 compare with the CPU in the same dtype. float16 / bfloat16 compare
with the CPU computing in float32 on the same (already rounded) inputs, rounded to the dtype:
the device accumulates in fp32 and rounds once, so that is the exact-math reference (the CPU's
own 16-bit kernels round intermediate sums differently)."""
import copy
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_vk  # noqa: F401
from helpers import TOLERANCE, check, make

pytestmark = pytest.mark.usefixtures("strict_native")

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
TOL = dict(TOLERANCE)
TOL[torch.float64] = dict(atol=1e-10, rtol=1e-10)


def _run(fn, x, w, b, grad_seed, device, compute_dtype):
    """fn(x, w, b) on `device` computed in `compute_dtype`; returns (out, gx, gw, gb) in the
    dtype of x."""
    dtype = x.dtype
    xs = x.to(device=device, dtype=compute_dtype).requires_grad_()
    ws = w.to(device=device, dtype=compute_dtype).requires_grad_()
    bs = b.to(device=device, dtype=compute_dtype).requires_grad_() if b is not None else None
    out = fn(xs, ws, bs)
    g = make(out.shape, dtype, low=-1, high=1, seed=grad_seed).to(device=device, dtype=compute_dtype)
    inputs = [xs, ws] + ([bs] if bs is not None else [])
    grads = torch.autograd.grad(out, inputs, g)
    res = [out] + list(grads)
    return [r.detach().to("cpu").to(dtype) for r in res], out


def check_conv(fn, x, w, b=None, *, layout=None, seed=7):
    """Forward and autograd gradients of fn(x, w, b) on vk vs the CPU reference."""
    dtype = x.dtype
    ref_dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    lay = layout or (lambda t: t)
    expected, out_cpu = _run(lambda a, c, d: fn(lay(a), c, d), x, w, b, seed, "cpu", ref_dtype)
    actual, out_vk = _run(lambda a, c, d: fn(lay(a), c, d), x, w, b, seed, "vk", dtype)
    assert out_vk.device.type == "vk"
    assert out_vk.shape == out_cpu.shape
    names = ["output", "grad_input", "grad_weight", "grad_bias"]
    for name, a, e in zip(names, actual, expected):
        torch.testing.assert_close(a, e, equal_nan=True, msg=lambda m: f"{name}: {m}", **TOL[dtype])
    return out_vk


def conv_nd(nd):
    return {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]


def conv_t_nd(nd):
    return {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]


# (nd, N, C, spatial, COUT, kernel, kwargs): regular convolutions.
REGULAR = [
    (2, 2, 4, (7, 6), 6, (3, 3), dict()),
    (2, 2, 4, (7, 6), 6, (3, 3), dict(stride=2, padding=1)),
    (2, 1, 3, (8, 7), 4, (3, 3), dict(padding=2, dilation=2)),
    (2, 2, 4, (6, 6), 6, (3, 3), dict(groups=2, padding=1)),
    (2, 2, 4, (6, 5), 4, (3, 3), dict(groups=4, padding=1)),          # depthwise
    (2, 1, 4, (6, 5), 8, (3, 3), dict(groups=4, stride=2)),           # depthwise x2
    (2, 2, 4, (5, 6), 5, (1, 1), dict()),                             # 1x1: plain GEMM
    (2, 2, 4, (5, 6), 6, (1, 1), dict(groups=2)),
    (2, 2, 4, (5, 6), 5, (1, 1), dict(stride=2)),
    (2, 2, 3, (6, 7), 4, (2, 3), dict(stride=(1, 2), padding=(1, 0), dilation=(1, 2))),
    (2, 1, 16, (5, 5), 8, (3, 3), dict(padding=1)),                   # larger reduction
    (2, 2, 4, (6, 6), 6, (4, 3), dict(padding="same")),               # asymmetric 'same'
    (2, 2, 4, (6, 6), 6, (3, 3), dict(padding="same", dilation=2)),
    (2, 2, 4, (6, 6), 6, (3, 3), dict(padding="valid")),
    (1, 2, 4, (9,), 6, (3,), dict()),
    (1, 2, 4, (9,), 6, (3,), dict(stride=2, padding=1, dilation=2)),
    (1, 2, 4, (9,), 4, (5,), dict(groups=4, padding=2)),
    (1, 2, 4, (9,), 8, (1,), dict(groups=2)),
    (1, 1, 1, (10,), 3, (3,), dict(padding="same")),
    (3, 2, 3, (4, 5, 4), 4, (3, 2, 3), dict(padding=1)),
    (3, 1, 4, (5, 4, 5), 4, (2, 2, 2), dict(stride=2, groups=2, dilation=(1, 2, 1))),
    (3, 1, 4, (3, 3, 3), 4, (3, 3, 3), dict(groups=4, padding=1)),
]


def _ids(cases):
    return [f"{c[0]}d-{i}" for i, c in enumerate(cases)]


def _with_dtypes(cases, subset):
    """Every case in float32; the cases in `subset` (one per code path: im2col, grouped,
    direct, 1x1 GEMM, 1-D, 3-D) also in the other dtypes."""
    params = [pytest.param(c, torch.float32, id=f"float32-{c[0]}d-{i}") for i, c in enumerate(cases)]
    for dtype in DTYPES[1:]:
        params += [pytest.param(cases[i], dtype, id=f"{str(dtype)[6:]}-{cases[i][0]}d-{i}") for i in subset]
    return params


@pytest.mark.parametrize("case,dtype", _with_dtypes(REGULAR, [1, 3, 4, 6, 11, 15, 19]))
def test_conv(case, dtype):
    nd, n, c, spatial, cout, kernel, kw = case
    groups = kw.get("groups", 1)
    x = make((n, c) + spatial, dtype, low=-1, high=1, seed=1)
    w = make((cout, c // groups) + kernel, dtype, low=-1, high=1, seed=2)
    b = make((cout,), dtype, low=-1, high=1, seed=3)
    fn = conv_nd(nd)
    check_conv(lambda a, ww, bb: fn(a, ww, bb, **kw), x, w, b)


@pytest.mark.parametrize("case", REGULAR[:4] + REGULAR[14:15], ids=_ids(REGULAR[:4] + REGULAR[14:15]))
def test_conv_no_bias(case):
    nd, n, c, spatial, cout, kernel, kw = case
    groups = kw.get("groups", 1)
    x = make((n, c) + spatial, torch.float32, seed=1)
    w = make((cout, c // groups) + kernel, torch.float32, seed=2)
    fn = conv_nd(nd)
    check_conv(lambda a, ww, bb: fn(a, ww, None, **kw), x, w)


# (nd, N, CIN, spatial, COUT, kernel, kwargs): transposed convolutions; weight [CIN, COUT/g, k].
TRANSPOSED = [
    (2, 2, 4, (4, 5), 6, (3, 3), dict()),
    (2, 2, 4, (4, 5), 6, (3, 3), dict(stride=2, padding=1, output_padding=1)),
    (2, 2, 4, (4, 4), 6, (3, 2), dict(stride=(2, 3), output_padding=(1, 2))),
    (2, 1, 4, (4, 5), 6, (3, 3), dict(groups=2, dilation=2, padding=1)),
    (2, 2, 4, (4, 5), 4, (3, 3), dict(groups=4, stride=2)),            # depthwise
    (2, 1, 4, (4, 5), 6, (3, 3), dict(stride=1, dilation=2, output_padding=1)),
    (2, 2, 4, (4, 5), 6, (1, 1), dict()),                              # 1x1: plain GEMM
    (2, 2, 4, (4, 5), 6, (1, 1), dict(groups=2, stride=2, output_padding=1)),
    (1, 2, 4, (7,), 6, (3,), dict(stride=2, padding=1, output_padding=1)),
    (1, 2, 4, (7,), 4, (3,), dict(groups=2, dilation=3)),
    (3, 1, 4, (3, 2, 3), 4, (2, 3, 2), dict(stride=2, padding=(0, 1, 0), groups=2)),
]


@pytest.mark.parametrize("case,dtype", _with_dtypes(TRANSPOSED, [1, 3, 4, 6, 8, 10]))
def test_conv_transpose(case, dtype):
    nd, n, cin, spatial, cout, kernel, kw = case
    groups = kw.get("groups", 1)
    x = make((n, cin) + spatial, dtype, low=-1, high=1, seed=1)
    w = make((cin, cout // groups) + kernel, dtype, low=-1, high=1, seed=2)
    b = make((cout,), dtype, low=-1, high=1, seed=3)
    fn = conv_t_nd(nd)
    check_conv(lambda a, ww, bb: fn(a, ww, bb, **kw), x, w, b)
    check_conv(lambda a, ww, bb: fn(a, ww, None, **kw), x, w)


def _channels_last(t):
    return t.contiguous(memory_format=torch.channels_last)


def _strided(t):
    big = torch.empty(t.shape[:-1] + (t.shape[-1] * 2,), dtype=t.dtype, device=t.device)
    view = big[..., ::2]
    view.copy_(t)
    return view


def _permuted(t):  # batch and channel dims swapped in memory
    return t.transpose(0, 1).contiguous().transpose(0, 1)


@pytest.mark.parametrize("layout", [_channels_last, _strided, _permuted], ids=["channels_last", "strided", "permuted"])
@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "conv_transpose"])
def test_layouts(layout, transposed):
    x = make((2, 4, 5, 6), torch.float32, seed=1)
    b = make((6,), torch.float32, seed=3)
    if transposed:
        w = make((4, 3, 3, 3), torch.float32, seed=2)
        fn = lambda a, ww, bb: F.conv_transpose2d(a, ww, bb, stride=2, groups=2)  # noqa: E731
    else:
        w = make((6, 2, 3, 3), torch.float32, seed=2)
        fn = lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1, groups=2)  # noqa: E731
    out = check_conv(fn, x, w, b, layout=layout)
    cpu = fn(layout(x), w, b)
    for fmt in (torch.contiguous_format, torch.channels_last):
        assert out.is_contiguous(memory_format=fmt) == cpu.is_contiguous(memory_format=fmt)
    # 1x1 on a channels-last input: the GEMM reads it in place.
    check_conv(lambda a, ww, bb: F.conv2d(a, ww, bb), x, make((5, 4, 1, 1), torch.float32), None,
               layout=layout)
    # A channels-last weight.
    check_conv(lambda a, ww, bb: F.conv2d(a, _channels_last(ww), bb, padding=1),
               x, make((6, 4, 3, 3), torch.float32), b)


def test_conv1d_and_3d_layouts():
    x = make((2, 4, 9), torch.float32, seed=1)
    w = make((6, 4, 3), torch.float32, seed=2)
    check_conv(lambda a, ww, bb: F.conv1d(a, ww, bb, stride=2), x, w, None, layout=lambda t: t.transpose(1, 2).contiguous().transpose(1, 2))
    x3 = make((1, 4, 3, 4, 5), torch.float32, seed=1)
    w3 = make((2, 4, 2, 2, 2), torch.float32, seed=2)
    check_conv(lambda a, ww, bb: F.conv3d(a, ww, bb), x3, w3, None,
               layout=lambda t: t.contiguous(memory_format=torch.channels_last_3d))


def test_unbatched_and_empty():
    w = make((6, 4, 3, 3), torch.float32, seed=2)
    b = make((6,), torch.float32, seed=3)
    check(lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1), make((4, 5, 5), torch.float32), w, b)
    check(lambda a, ww: F.conv1d(a, ww), make((4, 7), torch.float32), make((3, 4, 2), torch.float32))
    for dtype in DTYPES:
        x = make((0, 4, 5, 5), dtype)
        check_conv(lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1), x, w.to(dtype), b.to(dtype))
        check_conv(lambda a, ww, bb: F.conv_transpose2d(a, ww, bb, stride=2), x,
                   make((4, 3, 3, 3), dtype), make((3,), dtype))
    check(lambda a, ww: F.conv2d(a, ww), make((2, 0, 5, 5), torch.float32), make((3, 0, 3, 3), torch.float32))
    # Weight with 0 output channels.
    check(lambda a, ww: F.conv2d(a, ww), make((2, 4, 5, 5), torch.float32), make((0, 4, 3, 3), torch.float32))


def test_bad_arguments():
    x = make((2, 4, 6, 6), torch.float32)
    w = make((6, 4, 3, 3), torch.float32)
    bad = [
        lambda a, ww: F.conv2d(a, ww[:, :3]),                          # channel mismatch
        lambda a, ww: F.conv2d(a, ww, groups=4),                       # groups / channels
        lambda a, ww: F.conv2d(a, ww[:5, :1], groups=4),               # out channels % groups
        lambda a, ww: F.conv2d(a, ww[..., 0]),                         # weight dims
        lambda a, ww: F.conv2d(a[0, 0], ww),                           # input dims
        lambda a, ww: F.conv2d(a[..., :2], ww),                        # input smaller than kernel
        lambda a, ww: F.conv2d(a, ww, padding=-1),
        lambda a, ww: F.conv2d(a, ww, stride=0),
        lambda a, ww: F.conv2d(a, ww, stride=(1, 1, 1)),
        lambda a, ww: F.conv2d(a, ww, bias=torch.zeros(5, device=a.device)),
        lambda a, ww: F.conv2d(a, ww.double()),                        # dtype mismatch
        lambda a, ww: F.conv2d(a.double(), ww),
        lambda a, ww: F.conv2d(a, ww, bias=torch.zeros(6, device=a.device, dtype=torch.float64)),
        lambda a, ww: F.conv2d(a, ww, padding="same", stride=2),
        lambda a, ww: F.conv2d(a, ww, padding="bogus"),
        lambda a, ww: F.conv_transpose2d(a, ww.transpose(0, 1), stride=2, output_padding=2),
        lambda a, ww: F.conv_transpose2d(a, ww[:3]),                   # transposed channels
        lambda a, ww: F.conv2d(a, ww, groups=0),
    ]
    for fn in bad:
        check(fn, x, w)


def test_mixed_devices_raise():
    x = make((2, 4, 6, 6), torch.float32).to("vk")
    w = make((6, 4, 3, 3), torch.float32)
    with pytest.raises(RuntimeError):
        F.conv2d(x, w)


def test_nn_conv2d_training_step():
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(8, 8, 3, stride=2, groups=2), torch.nn.ReLU(),
                              torch.nn.Conv2d(8, 4, 1))
    vk = copy.deepcopy(cpu).to("vk")
    x = make((2, 3, 9, 9), torch.float32, seed=4)
    out_c = cpu(x)
    out_v = vk(x.to("vk"))
    torch.testing.assert_close(out_v.cpu(), out_c, **TOL[torch.float32])
    out_c.square().mean().backward()
    out_v.square().mean().backward()
    for (name, pc), pv in zip(cpu.named_parameters(), vk.parameters()):
        torch.testing.assert_close(pv.grad.cpu(), pc.grad, msg=lambda m: f"{name}: {m}", **TOL[torch.float32])


def test_double_backward():
    x = make((1, 2, 5, 5), torch.float64, seed=1)
    w = make((3, 2, 3, 3), torch.float64, seed=2)

    def second(dev):
        xs = x.to(dev).requires_grad_()
        ws = w.to(dev).requires_grad_()
        out = F.conv2d(xs, ws, padding=1)
        (gx,) = torch.autograd.grad(out.square().sum(), xs, create_graph=True)
        return torch.autograd.grad(gx.sum(), ws)[0].cpu()

    torch.testing.assert_close(second("vk"), second("cpu"), **TOL[torch.float64])


_TUNED_SCRIPT = r"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
import torch_vk
torch_vk.set_fallback_mode("error")
from test_conv import check_conv, make
for dtype in (torch.float16,):
    x = make((5, 4, 5, 5), dtype, low=-1, high=1, seed=1)
    for w_shape, kw in (((6, 4, 3, 3), dict(padding=1)), ((4, 1, 3, 3), dict(groups=4, stride=2)),
                        ((6, 2, 3, 3), dict(groups=2)), ((6, 2, 1, 1), dict(groups=2))):
        w = make(w_shape, dtype, low=-1, high=1, seed=2)
        b = make((w_shape[0],), dtype, low=-1, high=1, seed=3)
        check_conv(lambda a, ww, bb: F.conv2d(a, ww, bb, **kw), x, w, b)
    wt = make((4, 3, 3, 3), dtype, low=-1, high=1, seed=2)
    check_conv(lambda a, ww, bb: F.conv_transpose2d(a, ww, bb, stride=2, output_padding=1), x, wt,
               make((3,), dtype, low=-1, high=1))
torch.vk.synchronize()
print("ok")
"""


def test_im2col_forced_and_chunked():
    """im2col where Auto picks the direct kernel (grouped GEMM loops), and batches split into
    several chunks (float16: 4 + 1 samples for the forward and the weight gradient, 2 + 2 + 1
    for the input gradient's float32 columns: several GEMM steps, the transposed-dY and the
    per-sample dY paths, a float32 accumulator for 16-bit weight gradients), through the
    process-wide knobs (TORCH_VK_CONV_ALGO, TORCH_VK_CONV_COLUMN_BYTES). The direct kernel is
    what Auto picks for the depthwise and single-channel cases of the other tests."""
    here = os.path.dirname(os.path.abspath(__file__))
    full_env = dict(os.environ, TORCH_VK_CONV_ALGO="im2col", TORCH_VK_CONV_COLUMN_BYTES="8400")
    r = subprocess.run([sys.executable, "-c", _TUNED_SCRIPT, here], env=full_env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


_IMPLICIT_SCRIPT = r"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
import torch_vk
torch_vk.set_fallback_mode("error")
from test_conv import REGULAR, TRANSPOSED, check_conv, conv_nd, conv_t_nd, make, _channels_last
for i, (nd, n, c, spatial, cout, kernel, kw) in enumerate(REGULAR):
    groups = kw.get("groups", 1)
    for dtype in (torch.float32,) + ((torch.float16, torch.bfloat16) if i in (1, 3, 15, 19) else ()):
        x = make((n, c) + spatial, dtype, low=-1, high=1, seed=1)
        w = make((cout, c // groups) + kernel, dtype, low=-1, high=1, seed=2)
        b = make((cout,), dtype, low=-1, high=1, seed=3) if i % 2 == 0 else None
        fn = conv_nd(nd)
        check_conv(lambda a, ww, bb: fn(a, ww, bb, **kw), x, w, b)
# Several tiles in every direction: 70 output channels (> one 64-row tile), 3 x 81 positions
# (> one 64-column tile), a reduction of 9 x 9 = 81 (several BK steps, a partial last one);
# channels-last input and output.
x = make((3, 9, 9, 9), torch.float32, low=-1, high=1, seed=1)
w = make((70, 9, 3, 3), torch.float32, low=-1, high=1, seed=2)
b = make((70,), torch.float32, low=-1, high=1, seed=3)
check_conv(lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1), x, w, b)
check_conv(lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1), x, w, b, layout=_channels_last)
# Transposed convolutions: the forward is the implicit input-gradient GEMM (with the bias per
# channel of its output), the input gradient the implicit forward.
for i, (nd, n, cin, spatial, cout, kernel, kw) in enumerate(TRANSPOSED):
    groups = kw.get("groups", 1)
    x = make((n, cin) + spatial, torch.float32, low=-1, high=1, seed=1)
    w = make((cin, cout // groups) + kernel, torch.float32, low=-1, high=1, seed=2)
    b = make((cout,), torch.float32, low=-1, high=1, seed=3) if i % 2 == 0 else None
    check_conv(lambda a, ww, bb: conv_t_nd(nd)(a, ww, bb, **kw), x, w, b)
torch.vk.synchronize()
assert torch_vk._C._validation_error_count() == 0, torch_vk._C._validation_messages()[-3:]
print("ok")
"""


@pytest.mark.parametrize("tile,splits", [("", ""), ("2,2,4,8,8", ""), ("3,1,8,4,5", ""),
                                         ("", "3"), ("3,1,8,4,5", "2")],
                         ids=["default", "small", "odd", "weight-splits-3", "odd-weight-splits-2"])
def test_implicit_gemm_forced(tile, splits):
    """The implicit GEMMs (the GPUs' default for the forward, the input and the weight
    gradient; CPU devices use im2col + GEMM / col2im) forced on every regular and transposed case and layout, with the default tile and two small profiles (a
    non-square workgroup, a register block of 3, a reduction step of 5) that put the
    partial-tile and multi-tile edges into these small problems; and the weight gradient
    split over the batch (float32 partials summed by a GEMM; batches smaller than the count
    take one sample per split, 2 splits of the batch of 3 leave a shorter last one)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TORCH_VK_CONV_ALGO="implicit")
    if tile:
        env["TORCH_VK_CONV_IMPLICIT_TILE"] = tile
    if splits:
        env["TORCH_VK_CONV_WEIGHT_SPLITS"] = splits
    r = subprocess.run([sys.executable, "-c", _IMPLICIT_SCRIPT, here], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
