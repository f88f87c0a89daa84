"""Multi-rank tests: each test starts its ranks as separate processes (tests/distributed/
launcher.py) running a worker from workers/, which runs a table of checks in one process
group and exits non-zero on any failure. The pytest process itself never joins a group."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

import torch_vk  # noqa: E402,F401


def pytest_collection_modifyitems(config, items):
    if not torch.distributed.is_available():
        raise pytest.UsageError("the distributed tests need torch with distributed support")
    if os.environ.get("TORCH_VK_REQUIRE_DEVICE", "1") == "1" and not torch.vk.is_available():
        raise pytest.UsageError("torch-vk tests need a Vulkan device (install mesa-vulkan-drivers)")
