"""Embedding helpers against PyTorch's CPU: embedding_renorm_ (F.embedding with max_norm) over
dtypes, norm types, repeated / negative indices, layouts, autograd and bad arguments."""
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
