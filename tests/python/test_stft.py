"""torch.stft / torch.istft on vk against the CPU, under strict_native: stft reaches pad /
unfold / mul / _fft_r2c / _fft_c2c, istft additionally the overlap-add aten::unfold_backward
(src/aten/ops_stft.cpp). Window / center / pad_mode / onesided / normalized variants, round
trips, a Whisper-style log-mel front end, and unfold_backward itself (values and autograd)."""
import math

import pytest
import torch

from helpers import check, make

pytestmark = pytest.mark.usefixtures("strict_native")

REAL = [torch.float32, torch.float64]


def tol(dtype, n):
    if dtype == torch.float64:
        return dict(atol=1e-10 * n, rtol=1e-10)
    return dict(atol=2e-5 * math.sqrt(n) * 4, rtol=2e-5)


STFT_CASES = [
    dict(n_fft=400, hop_length=160, window="hann"),                   # Whisper (Bluestein)
    dict(n_fft=64, hop_length=16, window="hann", center=False),
    dict(n_fft=64, hop_length=16, window="hann", pad_mode="constant"),
    dict(n_fft=50, hop_length=20, window=None, normalized=True),       # direct, rectangular
    dict(n_fft=64, hop_length=32, win_length=40, window="hamming"),   # window padded to n_fft
    dict(n_fft=32, window="hann", onesided=False),
]


def _window(kind, length, dtype, device):
    if kind is None:
        return None
    fn = torch.hann_window if kind == "hann" else torch.hamming_window
    return fn(length, dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("case", range(len(STFT_CASES)))
@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_stft_matches_cpu(dtype, case):
    kw = dict(STFT_CASES[case])
    kind = kw.pop("window")
    win_len = kw.get("win_length", kw["n_fft"])
    x = make((2, 1000), dtype, seed=case)

    def run(t):
        return torch.stft(t, window=_window(kind, win_len, dtype, t.device), return_complex=True, **kw)

    check(run, x, **tol(dtype, kw["n_fft"]))
    check(lambda t: run(t[0]), x, **tol(dtype, kw["n_fft"]))  # 1-D signal


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("n_fft,hop,center", [(400, 160, True), (64, 16, True), (64, 16, False), (48, 24, True)])
def test_istft_matches_cpu_and_round_trips(dtype, n_fft, hop, center):
    x = make((2, 1200), dtype, seed=7)
    w = torch.hann_window(n_fft, dtype=dtype)
    spec = torch.stft(x, n_fft, hop, window=w, center=center, return_complex=True)
    length = 1200 if center else None

    def inv(s):
        return torch.istft(s, n_fft, hop, window=w.to(s.device), center=center, length=length)

    check(inv, spec, **tol(dtype, n_fft))
    if center:  # the hann window's overlap-add envelope vanishes at the ends without centering
        back = inv(torch.stft(x.to("vk"), n_fft, hop, window=w.to("vk"), center=center,
                              return_complex=True)).cpu()
        torch.testing.assert_close(back, x, **tol(dtype, n_fft))


def test_istft_normalized_onesided_false():
    x = make((1000,), torch.float32, seed=2)
    w = torch.hann_window(64)
    spec = torch.stft(x, 64, 16, window=w, normalized=True, onesided=False, return_complex=True)
    check(lambda s: torch.istft(s, 64, 16, window=w.to(s.device), normalized=True,
                                onesided=False, length=1000), spec, **tol(torch.float32, 64))


def _mel_filters(n_mels, n_freq):
    """A fixed nonnegative triangular filter bank (the shape of a mel matrix)."""
    centers = torch.linspace(0, n_freq - 1, n_mels + 2, dtype=torch.float64)
    f = torch.arange(n_freq, dtype=torch.float64)
    lo, mid, hi = centers[:-2, None], centers[1:-1, None], centers[2:, None]
    up = (f - lo) / (mid - lo)
    down = (hi - f) / (hi - mid)
    return torch.clamp(torch.minimum(up, down), min=0).float()


def test_whisper_log_mel_front_end():
    audio = make((2, 16000), torch.float32, low=-0.5, high=0.5, seed=11)
    filters = _mel_filters(80, 201)

    def log_mel(a):
        window = torch.hann_window(400, device=a.device)
        stft = torch.stft(a, 400, 160, window=window, return_complex=True)
        magnitudes = stft[..., :-1].abs() ** 2
        mel = filters.to(a.device) @ magnitudes
        log_spec = torch.clamp(mel, min=1e-10).log10()
        log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
        return (log_spec + 4.0) / 4.0

    expected = log_mel(audio)
    got = log_mel(audio.to("vk"))
    assert got.device.type == "vk" and got.shape == expected.shape == (2, 80, 100)
    torch.testing.assert_close(got.cpu(), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
@pytest.mark.parametrize("shape,dim,size,step", [((10,), 0, 4, 2), ((3, 11, 2), 1, 5, 3),
                                                 ((3, 11), 1, 3, 5), ((7, 4), 0, 7, 1),
                                                 ((6,), -1, 1, 1), ((5, 0), 0, 2, 2)])
def test_unfold_backward_matches_cpu(dtype, shape, dim, size, step):
    x = make(shape, dtype, seed=1)
    windows = x.unfold(dim, size, step)
    g = make(windows.shape, dtype, seed=2)
    check(lambda t: torch.ops.aten.unfold_backward(t, list(shape), dim, size, step), g,
          atol=1e-2 if dtype == torch.float16 else 1e-5, rtol=1e-3)


def test_unfold_autograd_matches_cpu():
    x = make((4, 13), torch.float32, seed=3)

    def grad(t):
        t = t.detach().requires_grad_()
        (t.unfold(1, 4, 3) * torch.arange(4.0, device=t.device)).pow(2).sum().backward()
        return t.grad

    torch.testing.assert_close(grad(x.to("vk")).cpu(), grad(x), atol=1e-5, rtol=1e-5)
