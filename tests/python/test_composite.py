"""Native composites (src/aten/ops_composite.cpp) against PyTorch's CPU: nansum / nanmean,
trace, aminmax, glu (+ glu_backward), addbmm, channel_shuffle. Every dtype the CPU offers,
non-contiguous layouts, empty and 0-dim inputs, out= / in-place overloads, autograd and bad
input (same exception type as the CPU)."""
import pytest
import torch
import torch.nn.functional as F

from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INT_DTYPES = [torch.int32, torch.int64, torch.int8, torch.uint8]


def with_nans(x):
    """x with a NaN in every other element of its first row (floating dtypes only)."""
    x = x.clone()
    if x.dim() >= 1 and x.numel() > 0:
        x.view(x.shape[0], -1)[0, ::2] = float("nan")
    return x


def grads(fn, *tensors):
    """d(sum(fn(*tensors) * w)) / d tensors, for a fixed weighting w: the autograd path."""
    def run(*ts):
        ts = [t.detach().requires_grad_(True) for t in ts]
        out = fn(*ts)
        w = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape).to(out.device)
        return torch.autograd.grad((out * w).sum(), ts)
    return run


# ---------------------------------------------------------------- nansum / nanmean

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_nansum_float(dtype):
    x = with_nans(make((4, 3, 5), dtype))
    for _, layout in layouts(x):
        check(lambda a: torch.nansum(layout(a)), x)
        for dim in (0, 2, -1, (0, 2), []):
            for keepdim in (False, True):
                check(lambda a: torch.nansum(layout(a), dim, keepdim=keepdim), x)
                check(lambda a: torch.nanmean(layout(a), dim, keepdim=keepdim), x)
    check(lambda a: torch.nansum(a, 1, dtype=torch.float64), x)


@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.bool], ids=str)
def test_nansum_integer(dtype):
    x = make((4, 6), dtype)
    check(lambda a: torch.nansum(a), x)
    check(lambda a: torch.nansum(a, 1, keepdim=True), x)
    check(lambda a: torch.nansum(a, 0, dtype=torch.int32), x)
    check(lambda a: torch.nanmean(a), x)                 # error: integer nanmean


def test_nansum_edge_cases_out_and_backward():
    check(lambda a: torch.nansum(a), torch.tensor(float("nan")))
    check(lambda a: torch.nansum(a, 0), torch.tensor(2.5))
    check(lambda a: torch.nansum(a), make((0, 3), torch.float32))
    check(lambda a: torch.nansum(a, 0), make((0, 3), torch.float32))
    check(lambda a: torch.nanmean(a, 0), make((0, 3), torch.float32))   # NaN
    check(lambda a: torch.nansum(a, 2), make((3, 4), torch.float32))    # error: dim out of range
    x = with_nans(make((3, 4), torch.float32))
    check(lambda a: torch.nansum(a, 1, out=torch.empty(3, device=a.device)), x)
    check(lambda a: torch.nansum(a, 1, out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch.nansum(a, 1, out=torch.empty(3, dtype=torch.int64, device=a.device)), x)
    check(lambda a: torch.nansum(a, 1, dtype=torch.int64), make((3, 4), torch.float32))
    check(lambda a: torch.nansum(a, 1, out=torch.empty(3, dtype=torch.float16, device=a.device)), x)
    check(grads(lambda a: torch.nansum(a, 1)), x)
    check(grads(lambda a: torch.nanmean(a, 0)), x)


# ---------------------------------------------------------------- trace

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool], ids=str)
def test_trace(dtype):
    for shape in ((4, 4), (3, 5), (6, 2), (0, 3)):
        x = make(shape, dtype)
        for _, layout in layouts(x):
            check(lambda a: torch.trace(layout(a)), x)


def test_trace_errors_and_backward():
    check(lambda a: torch.trace(a), make((2, 3, 4), torch.float32))    # error: not a matrix
    check(lambda a: torch.trace(a), make((4,), torch.float32))
    check(lambda a: torch.trace(a), make((), torch.float32))
    check(grads(lambda a: torch.trace(a)), make((3, 5), torch.float32))


# ---------------------------------------------------------------- aminmax

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool], ids=str)
def test_aminmax(dtype):
    x = make((4, 3, 5), dtype)
    if dtype.is_floating_point:
        x = with_nans(x)[1:]                             # one row of NaNs propagates, others not
    for _, layout in layouts(x):
        check(lambda a: torch.aminmax(layout(a)), x)
        check(lambda a: torch.aminmax(layout(a), keepdim=True), x)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                check(lambda a: torch.aminmax(layout(a), dim=dim, keepdim=keepdim), x)


def test_aminmax_edge_cases_out_and_backward():
    check(lambda a: torch.aminmax(a), make((), torch.float32))
    check(lambda a: torch.aminmax(a, dim=0), make((), torch.float32))
    check(lambda a: torch.aminmax(a, dim=1), make((0, 3), torch.float32))
    check(lambda a: torch.aminmax(a, dim=0), make((0, 3), torch.float32))  # error: empty dim
    check(lambda a: torch.aminmax(a), make((0, 3), torch.float32))         # error: no identity
    check(lambda a: torch.aminmax(a, dim=2), make((3, 4), torch.float32))  # error: dim range
    x = make((3, 4), torch.float32)
    check(lambda a: torch.aminmax(a, dim=1, out=(torch.empty(3, device=a.device),
                                                 torch.empty(0, device=a.device))), x)
    check(lambda a: torch.aminmax(a, dim=1, out=(torch.empty(3, dtype=torch.int64, device=a.device),
                                                 torch.empty(3, device=a.device))), x)  # error
    check(grads(lambda a: torch.stack(torch.aminmax(a, dim=1))), x)


# ---------------------------------------------------------------- glu

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_glu(dtype):
    x = make((4, 6, 2), dtype)
    for _, layout in layouts(x):
        for dim in (0, 1, -1):
            check(lambda a: F.glu(layout(a), dim), x)
            check(grads(lambda a: F.glu(layout(a), dim)), x)
    g = make((2, 6, 2), dtype, seed=1)
    check(lambda gg, a: torch.ops.aten.glu_backward(gg, a, 0), g, x)


def test_glu_edge_cases_out_and_errors():
    check(lambda a: F.glu(a, 0), make((0, 4), torch.float32))
    check(lambda a: F.glu(a, 1), make((0, 4), torch.float32))
    check(lambda a: F.glu(a), make((), torch.float32))                # error: scalar
    check(lambda a: F.glu(a, 0), make((3, 4), torch.float32))         # error: odd dimension
    check(lambda a: F.glu(a, 2), make((3, 4), torch.float32))         # error: dim range
    check(lambda a: F.glu(a), make((3, 4), torch.int64))              # error: NotImplementedError
    x = make((3, 4), torch.float32)
    check(lambda a: torch._C._nn.glu(a, 1, out=torch.empty(3, 2, device=a.device)), x)
    check(lambda a: torch._C._nn.glu(a, 1, out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch._C._nn.glu(a, 1, out=torch.empty(3, 2, dtype=torch.int64, device=a.device)), x)
    g = make((3, 2), torch.float32, seed=2)
    check(lambda gg, a: torch.ops.aten.glu_backward.grad_input(
        gg, a, 1, grad_input=torch.empty(0, device=a.device)), g, x)
    check(lambda gg, a: torch.ops.aten.glu_backward(gg, a, 0), g, x)  # error: odd dimension


# ---------------------------------------------------------------- addbmm

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int32, torch.int64], ids=str)
def test_addbmm(dtype):
    tol = dict(atol=1e-2, rtol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    if dtype == torch.bfloat16:
        tol = dict(atol=5e-2, rtol=2e-2)
    s, b1, b2 = make((3, 5), dtype), make((4, 3, 6), dtype, seed=1), make((4, 6, 5), dtype, seed=2)
    for _, layout in layouts(b1):
        check(lambda x, p, q: torch.addbmm(x, layout(p), q), s, b1, b2, **tol)
    check(lambda x, p, q: torch.addbmm(x, p, q.transpose(1, 2).contiguous().transpose(1, 2)), s, b1, b2, **tol)
    if dtype.is_floating_point:
        check(lambda x, p, q: torch.addbmm(x, p, q, beta=0.5, alpha=-2.0), s, b1, b2, **tol)
    else:
        check(lambda x, p, q: torch.addbmm(x, p, q, beta=2, alpha=3), s, b1, b2, **tol)
    check(lambda x, p, q: torch.addbmm(x[0], p, q), s, b1, b2, **tol)          # broadcast self
    check(lambda x, p, q: x.addbmm_(p, q), s, b1, b2, **tol)


def test_addbmm_edge_cases_out_errors_and_backward():
    s, b1, b2 = make((3, 5), torch.float32), make((4, 3, 6), torch.float32), make((4, 6, 5), torch.float32)
    nan_self = torch.full((3, 5), float("nan"))
    check(lambda x, p, q: torch.addbmm(x, p, q, beta=0), nan_self, b1, b2)   # beta=0 ignores NaN
    check(lambda x, p, q: torch.addbmm(x, p, q), s, b1[:0], b2[:0])          # zero batches
    check(lambda x, p, q: torch.addbmm(x, p, q, beta=0), nan_self, b1[:0], b2[:0])
    check(lambda x, p, q: torch.addbmm(x, p, q), s, b1[:, :, :0], b2[:, :0])  # k = 0
    check(lambda x, p, q: torch.addbmm(x, p, q, out=torch.empty(3, 5, device=x.device)), s, b1, b2)
    check(lambda x, p, q: torch.addbmm(x, p, q, out=torch.empty(0, device=x.device)), s, b1, b2)
    check(lambda x, p, q: torch.addbmm(x, p, q), s, b1[0], b2)               # error: batch1 2-D
    check(lambda x, p, q: torch.addbmm(x, p, q), s, b1, b2[:3])              # error: batches
    check(lambda x, p, q: torch.addbmm(x, p, q), s, b1, b2[:, :5])           # error: k
    check(lambda x, p, q: torch.addbmm(x, p, q), s[:, :4], b1, b2)           # error: self shape
    check(lambda x, p, q: x.addbmm_(p, q), s[:1], b1, b2)                    # self grows (as CPU)
    check(lambda x, p, q: x.addbmm_(p, q), s[:2], b1, b2)                    # error: not expandable
    check(lambda x, p, q: torch.addbmm(x, p, q), s, b1, b2.double())         # error: dtypes
    check(grads(lambda x, p, q: torch.addbmm(x, p, q, beta=0.5, alpha=2.0)), s, b1, b2)


# ---------------------------------------------------------------- channel_shuffle

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool], ids=str)
def test_channel_shuffle(dtype):
    x = make((2, 6, 3, 2), dtype)
    for _, layout in layouts(x):
        for groups in (1, 2, 3, 6):
            check(lambda a: F.channel_shuffle(layout(a), groups), x)
    check(lambda a: F.channel_shuffle(a, 2), make((2, 4, 5), dtype))
    check(lambda a: F.channel_shuffle(a, 3), make((1, 6, 2, 2, 2), dtype))


def test_channel_shuffle_edge_cases_errors_and_backward():
    x = make((2, 6, 3, 4), torch.float32)
    out = check(lambda a: F.channel_shuffle(a.contiguous(memory_format=torch.channels_last), 3), x)
    check(lambda a: F.channel_shuffle(a.contiguous(memory_format=torch.channels_last), 3).stride(), x)
    check(lambda a: F.channel_shuffle(a, 3).data_ptr() == a.data_ptr(), x)      # a new tensor
    check(lambda a: F.channel_shuffle(a, 1).data_ptr() == a.data_ptr(), x)
    check(lambda a: F.channel_shuffle(a, 2), make((0, 4, 3), torch.float32))
    check(lambda a: F.channel_shuffle(a, 2), make((4, 6), torch.float32))      # error: 2-D
    check(lambda a: F.channel_shuffle(a, 4), x)                                # error: 6 % 4
    check(lambda a: F.channel_shuffle(a, 0), x)                                # error: groups 0
    check(lambda a: F.channel_shuffle(a, -2), x)
    check(lambda a: torch.native_channel_shuffle(a, 3), x)
    check(grads(lambda a: F.channel_shuffle(a, 3)), x)
    assert out is not None


# ---------------------------------------------------------------- im2col / col2im (unfold / fold)

UNFOLD_CASES = [  # kernel_size, dilation, padding, stride
    ((2, 3), 1, 0, 1),
    (3, (2, 1), (1, 2), (2, 1)),
    ((1, 1), 1, 0, 2),
    (2, 1, 1, 3),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_unfold_fold(dtype):
    x = make((2, 3, 7, 6), dtype)
    for k, d, p, s in UNFOLD_CASES:
        for _, layout in layouts(x):
            check(lambda a: F.unfold(layout(a), k, d, p, s), x)
        check(lambda a: F.unfold(a, k, d, p, s), x[0])                      # unbatched
        cols = F.unfold(x.double(), k, d, p, s).to(dtype)
        for _, layout in layouts(cols):
            check(lambda a: F.fold(layout(a), (7, 6), k, d, p, s), cols)
        check(lambda a: F.fold(a, (7, 6), k, d, p, s), cols[0])            # unbatched
    check(grads(lambda a: F.unfold(a, (2, 3), 1, 1, (2, 1))), x)
    cols = F.unfold(x, 2, 1, 0, 1)
    check(grads(lambda a: F.fold(a, (7, 6), 2, 1, 0, 1)), cols)


def test_unfold_fold_edge_cases_and_errors():
    x = make((2, 3, 5, 5), torch.float32)
    check(lambda a: F.unfold(a, 2), make((0, 3, 5, 5), torch.float32))
    check(lambda a: F.fold(a, (5, 5), 2), make((0, 12, 16), torch.float32))
    check(lambda a: F.unfold(a, 6), x)                                   # error: window too big
    check(lambda a: F.unfold(a, 0), x)                                   # error: kernel 0
    check(lambda a: F.unfold(a, 2, stride=0), x)                         # error: stride 0
    check(lambda a: F.unfold(a, 2), make((5, 5), torch.float32))         # error: 2-D
    check(lambda a: torch.ops.aten.im2col(a, [2, 2], [1, 1], [0, 0], [1, 1]),
          make((2, 3, 5, 5), torch.int64))                               # error: NotImplementedError
    cols = make((2, 12, 16), torch.float32)
    check(lambda a: F.fold(a, (5, 5), 2), cols)
    check(lambda a: F.fold(a, (5, 5), 3), cols)                          # error: C*kh*kw
    check(lambda a: F.fold(a, (6, 5), 2), cols)                          # error: block count
    check(lambda a: torch.ops.aten.col2im(a, [5, 5], [2, 2], [1, 1], [0, 0], [1, 1]),
          make((2, 12, 16), torch.int64))                                # error: NotImplementedError
