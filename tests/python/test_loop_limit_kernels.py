"""Kernels whose per-invocation loop count grows with the problem, on devices with a loop limit
(lavapipe / llvmpipe ends every loop of an invocation silently after 65535 iterations in total;
DeviceCapabilities::max_loop_iterations). Their launchers split the work (more dispatches with
carried state, or another strategy) where the device has a limit:

  attention (Rows)        key chunks per block of query rows, the online-softmax state carried
                          (Tiled, when asked for, gives way to Rows past the limit)
  reductions              Thread -> Workgroup -> Split, shorter split chunks
  softmax / norm          Thread -> Workgroup
  ctc_loss                time steps in chunks (alpha forward, beta backward)
  multilabel_margin fwd   target positions in passes (hinge sums, is_target, list end carried)
  lu / cholesky / trsm / ldl_factor   elimination steps in ranges (ldl: resume step carried)
  qr / eigh / svd         fewer QR columns / reflectors / Jacobi steps per dispatch
  embedding_bag forward   index positions in passes, the per-column state carried
  embedding_bag backward  sorted positions in passes, a run crossing a pass carried
  cdist / pdist (+ bwd)   the walked dim in passes, each output's accumulator carried
  segment_reduce (+ bwd)  axis positions in passes (accumulator / max-min ties carried)
  mode                    row positions in ranges, the run state carried
  pooling forward         window positions in passes, the running max / sum carried

Each op is checked against the CPU once at a real size past the 65535 limit (where that is
cheap on lavapipe), and all split paths are checked on small tensors in a subprocess with
TORCH_VK_MAX_LOOP_ITERATIONS set small (the launchers then plan for that budget). Kernels that
do not split (pooling backward, upsampling gathers, ...) raise past the limit instead."""
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import torch_vk  # noqa: F401
from helpers import make

pytestmark = pytest.mark.usefixtures("strict_native")


def _close(actual, expected, **tol):
    torch.testing.assert_close(actual.cpu(), expected, **tol)


# ---------------------------------------------------------------- real sizes (past 65535)

def test_attention_many_keys():
    q = make((1, 2, 3, 16), torch.float32, low=-1, high=1, seed=1)
    k = make((1, 2, 70000, 16), torch.float32, low=-1, high=1, seed=2)
    v = make((1, 2, 70000, 16), torch.float32, low=-1, high=1, seed=3)
    ref = F.scaled_dot_product_attention(q, k, v)
    out = F.scaled_dot_product_attention(q.to("vk"), k.to("vk"), v.to("vk"))
    _close(out, ref, atol=1e-5, rtol=1e-4)


def test_attention_tiled_many_keys(monkeypatch):
    """Tiled asked for (TORCH_VK_ATTENTION_ALGO, read at every launch): its key loop would pass
    a device's loop limit here (E = 128: ~15k keys on lavapipe), so Rows runs instead."""
    monkeypatch.setenv("TORCH_VK_ATTENTION_ALGO", "tiled")
    q = make((1, 1, 16, 128), torch.float32, low=-1, high=1, seed=1)
    k = make((1, 1, 20000, 128), torch.float32, low=-1, high=1, seed=2)
    v = make((1, 1, 20000, 128), torch.float32, low=-1, high=1, seed=3)
    ref = F.scaled_dot_product_attention(q, k, v)
    out = F.scaled_dot_product_attention(q.to("vk"), k.to("vk"), v.to("vk"))
    _close(out, ref, atol=1e-5, rtol=1e-4)


def test_outer_sum_65536():
    x = torch.ones(65536, 1024, dtype=torch.uint8)
    _close(x.to("vk").sum(0), x.sum(0))


def test_outer_softmax_long_dim():
    x = make((33000, 1024), torch.float16, low=-2, high=2, seed=4)
    ref = torch.softmax(x.float(), 0).half()
    _close(torch.softmax(x.to("vk"), 0), ref, atol=1e-6, rtol=2e-3)


def test_batch_norm_long_segments():
    x = make((33000, 256), torch.float32, seed=5)
    ref = F.batch_norm(x, None, None, training=True)
    _close(F.batch_norm(x.to("vk"), None, None, training=True), ref, atol=1e-4, rtol=1e-4)


def test_ctc_long_input():
    T, C, N, S = 70000, 5, 1, 10
    lp = make((T, N, C), torch.float32, seed=6).log_softmax(2)
    tg = torch.randint(1, C, (N, S), generator=torch.Generator().manual_seed(7))
    il, tl = torch.full((N,), T), torch.full((N,), S)
    lpv = lp.to("vk").requires_grad_()
    lpc = lp.clone().requires_grad_()
    ref = F.ctc_loss(lpc, tg, il, tl, reduction="sum")
    out = F.ctc_loss(lpv, tg.to("vk"), il.to("vk"), tl.to("vk"), reduction="sum")
    _close(out, ref.detach(), rtol=1e-4, atol=1e-2)
    ref.backward()
    out.backward()
    _close(lpv.grad, lpc.grad, rtol=1e-3, atol=1e-4)


def test_ldl_factor_80():
    a = make((80, 80), torch.float64, seed=8)
    a = a + a.T
    LD, piv = torch.linalg.ldl_factor(a)
    LDv, pivv = torch.linalg.ldl_factor(a.to("vk"))
    _close(pivv, piv)
    _close(LDv, LD, atol=1e-9, rtol=1e-9)


def test_lu_cholesky_triangular_400():
    a = make((400, 400), torch.float64, seed=9)
    LU, piv = torch.linalg.lu_factor(a)
    LUv, pivv = torch.linalg.lu_factor(a.to("vk"))
    _close(pivv, piv)
    _close(LUv, LU, atol=1e-9, rtol=1e-9)
    spd = a @ a.T + 400 * torch.eye(400, dtype=torch.float64)
    _close(torch.linalg.cholesky(spd.to("vk")), torch.linalg.cholesky(spd), atol=1e-9, rtol=1e-9)
    u = a.triu() + 20 * torch.eye(400, dtype=torch.float64)
    b = make((400, 300), torch.float64, seed=10)
    _close(torch.linalg.solve_triangular(u.to("vk"), b.to("vk"), upper=True),
           torch.linalg.solve_triangular(u, b, upper=True), atol=1e-9, rtol=1e-9)


def test_qr_600():
    a = make((600, 600), torch.float64, seed=20)
    q, r = torch.linalg.qr(a.to("vk"))
    _close(q @ r, a, atol=1e-10, rtol=1e-10)
    _close(q.mT @ q, torch.eye(600, dtype=torch.float64), atol=1e-10, rtol=0)
    h, tau = torch.geqrf(a.to("vk"))
    hc, tc = torch.geqrf(a)
    _close(h, hc, atol=1e-10, rtol=1e-10)
    _close(tau, tc, atol=1e-10, rtol=1e-10)


def test_embedding_bag_long_bag():
    w = make((100, 8), torch.float32, seed=11)
    idx = torch.randint(0, 100, (70000,), generator=torch.Generator().manual_seed(12))
    off = torch.tensor([0, 5, 69000])
    for mode in ("sum", "mean", "max"):
        ref = F.embedding_bag(idx, w, off, mode=mode)
        _close(F.embedding_bag(idx.to("vk"), w.to("vk"), off.to("vk"), mode=mode), ref,
               atol=1e-3, rtol=1e-4)


def test_mode_long_row():
    x = torch.randint(0, 7, (2, 70000), generator=torch.Generator().manual_seed(13))
    vals = x.mode(1).values
    v2, i2 = x.to("vk").mode(1)
    _close(v2, vals)
    # The CPU sorts long rows unstably (its index names any occurrence); the device's stable
    # sort names the last occurrence of the most frequent value.
    pos = torch.arange(x.shape[1]).expand_as(x)
    _close(i2, torch.where(x == vals[:, None], pos, -1).amax(1))


def test_distance_long_rows():
    a = make((2, 70000), torch.float32, seed=14)
    b = make((3, 70000), torch.float32, seed=15)
    for p in (1.0, 2.0, float("inf")):
        _close(torch.cdist(a.to("vk"), b.to("vk"), p=p, compute_mode="donot_use_mm_for_euclid_dist"),
               torch.cdist(a, b, p=p, compute_mode="donot_use_mm_for_euclid_dist"), atol=1e-2, rtol=1e-4)
    _close(F.pdist(b.to("vk")), F.pdist(b), atol=1e-2, rtol=1e-4)


def test_pool_long_windows():
    x = make((1, 2, 1, 140000), torch.float32, seed=17)
    xv = x.to("vk")
    for fn in (lambda a: F.max_pool2d(a, (1, 70000), return_indices=True),
               lambda a: F.adaptive_max_pool2d(a, (1, 2), return_indices=True)):
        (v, i), (rv, ri) = fn(xv), fn(x)
        _close(v, rv)
        _close(i, ri)
    _close(F.avg_pool2d(xv, (1, 70000)), F.avg_pool2d(x, (1, 70000)), atol=1e-6, rtol=1e-4)
    _close(F.adaptive_avg_pool2d(xv, (1, 2)), F.adaptive_avg_pool2d(x, (1, 2)), atol=1e-6, rtol=1e-4)
    # the backward gathers over few outputs here (windows do not overlap)
    xc = x.clone().requires_grad_()
    F.max_pool2d(xc, (1, 70000)).sum().backward()
    xg = x.to("vk").requires_grad_()
    F.max_pool2d(xg, (1, 70000)).sum().backward()
    _close(xg.grad, xc.grad)


def test_multilabel_margin_dense_targets():
    C = 4200
    x = make((3, C), torch.float32, seed=22)
    t = torch.full((3, C), -1, dtype=torch.long)
    t[0] = torch.randperm(C, generator=torch.Generator().manual_seed(23))  # every class a target
    t[1, :3000] = torch.arange(3000)
    t[2, :5] = torch.tensor([7, 7, 100, 4199, 0])
    xc = x.clone().requires_grad_()
    ref = F.multilabel_margin_loss(xc, t, reduction="none")
    xv = x.to("vk").requires_grad_()
    out = F.multilabel_margin_loss(xv, t.to("vk"), reduction="none")
    _close(out, ref.detach(), atol=1e-4, rtol=1e-4)
    gr = make((3,), torch.float32, seed=24)
    _close(torch.autograd.grad(out, xv, gr.to("vk"))[0], torch.autograd.grad(ref, xc, gr)[0],
           atol=1e-6, rtol=1e-4)


def test_segment_reduce_long_segment():
    data = make((70000, 2), torch.float32, seed=19)
    lengths = torch.tensor([3, 69990, 7])
    for reduce in ("sum", "mean", "max", "min"):
        ref = torch.segment_reduce(data, reduce, lengths=lengths)
        _close(torch.segment_reduce(data.to("vk"), reduce, lengths=lengths.to("vk")), ref,
               atol=1e-2, rtol=1e-5)


def test_embedding_bag_backward_long_run():
    w = make((100, 8), torch.float32, seed=16)
    idx = torch.zeros(70000, dtype=torch.long)
    idx[::3] = 5
    off = torch.arange(0, 70000, 7)
    for kw in (dict(mode="sum"), dict(mode="mean"), dict(mode="mean", padding_idx=5)):
        wc = w.clone().requires_grad_()
        F.embedding_bag(idx, wc, off, **kw).sum().backward()
        wv = w.to("vk").requires_grad_()
        F.embedding_bag(idx.to("vk"), wv, off.to("vk"), **kw).sum().backward()
        _close(wv.grad, wc.grad, atol=1e-2, rtol=1e-5)


def test_unsplit_kernels_raise_past_the_limit():
    """Kernels that do not split raise instead of returning truncated results where the device
    limits loops; elsewhere they compute the result."""
    limited = torch_vk._C._get_device_properties(0)["max_loop_iterations"] != 0
    if limited:
        with pytest.raises(RuntimeError, match="loop-iteration limit"):
            F.grid_sample(torch.zeros(1, 70000, 2, 2, device="vk"), torch.zeros(1, 1, 1, 2, device="vk"),
                          align_corners=False).cpu()
        xm = make((2, 70000), torch.float32, seed=21).to("vk").requires_grad_()
        tm = torch.full((2, 70000), -1, dtype=torch.long)
        tm[:, 0] = 5
        loss = F.multilabel_margin_loss(xm, tm.to("vk"))
        with pytest.raises(RuntimeError, match="loop-iteration limit"):
            torch.autograd.grad(loss, xm)
        xs = make((1, 1, 2), torch.float32, seed=18).to("vk").requires_grad_()
        y = F.interpolate(xs, size=140000, mode="linear")
        with pytest.raises((RuntimeError, ValueError), match="loop-iteration limit"):
            torch.autograd.grad(y, xs, torch.ones_like(y))
    else:
        _close(F.grid_sample(torch.ones(1, 70000, 2, 2, device="vk"), torch.zeros(1, 1, 1, 2, device="vk"),
                             align_corners=False), torch.ones(1, 70000, 1, 1))


# ---------------------------------------------------------------- every split path, small budget

_SMALL_BUDGET_SCRIPT = r"""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
import torch_vk
torch_vk.set_fallback_mode("error")
from helpers import make
assert torch_vk._C._get_device_properties(0)["max_loop_iterations"] == 300
def close(a, b, **tol):
    torch.testing.assert_close(a.cpu(), b, **tol)
g = torch.Generator().manual_seed(0)

# attention (Rows): key chunks, several row blocks, causal, bool / float masks, GQA, fp16
for dt, tol in ((torch.float32, dict(atol=1e-5, rtol=1e-4)), (torch.float16, dict(atol=2e-3, rtol=2e-3))):
    q = make((2, 4, 37, 16), dt, low=-1, high=1, seed=1)
    k = make((2, 2, 700, 16), dt, low=-1, high=1, seed=2)
    v = make((2, 2, 700, 24), dt, low=-1, high=1, seed=3)
    kk, vv = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
    bm = torch.rand(37, 700, generator=g) > 0.3
    fm = torch.randn(37, 700, generator=g).to(dt)
    for kw in (dict(), dict(attn_mask=bm), dict(attn_mask=fm)):
        ref = F.scaled_dot_product_attention(q.float(), kk.float(), vv.float(),
                                             **{a: (m.float() if m.dtype != torch.bool else m) for a, m in kw.items()}).to(dt)
        out = F.scaled_dot_product_attention(q.to("vk"), k.to("vk"), v.to("vk"), enable_gqa=True,
                                             **{a: m.to("vk") for a, m in kw.items()})
        close(out, ref, **tol)
    q2 = make((1, 1, 700, 16), dt, low=-1, high=1, seed=4)
    ref = F.scaled_dot_product_attention(q2.float(), k[:, :1].float(), v[:, :1].float(), is_causal=True).to(dt)
    close(F.scaled_dot_product_attention(q2.to("vk"), k[:, :1].to("vk"), v[:, :1].to("vk"), is_causal=True), ref, **tol)
# attention backward through the split forward
q = make((1, 2, 5, 16), torch.float32, low=-1, high=1, seed=5).requires_grad_()
k = make((1, 2, 600, 16), torch.float32, low=-1, high=1, seed=6).requires_grad_()
v = make((1, 2, 600, 16), torch.float32, low=-1, high=1, seed=7).requires_grad_()
F.scaled_dot_product_attention(q, k, v).square().sum().backward()
qv, kv, vv = (t.detach().to("vk").requires_grad_() for t in (q, k, v))
F.scaled_dot_product_attention(qv, kv, vv).square().sum().backward()
for a, b in ((qv, q), (kv, k), (vv, v)):
    close(a.grad, b.grad, atol=1e-5, rtol=1e-4)

# reductions: Thread -> Workgroup (outer), Workgroup -> Split, multi-dim reduced index spaces
x = make((400, 1100), torch.float32, seed=8)
close(x.to("vk").sum(0), x.sum(0), atol=1e-3, rtol=1e-5)
close(x.to("vk").amax(0), x.amax(0))
close(x.to("vk").argmax(0), x.argmax(0))
close(x.to("vk").var(0), x.var(0), atol=1e-4, rtol=1e-4)
y = make((60000,), torch.float32, seed=9)
close(y.to("vk").sum(), y.sum(), atol=1e-2, rtol=1e-5)
close(y.to("vk").argmin(), y.argmin())
close(y.to("vk").norm(), y.norm(), atol=1e-3, rtol=1e-5)
z = make((30, 40, 50), torch.float32, seed=10)
zv = z.to("vk")
close(zv.sum((0, 2)), z.sum((0, 2)), atol=1e-3, rtol=1e-5)
close(zv.permute(2, 0, 1).sum((1, 2)), z.permute(2, 0, 1).sum((1, 2)), atol=1e-3, rtol=1e-5)
close(zv.logsumexp((0, 2)), z.logsumexp((0, 2)), atol=1e-4, rtol=1e-5)
close(torch.ones(2000, 1024, dtype=torch.uint8, device="vk").sum(0), torch.ones(2000, 1024, dtype=torch.uint8).sum(0))

# softmax / log_softmax over a strided dim with many rows (Thread -> Workgroup), backward
s = make((400, 1100), torch.float32, seed=11).requires_grad_()
sv = s.detach().to("vk").requires_grad_()
for fn in (torch.softmax, torch.log_softmax):
    out, ref = fn(sv, 0), fn(s, 0)
    close(out, ref.detach(), atol=1e-6, rtol=1e-5)
    gr = make((400, 1100), torch.float32, seed=12)
    gv, = torch.autograd.grad(out, sv, gr.to("vk"))
    gc, = torch.autograd.grad(ref, s, gr)
    close(gv, gc, atol=1e-5, rtol=1e-4)

# norm: batch norm over long segments with many channels (Thread -> Workgroup), backward
b = make((500, 300), torch.float32, seed=13).requires_grad_()
bv = b.detach().to("vk").requires_grad_()
w = make((300,), torch.float32, seed=14)
out = F.batch_norm(bv, None, None, weight=w.to("vk"), training=True)
ref = F.batch_norm(b, None, None, weight=w, training=True)
close(out, ref.detach(), atol=1e-5, rtol=1e-4)
gr = make((500, 300), torch.float32, seed=15)
close(torch.autograd.grad(out, bv, gr.to("vk"))[0], torch.autograd.grad(ref, b, gr)[0], atol=1e-4, rtol=1e-4)

# ctc: time chunks (forward ascending, backward descending), several samples and lengths
T, C, N, S = 300, 6, 3, 8
lp = make((T, N, C), torch.float32, seed=16).log_softmax(2)
tg = torch.randint(1, C, (N, S), generator=g)
il, tl = torch.tensor([300, 251, 7]), torch.tensor([8, 5, 3])
lpc = lp.clone().requires_grad_()
lpv = lp.to("vk").requires_grad_()
ref = F.ctc_loss(lpc, tg, il, tl, reduction="sum", zero_infinity=True)
out = F.ctc_loss(lpv, tg.to("vk"), il.to("vk"), tl.to("vk"), reduction="sum", zero_infinity=True)
close(out, ref.detach(), atol=1e-3, rtol=1e-5)
ref.backward(); out.backward()
close(lpv.grad, lpc.grad, atol=2e-4, rtol=1e-3)  # float32 rounding (both ~4e-4 from float64)

# linalg: step ranges of getrf / potrf / trsm / sytf2 (resume step across 2x2 pivot blocks)
a = make((3, 24, 24), torch.float64, seed=17)
LU, piv = torch.linalg.lu_factor(a)
LUv, pivv = torch.linalg.lu_factor(a.to("vk"))
close(pivv, piv); close(LUv, LU, atol=1e-10, rtol=1e-10)
r = make((2, 30, 20), torch.float64, seed=18)
LU, piv = torch.linalg.lu_factor(r)
LUv, pivv = torch.linalg.lu_factor(r.to("vk"))
close(pivv, piv); close(LUv, LU, atol=1e-10, rtol=1e-10)
sing = a.clone(); sing[1, :, 3] = 0
close(torch.linalg.lu_factor_ex(sing.to("vk")).info, torch.linalg.lu_factor_ex(sing).info)
spd = a @ a.mT + 24 * torch.eye(24, dtype=torch.float64)
close(torch.linalg.cholesky(spd.to("vk")), torch.linalg.cholesky(spd), atol=1e-10, rtol=1e-10)
bad = spd.clone(); bad[2, 10, 10] = -1000.0
close(torch.linalg.cholesky_ex(bad.to("vk")).info, torch.linalg.cholesky_ex(bad).info)
rhs = make((3, 24, 13), torch.float64, seed=19)
for upper in (True, False):
    tri = (a.triu() if upper else a.tril()) + 8 * torch.eye(24, dtype=torch.float64)
    close(torch.linalg.solve_triangular(tri.to("vk"), rhs.to("vk"), upper=upper),
          torch.linalg.solve_triangular(tri, rhs, upper=upper), atol=1e-10, rtol=1e-10)
    close(torch.linalg.solve_triangular(tri.mT.to("vk"), rhs.to("vk"), upper=not upper),
          torch.linalg.solve_triangular(tri.mT, rhs, upper=not upper), atol=1e-10, rtol=1e-10)
for seed in range(4):
    m = make((2, 12, 12), torch.float64, seed=20 + seed)
    m = m + m.mT
    if seed == 1: m[:, range(12), range(12)] = 0  # 2x2 pivot blocks
    LD, piv = torch.linalg.ldl_factor(m)
    LDv, pivv = torch.linalg.ldl_factor(m.to("vk"))
    close(pivv, piv); close(LDv, LD, atol=1e-10, rtol=1e-10)

# orthogonal family: fewer Jacobi steps / QR columns / reflectors per dispatch
o = make((2, 24, 20), torch.float64, seed=44)
qv, rv = torch.linalg.qr(o.to("vk"), mode="complete")
close(qv @ rv, o, atol=1e-10, rtol=1e-10)
close(qv.mT @ qv, torch.eye(24, dtype=torch.float64).expand(2, 24, 24), atol=1e-10, rtol=0)
sym = make((2, 24, 24), torch.float64, seed=45); sym = sym + sym.mT
w, v = torch.linalg.eigh(sym.to("vk"))
close(w, torch.linalg.eigvalsh(sym), atol=1e-9, rtol=1e-9)
close(v @ torch.diag_embed(w) @ v.mT, sym, atol=1e-9, rtol=1e-9)
u, sv, vh = torch.linalg.svd(o.to("vk"), full_matrices=False)
close(sv, torch.linalg.svdvals(o), atol=1e-9, rtol=1e-9)
close(u @ torch.diag_embed(sv) @ vh, o, atol=1e-9, rtol=1e-9)

# embedding_bag forward: index passes; sum / mean / max, per_sample_weights, padding, empty bags
wt = make((50, 5), torch.float32, seed=30)
idx = torch.randint(0, 50, (900,), generator=g)
off = torch.tensor([0, 3, 3, 400, 899])
for mode in ("sum", "mean", "max"):
    for kw in (dict(), dict(padding_idx=idx[7].item())):
        ref = F.embedding_bag(idx, wt, off, mode=mode, **kw)
        close(F.embedding_bag(idx.to("vk"), wt.to("vk"), off.to("vk"), mode=mode, **kw), ref, atol=1e-5, rtol=1e-5)
psw = make((900,), torch.float32, seed=31)
close(F.embedding_bag(idx.to("vk"), wt.to("vk"), off.to("vk"), mode="sum", per_sample_weights=psw.to("vk")),
      F.embedding_bag(idx, wt, off, mode="sum", per_sample_weights=psw), atol=1e-5, rtol=1e-5)
for mode in (1, 2):  # bag_size (mean / max) and max_indices from the last pass
    ref = torch.ops.aten._embedding_bag(wt, idx, off, False, mode)
    out = torch.ops.aten._embedding_bag(wt.to("vk"), idx.to("vk"), off.to("vk"), False, mode)
    close(out[0], ref[0], atol=1e-5, rtol=1e-5)
    close(out[2], ref[2])
    if mode == 2: close(out[3], ref[3])

# embedding_bag backward: position passes, runs crossing them (carried)
idxb = torch.randint(0, 6, (1000,), generator=g)
idxb[:400] = 2
offb = torch.tensor([0, 1, 400, 401, 700])
for kw in (dict(mode="sum"), dict(mode="mean"), dict(mode="mean", padding_idx=3)):
    wc = wt[:6].clone().requires_grad_()
    F.embedding_bag(idxb, wc, offb, **kw).square().sum().backward()
    wv = wt[:6].to("vk").requires_grad_()
    F.embedding_bag(idxb.to("vk"), wv, offb.to("vk"), **kw).square().sum().backward()
    close(wv.grad, wc.grad, atol=1e-4, rtol=1e-5)

# scale_grad_by_freq through the passes (the full run length scales every pass), against the
# math: grad_weight[i] = sum over positions q with index i of grad[bag(q)] / count(i)
wv = wt[:6].to("vk").requires_grad_()
gout = make((5, 5), torch.float32, seed=40)
F.embedding_bag(idxb.to("vk"), wv, offb.to("vk"), mode="sum", scale_grad_by_freq=True).backward(gout.to("vk"))
bag_of = torch.bucketize(torch.arange(1000), offb, right=True) - 1
counts = torch.bincount(idxb, minlength=6).clamp(min=1).float()
expected = torch.zeros(6, 5).index_add(0, idxb, gout[bag_of]) / counts[:, None]
close(wv.grad, expected, atol=1e-4, rtol=1e-5)

# cdist / pdist and their backward: passes over the walked dim
c1 = make((2, 3, 700), torch.float64, seed=33).requires_grad_()
c2 = make((2, 4, 700), torch.float64, seed=34).requires_grad_()
for p in (0.0, 1.0, 1.5, 2.0, float("inf")):
    ref = torch.cdist(c1, c2, p=p, compute_mode="donot_use_mm_for_euclid_dist")
    v1, v2 = c1.detach().to("vk").requires_grad_(), c2.detach().to("vk").requires_grad_()
    out = torch.cdist(v1, v2, p=p, compute_mode="donot_use_mm_for_euclid_dist")
    close(out, ref.detach(), atol=1e-10, rtol=1e-10)
    if p != 0.0:
        close(torch.autograd.grad(out.sum(), v1)[0], torch.autograd.grad(ref.sum(), c1)[0], atol=1e-10, rtol=1e-10)
c3 = make((2, 300, 3), torch.float64, seed=37).requires_grad_()  # cdist_backward walks 300 rows
ref = torch.cdist(c1[:, :, :3], c3, p=1.5)
v1, v3 = c1[:, :, :3].detach().to("vk").requires_grad_(), c3.detach().to("vk").requires_grad_()
out = torch.cdist(v1, v3, p=1.5)
close(out, ref.detach(), atol=1e-10, rtol=1e-10)
close(torch.autograd.grad(out.sum(), v1)[0], torch.autograd.grad(ref.sum(), c1)[0][:, :, :3], atol=1e-10, rtol=1e-10)
tall = make((300, 3), torch.float64, seed=35).requires_grad_()  # pdist_backward walks 300 rows
wide = make((5, 700), torch.float64, seed=36)
close(F.pdist(wide.to("vk")), F.pdist(wide), atol=1e-10, rtol=1e-10)
ref = F.pdist(tall)
tv = tall.detach().to("vk").requires_grad_()
out = F.pdist(tv)
close(out, ref.detach(), atol=1e-10, rtol=1e-10)
close(torch.autograd.grad(out.sum(), tv)[0], torch.autograd.grad(ref.sum(), tall)[0], atol=1e-10, rtol=1e-10)

# segment_reduce forward / backward: axis passes (max / min: ties counted first), initial values
sd = make((2, 700, 3), torch.float64, seed=38).round()  # ties for max / min
lens = torch.tensor([[0, 300, 400], [700, 0, 0]])
for reduce in ("sum", "mean", "max", "min", "prod"):
    for kw in (dict(), dict(initial=0.5)):
        if reduce == "prod": sdr = (sd / 8).exp()
        else: sdr = sd
        sc = sdr.clone().requires_grad_()
        ref = torch.segment_reduce(sc, reduce, lengths=lens, axis=1, unsafe=True, **kw)
        sv = sdr.to("vk").requires_grad_()
        out = torch.segment_reduce(sv, reduce, lengths=lens.to("vk"), axis=1, unsafe=True, **kw)
        close(out, ref.detach(), atol=1e-9, rtol=1e-9, equal_nan=True)
        gr = make(tuple(ref.shape), torch.float64, seed=39)
        close(torch.autograd.grad(out, sv, gr.to("vk"))[0], torch.autograd.grad(ref, sc, gr)[0],
              atol=1e-9, rtol=1e-9)

# pooling forward: window passes (max with indices, dilation, padding, ceil_mode; avg with and
# without count_include_pad, divisor_override; adaptive; channels-last; 3-D; every dtype)
for dt in (torch.float32, torch.float16, torch.float64, torch.int64):
    xp = make((2, 3, 40, 41), dt, seed=41)
    if dt == torch.int64: xp = xp * 7
    xpv = xp.to("vk")
    for kw in (dict(kernel_size=20), dict(kernel_size=(17, 19), stride=(5, 6), padding=8, dilation=(1, 2)),
               dict(kernel_size=(20, 18), stride=7, ceil_mode=True)):
        if dt != torch.int64:
            (v, i), (rv, ri) = F.max_pool2d(xpv, return_indices=True, **kw), F.max_pool2d(xp, return_indices=True, **kw)
            close(v, rv); close(i, ri)
            close(F.max_pool2d(xpv.to(memory_format=torch.channels_last), **kw), rv)
        else:
            close(F.max_pool2d(xpv, **kw), F.max_pool2d(xp, **kw))
    for kw in (dict(kernel_size=20), dict(kernel_size=(18, 19), stride=5, padding=9, count_include_pad=False),
               dict(kernel_size=(18, 19), stride=5, padding=9, divisor_override=7)):
        if dt == torch.int64 and "divisor_override" in kw: continue
        tol = dict(atol=1e-2, rtol=1e-3) if dt == torch.float16 else dict(atol=1e-5, rtol=1e-5)
        close(F.avg_pool2d(xpv, **kw), F.avg_pool2d(xp, **kw), **tol)
    if dt in (torch.float32, torch.float64):
        close(F.adaptive_avg_pool2d(xpv, (2, 3)), F.adaptive_avg_pool2d(xp, (2, 3)), atol=1e-6, rtol=1e-6)
        (v, i), (rv, ri) = F.adaptive_max_pool2d(xpv, (2, 3), True), F.adaptive_max_pool2d(xp, (2, 3), True)
        close(v, rv); close(i, ri)
x3 = make((1, 2, 4, 14, 15), torch.float32, seed=42)
(v, i), (rv, ri) = F.max_pool3d(x3.to("vk"), (2, 12, 12), return_indices=True), F.max_pool3d(x3, (2, 12, 12), return_indices=True)
close(v, rv); close(i, ri)
close(F.avg_pool3d(x3.to("vk"), (3, 12, 11), stride=2), F.avg_pool3d(x3, (3, 12, 11), stride=2), atol=1e-6, rtol=1e-5)
# the backward does not split: overlapping windows past the limit raise
xo = make((1, 1, 600), torch.float32, seed=43).to("vk").requires_grad_()
yo = F.max_pool1d(xo, 300, stride=1)
try:
    torch.autograd.grad(yo, xo, torch.ones_like(yo))
    raise AssertionError("no error")
except RuntimeError as e:
    assert "loop-iteration limit" in str(e), e

# multilabel_margin_loss forward: target passes (lists ending in the first, a later or no pass)
xl = make((4, 300), torch.float32, seed=46)
tl_ = torch.full((4, 300), -1, dtype=torch.long)
tl_[0] = torch.randperm(300, generator=g)
tl_[1, :250] = torch.randint(0, 300, (250,), generator=g)
tl_[2, :3] = torch.tensor([1, 2, 299])
close(F.multilabel_margin_loss(xl.to("vk"), tl_.to("vk"), reduction="none"),
      F.multilabel_margin_loss(xl, tl_, reduction="none"), atol=1e-4, rtol=1e-5)

# mode: row ranges
def last_occurrence(x, vals, dim):
    pos = torch.arange(x.shape[dim]).view([-1 if d == dim else 1 for d in range(x.dim())]).expand_as(x)
    return torch.where(x == vals.unsqueeze(dim), pos, -1).amax(dim)
xm = torch.randint(0, 5, (7, 900), generator=g)
vals = xm.mode(1).values
v2, i2 = xm.to("vk").mode(1)
close(v2, vals); close(i2, last_occurrence(xm, vals, 1))
xf = make((900, 3), torch.float32, seed=32).round()
vals = xf.mode(0).values
v2, i2 = xf.to("vk").mode(0)
close(v2, vals); close(i2, last_occurrence(xf, vals, 0))
torch.vk.synchronize()
print("ok")
"""


def test_small_budget_split_paths():
    """All split paths above with TORCH_VK_MAX_LOOP_ITERATIONS=300 (a budget of 262 loop
    iterations per invocation), on small tensors against the CPU."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TORCH_VK_MAX_LOOP_ITERATIONS="300")
    r = subprocess.run([sys.executable, "-c", _SMALL_BUDGET_SCRIPT, here], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_budget_reported():
    """The device property exists: lavapipe reports its 65535 limit, other devices 0 (unless
    TORCH_VK_MAX_LOOP_ITERATIONS overrides it)."""
    props = torch_vk._C._get_device_properties(0)
    if "TORCH_VK_MAX_LOOP_ITERATIONS" not in os.environ and "llvmpipe" in str(props.get("name", "")):
        assert props["max_loop_iterations"] == 65535
    else:
        assert props["max_loop_iterations"] >= 0
