"""Sparse COO tensors on vk against PyTorch's CPU: construction and metadata, copies between
devices, coalesce, dense <-> sparse, sparse @ dense (mm / addmm / torch.sparse.mm) with autograd,
dense + sparse, sparse * scalar, sum, and a small GCN trained for a few steps."""
import warnings

import pytest
import torch

from helpers import TOLERANCE, check, layouts, make

pytestmark = [pytest.mark.usefixtures("strict_native"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks")]

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
ALL_DTYPES = FLOAT_DTYPES + [torch.int64, torch.int32]


def uncoalesced(dtype=torch.float32, size=(4, 5), nnz=9, dense=(), seed=0):
    """A CPU COO tensor with duplicate and unsorted indices (and optional dense dims)."""
    g = torch.Generator().manual_seed(seed)
    indices = torch.stack([torch.randint(0, s, (nnz,), generator=g) for s in size])
    indices[:, -1] = indices[:, 0]  # at least one duplicate
    values = make((nnz,) + tuple(dense), dtype, seed=seed)
    return torch.sparse_coo_tensor(indices, values, tuple(size) + tuple(dense))


def with_zeros(shape, dtype, seed=0):
    x = make(shape, dtype, seed=seed)
    return x * (make(shape, torch.float32, seed=seed + 1) > 0.5).to(dtype)


def test_construction_and_metadata():
    i = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    v = torch.tensor([3.0, 4.0, 5.0, 1.0])
    on_vk = torch.sparse_coo_tensor(i.to("vk"), v.to("vk"), (2, 3))
    by_device = torch.sparse_coo_tensor(i, v, (2, 3), device="vk")
    cpu = torch.sparse_coo_tensor(i, v, (2, 3))
    for s in (on_vk, by_device, cpu.to("vk")):
        assert s.device.type == "vk" and s.layout == torch.sparse_coo and s.is_sparse
        assert (s.sparse_dim(), s.dense_dim(), s._nnz(), s.is_coalesced()) == (2, 0, 4, False)
        assert s._indices().device.type == "vk" and s._values().device.type == "vk"
        torch.testing.assert_close(s._indices().cpu(), i)
        torch.testing.assert_close(s._values().cpu(), v)
        back = s.cpu()
        assert back.layout == torch.sparse_coo and back.device.type == "cpu"
        torch.testing.assert_close(back.to_dense(), cpu.to_dense())
    # Inferred size, the unsafe constructor, with_dims_and_tensors, hybrid (dense dims) tensors.
    check(lambda a, b: torch.sparse_coo_tensor(a, b), i, v)
    check(lambda a, b: torch._sparse_coo_tensor_unsafe(a, b, (2, 3)), i, v)
    check(lambda a, b: torch.ops.aten._sparse_coo_tensor_with_dims_and_tensors(
        2, 1, (2, 3, 2), a, b, dtype=b.dtype, layout=torch.sparse_coo, device=b.device), i, make((4, 2), torch.float32))
    hybrid = uncoalesced(dense=(3,))
    h = hybrid.to("vk")
    assert (h.sparse_dim(), h.dense_dim(), h._nnz()) == (2, 1, hybrid._nnz())
    torch.testing.assert_close(h.to_dense().cpu(), hybrid.to_dense())
    # indices() / values() need a coalesced tensor, as on the CPU.
    check(lambda s: s.indices(), cpu)
    check(lambda s: s.coalesce().indices(), cpu)
    check(lambda s: s.coalesce().values(), cpu)
    # Bad input: out-of-range indices with invariant checks, mismatched nnz.
    check(lambda a, b: torch.sparse_coo_tensor(a, b, (2, 2), check_invariants=True), i, v)
    check(lambda a, b: torch.sparse_coo_tensor(a, b[:3], (2, 3)), i, v)
    # Empty sparse tensors.
    empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 4))
    check(lambda s: s.to_dense(), empty)
    check(lambda s: s.coalesce(), empty)
    check(lambda s: torch.zeros(3, 4, device=s.device) + s, empty)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_coalesce_and_to_dense(dtype):
    for size, nnz, dense in (((4, 5), 9, ()), ((3, 2, 4), 12, ()), ((5, 3), 7, (2,)), ((6,), 10, ())):
        s = uncoalesced(dtype, size, nnz, dense)
        check(lambda t: t.to_dense(), s)
        got = s.to("vk").coalesce()
        want = s.coalesce()
        assert got.is_coalesced() and got.device.type == "vk"
        torch.testing.assert_close(got._indices().cpu(), want._indices())  # sorted, unique
        torch.testing.assert_close(got._values().cpu(), want._values(), **TOLERANCE.get(dtype, {}))
        # A coalesced tensor is returned as is.
        assert got.coalesce() is got
    one = torch.sparse_coo_tensor(torch.tensor([[1], [2]]), torch.tensor([7.0]).to(dtype), (3, 3))
    check(lambda t: t.coalesce(), one)


@pytest.mark.parametrize("dtype", ALL_DTYPES + [torch.bool], ids=str)
def test_to_sparse(dtype):
    x = with_zeros((4, 6), dtype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).to_sparse(), x)
        check(lambda a: layout(a).to_sparse(1), x)
        check(lambda a: layout(a).to_sparse(2), x)
    x3 = with_zeros((3, 4, 5), dtype, seed=3)
    for sparse_dim in (1, 2, 3):
        check(lambda a: a.to_sparse(sparse_dim), x3)
        check(lambda a: a._to_sparse(sparse_dim).is_coalesced(), x3)
    check(lambda a: a.to_sparse(layout=torch.sparse_coo, dense_dim=1), x3)
    check(lambda a: a.to_sparse(), torch.zeros(3, 4, dtype=dtype))     # no nonzero
    check(lambda a: a.to_sparse(), torch.zeros(0, 4, dtype=dtype))     # empty
    check(lambda a: a.to_sparse(1), torch.zeros(2, 0, dtype=dtype))    # empty dense dim
    check(lambda a: a.to_sparse(3), x)                                  # error: sparse_dim > dim
    # Round trip on vk.
    if dtype != torch.bool:
        check(lambda a: a.to_sparse().to_dense(), x)
        check(lambda a: a.to_sparse(1).coalesce().to_dense(), x3)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_sparse_mm_addmm(dtype):
    s = uncoalesced(dtype, (5, 4), 9)
    d = make((4, 3), dtype, seed=2)
    c = make((5, 3), dtype, seed=3)
    tol = dict(atol=2e-2, rtol=2e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    check(lambda a, b: torch.mm(a, b), s, d, **tol)
    check(lambda a, b: torch.sparse.mm(a, b), s, d, **tol)
    check(lambda a, b: a @ b, s, d, **tol)
    check(lambda a, b: torch.mm(a.coalesce(), b), s, d, **tol)
    for _, layout in layouts(d):
        check(lambda a, b: torch.mm(a, layout(b)), s, d, **tol)
    check(lambda a, b: torch.mm(a, b), make((3, 5), dtype, seed=5), s, **tol)   # dense @ sparse
    check(lambda a, b: a @ b, make((3, 5), dtype, seed=5), s, **tol)
    check(lambda t, a, b: torch.addmm(t, a, b), c, s, d, **tol)
    check(lambda t, a, b: torch.addmm(t, a, b, beta=0.5, alpha=-2), c, s, d, **tol)
    check(lambda t, a, b: torch.addmm(t, a, b, beta=0), c.fill_(float("nan")), s, d, **tol)
    check(lambda t, a, b: torch.addmm(t, a, b), make((3,), dtype), s, d, **tol)  # broadcast self
    check(lambda t, a, b: t.addmm_(a, b, alpha=3), make((5, 3), dtype), s, d, **tol)
    check(lambda t, a, b: torch.addmm(t, a, b, out=torch.empty(0, dtype=dtype, device=t.device)),
          make((5, 3), dtype), s, d, **tol)
    # Empty operands and bad shapes.
    check(lambda a, b: torch.mm(a, b), s, make((4, 0), dtype), **tol)
    check(lambda a, b: torch.mm(a, b), torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long),
                                                               torch.zeros(0, dtype=dtype), (5, 4)), d)
    check(lambda a, b: torch.mm(a, b), s, make((3, 3), dtype))          # error: inner size
    check(lambda a, b: torch.mm(a, b), s, make((4, 3), torch.float32 if dtype != torch.float32 else torch.float64))


def test_sparse_mm_integer_and_large():
    # Integer dtypes take the composite path; floating ones the CSR kernel (rows with no
    # nonzero, rows with many, a wide dense operand spanning several workgroups).
    s = uncoalesced(torch.int64, (5, 4), 9)
    check(lambda a, b: torch.mm(a, b), s, make((4, 3), torch.int64, seed=2))
    check(lambda t, a, b: torch.addmm(t, a, b, beta=2), make((5, 1), torch.int64, seed=3), s,
          make((4, 3), torch.int64, seed=2))
    big = uncoalesced(torch.float32, (40, 30), 300, seed=4)
    check(lambda a, b: torch.mm(a, b), big, make((30, 70), torch.float32, seed=5), atol=1e-4, rtol=1e-5)
    check(lambda a, b: torch.mm(a, b), uncoalesced(torch.float32, (40, 30), 3, seed=6),
          make((30, 70), torch.float32, seed=5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_sparse_mm_backward(dtype):
    s = uncoalesced(dtype, (5, 4), 9)
    d = make((4, 3), dtype, seed=2)
    g = make((5, 3), dtype, seed=4)
    for fn in (torch.sparse.mm, torch.mm):
        dc = d.clone().requires_grad_()
        dv = d.to("vk").requires_grad_()
        (gc,) = torch.autograd.grad(fn(s, dc), dc, g)
        (gv,) = torch.autograd.grad(fn(s.to("vk"), dv), dv, g.to("vk"))
        torch.testing.assert_close(gv.cpu(), gc)
    # Gradient w.r.t. the sparse operand's values (through sparse_coo_tensor).
    i, v = s._indices(), s._values()
    vc = v.clone().requires_grad_()
    vv = v.to("vk").requires_grad_()
    (gc,) = torch.autograd.grad(torch.sparse.mm(torch.sparse_coo_tensor(i, vc, s.shape), d), vc, g)
    (gv,) = torch.autograd.grad(torch.sparse.mm(torch.sparse_coo_tensor(i.to("vk"), vv, s.shape), d.to("vk")),
                                vv, g.to("vk"))
    torch.testing.assert_close(gv.cpu(), gc)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int64], ids=str)
def test_add_mul_sum(dtype):
    s = uncoalesced(dtype, (4, 5), 9)
    x = make((4, 5), dtype, seed=5)
    tol = dict(atol=2e-2, rtol=2e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    check(lambda a, b: a + b, x, s, **tol)
    check(lambda a, b: torch.add(a, b, alpha=2), x, s, **tol)
    for _, layout in layouts(x):
        check(lambda a, b: layout(a).add_(b), x, s, **tol)
    if dtype == torch.float16:  # the CPU has no float16 sparse + sparse: compare with float32
        got = (s.to("vk") + s.to("vk").coalesce() * 2).to_dense().cpu()
        torch.testing.assert_close(got, (s.float() + s.float() * 2).to_dense().half(), **tol)
    else:
        check(lambda a, b: (a + a).to_dense(), s, s, **tol)
        check(lambda a, b: torch.add(a, b, alpha=-1).to_dense(), s, s.coalesce(), **tol)
    check(lambda a, b: a + b, s, x)                              # error: add(sparse, dense)
    check(lambda a, b: a + b, x[:, :3], s)                       # error: sizes
    check(lambda a: (a * 3).to_dense(), s, **tol)
    check(lambda a: (2 * a).to_dense(), s, **tol)
    check(lambda a: (a * 3).is_coalesced(), s)
    check(lambda a: a.coalesce().mul(torch.tensor(2).to(a.device)).is_coalesced(), s)
    check(lambda a, b: a - b, x, s, **tol)
    check(lambda a, b: a.sub_(b, alpha=2), x, s, **tol)
    check(lambda a: (-a).to_dense(), s, **tol)
    check(lambda a: a.clone().neg_().to_dense(), s, **tol)
    check(lambda a: (a / 4).to_dense(), s, **tol)
    check(lambda a: a.sum(), s, **tol)
    check(lambda a: torch.sparse.sum(a), s, **tol)
    hybrid = uncoalesced(dtype, (3, 4), 6, dense=(2,))
    check(lambda a, b: a + b, make((3, 4, 2), dtype, seed=6), hybrid, **tol)
    if dtype.is_floating_point:
        check(lambda a, b: a + b, x.double(), s)                 # promotion
    check(lambda a: torch.zeros(4, 5, device=a.device, dtype=torch.int8).add_(a), uncoalesced(torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_sparse_mask(dtype):
    mask = uncoalesced(dtype, (4, 5), 9)
    other = uncoalesced(dtype, (4, 5), 8, seed=7)
    x = make((4, 5), dtype, seed=8)
    check(lambda a, m: a.sparse_mask(m), x, mask)
    check(lambda a, m: a.sparse_mask(m.coalesce()), x, mask)
    check(lambda a, m: a.sparse_mask(m), other, mask)
    check(lambda a, m: a.sparse_mask(m).is_coalesced(), other, mask.coalesce())
    check(lambda a, m: a.sparse_mask(m), mask, mask)
    hybrid = uncoalesced(dtype, (3, 4), 6, dense=(2,))
    check(lambda a, m: a.sparse_mask(m), make((3, 4, 2), dtype), hybrid)
    check(lambda a, m: a.sparse_mask(m), uncoalesced(dtype, (3, 4), 5, dense=(2,), seed=3), hybrid)
    check(lambda a, m: a.sparse_mask(m), make((4, 4), dtype), mask)      # error: sizes


def test_copy_between_layouts():
    s = uncoalesced(torch.float32, (3, 4), 6)
    target = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 4)).to("vk")
    target.copy_(s.to("vk"))
    torch.testing.assert_close(target.to_dense().cpu(), s.to_dense())
    target.copy_(s)  # across devices
    torch.testing.assert_close(target.to_dense().cpu(), s.to_dense())
    back = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 4))
    back.copy_(target)
    torch.testing.assert_close(back.to_dense(), s.to_dense())
    check(lambda a: a.clone().to_dense(), s)
    check(lambda a: a.t().to_dense(), s)
    check(lambda a: a.to(torch.float64).to_dense(), s)


def _normalized_adjacency(n, edges, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (edges,), generator=g)
    dst = torch.randint(0, n, (edges,), generator=g)
    src, dst = torch.cat([src, dst, torch.arange(n)]), torch.cat([dst, src, torch.arange(n)])
    ones = torch.ones(src.numel())
    degree = torch.zeros(n).index_add_(0, src, ones)
    weight = degree[src].rsqrt() * degree[dst].rsqrt()
    return torch.sparse_coo_tensor(torch.stack([src, dst]), weight, (n, n)).coalesce()


def test_gcn_trains_like_cpu():
    torch.manual_seed(0)
    n, features, hidden, classes = 24, 8, 16, 3
    adj = _normalized_adjacency(n, 40)
    x = torch.randn(n, features)
    labels = torch.randint(0, classes, (n,))

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = torch.nn.Parameter(torch.randn(features, hidden) * 0.3)
            self.w2 = torch.nn.Parameter(torch.randn(hidden, classes) * 0.3)

        def forward(self, a, h):
            h = torch.relu(torch.sparse.mm(a, h @ self.w1))
            return torch.sparse.mm(a, h @ self.w2)

    cpu_model = GCN()
    vk_model = GCN()
    vk_model.load_state_dict(cpu_model.state_dict())
    vk_model.to("vk")
    runs = []
    for model, device in ((cpu_model, "cpu"), (vk_model, "vk")):
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        a, h, y = adj.to(device), x.to(device), labels.to(device)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(a, h), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach().cpu())
        runs.append((torch.stack(losses), [p.detach().cpu() for p in model.parameters()]))
    (cpu_losses, cpu_params), (vk_losses, vk_params) = runs
    assert cpu_losses[-1] < cpu_losses[0]
    torch.testing.assert_close(vk_losses, cpu_losses, atol=1e-5, rtol=1e-5)
    for p_vk, p_cpu in zip(vk_params, cpu_params):
        torch.testing.assert_close(p_vk, p_cpu, atol=1e-5, rtol=1e-5)
