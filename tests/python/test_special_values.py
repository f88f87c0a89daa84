"""IEEE special values against PyTorch's CPU: NaN, +-inf and -0 through the NaN-propagating ops
(relu family, clamp, maximum/minimum, elu family, hardswish/hardsigmoid, softplus, reductions,
max pooling), exact quotients of torch.div's rounding modes (a == b, a = k b, values next to
integer boundaries, huge/tiny exponents, denormal operands), and denormal results where the
device preserves denormals (SPIR-V DenormPreserve, requested by the pipeline cache).

Background: an NVIDIA H200 gave relu(NaN) = 0, silu(-90) = -0 (denormal flushed) and
trunc(a / a) = 0 (inexact division). Lavapipe gets these right without the fixes, so these
tests pin the semantics; the fixes are written for devices that don't (see shaders/ops.glsl,
shaders/math.glsl tvk_div_rn and runtime/pipeline.h)."""
import math

import pytest
import torch
import torch.nn.functional as F

from helpers import TOLERANCE, VK

pytestmark = pytest.mark.usefixtures("strict_native")

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
NAN, INF = math.nan, math.inf
# Values around every threshold of the ops below (0, 3, 6, hardtanh's +-1, softplus' 20), the
# specials, and magnitudes that overflow float16/bfloat16 casts to inf.
SPECIALS = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -3.0, 6.0, -6.0,
            7.5, 25.0, -25.0, 1e30, -1e30]


def specials(dtype):
    return torch.tensor(SPECIALS, dtype=torch.float64).to(dtype)


def pairs(dtype):
    """Every (a, b) pair of SPECIALS as two flat tensors."""
    x = specials(dtype)
    n = x.numel()
    return x.repeat_interleave(n), x.repeat(n)


def assert_same(actual, expected, exact, signed_zero=True):
    """Same dtype and shape, NaN where the CPU has NaN, the same infinities, finite values equal
    (exact) or within the dtype's tolerance, and (signed_zero) the sign of every zero."""
    assert actual.device.type == "vk", actual.device
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if not expected.dtype.is_floating_point:
        assert torch.equal(actual, expected)
        return
    nan = expected.isnan()
    assert torch.equal(actual.isnan(), nan), f"NaN mismatch:\nvk  {actual}\ncpu {expected}"
    tol = dict(atol=0.0, rtol=0.0) if exact else TOLERANCE.get(expected.dtype, {})
    torch.testing.assert_close(actual[~nan], expected[~nan], **tol)
    if signed_zero:
        zero = expected == 0
        assert torch.equal(actual[zero].signbit(), expected[zero].signbit()), \
            f"signed zero mismatch:\nvk  {actual[zero]}\ncpu {expected[zero]}"


def run(fn, *tensors):
    """fn on CPU copies and on vk copies."""
    expected = fn(*[t.clone() for t in tensors])
    actual = fn(*[t.to(VK) for t in tensors])
    return actual, expected


# ------------------------------------------------------------------------------------------
# Unary ops: (function, exact, signed_zero)
UNARY = {
    "relu": (torch.relu, True, True),
    "relu6": (F.relu6, True, True),
    "hardtanh": (F.hardtanh, True, True),
    "hardtanh_custom": (lambda x: F.hardtanh(x, -2.0, 2.5), True, True),
    "clamp": (lambda x: torch.clamp(x, -1.5, 2.0), True, True),
    "clamp_min": (lambda x: torch.clamp(x, min=0.0), True, True),
    "clamp_max": (lambda x: torch.clamp(x, max=0.0), True, True),
    "clamp_crossed": (lambda x: torch.clamp(x, 2.0, -1.0), True, True),
    "clamp_nan_min": (lambda x: torch.clamp(x, min=NAN), True, True),
    "clamp_nan_max": (lambda x: torch.clamp(x, max=NAN), True, True),
    "clamp_min_nan": (lambda x: torch.clamp_min(x, NAN), True, True),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.125), True, True),
    "elu": (F.elu, False, True),
    "selu": (F.selu, False, True),
    "celu": (lambda x: F.celu(x, 0.5), False, True),
    "hardswish": (F.hardswish, False, True),
    "hardsigmoid": (F.hardsigmoid, False, True),
    "softplus": (F.softplus, False, True),
    "softplus_beta": (lambda x: F.softplus(x, beta=2.0, threshold=1.0), False, True),
    "threshold": (lambda x: F.threshold(x, 0.5, -4.0), True, True),
    "silu": (F.silu, False, True),
    "sign": (torch.sign, True, False),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_specials(name, dtype):
    fn, exact, signed_zero = UNARY[name]
    actual, expected = run(fn, specials(dtype))
    assert_same(actual, expected, exact, signed_zero)


# ------------------------------------------------------------------------------------------
# Binary ops over every pair of specials. maximum/minimum: the CPU's scalar and vectorized
# paths disagree on the sign of max(-0, +0), so signed zeros are not compared there.
BINARY = {
    "maximum": (torch.maximum, True, False),
    "minimum": (torch.minimum, True, False),
    "fmax": (torch.fmax, True, False),
    "fmin": (torch.fmin, True, False),
    "clamp_tensor": (lambda a, b: torch.clamp(a, min=b, max=b.abs() + 1.0), True, False),
    "clamp_tensor_min": (lambda a, b: torch.clamp(a, min=b), True, False),
    "clamp_tensor_max": (lambda a, b: torch.clamp(a, max=b), True, False),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), True, True),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), True, True),
    "floor_divide": (torch.floor_divide, True, True),
    "remainder": (torch.remainder, True, True),
    "fmod": (torch.fmod, True, True),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_specials(name, dtype):
    fn, exact, signed_zero = BINARY[name]
    actual, expected = run(fn, *pairs(dtype))
    assert_same(actual, expected, exact, signed_zero)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_prelu_specials(dtype):
    x = specials(dtype).reshape(1, -1, 1).expand(2, -1, 3).contiguous()
    w = torch.linspace(-0.5, 0.5, x.shape[1], dtype=torch.float64).to(dtype)
    actual, expected = run(F.prelu, x, w)
    assert_same(actual, expected, exact=True)


# ------------------------------------------------------------------------------------------
# Reductions: rows holding NaN (first, last, twice), infinities only, and -0/+0.
def reduction_rows(dtype):
    rows = [
        [1.0, NAN, 3.0, -2.0, NAN, 0.5],
        [NAN, -1.0, 2.0, 7.5, 0.0, 1.0],
        [1.0, 2.0, 3.0, -2.0, 0.0, NAN],
        [-INF, -INF, -INF, -INF, -INF, -INF],
        [INF, INF, 1.0, -INF, 2.0, 0.0],
        [-0.0, -0.0, -0.0, -0.0, -0.0, -0.0],
        [-1e30, 1e30, -25.0, 25.0, -0.5, 0.5],
    ]
    return torch.tensor(rows, dtype=torch.float64).to(dtype)


REDUCTIONS = {
    "amax": lambda x: torch.amax(x, dim=1),
    "amin": lambda x: torch.amin(x, dim=1),
    "amax_dim0": lambda x: torch.amax(x, dim=0),
    "amin_dim0": lambda x: torch.amin(x, dim=0),
    "max_all": lambda x: torch.max(x),
    "min_all": lambda x: torch.min(x),
    "max_dim": lambda x: torch.max(x, dim=1),
    "min_dim": lambda x: torch.min(x, dim=1),
    "argmax": lambda x: torch.argmax(x, dim=1),
    "argmin": lambda x: torch.argmin(x, dim=1),
    "max_dim_transposed": lambda x: torch.max(x.t(), dim=0),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_specials(name, dtype):
    fn = REDUCTIONS[name]
    actual, expected = run(fn, reduction_rows(dtype))
    if isinstance(expected, torch.Tensor):
        assert_same(actual, expected, exact=True, signed_zero=False)
    else:  # (values, indices)
        assert_same(actual.values, expected.values, exact=True, signed_zero=False)
        assert_same(actual.indices, expected.indices, exact=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_long_reduction_with_nan(dtype):
    # Long enough rows for the workgroup (tree / subgroup) paths, NaN at varying positions.
    x = torch.linspace(-3, 3, 8 * 1500, dtype=torch.float64).reshape(8, 1500).to(dtype)
    for row, col in enumerate([0, 1, 31, 32, 700, 1499]):
        x[row, col] = NAN
    x[6, 3] = INF
    x[7, 9] = -INF
    for fn in (lambda t: torch.amax(t, dim=1), lambda t: torch.amin(t, dim=1), torch.max, torch.min,
               lambda t: torch.argmax(t, dim=1), lambda t: torch.argmin(t, dim=1)):
        actual, expected = run(fn, x)
        assert_same(actual, expected, exact=True, signed_zero=False)


# ------------------------------------------------------------------------------------------
# Max pooling: NaN anywhere in a window wins (PyTorch: `val > max || isnan(val)`).
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_max_pool_specials(dtype):
    x = specials(dtype)
    img = torch.stack([x, x.flip(0), x.roll(3), -x]).reshape(1, 4, 4, 5)
    for fn in (lambda t: F.max_pool2d(t, 2),
               lambda t: F.max_pool2d(t, 3, stride=1, padding=1),
               lambda t: F.max_pool1d(t.reshape(1, 4, 20), 4, stride=2),
               lambda t: F.adaptive_max_pool2d(t, (2, 3))):
        actual, expected = run(fn, img)
        assert_same(actual, expected, exact=True, signed_zero=False)
    actual, expected = run(lambda t: F.max_pool2d(t, 2, return_indices=True), img)
    assert_same(actual[0], expected[0], exact=True, signed_zero=False)
    assert_same(actual[1], expected[1], exact=True)


# ------------------------------------------------------------------------------------------
# torch.div rounding modes: exact answers, compared bit for bit (with signed zeros).
ROUNDING = {
    "trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "floor_divide": torch.floor_divide,
    "remainder": torch.remainder,
    "fmod": torch.fmod,
}


def quotient_cases(dtype, seed=0):
    """(a, b) with a == b, a = k b for k in [-64, 64], a one ULP either side of k b, a = k b +- b/2,
    and random operands with exponents spread over most of the dtype's range."""
    g = torch.Generator().manual_seed(seed)
    finfo = torch.finfo(dtype)
    span = min(60, int(math.log2(finfo.max)) - 2)
    b = (torch.rand(64, generator=g, dtype=torch.float64) + 0.5) * torch.where(
        torch.rand(64, generator=g) > 0.5, 1.0, -1.0).double()
    b = torch.cat([b, b * 2.0 ** 13, b * 2.0 ** -13, torch.tensor([1.0, -1.0, 3.0, 0.1, 1 / 3])])
    b = b.to(dtype)
    k = torch.arange(-64, 65, dtype=torch.float64).to(dtype)
    bb = b.repeat_interleave(k.numel())
    kk = k.repeat(b.numel())
    exact = (kk.double() * bb.double()).to(dtype)  # k b rounded to the dtype
    up = torch.nextafter(exact, torch.full_like(exact, INF))
    down = torch.nextafter(exact, torch.full_like(exact, -INF))
    half = (exact.double() + bb.double() * 0.5).to(dtype)
    a_list = [b, exact, up, down, half]
    b_list = [b, bb, bb, bb, bb]
    # Random operands: mantissa in [1, 2), random sign and exponent.
    n = 4000
    def rand_values():
        m = torch.rand(n, generator=g, dtype=torch.float64) + 1.0
        e = torch.randint(-span, span + 1, (n,), generator=g).double()
        s = torch.where(torch.rand(n, generator=g) > 0.5, 1.0, -1.0).double()
        return (s * m * torch.pow(2.0, e)).to(dtype)
    a_list.append(rand_values())
    b_list.append(rand_values())
    # Same exponent range, close magnitudes: quotients near 1 and small integers.
    r = rand_values()
    a_list.append(r)
    b_list.append((r.double() / torch.randint(1, 9, (n,), generator=g).double()).to(dtype))
    return torch.cat(a_list), torch.cat(b_list)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("mode", sorted(ROUNDING))
def test_div_rounding_exact(mode, dtype):
    a, b = quotient_cases(dtype)
    actual, expected = run(ROUNDING[mode], a, b)
    assert_same(actual, expected, exact=True)


@pytest.mark.parametrize("mode", sorted(ROUNDING))
def test_div_rounding_python_scalars(mode):
    a, b = quotient_cases(torch.float32, seed=1)
    for scalar in (1.0, -3.0, 0.1, 7.0):
        actual, expected = run(lambda t: ROUNDING[mode](t, scalar), a)
        assert_same(actual, expected, exact=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_div_trunc_denormal_operands(dtype):
    # The quotient of two denormals is an ordinary number; trunc decides it from the bits,
    # whatever the device does with denormal arithmetic.
    tiny = torch.finfo(dtype).smallest_normal
    a = torch.tensor([7, 3, 5, 1, 12, 9, -7, 6], dtype=torch.float64) * tiny * 2.0 ** -10
    b = torch.tensor([2, 3, -2, 4, 5, 2, 2, 1], dtype=torch.float64) * tiny * 2.0 ** -10
    a, b = a.to(dtype), b.to(dtype)
    assert (a.abs() < tiny).all() and (b.abs() < tiny).all()
    actual, expected = run(lambda x, y: torch.div(x, y, rounding_mode="trunc"), a, b)
    assert_same(actual, expected, exact=True)


# ------------------------------------------------------------------------------------------
# Denormal results (silu(-90) on float32 is about -8e-38... * -90 = denormal). Only meaningful
# where the device preserves denormals; lavapipe reports shaderDenormPreserveFloat32 = false
# (llvmpipe runs with flush-to-zero), the H200 reports it.
def denorm_preserved(width_index):
    return bool(torch.vk.get_device_properties().denorm_preserve[width_index])


def test_float_controls_properties_reported():
    props = torch.vk.get_device_properties()
    assert len(props.signed_zero_inf_nan_preserve) == 3
    assert len(props.denorm_preserve) == 3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_denormal_results(dtype):
    if not denorm_preserved(1 if dtype == torch.float32 else 2):
        pytest.skip("the device does not preserve denormals (shaderDenormPreserveFloat"
                    f"{32 if dtype == torch.float32 else 64} = false)")
    tiny = torch.finfo(dtype).smallest_normal
    x = torch.tensor([-90.0, -100.0, -87.5], dtype=dtype)
    actual, expected = run(F.silu, x)
    assert_same(actual, expected, exact=False)
    d = torch.tensor([tiny * 0.5, -tiny * 0.25, tiny * 2.0 ** -20], dtype=dtype)
    for fn in (torch.relu, lambda t: t * 0.5, lambda t: t + t, torch.neg, torch.abs,
               lambda t: torch.clamp(t, min=-tiny * 0.125)):
        actual, expected = run(fn, d)
        assert_same(actual, expected, exact=True)
