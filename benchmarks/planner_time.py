"""Planner time of every zoo model: EOP and auto, side by side with the cheap baselines.

    python benchmarks/planner_time.py [--models lstm,gru,...] [--devices cpu,gpu] [--tuning-logs DIR]
        [--out benchmarks/results/amd-epyc-2c]

For each model at its default (EOP Table 3) setting: fused ops, EOP's key ops, splits, planner
wall time (graph analysis excluded: it is shared by every strategy), predicted latency (the list
schedule of :mod:`tvm_partition.planners.simulate`) and AT(G, R). Planning only: nothing is compiled or run.
Writes ``planner_time.json`` and ``planner_time.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

# this checkout's package, not another installed copy
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STRATEGIES = ("cpu", "gpu", "equal", "fixed", "eop", "auto")


def main(argv=None) -> int:
    from tvm_partition import frontend
    from tvm_partition.frontend import zoo
    from tvm_partition.cost_models import default_cost_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.planners import plan_with
    from tvm_partition.planners.simulate import simulate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(zoo.NAMES))
    ap.add_argument("--devices", default="cpu,gpu")
    ap.add_argument("--tuning-logs")
    ap.add_argument("--out", default=os.path.join("benchmarks", "results", "amd-epyc-2c"))
    args = ap.parse_args(argv)
    devices = parse_devices(args.devices)
    cm, note = default_cost_model(devices, args.tuning_logs)
    print(note, flush=True)
    rows = []
    for name in args.models.split(","):
        model = frontend.load(name)
        t0 = time.perf_counter()
        graph = OpGraph(model.mod)
        graph_s = time.perf_counter() - t0
        for strategy in STRATEGIES:
            t0 = time.perf_counter()
            plan = plan_with(strategy, graph, devices, cm)
            plan_s = time.perf_counter() - t0
            sim = simulate(graph, plan, cm)
            eop = plan.meta.get("eop") or {}
            row = {"model": name, "config": model.config, "ops": len(graph), "graph_s": round(graph_s, 3),
                   "strategy": strategy, "plan_s": round(plan_s, 4), "predicted_us": sim.latency_us,
                   "sum_us": sim.sum_us, "splits": sum(1 for d in plan.ops.values() if hasattr(d, "ratios")),
                   "key_ops": len(eop.get("key_ops", [])) or None,
                   "chosen": (plan.meta.get("auto") or {}).get("chosen") or eop.get("chosen")}
            rows.append(row)
            print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    meta = {"date": datetime.date.today().isoformat(), "machine": platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "devices": args.devices, "cost_model": note,
            "command": "python benchmarks/planner_time.py " + " ".join(argv or sys.argv[1:])}
    with open(os.path.join(args.out, "planner_time.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = ["| model | fused ops | key ops | strategy | plan s | predicted ms | AT(G,R) ms | splits | chosen |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['ops']} | {r['key_ops'] or ''} | {r['strategy']} | {r['plan_s']:.3f} | "
                     f"{r['predicted_us'] / 1e3:.3f} | {r['sum_us'] / 1e3:.3f} | {r['splits']} | {r['chosen'] or ''} |")
    with open(os.path.join(args.out, "planner_time.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
