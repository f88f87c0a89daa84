"""Checkpoints of vk training state: torch.save / torch.load of model and optimizer state
(buffers and files), bit-identical resume of a training run (including the vk RNG that drives
dropout), map_location in every form, loading a vk checkpoint with plain PyTorch (no torch-vk)
and safetensors files.

Every test runs with the CPU fallback disabled (strict_native); only steps that are CPU work by
nature (map_location="cpu", the subprocess without torch-vk) put tensors on the CPU."""
import io
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn

import torch_vk  # noqa: F401

pytestmark = pytest.mark.usefixtures("strict_native")

VK = torch.device("vk")


def small_model(seed=0, dropout=0.25):
    """Linear-GELU-Dropout-Linear with a BatchNorm (so the state_dict has buffers, one of them
    int64), built on the CPU from a fixed seed and moved to vk."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.GELU(), nn.Dropout(dropout),
                         nn.Linear(16, 3)).to(VK)


OPTIMIZERS = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
    "adamw_fused": lambda params: torch.optim.AdamW(params, lr=0.01, fused=True),
}


def make_batches(count, seed=1):
    """Training data generated up front on the CPU, so every run sees the same numbers."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 6, generator=g), torch.randn(8, 3, generator=g)) for _ in range(count)]


def train_steps(model, optimizer, scheduler, batches):
    model.train()
    for inputs, targets in batches:
        optimizer.zero_grad(set_to_none=True)
        loss = ((model(inputs.to(VK)) - targets.to(VK)) ** 2).mean()
        loss.backward()
        optimizer.step()
        scheduler.step()


def trained_state(optimizer_name, steps=3):
    model = small_model()
    optimizer = OPTIMIZERS[optimizer_name](model.parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    torch.manual_seed(3)
    train_steps(model, optimizer, scheduler, make_batches(steps))
    return model, optimizer


def assert_same_tree(loaded, original, device_type):
    """Every tensor of `loaded` is on `device_type` and equals (value, dtype, shape) the tensor
    at the same place in `original`; everything else compares equal."""
    if isinstance(original, torch.Tensor):
        assert isinstance(loaded, torch.Tensor)
        assert loaded.device.type == device_type, loaded.device
        assert loaded.dtype == original.dtype and loaded.shape == original.shape
        assert torch.equal(loaded.cpu(), original.cpu())
    elif isinstance(original, dict):
        assert loaded.keys() == original.keys()
        for key in original:
            assert_same_tree(loaded[key], original[key], device_type)
    elif isinstance(original, (list, tuple)):
        assert len(loaded) == len(original)
        for a, b in zip(loaded, original):
            assert_same_tree(a, b, device_type)
    else:
        assert loaded == original


def state_tensors_on(optimizer_state, device_type):
    """The per-parameter state tensors (momentum buffers, Adam moments) and their devices."""
    tensors = [v for per_param in optimizer_state["state"].values() for k, v in per_param.items()
               if isinstance(v, torch.Tensor) and k != "step"]
    assert tensors, "the optimizer has no state tensors"
    return all(t.device.type == device_type for t in tensors)


# ---------------------------------------------------------------- save / load round trips

@pytest.mark.parametrize("optimizer_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("target", ["buffer", "file"])
def test_model_and_optimizer_state_round_trip(optimizer_name, target, tmp_path):
    model, optimizer = trained_state(optimizer_name)
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    assert state_tensors_on(checkpoint["optimizer"], "vk")
    assert checkpoint["model"]["1.num_batches_tracked"].dtype == torch.int64
    if target == "buffer":
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer)
    else:
        path = tmp_path / "checkpoint.pt"
        torch.save(checkpoint, path)
        loaded = torch.load(path)
    assert_same_tree(loaded["model"], checkpoint["model"], "vk")
    # Optimizer state keeps each tensor's own device: the CPU "step" counters of the
    # non-fused optimizers stay on the CPU, everything else comes back on vk.
    for key, state in loaded["optimizer"]["state"].items():
        for name, value in state.items():
            original = checkpoint["optimizer"]["state"][key][name]
            assert_same_tree(value, original, original.device.type)
    assert loaded["optimizer"]["param_groups"] == checkpoint["optimizer"]["param_groups"]

    # The reloaded state restores a fresh model and optimizer exactly.
    fresh_model = small_model(seed=9)
    fresh_optimizer = OPTIMIZERS[optimizer_name](fresh_model.parameters())
    fresh_model.load_state_dict(loaded["model"])
    fresh_optimizer.load_state_dict(loaded["optimizer"])
    assert_same_tree(fresh_model.state_dict(), model.state_dict(), "vk")
    assert state_tensors_on(fresh_optimizer.state_dict(), "vk")


def test_views_keep_sharing_storage_and_layout():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6).to(VK)
    views = {"base": base, "row": base[1], "transposed": base.t(), "strided": base[:, ::2]}
    buffer = io.BytesIO()
    torch.save(views, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    for name, view in views.items():
        assert loaded[name].device.type == "vk"
        assert loaded[name].stride() == view.stride()
        assert loaded[name].storage_offset() == view.storage_offset()
        assert torch.equal(loaded[name].cpu(), view.cpu())
    # One storage was saved; the loaded views alias it like the originals.
    pointers = {t.untyped_storage().data_ptr() for t in loaded.values()}
    assert len(pointers) == 1
    loaded["base"][1, 0] = -1.0
    assert loaded["row"][0].item() == -1.0 and loaded["transposed"][0, 1].item() == -1.0


def test_all_dtypes_round_trip():
    values = torch.tensor([-2.5, -1.0, 0.0, 0.5, 3.0, 100.0])
    tensors = {str(dtype): values.to(dtype).to(VK)
               for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64,
                             torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                             torch.bool)}
    tensors["scalar"] = torch.tensor(7.0).to(VK)
    tensors["empty"] = torch.empty(0, 3).to(VK)
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    buffer.seek(0)
    assert_same_tree(torch.load(buffer), tensors, "vk")


# ---------------------------------------------------------------- bit-identical resume

def run_uninterrupted(optimizer_name, batches):
    model = small_model()
    optimizer = OPTIMIZERS[optimizer_name](model.parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    torch.manual_seed(3)
    train_steps(model, optimizer, scheduler, batches)
    return model


def run_interrupted(optimizer_name, batches, restore_rng=True):
    """Trains half the steps, checkpoints through bytes, rebuilds everything from other
    initial values, loads and trains the other half."""
    half = len(batches) // 2
    model = small_model()
    optimizer = OPTIMIZERS[optimizer_name](model.parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    torch.manual_seed(3)
    train_steps(model, optimizer, scheduler, batches[:half])
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "vk_rng": torch.vk.get_rng_state()}, buffer)
    del model, optimizer, scheduler

    # A different process would start from other numbers: other weights, other RNG position.
    torch.manual_seed(12345)
    torch.rand(1000, device=VK)
    buffer.seek(0)
    checkpoint = torch.load(buffer)
    model = small_model(seed=77)
    optimizer = OPTIMIZERS[optimizer_name](model.parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    if restore_rng:
        torch.vk.set_rng_state(checkpoint["vk_rng"])
    train_steps(model, optimizer, scheduler, batches[half:])
    return model


@pytest.mark.parametrize("optimizer_name", sorted(OPTIMIZERS))
def test_resume_is_bit_identical(optimizer_name):
    batches = make_batches(6)
    expected = run_uninterrupted(optimizer_name, batches)
    resumed = run_interrupted(optimizer_name, batches)
    for (name, a), b in zip(resumed.state_dict().items(), expected.state_dict().values()):
        assert a.device.type == "vk"
        assert torch.equal(a.cpu(), b.cpu()), name


def test_resume_without_rng_state_differs():
    # Control for the test above: dropout draws from the vk generator, so skipping the RNG
    # restore changes the result (the saved RNG state is what makes resume exact).
    batches = make_batches(6)
    expected = run_uninterrupted("sgd_momentum", batches)
    resumed = run_interrupted("sgd_momentum", batches, restore_rng=False)
    assert not torch.equal(resumed[0].weight.cpu(), expected[0].weight.cpu())


# ---------------------------------------------------------------- map_location

def saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def test_map_location_vk_to_cpu():
    model, optimizer = trained_state("adam")
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    loaded = torch.load(saved(checkpoint), map_location="cpu")
    assert_same_tree(loaded["model"], checkpoint["model"], "cpu")
    assert state_tensors_on(loaded["optimizer"], "cpu")
    # A CPU copy of the vk state loads into a vk optimizer, which moves the state back.
    fresh_model = small_model(seed=5)
    fresh_model.load_state_dict(loaded["model"])
    fresh_optimizer = OPTIMIZERS["adam"](fresh_model.parameters())
    fresh_optimizer.load_state_dict(loaded["optimizer"])
    assert state_tensors_on(fresh_optimizer.state_dict(), "vk")
    assert_same_tree(fresh_optimizer.state_dict()["state"][0]["exp_avg"],
                     checkpoint["optimizer"]["state"][0]["exp_avg"], "vk")


@pytest.mark.parametrize("location", ["vk", "vk:0", VK, torch.device("vk", 0),
                                      {"cpu": "vk:0"}, {"cpu": "vk"}],
                         ids=["str", "str_index", "device", "device_index", "dict_index", "dict"])
def test_map_location_cpu_to_vk(location):
    state = {"w": torch.randn(4, 5), "h": torch.randn(3).half(), "i": torch.arange(4)}
    loaded = torch.load(saved(state), map_location=location)
    assert_same_tree(loaded, state, "vk")


@pytest.mark.parametrize("location", ["vk", VK, {"vk:0": "vk:0"}, None],
                         ids=["str", "device", "dict", "none"])
def test_map_location_vk_to_vk(location):
    state = {"w": torch.randn(4, 5).to(VK), "i": torch.arange(4).to(VK)}
    assert_same_tree(torch.load(saved(state), map_location=location), state, "vk")


def test_map_location_dict_and_callable_to_cpu():
    state = {"w": torch.randn(4, 5).to(VK), "b": torch.randn(2).bfloat16().to(VK)}
    assert_same_tree(torch.load(saved(state), map_location={"vk:0": "cpu"}), state, "cpu")
    on_cpu = torch.load(saved(state), map_location=lambda storage, location: storage)
    assert_same_tree(on_cpu, state, "cpu")
    # weights_only=False takes the full unpickler; the result is the same.
    assert_same_tree(torch.load(saved(state), weights_only=False), state, "vk")


def test_vk_checkpoint_loads_with_plain_torch(tmp_path):
    """A checkpoint written from vk tensors loads on a machine without torch-vk when
    map_location="cpu": the subprocess blocks the torch_vk import and disables backend
    autoload, then compares with a CPU copy saved next to it."""
    model, optimizer = trained_state("adam")
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "vk_rng": torch.vk.get_rng_state()}
    torch.save(checkpoint, tmp_path / "vk.pt")
    cpu_copy = torch.load(saved(checkpoint), map_location="cpu")
    torch.save(cpu_copy, tmp_path / "reference.pt")
    script = textwrap.dedent("""
        import sys
        sys.modules["torch_vk"] = None  # any attempt to import torch_vk raises ImportError
        import torch
        loaded = torch.load("vk.pt", map_location="cpu")
        reference = torch.load("reference.pt")
        assert sys.modules.get("torch_vk") is None, "torch_vk was imported"

        def same(a, b):
            if isinstance(b, torch.Tensor):
                return a.device.type == "cpu" and a.dtype == b.dtype and torch.equal(a, b)
            if isinstance(b, dict):
                return a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)
            if isinstance(b, (list, tuple)):
                return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
            return a == b

        assert same(loaded, reference)
        print("weights", loaded["model"]["0.weight"].flatten()[:3].tolist())
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
    printed = [float(v) for v in result.stdout.split("weights ")[1].split("\n")[0].strip("[]").split(",")]
    assert printed == cpu_copy["model"]["0.weight"].flatten()[:3].tolist()


# ---------------------------------------------------------------- safetensors

def test_safetensors_save_from_vk(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    model, _ = trained_state("sgd_momentum")
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    state["half"] = torch.randn(5).half().to(VK)
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file(state, path)
    loaded = safetensors_torch.load_file(path)  # the default: CPU tensors
    assert_same_tree(loaded, state, "cpu")
    # In-memory serialization gives the same bytes as a save of the CPU copies.
    assert safetensors_torch.save(state) == safetensors_torch.save({k: v.cpu() for k, v in state.items()})


def test_safetensors_load_to_vk_through_cpu_or_accelerator_index(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    state = {"w": torch.randn(4, 3), "i": torch.arange(6).view(2, 3), "b": torch.randn(3).bfloat16()}
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file(state, path)
    on_vk = {k: v.to(VK) for k, v in safetensors_torch.load_file(path).items()}
    assert_same_tree(on_vk, state, "vk")
    # An integer device is the current accelerator's index: vk here.
    assert_same_tree(safetensors_torch.load_file(path, device=0), state, "vk")


@pytest.mark.parametrize("device", ["vk", "vk:0", torch.device("vk"), torch.device("vk", 0)],
                         ids=["vk", "vk:0", "device", "device:0"])
def test_safetensors_load_file_with_vk_device(tmp_path, device):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    state = {"w": torch.randn(4, 3), "i": torch.arange(6).view(2, 3), "b": torch.randn(3).bfloat16(),
             "empty": torch.empty(0, 2), "scalar": torch.tensor(1.5)}
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file(state, path)
    assert_same_tree(safetensors_torch.load_file(path, device=device), state, "vk")
    # Other devices are safetensors' own business, unchanged.
    assert_same_tree(safetensors_torch.load_file(path, device="cpu"), state, "cpu")
    with pytest.raises(Exception, match="invalid"):
        safetensors_torch.load_file(path, device="nodevice")


def test_safetensors_adapter_whichever_is_imported_first(tmp_path):
    pytest.importorskip("safetensors.torch")
    for order in ("import safetensors.torch, torch_vk", "import torch_vk, safetensors.torch"):
        script = textwrap.dedent(f"""
            import torch
            {order}
            from safetensors.torch import save_file, load_file
            save_file({{"x": torch.arange(5.)}}, "x.safetensors")
            x = load_file("x.safetensors", device="vk")["x"]
            assert x.device.type == "vk" and torch.equal(x.cpu(), torch.arange(5.)), x
            print("ok")
        """)
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, (order, result.stderr[-3000:])
        assert result.stdout.strip().endswith("ok")
