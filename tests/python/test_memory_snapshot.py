"""torch.vk.memory: allocator history and snapshots in torch.cuda.memory's format, read by
PyTorch's own torch.cuda._memory_viz."""
import base64
import json
import pickle
import re

import pytest
import torch
import torch_vk  # noqa: F401
from torch.cuda import _memory_viz

MiB = 1 << 20


@pytest.fixture
def history():
    torch.vk.synchronize()
    torch.vk.memory._record_memory_history(max_entries=100000, clear_history=True)
    yield torch.vk.memory
    torch.vk.memory._record_memory_history(enabled=None, clear_history=True)


def allocate_weights():  # the name the snapshot's stacks must show
    return torch.ones(300, 300, device="vk"), torch.zeros(3 * MiB, dtype=torch.uint8, device="vk")


def blocks(snapshot, state=None):
    return [b for s in snapshot["segments"] for b in s["blocks"] if state in (None, b["state"])]


def test_snapshot_segments_blocks_and_stacks(history):
    weights, big = allocate_weights()
    snap = history._snapshot()
    # Segments tile their blocks exactly; totals are the allocator's statistics.
    for seg in snap["segments"]:
        assert seg["device"] == 0 and seg["segment_type"] in ("small", "large")
        assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]
        addresses = [b["address"] for b in seg["blocks"]]
        assert addresses[0] == seg["address"] and addresses == sorted(addresses)
        assert seg["allocated_size"] == sum(b["size"] for b in seg["blocks"]
                                            if b["state"] == "active_allocated")
    assert sum(s["total_size"] for s in snap["segments"]) == torch.vk.memory_reserved()
    assert sum(b["size"] for b in blocks(snap, "active_allocated")) == torch.vk.memory_allocated()
    by_address = {b["address"]: b for b in blocks(snap, "active_allocated")}
    for t, nbytes in ((weights, 300 * 300 * 4), (big, 3 * MiB)):
        b = by_address[t.untyped_storage().data_ptr()]
        assert b["requested_size"] == nbytes and b["size"] >= nbytes
        names = [f["name"] for f in b["frames"]]
        assert "allocate_weights" in names, names
        assert any(f["filename"].endswith("test_memory_snapshot.py") for f in b["frames"])
    # The large tensor got a segment of its own pool type.
    big_segment = next(s for s in snap["segments"]
                       if s["address"] <= big.untyped_storage().data_ptr() < s["address"] + s["total_size"])
    assert big_segment["segment_type"] == "large"


def test_trace_records_every_action_in_order(history):
    x = torch.empty(5000, device="vk")
    address = x.untyped_storage().data_ptr()
    del x
    torch.vk.empty_cache()
    trace = history._snapshot()["device_traces"][0]
    actions = [e["action"] for e in trace]
    assert actions[-1] == "snapshot"
    alloc = next(e for e in trace if e["action"] == "alloc" and e["addr"] == address)
    size = alloc["size"]
    assert size == 20480  # 20000 bytes rounded up to a multiple of 512
    i = trace.index(alloc)
    freed = [e for e in trace[i:] if e["addr"] == address and e["action"].startswith("free")]
    assert [e["action"] for e in freed][:2] == ["free_requested", "free_completed"]
    assert all(e["size"] == size for e in freed)
    # Frees carry the stack of the free (context="all"), allocations theirs.
    assert any(f["name"] == "test_trace_records_every_action_in_order" for f in alloc["frames"])
    assert any(f["name"] == "test_trace_records_every_action_in_order" for f in freed[0]["frames"])
    times = [e["time_us"] for e in trace]
    assert times == sorted(times)
    # empty_cache returned the now empty segments.
    assert "segment_free" in actions
    for e in trace:
        assert set(("action", "addr", "size", "stream", "time_us", "frames")) <= set(e)


def test_out_of_memory_is_in_the_trace(history):
    free, total = torch.vk.mem_get_info()
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(total * 4, dtype=torch.uint8, device="vk")
    oom = [e for e in history._snapshot()["device_traces"][0] if e["action"] == "oom"]
    assert oom and oom[-1]["size"] == total * 4 and "device_free" in oom[-1]
    assert torch.ones(3, device="vk").sum().item() == 3  # still usable


def test_max_entries_keeps_the_newest(history):
    history._record_memory_history(max_entries=10, clear_history=True)
    for _ in range(20):
        torch.empty(100, device="vk")
    trace = history._snapshot()["device_traces"][0]
    assert len(trace) == 10 and trace[-1]["action"] == "snapshot"


def test_disabled_records_nothing():
    torch.vk.memory._record_memory_history(enabled=None, clear_history=True)
    keep = torch.ones(100, device="vk")
    snap = torch.vk.memory._snapshot()
    assert snap["device_traces"][0] == []
    assert all(b["frames"] == [] for b in blocks(snap))
    del keep


def test_state_only_keeps_stacks_without_a_trace():
    torch.vk.memory._record_memory_history(enabled="state", stacks="python", clear_history=True)
    try:
        weights, _ = allocate_weights()
        snap = torch.vk.memory._snapshot()
        assert snap["device_traces"][0] == []
        b = next(b for b in blocks(snap, "active_allocated")
                 if b["address"] == weights.untyped_storage().data_ptr())
        assert "allocate_weights" in [f["name"] for f in b["frames"]]
    finally:
        torch.vk.memory._record_memory_history(enabled=None, clear_history=True)


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        torch.vk.memory._record_memory_history(enabled="sometimes")
    with pytest.raises(ValueError):
        torch.vk.memory._record_memory_history(stacks="cpp")
    with pytest.raises(ValueError):
        torch.vk.memory._record_memory_history(max_entries=0)


def test_dump_and_render_with_memory_viz(history, tmp_path):
    weights, big = allocate_weights()
    y = (weights * 2).sum()
    del big
    path = tmp_path / "snapshot.pickle"
    history._dump_snapshot(str(path))
    with open(path, "rb") as f:
        snap = pickle.load(f)
    assert snap["segments"] and snap["device_traces"][0]
    # The HTML viewers embed the pickle for MemoryViz.js: it must round-trip.
    for html in (_memory_viz.trace_plot(snap), _memory_viz.segment_plot(snap)):
        (tmp_path / "plot.html").write_text(html)
        payload = json.loads(re.search(r"const local_files = (\[.*?\])\n", html, re.S).group(1))
        data = base64.b64decode(payload[0]["base64"])
        assert pickle.loads(data) == snap
    # The text renderers read every field they need.
    summary = _memory_viz.segsum(snap)
    assert f"segments: {len(snap['segments'])}" in summary
    assert "TOTAL MEM" in _memory_viz.trace(snap)
    flame = _memory_viz.segments(snap, format_flamegraph=lambda lines: lines)
    assert "allocate_weights" in flame and "active_allocated" in flame
    assert "allocate_weights" in _memory_viz.memory(snap, format_flamegraph=lambda lines: lines)
    del y


def test_summary_matches_the_snapshot(history):
    weights, big = allocate_weights()
    snap = history._snapshot()
    allocated = sum(b["size"] for b in blocks(snap, "active_allocated"))
    reserved = sum(s["total_size"] for s in snap["segments"])
    stats = torch.vk.memory_stats()
    assert stats["allocated_bytes.all.current"] == allocated
    assert stats["reserved_bytes.all.current"] == reserved
    assert stats["segment.all.current"] == len(snap["segments"])
    assert stats["allocation.all.current"] == len(blocks(snap, "active_allocated"))
    text = torch.vk.memory_summary()
    row = next(line for line in text.splitlines() if line.startswith("| Allocated memory"))
    current = row.split("|")[2].split()
    unit = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[current[1]]
    assert int(current[0]) == allocated // unit
    assert "Reserved memory" in text and "Allocations" in text
