"""diffusers on vk: a tiny UNet denoised through a DDPM scheduler loop equals the CPU run
(seeded CPU generator, as diffusers recommends for reproducibility across devices), also
with `enable_model_cpu_offload(device="vk")`."""
import copy

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def _unet():
    from diffusers import UNet2DModel

    torch.manual_seed(0)
    return UNet2DModel(
        sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
        block_out_channels=(16, 32), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8, attention_head_dim=8)


def _run(pipe):
    return pipe(batch_size=2, generator=torch.Generator().manual_seed(0), num_inference_steps=5,
                output_type="np").images


def test_ddpm_pipeline_and_cpu_offload():
    from diffusers import DDPMPipeline, DDPMScheduler

    unet = _unet()
    expected = _run(DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=20)))
    on_vk = DDPMPipeline(unet=copy.deepcopy(unet), scheduler=DDPMScheduler(num_train_timesteps=20))
    on_vk.to("vk")
    assert on_vk.device.type == "vk"
    got = _run(on_vk)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4)

    offloaded = DDPMPipeline(unet=copy.deepcopy(unet),
                             scheduler=DDPMScheduler(num_train_timesteps=20))
    offloaded.enable_model_cpu_offload(device="vk")
    assert offloaded._execution_device.type == "vk"
    np.testing.assert_allclose(_run(offloaded), expected, atol=1e-5, rtol=1e-4)
    # After the call the offload hook has moved the UNet back to the CPU.
    assert next(offloaded.unet.parameters()).device.type == "cpu"


def test_scheduler_loop_by_hand():
    """The loop a sampling script writes itself: the UNet and the scheduler's math on vk. The
    step's noise comes from a seeded CPU generator on both sides (vk's own random stream is
    not the CPU's, as CUDA's is not)."""
    from diffusers import DDPMScheduler

    unet = _unet().eval()
    dev_unet = copy.deepcopy(unet).to("vk")
    scheduler = {d: DDPMScheduler(num_train_timesteps=20) for d in ("cpu", "vk")}
    sample = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    samples = {"cpu": sample, "vk": sample.to("vk")}
    for s in scheduler.values():
        s.set_timesteps(4)
    with torch.no_grad():
        for i, t in enumerate(scheduler["cpu"].timesteps):
            for device, model in (("cpu", unet), ("vk", dev_unet)):
                eps = model(samples[device], t).sample
                samples[device] = scheduler[device].step(
                    eps, t, samples[device],
                    generator=torch.Generator().manual_seed(100 + i)).prev_sample
    assert samples["vk"].device.type == "vk"
    torch.testing.assert_close(samples["vk"].cpu(), samples["cpu"], atol=1e-4, rtol=1e-4)
