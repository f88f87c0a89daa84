"""Lazy, version-guarded adapters for libraries that only know the device names they list.

Each adapter module here patches one library, and only once the user imports it: `install()`
(run when torch-vk registers the device) puts a one-shot import hook on `sys.meta_path` for each
library that is not imported yet, and patches at once the ones that already are. Nothing is
imported eagerly, nothing changes for a library the user never imports, and every patch checks
the library's version and its own preconditions (vk available) before touching anything.
`docs/INTEGRATIONS.md` lists, per library, what is patched, why, and the upstream change that
would make the patch unnecessary.

Adapter contract: a module `torch_vk.integrations.<name>` with `TARGETS` (the module names
whose import triggers it) and `patch(module)` (called with the freshly imported target module;
must be idempotent and must never raise: failures become a RuntimeWarning).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any, Callable

# Adapter modules of this package, in the order they are installed.
ADAPTERS = ("safetensors", "transformers", "peft", "torchao", "accelerate")


def is_vk(device: Any) -> bool:
    """True for torch.device("vk"...), "vk", "vk:N"."""
    import torch

    if isinstance(device, torch.device):
        return device.type == "vk"
    return isinstance(device, str) and (device == "vk" or device.startswith("vk:"))


def vk_available() -> bool:
    """Whether the vk device is registered and has a device (the adapters' precondition)."""
    import torch

    module = getattr(torch, "vk", None)
    try:
        return module is not None and bool(module.is_available())
    except Exception:  # pragma: no cover - defensive
        return False


def _safe(patch: Callable[[Any], None], name: str) -> Callable[[Any], None]:
    def run(module: Any) -> None:
        try:
            patch(module)
        except Exception as exc:  # never break the user's import
            warnings.warn(f"torch-vk: adapting {name} for the 'vk' device failed: "
                          f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)
    return run


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `patch(module)` right after `name` is imported (one shot).

    A finder is also asked by availability probes (`importlib.util.find_spec(name)`, which
    libraries call to check whether another one is installed) that never execute the module:
    so the spec it returns patches when its module is executed, and the finder leaves
    sys.meta_path only then.
    """

    def __init__(self, name: str, patch: Callable[[Any], None]):
        self.name = name
        self.patch = patch
        self._searching = False

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name or self._searching:
            return None
        self._searching = True  # the search below asks the other finders, not this one
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module
        finder = self

        def exec_then_patch(module):
            exec_module(module)
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            finder.patch(module)

        spec.loader.exec_module = exec_then_patch
        return spec


def after_import(name: str, patch: Callable[[Any], None]) -> None:
    """Calls `patch(module)` once `name` is imported: at once if it already is."""
    module = sys.modules.get(name)
    if module is not None:
        patch(module)
    elif not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(name, patch))


def install() -> None:
    """Installs every adapter's import hook (idempotent); never raises."""
    for adapter in ADAPTERS:
        try:
            module = importlib.import_module(f"{__name__}.{adapter}")
            for target in module.TARGETS:
                after_import(target, _safe(module.patch, target))
        except Exception as exc:  # pragma: no cover - defensive
            warnings.warn(f"torch-vk: the {adapter} adapter could not be installed: {exc}",
                          RuntimeWarning, stacklevel=2)
