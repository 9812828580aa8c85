"""How far this machine drifts: the same builds timed in a fresh process, minute after minute.

    python benchmarks/drift.py [--minutes 30] [--every-s 60] [--out FILE.json]

Builds three of ``bench --quick``'s rows once, as a profile's contexts build them
(:func:`tvm_partition.profiling.context.build_context`, this machine's schedules): the GRU's
heaviest key op alone (one kernel of ~3 us: the VM's own work is a quarter of it), the LSTM at
sequence 10 (196 us: 288 small kernels) and ResNet-18's heaviest convolution alone (~210 us of
compute). Then, every ``--every-s`` for ``--minutes``, one fresh process times each in the VM and
its kernels alone exactly as a profile does (:func:`tvm_partition.cost_models.timing.time_context`:
five rounds, each the median of >= 150 ms of runs timed from Python; the quickest round kept).
Prints each reading and, at the end, each build's min / median / max and its profile's own reading
(the ``context`` record of the same model in this machine's profile, where there is one), and
writes them all to ``--out``.

Why: ``bench --quick`` predicts its rows from a profile taken minutes or hours before and compares
them with medians over three processes; a profile keeps the quickest reading of every sample and
context. What this measures is the part of a row's error no cost model can remove on this machine:
how much one build's time moves between phases of the VM's neighbours, and where the profile's
quickest reading lies in that spread.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy

clock, pause = time.monotonic, time.sleep  # the test's stand-ins replace these, not the time module's

#: ``(zoo model, its bench --quick settings, key op to cut out or None for the whole model)``
BUILDS = (("gru", {"seq_len": 10}, "fused_matmul1_add"),
          ("lstm", {"seq_len": 10}, None),
          ("resnet18", {"image_size": 64}, "fused_conv2d10_add7"))

#: What one reading runs in its fresh process (the full TVM: ``bench``'s runtime-only TVM reads an
#: op row the same, 2026-12-04): each build of the spec file timed as a profile times a context.
CHILD = r"""
import json, sys
import tvm
from tvm_partition.cost_models import timing
from tvm_partition.devices import use_cpu_threads
use_cpu_threads()
out = []
for s in json.load(open(sys.argv[1])):
    r = timing.time_context(s["path"], s["inputs"], s["params"], s["kernels"], tvm.cpu())
    out.append({"vm_us": r["vm_us"], "alone_us": r["warm_us"]})
print(json.dumps(out))
"""


def parser():
    ap = argparse.ArgumentParser(prog="python benchmarks/drift.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="how long to keep reading (default 30)")
    ap.add_argument("--every-s", type=float, default=60.0, help="seconds from one reading's start to the next's")
    ap.add_argument("--threads", default="",
                    help="comma-separated TVM_NUM_THREADS to read each build with in turn, one process each "
                         "(default: the profile's own, TVM_NUM_THREADS or every core)")
    ap.add_argument("--out", help="JSON file of every reading and the summary")
    ap.add_argument("--chart", help="PNG of each build's readings over its profile's, minute by minute")
    ap.add_argument("--from-json", metavar="FILE", help="draw --chart from an --out file of an earlier run; time nothing")
    return ap


def build_all(tmp: str) -> list[dict]:
    """Each of :data:`BUILDS` built as a profile's context, with its profile's logged reading."""
    from tvm_partition import frontend
    from tvm_partition.build.tuning import open_schedules
    from tvm_partition.cli.profile import op_models
    from tvm_partition.devices import DEFAULT_LOGS, database_dir, parse_devices
    from tvm_partition.cost_models.logs import ProfileLog, sample_key
    from tvm_partition.profiling.context import build_context

    devices = parse_devices("cpu,cpu")
    folder = database_dir(DEFAULT_LOGS)
    schedules = open_schedules(folder)
    log = ProfileLog(folder)
    specs = []
    for name, settings, op in BUILDS:
        model = frontend.load(name, **settings)
        if op is not None:
            model = next(m for m in op_models([model], devices, DEFAULT_LOGS) if m.name.endswith("/" + op))
        path = os.path.join(tmp, f"{len(specs)}.so")
        spec, record = build_context(model, devices[0], schedules, path)
        old = log.get(sample_key(record)) or {}  # the context the profile keeps for this model
        specs.append({"name": model.name, "path": path, "inputs": spec["inputs"], "params": spec["params"],
                      "kernels": spec["kernels"], "profile_vm_us": old.get("vm_us"), "profile_time": old.get("time")})
    return specs


def read(spec_file: str, threads: str | None) -> list[dict]:
    """One reading of every build of ``spec_file`` in a fresh process (:data:`CHILD`) on
    ``threads`` (None: this process's ``TVM_NUM_THREADS``, or every core)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    if threads is not None:
        env["TVM_NUM_THREADS"] = threads
    proc = subprocess.run([sys.executable, "-c", CHILD, spec_file], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> dict:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def summarise(specs: list[dict], readings: list[dict], threads: str | None) -> list[dict]:
    """Per build, the spread of ``readings`` (of one thread count) beside its profile's reading; printed."""
    out = []
    for i, s in enumerate(specs):
        vm = [r["builds"][i]["vm_us"] for r in readings]
        row = {"name": s["name"], "threads": threads, "vm_us": spread(vm),
               "alone_us": spread([r["builds"][i]["alone_us"] for r in readings]),
               "profile_vm_us": s["profile_vm_us"], "profile_time": s["profile_time"]}
        out.append(row)
        v = row["vm_us"]
        on = "" if threads is None else f" on {threads} thread{'' if threads == '1' else 's'}"
        line = (f"{s['name']}{on}: in the VM {v['min']:.2f} / {v['median']:.2f} / {v['max']:.2f} us "
                f"(min / median / max of {len(vm)}; max {v['max'] / v['min'] - 1:+.0%} over min)")
        if s["profile_vm_us"] and threads is None:
            line += (f"; the profile's reading {s['profile_vm_us']:.2f} ({s['profile_time']}): the median "
                     f"{v['median'] / s['profile_vm_us'] - 1:+.1%} over it")
        print(line)
    return out


def series(data: dict) -> list[tuple[str, list[str], list[float]]]:
    """``(label, times, reading / profile's reading)`` per build, of the first thread count an
    ``--out`` file read (a build the profile has no context of: over its quickest reading)."""
    threads = data["readings"][0].get("threads") if data["readings"] else None
    readings = [r for r in data["readings"] if r.get("threads") == threads]
    out = []
    for i, s in enumerate(r for r in data["summary"] if r.get("threads") == threads):
        base = s["profile_vm_us"] or s["vm_us"]["min"]
        out.append((f"{s['name']} ({'profile' if s['profile_vm_us'] else 'min'} {base:.1f} us)",
                    [r["time"][:5] for r in readings], [r["builds"][i]["vm_us"] / base for r in readings]))
    return out


def chart(data: dict, path: str) -> None:
    """:func:`series` drawn over time, with the 10% line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = series(data)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for label, times, ratios in lines:
        ax.plot(times, ratios, marker=".", label=label)
    ax.axhline(1.1, color="grey", linestyle=":", linewidth=1)
    ax.set_ylabel("in the VM / profile's reading")
    ax.set_xticks(ax.get_xticks()[::max(1, len(lines[0][1]) // 9 if lines else 1)])
    ax.legend(fontsize=7)
    ax.set_title(textwrap.fill(data.get("command", ""), 130), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.from_json:
        if not args.chart:
            print("error: --from-json draws a --chart: give one", file=sys.stderr)
            return 2
        try:
            with open(args.from_json) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print(f"error: {args.from_json}: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
            return 2
        chart(data, args.chart)
        return 0
    with tempfile.TemporaryDirectory(prefix="tvmp-drift-") as tmp:
        print("building ...", file=sys.stderr)
        specs = build_all(tmp)
        spec_file = os.path.join(tmp, "specs.json")
        with open(spec_file, "w") as f:
            json.dump(specs, f)
        threads = [t for t in args.threads.split(",") if t] or [None]
        readings = []
        end = clock() + args.minutes * 60
        while clock() < end:
            start = clock()
            for t in threads:
                try:
                    got = read(spec_file, t)
                except RuntimeError as e:
                    print(f"error: a reading failed: {e}", file=sys.stderr)
                    return 1
                readings.append({"time": time.strftime("%H:%M:%S"), "threads": t, "builds": got})
                print(readings[-1]["time"], f"threads {t or '-'} ",
                      "  ".join(f"{s['name']}: {g['vm_us']:.2f} ({g['alone_us']:.2f} alone)"
                                for s, g in zip(specs, got)), flush=True)
            pause(max(0.0, args.every_s - (clock() - start)))
    summary = [row for t in threads for row in summarise(specs, [r for r in readings if r["threads"] == t], t)]
    data = {"command": "python benchmarks/drift.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "readings": readings, "summary": summary}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(data, f, indent=1)
    if args.chart:
        chart(data, args.chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
