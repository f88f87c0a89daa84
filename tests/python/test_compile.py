"""torch.compile on vk: the default backend and backend="vk", fused kernels, training, shapes.

Compiled results are compared with eager vk runs and with the CPU. Fused kernels compute each
op the way the eager kernel does (fp32 opmath, rounding to the op's dtype after every op), so
float32 results agree to a few ulps with eager.
"""
import copy
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.testing import assert_close

import torch_vk
import torch_vk.compiler

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from helpers import make  # noqa: E402
from test_models import MLP, SmallCNN, TinyGPT, gpt_loss, make_optimizer  # noqa: E402

VK = torch.device("vk")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _dispatches(fn, *args):
    torch.vk.synchronize()
    before = torch_vk.stats()["dispatches"]
    out = fn(*args)
    torch.vk.synchronize()
    return out, torch_vk.stats()["dispatches"] - before


def assert_compiled_forward_divides_dispatches(model, x, factor=2):
    """The compiled no_grad forward matches eager with at most 1 / factor of its dispatches."""
    compiled = torch.compile(model)
    with torch.no_grad():
        compiled(x)
        expected, eager_dispatches = _dispatches(model, x)
        out, compiled_dispatches = _dispatches(compiled, x)
    assert_close(out, expected, atol=1e-5, rtol=1e-5)
    assert compiled_dispatches * factor <= eager_dispatches, (compiled_dispatches, eager_dispatches)


def _fused_kernels_created(fn):
    before = torch_vk.compiler.stats()["fused_kernels"]
    out = fn()
    return out, torch_vk.compiler.stats()["fused_kernels"] - before


def pointwise_chain(x, y):
    z = x * 2.0 + y
    z = F.gelu(z) - torch.sigmoid(y) * 0.5
    return torch.where(z > 0, z, z * 0.1).clamp(-2.0, 2.0)


# ---------------------------------------------------------------- entry points


@pytest.mark.parametrize("backend", [None, "vk"])
def test_compile_entry_points_match_eager(backend, strict_native):
    x, y = make((8, 33), torch.float32).to(VK), make((8, 33), torch.float32, seed=1).to(VK)
    compiled = torch.compile(pointwise_chain) if backend is None else \
        torch.compile(pointwise_chain, backend=backend)
    (out, created) = _fused_kernels_created(lambda: compiled(x, y))
    assert out.device.type == "vk"
    assert created >= 1
    assert_close(out, pointwise_chain(x, y), atol=1e-6, rtol=1e-6)
    assert_close(out.cpu(), pointwise_chain(x.cpu(), y.cpu()), atol=1e-5, rtol=1e-5)


def test_fusion_issues_one_dispatch_for_a_pointwise_chain(strict_native):
    x, y = make((4, 64), torch.float32).to(VK), make((4, 64), torch.float32, seed=1).to(VK)
    compiled = torch.compile(pointwise_chain)
    compiled(x, y)  # compile
    _, eager_dispatches = _dispatches(pointwise_chain, x, y)
    out, compiled_dispatches = _dispatches(compiled, x, y)
    assert compiled_dispatches == 1
    assert eager_dispatches >= 8
    assert_close(out, pointwise_chain(x, y), atol=1e-6, rtol=1e-6)


def test_cpu_graphs_are_not_routed():
    gm = torch.fx.symbolic_trace(lambda a: a + 1)
    assert not torch_vk.compiler.backend.graph_uses_vk(gm, [torch.ones(2)])
    assert torch_vk.compiler.backend.graph_uses_vk(gm, [torch.ones(2, device=VK)])


def test_device_interface_registered():
    torch.compile(lambda a: a)  # registers on first use
    from torch._dynamo.device_interface import get_interface_for_device

    interface = get_interface_for_device("vk")
    assert interface.device_count() == torch.vk.device_count()
    assert interface.is_available()
    interface.synchronize()


# ---------------------------------------------------------------- dtypes, layouts, shapes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fused_float_dtypes_match_eager(dtype, strict_native):
    x = make((6, 40), dtype).to(VK)
    y = make((40,), dtype, seed=2).to(VK)

    def fn(a, b):
        return (torch.tanh(a * b + 1.0) * a - b / 3.0).exp().to(dtype)

    out = torch.compile(fn)(x, y)
    assert out.dtype == dtype
    # Every op rounds to `dtype` like the eager kernels do, so compiled and eager agree up to
    # contraction of a * b + c into one fma by the shader compiler.
    eager_tol = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    assert_close(out, fn(x, y), atol=eager_tol, rtol=eager_tol)
    cpu_tol = {torch.float32: 1e-5, torch.float16: 2e-2, torch.bfloat16: 5e-2}[dtype]
    assert_close(out.cpu().float(), fn(x.cpu(), y.cpu()).float(), atol=cpu_tol, rtol=cpu_tol)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.uint8])
def test_fused_integer_dtypes_match_cpu(dtype, strict_native):
    x = torch.randint(0, 50, (5, 17), dtype=dtype)
    y = torch.randint(1, 7, (17,), dtype=dtype)

    def fn(a, b):
        return torch.where(a > b, a * b + 3, (a - b) * 2) // b + (a % b)

    out = torch.compile(fn)(x.to(VK), y.to(VK))
    assert out.dtype == dtype
    assert torch.equal(out.cpu(), fn(x, y))


def test_fused_bool_logic(strict_native):
    a = torch.rand(7, 9) > 0.5
    b = torch.rand(9) > 0.3
    x = make((7, 9), torch.float32)

    def fn(m, n, v):
        keep = (~m & n) | (v > 1.0)
        return torch.where(keep, v * 2.0, -v), keep

    out, keep = torch.compile(fn)(a.to(VK), b.to(VK), x.to(VK))
    ref, ref_keep = fn(a, b, x)
    assert torch.equal(keep.cpu(), ref_keep)
    assert_close(out.cpu(), ref)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast", "zero_dim", "empty"])
def test_fused_layouts(layout, strict_native):
    base = make((12, 10), torch.float32)
    if layout == "transposed":
        x, y = base.t(), make((10, 12), torch.float32, seed=3)
    elif layout == "sliced":
        x, y = base[::2, 1:], make((6, 9), torch.float32, seed=3)
    elif layout == "broadcast":
        x, y = base, make((12, 1), torch.float32, seed=3)
    elif layout == "zero_dim":
        x, y = base, torch.tensor(0.75)
    else:
        x, y = base[:0], make((0, 10), torch.float32, seed=3)

    def fn(a, b):
        return torch.relu(a - b) * 3.0 + b

    vk_y = y.to(VK)
    out = torch.compile(fn)(x.to(VK) if layout != "transposed" else base.to(VK).t(), vk_y)
    assert out.shape == fn(x, y).shape
    assert_close(out.cpu(), fn(x, y))


def test_new_shapes_recompile_or_run_symbolically(strict_native):
    compiled = torch.compile(pointwise_chain)
    for n in (5, 9, 17, 33):
        x, y = make((3, n), torch.float32).to(VK), make((3, n), torch.float32, seed=1).to(VK)
        assert_close(compiled(x, y).cpu(), pointwise_chain(x.cpu(), y.cpu()), atol=1e-5, rtol=1e-5)


def test_symbolic_graphs_replay_one_capture_per_shape(strict_native):
    """After a second shape Dynamo compiles a graph with symbolic sizes; it is captured once
    per concrete shape and replayed for that shape (like CUDA graph trees)."""
    def fn(x, y):
        return torch.softmax(torch.sin(x) * y + 1.0, dim=-1).sum(0)

    compiled = torch.compile(fn)
    before = torch_vk.compiler.stats()
    for _ in range(4):
        for n in (5, 9, 17):
            x, y = make((3, n), torch.float32, seed=n), make((3, n), torch.float32, seed=n + 1)
            assert_close(compiled(x.to(VK), y.to(VK)).cpu(), fn(x, y), atol=1e-5, rtol=1e-5)
    after = torch_vk.compiler.stats()
    # The first n = 5 call compiles a static graph; n = 9 recompiles with a symbolic length,
    # and from then on every n (5 included) goes to that graph. Per shape it runs once, is
    # captured on its second call and replayed on the later ones: n = 9 and 17 are replayed
    # twice, n = 5 (a new shape for the symbolic graph in the second round) once.
    assert after["captures"] - before["captures"] == 3
    assert after["replays"] - before["replays"] == 5
    assert after["capture_failures"] == before["capture_failures"]


def test_compiled_gpt_with_varying_lengths_trains_like_eager(strict_native):
    torch.manual_seed(0)
    model = TinyGPT()
    lengths = [8, 12, 16, 8, 12, 16, 8, 12]
    batches = [(torch.randint(0, 29, (2, t)).to(VK), torch.randint(0, 29, (2, t)).to(VK))
               for t in lengths]
    eager_model, compiled_model = copy.deepcopy(model).to(VK), copy.deepcopy(model).to(VK)
    eager_losses = _train(eager_model, batches, gpt_loss, "sgd", False)
    before = torch_vk.compiler.stats()
    compiled_losses = _train(compiled_model, batches, gpt_loss, "sgd", True)
    after = torch_vk.compiler.stats()
    assert after["replays"] > before["replays"]
    assert_close(torch.tensor(compiled_losses), torch.tensor(eager_losses), atol=1e-5, rtol=1e-4)
    for p_eager, p_compiled in zip(eager_model.parameters(), compiled_model.parameters()):
        assert_close(p_compiled.cpu(), p_eager.cpu(), atol=1e-4, rtol=1e-4)


def test_graph_breaks_fall_back_to_eager_per_graph(strict_native):
    def fn(a):
        b = torch.sin(a) * 2.0 + 1.0
        if float(b.sum()) > 0:  # data-dependent branch: a graph break
            return torch.cos(b) * b - 1.0
        return b * 3.0

    x = make((4, 8), torch.float32).to(VK)
    assert_close(torch.compile(fn)(x).cpu(), fn(x.cpu()), atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------- models and training


def _train(model, batches, loss_fn, optimizer, compile_model):
    opt = make_optimizer(optimizer, model.parameters())
    run = torch.compile(model) if compile_model else model
    losses = []
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(run(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return [float(l) for l in losses]


def _compare_training(model, batches, loss_fn, optimizer):
    eager_model = copy.deepcopy(model).to(VK)
    compiled_model = copy.deepcopy(model).to(VK)
    vk_batches = [(x.to(VK), y.to(VK)) for x, y in batches]
    eager_losses = _train(eager_model, vk_batches, loss_fn, optimizer, False)
    compiled_losses = _train(compiled_model, vk_batches, loss_fn, optimizer, True)
    assert_close(torch.tensor(compiled_losses), torch.tensor(eager_losses), atol=1e-5, rtol=1e-4)
    for p_eager, p_compiled in zip(eager_model.parameters(), compiled_model.parameters()):
        assert_close(p_compiled.cpu(), p_eager.cpu(), atol=1e-4, rtol=1e-4)
    cpu_losses = _train(model, batches, loss_fn, optimizer, False)
    assert_close(torch.tensor(compiled_losses), torch.tensor(cpu_losses), atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("optimizer", ["sgd", "adamw_fused"])
def test_compiled_mlp_trains_like_eager(optimizer, strict_native):
    torch.manual_seed(0)
    batches = [(torch.randn(16, 12), torch.randint(0, 5, (16,))) for _ in range(3)]
    _compare_training(MLP(), batches, F.cross_entropy, optimizer)


def test_compiled_cnn_trains_like_eager(strict_native):
    torch.manual_seed(0)
    batches = [(torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))) for _ in range(2)]
    _compare_training(SmallCNN(), batches, F.cross_entropy, "sgd")


@pytest.mark.parametrize("fused_attention", [True, False])
def test_compiled_gpt_trains_like_eager(fused_attention, strict_native):
    torch.manual_seed(0)
    batches = [(torch.randint(0, 29, (2, 16)), torch.randint(0, 29, (2, 16))) for _ in range(2)]
    model = TinyGPT(fused_attention=fused_attention)
    _compare_training(model, batches, gpt_loss, "adamw_fused")


def test_compiled_training_with_dropout_replays_and_tracks_eager(strict_native):
    """Dropout in the forward graph: the compiled steps are replayed (fresh masks from the
    graph's Philox block) and draw the masks eager draws at the same generator state, so the
    two trainings match step by step."""

    class DropoutMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.proj = nn.Linear(12, 32), nn.Linear(32, 5)

        def forward(self, x):
            return self.proj(F.dropout(F.gelu(self.fc(x)), p=0.3, training=self.training))

    torch.manual_seed(0)
    model = DropoutMLP()
    batches = [(torch.randn(16, 12).to(VK), torch.randint(0, 5, (16,)).to(VK)) for _ in range(6)]
    eager_model, compiled_model = copy.deepcopy(model).to(VK), copy.deepcopy(model).to(VK)
    torch.manual_seed(1)
    eager_losses = _train(eager_model, batches, F.cross_entropy, "sgd", False)
    before = torch_vk.compiler.stats()
    torch.manual_seed(1)
    compiled_losses = _train(compiled_model, batches, F.cross_entropy, "sgd", True)
    after = torch_vk.compiler.stats()
    assert after["replays"] - before["replays"] >= 4  # forward and backward, steps 3-6
    assert after["capture_failures"] == before["capture_failures"]
    assert_close(torch.tensor(compiled_losses), torch.tensor(eager_losses), atol=1e-5, rtol=1e-4)
    for p_eager, p_compiled in zip(eager_model.parameters(), compiled_model.parameters()):
        assert_close(p_compiled.cpu(), p_eager.cpu(), atol=1e-5, rtol=1e-4)


def test_compiled_forward_uses_fewer_dispatches_for_gelu_mlp(strict_native):
    # A GPT-2 style MLP: its "new GELU" is a chain of eight element-wise ops in eager mode.
    class NewGeluMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(32, 128)
            self.proj = nn.Linear(128, 32)

        def forward(self, x):
            h = self.fc(x)
            h = 0.5 * h * (1.0 + torch.tanh(0.7978845608 * (h + 0.044715 * torch.pow(h, 3.0))))
            return x + self.proj(h)

    model = NewGeluMLP().to(VK).eval()
    x = torch.randn(2, 8, 32, device=VK)
    assert_compiled_forward_divides_dispatches(model, x)


# ---------------------------------------------------------------- kernel cache across processes


def test_second_process_reuses_compiled_kernels(tmp_path, monkeypatch):
    # This process compiles into an empty cache directory; a fresh process then finds every
    # kernel of the same function on disk and compiles none.
    script = textwrap.dedent("""
        import torch, torch_vk, torch_vk.compiler
        x = torch.arange(12.0, device="vk").view(3, 4)
        f = torch.compile(lambda a: torch.relu(a * 2.0 - 3.25) + 1.0)
        assert torch.equal(f(x).cpu(), torch.relu(x.cpu() * 2.0 - 3.25) + 1.0)
        s = torch_vk._C._generated_kernel_stats()
        print(s["compiles"], s["disk_hits"])
    """)
    monkeypatch.setenv("TORCH_VK_CACHE_DIR", str(tmp_path))
    before = torch_vk._C._generated_kernel_stats()
    x = torch.arange(12.0, device=VK).view(3, 4)
    f = torch.compile(lambda a: torch.relu(a * 2.0 - 3.25) + 1.0)
    assert torch.equal(f(x).cpu(), torch.relu(x.cpu() * 2.0 - 3.25) + 1.0)
    compiled_here = torch_vk._C._generated_kernel_stats()["compiles"] - before["compiles"]
    assert compiled_here >= 1
    assert list((tmp_path / "spirv").glob("*.spv"))
    second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert second.returncode == 0, second.stderr
    compiles, disk_hits = map(int, second.stdout.split()[-2:])
    assert compiles == 0 and disk_hits == compiled_here


# ---------------------------------------------------------------- optimizers and input mutations


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw"])
def test_compiled_optimizer_step_fuses_per_parameter(name, strict_native):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 5)).to(VK)
    twin = copy.deepcopy(model)
    make = {"sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
            "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
            "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1)}[name]
    eager_opt, compiled_opt = make(model.parameters()), make(twin.parameters())
    compiled_step = torch.compile(compiled_opt.step)
    x = torch.randn(6, 12, device=VK)
    for _ in range(3):
        for m, opt, step in ((model, eager_opt, eager_opt.step), (twin, compiled_opt, compiled_step)):
            opt.zero_grad()
            m(x).square().mean().backward()
            step()
    for a, b in zip(model.parameters(), twin.parameters()):
        assert_close(b, a, atol=1e-6, rtol=1e-5)
    twin(x).square().mean().backward()
    _, dispatches = _dispatches(compiled_step)
    # One generated kernel per parameter updates it and its optimizer state in place.
    assert dispatches == len(list(twin.parameters()))


def test_input_mutation_is_stored_in_place(strict_native):
    def update(buf, x, scale):
        buf.mul_(0.9).add_(x * scale)   # an in-place update of a graph input
        return buf.sum()

    buf = make((5, 6), torch.float32).to(VK)
    ref = buf.clone()
    x = make((5, 6), torch.float32, seed=4).to(VK)
    compiled = torch.compile(update)
    for step in range(3):
        scale = torch.tensor(0.5 + step)      # a host scalar, passed by value
        out = compiled(buf, x, scale)
        expected = update(ref, x, scale)
        assert_close(buf, ref, atol=1e-6, rtol=1e-6)
        assert_close(out, expected, atol=1e-5, rtol=1e-5)


class NanoGPTBlock(nn.Module):
    """GPT-2's block as nanoGPT writes it: explicit causal attention, the tanh GELU as a formula."""

    def __init__(self, dim=32, heads=4, seq=16):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.c_attn, self.c_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.c_fc, self.mlp_proj = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = F.softmax(att.masked_fill(~self.bias[:t, :t], float("-inf")), dim=-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))
        h = self.c_fc(self.ln_2(x))
        h = 0.5 * h * (1.0 + torch.tanh(0.7978845608 * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.mlp_proj(h)


def test_compiled_transformer_block_forward_halves_dispatches(strict_native):
    torch.manual_seed(0)
    block = NanoGPTBlock().to(VK).eval()
    x = torch.randn(2, 16, 32, device=VK)
    assert_compiled_forward_divides_dispatches(block, x)


# ---------------------------------------------------------------- replay


def test_steady_state_calls_replay_the_captured_graph(strict_native):
    torch.manual_seed(0)
    block = NanoGPTBlock().to(VK)
    twin = copy.deepcopy(block)
    opt_eager = torch.optim.SGD(block.parameters(), lr=0.05, momentum=0.9)
    opt_compiled = torch.optim.SGD(twin.parameters(), lr=0.05, momentum=0.9)
    run, step = torch.compile(twin), torch.compile(opt_compiled.step)
    before = torch_vk.compiler.stats()
    kept = []
    for _ in range(5):
        x = torch.randn(2, 16, 32, device=VK)  # a new input tensor every step
        opt_eager.zero_grad()
        eager_loss = block(x).square().mean()
        eager_loss.backward()
        opt_eager.step()
        opt_compiled.zero_grad()
        loss = run(x).square().mean()
        loss.backward()
        step()
        kept.append((loss, eager_loss))  # outputs kept across replays keep their values
    after = torch_vk.compiler.stats()
    assert after["captures"] - before["captures"] == 3  # forward, backward, optimizer step
    assert after["replays"] - before["replays"] >= 6
    assert after["capture_failures"] == before["capture_failures"]
    for loss, eager_loss in kept:
        assert_close(loss, eager_loss, atol=1e-6, rtol=1e-5)
    for a, b in zip(block.parameters(), twin.parameters()):
        assert_close(b, a, atol=1e-5, rtol=1e-5)


def test_graphs_with_random_ops_replay_fresh_numbers_like_eager(strict_native):
    from torch_vk.compiler.replay import not_replayable_reason

    gm = torch.fx.symbolic_trace(lambda a: a)
    assert not_replayable_reason(gm) is not None  # inputs without tensor metadata

    def fn(a):
        return F.dropout(a * 2.0, p=0.5, training=True) + 1.0

    compiled = torch.compile(fn)
    x = torch.ones(64, 64, device=VK)

    def masks(f):
        torch.manual_seed(0)
        dropped = [(f(x) == 1.0).cpu() for _ in range(5)]  # dropped: 0 * 2 / 0.5 + 1 = 1
        return dropped, torch.rand(3, device=VK).cpu()

    before = torch_vk.compiler.stats()
    compiled_masks, compiled_next = masks(compiled)
    after = torch_vk.compiler.stats()
    assert after["replays"] - before["replays"] == 3  # calls 3-5: the first runs, the second captures
    assert after["capture_failures"] == before["capture_failures"]
    # Every call draws a new mask, as eager dropout does: the same masks as eager, and the
    # generator ends where eager leaves it.
    assert all(not torch.equal(compiled_masks[0], m) for m in compiled_masks[1:])
    eager_masks, eager_next = masks(fn)
    assert all(torch.equal(a, b) for a, b in zip(compiled_masks, eager_masks))
    assert torch.equal(compiled_next, eager_next)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_inside_compiled_model_matches_eager(dtype, strict_native):
    torch.manual_seed(0)
    block = NanoGPTBlock().to(VK)
    x = torch.randn(2, 16, 32, device=VK)
    compiled = torch.compile(block)
    with torch.autocast("vk", dtype=dtype):
        expected = block(x)
        out = compiled(x)
    assert out.dtype == expected.dtype
    tol = 2e-3 if dtype == torch.float16 else 2e-2
    assert_close(out.float(), expected.float(), atol=tol, rtol=tol)
    with torch.autocast("vk", dtype=dtype):
        compiled(x).float().square().mean().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in block.parameters())


def test_replayed_outputs_kept_by_the_caller_keep_their_values(strict_native):
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).to(VK)
    run = torch.compile(lambda x: torch.tanh(lin(x)) * 2.0)
    before = torch_vk.compiler.stats()["replays"]
    inputs = [torch.randn(4, 8, device=VK) for _ in range(6)]
    with torch.no_grad():
        outs = [run(x) for x in inputs]  # every output stays alive across the later replays
        views = [o[1:, ::2] for o in outs]
        expected = [torch.tanh(lin(x)) * 2.0 for x in inputs]
    assert torch_vk.compiler.stats()["replays"] - before >= 3
    for out, view, ref in zip(outs, views, expected):
        assert_close(out, ref, atol=1e-6, rtol=1e-6)
        assert_close(view, ref[1:, ::2], atol=1e-6, rtol=1e-6)


def test_replayed_outputs_outlive_the_compiled_graph(strict_native):
    # A replayed call hands out views of the graph's memory pool: dropping the compiled code
    # (Dynamo's cache reset, the compiled function garbage-collected) must not leave them
    # pointing at freed or reused memory.
    import gc

    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).to(VK)
    x = torch.randn(4, 8, device=VK)
    with torch.no_grad():
        expected = torch.tanh(lin(x)) * 2.0
        run = torch.compile(lambda t: torch.tanh(lin(t)) * 2.0)
        before = torch_vk.compiler.stats()["replays"]
        outs = [run(x) for _ in range(4)]
        assert torch_vk.compiler.stats()["replays"] > before
        view = outs[-1][:, 1:]
        del run
        torch._dynamo.reset()
        gc.collect()
        torch.vk.empty_cache()  # the pool's memory goes back to the driver
        # New allocations may take the freed pool's memory; the outputs must keep their values.
        noise = [torch.full((4, 8), 7.0, device=VK) for _ in range(8)]
    for out in outs:
        assert_close(out, expected, atol=1e-6, rtol=1e-6)
    assert_close(view, expected[:, 1:], atol=1e-6, rtol=1e-6)
    assert all(bool((n == 7.0).all()) for n in noise)


def test_replay_on_another_stream_or_with_a_moved_parameter_runs_correctly(strict_native):
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).to(VK)
    run = torch.compile(lambda x: torch.relu(lin(x)) + 1.0)
    x = torch.randn(4, 8, device=VK)
    with torch.no_grad():
        for _ in range(4):
            out = run(x)
        assert_close(out, torch.relu(lin(x)) + 1.0)
        side = torch.vk.Stream()
        with torch.vk.stream(side):
            on_side = run(x)  # not the capture stream: the graph runs op by op there
            side_ref = torch.relu(lin(x)) + 1.0
        side.synchronize()
        assert_close(on_side, side_ref)
        lin.weight = torch.nn.Parameter(torch.randn(8, 8, device=VK))  # moves an in-place input
        for _ in range(4):
            out = run(x)
            assert_close(out, torch.relu(lin(x)) + 1.0)


def test_fused_group_whose_only_inputs_are_host_scalars(strict_native):
    """A group fed only by a CPU 0-dim tensor (static-cache generation's `cache_position`
    copied to the device and offset) has no tensor input to take the device from."""
    def f(x, start):
        return x * 2, start.to(x.device) + 5

    compiled = torch.compile(f)
    x = torch.randn(4, device=VK)
    for i in range(4):  # the third call on is a replay
        start = torch.tensor(i)
        doubled, pos = compiled(x, start)
        assert pos.device.type == "vk"
        assert pos.item() == i + 5
        assert_close(doubled.cpu(), x.cpu() * 2)
