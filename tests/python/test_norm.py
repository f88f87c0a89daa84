"""Normalization layers against PyTorch's CPU: batch norm (train / eval, running statistics,
momentum, affine or not, track_running_stats off), layer norm, group norm and RMS norm,
forward and autograd backward, every floating dtype incl. float16 / bfloat16 inputs with
float32 parameters, non-contiguous inputs, empty batches and bad input."""
import copy

import pytest
import torch
import torch.nn.functional as F

from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
A = torch.ops.aten


def assert_near(vk, cpu, ref, dtype, what=""):
    """vk result vs the CPU result. float16 / bfloat16: both are one rounding of an fp32
    computation, but reductions (gradients) amplify one-ulp differences of intermediate
    roundings, so vk must be as close to the float64 reference `ref` as the CPU is."""
    assert vk.device.type == "vk", what
    vk = vk.cpu()
    assert vk.dtype == cpu.dtype and vk.shape == cpu.shape, (what, vk.dtype, cpu.dtype, vk.shape, cpu.shape)
    if ref is None:
        torch.testing.assert_close(vk, cpu, equal_nan=True, msg=lambda m: f"{what}: {m}")
        return
    tol = TOLERANCE.get(dtype, dict(atol=1e-10, rtol=1e-9))
    try:
        torch.testing.assert_close(vk, cpu, equal_nan=True, **tol)
        return
    except AssertionError:
        pass
    # Not within the dtype's tolerance of the CPU: vk must then be at least as accurate as
    # the CPU (cancellation-prone cases such as one-element groups, whose exact gradient is 0).
    assert torch.equal(vk.isnan(), cpu.isnan()), what
    err_vk = (vk.double() - ref.double()).nan_to_num().abs().max().item()
    err_cpu = (cpu.double() - ref.double()).nan_to_num().abs().max().item()
    assert err_vk <= 2 * err_cpu + tol["atol"], (what, err_vk, err_cpu)


def param_dtype_of(dtype, mixed):
    return torch.float32 if mixed else dtype


# ---------------------------------------------------------------- batch norm modules

BN_CASES = {
    # name: (module factory, input shape)
    "bn1d_2d": (lambda **kw: torch.nn.BatchNorm1d(5, **kw), (6, 5)),
    "bn1d_3d": (lambda **kw: torch.nn.BatchNorm1d(3, **kw), (4, 3, 7)),
    "bn2d": (lambda **kw: torch.nn.BatchNorm2d(3, **kw), (2, 3, 5, 4)),
    "bn2d_long": (lambda **kw: torch.nn.BatchNorm2d(2, **kw), (2, 2, 16, 20)),   # workgroup path
    "bn1d_wide": (lambda **kw: torch.nn.BatchNorm1d(300, **kw), (5, 300)),      # thread path
}


def run_batch_norm(case, dtype, mixed=False, steps=2, layout=lambda t: t, **module_kwargs):
    factory, shape = BN_CASES[case]
    torch.manual_seed(0)
    cpu = factory(**module_kwargs).to(param_dtype_of(dtype, mixed))
    if cpu.affine:
        with torch.no_grad():  # non-trivial parameters
            cpu.weight.copy_(make(cpu.weight.shape, cpu.weight.dtype, low=0.5, high=2, seed=7))
            cpu.bias.copy_(make(cpu.bias.shape, cpu.bias.dtype, seed=8))
    vk = copy.deepcopy(cpu).to("vk")
    ref = copy.deepcopy(cpu).double()
    for step, train in enumerate([True] * steps + [False, True][: 2 if steps > 1 else 0]):
        for m in (cpu, vk, ref):
            m.train(train)
        x = make(shape, dtype, low=-2, high=3, seed=step)
        g = make(shape, dtype, seed=100 + step)
        xc = layout(x.clone()).requires_grad_()
        xv = layout(x.to("vk")).requires_grad_()
        xr = x.double().requires_grad_()
        yc, yv, yr = cpu(xc), vk(xv), ref(xr)
        assert_near(yv, yc, yr, dtype, f"{case} step {step} output")
        yc.backward(g)
        yv.backward(g.to("vk"))
        yr.backward(g.double())
        assert_near(xv.grad, xc.grad, xr.grad, dtype, f"{case} step {step} grad_input")
        if cpu.affine:
            for name in ("weight", "bias"):
                pc, pv, pr = (getattr(m, name).grad for m in (cpu, vk, ref))
                assert_near(pv, pc, pr, dtype, f"{case} step {step} grad_{name}")
                for m in (cpu, vk, ref):
                    getattr(m, name).grad = None
    if cpu.track_running_stats:
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            bc, bv, br = (getattr(m, name) for m in (cpu, vk, ref))
            assert bv.device.type == "vk"
            assert_near(bv, bc, br if bc.is_floating_point() else None, bc.dtype, name)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", sorted(BN_CASES))
def test_batch_norm_module(case, dtype):
    run_batch_norm(case, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", ["bn1d_2d", "bn2d"])
def test_batch_norm_mixed_dtypes(case, dtype):
    # float16 / bfloat16 activations with float32 parameters and running stats (autocast).
    run_batch_norm(case, dtype, mixed=True)


@pytest.mark.parametrize("kwargs", [dict(momentum=None), dict(momentum=0.3), dict(affine=False),
                                    dict(track_running_stats=False),
                                    dict(affine=False, track_running_stats=False)], ids=str)
def test_batch_norm_options(kwargs):
    for case in ("bn1d_2d", "bn2d"):
        run_batch_norm(case, torch.float32, steps=4, **kwargs)


def test_batch_norm_layouts():
    x = make((4, 3, 5, 2), torch.float32)
    for _, layout in layouts(x):
        run_batch_norm("bn2d", torch.float32, steps=2, layout=lambda t: layout(t))
    run_batch_norm("bn2d", torch.float32, steps=2,
                   layout=lambda t: t.contiguous(memory_format=torch.channels_last))


def test_batch_norm_functional_and_ops():
    x = make((4, 3, 6), torch.float32)
    w, b = make((3,), torch.float32, seed=1), make((3,), torch.float32, seed=2)
    rm, rv = make((3,), torch.float32, seed=3), make((3,), torch.float32, low=0.5, high=2, seed=4)
    # Each checks the outputs and the in-place running statistics.
    check(lambda a, m, v: F.batch_norm(a, m, v, w.to(a.device), b.to(a.device), training=True), x, rm, rv)
    check(lambda a, m, v: F.batch_norm(a, m, v, training=False), x, rm, rv)
    check(lambda a: F.batch_norm(a, None, None, training=True, momentum=0.5), x)
    check(lambda a, m, v: A.native_batch_norm(a, None, None, m, v, True, 0.2, 1e-3), x, rm, rv)
    check(lambda a, m, v: A.native_batch_norm(a, None, None, m, v, False, 0.2, 1e-3), x, rm, rv)
    check(lambda a, m, v: A._native_batch_norm_legit(a, None, None, m, v, True, 0.1, 1e-5), x, rm, rv)
    check(lambda a: A._native_batch_norm_legit.no_stats(a, None, None, True, 0.1, 1e-5), x)
    check(lambda a, m, v: A._native_batch_norm_legit_no_training(a, None, None, m, v, 0.1, 1e-5), x, rm, rv)
    check(lambda a, m, v: A._batch_norm_with_update(a, None, None, m, v, 0.1, 1e-5), x, rm, rv)
    check(lambda a, m, v: A._batch_norm_no_update(a, None, None, m, v, 0.1, 1e-5), x, rm, rv)
    # Backward ops (train: saved statistics; eval: running statistics).
    g = make((4, 3, 6), torch.float32, seed=9)
    _, sm, si = A.native_batch_norm(x, w, None, rm.clone(), rv.clone(), True, 0.1, 1e-5)
    for mask in ([True, True, True], [True, False, False], [False, True, True]):
        check(lambda gg, a: A.native_batch_norm_backward(gg, a, w.to(a.device), None, None, sm.to(a.device),
                                                          si.to(a.device), True, 1e-5, mask), g, x, atol=1e-4, rtol=1e-4)
        check(lambda gg, a: A.native_batch_norm_backward(gg, a, w.to(a.device), rm.to(a.device), rv.to(a.device),
                                                          None, None, False, 1e-5, mask), g, x, atol=1e-4, rtol=1e-4)
        check(lambda gg, a: A.batch_norm_backward(gg, a, w.to(a.device), rm.to(a.device), rv.to(a.device),
                                                  sm.to(a.device), si.to(a.device), True, 1e-5, mask,
                                                  torch.empty(0, dtype=torch.uint8, device=a.device)),
              g, x, atol=1e-4, rtol=1e-4)
    check(lambda gg, a: A.native_batch_norm_backward(gg, a, None, None, None, sm.to(a.device), si.to(a.device),
                                                      True, 1e-5, [True, True, True]), g, x, atol=1e-4, rtol=1e-4)


def test_batch_norm_edges_and_errors():
    rm, rv = torch.zeros(3), torch.ones(3)
    # Empty batch: eval normalizes nothing; training raises like the CPU.
    check(lambda a, m, v: F.batch_norm(a, m, v, training=False), torch.empty(0, 3, 4), rm, rv)
    check(lambda a, m, v: F.batch_norm(a, m, v, training=True), torch.empty(0, 3, 4), rm, rv)
    # One value per channel in training: ValueError from F.batch_norm.
    check(lambda a, m, v: F.batch_norm(a, m, v, training=True), make((1, 3), torch.float32), rm, rv)
    x = make((2, 3, 4), torch.float32)
    check(lambda a, m, v: F.batch_norm(a, m, v, weight=torch.ones(4, device=a.device), training=True), x, rm, rv)
    check(lambda a, v: F.batch_norm(a, torch.zeros(4, device=a.device), v, training=True), x, rv)
    check(lambda a: F.batch_norm(a, None, None, training=True), make((3,), torch.float32))
    check(lambda a, m, v: F.batch_norm(a, m, v, training=True), torch.ones(2, 3, dtype=torch.int64), rm, rv)
    # Mixed dtypes the CPU refuses.
    check(lambda a, m, v: F.batch_norm(a, m, v, training=True), x.double(), rm, rv)
    check(lambda a, m, v: F.batch_norm(a, m, v, weight=torch.ones(3, dtype=torch.float16, device=a.device),
                                       training=True), x, rm, rv)


# ---------------------------------------------------------------- layer norm

def run_autograd(fn, inputs, dtype, what, grad_seed=50):
    """fn(*inputs) forward + backward on CPU, vk and in float64; compares output and the
    gradients of every floating input that requires grad."""
    inputs = [t.detach() if t is not None else None for t in inputs]
    cpu_in = [t.clone().requires_grad_() if t is not None else None for t in inputs]
    vk_in = [t.to("vk").requires_grad_() if t is not None else None for t in inputs]
    ref_in = [t.double().clone().requires_grad_() if t is not None else None for t in inputs]
    yc, yv, yr = fn(*cpu_in), fn(*vk_in), fn(*ref_in)
    assert_near(yv, yc, yr, dtype, f"{what} output")
    g = make(yc.shape, yc.dtype, seed=grad_seed)
    yc.backward(g)
    yv.backward(g.to("vk"))
    yr.backward(g.double())
    for i, (c, v, r) in enumerate(zip(cpu_in, vk_in, ref_in)):
        if c is not None:
            assert_near(v.grad, c.grad, r.grad, dtype, f"{what} grad {i}")


LN_SHAPES = [((3, 4, 5), (5,)), ((2, 3, 4), (3, 4)), ((2, 700), (700,)), ((300, 3), (3,)), ((7,), (7,))]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_layer_norm(dtype):
    for shape, nshape in LN_SHAPES:
        x = make(shape, dtype, seed=1)
        w = make(nshape, dtype, low=0.5, high=2, seed=2)
        b = make(nshape, dtype, seed=3)
        run_autograd(lambda a, ww, bb: F.layer_norm(a, nshape, ww, bb, eps=1e-5), [x, w, b], dtype, f"ln {shape}")
        run_autograd(lambda a: F.layer_norm(a, nshape), [x], dtype, f"ln no affine {shape}")
        if len(shape) == 3:
            run_autograd(lambda a, ww: F.layer_norm(a, nshape, ww), [x, w], dtype, f"ln no bias {shape}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_layer_norm_mixed_and_module(dtype):
    # float16 / bfloat16 input with float32 parameters: float32 statistics.
    x = make((4, 6), dtype)
    w, b = make((6,), torch.float32, low=0.5, high=2, seed=2), make((6,), torch.float32, seed=3)
    run_autograd(lambda a, ww, bb: F.layer_norm(a, (6,), ww, bb), [x, w, b], dtype, "ln mixed")
    check(lambda a, ww, bb: A.native_layer_norm(a, [6], ww, bb, 1e-5), x, w, b)
    check(lambda a, ww: A.native_layer_norm(a, [6], ww, None, 1e-5), x, w)
    for kwargs in (dict(elementwise_affine=True), dict(elementwise_affine=False), dict(bias=False)):
        torch.manual_seed(0)
        m = torch.nn.LayerNorm(6, **kwargs)
        mv = copy.deepcopy(m).to("vk")
        xv = x.float().to("vk").requires_grad_()
        xc = x.float().requires_grad_()
        mv(xv).sum().backward()
        m(xc).sum().backward()
        torch.testing.assert_close(xv.grad.cpu(), xc.grad, atol=1e-5, rtol=1e-4)
        for pv, pc in zip(mv.parameters(), m.parameters()):
            torch.testing.assert_close(pv.grad.cpu(), pc.grad, atol=1e-5, rtol=1e-4)


def test_layer_norm_ops_layouts_and_edges():
    x = make((4, 3, 5), torch.float32)
    w, b = make((5,), torch.float32, seed=1), make((5,), torch.float32, seed=2)
    for _, layout in layouts(x):
        check(lambda a, ww, bb: A.native_layer_norm(layout(a), [5], ww, bb, 1e-5), x, w, b)
        check(lambda a, ww: A.native_layer_norm(layout(a), [3, 5], None, None, 1e-3), x, w)
    # Empty inputs keep the CPU's statistics dtype (float16 stays float16) and values.
    for dtype in DTYPES:
        check(lambda a: A.native_layer_norm(a, [4], None, None, 1e-5), torch.empty(0, 4, dtype=dtype))
        check(lambda a: A.native_layer_norm(a, [0], None, None, 1e-5), torch.empty(3, 0, dtype=dtype))
        check(lambda a: A.native_layer_norm(a, [4], None, None, 1e-5), make((2, 4), dtype))
    run_autograd(lambda a, ww: F.layer_norm(a, (4,), ww), [torch.empty(0, 4), w[:4].clone()], torch.float32, "ln empty")
    # Backward op with each mask.
    y, mean, rstd = A.native_layer_norm(x, [5], w, b, 1e-5)
    g = make(x.shape, torch.float32, seed=4)
    for mask in ([True, True, True], [True, False, False], [False, True, False], [False, False, True]):
        check(lambda gg, a, m, r, ww, bb: A.native_layer_norm_backward(gg, a, [5], m, r, ww, bb, mask),
              g, x, mean, rstd, w, b, atol=1e-5, rtol=1e-4)
    # Bad input.
    check(lambda a: F.layer_norm(a, [3]), x)
    check(lambda a: F.layer_norm(a, [5], weight=torch.ones(4, device=a.device)), x)
    check(lambda a: F.layer_norm(a, [5], bias=torch.ones(4, device=a.device)), x)
    check(lambda a: A.native_layer_norm(a, [], None, None, 1e-5), x)
    check(lambda a: F.layer_norm(a, [5]), torch.ones(2, 5, dtype=torch.int64))
    check(lambda a: F.layer_norm(a, [5], weight=torch.ones(5, dtype=torch.float16, device=a.device)), x)
    check(lambda a: F.layer_norm(a, [5], weight=torch.ones(5, device=a.device)), x.double())


# ---------------------------------------------------------------- group norm

GN_CASES = [((2, 4, 3), 2), ((3, 6, 2, 2), 3), ((2, 4), 4), ((1, 8, 300), 2), ((2, 6, 5), 1), ((2, 3, 0), 3)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_group_norm(dtype):
    for shape, groups in GN_CASES:
        C = shape[1]
        x = make(shape, dtype, seed=1)
        w = make((C,), dtype, low=0.5, high=2, seed=2)
        b = make((C,), dtype, seed=3)
        if x.numel():
            run_autograd(lambda a, ww, bb: F.group_norm(a, groups, ww, bb), [x, w, b], dtype, f"gn {shape}")
            run_autograd(lambda a: F.group_norm(a, groups), [x], dtype, f"gn no affine {shape}")
        # The CPU computes y = x * (rstd * w) + (b - mean * rstd * w): cancellation of order
        # |x| * rstd * ulp for one-element groups (rstd = 1 / sqrt(eps)).
        tol = dict(atol=1e-4, rtol=1e-5) if dtype == torch.float32 else {}
        check(lambda a, ww, bb: A.native_group_norm(a, ww, bb, shape[0], C, x[0, 0].numel(), groups, 1e-5),
              x, w, b, **tol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_group_norm_mixed(dtype):
    x = make((2, 4, 5), dtype)
    w, b = make((4,), torch.float32, low=0.5, high=2, seed=2), make((4,), torch.float32, seed=3)
    run_autograd(lambda a, ww, bb: F.group_norm(a, 2, ww, bb), [x, w, b], dtype, "gn mixed")
    check(lambda a, ww, bb: A.native_group_norm(a, ww, bb, 2, 4, 5, 2, 1e-5), x, w, b)


def test_group_norm_float16_values():
    # The OpInfo sample that the composite got wrong (float16 intermediates): small groups
    # with large values.
    x = make((1, 3, 1), torch.float16, low=-9, high=9, seed=3)
    check(lambda a: F.group_norm(a, 1, eps=0.5), x)
    check(lambda a: A.native_group_norm(a, None, None, 1, 3, 1, 1, 0.5), x)
    check(lambda a: F.group_norm(a, 3), make((2, 3, 4), torch.float16, low=-50, high=50))


def test_group_norm_layouts_backward_and_errors():
    x = make((2, 4, 3, 2), torch.float32)
    w, b = make((4,), torch.float32, seed=1), make((4,), torch.float32, seed=2)
    for _, layout in layouts(x):
        check(lambda a, ww, bb: F.group_norm(layout(a), 2, ww, bb), x, w, b)
    check(lambda a: F.group_norm(a, 2), torch.empty(0, 4, 3))
    y, mean, rstd = A.native_group_norm(x, w, b, 2, 4, 6, 2, 1e-5)
    g = make(x.shape, torch.float32, seed=4)
    for mask in ([True, True, True], [True, False, False], [False, True, True]):
        check(lambda gg, a, m, r, ww: A.native_group_norm_backward(gg, a, m, r, ww, 2, 4, 6, 2, mask),
              g, x, mean, rstd, w, atol=1e-5, rtol=1e-4)
    check(lambda a: F.group_norm(a, 3), x)                                        # 4 % 3
    check(lambda a: F.group_norm(a, 2, weight=torch.ones(3, device=a.device)), x)
    check(lambda a: A.native_group_norm(a, None, None, 2, 4, 6, 0, 1e-5), x)
    check(lambda a: A.native_group_norm(a, None, None, 3, 4, 6, 2, 1e-5), x)
    check(lambda a: F.group_norm(a, 2), torch.ones(2, 4, 3, dtype=torch.int64))


# ---------------------------------------------------------------- RMS norm

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rms_norm(dtype):
    for shape, nshape in LN_SHAPES:
        x = make(shape, dtype, seed=1)
        w = make(nshape, dtype, low=0.5, high=2, seed=2)
        run_autograd(lambda a, ww: F.rms_norm(a, nshape, ww, eps=1e-6), [x, w], dtype, f"rms {shape}")
        if len(shape) == 3:
            run_autograd(lambda a: F.rms_norm(a, nshape), [x], dtype, f"rms no weight {shape}")


def test_rms_norm_module_mixed_layouts_and_errors():
    torch.manual_seed(0)
    m = torch.nn.RMSNorm(6)
    with torch.no_grad():
        m.weight.copy_(make((6,), torch.float32, low=0.5, high=2))
    mv = copy.deepcopy(m).to("vk")
    x = make((3, 6), torch.float32)
    xc, xv = x.clone().requires_grad_(), x.to("vk").requires_grad_()
    torch.testing.assert_close(mv(xv).cpu(), m(xc))
    mv(xv).pow(2).sum().backward()
    m(xc).pow(2).sum().backward()
    torch.testing.assert_close(xv.grad.cpu(), xc.grad, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(mv.weight.grad.cpu(), m.weight.grad, atol=1e-5, rtol=1e-4)
    # float16 input with a float32 weight: PyTorch's composite path (native vk ops).
    run_autograd(lambda a, ww: F.rms_norm(a, (6,), ww), [x.half(), m.weight.detach().clone()],
                 torch.float16, "rms mixed")
    y = make((4, 3, 5), torch.float32)
    for _, layout in layouts(y):
        check(lambda a: F.rms_norm(layout(a), (5,)), y)
        check(lambda a: A._fused_rms_norm(layout(a), [3, 5], None, 1e-5), y)
    check(lambda a: F.rms_norm(a, (5,)), torch.empty(0, 5))
    check(lambda a: F.rms_norm(a, (0,)), torch.empty(2, 0))
    check(lambda a: F.rms_norm(a, (3,)), y)
    check(lambda a: F.rms_norm(a, (5,), weight=torch.ones(4, device=a.device)), y)
    check(lambda a: F.rms_norm(a, (5,)), torch.ones(2, 5, dtype=torch.int64))


# ---------------------------------------------------------------- portable workgroup path

_NO_SUBGROUP_SCRIPT = r"""
import torch, torch_vk
import torch.nn.functional as F
torch_vk.set_fallback_mode("error")
assert not torch.vk.get_device_properties(0).subgroup_arithmetic
g = torch.Generator().manual_seed(0)
cases = [
    (lambda x, w, b: F.layer_norm(x, (700,), w, b), (2, 700), (700,)),
    (lambda x, w, b: F.layer_norm(x, (3,), w, b), (300, 3), (3,)),
    (lambda x, w, b: F.group_norm(x, 2, w, b), (1, 8, 300), (8,)),
    (lambda x, w, b: F.rms_norm(x, (700,), w), (2, 700), (700,)),
    (lambda x, w, b: F.batch_norm(x, torch.zeros(2, device=x.device), torch.ones(2, device=x.device),
                                  w, b, training=True), (2, 2, 16, 20), (2,)),
]
for fn, shape, pshape in cases:
    x, w, b = (torch.rand(s, generator=g) * 4 - 2 for s in (shape, pshape, pshape))
    outs = []
    for dev in ("cpu", "vk"):
        args = [t.detach().clone().to(dev).requires_grad_() for t in (x, w, b)]
        y = fn(*args)
        y.backward(torch.cos(torch.arange(y.numel(), dtype=y.dtype)).view(y.shape).to(dev))
        outs.append([y.detach().cpu()] + [a.grad.cpu() for a in args if a.grad is not None])
    for c, v in zip(*outs):
        torch.testing.assert_close(v, c, atol=1e-4, rtol=1e-4)
torch.vk.synchronize()
assert torch_vk._C._validation_error_count() == 0, torch_vk._C._validation_messages()[-3:]
print("ok")
"""


def test_without_subgroups():
    # TORCH_VK_DISABLE_SUBGROUPS applies at device creation: a fresh process runs the
    # shared-memory reduction path on long segments (forward, input and parameter gradients).
    import os
    import subprocess
    import sys
    env = dict(os.environ, TORCH_VK_DISABLE_SUBGROUPS="1")
    result = subprocess.run([sys.executable, "-c", _NO_SUBGROUP_SCRIPT], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0 and "ok" in result.stdout, result.stdout + result.stderr
