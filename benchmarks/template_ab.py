"""Every distinct kernel of some models whose fused name contains a pattern, timed alone with the
schedule a build gives it (a hand-written template where one applies) and with the schedule it
would get without the templates (its tuning record, a transferred record or TVM's default).

    python benchmarks/template_ab.py pool resnet18 build/onnx_light/light_vgg19_seed0.onnx
    python benchmarks/template_ab.py layer_norm bert-tiny --batch 1,2,4,8,16,32 --rounds 9   # parts of a split too
    python benchmarks/template_ab.py concatenate MODEL --rounds 5 --without MIN_PARTITIONED_INPUTS=inf

``--without NAME=VALUE``: the "without" schedule is the build's own with that constant of
:mod:`tvm_partition.build.templates` set so (a template's rule undone), not the one without templates.

It is how a template earns its place (BENCHMARKS.md, "Pooling"): the kernels it takes over, each
against what they ran before, on this machine's thread pool. ``--rounds N`` times both N times,
alternating which goes first, and prints the medians (on a VM whose speed drifts, a single reading
of each can be 1.5x off).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pattern", help="a part of the kernels' fused names, e.g. pool")
    ap.add_argument("models", nargs="+", help="zoo names (default settings) or .onnx paths; PATH.onnx:seq_len=128 "
                                              "(KEY=N pairs) for an export's free dimensions")
    ap.add_argument("--batch", help="comma-separated batch sizes to load the models at (default: theirs)")
    ap.add_argument("--rounds", type=int, default=1, help="alternating timings of both, medians printed (default 1)")
    ap.add_argument("--without", metavar="NAME=VALUE", action="append", help="time against the templates with "
                    "this constant of tvm_partition.build.templates set so (inf for float('inf')), not against "
                    "no templates; repeat it to set several")
    args = ap.parse_args(argv)
    batches = [{"batch": int(b)} for b in args.batch.split(",")] if args.batch else [{}]

    from conv_kernels import kernels, model_graph, patched
    from tvm_partition.build.tuning import open_schedules, time_kernel, tuning_target
    from tvm_partition.devices import database_dir, parse_devices, use_cpu_threads

    threads = use_cpu_threads()
    target = tuning_target(parse_devices("cpu")[0])
    print(f"{'model':26} {'kernel':16} {'main block extents':30} {'without':>9} {'with':>9}  "
          f"schedules without / with ({threads} threads, us)")
    seen, total = set(), [0.0, 0.0]
    for model, settings in ((m, b) for m in args.models for b in batches):
        _, graph = model_graph(model, **settings)
        # fresh per model, as a build's: a Schedules replays a kernel scheduled before that differs
        # in one axis (a split's whole op), and another model's kernel would pass for one
        built, records = open_schedules(database_dir(None)), open_schedules(database_dir(None))
        records.templates = args.without is not None
        undone = undo(args.without)
        for op, kmod, blocks in kernels(graph, args.pattern, seen):
            funcs, labels = [], []
            for schedules, patch in ((records, undone), (built, {})):
                with patched(**patch) if patch else contextlib.nullcontext():
                    func, label = schedules.schedule(kmod, target)
                funcs.append(func or kmod["main"])
                labels.append(label.split(" (")[0].split(" from")[0])
            rounds = [[], []]
            for r in range(args.rounds):
                for i in (0, 1) if r % 2 == 0 else (1, 0):
                    rounds[i].append(time_kernel(funcs[i], target))
            times = [statistics.median(t) for t in rounds]
            total = [total[0] + times[0], total[1] + times[1]]
            extents = "x".join(str(e) for e in max(blocks, key=lambda b: len(b.extents)).extents)
            print(f"{os.path.basename(model)[:26]:26} {op.fused_name[:16]:16} {extents:30} {times[0]:9.1f} "
                  f"{times[1]:9.1f}  {labels[0]} / {labels[1]}", flush=True)
    print(f"{'all':26} {'':16} {'':30} {total[0]:9.1f} {total[1]:9.1f}")
    return 0


def undo(settings: list[str] | None) -> dict:
    """``{name: value}`` of every ``--without NAME=VALUE`` (none where it is not given)."""
    undone = {}
    for setting in settings or ():
        name, _, text = setting.partition("=")
        undone[name] = float("inf") if text == "inf" else ast.literal_eval(text)
    return undone


if __name__ == "__main__":
    sys.exit(main())
