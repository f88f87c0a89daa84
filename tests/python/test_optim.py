"""Optimizers on vk against PyTorch's CPU: SGD / Adam / AdamW in their foreach, single-tensor
and fused forms, the fused kernels' AMP arguments (grad_scale / found_inf), float16 / bfloat16
parameters, and gradient clipping. Everything runs with the CPU fallback turned into an error."""
import pytest
import torch
from torch.testing import assert_close

import torch_vk  # noqa: F401
from helpers import TOLERANCE, make

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
# Parameter shapes: a matrix, a vector, an empty tensor, a tensor of several 4096-element
# kernel chunks (5000 elements), and a 0-dim one.
SHAPES = [(5, 3), (7,), (0,), (50, 100), ()]
STEPS = 3


def make_params(dtype=torch.float32, shapes=SHAPES, seed=0):
    return [make(s, dtype, low=-1, high=1, seed=seed + i) for i, s in enumerate(shapes)]


def make_grads(params, step):
    return [make(p.shape, p.dtype, low=-1, high=1, seed=100 * step + i) for i, p in enumerate(params)]


def run_optimizer(cls, device, params_cpu, kwargs, steps=STEPS):
    params = [p.detach().clone().to(device).requires_grad_(True) for p in params_cpu]
    opt = cls(params, **kwargs)
    for step in range(steps):
        for p, g in zip(params, make_grads(params_cpu, step)):
            p.grad = g.to(device)
        opt.step()
    return [p.detach().cpu() for p in params], opt


def compare(cls, kwargs, dtype=torch.float32):
    params = make_params(dtype)
    expected, _ = run_optimizer(cls, "cpu", params, kwargs)
    actual, opt = run_optimizer(cls, VK, params, kwargs)
    tol = TOLERANCE[dtype]
    for a, e in zip(actual, expected):
        assert_close(a, e, **tol)
    return opt


SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.05),
    dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1, maximize=True),
    dict(lr=0.1, weight_decay=0.1, maximize=True),
]
ADAM_CONFIGS = [
    dict(lr=0.01),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True, betas=(0.8, 0.9)),
    dict(lr=0.02, amsgrad=True, maximize=True, weight_decay=0.05, eps=1e-6),
    dict(lr=0.01, betas=(0.0, 0.99)),
]
MODES = {"foreach": dict(foreach=True), "single": dict(foreach=False), "fused": dict(fused=True)}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("config", range(len(SGD_CONFIGS)))
def test_sgd(mode, config):
    compare(torch.optim.SGD, dict(SGD_CONFIGS[config], **MODES[mode]))


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW], ids=lambda c: c.__name__)
@pytest.mark.parametrize("config", range(len(ADAM_CONFIGS)))
def test_adam(cls, mode, config):
    compare(cls, dict(ADAM_CONFIGS[config], **MODES[mode]))


@pytest.mark.parametrize("cls,mode", [
    (torch.optim.Adam, "capturable"), (torch.optim.AdamW, "capturable"),  # SGD has none
    (torch.optim.Adam, "fused"), (torch.optim.AdamW, "fused"), (torch.optim.SGD, "fused")],
    ids=lambda x: x.__name__ if isinstance(x, type) else x)
def test_tensor_lr(cls, mode):
    # A Tensor lr on the device: read by the fused kernel, or by the capturable foreach path
    # (step counts on the device too). The CPU reference uses the same lr as a float.
    kwargs = dict(momentum=0.9) if cls is torch.optim.SGD else dict(weight_decay=0.1)
    if mode == "capturable":
        vk_kwargs = dict(kwargs, foreach=True, capturable=True)
    else:
        vk_kwargs = dict(kwargs, fused=True)
    params = make_params()
    expected, _ = run_optimizer(cls, "cpu", params, dict(kwargs, lr=0.01, foreach=False))
    actual, _ = run_optimizer(cls, VK, params,
                              dict(vk_kwargs, lr=torch.tensor(0.01, device=VK)))
    for a, e in zip(actual, expected):
        assert_close(a, e, **TOLERANCE[torch.float32])


@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD],
                         ids=lambda c: c.__name__)
def test_fused_matches_foreach_on_vk(cls):
    kwargs = dict(lr=0.05, momentum=0.9, nesterov=True) if cls is torch.optim.SGD else \
        dict(lr=0.01, amsgrad=True, weight_decay=0.1)
    params = make_params()
    fused, opt = run_optimizer(cls, VK, params, dict(kwargs, fused=True))
    foreach, _ = run_optimizer(cls, VK, params, dict(kwargs, foreach=True))
    for a, e in zip(fused, foreach):
        assert_close(a, e, **TOLERANCE[torch.float32])
    if cls is not torch.optim.SGD:  # fused state lives on the device, steps included
        state = opt.state[opt.param_groups[0]["params"][0]]
        assert state["step"].device.type == "vk" and state["step"].item() == STEPS
        assert state["exp_avg"].device.type == "vk"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW], ids=lambda c: c.__name__)
def test_fused_low_precision_params(cls, dtype):
    # Same dtype for params and state on both sides; fp32 math inside, one rounding per store.
    compare(cls, dict(lr=0.01, weight_decay=0.1, fused=True), dtype=dtype)


@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD],
                         ids=lambda c: c.__name__)
def test_fused_float64_params(cls):
    # float64 math on the device (shaderFloat64), bias corrections included.
    kwargs = dict(lr=0.05, momentum=0.9, nesterov=True) if cls is torch.optim.SGD else \
        dict(lr=0.01, weight_decay=0.1, amsgrad=True)
    params = make_params(torch.float64)
    expected, _ = run_optimizer(cls, "cpu", params, dict(kwargs, fused=True))
    actual, _ = run_optimizer(cls, VK, params, dict(kwargs, fused=True))
    for a, e in zip(actual, expected):
        assert_close(a, e)


def sgd_reference(params, dtype, lr, momentum, dampening=0.0, nesterov=False, weight_decay=0.0):
    """Fused SGD math from its definition: fp32 math on values stored in `dtype`, rounded once
    per store. (PyTorch's CPU fused SGD cannot serve here: its vectorized float16 / bfloat16
    loop reads the low-precision momentum buffer as float32 words.)"""
    params = [p.float() for p in params]
    bufs = [None] * len(params)
    for step in range(STEPS):
        for i, g in enumerate(make_grads([p.to(dtype) for p in params], step)):
            g = g.float()
            if weight_decay:
                g = g + weight_decay * params[i]
            if momentum:
                buf = g if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * g
                bufs[i] = buf.to(dtype).float()
                g = g + momentum * buf if nesterov else buf
            params[i] = (params[i] - lr * g).to(dtype).float()
    return [p.to(dtype) for p in params]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("nesterov", [False, True])
def test_fused_sgd_low_precision_params(dtype, nesterov):
    kwargs = dict(lr=0.05, momentum=0.9, dampening=0.0 if nesterov else 0.2, nesterov=nesterov,
                  weight_decay=0.01)
    params = make_params(dtype)
    actual, _ = run_optimizer(torch.optim.SGD, VK, params, dict(kwargs, fused=True))
    expected = sgd_reference(params, dtype, **kwargs)
    for a, e in zip(actual, expected):
        assert_close(a, e, **TOLERANCE[dtype])


def fused_adam_args(dtype=torch.float32, device=VK, amsgrad=False, seed=0):
    params = make_params(dtype, shapes=[(5, 3), (33,)], seed=seed)
    grads = [g * 64 for g in make_grads(params, 0)]  # "scaled" gradients
    state = [[make(p.shape, dtype, low=0, high=0.5, seed=s + i) for i, p in enumerate(params)]
             for s in (10, 20, 30)]
    steps = [torch.tensor(3.0) for _ in params]
    lists = [params, grads, state[0], state[1], state[2] if amsgrad else [], steps]
    return [[t.to(device) for t in lst] for lst in lists]


@pytest.mark.parametrize("adamw", [False, True])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_adam_grad_scale_and_found_inf(adamw, amsgrad):
    fn = torch._fused_adamw_ if adamw else torch._fused_adam_
    kwargs = dict(lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8, amsgrad=amsgrad,
                  maximize=False)
    for found in (0.0, 1.0, 2.0):
        cpu = fused_adam_args(device="cpu", amsgrad=amsgrad)
        vk = fused_adam_args(device=VK, amsgrad=amsgrad)
        before = [[t.clone() for t in lst] for lst in cpu]
        scale = torch.tensor(64.0)
        # Like the CPU kernel, only found_inf == 1 skips the step (2.0 steps as usual).
        fn(*cpu, **kwargs, grad_scale=scale, found_inf=torch.tensor(found))
        fn(*vk, **kwargs, grad_scale=scale.to(VK), found_inf=torch.tensor(found, device=VK))
        for lst_vk, lst_cpu, lst_before in zip(vk, cpu, before):
            for a, e, b in zip(lst_vk, lst_cpu, lst_before):
                assert_close(a.cpu(), e, **TOLERANCE[torch.float32])
                if found == 1.0:
                    assert torch.equal(a.cpu(), b)  # the whole step was skipped


def test_fused_adam_tensor_lr_on_device_and_float_steps():
    kwargs = dict(beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=True)
    cpu = fused_adam_args(device="cpu")
    vk = fused_adam_args(device=VK)
    torch._fused_adam_(*cpu, lr=torch.tensor(0.003), **kwargs)
    torch._fused_adam_(*vk, lr=torch.tensor(0.003, device=VK), **kwargs)
    for lst_vk, lst_cpu in zip(vk, cpu):
        for a, e in zip(lst_vk, lst_cpu):
            assert_close(a.cpu(), e, **TOLERANCE[torch.float32])


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_fused_sgd_grad_scale_and_found_inf(momentum):
    for found in (0.0, 1.0, 2.0):  # only 1 skips, as on the CPU
        for first in (False, True):
            params = make_params(shapes=[(4, 4), (9,)])
            grads = [g * 8 for g in make_grads(params, 1)]
            bufs = [make(p.shape, torch.float32, seed=50 + i) for i, p in enumerate(params)] \
                if momentum else []
            kwargs = dict(weight_decay=0.01, momentum=momentum, lr=0.1, dampening=0.1,
                          nesterov=bool(momentum), maximize=False, is_first_step=first)
            cpu = [[t.clone() for t in lst] for lst in (params, grads, bufs)]
            vk = [[t.to(VK) for t in lst] for lst in (params, grads, bufs)]
            torch._fused_sgd_(*cpu, **kwargs, grad_scale=torch.tensor(8.0),
                              found_inf=torch.tensor(found))
            torch._fused_sgd_(*vk, **kwargs, grad_scale=torch.tensor(8.0, device=VK),
                              found_inf=torch.tensor(found, device=VK))
            for lst_vk, lst_cpu in zip(vk, cpu):
                for a, e in zip(lst_vk, lst_cpu):
                    assert_close(a.cpu(), e, **TOLERANCE[torch.float32])
            if found == 1.0:
                assert torch.equal(vk[0][0].cpu(), params[0])


def test_fused_sgd_many_tensors_and_mixed_dtypes():
    # More tensors than one dispatch's table holds, and two dtypes in one call.
    params = [make((3,), torch.float32, seed=i) for i in range(600)]
    params += [make((5,), torch.float16, seed=i) for i in range(3)]
    grads = [make(p.shape, p.dtype, seed=1000 + i) for i, p in enumerate(params)]
    cpu = [[t.clone() for t in params], [t.clone() for t in grads]]
    vk = [[t.to(VK) for t in params], [t.to(VK) for t in grads]]
    kwargs = dict(weight_decay=0.0, momentum=0.0, lr=0.5, dampening=0.0, nesterov=False,
                  maximize=False, is_first_step=False)
    torch._fused_sgd_(*cpu, [], **kwargs)
    torch._fused_sgd_(*vk, [], **kwargs)
    for a, e in zip(vk[0], cpu[0]):
        assert_close(a.cpu(), e, **TOLERANCE[e.dtype])


def test_fused_rejects_bad_lists():
    p = [torch.zeros(3, device=VK)]
    with pytest.raises(RuntimeError):
        torch._fused_sgd_(p, [torch.zeros(4, device=VK)], [], weight_decay=0.0, momentum=0.0,
                          lr=0.1, dampening=0.0, nesterov=False, maximize=False,
                          is_first_step=False)
    with pytest.raises(RuntimeError):
        torch._fused_adam_(p, p, p, p, [], [], lr=0.1, beta1=0.9, beta2=0.9, weight_decay=0.0,
                           eps=1e-8, amsgrad=False, maximize=False)


def test_grad_scaler_with_fused_adam():
    # torch.amp.GradScaler drives the fused kernel's grad_scale / found_inf on the device.
    def train(device, inject_inf):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=0.01, fused=True)
        scaler = torch.amp.GradScaler(device if isinstance(device, str) else device.type,
                                      init_scale=256.0)
        x = make((5, 4), torch.float32).to(device)
        for step in range(3):
            opt.zero_grad()
            loss = model(x).square().sum()
            scaler.scale(loss).backward()
            if inject_inf and step == 1:
                model.weight.grad[0, 0] = float("inf")
            scaler.step(opt)
            scaler.update()
        return [p.detach().cpu() for p in model.parameters()], scaler.get_scale()

    for inject in (False, True):
        expected, scale_cpu = train("cpu", inject)
        actual, scale_vk = train(VK, inject)
        assert scale_vk == scale_cpu
        for a, e in zip(actual, expected):
            assert_close(a, e, **TOLERANCE[torch.float32])


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm(foreach, norm_type):
    params = make_params(shapes=[(5, 3), (7,), (2, 2, 2)])
    grads = make_grads(params, 0)
    results = {}
    for device in ("cpu", VK):
        ps = [p.to(device).requires_grad_(True) for p in params]
        for p, g in zip(ps, grads):
            p.grad = g.to(device, copy=True)  # the CPU run must not clip the shared grads
        total = torch.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=norm_type, foreach=foreach)
        results[str(device)] = (total.cpu(), [p.grad.cpu() for p in ps])
    assert_close(results["vk"][0], results["cpu"][0], **TOLERANCE[torch.float32])
    for a, e in zip(results["vk"][1], results["cpu"][1]):
        assert_close(a, e, **TOLERANCE[torch.float32])


@pytest.mark.parametrize("foreach", [False, True])
def test_clip_grad_norm_nonfinite(foreach):
    p = torch.zeros(3, device=VK, requires_grad=True)
    p.grad = torch.tensor([1.0, float("nan"), 2.0], device=VK)
    with pytest.raises(RuntimeError) as info:
        torch.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True, foreach=foreach)
    if isinstance(info.value, NotImplementedError):  # a fallback, not the check
        raise info.value
    assert "non-finite" in str(info.value)


@pytest.mark.parametrize("foreach", [False, True])
def test_clip_grad_value(foreach):
    params = make_params(shapes=[(5, 3), (7,)])
    grads = make_grads(params, 0)
    out = {}
    for device in ("cpu", VK):
        ps = [p.to(device).requires_grad_(True) for p in params]
        for p, g in zip(ps, grads):
            p.grad = g.to(device, copy=True)
        torch.nn.utils.clip_grad_value_(ps, 0.3, foreach=foreach)
        out[str(device)] = [p.grad.cpu() for p in ps]
    for a, e in zip(out["vk"], out["cpu"]):
        assert_close(a, e)


def test_fused_step_is_one_dispatch_per_call():
    # The multi-tensor kernel: one launch for all parameters (not one per tensor).
    params = [make(s, torch.float32, seed=i).to(VK) for i, s in enumerate([(3,), (4, 4), (100,), (7, 2)])]
    grads = [make(p.shape, torch.float32, seed=9).to(VK) for p in params]
    torch.vk.synchronize()
    before = torch_vk.stats()["dispatches"]
    torch._fused_sgd_(params, grads, [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                      nesterov=False, maximize=False, is_first_step=False)
    assert torch_vk.stats()["dispatches"] - before == 1


# Every torch.optim optimizer on its default (foreach) path: 3 steps against the CPU, and the
# dispatches per step a small bound that does not grow with the parameter count (the multi-
# tensor _foreach_* kernels). ASGD (non-capturable) and Rprop loop over the parameters in
# PyTorch's own Python code (per-parameter scalar math and .item(); masked assignments), so only
# their results are checked; ASGD(capturable=True) is all foreach.
O = torch.optim
FOREACH_OPTIMIZERS = [
    (O.SGD, dict(lr=0.1), 1),
    (O.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01), 5),
    (O.Adam, dict(lr=1e-2, weight_decay=0.01), 8),
    (O.Adam, dict(lr=1e-2, amsgrad=True), 8),
    (O.AdamW, dict(lr=1e-2), 8),
    (O.Adamax, dict(lr=1e-2, weight_decay=0.01), 7),
    (O.NAdam, dict(lr=1e-2, weight_decay=0.01), 9),
    (O.NAdam, dict(lr=1e-2, decoupled_weight_decay=True, weight_decay=0.01), 9),
    (O.RAdam, dict(lr=1e-2, weight_decay=0.01), 10),
    (O.Adagrad, dict(lr=1e-2, weight_decay=0.01, lr_decay=0.01), 6),
    (O.Adadelta, dict(weight_decay=0.01), 12),
    (O.RMSprop, dict(lr=1e-2), 6),
    (O.RMSprop, dict(lr=1e-2, centered=True, momentum=0.9, weight_decay=0.01), 10),
    (O.ASGD, dict(lr=1e-2, weight_decay=0.01, capturable=True), 17),  # 17 foreach calls
    (O.ASGD, dict(lr=1e-2, weight_decay=0.01), None),
    (O.Rprop, dict(lr=1e-2), None),
]


def step_dispatches(cls, kwargs, shapes):
    params = [make(s, torch.float32, low=-1, high=1, seed=i).to(VK).requires_grad_(True)
              for i, s in enumerate(shapes)]
    opt = cls(params, **kwargs)
    counts = []
    for step in range(3):
        for i, p in enumerate(params):
            p.grad = make(p.shape, torch.float32, low=-1, high=1, seed=50 + i).to(VK)
        torch.vk.synchronize()
        before = torch_vk.stats()["dispatches"]
        opt.step()
        torch.vk.synchronize()
        counts.append(torch_vk.stats()["dispatches"] - before)
    return counts[1:]  # the first step also creates the state


@pytest.mark.parametrize("cls,kwargs,bound", FOREACH_OPTIMIZERS,
                         ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(FOREACH_OPTIMIZERS)])
def test_every_optimizer_foreach(cls, kwargs, bound):
    params = make_params()
    # capturable=True is for accelerators only: the CPU reference runs without it
    cpu_kwargs = {k: v for k, v in kwargs.items() if k != "capturable"}
    expected, _ = run_optimizer(cls, "cpu", params, cpu_kwargs)
    actual, _ = run_optimizer(cls, VK, params, kwargs)
    for a, e in zip(actual, expected):
        assert_close(a, e, **TOLERANCE[torch.float32])
    if bound is None:
        return
    few = step_dispatches(cls, kwargs, SHAPES)
    many = step_dispatches(cls, kwargs, SHAPES * 6)
    assert few == many, (few, many)  # independent of the parameter count
    assert max(few) <= bound, few


ADAGRAD_CONFIGS = [
    dict(lr=0.05),
    dict(lr=0.05, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.2),
    dict(lr=0.02, maximize=True, eps=1e-6),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64],
                         ids=str)
@pytest.mark.parametrize("config", range(len(ADAGRAD_CONFIGS)))
def test_fused_adagrad(config, dtype):
    # against the CPU's fused kernel (torch._fused_adagrad_ on CPU, the same math)
    kwargs = dict(ADAGRAD_CONFIGS[config], fused=True)
    params = make_params(dtype)
    expected, _ = run_optimizer(torch.optim.Adagrad, "cpu", params, kwargs)
    actual, _ = run_optimizer(torch.optim.Adagrad, VK, params, kwargs)
    for a, e in zip(actual, expected):
        assert_close(a, e, **TOLERANCE.get(dtype, dict(atol=1e-10, rtol=1e-10)))  # float64
    assert step_dispatches(torch.optim.Adagrad, kwargs, SHAPES * 4) == [2, 2]  # steps += 1, update


def test_fused_adagrad_grad_scale_found_inf_and_tensor_lr():
    params = make_params()
    grads = make_grads(params, 0)
    out = {}
    for device in ("cpu", VK):
        ps = [p.to(device, copy=True) for p in params]  # the CPU run must not update params
        gs = [(g * 4).to(device) for g in grads]
        sums = [torch.full_like(p, 0.1) for p in ps]
        steps = [torch.tensor(3.0, device=device) for _ in ps]
        lr = torch.tensor(0.05, device=device)
        torch._fused_adagrad_(ps, gs, sums, steps, lr=lr, lr_decay=0.05, weight_decay=0.01,
                              eps=1e-10, maximize=False,
                              grad_scale=torch.tensor(4.0, device=device),
                              found_inf=torch.tensor(0.0, device=device))
        # found_inf == 1 skips the step entirely
        torch._fused_adagrad_(ps, gs, sums, steps, lr=0.05, lr_decay=0.05, weight_decay=0.01,
                              eps=1e-10, maximize=False,
                              found_inf=torch.tensor(1.0, device=device))
        out[str(device)] = [t.cpu() for t in ps + gs + sums]
    for a, e in zip(out["vk"], out["cpu"]):
        assert_close(a, e, **TOLERANCE[torch.float32])
