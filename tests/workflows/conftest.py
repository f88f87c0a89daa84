"""Workflow tests: whole Hugging Face / PyTorch workflows on "vk" against the same workflow on
the CPU. Tiny random-initialised models are saved to a temporary directory and loaded back with
`from_pretrained`; tokenizers are built here with the `tokenizers` library; nothing is
downloaded (HF_HUB_OFFLINE=1). Every test runs with TORCH_VK_FALLBACK=error semantics: an op
without a native vk kernel fails the test instead of running on the CPU.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_vk  # noqa: E402,F401


def pytest_collection_modifyitems(config, items):
    if not torch.vk.is_available():
        raise pytest.UsageError("the workflow tests need a Vulkan device (mesa-vulkan-drivers)")


@pytest.fixture(autouse=True)
def _strict_and_validation_clean():
    """Fallback mode "error" and no Vulkan validation message, for every workflow test."""
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
