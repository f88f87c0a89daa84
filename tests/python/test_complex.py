"""Complex tensors on vk against PyTorch's CPU: storage (factories, copies both ways, casts),
views (view_as_real / view_as_complex, real / imag, conj / neg bits), fill, item, and the
element-wise / reduction ops taught about complex (composites over the real views). Ops not
taught about complex must raise, never compute garbage."""
import warnings

import pytest
import torch

import torch_vk
from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

CTYPES = [torch.complex64, torch.complex128]


def cmake(shape, ctype, seed=0):
    real = torch.float32 if ctype == torch.complex64 else torch.float64
    return torch.complex(make(shape, real, seed=seed), make(shape, real, seed=seed + 7))


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_factories_and_round_trip(ctype):
    for shape in ((), (0,), (3,), (2, 3, 4)):
        e = torch.empty(shape, dtype=ctype, device="vk")
        assert e.dtype == ctype and e.shape == shape
        z = torch.zeros(shape, dtype=ctype, device="vk")
        torch.testing.assert_close(z.cpu(), torch.zeros(shape, dtype=ctype))
        x = cmake(shape, ctype)
        torch.testing.assert_close(x.to("vk").cpu(), x, rtol=0, atol=0)
    s = torch.empty_strided((2, 3), (1, 2), dtype=ctype, device="vk")
    assert s.stride() == (1, 2)
    r = torch.empty(2, dtype=ctype, device="vk")
    r.resize_(5)
    assert r.shape == (5,)
    f = torch.full((2, 2), 1.5 - 2j, dtype=ctype, device="vk")
    torch.testing.assert_close(f.cpu(), torch.full((2, 2), 1.5 - 2j, dtype=ctype))
    x = cmake((3,), ctype)
    assert x.to("vk")[1].item() == x[1].item()
    assert x.to("vk").conj()[1].item() == x.conj()[1].item()


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_copies_layouts_and_casts(ctype):
    x = cmake((4, 5), ctype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).contiguous(), x, atol=0, rtol=0)
        check(lambda a: layout(a).clone(), x, atol=0, rtol=0)
    check(lambda a: a.t().contiguous(), x, atol=0, rtol=0)
    check(lambda a: a.to(torch.complex64 if ctype == torch.complex128 else torch.complex128), x)
    # real -> complex: imaginary part 0
    check(lambda a: a.to(ctype), make((3, 4), torch.float32))
    check(lambda a: a.to(ctype), make((3, 4), torch.int64))
    dst = torch.zeros(3, 4, dtype=ctype)
    check(lambda d, s: d.copy_(s), dst, make((4,), torch.float64))  # broadcast
    # complex -> real discards the imaginary part, with PyTorch's warning
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        check(lambda a: a.to(torch.float32), x)
    # vk -> CPU into a strided destination
    out = torch.zeros(5, 4, dtype=ctype).t()
    out.copy_(x.to("vk"))
    torch.testing.assert_close(out, x, atol=0, rtol=0)


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_views_and_math_bits(ctype):
    x = cmake((3, 4), ctype)
    check(lambda a: torch.view_as_real(a), x, atol=0, rtol=0)
    check(lambda a: torch.view_as_complex(torch.view_as_real(a).contiguous()), x, atol=0, rtol=0)
    check(lambda a: a.real, x, atol=0, rtol=0)
    check(lambda a: a.imag, x, atol=0, rtol=0)
    check(lambda a: a.conj(), x, atol=0, rtol=0)
    check(lambda a: a.conj().resolve_conj(), x, atol=0, rtol=0)
    check(lambda a: a.conj().imag, x, atol=0, rtol=0)
    check(lambda a: torch.conj_physical(a), x, atol=0, rtol=0)
    check(lambda a: a.clone().conj_physical_(), x, atol=0, rtol=0)
    check(lambda a: a._neg_view().resolve_neg(), x, atol=0, rtol=0)
    check(lambda a: a.conj().clone(), x, atol=0, rtol=0)
    # view_as_complex rejects what the CPU rejects
    check(lambda a: torch.view_as_complex(a), make((3, 3), torch.float32))     # last dim != 2
    check(lambda a: torch.view_as_complex(a.t()), make((2, 3), torch.float32))  # stride != 1
    check(lambda a: torch.view_as_real(a.conj()), x)  # unresolved conj
    # writes through real / imag views land in the complex tensor
    v = x.to("vk")
    v.real.fill_(2.0)
    v.imag.mul_(3.0)
    e = x.clone()
    e.real.fill_(2.0)
    e.imag.mul_(3.0)
    torch.testing.assert_close(v.cpu(), e)
    check(lambda a: a.zero_(), x.clone())
    check(lambda a: a.fill_(0.5 + 0.25j), x.clone())
    check(lambda a: a.conj().fill_(0.5 + 0.25j), x.clone())


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_elementwise(ctype):
    x, y = cmake((3, 4), ctype), cmake((3, 4), ctype, seed=3)
    r = make((4,), torch.float32)
    for fn in (torch.add, torch.sub, torch.mul, torch.div):
        check(fn, x, y)
        check(fn, x, r)                                # complex x real, broadcast
        check(lambda a: fn(a, 2.5), x)                 # real scalar
        check(lambda a: fn(a, 1 - 2j), x)              # complex scalar
        check(lambda a, b: fn(a.conj(), b), x, y)      # conj bit
    check(lambda a, b: torch.add(a, b, alpha=2), x, y)
    check(lambda a, b: a.add_(b), x.clone(), y)
    check(lambda a, b: a.mul_(b), x.clone(), y)
    check(lambda a: a.mul_(0.5), x.clone())
    check(torch.neg, x)
    check(torch.abs, x)
    check(torch.isnan, x)
    check(lambda a, b: torch.eq(a, b), x, y)
    check(lambda a: torch.eq(a, a.clone()), x)
    check(lambda a, b: torch.ne(a, b), x, y)
    check(torch.complex, make((3, 4), x.real.dtype), make((4,), x.real.dtype))
    check(torch.polar, make((3, 4), x.real.dtype, low=0), make((3, 4), x.real.dtype))
    check(lambda a, b: torch.complex(a, b), make((2,), torch.float32), make((2,), torch.float64))
    nan = torch.tensor([complex(float("nan"), 1), 1 + 1j, complex(0, float("nan"))], dtype=ctype)
    check(torch.isnan, nan)
    check(lambda a: a / torch.tensor([0j, 1e30 + 1e-30j, 1e-30 + 1e30j], dtype=ctype), nan)


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_reductions_and_shape_ops(ctype):
    x = cmake((3, 4, 5), ctype)
    tol = dict(atol=1e-5, rtol=1e-5)
    check(torch.sum, x, **tol)
    check(lambda a: a.sum(1), x, **tol)
    check(lambda a: a.sum((0, 2), keepdim=True), x, **tol)
    check(lambda a: a.mean(-1), x, **tol)
    check(lambda a: a.mean(), x, **tol)
    check(lambda a: torch.cat([a, a.conj()], 1), x, atol=0, rtol=0)
    check(lambda a: torch.stack([a, a], 0), x, atol=0, rtol=0)
    check(lambda a: a[1:, ::2, 3], x, atol=0, rtol=0)
    check(lambda a: a.select(2, 1).narrow(0, 1, 2), x, atol=0, rtol=0)
    check(lambda a: a.roll(2, 1), x, atol=0, rtol=0)
    check(lambda a: a.reshape(12, 5).t().reshape(-1), x, atol=0, rtol=0)


def test_unsupported_complex_op_raises_never_garbage():
    v = cmake((4,), torch.complex64).to("vk")
    for fn in (lambda a: torch.logcumsumexp(a, 0), torch.special.i0e):
        with pytest.raises((TypeError, NotImplementedError, RuntimeError)):
            fn(v)


def test_visible_fallback_for_unsupported_op():
    v = cmake((4,), torch.complex64).to("vk")
    previous = torch_vk.get_fallback_mode() if hasattr(torch_vk, "get_fallback_mode") else None
    torch_vk.set_fallback_mode("error")
    with pytest.raises((TypeError, NotImplementedError)):
        torch.logcumsumexp(v, 0)
    if previous is not None:
        torch_vk.set_fallback_mode(previous)


# ---------------------------------------------------------------- complex kernels (complex.comp)

UNARY_KERNELS = [torch.exp, torch.log, torch.sqrt, torch.reciprocal, torch.abs, torch.sgn,
                 torch.conj_physical]


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_unary_kernels(ctype):
    x = cmake((3, 4), ctype)
    for fn in UNARY_KERNELS:
        for _, layout in layouts(x):
            check(lambda a: fn(layout(a)), x)
        check(lambda a: fn(a.conj()), x)           # conjugate bit read by the kernel
        check(lambda a: fn(a._neg_view()), x)      # negative bit
        check(fn, cmake((), ctype))                 # 0-dim
        check(fn, cmake((0, 3), ctype))             # empty
    for name in ("exp_", "log_", "sqrt_", "reciprocal_", "sgn_", "conj_physical_"):
        check(lambda a: getattr(a, name)(), x.clone())
    out = torch.empty(3, 4, dtype=ctype)
    check(lambda a, o: torch.exp(a, out=o), x, out)
    check(lambda a, o: torch.abs(a, out=o), x, torch.empty(0, dtype=x.real.dtype))
    # special values: zeros (signed), infinities, NaN, huge / tiny magnitudes
    inf, nan = float("inf"), float("nan")
    special = torch.tensor([0j, complex(-0.0, 0.0), complex(0.0, -0.0), complex(-4, 0),
                            complex(-4, -0.0), complex(inf, 1), complex(1, inf),
                            complex(nan, 1), complex(1e30, 1e30), complex(1e-30, -1e-30),
                            complex(-3, 4), complex(0, -2)], dtype=ctype)
    for fn in (torch.log, torch.sqrt, torch.abs, torch.reciprocal, torch.sgn):
        check(fn, special)
    check(torch.exp, special[torch.tensor([0, 1, 3, 7, 9, 10, 11])])


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_binary_kernels(ctype):
    x, y = cmake((3, 4), ctype), cmake((3, 4), ctype, seed=3)
    for fn in (torch.mul, torch.div):
        for _, layout in layouts(x):
            check(lambda a, b: fn(layout(a), layout(b)), x, y)
        check(fn, x, cmake((4,), ctype, seed=5))                      # broadcast
        check(fn, cmake((3, 1), ctype), cmake((1, 4), ctype, seed=2))  # both broadcast
        check(lambda a, b: fn(a.conj(), b.conj()), x, y)              # conj bits
        check(lambda a, b: fn(a, b.conj()).conj(), x, y)
        check(fn, cmake((), ctype), x)                                 # 0-dim
        check(fn, cmake((0, 4), ctype), cmake((4,), ctype))            # empty
        check(lambda a, b: fn(a, b.t()), cmake((4, 3), ctype), cmake((3, 4), ctype, seed=1))
    check(lambda a, b: a.div_(b), x.clone(), y)
    check(lambda a, b: a.mul_(b.conj()), x.clone(), y)
    check(lambda a, b, o: torch.div(a, b, out=o), x, y, torch.empty(0, dtype=ctype))
    other = torch.complex64 if ctype == torch.complex128 else torch.complex128
    check(torch.mul, x, cmake((3, 4), other))  # promotion between complex dtypes


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_real_factors(ctype):
    """complex x / real factors: Python numbers and 0-dim CPU tensors stay host scalars."""
    x = cmake((3, 4), ctype)
    real = torch.float32 if ctype == torch.complex64 else torch.float64
    check(lambda a: a * 2.5, x)
    check(lambda a: 2.5 * a, x)
    check(lambda a: a / 4.0, x)
    check(lambda a: a.conj() * -3, x)
    check(lambda a: a * torch.tensor(1.5, dtype=real), x)               # 0-dim CPU tensor
    check(lambda a, f: a * f, x, torch.tensor(0.5, dtype=real))         # 0-dim vk tensor
    check(lambda a, f: a / f, x, make((4,), real, low=0.5, high=2.0))   # broadcast real tensor
    check(lambda a, f: f * a, x, make((3, 1), real))


def test_real_factor_graph_replays():
    """A compiled graph that scales a complex tensor by a number captures and replays (no
    host-to-device upload of the number during capture)."""
    import torch_vk.compiler

    def f(x):
        return torch.fft.irfft(torch.fft.rfft(x) * 0.5, n=12) / 3.0

    compiled = torch.compile(f, backend="vk")
    before = torch_vk.compiler.stats()
    for seed in range(4):
        x = make((2, 12), torch.float32, seed=seed)
        torch.testing.assert_close(compiled(x.to("vk")).cpu(), f(x), atol=1e-5, rtol=1e-5)
    after = torch_vk.compiler.stats()
    assert after["capture_failures"] == before["capture_failures"]
    assert after["replays"] - before["replays"] >= 2


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_matmul(ctype):
    tol = dict(atol=1e-4, rtol=1e-4) if ctype == torch.complex64 else None
    tol = tol or dict(atol=1e-10, rtol=1e-10)
    a, b = cmake((3, 5), ctype), cmake((5, 4), ctype, seed=2)
    check(torch.mm, a, b, **tol)
    check(lambda p, q: p.t().conj() @ q.conj(), cmake((5, 3), ctype), b, **tol)  # conj + transposed
    check(lambda p, q: p @ q.t().conj(), a, cmake((4, 5), ctype), **tol)
    check(lambda p, q: p._neg_view() @ q, a, b, **tol)
    check(lambda s, p, q: torch.addmm(s, p, q, beta=0.5, alpha=2 - 1j), cmake((4,), ctype), a, b, **tol)
    check(lambda s, p, q: s.addmm_(p, q), cmake((3, 4), ctype), a, b, **tol)
    check(torch.mm, cmake((3, 0), ctype), cmake((0, 4), ctype))  # k = 0
    check(torch.mm, cmake((0, 5), ctype), b)                      # empty
    p, q = cmake((2, 3, 5), ctype), cmake((2, 5, 4), ctype, seed=4)
    check(torch.bmm, p, q, **tol)
    check(lambda u, v: torch.bmm(u, v.mT.conj()), p, cmake((2, 4, 5), ctype), **tol)
    check(lambda s, u, v: torch.baddbmm(s, u, v, beta=1j, alpha=0.5), cmake((3, 4), ctype), p, q, **tol)
    check(lambda u, v: torch.einsum("bixy,ioxy->boxy", u, v), cmake((2, 3, 2, 2), ctype),
          cmake((3, 4, 2, 2), ctype, seed=6), **tol)
    check(lambda u, v: u @ v, cmake((2, 3, 5), ctype), b, **tol)  # matmul broadcast
    check(torch.mm, a, cmake((5, 4), torch.float32))  # dtype mismatch raises like the CPU
    check(torch.mv, a, cmake((5,), ctype, seed=8), **tol)
    check(lambda s, p, v: torch.addmv(s, p.conj(), v, beta=2, alpha=1j), cmake((3,), ctype), a,
          cmake((5,), ctype, seed=8), **tol)
    check(lambda s, v: torch.div(s, v), make((3, 4), torch.float32), cmake((4,), ctype))  # real / complex


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_backward(ctype):
    tol = dict(atol=1e-4, rtol=1e-4) if ctype == torch.complex64 else dict(atol=1e-9, rtol=1e-9)

    def grads(device):
        a = cmake((3, 5), ctype).to(device).requires_grad_()
        b = cmake((5, 4), ctype, seed=2).to(device).requires_grad_()
        y = (a @ b).exp() / (b.sum() + 3)
        loss = y.abs().sum() + (a.sqrt() * a.conj()).log().real.sum() + a.reciprocal().imag.sum()
        loss.backward()
        return a.grad.cpu(), b.grad.cpu()

    for vk_grad, cpu_grad in zip(grads("vk"), grads("cpu")):
        torch.testing.assert_close(vk_grad, cpu_grad, **tol)
