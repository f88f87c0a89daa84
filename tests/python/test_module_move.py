"""Moving modules and tensors to and from "vk" keeps parameter identity, as it does for CUDA.

`Module._apply` (behind `.to`, `.vk()`, `.half()`, ...) moves a parameter in place
(`param.data = moved`) only when `torch._has_compatible_shallow_copy_type(param, moved)`;
otherwise it replaces the Parameter, which breaks tied weights and stale references. The
expectations below are what PyTorch does for two dense CPU tensors (and for CPU <-> CUDA).
"""
import copy

import pytest
import torch
from torch import nn

VK = torch.device("vk")

pytestmark = pytest.mark.usefixtures("strict_native")


class TiedLM(nn.Module):
    """An embedding whose weight is also the output head's (GPT-2 / BERT / T5 style)."""

    def __init__(self, vocab=11, dim=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, ids):
        return self.head(torch.tanh(self.mix(self.emb(ids))) * self.scale)


def _names(module):
    return [name for name, _ in module.named_parameters()]


@pytest.mark.parametrize("move", [
    lambda m: m.to("vk"),
    lambda m: m.to(VK),
    lambda m: m.vk(),
    lambda m: m.to("vk", torch.float16),
    lambda m: m.to(device="vk", dtype=torch.bfloat16),
    lambda m: m.to("vk").half(),
    lambda m: m.to("vk").to(torch.float64),
])
def test_move_keeps_identity_and_ties(move):
    torch.manual_seed(0)
    model = TiedLM()
    params = list(model.parameters())
    ids = [id(p) for p in params]
    emb = model.emb.weight
    assert move(model) is model
    assert model.head.weight is model.emb.weight
    assert model.emb.weight is emb
    assert [id(p) for p in model.parameters()] == ids
    assert len(list(model.parameters())) == len(params) == 3
    assert all(p.device.type == "vk" for p in model.parameters())
    assert model.scale.device.type == "vk"
    assert all(isinstance(p, nn.Parameter) and p.is_leaf and p.requires_grad
               for p in model.parameters())


def test_round_trip_back_to_cpu_keeps_identity():
    model = TiedLM()
    emb = model.emb.weight
    model.to("vk").to("cpu")
    assert model.emb.weight is emb and model.head.weight is emb
    assert emb.device.type == "cpu"


def test_tied_training_matches_cpu():
    """One parameter gets the gradient of both uses; a broken tie would train two copies."""
    torch.manual_seed(1)
    cpu = TiedLM()
    dev = copy.deepcopy(cpu).to("vk")
    ids = torch.randint(0, 11, (4, 5))
    target = torch.randint(0, 11, (4, 5))
    opts = [torch.optim.AdamW(cpu.parameters(), lr=0.1), torch.optim.AdamW(dev.parameters(), lr=0.1)]
    for _ in range(3):
        for model, opt, device in ((cpu, opts[0], "cpu"), (dev, opts[1], "vk")):
            opt.zero_grad()
            logits = model(ids.to(device))
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), target.to(device).flatten())
            loss.backward()
            opt.step()
    assert dev.head.weight is dev.emb.weight
    for (name, p_cpu), (_, p_dev) in zip(cpu.named_parameters(), dev.named_parameters()):
        torch.testing.assert_close(p_dev.cpu(), p_cpu, atol=1e-5, rtol=1e-5, msg=name)


def test_optimizer_built_before_move_sees_the_moved_parameters():
    """On CUDA an optimizer created before `.to()` keeps working: it holds the same objects."""
    torch.manual_seed(2)
    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to("vk")
    loss = model(torch.randn(4, 3, device="vk")).sum()
    loss.backward()
    before = model.weight.detach().clone()
    opt.step()
    assert not torch.equal(model.weight.detach().cpu(), before.cpu())


def test_gradients_move_with_their_parameters():
    model = nn.Linear(3, 2)
    model(torch.randn(2, 3)).sum().backward()
    grad = model.weight.grad.clone()
    weight = model.weight
    model.to("vk")
    assert model.weight is weight
    assert model.weight.grad.device.type == "vk"
    torch.testing.assert_close(model.weight.grad.cpu(), grad)


def test_set_data_across_devices():
    t = torch.zeros(3, requires_grad=True)
    t.data = torch.arange(3.0, device="vk")
    assert t.device.type == "vk" and t.requires_grad and t.is_leaf
    torch.testing.assert_close(t.detach().cpu(), torch.arange(3.0))
    t.data = torch.ones(2, 2)
    assert t.device.type == "cpu" and t.shape == (2, 2)
    # The checks PyTorch makes on every set_data still hold.
    with pytest.raises(RuntimeError, match="floating point"):
        t.data = torch.ones(2, dtype=torch.int64, device="vk")
    # Autograd after the move runs on the device.
    p = nn.Parameter(torch.ones(4))
    p.data = torch.full((4,), 2.0, device="vk")
    (p * p).sum().backward()
    torch.testing.assert_close(p.grad.cpu(), torch.full((4,), 4.0))


def test_shallow_copy_compatibility_answers():
    cpu = torch.zeros(2)
    vk = torch.zeros(2, device="vk")
    ask = torch._has_compatible_shallow_copy_type
    assert ask(cpu, vk) and ask(vk, cpu) and ask(vk, vk)
    assert ask(vk, torch.zeros(2, dtype=torch.float16, device="vk"))
    # Sparse and dense stay incompatible, as between CPU sparse and CPU dense.
    assert not ask(torch.zeros(2).to_sparse(), vk)
    assert ask(torch.zeros(2).to_sparse(), torch.zeros(2).to_sparse()) == ask(
        torch.zeros(2).to_sparse(), torch.zeros(2).to_sparse())


@pytest.mark.parametrize("source", ["cpu", "vk"])
def test_load_state_dict_keeps_identity(source):
    torch.manual_seed(3)
    model = TiedLM().to("vk")
    emb = model.emb.weight
    other = TiedLM().to(source)
    model.load_state_dict(other.state_dict())
    assert model.emb.weight is emb and model.head.weight is emb
    assert emb.device.type == "vk"
    torch.testing.assert_close(emb.detach().cpu(), other.emb.weight.detach().cpu())


def test_load_state_dict_assign():
    model = TiedLM().to("vk")
    state = {k: v.cpu() for k, v in TiedLM().state_dict().items()}
    model.load_state_dict(state, assign=True)
    # assign=True adopts the given tensors (their device), exactly as on CUDA.
    assert model.emb.weight.device.type == "cpu"
