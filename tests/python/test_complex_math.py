"""Complex math on vk against PyTorch's CPU (complex.comp / complex_math.glsl): the
trigonometric and hyperbolic functions and their inverses, log2 / log10 / log1p / expm1 /
exp2 / rsqrt / sigmoid, pow (every overload), dot / vdot, cumsum / cumprod, prod, and their
backward formulas. Every test runs strict-native (a CPU fallback fails it).

Special values are compared part by part (real and imaginary separately, NaN positions
included, and the sign of zero results), because torch.testing treats a complex value with a
NaN in either part as equal to any other such value."""
import itertools

import pytest
import torch

from helpers import check, dispatch_count, layouts, make, same_error_by_device

pytestmark = pytest.mark.usefixtures("strict_native")

CTYPES = [torch.complex64, torch.complex128]
INF, NAN = float("inf"), float("nan")


def real_of(ctype):
    return torch.float32 if ctype == torch.complex64 else torch.float64


def cmake(shape, ctype, seed=0, low=-2.0, high=2.0):
    real = real_of(ctype)
    return torch.complex(make(shape, real, low=low, high=high, seed=seed),
                         make(shape, real, low=low, high=high, seed=seed + 7))


def tol(ctype, scale=1.0):
    """helpers.TOLERANCE for float32 / the float64 analogue, times `scale` for ops whose
    condition number is larger than that of the element-wise kernels (pow, products)."""
    if ctype == torch.complex64:
        return dict(atol=1e-5 * scale, rtol=1.3e-5 * scale)
    return dict(atol=1e-12 * scale, rtol=1e-12 * scale)


UNARY = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "log2", "log10", "log1p", "expm1", "exp2", "rsqrt", "sigmoid", "square",
         "exp", "log", "sqrt", "reciprocal"]


def parts_equal(actual, expected, rtol, atol=0.0):
    """Part by part: NaN where the CPU has NaN, infinities of the same sign, zeros of the same
    sign, finite values within rtol of the value's magnitude."""
    a = torch.view_as_real(actual.cpu().resolve_conj()).reshape(-1, 2)
    e = torch.view_as_real(expected.resolve_conj()).reshape(-1, 2)
    scale = e.abs().nan_to_num(0, 0, 0).amax(-1, keepdim=True)
    close = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    close |= (a - e).abs() <= rtol * scale  # a tiny part of a large value: relative to |z|
    zero_sign = (e == 0) & (a == 0) & (torch.signbit(e) != torch.signbit(a))
    bad = (~close | zero_sign).any(-1).nonzero().flatten().tolist()
    return bad, a, e


def special_grid(ctype):
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 1e-9, 1.5, 1e30, -1e30, 100.0, -100.0,
            800.0, 1e10, INF, -INF, NAN]
    return torch.tensor([complex(a, b) for a, b in itertools.product(vals, vals)], dtype=ctype)


def assert_parts(actual, expected, inputs, rtol, what):
    bad, a, e = parts_equal(actual, expected, rtol)
    flat = inputs.reshape(-1)
    details = [f"{flat[i].item() if i < flat.numel() else i}: cpu {e[i].tolist()} vk {a[i].tolist()}"
               for i in bad[:8]]
    assert not bad, f"{what}: {len(bad)} values differ\n" + "\n".join(details)


# ---------------------------------------------------------------- unary functions

@pytest.mark.parametrize("ctype", CTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_layouts_bits_shapes(name, ctype):
    fn = getattr(torch, name)
    x = cmake((3, 4), ctype)
    for _, layout in layouts(x):
        check(lambda a: fn(layout(a)), x, **tol(ctype))
    check(lambda a: fn(a.conj()), x, **tol(ctype))          # conjugate bit
    check(lambda a: fn(a._neg_view()), x, **tol(ctype))     # negative bit
    check(lambda a: fn(a.t()), x, **tol(ctype))             # transposed
    check(fn, cmake((), ctype), **tol(ctype))               # 0-dim
    check(fn, cmake((0, 3), ctype))                         # empty
    check(lambda a, o: fn(a, out=o), x, torch.empty(3, 4, dtype=ctype), **tol(ctype))
    check(lambda a, o: fn(a, out=o), x, torch.empty(0, dtype=ctype), **tol(ctype))  # resized
    other = torch.complex128 if ctype == torch.complex64 else torch.complex64
    check(lambda a, o: fn(a, out=o), x, torch.empty(3, 4, dtype=other), **tol(torch.complex64))
    if name != "square":
        # out= of a real dtype: the CPU's "can't be cast" error
        same_error_by_device(lambda d: fn(x.to(d), out=torch.empty(3, 4, device=d)))
        check(lambda a: getattr(a, name + "_")(), x.clone(), **tol(ctype))  # in place


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
@pytest.mark.parametrize("name", [n for n in UNARY if n != "square"])
def test_unary_special_values(name, ctype):
    """Zeros of both signs, +-inf, NaN, huge / tiny parts, points on and off the branch cuts,
    arguments where exp / cosh overflow in the naive formulas: part by part against the CPU."""
    fn = getattr(torch, name)
    x = special_grid(ctype)
    expected = fn(x)
    actual = fn(x.to("vk"))
    rtol = 2e-5 if ctype == torch.complex64 else 1e-11
    bad, a, e = parts_equal(actual, expected, rtol, atol=1e-30)
    if name == "acos" and ctype == torch.complex128:
        # The CPU's x86 complex128 acos is pi/2 - asin(z): where asin's real part is pi/2 -
        # tiny, the result is that tiny difference, whose relative value depends on the last
        # bit of asin. Those are compared to one ULP of pi/2 absolutely.
        bad = [i for i in bad if not (abs(a[i, 0] - e[i, 0]) <= 4.5e-16 and
                                      torch.isclose(a[i, 1], e[i, 1], rtol=rtol, equal_nan=True))]
    details = [f"{x[i].item()}: cpu {e[i].tolist()} vk {a[i].tolist()}" for i in bad[:8]]
    assert not bad, f"{name}: {len(bad)} values differ\n" + "\n".join(details)


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_branch_cuts_and_large_arguments(ctype):
    """The sign of a zero part selects the side of a branch cut."""
    cuts = torch.tensor([complex(2, 0.0), complex(2, -0.0), complex(-2, 0.0), complex(-2, -0.0),
                         complex(0.0, 2), complex(-0.0, 2), complex(0.0, -2), complex(-0.0, -2),
                         complex(0.5, 0.0), complex(0.5, -0.0), complex(-0.5, -0.0),
                         complex(1, 0.0), complex(-1, -0.0), complex(0.0, 1), complex(0.0, -1)],
                        dtype=ctype)
    for name in ("asin", "acos", "atan", "asinh", "acosh", "atanh", "log", "sqrt", "log1p",
                 "log2", "log10", "rsqrt"):
        fn = getattr(torch, name)
        assert_parts(fn(cuts.to("vk")), fn(cuts), cuts, 2e-5 if ctype == torch.complex64 else 1e-11, name)
    # near the branch points +-1, +-i and far out: the cancellation-free forms
    near = torch.tensor([complex(1 + 1e-6, 1e-7), complex(1 - 1e-6, -1e-7), complex(1e-8, 1 + 1e-6),
                         complex(1e-3, 0.999), complex(0.3, 1.2), complex(1e-20, 1.2), complex(0.9, 0.4),
                         complex(3e7, 2e7), complex(1e20, -1e20), complex(-5e15, 1.0)], dtype=ctype)
    for name in ("asin", "acos", "atan", "asinh", "acosh", "atanh", "log", "log1p"):
        fn = getattr(torch, name)
        assert_parts(fn(near.to("vk")), fn(near), near, 1e-4 if ctype == torch.complex64 else 1e-10, name)
    big = torch.tensor([complex(1, 89), complex(1, -95), complex(0.5, 120), complex(2, 300),
                        complex(89, 0.25), complex(-95, 1), complex(700, 1), complex(-710, 2),
                        complex(1e-3, 60), complex(60, 1e-3)], dtype=ctype)
    for name in ("sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "expm1", "sigmoid"):
        fn = getattr(torch, name)
        assert_parts(fn(big.to("vk")), fn(big), big, 2e-5 if ctype == torch.complex64 else 1e-11, name)


# ---------------------------------------------------------------- pow

@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_pow_tensor_scalar(ctype):
    x = cmake((3, 4), ctype)
    t = tol(ctype, 10)
    # every fast path of the CPU (0, 1, 0.5, -0.5, -1, 2, 3, -2) and the general cpow
    for e in (0, 1, 0.5, -0.5, -1, 2, 3, -2, 2.5, -1.5, 1j, 0.5 - 2j, 2 + 0j, True, False, 7):
        check(lambda a: torch.pow(a, e), x, **t)
        check(lambda a: a ** e, x.t(), **t)
        check(lambda a: torch.pow(a.conj(), e), x, **t)
    check(lambda a: a.pow_(2.5), x.clone(), **t)
    check(lambda a: a.pow_(1 - 1j), x.clone(), **t)
    check(lambda a, o: torch.pow(a, 2.5, out=o), x, torch.empty(0, dtype=ctype), **t)
    check(lambda a, o: torch.pow(a, 3, out=o), x, torch.empty(3, 4, dtype=torch.complex128), **t)
    check(lambda a: torch.square(a), x, **t)
    check(lambda a: torch.pow(a, 2.5), cmake((), ctype), **t)        # 0-dim
    check(lambda a: torch.pow(a, 2.5), cmake((0, 2), ctype))         # empty
    # real tensors with a complex exponent: complex result (the base is read as (x, 0))
    r = make((3, 4), real_of(ctype), low=-2, high=2)
    check(lambda a: torch.pow(a, 1j), r, **t)
    check(lambda a: torch.pow(a, 2 + 0j), r, **t)
    check(lambda a: torch.pow(a, 0.5 + 0.5j), make((5,), torch.int64), **tol(torch.complex64, 10))
    # errors as on the CPU: in-place into a real tensor, out= of a real dtype
    same_error_by_device(lambda d: r.clone().to(d).pow_(1j))
    same_error_by_device(lambda d: torch.pow(x.to(d), 2, out=torch.empty(3, 4, device=d)))


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_pow_tensor_tensor_and_scalar_base(ctype):
    x, y = cmake((3, 4), ctype), cmake((3, 4), ctype, seed=3, low=-1.5, high=1.5)
    t = tol(ctype, 10)
    for _, layout in layouts(x):
        check(lambda a, b: torch.pow(layout(a), layout(b)), x, y, **t)
    check(torch.pow, x, cmake((4,), ctype, seed=5))                      # broadcast
    check(torch.pow, cmake((3, 1), ctype), cmake((1, 4), ctype, seed=2), **t)
    check(lambda a, b: torch.pow(a.conj(), b.conj()), x, y, **t)         # conj bits
    check(torch.pow, x, make((4,), real_of(ctype), low=-2, high=2), **t)  # complex ^ real
    check(torch.pow, make((3, 4), real_of(ctype), low=0.1, high=2), y, **t)  # real ^ complex
    check(lambda a, b: a ** b, x, torch.tensor(2.5, dtype=real_of(ctype)), **t)  # 0-dim CPU exponent
    check(torch.pow, cmake((), ctype), y, **t)                           # 0-dim
    check(torch.pow, cmake((0, 4), ctype), cmake((4,), ctype))           # empty
    check(lambda a, b: a.pow_(b), x.clone(), y, **t)
    check(lambda a, b, o: torch.pow(a, b, out=o), x, y, torch.empty(0, dtype=ctype), **t)
    other = torch.complex64 if ctype == torch.complex128 else torch.complex128
    check(torch.pow, x, cmake((3, 4), other, seed=4), **tol(torch.complex64, 10))  # promotion
    # scalar ^ tensor (1 gives ones for any exponent, as on the CPU)
    for base in (2.0, 0.5, -1.5, 1j, 2 - 1j, 1, 0, 3):
        check(lambda b: torch.pow(base, b), y, **t)
    check(lambda b: torch.pow(1j, b), make((4,), real_of(ctype)), **t)   # complex scalar base
    check(lambda b: torch.pow(1j, b), make((4,), torch.int64))
    check(lambda b, o: torch.pow(2.0, b, out=o), y, torch.empty(3, 4, dtype=ctype), **t)
    same_error_by_device(lambda d: torch.pow(x.to(d), y.to(d), out=torch.empty(3, 4, device=d)))
    same_error_by_device(lambda d: torch.pow(2, y.to(d), out=torch.empty(3, 4, device=d)))


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_pow_special_values(ctype):
    """cpow = cexp(y * clog(x)) with the C99 product: zeros, infinities and NaN of base and
    exponent as on the CPU (0 ^ 0 = NaN for tensor exponents, 1 for a scalar 0)."""
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e-9, 100.0, INF, -INF, NAN]
    x = torch.tensor([complex(a, b) for a, b in itertools.product(vals, vals)], dtype=ctype)
    rtol = 2e-5 if ctype == torch.complex64 else 1e-11
    for e in (2, 3, -2, 0.5, -0.5, -1, 2.5, -1.5, 1j, 0.5 - 2j, 0, 1):
        assert_parts(torch.pow(x.to("vk"), e), torch.pow(x, e), x, rtol, f"pow(x, {e})")
    for base in (2.0, 0.5, 1j, -1.5 + 1j, 0.0):
        assert_parts(torch.pow(base, x.to("vk")), torch.pow(base, x), x, rtol, f"pow({base}, x)")
    y = torch.tensor([complex(a, b) for a, b in itertools.product(vals, [0.0, 1.0, INF, NAN])],
                     dtype=ctype)
    xb, yb = x[:, None].expand(-1, len(y)), y[None, :].expand(len(x), -1)
    # Overflowing results whose angle is |y arg x| >> 1 (e.g. (1 + 2i) ^ 1e30) have the sign
    # of sin / cos of that angle, i.e. of the last bit of arg x: not part of this grid.
    assert_parts(torch.pow(xb.to("vk"), yb.to("vk")), torch.pow(xb, yb), xb, rtol, "pow(x, y)")


def test_pow_reads_operands_in_place():
    """No conversion copies: a real base with a complex exponent, or a Python-number
    exponent, is one dispatch."""
    r = torch.rand(64).to("vk")
    z = torch.randn(64, dtype=torch.complex64).to("vk")
    assert dispatch_count(lambda: torch.pow(r, 1j)) == 1
    assert dispatch_count(lambda: torch.pow(z, 2.5)) == 1
    assert dispatch_count(lambda: torch.pow(2.0, z)) == 1
    assert dispatch_count(lambda: torch.pow(z, r)) == 1


# ---------------------------------------------------------------- dot / vdot

@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_dot_vdot(ctype):
    t = tol(ctype, 10)
    a, b = cmake((7,), ctype), cmake((7,), ctype, seed=2)
    for fn in (torch.dot, torch.vdot, torch.inner, lambda p, q: p @ q):
        check(fn, a, b, **t)
        check(lambda p, q: fn(p.conj(), q), a, b, **t)
        check(lambda p, q: fn(p, q.conj()), a, b, **t)
        check(lambda p, q: fn(p.conj(), q.conj()), a, b, **t)
        check(lambda p, q: fn(p._neg_view(), q), a, b, **t)
        check(lambda p, q: fn(p[::2], q[1::2]), cmake((8,), ctype), cmake((8,), ctype, seed=3), **t)
        check(fn, cmake((0,), ctype), cmake((0,), ctype))
    check(lambda p, q, o: torch.dot(p, q, out=o), a, b, torch.empty((), dtype=ctype), **t)
    check(lambda p, q, o: torch.vdot(p, q, out=o), a, b, torch.empty((), dtype=ctype), **t)
    other = torch.complex64 if ctype == torch.complex128 else torch.complex128
    same_error_by_device(lambda d: torch.dot(a.to(d), b.to(d, other)))
    same_error_by_device(lambda d: torch.vdot(a.to(d), make((7,), real_of(ctype)).to(d)))
    same_error_by_device(lambda d: torch.dot(a.to(d), cmake((6,), ctype).to(d)))
    same_error_by_device(lambda d: torch.dot(cmake((2, 3), ctype).to(d), cmake((2, 3), ctype).to(d)))


# ---------------------------------------------------------------- cumsum / cumprod / prod

@pytest.mark.parametrize("ctype", CTYPES, ids=str)
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans(name, ctype):
    fn = getattr(torch, name)
    t = tol(ctype, 10)
    x = cmake((3, 4, 5), ctype, low=-1.2, high=1.2)
    for dim in (0, 1, 2, -1):
        check(lambda a: fn(a, dim), x, **t)
    for _, layout in layouts(x):
        check(lambda a: fn(layout(a), 1), x, **t)
    check(lambda a: fn(a.transpose(0, 2), 1), x, **t)
    check(lambda a: fn(a.conj(), 2), x, **t)
    check(lambda a: fn(a._neg_view(), 0), x, **t)
    check(lambda a: fn(a, 0), cmake((), ctype))
    check(lambda a: fn(a, 1), cmake((2, 0, 3), ctype))
    check(lambda a: fn(a, 0), cmake((1, 3), ctype), **t)
    check(lambda a: fn(a, 0), cmake((40,), ctype, low=-1.1, high=1.1), **t)   # one long row
    check(lambda a: fn(a, 0, dtype=torch.complex128), x, **t)
    check(lambda a: fn(a, 1, dtype=ctype), make((3, 4), real_of(ctype)), **t)   # real -> complex
    check(lambda a, o: fn(a, 1, out=o), x, torch.empty(0, dtype=ctype), **t)
    check(lambda a: getattr(a, name + "_")(1), x.clone(), **t)
    same_error_by_device(lambda d: fn(x.to(d), 3))
    # special values: zeros stop products, NaN / inf spread through the parts as on the CPU
    s = torch.tensor([[1, 2j, complex(INF, 0), 0.5, 0], [0j, 3, NAN, 1, 1j],
                      [complex(0, -INF), 1, 2, complex(-0.0, 0), 4]], dtype=ctype)
    assert_parts(fn(s.to("vk"), 1), fn(s, 1), s, 1e-5, name)


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_prod(ctype):
    t = tol(ctype, 10)
    x = cmake((3, 4, 5), ctype, low=-1.2, high=1.2)
    check(torch.prod, x, **t)
    for dim in (0, 1, 2, -1):
        check(lambda a: torch.prod(a, dim), x, **t)
        check(lambda a: torch.prod(a, dim, keepdim=True), x, **t)
    for _, layout in layouts(x):
        check(lambda a: torch.prod(layout(a), 1), x, **t)
        check(lambda a: torch.prod(layout(a)), x, **t)
    check(lambda a: torch.prod(a.conj(), 2), x, **t)
    check(lambda a: torch.prod(a.transpose(0, 2)), x, **t)
    check(torch.prod, cmake((), ctype))
    check(lambda a: torch.prod(a, 0), cmake((), ctype))
    check(torch.prod, cmake((0, 3), ctype))                  # empty: 1
    check(lambda a: torch.prod(a, 0), cmake((0, 3), ctype))  # empty rows: ones
    check(lambda a: torch.prod(a, 1), cmake((0, 3), ctype))
    # one workgroup per row (long rows, few of them) and one invocation per row (short rows)
    check(lambda a: torch.prod(a, 1), cmake((3, 200), ctype, low=0.9, high=1.1), **t)
    check(torch.prod, cmake((300,), ctype, low=0.95, high=1.05), **t)
    check(lambda a: torch.prod(a, 0), cmake((3, 300), ctype), **t)
    check(lambda a: torch.prod(a, dtype=torch.complex128), x, **t)
    check(lambda a: torch.prod(a, 1, dtype=ctype), make((3, 4), real_of(ctype)), **t)
    check(lambda a, o: torch.prod(a, 1, out=o), x, torch.empty(0, dtype=ctype), **t)
    same_error_by_device(lambda d: torch.prod(x.to(d), 3))
    s = torch.tensor([[1, 2j, 0.5, 0], [0j, 3, NAN, 1j], [1, 2, 3, 4j]], dtype=ctype)
    assert_parts(torch.prod(s.to("vk"), 1), torch.prod(s, 1), s, 1e-5, "prod")


# ---------------------------------------------------------------- where / flip (backward helpers)

@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_where_and_flip(ctype):
    x, y = cmake((3, 4), ctype), cmake((4,), ctype, seed=3)
    c = make((3, 4), torch.bool)
    check(torch.where, c, x, y, atol=0, rtol=0)
    check(lambda m, a: torch.where(m, a, 0), c, x, atol=0, rtol=0)
    check(lambda m, a: torch.where(m, 1j, a.conj()), c, x, atol=0, rtol=0)
    check(lambda m, a, b: torch.where(m[0], a, b), c, x, make((3, 4), real_of(ctype)), atol=0, rtol=0)
    check(lambda m, a, b, o: torch.where(m, a, b, out=o), c, x, y, torch.empty(0, dtype=ctype),
          atol=0, rtol=0)
    check(lambda a, m: a.masked_fill(m, 2 - 1j), x, c, atol=0, rtol=0)
    check(lambda a, m: a.conj().masked_fill(m, 2 - 1j), x, c, atol=0, rtol=0)
    check(lambda a, m, v: a.masked_fill(m, v), x, c, torch.tensor(1j, dtype=ctype), atol=0, rtol=0)
    idx = torch.tensor([[2, 0, 1, 1], [0, 2, 2, 1]])
    check(lambda a, i: torch.gather(a, 0, i), x, idx, atol=0, rtol=0)
    check(lambda a, i: torch.gather(a.t(), -1, i.t()[:, :2]), x, idx, atol=0, rtol=0)
    check(lambda a, i: torch.gather(a, 0, i), cmake((), ctype), torch.tensor(0), atol=0, rtol=0)
    check(lambda a, i, b: a.scatter(0, i[:, :3], b), x, torch.tensor([[2, 0, 1], [0, 1, 2]]),
          cmake((2, 3), ctype, seed=8), atol=0, rtol=0)
    check(lambda a, i: a.scatter(1, i, 0.5 + 2j), x, idx[:, :2], atol=0, rtol=0)
    check(lambda a, i, b: a.scatter_add(0, i, b), x, idx, cmake((2, 4), ctype, seed=9))
    check(lambda a: a.flip(0), x, atol=0, rtol=0)
    check(lambda a: a.flip(-1, 0), x.conj(), atol=0, rtol=0)
    check(lambda a: a.t().flip(1), x, atol=0, rtol=0)


# ---------------------------------------------------------------- autograd

BACKWARD = {
    "pow_tensor": lambda a, b: a.pow(b),
    "pow_scalar": lambda a, b: a.pow(2.5) + a.pow(1 + 1j) + a ** 2 + a ** -1,
    "pow_scalar_base": lambda a, b: torch.pow(2.0, b) + torch.pow(1j, a),
    "trig": lambda a, b: a.sin() + a.cos() * b.tan() + (a / 3).asin() + (b / 3).acos() + a.atan(),
    "hyperbolic": lambda a, b: a.sinh() + a.cosh() + b.tanh() + a.asinh() + (b + 3).acosh()
                               + (a / 3).atanh(),
    "logs": lambda a, b: (a + 3).log2() + b.log10() + a.log1p() + b.expm1() + a.exp2(),
    "rsqrt_sigmoid": lambda a, b: a.rsqrt() + b.sigmoid() + a.square(),
    "scans": lambda a, b: a.cumsum(1) * b.cumprod(0),
    "prod": lambda a, b: a.prod() + b.prod(1).sum() + a.prod(0, keepdim=True).sum(),
    "dot": lambda a, b: torch.dot(a[0], b[1]) + torch.vdot(a[1], b[0]) + a[0] @ b[0],
}


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
@pytest.mark.parametrize("name", list(BACKWARD))
def test_backward(name, ctype):
    fn = BACKWARD[name]

    def grads(device, zeros):
        a = cmake((2, 3), ctype, low=0.2, high=1.5).to(device)
        b = cmake((2, 3), ctype, seed=4, low=0.2, high=1.5).to(device)
        if zeros:  # prod / cumprod backward take other paths around zeros
            a[0, 1] = 0
            b[1, 1] = 0
        a.requires_grad_()
        b.requires_grad_()
        y = fn(a, b)
        (y.abs().sum() + (y * (1 - 2j)).real.sum()).backward()
        return [t.grad.cpu() if t.grad is not None else torch.zeros(2, 3, dtype=ctype) for t in (a, b)]

    for zeros in ((False, True) if name in ("scans", "prod") else (False,)):
        for vk_grad, cpu_grad in zip(grads("vk", zeros), grads("cpu", zeros)):
            torch.testing.assert_close(vk_grad, cpu_grad, **tol(ctype, 20))


@pytest.mark.parametrize("ctype", CTYPES, ids=str)
def test_backward_strided_inputs(ctype):
    """Gradients of transposed and expanded leaves (the autograd formulas see strided views)."""
    def grads(device):
        base = cmake((3, 4), ctype, low=0.3, high=1.5).to(device)
        a = base.t().requires_grad_()                              # transposed leaf
        b = cmake((1, 3), ctype, seed=5, low=0.3, high=1.5).to(device).expand(4, 3).requires_grad_()
        y = (a.sqrt() * b.sigmoid() + a.rsqrt() - b.square() + a.reciprocal() * b.tan()
             + a.pow(b) + a.cumprod(0) + a.prod(1, keepdim=True))
        (y.abs().sum() + y.imag.sum()).backward()
        return a.grad.cpu(), b.grad.cpu()

    for vk_grad, cpu_grad in zip(grads("vk"), grads("cpu")):
        torch.testing.assert_close(vk_grad, cpu_grad, **tol(ctype, 20))
