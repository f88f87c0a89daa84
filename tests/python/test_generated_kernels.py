"""Run-time generated kernels (torch_vk._C._compile_kernel / _launch_kernel), the piece that
torch.compile's fused kernels run on: results against the CPU (push-constant and indirect
argument blocks, a non-contiguous input addressed through strides passed as ints, fp16
storage through common.glsl), argument errors, compile errors with the compiler log, the
in-process memo and the disk cache across processes."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_vk

C = torch_vk._C

pytestmark = pytest.mark.usefixtures("strict_native")
needs_compiler = pytest.mark.skipif(not C._generated_compiler_available(),
                                    reason="torch-vk was built without a run-time shader compiler")


@pytest.mark.skipif(C._generated_compiler_available(), reason="this build has a compiler")
def test_without_compiler_compiling_raises_a_clear_error():
    with pytest.raises(RuntimeError, match="built without a run-time shader compiler"):
        C._compile_kernel("#version 460\nvoid main() {}\n", "k")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Every test compiles into its own disk cache (the variable is read at each miss). The
    device exists first: its driver pipeline cache keeps the directory it was created with."""
    torch.zeros(1, device="vk")
    monkeypatch.setenv("TORCH_VK_CACHE_DIR", str(tmp_path / "cache"))


def kernel_source(n_addresses, n_ints, n_floats, body, tag=""):
    """A generated-kernel source in the layout _launch_kernel packs: addresses (uint64), ints
    (int64), floats (float32); in the push constants, or behind one address when the block
    exceeds 128 bytes. `body` sees `args.addr[k]`, `args.iv[k]`, `args.fv[k]`."""
    members = []
    if n_addresses:
        members.append(f"uint64_t addr[{n_addresses}];")
    if n_ints:
        members.append(f"int64_t iv[{n_ints}];")
    if n_floats:
        members.append(f"float fv[{n_floats}];")
    members = " ".join(members)
    if C._generated_args_indirect(n_addresses, n_ints, n_floats):
        args = (f"layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer "
                f"ArgBlock {{ {members} }};\n"
                f"layout(push_constant) uniform Push {{ ArgBlock args; }} pc;\n"
                f"#define args pc.args\n")
    else:
        args = f"layout(push_constant) uniform Args {{ {members} }} args;\n"
    return (f"#version 460\n"
            f"#include \"common.glsl\"\n"
            f"layout(local_size_x_id = 0) in;\n"
            f"layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats {{ float v[]; }};\n"
            f"{args}"
            f"void main() {{\n{body}\n}}\n"
            f"// {tag}\n")


# out[i] = x[r * sx0 + c * sx1] * alpha + y[i], (r, c) = divmod(i, cols); x strided.
STRIDED_BODY = """
  Floats out_ = Floats(args.addr[0]);
  Floats x = Floats(args.addr[1]);
  Floats y = Floats(args.addr[2]);
  int rows = int(args.iv[0]), cols = int(args.iv[1]);
  int sx0 = int(args.iv[2]), sx1 = int(args.iv[3]);
  int n = rows * cols;
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step) {
    int r = i / cols, c = i - r * cols;
    out_.v[i] = x.v[r * sx0 + c * sx1] * args.fv[0] + y.v[i];
  }"""


@needs_compiler
def test_strided_inputs_push_constants():
    assert not C._generated_args_indirect(3, 4, 1)
    kid = C._compile_kernel(kernel_source(3, 4, 1, STRIDED_BODY), "strided_axpy")
    base = torch.randn(9, 14)
    x_cpu = base[1:, ::2]  # storage offset 14, strides (14, 2)
    y_cpu = torch.randn(8, 7)
    x, y = base.to("vk")[1:, ::2], y_cpu.to("vk")
    assert not x.is_contiguous() and x.storage_offset() == 14
    out = torch.empty(8, 7, device="vk")
    torch.vk.synchronize()
    before = torch_vk.stats()
    C._launch_kernel(kid, [out, x, y], [8, 7, *x.stride()], [0.75], 2, 32)
    after = torch_vk.stats()
    assert after["dispatches"] == before["dispatches"] + 1
    assert after["host_waits"] == before["host_waits"]  # recorded, not waited for
    torch.testing.assert_close(out.cpu(), x_cpu * 0.75 + y_cpu)


@needs_compiler
def test_many_arguments_go_through_a_parameter_block():
    k = 8  # out + 8 inputs, one stride per input, one weight per input: 168 bytes
    assert C._generated_args_indirect(k + 1, k, k)
    body = f"""
  Floats out_ = Floats(args.addr[0]);
  int n = int(args.iv[0]);
  int step = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += step) {{
    float acc = 0.0;
    for (int j = 0; j < {k}; ++j) {{
      int stride = j == 0 ? 1 : int(args.iv[j]);
      acc += args.fv[j] * Floats(args.addr[1 + j]).v[i * stride];
    }}
    out_.v[i] = acc;
  }}"""
    # args.iv[0] = n; args.iv[j] (j >= 1) = element stride of input j; input 0 is contiguous.
    kid = C._compile_kernel(kernel_source(k + 1, k, k, body), "weighted_sum")
    n = 300
    inputs_cpu = [torch.randn(n * (1 if j == 0 else j)) for j in range(k)]
    inputs = [t.to("vk")[::(1 if j == 0 else j)] for j, t in enumerate(inputs_cpu)]
    weights = [0.5 * j - 1.25 for j in range(k)]
    out = torch.empty(n, device="vk")
    ints = [n] + [inputs[j].stride(0) for j in range(1, k)]
    C._launch_kernel(kid, [out, *inputs], ints, weights, 3, 64)
    expected = sum(w * t[::(1 if j == 0 else j)] for j, (w, t) in enumerate(zip(weights, inputs_cpu)))
    torch.testing.assert_close(out.cpu(), expected)


@needs_compiler
def test_float16_storage_through_common_glsl_helpers():
    body = """
  int n = int(args.iv[0]);
  for (int i = int(gl_GlobalInvocationID.x); i < n; i += int(gl_NumWorkGroups.x * gl_WorkGroupSize.x)) {
    uint bits = uint(RefU16(tvk_elem_addr(args.addr[1], i, 1)).v);
    Floats(args.addr[0]).v[i] = tvk_half_to_float(bits) * args.fv[0];
  }"""
    kid = C._compile_kernel(kernel_source(2, 1, 1, body), "half_to_float_scaled")
    x_cpu = torch.randn(100).half()
    out = torch.empty(100, device="vk")
    C._launch_kernel(kid, [out, x_cpu.to("vk")], [100], [2.0], 1, 64)
    torch.testing.assert_close(out.cpu(), x_cpu.float() * 2.0, rtol=0, atol=0)


@needs_compiler
def test_second_compile_is_a_memory_hit():
    source = kernel_source(3, 4, 1, STRIDED_BODY, tag="memo")
    before = C._generated_kernel_stats()
    kid = C._compile_kernel(source, "memo")
    assert C._compile_kernel(source, "memo_again") == kid
    after = C._generated_kernel_stats()
    assert after["compiles"] == before["compiles"] + 1
    assert after["memory_hits"] == before["memory_hits"] + 1
    assert after["disk_hits"] == before["disk_hits"]


@needs_compiler
def test_bad_arguments_raise_value_error():
    kid = C._compile_kernel(kernel_source(3, 4, 1, STRIDED_BODY), "strided_axpy")
    out, y = torch.empty(2, 3, device="vk"), torch.randn(2, 3, device="vk")
    with pytest.raises(ValueError, match=r"tensors\[1\].*cpu"):
        C._launch_kernel(kid, [out, torch.randn(2, 3), y], [2, 3, 3, 1], [1.0], 1, 32)
    with pytest.raises(ValueError, match=r"tensors\[2\] is not a Tensor"):
        C._launch_kernel(kid, [out, y, 5], [2, 3, 3, 1], [1.0], 1, 32)
    with pytest.raises(ValueError, match=r"ints\[1\]"):
        C._launch_kernel(kid, [out, y, y], [2, "3", 3, 1], [1.0], 1, 32)
    with pytest.raises(ValueError, match=r"floats\[0\]"):
        C._launch_kernel(kid, [out, y, y], [2, 3, 3, 1], [None], 1, 32)
    with pytest.raises(ValueError, match="groups"):
        C._launch_kernel(kid, [out, y, y], [2, 3, 3, 1], [1.0], 0, 32)
    with pytest.raises(ValueError, match="maxComputeWorkGroupCount"):
        C._launch_kernel(kid, [out, y, y], [2, 3, 3, 1], [1.0], 2**31, 32)
    with pytest.raises(ValueError, match="no generated kernel"):
        C._launch_kernel(10**9, [out, y, y], [2, 3, 3, 1], [1.0], 1, 32)


@needs_compiler
def test_compile_error_raises_runtime_error_with_log():
    source = kernel_source(1, 0, 0, "  float z = not_declared_anywhere + 1.0;", tag="broken")
    with pytest.raises(RuntimeError) as info:
        C._compile_kernel(source, "broken_kernel")
    message = str(info.value)
    assert "broken_kernel" in message
    assert "not_declared_anywhere" in message and "undeclared identifier" in message
    error_line = source.splitlines().index("  float z = not_declared_anywhere + 1.0;") + 1
    assert f">{error_line:5d} |   float z = not_declared_anywhere + 1.0;" in message


CACHE_SCRIPT = textwrap.dedent("""
    import json, torch, torch_vk
    C = torch_vk._C
    source = {source!r}
    kid = C._compile_kernel(source, "cache_round_trip")
    x, y = torch.arange(12.).reshape(3, 4), torch.ones(3, 4)
    out = torch.empty(3, 4, device="vk")
    C._launch_kernel(kid, [out, x.to("vk"), y.to("vk")], [3, 4, 4, 1], [2.0], 1, 64)
    assert torch.equal(out.cpu(), x * 2 + y), out.cpu()
    print("STATS " + json.dumps(C._generated_kernel_stats()))
""")


@needs_compiler
def test_disk_cache_round_trip_across_processes(tmp_path):
    source = kernel_source(3, 4, 1, STRIDED_BODY, tag=f"round trip {os.getpid()}")
    env = dict(os.environ, TORCH_VK_CACHE_DIR=str(tmp_path / "shared_cache"))
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(torch_vk.__file__)), env.get("PYTHONPATH", "")])
    script = CACHE_SCRIPT.format(source=source)
    stats = []
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                text=True, timeout=180)
        assert result.returncode == 0, result.stderr[-3000:]
        line = [l for l in result.stdout.splitlines() if l.startswith("STATS ")][-1]
        stats.append(json.loads(line[len("STATS "):]))
    assert stats[0] == {"compiles": 1, "memory_hits": 0, "disk_hits": 0}
    assert stats[1] == {"compiles": 0, "memory_hits": 0, "disk_hits": 1}
    assert len(list((tmp_path / "shared_cache" / "spirv").glob("*.spv"))) == 1
