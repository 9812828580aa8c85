"""Several edge servers of unequal speed on Ray, measured against their predictions (issue 20).

    python benchmarks/ray_servers.py --shares 1,0.4 [--model resnet18] [--image-size 64] [--batch 8]
        [--fixed 2,1] [--repeat 20] [--requests 100] [--window 4] [--retry-s 15]
        [--out benchmarks/results/MACHINE/ray]

Starts a local Ray cluster (:func:`tvm_partition.bench.servers.local_cluster`): servers A, B, ...
with the given shares of one core (cgroup quotas), on loopback. Rows, each compiled with
``tvm-partition stages`` over the measured servers and run with the Ray pipeline, predicted
(``predicted_ms`` of pipeline.json) beside measured (median of ``--repeat`` requests one at a time):

* batch splits: ``speed`` (EOP VEE '22 Eq. 5 balance over the measured servers), ``equal``,
  ``fixed`` (``--fixed`` ratios), each server alone;
* ``ideal``: 1 / (1/t_A + 1/t_B + ...) of the servers-alone rows (transfers included in each);
* stage placements over the measured servers: ``milp``, ``dp``, ``heft`` (FlexPie/MOIRAI);
* ``auto``: the row predicted fastest (never one predicted slower than the fastest server alone).

Then the kill test: ``--requests`` requests on the speed split with ``--window`` in flight, the last
server killed after answer ``requests / 2``: every answer checked against the single-server run,
the latency spike and the recovery time (from the kill until latencies are back within 1.5x the
median before it) reported. Writes ``ray_servers_<shares>.json`` and ``.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEMENTS = ("milp", "dp", "heft")


def parse_shares(text: str) -> dict[str, float | None]:
    names = [chr(ord("A") + i) for i in range(len(text.split(",")))]
    return {n: (None if v.strip() == "none" else float(v)) for n, v in zip(names, text.split(","))}


def timed(pipe, inputs: dict, repeat: int) -> tuple[float, list]:
    """Median ms of ``repeat`` requests of ``pipe`` one at a time (after two warm-ups), and the
    last answer."""
    for _ in range(2):
        outs = pipe.run(inputs)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        outs = pipe.run(inputs)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times)), outs


def measure(path: str, servers: list[str], inputs: dict, repeat: int) -> tuple[float, list]:
    """:func:`timed` on a pipeline of ``path`` over ``servers``, closed after."""
    from tvm_partition.runtime.cluster import RayPipeline

    pipe = RayPipeline(path, servers)
    try:
        return timed(pipe, inputs, repeat)
    finally:
        pipe.close()  # a row's artifacts would otherwise stay loaded in the servers' actors


def build_row(name: str, work: str, args, address: str, servers: list[str], inputs: dict, expected, **how) -> dict:
    from tvm_partition.cli.stages import compile_pipeline

    out = os.path.join(work, name.replace(" ", "_"))
    mode = "stages" if "strategy" in how else "split"
    from tvm_partition.build.databases import local_database

    # the shipped schedules, as `stages` uses them (tuning_db=None would build TVM's naive default
    # schedules: ResNet-18 at 64 px 155 ms instead of 7 on this machine's CPU)
    compile_pipeline(args.model, len(servers), mode, out, ray=address, tuning_db=local_database(None), **how,
                     **model_args(args))
    with open(os.path.join(out, "pipeline.json"), encoding="utf-8") as f:
        spec = json.load(f)
    measured_ms, outs = measure(out, servers, inputs, args.repeat)
    err = max(float(np.max(np.abs(o - e))) for o, e in zip(outs, expected))
    row = {"row": name, "mode": mode, "predicted_ms": spec.get("predicted_ms"), "measured_ms": round(measured_ms, 3),
           "max_abs_err": err, "path": out}
    if mode == "split":
        row["slices"] = spec["slices"]
    else:
        row["stage_servers"] = [servers[i] for i in spec["stage_servers"]]
    if row["predicted_ms"]:
        row["error_pct"] = round(100 * (row["predicted_ms"] - measured_ms) / measured_ms, 1)
    print(f"{name:>14}: predicted {row['predicted_ms']} ms, measured {measured_ms:.2f} ms", flush=True)
    return row


def model_args(args) -> dict:
    return {k: v for k, v in (("batch", args.batch), ("image_size", args.image_size), ("seq_len", args.seq_len)) if v}


def rows(args, address: str, servers: list[str], work: str, inputs, expected) -> list[dict]:
    n = len(servers)
    out = [build_row("speed", work, args, address, servers, inputs, expected, ratios="speed"),
           build_row("equal", work, args, address, servers, inputs, expected,
                     ratios="equal" if args.batch % n == 0 else ",".join(["1"] * n)),
           build_row("fixed", work, args, address, servers, inputs, expected, ratios=args.fixed)]
    alone = []
    for i, s in enumerate(servers):
        ratios = ",".join("1" if j == i else "0" for j in range(n))
        alone.append(build_row(f"{s} alone", work, args, address, servers, inputs, expected, ratios=ratios))
    out += alone
    ideal = 1.0 / sum(1.0 / r["measured_ms"] for r in alone)
    out.append({"row": "ideal", "mode": "split", "measured_ms": round(ideal, 3), "predicted_ms": None,
                "note": "1 / sum(1 / t_alone), transfers included in each t_alone"})
    for s in PLACEMENTS:
        out.append(build_row(s, work, args, address, servers, inputs, expected, strategy=s))
    fastest_alone = min(r["predicted_ms"] for r in alone if r["predicted_ms"])
    candidates = [r for r in out if r.get("predicted_ms") and r["predicted_ms"] <= fastest_alone]
    best = min(candidates, key=lambda r: r["predicted_ms"])
    out.append({**best, "row": f"auto ({best['row']})"})
    return out


def kill_test(args, cluster, servers: list[str], path: str, inputs: dict, expected) -> dict:
    """``--requests`` on the pipeline at ``path``, the last server killed after answer requests/2."""
    from tvm_partition.runtime.cluster import RayPipeline

    pipe = RayPipeline(path, servers, retry_s=args.retry_s)
    pipe.run(inputs)
    at, victim, killed, done = args.requests // 2, servers[-1], {}, []

    def kill() -> None:
        t0 = time.perf_counter()
        cluster.kill(victim)
        killed["kill_s"] = time.perf_counter() - t0

    def on_answer(i: int) -> None:
        done.append(time.perf_counter())
        if i == at - 1:
            killed["t"] = time.perf_counter()
            # on a thread, as a crash happens: stopping the node here kills it at once but then
            # waits for its processes to be reaped and its cgroup removed (~1.5 s), which called
            # in this callback held up the driver and counted in the requests' latency
            killer.start()

    killer = threading.Thread(target=kill)
    answers, latency, wall = pipe.stream([inputs] * args.requests, args.window, on_answer)
    killer.join()
    correct = sum(all(np.allclose(o, e, rtol=0, atol=1e-4) for o, e in zip(a, expected)) for a in answers)
    before = float(np.median(latency[:at])) if at else float("nan")
    after = latency[at:]
    # recovered: from the kill until the answer from which every latency is back within 1.5x the
    # median before it (requests overlap, so their latencies are not added up)
    normal = [k for k in range(len(after)) if all(t <= 1.5 * before for t in after[k:])]
    recovery_ms = (done[at + normal[0]] - killed["t"]) * 1e3 if normal and killed else None
    return {"requests": args.requests, "killed": victim, "at": at, "answers": len(answers), "correct": int(correct),
            "median_before_ms": round(before, 3), "spike_ms": round(max(after), 3) if after else None,
            "recovery_ms": None if recovery_ms is None else round(recovery_ms, 3),
            "moved_to": pipe.servers, "wall_s": round(wall, 3), "kill_call_s": round(killed.get("kill_s", 0.0), 3)}


def markdown(result: dict) -> str:
    lines = [f"# Ray servers, shares {result['shares']} ({result['machine']}, {result['date']})", "",
             f"`{result['command']}`", "",
             "| row | mode | slices / stages | predicted ms | measured ms | error % |", "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        where = r.get("slices") or r.get("stage_servers") or ""
        lines.append(f"| {r['row']} | {r['mode']} | {where} | {r.get('predicted_ms') or ''} | {r['measured_ms']} | "
                     f"{r.get('error_pct', '')} |")
    k = result["kill"]
    by = {r["row"]: r["measured_ms"] for r in result["rows"]}
    if all(k in by for k in ("speed", "equal", "ideal")):
        fastest = min(v for k, v in by.items() if k.endswith(" alone"))
        lines += ["", f"speed split: {by['equal'] / by['speed']:.2f}x equal, {fastest / by['speed']:.2f}x the fastest "
                      f"server alone, {100 * by['ideal'] / by['speed']:.0f}% of the ideal."]
    lines += ["", f"Kill test: {k['requests']} requests, server {k['killed']} killed after answer {k['at']}: "
              f"{k['correct']}/{k['answers']} correct; latency median before {k['median_before_ms']} ms, "
              f"spike {k['spike_ms']} ms, recovery {k['recovery_ms']} ms; work moved to {k['moved_to']}.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    from tvm_partition import frontend
    from tvm_partition.bench.servers import local_cluster
    from tvm_partition.cli.compile import reference_outputs
    from tvm_partition.devices import fingerprint_id

    ap = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    ap.add_argument("--shares", default="1,0.4", help="each server's share of one core (none: unconfined)")
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--seq-len", type=int)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--fixed", help="the fixed ratios row (default 1,1,... with the first server doubled)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--window", type=int, default=4)
    ap.add_argument("--retry-s", type=float, default=15.0,
                    help="kill test: how long to wait for a restarted actor before moving its work")
    ap.add_argument("--out", default=None, help="default benchmarks/results/<machine>/ray")
    args = ap.parse_args(argv)
    if args.model not in ("resnet18", "resnet50", "mobilenetv2", "inception_v3"):
        args.image_size = None
    shares = parse_shares(args.shares)
    servers = list(shares)
    args.fixed = args.fixed or ",".join(["2"] + ["1"] * (len(servers) - 1))
    model = frontend.load(args.model, **model_args(args))
    expected = reference_outputs(model)
    with tempfile.TemporaryDirectory(prefix="tvmp-ray-bench-") as work, local_cluster(shares) as cluster:
        table = rows(args, cluster.address, servers, work, model.inputs, expected)
        speed = next(r for r in table if r["row"] == "speed")
        kill = kill_test(args, cluster, servers, speed["path"], model.inputs, expected)
    machine = fingerprint_id()
    result = {"shares": args.shares, "machine": machine, "python": platform.python_version(),
              "date": datetime.date.today().isoformat(), "model": args.model, **model_args(args),
              "command": "python benchmarks/ray_servers.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "rows": [{k: v for k, v in r.items() if k != "path"} for r in table], "kill": kill}
    out = args.out or os.path.join(REPO, "benchmarks", "results", machine, "ray")
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, f"ray_servers_{args.shares.replace(',', '_')}")
    with open(stem + ".json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    with open(stem + ".md", "w", encoding="utf-8") as f:
        f.write(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
