"""Differential fuzz suite (CI profile): every op of torch_vk.fuzz.OPS (element-wise with
promotion, comparisons, reductions, scans, sorts, indexing and scatter / gather, shape ops,
the matmul family, norms, losses, convolution and pooling) on cases drawn by hypothesis with a
derandomized, bounded profile, each compared with the CPU (values, dtypes, shapes and the
exception type when the CPU raises). `python -m torch_vk fuzz --cases N` runs more.

TORCH_VK_FUZZ_EXAMPLES sets the cases per op (default 14)."""
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from torch_vk import fuzz

FLOAT64 = fuzz.device_has_float64()
EXAMPLES = int(os.environ.get("TORCH_VK_FUZZ_EXAMPLES", "14"))

# Derandomized (a fixed seed per test), bounded, no database and no shrinking: a failure
# prints the case itself (inputs, layouts, dtypes), which `python -m torch_vk fuzz` reruns.
CI_PROFILE = settings(derandomize=True, max_examples=EXAMPLES, deadline=None, database=None,
                      phases=[Phase.explicit, Phase.generate], print_blob=False,
                      suppress_health_check=list(HealthCheck))


def test_covers_enough_ops():
    assert len(fuzz.op_names()) >= 150


@pytest.mark.parametrize("name", fuzz.op_names())
def test_op_matches_cpu(name):
    @CI_PROFILE
    @given(r=st.randoms(use_true_random=False))
    def check(r):
        fuzz.run_named_case(name, r, FLOAT64)

    check()
