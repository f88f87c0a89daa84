"""Kernels whose per-invocation loops grow with the problem stay within the device's loop
budget (DeviceCapabilities::max_loop_iterations: lavapipe ends every loop of an invocation
silently after 65535 iterations in total) by splitting the work across dispatches.

Two kinds of tests: sizes past the real limit for the common shapes (they fail with wrong
results on lavapipe without the split), and a subprocess with a tiny budget
(TORCH_VK_MAX_LOOP_ITERATIONS) that reaches every split path with small tensors."""
import os
import subprocess
import sys

import pytest
import torch

import torch_vk  # noqa: F401
from helpers import make

pytestmark = pytest.mark.usefixtures("strict_native")


def test_limit_is_reported():
    props = torch_vk._C._get_device_properties(0)
    limit = props["max_loop_iterations"]
    if "llvmpipe" in props["name"].lower() and "TORCH_VK_MAX_LOOP_ITERATIONS" not in os.environ:
        assert limit == 65535
    assert limit >= 0


def test_cumsum_long_column_thread_mode():
    # dim 0 of a [70000, 3] tensor: one invocation per column walks 70000 elements.
    x = torch.ones(70000, 3, dtype=torch.int64)
    x[::7] = 3
    out = x.to("vk").cumsum(0).cpu()
    assert torch.equal(out, x.cumsum(0))


def test_cumsum_long_row_workgroup_mode():
    # One workgroup walks the row in tiles of 256, each with a shared-memory scan of 8 steps
    # (two barriers each; lavapipe counts barriers as iterations): past ~620k elements in
    # int64 without the split, ~490k in float32 (subgroup scan).
    x = torch.arange(1_000_000, dtype=torch.int64) % 5
    assert torch.equal(x.to("vk").cumsum(0).cpu(), x.cumsum(0))
    y = make((600_000,), torch.float32, low=-1, high=1)
    torch.testing.assert_close(y.to("vk").cumsum(0).cpu(), y.cumsum(0), atol=2e-3, rtol=1e-4)


def test_cummax_long_column():
    x = make((70000, 2), torch.float32, seed=3)
    values, indices = x.to("vk").cummax(0)
    ref_values, ref_indices = x.cummax(0)
    assert torch.equal(values.cpu(), ref_values)
    assert torch.equal(indices.cpu(), ref_indices)


def test_cummin_long_row():
    x = make((700_000,), torch.float32, seed=4)
    values, indices = x.to("vk").cummin(0)
    ref_values, ref_indices = x.cummin(0)
    assert torch.equal(values.cpu(), ref_values)
    assert torch.equal(indices.cpu(), ref_indices)


def test_complex_cumprod_long_row():
    # Unit-magnitude factors keep the product finite; wrong from element 21845 without the split.
    angle = make((30000,), torch.float64, low=-0.01, high=0.01)
    z = torch.polar(torch.ones_like(angle), angle).to(torch.complex64)
    torch.testing.assert_close(z.to("vk").cumprod(0).cpu(), z.cumprod(0), atol=1e-3, rtol=1e-3)


_TINY_BUDGET_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
import torch_vk
from helpers import make
torch_vk.set_fallback_mode("error")
props = torch_vk._C._get_device_properties(0)
assert props["max_loop_iterations"] == 300, props["max_loop_iterations"]

def close(a, b, **tol):
    torch.testing.assert_close(a.cpu(), b, equal_nan=True, **tol)

for dtype in (torch.float32, torch.float16, torch.int64, torch.int32, torch.bool, torch.float64):
    for shape, dim in (((3, 1000), 1), ((1000, 5), 0), ((4, 700, 3), 1), ((2000,), 0), ((5, 40), 1)):
        if dtype.is_floating_point:
            x = make(shape, dtype, low=-1, high=1, seed=len(shape))
        elif dtype == torch.bool:
            x = make(shape, torch.float32, seed=1) > 0
        else:
            x = make(shape, torch.float32, low=-4, high=4, seed=2).to(dtype)
        v = x.to("vk")
        tol = dict(atol=5e-2, rtol=1e-2) if dtype == torch.float16 else dict(atol=1e-4, rtol=1e-4)
        close(v.cumsum(dim), x.cumsum(dim), **tol)
        if dtype.is_floating_point:
            y = (x.abs() * 0.01 + 0.995).to(dtype)
            close(y.to("vk").cumprod(dim), y.cumprod(dim), **tol)
            close(v.logcumsumexp(dim), x.logcumsumexp(dim), **tol)
        if dtype != torch.bool:
            for fn in (torch.cummax, torch.cummin):
                got, want = fn(v, dim), fn(x, dim)
                close(got.values, want.values)
                assert torch.equal(got.indices.cpu(), want.indices), (fn, dtype, shape)
# NaN sticks across the split, and ties take the last index.
x = torch.ones(1500)
x[200] = float("nan")
got = torch.cummax(x.to("vk"), 0)
want = torch.cummax(x, 0)
close(got.values, want.values)
assert torch.equal(got.indices.cpu(), want.indices)
# In place.
x = make((1200,), torch.float32, seed=5)
v = x.to("vk")
v.cumsum_(0)
close(v, x.cumsum(0), atol=1e-4, rtol=1e-4)

# Complex cumprod / prod: serial rows, workgroup rows (prod), strided and conjugated inputs.
angle = make((6, 900), torch.float64, low=-0.05, high=0.05, seed=7)
z = torch.polar(torch.ones_like(angle), angle)
for dtype in (torch.complex64, torch.complex128):
    zz = z.to(dtype)
    for t in (zz, zz.t(), zz.conj()):
        dim = 1 if t.shape[-1] == 900 else 0
        close(t.to("vk").cumprod(dim), t.cumprod(dim), atol=1e-4, rtol=1e-4)
        close(t.to("vk").prod(dim), t.prod(dim), atol=1e-4, rtol=1e-4)
    close(zz.to("vk").prod(), zz.prod(), atol=1e-4, rtol=1e-4)
    many = torch.polar(torch.ones(5000, 30, dtype=torch.float64),
                       make((5000, 30), torch.float64, low=-0.1, high=0.1, seed=8)).to(dtype)
    close(many.to("vk").prod(1), many.prod(1), atol=1e-4, rtol=1e-4)
    close(many.to("vk").cumprod(1), many.cumprod(1), atol=1e-4, rtol=1e-4)
    close(torch.ones(3, 0, dtype=dtype, device="vk").prod(1), torch.ones(3, 0, dtype=dtype).prod(1))

# torch.compile's generated reduction / row kernels (one workgroup per row) give way to the
# eager ops, which split, when a row would pass the budget.
def row_sum(a):
    return (torch.sin(a) * 2.0).sum(-1)

def row_softmax(a):
    e = torch.exp(a - a.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)

x = make((64, 70000), torch.float32, seed=9)
for fn in (row_sum, row_softmax):
    compiled = torch.compile(fn, backend="vk")
    compiled(x.to("vk"))
    before = torch_vk.stats()["dispatches"]
    got = compiled(x.to("vk"))
    assert torch_vk.stats()["dispatches"] - before >= 2, fn  # not one generated kernel
    close(got, fn(x), atol=1e-4, rtol=1e-4)
torch.vk.synchronize()
print("ok")
"""


def test_tiny_budget_splits_every_scan_and_generated_rows():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TORCH_VK_MAX_LOOP_ITERATIONS="300")
    r = subprocess.run([sys.executable, "-c", _TINY_BUDGET_SCRIPT, here], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
