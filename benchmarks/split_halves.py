"""What a plan's splits cost in kernels alone: each split op's parts against its whole op, from
this machine's profile samples (each timed alone, as ``profile`` times them; nothing is timed here).

    python benchmarks/split_halves.py resnet18 --image-size 64 --strategy equal

On ``cpu,cpu`` both virtual CPUs are the runtime's one CPU and the parts run one after the other, so
a plan's kernels alone cost the sum of its parts; their sum over the whole ops' is the part of a
split's cost that the kernels make, before the VM's launches and allocations (BENCHMARKS.md,
"What a split costs in the VM on `cpu,cpu`").
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    from tvm_partition import flags, frontend

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a zoo model")
    ap.add_argument("--strategy", default="equal", help="the plan whose splits are priced (default equal)")
    ap.add_argument("--devices", default="cpu,cpu")
    flags.add_model_args(ap)
    args = ap.parse_args(argv)

    from tvm_partition.build.align import align_splits
    from tvm_partition.build.tuning import open_schedules
    from tvm_partition.cost_models.logs import ProfileLog
    from tvm_partition.devices import database_dir, parse_devices
    from tvm_partition.ir.graph import OpGraph, op_signature
    from tvm_partition.plan import Split
    from tvm_partition.planners import plan_and_simulate

    graph = OpGraph(frontend.load_from_args(args.model, args).mod)
    devices = parse_devices(args.devices)
    align_splits(graph, devices, open_schedules(database_dir(None)))  # the cuts a build plans (compile_model)
    plan, _ = plan_and_simulate(graph, devices, args.strategy)
    timed = defaultdict(dict)  # (sig, dim) -> size -> (us, schedule)
    for r in ProfileLog(database_dir(None)).ops("cpu"):
        timed[(r["sig"], int(r["dim"]))][int(r["size"])] = (float(r["mean_us"]), r.get("schedule", ""))
    print(f"{'op':<40} {'axis':>4} {'whole us':>9} {'parts us':>17} {'parts/whole':>11}  schedule")
    whole_sum = parts_sum = 0.0
    for op_id, decision in plan.ops.items():
        if not isinstance(decision, Split) or graph.ops[op_id].is_view:
            continue
        op = graph.ops[op_id]
        full = op.output_shapes[-1][decision.dim]
        # the cut a build makes (boundaries at the op's granule, align_splits: the matmul template's
        # 8 columns of ResNet-18's classifier), not the raw ratio: 500 of its 1000 columns is a size
        # no build runs (a default schedule's sample, 286 us where the whole op takes 21)
        sizes = [hi - lo for _, lo, hi in decision.parts(full, op.granules.get(decision.dim, 1))]
        series = timed.get((op_signature(op), decision.dim), {})
        if full not in series or any(s not in series for s in sizes):
            print(f"{op_id[:40]:<40} {decision.dim:>4} not profiled at {full} and {sizes}")
            continue
        whole, parts = series[full][0], [series[s][0] for s in sizes]
        whole_sum, parts_sum = whole_sum + whole, parts_sum + sum(parts)
        print(f"{op_id[:40]:<40} {decision.dim:>4} {whole:>9.1f} {' + '.join(f'{p:.1f}' for p in parts):>17} "
              f"{sum(parts) / whole:>10.2f}x  {series[sizes[0]][1]}")
    if whole_sum:
        print(f"profiled split ops: whole {whole_sum:.1f} us, parts {parts_sum:.1f} us ({parts_sum / whole_sum:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
