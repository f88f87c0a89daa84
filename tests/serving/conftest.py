"""Serving-engine tests (vLLM / SGLang on "vk", and the paged-attention ops behind them).

Every test runs with TORCH_VK_FALLBACK=error semantics (an op without a native vk kernel fails
it) and fails on a Vulkan validation message. Models are tiny, random-initialised and saved to
a temporary directory; tokenizers are built in-process; nothing is downloaded.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_vk  # noqa: E402,F401


def pytest_collection_modifyitems(config, items):
    if not torch.vk.is_available():
        raise pytest.UsageError("the serving tests need a Vulkan device (mesa-vulkan-drivers)")


@pytest.fixture
def strict_native():
    """Kept for symmetry with tests/python: the autouse fixture below already applies it."""
    yield


@pytest.fixture(autouse=True)
def _strict_and_validation_clean():
    """Fallback mode "error" and no Vulkan validation message, for every serving test."""
    previous = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("error")
    before = torch_vk._C._validation_error_count()
    try:
        yield
    finally:
        torch_vk.set_fallback_mode(previous)
    torch.vk.synchronize()
    after = torch_vk._C._validation_error_count()
    if after != before:
        messages = "\n".join(torch_vk._C._validation_messages()[-5:])
        pytest.fail(f"{after - before} Vulkan validation error(s):\n{messages}")
