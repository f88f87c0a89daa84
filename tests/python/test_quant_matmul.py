"""Weight-only quantized matmul on vk (torchao's kernels, PyTorch's own ops):
_weight_int8pack_mm, _convert_weight_to_int4pack and _weight_int4pack_mm against the CPU's
ops on the same inputs (_weight_int8pack_mm; _convert_weight_to_int4pack_for_cpu +
_weight_int4pack_mm_for_cpu) and a float64 dequantized reference: float32 / float16 / bfloat16
activations, the decode (GEMV, M <= 8) and prefill (tiled) kernels, every int4 group size,
K not a multiple of 4 (int8 byte reads), strided activations, empty sizes, the CPU's errors."""
import pytest
import torch

import torch_vk  # noqa: F401

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Relative to the largest |reference| of the result: float32 summation order, and one rounding
# of the result to float16 / bfloat16 (at most an ulp or two apart from the CPU's).
REL = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


@pytest.fixture(params=["rows", "tiled"])
def algo(request, monkeypatch):
    """Both strategies (src/kernels/quant_matmul.h): rows (lavapipe's default) and tiled (GPUs:
    the decode GEMV up to 8 rows, the shared-memory tiled kernel beyond)."""
    monkeypatch.setenv("TORCH_VK_QUANT_MATMUL_ALGO", request.param)
    return request.param


def close(actual, expected, reference, dtype):
    scale = max(reference.abs().max().item(), 1.0)
    torch.testing.assert_close(actual.cpu().double(), expected.double(), rtol=REL[dtype],
                               atol=REL[dtype] * scale)


def int8_inputs(M, N, K, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g).to(dtype)
    w = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8)
    s = (torch.rand(N, generator=g) * 0.02 + 0.001).to(dtype)
    return a, w, s


def int8_reference(a, w, s):
    return (a.double() @ w.double().t()) * s.double()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("M,N,K", [(1, 32, 64), (3, 67, 100), (8, 5, 7), (9, 40, 64),
                                   (33, 70, 130), (2, 16, 1)])
def test_int8_matches_cpu(M, N, K, dtype, algo):
    a, w, s = int8_inputs(M, N, K, dtype)
    reference = int8_reference(a, w, s)
    if dtype == torch.bfloat16 and K % 16:
        # The CPU's bfloat16 kernel (this host: AVX-512 BF16) crashes when K is not a multiple
        # of 16 (torch 2.13): the float64 reference, rounded once, stands in for it.
        expected = reference.to(dtype)
    else:
        expected = torch._weight_int8pack_mm(a, w, s)
    actual = torch._weight_int8pack_mm(a.to(VK), w.to(VK), s.to(VK))
    assert actual.dtype == dtype and actual.shape == (M, N) and actual.device.type == "vk"
    close(actual, expected, reference, dtype)


@pytest.mark.parametrize("M", [1, 12])
def test_int8_strided_activations(M, algo):
    # Rows of a wider tensor (lda > K) and a one-row view with an arbitrary row stride.
    a, w, s = int8_inputs(M, 24, 48, torch.float32, seed=3)
    wide = torch.randn(M, 80)
    wide[:, 10:58] = a
    view = wide[:, 10:58]
    expected = torch._weight_int8pack_mm(view, w, s)
    actual = torch._weight_int8pack_mm(wide.to(VK)[:, 10:58], w.to(VK), s.to(VK))
    close(actual, expected, int8_reference(a, w, s), torch.float32)


def test_int8_empty():
    for M, N, K in [(0, 8, 16), (4, 0, 16), (4, 8, 0)]:
        a, w, s = int8_inputs(M, N, K, torch.float32)
        expected = torch._weight_int8pack_mm(a, w, s)
        actual = torch._weight_int8pack_mm(a.to(VK), w.to(VK), s.to(VK))
        assert actual.shape == expected.shape
        torch.testing.assert_close(actual.cpu(), expected)


def pack_int4_bytes(q):
    """torchao's packing of 4-bit values [N, K] into uint8 [N, K / 2] (even k: high nibble)."""
    return (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)


def int4_inputs(M, N, K, group, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g).to(dtype)
    q = torch.randint(0, 16, (N, K), generator=g, dtype=torch.int32)
    scales = torch.rand(K // group, N, generator=g) * 0.05 + 0.01
    zeros = torch.randn(K // group, N, generator=g) * 0.1
    sz = torch.stack([scales, zeros], dim=-1).to(dtype)
    return a, q, sz


def int4_reference(a, q, group, sz):
    g = torch.arange(q.shape[1]) // group
    scale = sz[..., 0].double()[g].t()  # [N, K]
    zero = sz[..., 1].double()[g].t()
    w = (q.double() - 8) * scale + zero
    return a.double() @ w.t()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("group", [32, 64, 128, 256])
@pytest.mark.parametrize("M", [1, 4, 8, 9, 40])
def test_int4_matches_cpu(M, group, dtype, algo):
    N, K, inner_k_tiles = 32, 256, 2  # the CPU's packing needs N % 16 == 0
    a, q, sz = int4_inputs(M, N, K, group, dtype, seed=M + group)
    packed_cpu = torch._convert_weight_to_int4pack_for_cpu(q, inner_k_tiles)
    expected = torch._weight_int4pack_mm_for_cpu(a, packed_cpu, group, sz)
    packed = torch._convert_weight_to_int4pack(pack_int4_bytes(q).to(VK), inner_k_tiles)
    assert packed.dtype == torch.int32 and packed.device.type == "vk"
    assert packed.shape == (N // 8, K // (16 * inner_k_tiles), 32, inner_k_tiles // 2)
    actual = torch._weight_int4pack_mm(a.to(VK), packed, group, sz.to(VK))
    assert actual.dtype == dtype and actual.shape == (M, N)
    close(actual, expected, int4_reference(a, q, group, sz), dtype)


@pytest.mark.parametrize("inner_k_tiles", [2, 4, 8])
def test_int4_pack_shapes_and_larger_sizes(inner_k_tiles):
    N, K, group = 64, 512, 128
    a, q, sz = int4_inputs(3, N, K, group, torch.bfloat16, seed=inner_k_tiles)
    packed = torch._convert_weight_to_int4pack(pack_int4_bytes(q).to(VK), inner_k_tiles)
    assert packed.shape == (N // 8, K // (16 * inner_k_tiles), 32, inner_k_tiles // 2)
    expected = torch._weight_int4pack_mm_for_cpu(
        a, torch._convert_weight_to_int4pack_for_cpu(q, inner_k_tiles), group, sz)
    actual = torch._weight_int4pack_mm(a.to(VK), packed, group, sz.to(VK))
    close(actual, expected, int4_reference(a, q, group, sz), torch.bfloat16)


def test_int4_strided_activations_and_empty(algo):
    N, K, group = 16, 128, 32
    a, q, sz = int4_inputs(5, N, K, group, torch.float32, seed=9)
    wide = torch.randn(5, 200)
    wide[:, 7:7 + K] = a
    packed = torch._convert_weight_to_int4pack(pack_int4_bytes(q).to(VK), 2)
    actual = torch._weight_int4pack_mm(wide.to(VK)[:, 7:7 + K], packed, group, sz.to(VK))
    close(actual, int4_reference(a, q, group, sz), int4_reference(a, q, group, sz), torch.float32)
    empty = torch._weight_int4pack_mm(a[:0].to(VK), packed, group, sz.to(VK))
    assert empty.shape == (0, N) and empty.device.type == "vk"


def test_errors_match_the_cpu():
    a, w, s = int8_inputs(2, 8, 16, torch.float32)
    cases = [
        lambda d: torch._weight_int8pack_mm(a.double().to(d), w.to(d), s.double().to(d)),
        lambda d: torch._weight_int8pack_mm(a.to(d), w.to(torch.int16).to(d), s.to(d)),
        lambda d: torch._weight_int8pack_mm(a.to(d), w[:, :8].to(d), s.to(d)),
        lambda d: torch._weight_int8pack_mm(a.to(d), w.to(d), s[:4].to(d)),
        lambda d: torch._weight_int8pack_mm(a[0].to(d), w.to(d), s.to(d)),
    ]
    for case in cases:
        with pytest.raises(Exception) as cpu_error:
            case("cpu")
        with pytest.raises(type(cpu_error.value)):
            case(VK)
    q = torch.randint(0, 16, (16, 64), dtype=torch.int32)
    b = pack_int4_bytes(q).to(VK)
    with pytest.raises(RuntimeError, match="innerKTiles"):
        torch._convert_weight_to_int4pack(b, 3)
    with pytest.raises(RuntimeError, match="kByte"):
        torch._convert_weight_to_int4pack(q.to(VK), 2)
    packed = torch._convert_weight_to_int4pack(b, 2)
    a4, _, sz = int4_inputs(2, 16, 64, 32, torch.float32)
    with pytest.raises(RuntimeError, match="qGroupSize"):
        torch._weight_int4pack_mm(a4.to(VK), packed, 48, sz.to(VK))
    with pytest.raises(RuntimeError, match="qScaleAndZeros"):
        torch._weight_int4pack_mm(a4.to(VK), packed, 32, sz[:1].to(VK))
    with pytest.raises(RuntimeError):
        torch._weight_int4pack_mm(a4[:, :32].to(VK), packed, 32, sz[:1].to(VK))
    # The CPU-only packing (its layout follows the CPU's vector ISA) is not a vk op, as on CUDA.
    with pytest.raises(NotImplementedError):
        torch._convert_weight_to_int4pack_for_cpu(q.to(VK), 2)


def test_compiled_int8_linear_matches_eager():
    a, w, s = int8_inputs(4, 32, 64, torch.float32, seed=5)
    fn = torch.compile(lambda x: torch._weight_int8pack_mm(x, w.to(VK), s.to(VK)) + 1.0)
    actual = fn(a.to(VK))
    close(actual, torch._weight_int8pack_mm(a, w, s) + 1.0, int8_reference(a, w, s) + 1.0,
          torch.float32)
