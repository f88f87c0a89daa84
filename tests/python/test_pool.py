"""Pooling ops against PyTorch's CPU: max / avg / adaptive pooling in 1-D, 2-D and 3-D, forward
(values, indices, output memory format) and autograd backward, over window parameters,
layouts, dtypes, empty batches and bad arguments."""
import itertools
import re

import pytest
import torch
import torch.nn.functional as F

from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def tol(dtype):
    return TOLERANCE.get(dtype, {})


def compare_grad(fn, x, dtype=None, seed=7):
    """fn(x) forward and the autograd gradient of x, CPU vs vk (x a CPU tensor; any layout
    transform belongs inside fn)."""
    dtype = dtype or x.dtype
    xc = x.clone().requires_grad_()
    xv = x.to("vk").requires_grad_()
    yc = fn(xc)
    yv = fn(xv)
    assert yv.device.type == "vk"
    torch.testing.assert_close(yv.cpu(), yc.detach(), equal_nan=True, **tol(dtype))
    assert yv.is_contiguous(memory_format=torch.channels_last) == yc.is_contiguous(
        memory_format=torch.channels_last)
    g = make(yc.shape, dtype, seed=seed)
    (gc,) = torch.autograd.grad(yc, xc, g)
    (gv,) = torch.autograd.grad(yv, xv, g.to("vk"))
    assert gv.device.type == "vk"
    # Gradients sum several rounded terms: allow a few ulps in the 16-bit types.
    gtol = tol(dtype) if dtype in (torch.float32, torch.float64) else dict(
        atol=4 * tol(dtype)["atol"], rtol=2 * tol(dtype)["rtol"])
    torch.testing.assert_close(gv.cpu(), gc, **gtol)


def channels_last(x):
    return x.contiguous(memory_format=torch.channels_last)


# ---------------------------------------------------------------- max pooling

MAX_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),
    (3, 1, 1, 1, False),
    (3, 2, 1, 1, True),
    ((2, 3), (1, 2), (1, 1), 1, False),
    (3, 2, 0, 2, True),
    ((3, 2), 3, (1, 0), (2, 1), True),
    (1, 1, 0, 1, False),
    (4, 3, 2, 1, True),
]


@pytest.mark.parametrize("case", MAX_CASES, ids=str)
def test_max_pool2d_forward_backward(case):
    k, s, p, d, ceil = case
    x = make((2, 3, 9, 10), torch.float32, seed=1)
    fn = lambda a: F.max_pool2d(a, k, s, p, d, ceil_mode=ceil)
    compare_grad(fn, x)
    check(lambda a: F.max_pool2d(a, k, s, p, d, ceil_mode=ceil, return_indices=True), x)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
def test_max_pool2d_dtypes_and_layouts(dtype):
    x = make((2, 3, 7, 6), dtype, seed=2)
    for _, layout in list(layouts(x)) + [("channels_last", channels_last)]:
        check(lambda a: F.max_pool2d(layout(a), 3, 2, 1, return_indices=True), x)
    check(lambda a: F.max_pool2d(a, 2), make((3, 5, 5), dtype))         # no batch dim
    if dtype.is_floating_point:
        compare_grad(lambda a: F.max_pool2d(channels_last(a), 3, 2, 1), x)
        compare_grad(lambda a: F.max_pool2d(a.transpose(2, 3), (2, 3), 1), x)


def test_max_pool2d_nan_inf_ties():
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[[[1.0, nan, 2.0, nan], [3.0, 3.0, -inf, -inf], [-inf, -inf, 5.0, 5.0],
                        [inf, 1.0, 0.0, nan]]]])
    check(lambda a: F.max_pool2d(a, 2, 1, return_indices=True), x)
    check(lambda a: F.max_pool2d(a, 2, 2, 1, return_indices=True), x)
    check(lambda a: F.max_pool2d(a, 2, 1, return_indices=True), torch.zeros(1, 2, 3, 3))  # ties
    xi = torch.full((1, 1, 3, 3), torch.iinfo(torch.int64).min, dtype=torch.int64)
    check(lambda a: F.max_pool2d(a, 2, 1, return_indices=True), xi)


def test_max_pool1d_and_3d():
    x = make((2, 3, 11), torch.float32)
    for k, s, p, d, ceil in ((3, 2, 1, 1, True), (2, None, 0, 2, False), (4, 1, 2, 1, False)):
        compare_grad(lambda a: F.max_pool1d(a, k, s, p, d, ceil_mode=ceil), x)
        check(lambda a: F.max_pool1d(a, k, s, p, d, ceil_mode=ceil, return_indices=True), x)
    check(lambda a: F.max_pool1d(a, 2), make((3, 8), torch.float16))   # no batch dim
    x3 = make((2, 2, 5, 6, 4), torch.float32)
    for k, s, p, d, ceil in ((2, 1, 1, 1, False), (3, 2, 1, (1, 2, 1), True), ((1, 2, 3), (1, 2, 2), 0, 1, True)):
        check(lambda a: F.max_pool3d(a, k, s, p, d, ceil_mode=ceil, return_indices=True), x3)
        compare_grad(lambda a: F.max_pool3d(a, k, s, p, d, ceil_mode=ceil), x3)
    compare_grad(lambda a: F.max_pool3d(a.contiguous(memory_format=torch.channels_last_3d), 2, 1, 1), x3)
    check(lambda a: F.max_pool3d(a, 2, return_indices=True), make((2, 4, 4, 4), torch.int32))
    check(lambda a: F.max_pool3d(a, 2, padding=2), x3)                      # pad > kernel / 2
    check(lambda a: F.max_pool3d(a, 2), make((4, 4, 4), torch.float32))     # 3-D input


def test_max_pool_empty_batch_and_out():
    x = torch.empty(0, 3, 6, 6)
    check(lambda a: F.max_pool2d(a, 2, return_indices=True), x)
    compare_grad(lambda a: F.max_pool2d(a, 2), x)
    y = make((2, 2, 6, 6), torch.float32)
    op = torch.ops.aten.max_pool2d_with_indices.out

    def with_out(a):
        out = torch.empty(0, device=a.device)
        idx = torch.empty(0, dtype=torch.int64, device=a.device)
        op(a, [2, 2], [2, 2], [0, 0], [1, 1], False, out=out, indices=idx)
        return out, idx
    check(with_out, y)


BAD_MAX = [
    dict(kernel_size=5),                         # kernel larger than the input: output < 1
    dict(kernel_size=2, stride=0),               # zero stride
    dict(kernel_size=2, stride=-1),              # negative stride
    dict(kernel_size=2, padding=2),              # pad > kernel / 2
    dict(kernel_size=0),                         # zero kernel
    dict(kernel_size=2, dilation=0),             # zero dilation
    dict(kernel_size=(2, 2, 2)),                 # wrong kernel length
    dict(kernel_size=2, padding=-1),
]


@pytest.mark.parametrize("kwargs", BAD_MAX, ids=str)
def test_max_pool2d_bad_input(kwargs):
    check(lambda a: F.max_pool2d(a, **kwargs), make((1, 2, 3, 3), torch.float32))


def test_pool_bad_dims_and_dtypes():
    check(lambda a: F.max_pool2d(a, 2), make((4, 4), torch.float32))            # 2-D input
    check(lambda a: F.max_pool2d(a, 2), make((1, 1, 1, 4, 4), torch.float32))   # 5-D input
    check(lambda a: F.max_pool2d(a, 2), torch.zeros(1, 0, 4, 4))                # empty channels
    check(lambda a: F.max_pool2d(a, 2), torch.zeros(1, 1, 4, 4, dtype=torch.bool))
    check(lambda a: F.avg_pool2d(a, 2), make((1, 1, 4, 4), torch.int32))
    check(lambda a: F.avg_pool2d(a, 2, divisor_override=0), make((1, 1, 4, 4), torch.float32))
    check(lambda a: F.avg_pool2d(a, 4, padding=3), make((1, 1, 4, 4), torch.float32))
    check(lambda a: F.avg_pool2d(a, 5), make((1, 1, 4, 4), torch.float32))
    check(lambda a: F.adaptive_avg_pool2d(a, (-1, 2)), make((1, 1, 4, 4), torch.float32))
    check(lambda a: F.adaptive_avg_pool2d(a, 2), make((4, 4), torch.float32))
    check(lambda a: F.adaptive_avg_pool2d(a, 2), torch.zeros(1, 1, 0, 4))
    check(lambda a: F.adaptive_max_pool2d(a, 2), make((1, 1, 4, 4), torch.int32))
    check(lambda a: F.adaptive_max_pool2d(a, 2), make((4, 4), torch.float32))
    check(lambda a: F.adaptive_avg_pool2d(a, 2), make((1, 1, 4, 4), torch.int64))


# ---------------------------------------------------------------- avg pooling

AVG_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (2, None, 0, False, True, None),
    (3, 2, 1, False, True, None),
    (3, 2, 1, True, False, None),
    ((2, 3), (2, 1), (1, 1), True, True, None),
    (3, 2, 1, True, True, 5),
    (3, 3, 1, True, False, None),
    (4, 3, 2, True, True, None),
    (3, 1, 0, False, False, 2),
    (2, 1, 1, False, True, -3),  # PyTorch accepts a negative override
]


@pytest.mark.parametrize("case", AVG_CASES, ids=str)
def test_avg_pool2d_forward_backward(case):
    k, s, p, ceil, cip, div = case
    x = make((2, 3, 8, 9), torch.float32, seed=3)
    compare_grad(lambda a: F.avg_pool2d(a, k, s, p, ceil, cip, div), x)
    compare_grad(lambda a: F.avg_pool2d(channels_last(a), k, s, p, ceil, cip, div), x)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=str)
def test_avg_pool2d_dtypes_and_layouts(dtype):
    x = make((2, 3, 7, 6), dtype, seed=4)
    for _, layout in list(layouts(x)) + [("channels_last", channels_last)]:
        check(lambda a: F.avg_pool2d(layout(a), 3, 2, 1, ceil_mode=True), x)
        check(lambda a: F.avg_pool2d(layout(a), 2, 1, count_include_pad=False), x)
    check(lambda a: F.avg_pool2d(a, 2), make((3, 5, 5), dtype))          # no batch dim
    check(lambda a: F.avg_pool2d(a, 2), torch.empty(0, 3, 4, 4, dtype=dtype))
    if dtype.is_floating_point:
        compare_grad(lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False), x)
        compare_grad(lambda a: F.avg_pool2d(a, 2), torch.empty(0, 3, 4, 4, dtype=dtype))


def test_avg_pool1d_and_3d():
    x = make((2, 3, 11), torch.float32)
    for k, s, p, ceil, cip in ((3, 2, 1, True, False), (2, None, 0, False, True), (4, 1, 2, True, True)):
        compare_grad(lambda a: F.avg_pool1d(a, k, s, p, ceil, cip), x)
    x3 = make((2, 2, 5, 6, 4), torch.float32)
    for k, s, p, ceil, cip, div in ((2, 1, 1, False, True, None), (3, 2, 1, True, False, None),
                                    ((1, 2, 3), (1, 2, 1), (0, 1, 1), True, True, 3)):
        compare_grad(lambda a: F.avg_pool3d(a, k, s, p, ceil, cip, div), x3)
    compare_grad(lambda a: F.avg_pool3d(a.contiguous(memory_format=torch.channels_last_3d), 2, 1, 1), x3)


def test_avg_pool_out_variants():
    x = make((2, 2, 6, 6), torch.float32)
    check(lambda a: torch.ops.aten.avg_pool2d.out(a, [2, 2], [2, 2], [0, 0], False, True, None,
                                                  out=torch.empty(0, device=a.device)), x)
    g = make((2, 2, 3, 3), torch.float32)
    check(lambda gg, a: torch.ops.aten.avg_pool2d_backward.grad_input(
        gg, a, [2, 2], [2, 2], [0, 0], False, True, None,
        grad_input=torch.empty(0, device=a.device)), g, x)


# ---------------------------------------------------------------- adaptive pooling

ADAPTIVE_SIZES = [(3, 2), (1, 1), (5, 7), (4, 4), (2, 9), (None, 3)]


@pytest.mark.parametrize("size", ADAPTIVE_SIZES, ids=str)
def test_adaptive_pool2d(size):
    x = make((2, 3, 7, 9), torch.float32, seed=5)
    compare_grad(lambda a: F.adaptive_avg_pool2d(a, size), x)
    compare_grad(lambda a: F.adaptive_max_pool2d(a, size), x)
    check(lambda a: F.adaptive_max_pool2d(a, size, return_indices=True), x)
    compare_grad(lambda a: F.adaptive_avg_pool2d(channels_last(a), size), x)
    compare_grad(lambda a: F.adaptive_max_pool2d(channels_last(a), size), x)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_pool_dtypes_layouts_dims(dtype):
    x = make((2, 3, 7, 6), dtype, seed=6)
    for _, layout in layouts(x):
        check(lambda a: F.adaptive_avg_pool2d(layout(a), (3, 4)), x)
        check(lambda a: F.adaptive_max_pool2d(layout(a), (4, 3), return_indices=True), x)
    compare_grad(lambda a: F.adaptive_avg_pool2d(a, (4, 5)), x)
    compare_grad(lambda a: F.adaptive_max_pool2d(a, (4, 5)), x)
    compare_grad(lambda a: F.adaptive_avg_pool2d(a, 2), make((3, 5, 5), dtype))   # no batch dim
    compare_grad(lambda a: F.adaptive_avg_pool2d(a, 2), torch.empty(0, 3, 5, 5, dtype=dtype))
    x1 = make((2, 3, 10), dtype)
    compare_grad(lambda a: F.adaptive_avg_pool1d(a, 4), x1)
    compare_grad(lambda a: F.adaptive_max_pool1d(a, 3), x1)
    x3 = make((2, 2, 5, 6, 4), dtype)
    compare_grad(lambda a: F.adaptive_avg_pool3d(a, (2, 3, 3)), x3)
    compare_grad(lambda a: F.adaptive_max_pool3d(a, (3, 2, 3)), x3)


# ---------------------------------------------------------------- a model

def test_pooling_model_strict_native():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.MaxPool2d(3, 2, 1),
        torch.nn.AvgPool2d(2, ceil_mode=True),
        torch.nn.AdaptiveAvgPool2d((3, 3)),
        torch.nn.Upsample(scale_factor=2, mode="bilinear"),
        torch.nn.AdaptiveMaxPool2d(4),
        torch.nn.Upsample(size=(7, 5), mode="nearest"),
    )
    x = make((2, 3, 16, 14), torch.float32)
    compare_grad(model, x)
    compare_grad(lambda a: model(channels_last(a)), x)


# ---------------------------------------------------------------- max unpooling

A = torch.ops.aten


def sync():
    torch.vk.synchronize()


def same_error(fn, *args):
    """fn raises the same exception type and message on CPU and on vk (host-side checks)."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with pytest.raises(type(cpu.value)) as vk:
        fn(*[a.to("vk") if isinstance(a, torch.Tensor) else a for a in args])
        sync()
    assert str(vk.value) == str(cpu.value)


def pooled(shape, dtype, kernel, seed=0, dims=2):
    """Values and unique max-pool indices (the input max_unpool expects)."""
    x = make(shape, torch.float64, seed=seed)
    pool = F.max_pool2d if dims == 2 else (F.max_pool3d if dims == 3 else F.max_pool1d)
    y, idx = pool(x, kernel, return_indices=True)
    return y.to(dtype), idx


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_max_unpool2d_dtypes_layouts(dtype):
    y, idx = pooled((2, 3, 8, 6), dtype, 2)
    for _, layout in list(layouts(y)) + [("channels_last", channels_last)]:
        check(lambda a, i: F.max_unpool2d(layout(a), layout(i), 2), y, idx)
        r = check(lambda a, i: F.max_unpool2d(layout(a), layout(i), 2, output_size=(9, 7)), y, idx)
    assert F.max_unpool2d(channels_last(y.to("vk")), channels_last(idx.to("vk")), 2).is_contiguous(
        memory_format=torch.channels_last)
    check(lambda a, i: F.max_unpool2d(a, i, 2), y[0], idx[0])                 # no batch dim
    check(lambda a, i: F.max_unpool2d(a, i, 2), y[:0], idx[:0])               # empty batch
    check(lambda a, i: A.max_unpool2d(a, i, [0, 4]), y, idx)                  # empty output
    compare_grad(lambda a: F.max_unpool2d(a, idx.to(a.device), 2), y)
    compare_grad(lambda a: F.max_unpool2d(channels_last(a), channels_last(idx.to(a.device)), 2), y)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_max_unpool1d_3d(dtype):
    y, idx = pooled((2, 3, 9), dtype, 3, dims=1)
    check(lambda a, i: F.max_unpool1d(a, i, 3), y, idx)
    check(lambda a, i: F.max_unpool1d(a, i, 3, output_size=(10,)), y[0], idx[0])
    compare_grad(lambda a: F.max_unpool1d(a, idx.to(a.device), 3), y)
    y3, idx3 = pooled((2, 2, 4, 6, 4), dtype, 2, dims=3)
    for _, layout in layouts(y3):
        check(lambda a, i: F.max_unpool3d(layout(a), layout(i), 2), y3, idx3)
    check(lambda a, i: F.max_unpool3d(a, i, 2, output_size=(5, 7, 5)), y3, idx3)
    r = check(lambda a, i: F.max_unpool3d(a.contiguous(memory_format=torch.channels_last_3d), i, 2), y3, idx3)
    check(lambda a, i: F.max_unpool3d(a, i, 2), y3[0], idx3[0])               # no batch dim
    check(lambda a, i: F.max_unpool3d(a, i, 2), y3[:0], idx3[:0])
    compare_grad(lambda a: F.max_unpool3d(a, idx3.to(a.device), 2), y3)


def test_max_unpool_out_variants():
    y, idx = pooled((2, 3, 4, 4), torch.float32, 2)
    check(lambda a, i: A.max_unpool2d.out(a, i, [8, 8], out=torch.empty(5, device=a.device)), y, idx)
    y3, idx3 = pooled((1, 2, 4, 4, 4), torch.float32, 2, dims=3)
    check(lambda a, i: A.max_unpool3d.out(a, i, [4, 4, 4], [2, 2, 2], [0, 0, 0],
                                          out=torch.empty(0, device=a.device)), y3, idx3)


def test_max_unpool_bad_arguments():
    y, idx = pooled((2, 3, 4, 4), torch.float32, 2)
    same_error(lambda a, i: A.max_unpool2d(a, i.int(), [4, 4]), y, idx)
    same_error(lambda a, i: A.max_unpool2d(a, i, [4]), y, idx)
    same_error(lambda a, i: A.max_unpool2d(a[0, 0], i[0, 0], [4, 4]), y, idx)
    same_error(lambda a, i: A.max_unpool2d(a, i[:, :, :1], [4, 4]), y, idx)
    same_error(lambda a, i: A.max_unpool2d(a[:, :0], i[:, :0], [4, 4]), y, idx)
    same_error(lambda a, i: A.max_unpool2d(a, i, [-1, 4]), y, idx)
    for dtype in INTS + [torch.bool]:
        same_error(lambda a, i: A.max_unpool2d(a.to(dtype), i, [4, 4]), y, idx)
    y3, i3 = y[None], idx[None]
    same_error(lambda a, i: A.max_unpool3d(a, i.int(), [2, 4, 4], [1, 1, 1], [0, 0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a, i, [4, 4], [1, 1, 1], [0, 0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a, i, [2, 4, 4], [1, 1], [0, 0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a, i, [2, 4, 4], [1, 1, 1], [0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a, i, [2, 4, 4], [1, 0, 1], [0, 0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a[0, 0], i[0, 0], [2, 4, 4], [1, 1, 1], [0, 0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a, i[..., :1], [2, 4, 4], [1, 1, 1], [0, 0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a[:, :, :0], i[:, :, :0], [2, 4, 4], [1, 1, 1], [0, 0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a, i, [-1, 4, 4], [1, 1, 1], [0, 0, 0]), y3, i3)
    same_error(lambda a, i: A.max_unpool3d(a.int(), i, [2, 4, 4], [1, 1, 1], [0, 0, 0]), y3, i3)


@pytest.mark.parametrize("bad", [16, 99, -1])
def test_max_unpool_invalid_index_raises_on_device(bad):
    for dims in (2, 3):
        x = torch.arange(1.0, 5.0).view((1,) * (dims - 1) + (1, 2, 2))
        i = torch.tensor([0, 1, bad, 3]).view(x.shape)
        size = [4, 4] if dims == 2 else [1, 4, 4]
        fn = (lambda a, j: A.max_unpool2d(a, j, size)) if dims == 2 else (
            lambda a, j: A.max_unpool3d(a, j, size, [1, 1, 1], [0, 0, 0]))
        with pytest.raises(RuntimeError) as cpu:
            fn(x, i)
        assert "Found an invalid max index" in str(cpu.value)
        before = torch.full((64,), 3.0, device="vk")
        out = fn(x.to("vk"), i.to("vk"))  # asynchronous: found on the device
        after = torch.full((64,), 5.0, device="vk")
        with pytest.raises(RuntimeError, match=re.escape(str(cpu.value))):
            sync()
        sync()  # reported once
        assert torch.equal(before.cpu(), torch.full((64,), 3.0))
        assert torch.equal(after.cpu(), torch.full((64,), 5.0))
        # The valid entries were written, nothing else.
        expected = torch.zeros(16)
        for k, v in ((0, 1.0), (1, 2.0), (3, 4.0)):
            expected[k] = v
        assert torch.equal(out.cpu().flatten(), expected)


# ---------------------------------------------------------------- fractional max pooling

def samples(n, c, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, c, d, generator=g, dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_fractional_max_pool2d_same_samples(dtype):
    x = make((2, 3, 11, 9), dtype, seed=3)
    for seed in range(3):
        u = samples(2, 3, 2, dtype, seed)
        for k, os in (((2, 2), (5, 4)), ((3, 2), (7, 8)), ((1, 1), (11, 9)), ((2, 3), (1, 1)), (4, (2, 6))):
            kk = (k, k) if isinstance(k, int) else k
            r = check(lambda a, s: A.fractional_max_pool2d(a, list(kk), list(os), s), x, u)
    for _, layout in list(layouts(x)) + [("channels_last", channels_last)]:
        check(lambda a, s: F.fractional_max_pool2d(layout(a), 3, output_size=(4, 3), return_indices=True,
                                                   _random_samples=s), x, u)
    check(lambda a, s: F.fractional_max_pool2d(a, 2, output_ratio=0.5, _random_samples=s[:1]), x[0], u)
    check(lambda a, s: A.fractional_max_pool2d(a, [2, 2], [3, 3], s), x[:0], u)          # empty batch
    compare_grad(lambda a: F.fractional_max_pool2d(a, 2, output_size=(6, 5), _random_samples=u.to(a.device)), x)
    compare_grad(lambda a: F.fractional_max_pool2d(a, 3, output_size=(4, 4), _random_samples=u.to(a.device)),
                 x[:1, :, :7, :7])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_fractional_max_pool3d_same_samples(dtype):
    x = make((2, 2, 7, 6, 8), dtype, seed=4)
    u = samples(2, 2, 3, dtype, 1)
    for k, os in (((2, 2, 2), (3, 4, 5)), ((1, 3, 2), (7, 2, 6)), ((2, 2, 2), (1, 1, 1))):
        check(lambda a, s: A.fractional_max_pool3d(a, list(k), list(os), s), x, u)
    for _, layout in layouts(x):
        check(lambda a, s: F.fractional_max_pool3d(layout(a), 2, output_size=(3, 3, 3), return_indices=True,
                                                   _random_samples=s), x, u)
    check(lambda a, s: F.fractional_max_pool3d(a, 2, output_ratio=0.5, _random_samples=s[:1]), x[0], u)
    check(lambda a, s: A.fractional_max_pool3d(a, [0, 2, 2], [3, 3, 3], s), x, u)        # empty windows
    compare_grad(lambda a: F.fractional_max_pool3d(a, 2, output_size=(4, 3, 5), _random_samples=u.to(a.device)), x)


def test_fractional_max_pool_out_variants():
    x = make((2, 3, 8, 8), torch.float32)
    u = samples(2, 3, 2, torch.float32)
    check(lambda a, s: A.fractional_max_pool2d.output(
        a, [2, 2], [4, 5], s, output=torch.empty(0, device=a.device),
        indices=torch.empty(0, dtype=torch.long, device=a.device)), x, u)
    y, idx = A.fractional_max_pool2d(x, [2, 2], [4, 5], u)
    g = make(y.shape, torch.float32, seed=2)
    check(lambda gg, a, i: A.fractional_max_pool2d_backward.grad_input(
        gg, a, [2, 2], [4, 5], i, grad_input=torch.empty(0, device=a.device)), g, x, idx)
    x3 = make((1, 2, 5, 5, 5), torch.float32)
    u3 = samples(1, 2, 3, torch.float32)
    check(lambda a, s: A.fractional_max_pool3d.output(
        a, [2, 2, 2], [3, 3, 3], s, output=torch.empty(0, device=a.device),
        indices=torch.empty(0, dtype=torch.long, device=a.device)), x3, u3)
    y3, idx3 = A.fractional_max_pool3d(x3, [2, 2, 2], [3, 3, 3], u3)
    check(lambda gg, a, i: A.fractional_max_pool3d_backward.grad_input(
        gg, a, [2, 2, 2], [3, 3, 3], i, grad_input=torch.empty(0, device=a.device)), y3, x3, idx3)


def window_max_somewhere(x, y, idx, kernel):
    """Every output is the max of some kernel-sized window that holds its index."""
    x, y, idx = x.cpu(), y.cpu(), idx.cpu()
    dims = len(kernel)
    sizes = x.shape[-dims:]
    flat_x = x.flatten(-dims)
    assert torch.equal(flat_x.gather(-1, idx.flatten(-dims)).view_as(y), y)
    planes_x = x.reshape(-1, *sizes)
    for p, (yp, ip) in enumerate(zip(y.reshape(-1, *y.shape[-dims:]), idx.reshape(-1, *y.shape[-dims:]))):
        for o in range(yp.numel()):
            coord = []
            rest = int(ip.flatten()[o])
            for s in reversed(sizes):
                coord.insert(0, rest % s)
                rest //= s
            ranges = [range(max(0, c - k + 1), min(c, s - k) + 1) for c, k, s in zip(coord, kernel, sizes)]
            ok = any(planes_x[p][tuple(slice(st, st + k) for st, k in zip(starts, kernel))].max() == yp.flatten()[o]
                     for starts in itertools.product(*ranges))
            assert ok, (p, o)


def test_fractional_max_pool_device_samples():
    x = make((2, 3, 9, 8), torch.float32, seed=5)
    xv = x.to("vk")
    y, idx = F.fractional_max_pool2d(xv, 2, output_size=(4, 5), return_indices=True)
    assert y.device.type == "vk" and y.shape == (2, 3, 4, 5) and idx.dtype == torch.long
    window_max_somewhere(x, y, idx, (2, 2))
    y, idx = F.fractional_max_pool2d(xv[0], (3, 2), output_ratio=(0.5, 0.5), return_indices=True)
    assert y.shape == (3, 4, 4)
    window_max_somewhere(x[0], y, idx, (3, 2))
    x3 = make((1, 2, 6, 5, 7), torch.float32, seed=6)
    y3, idx3 = F.fractional_max_pool3d(x3.to("vk"), 2, output_size=(3, 3, 4), return_indices=True)
    assert y3.shape == (1, 2, 3, 3, 4)
    window_max_somewhere(x3, y3, idx3, (2, 2, 2))
    # Autograd through device-drawn samples: the gradient lands on the chosen indices.
    a = xv.clone().requires_grad_()
    out, i = F.fractional_max_pool2d(a, 2, output_size=(4, 4), return_indices=True)
    out.sum().backward()
    expected = torch.zeros(6, 72).scatter_add_(1, i.cpu().view(6, -1), torch.ones(6, 16)).view_as(x)
    assert torch.equal(a.grad.cpu(), expected)


def test_fractional_max_pool_bad_arguments():
    x = make((2, 3, 6, 6), torch.float32)
    u = samples(2, 3, 2, torch.float32)
    same_error(lambda a, s: A.fractional_max_pool2d(a, [2, 2], [3, 3], s.double()), x, u)
    same_error(lambda a, s: A.fractional_max_pool2d(a, [2, 2], [3, 3], s[0]), x, u)
    same_error(lambda a, s: A.fractional_max_pool2d(a, [2, 2], [3, 3], s[:1]), x, u)
    same_error(lambda a, s: A.fractional_max_pool2d(a, [2, 2], [3, 3], s[:, :1]), x, u)
    same_error(lambda a, s: A.fractional_max_pool2d(a, [2, 2], [3, 3], s[:, :, :1]), x, u)
    same_error(lambda a, s: A.fractional_max_pool2d(a, [2, 2], [6, 3], s), x, u)
    same_error(lambda a, s: A.fractional_max_pool2d(a, [2, 2], [3], s), x, u)
    check(lambda a, s: A.fractional_max_pool2d(a, [0, 2], [3, 3], s), x, u)          # empty windows
    same_error(lambda a, s: A.fractional_max_pool2d(a[0, 0], [2, 2], [3, 3], s), x, u)
    same_error(lambda a, s: A.fractional_max_pool2d(a[:, :0], [2, 2], [3, 3], s[:, :0]), x, u)
    for dtype in (torch.int32, torch.int64, torch.uint8):
        same_error(lambda a, s: A.fractional_max_pool2d(a.to(dtype), [2, 2], [3, 3], s.to(dtype)), x, u)
    x3 = make((2, 3, 6, 6, 6), torch.float32)
    u3 = samples(2, 3, 3, torch.float32)
    same_error(lambda a, s: A.fractional_max_pool3d(a, [5, 2, 2], [3, 3, 3], s), x3, u3)
    same_error(lambda a, s: A.fractional_max_pool3d(a, [2, 2, 2], [3, 3, 3], s[:, :, :2]), x3, u3)
    same_error(lambda a, s: A.fractional_max_pool3d(a[0, 0], [2, 2, 2], [3, 3, 3], s), x3, u3)
    same_error(lambda a, s: A.fractional_max_pool3d(a.int(), [2, 2, 2], [3, 3, 3], s.int()), x3, u3)
    y3, i3 = A.fractional_max_pool3d(x3, [2, 2, 2], [3, 3, 3], u3)
    same_error(lambda g, a, i: A.fractional_max_pool3d_backward(g[:, :, :2], a, [2, 2, 2], [3, 3, 3], i), y3, x3, i3)
    same_error(lambda g, a, i: A.fractional_max_pool3d_backward(g[:, :, :, :2], a, [2, 2, 2], [3, 3, 3], i), y3, x3, i3)
    same_error(lambda g, a, i: A.fractional_max_pool3d_backward(g[..., :2], a, [2, 2, 2], [3, 3, 3], i), y3, x3, i3)
    same_error(lambda g, a, i: A.fractional_max_pool3d_backward(g.double(), a, [2, 2, 2], [3, 3, 3], i), y3, x3, i3)
    same_error(lambda g, a, i: A.fractional_max_pool3d_backward(g.int(), a.int(), [2, 2, 2], [3, 3, 3], i), y3, x3, i3)
    y, i = A.fractional_max_pool2d(x, [2, 2], [3, 3], u)
    same_error(lambda g, a, ii: A.fractional_max_pool2d_backward(g[:, :, :2], a, [2, 2], [3, 3], ii), y, x, i)
    same_error(lambda g, a, ii: A.fractional_max_pool2d_backward(g, a, [2, 2], [3, 3], ii[..., :2]), y, x, i)
    same_error(lambda g, a, ii: A.fractional_max_pool2d_backward(g.double(), a, [2, 2], [3, 3], ii), y, x, i)
