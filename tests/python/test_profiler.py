"""torch.profiler on vk: device kernels with their device times, correlated to the ops that
launched them, in key_averages() and the Chrome trace; the legacy use_device="vk" profiler."""
import json
import time

import pytest
import torch
import torch_vk  # noqa: F401
from torch.profiler import ProfilerActivity, profile, record_function

pytestmark = pytest.mark.skipif(ProfilerActivity.PrivateUse1 not in torch.profiler.supported_activities(),
                                reason="this torch has no Kineto PrivateUse1 profiler registry")


def step(model, x):
    with record_function("train_step"):
        loss = model(x).relu().sum()
        loss.backward()
        return loss.item()


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 16).to("vk")
    x = torch.randn(8, 32, device="vk")
    step(model, x)  # pipelines created before the profile
    torch.vk.synchronize()
    start = time.perf_counter_ns()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        step(model, x)
    wall_us = (time.perf_counter_ns() - start) / 1000
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        trace = json.load(f)["traceEvents"]
    return prof, trace, wall_us


def test_kernels_have_device_times_within_the_wall_time(profiled):
    _, trace, wall_us = profiled
    kernels = [e for e in trace if e.get("cat") == "kernel"]
    names = {k["name"] for k in kernels}
    # The shaders that ran: the GEMM of the Linear layer, relu, the sum and its backward.
    assert any(n.startswith("gemm.") for n in names), names
    assert any("relu" in n for n in names) and any(n.startswith("reduce.sum") for n in names), names
    assert all(k["dur"] > 0 for k in kernels)
    assert sum(k["dur"] for k in kernels) <= wall_us
    # Device rows: a process "vk" with a thread per stream.
    meta = [e for e in trace if e.get("ph") == "M"]
    vk_pids = {e["pid"] for e in meta if e["name"] == "process_name" and e["args"]["name"] == "vk"}
    assert vk_pids and all(k["pid"] in vk_pids for k in kernels)
    assert any(e["name"] == "thread_name" and e["args"]["name"] == "vk:0 stream 0" for e in meta)


def test_kernels_are_correlated_to_their_ops(profiled):
    _, trace, _ = profiled
    ops = {e["args"]["External id"]: e for e in trace
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    kernels = [e for e in trace if e.get("cat") == "kernel"]
    launched_by = {}
    for k in kernels:
        op = ops[k["args"]["External id"]]  # every kernel has the op that launched it
        assert op["name"].startswith("aten::")
        assert k["ts"] >= op["ts"]  # a kernel never starts before its launch
        launched_by.setdefault(op["name"], set()).add(k["name"])
    assert any(n.startswith("gemm.") for n in launched_by.get("aten::addmm", set())), launched_by
    assert any("relu" in n for n in launched_by.get("aten::relu", set())), launched_by
    # Launch -> kernel arrows.
    flows = [e for e in trace if e.get("cat") == "ac2g"]
    commands = [e for e in trace if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert {e["ph"] for e in flows} == {"s", "f"} and len(flows) == 2 * len(commands)
    # The record_function range and the host wait of .item().
    assert any(e.get("cat") == "user_annotation" and e["name"] == "train_step" for e in trace)
    assert any(e.get("cat") == "privateuse1_runtime" and e["name"] == "vkWaitSemaphores"
               for e in trace)


def test_key_averages_report_device_time_per_op(profiled):
    prof, _, _ = profiled
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["aten::addmm"].device_time_total > 0
    assert averages["aten::relu"].device_time_total > 0
    assert averages["aten::addmm"].self_device_time_total > 0
    table = prof.key_averages().table(sort_by="self_device_time_total", row_limit=10)
    assert "Self VK" in table and "aten::addmm" in table


def test_profiling_off_records_nothing():
    x = torch.randn(16, device="vk")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        (x * 2).sum().item()
    assert all(e.self_device_time_total == 0 for e in prof.key_averages())
    # Commands recorded outside a profile leave nothing for the next one.
    for _ in range(50):
        x.add_(1)
    torch.vk.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        x.mul_(2)
        torch.vk.synchronize()
    timed = {e.key for e in prof.key_averages() if e.self_device_time_total > 0}
    assert timed and all("mul" in k for k in timed), timed


def test_legacy_profiler_use_device():
    x = torch.randn(32, 32, device="vk")
    (x @ x).sum().item()
    with torch.autograd.profiler.profile(use_device="vk") as prof:
        (x @ x).relu().sum().item()
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["aten::mm"].device_time_total > 0
    assert averages["aten::relu"].device_time_total > 0
