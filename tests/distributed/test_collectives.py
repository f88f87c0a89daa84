"""Every c10d collective on vk tensors equals the same collective on CPU tensors (Gloo), for
every dtype claimed, sync and async, default and side stream (workers/collectives.py); with 2
and 3 ranks (odd sizes find chunking bugs), handed to Gloo in place (unified memory) and staged
through pinned host memory (TORCH_VK_DISABLE_UNIFIED_MEMORY=1, the discrete-GPU path)."""
import pytest

from launcher import run_job


# Both world sizes and both paths, in two jobs (the CI budget): 3 ranks with vk memory handed to
# Gloo in place, 2 ranks staged.
@pytest.mark.parametrize("world_size,path", [(3, "zero_copy"), (2, "staged")])
def test_collective_matrix(world_size, path):
    env = {"TORCH_VK_DISABLE_UNIFIED_MEMORY": "1"} if path == "staged" else {}
    results = run_job("collectives.py", world_size, env=env)
    for r in results:
        assert "checks passed" in r.output


def test_user_errors_raise_on_every_rank():
    """Wait timeouts, shapes that differ between ranks, mismatched collectives, a rank that
    never calls, bad arguments and a dead peer: exceptions, never hangs (workers/errors.py)."""
    run_job("errors.py", 3, timeout=150)
