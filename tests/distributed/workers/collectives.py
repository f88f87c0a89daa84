"""Every c10d collective on vk tensors against the same collective on CPU tensors (Gloo),
through one "vkgloo" process group: each case runs once on the CPU (the reference) and then on
vk synchronously and asynchronously, on the default stream and on a side stream. Results must
be identical (Gloo does the same host arithmetic on the same values; non-reducing ops move
bits). A case whose CPU run raises must raise the same exception type on vk.

Run by tests/distributed/test_collectives.py with 2 and 3 ranks, with unified memory (vk
tensors handed to Gloo in place) and with TORCH_VK_DISABLE_UNIFIED_MEMORY=1 (staged through
pinned host buffers)."""

from __future__ import annotations

import os
import warnings

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

from common import RANK, WORLD, Checks, init, make_input, same

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
          torch.uint8, torch.bool]
FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
REDUCE_OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG,
              "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
              "max": dist.ReduceOp.MAX}
checks = Checks()
warnings.filterwarnings("ignore", category=FutureWarning)


def outcome(fn, dev: str, async_op: bool):
    try:
        return fn(dev, async_op), None
    except Exception as exc:  # noqa: BLE001 - compared with the CPU's exception
        return None, exc


def compare(name: str, fn, ref_fn=None) -> None:
    """fn(dev, async_op) -> list of result tensors. ref_fn(dev, async_op) gives the expected
    results on the CPU when they are not fn's own CPU results (emulated ops)."""
    ref, ref_exc = outcome(ref_fn or fn, "cpu", False)
    side = torch.vk.Stream()
    for async_op in (False, True):
        for on_side in (False, True):
            label = f"{name} async={async_op} side_stream={on_side}"

            def one():
                if on_side:
                    side.wait_stream(torch.vk.current_stream())
                    with torch.vk.stream(side):
                        got, exc = outcome(fn, "vk", async_op)
                        got = None if got is None else [t.cpu() for t in got]
                else:
                    got, exc = outcome(fn, "vk", async_op)
                if ref_exc is not None:
                    assert exc is not None and type(exc) is type(ref_exc), (
                        f"CPU raised {ref_exc!r}, vk {'returned' if exc is None else 'raised'} "
                        f"{exc!r}")
                    return
                if exc is not None:
                    raise exc
                same(got, ref, label)

            checks.run(label, one)


def done(work, async_op):
    if async_op:
        assert work is not None
        work.wait()
    return work


# ---------------------------------------------------------------------------- reductions

def all_reduce_case(dtype, op, shape=(7, 3), layout="contiguous"):
    """Non-contiguous vk tensors are reduced element by element; the reference reduces a
    contiguous copy on the CPU (Gloo itself reads a non-dense CPU tensor's memory as if it
    were dense: a sliced CPU tensor gives wrong sums there)."""
    def fn(dev, async_op, dense=False):
        x = make_input(shape, dtype, 1).to(dev)
        if layout == "transposed":
            x = x.t()
        elif layout == "sliced":
            x = x[1::2]
        if dense:
            x = x.contiguous()
        done(dist.all_reduce(x, op=op, async_op=async_op), async_op)
        return [x]
    return fn, (lambda dev, async_op: fn(dev, async_op, dense=True))


def premul_case(dtype, factor_kind):
    """PREMUL_SUM(f) == SUM of f * x (reference: the product on the CPU, then SUM)."""
    def factor(dev):
        return 0.375 if factor_kind == "double" else torch.tensor(0.375, dtype=dtype, device=dev)

    def fn(dev, async_op):
        x = make_input((5, 4), dtype, 2).to(dev)
        op = dist._make_nccl_premul_sum(factor(dev))
        done(dist.all_reduce(x, op=op, async_op=async_op), async_op)
        return [x]

    def ref(dev, async_op):
        x = make_input((5, 4), dtype, 2) * factor("cpu")
        dist.all_reduce(x)
        return [x]
    return fn, ref


def reduce_case(dtype, op):
    def fn(dev, async_op):
        x = make_input((6,), dtype, 3).to(dev)
        done(dist.reduce(x, dst=WORLD - 1, op=op, async_op=async_op), async_op)
        return [x] if RANK == WORLD - 1 else []
    return fn


def reduce_premul_case(dtype):
    def fn(dev, async_op):
        x = make_input((6,), dtype, 3).to(dev)
        op = dist._make_nccl_premul_sum(0.5)
        done(dist.reduce(x, dst=0, op=op, async_op=async_op), async_op)
        return [x]  # the root gets the sum, the others keep their input

    def ref(dev, async_op):
        x = make_input((6,), dtype, 3)
        y = x * 0.5
        dist.reduce(y, dst=0)
        return [y if RANK == 0 else x]
    return fn, ref


def reduce_scatter_case(dtype, op, tensor_api):
    n = 5

    def fn(dev, async_op):
        out = torch.zeros(n, dtype=dtype, device=dev)
        if tensor_api:
            inp = make_input((WORLD * n,), dtype, 4).to(dev)
            work = dist.reduce_scatter_tensor(out, inp, op=op, async_op=async_op)
        else:
            inp = [make_input((n,), dtype, 40 + j).to(dev) for j in range(WORLD)]
            work = dist.reduce_scatter(out, inp, op=op, async_op=async_op)
        done(work, async_op)
        return [out]
    return fn


def reduce_scatter_premul_case(dtype):
    n = 3

    def fn(dev, async_op):
        out = torch.zeros(n, dtype=dtype, device=dev)
        inp = make_input((WORLD * n,), dtype, 5).to(dev)
        keep = inp.clone()
        op = dist._make_nccl_premul_sum(0.25)
        done(dist.reduce_scatter_tensor(out, inp, op=op, async_op=async_op), async_op)
        return [out, inp - keep]  # the input is not modified

    def ref(dev, async_op):
        out = torch.zeros(n, dtype=dtype)
        dist.reduce_scatter_tensor(out, make_input((WORLD * n,), dtype, 5) * 0.25)
        return [out, torch.zeros(WORLD * n, dtype=dtype)]
    return fn, ref


# ---------------------------------------------------------------------------- data movement

def broadcast_case(dtype, shape):
    def fn(dev, async_op):
        x = make_input(shape, dtype, 6).to(dev)
        done(dist.broadcast(x, src=WORLD - 1, async_op=async_op), async_op)
        return [x]
    return fn


def all_gather_case(dtype, tensor_api, inplace=False):
    n = 4

    def fn(dev, async_op):
        x = make_input((n, 2), dtype, 7).to(dev)
        if tensor_api and inplace:
            # FSDP's pattern: the input is this rank's slice of the output.
            out = torch.zeros(WORLD * n, 2, dtype=dtype, device=dev)
            out[RANK * n:(RANK + 1) * n].copy_(x)
            work = dist.all_gather_into_tensor(out, out[RANK * n:(RANK + 1) * n],
                                               async_op=async_op)
            done(work, async_op)
            return [out]
        if tensor_api:
            out = torch.zeros(WORLD * n, 2, dtype=dtype, device=dev)
            done(dist.all_gather_into_tensor(out, x, async_op=async_op), async_op)
            return [out]
        outs = [torch.zeros(n, 2, dtype=dtype, device=dev) for _ in range(WORLD)]
        done(dist.all_gather(outs, x, async_op=async_op), async_op)
        return outs
    return fn


def gather_case(dtype):
    def fn(dev, async_op):
        x = make_input((3,), dtype, 8).to(dev)
        outs = [torch.zeros(3, dtype=dtype, device=dev) for _ in range(WORLD)] if RANK == 0 else None
        done(dist.gather(x, outs, dst=0, async_op=async_op), async_op)
        return outs or []
    return fn


def scatter_case(dtype):
    def fn(dev, async_op):
        out = torch.zeros(4, dtype=dtype, device=dev)
        ins = ([make_input((4,), dtype, 90 + j).to(dev) for j in range(WORLD)]
               if RANK == WORLD - 1 else None)
        done(dist.scatter(out, ins, src=WORLD - 1, async_op=async_op), async_op)
        return [out]
    return fn


def all_to_all_case(dtype, single, uneven):
    def fn(dev, async_op):
        if single and uneven:
            in_splits = [(RANK + j) % 3 + 1 for j in range(WORLD)]
            out_splits = [(j + RANK) % 3 + 1 for j in range(WORLD)]
            inp = make_input((sum(in_splits), 2), dtype, 10).to(dev)
            out = torch.zeros(sum(out_splits), 2, dtype=dtype, device=dev)
            work = dist.all_to_all_single(out, inp, out_splits, in_splits, async_op=async_op)
            done(work, async_op)
            return [out]
        if single:
            inp = make_input((WORLD * 3,), dtype, 11).to(dev)
            out = torch.zeros(WORLD * 3, dtype=dtype, device=dev)
            done(dist.all_to_all_single(out, inp, async_op=async_op), async_op)
            return [out]
        ins = [make_input((j + 1,), dtype, 110 + j).to(dev) for j in range(WORLD)]
        outs = [torch.zeros(RANK + 1, dtype=dtype, device=dev) for _ in range(WORLD)]
        done(dist.all_to_all(outs, ins, async_op=async_op), async_op)
        return outs
    return fn


def p2p_case(dtype, style):
    """A ring: every rank sends to rank+1 and receives from rank-1."""
    nxt, prv = (RANK + 1) % WORLD, (RANK - 1) % WORLD

    def fn(dev, async_op):
        x = make_input((5,), dtype, 12).to(dev)
        y = torch.zeros(5, dtype=dtype, device=dev)
        if style == "batch":
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x, nxt),
                                           dist.P2POp(dist.irecv, y, prv)])
            for r in reqs:
                r.wait()
        elif style == "isend":
            s = dist.isend(x, nxt)
            r = dist.irecv(y, prv)
            s.wait()
            r.wait()
        else:  # blocking send / recv, even ranks send first
            if RANK % 2 == 0:
                dist.send(x, nxt)
                dist.recv(y, prv)
            else:
                dist.recv(y, prv)
                dist.send(x, nxt)
        return [y]
    return fn


# ---------------------------------------------------------------------------- coalesced

def coalesced_case(dtype, kind):
    def fn(dev, async_op):
        if kind == "all_reduce_coalesced":
            xs = [make_input((3,), dtype, 13).to(dev), make_input((2, 2), dtype, 14).to(dev)]
            done(dist.all_reduce_coalesced(xs, async_op=async_op), async_op)
            return xs
        if kind == "all_gather_coalesced":
            xs = [make_input((3,), dtype, 15).to(dev), make_input((2,), dtype, 16).to(dev)]
            outs = [[torch.zeros_like(x) for x in xs] for _ in range(WORLD)]
            done(dist.all_gather_coalesced(outs, xs, async_op=async_op), async_op)
            return [t for lst in outs for t in lst]
        device = torch.device(dev) if dev == "vk" else None
        xs = [make_input((WORLD * 2,), dtype, 17).to(dev), make_input((WORLD,), dtype, 18).to(dev)]
        if kind == "manager_all_reduce":
            with dist._coalescing_manager(device=device, async_ops=async_op) as cm:
                for x in xs:
                    dist.all_reduce(x)
            if async_op:
                cm.wait()
            return xs
        if kind == "manager_all_gather":
            outs = [torch.zeros(WORLD * x.numel(), dtype=dtype, device=dev) for x in xs]
            with dist._coalescing_manager(device=device, async_ops=async_op) as cm:
                for o, x in zip(outs, xs):
                    dist.all_gather_into_tensor(o, x)
            if async_op:
                cm.wait()
            return outs
        outs = [torch.zeros(x.numel() // WORLD, dtype=dtype, device=dev) for x in xs]
        with dist._coalescing_manager(device=device, async_ops=async_op) as cm:
            for o, x in zip(outs, xs):
                dist.reduce_scatter_tensor(o, x)
        if async_op:
            cm.wait()
        return outs
    return fn


def mixed_dtype_coalesced(dev, async_op):
    xs = [make_input((3,), torch.float32, 19).to(dev), make_input((4,), torch.int64, 20).to(dev)]
    device = torch.device(dev) if dev == "vk" else None
    with dist._coalescing_manager(device=device, async_ops=async_op) as cm:
        for x in xs:
            dist.all_reduce(x)
    if async_op:
        cm.wait()
    return xs


def mixed_dtype_ref(dev, async_op):
    xs = [make_input((3,), torch.float32, 19), make_input((4,), torch.int64, 20)]
    for x in xs:
        dist.all_reduce(x)
    return xs


# ---------------------------------------------------------------------------- ordering

def ordering(dev, async_op):
    """Several asynchronous collectives in flight at once, two of them on the same tensor (the
    second must see the first's result), mixed with CPU tensors, waited in reverse order."""
    a = make_input((8,), torch.float32, 21).to(dev)
    b = make_input((8,), torch.float32, 22).to(dev)
    c = make_input((4,), torch.float32, 23)  # always CPU
    works = [dist.all_reduce(a, async_op=True), dist.all_reduce(b, async_op=True),
             dist.all_reduce(c, async_op=True), dist.all_reduce(a, async_op=True),
             dist.broadcast(b, src=0, async_op=True)]
    for w in reversed(works):
        w.wait()
    return [a, b, c]


def stream_semantics(dev, async_op):
    """After wait(), work queued on the current stream reads the result."""
    x = make_input((16,), torch.float32, 24).to(dev)
    w = dist.all_reduce(x, async_op=True)
    w.wait()
    y = x * 2 + 1
    return [y]


def future_then(dev, async_op):
    """DDP comm hooks chain on Work.get_future(): the value is the output tensors."""
    x = make_input((6,), torch.float32, 25).to(dev)
    fut = dist.all_reduce(x, async_op=True).get_future()
    fut2 = fut.then(lambda f: f.value()[0] / WORLD)
    return [fut2.wait()]


def functional(dev, async_op):
    """The _c10d_functional ops DTensor uses (wait_tensor -> Work::wait)."""
    group = dist.group.WORLD
    x = make_input((WORLD * 2,), torch.float32, 26).to(dev)
    r = funcol.all_reduce(x, "sum", group)
    g = funcol.all_gather_tensor(x, 0, group)
    s = funcol.reduce_scatter_tensor(x, "sum", 0, group)
    a = funcol.all_to_all_single(x, None, None, group)
    return [funcol.wait_tensor(t) for t in (r, g, s, a)]


def object_collectives(dev, async_op):
    obj = {"rank": RANK, "tensor": torch.arange(3) + RANK}
    gathered = [None] * WORLD
    dist.all_gather_object(gathered, obj)
    lst = [obj if RANK == 0 else None]
    dist.broadcast_object_list(lst, src=0)
    out = [None]
    dist.scatter_object_list(out, [{"to": j} for j in range(WORLD)] if RANK == 0 else None, src=0)
    got = [None] * WORLD if RANK == 0 else None
    dist.gather_object(obj, got, dst=0)
    assert [g["rank"] for g in gathered] == list(range(WORLD))
    assert lst[0]["rank"] == 0 and out[0] == {"to": RANK}
    if RANK == 0:
        assert [g["rank"] for g in got] == list(range(WORLD))
    return [g["tensor"] for g in gathered]


def barriers(dev, async_op):
    x = make_input((3,), torch.float32, 27).to(dev)
    w = dist.all_reduce(x, async_op=True)
    dist.barrier()
    if dev == "vk":
        dist.barrier(device_ids=[torch.vk.current_device()])
    w.wait()
    return [x]


def paths_covered() -> None:
    """The run went through every path of the backend: CPU tensors straight to Gloo, vk
    tensors inline (synchronous) and queued (asynchronous), in place on unified memory and
    staged otherwise."""
    stats = dist.group.WORLD._get_backend(torch.device("vk")).stats()
    assert stats["direct"] > 0 and stats["inline"] > 0 and stats["queued"] > 0, stats
    unified = (torch.vk.get_device_properties().unified_memory
               and os.environ.get("TORCH_VK_DISABLE_UNIFIED_MEMORY", "0") != "1")
    if unified:
        assert stats["zero_copy_tensors"] > 0 and stats["staged_tensors"] > 0, stats  # non-dense
    else:
        assert stats["zero_copy_tensors"] == 0 and stats["staged_tensors"] > 0, stats


def main() -> None:
    init("vkgloo")
    assert dist.get_backend() == "vkgloo"
    for dtype in DTYPES:
        d = str(dtype).split(".")[1]
        for opname, op in REDUCE_OPS.items():
            compare(f"all_reduce {opname} {d}", *all_reduce_case(dtype, op))
        compare(f"all_reduce sum {d} 0-dim", *all_reduce_case(dtype, dist.ReduceOp.SUM, shape=()))
        compare(f"all_reduce sum {d} empty", *all_reduce_case(dtype, dist.ReduceOp.SUM, shape=(0, 3)))
        compare(f"all_reduce max {d} transposed", *all_reduce_case(dtype, dist.ReduceOp.MAX, layout="transposed"))
        compare(f"reduce sum {d}", reduce_case(dtype, dist.ReduceOp.SUM))
        compare(f"reduce max {d}", reduce_case(dtype, dist.ReduceOp.MAX))
        compare(f"reduce_scatter list sum {d}", reduce_scatter_case(dtype, dist.ReduceOp.SUM, False))
        compare(f"reduce_scatter_tensor sum {d}", reduce_scatter_case(dtype, dist.ReduceOp.SUM, True))
        compare(f"reduce_scatter_tensor avg {d}", reduce_scatter_case(dtype, dist.ReduceOp.AVG, True))
        compare(f"broadcast {d}", broadcast_case(dtype, (3, 5)))
        compare(f"all_gather list {d}", all_gather_case(dtype, False))
        compare(f"all_gather_into_tensor {d}", all_gather_case(dtype, True))
        compare(f"all_gather_into_tensor in place {d}", all_gather_case(dtype, True, inplace=True))
        compare(f"gather {d}", gather_case(dtype))
        compare(f"scatter {d}", scatter_case(dtype))
        compare(f"all_to_all list {d}", all_to_all_case(dtype, False, False))
        compare(f"all_to_all_single {d}", all_to_all_case(dtype, True, False))
        compare(f"all_to_all_single uneven {d}", all_to_all_case(dtype, True, True))
        for style in ("batch", "isend", "send"):
            compare(f"p2p {style} {d}", p2p_case(dtype, style))
        for kind in ("all_reduce_coalesced", "all_gather_coalesced", "manager_all_reduce",
                     "manager_all_gather", "manager_reduce_scatter"):
            compare(f"{kind} {d}", coalesced_case(dtype, kind))
    for dtype in FLOATS:
        d = str(dtype).split(".")[1]
        for kind in ("double", "tensor"):
            compare(f"all_reduce premul_sum({kind}) {d}", *premul_case(dtype, kind))
        compare(f"reduce premul_sum {d}", *reduce_premul_case(dtype))
        compare(f"reduce_scatter_tensor premul_sum {d}", *reduce_scatter_premul_case(dtype))
        compare(f"all_reduce sum {d} sliced", *all_reduce_case(dtype, dist.ReduceOp.SUM, layout="sliced"))
    compare("all_reduce bor int64", *all_reduce_case(torch.int64, dist.ReduceOp.BOR))
    compare("coalescing manager mixed dtypes", mixed_dtype_coalesced, mixed_dtype_ref)
    compare("ordering", ordering)
    compare("stream semantics", stream_semantics)
    compare("future then", future_then)
    compare("functional collectives", functional)
    compare("object collectives", object_collectives)
    compare("barriers", barriers)
    # Everything is still in step on every rank.
    x = torch.full((2,), float(RANK), device="vk")
    dist.all_reduce(x)
    checks.run("final all_reduce", same, x, torch.full((2,), float(sum(range(WORLD)))))
    checks.run("paths covered", paths_covered)
    dist.destroy_process_group()
    checks.finish()


if __name__ == "__main__":
    main()
