"""``python -m torch_vk coverage``: PyTorch's OpInfo database as the conformance suite of the
native vk kernels.

Every OpInfo (or those of ``--ops``) runs its sample inputs, generated on the CPU and copied to
``"vk"``, with ``TORCH_VK_FALLBACK=error``, and is compared with the CPU. Each (op, dtype) is
passed / mismatch / not implemented / error / crashed / skipped (see ``report.py``). Chunks of
ops run in worker processes (``worker.py``) so that a crash, hang or device loss is recorded
and the run goes on (``runner.py``).

Outputs: a progress bar (plain lines when stdout is not a terminal), a summary table, the line
``N passed, N failed``, a JSON file and a Markdown report. ``--gate`` runs the committed list
of passing pairs (``tests/coverage/passing.json``) and fails naming any that stopped passing;
``--update-gate`` rewrites that list from the run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

__all__ = ["add_arguments", "main"]

GATE_CHECKS = ("sample",)

CHECK_FLAGS = (("reference", "reference", "also run op.reference_inputs (edge cases)"),
               ("noncontiguous", "noncontig", "also run non-contiguous copies of the samples"),
               ("out", "out", "also check the out= variant"),
               ("inplace", "inplace", "also check the in-place variant"),
               ("grad", "grad", "also check gradients (torch.autograd.grad on both sides)"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ops", default="",
                   help="comma-separated OpInfo names or name.variant keys, fnmatch patterns "
                        "allowed (e.g. 'add,nn.functional.*'); default: all of op_db")
    p.add_argument("--dtypes", default="float32,float16,bfloat16",
                   help="comma-separated dtypes, or 'all' for every dtype the device supports "
                        "(default: float32,float16,bfloat16)")
    p.add_argument("--max-samples", type=int, default=None, metavar="N",
                   help="at most N samples per (op, dtype, check) (default: all)")
    for flag, _check, text in CHECK_FLAGS:
        p.add_argument(f"--{flag}", action="store_true", help=text)
    p.add_argument("--deep", action="store_true", help="all of the above checks")
    p.add_argument("--jobs", "-j", type=int, default=min(2, os.cpu_count() or 1),
                   help="worker processes at a time (default: min(2, CPUs))")
    p.add_argument("--chunk-size", type=int, default=25,
                   help="ops per worker process (default: 25)")
    p.add_argument("--unit-timeout", type=float, default=120.0, metavar="S",
                   help="seconds one (op, dtype, check) may run before its worker is killed "
                        "and it is recorded as crashed (default: 120)")
    p.add_argument("--json", default="vk-coverage.json", metavar="PATH",
                   help="JSON results ('' for none; default: vk-coverage.json)")
    p.add_argument("--markdown", default="vk-coverage.md", metavar="PATH",
                   help="Markdown report ('' for none; default: vk-coverage.md)")
    p.add_argument("--gate", action="store_true",
                   help="run only the gate list (its ops, dtypes and settings) and exit 1 "
                        "naming every pair that no longer passes")
    p.add_argument("--update-gate", action="store_true",
                   help="rewrite the gate list from this run: the (op, dtype) pairs it covered "
                        "are listed iff they passed; other pairs are kept")
    p.add_argument("--gate-file", default=None, metavar="PATH",
                   help="the gate list (default: tests/coverage/passing.json of the checkout)")
    p.add_argument("--from-json", default=None, metavar="PATH",
                   help="run nothing: report (and --update-gate) from the JSON of an earlier run")
    p.add_argument("--no-progress", action="store_true", help="no progress output")


def _git_commit() -> str:
    from torch_vk.coverage.report import REPO_ROOT

    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip()
    except Exception:
        return ""


def _command(args, checks) -> str:
    """The options of this run that decide its results (not where they were written)."""
    parts = ["python -m torch_vk coverage"]
    if args.gate:
        parts.append("--gate")
    if args.ops:
        parts.append(f"--ops '{args.ops}'" if len(args.ops) < 200 else "--ops ...")
    if args.dtypes != "float32,float16,bfloat16" and not args.gate:
        parts.append(f"--dtypes {args.dtypes}")
    if args.max_samples is not None:
        parts.append(f"--max-samples {args.max_samples}")
    parts += [f"--{flag}" for flag, check, _t in CHECK_FLAGS if check in checks]
    return " ".join(parts)


def _meta(args, checks, dtypes, seconds, plan) -> dict:
    import torch

    import torch_vk

    try:
        props = torch_vk._C._get_device_properties(0)
        device = f"{props['name']}; driver {props['driver_name']} {props['driver_info']}".strip()
    except Exception as exc:  # pragma: no cover
        device = f"unavailable: {exc}"
    from torch_vk.coverage.checks import TOLERANCES

    commit = _git_commit()
    try:
        built = datetime.datetime.fromtimestamp(os.path.getmtime(torch_vk._C.__file__),
                                                datetime.timezone.utc)
        extension = f"{os.path.basename(torch_vk._C.__file__)}, built {built:%Y-%m-%d %H:%M} UTC"
    except Exception:  # pragma: no cover
        extension = "?"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": _command(args, checks),
        "torch": torch.__version__,
        "torch-vk": torch_vk.__version__ + (f" ({commit})" if commit else ""),
        "native extension": extension,
        "device": device,
        "host": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "ops": len(plan.ops),
        "dtypes": ", ".join(dtypes),
        "checks": ", ".join(checks),
        "max samples per (op, dtype, check)": args.max_samples or "all",
        "tolerances (atol, rtol)": ", ".join(f"{str(d).replace('torch.', '')} {t}"
                                             for d, t in TOLERANCES.items()),
        "processes": f"{args.jobs} at a time, {args.chunk_size} ops each, "
                     f"{args.unit_timeout:.0f} s per unit",
        "duration": f"{seconds / 60:.1f} min",
    }


def main(args: argparse.Namespace) -> int:
    from torch_vk.coverage import report, runner

    start = time.monotonic()
    gate_path = args.gate_file or str(report.DEFAULT_GATE)
    checks = ["sample"] + [c for flag, c, _t in CHECK_FLAGS
                           if args.deep or getattr(args, flag)]
    patterns = [p.strip() for p in args.ops.split(",") if p.strip()] or None
    pairs = None
    if args.gate:
        gate = report.load_gate(gate_path)
        pairs = gate["pairs"]
        if args.max_samples is None:
            args.max_samples = gate["settings"].get("max_samples")
        if patterns:  # a subset of the gate
            pairs = {op: ds for op, ds in pairs.items() if runner._matches(op, op, patterns)}
        dtypes = sorted({d for ds in pairs.values() for d in ds})
    elif args.dtypes.strip() == "all":
        dtypes = runner.device_dtypes()
    else:
        dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if args.from_json:
        with open(args.from_json) as f:
            data = json.load(f)
        results = {(u.pop("op"), u.pop("dtype"), u.pop("check")): u for u in data["units"]}
        meta = data["meta"]
        args.max_samples = data.get("settings", {}).get("max_samples")
        return _finish(args, results, meta, gate_path, pairs)

    plan = runner.make_plan(patterns, dtypes, checks, pairs)
    progress = runner.Progress(len(plan.units), len(plan.ops), enabled=not args.no_progress)
    if not args.no_progress:
        print(f"torch-vk coverage: {len(plan.ops)} ops, {len(plan.units)} units "
              f"({', '.join(dtypes)}; checks: {', '.join(checks)})", flush=True)
    run = runner.Runner(plan, max_samples=args.max_samples, jobs=args.jobs,
                        chunk_size=args.chunk_size, unit_timeout=args.unit_timeout,
                        progress=progress)
    results = run.run()
    # op_db order, then dtype, then check, whatever order the workers finished in
    order = {op: i for i, op in enumerate(plan.ops)}
    dorder = {d: i for i, d in enumerate(dtypes)}
    corder = {c: i for i, c in enumerate(checks)}
    results = dict(sorted(results.items(), key=lambda kv: (
        order.get(kv[0][0], 1 << 30), dorder.get(kv[0][1], 99), corder.get(kv[0][2], 99))))
    meta = _meta(args, checks, dtypes, time.monotonic() - start, plan)
    return _finish(args, results, meta, gate_path, pairs)


def _finish(args, results, meta, gate_path, gate_pairs) -> int:
    """Summary table, JSON, Markdown, the gate (update or check), the closing line."""
    from torch_vk.coverage import report

    pair_recs = report.pair_records(results)
    # The gate is about the default check: a pair that passes it stays gated even when a
    # deeper check (say, its gradient) is not native yet.
    gated = report.pair_records({k: v for k, v in results.items() if k[2] in GATE_CHECKS})

    print()
    print(report.summary_table(pair_recs))
    print()
    status = 0
    settings = {"max_samples": args.max_samples, "checks": list(GATE_CHECKS)}
    if args.json:
        report.write_json(args.json, results, meta, {"max_samples": args.max_samples})
        print(f"JSON: {args.json}")
    if args.markdown:
        report.write_markdown(args.markdown, results, meta)
        print(f"Markdown: {args.markdown}")
    if args.update_gate:
        added, removed = report.update_gate(gate_path, gated, settings)
        print(f"gate {gate_path}: {len(added)} added, {len(removed)} removed")
        for op, d in removed:
            print(f"  removed (no longer passing): {op} {d}: "
                  f"{gated[(op, d)]['status']}: {gated[(op, d)].get('message', '')}")
    elif os.path.exists(gate_path):
        regressed = report.regressions(gated, report.load_gate(gate_path))
        for op, d, p in regressed:
            print(f"REGRESSION {op} {d}: {report.LABEL[p['status']]} ({p.get('check', '')}): "
                  f"{p.get('message', '')}")
        if regressed:
            print(f"{len(regressed)} pair(s) of the gate list ({gate_path}) no longer pass")
            status = 1
        elif args.gate:
            print(f"gate: all {sum(len(v) for v in gate_pairs.values())} pairs pass")
    passed, failed = report.totals(pair_recs)
    print(f"{passed} passed, {failed} failed", flush=True)
    return status
