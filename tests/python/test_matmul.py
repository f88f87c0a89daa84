"""Matrix products on "vk" against the CPU: mm, addmm, bmm, baddbmm, mv, addmv, dot (functional,
out= and in-place forms), matmul broadcasting, nn.Linear training steps; every dtype the CPU
supports, transposed / strided / offset / broadcast operands, empty and 0-dim / 1-D cases, and the
CPU's errors for bad shapes and dtypes. Shapes stay small: lavapipe is slow."""
import pytest
import torch
import torch.nn.functional as F

import torch_vk  # noqa: F401
from helpers import VK, check, layouts, make

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def tol(dtype):
    """Tolerances for sums of products of values in [-3, 3] (k <= ~256)."""
    if dtype == torch.float16:
        return dict(atol=1e-2, rtol=1e-2)
    if dtype == torch.bfloat16:
        return dict(atol=5e-2, rtol=2e-2)
    if dtype == torch.float64:
        return dict(atol=1e-10, rtol=1e-10)
    if dtype == torch.float32:
        return dict(atol=1e-4, rtol=1e-4)
    return dict(atol=0, rtol=0)  # integers wrap exactly like the CPU


def vals(shape, dtype, seed):
    # Small integer ranges keep int8 sums interesting (they wrap) but comparable.
    return make(shape, dtype, low=-3.0, high=3.0, seed=seed)


# ---------------------------------------------------------------- mm


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 33, 5), (65, 31, 129), (2, 3, 1), (1, 7, 9), (8, 1, 8)])
def test_mm_shapes(m, k, n):
    a, b = vals((m, k), torch.float32, 1), vals((k, n), torch.float32, 2)
    check(torch.mm, a, b, **tol(torch.float32))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_mm_dtypes(dtype):
    a, b = vals((9, 21), dtype, 3), vals((21, 6), dtype, 4)
    check(torch.mm, a, b, **tol(dtype))
    check(torch.matmul, a, b, **tol(dtype))


def test_mm_int8_wraps_like_cpu():
    a = torch.full((2, 3), 100, dtype=torch.int8)
    check(torch.mm, a, a.t().contiguous(), atol=0, rtol=0)


@pytest.mark.parametrize("la", ["contiguous", "transposed", "strided", "offset"])
@pytest.mark.parametrize("lb", ["contiguous", "transposed", "strided", "offset"])
def test_mm_layouts(la, lb):
    a, b = vals((13, 10), torch.float32, 5), vals((10, 11), torch.float32, 6)
    fa = dict(layouts(a))[la]
    fb = dict(layouts(b))[lb]
    check(lambda x, y: torch.mm(fa(x), fb(y)), a, b, **tol(torch.float32))


def test_mm_transposed_views_and_slices():
    a, b = vals((12, 20), torch.float32, 7), vals((14, 20), torch.float32, 8)
    check(lambda x, y: x @ y.t(), a, b, **tol(torch.float32))
    check(lambda x, y: x.t() @ x[:, ::2], a, b, **tol(torch.float32))
    check(lambda x, y: x[1:7, 3:9] @ y.t()[3:9, 2:], a, b, **tol(torch.float32))
    # Broadcast (stride 0) operands.
    check(lambda x, y: x[:, :1].expand(12, 5) @ y[:5, :3], a, b, **tol(torch.float32))


@pytest.mark.parametrize("m,k,n", [(0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0)])
def test_mm_empty(m, k, n):
    check(torch.mm, torch.randn(m, k), torch.randn(k, n))


def test_mm_out():
    a, b = vals((6, 5), torch.float32, 9), vals((5, 7), torch.float32, 10)
    check(lambda x, y, o: torch.mm(x, y, out=o), a, b, torch.empty(6, 7), **tol(torch.float32))
    # A transposed (column-major) out keeps its strides.
    def into_transposed(x, y):
        o = torch.empty(7, 6, device=x.device).t()
        torch.mm(x, y, out=o)
        return o, o.stride()
    vk_out, cpu_out = into_transposed(a.to(VK), b.to(VK)), into_transposed(a, b)
    assert vk_out[1] == cpu_out[1]
    torch.testing.assert_close(vk_out[0].cpu(), cpu_out[0], **tol(torch.float32))
    # Wrong-sized out is resized (with the CPU's deprecation warning), wrong dtype raises.
    with pytest.warns(UserWarning):
        check(lambda x, y, o: torch.mm(x, y, out=o), a, b, torch.empty(5), **tol(torch.float32))
    check(lambda x, y, o: torch.mm(x, y, out=o), a, b, torch.empty(6, 7, dtype=torch.float64))


def test_mm_out_aliasing_an_input():
    # The CPU's result depends on its BLAS kernel when out= aliases an input (some overwrite
    # the input while still reading it); vk computes into a temporary, so the result is the
    # product of the original operands.
    a, b = vals((6, 6), torch.float32, 11), vals((6, 6), torch.float32, 12)
    expected = a @ b
    for alias in (0, 1):
        x, y = a.to(VK), b.to(VK)
        out = torch.mm(x, y, out=(x, y)[alias])
        assert out.data_ptr() == (x, y)[alias].data_ptr()
        torch.testing.assert_close(out.cpu(), expected, **tol(torch.float32))


def test_mm_larger_uses_the_big_tile_profile():
    # Big enough for the large register-block configuration of the device class.
    a, b = vals((300, 200), torch.float32, 13), vals((260, 200), torch.float32, 14)
    check(lambda x, y: x @ y.t(), a, b, atol=1e-3, rtol=1e-4)


# ---------------------------------------------------------------- addmm


@pytest.mark.parametrize("bias_shape", [(7,), (1, 7), (5, 1), (5, 7), ()])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 1.5), (2, 0)])
def test_addmm(bias_shape, beta, alpha):
    bias = vals(bias_shape, torch.float32, 15)
    a, b = vals((5, 9), torch.float32, 16), vals((9, 7), torch.float32, 17)
    check(lambda s, x, y: torch.addmm(s, x, y, beta=beta, alpha=alpha), bias, a, b,
          **tol(torch.float32))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_addmm_dtypes(dtype):
    bias, a, b = vals((4, 6), dtype, 18), vals((4, 11), dtype, 19), vals((11, 6), dtype, 20)
    check(lambda s, x, y: torch.addmm(s, x, y, beta=2, alpha=3), bias, a, b, **tol(dtype))
    # Float scalars with integer tensors: truncated like the CPU's Scalar::to<int>().
    if not dtype.is_floating_point:
        check(lambda s, x, y: torch.addmm(s, x, y, beta=1.5, alpha=2.7), bias, a, b, **tol(dtype))


def test_addmm_beta_zero_ignores_nan_and_alpha_zero_skips_product():
    nan_bias = torch.full((3, 4), float("nan"))
    a, b = vals((3, 5), torch.float32, 21), vals((5, 4), torch.float32, 22)
    check(lambda s, x, y: torch.addmm(s, x, y, beta=0), nan_bias, a, b, **tol(torch.float32))
    inf_a = torch.full((3, 5), float("inf"))
    check(lambda s, x, y: torch.addmm(s, x, y, alpha=0, beta=0.5), vals((3, 4), torch.float32, 23),
          inf_a, b, **tol(torch.float32))


def test_addmm_k_zero():
    bias = vals((3, 4), torch.float32, 24)
    check(lambda s, x, y: torch.addmm(s, x, y, beta=2.5), bias, torch.randn(3, 0), torch.randn(0, 4))
    check(lambda s, x, y: torch.addmm(s, x, y, beta=0), bias, torch.randn(3, 0), torch.randn(0, 4))


def test_addmm_inplace_and_out():
    bias, a, b = vals((5, 7), torch.float32, 25), vals((5, 3), torch.float32, 26), vals((3, 7), torch.float32, 27)
    check(lambda s, x, y: s.addmm_(x, y, beta=0.5, alpha=2), bias, a, b, **tol(torch.float32))
    check(lambda s, x, y: s.t().addmm_(y.t(), x.t()), bias, a, b, **tol(torch.float32))
    check(lambda s, x, y, o: torch.addmm(s, x, y, out=o), bias, a, b, torch.empty(5, 7), **tol(torch.float32))
    # out aliasing the input.
    check(lambda s, x, y: torch.addmm(s, x, y, beta=-1, out=s), bias, a, b, **tol(torch.float32))
    # Broadcast 1-D input into an out tensor.
    check(lambda s, x, y, o: torch.addmm(s[0], x, y, out=o), bias, a, b, torch.empty(5, 7),
          **tol(torch.float32))
    # In place with a shape that the output does not have.
    check(lambda s, x, y: s[0].addmm_(x, y), bias, a, b)


# ---------------------------------------------------------------- bmm / baddbmm


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64])
def test_bmm(dtype):
    a, b = vals((4, 5, 7), dtype, 28), vals((4, 7, 3), dtype, 29)
    check(torch.bmm, a, b, **tol(dtype))
    check(lambda x, y: torch.bmm(x.transpose(1, 2).contiguous().transpose(1, 2), y.transpose(0, 1).contiguous().transpose(0, 1)),
          a, b, **tol(dtype))


def test_bmm_broadcast_and_strided_batches():
    a, b = vals((6, 5, 7), torch.float32, 30), vals((7, 3), torch.float32, 31)
    check(lambda x, y: torch.bmm(x[::2], y.expand(3, 7, 3)), a, b, **tol(torch.float32))
    check(lambda x, y: torch.bmm(x.permute(2, 0, 1)[:, :, :4], x.permute(2, 1, 0)[:, :4, :]), a, b,
          **tol(torch.float32))


def test_bmm_empty_and_out():
    check(torch.bmm, torch.randn(0, 2, 3), torch.randn(0, 3, 4))
    check(torch.bmm, torch.randn(2, 0, 3), torch.randn(2, 3, 4))
    check(torch.bmm, torch.randn(2, 2, 0), torch.randn(2, 0, 4))
    a, b = vals((3, 4, 5), torch.float32, 32), vals((3, 5, 2), torch.float32, 33)
    check(lambda x, y, o: torch.bmm(x, y, out=o), a, b, torch.empty(3, 4, 2), **tol(torch.float32))


@pytest.mark.parametrize("self_shape", [(3, 4, 6), (4, 6), (6,), (1, 4, 1)])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, -1)])
def test_baddbmm(self_shape, beta, alpha):
    s, a, b = vals(self_shape, torch.float32, 34), vals((3, 4, 5), torch.float32, 35), vals((3, 5, 6), torch.float32, 36)
    check(lambda z, x, y: torch.baddbmm(z, x, y, beta=beta, alpha=alpha), s, a, b, **tol(torch.float32))


def test_baddbmm_inplace_out_and_k_zero():
    s, a, b = vals((3, 4, 6), torch.float32, 37), vals((3, 4, 5), torch.float32, 38), vals((3, 5, 6), torch.float32, 39)
    check(lambda z, x, y: z.baddbmm_(x, y, beta=0.5, alpha=2), s, a, b, **tol(torch.float32))
    check(lambda z, x, y, o: torch.baddbmm(z, x, y, out=o), s, a, b, torch.empty(3, 4, 6), **tol(torch.float32))
    check(lambda z, x, y: torch.baddbmm(z, x, y, beta=3), s, torch.randn(3, 4, 0), torch.randn(3, 0, 6))
    nan = torch.full((3, 4, 6), float("nan"))
    check(lambda z, x, y: torch.baddbmm(z, x, y, beta=0), nan, a, b, **tol(torch.float32))


# ---------------------------------------------------------------- mv / addmv / dot


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64, torch.int8])
def test_mv_and_addmv(dtype):
    m, v, s = vals((7, 12), dtype, 40), vals((12,), dtype, 41), vals((7,), dtype, 42)
    check(torch.mv, m, v, **tol(dtype))
    check(lambda x, y: torch.mv(x.t(), y[:7]), m, v, **tol(dtype))
    check(lambda x, y: torch.mv(x[:, ::2], y[::2]), m, v, **tol(dtype))
    check(lambda z, x, y: torch.addmv(z, x, y, beta=2, alpha=-1), s, m, v, **tol(dtype))
    check(lambda z, x, y: torch.addmv(z[:1], x, y), s, m, v, **tol(dtype))
    check(lambda z, x, y: z.addmv_(x, y, beta=3), s, m, v, **tol(dtype))


def test_mv_addmv_out_and_empty():
    m, v, s = vals((7, 12), torch.float32, 43), vals((12,), torch.float32, 44), vals((7,), torch.float32, 45)
    check(lambda x, y, o: torch.mv(x, y, out=o), m, v, torch.empty(7), **tol(torch.float32))
    check(lambda x, y, o: torch.mv(x, y, out=o), m, v, torch.empty(0), **tol(torch.float32))
    check(lambda z, x, y, o: torch.addmv(z, x, y, out=o), s, m, v, torch.empty(7), **tol(torch.float32))
    check(torch.mv, torch.randn(3, 0), torch.randn(0))
    check(torch.mv, torch.randn(0, 3), torch.randn(3))
    check(lambda z, x, y: torch.addmv(z, x, y, beta=2), s[:3], torch.randn(3, 0), torch.randn(0))
    nan = torch.full((7,), float("nan"))
    check(lambda z, x, y: torch.addmv(z, x, y, beta=0), nan, m, v, **tol(torch.float32))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_dot(dtype):
    a, b = vals((37,), dtype, 46), vals((37,), dtype, 47)
    check(torch.dot, a, b, **tol(dtype))
    check(lambda x, y: torch.dot(x[::3], y[1::3]), a, b, **tol(dtype))
    check(lambda x, y: x @ y, a, b, **tol(dtype))


def test_dot_out_empty_and_long():
    a, b = vals((20,), torch.float32, 48), vals((20,), torch.float32, 49)
    check(lambda x, y, o: torch.dot(x, y, out=o), a, b, torch.empty(()), **tol(torch.float32))
    check(torch.dot, torch.randn(0), torch.randn(0))
    # Long vectors take the split-k path.
    a, b = vals((10000,), torch.float32, 50), vals((10000,), torch.float32, 51)
    check(torch.dot, a, b, atol=1e-3, rtol=1e-4)
    m = vals((3, 9000), torch.float32, 52)
    check(torch.mv, m, b[:9000], atol=1e-3, rtol=1e-4)


# ---------------------------------------------------------------- matmul and linear


MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((2, 1, 2, 3), (5, 3, 4)),
    ((2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)), ((0, 2, 3), (3, 4)), ((2, 0), (0, 3)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_broadcasting_native(sa, sb, strict_native):
    a, b = vals(sa, torch.float32, 53), vals(sb, torch.float32, 54)
    check(torch.matmul, a, b, **tol(torch.float32))


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES[:12])
def test_matmul_backward_native(sa, sb, strict_native):
    a, b = vals(sa, torch.float32, 55), vals(sb, torch.float32, 56)

    def grads(x, y):
        x = x.clone().requires_grad_()
        y = y.clone().requires_grad_()
        torch.matmul(x, y).sum().backward()
        return x.grad, y.grad

    check(grads, a, b, **tol(torch.float32))


def test_composites_native(strict_native):
    a, b, v, w = (vals((3, 4), torch.float32, 61), vals((4, 5), torch.float32, 62),
                  vals((4,), torch.float32, 63), vals((3,), torch.float32, 64))
    t = tol(torch.float32)
    check(torch.outer, v, w, **t)
    check(torch.inner, a, a, **t)
    check(torch.vdot, v, v, **t)
    check(lambda x, y, o: torch.vdot(x, y, out=o), v, v, torch.empty(()), **t)
    check(lambda x, y: torch.einsum("ij,jk->ik", x, y), a, b, **t)
    check(lambda x, y: torch.einsum("bij,bkj->bik", x, y), vals((2, 3, 4), torch.float32, 65),
          vals((2, 5, 4), torch.float32, 66), **t)
    check(lambda x, y: torch.tensordot(x, y, dims=1), a, b, **t)
    check(lambda x, y: torch.linalg.multi_dot([x, y, y.t()]), a, b, **t)
    check(lambda x, y, o: torch.matmul(x, y, out=o), a, b, torch.empty(3, 5), **t)


def test_matmul_errors():
    check(torch.matmul, torch.tensor(2.0), torch.randn(3, 4))
    check(torch.matmul, torch.randn(2, 3), torch.randn(4, 5))
    check(torch.matmul, torch.randn(3), torch.randn(4))


@pytest.mark.parametrize("input_shape", [(4, 7), (2, 3, 7), (7,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_forward_backward_native(input_shape, bias, strict_native):
    torch.manual_seed(0)
    layer = torch.nn.Linear(7, 5, bias=bias)
    layer_vk = torch.nn.Linear(7, 5, bias=bias).to(VK)
    layer_vk.load_state_dict(layer.state_dict())
    x = vals(input_shape, torch.float32, 57)
    x_vk = x.to(VK).requires_grad_()
    x.requires_grad_()
    y, y_vk = layer(x), layer_vk(x_vk)
    torch.testing.assert_close(y_vk.cpu(), y, **tol(torch.float32))
    y.sum().backward()
    y_vk.sum().backward()
    torch.testing.assert_close(x_vk.grad.cpu(), x.grad, **tol(torch.float32))
    torch.testing.assert_close(layer_vk.weight.grad.cpu(), layer.weight.grad, **tol(torch.float32))
    if bias:
        torch.testing.assert_close(layer_vk.bias.grad.cpu(), layer.bias.grad, **tol(torch.float32))


def test_functional_linear_half(strict_native):
    x, w, b = vals((3, 8), torch.float16, 58), vals((4, 8), torch.float16, 59), vals((4,), torch.float16, 60)
    check(F.linear, x, w, b, **tol(torch.float16))


# ---------------------------------------------------------------- errors


def test_shape_errors():
    check(torch.mm, torch.randn(2, 3), torch.randn(4, 5))
    check(torch.mm, torch.randn(3), torch.randn(3, 5))
    check(torch.addmm, torch.randn(3), torch.randn(2, 3), torch.randn(3, 5))
    check(torch.addmm, torch.randn(2, 5), torch.randn(2, 3), torch.randn(3))
    check(torch.bmm, torch.randn(2, 2, 3), torch.randn(3, 3, 4))
    check(torch.bmm, torch.randn(2, 3), torch.randn(2, 3, 4))
    check(torch.baddbmm, torch.randn(3, 4), torch.randn(2, 2, 3), torch.randn(2, 3, 4))
    check(torch.mv, torch.randn(2, 3), torch.randn(4))
    check(torch.mv, torch.randn(2, 3), torch.randn(3, 1))
    check(torch.addmv, torch.randn(3), torch.randn(2, 3), torch.randn(3))
    check(torch.dot, torch.randn(3), torch.randn(4))
    check(torch.dot, torch.randn(3, 1), torch.randn(3))
    check(lambda s, x, y: s.addmm_(x, y), torch.randn(3), torch.randn(2, 3), torch.randn(3, 3))


def test_dtype_errors():
    a = torch.randn(2, 3)
    check(torch.mm, a, torch.randn(3, 5).half())
    check(torch.addmm, torch.randn(5).half(), a, torch.randn(3, 5))
    check(torch.bmm, torch.randn(2, 2, 3), torch.randn(2, 3, 4).half())
    check(torch.baddbmm, torch.randn(2, 2, 4).half(), torch.randn(2, 2, 3), torch.randn(2, 3, 4))
    check(torch.mv, a, torch.randn(3).half())
    check(torch.dot, torch.randn(3), torch.randn(3).half())
    check(lambda x, y, o: torch.dot(x, y, out=o), torch.randn(3), torch.randn(3), torch.empty((), dtype=torch.int32))
    check(lambda x, y, o: torch.addmm(o, x, y, out=o), a, torch.randn(3, 5), torch.empty(2, 5).half())


@pytest.mark.parametrize("fn,shapes", [
    (torch.mm, [(2, 3), (3, 4)]), (torch.bmm, [(2, 2, 3), (2, 3, 4)]), (torch.mv, [(2, 3), (3,)]),
    (torch.dot, [(3,), (3,)]), (torch.addmm, [(2, 4), (2, 3), (3, 4)]),
])
def test_bool_not_implemented(fn, shapes):
    args = [torch.rand(s) > 0.5 for s in shapes]
    with pytest.raises(NotImplementedError):
        fn(*args)
    with pytest.raises(NotImplementedError):
        fn(*[x.to(VK) for x in args])


def test_device_mismatch():
    with pytest.raises(RuntimeError):
        torch.mm(torch.randn(2, 3).to(VK), torch.randn(3, 4))
    with pytest.raises(RuntimeError):
        torch.addmm(torch.randn(4), torch.randn(2, 3).to(VK), torch.randn(3, 4).to(VK))
    with pytest.raises(RuntimeError):
        torch.dot(torch.randn(3).to(VK), torch.randn(3), out=torch.empty((), device=VK))
