"""Copies (cpu<->vk, vk<->vk, any layout, dtype conversion), fill/zero, item, printing,
Module.to, torch.save/torch.load."""
import io

import pytest
import torch

from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8,
              torch.int16, torch.int32, torch.int64, torch.bool]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_round_trip_exact(dtype):
    for shape in [(7, 5), (), (0,), (3, 0, 2), (2, 3, 4, 5)]:
        x = make(shape, dtype)
        y = x.to("vk")
        assert y.device.type == "vk" and y.dtype == dtype and y.shape == x.shape
        assert torch.equal(y.cpu(), x)


@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("dst", [torch.float32, torch.float16, torch.bfloat16, torch.int32,
                                 torch.int64, torch.uint8, torch.bool], ids=str)
def test_device_side_casts(src, dst):
    x = make((4, 6), src, low=-100, high=100)
    if not dst.is_floating_point and dst != torch.bool and src.is_floating_point:
        x = x.clamp(-100, 100)  # float->int outside the target range is undefined behaviour
        if dst == torch.uint8:
            x = x.abs()
    for _, layout in layouts(x):
        check(lambda a: layout(a).to(dst), x, atol=0, rtol=0)


def test_copy_layouts_and_broadcast():
    x = make((4, 5), torch.float32)
    for name, layout in layouts(x):
        check(lambda a: layout(a).contiguous(), x)
        check(lambda a: layout(a).clone(), x)
        assert torch.equal(layout(x.to("vk")).cpu(), x)  # vk->cpu of any layout

    def copy_into(dst_maker):
        def fn(a):
            out = dst_maker(a)
            out.copy_(a[0])  # broadcast a row into every row
            return out
        return fn

    check(copy_into(lambda a: torch.zeros(3, 5, device=a.device)), x)
    check(copy_into(lambda a: torch.zeros(5, 3, device=a.device).t()), x)
    check(lambda a: torch.zeros(3, device=a.device).copy_(a), x)  # error: shape mismatch


def test_cpu_to_vk_into_strided_destination():
    src = make((4, 6), torch.float32)
    dst = torch.zeros(6, 4, device="vk").t()
    dst.copy_(src)
    assert torch.equal(dst.cpu(), src)
    dst16 = torch.zeros(6, 4, device="vk", dtype=torch.float16).t()
    dst16.copy_(src)
    assert torch.equal(dst16.cpu(), src.half())


def test_vk_to_cpu_into_strided_destination():
    src = make((4, 6), torch.float32).to("vk")
    dst = torch.zeros(6, 4).t()
    dst.copy_(src)
    assert torch.equal(dst, src.cpu())
    dst64 = torch.zeros(4, 6, dtype=torch.float64)
    dst64.copy_(src)
    assert torch.equal(dst64, src.cpu().double())


def test_overlapping_copy_is_rejected():
    check(lambda a: a[1:].copy_(a[:-1]), make((6,), torch.float32))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_fill_zero_item(dtype):
    for value in (0, 1, -3, 2.5, True):
        if dtype == torch.bool and value not in (0, 1, True):
            continue
        if not dtype.is_floating_point and isinstance(value, float):
            continue
        if dtype == torch.uint8 and value == -3:
            continue
        for _, layout in layouts(make((5, 3), dtype)):
            check(lambda a: layout(a).fill_(value), make((5, 3), dtype))
    check(lambda a: a.zero_(), make((7,), dtype))
    check(lambda a: a[::2].zero_(), make((7,), dtype))
    x = make((), dtype).to("vk")
    assert x.item() == make((), dtype).item()


def test_fill_range_errors_and_tensor_values():
    check(lambda a: a.fill_(300), make((3,), torch.int8))   # overflow error on both
    check(lambda a, v: a.fill_(v), make((3, 2), torch.float32), torch.tensor(1.5))
    check(lambda a, v: a.fill_(v), make((3, 2), torch.float32), torch.tensor([1.5, 2.0]))  # error
    check(lambda a: torch.full((2, 3), 7.0, device=a.device) + a, make((2, 3), torch.float32))
    check(lambda a: torch.zeros_like(a) + torch.ones_like(a), make((2, 3), torch.int64))


def test_printing():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = x.to("vk")
    text = str(y)
    assert "device='vk:0'" in text
    assert str(x).split("\n")[0][:20] == text.split("\n")[0][:20]
    assert "vk:0" in repr(torch.zeros((), device="vk"))


def test_tensor_and_module_methods():
    x = torch.randn(3, 4)
    assert x.vk().is_vk and x.vk().device == torch.device("vk:0")
    model = torch.nn.Linear(4, 2)
    model.to("vk")
    assert all(p.device.type == "vk" for p in model.parameters())
    model.cpu()
    model.vk()
    assert all(p.device.type == "vk" for p in model.parameters())


def test_save_load_round_trips():
    x = make((3, 4), torch.float32)
    state = {"w": x.to("vk"), "h": x.half().to("vk"), "i": torch.arange(5).to("vk")}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert loaded["w"].device.type == "vk" and torch.equal(loaded["w"].cpu(), x)
    buffer.seek(0)
    on_cpu = torch.load(buffer, map_location="cpu")
    assert on_cpu["w"].device.type == "cpu" and torch.equal(on_cpu["h"], x.half())
    # a CPU checkpoint loaded onto vk
    cpu_buffer = io.BytesIO()
    torch.save({"w": x}, cpu_buffer)
    cpu_buffer.seek(0)
    to_vk = torch.load(cpu_buffer, map_location="vk")
    assert to_vk["w"].device.type == "vk" and torch.equal(to_vk["w"].cpu(), x)
    # a module state_dict
    model = torch.nn.Linear(4, 3).to("vk")
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    clone = torch.nn.Linear(4, 3)
    clone.load_state_dict(torch.load(buffer, map_location="cpu"))
    assert torch.equal(clone.weight, model.weight.cpu())


def test_views_share_storage():
    x = torch.zeros(4, 4, device="vk")
    v = x[1]
    v.fill_(3.0)
    x.t()[2].add_(1.0)
    expected = torch.zeros(4, 4)
    expected[1] = 3.0
    expected.t()[2] += 1.0
    assert torch.equal(x.cpu(), expected)
    assert x.view(16).data_ptr() == x.data_ptr()
    assert x[1:].data_ptr() == x.data_ptr() + 16


def test_resize_and_set():
    x = torch.arange(6, dtype=torch.float32).to("vk")
    x.resize_(2, 3)
    assert torch.equal(x.cpu(), torch.arange(6, dtype=torch.float32).view(2, 3))
    x.resize_(4, 4)  # grows storage, keeps the old values in front
    assert torch.equal(x.cpu().view(-1)[:6], torch.arange(6, dtype=torch.float32))
    y = torch.empty(0, device="vk")
    y.set_(x)
    assert y.data_ptr() == x.data_ptr() and y.shape == x.shape
    z = torch.empty(0, device="vk")
    z.set_(x.untyped_storage(), 2, (2, 2), (1, 2))
    assert torch.equal(z.cpu(), x.cpu().view(-1).as_strided((2, 2), (1, 2), 2))
