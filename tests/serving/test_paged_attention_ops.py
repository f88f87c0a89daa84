"""torch.ops.vk.reshape_and_cache / paged_attention against plain-PyTorch references.

The references gather each request's keys through its block table on the CPU and run
attention in float64 with the same masks (causal by position, sliding window, soft-cap,
GQA); the vk kernels (both strategies: Rows and Tiled) must match within fp32 1e-5 and
fp16 / bf16 2e-3. Sequences cross block boundaries; blocks are scattered over the cache.
"""
from __future__ import annotations

import math

import pytest
import torch

from torch_vk.integrations.vllm import ops

TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-3}
ALGOS = ("rows", "tiled")


def _case(seq_lens, query_lens, kv_heads, heads, head_size, block_size, dtype, seed=0,
          layout="hnd"):
    """Random paged cache + block tables for requests (seq_len, query_len)."""
    g = torch.Generator().manual_seed(seed)
    blocks_per_req = [math.ceil(s / block_size) for s in seq_lens]
    num_blocks = sum(blocks_per_req) + 3
    perm = torch.randperm(num_blocks, generator=g).tolist()
    width = max(blocks_per_req) + 1
    table = torch.full((len(seq_lens), width), num_blocks - 1, dtype=torch.int32)
    taken = 0
    for r, nb in enumerate(blocks_per_req):
        table[r, :nb] = torch.tensor(perm[taken:taken + nb], dtype=torch.int32)
        taken += nb
    # vLLM's per-layer cache: rows of [key | value]; "hnd": [blocks, heads, block, 2D]
    # contiguous, "nhd": the token dim outside the head dim.
    if layout == "hnd":
        kv = torch.randn(num_blocks, kv_heads, block_size, 2 * head_size, generator=g)
    else:
        kv = torch.randn(num_blocks, block_size, kv_heads, 2 * head_size,
                         generator=g).transpose(1, 2)
    kv = kv.to(dtype)
    T = sum(query_lens)
    q = torch.randn(T, heads, head_size, generator=g).to(dtype)
    qsl = torch.tensor([0] + list(torch.tensor(query_lens).cumsum(0)), dtype=torch.int32)
    return dict(kv=kv, q=q, table=table, seq_lens=torch.tensor(seq_lens, dtype=torch.int32),
                qsl=qsl)


def _reference(c, head_size, scale, causal=True, sliding_window=0, softcap=0.0):
    window = sliding_window
    kv = c["kv"].double()
    q = c["q"].double()
    heads, kv_heads = q.shape[1], kv.shape[1]
    block_size = kv.shape[2]
    out = torch.zeros(q.shape[0], heads, head_size, dtype=torch.float64)
    for r, seq_len in enumerate(c["seq_lens"].tolist()):
        q0, q1 = c["qsl"][r].item(), c["qsl"][r + 1].item()
        j = torch.arange(seq_len)
        blocks = c["table"][r, j // block_size].long()
        rows = kv[blocks, :, j % block_size]          # [S, kv_heads, 2D]
        k = rows[..., :head_size].repeat_interleave(heads // kv_heads, 1)
        v = rows[..., head_size:].repeat_interleave(heads // kv_heads, 1)
        pos = torch.arange(seq_len - (q1 - q0), seq_len)  # positions of the query rows
        s = torch.einsum("thd,shd->hts", q[q0:q1], k) * scale
        if softcap > 0:
            s = softcap * torch.tanh(s / softcap)
        allowed = torch.ones(q1 - q0, seq_len, dtype=torch.bool)
        if causal:
            allowed &= j[None, :] <= pos[:, None]
        if window > 0:
            allowed &= pos[:, None] - j[None, :] < window
            if not causal:
                allowed &= j[None, :] - pos[:, None] < window
        s = s.masked_fill(~allowed, -math.inf)
        p = torch.softmax(s, -1).nan_to_num(0.0)
        out[q0:q1] = torch.einsum("hts,shd->thd", p, v)
    return out


def _run(c, head_size, scale, algo, monkeypatch, **kw):
    monkeypatch.setenv("TORCH_VK_PAGED_ATTENTION_ALGO", algo)
    kv = c["kv"].to("vk")
    out = ops.paged_attention(c["q"].to("vk"), kv[..., :head_size], kv[..., head_size:],
                              c["table"].to("vk"), c["seq_lens"].to("vk"), c["qsl"].to("vk"),
                              scale, max_seq_len=int(c["seq_lens"].max()), **kw)
    return out.cpu()


def _check(actual, expected, dtype):
    tol = TOL[dtype]
    torch.testing.assert_close(actual.double(), expected.to(dtype).double(), rtol=tol, atol=tol)


# Mixed batch: a decode row, a chunked-prefill chunk over a cached prefix, a full prefill.
MIXED = dict(seq_lens=[37, 21, 9], query_lens=[1, 5, 9])


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("head_size", [64, 80, 96, 128, 256])
def test_paged_attention_head_sizes_dtypes(algo, dtype, head_size, monkeypatch):
    c = _case(**MIXED, kv_heads=2, heads=4, head_size=head_size, block_size=16, dtype=dtype)
    scale = head_size ** -0.5
    _check(_run(c, head_size, scale, algo, monkeypatch), _reference(c, head_size, scale), dtype)


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("block_size", [1, 4, 16, 32])
@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (4, 2), (8, 2), (4, 1)])
def test_paged_attention_blocks_and_gqa(algo, block_size, heads, kv_heads, monkeypatch):
    c = _case(seq_lens=[70, 33, 1, 16], query_lens=[1, 3, 1, 16], kv_heads=kv_heads,
              heads=heads, head_size=64, block_size=block_size, dtype=torch.float32, seed=1)
    _check(_run(c, 64, 0.125, algo, monkeypatch), _reference(c, 64, 0.125), torch.float32)


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("causal,window,softcap", [
    (True, 8, 0.0), (True, 0, 5.0), (False, 0, 0.0), (False, 6, 0.0), (True, 20, 2.5)])
def test_paged_attention_masks(algo, causal, window, softcap, monkeypatch):
    c = _case(seq_lens=[45, 12, 30], query_lens=[45, 2, 7], kv_heads=1, heads=2,
              head_size=64, block_size=8, dtype=torch.float32, seed=2)
    kw = dict(causal=causal, sliding_window=window, softcap=softcap)
    _check(_run(c, 64, 0.2, algo, monkeypatch, **kw), _reference(c, 64, 0.2, **kw),
           torch.float32)


@pytest.mark.parametrize("algo", ALGOS)
def test_paged_attention_token_major_layout(algo, monkeypatch):
    """vLLM's NHD cache layout (token dim outside the head dim): strided pages."""
    c = _case(**MIXED, kv_heads=2, heads=4, head_size=64, block_size=16, dtype=torch.float16,
              layout="nhd")
    _check(_run(c, 64, 0.125, algo, monkeypatch), _reference(c, 64, 0.125), torch.float16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("block_size", [1, 16])
def test_reshape_and_cache(dtype, block_size):
    g = torch.Generator().manual_seed(3)
    num_blocks, kv_heads, D = 5, 2, 80
    kv = torch.randn(num_blocks, kv_heads, block_size, 2 * D, generator=g).to(dtype)
    T = min(7, num_blocks * block_size)
    key = torch.randn(T, kv_heads, D, generator=g).to(dtype)
    value = torch.randn(T, kv_heads, D, generator=g).to(dtype)
    slots = torch.randperm(num_blocks * block_size, generator=g)[:T]
    slots[T // 2] = -1  # padding: skipped
    expected = kv.clone()
    for t, s in enumerate(slots.tolist()):
        if s >= 0:
            expected[s // block_size, :, s % block_size, :D] = key[t]
            expected[s // block_size, :, s % block_size, D:] = value[t]
    dev = kv.to("vk")
    ops.reshape_and_cache(key.to("vk"), value.to("vk"), dev[..., :D], dev[..., D:],
                          slots.to("vk"))
    assert torch.equal(dev.cpu(), expected)  # bit copies


def test_reshape_and_cache_int32_slots_strided_keys():
    kv = torch.zeros(3, 1, 4, 16)
    qkv = torch.randn(5, 3, 8)  # keys / values as views of a fused projection
    key, value = qkv[:, :1], qkv[:, 1:2]
    slots = torch.tensor([4, 0, 11, 7, 2], dtype=torch.int32)
    expected = kv.clone()
    for t, s in enumerate(slots.tolist()):
        expected[s // 4, :, s % 4, :8] = key[t]
        expected[s // 4, :, s % 4, 8:] = value[t]
    dev = kv.to("vk")
    ops.reshape_and_cache(key.to("vk"), value.to("vk"), dev[..., :8], dev[..., 8:],
                          slots.to("vk"))
    assert torch.equal(dev.cpu(), expected)


def test_bad_slot_raises_index_error():
    dev = torch.zeros(2, 1, 4, 16, device="vk")
    key = torch.ones(1, 1, 8, device="vk")
    with pytest.raises(IndexError):
        ops.reshape_and_cache(key, key, dev[..., :8], dev[..., 8:],
                              torch.tensor([8], device="vk"))
        torch.vk.synchronize()
    assert dev.abs().sum().item() == 0  # nothing written; the device keeps working


def test_bad_block_id_raises_index_error():
    kv = torch.randn(2, 1, 4, 16, device="vk")
    q = torch.randn(1, 1, 8, device="vk")
    table = torch.tensor([[0, 5]], dtype=torch.int32, device="vk")
    with pytest.raises(IndexError):
        ops.paged_attention(q, kv[..., :8], kv[..., 8:], table,
                            torch.tensor([6], dtype=torch.int32, device="vk"),
                            torch.tensor([0, 1], dtype=torch.int32, device="vk"), 1.0)
        torch.vk.synchronize()


def test_argument_errors():
    kv = torch.randn(2, 2, 4, 16, device="vk")
    q = torch.randn(3, 3, 8, device="vk")  # 3 heads over 2 kv heads
    lens = torch.tensor([3], dtype=torch.int32, device="vk")
    qsl = torch.tensor([0, 3], dtype=torch.int32, device="vk")
    table = torch.zeros(1, 1, dtype=torch.int32, device="vk")
    with pytest.raises(RuntimeError, match="multiple"):
        ops.paged_attention(q, kv[..., :8], kv[..., 8:], table, lens, qsl, 1.0)
    q = torch.randn(3, 4, 8, device="vk")
    with pytest.raises(RuntimeError, match="query_start_loc"):
        ops.paged_attention(q, kv[..., :8], kv[..., 8:], table, lens, lens, 1.0)
    with pytest.raises(RuntimeError, match="dtype"):
        ops.paged_attention(q.half(), kv[..., :8], kv[..., 8:], table, lens, qsl, 1.0)
    with pytest.raises(RuntimeError, match="device"):
        ops.paged_attention(q, kv[..., :8], kv[..., 8:], table.cpu(), lens, qsl, 1.0)


def test_empty_query_is_a_no_op():
    kv = torch.randn(2, 1, 4, 16, device="vk")
    out = ops.paged_attention(torch.empty(0, 2, 8, device="vk"), kv[..., :8], kv[..., 8:],
                              torch.zeros(0, 1, dtype=torch.int32, device="vk"),
                              torch.zeros(0, dtype=torch.int32, device="vk"),
                              torch.zeros(1, dtype=torch.int32, device="vk"), 1.0)
    assert out.shape == (0, 2, 8)
