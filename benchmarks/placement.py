"""Placement benchmark: milp vs HEFT / m-ETF / m-SCT / DP, side by side in one run.

    python benchmarks/placement.py [--time-limit 15] [--sizes 500,1000,2000] [--devices 2,4,6] [--no-congestion]
        [--zoo lstm,gru,bert,inception_v3,resnet50,mobilenetv2] [--zoo-devices cpu,gpu cpu,gpu,gpu,gpu]
        [--external DIR] [--out benchmarks/results/amd-epyc-2c]

Instances: synthetic DNN-like graphs (:func:`tvm_partition.planners.synthetic.dnn_like`, one per
size and device count); zoo models' OpGraphs (TVM fused kernels) with the roofline cost model
and this machine's memory; with ``--external DIR``, the profiled latency graphs that Tarnawski et
al. (NeurIPS'20) publish (``DIR`` = a checkout's ``latency-inputs/``). Every result is checked
with the independent schedule checker (link congestion included, MOIRAI Eq. 8: on by default;
``--no-congestion`` solves the model where transfers overlap, for comparison). Writes
``placement.json`` and ``placement.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import sys
import time

# this checkout's package, not another installed copy
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STRATEGIES = ("heft", "metf", "msct", "dp", "milp")
#: MOIRAI's link congestion (Eq. 8) in every problem; ``--no-congestion`` turns it off
CONGESTION = True


def run_instance(name: str, problem, time_limit: float) -> dict:
    from tvm_partition.planners.placement import solve
    from tvm_partition.planners.problem import ProblemError
    from tvm_partition.planners.schedule import check

    problem.congestion = CONGESTION
    row = {"instance": name, "nodes": problem.graph.number_of_nodes(), "edges": problem.graph.number_of_edges(),
           "devices": len(problem.devices), "congestion": CONGESTION, "results": {}}
    for s in STRATEGIES:
        try:
            r = solve(problem, s, time_limit)
        except ProblemError as e:
            row["results"][s] = {"error": str(e)}
            continue
        errs = check(problem, r.placement, r.schedule, r.makespan_us, r.splits, r.transfers)
        meta = r.meta
        row["results"][s] = {"makespan_us": r.makespan_us, "lower_bound_us": r.lower_bound_us, "gap": r.gap,
                             "solve_s": round(r.solve_s, 3), "valid": not errs,
                             "bound": meta.get("bound", "simple"), "status": meta.get("status"),
                             "tried": meta.get("tried"), "coarsen": meta.get("coarsen"),
                             "warm_start": meta.get("warm_start"),
                             "returned_warm_start": bool(meta.get("returned_warm_start"))}
    print(_line(row), flush=True)
    return row


def _line(row) -> str:
    parts = [f"{row['instance']} n={row['nodes']} D={row['devices']}"]
    for s, r in row["results"].items():
        parts.append(f"{s}={r['makespan_us']:.1f}" if "makespan_us" in r else f"{s}=error")
    m = row["results"].get("milp", {})
    if "gap" in m:
        parts.append(f"gap={100 * m['gap']:.1f}% solve={m['solve_s']:.1f}s")
    return " ".join(parts)


def synthetic(sizes, devices, time_limit):
    from tvm_partition.planners.synthetic import dnn_like

    for n in sizes:
        for d in devices:
            yield run_instance(f"synthetic-{n}", dnn_like(n, d, seed=n + d), time_limit)


def zoo(models, device_sets, time_limit):
    from tvm_partition import frontend
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.planners.placement import problem_for

    for name in models:
        g = OpGraph(frontend.load(name).mod)
        for ds in device_sets:
            yield run_instance(f"zoo-{name} [{ds}]", problem_for(g, parse_devices(ds)), time_limit)


def external(folder, time_limit):
    from tvm_partition.planners.convert import from_tarnawski

    for path in sorted(glob.glob(os.path.join(folder, "*", "*.json"))):
        with open(path, encoding="utf-8") as f:
            problem = from_tarnawski(json.load(f))
        yield run_instance(f"tarnawski-{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)[:-5]}",
                           problem, time_limit)


def markdown(rows, header: str) -> str:
    lines = [header, "",
             "| instance | nodes | D | heft | m-ETF | m-SCT | dp | milp | milp gap (bound) | milp s | "
             "best heuristic / milp | m-SCT / milp |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        res = row["results"]

        def ms(s):
            return f"{res[s]['makespan_us']:.1f}" if "makespan_us" in res.get(s, {}) else "err"

        m = res.get("milp", {})
        heur = [res[s]["makespan_us"] for s in ("heft", "metf", "msct") if "makespan_us" in res.get(s, {})]
        if "makespan_us" in m:
            gap = f"{100 * m['gap']:.1f}% ({m['bound']})"
            best = f"{min(heur) / m['makespan_us']:.3f}" if heur else "-"
            sct = f"{res['msct']['makespan_us'] / m['makespan_us']:.3f}" if "makespan_us" in res.get("msct", {}) else "-"
            solve_s = f"{m['solve_s']:.1f}"
        else:
            gap = best = sct = solve_s = "-"
        lines.append(f"| {row['instance']} | {row['nodes']} | {row['devices']} | {ms('heft')} | {ms('metf')} | "
                     f"{ms('msct')} | {ms('dp')} | {ms('milp')} | {gap} | {solve_s} | {best} | {sct} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/placement.py", description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=15.0, help="seconds per milp / dominators solve")
    ap.add_argument("--sizes", default="500,1000,2000")
    ap.add_argument("--devices", default="2,4,6")
    ap.add_argument("--zoo", default="lstm,gru,bert,inception_v3,resnet50,mobilenetv2")
    ap.add_argument("--zoo-devices", nargs="*", default=["cpu,gpu", "cpu,gpu,gpu,gpu"])
    ap.add_argument("--external", help="Tarnawski et al. latency-inputs/ folder (optional)")
    ap.add_argument("--out", default="benchmarks/results/amd-epyc-2c")
    ap.add_argument("--no-congestion", action="store_true",
                    help="let transfers out of / into one device overlap (the model before MOIRAI Eq. 8)")
    args = ap.parse_args(argv)
    global CONGESTION
    CONGESTION = not args.no_congestion
    t0 = time.time()
    rows = []
    sizes = [int(x) for x in args.sizes.split(",") if x]
    devices = [int(x) for x in args.devices.split(",") if x]
    rows += list(synthetic(sizes, devices, args.time_limit))
    if args.zoo:
        rows += list(zoo(args.zoo.split(","), args.zoo_devices, args.time_limit))
    if args.external:
        rows += list(external(args.external, args.time_limit))
    from tvm_partition.devices import hardware_fingerprint

    cmd = "python benchmarks/placement.py " + " ".join(sys.argv[1:] if argv is None else argv)
    info = {"command": cmd, "date": datetime.date.today().isoformat(), "machine": hardware_fingerprint(),
            "python": platform.python_version(), "time_limit_s": args.time_limit, "wall_s": round(time.time() - t0, 1)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "placement.json"), "w", encoding="utf-8") as f:
        json.dump({"info": info, "rows": rows}, f, indent=1)
    header = (f"Command: `{cmd}`; {info['machine']['cpu']} ({info['machine']['cores']} cores), {info['date']}; "
              f"time limit {args.time_limit:g} s per solve; whole run {info['wall_s']:.0f} s. Makespans in us "
              "(Tarnawski graphs: the source's time unit).")
    with open(os.path.join(args.out, "placement.md"), "w", encoding="utf-8") as f:
        f.write(markdown(rows, header))
    bad = [r["instance"] for r in rows for s in r["results"].values() if s.get("valid") is False]
    if bad:
        print(f"error: infeasible schedules on {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
