"""Orthogonal factorizations against PyTorch's CPU (LAPACK): linalg.eigh / eigvalsh and
linalg.svd / svdvals (and what builds on them: pinv, matrix_rank, matrix_norm('nuc')), forward
and autograd. Eigenvectors and singular vectors are unique only up to the sign of each column:
they are compared after aligning signs with the CPU's, and checked by residual and
orthogonality."""
import pytest
import torch

import torch_vk  # noqa: F401
from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

DTYPES = [torch.float32, torch.float64]
# Absolute tolerances relative to the matrix scale (entries in [-3, 3], n <= 17).
VALUE_TOL = {torch.float32: dict(atol=5e-5, rtol=2e-5), torch.float64: dict(atol=1e-11, rtol=1e-11)}
VECTOR_TOL = {torch.float32: dict(atol=5e-4, rtol=0), torch.float64: dict(atol=1e-9, rtol=0)}
RESIDUAL_TOL = {torch.float32: 2e-5, torch.float64: 1e-12}


def vk(x):
    return x.to("vk")


def align_signs(actual, expected):
    """Flips each column of `actual` to the sign that best matches `expected`'s column."""
    sign = torch.sign((actual * expected).sum(-2, keepdim=True))
    sign[sign == 0] = 1
    return actual * sign


def assert_orthonormal_columns(q, dtype):
    n = q.shape[-1]
    eye = torch.eye(n, dtype=q.dtype).expand(q.shape[:-2] + (n, n))
    torch.testing.assert_close(q.mT @ q, eye, atol=RESIDUAL_TOL[dtype] * max(n, 1) * 4, rtol=0)


def symmetric_input(shape, dtype, seed=0):
    a = make(shape, torch.float64, seed=seed)
    return a.to(dtype)  # not symmetric: eigh reads one triangle only


# ---------------------------------------------------------------- eigh


def check_eigh(a, uplo="L", layout=lambda x: x):
    dtype = a.dtype
    w_cpu, v_cpu = torch.linalg.eigh(layout(a), UPLO=uplo)
    w, v = torch.linalg.eigh(layout(vk(a)), UPLO=uplo)
    assert w.device.type == "vk" and v.device.type == "vk"
    assert w.stride() == w_cpu.stride() and v.stride() == v_cpu.stride()
    w, v = w.cpu(), v.cpu()
    a = layout(a)
    scale = max(a.abs().max().item(), 1.0) if a.numel() else 1.0
    tol = VALUE_TOL[dtype]
    torch.testing.assert_close(w, w_cpu, atol=tol["atol"] * scale, rtol=tol["rtol"])
    torch.testing.assert_close(align_signs(v, v_cpu), v_cpu, **VECTOR_TOL[dtype])
    if a.numel():
        sym = (a.tril() + a.tril(-1).mT) if uplo == "L" else (a.triu() + a.triu(1).mT)
        resid = v.mT @ sym @ v - torch.diag_embed(w)
        assert resid.abs().max().item() <= RESIDUAL_TOL[dtype] * scale * a.shape[-1] * 4
        assert_orthonormal_columns(v, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_shapes_and_triangles(dtype, uplo):
    for i, shape in enumerate([(1, 1), (2, 2), (3, 3), (5, 5), (8, 8), (17, 17), (2, 3, 4, 4),
                               (0, 0), (2, 0, 0), (0, 3, 3)]):
        check_eigh(symmetric_input(shape, dtype, seed=i), uplo)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigh_layouts(dtype):
    a = symmetric_input((3, 5, 5), dtype)
    for _, layout in layouts(a):
        check_eigh(a, "L", layout)
        check_eigh(a, "U", layout)
    # batch dims that do not collapse to one stride
    check_eigh(symmetric_input((4, 3, 5, 5), dtype), "L", lambda x: x.permute(1, 0, 2, 3))
    check_eigh(symmetric_input((3, 5, 5), dtype), "U", lambda x: x.mT)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigh_structured_matrices(dtype):
    n = 6
    cases = [torch.eye(n), torch.zeros(n, n), torch.diag(torch.arange(n, 0, -1.0)),
             torch.ones(n, n),  # eigenvalue 0 repeated n - 1 times
             torch.diag(torch.tensor([1e-6, 1.0, 1e6, -1e6, 3.0, 3.0]))]
    for c in cases:
        c = c.to(dtype)
        w_cpu = torch.linalg.eigvalsh(c)
        w, v = (t.cpu() for t in torch.linalg.eigh(vk(c)))
        scale = max(c.abs().max().item(), 1.0)
        torch.testing.assert_close(w, w_cpu, atol=VALUE_TOL[dtype]["atol"] * scale, rtol=VALUE_TOL[dtype]["rtol"])
        assert_orthonormal_columns(v, dtype)
        torch.testing.assert_close(v @ torch.diag_embed(w) @ v.mT, c,
                                   atol=RESIDUAL_TOL[dtype] * scale * n * 4, rtol=0)
    big = symmetric_input((5, 5), dtype) * 1e15
    check_eigh(big)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigvalsh_and_out(dtype):
    a = symmetric_input((2, 6, 6), dtype)
    check(lambda x: torch.linalg.eigvalsh(x, UPLO="U"), a, **VALUE_TOL[dtype])
    w_cpu, v_cpu = torch.linalg.eigh(a)
    w, v = vk(torch.empty(0, dtype=dtype)), vk(torch.empty(0, dtype=dtype))
    torch.linalg.eigh(vk(a), out=(w, v))
    assert v.stride() == v_cpu.stride()
    torch.testing.assert_close(w.cpu(), w_cpu, **VALUE_TOL[dtype])
    torch.testing.assert_close(align_signs(v.cpu(), v_cpu), v_cpu, **VECTOR_TOL[dtype])
    # an out= tensor whose batch dims do not collapse
    vo = vk(torch.zeros(6, 6, 2, dtype=dtype)).permute(2, 0, 1)
    torch.linalg.eigh(vk(a), out=(w, vo))
    torch.testing.assert_close(align_signs(vo.cpu(), v_cpu), v_cpu, **VECTOR_TOL[dtype])


def test_eigh_errors():
    a = make((3, 3), torch.float32)
    check(lambda x: torch.linalg.eigh(x), make((2, 3), torch.float32))
    check(lambda x: torch.linalg.eigh(x), make((3,), torch.float32))
    check(lambda x: torch.linalg.eigh(x, UPLO="X"), a)
    check(lambda x: torch.linalg.eigh(x), a.to(torch.int32))
    check(lambda x: torch.linalg.eigh(x), a.half())
    check(lambda x: torch.linalg.eigvalsh(x), a.bfloat16())


def test_eigh_nan_input_ends():
    # The CPU raises LinAlgError ("failed to converge") for NaN input; the device cannot raise
    # without waiting, so its bounded sweeps end with NaN results.
    a = torch.full((4, 4), float("nan"))
    w, v = torch.linalg.eigh(vk(a))
    assert torch.isnan(w.cpu()).any() and torch.isnan(v.cpu()).any()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigh_backward(dtype):
    a = symmetric_input((2, 4, 4), dtype)
    a = a + a.mT

    def loss(x):
        w, v = torch.linalg.eigh(x)
        return w.sum() + (w * w).sum() + v.abs().sum() + torch.linalg.eigvalsh(x).pow(3).sum()

    x_cpu = a.clone().requires_grad_()
    loss(x_cpu).backward()
    x_vk = vk(a).requires_grad_()
    loss(x_vk).backward()
    tol = dict(atol=1e-3, rtol=1e-3) if dtype == torch.float32 else dict(atol=1e-8, rtol=1e-8)
    torch.testing.assert_close(x_vk.grad.cpu(), x_cpu.grad, **tol)


# ---------------------------------------------------------------- svd


def check_svd(a, full, layout=lambda x: x):
    dtype = a.dtype
    m, n = a.shape[-2:]
    k = min(m, n)
    u_cpu, s_cpu, vh_cpu = torch.linalg.svd(layout(a), full_matrices=full)
    u, s, vh = torch.linalg.svd(layout(vk(a)), full_matrices=full)
    for x, y in ((u, u_cpu), (s, s_cpu), (vh, vh_cpu)):
        assert x.device.type == "vk"
        assert x.shape == y.shape and x.stride() == y.stride(), (x.shape, x.stride(), y.stride())
    u, s, vh = u.cpu(), s.cpu(), vh.cpu()
    a = layout(a)
    scale = max(a.abs().max().item(), 1.0) if a.numel() else 1.0
    tol = VALUE_TOL[dtype]
    torch.testing.assert_close(s, s_cpu, atol=tol["atol"] * scale, rtol=tol["rtol"])
    if a.numel() == 0:
        torch.testing.assert_close(u, u_cpu)
        torch.testing.assert_close(vh, vh_cpu)
        return
    u_k, v_k = u[..., :k], vh[..., :k, :].mT
    u_k = align_signs(u_k, u_cpu[..., :k])
    v_k = align_signs(v_k, vh_cpu[..., :k, :].mT)
    torch.testing.assert_close(u_k, u_cpu[..., :k], **VECTOR_TOL[dtype])
    torch.testing.assert_close(v_k, vh_cpu[..., :k, :].mT, **VECTOR_TOL[dtype])
    assert_orthonormal_columns(u, dtype)
    assert_orthonormal_columns(vh.mT, dtype)
    recon = u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :]
    assert (recon - a).abs().max().item() <= RESIDUAL_TOL[dtype] * scale * max(m, n) * 4


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("full", [False, True])
def test_svd_shapes(dtype, full):
    for i, shape in enumerate([(1, 1), (3, 3), (5, 3), (3, 5), (8, 8), (16, 5), (2, 17),
                               (2, 4, 3), (2, 3, 3, 6), (0, 3), (3, 0), (2, 0, 0), (0, 2, 3)]):
        check_svd(make(shape, dtype, seed=i), full)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_svd_layouts(dtype):
    a = make((3, 5, 4), dtype)
    for _, layout in layouts(a):
        check_svd(a, False, layout)
        check_svd(a, True, layout)
    check_svd(make((4, 3, 5, 2), dtype), True, lambda x: x.permute(1, 0, 2, 3))
    check_svd(make((2, 6, 3), dtype), False, lambda x: x.mT)


def svd_invariants(u, s, vh, a, dtype):
    k = s.shape[-1]
    assert_orthonormal_columns(u, dtype)
    assert_orthonormal_columns(vh.mT, dtype)
    scale = max(a.abs().max().item(), 1.0)
    recon = u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :]
    assert (recon - a).abs().max().item() <= RESIDUAL_TOL[dtype] * scale * max(a.shape[-2:]) * 4


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_svd_rank_deficient_and_ill_conditioned(dtype):
    g = torch.Generator().manual_seed(3)
    low_rank = (torch.randn(6, 2, generator=g, dtype=torch.float64) @
                torch.randn(2, 4, generator=g, dtype=torch.float64)).to(dtype)
    for a, full in ((low_rank, True), (low_rank.mT.contiguous(), True), (low_rank, False),
                    (torch.zeros(4, 3, dtype=dtype), True), (torch.ones(3, 5, dtype=dtype), True)):
        s_cpu = torch.linalg.svdvals(a)
        u, s, vh = (t.cpu() for t in torch.linalg.svd(vk(a), full_matrices=full))
        torch.testing.assert_close(s, s_cpu, atol=VALUE_TOL[dtype]["atol"] * max(a.abs().max().item(), 1),
                                   rtol=VALUE_TOL[dtype]["rtol"])
        svd_invariants(u, s, vh, a, dtype)
    # singular values 1 .. 1e-5: the small ones to an absolute error of ~eps * ||A||
    q1, _ = torch.linalg.qr(torch.randn(7, 7, generator=g, dtype=torch.float64))
    q2, _ = torch.linalg.qr(torch.randn(5, 5, generator=g, dtype=torch.float64))
    sig = torch.logspace(0, -5, 5, dtype=torch.float64)
    a = (q1[:, :5] @ torch.diag(sig) @ q2.mT).to(dtype)
    s = torch.linalg.svdvals(vk(a)).cpu().double()
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(s, sig, atol=20 * eps, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_svd_consumers(dtype):
    a = make((2, 5, 4), dtype)
    tol = VALUE_TOL[dtype]
    check(lambda x: torch.linalg.svdvals(x), a, **tol)
    check(lambda x: torch.linalg.svd(x, full_matrices=False)[1], a.mT, **tol)
    check(lambda x: torch.linalg.matrix_norm(x, "nuc"), a, **tol)
    check(lambda x: torch.linalg.matrix_norm(x, 2), a, **tol)
    check(lambda x: torch.linalg.matrix_norm(x, -2), a, **tol)
    check(lambda x: torch.linalg.pinv(x), a, atol=1e-4 if dtype == torch.float32 else 1e-10, rtol=1e-4)
    check(lambda x: torch.linalg.matrix_rank(x), a)
    low_rank = (make((6, 2), dtype) @ make((2, 5), dtype, seed=1))
    check(lambda x: torch.linalg.matrix_rank(x), low_rank)
    check(lambda x: torch.linalg.matrix_rank(x, hermitian=True), low_rank @ low_rank.mT)
    check(lambda x: torch.linalg.cond(x), make((3, 3), dtype), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_svd_out(dtype):
    a = make((2, 5, 3), dtype)
    u_cpu, s_cpu, vh_cpu = torch.linalg.svd(a, full_matrices=True)
    u, s, vh = (vk(torch.empty(0, dtype=dtype)) for _ in range(3))
    torch.linalg.svd(vk(a), full_matrices=True, out=(u, s, vh))
    assert u.stride() == u_cpu.stride() and vh.stride() == vh_cpu.stride()
    torch.testing.assert_close(s.cpu(), s_cpu, **VALUE_TOL[dtype])
    svd_invariants(u.cpu(), s.cpu(), vh.cpu(), a, dtype)


def test_svd_errors():
    check(lambda x: torch.linalg.svd(x), make((3,), torch.float32))
    check(lambda x: torch.linalg.svd(x), make((3, 3), torch.int32))
    check(lambda x: torch.linalg.svd(x), make((3, 3), torch.float16))
    check(lambda x: torch.linalg.svdvals(x), make((3, 3), torch.bfloat16))
    check(lambda x: torch.linalg.svd(x, driver="gesvd"), make((3, 3), torch.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_svd_backward(dtype):
    for shape in ((4, 3), (3, 4), (2, 3, 3)):
        a = make(shape, dtype)

        def loss(x):
            u, s, vh = torch.linalg.svd(x, full_matrices=False)
            recon = u @ torch.diag_embed(s) @ vh
            return (s.sum() + (recon * recon).sum() + u.abs().sum() + vh.abs().sum()
                    + torch.linalg.svdvals(x).pow(2).sum())

        x_cpu = a.clone().requires_grad_()
        loss(x_cpu).backward()
        x_vk = vk(a).requires_grad_()
        loss(x_vk).backward()
        tol = dict(atol=2e-3, rtol=2e-3) if dtype == torch.float32 else dict(atol=1e-8, rtol=1e-8)
        torch.testing.assert_close(x_vk.grad.cpu(), x_cpu.grad, **tol)


# ---------------------------------------------------------------- QR (Householder, LAPACK's signs)

QR_TOL = {torch.float32: dict(atol=2e-5, rtol=2e-5), torch.float64: dict(atol=1e-12, rtol=1e-12)}
QR_SHAPES = [(1, 1), (3, 3), (5, 3), (3, 5), (8, 8), (2, 4, 3), (2, 3, 3, 6), (0, 3), (3, 0), (2, 0, 0),
             (0, 2, 2)]


def check_same_strides(fn, *args):
    expected = fn(*args)
    actual = fn(*(vk(a) for a in args))
    for x, y in zip(actual, expected):
        assert x.device.type == "vk"
        assert x.shape == y.shape and x.stride() == y.stride(), (x.shape, x.stride(), y.stride())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_modes_shapes(dtype, mode):
    for i, shape in enumerate(QR_SHAPES):
        a = make(shape, dtype, seed=i)
        check(lambda x: torch.linalg.qr(x, mode=mode), a, **QR_TOL[dtype])
        check_same_strides(lambda x: torch.linalg.qr(x, mode=mode), a)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_qr_layouts_out_and_edges(dtype):
    a = make((3, 5, 4), dtype)
    for _, layout in layouts(a):
        check(lambda x: torch.linalg.qr(layout(x)), a, **QR_TOL[dtype])
    check(lambda x: torch.linalg.qr(x.permute(1, 0, 2, 3), mode="complete"), make((4, 3, 5, 2), dtype),
          **QR_TOL[dtype])
    # zero columns (tau = 0), a rank-deficient matrix, negative diagonal
    z = make((4, 3), dtype)
    z[:, 1] = 0
    check(lambda x: torch.linalg.qr(x), z, **QR_TOL[dtype])
    check(lambda x: torch.linalg.qr(x), -torch.eye(3, dtype=dtype), **QR_TOL[dtype])
    q_cpu, r_cpu = torch.linalg.qr(a, mode="complete")
    q, r = vk(torch.empty(0, dtype=dtype)), vk(torch.empty(0, dtype=dtype))
    torch.linalg.qr(vk(a), mode="complete", out=(q, r))
    assert q.stride() == q_cpu.stride() and r.stride() == r_cpu.stride()
    torch.testing.assert_close(q.cpu(), q_cpu, **QR_TOL[dtype])
    torch.testing.assert_close(r.cpu(), r_cpu, **QR_TOL[dtype])
    check(lambda x: torch.qr(x, some=False), a, **QR_TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_geqrf_householder_product_ormqr(dtype):
    for i, shape in enumerate(QR_SHAPES):
        a = make(shape, dtype, seed=i)
        check(torch.geqrf, a, **QR_TOL[dtype])
        check_same_strides(torch.geqrf, a)
        refl, tau = torch.geqrf(a)
        if shape[-2] >= shape[-1]:
            check(torch.linalg.householder_product, refl, tau, **QR_TOL[dtype])
            check(lambda x, t: torch.linalg.householder_product(x, t[..., :max(t.shape[-1] - 1, 0)]),
                  refl, tau, **QR_TOL[dtype])
            check_same_strides(lambda x, t: (torch.linalg.householder_product(x, t),), refl, tau)
    refl, tau = torch.geqrf(make((2, 5, 3), dtype))
    for left in (True, False):
        for transpose in (True, False):
            other = make((2, 5, 4) if left else (2, 4, 5), dtype, seed=7)
            check(lambda x, t, c: torch.ormqr(x, t, c, left=left, transpose=transpose), refl, tau, other,
                  **QR_TOL[dtype])
            check(lambda x, t, c: torch.ormqr(x, t, c.mT, left=left, transpose=transpose), refl, tau,
                  other.mT.contiguous(), **QR_TOL[dtype])
            check_same_strides(lambda x, t, c: (torch.ormqr(x, t, c, left=left, transpose=transpose),),
                               refl, tau, other)


def test_qr_errors():
    a = make((4, 3), torch.float32)
    check(lambda x: torch.linalg.qr(x), make((3,), torch.float32))
    check(lambda x: torch.linalg.qr(x, mode="bad"), a)
    check(lambda x: torch.linalg.qr(x), a.to(torch.int32))
    check(lambda x: torch.linalg.qr(x), a.half())
    check(lambda x: torch.geqrf(x), make((3,), torch.float32))
    check(lambda x: torch.geqrf(x), a.to(torch.int64))
    refl, tau = torch.geqrf(a)
    check(lambda x, t: torch.linalg.householder_product(x, t), refl.mT, tau)
    check(lambda x, t: torch.linalg.householder_product(x, t), refl, tau.double())
    check(lambda x, t: torch.linalg.householder_product(x, t), refl, tau[None])
    check(lambda x, t, c: torch.ormqr(x, t, c), refl, tau, make((3, 3), torch.float32))
    check(lambda x, t, c: torch.ormqr(x, t, c), refl, tau, make((4, 3), torch.float64))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_qr_backward(dtype):
    for shape in ((4, 3), (3, 3), (2, 3, 3)):
        a = make(shape, dtype)

        def loss(x):
            q, r = torch.linalg.qr(x)
            return (q * torch.arange(q.numel(), dtype=dtype, device=q.device).reshape(q.shape)).sum() + r.pow(2).sum()

        x_cpu = a.clone().requires_grad_()
        loss(x_cpu).backward()
        x_vk = vk(a).requires_grad_()
        # linalg_qr_backward solves with R (linalg_solve_triangular): that op belongs to the
        # linalg family and is not native yet; it is the only CPU fallback allowed here.
        previous = torch_vk.fallback_mode()
        torch_vk.set_fallback_mode("silent")
        torch_vk.reset_stats()
        try:
            loss(x_vk).backward()
        finally:
            torch_vk.set_fallback_mode(previous)
        assert set(torch_vk.stats()["fallbacks"]) <= {"aten::linalg_solve_triangular"}
        tol = dict(atol=1e-3, rtol=1e-3) if dtype == torch.float32 else dict(atol=1e-9, rtol=1e-9)
        torch.testing.assert_close(x_vk.grad.cpu(), x_cpu.grad, **tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lowrank(dtype):
    g = torch.Generator().manual_seed(5)
    a = (torch.randn(12, 3, generator=g, dtype=torch.float64) @ torch.randn(3, 8, generator=g, dtype=torch.float64)).to(dtype)
    s_cpu = torch.linalg.svdvals(a)[:3]
    u, s, v = (t.cpu() for t in torch.svd_lowrank(vk(a), q=4))
    scale = a.abs().max().item()
    torch.testing.assert_close(s[:3], s_cpu, atol=VALUE_TOL[dtype]["atol"] * scale * 10, rtol=1e-4)
    assert (u @ torch.diag(s) @ v.mT - a).abs().max().item() <= 1e-4 * scale
    u, s, v = (t.cpu() for t in torch.pca_lowrank(vk(a), q=4))
    s_pca = torch.linalg.svdvals(a - a.mean(-2, keepdim=True))[:3]
    torch.testing.assert_close(s[:3], s_pca, atol=VALUE_TOL[dtype]["atol"] * scale * 10, rtol=1e-4)


def test_large_matrices_many_sweeps():
    # Larger matrices need ~10 sweeps of n - 1 steps: a single dispatch looping over every
    # sweep (or every QR column) lost most of its writes on lavapipe; the launchers now split
    # the loops over dispatches.
    g = torch.Generator().manual_seed(1)
    a = torch.randn(80, 80, generator=g, dtype=torch.float64)
    torch.testing.assert_close(torch.linalg.svdvals(vk(a)).cpu(), torch.linalg.svdvals(a), atol=1e-11, rtol=1e-11)
    s = a[:70, :70] + a[:70, :70].mT
    torch.testing.assert_close(torch.linalg.eigvalsh(vk(s)).cpu(), torch.linalg.eigvalsh(s), atol=1e-11, rtol=1e-11)
    # long loops of the QR and of the completion of a full U
    b = torch.randn(300, 300, generator=g, dtype=torch.float64)
    check(lambda x: torch.linalg.qr(x), b, atol=1e-12, rtol=1e-12)
    c = torch.randn(200, 40, generator=g, dtype=torch.float64)
    u, sv, vh = (t.cpu() for t in torch.linalg.svd(vk(c), full_matrices=True))
    svd_invariants(u, sv, vh, c, torch.float64)
    # NaN input runs every sweep up to the cap and ends with NaN everywhere
    nan = torch.full((48, 48), float("nan"), dtype=torch.float64)
    assert torch.isnan(torch.linalg.svdvals(vk(nan)).cpu()).all()
    assert torch.isnan(torch.linalg.eigvalsh(vk(nan)).cpu()).all()
