"""Every supported init_process_group form (workers/init_forms.py), and CPU-only code that
calls init_process_group() with torch-vk installed, with and without a visible vk device."""
import pytest

from launcher import run_job


@pytest.mark.parametrize("world_size", [2, 3])
def test_init_forms(world_size):
    # One logical device per rank on the one physical device, so that device_id=vk:LOCAL_RANK
    # and DeviceMesh's set_device(LOCAL_RANK) work as on a multi-GPU machine.
    visible = ",".join(["0"] * world_size)
    run_job("init_forms.py", world_size, env={"TORCH_VK_VISIBLE_DEVICES": visible})


def test_shared_device_without_repeats():
    """Ranks sharing vk:0 (no TORCH_VK_VISIBLE_DEVICES): the forms that do not pick a device
    per rank."""
    run_job("init_forms.py", 2, args=["no_backend", "named", "mixed_string", "new_groups",
                                      "cpu_only"])


def test_cpu_only_code_without_a_vk_device():
    """torch-vk installed, no usable Vulkan device: init_process_group() still serves CPU code."""
    run_job("init_forms.py", 2, args=["cpu_only"], env={"TORCH_VK_VISIBLE_DEVICES": ""})
