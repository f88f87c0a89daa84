"""torch.compile on vk: element-wise consumers of a matrix product run in its GEMM epilogue.

A fused group that reads an mm / addmm result element by element (through a row-major reshape
or not) is evaluated inside the GEMM's store: one dispatch for the product and the group.
Results are compared with eager vk (same kernels, same rounding points) and with the CPU.
"""
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.testing import assert_close

import torch_vk
import torch_vk.compiler

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from helpers import make  # noqa: E402
from test_compile import (NanoGPTBlock, _dispatches,  # noqa: E402
                          assert_compiled_forward_divides_dispatches)

VK = torch.device("vk")

TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3),
             torch.bfloat16: (1.6e-2, 1.6e-2)}


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _compiled_matches_eager(fn, *args, dtype=torch.float32):
    """Runs fn eagerly and compiled (twice: capture, then replay); returns the compiled
    dispatch count of the steady-state call."""
    compiled = torch.compile(fn)
    with torch.no_grad():
        expected = fn(*args)
        compiled(*args)
        out, count = _dispatches(compiled, *args)
    atol, rtol = TOLERANCE[dtype]
    assert_close(out, expected, atol=atol, rtol=rtol)
    cpu = fn(*(a.cpu() if isinstance(a, torch.Tensor) else a for a in args))
    assert_close(tuple(o.cpu() for o in out) if isinstance(out, tuple) else out.cpu(), cpu,
                 atol=atol * 10, rtol=rtol * 10)
    return out, count


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_linear_activation_is_one_dispatch(dtype, strict_native):
    x = make((12, 20), dtype).to(VK)
    w, b = make((24, 20), dtype, seed=1).to(VK), make((24,), dtype, seed=2).to(VK)

    def fn(x, w, b):
        h = F.linear(x, w, b)
        return 0.5 * h * (1.0 + torch.tanh(0.79788456 * (h + 0.044715 * h * h * h)))

    _, count = _compiled_matches_eager(fn, x, w, b, dtype=dtype)
    assert count == 1


def test_single_residual_add_joins_the_projection(strict_native):
    x, res = make((2, 5, 16), torch.float32).to(VK), make((2, 5, 8), torch.float32, seed=3).to(VK)
    w, b = make((8, 16), torch.float32, seed=1).to(VK), make((8,), torch.float32, seed=2).to(VK)

    def fn(x, res, w, b):
        return res + F.linear(x, w, b)   # addmm on the (10, 16) view, reshaped to (2, 5, 8)

    _, count = _compiled_matches_eager(fn, x, res, w, b)
    assert count == 1


def test_mm_without_bias_and_broadcast_inputs(strict_native):
    x, w = make((9, 7), torch.float32).to(VK), make((7, 11), torch.float32, seed=1).to(VK)
    row, col = make((11,), torch.float32, seed=2).to(VK), make((9, 1), torch.float32, seed=3).to(VK)

    def fn(x, w, row, col):
        return torch.sigmoid(x @ w + row) * col

    _, count = _compiled_matches_eager(fn, x, w, row, col)
    assert count == 1


def test_addmm_scalars_and_transposed_operands(strict_native):
    a = make((6, 10), torch.float32).to(VK).t()          # 10 x 6, column-major
    bmat = make((8, 6), torch.float32, seed=1).to(VK).t()  # 6 x 8, column-major
    c = make((10, 8), torch.float32, seed=2).to(VK)

    def fn(c, a, bmat):
        return torch.relu(torch.addmm(c, a, bmat, beta=0.5, alpha=-2.0))

    _, count = _compiled_matches_eager(fn, c, a, bmat)
    assert count == 1


def test_product_read_elsewhere_is_stored_too(strict_native):
    x, w = make((8, 12), torch.float32).to(VK), make((12, 16), torch.float32, seed=1).to(VK)

    def fn(x, w):
        h = x @ w
        return torch.relu(h) * 2.0, h.sum(dim=0), h

    (act, sums, h), count = _compiled_matches_eager(fn, x, w)
    assert count == 2  # GEMM + epilogue (stores h too), the sum


def test_group_that_also_reads_a_reduction_of_the_product_stays_correct(strict_native):
    x, w = make((8, 12), torch.float32).to(VK), make((12, 16), torch.float32, seed=1).to(VK)

    def fn(x, w):
        h = x @ w
        return torch.tanh(h) - h.amax(dim=-1, keepdim=True)   # the max needs the whole product

    _compiled_matches_eager(fn, x, w)


def test_empty_product(strict_native):
    x, w = torch.empty(0, 5, device=VK), make((5, 3), torch.float32).to(VK)

    def fn(x, w):
        return torch.relu(x @ w) + 1.0

    compiled = torch.compile(fn)
    out = compiled(x, w)
    assert out.shape == (0, 3)
    out = compiled(x, w)
    assert out.shape == (0, 3)


def test_group_reading_the_product_broadcast_is_not_an_epilogue(strict_native):
    x, w = make((1, 12), torch.float32).to(VK), make((12, 16), torch.float32, seed=1).to(VK)
    y = make((5, 16), torch.float32, seed=2).to(VK)

    def fn(x, w, y):
        return torch.relu(y * (x @ w) + 1.0)   # the 1 x 16 product is read once per row of y

    before = torch_vk.compiler.stats()["gemm_epilogues"]
    _compiled_matches_eager(fn, x, w, y)
    assert torch_vk.compiler.stats()["gemm_epilogues"] == before


def test_mlp_training_with_epilogues_matches_eager(strict_native):
    torch.manual_seed(0)
    before = torch_vk.compiler.stats()["gemm_epilogues"]
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(approximate="tanh"), nn.Linear(32, 32),
                          nn.SiLU(), nn.Linear(32, 4)).to(VK)
    twin = nn.Sequential(nn.Linear(16, 32), nn.GELU(approximate="tanh"), nn.Linear(32, 32),
                         nn.SiLU(), nn.Linear(32, 4)).to(VK)
    twin.load_state_dict(model.state_dict())
    compiled = torch.compile(twin)
    opt_a = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt_b = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    for step in range(4):
        x, y = make((8, 16), torch.float32, seed=10 + step).to(VK), \
            make((8, 4), torch.float32, seed=20 + step).to(VK)
        for net, opt in ((model, opt_a), (compiled, opt_b)):
            opt.zero_grad()
            loss = F.mse_loss(net(x), y)
            loss.backward()
            opt.step()
            if net is model:
                eager_loss = loss
        assert_close(loss, eager_loss, atol=1e-5, rtol=1e-5)
    for p, q in zip(model.parameters(), twin.parameters()):
        assert_close(q, p, atol=1e-5, rtol=1e-5)
    # Forward: the two activations; backward: their derivatives times the incoming gradient.
    assert torch_vk.compiler.stats()["gemm_epilogues"] - before >= 4


def test_transformer_block_forward_has_a_third_of_the_dispatches(strict_native):
    torch.manual_seed(0)
    block = NanoGPTBlock().to(VK).eval()
    x = torch.randn(2, 16, 32, device=VK)
    assert_compiled_forward_divides_dispatches(block, x, factor=3)
