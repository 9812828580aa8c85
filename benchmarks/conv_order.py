"""The direct-convolution template's parallel loop, channel blocks first against output rows first,
on convolutions of several shapes, each kernel alone on this machine's thread pool.

    python benchmarks/conv_order.py [--rounds 5]

How :func:`tvm_partition.build.templates._rows_outer` was decided (BENCHMARKS.md, "The parallel
loop over the larger operand"): each shape is scheduled both ways and timed in alternating rounds
(``tuning.time_kernel``: packed weights, the runner's threads); the table gives the medians, their
ratio and the order the template picks.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: (input channels, output channels, input size, window, stride): ResNet stems at 64 and 224 px,
#: ResNet-18/50 and DenseNet-like layers from wide-and-shallow to narrow-and-deep.
SHAPES = [(3, 64, 64, 7, 2), (3, 64, 224, 7, 2), (64, 64, 56, 3, 1), (64, 64, 16, 3, 1), (128, 128, 8, 3, 1),
          (256, 64, 56, 1, 1), (512, 512, 7, 3, 1), (128, 128, 28, 3, 1), (64, 128, 56, 3, 2),
          (256, 256, 14, 3, 1), (32, 32, 112, 3, 1)]


def conv_kernel(c_in, c_out, size, k, stride):
    """The one kernel TVM's fusion makes of conv2d + bias + ReLU (NCHW, batch 1, padding k // 2)."""
    from tvm import relax

    from tvm_partition.profiling.samples import lower_sample

    x = relax.Var("x", relax.TensorType((1, c_in, size, size), "float32"))
    w = relax.Var("w", relax.TensorType((c_out, c_in, k, k), "float32"))
    b = relax.Var("b", relax.TensorType((1, c_out, 1, 1), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            y = relax.op.nn.conv2d(x, w, strides=stride, padding=k // 2)
            out = bb.emit_output(bb.emit(relax.op.nn.relu(relax.op.add(y, b))))
        bb.emit_func_output(out)
    [(_, kmod)] = lower_sample(bb.get()["main"])
    return kmod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per shape (default 5)")
    args = ap.parse_args(argv)

    from tvm_partition.build import templates
    from tvm_partition.build.tuning import time_kernel, tuning_target
    from tvm_partition.devices import parse_devices

    target = tuning_target(parse_devices("cpu")[0])
    print("| shape (c_in, c_out, size, k, stride) | channels first us | rows first us | ratio | picked |")
    print("| --- | ---: | ---: | ---: | --- |")
    for shape in SHAPES:
        kmod = conv_kernel(*shape)
        plan = templates._plan(kmod, target)  # noqa: SLF001 - the template's own decision, both ways
        funcs = [templates._schedule_conv(kmod, target, dataclasses.replace(plan, rows_outer=r))  # noqa: SLF001
                 for r in (False, True)]
        times = [[], []]
        for _ in range(args.rounds):
            for i, func in enumerate(funcs):
                times[i].append(time_kernel(func, target))
        ratio = statistics.median(b / a for a, b in zip(*times))
        print(f"| {shape} | {statistics.median(times[0]):.1f} | {statistics.median(times[1]):.1f} | {ratio:.2f} "
              f"| {'rows' if plan.rows_outer else 'channels'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
