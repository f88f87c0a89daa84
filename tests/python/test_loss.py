"""Loss functions against PyTorch's CPU: forward and autograd backward for every reduction,
float32 / float16 / bfloat16 / float64, non-contiguous and broadcast operands, empty inputs,
and the CPU's errors for bad input. nll_loss / nll_loss2d, cross_entropy (class indices,
probabilities, label smoothing), mse, l1, smooth_l1, huber, binary_cross_entropy (+ with logits),
kl_div, multi_margin_loss and multilabel_margin_loss."""
import pytest
import torch
import torch.nn.functional as F

import torch_vk  # noqa: F401
from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
REDUCTIONS = ["none", "mean", "sum"]
# Gradients of fp16 / bf16 losses go through several roundings on both sides.
GRAD_TOL = {torch.float32: dict(atol=1e-5, rtol=1e-4), torch.float64: dict(atol=1e-10, rtol=1e-9),
            torch.float16: dict(atol=2e-3, rtol=5e-3), torch.bfloat16: dict(atol=2e-2, rtol=3e-2)}


def tol(dtype):
    return TOLERANCE.get(dtype, {}) or dict(atol=1e-10, rtol=1e-9)


def check_grad(fn, inputs, requires, dtype, **kwargs):
    """Autograd gradients of sum(fn(*inputs) * g) on CPU and vk for the inputs flagged in
    `requires`."""
    def run(device):
        ts = [t.detach().to(device).requires_grad_(r) if isinstance(t, torch.Tensor) else t
              for t, r in zip(inputs, requires)]
        out = fn(*ts, **kwargs)
        g = make(out.shape, out.dtype, seed=11).to(device)
        grads = torch.autograd.grad(out, [t for t, r in zip(ts, requires) if r], g)
        return [x.cpu() for x in grads]
    for a, e in zip(run(VK), run("cpu")):
        torch.testing.assert_close(a, e, equal_nan=True, **GRAD_TOL[dtype])


# ---------------------------------------------------------------- regression losses

REGRESSION = {
    "mse": lambda a, b, reduction: F.mse_loss(a, b, reduction=reduction),
    "l1": lambda a, b, reduction: F.l1_loss(a, b, reduction=reduction),
    "smooth_l1": lambda a, b, reduction: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.7),
    "smooth_l1_beta0": lambda a, b, reduction: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.0),
    "huber": lambda a, b, reduction: F.huber_loss(a, b, reduction=reduction, delta=0.6),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_regression_forward_backward(name, dtype):
    fn = REGRESSION[name]
    x = make((5, 7), dtype, low=-2, high=2)
    y = make((5, 7), dtype, low=-2, high=2, seed=3)
    for reduction in REDUCTIONS:
        for _, layout in layouts(x):
            check(lambda a, b: fn(layout(a), layout(b), reduction), x, y, **tol(dtype))
        check_grad(lambda a, b: fn(a, b, reduction), [x, y], [True, True], dtype)
    # non-contiguous operands in the backward too
    check_grad(lambda a, b: fn(a.t(), b.t(), "mean"), [x, y], [True, True], dtype)


def test_regression_broadcast_promotion_empty_errors():
    x = make((4, 3), torch.float32)
    with pytest.warns(UserWarning):
        check(lambda a, b: F.mse_loss(a, b), x, make((3,), torch.float32, seed=2))
    check(lambda a, b: F.mse_loss(a, b), x, make((4, 3), torch.int64))            # int target promotes
    check(lambda a, b: F.smooth_l1_loss(a, b), x, make((4, 3), torch.float64))   # float64 target
    for name, fn in REGRESSION.items():
        for reduction in REDUCTIONS:
            check(lambda a, b: fn(a, b, reduction), torch.empty(0, 3), torch.empty(0, 3))  # mean: nan
        check(lambda a, b: fn(a, b, "mean"), make((), torch.float32), make((), torch.float32, seed=4))
    with pytest.warns(UserWarning):
        check(lambda a, b: F.mse_loss(a, b), x, make((4, 2), torch.float32))  # shape mismatch
    check(lambda a, b: F.mse_loss(a, b), make((4,), torch.int64), make((4,), torch.int64))
    check(lambda a, b: F.smooth_l1_loss(a, b, beta=-1.0), x, x)
    check(lambda a, b: F.huber_loss(a, b, delta=0.0), x, x)
    check(lambda a, b: F.huber_loss(a, b, delta=1.0), make((4,), torch.int64), make((4,), torch.int64))


def test_regression_out_and_backward_ops():
    x, y = make((6, 5), torch.float32), make((6, 5), torch.float32, seed=1)
    g = make((6, 5), torch.float32, seed=2)
    check(lambda a, b: torch.ops.aten.mse_loss.out(a, b, 1, out=torch.empty(3, device=a.device)), x, y)
    for op, extra in ((torch.ops.aten.mse_loss_backward, ()), (torch.ops.aten.smooth_l1_loss_backward, (0.5,)),
                      (torch.ops.aten.huber_loss_backward, (0.5,))):
        for reduction in (0, 1, 2):
            gg = g if reduction == 0 else g.sum()
            check(lambda a, b, c: op(c, a, b, reduction, *extra), x, y, gg)


# ---------------------------------------------------------------- binary cross entropy

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_binary_cross_entropy(dtype):
    x = make((6, 4), dtype, low=0.02, high=0.98)
    y = make((6, 4), dtype, low=0.0, high=1.0, seed=2)
    w = make((4,), dtype, low=0.1, high=2.0, seed=3)
    for reduction in REDUCTIONS:
        for _, layout in layouts(x):
            check(lambda a, b: F.binary_cross_entropy(layout(a), layout(b), reduction=reduction), x, y, **tol(dtype))
        check(lambda a, b, c: F.binary_cross_entropy(a, b, weight=c, reduction=reduction), x, y, w, **tol(dtype))
        # (the target's gradient needs logit, an element-wise op that is not native yet)
        check_grad(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), [x, y], [True, False], dtype)
        check_grad(lambda a, b, c: F.binary_cross_entropy(a, b, weight=c, reduction=reduction), [x, y, w],
                   [True, False, False], dtype)
    # saturated logs (x = 0 / 1: the -100 clamp) and empty input
    edge = torch.tensor([0.0, 1.0, 0.5, 1.0], dtype=dtype)
    check(lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), edge, torch.tensor([1.0, 0.0, 0.5, 1.0], dtype=dtype))
    check(lambda a, b: F.binary_cross_entropy(a, b), torch.empty(0, dtype=dtype), torch.empty(0, dtype=dtype))


def test_binary_cross_entropy_errors():
    x = make((3,), torch.float32, low=0.1, high=0.9)
    check(lambda a, b: F.binary_cross_entropy(a, b), x, torch.tensor([0, 1, 1]))       # target dtype
    check(lambda a, b: F.binary_cross_entropy(a, b), x, torch.rand(4))                 # size
    check(lambda a, b: torch.ops.aten.binary_cross_entropy(a, b), x, torch.rand(2))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_binary_cross_entropy_with_logits(dtype):
    x = make((5, 4), dtype, low=-30, high=30)
    y = make((5, 4), dtype, low=0.0, high=1.0, seed=2)
    w = make((4,), dtype, low=0.1, high=2.0, seed=3)
    pw = make((4,), dtype, low=0.5, high=3.0, seed=4)
    fn = F.binary_cross_entropy_with_logits
    for reduction in REDUCTIONS:
        if dtype in (torch.float16, torch.bfloat16):
            # The CPU composite rounds every intermediate (log_sigmoid, products, the
            # difference) to the 16-bit dtype; vk computes in fp32 and rounds once. Reference:
            # the CPU's float32 result rounded to the dtype.
            for args, kw in (((x, y), {}), ((x, y), dict(weight=w, pos_weight=pw)), ((x, y), dict(pos_weight=pw))):
                got = fn(*(a.to(VK) for a in args), reduction=reduction, **{k: v.to(VK) for k, v in kw.items()})
                ref = fn(*(a.float() for a in args), reduction=reduction, **{k: v.float() for k, v in kw.items()})
                assert got.dtype == dtype
                torch.testing.assert_close(got.cpu(), ref.to(dtype), **tol(dtype))
        else:
            for _, layout in layouts(x):
                check(lambda a, b: fn(layout(a), layout(b), reduction=reduction), x, y, **tol(dtype))
            check(lambda a, b, c, d: fn(a, b, weight=c, pos_weight=d, reduction=reduction), x, y, w, pw, **tol(dtype))
            check(lambda a, b, d: fn(a, b, pos_weight=d, reduction=reduction), x, y, pw, **tol(dtype))
        check_grad(lambda a, b, c, d: fn(a, b, weight=c, pos_weight=d, reduction=reduction), [x, y, w, pw],
                   [True, True, False, False], dtype)
    check(lambda a, b: fn(a, b), torch.empty(0, dtype=dtype), torch.empty(0, dtype=dtype))
    check(lambda a, b: fn(a, b), x, make((5, 3), dtype))  # size mismatch (ValueError)


# ---------------------------------------------------------------- nll_loss / cross_entropy

def log_probs(shape, dtype, seed=0):
    return torch.log_softmax(make(shape, torch.float32, seed=seed), 1).to(dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_nll_loss(dtype):
    lp = log_probs((8, 5), dtype)
    t = torch.tensor([0, 4, 2, -100, 1, 3, 3, 0])
    w = make((5,), dtype, low=0.2, high=2.0, seed=5)
    for reduction in REDUCTIONS:
        for _, layout in layouts(lp):
            check(lambda a, b: F.nll_loss(layout(a), b, reduction=reduction), lp, t, **tol(dtype))
        check(lambda a, b, c: F.nll_loss(a, b, weight=c, reduction=reduction), lp, t, w, **tol(dtype))
        check(lambda a, b: F.nll_loss(a, b, reduction=reduction, ignore_index=3), lp, t.clamp(min=0), **tol(dtype))
        check_grad(lambda a, b: F.nll_loss(a, b, reduction=reduction), [lp, t], [True, False], dtype)
        check_grad(lambda a, b, c: F.nll_loss(a, b, weight=c, reduction=reduction), [lp, t, w],
                   [True, False, False], dtype)
        # 1-D input, 0-dim target; uint8 targets
        check(lambda a, b: F.nll_loss(a, b, reduction=reduction), lp[0], torch.tensor(2), **tol(dtype))
        check(lambda a, b: F.nll_loss(a, b, reduction=reduction), lp, t.clamp(min=0).to(torch.uint8), **tol(dtype))
    # every target ignored: mean is 0 / 0 = nan, as on the CPU
    check(lambda a, b: F.nll_loss(a, b), lp, torch.full((8,), -100))
    check(lambda a, b: F.nll_loss(a, b), torch.empty(0, 5, dtype=dtype), torch.empty(0, dtype=torch.long))
    check(lambda a, b: F.nll_loss(a, b, reduction="sum"), torch.empty(0, 5, dtype=dtype),
          torch.empty(0, dtype=torch.long))


def test_nll_loss_forward_ops_and_total_weight():
    lp = log_probs((6, 4), torch.float32)
    t = torch.tensor([0, 3, 1, 1, -100, 2])
    w = torch.tensor([0.5, 1.0, 2.0, 0.25])
    for reduction in (1, 2):
        check(lambda a, b, c: torch.ops.aten.nll_loss_forward(a, b, c, reduction, -100), lp, t, w)
        check(lambda a, b: torch.ops.aten.nll_loss_forward(a, b, None, reduction, -100), lp, t)
    tw = torch.tensor(3.75)
    for reduction in (0, 1, 2):
        go = make((6,), torch.float32, seed=3) if reduction == 0 else torch.tensor(1.5)
        check(lambda g, a, b, c, d: torch.ops.aten.nll_loss_backward(g, a, b, c, reduction, -100, d), go, lp, t, w, tw)


def test_nll_loss_errors():
    lp = log_probs((4, 3), torch.float32)
    check(lambda a, b: F.nll_loss(a, b), lp, torch.tensor([0, 1, 2, 1], dtype=torch.int32))  # target dtype
    check(lambda a, b: F.nll_loss(a, b), lp, torch.tensor([0, 1, 2]))                         # batch size
    check(lambda a, b, c: F.nll_loss(a, b, weight=c), lp, torch.tensor([0, 1, 2, 1]), torch.ones(4))
    check(lambda a, b: F.nll_loss(a, b), lp.long(), torch.tensor([0, 1, 2, 1]))
    check(lambda a, b: F.nll_loss(a, b), torch.zeros(2, 3, 4, 5, 6), torch.zeros(2, 4, 5, 6, dtype=torch.long))


def test_nll_loss_out_of_range_target_raises_at_sync():
    # The kernel skips the sample (no out-of-bounds read: validation layer) and records the
    # error; the next synchronization raises the CPU's IndexError. The stream keeps working.
    lp = log_probs((4, 3), torch.float32)
    t = torch.tensor([0, 7, 2, -5])
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.nll_loss(lp, t)
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.nll_loss(lp.to(VK), t.to(VK), reduction="none").cpu()
    good = torch.tensor([0, 1, 2, 1])
    torch.testing.assert_close(F.nll_loss(lp.to(VK), good.to(VK)).cpu(), F.nll_loss(lp, good))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_nll_loss2d(dtype):
    lp = log_probs((2, 4, 3, 5), dtype)
    t = torch.randint(0, 4, (2, 3, 5), generator=torch.Generator().manual_seed(2))
    t[0, 1, 2] = -100
    w = make((4,), dtype, low=0.2, high=2.0, seed=5)
    for reduction in REDUCTIONS:
        for _, layout in layouts(lp):
            check(lambda a, b: F.nll_loss(layout(a), b, reduction=reduction), lp, t, **tol(dtype))
        check(lambda a, b, c: F.nll_loss(a, b, weight=c, reduction=reduction), lp, t, w, **tol(dtype))
        check_grad(lambda a, b, c: F.nll_loss(a, b, weight=c, reduction=reduction), [lp, t, w],
                   [True, False, False], dtype)
        # 3-D input (N, C, d) goes through nll_loss2d too
        check(lambda a, b: F.nll_loss(a, b, reduction=reduction), lp[:, :, 0], t[:, 0], **tol(dtype))
    check(lambda a, b: F.nll_loss(a, b), torch.empty(0, 4, 3, 5, dtype=dtype), torch.empty(0, 3, 5, dtype=torch.long))
    check(lambda a, b: F.nll_loss(a, b), lp, t[:, :2])  # size mismatch


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_cross_entropy(dtype):
    x = make((6, 5), dtype, low=-4, high=4)
    t = torch.tensor([0, 4, 2, -100, 1, 3])
    w = make((5,), dtype, low=0.2, high=2.0, seed=5)
    soft = torch.softmax(make((6, 5), torch.float32, seed=7), 1).to(dtype)
    for reduction in REDUCTIONS:
        check(lambda a, b: F.cross_entropy(a, b, reduction=reduction), x, t, **tol(dtype))
        check(lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction=reduction), x, t, w, **tol(dtype))
        check_grad(lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction=reduction), [x, t, w],
                   [True, False, False], dtype)
        # probability targets, with and without label smoothing and weights
        check(lambda a, b: F.cross_entropy(a, b, reduction=reduction), x, soft, **tol(dtype))
        check(lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction=reduction, label_smoothing=0.2), x, soft, w,
              **tol(dtype))
        check_grad(lambda a, b: F.cross_entropy(a, b, reduction=reduction, label_smoothing=0.1), [x, soft],
                   [True, True], dtype)
    # spatial (N, C, H, W)
    x4 = make((2, 3, 4, 2), dtype, low=-3, high=3)
    t4 = torch.randint(0, 3, (2, 4, 2), generator=torch.Generator().manual_seed(3))
    check(lambda a, b: F.cross_entropy(a, b), x4, t4, **tol(dtype))
    check_grad(lambda a, b: F.cross_entropy(a, b), [x4, t4], [True, False], dtype)


def test_cross_entropy_label_smoothing_class_targets():
    x = make((6, 5), torch.float32, low=-4, high=4)
    t = torch.tensor([0, 4, 2, -100, 1, 3])
    w = make((5,), torch.float32, low=0.2, high=2.0, seed=5)
    for reduction in REDUCTIONS:
        check(lambda a, b: F.cross_entropy(a, b, reduction=reduction, label_smoothing=0.1), x, t)
        check(lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction=reduction, label_smoothing=0.3), x, t, w)
        check_grad(lambda a, b: F.cross_entropy(a, b, reduction=reduction, label_smoothing=0.1), [x, t],
                   [True, False], torch.float32)


def test_cross_entropy_errors():
    x = make((4, 3), torch.float32)
    check(lambda a, b: F.cross_entropy(a, b), x, torch.tensor([0, 1, 2]))
    check(lambda a, b: F.cross_entropy(a, b), x, torch.rand(4, 2))                # soft target shape
    check(lambda a, b: F.cross_entropy(a, b, label_smoothing=1.5), x, torch.rand(4, 3))


# ---------------------------------------------------------------- kl_div

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_kl_div(dtype):
    inp = log_probs((4, 6), dtype)
    tgt = torch.softmax(make((4, 6), torch.float32, seed=3), 1).to(dtype)
    for reduction in ("none", "mean", "sum", "batchmean"):
        check(lambda a, b: F.kl_div(a, b.log(), reduction=reduction, log_target=True), inp, tgt, **tol(dtype))
        check_grad(lambda a, b: F.kl_div(a, b.log(), reduction=reduction, log_target=True), [inp, tgt],
                   [True, False], dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nan_inputs_give_nan_losses_like_cpu(dtype):
    """NaN logits propagate through the loss kernels' clamps (which must not rely on max / min
    returning the NaN operand). binary_cross_entropy itself refuses NaN probabilities on the
    CPU ("all elements of input should be between 0 and 1")."""
    nan = float("nan")
    logits = torch.tensor([1.5, nan, -2.0, nan], dtype=dtype)
    y = torch.tensor([1.0, 0.0, 0.5, 1.0], dtype=dtype)
    fn = F.binary_cross_entropy_with_logits
    got = fn(logits.to(VK), y.to(VK), reduction="none").cpu()
    torch.testing.assert_close(got, fn(logits, y, reduction="none"), equal_nan=True, **tol(dtype))
    check_grad(lambda a, b: fn(a, b, reduction="none"), [logits, y], [True, False], dtype)
    got = F.logsigmoid(logits.to(VK)).cpu()
    torch.testing.assert_close(got, F.logsigmoid(logits), equal_nan=True, **tol(dtype))


@pytest.mark.parametrize("bad", [[1.5, 0.5], [-0.25, 0.5], [float("nan"), 0.5]])
def test_binary_cross_entropy_refuses_probabilities_outside_0_1_like_cpu(bad):
    """Checked on the device, raised at the next synchronization point; the stream keeps
    working afterwards."""
    good, y = torch.tensor([0.25, 0.5]), torch.tensor([1.0, 0.0])
    for x, target, what in ((torch.tensor(bad), y, "input"), (good, torch.tensor(bad), "target")):
        message = f"all elements of {what} should be between 0 and 1"
        with pytest.raises(RuntimeError, match=message):
            F.binary_cross_entropy(x, target)
        with pytest.raises(RuntimeError, match=message):
            F.binary_cross_entropy(x.to(VK), target.to(VK)).cpu()
    expected = F.binary_cross_entropy(good, y)
    torch.testing.assert_close(F.binary_cross_entropy(good.to(VK), y.to(VK)).cpu(), expected)


# ---------------------------------------------------------------- margin losses
# The CPU implements them for float32 / float64 only (float16 / bfloat16 raise
# NotImplementedError there, and must here too).

MARGIN_DTYPES = [torch.float32, torch.float64]


def margin_targets(n, c, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, c, (n,), generator=g)


@pytest.mark.parametrize("dtype", MARGIN_DTYPES, ids=str)
def test_multi_margin_loss(dtype):
    x = make((5, 6), dtype, low=-1.5, high=1.5)
    t = margin_targets(5, 6)
    w = make((6,), dtype, low=0.2, high=2.0, seed=5)
    for p in (1, 2):
        for margin in (1.0, 0.6):
            for weight in (None, w):
                for reduction in REDUCTIONS:
                    kw = dict(p=p, margin=margin, reduction=reduction)
                    if weight is None:
                        check(lambda a, b: F.multi_margin_loss(a, b, **kw), x, t, **tol(dtype))
                        check_grad(lambda a: F.multi_margin_loss(a, t.to(a.device), **kw), [x], [True], dtype)
                    else:
                        check(lambda a, b, c: F.multi_margin_loss(a, b, weight=c, **kw), x, t, weight, **tol(dtype))
                        check_grad(lambda a, c: F.multi_margin_loss(a, t.to(a.device), weight=c, **kw),
                                   [x, weight], [True, False], dtype)
    # non-contiguous input, target and weight
    for _, layout in layouts(x):
        check(lambda a, b, c: F.multi_margin_loss(layout(a), b[::2], p=2, weight=c[::2], reduction="none"),
              torch.cat([x, x], 1)[:, ::2], torch.stack([t, t], 1).reshape(-1), torch.stack([w, w], 1).reshape(-1),
              **tol(dtype))
    check_grad(lambda a: F.multi_margin_loss(a.t(), t.to(a.device), reduction="sum"), [x.t().contiguous()],
               [True], dtype)
    # 1-D input (one sample: scalar loss), 0-dim input and target, a 1-element target
    for reduction in REDUCTIONS:
        check(lambda a, b: F.multi_margin_loss(a, b, reduction=reduction), x[0], t[:1], **tol(dtype))
        check(lambda a, b: torch.ops.aten.multi_margin_loss(a, b, 1, 1.0, None, at_reduction(reduction)),
              x[0], t[0], **tol(dtype))
        check(lambda a, b: F.multi_margin_loss(a, b, reduction=reduction), x[0, 0], torch.tensor(0), **tol(dtype))
        check_grad(lambda a: F.multi_margin_loss(a, t[:1].to(a.device), p=2, reduction=reduction), [x[1]],
                   [True], dtype)
    # a wide row (several strides of the 256-wide workgroup), ties with the margin
    wide = make((3, 700), dtype, low=-1, high=1, seed=2)
    tw = margin_targets(3, 700, seed=3)
    check(lambda a, b: F.multi_margin_loss(a, b, reduction="none"), wide, tw, **tol(dtype))
    check_grad(lambda a: F.multi_margin_loss(a, tw.to(a.device), p=2), [wide], [True], dtype)
    check(lambda a, b: F.multi_margin_loss(a, b), torch.zeros(2, 3, dtype=dtype), torch.tensor([0, 2]))


def at_reduction(name):
    return {"none": 0, "mean": 1, "sum": 2}[name]


def test_multi_margin_loss_errors_and_empty():
    x = make((4, 3), torch.float32)
    t = torch.tensor([0, 1, 2, 1])
    for dtype in (torch.float16, torch.bfloat16):
        check(lambda a, b: F.multi_margin_loss(a, b), x.to(dtype), t)          # NotImplementedError
    check(lambda a, b: torch.ops.aten.multi_margin_loss(a, b, 3, 1.0, None, 1), x, t)  # p
    check(lambda a, b: F.multi_margin_loss(a, b), x, t[:3])                    # target size
    check(lambda a, b: F.multi_margin_loss(a, b), x, t.int())                  # target dtype
    check(lambda a, b, c: F.multi_margin_loss(a, b, weight=c), x, t, torch.ones(4))   # weight size
    check(lambda a, b, c: F.multi_margin_loss(a, b, weight=c), x, t, torch.ones(3, dtype=torch.float64))
    check(lambda a, b: F.multi_margin_loss(a, b), torch.zeros(4, 0), t)        # no classes
    check(lambda a, b: F.multi_margin_loss(a, b), torch.zeros(2, 2, 2), t[:2])  # 3-D
    check(lambda a, b: F.multi_margin_loss(a, b, reduction="none"), torch.zeros(0, 3), t[:0])


def test_multi_margin_loss_out_of_range_target_raises_at_sync():
    x = make((4, 3), torch.float32)
    bad = torch.tensor([0, 3, 1, 2])
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, bad)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x.to(VK), bad.to(VK)).cpu()
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x.to(VK), (-bad).to(VK), reduction="none").cpu()
    xv = x.to(VK).requires_grad_(True)
    loss = F.multi_margin_loss(xv, torch.tensor([0, 1, 1, 2]).to(VK))
    g = torch.ops.aten.multi_margin_loss_backward(torch.tensor(1.0).to(VK), xv.detach(), bad.to(VK), 1, 1.0, None, 1)
    with pytest.raises(RuntimeError, match="target out of range"):
        g.cpu()
    loss.backward()  # the stream keeps working
    check(lambda a, b: F.multi_margin_loss(a, b), x, torch.tensor([0, 1, 1, 2]))


def multilabel_targets():
    # rows: labels then -1 (the rest ignored, in range), duplicates, all labels, none, -1 first
    return torch.tensor([[3, 0, -1, 1, 4],
                         [2, 2, 4, -1, -1],
                         [0, 1, 2, 3, 4],
                         [-1, 3, 3, 3, 3],
                         [1, -1, 0, 0, 0]])


@pytest.mark.parametrize("dtype", MARGIN_DTYPES, ids=str)
def test_multilabel_margin_loss(dtype):
    x = make((5, 5), dtype, low=-1.5, high=1.5)
    t = multilabel_targets()
    for reduction in REDUCTIONS:
        check(lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction), x, t, **tol(dtype))
        check(lambda a, b: torch.ops.aten.multilabel_margin_loss_forward(a, b, at_reduction(reduction)), x, t,
              **tol(dtype))  # loss and is_target
        check_grad(lambda a: F.multilabel_margin_loss(a, t.to(a.device), reduction=reduction), [x], [True], dtype)
        # 1-D input: one sample, a scalar loss even with reduction none
        check(lambda a, b: torch.ops.aten.multilabel_margin_loss_forward(a, b, at_reduction(reduction)), x[1], t[1],
              **tol(dtype))
        check_grad(lambda a: F.multilabel_margin_loss(a, t[0].to(a.device), reduction=reduction), [x[2]], [True],
                   dtype)
    for _, layout in layouts(x):
        check(lambda a, b: F.multilabel_margin_loss(layout(a), layout(b), reduction="none"), x, t, **tol(dtype))
    check(lambda a, b: F.multilabel_margin_loss(a, b), x[0, 0], torch.tensor(0), **tol(dtype))  # 0-dim
    wide = make((2, 300), dtype, low=-1, high=1, seed=4)
    tw = torch.full((2, 300), -1)
    tw[0, :40] = torch.randperm(300, generator=torch.Generator().manual_seed(1))[:40]
    tw[1, :3] = torch.tensor([299, 0, 299])
    check(lambda a, b: F.multilabel_margin_loss(a, b, reduction="none"), wide, tw, **tol(dtype))
    check_grad(lambda a: F.multilabel_margin_loss(a, tw.to(a.device)), [wide], [True], dtype)


def test_multilabel_margin_loss_errors_and_empty():
    x = make((3, 4), torch.float32)
    t = torch.tensor([[0, -1, 0, 0], [1, 2, -1, 0], [3, 3, 3, 3]])
    for dtype in (torch.float16, torch.bfloat16):
        check(lambda a, b: F.multilabel_margin_loss(a, b), x.to(dtype), t)
    check(lambda a, b: F.multilabel_margin_loss(a, b), x, t[:2])              # size
    check(lambda a, b: F.multilabel_margin_loss(a, b), x, t.int())            # dtype
    check(lambda a, b: F.multilabel_margin_loss(a, b), x[0], t[0, :3])        # 1-D size
    check(lambda a, b: F.multilabel_margin_loss(a, b), torch.zeros(3, 0), t[:, :0])
    check(lambda a, b: F.multilabel_margin_loss(a, b, reduction="none"), torch.zeros(0, 4), t[:0])


def test_multilabel_margin_loss_out_of_range_target_raises_at_sync():
    x = make((3, 4), torch.float32)
    for bad_value, where in ((4, (1, 1)), (-2, (2, 0)), (7, (0, 3))):  # (0, 3): after the -1 terminator
        bad = torch.tensor([[0, 1, -1, 2], [1, 2, -1, 0], [3, 3, 3, 3]])
        bad[where] = bad_value
        with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
            F.multilabel_margin_loss(x, bad)
        with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
            F.multilabel_margin_loss(x.to(VK), bad.to(VK)).cpu()
    good = torch.tensor([[0, 1, -1, 2], [1, 2, -1, 0], [3, 3, 3, 3]])
    check(lambda a, b: F.multilabel_margin_loss(a, b), x, good)


# ---------------------------------------------------------------- ctc_loss
# log-space alpha / beta recursions on the device; float32 / float64 (the CPU's dtypes).

def ctc_inputs(dtype, T=7, N=3, C=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    lp = torch.randn(T, N, C, generator=g, dtype=torch.float64).log_softmax(2).to(dtype)
    return lp


@pytest.mark.parametrize("dtype", MARGIN_DTYPES, ids=str)
def test_ctc_loss(dtype):
    lp = ctc_inputs(dtype)
    padded = torch.tensor([[1, 2, 2, 3], [4, 0, 0, 0], [3, 1, 4, 0]])  # repeats need a blank between
    il, tl = torch.tensor([7, 5, 6]), torch.tensor([4, 1, 3])
    concat = torch.cat([padded[0, :4], padded[1, :1], padded[2, :3]])
    for targets in (padded, padded.int(), concat, concat.int()):
        for reduction in REDUCTIONS:
            check(lambda a, b: F.ctc_loss(a, b, il, tl, reduction=reduction), lp, targets, **tol(dtype))
            check_grad(lambda a: F.ctc_loss(a, targets.to(a.device), il, tl, reduction=reduction), [lp], [True],
                       dtype)
    # another blank index, lengths as lists, a non-contiguous input, unbatched input
    check(lambda a, b: F.ctc_loss(a, b, [7, 7, 7], [2, 2, 1], blank=4), lp, torch.tensor([[0, 1], [2, 2], [3, 0]]),
          **tol(dtype))
    check(lambda a, b: F.ctc_loss(a.transpose(0, 1).contiguous().transpose(0, 1), b, il, tl), lp, padded,
          **tol(dtype))
    check(lambda a, b: F.ctc_loss(a, b, torch.tensor(7), torch.tensor(3)), lp[:, 0], padded[0, :3], **tol(dtype))
    check_grad(lambda a: F.ctc_loss(a, padded[:, :2].to(a.device), il, torch.tensor([2, 1, 2])), [lp], [True],
               dtype)


def test_ctc_loss_infinite_and_zero_infinity_and_errors():
    lp = ctc_inputs(torch.float32, T=3, N=2)
    targets = torch.tensor([[1, 1, 2], [1, 2, 0]])  # sample 0 needs 4 frames: impossible, loss inf
    il, tl = torch.tensor([3, 3]), torch.tensor([3, 2])
    for zero_infinity in (False, True):
        for reduction in REDUCTIONS:
            check(lambda a, b: F.ctc_loss(a, b, il, tl, reduction=reduction, zero_infinity=zero_infinity), lp,
                  targets)
        check_grad(lambda a: F.ctc_loss(a, targets.to(a.device), il, tl, reduction="sum",
                                        zero_infinity=zero_infinity), [lp], [True], torch.float32)
    # zero-length targets and inputs
    check(lambda a, b: F.ctc_loss(a, b, [3, 0], [0, 0], reduction="none"), lp, torch.zeros(2, 0, dtype=torch.long))
    check(lambda a, b: F.ctc_loss(a, b, [3, 2], [0, 1], reduction="none"), lp, torch.tensor([[0], [3]]))
    # the CPU's errors
    a = torch.ops.aten._ctc_loss
    check(lambda x, y: a(x, y, [3, 3], [3, 2], 0, False), lp, targets.float())     # target dtype
    check(lambda x, y: a(x, y, [3, 3], [3, 2], 5, False), lp, targets)             # blank
    check(lambda x, y: a(x, y, [3], [3, 2], 0, False), lp, targets)                # lengths size
    check(lambda x, y: a(x, y, [4, 3], [3, 2], 0, False), lp, targets)             # input length > T
    check(lambda x, y: a(x, y, [3, 3], [4, 2], 0, False), lp, targets)             # target length > width
    check(lambda x, y: a(x, y, [-1, 3], [3, 2], 0, False), lp, targets)
    check(lambda x, y: a(x, y, [3, 3], [3, 2], 0, False), lp, targets.view(-1))    # concatenated size
    check(lambda x, y: a(x, y, [3, 3], [3, 2], 0, False), lp[0], targets)          # 2-D log_probs
    check(lambda x, y: a(x, y, [3, 3], [3, 2], 0, False), lp.half(), targets)      # float16
