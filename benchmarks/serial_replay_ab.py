"""Kernels whose first transfer candidate replays with no parallel loop, timed alone against the
candidate builds now take (``tvm_partition.build.transfer.transfer``, transfer rules 25).

    python benchmarks/serial_replay_ab.py [--mcpu x86-64-v3] [--rounds 9] [--models bert-tiny,resnet18]

For each whole op of the quick models' settings whose schedule the rule changes for ``--mcpu``
(the first candidate that replays, against the candidate taken now), both are compiled and timed
alone on this CPU in alternated rounds (TVM's time evaluator, median of 5 repeats of >= 30 ms a
round); prints the medians, the ratio per round and the largest difference of their outputs.
Code for another CPU than this one cannot run here: ``--mcpu`` must be one this CPU executes.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's package

SETTINGS = {"lstm": {"seq_len": 10, "batch": 16}, "gru": {"seq_len": 10, "batch": 16},
            "bert-tiny": {"batch": 16, "seq_len": 128}, "resnet18": {"image_size": 64}}


def changed(graph, schedules, target):
    """``(op, kernel module, old (label, func), new Transferred)`` for every op the rule changes."""
    from tvm_partition.build import transfer as T
    from tvm_partition.build.align import kernel_of

    seen = set()
    for op in graph.ops.values():
        if op.is_view or not op.split_dims or op.fused_name in seen:  # a model's layers repeat their kernels
            continue
        seen.add(op.fused_name)
        kmod = kernel_of(graph, op)
        old = None
        for c in schedules.index.candidates(kmod, target)[:T.MAX_TRIES]:
            try:
                old = (c.label, T.replay(kmod, c.trace, c.blocks, target))
                break
            except T.TransferError:
                continue
        new = T.transfer(kmod, target, schedules.index)
        if old is not None and new is not None and old[0] != new.source.label:
            yield op, kmod, old, new


def main(argv=None) -> int:
    import numpy as np
    import tvm

    from tvm_partition import frontend
    from tvm_partition.build import transfer as T
    from tvm_partition.build.tuning import open_schedules, tuning_target
    from tvm_partition.cost_models.timing import random_tensor
    from tvm_partition.devices import database_dir, parse_devices, use_cpu_threads
    from tvm_partition.ir.graph import OpGraph

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mcpu", default="x86-64-v3")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--models", default="bert-tiny,resnet18")
    args = ap.parse_args(argv)
    if "TVM_NUM_THREADS" not in os.environ:  # the pool a build's runner gets (TVM's default: half the CPUs)
        use_cpu_threads()
    schedules = open_schedules(database_dir(None))
    target = tuning_target(parse_devices("cpu", cpu_mcpu=args.mcpu)[0])
    build_target = tvm.target.Target(dict(target.export()))
    cpu = tvm.cpu()
    for name in args.models.split(","):
        graph = OpGraph(frontend.load(name, seed=0, **SETTINGS[name]).mod)
        for op, kmod, (old_label, old_func), new in changed(graph, schedules, target):
            rng = np.random.default_rng(0)
            tensors = [random_tensor([int(x) for x in b.shape], str(b.dtype), cpu, rng) for b in kmod["main"].params]
            libs, outs, times = {}, {}, {"old": [], "new": []}
            for key, func in (("old", old_func), ("new", new.func)):
                libs[key] = tvm.compile(tvm.IRModule({"main": func}), target=build_target).jit()
                libs[key]["main"](*tensors)
                outs[key] = tensors[-1].numpy().copy()
            for r in range(args.rounds):
                for key in ("old", "new") if r % 2 == 0 else ("new", "old"):
                    ev = libs[key].time_evaluator("main", cpu, number=5, repeat=5, min_repeat_ms=30)
                    times[key].append(sorted(ev(*tensors).results)[2] * 1e6)
            med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
            print(f"{name} {op.fused_name}: old ({old_label}, parallel={T.has_parallel(old_func)}) {med['old']:.0f} us;"
                  f" new ({new.source.label}, parallel={T.has_parallel(new.func)}) {med['new']:.0f} us;"
                  f" new/old {med['new'] / med['old']:.2f} (rounds"
                  f" {[round(n / o, 2) for n, o in zip(times['new'], times['old'])]});"
                  f" max difference {float(np.abs(outs['old'] - outs['new']).max()):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
