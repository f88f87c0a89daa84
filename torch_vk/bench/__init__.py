"""``python -m torch_vk bench``: is torch-vk worth it on this GPU?

Times the kernel, model-step and compile suites (:mod:`torch_vk.bench.cases`) on vk and, in
the same run, on the CPU (and on CUDA when torch sees a CUDA device), and prints one table per
suite with every time and the ratios baseline time / vk time (> 1: vk is faster). Each
target's first result is compared with the CPU's (a loose tolerance: a row whose vk result
differs says MISMATCH instead of passing off a wrong kernel's time); a target that raises is
recorded in its row and the run goes on.

  python -m torch_vk bench [--suite kernels,models,compile] [--quick] [--json PATH]
                           [--plot DIR] [--no-progress]

Exit status: 0 when the run finished (whatever its rows hold), 1 when there is no vk device
or the plots could not be written, 2 for an unknown suite name.

The timing helpers (:func:`sync`, :func:`timeit`, :func:`time_per_call`) are shared with the
scripts in ``benchmarks/``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from typing import Any, Sequence

from torch_vk.bench.timing import sync, time_per_call, timeit

__all__ = ["add_arguments", "main", "run", "sync", "timeit", "time_per_call"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m torch_vk bench``."""
    from torch_vk.bench.cases import SUITES

    parser.add_argument("--suite", default=",".join(SUITES), metavar="NAMES",
                        help=f"comma-separated suites to run, of {', '.join(SUITES)} "
                             "(default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and few repetitions (a smoke run: well under a minute "
                             "on lavapipe; its numbers say little)")
    parser.add_argument("--json", default="", metavar="PATH",
                        help="also write the results as JSON to PATH")
    parser.add_argument("--plot", default="", metavar="DIR",
                        help="also write PNG plots to DIR (throughput vs size per op, model "
                             "step times; needs matplotlib)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (it is drawn on stderr only when that is a "
                             "terminal)")


def parse_suites(text: str) -> list[str]:
    """``"models, kernels"`` -> ``["kernels", "models"]`` (in the canonical order, no
    duplicates); raises ValueError naming any unknown suite."""
    from torch_vk.bench.cases import SUITES

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SUITES]
    if unknown or not names:
        raise ValueError(f"unknown suite(s) {', '.join(unknown) or repr(text)}; "
                         f"choose from {', '.join(SUITES)}")
    return [suite for suite in SUITES if suite in names]


def run(suites: Sequence[str], quick: bool, progress: bool = True) -> dict[str, Any]:
    """Runs ``suites`` and returns the JSON document of the run: the environment
    (:func:`torch_vk.bench.runner.environment`), ``suites``, ``quick``, ``ratio`` (what a ratio
    means), ``cases`` (one row per case, see :mod:`torch_vk.bench.runner`), ``duration_s`` and
    ``interrupted`` (True when Ctrl-C ended it early; ``cases`` then holds the finished ones).
    The CPU fallback is silenced while it runs (the rows count its calls instead)."""
    import torch

    import torch_vk
    from torch_vk.bench.cases import suite_cases
    from torch_vk.bench.report import RATIO_MEANING
    from torch_vk.bench.runner import ProgressBar, Settings, environment, run_case

    with_cuda = torch.cuda.is_available()
    document: dict[str, Any] = {
        "tool": "python -m torch_vk bench", "format_version": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        **environment(with_cuda),
        "suites": list(suites), "quick": quick, "ratio": RATIO_MEANING, "cases": [],
        "interrupted": False,
    }
    cases = suite_cases(suites, quick, with_cuda)
    settings = Settings.for_run(quick)
    bar = ProgressBar(sum(len(case.targets) for case in cases), enabled=progress)
    history: dict[tuple[str, str, str], tuple[float, float]] = {}
    saved_mode = torch_vk.fallback_mode()
    torch_vk.set_fallback_mode("silent")
    start = time.perf_counter()
    try:
        for case in cases:
            document["cases"].append(run_case(case, settings, bar, history))
    except KeyboardInterrupt:
        document["interrupted"] = True
    finally:
        bar.close()
        torch_vk.set_fallback_mode(saved_mode)
    document["duration_s"] = time.perf_counter() - start
    return document


def main(args: argparse.Namespace) -> int:
    """``python -m torch_vk bench`` with the options of :func:`add_arguments`."""
    import torch

    import torch_vk  # noqa: F401  (registers the device)
    from torch_vk.bench.report import format_header, format_tables, write_plots

    try:
        suites = parse_suites(args.suite)
    except ValueError as exc:
        print(f"torch-vk bench: {exc}", file=sys.stderr)
        return 2
    if not torch.vk.is_available():
        print(f"torch-vk bench: no vk device ({torch.vk._unavailable_reason()})", file=sys.stderr)
        return 1
    document = run(suites, args.quick, progress=not args.no_progress)
    print(format_header(document))
    print()
    print(format_tables(document["cases"]))
    if document["interrupted"]:
        print("\ninterrupted: the rows above are the cases that finished")
    status = 0
    document["plots"] = []
    if args.plot:
        try:
            document["plots"] = write_plots(document["cases"], args.plot)
            print(f"\nplots: {', '.join(document['plots'])}")
        except ImportError as exc:
            print(f"torch-vk bench: no plots ({exc}; pip install matplotlib)", file=sys.stderr)
            status = 1
    if args.json:
        with open(args.json, "w") as f:
            json.dump(document, f, indent=1, allow_nan=False)
            f.write("\n")
        print(f"results: {args.json}")
    return status
