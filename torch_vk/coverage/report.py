"""Results of a coverage run: per-(op, dtype) statuses, the summary table, JSON, the Markdown
report (docs/COVERAGE.md) and the regression gate list (tests/coverage/passing.json)."""

from __future__ import annotations

import json
import re
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any, Iterable

STATUSES = ("passed", "mismatch", "not_implemented", "error", "crashed", "skipped")
FAILED = ("mismatch", "not_implemented", "error", "crashed")
# Which status of several (the checks of one (op, dtype)) describes the pair.
_PRECEDENCE = ("crashed", "mismatch", "error", "not_implemented", "passed", "skipped")
LABEL = {"passed": "passed", "mismatch": "MISMATCH", "not_implemented": "not implemented",
         "error": "ERROR", "crashed": "CRASHED", "skipped": "skipped"}

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_GATE = REPO_ROOT / "tests" / "coverage" / "passing.json"
OPS_DOC = REPO_ROOT / "docs" / "OPS.md"

Unit = tuple  # (op, dtype, check)


# Why known failures fail, shown under the failure table. Keys are OpInfo names; keep an
# entry only while the failure is still listed.
KNOWN_FAILURE_REASONS = {
    "sort": "float16 / bfloat16 samples with many ties: the CPU's unstable sort orders equal "
            "values by its introsort; vk's sort is always stable (its order equals the CPU's "
            "stable=True order, checked in tests/python/test_sort.py). Values agree.",
    "argsort": "as sort.",
    "svd_lowrank": "sample 10 (q below the rank): the result depends on the random projection "
                   "(torch.randn), and vk's generator draws other numbers than the CPU's for the "
                   "same seed; PyTorch's own CPU/CUDA comparison skips this op for that reason. "
                   "Full-rank samples agree.",
    "topk": "as sort: ties in bfloat16 are returned in stable order; values agree.",
    "mode": "float16 / bfloat16 sample 6 (long rows): the values agree; the CPU sorts long rows "
            "with an unstable std::sort, so which occurrence its index names is not defined; vk "
            "returns the last occurrence, as the CPU does on short rows.",
    "nn.functional.multi_head_attention_forward": "sample 1 trains with dropout_p=0.5: the "
            "dropout mask comes from vk's own Philox generator, so it differs from the CPU's "
            "(random ops are compared statistically in tests/python/test_random.py).",
    "nn.functional.linear_cross_entropy.chunked_none": "float16: the chunked composite keeps "
            "float16 intermediates; vk rounds differently (RMS error vs a float64 reference "
            "is listed with the sample).",
}


def combine(statuses: Iterable[str]) -> str:
    statuses = set(statuses)
    if statuses == {"skipped"} or not statuses:
        return "skipped"
    return next(s for s in _PRECEDENCE if s in statuses and s != "skipped")


def pair_records(results: dict[Unit, dict]) -> "OrderedDict[tuple[str, str], dict]":
    """(op, dtype) -> {"status", "message", "check", "missing", "checks": {check: status}}."""
    pairs: OrderedDict[tuple[str, str], dict] = OrderedDict()
    for (op, dtype, check), rec in results.items():
        p = pairs.setdefault((op, dtype), {"checks": {}, "missing": []})
        p["checks"][check] = rec["status"]
        for m in rec.get("missing", []):
            if m not in p["missing"]:
                p["missing"].append(m)
    for (op, dtype), p in pairs.items():
        p["status"] = combine(p["checks"].values())
        for check, status in p["checks"].items():
            if status == p["status"]:
                rec = results[(op, dtype, check)]
                p["check"], p["message"] = check, rec.get("message", "")
                if rec.get("note"):
                    p["note"] = rec["note"]
                break
    return pairs


def counts_by_dtype(pairs) -> "OrderedDict[str, Counter]":
    out: OrderedDict[str, Counter] = OrderedDict()
    for (_op, dtype), p in pairs.items():
        out.setdefault(dtype, Counter())[p["status"]] += 1
    return out


def totals(pairs) -> tuple[int, int]:
    passed = sum(1 for p in pairs.values() if p["status"] == "passed")
    failed = sum(1 for p in pairs.values() if p["status"] in FAILED)
    return passed, failed


def summary_table(pairs) -> str:
    """Plain-text table: one row per dtype, one column per status."""
    counts = counts_by_dtype(pairs)
    head = ["dtype"] + [LABEL[s].lower() for s in STATUSES] + ["total"]
    rows = [[d] + [str(c[s]) for s in STATUSES] + [str(sum(c.values()))]
            for d, c in counts.items()]
    if len(rows) > 1:
        all_c = sum(counts.values(), Counter())
        rows.append(["all"] + [str(all_c[s]) for s in STATUSES] + [str(sum(all_c.values()))])
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    fmt = lambda r: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def claimed_native() -> set[str]:
    """Op names that docs/OPS.md lists as native (backticked names in its table)."""
    try:
        text = OPS_DOC.read_text()
    except OSError:
        return set()
    names = set()
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = line.split("|")
            if len(cells) > 2:
                for name in re.findall(r"`([\w.]+)`", cells[2]):
                    names.add(name.split(".")[0].rstrip("_"))
    return names - {"empty", "as_strided", "view", "set", "resize", "_copy_from",
                    "_copy_from_and_resize", "_local_scalar_dense", "_reshape_alias",
                    "empty_strided"}


_NAMESPACES = ("masked.", "linalg.", "special.", "fft.", "signal.", "sparse.", "torch.", "_refs.")


def is_claimed(op: str, claimed: set[str]) -> bool:
    """Whether the OpInfo key ``op`` (``name.variant``) is an op that docs/OPS.md lists:
    ``div.no_rounding_mode`` -> div, ``nn.functional.relu`` -> relu; other namespaces never."""
    if op.startswith("nn.functional."):
        return op.split(".")[2] in claimed
    if op.startswith(_NAMESPACES):
        return False
    return op.split(".")[0] in claimed


# ---------------------------------------------------------------------------------------------
# JSON


def to_json(results: dict[Unit, dict], meta: dict[str, Any],
            settings: dict[str, Any] | None = None) -> dict[str, Any]:
    pairs = pair_records(results)
    return {
        "meta": meta,
        "settings": settings or {},
        "counts": {d: dict(c) for d, c in counts_by_dtype(pairs).items()},
        "pairs": [{"op": op, "dtype": dtype, **p} for (op, dtype), p in pairs.items()],
        "units": [{"op": op, "dtype": dtype, "check": check, **rec}
                  for (op, dtype, check), rec in results.items()],
    }


def write_json(path: str | Path, results, meta, settings=None) -> None:
    Path(path).write_text(json.dumps(to_json(results, meta, settings), indent=1) + "\n")


# ---------------------------------------------------------------------------------------------
# Markdown


def _md_escape(text: str, limit: int = 300) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def markdown(results: dict[Unit, dict], meta: dict[str, Any]) -> str:
    pairs = pair_records(results)
    dtypes = list(OrderedDict.fromkeys(d for _op, d in pairs))
    ops = list(OrderedDict.fromkeys(op for op, _d in pairs))
    claimed = claimed_native()
    counts = counts_by_dtype(pairs)
    passed, failed = totals(pairs)
    out: list[str] = []
    w = out.append
    w("# Native op coverage (PyTorch OpInfo)")
    w("")
    w("Generated by `python -m torch_vk coverage` (`torch_vk/coverage/`): every OpInfo entry of "
      "`torch.testing._internal.common_methods_invocations.op_db` runs its sample inputs on "
      "`\"vk\"` with `TORCH_VK_FALLBACK=error` and is compared with the CPU. An (op, dtype) "
      "**passes** only if every sample ran natively (no CPU fallback) and matched the CPU "
      "(`torch.testing.assert_close`, `equal_nan=True`, after `output_process_fn_grad`); samples "
      "the CPU itself rejects are skipped. **not implemented**: some sample needed the CPU "
      "fallback. **mismatch**: a native result differs. **error**: vk raised where the CPU did "
      "not. **crashed**: the worker process died or hung on it.")
    w("")
    w("Run it (from any directory where `torch_vk` imports; `pip install expecttest`):")
    w("")
    w("```sh")
    w("python -m torch_vk coverage                          # all of op_db: float32, float16, "
      "bfloat16")
    w("python -m torch_vk coverage --ops 'add,nn.functional.*' --dtypes all --deep   # + "
      "reference, non-contiguous, out=, in-place, gradients")
    w("python -m torch_vk coverage --gate                   # the regression gate "
      "(tests/coverage/passing.json)")
    w("python -m torch_vk coverage --ops NAME --update-gate # after landing a kernel: add its "
      "passing pairs to the gate")
    w("```")
    w("")
    w("Values of ops with random or uninitialized results are not compared (shape and dtype "
      "only). Floating results must match within the tolerances below; a larger difference "
      "is still accepted when the vk result is as close to a float64 CPU reference as the CPU "
      "result is (RMS error at most twice the CPU's + atol): composite ops round their "
      "intermediates in fp16/bf16 at other places than the CPU kernels do.")
    w("")
    w("| setting | value |")
    w("|---|---|")
    for k, v in meta.items():
        if k in ("command",):
            v = f"`{v}`"
        w(f"| {k} | {_md_escape(str(v), 500)} |")
    w("")
    w(f"**{passed} passed, {failed} failed** ((op, dtype) pairs; skipped ones are neither).")
    w("")
    w("## Counts per dtype")
    w("")
    w("| dtype | " + " | ".join(LABEL[s].lower() for s in STATUSES) + " | total |")
    w("|---|" + "---:|" * (len(STATUSES) + 1))
    for d, c in counts.items():
        w(f"| {d} | " + " | ".join(str(c[s]) for s in STATUSES) + f" | {sum(c.values())} |")
    w("")

    checks = list(OrderedDict.fromkeys(c for (_o, _d, c) in results))
    if len(checks) > 1:
        w("## Per check")
        w("")
        w("(op, dtype) pairs that passed each check, of those it applies to (`out`: ops with "
          "an out= form, `inplace`: with an in-place variant, `grad`: with backward for the "
          "dtype).")
        w("")
        w("| check | " + " | ".join(dtypes) + " |")
        w("|---|" + "---:|" * len(dtypes))
        for c in checks:
            cells = []
            for d in dtypes:
                st = [rec["status"] for (o, dd, cc), rec in results.items() if dd == d and cc == c]
                cells.append(f"{st.count('passed')} / {sum(1 for x in st if x != 'skipped')}")
            w(f"| {c} | " + " | ".join(cells) + " |")
        w("")

    def row_status(op):
        return [pairs[(op, d)]["status"] if (op, d) in pairs else "" for d in dtypes]

    w("## Ops by status")
    w("")
    w("Every op that is native for at least one dtype, or fails with a mismatch, error or crash "
      "(ops that are only \"not implemented\" or \"skipped\" are listed further down).")
    w("")
    w("| op | " + " | ".join(dtypes) + " |")
    w("|---|" + "---|" * len(dtypes))
    for op in ops:
        st = row_status(op)
        if any(s in ("passed", "mismatch", "error", "crashed") for s in st):
            name = f"`{op}`" + (" (OPS.md)" if is_claimed(op, claimed) else "")
            w(f"| {name} | " + " | ".join(LABEL.get(s, s) for s in st) + " |")
    w("")
    bad = [(k, p) for k, p in pairs.items() if p["status"] in ("mismatch", "error", "crashed")]
    w("## Failures: mismatch, error, crashed")
    w("")
    if not bad:
        w("None.")
    else:
        w("\"OPS.md\" marks ops that docs/OPS.md lists as native: their failures are bugs.")
        w("")
        w("| op | dtype | status | check | first failure |")
        w("|---|---|---|---|---|")
        for (op, d), p in sorted(bad, key=lambda kp: (not is_claimed(kp[0][0], claimed), kp[0])):
            name = f"`{op}`" + (" (OPS.md)" if is_claimed(op, claimed) else "")
            w(f"| {name} | {d} | {LABEL[p['status']]} | {p.get('check', '')} | "
              f"{_md_escape(p.get('message', ''))} |")
        w("")
        for op in sorted({op for (op, _d), _p in bad if op in KNOWN_FAILURE_REASONS}):
            w(f"- `{op}`: {KNOWN_FAILURE_REASONS[op]}")
    w("")
    notes = [(k, p) for k, p in pairs.items() if p.get("note") and p["status"] != "skipped"
             and "shape and dtype only" not in p["note"]]
    if notes:
        w("Worker deaths attributed by re-running alone:")
        w("")
        for (op, d), p in notes:
            w(f"- `{op}` {d}: {_md_escape(p['note'])}")
        w("")
    drift = [(op, d, p) for (op, d), p in pairs.items()
             if p["status"] == "not_implemented" and is_claimed(op, claimed)]
    if drift:
        w("## Listed in docs/OPS.md, but not native in this run")
        w("")
        w("The op family is documented as native, yet some sample of these (op, dtype) pairs "
          "fell back to the CPU: a missing overload or helper op (named), or a build of the "
          "extension older than the document.")
        w("")
        by_op: OrderedDict[str, tuple[list[str], list[str]]] = OrderedDict()
        for op, d, p in drift:
            ds, missing = by_op.setdefault(op, ([], []))
            ds.append(d)
            missing.extend(m for m in p["missing"] if m not in missing)
        for op, (ds, missing) in by_op.items():
            w(f"- `{op}` ({', '.join(ds)}): "
              + (", ".join(f"`{m}`" for m in missing) or _md_escape(
                  pairs[(op, ds[0])].get("message", ""), 200)))
        w("")
    w("## Not yet native")
    w("")
    not_native = [op for op in ops if all(s in ("not_implemented", "skipped", "") for s in
                                          row_status(op)) and "not_implemented" in row_status(op)]
    w(f"{len(not_native)} ops have no native (op, dtype) among {', '.join(dtypes)}: some sample "
      "of each needs an aten op that falls back to the CPU.")
    w("")
    w(", ".join(f"`{op}`" for op in not_native) or "None.")
    w("")
    blocked: Counter = Counter()
    for p in pairs.values():
        if p["status"] == "not_implemented":
            for m in p["missing"]:
                blocked[m] += 1
    if blocked:
        w("Missing aten kernels, by the number of not-implemented (op, dtype) pairs in which they "
          "fell back (a pair can need several):")
        w("")
        w(", ".join(f"`{m}` {n}" for m, n in sorted(blocked.items(), key=lambda x: (-x[1], x[0]))))
        w("")
    w("## Skipped")
    w("")
    reasons: OrderedDict[str, OrderedDict[str, list[str]]] = OrderedDict()
    for (op, d), p in pairs.items():
        if p["status"] == "skipped":
            reason = re.sub(r"^sample \d+: ", "", p.get("message", "") or "no samples")
            reason = re.sub(r"the CPU raised (\w+): .*", r"the CPU raised \1 on every sample",
                            reason)
            reasons.setdefault(_md_escape(reason, 160), OrderedDict()).setdefault(op, []).append(d)
    if not reasons:
        w("None.")
    for reason, by_op in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        items = [f"`{op}`" + ("" if len(ds) == len(dtypes) or any(d in reason for d in ds)
                              else f" ({', '.join(ds)})") for op, ds in by_op.items()]
        w(f"- {reason} ({len(items)} op{'s' if len(items) > 1 else ''}): {', '.join(items)}")
    w("")
    shape_only = sorted({op for (op, _d, _c), rec in results.items()
                         if "shape and dtype only" in rec.get("note", "")})
    if shape_only:
        w("Compared for shape and dtype only (random or uninitialized results): "
          + ", ".join(f"`{op}`" for op in shape_only) + ".")
        w("")
    return "\n".join(out)


def write_markdown(path: str | Path, results, meta) -> None:
    Path(path).write_text(markdown(results, meta))


# ---------------------------------------------------------------------------------------------
# Regression gate


def load_gate(path: str | Path) -> dict[str, Any]:
    with open(path) as f:
        gate = json.load(f)
    gate.setdefault("settings", {})
    gate.setdefault("pairs", {})
    return gate


def regressions(pairs, gate: dict[str, Any]) -> list[tuple[str, str, dict]]:
    """Gate pairs that this run covered and that did not pass."""
    out = []
    for op, dtypes in gate["pairs"].items():
        for d in dtypes:
            p = pairs.get((op, d))
            if p is not None and p["status"] in FAILED:
                out.append((op, d, p))
    return out


def _gate_text(doc: dict[str, Any]) -> str:
    """JSON with one line per op (diffs show the pairs that came and went)."""
    head = {k: v for k, v in doc.items() if k != "pairs"}
    lines = json.dumps(head, indent=1)[:-2].splitlines()
    body = [f"  {json.dumps(op)}: {json.dumps(ds)}" for op, ds in doc["pairs"].items()]
    return "\n".join(lines) + ",\n \"pairs\": {\n" + ",\n".join(body) + "\n }\n}\n"


def update_gate(path: str | Path, pairs, settings: dict[str, Any]) -> tuple[list, list]:
    """Rewrites the gate list from this run: every (op, dtype) the run covered is in the list
    iff it passed; pairs outside the run are kept. Returns (added, removed)."""
    path = Path(path)
    gate = load_gate(path) if path.exists() else {"settings": {}, "pairs": {}}
    current = {(op, d) for op, ds in gate["pairs"].items() for d in ds}
    new = set(current)
    for key, p in pairs.items():
        if p["status"] == "passed":
            new.add(key)
        else:
            new.discard(key)
    grouped: dict[str, list[str]] = {}
    for op, d in sorted(new):
        grouped.setdefault(op, []).append(d)
    doc = {
        "description": "(op, dtype) pairs of PyTorch's OpInfo op_db that pass natively on vk "
                       "(python -m torch_vk coverage). tests/python/test_coverage_gate.py fails "
                       "when one stops passing. Rewrite with: python -m torch_vk coverage "
                       "--update-gate [--ops ...] (after landing a kernel).",
        "settings": settings,
        "pairs": grouped,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_gate_text(doc))
    return sorted(new - current), sorted(current - new)
