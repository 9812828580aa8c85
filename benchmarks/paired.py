"""Paired latency ratios of artifacts against a baseline, for a machine whose speed drifts.

    python benchmarks/paired.py BASE OTHER [OTHER ...] [--pairs 9] [--repeat 30] [--in-process] [--out FILE.json]

Every artifact (``compile ... --out DIR``) is measured as ``bench`` measures a row, one fresh
process at a time (:func:`tvm_partition.bench.runtime.measure_process`: the TVM runtime alone,
``--repeat`` runs after warm-up, their median), in rounds: each round measures the baseline and
every other artifact once, in an order that alternates from round to round, and each other
artifact's ratio to the baseline is taken within the round. The figures are the median of those
ratios with their min and max, and each artifact's median over the rounds. Why: on the 2-core build
VM the same artifact measured in fresh processes minutes apart ran up to 1.8x apart (lstm seq 10
``cpu`` 1.0 and 1.8 ms, 2026-11-23), more than the differences between strategies that a
benchmark row is meant to show; two processes measured seconds apart drift much less.

``--in-process``: every artifact loaded once in this process (the TVM runtime alone,
:class:`tvm_partition.runtime.runner.Runner`) and timed in the same alternating rounds, each time
the median of ``--repeat`` runs after two of warm-up: the two sides of a round a second apart, not
two process starts. Why: ratios of a few percent drowned in the process rounds on this VM (a first
build of FCN-ResNet50 with channels-last 1x1s, 9 process rounds: median 0.94x, range 0.71-1.17;
the same two builds in one process, 12 rounds: quartiles 0.89-1.03; 2026-12-02).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy


def in_a_process(repeat: int):
    """``measure(art) -> median us`` of ``repeat`` runs of each artifact in a fresh process."""
    from tvm_partition.bench.runtime import measure_process

    def measure(art: str) -> float:
        res = measure_process(art, repeat)
        if "error" in res:
            raise RuntimeError(f"{art}: {res['error']}")
        return res["measured_median_us"]

    return measure


def in_this_process(repeat: int):
    """``measure(art) -> median us`` of ``repeat`` runs (after 2 of warm-up) of each artifact,
    loaded once in this process on its own example inputs."""
    from tvm_partition.runtime.runner import Runner

    loaded = {}

    def measure(art: str) -> float:
        if art not in loaded:
            runner = Runner(art)
            loaded[art] = (runner, runner.example_inputs(0))
        runner, inputs = loaded[art]
        return statistics.median(runner.time(inputs, repeat, warmup=2))

    return measure


def paired(arts: list[str], pairs: int, repeat: int, say=print, measure=None) -> dict:
    """``{art: {"medians_us": [...], "ratios": [...]}}`` over ``pairs`` rounds; ratios to ``arts[0]``;
    ``measure``: :func:`in_a_process` (the default) or :func:`in_this_process`."""
    measure = measure or in_a_process(repeat)
    out = {a: {"medians_us": [], "ratios": []} for a in arts}
    for i in range(pairs):
        order = arts if i % 2 == 0 else arts[::-1]
        got = {art: measure(art) for art in order}
        for art in arts:
            out[art]["medians_us"].append(got[art])
            out[art]["ratios"].append(got[art] / got[arts[0]])
        say(f"round {i + 1}/{pairs}: " + ", ".join(f"{os.path.basename(a)} {got[a]:.1f} us" for a in arts))
    return out


def summary(result: dict) -> list[dict]:
    rows = []
    for art, r in result.items():
        rows.append({"artifact": art, "median_us": statistics.median(r["medians_us"]),
                     "min_us": min(r["medians_us"]), "max_us": max(r["medians_us"]),
                     "ratio_median": statistics.median(r["ratios"]), "ratio_min": min(r["ratios"]),
                     "ratio_max": max(r["ratios"]), "rounds": len(r["ratios"])})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("artifacts", nargs="+", help="artifact folders; the first is the baseline")
    ap.add_argument("--pairs", type=int, default=9, help="rounds (default 9)")
    ap.add_argument("--repeat", type=int, default=30, help="runs per process after warm-up (default 30)")
    ap.add_argument("--in-process", action="store_true",
                    help="load every artifact once in this process and time it there (small ratios)")
    ap.add_argument("--out", help="write the rounds and the summary as JSON here")
    args = ap.parse_args(argv)
    missing = [a for a in args.artifacts if not os.path.isdir(a)]
    why = (f"{missing[0]}: no such artifact folder" if missing
           else "give a baseline and at least one other artifact" if len(args.artifacts) < 2
           else "--pairs and --repeat must be >= 1" if min(args.pairs, args.repeat) < 1 else None)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    measure = (in_this_process if args.in_process else in_a_process)(args.repeat)
    result = paired(args.artifacts, args.pairs, args.repeat, say=lambda m: print(m, file=sys.stderr), measure=measure)
    rows = summary(result)
    print("| artifact | median us (min-max) | / baseline, median (min-max) |")
    print("| --- | ---: | ---: |")
    for r in rows:
        print(f"| {os.path.basename(r['artifact'].rstrip('/'))} | {r['median_us']:.1f} ({r['min_us']:.1f}-{r['max_us']:.1f}) "
              f"| {r['ratio_median']:.3f} ({r['ratio_min']:.3f}-{r['ratio_max']:.3f}) |")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"rounds": result, "summary": rows, "pairs": args.pairs, "repeat": args.repeat,
                       "in_process": args.in_process}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
