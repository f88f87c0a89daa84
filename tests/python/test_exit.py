"""A process whose last step is a backward on vk exits cleanly.

Autograd's vk device thread can hold the last reference to a finished graph task (and so to
result tensors that own Python objects) while the main thread already finalizes the
interpreter; dropping them then aborted the process ("terminate called without an active
exception", pytorch/pytorch#190489). torch_vk drains that thread from an atexit hook. The race
needs a busy machine to show, so the script runs in several processes at once; before the
hook 3 to 7 in 16 aborted on a 2-core machine."""
import subprocess
import sys

SCRIPT = r"""
import torch, torch_vk
x = torch.randn(3, device="vk", requires_grad=True)
torch.autograd.grad(x * 2, (x,), torch.ones(3, device="vk"))  # the result is dropped at once
"""


def test_last_backward_then_exit():
    rounds, concurrent = 4, 4
    for _ in range(rounds):
        procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(concurrent)]
        for p in procs:
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0, (p.returncode, err[-2000:])
