"""Fixtures of the fuzz suite: every case runs with TORCH_VK_FALLBACK=error semantics (a CPU
fallback raises, so every op is checked natively) and no Vulkan validation message."""
import os

import pytest
import torch

import torch_vk


@pytest.fixture(autouse=True)
def _no_validation_errors():
    before = torch_vk._C._validation_error_count()
    yield
    torch.vk.synchronize()
    after = torch_vk._C._validation_error_count()
    if after != before:
        messages = "\n".join(torch_vk._C._validation_messages()[-5:])
        pytest.fail(f"{after - before} Vulkan validation error(s):\n{messages}")


@pytest.fixture(autouse=True)
def strict_native():
    previous = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("error")
    try:
        yield
    finally:
        torch_vk.set_fallback_mode(previous)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TORCH_VK_REQUIRE_DEVICE", "1") == "1" and not torch.vk.is_available():
        raise pytest.UsageError("torch-vk tests need a Vulkan device (install mesa-vulkan-drivers)")
