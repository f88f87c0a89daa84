"""torch.hash_tensor (XOR of the elements' 64-bit patterns) against the CPU, bit for bit, for
every dtype the CPU's kernel takes, with dims / keepdim / out= / layouts / empty and 0-dim
inputs, special float values (NaN payloads, Inf, -0, subnormals); and the uint64 storage it
needs on vk (copies between vk and the CPU)."""
import pytest
import torch

import torch_vk  # noqa: F401
from helpers import layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]


def vk(x):
    return x.to("vk")


def same(fn, x):
    expected = fn(x)
    actual = fn(vk(x))
    assert actual.device.type == "vk" and actual.dtype == torch.uint64
    assert actual.shape == expected.shape and actual.stride() == expected.stride()
    assert torch.equal(actual.cpu(), expected)


def values(dtype, shape, seed=0):
    if dtype.is_floating_point:
        return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).mul(100).to(dtype)
    if dtype == torch.bool:
        return make(shape, dtype, seed=seed)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=torch.Generator().manual_seed(seed), dtype=torch.int64).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_hash_dims(dtype):
    x = values(dtype, (3, 4, 5), seed=1)
    same(lambda t: torch.hash_tensor(t), x)
    for dim in (0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2), []):
        for keepdim in (False, True):
            same(lambda t: torch.hash_tensor(t, dim, keepdim=keepdim), x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_hash_layouts(dtype):
    x = values(dtype, (6, 7), seed=2)
    for _, layout in layouts(x):
        same(lambda t: torch.hash_tensor(layout(t)), x)
        same(lambda t: torch.hash_tensor(layout(t), 1), x)
        same(lambda t: torch.hash_tensor(layout(t), 0, keepdim=True), x)
    y = values(dtype, (4, 3, 5, 2), seed=3)
    same(lambda t: torch.hash_tensor(t.permute(2, 0, 3, 1), (1, 3)), y)


def test_hash_special_values():
    specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, -1e-45, 1e-310, 5e-324,
                3.4e38, 1.0, -2.5]
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        x = torch.tensor(specials, dtype=torch.float64).to(dtype)
        for i in range(len(specials)):
            same(lambda t: torch.hash_tensor(t[i:i + 1]), x)
        same(lambda t: torch.hash_tensor(t), x)
    # NaN payloads and signalling NaNs, every subnormal class, through raw bit patterns
    bits32 = torch.tensor([0x7fc00001, 0x7f800001, 0xffa00000, 0x00000001, 0x007fffff, 0x80400000,
                           0x7f7fffff], dtype=torch.int64).to(torch.int32)
    same(lambda t: torch.hash_tensor(t.view(torch.float32), 0, keepdim=True), bits32)
    for i in range(bits32.numel()):
        same(lambda t: torch.hash_tensor(t[i:i + 1].view(torch.float32)), bits32)
    bits16 = torch.tensor([0x7e01, 0x7c01, 0xfd00, 0x0001, 0x03ff, 0x8200, 0x7bff], dtype=torch.int32).to(torch.int16)
    for view in (torch.float16, torch.bfloat16):
        for i in range(bits16.numel()):
            same(lambda t: torch.hash_tensor(t[i:i + 1].view(view)), bits16)
    bits64 = torch.tensor([0x7ff0000000000001, 0x0000000000000001, -0x10000000000000], dtype=torch.int64)
    same(lambda t: torch.hash_tensor(t.view(torch.float64), 0), bits64)
    # integer extremes (sign extension)
    for dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        info = torch.iinfo(dtype)
        x = torch.tensor([info.min, info.max, -1 if info.min < 0 else 0, 1], dtype=dtype)
        for i in range(4):
            same(lambda t: torch.hash_tensor(t[i:i + 1]), x)


def test_hash_empty_and_scalar():
    same(lambda t: torch.hash_tensor(t), torch.tensor(3.5))
    same(lambda t: torch.hash_tensor(t, 0), torch.tensor(-7, dtype=torch.int32))
    same(lambda t: torch.hash_tensor(t, 1), torch.empty(0, 3))
    same(lambda t: torch.hash_tensor(t, 1, keepdim=True), torch.empty(0, 3, dtype=torch.int16))
    for fn in (lambda t: torch.hash_tensor(t), lambda t: torch.hash_tensor(t, 0)):
        with pytest.raises(Exception) as cpu_error:
            fn(torch.empty(0, 3))
        with pytest.raises(type(cpu_error.value)) as vk_error:
            fn(vk(torch.empty(0, 3)))
        assert str(vk_error.value) == str(cpu_error.value)


def test_hash_long_rows():
    # Few outputs over long reductions: split over workgroups, then combined.
    x = values(torch.float32, (300000,), seed=4)
    same(lambda t: torch.hash_tensor(t), x)
    y = values(torch.int16, (3, 100000), seed=5)
    same(lambda t: torch.hash_tensor(t, 1), y)
    same(lambda t: torch.hash_tensor(t.t(), 0, keepdim=True), y)


def test_hash_out():
    x = values(torch.int32, (4, 6), seed=6)
    for dev_out in (lambda d: torch.empty(0, dtype=torch.uint64, device=d),
                    lambda d: torch.empty(4, dtype=torch.uint64, device=d),
                    lambda d: torch.empty(8, dtype=torch.uint64, device=d)[::2]):
        out_cpu, out_vk = dev_out("cpu"), dev_out("vk")
        torch.hash_tensor(x, 1, out=out_cpu)
        r = torch.hash_tensor(vk(x), 1, out=out_vk)
        assert r is out_vk and out_vk.stride() == out_cpu.stride()
        assert torch.equal(out_vk.cpu(), out_cpu)


def test_hash_errors():
    def both(fn, x):
        with pytest.raises(Exception) as cpu_error:
            fn(x, "cpu")
        with pytest.raises(type(cpu_error.value)) as vk_error:
            fn(vk(x), "vk")
        return str(cpu_error.value), str(vk_error.value)

    x = torch.randn(3, 4)
    cpu, got = both(lambda t, d: torch.hash_tensor(t, mode=1), x)
    assert got == cpu
    cpu, got = both(lambda t, d: torch.hash_tensor(t, 2), x)
    assert got == cpu
    cpu, got = both(lambda t, d: torch.hash_tensor(t, 1, out=torch.empty(0, dtype=torch.int64, device=d)), x)
    assert got == cpu
    # dtypes the CPU kernel does not take (vk stores complex and uint64)
    cpu, got = both(lambda t, d: torch.hash_tensor(t), x.to(torch.complex64))
    assert "not implemented for 'ComplexFloat'" in got and "not implemented for 'ComplexFloat'" in cpu
    cpu, got = both(lambda t, d: torch.hash_tensor(t), torch.arange(3).to(torch.uint64))
    assert "not implemented for 'UInt64'" in got


def test_uint64_storage():
    # vk holds uint64 as bits: copies to / from the CPU (any layout), between vk tensors, views.
    x = torch.tensor([0, 1, 2 ** 63, 2 ** 64 - 1, 12345678901234567890], dtype=torch.uint64)
    y = vk(x)
    assert y.dtype == torch.uint64 and torch.equal(y.cpu(), x)
    m = torch.arange(12, dtype=torch.int64).view(torch.uint64).reshape(3, 4)
    assert torch.equal(vk(m).t().cpu(), m.t())
    z = torch.empty(4, 3, dtype=torch.uint64, device="vk")
    z.copy_(vk(m).t())
    assert torch.equal(z.cpu(), m.t())
    # CPU <-> vk conversions happen on the CPU; vk -> vk conversions are not computed
    w = torch.empty(3, 4, dtype=torch.uint64, device="vk")
    w.copy_(torch.arange(12, dtype=torch.int32).reshape(3, 4))
    assert torch.equal(w.cpu(), torch.arange(12).reshape(3, 4).to(torch.uint64))
    f = torch.empty(3, 4, dtype=torch.float32)
    f.copy_(w)
    assert torch.equal(f, torch.arange(12, dtype=torch.float32).reshape(3, 4))
    with pytest.raises(TypeError, match="UInt64"):
        torch.empty(3, 4, dtype=torch.int64, device="vk").copy_(w)
