"""Differential fuzz suite (CI profile): every op of torch_vk.fuzz.OPS (element-wise with
promotion, comparisons, reductions, scans, sorts, indexing and scatter / gather, shape ops,
the matmul family, norms, losses, convolution and pooling) on cases drawn by hypothesis with a
derandomized, bounded profile, each compared with the CPU (values, dtypes, shapes and the
exception type when the CPU raises). `python -m torch_vk fuzz --cases N` runs more.

TORCH_VK_FUZZ_EXAMPLES sets the cases per op (default 20)."""
import os
import random
import re

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from torch_vk import fuzz

FLOAT64 = fuzz.device_has_float64()
EXAMPLES = int(os.environ.get("TORCH_VK_FUZZ_EXAMPLES", "20"))

# Derandomized (a fixed seed per test), bounded, no database and no shrinking: a failure
# prints the case itself (inputs, layouts, dtypes), which `python -m torch_vk fuzz` reruns.
CI_PROFILE = settings(derandomize=True, max_examples=EXAMPLES, deadline=None, database=None,
                      phases=[Phase.explicit, Phase.generate], print_blob=False,
                      suppress_health_check=list(HealthCheck))


def test_covers_enough_ops():
    assert len(fuzz.op_names()) >= 150


@pytest.mark.parametrize("name", fuzz.op_names())
def test_op_matches_cpu(name):
    # hypothesis draws the case seeds (derandomized: the same seeds every run); each seed's
    # random.Random draws the whole case with full entropy, as `python -m torch_vk fuzz` does
    # (hypothesis' own random choices favour minimal values: mostly empty tensors).
    @CI_PROFILE
    @given(seed=st.integers(min_value=0, max_value=2**63 - 1))
    def check(seed):
        try:
            fuzz.run_named_case(name, random.Random(seed), FLOAT64)
        except fuzz.CaseFailure as e:
            raise fuzz.CaseFailure(f"{e}\n  replay: python -m torch_vk fuzz --ops '^{re.escape(name)}$' "
                                   f"--replay {seed}") from None

    check()
