"""Custom GLSL kernels (torch_vk.compile_shader): a kernel on tensors of several dtypes and
strides with int / float arguments, both argument-passing modes, compile errors as ValueError
with the compiler's line, bad arguments; and the example fused RMSNorm + rotary op
(examples/fused_rmsnorm_rope.py) as a torch.library custom op: forward and backward against
PyTorch, torch.compile(fullgraph=True) without graph breaks, graph capture and replay, and a
short training run equal to the same model in plain PyTorch on the CPU."""
import importlib.util
from pathlib import Path

import pytest
import torch

import torch_vk
import torch_vk.shader

pytestmark = pytest.mark.usefixtures("strict_native")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fused_rmsnorm_rope.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("fused_rmsnorm_rope_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AXPY = """
#version 460
#extension GL_GOOGLE_include_directive : require
#define KIND 0
#include "common.glsl"
layout(local_size_x_id = 0) in;
@ARGS@
// y[i * y_stride] = alpha * x[i * x_stride] + y[i * y_stride], any float dtype (dtype codes).
void main() {
  for (int i = int(gl_GlobalInvocationID.x); i < int(args.n);
       i += int(gl_NumWorkGroups.x * gl_WorkGroupSize.x)) {
    const int xi = i * int(args.x_stride), yi = i * int(args.y_stride);
    const float v = args.alpha * load_f32(args.x, int(args.x_dt), xi) +
                    load_f32(args.y, int(args.y_dt), yi);
    store_f32(args.y, int(args.y_dt), yi, v);
  }
}
"""
CODES = {torch.float16: 6, torch.bfloat16: 7, torch.float32: 8}


def axpy_kernel():
    decl = torch_vk.shader.Kernel.declare_arguments(
        ("x", "y"), ("n", "x_stride", "y_stride", "x_dt", "y_dt"), ("alpha",))
    return torch_vk.compile_shader(AXPY.replace("@ARGS@", decl), "axpy")


@pytest.mark.parametrize("x_dtype,y_dtype", [(torch.float32, torch.float32),
                                             (torch.float16, torch.float32),
                                             (torch.bfloat16, torch.bfloat16)])
def test_kernel_on_strided_tensors_of_any_dtype(x_dtype, y_dtype):
    k = axpy_kernel()
    x = torch.randn(80, generator=torch.Generator().manual_seed(0)).to(x_dtype)
    y = torch.randn(40, 20, generator=torch.Generator().manual_seed(1)).to(y_dtype)
    y_vk = y.to("vk")
    xv, yv = x.to("vk")[::2], y_vk[:, 3]  # strided views with storage offsets
    k(xv, yv, xv.numel(), xv.stride(0), yv.stride(0), CODES[x_dtype], CODES[y_dtype], 0.5,
      threads=xv.numel(), local_size=64)
    expected = y.clone()
    expected[:, 3] = (0.5 * x[::2].float() + y[:, 3].float()).to(y_dtype)
    torch.testing.assert_close(yv.cpu(), expected[:, 3], atol=1e-2 if y_dtype != torch.float32
                               else 1e-6, rtol=1e-2)
    # The rest of y's storage is untouched.
    others = [c for c in range(20) if c != 3]
    assert torch.equal(y_vk.cpu()[:, others], y[:, others])


def test_indirect_argument_block():
    # More addresses than the push constants hold: the block is passed by address.
    n_t = 20
    assert torch_vk.shader.args_indirect(n_t, 1, 0)
    names = tuple(f"t{i}" for i in range(n_t))
    decl = torch_vk.shader.Kernel.declare_arguments(names, ("n",), ())
    body = "\n".join(f"  RefF32(tvk_elem_addr(args.t{i}, i, 2)).v = float({i});" for i in range(n_t))
    src = AXPY.split("@ARGS@")[0] + decl + ("void main() {\n  int i = int(gl_GlobalInvocationID.x);\n"
                                             "  if (i >= int(args.n)) return;\n" + body + "\n}\n")
    k = torch_vk.compile_shader(src, "many_outputs")
    outs = [torch.zeros(5, device="vk") for _ in range(n_t)]
    k(*outs, 5, grid=1, local_size=32)
    for i, o in enumerate(outs):
        assert o.cpu().tolist() == [float(i)] * 5


def test_compile_errors_and_bad_arguments():
    with pytest.raises(ValueError, match=r"(?s)axpy_broken.*ERROR.*\d+"):
        torch_vk.compile_shader(AXPY.replace("@ARGS@", "").replace("args.n", "undefined_name"),
                                "axpy_broken")
    k = axpy_kernel()
    with pytest.raises(ValueError, match="vk tensor"):
        k(torch.zeros(4), torch.zeros(4, device="vk"), 4, 1, 1, 8, 8, 1.0, threads=4)
    with pytest.raises(TypeError):
        k(torch.zeros(4, device="vk"), "y", threads=4)
    with pytest.raises(ValueError, match="exactly one"):
        k(torch.zeros(4, device="vk"), torch.zeros(4, device="vk"), 4, 1, 1, 8, 8, 1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_fused_op_forward_and_backward(example, dtype):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(6, 3, 16, generator=g).to(dtype)
    w = (torch.rand(16, generator=g) + 0.5).to(dtype)
    cos, sin = example.rotary_tables(6, 16, dtype)
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    xv = x.to("vk").requires_grad_(True)
    wv = w.to("vk").requires_grad_(True)
    y = example.fused_rmsnorm_rope(xv, wv, cos.to("vk"), sin.to("vk"))
    xr, wr = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    yr = example.reference(xr, wr, cos, sin)
    torch.testing.assert_close(y.cpu(), yr, **tol)
    gy = torch.randn(y.shape, generator=g).to(dtype)
    y.backward(gy.to("vk"))
    yr.backward(gy)
    torch.testing.assert_close(xv.grad.cpu(), xr.grad, **tol)
    torch.testing.assert_close(wv.grad.cpu(), wr.grad, atol=tol["atol"] * 10, rtol=tol["rtol"])
    if dtype == torch.float32:
        torch.library.opcheck(example.fused_rmsnorm_rope,
                              (x.to("vk"), w.to("vk"), cos.to("vk"), sin.to("vk"), 1e-6),
                              test_utils=("test_schema", "test_faketensor"))


def test_fused_op_in_torch_compile_without_graph_breaks(example):
    x = torch.randn(4, 2, 8, device="vk")
    w = torch.rand(8, device="vk") + 0.5
    cos, sin = example.rotary_tables(4, 8, device="vk")

    def f(x, w):
        return example.fused_rmsnorm_rope(x * 2.0, w, cos, sin, 1e-6).sum(-1)

    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(x, w).cpu(), f(x, w).cpu(), atol=1e-5, rtol=1e-5)


def test_fused_op_in_captured_graph(example):
    _C = torch_vk._C
    x = torch.randn(4, 2, 8).to("vk")
    w = (torch.rand(8) + 0.5).to("vk")
    cos, sin = example.rotary_tables(4, 8, device="vk")
    example.fused_rmsnorm_rope(x, w, cos, sin)  # compiled outside the capture
    torch.vk.synchronize()
    g = _C._CapturedGraph()
    _C._begin_capture(g)
    try:
        out = example.fused_rmsnorm_rope(x, w, cos, sin)
    finally:
        _C._end_capture(g)
    assert g.valid, g.invalid_reason
    fresh = torch.randn(4, 2, 8)
    x.copy_(fresh.to("vk"))
    g.replay()
    torch.testing.assert_close(out.cpu(), example.reference(fresh, w.cpu(), cos.cpu(), sin.cpu()),
                               atol=1e-5, rtol=1e-5)


def test_training_with_the_fused_op_matches_pytorch(example):
    vk_losses = example.train("vk", fused=True, steps=12)
    cpu_losses = example.train("cpu", fused=False, steps=12)
    torch.testing.assert_close(torch.tensor(vk_losses), torch.tensor(cpu_losses),
                               atol=1e-4, rtol=1e-4)
    assert vk_losses[-1] < vk_losses[0] * 0.8
