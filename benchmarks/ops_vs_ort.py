"""Where a build loses to onnxruntime, op by op: our kernels and onnxruntime's nodes timed in
alternating rounds.

    python benchmarks/ops_vs_ort.py MODEL.onnx ARTIFACT [--rounds 7] [--runs 3] [--out FILE.json]

``ARTIFACT``: ``tvm-partition compile MODEL.onnx --out ARTIFACT`` (a CPU build). Each round times
``--runs`` runs of onnxruntime with its profiler on, in a process of its own (:func:`ort_side`),
and ``--runs`` runs of the artifact under the VM's instrument
(:meth:`tvm_partition.runtime.runner.Runner.kernel_times`, as ``run --kernels``) in this one,
seconds apart, the order alternating from round to round; a row's ratio is taken within each round
and the table gives its median over the rounds. Why: ``bench`` times a row in fresh processes, and
on the 2-core build VM one such reading of our row against onnxruntime's can be 1.7x off (ResNet-50
in 8 paired rounds of ``benchmarks/paired.py``: 1.06x to 2.09x onnxruntime's time, 2026-12-01),
where a comparison kernel by kernel, both sides timed within seconds, is what says which kernels to
work on.

Rows: a convolution is keyed by its input's channels, height and width, its output channels and
its window on both sides (ours: the ``conv2d`` a fused kernel computes, read off
:class:`tvm_partition.ir.graph.OpGraph`; onnxruntime's: a ``Conv`` or ``FusedConv`` node's input
shapes), the channel counts rounded up to :data:`CHANNELS`: onnxruntime pads them to its NCHWc
blocks (SqueezeNet's 1000 output channels to 1008, EfficientNet's 24 input channels to 32) where
our frontend pads a classifier's to 1024. Two convolutions of one key are one row on both sides.
Everything else is a row by kind (:func:`kind`): pooling, matmuls, onnxruntime's NCHWc layout
reorders, the VM's builtins (allocations, views: the instrument adds a few microseconds to each
call, :meth:`~tvm_partition.runtime.runner.Runner.kernel_times`), the rest. onnxruntime's fused
activations count with their convolution (``FusedConv``), as ours do; one it leaves as a node of
its own (EfficientNet's ``x * sigmoid(x)``, its ``QuickGelu``) is in "other" there and in the
convolution's row here.

onnxruntime's session is ``bench``'s (``intra_op_num_threads`` = the artifact's thread count, one
inter-op thread, all graph optimisations, its thread pool spinning between nodes as by default),
in a process of its own that ends before our side runs. Why apart: spinning in this process, its
pool slowed our kernels timed right after it 1.1-5x (ResNet-50's 1x1 convolutions each alone, 2
threads, 2026-12-01: two pools of spinning threads on two cores), and a session that did not spin
paid a wake-up per parallel node, so that its nodes summed to more than its plain runs: SqueezeNet
1.98-2.11 ms a plain run spinning, 2.59-2.73 not, 2.97-4.66 profiled (2 threads, 2026-12-03), the
table then reading our kernels at 0.69x its nodes where ``bench`` measured the model at 1.23x
onnxruntime's time. Spinning and profiled, apart, its nodes summed to 2.80 ms a run against 2.61
for its plain runs (the profiler's share) and ours to 3.37 (2026-12-05, intel-r-xeon-r-processor-
rocketlake-2c): the rows now say by how much a kind loses, within the profiler's few percent.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy

#: Channel counts are rounded up to a multiple of this in a convolution's key (see the docstring).
CHANNELS = 32
#: onnxruntime's ops by the row they count in (anything else: "other").
ORT_KINDS = {"MaxPool": "pool", "AveragePool": "pool", "GlobalAveragePool": "pool", "GlobalMaxPool": "pool",
             "Gemm": "matmul", "MatMul": "matmul", "FusedMatMul": "matmul", "FusedGemm": "matmul",
             "ReorderInput": "layout (onnxruntime's NCHWc reorders)",
             "ReorderOutput": "layout (onnxruntime's NCHWc reorders)"}
WARMUP_RUNS = 5
#: The convolution a fused kernel's name starts with (TVM's PrimFunc names: ``fused_conv2d13_add10...``).
CONV_NAME = re.compile(r"(conv2d\d*)_")


def conv_key(data_shape, weight_shape) -> str:
    """The row of a 2-D convolution of ``data_shape`` (NCHW) by ``weight_shape`` (OIHW)."""
    def up(c):
        return -(-int(c) // CHANNELS) * CHANNELS

    _, c_in, h, w = (int(x) for x in data_shape)
    c_out, _, kh, kw = (int(x) for x in weight_shape)
    return f"conv {up(c_in)}x{h}x{w} -> {up(c_out)}, {kh}x{kw}"


def kind(name: str) -> str:
    """The row of one of our VM's calls that is not a convolution, by its function's name."""
    if name.startswith(("vm.builtin.", "runtime.")):
        return "runtime (VM builtins)"
    if "pool" in name:
        return "pool"
    if "matmul" in name or "dense" in name:
        return "matmul"
    return "other"


def our_keys(model) -> dict[str, str]:
    """``{"conv2d<N>": row}`` of every convolution kernel of the model (TVM's PrimFunc names)."""
    from tvm_partition.ir.graph import OpGraph

    keys = {}
    for op in OpGraph(model.mod).ops.values():
        m = CONV_NAME.search(op.fused_name + "_")
        if op.kind == "conv2d" and m and len(op.input_shapes) > 1 and len(op.input_shapes[1]) == 4:
            keys[m.group(1)] = conv_key(op.input_shapes[0], op.input_shapes[1])
    return keys


def our_row(name: str, keys: dict[str, str]) -> str:
    m = CONV_NAME.search(name + "_")
    return keys.get(m.group(1), kind(name)) if m else kind(name)


def ort_row(event: dict) -> str:
    """The row of one node of onnxruntime's profile (a ``*_kernel_time`` event)."""
    args = event["args"]
    op, shapes = args["op_name"], args.get("input_type_shape") or []
    if op in ("Conv", "FusedConv") and len(shapes) > 1:
        data, weight = (next(iter(s.values())) for s in shapes[:2])
        if len(data) == 4 and len(weight) == 4:
            return conv_key(data, weight)
    return ORT_KINDS.get(op, "other")


def ort_session(path: str, threads: int, prefix: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling, so.profile_file_prefix = True, prefix
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_side(path: str, feeds_npz: str, threads: int, runs: int) -> Counter:
    """One round of onnxruntime's side, in the calling process: a session of ``path``
    (:func:`ort_session`), ``WARMUP_RUNS`` runs then ``runs`` profiled ones on the arrays of
    ``feeds_npz`` (keyed by the graph's input names); microseconds a run of each row, each at its
    median run (:func:`ort_rounds`). :func:`measure` runs it in a process of its own a round."""
    import numpy as np

    prefix = os.path.join(os.path.dirname(os.path.abspath(feeds_npz)), f"ort_{os.getpid()}")
    sess = ort_session(path, threads, prefix)
    with np.load(feeds_npz) as f:
        feeds = {k: f[k] for k in f.files}
    for _ in range(WARMUP_RUNS + runs):
        sess.run(None, feeds)
    profile = sess.end_profiling()
    try:
        with open(profile, encoding="utf-8") as f:
            return ort_rounds(json.load(f), 1, runs)[0]
    finally:
        os.remove(profile)


def ort_rounds(events: list[dict], rounds: int, runs: int) -> list[Counter]:
    """Per round, microseconds a run of each row, the median over the round's runs (as
    :meth:`~tvm_partition.runtime.runner.Runner.kernel_times` reads ours), from the profile of
    ``WARMUP_RUNS`` runs then ``rounds`` x ``runs`` (events are attributed to the last
    ``model_run`` that began before them)."""
    starts = sorted(e["ts"] for e in events if e.get("name") == "model_run")[WARMUP_RUNS:]
    per_run = [Counter() for _ in range(rounds * runs)]
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        i = bisect.bisect_right(starts, e["ts"]) - 1
        if 0 <= i < rounds * runs:
            per_run[i][ort_row(e)] += e["dur"]
    blocks = [per_run[r * runs:(r + 1) * runs] for r in range(rounds)]
    return [Counter({key: statistics.median(run.get(key, 0.0) for run in block) for key in set().union(*block)})
            for block in blocks]


class OrtSideError(RuntimeError):
    """A round's onnxruntime process failed; the message ends with the last line it wrote."""


def measure(path: str, art: str, rounds: int, runs: int, say=print) -> dict:
    """``{"ours": [Counter per round], "ort": [...]}``: microseconds per run of every row."""
    import tempfile

    import numpy as np

    from tvm_partition import frontend
    from tvm_partition.inputs import graph_input_names
    from tvm_partition.runtime.runner import Runner

    runner = Runner(art)
    config = runner.manifest.get("config", {})  # the shapes the artifact was built for (--seq-len, ...)
    model = frontend.load(path, seed=0, **{k: config[k] for k in frontend.MODEL_OPTIONS if k in config})
    keys = our_keys(model)
    inputs = runner.example_inputs(0)
    threads = getattr(runner, "threads", None) or os.cpu_count()
    ours, ort = [], []
    with tempfile.TemporaryDirectory(prefix="ops_vs_ort_") as tmp:
        feeds = os.path.join(tmp, "feeds.npz")
        np.savez(feeds, **dict(zip(graph_input_names(path), (np.asarray(v) for v in model.inputs.values()))))
        child = [sys.executable, os.path.abspath(__file__), "--ort-side", path, feeds, str(threads), str(runs)]
        for r in range(rounds):
            for side in ("ort", "ours") if r % 2 == 0 else ("ours", "ort"):
                if side == "ort":
                    done = subprocess.run(child, capture_output=True, text=True, check=False)
                    if done.returncode != 0:
                        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
                        raise OrtSideError(f"onnxruntime's side failed: {last}")
                    ort.append(Counter(json.loads(done.stdout)))
                else:
                    calls, _ = runner.kernel_times(inputs, runs)
                    row = Counter()
                    for name, (_, us) in calls.items():
                        row[our_row(name, keys)] += us
                    ours.append(row)
            say(f"round {r + 1}/{rounds}: ours {sum(ours[-1].values()):.0f} us, onnxruntime {sum(ort[-1].values()):.0f} us")
    return {"ours": ours, "ort": ort}


def summary(result: dict) -> list[dict]:
    """One row per key, heaviest gap first, then the totals: medians over the rounds."""
    ours, ort = result["ours"], result["ort"]

    def row(key, o, t):
        # a ratio only where both sides ran the row in every round (a row of one side: None)
        ratios = [a / b for a, b in zip(o, t) if a > 0 and b > 0]
        return {"row": key, "ours_us": statistics.median(o), "ort_us": statistics.median(t),
                "ratio": statistics.median(ratios) if len(ratios) == len(o) else None}

    keys = sorted(set().union(*ours, *ort))
    rows = [row(k, [r.get(k, 0.0) for r in ours], [r.get(k, 0.0) for r in ort]) for k in keys]
    rows.sort(key=lambda r: r["ort_us"] - r["ours_us"])
    return rows + [row("total", [sum(r.values()) for r in ours], [sum(r.values()) for r in ort])]


def table(rows: list[dict]) -> str:
    lines = ["| row | ours us/run | onnxruntime us/run | ours / onnxruntime |", "| --- | ---: | ---: | ---: |"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        lines.append(f"| {r['row']} | {r['ours_us']:.0f} | {r['ort_us']:.0f} | {ratio} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--ort-side"]:  # measure()'s child: one round of onnxruntime's side, as JSON
        model, feeds, threads, runs = argv[1:5]
        print(json.dumps(ort_side(model, feeds, int(threads), int(runs))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="the .onnx file")
    ap.add_argument("artifact", help="our CPU build of it (tvm-partition compile MODEL --out DIR)")
    ap.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each side a round (default 3)")
    ap.add_argument("--out", help="write the rounds and the table as JSON here")
    args = ap.parse_args(argv)
    why = (f"{args.model}: not an .onnx file" if not (args.model.endswith(".onnx") and os.path.isfile(args.model))
           else f"{args.artifact}: no such artifact folder" if not os.path.isdir(args.artifact)
           else "--rounds and --runs must be >= 1" if min(args.rounds, args.runs) < 1 else None)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    t0 = time.time()
    try:
        result = measure(args.model, args.artifact, args.rounds, args.runs, say=lambda m: print(m, file=sys.stderr))
    except OrtSideError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    rows = summary(result)
    print(table(rows))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"model": args.model, "artifact": args.artifact, "rounds": args.rounds, "runs": args.runs,
                       "seconds": round(time.time() - t0, 1), "summary": rows,
                       "per_round": {k: [dict(r) for r in v] for k, v in result.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
