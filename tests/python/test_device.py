"""torch.vk device API, torch.accelerator, properties, streams and events, RNG state, the
info command, behaviour without a device."""
import os
import subprocess
import sys

import pytest
import torch

import torch_vk


def test_device_module_basics():
    assert torch.vk.is_available()
    assert torch.vk.device_count() >= 1
    assert torch.vk.current_device() == 0
    torch.vk.set_device(0)
    with torch.vk.device(0):
        assert torch.vk.current_device() == 0
    assert isinstance(torch.vk.get_device_name(), str) and torch.vk.get_device_name()
    assert torch.device("vk").type == "vk"
    assert torch.empty(1, device="vk").device == torch.device("vk", 0)
    torch.vk.synchronize()


def test_device_properties():
    p = torch.vk.get_device_properties(0)
    assert p.name == torch.vk.get_device_name(0)
    assert p.total_memory > 0
    assert p.max_storage_buffer_range > 0
    assert p.subgroup_size >= 1
    for flag in ("float16", "float64", "int8", "int16", "int64", "buffer_device_address",
                 "cooperative_matrix"):
        assert isinstance(getattr(p, flag), bool)
    assert p.buffer_device_address and p.int64


def test_accelerator_integration():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator().type == "vk"
    assert torch.accelerator.device_count() == torch.vk.device_count()
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.synchronize()
    assert torch.vk.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


def test_streams_and_events():
    s = torch.vk.Stream()
    assert isinstance(s, torch.Stream)
    x = torch.ones(1000, device="vk")
    start = torch.vk.Event(enable_timing=True)
    end = torch.vk.Event(enable_timing=True)
    start.record()
    with torch.vk.stream(s):
        assert torch.vk.current_stream() == s
    y = x * 2
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0
    assert torch.vk.current_stream() == torch.vk.default_stream()
    # work ordered across streams with wait_stream
    s.wait_stream(torch.vk.current_stream())
    with torch.vk.stream(s):
        z = y + 1
    torch.vk.current_stream().wait_stream(s)
    assert z.sum().item() == 3000.0
    s.synchronize()
    assert s.query()


def test_rng_state_round_trip():
    torch.vk.manual_seed(1234)
    state = torch.vk.get_rng_state()
    assert isinstance(state, torch.Tensor) and state.dtype == torch.uint8
    torch.vk.manual_seed(99)
    torch.vk.set_rng_state(state)
    assert torch.equal(torch.vk.get_rng_state(), state)
    torch.manual_seed(5)  # also seeds vk
    assert torch.vk.initial_seed() == 5


def test_stats_counters():
    torch_vk.reset_stats()
    a = torch.ones(10, device="vk")
    b = a + a
    torch.vk.synchronize()
    s = torch_vk.stats()
    for key in ("dispatches", "submits", "host_waits", "fallbacks", "transfers"):
        assert key in s
    assert s["dispatches"] >= 1
    del b


def test_info_command():
    out = subprocess.run([sys.executable, "-m", "torch_vk", "info"], capture_output=True,
                         text=True, check=True).stdout
    assert torch.vk.get_device_name(0) in out
    assert "maxStorageBufferRange" in out or "max_storage_buffer_range" in out


def test_no_device_imports_cleanly_and_errors_clearly():
    env = dict(os.environ, TORCH_VK_VISIBLE_DEVICES="", TORCH_VK_VALIDATION="0")
    code = (
        "import torch, torch_vk\n"
        "assert not torch.vk.is_available()\n"
        "assert torch.vk.device_count() == 0\n"
        "try:\n"
        "    torch.empty(2, device='vk')\n"
        "except RuntimeError as e:\n"
        "    print('ERROR:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert "ERROR:" in out and "Vulkan" in out


def test_import_torch_alone_registers_vk():
    code = "import torch\nx = torch.ones(2, device='vk')\nprint((x + x).cpu().tolist())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[2.0, 2.0]"
