"""Max and average pooling (TOPI's ``pool_max``, ``pool_sum`` + ``pool_avg``, NCHW), global ones
excepted: the channels in parallel, each output row's padded input rows computed under it, or at
stride 1 from :data:`PLANE_PADDING_MIN_WIDTH` columns each channel's padded plane once
(:func:`_schedule_pool`: TVM gave an unpadded pool no parallel loop, and a padded one's replayed
record ran its parts up to 3.3x their share; padded row by row, a stride-1 3x3 pads each row
three times, Inception-v2's average pools 1.4-3x the time); from :data:`POOL_ROW_MIN_WIDTH`
output columns (strided: up to a vector's lanes) each output row one vector, its window's taps
outside it (a scalar a pixel had made each window a chain of dependent instructions; stride-1
rows 0.63-0.87x their time each alone).
"""

from __future__ import annotations

import tvm

from . import common


#: TOPI's pooling blocks (``nn.pool2d``): a maximum, or a sum that an element-wise ``pool_avg`` divides
_POOLS = ("pool_max", "pool_sum")
#: Output width from which a padded stride-1 pooling pads each channel's plane once, before its
#: rows, where narrower ones and strided ones pad the input rows under each output row
#: (:func:`_schedule_pool`). A 3x3 window at stride 1 reads each padded row under three output
#: rows, so padding per row pads every row three times over. Each kernel alone, plane against
#: rows (3-5 alternating rounds, 2 threads, amd-epyc-znver5-2c, 2026-12-03): the 11 stride-1 pools
#: of Inception-v1 and -v2 (onnx light models) 13-28 wide 0.33-0.75x (Inception-v2's 576-channel
#: average pool at 14x14, four calls a run, 121 -> 40 us), 6-7 wide 1.03-1.38x; synthetic 3x3s at
#: 13-224 wide 0.35-0.90x, at 7-12 wide 0.37-2.47x (a max pool at 10x10 2.4x slower, an average
#: pool at 12x12 1.4x). Strided ones (3x3 and 2x2 at stride 2, 19 kernels) 0.74-1.51x: rows kept.
PLANE_PADDING_MIN_WIDTH = 13
#: Output width from which a pooling computes each output row as one vector: the row's sums (or
#: maxima) accumulated tap by tap over the whole row, its epilogue (the average's divisor, a fused
#: ReLU) in vectors, the accumulator on the stack (:data:`.common.TILE_SCOPE`); a strided one only where the
#: row fits one vector (it reads a scalar a lane: x86 builds have no gathers); others keep one
#: scalar a pixel (:func:`_schedule_pool`). Each alone, against the scalar schedule (11-21
#: alternating rounds of short timings, 2 threads, intel-r-xeon-r-processor-2-60ghz-icelake-server-2c,
#: 2026-12-04): Inception-v2's stride-1 average pools 28 wide 0.61-0.70x, 14 wide 0.81-0.83x, 7
#: wide 1.08-1.58x (rows of 7 lanes: kept scalar); strided max and average pools of Inception-v2,
#: SqueezeNet and DenseNet-121 13-14 wide 0.54-0.73x, 7 wide 0.87-0.91x (kept scalar, as at stride
#: 1), 27-56 wide 3.0-6.8x.
POOL_ROW_MIN_WIDTH = 13
#: Output width up to which a pooling keeps its scalar accumulator on the stack
#: (:data:`.common.TILE_SCOPE`) rather than in a ``local`` buffer, which TVM allocates from the workspace
#: pool in every channel's task. Each alone against the ``local`` buffer (7 alternating rounds, 2
#: threads, intel-r-xeon-r-processor-2-60ghz-icelake-server-2c, 2026-12-04;
#: ``benchmarks/template_ab.py pool``): the 11 pools of 6-12 output columns of seven onnx light
#: models 0.41-0.88x. Strided pools of 27-56 columns ran 1.04-1.16x with it (a scratch run of 7
#: rounds, compiled with gathers as ``tuning.time_kernel`` then was; LLVM gathers in none of them):
#: they keep the ``local`` buffer, for a reason not found.
POOL_STACK_MAX_WIDTH = 12


def _pool_nest(kmod: tvm.IRModule, target) -> common._Nest | None:
    """The :class:`.common._Nest` of a pooling kernel (TOPI's max or average ``pool2d``, NCHW) with more
    than one output pixel per channel, else None. A global pooling (a 7x7 window to 1x1) keeps
    TVM's serial loop: each channel's 49 additions are too little for a parallel loop (ResNet-50's
    2048 channels 20.5 us serial, 23.9 us with this schedule; Inception-v2's 1024 10.3 / 12.2)."""
    nest = common._nest(kmod, target, _POOLS, "SSSSRR")
    return None if nest is None or nest.extents[2] * nest.extents[3] == 1 else nest


def _schedule_pool(kmod: tvm.IRModule, target, nest: common._Nest) -> tvm.tirx.PrimFunc:
    """The pooling schedule: ``n c`` one parallel loop; under each output row ``y`` the input rows
    its windows read padded (``pad_temp`` computed there, not as a whole tensor first), or at
    stride 1 from :data:`PLANE_PADDING_MIN_WIDTH` output columns the channel's whole plane padded
    once under ``n c``; from :data:`POOL_ROW_MIN_WIDTH` columns (strided: up to a vector's lanes)
    each output row accumulated as one vector, window tap by tap (``y | ry rx | x``, ``x``
    vectorised), and written out with its epilogue in vectors; otherwise each output pixel
    accumulated over its window in a scalar (on the stack up to :data:`POOL_STACK_MAX_WIDTH`
    columns) and written out with its epilogue.

    Why: TVM gives an unpadded pool (AlexNet's, VGG's, SqueezeNet's) no parallel loop, and a padded
    one took a record tuned on ResNet-18's whole max pool, replayed: its parts along the width ran
    up to 3.3x their share of the whole (14 of 56 columns: 112 us, the whole 64), and parts of fewer
    than 36 channels ran serial (:data:`tvm_partition.build.transfer.SERIAL_FLOPS`), 2x their share.
    This schedule is that record's loop nest with the channels' loop the parallel one, at any
    extent: ResNet-18's max pool whole 61 us, its parts at 16, 32, 48 channels and 14, 28 rows
    within 1.05x of their share (amd-epyc-znver5-2c, 2026-11-26; BENCHMARKS.md, "Pooling")."""
    sch, pool = common._opened(kmod["main"], nest.block.name_hint, nest.epilogue)
    n, c, y, x, ry, rx = sch.get_loops(pool)
    channels = sch.fuse(n, c)
    sch.parallel(channels)
    width, stride_1 = nest.extents[3], common._column_stride(nest.block) == 1
    if nest.padded:
        plane = stride_1 and width >= PLANE_PADDING_MIN_WIDTH
        sch.compute_at(sch.get_sblock("pad_temp"), channels if plane else y)
    rows = width >= POOL_ROW_MIN_WIDTH and (stride_1 or width <= common.vector_lanes(target)[0])
    acc = sch.cache_write(pool, 0, common.TILE_SCOPE if rows or width <= POOL_STACK_MAX_WIDTH else "local")
    if rows:  # each output row one vector
        common._per_tile(sch, acc, y, nest.epilogue)
        sch.reorder(ry, rx, x)
        for block in [pool, acc] + ([sch.get_sblock(nest.epilogue[-1])] if nest.epilogue else []):
            sch.vectorize(sch.get_loops(block)[-1])
    else:
        common._per_tile(sch, acc, x, nest.epilogue)
    sch.decompose_reduction(pool, ry)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)
