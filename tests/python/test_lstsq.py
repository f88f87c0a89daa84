"""torch.linalg.lstsq on vk against PyTorch's CPU: every driver, tall / square / wide (minimum
norm) problems, batching and broadcasting of A and B, vector-like B, rank-deficient inputs and
rcond, empty matrices, out=, bad input, and gradients through the solution."""
import pytest
import torch

from helpers import check, make

pytestmark = pytest.mark.usefixtures("strict_native")

DRIVERS = [None, "gels", "gelsy", "gelsd", "gelss"]
TOL = {torch.float32: dict(atol=2e-4, rtol=2e-4), torch.float64: dict(atol=1e-10, rtol=1e-10)}


def lstsq(driver, rcond=None):
    def fn(a, b):
        return tuple(torch.linalg.lstsq(a, b, rcond=rcond, driver=driver))
    return fn


def full_rank(shape, dtype, seed):
    a = make(shape, dtype, seed=seed)
    m, n = shape[-2:]
    k = min(m, n)
    # Keep the problem well conditioned: add a dominant diagonal.
    eye = torch.eye(m, n, dtype=torch.float64).to(dtype) * 4
    return a + eye


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("m,n,k", [(6, 4, 2), (4, 4, 3), (3, 5, 2), (5, 1, 1)])
def test_drivers_shapes(driver, m, n, k, dtype):
    a = full_rank((m, n), dtype, seed=1)
    b = make((m, k), dtype, seed=2)
    check(lstsq(driver), a, b, **TOL[dtype])


@pytest.mark.parametrize("driver", DRIVERS)
def test_batching_broadcasting_vectors(driver):
    dt = torch.float64
    tol = TOL[dt]
    check(lstsq(driver), full_rank((2, 5, 3), dt, 3), make((2, 5, 2), dt, seed=4), **tol)
    check(lstsq(driver), full_rank((1, 5, 3), dt, 3), make((3, 5, 2), dt, seed=4), **tol)   # A broadcast
    check(lstsq(driver), full_rank((3, 5, 3), dt, 3), make((1, 5, 2), dt, seed=4), **tol)   # B broadcast
    check(lstsq(driver), full_rank((2, 1, 3, 5), dt, 3), make((2, 4, 3, 2), dt, seed=4), **tol)
    check(lstsq(driver), full_rank((5, 3), dt, 3), make((5,), dt, seed=5), **tol)           # b: (m,)
    check(lstsq(driver), full_rank((2, 5, 3), dt, 3), make((2, 5), dt, seed=5), **tol)      # b: A.shape[:-1]
    check(lstsq(driver), full_rank((2, 3, 5), dt, 3), make((2, 3), dt, seed=5), **tol)
    # Non-contiguous inputs.
    check(lambda a, b: lstsq(driver)(a.mT, b[..., ::2]), full_rank((2, 3, 5), dt, 6),
          make((2, 5, 4), dt, seed=7), **tol)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss", None])
def test_rank_deficient_and_rcond(driver):
    dt = torch.float64
    u = make((6, 2), dt, seed=8)
    v = make((2, 4), dt, seed=9)
    a = u @ v  # rank 2
    b = make((6, 3), dt, seed=10)
    check(lstsq(driver), a, b, **TOL[dt])
    check(lstsq(driver), a.mT.contiguous(), make((4, 3), dt, seed=11), **TOL[dt])
    # rcond that drops a well separated small singular value.
    s = torch.diag(torch.tensor([10.0, 5.0, 1e-3], dtype=dt))
    q1 = torch.linalg.qr(make((5, 3), dt, seed=12)).Q
    q2 = torch.linalg.qr(make((3, 3), dt, seed=13)).Q
    a2 = q1 @ s @ q2.mT
    b2 = make((5, 2), dt, seed=14)
    if driver in ("gelsd", "gelss"):
        check(lstsq(driver, rcond=1e-2), a2, b2, **TOL[dt])
    check(lstsq(driver, rcond=1e-5), a2, b2, **TOL[dt])
    check(lstsq(driver), torch.zeros(4, 3, dtype=dt), b2[:4], **TOL[dt])  # rank 0
    # Batched with one rank-deficient matrix: gelsd / gelss then return no residuals.
    check(lstsq(driver), torch.stack([full_rank((6, 4), dt, 15), a]), make((2, 6, 2), dt, seed=16), **TOL[dt])


@pytest.mark.parametrize("driver", ["gelsy", None])
@pytest.mark.xfail(strict=True, reason="vk's gelsy truncates the SVD; LAPACK's gelsy truncates a "
                   "column-pivoted QR, whose solution differs when dropped singular values are not tiny")
def test_gelsy_truncation_matches_lapack(driver):
    dt = torch.float64
    s = torch.diag(torch.tensor([10.0, 5.0, 1e-3], dtype=dt))
    q1 = torch.linalg.qr(make((5, 3), dt, seed=12)).Q
    q2 = torch.linalg.qr(make((3, 3), dt, seed=13)).Q
    check(lstsq(driver, rcond=1e-2), q1 @ s @ q2.mT, make((5, 2), dt, seed=14), **TOL[dt])


@pytest.mark.parametrize("driver", DRIVERS)
def test_empty(driver):
    dt = torch.float32
    check(lstsq(driver), make((0, 3), dt), make((0, 2), dt))
    check(lstsq(driver), make((3, 0), dt), make((3, 2), dt))
    if driver in (None, "gels", "gelsy"):  # the CPU's gelsd / gelss reject k = 0 (an MKL error)
        check(lstsq(driver), make((4, 3), dt), make((4, 0), dt))
        check(lstsq(driver), make((3, 4), dt), make((3, 0), dt))
    check(lstsq(driver), make((0, 4, 3), dt), make((0, 4, 2), dt))


def test_out_variant():
    dt = torch.float64
    a, b = full_rank((5, 3), dt, 17), make((5, 2), dt, seed=18)

    def with_out(x, y, driver):
        outs = (torch.empty(0, dtype=dt, device=x.device), torch.empty(0, dtype=dt, device=x.device),
                torch.empty(0, dtype=torch.int64, device=x.device), torch.empty(0, dtype=dt, device=x.device))
        r = torch.linalg.lstsq(x, y, driver=driver, out=outs)
        return tuple(r)

    def given_outs(x, y, driver, vector=False):
        # The out tensors themselves: fresh ones become LAPACK's (max(m, n), k) buffer on CPU.
        outs = (torch.empty(0, dtype=dt, device=x.device), torch.empty(0, dtype=dt, device=x.device),
                torch.empty(0, dtype=torch.int64, device=x.device), torch.empty(0, dtype=dt, device=x.device))
        torch.linalg.lstsq(x, y[..., 0] if vector else y, driver=driver, out=outs)
        return tuple(o[:3] if i == 0 else o for i, o in enumerate(outs))  # rows n: are LAPACK's scratch

    for driver in DRIVERS:
        check(lambda x, y: with_out(x, y, driver), a, b, **TOL[dt])
        check(lambda x, y: given_outs(x, y, driver), a, b, **TOL[dt])
        check(lambda x, y: given_outs(x, y, driver, vector=True), a, b, **TOL[dt])

    def wrong_shape_out(x, y):
        outs = (torch.empty(7, dtype=dt, device=x.device), torch.empty(1, dtype=dt, device=x.device),
                torch.empty(3, dtype=torch.int64, device=x.device), torch.empty(2, dtype=dt, device=x.device))
        torch.linalg.lstsq(x, y, driver="gelsd", out=outs)
        return outs

    check(wrong_shape_out, a, b, **TOL[dt])


def test_bad_inputs():
    f = torch.float32
    check(lstsq(None), make((4,), f), make((4,), f))                     # input 1-D
    check(lstsq(None), make((4, 3), f), make((), f))                     # other 0-D
    check(lstsq(None), make((4, 3), f), make((4, 2), torch.float64))     # dtypes differ
    check(lstsq(None), make((4, 3), f), make((5, 2), f))                 # rows differ
    check(lstsq(None), make((4, 3), f), make((5,), f))                   # vector rows differ
    check(lstsq(None), make((4, 3), f), make((2, 2, 4, 2), f))           # other has more dims
    check(lstsq("foo"), make((4, 3), f), make((4, 2), f))                # unknown driver
    check(lstsq(None), make((4, 3), torch.int64), make((4, 2), torch.int64))
    check(lstsq(None), make((4, 3), torch.float16), make((4, 2), torch.float16))
    check(lambda a, b: torch.linalg.lstsq(a, b, out=(torch.empty(0, dtype=torch.int32, device=a.device),) * 4),
          make((4, 3), f), make((4, 2), f))


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("m,n", [(5, 3), (3, 3), (3, 5)])
def test_gradients(driver, m, n):
    dt = torch.float64
    a = full_rank((2, m, n), dt, 19)
    b = make((2, m, 2), dt, seed=20)
    w = make((2, n, 2), dt, seed=21)

    def grads(x, y, g):
        x = x.clone().requires_grad_()
        y = y.clone().requires_grad_()
        sol = torch.linalg.lstsq(x, y, driver=driver).solution
        (sol * g).sum().backward()
        return x.grad, y.grad

    check(grads, a, b, w, atol=1e-9, rtol=1e-9)
