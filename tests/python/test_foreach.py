"""The multi-tensor _foreach_* ops (src/aten/ops_foreach.cpp) against the CPU: every registered
overload, in place and functional, float32 / float16 / bfloat16 / float64; one dispatch per call
on the fast route; the per-tensor composites (slow route) for layouts and dtypes the fast route
does not take; PyTorch's errors."""
import pytest
import torch
from helpers import dispatch_count, same_error_by_device


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
# Shapes of one list: a 0-dim tensor, an empty one, and sizes spanning several chunks.
SHAPES = [(), (0,), (5,), (3, 7), (2, 3, 4), (4100,)]


def make_list(dtype, seed, positive=False, shapes=SHAPES):
    """Normal values; positive=True: in [0.5, ...); positive="unit": in (-0.9, 0.9)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for shape in shapes:
        t = torch.randn(shape, generator=g, dtype=torch.float64)
        if positive == "unit":
            t = 0.9 * torch.tanh(t)
        elif positive:
            t = t.abs() + 0.5
        out.append(t.to(dtype))
    return out


def to_vk(tensors):
    return [t.to("vk") for t in tensors]


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
    # maximum / minimum and their clamp_* aliases
    ("_foreach_maximum", 2, lambda: {}, False),
    ("_foreach_maximum", 1, lambda: dict(scalar=0.25), False),
    ("_foreach_maximum", 1, lambda: dict(scalars=[0.3 * i - 0.5 for i in range(N)]), False),
    ("_foreach_minimum", 2, lambda: {}, False),
    ("_foreach_minimum", 1, lambda: dict(scalar=-0.25), False),
    ("_foreach_minimum", 1, lambda: dict(scalars=[0.2 * i - 0.5 for i in range(N)]), False),
    ("_foreach_clamp_min", 2, lambda: {}, False),
    ("_foreach_clamp_min", 1, lambda: dict(scalar=-0.5), False),
    ("_foreach_clamp_min", 1, lambda: dict(scalars=[0.1 * i for i in range(N)]), False),
    ("_foreach_clamp_max", 2, lambda: {}, False),
    ("_foreach_clamp_max", 1, lambda: dict(scalar=0.5), False),
    ("_foreach_clamp_max", 1, lambda: dict(scalars=[-0.1 * i for i in range(N)]), False),
    # pow: list ** list / scalar / scalar list (positive bases), scalar ** list
    ("_foreach_pow", 2, lambda: {}, True),
    ("_foreach_pow", 1, lambda: dict(scalar=2.5), True),
    ("_foreach_pow", 1, lambda: dict(scalar=2), False),
    ("_foreach_pow", 1, lambda: dict(scalars=[0.5 * i - 1 for i in range(N)]), True),
    ("_foreach_pow", 1, lambda: dict(base=1.5), False),
]
# Unary math ops (op, input domain): functional and in place in one test each.
UNARY = [
    ("sign", False), ("floor", False), ("ceil", False), ("round", False), ("trunc", False),
    ("frac", False), ("expm1", False), ("log", True), ("log2", True), ("log10", True),
    ("log1p", True), ("rsqrt", True), ("sigmoid", False), ("tanh", False), ("sin", False),
    ("cos", False), ("tan", False), ("asin", "unit"), ("acos", "unit"), ("atan", False),
    ("sinh", False), ("cosh", False), ("erf", False), ("erfc", False), ("lgamma", True)]


def call(name, inplace, lists, extra):
    fn = getattr(torch, name + ("_" if inplace else ""))
    if "base" in extra:  # _foreach_pow.ScalarAndTensor (functional only)
        return fn(extra["base"], list(lists[0]))
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
    if inplace and "base" in extra:
        pytest.skip("_foreach_pow.ScalarAndTensor has no in-place form")
    cpu_lists = [make_list(dtype, seed=k, positive=positive or k > 0) for k in range(nlists)]
    vk_lists = [to_vk(l) for l in cpu_lists]
    if name == "_foreach_lerp" and nlists == 3:  # weights in [0, 1]
        cpu_lists[2] = [w.abs().clamp(max=1) for w in cpu_lists[2]]
        vk_lists[2] = to_vk(cpu_lists[2])
    expected = call(name, inplace, cpu_lists, extra)
    result = {}

    def run():
        result["out"] = call(name, inplace, vk_lists, extra)

    assert dispatch_count(run) == 1  # the empty tensor is skipped; the rest is one launch
    if inplace:
        assert_lists_close(vk_lists[0], cpu_lists[0], dtype)
    else:
        assert_lists_close(result["out"], expected, dtype)
        # inputs unchanged
        for v, c in zip(vk_lists, cpu_lists):
            assert_lists_close(v, c, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_math_ops(strict_native, op, domain, dtype):
    cpu = make_list(dtype, seed=3, positive=domain)
    vk = to_vk(cpu)
    result = {}
    assert dispatch_count(lambda: result.update(out=getattr(torch, f"_foreach_{op}")(vk))) == 1
    assert_lists_close(result["out"], getattr(torch, f"_foreach_{op}")(cpu), dtype)
    assert_lists_close(vk, cpu, dtype)  # input unchanged
    assert dispatch_count(lambda: getattr(torch, f"_foreach_{op}_")(vk)) == 1
    getattr(torch, f"_foreach_{op}_")(cpu)
    assert_lists_close(vk, cpu, dtype)


def test_tensor_scalar_overloads(strict_native):
    grads = make_list(torch.float32, 0)
    vk = to_vk(grads)
    coef = torch.tensor(0.37)
    torch._foreach_mul_(grads, coef)
    assert dispatch_count(lambda: torch._foreach_mul_(vk, coef.to("vk"))) == 1
    assert_lists_close(vk, grads, torch.float32)
    torch._foreach_div_(grads, coef)
    assert dispatch_count(lambda: torch._foreach_div_(vk, coef.to("vk"))) == 1
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
    assert dispatch_count(lambda: torch._foreach_zero_(vk)) == 1
    for t in vk:
        assert (t.cpu() == 0).all()


def test_more_tensors_than_one_dispatch_takes(strict_native):
    cpu = [torch.randn(3 + i % 5) for i in range(600)]
    other = [torch.randn_like(t) for t in cpu]
    vk, vk_other = to_vk(cpu), to_vk(other)
    torch._foreach_add_(cpu, other, alpha=-0.1)
    assert dispatch_count(lambda: torch._foreach_add_(vk, vk_other, alpha=-0.1)) == 3  # 256 each
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
    same_error_by_device(lambda dev: torch._foreach_add([t.to(dev) for t in a], [t.to(dev) for t in b]))
    same_error_by_device(lambda dev: torch._foreach_mul_([t.to(dev) for t in a], [1.0]))
    same_error_by_device(lambda dev: torch._foreach_add([], 1.0))


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
            steps = dispatch_count(opt.step)
            opt_ref.step()
            assert steps <= 12, steps  # a handful of launches, not a few per parameter
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=1e-5, rtol=1e-4)


def test_nan_propagates_through_maximum_minimum(strict_native):
    nan = float("nan")
    cpu = [torch.tensor([nan, 1.0, -2.0]), torch.tensor([0.5, nan])]
    other = [torch.tensor([0.0, nan, -3.0]), torch.tensor([nan, 1.0])]
    for name in ("_foreach_maximum", "_foreach_minimum", "_foreach_clamp_min", "_foreach_clamp_max"):
        fn = getattr(torch, name)
        for args in ((other,), (0.0,), ([nan, 0.0],)):
            expected = fn(cpu, *args)
            got = fn(to_vk(cpu), *[to_vk(a) if isinstance(a[0], torch.Tensor) else a
                                   for a in args] if isinstance(args[0], list) else args)
            for g, e in zip(got, expected):
                torch.testing.assert_close(g.cpu(), e, equal_nan=True)


def test_copy_(strict_native):
    for dtype in DTYPES:
        dst, src = to_vk(make_list(dtype, 0)), make_list(dtype, 1)
        vk_src = to_vk(src)
        assert dispatch_count(lambda: torch._foreach_copy_(dst, vk_src)) == 1
        assert_lists_close(dst, src, dtype)
    # from the CPU, and with a dtype change: the per-tensor copies
    dst = to_vk(make_list(torch.float32, 0))
    src = make_list(torch.float64, 2)
    torch._foreach_copy_(dst, src)
    assert_lists_close(dst, [s.float() for s in src], torch.float32)
    torch._foreach_copy_(dst, to_vk(make_list(torch.float16, 3)))
    assert_lists_close(dst, [s.float() for s in make_list(torch.float16, 3)], torch.float32)


def test_slow_route_new_ops(strict_native):
    # integer lists, non-dense layouts and mixed dtypes take PyTorch's per-tensor composites
    ints = [torch.arange(-3, 4), torch.arange(5)]
    vk_ints = to_vk(ints)
    for got, expected in ((torch._foreach_sign(vk_ints), torch._foreach_sign(ints)),
                          (torch._foreach_maximum(vk_ints, 1), torch._foreach_maximum(ints, 1)),
                          (torch._foreach_pow(vk_ints, 2), torch._foreach_pow(ints, 2)),
                          (torch._foreach_log1p(vk_ints), torch._foreach_log1p(ints)),
                          (torch._foreach_clamp_max(vk_ints, [2, 3]),
                           torch._foreach_clamp_max(ints, [2, 3]))):
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype
            torch.testing.assert_close(g.cpu(), e, equal_nan=True)
    base = torch.rand(6, 8) + 0.5
    cpu = [base.t(), base[:, ::2]]
    vk = [base.to("vk").t(), base.to("vk")[:, ::2]]
    for fn in (torch._foreach_log, torch._foreach_sigmoid, lambda l: torch._foreach_pow(l, 1.5),
               lambda l: torch._foreach_pow(2.0, l), lambda l: torch._foreach_clamp_min(l, 0.9)):
        for g, e in zip(fn(vk), fn(cpu)):
            torch.testing.assert_close(g.cpu(), e)
    mixed = [torch.rand(3), torch.rand(4).double()]
    for g, e in zip(torch._foreach_maximum(to_vk(mixed), to_vk(mixed[::-1][::-1])),
                    torch._foreach_maximum(mixed, mixed)):
        torch.testing.assert_close(g.cpu(), e)


def test_addcmul_with_zero_dim_tensors(strict_native):
    # ASGD's update: params.addcmul_(intermediate, eta) with one 0-dim eta per parameter
    for dtype in DTYPES:
        params, inter = make_list(dtype, 0), make_list(dtype, 1)
        etas = [torch.tensor(0.1 * (i + 1), dtype=dtype) for i in range(N)]
        vk_params = to_vk(params)
        vk_inter, vk_etas = to_vk(inter), to_vk(etas)
        expected = torch._foreach_addcdiv(params, inter, [e + 1 for e in etas], value=0.5)
        got = torch._foreach_addcdiv(vk_params, vk_inter, to_vk([e + 1 for e in etas]), value=0.5)
        assert_lists_close(got, expected, dtype)
        torch._foreach_addcmul_(params, inter, etas, value=-1)
        assert dispatch_count(lambda: torch._foreach_addcmul_(vk_params, vk_inter, vk_etas, value=-1)) == 1
        assert_lists_close(vk_params, params, dtype)
    # a 0-dim view into the written tensor: the per-tensor route, which raises like the CPU
    def overlapping(dev):
        x = torch.ones(4, device=dev)
        torch._foreach_addcmul_([x], [torch.ones(4, device=dev)], [x[1]])
    same_error_by_device(overlapping)


def test_new_ops_errors_match_cpu():
    a = [torch.randn(3), torch.randn(2)]
    b = [torch.randn(3)]
    same_error_by_device(lambda dev: torch._foreach_maximum([t.to(dev) for t in a], [t.to(dev) for t in b]))
    same_error_by_device(lambda dev: torch._foreach_clamp_min_([t.to(dev) for t in a], [1.0]))
    same_error_by_device(lambda dev: torch._foreach_pow([t.to(dev) for t in a], [1.0, 2.0, 3.0]))
    same_error_by_device(lambda dev: torch._foreach_copy_([t.to(dev) for t in a], [t.to(dev) for t in b]))
    same_error_by_device(lambda dev: torch._foreach_log([]))
    same_error_by_device(lambda dev: torch._foreach_pow(2.0, []))
