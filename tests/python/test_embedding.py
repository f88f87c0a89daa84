"""Embedding helpers against PyTorch's CPU: embedding_renorm_ (F.embedding with max_norm) over
dtypes, norm types, repeated / negative indices, layouts, autograd and bad arguments; and
embedding_bag (the four outputs of the forward ops, modes, padding_idx, include_last_offset,
per_sample_weights, index dtypes, layouts, backward, device-side index errors)."""
import re

import pytest
import torch
import torch.nn.functional as F

from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def sync():
    torch.vk.synchronize()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_embedding_renorm_dtypes_norms(dtype):
    w = make((10, 5), dtype, seed=1)
    idx = torch.tensor([[1, 3, 3], [9, -1, 0]])   # repeated, negative (row 9 twice)
    for max_norm, p in ((1.0, 2.0), (2.5, 1.0), (0.5, float("inf")), (3.0, 3.0), (100.0, 2.0)):
        check(lambda a, i: torch.embedding_renorm_(a, i, max_norm, p), w, idx)
    check(lambda a, i: torch.embedding_renorm_(a, i, 1.0, 2.0), w, idx.int())
    check(lambda a, i: torch.embedding_renorm_(a, i, 1.0, 2.0), w, idx[:0])     # no indices
    for _, layout in layouts(w):
        check(lambda a, i: torch.embedding_renorm_(layout(a), i, 1.2, 2.0), w, idx)
    check(lambda a, i: F.embedding(i, a, max_norm=1.0), w, idx.clamp(min=0))


def test_embedding_max_norm_autograd():
    w = make((8, 4), torch.float32, seed=2)
    idx = torch.tensor([0, 2, 2, 7, 5])
    wc = w.clone().requires_grad_()
    wv = w.to("vk").requires_grad_()
    yc = F.embedding(idx, wc, max_norm=1.5, norm_type=2.0)
    yv = F.embedding(idx.to("vk"), wv, max_norm=1.5, norm_type=2.0)
    torch.testing.assert_close(yv.cpu(), yc.detach(), **TOLERANCE[torch.float32])
    torch.testing.assert_close(wv.detach().cpu(), wc.detach(), **TOLERANCE[torch.float32])
    g = make(yc.shape, torch.float32, seed=3)
    (gc,) = torch.autograd.grad(yc, wc, g)
    (gv,) = torch.autograd.grad(yv, wv, g.to("vk"))
    torch.testing.assert_close(gv.cpu(), gc, **TOLERANCE[torch.float32])
    # nn.Embedding(max_norm=...) in a module
    torch.manual_seed(0)
    emb = torch.nn.Embedding(6, 3, max_norm=0.8)
    emb_vk = torch.nn.Embedding(6, 3, max_norm=0.8).to("vk")
    emb_vk.weight.data.copy_(emb.weight.data.to("vk"))
    i = torch.tensor([[0, 1], [5, 1]])
    torch.testing.assert_close(emb_vk(i.to("vk")).detach().cpu(), emb(i).detach(), **TOLERANCE[torch.float32])
    torch.testing.assert_close(emb_vk.weight.detach().cpu(), emb.weight.detach(), **TOLERANCE[torch.float32])


def same_error(fn, *args):
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with pytest.raises(type(cpu.value)) as vk:
        fn(*[a.to("vk") if isinstance(a, torch.Tensor) else a for a in args])
        sync()
    return cpu.value, vk.value


def test_embedding_renorm_bad_arguments():
    w = make((5, 3), torch.float32)
    idx = torch.tensor([1, 2])
    cpu, vk = same_error(lambda a, i: torch.embedding_renorm_(a, i, 1.0, 2.0), w[None], idx)
    assert str(cpu) == str(vk)
    same_error(lambda a, i: torch.embedding_renorm_(a, i.float(), 1.0, 2.0), w, idx)
    # An index out of range: IndexError (the CPU's from select(), here from the device).
    same_error(lambda a, i: torch.embedding_renorm_(a, i, 1.0, 2.0), w, torch.tensor([1, 7]))
    same_error(lambda a, i: torch.embedding_renorm_(a, i, 1.0, 2.0), w, torch.tensor([-6]))
    # The stream works afterwards.
    check(lambda a, i: torch.embedding_renorm_(a, i, 1.0, 2.0), w, idx)


# ---------------------------------------------------------------- embedding_bag

MODES = {"sum": 0, "mean": 1, "max": 2}


def close(actual, expected, dtype):
    """Float outputs within the dtype's tolerance, index outputs exact; same shape and dtype."""
    assert actual.device.type == "vk", actual.device
    actual = actual.cpu()
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual, expected)
    tol = TOLERANCE.get(dtype, {}) if expected.dtype.is_floating_point else dict(atol=0, rtol=0)
    torch.testing.assert_close(actual, expected, equal_nan=True, **tol)


def bag_outputs(op, w, idx, off, mode, psw=None, ilo=False, pad=-1, weight_layout=None):
    """The four outputs of aten.<op> on the CPU and on vk (weight laid out by weight_layout)."""
    layout = weight_layout or (lambda x: x)
    cpu = op(layout(w), idx, off, False, MODES[mode], False, psw, ilo, pad)
    vk = op(layout(w.to("vk")), idx.to("vk"), off.to("vk"), False, MODES[mode], False,
            None if psw is None else psw.to("vk"), ilo, pad)
    return cpu, vk


def check_bag(op, w, idx, off, mode, **kw):
    cpu, vk = bag_outputs(op, w, idx, off, mode, **kw)
    for a, e in zip(vk, cpu):
        close(a, e, w.dtype)


BAG_INDICES = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 2])
BAG_OFFSETS = torch.tensor([0, 2, 2, 5, 9])   # an empty bag, a one-element last bag


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", list(MODES))
def test_embedding_bag_forward_outputs(dtype, mode):
    w = make((10, 5), dtype, seed=4)
    for op in (torch.ops.aten._embedding_bag_forward_only, torch.ops.aten._embedding_bag):
        for pad in (-1, 2):
            check_bag(op, w, BAG_INDICES, BAG_OFFSETS, mode, pad=pad)
            # include_last_offset: the last offset is the number of indices
            check_bag(op, w, BAG_INDICES, torch.cat([BAG_OFFSETS, torch.tensor([10])]), mode,
                      ilo=True, pad=pad)
        if mode == "sum":
            psw = make((10,), dtype, seed=5)
            check_bag(op, w, BAG_INDICES, BAG_OFFSETS, mode, psw=psw)
            check_bag(op, w, BAG_INDICES, BAG_OFFSETS, mode, psw=psw, pad=4)


@pytest.mark.parametrize("mode", list(MODES))
def test_embedding_bag_index_dtypes_and_layouts(mode):
    w = make((10, 6), torch.float32, seed=6)
    op = torch.ops.aten._embedding_bag_forward_only
    for it, ot in ((torch.int32, torch.int32), (torch.int32, torch.int64), (torch.int64, torch.int32)):
        check_bag(op, w, BAG_INDICES.to(it), BAG_OFFSETS.to(ot), mode)
        check_bag(op, w, BAG_INDICES.to(it), BAG_OFFSETS.to(ot), mode, pad=2)
    for _, layout in layouts(w):
        check_bag(op, w, BAG_INDICES, BAG_OFFSETS, mode, weight_layout=layout)
        check_bag(op, w, BAG_INDICES, BAG_OFFSETS, mode, weight_layout=layout, pad=4)


@pytest.mark.parametrize("mode", list(MODES))
def test_embedding_bag_functional(mode):
    w = make((12, 7), torch.float32, seed=7)
    idx2d = torch.tensor([[1, 2, 11], [4, 4, 0], [7, 7, 7], [3, 1, 0]])
    check(lambda a, i: F.embedding_bag(i, a, mode=mode), w, idx2d)
    check(lambda a, i: F.embedding_bag(i, a, mode=mode, padding_idx=7), w, idx2d)
    check(lambda a, i: F.embedding_bag(i, a, mode=mode, padding_idx=-5), w, idx2d)
    check(lambda a, i: F.embedding_bag(i, a, mode=mode), w, idx2d[:, :0])   # empty bags
    check(lambda a, i: F.embedding_bag(i, a, mode=mode), w, idx2d[:0])      # no bags
    check(lambda a, i, o: F.embedding_bag(i, a, o, mode=mode), w, BAG_INDICES, BAG_OFFSETS)
    check(lambda a, i, o: F.embedding_bag(i, a, o, mode=mode), w, BAG_INDICES[:0], torch.tensor([0, 0]))
    # A long bag and a wide embedding (several invocations per row, several rows per workgroup).
    wide = make((40, 100), torch.float32, seed=8)
    idx = torch.randint(0, 40, (300,), generator=torch.Generator().manual_seed(0))
    off = torch.tensor([0, 3, 200, 200, 299])
    check(lambda a, i, o: F.embedding_bag(i, a, o, mode=mode), wide, idx, off)
    narrow = make((40, 1), torch.float32, seed=9)
    check(lambda a, i, o: F.embedding_bag(i, a, o, mode=mode), narrow, idx, off)


def test_embedding_bag_max_ties_and_nan():
    w = torch.tensor([[1.0, float("nan")], [1.0, 2.0], [3.0, float("nan")], [0.0, 5.0]])
    idx = torch.tensor([0, 1, 2, 3, 1, 0, 3, 2])
    off = torch.tensor([0, 2, 4, 6])
    check_bag(torch.ops.aten._embedding_bag_forward_only, w, idx, off, "max")


def grads(w, idx, off, mode, psw=None, **kw):
    """(output, weight grad, psw grad) of F.embedding_bag on the CPU and on vk. For float16 /
    bfloat16 the CPU reference computes in float32 from the same values and rounds once at
    the end (the device accumulates in float32; the CPU's 16-bit backward rounds every
    product and partial sum)."""
    out = []
    for dev in ("cpu", "vk"):
        math = torch.float32 if dev == "cpu" and w.dtype in (torch.float16, torch.bfloat16) else w.dtype
        wv = w.to(dev, math).requires_grad_()
        pv = None if psw is None else psw.to(dev, math).requires_grad_()
        y = F.embedding_bag(idx.to(dev), wv, None if off is None else off.to(dev), mode=mode,
                            per_sample_weights=pv, **kw)
        g = make(y.shape, w.dtype, seed=11).to(dev, math)
        inputs = [wv] if pv is None else [wv, pv]
        out.append(tuple(t.to(w.dtype) for t in (y, *torch.autograd.grad(y, inputs, g))))
    return out


def check_grads(w, idx, off, mode, psw=None, **kw):
    cpu, vk = grads(w, idx, off, mode, psw, **kw)
    for a, e in zip(vk, cpu):
        close(a, e.detach(), w.dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", list(MODES))
def test_embedding_bag_backward(dtype, mode):
    w = make((10, 5), dtype, seed=12)
    check_grads(w, BAG_INDICES, BAG_OFFSETS, mode)
    check_grads(w, BAG_INDICES, BAG_OFFSETS, mode, padding_idx=2)
    check_grads(w, BAG_INDICES, torch.cat([BAG_OFFSETS, torch.tensor([10])]), mode,
                include_last_offset=True)
    check_grads(w, BAG_INDICES.reshape(5, 2), None, mode)
    check_grads(w, BAG_INDICES.int(), BAG_OFFSETS.int(), mode)
    if mode == "sum":
        psw = make((10,), dtype, seed=13)
        check_grads(w, BAG_INDICES, BAG_OFFSETS, mode, psw)
        check_grads(w, BAG_INDICES, BAG_OFFSETS, mode, psw, padding_idx=4)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq(mode):
    w = make((8, 3), torch.float32, seed=14)
    # Every index occurs equally often (twice): here the CPU's backward is exact.
    idx = torch.tensor([3, 1, 3, 5, 1, 5, 0, 0])
    off = torch.tensor([0, 3, 5])
    check_grads(w, idx, off, mode, scale_grad_by_freq=True)
    check_grads(w, idx, off, mode, scale_grad_by_freq=True, padding_idx=5)
    # Different frequencies: each row's gradient divided by its index's count (the
    # documented meaning; the CPU's kernel reads another index's count here).
    idx = torch.tensor([3, 3, 3, 1, 5, 5, 2])
    off = torch.tensor([0, 2, 4])
    cpu, vk = grads(w, idx, off, mode)
    counts = torch.bincount(idx, minlength=8).clamp(min=1).to(w.dtype).unsqueeze(1)
    _, vk_freq = grads(w, idx, off, mode, scale_grad_by_freq=True)
    close(vk_freq[1], cpu[1] / counts, torch.float32)


def test_embedding_bag_module_training_step():
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(20, 4, mode="mean")
    bag_vk = torch.nn.EmbeddingBag(20, 4, mode="mean").to("vk")
    bag_vk.weight.data.copy_(bag.weight.data.to("vk"))
    idx = torch.tensor([1, 5, 19, 5, 0, 3, 3])
    off = torch.tensor([0, 3, 3, 6])
    for m, dev in ((bag, "cpu"), (bag_vk, "vk")):
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        m(idx.to(dev), off.to(dev)).square().sum().backward()
        opt.step()
    close(bag_vk.weight.detach(), bag.weight.detach(), torch.float32)


def test_embedding_bag_bad_arguments():
    w = make((6, 3), torch.float32)
    idx = torch.tensor([1, 2, 3])
    off = torch.tensor([0, 2])
    E = torch.ops.aten._embedding_bag_forward_only

    def call(*args):
        return lambda: E(*args)

    cases = [
        (w, idx.float(), off, False, 0, False, None, False, -1),
        (w, idx, off.float(), False, 0, False, None, False, -1),
        (w.long(), idx, off, False, 0, False, None, False, -1),
        (w, idx[None, None], off, False, 0, False, None, False, -1),
        (w, idx, off[None], False, 0, False, None, False, -1),
        (w[0], idx, off, False, 0, False, None, False, -1),
        (w, idx, off, False, 1, False, torch.ones(3), False, -1),
        (w, idx, off, False, 0, False, torch.ones(3).double(), False, -1),
        (w, idx, off, False, 0, False, torch.ones(4), False, -1),
        (w, idx, off[:0], False, 0, False, None, True, -1),
        (w, idx, off, False, 3, False, None, False, -1),
    ]
    def message(e):  # the first line, without the device-specific tensor type names
        return re.sub(r"torch\.\w+Tensor|vk\w+Type", "<type>", str(e).splitlines()[0])

    for args in cases:
        cpu, vk = same_error(lambda *a: E(*a), *args)
        assert message(cpu) == message(vk)
    # F.embedding_bag's own Python checks (before the op) stay the same.
    same_error(lambda a, i, o: F.embedding_bag(i, a, o, mode="max", per_sample_weights=torch.ones(3, device=a.device)),
               w, idx, off)


@pytest.mark.parametrize("mode", list(MODES))
def test_embedding_bag_device_errors(mode):
    w = make((6, 3), torch.float32)
    off = torch.tensor([0, 2])
    for dtype in (torch.float32, torch.float64):
        for bad in (torch.tensor([1, 2, 6]), torch.tensor([1, -1, 3])):
            cpu, vk = same_error(lambda a, i, o: F.embedding_bag(i, a, o, mode=mode), w.to(dtype), bad, off)
            if mode == "max":
                assert str(cpu).splitlines()[0] in str(vk)
    # sum / mean: the message of the CPU's fast path (position, value, range)
    if mode != "max":
        _, vk = same_error(lambda a, i, o: F.embedding_bag(i, a, o, mode=mode), w, torch.tensor([1, -1, 3]), off)
        assert "Index 1 of input takes value -1 which is not in the valid range [0, 6)" in str(vk)
    # offsets[0] != 0
    cpu, vk = same_error(lambda a, i, o: F.embedding_bag(i, a, o, mode=mode), w, torch.tensor([1, 2, 3]),
                         torch.tensor([1, 2]))
    assert str(cpu).splitlines()[0] in str(vk)
    # The stream works afterwards.
    check(lambda a, i, o: F.embedding_bag(i, a, o, mode=mode), w, torch.tensor([1, 2, 3]), off)


def test_embedding_bag_sparse_gradient_not_supported():
    wv = make((6, 3), torch.float32).to("vk").requires_grad_()
    y = F.embedding_bag(torch.tensor([1, 2, 3], device="vk"), wv, torch.tensor([0, 2], device="vk"), sparse=True)
    with pytest.raises(NotImplementedError, match="sparse"):
        y.sum().backward()
