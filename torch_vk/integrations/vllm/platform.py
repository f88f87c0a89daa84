"""VkPlatform: vLLM's platform interface for the "vk" device (see __init__.py).

Imported by vLLM only (through `register()`), so it may import vLLM at module level.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import torch

from vllm.logger import init_logger
from vllm.platforms.interface import Platform, PlatformEnum
from vllm.v1.attention.backends.registry import AttentionBackendEnum

from . import SUPPORTED_VLLM

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.v1.attention.selector import AttentionSelectorConfig

logger = init_logger(__name__)

ATTENTION_BACKEND = "torch_vk.integrations.vllm.attention.VkAttentionBackend"
WORKER = "torch_vk.integrations.vllm.worker.VkWorker"


def _device_index(device) -> int:
    if device is None:
        return torch.vk.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return device.index if device.index is not None else torch.vk.current_device()


class VkPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name: str = "vk"
    device_type: str = "vk"
    # vLLM registers its own torch.library ops (unified attention, KV-cache update, ...) for
    # this key: PrivateUse1 is where vk tensors dispatch.
    dispatch_key: str = "PrivateUse1"
    ray_device_key: str = ""  # Ray has no accelerator manager for vk (use the mp executor)
    device_control_env_var: str = "TORCH_VK_VISIBLE_DEVICES"
    dist_backend: str = "gloo"
    # Small standalone functions vLLM compiles: eager (torch.compile of the model is off).
    simple_compile_backend: str = "eager"
    supported_quantization: list[str] = []
    additional_env_vars: list[str] = [
        "TORCH_VK_VISIBLE_DEVICES", "TORCH_VK_FALLBACK", "TORCH_VK_CACHE_DIR",
        "TORCH_VK_VALIDATION", "TORCH_VK_PAGED_ATTENTION_ALGO", "TORCH_VK_VLLM",
    ]

    @property
    def supported_dtypes(self) -> list[torch.dtype]:
        return [torch.bfloat16, torch.float16, torch.float32]

    @classmethod
    def log_warnings(cls) -> None:
        import vllm

        if vllm.__version__.split("+")[0] != SUPPORTED_VLLM:
            logger.warning(
                "torch-vk's vLLM plugin is tested with vLLM %s; this is vLLM %s.",
                SUPPORTED_VLLM, vllm.__version__)

    # ---- kernels: vLLM's CUDA extensions are not used on vk ----
    @classmethod
    def import_kernels(cls) -> None:
        from . import ops  # noqa: F401  (fake kernels of torch.ops.vk.*)

    @classmethod
    def register_triton_kernel_overrides(cls) -> None:
        from vllm.triton_utils.dispatcher import register_kernels

        from .kernels import OVERRIDES

        register_kernels(OVERRIDES)

    # ---- device queries, all through torch.vk ----
    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        return torch.vk.get_device_name(device_id)

    @classmethod
    def get_device_uuid(cls, device_id: int = 0) -> str:
        return f"vk-{device_id}-{torch.vk.get_device_name(device_id)}"

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        return int(torch.vk.get_device_properties(device_id).total_memory)

    @classmethod
    def get_device_capability(cls, device_id: int = 0):
        return None  # not CUDA compute capabilities: every capability gate says no

    @classmethod
    def device_count(cls) -> int:
        return torch.vk.device_count()

    @classmethod
    def set_device(cls, device: torch.device) -> None:
        torch.vk.set_device(device)

    @classmethod
    def manual_seed_all(cls, seed: int) -> None:
        torch.vk.manual_seed_all(seed)

    @classmethod
    def inference_mode(cls):
        return torch.inference_mode(mode=True)

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        return True

    @classmethod
    def get_current_memory_usage(cls, device: torch.types.Device | None = None) -> float:
        torch.vk.reset_peak_memory_stats(device)
        return float(torch.vk.max_memory_allocated(device))

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        return ("vllm.distributed.device_communicators.base_device_communicator."
                "DeviceCommunicatorBase")

    @classmethod
    def opaque_attention_op(cls) -> bool:
        return False  # eager: the attention layer calls the backend directly

    @classmethod
    def support_static_graph_mode(cls) -> bool:
        return False

    @classmethod
    def support_hybrid_kv_cache(cls) -> bool:
        return False

    @classmethod
    def check_if_supports_dtype(cls, dtype: torch.dtype) -> None:
        if dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise ValueError(f"vLLM on vk supports float32, float16 and bfloat16, not {dtype}")

    @classmethod
    def verify_quantization(cls, quant: str) -> None:
        raise ValueError(f"vLLM on vk does not support quantized models ({quant!r})")

    # ---- attention ----
    @classmethod
    def get_attn_backend_cls(cls, selected_backend: "AttentionBackendEnum",
                             attn_selector_config: "AttentionSelectorConfig",
                             num_heads: int | None = None) -> str:
        if attn_selector_config.use_mla or attn_selector_config.use_sparse:
            raise ValueError("vLLM on vk has no MLA / sparse attention backend")
        if selected_backend not in (None, AttentionBackendEnum.CUSTOM):
            logger.warning_once("Attention backend %s is not available on vk; using the vk "
                                "paged-attention backend.", selected_backend)
        return ATTENTION_BACKEND

    @classmethod
    def get_supported_vit_attn_backends(cls) -> list["AttentionBackendEnum"]:
        return [AttentionBackendEnum.TORCH_SDPA]

    @classmethod
    def get_vit_attn_backend(cls, head_size, dtype, backend=None) -> "AttentionBackendEnum":
        return AttentionBackendEnum.TORCH_SDPA

    # ---- configuration ----
    @classmethod
    def check_and_update_config(cls, vllm_config: "VllmConfig") -> None:
        from vllm.config import CompilationMode, CUDAGraphMode

        compilation = vllm_config.compilation_config
        # Eager execution: no CUDA graphs; torch.compile of the model is not validated on
        # vk under vLLM yet (vLLM's compile backend drives Inductor directly).
        compilation.cudagraph_mode = CUDAGraphMode.NONE
        compilation.cudagraph_capture_sizes = []
        if compilation.mode != CompilationMode.NONE:
            logger.info("vk: running the model eagerly (torch.compile mode %s off).",
                        compilation.mode)
            compilation.mode = CompilationMode.NONE
        if compilation.compile_sizes is None:
            compilation.compile_sizes = []

        model_config = vllm_config.model_config
        if model_config is not None:
            model_config.enforce_eager = True

        cache_config = vllm_config.cache_config
        if cache_config is not None and not cache_config.user_specified_block_size:
            cache_config.block_size = 16

        scheduler_config = vllm_config.scheduler_config
        if scheduler_config is not None:
            # Asynchronous scheduling overlaps host work with CUDA streams / events of the
            # model runner that the vk runner does not provide.
            scheduler_config.async_scheduling = False

        parallel_config = vllm_config.parallel_config
        if parallel_config.worker_cls == "auto":
            parallel_config.worker_cls = WORKER
        if parallel_config.world_size > 1:
            raise ValueError("vLLM on vk runs on one device (tensor / pipeline parallelism "
                             "needs torch-vk's distributed backend)")
        if parallel_config.enable_dbo:
            parallel_config.enable_dbo = False

        # A Vulkan device must not be inherited through fork: worker processes start fresh.
        os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
