"""Upsampling (F.interpolate) against PyTorch's CPU: nearest, nearest-exact, linear, bilinear,
bicubic and trilinear, anti-aliased bilinear / bicubic, uint8 bilinear / bicubic (bit-exact),
forward and autograd backward, with sizes or scale factors, align_corners, layouts, dtypes,
empty batches and bad arguments."""
import pytest
import torch
import torch.nn.functional as F

from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def tol(dtype):
    return TOLERANCE.get(dtype, {})


def compare_grad(fn, x, seed=7):
    """fn(x) and the autograd gradient of x, CPU vs vk."""
    dtype = x.dtype
    xc = x.clone().requires_grad_()
    xv = x.to("vk").requires_grad_()
    yc = fn(xc)
    yv = fn(xv)
    assert yv.device.type == "vk"
    torch.testing.assert_close(yv.cpu(), yc.detach(), **tol(dtype))
    assert yv.is_contiguous(memory_format=torch.channels_last) == yc.is_contiguous(
        memory_format=torch.channels_last)
    g = make(yc.shape, dtype, seed=seed)
    (gc,) = torch.autograd.grad(yc, xc, g)
    (gv,) = torch.autograd.grad(yv, xv, g.to("vk"))
    assert gv.device.type == "vk"
    if dtype in (torch.float16, torch.bfloat16) and gc.numel() > 0:
        # Sums of many weighted terms: the 16-bit CPU kernels round their weights to the
        # storage type; compare both with the float64 gradient instead.
        xd = x.double().requires_grad_()
        (gd,) = torch.autograd.grad(fn(xd), xd, g.double())
        err_cpu = (gc.double() - gd).abs().max().item()
        err_vk = (gv.cpu().double() - gd).abs().max().item()
        assert err_vk <= 2 * err_cpu + tol(dtype)["atol"], (err_vk, err_cpu)
    else:
        torch.testing.assert_close(gv.cpu(), gc, **tol(dtype))


def channels_last(x):
    return x.contiguous(memory_format=torch.channels_last)


NEAREST_2D = [  # size, scale_factor
    (None, 2), (None, 3), (None, (2, 3)), ((5, 7), None), ((3, 2), None), (None, 0.5),
    (None, 1.7), ((9, 4), None), (None, (0.6, 2.5)),
]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("case", NEAREST_2D, ids=str)
def test_nearest2d(mode, case):
    size, scale = case
    x = make((2, 3, 5, 6), torch.float32)
    fn = lambda a: F.interpolate(a, size=size, scale_factor=scale, mode=mode)
    compare_grad(fn, x)
    compare_grad(lambda a: fn(channels_last(a)), x)
    if scale is not None:
        compare_grad(lambda a: F.interpolate(a, scale_factor=scale, mode=mode,
                                             recompute_scale_factor=True), x)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear"])
def test_1d_modes(mode):
    x = make((2, 3, 7), torch.float32)
    kw = {} if mode.startswith("nearest") else {"align_corners": False}
    for size, scale in ((None, 2), (None, 2.5), (13, None), (4, None), (None, 0.4), (7, None)):
        compare_grad(lambda a: F.interpolate(a, size=size, scale_factor=scale, mode=mode, **kw), x)
    if mode == "linear":
        for size in (13, 1, 4):
            compare_grad(lambda a: F.interpolate(a, size=size, mode=mode, align_corners=True), x)


BILINEAR = [  # size, scale_factor, align_corners
    (None, 2, False), (None, 2, True), ((7, 9), None, False), ((7, 9), None, True),
    ((3, 2), None, False), ((3, 2), None, True), (None, (1.5, 0.7), False), ((1, 1), None, True),
    ((1, 4), None, False), ((5, 6), None, False),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("case", BILINEAR, ids=str)
def test_bilinear_bicubic(mode, case):
    size, scale, align = case
    x = make((2, 3, 5, 6), torch.float32)
    fn = lambda a: F.interpolate(a, size=size, scale_factor=scale, mode=mode, align_corners=align)
    compare_grad(fn, x)
    compare_grad(lambda a: fn(channels_last(a)), x)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
def test_dtypes_and_layouts(mode, dtype):
    x = make((2, 3, 4, 5), dtype)
    kw = {} if mode.startswith("nearest") else {"align_corners": False}
    for _, layout in list(layouts(x)) + [("channels_last", channels_last)]:
        check(lambda a: F.interpolate(layout(a), scale_factor=(1.5, 2), mode=mode, **kw), x)
    compare_grad(lambda a: F.interpolate(a, size=(7, 3), mode=mode, **kw), x)
    compare_grad(lambda a: F.interpolate(a, size=(6, 8), mode=mode, **kw),
                 torch.empty(0, 3, 4, 5, dtype=dtype))


def test_uint8_nearest():
    x = make((2, 3, 4, 5), torch.uint8)
    for mode in ("nearest", "nearest-exact"):
        check(lambda a: F.interpolate(a, scale_factor=2.5, mode=mode), x)
        check(lambda a: F.interpolate(channels_last(a), size=(3, 9), mode=mode), x)
        check(lambda a: F.interpolate(a, size=9, mode=mode), x[0])


AA_CASES = [  # size, scale_factor, align_corners
    ((3, 4), None, False), ((2, 13), None, False), ((7, 9), None, True), ((1, 1), None, False),
    ((5, 2), None, True), ((12, 6), None, False), (None, 0.4, False), (None, (0.3, 1.7), True),
    (None, 2, False),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("case", AA_CASES, ids=str)
def test_antialias(case, mode, dtype):
    size, scale, align = case
    x = make((2, 3, 5, 6), dtype)
    fn = lambda a: F.interpolate(a, size=size, scale_factor=scale, mode=mode, align_corners=align,
                                 antialias=True)
    compare_grad(fn, x)
    compare_grad(lambda a: fn(channels_last(a)), x)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_layouts_and_direct_ops(mode):
    aa = torch.ops.aten._upsample_bilinear2d_aa if mode == "bilinear" else torch.ops.aten._upsample_bicubic2d_aa
    aa_backward = (torch.ops.aten._upsample_bilinear2d_aa_backward if mode == "bilinear"
                   else torch.ops.aten._upsample_bicubic2d_aa_backward)
    x = make((2, 3, 8, 7), torch.float32)
    for _, layout in layouts(x):
        check(lambda a: F.interpolate(layout(a), size=(3, 5), mode=mode, antialias=True), x)
    check(lambda a: aa.out(a, [3, 10], False, None, None, out=torch.empty(0, device=a.device)), x)
    # explicit scales that do not match the sizes (the taps use them, as on the CPU)
    check(lambda a: aa(a, [3, 10], False, 0.25, 1.6), x)
    check(lambda a: aa(a, [8, 7], False, 0.5, None), x)  # same sizes: the forward copies
    g = make((2, 3, 3, 10), torch.float32, seed=2)
    check(lambda gg: aa_backward(gg, [3, 10], [2, 3, 8, 7], False, 0.25, 1.6), g)
    check(lambda gg: aa_backward(gg, [3, 10], [2, 3, 8, 7], True, None, None), g)
    check(lambda gg: aa_backward.grad_input(gg, [3, 10], [2, 3, 8, 7], False, None, None,
                                            grad_input=torch.empty(0, device=gg.device)), g)
    # empty batch / channels, a large downscale (many taps per output)
    compare_grad(lambda a: F.interpolate(a, size=(2, 3), mode=mode, antialias=True),
                 torch.empty(0, 3, 8, 7))
    check(lambda a: F.interpolate(a, size=(2, 3), mode=mode, antialias=True),
          torch.empty(2, 0, 8, 7))  # the CPU rejects empty channels
    compare_grad(lambda a: F.interpolate(a, size=(3, 2), mode=mode, antialias=True),
                 make((1, 2, 40, 33), torch.float32))


def test_antialias_bad_input():
    x = make((1, 2, 6, 5), torch.float32)
    for dtype in (torch.float16, torch.bfloat16, torch.int32):
        check(lambda a: F.interpolate(a, size=(3, 2), mode="bilinear", antialias=True), x.to(dtype))
        check(lambda a: torch.ops.aten._upsample_bicubic2d_aa(a, [3, 2], False, None, None), x.to(dtype))
    g = make((1, 2, 3, 2), torch.float32)
    for dtype in (torch.float16, torch.uint8):
        check(lambda gg: torch.ops.aten._upsample_bilinear2d_aa_backward(gg, [3, 2], [1, 2, 6, 5], False,
                                                                         None, None), g.to(dtype))
    check(lambda a: torch.ops.aten._upsample_bilinear2d_aa(a, [3], False, None, None), x)
    check(lambda a: torch.ops.aten._upsample_bilinear2d_aa(a, [0, 3], False, None, None), x)
    check(lambda a: F.interpolate(a, size=(3, 2), mode="bicubic", antialias=True), x[0])
    with pytest.raises(NotImplementedError, match="compute_index_ranges_weights"):
        F.interpolate(x.half().to("vk"), size=(3, 2), mode="bilinear", antialias=True)


UINT8_CASES = [  # size, scale_factor
    ((3, 4), None), ((7, 9), None), ((2, 13), None), ((5, 6), None), ((12, 2), None),
    ((20, 25), None), (None, 0.45), (None, (1.7, 0.6)), (None, 3),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("case", UINT8_CASES, ids=str)
def test_uint8_bilinear_bicubic(case, antialias, mode):
    """uint8 results equal the CPU's exactly (its int16 weights, rounding and clamping), for
    3 channels (the CPU's AVX kernel) and 5 (its generic one), both layouts."""
    size, scale = case
    for channels in (3, 5):
        x = make((2, channels, 5, 6), torch.uint8, low=0, high=25.5)
        for align in (False, True):
            fn = lambda a: F.interpolate(a, size=size, scale_factor=scale, mode=mode,
                                         align_corners=align, antialias=antialias)
            check(fn, x, atol=0, rtol=0)
            check(lambda a: fn(channels_last(a)), x, atol=0, rtol=0)


def test_uint8_layouts_and_direct_ops():
    x = make((2, 4, 6, 7), torch.uint8, low=0, high=25.5)
    for _, layout in layouts(x):
        check(lambda a: F.interpolate(layout(a), size=(4, 11), mode="bilinear"), x, atol=0, rtol=0)
        check(lambda a: F.interpolate(layout(a), size=(9, 3), mode="bicubic", antialias=True), x,
              atol=0, rtol=0)
    check(lambda a: torch.ops.aten.upsample_bicubic2d(a, [9, 5], False, 2.5, 0.5), x, atol=0, rtol=0)
    check(lambda a: torch.ops.aten.upsample_bilinear2d.out(a, [3, 14], True, None, None,
                                                           out=torch.empty(0, dtype=torch.uint8, device=a.device)),
          x, atol=0, rtol=0)
    check(lambda a: torch.ops.aten.upsample_bilinear2d(a, [6, 7], False, None, None), x, atol=0, rtol=0)
    check(lambda a: F.interpolate(a, size=(5, 6), mode="bicubic"), torch.empty(0, 3, 4, 5, dtype=torch.uint8))
    # saturated values: overshoot of the cubic filter is clamped to [0, 255]
    sharp = torch.zeros(1, 3, 6, 6, dtype=torch.uint8)
    sharp[..., ::2, :] = 255
    for aa in (False, True):
        check(lambda a: F.interpolate(a, size=(11, 4), mode="bicubic", antialias=aa), sharp, atol=0, rtol=0)
        check(lambda a: F.interpolate(a, size=(4, 11), mode="bicubic", antialias=aa), sharp, atol=0, rtol=0)


def test_3d_modes():
    x = make((2, 2, 3, 4, 5), torch.float32)
    for mode in ("nearest", "nearest-exact", "trilinear"):
        kw = {} if mode.startswith("nearest") else {"align_corners": False}
        compare_grad(lambda a: F.interpolate(a, scale_factor=(2, 1.5, 0.8), mode=mode, **kw), x)
        compare_grad(lambda a: F.interpolate(
            a.contiguous(memory_format=torch.channels_last_3d), size=(4, 3, 7), mode=mode, **kw), x)
    compare_grad(lambda a: F.interpolate(a, size=(5, 7, 2), mode="trilinear", align_corners=True), x)


def test_special_values():
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[[[1.0, nan, 2.0], [inf, -inf, 0.0]]]])
    check(lambda a: F.interpolate(a, scale_factor=2, mode="nearest"), x)
    check(lambda a: F.interpolate(a, size=(3, 5), mode="nearest-exact"), x)


def test_out_variants_and_direct_ops():
    x = make((2, 3, 4, 5), torch.float32)
    check(lambda a: torch.ops.aten.upsample_nearest2d.out(a, [8, 10], None, None,
                                                          out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch.ops.aten.upsample_bilinear2d.out(a, [6, 7], True, None, None,
                                                           out=torch.empty(0, device=a.device)), x)
    g = make((2, 3, 6, 7), torch.float32)
    check(lambda gg: torch.ops.aten.upsample_bilinear2d_backward(gg, [6, 7], [2, 3, 4, 5], False, 1.5, 1.4), g)
    check(lambda gg: torch.ops.aten.upsample_nearest2d_backward.grad_input(
        gg, [6, 7], [2, 3, 4, 5], None, None, grad_input=torch.empty(0, device=gg.device)), g)
    # explicit scales that do not match the sizes (the kernel must use them as the CPU does)
    check(lambda a: torch.ops.aten.upsample_nearest2d(a, [6, 7], 3.0, 0.5), x)
    check(lambda a: torch.ops.aten._upsample_nearest_exact2d(a, [6, 7], 3.0, 0.5), x)
    check(lambda a: torch.ops.aten.upsample_bilinear2d(a, [6, 7], False, 3.0, 0.5), x)
    check(lambda a: torch.ops.aten.upsample_bicubic2d(a, [6, 7], False, 3.0, 0.5), x)
    check(lambda gg: torch.ops.aten.upsample_nearest2d_backward(gg, [6, 7], [2, 3, 4, 5], 3.0, 0.5), g)


def test_bad_input():
    x = make((1, 2, 3, 4), torch.float32)
    check(lambda a: F.interpolate(a, size=(0, 4)), x)                       # output size 0
    check(lambda a: F.interpolate(a, size=(-1, 4)), x)
    check(lambda a: F.interpolate(a, scale_factor=0.1), x)                  # rounds to 0
    check(lambda a: torch.ops.aten.upsample_nearest2d(a, [4], None, None), x)   # wrong length
    check(lambda a: torch.ops.aten.upsample_nearest2d(a, [4, 4], None, None), x[0])  # 3-D input
    check(lambda a: torch.ops.aten.upsample_bilinear2d(a, [4, 4], False, None, None), torch.zeros(1, 2, 0, 4))
    check(lambda a: F.interpolate(a, scale_factor=2, mode="bilinear"), x.to(torch.int32))
    check(lambda a: F.interpolate(a, scale_factor=2, mode="nearest"), x.to(torch.int32))
    check(lambda a: F.interpolate(a, scale_factor=2, mode="linear"), x[0].to(torch.uint8))
