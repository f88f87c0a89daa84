"""DDP, FSDP2, DTensor / tensor parallel and distributed checkpoints on vk against
single-process training on the whole batch on the CPU (workers/ddp.py, fsdp.py, tp.py,
dcp.py). Three ranks (odd sizes: uneven shards and chunks); two ranks are covered by the
checkpoint test (FSDP2 save), test_launch.py (DDP under torchrun) and test_stack.py (TorchTitan
FSDP2, Ray DDP)."""
import pytest

from launcher import run_job


@pytest.mark.parametrize("world_size", [3])
def test_ddp(world_size):
    run_job("ddp.py", world_size)


@pytest.mark.parametrize("world_size", [3])
def test_fsdp2(world_size):
    run_job("fsdp.py", world_size)


@pytest.mark.parametrize("world_size", [3])
def test_tensor_parallel(world_size):
    # One logical device per rank (vk:LOCAL_RANK), as on a multi-GPU machine.
    run_job("tp.py", world_size, env={"TORCH_VK_VISIBLE_DEVICES": ",".join(["0"] * world_size)})


def test_checkpoint_save_on_2_load_on_3_and_1(tmp_path):
    path = str(tmp_path / "ckpt")
    run_job("dcp.py", 2, args=["save", path])
    run_job("dcp.py", 3, args=["load", path])
    run_job("dcp.py", 1, args=["load_single", path])
