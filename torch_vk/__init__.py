"""torch-vk: PyTorch on any Vulkan GPU, as the device ``"vk"``.

``import torch_vk`` (or torch's backend autoload, through the ``torch.backends`` entry point)
registers the device: ``torch.empty(3, device="vk")``, ``model.to("vk")``, ``torch.vk.*``.

Importing never fails because Vulkan is missing: without a loader, driver or device,
``torch.vk.is_available()`` is False and using the device raises a RuntimeError that says what
is missing. If the native extension itself cannot be loaded, a warning says why and the device
stays unregistered.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from typing import Any

# Set at the end of this file. torch's backend autoload may call _autoload() while this module
# is still being imported (`import torch_vk` before `import torch`: the `import torch` below
# runs the autoload), so _autoload is defined before that import and then does nothing: the
# rest of this file does the registration.
_module_ready = False


def _autoload() -> None:
    """Entry point of torch's backend autoload (``torch.backends`` group). Never raises: a
    failure here would break ``import torch`` for the whole environment."""
    if not _module_ready:
        return
    try:
        if _C is not None:
            _register()
    except Exception as exc:  # pragma: no cover - defensive
        warnings.warn(f"torch-vk: registering the 'vk' device failed: {exc}", RuntimeWarning,
                      stacklevel=2)


import torch  # noqa: E402

__version__ = "0.1.0"

__all__ = ["stats", "reset_stats", "set_fallback_mode", "fallback_mode", "compile_shader",
           "__version__"]

_import_error: str | None = None

try:
    # Not `from torch_vk import _C`: that would find a package attribute of the same name.
    _C: Any = importlib.import_module("torch_vk._C")  # runs the C++ static registrations
except Exception as exc:  # pragma: no cover - depends on the installation
    _C = None
    _import_error = f"{type(exc).__name__}: {exc}"
    warnings.warn(
        f"torch-vk: the native extension torch_vk._C could not be loaded ({_import_error}); "
        "the 'vk' device is not registered.",
        RuntimeWarning,
        stacklevel=2,
    )

from torch_vk import vk  # noqa: E402

vk._bind(_C, _import_error)

_BACKEND_NAME = "vk"


def _register() -> None:
    """Registers "vk" with torch; safe to call any number of times."""
    current = torch._C._get_privateuse1_backend_name()
    if current != _BACKEND_NAME:
        if current != "privateuseone":
            raise RuntimeError(
                f"torch-vk: the PrivateUse1 backend is already registered as '{current}'; "
                "two PrivateUse1 backends cannot be used in one process")
        torch.utils.rename_privateuse1_backend(_BACKEND_NAME)
    if getattr(torch, _BACKEND_NAME, None) is None:
        torch._register_device_module(_BACKEND_NAME, vk)
    # `import torch.vk.memory` / `from torch.vk.memory import ...`, as for torch.cuda.memory.
    import sys

    from torch_vk import memory

    sys.modules.setdefault(f"torch.{_BACKEND_NAME}.memory", memory)
    if not hasattr(torch.Tensor, "is_" + _BACKEND_NAME):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_storage=True)
    _install_printing_hook()
    _install_compile_hook()
    _install_exit_hook()
    _register_distributed()
    from torch_vk import integrations

    integrations.install()


def _register_distributed() -> None:
    """Registers the c10d backend "vkgloo" (torch_vk.distributed) for the vk and cpu devices:
    a few dict entries (torch.distributed is already imported by `import torch`); nothing is
    created before the first process group. A failure only warns: the device stays usable."""
    try:
        from torch_vk import distributed

        distributed.register()
    except Exception as exc:  # pragma: no cover - defensive
        warnings.warn(f"torch-vk: registering the distributed backend failed: {exc}",
                      RuntimeWarning, stacklevel=2)


def _install_compile_hook() -> None:
    """Wraps torch.compile so that its first use registers the vk compiler (backend "vk",
    Inductor routing for vk graphs; see torch_vk.compiler). Importing torch._dynamo here
    would add seconds to every `import torch`."""
    original = torch.compile
    if getattr(original, "_torch_vk_wrapped", False):
        return

    @functools.wraps(original)
    def compile(*args, **kwargs):
        from torch_vk import compiler

        compiler.register()
        return original(*args, **kwargs)

    compile._torch_vk_wrapped = True
    torch.compile = compile


def _install_exit_hook() -> None:
    """At interpreter exit, lets autograd's vk device threads drop the last finished graph
    task while the GIL can still be taken (see _drain_autograd_device_threads in
    torch_vk/csrc/module.cpp); without it a script whose last step is a backward on vk can
    abort at exit."""
    import atexit

    if not getattr(_install_exit_hook, "_done", False):
        atexit.register(_C._drain_autograd_device_threads)
        _install_exit_hook._done = True


def _install_printing_hook() -> None:
    """Formats vk tensors from one host copy, as PyTorch does for xla/lazy/mtia tensors:
    the formatter's helper ops (masked_select, min/max, per-element reads) would otherwise
    each run on the device and wait for it."""
    from torch import _tensor_str

    original = getattr(_tensor_str, "_tensor_str", None)
    if original is None or getattr(original, "_torch_vk_wrapped", False):
        return

    def _tensor_str_via_host(self, indent):
        if self.device.type == _BACKEND_NAME:
            with torch.no_grad():
                self = self.cpu()
        return original(self, indent)

    _tensor_str_via_host._torch_vk_wrapped = True
    _tensor_str._tensor_str = _tensor_str_via_host


_register_error: str | None = None
if _C is not None:
    try:
        _register()
    except Exception as exc:  # never break `import torch` (autoload imports this module)
        _register_error = str(exc)
        warnings.warn(f"torch-vk: registering the 'vk' device failed: {exc}", RuntimeWarning,
                      stacklevel=2)


def _require_native() -> Any:
    if _C is None:
        raise RuntimeError(f"torch-vk: the native extension is not loaded ({_import_error})")
    return _C


def stats() -> dict[str, Any]:
    """Process-wide counters: dispatches, transfers, submits, host_waits, pipelines_created,
    barriers (memory barriers recorded between two commands), barriers_skipped (consecutive
    commands that hazard tracking left unordered because they touch different memory), and
    ``fallbacks`` ({"aten::op.overload": calls that ran on the CPU})."""
    return dict(_require_native()._stats())


def reset_stats() -> None:
    """Sets every counter of :func:`stats` to zero."""
    _require_native()._reset_stats()


def set_fallback_mode(mode: str) -> None:
    """What an op without a native vk kernel does: ``"warn"`` (run on the CPU, warn once per
    op), ``"silent"`` (run on the CPU) or ``"error"`` (raise NotImplementedError)."""
    _require_native()._set_fallback_mode(str(mode))


def fallback_mode() -> str:
    """The current fallback mode (``"warn"``, ``"silent"`` or ``"error"``)."""
    return str(_require_native()._get_fallback_mode())


def compile_shader(source: str, name: str = "kernel"):
    """Compiles GLSL compute source at run time into a kernel callable on vk tensors
    (``kernel(x, y, n, 2.0, threads=n)``), like ``torch.mps.compile_shader``: ABI and examples
    in torch_vk/shader.py and docs/CUSTOM_KERNELS.md."""
    from torch_vk.shader import compile_shader as compile_glsl

    return compile_glsl(source, name)


_module_ready = True
