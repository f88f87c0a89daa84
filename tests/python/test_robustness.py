"""Probes of issue 23 that must stay true: repeated out-of-memory errors, a long training run
with flat memory, concurrent Python threads (one on a side stream), Ctrl-C during a long vk
loop, and a truncated checkpoint. Each bounded and fast."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

pytestmark = pytest.mark.usefixtures("strict_native")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_100_out_of_memory_errors_in_a_row():
    torch.vk.synchronize()
    baseline = torch.vk.memory_allocated()
    keep = torch.arange(1000, dtype=torch.float32, device="vk")
    props = torch.vk.get_device_properties(0)
    total = props.total_memory
    # The largest single buffer: one allocation, or (sparse binding) maxBufferSize.
    limit = (props.max_buffer_size if props.sparse_binding else props.max_memory_allocation_size) \
        or total
    ooms = torch.vk.memory_stats()["num_ooms"]
    for i in range(100):
        with pytest.raises(torch.OutOfMemoryError):
            # alternately a request beyond the device and one beyond the buffer size limit
            torch.empty(total + (1 << 30) if i % 2 else limit + (1 << 20), dtype=torch.uint8,
                        device="vk")
    assert torch.vk.memory_stats()["num_ooms"] == ooms + 100
    # The process keeps working: correct results, and the memory is back at its baseline.
    x = torch.linspace(-1, 1, 513, device="vk")
    torch.testing.assert_close((x * keep[:513] + 1).cpu(), torch.linspace(-1, 1, 513) * torch.arange(513.0) + 1)
    del x, keep
    torch.vk.synchronize()
    assert torch.vk.memory_allocated() == baseline


def test_2000_training_steps_keep_memory_flat():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)).to("vk")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(4, 8).to("vk")
    y = torch.randn(4, 2).to("vk")
    marks = {}
    for step in range(2000):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if step in (199, 1999):
            torch.vk.synchronize()
            marks[step] = (torch.vk.memory_allocated(), torch.vk.memory_reserved(), _rss_bytes())
    a0, r0, rss0 = marks[199]
    a1, r1, rss1 = marks[1999]
    assert a1 == a0, f"memory_allocated grew from {a0} to {a1}"
    assert r1 == r0, f"memory_reserved grew from {r0} to {r1}"
    assert rss1 - rss0 < (16 << 20), f"RSS grew by {(rss1 - rss0) >> 20} MiB over 1800 steps"
    assert torch.isfinite(loss).item()


def test_four_threads_compute_concurrently():
    errors = []
    n = 48

    def work(seed, side_stream):
        try:
            g = torch.Generator().manual_seed(seed)
            a = torch.randn(n, n, generator=g)
            b = torch.randn(n, n, generator=g)
            expected = (a @ b).relu().sum(0) + a.mean()
            stream = torch.vk.Stream() if side_stream else None
            for _ in range(25):
                if stream is not None:
                    with torch.vk.stream(stream):
                        got = ((a.to("vk") @ b.to("vk")).relu().sum(0) + a.to("vk").mean()).cpu()
                else:
                    got = ((a.to("vk") @ b.to("vk")).relu().sum(0) + a.to("vk").mean()).cpu()
                torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i, i == 3)) for i in range(4)]
    for t in threads:
        t.start()
    deadline = time.time() + 120
    for t in threads:
        t.join(timeout=max(deadline - time.time(), 1))
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors[0]


def _thread_stacks(pid: int) -> str:
    """Where every thread of process `pid` is (for a hang's report): gdb's backtraces when
    gdb is installed, else each thread's kernel wait channel."""
    if subprocess.run(["which", "gdb"], capture_output=True).returncode == 0:
        r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 12"],
                           capture_output=True, text=True, timeout=60)
        return r.stdout[-6000:]
    lines = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task")):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f, open(f"/proc/{pid}/task/{tid}/wchan") as w:
                lines.append(f"{tid} {f.read().strip()} {w.read().strip()}")
        except OSError:
            pass
    return "\n".join(lines)


def test_ctrl_c_during_a_long_vk_loop_exits_cleanly():
    # The child handles SIGINT as an interactive Python does even when the runner's shell
    # started the suite with SIGINT ignored (background jobs of a non-interactive shell: the
    # ignored disposition is inherited, and Python then leaves it ignored).
    script = textwrap.dedent("""
        import signal, sys, torch, torch_vk
        signal.signal(signal.SIGINT, signal.default_int_handler)
        x = torch.ones(256, 256, device="vk")
        print("ready", flush=True)
        while True:
            x = (x @ x).clamp_(-1, 1)
            x.sum().item()
    """)
    env = dict(os.environ, TORCH_VK_FALLBACK="error")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # well inside the loop
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit 60 s after SIGINT; threads:\n{_thread_stacks(proc.pid)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Python ends on an uncaught KeyboardInterrupt by re-raising SIGINT after its traceback.
    assert proc.returncode in (-signal.SIGINT, 128 + signal.SIGINT), f"exit status {proc.returncode}: {err[-2000:]}"
    assert "KeyboardInterrupt" in err
    assert "Segmentation" not in err and "Aborted" not in err


def test_truncated_checkpoint_raises_cleanly(tmp_path):
    path = tmp_path / "ckpt.pt"
    state = {"w": torch.randn(64, 64).to("vk"), "step": 3}
    torch.save(state, path)
    data = path.read_bytes()
    for cut in (len(data) // 2, len(data) - 7, 100):
        truncated = tmp_path / f"cut{cut}.pt"
        truncated.write_bytes(data[:cut])
        with pytest.raises(Exception) as cpu_error:
            torch.load(truncated, map_location="cpu")
        with pytest.raises(Exception) as vk_error:
            torch.load(truncated, map_location="vk")
        assert type(vk_error.value) is type(cpu_error.value)
    # The process is fine afterwards, and the whole file still loads.
    loaded = torch.load(path, map_location="vk")
    torch.testing.assert_close(loaded["w"].cpu(), state["w"].cpu())
