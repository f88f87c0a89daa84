"""The torch.compile backend for "vk": Dynamo graph -> AOTAutograd ATen graphs -> fused kernels.

AOTAutograd turns the Dynamo graph into functional ATen forward and backward graphs (training
works, dynamic shapes arrive as SymInts). Each graph is compiled by `compile_graph`: pointwise
chains become generated GLSL kernels (torch_vk.compiler.fusion), as do sum / mean / amax / amin
reductions together with the pointwise chain that computes their input
(torch_vk.compiler.reduction); every other node stays a call of the eager vk kernel (matrix
multiply, convolution, attention, norms, other reductions...).
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable, Sequence

import torch
import torch.fx

_STATS = {"graphs": 0, "fused_kernels": 0, "gemm_epilogues": 0, "fused_reductions": 0,
          "row_kernels": 0, "residual_norms": 0}


@functools.lru_cache(maxsize=1)
def op_table() -> dict:
    import torch_vk

    return torch_vk._C._elementwise_op_table()


def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """AOTAutograd's forward / backward compiler: returns a boxed callable."""
    from functorch.compile import make_boxed_func

    from torch_vk.compiler.foreach import split_foreach
    from torch_vk.compiler.fusion import fuse_pointwise
    from torch_vk.compiler.residual_norm import fuse_residual_norm

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(gm.graph.nodes) + 1000))
    try:
        split_foreach(gm)
        _STATS["residual_norms"] += fuse_residual_norm(gm)
        fused_gm, counts = fuse_pointwise(gm, op_table())
    finally:
        sys.setrecursionlimit(limit)
    _STATS["graphs"] += 1
    _STATS["fused_kernels"] += counts.kernels
    _STATS["gemm_epilogues"] += counts.gemm_epilogues
    _STATS["fused_reductions"] += counts.reductions
    _STATS["row_kernels"] += counts.row_kernels
    from torch_vk.compiler.replay import (ReplayRunner, ShapeKeyedRunner, not_replayable_reason,
                                          shape_key_positions)

    reason = not_replayable_reason(fused_gm)
    mutates = any(
        (n.op == "call_function" and n.target is torch.ops.aten.copy_.default)
        or any(i is not None for i in getattr(n.target, "out_into", ()) or ())
        for n in fused_gm.graph.nodes)
    name = f"graph_{_STATS['graphs']}"
    keyed = shape_key_positions(fused_gm)
    runner = (ShapeKeyedRunner(fused_gm.forward, name, reason, mutates, *keyed) if keyed
              else ReplayRunner(fused_gm.forward, name, reason, mutates))
    debug_dir = os.environ.get("TORCH_VK_COMPILE_DEBUG_DIR")
    if debug_dir:
        os.makedirs(debug_dir, exist_ok=True)
        path = os.path.join(debug_dir, f"graph_{_STATS['graphs']}.py")
        with open(path, "w") as f:
            f.write(fused_gm.code)
        if reason:
            with open(path, "a") as f:
                f.write(f"\n# not replayed: {reason}\n")
    return make_boxed_func(runner)


def _make_backend() -> Callable:
    from torch._dynamo.backends.common import aot_autograd

    # keep_inference_input_mutations: in-place updates of graph inputs (optimizer steps,
    # running statistics) stay in the graph as copy_ nodes, which fusion can turn into stores
    # straight into the input.
    return aot_autograd(fw_compiler=compile_graph, bw_compiler=compile_graph,
                        inference_compiler=compile_graph, keep_inference_input_mutations=True)


_backend: Callable | None = None


def vk_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any):
    """`torch.compile(model, backend="vk")`."""
    global _backend
    if _backend is None:
        _backend = _make_backend()
    from torch_vk.compiler.patterns import fuse_attention
    fuse_attention(gm)  # on the torch-level graph, so AOTAutograd traces SDPA's backward too
    return _backend(gm, example_inputs)


def stats() -> dict[str, int]:
    """Graphs compiled, fused kernels created (gemm_epilogues: those computed in a matrix
    product's store), reductions fused with the pointwise group of their input
    (fused_reductions, not counted in fused_kernels), row kernels (row_kernels: keepdim
    reductions with the pointwise work around them, e.g. a softmax, in one kernel),
    residual_norms (residual add + layer norm / RMS norm pairs fused into one kernel,
    torch_vk.compiler.residual_norm), and graph captures / replays / capture failures
    (torch_vk.compiler.replay) in this process."""
    from torch_vk.compiler import replay

    return {**_STATS, **replay.stats()}


def graph_uses_vk(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    """True when a graph input, parameter or buffer of `gm` lives on a vk device."""
    for value in example_inputs:
        if isinstance(value, torch.Tensor) and value.device.type == "vk":
            return True
    for tensor in list(gm.parameters()) + list(gm.buffers()):
        if tensor.device.type == "vk":
            return True
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = node.meta.get("example_value", node.meta.get("val"))
            if isinstance(val, torch.Tensor) and val.device.type == "vk":
                return True
    return False
