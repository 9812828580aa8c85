"""Register tiles of the direct-convolution template: the tile of :data:`PAIRED_ROW` pixels x two
vectors of output channels against the largest row within :data:`ROW_BUDGET` (what the template
chose before it), on every distinct convolution kernel of some models where the two differ, each
kernel alone on this machine's thread pool.

    python benchmarks/conv_tiles.py MODEL[:IMAGE_SIZE] [MODEL ...] [--rounds 3]

How :data:`tvm_partition.build.templates.PAIRED_ROW` was set (BENCHMARKS.md, "Register tiles on
AVX2"): each kernel is scheduled both ways and timed in alternating rounds (``tuning.time_kernel``:
packed weights, the runner's threads); the table gives the tiles (pixels x vectors), the medians,
their ratio and the chosen tile's GFLOP/s. Kernels that the 1x1 template takes are left out. On a
machine whose vectors have no entry in ``PAIRED_ROW`` (AVX-512 today) the two tiles are the same
and the table is empty. MODEL: zoo names (``resnet50:128``: at 128 px) or .onnx paths.
"""

from __future__ import annotations

import os
import sys
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_kernels import alternated, arguments, convolutions, gflops  # noqa: E402


def main(argv=None) -> int:
    args, target = arguments(__doc__, argv)
    from tvm_partition.build import templates

    print(f"vector lanes, registers: {templates.vector_lanes(target)}; paired rows: {templates.PAIRED_ROW}")
    print("| model | extents (n, f, y, x, rc, ry, rx) | epilogue | row tile | us | paired tile | us | ratio | GFLOP/s |")
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: |")
    for label, kmod, nest in convolutions(args.models, target):
        if templates._pointwise_plan(kmod, target) is not None:  # noqa: SLF001 - the 1x1 template's kernel
            continue
        paired = templates._plan(kmod, target)  # noqa: SLF001
        with mock.patch.multiple(templates, PAIRED_ROW={}):
            row = templates._plan(kmod, target)  # noqa: SLF001
        if paired is None or (paired.row, paired.blocks) == (row.row, row.blocks):
            continue
        funcs = [templates._schedule_conv(kmod, target, plan) for plan in (row, paired)]  # noqa: SLF001
        (old, new), ratio = alternated(funcs, target, args.rounds)
        print(f"| {label} | {nest.extents} | {len(nest.epilogue)} blocks | {row.row} x {row.blocks} | {old:.1f} "
              f"| {paired.row} x {paired.blocks} | {new:.1f} | {ratio:.2f} | {gflops(nest, new):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
