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


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lu_gradients(dtype):
    a = well_conditioned((2, 4, 4), dtype)
    b = rand((2, 4, 4), dtype, seed=5)

    def grad(x, y):
        x = x.clone().requires_grad_()
        lu, piv = torch.linalg.lu_factor(x)
        p, l, u = torch.linalg.lu(x)
        loss = (lu * y).sum() + (l * y).sum() + (u * y).sum()
        loss.backward()
        return x.grad

    check(grad, a, b, **TOL[dtype])


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


# ---------------------------------------------------------------- Cholesky, triangular solves


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cholesky(dtype):
    for shape in SQUARE_SHAPES:
        a = spd(shape, dtype)
        for upper in (False, True):
            check(lambda x: torch.linalg.cholesky(x, upper=upper), a, **TOL[dtype])
            check(lambda x: torch.linalg.cholesky_ex(x, upper=upper), a, **TOL[dtype])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(lambda x: torch.cholesky(x, upper=upper), a, **TOL[dtype])
    a = spd((2, 5, 5), dtype)
    for _, layout in layouts(a):
        check(lambda x: torch.linalg.cholesky(layout(x)), a, **TOL[dtype])
    # only the named triangle is read
    check(lambda x: torch.linalg.cholesky(x.tril()), a, **TOL[dtype])
    check(lambda x: torch.linalg.cholesky(x.triu(), upper=True), a, **TOL[dtype])
    # not positive definite: info = order of the first bad leading minor; errors name it
    bad = a.clone()
    bad[1, 2, 2] = -100.0
    check(lambda x: torch.linalg.cholesky_ex(x)[1], bad)
    check(lambda x: torch.linalg.cholesky(x), bad)
    check(lambda x: torch.linalg.cholesky(x), -torch.eye(3, dtype=dtype))
    with pytest.raises(torch.linalg.LinAlgError) as cpu_error:
        torch.linalg.cholesky(bad)
    with pytest.raises(torch.linalg.LinAlgError) as vk_error:
        torch.linalg.cholesky(bad.to("vk"))
    assert str(vk_error.value) == str(cpu_error.value)


def test_cholesky_errors():
    check(lambda x: torch.linalg.cholesky(x), torch.ones(2, 3))
    check(lambda x: torch.linalg.cholesky(x), torch.eye(3, dtype=torch.int64))
    check(lambda x: torch.linalg.cholesky(x), torch.eye(3, dtype=torch.float16))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda x: torch.cholesky(x), torch.ones(2, 3))
        check(lambda x: torch.cholesky(x), torch.eye(3, dtype=torch.int32))
        check(lambda x: torch.cholesky(x), torch.empty(0, 2, 2))
    check(lambda x: torch.cholesky_inverse(x), torch.ones(2, 3))
    check(lambda x: torch.cholesky_inverse(x), torch.eye(3, dtype=torch.float16))
    check(lambda x, y: torch.cholesky_solve(x, y), torch.ones(3, 2), torch.eye(4))
    check(lambda x, y: torch.cholesky_solve(x, y), torch.ones(3, 2), torch.eye(3, dtype=torch.float64))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cholesky_inverse_and_solve(dtype):
    for shape in SQUARE_SHAPES:
        a = spd(shape, dtype)
        for upper in (False, True):
            f = torch.linalg.cholesky(a, upper=upper)
            check(lambda x: torch.cholesky_inverse(x, upper=upper), f, **TOL[dtype])
            b = rand(shape[:-1] + (2,), dtype)
            check(lambda x, y: torch.cholesky_solve(y, x, upper=upper), f, b, **TOL[dtype])
    f = torch.linalg.cholesky(spd((3, 4, 4), dtype))
    b = rand((2, 1, 4, 3), dtype)  # broadcast batch
    check(lambda x, y: torch.cholesky_solve(y, x), f, b, **TOL[dtype])
    for _, layout in layouts(f):
        check(lambda x: torch.cholesky_inverse(layout(x)), f, **TOL[dtype])


def triangular(shape, dtype, upper, seed=0):
    a = well_conditioned(shape, dtype, seed)
    a = a + 2 * torch.diag_embed(torch.sign(torch.diagonal(a, dim1=-2, dim2=-1)))
    return a.triu() if upper else a.tril()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_solve_triangular(dtype):
    for a_shape, b_shape in [((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 3)), ((4, 4), (2, 4, 1)),
                             ((2, 1, 5, 5), (3, 5, 2)), ((0, 3, 3), (0, 3, 2)), ((3, 3), (3, 0)),
                             ((0, 0), (0, 2)), ((6, 6), (6, 6))]:
        for upper in (False, True):
            # the other triangle holds garbage that must not be read
            a = triangular(a_shape, dtype, upper) + (rand(a_shape, dtype).tril(-1) if upper
                                                     else rand(a_shape, dtype).triu(1))
            b = rand(b_shape, dtype, seed=2)
            for unit in (False, True):
                check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper,
                                                                 unitriangular=unit),
                      a, b, **TOL[dtype])
                check(lambda x, y: torch.linalg.solve_triangular(x, y.mT, upper=upper, left=False,
                                                                 unitriangular=unit),
                      a, b, **TOL[dtype])
                for transpose in (False, True):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        check(lambda x, y: torch.triangular_solve(y, x, upper=upper,
                                                                  transpose=transpose,
                                                                  unitriangular=unit),
                              a, b, **TOL[dtype])
    a, b = triangular((3, 4, 4), dtype, True), rand((3, 4, 2), dtype)
    for _, layout in layouts(a):
        check(lambda x, y: torch.linalg.solve_triangular(layout(x), layout(y), upper=True), a, b,
              **TOL[dtype])
    out = torch.empty(0, dtype=dtype)
    check(lambda x, y, o: torch.linalg.solve_triangular(x, y, upper=True, out=o), a, b, out,
          **TOL[dtype])


def test_solve_triangular_errors():
    a, b = torch.eye(3), torch.ones(3, 2)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), a, torch.ones(4, 2))
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), torch.ones(2, 3), b)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), a.int(), b.int())
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), a.half(), b.half())
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), a.double(), b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda x, y: torch.triangular_solve(y, x), a, torch.ones(4, 2))
        check(lambda x, y: torch.triangular_solve(y, x), a.double(), b)
        check(lambda x, y: torch.triangular_solve(y, x), a.half(), b.half())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cholesky_triangular_gradients(dtype):
    a = spd((2, 4, 4), dtype)
    t = triangular((2, 4, 4), dtype, upper=False)
    b = rand((2, 4, 3), dtype, seed=6)

    def grads(x, tri, y):
        x = x.clone().requires_grad_()
        tri = tri.clone().requires_grad_()
        y = y.clone().requires_grad_()
        L = torch.linalg.cholesky(x)
        loss = (L * y[..., :1]).sum() + torch.linalg.solve_triangular(tri, y, upper=False).sum()
        loss = loss + torch.cholesky_solve(y, L).sum() + torch.cholesky_inverse(L).sum()
        loss.backward()
        return x.grad, tri.grad, y.grad

    check(grads, a, t, b, **TOL[dtype])


# ---------------------------------------------------------------- matrix exponential


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_matrix_exp(dtype):
    # One batch whose matrices take every degree (1, 2, 4, 8, 12, 18 with 0..several squarings).
    scales = torch.tensor([1e-9, 1e-7, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.3, 1.0, 3.0, 20.0],
                          dtype=torch.float64)
    a = (rand((len(scales), 4, 4), torch.float64) * scales.view(-1, 1, 1)).to(dtype)
    check(lambda x: torch.linalg.matrix_exp(x), a, **TOL[dtype])
    check(lambda x: torch.matrix_exp(x), a.view(11, 1, 4, 4), **TOL[dtype])
    for shape in [(3, 3), (2, 2, 5, 5), (1, 1), (4, 1, 1), (0, 0), (0, 3, 3), (8, 8)]:
        check(lambda x: torch.linalg.matrix_exp(x), rand(shape, dtype) * 0.5, **TOL[dtype])
    for _, layout in layouts(a):
        check(lambda x: torch.linalg.matrix_exp(layout(x)), a, **TOL[dtype])
    check(lambda x: torch.linalg.matrix_exp(x, out=torch.empty(0, dtype=dtype, device=x.device)),
          a, **TOL[dtype])
    nan = a[:2].clone()
    nan[0, 1, 1] = float("nan")
    check(lambda x: torch.linalg.matrix_exp(x), nan, **TOL[dtype])

    def grad(x):
        x = x.clone().requires_grad_()
        torch.linalg.matrix_exp(x).square().sum().backward()
        return x.grad

    check(grad, a[5:9], **TOL[dtype])


def test_matrix_exp_errors():
    check(lambda x: torch.linalg.matrix_exp(x), torch.ones(2, 3))
    check(lambda x: torch.linalg.matrix_exp(x), torch.ones(3))
    check(lambda x: torch.linalg.matrix_exp(x), torch.ones(3, 3, dtype=torch.int64))
    # float16 / bfloat16: the CPU reads its float64 coefficient tables as 16-bit values
    # (meaningless results); vk computes float32 / float64 only and says so.
    with pytest.raises(NotImplementedError):
        torch.linalg.matrix_exp(torch.eye(3, dtype=torch.float16, device="vk"))


def test_larger_matrices():
    # 256-invocation workgroups (more than 1024 elements per step) and several strides per
    # invocation in every kernel.
    dtype = torch.float64
    a = rand((2, 40, 40), dtype)
    b = rand((2, 40, 30), dtype, seed=3)
    check(lambda x: torch.linalg.lu_factor_ex(x), a, **TOL[dtype])
    check(lambda x, y: torch.linalg.solve(x, y), a, b, atol=1e-8, rtol=1e-8)
    check(lambda x: torch.linalg.cholesky(x), spd((2, 40, 40), dtype), **TOL[dtype])
    t = triangular((2, 40, 40), dtype, upper=True)
    check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True), t, b, **TOL[dtype])
    check(lambda x: torch.linalg.lu_factor_ex(x), rand((70, 20), dtype), **TOL[dtype])


def test_more_gradients():
    dtype = torch.float64
    a = well_conditioned((2, 4, 4), dtype)
    b = rand((2, 4, 3), dtype, seed=7)

    def grads(x, y):
        x = x.clone().requires_grad_()
        y = y.clone().requires_grad_()
        lu, piv = torch.linalg.lu_factor(x)
        out = (torch.linalg.lu_solve(lu, piv, y) + torch.linalg.lu_solve(lu, piv, y, adjoint=True)
               + torch.linalg.lu_solve(lu, piv, y.mT, left=False).mT).sum()
        s = x @ x.mT
        out = out + torch.linalg.cholesky(s, upper=True).sum() + torch.logdet(s).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = out + torch.triangular_solve(y, x.triu(), transpose=True)[0].sum()
        out = out + torch.linalg.matrix_power(x, -2).sum() + torch.linalg.inv_ex(x)[0].sum()
        out.backward()
        return x.grad, y.grad

    check(grads, a, b, **TOL[dtype])


# ---------------------------------------------------------------- LDL^T


def symmetric(shape, dtype, seed=0):
    a = rand(shape, torch.float64, seed)
    a = a + a.mT
    if a.numel() and a.size(-1) > 1:
        a[..., 0, 0] = 1e-3  # a small first pivot: forces 2x2 blocks / interchanges
    return a.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ldl(dtype):
    for shape in SQUARE_SHAPES + [(4, 9, 9), (3, 1, 1)]:
        a = symmetric(shape, dtype)
        for hermitian in (False, True):
            check(lambda x: torch.linalg.ldl_factor_ex(x, hermitian=hermitian), a, **TOL[dtype])
            check(lambda x: torch.linalg.ldl_factor(x, hermitian=hermitian), a, **TOL[dtype])
        b = rand(shape[:-1] + (3,), dtype, seed=2)
        check(lambda x, y: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(x), y), a, b,
              **TOL[dtype])
    a = symmetric((3, 6, 6), dtype)
    for _, layout in layouts(a):
        check(lambda x: torch.linalg.ldl_factor_ex(layout(x)), a, **TOL[dtype])
        check(lambda x, y: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(x), layout(y)), a,
              rand((3, 6, 2), dtype, seed=3), **TOL[dtype])
    # broadcast B over LD's batch
    check(lambda x, y: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(x), y), a[0],
          rand((2, 6, 2), dtype, seed=4), **TOL[dtype])
    # only the lower triangle is read; a zero column gives info
    check(lambda x: torch.linalg.ldl_factor_ex(x.tril()), a, **TOL[dtype])
    z = a.clone()
    z[1, :, 2] = 0
    z[1, 2, :] = 0
    check(lambda x: torch.linalg.ldl_factor_ex(x), z, **TOL[dtype])
    check(lambda x: torch.linalg.ldl_factor(x), z, **TOL[dtype])


def test_ldl_errors():
    check(lambda x: torch.linalg.ldl_factor_ex(x), torch.ones(2, 3))
    check(lambda x: torch.linalg.ldl_factor_ex(x), torch.eye(3, dtype=torch.int64))
    check(lambda x: torch.linalg.ldl_factor_ex(x), torch.eye(3, dtype=torch.float16))
    ld, piv = torch.linalg.ldl_factor(symmetric((3, 3), torch.float32))
    check(lambda x, p, y: torch.linalg.ldl_solve(x, p, y), ld, piv, torch.ones(4, 2))
    check(lambda x, p, y: torch.linalg.ldl_solve(x, p, y), ld, piv.long(), torch.ones(3, 2))
    check(lambda x, p, y: torch.linalg.ldl_solve(x, p, y), ld, piv, torch.ones(3, 2,
                                                                              dtype=torch.float64))
