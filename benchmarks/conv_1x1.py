"""1x1 convolutions: the direct-convolution template (vectors of output channels) against the 1x1
template (vectors of pixels), on every distinct 1x1 kernel of some models whose pixels the 1x1
template can tile, each kernel alone on this machine's thread pool.

    python benchmarks/conv_1x1.py MODEL[:IMAGE_SIZE] [MODEL ...] [--rounds 3]

How :func:`tvm_partition.build.templates.convolution._pointwise_plan` earned its place (BENCHMARKS.md, "1x1
convolutions"): each kernel is scheduled both ways and timed in alternating rounds
(``tuning.time_kernel``: packed weights, the runner's threads); the table gives the medians, their
ratio, the 1x1 template's GFLOP/s and whether builds take it (``taken``: the kernels its measured
limits, :data:`~tvm_partition.build.templates.convolution.POINTWISE_VECTORS`,
:data:`~tvm_partition.build.templates.convolution.ALIASED_PLANE_BYTES` and, on a full-width AVX-512 CPU,
:data:`~tvm_partition.build.templates.convolution.POINTWISE_STRIP_BYTES`, leave to the channel-vector template
are timed with those limits lifted, to show why; ``strip KiB``: the input a 1x1 tile reads over its
reduction). MODEL: zoo names (``resnet50:128``: at 128 px) or .onnx paths.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_kernels import alternated, arguments, convolutions, gflops, patched  # noqa: E402


def main(argv=None) -> int:
    args, target = arguments(__doc__, argv)
    from tvm_partition.build import templates

    print("| model | extents (n, f, y, x, rc, ry, rx) | epilogue | channel vectors (tile) | us | 1x1 us | ratio "
          "| 1x1 GFLOP/s | strip KiB | taken |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for label, kmod, nest in convolutions(args.models, target):
        taken = templates.convolution._pointwise_plan(kmod, target) is not None  # noqa: SLF001 - the template's own decision
        with patched(POINTWISE_VECTORS=1, ALIASED_PLANE_BYTES=1 << 62, POINTWISE_STRIP_BYTES=1 << 62):  # limits lifted
            pointwise = templates.convolution._pointwise_plan(kmod, target)  # noqa: SLF001
        channels = templates.convolution._plan(kmod, target)  # noqa: SLF001
        if pointwise is None or channels is None:
            continue
        funcs = [templates.convolution._schedule_conv(kmod, target, channels),  # noqa: SLF001
                 templates.convolution._schedule_pointwise(kmod, target, pointwise)]  # noqa: SLF001
        (old, new), ratio = alternated(funcs, target, args.rounds)
        strip = templates.convolution._strip_bytes(nest, pointwise.rows) // 1024  # noqa: SLF001 - the template's own measure
        print(f"| {label} | {nest.extents} | {len(nest.epilogue)} blocks | {channels.row} x {channels.blocks} of {channels.lanes} | {old:.1f} "
              f"| {new:.1f} | {ratio:.2f} | {gflops(nest, new):.0f} | {strip} | {'yes' if taken else 'no'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
