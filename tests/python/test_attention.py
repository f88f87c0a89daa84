"""scaled_dot_product_attention on vk against PyTorch's CPU: the fused kernel (plain, causal,
boolean / additive / broadcast masks, custom scale, grouped-query attention, odd sequence
lengths, head dims 6..256, float32 / float16 / bfloat16, empty batch / heads), its backward,
the backend choice, and the explicit matmul + masked_fill + softmax formulation.

The forward kernel has two strategies (src/kernels/attention.h): Tiled (GPUs) and Rows (CPU
devices such as lavapipe, the default here). The `algo` fixture runs the forward cases under
both by setting TORCH_VK_ATTENTION_ALGO, which the launcher reads at every launch."""
import math
import os

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import torch_vk  # noqa: F401
from helpers import make

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Forward: fp32 math on the device, one rounding of the output; the reference is computed in
# float32 on the CPU from the same (rounded) inputs and rounded once too.
FWD_TOL = {torch.float32: dict(atol=2e-5, rtol=2e-5), torch.float16: dict(atol=2e-3, rtol=2e-3),
           torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2)}
# Backward: the saved output is rounded to the storage dtype before it enters the gradient
# (as on every fused backend), which dominates for float16 / bfloat16.
BWD_TOL = {torch.float32: dict(atol=5e-5, rtol=5e-5), torch.float16: dict(atol=1e-2, rtol=1e-2),
           torch.bfloat16: dict(atol=6e-2, rtol=6e-2)}


@pytest.fixture(params=["rows", "tiled", "tiled-split", "tiled-shared", "coopmat"])
def algo(request, monkeypatch):
    """Forces one strategy of the fused kernels for the test, as each device type runs them.
    rows: the CPU devices' forward and the backward by GEMM recomputation. tiled: the GPUs'
    tiled forward (split-KV where it splits on its own) and the fused two-pass backward, their
    row sums by subgroup shuffles where the device has them. tiled-split: the same with the
    keys split into chunks of 16 (one key tile each: every multi-tile case has several chunks)
    merged by the combine pass. tiled-shared: tiled with the row sums through shared memory
    (devices without subgroup shuffles). coopmat: float16 / bfloat16 forwards on the emulated
    cooperative-matrix kernel (its real form needs hardware matrices: the emulation runs the
    same tiles, offsets and softmax with scalar products), the fused backward."""
    name = request.param
    if name == "coopmat":
        monkeypatch.setenv("TORCH_VK_ATTENTION_COOPMAT", "emulate")
        monkeypatch.setenv("TORCH_VK_ATTENTION_BACKWARD", "fused")
        return name
    monkeypatch.setenv("TORCH_VK_ATTENTION_ALGO", name.split("-")[0])
    monkeypatch.setenv("TORCH_VK_ATTENTION_BACKWARD", "gemm" if name == "rows" else "fused")
    if name == "tiled-split":
        monkeypatch.setenv("TORCH_VK_ATTENTION_SPLIT_KEYS", "16")
    if name == "tiled-shared":
        monkeypatch.setenv("TORCH_VK_ATTENTION_SUBGROUP", "0")
    return name


def reference_sdpa(q, k, v, **kw):
    """PyTorch CPU SDPA in float32 math on the same values."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, **kw)


def expect_coopmat(dtype, E, Ev, out):
    """Under the `coopmat` strategy, a float16 / bfloat16 forward with head dims up to 128 ran
    the emulated cooperative-matrix kernel."""
    if (os.environ.get("TORCH_VK_ATTENTION_COOPMAT") == "emulate" and out.numel() > 0
            and dtype in (torch.float16, torch.bfloat16) and max(E, Ev) <= 128):
        assert torch_vk._C._last_attention_algorithm() == "coopmat_emulated"


def run_both(shapes, dtype, mask=None, backward=True, **kw):
    """Runs SDPA (forward + backward of a weighted sum) on CPU (float32) and vk (dtype)."""
    (qs, ks, vs) = shapes
    q, k, v = (make(s, dtype, low=-1, high=1, seed=i) for i, s in enumerate((qs, ks, vs)))
    out_shape = qs[:-1] + (vs[-1],)
    w = make(out_shape, torch.float32, seed=7)
    mask_requires_grad = mask is not None and mask.dtype != torch.bool and backward

    def run(device, cast):
        ins = [t.detach().to(device=device, dtype=cast).requires_grad_(backward) for t in (q, k, v)]
        m = None
        if mask is not None:
            m = mask.detach().to(device)
            if m.dtype != torch.bool:
                m = m.to(cast).requires_grad_(mask_requires_grad)
        fn = reference_sdpa if device == "cpu" else F.scaled_dot_product_attention
        out = fn(*ins, attn_mask=m, **kw)
        if device != "cpu":
            expect_coopmat(dtype, qs[-1], vs[-1], out)
        grads = []
        if backward:
            (out.float() * w.to(device)).sum().backward()
            grads = [t.grad for t in ins] + ([m.grad] if mask_requires_grad else [])
        return out, grads

    out_e, grads_e = run("cpu", torch.float32)
    out_a, grads_a = run(VK, dtype)
    assert out_a.device.type == "vk" and out_a.dtype == dtype and out_a.shape == out_e.shape
    assert_close(out_a.cpu().float(), out_e.to(dtype).float(), **FWD_TOL[dtype])
    for a, e in zip(grads_a, grads_e):
        assert a.dtype == dtype and a.shape == e.shape
        assert_close(a.cpu().float(), e.to(dtype).float(), **BWD_TOL[dtype])


def bhld(b, h, l, d):
    return (b, h, l, d)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", ["plain", "causal", "causal_long_q", "bool_mask", "float_mask",
                                  "broadcast_bool", "broadcast_float", "scale"])
def test_forward_backward(case, dtype, algo):
    B, H, L, S, E = 2, 3, 13, 19, 16
    kw, mask = {}, None
    if case == "causal":
        kw["is_causal"] = True
    elif case == "causal_long_q":
        kw["is_causal"] = True
        L, S = 21, 9
    elif case == "bool_mask":
        mask = torch.rand(B, H, L, S, generator=torch.Generator().manual_seed(3)) > 0.3
        mask[..., 0] = True  # every row keeps a key
    elif case == "float_mask":
        mask = make((B, H, L, S), torch.float32, low=-2, high=2, seed=4)
    elif case == "broadcast_bool":
        mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=4)
    elif case == "broadcast_float":
        mask = make((1, H, 1, S), torch.float32, low=-1, high=1, seed=5)
    elif case == "scale":
        kw["scale"] = 0.37
    run_both((bhld(B, H, L, E), bhld(B, H, S, E), bhld(B, H, S, E)), dtype, mask=mask, **kw)


@pytest.mark.parametrize("dims", [(16, 16), (32, 24), (64, 64), (80, 128), (128, 128), (100, 40),
                                  (6, 10), (256, 256), (200, 136)])
def test_head_dims(dims, algo):
    E, Ev = dims
    run_both(((1, 2, 17, E), (1, 2, 35, E), (1, 2, 35, Ev)), torch.float32, is_causal=E in (64, 200))


def test_longer_sequences_cross_tiles(algo):
    # Several query tiles and key tiles, causal, with a half-precision dtype.
    run_both(((1, 1, 70, 32), (1, 1, 70, 32), (1, 1, 70, 32)), torch.float16, is_causal=True)


@pytest.mark.parametrize("shape", [(0, 2, 5, 16), (2, 0, 5, 16), (2, 2, 0, 16)])
def test_empty(shape):
    run_both((shape, shape[:2] + (7, 16), shape[:2] + (7, 16)), torch.float32)


def test_empty_keys_gives_zeros(algo):
    run_both(((1, 2, 5, 16), (1, 2, 0, 16), (1, 2, 0, 16)), torch.float32, backward=False)


def test_three_dim_inputs(algo):
    run_both(((3, 11, 16), (3, 9, 16), (3, 9, 8)), torch.float32,
             mask=make((11, 9), torch.float32, seed=9))


def test_grouped_query_attention(algo):
    run_both(((2, 4, 9, 16), (2, 2, 12, 16), (2, 2, 12, 16)), torch.float32, enable_gqa=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_decode_long_keys(dtype, algo):
    # Decode: one or two query rows over 600 keys (GQA, a padding mask). "tiled" splits the
    # keys on its own here (8 workgroups of query tiles < 256, >= 512 keys: 3 chunks of 256).
    mask = torch.ones(2, 1, 2, 600, dtype=torch.bool)
    mask[0, ..., 450:] = False
    run_both(((2, 4, 2, 32), (2, 2, 600, 32), (2, 2, 600, 32)), dtype, mask=mask, enable_gqa=True)
    run_both(((1, 2, 1, 64), (1, 2, 600, 64), (1, 2, 600, 64)), dtype, backward=False)


def test_non_contiguous_inputs(algo):
    # [B, L, H, E] projections viewed as [B, H, L, E], as transformer blocks do.
    B, L, H, E = 2, 10, 3, 16
    base = [make((B, L, H, E), torch.float32, seed=i) for i in range(3)]
    outs = {}
    for device in ("cpu", VK):
        q, k, v = (t.to(device).transpose(1, 2) for t in base)
        fn = reference_sdpa if device == "cpu" else F.scaled_dot_product_attention
        out = fn(q, k, v, is_causal=True)
        if device == VK:  # laid out like the query, as the op's meta function says
            assert out.stride() == q.stride()
        outs[device] = out.cpu()
    assert_close(outs[VK], outs["cpu"], **FWD_TOL[torch.float32])


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_masked_row(kind, algo):
    # A query row without any allowed key: the math path gives 0 (safe softmax), so must vk.
    q, k, v = (make((1, 1, 4, 16), torch.float32, seed=i) for i in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False
    if kind == "float":  # additive: -inf excludes, the other values are added
        mask = torch.zeros(4, 4).masked_fill(~mask, float("-inf")) + 0.5 * torch.eye(4)
    expected = reference_sdpa(q, k, v, attn_mask=mask)
    actual = F.scaled_dot_product_attention(q.to(VK), k.to(VK), v.to(VK), attn_mask=mask.to(VK))
    assert_close(actual.cpu(), expected, equal_nan=True, **FWD_TOL[torch.float32])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_float32_mask_with_half_inputs(dtype, algo):
    # The kernel reads a float32 additive mask directly (no conversion to q's dtype).
    B, H, L, S, E = 1, 2, 7, 11, 16
    q, k, v = (make(s, dtype, low=-1, high=1, seed=i)
               for i, s in enumerate(((B, H, L, E), (B, H, S, E), (B, H, S, E))))
    mask = make((L, S), torch.float32, low=-2, high=2, seed=4)
    mask[:, 3] = float("-inf")
    assert torch._fused_sdp_choice(q.to(VK), k.to(VK), v.to(VK), attn_mask=mask.to(VK)) == \
        torch._C._SDPBackend.OVERRIDEABLE.value
    expected = reference_sdpa(q.float(), k.float(), v.float(), attn_mask=mask)
    actual = F.scaled_dot_product_attention(q.to(VK), k.to(VK), v.to(VK), attn_mask=mask.to(VK))
    assert actual.dtype == dtype
    assert_close(actual.cpu().float(), expected.to(dtype).float(), **FWD_TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unaligned_rows(dtype, algo):
    # Rows that start off a 16-byte boundary and odd row strides (the scalar-load path of Rows).
    B, H, L, E = 1, 2, 9, 16
    base = [make((B, H, L, E + 1), dtype, low=-1, high=1, seed=i) for i in range(3)]
    expected = reference_sdpa(*(t[..., 1:].float() for t in base), is_causal=True)
    q, k, v = (t.to(VK)[..., 1:] for t in base)
    actual = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert actual.dtype == dtype
    assert_close(actual.cpu().float(), expected.to(dtype).float(), **FWD_TOL[dtype])


def test_strategies_agree():
    # Both strategies against each other on a shape with several tiles and a masked row.
    q, k, v = (make((2, 3, 37, 32), torch.float32, seed=i).to(VK) for i in range(3))
    mask = (torch.rand(37, 37, generator=torch.Generator().manual_seed(1)) > 0.4)
    mask[5] = False
    mask = mask.to(VK)
    results = {}
    old = os.environ.get("TORCH_VK_ATTENTION_ALGO")
    try:
        for name in ("rows", "tiled"):
            os.environ["TORCH_VK_ATTENTION_ALGO"] = name
            out, lse = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
                q, k, v, attn_bias=mask)[:2]
            results[name] = (out.cpu(), lse.cpu())
    finally:
        if old is None:
            os.environ.pop("TORCH_VK_ATTENTION_ALGO", None)
        else:
            os.environ["TORCH_VK_ATTENTION_ALGO"] = old
    assert_close(results["rows"][0], results["tiled"][0], **FWD_TOL[torch.float32])
    assert_close(results["rows"][1], results["tiled"][1], **FWD_TOL[torch.float32])
    assert torch.isneginf(results["rows"][1][:, :, 5]).all()
    assert (results["rows"][0][:, :, 5] == 0).all()


def test_backend_choice():
    q = torch.zeros(1, 2, 4, 16, device=VK)
    fused = torch._C._SDPBackend.OVERRIDEABLE.value
    math_ = torch._C._SDPBackend.MATH.value
    assert torch._fused_sdp_choice(q, q, q) == fused
    assert torch._fused_sdp_choice(q, q, q, is_causal=True) == fused
    assert torch._fused_sdp_choice(q, q, q, dropout_p=0.5) == fused  # test_attention_dropout.py
    assert torch._fused_sdp_choice(q, q, q, dropout_p=1.0) == math_
    assert torch._fused_sdp_choice(q.double(), q.double(), q.double()) == math_
    head_256 = torch.zeros(1, 2, 4, 256, device=VK)
    assert torch._fused_sdp_choice(head_256, head_256, head_256) == fused
    big = torch.zeros(1, 2, 4, 264, device=VK)  # above the kernel's largest head dim
    assert torch._fused_sdp_choice(big, big, big) == math_


def test_fused_op_outputs(algo):
    q, k, v = (make((2, 3, 7, 16), torch.float32, seed=i) for i in range(3))
    res = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
        q.to(VK), k.to(VK), v.to(VK), is_causal=True)
    out, lse = res[0], res[1]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(16)
    scores = scores.masked_fill(~torch.ones(7, 7, dtype=torch.bool).tril(), float("-inf"))
    assert_close(lse.cpu(), torch.logsumexp(scores, -1), **FWD_TOL[torch.float32])
    assert_close(out.cpu(), torch.softmax(scores, -1) @ v, **FWD_TOL[torch.float32])
    assert res[4] == 7 and res[5] == 7


def test_math_path_runs_natively():
    # Inputs the fused kernel leaves to the math path (float64, head dim 256).
    run_both(((1, 2, 5, 256), (1, 2, 6, 256), (1, 2, 6, 256)), torch.float32, is_causal=False)
    q, k, v = (make((1, 2, 5, 8), torch.float64, seed=i) for i in range(3))
    out = F.scaled_dot_product_attention(q.to(VK), k.to(VK), v.to(VK))
    assert_close(out.cpu(), reference_sdpa(q, k, v))


def test_bad_inputs_raise_like_cpu():
    q = make((1, 2, 5, 16), torch.float32)
    k = make((1, 2, 5, 8), torch.float32)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k, k)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q.to(VK), k.to(VK), k.to(VK))


def test_explicit_attention_formulation():
    # The hand-written attention of many models: matmul, masked_fill, softmax, matmul.
    B, H, L, E = 2, 2, 9, 16
    q, k, v = (make((B, H, L, E), torch.float32, seed=i) for i in range(3))
    causal = torch.ones(L, L, dtype=torch.bool).tril()

    def attention(q, k, v, keep):
        scores = q @ k.transpose(-2, -1) / math.sqrt(E)
        scores = scores.masked_fill(~keep, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    expected = attention(q, k, v, causal)
    actual = attention(q.to(VK), k.to(VK), v.to(VK), causal.to(VK))
    assert_close(actual.cpu(), expected, **FWD_TOL[torch.float32])


def test_fused_op_with_no_keys_gives_zeros_and_minus_inf_lse():
    # PyTorch's SDPA sends empty keys to its math path on 2.13, but the fused op itself (what
    # torch 2.11 and compiled graphs call) must handle them too.
    q = torch.randn(1, 2, 5, 16, device=VK)
    k = torch.randn(1, 2, 0, 16, device=VK)
    v = torch.randn(1, 2, 0, 16, device=VK)
    out, lse = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v)[:2]
    assert torch.equal(out.cpu(), torch.zeros(1, 2, 5, 16))
    assert torch.equal(lse.cpu(), torch.full((1, 2, 5), float("-inf")))
