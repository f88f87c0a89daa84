"""One coverage unit: the OpInfo samples of one (op, dtype, check), run on the CPU and on "vk"
and compared.

Imported only inside a worker process, after ``torch_vk`` (the worker sets
``TORCH_VK_FALLBACK=error`` first), because ``torch.testing._internal.common_device_type``
decides at its import whether the PrivateUse1 backend exists.

Checks (``check`` of a unit):

- ``sample``: ``op.sample_inputs`` through the function variant (the default pass);
- ``reference``: ``op.reference_inputs`` (a superset with edge cases);
- ``noncontig``: ``SampleInput.noncontiguous()`` samples, moved to vk with their strides kept;
- ``out``: the ``out=`` variant, into tensors allocated on each side;
- ``inplace``: ``op.inplace_variant`` on a copy of the input;
- ``grad``: forward and ``torch.autograd.grad`` of every differentiable output.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import torch
from torch.testing import assert_close
from torch.utils._pytree import tree_flatten, tree_map

DEV = "vk"
CHECKS = ("sample", "reference", "noncontig", "out", "inplace", "grad")

# (atol, rtol) for floating results, by result dtype. Integer and bool results compare exactly.
# float16/bfloat16 allow about one/two units in the last place (the device computes in fp32 and
# rounds once), float32 allows for device transcendental functions and summation order.
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-5, 1e-4),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1.6e-2),
    torch.complex128: (1e-7, 1e-7),  # as their real parts
    torch.complex64: (1e-5, 1e-4),
}

# Ops whose results depend on random numbers: compared for shape and dtype only (the samples
# are still generated on the CPU). Together with OpInfo's has_nondeterministic_output (empty*).
RANDOM_OPS = frozenset({
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal",
    "uniform", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
    "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "nn.functional.gumbel_softmax",
    "nn.functional.scaled_dot_product_attention", "torch.ops.aten._flash_attention_forward",
    "torch.ops.aten._efficient_attention_forward",
})

# Positional arguments that the op requires on the CPU (tensor_split's indices_or_sections).
CPU_ARGS = {"tensor_split": (0,)}

# Order of precedence when samples of one unit end differently (first wins).
PRECEDENCE = ("crashed", "mismatch", "error", "not_implemented", "passed", "skipped")

_MISSING_RE = re.compile(r"(aten::[\w.]+) has no native vk kernel")
_DEVICE_LOST_RE = re.compile(r"device[_ ]lost", re.IGNORECASE)


class DeviceLost(Exception):
    """The device reported loss: the worker process must not run anything else."""


class Mismatch(AssertionError):
    """A vk result differs from the CPU's (values, shape, dtype, structure or device)."""


class _Skip(Exception):
    """This sample cannot be checked (the reason is the message)."""


def _seeded_aten_op(name: str) -> bool:
    """True when ``name`` is an aten op with an overload tagged nondeterministic_seeded."""
    if "." in name:
        return False
    packet = getattr(torch.ops.aten, name, None) if hasattr(torch.ops.aten, name) else None
    if packet is None:
        return False
    try:
        return any(torch.Tag.nondeterministic_seeded in getattr(packet, o).tags
                   for o in packet.overloads())
    except Exception:
        return False


def is_shape_only(op) -> bool:
    """True for ops whose values cannot be compared: random or uninitialized results."""
    return (op.name in RANDOM_OPS or bool(getattr(op, "has_nondeterministic_output", False))
            or _seeded_aten_op(op.name))


def op_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def planned_checks(op, dtype, wanted) -> list[str]:
    """The checks of ``wanted`` that apply to ``op`` at ``dtype``."""
    out = []
    for check in wanted:
        if check == "out" and not op.supports_out:
            continue
        if check == "inplace" and op.inplace_variant is None:
            continue
        if check == "grad" and dtype not in op.supported_backward_dtypes("cpu"):
            continue
        out.append(check)
    return out


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(part.strip() for part in str(text).strip().splitlines() if part.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(exc: BaseException) -> str:
    return _one_line(f"{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------------------------
# Moving samples to the device


# complex dtypes vk stores (interleaved pairs of float32 / float64): results of these dtypes
# are compared like any other.
_VK_COMPLEX = (torch.complex64, torch.complex128)


def to_vk(t):
    """A vk copy of ``t`` with the same sizes, strides and storage offset (a layout-preserving
    copy of its whole storage when it is not contiguous). Non-tensors pass through."""
    if not isinstance(t, torch.Tensor):
        return t
    if t.layout != torch.strided:
        raise _Skip(f"{t.layout} tensor in the sample")
    if t.is_complex() or t.is_quantized:
        raise _Skip(f"{t.dtype} tensor in the sample (not a vk dtype)")
    requires_grad = t.requires_grad
    with torch.no_grad():
        t = t.detach()
        if t.is_neg():
            t = t.resolve_neg()
        if t.is_contiguous() and t.storage_offset() == 0 and \
                t.untyped_storage().nbytes() == t.numel() * t.element_size():
            out = t.to(DEV)
        else:
            n = t.untyped_storage().nbytes() // t.element_size()
            base = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,))
            out = base.to(DEV).as_strided(t.size(), t.stride(), t.storage_offset())
    if requires_grad:
        out = out.detach().requires_grad_(True)
    return out


def _vk_device_arg(value):
    if isinstance(value, torch.device) and value.type == "cpu":
        return torch.device(DEV)
    if isinstance(value, str) and (value == "cpu" or value.startswith("cpu:")):
        return DEV
    return value


def move_sample(sample, factory: bool = False, cpu_args=()):
    """The sample with every tensor copied to vk and ``device=`` (factory functions: added
    when missing) and positional CPU device arguments (``Tensor.to``) replaced by vk; the
    positional arguments ``cpu_args`` stay as they are (ops that want them on the CPU)."""
    kept = {i: sample.args[i] for i in cpu_args if i < len(sample.args)}
    moved = sample.transform(to_vk)
    if kept:
        moved.args = tuple(kept.get(i, a) for i, a in enumerate(moved.args))
    moved.args = tuple(_vk_device_arg(a) for a in moved.args)
    moved.kwargs = {k: (_vk_device_arg(v) if k == "device" else v)
                    for k, v in moved.kwargs.items()}
    if factory and "device" not in moved.kwargs:
        moved.kwargs["device"] = DEV
    return moved


def _tensors(tree) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _check_on_device(result) -> None:
    for t in _tensors(result):
        if t.device.type != DEV:
            raise Mismatch(f"a result is on {t.device}, not on {DEV}")


def _cpu(tree):
    return tree_map(lambda t: t.detach().cpu() if isinstance(t, torch.Tensor) else t, tree)


# ---------------------------------------------------------------------------------------------
# Comparing results


def _rms(x: torch.Tensor) -> float:
    return float(x.square().mean().sqrt()) if x.numel() else 0.0


def _as_accurate_as_cpu(actual, expected, ref, atol: float) -> str | None:
    """When the vk and CPU results differ by more than the tolerance, the difference can be
    rounding (a composite op rounds each intermediate; both sides do, in different places):
    accepted when the vk result is about as close to a float64 CPU reference as the CPU result
    is (RMS error at most twice the CPU's, plus atol). Returns None when accepted, else why not."""
    if ref is None or not isinstance(ref, torch.Tensor) or ref.shape != expected.shape \
            or not ref.is_floating_point():
        return "no float64 reference"
    a, e, r = actual.double(), expected.double(), ref.double()
    fa, fe = torch.isfinite(a), torch.isfinite(e)
    both_nan = torch.isnan(a) & torch.isnan(e)
    if ((fa != fe) | (~fa & ~fe & ~both_nan & (a != e))).any():
        return "non-finite values differ"
    ok = fa & fe & torch.isfinite(r)
    err_vk, err_cpu = _rms((a - r)[ok]), _rms((e - r)[ok])
    if err_vk <= 2 * err_cpu + atol:
        return None
    return f"RMS error vs a float64 reference: vk {err_vk:.3g}, CPU {err_cpu:.3g}"


def compare(actual, expected, shape_only: bool = False, path: str = "result",
            ref=None) -> None:
    """Raises Mismatch when ``actual`` (already on the CPU) differs from ``expected``.
    ``ref``: the same structure computed in float64 on the CPU, or None (see
    ``_as_accurate_as_cpu``)."""
    def sub(r, i):
        try:
            return r[i] if r is not None else None
        except (IndexError, KeyError, TypeError):
            return None

    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise Mismatch(f"{path}: expected a tensor, got {type(actual).__name__}")
        if actual.shape != expected.shape or actual.dtype != expected.dtype:
            raise Mismatch(f"{path}: got {tuple(actual.shape)} {actual.dtype}, expected "
                                 f"{tuple(expected.shape)} {expected.dtype}")
        if shape_only:
            return
        atol, rtol = TOLERANCES.get(expected.dtype, (0.0, 0.0))
        try:
            assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True,
                         check_device=False, check_stride=False, check_layout=False)
        except AssertionError as exc:
            why = (_as_accurate_as_cpu(actual, expected, ref, atol)
                   if expected.is_floating_point() else "not floating point")
            if why is None:
                return
            extra = "" if why.startswith(("no float64", "not floating")) else f"; {why}"
            raise Mismatch(f"{path}: {_one_line(str(exc), 300)}{extra}") from None
    elif isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise Mismatch(f"{path}: expected a sequence of {len(expected)}, got "
                                 f"{type(actual).__name__}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            compare(a, e, shape_only, f"{path}[{i}]", sub(ref, i))
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise Mismatch(f"{path}: dict keys differ")
        for k in expected:
            compare(actual[k], expected[k], shape_only, f"{path}[{k!r}]", sub(ref, k))
    elif isinstance(expected, float) and isinstance(actual, (int, float)) and not shape_only:
        try:
            assert_close(float(actual), expected, atol=1e-5, rtol=1e-4, equal_nan=True)
        except AssertionError as exc:
            raise Mismatch(f"{path}: {_one_line(str(exc), 300)}") from None
    elif not shape_only and actual != expected:
        raise Mismatch(f"{path}: got {actual!r}, expected {expected!r}")


# ---------------------------------------------------------------------------------------------
# Running one sample

_LOW_PRECISION = (torch.float16, torch.bfloat16, torch.float32)


def _upcast(sample):
    """A float64 copy of the sample (floating tensors and dtype arguments), for the
    reference; leaves that require grad stay leaves that require grad."""
    def f(x):
        if isinstance(x, torch.dtype):
            return torch.float64 if x in _LOW_PRECISION else x
        if isinstance(x, torch.Tensor):
            y = x.detach()
            y = y.to(torch.float64) if y.dtype in _LOW_PRECISION else y.clone()
            return y.requires_grad_(x.requires_grad)
        return x
    return sample.transform(f)


def _call(fn, sample, **extra):
    return fn(sample.input, *sample.args, **sample.kwargs, **extra)


_DTYPE_MISSING_RE = re.compile(r"not implemented for '\w+' on vk")


def _classify(exc: BaseException) -> tuple[str, str]:
    msg = _describe(exc)
    if _DEVICE_LOST_RE.search(msg):
        raise DeviceLost(msg)
    if isinstance(exc, NotImplementedError) or _MISSING_RE.search(msg) \
            or _DTYPE_MISSING_RE.search(msg):
        return "not_implemented", msg
    return "error", msg


def _empty_like_on(t, device):
    if isinstance(t, torch.Tensor):
        return torch.empty(t.shape, dtype=t.dtype, device=device)
    raise _Skip("the op returns a non-tensor; no out= form to check")


def _grad_parts(sample, result):
    processed = sample.output_process_fn_grad(result)
    outputs = [t for t in _tensors(processed) if t.requires_grad and t.is_floating_point()]
    inputs = [t for t in _tensors([sample.input, sample.args, sample.kwargs]) if t.requires_grad]
    return processed, outputs, inputs


def _grad_outputs_for(outputs, given):
    if given is not None:
        if len(given) != len(outputs):
            raise RuntimeError("a different number of differentiable outputs")
        return [g.to(device=o.device, dtype=o.dtype) for g, o in zip(given, outputs)]
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(o.shape, generator=gen).to(o.dtype) for o in outputs]


def _side(op, check: str, sample, grad_outputs=None, out_like=None):
    """Runs ``check`` on ``sample`` (on whichever device its tensors are); returns (the
    results to compare, the gradient seeds used). ``out_like``: for the vk side of ``out``,
    the CPU result, whose shapes and dtypes the vk out= tensors take."""
    if check == "out":
        if "out" in sample.kwargs:
            raise _Skip("the sample already passes out=")
        if out_like is None:
            plain = _call(op, sample)
            out = tree_map(lambda t: _empty_like_on(t, "cpu"), plain)
        else:
            out = tree_map(lambda t: _empty_like_on(t, DEV), out_like)
        _call(op, sample, out=out)
        return out, None
    if check == "inplace":
        if getattr(sample, "broadcasts_input", False) or not isinstance(
                sample.input, torch.Tensor):
            raise _Skip("in-place on a broadcast or non-tensor input")
        result = _call(op.inplace_variant, sample)
        return (sample.input, result), None
    if check == "grad":
        result = _call(op, sample)
        fwd, outs, ins = _grad_parts(sample, result)
        if not outs or not ins:
            raise _Skip("no differentiable output or input")
        seeds = _grad_outputs_for(outs, grad_outputs)
        grads = torch.autograd.grad(outs, ins, seeds, allow_unused=True, materialize_grads=True)
        return (fwd, grads), seeds
    return sample.output_process_fn_grad(_call(op, sample)), None


def run_sample(op, check: str, sample, dtype: torch.dtype, shape_only: bool) -> None:
    """Runs one sample on the CPU and on vk and compares. Raises _Skip (the CPU rejects the
    sample, or it cannot be checked), Mismatch or the op's exception."""
    factory = getattr(op, "is_factory_function", False) or "device" in sample.kwargs
    if not factory and not _tensors([sample.input, sample.args, sample.kwargs]):
        raise _Skip("no tensor in the sample (it runs on the CPU)")
    # copies first: in-place ops mutate their input
    vk_sample = move_sample(sample, factory, CPU_ARGS.get(op.name, ()))
    hp_sample = _upcast(sample) if dtype in _LOW_PRECISION and not shape_only else None
    try:
        expected, seeds = _side(op, check, sample)
        expected = _cpu(expected)
    except _Skip:
        raise
    except Exception as exc:  # the CPU rejects it: not a valid sample
        raise _Skip(f"the CPU raised {_describe(exc)}") from None
    if any(t.is_complex() and t.dtype not in _VK_COMPLEX for t in _tensors(expected)):
        raise _Skip("a complex result of a dtype vk does not hold")

    actual, _ = _side(op, check, vk_sample, seeds, out_like=expected if check == "out" else None)
    _check_on_device(actual)
    actual = _cpu(actual)
    try:
        compare(actual, expected, shape_only)
    except Mismatch as first:
        if hp_sample is None:
            raise
        try:
            ref, _ = _side(op, check, hp_sample,
                           [s.double() for s in seeds] if seeds is not None else None)
            ref = _cpu(ref)
        except Exception:
            raise first from None  # no reference: the first comparison's error stands
        compare(actual, expected, shape_only, ref=ref)


# ---------------------------------------------------------------------------------------------
# One unit


def _samples(op, dtype, check):
    requires_grad = check == "grad"
    if check == "reference":
        samples = op.reference_inputs("cpu", dtype, requires_grad=requires_grad)
    else:
        samples = op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
    for s in samples:
        yield s.noncontiguous() if check == "noncontig" else s


def run_unit(op, dtype: torch.dtype, check: str, max_samples: int | None) -> dict[str, Any]:
    """Runs up to ``max_samples`` samples and returns the unit's record (status, counts per
    sample status, first message per status, the aten ops that fell back)."""
    start = time.perf_counter()
    torch.manual_seed(0)
    shape_only = is_shape_only(op)
    counts = dict.fromkeys(PRECEDENCE, 0)
    messages: dict[str, str] = {}
    missing: list[str] = []
    index = -1
    device_lost, generation_error = False, ""
    try:
        it = _samples(op, dtype, check)
        if max_samples is not None:
            it = itertools.islice(it, max_samples)
        for index, sample in enumerate(it):
            status, msg = "passed", ""
            try:
                run_sample(op, check, sample, dtype, shape_only)
            except _Skip as exc:
                status, msg = "skipped", str(exc)
            except DeviceLost:
                raise
            except Mismatch as exc:
                status, msg = "mismatch", _one_line(str(exc))
            except Exception as exc:
                status, msg = _classify(exc)
                m = _MISSING_RE.search(msg)
                if m and m.group(1) not in missing:
                    missing.append(m.group(1))
            counts[status] += 1
            if msg and status not in messages:
                messages[status] = f"sample {index}: {msg}"
    except DeviceLost as exc:
        counts["crashed"] += 1
        messages["crashed"] = f"sample {index}: device lost: {exc}"
        device_lost = True
    except Exception as exc:  # the sample generator itself failed
        generation_error = f"sample generation failed after {index + 1} samples: {_describe(exc)}"
        messages.setdefault("skipped", generation_error)
    status = next((s for s in PRECEDENCE if counts[s]), "skipped")
    message = messages.get(status, "no samples" if status == "skipped" else "")
    record = {
        "status": status,
        "message": message,
        "samples": {k: v for k, v in counts.items() if v},
        "missing": missing,
        "seconds": round(time.perf_counter() - start, 3),
    }
    if shape_only:
        record["note"] = ("values not compared (random or uninitialized results): "
                          "shape and dtype only")
    if generation_error and status != "skipped":
        record["note"] = generation_error
    if device_lost:
        record["device_lost"] = True
    return record
