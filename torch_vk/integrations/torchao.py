"""torchao: weight-only quantization on vk through PyTorch's own quantized-matmul ops.

Two patches, both only for vk tensors (other devices take torchao's own code unchanged):

1. int8 weight-only (`Int8WeightOnlyConfig`, per-row or per-tensor `Int8Tensor`): torchao's
   linear casts the whole int8 weight to the activation dtype and runs a float mm, reading and
   writing a float copy of every weight at every call. On vk, the linear runs
   `torch._weight_int8pack_mm` instead (the op torchao calls on CPU builds that have it; on vk
   a native kernel that reads each int8 weight byte once). Upstream change that removes it:
   torchao's int8 linear calling `_weight_int8pack_mm` on every device that implements it.
2. int4 weight-only with the tinygemm layout (`Int4WeightOnlyConfig(int4_packing_format=
   "tile_packed_to_4d")`, `Int4TilePackedTo4dTensor`): `from_hp` asks
   `torch.cuda.get_device_capability()` (>= 8.0 for tensor cores) whatever the tensor's
   device, which raises on builds without CUDA. For vk tensors the question is answered as
   "8.0" (the vk ops `_convert_weight_to_int4pack` / `_weight_int4pack_mm` have no
   compute-capability requirement); everything else in that path is torchao's own and runs
   on vk natively. Upstream change that removes it: check the capability only for CUDA
   tensors.

Version guard: torchao 0.15 - 0.18 (the tensor-subclass workflows with `_ATEN_OP_TABLE` /
`_TORCH_FN_TABLE` dispatch tables these patches extend).
"""
from __future__ import annotations

import contextvars
import importlib
import types

import torch

from torch_vk.integrations import vk_available

TARGETS = ("torchao",)

_SUPPORTED = ((0, 15), (0, 18))
_INT8_MODULE = "torchao.quantization.quantize_.workflows.int8.int8_tensor"
_INT4_MODULE = "torchao.quantization.quantize_.workflows.int4.int4_tile_packed_to_4d_tensor"
_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# Set while Int4TilePackedTo4dTensor.from_hp runs for a vk tensor.
_in_vk_from_hp = contextvars.ContextVar("torch_vk_torchao_vk_from_hp", default=False)


def _version_ok(module) -> bool:
    try:
        major, minor = (int(p) for p in str(module.__version__).split(".")[:2])
    except (AttributeError, ValueError):
        return False
    return _SUPPORTED[0] <= (major, minor) <= _SUPPORTED[1]


def patch(module) -> None:
    if not vk_available() or not _version_ok(module):
        return
    _patch_int8_linear(importlib.import_module(_INT8_MODULE))
    _patch_int4_tile_from_hp(importlib.import_module(_INT4_MODULE))


def _int8_weight_only_on_vk(args):
    """y = x W^T (+ bias) with `_weight_int8pack_mm`, or None where torchao's own path applies."""
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else None
    if not (isinstance(x, torch.Tensor) and x.device.type == "vk" and x.dtype in _FLOAT_DTYPES):
        return None
    if getattr(w, "act_quant_kwargs", None) is not None or \
            getattr(w, "act_pre_scale", None) is not None:
        return None
    qdata, scale = w.qdata, w.scale
    if qdata.dim() != 2 or list(w.block_size)[-1] != qdata.shape[-1] or x.shape[-1] != qdata.shape[1]:
        return None  # per-group weights: torchao dequantizes them itself
    n = qdata.shape[0]
    scale = scale.reshape(-1).to(x.dtype)
    if scale.numel() == 1:
        scale = scale.expand(n)
    if scale.numel() != n:
        return None
    x2 = x.reshape(-1, x.shape[-1])
    if x2.shape[-1] > 1 and x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch._weight_int8pack_mm(x2, qdata.contiguous(), scale.contiguous())
    y = y.reshape(*x.shape[:-1], n)
    if bias is not None:
        y = y + bias
    return y.to(x.dtype)


def _patch_int8_linear(mod) -> None:
    cls = mod.Int8Tensor
    tables = [(getattr(cls, "_ATEN_OP_TABLE", {}).get(cls), torch.ops.aten.linear.default),
              (getattr(cls, "_TORCH_FN_TABLE", {}).get(cls), torch.nn.functional.linear)]
    for table, key in tables:
        original = table.get(key) if table is not None else None
        if original is None or getattr(original, "_torch_vk_wrapped", False):
            continue

        def linear(func, types_, args, kwargs, _original=original):
            if not kwargs:
                y = _int8_weight_only_on_vk(args)
                if y is not None:
                    return y
            return _original(func, types_, args, kwargs)

        linear._torch_vk_wrapped = True
        table[key] = linear


class _CudaAnswersForVk(types.ModuleType):
    """torch.cuda as seen by the int4 tinygemm module: get_device_capability() is (8, 0) while
    from_hp quantizes a vk tensor, the real answer otherwise."""

    def __init__(self):
        super().__init__("torch.cuda")

    def __getattr__(self, name):
        return getattr(torch.cuda, name)

    def get_device_capability(self, *args, **kwargs):
        if _in_vk_from_hp.get():
            return (8, 0)
        return torch.cuda.get_device_capability(*args, **kwargs)


class _TorchForInt4Module(types.ModuleType):
    """The `torch` global of the int4 tinygemm module: torch itself but for `torch.cuda`."""

    def __init__(self):
        super().__init__("torch")
        self.cuda = _CudaAnswersForVk()

    def __getattr__(self, name):
        return getattr(torch, name)


def _patch_int4_tile_from_hp(mod) -> None:
    cls = mod.Int4TilePackedTo4dTensor
    original = cls.__dict__.get("from_hp")
    if original is None or getattr(original.__func__, "_torch_vk_wrapped", False):
        return
    if mod.__dict__.get("torch") is torch:
        mod.torch = _TorchForInt4Module()
    original_fn = original.__func__

    def from_hp(klass, hp_tensor, *args, **kwargs):
        if not (isinstance(hp_tensor, torch.Tensor) and hp_tensor.device.type == "vk"):
            return original_fn(klass, hp_tensor, *args, **kwargs)
        token = _in_vk_from_hp.set(True)
        try:
            return original_fn(klass, hp_tensor, *args, **kwargs)
        finally:
            _in_vk_from_hp.reset(token)

    from_hp._torch_vk_wrapped = True
    from_hp.__doc__ = original_fn.__doc__
    cls.from_hp = classmethod(from_hp)
