"""torch.fft on vk against PyTorch's CPU (pocketfft): the native _fft_c2c / _fft_r2c / _fft_c2r
primitives reached through every torch.fft function, float32 / float64 and complex inputs,
all norm modes, n padding / trimming, dims, non-contiguous inputs, empty and size-1 signals,
power-of-two (Stockham) and other (direct) lengths, long powers of two (four-step) and long
other lengths (Bluestein), and autograd."""
import math

import pytest
import torch

from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

REAL = [torch.float32, torch.float64]
NORMS = [None, "forward", "ortho", "backward"]


def tol(dtype, n=8):
    """float32: errors grow like sqrt(n) ulp of the largest magnitudes; float64: near exact."""
    if dtype in (torch.float64, torch.complex128):
        return dict(atol=1e-10 * max(1, n), rtol=1e-10)
    return dict(atol=2e-5 * max(1.0, math.sqrt(n)) * 4, rtol=2e-5)


def cplx(shape, real_dtype, seed=0):
    ctype = torch.complex64 if real_dtype == torch.float32 else torch.complex128
    return torch.complex(make(shape, real_dtype, seed=seed), make(shape, real_dtype, seed=seed + 1)).to(ctype)


C2C = {"fft": torch.fft.fft, "ifft": torch.fft.ifft}
R2C = {"rfft": torch.fft.rfft, "ihfft": torch.fft.ihfft}
C2R = {"irfft": torch.fft.irfft, "hfft": torch.fft.hfft}


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("norm", NORMS)
def test_1d_all_functions_norms(dtype, norm):
    x = make((3, 10), dtype)
    z = cplx((3, 10), dtype)
    for name, fn in C2C.items():
        check(lambda a: fn(a, norm=norm), z, **tol(dtype, 10))
        check(lambda a: fn(a, norm=norm), x, **tol(dtype, 10))  # real input -> r2c full
    for name, fn in R2C.items():
        check(lambda a: fn(a, norm=norm), x, **tol(dtype, 10))
    for name, fn in C2R.items():
        check(lambda a: fn(a, norm=norm), z, **tol(dtype, 18))
        check(lambda a: fn(a, n=7, norm=norm), z, **tol(dtype, 7))


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3, 8, 12, 16, 32, 64, 100, 128, 512, 1024, 2048, 1536])
def test_lengths(dtype, n):
    """Powers of two run the shared-memory Stockham kernel (<= 1024 float32 / 512 float64),
    longer ones four-step, other lengths the direct kernel (< 128) or Bluestein."""
    x = make((2, n), dtype)
    z = cplx((2, n), dtype)
    t = tol(dtype, n)
    check(torch.fft.fft, z, **t)
    check(torch.fft.ifft, z, **t)
    check(torch.fft.rfft, x, **t)
    check(lambda a: torch.fft.irfft(a, n=n), z, **t)


@pytest.mark.parametrize("dtype", REAL, ids=str)
def rel_err(got, ref):
    return ((got.cpu() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def rel_bound(dtype, n):
    """Relative error (max |err| / max |ref|) an O(n log n) FFT keeps: ~eps * log2 n."""
    eps = 1e-6 if dtype == torch.float32 else 2e-15
    return eps * max(1.0, math.log2(n))


LONG = [(torch.float32, 400), (torch.float32, 1000), (torch.float32, 4099), (torch.float32, 4096),
        (torch.float32, 1 << 16), (torch.float64, 1000), (torch.float64, 4099), (torch.float64, 1024),
        (torch.float64, 1 << 16), (torch.float32, 129)]


@pytest.mark.parametrize("dtype,n", LONG, ids=lambda v: str(v))
def test_long_and_awkward_lengths(dtype, n):
    """Four-step (powers of two past one workgroup) and Bluestein (other n >= 128) against
    pocketfft, relative to the largest output magnitude, every load / store mode."""
    rows = 2 if n >= 1 << 16 else 3
    x = make((rows, n), dtype, seed=3)
    z = cplx((rows, n), dtype, seed=4)
    zv, xv = z.to("vk"), x.to("vk")
    bound = rel_bound(dtype, n)
    for fn, a, av in ((torch.fft.fft, z, zv), (torch.fft.ifft, z, zv), (torch.fft.rfft, x, xv),
                      (lambda t: torch.fft.irfft(t, n=n), z[:, : n // 2 + 1], zv[:, : n // 2 + 1]),
                      (lambda t: torch.fft.fft(t, norm="ortho"), x, xv)):
        assert rel_err(fn(av), fn(a)) < bound


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_long_lengths_strided_padded_and_multidim(dtype):
    z = cplx((300, 3), dtype, seed=5)
    zv = z.to("vk")
    bound = rel_bound(dtype, 4096)
    for fn in (lambda t: torch.fft.fft(t, dim=0),                 # strided rows, Bluestein
               lambda t: torch.fft.fft(t, n=2048, dim=0),         # zero padded, four-step
               lambda t: torch.fft.ifft(t, n=200, dim=0),         # trimmed, Bluestein
               lambda t: torch.fft.rfft(t.real, n=1500, dim=0),
               lambda t: torch.fft.hfft(t, n=1500, dim=0),
               lambda t: torch.fft.fft2(t, s=(2048, 3)),
               lambda t: torch.fft.ifft(t.conj().t())):
        assert rel_err(fn(zv), fn(z)) < bound
    # An empty batch at a Bluestein length.
    assert torch.fft.fft(cplx((0, 300), dtype).to("vk")).shape == (0, 300)


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_n_padding_trimming_and_dims(dtype):
    z = cplx((4, 6, 5), dtype)
    x = make((4, 6, 5), dtype)
    t = tol(dtype, 16)
    for dim in (0, 1, -1):
        for n in (3, 6, 9):
            check(lambda a: torch.fft.fft(a, n=n, dim=dim), z, **t)
            check(lambda a: torch.fft.rfft(a, n=n, dim=dim), x, **t)
            check(lambda a: torch.fft.irfft(a, n=n, dim=dim), z, **t)
            check(lambda a: torch.fft.ihfft(a, n=n, dim=dim), x, **t)


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_multidim(dtype):
    z = cplx((4, 6, 5), dtype)
    x = make((4, 6, 5), dtype)
    t = tol(dtype, 120)
    for norm in (None, "ortho", "forward"):
        check(lambda a: torch.fft.fft2(a, norm=norm), z, **t)
        check(lambda a: torch.fft.ifft2(a, norm=norm), z, **t)
        check(lambda a: torch.fft.fftn(a, norm=norm), z, **t)
        check(lambda a: torch.fft.ifftn(a, dim=(0, 2), norm=norm), z, **t)
        check(lambda a: torch.fft.rfft2(a, norm=norm), x, **t)
        check(lambda a: torch.fft.rfftn(a, dim=(2, 0), norm=norm), x, **t)
        check(lambda a: torch.fft.irfft2(a, norm=norm), z, **t)
        check(lambda a: torch.fft.irfftn(a, s=(5, 8), dim=(0, 1), norm=norm), z, **t)
        check(lambda a: torch.fft.hfft2(a, norm=norm), z, **t)
        check(lambda a: torch.fft.hfftn(a, norm=norm), z, **t)
        check(lambda a: torch.fft.ihfft2(a, norm=norm), x, **t)
        check(lambda a: torch.fft.ihfftn(a, norm=norm), x, **t)


@pytest.mark.parametrize("dtype", REAL, ids=str)
def test_layouts(dtype):
    z = cplx((6, 8), dtype)
    x = make((6, 8), dtype)
    t = tol(dtype, 48)
    for _, layout in layouts(z):
        check(lambda a: torch.fft.fft(layout(a), dim=0), z, **t)
        check(lambda a: torch.fft.fft2(layout(a)), z, **t)
        check(lambda a: torch.fft.irfft(layout(a)), z, **t)
    for _, layout in layouts(x):
        check(lambda a: torch.fft.rfft(layout(a), dim=0), x, **t)
        check(lambda a: torch.fft.rfft2(layout(a)), x, **t)
    # A conjugated (lazy) input and a transposed view.
    check(lambda a: torch.fft.fft(a.conj()), z, **t)
    check(lambda a: torch.fft.fft(a.t()), z, **t)


def test_empty_and_size_one():
    # An empty batch: the CPU's MKL build rejects it ("Inconsistent configuration
    # parameters"), pocketfft / CUDA return an empty result of the transformed shape.
    for fn, a, shape, dtype in ((torch.fft.fft, cplx((0, 4), torch.float32), (0, 4), torch.complex64),
                                (torch.fft.rfft, make((0, 6), torch.float32), (0, 4), torch.complex64),
                                (torch.fft.irfft, cplx((0, 4), torch.float32), (0, 6), torch.float32)):
        r = fn(a.to("vk"))
        assert r.shape == shape and r.dtype == dtype and r.device.type == "vk"
    check(lambda a: torch.fft.fft(a, dim=0), cplx((0, 4), torch.float32))  # n = 0 raises
    check(torch.fft.fft, cplx((3, 1), torch.float32))
    check(torch.fft.rfft, make((1,), torch.float32))
    check(lambda a: torch.fft.irfft(a, n=1), cplx((2, 1), torch.float32))
    check(torch.fft.fft, cplx((), torch.float32))  # 0-dim raises like the CPU


def test_shift_and_freq():
    z = cplx((5, 6), torch.float32)
    check(torch.fft.fftshift, z)
    check(torch.fft.ifftshift, z)
    check(lambda a: torch.fft.fftshift(a, dim=1), make((5, 7), torch.float32))
    check(lambda a: torch.fft.ifftshift(a, dim=(0,)), z)
    for n in (1, 6, 7):
        for d in (1.0, 0.5):
            expected = torch.fft.fftfreq(n, d)
            torch.testing.assert_close(torch.fft.fftfreq(n, d, device="vk").cpu(), expected)
            expected = torch.fft.rfftfreq(n, d)
            torch.testing.assert_close(torch.fft.rfftfreq(n, d, device="vk").cpu(), expected)


def test_out_variants():
    z = cplx((3, 8), torch.float32)
    x = make((3, 8), torch.float32)
    t = tol(torch.float32, 8)
    for fn, a in ((torch.fft.fft, z), (torch.fft.rfft, x), (torch.fft.irfft, z)):
        expected = fn(a)
        out = torch.empty(0, dtype=expected.dtype, device="vk")
        fn(a.to("vk"), out=out)
        torch.testing.assert_close(out.cpu(), expected, **t)


def test_bad_input_raises_like_cpu():
    check(lambda a: torch.fft.rfft(a), cplx((4,), torch.float32))  # rfft of complex
    check(lambda a: torch.fft.fft(a, dim=3), cplx((4,), torch.float32))
    check(lambda a: torch.fft.fft(a, norm="bad"), cplx((4,), torch.float32))
    check(lambda a: torch.fft.irfft(a, n=0), cplx((4,), torch.float32))


def _grad(fn, x):
    x = x.detach().requires_grad_()
    (g,) = torch.autograd.grad(fn(x), x)
    return g


@pytest.mark.parametrize("name", ["fft", "ifft", "fft2", "rfft", "ihfft"])
def test_backward_matches_cpu(name):
    fn = getattr(torch.fft, name)
    # ifft of a real input is a lazy conj() view (on the CPU too): resolve before view_as_real.
    loss = lambda t: (torch.view_as_real(fn(t, norm="ortho").resolve_conj()).pow(2).sum()
                      + torch.view_as_real(fn(t).resolve_conj()).sum())
    for x in (cplx((3, 8), torch.float32), make((3, 8), torch.float32), make((2, 6), torch.float32)):
        if name in ("rfft", "ihfft") and x.is_complex():
            continue
        torch.testing.assert_close(_grad(loss, x.to("vk")).cpu(), _grad(loss, x), atol=1e-4, rtol=1e-4)


def test_irfft_hfft_backward_matches_cpu():
    z = cplx((3, 5), torch.float32)
    for fn in (torch.fft.irfft, torch.fft.hfft):
        loss = lambda t: (fn(t, n=8) * torch.arange(8.0, device=t.device)).sum()
        torch.testing.assert_close(_grad(loss, z.to("vk")).cpu(), _grad(loss, z), atol=1e-4, rtol=1e-4)
