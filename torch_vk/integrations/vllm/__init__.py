"""vLLM on the "vk" device: an out-of-tree platform plugin.

vLLM finds it through the ``vllm.platform_plugins`` entry point of torch-vk's distribution
(pyproject.toml: ``vk = torch_vk.integrations.vllm:register``) and calls `register()` in
every vLLM process when it first resolves ``vllm.platforms.current_platform``; nothing here
runs unless vLLM is imported. `register()` imports no vLLM module: it only answers whether the
vk platform should be active, and names its class.

Contents:
  platform.py   VkPlatform (device type "vk", dispatch key PrivateUse1, CUDA graphs off,
                memory and device queries through torch.vk, no vllm._C kernels)
  worker.py     VkWorker / VkModelRunner, derived from vLLM's GPU worker and model runner
  attention.py  VkAttentionBackend: paged attention over vLLM's KV cache through the native
                ops torch.ops.vk.reshape_and_cache / torch.ops.vk.paged_attention
  ops.py        Python entry points and fake (meta) kernels of those two ops

Tested with exactly one vLLM release, SUPPORTED_VLLM (docs/INTEGRATIONS.md); other releases
get a warning, since the plugin derives from vLLM internals that change between releases.

Activation: the platform is active when a vk device is present, unless
TORCH_VK_VLLM=0, or CUDA is available and TORCH_VK_VLLM is not 1 (a machine with CUDA keeps
vLLM's CUDA platform by default). vLLM's own VLLM_PLUGINS allow-list applies as well.

Upstream changes that would shrink this plugin: vLLM's move from torch.cuda.* to
torch.accelerator.* (vllm#30679) would retire the torch.cuda stand-ins of worker.py, and a
pluggable model runner (vllm#51212) the subclassing of GPUModelRunner.
"""
from __future__ import annotations

import os

SUPPORTED_VLLM = "0.32.0"
PLATFORM = "torch_vk.integrations.vllm.platform.VkPlatform"


def register() -> str | None:
    """vLLM's platform-plugin hook: the platform class name, or None when vk should not run."""
    choice = os.environ.get("TORCH_VK_VLLM", "").strip()
    if choice == "0":
        return None
    try:
        import torch
        import torch_vk  # noqa: F401  (registers the device when autoload is off)

        if not torch.vk.is_available():
            return None
        if choice != "1" and torch.cuda.is_available():
            return None
    except Exception:
        return None
    return PLATFORM
