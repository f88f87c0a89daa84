"""Launchers: torchrun --nproc_per_node=N on one machine (the ranks share the one vk device),
and torchrun --nnodes=2 across two "hosts": two network namespaces joined by a veth pair,
each running one node (the namespaces are created and deleted by the test, as root)."""
import os
import subprocess
import sys
import uuid

import pytest

from launcher import REPO, WORKERS, free_ports, run_command

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_one_node():
    out = run_command(TORCHRUN + ["--standalone", "--nproc_per_node=2",
                                  str(WORKERS / "torchrun_ddp.py")], timeout=180).stdout
    assert "TORCHRUN-DDP-OK 2" in out, out[-4000:]


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


@pytest.fixture
def two_hosts():
    """Two network namespaces A (10.77.0.1) and B (10.77.0.2) joined by a veth pair; yields
    (namespace, address, interface) of each and deletes them afterwards."""
    tag = uuid.uuid4().hex[:6]
    ns = [f"tvk-{tag}-a", f"tvk-{tag}-b"]
    veth = [f"tvka{tag}", f"tvkb{tag}"]
    addrs = ["10.77.0.1", "10.77.0.2"]
    try:
        _ip("netns", "add", ns[0])
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot create network namespaces here (needs root and iproute2): {exc}")
    try:
        _ip("netns", "add", ns[1])
        _ip("link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
        for i in range(2):
            _ip("link", "set", veth[i], "netns", ns[i])
            _ip("-n", ns[i], "addr", "add", f"{addrs[i]}/24", "dev", veth[i])
            _ip("-n", ns[i], "link", "set", veth[i], "up")
            _ip("-n", ns[i], "link", "set", "lo", "up")
        yield list(zip(ns, addrs, veth))
    finally:
        for n in ns:
            _ip("netns", "del", n, check=False)


def test_torchrun_two_nodes(two_hosts):
    port = free_ports(1)[0]
    procs = []
    for node_rank, (ns, _, ifname) in enumerate(two_hosts):
        env = dict(os.environ, GLOO_SOCKET_IFNAME=ifname, TORCH_VK_FALLBACK="error",
                   TORCH_VK_VALIDATION=os.environ.get("TORCH_VK_VALIDATION", "1"),
                   PYTHONPATH=os.pathsep.join([str(REPO), str(WORKERS)]), OMP_NUM_THREADS="1",
                   CUDA_VISIBLE_DEVICES="", TVK_TEST_GLOO_IFNAME=ifname)
        cmd = ["ip", "netns", "exec", ns, *TORCHRUN, "--nnodes=2", f"--node_rank={node_rank}",
               "--nproc_per_node=1", f"--master_addr={two_hosts[0][1]}", f"--master_port={port}",
               str(WORKERS / "torchrun_ddp.py")]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, cwd=str(REPO),
                                      start_new_session=True))
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=180)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait(timeout=10)
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-6000:]
    assert "TORCHRUN-DDP-OK 2" in outs[0], outs[0][-4000:]
