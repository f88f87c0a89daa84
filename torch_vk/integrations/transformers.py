"""transformers: vk where transformers picks devices from a fixed list.

What is patched (each only when vk is available, each a no-op for every other device):

- `TrainingArguments._setup_devices` (training_args.py): accelerate's `PartialState` already
  picks vk (through `torch.accelerator`), but the single-process branch of `_setup_devices`
  walks a list of `is_torch_<device>_available()` checks and ends in
  `"cuda:0" if cuda else ACCELERATE_TORCH_DEVICE or "cpu"`, so the model went to vk (accelerate)
  and the batches stayed on the CPU (the Trainer). With vk as the machine's accelerator and
  `use_cpu=False`, the device is now accelerate's (vk:N), as it is cuda:0 on a CUDA machine.
  Upstream fix: use `self.distributed_state.device` in that branch for any accelerator
  `torch.accelerator.current_accelerator()` reports.
- `is_torch_bf16_gpu_available` (utils/import_utils.py, as bound in training_args.py): a fixed
  device list, so `TrainingArguments(bf16=True)` raised "Your setup doesn't support bf16/gpu".
  vk answers with `torch.vk.is_bf16_supported()`. Upstream fix: a generic branch through
  `torch.get_device_module(torch.accelerator.current_accelerator())`.
- `GenerationMixin._valid_auto_compile_criteria` (generation/utils.py): generate compiles the
  forward pass of static-cache generation automatically only on "cuda", "xpu", "neuron", "tpu"
  (or with `CompileConfig._compile_all_devices`). vk gets the same treatment. Upstream fix: add
  "vk" to the list, or ask the device module.
- `Trainer._save_rng_state` / `_load_rng_state` (trainer.py): the checkpoint's RNG file holds
  the CUDA (NPU, HPU, ...) generator states but not vk's, so a resumed run drew different
  dropout masks. vk's state is saved beside it (`rng_state_vk[_N].pth`) and restored on resume.
  Upstream fix: save/restore `torch.get_device_module(accelerator).get_rng_state()` for any
  accelerator.

Version guard: written against transformers 5.x (5.24 tested); on 4.x or without the patched
attributes nothing is changed.
"""
from __future__ import annotations

import copy
import functools
import os

import torch

from torch_vk.integrations import vk_available

TARGETS = ("transformers.training_args", "transformers.generation.utils", "transformers.trainer")

_SUPPORTED_MAJOR = (5,)


def _version_ok() -> bool:
    try:
        import transformers

        return int(transformers.__version__.split(".")[0]) in _SUPPORTED_MAJOR
    except Exception:
        return False


def patch(module) -> None:
    if not vk_available() or not _version_ok():
        return
    name = module.__name__
    if name == "transformers.training_args":
        _patch_training_args(module)
    elif name == "transformers.generation.utils":
        _patch_generation(module)
    elif name == "transformers.trainer":
        _patch_trainer(module)


def _wrapped(function) -> bool:
    return getattr(function, "_torch_vk_wrapped", False)


def _accelerator_is_vk() -> bool:
    accelerator = torch.accelerator.current_accelerator() if torch.accelerator.is_available() \
        else None
    return accelerator is not None and accelerator.type == "vk"


def _patch_training_args(module) -> None:
    cls = getattr(module, "TrainingArguments", None)
    prop = cls.__dict__.get("_setup_devices") if cls is not None else None
    if isinstance(prop, functools.cached_property) and not _wrapped(prop.func):
        original = prop.func

        @functools.wraps(original)
        def _setup_devices(self):
            device = original(self)
            state = getattr(self, "distributed_state", None)
            if (device.type == "cpu" and not self.use_cpu and state is not None
                    and getattr(state, "device", None) is not None
                    and state.device.type == "vk"):
                device = state.device
                if device.index is None:
                    device = torch.device("vk", torch.vk.current_device())
                torch.vk.set_device(device)
                self._n_gpu = 1  # one device per process, like xpu / npu (no DataParallel)
            return device

        _setup_devices._torch_vk_wrapped = True
        replacement = functools.cached_property(_setup_devices)
        replacement.__set_name__(cls, "_setup_devices")
        setattr(cls, "_setup_devices", replacement)

    check = getattr(module, "is_torch_bf16_gpu_available", None)
    if check is not None and not _wrapped(check):
        @functools.wraps(check)
        def is_torch_bf16_gpu_available() -> bool:
            if check():
                return True
            return _accelerator_is_vk() and bool(torch.vk.is_bf16_supported())

        is_torch_bf16_gpu_available._torch_vk_wrapped = True
        module.is_torch_bf16_gpu_available = is_torch_bf16_gpu_available
        import transformers.utils.import_utils as import_utils

        if getattr(import_utils, "is_torch_bf16_gpu_available", None) is check:
            import_utils.is_torch_bf16_gpu_available = is_torch_bf16_gpu_available


def _patch_generation(module) -> None:
    mixin = getattr(module, "GenerationMixin", None)
    original = getattr(mixin, "_valid_auto_compile_criteria", None) if mixin else None
    try:
        from transformers.generation.configuration_utils import CompileConfig as compile_config_cls
    except ImportError:
        compile_config_cls = getattr(module, "CompileConfig", None)
    if original is None or compile_config_cls is None or _wrapped(original):
        return

    @functools.wraps(original)
    def _valid_auto_compile_criteria(self, model_kwargs, generation_config):
        device = getattr(self, "device", None)
        if not isinstance(device, torch.device) or device.type != "vk" \
                or generation_config.disable_compile:
            return original(self, model_kwargs, generation_config)
        # Ask with a config copy that lets every device compile: the remaining criteria
        # (a compileable cache, no offload, the quantizer) are transformers' own. Its warning
        # about an unusable compile_config must stay quiet when the user gave none.
        user_config = generation_config.compile_config
        probe = copy.copy(generation_config)
        probe.compile_config = copy.copy(user_config) if user_config is not None \
            else compile_config_cls()
        probe.compile_config._compile_all_devices = True
        logger = getattr(module, "logger", None)
        quiet = user_config is None and logger is not None
        if quiet:
            disabled, logger.disabled = logger.disabled, True
        try:
            return original(self, model_kwargs, probe)
        finally:
            if quiet:
                logger.disabled = disabled

    _valid_auto_compile_criteria._torch_vk_wrapped = True
    mixin._valid_auto_compile_criteria = _valid_auto_compile_criteria


def _rng_file(trainer, directory: str) -> str:
    """vk's generator state, next to the checkpoint's own RNG file (rng_state[_N].pth)."""
    if trainer.args.world_size > 1:
        return os.path.join(directory, f"rng_state_vk_{trainer.args.process_index}.pth")
    return os.path.join(directory, "rng_state_vk.pth")


def _uses_vk(trainer) -> bool:
    device = getattr(trainer.args, "device", None)
    return isinstance(device, torch.device) and device.type == "vk"


def _patch_trainer(module) -> None:
    cls = getattr(module, "Trainer", None)
    save = getattr(cls, "_save_rng_state", None) if cls else None
    load = getattr(cls, "_load_rng_state", None) if cls else None
    if save is None or load is None or _wrapped(save):
        return

    @functools.wraps(save)
    def _save_rng_state(self, output_dir, *args, **kwargs):
        result = save(self, output_dir, *args, **kwargs)
        if _uses_vk(self):
            torch.save(torch.vk.get_rng_state(), _rng_file(self, output_dir))
        return result

    @functools.wraps(load)
    def _load_rng_state(self, checkpoint, *args, **kwargs):
        result = load(self, checkpoint, *args, **kwargs)
        if checkpoint is not None and _uses_vk(self):
            path = _rng_file(self, checkpoint)
            if os.path.isfile(path):
                torch.vk.set_rng_state(torch.load(path, weights_only=True))
        return result

    _save_rng_state._torch_vk_wrapped = True
    _load_rng_state._torch_vk_wrapped = True
    cls._save_rng_state = _save_rng_state
    cls._load_rng_state = _load_rng_state
