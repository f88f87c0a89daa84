"""The multi-tensor _foreach_* ops (src/aten/ops_foreach.cpp) against the CPU: every registered
overload, in place and functional, float32 / float16 / bfloat16 / float64; one dispatch per call
on the fast route; the per-tensor composites (slow route) for layouts and dtypes the fast route
does not take; PyTorch's errors."""
import pytest
import torch
import torch_vk

from helpers import check

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
# Shapes of one list: a 0-dim tensor, an empty one, and sizes spanning several chunks.
SHAPES = [(), (0,), (5,), (3, 7), (2, 3, 4), (4100,)]


def make_list(dtype, seed, positive=False, shapes=SHAPES):
    g = torch.Generator().manual_seed(seed)
    out = []
    for shape in shapes:
        t = torch.randn(shape, generator=g, dtype=torch.float64)
        if positive:
            t = t.abs() + 0.5
        out.append(t.to(dtype))
    return out


def to_vk(tensors):
    return [t.to("vk") for t in tensors]


def dispatches(fn):
    torch.vk.synchronize()
    before = torch_vk.stats()["dispatches"]
    fn()
    torch.vk.synchronize()
    return torch_vk.stats()["dispatches"] - before


def tol(dtype):
    return {torch.float16: dict(atol=2e-3, rtol=2e-3), torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
            torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float64: dict(atol=1e-12, rtol=1e-12)}[dtype]


def assert_lists_close(got, expected, dtype):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.device.type == "vk" and g.dtype == e.dtype and g.shape == e.shape
        assert g.stride() == e.stride()
        torch.testing.assert_close(g.cpu(), e, equal_nan=True, **tol(dtype))


# (name, number of tensor-list inputs, extra args builder, needs positive inputs)
N = len(SHAPES)
CASES = [
    ("_foreach_add", 2, lambda: dict(alpha=0.5), False),
    ("_foreach_add", 1, lambda: dict(scalar=1.25), False),
    ("_foreach_add", 1, lambda: dict(scalars=[0.5 * i for i in range(N)]), False),
    ("_foreach_sub", 2, lambda: dict(alpha=-2.0), False),
    ("_foreach_sub", 1, lambda: dict(scalar=3), False),
    ("_foreach_sub", 1, lambda: dict(scalars=[1.0 + i for i in range(N)]), False),
    ("_foreach_mul", 2, lambda: {}, False),
    ("_foreach_mul", 1, lambda: dict(scalar=0.9), False),
    ("_foreach_mul", 1, lambda: dict(scalars=[0.1 * i for i in range(N)]), False),
    ("_foreach_div", 2, lambda: {}, True),
    ("_foreach_div", 1, lambda: dict(scalar=3.0), False),
    ("_foreach_div", 1, lambda: dict(scalars=[1.0 + i for i in range(N)]), False),
    ("_foreach_addcmul", 3, lambda: dict(value=-0.25), False),
    ("_foreach_addcmul", 3, lambda: dict(scalars=[0.5 + i for i in range(N)]), False),
    ("_foreach_addcdiv", 3, lambda: dict(value=0.75), True),
    ("_foreach_addcdiv", 3, lambda: dict(scalars=[-0.5 - i for i in range(N)]), True),
    ("_foreach_lerp", 2, lambda: dict(weight=0.3), False),
    ("_foreach_lerp", 3, lambda: {}, False),
    ("_foreach_sqrt", 1, lambda: {}, True),
    ("_foreach_neg", 1, lambda: {}, False),
    ("_foreach_abs", 1, lambda: {}, False),
    ("_foreach_exp", 1, lambda: {}, False),
    ("_foreach_reciprocal", 1, lambda: {}, True),
]


def call(name, inplace, lists, extra):
    fn = getattr(torch, name + ("_" if inplace else ""))
    args = list(lists)
    if "scalars" in extra:
        args.append(extra["scalars"])
    elif "scalar" in extra:
        args.append(extra["scalar"])
    elif "weight" in extra:
        args.append(extra["weight"])
    kwargs = {k: v for k, v in extra.items() if k in ("alpha", "value")}
    return fn(*args, **kwargs)


@pytest.mark.parametrize("inplace", [False, True], ids=["functional", "inplace"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{sorted(c[2]())}")
def test_matches_cpu_in_one_dispatch(strict_native, case, dtype, inplace):
    name, nlists, extra_fn, positive = case
    extra = extra_fn()
    cpu_lists = [make_list(dtype, seed=k, positive=positive or k > 0) for k in range(nlists)]
    vk_lists = [to_vk(l) for l in cpu_lists]
    if name == "_foreach_lerp" and nlists == 3:  # weights in [0, 1]
        cpu_lists[2] = [w.abs().clamp(max=1) for w in cpu_lists[2]]
        vk_lists[2] = to_vk(cpu_lists[2])
    expected = call(name, inplace, cpu_lists, extra)
    result = {}

    def run():
        result["out"] = call(name, inplace, vk_lists, extra)

    assert dispatches(run) == 1  # the empty tensor is skipped; the rest is one launch
    if inplace:
        assert_lists_close(vk_lists[0], cpu_lists[0], dtype)
    else:
        assert_lists_close(result["out"], expected, dtype)
        # inputs unchanged
        for v, c in zip(vk_lists, cpu_lists):
            assert_lists_close(v, c, dtype)


def test_tensor_scalar_overloads(strict_native):
    grads = make_list(torch.float32, 0)
    vk = to_vk(grads)
    coef = torch.tensor(0.37)
    torch._foreach_mul_(grads, coef)
    assert dispatches(lambda: torch._foreach_mul_(vk, coef.to("vk"))) == 1
    assert_lists_close(vk, grads, torch.float32)
    torch._foreach_div_(grads, coef)
    assert dispatches(lambda: torch._foreach_div_(vk, coef.to("vk"))) == 1
    assert_lists_close(vk, grads, torch.float32)
    out_cpu = torch._foreach_add(grads, coef, alpha=2)
    out_vk = torch._foreach_add(vk, coef.to("vk"), alpha=2)
    assert_lists_close(out_vk, out_cpu, torch.float32)
    # addcmul / addcdiv take their values as a 1-D CPU tensor
    t1, t2 = make_list(torch.float32, 1), make_list(torch.float32, 2, positive=True)
    values = torch.arange(1.0, N + 1)
    expected = torch._foreach_addcdiv(grads, t1, t2, values)
    got = torch._foreach_addcdiv(vk, to_vk(t1), to_vk(t2), values)
    assert_lists_close(got, expected, torch.float32)


def test_zero_(strict_native):
    vk = to_vk(make_list(torch.bfloat16, 0))
    assert dispatches(lambda: torch._foreach_zero_(vk)) == 1
    for t in vk:
        assert (t.cpu() == 0).all()


def test_more_tensors_than_one_dispatch_takes(strict_native):
    cpu = [torch.randn(3 + i % 5) for i in range(600)]
    other = [torch.randn_like(t) for t in cpu]
    vk, vk_other = to_vk(cpu), to_vk(other)
    torch._foreach_add_(cpu, other, alpha=-0.1)
    assert dispatches(lambda: torch._foreach_add_(vk, vk_other, alpha=-0.1)) == 3  # 256 each
    assert_lists_close(vk, cpu, torch.float32)


def test_slow_route_layouts_and_dtypes(strict_native):
    # non-contiguous, mixed dtypes across lists, integer lists: per-tensor native kernels
    base = torch.randn(6, 8)
    cpu = [base.t(), base[:, ::2], torch.randn(4)]
    other = [torch.randn(8, 6), torch.randn(6, 4).t().contiguous().t(), torch.randn(4).double()]
    vk = [base.to("vk").t(), base.to("vk")[:, ::2], cpu[2].to("vk")]
    vk_other = [o.to("vk") for o in other]
    expected = torch._foreach_mul(cpu, other)
    got = torch._foreach_mul(vk, vk_other)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.cpu(), e)
    ints = [torch.arange(5), torch.arange(3)]
    torch.testing.assert_close([t.cpu() for t in torch._foreach_add([t.to("vk") for t in ints], 2)],
                               torch._foreach_add(ints, 2))


def test_errors_match_cpu():
    a = [torch.randn(3), torch.randn(2)]
    b = [torch.randn(3)]
    check(lambda dev: torch._foreach_add([t.to(dev) for t in a], [t.to(dev) for t in b]))
    check(lambda dev: torch._foreach_mul_([t.to(dev) for t in a], [1.0]))
    check(lambda dev: torch._foreach_add([], 1.0))


def test_optimizers_take_the_multi_tensor_route(strict_native):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    ref.load_state_dict(model.state_dict())
    model.to("vk")
    x, y = torch.randn(5, 8), torch.randn(5, 4)
    for make in (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
                 lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.01),
                 lambda p: torch.optim.AdamW(p, lr=1e-2, amsgrad=False)):
        opt, opt_ref = make(model.parameters()), make(ref.parameters())
        for _ in range(3):
            for m, o, xx, yy in ((model, opt, x.to("vk"), y.to("vk")), (ref, opt_ref, x, y)):
                o.zero_grad()
                torch.nn.functional.mse_loss(m(xx), yy).backward()
            steps = dispatches(opt.step)
            opt_ref.step()
            assert steps <= 12, steps  # a handful of launches, not a few per parameter
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=1e-5, rtol=1e-4)
