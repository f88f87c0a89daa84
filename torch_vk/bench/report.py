"""Outputs of ``python -m torch_vk bench``: the text table, the JSON document, the PNG plots.

All three are made from the result rows of :mod:`torch_vk.bench.runner` and nothing else, so
they always agree with each other.
"""

from __future__ import annotations

import math
import os
from typing import Any, Sequence

from torch_vk.bench.cases import VK, VK_EAGER

__all__ = ["RATIO_MEANING", "format_tables", "format_header", "write_plots"]

RATIO_MEANING = "ratio = baseline time / vk time (> 1: vk is faster)"

# Column order of the target labels; labels not listed here come after, alphabetically.
LABEL_ORDER = (VK, VK_EAGER, "cpu", "cuda")

SUITE_CAPTIONS = {
    "kernels": "kernels: median time per call",
    "models": "models: median time per training step (forward, loss, backward, AdamW)",
    "compile": "compile: median time per call; vk = torch.compile'd on vk, "
               "vk_eager = the same call eager on vk, baselines eager",
}


def _labels(rows: Sequence[dict[str, Any]]) -> list[str]:
    seen = {label for row in rows
            for part in ("times_ms", "errors", "skipped") for label in row[part]}
    seen.add(VK)
    order = {label: i for i, label in enumerate(LABEL_ORDER)}
    return sorted(seen, key=lambda label: (order.get(label, len(order)), label))


def _milliseconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 1000 else f"{value:.0f}"


def _notes(row: dict[str, Any]) -> str:
    notes = [f"MISMATCH {label}: {text}" for label, text in row["checks"].items()
             if text.startswith("mismatch")]
    notes += [f"{label} error: {text}" for label, text in row["errors"].items()]
    notes += [f"{label} skipped: {text}" for label, text in row["skipped"].items()]
    if row["vk_fallback_calls"]:
        notes.append(f"{row['vk_fallback_calls']} vk calls ran on the CPU fallback")
    return "; ".join(notes)


def _table(rows: Sequence[dict[str, Any]]) -> list[str]:
    labels = _labels(rows)
    baselines = [label for label in labels if label != VK]
    header = ["case", "dtype", f"{VK} ms"]
    for label in baselines:
        header += [f"{label} ms", f"{label}/{VK}"]
    header += [f"{VK} rate", "notes"]
    body = []
    for row in rows:
        times, ratios = row["times_ms"], row["ratios"]
        cells = [row["name"], row["dtype"], _milliseconds(times.get(VK))]
        for label in baselines:
            ratio = ratios.get(label)
            cells += [_milliseconds(times.get(label)), "-" if ratio is None else f"{ratio:.2f}x"]
        rate = row["throughput"].get(VK)
        cells += ["-" if rate is None else f"{rate:.3g} {row['unit']}", _notes(row)]
        body.append(cells)
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    left_aligned = {0, 1, len(header) - 2, len(header) - 1}

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in left_aligned else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header)] + [line(cells) for cells in body]


def format_tables(rows: Sequence[dict[str, Any]]) -> str:
    """One table per suite, in the rows' order: per case its dtype, vk's time, each baseline's
    time and ratio, vk's throughput and notes (mismatches, errors, skips, CPU fallbacks)."""
    blocks = []
    suites = list(dict.fromkeys(row["suite"] for row in rows))
    for suite in suites:
        suite_rows = [row for row in rows if row["suite"] == suite]
        blocks.append("\n".join([SUITE_CAPTIONS.get(suite, suite)] + _table(suite_rows)))
    return "\n\n".join(blocks)


def format_header(info: dict[str, Any]) -> str:
    """Which devices the numbers are from, and how to read the ratios."""
    device = info["vk_device"]
    cpu = info["cpu"]
    lines = [f"torch-vk {info['torch_vk_version']}, torch {info['torch_version']}",
             f"vk:   {device['name']} ({device['driver_name']} {device['driver_info']})".rstrip(),
             f"cpu:  {cpu['name']} ({cpu['torch_threads']} torch threads)"]
    if "cuda" in info:
        lines.append(f"cuda: {info['cuda']['name']}")
    load = cpu.get("load_average_1min")
    if load is not None and cpu["cores"] and load > 0.5 * cpu["cores"]:
        lines.append(f"note: load average {load:.1f} on {cpu['cores']} cores at the start: "
                     "other processes compete for the CPU, so CPU (and lavapipe) times are "
                     "noisy")
    lines.append(RATIO_MEANING)
    return "\n".join(lines)


def _legend(label: str, suite: str) -> str:
    """The compile suite's "vk" is the compiled call."""
    if suite == "compile":
        return {VK: "vk compiled", VK_EAGER: "vk eager"}.get(label, label)
    return label


def _file_name(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def _save(figure: Any, path: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def _throughput_plot(op: str, rows: Sequence[dict[str, Any]], path: str) -> None:
    """Throughput against size, one line per (target, dtype): a color per target, a line
    style per dtype."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.5))
    axes = figure.add_subplot()
    labels = _labels(rows)
    dtypes = list(dict.fromkeys(row["dtype"] for row in rows))
    colors = {label: f"C{i}" for i, label in enumerate(labels)}
    styles = ["-", "--", ":", "-."]
    for label in labels:
        for d, dtype in enumerate(dtypes):
            points = [(row["x"], row["throughput"][label]) for row in rows
                      if row["dtype"] == dtype and label in row["throughput"]]
            if not points:
                continue
            xs, ys = zip(*sorted(points))
            name = label if len(dtypes) == 1 else f"{label} {dtype}"
            axes.plot(xs, ys, styles[d % len(styles)], marker="o", color=colors[label], label=name)
    xs = [row["x"] for row in rows]
    if min(xs) > 0 and max(xs) / min(xs) >= 8:
        axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel(rows[0]["x_label"])
    axes.set_ylabel(rows[0]["unit"])
    axes.set_title(f"{op}: throughput vs size")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    _save(figure, path)


def _step_time_plot(title: str, rows: Sequence[dict[str, Any]], path: str) -> None:
    """Grouped bars: per case, one bar per target with its median time."""
    from matplotlib.figure import Figure

    labels = _labels(rows)
    figure = Figure(figsize=(max(6.0, 2.2 * len(rows) + 1.5), 4.5))
    axes = figure.add_subplot()
    width = 0.8 / len(labels)
    for i, label in enumerate(labels):
        positions = [r + (i - (len(labels) - 1) / 2) * width for r in range(len(rows))]
        heights = [row["times_ms"].get(label, math.nan) for row in rows]
        axes.bar(positions, heights, width, label=_legend(label, rows[0]["suite"]), color=f"C{i}")
    axes.set_xticks(range(len(rows)))
    axes.set_xticklabels([row["op"] for row in rows])
    times = [t for row in rows for t in row["times_ms"].values() if t > 0]
    if times and max(times) / min(times) > 30:
        axes.set_yscale("log")
    axes.set_ylabel("median time per call (ms)")
    axes.set_title(title)
    axes.grid(True, axis="y", which="both", alpha=0.3)
    axes.legend(fontsize="small")
    _save(figure, path)


def write_plots(rows: Sequence[dict[str, Any]], directory: str) -> list[str]:
    """PNG files in ``directory`` (created if needed): ``throughput_<op>.png`` for each op of
    the kernel suite, ``model_step_times.png`` for the model suite and
    ``compile_step_times.png`` for the compile suite (those present in ``rows``). Returns the
    paths written. Raises ImportError when matplotlib is not installed."""
    import matplotlib  # noqa: F401  (ImportError here, before any file is written)

    os.makedirs(directory, exist_ok=True)
    written = []
    kernel_rows = [row for row in rows if row["suite"] == "kernels" and row["throughput"]]
    for op in dict.fromkeys(row["op"] for row in kernel_rows):
        path = os.path.join(directory, f"throughput_{_file_name(op)}.png")
        _throughput_plot(op, [row for row in kernel_rows if row["op"] == op], path)
        written.append(path)
    for suite, name, title in (("models", "model_step_times.png", "model training step time"),
                               ("compile", "compile_step_times.png",
                                "torch.compile on vk vs eager")):
        suite_rows = [row for row in rows if row["suite"] == suite and row["times_ms"]]
        if suite_rows:
            path = os.path.join(directory, name)
            _step_time_plot(title, suite_rows, path)
            written.append(path)
    return written
