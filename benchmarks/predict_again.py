"""Predict measured plans again with today's cost model, beside what they measured.

    python benchmarks/predict_again.py ARTIFACT... [--results results.json]
    python benchmarks/predict_again.py --bench FOLDER... [--band 10] [--onnx-dir DIR]

Each artifact (``compile ... --out DIR``, or a bench bundle's ``artifacts/*``) holds the plan that
ran and, in its manifest, the model, settings and devices it was built for. Its plan is simulated
again (:func:`tvm_partition.planners.simulate.simulate`) with the cost model a build for those
devices takes now (:func:`tvm_partition.cost_models.default_cost_model`: the shipped profile of
the machine the devices name), and printed beside the prediction it was built with and, given a
``bench`` results file, its measured median. Why: a cost-model change is checked against runs
made on a machine that is gone (the H100 machine's rows, 2026-11-27) without measuring again.
A ``bench --split-ops`` row's artifact (model ``MODEL/KERNEL``: one op cut out of a model) has no
model to load again: it is listed as skipped (a bundle's ``artifacts/*`` holds both kinds).

``--bench``: ``bench`` results folders instead (``results.json`` and the ``plans.zip`` it writes
beside it, or an older folder's ``plans/``), their op rows too (the op cut out of its model again, priced as its model's op, as
``bench --split-ops`` prices it): each row's error as built and now, run by run, and how many rows
of each run fall within ``--band`` percent. Why: this VM moves one build 1.27-1.5x within an hour,
so a change to the cost model is judged on the same measurements, not on a new run in another
phase of the machine. Rows of ``.onnx`` models whose settings name no file (measured before they
kept it) load ``--onnx-dir``'s ``<model>.onnx``, or are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy


def _key(model: str, config: dict, strategy: str) -> tuple:
    """A row's key: its model, the settings a model takes (``frontend.MODEL_OPTIONS``) and strategy."""
    from tvm_partition.frontend import MODEL_OPTIONS

    return model, json.dumps({k: v for k, v in sorted(config.items()) if k in MODEL_OPTIONS}), strategy


def measured(path: str | None) -> dict:
    """``{(model, settings, strategy): median us}`` of a ``bench`` results file's model rows."""
    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)
    return {_key(r["model"], r["config"], r["strategy"]): r["measured_median_us"] for r in rows
            if "op" not in r and r.get("measured_median_us")}


def load_model(cache: dict, source: str, config: dict, op_id: str | None = None, devices: list | None = None) -> tuple:
    """``(model, OpGraph)`` of ``source`` (an ONNX file's path; a zoo model's name) at the settings
    of ``config`` it takes, in the form a build for ``devices`` compiles
    (:func:`tvm_partition.cli.compile.for_devices`: a quantized model's byte matmuls), loaded once
    per ``cache``; with ``op_id``, that op of it alone (``bench --split-ops``' op model) and the
    model's own pair, ``(op model, its OpGraph, model, model's OpGraph)``."""
    from tvm_partition import frontend
    from tvm_partition.bench import ops as bench_ops
    from tvm_partition.cli.compile import for_devices
    from tvm_partition.frontend import model_options
    from tvm_partition.ir.graph import OpGraph

    opts = {k: v for k, v in config.items() if k in model_options(source)}
    key = (source, json.dumps(opts, sort_keys=True), op_id, json.dumps([d.to_json() for d in devices or []]))
    if key not in cache:
        if op_id is None:
            model = frontend.load(source, seed=0, **opts)
            model = for_devices(model, devices) if devices else model
            cache[key] = (model, OpGraph(model.mod))
        else:
            model, graph = load_model(cache, source, config, devices=devices)
            op_model = bench_ops.op_model(model, graph, op_id)
            cache[key] = (op_model, OpGraph(op_model.mod), model, graph)
    return cache[key]


def row_source(row: dict, onnx_dir: str | None) -> str:
    """What a bench row's model loads from: its settings' ``source`` (an ``.onnx`` file), else
    ``onnx_dir/<model>.onnx`` where that exists (rows of ``.onnx`` models measured before the
    settings kept the file: the light models of 2026-12-01), else its name (a zoo model)."""
    name = row["model"].split("/")[0]
    path = os.path.join(onnx_dir, name + ".onnx") if onnx_dir else ""
    return row["config"].get("source") or (path if path and os.path.exists(path) else name)


def bench_predictions(folder: str, onnx_dir: str | None = None) -> dict:
    """``{(model, strategy, devices): (row, now us)}`` of a bench results folder's rows with a saved
    plan, each plan simulated again with today's cost model for its devices (the models of
    :func:`row_source`; a row whose model is neither a file nor in the zoo is said and left out)."""
    from tvm_partition.bench import ops as bench_ops
    from tvm_partition.bench import results
    from tvm_partition.cost_models import default_cost_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.flags import ZOO_MODELS
    from tvm_partition.plan import Plan
    from tvm_partition.planners.simulate import simulate

    if not os.path.exists(os.path.join(folder, results.RESULTS_JSON)):
        raise FileNotFoundError(f"{folder}: no {results.RESULTS_JSON} (a bench --out folder)")
    models, costs, out = {}, {}, {}
    for row in results.load(folder):
        text = results.load_plan(folder, row)
        if text is None or not results.measured(row) or row.get("predicted_us") is None:
            continue
        devices = parse_devices(row["devices"])
        if row["devices"] not in costs:
            costs[row["devices"]] = default_cost_model(devices)[0]
        cost = costs[row["devices"]]
        source = row_source(row, onnx_dir)
        if not source.endswith(".onnx") and source not in ZOO_MODELS:
            print(f"{folder}: {row['model']} {row['strategy']} left out: no {source}.onnx (--onnx-dir)", file=sys.stderr)
            continue
        if "op" in row:  # bench --split-ops: the op alone, priced as its model's op
            op_id = row["op"]["op"]
            _, graph, _, parent = load_model(models, source, row["config"], op_id, devices)
            cost = bench_ops.as_parent(cost, parent, op_id, graph)
        else:
            graph = load_model(models, source, row["config"], devices=devices)[1]
        now = simulate(graph, Plan.loads(text), cost.for_graph(graph)).latency_us
        out[(row["model"], row["strategy"], row["devices"])] = (row, now)
    return out


def compare_bench(folders: list[str], band: float, onnx_dir: str | None = None) -> int:
    """Print each row's error as built and now in every folder, and the rows within ``band`` % of
    their measured median and of their ``cpu`` row's ratio (``bench.results.within``), as built and
    now."""
    from tvm_partition.bench import results

    runs = [bench_predictions(f, onnx_dir) for f in folders]
    keys = sorted(set().union(*runs))
    print(f"{'row':48s} " + " ".join(f"{os.path.basename(os.path.normpath(f))[:15]:>15s}" for f in folders))
    for key in keys:
        cells = []
        for run in runs:
            if key not in run:
                cells.append(f"{'-':>15s}")
                continue
            row, now_us = run[key]
            built, now = ((us / row["measured_median_us"] - 1) * 100 for us in (row["predicted_us"], now_us))
            cells.append(f"{built:+6.1f} ->{now:+6.1f}")
        print(f"{' '.join(key)[:48]:48s} " + " ".join(cells))
    for f, run in zip(folders, runs):
        built = results.within([row for row, _ in run.values()], band)
        now = results.within([{**row, "predicted_us": us} for row, us in run.values()], band)
        print(f"{f}: {built['pred'][0]} of {built['pred'][1]} rows within {band:g}% as built, {now['pred'][0]} now; "
              f"of their cpu row's ratio {built['vs_cpu'][0]} of {built['vs_cpu'][1]} as built, {now['vs_cpu'][0]} now")
    return 0


def main(argv=None) -> int:
    from tvm_partition.cost_models import default_cost_model
    from tvm_partition.devices import DeviceSpec
    from tvm_partition.plan import Plan
    from tvm_partition.planners.simulate import simulate
    from tvm_partition.runtime.artifact import read_manifest

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifacts", nargs="*", help="artifact folders (manifest.json, plan.json)")
    ap.add_argument("--results", help="a bench results.json holding these rows' measurements")
    ap.add_argument("--bench", nargs="+", metavar="FOLDER", help="bench results folders (results.json, plans.zip) instead")
    ap.add_argument("--band", type=float, default=10.0, help="the error, in percent, a row counts within (--bench)")
    ap.add_argument("--onnx-dir", metavar="DIR", help="--bench: rows of .onnx models whose settings name no file "
                    "load DIR/<model>.onnx (benchmarks/onnx_light.py --out DIR writes the light ones)")
    args = ap.parse_args(argv)
    if args.bench:
        return compare_bench(args.bench, args.band, args.onnx_dir)
    if not args.artifacts:
        ap.error("give artifact folders, or --bench FOLDER...")
    runs = measured(args.results)
    manifests = [read_manifest(art) for art in args.artifacts]  # every one there before a line is printed
    graphs, models = {}, {}
    print(f"{'artifact':58s} {'built':>9s} {'now':>9s} {'measured':>9s} {'now err':>8s}")
    for art, m in zip(args.artifacts, manifests):
        if "/" in m["model"] and "source" not in m["config"]:  # a split-op row's one op
            print(f"{os.path.basename(os.path.normpath(art))[:58]:58s} skipped: one op of a model")
        elif m["strategy"] not in {"tvm-cpu"} and os.path.exists(os.path.join(art, "plan.json")):
            devices = [DeviceSpec.from_json(d) for d in m["devices"]]
            graph = load_model(graphs, m["config"].get("source", m["model"]), m["config"], devices=devices)[1]
            plan = Plan.load(os.path.join(art, "plan.json"))
            where = json.dumps(m["devices"], sort_keys=True)
            if where not in models:
                models[where] = default_cost_model(devices)[0]
            now = simulate(graph, plan, models[where].for_graph(graph)).latency_us
            run = runs.get(_key(m["model"], m["config"], m["strategy"]))
            err = f"{now / run - 1:+8.0%}" if run else f"{'-':>8s}"
            print(f"{os.path.basename(os.path.normpath(art))[:58]:58s} {plan.predicted_latency_us / 1e3:9.3f} "
                  f"{now / 1e3:9.3f} {run / 1e3 if run else float('nan'):9.3f} {err}")
    return 0


if __name__ == "__main__":
    from tvm_partition.errors import TvmPartitionError

    try:
        sys.exit(main())
    except (TvmPartitionError, OSError, ValueError) as e:  # a missing artifact or results file: one line
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
