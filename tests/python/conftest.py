"""Shared fixtures: every test runs on the "vk" device and fails on any Vulkan validation error."""
import os

import pytest
import torch

import torch_vk  # noqa: F401  (also loaded by the torch.backends entry point)

# Python tests run with the validation layer when the runner sets TORCH_VK_VALIDATION=1
# (scripts/test.sh does); the layer must then report nothing.


def pytest_report_header(config):
    if not torch.vk.is_available():
        return "torch-vk: no Vulkan device"
    props = torch.vk.get_device_properties(0)
    return (f"torch-vk: {props.name} ({props.driver_name}), validation="
            f"{torch_vk._C._validation_enabled()}")


@pytest.fixture(autouse=True)
def _no_validation_errors():
    before = torch_vk._C._validation_error_count()
    yield
    torch.vk.synchronize()
    after = torch_vk._C._validation_error_count()
    if after != before:
        messages = "\n".join(torch_vk._C._validation_messages()[-5:])
        pytest.fail(f"{after - before} Vulkan validation error(s):\n{messages}")


@pytest.fixture
def strict_native():
    """Runs the test with TORCH_VK_FALLBACK=error semantics: a CPU fallback raises."""
    previous = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("error")
    try:
        yield
    finally:
        torch_vk.set_fallback_mode(previous)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TORCH_VK_REQUIRE_DEVICE", "1") == "1" and not torch.vk.is_available():
        raise pytest.UsageError("torch-vk tests need a Vulkan device (install mesa-vulkan-drivers)")
