"""float16 (and bfloat16) GEMM on "vk" against the CPU, exactly: subnormal, infinite, NaN and
large operands, results that overflow to inf or round into the subnormal range, through every
load path of the GEMM kernel (scalar loads, 4-element vector loads along either axis, 64-bit
group loads of the lanes algorithm, misaligned views that must fall back to scalar loads) and
every algorithm (the device's automatic choice here, the forced GPU profiles in a subprocess).
Also the float16 <-> float32 conversions themselves, bit for bit, since the GEMM loads and
stores go through them.

Exactness: every operand row has one power-of-two scale and small integer mantissas, and so
has every operand column, so each dot product is an integer multiple of one power of two that
fp32 holds exactly, in any summation order; the only rounding is the final one to float16,
so the reference is the float64 product rounded once (`exact_product`), which vk must match bit
for bit. (PyTorch's CPU gives the same on most hosts, but not everywhere: with oneDNN's AMX
bfloat16 kernels on a Sapphire Rapids host some bfloat16 products are not exactly rounded.)
Infinities and NaN propagate the same in any order (a NaN anywhere gives NaN, +inf and -inf
together give NaN)."""
import os
import subprocess
import sys

import pytest
import torch

import torch_vk  # noqa: F401
from helpers import VK, check, make

HERE = os.path.dirname(os.path.abspath(__file__))

# Row regimes of A (row i uses regime i % 5) and column regimes of B (column j: j % 3).
ROW_SCALES = {0: 0, 1: -24, 2: 5, 3: 0, 4: 0}  # log2 of the scale
COL_SCALES = {0: 0, 1: -24, 2: 4}


def special_operands(m, k, n, dtype=torch.float16, seed=0):
    """A (m x k) and B (k x n) as described in the module docstring:
    A rows: 0 small integers; 1 float16 subnormals (multiples of 2^-24 up to the largest);
    2 large values up to 65504 (sums overflow to inf); 3 small integers with +-inf at one k;
    4 small integers with NaN at one k. B columns: 0 small integers; 1 subnormals (2^-24
    multiples: products with subnormal rows fall below the float16 range); 2 integers * 16.
    The last k of B holds inf in the last column and NaN in the one before, so the end of k
    (the padded part of the last tile) must be read and must not be read twice."""
    g = torch.Generator().manual_seed(seed)
    ia = torch.randint(-8, 9, (m, k), generator=g).double()
    ia[1::5] = torch.randint(-1023, 1024, ia[1::5].shape, generator=g).double()
    ia[2::5] = torch.randint(-2047, 2048, ia[2::5].shape, generator=g).double()
    ia[2::5, 0] = 2047.0  # 65504, the largest float16
    ib = torch.randint(-3, 4, (k, n), generator=g).double()
    rows = torch.tensor([float(2 ** ROW_SCALES[i % 5]) for i in range(m)], dtype=torch.float64)
    cols = torch.tensor([float(2 ** COL_SCALES[j % 3]) for j in range(n)], dtype=torch.float64)
    a, b = ia * rows[:, None], ib * cols[None, :]
    for i in range(3, m, 5):
        a[i, int(torch.randint(0, k, (), generator=g))] = float("inf") if i % 2 else -float("inf")
    for i in range(4, m, 5):
        a[i, int(torch.randint(0, k, (), generator=g))] = float("nan")
    if m > 8:
        a[8, 0], a[8, k - 1] = float("inf"), -float("inf")  # +inf and -inf in one row: NaN
    if n >= 2:
        b[k - 1, n - 1] = float("inf")
        b[k - 1, n - 2] = float("nan")
    return a.to(dtype), b.to(dtype)


def exact_product(a, b):
    """The exactly rounded product of special operands (see the module docstring)."""
    return (a.double() @ b.double()).to(a.dtype)


def assert_bitwise(actual, expected):
    torch.testing.assert_close(actual, expected, atol=0, rtol=0, equal_nan=True)


# On lavapipe the automatic choice for these shapes is: direct 4x4 (small), direct 8x8 (mid),
# tiled 16x16 (medium), lanes (large); other devices choose their own, the checks hold anyway.
SHAPES = [(9, 37, 13), (12, 40, 16), (36, 1028, 40), (132, 244, 136), (68, 2048, 132)]
SHAPE_IDS = ["small-odd", "small-aligned", "mid", "medium", "large"]


@pytest.mark.parametrize("m,k,n", SHAPES, ids=SHAPE_IDS)
def test_special_values_exact(m, k, n, strict_native):
    a, b = special_operands(m, k, n, seed=m + k + n)
    assert_bitwise(torch.mm(a.to(VK), b.to(VK)).cpu(), exact_product(a, b))


@pytest.mark.parametrize("layout", ["a-transposed", "b-transposed", "both-transposed",
                                    "a-offset", "b-offset", "b-strided"])
def test_special_values_exact_layouts(layout, strict_native):
    # Transposed operands take the vector loads along the other axis; views one element off
    # an 8-byte boundary (offset) or with a column stride of 2 must take the scalar loads.
    m, k, n = 44, 132, 72
    a, b = special_operands(m, k, n, seed=3)

    def view(x, transposed, offset, strided):
        if transposed:
            return x.t().contiguous().t()
        if offset:
            flat = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
            flat[1:].view(x.shape).copy_(x)
            return flat[1:].view(x.shape)
        if strided:
            big = torch.empty(x.shape + (2,), dtype=x.dtype, device=x.device)
            big[..., 1].copy_(x)
            return big[..., 1]
        return x

    fa = lambda x: view(x, layout in ("a-transposed", "both-transposed"), layout == "a-offset", False)
    fb = lambda x: view(x, layout in ("b-transposed", "both-transposed"), layout == "b-offset",
                        layout == "b-strided")
    assert_bitwise(torch.mm(fa(a.to(VK)), fb(b.to(VK))).cpu(), exact_product(fa(a), fb(b)))


def test_special_values_exact_bmm_addmm_and_linear(strict_native):
    a, b = special_operands(24, 64, 20, seed=5)
    a2, b2 = special_operands(24, 64, 20, seed=6)
    ab, bb = torch.stack([a, a2]), torch.stack([b, b2])
    assert_bitwise(torch.bmm(ab.to(VK), bb.to(VK)).cpu(),
                   torch.bmm(ab.double(), bb.double()).to(ab.dtype))
    # A bias of small integers keeps the sums exact; beta / alpha powers of two too.
    bias = make((24, 20), torch.float16, low=-4, high=4, seed=7).round()
    check(lambda s, x, y: torch.addmm(s, x, y, beta=2, alpha=0.5), bias, a, b, atol=0, rtol=0)
    check(torch.nn.functional.linear, a, b.t(), bias[0], atol=0, rtol=0)


def test_bfloat16_special_values(strict_native):
    # bfloat16 shares the vector and group load paths; its range has no overflow at these
    # sizes, but subnormal-scaled, infinite and NaN operands must match exactly.
    for m, k, n in [(12, 40, 16), (132, 244, 136), (68, 2048, 132)]:
        a, b = special_operands(m, k, n, dtype=torch.bfloat16, seed=m)
        assert_bitwise(torch.mm(a.to(VK), b.to(VK)).cpu(), exact_product(a, b))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_random_values_all_paths(dtype, strict_native):
    # Ordinary values (rounding differs only by the fp32 summation order). The lanes shape is
    # left out: its pipelines are the slowest to build on lavapipe, and the exact tests above
    # cover its load paths.
    tol = dict(atol=2e-2, rtol=1e-2) if dtype == torch.float16 else dict(atol=1e-1, rtol=2e-2)
    for m, k, n in SHAPES[:-1]:
        a, b = make((m, k), dtype, seed=k), make((k, n), dtype, seed=n)
        check(torch.mm, a, b, **tol)
        check(lambda x, y: x.t() @ y.t(), a.t().contiguous(), b.t().contiguous(), **tol)


SCRIPT = r"""
import sys, torch, torch_vk
sys.path.insert(0, {here!r})
from test_matmul_half import special_operands, assert_bitwise, exact_product
for dtype in (torch.float16, torch.bfloat16):
    for m, k, n in [(9, 37, 13), (68, 132, 72)]:
        a, b = special_operands(m, k, n, dtype=dtype, seed=m)
        assert_bitwise(torch.mm(a.to("vk"), b.to("vk")).cpu(), exact_product(a, b))
        at, bt = a.t().contiguous().t(), b.t().contiguous().t()
        assert_bitwise(torch.mm(at.to("vk").t().contiguous().t(), bt.to("vk").t().contiguous().t()).cpu(), exact_product(at, bt))
torch.vk.synchronize()
assert torch_vk._C._validation_error_count() == 0, torch_vk._C._validation_messages()[-5:]
print("ok")
"""


def test_special_values_exact_forced_algorithms():
    # TORCH_VK_GEMM_ALGO is read once per process: tiled / direct are the GPU profiles (shared
    # memory tiles, register blocks), whatever device this is (one subprocess each, run side
    # by side). The lanes algorithm is the automatic choice for the large shape on CPU
    # devices, tested above.
    runs = {}
    for algo in ("tiled", "direct"):
        env = dict(os.environ, TORCH_VK_GEMM_ALGO=algo, TORCH_VK_FALLBACK="error")
        env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
        runs[algo] = subprocess.Popen([sys.executable, "-c", SCRIPT.format(here=HERE)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for algo, run in runs.items():
        out, _ = run.communicate(timeout=300)
        assert run.returncode == 0 and "ok" in out, f"{algo}: {out}"


def test_half_to_float_every_value():
    h = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(torch.float16)
    assert torch.equal(h.to(VK).float().cpu().view(torch.int32), h.float().view(torch.int32))


def test_float_to_half_rounding():
    # Every float16 value, its float32 neighbours, the midpoints between float16 values (ties
    # to even), the subnormal and overflow boundaries, and random bit patterns.
    h = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(torch.float16)
    hf = h.float()
    finite = hf[hf.isfinite()].double().sort().values
    mids = ((finite[:-1] + finite[1:]) / 2).float()
    bits = hf.view(torch.int32)
    near = torch.cat([bits + d for d in (-2, -1, 1, 2)]).view(torch.float32)
    g = torch.Generator().manual_seed(0)
    rnd = torch.randint(-2 ** 31, 2 ** 31 - 1, (1 << 18,), generator=g, dtype=torch.int64)
    edges = torch.tensor([0x477FF000, 0x477FEFFF, 0x477FF001, 0x33000000, 0x33000001, 0x32FFFFFF,
                          0x38800000, 0x387FFFFF, 0x7F800000, 0x00000001, 0x7F7FFFFF],
                         dtype=torch.int64)
    extra = torch.cat([rnd, edges, -edges]).to(torch.int32).view(torch.float32)
    x = torch.cat([hf, mids, near, extra])
    got, want = x.to(VK).half().cpu(), x.half()
    nan = want.isnan()
    assert torch.equal(got.isnan(), nan)
    assert torch.equal(got[~nan].view(torch.int16), want[~nan].view(torch.int16))
    assert torch.equal(got[nan].view(torch.int16) < 0, x[nan].view(torch.int32) < 0)  # sign kept
