"""cdist / pdist (_cdist_forward, _cdist_backward, _pdist_forward, _pdist_backward) against
PyTorch's CPU: every p family (0, 1, 2, inf, p < 1, 1 < p < 2, p > 2), float32 / float64,
batched and broadcast batches, the matrix-multiplication path of p = 2 (compute modes and more
than 25 rows), non-contiguous inputs, ties (zero distances and equal coordinates: the CPU's
subgradients), empty inputs, autograd and the CPU's errors."""
import math

import pytest
import torch
import torch.nn.functional as F

import torch_vk  # noqa: F401
from helpers import TOLERANCE, check, layouts, make, with_ties

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
DTYPES = [torch.float32, torch.float64]
P_VALUES = [0.0, 1.0, 2.0, math.inf, 0.5, 1.5, 3.0]
GRAD_TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.float64: dict(atol=1e-10, rtol=1e-9)}


def tol(dtype):
    return TOLERANCE.get(dtype, {}) or dict(atol=1e-10, rtol=1e-9)


def check_grad(fn, inputs, dtype):
    def run(device):
        ts = [t.detach().to(device).requires_grad_(True) for t in inputs]
        out = fn(*ts)
        g = make(out.shape, out.dtype, seed=11).to(device)
        return [x.cpu() for x in torch.autograd.grad(out, ts, g)]
    for a, e in zip(run(VK), run("cpu")):
        torch.testing.assert_close(a, e, equal_nan=True, **GRAD_TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", P_VALUES, ids=str)
def test_cdist(p, dtype):
    x1 = make((5, 4), dtype)
    x2 = make((6, 4), dtype, seed=1)
    for mode in ("use_mm_for_euclid_dist_if_necessary", "donot_use_mm_for_euclid_dist"):
        for _, layout in layouts(x1):
            check(lambda a, b: torch.cdist(layout(a), layout(b), p=p, compute_mode=mode), x1, x2, **tol(dtype))
    check_grad(lambda a, b: torch.cdist(a, b, p=p), [x1, x2], dtype)
    # batched, broadcast batch dimensions
    b1 = make((2, 3, 4), dtype, seed=2)
    b2 = make((1, 2, 5, 4), dtype, seed=3)
    check(lambda a, b: torch.cdist(a, b, p=p), b1, b2, **tol(dtype))
    check_grad(lambda a, b: torch.cdist(a, b, p=p), [b1, b2], dtype)
    # ties: repeated rows (distance 0) and equal coordinates
    t1 = with_ties((4, 3), dtype)
    t2 = torch.cat([t1[:2], with_ties((3, 3), dtype, seed=1)])
    check(lambda a, b: torch.cdist(a, b, p=p), t1, t2, **tol(dtype))
    check_grad(lambda a, b: torch.cdist(a, b, p=p), [t1, t2], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cdist_matmul_path_and_direct_forward(dtype):
    x1 = make((30, 5), dtype)
    x2 = make((7, 5), dtype, seed=1)
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        check(lambda a, b: torch.cdist(a, b, compute_mode=mode), x1, x2, atol=1e-4, rtol=1e-4)
    # _cdist_forward itself chooses the matmul path as the CPU does
    for mode in (None, 0, 1, 2):
        check(lambda a, b: torch.ops.aten._cdist_forward(a, b, 2.0, mode), x1, x2, atol=1e-4, rtol=1e-4)
        check(lambda a, b: torch.ops.aten._cdist_forward(a, b, 2.0, mode), x1[:4], x2, **tol(dtype))
    check_grad(lambda a, b: torch.ops.aten._cdist_forward(a, b, 2.0, 2), [x1, x2], dtype)
    check_grad(lambda a, b: torch.ops.aten._cdist_forward(a, b, 1.0, None), [x1[:3], x2], dtype)
    # a direct _cdist_backward call with a non-contiguous grad
    d = torch.ops.aten._cdist_forward(x1[:3], x2, 1.5, None)
    g = make((7, 3), dtype, seed=5).t()
    check(lambda g_, a, b, d_: torch.ops.aten._cdist_backward(g_, a, b, 1.5, d_), g, x1[:3], x2, d, **tol(dtype))


def test_cdist_half_empty_and_errors():
    x1 = make((3, 4), torch.float32)
    x2 = make((5, 4), torch.float32, seed=1)
    for dtype in (torch.float16, torch.bfloat16):
        check(lambda a, b: torch.cdist(a, b, p=1.0), x1.to(dtype), x2.to(dtype))  # NotImplementedError
        check(lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), x1.to(dtype), x2.to(dtype),
              atol=2e-2, rtol=2e-2)  # the matmul path takes them, as on the CPU
    check(lambda a, b: torch.cdist(a, b), torch.empty(0, 4), x2)
    check(lambda a, b: torch.cdist(a, b), x1, torch.empty(2, 0, 4))
    check(lambda a, b: torch.cdist(a, b, p=1.0), torch.empty(3, 0), torch.empty(5, 0))
    check_grad(lambda a, b: torch.cdist(a, b, p=1.0), [torch.empty(3, 0), torch.empty(5, 0)], torch.float32)
    check(lambda a, b: torch.cdist(a, b), x1[0], x2)                         # 1-D
    check(lambda a, b: torch.cdist(a, b), x1, x2[:, :3])                     # columns
    check(lambda a, b: torch.cdist(a, b, p=-1.0), x1, x2)                    # negative p
    check(lambda a, b: torch.ops.aten._cdist_forward(a, b, 2.0, 3), x1, x2)  # mode
    check(lambda a, b: torch.cdist(a, b), x1.long(), x2.long())              # integer
    check(lambda a, b: torch.cdist(a, b, p=1.0), x1, x2.double())            # mixed dtypes


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", P_VALUES, ids=str)
def test_pdist(p, dtype):
    x = make((7, 5), dtype)
    for _, layout in layouts(x):
        check(lambda a: F.pdist(layout(a), p=p), x, **tol(dtype))
    check_grad(lambda a: F.pdist(a, p=p), [x], dtype)
    t = with_ties((6, 3), dtype)
    t[3] = t[1]  # a zero distance
    check(lambda a: F.pdist(a, p=p), t, **tol(dtype))
    check_grad(lambda a: F.pdist(a, p=p), [t], dtype)


def test_pdist_sizes_and_errors():
    check(lambda a: F.pdist(a), make((1, 4), torch.float32))          # one row: no pairs
    check(lambda a: F.pdist(a), torch.empty(0, 4))
    check(lambda a: F.pdist(a), torch.empty(4, 0))                    # zero columns: zeros
    check_grad(lambda a: F.pdist(a, p=3.0), [make((1, 4), torch.float32)], torch.float32)
    check_grad(lambda a: F.pdist(a, p=0.0), [make((4, 3), torch.float32)], torch.float32)
    x = make((40, 3), torch.float32)                                  # 780 pairs: several workgroups
    check(lambda a: F.pdist(a), x)
    check_grad(lambda a: F.pdist(a, p=1.5), [x], torch.float32)
    check(lambda a: F.pdist(a), x[0])                                 # 1-D
    check(lambda a: F.pdist(a, p=-1.0), x)                            # negative p
    check(lambda a: F.pdist(a), x.half())                             # float16
    check(lambda a: F.pdist(a), x.long())                             # integer
    check(lambda a: torch.ops.aten._pdist_forward(a, 2.0), x.t())     # non-contiguous
