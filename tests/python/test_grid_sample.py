"""Grid sampling (F.grid_sample: aten grid_sampler_2d / grid_sampler_3d and their backward)
against PyTorch's CPU: every interpolation and padding mode, align_corners, dtypes, input and
grid layouts, empty tensors, out-of-range and huge grid positions, input and grid gradients,
the portable (compare-and-swap) accumulation path and bad arguments."""
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
MODES_2D = ["bilinear", "nearest", "bicubic"]
MODES_3D = ["bilinear", "nearest"]
PADDINGS = ["zeros", "border", "reflection"]


def tol(dtype):
    return TOLERANCE.get(dtype, {})


def make_grid(shape, dtype, seed=1, spread=1.3):
    """Grid coordinates in [-spread, spread]: inside and outside the input."""
    return make(shape, dtype, low=-spread, high=spread, seed=seed)


def compare(fn, x, grid, seed=7, grads=True):
    """fn(x, grid) and the autograd gradients of x and grid, CPU vs vk. 16-bit dtypes are
    compared, like the CPU, with the float64 result (their error may not exceed twice the
    CPU's plus the dtype's tolerance)."""
    dtype = x.dtype
    xc, gc = x.clone().requires_grad_(grads), grid.clone().requires_grad_(grads)
    xv, gv = x.to("vk").requires_grad_(grads), grid.to("vk").requires_grad_(grads)
    yc, yv = fn(xc, gc), fn(xv, gv)
    assert yv.device.type == "vk" and yv.dtype == yc.dtype and yv.shape == yc.shape
    results = [(yv, yc)]
    ref = None
    if dtype in (torch.float16, torch.bfloat16):
        xd, gd = x.double().requires_grad_(grads), grid.double().requires_grad_(grads)
        ref = [fn(xd, gd)]
    if grads and yc.numel() > 0:
        go = make(yc.shape, dtype, seed=seed)
        results += list(zip(torch.autograd.grad(yv, (xv, gv), go.to("vk")),
                            torch.autograd.grad(yc, (xc, gc), go)))
        if ref is not None:
            ref += list(torch.autograd.grad(ref[0], (xd, gd), go.double()))
    for i, (v, c) in enumerate(results):
        assert v.device.type == "vk"
        v = v.detach().cpu()
        c = c.detach()
        if ref is None or c.numel() == 0:
            torch.testing.assert_close(v, c, **tol(dtype))
        else:
            d = ref[i].detach()
            err_cpu = (c.double() - d).abs().max().item()
            err_vk = (v.double() - d).abs().max().item()
            assert err_vk <= 2 * err_cpu + tol(dtype)["atol"] * max(1.0, d.abs().max().item()), \
                (i, err_vk, err_cpu)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES_2D)
def test_2d_modes(mode, padding, align):
    x = make((2, 3, 5, 6), torch.float32)
    grid = make_grid((2, 4, 7, 2), torch.float32)
    compare(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align),
            x, grid)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES_3D)
def test_3d_modes(mode, padding, align):
    x = make((2, 3, 3, 4, 5), torch.float32)
    grid = make_grid((2, 2, 3, 4, 3), torch.float32)
    compare(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align),
            x, grid)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", MODES_2D)
def test_dtypes(mode, dtype):
    x = make((2, 3, 4, 5), dtype)
    grid = make_grid((2, 3, 4, 2), dtype)
    for padding in PADDINGS:
        compare(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=False),
                x, grid)
    if mode != "bicubic":
        compare(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode="reflection", align_corners=True),
                make((1, 2, 3, 4, 3), dtype), make_grid((1, 2, 2, 3, 3), dtype))


@pytest.mark.parametrize("mode", MODES_2D)
def test_layouts(mode):
    x = make((2, 3, 4, 5), torch.float32)
    grid = make_grid((2, 3, 4, 2), torch.float32)
    fn = lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode="border", align_corners=False)
    for _, layout in list(layouts(x)) + [("channels_last", lambda t: t.contiguous(memory_format=torch.channels_last))]:
        check(lambda a, g: fn(layout(a), g), x, grid)
        check(lambda a, g: fn(a, layout(g)), x, grid)
    # expanded (stride 0) input and grid, grad through a channels-last input
    check(lambda a, g: fn(a[:1].expand(2, 3, 4, 5), g[:1].expand(2, 3, 4, 2)), x, grid)
    compare(lambda a, g: fn(a.contiguous(memory_format=torch.channels_last), g.transpose(1, 2)), x, grid)
    x3 = make((2, 2, 3, 4, 5), torch.float32)
    grid3 = make_grid((2, 2, 3, 3, 3), torch.float32)
    if mode != "bicubic":
        compare(lambda a, g: F.grid_sample(a.contiguous(memory_format=torch.channels_last_3d), g,
                                           mode=mode, align_corners=True), x3, grid3)


def test_empty():
    fn = lambda a, g: F.grid_sample(a, g, mode="bilinear", align_corners=False)
    compare(fn, make((0, 3, 4, 5), torch.float32), make_grid((0, 2, 3, 2), torch.float32))
    compare(fn, make((2, 0, 4, 5), torch.float32), make_grid((2, 2, 3, 2), torch.float32))
    compare(fn, make((2, 3, 4, 5), torch.float32), make_grid((2, 0, 3, 2), torch.float32))
    compare(fn, make((1, 2, 3, 4, 5), torch.float32), make_grid((1, 2, 0, 3, 3), torch.float32))
    # 1-pixel inputs (reflection over a single pixel, align_corners spans of 0)
    for padding in PADDINGS:
        for align in (False, True):
            compare(lambda a, g: F.grid_sample(a, g, padding_mode=padding, align_corners=align),
                    make((1, 2, 1, 1), torch.float32), make_grid((1, 2, 3, 2), torch.float32))


def test_far_and_special_positions():
    x = make((1, 2, 4, 5), torch.float32)
    grid = torch.tensor([[[[5.0, -7.0], [1e10, 0.5], [-1e10, -1e10], [1.0, -1.0]],
                          [[-1.0, 1.0], [0.0, 0.0], [3.5, 2.25], [-2.75, 0.125]]]])
    # +-1e10: beyond the int range; bicubic's CPU kernel converts such positions to int
    # unchecked (undefined), so only bilinear / nearest are compared there.
    moderate = grid.clone()
    moderate[0, 0, 1:3] = torch.tensor([[40.0, 0.5], [-33.0, -50.0]])
    for mode in MODES_2D:
        for padding in PADDINGS:
            for align in (False, True):
                fn = lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align)
                compare(fn, x, moderate)
                if mode != "bicubic":
                    compare(fn, x, grid)


def test_output_mask_and_direct_ops():
    x = make((2, 3, 4, 5), torch.float32)
    grid = make_grid((2, 3, 4, 2), torch.float32)
    go = make((2, 3, 3, 4), torch.float32, seed=3)
    for mask in ([True, True], [False, True], [True, False]):
        for mode in range(3):
            cpu = torch.ops.aten.grid_sampler_2d_backward(go, x, grid, mode, 1, False, mask)
            vk = torch.ops.aten.grid_sampler_2d_backward(go.to("vk"), x.to("vk"), grid.to("vk"), mode, 1,
                                                         False, mask)
            assert (vk[0] is None) == (cpu[0] is None)
            if cpu[0] is not None:
                torch.testing.assert_close(vk[0].cpu(), cpu[0], **tol(torch.float32))
            if mask[1]:
                torch.testing.assert_close(vk[1].cpu(), cpu[1], **tol(torch.float32))
            assert vk[1].shape == cpu[1].shape
    check(lambda a, g: torch.ops.aten.grid_sampler_2d.out(a, g, 2, 2, True, out=torch.empty(0, device=a.device)),
          x, grid)
    check(lambda a, g: torch.ops.aten.grid_sampler(a, g, 0, 0, False), x, grid)
    x3, grid3 = make((1, 2, 2, 3, 4), torch.float32), make_grid((1, 2, 2, 2, 3), torch.float32)
    check(lambda a, g: torch.ops.aten.grid_sampler_3d(a, g, 1, 2, False), x3, grid3)
    go3 = make((1, 2, 2, 2, 2), torch.float32, seed=4)
    check(lambda gg, a, g: torch.ops.aten.grid_sampler_3d_backward(gg, a, g, 0, 2, True, [False, True])[1],
          go3, x3, grid3)


def test_portable_accumulation():
    """The backward's compare-and-swap accumulation, forced where the device has float atomics."""
    script = r"""
import torch, torch_vk, torch.nn.functional as F
torch_vk.set_fallback_mode("error")
g = torch.Generator().manual_seed(0)
for dims in (2, 3):
    x = torch.randn((2, 3) + (4,) * dims, generator=g).requires_grad_()
    grid = (torch.rand((2,) + (3,) * dims + (dims,), generator=g) * 2.4 - 1.2).requires_grad_()
    for mode in (["bilinear", "nearest", "bicubic"] if dims == 2 else ["bilinear", "nearest"]):
        y = F.grid_sample(x, grid, mode=mode, align_corners=False)
        xv, gv = x.detach().to("vk").requires_grad_(), grid.detach().to("vk").requires_grad_()
        yv = F.grid_sample(xv, gv, mode=mode, align_corners=False)
        go = torch.randn(y.shape, generator=g)
        ref = torch.autograd.grad(y, (x, grid), go)
        got = torch.autograd.grad(yv, (xv, gv), go.to("vk"))
        for a, b in zip(got, ref):
            torch.testing.assert_close(a.cpu(), b, atol=1e-5, rtol=1.3e-5)
print("ok")
"""
    env = dict(os.environ, TORCH_VK_DISABLE_FLOAT_ATOMICS="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def expect_same_error(fn, *args):
    """The CPU and vk raise the same exception type with the same message."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with pytest.raises(type(cpu.value)) as vk:
        fn(*[a.to("vk") for a in args])
    assert str(vk.value).split("\n")[0] == str(cpu.value).split("\n")[0]


def test_bad_input():
    x = make((1, 2, 3, 4), torch.float32)
    grid = make_grid((1, 2, 2, 2), torch.float32)
    gs2 = lambda a, g, mode=0: torch.ops.aten.grid_sampler_2d(a, g, mode, 0, False)
    gs3 = lambda a, g, mode=0: torch.ops.aten.grid_sampler_3d(a, g, mode, 0, False)
    expect_same_error(gs2, x, grid[..., :1])                             # last dim != 2
    expect_same_error(gs2, x[0], grid[0])                                # 3-d input
    expect_same_error(gs2, x, grid[0:1].expand(2, 2, 2, 2))              # batch mismatch
    expect_same_error(gs2, x[:, :, :0], grid)                            # empty spatial dim
    expect_same_error(gs2, x, grid.double())                             # dtype mismatch
    expect_same_error(gs2, x.double(), grid)
    expect_same_error(gs2, x.to(torch.int32), grid.to(torch.int32))      # integer dtype
    expect_same_error(gs3, x, grid)                                      # 4-d into 3d
    expect_same_error(lambda a, g: gs3(a, g, 2), x[:, :, None], make_grid((1, 1, 2, 2, 3), torch.float32))
    check(lambda a, g: F.grid_sample(a, g, mode="bicubic", align_corners=False), x[:, :, None],
          make_grid((1, 1, 2, 2, 3), torch.float32))
    check(lambda a, g: F.grid_sample(a, g, align_corners=False), x.to(torch.uint8), grid.to(torch.uint8))
