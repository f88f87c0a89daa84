"""Graph capture and replay (torch_vk._C._CapturedGraph, L1 runtime/graph.h): a captured run
records its kernels once; replay() records them again with the same pipelines, push constants
and addresses. References come from PyTorch on the CPU."""
import pytest
import torch

import torch_vk

pytestmark = pytest.mark.usefixtures("strict_native")

_C = torch_vk._C


def capture(fn):
    g = _C._CapturedGraph()
    _C._begin_capture(g)
    try:
        out = fn()
    finally:
        _C._end_capture(g)
    return g, out


def reference(x, w):
    return torch.relu(x * 2 + 1) @ w


def test_replay_sees_new_static_inputs():
    gen = torch.Generator().manual_seed(0)
    x_cpu = torch.randn(8, 16, generator=gen)
    w_cpu = torch.randn(16, 4, generator=gen)
    x, w = x_cpu.to("vk"), w_cpu.to("vk")
    torch.vk.synchronize()

    g, y = capture(lambda: torch.relu(x * 2 + 1) @ w)
    assert g.valid and g.captured and not g.capturing
    assert g.invalid_reason == ""
    assert g.command_count >= 3  # mul, add, relu (fused or not) and the matmul
    assert g.pool_bytes > 0  # y and the intermediates come from the graph's pool
    torch.testing.assert_close(y.cpu(), reference(x_cpu, w_cpu))  # the capture run computed

    for _ in range(3):
        new = torch.randn(8, 16, generator=gen)
        x.copy_(new)  # outside the capture: the graph reads x's memory
        g.replay()
        torch.testing.assert_close(y.cpu(), reference(new, w_cpu))


def test_dispatch_counter_grows_by_command_count():
    x = torch.randn(4, 8).to("vk")
    w = torch.randn(8, 8).to("vk")
    g, y = capture(lambda: torch.relu(x * 2 + 1) @ w)
    torch.vk.synchronize()
    torch_vk.reset_stats()
    for replays in (1, 2, 5):
        before = torch_vk.stats()
        for _ in range(replays):
            g.replay()
        after = torch_vk.stats()
        assert after["dispatches"] - before["dispatches"] == replays * g.command_count
        assert after["host_waits"] == before["host_waits"]  # replay never waits
        assert after.get("transfers", 0) == before.get("transfers", 0)
    torch.testing.assert_close(y.cpu(), reference(x.cpu(), w.cpu()))


@pytest.mark.parametrize("read", ["item", "cpu", "synchronize"])
def test_host_reads_inside_capture_raise_and_invalidate(read):
    x_cpu = torch.arange(12, dtype=torch.float32)
    x = x_cpu.to("vk")
    g = _C._CapturedGraph()
    _C._begin_capture(g)
    try:
        y = x * 3
        with pytest.raises(RuntimeError, match="not allowed while a graph is being captured"):
            if read == "item":
                y.sum().item()
            elif read == "cpu":
                y.cpu()
            else:
                torch.vk.synchronize()
    finally:
        _C._end_capture(g)
    assert not g.valid
    assert "not allowed while a graph is being captured" in g.invalid_reason
    with pytest.raises(RuntimeError, match="invalid"):
        g.replay()
    # The process keeps working normally.
    torch.testing.assert_close((x * 3 + 1).cpu(), x_cpu * 3 + 1)
    assert (x * 2).sum().item() == pytest.approx(float((x_cpu * 2).sum()))


def test_upload_inside_capture_raises():
    x = torch.zeros(5, device="vk")
    g = _C._CapturedGraph()
    _C._begin_capture(g)
    try:
        with pytest.raises(RuntimeError, match="not allowed while a graph is being captured"):
            x.copy_(torch.ones(5))
    finally:
        _C._end_capture(g)
    assert not g.valid


def test_misuse_errors():
    x = torch.ones(4, device="vk")
    g = _C._CapturedGraph()
    with pytest.raises(RuntimeError, match="never captured"):
        g.replay()
    g, _ = capture(lambda: x + 1)
    _C._end_capture(g)  # a no-op once ended
    with pytest.raises(RuntimeError, match="captured only once"):
        _C._begin_capture(g)
    other = torch.vk.Stream()
    with torch.vk.stream(other):
        with pytest.raises(ValueError, match="stream it was captured on"):
            g.replay()
    outer = _C._CapturedGraph()
    _C._begin_capture(outer)
    try:
        with pytest.raises(RuntimeError, match="already capturing"):
            _C._begin_capture(_C._CapturedGraph())
    finally:
        _C._end_capture(outer)
    g.replay()


def test_replay_loop_of_200_steps():
    gen = torch.Generator().manual_seed(1)
    w_cpu = torch.randn(16, 16, generator=gen) * 0.2
    b_cpu = torch.randn(16, generator=gen)
    h_cpu = torch.randn(4, 16, generator=gen)
    w, b, h = w_cpu.to("vk"), b_cpu.to("vk"), h_cpu.to("vk")
    torch.vk.synchronize()

    def step():
        h.copy_(torch.tanh(h @ w + b))

    g, _ = capture(step)  # the capture run is step 1
    for _ in range(199):
        g.replay()
    ref = h_cpu
    for _ in range(200):
        ref = torch.tanh(ref @ w_cpu + b_cpu)
    torch.testing.assert_close(h.cpu(), ref, rtol=1e-4, atol=1e-5)


def test_pool_memory_is_released_with_the_graph():
    x = torch.randn(64, 64).to("vk")
    torch.vk.synchronize()
    torch.vk.empty_cache()
    reserved = torch.vk.memory_reserved()
    g, y = capture(lambda: torch.relu(x * 2 + 1) @ x)
    pool = g.pool_bytes
    assert pool > 0
    assert torch.vk.memory_reserved() == reserved + pool  # pool memory counts as reserved
    g.replay()
    expected = reference(x.cpu(), x.cpu())
    torch.testing.assert_close(y.cpu(), expected)
    del g  # y (the output) outlives the graph
    torch.testing.assert_close(y.cpu(), expected)
    del y
    torch.vk.empty_cache()
    assert torch.vk.memory_reserved() == reserved


def _random_ops(x, probs):
    return (torch.rand(1000, device="vk"), torch.nn.functional.dropout(x, 0.5),
            torch.randn(7, 3, device="vk").t(), torch.randint(0, 10, (50,), device="vk"),
            torch.randperm(20, device="vk"), torch.bernoulli(probs))


def test_random_ops_draw_new_numbers_on_every_replay_like_eager():
    """Random kernels of a capture read the generator's seed and counter base from the graph's
    Philox block, rewritten by each replay: replays draw what eager calls would draw at the
    same generator state, and leave the generator where eager calls leave it."""
    x = torch.ones(1000, device="vk")
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]],
                         device="vk")
    torch.manual_seed(3)
    g, out = capture(lambda: _random_ops(x, probs))
    assert g.valid, g.invalid_reason
    got = [[o.cpu() for o in out]]
    for _ in range(3):
        g.replay()
        got.append([o.cpu() for o in out])
    after = torch.rand(4, device="vk").cpu()

    torch.manual_seed(3)
    want = [[o.cpu() for o in _random_ops(x, probs)] for _ in range(4)]
    want_after = torch.rand(4, device="vk").cpu()
    for call, (g_outs, w_outs) in enumerate(zip(got, want)):
        for k, (a, b) in enumerate(zip(g_outs, w_outs)):
            assert torch.equal(a, b), (call, k)
    assert torch.equal(after, want_after)
    assert not torch.equal(got[0][0], got[1][0])  # fresh numbers


def test_random_ops_follow_a_reseed_between_replays():
    torch.manual_seed(0)
    g, out = capture(lambda: torch.rand(64, device="vk"))
    torch.manual_seed(11)
    g.replay()
    torch.manual_seed(11)
    assert torch.equal(out.cpu(), torch.rand(64, device="vk").cpu())


def test_random_op_with_its_own_generator_invalidates_the_graph():
    gen = torch.Generator(device="vk").manual_seed(5)
    g, out = capture(lambda: torch.rand(16, device="vk", generator=gen))
    assert not g.valid and "generator" in g.invalid_reason
    gen.manual_seed(5)
    assert torch.equal(out.cpu(), torch.rand(16, device="vk", generator=gen).cpu())  # ran right
    with pytest.raises(RuntimeError, match="invalid"):
        g.replay()
