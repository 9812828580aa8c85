"""Latency of a model's CPU build against the tuning budget spent on it (``compile --tune-budget``).

    python benchmarks/tune_budget.py MODEL [MODEL ...] [--budgets 0,300,1200] [--repeat 20]
        [--out benchmarks/results/<fingerprint>]

For each model and budget: a scratch copy of the shipped ``tuning_logs/`` (so no record of the
model ever reaches the shipped database, and each budget starts from the same one), then
``python -m tvm_partition compile MODEL --devices cpu --strategy cpu --tuning-logs COPY
--tune-budget S --out ART`` (budget 0: no tuning of the model, every kernel transferred or
default), then the artifact measured end to end as ``bench`` measures a row (fresh processes,
median of their medians). The kernels' schedules (tuned / transferred / default) come from the
artifact's manifest. Writes ``tune_budget.json`` and ``tune_budget.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy


def one(model: str, budget: float, repeat: int, work: str) -> dict:
    from tvm_partition.bench.runtime import measure_isolated
    from tvm_partition.build.tuning import DEFAULT_LOGS

    tag = f"{os.path.basename(model)}-{budget:g}"
    logs, art = os.path.join(work, f"logs-{tag}"), os.path.join(work, f"art-{tag}")
    shutil.copytree(DEFAULT_LOGS, logs)
    cmd = [sys.executable, "-m", "tvm_partition", "compile", model, "--devices", "cpu", "--strategy", "cpu",
           "--tuning-logs", logs, "--out", art] + (["--tune-budget", f"{budget:g}"] if budget else [])
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        return {"model": model, "budget_s": budget, "error": proc.stderr.strip().splitlines()[-1]}
    wall = time.monotonic() - t0
    with open(os.path.join(art, "manifest.json"), encoding="utf-8") as f:
        labels = json.load(f)["kernel_schedules"]
    kinds = [v.split()[0] for v in labels.values()]
    row = {"model": os.path.basename(model), "budget_s": budget, "compile_wall_s": round(wall, 1),
           "tuned": kinds.count("tuned"), "template": kinds.count("template"),
           "transferred": kinds.count("transferred"), "default": kinds.count("default"),
           "command": " ".join(cmd[1:])}
    row.update(measure_isolated(art, repeat))
    return row


def render(rows: list[dict]) -> str:
    lines = ["| model | tune budget s | compile wall s | median ms | p90 ms | kernels tuned / template / transferred / default |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['budget_s']:g} | error: {r['error'][:80]} | | | |")
            continue
        lines.append(f"| {r['model']} | {r['budget_s']:g} | {r['compile_wall_s']:.0f} | "
                     f"{r['measured_median_us'] / 1e3:.1f} | {r['measured_p90_us'] / 1e3:.1f} | "
                     f"{r['tuned']} / {r.get('template', 0)} / {r['transferred']} / {r['default']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from tvm_partition.devices import fingerprint_id

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="zoo names or .onnx paths")
    ap.add_argument("--budgets", default="0,300,1200", help="tuning budgets in seconds (default 0,300,1200)")
    ap.add_argument("--repeat", type=int, default=20, help="end-to-end runs per artifact (default 20)")
    ap.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results", fingerprint_id()))
    args = ap.parse_args(argv)
    try:
        budgets = [float(b) for b in args.budgets.split(",") if b.strip()]
    except ValueError:
        print(f"error: --budgets {args.budgets!r}: expected seconds like 0,300,1200", file=sys.stderr)
        return 2
    if not budgets or any(b < 0 for b in budgets):
        print("error: --budgets: give one or more numbers >= 0", file=sys.stderr)
        return 2
    missing = [m for m in args.models if m.endswith(".onnx") and not os.path.exists(m)]
    if missing:
        print(f"error: {missing[0]}: no such file", file=sys.stderr)
        return 2
    rows = []
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tvmp-budget-") as work:
        for model in args.models:
            for budget in budgets:
                row = one(model, budget, args.repeat, work)
                rows.append(row)
                print(render([row]).splitlines()[-1], flush=True)
                _save(rows, args.out)  # after every row: an hour of tuning is not lost to a later crash
    print(render(rows))
    return 0


def _save(rows: list[dict], out: str) -> None:
    from tvm_partition.bench.results import write_json

    write_json(os.path.join(out, "tune_budget.json"), rows)
    path = os.path.join(out, "tune_budget.md")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(render(rows))
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main())
