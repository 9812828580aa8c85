"""1x1 convolutions: the direct-convolution template (vectors of output channels) against the 1x1
template (vectors of pixels), on every distinct 1x1 kernel of some models that the 1x1 template
takes, each kernel alone on this machine's thread pool.

    python benchmarks/conv_1x1.py MODEL [MODEL ...] [--rounds 3]

How :func:`tvm_partition.build.templates._pointwise_plan` earned its place (BENCHMARKS.md, "1x1
convolutions"): each kernel is scheduled both ways and timed in alternating rounds
(``tuning.time_kernel``: packed weights, the runner's threads); the table gives the medians, their
ratio and the 1x1 template's GFLOP/s. MODEL: zoo names or .onnx paths.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="zoo names or .onnx paths")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per kernel (default 3)")
    args = ap.parse_args(argv)

    from tvm_partition import frontend
    from tvm_partition.build import templates
    from tvm_partition.build.align import kernel_of
    from tvm_partition.build.tuning import time_kernel, tuning_target
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph

    target = tuning_target(parse_devices("cpu")[0])
    print("| model | extents (n, f, y, x, rc, ry, rx) | epilogue | channel vectors us | 1x1 us | ratio | 1x1 GFLOP/s |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    seen = set()
    for model in args.models:
        graph = OpGraph(frontend.load(model, seed=0).mod)
        for op in graph.ops.values():
            if op.kind != "conv2d" or not op.split_dims:
                continue
            kmod = kernel_of(graph, op)
            pointwise = templates._pointwise_plan(kmod, target)  # noqa: SLF001 - the template's own decision
            channels = templates._plan(kmod, target)  # noqa: SLF001
            if pointwise is None or channels is None:
                continue
            extents = templates._nest(kmod, target, (templates._CONV,)).extents  # noqa: SLF001
            if (extents, pointwise.epilogue) in seen:
                continue
            seen.add((extents, pointwise.epilogue))
            funcs = [templates._schedule_conv(kmod, target, channels),  # noqa: SLF001
                     templates._schedule_pointwise(kmod, target, pointwise)]  # noqa: SLF001
            times = [[], []]
            for _ in range(args.rounds):
                for i, func in enumerate(funcs):
                    times[i].append(time_kernel(func, target))
            ratio = statistics.median(b / a for a, b in zip(*times))
            new = statistics.median(times[1])
            gflops = 2 * math.prod(extents) / new / 1e3
            print(f"| {os.path.basename(model).removesuffix('.onnx')} | {extents} | {len(pointwise.epilogue)} blocks "
                  f"| {statistics.median(times[0]):.1f} | {new:.1f} | {ratio:.2f} | {gflops:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
