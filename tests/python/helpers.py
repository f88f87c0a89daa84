"""Comparison helpers: run the same function on CPU tensors and on "vk" copies of them."""
import inspect

import pytest
import torch
import torch_vk
from torch.testing import assert_close
from torch.utils._pytree import tree_map

VK = torch.device("vk")

# Tolerances per dtype for results computed on the device (fp32 math everywhere).
TOLERANCE = {
    torch.float32: dict(atol=1e-5, rtol=1.3e-6 * 10),
    torch.float16: dict(atol=1e-3, rtol=1e-3),
    torch.bfloat16: dict(atol=1e-2, rtol=1.6e-2),
}


def to_vk(x):
    return x.to(VK) if isinstance(x, torch.Tensor) else x


def to_cpu(x):
    return x.cpu() if isinstance(x, torch.Tensor) else x


def _check_callable(fn, args, kwargs):
    """A test whose fn cannot take its arguments would compare two identical TypeErrors and
    pass without running anything: make that a test error instead."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a Python signature
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(f"check(): {getattr(fn, '__name__', fn)} cannot take the given "
                        f"arguments ({error})") from None


def check(fn, *args, atol=None, rtol=None, **kwargs):
    """fn(*args) on CPU vs fn(*vk_args) on vk: same values, dtype and shape, or the same
    exception type when the CPU raises."""
    _check_callable(fn, args, kwargs)
    cpu_args = tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, args)
    vk_args = tree_map(to_vk, args)
    try:
        expected = fn(*cpu_args, **kwargs)
    except Exception as cpu_error:  # the device must reject the same input
        try:
            fn(*vk_args, **kwargs)
        except type(cpu_error):
            return None
        except Exception as vk_error:
            raise AssertionError(f"CPU raised {type(cpu_error).__name__}: {cpu_error}; "
                                 f"vk raised {type(vk_error).__name__}: {vk_error}") from vk_error
        raise AssertionError(f"CPU raised {type(cpu_error).__name__}: {cpu_error}; vk did not")
    actual = fn(*vk_args, **kwargs)

    def device_of(x):
        if isinstance(x, torch.Tensor):
            assert x.device.type == "vk", f"result on {x.device}"
        return x

    tree_map(device_of, actual)
    actual = tree_map(to_cpu, actual)
    dtype = expected.dtype if isinstance(expected, torch.Tensor) else None
    tol = TOLERANCE.get(dtype, {}) if atol is None else dict(atol=atol, rtol=rtol)
    assert_close(actual, expected, equal_nan=True, **tol)
    # In-place ops mutate their inputs: those must match too.
    for a, e in zip(vk_args, cpu_args):
        if isinstance(a, torch.Tensor):
            assert_close(a.cpu(), e, equal_nan=True, **tol)
    return actual


def make(shape, dtype, low=-3.0, high=3.0, seed=0):
    """A CPU tensor of `shape` with values that exercise the op (negatives, zero, fractions)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low).to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(int(low) * 10, info.min), min(int(high) * 10 + 1, info.max)
    return torch.randint(lo, hi, shape, generator=g, dtype=dtype)



def with_ties(shape, dtype, seed=0):
    """A CPU tensor with many ties (values in a range of 5, negatives where the dtype has them),
    for ops whose tie rule or stable order matters (sort, cummax, mode, unique...)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    x = torch.randint(0, 5, shape, generator=g)
    if dtype.is_floating_point or dtype in (torch.int8, torch.int16, torch.int32, torch.int64):
        x = x - 2
    return x.to(dtype)

def _strided(x):
    big = torch.empty(x.shape + (2,), dtype=x.dtype, device=x.device)
    view = big[..., 1]
    view.copy_(x)
    return view


def _offset(x):
    flat = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
    view = flat[1:].view(x.shape)
    view.copy_(x)
    return view


def layouts(t):
    """Views holding the same logical values in different memory layouts, made on the
    tensor's own device (a CPU->vk copy does not keep strides): contiguous, transposed,
    strided, storage-offset. Apply them inside the checked function so that the CPU and the
    vk side get the same layout."""
    yield "contiguous", lambda x: x
    if t.dim() >= 2:
        yield "transposed", lambda x: x.transpose(0, 1).contiguous().transpose(0, 1)
    if t.dim() >= 1:
        yield "strided", _strided
        yield "offset", _offset


def same_error_by_device(fn):
    """fn("cpu") and fn("vk") raise the same exception type with the same message."""
    with pytest.raises(Exception) as cpu_error:
        fn("cpu")
    with pytest.raises(type(cpu_error.value)) as vk_error:
        fn("vk")
    assert str(vk_error.value) == str(cpu_error.value)


def dispatch_count(fn):
    """The kernel dispatches fn() records (torch_vk.stats()), between two synchronizations."""
    torch.vk.synchronize()
    before = torch_vk.stats()["dispatches"]
    fn()
    torch.vk.synchronize()
    return torch_vk.stats()["dispatches"] - before
