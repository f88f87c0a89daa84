"""Differential fuzzing of torch-vk against PyTorch's CPU.

Each op of ``OPS`` (torch_vk/fuzz_ops.py) is a generator: given a source of random choices
(a ``random.Random``; ``tests/fuzz`` draws its seeds with hypothesis) it draws one *case*: inputs of random shapes
(0-4 dims, empty and 0-dim included), dtypes (every storable one; float64 where the device
has it), layouts (transposed, sliced with steps, expanded, storage offsets), Python and 0-dim
scalars of other dtypes, ``out=`` tensors of other dtypes and in-place variants. A case runs
on the CPU and on vk from the same values and is checked:

* the CPU raises -> vk raises an exception of the same type;
* the CPU succeeds -> vk succeeds and every result (and every tensor the op mutates) has the
  CPU's dtype, shape and values: exact for integers and bool, within tolerances like OpInfo's
  for floating dtypes (NaN where the CPU has NaN).

Results the CPU leaves unspecified are compared in a way that is still a check: sorts run
with ``stable=True``, ``topk`` / ``kthvalue`` / ``max(dim)`` compare values and check the
indices by gathering through them, random ops are not fuzzed, ``empty`` results are never read.

``python -m torch_vk fuzz --cases N [--seed S] [--ops PATTERN]`` runs cases on demand; the CI
profile is ``tests/fuzz`` (hypothesis, derandomized, bounded).
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
import time
import traceback
import warnings
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F

BOOL = torch.bool
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
HALF = [torch.float16, torch.bfloat16]
FLOATS32 = [torch.float16, torch.bfloat16, torch.float32]


def storable_dtypes(float64: bool = True) -> list[torch.dtype]:
    return [BOOL] + INTS + FLOATS32 + ([torch.float64] if float64 else [])


# ---------------------------------------------------------------- random choices

class Gen:
    """Draws case ingredients from `r` (a random.Random or hypothesis' st.randoms())."""

    def __init__(self, r: random.Random, float64: bool = True):
        self.r = r
        self.float64 = float64
        self.all_dtypes = storable_dtypes(float64)
        self.float_dtypes = FLOATS32 + ([torch.float64] if float64 else [])
        self.int_dtypes = list(INTS)

    # primitives
    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def choice(self, seq: Sequence):
        return seq[self.r.randrange(len(seq))]

    def dtype(self, among: Sequence[torch.dtype] | None = None) -> torch.dtype:
        among = [d for d in (among or self.all_dtypes) if d in self.all_dtypes]
        return self.choice(among)

    # shapes
    def size(self, empty: bool = True) -> int:
        if empty and self.chance(0.06):
            return 0
        return self.choice([1, 1, 2, 3, 4, 5]) if self.chance(0.8) else self.int(6, 9)

    def shape(self, lo: int = 0, hi: int = 4, empty: bool = True) -> tuple[int, ...]:
        n = self.int(lo, hi)
        return tuple(self.size(empty) for _ in range(n))

    def broadcast_partner(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts with `shape` (fewer leading dims, some dims 1)."""
        s = list(shape)
        if s and self.chance(0.3):
            s = s[self.int(1, len(s)):]
        s = [1 if (d != 0 and self.chance(0.25)) else d for d in s]
        return tuple(s)

    # values
    def values(self, shape, dtype: torch.dtype, kind: str = "any") -> torch.Tensor:
        """A CPU tensor of `shape` / `dtype`. kind: any, positive, nonzero, unit (|x| < 1),
        small (integers in [-3, 3]), index:N (integers in [0, N)), finite."""
        n = math.prod(shape)
        if dtype == torch.bool:
            vals = [True if kind in ("nonzero", "positive") else self.chance(0.5) for _ in range(n)]
            return torch.tensor(vals, dtype=torch.bool).reshape(shape)
        if kind.startswith("index:"):
            hi = int(kind.split(":")[1])
            return torch.tensor([self.int(0, max(hi - 1, 0)) for _ in range(n)],
                                dtype=torch.int64).reshape(shape).to(dtype)
        if dtype.is_floating_point:
            vals = []
            for _ in range(n):
                u = self.r.random()
                if kind == "any" and u < 0.04:
                    v = self.choice([0.0, -0.0, math.inf, -math.inf, math.nan])
                elif kind == "small" or u < 0.25:
                    v = float(self.int(-3, 3))
                elif kind == "unit":
                    v = self.r.uniform(-0.95, 0.95)
                else:
                    v = self.r.uniform(-3.0, 3.0)
                if kind == "positive":
                    v = abs(v) + 0.125
                elif kind == "nonzero" and v == 0:
                    v = 0.5
                vals.append(v)
            return torch.tensor(vals, dtype=torch.float64).reshape(shape).to(dtype)
        info = torch.iinfo(dtype)
        vals = []
        for _ in range(n):
            if kind == "small":
                v = self.int(-3, 3)
            elif kind == "positive":
                v = self.int(1, 9)
            elif self.chance(0.1):
                # "dividend": no minimum, whose division by -1 traps (SIGFPE) in the CPU's int32 /
                # int64 division kernels
                v = self.choice([info.max, 0, -1, 1] if kind == "dividend" else [info.min, info.max, 0, -1, 1])
            else:
                v = self.int(-9, 9)
            if kind == "nonzero" and v % 256 == 0:
                v = 1  # also non-zero once wrapped to a narrower integer dtype by promotion
            vals.append(max(info.min, min(info.max, v)) if info.min < 0 else v % (info.max + 1))
        return torch.tensor(vals, dtype=torch.int64).reshape(shape).to(dtype)

    def tensor(self, shape, dtype=None, kind="any", layout=True) -> "TensorArg":
        dtype = dtype or self.dtype()
        shape = tuple(shape)
        layouts = ["contiguous"]
        if layout:
            layouts += ["offset", "stepped"]
            if len(shape) >= 2:
                layouts.append("transposed")
            if any(d == 1 for d in shape) or shape:
                layouts.append("expanded")
        lay = self.choice(layouts) if self.chance(0.45) else "contiguous"
        return TensorArg.build(self, shape, dtype, kind, lay)

    def scalar(self, like: torch.dtype | None = None, kind: str = "any"):
        """A Python number (bool / int / float) or a 0-dim tensor (CPU or vk) of a random
        dtype: the operands whose promotion rules differ from dimensioned tensors."""
        u = self.r.random()
        if u < 0.45:
            t = self.choice(["int", "float", "bool"] if kind == "any" else ["int", "float"])
            if t == "bool":
                return self.chance(0.5)
            if t == "int":
                v = self.int(-4, 4) if self.chance(0.8) else self.choice([-129, 200, 255, 256, 70000])
                if kind in ("positive", "nonzero") and (v <= 0 or v % 256 == 0):
                    v = 2  # non-zero in every integer dtype it may be wrapped to
                return v
            v = self.choice([0.5, -1.5, 0.1, 2.25, 1e-3, 3.0, 1e5]) if self.chance(0.7) else self.r.uniform(-3, 3)
            if kind == "any" and self.chance(0.05):
                v = self.choice([math.inf, -math.inf, math.nan])
            if kind in ("positive", "nonzero") and v <= 0:
                v = 0.75
            return v
        dtype = self.dtype()
        # A 0-dim CPU tensor next to vk tensors (a CPU scalar), or one on the case's device.
        return TensorArg.build(self, (), dtype, kind, "contiguous", scalar_device=self.choice(["cpu", None]))


@dataclasses.dataclass
class TensorArg:
    """A tensor input: a contiguous CPU `base` and the view of it the op sees (the same view
    of the same values on every device, so strides and storage offsets match)."""

    base: torch.Tensor
    view: Callable[[torch.Tensor], torch.Tensor]
    layout: str
    device: str | None = None  # None: the case's device; "cpu": always on the CPU

    @staticmethod
    def build(g: Gen, shape, dtype, kind, layout, scalar_device=None) -> "TensorArg":
        shape = tuple(shape)
        if layout == "offset":
            n = math.prod(shape)
            k = g.int(1, 3)
            base = g.values((n + k,), dtype, kind)
            return TensorArg(base, lambda t, k=k, n=n, s=shape: t[k:k + n].view(s), layout)
        if layout == "stepped" and shape:
            d = g.int(0, len(shape) - 1)
            big = list(shape)
            big[d] = shape[d] * 2
            base = g.values(tuple(big), dtype, kind)
            idx = tuple([slice(None)] * d + [slice(None, None, 2)])
            return TensorArg(base, lambda t, idx=idx: t[idx], layout)
        if layout == "transposed" and len(shape) >= 2:
            i, j = sorted(g.r.sample(range(len(shape)), 2))
            s = list(shape)
            s[i], s[j] = s[j], s[i]
            base = g.values(tuple(s), dtype, kind)
            return TensorArg(base, lambda t, i=i, j=j: t.transpose(i, j), layout)
        if layout == "expanded" and shape:
            small = tuple(1 if (d > 0 and g.chance(0.6)) else d for d in shape)
            if small == shape:
                small = (1,) + shape[1:] if shape[0] > 0 else shape
            base = g.values(small, dtype, kind)
            return TensorArg(base, lambda t, s=shape: t.expand(s), layout)
        base = g.values(shape, dtype, kind)
        return TensorArg(base, lambda t: t, "contiguous", scalar_device)

    def materialize(self, device: str) -> torch.Tensor:
        dev = self.device or device
        b = self.base.clone() if dev == "cpu" else self.base.to(dev)
        return self.view(b)

    def describe(self) -> str:
        where = f" on {self.device}" if self.device else ""
        return (f"tensor({list(self.view(self.base).shape)}, {str(self.base.dtype)[6:]}, "
                f"{self.layout}{where}, values={self.base.flatten()[:8].tolist()})")


def _out(g: Gen, shape, dtype) -> TensorArg:
    """An out= tensor: the result's shape or (0,) (resized), zero-filled (never read before
    the op writes it)."""
    s = tuple(shape) if g.chance(0.8) else (0,)
    return TensorArg(torch.zeros(s, dtype=dtype), lambda t: t, "contiguous")


def describe(v) -> str:
    if isinstance(v, TensorArg):
        return v.describe()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(describe(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={describe(x)}" for k, x in v.items()) + "}"
    return repr(v)


def materialize(v, device):
    if isinstance(v, TensorArg):
        return v.materialize(device)
    if isinstance(v, list):
        return [materialize(x, device) for x in v]
    if isinstance(v, tuple):
        return tuple(materialize(x, device) for x in v)
    if isinstance(v, dict):
        return {k: materialize(x, device) for k, x in v.items()}
    return v


# ---------------------------------------------------------------- cases and checks

# rtol, atol per result dtype for each tolerance class (OpInfo-like: torch.testing's defaults
# for exact arithmetic, one unit in the last place of the result for math functions computed
# in float32 and rounded, more for accumulations whose summation order differs).
TOLERANCES = {
    "default": {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5),
                torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7)},
    "math": {torch.float16: (2e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2),
             torch.float32: (1e-5, 1e-5), torch.float64: (1e-7, 1e-7)},
    "accum": {torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 5e-2),
              torch.float32: (1e-4, 1e-4), torch.float64: (1e-9, 1e-9)},
}


@dataclasses.dataclass
class Case:
    op: str
    fn: Callable
    args: list
    kwargs: dict = dataclasses.field(default_factory=dict)
    tol: str = "default"
    # checks of a result that the CPU leaves unspecified: f(cpu_result, vk_result, cpu_args,
    # vk_args) raising AssertionError; None: compare values
    check: Callable | None = None
    mutates: Sequence[int] = ()  # indices of args whose final values are compared too
    # out= variants: the functional op (same args, no out=), whose result dtype is the one the
    # op computes in; a wider out= dtype is compared with that dtype's tolerance.
    functional: Callable | None = None
    info: str = ""  # arguments the callable holds itself (factory ops), for describe()

    def describe(self) -> str:
        parts = [describe(a) for a in self.args] + [f"{k}={describe(v)}" for k, v in self.kwargs.items()]
        return f"{self.op}(" + ", ".join(parts + ([self.info] if self.info else [])) + ")"


def _leaves(v, out):
    if isinstance(v, torch.Tensor):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _leaves(x, out)
    elif v is None:
        pass
    else:
        out.append(v)
    return out


_PRECISION = {torch.float16: 0, torch.bfloat16: 0, torch.float32: 1, torch.float64: 2}


def compare(cpu, vk, tol: str, where: str = "result", tol_dtype: torch.dtype | None = None):
    a = _leaves(cpu, [])
    b = _leaves(vk, [])
    assert len(a) == len(b), f"{where}: {len(a)} values on the CPU, {len(b)} on vk"
    for k, (x, y) in enumerate(zip(a, b)):
        tag = f"{where}[{k}]"
        if isinstance(x, torch.Tensor):
            assert isinstance(y, torch.Tensor), f"{tag}: vk gave {type(y).__name__}"
            assert y.device.type == "vk" or x.device.type == y.device.type, f"{tag}: on {y.device}"
            y = y.cpu()
            assert x.dtype == y.dtype, f"{tag}: dtype {y.dtype}, CPU {x.dtype}"
            assert x.shape == y.shape, f"{tag}: shape {tuple(y.shape)}, CPU {tuple(x.shape)}"
            if x.dtype.is_floating_point or x.dtype.is_complex:
                tdt = x.dtype
                if tol_dtype is not None and _PRECISION.get(tol_dtype, 9) < _PRECISION.get(tdt, 9):
                    tdt = tol_dtype
                rtol, atol = TOLERANCES[tol].get(tdt, TOLERANCES[tol][torch.float32])
                torch.testing.assert_close(y, x, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{tag}: {m}")
            else:
                if not torch.equal(x, y):
                    bad = (x != y).nonzero()[:4].tolist()
                    raise AssertionError(f"{tag}: differs at {bad}: vk {y.flatten()[:12].tolist()} "
                                         f"CPU {x.flatten()[:12].tolist()}")
        else:
            assert type(x) is type(y), f"{tag}: vk gave {type(y).__name__}, CPU {type(x).__name__}"
            if isinstance(x, float) and math.isnan(x):
                assert math.isnan(y), f"{tag}: vk {y}, CPU {x}"
            elif isinstance(x, float):
                rtol, atol = TOLERANCES[tol][torch.float64]
                assert abs(x - y) <= atol + rtol * abs(x), f"{tag}: vk {y}, CPU {x}"
            else:
                assert x == y, f"{tag}: vk {y}, CPU {x}"


def _to_cpu(v):
    if isinstance(v, torch.Tensor):
        return v.cpu() if v.device.type != "cpu" else v
    if isinstance(v, (list, tuple)):
        return type(v)(_to_cpu(x) for x in v) if not hasattr(v, "_fields") else [_to_cpu(x) for x in v]
    return v


class CaseFailure(AssertionError):
    pass


def _cpu_pinned(v) -> bool:
    if isinstance(v, TensorArg):
        return v.device == "cpu"
    if isinstance(v, (list, tuple)):
        return any(_cpu_pinned(x) for x in v)
    if isinstance(v, dict):
        return any(_cpu_pinned(x) for x in v.values())
    return False


def _cuda_device_rule(case: Case, vk_exc: Exception) -> bool:
    """A CPU 0-dim tensor next to vk tensors is a mixed-device call, which the all-CPU
    reference cannot judge: CUDA (like vk) accepts it only where PyTorch's kernels take CPU
    scalars (TensorIterator ops with allow_cpu_scalars, index_put_'s masked-fill route, ...) and
    raises its device-mismatch RuntimeError elsewhere (clamp's tensor bounds, ...). That error,
    for a case with such an operand, is CUDA's behaviour, not a difference."""
    return (type(vk_exc) is RuntimeError and "Expected all tensors to be on the same device" in str(vk_exc)
            and (_cpu_pinned(case.args) or _cpu_pinned(case.kwargs)))


def run_case(case: Case) -> None:
    """Runs `case` on the CPU and on vk; raises CaseFailure describing any difference."""
    cpu_args = materialize(case.args, "cpu")
    cpu_kwargs = materialize(case.kwargs, "cpu")
    cpu_exc = vk_exc = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cpu_res = case.fn(*cpu_args, **cpu_kwargs)
            cpu_res = _to_cpu(cpu_res)
        except Exception as e:  # noqa: BLE001 - every exception type is compared
            cpu_exc = e
        vk_args = materialize(case.args, "vk")
        vk_kwargs = materialize(case.kwargs, "vk")
        try:
            vk_res = case.fn(*vk_args, **vk_kwargs)
            vk_res = _to_cpu(vk_res)
            vk_mut = [_to_cpu(vk_args[i]) for i in case.mutates] if cpu_exc is None else []
            torch.vk.synchronize()  # device-side errors surface here
        except Exception as e:  # noqa: BLE001
            vk_exc = e
            try:
                torch.vk.synchronize()
            except Exception:  # noqa: BLE001 - a second report of the same device error
                pass
    if cpu_exc is None and vk_exc is not None and _cuda_device_rule(case, vk_exc):
        return
    if cpu_exc is not None:
        if vk_exc is None:
            raise CaseFailure(f"{case.describe()}\n  CPU raised {type(cpu_exc).__name__}: "
                              f"{str(cpu_exc)[:300]}\n  vk succeeded")
        if type(vk_exc) is not type(cpu_exc):
            raise CaseFailure(f"{case.describe()}\n  CPU raised {type(cpu_exc).__name__}: "
                              f"{str(cpu_exc)[:300]}\n  vk raised {type(vk_exc).__name__}: "
                              f"{str(vk_exc)[:300]}")
        return
    if vk_exc is not None:
        raise CaseFailure(f"{case.describe()}\n  CPU succeeded\n  vk raised "
                          f"{type(vk_exc).__name__}: {str(vk_exc)[:400]}")
    tol_dtype = None
    if case.functional is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = case.functional(*materialize(case.args, "cpu"))
            if isinstance(ref, torch.Tensor) and ref.dtype.is_floating_point:
                tol_dtype = ref.dtype
        except Exception:  # noqa: BLE001 - the out= form alone decides then
            pass
    try:
        if case.check is not None:
            case.check(cpu_res, vk_res, cpu_args, vk_args)
        else:
            compare(cpu_res, vk_res, case.tol, tol_dtype=tol_dtype)
        for i, m in zip(case.mutates, vk_mut):
            compare(_to_cpu(cpu_args[i]), m, case.tol, where=f"argument {i} after the op")
    except AssertionError as e:
        raise CaseFailure(f"{case.describe()}\n  {e}") from None


_DEVICE = ["cpu"]  # factory ops (full, arange, ...) read the case's device from here



# ---------------------------------------------------------------- running

def _ops() -> dict:
    from torch_vk.fuzz_ops import OPS  # the op table (imports this module's classes)
    return OPS


def op_names(pattern: str | None = None) -> list[str]:
    names = sorted(_ops())
    if pattern:
        rx = re.compile(pattern)
        names = [n for n in names if rx.search(n)]
    return names


def make_case(name: str, r: random.Random, float64: bool = True) -> Case:
    return _ops()[name](Gen(r, float64))


def run_named_case(name: str, r: random.Random, float64: bool = True) -> Case:
    """Draws one case of op `name` from `r` and checks it (raises CaseFailure)."""
    case = make_case(name, r, float64)
    _run_with_device(case)
    return case


def _run_with_device(case: Case):
    """run_case, with factory ops creating their result on each device in turn."""
    if case.args or case.kwargs:
        return run_case(case)
    fn = case.fn
    results = {}
    for device in ("cpu", "vk"):
        _DEVICE[0] = device
        try:
            results[device] = ("ok", _to_cpu(fn()))
            if device == "vk":
                torch.vk.synchronize()
        except Exception as e:  # noqa: BLE001
            results[device] = ("exc", e)
        finally:
            _DEVICE[0] = "cpu"
    (ck, cv), (vk_kind, vv) = results["cpu"], results["vk"]
    if ck == "exc":
        if vk_kind != "exc" or type(vv) is not type(cv):
            raise CaseFailure(f"{case.describe()}\n  CPU raised {type(cv).__name__}: {cv}\n  vk: "
                              f"{'raised ' + type(vv).__name__ + ': ' + str(vv) if vk_kind == 'exc' else 'succeeded'}")
        return
    if vk_kind == "exc":
        raise CaseFailure(f"{case.describe()}\n  CPU succeeded\n  vk raised {type(vv).__name__}: {vv}")
    try:
        compare(cv, vv, case.tol)
    except AssertionError as e:
        raise CaseFailure(f"{case.describe()}\n  {e}") from None


def device_has_float64() -> bool:
    try:
        return bool(torch.vk.get_device_properties(0).float64)
    except Exception:  # noqa: BLE001
        try:
            import torch_vk
            return bool(torch_vk._C._get_device_properties(0)["float64"])
        except Exception:  # noqa: BLE001
            return False


def fuzz_one(name: str, case_seed: int, log=print) -> bool:
    """Reruns the case `case_seed` of op `name` (from a failure report); True if it fails."""
    import torch_vk

    previous = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("error")
    try:
        case = make_case(name, random.Random(case_seed), device_has_float64())
        log(case.describe())
        _run_with_device(case)
        log("ok")
        return False
    except CaseFailure as e:
        log(f"FAIL {name} (case seed {case_seed}):\n  {e}")
        return True
    finally:
        torch_vk.set_fallback_mode(previous)


def fuzz(cases: int, seed: int = 0, pattern: str | None = None, stop_after: int = 20,
         verbose: bool = False, log=print) -> int:
    """Runs `cases` cases spread round-robin over the ops matching `pattern`; returns the number
    of failures (each reported with the op, the case and the seed that reproduces it:
    `python -m torch_vk fuzz --ops '^OP$' --replay SEED`)."""
    import torch_vk

    names = op_names(pattern)
    if not names:
        log(f"no op matches {pattern!r}")
        return 1
    float64 = device_has_float64()
    previous = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("error")
    failures = 0
    per_op: dict[str, int] = {}
    start = time.time()
    try:
        for i in range(cases):
            name = names[i % len(names)]
            case_seed = seed * 1_000_003 + i
            try:
                case = make_case(name, random.Random(case_seed), float64)
                if verbose:
                    log(f"case {name} (seed {case_seed}): {case.describe()}")
                _run_with_device(case)
            except CaseFailure as e:
                failures += 1
                per_op[name] = per_op.get(name, 0) + 1
                log(f"FAIL {name} (case seed {case_seed}):\n  {e}")
            except Exception:  # noqa: BLE001 - a bug of the generator itself
                failures += 1
                per_op[name] = per_op.get(name, 0) + 1
                log(f"FAIL {name} (case seed {case_seed}): the generator raised\n{traceback.format_exc()}")
            if stop_after and failures >= stop_after:
                log(f"stopping after {failures} failures")
                break
    finally:
        torch_vk.set_fallback_mode(previous)
    took = time.time() - start
    log(f"{min(i + 1, cases)} cases over {len(names)} ops in {took:.1f} s: {failures} failures"
        + (f" ({', '.join(f'{k}: {v}' for k, v in sorted(per_op.items()))})" if per_op else ""))
    return failures
