"""Predict measured plans again with today's cost model, beside what they measured.

    python benchmarks/predict_again.py ARTIFACT... [--results results.json]

Each artifact (``compile ... --out DIR``, or a bench bundle's ``artifacts/*``) holds the plan that
ran and, in its manifest, the model, settings and devices it was built for. Its plan is simulated
again (:func:`tvm_partition.planners.simulate.simulate`) with the cost model a build for those
devices takes now (:func:`tvm_partition.cost_models.default_cost_model`: the shipped profile of
the machine the devices name), and printed beside the prediction it was built with and, given a
``bench`` results file, its measured median. Why: a cost-model change is checked against runs
made on a machine that is gone (the H100 machine's rows, 2026-11-27) without measuring again.
A ``bench --split-ops`` row's artifact (model ``MODEL/KERNEL``: one op cut out of a model) has no
model to load again: it is listed as skipped (a bundle's ``artifacts/*`` holds both kinds).
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


def main(argv=None) -> int:
    from tvm_partition import frontend
    from tvm_partition.frontend import model_options
    from tvm_partition.cost_models import default_cost_model
    from tvm_partition.devices import DeviceSpec
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.plan import Plan
    from tvm_partition.planners.simulate import simulate
    from tvm_partition.runtime.artifact import read_manifest

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifacts", nargs="+", help="artifact folders (manifest.json, plan.json)")
    ap.add_argument("--results", help="a bench results.json holding these rows' measurements")
    args = ap.parse_args(argv)
    runs = measured(args.results)
    manifests = [read_manifest(art) for art in args.artifacts]  # every one there before a line is printed
    graphs, models = {}, {}
    print(f"{'artifact':58s} {'built':>9s} {'now':>9s} {'measured':>9s} {'now err':>8s}")
    for art, m in zip(args.artifacts, manifests):
        if "/" in m["model"] and "source" not in m["config"]:  # a split-op row's one op
            print(f"{os.path.basename(os.path.normpath(art))[:58]:58s} skipped: one op of a model")
        elif m["strategy"] not in {"tvm-cpu"} and os.path.exists(os.path.join(art, "plan.json")):
            source = m["config"].get("source", m["model"])  # an ONNX file's path; a zoo model's name
            opts = {k: v for k, v in m["config"].items() if k in model_options(source)}
            key = (source, json.dumps(opts, sort_keys=True))
            if key not in graphs:
                graphs[key] = OpGraph(frontend.load(source, seed=0, **opts).mod)
            plan = Plan.load(os.path.join(art, "plan.json"))
            where = json.dumps(m["devices"], sort_keys=True)
            if where not in models:
                models[where] = default_cost_model([DeviceSpec.from_json(d) for d in m["devices"]])[0]
            now = simulate(graphs[key], plan, models[where].for_graph(graphs[key])).latency_us
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
