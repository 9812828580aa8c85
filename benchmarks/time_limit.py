"""Does ``place --time-limit S`` hold for the whole command? (issue 21 item 6)

Times ``python -m tvm_partition place PROBLEM --time-limit S`` from outside (process start to exit:
interpreter, imports, loading the problem, warm starts, coarsening, decomposition, the schedule
check and the output) on synthetic graphs of 3,705 (13 devices) and 10,002 nodes (4 devices)
(:func:`tvm_partition.planners.synthetic.dnn_like`) and, where given, the largest published
operator graph of Tarnawski et al. (2,012 nodes, 7 devices; ``--external`` its
``throughput-inputs/OperatorGraphs/bert_L-12_training.json``)::

    python benchmarks/time_limit.py --limits 2,5,10,30 [--external FILE] [--out DIR]

Writes ``DIR/time_limit.{json,md}`` (default ``benchmarks/results/<machine>/``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def problems(external: str | None, folder: str) -> dict[str, str]:
    from tvm_partition.planners.convert import from_tarnawski
    from tvm_partition.planners.synthetic import dnn_like

    out = {}
    for n, d in ((3704, 13), (10000, 4)):
        path = os.path.join(folder, f"synthetic-{n}x{d}.json")
        dnn_like(n, d, seed=n + d).save(path)
        out[f"synthetic-{n} x {d} devices"] = path
    if external:
        with open(external, encoding="utf-8") as f:
            path = os.path.join(folder, "tarnawski.json")
            from_tarnawski(json.load(f)).save(path)
            out[f"tarnawski {os.path.basename(external)[:-5]}"] = path
    return out


def main(argv=None) -> int:
    from tvm_partition.devices import fingerprint_id

    ap = argparse.ArgumentParser(prog="python benchmarks/time_limit.py", description=__doc__.splitlines()[0])
    ap.add_argument("--limits", default="2,5,10,30")
    ap.add_argument("--external", help="a Tarnawski et al. graph (JSON)")
    ap.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results", fingerprint_id()))
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in problems(args.external, tmp).items():
            for limit in (float(x) for x in args.limits.split(",")):
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "tvm_partition", "place", path, "--time-limit", str(limit)],
                                      capture_output=True, text=True)
                wall = time.perf_counter() - t0
                line = (proc.stdout.strip().splitlines() or [proc.stderr.strip()])[0]
                rows.append({"instance": name, "limit_s": limit, "wall_s": round(wall, 2), "over": round(wall / limit - 1, 4),
                             "result": line})
                print(f"{name} S={limit:g}: {wall:.2f} s ({100 * (wall / limit - 1):+.1f}%) {line}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "time_limit.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(args.out, "time_limit.md"), "w", encoding="utf-8") as f:
        f.write("| instance | S | wall s | over S | makespan |\n|---|---:|---:|---:|---:|\n")
        for r in rows:
            mk = r["result"].split("makespan_us=")[1].split()[0] if "makespan_us=" in r["result"] else r["result"]
            f.write(f"| {r['instance']} | {r['limit_s']:g} | {r['wall_s']:.2f} | {100 * r['over']:+.1f}% | {mk} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
