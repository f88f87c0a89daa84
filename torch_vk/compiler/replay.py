"""Replay of compiled graphs: run once, capture once, then re-record the captured commands.

A compiled graph's steady-state call should cost no per-op Python or dispatcher work. The
runner does what CUDA graphs do for torch.compile's "reduce-overhead" mode, with the L1
capture of src/runtime/graph.h:

1. the first call runs the graph normally (fused kernels get specialised and compiled);
2. the second call runs it while the current stream captures every command (pipelines, push
   constants, parameter blocks) and allocates from a memory pool private to the graph;
3. later calls re-record the captured commands in one C++ call (`CapturedGraph.replay`).

Inputs: an input whose address did not change between the first two calls (parameters,
buffers, optimizer state) or that is an output of a replayed graph (saved activations, whose
pool block is fixed) is read in place; any other input gets a buffer of its own that each
call copies into. A later call whose in-place inputs moved runs normally and captures again.

Outputs live in the graph's pool. Callers get tensors that alias that memory; before the next
replay overwrites it, every alias still alive (a kept loss, activations saved for a backward
that has not run yet) is given its own copy, so results never change under the caller.

Random ops (dropout, rand, ...) are replayed too: captured kernels read the generator's seed
and counter base from the graph's Philox block, which each replay rewrites after taking from
the device's default generator the counters the capture drew (src/aten/generator.h), so every
replay draws fresh numbers, the ones an eager call would draw at that generator state. A
capture whose random op uses another generator is invalid (the graph then runs normally).

Symbolic shapes (Dynamo's dynamic graphs): one capture per concrete shape, as CUDA graph
trees do. ShapeKeyedRunner keys a ReplayRunner by the integer inputs (the sizes) and the
shapes of the inputs with symbolic dims, keeping the _MAX_SHAPES most recently used.

Graphs that cannot be replayed run normally every time: graphs with host scalars, float
inputs or CPU tensors (computed by the host per call), data-dependent shapes or host reads,
or any op that turns out to read device memory on the host during capture.
TORCH_VK_COMPILE_REPLAY=0 turns replay off.
"""
from __future__ import annotations

import collections
import os
from typing import Any, Callable, Sequence

import torch
import torch.fx

_STATS = {"captures": 0, "replays": 0, "capture_failures": 0}
_MAX_CAPTURES = 4
_MAX_SHAPES = 8  # captured graphs kept per symbolic graph (each holds a memory pool)

_HOST_SYNC_OPS = {torch.ops.aten._local_scalar_dense.default, torch.ops.aten.item.default}


def stats() -> dict[str, int]:
    return dict(_STATS)


def _native():
    import torch_vk

    return torch_vk._C


def not_replayable_reason(gm: torch.fx.GraphModule) -> str | None:
    """Why `gm` cannot be captured, or None."""
    if os.environ.get("TORCH_VK_COMPILE_REPLAY", "1") == "0":
        return "TORCH_VK_COMPILE_REPLAY=0"
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder" and not isinstance(val, (torch.Tensor, int, torch.SymInt)):
            return f"input {node.name} is not a tensor or an integer ({type(val).__name__})"
        for v in val if isinstance(val, (list, tuple)) else [val]:
            if isinstance(v, torch.Tensor) and v.device.type != "vk":
                return f"{node.name} is a {v.device.type} tensor"
        if node.op != "call_function":
            continue
        target = node.target
        if target in _HOST_SYNC_OPS:
            return f"{node.name} reads device memory on the host"
        tags = getattr(target, "tags", ())
        if torch.Tag.dynamic_output_shape in tags or torch.Tag.data_dependent_output in tags:
            return f"{node.name} has a data-dependent output"
        if getattr(target, "scalar_inputs", None):
            return f"{node.name} takes host scalars"
    return None


class ReplayRunner:
    """Callable (boxed-free: plain *args) wrapping a compiled graph's forward."""

    def __init__(self, fn: Callable, name: str, reason: str | None, mutates_inputs: bool):
        self.fn = fn
        self.name = name
        self.disabled_reason = reason
        self.mutates_inputs = mutates_inputs
        self.captures = 0
        self._reset()

    def _reset(self) -> None:
        self.graph = None
        self.warm_ptrs: list[int] | None = None
        # _C._Replayer: a steady-state call (argument checks and copies, detaching the previous
        # outputs, the replay, handing out the outputs) in one C++ call.
        self.replayer = None
        self.outputs_are_tuple = False

    def __call__(self, *args: Any) -> Any:
        if self.disabled_reason is not None:
            return self.fn(*args)
        if self.graph is not None:
            return self._replay(args)
        if self.warm_ptrs is None:
            self.warm_ptrs = [a.data_ptr() for a in args]
            return self.fn(*args)
        return self._capture(args)

    def _capture(self, args: Sequence[torch.Tensor]) -> Any:
        if self.captures >= _MAX_CAPTURES:
            self.disabled_reason = "its in-place inputs keep moving"
            return self.fn(*args)
        native = _native()
        inputs, own = [], []
        for arg, warm_ptr in zip(args, self.warm_ptrs):
            if arg.data_ptr() == warm_ptr or native._is_alias_output(arg):
                inputs.append(arg)
                own.append(None)
            else:
                buf = torch.empty_strided(arg.size(), arg.stride(), dtype=arg.dtype,
                                          device=arg.device)
                buf.copy_(arg)
                inputs.append(buf)
                own.append(buf)
        graph = native._CapturedGraph()
        native._begin_capture(graph)
        try:
            outs = self.fn(*inputs)
        except Exception:
            native._end_capture(graph)
            _STATS["capture_failures"] += 1
            self.disabled_reason = f"capture failed: {graph.invalid_reason or 'an error'}"
            if self.mutates_inputs:
                raise  # running again would apply the input mutations twice
            return self.fn(*args)
        native._end_capture(graph)
        if not graph.valid:
            _STATS["capture_failures"] += 1
            self.disabled_reason = f"capture failed: {graph.invalid_reason}"
            return outs
        self.captures += 1
        _STATS["captures"] += 1
        self.graph = graph
        input_index = {id(t): i for i, t in enumerate(inputs)}
        # Per output: (0, value) handed out as is (e.g. an attention op's unused CPU RNG
        # state), (1, i) the caller's argument i (an input returned unchanged), (2, tensor) a
        # tensor of the graph's pool, handed out as an alias.
        plan = [(0, out) if not isinstance(out, torch.Tensor) or out.device.type != "vk"
                else (1, input_index[id(out)]) if id(out) in input_index
                else (2, out)
                for out in outs]
        # The replayer replays only on the capturing stream (the current one now).
        self.replayer = native._Replayer(graph, inputs, own, plan)
        self.outputs_are_tuple = isinstance(outs, tuple)
        return self._result(self.replayer.hand_out(tuple(args)))

    def _replay(self, args: tuple) -> Any:
        result = self.replayer(args)
        if result.__class__ is list:
            _STATS["replays"] += 1
            return self._result(result)
        if result == self.replayer.RUN_NORMALLY:
            return self.fn(*args)
        return self._recapture(args)

    def _result(self, outputs: list) -> Any:
        return tuple(outputs) if self.outputs_are_tuple else outputs

    def _recapture(self, args: Sequence[torch.Tensor]) -> Any:
        self.replayer.detach_handed_out()  # the old graph's pool goes away
        self._reset()
        self.warm_ptrs = [a.data_ptr() for a in args]
        return self.fn(*args)


def shape_key_positions(gm: torch.fx.GraphModule) -> tuple[list[int], list[int]] | None:
    """(integer input positions, positions of tensor inputs with symbolic dims) of a graph with
    symbolic shapes or integer inputs, or None for a static graph of tensors."""
    ints, symbolic = [], []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        val = node.meta.get("val")
        if isinstance(val, (int, torch.SymInt)):
            ints.append(i)
        elif isinstance(val, torch.Tensor) and any(not isinstance(d, int) for d in val.shape):
            symbolic.append(i)
    return (ints, symbolic) if ints or symbolic else None


class ShapeKeyedRunner:
    """A graph with symbolic shapes: one ReplayRunner per concrete shape (integer inputs and
    the shapes of the symbolic tensor inputs), each replaying a capture of its own, the
    _MAX_SHAPES most recently used kept."""

    def __init__(self, fn: Callable, name: str, reason: str | None, mutates_inputs: bool,
                 int_positions: list[int], symbolic_positions: list[int]):
        self.fn = fn
        self.name = name
        self.reason = reason
        self.mutates_inputs = mutates_inputs
        self.int_positions = int_positions
        self.int_set = frozenset(int_positions)
        self.symbolic_positions = symbolic_positions
        self.runners: collections.OrderedDict = collections.OrderedDict()

    def __call__(self, *args: Any) -> Any:
        if self.reason is not None:
            return self.fn(*args)
        key = (tuple(args[i] for i in self.int_positions),
               tuple(tuple(args[i].shape) for i in self.symbolic_positions))
        runner = self.runners.get(key)
        if runner is None:
            if len(self.runners) >= _MAX_SHAPES:
                _, oldest = self.runners.popitem(last=False)
                if oldest.replayer is not None:
                    oldest.replayer.detach_handed_out()  # its graph's pool goes away
            ints = dict(zip(self.int_positions, key[0]))
            runner = ReplayRunner(self._bind(ints, len(args)), self.name, None,
                                  self.mutates_inputs)
            self.runners[key] = runner
        else:
            self.runners.move_to_end(key)
        return runner(*(a for i, a in enumerate(args) if i not in self.int_set))

    def _bind(self, ints: dict, count: int) -> Callable:
        """The graph with its integer inputs fixed: takes the tensor inputs only."""
        fn = self.fn

        def bound(*tensors: Any) -> Any:
            it = iter(tensors)
            return fn(*(ints[i] if i in ints else next(it) for i in range(count)))

        return bound
