"""PEFT: `peft.utils.other.infer_device()` knows cuda, mps, mlu, xpu and npu and answers "cpu"
for anything else, so on a vk machine adapters loaded with `PeftModel.from_pretrained` (and
the other callers: hotswap, X-LoRA, LoRA-FA) were read to the CPU where a CUDA machine reads
them to the GPU. With vk available and none of those devices present, it answers "vk".
Upstream fix: fall back to `torch.accelerator.current_accelerator().type`.
Version guard: PEFT 0.x with `peft.utils.other.infer_device`.
"""
from __future__ import annotations

import functools
import sys

from torch_vk.integrations import vk_available

TARGETS = ("peft",)


def patch(module) -> None:
    if not vk_available() or not str(getattr(module, "__version__", "")).startswith("0."):
        return
    other = sys.modules.get("peft.utils.other")
    original = getattr(other, "infer_device", None)
    if original is None or getattr(original, "_torch_vk_wrapped", False):
        return

    @functools.wraps(original)
    def infer_device() -> str:
        device = original()
        return "vk" if device == "cpu" else device

    infer_device._torch_vk_wrapped = True
    # Rebind the name wherever PEFT imported it (`from .utils import infer_device`).
    for name, mod in list(sys.modules.items()):
        if (name == "peft" or name.startswith("peft.")) and \
                getattr(mod, "infer_device", None) is original:
            mod.infer_device = infer_device
