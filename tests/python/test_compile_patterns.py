"""torch.compile pattern pass: hand-written attention becomes one scaled_dot_product_attention.

Each spelling of explicit attention (matmul, scale, -inf mask, softmax, matmul) is compiled with
backend "vk" under strict_native. The pass must report one replacement (torch_vk.compiler.
patterns.stats()), and the compiled output and the gradients of q, k and v must match eager vk
and the CPU. Chains that SDPA would not compute identically (weights also returned, dropout in
training, a finite fill value, softmax over another dim) must be left alone and stay correct.
"""
import math

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from torch.testing import assert_close

from helpers import VK
from test_models import Block

import torch_vk
from torch_vk.compiler import patterns

# Tiny shapes (lavapipe): batch 2, heads 2, seq 8, head dim 8.
BATCH, HEADS, SEQ, HEAD_DIM = 2, 2, 8, 8
FP32 = dict(atol=1e-5, rtol=1e-5)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def causal_mask():
    return torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool))


def padding_mask():
    """(batch, 1, 1, keys): the last keys of each sequence are padding; no row is all False."""
    lengths = torch.tensor([SEQ, SEQ - 3])
    return (torch.arange(SEQ) < lengths[:, None])[:, None, None, :]


# --- spellings that must become SDPA -----------------------------------------------------------

def nanogpt(q, k, v, mask):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(~mask, float("-inf"))
    att = F.softmax(att, dim=-1)
    return att @ v


def divided_eq_zero_method_softmax(q, k, v, mask):
    att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(k.size(-1))
    att = att.masked_fill(mask == 0, float("-inf"))
    att = att.softmax(-1)
    return att.matmul(v)


def where_torch_softmax_unscaled(q, k, v, mask):
    att = q @ k.mT
    att = torch.where(mask, att, float("-inf"))
    att = torch.softmax(att, -1)
    return att @ v


def where_tensor_fill_eval_dropout(q, k, v, mask):
    att = 0.25 * (q @ k.transpose(-1, -2))
    att = torch.where(mask, att, torch.tensor(float("-inf"), device=att.device))
    att = F.softmax(att, dim=3)
    att = F.dropout(att, p=0.1, training=False)
    return att @ v


def unmasked_zero_dropout(q, k, v, mask):
    att = (q @ k.transpose(-2, -1)) * 0.5
    att = F.dropout(F.softmax(att, dim=-1), p=0.0)
    return att @ v


def mask_marks_dropped_keys(q, k, v, dropped):
    att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
    att = att.masked_fill(dropped, float("-inf"))
    return F.softmax(att, dim=-1) @ v


def where_fill_first(q, k, v, dropped):
    att = (q @ k.transpose(-2, -1)) * 0.3
    att = torch.where(dropped, float("-inf"), att)
    return F.softmax(att, dim=-1) @ v


# (function, mask for the CPU run): masks of other dtypes exercise the `mask == 0` rewrite.
REPLACED = {
    "nanogpt_causal": (nanogpt, causal_mask),
    "nanogpt_padding": (nanogpt, padding_mask),
    "eq_zero_int_mask": (divided_eq_zero_method_softmax, lambda: causal_mask().to(torch.int64)),
    "eq_zero_float_padding": (divided_eq_zero_method_softmax,
                              lambda: padding_mask().to(torch.float32)),
    "eq_zero_bool_mask": (divided_eq_zero_method_softmax, causal_mask),
    "where_scalar_fill": (where_torch_softmax_unscaled, causal_mask),
    "where_tensor_fill": (where_tensor_fill_eval_dropout, padding_mask),
    "no_mask": (unmasked_zero_dropout, causal_mask),
    # The mask marks what to drop: SDPA gets logical_not(mask).
    "masked_fill_dropped": (mask_marks_dropped_keys, lambda: ~padding_mask()),
    "where_dropped": (where_fill_first, lambda: ~causal_mask()),
}


def make_inputs(seed=0):
    generator = torch.Generator().manual_seed(seed)
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    q, k, v = (torch.randn(shape, generator=generator) for _ in range(3))
    grad_out = torch.randn(shape, generator=generator)
    return q, k, v, grad_out


def run(fn, q, k, v, mask, grad_out, device):
    """fn's first output and the gradients of q, k, v (backward of <output, grad_out>)."""
    leaves = [t.detach().to(device).requires_grad_() for t in (q, k, v)]
    result = fn(*leaves, mask.to(device))
    out = result[0] if isinstance(result, tuple) else result
    out.backward(grad_out.to(device))
    return [out.detach().cpu()] + [t.grad.cpu() for t in leaves]


def compare(fn, mask, replacements):
    """Compiled vk vs eager vk vs CPU, and the number of chains the pass replaced."""
    q, k, v, grad_out = make_inputs()
    expected = run(fn, q, k, v, mask, grad_out, "cpu")
    eager = run(fn, q, k, v, mask, grad_out, VK)
    before = patterns.stats()["attention"]
    compiled = run(torch.compile(fn, backend="vk"), q, k, v, mask, grad_out, VK)
    assert patterns.stats()["attention"] - before == replacements
    for name, c, e, x in zip(("out", "dq", "dk", "dv"), compiled, eager, expected):
        assert_close(c, x, **FP32, msg=lambda m: f"{name} compiled vs CPU: {m}")
        assert_close(c, e, **FP32, msg=lambda m: f"{name} compiled vs eager vk: {m}")
    return compiled


@pytest.mark.parametrize("name", list(REPLACED))
def test_attention_spelling_becomes_sdpa(name, strict_native):
    fn, mask = REPLACED[name]
    compare(fn, mask(), replacements=1)


def test_default_inductor_entry_point_also_fuses(strict_native):
    """torch.compile(model) without a backend routes vk graphs to the same pass."""
    q, k, v, _ = make_inputs()
    mask = causal_mask()
    before = patterns.stats()["attention"]
    out = torch.compile(nanogpt)(q.to(VK), k.to(VK), v.to(VK), mask.to(VK))
    assert patterns.stats()["attention"] - before == 1
    assert_close(out.cpu(), nanogpt(q, k, v, mask), **FP32)


def test_dynamic_sequence_length_recompile_fuses(strict_native):
    """A second length makes Dynamo recompile with a symbolic sequence length; the head dim,
    hence the scale, stays a number, and the symbolic graph is rewritten too."""
    compiled = torch.compile(nanogpt, backend="vk")
    before = patterns.stats()["attention"]
    for seq in (SEQ, SEQ - 2):
        generator = torch.Generator().manual_seed(seq)
        q, k, v = (torch.randn(BATCH, HEADS, seq, HEAD_DIM, generator=generator)
                   for _ in range(3))
        mask = causal_mask()[:seq, :seq]
        out = compiled(q.to(VK), k.to(VK), v.to(VK), mask.to(VK))
        assert_close(out.cpu(), nanogpt(q, k, v, mask), **FP32)
    assert patterns.stats()["attention"] - before == 2


def test_fully_masked_row_gives_zeros_not_nan(strict_native):
    """The documented difference: a row with nothing to attend to is NaN in the explicit chain
    and zeros in SDPA (safe softmax); every other row is the same."""
    q, k, v, _ = make_inputs()
    mask = causal_mask()
    mask[0] = False
    before = patterns.stats()["attention"]
    out = torch.compile(nanogpt, backend="vk")(q.to(VK), k.to(VK), v.to(VK), mask.to(VK)).cpu()
    assert patterns.stats()["attention"] - before == 1
    expected = nanogpt(q, k, v, mask)
    assert torch.isnan(expected[:, :, 0]).all()
    assert_close(out[:, :, 0], torch.zeros_like(out[:, :, 0]))
    assert_close(out[:, :, 1:], expected[:, :, 1:], **FP32)


def test_replaced_graph_calls_sdpa():
    """The rewritten Dynamo graph: SDPA with an explicit scale and the mask to keep; the
    matmuls, scale, mask and softmax are gone."""
    graphs = []

    def inspect(gm, example_inputs):
        patterns.fuse_attention(gm)
        graphs.append(gm)
        return gm.forward

    q, k, v, _ = make_inputs()
    mask = causal_mask().to(torch.int64)
    out = torch.compile(divided_eq_zero_method_softmax, backend=inspect)(
        q.to(VK), k.to(VK), v.to(VK), mask.to(VK))
    assert_close(out.cpu(), divided_eq_zero_method_softmax(q, k, v, mask), **FP32)
    (graph,) = [gm.graph for gm in graphs]
    calls = [n for n in graph.nodes if n.op in ("call_function", "call_method")]
    sdpa = [n for n in calls if n.target is F.scaled_dot_product_attention]
    assert len(sdpa) == 1
    assert sdpa[0].kwargs["scale"] == pytest.approx(1.0 / math.sqrt(HEAD_DIM))
    assert sdpa[0].kwargs["dropout_p"] == 0.0 and sdpa[0].kwargs["is_causal"] is False
    # mask == 0 marks what to drop: the SDPA mask is mask != 0.
    mask_node = sdpa[0].kwargs["attn_mask"]
    assert mask_node.target is torch.ne and mask_node.args[1] == 0
    remaining = {n.target for n in calls} - {F.scaled_dot_product_attention, torch.ne}
    assert remaining == set(), remaining


# --- chains that must be left alone ------------------------------------------------------------

def returns_weights(q, k, v, mask):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(~mask, float("-inf"))
    att = F.softmax(att, dim=-1)
    return att @ v, att


def finite_fill(q, k, v, mask):
    att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
    att = att.masked_fill(~mask, torch.finfo(att.dtype).min)
    return F.softmax(att, dim=-1) @ v


def softmax_over_queries(q, k, v, mask):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(~mask, float("-inf"))
    return F.softmax(att, dim=-2) @ v


def test_weights_also_returned_left_alone(strict_native):
    fn = returns_weights
    q, k, v, _ = make_inputs()
    mask = causal_mask()
    before = patterns.stats()["attention"]
    out, weights = torch.compile(fn, backend="vk")(q.to(VK), k.to(VK), v.to(VK), mask.to(VK))
    assert patterns.stats()["attention"] == before
    expected_out, expected_weights = fn(q, k, v, mask)
    assert_close(out.cpu(), expected_out, **FP32)
    assert_close(weights.cpu(), expected_weights, **FP32)
    compare(fn, mask, replacements=0)  # gradients through the first output


def test_finite_fill_left_alone(strict_native):
    # Row 0 fully masked: a finite fill averages v over all keys there; SDPA would return 0.
    mask = causal_mask()
    mask[0] = False
    out = compare(finite_fill, mask, replacements=0)[0]
    assert_close(out[:, :, 0], make_inputs()[2].mean(dim=2), **FP32)


def test_softmax_over_other_dim_left_alone(strict_native):
    # Only the first query sees the last key, so no column is fully masked.
    compare(softmax_over_queries, causal_mask().T.contiguous(), replacements=0)


def test_one_dim_key_mask_left_alone(strict_native):
    # PyTorch's SDPA wants a mask of at least 2 dims; masked_fill broadcasts a 1-dim one.
    compare(nanogpt, torch.arange(SEQ) < SEQ - 3, replacements=0)


def test_training_dropout_left_alone(strict_native):
    def train_dropout(q, k, v, mask, p):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~mask, float("-inf"))
        return F.dropout(F.softmax(att, dim=-1), p=p, training=True) @ v

    q, k, v, grad_out = make_inputs()
    mask = causal_mask()
    before = patterns.stats()["attention"]
    # p = 1 drops everything: a deterministic check that the dropout still runs.
    dropped = run(torch.compile(lambda *a: train_dropout(*a, p=1.0), backend="vk"),
                  q, k, v, mask, grad_out, VK)
    for value in dropped:
        assert_close(value, torch.zeros_like(value))
    # p = 0.5: every output is v averaged with weights that are 0 or 2x the softmax weight.
    torch._dynamo.reset()
    vk_inputs = [t.to(VK) for t in (q, k, v, mask)]
    out = torch.compile(lambda *a: train_dropout(*a, p=0.5), backend="vk")(*vk_inputs).cpu()
    assert patterns.stats()["attention"] == before
    weights = F.softmax(((q @ k.transpose(-2, -1)) / math.sqrt(HEAD_DIM))
                        .masked_fill(~mask, float("-inf")), dim=-1)
    assert torch.isfinite(out).all()
    bound = (2 * weights[..., None] * v[:, :, None].abs()).sum(dim=-2)
    assert (out.abs() <= bound + 1e-5).all()
    assert not torch.allclose(out, weights @ v, atol=1e-3)  # something was dropped


# --- a transformer block ----------------------------------------------------------------------

def dispatches(fn, *args):
    torch.vk.synchronize()
    torch_vk.reset_stats()
    result = fn(*args)
    torch.vk.synchronize()
    return torch_vk.stats()["dispatches"], result


def test_gpt_block_forward_fewer_dispatches(strict_native):
    """test_models' TinyGPT block with explicit attention: the compiled forward replaces the
    attention chain and issues fewer dispatches than eager, with the same result."""
    torch.manual_seed(0)
    block = Block(dim=16, heads=2, block_size=SEQ, fused_attention=False).eval()
    x = torch.randn(BATCH, SEQ, 16)
    with torch.no_grad():
        expected = block(x)
        vk_block = block.to(VK)
        eager_count, eager = dispatches(vk_block, x.to(VK))
        before = patterns.stats()["attention"]
        compiled_block = torch.compile(vk_block, backend="vk")
        compiled_block(x.to(VK))  # compiles and specialises the fused kernels
        assert patterns.stats()["attention"] - before == 1
        compiled_count, compiled = dispatches(compiled_block, x.to(VK))
    assert_close(eager.cpu(), expected, **FP32)
    assert_close(compiled.cpu(), expected, **FP32)
    assert compiled_count < eager_count, (compiled_count, eager_count)
