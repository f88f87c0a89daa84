"""accelerate on vk: `Accelerator()` picks vk (through torch.accelerator), prepares model,
optimizer and data loader onto it, mixed precision fp16 (vk GradScaler) and bf16 train, and
`get_max_memory` / `infer_auto_device_map` see the device. Each run equals the CPU's."""
import pytest
import torch


@pytest.fixture(autouse=True)
def _fresh_state():
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


def _loop(accelerator):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.utils.data.TensorDataset(torch.randn(16, 8, generator=torch.Generator().manual_seed(1)),
                                          torch.randint(0, 3, (16,), generator=torch.Generator().manual_seed(2)))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    losses = []
    for x, y in loader:
        with accelerator.autocast():
            loss = torch.nn.functional.cross_entropy(model(x), y)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        assert x.device.type == accelerator.device.type  # "vk:0" vs "vk", as "cuda:0" vs "cuda"
    return model, torch.tensor(losses)


@pytest.mark.parametrize("precision", ["no", "fp16", "bf16"])
def test_accelerator_training(precision):
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    accelerator = Accelerator(mixed_precision=precision)
    assert accelerator.device.type == "vk"
    model, losses = _loop(accelerator)
    assert all(p.device.type == "vk" for p in model.parameters())
    if precision == "fp16":
        assert isinstance(accelerator.scaler, torch.amp.GradScaler)
        assert accelerator.scaler._device == "vk"
    AcceleratorState._reset_state(reset_partial_state=True)
    _, expected = _loop(Accelerator(cpu=True))
    tolerance = {"no": 1e-5, "fp16": 5e-3, "bf16": 3e-2}[precision]
    torch.testing.assert_close(losses, expected, atol=tolerance, rtol=tolerance)


def test_memory_and_device_map():
    from accelerate import infer_auto_device_map
    from accelerate.utils import get_max_memory

    memory = get_max_memory()
    assert 0 in memory and memory[0] > 0 and "cpu" in memory
    model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(4)])
    device_map = infer_auto_device_map(model, max_memory={0: 10**9, "cpu": 10**9})
    assert set(device_map.values()) == {0}
    # A budget that fits only part of the model spills the rest to the CPU, as on CUDA.
    layer = 64 * 64 * 4 + 64 * 4
    split = infer_auto_device_map(model, max_memory={0: 2 * layer + 100, "cpu": 10**9})
    assert set(split.values()) == {0, "cpu"}


def test_multi_process_launch_on_vk_raises_instead_of_training_apart():
    """LOCAL_RANK / WORLD_SIZE set (torchrun, accelerate launch): accelerate has no distributed
    type for vk and would train every process alone; torch-vk makes that an error, while
    cpu=True still gives MULTI_CPU over Gloo (one process of a 1-rank group here)."""
    import os
    import subprocess
    import sys

    def launched_rank(body, world_size):
        code = "import torch, torch_vk\nfrom accelerate import PartialState\n" + body
        env = dict(os.environ, LOCAL_RANK="0", RANK="0", WORLD_SIZE=str(world_size),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29533 + world_size))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120)
        return out.stdout, out.stdout + out.stderr

    stdout, log = launched_rank("try:\n    PartialState()\nexcept RuntimeError as e:\n"
                                "    print('ERROR', e)\nelse:\n    print('NO ERROR')\n", 2)
    assert stdout.startswith("ERROR") and "vkgloo" in stdout, log
    stdout, log = launched_rank("s = PartialState(cpu=True)\nprint(s.distributed_type, s.device)\n", 1)
    assert "MULTI_CPU" in stdout and "cpu" in stdout, log
