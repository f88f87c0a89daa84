"""torch.linalg's LU / Cholesky / triangular-solve family against PyTorch's CPU (LAPACK):
lu_factor(_ex), lu_solve, lu_unpack, lu, solve(_ex), inv(_ex), det, slogdet, cholesky(_ex),
cholesky_inverse, cholesky_solve, solve_triangular, triangular_solve; batches, broadcasting,
empty inputs, non-contiguous inputs, errors and gradients."""
import warnings

import pytest
import torch

from helpers import check, layouts

pytestmark = pytest.mark.usefixtures("strict_native")

DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.float64: dict(atol=1e-10, rtol=1e-10)}


def well_conditioned(shape, dtype, seed=0):
    """randn + n I: LU pivots are unambiguous (no near-ties) and the solves are accurate."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(shape, generator=g, dtype=torch.float64)
    if shape[-1] == shape[-2]:
        a = a + shape[-1] * 0.5 * torch.eye(shape[-1], dtype=torch.float64) * torch.sign(
            torch.randn(shape[:-1], generator=g, dtype=torch.float64)).unsqueeze(-1)
    return a.to(dtype)


def spd(shape, dtype, seed=0):
    """A symmetric positive definite batch: a a^T + n I."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(shape, generator=g, dtype=torch.float64)
    n = shape[-1]
    return (a @ a.mT + n * torch.eye(n, dtype=torch.float64)).to(dtype)


def rand(shape, dtype, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


SQUARE_SHAPES = [(1, 1), (3, 3), (5, 5), (2, 4, 4), (2, 3, 6, 6), (17, 17), (0, 0), (0, 3, 3)]


# ---------------------------------------------------------------- LU


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lu_factor_ex(dtype):
    for shape in SQUARE_SHAPES + [(4, 3), (3, 5), (2, 6, 2), (2, 2, 7), (3, 0), (0, 4)]:
        a = well_conditioned(shape, dtype)
        # pivots and info must be exact; LU to fp tolerance
        check(lambda x: torch.linalg.lu_factor_ex(x), a, **TOL[dtype])
        check(lambda x: torch.linalg.lu_factor(x), a, **TOL[dtype])
    a = rand((4, 5, 5), dtype)  # plain randn: real pivoting
    check(lambda x: torch.linalg.lu_factor_ex(x), a, **TOL[dtype])
    for _, layout in layouts(a):
        check(lambda x: torch.linalg.lu_factor_ex(layout(x)), a, **TOL[dtype])
    check(lambda x: torch.linalg.lu_factor_ex(x.mT), a, **TOL[dtype])


def test_lu_factor_singular_info_and_ties():
    # Zero columns: info is the first zero pivot (1-based), per batch element.
    a = torch.tensor([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]],
                      [[0.0, 0.0, 1.0], [0.0, 0.0, 2.0], [0.0, 0.0, 3.0]],
                      [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]], dtype=torch.float64)
    check(lambda x: torch.linalg.lu_factor_ex(x), a)
    # Ties in |a|: the first row wins, as in LAPACK.
    t = torch.tensor([[1.0, 2.0, 0.5], [-1.0, 3.0, 1.0], [1.0, -1.0, 2.0]])
    check(lambda x: torch.linalg.lu_factor_ex(x), t)
    # check_errors=True / lu_factor raise for a singular matrix, as on the CPU.
    check(lambda x: torch.linalg.lu_factor(x), a)
    check(lambda x: torch.linalg.lu_factor_ex(x, check_errors=True), a[1])


def test_lu_factor_errors():
    check(lambda x: torch.linalg.lu_factor_ex(x), torch.ones(3))                     # 1-d
    check(lambda x: torch.linalg.lu_factor_ex(x), torch.ones(3, 3, dtype=torch.int32))
    check(lambda x: torch.linalg.lu_factor_ex(x), torch.ones(3, 3, dtype=torch.float16))
    check(lambda x: torch.linalg.lu_factor_ex(x, pivot=False), torch.eye(3))
    out = [torch.empty(0), torch.empty(0, dtype=torch.int32), torch.empty(0, dtype=torch.int32)]
    check(lambda x, lu, p, i: torch.linalg.lu_factor_ex(x, out=(lu, p, i)),
          well_conditioned((2, 3, 3), torch.float32), *out)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lu_solve(dtype):
    for a_shape, b_shape in [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 3)), ((4, 4), (2, 4, 1)),
                             ((2, 1, 5, 5), (3, 5, 2)), ((0, 3, 3), (0, 3, 2)), ((3, 3), (3, 0)),
                             ((0, 0), (0, 2)), ((6, 6), (6, 6))]:
        a = rand(a_shape, dtype)
        b = rand(b_shape, dtype, seed=2)
        for left in (True, False):
            for adjoint in (False, True):
                bb = b if left else b.mT

                def fn(x, y):
                    lu, piv = torch.linalg.lu_factor(x)
                    return torch.linalg.lu_solve(lu, piv, y, left=left, adjoint=adjoint)

                check(fn, a, bb, **TOL[dtype])
    a, b = rand((3, 4, 4), dtype), rand((3, 4, 2), dtype, seed=3)
    for _, layout in layouts(b):
        check(lambda x, y: torch.linalg.lu_solve(*torch.linalg.lu_factor(layout(x)), layout(y)),
              a, b, **TOL[dtype])
    # errors: mismatched sizes, wrong pivots dtype
    check(lambda x, y: torch.linalg.lu_solve(*torch.linalg.lu_factor(x), y), a, rand((3, 5, 2), dtype))
    check(lambda x, y: torch.linalg.lu_solve(torch.linalg.lu_factor(x)[0],
                                             torch.linalg.lu_factor(x)[1].long(), y), a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lu_unpack_and_lu(dtype):
    for shape in [(3, 3), (2, 5, 5), (4, 2), (2, 3, 6), (0, 3, 3), (0, 0), (7, 7)]:
        a = rand(shape, dtype)
        check(lambda x: torch.linalg.lu(x), a, **TOL[dtype])
        check(lambda x: torch.lu_unpack(*torch.linalg.lu_factor(x)), a, **TOL[dtype])
        check(lambda x: torch.lu_unpack(*torch.linalg.lu_factor(x), unpack_data=False), a,
              **TOL[dtype])
        check(lambda x: torch.lu_unpack(*torch.linalg.lu_factor(x), unpack_pivots=False), a,
              **TOL[dtype])
    check(lambda x: torch.linalg.lu(x, pivot=False), rand((3, 3), dtype))
    # lu_unpack works on any dtype (it only moves values)
    lu = torch.arange(9.0).reshape(3, 3)
    piv = torch.tensor([3, 2, 3], dtype=torch.int32)
    for dt in (torch.float16, torch.int64, torch.float32):
        check(lambda x, p: torch.lu_unpack(x, p), lu.to(dt), piv)


# ---------------------------------------------------------------- solve, inv, det, slogdet


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_solve(dtype):
    for a_shape, b_shape in [((3, 3), (3, 2)), ((3, 3), (3,)), ((2, 4, 4), (2, 4)),
                             ((2, 4, 4), (4, 3)), ((4, 4), (2, 3, 4, 2)), ((0, 3, 3), (0, 3, 1)),
                             ((0, 0), (0, 2)), ((5, 5), (5, 0))]:
        a = well_conditioned(a_shape, dtype)
        b = rand(b_shape, dtype, seed=2)
        check(lambda x, y: torch.linalg.solve(x, y), a, b, **TOL[dtype])
        check(lambda x, y: torch.linalg.solve_ex(x, y), a, b, **TOL[dtype])
        check(lambda x, y: torch.ops.aten._linalg_solve_ex(x, y), a, b, **TOL[dtype])
        if b.dim() >= 2 and b.size(-2) == a.size(-1):
            check(lambda x, y: torch.linalg.solve(x, y.mT, left=False), a, b, **TOL[dtype])
    a, b = well_conditioned((2, 5, 5), dtype), rand((2, 5, 3), dtype)
    for _, layout in layouts(a):
        check(lambda x, y: torch.linalg.solve(layout(x), layout(y)), a, b, **TOL[dtype])
    check(lambda x, y: torch.linalg.solve(x.mT, y), a, b, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_inv_det_slogdet(dtype):
    for shape in SQUARE_SHAPES:
        a = well_conditioned(shape, dtype)
        check(lambda x: torch.linalg.inv(x), a, **TOL[dtype])
        check(lambda x: torch.linalg.inv_ex(x), a, **TOL[dtype])
        check(lambda x: torch.inverse(x), a, **TOL[dtype])
        check(lambda x: torch.linalg.det(x), a, **TOL[dtype])
        check(lambda x: torch.ops.aten._linalg_det(x), a, **TOL[dtype])
        check(lambda x: torch.linalg.slogdet(x), a, **TOL[dtype])
        check(lambda x: torch.ops.aten._linalg_slogdet(x), a, **TOL[dtype])
        check(lambda x: torch.logdet(x.abs() + x.mT.abs() + x.size(-1) * torch.eye(
            x.size(-1), dtype=x.dtype, device=x.device)), a, **TOL[dtype])
    a = rand((3, 4, 4), dtype)
    for _, layout in layouts(a):
        check(lambda x: torch.linalg.det(layout(x)), a, **TOL[dtype])
        check(lambda x: torch.linalg.inv(layout(x)), a, **TOL[dtype])
    # singular: det 0, slogdet (0, -inf), inv_ex info
    s = torch.tensor([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]]], dtype=dtype)
    check(lambda x: torch.linalg.det(x), s)
    check(lambda x: torch.linalg.slogdet(x), s)
    check(lambda x: torch.linalg.inv_ex(x)[1], s)


def test_singular_errors():
    # The non-_ex ops raise the CPU's LinAlgError (info read back once, as on CUDA).
    s = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    for fn in (torch.linalg.inv, torch.inverse,
               lambda x: torch.linalg.solve(x, torch.ones(3, 1, device=x.device)),
               lambda x: torch.linalg.inv_ex(x, check_errors=True)):
        check(fn, s)
        check(fn, torch.stack([torch.eye(3), s]))
    # the same message as the CPU's (which diagonal element, which batch element)
    for x in (s, torch.stack([torch.eye(3), s])):
        with pytest.raises(torch.linalg.LinAlgError) as cpu_error:
            torch.linalg.inv(x)
        with pytest.raises(torch.linalg.LinAlgError) as vk_error:
            torch.linalg.inv(x.to("vk"))
        assert str(vk_error.value) == str(cpu_error.value)


def test_solve_inv_det_errors():
    check(lambda x: torch.linalg.inv(x), torch.ones(2, 3))                        # not square
    check(lambda x: torch.linalg.inv(x), torch.ones(3, 3, dtype=torch.int64))
    check(lambda x: torch.linalg.inv(x), torch.ones(3, 3, dtype=torch.float16))
    check(lambda x: torch.linalg.det(x), torch.ones(3, 3, dtype=torch.int64))
    check(lambda x: torch.linalg.det(x), torch.ones(2, 3))
    check(lambda x: torch.linalg.slogdet(x), torch.ones(3))
    check(lambda x, y: torch.linalg.solve(x, y), torch.eye(3), torch.ones(4, 2))  # shapes
    check(lambda x, y: torch.linalg.solve(x, y), torch.eye(3), torch.ones(3, 2, dtype=torch.float64))
    check(lambda x, y: torch.linalg.solve(x, y), torch.eye(3).expand(2, 3, 3), torch.ones(3, 3, 1))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_solve_inv_det_gradients(dtype):
    a = well_conditioned((2, 4, 4), dtype)
    b = rand((2, 4, 3), dtype, seed=4)

    def grads(x, y):
        x = x.clone().requires_grad_()
        y = y.clone().requires_grad_()
        loss = (torch.linalg.solve(x, y).sum() + torch.linalg.inv(x).square().sum()
                + torch.linalg.det(x).sum() + torch.linalg.slogdet(x).logabsdet.sum()
                + torch.linalg.solve(x, y[..., :1].mT, left=False).sum())
        loss.backward()
        return x.grad, y.grad

    check(grads, a, b, **TOL[dtype])
