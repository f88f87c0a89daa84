"""The ``torch.vk`` device module: devices, streams, events, memory and random state.

Modelled on ``torch.cuda``. Everything here is usable after ``import torch_vk`` (or torch's
backend autoload). Querying functions (``is_available``, ``device_count``, ``memory_allocated``
...) never fail on a machine without Vulkan; functions that need a device raise a
``RuntimeError`` that says what is missing.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterable

import torch

__all__ = [
    "is_available", "is_initialized", "init", "device_count", "current_device", "set_device",
    "device", "device_of", "synchronize", "get_device_name", "get_device_properties",
    "get_device_capability", "VkDeviceProperties",
    "memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved",
    "reset_peak_memory_stats", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "memory_stats", "memory_summary", "empty_cache", "mem_get_info", "host_memory_stats",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
    "set_rng_state", "get_rng_state_all", "set_rng_state_all",
    "Stream", "Event", "current_stream", "default_stream", "set_stream", "stream",
    "get_amp_supported_dtype", "is_bf16_supported",
]

# ---------------------------------------------------------------------------- native module

_C: Any = None
_import_error: str | None = None


def _bind(native: Any, error: str | None) -> None:
    """Called by torch_vk/__init__.py with the loaded extension (or the reason it failed)."""
    global _C, _import_error
    _C = native
    _import_error = error


def _unavailable_reason() -> str:
    if _C is None:
        return f"the torch_vk native extension could not be loaded ({_import_error})"
    reason = _C._unavailable_reason()
    if reason.startswith("torch-vk: "):
        reason = reason[len("torch-vk: "):]
    return reason or "no usable Vulkan device was found"


def _require_native() -> Any:
    if _C is None:
        raise RuntimeError(f"torch-vk: the vk device is not available: {_unavailable_reason()}")
    return _C


# ---------------------------------------------------------------------------- initialization

_initialized = False
_init_lock = threading.Lock()


def is_available() -> bool:
    """True when at least one usable Vulkan device is present. Never raises."""
    if _C is None:
        return False
    try:
        return bool(_C._is_available())
    except Exception:
        return False


def _is_in_bad_fork() -> bool:
    return bool(_C is not None and _C._is_in_bad_fork())


def is_initialized() -> bool:
    return _initialized and not _is_in_bad_fork()


def _lazy_init() -> None:
    """Checks that the device is usable (raising a clear RuntimeError otherwise)."""
    global _initialized
    if is_initialized():
        return
    with _init_lock:
        if is_initialized():
            return
        native = _require_native()
        if _is_in_bad_fork():
            raise RuntimeError(
                "torch-vk: cannot re-initialize the vk device in a forked subprocess. To use vk "
                "with multiprocessing, use the 'spawn' start method.")
        if not native._is_available():
            raise RuntimeError(f"torch-vk: the vk device is not available: {_unavailable_reason()}")
        native._init()
        _initialized = True


def init() -> None:
    """Initializes the vk backend (raises when no device is usable)."""
    _lazy_init()


# ---------------------------------------------------------------------------- devices

def device_count() -> int:
    """Number of visible Vulkan devices (0 without Vulkan). Never raises."""
    if _C is None:
        return 0
    try:
        return int(_C._device_count())
    except Exception:
        return 0


def _get_device_index(dev: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """Index of a vk device given as int, str, torch.device or None (-1 / current)."""
    if dev is None:
        if optional:
            return current_device()
        raise ValueError("torch-vk: expected a vk device, got None")
    if isinstance(dev, str):
        dev = torch.device(dev)
    if isinstance(dev, torch.device):
        if dev.type == "cpu" and allow_cpu:
            return -1
        if dev.type not in ("vk", "privateuseone"):
            raise ValueError(f"torch-vk: expected a vk device, got {dev}")
        if dev.index is None:
            return current_device() if optional else -1
        return dev.index
    if isinstance(dev, int):
        return dev
    raise ValueError(f"torch-vk: cannot interpret {dev!r} as a vk device")


def current_device() -> int:
    """Index of the current vk device of this thread."""
    if _C is None:
        return 0
    return int(_C._get_device())


def set_device(device: Any) -> None:
    index = _get_device_index(device, optional=False)
    if index >= 0:
        _lazy_init()
        _C._set_device(index)


class device:
    """Context manager that changes the current vk device."""

    def __init__(self, device: Any):
        self.idx = _get_device_index(device, optional=True) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            _lazy_init()
            self.prev_idx = _C._exchange_device(self.idx)
        return self

    def __exit__(self, *args: Any) -> bool:
        if self.prev_idx >= 0:
            _C._maybe_exchange_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current (no-op for CPU)."""

    def __init__(self, obj: Any):
        idx = obj.get_device() if getattr(obj, "is_vk", False) else -1
        super().__init__(idx)


def synchronize(device: Any = None) -> None:
    """Waits for all work on all streams of ``device`` (default: current) to finish."""
    _lazy_init()
    _C._synchronize(_get_device_index(device, optional=True))


class VkDeviceProperties:
    """Properties of a Vulkan device (see ``python -m torch_vk info``)."""

    def __init__(self, props: dict):
        self._props = dict(props)
        for key, value in props.items():
            setattr(self, key, value)
        self.driver = f"{props.get('driver_name', '')} {props.get('driver_info', '')}".strip()

    def as_dict(self) -> dict:
        return dict(self._props)

    def __repr__(self) -> str:
        p = self._props
        return (f"_VkDeviceProperties(name='{p['name']}', vendor='{p['vendor']}', "
                f"type='{p['device_type']}', driver='{self.driver}', "
                f"api_version={p['api_version']}, total_memory={p['total_memory'] // (1 << 20)}MB, "
                f"unified_memory={p['unified_memory']}, float16={p['float16']}, "
                f"float64={p['float64']}, subgroup_size={p['subgroup_size']}, "
                f"cooperative_matrix={p['cooperative_matrix']})")


def get_device_properties(device: Any = None) -> VkDeviceProperties:
    native = _require_native()
    index = _get_device_index(device, optional=True)
    if not 0 <= index < device_count():
        if device_count() == 0:
            raise RuntimeError(f"torch-vk: the vk device is not available: {_unavailable_reason()}")
        raise AssertionError(f"torch-vk: invalid device index {index}")
    return VkDeviceProperties(native._get_device_properties(index))


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The Vulkan API version (major, minor) the device supports."""
    major, minor, *_ = (int(x) for x in get_device_properties(device).api_version.split("."))
    return major, minor


# ---------------------------------------------------------------------------- memory

def memory_stats(device: Any = None) -> dict[str, Any]:
    """Allocator statistics, with the keys of ``torch.cuda.memory_stats``."""
    if _C is None or device_count() == 0:
        return {}
    stats = _C._memory_stats(_get_device_index(device, optional=True))
    return dict(sorted(stats.items()))


def _stat(device: Any, key: str) -> int:
    return int(memory_stats(device).get(key, 0))


def memory_allocated(device: Any = None) -> int:
    return _stat(device, "allocated_bytes.all.current")


def max_memory_allocated(device: Any = None) -> int:
    return _stat(device, "allocated_bytes.all.peak")


def memory_reserved(device: Any = None) -> int:
    return _stat(device, "reserved_bytes.all.current")


def max_memory_reserved(device: Any = None) -> int:
    return _stat(device, "reserved_bytes.all.peak")


def reset_peak_memory_stats(device: Any = None) -> None:
    if _C is not None and device_count() > 0:
        _C._reset_peak_memory_stats(_get_device_index(device, optional=True))


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: Any = None) -> None:
    if _C is not None and device_count() > 0:
        _C._reset_accumulated_memory_stats(_get_device_index(device, optional=True))


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A table of the allocator's statistics, like ``torch.cuda.memory_summary``."""
    from torch_vk import memory

    return memory.memory_summary(device, abbreviated)


def empty_cache() -> None:
    """Releases cached, unused device memory (after waiting for pending work)."""
    if _C is not None and device_count() > 0:
        _C._empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device's memory heap."""
    _lazy_init()
    return tuple(_C._mem_get_info(_get_device_index(device, optional=True)))


def host_memory_stats() -> dict[str, int]:
    """Pinned host memory: bytes handed out and bytes reserved."""
    if _C is None:
        return {"allocated_bytes": 0, "reserved_bytes": 0}
    return dict(_C._host_memory_stats())


# ---------------------------------------------------------------------------- random

_default_generators: dict[int, torch.Generator] = {}


def _default_generator(index: int) -> torch.Generator:
    gen = _default_generators.get(index)
    if gen is None:
        gen = _default_generators.setdefault(index, _require_native()._get_default_generator(index))
    return gen


def _generator(device: Any = None) -> torch.Generator:
    _lazy_init()
    return _default_generator(_get_device_index(device, optional=True))


def __getattr__(name: str) -> Any:
    # torch.vk.default_generators: one torch.Generator per device (like torch.cuda's).
    if name == "default_generators":
        return tuple(_default_generator(i) for i in range(device_count()))
    if name == "memory":  # torch.vk.memory (torch_vk/memory.py), imported on first use
        import importlib

        return importlib.import_module("torch_vk.memory")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_rng_state(device: Any = "vk") -> torch.Tensor:
    """The random state of ``device`` as a ByteTensor (seed, offset)."""
    return _generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state: torch.Tensor, device: Any = "vk") -> None:
    with torch._C._DisableFuncTorch():
        state = new_state.clone(memory_format=torch.contiguous_format)
    _generator(device).set_state(state)


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    """Seeds the current vk device (silently does nothing without a device)."""
    if device_count() == 0:
        return
    _default_generator(current_device()).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds every vk device (silently does nothing without a device)."""
    for i in range(device_count()):
        _default_generator(i).manual_seed(int(seed))


def seed() -> None:
    if device_count() == 0:
        return
    _default_generator(current_device()).seed()


def seed_all() -> None:
    n = device_count()
    if n == 0:
        return
    random_seed = _default_generator(0).seed()
    for i in range(1, n):
        _default_generator(i).manual_seed(random_seed)


def initial_seed() -> int:
    return _generator(None).initial_seed()


# ---------------------------------------------------------------------------- streams / events

_PRIVATEUSE1 = 20  # c10::DeviceType::PrivateUse1


class Stream(torch.Stream):
    """A vk stream (an in-order queue of work; ``torch.Stream`` subclass).

    ``Stream()`` / ``Stream(device, priority=0)`` take a stream from the device's stream pool;
    ``with s:`` (or ``torch.vk.stream(s)``) makes it the current stream.
    """

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any):
        if kwargs:  # stream_id / device_index / device_type: wrap an existing stream
            return super().__new__(cls, **kwargs)
        _lazy_init()
        index = _get_device_index(device, optional=True)
        return super().__new__(cls, device=torch.device("vk", index), priority=priority)

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # torch.Stream does it in __new__
        pass

    def wait_event(self, event: "torch.Event") -> None:
        event.wait(self)

    def wait_stream(self, stream: "torch.Stream") -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: "torch.Event | None" = None) -> "torch.Event":
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        if isinstance(other, torch.Stream):
            return (self.stream_id, self.device_index, self.device_type) == (
                other.stream_id, other.device_index, other.device_type)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.stream_id, self.device_index, self.device_type))

    def __repr__(self) -> str:
        return f"<torch.vk.Stream device=vk:{self.device_index} stream_id={self.stream_id}>"


def _wrap_stream(triple: tuple[int, int, int]) -> Stream:
    stream_id, index, device_type = triple
    return Stream(stream_id=stream_id, device_index=index, device_type=device_type)


class Event(torch.Event):
    """A vk event: a point in a stream (``torch.Event`` subclass)."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False, device: Any = None):
        _lazy_init()
        index = _get_device_index(device, optional=True)
        return super().__new__(cls, device=torch.device("vk", index), enable_timing=enable_timing,
                               blocking=blocking, interprocess=interprocess)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def record(self, stream: "torch.Stream | None" = None) -> None:
        super().record(current_stream() if stream is None else stream)

    def wait(self, stream: "torch.Stream | None" = None) -> None:
        super().wait(current_stream() if stream is None else stream)

    def elapsed_time(self, end_event: "torch.Event") -> float:
        """Milliseconds between this event and ``end_event`` (both recorded with timing)."""
        return float(_C._event_elapsed_time(self, end_event))

    def __repr__(self) -> str:
        return f"<torch.vk.Event device={self.device}>"


def current_stream(device: Any = None) -> Stream:
    _lazy_init()
    return _wrap_stream(_C._current_stream(_get_device_index(device, optional=True)))


def default_stream(device: Any = None) -> Stream:
    _lazy_init()
    return _wrap_stream(_C._default_stream(_get_device_index(device, optional=True)))


def set_stream(stream: "torch.Stream | None") -> None:
    if stream is None:
        return
    _lazy_init()
    _C._set_stream(stream.stream_id, stream.device_index)


@contextlib.contextmanager
def stream(s: "torch.Stream | None"):
    """Makes ``s`` the current stream (and its device the current device) inside the block."""
    if s is None:
        yield
        return
    _lazy_init()
    prev_device = current_device()
    if s.device_index != prev_device:
        _C._set_device(s.device_index)
    prev_here = _C._current_stream(s.device_index)
    prev_there = _C._current_stream(prev_device)
    _C._set_stream(s.stream_id, s.device_index)
    try:
        yield
    finally:
        _C._set_stream(prev_here[0], prev_here[1])
        if s.device_index != prev_device:
            _C._set_stream(prev_there[0], prev_there[1])
            _C._set_device(prev_device)


# ---------------------------------------------------------------------------- AMP

def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is stored as 16 bits and computed in fp32 on every device."""
    return is_available()
