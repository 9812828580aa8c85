"""The direct-convolution template's parallel loop, channel blocks first against output rows first,
on convolutions of several shapes, each kernel alone on this machine's thread pool.

    python benchmarks/conv_order.py [MODEL ...] [--rounds 5]

How :func:`tvm_partition.build.templates.convolution._rows_outer` was decided (BENCHMARKS.md, "The parallel
loop over the larger operand"): each shape is scheduled both ways and timed in alternating rounds
(``tuning.time_kernel``: packed weights, the runner's threads); the table gives the medians, their
ratio and the order the template picks. With MODELs (zoo names or .onnx paths,
:func:`conv_kernels.model_graph`), their distinct convolution kernels that ``_rows_outer`` would
run rows first (input outweighing weights), each on the register tile its plan gives, instead of
:data:`SHAPES`: how :data:`tvm_partition.build.templates.convolution.SUNNY_COVE_BLOCKS_FIRST_TAPS` was decided
(BENCHMARKS.md, "Convolutions of several taps over channel blocks first on Ice Lake").
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
    [(_, kmod)] = lower_sample(bb.get())
    return kmod


def kernels(models: list[str], target):
    """``(label, kernel)``: :data:`SHAPES`, or the convolution kernels of ``models`` that
    :func:`~tvm_partition.build.templates.convolution._rows_outer` runs rows first."""
    if not models:
        yield from ((str(shape), conv_kernel(*shape)) for shape in SHAPES)
        return
    from conv_kernels import convolutions
    from tvm_partition.build import templates

    for model, kmod, nest in convolutions(models, target):
        if templates.convolution._rows_outer(nest.block):  # noqa: SLF001 - the rule's own question
            (_, c, h, w), (_, oc, oh, ow, _, ry, rx) = nest.block.reads[0].source.shape, nest.extents
            yield f"{model}: {int(c)} -> {oc}, {ry}x{rx}, {int(h)}x{int(w)} -> {oh}x{ow}", kmod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="zoo names or .onnx paths: their kernels, not SHAPES")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per shape (default 5)")
    args = ap.parse_args(argv)

    from tvm_partition.build import templates
    from tvm_partition.build.tuning import time_kernel, tuning_target
    from tvm_partition.devices import parse_devices

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    target = tuning_target(parse_devices("cpu")[0])
    what = "kernel (padded input)" if args.models else "shape (c_in, c_out, size, k, stride)"
    print(f"| {what} | channels first us | rows first us | ratio | picked |")
    print("| --- | ---: | ---: | ---: | --- |")
    for label, kmod in kernels(args.models, target):
        plan = templates.convolution._plan(kmod, target)  # noqa: SLF001 - the template's own decision, both ways
        if plan is None:
            continue
        funcs = [templates.convolution._schedule_conv(kmod, target, dataclasses.replace(plan, rows_outer=r))  # noqa: SLF001
                 for r in (False, True)]
        times = [[], []]
        for _ in range(args.rounds):
            for i, func in enumerate(funcs):
                times[i].append(time_kernel(func, target))
        ratio = statistics.median(b / a for a, b in zip(*times))
        print(f"| {label} | {statistics.median(times[0]):.1f} | {statistics.median(times[1]):.1f} | {ratio:.2f} "
              f"| {'rows' if plan.rows_outer else 'channels'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
