"""VkWorker / VkModelRunner: vLLM's GPU worker and model runner on the "vk" device.

The GPU classes are device-generic except where they name CUDA: the worker's init_device
(device "cuda:N") and the model runner's torch.cuda.Stream / Event / stream calls. VkWorker
replaces init_device; VkModelRunner runs the GPU runner with torch.cuda's stream and event
entry points pointing at torch.vk's while it is constructed and while it executes a step
(restored afterwards, so nothing else in the process sees the change).
"""
from __future__ import annotations

import contextlib
import functools
import gc

import torch

from vllm.logger import init_logger
from vllm.platforms import current_platform
from vllm.utils.mem_utils import MemorySnapshot, format_gib
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.worker.gpu_model_runner import GPUModelRunner
from vllm.v1.worker.gpu_worker import Worker, init_worker_distributed_environment
from vllm.v1.worker.utils import request_memory

logger = init_logger(__name__)

# torch.cuda entry points the GPU model runner calls, and their vk counterparts.
_CUDA_STAND_INS = {
    "Stream": lambda: torch.vk.Stream,
    "Event": lambda: _vk_event,
    "current_stream": lambda: functools.partial(torch.vk.current_stream),
    "default_stream": lambda: functools.partial(torch.vk.default_stream),
    "stream": lambda: functools.partial(torch.vk.stream),
    "set_stream": lambda: functools.partial(torch.vk.set_stream),
    "synchronize": lambda: functools.partial(torch.vk.synchronize),
}


def _vk_event(*args, blocking: bool = False, **kwargs):
    return torch.vk.Event(*args, blocking=blocking, **kwargs)


@contextlib.contextmanager
def vk_as_cuda():
    """torch.cuda's stream / event entry points point at torch.vk's inside the block."""
    saved = {name: getattr(torch.cuda, name) for name in _CUDA_STAND_INS}
    try:
        for name, make in _CUDA_STAND_INS.items():
            setattr(torch.cuda, name, make())
        yield
    finally:
        for name, value in saved.items():
            setattr(torch.cuda, name, value)


class VkModelRunner(GPUModelRunner):
    """GPUModelRunner on vk (eager, no CUDA graphs)."""

    def __init__(self, vllm_config, device: torch.device):
        with vk_as_cuda():
            super().__init__(vllm_config, device)

    def execute_model(self, *args, **kwargs):
        with vk_as_cuda():
            return super().execute_model(*args, **kwargs)

    def sample_tokens(self, *args, **kwargs):
        with vk_as_cuda():
            return super().sample_tokens(*args, **kwargs)


class VkWorker(Worker):
    """vLLM's GPU worker with a vk device."""

    def init_device(self):
        if self.device_config.device_type != "vk":
            raise RuntimeError(f"VkWorker needs the vk device, got {self.device_config.device}")
        index = current_platform.logical_device_id_to_visible_device_id(self.local_rank)
        if index >= torch.vk.device_count():
            raise RuntimeError(f"vk:{index} does not exist ({torch.vk.device_count()} vk "
                               "devices visible)")
        self.device = torch.device(f"vk:{index}")
        torch.vk.set_device(self.device)
        current_platform.check_if_supports_dtype(self.model_config.dtype)
        init_worker_distributed_environment(self.vllm_config, self.rank,
                                            self.distributed_init_method, self.local_rank,
                                            current_platform.dist_backend)
        set_random_seed(self.model_config.seed)
        gc.collect()
        torch.vk.empty_cache()
        self.init_snapshot = MemorySnapshot(device=self.device)
        self.requested_memory = request_memory(self.init_snapshot, self.cache_config)
        logger.debug("vk worker memory snapshot: %r, requested %s GiB", self.init_snapshot,
                     format_gib(self.requested_memory))
        self._init_workspace_and_model_runner()

    def _make_model_runner(self):
        return VkModelRunner(self.vllm_config, self.device)

    def compile_or_warm_up_model(self):
        # vLLM's kernel_warmup JIT-compiles and autotunes CUDA kernels (Triton, FlashInfer,
        # DeepGEMM, CuTe DSL) and imports CUDA-only model modules; vk has none of them. The
        # rest of the warm-up (dummy runs, sampler) is the GPU worker's.
        import vllm.v1.worker.gpu_worker as gpu_worker

        saved = gpu_worker.kernel_warmup
        gpu_worker.kernel_warmup = lambda worker, **kwargs: None
        try:
            return super().compile_or_warm_up_model()
        finally:
            gpu_worker.kernel_warmup = saved

    def _maybe_get_memory_pool_context(self, tag: str) -> contextlib.AbstractContextManager:
        # vLLM's sleep-mode pools are CUDA / XPU allocators; vk allocates through its own
        # caching allocator (sleep mode is not available: Platform.is_sleep_mode_available).
        return contextlib.nullcontext()
