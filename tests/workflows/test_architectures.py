"""Eight architectures, saved with save_pretrained and loaded back with
`from_pretrained(device_map="vk")`: forward equal to the CPU, tied parameters kept, one SGD
and one AdamW step equal to the CPU, greedy generation identical for the generative ones.
"""
import copy
import itertools

import pytest
import torch

from tiny import ARCHS, assert_matches_cpu, assert_outputs_close, to_device

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Each architecture saved once (module scope: loading is what the tests exercise)."""
    root = tmp_path_factory.mktemp("archs")
    paths = {}
    for name, arch in ARCHS.items():
        torch.manual_seed(0)
        model = arch.build()
        model.save_pretrained(root / name)
        paths[name] = root / name
    return paths


def _pair(arch, path):
    """(CPU float32, vk float32 loaded with device_map="vk", CPU float64 reference)."""
    cls = type(arch.build())
    cpu = cls.from_pretrained(path)
    dev = cls.from_pretrained(path, device_map="vk")
    return cpu, dev, copy.deepcopy(cpu).double() if arch.float64 else None


@pytest.mark.parametrize("name", list(ARCHS))
def test_load_forward_and_ties(name, saved):
    arch = ARCHS[name]
    cpu, dev, ref = _pair(arch, saved[name])
    assert all(p.device.type == "vk" for p in dev.parameters())
    assert all(b.device.type == "vk" for b in dev.buffers())
    assert len(list(dev.parameters())) == len(list(cpu.parameters()))
    if arch.tied:
        a, b = arch.tied
        cpu_params = dict(cpu.named_parameters(remove_duplicate=False))
        dev_params = dict(dev.named_parameters(remove_duplicate=False))
        assert cpu_params[a] is cpu_params[b]
        assert dev_params[a] is dev_params[b]
    for key, value in cpu.state_dict().items():
        torch.testing.assert_close(dev.state_dict()[key].cpu(), value, msg=key)
    cpu.eval()
    dev.eval()
    batch = arch.inputs(torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = cpu(**batch)
        got = dev(**to_device(batch, "vk"))
        reference = ref.eval()(**to_device(batch, "cpu", torch.float64)) if ref else None
    assert_outputs_close(got, expected, reference)


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
@pytest.mark.parametrize("name", list(ARCHS))
def test_training_step_matches_cpu(name, optimizer, saved):
    arch = ARCHS[name]
    cpu, dev, ref = _pair(arch, saved[name])
    for model in (cpu, dev, ref):
        if model is not None:
            model.train()
    # AdamW's eps is raised from 1e-8: some gradients are zero in exact arithmetic (attention
    # key biases: softmax is invariant to them) and ~1e-9 of rounding noise in practice, and
    # with eps = 1e-8 Adam turns that noise into a full-size step whose sign is the noise's.
    make = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
            "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, eps=1e-3)}[
        optimizer]
    runs = [(cpu, make(cpu.parameters()), "cpu", None), (dev, make(dev.parameters()), "vk", None)]
    if ref is not None:
        runs.append((ref, make(ref.parameters()), "cpu", torch.float64))
    for step in range(2):
        batch = arch.inputs(torch.Generator().manual_seed(10 + step))
        for model, opt, device, dtype in runs:
            opt.zero_grad()
            out = model(**to_device(batch, device, dtype))
            arch.loss(out).backward()
            opt.step()
        ref_params = ref.parameters() if ref is not None else itertools.repeat(None)
        for (key, p_cpu), (_, p_dev), p_ref in zip(
                cpu.named_parameters(), dev.named_parameters(), ref_params):
            assert (p_dev.grad is None) == (p_cpu.grad is None), key
            if p_cpu.grad is not None:
                assert_matches_cpu(p_dev.grad, p_cpu.grad, p_ref.grad if ref else None,
                                   atol=1e-4, rtol=1e-3, msg=f"step {step}: grad of {key}")
            assert_matches_cpu(p_dev, p_cpu, p_ref, msg=f"step {step}: {key}")
    if arch.tied:
        params = dict(dev.named_parameters(remove_duplicate=False))
        assert params[arch.tied[0]] is params[arch.tied[1]]


@pytest.mark.parametrize("name", [n for n, a in ARCHS.items() if a.generative])
def test_greedy_generation_identical(name, saved):
    arch = ARCHS[name]
    cpu, dev, _ = _pair(arch, saved[name])
    batch = arch.inputs(torch.Generator().manual_seed(2))
    batch.pop("labels")
    kwargs = dict(max_new_tokens=8, do_sample=False, pad_token_id=0)
    expected = cpu.generate(**batch, **kwargs)
    got = dev.generate(**to_device(batch, "vk"), **kwargs)
    assert got.device.type == "vk"
    assert got.cpu().tolist() == expected.tolist()
    # Not a degenerate check: the continuations are not one repeated token.
    prompt = batch.get("decoder_input_ids", batch["input_ids"]).shape[1] \
        if not cpu.config.is_encoder_decoder else 1
    assert len({t for row in expected.tolist() for t in row[prompt:]}) > 3
