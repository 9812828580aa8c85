"""One operator's kernel cut along one axis at every multiple of a step, each with the schedule a
build gives it (its whole op scheduled first, as a build aligns it: the parts take the whole op's
schedule, :meth:`tvm_partition.build.tuning.Schedules._from_sibling`), timed alone with TVM's time
evaluator, beside the whole op's time x the part's fraction (the ideal a split part can reach).

    python benchmarks/part_series.py bert-tiny fused_matmul3_add3_gelu N --step 32

It shows where a transferred schedule loses at some extents and not at others (the steps a cost
model has to fit, or a schedule has to remove): BENCHMARKS.md, "Vector loops within rows".
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    from tvm_partition import flags

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a zoo model (its default settings, or those the flags give)")
    ap.add_argument("op", help="the fused name of one of its ops, e.g. fused_matmul3_add3_gelu")
    ap.add_argument("axis", help="the axis to cut, by name (batch, M, N, channel, H, W...)")
    ap.add_argument("--step", type=int, default=16, help="cut at every multiple of this (default 16)")
    flags.add_model_args(ap)
    args = ap.parse_args(argv)

    from tvm_partition import frontend
    from tvm_partition.build.align import kernel_of
    from tvm_partition.build.tuning import open_schedules, time_kernel, tuning_target
    from tvm_partition.devices import database_dir, parse_devices
    from tvm_partition.ir.graph import OpGraph

    graph = OpGraph(frontend.load_from_args(args.model, args).mod)
    ops = [o for o in graph.ops.values() if o.fused_name == args.op]
    if not ops:
        print(f"error: {args.model} has no op {args.op!r}", file=sys.stderr)
        return 2
    op = ops[0]
    dims = {graph.dim_name(op, d): d for d in op.split_dims}
    if args.axis not in dims:
        print(f"error: {args.op} cannot be cut along {args.axis!r} (axes: {', '.join(dims)})", file=sys.stderr)
        return 2
    dim, full = dims[args.axis], op.output_shapes[-1][dims[args.axis]]
    target = tuning_target(parse_devices("cpu")[0])
    schedules = open_schedules(database_dir(None))
    kmod = kernel_of(graph, op)
    whole, label = schedules.schedule(kmod, target)
    whole_us = time_kernel(whole or kmod["main"], target)
    print(f"{args.model} {args.op} {args.axis} of {full}: whole {whole_us:.1f} us ({label})")
    print(f"{'size':>6} {'us':>9} {'ideal us':>9} {'/ideal':>7}  schedule")
    for size in range(args.step, full, args.step):
        part = kernel_of(graph, op, dim, size)
        func, plabel = schedules.schedule(part, target)
        us = time_kernel(func or part["main"], target)
        ideal = whole_us * size / full
        print(f"{size:>6} {us:>9.1f} {ideal:>9.1f} {us / ideal:>6.2f}x  {plabel.split()[0]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
