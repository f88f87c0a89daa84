"""Runs TorchTitan's trainer (torchtitan.train.main) under torchrun on vk, with the arguments
given after this script's name. TorchTitan picks the device itself
(torch._utils._get_available_device_type() -> "vk") and the backend from
default_device_backend_map["vk"] -> "vkgloo".

Without Triton (the CPU wheel of torch does not bring it), `import torchtitan` fails: TorchTitan
0.2.2 imports its MoE permutation kernels (torchtitan/models/moe/kernels.py, @triton.jit) when
the package loads. The llama3 debug model never runs them, so that one module is replaced by a
stand-in whose function raises if called; torch itself still sees no Triton."""

import importlib.util
import os
import sys
import types

if importlib.util.find_spec("triton") is None:
    def _no_triton(*args, **kwargs):
        raise RuntimeError("torchtitan.models.moe.kernels needs Triton, which is not installed")

    kernels = types.ModuleType("torchtitan.models.moe.kernels")
    kernels.generate_permute_indices = _no_triton
    sys.modules["torchtitan.models.moe.kernels"] = kernels

import torchtitan.tools.utils as titan_utils  # noqa: E402
from torchtitan.train import Trainer, main  # noqa: E402

assert titan_utils.device_type == "vk", titan_utils.device_type

if __name__ == "__main__":
    main(Trainer)
    print(f"TORCHTITAN-DONE rank={os.environ.get('RANK')} device={titan_utils.device_type}",
          flush=True)
