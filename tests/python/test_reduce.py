"""sum and mean against PyTorch's CPU."""
import pytest
import torch

from helpers import check, layouts, make

pytestmark = pytest.mark.usefixtures("strict_native")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32,
                                   torch.int64, torch.uint8, torch.bool], ids=str)
def test_sum_dims(dtype):
    x = make((3, 4, 5), dtype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).sum(), x)
        for dim in (0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2), []):
            for keepdim in (False, True):
                check(lambda a: layout(a).sum(dim, keepdim=keepdim), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_mean_dims(dtype):
    x = make((4, 3, 6), dtype)
    for _, layout in layouts(x):
        check(lambda a: layout(a).mean(), x)
        for dim in (0, 1, 2, (0, 2), (-1, -2)):
            for keepdim in (False, True):
                check(lambda a: layout(a).mean(dim, keepdim=keepdim), x)


def test_sum_mean_dtype_argument_and_errors():
    x = make((5, 6), torch.float16)
    check(lambda a: a.sum(dtype=torch.float32), x)
    check(lambda a: a.sum(1, dtype=torch.float32), x)
    check(lambda a: a.mean(0, dtype=torch.float32), x)
    i = make((5, 6), torch.int32)
    check(lambda a: a.sum(dtype=torch.float32), i)
    check(lambda a: a.mean(), i)                         # error: integer mean
    check(lambda a: a.mean(dtype=torch.float32), i)
    check(lambda a: a.sum(2), x)                         # error: dim out of range
    check(lambda a: a.sum((0, 0)), x)                    # error: repeated dim


def test_sum_edge_cases():
    check(lambda a: a.sum(), make((), torch.float32))
    check(lambda a: a.sum(0), make((), torch.float32))
    check(lambda a: a.sum(), make((0,), torch.float32))
    check(lambda a: a.sum(0), make((0, 4), torch.float32))
    check(lambda a: a.sum(1), make((0, 4), torch.float32))
    check(lambda a: a.mean(0), make((0, 4), torch.float32))   # NaN
    check(lambda a: a.sum(0), make((1, 1, 7), torch.float32))
    check(lambda a: a.expand(4, 5, 6).sum(1), make((1, 5, 1), torch.float32))  # broadcast input


def test_sum_large_and_accurate():
    x = torch.rand(300_000, dtype=torch.float32)
    check(lambda a: a.sum(), x, atol=1e-2, rtol=1e-5)
    check(lambda a: a.view(600, 500).sum(0), x, atol=1e-3, rtol=1e-5)
    check(lambda a: a.view(600, 500).sum(1), x, atol=1e-3, rtol=1e-5)
    h = torch.full((4096,), 1.0, dtype=torch.float16)  # fp16 would saturate without fp32 accumulation
    check(lambda a: a.sum(), h)
    big = torch.tensor([2**40, 3, -(2**41)], dtype=torch.int64)
    check(lambda a: a.sum(), big)


def test_sum_out():
    x = make((4, 5), torch.float32)
    check(lambda a: torch.sum(a, 1, out=torch.empty(4, device=a.device)), x)
    check(lambda a: torch.sum(a, 1, out=torch.empty(0, device=a.device)), x)
    check(lambda a: torch.mean(a, 0, keepdim=True, out=torch.empty(1, 5, device=a.device)), x)
    check(lambda a: torch.sum(a, 1, dtype=torch.float16, out=torch.empty(4, device=a.device)), x)
