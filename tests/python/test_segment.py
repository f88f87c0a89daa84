"""segment_reduce (forward and backward) against PyTorch's CPU: reductions, lengths / offsets,
axis, initial, empty segments, NaN, dtypes, layouts, autograd and bad arguments; and
nonzero_static (ops_index.cpp)."""
import pytest
import torch

from helpers import TOLERANCE, check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def sync():
    torch.vk.synchronize()


def same_error(fn, *args):
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with pytest.raises(type(cpu.value)) as vk:
        fn(*[a.to("vk") if isinstance(a, torch.Tensor) else a for a in args])
        sync()
    return cpu.value, vk.value


def data_with_nan(dtype, seed=0):
    d = make((7, 3), dtype, seed=seed)
    d[2, 1] = float("nan")
    d[5, 0] = 0.0
    d[6, 0] = d[4, 0]   # a tie in the last segment
    return d


LENGTHS = torch.tensor([2, 0, 1, 4])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_forward(dtype, reduce):
    d = data_with_nan(dtype)
    S = torch.segment_reduce
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), LENGTHS.cumsum(0)])
    check(lambda x, l: S(x, reduce, lengths=l), d, LENGTHS)
    check(lambda x, l: S(x, reduce, lengths=l), d, LENGTHS.int())
    check(lambda x, l: S(x, reduce, lengths=l, initial=2.5), d, LENGTHS)
    check(lambda x, o: S(x, reduce, offsets=o), d, offsets)
    check(lambda x, o: S(x, reduce, offsets=o, initial=-1), d, offsets.int())
    check(lambda x, l: S(x, reduce, lengths=l, unsafe=True), d, LENGTHS)
    for _, layout in layouts(d):
        check(lambda x, l: S(layout(x), reduce, lengths=l), d, LENGTHS)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_axis(reduce):
    S = torch.segment_reduce
    d = make((2, 6, 3), torch.float32, seed=1)
    lengths = torch.tensor([[1, 2, 0, 3], [4, 0, 0, 2]])
    check(lambda x, l: S(x, reduce, lengths=l, axis=1), d, lengths)
    check(lambda x, l: S(x, reduce, lengths=l, axis=-2), d, lengths)
    offsets = torch.cat([torch.zeros(2, 1, dtype=torch.long), lengths.cumsum(1)], 1)
    check(lambda x, o: S(x, reduce, offsets=o, axis=1), d, offsets)
    # the last axis
    d2 = make((3, 5), torch.float64, seed=2)
    check(lambda x, l: S(x, reduce, lengths=l, axis=1), d2, torch.tensor([[5, 0], [2, 3], [0, 5]]))
    # no segments at all
    check(lambda x, l: S(x, reduce, lengths=l, axis=1, unsafe=True), d2, torch.zeros(3, 0, dtype=torch.long))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_backward(dtype, reduce):
    d = make((7, 3), dtype, seed=3)
    d[6, 0] = d[4, 0]   # ties (max / min share the gradient)
    d[6, 1] = d[3, 1]
    d[1, 2] = 0.0       # a zero (prod's exclusive product)
    grad = make((4, 3), dtype, seed=4)
    grad[3, 1] = -abs(float(grad[3, 1])) - 0.5   # a negative gradient on a tie
    for kw in ({"lengths": LENGTHS}, {"offsets": torch.tensor([0, 2, 2, 3, 7])}, {"lengths": LENGTHS, "initial": 2.0}):
        results = []
        for dev in ("cpu", "vk"):
            x = d.to(dev).requires_grad_()
            args = {k: (v.to(dev) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
            y = torch.segment_reduce(x, reduce, **args)
            (g,) = torch.autograd.grad(y, x, grad.to(dev))
            results.append((y.detach().cpu(), g.cpu()))
        tol = TOLERANCE.get(dtype, {})
        torch.testing.assert_close(results[1][0], results[0][0], equal_nan=True, **tol)
        torch.testing.assert_close(results[1][1], results[0][1], equal_nan=True, **tol)


def test_segment_reduce_bad_arguments():
    S = torch.segment_reduce
    d = make((6, 2), torch.float32)
    L = torch.tensor([2, 0, 1, 3])
    cases = [
        (lambda x, l: S(x, "sum", lengths=l), d, torch.tensor([2, 0, 1, 2])),     # rows do not sum up
        (lambda x, l: S(x, "sum", lengths=l), d, torch.tensor([2, -1, 2, 3])),    # negative length
        (lambda x, l: S(x, "foo", lengths=l), d, L),
        (lambda x, l: S(x, "sum"), d, L),
        (lambda x, l: S(x, "sum", indices=l), d, L),
        (lambda x, l: S(x, "sum", lengths=l, axis=1), d, L),
        (lambda x, l: S(x, "sum", offsets=torch.tensor([0, 3, 2, 6], device=x.device)), d, L),
    ]
    for fn, x, l in cases:
        cpu, vk = same_error(fn, x, l)
        assert str(cpu).splitlines()[0] == str(vk).splitlines()[0]
    same_error(lambda x, l: S(x, "sum", lengths=l), d.int(), L)
    same_error(lambda x, l: S(x, "sum", lengths=l), d, L.float())
    # unsafe=True skips the checks (no host read); the device stays within data
    check(lambda x, l: S(x, "sum", lengths=l, unsafe=True), d, torch.tensor([2, 0, 1, 2]))
    check(lambda x, l: S(x, "sum", lengths=l), d, L)


# ---------------------------------------------------------------- nonzero_static

@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.float16, torch.uint8], ids=str)
def test_nonzero_static(dtype):
    x = make((3, 4), dtype, seed=5)
    if dtype != torch.bool:
        x[1] = 0
    for size in (0, 2, 5, 12, 20):
        check(lambda a: torch.nonzero_static(a, size=size), x)
        check(lambda a: torch.nonzero_static(a, size=size, fill_value=-7), x)
    for _, layout in layouts(x):
        check(lambda a: torch.nonzero_static(layout(a), size=6), x)
    check(lambda a: torch.nonzero_static(a, size=3), make((2, 3, 2), dtype, seed=6))
    check(lambda a: torch.nonzero_static(a, size=3), make((0, 3), dtype))
    check(lambda a: torch.nonzero_static(a, size=3), torch.tensor(1).to(dtype))
    check(lambda a: torch.nonzero_static(a, size=3), make((5,), dtype, seed=7))
    check(lambda a: torch.nonzero_static(a, size=-1), x)
    out = torch.empty(0, dtype=torch.long, device="vk")
    torch.nonzero_static(x.to("vk"), size=4, fill_value=9, out=out)
    torch.testing.assert_close(out.cpu(), torch.nonzero_static(x, size=4, fill_value=9))
