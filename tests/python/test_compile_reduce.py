"""torch.compile on vk: reductions fused with the pointwise work around them.

A sum / mean / amax / amin whose input comes from a pointwise group is one generated kernel
(torch_vk/compiler/reduction.py): it evaluates the chain per element, stores the values other
nodes read, and reduces. keepdim reductions whose results pointwise work reads back over the
reduced dims (softmax, log-softmax, layer norm, RMSNorm by hand) are one row kernel with all
their reductions and pointwise ops (torch_vk/compiler/rows.py). Results are compared with
eager vk and with the CPU; dispatch counts are the steady-state (replayed) compiled call's.
"""
import sys

import pytest
import torch
import torch.nn as nn
from torch.testing import assert_close

import torch_vk
import torch_vk.compiler

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from helpers import make  # noqa: E402
from test_compile import _dispatches  # noqa: E402

VK = torch.device("vk")

TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3),
             torch.bfloat16: (1.6e-2, 1.6e-2)}
FLOATS = [torch.float32, torch.float16, torch.bfloat16]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _to_cpu(out):
    if isinstance(out, (tuple, list)):
        return type(out)(_to_cpu(o) for o in out)
    return out.cpu() if isinstance(out, torch.Tensor) else out


def _compiled_matches_eager(fn, *args, dtype=torch.float32, reductions=None, row_kernels=None):
    """Runs fn eagerly and compiled (three calls: run, capture, replay); compares with eager vk
    (dtype tolerance) and the CPU (10x). Returns (compiled out, eager dispatches, compiled
    dispatches). `reductions` / `row_kernels`: the number of fused reductions / row kernels
    compiling must create."""
    compiled = torch.compile(fn)
    before = torch_vk.compiler.stats()["fused_reductions"]
    rows_before = torch_vk.compiler.stats()["row_kernels"]
    with torch.no_grad():
        expected, eager_count = _dispatches(fn, *args)
        compiled(*args)
        compiled(*args)
        out, compiled_count = _dispatches(compiled, *args)
    created = torch_vk.compiler.stats()["fused_reductions"] - before
    if reductions is not None:
        assert created == reductions
    if row_kernels is not None:
        assert torch_vk.compiler.stats()["row_kernels"] - rows_before == row_kernels
    atol, rtol = TOLERANCE[dtype]
    assert_close(_to_cpu(out), _to_cpu(expected), atol=atol, rtol=rtol, equal_nan=True)
    cpu = fn(*(a.cpu() if isinstance(a, torch.Tensor) else a for a in args))
    assert_close(_to_cpu(out), cpu, atol=atol * 10, rtol=rtol * 10, equal_nan=True)
    return out, eager_count, compiled_count


def _train_both(eager_model, compiled_model, step, x, y, steps=3):
    """`steps` SGD steps of the squared-error loss, eager and through the compiled `step`:
    losses and gradients must agree at every step."""
    for _ in range(steps):
        losses, grads = [], []
        for model, fn in ((eager_model, lambda m, a, b: ((m(a) - b) ** 2).mean()),
                          (compiled_model, step)):
            model.zero_grad()
            loss = fn(model, x, y)
            loss.backward()
            losses.append(loss.detach().cpu())
            grads.append([p.grad.cpu() for p in model.parameters()])
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
        assert_close(losses[1], losses[0], atol=1e-5, rtol=1e-5)
        for g_compiled, g_eager in zip(grads[1], grads[0]):
            assert_close(g_compiled, g_eager, atol=1e-5, rtol=1e-4)


def rms_norm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdim=True)
    return centered / torch.sqrt(var + eps) * w + b


def softmax(x, dim=-1):
    shifted = torch.exp(x - x.amax(dim, keepdim=True))
    return shifted / shifted.sum(dim, keepdim=True)


def log_softmax(x):
    shifted = x - x.amax(-1, keepdim=True)
    return shifted - torch.log(torch.exp(shifted).sum(-1, keepdim=True))


# ---------------------------------------------------------------- models by hand


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm_forward_is_one_dispatch(dtype, strict_native):
    x, w = make((3, 5, 48), dtype).to(VK), make((48,), dtype, seed=1).to(VK)
    _, eager, compiled = _compiled_matches_eager(rms_norm, x, w, dtype=dtype, reductions=0,
                                                 row_kernels=1)
    assert (eager, compiled) == (6, 1)  # pow, mean, add, rsqrt, mul, mul -> one row kernel


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, dim))

    def forward(self, x):
        return rms_norm(x, self.weight)


def test_rms_norm_training_step_matches_eager(strict_native):
    torch.manual_seed(0)
    eager_model = nn.Sequential(nn.Linear(24, 32), RMSNorm(32), nn.Linear(32, 8)).to(VK)
    compiled_model = nn.Sequential(nn.Linear(24, 32), RMSNorm(32), nn.Linear(32, 8)).to(VK)
    compiled_model.load_state_dict(eager_model.state_dict())
    step = torch.compile(lambda model, x, y: ((model(x) - y) ** 2).mean())
    x, y = make((6, 24), torch.float32).to(VK), make((6, 8), torch.float32, seed=1).to(VK)
    before = torch_vk.compiler.stats()["fused_reductions"]
    rows_before = torch_vk.compiler.stats()["row_kernels"]
    _train_both(eager_model, compiled_model, step, x, y)
    # forward: the RMSNorm (row kernel); backward: the bias gradient of the last Linear with
    # the loss gradient (fused reduction) and the RMSNorm input gradient (row kernel: its row
    # sums read back through expand)
    assert torch_vk.compiler.stats()["fused_reductions"] - before >= 1
    assert torch_vk.compiler.stats()["row_kernels"] - rows_before >= 2
    for p_compiled, p_eager in zip(compiled_model.parameters(), eager_model.parameters()):
        assert_close(p_compiled.detach().cpu(), p_eager.detach().cpu(), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm_by_hand(dtype, strict_native):
    x = make((4, 6, 40), dtype).to(VK)
    w, b = make((40,), dtype, seed=1).to(VK), make((40,), dtype, seed=2).to(VK)
    _, eager, compiled = _compiled_matches_eager(layer_norm, x, w, b, dtype=dtype, reductions=0,
                                                 row_kernels=1)
    # mean, sub, mul, mean, add, sqrt, div, mul, add -> one row kernel (two reduction passes)
    assert (eager, compiled) == (9, 1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_by_hand(dtype, strict_native):
    x = make((5, 7, 33), dtype, low=-8, high=8).to(VK)
    _, eager, compiled = _compiled_matches_eager(softmax, x, dtype=dtype, reductions=0,
                                                 row_kernels=1)
    # amax, sub, exp, sum, div -> one row kernel
    assert (eager, compiled) == (5, 1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_log_softmax_by_hand(dtype, strict_native):
    x = make((6, 45), dtype, low=-8, high=8).to(VK)
    _, eager, compiled = _compiled_matches_eager(log_softmax, x, dtype=dtype, reductions=0,
                                                 row_kernels=1)
    # amax, sub, exp, sum, log, sub -> one row kernel
    assert (eager, compiled) == (6, 1)


class LayerNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, dim))
        self.bias = nn.Parameter(torch.linspace(-0.2, 0.3, dim))

    def forward(self, x):
        return layer_norm(x, self.weight, self.bias)


def test_layer_norm_training_step_matches_eager(strict_native):
    torch.manual_seed(0)
    eager_model = nn.Sequential(nn.Linear(24, 40), LayerNorm(40), nn.Linear(40, 8)).to(VK)
    compiled_model = nn.Sequential(nn.Linear(24, 40), LayerNorm(40), nn.Linear(40, 8)).to(VK)
    compiled_model.load_state_dict(eager_model.state_dict())
    step = torch.compile(lambda model, x, y: ((model(x) - y) ** 2).mean())
    x, y = make((6, 24), torch.float32).to(VK), make((6, 8), torch.float32, seed=1).to(VK)
    before = torch_vk.compiler.stats()["row_kernels"]
    _train_both(eager_model, compiled_model, step, x, y)
    # the forward's layer norm; the backward's input gradient (its row sums read back through
    # expand)
    assert torch_vk.compiler.stats()["row_kernels"] - before >= 2
    for p_compiled, p_eager in zip(compiled_model.parameters(), eager_model.parameters()):
        assert_close(p_compiled.detach().cpu(), p_eager.detach().cpu(), atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------- row kernels


@pytest.mark.parametrize("dtype", FLOATS)
def test_rows_longer_than_the_workgroup(dtype, strict_native):
    x = make((3, 1000), dtype, low=-4, high=4).to(VK)   # 1000 > 256 invocations: loops
    w, b = make((1000,), dtype, seed=1).to(VK), make((1000,), dtype, seed=2).to(VK)
    for fn, args in ((softmax, (x,)), (log_softmax, (x,)), (layer_norm, (x, w, b)),
                     (rms_norm, (x, w))):
        _, _, compiled = _compiled_matches_eager(fn, *args, dtype=dtype, row_kernels=1)
        assert compiled == 1


def test_row_kernel_on_non_contiguous_inputs(strict_native):
    base = make((6, 40, 12), torch.float32, low=-4, high=4).to(VK)
    transposed = base.transpose(1, 2)        # (6, 12, 40): the reduced dim is strided by 12
    sliced = base[:, ::3, 1:]                # gaps and a storage offset
    w = make((40,), torch.float32, seed=1).to(VK)
    b = make((40,), torch.float32, seed=2).to(VK)
    for fn, args in ((softmax, (transposed,)), (log_softmax, (sliced,)),
                     (layer_norm, (transposed, w, b)), (rms_norm, (transposed, w))):
        _, _, compiled = _compiled_matches_eager(fn, *args, row_kernels=1)
        assert compiled == 1
    # Reduced dims that are not the last one.
    _, _, compiled = _compiled_matches_eager(lambda x: softmax(x, dim=1), base, row_kernels=1)
    assert compiled == 1
    _, _, compiled = _compiled_matches_eager(
        lambda x: x - x.mean([0, 2], keepdim=True), sliced, row_kernels=1)
    assert compiled == 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_of_fully_masked_rows_is_nan_like_eager(dtype, strict_native):
    x = make((4, 70), dtype, low=-8, high=8)
    x[1] = float("-inf")
    x[2, :35] = float("-inf")
    x = x.to(VK)
    out, _, _ = _compiled_matches_eager(softmax, x, dtype=dtype, row_kernels=1)
    out = out.float().cpu()
    assert torch.isnan(out[1]).all() and not torch.isnan(out[[0, 2, 3]]).any()
    assert (out[2, :35] == 0).all()


def test_values_read_outside_the_row_kernel_are_stored(strict_native):
    x = make((5, 36), torch.float32).to(VK)
    w, b = make((36,), torch.float32, seed=1).to(VK), make((36,), torch.float32, seed=2).to(VK)

    def fn(x, w, b):
        mean = x.mean(-1, keepdim=True)                 # a reduction result
        centered = x - mean                             # a full-row value
        rstd = torch.rsqrt((centered * centered).mean(-1, keepdim=True) + 1e-5)  # a row value
        return centered * rstd * w + b, mean, centered, rstd

    out, eager, compiled = _compiled_matches_eager(fn, x, w, b, row_kernels=1)
    assert compiled == 1 and [o.shape for o in out] == [(5, 36), (5, 1), (5, 36), (5, 1)]


def test_norms_in_sequence_are_one_row_kernel(strict_native):
    x, w = make((5, 36), torch.float32).to(VK), make((36,), torch.float32, seed=1).to(VK)
    # mean of squares, then amax and sum of the normalised rows: three reduction passes
    _, eager, compiled = _compiled_matches_eager(lambda x, w: softmax(rms_norm(x, w) * 3.0), x, w,
                                                 row_kernels=1)
    assert (eager, compiled) == (12, 1)


def test_member_reading_a_product_of_the_row_kernel_stays_outside(strict_native):
    x, w = make((5, 36), torch.float32).to(VK), make((36,), torch.float32, seed=1).to(VK)
    weight = make((36, 36), torch.float32, seed=3).to(VK)

    def fn(x, w, weight):
        h = rms_norm(x * 2.0, w)
        return h + h @ weight   # the add reads a matrix product of the row kernel's output

    _, eager, compiled = _compiled_matches_eager(fn, x, w, weight, row_kernels=1)
    assert (eager, compiled) == (9, 2)  # the row kernel, the product with the add as epilogue


def test_keepdim_false_reductions_viewed_back_over_the_rows(strict_native):
    x = make((5, 36), torch.float32).to(VK)
    _, eager, compiled = _compiled_matches_eager(
        lambda x: x / torch.exp(x).sum(-1).unsqueeze(-1), x, row_kernels=1)
    assert (eager, compiled) == (3, 1)
    _, eager, compiled = _compiled_matches_eager(lambda x: x - x.mean(-1).view(5, 1), x,
                                                 row_kernels=1)
    assert (eager, compiled) == (2, 1)
    # Without the view, a keepdim=False result broadcasts along the LAST dims (numpy rules),
    # not back over its rows: no row kernel, and the values stay right.
    square = make((6, 6), torch.float32).to(VK)
    _compiled_matches_eager(lambda x: x - (x * 2.0).amax(1), square, row_kernels=0)


def test_row_kernel_grid_loops_over_many_rows(strict_native):
    x = make((70000, 4), torch.float32, low=-4, high=4).to(VK)  # more rows than workgroups
    _, _, compiled = _compiled_matches_eager(softmax, x, row_kernels=1)
    assert compiled == 1


@pytest.mark.parametrize("shape", [(37,), (5, 1), (2, 3, 1)])
def test_row_kernel_on_a_single_row_and_rows_of_one(shape, strict_native):
    x = make(shape, torch.float32, low=-4, high=4).to(VK)
    _, eager, compiled = _compiled_matches_eager(softmax, x, row_kernels=1)
    assert (eager, compiled) == (5, 1)


def test_row_kernel_with_no_rows(strict_native):
    x, w = torch.empty((0, 16), device=VK), make((16,), torch.float32).to(VK)
    out, _, _ = _compiled_matches_eager(rms_norm, x, w, row_kernels=1)
    assert out.shape == (0, 16)


def test_row_kernel_geometry_it_was_not_traced_for_runs_the_eager_ops(strict_native):
    from torch.fx.experimental.proxy_tensor import make_fx

    from torch_vk.compiler.backend import op_table
    from torch_vk.compiler.fusion import fuse_pointwise

    gm = make_fx(lambda x: softmax(x), tracing_mode="fake")(torch.ones((3, 4), device=VK))
    fused, counts = fuse_pointwise(gm, op_table())
    assert counts.row_kernels == 1 and counts.reductions == 0
    for shape in ((3, 4), (2, 6)):   # traced geometry: the kernel; another: the ATen ops
        x = make(shape, torch.float32)
        assert_close(fused(x.to(VK)).cpu(), torch.softmax(x, -1), atol=1e-6, rtol=1e-5)


# ---------------------------------------------------------------- shapes and dims


@pytest.mark.parametrize("dtype", FLOATS)
def test_sum_of_a_product(dtype, strict_native):
    a, b = make((9, 70), dtype).to(VK), make((9, 70), dtype, seed=1).to(VK)
    _, eager, compiled = _compiled_matches_eager(lambda a, b: (a * b).sum(-1), a, b,
                                                 dtype=dtype, reductions=1)
    assert (eager, compiled) == (2, 1)


def test_sum_into_a_wider_dtype(strict_native):
    a, b = make((6, 50), torch.float16).to(VK), make((6, 50), torch.float16, seed=1).to(VK)
    out, _, compiled = _compiled_matches_eager(
        lambda a, b: (a * b).sum(-1, dtype=torch.float32), a, b, dtype=torch.float16,
        reductions=1)
    assert out.dtype == torch.float32 and compiled == 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_full_reduction(dtype, strict_native):
    x = make((37, 61), dtype).to(VK)   # 2257 elements: one workgroup loops over them
    _, eager, compiled = _compiled_matches_eager(lambda x: x.abs().sum(), x, dtype=dtype,
                                                 reductions=1)
    assert (eager, compiled) == (2, 1)
    _compiled_matches_eager(lambda x: (x * 0.5).mean(), x, dtype=dtype, reductions=1)
    _compiled_matches_eager(lambda x: (x - 1.0).amax(), x, dtype=dtype, reductions=1)


@pytest.mark.parametrize("keepdim", [False, True])
def test_middle_and_several_dims(keepdim, strict_native):
    x = make((4, 5, 6, 3), torch.float32).to(VK)
    cases = [
        lambda x: (x * 2.0 + 1.0).sum(1, keepdim=keepdim),
        lambda x: (x * x).mean([0, 2], keepdim=keepdim),
        lambda x: torch.sin(x).amax([-3, -1], keepdim=keepdim),
        lambda x: torch.cos(x).amin(dim=2, keepdim=keepdim),
        lambda x: (x + 3.0).sum([0, 1, 2, 3], keepdim=keepdim),
    ]
    for fn in cases:
        _, _, compiled = _compiled_matches_eager(fn, x, reductions=1)
        assert compiled == 1


def test_non_contiguous_inputs(strict_native):
    base = make((8, 12, 10), torch.float32).to(VK)
    w = make((12,), torch.float32, seed=1).to(VK)
    transposed = base.transpose(1, 2)            # (8, 10, 12), reduced dim strided by 10
    sliced = base[:, ::2, 1:]                    # gaps and a storage offset
    _compiled_matches_eager(lambda x, w: (x * w).sum(-1), transposed, w, reductions=1)
    _compiled_matches_eager(lambda x: torch.exp(x).sum(1, keepdim=True), sliced, reductions=1)
    _compiled_matches_eager(lambda x: (x - 0.5).amax(0), base.permute(2, 0, 1), reductions=1)
    expanded = make((1, 12, 1), torch.float32, seed=2).to(VK).expand(8, 12, 10)
    _compiled_matches_eager(lambda x, y: (x * y).mean(-1), expanded, base, reductions=1)


def test_prologue_value_read_elsewhere_is_stored(strict_native):
    x = make((6, 20), torch.float32).to(VK)

    def fn(x):
        y = torch.tanh(x) * 3.0
        return y, y.sum(-1), y.amax(-1)

    # Two reductions of the same rows: one row kernel (two passes) that also stores y.
    (y, total, peak), eager, compiled = _compiled_matches_eager(fn, x, reductions=0,
                                                                row_kernels=1)
    assert (eager, compiled) == (4, 1)

    def other_dims(x):
        y = torch.tanh(x) * 3.0
        return y, y.sum(-1), y.amax(0)   # the second reduction reads the stored y

    _, eager, compiled = _compiled_matches_eager(other_dims, x, reductions=1, row_kernels=0)
    assert (eager, compiled) == (4, 2)


def test_many_rows_loop_over_the_grid(strict_native):
    x = make((70000, 3), torch.float32).to(VK)  # more rows than workgroups in one dispatch
    _, _, compiled = _compiled_matches_eager(lambda x: (x * x).sum(-1), x, reductions=1)
    assert compiled == 1


# ---------------------------------------------------------------- special values


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_propagates_through_amax_and_amin(dtype, strict_native):
    x = make((5, 300), dtype)
    x[1, 7] = float("nan")
    x[3, 299] = float("nan")
    x[4, 0] = float("inf")
    x = x.to(VK)
    for fn in (lambda x: (x * 2.0).amax(-1), lambda x: (x * 2.0).amin(-1),
               lambda x: (x + 1.0).amax(), lambda x: (x - 1.0).sum(-1)):
        out, _, _ = _compiled_matches_eager(fn, x, dtype=dtype, reductions=1)
        if out.dim():
            assert torch.isnan(out.cpu()[[1, 3]]).all() and not torch.isnan(out.cpu()[0])
        else:
            assert torch.isnan(out.cpu())


def test_empty_rows(strict_native):
    x = torch.empty((3, 0), device=VK)
    out, _, _ = _compiled_matches_eager(lambda x: (x * 2.0).sum(-1), x, reductions=1)
    assert_close(out.cpu(), torch.zeros(3))
    out, _, _ = _compiled_matches_eager(lambda x: (x + 1.0).mean(-1, keepdim=True), x,
                                        reductions=1)
    assert out.shape == (3, 1) and torch.isnan(out.cpu()).all()
    no_rows = torch.empty((0, 4), device=VK)
    out, _, _ = _compiled_matches_eager(lambda x: (x * 2.0).amax(-1), no_rows, reductions=1)
    assert out.shape == (0,)


def test_amax_of_empty_rows_raises_like_eager(strict_native):
    x = torch.empty((3, 0), device=VK)
    with pytest.raises(IndexError, match="non-zero size"):
        (x * 2.0).amax(-1)
    with pytest.raises(Exception, match="zero-size"):  # raised while tracing
        torch.compile(lambda x: (x * 2.0).amax(-1))(x)


def test_geometry_the_kernel_does_not_cover_runs_the_eager_ops(strict_native):
    from torch.fx.experimental.proxy_tensor import make_fx

    from torch_vk.compiler.backend import op_table
    from torch_vk.compiler.fusion import fuse_pointwise

    def fn(x):
        return (x * 2.0).amax(-1)

    gm = make_fx(fn, tracing_mode="fake")(torch.ones((3, 4), device=VK))
    fused, counts = fuse_pointwise(gm, op_table())
    assert counts.reductions == 1
    x = make((3, 4), torch.float32)
    assert_close(fused(x.to(VK)).cpu(), fn(x))
    # A call with another geometry than the traced one (Dynamo's guards normally prevent it)
    # runs the ATen ops, which raise for empty rows as eager does.
    with pytest.raises(IndexError, match="non-zero size"):
        fused(torch.empty((3, 0), device=VK))


def test_integer_prologue_stays_eager_and_correct(strict_native):
    x = make((6, 9), torch.float32).to(VK)
    out, _, _ = _compiled_matches_eager(lambda x: (x > 0).sum(-1), x, reductions=0)
    assert out.dtype == torch.int64


def test_row_region_that_would_close_a_cycle_is_fused_without_row_kernels(strict_native,
                                                                         monkeypatch):
    from types import SimpleNamespace

    from torch.fx.experimental.proxy_tensor import make_fx

    from torch_vk.compiler import fusion
    from torch_vk.compiler.backend import op_table

    # The unit check: a -> b -> c with a and c in one unit and b outside is a cycle.
    graph = torch.fx.Graph()
    a = graph.placeholder("a")
    b = graph.call_function(torch.neg, (a,))
    c = graph.call_function(torch.neg, (b,))
    graph.output(c)
    unit = SimpleNamespace(gid="unit")
    assert not fusion._units_acyclic(graph, {a: unit, c: unit})
    assert fusion._units_acyclic(graph, {b: unit, c: unit})

    # When the check fails, the graph is fused again without row regions, and stays right.
    monkeypatch.setattr(fusion, "_units_acyclic", lambda graph, unit_of: False)
    gm = make_fx(lambda x: softmax(x), tracing_mode="fake")(torch.ones((3, 4), device=VK))
    fused, counts = fusion.fuse_pointwise(gm, op_table())
    assert counts.row_kernels == 0 and counts.reductions == 1
    x = make((3, 4), torch.float32)
    assert_close(fused(x.to(VK)).cpu(), torch.softmax(x, -1), atol=1e-6, rtol=1e-5)


def test_few_very_long_rows_run_the_eager_kernels(strict_native):
    # One workgroup per row would leave a GPU idle for a full reduction of a large tensor:
    # such geometries run the group's ops and the eager (split) reduction kernel instead.
    from torch_vk.compiler.reduction import LONG_ROW, MIN_ROWS_FOR_LONG_ROWS
    torch.manual_seed(0)
    x = torch.randn(LONG_ROW + 5, device=VK)
    out, eager, compiled = _compiled_matches_eager(lambda t: (t * 2.0).abs().sum(), x)
    assert compiled == eager  # mul, abs, sum as eager kernels
    rows = torch.randn(2, LONG_ROW + 5, device=VK)
    out, eager, compiled = _compiled_matches_eager(softmax, rows)
    assert compiled == eager
    # Enough rows: one kernel again (rows of a few elements keep the test small).
    many = torch.randn(MIN_ROWS_FOR_LONG_ROWS, 8, device=VK)
    out, eager, compiled = _compiled_matches_eager(lambda t: (t * 2.0).abs().sum(-1), many)
    assert compiled == 1


# ---------------------------------------------------------------- residual add + layer / RMS norm


def residual_layer_norm(x, branch, w, b):
    h = x + branch
    return h, torch.nn.functional.layer_norm(h, (h.shape[-1],), w, b)


def residual_rms_norm(x, branch, w, b):
    h = x + branch
    return h, torch.nn.functional.rms_norm(h, (h.shape[-1],), w, 1e-5)


def residual_rms_norm_no_weight(x, branch, w, b):
    h = x + branch
    return h, torch.nn.functional.rms_norm(h, (h.shape[-1],))


@pytest.mark.parametrize("norm", [residual_layer_norm, residual_rms_norm,
                                  residual_rms_norm_no_weight])
@pytest.mark.parametrize("dtype", FLOATS)
def test_residual_add_and_norm_are_one_dispatch(dtype, norm, strict_native):
    # A transformer block's `h = x + branch; layer_norm(h)` (or F.rms_norm / nn.RMSNorm) with h
    # used on: one kernel that writes h and the normalized rows
    # (torch_vk/compiler/residual_norm.py). Rows of 48 (the row strategies' vector path) and of
    # 37 (scalar, odd).
    for hidden in (48, 37):
        x, branch = make((3, 5, hidden), dtype).to(VK), make((3, 5, hidden), dtype, seed=1).to(VK)
        w, b = make((hidden,), dtype, seed=2).to(VK), make((hidden,), dtype, seed=3).to(VK)
        before = torch_vk.compiler.stats()["residual_norms"]
        _, eager, compiled = _compiled_matches_eager(norm, x, branch, w, b, dtype=dtype)
        assert torch_vk.compiler.stats()["residual_norms"] - before == 1
        assert (eager, compiled) == (2, 1)
        torch._dynamo.reset()


def test_residual_add_not_fused_when_it_broadcasts(strict_native):
    # x + a bias row is not a residual add of two activations: left to the pointwise fusion.
    x, bias = make((4, 32), torch.float32).to(VK), make((32,), torch.float32, seed=1).to(VK)
    w = make((32,), torch.float32, seed=2).to(VK)
    before = torch_vk.compiler.stats()["residual_norms"]
    _compiled_matches_eager(lambda a, c, ww: residual_layer_norm(a, c, ww, None), x, bias, w)
    assert torch_vk.compiler.stats()["residual_norms"] == before


class ResidualBlock(nn.Module):
    def __init__(self, dim, norm=nn.LayerNorm):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = norm(dim)
        self.head = nn.Linear(dim, 4)

    def forward(self, x):
        h = x + self.proj(x)
        return self.head(self.norm(h)) + h.mean(-1, keepdim=True)


@pytest.mark.parametrize("norm", [nn.LayerNorm, nn.RMSNorm])
def test_residual_norm_training_step_matches_eager(norm, strict_native):
    torch.manual_seed(0)
    eager_model = ResidualBlock(24, norm).to(VK)
    compiled_model = ResidualBlock(24, norm).to(VK)
    compiled_model.load_state_dict(eager_model.state_dict())
    step = torch.compile(lambda model, x, y: ((model(x) - y) ** 2).mean())
    x, y = make((6, 24), torch.float32).to(VK), make((6, 4), torch.float32, seed=1).to(VK)
    before = torch_vk.compiler.stats()["residual_norms"]
    _train_both(eager_model, compiled_model, step, x, y)
    assert torch_vk.compiler.stats()["residual_norms"] > before
