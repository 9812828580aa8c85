"""Benchmark rows: identity, the results folder (``results.json`` + ``results.csv``) and the summary.

A row is one model x setting x device set x strategy (``tvm-partition bench``)::

    {model, config, devices, strategy, measured_median_us, measured_p90_us, predicted_us, plan_s,
     compile_s, device_names, ideal_us, [error], tuned_kernels, repeat, machine, date, command, ...}

``ideal_us`` is the group's ideal co-execution bound (:func:`ideal`), filled in when saved. Rows
of :mod:`tvm_partition.bench.ops` (one key op alone) have an ``op`` field and are named
``model/fused_kernel``.

``tuned_kernels`` is "tuned / all" kernels of the build (their own record of the tuning database),
``transferred_kernels`` "transferred / all" (a record of the same computation at other extents,
:mod:`tvm_partition.build.transfer`), ``template_kernels`` "template / all" (direct convolutions and element-wise kernels,
:mod:`tvm_partition.build.templates`; weight packing, run at load, not counted); the others run TVM's default CPU schedule (or dlight on a GPU),
``default_compute_kernels`` of them doing arithmetic (the rest only move data).

The reference rows ``tvm-cpu``, ``onnxruntime``, ``pytorch`` and ``pytorch-graph`` have no plan
(``predicted_us`` and ``plan_s`` None); the last three have no TVM kernels either (``tuned_kernels``
None) and record how far their outputs are from TVM's unpartitioned model's on the same inputs:
``max_abs_err_vs_ort``, ``max_abs_err_vs_torch`` (PyTorch's on the GPU where it was measured).

A row measured with ``bench --load N`` / ``--cpu-quota F`` (:mod:`tvm_partition.bench.load`) also
has ``under``: ``{condition name: {median_us, p90_us, p99_us, process_medians_us}}``, measured right
after its quiet figures; :func:`summary` then adds a table of the tails.

Both files are rewritten (atomically) after every row, so a killed run keeps every finished row.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re

RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"
#: Columns of results.csv (every row of results.json has these keys, and maybe more).
FIELDS = ("model", "config", "devices", "strategy", "measured_median_us", "measured_p90_us", "predicted_us",
          "plan_s", "compile_s", "device_names", "ideal_us", "error", "chosen", "tuned_kernels", "template_kernels", "transferred_kernels",
          "default_compute_kernels",
          "repeat", "machine", "date", "command", "process_medians_us", "max_abs_err_vs_ort", "max_abs_err_vs_torch", "measured_p99_us",
          "under")
#: The strategies that place everything on one device: the "best single device" of a speedup.
SINGLE_DEVICE = ("cpu", "gpu")
#: Decimals a row's times (us) keep. Why two: the RNNs' gate matmuls alone (``bench --split-ops``)
#: run in 3.3-8.4 us, and kept to 0.1 us their errors moved by up to 1.5% a side for rounding alone
#: (a 3.35 us reading is 3.3 or 3.4) against a 10% band (intel-r-xeon-r-processor-rocketlake-2c,
#: 2026-12-04).
US_DIGITS = 2


def workspace() -> str:
    """The folder whose ``benchmarks/results/`` and ``BENCHMARKS.md`` the benchmark commands use by
    default: the source tree the package runs from, or for a package installed from a wheel (no
    ``BENCHMARKS.md`` beside it: site-packages) the current folder, so that nothing is written
    into site-packages."""
    tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return tree if os.path.exists(os.path.join(tree, "BENCHMARKS.md")) else os.getcwd()


def row_key(row: dict) -> tuple:
    return row["model"], json.dumps(row["config"], sort_keys=True), row["devices"], row["strategy"]


#: Longest row id (a folder and file name): well under the 255 bytes file systems allow.
MAX_ID = 120


def row_id(row: dict) -> str:
    """A folder-safe name of the row, e.g. ``lstm-batch2-seq_len4-cpu_cpu-equal``."""
    cfg = "-".join(f"{k}{v}" for k, v in sorted(row["config"].items()))
    text = "-".join(p for p in (row["model"], cfg, row["devices"].replace(",", "_"), row["strategy"]) if p)
    text = re.sub(r"[^A-Za-z0-9_.-]+", "_", text)
    if len(text) > MAX_ID:  # a fused kernel's name (bench --split-ops) can run past a file name's limit
        digest = hashlib.sha1(text.encode()).hexdigest()[:10]
        text = f"{text[:MAX_ID - 11]}_{digest}"
    return text


#: The plans a results folder's rows ran, ``<row id>.json`` each, in one zip beside
#: ``results.json`` (``benchmarks/predict_again.py --bench`` prices them again). Why one zip, not a
#: folder: plans are JSON that deflates ~10x, and the device tool sends the whole checkout with
#: every call of the GPU kit (``benchmarks/gpu_proof/kit.py``: 64 MiB in all); the committed
#: results' ``plans/`` folders had grown to 9.3 of the checkout's 47.6 MiB (2026-12-06).
PLANS_ZIP = "plans.zip"
#: where folders written before kept them (read still)
PLANS_DIR = "plans"


def save_plan(folder: str, row: dict, text: str) -> None:
    """Keep ``row``'s plan (its JSON ``text``) in ``folder``'s :data:`PLANS_ZIP`, replacing the
    plan an earlier run of the row kept; atomically."""
    import zipfile

    path, name = os.path.join(folder, PLANS_ZIP), row_id(row) + ".json"
    kept = {}
    if os.path.exists(path):
        with zipfile.ZipFile(path) as z:
            kept = {n: z.read(n) for n in z.namelist() if n != name}
    os.makedirs(folder, exist_ok=True)
    with zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in {**kept, name: text.encode()}.items():
            z.writestr(n, data)
    os.replace(path + ".tmp", path)


def load_plan(folder: str, row: dict) -> str | None:
    """The JSON text of the plan ``row`` ran (:func:`save_plan`, or an older folder's
    :data:`PLANS_DIR`); None where none was kept."""
    import zipfile

    name = row_id(row) + ".json"
    try:
        with zipfile.ZipFile(os.path.join(folder, PLANS_ZIP)) as z:
            return z.read(name).decode()
    except (FileNotFoundError, KeyError):
        pass
    try:
        with open(os.path.join(folder, PLANS_DIR, name), encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def measured(row: dict) -> bool:
    return row.get("measured_median_us") is not None and "error" not in row


def load(folder: str) -> list[dict]:
    path = os.path.join(folder, RESULTS_JSON)
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: unreadable results ({e}); move it away or give another --out") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "strategy" in r for r in rows):
        raise ValueError(f"{path}: not a list of benchmark rows")
    return rows


def merge(rows: list[dict], row: dict) -> list[dict]:
    """``rows`` with ``row`` in place of the row of the same key (appended if new)."""
    key = row_key(row)
    out = [r for r in rows if row_key(r) != key]
    at = next((i for i, r in enumerate(rows) if row_key(r) == key), len(out))
    out.insert(at, row)
    return out


def retire_ops(rows: list[dict], selected: list[dict]) -> list[dict]:
    """``rows`` without the op rows (:mod:`tvm_partition.bench.ops`) that a newer selection retired:
    for each model setting and device set that ``selected`` (op rows of one run) covers, only the ops
    it names stay. Which ops are the heaviest follows the profile, so a run after a re-profile can
    pick other ones; their rows of earlier runs stayed in the table beside the new ones, dated by the
    new run (ResNet-18's `cpu,cpu` op rows of 01:56, 07:59 and 18:03 under a run of 21:38, znver4)."""
    def setting(r: dict) -> tuple:
        return r["model"].rsplit("/", 1)[0], json.dumps(r["config"], sort_keys=True), r["devices"]

    kept: dict[tuple, set[str]] = {}
    for r in selected:
        kept.setdefault(setting(r), set()).add(r["model"])
    return [r for r in rows if "op" not in r or r["model"] in kept.get(setting(r), {r["model"]})]


def write_json(path: str, data) -> None:
    """``data`` as indented JSON at ``path``, written under a temporary name and renamed."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def save(folder: str, rows: list[dict]) -> None:
    """Write results.json and results.csv (each under a temporary name, then renamed), every row
    with its group's :func:`ideal` bound as ``ideal_us``."""
    os.makedirs(folder, exist_ok=True)
    for rs in groups(rows).values():
        bound = ideal(rs)
        for r in rs:
            r["ideal_us"] = None if bound is None else round(bound, US_DIGITS)
    write_json(os.path.join(folder, RESULTS_JSON), rows)
    path = os.path.join(folder, RESULTS_CSV)
    with open(path + ".tmp", "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (json.dumps(v) if isinstance(v, dict | list) else v) for k, v in r.items()})
    os.replace(path + ".tmp", path)


def groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Rows by (devices, model, config), in first-seen order."""
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["devices"], r["model"], json.dumps(r["config"], sort_keys=True)), []).append(r)
    return out


def best_single(rows: list[dict]) -> float | None:
    """The lower median of the cpu and gpu rows of one group (None if neither was measured)."""
    times = [r["measured_median_us"] for r in rows if r["strategy"] in SINGLE_DEVICE and measured(r)]
    return min(times) if times else None


def ideal(rows: list[dict]) -> float | None:
    """The ideal co-execution bound of one group: ``1 / (1/t_cpu + 1/t_gpu)`` of the measured
    medians of its ``cpu`` and ``gpu`` rows (both devices busy until the end, each on the share it
    finishes in that time; the gpu row runs from inputs on the host to outputs back there, so the
    bound includes the copies). None unless both were measured."""
    t = {r["strategy"]: r["measured_median_us"] for r in rows if r["strategy"] in SINGLE_DEVICE and measured(r)}
    if len(t) < len(SINGLE_DEVICE) or min(t.values()) <= 0:
        return None
    return 1.0 / sum(1.0 / v for v in t.values())


def derived(row: dict, best: float | None, bound: float | None = None, cpu: dict | None = None) -> dict:
    """Prediction error (%), speedup over the best single device and measured / ideal bound,
    where both sides exist; with ``cpu``, the group's ``cpu`` row, ``vs_cpu_err_pct``: the error of
    the row's time predicted over the ``cpu`` row's, against the same ratio measured (a plan's
    predicted speedup over one CPU, which is what a planner chooses by). Why: this VM runs a whole
    run 8-33% over its profile in a slow phase (``bench --quick`` on ``cpu,cpu``, 21:23: 5 of 48
    rows within 10%), and every row of that run and of five others was within 10% of its ``cpu``
    row's ratio (worst 9.9%; intel-r-xeon-r-processor-rocketlake-2c, 2026-12-04): the two errors
    tell the model's error from the machine's phase."""
    out = {"pred_err_pct": None, "speedup": None, "of_ideal": None, "vs_cpu_err_pct": None}
    if measured(row):
        m = row["measured_median_us"]
        if row.get("predicted_us") is not None:
            out["pred_err_pct"] = 100.0 * (row["predicted_us"] - m) / m
        if best is not None:
            out["speedup"] = best / m
        if bound is not None and row["strategy"] not in SINGLE_DEVICE:
            out["of_ideal"] = m / bound
        if (cpu is not None and cpu is not row and row.get("predicted_us") is not None and measured(cpu)
                and cpu.get("predicted_us")):
            ratio = (row["predicted_us"] / cpu["predicted_us"]) / (m / cpu["measured_median_us"])
            out["vs_cpu_err_pct"] = 100.0 * (ratio - 1)
    return out


def cpu_row(rows: list[dict]) -> dict | None:
    """The ``cpu`` row of one group, where it was measured."""
    return next((r for r in rows if r["strategy"] == "cpu" and measured(r)), None)


def within(rows: list[dict], band: float = 10.0) -> dict:
    """How many of ``rows`` (any groups) were predicted within ``band`` % of their measured median
    (``pred``) and of their ``cpu`` row's ratio (``vs_cpu``, :func:`derived`): ``{name: (within,
    of)}``, each over the rows that have the error."""
    counts = {"pred": [0, 0], "vs_cpu": [0, 0]}
    for rs in groups(rows).values():
        cpu = cpu_row(rs)
        for r in rs:
            d = derived(r, None, None, cpu)
            for name, err in (("pred", d["pred_err_pct"]), ("vs_cpu", d["vs_cpu_err_pct"])):
                if err is not None:
                    counts[name][0] += abs(err) <= band
                    counts[name][1] += 1
    return {k: tuple(v) for k, v in counts.items()}


def ms_cell(us) -> str:
    """A time in ms, three decimals, or three digits below 0.1 ms (a 4.5 us op row read 0.005), trailing zeros kept."""
    if us is None:
        return "-"
    ms = us / 1e3
    return f"{ms:.3f}" if ms >= 0.1 else f"{ms:#.3g}"


def _pct(value) -> str:
    return "-" if value is None else f"{value:+.0f}%"


HEAD = ("strategy", "median ms", "p90 ms", "predicted ms", "pred err", "err vs cpu", "speedup", "of ideal",
        "tuned+transf.")


def schedules_cell(row: dict) -> str:
    """``tuned+transferred/all`` kernels of a row (``tuned/all`` for rows measured before transfer,
    ``tuned+template+transferred/all`` for rows with templated kernels)."""
    tuned, moved, template = row.get("tuned_kernels"), row.get("transferred_kernels"), row.get("template_kernels")
    if not tuned:
        return "-"
    if not moved:
        return tuned
    if template and not template.startswith("0/"):
        return f"{tuned.split('/')[0]}+{template.split('/')[0]}+{moved}"
    return f"{tuned.split('/')[0]}+{moved}"


def table_rows(rows: list[dict]) -> list[tuple[str, ...]]:
    """One tuple of cells (:data:`HEAD`) per row of a group; an error row says so."""
    best, bound, cpu = best_single(rows), ideal(rows), cpu_row(rows)
    out = []
    for r in rows:
        if "error" in r:
            out.append((r["strategy"], "error: " + str(r["error"])[:80]) + ("",) * (len(HEAD) - 2))
            continue
        d = derived(r, best, bound, cpu)
        name = r["strategy"] + (f" ({r['chosen']})" if r.get("chosen") else "")
        if r.get("op") and r["strategy"] not in SINGLE_DEVICE:  # a split op row: how it was split
            name += f" ({r['op']['dim']} {r['op']['gpu_ratio']:g})"
        out.append((name, ms_cell(r.get("measured_median_us")), ms_cell(r.get("measured_p90_us")), ms_cell(r.get("predicted_us")),
                    _pct(d["pred_err_pct"]), _pct(d["vs_cpu_err_pct"]),
                    "-" if d["speedup"] is None else f"{d['speedup']:.2f}x",
                    "-" if d["of_ideal"] is None else f"{d['of_ideal']:.2f}x", schedules_cell(r)))
    return out


def config_label(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(config.items())) or "defaults"


def condition_names(rows: list[dict]) -> list[str]:
    """The conditions any of ``rows`` was measured under besides the quiet machine, first seen first."""
    return list(dict.fromkeys(name for r in rows for name in r.get("under", {})))


def tail_rows(rows: list[dict]) -> list[tuple[str, ...]]:
    """Per row: strategy, then median / p90 / p99 in ms quiet and under each condition, then the
    worst p90 / median ratio over the conditions."""
    names = condition_names(rows)
    out = [("strategy", "quiet median", "p90", "p99", *[f"{n}: {c}" if c == "median" else c
                                                         for n in names for c in ("median", "p90", "p99")],
            "worst p90/median")]
    for r in rows:
        if not measured(r):
            continue
        runs = [{"median_us": r["measured_median_us"], "p90_us": r.get("measured_p90_us"),
                 "p99_us": r.get("measured_p99_us")}] + [r.get("under", {}).get(n, {}) for n in names]
        ratios = [u["p90_us"] / u["median_us"] for u in runs if u.get("median_us") and u.get("p90_us")]
        out.append((r["strategy"], *[ms_cell(u.get(k)) for u in runs for k in ("median_us", "p90_us", "p99_us")],
                    f"{max(ratios):.2f}x" if ratios else "-"))
    return out


def _text_table(cells: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(c[i]) for c in cells if len(c[i]) < 40) for i in range(len(cells[0]))]
    return ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cell, widths)))
            .rstrip() for cell in cells]


def summary(rows: list[dict]) -> str:
    """Per model and setting, a text table of the strategies (speedup: over the best of cpu / gpu),
    and one of the tails where rows were measured under load (:func:`tail_rows`)."""
    blocks = []
    for (devices, model, _), rs in groups(rows).items():
        lines = [f"{model} ({config_label(rs[0]['config'])}) on {devices}"] + _text_table([HEAD] + table_rows(rs))
        if condition_names(rs):
            lines += ["  latency (ms) quiet and under load:"] + _text_table(tail_rows(rs))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
