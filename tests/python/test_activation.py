"""Native activations and their backward ops against PyTorch's CPU: float dtypes (integer
inputs raise like on the CPU), layouts, broadcasting, 0-dim and empty tensors, special
values, in-place / out= overloads, and the autograd path (torch.autograd.grad on vk vs CPU)
with the CPU fallback disabled."""
import pytest
import torch
from torch.testing import assert_close

from helpers import TOLERANCE, VK, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

F = torch.nn.functional
A = torch.ops.aten

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
SHAPES = [(5, 7), (), (0, 3)]

# name -> function of one tensor (forward activations and compositions that reach native ops)
ACTIVATIONS = {
    "relu": F.relu,
    "relu6": F.relu6,
    "hardtanh": lambda x: F.hardtanh(x, -1.5, 2.0),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": F.elu,
    "elu_alpha": lambda x: F.elu(x, alpha=0.5),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, alpha=1.5),
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=5.0),
    "softshrink": lambda x: F.softshrink(x, 0.75),
    "hardshrink": lambda x: F.hardshrink(x, 0.75),
    "logsigmoid": F.logsigmoid,
    "threshold": lambda x: F.threshold(x, 0.25, -3.0),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
}


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32], ids=str)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_forward(name, dtype):
    fn = ACTIVATIONS[name]
    for shape in SHAPES:
        x = make(shape, dtype)
        for _, layout in (layouts(x) if shape == (5, 7) else [("contiguous", lambda a: a)]):
            check(lambda a: fn(layout(a)), x)


SPECIAL = [0.0, -0.0, 1e-30, -1e-7, 0.5, -0.5, 1.0, -1.0, 2.9, -2.9, 3.0, -3.0, 5.0, -5.0, 20.0,
           -20.0, 80.0, -80.0, 1e30, -1e30, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_special_values(name, dtype):
    x = torch.tensor(SPECIAL, dtype=dtype)
    if name == "gelu" and dtype == torch.float32:
        # the CPU's oneDNN float32 gelu gives NaN for +inf (its scalar and float64 paths, and
        # vk, give inf)
        x = x[x != float("inf")]
    check(ACTIVATIONS[name], x)


INPLACE = {
    "relu": lambda x: F.relu(x, inplace=True),
    "relu6": lambda x: F.relu6(x, inplace=True),
    "hardtanh": lambda x: F.hardtanh(x, -1.0, 1.0, inplace=True),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1, inplace=True),
    "elu": lambda x: F.elu(x, inplace=True),
    "selu": lambda x: F.selu(x, inplace=True),
    "celu": lambda x: F.celu(x, inplace=True),
    "gelu": lambda x: A.gelu_(x),
    "gelu_tanh": lambda x: A.gelu_(x, approximate="tanh"),
    "silu": lambda x: F.silu(x, inplace=True),
    "mish": lambda x: F.mish(x, inplace=True),
    "hardswish": lambda x: F.hardswish(x, inplace=True),
    "hardsigmoid": lambda x: F.hardsigmoid(x, inplace=True),
    "threshold": lambda x: F.threshold(x, 0.0, 1.0, inplace=True),
}
OUT = {
    "gelu": lambda x, o: A.gelu.out(x, out=o),
    "silu": lambda x, o: A.silu.out(x, out=o),
    "mish": lambda x, o: A.mish.out(x, out=o),
    "elu": lambda x, o: A.elu.out(x, out=o),
    "leaky_relu": lambda x, o: A.leaky_relu.out(x, 0.3, out=o),
    "hardtanh": lambda x, o: A.hardtanh.out(x, -1.0, 1.0, out=o),
    "hardswish": lambda x, o: A.hardswish.out(x, out=o),
    "hardsigmoid": lambda x, o: A.hardsigmoid.out(x, out=o),
    "softplus": lambda x, o: A.softplus.out(x, out=o),
    "softshrink": lambda x, o: A.softshrink.out(x, out=o),
    "hardshrink": lambda x, o: A.hardshrink.out(x, out=o),
    "logsigmoid": lambda x, o: A.log_sigmoid.out(x, out=o),
    "threshold": lambda x, o: A.threshold.out(x, 0.5, 2.0, out=o),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_activation_inplace(name):
    x = make((4, 6), torch.float32)
    check(INPLACE[name], x)
    check(lambda a: INPLACE[name](a.t()), x)  # non-contiguous in place


@pytest.mark.parametrize("name", sorted(OUT))
def test_activation_out(name):
    x = make((4, 6), torch.float32)
    check(lambda a: OUT[name](a, torch.empty_like(a)), x)
    check(lambda a: OUT[name](a, torch.empty(0, device=a.device)), x)        # resized
    check(lambda a: OUT[name](a, torch.empty_like(a.t()).t()), x)             # strided out


def test_activation_argument_errors():
    x = make((3, 4), torch.float32)
    check(lambda a: F.gelu(a, approximate="fast"), x)                     # bad approximate
    check(lambda a: F.softshrink(a, -0.5), x)                            # negative lambda
    check(lambda a: F.hardtanh(a, -1, 1), make((3,), torch.bool))         # bool
    check(lambda a: F.hardtanh(a, -1, 1), make((3,), torch.uint8))        # negative uint8 limits
    check(lambda a: F.hardtanh(a, 1, 5), make((6,), torch.uint8))
    check(lambda a: F.relu6(a), make((6,), torch.int64))
    check(lambda a: F.threshold(a, 1, 7), make((6,), torch.int32))
    check(lambda a: F.threshold(a, 1, 7), make((6,), torch.bool))          # error on both
    check(lambda a: F.celu(a, alpha=0.0), x)                              # error on both
    check(lambda a: A.elu.out(a, out=torch.empty(3, 4, dtype=torch.float64, device=a.device)), x)


def test_scalars_rounded_to_dtype_like_cpu():
    # float16 thresholds / bounds / lambdas are compared in float16 on the CPU.
    x = torch.tensor([0.0999755859375, 0.10003662109375, -0.0999755859375, 0.2998046875,
                      0.300048828125], dtype=torch.float16)
    check(lambda a: F.threshold(a, 0.1, 9.0), x)
    check(lambda a: F.hardshrink(a, 0.1), x)
    check(lambda a: F.softshrink(a, 0.3), x)
    check(lambda a: torch.clamp(a, 0.1, 0.3), x)
    check(lambda a: A.hardtanh_backward(torch.ones_like(a), a, 0.1, 0.3), x)


# ---------------------------------------------------------------- backward ops

G = lambda shape, dtype=torch.float32: make(shape, dtype, seed=11)  # noqa: E731

BACKWARD = {
    "threshold_backward": lambda g, x: A.threshold_backward(g, x, 0.25),
    "hardtanh_backward": lambda g, x: A.hardtanh_backward(g, x, -1.5, 2.0),
    "leaky_relu_backward": lambda g, x: A.leaky_relu_backward(g, x, 0.2, False),
    "leaky_relu_backward_result": lambda g, x: A.leaky_relu_backward(g, x, 0.2, True),
    "elu_backward": lambda g, x: A.elu_backward(g, 1.0, 1.0, 1.0, False, x),
    "elu_backward_selu": lambda g, x: A.elu_backward(g, 1.6732632423543772, 1.0507009873554805,
                                                     1.0, False, x),
    "elu_backward_celu": lambda g, x: A.elu_backward(g, 1.5, 1.0, 1 / 1.5, False, x),
    "elu_backward_result": lambda g, x: A.elu_backward(g, 1.0, 1.0, 1.0, True, x),
    "gelu_backward": lambda g, x: A.gelu_backward(g, x),
    "gelu_backward_tanh": lambda g, x: A.gelu_backward(g, x, approximate="tanh"),
    "silu_backward": lambda g, x: A.silu_backward(g, x),
    "mish_backward": lambda g, x: A.mish_backward(g, x),
    "hardswish_backward": lambda g, x: A.hardswish_backward(g, x),
    "hardsigmoid_backward": lambda g, x: A.hardsigmoid_backward(g, x),
    "softplus_backward": lambda g, x: A.softplus_backward(g, x, 1.0, 20.0),
    "softplus_backward_beta": lambda g, x: A.softplus_backward(g, x, 2.0, 5.0),
    "softshrink_backward": lambda g, x: A.softshrink_backward(g, x, 0.75),
    "hardshrink_backward": lambda g, x: A.hardshrink_backward(g, x, 0.75),
    # the CPU kernel reads the forward's buffer; vk's forward returns (and its backward
    # ignores) an empty one, like CUDA
    "log_sigmoid_backward": lambda g, x: A.log_sigmoid_backward(g, x, A.log_sigmoid_forward(x)[1]),
    "sigmoid_backward": lambda g, x: A.sigmoid_backward(g, torch.sigmoid(x)),
    "tanh_backward": lambda g, x: A.tanh_backward(g, torch.tanh(x)),
}


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32], ids=str)
@pytest.mark.parametrize("name", sorted(BACKWARD))
def test_backward_ops(name, dtype):
    fn = BACKWARD[name]
    for shape in SHAPES:
        x, g = make(shape, dtype), G(shape, dtype)
        for _, layout in (layouts(x) if shape == (5, 7) else [("contiguous", lambda a: a)]):
            check(lambda gg, xx: fn(gg, layout(xx)), g, x)


@pytest.mark.parametrize("name", sorted(BACKWARD))
def test_backward_ops_special_values_and_broadcast(name):
    fn = BACKWARD[name]
    x = torch.tensor([v for v in SPECIAL if v == v and abs(v) != float("inf")])
    check(fn, torch.full_like(x, 1.5), x)
    # broadcasting (gelu_backward: float64, the CPU's oneDNN float32 kernel rejects it)
    bdtype = torch.float64 if name.startswith("gelu") else torch.float32
    check(fn, G((4, 1), bdtype), make((1, 6), bdtype))
    if name not in ("log_sigmoid_backward", "sigmoid_backward", "tanh_backward"):
        check(fn, G((5,), torch.float16), make((5,), torch.float32))  # promotion


def test_backward_out_variants():
    g, x = G((4, 5)), make((4, 5), torch.float32)
    check(lambda gg, xx: A.gelu_backward.grad_input(gg, xx, grad_input=torch.empty_like(xx)), g, x)
    check(lambda gg, xx: A.silu_backward.grad_input(gg, xx, grad_input=torch.empty(0, device=xx.device)), g, x)
    check(lambda gg, xx: A.threshold_backward.grad_input(gg, xx, 0.0, grad_input=torch.empty_like(xx)), g, x)
    check(lambda gg, xx: A.elu_backward.grad_input(gg, 1.0, 1.0, 1.0, False, xx,
                                                   grad_input=torch.empty_like(xx)), g, x)
    check(lambda gg, xx: A.softplus_backward.grad_input(gg, xx, 1.0, 20.0,
                                                        grad_input=torch.empty_like(xx)), g, x)
    check(lambda gg, xx: A.log_sigmoid_backward.grad_input(gg, xx, A.log_sigmoid_forward(xx)[1],
                                                           grad_input=torch.empty_like(xx)), g, x)
    check(lambda gg, xx: A.hardtanh_backward.grad_input(gg, xx, -1.0, 1.0, grad_input=torch.empty_like(xx)), g, x)
    check(lambda gg, xx: A.leaky_relu_backward(gg, xx, -0.2, True), g, x)  # error on both
    check(lambda gg, xx: A.elu_backward(gg, -1.0, 1.0, 1.0, True, xx), g, x)  # error on both


def test_log_sigmoid_forward_buffer():
    x = make((3, 4), torch.float32)
    out, _ = A.log_sigmoid_forward(x.to(VK))
    assert_close(out.cpu(), A.log_sigmoid_forward(x)[0])
    o, b = torch.empty(0, device=VK), torch.empty(0, device=VK)
    A.log_sigmoid_forward.output(x.to(VK), output=o, buffer=b)
    assert_close(o.cpu(), F.logsigmoid(x))


# ---------------------------------------------------------------- autograd

AUTOGRAD = dict(ACTIVATIONS)
AUTOGRAD.update({
    "relu_inplace_after_mul": lambda x: F.relu(x * 1.0, inplace=True),
    "leaky_relu_inplace": lambda x: F.leaky_relu(x * 1.0, 0.1, inplace=True),
    "elu_inplace": lambda x: F.elu(x * 1.0, inplace=True),
    "hardtanh_inplace": lambda x: F.hardtanh(x * 1.0, -1.0, 1.0, inplace=True),
    "pow": lambda x: x.abs() ** 2.5,
    "lerp": lambda x: torch.lerp(x, x * 2, 0.3),
    "clamp": lambda x: x.clamp(-1, 1),
    "erfinv": lambda x: torch.erfinv(x / 4),
    "lgamma_digamma": lambda x: torch.lgamma(x.abs() + 0.5),
    "trig": lambda x: torch.tan(x / 3) + torch.asinh(x) + torch.atan(x) + torch.sinh(x / 2),
})


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(AUTOGRAD))
def test_autograd(name, dtype):
    fn = AUTOGRAD[name]
    x = make((4, 6), dtype)
    if name in ("hardswish", "hardsigmoid", "relu6", "hardtanh", "threshold", "softshrink",
                "hardshrink", "clamp"):
        x = x + 0.013  # away from the kinks, where CPU and vk may pick different sides
    g = G((4, 6), dtype)
    xc = x.clone().requires_grad_()
    (want,) = torch.autograd.grad(fn(xc), xc, g)
    xv = x.to(VK).requires_grad_()
    (got,) = torch.autograd.grad(fn(xv), xv, g.to(VK))
    assert got.device.type == "vk"
    assert_close(got.cpu(), want, equal_nan=True, **TOLERANCE.get(dtype, {}))


def test_autograd_second_order_and_mixed_precision():
    x = make((3, 5), torch.float32)
    for fn in (F.gelu, F.silu, torch.tanh, torch.sigmoid):
        xc = x.clone().requires_grad_()
        (gc,) = torch.autograd.grad(fn(xc).sum(), xc, create_graph=True)
        (ggc,) = torch.autograd.grad(gc.sum(), xc)
        xv = x.to(VK).requires_grad_()
        (gv,) = torch.autograd.grad(fn(xv).sum(), xv, create_graph=True)
        (ggv,) = torch.autograd.grad(gv.sum(), xv)
        assert_close(gv.cpu(), gc, **TOLERANCE[torch.float32])
        assert_close(ggv.cpu(), ggc, **TOLERANCE[torch.float32])
    xh = make((3, 5), torch.float16)
    xc = xh.clone().requires_grad_()
    (want,) = torch.autograd.grad(F.gelu(xc), xc, torch.ones_like(xc))
    xv = xh.to(VK).requires_grad_()
    (got,) = torch.autograd.grad(F.gelu(xv), xv, torch.ones_like(xv))
    assert_close(got.cpu(), want, **TOLERANCE[torch.float16])
