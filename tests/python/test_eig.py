"""linalg.eig / linalg.eigvals (general real matrices) against PyTorch's CPU (LAPACK geev).

Eigenvalues are compared with the CPU's as a set (each CPU eigenvalue matched to the nearest
vk one), not by position; eigenvectors are unique only up to a complex factor per column, so
they are checked by the residual A V = V diag(L), by their norm (1) and by the geev convention
(the largest component real), and compared with the CPU's columns after removing the phase,
for simple eigenvalues. Tolerances follow the backward error of the algorithm: a residual of
a few n * eps * ||A||, eigenvalue differences up to that times a moderate condition number.
"""
import math

import pytest
import torch

import torch_vk
from helpers import layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

DTYPES = [torch.float32, torch.float64]
EPS = {torch.float32: torch.finfo(torch.float32).eps, torch.float64: torch.finfo(torch.float64).eps}


def vk(x):
    return x.to("vk")


def scale_of(a):
    return max(torch.linalg.matrix_norm(a.double()).max().item(), 1e-300) if a.numel() else 1.0


def match_values(w, w_cpu, atol):
    """Greedy nearest matching of each CPU eigenvalue to an unused vk eigenvalue; returns the
    permutation p with w[p] ~ w_cpu (per matrix of the batch)."""
    perms = []
    for wb, cb in zip(w.reshape(-1, w.shape[-1]), w_cpu.reshape(-1, w.shape[-1])):
        used, perm = set(), []
        for c in cb.tolist():
            best = min((j for j in range(len(wb)) if j not in used), key=lambda j: abs(complex(wb[j]) - c))
            assert abs(complex(wb[best]) - c) <= atol, (wb, cb)
            used.add(best)
            perm.append(best)
        perms.append(perm)
    return torch.tensor(perms).reshape(w.shape)


def check_vectors(a, w, v, tol_scale):
    """A V = V diag(w), unit columns, largest component real (geev's normalization)."""
    if a.numel() == 0:
        return
    ac = a.to(v.dtype)
    resid = ac @ v - v * w.unsqueeze(-2)
    assert resid.abs().max().item() <= tol_scale, resid.abs().max().item()
    norms = torch.linalg.vector_norm(v, dim=-2)
    torch.testing.assert_close(norms, torch.ones_like(norms), atol=50 * EPS[a.dtype] * a.shape[-1], rtol=0)
    # Some component of largest modulus (ties within rounding: any of them) is real.
    mod = v.abs()
    top = mod >= mod.amax(-2, keepdim=True) * (1 - 100 * EPS[a.dtype])
    assert ((v.imag == 0) & top).any(-2).all()
    # Real eigenvalues have real vectors; a conjugate pair has conjugate vectors.
    real = w.imag == 0
    assert (v.imag.abs().amax(-2)[real] == 0).all()


def simple(w, atol):
    """Mask of eigenvalues at distance > atol from every other one."""
    d = (w.unsqueeze(-1) - w.unsqueeze(-2)).abs()
    d = d + torch.eye(w.shape[-1]) * (10 * atol + 1)
    return d.amin(-1) > atol


def check_eig(a, layout=lambda x: x, sep=None, compare_vectors=True):
    dtype = a.dtype
    n = a.shape[-1]
    w_cpu, v_cpu = torch.linalg.eig(layout(a))
    w, v = torch.linalg.eig(layout(vk(a)))
    assert w.device.type == "vk" and v.device.type == "vk"
    assert (w.dtype, v.dtype) == (w_cpu.dtype, v_cpu.dtype)
    assert w.shape == w_cpu.shape and v.shape == v_cpu.shape
    assert w.stride() == w_cpu.stride() and v.stride() == v_cpu.stride()
    w, v = w.cpu(), v.cpu()
    if a.numel() == 0:
        return w, v
    a = layout(a)
    s = scale_of(a)
    resid_tol = 20 * max(n, 1) * EPS[dtype] * s
    value_tol = 200 * max(n, 1) * EPS[dtype] * s if sep is None else sep
    perm = match_values(w, w_cpu, value_tol)
    check_vectors(a, w, v, resid_tol)
    if compare_vectors:
        # Simple eigenvalues: the vk column times a unit phase equals the CPU's column.
        wm = w.gather(-1, perm)
        vm = v.gather(-1, perm.unsqueeze(-2).expand(v.shape))
        mask = simple(w_cpu, 1e3 * value_tol)
        inner = (vm.conj() * v_cpu).sum(-2, keepdim=True)
        phase = inner / inner.abs().clamp_min(1e-300)
        aligned = vm * phase
        diff = (aligned - v_cpu).abs().amax(-2)
        gap = (w_cpu.unsqueeze(-1) - w_cpu.unsqueeze(-2)).abs().double()
        gap.diagonal(0, -2, -1).fill_(math.inf)
        # The vector's error grows like 1 / (distance to the nearest other eigenvalue).
        bound = 1e3 * max(n, 1) * EPS[dtype] * s / gap.amin(-1)
        assert (diff[mask] <= bound[mask] + 1e3 * EPS[dtype]).all(), (diff, bound)
        assert torch.equal(wm.imag == 0, w_cpu.imag == 0)
    return w, v


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_shapes(dtype):
    for i, shape in enumerate([(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (8, 8), (13, 13), (2, 3, 4, 4),
                               (0, 0), (2, 0, 0), (0, 3, 3), (3, 1, 1)]):
        check_eig(make(shape, dtype, seed=i))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_layouts(dtype):
    a = make((3, 5, 5), dtype, seed=3)
    for _, layout in layouts(a):
        check_eig(a, layout)
    # batch dims that do not collapse to one stride, and a transposed matrix
    check_eig(make((4, 3, 5, 5), dtype, seed=4), lambda x: x.permute(1, 0, 2, 3))
    check_eig(make((6, 6), dtype, seed=5), lambda x: x.mT)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_order_follows_lapack(dtype):
    # Triangular (and diagonal) matrices need no iteration: the eigenvalues come in the order
    # LAPACK's balancing and Schur form give them, which vk reproduces.
    for i, a in enumerate([make((6, 6), dtype, seed=7).triu(), make((6, 6), dtype, seed=8).tril(),
                           torch.diag(torch.tensor([3.0, -1.0, 2.0, 0.5], dtype=dtype))]):
        w_cpu = torch.linalg.eigvals(a)
        torch.testing.assert_close(torch.linalg.eigvals(vk(a)).cpu(), w_cpu, atol=0, rtol=0)
        check_eig(a)
    # A large lower triangular matrix: its eigenvalues are exponentially ill-conditioned for
    # anything but balancing's permutations (one isolated row per scan, ~n^2 / 2 steps), which
    # isolate them all, exactly and in LAPACK's order.
    a = make((100, 100), dtype, seed=9).tril()
    torch.testing.assert_close(torch.linalg.eigvals(vk(a)).cpu(), torch.linalg.eigvals(a), atol=0, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_complex_pairs(dtype):
    rot = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=dtype)
    w, v = check_eig(rot)
    assert (w.real == 0).all() and torch.equal(w, w.conj().flip(-1))
    # a pair with positive imaginary part first, as LAPACK's
    assert w[0].imag > 0
    blocks = torch.block_diag(torch.tensor([[1.0, -2.0], [3.0, 1.0]]), torch.tensor([[0.5]]),
                              torch.tensor([[-1.0, 4.0], [-0.25, 2.0]])).to(dtype)
    q = torch.linalg.qr(make((5, 5), torch.float64, seed=9))[0].to(dtype)
    check_eig(q @ blocks @ q.mT)
    # a random matrix with several pairs
    check_eig(make((9, 9), dtype, seed=10))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_repeated_and_defective(dtype):
    eye = torch.eye(4, dtype=dtype)
    check_eig(eye, compare_vectors=False)
    check_eig(2.5 * eye, compare_vectors=False)
    check_eig(torch.diag(torch.tensor([1.0, 2.0, 1.0, 2.0], dtype=dtype)), compare_vectors=False)
    check_eig(torch.zeros(3, 3, dtype=dtype), compare_vectors=False)
    # Jordan blocks: defective (one eigenvector direction); LAPACK perturbs the singular
    # pivots and returns nearly parallel unit vectors. A defective eigenvalue is sensitive
    # (perturbation ~ (eps * ||A||)^(1/k) for a k x k block): compare loosely, vectors by
    # their residual only.
    jordan = torch.tensor([[2.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 2.0]], dtype=dtype)
    w, v = check_eig(jordan, compare_vectors=False)
    w_cpu, v_cpu = torch.linalg.eig(jordan)
    torch.testing.assert_close(v.abs(), v_cpu.abs(), atol=100 * EPS[dtype], rtol=0)
    q = torch.linalg.qr(make((3, 3), torch.float64, seed=11))[0].to(dtype)
    check_eig(q @ jordan @ q.mT, sep=10 * EPS[dtype] ** (1 / 3) * 4, compare_vectors=False)
    nearly = torch.tensor([[1.0, 1.0], [1e-10 if dtype == torch.float64 else 1e-6, 1.0]], dtype=dtype)
    check_eig(nearly, sep=1e-3 * (1e-10 if dtype == torch.float64 else 1e-6) ** 0.5, compare_vectors=False)
    # a repeated complex pair (2x2 rotation blocks twice)
    rot2 = torch.block_diag(torch.tensor([[0.0, -1.0], [1.0, 0.0]]), torch.tensor([[0.0, -1.0], [1.0, 0.0]])).to(dtype)
    check_eig(rot2, compare_vectors=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_hard_cases(dtype):
    # A cyclic permutation (all eigenvalues on the unit circle): the standard shifts stall,
    # the exceptional shifts break the cycle.
    cyc = torch.roll(torch.eye(6, dtype=dtype), 1, 0)
    check_eig(cyc)
    # Badly scaled (balancing matters): D A D^-1.
    d = torch.tensor([1.0, 1e3, 1e-3, 10.0], dtype=torch.float64)
    a = (torch.diag(d) @ make((4, 4), torch.float64, seed=12) @ torch.diag(1 / d)).to(dtype)
    w, _ = check_eig(a, sep=1e3 * EPS[dtype] * 4 * 10)
    # Zero rows / columns (eigenvalues isolated by balancing's permutations).
    b = make((5, 5), dtype, seed=13)
    b[2, :] = 0
    b[:, 4] = 0
    b[2, 2] = 1.5
    check_eig(b)
    # Companion matrix of a polynomial with known roots 1..5.
    roots = torch.arange(1.0, 6.0, dtype=torch.float64)
    coeffs = torch.tensor([1.0])
    for r in roots.tolist():
        coeffs = torch.cat([coeffs, torch.zeros(1)]) - r * torch.cat([torch.zeros(1), coeffs])
    comp = torch.zeros(5, 5, dtype=torch.float64)
    comp[0, :] = -coeffs[1:]
    comp[1:, :-1] = torch.eye(4, dtype=torch.float64)
    check_eig(comp.to(dtype), sep=1e4 * EPS[dtype] * 200)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_larger(dtype):
    # Several Hessenberg, Z, QR and eigenvector dispatches per matrix; n = 150 runs past the
    # 65535 loop iterations per invocation after which lavapipe's compiler cuts loops short,
    # had the work not been split into bounded dispatches. (For n >= 75 LAPACK's QR is the
    # multishift laqr0, whose eigenvalue order differs: values are compared as a set.)
    check_eig(make((40, 40), dtype, seed=14))
    check_eig(make((2, 27, 27), dtype, seed=15))
    check_eig(make((150, 150), dtype, seed=16))


def test_eig_beyond_kernel_order_falls_back():
    # Orders above the kernel's limit (512) take the counted CPU fallback.
    a = make((513, 513), torch.float32, seed=17)
    with pytest.raises(NotImplementedError, match="linalg_eig"):
        torch.linalg.eigvals(vk(a))
    previous = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("silent")
    try:
        w = torch.linalg.eigvals(vk(a))
        assert w.device.type == "vk"
        torch.testing.assert_close(w.cpu(), torch.linalg.eigvals(a))
    finally:
        torch_vk.set_fallback_mode(previous)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigvals(dtype):
    for i, shape in enumerate([(1, 1), (4, 4), (7, 7), (2, 3, 5, 5), (0, 0), (0, 4, 4), (20, 20)]):
        a = make(shape, dtype, seed=20 + i)
        w_cpu = torch.linalg.eigvals(a)
        w = torch.linalg.eigvals(vk(a))
        assert w.device.type == "vk" and w.dtype == w_cpu.dtype and w.shape == w_cpu.shape
        assert w.stride() == w_cpu.stride()
        if a.numel():
            match_values(w.cpu(), w_cpu, 200 * a.shape[-1] * EPS[dtype] * scale_of(a))
    # eigvals without vectors agree with eig's values
    a = make((6, 6), dtype, seed=30)
    w1 = torch.linalg.eigvals(vk(a)).cpu()
    w2 = torch.linalg.eig(vk(a))[0].cpu()
    match_values(w1, w2, 200 * 6 * EPS[dtype] * scale_of(a))


def test_eig_out():
    a = make((2, 3, 3), torch.float32, seed=31)
    cases = [
        lambda d: (torch.empty(0, dtype=torch.complex64, device=d), torch.empty(0, dtype=torch.complex64, device=d)),
        lambda d: (torch.empty(2, 3, dtype=torch.complex64, device=d), torch.empty(2, 3, 3, dtype=torch.complex64, device=d)),
        lambda d: (torch.empty(2, 3, dtype=torch.complex64, device=d), torch.empty(2, 3, 3, dtype=torch.complex64, device=d).mT),
        lambda d: (torch.empty(0, dtype=torch.complex128, device=d), torch.empty(0, dtype=torch.complex128, device=d)),
        lambda d: (torch.empty(2, 6, dtype=torch.complex64, device=d)[:, ::2], torch.empty(0, dtype=torch.complex64, device=d)),
    ]
    for make_out in cases:
        results = {}
        for dev in ("cpu", "vk"):
            v, w = make_out(dev)
            pv, pw = v.data_ptr(), w.data_ptr()
            rv, rw = torch.linalg.eig(a.to(dev), out=(v, w))
            assert rv is v and rw is w
            results[dev] = (v.shape, v.stride(), v.dtype, pv == v.data_ptr(), w.shape, w.stride(), w.dtype,
                            pw == w.data_ptr())
            if dev == "vk":
                w_cpu = torch.linalg.eig(a)[0]
                match_values(v.cpu(), w_cpu, 1e-4)
                check_vectors(a, v.cpu().to(torch.complex64), w.cpu().to(torch.complex64), 1e-4)
        # data_ptr identity only where the CPU keeps its buffer
        assert results["vk"][:3] == results["cpu"][:3] and results["vk"][4:7] == results["cpu"][4:7]
    # eigvals out=
    for make_out in (lambda d: torch.empty(0, dtype=torch.complex64, device=d),
                     lambda d: torch.empty(2, 6, dtype=torch.complex64, device=d)[:, ::2],
                     lambda d: torch.empty(0, dtype=torch.complex128, device=d)):
        out_cpu, out_vk = make_out("cpu"), make_out("vk")
        torch.linalg.eigvals(a, out=out_cpu)
        r = torch.linalg.eigvals(vk(a), out=out_vk)
        assert r is out_vk and out_vk.stride() == out_cpu.stride() and out_vk.dtype == out_cpu.dtype
        match_values(out_vk.cpu(), out_cpu, 1e-4)


def same_error(fn, *args, **kwargs):
    with pytest.raises(Exception) as cpu_error:
        fn(*args, **kwargs)
    vk_args = [vk(x) if isinstance(x, torch.Tensor) else x for x in args]
    vk_kwargs = {k: (tuple(vk(t) for t in v) if isinstance(v, tuple) else vk(v) if isinstance(v, torch.Tensor) else v)
                 for k, v in kwargs.items()}
    with pytest.raises(type(cpu_error.value)) as vk_error:
        fn(*vk_args, **vk_kwargs)
    return str(cpu_error.value), str(vk_error.value)


def test_eig_errors():
    nan = float("nan")
    for fn in (torch.linalg.eig, torch.linalg.eigvals):
        # not square, too few dims, integer dtypes: the CPU's type and message
        for a in (torch.randn(2, 3), torch.randn(3), torch.ones(3, 3, dtype=torch.int64),
                  torch.ones(2, 3, dtype=torch.int32), torch.ones(3, 3, dtype=torch.bool)):
            cpu_msg, vk_msg = same_error(fn, a)
            assert vk_msg == cpu_msg
        # float16 / bfloat16: NotImplementedError on both
        for t in (torch.float16, torch.bfloat16):
            cpu_msg, vk_msg = same_error(fn, torch.ones(3, 3, dtype=t))
            assert vk_msg.split('"')[2] == cpu_msg.split('"')[2]  # " not implemented for 'Half'"
    # linalg.eig rejects Inf / NaN first (also before the shape check), as the CPU
    for a in (torch.tensor([[1.0, nan], [0.0, 1.0]]), torch.full((2, 3), nan),
              torch.tensor([[1.0, float("inf")], [0.0, 1.0]], dtype=torch.float64).expand(3, 2, 2)):
        cpu_msg, vk_msg = same_error(torch.linalg.eig, a)
        assert vk_msg == cpu_msg
    # out= dtypes that cannot hold the result
    a = torch.randn(3, 3)
    cpu_msg, vk_msg = same_error(torch.linalg.eig, a, out=(torch.empty(0), torch.empty(0, dtype=torch.complex64)))
    assert vk_msg == cpu_msg
    cpu_msg, vk_msg = same_error(torch.linalg.eig, a, out=(torch.empty(0, dtype=torch.complex64), torch.empty(0)))
    assert vk_msg == cpu_msg
    cpu_msg, vk_msg = same_error(torch.linalg.eigvals, a, out=torch.empty(0, dtype=torch.int64))
    assert vk_msg == cpu_msg


def test_eigvals_non_finite():
    # The CPU's eigvals does not check (LAPACK's result for Inf / NaN input is undefined);
    # vk's eigenvalues of such a matrix are NaN, and the other matrices of the batch are fine.
    a = make((3, 4, 4), torch.float32, seed=40)
    a[1, 2, 3] = float("inf")
    w = torch.linalg.eigvals(vk(a)).cpu()
    assert torch.isnan(w[1].real).all() and torch.isnan(w[1].imag).all()
    for b in (0, 2):
        match_values(w[b:b + 1], torch.linalg.eigvals(a[b:b + 1]), 1e-4)


def test_eig_no_convergence(monkeypatch):
    # With an iteration cap of 1 per eigenvalue a general matrix cannot converge: the error is
    # the CPU's LinAlgError for LAPACK's info > 0 (format from torch._linalg_check_errors).
    monkeypatch.setenv("TORCH_VK_EIG_MAX_ITERATIONS", "1")
    a = make((6, 6), torch.float32, seed=41)
    with pytest.raises(torch.linalg.LinAlgError) as err:
        torch.linalg.eig(vk(a))
    msg = str(err.value)
    code = int(msg.rsplit("error code: ", 1)[1].rstrip(")."))
    assert 1 <= code <= 6
    with pytest.raises(torch.linalg.LinAlgError) as expected:
        torch._linalg_check_errors(torch.tensor([code], dtype=torch.int32), "torch.linalg.eig", is_matrix=True)
    assert msg == str(expected.value)
    # batched: the first failing matrix is named; eigvals has its own name
    batch = torch.stack([torch.eye(6), a, a])
    with pytest.raises(torch.linalg.LinAlgError) as err:
        torch.linalg.eigvals(vk(batch))
    assert str(err.value).startswith("torch.linalg.eigvals: (Batch element 1): The algorithm failed to converge")
    monkeypatch.delenv("TORCH_VK_EIG_MAX_ITERATIONS")
    check_eig(a)


def test_eig_one_host_read():
    a = vk(make((2, 6, 6), torch.float32, seed=42))
    torch.vk.synchronize()
    before = torch_vk.stats()["host_waits"]
    torch.linalg.eig(a)
    assert torch_vk.stats()["host_waits"] - before == 1


def test_eig_complex_input_falls_back():
    a = torch.randn(3, 3, dtype=torch.complex64)
    with pytest.raises(NotImplementedError, match="linalg_eig"):
        torch.linalg.eig(vk(a))
    previous = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("silent")
    try:
        counts = torch_vk.stats()["fallbacks"].get("aten::linalg_eig", 0)
        w, v = torch.linalg.eig(vk(a))
        assert w.device.type == "vk"
        torch.testing.assert_close(w.cpu(), torch.linalg.eig(a)[0])
        assert torch_vk.stats()["fallbacks"]["aten::linalg_eig"] == counts + 1
    finally:
        torch_vk.set_fallback_mode(previous)


# PyTorch's linalg_eig_backward ends with linalg.solve(V^H, ...) on complex matrices, and the
# vk LU family (ops_linalg.cpp) is real-only: it raises NotImplementedError for complex input
# (also outside strict mode). Strict xfail: this test turns into a failure once that exists.
@pytest.mark.xfail(strict=True, raises=NotImplementedError,
                   reason="complex linalg.solve (LU) is not native on vk")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_backward(dtype):
    # Gradients of a phase-invariant loss (|V|, L) through PyTorch's linalg_eig_backward.
    x_cpu = make((2, 4, 4), dtype, seed=43).requires_grad_()
    x_vk = vk(x_cpu.detach()).requires_grad_()

    def loss(x):
        w, v = torch.linalg.eig(x)
        return (w.real ** 2).sum() + w.imag.abs().sum() + v.abs().sum()

    loss(x_cpu).backward()
    loss(x_vk).backward()
    tol = 1e-3 if dtype == torch.float32 else 1e-9
    torch.testing.assert_close(x_vk.grad.cpu(), x_cpu.grad, atol=tol, rtol=tol)
    # eigvals' gradient (through linalg_eig when the input requires grad)
    g_cpu, = torch.autograd.grad(torch.linalg.eigvals(x_cpu).real.sum(), x_cpu)
    g_vk, = torch.autograd.grad(torch.linalg.eigvals(x_vk).real.sum(), x_vk)
    torch.testing.assert_close(g_vk.cpu(), g_cpu, atol=tol, rtol=tol)
