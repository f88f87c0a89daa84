"""Data movement and creation ops against PyTorch's CPU: cat / stack, arange / range /
linspace / logspace, full / fill_, eye, tril / triu, flip, roll, repeat, repeat_interleave,
constant / reflection / replication padding (1-d / 2-d / 3-d, negative pads; forward and
backward), clone / contiguous; every dtype, non-contiguous, empty and 0-dim inputs, autograd, bad input."""
import math

import pytest
import torch
import torch.nn.functional as F

from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
              torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]
NUM_DTYPES = [d for d in ALL_DTYPES if d != torch.bool]
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def grads(fn, x, seed=7, exact_reference=False):
    """Gradient of fn at x on the CPU and on vk (same upstream gradient). exact_reference:
    compare with the CPU's float64 gradient rounded to x's dtype (for sums of many float16 /
    bfloat16 terms, which vk accumulates in float32 and the CPU in the 16-bit type)."""
    xc = x.clone().requires_grad_()
    yc = fn(xc)
    g = make(yc.shape, yc.dtype, seed=seed)
    if exact_reference:
        x64 = x.double().requires_grad_()
        (gc,) = torch.autograd.grad(fn(x64), x64, g.double())
        gc = gc.to(x.dtype)
    else:
        (gc,) = torch.autograd.grad(yc, xc, g)
    xv = x.to("vk").requires_grad_()
    (gv,) = torch.autograd.grad(fn(xv), xv, g.to("vk"))
    assert gv.device.type == "vk" and gv.dtype == gc.dtype
    torch.testing.assert_close(gv.cpu(), gc, **TOLERANCE.get(x.dtype, {}))


# ---------------------------------------------------------------- cat / stack
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_cat_stack(dtype):
    a, b, c = make((2, 3, 4), dtype), make((2, 1, 4), dtype, seed=1), make((2, 5, 4), dtype, seed=2)
    for _, layout in layouts(a):
        check(lambda x, y, z: torch.cat([layout(x), y, z], 1), a, b, c)
    check(lambda x: torch.cat([x, x, x], 0), a)
    check(lambda x: torch.cat([x, x], -1), a)
    check(lambda x: torch.cat([x.transpose(0, 2), x.transpose(0, 2)], 1), a)
    check(lambda x: torch.stack([x, x], 1), a)
    check(lambda x: torch.hstack([x, x]), a)
    check(lambda x: torch.vstack([x, x]), a)


def test_cat_promotion_empty_out_and_errors():
    f = make((2, 3), torch.float32)
    i = make((2, 3), torch.int64)
    h = make((2, 3), torch.float16)
    check(lambda x, y: torch.cat([x, y]), f, i)              # type promotion as on CPU
    check(lambda x, y: torch.cat([x, y], 1), h, i)
    check(lambda x, y: torch.cat([x, y]), make((2, 3), torch.bool), make((1, 3), torch.uint8))
    check(lambda x, y: torch.cat([x, y]), f, torch.empty(0))  # legacy empty 1-D tensor skipped
    check(lambda x, y: torch.cat([y, x, y], 1), f, torch.empty(0))
    check(lambda x: torch.cat([x, x]), torch.empty(0, 3))
    check(lambda x: torch.cat([x]), f)
    check(lambda x: torch.cat([x, x]), make((0,), torch.float32))
    check(lambda x, y: torch.cat([x, y]), f, make((2, 4), torch.float32))   # shape mismatch
    check(lambda x, y: torch.cat([x, y]), f, make((2, 3, 1), torch.float32))  # dim mismatch
    check(lambda x: torch.cat([x, x], 2), f)                                    # bad dim
    check(lambda x: torch.cat([x, x]), make((), torch.float32))                 # 0-dim
    check(lambda x: torch.cat([], 0), f)

    def cat_out(x, y):
        out = torch.empty(0, dtype=torch.float64, device=x.device)
        return torch.cat([x, y], 1, out=out)
    check(cat_out, f, i)

    def cat_out_strided(x):
        out = torch.empty(6, 2, device=x.device).t()
        torch.cat([x, x], 1, out=out)
        return out
    check(cat_out_strided, f)


def test_cat_backward():
    a, b = make((2, 3), torch.float32), make((2, 2), torch.float32, seed=1)
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    av, bv = a.to("vk").requires_grad_(), b.to("vk").requires_grad_()
    g = make((2, 5), torch.float32, seed=3)
    torch.autograd.backward(torch.cat([ac, bc], 1), g)
    torch.autograd.backward(torch.cat([av, bv], 1), g.to("vk"))
    torch.testing.assert_close(av.grad.cpu(), ac.grad)
    torch.testing.assert_close(bv.grad.cpu(), bc.grad)


# ---------------------------------------------------------------- factories
@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
@pytest.mark.parametrize("dtype", NUM_DTYPES, ids=str)
def test_arange_range(dtype):
    vk = torch.device("vk")

    def both(fn):
        torch.testing.assert_close(fn(vk).cpu(), fn(torch.device("cpu")))

    both(lambda d: torch.arange(10, dtype=dtype, device=d))
    both(lambda d: torch.arange(2, 11, 3, dtype=dtype, device=d))
    if dtype != torch.uint8:
        both(lambda d: torch.arange(5, -6, -2, dtype=dtype, device=d))
        both(lambda d: torch.range(-3, 4, 2, dtype=dtype, device=d))
    if dtype.is_floating_point:
        both(lambda d: torch.arange(0, 1, 0.1, dtype=dtype, device=d))
        both(lambda d: torch.arange(1.5, -2.2, -0.3, dtype=dtype, device=d))
        both(lambda d: torch.range(0, 1, 0.25, dtype=dtype, device=d))
    both(lambda d: torch.arange(0, dtype=dtype, device=d))


def test_arange_defaults_out_and_errors():
    vk = torch.device("vk")
    assert torch.arange(5, device=vk).dtype == torch.int64
    assert torch.arange(0.5, 3, device=vk).dtype == torch.get_default_dtype()
    torch.testing.assert_close(torch.arange(0, 1000000, 7, device=vk).cpu(), torch.arange(0, 1000000, 7))
    torch.testing.assert_close(torch.arange(-1.0, 1.0, 1e-3, device=vk).cpu(), torch.arange(-1.0, 1.0, 1e-3))
    torch.testing.assert_close(torch.arange(0, 10, 0.1, dtype=torch.float64, device=vk).cpu(),
                               torch.arange(0, 10, 0.1, dtype=torch.float64))
    out = torch.empty(0, device=vk)
    torch.arange(3, 9, out=out)
    torch.testing.assert_close(out.cpu(), torch.arange(3, 9).float())
    strided = torch.empty(12, device=vk)[::2]
    torch.arange(6, out=strided)
    torch.testing.assert_close(strided.cpu(), torch.arange(6).float())
    for args in ((0, 5, 0), (5, 0, 1), (0, float("inf"), 1)):
        for dev in ("cpu", "vk"):
            with pytest.raises(RuntimeError):
                torch.arange(*args, device=dev)
    with pytest.raises(NotImplementedError):
        torch.arange(3, dtype=torch.bool, device=vk)


def spaced_tolerance(dtype, start, end, base=None):
    """16-bit linspace / logspace: the CPU computes in the 16-bit type (rounding after each
    operation, chunked by its vector width), vk in float32; both are within a few units in the
    last place of the endpoints (of the exponent, times ln(base), for logspace)."""
    if dtype not in (torch.float16, torch.bfloat16):
        return {}
    eps = torch.finfo(dtype).eps
    scale = max(abs(start), abs(end))
    if base is None:
        return dict(atol=4 * eps * scale, rtol=2 * eps)
    return dict(atol=1e-5, rtol=4 * eps * scale * math.log(base) + 2 * eps)


@pytest.mark.parametrize("dtype", NUM_DTYPES, ids=str)
def test_linspace_logspace(dtype):
    vk = torch.device("vk")

    def both(fn, start=0, end=0, base=None):
        tol = spaced_tolerance(dtype, start, end, base)
        torch.testing.assert_close(fn(vk).cpu(), fn(torch.device("cpu")), **tol)

    both(lambda d: torch.linspace(0, 10, 11, dtype=dtype, device=d), 0, 10)
    both(lambda d: torch.linspace(3, 9, 1, dtype=dtype, device=d))
    both(lambda d: torch.linspace(3, 9, 0, dtype=dtype, device=d))
    if dtype != torch.uint8:
        both(lambda d: torch.linspace(-7, 5, 9, dtype=dtype, device=d), -7, 5)
        both(lambda d: torch.linspace(5, -7, 50, dtype=dtype, device=d), 5, -7)
    both(lambda d: torch.logspace(0, 2, 3, dtype=dtype, device=d), 0, 2, 10)
    both(lambda d: torch.logspace(0, 3, 4, base=2, dtype=dtype, device=d), 0, 3, 2)
    if dtype.is_floating_point:
        both(lambda d: torch.linspace(-1.5, 2.25, 301, dtype=dtype, device=d), -1.5, 2.25)
        both(lambda d: torch.logspace(-2, 1.5, 20, dtype=dtype, device=d), -2, 1.5, 10)


def test_linspace_errors_and_out():
    vk = torch.device("vk")
    for dev in ("cpu", vk):
        with pytest.raises(RuntimeError):
            torch.linspace(0, 1, -1, device=dev)
    with pytest.raises(NotImplementedError):
        torch.linspace(0, 1, 5, dtype=torch.bool, device=vk)
    out = torch.empty(3, 3, device=vk).t()[0]
    torch.linspace(0, 1, 3, out=out)
    torch.testing.assert_close(out.cpu(), torch.linspace(0, 1, 3))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_full_fill_eye(dtype):
    vk = torch.device("vk")
    value = True if dtype == torch.bool else 3
    torch.testing.assert_close(torch.full((2, 3), value, dtype=dtype, device=vk).cpu(),
                               torch.full((2, 3), value, dtype=dtype))
    torch.testing.assert_close(torch.zeros(2, 0, dtype=dtype, device=vk).cpu(), torch.zeros(2, 0, dtype=dtype))
    for args in ((3,), (2, 4), (4, 2), (0,), (3, 0)):
        torch.testing.assert_close(torch.eye(*args, dtype=dtype, device=vk).cpu(), torch.eye(*args, dtype=dtype))
    check(lambda a: a.fill_(value), make((3, 4), dtype).t())
    check(lambda a: torch.full_like(a, value), make((3, 4), dtype))
    out = torch.empty(5, 5, dtype=dtype, device=vk)[:, 1:]
    torch.eye(5, 4, out=out)
    torch.testing.assert_close(out.cpu(), torch.eye(5, 4, dtype=dtype))
    with pytest.raises(RuntimeError):
        torch.eye(-1, device=vk)


# ---------------------------------------------------------------- tril / triu
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_tril_triu(dtype):
    x = make((2, 5, 4), dtype)
    for _, layout in layouts(x):
        for k in (0, 1, -2, 7, -9):
            check(lambda a: torch.tril(layout(a), k), x)
            check(lambda a: torch.triu(layout(a), k), x)
    check(lambda a: a.tril_(1), x)
    check(lambda a: a.triu_(-1), x)
    check(lambda a: a.transpose(1, 2).tril_(0), x)       # in-place on a non-contiguous view
    check(lambda a: a[:, :, 1:].triu_(1), x)


def test_tril_triu_edges_backward_and_errors():
    check(lambda a: torch.tril(a), make((3, 0), torch.float32))
    check(lambda a: torch.triu(a), make((0, 2, 2), torch.float32))
    check(lambda a: torch.tril(a), make((4,), torch.float32))         # needs 2 dims
    check(lambda a: torch.tril(a, 1, out=torch.empty(0, device=a.device)), make((3, 3), torch.float32))
    grads(lambda a: torch.tril(a, -1), make((4, 4), torch.float32))
    grads(lambda a: torch.triu(a, 1), make((3, 5), torch.float32))


# ---------------------------------------------------------------- flip / roll
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_flip_roll(dtype):
    x = make((3, 4, 5), dtype)
    for _, layout in layouts(x):
        for dims in ((0,), (1, 2), (0, 1, 2), (-1,), ()):
            check(lambda a: torch.flip(layout(a), dims), x)
        for shifts, dims in ((1, 0), (-2, 1), (7, 2), ((1, -3), (0, 2)), (4, None), (-13, None)):
            check(lambda a: torch.roll(layout(a), shifts, dims), x)
    check(lambda a: torch.fliplr(a), x)
    check(lambda a: torch.flipud(a), x)
    check(lambda a: torch.rot90(a, 1, (1, 2)), x)


def test_flip_roll_edges_backward_and_errors():
    check(lambda a: torch.flip(a, (0,)), make((), torch.float32))
    check(lambda a: torch.flip(a, (1,)), torch.empty(2, 0))
    check(lambda a: torch.roll(a, 1), make((), torch.float32))
    check(lambda a: torch.roll(a, 2, 1), torch.empty(2, 0))
    check(lambda a: torch.flip(a, (0, 0)), make((3, 4), torch.float32))   # duplicate dims
    check(lambda a: torch.flip(a, (2,)), make((3, 4), torch.float32))     # bad dim
    check(lambda a: torch.roll(a, 1, 2), make((3, 4), torch.float32))
    check(lambda a: torch.roll(a, (1, 2), (0,)), make((3, 4), torch.float32))
    check(lambda a: torch.roll(a, (), ()), make((3, 4), torch.float32))
    grads(lambda a: torch.flip(a, (0, 1)), make((3, 4), torch.float32))
    grads(lambda a: torch.roll(a, (1, -1), (0, 1)), make((3, 4), torch.float32))


# ---------------------------------------------------------------- repeat / repeat_interleave
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_repeat(dtype):
    x = make((2, 3), dtype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).repeat(2, 3), x)
        check(lambda a: layout(a).repeat(2, 1, 2), x)
        check(lambda a: layout(a).repeat_interleave(2, 0), x)
        check(lambda a: layout(a).repeat_interleave(3), x)
    check(lambda a: torch.tile(a, (2,)), x)
    check(lambda a: a.repeat(0, 2), x)
    check(lambda a: a.repeat(2), make((), dtype))


def test_repeat_interleave_tensor_backward_and_errors():
    check(lambda r: torch.repeat_interleave(r), torch.tensor([1, 0, 3, 2]))
    check(lambda r: torch.repeat_interleave(r), torch.tensor([2, 2], dtype=torch.int32))
    check(lambda r: torch.repeat_interleave(r), torch.tensor([], dtype=torch.int64))
    check(lambda r: torch.repeat_interleave(r), torch.tensor([0, 0]))
    check(lambda r: torch.repeat_interleave(r, output_size=5), torch.tensor([1, 0, 3, 1]))
    check(lambda r: torch.repeat_interleave(r), torch.tensor([1, -1, 3]))        # negative
    check(lambda r: torch.repeat_interleave(r), torch.tensor([[1, 2]]))         # 2-D
    check(lambda r: torch.repeat_interleave(r), torch.tensor([1.0, 2.0]))       # float
    check(lambda a: a.repeat(2), make((2, 3), torch.float32))                    # too few dims
    check(lambda a: a.repeat_interleave(-1), make((2, 3), torch.float32))
    grads(lambda a: a.repeat(2, 3), make((2, 3), torch.float32))
    grads(lambda a: a.repeat_interleave(2, 1), make((2, 3), torch.float32))


# ---------------------------------------------------------------- padding
PAD_MODES = ["constant", "reflect", "replicate", "circular"]


@pytest.mark.parametrize("dtype", NUM_DTYPES, ids=str)
def test_pad_forward(dtype):
    x1 = make((2, 3, 6), dtype)
    x2 = make((2, 3, 5, 6), dtype)
    for mode in PAD_MODES:
        for _, layout in layouts(x1):
            check(lambda a: F.pad(layout(a), (2, 3), mode=mode), x1)
            check(lambda a: F.pad(layout(a)[0], (0, 5), mode=mode), x1)      # no batch dim
        for _, layout in layouts(x2):
            check(lambda a: F.pad(layout(a), (1, 2, 4, 0), mode=mode), x2)
            check(lambda a: F.pad(layout(a)[0], (5, 5, 3, 4), mode=mode), x2)
    check(lambda a: F.pad(a, (1, 2, 0, 1, 1, 0), value=2), x2)
    check(lambda a: F.pad(a, (-1, 2)), x1)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_pad_backward(dtype):
    x1 = make((2, 2, 6), dtype)
    x2 = make((2, 2, 5, 6), dtype)
    for mode in PAD_MODES:
        # reflect / replicate: one kernel sums each input's gradients in float32; the CPU sums
        # in the 16-bit type. constant / circular: slices and adds on both sides.
        exact = dtype in (torch.float16, torch.bfloat16) and mode in ("reflect", "replicate")
        grads(lambda a: F.pad(a, (2, 5), mode=mode), x1, exact_reference=exact)
        grads(lambda a: F.pad(a, (5, 0), mode=mode), x1, exact_reference=exact)
        grads(lambda a: F.pad(a, (1, 3, 4, 2), mode=mode), x2, exact_reference=exact)
        grads(lambda a: F.pad(a[0], (5, 5, 4, 4), mode=mode), x2, exact_reference=exact)
    grads(lambda a: F.pad(a, (0, 3), mode="replicate"), make((2, 1, 1), dtype),
          exact_reference=dtype in (torch.float16, torch.bfloat16))   # width 1


def test_pad_edges_out_and_errors():
    x = make((2, 3, 4), torch.float32)
    check(lambda a: F.pad(a, (4, 0), mode="reflect"), x)              # pad == width
    check(lambda a: F.pad(a, (1, 1, 3, 0), mode="reflect"), x[None])  # pad == height
    check(lambda a: F.pad(a, (1, 1), mode="reflect"), torch.empty(0, 3, 4))  # empty batch
    check(lambda a: F.pad(a, (1, 1), mode="replicate"), torch.empty(2, 0, 4))
    check(lambda a: F.pad(a, (1, 1, 1), mode="reflect"), x)           # odd padding
    check(lambda a: torch.ops.aten.reflection_pad1d(a, (1, 1)), torch.tensor([[True, False]]))
    check(lambda a: torch.ops.aten.reflection_pad2d(a, (1, 1)), x)    # wrong padding length
    check(lambda a: torch.ops.aten.replication_pad2d(a, (1, 1, 1, 1)), make((4,), torch.float32))
    check(lambda a: torch.ops.aten.reflection_pad1d.out(a, (1, 2), out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch.ops.aten.replication_pad2d.out(a, (1, 2, 0, 1), out=torch.empty(0, device=a.device)), x)
    g = make((2, 3, 7), torch.float32, seed=3)
    check(lambda a, b: torch.ops.aten.reflection_pad1d_backward(a, b, (1, 2)), g, x)
    check(lambda a, b: torch.ops.aten.replication_pad1d_backward(a, b, (1, 2)), g, x)
    check(lambda a, b: torch.ops.aten.reflection_pad1d_backward(a, b, (1, 1)), g, x)  # size mismatch
    g2 = make((1, 2, 4, 7), torch.float32, seed=3)
    x2 = make((1, 2, 3, 4), torch.float32)
    check(lambda a, b: torch.ops.aten.reflection_pad2d_backward(a, b, (1, 2, 0, 1)), g2, x2)
    check(lambda a, b: torch.ops.aten.replication_pad2d_backward(a, b, (1, 2, 0, 1)), g2, x2)
    check(lambda a, b: torch.ops.aten.replication_pad2d_backward(a, b, (1, 2, 1, 1)), g2, x2)


# Negative pads crop (one side or both, mixed with positive pads on the other side).
NEGATIVE_PADS_1D = [(-1, 2), (-2, -1), (1, -3), (-3, 2), (-5, 3), (0, -5)]
NEGATIVE_PADS_2D = [(-1, 2, 1, -2), (0, 0, -3, 0), (-2, -1, -1, -2), (2, -3, -4, 3)]
NEGATIVE_PADS_3D = [(-1, 2, 1, -2, 1, -1), (0, 0, 0, 0, -2, 0), (-3, 1, 0, -1, -1, 2)]
PADS_3D = [(1, 2, 0, 3, 2, 1), (4, 4, 3, 3, 2, 2), (0, 0, 0, 0, 1, 0)]


@pytest.mark.parametrize("dtype", NUM_DTYPES, ids=str)
def test_pad_negative_forward(dtype):
    x1 = make((2, 3, 6), dtype)
    x2 = make((2, 3, 5, 6), dtype)
    for mode in ("reflect", "replicate"):
        for _, layout in layouts(x1):
            for pad in NEGATIVE_PADS_1D:
                check(lambda a: F.pad(layout(a), pad, mode=mode), x1)
        for _, layout in layouts(x2):
            for pad in NEGATIVE_PADS_2D:
                check(lambda a: F.pad(layout(a), pad, mode=mode), x2)
        check(lambda a: F.pad(a[0], (-1, 3, 2, -2), mode=mode), x2)        # no batch dim


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_pad_negative_backward(dtype):
    exact = dtype in (torch.float16, torch.bfloat16)
    x1 = make((2, 2, 6), dtype)
    x2 = make((2, 2, 5, 6), dtype)
    for mode in ("reflect", "replicate"):
        for pad in NEGATIVE_PADS_1D:
            grads(lambda a: F.pad(a, pad, mode=mode), x1, exact_reference=exact)
        for pad in NEGATIVE_PADS_2D:
            grads(lambda a: F.pad(a, pad, mode=mode), x2, exact_reference=exact)
    grads(lambda a: F.pad(a, (2, -1, -1, 1), mode="replicate"), make((1, 2, 2, 1), dtype),
          exact_reference=exact)                                            # width 1


def test_pad_negative_edges_and_errors():
    x = make((2, 3, 4), torch.float32)
    for mode in ("reflect", "replicate"):
        check(lambda a: F.pad(a, (-2, -2), mode=mode), x)                   # empty output width
        check(lambda a: F.pad(a, (-3, -2), mode=mode), x)                   # negative output width
        check(lambda a: F.pad(a, (0, 0, -3, 0), mode=mode), x[None])        # empty output height
    check(lambda a: F.pad(a, (-1, 4), mode="reflect"), x)                   # pad == width
    check(lambda a: torch.ops.aten.replication_pad2d.out(a, (-1, 2, 0, -1), out=torch.empty(0, device=a.device)), x)
    g = make((2, 3, 5), torch.float32, seed=3)
    check(lambda a, b: torch.ops.aten.reflection_pad1d_backward(a, b, (-1, 2)), g, x)
    check(lambda a, b: torch.ops.aten.replication_pad1d_backward(a, b, (3, -2)), g, x)
    g2 = make((1, 2, 2, 7), torch.float32, seed=3)
    x2 = make((1, 2, 3, 4), torch.float32)
    check(lambda a, b: torch.ops.aten.reflection_pad2d_backward(a, b, (1, 2, 0, -1)), g2, x2)
    check(lambda a, b: torch.ops.aten.replication_pad2d_backward(a, b, (-1, 4, -2, 1)), g2, x2)


@pytest.mark.parametrize("dtype", NUM_DTYPES, ids=str)
def test_pad3d_forward(dtype):
    x3 = make((2, 2, 3, 4, 5), dtype)
    for mode in ("reflect", "replicate"):
        for _, layout in layouts(x3):
            for pad in PADS_3D[:2] + NEGATIVE_PADS_3D[:1]:
                check(lambda a: F.pad(layout(a), pad, mode=mode), x3)
        for pad in NEGATIVE_PADS_3D[1:]:
            check(lambda a: F.pad(a, pad, mode=mode), x3)
        check(lambda a: F.pad(a[0], PADS_3D[2], mode=mode), x3)            # no batch dim
        check(lambda a: F.pad(a.to(memory_format=torch.channels_last_3d), (1, 1, 1, 1, 1, 1),
                              mode=mode), x3)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_pad3d_backward(dtype):
    exact = dtype in (torch.float16, torch.bfloat16)
    x3 = make((2, 2, 3, 4, 5), dtype)
    for mode in ("reflect", "replicate"):
        for pad in NEGATIVE_PADS_3D + PADS_3D:
            grads(lambda a: F.pad(a, pad, mode=mode), x3, exact_reference=exact)
        grads(lambda a: F.pad(a[0], (2, 1, 1, 2, 1, 1), mode=mode), x3, exact_reference=exact)
    grads(lambda a: F.pad(a, (2, 0, 1, 1, 3, 0), mode="replicate"), make((1, 2, 1, 1, 1), dtype),
          exact_reference=exact)                                            # sizes 1


def test_pad3d_edges_out_and_errors():
    x3 = make((1, 2, 3, 4, 5), torch.float32)
    for mode in ("reflect", "replicate"):
        check(lambda a: F.pad(a, (0, 0, 0, 0, -2, -2), mode=mode), x3)      # negative output depth
        check(lambda a: F.pad(a, (0, 0, 0, 0, -3, 0), mode=mode), x3)       # empty output depth
        check(lambda a: F.pad(a, (1, 1, 1, 1, 1, 1), mode=mode), torch.empty(0, 2, 3, 4, 5))
        check(lambda a: F.pad(a, (1, 1, 1, 1, 1, 1), mode=mode), torch.empty(2, 0, 3, 4, 5))
        check(lambda a: F.pad(a, (1, 1, 1, 1, 1, 1), mode=mode), torch.empty(1, 2, 0, 4, 5))
    check(lambda a: F.pad(a, (5, 0, 0, 0, 0, 0), mode="reflect"), x3)       # pad == width
    check(lambda a: F.pad(a, (0, 0, 0, 0, 0, 3), mode="reflect"), x3)       # pad == depth
    check(lambda a: F.pad(a, (5, 0, 0, 0, 0, 0), mode="replicate"), x3)
    check(lambda a: torch.ops.aten.reflection_pad3d(a, (1, 1, 1, 1, 1)), x3)
    check(lambda a: torch.ops.aten.replication_pad3d(a, (1, 1, 1, 1)), x3)
    check(lambda a: torch.ops.aten.reflection_pad3d(a, (1,) * 6), make((2, 3, 4), torch.float32))
    check(lambda a: torch.ops.aten.replication_pad3d(a, (1,) * 6), x3 > 0)  # bool
    check(lambda a: torch.ops.aten.reflection_pad3d(a, (1,) * 6), x3 > 0)
    check(lambda a: torch.ops.aten.reflection_pad3d.out(a, (1, 2, 0, 1, 1, 0), out=torch.empty(0, device=a.device)), x3)
    check(lambda a: torch.ops.aten.replication_pad3d.out(a, (-1, 2, 0, 1, 1, 0), out=torch.empty(0, device=a.device)), x3)
    g3 = make((1, 2, 4, 5, 5), torch.float32, seed=3)
    for pad in [(-1, 1, 0, 1, 0, 1), (0, 0, 0, 1, 0, 1), (0, 0, 1, 1, 0, 1), (0, 0, 0, 1, 1, 1)]:
        check(lambda a, b: torch.ops.aten.reflection_pad3d_backward(a, b, pad), g3, x3)
        check(lambda a, b: torch.ops.aten.replication_pad3d_backward(a, b, pad), g3, x3)
        check(lambda a, b: torch.ops.aten.replication_pad3d_backward.grad_input(
            a, b, pad, grad_input=torch.empty(0, device=a.device)), g3, x3)
        check(lambda a, b: torch.ops.aten.reflection_pad3d_backward.grad_input(
            a, b, pad, grad_input=torch.empty(0, device=a.device)), g3, x3)
    check(lambda a, b: torch.ops.aten.replication_pad3d_backward(a, b, (0, 0, 0, 1, 0)), g3, x3)
    check(lambda a, b: torch.ops.aten.replication_pad3d_backward(a, b, (0, 0, 0, 1, 0, 1)), g3 > 0, x3 > 0)


# ---------------------------------------------------------------- clone / contiguous
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_clone_contiguous(dtype):
    x = make((2, 3, 4, 5), dtype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).clone(), x)
        check(lambda a: layout(a).contiguous(), x)
    check(lambda a: a.to(memory_format=torch.channels_last).contiguous(), x)
    check(lambda a: a.contiguous(memory_format=torch.channels_last), x)
    check(lambda a: a.permute(3, 1, 0, 2).clone(memory_format=torch.preserve_format), x)
    check(lambda a: a[:, ::2].clone(), x)
    check(lambda a: a.expand(3, 2, 3, 4, 5).contiguous(), x)
    check(lambda a: a.clone(), make((), dtype))
    vk_cl = x.to("vk").to(memory_format=torch.channels_last)
    assert vk_cl.is_contiguous(memory_format=torch.channels_last)
    assert vk_cl.clone().is_contiguous(memory_format=torch.channels_last)
