"""Register tiles of the direct-convolution template: the tile of :data:`PAIRED_ROW` pixels x two
vectors of output channels against the largest row within :data:`ROW_BUDGET` (what the template
chose before it), on every distinct convolution kernel of some models where the two differ, each
kernel alone on this machine's thread pool.

    python benchmarks/conv_tiles.py MODEL[:IMAGE_SIZE] [MODEL ...] [--rounds 3] [--tail | --long-1x1 | --chunks | --channels-last | --aliased] [--target-cpu MCPU]

How :data:`tvm_partition.build.templates.convolution.PAIRED_ROW` was set (BENCHMARKS.md, "Register tiles on
AVX2"): each kernel is scheduled both ways and timed in alternating rounds (``tuning.time_kernel``:
packed weights, the runner's threads); the table gives the tiles (pixels x vectors), the medians,
their ratio and the chosen tile's GFLOP/s. Kernels that the 1x1 template takes are left out. On a
machine whose vectors have no entry in ``PAIRED_ROW`` (Zen 4's AVX-512: not
:func:`~tvm_partition.build.templates.common._full_width_fma`) the two tiles are the same and the table is
empty. MODEL: zoo names (``resnet50:128``: at 128 px) or .onnx paths.

``--tail``: the chosen tile against the tile of a divisor of the width, on the kernels where
:func:`tvm_partition.build.templates.convolution._tail_tile` gives them a tile whose last one in each row is
shorter (BENCHMARKS.md, "Tiles whose last one in a row is shorter"). ``--long-1x1``: the chosen
tile against the one before :data:`tvm_partition.build.templates.convolution.LONG_1X1_REDUCTION` (BENCHMARKS.md,
"1x1 convolutions of long reductions on 13-wide maps"). ``--chunks``: the chosen plan's reduction in
chunks against the whole reduction under each tile, where the plan cuts it
(:data:`tvm_partition.build.templates.convolution.LONG_REDUCTION_BYTES`; BENCHMARKS.md, "Reductions whose
weights outgrow the L2 cache, in chunks"). ``--channels-last``: every ungrouped 1x1 whose input
channels fill whole vectors, reading its input from a channels-last copy against in place, the
column ``rule`` saying which :func:`tvm_partition.build.templates.convolution._channels_last` takes
(BENCHMARKS.md, "1x1 convolutions of long reductions, channels last"). ``--target-cpu``: plan and
compile for another CPU's ``-mcpu`` (``znver3``: AVX2 code), timed on this one. ``--aliased``: the
chosen tile of one vector against the tile of two the plan held before, on the kernels where
:func:`tvm_partition.build.templates.convolution._aliased_output` gives it (output planes that alias in the L1
cache; BENCHMARKS.md, "Convolutions whose output planes alias in the L1 cache").
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_kernels import alternated, arguments, convolutions, gflops, patched  # noqa: E402


def main(argv=None) -> int:
    args, target = arguments(__doc__, argv, {"--tail": "the chosen tile against a divisor's where the last one "
                                                       "in a row is shorter (templates.convolution._tail_tile)",
                                             "--long-1x1": "the chosen tile against one vector where a long 1x1 "
                                                           "takes two (templates.convolution.LONG_1X1_REDUCTION)",
                                             "--chunks": "the reduction in chunks against the whole one under each "
                                                         "tile (templates.convolution.LONG_REDUCTION_BYTES)",
                                             "--channels-last": "every ungrouped 1x1 on a channels-last copy of its "
                                                                "input against in place (templates.convolution._channels_last)",
                                             "--aliased": "one vector of channels against two where the output "
                                                          "planes alias (templates.convolution._aliased_output)"})
    import dataclasses

    from tvm_partition.build import templates

    print(f"vector lanes, registers: {templates.common.vector_lanes(target)}; paired rows: {templates.convolution.PAIRED_ROW}")
    before, after = ("divisor's tile", "tail tile") if args.tail else ("one vector", "two vectors") if args.long_1x1 \
        else ("whole reduction", "chunks") if args.chunks else ("in place", "channels last (rule)") \
        if args.channels_last else ("two vectors", "one vector") if args.aliased else ("row tile", "paired tile")
    print(f"| model | extents (n, f, y, x, rc, ry, rx) | epilogue | {before} | us | {after} | us | ratio | GFLOP/s |")
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: |")
    for label, kmod, nest in convolutions(args.models, target):
        if templates.convolution._pointwise_plan(kmod, target) is not None:  # noqa: SLF001 - the 1x1 template's kernel
            continue
        paired = templates.convolution._plan(kmod, target)  # noqa: SLF001
        divisor = {"_tail_tile": lambda *_: False}  # the largest divisor of the width within the budget
        undone = divisor if args.tail else {"LONG_1X1_REDUCTION": float("inf")} if args.long_1x1 \
            else {"_aliased_output": lambda *_: False} if args.aliased else {**divisor, "PAIRED_ROW": {}}
        if args.chunks:
            row = paired and dataclasses.replace(paired, chunk=0)
        elif args.channels_last:  # every candidate, whether the rule takes it or not
            with patched(CHANNELS_LAST_INPUT=0, CHANNELS_LAST_BYTES=0, CHANNELS_LAST_OUTPUT=0):
                every = templates.convolution._plan(kmod, target)  # noqa: SLF001
            taken = "yes" if paired is not None and paired.channels_last else "no"
            if every is None or not every.channels_last:
                continue
            paired, row = every, dataclasses.replace(every, channels_last=False)
        else:
            with patched(**undone):
                row = templates.convolution._plan(kmod, target)  # noqa: SLF001
        if paired is None or paired == row:  # the same plan: the same schedule
            continue
        funcs = [templates.convolution._schedule_conv(kmod, target, plan) for plan in (row, paired)]  # noqa: SLF001
        (old, new), ratio = alternated(funcs, target, args.rounds)
        chunks = f", {paired.chunk} channels a chunk" if paired.chunk else f" ({taken})" if args.channels_last else ""
        print(f"| {label} | {nest.extents} | {len(nest.epilogue)} blocks | {row.row} x {row.blocks} | {old:.1f} "
              f"| {paired.row} x {paired.blocks}{chunks} | {new:.1f} | {ratio:.2f} | {gflops(nest, new):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
